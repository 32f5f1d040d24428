/* ckt/fmha/ref.h — CPU reference of the FMHA forward (ckt/fmha/args.h),
 * fp64 accumulation, and the helpers around it: tensor sizes, the
 * mask-aware FLOP count, comparison of a kernel's O / LSE with the reference.
 *
 *   ckt_fmha_fwd_args h = args;            // the kernel's arguments, with HOST copies:
 *   h.q = hq; h.k = hk; h.v = hv;          //   inputs (args.dtype, or CKT_F32)
 *   h.seqstart_q = hsq; h.seqstart_k = hsk; //   group-mode arrays (and seqlen_*_ptr)
 *   float *o_ref = malloc(ckt_fmha_fwd_elems(&h, CKT_FMHA_TENSOR_O) * 4);
 *   float *lse_ref = malloc(ckt_fmha_fwd_elems(&h, CKT_FMHA_TENSOR_LSE) * 4);
 *   ckt_ref_fmha_fwd(&h, o_ref, lse_ref);
 *   ckt_ref_fmha_compare(&ro, &rl, &h, o_host, lse_host, o_ref, lse_ref, 1e-2, 1e-2);
 *
 * A "host view" is an args struct whose q, k, v, seqstart_*, seqlen_*_ptr
 * point to host memory; its o and lse are not read (the reference writes
 * o_ref / lse_ref, the comparison takes the kernel's results separately).
 *
 * Output layout: o_ref is fp32 in O's layout, element O[b][h][i][d] at the
 * same offset as in the kernel's o (o_stride_*, group mode rows from
 * seqstart_q); lse_ref in LSE's layout (lse_stride_*). Only logical rows
 * are written: padding (strides wider than the data, group-mode rows past
 * a logical length) is left as it was. lse_ref may be NULL.
 *
 * Math, per batch entry b (logical lengths sq, sk), head h, query i:
 *   s_j = scale * Q[b][h][i] . K[b][h/g][j]        (double; scale 0 -> 1/sqrt(hdim_q))
 *   s_j = cap * tanh(s_j / cap)                    when softcap > 0
 *   visible j: 0 <= j < sk and j - i - off in [-left, right] (ckt/fmha/mask.h)
 *   O = sum_j softmax(s)_j V[b][h/g][j], LSE = log sum_j exp(s_j)   (natural log)
 *   s_j += B[b][h][i][j]   bias (read as the view's dtype) or ALiBi (ckt/fmha/bias.h; never with a soft-cap)
 * A row with no visible key (also sk = 0) gets O = 0 and LSE = -inf.
 * With sink (a host array of nhead_q logits in the view): the softmax's
 * denominator and LSE add exp(sink[h]) (no value), so such a row gets O = 0
 * and LSE = sink[h].
 * With p_drop > 0 (ckt/fmha/dropout.h, the kernels' own functions): O =
 * sum_j softmax(s)_j Z_ij / (1 - p) V_j, LSE unchanged; when the view's
 * randval (host memory) is set, the byte of every visible (i, j) is stored
 * there in the kernel's layout (randval_stride_*; i, j within the entry).
 * fp8 (dtype CKT_FP8_E4M3, ckt_fmha_fwd_args >>fp8): inputs read as e4m3
 * bytes, scale times descale_q descale_k, and P quantized as the kernel
 * does: O = sum_j e4m3(p_j scale_p) V_j descale_v / scale_p / sum_j p_j
 * (p_j = exp(s_j - max), the final max: the kernel's running max may
 * quantize a row's early tiles against a smaller one, docs/fmha.md#fp8);
 * ckt_ref_fmha_fwd_unquantized leaves P unquantized (fp8 inputs, exact P).
 * O is then compared in o_dtype.
 */
#ifndef CKT_FMHA_REF_H
#define CKT_FMHA_REF_H

#include "ckt/fmha/args.h"
#include "ckt/fmha/dropout.h"
#include "ckt/fmha/bias.h"
#include "ckt/fmha/mask.h"
#include "ckt/fmha/kv.h"
#include "ckt/fmha/seqlen.h"
#include "ckt/fmha/validate.h"
#include "ckt/host/compare.h"
#include "ckt/host/dtype.h"
#include "ckt/host/status.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

