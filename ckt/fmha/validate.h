/* ckt/fmha/validate.h — argument checks of the FMHA forward, shared by every
 * instance launcher (NAME_launch), the dispatcher (ckt_fmha_fwd) and the CPU
 * reference.
 *
 *   ckt_status s = ckt_fmha_fwd_validate(a, CKT_BF16, 128, 128);  // the instance's dtype, HDIM, HDIM_V
 *   if (s != CKT_SUCCESS) return s;          // ckt_last_error(): "q_stride_s: 100 is not a multiple of 8 ..."
 *   if (ckt_fmha_fwd_is_empty(a)) return CKT_SUCCESS;   // nothing to launch
 *
 * Every failure names the argument first ("argname: what"). The checks:
 *   args               not NULL
 *   dtype              fp16 or bf16, and the instance's
 *   sizes              batch, nhead_q, nhead_k, seqlen_q, seqlen_k >= 0;
 *                      nhead_k >= 1 when nhead_q >= 1 and nhead_q a multiple of nhead_k
 *   hdim_q, hdim_v     > 0, multiples of 8 (the 16-byte vector), <= the instance's
 *   group_mode         0 or 1; batch mode takes no seqstart / seqlen arrays
 *   scale, softcap     finite and >= 0 (0 = default / none)
 *   mask               a ckt_fmha_mask; window_left / window_right > 0 only with
 *                      the CKT_MASK_WINDOW_* kinds (elsewhere they would be ignored);
 *                      for windows any value < 0 means unlimited
 * then, if the problem is empty (batch, nhead_q or seqlen_q is 0: success with
 * nothing to do, see ckt_fmha_fwd_is_empty), nothing else. Otherwise:
 *   pointers           q and o; k and v when seqlen_k > 0; seqstart_q and
 *                      seqstart_k in group mode; lse is optional
 *   alignment          q, k, v, o 16-byte aligned; lse and the int32 arrays 4-byte
 *   strides            >= 0, and for q, k, v, o multiples of 8 elements; a stride
 *                      of an extent-1 dimension (one head, one batch entry, one
 *                      row) is never used and not checked; stride_b not in group mode
 *   group arrays       (CPU backend only, where "device" arrays are host
 *                      memory: ckt_fmha_fwd_check_seqs) seqstart_* start >= 0 and
 *                      never decrease; logical lengths within the physical ones and
 *                      within seqlen_q / seqlen_k (the max over the batch)
 * Not checked: that tensors do not overlap, that device arrays are readable
 * (GPU backends), grid limits (the launcher's).
 */
#ifndef CKT_FMHA_VALIDATE_H
#define CKT_FMHA_VALIDATE_H

#include "ckt/arch/config.h"
#include "ckt/fmha/args.h"
#include "ckt/host/status.h"

#include <math.h>
#include <stdint.h>

/* The elements of a vector access: 16 bytes of fp16 / bf16. */
#define CKT_FMHA_VEC_ELEMS 8

static inline const char *ckt_fmha_mask_name(ckt_fmha_mask m)
{
    switch (m) {
    case CKT_MASK_NONE: return "CKT_MASK_NONE";
    case CKT_MASK_CAUSAL_TOP_LEFT: return "CKT_MASK_CAUSAL_TOP_LEFT";
    case CKT_MASK_CAUSAL_BOTTOM_RIGHT: return "CKT_MASK_CAUSAL_BOTTOM_RIGHT";
    case CKT_MASK_WINDOW_TOP_LEFT: return "CKT_MASK_WINDOW_TOP_LEFT";
    case CKT_MASK_WINDOW_BOTTOM_RIGHT: return "CKT_MASK_WINDOW_BOTTOM_RIGHT";
    default: return "?";
    }
}

/* 1 when the call has nothing to compute (and writes nothing): no batch
 * entries, no heads or no queries. seqlen_k = 0 is NOT empty: every row is
 * then fully masked and gets O = 0, LSE = -inf. */
static inline int ckt_fmha_fwd_is_empty(const ckt_fmha_fwd_args *a)
{
    return a->batch == 0 || a->nhead_q == 0 || a->seqlen_q == 0;
}

/* Group-mode arrays, read on the host: seqstart_q / seqstart_k (batch + 1
 * entries, start >= 0, never decreasing) and the optional logical lengths
 * seqlen_q_ptr / seqlen_k_ptr (batch entries, 0 <= len <= the physical length
 * seqstart[b + 1] - seqstart[b]); each logical length at most seqlen_q /
 * seqlen_k. Nothing to check in batch mode. The arrays must be readable here:
 * host copies, or the CPU backend's "device" memory. */
