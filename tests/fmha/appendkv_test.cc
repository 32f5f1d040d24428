// The append-KV kernel (ckt_fmha_appendkv, libckt_fmha) against its CPU
// reference (ckt/fmha/ref_appendkv.h), then attention over the updated cache
// (ckt_fmha_fwd, the two-call recipe of docs/fmha_appendkv.md) against
// ckt_ref_fmha_fwd over the reference's cache. Matrix: rotary dims (0, 16,
// 64, full d) x interleaved / half-split x ragged lengths (entries' current
// lengths differ, s_knew and seqlen_q not multiples of anything) x GQA x
// batch / group mode queries x scalar / per-entry lengths x cache_batch_idx
// x cache layouts; plus bad input (statuses naming the argument) and the
// rotary module against the textbook formulas.
//
// Checks: rotated elements within one rounding of the reference (fp16 1e-3,
// bf16 1e-2 relative), everything else bit for bit; no cache element outside
// the appended rows and no query element outside the logical rows changes;
// the forward over the cache within CK's tolerances.
#include "ckt/fmha.h"

#include "tests/fmha/fmha_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

// A user's own instance of the body (define-then-include), launched below
// without the host's validation to exercise the kernel's own bounds.
#define CKT_FMHA_NAME test_appendkv_bf16
#define CKT_FMHA_DTYPE CKT_BF16
#define CKT_FMHA_APPENDKV_THREADS 64
#include CKT_FMHA_APPENDKV_BODY