typedef enum ckt_fmha_tensor {
    CKT_FMHA_TENSOR_Q,
    CKT_FMHA_TENSOR_K,
    CKT_FMHA_TENSOR_V,
    CKT_FMHA_TENSOR_O,
    CKT_FMHA_TENSOR_LSE
} ckt_fmha_tensor;

/* One batch entry of a host view: where its rows start and its logical
 * lengths (batch mode: 0, seqlen_q, seqlen_k): ckt/fmha/seqlen.h's. */
typedef ckt_fmha_seq ckt_fmha_entry;

static inline ckt_fmha_entry ckt_fmha_fwd_entry(const ckt_fmha_fwd_args *h, int b)
{
    ckt_fmha_entry e = ckt_fmha_seq_resolve(h->group_mode, h->seqstart_q, h->seqstart_k, h->seqlen_q_ptr,
                                            h->seqlen_k_ptr, h->seqlen_q, h->seqlen_k, b);
    const ckt_fmha_paging pg = CKT_FMHA_PAGING(*h);
    e.sk = ckt_fmha_kv_resolve(&pg, e.sk, b).sk; /* a paged cache's key count */
    return e;
}

/* The keys query i of an entry (sq, sk) sees: [*lo, *hi) (empty when lo >= hi),
 * from the mask's window (ckt/fmha/mask.h), written out per row. */
static inline void ckt_fmha_fwd_row_keys(const ckt_fmha_fwd_args *a, int64_t i, int64_t sq, int64_t sk,
                                         int64_t *lo, int64_t *hi)
{
    const ckt_fmha_mask_params m = ckt_fmha_mask_make(a->mask, a->window_left, a->window_right, (int)sq, (int)sk);
    int64_t l = m.left < 0 ? 0 : i + m.off - m.left, r = m.right < 0 ? sk : i + m.off + m.right + 1;
    *lo = l < 0 ? 0 : l > sk ? sk : l;
    *hi = r < *lo ? *lo : r > sk ? sk : r;
}

/* Elements a tensor spans in a host view (largest offset + 1, strides >= 0),
 * for allocating it or its fp32 reference; 0 if it is empty. Group mode
 * reads seqstart_q / seqstart_k[batch]. */
static inline size_t ckt_fmha_fwd_elems(const ckt_fmha_fwd_args *h, ckt_fmha_tensor t)
{
    const int isk = t == CKT_FMHA_TENSOR_K || t == CKT_FMHA_TENSOR_V;
    int64_t nb = h->group_mode ? 1 : h->batch;
    const int64_t nh = isk ? h->nhead_k : h->nhead_q;
    int64_t rows = isk ? h->seqlen_k : h->seqlen_q;
    if (h->group_mode)
        rows = h->batch > 0 ? (isk ? h->seqstart_k : h->seqstart_q)[h->batch] : 0;
    if (isk && h->page_size > 0) /* a pool of num_pages pages: the "batch" dimension */
        return (size_t)((int64_t)(h->num_pages - 1) * (t == CKT_FMHA_TENSOR_K ? h->k_stride_b : h->v_stride_b) +
                        (int64_t)(h->nhead_k - 1) * (t == CKT_FMHA_TENSOR_K ? h->k_stride_h : h->v_stride_h) +
                        (int64_t)(h->page_size - 1) * (t == CKT_FMHA_TENSOR_K ? h->k_stride_s : h->v_stride_s) +
                        (t == CKT_FMHA_TENSOR_K ? h->hdim_q : h->hdim_v));
    if (isk && h->cache_batch > 0 && !h->group_mode)
        nb = h->cache_batch; /* the cache's entries */
    int64_t sb = 0, sh = 0, ss = 0, d = 0;
    switch (t) {
    case CKT_FMHA_TENSOR_Q: sb = h->q_stride_b; sh = h->q_stride_h; ss = h->q_stride_s; d = h->hdim_q; break;
    case CKT_FMHA_TENSOR_K: sb = h->k_stride_b; sh = h->k_stride_h; ss = h->k_stride_s; d = h->hdim_q; break;
    case CKT_FMHA_TENSOR_V: sb = h->v_stride_b; sh = h->v_stride_h; ss = h->v_stride_s; d = h->hdim_v; break;
    case CKT_FMHA_TENSOR_O: sb = h->o_stride_b; sh = h->o_stride_h; ss = h->o_stride_s; d = h->hdim_v; break;
    default: sb = h->lse_stride_b; sh = h->lse_stride_h; ss = 1; d = 1; break;
    }
    if (nb <= 0 || nh <= 0 || rows <= 0 || d <= 0)
        return 0;
    return (size_t)((h->group_mode ? 0 : (nb - 1) * sb) + (nh - 1) * sh + (rows - 1) * ss + d);
}

