// ckt/tile/mma.h pieces the attention backward relies on, one warp against a
// host product: C = A B with A read from an [k][m] shared tile
// (ckt_warp_load_a_km: ldmatrix.trans / MFMA gather), B from a [k][n] tile
// (ckt_warp_load_b_kn), the fp32 accumulator handed back through shared
// memory by ckt_warp_store_acc_b16 (scaled, rounded to fp16). Both emulator
// profiles and the GPU.
#include "ckt/host.h"
#include "ckt/tile/mma.h"
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

} // namespace
