/* ckt/tile/mma.h — warp MMA fragments and the block GEMM built on them.
 *
 * A warp computes a WM x WN tile of C += A (WM x WK) * B (WK x WN) with the
 * warp matrix instruction of the target:
 *
 *   NVIDIA (and the emulator's nv profile): mma.sync m16n8k16, fp16/bf16 in,
 *   fp32 accumulate. Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16
 *   with floating point type"), with g = lane / 4 and t = lane % 4:
 *
 *     A 16x16, 8 halves in 4 regs:  a[i] at row g + 8*((i/2)%2), col 2t + i%2 + 8*(i/4)
 *     B 16x8,  4 halves in 2 regs:  b[i] at k   2t + i%2 + 8*(i/2),  n   g
 *     C 16x8,  4 floats:            c[i] at row g + 8*(i/2),         col 2t + i%2
 *
 *          C fragment of one m16n8 tile (lane numbers):
 *                 col 0-1  2-3  4-5  6-7
 *          row 0     0     1    2    3        rows 8..15: the same lanes,
 *          row 1     4     5    6    7        registers c[2], c[3]
 *          ...
 *          row 7    28    29   30   31
 *
 * A warp tile holds (WM/16) x (WN/8) such C tiles; register i of the
 * accumulator belongs to C tile (i / 4) in row-major order over the
 * (WM/16) x (WN/8) grid, element i % 4 of it (ckt_warp_acc_coord()).
 *
 * Shared-memory operands are read with ldmatrix: A from a row-major [m][k]
 * tile, B from an [n][k] tile (ckt_warp_load_b_nk, "B transposed", e.g. K in
 * attention) or a [k][n] tile (ckt_warp_load_b_kn, ldmatrix.trans, e.g. V).
 * A shared tile is described by ckt_smem_tile: base, layout and columns
 * (the layouts of ckt/tile/smem.h).
 */
#ifndef CKT_TILE_MMA_H
#define CKT_TILE_MMA_H

#include "ckt/arch/arch.h"
#include "ckt/tile/smem.h"
#include "ckt/tile/view.h"

#if defined(CKT_HAS_MMA_SYNC)

#define CKT_MMA_M 16
#define CKT_MMA_N 8
#define CKT_MMA_K 16

/* Per-lane register counts of a warp tile. */
#define CKT_WARP_A_REGS(WM, WK) (((WM) / 16) * ((WK) / 16) * 4)  /* uint32: 2 halves each */
#define CKT_WARP_B_REGS(WK, WN) (((WK) / 16) * ((WN) / 8) * 2)   /* uint32: 2 halves each */

#define CKT_WARP_TILE_CHECK(WM, WN, WK)                                                            \
    CKT_STATIC_ASSERT((WM) % 16 == 0, "warp tile M must be a multiple of 16 (mma.sync M)");      \
    CKT_STATIC_ASSERT((WN) % 16 == 0,                                                             \
                      "warp tile N must be a multiple of 16 (ldmatrix.x4 loads two n8 tiles)");  \
    CKT_STATIC_ASSERT((WK) % 16 == 0, "warp tile K must be a multiple of 16 (mma.sync K)")

#elif defined(CKT_HAS_MFMA)

#define CKT_MMA_M 32
#define CKT_MMA_N 32
#define CKT_MMA_K 8

#define CKT_WARP_A_REGS(WM, WK) (((WM) / 32) * ((WK) / 8) * 2) /* uint32: 2 halves each */
#define CKT_WARP_B_REGS(WK, WN) (((WK) / 8) * ((WN) / 32) * 2)

#define CKT_WARP_TILE_CHECK(WM, WN, WK)                                                            \
    CKT_STATIC_ASSERT((WM) % 32 == 0, "warp tile M must be a multiple of 32 (MFMA 32x32x8 M)");  \
    CKT_STATIC_ASSERT((WN) % 32 == 0, "warp tile N must be a multiple of 32 (MFMA 32x32x8 N)");  \
    CKT_STATIC_ASSERT((WK) % 8 == 0, "warp tile K must be a multiple of 8 (MFMA 32x32x8 K)")

#endif

/* ckt_warp_mma's input kinds: 0 fp16, 1 bf16, CKT_MMA_E4M3 fp8 (mma.sync on
 * sm_89+, MFMA on gfx940: ckt/tile/fp8.h). */
#define CKT_MMA_E4M3 2

