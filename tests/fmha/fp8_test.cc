// The fp8 forward (dtype CKT_FP8_E4M3, ckt_fmha_fwd_args >>fp8) through the
// dispatcher against the CPU reference that quantizes P the same way
// (ckt_ref_fmha_fwd), and against the unquantized attention of the same fp8
// inputs (ckt_ref_fmha_fwd_unquantized) with the looser bound of
// docs/fmha.md#fp8; the e4m3 conversions exhaustively (OCP, and the FNUZ
// reading of gfx940's MFMA); the validation of the fp8 fields. The same
// cases on the nv profile (mma.sync m16n8k32) and the cdna profile (MFMA
// 32x32x16 reading the OCP bytes as FNUZ, as gfx940 does); the inputs hold
// -0 bytes, which FNUZ reads as NaN unless the kernel clears them.
//
// Tolerances (docs/fmha.md#fp8), with vmax = max |V| descale_v:
//   vs the quantizing reference:  |O - ref| <= 2^-5 vmax + 2^-5 |ref|
//   vs the unquantized reference: |O - ref| <= 2^-3 vmax + 2^-6 |ref|
#include "ckt/fmha.h"

#include "tests/fmha/fmha_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

// >>e4m3 conversions: every byte decodes to the OCP value; encoding is
// round-to-nearest-even with saturation, and round-trips every finite byte.
double e4m3_decode_spec(int b)
{
    const int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    if (e == 15 && m == 7)
        return NAN;
    const double v = e == 0 ? m * std::ldexp(1.0, -9) : (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
    return s ? -v : v;
}

TEST(E4m3, DecodesEveryByte)
{
    for (int b = 0; b < 256; b++) {
        const double want = e4m3_decode_spec(b);
        const float got = ckt_f32_from_e4m3((uint8_t)b);
        if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << b;
        } else {
            EXPECT_EQ((double)got, want) << b;
            EXPECT_EQ(ckt_e4m3_from_f32(got), b) << b; // -0 (0x80) keeps its sign
        }
    }
    EXPECT_EQ(ckt_f32_from_e4m3(0x7e), 448.0f);
    EXPECT_EQ(ckt_e4m3_from_f32(-0.0f), 0x80);
}

TEST(E4m3, RoundsToNearestEvenAndSaturates)
{
    // the finite values, sorted; every float between two neighbours rounds to the nearer, ties to even
    std::vector<std::pair<double, int>> vals;
    for (int b = 0; b < 0x7f; b++)
        vals.push_back({e4m3_decode_spec(b), b});
    for (size_t i = 0; i + 1 < vals.size(); i++) {
        const double lo = vals[i].first, hi = vals[i].second + 1 == vals[i + 1].second ? vals[i + 1].first : 0;
        const double mid = (lo + hi) / 2;
        const int even = (vals[i].second & 1) ? vals[i + 1].second : vals[i].second;
        EXPECT_EQ(ckt_e4m3_from_f32((float)mid), even) << mid;
        EXPECT_EQ(ckt_e4m3_from_f32(std::nextafter((float)mid, 0.0f)), vals[i].second) << mid;
        EXPECT_EQ(ckt_e4m3_from_f32(std::nextafter((float)mid, 1000.0f)), vals[i + 1].second) << mid;
        EXPECT_EQ(ckt_e4m3_from_f32((float)-mid), even | 0x80) << mid;
    }
    EXPECT_EQ(ckt_e4m3_from_f32(449.0f), 0x7e);
    EXPECT_EQ(ckt_e4m3_from_f32(1e30f), 0x7e);
    EXPECT_EQ(ckt_e4m3_from_f32(INFINITY), 0x7e);
    EXPECT_EQ(ckt_e4m3_from_f32(-INFINITY), 0xfe);
    EXPECT_EQ(ckt_e4m3_from_f32(NAN), 0x7f);
    EXPECT_EQ(ckt_e4m3_from_f32(std::ldexp(1.0f, -11)), 0x00); // 2^-11 = a quarter of the smallest subnormal
    EXPECT_EQ(ckt_e4m3_from_f32(std::ldexp(1.0f, -10)), 0x00); // a tie: to even (0)
    EXPECT_EQ(ckt_e4m3_from_f32(std::ldexp(3.0f, -10)), 0x02); // 1.5 ulp: tie to even (2)
    EXPECT_EQ(ckt_pack4_e4m3(1.0f, 2.0f, -1.0f, 448.0f), 0x7eb84038u);
}

