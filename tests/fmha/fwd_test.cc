// The FMHA forward kernels through the dispatcher (ckt_fmha_fwd, libckt_fmha)
// against the CPU reference: a matrix of modes x masks x head dims x dtypes x
// GQA x LSE x layouts x ragged seqlens (1, 3, 55, 100, 257, zero-length entries
// in group mode, logical lengths below the physical ones, seqlen_k = 0,
// seqlen_q = 1). Also checks that nothing outside the logical rows of O and
// LSE is written, and the dispatcher's choice of instance and its errors.
//
// Tolerances are CK's (fp16 atol = rtol = 1e-3, bf16 1e-2), O compared in the
// output type (ckt_ref_fmha_compare). Shapes stay small: the emulator runs
// each profile's matrix in seconds.
#include "ckt/fmha.h"

#include "tests/fmha/fmha_test_util.h"

#include <gtest/gtest.h>

#include <climits>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace {

struct Case {
    ckt_dtype dt = CKT_F16;
    int d = 64, dv = 64;
    int group = 0;
    int batch = 2, h = 2, hk = 2;
    std::vector<int> sq = {55}, sk = {100}; // per entry in group mode (the last repeats)
    int qpad = -1, kpad = -1;               // group mode: extra physical rows per entry (-1: none, no seqlen ptrs)
    ckt_fmha_mask mask = CKT_MASK_NONE;
    int wl = 0, wr = 0;
    int lse = 1;
    int iperm = 1, operm = 1;
    float scale = 0.0f, softcap = 0.0f;
    int row_pad = 0; // extra elements per row of q/k/v/o (multiple of 8)
    int sink = 0;    // per-head sink logits (gpt-oss), random in [-2, 4]
    float p_drop = 0.0f; // dropout (ckt/fmha/dropout.h)
    int randval = 0;     // store the random bytes, compared with the reference's
    int drop_ptr = 0;    // seed / offset through drop_seed_offset (device)
    int num_splits = 0;  // split-KV count (0: none; with a workspace)
    uint64_t drop_salt = 0; // added to the dropout seed (same inputs, another mask)
    int bias = 0;    // 1: elementwise bias, random in [-2, 2]; 2: ALiBi, slopes random in [0, 0.25]
    int bcast = 0;   // bias: 1 broadcast over the batch (stride_b 0), 2 over heads; ALiBi: 1 slopes [b][h]
    std::string name;
};

std::string case_name(const Case &c)
{
    static const char *masks[] = {"none", "tl", "br", "wtl", "wbr"};
    auto side = [](int x) { return x < 0 ? std::string("x") : std::to_string(x); }; // window: x = unlimited
    std::string n = std::string(c.dt == CKT_BF16 ? "bf16" : "fp16") + "_d" + std::to_string(c.d) + "_dv" +
                    std::to_string(c.dv) + (c.group ? "_group" : "_batch") + "_b" + std::to_string(c.batch) + "_h" +
                    std::to_string(c.h) + "_" + std::to_string(c.hk) + "_sq" + fmha_test_list(c.sq) + "_sk" + fmha_test_list(c.sk) +
                    "_" + masks[c.mask];
    if (c.mask >= CKT_MASK_WINDOW_TOP_LEFT)
        n += side(c.wl) + "_" + side(c.wr);
    if (c.qpad >= 0 || c.kpad >= 0)
        n += "_pad" + side(c.qpad) + "_" + side(c.kpad);
    n += c.lse ? "_lse" : "";
    n += c.iperm ? "" : "_bshd";
    n += c.operm ? "" : "_obshd";
    n += c.row_pad ? "_rowpad" : "";
    n += c.scale != 0.0f ? "_scaled" : "";
    n += c.softcap != 0.0f ? "_softcap" : "";
    n += c.sink ? "_sink" : "";
    if (c.p_drop > 0.0f)
        n += "_drop" + std::to_string((int)(c.p_drop * 100)) + (c.randval ? "_randval" : "") + (c.drop_ptr ? "_ptr" : "");
    n += c.num_splits ? "_splits" + std::to_string(c.num_splits) : "";
    n += c.bias == 1 ? "_bias" : c.bias == 2 ? "_alibi" : "";
    n += c.bcast ? "_bc" + std::to_string(c.bcast) : "";
    return n;
}

// Strides of one tensor: [b][h][s][d] (perm 1) or [b][s][h][d], rows of
// `row` elements (>= d).
void strides(int64_t *sb, int64_t *sh, int64_t *ss, int perm, int nhead, int64_t rows, int64_t row)
{
    if (perm) {
        *ss = row;
        *sh = rows * row;
        *sb = nhead * rows * row;
    } else {
        *ss = nhead * row;
        *sh = row;
        *sb = rows * nhead * row;
    }
}

struct FwdRun {
    ckt_fmha_fwd_args h;  // host view
    ckt_fmha_fwd_args dv; // device arguments
    std::vector<int32_t> start_q, start_k, len_q, len_k;
    std::vector<uint16_t> q, k, v, o;
    std::vector<uint8_t> randval; // the kernel's random bytes (host copy)
    uint64_t seed_offset[2] = {0, 0};
    std::vector<float> lse, sink, slopes;
    std::vector<uint16_t> bias;
    FmhaDeviceBuffers bufs;

    void *to_device(const void *src, size_t bytes) { return bufs.dev(src, bytes); }
};

const uint16_t kSentinel = 0x7b7b;
const float kLseSentinel = 1234.5f;

