/* ckt/tile/regs.h — operations on distributed tensors: a thread's registers
 * of a tile, as plain arrays (see ckt/tile/rows.h for how a tile is spread).
 *
 *   float    x[n]        fp32 elements
 *   uint32_t h[n / 2]    16-bit elements (fp16 or bf16 bits), two per word,
 *                        element 2i in the low half of h[i]
 *
 * Every `n` below counts elements (not words); n is a compile-time constant
 * after inlining, and the loops unroll into straight-line code (see
 * "Unrolling" in ckt/tile/rows.h).
 *
 *   ckt_regs_fill_f32(x, n, v)            x[k] = v
 *   ckt_regs_fill_b16(h, n, bits)         every 16-bit element = bits
 *   ckt_regs_scale_f32(y, x, n, s)        y[k] = s * x[k]
 *   ckt_regs_sub_rows_f32(y, x, n, m, V)  y[k] = x[k] - m[k / V]   (m: one
 *   ckt_regs_mul_rows_f32(y, x, n, m, V)  y[k] = x[k] * m[k / V]    value per vector,
 *                                         e.g. a row reduction's result)
 *   CKT_REGS_MAP(y, x, n, v, expr)        y[k] = expr, with float v = x[k]
 *   CKT_REGS_MAP2(y, a, b, n, u, v, expr) y[k] = expr, with u = a[k], v = b[k]
 *   ckt_regs_f16_from_f32(h, x, n)        casts, round to nearest even
 *   ckt_regs_bf16_from_f32(h, x, n)
 *   ckt_regs_f32_from_f16(x, h, n)
 *   ckt_regs_f32_from_bf16(x, h, n)
 *
 * Reductions across lanes (warp level: every lane of the warp calls):
 *   ckt_warp_group_max_f32(v, n, stride)  max / sum over the n lanes
 *   ckt_warp_group_sum_f32(v, n, stride)  lane0 + k*stride, k in [0, n), where
 *                                         lane0 is this lane with those bits
 *                                         cleared; every lane of the group
 *                                         gets the same result. n and stride
 *                                         are powers of two, n*stride <= warp.
 *     (n, 1): groups of n consecutive lanes, e.g. the 4 lanes of an mma.sync
 *     accumulator row; (8, 4): the 8 lanes of one of its columns.
 *
 * Row reductions in the row distribution (ckt/tile/rows.h):
 *   ckt_rows_row_max(m, x, R, C, V, T, t, smem)   m[i] = max of the tile row
 *   ckt_rows_row_sum(s, x, R, C, V, T, t, smem)   that holds thread t's vector
 *                                                 i (CKT_ROWS_VECS entries)
 *     x: fp32 registers of the R x C tile. The threads that share a row (C/V
 *     consecutive threads, or all T when a row has more than T vectors)
 *     combine with shuffles; when they span several warps, the warps'
 *     partials go through smem (CKT_ROWS_REDUCE_SMEM(R, C, V, T) floats of
 *     shared memory) and the call synchronizes the block twice
 *     (ckt_block_sync): then every thread of the block makes it. Otherwise
 *     smem may be NULL and nothing synchronizes but the warp. Values outside
 *     the view take part: load with the fill the reduction ignores (-INFINITY
 *     for max, 0 for sum). Check the shape with CKT_ROWS_REDUCE_CHECK.
 */
#ifndef CKT_TILE_REGS_H
#define CKT_TILE_REGS_H

#include "ckt/arch/arch.h"
#include "ckt/tile/rows.h"

#include <math.h>

/* >>elementwise */

CKT_INLINE CKT_DEVICE void ckt_regs_fill_f32(float *x, int n, float v)
{
    for (int k = 0; k < n; k++)
        x[k] = v;
}

CKT_INLINE CKT_DEVICE void ckt_regs_fill_b16(uint32_t *h, int n, uint16_t bits)
{
    for (int k = 0; k < n / 2; k++)
        h[k] = (uint32_t)bits | ((uint32_t)bits << 16);
}