// ckt_pack4_e4m3_pos (P on CDNA): the bits of ckt_e4m3_from_f32 for every
// f >= 0 around each rounding boundary: every exponent, the top 8 mantissa
// bits, and low bits at and beside the ties (bit 19 is the round bit of a
// normal; subnormal ties are short floats, covered with low bits 0).
TEST(E4m3, NonNegativePackMatchesTheGeneralEncoder)
{
    const uint32_t lows[] = {0x0, 0x1, 0x3fff, 0x4000, 0x7fff};
    int checked = 0;
    for (uint32_t hi = 0; hi <= 0x7f80u; hi++) // sign 0, exponent and mantissa bits 22..15
        for (uint32_t lo : lows) {
            const uint32_t u = hi << 15 | (hi == 0x7f80u ? 0 : lo); // up to +inf, no NaN
            float f;
            std::memcpy(&f, &u, 4);
            const uint32_t got = ckt_pack4_e4m3_pos(f, 0.0f, f, 1.0f);
            const uint32_t want = ckt_e4m3_from_f32(f);
            ASSERT_EQ(got, want | 0x38000000u | want << 16) << std::hex << u;
            checked++;
        }
    EXPECT_GT(checked, 160000);
}

// gfx940's MFMA fp8 is the FNUZ e4m3 (bias 8, no -0: 0x80 is its NaN, 0x7f
// = 240). For every OCP byte but -0 (0x80) and the NaNs (0x7f, 0xff), the
// FNUZ reading of the same byte is exactly half the OCP value (subnormals
// included): OCP bytes can feed the FNUZ MFMA with each operand's descale
// doubled, once 0x80 is mapped to 0x00 (docs/fmha.md#fp8, the AMD kernel).
double e4m3_fnuz_decode(int b)
{
    const int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    if (b == 0x80)
        return NAN;
    const double v = e == 0 ? m * std::ldexp(1.0, -10) : (1.0 + m / 8.0) * std::ldexp(1.0, e - 8);
    return s ? -v : v;
}

TEST(E4m3, FnuzDecodesEveryByte)
{
    for (int b = 0; b < 256; b++) {
        const double want = e4m3_fnuz_decode(b);
        const float got = ckt_f32_from_e4m3_fnuz((uint8_t)b);
        if (std::isnan(want))
            EXPECT_TRUE(std::isnan(got)) << b;
        else
            EXPECT_EQ((double)got, want) << b;
    }
    EXPECT_EQ(ckt_f32_from_e4m3_fnuz(0x7f), 240.0f);
}

// ckt_e4m3x4_fnuz_operand: -0 bytes (0x80) become +0, every other byte
// stays, in every position of the word and beside every neighbour.
TEST(E4m3, FnuzOperandClearsOnlyNegativeZero)
{
    for (int x = 0; x < 256; x++)
        for (int y = 0; y < 256; y++)
            for (int pos = 0; pos < 3; pos++) {
                const uint32_t w = (uint32_t)x << (8 * pos) | (uint32_t)y << (8 * (pos + 1)) |
                                   (pos ? 0x80u : 0x80000000u);
                uint32_t want = 0;
                for (int i = 0; i < 4; i++) {
                    const uint32_t byte = (w >> (8 * i)) & 0xffu;
                    want |= (byte == 0x80u ? 0u : byte) << (8 * i);
                }
                ASSERT_EQ(ckt_e4m3x4_fnuz_operand(w), want) << std::hex << w;
            }
}