/* CKT_WARP_ACC_PAIRS: 1 if accumulator registers 2j and 2j+1 of a lane hold
 * adjacent columns of one row (mma.sync: store them as one 32-bit pair), 0 if
 * they hold adjacent rows of one column (MFMA). */
#if defined(CKT_HAS_MMA_SYNC)
#define CKT_WARP_ACC_PAIRS 1
#else
#define CKT_WARP_ACC_PAIRS 0
#endif

/* fp32 accumulators per lane of a WM x WN warp tile: every lane holds the same
 * share of the tile on either instruction. */
#define CKT_WARP_ACC_REGS(WM, WN) ((WM) * (WN) / CKT_WARP_SIZE)

/* >>shared tiles */

/* A tile of 16-bit elements in shared memory, as the warp MMA loads and the
 * async tile loader see it: base, layout and column count of
 * ckt/tile/smem.h (pictures of the layouts there). CKT_SMEM_PADDED and
 * CKT_SMEM_SWIZZLE keep the 8 rows an ldmatrix reads in one phase in 8
 * different bank groups; CKT_SMEM_SWIZZLE needs rows of 64 elements or a
 * multiple, PADDED costs 16 bytes a row. */
typedef struct ckt_smem_tile {
    uint16_t *base;
    int layout; /* CKT_SMEM_* */
    int cols;   /* C: the tile's row length, before padding */
} ckt_smem_tile;

CKT_INLINE CKT_HOST_DEVICE ckt_smem_tile ckt_smem_tile_make(void *base, int layout, int cols)
{
    ckt_smem_tile t;
    t.base = (uint16_t *)base;
    t.layout = layout;
    t.cols = cols;
    return t;
}

/* Element offset of (r, c): ckt_smem_offset of ckt/tile/smem.h. */
CKT_INLINE CKT_HOST_DEVICE int ckt_smem_tile_offset(ckt_smem_tile t, int r, int c)
{
    return ckt_smem_offset(t.layout, t.cols, 2, r, c);
}

CKT_INLINE CKT_HOST_DEVICE uint16_t *ckt_smem_tile_ptr(ckt_smem_tile t, int r, int c)
{
    return t.base + ckt_smem_tile_offset(t, r, c);
}

/* Issues the asynchronous copy of the R x C tile of 16-bit elements at window
 * w into shared tile s, by T threads (this one: tid), 16-byte vectors:
 * ckt_smem_load_async_b16 (ckt/tile/smem.h) with the tile's layout. Elements
 * outside the view are zero-filled, so a ragged edge contributes zeros to a
 * matrix product. Commit and wait with ckt/tile/pipeline.h. */
CKT_INLINE CKT_DEVICE void ckt_smem_tile_load_async(ckt_smem_tile s, const ckt_window2d *w, int R,
                                                    int C, int T, int tid)
{
    ckt_smem_load_async_b16(s.base, s.layout, w, R, C, 8, T, tid);
}

/* The same copy for a tile given by pointer: p is element (0, 0) of the R x C
 * tile, ld the elements from one row to the next, and only rows < nrows and
 * columns < ncols exist (the rest is zero-filled). Where the whole tile exists
 * and p, ld are 16-byte aligned, each thread issues its vectors from one base
 * address and a constant row step (no window, no per-vector test); else it is
 * ckt_smem_tile_load_async over the view (nrows x ncols at p; nrows <= 0: no
 * rows, the whole tile zeros). A loop that
 * walks tiles keeps one base pointer and adds its offsets, instead of making
 * a window a step. */
CKT_INLINE CKT_DEVICE void ckt_smem_tile_load_rows_async(ckt_smem_tile s, const uint16_t *p, int64_t ld,
                                                         int64_t nrows, int64_t ncols, int R, int C, int T,
                                                         int tid)
{
    if (nrows >= R && ncols >= C && T % (C / 8) == 0 &&
        (((uintptr_t)p | (uintptr_t)(ld * 2)) & (uintptr_t)15) == 0) {
        const int r0 = tid / (C / 8), c = (tid % (C / 8)) * 8, rstep = T / (C / 8);
        const uint16_t *g = p + (int64_t)r0 * ld + c;
        CKT_UNROLL
        for (int j = 0; j < CKT_CEIL_DIV(R, rstep); j++) {
            if (R % rstep != 0 && r0 + j * rstep >= R)
                break;
            ckt_cp_async_16(ckt__smem_vec_ptr(s.base, s.layout, C, 2, r0 + j * rstep, c), g + (int64_t)j * rstep * ld, 16u);
        }
        return;
    }
    const ckt_window2d w = ckt_window2d_make(ckt_view2d_make((void *)p, nrows < 0 ? 0 : nrows, ncols, ld), 0, 0);
    ckt_smem_tile_load_async(s, &w, R, C, T, tid);
}