namespace {

struct Case {
    ckt_dtype dt = CKT_F16;
    int d = 64, dv = 64;
    int batch = 3, h = 4, hk = 2;
    int s_knew = 5;
    std::vector<int> sq = {5};   // queries per entry (group mode: per entry, the last repeats)
    std::vector<int> len = {7};  // current lengths (the last repeats); a single value: scalar seqlen_k
    int len_ptr = 0;             // 1: lengths through seqlen_k_ptr even when uniform
    int cap = 40;                // cache_seqlen
    int rd = 64, inter = 0;
    int group = 0;
    int cbi = 0;                 // 0: none; 1: increasing rows with gaps; 2: reversed (no forward check)
    int bshd = 1;                // cache (and q / new tokens) as [b][s][h][d]; 0: [b][h][s][d]
    ckt_fmha_mask mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    std::string name;
};

std::string case_name(const Case &c)
{
    return std::string(c.dt == CKT_BF16 ? "bf16" : "fp16") + "_d" + std::to_string(c.d) + "_dv" + std::to_string(c.dv) +
           "_b" + std::to_string(c.batch) + "_h" + std::to_string(c.h) + "_" + std::to_string(c.hk) + "_knew" +
           std::to_string(c.s_knew) + "_sq" + fmha_test_list(c.sq) + "_len" + fmha_test_list(c.len) + (c.len_ptr ? "_lenptr" : "") +
           "_cap" + std::to_string(c.cap) + "_rd" + std::to_string(c.rd) + (c.inter ? "_inter" : "_half") +
           (c.group ? "_group" : "_batch") + (c.cbi == 1 ? "_cbi" : c.cbi == 2 ? "_cbirev" : "") +
           (c.bshd ? "_bshd" : "_bhsd") + (c.mask == CKT_MASK_NONE ? "_nomask" : "");
}

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

int at(const std::vector<int> &v, int b) { return v[std::min<size_t>(b, v.size() - 1)]; }

// strides of [b][s][h][d] (bshd) or [b][h][s][d] with rows per entry
void strides(int64_t *sb, int64_t *sh, int64_t *ss, int bshd, int nhead, int64_t rows, int64_t d)
{
    ckt_fmha_strides(sb, sh, ss, !bshd, nhead, (int)rows, (int)d);
}

typedef FmhaDeviceBuffers Buffers;

// Largest offset + 1 of a [b][h][s][d] tensor through strides.
size_t span(int64_t nb, int64_t nh, int64_t rows, int64_t d, int64_t sb, int64_t sh, int64_t ss)
{
    return (size_t)((nb - 1) * sb + (nh - 1) * sh + (rows - 1) * ss + d);
}

// cos / sin tables [max_pos][rd / 2] of theta = pos * 10000^(-2u / rd)
void tables(std::vector<float> &cs, std::vector<float> &sn, int max_pos, int rd)
{
    const int half = rd / 2;
    cs.assign((size_t)std::max(1, max_pos * half), 0.0f);
    sn.assign(cs.size(), 0.0f);
    for (int p = 0; p < max_pos; p++)
        for (int u = 0; u < half; u++) {
            const double th = p * std::pow(10000.0, -2.0 * u / rd);
            cs[(size_t)p * half + u] = (float)std::cos(th);
            sn[(size_t)p * half + u] = (float)std::sin(th);
        }
}

float f32(uint16_t x, ckt_dtype dt)
{
    if (dt == CKT_BF16) {
        ckt_bf16 h;
        h.bits = x;
        return ckt_f32_from_bf16(h);
    }
    ckt_f16 h;
    h.bits = x;
    return ckt_f32_from_f16(h);
}

bool close16(uint16_t got, uint16_t want, ckt_dtype dt)
{
    if (got == want)
        return true;
    const double g = f32(got, dt), w = f32(want, dt);
    const double tol = dt == CKT_BF16 ? 1e-2 : 1e-3;
    return std::fabs(g - w) <= tol + tol * std::fabs(w);
}

class AppendKV : public ::testing::TestWithParam<Case> {};

TEST_P(AppendKV, MatchesReferenceThenAttends)
{
    const Case &c = GetParam();
    const ckt_dtype dt = c.dt;
    Buffers buf;
    ckt_fmha_appendkv_args a;
    memset(&a, 0, sizeof a);
    a.dtype = dt;
    a.batch = c.batch;
    a.nhead_q = c.h;
    a.nhead_k = c.hk;
    a.hdim_q = c.d;
    a.hdim_v = c.dv;
    a.seqlen_knew = c.s_knew;
    a.cache_seqlen = c.cap;
    a.rotary_dim = c.rd;
    a.rotary_interleaved = c.inter;
    a.group_mode = c.group;

    // lengths, queries, cache rows
    std::vector<int32_t> len(c.batch), sq(c.batch), start_q(1, 0), cbi(c.batch);
    int max_len = 0, max_sq = 0;
    for (int b = 0; b < c.batch; b++) {
        len[b] = at(c.len, b);
        sq[b] = c.group ? at(c.sq, b) : c.sq[0];
        start_q.push_back(start_q.back() + sq[b]);
        max_len = std::max(max_len, (int)len[b]);
        max_sq = std::max(max_sq, (int)sq[b]);
        cbi[b] = c.cbi == 1 ? 2 * b + 1 : c.cbi == 2 ? c.batch - 1 - b : b;
    }
    const int cache_batch = c.cbi == 1 ? 2 * c.batch + 1 : c.batch;
    a.cache_batch = c.cbi ? cache_batch : 0;
    const int scalar_len = c.len.size() == 1 && !c.len_ptr;
    a.seqlen_k = scalar_len ? len[0] : 0;
    a.seqlen_q = max_sq;
    a.rotary_max_pos = c.rd ? max_len + std::max(c.s_knew, max_sq) + 3 : 0;

    // layouts: q (batch: [b][..] with sq rows; group: packed rows), new tokens, the cache
    const int64_t rows_q = c.group ? start_q.back() : max_sq;
    strides(&a.q_stride_b, &a.q_stride_h, &a.q_stride_s, c.bshd, c.h, rows_q, c.d);
    if (c.group)
        a.q_stride_b = 0;
    strides(&a.knew_stride_b, &a.knew_stride_h, &a.knew_stride_s, c.bshd, c.hk, c.s_knew, c.d);
    strides(&a.vnew_stride_b, &a.vnew_stride_h, &a.vnew_stride_s, c.bshd, c.hk, c.s_knew, c.dv);
    strides(&a.k_stride_b, &a.k_stride_h, &a.k_stride_s, c.bshd, c.hk, c.cap, c.d);
    strides(&a.v_stride_b, &a.v_stride_h, &a.v_stride_s, c.bshd, c.hk, c.cap, c.dv);

    const size_t nq = span(c.group ? 1 : c.batch, c.h, rows_q, c.d, a.q_stride_b, a.q_stride_h, a.q_stride_s);
    const size_t nkn = c.s_knew ? span(c.batch, c.hk, c.s_knew, c.d, a.knew_stride_b, a.knew_stride_h, a.knew_stride_s) : 0;
    const size_t nvn = c.s_knew ? span(c.batch, c.hk, c.s_knew, c.dv, a.vnew_stride_b, a.vnew_stride_h, a.vnew_stride_s) : 0;
    const size_t nkc = span(cache_batch, c.hk, c.cap, c.d, a.k_stride_b, a.k_stride_h, a.k_stride_s);
    const size_t nvc = span(cache_batch, c.hk, c.cap, c.dv, a.v_stride_b, a.v_stride_h, a.v_stride_s);
    std::vector<uint16_t> q(nq), kn(nkn), vn(nvn), kc(nkc), vc(nvc);
    const uint64_t seed = std::hash<std::string>()(c.name) & 0xffff;
    ckt_fill(q.data(), dt, q.size(), ckt_init_uniform(-1, 1), seed);
    ckt_fill(kn.data(), dt, kn.size(), ckt_init_uniform(-1, 1), seed + 1);
    ckt_fill(vn.data(), dt, vn.size(), ckt_init_uniform(-1, 1), seed + 2);
    ckt_fill(kc.data(), dt, kc.size(), ckt_init_uniform(-1, 1), seed + 3); // old tokens and garbage past them
    ckt_fill(vc.data(), dt, vc.size(), ckt_init_uniform(-1, 1), seed + 4);
    std::vector<float> cs, sn;
    tables(cs, sn, a.rotary_max_pos, c.rd);

    // host view for the reference
    ckt_fmha_appendkv_args hv = a;
    std::vector<uint16_t> q_ref = q, kc_ref = kc, vc_ref = vc;
    hv.q = q_ref.data();
    hv.k_new = kn.empty() ? nullptr : kn.data();
    hv.v_new = vn.empty() ? nullptr : vn.data();
    hv.k_cache = kc_ref.data();
    hv.v_cache = vc_ref.data();
    hv.rotary_cos = c.rd ? cs.data() : nullptr;
    hv.rotary_sin = c.rd ? sn.data() : nullptr;
    hv.seqstart_q = c.group ? start_q.data() : nullptr;
    hv.seqlen_k_ptr = scalar_len ? nullptr : len.data();
    hv.cache_batch_idx = c.cbi ? cbi.data() : nullptr;
    ASSERT_EQ(ckt_ref_fmha_appendkv(&hv), CKT_SUCCESS) << ckt_last_error();

    // the kernel
    ckt_fmha_appendkv_args dv = a;
    dv.q = buf.dev(q.data(), q.size() * 2);
    dv.k_new = kn.empty() ? nullptr : buf.dev(kn.data(), kn.size() * 2);
    dv.v_new = vn.empty() ? nullptr : buf.dev(vn.data(), vn.size() * 2);
    dv.k_cache = buf.dev(kc.data(), kc.size() * 2);
    dv.v_cache = buf.dev(vc.data(), vc.size() * 2);
    dv.rotary_cos = c.rd ? (const float *)buf.dev(cs.data(), cs.size() * 4) : nullptr;
    dv.rotary_sin = c.rd ? (const float *)buf.dev(sn.data(), sn.size() * 4) : nullptr;
    dv.seqstart_q = c.group ? (const int32_t *)buf.dev(start_q.data(), start_q.size() * 4) : nullptr;
    dv.seqlen_k_ptr = scalar_len ? nullptr : (const int32_t *)buf.dev(len.data(), len.size() * 4);
    dv.cache_batch_idx = c.cbi ? (const int32_t *)buf.dev(cbi.data(), cbi.size() * 4) : nullptr;
    ASSERT_EQ(ckt_fmha_appendkv(&dv, nullptr), CKT_SUCCESS) << ckt_last_error();
    ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS) << ckt_last_error();
    std::vector<uint16_t> q_got(q.size()), kc_got(kc.size()), vc_got(vc.size());
    ASSERT_EQ(ckt_rt_memcpy(q_got.data(), dv.q, q.size() * 2, CKT_D2H), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(kc_got.data(), dv.k_cache, kc.size() * 2, CKT_D2H), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(vc_got.data(), dv.v_cache, vc.size() * 2, CKT_D2H), CKT_SUCCESS);

