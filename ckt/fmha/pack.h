/* ckt/fmha/pack.h — GQA packing for decode: the g = nhead_q / nhead_k query
 * heads that share a kv head run in one block, their rows stacked, so each
 * K/V byte is read once per group and a decode step (1..16 queries) fills
 * the MMA's rows instead of wasting them (FlashAttention-3's pack_gqa).
 *
 *   tile row m (of g * sq) = query i = m / g of query head hk * g + m % g
 *
 *   ckt_fmha_pack_load_q_async(sQ, q_group, q_stride_h, q_stride_s, g, sq, m0, hdim_q, BM, D, T, tid);
 *   ... mask with ckt_fmha_mask_scores(..., pack = g) ...
 *   ckt_fmha_pack_store_o(o_group, o_stride_h, o_stride_s, g, sq, hdim_v, acc, inv, row0, WM, DV, bf16, lane);
 *   ckt_fmha_pack_store_lse(lse_group, lse_stride_h, 1, g, sq, row_m, row_l, row0, WM, lane);
 *
 * q_group, o_group, lse_group: the tensors at (entry, head hk * g, row 0);
 * heads stride_h apart, queries stride_s (elements). Rows whose query is
 * past sq load zeros and store nothing. Device code, on targets with a warp
 * MMA (the stores; the load needs only asynchronous copies).
 */
#ifndef CKT_FMHA_PACK_H
#define CKT_FMHA_PACK_H

#include "ckt/fmha/epilogue.h"
#include "ckt/fmha/softmax.h"
#include "ckt/tile/mma.h"

/* Issues the asynchronous gather of tile rows m0 .. m0 + R (R x C 16-bit
 * elements into s; columns past cols and rows past the queries are zeros),
 * by T threads (this one: tid); when T is not a multiple of C / 8 the last
 * T % (C / 8) threads copy nothing. */
CKT_INLINE CKT_DEVICE void ckt_fmha_pack_load_q_async(ckt_smem_tile s, const uint16_t *q, int64_t stride_h,
                                                      int64_t stride_s, int g, int sq, int m0, int cols, int R, int C,
                                                      int T, int tid)
{
    const int vpr = C / 8, r0 = tid / vpr, c = (tid % vpr) * 8, rstep = T / vpr;
    const unsigned bytes = c < cols ? 16u : 0u; /* cols is a multiple of 8 */
    if (T % vpr != 0 && r0 >= rstep)
        return; /* T not a multiple of C / 8: the last threads have no row */
    CKT_UNROLL
    for (int i = 0; i < CKT_CEIL_DIV(R, rstep); i++) {
        const int r = r0 + i * rstep;
        if (R % rstep != 0 && r >= R) /* rows r0 < rstep: only a ragged last step */
            break;
        const int m = m0 + r, qi = m / g, hh = m - qi * g;
        const unsigned n = qi < sq ? bytes : 0u;
        ckt_cp_async_16(ckt_smem_tile_ptr(s, r, c), q + (n ? hh * stride_h + qi * stride_s + c : 0), n);
    }
}

#if defined(CKT_HAS_MMA_SYNC) || defined(CKT_HAS_MFMA)

/* O = acc * inv of the warp's rows row0 .. row0 + wm (packed), rounded to
 * fp16 / bf16, one 32-bit store per pair, queries below sq and columns below
 * hdim_v only. */
CKT_INLINE CKT_DEVICE void ckt_fmha_pack_store_o(uint16_t *o, int64_t stride_h, int64_t stride_s, int g, int sq,
                                                 int hdim_v, const float *acc, const float *inv, int row0, int wm,
                                                 int dv, int bf16, int lane)
{
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(wm, dv); i += 2) {
        int r, c;
        const uint32_t x = ckt_fmha_o_pair(&r, &c, acc, inv, i, wm, dv, bf16, lane);
        const int m = row0 + r, qi = m / g, hh = m - qi * g;
        if (qi < sq && c < hdim_v)
            *(uint32_t *)(o + hh * stride_h + qi * stride_s + c) = x;
    }
}

/* The same in fp32 (split-KV's partial output), one 8-byte store per pair. */
CKT_INLINE CKT_DEVICE void ckt_fmha_pack_store_o_f32(float *o, int64_t stride_h, int64_t stride_s, int g, int sq,
                                                     int hdim_v, const float *acc, const float *inv, int row0, int wm,
                                                     int dv, int lane)
{
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(wm, dv); i += 2) {
        const int slot = ckt_fmha_acc_slot(i, dv);
        const int m = row0 + ckt_fmha_acc_row(slot, lane), c = ckt_fmha_acc_col(i, lane, wm, dv);
        const int qi = m / g, hh = m - qi * g;
        if (qi < sq && c < hdim_v) {
            float *p = o + hh * stride_h + qi * stride_s + c;
            p[0] = acc[i] * inv[slot];
            p[1] = acc[i + 1] * inv[slot];
        }
    }
}

/* The LSE of each finished row (ckt_fmha_softmax_lse), one lane per row. */
CKT_INLINE CKT_DEVICE void ckt_fmha_pack_store_lse(float *lse, int64_t stride_h, int64_t stride_s, int g, int sq,
                                                   const float *row_m, const float *row_l, int row0, int wm, int lane)
{
    if (!ckt_fmha_row_leader(lane))
        return;
    CKT_UNROLL
    for (int r = 0; r < CKT_FMHA_ROW_SLOTS(wm); r++) {
        const int m = row0 + ckt_fmha_acc_row(r, lane), qi = m / g, hh = m - qi * g;
        if (qi < sq)
            lse[hh * stride_h + qi * stride_s] = ckt_fmha_softmax_lse(row_m[r], row_l[r]);
    }
}

#endif /* CKT_HAS_MMA_SYNC || CKT_HAS_MFMA */

#endif /* CKT_FMHA_PACK_H */