#if defined(CKT_HAS_MMA_SYNC)

/* >>NVIDIA: mma.sync m16n8k16 */

/* Row and column (in the WM x WN warp tile) of accumulator register i of lane. */
CKT_INLINE CKT_HOST_DEVICE void ckt_warp_acc_coord(int *row, int *col, int i, int lane, int WM,
                                                   int WN)
{
    int tile = i >> 2, e = i & 3, tiles_n = WN / 8;
    (void)WM;
    *row = (tile / tiles_n) * 16 + (lane >> 2) + 8 * (e >> 1);
    *col = (tile % tiles_n) * 8 + 2 * (lane & 3) + (e & 1);
}

/* The row slot of accumulator register i: the rows of a lane are g + 8 s for
 * s = 0 .. WM/8 - 1, and register i holds row slot ckt_warp_acc_slot(i); the
 * slot depends on i alone, so per-row state indexed by it stays in registers. */
CKT_INLINE CKT_HOST_DEVICE int ckt_warp_acc_slot(int i, int WN)
{
    return 2 * ((i >> 2) / (WN / 8)) + ((i >> 1) & 1);
}

/* >>loads from shared memory */

/* a[] <- A[row0 .. +WM][k0 .. +WK] of a row-major [m][k] shared tile.
 * Register layout: for each m16 tile mi and k16 step ki: 4 registers at
 * a[(mi * (WK/16) + ki) * 4]. One ldmatrix.x4 per 16x16 block: lane l gives
 * the address of row l%16, column 8*(l/16) of the block. */
CKT_INLINE CKT_DEVICE void ckt_warp_load_a(uint32_t *a, ckt_smem_tile s, int row0, int k0, int WM,
                                           int WK)
{
    int lane = (int)ckt_lane_id();
    CKT_UNROLL
    for (int mi = 0; mi < WM / 16; mi++)
        CKT_UNROLL
        for (int ki = 0; ki < WK / 16; ki++)
            ckt_ldmatrix_x4(&a[(mi * (WK / 16) + ki) * 4],
                            ckt_smem_tile_ptr(s, row0 + mi * 16 + (lane & 15), k0 + ki * 16 + 8 * (lane >> 4)));
}

/* a[] <- A[m0 .. +WM][k0 .. +WK] read from a [k][m] shared tile (A^T stored
 * row-major, e.g. dS^T in the attention backward) with ldmatrix.trans; same
 * register layout as ckt_warp_load_a. Matrix q = l/8 of the x4 is A's 8x8
 * block (m 8(q%2), k 8(q/2)): lane l gives stored row k = 8(q/2) + l%8,
 * column m = 8(q%2); .trans hands lane (g, t) A[g][2t], A[g][2t+1]. */
CKT_INLINE CKT_DEVICE void ckt_warp_load_a_km(uint32_t *a, ckt_smem_tile s, int k0, int m0, int WM, int WK)
{
    int lane = (int)ckt_lane_id(), q = lane >> 3;
    CKT_UNROLL
    for (int mi = 0; mi < WM / 16; mi++)
        CKT_UNROLL
        for (int ki = 0; ki < WK / 16; ki++)
            ckt_ldmatrix_x4_trans(&a[(mi * (WK / 16) + ki) * 4],
                                  ckt_smem_tile_ptr(s, k0 + ki * 16 + 8 * (q >> 1) + (lane & 7), m0 + mi * 16 + 8 * (q & 1)));
}

/* The 4 registers of one ldmatrix.x4 over a 16(k) x 16(n) block of B are the
 * fragments of two n8 tiles: r[0], r[1] for tile 2 nj, r[2], r[3] for 2 nj + 1
 * (register layout of ckt_warp_load_b_nk / _kn). */
CKT_INLINE CKT_DEVICE void ckt__warp_put_b_pair(uint32_t *b, const uint32_t r[4], int ki, int nj, int WN)
{
    uint32_t *lo = &b[(ki * (WN / 8) + 2 * nj) * 2];
    lo[0] = r[0];
    lo[1] = r[1];
    lo[2] = r[2];
    lo[3] = r[3];
}

