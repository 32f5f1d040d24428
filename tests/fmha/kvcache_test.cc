// The forward over a KV cache (ckt_fmha_fwd with the inference fields of
// ckt/fmha/args.h), on the decode instances (GQA packed, seqlen_q <= 16) and
// the regular ones: split-KV with its combine, paged K/V through vLLM block
// tables and sglang indptr/indices/last-page-length tables of many page
// sizes (1, 3, 16, 48, 64, 100, 128, 256: some smaller than, some not
// dividing, the key tile), cache_batch_idx, batch prefill (group-mode
// queries over a paged cache), decode (1..16 queries, GQA), a pool past 4 GB
// with pages at both ends, bitwise reproducibility of split-KV under other
// emulator schedules, and the validation of the new fields.
//
// The kernel reads the cache in its own layout; the CPU reference reads a
// plain contiguous copy of the same keys (so the paging of the reference,
// ckt/fmha/kv.h, is checked against it too).
#include "ckt/fmha.h"

#include "tests/fmha/fmha_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

enum KvStyle { kContiguous = 0, kVllm = 1, kSglang = 2 };

struct Case {
    ckt_dtype dt = CKT_BF16;
    int d = 64, dv = 64;
    int group = 0; // queries in group mode (batch prefill)
    int batch = 2, h = 4, hk = 2;
    std::vector<int> sq = {1}, sk = {300, 77}; // per entry (the last repeats)
    ckt_fmha_mask mask = CKT_MASK_NONE;
    int wl = 0, wr = 0;
    float softcap = 0.0f;
    KvStyle kv = kContiguous;
    int page_size = 16;
    int page_major = 1;  // pool layout [page][pos][hk][d] (1) or [page][hk][pos][d] (0)
    int splits = 1;      // num_splits; -1: 0 (automatic) without a workspace, 0: automatic with one
    int cbi = 0;         // cache_batch_idx (a permutation into a cache with one spare entry)
    int sink = 0;        // per-head sink logits (gpt-oss), random in [-2, 4]
    float p_drop = 0.0f; // dropout: a mask of logical coordinates, the same paged or not
    int bias = 0;        // 1: elementwise bias [b][h][i][j] (logical positions), 2: ALiBi slopes [b][h]
    std::string name;
};

std::string case_name(const Case &c)
{
    static const char *masks[] = {"none", "tl", "br", "wtl", "wbr"};
    static const char *styles[] = {"contig", "vllm", "sglang"};
    std::string n = std::string(c.dt == CKT_BF16 ? "bf16" : "fp16") + "_d" + std::to_string(c.d) + "_dv" +
                    std::to_string(c.dv) + (c.group ? "_group" : "_batch") + "_b" + std::to_string(c.batch) + "_h" +
                    std::to_string(c.h) + "_" + std::to_string(c.hk) + "_sq" + fmha_test_list(c.sq) + "_sk" +
                    fmha_test_list(c.sk) + "_" + masks[c.mask] + "_" + styles[c.kv];
    if (c.kv != kContiguous)
        n += "_ps" + std::to_string(c.page_size) + (c.page_major ? "" : "_hmajor");
    n += c.splits < 0 ? "_noworkspace" : c.splits == 0 ? "_auto" : "_split" + std::to_string(c.splits);
    n += c.cbi ? "_cbi" : "";
    n += c.softcap != 0.0f ? "_softcap" : "";
    if (c.mask >= CKT_MASK_WINDOW_TOP_LEFT)
        n += "_w" + std::to_string(c.wl) + "_" + std::to_string(c.wr);
    n += c.sink ? "_sink" : "";
    n += c.p_drop > 0.0f ? "_drop" + std::to_string((int)(c.p_drop * 100)) : "";
    n += c.bias == 1 ? "_bias" : c.bias == 2 ? "_alibi" : "";
    return n;
}

int at(const std::vector<int> &v, int b) { return v[std::min<size_t>(b, v.size() - 1)]; }

// One call: host data, the kernel's device arguments, the reference's plain view.
struct KvRun {
    ckt_fmha_fwd_args plain; // host view: contiguous keys, for the reference
    ckt_fmha_fwd_args paged; // host view in the kernel's layout (tables on the host)
    ckt_fmha_fwd_args dev;   // the kernel's arguments
    std::vector<int32_t> start_q, len_k, start_k_plain, cbi, table, indptr, indices, last;
    std::vector<uint16_t> q, kp, vp, kc, vc, o; // kp/vp: plain keys; kc/vc: the cache (contiguous or pool)
    std::vector<float> lse, sink, slopes;
    std::vector<uint16_t> bias;
    size_t ws_bytes = 0;
    FmhaDeviceBuffers bufs;
};

