// The first kernels (examples/vector_add) on every backend, over ragged sizes.
#include "ckt/host.h"
#include "examples/vector_add/vector_add.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

struct DeviceBuf {
    void *p = nullptr;
    explicit DeviceBuf(size_t bytes) { EXPECT_EQ(ckt_rt_malloc(&p, bytes), CKT_SUCCESS) << ckt_last_error(); }
    ~DeviceBuf() { ckt_rt_free(p); }
    float *f() { return static_cast<float *>(p); }
};

class VectorAdd : public ::testing::TestWithParam<int64_t> {};

TEST_P(VectorAdd, MatchesHost)
{
    const int64_t n = GetParam();
    const size_t bytes = (size_t)n * sizeof(float);
    std::vector<float> a(n + 1), b(n + 1), c(n + 1, -7.0f);
    ASSERT_EQ(ckt_fill(a.data(), CKT_F32, n, ckt_init_uniform(-2, 2), 1), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(b.data(), CKT_F32, n, ckt_init_uniform(-2, 2), 2), CKT_SUCCESS);
    DeviceBuf da(bytes + 4), db(bytes + 4), dc(bytes + 4);
    ASSERT_EQ(ckt_rt_memcpy(da.p, a.data(), bytes, CKT_H2D), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(db.p, b.data(), bytes, CKT_H2D), CKT_SUCCESS);
    // A sentinel just past the end: the kernel must not write it.
    const float sentinel = 12345.0f;
    ASSERT_EQ(ckt_rt_memcpy(dc.f() + n, &sentinel, 4, CKT_H2D), CKT_SUCCESS);
    vadd_params p = {da.f(), db.f(), dc.f(), n};
    ASSERT_EQ(ckt_rt_launch(CKT_KERNEL_REF(vadd_kernel), vadd_grid(n), vadd_block(), 0, NULL, &p),
              CKT_SUCCESS)
        << ckt_last_error();
    ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(c.data(), dc.p, bytes + 4, CKT_D2H), CKT_SUCCESS);
    for (int64_t i = 0; i < n; i++)
        ASSERT_EQ(c[i], a[i] + b[i]) << "at i=" << i;
    EXPECT_EQ(c[n], sentinel);
}

TEST_P(VectorAdd, GridStrideCopyWithSmallGrid)
{
    const int64_t n = GetParam();
    const size_t bytes = (size_t)n * sizeof(float);
    std::vector<float> a(n + 1), c(n + 1);
    ASSERT_EQ(ckt_fill(a.data(), CKT_F32, n, ckt_init_normal(0, 1), 3), CKT_SUCCESS);
    DeviceBuf da(bytes + 4), dc(bytes + 4);
    ASSERT_EQ(ckt_rt_memcpy(da.p, a.data(), bytes, CKT_H2D), CKT_SUCCESS);
    copy_params p = {da.f(), dc.f(), n};
    ASSERT_EQ(ckt_rt_launch(CKT_KERNEL_REF(copy_kernel), ckt_dim3_make(3, 1, 1),
                            ckt_dim3_make(96, 1, 1), 0, NULL, &p),
              CKT_SUCCESS)
        << ckt_last_error();
    ASSERT_EQ(ckt_rt_memcpy(c.data(), dc.p, bytes, CKT_D2H), CKT_SUCCESS);
    for (int64_t i = 0; i < n; i++)
        ASSERT_EQ(c[i], a[i]) << "at i=" << i;
}

INSTANTIATE_TEST_SUITE_P(Ragged, VectorAdd, ::testing::Values(0, 1, 31, 255, 256, 257, 1000, 70001));

TEST(Launch, RejectsBadArguments)
{
    vadd_params p = {nullptr, nullptr, nullptr, 0};
    EXPECT_EQ(ckt_rt_launch(CKT_KERNEL_REF(vadd_kernel), ckt_dim3_make(0, 1, 1), vadd_block(), 0,
                            NULL, &p),
              CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ckt_last_error()).find("zero extent"), std::string::npos);
    EXPECT_EQ(ckt_rt_launch(CKT_KERNEL_REF(vadd_kernel), vadd_grid(1), vadd_block(), 0, NULL, NULL),
              CKT_ERROR_NULL_POINTER);
    EXPECT_NE(std::string(ckt_last_error()).find("params"), std::string::npos);
}

} // namespace
