/* lib/fmha/dispatch.c — ckt_fmha_fwd: picks the cheapest compiled instance
 * whose head dims cover the arguments' (ckt/fmha/dispatch.h); the same for
 * the backward and append-KV, and the select reports (ckt/fmha/registry.h)
 * from the same rules. */
#if !defined(CKT__FMHA_FWD_FILES) || !defined(CKT__FMHA_BWD_FILES)
#error "lib/fmha: define CKT__FMHA_FWD_FILES(X) and CKT__FMHA_BWD_FILES(X) (lib/fmha/BUILD does, from lib/fmha/instances.bzl)"
#endif
#include "lib/fmha/instances.h"

#include <string.h>

/* NULL-terminated: a set may compile no file of a family */
#define CKT__FMHA_FWD_LIST(file) ckt__fmha_fwd_##file,
static const ckt_fmha_fwd_instance *const ckt__fmha_fwd_tables[] = {CKT__FMHA_FWD_FILES(CKT__FMHA_FWD_LIST) NULL};
#undef CKT__FMHA_FWD_LIST

enum {
    CKT__FMHA_FWD_COUNT =
        (int)(sizeof ckt__fmha_fwd_tables / sizeof ckt__fmha_fwd_tables[0] - 1) * CKT__FMHA_FWD_PER_FILE
};

/* The largest head dims any instance takes (for messages): q/k 576, v 512
 * (fwd_d576_dv512.c; NVIDIA only above 256). */
#define CKT__FMHA_FWD_MAX_HDIM 576
#define CKT__FMHA_FWD_MAX_HDIM_V 512
#define CKT__FMHA_BWD_MAX_HDIM 512 /* the backward's (NVIDIA only above 192) */

const ckt_fmha_fwd_instance *ckt_fmha_fwd_instance_at(int i)
{
    if (i < 0 || i >= CKT__FMHA_FWD_COUNT)
        return NULL;
    return &ckt__fmha_fwd_tables[i / CKT__FMHA_FWD_PER_FILE][i % CKT__FMHA_FWD_PER_FILE];
}

/* The compiled head-dim pairs of dtype dt, "32/32 64/64 ...", for messages:
 * the instances with the KV cache (kv = 1) or without it, decode aside. */
static void ckt__fmha_fwd_list_dims(char *buf, size_t size, ckt_dtype dt, int kv)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < CKT__FMHA_FWD_COUNT && n < size; i++) {
        const ckt_fmha_fwd_instance *in = ckt_fmha_fwd_instance_at(i);
        if (in->dtype == dt && !in->packs_gqa && !in->kv_cache == !kv) {
            int w = snprintf(buf + n, size - n, "%s%d/%d", n ? " " : "", in->hdim, in->hdim_v);
            n += w > 0 ? (size_t)w : 0;
        }
    }
    if (n == 0)
        snprintf(buf, size, "none");
}

/* Why instance `in` cannot run a (NULL: it can), the reason in buf. The
 * dispatcher's one rule: ckt__fmha_fwd_pick and the select report use it. */
static const char *ckt__fmha_fwd_reject(const ckt_fmha_fwd_instance *in, const ckt_fmha_fwd_args *a, char *buf,
                                        size_t size)
{
    if (in->dtype != a->dtype)
        snprintf(buf, size, "dtype: it takes %s, the call has %s", ckt_dtype_name(in->dtype), ckt_dtype_name(a->dtype));
    else if (in->dtype == CKT_FP8_E4M3 && in->o_dtype != a->o_dtype)
        snprintf(buf, size, "o_dtype: it writes %s, the call has %s", ckt_dtype_name(in->o_dtype),
                 ckt_dtype_name(a->o_dtype));
    else if (in->hdim < a->hdim_q || in->hdim_v < a->hdim_v)
        snprintf(buf, size, "head dims: it takes up to %d/%d, the call has %d/%d", in->hdim, in->hdim_v, a->hdim_q,
                 a->hdim_v);
    else if (in->packs_gqa && a->seqlen_q > CKT_FMHA_DECODE_MAX_Q)
        snprintf(buf, size, "decode instance: seqlen_q %d > CKT_FMHA_DECODE_MAX_Q %d", a->seqlen_q,
                 CKT_FMHA_DECODE_MAX_Q);
    else if (!in->kv_cache && ckt_fmha_fwd_uses_kv_cache(a))
        snprintf(buf, size, "compiled without the KV cache; the call sets %s",
                 a->page_size ? "page_size" : a->cache_batch_idx ? "cache_batch_idx" : "num_splits / workspace");
    else if (a->hdim_q % CKT_FMHA_VEC_ELEMS || a->hdim_v % CKT_FMHA_VEC_ELEMS)
        snprintf(buf, size, "head dims %d/%d: not multiples of 8", a->hdim_q, a->hdim_v);
    else if (!in->fits(a))
        snprintf(buf, size, "its fits() declines the call");
    else
        return NULL;
    return buf;
}