// Builds the case: random Q and keys, the cache in its layout, host views.
void build(const Case &c, KvRun &r)
{
    const uint64_t seed = std::hash<std::string>()(c.name) & 0xffff;
    std::mt19937 rng((unsigned)seed);
    ckt_fmha_fwd_args &a = r.plain;
    memset(&a, 0, sizeof a);
    a.dtype = c.dt;
    a.batch = c.batch;
    a.nhead_q = c.h;
    a.nhead_k = c.hk;
    a.hdim_q = c.d;
    a.hdim_v = c.dv;
    a.mask = c.mask;
    a.window_left = c.wl;
    a.window_right = c.wr;
    a.softcap = c.softcap;
    a.group_mode = c.group;
    int64_t rows_q = 0;
    r.start_q.assign(1, 0);
    r.start_k_plain.assign(1, 0);
    for (int b = 0; b < c.batch; b++) {
        a.seqlen_q = std::max(a.seqlen_q, at(c.sq, b));
        a.seqlen_k = std::max(a.seqlen_k, at(c.sk, b));
        r.start_q.push_back(r.start_q.back() + at(c.sq, b));
        r.start_k_plain.push_back(r.start_k_plain.back() + at(c.sk, b));
        r.len_k.push_back(at(c.sk, b));
    }
    rows_q = c.group ? r.start_q.back() : a.seqlen_q;
    // Q and O [b][s][h][d] (group: packed rows), LSE [b][h][s]
    a.q_stride_s = (int64_t)c.h * c.d, a.q_stride_h = c.d, a.q_stride_b = c.group ? 0 : rows_q * a.q_stride_s;
    a.o_stride_s = (int64_t)c.h * c.dv, a.o_stride_h = c.dv, a.o_stride_b = c.group ? 0 : rows_q * a.o_stride_s;
    a.lse_stride_h = rows_q, a.lse_stride_b = c.group ? 0 : c.h * rows_q;
    if (c.group)
        a.seqstart_q = r.start_q.data();
    // plain keys for the reference: group mode packed (seqstart_k), batch mode [b][s][hk][d] + lengths
    const int64_t rows_k = c.group ? r.start_k_plain.back() : a.seqlen_k;
    a.k_stride_s = (int64_t)c.hk * c.d, a.k_stride_h = c.d, a.k_stride_b = c.group ? 0 : rows_k * a.k_stride_s;
    a.v_stride_s = (int64_t)c.hk * c.dv, a.v_stride_h = c.dv, a.v_stride_b = c.group ? 0 : rows_k * a.v_stride_s;
    if (c.group)
        a.seqstart_k = r.start_k_plain.data();
    else
        a.seqlen_k_ptr = r.len_k.data();

    r.q.assign(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_Q), 0);
    r.kp.assign(std::max<size_t>(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_K), 1), 0);
    r.vp.assign(std::max<size_t>(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_V), 1), 0);
    r.o.assign(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_O), 0x7b7b);
    r.lse.assign(ckt_fmha_fwd_elems(&a, CKT_FMHA_TENSOR_LSE), 1234.5f);
    ASSERT_EQ(ckt_fill(r.q.data(), c.dt, r.q.size(), ckt_init_uniform(-1, 1), seed), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(r.kp.data(), c.dt, r.kp.size(), ckt_init_uniform(-1, 1), seed + 1), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(r.vp.data(), c.dt, r.vp.size(), ckt_init_uniform(-1, 1), seed + 2), CKT_SUCCESS);
    a.q = r.q.data();
    a.k = r.kp.data();
    a.v = r.vp.data();
    if (c.sink) {
        r.sink.assign(c.h, 0.0f);
        ASSERT_EQ(ckt_fill(r.sink.data(), CKT_F32, r.sink.size(), ckt_init_uniform(-2, 4), seed + 3), CKT_SUCCESS);
        a.sink = r.sink.data();
    }
    if (c.p_drop > 0.0f) {
        a.p_drop = c.p_drop;
        a.drop_seed = 0xabcdef12345ull + seed;
        a.drop_offset = 99;
    }
    if (c.bias == 1) { // indexed by the logical key position, whatever the cache's layout
        a.bias_stride_s = a.seqlen_k + 1;
        a.bias_stride_h = (int64_t)a.seqlen_q * a.bias_stride_s;
        a.bias_stride_b = (int64_t)c.h * a.bias_stride_h;
        r.bias.assign((size_t)c.batch * a.bias_stride_b, 0);
        ASSERT_EQ(ckt_fill(r.bias.data(), c.dt, r.bias.size(), ckt_init_uniform(-2, 2), seed + 4), CKT_SUCCESS);
        a.bias = r.bias.data();
    } else if (c.bias == 2) {
        r.slopes.assign((size_t)c.batch * c.h, 0.0f);
        ASSERT_EQ(ckt_fill(r.slopes.data(), CKT_F32, r.slopes.size(), ckt_init_uniform(0, 0.1), seed + 5), CKT_SUCCESS);
        a.alibi_slopes = r.slopes.data();
        a.alibi_stride_b = c.h;
    }

    // the kernel's view: the same queries, the keys in the cache
    ckt_fmha_fwd_args &p = r.paged;
    p = a;
    p.seqstart_k = nullptr;
    p.seqlen_k_ptr = nullptr;
    const int cache_batch = c.batch + (c.cbi ? 1 : 0);
    if (c.cbi) { // entry b in cache row cbi[b]: a shuffled permutation of cache_batch rows
        std::vector<int32_t> perm(cache_batch);
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        r.cbi.assign(perm.begin(), perm.begin() + c.batch);
        p.cache_batch_idx = r.cbi.data();
        p.cache_batch = cache_batch;
    }
    auto plain_k = [&](int b, int hk, int j, int dd) { // K[b][hk][j][dd] of the plain view
        ckt_fmha_fwd_args &x = r.plain;
        const int64_t row = c.group ? r.start_k_plain[b] + j : j;
        return r.kp[(size_t)((c.group ? 0 : b * x.k_stride_b) + hk * x.k_stride_h + row * x.k_stride_s + dd)];
    };
    auto plain_v = [&](int b, int hk, int j, int dd) {
        ckt_fmha_fwd_args &x = r.plain;
        const int64_t row = c.group ? r.start_k_plain[b] + j : j;
        return r.vp[(size_t)((c.group ? 0 : b * x.v_stride_b) + hk * x.v_stride_h + row * x.v_stride_s + dd)];
    };
    if (c.kv == kContiguous) {
        // [cache_batch][cap][hk][d], capacity past the longest entry
        const int cap = a.seqlen_k + 5;
        p.k_stride_s = (int64_t)c.hk * c.d, p.k_stride_h = c.d, p.k_stride_b = cap * p.k_stride_s;
        p.v_stride_s = (int64_t)c.hk * c.dv, p.v_stride_h = c.dv, p.v_stride_b = cap * p.v_stride_s;
        ASSERT_FALSE(c.group) << "contiguous caches are batch mode here";
        p.seqlen_k_ptr = r.len_k.data();
        r.kc.assign((size_t)cache_batch * p.k_stride_b, 0x3c00);
        r.vc.assign((size_t)cache_batch * p.v_stride_b, 0x3c00);
        for (int b = 0; b < c.batch; b++) {
            const int cb = c.cbi ? r.cbi[b] : b;
            for (int hk = 0; hk < c.hk; hk++)
                for (int j = 0; j < at(c.sk, b); j++) {
                    for (int dd = 0; dd < c.d; dd++)
                        r.kc[(size_t)(cb * p.k_stride_b + hk * p.k_stride_h + j * p.k_stride_s + dd)] = plain_k(b, hk, j, dd);
                    for (int dd = 0; dd < c.dv; dd++)
                        r.vc[(size_t)(cb * p.v_stride_b + hk * p.v_stride_h + j * p.v_stride_s + dd)] = plain_v(b, hk, j, dd);
                }
        }
    } else {
        // a pool with every used page somewhere random and 3 spare pages
        const int ps = c.page_size;
        std::vector<int> npages(c.batch);
        int total = 0;
        for (int b = 0; b < c.batch; b++)
            total += npages[b] = (at(c.sk, b) + ps - 1) / ps;
        const int num_pages = total + 3;
        std::vector<int32_t> ids(num_pages);
        std::iota(ids.begin(), ids.end(), 0);
        std::shuffle(ids.begin(), ids.end(), rng);
        p.page_size = ps;
        p.num_pages = num_pages;
        if (c.page_major) { // [page][pos][hk][d]
            p.k_stride_h = c.d, p.k_stride_s = (int64_t)c.hk * c.d, p.k_stride_b = ps * p.k_stride_s;
            p.v_stride_h = c.dv, p.v_stride_s = (int64_t)c.hk * c.dv, p.v_stride_b = ps * p.v_stride_s;
        } else { // [page][hk][pos][d]
            p.k_stride_s = c.d, p.k_stride_h = (int64_t)ps * c.d, p.k_stride_b = c.hk * p.k_stride_h;
            p.v_stride_s = c.dv, p.v_stride_h = (int64_t)ps * c.dv, p.v_stride_b = c.hk * p.v_stride_h;
        }
        r.kc.assign((size_t)num_pages * p.k_stride_b, 0x3c00); // spare pages hold 1.0: a wrong page shows
        r.vc.assign((size_t)num_pages * p.v_stride_b, 0x3c00);
        int next = 0;
        int max_pages = 0;
        for (int b = 0; b < c.batch; b++)
            max_pages = std::max(max_pages, npages[b]);
        max_pages += 1; // unused table slots hold -1
        if (c.kv == kVllm) {
            r.table.assign((size_t)cache_batch * max_pages, -1);
            p.block_table = r.table.data();
            p.max_pages_per_seq = max_pages;
            p.seqlen_k_ptr = r.len_k.data();
        } else {
            r.indptr.assign(1, 0);
            p.kv_indptr = r.indptr.data();
        }
        for (int b = 0; b < c.batch; b++) {
            const int cb = c.cbi ? r.cbi[b] : b;
            for (int pg = 0; pg < npages[b]; pg++) {
                const int32_t id = ids[next++];
                if (c.kv == kVllm)
                    r.table[(size_t)cb * max_pages + pg] = id;
                else
                    r.indices.push_back(id);
                for (int pos = 0; pos < ps && pg * ps + pos < at(c.sk, b); pos++)
                    for (int hk = 0; hk < c.hk; hk++) {
                        const int j = pg * ps + pos;
                        for (int dd = 0; dd < c.d; dd++)
                            r.kc[(size_t)(id * p.k_stride_b + hk * p.k_stride_h + pos * p.k_stride_s + dd)] = plain_k(b, hk, j, dd);
                        for (int dd = 0; dd < c.dv; dd++)
                            r.vc[(size_t)(id * p.v_stride_b + hk * p.v_stride_h + pos * p.v_stride_s + dd)] = plain_v(b, hk, j, dd);
                    }
            }
            if (c.kv == kSglang) {
                r.indptr.push_back((int32_t)r.indices.size());
                r.last.push_back(npages[b] ? at(c.sk, b) - (npages[b] - 1) * ps : 0);
            }
        }
        if (c.kv == kSglang) {
            r.indices.push_back(0); // never empty
            p.kv_indptr = r.indptr.data();
            p.kv_indices = r.indices.data();
            p.kv_last_page_len = r.last.data();
        }
    }
    p.k = r.kc.data();
    p.v = r.vc.data();
    p.num_splits = c.splits < 0 ? 0 : c.splits;

    // device copies
    ckt_fmha_fwd_args &d = r.dev;
    d = p;
    auto dev32 = [&](const std::vector<int32_t> &v) {
        return v.empty() ? nullptr : (const int32_t *)r.bufs.dev(v.data(), v.size() * 4);
    };
    d.q = r.bufs.dev(r.q.data(), r.q.size() * 2);
    d.k = r.bufs.dev(r.kc.data(), r.kc.size() * 2);
    d.v = r.bufs.dev(r.vc.data(), r.vc.size() * 2);
    d.o = r.bufs.dev(r.o.data(), r.o.size() * 2);
    d.lse = (float *)r.bufs.dev(r.lse.data(), r.lse.size() * 4);
    d.sink = c.sink ? (const float *)r.bufs.dev(r.sink.data(), r.sink.size() * 4) : nullptr;
    d.bias = c.bias == 1 ? r.bufs.dev(r.bias.data(), r.bias.size() * 2) : nullptr;
    d.alibi_slopes = c.bias == 2 ? (const float *)r.bufs.dev(r.slopes.data(), r.slopes.size() * 4) : nullptr;
    d.seqstart_q = c.group ? dev32(r.start_q) : nullptr;
    d.seqlen_k_ptr = p.seqlen_k_ptr ? dev32(r.len_k) : nullptr;
    d.cache_batch_idx = p.cache_batch_idx ? dev32(r.cbi) : nullptr;
    d.block_table = p.block_table ? dev32(r.table) : nullptr;
    d.kv_indptr = p.kv_indptr ? dev32(r.indptr) : nullptr;
    d.kv_indices = p.kv_indices ? dev32(r.indices) : nullptr;
    d.kv_last_page_len = p.kv_last_page_len ? dev32(r.last) : nullptr;
    if (c.splits >= 0) {
        r.ws_bytes = ckt_fmha_fwd_workspace_bytes(&d);
        d.workspace = r.bufs.dev(nullptr, r.ws_bytes ? r.ws_bytes : 16);
        d.workspace_bytes = r.ws_bytes;
    }
}

