// ckt_fmha_fwd_validate and ckt_fmha_bwd_validate (ckt/fmha/validate.h): one
// case per message, each checking the status and that the message names the
// argument; and the layout-overlap helper (ckt_fmha_check_disjoint).
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
    alignas(16) uint16_t buf[5][64];
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

// attention sinks: with any head dims, masks, soft-cap, group mode; 4-byte aligned
TEST_F(Validate, SinkWithEverythingPassesAndMustBeAligned)
{
    a.sink = lse;
    a.hdim_q = 120;
    a.softcap = 30.0f;
    a.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    group();
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.sink = (const float *)((const char *)lse + 2);
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "sink: 0x");
}

// dropout: p_drop in [0, 1) (errors name p_drop, also for an empty problem),
// drop_seed_offset 8-byte aligned, randval only with p_drop > 0
TEST_F(Validate, DropoutProbabilitySeedPointerAndRandval)
{
    a.p_drop = 0.5f;
    a.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    group();
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    static uint64_t so[3];
    a.drop_seed_offset = so;
    a.randval = (uint8_t *)so;
    a.randval_stride_s = 64;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.randval_stride_h = -1;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "randval_stride_h: -1");
    a.randval_stride_h = 0;
    a.drop_seed_offset = (const uint64_t *)((const char *)so + 4);
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "drop_seed_offset: 0x");
    a.drop_seed_offset = nullptr;
    a.p_drop = 1.0f;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "p_drop: 1 (must be in [0, 1)");
    a.p_drop = -0.1f;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "p_drop: -0.1");
    a.p_drop = NAN;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "p_drop: nan");
    a.p_drop = 0.0f; // no dropout: nothing to store
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "randval: set, but p_drop is 0");
    a.randval = nullptr;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.p_drop = 2.0f;
    a.batch = 0; // before the empty test
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "p_drop: 2");
}

// bias and ALiBi: with masks, GQA, group mode; zero strides broadcast;
// 2-byte bias, 4-byte slopes; not both, not with a soft-cap, no negative
// strides; errors name the argument (checked before the empty test)
TEST_F(Validate, BiasAndAlibi)
{
    a.bias = buf[4];
    a.bias_stride_s = 121; // any stride: elements are read one by one
    a.bias_stride_h = 0;   // broadcast over heads
    a.bias_stride_b = 4 * 100 * 121;
    a.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    group();
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.bias = (const char *)buf[4] + 1;
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "bias: 0x");
    a.bias = buf[4];
    a.bias_stride_s = -1;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "bias_stride_s: -1 is negative");
    SetUp();
    a.alibi_slopes = lse;
    a.alibi_stride_b = 4; // [batch][nhead_q]
    a.mask = CKT_MASK_WINDOW_TOP_LEFT;
    a.window_left = 8;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.alibi_stride_b = -4;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "alibi_stride_b: -4 is negative");
    a.alibi_stride_b = 0;
    a.alibi_slopes = (const float *)((const char *)lse + 2);
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "alibi_slopes: 0x");
    a.alibi_slopes = lse;
    a.bias = buf[4]; // both: an error naming alibi_slopes, even for an empty problem
    a.batch = 0;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "alibi_slopes: set together with bias");
    a.alibi_slopes = nullptr;
    a.softcap = 30.0f; // bias with a soft-cap
    EXPECT_FAILS(CKT_ERROR_UNSUPPORTED, "bias: set with softcap 30");
    a.bias = nullptr;
    a.alibi_slopes = lse;
    EXPECT_FAILS(CKT_ERROR_UNSUPPORTED, "alibi_slopes: set with softcap 30");
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

// >>outputs must not overlap themselves (O): rows, heads, batch entries

TEST_F(Validate, OutputRowsOverlap)
{
    a.hdim_v = 128;
    a.o_stride_s = 64; // [b][h][s][64]-strided rows of 128 columns
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "o_stride_s: 64 is less than hdim_v 128: output rows would overlap");
    group(); // group mode too: the packed rows share o_stride_s
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "o_stride_s: 64 is less than hdim_v 128: output rows would overlap");
}