    // which elements the call may write: the appended rows, the logical query rows (when rotating)
    std::vector<char> wk(kc.size(), 0), wv(vc.size(), 0), wq(q.size(), 0);
    for (int b = 0; b < c.batch; b++)
        for (int t = 0; t < c.s_knew; t++)
            for (int hk = 0; hk < c.hk; hk++) {
                const int64_t pos = len[b] + t;
                const int64_t ok = cbi[b] * a.k_stride_b + hk * a.k_stride_h + pos * a.k_stride_s;
                const int64_t ov = cbi[b] * a.v_stride_b + hk * a.v_stride_h + pos * a.v_stride_s;
                std::fill(wk.begin() + ok, wk.begin() + ok + c.d, 1);
                std::fill(wv.begin() + ov, wv.begin() + ov + c.dv, 1);
            }
    if (c.rd)
        for (int b = 0; b < c.batch; b++)
            for (int hq = 0; hq < c.h; hq++)
                for (int i = 0; i < sq[b]; i++) {
                    const int64_t o = (c.group ? 0 : b * a.q_stride_b) + hq * a.q_stride_h + (start_q[b] * c.group + i) * a.q_stride_s;
                    std::fill(wq.begin() + o, wq.begin() + o + c.d, 1);
                }
    size_t bad = 0;
    auto check = [&](const char *what, const std::vector<uint16_t> &got, const std::vector<uint16_t> &want,
                     const std::vector<uint16_t> &before, const std::vector<char> &w) {
        for (size_t i = 0; i < got.size() && bad < 8; i++) {
            if (!w[i] && got[i] != before[i]) {
                ADD_FAILURE() << what << " element " << i << " outside the written rows changed";
                bad++;
            } else if (!close16(got[i], want[i], dt)) {
                ADD_FAILURE() << what << " element " << i << ": got " << f32(got[i], dt) << ", want " << f32(want[i], dt);
                bad++;
            }
        }
    };
    check("k_cache", kc_got, kc_ref, kc, wk);
    check("v_cache", vc_got, vc_ref, vc, wv);
    check("q", q_got, q_ref, q, wq);
    // the rotation did something where it should (a no-op rotation would pass the checks above)
    if (c.rd && c.s_knew) {
        size_t moved = 0;
        for (size_t i = 0; i < kc.size(); i++)
            moved += wk[i] && kc_got[i] != kc[i];
        EXPECT_GT(moved, 0u);
    }
    if (HasFailure())
        return;
    if (c.cbi == 2) { // decreasing cache rows: the forward's group-mode view cannot see them
        ckt_fmha_fwd_args f;
        std::vector<int32_t> v(2 * c.batch + 2);
        EXPECT_EQ(ckt_fmha_appendkv_fwd_args(&f, v.data(), v.data() + c.batch + 1, v.data(), v.data(), &dv,
                                             scalar_len ? nullptr : len.data(), cbi.data(), nullptr),
                  CKT_ERROR_UNSUPPORTED);
        EXPECT_EQ(std::string(ckt_last_error()).rfind("cache_batch_idx", 0), 0u) << ckt_last_error();
        return;
    }

    // >>attention over the updated cache: the forward in group mode (ckt/fmha/appendkv_fwd.h)
    ckt_fmha_fwd_args f;
    std::vector<int32_t> fsq(c.batch + 1), fsk(c.batch + 1), flq(c.batch), flk(c.batch);
    ASSERT_EQ(ckt_fmha_appendkv_fwd_args(&f, fsq.data(), fsk.data(), flq.data(), flk.data(), &dv,
                                         scalar_len ? nullptr : len.data(), c.cbi ? cbi.data() : nullptr,
                                         c.group ? start_q.data() : nullptr),
              CKT_SUCCESS)
        << ckt_last_error();
    f.mask = c.mask;
    for (int b = 0; b < c.batch; b++) { // the view's lengths, independently
        ASSERT_EQ(flk[b], len[b] + c.s_knew);
        ASSERT_EQ(flq[b], sq[b]);
    }
    const int64_t rows_o = fsq[c.batch];
    const size_t no = (size_t)((c.h - 1) * f.o_stride_h + (rows_o - 1) * f.o_stride_s + c.dv);
    ckt_fmha_fwd_args fh = f;
    fh.q = q_ref.data(); // the reference's rotated q and appended cache
    fh.k = kc_ref.data();
    fh.v = vc_ref.data();
    fh.seqstart_q = fsq.data();
    fh.seqstart_k = fsk.data();
    fh.seqlen_q_ptr = flq.data();
    fh.seqlen_k_ptr = flk.data();
    std::vector<float> o_ref(no, 0.0f);
    ASSERT_EQ(ckt_ref_fmha_fwd(&fh, o_ref.data(), nullptr), CKT_SUCCESS) << ckt_last_error();

    ckt_fmha_fwd_args fd = f;
    fd.q = dv.q;
    fd.k = dv.k_cache;
    fd.v = dv.v_cache;
    fd.o = buf.dev(nullptr, no * 2);
    fd.seqstart_q = (const int32_t *)buf.dev(fsq.data(), fsq.size() * 4);
    fd.seqstart_k = (const int32_t *)buf.dev(fsk.data(), fsk.size() * 4);
    fd.seqlen_q_ptr = (const int32_t *)buf.dev(flq.data(), flq.size() * 4);
    fd.seqlen_k_ptr = (const int32_t *)buf.dev(flk.data(), flk.size() * 4);
    ASSERT_EQ(ckt_fmha_fwd(&fd, nullptr), CKT_SUCCESS) << ckt_last_error();
    ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS);
    std::vector<uint16_t> o(no);
    ASSERT_EQ(ckt_rt_memcpy(o.data(), fd.o, no * 2, CKT_D2H), CKT_SUCCESS);
    const double tol = dt == CKT_BF16 ? 1e-2 : 1e-3;
    ckt_compare_result ro;
    ckt_status s = ckt_ref_fmha_compare(&ro, nullptr, &fh, o.data(), nullptr, o_ref.data(), nullptr, tol, tol);
    if (s != CKT_SUCCESS)
        ckt_compare_print(stderr, "O", &ro);
    EXPECT_EQ(s, CKT_SUCCESS) << ckt_last_error();
}