/* b[] <- B[k0 .. +WK][n0 .. +WN] read from an [n][k] shared tile (B^T stored
 * row-major). Layout: for each k16 step ki and n8 tile ni: 2 registers at
 * b[(ki * (WN/8) + ni) * 2]. One ldmatrix.x4 per 16(n) x 16(k) block yields two
 * n8 tiles: lane l gives row n = l%8 + 8*(l/16), column k = 8*((l/8)%2). */
CKT_INLINE CKT_DEVICE void ckt_warp_load_b_nk(uint32_t *b, ckt_smem_tile s, int n0, int k0, int WK,
                                              int WN)
{
    int lane = (int)ckt_lane_id();
    CKT_UNROLL
    for (int ki = 0; ki < WK / 16; ki++)
        CKT_UNROLL
        for (int nj = 0; nj < WN / 16; nj++) {
            uint32_t r[4];
            ckt_ldmatrix_x4(r, ckt_smem_tile_ptr(s, n0 + nj * 16 + (lane & 7) + 8 * (lane >> 4),
                                                 k0 + ki * 16 + 8 * ((lane >> 3) & 1)));
            ckt__warp_put_b_pair(b, r, ki, nj, WN);
        }
}

/* b[] <- B[k0 .. +WK][n0 .. +WN] read from a row-major [k][n] shared tile with
 * ldmatrix.trans (same register layout as ckt_warp_load_b_nk): lane l gives
 * row k = l%8 + 8*((l/8)%2), column n = 8*(l/16). */
CKT_INLINE CKT_DEVICE void ckt_warp_load_b_kn(uint32_t *b, ckt_smem_tile s, int k0, int n0, int WK,
                                              int WN)
{
    int lane = (int)ckt_lane_id();
    CKT_UNROLL
    for (int ki = 0; ki < WK / 16; ki++)
        CKT_UNROLL
        for (int nj = 0; nj < WN / 16; nj++) {
            uint32_t r[4];
            ckt_ldmatrix_x4_trans(r, ckt_smem_tile_ptr(s, k0 + ki * 16 + (lane & 7) + 8 * ((lane >> 3) & 1),
                                                       n0 + nj * 16 + 8 * (lane >> 4)));
            ckt__warp_put_b_pair(b, r, ki, nj, WN);
        }
}

/* a[] <- the WM x WN fp32 accumulator acc rounded to fp16/bf16, as the A
 * operand (WM x WK, WK = WN) of a following warp MMA: the C layout of n8
 * tiles 2k and 2k+1 is the A layout of k-step k, so no data crosses lanes
 * (the P = softmax(S) -> P V step of attention):
 *   a[(mi*(WN/16) + k)*4 + {0,1,2,3}] = {C(2k)[0..1], C(2k)[2..3], C(2k+1)[0..1], C(2k+1)[2..3]} */
CKT_INLINE CKT_DEVICE void ckt_warp_acc_to_a(uint32_t *a, const float *acc, int WM, int WN, int bf16)
{
    CKT_UNROLL
    for (int mi = 0; mi < WM / 16; mi++)
        CKT_UNROLL
        for (int k = 0; k < WN / 16; k++) {
            const float *c0 = &acc[(mi * (WN / 8) + 2 * k) * 4], *c1 = c0 + 4;
            uint32_t *d = &a[(mi * (WN / 16) + k) * 4];
            if (bf16) {
                d[0] = ckt_pack2_bf16(c0[0], c0[1]);
                d[1] = ckt_pack2_bf16(c0[2], c0[3]);
                d[2] = ckt_pack2_bf16(c1[0], c1[1]);
                d[3] = ckt_pack2_bf16(c1[2], c1[3]);
            } else {
                d[0] = ckt_pack2_f16(c0[0], c0[1]);
                d[1] = ckt_pack2_f16(c0[2], c0[3]);
                d[2] = ckt_pack2_f16(c1[0], c1[1]);
                d[3] = ckt_pack2_f16(c1[2], c1[3]);
            }
        }
}

/* >>warp MMA */

/* acc[WM x WN] += A[WM x WK] * B[WK x WN]; bf16 selects bf16 inputs (else
 * fp16); bf16 = CKT_MMA_E4M3: fp8 e4m3 inputs, mma.sync m16n8k32, WK in
 * 16-bit units (two fp8 each; ckt/tile/fp8.h), same register layout. */
