/* ckt/tile/fp8.h — fp8 (e4m3) operands of the warp MMA, mma.sync m16n8k32
 * (ckt/arch/mma.h): the helpers that differ from the 16-bit path.
 *
 * Shared tiles stay tiles of 16-bit units (ckt_smem_tile): an fp8 row of C
 * bytes is C/2 units, and the existing ldmatrix loads (ckt_warp_load_a,
 * ckt_warp_load_b_nk) of a 16-unit k-step give the m16n8k32 A and B
 * fragments unchanged (ckt/arch/mma.h). Call ckt_warp_mma with
 * kind CKT_MMA_E4M3 and WK in 16-bit units (16 units = one k32 step).
 *
 * What differs: P = softmax(S) as the A operand of P V. The fp32
 * accumulator of S holds keys 2t, 2t+1 of each n8 tile in lane (g, t); the
 * k32 A fragment wants keys 4t .. 4t+3. Rather than shuffle, both operands
 * use the same permuted key order (a sum over keys does not care), within
 * each 16 keys:
 *     k' = 4t + j   <->   key = 2t + (j & 1) + 8 (j >> 1)        (t, j in 0..3)
 * ckt_warp_acc_to_a_e4m3 packs P in that order without leaving the lane;
 * ckt_block_transpose_v_e4m3 writes V^T (an [n = d][k = key'] tile) in the
 * same order, so that ckt_warp_load_b_nk reads its B fragments (sm_90 has
 * no 8-bit ldmatrix.trans).
 */
#ifndef CKT_TILE_FP8_H
#define CKT_TILE_FP8_H

#include "ckt/tile/mma.h"

#if defined(CKT_HAS_MMA_SYNC)

/* The key of permuted position kp (ckt_block_transpose_v_e4m3's order). */
CKT_INLINE CKT_HOST_DEVICE int ckt_e4m3_key_of(int kp)
{
    return (kp & ~15) + 2 * ((kp & 15) >> 2) + (kp & 1) + 8 * ((kp >> 1) & 1);
}

/* a[] <- the WM x WN fp32 accumulator acc times mul, rounded to e4m3, as the
 * A operand of k32 steps over the permuted keys: for m16 tile mi and step ks
 * (keys 32 ks .. +31), a[(mi * (WN/32) + ks) * 4 + r] holds, from n8 tiles
 * T0..T3 = 4 ks .. 4 ks + 3 (c[] of ckt/arch/mma.h):
 *   r = 0: row g,   {T0 c0, T0 c1, T1 c0, T1 c1}    r = 1: row g+8, c2 c3 of T0, T1
 *   r = 2: row g,   {T2 c0, T2 c1, T3 c0, T3 c1}    r = 3: row g+8, c2 c3 of T2, T3 */
CKT_INLINE CKT_DEVICE void ckt_warp_acc_to_a_e4m3(uint32_t *a, const float *acc, int WM, int WN, float mul)
{
    CKT_UNROLL
    for (int mi = 0; mi < WM / 16; mi++)
        CKT_UNROLL
        for (int ks = 0; ks < WN / 32; ks++) {
            const float *t0 = &acc[(mi * (WN / 8) + 4 * ks) * 4], *t1 = t0 + 4, *t2 = t0 + 8, *t3 = t0 + 12;
            uint32_t *d = &a[(mi * (WN / 32) + ks) * 4];
            d[0] = ckt_pack4_e4m3(t0[0] * mul, t0[1] * mul, t1[0] * mul, t1[1] * mul);
            d[1] = ckt_pack4_e4m3(t0[2] * mul, t0[3] * mul, t1[2] * mul, t1[3] * mul);
            d[2] = ckt_pack4_e4m3(t2[0] * mul, t2[1] * mul, t3[0] * mul, t3[1] * mul);
            d[3] = ckt_pack4_e4m3(t2[2] * mul, t2[3] * mul, t3[2] * mul, t3[3] * mul);
        }
}

/* vt[d][k'] <- v[key(k')][d]: v the BN x DV byte tile (a tile of DV/2
 * 16-bit units a row), vt DV rows of BN bytes (BN/2 units), by
 * T threads (this one: tid): each work item moves 4 keys x 4 columns, four
 * 4-byte reads, a 4x4 byte transpose, four 4-byte writes. BN a multiple of
 * 16, DV of 4. The caller syncs the block before and after. */
CKT_INLINE CKT_DEVICE void ckt_block_transpose_v_e4m3(ckt_smem_tile vt, ckt_smem_tile v, int BN, int DV, int T,
                                                      int tid)
{
    const int quads = BN / 4; /* key quads {2t, 2t+1, 2t+8, 2t+9} of each 16 keys */
    CKT_UNROLL
    for (int item = tid; item < quads * (DV / 4); item += T) {
        const int kq = item % quads, d = 4 * (item / quads);
        const int key = 16 * (kq >> 2) + 2 * (kq & 3);
        /* V[key + {0, 1, 8, 9}][d .. d+3]: column d is unit d/2 of the row */
        const uint32_t w0 = *(const uint32_t *)ckt_smem_tile_ptr(v, key, d / 2);
        const uint32_t w1 = *(const uint32_t *)ckt_smem_tile_ptr(v, key + 1, d / 2);
        const uint32_t w2 = *(const uint32_t *)ckt_smem_tile_ptr(v, key + 8, d / 2);
        const uint32_t w3 = *(const uint32_t *)ckt_smem_tile_ptr(v, key + 9, d / 2);
        CKT_UNROLL
        for (int i = 0; i < 4; i++) { /* Vt[d + i][k' = 4 kq .. 4 kq + 3] */
            const uint32_t x = ((w0 >> (8 * i)) & 0xffu) | (((w1 >> (8 * i)) & 0xffu) << 8) |
                               (((w2 >> (8 * i)) & 0xffu) << 16) | (((w3 >> (8 * i)) & 0xffu) << 24);
            *(uint32_t *)ckt_smem_tile_ptr(vt, d + i, 2 * kq) = x;
        }
    }
}

#endif /* CKT_HAS_MMA_SYNC */
#endif /* CKT_TILE_FP8_H */