/* Whether `in` is cheaper than `best` (NULL: yes). Cost ~ the padded head
 * dims the instance computes with; at equal head dims decode before the
 * rest, then without the KV cache before with it. */
static int ckt__fmha_fwd_cheaper(const ckt_fmha_fwd_instance *in, const ckt_fmha_fwd_instance *best)
{
    if (!best)
        return 1;
    const int rank = in->packs_gqa ? 0 : in->kv_cache ? 2 : 1;
    const int best_rank = best->packs_gqa ? 0 : best->kv_cache ? 2 : 1;
    return in->hdim + in->hdim_v < best->hdim + best->hdim_v ||
           (in->hdim + in->hdim_v == best->hdim + best->hdim_v &&
            (in->hdim < best->hdim || (in->hdim == best->hdim && rank < best_rank)));
}

/* The call's own errors (NULL args, dtype, head dims <= 0), before any instance. */
static ckt_status ckt__fmha_fwd_precheck(const ckt_fmha_fwd_args *a)
{
    if (!a)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_fmha_fwd: args is NULL");
    if (a->dtype != CKT_F16 && a->dtype != CKT_BF16 && a->dtype != CKT_FP8_E4M3)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "dtype: %s (%d): ckt_fmha_fwd takes fp16, bf16 or fp8",
                         ckt_dtype_name(a->dtype), (int)a->dtype);
    if (a->hdim_q <= 0 || a->hdim_v <= 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %d (must be > 0)", a->hdim_q <= 0 ? "hdim_q" : "hdim_v",
                         a->hdim_q <= 0 ? a->hdim_q : a->hdim_v);
    if (a->dtype == CKT_FP8_E4M3 && a->o_dtype != CKT_F16 && a->o_dtype != CKT_BF16) /* an instance per o_dtype */
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "o_dtype: %s (%d): fp8 writes fp16 or bf16", ckt_dtype_name(a->o_dtype),
                         (int)a->o_dtype);
    return CKT_SUCCESS;
}

/* The instance for a, or NULL with *st (and the detail message) set. */
const ckt_fmha_fwd_instance *ckt__fmha_fwd_pick(const ckt_fmha_fwd_args *a, ckt_status *st)
{
    *st = ckt__fmha_fwd_precheck(a);
    if (*st != CKT_SUCCESS)
        return NULL;
    const ckt_fmha_fwd_instance *best = NULL;
    char reason[160];
    for (int i = 0; i < CKT__FMHA_FWD_COUNT; i++) {
        const ckt_fmha_fwd_instance *in = ckt_fmha_fwd_instance_at(i);
        if (!ckt__fmha_fwd_reject(in, a, reason, sizeof reason) && ckt__fmha_fwd_cheaper(in, best))
            best = in;
    }
    if (!best) {
        const int kv = ckt_fmha_fwd_uses_kv_cache(a);
        char dims[256], hint[256] = "";
        ckt__fmha_fwd_list_dims(dims, sizeof dims, a->dtype, kv);
        const char *why = a->hdim_q % CKT_FMHA_VEC_ELEMS ? "hdim_q is not a multiple of 8"
                        : a->hdim_v % CKT_FMHA_VEC_ELEMS ? "hdim_v is not a multiple of 8"
                        : a->hdim_q > CKT__FMHA_FWD_MAX_HDIM || a->hdim_v > CKT__FMHA_FWD_MAX_HDIM_V
                              ? "head dims go up to 576 (q/k) and 512 (v)"
                        : kv ? "no compiled instance with the KV cache (paged, split-KV, cache_batch_idx) covers it"
                             : "no compiled head-dim pair covers it";
        if (a->hdim_q % CKT_FMHA_VEC_ELEMS == 0 && a->hdim_v % CKT_FMHA_VEC_ELEMS == 0) {
            unsigned fams = (1u << CKT_FMHA_FAMILY_FWD_KV) | (kv ? 0u : 1u << CKT_FMHA_FAMILY_FWD) |
                            (a->seqlen_q <= CKT_FMHA_DECODE_MAX_Q ? 1u << CKT_FMHA_FAMILY_FWD_DECODE : 0u);
            ckt__fmha_set_hint(fams, a->hdim_q, a->hdim_v, hint, sizeof hint);
        }
        *st = ckt__fail(CKT_ERROR_NO_INSTANCE,
                        "ckt_fmha_fwd: no instance for %s hdim_q=%d hdim_v=%d: %s%s (compiled hdim_q/hdim_v%s: %s; "
                        "smaller multiples of 8 run padded)",
                        ckt_dtype_name(a->dtype), a->hdim_q, a->hdim_v, why, hint, kv ? " with the KV cache" : "",
                        dims);
    }
    return best;
}

