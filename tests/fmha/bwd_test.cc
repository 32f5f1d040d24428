// The FMHA backward through the dispatcher (ckt_fmha_bwd, libckt_fmha) against
// the CPU reference (ckt/fmha/ref_bwd.h): modes x masks x head dims x dtypes x
// GQA x soft-cap x layouts x ragged lengths (1, 3, 55, 100, 257, zero-length
// group entries, padding), deterministic and not. The forward (ckt_fmha_fwd)
// makes O and LSE; the reference takes those same O and LSE. Also: nothing
// outside the logical rows of dQ / dK / dV is written, deterministic mode
// gives the same bytes under other emulator schedules and thread counts, the
// plan + asynchronous prepare path matches the one-call path, and bad
// workspaces are refused.
#include "ckt/fmha.h"
#include "ckt/fmha/ref_bwd.h"

#include "tests/fmha/fmha_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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
    int perm = 1; // [b][h][s][d] (1) or [b][s][h][d] (0)
    float scale = 0.0f, softcap = 0.0f;
    int det = 0;
    int row_pad = 0; // extra elements per row (multiple of 8)
    int sink = 0;    // attention sinks (random logits in [-2, 4]) and their gradient dsink
    float p_drop = 0.0f; // dropout: the forward's and the backward's (ckt/fmha/dropout.h)
    int drop_ptr = 0;    // seed / offset through drop_seed_offset (device)
    int bias = 0;    // 1: elementwise bias in [-2, 2] and its gradient dbias; 2: ALiBi, slopes in [0, 0.25]
    int bcast = 0;   // bias: 1 broadcast over the batch, 2 over heads (dbias stays full); ALiBi: 1 slopes [b][h]
    int dbcast = 0;  // dbias: 1 reduced over the batch, 2 over heads, 3 both (zero strides: the dbias_reduce stage)
    std::string name;
};

std::string case_name(const Case &c)
{
    static const char *masks[] = {"none", "tl", "br", "wtl", "wbr"};
    auto side = [](int x) { return x < 0 ? std::string("x") : std::to_string(x); };
    std::string n = std::string(c.dt == CKT_BF16 ? "bf16" : "fp16") + "_d" + std::to_string(c.d) + "_dv" +
                    std::to_string(c.dv) + (c.group ? "_group" : "_batch") + "_b" + std::to_string(c.batch) + "_h" +
                    std::to_string(c.h) + "_" + std::to_string(c.hk) + "_sq" + fmha_test_list(c.sq) + "_sk" + fmha_test_list(c.sk) +
                    "_" + masks[c.mask];
    if (c.mask >= CKT_MASK_WINDOW_TOP_LEFT)
        n += side(c.wl) + "_" + side(c.wr);
    if (c.qpad >= 0 || c.kpad >= 0)
        n += "_pad" + side(c.qpad) + "_" + side(c.kpad);
    n += c.perm ? "" : "_bshd";
    n += c.row_pad ? "_rowpad" : "";
    n += c.scale != 0.0f ? "_scaled" : "";
    n += c.softcap != 0.0f ? "_softcap" : "";
    n += c.det ? "_det" : "";
    n += c.sink ? "_sink" : "";
    if (c.p_drop > 0.0f)
        n += "_drop" + std::to_string((int)(c.p_drop * 100)) + (c.drop_ptr ? "_ptr" : "");
    n += c.bias == 1 ? "_bias" : c.bias == 2 ? "_alibi" : "";
    n += c.bcast ? "_bc" + std::to_string(c.bcast) : "";
    n += c.dbcast ? "_dbc" + std::to_string(c.dbcast) : "";
    return n;
}

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

const uint16_t kSentinel = 0x7b7b;

struct BwdRun {
    ckt_fmha_bwd_args h = CKT_ZERO_INIT; // host view
    ckt_fmha_bwd_args d = CKT_ZERO_INIT; // device arguments
    std::vector<int32_t> start_q, start_k, len_q, len_k;
    std::vector<uint16_t> q, k, v, o, dout, dq, dk, dv;
    uint64_t seed_offset[2] = {0, 0};
    std::vector<float> lse, sink, dsink, slopes;
    std::vector<uint16_t> bias, dbias;
    FmhaDeviceBuffers bufs;

    void *to_device(const void *src, size_t bytes) { return bufs.dev(src, bytes); }
};