static inline ckt_status ckt_fmha_fwd_check_seqs(const ckt_fmha_fwd_args *a)
{
    if (!a->group_mode)
        return CKT_SUCCESS;
    for (int t = 0; t < 2; t++) {
        const char *const ss = t ? "seqstart_k" : "seqstart_q";
        const char *const ls = t ? "seqlen_k_ptr" : "seqlen_q_ptr";
        const char *const ms = t ? "seqlen_k" : "seqlen_q";
        const int32_t *start = t ? a->seqstart_k : a->seqstart_q;
        const int32_t *len = t ? a->seqlen_k_ptr : a->seqlen_q_ptr;
        const int max = t ? a->seqlen_k : a->seqlen_q;
        if (!start)
            return ckt__fail(CKT_ERROR_NULL_POINTER, "%s: NULL in group mode", ss);
        if (start[0] < 0)
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: [0] = %d is negative", ss, (int)start[0]);
        for (int b = 0; b < a->batch; b++) {
            const int32_t phys = start[b + 1] - start[b];
            if (start[b + 1] < start[b])
                return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: decreases at entry %d (%d then %d)", ss,
                                 b, (int)start[b], (int)start[b + 1]);
            int32_t n = phys;
            if (len) {
                n = len[b];
                if (n < 0 || n > phys)
                    return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                                     "%s: [%d] = %d is outside [0, %d] (the physical length %s[%d] - %s[%d])",
                                     ls, b, (int)n, (int)phys, ss, b + 1, ss, b);
            }
            if (n > max)
                return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                                 "%s: %d is less than entry %d's length %d (group mode: the max over the batch)",
                                 ms, max, b, (int)n);
        }
    }
    return CKT_SUCCESS;
}

/* >>validation helpers */

static inline ckt_status ckt__fmha_check_ptr(const void *p, const char *name, unsigned align)
{
    if (!p)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "%s: NULL", name);
    if ((uintptr_t)p % align != 0)
        return ckt__fail(CKT_ERROR_MISALIGNED, "%s: %#llx is not %u-byte aligned", name,
                         (unsigned long long)(uintptr_t)p, align);
    return CKT_SUCCESS;
}

/* A stride of a dimension of `extent` indices; vec: must be a multiple of the
 * vector width. An extent-1 dimension's stride is never used. */
static inline ckt_status ckt__fmha_check_stride(int64_t stride, const char *name, int64_t extent, int vec)
{
    if (extent <= 1)
        return CKT_SUCCESS;
    if (stride < 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %lld is negative", name, (long long)stride);
    if (vec && stride % CKT_FMHA_VEC_ELEMS != 0)
        return ckt__fail(CKT_ERROR_MISALIGNED, "%s: %lld is not a multiple of %d elements (16-byte vectors)",
                         name, (long long)stride, CKT_FMHA_VEC_ELEMS);
    return CKT_SUCCESS;
}

static inline ckt_status ckt__fmha_check_hdim(int d, const char *name, int inst, const char *inst_name)
{
    if (d <= 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %d (must be > 0)", name, d);
    if (d % CKT_FMHA_VEC_ELEMS != 0)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "%s: %d is not a multiple of %d (the vector width)", name, d,
                         CKT_FMHA_VEC_ELEMS);
    if (d > inst)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "%s: %d exceeds this instance's %s %d", name, d, inst_name, inst);
    return CKT_SUCCESS;
}

#define CKT__FMHA_TRY(call)                                                                        \
    do {                                                                                           \
        ckt_status ckt__s = (call);                                                                \
        if (ckt__s != CKT_SUCCESS)                                                                 \
            return ckt__s;                                                                         \
    } while (0)

/* >>validation */

/* Checks a (device pointers) for an instance of type dtype with head dims
 * hdim (q/k) and hdim_v (v/o). CKT_SUCCESS also for an empty problem:
 * then call ckt_fmha_fwd_is_empty and launch nothing. */