size_t ckt_fmha_fwd_select_report(const ckt_fmha_fwd_args *a, char *buf, size_t size)
{
    ckt__fmha_out o = ckt__fmha_out_make(buf, size);
    ckt_status st;
    const ckt_fmha_fwd_instance *best = ckt__fmha_fwd_pick(a, &st);
    if (a && st != CKT_ERROR_NULL_POINTER && st != CKT_ERROR_UNSUPPORTED && st != CKT_ERROR_INVALID_ARGUMENT) {
        char reason[160];
        for (int i = 0; i < CKT__FMHA_FWD_COUNT; i++) {
            const ckt_fmha_fwd_instance *in = ckt_fmha_fwd_instance_at(i);
            const char *r = ckt__fmha_fwd_reject(in, a, reason, sizeof reason);
            if (in == best)
                ckt__fmha_printf(&o, "%s: chosen\n", in->name);
            else if (!r)
                ckt__fmha_printf(&o, "%s: fits, but %s is cheaper\n", in->name, best->name);
            else
                ckt__fmha_printf(&o, "%s: rejected: %s\n", in->name, r);
        }
    }
    if (!best)
        ckt__fmha_printf(&o, "no instance: %s\n", ckt_last_error());
    return o.len;
}

const ckt_fmha_fwd_instance *ckt_fmha_fwd_select(const ckt_fmha_fwd_args *a)
{
    ckt_status st;
    return ckt__fmha_fwd_pick(a, &st);
}

ckt_status ckt_fmha_fwd(const ckt_fmha_fwd_args *a, ckt_stream stream)
{
    ckt_status st;
    const ckt_fmha_fwd_instance *in = ckt__fmha_fwd_pick(a, &st);
    return in ? in->launch(a, stream) : st;
}

size_t ckt_fmha_fwd_workspace_bytes(const ckt_fmha_fwd_args *a)
{
    ckt_status st;
    const ckt_fmha_fwd_instance *in = ckt__fmha_fwd_pick(a, &st);
    return in ? in->workspace_bytes(a) : 0;
}

int ckt_fmha_fwd_num_splits(const ckt_fmha_fwd_args *a)
{
    ckt_status st;
    int splits = -1;
    const ckt_fmha_fwd_instance *in = ckt__fmha_fwd_pick(a, &st);
    if (!in || in->num_splits(a, &splits) != CKT_SUCCESS)
        return -1;
    return splits;
}

/* >>backward */

#define CKT__FMHA_BWD_LIST(file) ckt__fmha_bwd_##file,
static const ckt_fmha_bwd_instance *const ckt__fmha_bwd_tables[] = {CKT__FMHA_BWD_FILES(CKT__FMHA_BWD_LIST) NULL};
#undef CKT__FMHA_BWD_LIST

enum {
    CKT__FMHA_BWD_COUNT =
        (int)(sizeof ckt__fmha_bwd_tables / sizeof ckt__fmha_bwd_tables[0] - 1) * CKT__FMHA_FWD_PER_FILE
};

const ckt_fmha_bwd_instance *ckt_fmha_bwd_instance_at(int i)
{
    if (i < 0 || i >= CKT__FMHA_BWD_COUNT)
        return NULL;
    return &ckt__fmha_bwd_tables[i / CKT__FMHA_FWD_PER_FILE][i % CKT__FMHA_FWD_PER_FILE];
}

/* Why backward instance `in` cannot run traits t (NULL: it can); probe is
 * an args struct with t's type and head dims, for the instance's fits(). */
static const char *ckt__fmha_bwd_reject(const ckt_fmha_bwd_instance *in, const ckt_fmha_bwd_traits *t,
                                        const ckt_fmha_bwd_args *probe, char *buf, size_t size)
{
    if (in->dtype != t->dtype)
        snprintf(buf, size, "dtype: it takes %s, the call has %s", ckt_dtype_name(in->dtype), ckt_dtype_name(t->dtype));
    else if (in->hdim < t->hdim_q || in->hdim_v < t->hdim_v)
        snprintf(buf, size, "head dims: it takes up to %d/%d, the call has %d/%d", in->hdim, in->hdim_v, t->hdim_q,
                 t->hdim_v);
    else if (t->hdim_q % CKT_FMHA_VEC_ELEMS || t->hdim_v % CKT_FMHA_VEC_ELEMS)
        snprintf(buf, size, "head dims %d/%d: not multiples of 8", t->hdim_q, t->hdim_v);
    else if (!in->fits(probe))
        snprintf(buf, size, "this target declines it (CDNA: the backward's head dims stop at 192, the LDS limit)");
    else
        return NULL;
    return buf;
}