std::vector<Case> matrix()
{
    std::vector<Case> cs;
    auto add = [&cs](Case c) {
        c.name = case_name(c);
        cs.push_back(c);
    };
    // rotary dims x layouts x types (d 64: 0, 16, 64 = full)
    for (ckt_dtype dt : {CKT_F16, CKT_BF16})
        for (int rd : {0, 16, 64})
            for (int inter : {0, 1}) {
                if (rd == 0 && inter)
                    continue;
                Case c;
                c.dt = dt;
                c.rd = rd;
                c.inter = inter;
                c.len = {7, 0, 19}; // ragged current lengths, one empty cache
                add(c);
            }
    // rotary dims that split a 16-byte vector: half-split 24 (pairs 12 apart:
    // the kernel's single-pair path), interleaved 20 (a vector half rotated)
    for (int inter : {0, 1}) {
        Case c;
        c.rd = inter ? 20 : 24;
        c.inter = inter;
        c.len = {4, 13};
        c.s_knew = 9;
        c.sq = {9};
        c.dt = inter ? CKT_BF16 : CKT_F16;
        add(c);
    }
    // group-mode queries of ragged lengths (decode 1, speculative 3, prefill-like 13), GQA 6/2
    for (int inter : {0, 1}) {
        Case c;
        c.group = 1;
        c.h = 6;
        c.hk = 2;
        c.sq = {1, 3, 13};
        c.s_knew = 3;
        c.len = {0, 11, 25};
        c.rd = 16;
        c.inter = inter;
        add(c);
    }
    // MQA, bhsd layouts, scalar length, non-causal
    {
        Case c;
        c.h = 4;
        c.hk = 1;
        c.len = {9};
        c.bshd = 0;
        c.rd = 32;
        c.mask = CKT_MASK_NONE;
        add(c);
        c.len_ptr = 1;
        add(c);
    }
    // cache_batch_idx: increasing rows with gaps (then attention), reversed (the append only)
    for (int cbi : {1, 2})
        for (int bshd : {1, 0}) {
            Case c;
            c.cbi = cbi;
            c.bshd = bshd;
            c.len = {3, 30, 12};
            c.s_knew = 10; // fills entry 1 to the brim (30 + 10 = 40)
            c.sq = {10};
            c.rd = 48;
            c.inter = bshd;
            add(c);
        }
    // head dims: small (8, rotary full), d != dv, the largest (256, rotary 64 and full)
    {
        Case c;
        c.d = c.dv = 8;
        c.rd = 8;
        c.inter = 1;
        c.len = {2, 5};
        add(c);
        c.d = 128;
        c.dv = 64;
        c.rd = 128;
        c.inter = 0;
        c.dt = CKT_BF16;
        add(c);
        c.d = c.dv = 256;
        c.rd = 64;
        c.batch = 2;
        c.h = 2;
        c.hk = 1;
        c.s_knew = 17;
        c.sq = {17};
        c.len = {100, 33};
        c.cap = 130;
        add(c);
        c.rd = 256;
        c.inter = 1;
        add(c);
    }
    // only queries (s_knew = 0: rotate Q, cache untouched), and decode (one query)
    {
        Case c;
        c.s_knew = 0;
        c.sq = {4};
        add(c);
        c.s_knew = 6;
        c.sq = {1};
        c.mask = CKT_MASK_NONE;
        add(c);
    }
    // the grid's two head ranges (appendkv_body.h, _grid): kv heads with more
    // row tiles of new tokens than of queries, then query heads with one
    // tile; and the other way round (more query tiles than new-token tiles)
    {
        Case c;
        c.h = 6;
        c.hk = 2;
        c.s_knew = 20;
        c.sq = {1};
        c.cap = 48;
        add(c);
        c.s_knew = 2;
        c.sq = {19};
        add(c);
    }
    return cs;
}

INSTANTIATE_TEST_SUITE_P(Matrix, AppendKV, ::testing::ValuesIn(matrix()),
                         [](const ::testing::TestParamInfo<Case> &i) { return i.param.name; });

// >>the rotary module against the textbook formulas (FlashAttention's apply_rotary_emb)
TEST(Rope, PairsAndRotation)
{
    const int d = 16;
    for (int rd : {0, 8, 16})
        for (int inter : {0, 1}) {
            std::vector<int> seen(d, 0);
            for (int u = 0; u < d / 2; u++) {
                int e0, e1;
                ckt_fmha_rope_pair(&e0, &e1, u, rd, inter);
                ASSERT_TRUE(e0 >= 0 && e1 < d && e0 != e1);
                seen[e0]++, seen[e1]++;
                if (u < rd / 2) {
                    EXPECT_EQ(e0, inter ? 2 * u : u);
                    EXPECT_EQ(e1, inter ? 2 * u + 1 : u + rd / 2);
                } else {
                    EXPECT_EQ(e0, rd + 2 * (u - rd / 2));
                    EXPECT_EQ(e1, e0 + 1);
                }
            }
            for (int e = 0; e < d; e++)
                EXPECT_EQ(seen[e], 1) << "element " << e << " in one pair";
        }
    // half-split: out = x cos + rotate_half(x) sin, rotate_half(x) = cat(-x2, x1)
    float x0 = 0.5f, x1 = -2.0f;
    const double th = 0.7;
    ckt_fmha_rope_rotate(&x0, &x1, (float)std::cos(th), (float)std::sin(th));
    EXPECT_NEAR(x0, 0.5 * std::cos(th) + 2.0 * std::sin(th), 1e-6);
    EXPECT_NEAR(x1, -2.0 * std::cos(th) + 0.5 * std::sin(th), 1e-6);
    EXPECT_NEAR(x0 * x0 + x1 * x1, 4.25, 1e-5); // a rotation keeps the norm
    EXPECT_EQ(ckt_fmha_rope_row(5, 64), 160);
}

// >>bad input: a status naming the argument, nothing launched
struct BadInput {
    std::vector<uint16_t> q, kn, vn, kc, vc;
    std::vector<float> cs, sn;
    ckt_fmha_appendkv_args a;
    BadInput()
    {
        q.assign(2 * 2 * 4 * 64, 0);
        kn.assign(2 * 2 * 4 * 64, 0);
        vn = kn;
        kc.assign(2 * 2 * 16 * 64, 0);
        vc = kc;
        cs.assign(32 * 32, 1.0f);
        sn.assign(32 * 32, 0.0f);
        memset(&a, 0, sizeof a);
        a.dtype = CKT_F16;
        a.batch = 2, a.nhead_q = 2, a.nhead_k = 2, a.seqlen_q = 4, a.seqlen_knew = 4, a.seqlen_k = 3;
        a.cache_seqlen = 16, a.hdim_q = a.hdim_v = 64;
        a.q = q.data(), a.k_new = kn.data(), a.v_new = vn.data(), a.k_cache = kc.data(), a.v_cache = vc.data();
        strides(&a.q_stride_b, &a.q_stride_h, &a.q_stride_s, 1, 2, 4, 64);
        strides(&a.knew_stride_b, &a.knew_stride_h, &a.knew_stride_s, 1, 2, 4, 64);
        strides(&a.vnew_stride_b, &a.vnew_stride_h, &a.vnew_stride_s, 1, 2, 4, 64);
        strides(&a.k_stride_b, &a.k_stride_h, &a.k_stride_s, 1, 2, 16, 64);
        strides(&a.v_stride_b, &a.v_stride_h, &a.v_stride_s, 1, 2, 16, 64);
        a.rotary_dim = 64, a.rotary_cos = cs.data(), a.rotary_sin = sn.data(), a.rotary_max_pos = 32;
    }
};

void expect_bad(const ckt_fmha_appendkv_args &a, ckt_status want, const char *arg)
{
    const ckt_status s = ckt_ref_fmha_appendkv(&a); // validates like the launcher, on host memory
    EXPECT_EQ(s, want) << arg << ": " << ckt_last_error();
    EXPECT_EQ(std::string(ckt_last_error()).rfind(arg, 0), 0u) << "message should start with " << arg << ": "
                                                                << ckt_last_error();
}

TEST(AppendKVBad, ValidInputPasses)
{
    BadInput t;
    EXPECT_EQ(ckt_ref_fmha_appendkv(&t.a), CKT_SUCCESS) << ckt_last_error();
}