// Builds the case, runs ckt_fmha_fwd and the reference; returns the status of
// ckt_fmha_fwd and fills r with the host copies.
void run_case(const Case &c, FwdRun &r)
{
    ckt_fmha_fwd_args &a = r.h;
    memset(&a, 0, sizeof a);
    a.dtype = c.dt;
    a.batch = c.batch;
    a.nhead_q = c.h;
    a.nhead_k = c.hk;
    a.hdim_q = c.d;
    a.hdim_v = c.dv;
    a.group_mode = c.group;
    a.mask = c.mask;
    a.window_left = c.wl;
    a.window_right = c.wr;
    a.scale = c.scale;
    a.softcap = c.softcap;
    int64_t rows_q, rows_k;
    if (c.group) {
        r.start_q.assign(1, 3); // entries need not start at row 0
        r.start_k.assign(1, 0);
        for (int b = 0; b < c.batch; b++) {
            const int lq = c.sq[std::min<size_t>(b, c.sq.size() - 1)], lk = c.sk[std::min<size_t>(b, c.sk.size() - 1)];
            r.len_q.push_back(lq);
            r.len_k.push_back(lk);
            r.start_q.push_back(r.start_q.back() + lq + (c.qpad > 0 ? c.qpad : 0));
            r.start_k.push_back(r.start_k.back() + lk + (c.kpad > 0 ? c.kpad : 0));
            a.seqlen_q = std::max(a.seqlen_q, lq);
            a.seqlen_k = std::max(a.seqlen_k, lk);
        }
        a.seqstart_q = r.start_q.data();
        a.seqstart_k = r.start_k.data();
        a.seqlen_q_ptr = c.qpad >= 0 ? r.len_q.data() : nullptr;
        a.seqlen_k_ptr = c.kpad >= 0 ? r.len_k.data() : nullptr;
        rows_q = r.start_q.back();
        rows_k = r.start_k.back();
    } else {
        a.seqlen_q = c.sq[0];
        a.seqlen_k = c.sk[0];
        rows_q = a.seqlen_q;
        rows_k = a.seqlen_k;
    }
    strides(&a.q_stride_b, &a.q_stride_h, &a.q_stride_s, c.iperm, c.h, rows_q, c.d + c.row_pad);
    strides(&a.k_stride_b, &a.k_stride_h, &a.k_stride_s, c.iperm, c.hk, rows_k, c.d + c.row_pad);
    strides(&a.v_stride_b, &a.v_stride_h, &a.v_stride_s, c.iperm, c.hk, rows_k, c.dv + c.row_pad);
    strides(&a.o_stride_b, &a.o_stride_h, &a.o_stride_s, c.operm, c.h, rows_q, c.dv + c.row_pad);
    a.lse_stride_h = rows_q + 1; // a gap between heads
    a.lse_stride_b = c.group ? 0 : c.h * a.lse_stride_h;
    if (c.group)
        a.q_stride_b = a.k_stride_b = a.v_stride_b = a.o_stride_b = 0;

    r.q.assign(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_Q), 0);
    r.k.assign(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_K), 0);
    r.v.assign(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_V), 0);
    r.o.assign(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_O), kSentinel);
    r.lse.assign(c.lse ? ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_LSE) : 0, kLseSentinel);
    const uint64_t seed = std::hash<std::string>()(c.name) & 0xffff;
    ASSERT_EQ(ckt_fill(r.q.data(), c.dt, r.q.size(), ckt_init_uniform(-1, 1), seed), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(r.k.data(), c.dt, r.k.size(), ckt_init_uniform(-1, 1), seed + 1), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(r.v.data(), c.dt, r.v.size(), ckt_init_uniform(-1, 1), seed + 2), CKT_SUCCESS);
    a.q = r.q.data();
    a.k = r.k.empty() ? nullptr : r.k.data();
    a.v = r.v.empty() ? nullptr : r.v.data();
    if (c.sink) { // sink logits in [-2, 4]: from negligible to dominant against ~100 keys
        r.sink.assign(c.h, 0.0f);
        ASSERT_EQ(ckt_fill(r.sink.data(), CKT_F32, r.sink.size(), ckt_init_uniform(-2, 4), seed + 3), CKT_SUCCESS);
        a.sink = r.sink.data();
    }
    if (c.bias == 1) { // [batch][h][seqlen_q][seqlen_k + 3]: ragged rows; a zero stride broadcasts
        a.bias_stride_s = a.seqlen_k + 3;
        a.bias_stride_h = c.bcast == 2 ? 0 : (int64_t)a.seqlen_q * a.bias_stride_s;
        a.bias_stride_b = c.bcast == 1 ? 0 : (int64_t)(c.bcast == 2 ? 1 : c.h) * a.seqlen_q * a.bias_stride_s;
        r.bias.assign((size_t)(c.bcast == 1 ? 1 : c.batch) * (c.bcast == 2 ? 1 : c.h) * a.seqlen_q * a.bias_stride_s + 1, 0);
        ASSERT_EQ(ckt_fill(r.bias.data(), c.dt, r.bias.size(), ckt_init_uniform(-2, 2), seed + 4), CKT_SUCCESS);
        a.bias = r.bias.data();
    } else if (c.bias == 2) { // slopes [h] or [batch][h]
        r.slopes.assign((size_t)(c.bcast ? c.batch : 1) * c.h, 0.0f);
        ASSERT_EQ(ckt_fill(r.slopes.data(), CKT_F32, r.slopes.size(), ckt_init_uniform(0, 0.25), seed + 5), CKT_SUCCESS);
        a.alibi_slopes = r.slopes.data();
        a.alibi_stride_b = c.bcast ? c.h : 0;
    }

    if (c.p_drop > 0.0f) { // seed and offset from the case's name: every case its own mask
        a.p_drop = c.p_drop;
        a.drop_seed = seed * 0x9E3779B97F4A7C15ull + 1 + c.drop_salt;
        a.drop_offset = (seed << 33) + 7;
        if (c.drop_ptr) { // by pointer: the fields say otherwise, the pointer wins
            r.seed_offset[0] = a.drop_seed;
            r.seed_offset[1] = a.drop_offset;
            a.drop_seed = 5;
            a.drop_offset = 6;
            a.drop_seed_offset = r.seed_offset;
        }
        if (c.randval) { // [b][h][seqlen_q][seqlen_k], the max lengths in group mode
            a.randval_stride_s = a.seqlen_k;
            a.randval_stride_h = (int64_t)a.seqlen_q * a.seqlen_k;
            a.randval_stride_b = c.h * a.randval_stride_h;
            r.randval.assign((size_t)c.batch * a.randval_stride_b, 0xee);
        }
    }

    ckt_fmha_fwd_args &d = r.dv;
    d = a;
    if (c.drop_ptr)
        d.drop_seed_offset = (const uint64_t *)r.to_device(r.seed_offset, sizeof r.seed_offset);
    if (c.randval)
        d.randval = (uint8_t *)r.to_device(r.randval.data(), r.randval.size());
    std::vector<uint8_t> ws;
    if (c.num_splits) { // split-KV with an explicit count
        d.num_splits = c.num_splits;
        d.workspace_bytes = ckt_fmha_fwd_workspace_bytes(&d);
        ws.assign(d.workspace_bytes + 16, 0);
        d.workspace = r.to_device(ws.data(), ws.size());
    }
    d.q = r.to_device(r.q.data(), r.q.size() * 2);
    d.k = r.k.empty() ? nullptr : r.to_device(r.k.data(), r.k.size() * 2);
    d.v = r.v.empty() ? nullptr : r.to_device(r.v.data(), r.v.size() * 2);
    d.o = r.to_device(r.o.data(), r.o.size() * 2);
    d.lse = c.lse ? (float *)r.to_device(r.lse.data(), r.lse.size() * 4) : nullptr;
    d.sink = c.sink ? (const float *)r.to_device(r.sink.data(), r.sink.size() * 4) : nullptr;
    d.bias = c.bias == 1 ? r.to_device(r.bias.data(), r.bias.size() * 2) : nullptr;
    d.alibi_slopes = c.bias == 2 ? (const float *)r.to_device(r.slopes.data(), r.slopes.size() * 4) : nullptr;
    if (c.group) {
        d.seqstart_q = (const int32_t *)r.to_device(r.start_q.data(), r.start_q.size() * 4);
        d.seqstart_k = (const int32_t *)r.to_device(r.start_k.data(), r.start_k.size() * 4);
        d.seqlen_q_ptr = a.seqlen_q_ptr ? (const int32_t *)r.to_device(r.len_q.data(), r.len_q.size() * 4) : nullptr;
        d.seqlen_k_ptr = a.seqlen_k_ptr ? (const int32_t *)r.to_device(r.len_k.data(), r.len_k.size() * 4) : nullptr;
    }
    ASSERT_EQ(ckt_fmha_fwd(&d, nullptr), CKT_SUCCESS) << ckt_last_error();
    ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS) << ckt_last_error();
    ASSERT_EQ(ckt_rt_memcpy(r.o.data(), d.o, r.o.size() * 2, CKT_D2H), CKT_SUCCESS);
    if (c.lse) {
        ASSERT_EQ(ckt_rt_memcpy(r.lse.data(), d.lse, r.lse.size() * 4, CKT_D2H), CKT_SUCCESS);
    }
    if (c.randval) {
        ASSERT_EQ(ckt_rt_memcpy(r.randval.data(), d.randval, r.randval.size(), CKT_D2H), CKT_SUCCESS);
    }
}

