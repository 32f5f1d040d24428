/* ckt/arch/mma.h — warp matrix instructions, with the hardware's register
 * (fragment) layouts: mma.sync m16n8k16 and ldmatrix on NVIDIA, MFMA on AMD
 * CDNA. Included by ckt/arch/arch.h; the implementations live in the backend
 * headers (ckt/arch/nvidia.h, ckt/arch/amd.h, ckt/arch/cpu/mma_nv.h,
 * ckt/arch/cpu/mfma_cdna.h).
 *
 * The CPU emulator computes each lane's result from the operand registers of
 * all lanes exactly as the layouts below say, so a kernel that puts an element
 * in the wrong register fails on the CPU as it fails on the GPU.
 *
 * Feature macros, defined to 1 where the instructions exist:
 *   CKT_HAS_MMA_SYNC  NVIDIA (sm_80 and newer) and the emulator's nv profile
 *   CKT_HAS_MFMA      AMD CDNA (gfx90a, gfx940) and the emulator's cdna profile
 *   CKT_HAS_MFMA_FP8  the fp8 MFMA (e4m3 FNUZ): a gfx940-942 device pass and the
 *                     emulator's cdna profile
 *
 *   #if CKT_HAS_MMA_SYNC
 *       ckt_mma_m16n8k16_f16(acc, a, b, acc);
 *   #elif CKT_HAS_MFMA
 *       ckt_mfma_32x32x8_f16(acc, a, b, acc);
 *   #endif
 *
 * Rules for every call: all lanes of the warp make it together (no divergence,
 * no exited lanes), d may be the same array as c (accumulate in place), and
 * 16-bit elements travel packed two per uint32_t with the lower-indexed element
 * in the low half: ckt_pack_f16x2(lo, hi), ckt_pack_bf16x2(lo, hi). Products
 * are accumulated in fp32. Below, M[r][c0..c1] means the packed pair
 * {M[r][c0], M[r][c1]}, and "lane" is ckt_lane_id().
 *
 * >>mma.sync m16n8k16 (NVIDIA)  D(16x8) = A(16x16) * B(16x8) + C(16x8)
 *   void ckt_mma_m16n8k16_f16 (float d[4], const uint32_t a[4], const uint32_t b[2],
 *                              const float c[4]);
 *   void ckt_mma_m16n8k16_bf16(same, bf16 inputs);
 *   PTX: mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32.
 *   Layout from the PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating
 *   point type" (figures "MMA .m16n8k16 fragment layout for matrix A / B /
 *   accumulator matrix C/D"), with g = lane / 4 (groupID) and t = lane % 4
 *   (threadID_in_group):
 *     a[0] = A[g  ][2t   .. 2t+1]     a[1] = A[g+8][2t   .. 2t+1]
 *     a[2] = A[g  ][2t+8 .. 2t+9]     a[3] = A[g+8][2t+8 .. 2t+9]
 *     b[0] = {B[2t][g],   B[2t+1][g]} b[1] = {B[2t+8][g], B[2t+9][g]}
 *     c[0], c[1] = C[g][2t], C[g][2t+1]    c[2], c[3] = C[g+8][2t], C[g+8][2t+1]
 *
 * >>mma.sync m16n8k32 e4m3 (NVIDIA sm_89+; CKT_HAS_MMA_FP8 in a device pass
 *   for such a target and on the emulator's nv profile)  D(16x8) = A(16x32) * B(32x8) + C
 *   void ckt_mma_m16n8k32_e4m3(float d[4], const uint32_t a[4], const uint32_t b[2],
 *                              const float c[4]);
 *   PTX: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32; fp8 elements
 *   four per register, the lowest k in the low byte (PTX ISA, "Matrix
 *   Fragments for mma.m16n8k32"):
 *     a[0] = A[g  ][4t    .. 4t+3]    a[1] = A[g+8][4t    .. 4t+3]
 *     a[2] = A[g  ][4t+16 .. 4t+19]   a[3] = A[g+8][4t+16 .. 4t+19]
 *     b[0] = B[4t .. 4t+3][g]         b[1] = B[4t+16 .. 4t+19][g]
 *     c as m16n8k16.
 *   Viewed as 16-bit units (two fp8 each), these are exactly m16n8k16's
 *   A and B fragments of a 16x16-unit tile: ldmatrix (non-trans) of a
 *   row-major [m][k] or [n][k] byte tile gives them unchanged.
 *
 * >>ldmatrix m8n8 b16 (NVIDIA)  1, 2 or 4 8x8 matrices of 16-bit elements
 *   void ckt_ldmatrix_x1(uint32_t r[1], const void *row);   and _x1_trans
 *   void ckt_ldmatrix_x2(uint32_t r[2], const void *row);   and _x2_trans
 *   void ckt_ldmatrix_x4(uint32_t r[4], const void *row);   and _x4_trans
 *   From the PTX ISA, "Warp-level matrix load instruction: ldmatrix": every
 *   lane passes one address; lane 8j+i's is the start of row i of matrix Mj
 *   (16 bytes in shared memory, 16-byte aligned, rows need not be adjacent).
 *   x1 reads the addresses of lanes 0-7, x2 of lanes 0-15, x4 of all 32; the
 *   others are ignored. "Each thread in a warp loads fragments of a row ... a
 *   group of four threads loads an entire row"; .trans loads the matrix
 *   column-major:
 *     plain  r[j] = Mj[lane/4][2(lane%4) .. 2(lane%4)+1]
 *     trans  r[j] = {Mj[2(lane%4)][lane/4], Mj[2(lane%4)+1][lane/4]}
 *   Hence, for a row-major 16x16 tile T (lane l passing &T[l%16][8(l/16)]):
 *   ckt_ldmatrix_x4 gives the mma A fragment of T; for a row-major K x N tile
 *   of B (lane l passing &B[k0 + l%16][n0 + 8(l/16)]), ckt_ldmatrix_x4_trans
 *   gives b[0], b[1] of columns n0..n0+7 in r[0], r[1] and of n0+8..n0+15 in
 *   r[2], r[3].
 *
 * >>stmatrix m8n8 b16 (CKT_HAS_STMATRIX: NVIDIA sm_90 and the emulator's nv
 *   profile) the inverse of ldmatrix x4
 *   void ckt_stmatrix_x4(void *row, const uint32_t r[4]);
 *   Lane 8j+i passes the start of row i of matrix Mj (16 bytes in shared
 *   memory, 16-byte aligned); lane l's r[j] = Mj[lane/4][2(lane%4) .. +1] is
 *   stored there. With lane l passing &T[l%16][8(l/16)] of a row-major 16x16
 *   tile T, r = the mma A fragment of T: a lane's accumulators of two
 *   neighbouring m16n8 tiles, packed to 16 bits, {c0c1 of tile 0, c2c3 of
 *   tile 0, c0c1 of tile 1, c2c3 of tile 1}, store as one instruction.
 *   void ckt_stmatrix_x4_trans(void *row, const uint32_t r[4]);
 *   The same registers, each Mj stored transposed: lane 8j+i passes row i of
 *   Mj^T (column i of Mj: 8 elements, 16 bytes). The backward's Hopper
 *   kernel stores dS^T's accumulators as dS this way.
 *
 * >>MFMA (AMD CDNA)  4 packed inputs per lane: a[0] = {k0, k0+1}, a[1] = {k0+2, k0+3}
 *   void ckt_mfma_32x32x8_f16  (float d[16], const uint32_t a[2], const uint32_t b[2],
 *                               const float c[16]);      v_mfma_f32_32x32x8f16
 *   void ckt_mfma_32x32x8_bf16 (same);                   v_mfma_f32_32x32x8bf16_1k
 *   void ckt_mfma_16x16x16_f16 (float d[4], const uint32_t a[2], const uint32_t b[2],
 *                               const float c[4]);       v_mfma_f32_16x16x16f16
 *   void ckt_mfma_16x16x16_bf16(same);                   v_mfma_f32_16x16x16bf16_1k
 *   Layouts from the AMD matrix instruction calculator and the "AMD matrix
 *   cores" lab notes (amd/amd-lab-notes, matrix-cores); the bf16_1k forms use
 *   the f16 layouts (AMD CDNA3 ISA, "Matrix Arithmetic Instructions").
 *   32x32x8: D(32x32) = A(32x8) * B(8x32) + C, with i = lane % 32, k0 = 4 (lane / 32):
 *     a = A[i][k0 .. k0+3]          b = B[k0 .. k0+3][i]
 *     d[r] = D[8 (r/4) + 4 (lane/32) + r%4][i]          r = 0..15
 *   16x16x16: D(16x16) = A(16x16) * B(16x16) + C, with i = lane % 16, k0 = 4 (lane / 16):
 *     a = A[i][k0 .. k0+3]          b = B[k0 .. k0+3][i]
 *     d[r] = D[4 (lane/16) + r][i]                      r = 0..3
 *
 * >>MFMA fp8 (AMD gfx940-942; CKT_HAS_MFMA_FP8)  8 fp8 per lane per operand,
 *   two registers, element e in byte e % 4 of register e / 4 (the builtins'
 *   64-bit operand, little-endian)
 *   void ckt_mfma_32x32x16_e4m3(float d[16], const uint32_t a[2], const uint32_t b[2],
 *                               const float c[16]);      v_mfma_f32_32x32x16_fp8_fp8
 *   void ckt_mfma_16x16x32_e4m3(float d[4], const uint32_t a[2], const uint32_t b[2],
 *                               const float c[4]);       v_mfma_f32_16x16x32_fp8_fp8
 *   The inputs are e4m3 FNUZ (bias 8, 0x80 NaN: ckt_f32_from_e4m3_fnuz), not
 *   OCP: an OCP byte reads as half its value, -0 (0x80) as NaN
 *   (ckt_e4m3x4_fnuz_operand clears it). Layout: the 16-bit shapes' with 8
 *   consecutive k a lane instead of 4 (AMD CDNA3 ISA, "Matrix Arithmetic
 *   Instructions", and CK's xdlops_gemm.hpp: mfma_f32_32x32x16f8f8 has
 *   k_per_blk 8 where 32x32x8f16 has 4, both "k reduction" over 2 input
 *   blocks of 32 lanes; 16x16x32f8f8 8 where 16x16x16f16 has 4, 4 blocks):
 *   32x32x16: i = lane % 32, k0 = 8 (lane / 32)
 *     a = A[i][k0 .. k0+7]          b = B[k0 .. k0+7][i]          d as 32x32x8
 *   16x16x32: i = lane % 16, k0 = 8 (lane / 16)
 *     a = A[i][k0 .. k0+7]          b = B[k0 .. k0+7][i]          d as 16x16x16
 *   Viewed as 16-bit units (two fp8 each), a k16 (k32) step of bytes is the
 *   16-bit shape's k8 (k16) step of units: the same 8-byte reads give it.
 */
#ifndef CKT_ARCH_MMA_H
#define CKT_ARCH_MMA_H

#include "ckt/arch/arch.h"

/* Two 16-bit elements in one register: lo in bits 0-15, hi in bits 16-31. */
CKT_INLINE CKT_HOST_DEVICE uint32_t ckt_pack_f16x2(ckt_f16 lo, ckt_f16 hi)
{
    return (uint32_t)lo.bits | ((uint32_t)hi.bits << 16);
}

CKT_INLINE CKT_HOST_DEVICE uint32_t ckt_pack_bf16x2(ckt_bf16 lo, ckt_bf16 hi)
{
    return (uint32_t)lo.bits | ((uint32_t)hi.bits << 16);
}

#endif /* CKT_ARCH_MMA_H */