ckt_status run_kv(KvRun &r)
{
    ckt_status s = ckt_fmha_fwd(&r.dev, nullptr);
    if (s != CKT_SUCCESS)
        return s;
    EXPECT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS) << ckt_last_error();
    EXPECT_EQ(ckt_rt_memcpy(r.o.data(), r.dev.o, r.o.size() * 2, CKT_D2H), CKT_SUCCESS);
    EXPECT_EQ(ckt_rt_memcpy(r.lse.data(), r.dev.lse, r.lse.size() * 4, CKT_D2H), CKT_SUCCESS);
    return CKT_SUCCESS;
}

void check_against_reference(const Case &c, KvRun &r)
{
    std::vector<float> o_ref(r.o.size(), 0.0f), lse_ref(r.lse.size(), 0.0f);
    ASSERT_EQ(ckt_ref_fmha_fwd(&r.plain, o_ref.data(), lse_ref.data()), CKT_SUCCESS) << ckt_last_error();
    // the reference through the cache's layout reads the same keys
    std::vector<float> o_ref2(r.o.size(), 0.0f), lse_ref2(r.lse.size(), 0.0f);
    ASSERT_EQ(ckt_ref_fmha_fwd(&r.paged, o_ref2.data(), lse_ref2.data()), CKT_SUCCESS) << ckt_last_error();
    EXPECT_TRUE(o_ref == o_ref2) << "the reference reads the cache differently from the plain keys";
    const double tol = c.dt == CKT_BF16 ? 1e-2 : 1e-3;
    ckt_compare_result ro, rl;
    ckt_status s = ckt_ref_fmha_compare(&ro, &rl, &r.plain, r.o.data(), r.lse.data(), o_ref.data(), lse_ref.data(),
                                        tol, tol);
    if (s != CKT_SUCCESS) {
        ckt_compare_print(stderr, "O", &ro);
        ckt_compare_print(stderr, "LSE", &rl);
    }
    EXPECT_EQ(s, CKT_SUCCESS) << ckt_last_error();
}

class KvCache : public ::testing::TestWithParam<Case> {};

TEST_P(KvCache, MatchesReference)
{
    const Case &c = GetParam();
    KvRun r;
    build(c, r);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(run_kv(r), CKT_SUCCESS) << ckt_last_error();
    check_against_reference(c, r);
    if (c.splits > 1) {
        EXPECT_GT(r.ws_bytes, 0u) << "a split call needs a workspace";
    }
}

