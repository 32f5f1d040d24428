/* ckt/fmha/epilogue.h — what leaves an attention kernel: the output tile O
 * and the per-row LSE.
 *
 *   ckt_fmha_softmax_finish(inv, row_l, WM);                  // ckt/fmha/softmax.h
 *   ckt_fmha_block_store_o(o_rows, o_stride_s, sq, hdim_v, m0, staging, o_acc, inv,
 *                          warp * WM, WM, BM, DV, T, tid, bf16, lane);
 *   if (a.lse) ckt_fmha_warp_store_lse(a.lse + at, row_m, row_l, row0, sq, WM, lane);
 *
 * O = acc * inv of its row, rounded to fp16 / bf16. A lane's accumulator
 * registers are 4-byte pairs of adjacent columns scattered over rows (both
 * MMA flavors, in the query-major view of ckt/fmha/softmax.h); on mma.sync
 * they go through shared memory, whence the row distribution of
 * ckt/tile/rows.h writes whole, coalesced 16-byte vectors (measured on H200:
 * 3% faster than storing the pairs directly); on MFMA, where 4 consecutive
 * registers are 8 contiguous bytes of one row already, straight to global
 * memory (CKT_FMHA_O_VIA_SMEM). Either way rows past the entry's length and
 * head dims past hdim_v are not written.
 *
 * Addressing of a (batch, head)'s rows: ckt/fmha/seqlen.h
 * (ckt_fmha_row_offset; LSE rows are unit-stride: batch mode
 * lse[b * lse_stride_b + h * lse_stride_h + i], group mode
 * lse[h * lse_stride_h + seqstart_q[b] + i]). Device code, on targets with a
 * warp MMA.
 */
#ifndef CKT_FMHA_EPILOGUE_H
#define CKT_FMHA_EPILOGUE_H

#include "ckt/arch/arch.h"
#include "ckt/fmha/softmax.h"
#include "ckt/tile/mma.h"
#include "ckt/tile/rows.h"
#include "ckt/tile/smem.h"
#include "ckt/tile/view.h"

#if defined(CKT_HAS_MMA_SYNC) || defined(CKT_HAS_MFMA)

/* How O leaves: 1 through shared memory (mma.sync; measured on H200: 3%
 * faster than storing the pairs directly), 0 straight from the registers
 * (MFMA: registers 4j .. 4j + 3 of a lane are already 8 contiguous bytes of
 * one row, and staging would cost VGPRs: d96 192 -> 228 on gfx90a). */
#if defined(CKT_HAS_MMA_SYNC)
#define CKT_FMHA_O_VIA_SMEM 1
#else
#define CKT_FMHA_O_VIA_SMEM 0
#endif

/* The most 32-bit registers per thread that the shared-memory path moves
 * (CKT_ROWS_REGS(bm, dv, T, 2): 64 for every instance of the forward). */
#define CKT_FMHA_STORE_O_REGS_MAX 128

/* Pair i / 2 of the lane's output registers (i even): o[i], o[i + 1] times
 * inv of their row, rounded to fp16 / bf16 (bf16 != 0) and packed; *r, *c:
 * its row in the warp's tile of wm rows and its first column (of dv). Both
 * registers of a pair are adjacent columns of one row on either flavor. */
CKT_INLINE CKT_DEVICE uint32_t ckt_fmha_o_pair(int *r, int *c, const float *o, const float *inv, int i, int wm, int dv,
                                               int bf16, int lane)
{
    const int slot = ckt_fmha_acc_slot(i, dv);
    const float x0 = o[i] * inv[slot], x1 = o[i + 1] * inv[slot];
    *r = ckt_fmha_acc_row(slot, lane);
    *c = ckt_fmha_acc_col(i, lane, wm, dv);
    return bf16 ? ckt_pack2_bf16(x0, x1) : ckt_pack2_f16(x0, x1);
}

/* s[row0 + r][c] <- O = o * inv, the warp's query-major output accumulator
 * (wm rows by dv columns), one 32-bit store per pair. */
CKT_INLINE CKT_DEVICE void ckt_fmha_warp_stage_o(ckt_smem_tile s, const float *o, const float *inv, int row0, int wm,
                                                 int dv, int bf16, int lane)
{
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(wm, dv); i += 2) {
        int r, c;
        const uint32_t x = ckt_fmha_o_pair(&r, &c, o, inv, i, wm, dv, bf16, lane);
        *(uint32_t *)ckt_smem_tile_ptr(s, row0 + r, c) = x;
    }
}

/* O[row0 + r][c] <- o * inv straight from the registers, one 32-bit store
 * per pair: out points at row 0 of this (batch, head) (rows ld elements
 * apart, 4-byte aligned), rows below sq and columns below hdim_v only. */
CKT_INLINE CKT_DEVICE void ckt_fmha_warp_store_o(uint16_t *out, int64_t ld, int sq, int hdim_v, const float *o,
                                                 const float *inv, int row0, int wm, int dv, int bf16, int lane)
{
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(wm, dv); i += 2) {
        int r, c;
        const uint32_t x = ckt_fmha_o_pair(&r, &c, o, inv, i, wm, dv, bf16, lane);
        if (row0 + r < sq && c < hdim_v)
            *(uint32_t *)(out + (int64_t)(row0 + r) * ld + c) = x;
    }
}