CKT_INLINE CKT_DEVICE void ckt_warp_mma(float *acc, const uint32_t *a, const uint32_t *b, int WM,
                                        int WN, int WK, int bf16)
{
    CKT_UNROLL
    for (int ki = 0; ki < WK / 16; ki++)
        CKT_UNROLL
        for (int mi = 0; mi < WM / 16; mi++)
            CKT_UNROLL
            for (int ni = 0; ni < WN / 8; ni++) {
                float *c = &acc[(mi * (WN / 8) + ni) * 4];
                const uint32_t *af = &a[(mi * (WK / 16) + ki) * 4];
                const uint32_t *bf = &b[(ki * (WN / 8) + ni) * 2];
                if (bf16 == CKT_MMA_E4M3)
                    ckt_mma_m16n8k32_e4m3(c, af, bf, c);
                else if (bf16)
                    ckt_mma_m16n8k16_bf16(c, af, bf, c);
                else
                    ckt_mma_m16n8k16_f16(c, af, bf, c);
            }
}

#elif defined(CKT_HAS_MFMA)

/* >>CDNA: MFMA 32x32x8 (layouts in ckt/arch/mma.h), with i = lane % 32 and
 * h = lane / 32: A fragment = A[i][4h .. 4h+3], B fragment = B[4h .. 4h+3][i],
 * accumulator register r = D[8 (r/4) + 4h + r%4][i]. A warp tile holds
 * (WM/32) x (WN/32) accumulator tiles of 16 registers, row-major. */

CKT_INLINE CKT_HOST_DEVICE void ckt_warp_acc_coord(int *row, int *col, int i, int lane, int WM,
                                                   int WN)
{
    int tile = i >> 4, r = i & 15, tiles_n = WN / 32;
    (void)WM;
    *row = (tile / tiles_n) * 32 + 8 * (r >> 2) + 4 * (lane >> 5) + (r & 3);
    *col = (tile % tiles_n) * 32 + (lane & 31);
}

/* The MFMA operand of one 32-row tile and k8 step whose k runs along the
 * shared rows (A as [m][k], B as [n][k]): lane l reads the 8 bytes of row
 * row0 + l%32 at column k0 + 4 (l/32), i.e. {k, k+1}, {k+2, k+3}. */
CKT_INLINE CKT_DEVICE void ckt__mfma_read_k4(uint32_t *dst, ckt_smem_tile s, int row0, int k0, int lane)
{
    const uint32_t *src = (const uint32_t *)ckt_smem_tile_ptr(s, row0 + (lane & 31), k0 + 4 * (lane >> 5));
    dst[0] = src[0];
    dst[1] = src[1];
}

/* a[] <- A[row0 .. +WM][k0 .. +WK] of a row-major [m][k] shared tile: one
 * 8-byte LDS read per (m32 tile mi, k8 step ki), at a[(mi * (WK/8) + ki) * 2]. */
CKT_INLINE CKT_DEVICE void ckt_warp_load_a(uint32_t *a, ckt_smem_tile s, int row0, int k0, int WM,
                                           int WK)
{
    int lane = (int)ckt_lane_id();
    CKT_UNROLL
    for (int mi = 0; mi < WM / 32; mi++)
        CKT_UNROLL
        for (int ki = 0; ki < WK / 8; ki++) {
            ckt__mfma_read_k4(&a[(mi * (WK / 8) + ki) * 2], s, row0 + mi * 32, k0 + ki * 8, lane);
        }
}

/* The MFMA operand of one 32-wide tile and k8 step whose k runs down the
 * shared rows (A as [k][m], B as [k][n]): lane l gathers rows k0 + 4 (l/32)
 * .. +3 of column col0 + l%32 with 2-byte reads. */
CKT_INLINE CKT_DEVICE void ckt__mfma_gather_k4(uint32_t *dst, ckt_smem_tile s, int k0, int col0, int lane)
{
    int k = k0 + 4 * (lane >> 5), c = col0 + (lane & 31);
    uint32_t e0 = *ckt_smem_tile_ptr(s, k, c), e1 = *ckt_smem_tile_ptr(s, k + 1, c);
    uint32_t e2 = *ckt_smem_tile_ptr(s, k + 2, c), e3 = *ckt_smem_tile_ptr(s, k + 3, c);
    dst[0] = e0 | (e1 << 16);
    dst[1] = e2 | (e3 << 16);
}