std::vector<Case> cases()
{
    std::vector<Case> v;
    auto add = [&](Case c) {
        c.name = case_name(c);
        v.push_back(c);
    };
    // split-KV over a contiguous cache: counts, masks, decode widths
    for (int splits : {1, 2, 3, 5, 0, -1})
        for (ckt_fmha_mask m : {CKT_MASK_NONE, CKT_MASK_CAUSAL_BOTTOM_RIGHT}) {
            Case c;
            c.splits = splits;
            c.mask = m;
            add(c);
        }
    // many splits: more than the combine's split groups (256 threads / (d_v / 4) columns:
    // 16 at d_v 64, 8 at 128, 2 at 512), not a multiple of them, some splits empty (entry 1)
    for (int dv : {64, 128}) {
        Case c;
        c.d = c.dv = dv;
        c.splits = 37;
        c.sk = {2600, 700};
        c.sq = {dv == 64 ? 1 : 3};
        c.h = 4;
        c.hk = dv == 64 ? 1 : 2;
        c.mask = dv == 64 ? CKT_MASK_NONE : CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        add(c);
    }
    {
        Case c; // speculative decode: 4 queries, GQA 8/1, split
        c.sq = {4};
        c.h = 8;
        c.hk = 1;
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        c.splits = 3;
        c.dt = CKT_F16;
        add(c);
        c.sq = {16};
        c.splits = 0;
        c.cbi = 1;
        add(c);
        c.sq = {70}; // prefill-sized: several query tiles, split
        c.sk = {260, 100};
        c.splits = 2;
        c.mask = CKT_MASK_WINDOW_BOTTOM_RIGHT;
        c.wl = 50;
        c.wr = 3;
        c.softcap = 20.0f;
        add(c);
    }
    {
        Case c; // head dims 128 and 256, split
        c.d = c.dv = 128;
        c.splits = 4;
        c.sk = {200, 0};
        add(c);
        c.d = c.dv = 256;
        c.dt = CKT_F16;
        c.sk = {90, 33};
        c.splits = 2;
        add(c);
    }
    // decode (GQA packed: rows of g heads per block): group sizes, masks, modes
    {
        Case c;
        c.h = 6, c.hk = 2, c.sq = {5}, c.mask = CKT_MASK_CAUSAL_TOP_LEFT; // g 3, rows not a power of two
        add(c);
        c.h = 2, c.hk = 2, c.sq = {9}, c.mask = CKT_MASK_WINDOW_BOTTOM_RIGHT, c.wl = 30, c.wr = 0; // g 1
        c.softcap = 15.0f;
        add(c);
        c = Case();
        c.h = 16, c.hk = 4, c.sq = {16}, c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT, c.splits = 0; // g 4, 64 rows
        c.d = c.dv = 128;
        add(c);
        c = Case();
        c.group = 1, c.batch = 3, c.sq = {1, 3, 0}, c.sk = {90, 17, 40}, c.kv = kVllm, c.page_size = 16;
        c.h = 8, c.hk = 2, c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT, c.splits = 2;
        add(c);
        c.d = c.dv = 256, c.dt = CKT_F16, c.splits = 1, c.kv = kSglang, c.page_size = 5;
        add(c);
    }
    // paged, vLLM tables: page sizes, layouts, with and without splits
    for (int ps : {1, 3, 16, 48, 64, 128, 256}) {
        Case c;
        c.kv = kVllm;
        c.page_size = ps;
        c.sq = {5};
        c.sk = {200, 33};
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        c.splits = ps == 16 || ps == 48 ? 3 : 1;
        c.page_major = ps != 64;
        c.cbi = ps == 3;
        add(c);
    }
    // decode over pages that cut its key tiles, more tiles than the ring
    // has stages: each tile's row table written a step ahead (ckt/fmha/page.h),
    // the tables of ragged last tiles, two entries
    for (int ps : {1, 3, 100}) {
        Case c;
        c.kv = ps == 3 ? kSglang : kVllm;
        c.page_size = ps;
        c.h = 8, c.hk = 2;
        c.d = c.dv = 128;
        c.sq = {1, 2};
        c.sk = {1000, 517};
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        c.splits = ps == 100 ? 2 : 1;
        c.cbi = ps == 1;
        add(c);
    }
    {
        Case c; // K and V of different widths walk their pages apart (192 / 128)
        c.kv = kVllm, c.page_size = 16, c.d = 192, c.dv = 128, c.sq = {40}, c.sk = {150, 61};
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        add(c);
    }
    // prefill over pages: several whole key tiles and a ragged last one, so
    // that with CKT_FMHA_SM90=1 the Hopper kernel copies page runs by TMA
    // (tiles inside the entry) and by cp.async (the rest); page sizes below,
    // equal to, above and not dividing its key tile (128 at d <= 128)
    for (int ps : {8, 16, 48, 128, 256, 320}) {
        for (int d : {64, 128}) {
            Case c;
            c.kv = ps == 48 || ps == 256 ? kSglang : kVllm;
            c.page_size = ps;
            c.d = c.dv = d;
            c.batch = 2;
            c.sq = {130, 61};
            c.sk = {419, 256};
            c.h = 4, c.hk = 2;
            c.mask = d == 64 ? CKT_MASK_CAUSAL_BOTTOM_RIGHT : CKT_MASK_NONE;
            c.page_major = ps != 16;
            c.dt = ps == 128 ? CKT_F16 : CKT_BF16;
            c.cbi = ps == 320 && c.kv == kVllm;
            add(c);
        }
    }
    {
        // a long entry over pages of 32: 129 key tiles of 4 page runs, five
        // fills of the Hopper producer's two buffers of 128 page ids, each
        // buffer refilled (ckt/fmha/fwd_sm90_body.h, paged TMA)
        Case c;
        c.kv = kVllm, c.page_size = 32, c.batch = 1, c.h = 2, c.hk = 1, c.sq = {70}, c.sk = {16500};
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        add(c);
    }
    {
        Case c; // contiguous cache through cache_batch_idx, per-entry key counts
        c.sq = {129};
        c.sk = {300, 128};
        c.d = c.dv = 128;
        c.cbi = 1;
        c.mask = CKT_MASK_WINDOW_BOTTOM_RIGHT, c.wl = 150, c.wr = 20;
        add(c);
        c.group = 1, c.batch = 3, c.sq = {200, 0, 70}, c.sk = {256, 9, 333}, c.kv = kVllm, c.page_size = 64; // prefill
        c.cbi = 0, c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT, c.wl = c.wr = 0, c.softcap = 10.0f;
        add(c);
    }
    // paged, sglang tables
    for (int ps : {1, 16, 100}) {
        Case c;
        c.kv = kSglang;
        c.page_size = ps;
        c.sq = {3};
        c.sk = {150, 1, 64};
        c.batch = 3;
        c.splits = ps == 16 ? 2 : 1;
        c.dt = CKT_F16;
        add(c);
    }
    // batch prefill: group-mode queries over a paged cache, causal bottom-right
    for (KvStyle st : {kVllm, kSglang}) {
        Case c;
        c.kv = st;
        c.group = 1;
        c.batch = 3;
        c.sq = {37, 0, 64};
        c.sk = {150, 20, 64};
        c.page_size = st == kVllm ? 16 : 48;
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        c.h = 4;
        c.hk = 1;
        add(c);
        c.splits = 2;
        c.d = c.dv = 128;
        add(c);
    }
    // attention sinks: added once, in split-KV's combine or in the unsplit
    // epilogue; decode (GQA-packed rows, a sink per head), paged, batch prefill
    for (int splits : {1, 3, 0}) {
        Case c;
        c.sink = 1;
        c.splits = splits;
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        c.h = 8;
        c.hk = 2;
        c.sq = {splits == 3 ? 16 : 4};
        c.sk = {300, 0}; // entry 1: no key, only the sink
        add(c);
    }
    {
        Case c;
        c.sink = 1;
        c.sq = {70}, c.sk = {260, 100}, c.splits = 2, c.h = 4, c.hk = 1; // several query tiles, split
        c.mask = CKT_MASK_WINDOW_BOTTOM_RIGHT, c.wl = 50, c.wr = 3, c.softcap = 20.0f, c.dt = CKT_F16;
        add(c);
        c = Case();
        c.sink = 1;
        c.kv = kVllm, c.page_size = 16, c.sq = {5}, c.sk = {200, 33}, c.splits = 3, c.cbi = 1;
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT, c.d = c.dv = 128;
        add(c);
        c = Case();
        c.sink = 1;
        c.group = 1, c.batch = 3, c.sq = {37, 0, 9}, c.sk = {150, 20, 64}, c.kv = kSglang, c.page_size = 48;
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT, c.h = 4, c.hk = 2, c.splits = 2;
        add(c);
    }
    // dropout over the cache: split-KV (explicit and automatic counts; each
    // split drops its own keys), decode (GQA-packed rows: each row its own
    // head's mask), paged (vLLM, sglang: logical key indices), batch prefill
    for (int splits : {1, 3, 0}) {
        Case c;
        c.p_drop = 0.3f;
        c.splits = splits;
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        c.h = 8;
        c.hk = 2;
        c.sq = {splits == 3 ? 16 : 4};
        c.sk = {300, 0};
        add(c);
    }
    {
        Case c;
        c.p_drop = 0.5f;
        c.kv = kVllm, c.page_size = 16, c.sq = {5}, c.sk = {333, 150}, c.splits = 2, c.sink = 1;
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
        add(c);
        c = Case();
        c.p_drop = 0.2f;
        c.kv = kVllm, c.page_size = 7, c.page_major = 0, c.sq = {33}, c.sk = {100, 260}, c.dt = CKT_F16, c.cbi = 1;
        c.mask = CKT_MASK_WINDOW_BOTTOM_RIGHT, c.wl = 50, c.wr = 3;
        add(c);
        c = Case();
        c.p_drop = 0.4f;
        c.group = 1, c.batch = 3, c.sq = {37, 0, 9}, c.sk = {150, 20, 64}, c.kv = kSglang, c.page_size = 48;
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT, c.h = 4, c.hk = 2, c.splits = 2;
        add(c);
        // decode at d128 and d256: warps of 32 and 16 keys of each tile
        // (CKT_FMHA_KSPLIT), each its own 16-key Philox groups
        for (int d : {128, 256}) {
            c = Case();
            c.p_drop = 0.3f;
            c.d = c.dv = d, c.sq = {3}, c.sk = {200, 71}, c.h = 4, c.hk = 2, c.splits = 2;
            c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
            add(c);
        }
    }
    // bias and ALiBi over the cache paths: split-KV (explicit, automatic),
    // decode's GQA-packed rows, paged (vLLM, sglang), cache_batch_idx, batch prefill
    for (int kind : {1, 2}) {
        for (int splits : {1, 3, 0}) {
            Case c;
            c.bias = kind;
            c.splits = splits;
            c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
            c.h = 8;
            c.hk = 2;
            c.sq = {splits == 3 ? 16 : 4};
            c.sk = {300, 0};
            add(c);
        }
        Case c;
        c.bias = kind;
        c.sq = {70}, c.sk = {260, 100}, c.splits = 2, c.h = 4, c.hk = 1; // several query tiles, split
        c.mask = CKT_MASK_WINDOW_BOTTOM_RIGHT, c.wl = 50, c.wr = 3, c.dt = CKT_F16;
        add(c);
        c = Case();
        c.bias = kind;
        c.kv = kVllm, c.page_size = 16, c.sq = {5}, c.sk = {200, 33}, c.splits = 3, c.cbi = 1;
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT, c.d = c.dv = 128;
        add(c);
        c = Case();
        c.bias = kind;
        c.kv = kVllm, c.page_size = 7, c.sq = {3}, c.sk = {90, 41}, c.splits = 1; // pages cut key tiles
        add(c);
        c = Case();
        c.bias = kind;
        c.group = 1, c.batch = 3, c.sq = {37, 0, 9}, c.sk = {150, 20, 64}, c.kv = kSglang, c.page_size = 48;
        c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT, c.h = 4, c.hk = 2, c.splits = 2;
        add(c);
    }
    return v;
}

INSTANTIATE_TEST_SUITE_P(Matrix, KvCache, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &i) { return i.param.name; });

