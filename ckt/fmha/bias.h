/* ckt/fmha/bias.h — additive attention bias and ALiBi, the one home of
 * their math for the forward, the backward and the CPU references
 * (ckt_fmha_fwd_args / ckt_fmha_bwd_args, ">>bias" fields):
 *
 *   s_ij = scale * Q[b][h][i] . K[b][h/g][j] + B[b][h][i][j]     then the mask, then the softmax
 *
 *   elementwise:  B[b][h][i][j] = bias[b*stride_b + h*stride_h + i*stride_s + j]   (args' dtype)
 *   ALiBi:        B[b][h][i][j] = -slope(b, h) * |j - i - off|,  slope(b, h) = slopes[b*slope_stride_b + h]
 *
 * b the batch entry, h the query head, i and j the query and the key within
 * the entry (logical positions: group mode counts from the entry's start, a
 * paged cache's keys by their position in the sequence). off is the mask's
 * diagonal offset (ckt/fmha/mask.h: 0 top-left and without a mask,
 * sk - sq bottom-right), so ALiBi's zero sits on the causal diagonal.
 * At most one of the two a call, never with a soft-cap (validate.h).
 *
 *   ckt_fmha_bias_params p = ckt_fmha_bias_make(a.bias, a.bias_stride_b, a.bias_stride_h, a.bias_stride_s,
 *                                               a.alibi_slopes, a.alibi_stride_b, &mask);
 *   host:   x = scale * dot + ckt_fmha_bias_value_f64(&p, dtype, b, h, i, j)      (ckt/fmha/ref.h)
 *   device: if (bias_on) { ckt_fmha_bias_scores(s, &p, ...); to_log2 = CKT_LOG2E; }
 *
 * bias_on is a compile-time constant in the kernels: each forward / backward
 * instance compiles a second kernel with the bias (NAME_bias_kernel,
 * NAME_dq_dk_dv_bias_kernel) from the same body, so the plain kernels hold
 * no bias code and lose no registers to it (docs/fmha.md, "Bias and ALiBi").
 *
 * The kernels fold the scale into the bias's FMA (s = s * scale + B), after
 * which the scores are in natural units and to_log2 is log2(e). Elements
 * past the entry's queries or keys read nothing (they are masked anyway).
 */
#ifndef CKT_FMHA_BIAS_H
#define CKT_FMHA_BIAS_H

#include "ckt/arch/config.h"
#include "ckt/arch/numeric.h"
#include "ckt/fmha/mask.h"
#include "ckt/fmha/softmax.h"
#include "ckt/host/dtype.h"

#include <math.h>
#include <stdint.h>

typedef struct ckt_fmha_bias_params {
    const uint16_t *bias;     /* the elementwise bias (fp16 / bf16 bits), NULL: none */
    int64_t sb, sh, ss;       /* its strides in elements (unit stride on j) */
    const float *slopes;      /* ALiBi slopes, NULL: none */
    int64_t slope_sb;         /* slopes' batch stride (0: shared by the batch) */
    int sq, sk, off;          /* the entry's lengths and the mask's diagonal offset */
} ckt_fmha_bias_params;

/* The bias of one entry whose mask is m (its lengths and offset). */
CKT_INLINE CKT_HOST_DEVICE ckt_fmha_bias_params ckt_fmha_bias_make(const void *bias, int64_t sb, int64_t sh,
                                                                   int64_t ss, const float *slopes, int64_t slope_sb,
                                                                   const ckt_fmha_mask_params *m)
{
    ckt_fmha_bias_params p;
    p.bias = (const uint16_t *)bias;
    p.sb = sb;
    p.sh = sh;
    p.ss = ss;
    p.slopes = slopes;
    p.slope_sb = slope_sb;
    p.sq = m->sq;
    p.sk = m->sk;
    p.off = m->off;
    return p;
}

/* Is there a bias at all? (A uniform branch: the pointers are kernel arguments.) */
CKT_INLINE CKT_HOST_DEVICE int ckt_fmha_bias_on(const ckt_fmha_bias_params *p)
{
    return p->bias != 0 || p->slopes != 0;
}

/* Element offset of B[b][h][i][0] in the bias tensor. */
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_fmha_bias_row_offset(const ckt_fmha_bias_params *p, int b, int h, int i)
{
    return (int64_t)b * p->sb + (int64_t)h * p->sh + (int64_t)i * p->ss;
}

/* ALiBi's slope of entry b, query head h. */
CKT_INLINE CKT_HOST_DEVICE float ckt_fmha_alibi_slope(const ckt_fmha_bias_params *p, int b, int h)
{
    return p->slopes[(int64_t)b * p->slope_sb + h];
}

/* ALiBi's distance |j - i - off| of query i and key j. */
CKT_INLINE CKT_HOST_DEVICE float ckt_fmha_alibi_dist(const ckt_fmha_bias_params *p, int i, int j)
{
    const int64_t d = (int64_t)j - i - p->off;
    return (float)(d < 0 ? -d : d);
}

/* B[b][h][i][j] in double, on the host (the references): the tensor read as
 * `dtype` (the args' dtype, or CKT_F32 in a host view), or ALiBi; 0 when
 * there is no bias. */
static inline double ckt_fmha_bias_value_f64(const ckt_fmha_bias_params *p, ckt_dtype dtype, int b, int h, int i,
                                             int j)
{
    if (p->bias)
        return (double)ckt_load_f32(p->bias, dtype, (size_t)(ckt_fmha_bias_row_offset(p, b, h, i) + j));
    if (p->slopes)
        return -(double)ckt_fmha_alibi_slope(p, b, h) * (double)ckt_fmha_alibi_dist(p, i, j);
    return 0.0;
}

