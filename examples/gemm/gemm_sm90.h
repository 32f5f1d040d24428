/* examples/gemm/gemm_sm90.h — the GEMM of gemm.h on Hopper's instructions
 * (ckt/arch/hopper.h): TMA tile loads into a ring of shared-memory stages,
 * mbarriers between a producer warpgroup and two consumer warpgroups, and
 * warpgroup MMA (wgmma m64n256k16) straight from shared memory.
 *
 *   block tile 128 x 256 x 64, 384 threads = 3 warpgroups:
 *     warpgroup 0, producer: one thread waits until a stage is free
 *       (empty[s]), announces its bytes on full[s] and issues the TMA loads
 *       of A (128 x 64) and B (256 x 64, or 4 boxes of 64 x 64 for NN);
 *     warpgroups 1, 2, consumers: rows 64 c .. 64 c + 63 of the tile; wait
 *       for full[s], issue four wgmma k16 steps on the stage, keep one group
 *       in flight, and free the previous stage (empty) once its group is done.
 *   Persistent: a block per multiprocessor walks the tiles (grouped for L2
 *   reuse) grid apart; the stage ring runs on across tiles, so the producer
 *   loads the next tile while the consumers store this one.
 *   Stages are 128-byte swizzled (TMA writes them so, the descriptors read
 *   them so): rows of 64 elements, 8-row groups 1024 bytes apart.
 *   Edges: TMA fills zeros outside A and B (any M, N, K), the epilogue drops
 *   stores outside C.
 *
 * Host: gemm_sm90_run(p, b_nk, dtype, stream) makes the tensor maps and
 * launches; on NVIDIA only an sm_90 device runs it (gemm_sm90_supported). */
#ifndef CKT_EXAMPLES_GEMM_SM90_H
#define CKT_EXAMPLES_GEMM_SM90_H

#include "ckt/host.h"
#include "ckt/tile.h"
#include "examples/gemm/gemm.h"

#define G9_BM 128
#define G9_BN 256
#define G9_BK 64
#ifndef G9_STAGES
#define G9_STAGES 4
#endif
#define G9_THREADS 384
#define G9_A_BYTES (G9_BM * G9_BK * 2)
#define G9_B_BYTES (G9_BN * G9_BK * 2)
#define G9_STAGE_BYTES (G9_A_BYTES + G9_B_BYTES)
/* stages, two mbarriers a stage, and 1 KiB to align the base */
#define G9_SMEM_BYTES ((size_t)G9_STAGES * G9_STAGE_BYTES + 16 * G9_STAGES + 1024)
#define G9_GROUP_M 8 /* tiles of 8 block rows run together (L2 reuse) */

typedef struct gemm_sm90_params {
    ckt_tma_desc ta, tb; /* first: 64-byte aligned */
    void *c;
    int64_t m, n, k, ldc;
    int tiles_m, tiles_n;
} gemm_sm90_params;

#if defined(CKT_HAS_WGMMA)

/* Tile (tm, tn) of block b: groups of G9_GROUP_M block rows, column-major
 * inside a group, so that neighbouring blocks share A and B tiles in L2. */
CKT_INLINE CKT_DEVICE void gemm_sm90_tile(int *tm, int *tn, int b, int tiles_m, int tiles_n)
{
    const int per_group = G9_GROUP_M * tiles_n, first = (b / per_group) * G9_GROUP_M;
    const int rows = tiles_m - first < G9_GROUP_M ? tiles_m - first : G9_GROUP_M;
    *tm = first + (b % per_group) % rows;
    *tn = (b % per_group) / rows;
}