// A call whose grid the devices cannot launch (HIP: 2^32 - 1 threads in x)
// is refused by the launcher, naming the lengths, before anything runs: 4096
// kv heads x 8192 row tiles of new tokens is 2^25 blocks of 128 threads.
// Only the strides matter to the checks, so the tensors are not allocated.
TEST(AppendKVBad, GridTooLargeIsRefused)
{
    BadInput t;
    ckt_fmha_appendkv_args &a = t.a;
    a.nhead_q = a.nhead_k = 4096, a.batch = 1, a.seqlen_knew = 65536, a.seqlen_k = 0, a.seqlen_q = 1;
    a.cache_seqlen = 65536, a.rotary_dim = 0;
    strides(&a.q_stride_b, &a.q_stride_h, &a.q_stride_s, 1, 4096, 1, 64);
    strides(&a.knew_stride_b, &a.knew_stride_h, &a.knew_stride_s, 1, 4096, 65536, 64);
    strides(&a.vnew_stride_b, &a.vnew_stride_h, &a.vnew_stride_s, 1, 4096, 65536, 64);
    strides(&a.k_stride_b, &a.k_stride_h, &a.k_stride_s, 1, 4096, 65536, 64);
    strides(&a.v_stride_b, &a.v_stride_h, &a.v_stride_s, 1, 4096, 65536, 64);
    a.k_new = a.v_new = (const void *)(uintptr_t)0x100000, a.q = (void *)(uintptr_t)0x100000;
    a.k_cache = (void *)(uintptr_t)0x200000;
    a.v_cache = (void *)((uintptr_t)0x200000 + ((uintptr_t)1 << 40));
    EXPECT_EQ(ckt_fmha_appendkv(&a, nullptr), CKT_ERROR_UNSUPPORTED) << ckt_last_error();
    EXPECT_EQ(std::string(ckt_last_error()).rfind("seqlen_knew", 0), 0u) << ckt_last_error();
    // the count refused: 4096 heads x 8192 tiles = 2^25 > (2^32 - 1) / 128;
    // one tile fewer is 4096 x 8191 = 2^25 - 4096 blocks, under it
    EXPECT_EQ(test_appendkv_bf16_grid(&a).blocks, (int64_t)4096 * 8192);
    a.seqlen_knew = 65528;
    EXPECT_EQ(test_appendkv_bf16_grid(&a).blocks, (int64_t)4096 * 8191);
    EXPECT_LE(test_appendkv_bf16_grid(&a).blocks, (int64_t)(0xffffffffu / 128));
}

