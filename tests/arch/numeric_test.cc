// fp16/bf16 conversions: host software path against known values, and the
// device path (hardware instructions on GPUs) against the host, bit for bit.
#include "ckt/host.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

TEST(Numeric, KnownF16Values)
{
    EXPECT_EQ(ckt_f16_from_f32(1.0f).bits, 0x3c00);
    EXPECT_EQ(ckt_f16_from_f32(-2.0f).bits, 0xc000);
    EXPECT_EQ(ckt_f16_from_f32(65504.0f).bits, 0x7bff);
    EXPECT_EQ(ckt_f16_from_f32(65520.0f).bits, 0x7c00); // rounds to inf
    EXPECT_EQ(ckt_f16_from_f32(65519.0f).bits, 0x7bff);
    EXPECT_EQ(ckt_f16_from_f32(5.960464477539063e-08f).bits, 0x0001); // smallest subnormal
    EXPECT_EQ(ckt_f16_from_f32(2.98023223876953125e-08f).bits, 0x0000); // tie -> even (0)
    EXPECT_EQ(ckt_f16_from_f32(1.0f + 1.0f / 2048).bits, 0x3c00);       // tie -> even
    EXPECT_EQ(ckt_f16_from_f32(1.0f + 3.0f / 2048).bits, 0x3c02);       // tie -> even (up)
    EXPECT_EQ(ckt_f16_from_f32(INFINITY).bits, 0x7c00);
    EXPECT_TRUE((ckt_f16_from_f32(NAN).bits & 0x7c00) == 0x7c00 && (ckt_f16_from_f32(NAN).bits & 0x3ff));
    EXPECT_EQ(ckt_f32_from_f16(ckt_f16{0x3555}), 0.333251953125f);
    EXPECT_EQ(ckt_f32_from_f16(ckt_f16{0x8001}), -5.960464477539063e-08f);
}

TEST(Numeric, KnownBf16Values)
{
    EXPECT_EQ(ckt_bf16_from_f32(1.0f).bits, 0x3f80);
    EXPECT_EQ(ckt_bf16_from_f32(-3.0f).bits, 0xc040);
    EXPECT_EQ(ckt_bf16_from_f32(1.0f + 1.0f / 256).bits, 0x3f80); // tie -> even
    EXPECT_EQ(ckt_bf16_from_f32(1.0f + 3.0f / 256).bits, 0x3f82);
    EXPECT_EQ(ckt_f32_from_bf16(ckt_bf16{0x4049}), 3.140625f);
    EXPECT_TRUE(std::isnan(ckt_f32_from_bf16(ckt_bf16_from_f32(NAN))));
}

TEST(Numeric, F16RoundTripIsExactForEveryFiniteHalf)
{
    for (uint32_t b = 0; b < 65536; b++) {
        ckt_f16 h = {(uint16_t)b};
        float f = ckt_f32_from_f16(h);
        if (std::isnan(f))
            continue;
        ASSERT_EQ(ckt_f16_from_f32(f).bits, h.bits) << std::hex << b;
    }
}

typedef struct conv_params {
    const float *x;
    uint16_t *f16;
    uint16_t *bf16;
    float *back16, *backbf;
    int n;
} conv_params;

CKT_KERNEL(conv_kernel, conv_params, p)
{
    int i = (int)(ckt_block_idx_x() * ckt_block_dim_x() + ckt_thread_idx_x());
    if (i >= p.n)
        return;
    ckt_f16 h = ckt_f16_from_f32(p.x[i]);
    ckt_bf16 b = ckt_bf16_from_f32(p.x[i]);
    p.f16[i] = h.bits;
    p.bf16[i] = b.bits;
    p.back16[i] = ckt_f32_from_f16(h);
    p.backbf[i] = ckt_f32_from_bf16(b);
}

TEST(Numeric, DeviceConversionsMatchHostBitForBit)
{
    std::vector<float> x;
    ckt_rng r;
    ckt_rng_seed(&r, 5);
    for (int i = 0; i < 20000; i++) // every magnitude, random mantissas, both signs
        x.push_back(ckt_f32_from_bits((uint32_t)ckt_rng_u64(&r)));
    for (float v : {0.0f, -0.0f, 65504.0f, 65520.0f, 1e-8f, 6e-5f, 3e38f, INFINITY, -INFINITY})
        x.push_back(v);
    int n = (int)x.size();
    void *dx, *d16, *dbf, *db16, *dbbf;
    ASSERT_EQ(ckt_rt_malloc(&dx, n * 4), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&d16, n * 2), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&dbf, n * 2), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&db16, n * 4), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&dbbf, n * 4), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(dx, x.data(), n * 4, CKT_H2D), CKT_SUCCESS);
    conv_params p = {(const float *)dx, (uint16_t *)d16, (uint16_t *)dbf, (float *)db16, (float *)dbbf, n};
    ASSERT_EQ(ckt_rt_launch(CKT_KERNEL_REF(conv_kernel), ckt_dim3_make((n + 127) / 128, 1, 1),
                            ckt_dim3_make(128, 1, 1), 0, NULL, &p),
              CKT_SUCCESS)
        << ckt_last_error();
    std::vector<uint16_t> h16(n), hbf(n);
    std::vector<float> b16(n), bbf(n);
    ASSERT_EQ(ckt_rt_memcpy(h16.data(), d16, n * 2, CKT_D2H), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(hbf.data(), dbf, n * 2, CKT_D2H), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(b16.data(), db16, n * 4, CKT_D2H), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(bbf.data(), dbbf, n * 4, CKT_D2H), CKT_SUCCESS);
    int nan_seen = 0;
    for (int i = 0; i < n; i++) {
        if (std::isnan(x[i])) { // NaN payloads may differ; NaN-ness may not
            nan_seen++;
            EXPECT_TRUE(std::isnan(b16[i]) && std::isnan(bbf[i])) << i;
            continue;
        }
        ASSERT_EQ(h16[i], ckt_f16_from_f32(x[i]).bits) << "x=" << x[i];
        ASSERT_EQ(hbf[i], ckt_bf16_from_f32(x[i]).bits) << "x=" << x[i];
        ASSERT_EQ(ckt_bits_from_f32(b16[i]), ckt_bits_from_f32(ckt_f32_from_f16(ckt_f16{h16[i]})));
        ASSERT_EQ(ckt_bits_from_f32(bbf[i]), ckt_bits_from_f32(ckt_f32_from_bf16(ckt_bf16{hbf[i]})));
    }
    EXPECT_GT(nan_seen, 0); // the random bits did cover NaNs
    for (void *q : {dx, d16, dbf, db16, dbbf})
        ckt_rt_free(q);
}

} // namespace