/* Visible (query, key) pairs summed over the batch entries, for one head.
 * The mask-aware FLOP count of the forward is
 *   2 * (hdim_q + hdim_v) * nhead_q * pairs     (S = Q K^T and O = P V). */
static inline int64_t ckt_fmha_fwd_pairs(const ckt_fmha_fwd_args *h)
{
    int64_t pairs = 0;
    for (int b = 0; b < h->batch; b++) {
        const ckt_fmha_entry e = ckt_fmha_fwd_entry(h, b);
        for (int64_t i = 0; i < e.sq; i++) {
            int64_t lo, hi;
            ckt_fmha_fwd_row_keys(h, i, e.sq, e.sk, &lo, &hi);
            pairs += hi - lo;
        }
    }
    return pairs;
}

static inline double ckt_fmha_fwd_flops(const ckt_fmha_fwd_args *h)
{
    return 2.0 * ((double)h->hdim_q + h->hdim_v) * h->nhead_q * (double)ckt_fmha_fwd_pairs(h);
}

/* >>offsets: element [b][h][i] (row i of the entry) of each tensor in a host view */

static inline int64_t ckt__fmha_row(const ckt_fmha_fwd_args *h, ckt_fmha_tensor t, int b, int head, int64_t i,
                                    const ckt_fmha_entry *e)
{
    const int g = h->group_mode;
    if (t == CKT_FMHA_TENSOR_K || t == CKT_FMHA_TENSOR_V) { /* through the cache (ckt/fmha/kv.h) */
        const int isk = t == CKT_FMHA_TENSOR_K;
        const ckt_fmha_paging pg = CKT_FMHA_PAGING(*h);
        const ckt_fmha_kv kv = ckt_fmha_kv_resolve(&pg, e->sk, b);
        const int64_t sb = isk ? h->k_stride_b : h->v_stride_b, sh = isk ? h->k_stride_h : h->v_stride_h;
        const int64_t ss = isk ? h->k_stride_s : h->v_stride_s;
        if (kv.ids)
            return head * sh + ckt_fmha_kv_row(&kv, h->page_size, h->num_pages, sb, ss, i);
        return ckt_fmha_row_offset(g, kv.cb, head, e->k_start + i, sb, sh, ss);
    }
    switch (t) {
    case CKT_FMHA_TENSOR_Q: return ckt_fmha_row_offset(g, b, head, e->q_start + i, h->q_stride_b, h->q_stride_h, h->q_stride_s);
    case CKT_FMHA_TENSOR_O: return ckt_fmha_row_offset(g, b, head, e->q_start + i, h->o_stride_b, h->o_stride_h, h->o_stride_s);
    default: return ckt_fmha_row_offset(g, b, head, e->q_start + i, h->lse_stride_b, h->lse_stride_h, 1);
    }
}

/* The checks the reference needs (any dtype incl. fp32, any head dim,
 * strides not checked for alignment), group arrays read on the host. */