TEST(AppendKVBad, StatusNamesTheArgument)
{
    {
        BadInput t;
        t.a.k_cache = nullptr;
        expect_bad(t.a, CKT_ERROR_NULL_POINTER, "k_cache");
    }
    {
        BadInput t;
        t.a.v_new = nullptr;
        expect_bad(t.a, CKT_ERROR_NULL_POINTER, "v_new");
    }
    {
        BadInput t;
        t.a.rotary_cos = nullptr;
        expect_bad(t.a, CKT_ERROR_NULL_POINTER, "rotary_cos");
    }
    {
        BadInput t;
        t.a.q = nullptr;
        expect_bad(t.a, CKT_ERROR_NULL_POINTER, "q");
    }
    {
        BadInput t;
        t.a.rotary_dim = 15;
        expect_bad(t.a, CKT_ERROR_INVALID_ARGUMENT, "rotary_dim");
    }
    {
        BadInput t;
        t.a.rotary_dim = 72;
        expect_bad(t.a, CKT_ERROR_INVALID_ARGUMENT, "rotary_dim");
    }
    {
        BadInput t;
        t.a.rotary_interleaved = 2;
        expect_bad(t.a, CKT_ERROR_INVALID_ARGUMENT, "rotary_interleaved");
    }
    {
        BadInput t;
        t.a.seqlen_knew = -1;
        expect_bad(t.a, CKT_ERROR_INVALID_ARGUMENT, "seqlen_knew");
    }
    {
        BadInput t;
        t.a.seqlen_k = 13; // 13 + 4 > 16
        expect_bad(t.a, CKT_ERROR_INVALID_ARGUMENT, "seqlen_k");
    }
    {
        BadInput t;
        t.a.rotary_max_pos = 6; // positions up to 3 + 4 - 1
        expect_bad(t.a, CKT_ERROR_INVALID_ARGUMENT, "rotary_max_pos");
    }
    {
        BadInput t;
        std::vector<int32_t> len = {3, 14};
        t.a.seqlen_k_ptr = len.data();
        expect_bad(t.a, CKT_ERROR_INVALID_ARGUMENT, "seqlen_k_ptr[1]");
    }
    {
        BadInput t;
        std::vector<int32_t> cbi = {1, 1};
        t.a.cache_batch_idx = cbi.data();
        expect_bad(t.a, CKT_ERROR_INVALID_ARGUMENT, "cache_batch_idx");
    }
    {
        BadInput t;
        std::vector<int32_t> cbi = {0, 2};
        t.a.cache_batch_idx = cbi.data();
        expect_bad(t.a, CKT_ERROR_INVALID_ARGUMENT, "cache_batch_idx");
    }
    {
        BadInput t;
        t.a.cache_batch = 1;
        expect_bad(t.a, CKT_ERROR_INVALID_ARGUMENT, "cache_batch");
    }
    {
        BadInput t;
        t.a.hdim_q = 264;
        t.a.rotary_dim = 0;
        expect_bad(t.a, CKT_ERROR_UNSUPPORTED, "hdim_q");
    }
    {
        BadInput t;
        t.a.k_stride_s = 32; // rows of 64 would overlap
        expect_bad(t.a, CKT_ERROR_INVALID_ARGUMENT, "k_stride_s");
    }
    {
        BadInput t;
        t.a.nhead_q = 3;
        expect_bad(t.a, CKT_ERROR_INVALID_ARGUMENT, "nhead_q");
    }
    {
        BadInput t;
        t.a.dtype = CKT_F32;
        expect_bad(t.a, CKT_ERROR_UNSUPPORTED, "dtype");
    }
    // a paged cache through sglang-style tables (of the cache after the
    // append): 8 pages of 4 rows, entry 0 7 keys (3 + 4 new), entry 1 8
    {
        struct Sgl {
            BadInput t;
            std::vector<int32_t> indptr = {0, 2, 4}, indices = {0, 1, 2, 3}, last = {3, 4};
            Sgl()
            {
                t.a.page_size = 4, t.a.num_pages = 8;
                strides(&t.a.k_stride_b, &t.a.k_stride_h, &t.a.k_stride_s, 1, 2, 4, 64); // [page][h][row][d]
                strides(&t.a.v_stride_b, &t.a.v_stride_h, &t.a.v_stride_s, 1, 2, 4, 64);
                t.a.seqlen_k = 0; // unused
                t.a.kv_indptr = indptr.data(), t.a.kv_indices = indices.data(), t.a.kv_last_page_len = last.data();
            }
        };
        {
            Sgl g;
            EXPECT_EQ(ckt_ref_fmha_appendkv(&g.t.a), CKT_SUCCESS) << ckt_last_error();
        }
        {
            Sgl g;
            std::vector<int32_t> table = {0, 1, 2, 3};
            g.t.a.block_table = table.data(), g.t.a.max_pages_per_seq = 2;
            expect_bad(g.t.a, CKT_ERROR_INVALID_ARGUMENT, "block_table");
        }
        {
            Sgl g;
            std::vector<int32_t> len = {3, 4};
            g.t.a.seqlen_k_ptr = len.data();
            expect_bad(g.t.a, CKT_ERROR_INVALID_ARGUMENT, "seqlen_k_ptr");
        }
        {
            Sgl g;
            std::vector<int32_t> cbi = {1, 0};
            g.t.a.cache_batch_idx = cbi.data();
            expect_bad(g.t.a, CKT_ERROR_INVALID_ARGUMENT, "cache_batch_idx");
        }
        {
            Sgl g;
            g.last[1] = 5; // past the page
            expect_bad(g.t.a, CKT_ERROR_INVALID_ARGUMENT, "kv_last_page_len");
        }
        {
            Sgl g;
            g.indices[3] = 9; // past num_pages
            expect_bad(g.t.a, CKT_ERROR_INVALID_ARGUMENT, "kv_indices");
        }
        {
            Sgl g;
            g.indptr = {0, 2, 1};
            g.t.a.kv_indptr = g.indptr.data();
            expect_bad(g.t.a, CKT_ERROR_INVALID_ARGUMENT, "kv_indptr");
        }
        {
            Sgl g;
            g.indptr = {0, 1, 3}, g.last = {2, 4}; // entry 0: 2 keys, fewer than the 4 new tokens
            g.t.a.kv_indptr = g.indptr.data(), g.t.a.kv_last_page_len = g.last.data();
            expect_bad(g.t.a, CKT_ERROR_INVALID_ARGUMENT, "kv_last_page_len");
        }
        {
            Sgl g;
            g.t.a.kv_indices = nullptr;
            expect_bad(g.t.a, CKT_ERROR_NULL_POINTER, "kv_indices");
        }
        {
            Sgl g;
            g.indices = {0, 1, 0, 1}; // entry 1's new rows 4 .. 7 (page 1) meet entry 0's 4 .. 6 (page 1 rows 0 .. 2)
            g.t.a.kv_indices = g.indices.data();
            expect_bad(g.t.a, CKT_ERROR_INVALID_ARGUMENT, "kv_indices");
        }
        {
            Sgl g;
            g.indices = {0, 1, 0, 2}; // a shared first page, distinct appended rows: taken
            g.t.a.kv_indices = g.indices.data();
            EXPECT_EQ(ckt_ref_fmha_appendkv(&g.t.a), CKT_SUCCESS) << ckt_last_error();
        }
        {
            BadInput t; // contiguous
            std::vector<int32_t> indptr = {0, 1, 2};
            t.a.kv_indptr = indptr.data();
            expect_bad(t.a, CKT_ERROR_INVALID_ARGUMENT, "kv_indptr");
        }
    }
    // through the library: the same statuses, and NULL args
    {
        BadInput t;
        t.a.rotary_dim = 3;
        EXPECT_EQ(ckt_fmha_appendkv(&t.a, nullptr), CKT_ERROR_INVALID_ARGUMENT);
        EXPECT_EQ(ckt_fmha_appendkv(nullptr, nullptr), CKT_ERROR_NULL_POINTER);
        t.a.rotary_dim = 0;
        t.a.dtype = CKT_F32;
        EXPECT_EQ(ckt_fmha_appendkv(&t.a, nullptr), CKT_ERROR_UNSUPPORTED);
    }
    // rotary_dim 0 needs neither tables nor q
    {
        BadInput t;
        t.a.rotary_dim = 0;
        t.a.rotary_cos = t.a.rotary_sin = nullptr;
        t.a.q = nullptr;
        EXPECT_EQ(ckt_ref_fmha_appendkv(&t.a), CKT_SUCCESS) << ckt_last_error();
    }
}