/* a[] <- A[m0 .. +WM][k0 .. +WK] from a [k][m] shared tile (A^T stored
 * row-major); same register layout as ckt_warp_load_a. */
CKT_INLINE CKT_DEVICE void ckt_warp_load_a_km(uint32_t *a, ckt_smem_tile s, int k0, int m0, int WM, int WK)
{
    int lane = (int)ckt_lane_id();
    CKT_UNROLL
    for (int mi = 0; mi < WM / 32; mi++)
        CKT_UNROLL
        for (int ki = 0; ki < WK / 8; ki++)
            ckt__mfma_gather_k4(&a[(mi * (WK / 8) + ki) * 2], s, k0 + ki * 8, m0 + mi * 32, lane);
}

/* b[] <- B[k0 .. +WK][n0 .. +WN] from an [n][k] shared tile: contiguous k, one
 * 8-byte read per (k8 step ki, n32 tile ni), at b[(ki * (WN/32) + ni) * 2]. */
CKT_INLINE CKT_DEVICE void ckt_warp_load_b_nk(uint32_t *b, ckt_smem_tile s, int n0, int k0, int WK,
                                              int WN)
{
    int lane = (int)ckt_lane_id();
    CKT_UNROLL
    for (int ki = 0; ki < WK / 8; ki++)
        CKT_UNROLL
        for (int ni = 0; ni < WN / 32; ni++) {
            ckt__mfma_read_k4(&b[(ki * (WN / 32) + ni) * 2], s, n0 + ni * 32, k0 + ki * 8, lane);
        }
}

/* b[] <- B[k0 .. +WK][n0 .. +WN] from a row-major [k][n] shared tile: the four
 * k values of a lane are in four rows, gathered with 2-byte reads. */
CKT_INLINE CKT_DEVICE void ckt_warp_load_b_kn(uint32_t *b, ckt_smem_tile s, int k0, int n0, int WK,
                                              int WN)
{
    int lane = (int)ckt_lane_id();
    CKT_UNROLL
    for (int ki = 0; ki < WK / 8; ki++)
        CKT_UNROLL
        for (int ni = 0; ni < WN / 32; ni++)
            ckt__mfma_gather_k4(&b[(ki * (WN / 32) + ni) * 2], s, k0 + ki * 8, n0 + ni * 32, lane);
}

/* acc[WM x WN] += A[WM x WK] * B[WK x WN]; bf16 selects bf16 inputs;
 * bf16 = CKT_MMA_E4M3: fp8 inputs (gfx940 32x32x16, read as e4m3 FNUZ:
 * ckt/tile/fp8.h), WK in 16-bit units (two fp8 each), same register layout. */
CKT_INLINE CKT_DEVICE void ckt_warp_mma(float *acc, const uint32_t *a, const uint32_t *b, int WM,
                                        int WN, int WK, int bf16)
{
    CKT_UNROLL
    for (int ki = 0; ki < WK / 8; ki++)
        CKT_UNROLL
        for (int mi = 0; mi < WM / 32; mi++)
            CKT_UNROLL
            for (int ni = 0; ni < WN / 32; ni++) {
                float *c = &acc[(mi * (WN / 32) + ni) * 16];
                const uint32_t *af = &a[(mi * (WK / 8) + ki) * 2];
                const uint32_t *bf = &b[(ki * (WN / 32) + ni) * 2];
                if (bf16 == CKT_MMA_E4M3)
                    ckt_mfma_32x32x16_e4m3(c, af, bf, c);
                else if (bf16)
                    ckt_mfma_32x32x8_bf16(c, af, bf, c);
                else
                    ckt_mfma_32x32x8_f16(c, af, bf, c);
            }
}

#endif /* CKT_HAS_MMA_SYNC / CKT_HAS_MFMA */
#if defined(CKT_HAS_MMA_SYNC) || defined(CKT_HAS_MFMA)

/* >>accumulators to shared memory (either instruction) */

/* s[row0 + r][col0 + c] <- the WM x WN fp32 accumulator acc of this lane,
 * scaled by mul and rounded to fp16 / bf16 (bf16 != 0): how a warp hands an
 * MMA result to the next MMA of another warp layout (attention backward: P^T,
 * dS^T) or to a vectorized store. mma.sync: register pairs are adjacent
 * columns, stored as one 32-bit word; MFMA: one 16-bit store each. */
