/* ckt/tile/fp8.h — fp8 (e4m3) operands of the warp MMA: the helpers that
 * differ from the 16-bit path, on mma.sync m16n8k32 (NVIDIA sm_89+) and on
 * MFMA 32x32x16 (AMD gfx940; layouts in ckt/arch/mma.h).
 *
 * Shared tiles stay tiles of 16-bit units (ckt_smem_tile): an fp8 row of C
 * bytes is C/2 units, and the existing loads of the 16-bit path give the
 * fp8 fragments unchanged: on mma.sync the ldmatrix loads (ckt_warp_load_a,
 * ckt_warp_load_b_nk) of a 16-unit k-step are the m16n8k32 A and B
 * fragments; on MFMA the 8-byte reads of a k8-unit step are the 32x32x16
 * ones. Call ckt_warp_mma with kind CKT_MMA_E4M3 and WK in 16-bit units
 * (16 units = one k32 step of mma.sync, 8 units = one k16 step of MFMA).
 *
 * What differs: P = softmax(S) as an operand of P V. Its fp32 accumulator
 * does not hold the keys a lane's fp8 operand wants. Rather than shuffle,
 * both operands use the same permuted key order (a sum over keys does not
 * care): ckt_e4m3_key_of(k') is the key at position k'.
 *
 * mma.sync (S = Q K^T, O += P V): S's accumulator holds keys 2t, 2t+1 of
 * each n8 tile in lane (g, t); the k32 A fragment wants keys 4t .. 4t+3.
 * Within each 16 keys:
 *     k' = 4t + j   <->   key = 2t + (j & 1) + 8 (j >> 1)        (t, j in 0..3)
 * ckt_warp_acc_to_a_e4m3 packs P in that order without leaving the lane;
 * ckt_block_transpose_v_e4m3 writes V^T (an [n = d][k = key'] tile) in the
 * same order, so that ckt_warp_load_b_nk reads its B fragments (sm_90 has
 * no 8-bit ldmatrix.trans).
 *
 * MFMA (CDNA computes transposed: S^T = K Q^T, O^T += V^T P^T): S^T's
 * accumulator register r of lane l holds key 8 (r/4) + 4 (l/32) + r%4; the
 * k16 B fragment of P^T wants keys 8 (l/32) .. +7 of a step. Within each
 * 16 keys, bits 2 and 3 of the key swap:
 *     k' = 8h + e   <->   key = 4h + (e & 3) + 8 (e >> 2)        (h = l/32, e in 0..7)
 * so registers 8 ks .. 8 ks + 7 are step ks's B fragment as they stand
 * (ckt_warp_acc_to_b_e4m3), and ckt_warp_load_a_vt_e4m3 gathers V^T's A
 * fragment from V in the same order, a byte a key (no transposed copy).
 * gfx940's fp8 is e4m3 FNUZ: an OCP byte reads as half its value, -0
 * (0x80) as NaN (ckt/arch/numeric.h). So the operands are OCP bytes with
 * each -0 made +0 (ckt_warp_frag_e4m3_fnuz on loaded fragments; P has none),
 * and a product of two carries CKT_E4M3_MMA_OPERAND_SCALE squared = 1/4,
 * which the caller folds into its scales.
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
        const uint32_t w[4] = {w0, w1, w2, w3};
        uint32_t x[4];
        ckt_transpose_bytes_4x4(x, w);
        CKT_UNROLL
        for (int i = 0; i < 4; i++) /* Vt[d + i][k' = 4 kq .. 4 kq + 3] */
            *(uint32_t *)ckt_smem_tile_ptr(vt, d + i, 2 * kq) = x[i];
    }
}

/* What the fp8 MMA makes of an OCP e4m3 operand's value: mma.sync reads
 * it as is. */
#define CKT_E4M3_MMA_OPERAND_SCALE 1.0f

#elif defined(CKT_HAS_MFMA)

/* What the fp8 MMA makes of an OCP e4m3 operand's value: gfx940's MFMA
 * reads the byte as FNUZ, half the value (ckt/arch/numeric.h). */