TEST_F(Validate, OutputHeadsOverlap)
{
    a.o_stride_h = 3200; // 100 rows of 64 need 6400
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT,
                 "o_stride_h: 3200 is less than 6400, the span of the dimensions below it (hdim_v, o_stride_s): "
                 "output heads would overlap");
}

TEST_F(Validate, OutputBatchEntriesOverlap)
{
    a.o_stride_b = 2 * a.o_stride_h; // 4 heads
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT,
                 "o_stride_b: 12800 is less than 25600, the span of the dimensions below it (hdim_v, o_stride_s, "
                 "o_stride_h): output batch entries would overlap");
}

TEST_F(Validate, OutputZeroStride)
{
    a.o_stride_h = 0; // every head onto the same rows
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "o_stride_h: 0 with 4 heads: output heads would overlap");
}

TEST_F(Validate, DisjointOutputLayoutsPass)
{
    // [b][s][h][d], padded rows, a broadcast (zero-stride) input, one head
    ckt_fmha_strides(&a.o_stride_b, &a.o_stride_h, &a.o_stride_s, 0, 4, 100, 64);
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.o_stride_s += 8;
    a.o_stride_b += 800;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.q_stride_h = 0; // inputs may alias: they are only read
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.nhead_q = a.nhead_k = 1;
    a.o_stride_h = 0; // extent 1: never stepped
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
}

TEST(CheckDisjoint, SortsByStrideAndIgnoresExtentOne)
{
    // [h][s][d] given out of order: disjoint
    ckt_fmha_dim ok[3] = {{1000, 4, "x_stride_h", "heads"}, {1, 64, "hdim", "columns"}, {64, 10, "x_stride_s", "rows"}};
    EXPECT_EQ(ckt_fmha_check_disjoint(ok, 3), CKT_SUCCESS) << ckt_last_error();
    // one byte short of the span of [s][d] below h: 9 * 64 + 64 = 640
    ckt_fmha_dim tight[3] = {{639, 4, "x_stride_h", "heads"}, {1, 64, "hdim", "columns"}, {64, 10, "x_stride_s", "rows"}};
    EXPECT_EQ(ckt_fmha_check_disjoint(tight, 3), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ckt_last_error()).find("x_stride_h: 639 is less than 640"), std::string::npos)
        << ckt_last_error();
    // an extent-1 dimension with a clashing stride is never stepped
    ckt_fmha_dim one[3] = {{3, 1, "x_stride_b", "batch entries"}, {1, 64, "hdim", "columns"}, {64, 10, "x_stride_s", "rows"}};
    EXPECT_EQ(ckt_fmha_check_disjoint(one, 3), CKT_SUCCESS) << ckt_last_error();
    // interleaved heads inside a row: [s][h][d]
    ckt_fmha_dim shd[3] = {{64, 4, "x_stride_h", "heads"}, {1, 64, "hdim", "columns"}, {256, 10, "x_stride_s", "rows"}};
    EXPECT_EQ(ckt_fmha_check_disjoint(shd, 3), CKT_SUCCESS) << ckt_last_error();
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

// >>the backward: ckt_fmha_bwd_validate

class ValidateBwd : public ::testing::Test {
  protected:
    alignas(16) uint16_t buf[10][64];
    alignas(16) float lse[16];
    alignas(16) unsigned char ws[64];
    int32_t start_q[4] = {0, 3, 3, 10}, start_k[4] = {0, 5, 5, 12};
    ckt_fmha_bwd_args a;

