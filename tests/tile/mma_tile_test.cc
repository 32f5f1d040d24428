// ckt/tile/mma.h pieces the attention backward relies on, one warp against a
// host product: C = A B with A read from an [k][m] shared tile
// (ckt_warp_load_a_km: ldmatrix.trans / MFMA gather), B from a [k][n] tile
// (ckt_warp_load_b_kn), the fp32 accumulator handed back through shared
// memory by ckt_warp_store_acc_b16 (scaled, rounded to fp16); and
// ckt_smem_tile_load_rows_async (a tile by pointer) on whole, partial, empty
// and misaligned tiles; the fp32 accumulator-ordered matrix that the
// backward's dQ lives in (ckt_acc_offset): ckt_warp_red_acc_f32 and
// ckt_warp_store_acc_f32 on whole and partial tiles. Both emulator profiles
// and the GPU.
#include "ckt/host.h"
#include "ckt/tile/mma.h"
#include "ckt/tile/pipeline.h"
#include "tests/tile/tile_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

enum { M = 2 * CKT_MMA_M, N = 32, K = 32, KSTEP = 16 };

typedef struct {
    const uint16_t *at; // A^T [K][M], fp16
    const uint16_t *b;  // B [K][N], fp16
    uint16_t *c;        // C [M][N] = mul * A B, fp16
    float mul;
} mma_params;

#define TILE_ELEMS(R, C) CKT_SMEM_ELEMS(CKT_SMEM_PADDED, R, C, 2)

CKT_KERNEL(mma_km_kernel, mma_params, p)
{
    CKT_SHARED_ARRAY(uint16_t, sm, TILE_ELEMS(K, M) + TILE_ELEMS(K, N) + TILE_ELEMS(M, N));
    const int lane = (int)ckt_lane_id();
    ckt_smem_tile sA = ckt_smem_tile_make(sm, CKT_SMEM_PADDED, M);
    ckt_smem_tile sB = ckt_smem_tile_make(sm + TILE_ELEMS(K, M), CKT_SMEM_PADDED, N);
    ckt_smem_tile sC = ckt_smem_tile_make(sm + TILE_ELEMS(K, M) + TILE_ELEMS(K, N), CKT_SMEM_PADDED, N);
    for (int e = lane; e < K * M; e += CKT_WARP_SIZE)
        *ckt_smem_tile_ptr(sA, e / M, e % M) = p.at[e];
    for (int e = lane; e < K * N; e += CKT_WARP_SIZE)
        *ckt_smem_tile_ptr(sB, e / N, e % N) = p.b[e];
    ckt_block_sync();
    float acc[CKT_WARP_ACC_REGS(M, N)];
    for (int i = 0; i < CKT_WARP_ACC_REGS(M, N); i++)
        acc[i] = 0.0f;
    for (int kk = 0; kk < K; kk += KSTEP) {
        uint32_t af[CKT_WARP_A_REGS(M, KSTEP)], bf[CKT_WARP_B_REGS(KSTEP, N)];
        ckt_warp_load_a_km(af, sA, kk, 0, M, KSTEP);
        ckt_warp_load_b_kn(bf, sB, kk, 0, KSTEP, N);
        ckt_warp_mma(acc, af, bf, M, N, KSTEP, 0);
    }
    ckt_warp_store_acc_b16(sC, acc, 0, 0, M, N, p.mul, 0);
    ckt_block_sync();
    for (int e = lane; e < M * N; e += CKT_WARP_SIZE)
        p.c[e] = *ckt_smem_tile_ptr(sC, e / N, e % N);
}

