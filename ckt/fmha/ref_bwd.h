/* ckt/fmha/ref_bwd.h — CPU reference of the FMHA backward (ckt_fmha_bwd_args,
 * ckt/fmha/args.h), fp64 accumulation, and the helpers around it: tensor
 * sizes, the mask-aware FLOP count, CK's tolerances, and the comparison of a
 * kernel's dQ / dK / dV with the reference.
 *
 *   ckt_fmha_bwd_args h = args;              // the kernel's arguments, with HOST copies:
 *   h.q = hq; h.k = hk; h.v = hv;            //   inputs (args.dtype, or CKT_F32)
 *   h.o = ho; h.dout = hdo; h.lse = hlse;    //   the forward's O and LSE, the gradient dO
 *   h.seqstart_q = hsq; h.seqstart_k = hsk;  //   group-mode arrays (and seqlen_*_ptr)
 *   float *dq_ref = malloc(ckt_fmha_bwd_elems(&h, CKT_FMHA_BWD_TENSOR_DQ) * sizeof(float));
 *   ... dk_ref (CKT_FMHA_BWD_TENSOR_DK), dv_ref (CKT_FMHA_BWD_TENSOR_DV)
 *   ckt_ref_fmha_bwd(&h, dq_ref, dk_ref, dv_ref, NULL);
 *   double rtol, atol;
 *   ckt_fmha_bwd_tolerance(h.dtype, h.hdim_q, h.hdim_v, &rtol, &atol);
 *   ckt_ref_fmha_bwd_compare(&rq, &rk, &rv, &h, dq_host, dk_host, dv_host,
 *                            dq_ref, dk_ref, dv_ref, atol, rtol);
 *
 * A "host view" is an args struct whose q, k, v, o, dout, lse, seqstart_*,
 * seqlen_*_ptr point to host memory; its dq, dk, dv, workspace are not read
 * (the reference writes dq_ref / dk_ref / dv_ref, the comparison takes the
 * kernel's results separately). q, k, v, o, dout are read as h->dtype
 * (CKT_F16 / CKT_BF16 as the kernel sees them, or CKT_F32); lse is fp32.
 *
 * Math, per batch entry b (logical lengths sq, sk), query head h, kv head
 * hk = h / (nhead_q / nhead_k), query i, visible key j (ckt/fmha/mask.h):
 *   x_ij  = scale * Q[b][h][i] . K[b][hk][j] + B_ij  scale 0 -> 1/sqrt(hdim_q); B the bias or
 *                                                    ALiBi (ckt/fmha/bias.h), 0 without
 *   S_ij  = cap * tanh(x_ij / cap) when softcap > 0, else x_ij
 *   P_ij  = exp(S_ij - LSE[b][h][i])                 the GIVEN LSE (the kernel's input), not
 *                                                    a recomputed one; LSE = -inf: P = 0
 *   D_i   = sum_d dO[b][h][i][d] * O[b][h][i][d]     the given O
 *   dP_ij = dO[b][h][i] . V[b][hk][j]
 *   dS_ij = P_ij (dP_ij - D_i) * dS/dx (= 1 - tanh^2(x_ij / cap) with a soft-cap, else 1)
 *   dV[b][hk][j] = sum_h sum_i P_ij dO[b][h][i]
 *   dK[b][hk][j] = scale * sum_h sum_i dS_ij Q[b][h][i]
 *   dQ[b][h][i]  = scale * sum_j dS_ij K[b][hk][j]
 * computed in double, written as fp32. With dropout (p_drop > 0; Z_ij the
 * forward's keep mask, ckt/fmha/dropout.h, zs_ij = Z_ij / (1 - p)):
 *   dS_ij = P_ij (zs_ij dP_ij - D_i) * dS/dx,   dV[j] = sum P_ij zs_ij dO[i]
 *
 * Output layout: dq_ref / dk_ref / dv_ref are fp32 at the same element
 * offsets as the kernel's dq / dk / dv (dq_stride_*, dk_stride_*,
 * dv_stride_*; group mode rows from seqstart_q / seqstart_k); d_ref (optional)
 * gets D in LSE's layout. Only logical rows are written: padding (strides
 * wider than the data, group-mode rows past a logical length) is left as it
 * was. A query row without a visible key gets dQ = 0; an entry with sq = 0
 * gets dK = dV = 0 over its logical keys.
 *
 * Attention sinks: dQ, dK, dV take them through the given LSE alone;
 * their own gradient is ckt_ref_fmha_bwd_dsink (below).
 *
 * Bias: dbias_ij = dS_ij (ckt_ref_fmha_bwd_ex's dbias_ref, fp32 at the
 * view's dbias_stride_* offsets, every logical (b, h, i, j) written, 0
 * where the mask hides it); with a zero dbias_stride_b or _h (a broadcast
 * dbias) the sum of dS over the entries / heads that share an element (a
 * row of entry b only adds where i < its sq and j < its sk).
 *
 * Nothing to do (success, nothing written): batch = 0, nhead_q = 0, or
 * seqlen_q = seqlen_k = 0. Limitations: O(sq * sk * (hdim_q + hdim_v)) per head, for tests, not speed.
 */
#ifndef CKT_FMHA_REF_BWD_H
#define CKT_FMHA_REF_BWD_H

