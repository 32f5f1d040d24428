// ckt_fmha_fwd_validate (ckt/fmha/validate.h): one case per message, each
// checking the status and that the message names the argument.
#include "ckt/fmha/validate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

class Validate : public ::testing::Test {
  protected:
    // 16-byte aligned storage (the arguments are never dereferenced except
    // for the group-mode arrays on the CPU backend)
    alignas(16) uint16_t buf[4][64];
    alignas(16) float lse[16];
    int32_t start_q[4] = {0, 3, 3, 10}, start_k[4] = {0, 5, 5, 12};
    int32_t len_q[3] = {3, 0, 6}, len_k[3] = {5, 0, 7};
    ckt_fmha_fwd_args a;

    void SetUp() override
    {
        memset(&a, 0, sizeof a);
        a.dtype = CKT_F16;
        a.q = buf[0];
        a.k = buf[1];
        a.v = buf[2];
        a.o = buf[3];
        a.batch = 2;
        a.nhead_q = 4;
        a.nhead_k = 2;
        a.seqlen_q = 100;
        a.seqlen_k = 120;
        a.hdim_q = 64;
        a.hdim_v = 64;
        ckt_fmha_strides(&a.q_stride_b, &a.q_stride_h, &a.q_stride_s, 1, 4, 100, 64);
        ckt_fmha_strides(&a.k_stride_b, &a.k_stride_h, &a.k_stride_s, 0, 2, 120, 64);
        ckt_fmha_strides(&a.v_stride_b, &a.v_stride_h, &a.v_stride_s, 0, 2, 120, 64);
        ckt_fmha_strides(&a.o_stride_b, &a.o_stride_h, &a.o_stride_s, 1, 4, 100, 64);
    }
    void group()
    {
        a.group_mode = 1;
        a.batch = 3;
        a.seqlen_q = 7;
        a.seqlen_k = 7;
        a.seqstart_q = start_q;
        a.seqstart_k = start_k;
        a.q_stride_b = a.k_stride_b = a.v_stride_b = a.o_stride_b = 12345; // unused in group mode
    }
    // validates for an fp16 instance of 128 / 128
    ckt_status check() { return ckt_fmha_fwd_validate(&a, CKT_F16, 128, 128); }
};

#define EXPECT_FAILS(status, text)                                                                \
    do {                                                                                          \
        EXPECT_EQ(check(), (status));                                                             \
        EXPECT_NE(std::string(ckt_last_error()).find(text), std::string::npos)                   \
            << "message: " << ckt_last_error();                                                   \
    } while (0)

TEST_F(Validate, ValidArgumentsPass)
{
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.lse = lse;
    a.lse_stride_h = 100;
    a.lse_stride_b = 400;
    a.mask = CKT_MASK_WINDOW_BOTTOM_RIGHT;
    a.window_left = 16;
    a.window_right = -1;
    a.scale = 0.5f;
    a.softcap = 30.0f;
    a.hdim_q = 120; // padded on the 128 instance
    a.hdim_v = 8;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    group();
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.seqlen_q_ptr = len_q;
    a.seqlen_k_ptr = len_k;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
}

TEST_F(Validate, ArgsNull)
{
    EXPECT_EQ(ckt_fmha_fwd_validate(nullptr, CKT_F16, 128, 128), CKT_ERROR_NULL_POINTER);
    EXPECT_STREQ(ckt_last_error(), "args: NULL");
}

TEST_F(Validate, DtypeNotHalf)
{
    a.dtype = CKT_F32;
    EXPECT_FAILS(CKT_ERROR_UNSUPPORTED, "dtype: fp32");
}

TEST_F(Validate, DtypeNotTheInstances)
{
    a.dtype = CKT_BF16;
    EXPECT_FAILS(CKT_ERROR_UNSUPPORTED, "dtype: bf16, this instance is fp16");
}

