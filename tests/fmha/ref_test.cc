// The CPU reference of the FMHA forward (ckt/fmha/ref.h) on hand-computed
// cases: a single key gives V, uniform logits average the visible values (so
// each mask's visible set shows in O and LSE), fully masked rows, seqlen_k = 0,
// GQA / MQA head mapping, soft-cap, layouts, group mode with logical lengths;
// and its helpers (tensor sizes, FLOP pairs, comparison).
#include "ckt/fmha/ref.h"
#include "ckt/host/random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

const float kNegInf = -INFINITY;

// Dense [b][h][s][d] fp32 tensors, batch mode.
struct Dense {
    ckt_fmha_fwd_args a;
    std::vector<float> q, k, v, o, lse;

    Dense(int batch, int h, int hk, int sq, int sk, int d, int dv)
    {
        memset(&a, 0, sizeof a);
        a.dtype = CKT_F32;
        a.batch = batch;
        a.nhead_q = h;
        a.nhead_k = hk;
        a.seqlen_q = sq;
        a.seqlen_k = sk;
        a.hdim_q = d;
        a.hdim_v = dv;
        ckt_fmha_strides(&a.q_stride_b, &a.q_stride_h, &a.q_stride_s, 1, h, sq, d);
        ckt_fmha_strides(&a.k_stride_b, &a.k_stride_h, &a.k_stride_s, 1, hk, sk, d);
        ckt_fmha_strides(&a.v_stride_b, &a.v_stride_h, &a.v_stride_s, 1, hk, sk, dv);
        ckt_fmha_strides(&a.o_stride_b, &a.o_stride_h, &a.o_stride_s, 1, h, sq, dv);
        a.lse_stride_h = sq;
        a.lse_stride_b = (int64_t)h * sq;
        q.assign((size_t)batch * h * sq * d, 0.0f);
        k.assign((size_t)batch * hk * sk * d, 0.0f);
        v.assign((size_t)batch * hk * sk * dv, 0.0f);
        o.assign((size_t)batch * h * sq * dv, 12345.0f);
        lse.assign((size_t)batch * h * sq, 12345.0f);
    }
    float &Q(int b, int h, int i, int d) { return q[(size_t)(b * a.q_stride_b + h * a.q_stride_h + i * a.q_stride_s + d)]; }
    float &K(int b, int h, int j, int d) { return k[(size_t)(b * a.k_stride_b + h * a.k_stride_h + j * a.k_stride_s + d)]; }
    float &V(int b, int h, int j, int d) { return v[(size_t)(b * a.v_stride_b + h * a.v_stride_h + j * a.v_stride_s + d)]; }
    float O(int b, int h, int i, int d) const { return o[(size_t)(b * a.o_stride_b + h * a.o_stride_h + i * a.o_stride_s + d)]; }
    float L(int b, int h, int i) const { return lse[(size_t)(b * a.lse_stride_b + h * a.lse_stride_h + i)]; }
    ckt_status run()
    {
        a.q = q.data();
        a.k = k.empty() ? nullptr : k.data();
        a.v = v.empty() ? nullptr : v.data();
        return ckt_ref_fmha_fwd(&a, o.data(), lse.data());
    }
};

TEST(RefFmha, SingleKeyGivesItsValueAndDefaultScale)
{
    Dense t(1, 1, 1, 3, 1, 16, 8);
    for (int i = 0; i < 3; i++)
        for (int d = 0; d < 16; d++)
            t.Q(0, 0, i, d) = 0.1f * (float)(i + d);
    for (int d = 0; d < 16; d++)
        t.K(0, 0, 0, d) = d % 2 ? 1.0f : -0.5f;
    for (int d = 0; d < 8; d++)
        t.V(0, 0, 0, d) = (float)(d + 1);
    ASSERT_EQ(t.run(), CKT_SUCCESS) << ckt_last_error();
    for (int i = 0; i < 3; i++) {
        double dot = 0;
        for (int d = 0; d < 16; d++)
            dot += (double)t.Q(0, 0, i, d) * t.K(0, 0, 0, d);
        EXPECT_NEAR(t.L(0, 0, i), dot / 4.0, 1e-6) << "LSE = scale * q.k, scale 1/sqrt(16)";
        for (int d = 0; d < 8; d++)
            EXPECT_FLOAT_EQ(t.O(0, 0, i, d), (float)(d + 1));
    }
}