static ckt_status ckt__fmha_bwd_precheck(const ckt_fmha_bwd_traits *t)
{
    if (!t)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_fmha_bwd: traits is NULL");
    if (t->dtype != CKT_F16 && t->dtype != CKT_BF16)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "dtype: %s (%d): ckt_fmha_bwd takes fp16 or bf16",
                         ckt_dtype_name(t->dtype), (int)t->dtype);
    if (t->hdim_q <= 0 || t->hdim_v <= 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %d (must be > 0)", t->hdim_q <= 0 ? "hdim_q" : "hdim_v",
                         t->hdim_q <= 0 ? t->hdim_q : t->hdim_v);
    return CKT_SUCCESS;
}

static ckt_fmha_bwd_args ckt__fmha_bwd_probe(const ckt_fmha_bwd_traits *t)
{
    ckt_fmha_bwd_args probe = CKT_ZERO_INIT;
    probe.dtype = t->dtype;
    probe.hdim_q = t->hdim_q;
    probe.hdim_v = t->hdim_v;
    return probe;
}

/* The cheapest backward instance covering traits t (head dims, dtype), or
 * NULL with the reason. */
static const ckt_fmha_bwd_instance *ckt__fmha_bwd_pick(const ckt_fmha_bwd_traits *t, ckt_status *st)
{
    *st = ckt__fmha_bwd_precheck(t);
    if (*st != CKT_SUCCESS)
        return NULL;
    char hint[256] = "";
    if (CKT__FMHA_BWD_COUNT == 0) {
        ckt__fmha_sets_with(1u << CKT_FMHA_FAMILY_BWD, hint, sizeof hint);
        *st = ckt__fail(CKT_ERROR_NO_INSTANCE,
                        "ckt_fmha_bwd: no backward instance in instance set '%s' (build with "
                        "--define=ckt_fmha_set=%s)",
                        ckt_fmha_instance_set(), hint);
        return NULL;
    }
    const ckt_fmha_bwd_args probe = ckt__fmha_bwd_probe(t);
    const ckt_fmha_bwd_instance *best = NULL;
    int covered = 0; /* some instance's head dims cover t, but it does not fit (target limits) */
    char reason[160];
    for (int i = 0; i < CKT__FMHA_BWD_COUNT; i++) {
        const ckt_fmha_bwd_instance *in = ckt_fmha_bwd_instance_at(i);
        if (in->dtype == t->dtype && in->hdim >= t->hdim_q && in->hdim_v >= t->hdim_v)
            covered = 1;
        if (ckt__fmha_bwd_reject(in, t, &probe, reason, sizeof reason))
            continue;
        if (!best || in->hdim + in->hdim_v < best->hdim + best->hdim_v ||
            (in->hdim + in->hdim_v == best->hdim + best->hdim_v && in->hdim < best->hdim))
            best = in;
    }
    if (!best) {
        const char *why = t->hdim_q % CKT_FMHA_VEC_ELEMS ? "hdim_q is not a multiple of 8"
                        : t->hdim_v % CKT_FMHA_VEC_ELEMS ? "hdim_v is not a multiple of 8"
                        : t->hdim_q > CKT__FMHA_BWD_MAX_HDIM || t->hdim_v > CKT__FMHA_BWD_MAX_HDIM
                              ? "head dims go up to 512"
                        : covered ? "this target's backward instances stop below it (CDNA: head dims up to 192, "
                                    "the LDS limit)"
                                  : "no compiled head-dim pair covers it";
        if (!covered && t->hdim_q % CKT_FMHA_VEC_ELEMS == 0 && t->hdim_v % CKT_FMHA_VEC_ELEMS == 0)
            ckt__fmha_set_hint(1u << CKT_FMHA_FAMILY_BWD, t->hdim_q, t->hdim_v, hint, sizeof hint);
        *st = ckt__fail(CKT_ERROR_NO_INSTANCE, "ckt_fmha_bwd: no instance for %s hdim_q=%d hdim_v=%d: %s%s",
                        ckt_dtype_name(t->dtype), t->hdim_q, t->hdim_v, why, hint);
    }
    return best;
}

size_t ckt_fmha_bwd_select_report(const ckt_fmha_bwd_traits *t, char *buf, size_t size)
{
    ckt__fmha_out o = ckt__fmha_out_make(buf, size);
    ckt_status st;
    const ckt_fmha_bwd_instance *best = ckt__fmha_bwd_pick(t, &st);
    if (t && (st == CKT_SUCCESS || st == CKT_ERROR_NO_INSTANCE)) {
        const ckt_fmha_bwd_args probe = ckt__fmha_bwd_probe(t);
        char reason[160];
        for (int i = 0; i < CKT__FMHA_BWD_COUNT; i++) {
            const ckt_fmha_bwd_instance *in = ckt_fmha_bwd_instance_at(i);
            const char *r = ckt__fmha_bwd_reject(in, t, &probe, reason, sizeof reason);
            if (in == best)
                ckt__fmha_printf(&o, "%s: chosen\n", in->name);
            else if (!r)
                ckt__fmha_printf(&o, "%s: fits, but %s is cheaper\n", in->name, best->name);
            else
                ckt__fmha_printf(&o, "%s: rejected: %s\n", in->name, r);
        }
    }
    if (!best)
        ckt__fmha_printf(&o, "no instance: %s\n", ckt_last_error());
    return o.len;
}