// The kernel's random bytes (r.randval) equal the reference's (ref) at every
// visible (i, j), the ones the mask lets query i see; returns how many were compared.
int64_t expect_randval_matches(const FwdRun &r, const std::vector<uint8_t> &ref)
{
    const ckt_fmha_fwd_args &a = r.h;
    int64_t n = 0, bad = 0;
    for (int b = 0; b < a.batch; b++) {
        const ckt_fmha_entry e = ckt_fmha_fwd_entry(&a, b);
        for (int h = 0; h < a.nhead_q; h++)
            for (int i = 0; i < e.sq; i++) {
                int64_t lo, hi;
                ckt_fmha_fwd_row_keys(&a, i, e.sq, e.sk, &lo, &hi);
                for (int64_t j = lo; j < hi; j++) {
                    const size_t o = (size_t)(b * a.randval_stride_b + h * a.randval_stride_h + i * a.randval_stride_s + j);
                    n++;
                    if (r.randval[o] != ref[o] && bad++ < 5)
                        ADD_FAILURE() << "randval[b " << b << "][h " << h << "][i " << i << "][j " << j
                                      << "]: kernel " << (int)r.randval[o] << ", reference " << (int)ref[o];
                }
            }
    }
    EXPECT_EQ(bad, 0) << "of " << n << " visible elements";
    return n;
}

// Runs case c and compares O and LSE with the reference; checks that
// nothing outside the logical rows is written.
void expect_matches_reference(const Case &c)
{
    FwdRun r;
    run_case(c, r);
    if (::testing::Test::HasFatalFailure())
        return;
    const ckt_fmha_fwd_args &a = r.h;
    std::vector<float> o_ref(r.o.size(), 0.0f), lse_ref(r.lse.size(), 0.0f);
    std::vector<uint8_t> rv_ref(r.randval.size(), 0xee);
    ckt_fmha_fwd_args ah = a; // the reference writes its random bytes apart
    ah.randval = c.randval ? rv_ref.data() : nullptr;
    ASSERT_EQ(ckt_ref_fmha_fwd(&ah, o_ref.data(), c.lse ? lse_ref.data() : nullptr), CKT_SUCCESS) << ckt_last_error();
    if (c.randval && c.p_drop > 0.0f)
        expect_randval_matches(r, rv_ref);
    const double tol = c.dt == CKT_BF16 ? 1e-2 : 1e-3;
    ckt_compare_result ro, rl;
    ckt_status s = ckt_ref_fmha_compare(&ro, &rl, &a, r.o.data(), c.lse ? r.lse.data() : nullptr, o_ref.data(),
                                        c.lse ? lse_ref.data() : nullptr, tol, tol);
    if (s != CKT_SUCCESS) {
        ckt_compare_print(stderr, "O", &ro);
        if (c.lse)
            ckt_compare_print(stderr, "LSE", &rl);
    }
    EXPECT_EQ(s, CKT_SUCCESS) << ckt_last_error();

    // nothing outside the logical rows is written
    std::vector<char> logical(r.o.size(), 0), logical_lse(r.lse.size(), 0);
    for (int b = 0; b < a.batch; b++) {
        const ckt_fmha_entry e = ckt_fmha_fwd_entry(&a, b);
        const int64_t bb = a.group_mode ? 0 : b;
        for (int h = 0; h < a.nhead_q; h++)
            for (int64_t i = 0; i < e.sq; i++) {
                const int64_t off = bb * a.o_stride_b + h * a.o_stride_h + (e.q_start + i) * a.o_stride_s;
                for (int d = 0; d < a.hdim_v; d++)
                    logical[(size_t)(off + d)] = 1;
                if (c.lse)
                    logical_lse[(size_t)(bb * a.lse_stride_b + h * a.lse_stride_h + e.q_start + i)] = 1;
            }
    }
    for (size_t i = 0; i < r.o.size(); i++) {
        if (!logical[i]) {
            ASSERT_EQ(r.o[i], kSentinel) << "O element " << i << " outside the logical rows was written";
        }
    }
    for (size_t i = 0; i < r.lse.size(); i++) {
        if (!logical_lse[i]) {
            ASSERT_EQ(r.lse[i], kLseSentinel) << "LSE element " << i << " outside the logical rows was written";
        }
    }
}

class Fwd : public ::testing::TestWithParam<Case> {};

TEST_P(Fwd, MatchesReference)
{
    expect_matches_reference(GetParam());
}