// Bias and ALiBi in the reference: with q = 0 the logits are the bias
// alone, so LSE[i] = log sum_{visible j} exp(B_ij) and O[i] = sum_j
// softmax(B)_j V[j]. ALiBi by hand: B = -slope |j - i - off|, off = sk - sq
// for bottom-right masks, 0 for top-left and no mask; the same values as an
// elementwise bias (broadcast over the batch) give the same result.
TEST(RefFmha, BiasAndAlibiAddToTheLogits)
{
    struct C {
        ckt_fmha_mask mask;
        int off;
    } cases[] = {{CKT_MASK_NONE, 0}, {CKT_MASK_CAUSAL_TOP_LEFT, 0}, {CKT_MASK_CAUSAL_BOTTOM_RIGHT, 2}};
    for (const C &c : cases) {
        const int B = 2, H = 2, SQ = 3, SK = 5;
        Dense t(B, H, H, SQ, SK, 8, 8);
        t.a.mask = c.mask;
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int j = 0; j < SK; j++)
                    for (int d = 0; d < 8; d++)
                        t.V(b, h, j, d) = (float)(j + d);
        const float slopes[H] = {0.5f, 0.125f};
        t.a.alibi_slopes = slopes;
        ASSERT_EQ(t.run(), CKT_SUCCESS) << ckt_last_error();
        const std::vector<float> o_alibi = t.o, l_alibi = t.lse;
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int i = 0; i < SQ; i++) {
                    double sum = 0.0, ov = 0.0;
                    for (int j = 0; j < SK; j++) {
                        if (c.mask != CKT_MASK_NONE && j > i + c.off)
                            continue;
                        const double w = std::exp(-slopes[h] * std::abs(j - i - c.off));
                        sum += w;
                        ov += w * j; // V[j][0] = j
                    }
                    EXPECT_NEAR(t.L(b, h, i), std::log(sum), 1e-5) << "mask " << c.mask << " h " << h << " i " << i;
                    EXPECT_NEAR(t.O(b, h, i, 0), ov / sum, 1e-5) << "mask " << c.mask << " h " << h << " i " << i;
                }
        // the same values as a bias tensor [1][H][SQ][SK + 1] (broadcast over the batch)
        std::vector<float> bias((size_t)H * SQ * (SK + 1), 99.0f);
        for (int h = 0; h < H; h++)
            for (int i = 0; i < SQ; i++)
                for (int j = 0; j < SK; j++)
                    bias[(size_t)(h * SQ + i) * (SK + 1) + j] = -slopes[h] * (float)std::abs(j - i - c.off);
        t.a.alibi_slopes = nullptr;
        t.a.bias = bias.data();
        t.a.bias_stride_s = SK + 1;
        t.a.bias_stride_h = (int64_t)SQ * (SK + 1);
        t.a.bias_stride_b = 0;
        ASSERT_EQ(t.run(), CKT_SUCCESS) << ckt_last_error();
        for (size_t x = 0; x < t.o.size(); x++)
            EXPECT_NEAR(t.o[x], o_alibi[x], 1e-6);
        for (size_t x = 0; x < t.lse.size(); x++)
            EXPECT_NEAR(t.lse[x], l_alibi[x], 1e-6);
        // per-batch slopes: entry 1 with zero slopes is the plain softmax (LSE = log count)
        const float slopes_b[2 * H] = {0.5f, 0.125f, 0.0f, 0.0f};
        t.a.bias = nullptr;
        t.a.alibi_slopes = slopes_b;
        t.a.alibi_stride_b = H;
        ASSERT_EQ(t.run(), CKT_SUCCESS) << ckt_last_error();
        for (int i = 0; i < SQ; i++) {
            EXPECT_NEAR(t.L(0, 1, i), l_alibi[(size_t)(t.a.lse_stride_h + i)], 1e-6);
            const int count = c.mask == CKT_MASK_NONE ? SK : std::min(SK, i + c.off + 1);
            EXPECT_NEAR(t.L(1, 1, i), std::log((double)count), 1e-6);
        }
    }
}

