/* lib/fmha/plan.c — plans of the multi-stage calls (ckt/fmha/plan.h): the
 * forward's (attention, or partials and combine for split-KV) from the
 * dispatcher's choice, and the backward's stages over workspace.h's plan. */
#include "lib/fmha/instances.h"

#include <stdio.h>
#include <string.h>

const char *ckt_fmha_stage_name(int stage)
{
    static const char *const names[CKT_FMHA_STAGE_COUNT] = {
        "attention", "attention_partials", "combine", "appendkv", "dot_do_o", "dq_dk_dv", "convert_dq", "dsink",
        "dbias_reduce"};
    return stage >= 0 && stage < CKT_FMHA_STAGE_COUNT ? names[stage] : "?";
}

/* >>forward */

ckt_status ckt_fmha_fwd_plan_init(ckt_fmha_fwd_plan *plan, const ckt_fmha_fwd_args *a)
{
    if (!plan)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "plan: NULL");
    memset(plan, 0, sizeof *plan);
    ckt_status st;
    const ckt_fmha_fwd_instance *in = ckt__fmha_fwd_pick(a, &st);
    if (!in)
        return st;
    /* the split count once given a workspace: num_splits 0 is automatic
     * with one (the heuristic reads only whether it is there: a non-NULL
     * stand-in, never dereferenced) */
    ckt_fmha_fwd_args b = *a;
    if (b.num_splits == 0 && !b.workspace)
        b.workspace = &b;
    int splits = 1;
    st = in->num_splits(&b, &splits);
    if (st != CKT_SUCCESS)
        return st;
    if (splits > 1) {
        /* the split call needs the KV cache's instance (plain instances
         * decline split-KV); in a set without one the call runs unsplit */
        b = *a;
        b.num_splits = splits;
        const ckt_fmha_fwd_instance *split = ckt__fmha_fwd_pick(&b, &st);
        if (split)
            in = split;
        else
            splits = 1;
    }
    plan->instance = in;
    plan->num_splits = splits;
    plan->workspace_bytes = ckt_fmha_splitkv_workspace_bytes(splits, a->batch, a->nhead_q, a->seqlen_q, a->hdim_v);
    if (splits > 1) {
        plan->stages[plan->num_stages++] = CKT_FMHA_STAGE_ATTENTION_PARTIALS;
        plan->stages[plan->num_stages++] = CKT_FMHA_STAGE_COMBINE;
    } else {
        plan->stages[plan->num_stages++] = CKT_FMHA_STAGE_ATTENTION;
    }
    return CKT_SUCCESS;
}

ckt_status ckt_fmha_fwd_run(const ckt_fmha_fwd_plan *plan, const ckt_fmha_fwd_args *a, ckt_stream stream)
{
    if (!plan || !a)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "%s: NULL", !plan ? "plan" : "args");
    if (!plan->instance)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "plan: has no instance (make it with ckt_fmha_fwd_plan_init)");
    ckt_fmha_fwd_args b = *a;
    b.num_splits = plan->num_splits;
    return plan->instance->launch(&b, stream);
}

int ckt_fmha_fwd_plan_stages(const ckt_fmha_fwd_plan *plan, ckt_fmha_stage *stages, int max)
{
    if (!plan)
        return 0;
    for (int i = 0; stages && i < plan->num_stages && i < max; i++)
        stages[i] = plan->stages[i];
    return plan->num_stages;
}

size_t ckt_fmha_fwd_plan_json(const ckt_fmha_fwd_plan *plan, char *buf, size_t size)
{
    ckt__fmha_out o = ckt__fmha_out_make(buf, size);
    if (!plan || !plan->instance) {
        ckt__fmha_printf(&o, "null");
        return o.len;
    }
    const ckt_fmha_registry_entry *e = ckt_fmha_registry_find(plan->instance->name);
    ckt__fmha_printf(&o, "{\"family\": \"%s\", \"instance\": \"%s\", \"num_splits\": %d, \"workspace_bytes\": %zu, "
                         "\"stages\": [",
                     e ? ckt_fmha_family_name(e->family) : "?", plan->instance->name, plan->num_splits,
                     plan->workspace_bytes);
    for (int s = 0; s < plan->num_stages; s++)
        ckt__fmha_printf(&o, "%s\"%s\"", s ? ", " : "", ckt_fmha_stage_name(plan->stages[s]));
    ckt__fmha_printf(&o, "]}");
    return o.len;
}

/* >>backward: three stages; dbias_reduce after dq_dk_dv with a broadcast
 * dbias, dsink last with attention sinks (the order bwd_body.h launches them) */

int ckt_fmha_bwd_plan_stages(const ckt_fmha_bwd_plan *plan, ckt_fmha_stage *stages, int max)
{
    if (!plan)
        return 0;
    ckt_fmha_stage order[5];
    int n = 0;
    order[n++] = CKT_FMHA_STAGE_DOT_DO_O;
    order[n++] = CKT_FMHA_STAGE_DQ_DK_DV;
    if (plan->traits.dbias_reduce)
        order[n++] = CKT_FMHA_STAGE_DBIAS_REDUCE;
    order[n++] = CKT_FMHA_STAGE_CONVERT_DQ;
    if (plan->traits.dsink)
        order[n++] = CKT_FMHA_STAGE_DSINK;
    for (int i = 0; stages && i < n && i < max; i++)
        stages[i] = order[i];
    return n;
}

size_t ckt_fmha_bwd_plan_json(const ckt_fmha_bwd_plan *plan, char *buf, size_t size)
{
    ckt__fmha_out o = ckt__fmha_out_make(buf, size);
    if (!plan) {
        ckt__fmha_printf(&o, "null");
        return o.len;
    }
    const ckt_fmha_bwd_instance *in = (const ckt_fmha_bwd_instance *)plan->instance;
    ckt__fmha_printf(&o,
                     "{\"family\": \"bwd\", \"instance\": \"%s\", \"deterministic\": %d, \"block_m\": %d, "
                     "\"block_n\": %d, \"grid\": %d, \"workspace_bytes\": %zu, \"staging_bytes\": %zu, \"stages\": [",
                     in ? in->name : "", plan->persistent, plan->block_m, plan->block_n, plan->grid,
                     ckt_fmha_bwd_workspace_upper_bound(plan), plan->staging_bytes);
    ckt_fmha_stage st[CKT_FMHA_MAX_STAGES];
    const int n = ckt_fmha_bwd_plan_stages(plan, st, CKT_FMHA_MAX_STAGES);
    for (int s = 0; s < n; s++)
        ckt__fmha_printf(&o, "%s\"%s\"", s ? ", " : "", ckt_fmha_stage_name(st[s]));
    ckt__fmha_printf(&o, "]}");
    return o.len;
}