TEST(E4m3, FnuzReadingIsHalfTheOcpValue)
{
    int checked = 0;
    for (int b = 0; b < 256; b++) {
        if (b == 0x80 || b == 0x7f || b == 0xff)
            continue;
        EXPECT_EQ(e4m3_fnuz_decode(b), e4m3_decode_spec(b) / 2) << b;
        checked++;
    }
    EXPECT_EQ(checked, 253);
    EXPECT_EQ(e4m3_fnuz_decode(0x00), 0.0); // where -0 (0x80) must go
    EXPECT_EQ(e4m3_fnuz_decode(0x7e), 224.0);
}

// >>the kernel against the references

struct Case {
    ckt_dtype odt = CKT_BF16;
    int d = 64;
    int group = 0;
    int batch = 2, h = 2, hk = 2;
    std::vector<int> sq = {55}, sk = {100};
    ckt_fmha_mask mask = CKT_MASK_NONE;
    int wl = 0, wr = 0;
    int lse = 1;
    int perm = 1;
    float dq = 0.0f, dk = 0.0f, dv = 0.0f, scale_p = 0.0f; // 0: defaults
    float softcap = 0.0f;
    int sink = 0;
    std::string name;
};

std::string case_name(const Case &c)
{
    static const char *masks[] = {"none", "tl", "br", "wtl", "wbr"};
    std::string n = std::string(c.odt == CKT_BF16 ? "fp8bf16" : "fp8fp16") + "_d" + std::to_string(c.d) +
                    (c.group ? "_group" : "_batch") + "_b" + std::to_string(c.batch) + "_h" + std::to_string(c.h) + "_" +
                    std::to_string(c.hk) + "_sq" + fmha_test_list(c.sq) + "_sk" + fmha_test_list(c.sk) + "_" +
                    masks[c.mask];
    if (c.mask >= CKT_MASK_WINDOW_TOP_LEFT)
        n += std::to_string(c.wl) + "_" + std::to_string(c.wr);
    n += c.lse ? "_lse" : "";
    n += c.perm ? "" : "_bshd";
    n += c.dq != 0.0f ? "_descaled" : "";
    n += c.scale_p != 0.0f ? "_sp" + std::to_string((int)c.scale_p) : "";
    n += c.softcap != 0.0f ? "_softcap" : "";
    n += c.sink ? "_sink" : "";
    return n;
}

struct Fp8Run {
    ckt_fmha_fwd_args h, dv;
    std::vector<int32_t> start_q, start_k;
    std::vector<uint8_t> q, k, v;
    std::vector<uint16_t> o;
    std::vector<float> lse, sink;
    FmhaDeviceBuffers bufs;
    ckt_status st = CKT_SUCCESS;
};

// fp8 bytes of uniform(-1, 1) / descale (so the value is uniform(-1, 1) after
// descaling), one in 16 a -0 (0x80), common in quantized data and NaN to
// gfx940's FNUZ MFMA unless the kernel clears it
void fill_e4m3(std::vector<uint8_t> &x, float descale, uint64_t seed)
{
    std::mt19937_64 g(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto &b : x)
        b = g() % 16 == 0 ? 0x80 : ckt_e4m3_from_f32(u(g) / (descale > 0.0f ? descale : 1.0f));
}

