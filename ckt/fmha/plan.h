/* ckt/fmha/plan.h — plans of the multi-stage FMHA calls: which instance, the
 * kernels in launch order, the workspace and the split count, known before
 * the call (so a caller allocates once and a user sees what will run). C ABI,
 * implemented in lib/fmha/plan.c.
 *
 *   forward:
 *     ckt_fmha_fwd_plan p;
 *     ckt_fmha_fwd_plan_init(&p, &a);        // instance, splits, stages, workspace
 *     a.workspace = ws (p.workspace_bytes); a.workspace_bytes = p.workspace_bytes;
 *     ckt_fmha_fwd_run(&p, &a, stream);       // attention, or partials then combine
 *
 *   backward (ckt/fmha/workspace.h's plan, ckt_fmha_bwd_plan_init in dispatch.h):
 *     ckt_fmha_bwd_plan_stages(&plan, stages, CKT_FMHA_MAX_STAGES);   // dot_do_o, dq_dk_dv, convert_dq
 *
 * Stages, in launch order:
 *   forward unsplit   attention
 *   forward split-KV  attention_partials (num_splits blocks per query tile, partial O
 *                     and LSE into the workspace), combine (ckt/fmha/splitkv.h)
 *   backward          dot_do_o, dq_dk_dv, convert_dq (ckt/fmha/bwd_body.h)
 *   append-KV         appendkv
 */
#ifndef CKT_FMHA_PLAN_H
#define CKT_FMHA_PLAN_H

#include "ckt/fmha/args.h"
#include "ckt/fmha/dispatch.h"
#include "ckt/fmha/registry.h"
#include "ckt/fmha/workspace.h"
#include "ckt/host/runtime.h"
#include "ckt/host/status.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ckt_fmha_stage {
    CKT_FMHA_STAGE_ATTENTION = 0,          /* the forward, unsplit */
    CKT_FMHA_STAGE_ATTENTION_PARTIALS = 1, /* the forward's splits: partial O, LSE (fp32) */
    CKT_FMHA_STAGE_COMBINE = 2,            /* the splits merged, in order */
    CKT_FMHA_STAGE_APPENDKV = 3,
    CKT_FMHA_STAGE_DOT_DO_O = 4,   /* D = rowsum(dO * O); zeroes the dQ accumulator */
    CKT_FMHA_STAGE_DQ_DK_DV = 5,   /* the gradients, dQ into fp32 slots */
    CKT_FMHA_STAGE_CONVERT_DQ = 6, /* dQ = scale * sum of the slots */
    CKT_FMHA_STAGE_DSINK = 7,      /* attention sinks' gradient (reads dot_do_o's D), last */
    CKT_FMHA_STAGE_DBIAS_REDUCE = 8, /* a broadcast dbias: dS summed over the broadcast entries / heads */
    CKT_FMHA_STAGE_COUNT = 9
} ckt_fmha_stage;

/* "attention", "attention_partials", "combine", "appendkv", "dot_do_o",
 * "dq_dk_dv", "convert_dq", "dsink", "dbias_reduce"; "?" otherwise. */
const char *ckt_fmha_stage_name(int stage);

/* A forward plan. Plain data (copy it freely); valid for calls with the
 * fields it was made from (sizes, dtype, head dims, the KV cache's kind). */
typedef struct ckt_fmha_fwd_plan {
    const ckt_fmha_fwd_instance *instance;
    int num_splits;          /* 1: unsplit */
    size_t workspace_bytes;  /* = ckt_fmha_fwd_workspace_bytes(a); 0 unsplit */
    int num_stages;
    ckt_fmha_stage stages[CKT_FMHA_MAX_STAGES]; /* launch order */
} ckt_fmha_fwd_plan;

/* Plans the forward call a: the instance ckt_fmha_fwd would run and the split
 * count it runs with once given the workspace the plan says (num_splits 0 =
 * automatic, as if a workspace were given: so workspace_bytes equals
 * ckt_fmha_fwd_workspace_bytes(a)). An automatic split needs a `_kv_` (or
 * decode) instance: in an instance set without them it resolves to 1. No
 * instance: CKT_ERROR_NO_INSTANCE, the message saying why. */
ckt_status ckt_fmha_fwd_plan_init(ckt_fmha_fwd_plan *plan, const ckt_fmha_fwd_args *a);

/* Runs a with plan's instance and split count (a->workspace: at least
 * plan->workspace_bytes when split). */
ckt_status ckt_fmha_fwd_run(const ckt_fmha_fwd_plan *plan, const ckt_fmha_fwd_args *a, ckt_stream stream);

/* The stages of a plan into stages[0 .. max), in launch order; returns their
 * count (0 for a NULL plan). */
int ckt_fmha_fwd_plan_stages(const ckt_fmha_fwd_plan *plan, ckt_fmha_stage *stages, int max);
int ckt_fmha_bwd_plan_stages(const ckt_fmha_bwd_plan *plan, ckt_fmha_stage *stages, int max);

/* The plans as JSON (snprintf-style, like ckt_fmha_registry_json):
 *   {"family": "fwd_kv", "instance": "...", "num_splits": 4, "workspace_bytes": N,
 *    "stages": ["attention_partials", "combine"]}
 *   {"family": "bwd", "instance": "...", "deterministic": 1, "grid": G (dq_dk_dv blocks),
 *    "workspace_bytes": <the upper bound>, "staging_bytes": N,
 *    "stages": ["dot_do_o", "dq_dk_dv", "convert_dq"]} */
size_t ckt_fmha_fwd_plan_json(const ckt_fmha_fwd_plan *plan, char *buf, size_t size);
size_t ckt_fmha_bwd_plan_json(const ckt_fmha_bwd_plan *plan, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* CKT_FMHA_PLAN_H */