TEST(MmaTile, TransposedALoadAndAccumulatorStore)
{
    std::vector<uint16_t> at(K * M), b(K * N);
    ASSERT_EQ(ckt_fill(at.data(), CKT_F16, at.size(), ckt_init_uniform(-1, 1), 11), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(b.data(), CKT_F16, b.size(), ckt_init_uniform(-1, 1), 12), CKT_SUCCESS);
    tile_test::DevBuf<uint16_t> dat(at.size()), db(b.size()), dc(M * N);
    dat.upload(at);
    db.upload(b);
    const float mul = 0.5f;
    mma_params p = {dat.p, db.p, dc.p, mul};
    ASSERT_EQ(tile_test::launch(CKT_KERNEL_REF(mma_km_kernel), 1, CKT_WARP_SIZE, &p), CKT_SUCCESS)
        << ckt_last_error();
    std::vector<uint16_t> c = dc.download();
    int bad = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double want = 0;
            for (int k = 0; k < K; k++) {
                ckt_f16 x, y;
                x.bits = at[k * M + m];
                y.bits = b[k * N + n];
                want += (double)ckt_f32_from_f16(x) * ckt_f32_from_f16(y);
            }
            want *= mul;
            ckt_f16 got;
            got.bits = c[m * N + n];
            if (!(std::fabs(ckt_f32_from_f16(got) - want) <= 2e-3 + 2e-3 * std::fabs(want)) && bad++ < 5)
                ADD_FAILURE() << "C[" << m << "][" << n << "] = " << ckt_f32_from_f16(got) << ", want " << want;
        }
    EXPECT_EQ(bad, 0);
}

// ckt_smem_tile_load_rows_async: the RR x CC tile at src + off (row stride ld,
// rows < nrows and columns < ncols exist) into a shared tile by TT threads,
// then out[r][c] = the shared tile.
enum { RR = 32, CC = 64, TT = 128 };

typedef struct {
    const uint16_t *src;
    int64_t off, ld, nrows, ncols;
    uint16_t *out;
} rows_params;

CKT_KERNEL(rows_load_kernel, rows_params, p)
{
    CKT_SHARED_ARRAY(uint16_t, sm, TILE_ELEMS(RR, CC));
    const int tid = (int)ckt_thread_idx_x();
    ckt_smem_tile s = ckt_smem_tile_make(sm, CKT_SMEM_PADDED, CC);
    for (int e = tid; e < RR * CC; e += TT) // garbage first: the copy must write every element
        *ckt_smem_tile_ptr(s, e / CC, e % CC) = 0x7777;
    ckt_block_sync();
    ckt_smem_tile_load_rows_async(s, p.src + p.off, p.ld, p.nrows, p.ncols, RR, CC, TT, tid);
    ckt_pipe_commit();
    ckt_cp_async_wait(0);
    ckt_block_sync();
    for (int e = tid; e < RR * CC; e += TT)
        p.out[e] = *ckt_smem_tile_ptr(s, e / CC, e % CC);
}

TEST(MmaTile, LoadRowsAsyncWholePartialEmptyMisaligned)
{
    const int64_t ld_max = 80, rows = 48;
    std::vector<uint16_t> src((size_t)(rows * ld_max + 8));
    for (size_t i = 0; i < src.size(); i++)
        src[i] = (uint16_t)(1 + i % 30000);
    tile_test::DevBuf<uint16_t> dsrc(src.size()), dout(RR * CC);
    dsrc.upload(src);
    struct Case {
        int64_t off, ld, nrows, ncols;
        const char *what;
    };
    const Case cases[] = {
        {0, 72, 32, 64, "whole, aligned (the fast path)"},
        {8 * 72, 72, 40, 64, "whole, more rows than the tile"},
        {0, 72, 17, 64, "partial rows"},
        {0, 72, 32, 50, "partial columns (zero-filled)"},
        {0, 72, 0, 64, "no rows"},
        {0, 72, -5, 64, "negative rows: none"},
        {1, 72, 32, 64, "misaligned pointer"},
        {0, 67, 32, 64, "misaligned row stride"},
        {3, 67, 9, 41, "misaligned, partial both ways"},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.what);
        rows_params p = {dsrc.p, c.off, c.ld, c.nrows, c.ncols, dout.p};
        ASSERT_EQ(tile_test::launch(CKT_KERNEL_REF(rows_load_kernel), 1, TT, &p), CKT_SUCCESS) << ckt_last_error();
        const std::vector<uint16_t> out = dout.download();
        int bad = 0;
        for (int r = 0; r < RR; r++)
            for (int col = 0; col < CC; col++) {
                const uint16_t want = r < c.nrows && col < c.ncols ? src[(size_t)(c.off + r * c.ld + col)] : 0;
                if (out[(size_t)(r * CC + col)] != want && bad++ < 5)
                    ADD_FAILURE() << "(" << r << ", " << col << ") = " << out[(size_t)(r * CC + col)] << ", want "
                                  << want;
            }
        EXPECT_EQ(bad, 0);
    }
}