/* Split-KV's partial output (ckt/fmha/splitkv.h): out[(row0 + r) * ld + c]
 * <- o * inv in fp32, one 8-byte store per pair, rows below sq and columns
 * below hdim_v only (out: row 0 of the (split, batch, head), 8-byte aligned). */
CKT_INLINE CKT_DEVICE void ckt_fmha_warp_store_o_f32(float *out, int64_t ld, int sq, int hdim_v, const float *o,
                                                     const float *inv, int row0, int wm, int dv, int lane)
{
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(wm, dv); i += 2) {
        const int slot = ckt_fmha_acc_slot(i, dv);
        const int r = ckt_fmha_acc_row(slot, lane), c = ckt_fmha_acc_col(i, lane, wm, dv);
        if (row0 + r < sq && c < hdim_v) {
            float *p = out + (int64_t)(row0 + r) * ld + c;
            p[0] = o[i] * inv[slot];
            p[1] = o[i + 1] * inv[slot];
        }
    }
}

/* The block's output tile: O[m0 .. m0 + bm) of this (batch, head) <- o * inv
 * of each warp (its rows start at m0 + wrow), rows below sq and columns below
 * hdim_v only; out: row 0 of the (batch, head), rows ld elements apart.
 * Every thread of the block calls it (T threads, this one tid). On the
 * shared-memory path it synchronizes the block twice and overwrites the
 * staging tile (bm rows of dv columns, CKT_SMEM_PADDED or ROW_MAJOR): call it
 * once every warp is done with that space. _cols: each warp holds columns
 * [col0, col0 + dvw) of its rows (o: wm x dvw; the forward's V column split
 * at head dim 512, ckt/fmha/fwd_body.h); the warps together cover bm x dv. */
CKT_INLINE CKT_DEVICE void ckt_fmha_block_store_o_cols(uint16_t *out, int64_t ld, int sq, int hdim_v, int m0,
                                                       ckt_smem_tile staging, const float *o, const float *inv,
                                                       int wrow, int col0, int wm, int bm, int dv, int dvw, int T,
                                                       int tid, int bf16, int lane)
{
#if CKT_FMHA_O_VIA_SMEM
    uint32_t v[CKT_FMHA_STORE_O_REGS_MAX];
    const ckt_window2d wo = ckt_window2d_make(ckt_view2d_make(out, sq, hdim_v, ld), m0, 0);
    /* the warp's slice: the staging tile from column col0 (row-major or padded rows) */
    const ckt_smem_tile slice = ckt_smem_tile_make(staging.base + col0, staging.layout, staging.cols);
    ckt_block_sync(); /* every warp is past its last read of the staging space */
    ckt_fmha_warp_stage_o(slice, o, inv, wrow, wm, dvw, bf16, lane);
    ckt_block_sync();
    ckt_rows_load_smem_b16(v, staging.base, staging.layout, bm, dv, 8, T, tid);
    ckt_rows_store_b16(&wo, v, bm, dv, 8, T, tid);
#else
    (void)staging;
    (void)bm;
    (void)dv;
    (void)T;
    (void)tid;
    ckt_fmha_warp_store_o(out + col0, ld, sq, hdim_v - col0, o, inv, m0 + wrow, wm, dvw, bf16, lane);
#endif
}

/* The same, each warp holding all dv columns of its rows. */
CKT_INLINE CKT_DEVICE void ckt_fmha_block_store_o(uint16_t *out, int64_t ld, int sq, int hdim_v, int m0,
                                                  ckt_smem_tile staging, const float *o, const float *inv, int wrow,
                                                  int wm, int bm, int dv, int T, int tid, int bf16, int lane)
{
    ckt_fmha_block_store_o_cols(out, ld, sq, hdim_v, m0, staging, o, inv, wrow, 0, wm, bm, dv, dv, T, tid, bf16, lane);
}

/* lse[i] <- the LSE of each finished row i = row0 + ckt_fmha_acc_row(r, lane)
 * below sq (row_l summed by ckt_fmha_softmax_finish): lse points at row 0 of
 * this (batch, head), rows are unit-stride. One lane per row writes. */
CKT_INLINE CKT_DEVICE void ckt_fmha_warp_store_lse(float *lse, const float *row_m, const float *row_l, int row0, int sq,
                                                   int wm, int lane)
{
    if (!ckt_fmha_row_leader(lane))
        return;
    CKT_UNROLL
    for (int r = 0; r < CKT_FMHA_ROW_SLOTS(wm); r++) {
        const int i = row0 + ckt_fmha_acc_row(r, lane);
        if (i < sq)
            lse[i] = ckt_fmha_softmax_lse(row_m[r], row_l[r]);
    }
}

#endif /* CKT_HAS_MMA_SYNC || CKT_HAS_MFMA */

#endif /* CKT_FMHA_EPILOGUE_H */