// q = 0: every visible logit is 0, so O[i] is the mean of the visible V rows
// and LSE[i] = log(count). V[j][:] = j makes the visible set readable.
struct MaskCase {
    const char *name;
    ckt_fmha_mask mask;
    int left, right, sq, sk;
    std::vector<float> mean;
    std::vector<int> count; // 0: fully masked
};

class RefMask : public ::testing::TestWithParam<MaskCase> {};

TEST_P(RefMask, VisibleKeysMatchTheHandTable)
{
    const MaskCase &c = GetParam();
    Dense t(1, 1, 1, c.sq, c.sk, 8, 8);
    t.a.mask = c.mask;
    t.a.window_left = c.left;
    t.a.window_right = c.right;
    for (int j = 0; j < c.sk; j++)
        for (int d = 0; d < 8; d++)
            t.V(0, 0, j, d) = (float)j;
    ASSERT_EQ(t.run(), CKT_SUCCESS) << ckt_last_error();
    int64_t pairs = 0;
    for (int i = 0; i < c.sq; i++) {
        pairs += c.count[i];
        if (c.count[i] == 0) {
            EXPECT_EQ(t.L(0, 0, i), kNegInf) << "row " << i;
            for (int d = 0; d < 8; d++)
                EXPECT_EQ(t.O(0, 0, i, d), 0.0f) << "row " << i;
            continue;
        }
        EXPECT_NEAR(t.L(0, 0, i), std::log((double)c.count[i]), 1e-6) << "row " << i;
        for (int d = 0; d < 8; d++)
            EXPECT_NEAR(t.O(0, 0, i, d), c.mean[i], 1e-6) << "row " << i;
    }
    EXPECT_EQ(ckt_fmha_fwd_pairs(&t.a), pairs);
    EXPECT_DOUBLE_EQ(ckt_fmha_fwd_flops(&t.a), 2.0 * (8 + 8) * (double)pairs);
}

INSTANTIATE_TEST_SUITE_P(
    Hand, RefMask,
    ::testing::Values(
        MaskCase{"none", CKT_MASK_NONE, 0, 0, 4, 6, {2.5f, 2.5f, 2.5f, 2.5f}, {6, 6, 6, 6}},
        MaskCase{"causal_top_left", CKT_MASK_CAUSAL_TOP_LEFT, 0, 0, 4, 6, {0.0f, 0.5f, 1.0f, 1.5f}, {1, 2, 3, 4}},
        // off = sk - sq = 2: row i sees j <= i + 2
        MaskCase{"causal_bottom_right", CKT_MASK_CAUSAL_BOTTOM_RIGHT, 0, 0, 4, 6, {1.0f, 1.5f, 2.0f, 2.5f},
                 {3, 4, 5, 6}},
        // off = -2: rows 0 and 1 see nothing
        MaskCase{"causal_bottom_right_sq_gt_sk", CKT_MASK_CAUSAL_BOTTOM_RIGHT, 0, 0, 6, 4,
                 {0, 0, 0.0f, 0.5f, 1.0f, 1.5f}, {0, 0, 1, 2, 3, 4}},
        MaskCase{"window_top_left_1_1", CKT_MASK_WINDOW_TOP_LEFT, 1, 1, 4, 6, {0.5f, 1.0f, 2.0f, 3.0f}, {2, 3, 3, 3}},
        MaskCase{"window_top_left_2_0", CKT_MASK_WINDOW_TOP_LEFT, 2, 0, 4, 6, {0.0f, 0.5f, 1.0f, 2.0f}, {1, 2, 3, 3}},
        // left 0, right unlimited, off 2: row i sees j >= i + 2
        MaskCase{"window_bottom_right_0_unlimited", CKT_MASK_WINDOW_BOTTOM_RIGHT, 0, -1, 4, 6,
                 {3.5f, 4.0f, 4.5f, 5.0f}, {4, 3, 2, 1}},
        MaskCase{"window_unlimited_both", CKT_MASK_WINDOW_TOP_LEFT, -1, -1, 4, 6, {2.5f, 2.5f, 2.5f, 2.5f},
                 {6, 6, 6, 6}},
        // any negative side is unlimited: row i sees j <= i + 3
        MaskCase{"window_top_left_minus3_3", CKT_MASK_WINDOW_TOP_LEFT, -3, 3, 4, 6, {1.5f, 2.0f, 2.5f, 2.5f},
                 {4, 5, 6, 6}},
        // the diagonal only; rows 6 and 7 have no key j = i
        MaskCase{"window_top_left_diagonal", CKT_MASK_WINDOW_TOP_LEFT, 0, 0, 8, 6,
                 {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 0, 0}, {1, 1, 1, 1, 1, 1, 0, 0}}),
    [](const ::testing::TestParamInfo<MaskCase> &i) { return std::string(i.param.name); });

