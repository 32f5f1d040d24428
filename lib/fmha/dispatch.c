/* lib/fmha/dispatch.c — ckt_fmha_fwd: picks the cheapest compiled instance
 * whose head dims cover the arguments' (ckt/fmha/dispatch.h). */
#include "lib/fmha/instances.h"

#include <string.h>

#define CKT__FMHA_FWD_LIST(file) ckt__fmha_fwd_##file,
static const ckt_fmha_fwd_instance *const ckt__fmha_fwd_tables[] = {CKT__FMHA_FWD_FILES(CKT__FMHA_FWD_LIST)};
#undef CKT__FMHA_FWD_LIST

enum {
    CKT__FMHA_FWD_COUNT =
        (int)(sizeof ckt__fmha_fwd_tables / sizeof ckt__fmha_fwd_tables[0]) * CKT__FMHA_FWD_PER_FILE
};

/* The largest head dim any instance takes (for messages). */
#define CKT__FMHA_FWD_MAX_HDIM 256

const ckt_fmha_fwd_instance *ckt_fmha_fwd_instance_at(int i)
{
    if (i < 0 || i >= CKT__FMHA_FWD_COUNT)
        return NULL;
    return &ckt__fmha_fwd_tables[i / CKT__FMHA_FWD_PER_FILE][i % CKT__FMHA_FWD_PER_FILE];
}

/* The compiled head-dim pairs of dtype dt, "32/32 64/64 ...", for messages. */
static void ckt__fmha_fwd_list_dims(char *buf, size_t size, ckt_dtype dt)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < CKT__FMHA_FWD_COUNT && n < size; i++) {
        const ckt_fmha_fwd_instance *in = ckt_fmha_fwd_instance_at(i);
        if (in->dtype == dt && !in->packs_gqa && !in->kv_cache) {
            int w = snprintf(buf + n, size - n, "%s%d/%d", n ? " " : "", in->hdim, in->hdim_v);
            n += w > 0 ? (size_t)w : 0;
        }
    }
}

/* The instance for a, or NULL with *st (and the detail message) set. */
static const ckt_fmha_fwd_instance *ckt__fmha_fwd_pick(const ckt_fmha_fwd_args *a, ckt_status *st)
{
    *st = CKT_SUCCESS;
    if (!a) {
        *st = ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_fmha_fwd: args is NULL");
        return NULL;
    }
    if (a->dtype != CKT_F16 && a->dtype != CKT_BF16) {
        *st = ckt__fail(CKT_ERROR_UNSUPPORTED, "dtype: %s (%d): ckt_fmha_fwd takes fp16 or bf16",
                        ckt_dtype_name(a->dtype), (int)a->dtype);
        return NULL;
    }
    if (a->hdim_q <= 0 || a->hdim_v <= 0) {
        *st = ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %d (must be > 0)", a->hdim_q <= 0 ? "hdim_q" : "hdim_v",
                        a->hdim_q <= 0 ? a->hdim_q : a->hdim_v);
        return NULL;
    }
    /* cost ~ the padded head dims the instance computes with; decode
     * instances only for short query lengths, preferred there at equal cost */
    const int decode = a->seqlen_q <= CKT_FMHA_DECODE_MAX_Q;
    const ckt_fmha_fwd_instance *best = NULL;
    for (int i = 0; i < CKT__FMHA_FWD_COUNT; i++) {
        const ckt_fmha_fwd_instance *in = ckt_fmha_fwd_instance_at(i);
        if (in->dtype != a->dtype || in->hdim < a->hdim_q || in->hdim_v < a->hdim_v || !in->fits(a) ||
            (in->packs_gqa && !decode))
            continue;
        /* at equal head dims: decode before the rest, then without the KV cache before with it */
        const int rank = in->packs_gqa ? 0 : in->kv_cache ? 2 : 1;
        const int best_rank = best ? (best->packs_gqa ? 0 : best->kv_cache ? 2 : 1) : 0;
        if (!best || in->hdim + in->hdim_v < best->hdim + best->hdim_v ||
            (in->hdim + in->hdim_v == best->hdim + best->hdim_v &&
             (in->hdim < best->hdim || (in->hdim == best->hdim && rank < best_rank))))
            best = in;
    }
    if (!best) {
        char dims[256];
        ckt__fmha_fwd_list_dims(dims, sizeof dims, a->dtype);
        const char *why = a->hdim_q % CKT_FMHA_VEC_ELEMS ? "hdim_q is not a multiple of 8"
                        : a->hdim_v % CKT_FMHA_VEC_ELEMS ? "hdim_v is not a multiple of 8"
                        : a->hdim_q > CKT__FMHA_FWD_MAX_HDIM || a->hdim_v > CKT__FMHA_FWD_MAX_HDIM
                              ? "head dims go up to 256"
                              : "no compiled head-dim pair covers it";
        *st = ckt__fail(CKT_ERROR_NO_INSTANCE,
                        "ckt_fmha_fwd: no instance for %s hdim_q=%d hdim_v=%d: %s (compiled hdim_q/hdim_v: %s; "
                        "smaller multiples of 8 run padded)",
                        ckt_dtype_name(a->dtype), a->hdim_q, a->hdim_v, why, dims);
    }
    return best;
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
static const ckt_fmha_bwd_instance *const ckt__fmha_bwd_tables[] = {CKT__FMHA_BWD_FILES(CKT__FMHA_BWD_LIST)};
#undef CKT__FMHA_BWD_LIST