std::vector<Case> matrix()
{
    std::vector<Case> cs;
    auto add = [&cs](Case c) {
        c.name = case_name(c);
        cs.push_back(c);
    };
    struct Dims {
        int d, dv;
    };
    // every instance, and padded head dims that run on the next larger one
    const Dims dims[] = {{32, 32}, {64, 64}, {96, 96}, {128, 128}, {192, 128}, {192, 192}, {256, 256},
                         {8, 8},   {40, 40}, {72, 72}, {128, 64},  {136, 104}, {248, 256}};
    for (ckt_dtype dt : {CKT_F16, CKT_BF16})
        for (const Dims &dd : dims) {
            Case c;
            c.dt = dt;
            c.d = dd.d;
            c.dv = dd.dv;
            c.h = 4;
            c.hk = 2;
            c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
            add(c);
        }

    // masks x modes x seqlens (d 64, alternating dtypes, GQA, LSE on and off)
    struct Mask {
        ckt_fmha_mask m;
        int l, r;
    };
    const Mask masks[] = {{CKT_MASK_NONE, 0, 0},
                          {CKT_MASK_CAUSAL_TOP_LEFT, 0, 0},
                          {CKT_MASK_CAUSAL_BOTTOM_RIGHT, 0, 0},
                          {CKT_MASK_WINDOW_TOP_LEFT, 16, 5},
                          {CKT_MASK_WINDOW_BOTTOM_RIGHT, 40, 0},
                          {CKT_MASK_WINDOW_TOP_LEFT, -1, 7},
                          {CKT_MASK_WINDOW_BOTTOM_RIGHT, 3, -1},
                          {CKT_MASK_WINDOW_TOP_LEFT, 0, 0},
                          // "no limit" as INT_MAX: the masked tiles' 32-bit ranges once overflowed (mask.h)
                          {CKT_MASK_WINDOW_TOP_LEFT, INT_MAX, INT_MAX}};
    const int lens[][2] = {{1, 1}, {3, 257}, {55, 100}, {100, 55}, {257, 3}, {257, 257}, {1, 257}};
    int n = 0;
    for (const Mask &m : masks)
        for (const auto &l : lens) {
            Case c;
            c.dt = n % 2 ? CKT_BF16 : CKT_F16;
            c.mask = m.m;
            c.wl = m.l;
            c.wr = m.r;
            c.sq = {l[0]};
            c.sk = {l[1]};
            c.batch = 1 + n % 2;
            c.h = n % 3 == 0 ? 3 : 2;
            c.hk = n % 3 == 0 ? 1 : 2;
            c.lse = n % 4 != 1;
            c.iperm = n % 5 != 2;
            c.operm = n % 7 != 3;
            n++;
            add(c);
        }
    // group mode: ragged entries incl. zero-length ones, packed and padded
    const std::vector<std::vector<int>> gq = {{1, 3, 55, 100, 257}, {0, 17, 0, 64}, {100, 0}};
    const std::vector<std::vector<int>> gk = {{257, 3, 100, 55, 1}, {5, 0, 0, 80}, {33, 129}};
    for (size_t gi = 0; gi < gq.size(); gi++)
        for (const Mask &m : masks) {
            Case c;
            c.dt = n % 2 ? CKT_BF16 : CKT_F16;
            c.group = 1;
            c.batch = (int)gq[gi].size();
            c.sq = gq[gi];
            c.sk = gk[gi];
            c.mask = m.m;
            c.wl = m.l;
            c.wr = m.r;
            c.h = 4;
            c.hk = n % 2 ? 1 : 2;
            c.qpad = n % 3 == 0 ? -1 : 5;
            c.kpad = n % 3 == 2 ? -1 : 11;
            c.lse = n % 4 != 1;
            c.iperm = n % 2;
            c.operm = n % 3 != 0;
            c.d = n % 5 == 0 ? 128 : 64;
            c.dv = c.d;
            n++;
            add(c);
        }

    // scale, soft-cap, padded rows
    {
        Case c;
        c.scale = 0.3f;
        add(c);
        c.scale = 0.0f;
        c.softcap = 2.5f;
        c.mask = CKT_MASK_CAUSAL_TOP_LEFT;
        add(c);
        c.dt = CKT_BF16;
        c.softcap = 10.0f;
        c.scale = 1.0f;
        c.d = c.dv = 128;
        add(c);
        Case p;
        p.row_pad = 8;
        p.iperm = 0;
        add(p);
        p.row_pad = 24;
        p.group = 1;
        p.batch = 3;
        p.sq = {20, 1, 40};
        p.sk = {9, 30, 0};
        p.mask = CKT_MASK_WINDOW_BOTTOM_RIGHT;
        p.wl = 5;
        p.wr = 2;
        add(p);
    }
    // seqlen_k = 0 (every row fully masked: O = 0, LSE = -inf), seqlen_q = 1
    {
        Case c;
        c.sq = {7};
        c.sk = {0};
        add(c);
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        c.dt = CKT_BF16;
        add(c);
        c.sq = {1};
        c.sk = {300};
        add(c);
        c.mask = CKT_MASK_WINDOW_TOP_LEFT;
        c.wl = 0;
        c.wr = 0;
        add(c);
        Case g;
        g.group = 1;
        g.batch = 3;
        g.sq = {4, 0, 9};
        g.sk = {0, 0, 0};
        add(g);
    }
    // attention sinks (gpt-oss): masks, GQA, modes, soft-cap, rows with no
    // visible key (O = 0, LSE = sink), decode lengths (the GQA-packed instances)
    {
        const Mask sink_masks[] = {{CKT_MASK_NONE, 0, 0},
                                   {CKT_MASK_CAUSAL_TOP_LEFT, 0, 0},
                                   {CKT_MASK_CAUSAL_BOTTOM_RIGHT, 0, 0},
                                   {CKT_MASK_WINDOW_TOP_LEFT, 16, 5},
                                   {CKT_MASK_WINDOW_BOTTOM_RIGHT, 3, -1},
                                   {CKT_MASK_WINDOW_TOP_LEFT, 0, 0}};
        const int sink_lens[][2] = {{55, 100}, {257, 3}, {7, 130}};
        int k = 0;
        for (const Mask &m : sink_masks)
            for (const auto &l : sink_lens) {
                Case c;
                c.sink = 1;
                c.dt = k % 2 ? CKT_BF16 : CKT_F16;
                c.mask = m.m;
                c.wl = m.l;
                c.wr = m.r;
                c.sq = {l[0]};
                c.sk = {l[1]};
                c.h = k % 3 == 0 ? 6 : 4;
                c.hk = k % 3 == 0 ? 2 : k % 3 == 1 ? 1 : 4;
                c.d = c.dv = k % 4 == 3 ? 128 : 64;
                c.iperm = k % 2;
                k++;
                add(c);
            }
        Case g; // group mode: zero-length entries, no keys, padding, GQA
        g.sink = 1;
        g.group = 1;
        g.batch = 4;
        g.sq = {0, 17, 9, 64};
        g.sk = {5, 0, 40, 80};
        g.qpad = 5;
        g.kpad = 11;
        g.h = 4;
        g.hk = 2;
        g.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        add(g);
        g.mask = CKT_MASK_WINDOW_TOP_LEFT, g.wl = 4, g.wr = 0, g.dt = CKT_BF16, g.sq = {3, 1, 12, 2};
        add(g); // decode lengths in group mode
        Case s; // soft-cap (the sink is not capped), scale, LSE off
        s.sink = 1;
        s.softcap = 2.5f;
        s.mask = CKT_MASK_CAUSAL_TOP_LEFT;
        add(s);
        s.softcap = 0.0f;
        s.scale = 0.3f;
        s.lse = 0;
        s.dt = CKT_BF16;
        add(s);
        Case z; // seqlen_k = 0: every row has only the sink
        z.sink = 1;
        z.sq = {7};
        z.sk = {0};
        add(z);
        for (int d : {64, 128, 256}) { // decode: GQA-packed rows of g heads, each with its own sink
            Case dcd;
            dcd.sink = 1;
            dcd.d = dcd.dv = d;
            dcd.dt = d == 128 ? CKT_BF16 : CKT_F16;
            dcd.sq = {d == 64 ? 1 : 5};
            dcd.sk = {200};
            dcd.h = 8;
            dcd.hk = 2;
            dcd.mask = d == 256 ? CKT_MASK_WINDOW_BOTTOM_RIGHT : CKT_MASK_CAUSAL_BOTTOM_RIGHT;
            dcd.wl = d == 256 ? 2 : 0;
            dcd.wr = 0;
            add(dcd);
        }
    }
    // dropout: masks x ragged lengths x GQA, the random bytes against the
    // reference's; group mode; seed / offset by pointer; with a soft-cap and
    // sinks; head dims of every instance; decode (GQA-packed rows); split-KV
    {
        const Mask drop_masks[] = {{CKT_MASK_NONE, 0, 0},
                                   {CKT_MASK_CAUSAL_TOP_LEFT, 0, 0},
                                   {CKT_MASK_CAUSAL_BOTTOM_RIGHT, 0, 0},
                                   {CKT_MASK_WINDOW_TOP_LEFT, 16, 5},
                                   {CKT_MASK_WINDOW_BOTTOM_RIGHT, 3, -1}};
        const int drop_lens[][2] = {{55, 100}, {257, 3}, {7, 130}, {1, 33}};
        const float ps[] = {0.1f, 0.3f, 0.5f, 0.9f};
        int k = 0;
        for (const Mask &m : drop_masks)
            for (const auto &l : drop_lens) {
                Case c;
                c.p_drop = ps[k % 4];
                c.randval = 1;
                c.dt = k % 2 ? CKT_BF16 : CKT_F16;
                c.mask = m.m;
                c.wl = m.l;
                c.wr = m.r;
                c.sq = {l[0]};
                c.sk = {l[1]};
                c.h = k % 3 == 0 ? 6 : 4;
                c.hk = k % 3 == 0 ? 2 : k % 3 == 1 ? 1 : 4;
                c.d = c.dv = k % 4 == 3 ? 128 : 64;
                c.iperm = k % 2;
                c.drop_ptr = k % 5 == 2;
                k++;
                add(c);
            }
        Case g; // group mode: zero-length entries, no keys, padding, GQA
        g.p_drop = 0.2f;
        g.randval = 1;
        g.group = 1;
        g.batch = 4;
        g.sq = {0, 17, 9, 64};
        g.sk = {5, 0, 40, 80};
        g.qpad = 5;
        g.kpad = 11;
        g.h = 4;
        g.hk = 2;
        g.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        add(g);
        g.mask = CKT_MASK_NONE, g.dt = CKT_BF16, g.sq = {33, 1, 12, 70}, g.drop_ptr = 1;
        add(g);
        Case s; // soft-cap, sinks, LSE off
        s.p_drop = 0.4f;
        s.randval = 1;
        s.softcap = 2.5f;
        s.sink = 1;
        s.mask = CKT_MASK_CAUSAL_TOP_LEFT;
        add(s);
        s.softcap = 0.0f;
        s.lse = 0;
        s.randval = 0;
        s.dt = CKT_BF16;
        add(s);
        struct Dims {
            int d, dv;
        };
        for (const Dims &dd : {Dims{32, 32}, Dims{96, 96}, Dims{192, 128}, Dims{192, 192}, Dims{256, 256}, Dims{40, 40}}) {
            Case c;
            c.p_drop = 0.25f;
            c.randval = dd.d != 40;
            c.d = dd.d;
            c.dv = dd.dv;
            c.h = 4;
            c.hk = 2;
            c.sq = {70};
            c.sk = {90};
            c.dt = dd.d % 64 ? CKT_F16 : CKT_BF16;
            c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
            add(c);
        }
        for (int d : {64, 128, 256}) { // decode: GQA-packed rows, each with its own head's mask
            Case dcd;
            dcd.p_drop = 0.3f;
            dcd.randval = 1;
            dcd.d = dcd.dv = d;
            dcd.dt = d == 128 ? CKT_BF16 : CKT_F16;
            dcd.sq = {d == 64 ? 1 : 5};
            dcd.sk = {200};
            dcd.h = 8;
            dcd.hk = 2;
            dcd.mask = d == 256 ? CKT_MASK_WINDOW_BOTTOM_RIGHT : CKT_MASK_CAUSAL_BOTTOM_RIGHT;
            dcd.wl = d == 256 ? 2 : 0;
            add(dcd);
        }
        Case sp; // split-KV: each split drops its own keys, the combine is linear
        sp.p_drop = 0.3f;
        sp.randval = 1;
        sp.num_splits = 3;
        sp.sq = {40};
        sp.sk = {300};
        sp.h = 4;
        sp.hk = 1;
        add(sp);
        sp.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT, sp.sink = 1, sp.dt = CKT_BF16;
        add(sp);
    }
    // bias and ALiBi: masks (ALiBi's diagonal follows the mask's alignment),
    // GQA, both layouts, broadcasts, group mode with padding, ragged
    // lengths, decode's GQA-packed rows, scale
    {
        const Mask bias_masks[] = {{CKT_MASK_NONE, 0, 0},
                                   {CKT_MASK_CAUSAL_TOP_LEFT, 0, 0},
                                   {CKT_MASK_CAUSAL_BOTTOM_RIGHT, 0, 0},
                                   {CKT_MASK_WINDOW_TOP_LEFT, 16, 5},
                                   {CKT_MASK_WINDOW_BOTTOM_RIGHT, 20, -1}};
        const int bias_lens[][2] = {{55, 100}, {130, 67}};
        int k = 0;
        for (int kind : {1, 2})
            for (const Mask &m : bias_masks)
                for (const auto &l : bias_lens) {
                    Case c;
                    c.bias = kind;
                    c.bcast = k % 3 == 2 ? (kind == 1 ? 1 + k % 2 : 1) : 0;
                    c.dt = k % 2 ? CKT_BF16 : CKT_F16;
                    c.mask = m.m;
                    c.wl = m.l;
                    c.wr = m.r;
                    c.sq = {l[0]};
                    c.sk = {l[1]};
                    c.h = k % 3 == 0 ? 6 : 4;
                    c.hk = k % 3 == 0 ? 2 : k % 3 == 1 ? 1 : 4;
                    c.d = c.dv = k % 4 == 3 ? 128 : 64;
                    c.iperm = k % 2;
                    c.scale = k % 5 == 4 ? 0.2f : 0.0f;
                    k++;
                    add(c);
                }
        for (int kind : {1, 2}) {
            Case g; // group mode: zero-length entries, no keys, padding, GQA
            g.bias = kind;
            g.group = 1;
            g.batch = 4;
            g.sq = {0, 17, 9, 64};
            g.sk = {5, 0, 40, 80};
            g.qpad = 5;
            g.kpad = 11;
            g.h = 4;
            g.hk = 2;
            g.bcast = kind == 2;
            g.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
            add(g);
            g.mask = CKT_MASK_NONE, g.dt = CKT_BF16, g.sq = {3, 1, 12, 2};
            add(g);
            for (int d : {64, 128, 256}) { // decode: GQA-packed rows of g heads, each with its own bias row
                Case dcd;
                dcd.bias = kind;
                dcd.bcast = d == 128;
                dcd.d = dcd.dv = d;
                dcd.dt = d == 128 ? CKT_BF16 : CKT_F16;
                dcd.sq = {d == 64 ? 1 : 5};
                dcd.sk = {200};
                dcd.h = 8;
                dcd.hk = 2;
                dcd.mask = d == 256 ? CKT_MASK_NONE : CKT_MASK_CAUSAL_BOTTOM_RIGHT;
                add(dcd);
            }
            Case big; // d256 (one warp on CDNA), sink too
            big.bias = kind;
            big.sink = 1;
            big.d = big.dv = 256;
            big.sq = {33};
            big.sk = {71};
            big.mask = CKT_MASK_CAUSAL_TOP_LEFT;
            add(big);
        }
    }
    // the options together: bias or ALiBi with dropout (and sinks), the random
    // bytes against the reference's; group mode with padding
    for (int kind : {1, 2}) {
        Case c;
        c.bias = kind;
        c.p_drop = 0.3f;
        c.randval = 1;
        c.sink = kind == 2;
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        c.sq = {70};
        c.sk = {129};
        c.h = 4;
        c.hk = 2;
        c.dt = kind == 1 ? CKT_BF16 : CKT_F16;
        add(c);
        c.group = 1, c.batch = 3, c.sq = {0, 17, 40}, c.sk = {5, 33, 80}, c.qpad = 3, c.kpad = 7;
        c.mask = CKT_MASK_NONE;
        add(c);
    }
    return cs;
}