#include "ckt/fmha/args.h"
#include "ckt/fmha/dropout.h"
#include "ckt/fmha/bias.h"
#include "ckt/fmha/mask.h"
#include "ckt/fmha/seqlen.h"
#include "ckt/fmha/validate.h" /* ckt_fmha_fwd_check_seqs: the group arrays */
#include "ckt/host/compare.h"
#include "ckt/host/dtype.h"
#include "ckt/host/status.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The backward's FLOPs per forward FLOP: it recomputes S = Q K^T and adds
 * dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q, i.e. 2 * (3 hdim_q +
 * 2 hdim_v) per visible (i, j) against the forward's 2 * (hdim_q + hdim_v):
 * exactly 2.5 when hdim_q = hdim_v. FlashAttention's benchmarks count the
 * backward as 2.5 x the forward for any head dims; so do we. */
#define CKT_FMHA_BWD_FLOPS_PER_FWD 2.5

/* Comparison tolerances (rtol = atol), from CK's backward example
 * (ROCm/composable_kernel example/ck_tile/01_fmha/fmha_bwd.cpp, get_elimit,
 * 2024): 1e-2 for fp16 and bf16, the same for dQ, dK and dV; bf16 with
 * hdim_q > 128 and hdim_v > 128: 3.2e-2 (its comment: "3.2 for RTZ / 1.5 for
 * RTN", the rounding of P and dS to bf16 before the GEMMs). fp32 results:
 * ckt's own bound (CK has no fp32 backward). */
#define CKT_FMHA_BWD_TOL_16BIT 1e-2
#define CKT_FMHA_BWD_TOL_BF16_LARGE_HDIM 3.2e-2
#define CKT_FMHA_BWD_LARGE_HDIM 128
#define CKT_FMHA_BWD_TOL_F32 1e-4

/* The tensors of a backward host view, for ckt_fmha_bwd_elems. */
typedef enum ckt_fmha_bwd_tensor {
    CKT_FMHA_BWD_TENSOR_Q,
    CKT_FMHA_BWD_TENSOR_K,
    CKT_FMHA_BWD_TENSOR_V,
    CKT_FMHA_BWD_TENSOR_O,
    CKT_FMHA_BWD_TENSOR_DO,
    CKT_FMHA_BWD_TENSOR_DQ,
    CKT_FMHA_BWD_TENSOR_DK,
    CKT_FMHA_BWD_TENSOR_DV,
    CKT_FMHA_BWD_TENSOR_LSE, /* also D (d_ref): one value per query row */
    CKT_FMHA_BWD_TENSOR_COUNT
} ckt_fmha_bwd_tensor;

/* >>layouts: where row `row` of head `head` of entry b lies in each tensor */

typedef struct ckt__ref_fmha_bwd_layout {
    int64_t sb, sh, ss; /* element strides of entry, head, row */
    int width;          /* elements per row: hdim_q, hdim_v, or 1 (LSE, D) */
    int keys;           /* rows are keys (k, v, dk, dv): nhead_k heads, seqstart_k */
    const char *name;   /* the field prefix: "q", "do", ... */
} ckt__ref_fmha_bwd_layout;

static inline ckt__ref_fmha_bwd_layout ckt__ref_fmha_bwd_layout_make(int64_t sb, int64_t sh, int64_t ss, int width,
                                                                     int keys, const char *name)
{
    ckt__ref_fmha_bwd_layout l;
    l.sb = sb;
    l.sh = sh;
    l.ss = ss;
    l.width = width;
    l.keys = keys;
    l.name = name;
    return l;
}

static inline ckt__ref_fmha_bwd_layout ckt__ref_fmha_bwd_layout_of(const ckt_fmha_bwd_args *h,
                                                                   ckt_fmha_bwd_tensor t)
{
    switch (t) {
    case CKT_FMHA_BWD_TENSOR_Q:
        return ckt__ref_fmha_bwd_layout_make(h->q_stride_b, h->q_stride_h, h->q_stride_s, h->hdim_q, 0, "q");
    case CKT_FMHA_BWD_TENSOR_K:
        return ckt__ref_fmha_bwd_layout_make(h->k_stride_b, h->k_stride_h, h->k_stride_s, h->hdim_q, 1, "k");
    case CKT_FMHA_BWD_TENSOR_V:
        return ckt__ref_fmha_bwd_layout_make(h->v_stride_b, h->v_stride_h, h->v_stride_s, h->hdim_v, 1, "v");
    case CKT_FMHA_BWD_TENSOR_O:
        return ckt__ref_fmha_bwd_layout_make(h->o_stride_b, h->o_stride_h, h->o_stride_s, h->hdim_v, 0, "o");
    case CKT_FMHA_BWD_TENSOR_DO:
        return ckt__ref_fmha_bwd_layout_make(h->do_stride_b, h->do_stride_h, h->do_stride_s, h->hdim_v, 0, "do");
    case CKT_FMHA_BWD_TENSOR_DQ:
        return ckt__ref_fmha_bwd_layout_make(h->dq_stride_b, h->dq_stride_h, h->dq_stride_s, h->hdim_q, 0, "dq");
    case CKT_FMHA_BWD_TENSOR_DK:
        return ckt__ref_fmha_bwd_layout_make(h->dk_stride_b, h->dk_stride_h, h->dk_stride_s, h->hdim_q, 1, "dk");
    case CKT_FMHA_BWD_TENSOR_DV:
        return ckt__ref_fmha_bwd_layout_make(h->dv_stride_b, h->dv_stride_h, h->dv_stride_s, h->hdim_v, 1, "dv");
    default: /* LSE and D: lse[b * lse_stride_b + h * lse_stride_h + row] */
        return ckt__ref_fmha_bwd_layout_make(h->lse_stride_b, h->lse_stride_h, 1, 1, 0, "lse");
    }
}

