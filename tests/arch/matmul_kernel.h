/* tests/arch/matmul_kernel.h — a shared-memory tiled matmul over the warp
 * matrix instructions, for tests/arch/matmul_test.cc and bench/emu_matmul.c:
 *
 *   C[M][N] = A[M][K] * B[K][N]     A, B row-major fp16, C row-major fp32
 *
 * M, N multiples of MM_BM = MM_BN = 64, K a multiple of MM_BK = 32; one
 * 128-thread block per 64x64 tile of C (grid N/64 x M/64). Each K step of 32
 * is copied global -> shared with ckt_cp_async_16 into one of two stages
 * while the other stage is multiplied (wait(1): the older group is ready).
 *
 *   nv profile / NVIDIA (CKT_HAS_MMA_SYNC): 4 warps in 2x2, 32x32 each = 2x4
 *     mma.sync m16n8k16; A fragments by ldmatrix_x4, B by ldmatrix_x4_trans.
 *   cdna profile / AMD (CKT_HAS_MFMA): 2 waves, 32x64 each = 2 MFMA 32x32x8
 *     tiles; fragments read from shared memory by the MFMA layout.
 *
 *   mm_params p = {a, b, c, M, N, K};
 *   ckt_rt_launch(CKT_KERNEL_REF(mm_kernel), mm_grid(M, N), mm_block(), 0, stream, &p);
 */
#ifndef CKT_TESTS_ARCH_MATMUL_KERNEL_H
#define CKT_TESTS_ARCH_MATMUL_KERNEL_H

#include "ckt/arch/arch.h"

#define MM_BM 64
#define MM_BN 64
#define MM_BK 32
#define MM_THREADS 128
#define MM_STAGES 2
/* Shared rows padded by 8 elements (16 bytes): rows stay 16-byte aligned for
 * cp.async and ldmatrix, and consecutive rows start in different banks. */
#define MM_A_LD (MM_BK + 8)
#define MM_B_LD (MM_BN + 8)

typedef struct mm_params {
    const ckt_f16 *a; /* [m][k] */
    const ckt_f16 *b; /* [k][n] */
    float *c;         /* [m][n] */
    int m, n, k;
} mm_params;

static inline ckt_dim3 mm_grid(int m, int n) { return ckt_dim3_make((unsigned)(n / MM_BN), (unsigned)(m / MM_BM), 1); }
static inline ckt_dim3 mm_block(void) { return ckt_dim3_make(MM_THREADS, 1, 1); }

/* Copies the K step kt of the block's A (64 x 32) and B (32 x 64) tiles into
 * shared stage sa, sb: 256 + 256 chunks of 16 bytes, two of each per thread. */
CKT_INLINE CKT_DEVICE void mm_load_stage(ckt_f16 *sa, ckt_f16 *sb, mm_params p, int m0, int n0, int kt)
{
    unsigned tid = ckt_thread_idx_x();
    for (unsigned c = tid; c < MM_BM * MM_BK / 8; c += MM_THREADS) {
        unsigned row = c / (MM_BK / 8), col = c % (MM_BK / 8) * 8;
        ckt_cp_async_16(&sa[row * MM_A_LD + col], &p.a[(size_t)(m0 + row) * p.k + kt * MM_BK + col], 16);
    }
    for (unsigned c = tid; c < MM_BK * MM_BN / 8; c += MM_THREADS) {
        unsigned row = c / (MM_BN / 8), col = c % (MM_BN / 8) * 8;
        ckt_cp_async_16(&sb[row * MM_B_LD + col], &p.b[(size_t)(kt * MM_BK + row) * p.n + n0 + col], 16);
    }
    ckt_cp_async_commit();
}

#if CKT_HAS_MMA_SYNC

/* Warp (wm, wn) owns C rows m0 + 32 wm .. +31, columns n0 + 32 wn .. +31:
 * acc[mi][ni] is the m16n8 tile (mi, ni) in the mma C/D layout. */