INSTANTIATE_TEST_SUITE_P(Matrix, Fwd, ::testing::ValuesIn(matrix()),
                         [](const ::testing::TestParamInfo<Case> &i) { return i.param.name; });

// >>head dim 512 and 576/512 (lib/fmha/fwd_d512.c, fwd_d576_dv512.c): V's
// columns split over two warps a row group (ckt/fmha/fwd_body.h). A few
// shapes per case: the emulator is slow at these head dims. On CDNA d512
// runs with K and V through one buffer; 576/512 declines (64 KiB of LDS):
// the dispatcher finds no instance, the launch says CKT_ERROR_UNSUPPORTED.
#if defined(CKT_CPU_PROFILE_CDNA) || defined(CKT_BACKEND_AMD)
#define CKT_TEST_FWD_CDNA 1
#else
#define CKT_TEST_FWD_CDNA 0
#endif

// Whether this target runs head dims d / dv (CDNA: up to 512 / 512).
bool fwd_runs_here(int d, int dv)
{
    return !CKT_TEST_FWD_CDNA || (d <= 512 && dv <= 512);
}

std::vector<Case> matrix_d512()
{
    std::vector<Case> cs;
    auto add = [&cs](Case c) {
        c.name = case_name(c);
        cs.push_back(c);
    };
    struct Shape {
        ckt_dtype dt;
        int d, dv, group, batch, h, hk;
        std::vector<int> sq, sk;
        ckt_fmha_mask m;
        int wl, wr, lse;
    };
    const Shape shapes[] = {
        {CKT_F16, 512, 512, 0, 2, 4, 2, {55}, {100}, CKT_MASK_CAUSAL_BOTTOM_RIGHT, 0, 0, 1},
        {CKT_BF16, 512, 512, 0, 1, 2, 1, {1}, {257}, CKT_MASK_NONE, 0, 0, 1},
        {CKT_BF16, 512, 512, 0, 1, 2, 2, {257}, {3}, CKT_MASK_CAUSAL_TOP_LEFT, 0, 0, 0},
        {CKT_F16, 512, 512, 0, 1, 3, 1, {100}, {55}, CKT_MASK_WINDOW_TOP_LEFT, 16, 5, 1},
        {CKT_BF16, 512, 512, 1, 4, 2, 1, {1, 3, 55, 0}, {257, 100, 3, 5}, CKT_MASK_WINDOW_BOTTOM_RIGHT, 40, 0, 1},
        {CKT_F16, 320, 320, 0, 1, 2, 2, {33}, {71}, CKT_MASK_CAUSAL_BOTTOM_RIGHT, 0, 0, 1}, // padded, on d512
        {CKT_F16, 576, 512, 0, 2, 8, 1, {1}, {257}, CKT_MASK_NONE, 0, 0, 1},                 // MLA decode
        {CKT_BF16, 576, 512, 1, 2, 2, 2, {3, 55}, {100, 257}, CKT_MASK_CAUSAL_BOTTOM_RIGHT, 0, 0, 1},
        {CKT_BF16, 576, 512, 0, 1, 2, 1, {100}, {55}, CKT_MASK_WINDOW_BOTTOM_RIGHT, 3, -1, 0},
        {CKT_F16, 520, 264, 0, 1, 2, 2, {40}, {57}, CKT_MASK_NONE, 0, 0, 1}, // padded, on d576/512
    };
    int n = 0;
    for (const Shape &sh : shapes) {
        Case c;
        c.dt = sh.dt;
        c.d = sh.d;
        c.dv = sh.dv;
        c.group = sh.group;
        c.batch = sh.batch;
        c.h = sh.h;
        c.hk = sh.hk;
        c.sq = sh.sq;
        c.sk = sh.sk;
        c.mask = sh.m;
        c.wl = sh.wl;
        c.wr = sh.wr;
        c.lse = sh.lse;
        c.iperm = n % 2;
        c.operm = n % 3 != 1;
        if (c.group)
            c.qpad = 5, c.kpad = 11;
        n++;
        add(c);
    }
    // the options' kernels: bias with dropout and sinks, ALiBi
    Case c;
    c.d = c.dv = 512;
    c.dt = CKT_BF16;
    c.bias = 1;
    c.p_drop = 0.3f;
    c.randval = 1;
    c.sink = 1;
    c.sq = {40};
    c.sk = {70};
    c.h = 2;
    c.hk = 1;
    c.batch = 1;
    c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    add(c);
    c.bias = 2;
    c.p_drop = 0.0f;
    c.randval = 0;
    c.sink = 0;
    c.d = 576;
    add(c);
    return cs;
}