/* The four k16 steps of one stage: D(64 x 256) += A_rows(64 x 64) B(64 x 256). */
CKT_INLINE CKT_DEVICE void gemm_sm90_stage(float *d, const unsigned char *sa, const unsigned char *sb, int b_nk,
                                           int bf16, int first)
{
    CKT_UNROLL
    for (int ks = 0; ks < G9_BK / 16; ks++) {
        const uint64_t da = ckt_wgmma_desc(sa + 32 * ks, CKT_SWIZZLE_128B, 16, 1024);
        const int acc = !(first && ks == 0);
        if (b_nk) { /* B [N][K]: K-major like A */
            const uint64_t db = ckt_wgmma_desc(sb + 32 * ks, CKT_SWIZZLE_128B, 16, 1024);
            if (bf16)
                ckt_wgmma_m64n256k16_bf16_ss(d, da, db, acc);
            else
                ckt_wgmma_m64n256k16_f16_ss(d, da, db, acc);
        } else { /* B [K][N]: 4 boxes of 64 N x 64 K, 8 KiB apart; k16 step = 16 rows of 128 bytes */
            const uint64_t db = ckt_wgmma_desc(sb + 2048 * ks, CKT_SWIZZLE_128B, 8192, 1024);
            if (bf16)
                ckt_wgmma_m64n256k16_bf16_ss_bmn(d, da, db, acc);
            else
                ckt_wgmma_m64n256k16_f16_ss_bmn(d, da, db, acc);
        }
    }
}

CKT_INLINE CKT_DEVICE void gemm_sm90_block(const gemm_sm90_params *p, int b_nk, int bf16)
{
    CKT_DYNAMIC_SHARED(unsigned char, smem_raw);
    unsigned char *smem = (unsigned char *)ckt_smem_align_1024(smem_raw);
    uint64_t *full = (uint64_t *)(smem + G9_STAGES * G9_STAGE_BYTES), *empty = full + G9_STAGES;
    const int tid = (int)ckt_thread_idx_x(), wg = tid / 128;
    if (tid == 0)
        for (int s = 0; s < G9_STAGES; s++) {
            ckt_mbar_init(&full[s], 1);
            ckt_mbar_init(&empty[s], 8); /* the 8 consumer warps */
        }
    ckt_block_sync();

    const int kt_count = (int)CKT_CEIL_DIV(p->k, (int64_t)G9_BK);
    const int tiles = p->tiles_m * p->tiles_n, grid = (int)ckt_grid_dim_x();

    if (wg == 0) { /* producer: runs ahead into the next tile while the consumers store this one */
        ckt_setmaxnreg_dec(40);
        if (tid == 0) {
            int it = 0; /* k-tiles issued so far: the ring position */
            for (int tile = (int)ckt_block_idx_x(); tile < tiles; tile += grid) {
                int tm, tn;
                gemm_sm90_tile(&tm, &tn, tile, p->tiles_m, p->tiles_n);
                const int m0 = tm * G9_BM, n0 = tn * G9_BN;
                for (int kt = 0; kt < kt_count; kt++, it++) {
                    const int s = it % G9_STAGES;
                    if (it >= G9_STAGES) /* the consumers freed this stage's previous k-tile */
                        ckt_mbar_wait(&empty[s], (unsigned)((it / G9_STAGES - 1) & 1));
                    unsigned char *sa = smem + s * G9_STAGE_BYTES, *sb = sa + G9_A_BYTES;
                    ckt_mbar_arrive_expect_tx(&full[s], G9_STAGE_BYTES);
                    ckt_tma_load_2d(sa, &p->ta, kt * G9_BK, m0, &full[s]);
                    if (b_nk)
                        ckt_tma_load_2d(sb, &p->tb, kt * G9_BK, n0, &full[s]);
                    else
                        for (int j = 0; j < G9_BN / 64; j++)
                            ckt_tma_load_2d(sb + 8192 * j, &p->tb, n0 + 64 * j, kt * G9_BK, &full[s]);
                }
            }
        }
        return;
    }

    /* consumers */
    ckt_setmaxnreg_inc(232);
    const int cw = wg - 1, warp = (int)ckt_warp_id(), lane = (int)ckt_lane_id();
    const int g = lane / 4, t = lane % 4, pairs = (p->ldc & 1) == 0;
    float d[G9_BN / 2];
    CKT_UNROLL
    for (int i = 0; i < G9_BN / 2; i++)
        d[i] = 0.0f;
    int it = 0;
    for (int tile = (int)ckt_block_idx_x(); tile < tiles; tile += grid) {
        int tm, tn;
        gemm_sm90_tile(&tm, &tn, tile, p->tiles_m, p->tiles_n);
        const int m0 = tm * G9_BM, n0 = tn * G9_BN;
        for (int kt = 0; kt < kt_count; kt++, it++) {
            const int s = it % G9_STAGES;
            ckt_mbar_wait(&full[s], (unsigned)((it / G9_STAGES) & 1));
            const unsigned char *sa = smem + s * G9_STAGE_BYTES;
            ckt_wgmma_fence();
            gemm_sm90_stage(d, sa + cw * 64 * 128, sa + G9_A_BYTES, b_nk, bf16, kt == 0);
            ckt_wgmma_commit();
            ckt_wgmma_wait1(); /* the previous k-tile's group is done: free its stage */
            if (kt > 0 && lane == 0)
                ckt_mbar_arrive(&empty[(it - 1) % G9_STAGES]);
        }
        ckt_wgmma_wait0();
        ckt_wgmma_fence_operand(d, G9_BN / 2);
        if (lane == 0)
            ckt_mbar_arrive(&empty[(it - 1) % G9_STAGES]);

        /* epilogue: d[4j + i] = D[16 w + g + 8 (i >= 2)][8 j + 2 t + (i & 1)] */
        const int64_t row0 = (int64_t)m0 + cw * 64 + 16 * (warp % 4) + g;
        CKT_UNROLL
        for (int j = 0; j < G9_BN / 8; j++) {
            const int64_t col = (int64_t)n0 + 8 * j + 2 * t;
            CKT_UNROLL
            for (int h = 0; h < 2; h++) {
                const int64_t row = row0 + 8 * h;
                if (row >= p->m || col >= p->n)
                    continue;
                const float v0 = d[4 * j + 2 * h], v1 = d[4 * j + 2 * h + 1];
                uint16_t *dst = (uint16_t *)p->c + row * p->ldc + col;
                const uint16_t b0 = bf16 ? ckt_bf16_from_f32(v0).bits : ckt_f16_from_f32(v0).bits;
                const uint16_t b1 = bf16 ? ckt_bf16_from_f32(v1).bits : ckt_f16_from_f32(v1).bits;
                if (pairs && col + 1 < p->n)
                    *(uint32_t *)dst = (uint32_t)b0 | ((uint32_t)b1 << 16);
                else {
                    dst[0] = b0;
                    if (col + 1 < p->n)
                        dst[1] = b1;
                }
            }
        }
        ckt_wgmma_fence_operand(d, G9_BN / 2);
    }
}

