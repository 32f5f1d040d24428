/* ckt/fmha/registry.h — what libckt_fmha holds and why a call runs what it
 * runs: every compiled instance described (family, dtype, head dims, tile,
 * features, targets, instance set), the instance set's name, a JSON export,
 * and select reports that list each candidate with the reason it was
 * rejected. C ABI, implemented in lib/fmha (registry.c, dispatch.c).
 *
 *   for (int i = 0; i < ckt_fmha_registry_count(); i++) {
 *       const ckt_fmha_registry_entry *e = ckt_fmha_registry_at(i);
 *       printf("%s %s %s %d/%d\n", e->name, ckt_fmha_family_name(e->family),
 *              ckt_dtype_name(e->dtype), e->hdim, e->hdim_v);
 *   }
 *   char why[4096];
 *   ckt_fmha_fwd_select_report(&args, why, sizeof why);   // one line per candidate
 *
 *   size_t n = ckt_fmha_registry_json(NULL, 0);          // snprintf-style
 *   char *buf = malloc(n + 1); ckt_fmha_registry_json(buf, n + 1);
 *
 * The CLI: bazel run //tools:fmha_registry -- [-json] [-family=bwd] [-select ...]
 * (docs/fmha.md#registry).
 *
 * Instance sets: the build compiles one named set (--define=ckt_fmha_set=
 * all | inference | training; lib/fmha/instances.bzl). all: every family;
 * inference: the forward (plain, _kv_, decode) and append-KV; training: the
 * plain forward and the backward. A call whose instance another set has
 * fails with CKT_ERROR_NO_INSTANCE and a message naming this build's set and
 * the sets that have it.
 */
#ifndef CKT_FMHA_REGISTRY_H
#define CKT_FMHA_REGISTRY_H

#include "ckt/fmha/args.h"
#include "ckt/fmha/workspace.h"
#include "ckt/host/dtype.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The families of instances. */
typedef enum ckt_fmha_family {
    CKT_FMHA_FAMILY_FWD = 0,        /* forward over plain K/V tensors (no KV cache: 2% faster) */
    CKT_FMHA_FAMILY_FWD_KV = 1,     /* forward with the KV cache: paged (vLLM, sglang), split-KV,
                                     * cache_batch_idx, batch prefill (`_kv_` instances) */
    CKT_FMHA_FAMILY_FWD_DECODE = 2, /* forward for seqlen_q <= CKT_FMHA_DECODE_MAX_Q: GQA packed, KV cache */
    CKT_FMHA_FAMILY_APPENDKV = 3,   /* append new K/V to a cache, rotary embedding */
    CKT_FMHA_FAMILY_BWD = 4,        /* backward: dot_do_o, dq_dk_dv, convert_dq */
    CKT_FMHA_FAMILY_COUNT = 5
} ckt_fmha_family;

/* "fwd", "fwd_kv", "fwd_decode", "appendkv", "bwd"; "?" otherwise. */
const char *ckt_fmha_family_name(int family);

/* What an instance takes at run time (ckt_fmha_registry_entry.features). */
#define CKT_FMHA_FEATURE_TABLE(X)                                                       \
    X(CKT_FMHA_FEATURE_GROUP_MODE, 0, "group_mode")      /* varlen: seqstart_q / _k */  \
    X(CKT_FMHA_FEATURE_GQA, 1, "gqa")                    /* nhead_q a multiple of nhead_k */ \
    X(CKT_FMHA_FEATURE_MASKS, 2, "masks")                /* causal, sliding window */   \
    X(CKT_FMHA_FEATURE_SOFTCAP, 3, "softcap")                                           \
    X(CKT_FMHA_FEATURE_LSE, 4, "lse")                    /* writes (fwd) / reads (bwd) the LSE */ \
    X(CKT_FMHA_FEATURE_PADDED_HDIM, 5, "padded_hdim")    /* smaller multiples of 8 run padded */ \
    X(CKT_FMHA_FEATURE_KV_CACHE, 6, "kv_cache")          /* cache_batch_idx, a cache's batch */ \
    X(CKT_FMHA_FEATURE_PAGED, 7, "paged")                /* vLLM block tables, sglang indices */ \
    X(CKT_FMHA_FEATURE_SPLIT_KV, 8, "split_kv")          /* num_splits, workspace, combine */ \
    X(CKT_FMHA_FEATURE_PACKED_GQA, 9, "packed_gqa")      /* a GQA group's heads in one block */ \
    X(CKT_FMHA_FEATURE_DETERMINISTIC, 10, "deterministic") /* bitwise reproducible option */ \
    X(CKT_FMHA_FEATURE_ROTARY, 11, "rotary")             /* rotary embedding */    \
    X(CKT_FMHA_FEATURE_SINK, 12, "sink")                 /* attention sinks (and dsink) */