/* Element offset of T[b][head][row][0], row counted from the entry's start. */
static inline int64_t ckt__ref_fmha_bwd_offset(const ckt_fmha_bwd_args *h, ckt_fmha_bwd_tensor t, int b, int head,
                                               const ckt_fmha_seq *e, int64_t row)
{
    const ckt__ref_fmha_bwd_layout l = ckt__ref_fmha_bwd_layout_of(h, t);
    return ckt_fmha_row_offset(h->group_mode, b, head, (l.keys ? e->k_start : e->q_start) + row, l.sb, l.sh, l.ss);
}

/* Entry b of a host view: first rows and logical lengths. */
static inline ckt_fmha_seq ckt__ref_fmha_bwd_entry(const ckt_fmha_bwd_args *h, int b)
{
    return ckt_fmha_seq_resolve(h->group_mode, h->seqstart_q, h->seqstart_k, h->seqlen_q_ptr, h->seqlen_k_ptr,
                                h->seqlen_q, h->seqlen_k, b);
}

/* Elements a tensor spans in a host view (largest offset + 1, strides >= 0),
 * for allocating it or its fp32 reference; 0 if it is empty (or h is NULL,
 * or group mode lacks its seqstart array). Group mode reads
 * seqstart_q / seqstart_k[batch]. */
static inline size_t ckt_fmha_bwd_elems(const ckt_fmha_bwd_args *h, ckt_fmha_bwd_tensor t)
{
    if (!h || (unsigned)t >= (unsigned)CKT_FMHA_BWD_TENSOR_COUNT)
        return 0;
    const ckt__ref_fmha_bwd_layout l = ckt__ref_fmha_bwd_layout_of(h, t);
    const int64_t nb = h->group_mode ? 1 : h->batch, nh = l.keys ? h->nhead_k : h->nhead_q;
    int64_t rows = l.keys ? h->seqlen_k : h->seqlen_q;
    if (h->group_mode) {
        const int32_t *start = l.keys ? h->seqstart_k : h->seqstart_q;
        rows = h->batch > 0 && start ? start[h->batch] : 0;
    }
    if (nb <= 0 || nh <= 0 || rows <= 0 || l.width <= 0)
        return 0;
    return (size_t)((h->group_mode ? 0 : (nb - 1) * l.sb) + (nh - 1) * l.sh + (rows - 1) * l.ss + l.width);
}

/* >>flops */

/* Visible (query, key) pairs summed over the batch entries, for one head
 * (the same count as the forward's). 0 when h is NULL or group mode lacks
 * its seqstart arrays. */
static inline int64_t ckt_fmha_bwd_pairs(const ckt_fmha_bwd_args *h)
{
    if (!h || (h->group_mode && (!h->seqstart_q || !h->seqstart_k)))
        return 0;
    int64_t pairs = 0;
    for (int b = 0; b < h->batch; b++) {
        const ckt_fmha_seq e = ckt__ref_fmha_bwd_entry(h, b);
        const ckt_fmha_mask_params m = ckt_fmha_mask_make(h->mask, h->window_left, h->window_right, e.sq, e.sk);
        for (int i = 0; i < e.sq; i++) {
            /* keys [lo, hi] of row i, clamped to the entry's [0, sk) */
            int lo, hi;
            ckt_fmha_mask_row_cols(&m, i, 0, &lo, &hi);
            lo = lo < 0 ? 0 : lo;
            hi = hi > e.sk - 1 ? e.sk - 1 : hi;
            pairs += hi >= lo ? hi - lo + 1 : 0;
        }
    }
    return pairs;
}

/* The mask-aware FLOP count of the backward:
 *   CKT_FMHA_BWD_FLOPS_PER_FWD * 2 * (hdim_q + hdim_v) * nhead_q * pairs. */
static inline double ckt_fmha_bwd_flops(const ckt_fmha_bwd_args *h)
{
    if (!h)
        return 0.0;
    const double fwd = 2.0 * ((double)h->hdim_q + h->hdim_v) * h->nhead_q * (double)ckt_fmha_bwd_pairs(h);
    return CKT_FMHA_BWD_FLOPS_PER_FWD * fwd;
}

/* >>tolerance */

/* rtol and atol for comparing a kernel's dQ, dK, dV of type dtype with the
 * reference (see CKT_FMHA_BWD_TOL_* above for the source). */
static inline void ckt_fmha_bwd_tolerance(ckt_dtype dtype, int hdim_q, int hdim_v, double *rtol, double *atol)
{
    double tol = CKT_FMHA_BWD_TOL_16BIT;
    if (dtype == CKT_F32)
        tol = CKT_FMHA_BWD_TOL_F32;
    else if (dtype == CKT_BF16 && hdim_q > CKT_FMHA_BWD_LARGE_HDIM && hdim_v > CKT_FMHA_BWD_LARGE_HDIM)
        tol = CKT_FMHA_BWD_TOL_BF16_LARGE_HDIM;
    if (rtol)
        *rtol = tol;
    if (atol)
        *atol = tol;
}

/* >>validation: the reference's own checks (any dtype incl. fp32, any head
 * dim, no alignment), group arrays read on the host. Messages start with
 * the function, then name the argument: "ckt_ref_fmha_bwd: lse: NULL". */

/* Nothing to compute: no entries, no query heads, or no rows at all. */
static inline int ckt__ref_fmha_bwd_is_empty(const ckt_fmha_bwd_args *h)
{
    return h->batch == 0 || h->nhead_q == 0 || (h->seqlen_q == 0 && h->seqlen_k == 0);
}

/* Strides >= 0 wherever they are used (a dimension of extent > 1); the
 * key-side tensors only when there are keys, the query side when queries. */