// Builds the tensors, runs the forward for O and LSE, and sets up the device
// arguments of the backward (dq / dk / dv filled with the sentinel; no
// workspace yet).
void setup(const Case &c, BwdRun &r)
{
    ckt_fmha_bwd_args &a = r.h;
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
    a.deterministic = c.det;
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
    const int p = c.row_pad;
    strides(&a.q_stride_b, &a.q_stride_h, &a.q_stride_s, c.perm, c.h, rows_q, c.d + p);
    strides(&a.k_stride_b, &a.k_stride_h, &a.k_stride_s, c.perm, c.hk, rows_k, c.d + p);
    strides(&a.v_stride_b, &a.v_stride_h, &a.v_stride_s, c.perm, c.hk, rows_k, c.dv + p);
    strides(&a.o_stride_b, &a.o_stride_h, &a.o_stride_s, c.perm, c.h, rows_q, c.dv + p);
    strides(&a.do_stride_b, &a.do_stride_h, &a.do_stride_s, !c.perm, c.h, rows_q, c.dv); // the other layout
    strides(&a.dq_stride_b, &a.dq_stride_h, &a.dq_stride_s, c.perm, c.h, rows_q, c.d + p);
    strides(&a.dk_stride_b, &a.dk_stride_h, &a.dk_stride_s, !c.perm, c.hk, rows_k, c.d);
    strides(&a.dv_stride_b, &a.dv_stride_h, &a.dv_stride_s, c.perm, c.hk, rows_k, c.dv + p);
    a.lse_stride_h = rows_q + 1; // a gap between heads
    a.lse_stride_b = c.group ? 0 : c.h * a.lse_stride_h;
    if (c.group)
        a.q_stride_b = a.k_stride_b = a.v_stride_b = a.o_stride_b = a.do_stride_b = a.dq_stride_b = a.dk_stride_b =
            a.dv_stride_b = 0;

    r.q.assign(ckt_fmha_bwd_elems(&a, CKT_FMHA_BWD_TENSOR_Q), 0);
    r.k.assign(ckt_fmha_bwd_elems(&a, CKT_FMHA_BWD_TENSOR_K), 0);
    r.v.assign(ckt_fmha_bwd_elems(&a, CKT_FMHA_BWD_TENSOR_V), 0);
    r.o.assign(ckt_fmha_bwd_elems(&a, CKT_FMHA_BWD_TENSOR_O), 0);
    r.dout.assign(ckt_fmha_bwd_elems(&a, CKT_FMHA_BWD_TENSOR_DO), 0);
    r.dq.assign(ckt_fmha_bwd_elems(&a, CKT_FMHA_BWD_TENSOR_DQ), kSentinel);
    r.dk.assign(ckt_fmha_bwd_elems(&a, CKT_FMHA_BWD_TENSOR_DK), kSentinel);
    r.dv.assign(ckt_fmha_bwd_elems(&a, CKT_FMHA_BWD_TENSOR_DV), kSentinel);
    r.lse.assign(ckt_fmha_bwd_elems(&a, CKT_FMHA_BWD_TENSOR_LSE), 0.0f);
    const uint64_t seed = std::hash<std::string>()(c.name) & 0xffff;
    ASSERT_EQ(ckt_fill(r.q.data(), c.dt, r.q.size(), ckt_init_uniform(-1, 1), seed), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(r.k.data(), c.dt, r.k.size(), ckt_init_uniform(-1, 1), seed + 1), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(r.v.data(), c.dt, r.v.size(), ckt_init_uniform(-1, 1), seed + 2), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(r.dout.data(), c.dt, r.dout.size(), ckt_init_uniform(-1, 1), seed + 3), CKT_SUCCESS);
    if (c.sink) {
        r.sink.assign(c.h, 0.0f);
        r.dsink.assign(c.h, 1234.5f);
        ASSERT_EQ(ckt_fill(r.sink.data(), CKT_F32, r.sink.size(), ckt_init_uniform(-2, 4), seed + 4), CKT_SUCCESS);
        a.sink = r.sink.data();
    }
    if (c.bias == 1) { // bias [batch][h][seqlen_q][seqlen_k + 3] (a zero stride broadcasts), dbias full with +5
        a.bias_stride_s = a.seqlen_k + 3;
        a.bias_stride_h = c.bcast == 2 ? 0 : (int64_t)a.seqlen_q * a.bias_stride_s;
        a.bias_stride_b = c.bcast == 1 ? 0 : (int64_t)(c.bcast == 2 ? 1 : c.h) * a.seqlen_q * a.bias_stride_s;
        r.bias.assign((size_t)(c.bcast == 1 ? 1 : c.batch) * (c.bcast == 2 ? 1 : c.h) * a.seqlen_q * a.bias_stride_s + 1, 0);
        ASSERT_EQ(ckt_fill(r.bias.data(), c.dt, r.bias.size(), ckt_init_uniform(-2, 2), seed + 5), CKT_SUCCESS);
        a.bias = r.bias.data();
        a.dbias_stride_s = a.seqlen_k + 5; // a zero batch / head stride: dbias reduced to that shape
        a.dbias_stride_h = c.dbcast & 2 ? 0 : (int64_t)a.seqlen_q * a.dbias_stride_s;
        a.dbias_stride_b = c.dbcast & 1 ? 0 : (int64_t)(c.dbcast & 2 ? 1 : c.h) * a.seqlen_q * a.dbias_stride_s;
        r.dbias.assign((size_t)(c.dbcast & 1 ? 1 : c.batch) * (c.dbcast & 2 ? 1 : c.h) * a.seqlen_q * a.dbias_stride_s + 1,
                       kSentinel);
    } else if (c.bias == 2) {
        r.slopes.assign((size_t)(c.bcast ? c.batch : 1) * c.h, 0.0f);
        ASSERT_EQ(ckt_fill(r.slopes.data(), CKT_F32, r.slopes.size(), ckt_init_uniform(0, 0.25), seed + 6), CKT_SUCCESS);
        a.alibi_slopes = r.slopes.data();
        a.alibi_stride_b = c.bcast ? c.h : 0;
    }

    if (c.p_drop > 0.0f) {
        a.p_drop = c.p_drop;
        a.drop_seed = seed * 0x9E3779B97F4A7C15ull + 3;
        a.drop_offset = (seed << 35) + 11;
        if (c.drop_ptr) { // the pointer wins over the fields
            r.seed_offset[0] = a.drop_seed;
            r.seed_offset[1] = a.drop_offset;
            a.drop_seed = 1;
            a.drop_offset = 2;
            a.drop_seed_offset = r.seed_offset;
        }
    }

    ckt_fmha_bwd_args &d = r.d;
    d = a;
    if (c.drop_ptr)
        d.drop_seed_offset = (const uint64_t *)r.to_device(r.seed_offset, sizeof r.seed_offset);
    d.q = r.to_device(r.q.data(), r.q.size() * 2);
    d.k = r.to_device(r.k.data(), r.k.size() * 2);
    d.v = r.to_device(r.v.data(), r.v.size() * 2);
    d.o = r.to_device(r.o.data(), r.o.size() * 2);
    d.dout = r.to_device(r.dout.data(), r.dout.size() * 2);
    d.lse = (const float *)r.to_device(r.lse.data(), r.lse.size() * 4);
    d.dq = r.to_device(r.dq.data(), r.dq.size() * 2);
    d.dk = r.to_device(r.dk.data(), r.dk.size() * 2);
    d.dv = r.to_device(r.dv.data(), r.dv.size() * 2);
    if (c.sink) {
        d.sink = (const float *)r.to_device(r.sink.data(), r.sink.size() * 4);
        d.dsink = (float *)r.to_device(r.dsink.data(), r.dsink.size() * 4);
    }
    if (c.bias == 1) {
        d.bias = r.to_device(r.bias.data(), r.bias.size() * 2);
        d.dbias = r.to_device(r.dbias.data(), r.dbias.size() * 2);
    }
    if (c.bias == 2)
        d.alibi_slopes = (const float *)r.to_device(r.slopes.data(), r.slopes.size() * 4);
    if (c.group) {
        d.seqstart_q = (const int32_t *)r.to_device(r.start_q.data(), r.start_q.size() * 4);
        d.seqstart_k = (const int32_t *)r.to_device(r.start_k.data(), r.start_k.size() * 4);
        d.seqlen_q_ptr = a.seqlen_q_ptr ? (const int32_t *)r.to_device(r.len_q.data(), r.len_q.size() * 4) : nullptr;
        d.seqlen_k_ptr = a.seqlen_k_ptr ? (const int32_t *)r.to_device(r.len_k.data(), r.len_k.size() * 4) : nullptr;
    }

    // the forward: O and LSE
    ckt_fmha_fwd_args f = CKT_ZERO_INIT;
    f.q = d.q;
    f.k = d.k;
    f.v = d.v;
    f.o = (void *)d.o;
    f.lse = (float *)d.lse;
    f.dtype = c.dt;
    f.batch = a.batch;
    f.nhead_q = a.nhead_q;
    f.nhead_k = a.nhead_k;
    f.seqlen_q = a.seqlen_q;
    f.seqlen_k = a.seqlen_k;
    f.hdim_q = a.hdim_q;
    f.hdim_v = a.hdim_v;
    f.q_stride_b = a.q_stride_b, f.q_stride_h = a.q_stride_h, f.q_stride_s = a.q_stride_s;
    f.k_stride_b = a.k_stride_b, f.k_stride_h = a.k_stride_h, f.k_stride_s = a.k_stride_s;
    f.v_stride_b = a.v_stride_b, f.v_stride_h = a.v_stride_h, f.v_stride_s = a.v_stride_s;
    f.o_stride_b = a.o_stride_b, f.o_stride_h = a.o_stride_h, f.o_stride_s = a.o_stride_s;
    f.lse_stride_b = a.lse_stride_b, f.lse_stride_h = a.lse_stride_h;
    f.group_mode = a.group_mode;
    f.seqstart_q = d.seqstart_q;
    f.seqstart_k = d.seqstart_k;
    f.seqlen_q_ptr = d.seqlen_q_ptr;
    f.seqlen_k_ptr = d.seqlen_k_ptr;
    f.scale = a.scale;
    f.softcap = a.softcap;
    f.mask = a.mask;
    f.window_left = a.window_left;
    f.window_right = a.window_right;
    f.sink = d.sink;
    f.p_drop = d.p_drop; // the forward drops with the same mask
    f.drop_seed = d.drop_seed;
    f.drop_offset = d.drop_offset;
    f.drop_seed_offset = d.drop_seed_offset;
    f.bias = d.bias;
    f.bias_stride_b = a.bias_stride_b, f.bias_stride_h = a.bias_stride_h, f.bias_stride_s = a.bias_stride_s;
    f.alibi_slopes = d.alibi_slopes;
    f.alibi_stride_b = a.alibi_stride_b;
    ASSERT_EQ(ckt_fmha_fwd(&f, nullptr), CKT_SUCCESS) << ckt_last_error();
    ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(r.o.data(), d.o, r.o.size() * 2, CKT_D2H), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(r.lse.data(), d.lse, r.lse.size() * 4, CKT_D2H), CKT_SUCCESS);
    a.q = r.q.data();
    a.k = r.k.data();
    a.v = r.v.data();
    a.o = r.o.data();
    a.dout = r.dout.data();
    a.lse = r.lse.data();
}