TEST_F(Validate, NegativeSizes)
{
    const char *names[] = {"batch", "nhead_q", "nhead_k", "seqlen_q", "seqlen_k"};
    int *fields[] = {&a.batch, &a.nhead_q, &a.nhead_k, &a.seqlen_q, &a.seqlen_k};
    for (int i = 0; i < 5; i++) {
        SetUp();
        *fields[i] = -1;
        EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, std::string(names[i]) + ": -1 is negative");
    }
}

TEST_F(Validate, HdimNotPositive)
{
    a.hdim_q = 0;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "hdim_q: 0 (must be > 0)");
    SetUp();
    a.hdim_v = -8;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "hdim_v: -8 (must be > 0)");
}

TEST_F(Validate, HdimNotMultipleOf8)
{
    a.hdim_q = 100;
    EXPECT_FAILS(CKT_ERROR_UNSUPPORTED, "hdim_q: 100 is not a multiple of 8");
    SetUp();
    a.hdim_v = 36;
    EXPECT_FAILS(CKT_ERROR_UNSUPPORTED, "hdim_v: 36 is not a multiple of 8");
}

TEST_F(Validate, HdimAboveTheInstance)
{
    a.hdim_q = 136;
    EXPECT_FAILS(CKT_ERROR_UNSUPPORTED, "hdim_q: 136 exceeds this instance's HDIM 128");
    SetUp();
    a.hdim_v = 192;
    EXPECT_FAILS(CKT_ERROR_UNSUPPORTED, "hdim_v: 192 exceeds this instance's HDIM_V 128");
}

TEST_F(Validate, NheadKZero)
{
    a.nhead_k = 0;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "nhead_k: 0 (must be >= 1 when nhead_q is 4)");
}

TEST_F(Validate, NheadQNotAMultipleOfNheadK)
{
    a.nhead_k = 3;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "nhead_q: 4 is not a multiple of nhead_k 3");
}

TEST_F(Validate, GroupModeNotABool)
{
    a.group_mode = 2;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "group_mode: 2");
}

TEST_F(Validate, BatchModeWithGroupArrays)
{
    a.seqstart_k = start_k;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "seqstart_k: set, but group_mode is 0");
    SetUp();
    a.seqlen_q_ptr = len_q;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "seqlen_q_ptr: set, but group_mode is 0");
}

TEST_F(Validate, ScaleNotFiniteOrNegative)
{
    a.scale = NAN;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "scale: nan");
    a.scale = -1.0f;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "scale: -1");
}

TEST_F(Validate, SoftcapNotFiniteOrNegative)
{
    a.softcap = INFINITY;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "softcap: inf");
    a.softcap = -2.0f;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "softcap: -2");
}

TEST_F(Validate, MaskNotAKind)
{
    a.mask = (ckt_fmha_mask)7;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "mask: 7 is not a ckt_fmha_mask");
}

TEST_F(Validate, WindowSizeWithANonWindowMask)
{
    a.mask = CKT_MASK_CAUSAL_TOP_LEFT;
    a.window_left = 128;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "window_left: 128, but mask CKT_MASK_CAUSAL_TOP_LEFT ignores it");
    a.window_left = -1; // "unlimited" is harmless
    a.window_right = 4;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "window_right: 4, but mask CKT_MASK_CAUSAL_TOP_LEFT ignores it");
    a.window_right = 0;
    EXPECT_EQ(check(), CKT_SUCCESS);
}

TEST_F(Validate, EmptyProblemsNeedNoPointers)
{
    a.q = a.k = a.v = nullptr;
    a.o = nullptr;
    a.batch = 0;
    EXPECT_EQ(check(), CKT_SUCCESS);
    EXPECT_TRUE(ckt_fmha_fwd_is_empty(&a));
    a.batch = 2;
    a.seqlen_q = 0;
    EXPECT_EQ(check(), CKT_SUCCESS);
    a.seqlen_q = 1;
    a.nhead_q = a.nhead_k = 0;
    EXPECT_EQ(check(), CKT_SUCCESS);
    a.nhead_q = a.nhead_k = 2;
    EXPECT_FALSE(ckt_fmha_fwd_is_empty(&a));
    EXPECT_FAILS(CKT_ERROR_NULL_POINTER, "q: NULL");
}