static inline ckt_status ckt__ref_fmha_bwd_check_strides(const ckt_fmha_bwd_args *h, const char *fn)
{
    for (int t = 0; t < (int)CKT_FMHA_BWD_TENSOR_COUNT; t++) {
        const ckt__ref_fmha_bwd_layout l = ckt__ref_fmha_bwd_layout_of(h, (ckt_fmha_bwd_tensor)t);
        const int len = l.keys ? h->seqlen_k : h->seqlen_q;
        if (len == 0)
            continue;
        const int64_t stride[3] = {l.sb, l.sh, l.ss};
        const int64_t extent[3] = {h->group_mode ? 1 : h->batch, l.keys ? h->nhead_k : h->nhead_q,
                                   h->group_mode ? 2 : len};
        const char dim[3] = {'b', 'h', 's'};
        for (int i = 0; i < 3; i++)
            if (extent[i] > 1 && stride[i] < 0)
                return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %s_stride_%c: %lld is negative", fn, l.name,
                                 dim[i], (long long)stride[i]);
    }
    return CKT_SUCCESS;
}

/* The group-mode arrays, through the forward's check (same fields, same
 * meaning), its message prefixed with fn. */
static inline ckt_status ckt__ref_fmha_bwd_check_seqs(const ckt_fmha_bwd_args *h, const char *fn)
{
    ckt_fmha_fwd_args f;
    memset(&f, 0, sizeof f);
    f.batch = h->batch;
    f.seqlen_q = h->seqlen_q;
    f.seqlen_k = h->seqlen_k;
    f.group_mode = h->group_mode;
    f.seqstart_q = h->seqstart_q;
    f.seqstart_k = h->seqstart_k;
    f.seqlen_q_ptr = h->seqlen_q_ptr;
    f.seqlen_k_ptr = h->seqlen_k_ptr;
    const ckt_status st = ckt_fmha_fwd_check_seqs(&f);
    if (st == CKT_SUCCESS)
        return st;
    char why[sizeof ckt__last_error];
    snprintf(why, sizeof why, "%s", ckt_last_error());
    return ckt__fail(st, "%s: %s", fn, why);
}

/* Everything but the tensor pointers: sizes, dtype, mode, softmax, mask,
 * strides, group arrays. */
static inline ckt_status ckt__ref_fmha_bwd_check_shape(const ckt_fmha_bwd_args *h, const char *fn)
{
    if (!h)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "%s: args: NULL", fn);
    if ((unsigned)h->dtype > (unsigned)CKT_BF16)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: dtype: %d is not fp32, fp16 or bf16", fn, (int)h->dtype);
    {
        const char *const names[] = {"batch", "nhead_q", "nhead_k", "seqlen_q", "seqlen_k"};
        const int vals[] = {h->batch, h->nhead_q, h->nhead_k, h->seqlen_q, h->seqlen_k};
        for (int i = 0; i < 5; i++)
            if (vals[i] < 0)
                return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %s: %d is negative", fn, names[i], vals[i]);
    }
    if (h->hdim_q <= 0 || h->hdim_v <= 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %s: %d (must be > 0)", fn,
                         h->hdim_q <= 0 ? "hdim_q" : "hdim_v", h->hdim_q <= 0 ? h->hdim_q : h->hdim_v);
    if (h->nhead_q > 0 && h->nhead_k == 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: nhead_k: 0 (must be >= 1 when nhead_q is %d)", fn,
                         h->nhead_q);
    if (h->nhead_k > 0 && h->nhead_q % h->nhead_k != 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: nhead_q: %d is not a multiple of nhead_k %d (GQA / MQA)",
                         fn, h->nhead_q, h->nhead_k);
    if (h->group_mode != 0 && h->group_mode != 1)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: group_mode: %d (0 = batch, 1 = group)", fn, h->group_mode);
    if (!isfinite(h->scale) || h->scale < 0.0f)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: scale: %g (must be finite and >= 0; 0 = 1/sqrt(hdim_q))",
                         fn, (double)h->scale);
    if (!isfinite(h->softcap) || h->softcap < 0.0f)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: softcap: %g (must be finite and >= 0; 0 = none)", fn,
                         (double)h->softcap);
    if ((unsigned)h->mask > (unsigned)CKT_MASK_WINDOW_BOTTOM_RIGHT)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: mask: %d is not a ckt_fmha_mask", fn, (int)h->mask);
    if (!(h->p_drop >= 0.0f && h->p_drop < 1.0f))
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: p_drop: %g (must be in [0, 1); 0 = no dropout)", fn,
                         (double)h->p_drop);
    if (ckt__ref_fmha_bwd_is_empty(h))
        return CKT_SUCCESS;
    CKT__FMHA_TRY(ckt__ref_fmha_bwd_check_strides(h, fn));
    return ckt__ref_fmha_bwd_check_seqs(h, fn);
}

/* The first NULL of n named pointers that are needed, or CKT_SUCCESS. */
static inline ckt_status ckt__ref_fmha_bwd_check_ptrs(const char *fn, int n, const void *const *ptrs,
                                                      const char *const *names)
{
    for (int i = 0; i < n; i++)
        if (!ptrs[i])
            return ckt__fail(CKT_ERROR_NULL_POINTER, "%s: %s: NULL", fn, names[i]);
    return CKT_SUCCESS;
}

/* The reference's pointers: the query side (q, o, dout, lse, dq_ref) when
 * there are queries, the key side (k, v, dk_ref, dv_ref) when keys. */