const ckt_fmha_bwd_instance *ckt_fmha_bwd_select(const ckt_fmha_bwd_traits *t)
{
    ckt_status st;
    return ckt__fmha_bwd_pick(t, &st);
}

ckt_status ckt_fmha_bwd_plan_init(ckt_fmha_bwd_plan *plan, const ckt_fmha_bwd_traits *t)
{
    ckt_status st;
    if (!plan)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "plan: NULL");
    const ckt_fmha_bwd_instance *in = ckt__fmha_bwd_pick(t, &st);
    if (!in)
        return st;
    st = ckt_fmha_bwd_plan_make(plan, t, in->block_m, in->block_n, in->blocks_per_mp);
    if (st == CKT_SUCCESS)
        plan->instance = in;
    return st;
}

ckt_status ckt_fmha_bwd_run(const ckt_fmha_bwd_plan *plan, const ckt_fmha_bwd_args *a, ckt_stream stream)
{
    if (!plan)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "plan: NULL");
    if (!plan->instance)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "plan: has no instance (make it with ckt_fmha_bwd_plan_init, or run your own instance's "
                         "NAME_run)");
    return ((const ckt_fmha_bwd_instance *)plan->instance)->run(plan, a, stream);
}

size_t ckt_fmha_bwd_workspace_bytes(const ckt_fmha_bwd_args *a)
{
    if (!a) {
        ckt__fail(CKT_ERROR_NULL_POINTER, "args: NULL");
        return 0;
    }
    const ckt_fmha_bwd_traits t = ckt_fmha_bwd_traits_of(a);
    ckt_fmha_bwd_plan plan;
    if (ckt_fmha_bwd_plan_init(&plan, &t) != CKT_SUCCESS)
        return 0;
    return ckt_fmha_bwd_workspace_upper_bound(&plan);
}

ckt_status ckt_fmha_bwd(const ckt_fmha_bwd_args *a, ckt_stream stream)
{
    if (!a)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "args: NULL");
    const ckt_fmha_bwd_traits t = ckt_fmha_bwd_traits_of(a);
    ckt_fmha_bwd_plan plan;
    ckt_status st = ckt_fmha_bwd_plan_init(&plan, &t);
    if (st != CKT_SUCCESS)
        return st;
    /* validate before touching the workspace (prepare writes it) */
    const ckt_fmha_bwd_instance *in = (const ckt_fmha_bwd_instance *)plan.instance;
    st = ckt_fmha_bwd_validate(a, a->dtype, in->hdim, in->hdim_v);
    if (st != CKT_SUCCESS || ckt_fmha_bwd_is_empty(a))
        return st;
    st = ckt_fmha_bwd_prepare(&plan, a, stream);
    return st != CKT_SUCCESS ? st : in->run(&plan, a, stream);
}

const char *ckt_fmha_last_error(void) { return ckt_last_error(); }

const char *ckt_fmha_status_string(int status) { return ckt_status_string((ckt_status)status); }

