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

// >>byte permutes (ckt_byte_perm: prmt on NVIDIA devices, a loop elsewhere)
// against their definition written out: result byte n = byte s_n of the
// eight bytes x0..x3 y0..y3; and the 4x4 byte transpose built on them.
typedef struct perm_params {
    const uint32_t *x, *y, *sel;
    uint32_t *out;
    int n;
} perm_params;

CKT_KERNEL(perm_kernel, perm_params, p)
{
    int i = (int)(ckt_block_idx_x() * ckt_block_dim_x() + ckt_thread_idx_x());
    if (i < p.n)
        p.out[i] = ckt_byte_perm(p.x[i], p.y[i], p.sel[i]);
}

uint32_t perm_by_definition(uint32_t x, uint32_t y, uint32_t sel)
{
    uint8_t b[8];
    for (int k = 0; k < 4; k++) {
        b[k] = (uint8_t)(x >> (8 * k));
        b[4 + k] = (uint8_t)(y >> (8 * k));
    }
    uint32_t r = 0;
    for (int n = 0; n < 4; n++)
        r |= (uint32_t)b[(sel >> (4 * n)) & 7] << (8 * n);
    return r;
}

TEST(Numeric, BytePermMatchesItsDefinitionOnHostAndDevice)
{
    const int n = 4096;
    std::vector<uint32_t> x(n), y(n), sel(n), out(n);
    ckt_rng r;
    ckt_rng_seed(&r, 11);
    for (int i = 0; i < n; i++) {
        x[i] = (uint32_t)ckt_rng_u64(&r), y[i] = (uint32_t)ckt_rng_u64(&r);
        sel[i] = (uint32_t)ckt_rng_u64(&r) & 0x7777u; // selector nibbles 0..7
    }
    for (uint32_t s : {0x5140u, 0x7362u, 0x5410u, 0x7632u, 0x6420u, 0x7531u}) // the ones the fp8 kernels use
        for (int i = 0; i < 4; i++)
            x.push_back(0x03020100u + 0x04040404u * i), y.push_back(0x07060504u + 0x04040404u * i), sel.push_back(s);
    const int m = (int)x.size();
    out.resize(m);
    for (int i = 0; i < m; i++)
        ASSERT_EQ(ckt_byte_perm(x[i], y[i], sel[i]), perm_by_definition(x[i], y[i], sel[i])) << std::hex << sel[i];
    void *dx, *dy, *ds, *dout;
    ASSERT_EQ(ckt_rt_malloc(&dx, m * 4), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&dy, m * 4), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&ds, m * 4), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&dout, m * 4), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(dx, x.data(), m * 4, CKT_H2D), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(dy, y.data(), m * 4, CKT_H2D), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(ds, sel.data(), m * 4, CKT_H2D), CKT_SUCCESS);
    perm_params p = {(const uint32_t *)dx, (const uint32_t *)dy, (const uint32_t *)ds, (uint32_t *)dout, m};
    ASSERT_EQ(ckt_rt_launch(CKT_KERNEL_REF(perm_kernel), ckt_dim3_make((m + 127) / 128, 1, 1), ckt_dim3_make(128, 1, 1),
                            0, NULL, &p),
              CKT_SUCCESS)
        << ckt_last_error();
    ASSERT_EQ(ckt_rt_memcpy(out.data(), dout, m * 4, CKT_D2H), CKT_SUCCESS);
    for (int i = 0; i < m; i++)
        ASSERT_EQ(out[i], perm_by_definition(x[i], y[i], sel[i])) << i << " sel " << std::hex << sel[i];
    for (void *q : {dx, dy, ds, dout})
        ckt_rt_free(q);
}

TEST(Numeric, TransposeBytes4x4)
{
    const uint32_t w[4] = {0x03020100u, 0x13121110u, 0x23222120u, 0x33323130u}; // byte e of w[i] = 16 i + e
    uint32_t x[4];
    ckt_transpose_bytes_4x4(x, w);
    for (int i = 0; i < 4; i++)
        for (int e = 0; e < 4; e++)
            EXPECT_EQ((x[i] >> (8 * e)) & 0xffu, 16u * e + i) << i << " " << e;
}

} // namespace