static inline ckt_status ckt__ref_fmha_bwd_check_io(const ckt_fmha_bwd_args *h, const float *dq_ref,
                                                    const float *dk_ref, const float *dv_ref)
{
    const char *const fn = "ckt_ref_fmha_bwd";
    const void *const qside[] = {h->q, h->o, h->dout, h->lse, dq_ref};
    const char *const qnames[] = {"q", "o", "dout", "lse", "dq_ref"};
    const void *const kside[] = {h->k, h->v, dk_ref, dv_ref};
    const char *const knames[] = {"k", "v", "dk_ref", "dv_ref"};
    if (h->seqlen_q > 0)
        CKT__FMHA_TRY(ckt__ref_fmha_bwd_check_ptrs(fn, 5, qside, qnames));
    if (h->seqlen_k > 0)
        CKT__FMHA_TRY(ckt__ref_fmha_bwd_check_ptrs(fn, 4, kside, knames));
    return CKT_SUCCESS;
}

/* >>reference */

static inline double ckt__ref_fmha_bwd_dot(const double *a, const double *b, int n)
{
    double s = 0.0;
    for (int d = 0; d < n; d++)
        s += a[d] * b[d];
    return s;
}

/* y[:] += alpha * x[:] */
static inline void ckt__ref_fmha_bwd_axpy(double *y, double alpha, const double *x, int n)
{
    for (int d = 0; d < n; d++)
        y[d] += alpha * x[d];
}

/* dst[r][:] = T[b][head][row0 + r][:] for r < rows, dense, as double. */
static inline void ckt__ref_fmha_bwd_load(double *dst, const ckt_fmha_bwd_args *h, ckt_fmha_bwd_tensor t,
                                          const void *src, int b, int head, const ckt_fmha_seq *e, int row0,
                                          int rows)
{
    const int width = ckt__ref_fmha_bwd_layout_of(h, t).width;
    for (int r = 0; r < rows; r++) {
        const int64_t off = ckt__ref_fmha_bwd_offset(h, t, b, head, e, row0 + r);
        for (int d = 0; d < width; d++)
            dst[(size_t)r * width + d] = ckt_load_f32(src, h->dtype, (size_t)(off + d));
    }
}

/* T[b][head][row0 + r][:] = mul * src[r][:] (fp32) for r < rows. */
static inline void ckt__ref_fmha_bwd_store(float *dst, const ckt_fmha_bwd_args *h, ckt_fmha_bwd_tensor t,
                                           int b, int head, const ckt_fmha_seq *e, int row0, int rows,
                                           const double *src, double mul)
{
    const int width = ckt__ref_fmha_bwd_layout_of(h, t).width;
    for (int r = 0; r < rows; r++) {
        const int64_t off = ckt__ref_fmha_bwd_offset(h, t, b, head, e, row0 + r);
        for (int d = 0; d < width; d++)
            dst[off + d] = (float)(mul * src[(size_t)r * width + d]);
    }
}

/* The working set of one (entry, kv head): its keys and values, the dK / dV
 * sums over the group's query heads, and the current query row. */
typedef struct ckt__ref_fmha_bwd_scratch {
    double *k, *v;   /* K[b][hk][j][:] (sk x hdim_q), V[b][hk][j][:] (sk x hdim_v) */
    double *dk, *dv; /* sum_h sum_i dS_ij Q[b][h][i] (unscaled), sum_h sum_i P_ij dO[b][h][i] */
    double *q, *dout, *dq; /* Q[b][h][i][:], dO[b][h][i][:], sum_j dS_ij K[j] (unscaled) */
} ckt__ref_fmha_bwd_scratch;

/* The softmax and mask of the problem, constant over a kv head. */
typedef struct ckt__ref_fmha_bwd_softmax {
    double scale, cap; /* cap 0: no soft-cap */
    int hdim_q, hdim_v;
    int drop;            /* dropout on */
    ckt_fmha_dropout dr; /* its mask (ckt/fmha/dropout.h) */
} ckt__ref_fmha_bwd_softmax;

/* Query row i (w->q, w->dout loaded) against every key of its kv head:
 * accumulates dK[j] and dV[j] and sets w->dq; see the math at the top. */
/* The bias of the row (query i of entry b, head `head`) and, when dbias is
 * not NULL, its gradient row (fp32, dbias[j] = dS_ij, 0 where masked). */
typedef struct ckt__ref_fmha_bwd_bias_row {
    const ckt_fmha_bias_params *p;
    ckt_dtype dtype;
    int b, head;
    float *dbias;
} ckt__ref_fmha_bwd_bias_row;

static inline void ckt__ref_fmha_bwd_row(ckt__ref_fmha_bwd_scratch *w, const ckt__ref_fmha_bwd_softmax *sm,
                                         const ckt_fmha_mask_params *m, uint32_t bh, int i, double lse, double D,
                                         const ckt__ref_fmha_bwd_bias_row *br)
{
    const int dq = sm->hdim_q, dv = sm->hdim_v;
    for (int d = 0; d < dq; d++)
        w->dq[d] = 0.0;
    if (lse == -INFINITY)
        return; /* the forward saw no key: P = 0 */
    for (int j = 0; j < m->sk; j++) {
        if (!ckt_fmha_mask_visible(m, i, j))
            continue;
        const double *kj = w->k + (size_t)j * dq, *vj = w->v + (size_t)j * dv;
        double x = sm->scale * ckt__ref_fmha_bwd_dot(w->q, kj, dq); /* x_ij */
        x += ckt_fmha_bias_value_f64(br->p, br->dtype, br->b, br->head, i, j); /* + B_ij (0 without) */
        double s = x, ds_dx = 1.0;                                          /* S_ij, dS_ij / dx_ij */
        if (sm->cap > 0.0) {
            const double t = tanh(x / sm->cap);
            s = sm->cap * t;
            ds_dx = 1.0 - t * t;
        }
        const double p = exp(s - lse);                                /* P_ij */
        const double dp = ckt__ref_fmha_bwd_dot(w->dout, vj, dv);     /* dP_ij = dO[i] . V[j] */
        const double zs = sm->drop ? (double)ckt_fmha_dropout_factor(&sm->dr, bh, i, j) : 1.0; /* Z_ij / (1 - p) */
        const double ds = p * (zs * dp - D) * ds_dx;                  /* dS_ij, w.r.t. x_ij */
        if (br->dbias)
            br->dbias[j] += (float)ds; /* dbias_ij = dS_ij (summed where dbias broadcasts) */
        ckt__ref_fmha_bwd_axpy(w->dv + (size_t)j * dv, p * zs, w->dout, dv); /* dV[j] += P_ij zs_ij dO[i] */
        ckt__ref_fmha_bwd_axpy(w->dk + (size_t)j * dq, ds, w->q, dq);   /* dK[j] += dS_ij Q[i] */
        ckt__ref_fmha_bwd_axpy(w->dq, ds, kj, dq);                      /* dQ[i] += dS_ij K[j] */
    }
}