enum {
    CKT__FMHA_BWD_COUNT =
        (int)(sizeof ckt__fmha_bwd_tables / sizeof ckt__fmha_bwd_tables[0]) * CKT__FMHA_FWD_PER_FILE
};

const ckt_fmha_bwd_instance *ckt_fmha_bwd_instance_at(int i)
{
    if (i < 0 || i >= CKT__FMHA_BWD_COUNT)
        return NULL;
    return &ckt__fmha_bwd_tables[i / CKT__FMHA_FWD_PER_FILE][i % CKT__FMHA_FWD_PER_FILE];
}

/* The cheapest backward instance covering traits t (head dims, dtype), or
 * NULL with the reason. The instance's fits() sees an args struct with t's
 * type and head dims. */
static const ckt_fmha_bwd_instance *ckt__fmha_bwd_pick(const ckt_fmha_bwd_traits *t, ckt_status *st)
{
    *st = CKT_SUCCESS;
    if (!t) {
        *st = ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_fmha_bwd: traits is NULL");
        return NULL;
    }
    if (t->dtype != CKT_F16 && t->dtype != CKT_BF16) {
        *st = ckt__fail(CKT_ERROR_UNSUPPORTED, "dtype: %s (%d): ckt_fmha_bwd takes fp16 or bf16",
                        ckt_dtype_name(t->dtype), (int)t->dtype);
        return NULL;
    }
    if (t->hdim_q <= 0 || t->hdim_v <= 0) {
        *st = ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %d (must be > 0)", t->hdim_q <= 0 ? "hdim_q" : "hdim_v",
                        t->hdim_q <= 0 ? t->hdim_q : t->hdim_v);
        return NULL;
    }
    ckt_fmha_bwd_args probe = CKT_ZERO_INIT;
    probe.dtype = t->dtype;
    probe.hdim_q = t->hdim_q;
    probe.hdim_v = t->hdim_v;
    const ckt_fmha_bwd_instance *best = NULL;
    int covered = 0; /* some instance's head dims cover t, but it does not fit (target limits) */
    for (int i = 0; i < CKT__FMHA_BWD_COUNT; i++) {
        const ckt_fmha_bwd_instance *in = ckt_fmha_bwd_instance_at(i);
        if (in->dtype != t->dtype || in->hdim < t->hdim_q || in->hdim_v < t->hdim_v)
            continue;
        covered = 1;
        if (!in->fits(&probe))
            continue;
        if (!best || in->hdim + in->hdim_v < best->hdim + best->hdim_v ||
            (in->hdim + in->hdim_v == best->hdim + best->hdim_v && in->hdim < best->hdim))
            best = in;
    }
    if (!best) {
        const char *why = t->hdim_q % CKT_FMHA_VEC_ELEMS ? "hdim_q is not a multiple of 8"
                        : t->hdim_v % CKT_FMHA_VEC_ELEMS ? "hdim_v is not a multiple of 8"
                        : t->hdim_q > CKT__FMHA_FWD_MAX_HDIM || t->hdim_v > CKT__FMHA_FWD_MAX_HDIM
                              ? "head dims go up to 256"
                        : covered ? "this target's backward instances stop below it (CDNA: head dims up to 192, "
                                    "the LDS limit)"
                                  : "no compiled head-dim pair covers it";
        *st = ckt__fail(CKT_ERROR_NO_INSTANCE, "ckt_fmha_bwd: no instance for %s hdim_q=%d hdim_v=%d: %s",
                        ckt_dtype_name(t->dtype), t->hdim_q, t->hdim_v, why);
    }
    return best;
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
    return (size_t)-1;
#undef CKT__FMHA_STRIDES
#undef CKT__FMHA_FIELD
}

/* >>append-KV */

const ckt_fmha_appendkv_instance *ckt_fmha_appendkv_instance_at(int i)
{
    return i >= 0 && i < CKT__FMHA_APPENDKV_COUNT ? &ckt__fmha_appendkv[i] : NULL;
}

ckt_status ckt_fmha_appendkv(const ckt_fmha_appendkv_args *a, ckt_stream stream)
{
    if (!a)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_fmha_appendkv: args is NULL");
    for (int i = 0; i < CKT__FMHA_APPENDKV_COUNT; i++)
        if (ckt__fmha_appendkv[i].dtype == a->dtype)
            return ckt__fmha_appendkv[i].launch(a, stream);
    return ckt__fail(CKT_ERROR_UNSUPPORTED, "dtype: %s (%d): ckt_fmha_appendkv takes fp16 or bf16",
                     ckt_dtype_name(a->dtype), (int)a->dtype);
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
    return (size_t)-1;
#undef CKT__FMHA_STRIDES
#undef CKT__FMHA_FIELD
}