// Device lengths the host cannot read (a GPU) may break the contract: the
// kernel then skips rows past the capacity or the tables and entries whose
// cache_batch_idx is out of range; nothing outside the buffers is touched
// (the buffers are exactly the tensors' size: the emulator's sanitizer build
// and the GPU's memcheck would see a stray access).
TEST(AppendKVKernel, SkipsWhatTheHostCouldNotCheck)
{
    const int B = 2, D = 64, CAP = 8, KNEW = 4, SQ = 4, MAXPOS = 7, RD = 64;
    std::vector<uint16_t> kn(B * KNEW * D), vn(B * KNEW * D), kc(B * CAP * D), vc(B * CAP * D), q(B * SQ * D);
    ckt_fill(kn.data(), CKT_BF16, kn.size(), ckt_init_uniform(-1, 1), 1);
    ckt_fill(vn.data(), CKT_BF16, vn.size(), ckt_init_uniform(-1, 1), 2);
    ckt_fill(kc.data(), CKT_BF16, kc.size(), ckt_init_uniform(-1, 1), 3);
    ckt_fill(vc.data(), CKT_BF16, vc.size(), ckt_init_uniform(-1, 1), 4);
    ckt_fill(q.data(), CKT_BF16, q.size(), ckt_init_uniform(-1, 1), 5);
    std::vector<float> cs, sn;
    tables(cs, sn, MAXPOS, RD);
    for (int bad_cbi = 0; bad_cbi < 2; bad_cbi++) {
        const std::vector<int32_t> len = {6, 2};     // entry 0: 6 + 4 > CAP and > MAXPOS
        const std::vector<int32_t> cbi = {5, 0};     // bad_cbi: entry 0's row 5 of 2
        Buffers buf;
        ckt_fmha_appendkv_args a;
        memset(&a, 0, sizeof a);
        a.dtype = CKT_BF16;
        a.batch = B, a.nhead_q = 1, a.nhead_k = 1, a.seqlen_q = SQ, a.seqlen_knew = KNEW;
        a.cache_seqlen = CAP, a.hdim_q = a.hdim_v = D;
        strides(&a.q_stride_b, &a.q_stride_h, &a.q_stride_s, 1, 1, SQ, D);
        strides(&a.knew_stride_b, &a.knew_stride_h, &a.knew_stride_s, 1, 1, KNEW, D);
        strides(&a.vnew_stride_b, &a.vnew_stride_h, &a.vnew_stride_s, 1, 1, KNEW, D);
        strides(&a.k_stride_b, &a.k_stride_h, &a.k_stride_s, 1, 1, CAP, D);
        strides(&a.v_stride_b, &a.v_stride_h, &a.v_stride_s, 1, 1, CAP, D);
        a.rotary_dim = RD, a.rotary_max_pos = MAXPOS;
        a.q = buf.dev(q.data(), q.size() * 2);
        a.k_new = buf.dev(kn.data(), kn.size() * 2);
        a.v_new = buf.dev(vn.data(), vn.size() * 2);
        a.k_cache = buf.dev(kc.data(), kc.size() * 2);
        a.v_cache = buf.dev(vc.data(), vc.size() * 2);
        a.rotary_cos = (const float *)buf.dev(cs.data(), cs.size() * 4);
        a.rotary_sin = (const float *)buf.dev(sn.data(), sn.size() * 4);
        a.seqlen_k_ptr = (const int32_t *)buf.dev(len.data(), 8);
        a.cache_batch_idx = bad_cbi ? (const int32_t *)buf.dev(cbi.data(), 8) : nullptr;
#if defined(CKT_BACKEND_CPU)
        // the host's check refuses it (on the CPU backend it reads the arrays) ...
        EXPECT_EQ(ckt_fmha_appendkv(&a, nullptr), CKT_ERROR_INVALID_ARGUMENT);
#endif
        // ... the kernel, launched as a GPU would run it, skips what is out of bounds
        ASSERT_EQ(ckt_rt_launch(CKT_KERNEL_REF(test_appendkv_bf16_kernel),
                                ckt_dim3_make((unsigned)test_appendkv_bf16_grid(&a).blocks, B, 1),
                                ckt_dim3_make(64, 1, 1), 0, nullptr, &a),
                  CKT_SUCCESS)
            << ckt_last_error();
        ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS);
        std::vector<uint16_t> kc_got(kc.size()), vc_got(vc.size()), q_got(q.size());
        ASSERT_EQ(ckt_rt_memcpy(kc_got.data(), a.k_cache, kc.size() * 2, CKT_D2H), CKT_SUCCESS);
        ASSERT_EQ(ckt_rt_memcpy(vc_got.data(), a.v_cache, vc.size() * 2, CKT_D2H), CKT_SUCCESS);
        ASSERT_EQ(ckt_rt_memcpy(q_got.data(), a.q, q.size() * 2, CKT_D2H), CKT_SUCCESS);
        // expected: the reference's rows where pos < min(CAP, MAXPOS), the old ones elsewhere
        std::vector<uint16_t> kc_want = kc, vc_want = vc, q_want = q;
        for (int b = 0; b < B; b++) {
            const int cb = bad_cbi ? cbi[b] : b;
            for (int t = 0; t < KNEW && cb < B; t++) {
                const int pos = len[b] + t;
                if (pos >= std::min(CAP, MAXPOS))
                    continue;
                ckt__ref_fmha_rope_row(&kc_want[(size_t)(cb * CAP + pos) * D], &kn[(size_t)(b * KNEW + t) * D], D, pos,
                                       RD, 0, cs.data(), sn.data(), CKT_BF16);
                std::copy(&vn[(size_t)(b * KNEW + t) * D], &vn[(size_t)(b * KNEW + t + 1) * D],
                          &vc_want[(size_t)(cb * CAP + pos) * D]);
            }
            for (int i = 0; i < SQ; i++)
                if (len[b] + i < MAXPOS)
                    ckt__ref_fmha_rope_row(&q_want[(size_t)(b * SQ + i) * D], &q[(size_t)(b * SQ + i) * D], D,
                                           len[b] + i, RD, 0, cs.data(), sn.data(), CKT_BF16);
        }
        size_t bad = 0;
        for (size_t i = 0; i < kc.size(); i++)
            bad += !close16(kc_got[i], kc_want[i], CKT_BF16) + !close16(vc_got[i], vc_want[i], CKT_BF16);
        for (size_t i = 0; i < q.size(); i++)
            bad += !close16(q_got[i], q_want[i], CKT_BF16);
        EXPECT_EQ(bad, 0u) << "bad_cbi " << bad_cbi;
        EXPECT_NE(kc_got, kc) << "the in-bounds rows were appended";
    }
}

// sglang-style tables that a GPU's host cannot read may hold fewer keys
// than the append brings: the kernel writes only the positions the tables
// have (the last new tokens at positions 0 .. keys - 1), nothing else, and
// never outside the pool (exactly its size: the sanitizers would see it).
TEST(AppendKVKernel, SglangTablesShorterThanTheAppend)
{
    const int B = 2, D = 64, PS = 4, NP = 4, KNEW = 4;
    std::vector<uint16_t> kn(B * KNEW * D), vn(B * KNEW * D), kc(NP * PS * D), vc(NP * PS * D);
    ckt_fill(kn.data(), CKT_BF16, kn.size(), ckt_init_uniform(-1, 1), 11);
    ckt_fill(vn.data(), CKT_BF16, vn.size(), ckt_init_uniform(-1, 1), 12);
    ckt_fill(kc.data(), CKT_BF16, kc.size(), ckt_init_uniform(-1, 1), 13);
    ckt_fill(vc.data(), CKT_BF16, vc.size(), ckt_init_uniform(-1, 1), 14);
    // entry 0: one page (2), 2 keys < 4 new tokens; entry 1: pages 0, 3, 8 keys (4 old + 4 new)
    const std::vector<int32_t> indptr = {0, 1, 3}, indices = {2, 0, 3}, last = {2, 4};
    Buffers buf;
    ckt_fmha_appendkv_args a;
    memset(&a, 0, sizeof a);
    a.dtype = CKT_BF16;
    a.batch = B, a.nhead_q = 1, a.nhead_k = 1, a.seqlen_q = 1, a.seqlen_knew = KNEW, a.hdim_q = a.hdim_v = D;
    strides(&a.knew_stride_b, &a.knew_stride_h, &a.knew_stride_s, 1, 1, KNEW, D);
    strides(&a.vnew_stride_b, &a.vnew_stride_h, &a.vnew_stride_s, 1, 1, KNEW, D);
    strides(&a.k_stride_b, &a.k_stride_h, &a.k_stride_s, 1, 1, PS, D); // [page][row][h][d]
    strides(&a.v_stride_b, &a.v_stride_h, &a.v_stride_s, 1, 1, PS, D);
    a.page_size = PS, a.num_pages = NP;
    a.k_new = buf.dev(kn.data(), kn.size() * 2), a.v_new = buf.dev(vn.data(), vn.size() * 2);
    a.k_cache = buf.dev(kc.data(), kc.size() * 2), a.v_cache = buf.dev(vc.data(), vc.size() * 2);
    a.kv_indptr = (const int32_t *)buf.dev(indptr.data(), indptr.size() * 4);
    a.kv_indices = (const int32_t *)buf.dev(indices.data(), indices.size() * 4);
    a.kv_last_page_len = (const int32_t *)buf.dev(last.data(), last.size() * 4);
#if defined(CKT_BACKEND_CPU)
    EXPECT_EQ(ckt_fmha_appendkv(&a, nullptr), CKT_ERROR_INVALID_ARGUMENT); // the host reads the tables here
    EXPECT_EQ(std::string(ckt_last_error()).rfind("kv_last_page_len", 0), 0u) << ckt_last_error();
#endif
    ASSERT_EQ(ckt_rt_launch(CKT_KERNEL_REF(test_appendkv_bf16_kernel),
                            ckt_dim3_make((unsigned)test_appendkv_bf16_grid(&a).blocks, B, 1), ckt_dim3_make(64, 1, 1), 0,
                            nullptr, &a),
              CKT_SUCCESS)
        << ckt_last_error();
    ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS);
    std::vector<uint16_t> kc_got(kc.size()), vc_got(vc.size());
    ASSERT_EQ(ckt_rt_memcpy(kc_got.data(), a.k_cache, kc.size() * 2, CKT_D2H), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(vc_got.data(), a.v_cache, vc.size() * 2, CKT_D2H), CKT_SUCCESS);
    std::vector<uint16_t> kc_want = kc, vc_want = vc;
    auto put = [&](int b, int t, int page, int row) { // a copy (rotary_dim 0)
        std::copy(&kn[(size_t)(b * KNEW + t) * D], &kn[(size_t)(b * KNEW + t + 1) * D], &kc_want[(size_t)(page * PS + row) * D]);
        std::copy(&vn[(size_t)(b * KNEW + t) * D], &vn[(size_t)(b * KNEW + t + 1) * D], &vc_want[(size_t)(page * PS + row) * D]);
    };
    put(0, 2, 2, 0), put(0, 3, 2, 1);                  // entry 0: len -2, positions 0 and 1 exist
    for (int t = 0; t < KNEW; t++)
        put(1, t, 3, t);                               // entry 1: len 4, positions 4 .. 7 on its second page
    EXPECT_EQ(kc_got, kc_want);
    EXPECT_EQ(vc_got, vc_want);
}