/* The outputs of ckt_ref_fmha_bwd. */
typedef struct ckt__ref_fmha_bwd_out {
    float *dq, *dk, *dv, *d; /* d: optional */
    float *dbias;            /* optional, dbias_stride_* offsets */
} ckt__ref_fmha_bwd_out;

/* Entry b, kv head hk: the g = nhead_q / nhead_k query heads that share it. */
static inline void ckt__ref_fmha_bwd_kv_head(const ckt_fmha_bwd_args *h, const ckt__ref_fmha_bwd_out *out,
                                             ckt__ref_fmha_bwd_scratch *w, const ckt__ref_fmha_bwd_softmax *sm,
                                             int b, const ckt_fmha_seq *e, int hk)
{
    const int g = h->nhead_q / h->nhead_k;
    const ckt_fmha_mask_params m = ckt_fmha_mask_make(h->mask, h->window_left, h->window_right, e->sq, e->sk);
    const ckt_fmha_bias_params bp = ckt_fmha_bias_make(h->bias, h->bias_stride_b, h->bias_stride_h, h->bias_stride_s,
                                                       h->alibi_slopes, h->alibi_stride_b, &m);
    ckt__ref_fmha_bwd_bias_row br;
    br.p = &bp;
    br.dtype = h->dtype;
    br.b = b;
    ckt__ref_fmha_bwd_load(w->k, h, CKT_FMHA_BWD_TENSOR_K, h->k, b, hk, e, 0, e->sk);
    ckt__ref_fmha_bwd_load(w->v, h, CKT_FMHA_BWD_TENSOR_V, h->v, b, hk, e, 0, e->sk);
    memset(w->dk, 0, (size_t)e->sk * sm->hdim_q * sizeof(double));
    memset(w->dv, 0, (size_t)e->sk * sm->hdim_v * sizeof(double));
    for (int head = hk * g; head < (hk + 1) * g; head++)
        for (int i = 0; i < e->sq; i++) {
            /* the row's Q, dO; D_i = dO[i] . O[i]; the forward's LSE */
            ckt__ref_fmha_bwd_load(w->q, h, CKT_FMHA_BWD_TENSOR_Q, h->q, b, head, e, i, 1);
            ckt__ref_fmha_bwd_load(w->dout, h, CKT_FMHA_BWD_TENSOR_DO, h->dout, b, head, e, i, 1);
            const int64_t oo = ckt__ref_fmha_bwd_offset(h, CKT_FMHA_BWD_TENSOR_O, b, head, e, i);
            double D = 0.0;
            for (int d = 0; d < sm->hdim_v; d++)
                D += w->dout[d] * (double)ckt_load_f32(h->o, h->dtype, (size_t)(oo + d));
            const int64_t lo = ckt__ref_fmha_bwd_offset(h, CKT_FMHA_BWD_TENSOR_LSE, b, head, e, i);
            br.head = head;
            br.dbias = out->dbias ? out->dbias + (int64_t)b * h->dbias_stride_b + (int64_t)head * h->dbias_stride_h +
                                        (int64_t)i * h->dbias_stride_s
                                  : NULL;
            ckt__ref_fmha_bwd_row(w, sm, &m, (uint32_t)b * (uint32_t)h->nhead_q + (uint32_t)head, i,
                                  (double)h->lse[lo], D, &br);
            /* dQ[b][head][i][:] = scale * sum_j dS_ij K[j][:] */
            ckt__ref_fmha_bwd_store(out->dq, h, CKT_FMHA_BWD_TENSOR_DQ, b, head, e, i, 1, w->dq, sm->scale);
            if (out->d)
                out->d[lo] = (float)D;
        }
    /* dK[b][hk][j][:] = scale * sum dS_ij Q[i][:], dV[b][hk][j][:] = sum P_ij dO[i][:] */
    ckt__ref_fmha_bwd_store(out->dk, h, CKT_FMHA_BWD_TENSOR_DK, b, hk, e, 0, e->sk, w->dk, sm->scale);
    ckt__ref_fmha_bwd_store(out->dv, h, CKT_FMHA_BWD_TENSOR_DV, b, hk, e, 0, e->sk, w->dv, 1.0);
}

/* dQ, dK, dV (and D when d_ref_or_null is given) of host view h; see the top
 * of this file. dq_ref is needed when seqlen_q > 0, dk_ref and dv_ref when
 * seqlen_k > 0 (otherwise they may be NULL). */
static inline ckt_status ckt_ref_fmha_bwd_ex(const ckt_fmha_bwd_args *h, float *dq_ref, float *dk_ref,
                                             float *dv_ref, float *d_ref_or_null, float *dbias_ref_or_null);

