/* examples/gemm/gemm.h — fp16/bf16 GEMM from the tile layer alone:
 *
 *   C[m][n] = sum_k A[m][k] * B[k][n]      fp32 accumulation, C in the input type
 *
 * A is row-major [M][K] (lda >= K). B is row-major [K][N] ("NN", ldb >= N) or
 * stored transposed as [N][K] ("NT", ldb >= K). C is row-major [M][N].
 *
 * Block tile 128 x 256 x 32 (NVIDIA, 8 warps) or 128 x 128 x 32 (CDNA, 4
 * wavefronts), each warp a 64 x 64 tile;
 * a multi-stage cp.async ring in shared memory (ckt/tile/pipeline.h); A and B read
 * from shared memory into mma.sync fragments (ldmatrix) on NVIDIA, MFMA
 * 32x32x8 fragments on CDNA (ckt/tile/mma.h).
 * Any M, N, K: the edge tiles are masked (cp.async zero-fills past the valid
 * extent, stores past it are dropped). Pointers and leading dimensions must
 * allow 16-byte vector access: base 16-byte aligned, lda/ldb multiples of 8.
 */
#ifndef CKT_EXAMPLES_GEMM_H
#define CKT_EXAMPLES_GEMM_H

#include "ckt/host.h"
#include "ckt/tile.h"

/* Tile configuration; each may be overridden with -D for experiments.
 * NVIDIA: 128 x 256 x 32, 8 warps of 64 x 64, 4 stages (122 KB of shared
 * memory: 1 block per SM). CDNA: 128 x 128 x 32, 4 wavefronts of 64 x 64,
 * 2 stages (40 KB of the 64 KB LDS). */
#if defined(CKT_HAS_MFMA)
#define GEMM__BN_DEFAULT 128
#define GEMM__STAGES_DEFAULT 2
#else
#define GEMM__BN_DEFAULT 256
#define GEMM__STAGES_DEFAULT 4
#endif
#ifndef GEMM_BM
#define GEMM_BM 128
#endif
#ifndef GEMM_BN
#define GEMM_BN GEMM__BN_DEFAULT
#endif
#ifndef GEMM_BK
#define GEMM_BK 32
#endif
#ifndef GEMM_WM
#define GEMM_WM 64
#endif
#ifndef GEMM_WN
#define GEMM_WN 64
#endif
#define GEMM_WARPS_M (GEMM_BM / GEMM_WM)
#define GEMM_WARPS_N (GEMM_BN / GEMM_WN)
#define GEMM_THREADS (GEMM_WARPS_M * GEMM_WARPS_N * CKT_WARP_SIZE)
#ifndef GEMM_STAGES
#define GEMM_STAGES GEMM__STAGES_DEFAULT
#endif
/* Shared tiles are padded by 16 bytes a row (CKT_SMEM_PADDED): the rows an
 * ldmatrix phase reads fall in different banks. Per stage (elements): the A
 * tile [BM][BK], the B tile as stored ([BN][BK] or [BK][BN]). */
#define GEMM_LAYOUT CKT_SMEM_PADDED
#define GEMM_A_STAGE CKT_SMEM_ELEMS(GEMM_LAYOUT, GEMM_BM, GEMM_BK, 2)
#define GEMM_B_STAGE                                                                               \
    (CKT_SMEM_ELEMS(GEMM_LAYOUT, GEMM_BN, GEMM_BK, 2) > CKT_SMEM_ELEMS(GEMM_LAYOUT, GEMM_BK, GEMM_BN, 2) \
         ? CKT_SMEM_ELEMS(GEMM_LAYOUT, GEMM_BN, GEMM_BK, 2)                                        \
         : CKT_SMEM_ELEMS(GEMM_LAYOUT, GEMM_BK, GEMM_BN, 2))
#define GEMM_SMEM_BYTES ((size_t)GEMM_STAGES * (GEMM_A_STAGE + GEMM_B_STAGE) * 2)

typedef struct gemm_params {
    const void *a, *b; /* fp16 or bf16 */
    void *c;
    int64_t m, n, k;
    int64_t lda, ldb, ldc; /* elements */
} gemm_params;

#if defined(CKT_HAS_MMA_SYNC) || defined(CKT_HAS_MFMA)