TEST_F(Validate, SeqlenKZeroNeedsNoKeys)
{
    a.seqlen_k = 0;
    a.k = a.v = nullptr;
    a.k_stride_s = 3; // unused too
    EXPECT_FALSE(ckt_fmha_fwd_is_empty(&a));
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
}

TEST_F(Validate, NullPointers)
{
    const char *names[] = {"q", "k", "v", "o"};
    for (int i = 0; i < 4; i++) {
        SetUp();
        if (i == 0) a.q = nullptr;
        if (i == 1) a.k = nullptr;
        if (i == 2) a.v = nullptr;
        if (i == 3) a.o = nullptr;
        EXPECT_FAILS(CKT_ERROR_NULL_POINTER, std::string(names[i]) + ": NULL");
    }
}

TEST_F(Validate, MisalignedPointers)
{
    a.q = (const char *)buf[0] + 2;
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "q: 0x");
    EXPECT_NE(std::string(ckt_last_error()).find("is not 16-byte aligned"), std::string::npos);
    SetUp();
    a.v = (const char *)buf[2] + 8;
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "v: 0x");
    SetUp();
    a.o = (char *)buf[3] + 4;
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "o: 0x");
    SetUp();
    a.lse = (float *)((char *)lse + 2);
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "is not 4-byte aligned");
}

TEST_F(Validate, StridesNotMultiplesOf8)
{
    a.q_stride_s = 100;
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "q_stride_s: 100 is not a multiple of 8 elements");
    SetUp();
    a.k_stride_h = 68;
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "k_stride_h: 68");
    SetUp();
    a.o_stride_b = 4;
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "o_stride_b: 4");
    SetUp();
    a.v_stride_s = 130;
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "v_stride_s: 130");
}

TEST_F(Validate, StridesNegative)
{
    a.v_stride_h = -64;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "v_stride_h: -64 is negative");
    SetUp();
    a.lse = lse;
    a.lse_stride_h = -1;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "lse_stride_h: -1 is negative");
}

TEST_F(Validate, StridesOfExtentOneDimensionsAreNotChecked)
{
    a.batch = 1;
    a.nhead_q = a.nhead_k = 1;
    a.q_stride_b = a.k_stride_b = a.v_stride_b = a.o_stride_b = 3;
    a.q_stride_h = a.k_stride_h = a.v_stride_h = a.o_stride_h = -5;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.lse = lse;
    a.lse_stride_h = 100; // lse strides need no vector alignment
    a.lse_stride_b = 7;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
}

TEST_F(Validate, GroupModeNeedsSeqstart)
{
    group();
    a.seqstart_q = nullptr;
    EXPECT_FAILS(CKT_ERROR_NULL_POINTER, "seqstart_q: NULL");
    group();
    a.seqstart_q = start_q;
    a.seqstart_k = nullptr;
    EXPECT_FAILS(CKT_ERROR_NULL_POINTER, "seqstart_k: NULL");
}

#if defined(CKT_BACKEND_CPU) // device arrays are readable only on the emulator

TEST_F(Validate, GroupSeqstartNegative)
{
    group();
    start_q[0] = -1;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "seqstart_q: [0] = -1 is negative");
}

TEST_F(Validate, GroupSeqstartDecreases)
{
    group();
    start_k[2] = 4;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "seqstart_k: decreases at entry 1 (5 then 4)");
}

TEST_F(Validate, GroupLogicalLengthOutsideThePhysical)
{
    group();
    len_q[2] = 8; // entry 2 has 7 physical rows
    a.seqlen_q_ptr = len_q;
    a.seqlen_q = 8;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT,
                 "seqlen_q_ptr: [2] = 8 is outside [0, 7] (the physical length seqstart_q[3] - seqstart_q[2])");
    len_q[2] = -1;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "seqlen_q_ptr: [2] = -1 is outside [0, 7]");
}

TEST_F(Validate, GroupSeqlenBelowAnEntry)
{
    group();
    a.seqlen_k = 6; // entry 2 has 7 keys
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "seqlen_k: 6 is less than entry 2's length 7");
}

#endif

} // namespace