static inline ckt_status ckt_ref_fmha_bwd(const ckt_fmha_bwd_args *h, float *dq_ref, float *dk_ref, float *dv_ref,
                                          float *d_ref_or_null)
{
    return ckt_ref_fmha_bwd_ex(h, dq_ref, dk_ref, dv_ref, d_ref_or_null, NULL);
}

/* ckt_ref_fmha_bwd, and with dbias_ref_or_null (needs the view's bias) the
 * bias's gradient dS, fp32 at b * dbias_stride_b + h * dbias_stride_h +
 * i * dbias_stride_s + j of the view's strides, every logical element. */
static inline ckt_status ckt_ref_fmha_bwd_ex(const ckt_fmha_bwd_args *h, float *dq_ref, float *dk_ref,
                                             float *dv_ref, float *d_ref_or_null, float *dbias_ref_or_null)
{
    CKT__FMHA_TRY(ckt__ref_fmha_bwd_check_shape(h, "ckt_ref_fmha_bwd"));
    CKT__FMHA_TRY(ckt__fmha_check_bias(h->bias, h->bias_stride_b, h->bias_stride_h, h->bias_stride_s, h->alibi_slopes,
                                       h->alibi_stride_b, h->softcap));
    if (dbias_ref_or_null && !h->bias)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "ckt_ref_fmha_bwd: dbias: wanted, but bias is NULL");
    if (ckt__ref_fmha_bwd_is_empty(h))
        return CKT_SUCCESS;
    CKT__FMHA_TRY(ckt__ref_fmha_bwd_check_io(h, dq_ref, dk_ref, dv_ref));

    ckt__ref_fmha_bwd_softmax sm;
    sm.hdim_q = h->hdim_q;
    sm.hdim_v = h->hdim_v;
    sm.scale = h->scale != 0.0f ? (double)h->scale : 1.0 / sqrt((double)h->hdim_q);
    sm.cap = h->softcap;
    sm.drop = h->p_drop > 0.0f;
    sm.dr = ckt_fmha_dropout_of(h->p_drop, h->drop_seed, h->drop_offset, h->drop_seed_offset);
    int max_sk = 0;
    for (int b = 0; b < h->batch; b++) {
        const ckt_fmha_seq e = ckt__ref_fmha_bwd_entry(h, b);
        max_sk = e.sk > max_sk ? e.sk : max_sk;
    }
    /* scratch: K, V, dK, dV of one kv head (2 * sk * (hdim_q + hdim_v)), one
     * query row's Q, dO, dQ (2 * hdim_q + hdim_v) */
    const size_t nkv = (size_t)max_sk * ((size_t)sm.hdim_q + (size_t)sm.hdim_v);
    double *buf = (double *)malloc((2 * nkv + 2 * (size_t)sm.hdim_q + (size_t)sm.hdim_v) * sizeof(double));
    if (!buf)
        return ckt__fail(CKT_ERROR_OUT_OF_MEMORY, "ckt_ref_fmha_bwd: scratch for %d keys", max_sk);
    ckt__ref_fmha_bwd_scratch w;
    w.k = buf;
    w.v = w.k + (size_t)max_sk * sm.hdim_q;
    w.dk = w.v + (size_t)max_sk * sm.hdim_v;
    w.dv = w.dk + (size_t)max_sk * sm.hdim_q;
    w.q = w.dv + (size_t)max_sk * sm.hdim_v;
    w.dout = w.q + sm.hdim_q;
    w.dq = w.dout + sm.hdim_v;
    ckt__ref_fmha_bwd_out out;
    out.dq = dq_ref;
    out.dk = dk_ref;
    out.dv = dv_ref;
    out.d = d_ref_or_null;
    out.dbias = dbias_ref_or_null;
    if (out.dbias) /* zeroed first, then each (b, head, i) row adds its dS: sums where dbias broadcasts */
        for (int b = 0; b < h->batch; b++) {
            const ckt_fmha_seq e = ckt__ref_fmha_bwd_entry(h, b);
            for (int head = 0; head < h->nhead_q; head++)
                for (int i = 0; i < e.sq; i++)
                    memset(out.dbias + (int64_t)b * h->dbias_stride_b + (int64_t)head * h->dbias_stride_h +
                               (int64_t)i * h->dbias_stride_s,
                           0, (size_t)e.sk * sizeof(float));
        }
    for (int b = 0; b < h->batch; b++) {
        const ckt_fmha_seq e = ckt__ref_fmha_bwd_entry(h, b);
        for (int hk = 0; hk < h->nhead_k; hk++)
            ckt__ref_fmha_bwd_kv_head(h, &out, &w, &sm, b, &e, hk);
    }
    free(buf);
    return CKT_SUCCESS;
}

/* >>sink: the gradient of the attention sinks (ckt_fmha_bwd_args.sink,
 * a host array in the view), from the given LSE and O:
 *   dsink_ref[h] = -sum_b sum_i exp(sink[h] - LSE[b][h][i]) D[b][h][i]
 * in double (a row with LSE = -inf adds 0). dQ, dK, dV need nothing of the
 * sinks: the LSE holds them (ckt_ref_fmha_bwd as it stands). */