static inline ckt_status ckt_fmha_fwd_validate(const ckt_fmha_fwd_args *a, ckt_dtype dtype, int hdim, int hdim_v)
{
    if (!a)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "args: NULL");

    /* the instance */
    if (a->dtype != CKT_F16 && a->dtype != CKT_BF16)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "dtype: %s (%d): fmha takes fp16 or bf16",
                         ckt_dtype_name(a->dtype), (int)a->dtype);
    if (a->dtype != dtype)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "dtype: %s, this instance is %s", ckt_dtype_name(a->dtype),
                         ckt_dtype_name(dtype));

    /* sizes */
    {
        const char *const names[] = {"batch", "nhead_q", "nhead_k", "seqlen_q", "seqlen_k"};
        const int vals[] = {a->batch, a->nhead_q, a->nhead_k, a->seqlen_q, a->seqlen_k};
        for (int i = 0; i < 5; i++)
            if (vals[i] < 0)
                return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %d is negative", names[i], vals[i]);
    }
    CKT__FMHA_TRY(ckt__fmha_check_hdim(a->hdim_q, "hdim_q", hdim, "HDIM"));
    CKT__FMHA_TRY(ckt__fmha_check_hdim(a->hdim_v, "hdim_v", hdim_v, "HDIM_V"));
    if (a->nhead_q > 0 && a->nhead_k == 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "nhead_k: 0 (must be >= 1 when nhead_q is %d)", a->nhead_q);
    if (a->nhead_k > 0 && a->nhead_q % a->nhead_k != 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "nhead_q: %d is not a multiple of nhead_k %d (GQA / MQA)",
                         a->nhead_q, a->nhead_k);
    if (a->group_mode != 0 && a->group_mode != 1)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "group_mode: %d (0 = batch, 1 = group)", a->group_mode);
    if (!a->group_mode) {
        const char *set = a->seqstart_q ? "seqstart_q" : a->seqstart_k ? "seqstart_k"
                        : a->seqlen_q_ptr ? "seqlen_q_ptr" : a->seqlen_k_ptr ? "seqlen_k_ptr" : NULL;
        if (set)
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: set, but group_mode is 0 (batch mode ignores it)", set);
    }

    /* softmax and mask */
    if (!isfinite(a->scale) || a->scale < 0.0f)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "scale: %g (must be finite and >= 0; 0 = 1/sqrt(hdim_q))",
                         (double)a->scale);
    if (!isfinite(a->softcap) || a->softcap < 0.0f)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "softcap: %g (must be finite and >= 0; 0 = none)",
                         (double)a->softcap);
    if ((unsigned)a->mask > (unsigned)CKT_MASK_WINDOW_BOTTOM_RIGHT)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "mask: %d is not a ckt_fmha_mask", (int)a->mask);
    if (a->mask != CKT_MASK_WINDOW_TOP_LEFT && a->mask != CKT_MASK_WINDOW_BOTTOM_RIGHT &&
        (a->window_left > 0 || a->window_right > 0))
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "%s: %d, but mask %s ignores it (windows are CKT_MASK_WINDOW_TOP_LEFT / _BOTTOM_RIGHT)",
                         a->window_left > 0 ? "window_left" : "window_right",
                         a->window_left > 0 ? a->window_left : a->window_right, ckt_fmha_mask_name(a->mask));

    if (ckt_fmha_fwd_is_empty(a))
        return CKT_SUCCESS;

    /* pointers */
    CKT__FMHA_TRY(ckt__fmha_check_ptr(a->q, "q", 16));
    if (a->seqlen_k > 0) {
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->k, "k", 16));
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->v, "v", 16));
    }
    CKT__FMHA_TRY(ckt__fmha_check_ptr(a->o, "o", 16));
    if (a->lse)
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->lse, "lse", 4));
    if (a->group_mode) {
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->seqstart_q, "seqstart_q", 4));
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->seqstart_k, "seqstart_k", 4));
        if (a->seqlen_q_ptr)
            CKT__FMHA_TRY(ckt__fmha_check_ptr(a->seqlen_q_ptr, "seqlen_q_ptr", 4));
        if (a->seqlen_k_ptr)
            CKT__FMHA_TRY(ckt__fmha_check_ptr(a->seqlen_k_ptr, "seqlen_k_ptr", 4));
    }

    /* strides (elements). Group mode: rows of all entries share stride_s, no stride_b. */
    {
        const int64_t nb = a->group_mode ? 1 : a->batch, rq = a->group_mode ? 2 : a->seqlen_q,
                      rk = a->group_mode ? 2 : a->seqlen_k;
        CKT__FMHA_TRY(ckt__fmha_check_stride(a->q_stride_b, "q_stride_b", nb, 1));
        CKT__FMHA_TRY(ckt__fmha_check_stride(a->q_stride_h, "q_stride_h", a->nhead_q, 1));
        CKT__FMHA_TRY(ckt__fmha_check_stride(a->q_stride_s, "q_stride_s", rq, 1));
        if (a->seqlen_k > 0) {
            CKT__FMHA_TRY(ckt__fmha_check_stride(a->k_stride_b, "k_stride_b", nb, 1));
            CKT__FMHA_TRY(ckt__fmha_check_stride(a->k_stride_h, "k_stride_h", a->nhead_k, 1));
            CKT__FMHA_TRY(ckt__fmha_check_stride(a->k_stride_s, "k_stride_s", rk, 1));
            CKT__FMHA_TRY(ckt__fmha_check_stride(a->v_stride_b, "v_stride_b", nb, 1));
            CKT__FMHA_TRY(ckt__fmha_check_stride(a->v_stride_h, "v_stride_h", a->nhead_k, 1));
            CKT__FMHA_TRY(ckt__fmha_check_stride(a->v_stride_s, "v_stride_s", rk, 1));
        }
        CKT__FMHA_TRY(ckt__fmha_check_stride(a->o_stride_b, "o_stride_b", nb, 1));
        CKT__FMHA_TRY(ckt__fmha_check_stride(a->o_stride_h, "o_stride_h", a->nhead_q, 1));
        CKT__FMHA_TRY(ckt__fmha_check_stride(a->o_stride_s, "o_stride_s", rq, 1));
        if (a->lse) {
            CKT__FMHA_TRY(ckt__fmha_check_stride(a->lse_stride_b, "lse_stride_b", nb, 0));
            CKT__FMHA_TRY(ckt__fmha_check_stride(a->lse_stride_h, "lse_stride_h", a->nhead_q, 0));
        }
    }

#if defined(CKT_BACKEND_CPU)
    /* the emulator's device memory is host memory: the arrays can be read */
    CKT__FMHA_TRY(ckt_fmha_fwd_check_seqs(a));
#endif
    return CKT_SUCCESS;
}

#endif /* CKT_FMHA_VALIDATE_H */