// An emulator block order (schedule, seed) and thread count each
// (fmha_test_util.h); on a GPU the runs repeat under the hardware's own order.
#if defined(CKT_BACKEND_CPU)
const FmhaEmuSchedule kScheds[] = {{0, 0, "1"}, {1, 0, "3"}, {2, 7, "2"}};
#else
const FmhaEmuSchedule kScheds[] = {{0, 0, ""}, {0, 0, ""}, {0, 0, ""}};
#endif

// Split-KV's result: the same bytes run to run, whatever the block order or
// thread count; and within fp32 rounding of the unsplit forward.
TEST(KvCacheSplit, SameBytesUnderOtherSchedulesAndCloseToUnsplit)
{
    Case c;
    c.kv = kVllm;
    c.page_size = 16;
    c.sq = {7};
    c.sk = {1900, 150};
    c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    c.splits = 19; // more than the combine's 16 split groups at d_v 64: both of its passes
    c.sink = 1;    // the combine adds the sinks: in its fixed order too
    c.name = case_name(c);
    std::vector<uint16_t> first_o;
    std::vector<float> first_lse;
    int k = 0;
    for (const FmhaEmuSchedule &s : kScheds) {
        fmha_emu_schedule_set(s);
        KvRun r;
        build(c, r);
        ASSERT_FALSE(HasFatalFailure());
        ASSERT_EQ(run_kv(r), CKT_SUCCESS) << ckt_last_error();
        if (k++ == 0) {
            first_o = r.o;
            first_lse = r.lse;
        } else {
            EXPECT_TRUE(first_o == r.o) << "O differs under schedule " << k;
            EXPECT_EQ(memcmp(first_lse.data(), r.lse.data(), r.lse.size() * 4), 0) << "LSE differs under schedule " << k;
        }
    }
    fmha_emu_schedule_reset();
    Case u = c;
    u.splits = 1;
    u.name = c.name; // same data
    KvRun r;
    build(u, r);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(run_kv(r), CKT_SUCCESS) << ckt_last_error();
    int o_diff = 0;
    for (size_t i = 0; i < r.o.size(); i++) {
        const float x = ckt_load_f32(r.o.data(), c.dt, i), y = ckt_load_f32(first_o.data(), c.dt, i);
        o_diff += std::fabs(x - y) > 1e-2f * (1.0f + std::fabs(y)); // one bf16 rounding step
    }
    EXPECT_EQ(o_diff, 0) << "split and unsplit O differ beyond rounding";
    for (size_t i = 0; i < r.lse.size(); i++)
        EXPECT_NEAR(r.lse[i], first_lse[i], 1e-5 * (1.0 + std::fabs(first_lse[i]))) << "LSE row " << i;
}

// The automatic count: 1 when the grid fills the device, more for a decode
// grid, never more than the key tiles, and it beats neither nothing nor the
// maximum by construction (measured in bench/, docs/fmha_inference.md).
// The model: waves x (key tiles a split + CKT_FMHA_SPLIT_BLOCK_COST).
TEST(KvCacheSplit, Heuristic)
{
    ASSERT_EQ(CKT_FMHA_SPLIT_BLOCK_COST, 2); // the cases below are worked out for it
    EXPECT_EQ(ckt_fmha_splitkv_heuristic(10000, 264, 64, 128), 1);  // prefill: full grid
    EXPECT_EQ(ckt_fmha_splitkv_heuristic(32, 264, 1, 128), 1);      // one key tile
    // decode b1 h32, 64k keys: 8 splits, one wave of 256 blocks (1 x 130)
    // against 16 (2 waves x 66) or 33 (4 x 34)
    EXPECT_EQ(ckt_fmha_splitkv_heuristic(32, 264, 1024, 128), 8);
    EXPECT_LE(ckt_fmha_splitkv_heuristic(8, 264, 3, 128), 3);
    // 8 tiles on 132 slots (32/8 heads, batch 1, on H200), 512 key tiles:
    // 16 splits fill the wave with 128 blocks; 14-15 (a wave 85-91% full,
    // the old rule's pick) make each split longer (37 or 35 tiles vs 32)
    EXPECT_EQ(ckt_fmha_splitkv_heuristic(8, 132, 512, 128), 16);
    // 8 tiles on 396 slots, 64 key tiles: 32 to 49 splits all give 2 tiles a
    // split in one wave: the smallest wins
    EXPECT_EQ(ckt_fmha_splitkv_heuristic(8, 396, 64, 128), 32);
    // 1.3 waves unsplit (512 tiles, 396 slots): 2 waves x 66 unsplit, 3 x 34
    // at 2 splits, 4 x 24 at 3, 6 x 18 at 4
    EXPECT_EQ(ckt_fmha_splitkv_heuristic(512, 396, 64, 128), 3);
    // two waves or more: never; 1.92 waves: 2 x 66 unsplit against 4 x 34
    EXPECT_EQ(ckt_fmha_splitkv_heuristic(792, 396, 64, 128), 1);
    EXPECT_EQ(ckt_fmha_splitkv_heuristic(760, 396, 64, 128), 1);
    // never more than max_splits, the key tiles or the slots
    EXPECT_EQ(ckt_fmha_splitkv_heuristic(1, 132, 16384, 128), 128);
    EXPECT_EQ(ckt_fmha_splitkv_heuristic(1, 132, 20, 128), 20);
    EXPECT_EQ(ckt_fmha_splitkv_heuristic(1, 40, 16384, 128), 40);
    int first, count;
    ckt_fmha_split_range(10, 4, 3, &first, &count);
    EXPECT_EQ(first, 9);
    EXPECT_EQ(count, 1);
    ckt_fmha_split_range(2, 4, 3, &first, &count);
    EXPECT_EQ(count, 0);
    EXPECT_EQ(ckt_fmha_splitkv_workspace_bytes(1, 2, 4, 8, 64), 0u);
    EXPECT_EQ(ckt_fmha_splitkv_workspace_bytes(3, 2, 4, 8, 64), (size_t)3 * 2 * 4 * 8 * 4 * (64 + 1));
}