void run_case(const Case &c, Fp8Run &r)
{
    ckt_fmha_fwd_args &a = r.h;
    memset(&a, 0, sizeof a);
    a.dtype = CKT_FP8_E4M3;
    a.o_dtype = c.odt;
    a.descale_q = c.dq, a.descale_k = c.dk, a.descale_v = c.dv, a.scale_p = c.scale_p;
    a.batch = c.batch, a.nhead_q = c.h, a.nhead_k = c.hk, a.hdim_q = a.hdim_v = c.d;
    a.group_mode = c.group;
    a.mask = c.mask, a.window_left = c.wl, a.window_right = c.wr;
    a.softcap = c.softcap;
    int64_t rows_q, rows_k;
    if (c.group) {
        r.start_q.assign(1, 0);
        r.start_k.assign(1, 0);
        for (int b = 0; b < c.batch; b++) {
            const int lq = c.sq[std::min<size_t>(b, c.sq.size() - 1)], lk = c.sk[std::min<size_t>(b, c.sk.size() - 1)];
            r.start_q.push_back(r.start_q.back() + lq);
            r.start_k.push_back(r.start_k.back() + lk);
            a.seqlen_q = std::max(a.seqlen_q, lq);
            a.seqlen_k = std::max(a.seqlen_k, lk);
        }
        a.seqstart_q = r.start_q.data();
        a.seqstart_k = r.start_k.data();
        rows_q = r.start_q.back();
        rows_k = r.start_k.back();
    } else {
        a.seqlen_q = c.sq[0];
        a.seqlen_k = c.sk[0];
        rows_q = a.seqlen_q;
        rows_k = a.seqlen_k;
    }
    ckt_fmha_strides(&a.q_stride_b, &a.q_stride_h, &a.q_stride_s, c.perm, c.h, (int)rows_q, c.d);
    ckt_fmha_strides(&a.k_stride_b, &a.k_stride_h, &a.k_stride_s, c.perm, c.hk, (int)rows_k, c.d);
    ckt_fmha_strides(&a.v_stride_b, &a.v_stride_h, &a.v_stride_s, c.perm, c.hk, (int)rows_k, c.d);
    ckt_fmha_strides(&a.o_stride_b, &a.o_stride_h, &a.o_stride_s, c.perm, c.h, (int)rows_q, c.d);
    a.lse_stride_h = rows_q;
    a.lse_stride_b = c.group ? 0 : c.h * rows_q;
    if (c.group)
        a.q_stride_b = a.k_stride_b = a.v_stride_b = a.o_stride_b = 0;
    r.q.assign(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_Q), 0);
    r.k.assign(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_K), 0);
    r.v.assign(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_V), 0);
    r.o.assign(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_O), 0x7b7b);
    r.lse.assign(c.lse ? ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_LSE) : 0, 1234.5f);
    const uint64_t seed = std::hash<std::string>()(c.name) & 0xffff;
    fill_e4m3(r.q, c.dq, seed);
    fill_e4m3(r.k, c.dk, seed + 1);
    fill_e4m3(r.v, c.dv, seed + 2);
    a.q = r.q.data();
    a.k = r.k.empty() ? nullptr : r.k.data();
    a.v = r.v.empty() ? nullptr : r.v.data();
    if (c.sink) {
        r.sink.assign(c.h, 0.0f);
        for (int i = 0; i < c.h; i++)
            r.sink[i] = -1.0f + 1.5f * i;
        a.sink = r.sink.data();
    }
    ckt_fmha_fwd_args &d = r.dv;
    d = a;
    d.q = r.bufs.dev(r.q.data(), r.q.size());
    d.k = r.k.empty() ? nullptr : r.bufs.dev(r.k.data(), r.k.size());
    d.v = r.v.empty() ? nullptr : r.bufs.dev(r.v.data(), r.v.size());
    d.o = r.bufs.dev(r.o.data(), r.o.size() * 2);
    d.lse = c.lse ? (float *)r.bufs.dev(r.lse.data(), r.lse.size() * 4) : nullptr;
    d.sink = c.sink ? (const float *)r.bufs.dev(r.sink.data(), r.sink.size() * 4) : nullptr;
    if (c.group) {
        d.seqstart_q = (const int32_t *)r.bufs.dev(r.start_q.data(), r.start_q.size() * 4);
        d.seqstart_k = (const int32_t *)r.bufs.dev(r.start_k.data(), r.start_k.size() * 4);
    }
    r.st = ckt_fmha_fwd(&d, nullptr);
    if (r.st != CKT_SUCCESS)
        return;
    ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS) << ckt_last_error();
    ASSERT_EQ(ckt_rt_memcpy(r.o.data(), d.o, r.o.size() * 2, CKT_D2H), CKT_SUCCESS);
    if (c.lse) {
        ASSERT_EQ(ckt_rt_memcpy(r.lse.data(), d.lse, r.lse.size() * 4, CKT_D2H), CKT_SUCCESS);
    }
}