// The one-call backward: workspace of ckt_fmha_bwd_workspace_bytes, then the
// outputs back to the host.
ckt_status run_bwd(BwdRun &r)
{
    const size_t ws = ckt_fmha_bwd_workspace_bytes(&r.d);
    if (ws == 0)
        return CKT_ERROR_INVALID_ARGUMENT;
    r.d.workspace = r.to_device(nullptr, ws);
    r.d.workspace_bytes = ws;
    // poisoned (0xFF bytes: fp32 NaNs): the backward must not read a dQ slot
    // element that this run did not zero or store first
    EXPECT_EQ(ckt_rt_memset(r.d.workspace, 0xFF, ws), CKT_SUCCESS);
    ckt_status s = ckt_fmha_bwd(&r.d, nullptr);
    if (s != CKT_SUCCESS)
        return s;
    EXPECT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS);
    EXPECT_EQ(ckt_rt_memcpy(r.dq.data(), r.d.dq, r.dq.size() * 2, CKT_D2H), CKT_SUCCESS);
    EXPECT_EQ(ckt_rt_memcpy(r.dk.data(), r.d.dk, r.dk.size() * 2, CKT_D2H), CKT_SUCCESS);
    EXPECT_EQ(ckt_rt_memcpy(r.dv.data(), r.d.dv, r.dv.size() * 2, CKT_D2H), CKT_SUCCESS);
    if (r.d.dsink) {
        EXPECT_EQ(ckt_rt_memcpy(r.dsink.data(), r.d.dsink, r.dsink.size() * 4, CKT_D2H), CKT_SUCCESS);
    }
    if (r.d.dbias) {
        EXPECT_EQ(ckt_rt_memcpy(r.dbias.data(), r.d.dbias, r.dbias.size() * 2, CKT_D2H), CKT_SUCCESS);
    }
    return CKT_SUCCESS;
}

// Elements of a tensor that belong to logical rows.
std::vector<char> logical_mask(const ckt_fmha_bwd_args &a, size_t n, int heads, int q_side, int64_t sb, int64_t sh,
                               int64_t ss, int width)
{
    std::vector<char> m(n, 0);
    for (int b = 0; b < a.batch; b++) {
        const ckt_fmha_seq e = ckt_fmha_seq_resolve(a.group_mode, a.seqstart_q, a.seqstart_k, a.seqlen_q_ptr,
                                                    a.seqlen_k_ptr, a.seqlen_q, a.seqlen_k, b);
        const int64_t rows = q_side ? e.sq : e.sk, start = q_side ? e.q_start : e.k_start;
        for (int h = 0; h < heads; h++)
            for (int64_t i = 0; i < rows; i++) {
                const int64_t off = ckt_fmha_row_offset(a.group_mode, b, h, start + i, sb, sh, ss);
                for (int c = 0; c < width; c++)
                    m[(size_t)(off + c)] = 1;
            }
    }
    return m;
}

void expect_untouched(const std::vector<uint16_t> &t, const std::vector<char> &logical, const char *name)
{
    for (size_t i = 0; i < t.size(); i++)
        if (!logical[i]) {
            ASSERT_EQ(t[i], kSentinel) << name << " element " << i << " outside the logical rows was written";
        }
}

class Bwd : public ::testing::TestWithParam<Case> {};