// A pool past 4 GB (K and V pages interleaved in one allocation) with the
// used pages at both ends. The emulator's "device" memory is host memory: the
// pool comes from calloc, whose untouched pages stay unbacked (sparse).
// A paged pool past 4 GB, the entries' pages at both ends of it: ps keys a
// page, per pages a table row, sq queries (1: the decode instance; 130 and
// pages of 64: with CKT_FMHA_SM90=1 the Hopper kernel's TMA copies of page
// runs at both ends), entry b's keys sk[b].
void pool_past_4gb(int ps, int per, int sq, const std::vector<int> &sk)
{
    const int hk = 1, h = 2, d = 64, batch = 2, cap = ps * per;
    const int64_t page_elems = (int64_t)2 * ps * hk * d; // K then V of one page
    const int64_t num_pages64 = ((int64_t)9 << 29) / (page_elems * 2) + 7; // 4.5 GiB
    ASSERT_LT(num_pages64, (int64_t)INT32_MAX);
    const int num_pages = (int)num_pages64;
    const size_t bytes = (size_t)num_pages64 * page_elems * 2;
    ASSERT_GT(bytes, (size_t)4 << 30);
#if defined(CKT_BACKEND_CPU)
    uint16_t *pool = (uint16_t *)calloc(1, bytes);
    ASSERT_NE(pool, nullptr) << "no 4.5 GiB of address space";
#else
    void *pv = nullptr;
    ASSERT_EQ(ckt_rt_malloc(&pv, bytes), CKT_SUCCESS) << ckt_last_error();
    uint16_t *pool = (uint16_t *)pv;
#endif
    // the pages in order 0, N - 1, 1, N - 2, ...: entry 0 starts at the
    // pool's first page and its second is the last
    std::vector<std::vector<int32_t>> ids(batch, std::vector<int32_t>(per));
    for (int i = 0; i < batch * per; i++)
        ids[i / per][i % per] = i % 2 ? num_pages - 1 - i / 2 : i / 2;
    std::vector<uint16_t> q((size_t)batch * sq * h * d), kp((size_t)batch * cap * d), vp((size_t)batch * cap * d);
    ASSERT_EQ(ckt_fill(q.data(), CKT_BF16, q.size(), ckt_init_uniform(-1, 1), 11), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(kp.data(), CKT_BF16, kp.size(), ckt_init_uniform(-1, 1), 12), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(vp.data(), CKT_BF16, vp.size(), ckt_init_uniform(-1, 1), 13), CKT_SUCCESS);
    std::vector<int32_t> table((size_t)batch * per), lens(sk.begin(), sk.end());
    std::vector<uint16_t> page((size_t)page_elems);
    for (int b = 0; b < batch; b++)
        for (int pg = 0; pg < per; pg++) {
            table[(size_t)b * per + pg] = ids[b][pg];
            std::fill(page.begin(), page.end(), 0);
            for (int pos = 0; pos < ps && pg * ps + pos < sk[b]; pos++)
                for (int dd = 0; dd < d; dd++) {
                    page[(size_t)pos * d + dd] = kp[((size_t)b * cap + pg * ps + pos) * d + dd];
                    page[(size_t)(ps + pos) * d + dd] = vp[((size_t)b * cap + pg * ps + pos) * d + dd];
                }
            ASSERT_EQ(ckt_rt_memcpy(pool + (int64_t)ids[b][pg] * page_elems, page.data(), page.size() * 2, CKT_H2D),
                      CKT_SUCCESS);
        }
    FmhaDeviceBuffers bufs;
    ckt_fmha_fwd_args a = CKT_ZERO_INIT;
    a.dtype = CKT_BF16;
    a.batch = batch, a.nhead_q = h, a.nhead_k = hk, a.hdim_q = a.hdim_v = d;
    a.seqlen_q = sq, a.seqlen_k = cap;
    a.mask = sq > 1 ? CKT_MASK_CAUSAL_BOTTOM_RIGHT : CKT_MASK_NONE;
    a.q_stride_s = h * d, a.q_stride_h = d, a.q_stride_b = (int64_t)sq * h * d;
    a.o_stride_s = h * d, a.o_stride_h = d, a.o_stride_b = (int64_t)sq * h * d;
    a.q = bufs.dev(q.data(), q.size() * 2);
    std::vector<uint16_t> o(q.size(), 0);
    a.o = bufs.dev(nullptr, o.size() * 2);
    a.page_size = ps, a.num_pages = num_pages;
    a.k = pool, a.v = pool + ps * hk * d;
    a.k_stride_b = a.v_stride_b = page_elems, a.k_stride_s = a.v_stride_s = d, a.k_stride_h = a.v_stride_h = ps * d;
    a.block_table = (const int32_t *)bufs.dev(table.data(), table.size() * 4);
    a.max_pages_per_seq = per;
    a.seqlen_k_ptr = (const int32_t *)bufs.dev(lens.data(), lens.size() * 4);
    ASSERT_EQ(ckt_fmha_fwd(&a, nullptr), CKT_SUCCESS) << ckt_last_error();
    ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(o.data(), a.o, o.size() * 2, CKT_D2H), CKT_SUCCESS);
    // reference on the plain keys [b][48][1][d]
    ckt_fmha_fwd_args p = a;
    p.page_size = 0, p.num_pages = 0, p.block_table = nullptr, p.max_pages_per_seq = 0;
    p.q = q.data(), p.k = kp.data(), p.v = vp.data(), p.seqlen_k_ptr = lens.data();
    p.k_stride_s = p.v_stride_s = d, p.k_stride_h = p.v_stride_h = d, p.k_stride_b = p.v_stride_b = (int64_t)cap * d;
    std::vector<float> o_ref(o.size(), 0.0f);
    ASSERT_EQ(ckt_ref_fmha_fwd(&p, o_ref.data(), nullptr), CKT_SUCCESS) << ckt_last_error();
    ckt_compare_result ro, rl;
    EXPECT_EQ(ckt_ref_fmha_compare(&ro, &rl, &p, o.data(), nullptr, o_ref.data(), nullptr, 1e-2, 1e-2), CKT_SUCCESS);
#if defined(CKT_BACKEND_CPU)
    free(pool);
#else
    ckt_rt_free(pool);
#endif
}

// Paged prefill's page ids staged in shared memory by one producer warp and
// handed to another (ckt/fmha/fwd_sm90_body.h, with CKT_FMHA_SM90=1): the
// same bytes whatever the block order or thread count, the buffers refilled
// (260 page runs, three fills)
TEST(KvCachePaged, PrefillSameBytesUnderOtherSchedules)
{
    Case c;
    c.kv = kVllm, c.page_size = 32, c.batch = 1, c.h = 2, c.hk = 1, c.sq = {70}, c.sk = {8300};
    c.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    c.name = case_name(c);
    std::vector<uint16_t> first_o;
    int k = 0;
    for (const FmhaEmuSchedule &s : kScheds) {
        fmha_emu_schedule_set(s);
        KvRun r;
        build(c, r);
        ASSERT_FALSE(HasFatalFailure());
        ASSERT_EQ(run_kv(r), CKT_SUCCESS) << ckt_last_error();
        check_against_reference(c, r);
        if (k++ == 0)
            first_o = r.o;
        else
            EXPECT_TRUE(first_o == r.o) << "O differs under schedule " << k;
    }
    fmha_emu_schedule_reset();
}

TEST(KvCachePaged, PoolPast4GB)
{
#if defined(CKT_ASAN_BUILD)
    GTEST_SKIP() << "ASan shadows the whole allocation";
#endif
    pool_past_4gb(16, 3, 1, {40, 33});
}

TEST(KvCachePaged, PoolPast4GBPrefill)
{
#if defined(CKT_ASAN_BUILD)
    GTEST_SKIP() << "ASan shadows the whole allocation";
#endif
    pool_past_4gb(64, 4, 130, {200, 150});
}

// Append-KV into a paged cache (vLLM table or sglang-style tables, rotary on
// K and Q), then the forward over the same pages: the pool against the
// append's reference on a host copy, every byte outside the written rows
// untouched, and the attention against the forward's reference over the
// reference's pool. sglang's tables describe the cache after the append (the
// forward takes the same arrays); their pages are the vLLM rows' first ones.
struct PagedAppend {
    int page_size, rd, inter, cbi, sgl;
};

class KvCachePagedAppend : public ::testing::TestWithParam<PagedAppend> {};