CKT_WARP_TILE_CHECK(GEMM_WM, GEMM_WN, GEMM_BK);
#define GEMM_KSTEPS (GEMM_BK / 16)
CKT_STATIC_ASSERT(GEMM_BK % 32 == 0, "GEMM_BK must be a multiple of 32 (two 16-deep k-steps alternate fragment buffers)");
CKT_PIPE_CHECK(GEMM_STAGES);

/* Issues the async copies of the next k-tile of A and B and moves the windows. */
CKT_INLINE CKT_DEVICE void gemm_issue_tile(ckt_smem_tile sa, ckt_smem_tile sb, ckt_window2d *wa,
                                           ckt_window2d *wb, int b_nk, int tid)
{
    ckt_smem_tile_load_async(sa, wa, GEMM_BM, GEMM_BK, GEMM_THREADS, tid);
    if (b_nk)
        ckt_smem_tile_load_async(sb, wb, GEMM_BN, GEMM_BK, GEMM_THREADS, tid);
    else
        ckt_smem_tile_load_async(sb, wb, GEMM_BK, GEMM_BN, GEMM_THREADS, tid);
    ckt_window2d_move(wa, 0, GEMM_BK);
    ckt_window2d_move(wb, b_nk ? 0 : GEMM_BK, b_nk ? GEMM_BK : 0);
}

/* This warp's A and B fragments for k-step [k, k + 16) of a shared stage. */
CKT_INLINE CKT_DEVICE void gemm_load_frags(uint32_t *af, uint32_t *bfr, ckt_smem_tile sa,
                                           ckt_smem_tile sb, int k, int wm, int wn, int b_nk)
{
    ckt_warp_load_a(af, sa, wm * GEMM_WM, k, GEMM_WM, 16);
    if (b_nk)
        ckt_warp_load_b_nk(bfr, sb, wn * GEMM_WN, k, 16, GEMM_WN);
    else
        ckt_warp_load_b_kn(bfr, sb, k, wn * GEMM_WN, 16, GEMM_WN);
}

/* The whole block computation; b_nk and bf16 are compile-time constants at
 * each call site, so every branch on them folds away. */
CKT_INLINE CKT_DEVICE void gemm_block(const gemm_params *p, int b_nk, int bf16)
{
    CKT_DYNAMIC_SHARED(uint16_t, smem);
    const int tid = (int)ckt_thread_idx_x(), warp = (int)ckt_warp_id();
    const int wm = warp / GEMM_WARPS_N, wn = warp % GEMM_WARPS_N;
    const int64_t m0 = (int64_t)ckt_block_idx_y() * GEMM_BM, n0 = (int64_t)ckt_block_idx_x() * GEMM_BN;

    /* windows over A[m0.., k] and B (as stored) */
    ckt_window2d wa = ckt_window2d_make(ckt_view2d_make((void *)p->a, p->m, p->k, p->lda), m0, 0);
    ckt_window2d wb = b_nk ? ckt_window2d_make(ckt_view2d_make((void *)p->b, p->n, p->k, p->ldb), n0, 0)
                           : ckt_window2d_make(ckt_view2d_make((void *)p->b, p->k, p->n, p->ldb), 0, n0);

    float acc[CKT_WARP_ACC_REGS(GEMM_WM, GEMM_WN)];
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(GEMM_WM, GEMM_WN); i++)
        acc[i] = 0.0f;

    const int kt_count = (int)CKT_CEIL_DIV(p->k, (int64_t)GEMM_BK);