static inline ckt_status ckt__ref_fmha_check(const ckt_fmha_fwd_args *h, const float *o_ref)
{
    if (!h)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_ref_fmha_fwd: args is NULL");
    if (h->batch < 0 || h->nhead_q < 0 || h->nhead_k < 0 || h->seqlen_q < 0 || h->seqlen_k < 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "ckt_ref_fmha_fwd: negative size");
    if (h->hdim_q <= 0 || h->hdim_v <= 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "ckt_ref_fmha_fwd: hdim_q %d / hdim_v %d (must be > 0)",
                         h->hdim_q, h->hdim_v);
    if (h->nhead_q > 0 && (h->nhead_k <= 0 || h->nhead_q % h->nhead_k != 0))
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "ckt_ref_fmha_fwd: nhead_q %d is not a multiple of nhead_k %d",
                         h->nhead_q, h->nhead_k);
    if ((unsigned)h->mask > (unsigned)CKT_MASK_WINDOW_BOTTOM_RIGHT)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "ckt_ref_fmha_fwd: mask %d", (int)h->mask);
    if (!(h->p_drop >= 0.0f && h->p_drop < 1.0f))
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "ckt_ref_fmha_fwd: p_drop: %g (must be in [0, 1))",
                         (double)h->p_drop);
    CKT__FMHA_TRY(ckt__fmha_check_bias(h->bias, h->bias_stride_b, h->bias_stride_h, h->bias_stride_s, h->alibi_slopes,
                                       h->alibi_stride_b, h->softcap));
    if (ckt_fmha_fwd_is_empty(h))
        return CKT_SUCCESS;
    if (!o_ref || !h->q || (h->seqlen_k > 0 && (!h->k || !h->v)))
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_ref_fmha_fwd: %s is NULL",
                         !o_ref ? "o_ref" : !h->q ? "q" : !h->k ? "k" : "v");
    if (h->page_size > 0) { /* the tables, host copies */
        if (!h->block_table && !(h->kv_indptr && h->kv_indices && h->kv_last_page_len))
            return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_ref_fmha_fwd: page_size %d without page tables",
                             h->page_size);
        ckt_status st = ckt__fmha_check_pages(h);
        if (st != CKT_SUCCESS)
            return st;
    }
    return ckt_fmha_fwd_check_seqs(h);
}

/* >>reference */