// AMD: the fp8 kernel runs on gfx940-942 (the fp8 MFMA); elsewhere (gfx90a)
// the launcher refuses with CKT_ERROR_UNSUPPORTED naming gfx940.
bool device_runs_fp8()
{
#if defined(CKT_BACKEND_AMD)
    ckt_device_props d;
    return ckt_rt_device_props(&d) == CKT_SUCCESS && strstr(d.name, "(gfx94") != nullptr;
#else
    return true;
#endif
}

class Fp8 : public ::testing::TestWithParam<Case> {};

TEST_P(Fp8, MatchesQuantizingReference)
{
    const Case &c = GetParam();
    Fp8Run r;
    run_case(c, r);
    if (!device_runs_fp8()) {
        EXPECT_EQ(r.st, CKT_ERROR_UNSUPPORTED) << ckt_last_error();
        EXPECT_NE(std::string(ckt_last_error()).find("gfx940"), std::string::npos) << ckt_last_error();
        return;
    }
    ASSERT_EQ(r.st, CKT_SUCCESS) << ckt_last_error();
    const ckt_fmha_fwd_args &h = r.h;
    std::vector<float> o_ref(r.o.size(), 0.0f), lse_ref(r.lse.size(), 0.0f), o_exact(r.o.size(), 0.0f);
    ASSERT_EQ(ckt_ref_fmha_fwd(&h, o_ref.data(), c.lse ? lse_ref.data() : nullptr), CKT_SUCCESS) << ckt_last_error();
    ASSERT_EQ(ckt_ref_fmha_fwd_unquantized(&h, o_exact.data(), nullptr), CKT_SUCCESS) << ckt_last_error();
    const double vmax = c.dv > 0.0f ? 1.0 : 1.0; // |V| descale_v <= 1 by construction
    ckt_compare_result ro, rl;
    ckt_status st = ckt_ref_fmha_compare(&ro, c.lse ? &rl : nullptr, &h, r.o.data(), c.lse ? r.lse.data() : nullptr,
                                         o_ref.data(), c.lse ? lse_ref.data() : nullptr, vmax / 32, 1.0 / 32);
    EXPECT_EQ(st, CKT_SUCCESS) << ckt_last_error() << " max abs err " << ro.max_abs_err;
    st = ckt_ref_fmha_compare(&ro, nullptr, &h, r.o.data(), nullptr, o_exact.data(), nullptr, vmax / 8, 1.0 / 64);
    EXPECT_EQ(st, CKT_SUCCESS) << "unquantized: " << ckt_last_error() << " max abs err " << ro.max_abs_err;
}

std::vector<Case> matrix()
{
    std::vector<Case> m;
    auto add = [&](Case c) {
        c.name = case_name(c);
        m.push_back(c);
    };
    struct Mask {
        ckt_fmha_mask m;
        int l, r;
    };
    const Mask masks[] = {{CKT_MASK_NONE, 0, 0},
                          {CKT_MASK_CAUSAL_TOP_LEFT, 0, 0},
                          {CKT_MASK_CAUSAL_BOTTOM_RIGHT, 0, 0},
                          {CKT_MASK_WINDOW_TOP_LEFT, 20, 3},
                          {CKT_MASK_WINDOW_BOTTOM_RIGHT, 7, 0}};
    int n = 0;
    // batch mode: ragged lengths x masks, both head dims and output types
    const std::vector<std::pair<int, int>> lens = {{1, 1}, {3, 257}, {55, 100}, {100, 55}, {257, 3}};
    for (const auto &l : lens)
        for (const Mask &mk : masks) {
            if ((n++) % 2)
                continue; // half the product keeps the emulator's run short
            Case c;
            c.sq = {l.first};
            c.sk = {l.second};
            c.mask = mk.m, c.wl = mk.l, c.wr = mk.r;
            c.odt = n % 4 < 2 ? CKT_BF16 : CKT_F16;
            c.d = n % 3 == 0 ? 128 : 64;
            c.hk = n % 5 == 0 ? 1 : 2; // GQA
            c.perm = n % 7 != 3;
            c.lse = n % 6 != 1;
            add(c);
        }
    // group mode
    {
        Case c;
        c.group = 1;
        c.batch = 5;
        c.sq = {1, 3, 55, 100, 257};
        c.sk = {257, 3, 100, 55, 1};
        c.h = 4;
        c.hk = 2;
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        add(c);
        c.odt = CKT_F16;
        c.d = 128;
        c.mask = CKT_MASK_WINDOW_TOP_LEFT, c.wl = 16, c.wr = 4;
        add(c);
    }
    // descales != 1 and a P scale, soft-cap, sinks
    {
        Case c;
        c.dq = 1.0f / 64, c.dk = 1.0f / 128, c.dv = 1.0f / 256;
        add(c);
        c.d = 128;
        c.odt = CKT_F16;
        c.scale_p = 256.0f;
        c.mask = CKT_MASK_CAUSAL_TOP_LEFT;
        add(c);
        Case s;
        s.softcap = 2.0f;
        s.sink = 1;
        s.dq = 1.0f / 32;
        add(s);
    }
    return m;
}