CKT_INLINE CKT_DEVICE void ckt_regs_scale_f32(float *y, const float *x, int n, float s)
{
    for (int k = 0; k < n; k++)
        y[k] = s * x[k];
}

CKT_INLINE CKT_DEVICE void ckt_regs_sub_rows_f32(float *y, const float *x, int n, const float *m,
                                                 int V)
{
    for (int k = 0; k < n; k++)
        y[k] = x[k] - m[k / V];
}

CKT_INLINE CKT_DEVICE void ckt_regs_mul_rows_f32(float *y, const float *x, int n, const float *m,
                                                 int V)
{
    for (int k = 0; k < n; k++)
        y[k] = x[k] * m[k / V];
}

/* y[k] = expr for k in [0, n), where expr may use `v` (= x[k], a float):
 *   CKT_REGS_MAP(p, s, n, v, ckt_exp2f_fast(v * scale));
 * y may be x. A macro rather than a function pointer: expr is pasted into the
 * loop, so with a constant n it becomes straight-line code (see "Unrolling"
 * in ckt/tile/rows.h). */
#define CKT_REGS_MAP(y, x, n, v, expr)                                                             \
    do {                                                                                           \
        for (int ckt__k = 0; ckt__k < (n); ckt__k++) {                                             \
            const float v = (x)[ckt__k];                                                           \
            (y)[ckt__k] = (expr);                                                                  \
        }                                                                                          \
    } while (0)

/* y[k] = expr with u = a[k] and v = b[k]. */
#define CKT_REGS_MAP2(y, a, b, n, u, v, expr)                                                      \
    do {                                                                                           \
        for (int ckt__k = 0; ckt__k < (n); ckt__k++) {                                             \
            const float u = (a)[ckt__k];                                                           \
            const float v = (b)[ckt__k];                                                           \
            (y)[ckt__k] = (expr);                                                                  \
        }                                                                                          \
    } while (0)

/* >>casts (16-bit registers: two elements per word, element 2i low) */

/* ckt_pack2_*: one paired conversion instruction where the GPU has it. */
CKT_INLINE CKT_DEVICE void ckt_regs_f16_from_f32(uint32_t *h, const float *x, int n)
{
    for (int i = 0; i < n / 2; i++)
        h[i] = ckt_pack2_f16(x[2 * i], x[2 * i + 1]);
}

CKT_INLINE CKT_DEVICE void ckt_regs_bf16_from_f32(uint32_t *h, const float *x, int n)
{
    for (int i = 0; i < n / 2; i++)
        h[i] = ckt_pack2_bf16(x[2 * i], x[2 * i + 1]);
}

CKT_INLINE CKT_DEVICE void ckt_regs_f32_from_f16(float *x, const uint32_t *h, int n)
{
    for (int i = 0; i < n / 2; i++) {
        ckt_f16 lo, hi;
        lo.bits = (uint16_t)(h[i] & 0xffffu);
        hi.bits = (uint16_t)(h[i] >> 16);
        x[2 * i] = ckt_f32_from_f16(lo);
        x[2 * i + 1] = ckt_f32_from_f16(hi);
    }
}

CKT_INLINE CKT_DEVICE void ckt_regs_f32_from_bf16(float *x, const uint32_t *h, int n)
{
    for (int i = 0; i < n / 2; i++) {
        x[2 * i] = ckt_f32_from_bits(h[i] << 16);
        x[2 * i + 1] = ckt_f32_from_bits(h[i] & 0xffff0000u);
    }
}

/* >>reductions across lanes */

CKT_INLINE CKT_DEVICE float ckt_warp_group_max_f32(float v, int n, int stride)
{
    for (int m = n / 2; m >= 1; m /= 2)
        v = fmaxf(v, ckt_warp_shfl_xor_f32(v, (unsigned)(m * stride)));
    return v;
}

CKT_INLINE CKT_DEVICE float ckt_warp_group_sum_f32(float v, int n, int stride)
{
    for (int m = n / 2; m >= 1; m /= 2)
        v += ckt_warp_shfl_xor_f32(v, (unsigned)(m * stride));
    return v;
}

