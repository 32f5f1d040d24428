// A shared-memory tiled matmul (tests/arch/matmul_kernel.h: cp.async, then
// ldmatrix + mma.sync on the nv profile / NVIDIA, MFMA on the cdna profile /
// AMD) against a host reference. Integer-valued fp16 inputs: exact results.
#include "ckt/host.h"
#include "tests/arch/matmul_kernel.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

struct Shape {
    int m, n, k;
};

void PrintTo(const Shape &s, std::ostream *os) { *os << s.m << "x" << s.n << "x" << s.k; }

class Matmul : public ::testing::TestWithParam<Shape> {};

TEST_P(Matmul, MatchesHost)
{
    const Shape s = GetParam();
    ckt_rng r;
    ckt_rng_seed(&r, 2024);
    std::vector<float> a(s.m * s.k), b(s.k * s.n);
    std::vector<ckt_f16> ah(a.size()), bh(b.size());
    for (size_t i = 0; i < a.size(); i++)
        ah[i] = ckt_f16_from_f32(a[i] = (float)ckt_rng_int(&r, -3, 3));
    for (size_t i = 0; i < b.size(); i++)
        bh[i] = ckt_f16_from_f32(b[i] = (float)ckt_rng_int(&r, -3, 3));
    void *da, *db, *dc;
    ASSERT_EQ(ckt_rt_malloc(&da, ah.size() * 2), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&db, bh.size() * 2), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&dc, (size_t)s.m * s.n * 4), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(da, ah.data(), ah.size() * 2, CKT_H2D), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(db, bh.data(), bh.size() * 2, CKT_H2D), CKT_SUCCESS);
    mm_params p = {(const ckt_f16 *)da, (const ckt_f16 *)db, (float *)dc, s.m, s.n, s.k};
    ASSERT_EQ(ckt_rt_launch(CKT_KERNEL_REF(mm_kernel), mm_grid(s.m, s.n), mm_block(), 0, NULL, &p), CKT_SUCCESS)
        << ckt_last_error();
    std::vector<float> c((size_t)s.m * s.n);
    ASSERT_EQ(ckt_rt_memcpy(c.data(), dc, c.size() * 4, CKT_D2H), CKT_SUCCESS);
    int bad = 0;
    for (int i = 0; i < s.m; i++)
        for (int j = 0; j < s.n; j++) {
            float want = 0; // |sum| <= 9 K: exact in fp32, in any order
            for (int k = 0; k < s.k; k++)
                want += a[i * s.k + k] * b[k * s.n + j];
            if (c[(size_t)i * s.n + j] != want && ++bad <= 5)
                ADD_FAILURE() << "C[" << i << "][" << j << "] = " << c[(size_t)i * s.n + j] << ", want " << want;
        }
    EXPECT_EQ(bad, 0) << "mismatches of " << s.m * s.n;
    ckt_rt_free(da);
    ckt_rt_free(db);
    ckt_rt_free(dc);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Matmul, ::testing::Values(Shape{128, 128, 128}, Shape{64, 192, 96}, Shape{192, 64, 32}),
                         [](const ::testing::TestParamInfo<Shape> &i) {
                             return std::to_string(i.param.m) + "x" + std::to_string(i.param.n) + "x" +
                                    std::to_string(i.param.k);
                         });

} // namespace