TEST(RefFmha, SeqlenKZeroGivesZeroAndMinusInf)
{
    Dense t(2, 2, 1, 3, 0, 8, 8);
    ASSERT_EQ(t.run(), CKT_SUCCESS) << ckt_last_error(); // k, v NULL: never read
    for (int b = 0; b < 2; b++)
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < 3; i++) {
                EXPECT_EQ(t.L(b, h, i), kNegInf);
                for (int d = 0; d < 8; d++)
                    EXPECT_EQ(t.O(b, h, i, d), 0.0f);
            }
    EXPECT_EQ(ckt_fmha_fwd_pairs(&t.a), 0);
}

TEST(RefFmha, GqaAndMqaHeadMapping)
{
    for (int hk : {3, 1}) { // nhead_q 6: groups of 2 (GQA) or 6 (MQA)
        Dense t(2, 6, hk, 2, 1, 8, 8);
        for (int b = 0; b < 2; b++)
            for (int h = 0; h < hk; h++)
                for (int d = 0; d < 8; d++)
                    t.V(b, h, 0, d) = (float)(100 * b + 10 * h + d);
        ASSERT_EQ(t.run(), CKT_SUCCESS) << ckt_last_error();
        for (int b = 0; b < 2; b++)
            for (int h = 0; h < 6; h++)
                for (int i = 0; i < 2; i++)
                    for (int d = 0; d < 8; d++)
                        EXPECT_EQ(t.O(b, h, i, d), (float)(100 * b + 10 * (h / (6 / hk)) + d))
                            << "nhead_k " << hk << " head " << h;
    }
}

TEST(RefFmha, SoftCapBoundsTheLogits)
{
    // two keys: logit s0 = cap * tanh(scale * 3 / cap), s1 = 0; V0 = 1, V1 = 0
    Dense t(1, 1, 1, 1, 2, 8, 8);
    t.a.scale = 1.0f;
    t.a.softcap = 2.0f;
    t.Q(0, 0, 0, 0) = 3.0f;
    t.K(0, 0, 0, 0) = 1.0f;
    for (int d = 0; d < 8; d++)
        t.V(0, 0, 0, d) = 1.0f;
    ASSERT_EQ(t.run(), CKT_SUCCESS) << ckt_last_error();
    const double s0 = 2.0 * std::tanh(1.5); // 1.8103
    EXPECT_NEAR(t.O(0, 0, 0, 0), 1.0 / (1.0 + std::exp(-s0)), 1e-6);
    EXPECT_NEAR(t.L(0, 0, 0), std::log(std::exp(s0) + 1.0), 1e-6);
    t.a.softcap = 0.0f; // no cap: s0 = 3
    ASSERT_EQ(t.run(), CKT_SUCCESS);
    EXPECT_NEAR(t.O(0, 0, 0, 0), 1.0 / (1.0 + std::exp(-3.0)), 1e-6);
}