size_t ckt_fmha_fwd_args_offset(const char *field)
{
#define CKT__FMHA_FIELD(f)                                                                        \
    if (strcmp(field, #f) == 0)                                                                   \
        return offsetof(ckt_fmha_fwd_args, f);
    if (!field)
        return (size_t)-1;
    if (strcmp(field, "sizeof") == 0)
        return sizeof(ckt_fmha_fwd_args);
    CKT__FMHA_FIELD(dtype)
    CKT__FMHA_FIELD(q)
    CKT__FMHA_FIELD(k)
    CKT__FMHA_FIELD(v)
    CKT__FMHA_FIELD(o)
    CKT__FMHA_FIELD(lse)
    CKT__FMHA_FIELD(batch)
    CKT__FMHA_FIELD(nhead_q)
    CKT__FMHA_FIELD(nhead_k)
    CKT__FMHA_FIELD(seqlen_q)
    CKT__FMHA_FIELD(seqlen_k)
    CKT__FMHA_FIELD(hdim_q)
    CKT__FMHA_FIELD(hdim_v)
    CKT__FMHA_FIELD(q_stride_b)
    CKT__FMHA_FIELD(q_stride_h)
    CKT__FMHA_FIELD(q_stride_s)
    CKT__FMHA_FIELD(k_stride_b)
    CKT__FMHA_FIELD(k_stride_h)
    CKT__FMHA_FIELD(k_stride_s)
    CKT__FMHA_FIELD(v_stride_b)
    CKT__FMHA_FIELD(v_stride_h)
    CKT__FMHA_FIELD(v_stride_s)
    CKT__FMHA_FIELD(o_stride_b)
    CKT__FMHA_FIELD(o_stride_h)
    CKT__FMHA_FIELD(o_stride_s)
    CKT__FMHA_FIELD(lse_stride_b)
    CKT__FMHA_FIELD(lse_stride_h)
    CKT__FMHA_FIELD(group_mode)
    CKT__FMHA_FIELD(seqstart_q)
    CKT__FMHA_FIELD(seqstart_k)
    CKT__FMHA_FIELD(seqlen_q_ptr)
    CKT__FMHA_FIELD(seqlen_k_ptr)
    CKT__FMHA_FIELD(scale)
    CKT__FMHA_FIELD(softcap)
    CKT__FMHA_FIELD(mask)
    CKT__FMHA_FIELD(window_left)
    CKT__FMHA_FIELD(window_right)
    CKT__FMHA_FIELD(cache_batch_idx)
    CKT__FMHA_FIELD(cache_batch)
    CKT__FMHA_FIELD(page_size)
    CKT__FMHA_FIELD(num_pages)
    CKT__FMHA_FIELD(block_table)
    CKT__FMHA_FIELD(max_pages_per_seq)
    CKT__FMHA_FIELD(kv_indptr)
    CKT__FMHA_FIELD(kv_indices)
    CKT__FMHA_FIELD(kv_last_page_len)
    CKT__FMHA_FIELD(num_splits)
    CKT__FMHA_FIELD(workspace)
    CKT__FMHA_FIELD(workspace_bytes)
    CKT__FMHA_FIELD(sink)
    CKT__FMHA_FIELD(p_drop)
    CKT__FMHA_FIELD(drop_seed)
    CKT__FMHA_FIELD(drop_offset)
    CKT__FMHA_FIELD(drop_seed_offset)
    CKT__FMHA_FIELD(randval)
    CKT__FMHA_FIELD(randval_stride_b)
    CKT__FMHA_FIELD(randval_stride_h)
    CKT__FMHA_FIELD(randval_stride_s)
    CKT__FMHA_FIELD(bias) /* bias and ALiBi */
    CKT__FMHA_FIELD(bias_stride_b)
    CKT__FMHA_FIELD(bias_stride_h)
    CKT__FMHA_FIELD(bias_stride_s)
    CKT__FMHA_FIELD(alibi_slopes)
    CKT__FMHA_FIELD(alibi_stride_b)
    CKT__FMHA_FIELD(o_dtype)
    CKT__FMHA_FIELD(descale_q)
    CKT__FMHA_FIELD(descale_k)
    CKT__FMHA_FIELD(descale_v)
    CKT__FMHA_FIELD(scale_p)
    return (size_t)-1;
#undef CKT__FMHA_FIELD
}

size_t ckt_fmha_bwd_args_offset(const char *field)
{
#define CKT__FMHA_FIELD(f)                                                                        \
    if (strcmp(field, #f) == 0)                                                                   \
        return offsetof(ckt_fmha_bwd_args, f);
#define CKT__FMHA_STRIDES(t) CKT__FMHA_FIELD(t##_stride_b) CKT__FMHA_FIELD(t##_stride_h) CKT__FMHA_FIELD(t##_stride_s)
    if (!field)
        return (size_t)-1;
    if (strcmp(field, "sizeof") == 0)
        return sizeof(ckt_fmha_bwd_args);
    CKT__FMHA_FIELD(q)
    CKT__FMHA_FIELD(k)
    CKT__FMHA_FIELD(v)
    CKT__FMHA_FIELD(o)
    CKT__FMHA_FIELD(dout)
    CKT__FMHA_FIELD(lse)
    CKT__FMHA_FIELD(dq)
    CKT__FMHA_FIELD(dk)
    CKT__FMHA_FIELD(dv)
    CKT__FMHA_FIELD(dtype)
    CKT__FMHA_FIELD(batch)
    CKT__FMHA_FIELD(nhead_q)
    CKT__FMHA_FIELD(nhead_k)
    CKT__FMHA_FIELD(seqlen_q)
    CKT__FMHA_FIELD(seqlen_k)
    CKT__FMHA_FIELD(hdim_q)
    CKT__FMHA_FIELD(hdim_v)
    CKT__FMHA_STRIDES(q)
    CKT__FMHA_STRIDES(k)
    CKT__FMHA_STRIDES(v)
    CKT__FMHA_STRIDES(o)
    CKT__FMHA_STRIDES(do)
    CKT__FMHA_STRIDES(dq)
    CKT__FMHA_STRIDES(dk)
    CKT__FMHA_STRIDES(dv)
    CKT__FMHA_FIELD(lse_stride_b)
    CKT__FMHA_FIELD(lse_stride_h)
    CKT__FMHA_FIELD(group_mode)
    CKT__FMHA_FIELD(seqstart_q)
    CKT__FMHA_FIELD(seqstart_k)
    CKT__FMHA_FIELD(seqlen_q_ptr)
    CKT__FMHA_FIELD(seqlen_k_ptr)
    CKT__FMHA_FIELD(scale)
    CKT__FMHA_FIELD(softcap)
    CKT__FMHA_FIELD(mask)
    CKT__FMHA_FIELD(window_left)
    CKT__FMHA_FIELD(window_right)
    CKT__FMHA_FIELD(deterministic)
    CKT__FMHA_FIELD(workspace)
    CKT__FMHA_FIELD(workspace_bytes)
    CKT__FMHA_FIELD(sink)
    CKT__FMHA_FIELD(dsink)
    CKT__FMHA_FIELD(p_drop)
    CKT__FMHA_FIELD(drop_seed)
    CKT__FMHA_FIELD(drop_offset)
    CKT__FMHA_FIELD(drop_seed_offset)
    CKT__FMHA_FIELD(bias) /* bias and ALiBi */
    CKT__FMHA_STRIDES(bias)
    CKT__FMHA_FIELD(alibi_slopes)
    CKT__FMHA_FIELD(alibi_stride_b)
    CKT__FMHA_FIELD(dbias)
    CKT__FMHA_STRIDES(dbias)
    return (size_t)-1;
#undef CKT__FMHA_STRIDES
#undef CKT__FMHA_FIELD
}

/* >>append-KV */

#if CKT__FMHA_HAS_APPENDKV
#define CKT__FMHA_APPENDKV_N CKT__FMHA_APPENDKV_COUNT
#define CKT__FMHA_APPENDKV_AT(i) (&ckt__fmha_appendkv[i])
#else
#define CKT__FMHA_APPENDKV_N 0
#define CKT__FMHA_APPENDKV_AT(i) ((const ckt_fmha_appendkv_instance *)NULL)
#endif

const ckt_fmha_appendkv_instance *ckt_fmha_appendkv_instance_at(int i)
{
    return i >= 0 && i < CKT__FMHA_APPENDKV_N ? CKT__FMHA_APPENDKV_AT(i) : NULL;
}

/* Why append-KV instance `in` cannot run a (NULL: it can). */
static const char *ckt__fmha_appendkv_reject(const ckt_fmha_appendkv_instance *in, const ckt_fmha_appendkv_args *a,
                                             char *buf, size_t size)
{
    if (in->dtype != a->dtype)
        snprintf(buf, size, "dtype: it takes %s, the call has %s", ckt_dtype_name(in->dtype), ckt_dtype_name(a->dtype));
    else if (a->hdim_q > CKT_FMHA_APPENDKV_MAX_HDIM || a->hdim_v > CKT_FMHA_APPENDKV_MAX_HDIM)
        snprintf(buf, size, "head dims: it takes up to %d, the call has %d/%d", CKT_FMHA_APPENDKV_MAX_HDIM, a->hdim_q,
                 a->hdim_v);
    else if (a->hdim_q <= 0 || a->hdim_v <= 0 || a->hdim_q % CKT_FMHA_VEC_ELEMS || a->hdim_v % CKT_FMHA_VEC_ELEMS)
        snprintf(buf, size, "head dims %d/%d: not positive multiples of 8", a->hdim_q, a->hdim_v);
    else
        return NULL;
    return buf;
}

/* The append-KV instance of a's dtype; with dims = 1 checked against a's head dims too. */
static const ckt_fmha_appendkv_instance *ckt__fmha_appendkv_pick(const ckt_fmha_appendkv_args *a, int dims,
                                                                 ckt_status *st)
{
    *st = CKT_SUCCESS;
    if (!a) {
        *st = ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_fmha_appendkv: args is NULL");
        return NULL;
    }
    if (CKT__FMHA_APPENDKV_N == 0) {
        char sets[128];
        ckt__fmha_sets_with(1u << CKT_FMHA_FAMILY_APPENDKV, sets, sizeof sets);
        *st = ckt__fail(CKT_ERROR_NO_INSTANCE,
                        "ckt_fmha_appendkv: no append-KV instance in instance set '%s' (build with "
                        "--define=ckt_fmha_set=%s)",
                        ckt_fmha_instance_set(), sets);
        return NULL;
    }
    if (a->dtype != CKT_F16 && a->dtype != CKT_BF16) {
        *st = ckt__fail(CKT_ERROR_UNSUPPORTED, "dtype: %s (%d): ckt_fmha_appendkv takes fp16 or bf16",
                        ckt_dtype_name(a->dtype), (int)a->dtype);
        return NULL;
    }
    char reason[160];
    for (int i = 0; i < CKT__FMHA_APPENDKV_N; i++) {
        const ckt_fmha_appendkv_instance *in = ckt_fmha_appendkv_instance_at(i);
        if (in->dtype != a->dtype)
            continue;
        if (dims && ckt__fmha_appendkv_reject(in, a, reason, sizeof reason)) {
            *st = ckt__fail(CKT_ERROR_NO_INSTANCE, "ckt_fmha_appendkv: no instance for %s hdim_q=%d hdim_v=%d: %s",
                            ckt_dtype_name(a->dtype), a->hdim_q, a->hdim_v, reason);
            return NULL;
        }
        return in;
    }
    *st = ckt__fail(CKT_ERROR_NO_INSTANCE, "ckt_fmha_appendkv: no %s instance compiled", ckt_dtype_name(a->dtype));
    return NULL;
}

const ckt_fmha_appendkv_instance *ckt_fmha_appendkv_select(const ckt_fmha_appendkv_args *a)
{
    ckt_status st;
    return ckt__fmha_appendkv_pick(a, 1, &st);
}

size_t ckt_fmha_appendkv_select_report(const ckt_fmha_appendkv_args *a, char *buf, size_t size)
{
    ckt__fmha_out o = ckt__fmha_out_make(buf, size);
    ckt_status st;
    const ckt_fmha_appendkv_instance *best = ckt__fmha_appendkv_pick(a, 1, &st);
    char reason[160];
    for (int i = 0; a && i < CKT__FMHA_APPENDKV_N; i++) {
        const ckt_fmha_appendkv_instance *in = ckt_fmha_appendkv_instance_at(i);
        const char *r = ckt__fmha_appendkv_reject(in, a, reason, sizeof reason);
        if (in == best)
            ckt__fmha_printf(&o, "%s: chosen\n", in->name);
        else
            ckt__fmha_printf(&o, "%s: rejected: %s\n", in->name, r ? r : "not chosen");
    }
    if (!best)
        ckt__fmha_printf(&o, "no instance: %s\n", ckt_last_error());
    return o.len;
}

/* The dtype picks the instance; the instance validates the rest (head dims
 * included: its messages name the field). */
ckt_status ckt_fmha_appendkv(const ckt_fmha_appendkv_args *a, ckt_stream stream)
{
    ckt_status st;
    const ckt_fmha_appendkv_instance *in = ckt__fmha_appendkv_pick(a, 0, &st);
    return in ? in->launch(a, stream) : st;
}

size_t ckt_fmha_appendkv_args_offset(const char *field)
{
#define CKT__FMHA_FIELD(f)                                                                        \
    if (strcmp(field, #f) == 0)                                                                   \
        return offsetof(ckt_fmha_appendkv_args, f);
#define CKT__FMHA_STRIDES(t) CKT__FMHA_FIELD(t##_stride_b) CKT__FMHA_FIELD(t##_stride_h) CKT__FMHA_FIELD(t##_stride_s)
    if (!field)
        return (size_t)-1;
    if (strcmp(field, "sizeof") == 0)
        return sizeof(ckt_fmha_appendkv_args);
    CKT__FMHA_FIELD(q)
    CKT__FMHA_FIELD(k_new)
    CKT__FMHA_FIELD(v_new)
    CKT__FMHA_FIELD(k_cache)
    CKT__FMHA_FIELD(v_cache)
    CKT__FMHA_FIELD(dtype)
    CKT__FMHA_FIELD(batch)
    CKT__FMHA_FIELD(nhead_q)
    CKT__FMHA_FIELD(nhead_k)
    CKT__FMHA_FIELD(seqlen_q)
    CKT__FMHA_FIELD(seqlen_knew)
    CKT__FMHA_FIELD(seqlen_k)
    CKT__FMHA_FIELD(cache_seqlen)
    CKT__FMHA_FIELD(cache_batch)
    CKT__FMHA_FIELD(hdim_q)
    CKT__FMHA_FIELD(hdim_v)
    CKT__FMHA_STRIDES(q)
    CKT__FMHA_STRIDES(knew)
    CKT__FMHA_STRIDES(vnew)
    CKT__FMHA_STRIDES(k)
    CKT__FMHA_STRIDES(v)
    CKT__FMHA_FIELD(group_mode)
    CKT__FMHA_FIELD(seqstart_q)
    CKT__FMHA_FIELD(seqlen_k_ptr)
    CKT__FMHA_FIELD(cache_batch_idx)
    CKT__FMHA_FIELD(rotary_dim)
    CKT__FMHA_FIELD(rotary_interleaved)
    CKT__FMHA_FIELD(rotary_cos)
    CKT__FMHA_FIELD(rotary_sin)
    CKT__FMHA_FIELD(rotary_max_pos)
    CKT__FMHA_FIELD(page_size)
    CKT__FMHA_FIELD(num_pages)
    CKT__FMHA_FIELD(block_table)
    CKT__FMHA_FIELD(max_pages_per_seq)
    CKT__FMHA_FIELD(kv_indptr)
    CKT__FMHA_FIELD(kv_indices)
    CKT__FMHA_FIELD(kv_last_page_len)
    return (size_t)-1;
#undef CKT__FMHA_STRIDES
#undef CKT__FMHA_FIELD
}