TEST_P(Bwd, MatchesReference)
{
    const Case &c = GetParam();
    BwdRun r;
    setup(c, r);
    if (HasFatalFailure())
        return;
    ASSERT_EQ(run_bwd(r), CKT_SUCCESS) << ckt_last_error();
    const ckt_fmha_bwd_args &a = r.h;
    std::vector<float> dq_ref(r.dq.size(), 0.0f), dk_ref(r.dk.size(), 0.0f), dv_ref(r.dv.size(), 0.0f);
    ASSERT_EQ(ckt_ref_fmha_bwd(&a, dq_ref.data(), dk_ref.data(), dv_ref.data(), nullptr), CKT_SUCCESS)
        << ckt_last_error();
    double rtol, atol;
    ckt_fmha_bwd_tolerance(c.dt, c.d, c.dv, &rtol, &atol);
    ckt_compare_result rq, rk, rv;
    ckt_status s = ckt_ref_fmha_bwd_compare(&rq, &rk, &rv, &a, r.dq.data(), r.dk.data(), r.dv.data(), dq_ref.data(),
                                            dk_ref.data(), dv_ref.data(), atol, rtol);
    if (s != CKT_SUCCESS) {
        ckt_compare_print(stderr, "dQ", &rq);
        ckt_compare_print(stderr, "dK", &rk);
        ckt_compare_print(stderr, "dV", &rv);
    }
    EXPECT_EQ(s, CKT_SUCCESS) << ckt_last_error();
    expect_untouched(r.dq, logical_mask(a, r.dq.size(), a.nhead_q, 1, a.dq_stride_b, a.dq_stride_h, a.dq_stride_s, a.hdim_q),
                     "dQ");
    expect_untouched(r.dk, logical_mask(a, r.dk.size(), a.nhead_k, 0, a.dk_stride_b, a.dk_stride_h, a.dk_stride_s, a.hdim_q),
                     "dK");
    expect_untouched(r.dv, logical_mask(a, r.dv.size(), a.nhead_k, 0, a.dv_stride_b, a.dv_stride_h, a.dv_stride_s, a.hdim_v),
                     "dV");
    if (c.bias == 1) { // dbias = dS, every logical (b, h, i, j), summed where it broadcasts; padding untouched
        std::vector<float> dbias_ref(r.dbias.size(), 0.0f), dq2(dq_ref.size()), dk2(dk_ref.size()), dv2(dv_ref.size());
        ASSERT_EQ(ckt_ref_fmha_bwd_ex(&a, dq2.data(), dk2.data(), dv2.data(), nullptr, dbias_ref.data()), CKT_SUCCESS)
            << ckt_last_error();
        ckt_compare_result rb;
        memset(&rb, 0, sizeof rb);
        // a reduced element sums n dS values, each rounded to the dtype first: n roundings
        const int terms = (c.dbcast & 1 ? c.batch : 1) * (c.dbcast & 2 ? c.h : 1);
        rb.atol = atol * terms;
        rb.rtol = rtol;
        std::vector<char> logical(r.dbias.size(), 0);
        double max_ref = 0.0;
        for (int b = 0; b < (c.dbcast & 1 ? 1 : a.batch); b++) {
            ckt_fmha_seq e = ckt_fmha_seq_resolve(a.group_mode, a.seqstart_q, a.seqstart_k, a.seqlen_q_ptr,
                                                  a.seqlen_k_ptr, a.seqlen_q, a.seqlen_k, b);
            if (c.dbcast & 1) { // reduced over the entries: every row and key up to the maxima (0 where none reaches)
                e.sq = a.seqlen_q;
                e.sk = a.seqlen_k;
            }
            for (int h = 0; h < (c.dbcast & 2 ? 1 : a.nhead_q); h++)
                for (int i = 0; i < e.sq; i++)
                    for (int j = 0; j < e.sk; j++) {
                        const size_t at = (size_t)(b * a.dbias_stride_b + h * a.dbias_stride_h + i * a.dbias_stride_s + j);
                        logical[at] = 1;
                        uint32_t x = 0; // room for any dtype (the compiler sees the fp32 path)
                        ckt_store_f32(&x, c.dt, 0, dbias_ref[at]);
                        const float want = ckt_load_f32(&x, c.dt, 0);
                        max_ref = std::max(max_ref, (double)std::fabs(want));
                        ckt_compare_add(&rb, at, ckt_load_f32(r.dbias.data(), c.dt, at), want);
                    }
        }
        if (rb.mismatches)
            ckt_compare_print(stderr, "dbias", &rb);
        EXPECT_EQ(rb.mismatches, 0u) << "dbias";
        if (rb.n > 0) {
            EXPECT_GT(max_ref, 1e-3) << "dbias: the check needs non-trivial gradients";
        }
        expect_untouched(r.dbias, logical, "dbias");
    }
    if (c.sink) { // dsink: fp32 sums of the same terms as the reference's double ones
        std::vector<float> dsink_ref(r.dsink.size(), 0.0f);
        ASSERT_EQ(ckt_ref_fmha_bwd_dsink(&a, dsink_ref.data()), CKT_SUCCESS) << ckt_last_error();
        for (size_t h = 0; h < r.dsink.size(); h++)
            EXPECT_NEAR(r.dsink[h], dsink_ref[h], 1e-3 * (1.0 + std::fabs(dsink_ref[h]))) << "dsink[" << h << "]";
    }
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
    // every instance and padded head dims (CDNA: up to 192)
    std::vector<Dims> dims = {{32, 32}, {64, 64}, {96, 96}, {128, 128}, {192, 128}, {192, 192}, {40, 40}, {128, 64}};
#if !defined(CKT_CPU_PROFILE_CDNA) && !defined(CKT_BACKEND_AMD)
    dims.push_back({256, 256});
    dims.push_back({248, 256});
    dims.push_back({512, 512}); // head dim 512 (BN = BM = 32)
    dims.push_back({320, 512}); // padded into the d512 instance
#endif
    int n = 0;
    for (ckt_dtype dt : {CKT_F16, CKT_BF16})
        for (const Dims &dd : dims) {
            Case c;
            c.dt = dt;
            c.d = dd.d;
            c.dv = dd.dv;
            c.h = 4;
            c.hk = 2;
            c.sq = {70};
            c.sk = {83};
            c.batch = 1;
            c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
            c.det = n++ % 2;
            add(c);
        }
#if !defined(CKT_CPU_PROFILE_CDNA) && !defined(CKT_BACKEND_AMD)
    for (int k = 0; k < 3; k++) { // d512: group mode with ragged and empty entries, a window, bias with dropout
        Case c;
        c.d = c.dv = 512;
        c.dt = k % 2 ? CKT_BF16 : CKT_F16;
        c.group = k != 2;
        c.batch = 3;
        c.sq = k == 2 ? std::vector<int>{37} : std::vector<int>{1, 0, 57};
        c.sk = k == 2 ? std::vector<int>{45} : std::vector<int>{3, 33, 100};
        c.h = 4;
        c.hk = k == 1 ? 1 : 2;
        c.mask = k == 0 ? CKT_MASK_WINDOW_BOTTOM_RIGHT : CKT_MASK_CAUSAL_TOP_LEFT;
        c.wl = k == 0 ? 20 : 0;
        c.wr = k == 0 ? 4 : 0;
        c.det = k != 1;
        c.bias = k == 2;
        c.p_drop = k == 2 ? 0.2f : 0.0f;
        add(c);
    }
#endif
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
                          {CKT_MASK_WINDOW_BOTTOM_RIGHT, 3, -1}};
    const int lens[][2] = {{1, 1}, {3, 257}, {55, 100}, {100, 55}, {257, 3}, {130, 130}};
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
            c.perm = n % 5 != 2;
            c.det = n % 3 == 1;
            c.softcap = n % 7 == 4 ? 2.5f : 0.0f;
            c.scale = n % 11 == 6 ? 0.3f : 0.0f;
            c.row_pad = n % 6 == 5 ? 8 : 0;
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
            c.perm = n % 2;
            c.d = n % 5 == 0 ? 128 : 64;
            c.dv = c.d;
            c.det = n % 2;
            c.softcap = n % 4 == 3 ? 5.0f : 0.0f;
            n++;
            add(c);
        }
    // attention sinks: dsink, and dQ / dK / dV through the LSE that holds
    // them; masks (rows that see no key: only the sink), GQA, soft-cap,
    // group mode, both modes
    const Mask sink_masks[] = {{CKT_MASK_NONE, 0, 0},
                               {CKT_MASK_CAUSAL_BOTTOM_RIGHT, 0, 0},
                               {CKT_MASK_WINDOW_TOP_LEFT, 16, 5},
                               {CKT_MASK_WINDOW_BOTTOM_RIGHT, 3, -1}};
    const int sink_lens[][2] = {{55, 100}, {257, 3}};
    for (const Mask &m : sink_masks)
        for (const auto &l : sink_lens) {
            Case c;
            c.sink = 1;
            c.dt = n % 2 ? CKT_BF16 : CKT_F16;
            c.mask = m.m;
            c.wl = m.l;
            c.wr = m.r;
            c.sq = {l[0]};
            c.sk = {l[1]};
            c.h = n % 3 == 0 ? 4 : 2;
            c.hk = n % 3 == 0 ? 1 : 2;
            c.det = n % 2;
            c.softcap = n % 3 == 1 ? 2.5f : 0.0f;
            c.d = c.dv = n % 4 == 2 ? 128 : 64;
            n++;
            add(c);
        }
    for (int det : {0, 1}) {
        Case c;
        c.sink = 1;
        c.group = 1;
        c.batch = 4;
        c.sq = {0, 17, 40, 64};
        c.sk = {5, 0, 33, 80};
        c.qpad = 5;
        c.kpad = 11;
        c.h = 4;
        c.hk = 2;
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        c.det = det;
        c.dt = det ? CKT_BF16 : CKT_F16;
        add(c);
    }
    {
        Case c; // queries none, keys some: dsink = 0
        c.sink = 1;
        c.sq = {0};
        c.sk = {40};
        add(c);
    }
    // dropout: the backward regenerates the forward's mask (dV from P o Z /
    // (1 - p), dS from Z / (1 - p) o dP); masks x ragged lengths x GQA x
    // soft-cap x both modes; group mode; by pointer; head dims; with sinks
    const Mask drop_masks[] = {{CKT_MASK_NONE, 0, 0},
                               {CKT_MASK_CAUSAL_TOP_LEFT, 0, 0},
                               {CKT_MASK_CAUSAL_BOTTOM_RIGHT, 0, 0},
                               {CKT_MASK_WINDOW_TOP_LEFT, 16, 5},
                               {CKT_MASK_WINDOW_BOTTOM_RIGHT, 3, -1}};
    const int drop_lens[][2] = {{55, 100}, {257, 3}, {1, 70}};
    const float ps[] = {0.1f, 0.3f, 0.6f};
    int k = 0;
    for (const Mask &m : drop_masks)
        for (const auto &l : drop_lens) {
            Case c;
            c.p_drop = ps[k % 3];
            // bf16 only without the soft-cap: with it P is flat, and 257 rows of
            // P / (1 - p) rounded to bf16 summed into each of 3 keys' dV exceed
            // CK's 1e-2 (the fp16 runs of the same cases pass)
            c.dt = k % 2 && k % 4 != 1 ? CKT_BF16 : CKT_F16;
            c.mask = m.m;
            c.wl = m.l;
            c.wr = m.r;
            c.sq = {l[0]};
            c.sk = {l[1]};
            c.h = k % 3 == 0 ? 4 : 2;
            c.hk = k % 3 == 0 ? 1 : 2;
            c.det = k % 2;
            c.softcap = k % 4 == 1 ? 2.5f : 0.0f;
            c.d = c.dv = k % 5 == 2 ? 128 : 64;
            c.drop_ptr = k % 4 == 3;
            c.perm = k % 2;
            k++;
            add(c);
        }
    for (int det : {0, 1}) {
        Case c; // group mode: zero-length entries, no keys, padding, GQA
        c.p_drop = 0.25f;
        c.group = 1;
        c.batch = 4;
        c.sq = {0, 17, 40, 64};
        c.sk = {5, 0, 33, 80};
        c.qpad = 5;
        c.kpad = 11;
        c.h = 4;
        c.hk = 2;
        c.mask = det ? CKT_MASK_CAUSAL_BOTTOM_RIGHT : CKT_MASK_NONE;
        c.det = det;
        c.drop_ptr = det;
        c.dt = det ? CKT_BF16 : CKT_F16;
        add(c);
    }
    for (const Dims &dd : dims) { // every instance (CDNA: up to 192)
        if (dd.d == 64 || dd.d == 248 || (dd.d == 128 && dd.dv == 64))
            continue;
        Case c;
        c.p_drop = 0.2f;
        c.d = dd.d;
        c.dv = dd.dv;
        c.h = 2;
        c.hk = 1;
        c.sq = {70};
        c.sk = {90};
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        c.dt = dd.d % 64 ? CKT_F16 : CKT_BF16;
        add(c);
    }
    {
        Case c; // with sinks (dsink: the LSE and D, unchanged by dropout)
        c.p_drop = 0.3f;
        c.sink = 1;
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        add(c);
    }
    // bias (with dbias) and ALiBi: masks, GQA, broadcast bias, per-batch
    // slopes, ragged lengths, head dims, both modes, group mode with padding
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
                    c.h = k % 3 == 0 ? 4 : 2;
                    c.hk = k % 3 == 0 ? 1 : 2;
                    c.det = (k / 2) % 2;
                    c.scale = k % 5 == 4 ? 0.2f : 0.0f;
                    c.d = c.dv = k % 4 == 3 ? 128 : 64;
                    c.perm = k % 2;
                    k++;
                    add(c);
                }
        for (int kind : {1, 2})
            for (int det : {0, 1}) {
                Case c;
                c.bias = kind;
                c.bcast = kind == 2 && det;
                c.group = 1;
                c.batch = 4;
                c.sq = {0, 17, 40, 64};
                c.sk = {5, 0, 33, 80};
                c.qpad = 5;
                c.kpad = 11;
                c.h = 4;
                c.hk = 2;
                c.mask = det ? CKT_MASK_CAUSAL_BOTTOM_RIGHT : CKT_MASK_NONE;
                c.det = det;
                c.dt = det ? CKT_BF16 : CKT_F16;
                add(c);
            }
        // a broadcast dbias, reduced over the entries, the heads or both (bias broadcast alike,
        // or full); batch and group mode (entries of other lengths, one empty), both modes
        for (int dbc : {1, 2, 3})
            for (int group : {0, 1}) {
                Case c;
                c.bias = 1;
                c.dbcast = dbc;
                c.bcast = dbc == 3 ? 0 : dbc;
                c.group = group;
                c.batch = 3;
                c.sq = group ? std::vector<int>{40, 0, 23} : std::vector<int>{37};
                c.sk = group ? std::vector<int>{19, 50, 64} : std::vector<int>{70};
                c.h = 4;
                c.hk = dbc == 2 ? 1 : 2;
                c.mask = group ? CKT_MASK_CAUSAL_BOTTOM_RIGHT : dbc == 2 ? CKT_MASK_WINDOW_TOP_LEFT : CKT_MASK_NONE;
                c.wl = c.mask == CKT_MASK_WINDOW_TOP_LEFT ? 9 : 0;
                c.wr = c.mask == CKT_MASK_WINDOW_TOP_LEFT ? 3 : 0;
                c.det = (dbc + group) % 2;
                c.dt = dbc == 1 ? CKT_BF16 : CKT_F16;
                add(c);
            }
        for (int d : {32, 96, 192}) { // other head dims, sink too
            Case c;
            c.bias = 1;
            c.sink = d == 96;
            c.d = c.dv = d;
            c.sq = {33};
            c.sk = {47};
            c.mask = CKT_MASK_CAUSAL_TOP_LEFT;
            c.det = d == 192;
            add(c);
        }
    }
    // the options together: bias (with dbias) or ALiBi with dropout, both modes
    for (int kind : {1, 2})
        for (int det : {0, 1}) {
            Case c;
            c.bias = kind;
            c.p_drop = 0.25f;
            c.det = det;
            c.sink = kind == 2 && det;
            c.mask = det ? CKT_MASK_CAUSAL_BOTTOM_RIGHT : CKT_MASK_NONE;
            c.sq = {55};
            c.sk = {100};
            c.h = 4;
            c.hk = 2;
            c.dt = CKT_F16;
            add(c);
        }
    return cs;
}

