// An instance a user compiles in their own translation unit without the
// bias and dropout kernels (CKT_FMHA_BIAS 0, CKT_FMHA_DROPOUT 0: half the
// compile time, ckt/fmha/fwd_body.h): its plain calls match the CPU
// reference; calls that need a left-out kernel are declined by fits() and
// refused by the launcher with CKT_ERROR_UNSUPPORTED naming the argument,
// and nothing is written.
#include "ckt/fmha.h"
#include "ckt/fmha/ref.h"
#include "tests/fmha/fmha_test_util.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#define CKT_FMHA_NAME lean_f16_d64
#define CKT_FMHA_DTYPE CKT_F16
#define CKT_FMHA_HDIM 64
#define CKT_FMHA_KV_CACHE 0
#define CKT_FMHA_BIAS 0
#define CKT_FMHA_DROPOUT 0
#include CKT_FMHA_FWD_BODY

// The tuning knobs no shipped instance combines: GQA-packed rows, two row
// groups of 16 whose two warps each split the key tiles of 64
// (CKT_FMHA_KSPLIT 2: the merge at each group's own offset), and a 3-stage
// K/V ring (CKT_FMHA_STAGES). CDNA has no KSPLIT: one wavefront there.
#define CKT_FMHA_NAME knob_f16_d64
#define CKT_FMHA_DTYPE CKT_F16
#define CKT_FMHA_HDIM 64
#define CKT_FMHA_KV_CACHE 0
#define CKT_FMHA_BIAS 0
#define CKT_FMHA_DROPOUT 0
#define CKT_FMHA_PACK_GQA 1
#define CKT_FMHA_WARP_ROWS 16
#if defined(CKT_HAS_MFMA)
#define CKT_FMHA_WARPS 1
#else
#define CKT_FMHA_WARPS 4
#define CKT_FMHA_KSPLIT 2
#define CKT_FMHA_BLOCK_N 64
#define CKT_FMHA_STAGES 3
#endif
#include CKT_FMHA_FWD_BODY

namespace {

const uint16_t kSentinel = 0x7b7b;

// b x h x s x 64 fp16, [b][h][s][d], causal, ragged lengths (not multiples of the tile)
struct Problem {
    ckt_fmha_fwd_args h = {}, d = {};
    std::vector<uint16_t> q, k, v, o;
    FmhaDeviceBuffers bufs;

    Problem(int sq, int sk)
    {
        ckt_fmha_fwd_args &a = h;
        memset(&a, 0, sizeof a);
        a.dtype = CKT_F16;
        a.batch = 2;
        a.nhead_q = 4;
        a.nhead_k = 2;
        a.hdim_q = a.hdim_v = 64;
        a.seqlen_q = sq;
        a.seqlen_k = sk;
        a.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        a.q_stride_s = a.o_stride_s = a.k_stride_s = a.v_stride_s = 64;
        a.q_stride_h = a.o_stride_h = (int64_t)sq * 64;
        a.k_stride_h = a.v_stride_h = (int64_t)sk * 64;
        a.q_stride_b = a.o_stride_b = 4 * a.q_stride_h;
        a.k_stride_b = a.v_stride_b = 2 * a.k_stride_h;
        q.assign(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_Q), 0);
        k.assign(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_K), 0);
        v.assign(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_V), 0);
        o.assign(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_O), kSentinel);
        EXPECT_EQ(ckt_fill(q.data(), CKT_F16, q.size(), ckt_init_uniform(-1, 1), 11), CKT_SUCCESS);
        EXPECT_EQ(ckt_fill(k.data(), CKT_F16, k.size(), ckt_init_uniform(-1, 1), 12), CKT_SUCCESS);
        EXPECT_EQ(ckt_fill(v.data(), CKT_F16, v.size(), ckt_init_uniform(-1, 1), 13), CKT_SUCCESS);
        a.q = q.data();
        a.k = k.data();
        a.v = v.data();
        a.o = o.data();
        d = a;
        d.q = bufs.dev(q.data(), q.size() * 2);
        d.k = bufs.dev(k.data(), k.size() * 2);
        d.v = bufs.dev(v.data(), v.size() * 2);
        d.o = bufs.dev(o.data(), o.size() * 2);
    }

    std::vector<uint16_t> output() const
    {
        std::vector<uint16_t> out(o.size());
        EXPECT_EQ(ckt_rt_memcpy(out.data(), d.o, out.size() * 2, CKT_D2H), CKT_SUCCESS);
        return out;
    }
};