#endif /* CKT_HAS_WGMMA */

/* The kernels exist in every pass (empty where the target lacks wgmma: the
 * host never launches those, gemm_sm90_supported). */
#define G9_KERNEL(name, b_nk, bf16)                                                               \
    CKT_KERNEL_GRID_CONSTANT_BOUNDS(name, gemm_sm90_params, p, G9_THREADS, 1)                     \
    {                                                                                             \
        G9_BODY(b_nk, bf16);                                                                      \
    }
#if defined(CKT_HAS_WGMMA)
#define G9_BODY(b_nk, bf16) gemm_sm90_block(&p, b_nk, bf16)
#else
#define G9_BODY(b_nk, bf16) (void)p
#endif
#if defined(CKT_BACKEND_NVIDIA) || (defined(CKT_BACKEND_CPU) && CKT_EMU_WARP_SIZE == 32)
G9_KERNEL(gemm_sm90_nn_f16, 0, 0)
G9_KERNEL(gemm_sm90_nt_f16, 1, 0)
G9_KERNEL(gemm_sm90_nn_bf16, 0, 1)
G9_KERNEL(gemm_sm90_nt_bf16, 1, 1)
#define G9_HAS_KERNELS 1
#endif

/* Whether this build and device run the Hopper GEMM: an sm_90 NVIDIA device,
 * or the emulator's nv profile. */