CKT_INLINE CKT_DEVICE void ckt_warp_store_acc_b16(ckt_smem_tile s, const float *acc, int row0, int col0, int WM,
                                                  int WN, float mul, int bf16)
{
    int lane = (int)ckt_lane_id();
#if defined(CKT_HAS_MMA_SYNC) && defined(CKT_HAS_STMATRIX)
    /* one stmatrix x4 per 16x16 block: lane l addresses row l%16, column
     * 8 (l/16) of the block; its registers are its accumulators of the
     * block's two m16n8 tiles (ckt/arch/mma.h) */
    if (WN % 16 == 0) {
        CKT_UNROLL
        for (int mi = 0; mi < WM / 16; mi++)
            CKT_UNROLL
            for (int nj = 0; nj < WN / 16; nj++) {
                const float *c0 = &acc[(mi * (WN / 8) + 2 * nj) * 4], *c1 = c0 + 4;
                uint32_t r[4];
                if (bf16) {
                    r[0] = ckt_pack2_bf16(c0[0] * mul, c0[1] * mul);
                    r[1] = ckt_pack2_bf16(c0[2] * mul, c0[3] * mul);
                    r[2] = ckt_pack2_bf16(c1[0] * mul, c1[1] * mul);
                    r[3] = ckt_pack2_bf16(c1[2] * mul, c1[3] * mul);
                } else {
                    r[0] = ckt_pack2_f16(c0[0] * mul, c0[1] * mul);
                    r[1] = ckt_pack2_f16(c0[2] * mul, c0[3] * mul);
                    r[2] = ckt_pack2_f16(c1[0] * mul, c1[1] * mul);
                    r[3] = ckt_pack2_f16(c1[2] * mul, c1[3] * mul);
                }
                ckt_stmatrix_x4(ckt_smem_tile_ptr(s, row0 + mi * 16 + (lane & 15), col0 + nj * 16 + 8 * (lane >> 4)), r);
            }
        return;
    }
#endif
#if CKT_WARP_ACC_PAIRS
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(WM, WN); i += 2) {
        int r, c;
        ckt_warp_acc_coord(&r, &c, i, lane, WM, WN);
        const float x0 = acc[i] * mul, x1 = acc[i + 1] * mul;
        *(uint32_t *)ckt_smem_tile_ptr(s, row0 + r, col0 + c) = bf16 ? ckt_pack2_bf16(x0, x1) : ckt_pack2_f16(x0, x1);
    }
#else
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(WM, WN); i++) {
        int r, c;
        ckt_warp_acc_coord(&r, &c, i, lane, WM, WN);
        const float x = acc[i] * mul;
        *ckt_smem_tile_ptr(s, row0 + r, col0 + c) = bf16 ? ckt_bf16_from_f32(x).bits : ckt_f16_from_f32(x).bits;
    }
#endif
}

/* >>accumulators into an fp32 matrix in global memory, by atomic addition
 *
 * An "accumulator-ordered" fp32 matrix is stored in blocks of
 * CKT_ACC_BLOCK_ROWS x CKT_ACC_BLOCK_COLS laid out as the MMA accumulators
 * hold them, so that each lane's registers of one MMA tile are contiguous:
 * with mma.sync a 16x8 block is 32 lanes x 4 floats (lane l's c[0..3] at
 * 4 l .. 4 l + 3: one 16-byte vector reduction, the warp's 512 bytes
 * contiguous); blocks are row-major over the matrix. With MFMA the blocks
 * are 1x1 (the natural row-major order: CDNA has no vector fp32 atomics).
 * The matrix has a multiple of CKT_ACC_BLOCK_ROWS rows and its row length
 * ld is a multiple of CKT_ACC_BLOCK_COLS (pad both); ckt_acc_offset gives
 * where element (r, c) lives. */
#if defined(CKT_HAS_MMA_SYNC)
#define CKT_ACC_BLOCK_ROWS 16
#define CKT_ACC_BLOCK_COLS 8
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_acc_offset(int64_t ld, int r, int c)
{
    return ((int64_t)(r >> 4) * (ld >> 3) + (c >> 3)) * 128 + (((r & 7) << 2) | ((c & 7) >> 1)) * 4 +
           ((r >> 3) & 1) * 2 + (c & 1);
}
#else
#define CKT_ACC_BLOCK_ROWS 1
#define CKT_ACC_BLOCK_COLS 1
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_acc_offset(int64_t ld, int r, int c) { return (int64_t)r * ld + c; }
#endif