#define CKT_E4M3_MMA_OPERAND_SCALE 0.5f

/* The key of permuted position kp: bits 2 and 3 swapped (the top). */
CKT_INLINE CKT_HOST_DEVICE int ckt_e4m3_key_of(int kp)
{
    return (kp & ~12) | ((kp & 4) << 1) | ((kp & 8) >> 1);
}

/* f[0 .. n) <- the same fp8 fragment registers with every -0 byte made
 * +0: OCP bytes as gfx940's FNUZ MFMA may read them (ckt_e4m3x4_fnuz_operand,
 * four ops a register). -0 is common in quantized data. */
CKT_INLINE CKT_DEVICE void ckt_warp_frag_e4m3_fnuz(uint32_t *f, int n)
{
    CKT_UNROLL
    for (int i = 0; i < n; i++)
        f[i] = ckt_e4m3x4_fnuz_operand(f[i]);
}

/* b[0..1] <- the B fragment of k16 step ks (16 ks .. 16 ks + 15 in the
 * permuted key order) of P^T = the fp32 accumulator acc of S^T (WN keys x
 * 32 queries, tiles of 32 keys) times mul, both >= 0 (P and its scale),
 * rounded to OCP e4m3 (ckt_pack4_e4m3_pos: ckt_pack4_e4m3's bits without
 * its branches; never -0): registers 8 ks .. 8 ks + 7 of this lane, in
 * place (the top). */
CKT_INLINE CKT_DEVICE void ckt_warp_acc_to_b_e4m3(uint32_t b[2], const float *acc, int ks, float mul)
{
    const float *p = &acc[8 * ks];
    b[0] = ckt_pack4_e4m3_pos(p[0] * mul, p[1] * mul, p[2] * mul, p[3] * mul);
    b[1] = ckt_pack4_e4m3_pos(p[4] * mul, p[5] * mul, p[6] * mul, p[7] * mul);
}

/* a[] <- the A fragments of V^T[c0 .. c0 + WM][k0 .. k0 + 16] (rows: V's
 * columns; k: keys k0 .. k0 + 15, k0 a multiple of 16, in the permuted
 * order) from v, the row-major [key][column] byte tile (rows of 16-bit
 * units), -0 made +0: for m32 tile mi, a[2 mi .. 2 mi + 1] of lane l =
 * V[k0 + 4h + {0, 1, 2, 3}, k0 + 8 + 4h + {0, 1, 2, 3}][c0 + 32 mi + l % 32],
 * h = l / 32, a byte a read (a lane's bytes lie in 8 rows; the 32 lanes of
 * a row read 32 adjacent bytes). */
CKT_INLINE CKT_DEVICE void ckt_warp_load_a_vt_e4m3(uint32_t *a, ckt_smem_tile v, int k0, int c0, int WM)
{
    const int lane = (int)ckt_lane_id(), key = k0 + 4 * (lane >> 5);
    CKT_UNROLL
    for (int mi = 0; mi < WM / 32; mi++) {
        const int c = c0 + 32 * mi + (lane & 31);
        CKT_UNROLL
        for (int w = 0; w < 2; w++) { /* keys key + 8 w .. + 3 */
            uint32_t x = 0;
            CKT_UNROLL
            for (int e = 0; e < 4; e++)
                x |= (uint32_t)((const uint8_t *)ckt_smem_tile_ptr(v, key + 8 * w + e, c >> 1))[c & 1] << (8 * e);
            a[2 * mi + w] = ckt_e4m3x4_fnuz_operand(x);
        }
    }
}

#endif /* CKT_HAS_MMA_SYNC / CKT_HAS_MFMA */
#ifndef CKT_E4M3_MMA_OPERAND_SCALE /* no warp MMA: nothing runs, the launchers refuse */
#define CKT_E4M3_MMA_OPERAND_SCALE 1.0f
#endif
#endif /* CKT_TILE_FP8_H */