INSTANTIATE_TEST_SUITE_P(Matrix, Bwd, ::testing::ValuesIn(matrix()),
                         [](const ::testing::TestParamInfo<Case> &i) { return i.param.name; });

// Deterministic mode: the same bytes whatever the block order or thread count
// (the emulator's schedules stand in for a GPU's block scheduler and stream
// timing).
TEST(BwdDeterministic, SameBytesUnderOtherSchedules)
{
    Case c;
    c.group = 1;
    c.batch = 3;
    c.sq = {130, 0, 77};
    c.sk = {200, 50, 129};
    c.h = 4;
    c.hk = 1;
    c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    c.det = 1;
    c.sink = 1;
    c.name = case_name(c);
    std::vector<uint16_t> first[3];
    std::vector<float> first_dsink;
#if defined(CKT_BACKEND_CPU)
    const FmhaEmuSchedule scheds[] = {{0, 0, "1"}, {1, 0, "3"}, {2, 7, "2"}, {2, 99, "4"}};
#else
    const FmhaEmuSchedule scheds[] = {{0, 0, ""}, {0, 0, ""}, {0, 0, ""}};
#endif
    int k = 0;
    for (const FmhaEmuSchedule &s : scheds) {
        fmha_emu_schedule_set(s);
        BwdRun r;
        setup(c, r);
        ASSERT_FALSE(HasFatalFailure());
        ASSERT_EQ(run_bwd(r), CKT_SUCCESS) << ckt_last_error();
        const std::vector<uint16_t> *outs[3] = {&r.dq, &r.dk, &r.dv};
        for (int t = 0; t < 3; t++) {
            if (k == 0)
                first[t] = *outs[t];
            else
                EXPECT_TRUE(first[t] == *outs[t]) << "tensor " << "dq dk dv"[3 * t] << " differs under schedule " << k;
        }
        if (k == 0)
            first_dsink = r.dsink;
        else
            EXPECT_EQ(memcmp(first_dsink.data(), r.dsink.data(), r.dsink.size() * 4), 0)
                << "dsink differs under schedule " << k;
        k++;
    }
    fmha_emu_schedule_reset();
}