#define CKT__FMHA_FEATURE_ENUM(name, bit, str) name = 1u << (bit),
enum { CKT_FMHA_FEATURE_TABLE(CKT__FMHA_FEATURE_ENUM) };
#undef CKT__FMHA_FEATURE_ENUM

/* The name of feature bit `bit` (0 .. 31: "group_mode", ...), NULL past the table. */
const char *ckt_fmha_feature_name(int bit);

/* Stages in launch order, the most any instance has. */
#define CKT_FMHA_MAX_STAGES 5

/* One compiled instance. */
typedef struct ckt_fmha_registry_entry {
    const char *name; /* "ckt_fmha_fwd_kv_bf16_d128" */
    ckt_fmha_family family;
    ckt_dtype dtype;
    int hdim, hdim_v;     /* the most it takes (append-KV: any multiple of 8 up to these) */
    int block_m, block_n; /* the tile: query rows (packed rows for decode; bwd: per step of
                           * dq_dk_dv) and keys per step (bwd: per work unit); append-KV:
                           * token rows per block, 0 */
    unsigned features;    /* CKT_FMHA_FEATURE_* */
    int runnable;         /* 1: this target runs it at its head dims; 0: compiled but
                           * declined here (CDNA: the backward above 192, the LDS limit) */
    int num_stages;       /* kernels a call launches, in order (split-KV adds a combine:
                           * ckt/fmha/plan.h says for a call) */
    const char *stages[CKT_FMHA_MAX_STAGES];
    const char *arch;         /* this build's targets: "sm_80,sm_90a", "gfx90a,gfx940",
                               * "cpu-emulator nv" or "cpu-emulator cdna" */
    const char *instance_set; /* the build's set: "all", "inference", "training" */
    const void *instance;     /* the ckt_fmha_fwd_instance, _bwd_instance or _appendkv_instance */
} ckt_fmha_registry_entry;

/* The compiled instances: entries 0 .. count - 1, forward first (plain, _kv_,
 * decode, cheapest first as the dispatcher lists them), then append-KV, then
 * the backward. NULL past the end. */
int ckt_fmha_registry_count(void);
const ckt_fmha_registry_entry *ckt_fmha_registry_at(int i);

/* The entry of an instance by name, NULL when not compiled. */
const ckt_fmha_registry_entry *ckt_fmha_registry_find(const char *name);

/* This build's instance set ("all", "inference", "training"), and its targets. */
const char *ckt_fmha_instance_set(void);
const char *ckt_fmha_target_arch(void);

/* 1 when this build compiles some instance of `family`. */
int ckt_fmha_registry_has_family(int family);

/* The registry as JSON into buf (snprintf-style: at most size bytes with the
 * terminating 0; returns the length the whole document needs, without it):
 *   {"instance_set": "all", "arch": "...", "sets": {"all": ["fwd", ...], ...},
 *    "instances": [{"name": ..., "family": "fwd", "dtype": "bf16", "hdim": 128,
 *      "hdim_v": 128, "block_m": ..., "block_n": ..., "features": ["group_mode", ...],
 *      "runnable": true, "stages": ["attention"], "arch": ..., "instance_set": ...}, ...]}
 * family >= 0 keeps only that family's instances; -1: all of them. One
 * instance per line, so that grep finds them. */
size_t ckt_fmha_registry_json(char *buf, size_t size);
size_t ckt_fmha_registry_json_family(char *buf, size_t size, int family);

/* >>select reports: one line per candidate instance of the call's family,
 * "<name>: chosen", "<name>: fits, but <other> is cheaper" or
 * "<name>: rejected: <reason>" (dtype, head dims, decode lengths, the KV
 * cache, this target), then, when none fits, "no instance: <the dispatcher's
 * message>" (naming the instance set when another set has one). snprintf-
 * style like ckt_fmha_registry_json. The select functions themselves
 * (ckt_fmha_fwd_select, ckt_fmha_bwd_select, ckt_fmha_appendkv_select:
 * ckt/fmha/dispatch.h) leave the message in ckt_fmha_last_error(). */
size_t ckt_fmha_fwd_select_report(const ckt_fmha_fwd_args *a, char *buf, size_t size);
size_t ckt_fmha_bwd_select_report(const ckt_fmha_bwd_traits *t, char *buf, size_t size);
size_t ckt_fmha_appendkv_select_report(const ckt_fmha_appendkv_args *a, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* CKT_FMHA_REGISTRY_H */