TEST(RefFmha, HugeLogitsStayFinite)
{
    Dense t(1, 1, 1, 1, 3, 8, 8);
    t.a.scale = 1.0f;
    for (int j = 0; j < 3; j++) {
        t.K(0, 0, j, 0) = (float)(j + 1) * 1000.0f;
        for (int d = 0; d < 8; d++)
            t.V(0, 0, j, d) = (float)j;
    }
    t.Q(0, 0, 0, 0) = 1.0f;
    ASSERT_EQ(t.run(), CKT_SUCCESS);
    EXPECT_NEAR(t.O(0, 0, 0, 0), 2.0f, 1e-6); // the largest logit (3000) wins
    EXPECT_NEAR(t.L(0, 0, 0), 3000.0, 1e-3);
}

// The same problem in [b][s][h][d] and with padded strides gives the same numbers.
TEST(RefFmha, LayoutsAgree)
{
    const int B = 2, H = 4, HK = 2, SQ = 5, SK = 7, D = 16, DV = 8;
    Dense t(B, H, HK, SQ, SK, D, DV);
    ASSERT_EQ(ckt_fill(t.q.data(), CKT_F32, t.q.size(), ckt_init_uniform(-1, 1), 1), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(t.k.data(), CKT_F32, t.k.size(), ckt_init_uniform(-1, 1), 2), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(t.v.data(), CKT_F32, t.v.size(), ckt_init_uniform(-1, 1), 3), CKT_SUCCESS);
    t.a.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    ASSERT_EQ(t.run(), CKT_SUCCESS);

    ckt_fmha_fwd_args a = t.a; // [b][s][h][d], rows padded by 8 elements
    const int pad = 8;
    ckt_fmha_strides(&a.q_stride_b, &a.q_stride_h, &a.q_stride_s, 0, H, SQ, D);
    ckt_fmha_strides(&a.k_stride_b, &a.k_stride_h, &a.k_stride_s, 0, HK, SK, D);
    ckt_fmha_strides(&a.v_stride_b, &a.v_stride_h, &a.v_stride_s, 0, HK, SK, DV);
    a.o_stride_s = DV + pad;
    a.o_stride_h = (int64_t)SQ * a.o_stride_s;
    a.o_stride_b = (int64_t)H * a.o_stride_h;
    a.lse_stride_h = SQ + 3;
    a.lse_stride_b = (int64_t)H * a.lse_stride_h;
    std::vector<float> q(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_Q)), k(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_K)),
        v(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_V)), o(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_O), 7.0f),
        lse(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_LSE), 7.0f);
    EXPECT_EQ(q.size(), t.q.size());
    EXPECT_EQ(o.size(), (size_t)(B * H * SQ - 1) * (DV + pad) + DV);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            for (int i = 0; i < SQ; i++)
                for (int d = 0; d < D; d++)
                    q[(size_t)(b * a.q_stride_b + h * a.q_stride_h + i * a.q_stride_s + d)] = t.Q(b, h, i, d);
            if (h < HK)
                for (int j = 0; j < SK; j++) {
                    for (int d = 0; d < D; d++)
                        k[(size_t)(b * a.k_stride_b + h * a.k_stride_h + j * a.k_stride_s + d)] = t.K(b, h, j, d);
                    for (int d = 0; d < DV; d++)
                        v[(size_t)(b * a.v_stride_b + h * a.v_stride_h + j * a.v_stride_s + d)] = t.V(b, h, j, d);
                }
        }
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    ASSERT_EQ(ckt_ref_fmha_fwd(&a, o.data(), lse.data()), CKT_SUCCESS);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < SQ; i++) {
                EXPECT_EQ(lse[(size_t)(b * a.lse_stride_b + h * a.lse_stride_h + i)], t.L(b, h, i));
                for (int d = 0; d < DV + pad; d++) {
                    const size_t off = (size_t)(b * a.o_stride_b + h * a.o_stride_h + i * a.o_stride_s + d);
                    if (d < DV) {
                        EXPECT_EQ(o[off], t.O(b, h, i, d));
                    } else if (off < o.size()) { // the last row's padding is past the end
                        EXPECT_EQ(o[off], 7.0f) << "padding written";
                    }
                }
            }
}