#define GEMM_A_SMEM(stage) ckt_smem_tile_make(smem + (stage) * (GEMM_A_STAGE + GEMM_B_STAGE), GEMM_LAYOUT, GEMM_BK)
#define GEMM_B_SMEM(stage)                                                                         \
    ckt_smem_tile_make(smem + (stage) * (GEMM_A_STAGE + GEMM_B_STAGE) + GEMM_A_STAGE,             \
                       GEMM_LAYOUT, b_nk ? GEMM_BK : GEMM_BN)

    /* prologue: STAGES - 1 tiles in flight */
    for (int s = 0; s < GEMM_STAGES - 1; s++) {
        if (s < kt_count)
            gemm_issue_tile(GEMM_A_SMEM(s), GEMM_B_SMEM(s), &wa, &wb, b_nk, tid);
        ckt_pipe_commit();
    }

    /* Fragments are double-buffered: while the MMAs of k-step ks run, the
     * fragments of ks + 1 (the next k-tile's first step at the end of a tile)
     * are loaded into the other buffer. */
    uint32_t af[2][CKT_WARP_A_REGS(GEMM_WM, 16)], bfr[2][CKT_WARP_B_REGS(16, GEMM_WN)];
    ckt_pipe_wait(GEMM_STAGES); /* tile 0 has landed */
    gemm_load_frags(af[0], bfr[0], GEMM_A_SMEM(0), GEMM_B_SMEM(0), 0, wm, wn, b_nk);

    for (int kt = 0; kt < kt_count; kt++) {
        const int st = ckt_pipe_stage(kt, GEMM_STAGES);
        CKT_UNROLL
        for (int ks = 0; ks < GEMM_KSTEPS; ks++) {
            if (ks == 0) {
                /* refill the stage that tile kt - 1 used: every thread has its
                 * fragments in registers since the barrier that ended tile kt - 1 */
                int next = kt + GEMM_STAGES - 1;
                if (next < kt_count) {
                    int sn = ckt_pipe_stage(next, GEMM_STAGES);
                    gemm_issue_tile(GEMM_A_SMEM(sn), GEMM_B_SMEM(sn), &wa, &wb, b_nk, tid);
                }
                ckt_pipe_commit();
            }
            if (ks < GEMM_KSTEPS - 1) {
                gemm_load_frags(af[(ks + 1) & 1], bfr[(ks + 1) & 1], GEMM_A_SMEM(st), GEMM_B_SMEM(st),
                                (ks + 1) * 16, wm, wn, b_nk);
            } else {
                ckt_pipe_wait(GEMM_STAGES); /* tile kt + 1 has landed; stage st is free */
                if (kt + 1 < kt_count) {
                    int sn = ckt_pipe_stage(kt + 1, GEMM_STAGES);
                    gemm_load_frags(af[(ks + 1) & 1], bfr[(ks + 1) & 1], GEMM_A_SMEM(sn),
                                    GEMM_B_SMEM(sn), 0, wm, wn, b_nk);
                }
            }
            ckt_warp_mma(acc, af[ks & 1], bfr[ks & 1], GEMM_WM, GEMM_WN, 16, bf16);
        }
    }
#undef GEMM_A_SMEM
#undef GEMM_B_SMEM

    /* epilogue: C[m0 + row][n0 + col] = acc; where registers pair up along a
     * row (mma.sync), two adjacent columns per 32-bit store */
    ckt_window2d wc = ckt_window2d_make(ckt_view2d_make(p->c, p->m, p->n, p->ldc),
                                        m0 + wm * GEMM_WM, n0 + wn * GEMM_WN);
    const int lane = (int)ckt_lane_id();
    const int step = CKT_WARP_ACC_PAIRS ? 2 : 1;
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(GEMM_WM, GEMM_WN); i += step) {
        int r, c;
        ckt_warp_acc_coord(&r, &c, i, lane, GEMM_WM, GEMM_WN);
        uint16_t v0 = bf16 ? ckt_bf16_from_f32(acc[i]).bits : ckt_f16_from_f32(acc[i]).bits;
        int valid = ckt_window2d_valid_cols(&wc, r, c, step);
        uint16_t *dst = (uint16_t *)ckt_window2d_ptr(&wc, r, c, 2);
        if (step == 1) {
            if (valid)
                dst[0] = v0;
            continue;
        }
        uint16_t v1 = bf16 ? ckt_bf16_from_f32(acc[i + 1]).bits : ckt_f16_from_f32(acc[i + 1]).bits;
        if (valid == 2 && (p->ldc & 1) == 0) {
            *(uint32_t *)dst = (uint32_t)v0 | ((uint32_t)v1 << 16);
        } else {
            if (valid >= 1)
                dst[0] = v0;
            if (valid >= 2)
                dst[1] = v1;
        }
    }
}

CKT_KERNEL_BOUNDS(gemm_nn_f16, gemm_params, p, GEMM_THREADS) { gemm_block(&p, 0, 0); }
CKT_KERNEL_BOUNDS(gemm_nt_f16, gemm_params, p, GEMM_THREADS) { gemm_block(&p, 1, 0); }
CKT_KERNEL_BOUNDS(gemm_nn_bf16, gemm_params, p, GEMM_THREADS) { gemm_block(&p, 0, 1); }
CKT_KERNEL_BOUNDS(gemm_nt_bf16, gemm_params, p, GEMM_THREADS) { gemm_block(&p, 1, 1); }