    void SetUp() override
    {
        memset(&a, 0, sizeof a);
        a.dtype = CKT_BF16;
        a.q = buf[0];
        a.k = buf[1];
        a.v = buf[2];
        a.o = buf[3];
        a.dout = buf[4];
        a.dq = buf[5];
        a.dk = buf[6];
        a.dv = buf[7];
        a.lse = lse;
        a.workspace = ws;
        a.workspace_bytes = sizeof ws;
        a.batch = 2;
        a.nhead_q = 4;
        a.nhead_k = 2;
        a.seqlen_q = 100;
        a.seqlen_k = 120;
        a.hdim_q = 128;
        a.hdim_v = 64;
        ckt_fmha_strides(&a.q_stride_b, &a.q_stride_h, &a.q_stride_s, 1, 4, 100, 128);
        ckt_fmha_strides(&a.k_stride_b, &a.k_stride_h, &a.k_stride_s, 0, 2, 120, 128);
        ckt_fmha_strides(&a.v_stride_b, &a.v_stride_h, &a.v_stride_s, 0, 2, 120, 64);
        ckt_fmha_strides(&a.o_stride_b, &a.o_stride_h, &a.o_stride_s, 1, 4, 100, 64);
        ckt_fmha_strides(&a.do_stride_b, &a.do_stride_h, &a.do_stride_s, 0, 4, 100, 64);
        ckt_fmha_strides(&a.dq_stride_b, &a.dq_stride_h, &a.dq_stride_s, 1, 4, 100, 128);
        ckt_fmha_strides(&a.dk_stride_b, &a.dk_stride_h, &a.dk_stride_s, 1, 2, 120, 128);
        ckt_fmha_strides(&a.dv_stride_b, &a.dv_stride_h, &a.dv_stride_s, 0, 2, 120, 64);
        a.lse_stride_h = 100;
        a.lse_stride_b = 400;
    }
    void group()
    {
        a.group_mode = 1;
        a.batch = 3;
        a.seqlen_q = 7;
        a.seqlen_k = 7;
        a.seqstart_q = start_q;
        a.seqstart_k = start_k;
    }
    // validates for a bf16 instance of 128 / 128
    ckt_status check() { return ckt_fmha_bwd_validate(&a, CKT_BF16, 128, 128); }
};

TEST_F(ValidateBwd, ValidArgumentsPass)
{
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.deterministic = 1;
    a.mask = CKT_MASK_WINDOW_TOP_LEFT;
    a.window_left = 8;
    a.window_right = 0;
    a.softcap = 20.0f;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    group();
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
}

TEST_F(ValidateBwd, ArgsNull)
{
    EXPECT_EQ(ckt_fmha_bwd_validate(nullptr, CKT_BF16, 128, 128), CKT_ERROR_NULL_POINTER);
    EXPECT_STREQ(ckt_last_error(), "args: NULL");
}

TEST_F(ValidateBwd, SharesTheForwardsChecks)
{
    // one message of each group of the shared checks, through the same code
    a.dtype = CKT_F16;
    EXPECT_FAILS(CKT_ERROR_UNSUPPORTED, "dtype: fp16, this instance is bf16");
    SetUp();
    a.seqlen_k = -2;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "seqlen_k: -2 is negative");
    SetUp();
    a.hdim_v = 136;
    EXPECT_FAILS(CKT_ERROR_UNSUPPORTED, "hdim_v: 136 exceeds this instance's HDIM_V 128");
    SetUp();
    a.nhead_k = 3;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "nhead_q: 4 is not a multiple of nhead_k 3");
    SetUp();
    a.seqlen_k_ptr = start_k;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "seqlen_k_ptr: set, but group_mode is 0");
    SetUp();
    a.scale = -0.5f;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "scale: -0.5");
    SetUp();
    a.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    a.window_right = 2;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "window_right: 2, but mask CKT_MASK_CAUSAL_BOTTOM_RIGHT ignores it");
}

TEST_F(ValidateBwd, SinkAndDsink)
{
    a.sink = lse;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error(); // sinks without their gradient
    a.dsink = lse + 1;
    a.deterministic = 1;
    a.softcap = 5.0f;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.dsink = (float *)((char *)lse + 2);
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "dsink: 0x");
    a.sink = nullptr; // the gradient of no sinks: an error naming dsink, even for an empty problem
    a.dsink = lse;
    a.batch = 0;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "dsink: set, but sink is NULL");
}