#if defined(CKT_HAS_MMA_SYNC) || defined(CKT_HAS_MFMA)

/* One fp16 / bf16 element of the bias tensor, as fp32. */
CKT_INLINE CKT_DEVICE float ckt__fmha_bias_load(const uint16_t *x, int bf16)
{
    if (bf16) {
        ckt_bf16 v;
        v.bits = *x;
        return ckt_f32_from_bf16(v);
    }
    ckt_f16 v;
    v.bits = *x;
    return ckt_f32_from_f16(v);
}

/* B at (query i, key j) of head h for the device: 0 outside the entry (no read). */
CKT_INLINE CKT_DEVICE float ckt__fmha_bias_elem(const ckt_fmha_bias_params *p, int b, int h, int i, int j, int bf16)
{
    if (i >= p->sq || j >= p->sk)
        return 0.0f;
    if (p->bias)
        return ckt__fmha_bias_load(p->bias + ckt_fmha_bias_row_offset(p, b, h, i) + j, bf16);
    return -ckt_fmha_alibi_slope(p, b, h) * ckt_fmha_alibi_dist(p, i, j);
}

/* The forward's score tile (query-major: ckt/fmha/softmax.h's layouts): s[]
 * of a warp's wm tile rows (row0 ..) by bn keys (n0 ..) becomes
 * s * scale + B, for entry b; tile row m is query m / pack of head
 * head0 + m % pack (pack > 1: GQA-packed rows, ckt/fmha/pack.h; else 1).
 * Call it instead of the scale's fold: the scores are then natural logits
 * (to_log2 = log2 e).
 *
 * Per row slot once: the bias row's address, or ALiBi's slope and the
 * distance of the lane's first key (register i's key is that lane's first
 * plus lane 0's column of i, a constant once unrolled), so that an element
 * costs a load or an add and an abs. ALiBi's values past the entry's keys
 * or queries are finite and masked (or never stored); the tensor is not
 * read there. */
CKT_INLINE CKT_DEVICE void ckt_fmha_bias_scores(float *s, const ckt_fmha_bias_params *p, int b, int head0, int row0,
                                                int n0, int wm, int bn, int lane, int pack, float scale, int bf16)
{
    const int c0 = ckt_fmha_acc_col(0, lane, wm, bn); /* register i's column: c0 + lane 0's */
    CKT_UNROLL
    for (int r = 0; r < CKT_FMHA_ROW_SLOTS(wm); r++) {
        const int m = row0 + ckt_fmha_acc_row(r, lane);
        const int qi = m / pack, hh = head0 + m % pack;
        if (p->slopes) { /* -slope |j - qi - off| */
            const float slope = ckt_fmha_alibi_slope(p, b, hh);
            const float d0 = (float)(n0 + c0 - qi - p->off);
            CKT_UNROLL
            for (int i = 0; i < CKT_WARP_ACC_REGS(wm, bn); i++) {
                if (ckt_fmha_acc_slot(i, bn) != r)
                    continue; /* compile-time after unrolling */
                s[i] = fmaf(s[i], scale, -slope * fabsf(d0 + (float)ckt_fmha_acc_col(i, 0, wm, bn)));
            }
        } else {
            const int in_row = qi < p->sq;
            const uint16_t *row = p->bias + (in_row ? ckt_fmha_bias_row_offset(p, b, hh, qi) : 0) + n0 + c0;
            const int keys = in_row ? p->sk - n0 - c0 : 0; /* the lane's columns below this are in the entry */
            CKT_UNROLL
            for (int i = 0; i < CKT_WARP_ACC_REGS(wm, bn); i++) {
                if (ckt_fmha_acc_slot(i, bn) != r)
                    continue;
                const int cc = ckt_fmha_acc_col(i, 0, wm, bn);
                s[i] = fmaf(s[i], scale, cc < keys ? ckt__fmha_bias_load(row + cc, bf16) : 0.0f);
            }
        }
    }
}

/* The backward's S^T tile (keys x queries, ckt_warp_acc_coord's layout of a
 * [km x qn] accumulator): s[] of keys k0 .. and queries q0 .. of head h
 * becomes s * scale + B (natural logits: to_log2 = log2 e). */
CKT_INLINE CKT_DEVICE void ckt_fmha_bias_scores_t(float *s, const ckt_fmha_bias_params *p, int b, int h, int q0,
                                                  int k0, int km, int qn, int lane, float scale, int bf16)
{
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(km, qn); i++) {
        int r, c;
        ckt_warp_acc_coord(&r, &c, i, lane, km, qn);
        s[i] = fmaf(s[i], scale, ckt__fmha_bias_elem(p, b, h, q0 + c, k0 + r, bf16));
    }
}

/* dbias of the backward's dS^T tile (as above): dbias[b][h][q][k] = ds
 * rounded to fp16 / bf16, for queries < sq and keys < sk (strides db_*). */
CKT_INLINE CKT_DEVICE void ckt_fmha_dbias_store_t(uint16_t *dbias, int64_t db_b, int64_t db_h, int64_t db_s,
                                                  const float *ds, int sq, int sk, int b, int h, int q0, int k0,
                                                  int km, int qn, int lane, int bf16)
{
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(km, qn); i++) {
        int r, c;
        ckt_warp_acc_coord(&r, &c, i, lane, km, qn);
        const int q = q0 + c, k = k0 + r;
        if (q < sq && k < sk)
            dbias[(int64_t)b * db_b + (int64_t)h * db_h + (int64_t)q * db_s + k] =
                bf16 ? ckt_bf16_from_f32(ds[i]).bits : ckt_f16_from_f32(ds[i]).bits;
    }
}

#endif /* CKT_HAS_MMA_SYNC || CKT_HAS_MFMA */

#endif /* CKT_FMHA_BIAS_H */