/* One 4-float vector (mma.sync) or element (MFMA, the emulator's cdna
 * profile) of an accumulator tile into m: added atomically (add) or stored. */
CKT_INLINE CKT_DEVICE void ckt__acc_put_f32x4(float *p, const float *c, const int add)
{
    if (add)
        ckt_atomic_add_f32x4(p, c[0], c[1], c[2], c[3]);
    else
        ckt_buffer_store_u32x4(p, 16, 0,
                               ckt_u32x4_make(ckt_bits_from_f32(c[0]), ckt_bits_from_f32(c[1]),
                                              ckt_bits_from_f32(c[2]), ckt_bits_from_f32(c[3])));
}

CKT_INLINE CKT_DEVICE void ckt__acc_put_f32(float *p, float x, const int add)
{
    if (add)
        ckt_atomic_add_f32(p, x);
    else
        *p = x;
}

/* The walk of ckt_warp_red_acc_f32 and ckt_warp_store_acc_f32 (add: a
 * constant where they call it): this lane's WM x WN accumulator tile at
 * (row0, col0) of m, whole blocks where they start inside the nrows x
 * ncols window (mma.sync), elements inside it (MFMA). */
CKT_INLINE CKT_DEVICE void ckt__warp_put_acc_f32(float *m, int64_t ld, const float *acc, int row0, int col0, int WM,
                                                 int WN, int nrows, int ncols, const int add)
{
    int lane = (int)ckt_lane_id();
#if defined(CKT_HAS_MMA_SYNC)
    /* the whole warp tile: no test a vector. The adds only: the stores
     * keep the code they had before they shared this walk (the backward's
     * sm_90a cubins byte for byte) */
    if (add && nrows >= WM && ncols >= WN) {
        float *blk = m + ckt_acc_offset(ld, row0, col0) + 4 * lane;
        CKT_UNROLL
        for (int mi = 0; mi < WM / 16; mi++)
            CKT_UNROLL
            for (int ni = 0; ni < WN / 8; ni++)
                ckt__acc_put_f32x4(blk + ckt_acc_offset(ld, mi * 16, ni * 8), &acc[(mi * (WN / 8) + ni) * 4], add);
        return;
    }
    CKT_UNROLL
    for (int mi = 0; mi < WM / 16; mi++) {
        if (mi * 16 >= nrows)
            break;
        float *blk = m + ckt_acc_offset(ld, row0 + mi * 16, col0) + 4 * lane;
        CKT_UNROLL
        for (int ni = 0; ni < WN / 8; ni++)
            if (ni * 8 < ncols)
                ckt__acc_put_f32x4(blk + ni * 128, &acc[(mi * (WN / 8) + ni) * 4], add);
    }
#else
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(WM, WN); i++) {
        int r, c;
        ckt_warp_acc_coord(&r, &c, i, lane, WM, WN);
        if (r < nrows && c < ncols)
            ckt__acc_put_f32(m + ckt_acc_offset(ld, row0 + r, col0 + c), acc[i], add);
    }
#endif
}

/* m[(row0 + r, col0 + c)] += acc (atomically, element by element) for this
 * lane's WM x WN accumulator tile at (row0, col0) of an accumulator-ordered
 * matrix m (row length ld, 16-byte aligned); row0 and col0 are multiples of
 * the block. Whole blocks are added where they start inside the nrows x
 * ncols window of the tile (the rest of such a block is padding of the
 * matrix: add there only zeros, or never read it); MFMA: elements r < nrows,
 * c < ncols. Each element is added by one fixed lane, in program order. */
CKT_INLINE CKT_DEVICE void ckt_warp_red_acc_f32(float *m, int64_t ld, const float *acc, int row0, int col0, int WM,
                                                int WN, int nrows, int ncols)
{
    ckt__warp_put_acc_f32(m, ld, acc, row0, col0, WM, WN, nrows, ncols, 1);
}

/* m[(row0 + r, col0 + c)] = acc: ckt_warp_red_acc_f32's tile and blocks,
 * stored (16-byte vectors on mma.sync) instead of added. */
CKT_INLINE CKT_DEVICE void ckt_warp_store_acc_f32(float *m, int64_t ld, const float *acc, int row0, int col0,
                                                  int WM, int WN, int nrows, int ncols)
{
    ckt__warp_put_acc_f32(m, ld, acc, row0, col0, WM, WN, nrows, ncols, 0);
}

#endif


#endif /* CKT_TILE_MMA_H */