TEST_F(ValidateBwd, Dropout)
{
    a.p_drop = 0.9f;
    a.deterministic = 1;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    static uint64_t so[2];
    a.drop_seed_offset = so;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.drop_seed_offset = (const uint64_t *)((const char *)so + 2);
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "drop_seed_offset: 0x");
    a.drop_seed_offset = nullptr;
    a.p_drop = 1.5f;
    a.batch = 0;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "p_drop: 1.5 (must be in [0, 1)");
}

// bias, ALiBi and dbias: dbias needs bias (an error naming dbias, also for
// an empty problem), is 2-byte aligned, its elements distinct but for a
// zero batch or head stride (a broadcast dbias, reduced)
TEST_F(ValidateBwd, BiasAlibiAndDbias)
{
    a.bias = buf[8];
    a.bias_stride_s = 120;
    a.bias_stride_h = 100 * 120;
    a.bias_stride_b = 0; // broadcast over the batch: fine for bias
    a.dbias = buf[9];
    a.dbias_stride_s = 120;
    a.dbias_stride_h = 100 * 120;
    a.dbias_stride_b = 4 * 100 * 120;
    a.deterministic = 1;
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.dbias_stride_b = 0; // a broadcast dbias: reduced over the entries (the dbias_reduce stage) ...
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.dbias_stride_h = 0; // ... and the heads
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.dbias_stride_s = 100; // but its rows still may not overlap
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "dbias_stride_s: 100");
    a.dbias_stride_s = 120;
    a.dbias_stride_h = 100; // nor its heads (100 < the 100 x 120 span of a head)
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "dbias_stride_h: 100");
    a.dbias_stride_b = 4 * 100 * 120;
    a.dbias_stride_h = 100 * 120;
    a.dbias_stride_s = 100; // rows overlap: 100 < 120 keys
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "dbias_stride_s: 100");
    a.dbias_stride_s = 120;
    a.dbias = (char *)buf[9] + 1;
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "dbias: 0x");
    a.dbias = buf[9];
    a.bias = nullptr; // the gradient of no bias
    a.batch = 0;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "dbias: set, but bias is NULL");
    SetUp();
    a.alibi_slopes = lse; // ALiBi in the backward: no gradient
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.dbias = buf[9];
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "dbias: set, but bias is NULL");
    a.dbias = nullptr;
    a.softcap = 5.0f;
    EXPECT_FAILS(CKT_ERROR_UNSUPPORTED, "alibi_slopes: set with softcap 5");
}

TEST_F(ValidateBwd, DeterministicNotABool)
{
    a.deterministic = 2;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "deterministic: 2 (0 or 1)");
}

TEST_F(ValidateBwd, LseRequired)
{
    a.lse = nullptr;
    EXPECT_FAILS(CKT_ERROR_NULL_POINTER, "lse: NULL");
    a.lse = (const float *)((const char *)lse + 2);
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "is not 4-byte aligned");
}

TEST_F(ValidateBwd, NullTensors)
{
    const char *names[] = {"q", "k", "v", "o", "dout", "dq", "dk", "dv"};
    for (int i = 0; i < 8; i++) {
        SetUp();
        const void **in[] = {&a.q, &a.k, &a.v, &a.o, &a.dout};
        void **out[] = {&a.dq, &a.dk, &a.dv};
        if (i < 5)
            *in[i] = nullptr;
        else
            *out[i - 5] = nullptr;
        EXPECT_FAILS(CKT_ERROR_NULL_POINTER, std::string(names[i]) + ": NULL");
    }
}

TEST_F(ValidateBwd, MisalignedTensors)
{
    a.dout = (const char *)buf[4] + 8;
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "dout: 0x");
    SetUp();
    a.dk = (char *)buf[6] + 2;
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "dk: 0x");
    EXPECT_NE(std::string(ckt_last_error()).find("is not 16-byte aligned"), std::string::npos);
}