#endif /* CKT_HAS_MMA_SYNC || CKT_HAS_MFMA */

/* >>host launcher
 * gemm_check_args(p, b_nk, dtype, &empty): the checks every launcher of
 * this contract makes (gemm_run, gemm_sm90_run): a status naming the bad
 * argument, or CKT_SUCCESS with empty = 1 when there is nothing to compute
 * (m or n is 0). */
static inline ckt_status gemm_check_args(const gemm_params *p, int b_nk, ckt_dtype dtype, int *empty)
{
    *empty = 0;
    if (!p)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "gemm: params is NULL");
    if (p->m < 0 || p->n < 0 || p->k < 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "gemm: negative size m=%lld n=%lld k=%lld",
                         (long long)p->m, (long long)p->n, (long long)p->k);
    if (dtype != CKT_F16 && dtype != CKT_BF16)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "gemm: dtype %s (fp16 or bf16)", ckt_dtype_name(dtype));
    if (p->m == 0 || p->n == 0) {
        *empty = 1;
        return CKT_SUCCESS;
    }
    if (!p->c || (p->k > 0 && (!p->a || !p->b)))
        return ckt__fail(CKT_ERROR_NULL_POINTER, "gemm: %s is NULL", !p->c ? "c" : !p->a ? "a" : "b");
    if (p->lda < p->k || p->ldb < (b_nk ? p->k : p->n) || p->ldc < p->n)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "gemm: %s too small",
                         p->lda < p->k ? "lda" : p->ldc < p->n ? "ldc" : "ldb");
    if (((uintptr_t)p->a | (uintptr_t)p->b) % 16 != 0 || p->lda % 8 != 0 || p->ldb % 8 != 0)
        return ckt__fail(CKT_ERROR_MISALIGNED,
                         "gemm: %s must be 16-byte aligned / a multiple of 8 elements",
                         (uintptr_t)p->a % 16 ? "a" : (uintptr_t)p->b % 16 ? "b" : p->lda % 8 ? "lda" : "ldb");
    if ((uintptr_t)p->c % 4 != 0)
        return ckt__fail(CKT_ERROR_MISALIGNED, "gemm: c must be 4-byte aligned");
    return CKT_SUCCESS;
}

/* gemm_run(&p, b_nk, dtype, stream): validates p and launches. dtype is CKT_F16
 * or CKT_BF16; b_nk = 1 when B is stored [N][K]. */
static inline ckt_status gemm_run(const gemm_params *p, int b_nk, ckt_dtype dtype, ckt_stream stream)
{
    int empty;
    ckt_status st = gemm_check_args(p, b_nk, dtype, &empty);
    if (st != CKT_SUCCESS || empty)
        return st;
    if (CKT_CEIL_DIV(p->m, (int64_t)GEMM_BM) > 65535)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "gemm: m=%lld exceeds %d", (long long)p->m, 65535 * GEMM_BM);
#if defined(CKT_HAS_MMA_SYNC) || defined(CKT_HAS_MFMA)
    ckt_dim3 grid = ckt_dim3_make((unsigned)CKT_CEIL_DIV(p->n, (int64_t)GEMM_BN),
                                  (unsigned)CKT_CEIL_DIV(p->m, (int64_t)GEMM_BM), 1);
    ckt_dim3 block = ckt_dim3_make(GEMM_THREADS, 1, 1);
    ckt_kernel_ref k = dtype == CKT_BF16 ? (b_nk ? CKT_KERNEL_REF(gemm_nt_bf16) : CKT_KERNEL_REF(gemm_nn_bf16))
                                         : (b_nk ? CKT_KERNEL_REF(gemm_nt_f16) : CKT_KERNEL_REF(gemm_nn_f16));
    return ckt_rt_launch(k, grid, block, GEMM_SMEM_BYTES, stream, p);
#else
    (void)stream;
    return ckt__fail(CKT_ERROR_UNSUPPORTED, "gemm: this target has no warp MMA");
#endif
}

#endif /* CKT_EXAMPLES_GEMM_H */