class Fwd512 : public ::testing::TestWithParam<Case> {};

TEST_P(Fwd512, MatchesReference)
{
    const Case &c = GetParam();
    if (fwd_runs_here(c.d, c.dv)) {
        expect_matches_reference(c);
        return;
    }
    ckt_fmha_fwd_args a;
    memset(&a, 0, sizeof a);
    a.dtype = c.dt;
    a.hdim_q = c.d;
    a.hdim_v = c.dv;
    a.seqlen_q = c.sq[0];
    a.seqlen_k = c.sk[0];
    EXPECT_EQ(ckt_fmha_fwd_select(&a), nullptr) << "CDNA runs no head dim above 512";
}

INSTANTIATE_TEST_SUITE_P(HeadDim512, Fwd512, ::testing::ValuesIn(matrix_d512()),
                         [](const ::testing::TestParamInfo<Case> &i) { return i.param.name; });

// The d512 and d576/512 instances take their head dims; on CDNA d576/512
// is compiled, declines every call (fits() 0) and says why at launch.
TEST(Dispatch, HeadDim512Instances)
{
    int found = 0;
    for (int i = 0; ckt_fmha_fwd_instance_at(i); i++) {
        const ckt_fmha_fwd_instance *in = ckt_fmha_fwd_instance_at(i);
        if (in->hdim_v != 512)
            continue;
        found++;
        SCOPED_TRACE(in->name);
        ckt_fmha_fwd_args a;
        memset(&a, 0, sizeof a);
        a.dtype = in->dtype;
        a.hdim_q = in->hdim;
        a.hdim_v = in->hdim_v;
        a.batch = a.nhead_q = a.nhead_k = 1;
        a.seqlen_q = a.seqlen_k = 1;
        EXPECT_EQ(in->block_m, 32);
        const int runs = fwd_runs_here(in->hdim, in->hdim_v);
        EXPECT_EQ(in->fits(&a), runs);
        EXPECT_EQ(ckt_fmha_fwd_select(&a), runs ? in : nullptr);
        if (!runs) {
            EXPECT_EQ(in->launch(&a, nullptr), CKT_ERROR_UNSUPPORTED);
            EXPECT_NE(std::string(ckt_last_error()).find("do not fit the CDNA LDS"), std::string::npos)
                << ckt_last_error();
        }
    }
    EXPECT_EQ(found, 4); // fp16 and bf16 of d512 and d576/512
}

// >>dispatcher

ckt_fmha_fwd_args dims_args(ckt_dtype dt, int d, int dv)
{
    ckt_fmha_fwd_args a;
    memset(&a, 0, sizeof a);
    a.dtype = dt;
    a.hdim_q = d;
    a.hdim_v = dv;
    a.seqlen_q = CKT_FMHA_DECODE_MAX_Q + 1; // past decode's lengths
    return a;
}