static inline ckt_status ckt_ref_fmha_bwd_dsink(const ckt_fmha_bwd_args *h, float *dsink_ref)
{
    CKT__FMHA_TRY(ckt__ref_fmha_bwd_check_shape(h, "ckt_ref_fmha_bwd_dsink"));
    if (!h->sink || !dsink_ref)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_ref_fmha_bwd_dsink: %s is NULL", h->sink ? "dsink_ref" : "sink");
    for (int head = 0; head < h->nhead_q; head++) {
        double acc = 0.0;
        for (int b = 0; b < h->batch; b++) {
            const ckt_fmha_seq e = ckt__ref_fmha_bwd_entry(h, b);
            for (int i = 0; i < e.sq; i++) {
                const double lse = h->lse[ckt__ref_fmha_bwd_offset(h, CKT_FMHA_BWD_TENSOR_LSE, b, head, &e, i)];
                if (lse == -INFINITY)
                    continue;
                const int64_t oo = ckt__ref_fmha_bwd_offset(h, CKT_FMHA_BWD_TENSOR_O, b, head, &e, i);
                const int64_t po = ckt__ref_fmha_bwd_offset(h, CKT_FMHA_BWD_TENSOR_DO, b, head, &e, i);
                double D = 0.0;
                for (int d = 0; d < h->hdim_v; d++)
                    D += (double)ckt_load_f32(h->dout, h->dtype, (size_t)(po + d)) *
                         (double)ckt_load_f32(h->o, h->dtype, (size_t)(oo + d));
                acc += exp((double)h->sink[head] - lse) * D;
            }
        }
        dsink_ref[head] = (float)-acc;
    }
    return CKT_SUCCESS;
}

/* >>comparison */


/* One gradient over its logical rows: got (type h->dtype) against ref
 * rounded to h->dtype (as the kernel rounds its fp32 result). */
static inline void ckt__ref_fmha_bwd_compare_tensor(ckt_compare_result *r, const ckt_fmha_bwd_args *h,
                                                    ckt_fmha_bwd_tensor t, const void *got, const float *ref)
{
    const ckt__ref_fmha_bwd_layout l = ckt__ref_fmha_bwd_layout_of(h, t);
    const int heads = l.keys ? h->nhead_k : h->nhead_q;
    for (int b = 0; b < h->batch; b++) {
        const ckt_fmha_seq e = ckt__ref_fmha_bwd_entry(h, b);
        const int rows = l.keys ? e.sk : e.sq;
        for (int head = 0; head < heads; head++)
            for (int r0 = 0; r0 < rows; r0++) {
                const int64_t off = ckt__ref_fmha_bwd_offset(h, t, b, head, &e, r0);
                for (int d = 0; d < l.width; d++) {
                    const size_t at = (size_t)(off + d);
                    float want = ref[at];
                    if (h->dtype != CKT_F32) {
                        uint16_t x;
                        ckt_store_f32(&x, h->dtype, 0, want);
                        want = ckt_load_f32(&x, h->dtype, 0);
                    }
                    ckt_compare_add(r, at, ckt_load_f32(got, h->dtype, at), want);
                }
            }
    }
}

/* Compares a kernel's dq, dk, dv (host copies, type h->dtype, their layouts)
 * with the reference's, over the logical rows only (padding is not read):
 * |got - want| <= atol + rtol * |want| after rounding the reference to
 * h->dtype (ckt_fmha_bwd_tolerance gives CK's values). Indices reported are
 * element offsets in each tensor. CKT_ERROR_MISMATCH if any element differs. */
static inline ckt_status ckt_ref_fmha_bwd_compare(ckt_compare_result *r_dq, ckt_compare_result *r_dk,
                                                  ckt_compare_result *r_dv, const ckt_fmha_bwd_args *h,
                                                  const void *dq, const void *dk, const void *dv,
                                                  const float *dq_ref, const float *dk_ref, const float *dv_ref,
                                                  double atol, double rtol)
{
    const char *const fn = "ckt_ref_fmha_bwd_compare";
    ckt_compare_result *const rs[3] = {r_dq, r_dk, r_dv};
    const char *const rnames[3] = {"r_dq", "r_dk", "r_dv"};
    for (int t = 0; t < 3; t++) {
        if (!rs[t])
            return ckt__fail(CKT_ERROR_NULL_POINTER, "%s: %s: NULL", fn, rnames[t]);
        memset(rs[t], 0, sizeof *rs[t]);
        rs[t]->atol = atol;
        rs[t]->rtol = rtol;
    }
    CKT__FMHA_TRY(ckt__ref_fmha_bwd_check_shape(h, fn));
    if (ckt__ref_fmha_bwd_is_empty(h))
        return CKT_SUCCESS;
    const void *const qside[] = {dq, dq_ref};
    const char *const qnames[] = {"dq", "dq_ref"};
    const void *const kside[] = {dk, dv, dk_ref, dv_ref};
    const char *const knames[] = {"dk", "dv", "dk_ref", "dv_ref"};
    if (h->seqlen_q > 0)
        CKT__FMHA_TRY(ckt__ref_fmha_bwd_check_ptrs(fn, 2, qside, qnames));
    if (h->seqlen_k > 0)
        CKT__FMHA_TRY(ckt__ref_fmha_bwd_check_ptrs(fn, 4, kside, knames));
    if (h->seqlen_q > 0)
        ckt__ref_fmha_bwd_compare_tensor(r_dq, h, CKT_FMHA_BWD_TENSOR_DQ, dq, dq_ref);
    if (h->seqlen_k > 0) {
        ckt__ref_fmha_bwd_compare_tensor(r_dk, h, CKT_FMHA_BWD_TENSOR_DK, dk, dk_ref);
        ckt__ref_fmha_bwd_compare_tensor(r_dv, h, CKT_FMHA_BWD_TENSOR_DV, dv, dv_ref);
    }
    if (r_dq->mismatches || r_dk->mismatches || r_dv->mismatches)
        return ckt__fail(CKT_ERROR_MISMATCH, "fmha bwd: %zu of %zu dQ, %zu of %zu dK, %zu of %zu dV elements differ",
                         r_dq->mismatches, r_dq->n, r_dk->mismatches, r_dk->n, r_dv->mismatches, r_dv->n);
    return CKT_SUCCESS;
}

#endif /* CKT_FMHA_REF_BWD_H */