// ckt_warp_red_acc_f32 / ckt_warp_store_acc_f32 on an accumulator-ordered
// AR x AC fp32 matrix (ckt_acc_offset), one warp, WM x WN tiles whose value
// at tile element (r, c) is 1000 op + 100 r + c: a partial store at (16, 32),
// a whole add at (0, 0) and a partial add at (32, 0), disjoint. Each op
// touches whole accumulator blocks that start inside its nrows x ncols window
// (mma.sync: 16 x 8; MFMA: single elements) and nothing else.
enum { AR = 48, AC = 64, AWM = 32, AWN = 32 };

struct AccOp {
    int store, row0, col0, nrows, ncols;
};
const AccOp acc_ops[3] = {{1, 16, 32, 10, 9}, {0, 0, 0, AR, AC}, {0, 32, 0, 5, 3}};

typedef struct {
    float *m;
    AccOp ops[3];
} acc_params;

CKT_KERNEL(acc_f32_kernel, acc_params, p)
{
    const int lane = (int)ckt_lane_id();
    for (int op = 0; op < 3; op++) {
        const AccOp o = p.ops[op];
        float acc[CKT_WARP_ACC_REGS(AWM, AWN)];
        for (int i = 0; i < CKT_WARP_ACC_REGS(AWM, AWN); i++) {
            int r, c;
            ckt_warp_acc_coord(&r, &c, i, lane, AWM, AWN);
            acc[i] = (float)(1000 * op + 100 * r + c);
        }
        if (o.store)
            ckt_warp_store_acc_f32(p.m, AC, acc, o.row0, o.col0, AWM, AWN, o.nrows, o.ncols);
        else
            ckt_warp_red_acc_f32(p.m, AC, acc, o.row0, o.col0, AWM, AWN, o.nrows, o.ncols);
        ckt_block_sync();
    }
}

TEST(MmaTile, AccumulatorOrderedAddAndStore)
{
    std::vector<float> init(AR * AC);
    for (size_t i = 0; i < init.size(); i++)
        init[i] = 0.25f * (float)(i % 7) - 3.0f;
    tile_test::DevBuf<float> dm(init.size());
    dm.upload(init);
    acc_params p = {dm.p, {acc_ops[0], acc_ops[1], acc_ops[2]}};
    ASSERT_EQ(tile_test::launch(CKT_KERNEL_REF(acc_f32_kernel), 1, CKT_WARP_SIZE, &p), CKT_SUCCESS)
        << ckt_last_error();
    const std::vector<float> got = dm.download();
    std::vector<float> want = init;
    for (int op = 0; op < 3; op++) {
        const AccOp &o = acc_ops[op];
        for (int r = 0; r < AWM; r++)
            for (int c = 0; c < AWN; c++) {
                // the block holding (r, c) starts inside the window
                if (r / CKT_ACC_BLOCK_ROWS * CKT_ACC_BLOCK_ROWS >= o.nrows ||
                    c / CKT_ACC_BLOCK_COLS * CKT_ACC_BLOCK_COLS >= o.ncols)
                    continue;
                float &w = want[(size_t)ckt_acc_offset(AC, o.row0 + r, o.col0 + c)];
                const float v = (float)(1000 * op + 100 * r + c);
                w = o.store ? v : w + v;
            }
    }
    int bad = 0, touched = 0;
    for (size_t i = 0; i < got.size(); i++) {
        touched += want[i] != init[i];
        if (got[i] != want[i] && bad++ < 5)
            ADD_FAILURE() << "m[" << i << "] = " << got[i] << ", want " << want[i];
    }
    EXPECT_EQ(bad, 0);
    EXPECT_GT(touched, AWM * AWN); // the whole add alone touches a tile
}

} // namespace