TEST_F(ValidateBwd, StridesOfEveryTensor)
{
    a.do_stride_s = 260;
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "do_stride_s: 260 is not a multiple of 8 elements");
    SetUp();
    a.dq_stride_h = -128;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "dq_stride_h: -128 is negative");
    SetUp();
    a.dv_stride_b = 4;
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "dv_stride_b: 4");
    SetUp();
    a.lse_stride_h = -1;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "lse_stride_h: -1 is negative");
}

TEST_F(ValidateBwd, GradientsMustNotOverlap)
{
    a.dq_stride_s = 64; // rows of 128
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "dq_stride_s: 64 is less than hdim_q 128: output rows would overlap");
    SetUp();
    a.dk_stride_h = 128 * 60; // 120 rows of 128
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT,
                 "dk_stride_h: 7680 is less than 15360, the span of the dimensions below it (hdim_q, dk_stride_s): "
                 "output heads would overlap");
    SetUp();
    a.dv_stride_h = 0; // both kv heads onto the same columns
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "dv_stride_h: 0 with 2 heads: output heads would overlap");
    SetUp();
    a.o_stride_h = 0; // O is an input of the backward: it may alias
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
}

TEST_F(ValidateBwd, WorkspaceRequired)
{
    a.workspace = nullptr;
    EXPECT_FAILS(CKT_ERROR_NULL_POINTER, "workspace: NULL");
    a.workspace = ws + 4;
    EXPECT_FAILS(CKT_ERROR_MISALIGNED, "workspace: 0x");
}

TEST_F(ValidateBwd, EmptyProblems)
{
    // nothing to write: no entries, no query heads, or neither queries nor keys
    a.q = a.k = a.v = a.o = a.dout = nullptr;
    a.dq = a.dk = a.dv = nullptr;
    a.lse = nullptr;
    a.workspace = nullptr;
    a.batch = 0;
    EXPECT_TRUE(ckt_fmha_bwd_is_empty(&a));
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.batch = 2;
    a.nhead_q = a.nhead_k = 0;
    EXPECT_TRUE(ckt_fmha_bwd_is_empty(&a));
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.nhead_q = 4;
    a.nhead_k = 2;
    a.seqlen_q = a.seqlen_k = 0;
    EXPECT_TRUE(ckt_fmha_bwd_is_empty(&a));
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
}

TEST_F(ValidateBwd, NoQueriesStillWritesDkDv)
{
    // seqlen_q = 0: dK = dV = 0 are written, the query side is not read
    a.seqlen_q = 0;
    a.q = a.o = a.dout = nullptr;
    a.dq = nullptr;
    a.lse = nullptr;
    a.dq_stride_s = 3; // unused
    EXPECT_FALSE(ckt_fmha_bwd_is_empty(&a));
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
    a.dk = nullptr;
    EXPECT_FAILS(CKT_ERROR_NULL_POINTER, "dk: NULL");
}

TEST_F(ValidateBwd, NoKeysNeedsNoKeySide)
{
    // seqlen_k = 0: dQ = 0, the key side is neither read nor written
    a.seqlen_k = 0;
    a.k = a.v = nullptr;
    a.dk = a.dv = nullptr;
    EXPECT_FALSE(ckt_fmha_bwd_is_empty(&a));
    EXPECT_EQ(check(), CKT_SUCCESS) << ckt_last_error();
}

TEST_F(ValidateBwd, GroupModeNeedsSeqstart)
{
    group();
    a.seqstart_k = nullptr;
    EXPECT_FAILS(CKT_ERROR_NULL_POINTER, "seqstart_k: NULL");
}

#if defined(CKT_BACKEND_CPU) // device arrays are readable only on the emulator

TEST_F(ValidateBwd, GroupArraysAreChecked)
{
    group();
    start_q[2] = 2;
    EXPECT_FAILS(CKT_ERROR_INVALID_ARGUMENT, "seqstart_q: decreases at entry 1 (3 then 2)");
    EXPECT_EQ(ckt_fmha_bwd_check_seqs(&a), CKT_ERROR_INVALID_ARGUMENT);
}

#endif

} // namespace