static inline ckt_status ckt__ref_fmha_fwd(const ckt_fmha_fwd_args *h, float *o_ref, float *lse_ref, int quant_p)
{
    ckt_status st = ckt__ref_fmha_check(h, o_ref);
    if (st != CKT_SUCCESS || ckt_fmha_fwd_is_empty(h))
        return st;
    const int g = h->nhead_q / h->nhead_k, dq = h->hdim_q, dv = h->hdim_v;
    const int fp8 = h->dtype == CKT_FP8_E4M3;
    double scale = h->scale != 0.0f ? (double)h->scale : 1.0 / sqrt((double)dq);
    /* fp8: descales (0 = 1), the P scale (0 = CKT_FMHA_FP8_SCALE_P) */
    const double scale_p = !fp8 ? 1.0 : h->scale_p > 0.0f ? (double)h->scale_p : (double)CKT_FMHA_FP8_SCALE_P;
    const double descale_v = fp8 && h->descale_v > 0.0f ? (double)h->descale_v : 1.0;
    if (fp8)
        scale *= (h->descale_q > 0.0f ? (double)h->descale_q : 1.0) * (h->descale_k > 0.0f ? (double)h->descale_k : 1.0);
    const double cap = h->softcap;
    int max_sk = 0;
    for (int b = 0; b < h->batch; b++) {
        const ckt_fmha_entry e = ckt_fmha_fwd_entry(h, b);
        max_sk = e.sk > max_sk ? e.sk : max_sk;
    }
    /* scratch: K[b][hk] and V[b][hk] as dense fp32 rows (converted once per
     * key head, shared by its g query heads); one row's logits, query, output */
    const size_t nk = (size_t)max_sk * (size_t)dq, nv = (size_t)max_sk * (size_t)dv;
    float *kf = (float *)malloc((nk + nv + 1) * sizeof(float)), *vf = kf + nk;
    double *s = (double *)malloc(((size_t)max_sk + (size_t)dq + (size_t)dv + 1) * sizeof(double));
    if (!kf || !s) {
        free(kf);
        free(s);
        return ckt__fail(CKT_ERROR_OUT_OF_MEMORY, "ckt_ref_fmha_fwd: scratch for %d keys", max_sk);
    }
    double *qrow = s + max_sk, *orow = qrow + dq;
    const int drop = h->p_drop > 0.0f;
    const ckt_fmha_dropout dr = ckt_fmha_dropout_of(h->p_drop, h->drop_seed, h->drop_offset, h->drop_seed_offset);
    for (int b = 0; b < h->batch; b++) {
        const ckt_fmha_entry e = ckt_fmha_fwd_entry(h, b);
        for (int hk = 0; hk < h->nhead_k; hk++) {
            for (int64_t j = 0; j < e.sk; j++) {
                const int64_t ko = ckt__fmha_row(h, CKT_FMHA_TENSOR_K, b, hk, j, &e);
                const int64_t vo = ckt__fmha_row(h, CKT_FMHA_TENSOR_V, b, hk, j, &e);
                for (int d = 0; d < dq; d++)
                    kf[j * dq + d] = ckt_load_f32(h->k, h->dtype, (size_t)(ko + d));
                for (int d = 0; d < dv; d++)
                    vf[j * dv + d] = ckt_load_f32(h->v, h->dtype, (size_t)(vo + d));
            }
            for (int head = hk * g; head < (hk + 1) * g; head++)
                for (int64_t i = 0; i < e.sq; i++) {
                    /* Q[b][head][i][:] */
                    const int64_t qo = ckt__fmha_row(h, CKT_FMHA_TENSOR_Q, b, head, i, &e);
                    for (int d = 0; d < dq; d++)
                        qrow[d] = ckt_load_f32(h->q, h->dtype, (size_t)(qo + d));
                    int64_t lo, hi;
                    ckt_fmha_fwd_row_keys(h, i, e.sq, e.sk, &lo, &hi);
                    /* bias or ALiBi of (b, head, i, j): ckt/fmha/bias.h */
                    const ckt_fmha_mask_params mk =
                        ckt_fmha_mask_make(h->mask, h->window_left, h->window_right, (int)e.sq, (int)e.sk);
                    const ckt_fmha_bias_params bp = ckt_fmha_bias_make(h->bias, h->bias_stride_b, h->bias_stride_h,
                                                                       h->bias_stride_s, h->alibi_slopes,
                                                                       h->alibi_stride_b, &mk);
                    double mx = -INFINITY;
                    for (int64_t j = lo; j < hi; j++) {
                        /* s_j = scale * Q[b][head][i] . K[b][hk][j] */
                        const float *kr = kf + j * dq;
                        double dot = 0.0;
                        for (int d = 0; d < dq; d++)
                            dot += qrow[d] * (double)kr[d];
                        double x = scale * dot;
                        if (cap > 0.0)
                            x = cap * tanh(x / cap);
                        x += ckt_fmha_bias_value_f64(&bp, h->dtype, b, head, (int)i, (int)j); /* 0 without */
                        s[j] = x;
                        mx = x > mx ? x : mx;
                    }
                    /* the sink logit joins the max and the denominator, with no value */
                    const double sink = h->sink ? (double)h->sink[head] : -INFINITY;
                    mx = sink > mx ? sink : mx;
                    for (int d = 0; d < dv; d++)
                        orow[d] = 0.0;
                    double sum = sink == -INFINITY ? 0.0 : exp(sink - mx);
                    const uint32_t bh = (uint32_t)b * (uint32_t)h->nhead_q + (uint32_t)head;
                    for (int64_t j = lo; j < hi; j++) {
                        double p = exp(s[j] - mx);
                        const float *vr = vf + j * dv;
                        sum += p; /* the denominator takes every visible key */
                        if (drop) { /* P_ij Z_ij / (1 - p_drop); the byte into randval */
                            const uint32_t x = ckt_fmha_dropout_byte(&dr, bh, (int)i, (int)j);
                            if (h->randval)
                                h->randval[(int64_t)b * h->randval_stride_b + (int64_t)head * h->randval_stride_h +
                                           i * h->randval_stride_s + j] = (uint8_t)x;
                            p = x >= dr.threshold ? p * (double)dr.scale : 0.0;
                        }
                        if (fp8 && quant_p) /* P scale_p to e4m3, as the kernel packs it */
                            p = (double)ckt_f32_from_e4m3(ckt_e4m3_from_f32((float)(p * scale_p))) / scale_p;
                        for (int d = 0; d < dv; d++)
                            orow[d] += p * (double)vr[d];
                    }
                    /* O[b][head][i][:]; a row with no visible key: O = 0, LSE = -inf (sink) */
                    const int64_t oo = ckt__fmha_row(h, CKT_FMHA_TENSOR_O, b, head, i, &e);
                    for (int d = 0; d < dv; d++)
                        o_ref[oo + d] = sum > 0.0 ? (float)(orow[d] * descale_v / sum) : 0.0f;
                    if (lse_ref)
                        lse_ref[ckt__fmha_row(h, CKT_FMHA_TENSOR_LSE, b, head, i, &e)] =
                            sum > 0.0 ? (float)(mx + log(sum)) : -INFINITY;
                }
        }
    }
    free(kf);
    free(s);
    return CKT_SUCCESS;
}