TEST(LeanInstance, PlainCallsMatchTheReference)
{
    for (int sq : {1, 77, 200})
        for (int sk : {1, 130, 257}) {
            Problem p(sq, sk);
            EXPECT_EQ(lean_f16_d64_fits(&p.d), 1);
            ASSERT_EQ(lean_f16_d64_launch(&p.d, nullptr), CKT_SUCCESS) << ckt_last_error();
            ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS);
            const std::vector<uint16_t> got = p.output();
            std::vector<float> ref(p.o.size(), 0.0f);
            ASSERT_EQ(ckt_ref_fmha_fwd(&p.h, ref.data(), nullptr), CKT_SUCCESS) << ckt_last_error();
            ckt_compare_result ro, rl;
            const ckt_status s = ckt_ref_fmha_compare(&ro, &rl, &p.h, got.data(), nullptr, ref.data(), nullptr, 1e-3, 1e-3);
            if (s != CKT_SUCCESS)
                ckt_compare_print(stderr, "O", &ro);
            EXPECT_EQ(s, CKT_SUCCESS) << "sq " << sq << " sk " << sk << ": " << ckt_last_error();
        }
}

TEST(LeanInstance, KnobsKsplitTwoGroupsAndThreeStagesMatchTheReference)
{
    for (int sq : {1, 5, 16, 40})
        for (int sk : {1, 130, 257}) {
            Problem p(sq, sk);
            EXPECT_EQ(knob_f16_d64_fits(&p.d), 1);
            ASSERT_EQ(knob_f16_d64_launch(&p.d, nullptr), CKT_SUCCESS) << ckt_last_error();
            ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS);
            const std::vector<uint16_t> got = p.output();
            std::vector<float> ref(p.o.size(), 0.0f);
            ASSERT_EQ(ckt_ref_fmha_fwd(&p.h, ref.data(), nullptr), CKT_SUCCESS) << ckt_last_error();
            ckt_compare_result ro, rl;
            const ckt_status s = ckt_ref_fmha_compare(&ro, &rl, &p.h, got.data(), nullptr, ref.data(), nullptr, 1e-3, 1e-3);
            if (s != CKT_SUCCESS)
                ckt_compare_print(stderr, "O", &ro);
            EXPECT_EQ(s, CKT_SUCCESS) << "sq " << sq << " sk " << sk << ": " << ckt_last_error();
        }
}

// a call that needs a left-out kernel: declined, refused naming the
// argument and the knob, O untouched
void expect_refused(ckt_fmha_fwd_args a, const Problem &p, const char *arg, const char *knob)
{
    EXPECT_EQ(lean_f16_d64_fits(&a), 0) << arg;
    EXPECT_EQ(lean_f16_d64_launch(&a, nullptr), CKT_ERROR_UNSUPPORTED) << arg;
    const std::string msg = ckt_last_error();
    EXPECT_NE(msg.find(arg), std::string::npos) << msg;
    EXPECT_NE(msg.find(knob), std::string::npos) << msg;
    ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS);
    for (uint16_t x : p.output())
        ASSERT_EQ(x, kSentinel) << arg << ": O was written";
}

TEST(LeanInstance, RefusesCallsThatNeedALeftOutKernel)
{
    Problem p(77, 130);
    std::vector<uint16_t> bias((size_t)p.h.seqlen_q * p.h.seqlen_k, 0);
    std::vector<float> slopes(4, 0.1f);
    ckt_fmha_fwd_args a = p.d;
    a.bias = p.bufs.dev(bias.data(), bias.size() * 2);
    a.bias_stride_s = p.h.seqlen_k;
    expect_refused(a, p, "bias", "CKT_FMHA_BIAS 0");
    a = p.d;
    a.alibi_slopes = (const float *)p.bufs.dev(slopes.data(), slopes.size() * 4);
    expect_refused(a, p, "alibi_slopes", "CKT_FMHA_BIAS 0");
    a = p.d;
    a.p_drop = 0.25f;
    a.drop_seed = 7;
    expect_refused(a, p, "p_drop", "CKT_FMHA_DROPOUT 0");
}

} // namespace