CKT_KERNEL_BOUNDS(mm_kernel, mm_params, p, MM_THREADS)
{
    CKT_SHARED_ARRAY(ckt_f16, sa, MM_STAGES * MM_BM * MM_A_LD);
    CKT_SHARED_ARRAY(ckt_f16, sb, MM_STAGES * MM_BK * MM_B_LD);
    const int m0 = (int)ckt_block_idx_y() * MM_BM, n0 = (int)ckt_block_idx_x() * MM_BN;
    const int ktiles = p.k / MM_BK;
    unsigned warp = ckt_warp_id(), lane = ckt_lane_id();
    unsigned wm = warp / 2, wn = warp % 2;
    float acc[2][4][4];
    for (int mi = 0; mi < 2; mi++)
        for (int ni = 0; ni < 4; ni++)
            for (int i = 0; i < 4; i++)
                acc[mi][ni][i] = 0.0f;

    mm_load_stage(sa, sb, p, m0, n0, 0);
    for (int kt = 0; kt < ktiles; kt++) {
        int s = kt % MM_STAGES;
        if (kt + 1 < ktiles)
            mm_load_stage(sa + (s ^ 1) * MM_BM * MM_A_LD, sb + (s ^ 1) * MM_BK * MM_B_LD, p, m0, n0, kt + 1);
        else
            ckt_cp_async_commit(); /* an empty group keeps "wait(1) = step kt ready" */
        ckt_cp_async_wait(1);
        ckt_block_sync();
        const ckt_f16 *A = sa + s * MM_BM * MM_A_LD, *B = sb + s * MM_BK * MM_B_LD;
        for (int kk = 0; kk < MM_BK; kk += 16) {
            uint32_t a[2][4], b[4][2];
            /* A 16x16 at (32 wm + 16 mi, kk): lane l passes row l % 16, column 8 (l / 16). */
            for (int mi = 0; mi < 2; mi++)
                ckt_ldmatrix_x4(a[mi], &A[(wm * 32 + mi * 16 + lane % 16) * MM_A_LD + kk + lane / 16 * 8]);
            /* B 16x16 at (kk, 32 wn + 16 nj), transposed: n8 tiles 2 nj and 2 nj + 1. */
            for (int nj = 0; nj < 2; nj++) {
                uint32_t r[4];
                ckt_ldmatrix_x4_trans(r, &B[(kk + lane % 16) * MM_B_LD + wn * 32 + nj * 16 + lane / 16 * 8]);
                b[2 * nj][0] = r[0];
                b[2 * nj][1] = r[1];
                b[2 * nj + 1][0] = r[2];
                b[2 * nj + 1][1] = r[3];
            }
            for (int mi = 0; mi < 2; mi++)
                for (int ni = 0; ni < 4; ni++)
                    ckt_mma_m16n8k16_f16(acc[mi][ni], a[mi], b[ni], acc[mi][ni]);
        }
        ckt_block_sync(); /* stage s is refilled next step */
    }
    /* C/D layout: c0, c1 at row g, columns 2t, 2t+1; c2, c3 at row g + 8. */
    unsigned g = lane / 4, t = lane % 4;
    for (int mi = 0; mi < 2; mi++)
        for (int ni = 0; ni < 4; ni++)
            for (int i = 0; i < 4; i++) {
                int row = m0 + (int)(wm * 32 + mi * 16 + g + (i / 2) * 8);
                int col = n0 + (int)(wn * 32 + ni * 8 + t * 2 + i % 2);
                p.c[(size_t)row * p.n + col] = acc[mi][ni][i];
            }
}

#elif CKT_HAS_MFMA

/* Wave w owns C rows m0 + 32 w .. +31, all 64 columns: acc[nt] is the 32x32
 * tile of columns n0 + 32 nt .. +31 in the MFMA 32x32x8 C/D layout. */
CKT_KERNEL_BOUNDS(mm_kernel, mm_params, p, MM_THREADS)
{
    CKT_SHARED_ARRAY(ckt_f16, sa, MM_STAGES * MM_BM * MM_A_LD);
    CKT_SHARED_ARRAY(ckt_f16, sb, MM_STAGES * MM_BK * MM_B_LD);
    const int m0 = (int)ckt_block_idx_y() * MM_BM, n0 = (int)ckt_block_idx_x() * MM_BN;
    const int ktiles = p.k / MM_BK;
    unsigned wave = ckt_warp_id(), lane = ckt_lane_id();
    unsigned i = lane % 32, h = lane / 32;
    float acc[2][16];
    for (int nt = 0; nt < 2; nt++)
        for (int r = 0; r < 16; r++)
            acc[nt][r] = 0.0f;

    mm_load_stage(sa, sb, p, m0, n0, 0);
    for (int kt = 0; kt < ktiles; kt++) {
        int s = kt % MM_STAGES;
        if (kt + 1 < ktiles)
            mm_load_stage(sa + (s ^ 1) * MM_BM * MM_A_LD, sb + (s ^ 1) * MM_BK * MM_B_LD, p, m0, n0, kt + 1);
        else
            ckt_cp_async_commit();
        ckt_cp_async_wait(1);
        ckt_block_sync();
        const ckt_f16 *A = sa + s * MM_BM * MM_A_LD, *B = sb + s * MM_BK * MM_B_LD;
        for (int kk = 0; kk < MM_BK; kk += 8) {
            /* a = A[i][k0 .. k0+3], k0 = kk + 4h: 4 adjacent elements, 8-byte aligned. */
            const ckt_f16 *ar = &A[(wave * 32 + i) * MM_A_LD + kk + 4 * h];
            uint32_t a[2];
            a[0] = ckt_pack_f16x2(ar[0], ar[1]);
            a[1] = ckt_pack_f16x2(ar[2], ar[3]);
            for (int nt = 0; nt < 2; nt++) {
                /* b = B[k0 .. k0+3][i]: a column, one element per shared row. */
                const ckt_f16 *bc = &B[(kk + 4 * h) * MM_B_LD + nt * 32 + i];
                uint32_t b[2];
                b[0] = ckt_pack_f16x2(bc[0], bc[MM_B_LD]);
                b[1] = ckt_pack_f16x2(bc[2 * MM_B_LD], bc[3 * MM_B_LD]);
                ckt_mfma_32x32x8_f16(acc[nt], a, b, acc[nt]);
            }
        }
        ckt_block_sync();
    }
    /* d[r] = D[8 (r / 4) + 4h + r % 4][i] */
    for (int nt = 0; nt < 2; nt++)
        for (int r = 0; r < 16; r++) {
            int row = m0 + (int)(wave * 32 + 8 * (r / 4) + 4 * h + r % 4);
            int col = n0 + (int)(nt * 32 + i);
            p.c[(size_t)row * p.n + col] = acc[nt][r];
        }
}

#else
#error "tests/arch/matmul_kernel.h needs CKT_HAS_MMA_SYNC or CKT_HAS_MFMA"
#endif

#endif /* CKT_TESTS_ARCH_MATMUL_KERNEL_H */