INSTANTIATE_TEST_SUITE_P(Matrix, Fp8, ::testing::ValuesIn(matrix()),
                         [](const ::testing::TestParamInfo<Case> &i) { return i.param.name; });

// >>validation of the fp8 fields, through the dispatcher: the error names the field
TEST(Fp8Validate, NamesTheField)
{
    if (!device_runs_fp8())
        GTEST_SKIP() << "no fp8 MFMA on this device (gfx940-942 only)";
    Case c;
    c.sq = {16};
    c.sk = {16};
    c.name = "validate";
    Fp8Run base;
    run_case(c, base);
    ASSERT_EQ(base.st, CKT_SUCCESS) << ckt_last_error();
    struct Bad {
        const char *field;
        std::function<void(ckt_fmha_fwd_args &)> f;
        ckt_status want;
    };
    float slopes = 0.0f;
    const Bad bads[] = {
        {"o_dtype", [](ckt_fmha_fwd_args &a) { a.o_dtype = CKT_F32; }, CKT_ERROR_UNSUPPORTED},
        {"descale_q", [](ckt_fmha_fwd_args &a) { a.descale_q = -1.0f; }, CKT_ERROR_INVALID_ARGUMENT},
        {"descale_v", [](ckt_fmha_fwd_args &a) { a.descale_v = NAN; }, CKT_ERROR_INVALID_ARGUMENT},
        {"scale_p", [](ckt_fmha_fwd_args &a) { a.scale_p = INFINITY; }, CKT_ERROR_INVALID_ARGUMENT},
        {"q_stride_s", [](ckt_fmha_fwd_args &a) { a.q_stride_s = 72; }, CKT_ERROR_UNSUPPORTED},
        {"v_stride_h", [](ckt_fmha_fwd_args &a) { a.v_stride_h += 8; }, CKT_ERROR_UNSUPPORTED},
        {"hdim_q", [](ckt_fmha_fwd_args &a) { a.hdim_q = 40; a.hdim_v = 40; }, CKT_ERROR_UNSUPPORTED},
        {"p_drop", [](ckt_fmha_fwd_args &a) { a.p_drop = 0.1f; }, CKT_ERROR_UNSUPPORTED},
        {"alibi_slopes", [&](ckt_fmha_fwd_args &a) { a.alibi_slopes = &slopes; }, CKT_ERROR_UNSUPPORTED},
    };
    for (const Bad &b : bads) {
        ckt_fmha_fwd_args a = base.dv;
        b.f(a);
        if (std::string(b.field) == "alibi_slopes")
            a.alibi_slopes = (const float *)base.bufs.dev(&slopes, 4);
        EXPECT_EQ(ckt_fmha_fwd(&a, nullptr), b.want) << b.field << ": " << ckt_last_error();
        EXPECT_EQ(std::string(ckt_last_error()).rfind(b.field, 0), 0u) << ckt_last_error();
    }
}

} // namespace