// The ABI check for bindings knows every field.
TEST(AppendKVAbi, FieldOffsets)
{
    EXPECT_EQ(ckt_fmha_appendkv_args_offset("sizeof"), sizeof(ckt_fmha_appendkv_args));
    EXPECT_EQ(ckt_fmha_appendkv_args_offset("rotary_sin"), offsetof(ckt_fmha_appendkv_args, rotary_sin));
    EXPECT_EQ(ckt_fmha_appendkv_args_offset("vnew_stride_s"), offsetof(ckt_fmha_appendkv_args, vnew_stride_s));
    EXPECT_EQ(ckt_fmha_appendkv_args_offset("kv_last_page_len"), offsetof(ckt_fmha_appendkv_args, kv_last_page_len));
    EXPECT_EQ(ckt_fmha_appendkv_args_offset("nope"), (size_t)-1);
}

// Every element is written by one thread: the same bytes under any block
// order and thread count of the emulator (one run on a GPU).
TEST(AppendKVDeterminism, SameBytesUnderEverySchedule)
{
    BadInput t; // a valid problem: 2 entries, GQA-free, rotary 64 over d 64, half-split
    t.a.nhead_q = 4;
    strides(&t.a.q_stride_b, &t.a.q_stride_h, &t.a.q_stride_s, 1, 4, 4, 64);
    t.q.assign(2 * 4 * 4 * 64, 0);
    t.a.q = t.q.data();
    ckt_fill(t.q.data(), CKT_BF16, t.q.size(), ckt_init_uniform(-1, 1), 1);
    ckt_fill(t.kn.data(), CKT_BF16, t.kn.size(), ckt_init_uniform(-1, 1), 2);
    ckt_fill(t.vn.data(), CKT_BF16, t.vn.size(), ckt_init_uniform(-1, 1), 3);
    tables(t.cs, t.sn, 32, 64);
    t.a.dtype = CKT_BF16;
    std::vector<int32_t> len = {3, 11};
#if defined(CKT_BACKEND_CPU)
    const FmhaEmuSchedule scheds[] = {{0, 0, "1"}, {1, 0, "3"}, {2, 7, "2"}, {2, 99, "4"}};
#else
    const FmhaEmuSchedule scheds[] = {{0, 0, ""}, {0, 0, ""}};
#endif
    std::vector<uint16_t> first[3];
    int k = 0;
    for (const FmhaEmuSchedule &sc : scheds) {
        fmha_emu_schedule_set(sc);
        Buffers buf;
        ckt_fmha_appendkv_args d = t.a;
        d.q = buf.dev(t.q.data(), t.q.size() * 2);
        d.k_new = buf.dev(t.kn.data(), t.kn.size() * 2);
        d.v_new = buf.dev(t.vn.data(), t.vn.size() * 2);
        d.k_cache = buf.dev(t.kc.data(), t.kc.size() * 2);
        d.v_cache = buf.dev(t.vc.data(), t.vc.size() * 2);
        d.rotary_cos = (const float *)buf.dev(t.cs.data(), t.cs.size() * 4);
        d.rotary_sin = (const float *)buf.dev(t.sn.data(), t.sn.size() * 4);
        d.seqlen_k_ptr = (const int32_t *)buf.dev(len.data(), len.size() * 4);
        ASSERT_EQ(ckt_fmha_appendkv(&d, nullptr), CKT_SUCCESS) << ckt_last_error();
        ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS);
        std::vector<uint16_t> out[3] = {t.q, t.kc, t.vc};
        ASSERT_EQ(ckt_rt_memcpy(out[0].data(), d.q, t.q.size() * 2, CKT_D2H), CKT_SUCCESS);
        ASSERT_EQ(ckt_rt_memcpy(out[1].data(), d.k_cache, t.kc.size() * 2, CKT_D2H), CKT_SUCCESS);
        ASSERT_EQ(ckt_rt_memcpy(out[2].data(), d.v_cache, t.vc.size() * 2, CKT_D2H), CKT_SUCCESS);
        for (int i = 0; i < 3; i++) {
            if (k == 0)
                first[i] = out[i];
            else
                EXPECT_TRUE(first[i] == out[i]) << "tensor " << i << " (q, k_cache, v_cache) differs under schedule " << k;
        }
        k++;
    }
    EXPECT_TRUE(first[0] != t.q && first[1] != t.kc) << "the call changed nothing";
    fmha_emu_schedule_reset();
}

} // namespace