// Group mode: entries packed along s with padding rows; each entry equals the
// batch-mode result of its own logical lengths, and padding rows stay untouched.
TEST(RefFmha, GroupModeWithLogicalLengthsEqualsPerEntryBatchMode)
{
    const int H = 2, D = 8;
    const std::vector<int32_t> start_q = {2, 6, 6, 13}, start_k = {0, 9, 9, 14};
    const std::vector<int32_t> len_q = {3, 0, 7}, len_k = {9, 0, 4};
    ckt_fmha_fwd_args g;
    memset(&g, 0, sizeof g);
    g.dtype = CKT_F32;
    g.batch = 3;
    g.nhead_q = H;
    g.nhead_k = H;
    g.seqlen_q = 7;
    g.seqlen_k = 9;
    g.hdim_q = g.hdim_v = D;
    g.group_mode = 1;
    g.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    g.seqstart_q = start_q.data();
    g.seqstart_k = start_k.data();
    g.seqlen_q_ptr = len_q.data();
    g.seqlen_k_ptr = len_k.data();
    ckt_fmha_strides(&g.q_stride_b, &g.q_stride_h, &g.q_stride_s, 0, H, 13, D); // [total][h][d]
    ckt_fmha_strides(&g.k_stride_b, &g.k_stride_h, &g.k_stride_s, 0, H, 14, D);
    ckt_fmha_strides(&g.v_stride_b, &g.v_stride_h, &g.v_stride_s, 0, H, 14, D);
    ckt_fmha_strides(&g.o_stride_b, &g.o_stride_h, &g.o_stride_s, 0, H, 13, D);
    g.q_stride_b = g.k_stride_b = g.v_stride_b = g.o_stride_b = 0;
    g.lse_stride_h = 13;
    EXPECT_EQ(ckt_fmha_fwd_elems(&g, CKT_FMHA_TENSOR_Q), (size_t)13 * H * D);
    EXPECT_EQ(ckt_fmha_fwd_elems(&g, CKT_FMHA_TENSOR_LSE), (size_t)(H - 1) * 13 + 13);
    std::vector<float> q(13 * H * D), k(14 * H * D), v(14 * H * D), o(13 * H * D, 7.0f), lse(H * 13, 7.0f);
    ASSERT_EQ(ckt_fill(q.data(), CKT_F32, q.size(), ckt_init_uniform(-1, 1), 4), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(k.data(), CKT_F32, k.size(), ckt_init_uniform(-1, 1), 5), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(v.data(), CKT_F32, v.size(), ckt_init_uniform(-1, 1), 6), CKT_SUCCESS);
    g.q = q.data();
    g.k = k.data();
    g.v = v.data();
    ASSERT_EQ(ckt_ref_fmha_fwd(&g, o.data(), lse.data()), CKT_SUCCESS) << ckt_last_error();
    // pairs: entry 0 (3 x 9, off 6): 7+8+9; entry 2 (7 x 4, off -3): 0+0+0+1+2+3+4
    EXPECT_EQ(ckt_fmha_fwd_pairs(&g), 24 + 10);

    std::vector<bool> written(o.size(), false);
    for (int b = 0; b < 3; b++) {
        if (len_q[b] == 0)
            continue;
        Dense t(1, H, H, len_q[b], len_k[b], D, D);
        t.a.mask = g.mask;
        for (int h = 0; h < H; h++) {
            for (int i = 0; i < len_q[b]; i++)
                for (int d = 0; d < D; d++)
                    t.Q(0, h, i, d) = q[(size_t)((start_q[b] + i) * g.q_stride_s + h * g.q_stride_h + d)];
            for (int j = 0; j < len_k[b]; j++)
                for (int d = 0; d < D; d++) {
                    t.K(0, h, j, d) = k[(size_t)((start_k[b] + j) * g.k_stride_s + h * g.k_stride_h + d)];
                    t.V(0, h, j, d) = v[(size_t)((start_k[b] + j) * g.v_stride_s + h * g.v_stride_h + d)];
                }
        }
        ASSERT_EQ(t.run(), CKT_SUCCESS);
        for (int h = 0; h < H; h++)
            for (int i = 0; i < len_q[b]; i++) {
                EXPECT_EQ(lse[(size_t)(h * 13 + start_q[b] + i)], t.L(0, h, i)) << "entry " << b;
                for (int d = 0; d < D; d++) {
                    const size_t off = (size_t)((start_q[b] + i) * g.o_stride_s + h * g.o_stride_h + d);
                    EXPECT_EQ(o[off], t.O(0, h, i, d)) << "entry " << b << " head " << h << " row " << i;
                    written[off] = true;
                }
            }
    }
    for (size_t i = 0; i < o.size(); i++)
        if (!written[i]) {
            ASSERT_EQ(o[i], 7.0f) << "padding row element " << i << " written";
        }
    // LSE rows before seqstart_q[0] and past entry 0's logical length: untouched
    EXPECT_EQ(lse[0], 7.0f);
    EXPECT_EQ(lse[5], 7.0f);
}

