// The host layer: status table, random init, comparison, runtime, timer.
#include "ckt/host.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace {

TEST(Status, TableGivesNamesAndMessages)
{
    EXPECT_STREQ(ckt_status_string(CKT_SUCCESS), "success");
    EXPECT_STREQ(ckt_status_name(CKT_ERROR_NULL_POINTER), "CKT_ERROR_NULL_POINTER");
    EXPECT_STREQ(ckt_status_string((ckt_status)999), "unknown status");
    std::set<std::string> msgs;
    for (int s = 0; s < CKT_STATUS_COUNT; s++)
        msgs.insert(ckt_status_string((ckt_status)s));
    EXPECT_EQ(msgs.size(), (size_t)CKT_STATUS_COUNT); // every status has its own message
    EXPECT_EQ(ckt__fail(CKT_ERROR_MISALIGNED, "q: stride %d", 3), CKT_ERROR_MISALIGNED);
    EXPECT_STREQ(ckt_last_error(), "q: stride 3");
}

TEST(Random, SameSeedSameNumbersDifferentSeedDifferent)
{
    std::vector<float> a(1000), b(1000), c(1000);
    ASSERT_EQ(ckt_fill(a.data(), CKT_F32, 1000, ckt_init_uniform(-1, 1), 7), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(b.data(), CKT_F32, 1000, ckt_init_uniform(-1, 1), 7), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(c.data(), CKT_F32, 1000, ckt_init_uniform(-1, 1), 8), CKT_SUCCESS);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    ckt_rng r;
    ckt_rng_seed(&r, 0); // known first output pins the generator across machines
    uint64_t first = ckt_rng_u64(&r);
    ckt_rng_seed(&r, 0);
    EXPECT_EQ(ckt_rng_u64(&r), first);
}

TEST(Random, DistributionsHaveTheirMoments)
{
    const int n = 200000;
    ckt_rng r;
    ckt_rng_seed(&r, 1);
    double su = 0, sn = 0, sn2 = 0;
    int lo = 0, hi = 0;
    for (int i = 0; i < n; i++) {
        float u = ckt_rng_uniform(&r, 2.0f, 4.0f);
        ASSERT_TRUE(u >= 2.0f && u < 4.0f);
        su += u;
        float g = ckt_rng_normal(&r, 1.0f, 2.0f);
        sn += g;
        sn2 += (double)g * g;
        int k = ckt_rng_int(&r, -3, 3);
        ASSERT_TRUE(k >= -3 && k <= 3);
        lo += k == -3;
        hi += k == 3;
    }
    EXPECT_NEAR(su / n, 3.0, 0.01);
    double mean = sn / n;
    EXPECT_NEAR(mean, 1.0, 0.02);
    EXPECT_NEAR(std::sqrt(sn2 / n - mean * mean), 2.0, 0.02);
    EXPECT_NEAR((double)lo / n, 1.0 / 7, 0.005); // both ends are reachable
    EXPECT_NEAR((double)hi / n, 1.0 / 7, 0.005);
}

TEST(Random, FillsHalfTypesAndRejectsBadInput)
{
    std::vector<ckt_bf16> x(64);
    ASSERT_EQ(ckt_fill(x.data(), CKT_BF16, 64, ckt_init_int(-2, 2), 3), CKT_SUCCESS);
    for (auto v : x) {
        float f = ckt_f32_from_bf16(v);
        EXPECT_EQ(f, std::round(f));
        EXPECT_LE(std::fabs(f), 2.0f);
    }
    EXPECT_EQ(ckt_fill(nullptr, CKT_F16, 4, ckt_init_const(1), 0), CKT_ERROR_NULL_POINTER);
    EXPECT_EQ(ckt_fill(x.data(), CKT_F16, 4, ckt_init_int(3, 2), 0), CKT_ERROR_INVALID_ARGUMENT);
}

TEST(Compare, CountsAndReportsMismatches)
{
    std::vector<float> want = {1, 2, 3, 4, 100, INFINITY, -INFINITY, NAN, 0};
    std::vector<float> got = {1, 2.001f, 3.5f, 4, 101.5f, INFINITY, INFINITY, NAN, NAN};
    ckt_compare_result r;
    // index: 1 passes (0.001 <= 0.01 + 0.01*2), 2 fails, 4 fails (1.5 > 0.01 + 1), 6 fails, 8 fails
    EXPECT_EQ(ckt_compare(&r, got.data(), CKT_F32, want.data(), CKT_F32, got.size(), 0.01, 0.01),
              CKT_ERROR_MISMATCH);
    EXPECT_EQ(r.mismatches, 4u);
    ASSERT_EQ(r.reported, 4);
    EXPECT_EQ(r.first[0].index, 2u);
    EXPECT_EQ(r.first[1].index, 4u);
    EXPECT_EQ(r.first[2].index, 6u);
    EXPECT_EQ(r.first[3].index, 8u);
    EXPECT_DOUBLE_EQ(r.max_abs_err, 1.5);
    EXPECT_EQ(r.max_abs_index, 4u);
    EXPECT_EQ(ckt_compare(&r, got.data(), CKT_F32, want.data(), CKT_F32, 2, 0.01, 0.01), CKT_SUCCESS);
    // a half-precision result against an fp32 reference
    std::vector<ckt_f16> h = {ckt_f16_from_f32(0.1f), ckt_f16_from_f32(1000.0f)};
    std::vector<float> ref = {0.1f, 1000.4f};
    EXPECT_EQ(ckt_compare(&r, h.data(), CKT_F16, ref.data(), CKT_F32, 2, 1e-3, 1e-3), CKT_SUCCESS);
    char buf[512];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    ckt_compare(&r, got.data(), CKT_F32, want.data(), CKT_F32, got.size(), 0.01, 0.01);
    ckt_compare_print(f, "x", &r);
    fclose(f);
    EXPECT_NE(std::string(buf).find("4 of 9 elements differ"), std::string::npos) << buf;
    EXPECT_NE(std::string(buf).find("[2] got 3.5 want 3"), std::string::npos) << buf;
}

TEST(Compare, ManyMismatchesKeepTheFirstFew)
{
    std::vector<float> a(100, 1.0f), b(100, 2.0f);
    ckt_compare_result r;
    ckt_compare(&r, a.data(), CKT_F32, b.data(), CKT_F32, 100, 0, 0);
    EXPECT_EQ(r.mismatches, 100u);
    EXPECT_EQ(r.reported, CKT_COMPARE_MAX_REPORTED);
    EXPECT_EQ(r.first[CKT_COMPARE_MAX_REPORTED - 1].index, (size_t)CKT_COMPARE_MAX_REPORTED - 1);
}

} // namespace