// Deterministic mode with dropout: still the same bytes under other schedules
// and thread counts (the mask is a pure function of the coordinates).
TEST(BwdDeterministic, DropoutSameBytesUnderOtherSchedules)
{
    Case c;
    c.group = 1;
    c.batch = 3;
    c.sq = {130, 0, 77};
    c.sk = {200, 50, 129};
    c.h = 4;
    c.hk = 2;
    c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    c.det = 1;
    c.p_drop = 0.35f;
    c.name = case_name(c);
    std::vector<uint16_t> first[3];
#if defined(CKT_BACKEND_CPU)
    const FmhaEmuSchedule scheds[] = {{0, 0, "1"}, {1, 0, "3"}, {2, 11, "2"}};
#else
    const FmhaEmuSchedule scheds[] = {{0, 0, ""}, {0, 0, ""}, {0, 0, ""}};
#endif
    int k = 0;
    for (const FmhaEmuSchedule &s : scheds) {
        fmha_emu_schedule_set(s);
        BwdRun r;
        setup(c, r);
        ASSERT_FALSE(HasFatalFailure());
        ASSERT_EQ(run_bwd(r), CKT_SUCCESS) << ckt_last_error();
        const std::vector<uint16_t> *outs[3] = {&r.dq, &r.dk, &r.dv};
        for (int t = 0; t < 3; t++) {
            if (k == 0)
                first[t] = *outs[t];
            else
                EXPECT_TRUE(first[t] == *outs[t]) << "tensor " << "dq dk dv"[3 * t] << " differs under schedule " << k;
        }
        k++;
    }
    fmha_emu_schedule_reset();
}

// Deterministic mode with a bias: dQ, dK, dV and dbias the same bytes under
// other schedules and thread counts (dbias = dS is written once per element,
// so it is also reproducible without deterministic mode: checked too).
TEST(BwdDeterministic, BiasSameBytesUnderOtherSchedules)
{
    for (int det : {1, 0, 2}) { // 2: deterministic, dbias reduced over entries and heads
        Case c;
        c.group = 1;
        c.batch = 3;
        c.sq = {130, 0, 77};
        c.sk = {200, 50, 129};
        c.h = 4;
        c.hk = 1;
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        c.det = det != 0;
        c.dbcast = det == 2 ? 3 : 0;
        c.bias = 1;
        c.bcast = 1;
        c.name = case_name(c);
        std::vector<uint16_t> first[4];
#if defined(CKT_BACKEND_CPU)
        const FmhaEmuSchedule scheds[] = {{0, 0, "1"}, {1, 0, "3"}, {2, 7, "2"}, {2, 99, "4"}};
#else
        const FmhaEmuSchedule scheds[] = {{0, 0, ""}, {0, 0, ""}};
#endif
        int k = 0;
        for (const FmhaEmuSchedule &s : scheds) {
            fmha_emu_schedule_set(s);
            BwdRun r;
            setup(c, r);
            ASSERT_FALSE(HasFatalFailure());
            ASSERT_EQ(run_bwd(r), CKT_SUCCESS) << ckt_last_error();
            const std::vector<uint16_t> *outs[4] = {&r.dq, &r.dk, &r.dv, &r.dbias};
            for (int t = 0; t < 4; t++) {
                if (!det && t < 3)
                    continue; // dQ's atomics may differ in order without deterministic mode
                if (k == 0)
                    first[t] = *outs[t];
                else
                    EXPECT_TRUE(first[t] == *outs[t]) << "tensor " << t << " (dq dk dv dbias) differs under schedule "
                                                      << k << " det " << det;
            }
            k++;
        }
    }
    fmha_emu_schedule_reset();
}

// dsink is a fixed-order reduction in either mode: the same bytes under
// other schedules without deterministic mode too.
TEST(BwdSink, DsinkSameBytesUnderOtherSchedules)
{
    Case c;
    c.batch = 2;
    c.sq = {300};
    c.sk = {64};
    c.h = 2;
    c.hk = 1;
    c.sink = 1;
    c.name = case_name(c);
    std::vector<float> first;
#if defined(CKT_BACKEND_CPU)
    const int scheds[][2] = {{0, 0}, {1, 0}, {2, 5}};
#else
    const int scheds[][2] = {{0, 0}, {0, 0}, {0, 0}};
#endif
    for (const auto &s : scheds) {
#if defined(CKT_BACKEND_CPU)
        ckt_emu_set_schedule(s[0], (uint64_t)s[1]);
#else
        (void)s;
#endif
        BwdRun r;
        setup(c, r);
        ASSERT_FALSE(HasFatalFailure());
        ASSERT_EQ(run_bwd(r), CKT_SUCCESS) << ckt_last_error();
        if (first.empty())
            first = r.dsink;
        else
            EXPECT_EQ(memcmp(first.data(), r.dsink.data(), r.dsink.size() * 4), 0) << "dsink differs";
    }
#if defined(CKT_BACKEND_CPU)
    ckt_emu_set_schedule(-1, 0);
#endif
}