TEST(Dispatch, PicksTheCheapestCoveringInstance)
{
    struct Pick {
        ckt_dtype dt;
        int d, dv;
        const char *name;
    };
    const Pick picks[] = {
        {CKT_F16, 8, 8, "ckt_fmha_fwd_f16_d32"},
        {CKT_F16, 32, 32, "ckt_fmha_fwd_f16_d32"},
        {CKT_BF16, 40, 40, "ckt_fmha_fwd_bf16_d64"},
        {CKT_F16, 64, 32, "ckt_fmha_fwd_f16_d64"},
        {CKT_BF16, 80, 96, "ckt_fmha_fwd_bf16_d96"},
        {CKT_F16, 128, 128, "ckt_fmha_fwd_f16_d128"},
        {CKT_BF16, 192, 128, "ckt_fmha_fwd_bf16_d192_dv128"},
        {CKT_BF16, 160, 64, "ckt_fmha_fwd_bf16_d192_dv128"},
        {CKT_F16, 136, 136, "ckt_fmha_fwd_f16_d192"},
        {CKT_F16, 128, 136, "ckt_fmha_fwd_f16_d192"},
        {CKT_BF16, 256, 8, "ckt_fmha_fwd_bf16_d256"},
        {CKT_F16, 256, 256, "ckt_fmha_fwd_f16_d256"},
    };
    for (const Pick &p : picks) {
        ckt_fmha_fwd_args a = dims_args(p.dt, p.d, p.dv);
        const ckt_fmha_fwd_instance *in = ckt_fmha_fwd_select(&a);
        ASSERT_NE(in, nullptr) << ckt_last_error();
        EXPECT_STREQ(in->name, p.name) << p.d << "/" << p.dv;
        EXPECT_EQ(in->dtype, p.dt);
        EXPECT_TRUE(in->fits(&a));
    }
    // decode: short query lengths run the GQA-packed instances where they cover the head dims
    const Pick decode_picks[] = {
        {CKT_BF16, 128, 128, "ckt_fmha_fwd_decode_bf16_d128"},
        {CKT_F16, 64, 64, "ckt_fmha_fwd_decode_f16_d64"},
        {CKT_F16, 40, 40, "ckt_fmha_fwd_decode_f16_d64"},
        {CKT_BF16, 256, 256, "ckt_fmha_fwd_decode_bf16_d256"},
        {CKT_BF16, 96, 96, "ckt_fmha_fwd_bf16_d96"},           // no decode instance: the regular one
        {CKT_BF16, 192, 128, "ckt_fmha_fwd_bf16_d192_dv128"},
    };
    for (const Pick &p : decode_picks) {
        ckt_fmha_fwd_args a = dims_args(p.dt, p.d, p.dv);
        a.seqlen_q = CKT_FMHA_DECODE_MAX_Q;
        const ckt_fmha_fwd_instance *in = ckt_fmha_fwd_select(&a);
        ASSERT_NE(in, nullptr) << ckt_last_error();
        EXPECT_STREQ(in->name, p.name) << p.d << "/" << p.dv << " decode";
    }
    int count = 0, packed = 0;
    while (ckt_fmha_fwd_instance_at(count))
        packed += ckt_fmha_fwd_instance_at(count++)->packs_gqa;
    EXPECT_EQ(count, 42); // 38 fp16 / bf16 (d512 and 576/512 among them), 4 fp8
    EXPECT_EQ(packed, 6);
    // plain calls run the instances without the KV cache, cache calls those with it
    ckt_fmha_fwd_args a = dims_args(CKT_BF16, 128, 128);
    EXPECT_STREQ(ckt_fmha_fwd_select(&a)->name, "ckt_fmha_fwd_bf16_d128");
    EXPECT_EQ(ckt_fmha_fwd_select(&a)->kv_cache, 0);
    a.page_size = 16;
    EXPECT_STREQ(ckt_fmha_fwd_select(&a)->name, "ckt_fmha_fwd_kv_bf16_d128");
    a.page_size = 0;
    a.num_splits = 3;
    EXPECT_STREQ(ckt_fmha_fwd_select(&a)->name, "ckt_fmha_fwd_kv_bf16_d128");
    a.num_splits = 0;
    a.workspace = &count; // automatic split count with a workspace
    EXPECT_EQ(ckt_fmha_fwd_select(&a)->kv_cache, 1);
    const ckt_fmha_fwd_instance *plain = nullptr;
    for (int i = 0; ckt_fmha_fwd_instance_at(i); i++)
        if (!ckt_fmha_fwd_instance_at(i)->kv_cache && !ckt_fmha_fwd_instance_at(i)->packs_gqa)
            plain = ckt_fmha_fwd_instance_at(i);
    ASSERT_NE(plain, nullptr);
    a = dims_args(plain->dtype, plain->hdim, plain->hdim_v);
    a.cache_batch_idx = &count;
    EXPECT_FALSE(plain->fits(&a)) << plain->name << " takes a cache call";
    EXPECT_EQ(ckt_fmha_fwd_instance_at(-1), nullptr);
}

TEST(Dispatch, NoInstanceSaysWhy)
{
    ckt_fmha_fwd_args a = dims_args(CKT_BF16, 584, 512);
    EXPECT_EQ(ckt_fmha_fwd(&a, nullptr), CKT_ERROR_NO_INSTANCE);
    EXPECT_NE(std::string(ckt_fmha_last_error())
                  .find("no instance for bf16 hdim_q=584 hdim_v=512: head dims go up to 576 (q/k) and 512 (v)"),
              std::string::npos)
        << ckt_fmha_last_error();
    EXPECT_NE(std::string(ckt_fmha_last_error()).find("32/32 64/64 96/96 128/128 192/128 192/192 256/256"),
              std::string::npos);
    a = dims_args(CKT_F16, 64, 60);
    EXPECT_EQ(ckt_fmha_fwd(&a, nullptr), CKT_ERROR_NO_INSTANCE);
    EXPECT_NE(std::string(ckt_last_error()).find("hdim_v is not a multiple of 8"), std::string::npos);
    EXPECT_EQ(ckt_fmha_fwd_select(&a), nullptr);
}