TEST_P(KvCachePagedAppend, WritesThePagesThenAttends)
{
    const PagedAppend &pa = GetParam();
    const ckt_dtype dt = CKT_BF16;
    const int B = 3, H = 4, HK = 2, D = 64, S_NEW = 5, PS = pa.page_size;
    const std::vector<int32_t> len = {0, 17, 40};
    const int max_pages = (40 + S_NEW + PS - 1) / PS + 1, cache_batch = B + (pa.cbi ? 1 : 0);
    const int num_pages = cache_batch * max_pages + 2;
    std::mt19937 rng(7u + (unsigned)PS);
    std::vector<int32_t> ids(num_pages), table((size_t)cache_batch * max_pages), cbi(B);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    for (size_t i = 0; i < table.size(); i++)
        table[i] = ids[i];
    for (int b = 0; b < B; b++)
        cbi[b] = pa.cbi ? B - b : b;
    // sglang: entry b's pages after the append, len_b + S_NEW keys
    std::vector<int32_t> indptr(B + 1, 0), indices, last(B);
    for (int b = 0; b < B; b++) {
        const int n = (len[b] + S_NEW + PS - 1) / PS;
        for (int p = 0; p < n; p++)
            indices.push_back(table[(size_t)b * max_pages + p]);
        indptr[b + 1] = indptr[b] + n;
        last[b] = len[b] + S_NEW - (n - 1) * PS;
    }
    // pool [page][pos][hk][d], all filled (old tokens and garbage alike)
    const int64_t ss = (int64_t)HK * D, sp = PS * ss;
    std::vector<uint16_t> kc((size_t)num_pages * sp), vc(kc.size()), q((size_t)B * S_NEW * H * D);
    std::vector<uint16_t> kn((size_t)B * S_NEW * HK * D), vn(kn.size());
    ASSERT_EQ(ckt_fill(kc.data(), dt, kc.size(), ckt_init_uniform(-1, 1), 1), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(vc.data(), dt, vc.size(), ckt_init_uniform(-1, 1), 2), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(q.data(), dt, q.size(), ckt_init_uniform(-1, 1), 3), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(kn.data(), dt, kn.size(), ckt_init_uniform(-1, 1), 4), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(vn.data(), dt, vn.size(), ckt_init_uniform(-1, 1), 5), CKT_SUCCESS);
    const int max_pos = 64;
    std::vector<float> cs((size_t)max_pos * std::max(pa.rd / 2, 1)), sn(cs.size());
    for (int p = 0; p < max_pos; p++)
        for (int u = 0; u < pa.rd / 2; u++) {
            const double th = p * pow(10000.0, -2.0 * u / std::max(pa.rd, 1));
            cs[(size_t)p * (pa.rd / 2) + u] = (float)cos(th);
            sn[(size_t)p * (pa.rd / 2) + u] = (float)sin(th);
        }
    ckt_fmha_appendkv_args a = CKT_ZERO_INIT;
    a.dtype = dt, a.batch = B, a.nhead_q = H, a.nhead_k = HK, a.hdim_q = a.hdim_v = D;
    a.seqlen_q = S_NEW, a.seqlen_knew = S_NEW, a.seqlen_k = 40;
    a.q_stride_s = (int64_t)H * D, a.q_stride_h = D, a.q_stride_b = S_NEW * a.q_stride_s;
    a.knew_stride_s = a.vnew_stride_s = ss, a.knew_stride_h = a.vnew_stride_h = D;
    a.knew_stride_b = a.vnew_stride_b = S_NEW * ss;
    a.k_stride_b = a.v_stride_b = sp, a.k_stride_s = a.v_stride_s = ss, a.k_stride_h = a.v_stride_h = D;
    a.page_size = PS, a.num_pages = num_pages, a.max_pages_per_seq = max_pages;
    a.cache_batch = cache_batch;
    a.rotary_dim = pa.rd, a.rotary_interleaved = pa.inter, a.rotary_max_pos = max_pos;
    // the reference on host copies
    std::vector<uint16_t> kc_ref = kc, vc_ref = vc, q_ref = q;
    ckt_fmha_appendkv_args h = a;
    h.q = q_ref.data(), h.k_new = kn.data(), h.v_new = vn.data(), h.k_cache = kc_ref.data(), h.v_cache = vc_ref.data();
    h.block_table = table.data(), h.seqlen_k_ptr = len.data(), h.cache_batch_idx = pa.cbi ? cbi.data() : nullptr;
    if (pa.sgl) {
        h.block_table = nullptr, h.seqlen_k_ptr = nullptr, h.max_pages_per_seq = 0;
        h.kv_indptr = indptr.data(), h.kv_indices = indices.data(), h.kv_last_page_len = last.data();
    }
    h.rotary_cos = pa.rd ? cs.data() : nullptr, h.rotary_sin = pa.rd ? sn.data() : nullptr;
    ASSERT_EQ(ckt_ref_fmha_appendkv(&h), CKT_SUCCESS) << ckt_last_error();
    // the kernel
    FmhaDeviceBuffers bufs;
    ckt_fmha_appendkv_args d = h;
    d.q = bufs.dev(q.data(), q.size() * 2);
    d.k_new = bufs.dev(kn.data(), kn.size() * 2), d.v_new = bufs.dev(vn.data(), vn.size() * 2);
    d.k_cache = bufs.dev(kc.data(), kc.size() * 2), d.v_cache = bufs.dev(vc.data(), vc.size() * 2);
    d.block_table = pa.sgl ? nullptr : (const int32_t *)bufs.dev(table.data(), table.size() * 4);
    d.seqlen_k_ptr = pa.sgl ? nullptr : (const int32_t *)bufs.dev(len.data(), len.size() * 4);
    if (pa.sgl) {
        d.kv_indptr = (const int32_t *)bufs.dev(indptr.data(), indptr.size() * 4);
        d.kv_indices = (const int32_t *)bufs.dev(indices.data(), indices.size() * 4);
        d.kv_last_page_len = (const int32_t *)bufs.dev(last.data(), last.size() * 4);
    }
    d.cache_batch_idx = pa.cbi ? (const int32_t *)bufs.dev(cbi.data(), cbi.size() * 4) : nullptr;
    d.rotary_cos = pa.rd ? (const float *)bufs.dev(cs.data(), cs.size() * 4) : nullptr;
    d.rotary_sin = pa.rd ? (const float *)bufs.dev(sn.data(), sn.size() * 4) : nullptr;
    ASSERT_EQ(ckt_fmha_appendkv(&d, nullptr), CKT_SUCCESS) << ckt_last_error();
    ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS);
    std::vector<uint16_t> kc_got(kc.size()), vc_got(vc.size()), q_got(q.size());
    ASSERT_EQ(ckt_rt_memcpy(kc_got.data(), d.k_cache, kc.size() * 2, CKT_D2H), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(vc_got.data(), d.v_cache, vc.size() * 2, CKT_D2H), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(q_got.data(), d.q, q.size() * 2, CKT_D2H), CKT_SUCCESS);
    size_t k_diff = 0, v_diff = 0, q_diff = 0, written = 0;
    for (size_t i = 0; i < kc.size(); i++) {
        const float x = ckt_load_f32(kc_got.data(), dt, i), y = ckt_load_f32(kc_ref.data(), dt, i);
        k_diff += std::fabs(x - y) > 1e-2f * (1.0f + std::fabs(y)); // one bf16 rounding of the rotation
        v_diff += vc_got[i] != vc_ref[i];                            // a copy: exact
        written += kc_ref[i] != kc[i];
    }
    for (size_t i = 0; i < q.size(); i++)
        q_diff += std::fabs(ckt_load_f32(q_got.data(), dt, i) - ckt_load_f32(q_ref.data(), dt, i)) >
                  1e-2f * (1.0f + std::fabs(ckt_load_f32(q_ref.data(), dt, i)));
    EXPECT_EQ(k_diff, 0u);
    EXPECT_EQ(v_diff, 0u);
    EXPECT_EQ(q_diff, 0u);
    EXPECT_GT(written, (size_t)B * S_NEW * HK * D / 2) << "the append wrote (almost) nothing";
    // attention over the updated pages: entry b sees len_b + S_NEW keys, its queries the last S_NEW
    std::vector<int32_t> lk(B);
    for (int b = 0; b < B; b++)
        lk[b] = len[b] + S_NEW;
    ckt_fmha_fwd_args f = CKT_ZERO_INIT;
    f.dtype = dt, f.batch = B, f.nhead_q = H, f.nhead_k = HK, f.hdim_q = f.hdim_v = D;
    f.seqlen_q = S_NEW, f.seqlen_k = 40 + S_NEW, f.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    f.q_stride_b = a.q_stride_b, f.q_stride_h = a.q_stride_h, f.q_stride_s = a.q_stride_s;
    f.o_stride_b = a.q_stride_b, f.o_stride_h = a.q_stride_h, f.o_stride_s = a.q_stride_s;
    f.k_stride_b = f.v_stride_b = sp, f.k_stride_s = f.v_stride_s = ss, f.k_stride_h = f.v_stride_h = D;
    f.page_size = PS, f.num_pages = num_pages, f.max_pages_per_seq = max_pages, f.cache_batch = cache_batch;
    ckt_fmha_fwd_args fh = f;
    fh.q = q_ref.data(), fh.k = kc_ref.data(), fh.v = vc_ref.data(), fh.block_table = table.data();
    fh.seqlen_k_ptr = lk.data(), fh.cache_batch_idx = pa.cbi ? cbi.data() : nullptr;
    if (pa.sgl) { // the append's tables, unchanged
        fh.block_table = nullptr, fh.seqlen_k_ptr = nullptr, fh.max_pages_per_seq = 0;
        fh.kv_indptr = indptr.data(), fh.kv_indices = indices.data(), fh.kv_last_page_len = last.data();
    }
    std::vector<float> o_ref(q.size(), 0.0f);
    ASSERT_EQ(ckt_ref_fmha_fwd(&fh, o_ref.data(), nullptr), CKT_SUCCESS) << ckt_last_error();
    ckt_fmha_fwd_args fd = f;
    fd.q = d.q, fd.k = d.k_cache, fd.v = d.v_cache, fd.block_table = d.block_table, fd.cache_batch_idx = d.cache_batch_idx;
    fd.seqlen_k_ptr = pa.sgl ? nullptr : (const int32_t *)bufs.dev(lk.data(), lk.size() * 4);
    fd.kv_indptr = d.kv_indptr, fd.kv_indices = d.kv_indices, fd.kv_last_page_len = d.kv_last_page_len;
    fd.max_pages_per_seq = fh.max_pages_per_seq;
    fd.o = bufs.dev(nullptr, q.size() * 2);
    ASSERT_EQ(ckt_fmha_fwd(&fd, nullptr), CKT_SUCCESS) << ckt_last_error();
    ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS);
    std::vector<uint16_t> o(q.size());
    ASSERT_EQ(ckt_rt_memcpy(o.data(), fd.o, o.size() * 2, CKT_D2H), CKT_SUCCESS);
    ckt_compare_result ro;
    EXPECT_EQ(ckt_ref_fmha_compare(&ro, nullptr, &fh, o.data(), nullptr, o_ref.data(), nullptr, 1e-2, 1e-2), CKT_SUCCESS)
        << ckt_last_error();
}