TEST(RefFmha, RejectsBadArguments)
{
    Dense t(1, 3, 2, 2, 2, 8, 8);
    EXPECT_EQ(t.run(), CKT_ERROR_INVALID_ARGUMENT); // 3 heads over 2
    Dense u(1, 2, 2, 2, 2, 8, 8);
    u.a.group_mode = 1; // no seqstart arrays
    EXPECT_EQ(u.run(), CKT_ERROR_NULL_POINTER);
    EXPECT_EQ(ckt_ref_fmha_fwd(nullptr, nullptr, nullptr), CKT_ERROR_NULL_POINTER);
    Dense e(0, 2, 2, 2, 2, 8, 8); // batch 0: nothing to do
    EXPECT_EQ(e.run(), CKT_SUCCESS);
}

TEST(RefFmha, CompareRoundsTheReferenceToTheOutputType)
{
    Dense t(1, 1, 1, 2, 3, 8, 8);
    ASSERT_EQ(ckt_fill(t.q.data(), CKT_F32, t.q.size(), ckt_init_uniform(-1, 1), 7), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(t.k.data(), CKT_F32, t.k.size(), ckt_init_uniform(-1, 1), 8), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(t.v.data(), CKT_F32, t.v.size(), ckt_init_uniform(-1, 1), 9), CKT_SUCCESS);
    ASSERT_EQ(t.run(), CKT_SUCCESS);
    // a bf16 "kernel" result: the reference rounded once matches at zero tolerance
    ckt_fmha_fwd_args h = t.a;
    h.dtype = CKT_BF16;
    std::vector<uint16_t> o(t.o.size());
    for (size_t i = 0; i < o.size(); i++)
        ckt_store_f32(o.data(), CKT_BF16, i, t.o[i]);
    ckt_compare_result ro, rl;
    EXPECT_EQ(ckt_ref_fmha_compare(&ro, &rl, &h, o.data(), t.lse.data(), t.o.data(), t.lse.data(), 0.0, 0.0),
              CKT_SUCCESS);
    EXPECT_EQ(ro.n, 16u);
    EXPECT_EQ(rl.n, 2u);
    ckt_store_f32(o.data(), CKT_BF16, 9, t.o[9] + 0.5f); // one element off
    std::vector<float> lse = t.lse;
    lse[1] = NAN;
    EXPECT_EQ(ckt_ref_fmha_compare(&ro, &rl, &h, o.data(), lse.data(), t.o.data(), t.lse.data(), 1e-2, 1e-2),
              CKT_ERROR_MISMATCH);
    EXPECT_EQ(ro.mismatches, 1u);
    EXPECT_EQ(ro.first[0].index, 9u);
    EXPECT_EQ(rl.mismatches, 1u);
    EXPECT_EQ(rl.first[0].index, 1u);
}