// The lane schedule: a plan for 8 multiprocessors puts 2 heads of 8 key
// tiles on 4 lanes each (block c of a head takes key tiles c and 7 - c, rows
// of 4 with the second reversed, into dQ slot c; ckt/fmha/workspace.h). Against the reference, and the same bytes
// under other schedules and OS-thread counts (forward, reverse, shuffled;
// 1, 2, 3 threads). On a GPU: the same bytes run to run.
void lanes_case(Case &c, int mask)
{
    c.group = 0;
    c.batch = 1;
    c.sq = {200}; // short sweeps: under ASan the 3 masks x 3 schedules took 166 s at 700 rows (medium: 300 s)
    c.sk = {8 * 128 - 37};
    c.h = 4;
    c.hk = 2;
    c.mask = (ckt_fmha_mask)mask;
    c.wl = mask == CKT_MASK_WINDOW_TOP_LEFT ? 150 : -1;
    c.wr = mask == CKT_MASK_WINDOW_TOP_LEFT ? 20 : -1;
    c.det = 1;
    c.name = case_name(c);
}

TEST(BwdDeterministic, LaneScheduleMatchesTheReferenceInAFixedOrder)
{
#if defined(CKT_BACKEND_CPU)
    const FmhaEmuSchedule scheds[] = {{0, 0, "1"}, {1, 0, "2"}, {2, 11, "3"}};
#else
    const FmhaEmuSchedule scheds[] = {{0, 0, ""}, {0, 0, ""}, {0, 0, ""}};
#endif
    for (int mask : {(int)CKT_MASK_NONE, (int)CKT_MASK_CAUSAL_BOTTOM_RIGHT, (int)CKT_MASK_WINDOW_TOP_LEFT}) {
        Case c;
        lanes_case(c, mask);
        std::vector<uint16_t> first[3];
        int k = 0;
        for (const FmhaEmuSchedule &sc : scheds) {
            fmha_emu_schedule_set(sc);
            BwdRun r;
            setup(c, r);
            ASSERT_FALSE(HasFatalFailure());
            ckt_fmha_bwd_traits t = ckt_fmha_bwd_traits_of(&r.d);
            t.multiprocessors = 8;
            ckt_fmha_bwd_plan plan;
            ASSERT_EQ(ckt_fmha_bwd_plan_init(&plan, &t), CKT_SUCCESS) << ckt_last_error();
            const size_t ub = ckt_fmha_bwd_workspace_upper_bound(&plan);
            r.d.workspace = r.to_device(nullptr, ub);
            r.d.workspace_bytes = ub;
            ASSERT_EQ(ckt_rt_memset(r.d.workspace, 0xFF, ub), CKT_SUCCESS); // poisoned
            ASSERT_EQ(ckt_fmha_bwd_prepare(&plan, &r.d, nullptr), CKT_SUCCESS) << ckt_last_error();
            std::vector<int64_t> meta(plan.meta_bytes / 8);
            ASSERT_EQ(ckt_rt_memcpy(meta.data(), r.d.workspace, plan.meta_bytes, CKT_D2H), CKT_SUCCESS);
            const ckt_fmha_bwd_meta *m = (const ckt_fmha_bwd_meta *)meta.data();
            ASSERT_EQ(m->lanes, 4) << "the plan took no lane schedule of 4 lanes: the test would not run it";
            ASSERT_EQ(ckt_fmha_bwd_meta_nsplits(m)[0], 4);
            for (int rep = 0; rep < 2; rep++) // the slots are zeroed again each run
                ASSERT_EQ(ckt_fmha_bwd_run(&plan, &r.d, nullptr), CKT_SUCCESS) << ckt_last_error();
            ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS);
            ASSERT_EQ(ckt_rt_memcpy(r.dq.data(), r.d.dq, r.dq.size() * 2, CKT_D2H), CKT_SUCCESS);
            ASSERT_EQ(ckt_rt_memcpy(r.dk.data(), r.d.dk, r.dk.size() * 2, CKT_D2H), CKT_SUCCESS);
            ASSERT_EQ(ckt_rt_memcpy(r.dv.data(), r.d.dv, r.dv.size() * 2, CKT_D2H), CKT_SUCCESS);
            if (k == 0) {
                const ckt_fmha_bwd_args &a = r.h;
                std::vector<float> dq_ref(r.dq.size(), 0.0f), dk_ref(r.dk.size(), 0.0f), dv_ref(r.dv.size(), 0.0f);
                ASSERT_EQ(ckt_ref_fmha_bwd(&a, dq_ref.data(), dk_ref.data(), dv_ref.data(), nullptr), CKT_SUCCESS);
                double rtol, atol;
                ckt_fmha_bwd_tolerance(c.dt, c.d, c.dv, &rtol, &atol);
                ckt_compare_result rq, rk, rv;
                EXPECT_EQ(ckt_ref_fmha_bwd_compare(&rq, &rk, &rv, &a, r.dq.data(), r.dk.data(), r.dv.data(),
                                                   dq_ref.data(), dk_ref.data(), dv_ref.data(), atol, rtol),
                          CKT_SUCCESS)
                    << "mask " << mask << ": " << ckt_last_error();
            }
            const std::vector<uint16_t> *outs[3] = {&r.dq, &r.dk, &r.dv};
            for (int i = 0; i < 3; i++) {
                if (k == 0)
                    first[i] = *outs[i];
                else
                    EXPECT_TRUE(first[i] == *outs[i])
                        << "mask " << mask << ": tensor " << "dq dk dv"[3 * i] << " differs in run " << k;
            }
            k++;
        }
    }
    fmha_emu_schedule_reset();
}

// The plan + asynchronous prepare path gives the same bytes as the one-call
// path (deterministic), with a workspace sized by the upper bound of larger
// maxima than the call's.
TEST(BwdPlan, AsyncPrepareMatchesOneCall)
{
    Case c;
    c.group = 1;
    c.batch = 4;
    c.sq = {40, 0, 99, 5};
    c.sk = {64, 33, 0, 100};
    c.qpad = 3;
    c.kpad = 2;
    c.h = 4;
    c.hk = 2;
    c.mask = CKT_MASK_WINDOW_BOTTOM_RIGHT;
    c.wl = 20;
    c.wr = 4;
    c.det = 1;
    c.name = case_name(c);
    BwdRun one;
    setup(c, one);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(run_bwd(one), CKT_SUCCESS) << ckt_last_error();

    BwdRun r;
    setup(c, r);
    ASSERT_FALSE(HasFatalFailure());
    ckt_fmha_bwd_traits t = CKT_ZERO_INIT;
    t.batch = r.d.batch;
    t.nhead_q = r.d.nhead_q;
    t.nhead_k = r.d.nhead_k;
    t.max_seqlen_q = 128; // larger than the call's
    t.max_seqlen_k = 256;
    t.hdim_q = r.d.hdim_q;
    t.hdim_v = r.d.hdim_v;
    t.dtype = r.d.dtype;
    t.group_mode = 1;
    t.mask = r.d.mask;
    t.window_left = r.d.window_left;
    t.window_right = r.d.window_right;
    t.deterministic = 1;
    ckt_fmha_bwd_plan plan;
    ASSERT_EQ(ckt_fmha_bwd_plan_init(&plan, &t), CKT_SUCCESS) << ckt_last_error();
    const size_t ub = ckt_fmha_bwd_workspace_upper_bound(&plan);
    r.d.workspace = r.to_device(nullptr, ub);
    r.d.workspace_bytes = ub;
    ASSERT_EQ(ckt_rt_memset(r.d.workspace, 0xFF, ub), CKT_SUCCESS); // poisoned, as in run_bwd
    void *staging = nullptr;
    ASSERT_EQ(ckt_rt_malloc_host(&staging, plan.staging_bytes), CKT_SUCCESS);
    ckt_stream st = nullptr;
    ASSERT_EQ(ckt_rt_stream_create(&st), CKT_SUCCESS);
    for (int rep = 0; rep < 2; rep++) { // the staging buffer serves consecutive prepares on one stream
        ASSERT_EQ(ckt_fmha_bwd_prepare_async(&plan, &r.d, staging, plan.staging_bytes, st), CKT_SUCCESS)
            << ckt_last_error();
        ASSERT_EQ(ckt_fmha_bwd_run(&plan, &r.d, st), CKT_SUCCESS) << ckt_last_error();
    }
    ASSERT_EQ(ckt_rt_stream_synchronize(st), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_stream_destroy(st), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_free_host(staging), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(r.dq.data(), r.d.dq, r.dq.size() * 2, CKT_D2H), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(r.dk.data(), r.d.dk, r.dk.size() * 2, CKT_D2H), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(r.dv.data(), r.d.dv, r.dv.size() * 2, CKT_D2H), CKT_SUCCESS);
    EXPECT_TRUE(r.dq == one.dq);
    EXPECT_TRUE(r.dk == one.dk);
    EXPECT_TRUE(r.dv == one.dv);
}