INSTANTIATE_TEST_SUITE_P(Pages, KvCachePagedAppend,
                         ::testing::Values(PagedAppend{1, 0, 0, 0, 0}, PagedAppend{16, 64, 1, 1, 0},
                                           PagedAppend{16, 32, 0, 0, 0}, PagedAppend{48, 16, 0, 1, 0},
                                           PagedAppend{3, 64, 0, 0, 0}, PagedAppend{1, 64, 1, 0, 1},
                                           PagedAppend{3, 32, 0, 0, 1}, PagedAppend{16, 0, 0, 0, 1}),
                         [](const ::testing::TestParamInfo<PagedAppend> &i) {
                             return "ps" + std::to_string(i.param.page_size) + "_rd" + std::to_string(i.param.rd) +
                                    (i.param.inter ? "_inter" : "") + (i.param.cbi ? "_cbi" : "") +
                                    (i.param.sgl ? "_sglang" : "");
                         });

// Bad arguments: a status naming the argument, nothing launched.
TEST(KvCacheValidate, Errors)
{
    Case c;
    c.kv = kVllm;
    c.page_size = 16;
    c.sq = {2};
    c.sk = {40, 20};
    c.name = case_name(c);
    auto expect_fail = [&](const char *what, std::function<void(KvRun &)> edit, const char *needle) {
        KvRun r;
        build(c, r);
        ASSERT_FALSE(HasFatalFailure());
        edit(r);
        EXPECT_NE(ckt_fmha_fwd(&r.dev, nullptr), CKT_SUCCESS) << what;
        EXPECT_NE(strstr(ckt_last_error(), needle), nullptr) << what << ": " << ckt_last_error();
    };
    expect_fail("no table", [](KvRun &r) { r.dev.block_table = nullptr; }, "block_table");
    expect_fail("negative page size", [](KvRun &r) { r.dev.page_size = -2; }, "page_size");
    expect_fail("no pool size", [](KvRun &r) { r.dev.num_pages = 0; }, "num_pages");
    expect_fail("no table row length", [](KvRun &r) { r.dev.max_pages_per_seq = 0; }, "max_pages_per_seq");
    expect_fail("both styles", [](KvRun &r) { r.dev.kv_indptr = r.dev.block_table; }, "block_table");
    expect_fail("too many splits", [](KvRun &r) { r.dev.num_splits = CKT_FMHA_MAX_SPLITS + 1; }, "num_splits");
    expect_fail("split without workspace", [](KvRun &r) { r.dev.num_splits = 2; r.dev.workspace = nullptr; }, "workspace");
    expect_fail("small workspace", [](KvRun &r) { r.dev.num_splits = 2; r.dev.workspace_bytes = 8; }, "workspace_bytes");
    expect_fail("table without paging", [](KvRun &r) { r.dev.page_size = 0; }, "block_table");
#if defined(CKT_BACKEND_CPU) // the tables are readable on the host
    expect_fail("bad page id", [](KvRun &r) { ((int32_t *)r.dev.block_table)[1] = 1 << 20; }, "block_table: [0][1]");
    expect_fail("too long", [](KvRun &r) { ((int32_t *)r.dev.seqlen_k_ptr)[0] = 41; }, "seqlen_k_ptr");
    expect_fail("bad cache row", [](KvRun &r) {
        static int32_t cbi[2] = {0, 5};
        r.dev.cache_batch_idx = (const int32_t *)r.bufs.dev(cbi, sizeof cbi);
    }, "cache_batch_idx");
#endif
}

// ckt/fmha/kv.h on the host: the one formula for an entry's keys and an
// append's rows, shared by the kernels, the references and validation.
TEST(KvResolve, EntriesAndAppendRows)
{
    // sglang: entry 0 three pages, last holds 2 rows; entry 1 none; entry 2
    // 2^21 pages of 2048 rows (2^32 keys: bounded by 2^31 - 1, 64-bit count)
    static int32_t indptr[4] = {0, 3, 3, 3 + (1 << 21)};
    static int32_t indices[3] = {7, 1, 4};
    static int32_t last[3] = {2, 5, 2048};
    ckt_fmha_paging p = ckt_fmha_paging_make(2048, 8, nullptr, 0, indptr, indices, last, nullptr);
    EXPECT_EQ(ckt_fmha_sglang_keys(&p, 0), 2 * 2048 + 2);
    EXPECT_EQ(ckt_fmha_sglang_keys(&p, 1), 0);
    EXPECT_EQ(ckt_fmha_sglang_keys(&p, 2), (int64_t)1 << 32);
    ckt_fmha_kv kv = ckt_fmha_kv_resolve(&p, 0, 0);
    EXPECT_EQ(kv.sk, 2 * 2048 + 2);
    EXPECT_EQ(kv.npages, 3);
    EXPECT_EQ(kv.ids, indices);
    EXPECT_EQ(ckt_fmha_kv_resolve(&p, 0, 1).sk, 0);
    EXPECT_EQ(ckt_fmha_kv_resolve(&p, 0, 2).sk, 0x7fffffff);
    EXPECT_EQ(ckt_fmha_kv_row(&kv, 2048, 8, 1000, 10, 2048 + 3), 1 * 1000 + 3 * 10); // page 1 of the entry: id 1
    int64_t first = 0;
    kv = ckt_fmha_kv_append(&p, 99, 3, 0, 1, 0, &first); // sglang: len = keys - s_knew, cache_batch unused
    EXPECT_EQ(first, 2 * 2048 + 2 - 3);
    EXPECT_EQ(kv.sk, 2 * 2048 + 2);

    // vLLM: a block table of 2 rows of 4 pages of 16 rows, cache_batch_idx
    static int32_t table[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    static int32_t cbi[2] = {1, 2};
    p = ckt_fmha_paging_make(16, 8, table, 4, nullptr, nullptr, nullptr, cbi);
    kv = ckt_fmha_kv_append(&p, 10, 3, 0, 2, 0, &first);
    EXPECT_EQ(first, 10);
    EXPECT_EQ(kv.sk, 64); // max_pages_per_seq x page_size
    EXPECT_EQ(kv.ids, table + 4);
    kv = ckt_fmha_kv_append(&p, 10, 3, 0, 2, 1, &first); // cache row 2 of 2: no rows
    EXPECT_EQ(kv.sk, 0);
    EXPECT_EQ(ckt_fmha_kv_resolve(&p, 70, 0).sk, 64); // bounded by the row's pages
    EXPECT_EQ(ckt_fmha_kv_resolve(&p, 70, 0).cb, 1);
    // a row of more than 2^31 - 1 rows: the capacity is bounded, as validation takes it
    p = ckt_fmha_paging_make(1 << 16, 8, table, 1 << 16, nullptr, nullptr, nullptr, nullptr);
    EXPECT_EQ(ckt_fmha_append_capacity(&p, 0), 0x7fffffff);

    // contiguous: cache_seqlen rows, a bad cache row none
    p = ckt_fmha_paging_make(0, 0, nullptr, 0, nullptr, nullptr, nullptr, cbi);
    kv = ckt_fmha_kv_append(&p, 5, 2, 40, 3, 1, &first);
    EXPECT_EQ(kv.sk, 40);
    EXPECT_EQ(kv.cb, 2);
    EXPECT_EQ(kv.ids, nullptr);
    EXPECT_EQ(ckt_fmha_kv_row(&kv, 0, 0, 1000, 10, 7), 2 * 1000 + 70);
    EXPECT_EQ(ckt_fmha_kv_append(&p, 5, 2, 40, 2, 1, &first).sk, 0);
}

} // namespace