/* >>row reductions in the row distribution */

/* Floats of shared memory the row reductions need (at least 1, so that the
 * array can be declared for any shape; only used when a row spans warps). */
#define CKT_ROWS_REDUCE_SMEM(R, C, V, T)                                                           \
    (CKT_ROWS_VECS(R, C, V, T) * ((T) > CKT_WARP_SIZE ? (T) / CKT_WARP_SIZE : 1))

/* Threads that share a row: C/V, or T when a row has more vectors than T. */
#define CKT__ROWS_GROUP(C, V, T) ((C) / (V) < (T) ? (C) / (V) : (T))

#define CKT_ROWS_REDUCE_CHECK(R, C, V, T)                                                          \
    CKT_STATIC_ASSERT((CKT__ROWS_GROUP(C, V, T) & (CKT__ROWS_GROUP(C, V, T) - 1)) == 0,           \
                      "row reductions: the threads that share a row, min(C/V, T), must be a "      \
                      "power of 2");                                                               \
    CKT_STATIC_ASSERT(CKT__ROWS_GROUP(C, V, T) <= CKT_WARP_SIZE ||                                \
                          CKT__ROWS_GROUP(C, V, T) % CKT_WARP_SIZE == 0,                          \
                      "row reductions: a row that spans warps must span whole warps "              \
                      "(min(C/V, T) a multiple of the warp size)")

CKT_INLINE CKT_DEVICE float ckt__reduce_op(float a, float b, int is_max)
{
    return is_max ? fmaxf(a, b) : a + b;
}

CKT_INLINE CKT_DEVICE void ckt__rows_reduce(float *dst, const float *x, int R, int C, int V, int T,
                                            int t, float *smem, int is_max)
{
    const int W = CKT_WARP_SIZE, vpr = C / V, nv = CKT_ROWS_VECS(R, C, V, T);
    const int k = vpr > T ? vpr / T : 1; /* vectors of one row per thread: consecutive i */
    const int g = vpr > T ? T : vpr;     /* consecutive threads that share a row */
    /* 1: within the thread (its k*V elements of the row), 2: across the
     * group's lanes in a warp */
    for (int i = 0; i < nv; i += k) {
        float v = x[i * V];
        for (int e = 1; e < k * V; e++)
            v = ckt__reduce_op(v, x[i * V + e], is_max);
        const int n = g < W ? g : W;
        dst[i] = is_max ? ckt_warp_group_max_f32(v, n, 1) : ckt_warp_group_sum_f32(v, n, 1);
    }
    /* 3: across the warps of a group: partial of row-register i / k of warp
     * w at smem[(i / k) * (T / W) + w] */
    if (g > W) {
        const int warps = T / W, wpg = g / W, warp = t / W;
        if (t % W == 0) {
            for (int i = 0; i < nv; i += k)
                smem[(i / k) * warps + warp] = dst[i];
        }
        ckt_block_sync();
        for (int i = 0; i < nv; i += k) {
            const float *part = smem + (i / k) * warps + warp / wpg * wpg;
            float v = part[0];
            for (int q = 1; q < wpg; q++)
                v = ckt__reduce_op(v, part[q], is_max);
            dst[i] = v;
        }
        ckt_block_sync(); /* smem is free again */
    }
    for (int i = 0; i < nv; i += k) {
        for (int q = 1; q < k; q++)
            dst[i + q] = dst[i];
    }
}

CKT_INLINE CKT_DEVICE void ckt_rows_row_max(float *dst, const float *x, int R, int C, int V, int T,
                                            int t, float *smem)
{
    ckt__rows_reduce(dst, x, R, C, V, T, t, smem, 1);
}

CKT_INLINE CKT_DEVICE void ckt_rows_row_sum(float *dst, const float *x, int R, int C, int V, int T,
                                            int t, float *smem)
{
    ckt__rows_reduce(dst, x, R, C, V, T, t, smem, 0);
}

#endif /* CKT_TILE_REGS_H */