static inline ckt_status ckt_ref_fmha_fwd(const ckt_fmha_fwd_args *h, float *o_ref, float *lse_ref)
{
    return ckt__ref_fmha_fwd(h, o_ref, lse_ref, 1);
}

/* fp8: the same with P unquantized (the fp8 inputs' exact attention). */
static inline ckt_status ckt_ref_fmha_fwd_unquantized(const ckt_fmha_fwd_args *h, float *o_ref, float *lse_ref)
{
    return ckt__ref_fmha_fwd(h, o_ref, lse_ref, 0);
}

/* >>comparison */


/* Compares a kernel's O (host copy of o, type h->dtype, O's layout) and,
 * when lse and lse_ref are both given, its LSE with the reference, over the
 * logical rows only. O is compared in the output type: the reference is
 * rounded to h->dtype first (as the kernel's fp32 result is), then
 * |got - want| <= atol + rtol * |want| (CK: fp16 1e-3 / 1e-3, bf16 1e-2 / 1e-2).
 * LSE (fp32) with the same tolerances. Indices reported are element
 * offsets in o / lse. r_lse may be NULL (LSE then not compared).
 * CKT_ERROR_MISMATCH if any element differs. */
static inline ckt_status ckt_ref_fmha_compare(ckt_compare_result *r_o, ckt_compare_result *r_lse,
                                              const ckt_fmha_fwd_args *h, const void *o, const float *lse,
                                              const float *o_ref, const float *lse_ref, double atol, double rtol)
{
    if (!r_o || !h)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_ref_fmha_compare: %s is NULL", r_o ? "args" : "r_o");
    memset(r_o, 0, sizeof *r_o);
    r_o->atol = atol;
    r_o->rtol = rtol;
    const int do_lse = r_lse && lse && lse_ref;
    if (r_lse) {
        memset(r_lse, 0, sizeof *r_lse);
        r_lse->atol = atol;
        r_lse->rtol = rtol;
    }
    if (ckt_fmha_fwd_is_empty(h))
        return CKT_SUCCESS;
    if (!o || !o_ref)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_ref_fmha_compare: %s is NULL", o ? "o_ref" : "o");
    const ckt_dtype odt = h->dtype == CKT_FP8_E4M3 ? h->o_dtype : h->dtype; /* O's type */
    for (int b = 0; b < h->batch; b++) {
        const ckt_fmha_entry e = ckt_fmha_fwd_entry(h, b);
        for (int head = 0; head < h->nhead_q; head++)
            for (int64_t i = 0; i < e.sq; i++) {
                const int64_t oo = ckt__fmha_row(h, CKT_FMHA_TENSOR_O, b, head, i, &e);
                for (int d = 0; d < h->hdim_v; d++) {
                    float want = o_ref[oo + d];
                    if (odt != CKT_F32) {
                        uint16_t x;
                        ckt_store_f32(&x, odt, 0, want);
                        want = ckt_load_f32(&x, odt, 0);
                    }
                    ckt_compare_add(r_o, (size_t)(oo + d), ckt_load_f32(o, odt, (size_t)(oo + d)), want);
                }
                if (do_lse) {
                    const int64_t lo = ckt__fmha_row(h, CKT_FMHA_TENSOR_LSE, b, head, i, &e);
                    ckt_compare_add(r_lse, (size_t)lo, lse[lo], lse_ref[lo]);
                }
            }
    }
    if (r_o->mismatches || (do_lse && r_lse->mismatches))
        return ckt__fail(CKT_ERROR_MISMATCH, "fmha: %zu of %zu O elements and %zu of %zu LSE values differ",
                         r_o->mismatches, r_o->n, do_lse ? r_lse->mismatches : 0, do_lse ? r_lse->n : 0);
    return CKT_SUCCESS;
}

#endif /* CKT_FMHA_REF_H */