// The kernels' tile predicates (ckt/fmha/mask.h) against the reference's
// per-row keys, brute force over small entries, every mask kind and windows
// with limited and unlimited sides: the key range of a query tile is the
// hull of its rows' keys, a tile is "full" exactly when every row of it is a
// logical row that sees every key of it, and the visible columns of a row
// are its keys.
TEST(RefFmha, MaskTilePredicatesAgreeWithTheRowKeys)
{
    const ckt_fmha_mask kinds[] = {CKT_MASK_NONE, CKT_MASK_CAUSAL_TOP_LEFT, CKT_MASK_CAUSAL_BOTTOM_RIGHT,
                                   CKT_MASK_WINDOW_TOP_LEFT, CKT_MASK_WINDOW_BOTTOM_RIGHT};
    const int windows[][2] = {{-1, -1}, {0, 0}, {2, -1}, {-1, 3}, {1, 2}};
    for (ckt_fmha_mask kind : kinds)
        for (const auto &w : windows)
            for (int sq = 0; sq <= 7; sq++)
                for (int sk = 0; sk <= 9; sk += 3) {
                    const bool window = kind == CKT_MASK_WINDOW_TOP_LEFT || kind == CKT_MASK_WINDOW_BOTTOM_RIGHT;
                    if (!window && (w[0] != -1 || w[1] != -1))
                        continue;
                    ckt_fmha_fwd_args a;
                    memset(&a, 0, sizeof a);
                    a.mask = kind;
                    a.window_left = w[0];
                    a.window_right = w[1];
                    const ckt_fmha_mask_params m = ckt_fmha_mask_make(kind, w[0], w[1], sq, sk);
                    std::vector<int64_t> lo(sq), hi(sq);
                    for (int i = 0; i < sq; i++) {
                        ckt_fmha_fwd_row_keys(&a, i, sq, sk, &lo[i], &hi[i]);
                        int clo, chi; // inclusive, relative to n0 = 1
                        ckt_fmha_mask_row_cols(&m, i, 1, &clo, &chi);
                        for (int j = 0; j < sk; j++) {
                            const bool sees = j >= lo[i] && j < hi[i];
                            ASSERT_EQ(ckt_fmha_mask_visible(&m, i, j), sees) << kind << " " << i << " " << j;
                            ASSERT_EQ(j - 1 >= clo && j - 1 <= chi, sees) << kind << " " << i << " " << j;
                        }
                    }
                    for (int bm = 1; bm <= 4; bm++)
                        for (int m0 = 0; m0 < sq + 2; m0++) {
                            int64_t want_lo = sk, want_hi = 0;
                            for (int i = m0; i < m0 + bm && i < sq; i++)
                                if (lo[i] < hi[i]) {
                                    want_lo = std::min(want_lo, lo[i]);
                                    want_hi = std::max(want_hi, hi[i]);
                                }
                            int klo, khi;
                            ckt_fmha_mask_key_range(&m, m0, bm, &klo, &khi);
                            if (want_lo < want_hi) { // the range may be wider, never narrower
                                ASSERT_LE(klo, want_lo) << kind << " sq " << sq << " sk " << sk << " m0 " << m0;
                                ASSERT_GE(khi, want_hi) << kind << " sq " << sq << " sk " << sk << " m0 " << m0;
                            }
                            for (int bn = 1; bn <= 3; bn++)
                                for (int n0 = 0; n0 < sk + 2; n0++) {
                                    bool full = m0 + bm <= sq && n0 + bn <= sk;
                                    for (int i = m0; full && i < m0 + bm; i++)
                                        full = lo[i] <= n0 && n0 + bn <= hi[i];
                                    ASSERT_EQ(ckt_fmha_mask_tile_full(&m, m0, bm, n0, bn) != 0, full)
                                        << kind << " sq " << sq << " sk " << sk << " m0 " << m0 << " n0 " << n0;
                                    // the intervals of full tiles, each way, against the predicate
                                    int flo, fhi, qlo, qhi;
                                    ckt_fmha_mask_full_keys(&m, m0, bm, bn, &flo, &fhi);
                                    ckt_fmha_mask_full_queries(&m, n0, bn, bm, &qlo, &qhi);
                                    ASSERT_EQ(n0 >= flo && n0 <= fhi, full)
                                        << "full_keys " << kind << " sq " << sq << " sk " << sk << " m0 " << m0
                                        << " n0 " << n0 << " bm " << bm << " bn " << bn;
                                    ASSERT_EQ(m0 >= qlo && m0 <= qhi, full)
                                        << "full_queries " << kind << " sq " << sq << " sk " << sk << " m0 " << m0
                                        << " n0 " << n0 << " bm " << bm << " bn " << bn;
                                }
                        }
                }
}

} // namespace