TEST(BwdErrors, WorkspaceAndPlan)
{
    Case c;
    c.name = case_name(c);
    BwdRun r;
    setup(c, r);
    ASSERT_FALSE(HasFatalFailure());
    // no workspace
    EXPECT_EQ(ckt_fmha_bwd(&r.d, nullptr), CKT_ERROR_NULL_POINTER);
    EXPECT_NE(std::string(ckt_last_error()).find("workspace"), std::string::npos) << ckt_last_error();
    // too small a workspace
    r.d.workspace = r.to_device(nullptr, 256);
    r.d.workspace_bytes = 256;
    EXPECT_NE(ckt_fmha_bwd(&r.d, nullptr), CKT_SUCCESS);
    EXPECT_NE(std::string(ckt_last_error()).find("workspace_bytes"), std::string::npos) << ckt_last_error();
    // no LSE
    r.d.lse = nullptr;
    r.d.workspace_bytes = ckt_fmha_bwd_workspace_bytes(&r.d);
    EXPECT_EQ(ckt_fmha_bwd(&r.d, nullptr), CKT_ERROR_NULL_POINTER);
    EXPECT_NE(std::string(ckt_last_error()).find("lse"), std::string::npos) << ckt_last_error();
    // dsink without sink
    r.d.lse = r.h.lse ? (const float *)r.to_device(r.lse.data(), r.lse.size() * 4) : nullptr;
    r.d.dsink = (float *)r.to_device(nullptr, 4 * (size_t)r.d.nhead_q);
    EXPECT_EQ(ckt_fmha_bwd(&r.d, nullptr), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(ckt_last_error()).rfind("dsink:", 0), 0u) << ckt_last_error();
    r.d.dsink = nullptr;
    // dbias without bias; a broadcast dbias; bias with ALiBi; bias with a soft-cap
    r.d.dbias = r.to_device(nullptr, 2 * (size_t)r.d.batch * r.d.nhead_q * r.d.seqlen_q * r.d.seqlen_k);
    r.d.dbias_stride_s = r.d.seqlen_k;
    r.d.dbias_stride_h = (int64_t)r.d.seqlen_q * r.d.seqlen_k;
    r.d.dbias_stride_b = (int64_t)r.d.nhead_q * r.d.dbias_stride_h;
    EXPECT_EQ(ckt_fmha_bwd(&r.d, nullptr), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(ckt_last_error()).rfind("dbias:", 0), 0u) << ckt_last_error();
    r.d.bias = r.d.dbias;
    r.d.bias_stride_s = r.d.seqlen_k;
    r.d.bias_stride_h = 0; // broadcast over heads, and dbias reduced over them: the plan must know (dbias_reduce)
    if (r.d.nhead_q > 1) {
        ckt_fmha_bwd_plan plan;
        const ckt_fmha_bwd_traits t = ckt_fmha_bwd_traits_of(&r.d); // a full dbias: dbias_reduce 0
        EXPECT_EQ(t.dbias_reduce, 0);
        ASSERT_EQ(ckt_fmha_bwd_plan_init(&plan, &t), CKT_SUCCESS) << ckt_last_error();
        r.d.dbias_stride_h = 0;
        EXPECT_EQ(ckt_fmha_bwd_traits_of(&r.d).dbias_reduce, 1);
        EXPECT_EQ(ckt_fmha_bwd_run(&plan, &r.d, nullptr), CKT_ERROR_INVALID_ARGUMENT);
        EXPECT_EQ(std::string(ckt_last_error()).rfind("dbias:", 0), 0u) << ckt_last_error();
        r.d.dbias_stride_s = r.d.seqlen_k - 1; // rows that overlap: still an error, reduced or not
        EXPECT_EQ(ckt_fmha_bwd(&r.d, nullptr), CKT_ERROR_INVALID_ARGUMENT);
        EXPECT_EQ(std::string(ckt_last_error()).rfind("dbias_stride_s:", 0), 0u) << ckt_last_error();
    }
    r.d.dbias = nullptr;
    const float *slopes = (const float *)r.to_device(nullptr, 4 * (size_t)r.d.nhead_q);
    r.d.alibi_slopes = slopes;
    EXPECT_EQ(ckt_fmha_bwd(&r.d, nullptr), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(ckt_last_error()).rfind("alibi_slopes:", 0), 0u) << ckt_last_error();
    r.d.alibi_slopes = nullptr;
    r.d.softcap = 3.0f;
    EXPECT_EQ(ckt_fmha_bwd(&r.d, nullptr), CKT_ERROR_UNSUPPORTED);
    EXPECT_EQ(std::string(ckt_last_error()).rfind("bias:", 0), 0u) << ckt_last_error();
    r.d.softcap = 0.0f;
    r.d.bias = nullptr;
    // a plan for other traits
    ckt_fmha_bwd_traits t = CKT_ZERO_INIT;
    t.batch = 1;
    t.nhead_q = t.nhead_k = 1;
    t.max_seqlen_q = t.max_seqlen_k = 16;
    t.hdim_q = t.hdim_v = 64;
    t.dtype = CKT_F16;
    ckt_fmha_bwd_plan plan;
    ASSERT_EQ(ckt_fmha_bwd_plan_init(&plan, &t), CKT_SUCCESS) << ckt_last_error();
    EXPECT_NE(ckt_fmha_bwd_run(&plan, &r.d, nullptr), CKT_SUCCESS);
    // head dims past 512
    t.hdim_q = 520;
    EXPECT_EQ(ckt_fmha_bwd_plan_init(&plan, &t), CKT_ERROR_NO_INSTANCE);
}

} // namespace