static inline int gemm_sm90_supported(void)
{
#if defined(G9_HAS_KERNELS) && defined(CKT_BACKEND_NVIDIA)
    ckt_device_props props;
    return ckt_rt_device_props(&props) == CKT_SUCCESS && props.cc_major == 9 && props.cc_minor == 0;
#elif defined(G9_HAS_KERNELS)
    return 1;
#else
    return 0;
#endif
}

/* gemm.h's gemm_run contract (its checks: gemm_check_args), on the Hopper
 * kernels. */
static inline ckt_status gemm_sm90_run(const gemm_params *p, int b_nk, ckt_dtype dtype, ckt_stream stream)
{
    if (!p)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "gemm: params is NULL");
    if (!gemm_sm90_supported())
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "gemm: the wgmma path needs an sm_90 device (or the emulator's nv profile)");
    int empty;
    ckt_status st = gemm_check_args(p, b_nk, dtype, &empty);
    if (st != CKT_SUCCESS || empty)
        return st;
    if (p->m > INT32_MAX || p->n > INT32_MAX || p->k > INT32_MAX)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "gemm: sizes past 2^31-1 (TMA coordinates are 32-bit)");
#if defined(G9_HAS_KERNELS)
    if (p->k == 0) /* C = 0: no tile to load; the plain path writes the zeros */
        return gemm_run(p, b_nk, dtype, stream);
    gemm_sm90_params q;
    memset(&q, 0, sizeof q);
    if (ckt_tma_make_2d(&q.ta, p->a, 2, (uint64_t)p->m, (uint64_t)p->k, (uint64_t)p->lda * 2, G9_BM, G9_BK,
                        CKT_SWIZZLE_128B) != 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "gemm: a: no TMA tensor map for this layout");
    const int tmb = b_nk ? ckt_tma_make_2d(&q.tb, p->b, 2, (uint64_t)p->n, (uint64_t)p->k, (uint64_t)p->ldb * 2,
                                           G9_BN, G9_BK, CKT_SWIZZLE_128B)
                         : ckt_tma_make_2d(&q.tb, p->b, 2, (uint64_t)p->k, (uint64_t)p->n, (uint64_t)p->ldb * 2,
                                           G9_BK, 64, CKT_SWIZZLE_128B);
    if (tmb != 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "gemm: b: no TMA tensor map for this layout");
    q.c = p->c;
    q.m = p->m;
    q.n = p->n;
    q.k = p->k;
    q.ldc = p->ldc;
    q.tiles_m = (int)CKT_CEIL_DIV(p->m, (int64_t)G9_BM);
    q.tiles_n = (int)CKT_CEIL_DIV(p->n, (int64_t)G9_BN);
    const long long blocks = (long long)q.tiles_m * q.tiles_n;
    if (blocks > INT32_MAX)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "gemm: %lld tiles exceed the grid", blocks);
    ckt_device_props props;
    st = ckt_rt_device_props(&props);
    if (st != CKT_SUCCESS)
        return st;
    /* persistent: one block per multiprocessor at most, each walking tiles grid apart */
    const long long grid = blocks < props.multiprocessors ? blocks : props.multiprocessors;
    ckt_kernel_ref k = dtype == CKT_BF16
                           ? (b_nk ? CKT_KERNEL_REF(gemm_sm90_nt_bf16) : CKT_KERNEL_REF(gemm_sm90_nn_bf16))
                           : (b_nk ? CKT_KERNEL_REF(gemm_sm90_nt_f16) : CKT_KERNEL_REF(gemm_sm90_nn_f16));
    return ckt_rt_launch(k, ckt_dim3_make((unsigned)(grid > 0 ? grid : 1), 1, 1), ckt_dim3_make(G9_THREADS, 1, 1), G9_SMEM_BYTES,
                         stream, &q);
#else
    (void)stream;
    return ckt__fail(CKT_ERROR_UNSUPPORTED, "gemm: this build has no wgmma kernels");
#endif
}

#endif /* CKT_EXAMPLES_GEMM_SM90_H */