TEST(Dispatch, OtherErrors)
{
    EXPECT_EQ(ckt_fmha_fwd(nullptr, nullptr), CKT_ERROR_NULL_POINTER);
    ckt_fmha_fwd_args a = dims_args(CKT_F32, 64, 64);
    EXPECT_EQ(ckt_fmha_fwd(&a, nullptr), CKT_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(ckt_last_error()).find("dtype: fp32"), std::string::npos);
    a = dims_args(CKT_F16, 0, 64);
    EXPECT_EQ(ckt_fmha_fwd(&a, nullptr), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_STREQ(ckt_last_error(), "hdim_q: 0 (must be > 0)");
    // the instance's validation: q NULL on a non-empty problem
    a = dims_args(CKT_F16, 64, 64);
    a.batch = a.nhead_q = a.nhead_k = a.seqlen_q = a.seqlen_k = 1;
    EXPECT_EQ(ckt_fmha_fwd(&a, nullptr), CKT_ERROR_NULL_POINTER);
    EXPECT_STREQ(ckt_last_error(), "q: NULL");
    // an empty problem is a no-op
    a.batch = 0;
    EXPECT_EQ(ckt_fmha_fwd(&a, nullptr), CKT_SUCCESS);
    EXPECT_STREQ(ckt_fmha_status_string(CKT_ERROR_NO_INSTANCE), "no compiled kernel instance fits the arguments");
}

// Dropout's keep fraction is ~ 1 - p (the drop probability is the threshold
// / 256), from the kernel's stored bytes over ~100k elements; O without
// dropout differs from O with it; a different offset gives a different mask;
// the same seed and offset the same bytes and O, bitwise.
TEST(Dropout, KeepFractionAndReproducibility)
{
    for (float p : {0.1f, 0.5f, 0.8f}) {
        Case c;
        c.p_drop = p;
        c.randval = 1;
        c.batch = 2;
        c.h = 4;
        c.hk = 2;
        c.sq = {100};
        c.sk = {131};
        c.name = "stat";
        FwdRun r1, r2;
        run_case(c, r1);
        run_case(c, r2);
        if (HasFatalFailure())
            return;
        int64_t n = 0, dropped = 0;
        const uint32_t thr = ckt_fmha_dropout_threshold(p);
        for (uint8_t x : r1.randval) {
            n++;
            dropped += x < thr;
        }
        const double frac = (double)dropped / (double)n, want = thr / 256.0;
        // 6 standard deviations of a binomial fraction
        EXPECT_NEAR(frac, want, 6.0 * std::sqrt(want * (1.0 - want) / (double)n)) << "p " << p << ", " << n << " elements";
        EXPECT_NEAR(want, p, 1.0 / 512.0 + 1e-7);
        EXPECT_EQ(r1.randval, r2.randval);
        EXPECT_EQ(r1.o, r2.o);
        EXPECT_EQ(r1.lse, r2.lse);
        c.drop_salt = 1; // another seed: another mask
        FwdRun r3;
        run_case(c, r3);
        if (HasFatalFailure())
            return;
        EXPECT_NE(r1.randval, r3.randval);
        EXPECT_EQ(r1.lse, r3.lse); // LSE does not see the dropout
    }
    // the host function over a million elements of one head
    ckt_fmha_dropout d = ckt_fmha_dropout_make(0.3f, 42, 7);
    int64_t kept = 0, n = 0;
    for (int i = 0; i < 1000; i++)
        for (int j = 0; j < 1000; j++, n++)
            kept += ckt_fmha_dropout_byte(&d, 3, i, j) >= d.threshold;
    EXPECT_NEAR((double)kept / n, 1.0 - d.threshold / 256.0, 6.0 * std::sqrt(0.21 / n));
    EXPECT_FLOAT_EQ(d.scale, 1.0f / 0.7f);
}

// Philox4x32-10 against the known answers of Random123's kat_vectors.
TEST(Dropout, PhiloxKnownAnswers)
{
    uint32_t o[4];
    ckt_philox4x32_10(o, 0, 0, 0, 0, 0, 0);
    EXPECT_EQ(o[0], 0x6627e8d5u);
    EXPECT_EQ(o[1], 0xe169c58du);
    EXPECT_EQ(o[2], 0xbc57ac4cu);
    EXPECT_EQ(o[3], 0x9b00dbd8u);
    ckt_philox4x32_10(o, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u);
    EXPECT_EQ(o[0], 0x408f276du);
    EXPECT_EQ(o[1], 0x41c83b0eu);
    EXPECT_EQ(o[2], 0xa20bc7c6u);
    EXPECT_EQ(o[3], 0x6d5451fdu);
    ckt_philox4x32_10(o, 0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u);
    EXPECT_EQ(o[0], 0xd16cfe09u);
    EXPECT_EQ(o[1], 0x94fdccebu);
    EXPECT_EQ(o[2], 0x5001e420u);
    EXPECT_EQ(o[3], 0x24126ea1u);
}

TEST(Dispatch, ArgsLayoutIsExported)
{
    EXPECT_EQ(ckt_fmha_fwd_args_offset("sizeof"), sizeof(ckt_fmha_fwd_args));
    EXPECT_EQ(ckt_fmha_fwd_args_offset("window_right"), offsetof(ckt_fmha_fwd_args, window_right));
    EXPECT_EQ(ckt_fmha_fwd_args_offset("q_stride_b"), offsetof(ckt_fmha_fwd_args, q_stride_b));
    EXPECT_EQ(ckt_fmha_fwd_args_offset("sink"), offsetof(ckt_fmha_fwd_args, sink));
    EXPECT_EQ(ckt_fmha_bwd_args_offset("sink"), offsetof(ckt_fmha_bwd_args, sink));
    EXPECT_EQ(ckt_fmha_bwd_args_offset("dsink"), offsetof(ckt_fmha_bwd_args, dsink));
    EXPECT_EQ(ckt_fmha_fwd_args_offset("p_drop"), offsetof(ckt_fmha_fwd_args, p_drop));
    EXPECT_EQ(ckt_fmha_fwd_args_offset("drop_seed_offset"), offsetof(ckt_fmha_fwd_args, drop_seed_offset));
    EXPECT_EQ(ckt_fmha_fwd_args_offset("randval_stride_s"), offsetof(ckt_fmha_fwd_args, randval_stride_s));
    EXPECT_EQ(ckt_fmha_bwd_args_offset("p_drop"), offsetof(ckt_fmha_bwd_args, p_drop));
    EXPECT_EQ(ckt_fmha_bwd_args_offset("drop_offset"), offsetof(ckt_fmha_bwd_args, drop_offset));
    EXPECT_EQ(ckt_fmha_bwd_args_offset("drop_seed_offset"), offsetof(ckt_fmha_bwd_args, drop_seed_offset));
    EXPECT_EQ(ckt_fmha_fwd_args_offset("bias"), offsetof(ckt_fmha_fwd_args, bias));
    EXPECT_EQ(ckt_fmha_fwd_args_offset("bias_stride_s"), offsetof(ckt_fmha_fwd_args, bias_stride_s));
    EXPECT_EQ(ckt_fmha_fwd_args_offset("alibi_slopes"), offsetof(ckt_fmha_fwd_args, alibi_slopes));
    EXPECT_EQ(ckt_fmha_fwd_args_offset("alibi_stride_b"), offsetof(ckt_fmha_fwd_args, alibi_stride_b));
    EXPECT_EQ(ckt_fmha_bwd_args_offset("bias_stride_h"), offsetof(ckt_fmha_bwd_args, bias_stride_h));
    EXPECT_EQ(ckt_fmha_bwd_args_offset("alibi_stride_b"), offsetof(ckt_fmha_bwd_args, alibi_stride_b));
    EXPECT_EQ(ckt_fmha_bwd_args_offset("dbias"), offsetof(ckt_fmha_bwd_args, dbias));
    EXPECT_EQ(ckt_fmha_bwd_args_offset("dbias_stride_s"), offsetof(ckt_fmha_bwd_args, dbias_stride_s));
    EXPECT_EQ(ckt_fmha_bwd_args_offset("sizeof"), sizeof(ckt_fmha_bwd_args));
    EXPECT_EQ(ckt_fmha_fwd_args_offset("nope"), (size_t)-1);
}

} // namespace
