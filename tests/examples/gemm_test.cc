// The GEMM example (block GEMM from the tile layer) against the CPU reference,
// over ragged shapes, both layouts, fp16 and bf16, on every backend; both
// paths: mma.sync / MFMA (gemm.h) and TMA + wgmma (gemm_sm90.h, where the
// target has it: the emulator's nv profile, an sm_90 GPU).
#include "ckt/host.h"
#include "examples/gemm/gemm.h"
#include "examples/gemm/gemm_sm90.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

namespace {

struct Case {
    int64_t m, n, k;
};

class Gemm : public ::testing::TestWithParam<std::tuple<Case, int, ckt_dtype, int>> {};

TEST_P(Gemm, MatchesReference)
{
    const Case c = std::get<0>(GetParam());
    const int b_nk = std::get<1>(GetParam());
    const ckt_dtype dt = std::get<2>(GetParam());
    const int sm90 = std::get<3>(GetParam());
    if (sm90 && !gemm_sm90_supported())
        GTEST_SKIP() << "no wgmma on this target";
    const int64_t lda = (c.k + 7) / 8 * 8, ldb = b_nk ? lda : (c.n + 7) / 8 * 8, ldc = c.n + 3;
    const size_t na = (size_t)(c.m * lda), nb = (size_t)((b_nk ? c.n : c.k) * ldb), nc = (size_t)(c.m * ldc);
    std::vector<uint16_t> a(na + 1), b(nb + 1), out(nc + 1);
    // small integers: every product and sum is exact in fp32, the result exact in fp16/bf16
    ASSERT_EQ(ckt_fill(a.data(), dt, na, ckt_init_int(-2, 2), 1 + c.m), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(b.data(), dt, nb, ckt_init_int(-2, 2), 2 + c.n), CKT_SUCCESS);
    void *da, *db, *dcp;
    ASSERT_EQ(ckt_rt_malloc(&da, na * 2 + 16), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&db, nb * 2 + 16), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&dcp, nc * 2 + 16), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(da, a.data(), na * 2, CKT_H2D), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(db, b.data(), nb * 2, CKT_H2D), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memset(dcp, 0x7b, nc * 2), CKT_SUCCESS); // sentinel in the ldc padding
    gemm_params p = {da, db, dcp, c.m, c.n, c.k, lda, ldb, ldc};
    ASSERT_EQ(sm90 ? gemm_sm90_run(&p, b_nk, dt, NULL) : gemm_run(&p, b_nk, dt, NULL), CKT_SUCCESS)
        << ckt_last_error();
    ASSERT_EQ(ckt_rt_memcpy(out.data(), dcp, nc * 2, CKT_D2H), CKT_SUCCESS);
    std::vector<float> ref(nc, 0.0f);
    ckt_ref_gemm(ref.data(), ldc, a.data(), dt, lda, b.data(), dt, ldb, b_nk, c.m, c.n, c.k);
    for (int64_t i = 0; i < c.m; i++) {
        for (int64_t j = 0; j < c.n; j++) {
            // exact sums rounded once to the output type (bf16 holds integers
            // exactly only up to 256)
            float want = dt == CKT_BF16 ? ckt_f32_from_bf16(ckt_bf16_from_f32(ref[i * ldc + j]))
                                        : ckt_f32_from_f16(ckt_f16_from_f32(ref[i * ldc + j]));
            float got = ckt_load_f32(out.data(), dt, (size_t)(i * ldc + j));
            ASSERT_EQ(got, want)
                << "C[" << i << "][" << j << "] m=" << c.m << " n=" << c.n << " k=" << c.k;
        }
        for (int64_t j = c.n; j < ldc; j++)
            ASSERT_EQ(out[i * ldc + j], 0x7b7b) << "padding written at row " << i;
    }
    ckt_rt_free(da);
    ckt_rt_free(db);
    ckt_rt_free(dcp);
}

INSTANTIATE_TEST_SUITE_P(Ragged, Gemm,
                         ::testing::Combine(::testing::Values(Case{1, 1, 1}, Case{7, 9, 16}, Case{128, 128, 32},
                                                              Case{130, 70, 100}, Case{257, 129, 33},
                                                              Case{64, 300, 200}, Case{5, 8, 0},
                                                              Case{300, 520, 136}),
                                            ::testing::Values(0, 1), ::testing::Values(CKT_F16, CKT_BF16),
                                            ::testing::Values(0, 1)));

TEST(GemmArgs, RejectsBadInput)
{
    uint16_t buf[64] __attribute__((aligned(16)));
    gemm_params p = {buf, buf, buf, 4, 4, 8, 8, 8, 4};
    EXPECT_EQ(gemm_run(nullptr, 0, CKT_F16, NULL), CKT_ERROR_NULL_POINTER);
    gemm_params q = p;
    q.m = -1;
    EXPECT_EQ(gemm_run(&q, 0, CKT_F16, NULL), CKT_ERROR_INVALID_ARGUMENT);
    q = p;
    q.lda = 4;
    EXPECT_EQ(gemm_run(&q, 0, CKT_F16, NULL), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ckt_last_error()).find("lda"), std::string::npos);
    q = p;
    q.a = buf + 1;
    EXPECT_EQ(gemm_run(&q, 0, CKT_F16, NULL), CKT_ERROR_MISALIGNED);
    q = p;
    q.b = nullptr;
    EXPECT_EQ(gemm_run(&q, 0, CKT_F16, NULL), CKT_ERROR_NULL_POINTER);
    EXPECT_EQ(gemm_run(&p, 0, CKT_F32, NULL), CKT_ERROR_UNSUPPORTED);
}

} // namespace
