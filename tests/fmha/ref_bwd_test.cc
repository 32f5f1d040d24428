// The CPU reference of the FMHA backward (ckt/fmha/ref_bwd.h) against central
// differences of L = sum over logical rows of O . dO, through a double
// forward written here (its own mask and offsets, none of ckt's helpers), for
// every mask kind, GQA / MQA, soft-cap, d != d_v, both layouts and group mode
// with padding and empty entries; the dK = dV = 0 rule for entries without
// queries; the bad-argument messages; the helpers (sizes, FLOPs, tolerances,
// comparison).
#include "ckt/fmha/ref_bwd.h"
#include "ckt/host/random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

namespace {

constexpr double kEps = 1e-3;          // central-difference step (double)
constexpr double kAtol = 5e-7;         // |ref - fd| <= kAtol + kRtol * |fd|: the fd error is
constexpr double kRtol = 5e-6;         //   O(kEps^2), the reference's O(fp32 O / LSE rounding)
constexpr double kMinGrad = 1e-2;      // each checked gradient has an element this large
constexpr float kSentinel = 777.0f;    // output positions the reference must not write
constexpr int kPadIn = 3, kPadOut = 5; // elements of padding after each row
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// >>problem: shapes and a host view with padding everywhere

struct Shape {
    std::string name;
    int batch, nhead_q, nhead_k, seqlen_q, seqlen_k, hdim_q, hdim_v;
    ckt_fmha_mask mask;
    int left, right;
    float scale, softcap;
    bool bshd; // inputs [b][s][h][d], outputs [b][h][s][d]; else the reverse
    // group mode when start_q is not empty: seqstart (batch + 1), logical lengths (batch, may be empty)
    std::vector<int32_t> start_q, start_k, len_q, len_k;
};

// gtest prints a failing case by its name.
void PrintTo(const Shape &s, std::ostream *os) { *os << s.name; }

Shape Make(const char *name, int b, int h, int hk, int sq, int sk, int d, int dv)
{
    return Shape{name, b, h, hk, sq, sk, d, dv, CKT_MASK_NONE, 0, 0, 0.0f, 0.0f, false, {}, {}, {}, {}};
}

bool IsKeys(ckt_fmha_bwd_tensor t)
{
    return t == CKT_FMHA_BWD_TENSOR_K || t == CKT_FMHA_BWD_TENSOR_V || t == CKT_FMHA_BWD_TENSOR_DK ||
           t == CKT_FMHA_BWD_TENSOR_DV;
}

// Query i sees key j of an entry (sq, sk): j - i - off in [-left, right], a side < 0 unlimited.
bool Visible(const Shape &s, int i, int j, int sq, int sk)
{
    int left = -1, right = -1;
    bool bottom_right = false;
    switch (s.mask) {
    case CKT_MASK_CAUSAL_TOP_LEFT: right = 0; break;
    case CKT_MASK_CAUSAL_BOTTOM_RIGHT: right = 0; bottom_right = true; break;
    case CKT_MASK_WINDOW_TOP_LEFT: left = s.left; right = s.right; break;
    case CKT_MASK_WINDOW_BOTTOM_RIGHT: left = s.left; right = s.right; bottom_right = true; break;
    default: break;
    }
    const int diff = j - i - (bottom_right ? sk - sq : 0);
    return (left < 0 || diff >= -left) && (right < 0 || diff <= right);
}

struct Entry {
    int64_t q0, k0; // first row
    int sq, sk;     // logical lengths
};

struct Layout {
    int64_t sb, sh, ss;
    int width;
};

struct Problem {
    Shape s;
    bool group;
    int64_t rows_q, rows_k; // physical rows: per entry (batch mode) or packed (group mode)
    Layout lay[CKT_FMHA_BWD_TENSOR_COUNT];
    ckt_fmha_bwd_args a; // the host view
    std::vector<float> q, k, v, o, dout, lse; // NaN outside the logical rows
    std::vector<float> dq, dk, dv, d;         // the reference's outputs, kSentinel before
    std::vector<float> sink;                  // attention sinks (nhead_q logits); empty: none
    std::vector<float> bias, slopes;          // bias [b][h][seqlen_q][seqlen_k + 2] / ALiBi slopes [h]; empty: none

    Problem(const Shape &shape, uint64_t seed) : s(shape), group(!shape.start_q.empty())
    {
        rows_q = group ? s.start_q.back() : s.seqlen_q;
        rows_k = group ? s.start_k.back() : s.seqlen_k;
        SetLayout(CKT_FMHA_BWD_TENSOR_Q, s.bshd, kPadIn);
        SetLayout(CKT_FMHA_BWD_TENSOR_K, s.bshd, kPadIn);
        SetLayout(CKT_FMHA_BWD_TENSOR_V, s.bshd, kPadIn);
        SetLayout(CKT_FMHA_BWD_TENSOR_O, s.bshd, kPadIn);
        SetLayout(CKT_FMHA_BWD_TENSOR_DO, s.bshd, kPadIn);
        SetLayout(CKT_FMHA_BWD_TENSOR_DQ, !s.bshd, kPadOut);
        SetLayout(CKT_FMHA_BWD_TENSOR_DK, !s.bshd, kPadOut);
        SetLayout(CKT_FMHA_BWD_TENSOR_DV, !s.bshd, kPadOut);
        Layout &l = lay[CKT_FMHA_BWD_TENSOR_LSE];
        l.width = 1;
        l.ss = 1;
        l.sh = rows_q + 2;
        l.sb = group ? Unused() : s.nhead_q * l.sh;

        memset(&a, 0, sizeof a);
        a.dtype = CKT_F32;
        a.batch = s.batch;
        a.nhead_q = s.nhead_q;
        a.nhead_k = s.nhead_k;
        a.seqlen_q = s.seqlen_q;
        a.seqlen_k = s.seqlen_k;
        a.hdim_q = s.hdim_q;
        a.hdim_v = s.hdim_v;
        a.mask = s.mask;
        a.window_left = s.left;
        a.window_right = s.right;
        a.scale = s.scale;
        a.softcap = s.softcap;
        a.group_mode = group;
        if (group) {
            a.seqstart_q = s.start_q.data();
            a.seqstart_k = s.start_k.data();
            a.seqlen_q_ptr = s.len_q.empty() ? nullptr : s.len_q.data();
            a.seqlen_k_ptr = s.len_k.empty() ? nullptr : s.len_k.data();
        }
        int64_t *const strides[CKT_FMHA_BWD_TENSOR_COUNT][3] = {
            {&a.q_stride_b, &a.q_stride_h, &a.q_stride_s},    {&a.k_stride_b, &a.k_stride_h, &a.k_stride_s},
            {&a.v_stride_b, &a.v_stride_h, &a.v_stride_s},    {&a.o_stride_b, &a.o_stride_h, &a.o_stride_s},
            {&a.do_stride_b, &a.do_stride_h, &a.do_stride_s}, {&a.dq_stride_b, &a.dq_stride_h, &a.dq_stride_s},
            {&a.dk_stride_b, &a.dk_stride_h, &a.dk_stride_s}, {&a.dv_stride_b, &a.dv_stride_h, &a.dv_stride_s},
            {&a.lse_stride_b, &a.lse_stride_h, nullptr}};
        for (int t = 0; t < CKT_FMHA_BWD_TENSOR_COUNT; t++) {
            *strides[t][0] = lay[t].sb;
            *strides[t][1] = lay[t].sh;
            if (strides[t][2])
                *strides[t][2] = lay[t].ss;
        }

        q.assign(Size(CKT_FMHA_BWD_TENSOR_Q), kNaN);
        k.assign(Size(CKT_FMHA_BWD_TENSOR_K), kNaN);
        v.assign(Size(CKT_FMHA_BWD_TENSOR_V), kNaN);
        o.assign(Size(CKT_FMHA_BWD_TENSOR_O), kNaN);
        dout.assign(Size(CKT_FMHA_BWD_TENSOR_DO), kNaN);
        lse.assign(Size(CKT_FMHA_BWD_TENSOR_LSE), kNaN);
        dq.assign(Size(CKT_FMHA_BWD_TENSOR_DQ), kSentinel);
        dk.assign(Size(CKT_FMHA_BWD_TENSOR_DK), kSentinel);
        dv.assign(Size(CKT_FMHA_BWD_TENSOR_DV), kSentinel);
        d.assign(Size(CKT_FMHA_BWD_TENSOR_LSE), kSentinel);
        ckt_rng r;
        ckt_rng_seed(&r, seed);
        const std::pair<ckt_fmha_bwd_tensor, std::vector<float> *> inputs[] = {
            {CKT_FMHA_BWD_TENSOR_Q, &q}, {CKT_FMHA_BWD_TENSOR_K, &k}, {CKT_FMHA_BWD_TENSOR_V, &v},
            {CKT_FMHA_BWD_TENSOR_DO, &dout}};
        for (const auto &in : inputs)
            ForEach(in.first, [&](int64_t at) { (*in.second)[(size_t)at] = ckt_rng_uniform(&r, -1.0f, 1.0f); });
        a.q = q.data();
        a.k = k.data();
        a.v = v.data();
        a.o = o.data();
        a.dout = dout.data();
        a.lse = lse.data();
    }

    // A stride the reference must never use (batch strides in group mode).
    static int64_t Unused() { return (int64_t)1 << 40; }

    // [b][h][s][d] (heads outer) or [b][s][h][d], rows padded by pad elements.
    void SetLayout(ckt_fmha_bwd_tensor t, bool bshd, int pad)
    {
        Layout &l = lay[t];
        const bool keys = IsKeys(t);
        const int64_t heads = keys ? s.nhead_k : s.nhead_q, rows = keys ? rows_k : rows_q;
        l.width = t == CKT_FMHA_BWD_TENSOR_Q || t == CKT_FMHA_BWD_TENSOR_K || t == CKT_FMHA_BWD_TENSOR_DQ ||
                          t == CKT_FMHA_BWD_TENSOR_DK
                      ? s.hdim_q
                      : s.hdim_v;
        if (bshd) {
            l.sh = l.width + pad;
            l.ss = heads * l.sh;
            l.sb = rows * l.ss;
        } else {
            l.ss = l.width + pad;
            l.sh = rows * l.ss;
            l.sb = heads * l.sh;
        }
        if (group)
            l.sb = Unused();
    }

    // Elements tensor t spans (largest offset + 1).
    size_t Size(ckt_fmha_bwd_tensor t) const
    {
        const Layout &l = lay[t];
        const int64_t heads = IsKeys(t) ? s.nhead_k : s.nhead_q, rows = IsKeys(t) ? rows_k : rows_q;
        if (s.batch == 0 || heads == 0 || rows == 0)
            return 0;
        return (size_t)((group ? 0 : (s.batch - 1) * l.sb) + (heads - 1) * l.sh + (rows - 1) * l.ss + l.width);
    }

    Entry entry(int b) const
    {
        if (!group)
            return Entry{0, 0, s.seqlen_q, s.seqlen_k};
        Entry e{s.start_q[(size_t)b], s.start_k[(size_t)b], s.start_q[(size_t)b + 1] - s.start_q[(size_t)b],
                s.start_k[(size_t)b + 1] - s.start_k[(size_t)b]};
        if (!s.len_q.empty())
            e.sq = s.len_q[(size_t)b];
        if (!s.len_k.empty())
            e.sk = s.len_k[(size_t)b];
        return e;
    }

    // T[b][head][row][c], row counted from entry b's start.
    int64_t At(ckt_fmha_bwd_tensor t, int b, int head, int row, int c) const
    {
        const Layout &l = lay[t];
        const Entry e = entry(b);
        return (group ? 0 : b * l.sb) + head * l.sh + ((IsKeys(t) ? e.k0 : e.q0) + row) * l.ss + c;
    }

    // fn(offset) for every logical element of t.
    void ForEach(ckt_fmha_bwd_tensor t, const std::function<void(int64_t)> &fn) const
    {
        const bool keys = IsKeys(t);
        for (int b = 0; b < s.batch; b++) {
            const Entry e = entry(b);
            for (int h = 0; h < (keys ? s.nhead_k : s.nhead_q); h++)
                for (int row = 0; row < (keys ? e.sk : e.sq); row++)
                    for (int c = 0; c < lay[t].width; c++)
                        fn(At(t, b, h, row, c));
        }
    }

    ckt_status Run() { return ckt_ref_fmha_bwd(&a, dq.data(), dk.data(), dv.data(), d.data()); }
};

// >>forward: double precision, written here

// L = sum over logical rows of O . dO for inputs q, k, v (the layouts of
// p.q, p.k, p.v) and the sinks (p.sink unless given); also O and LSE when
// o / lse are given. A sink joins the denominator with no value.
double Forward(const Problem &p, const std::vector<double> &q, const std::vector<double> &k,
               const std::vector<double> &v, std::vector<float> *o = nullptr, std::vector<float> *lse = nullptr,
               const std::vector<double> *sinks = nullptr, const std::vector<double> *biases = nullptr)
{
    const std::vector<double> own(p.sink.begin(), p.sink.end());
    const std::vector<double> &sink = sinks ? *sinks : own;
    const std::vector<double> own_bias(p.bias.begin(), p.bias.end());
    const std::vector<double> &bias = biases ? *biases : own_bias;
    const Shape &s = p.s;
    const double scale = s.scale != 0.0f ? s.scale : 1.0 / std::sqrt((double)s.hdim_q);
    const int g = s.nhead_q / s.nhead_k;
    // dropout (p.a.p_drop > 0): a fixed mask, the same function as the kernels'
    const ckt_fmha_dropout dr = ckt_fmha_dropout_of(p.a.p_drop, p.a.drop_seed, p.a.drop_offset, p.a.drop_seed_offset);
    double loss = 0.0;
    std::vector<double> logit;
    std::vector<char> seen;
    for (int b = 0; b < s.batch; b++) {
        const Entry e = p.entry(b);
        for (int h = 0; h < s.nhead_q; h++)
            for (int i = 0; i < e.sq; i++) {
                // logit_j = cap * tanh(scale * Q[i] . K[j] / cap), visible j only
                logit.assign((size_t)e.sk, 0.0);
                seen.assign((size_t)e.sk, 0);
                double mx = -INFINITY;
                for (int j = 0; j < e.sk; j++) {
                    if (!Visible(s, i, j, e.sq, e.sk))
                        continue;
                    double x = 0.0;
                    for (int c = 0; c < s.hdim_q; c++)
                        x += q[(size_t)p.At(CKT_FMHA_BWD_TENSOR_Q, b, h, i, c)] *
                             k[(size_t)p.At(CKT_FMHA_BWD_TENSOR_K, b, h / g, j, c)];
                    x *= scale;
                    if (s.softcap > 0.0f)
                        x = s.softcap * std::tanh(x / s.softcap);
                    if (!bias.empty()) // + B[b][h][i][j], the view's strides
                        x += bias[(size_t)(b * p.a.bias_stride_b + h * p.a.bias_stride_h + i * p.a.bias_stride_s + j)];
                    if (!p.slopes.empty()) { // ALiBi: -slope |j - i - off|, off as the mask aligns
                        const bool br = s.mask == CKT_MASK_CAUSAL_BOTTOM_RIGHT || s.mask == CKT_MASK_WINDOW_BOTTOM_RIGHT;
                        x -= p.slopes[(size_t)h] * std::fabs((double)(j - i - (br ? e.sk - e.sq : 0)));
                    }
                    logit[(size_t)j] = x;
                    seen[(size_t)j] = 1;
                    mx = std::max(mx, x);
                }
                if (!sink.empty())
                    mx = std::max(mx, sink[(size_t)h]);
                double sum = sink.empty() ? 0.0 : std::exp(sink[(size_t)h] - mx);
                for (int j = 0; j < e.sk; j++)
                    if (seen[(size_t)j])
                        sum += std::exp(logit[(size_t)j] - mx);
                for (int c = 0; c < s.hdim_v; c++) {
                    double oc = 0.0;
                    for (int j = 0; j < e.sk; j++)
                        if (seen[(size_t)j])
                            oc += std::exp(logit[(size_t)j] - mx) *
                                  (p.a.p_drop > 0.0f ? (double)ckt_fmha_dropout_factor(
                                                           &dr, (uint32_t)(b * s.nhead_q + h), i, j)
                                                     : 1.0) *
                                  v[(size_t)p.At(CKT_FMHA_BWD_TENSOR_V, b, h / g, j, c)];
                    oc = sum > 0.0 ? oc / sum : 0.0;
                    loss += oc * p.dout[(size_t)p.At(CKT_FMHA_BWD_TENSOR_DO, b, h, i, c)];
                    if (o)
                        (*o)[(size_t)p.At(CKT_FMHA_BWD_TENSOR_O, b, h, i, c)] = (float)oc;
                }
                if (lse)
                    (*lse)[(size_t)p.At(CKT_FMHA_BWD_TENSOR_LSE, b, h, i, 0)] =
                        sum > 0.0 ? (float)(mx + std::log(sum)) : -INFINITY;
            }
    }
    return loss;
}

std::vector<double> ToDouble(const std::vector<float> &x) { return std::vector<double>(x.begin(), x.end()); }

// >>finite differences

struct Fd {
    int64_t out; // offset in the gradient's layout
    double grad; // (L(x + eps) - L(x - eps)) / (2 eps)
};

// The central difference of L with respect to every logical element of input
// t (Q, K or V), each paired with its gradient's offset (DQ, DK or DV).
std::vector<Fd> FiniteDifferences(const Problem &p, ckt_fmha_bwd_tensor t)
{
    std::vector<double> x[3] = {ToDouble(p.q), ToDouble(p.k), ToDouble(p.v)};
    const int which = t == CKT_FMHA_BWD_TENSOR_Q ? 0 : t == CKT_FMHA_BWD_TENSOR_K ? 1 : 2;
    const ckt_fmha_bwd_tensor grad = which == 0 ? CKT_FMHA_BWD_TENSOR_DQ
                                     : which == 1 ? CKT_FMHA_BWD_TENSOR_DK
                                                  : CKT_FMHA_BWD_TENSOR_DV;
    std::vector<Fd> out;
    const bool keys = IsKeys(t);
    for (int b = 0; b < p.s.batch; b++) {
        const Entry e = p.entry(b);
        for (int h = 0; h < (keys ? p.s.nhead_k : p.s.nhead_q); h++)
            for (int row = 0; row < (keys ? e.sk : e.sq); row++)
                for (int c = 0; c < p.lay[t].width; c++) {
                    double &xi = x[which][(size_t)p.At(t, b, h, row, c)];
                    const double x0 = xi;
                    xi = x0 + kEps;
                    const double up = Forward(p, x[0], x[1], x[2]);
                    xi = x0 - kEps;
                    const double down = Forward(p, x[0], x[1], x[2]);
                    xi = x0;
                    out.push_back(Fd{p.At(grad, b, h, row, c), (up - down) / (2.0 * kEps)});
                }
    }
    return out;
}

struct Worst {
    double ratio = 0.0; // max |got - fd| / (kAtol + kRtol |fd|): <= 1 passes
    double max_grad = 0.0;
    int64_t at = -1;
    double got = 0.0, want = 0.0;
};

// How far mul * got is from the central differences.
Worst Check(const std::vector<float> &got, const std::vector<Fd> &fd, double mul = 1.0)
{
    Worst w;
    for (const Fd &f : fd) {
        const double g = mul * got[(size_t)f.out];
        const double ratio = std::fabs(g - f.grad) / (kAtol + kRtol * std::fabs(f.grad));
        w.max_grad = std::max(w.max_grad, std::fabs(f.grad));
        if (!(ratio <= w.ratio)) { // NaN counts as worst
            w.ratio = std::isnan(ratio) ? INFINITY : ratio;
            w.at = f.out;
            w.got = g;
            w.want = f.grad;
        }
    }
    return w;
}

std::string Describe(const char *what, const Worst &w)
{
    return std::string(what) + ": worst [" + std::to_string(w.at) + "] ref " + std::to_string(w.got) + " fd " +
           std::to_string(w.want) + " (ratio to tolerance " + std::to_string(w.ratio) + ")";
}

// Fills O and LSE from the test's forward.
void RunForward(Problem &p) { Forward(p, ToDouble(p.q), ToDouble(p.k), ToDouble(p.v), &p.o, &p.lse); }

// >>cases

std::vector<Shape> Cases()
{
    std::vector<Shape> c;
    c.push_back(Make("no_mask", 2, 2, 2, 5, 7, 8, 8));
    Shape s = Make("causal_top_left", 2, 2, 2, 5, 7, 8, 8);
    s.mask = CKT_MASK_CAUSAL_TOP_LEFT;
    s.bshd = true;
    c.push_back(s);
    s = Make("causal_bottom_right_sq_gt_sk", 1, 2, 2, 7, 5, 8, 8); // rows 0, 1 see no key
    s.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    c.push_back(s);
    s = Make("causal_bottom_right", 2, 2, 1, 4, 7, 8, 8);
    s.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    s.bshd = true;
    c.push_back(s);
    s = Make("window_top_left_2_1", 1, 2, 2, 6, 8, 8, 8);
    s.mask = CKT_MASK_WINDOW_TOP_LEFT;
    s.left = 2;
    s.right = 1;
    c.push_back(s);
    s = Make("window_bottom_right_1_unlimited", 2, 2, 2, 5, 6, 8, 8);
    s.mask = CKT_MASK_WINDOW_BOTTOM_RIGHT;
    s.left = 1;
    s.right = -1;
    s.bshd = true;
    c.push_back(s);
    s = Make("gqa_4_2", 2, 4, 2, 4, 6, 8, 8);
    s.mask = CKT_MASK_CAUSAL_TOP_LEFT;
    c.push_back(s);
    s = Make("mqa_4_1_bshd", 1, 4, 1, 5, 5, 8, 8);
    s.bshd = true;
    c.push_back(s);
    s = Make("softcap", 2, 2, 2, 4, 6, 16, 8); // scale 1: |logits| well past the cap
    s.scale = 1.0f;
    s.softcap = 1.5f;
    c.push_back(s);
    s = Make("softcap_gqa_window", 1, 4, 2, 6, 6, 8, 8);
    s.scale = 0.8f;
    s.softcap = 1.0f;
    s.mask = CKT_MASK_WINDOW_TOP_LEFT;
    s.left = 1;
    s.right = 2;
    c.push_back(s);
    s = Make("d_16_dv_8", 2, 2, 2, 4, 5, 16, 8);
    s.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    c.push_back(s);
    s = Make("d_8_dv_12_bshd", 1, 2, 2, 5, 4, 8, 12);
    s.bshd = true;
    c.push_back(s);
    // group mode: rows packed, padding before entry 0 and after each logical
    // length; entry 1 has no queries, entry 2 no keys; GQA, d != dv
    s = Make("group_padding_empty_entries", 4, 4, 2, 5, 6, 8, 4);
    s.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    s.scale = 0.3f;
    s.start_q = {1, 5, 7, 12, 18};
    s.start_k = {0, 6, 10, 11, 16};
    s.len_q = {3, 0, 4, 5};
    s.len_k = {6, 4, 0, 3};
    c.push_back(s);
    s = Make("group_window_physical_lengths", 3, 2, 2, 4, 5, 8, 8);
    s.mask = CKT_MASK_WINDOW_TOP_LEFT;
    s.left = 1;
    s.right = 1;
    s.bshd = true;
    s.start_q = {0, 4, 6, 9};
    s.start_k = {2, 7, 9, 12};
    c.push_back(s);
    return c;
}

Shape CaseNamed(const std::string &name)
{
    for (const Shape &c : Cases())
        if (c.name == name)
            return c;
    ADD_FAILURE() << "no case " << name;
    return Cases()[0];
}

class RefBwdFd : public ::testing::TestWithParam<Shape> {};

// dQ, dK, dV equal the central differences of L; D = rowsum(dO * O); nothing
// outside the logical rows is written; the visible pairs match the mask.
TEST_P(RefBwdFd, GradientsMatchCentralDifferences)
{
    Problem p(GetParam(), 42);
    RunForward(p);
    ASSERT_EQ(p.Run(), CKT_SUCCESS) << ckt_last_error();

    const ckt_fmha_bwd_tensor in[3] = {CKT_FMHA_BWD_TENSOR_Q, CKT_FMHA_BWD_TENSOR_K, CKT_FMHA_BWD_TENSOR_V};
    const ckt_fmha_bwd_tensor grad[3] = {CKT_FMHA_BWD_TENSOR_DQ, CKT_FMHA_BWD_TENSOR_DK, CKT_FMHA_BWD_TENSOR_DV};
    const std::vector<float> *ref[3] = {&p.dq, &p.dk, &p.dv};
    const char *names[3] = {"dQ", "dK", "dV"};
    for (int t = 0; t < 3; t++) {
        EXPECT_EQ(ckt_fmha_bwd_elems(&p.a, grad[t]), p.Size(grad[t])) << names[t];
        const std::vector<Fd> fd = FiniteDifferences(p, in[t]);
        const Worst w = Check(*ref[t], fd);
        EXPECT_LE(w.ratio, 1.0) << Describe(names[t], w);
        EXPECT_GT(w.max_grad, kMinGrad) << names[t] << ": the check needs non-trivial gradients";
        // every other element keeps the sentinel
        std::vector<char> logical(ref[t]->size(), 0);
        for (const Fd &f : fd)
            logical[(size_t)f.out] = 1;
        size_t touched = 0;
        for (size_t i = 0; i < logical.size(); i++)
            touched += !logical[i] && (*ref[t])[i] != kSentinel;
        EXPECT_EQ(touched, 0u) << names[t] << ": padding written";
    }

    // D[b][h][i] = dO[i] . O[i] at LSE's offsets, nothing else
    std::vector<char> logical(p.d.size(), 0);
    for (int b = 0; b < p.s.batch; b++)
        for (int h = 0; h < p.s.nhead_q; h++)
            for (int i = 0; i < p.entry(b).sq; i++) {
                double D = 0.0;
                for (int c = 0; c < p.s.hdim_v; c++)
                    D += (double)p.dout[(size_t)p.At(CKT_FMHA_BWD_TENSOR_DO, b, h, i, c)] *
                         p.o[(size_t)p.At(CKT_FMHA_BWD_TENSOR_O, b, h, i, c)];
                const size_t at = (size_t)p.At(CKT_FMHA_BWD_TENSOR_LSE, b, h, i, 0);
                EXPECT_NEAR(p.d[at], D, 1e-6 * (1.0 + std::fabs(D))) << "D at " << at;
                logical[at] = 1;
            }
    for (size_t i = 0; i < logical.size(); i++)
        if (!logical[i]) {
            ASSERT_EQ(p.d[i], kSentinel) << "D padding written at " << i;
        }

    // the FLOP count's visible pairs, by brute force over the mask
    int64_t pairs = 0;
    for (int b = 0; b < p.s.batch; b++) {
        const Entry e = p.entry(b);
        for (int i = 0; i < e.sq; i++)
            for (int j = 0; j < e.sk; j++)
                pairs += Visible(p.s, i, j, e.sq, e.sk);
    }
    EXPECT_EQ(ckt_fmha_bwd_pairs(&p.a), pairs);
    EXPECT_DOUBLE_EQ(ckt_fmha_bwd_flops(&p.a), 2.5 * 2.0 * (p.s.hdim_q + p.s.hdim_v) * p.s.nhead_q * (double)pairs);
}

INSTANTIATE_TEST_SUITE_P(Masks, RefBwdFd, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Shape> &i) { return i.param.name; });

// The tolerance above is tight enough to see a flipped sign or a missing
// scale on dQ / dK (the check, fed such gradients, fails by orders of
// magnitude); and the soft-cap case saturates the cap, so that a missing
// 1 - tanh^2 factor changes dS by 2x or more.
TEST(RefBwd, FiniteDifferenceCheckCatchesSignAndScaleErrors)
{
    for (const char *name : {"no_mask", "softcap", "group_padding_empty_entries"}) {
        const Shape s = CaseNamed(name);
        Problem p(s, 7);
        RunForward(p);
        ASSERT_EQ(p.Run(), CKT_SUCCESS) << ckt_last_error();
        const double scale = s.scale != 0.0f ? s.scale : 1.0 / std::sqrt((double)s.hdim_q);
        const std::vector<Fd> fq = FiniteDifferences(p, CKT_FMHA_BWD_TENSOR_Q),
                              fk = FiniteDifferences(p, CKT_FMHA_BWD_TENSOR_K),
                              fv = FiniteDifferences(p, CKT_FMHA_BWD_TENSOR_V);
        EXPECT_LE(Check(p.dq, fq).ratio, 1.0) << name;
        EXPECT_GT(Check(p.dq, fq, -1.0).ratio, 100.0) << name << ": dQ sign";
        EXPECT_GT(Check(p.dk, fk, -1.0).ratio, 100.0) << name << ": dK sign";
        EXPECT_GT(Check(p.dv, fv, -1.0).ratio, 100.0) << name << ": dV sign";
        if (scale != 1.0) {
            EXPECT_GT(Check(p.dq, fq, 1.0 / scale).ratio, 100.0) << name << ": dQ without scale";
            EXPECT_GT(Check(p.dk, fk, 1.0 / scale).ratio, 100.0) << name << ": dK without scale";
        }
    }
    // the soft-cap case (scale 1): 1 - tanh^2(x / cap) over its logits
    const Shape s = CaseNamed("softcap");
    Problem p(s, 42);
    double min_tanh_prime = 1.0;
    for (int b = 0; b < s.batch; b++)
        for (int h = 0; h < s.nhead_q; h++)
            for (int i = 0; i < s.seqlen_q; i++)
                for (int j = 0; j < s.seqlen_k; j++) {
                    double x = 0.0;
                    for (int c = 0; c < s.hdim_q; c++)
                        x += (double)p.q[(size_t)p.At(CKT_FMHA_BWD_TENSOR_Q, b, h, i, c)] *
                             p.k[(size_t)p.At(CKT_FMHA_BWD_TENSOR_K, b, h, j, c)];
                    min_tanh_prime = std::min(min_tanh_prime, 1.0 - std::pow(std::tanh(x / s.softcap), 2));
                }
    EXPECT_LT(min_tanh_prime, 0.5) << "the soft-cap case must saturate the cap";
}

// >>attention sinks: dQ, dK, dV through the LSE that holds the sinks, and
// dsink (ckt_ref_fmha_bwd_dsink), against central differences of L, with
// rows that see no key (only the sink), GQA, soft-cap and group mode.
TEST(RefBwd, SinkGradientsMatchCentralDifferences)
{
    for (const char *name : {"causal_bottom_right_sq_gt_sk", "gqa_4_2", "softcap_gqa_window",
                             "group_padding_empty_entries"}) {
        Problem p(CaseNamed(name), 11);
        p.sink.resize((size_t)p.s.nhead_q);
        for (int h = 0; h < p.s.nhead_q; h++)
            p.sink[(size_t)h] = -1.0f + 1.1f * (float)h; // from negligible to dominant
        p.a.sink = p.sink.data();
        RunForward(p);
        ASSERT_EQ(p.Run(), CKT_SUCCESS) << ckt_last_error();
        const ckt_fmha_bwd_tensor in[3] = {CKT_FMHA_BWD_TENSOR_Q, CKT_FMHA_BWD_TENSOR_K, CKT_FMHA_BWD_TENSOR_V};
        const std::vector<float> *ref[3] = {&p.dq, &p.dk, &p.dv};
        for (int t = 0; t < 3; t++) {
            const Worst w = Check(*ref[t], FiniteDifferences(p, in[t]));
            EXPECT_LE(w.ratio, 1.0) << name << " " << Describe("dQ dK dV" + 3 * t, w);
        }
        std::vector<float> dsink((size_t)p.s.nhead_q, kSentinel);
        ASSERT_EQ(ckt_ref_fmha_bwd_dsink(&p.a, dsink.data()), CKT_SUCCESS) << ckt_last_error();
        std::vector<double> sk(p.sink.begin(), p.sink.end());
        double max_grad = 0.0;
        for (int h = 0; h < p.s.nhead_q; h++) {
            const double x0 = sk[(size_t)h];
            sk[(size_t)h] = x0 + kEps;
            const double up = Forward(p, ToDouble(p.q), ToDouble(p.k), ToDouble(p.v), nullptr, nullptr, &sk);
            sk[(size_t)h] = x0 - kEps;
            const double down = Forward(p, ToDouble(p.q), ToDouble(p.k), ToDouble(p.v), nullptr, nullptr, &sk);
            sk[(size_t)h] = x0;
            const double fd = (up - down) / (2.0 * kEps);
            max_grad = std::max(max_grad, std::fabs(fd));
            EXPECT_NEAR(dsink[(size_t)h], fd, kAtol + kRtol * std::fabs(fd)) << name << ": dsink[" << h << "]";
            EXPECT_GT(std::fabs(-dsink[(size_t)h] - fd), kAtol + kRtol * std::fabs(fd)) << name << ": dsink sign";
        }
        EXPECT_GT(max_grad, kMinGrad) << name << ": the check needs non-trivial gradients";
    }
    // rows that see no key get LSE = sink and O = 0
    Problem p(CaseNamed("causal_bottom_right_sq_gt_sk"), 3);
    p.sink.assign((size_t)p.s.nhead_q, 0.5f);
    RunForward(p);
    EXPECT_EQ(p.lse[(size_t)p.At(CKT_FMHA_BWD_TENSOR_LSE, 0, 1, 0, 0)], 0.5f);
    // no sink: an error naming it
    p.a.sink = nullptr;
    std::vector<float> dsink((size_t)p.s.nhead_q);
    EXPECT_EQ(ckt_ref_fmha_bwd_dsink(&p.a, dsink.data()), CKT_ERROR_NULL_POINTER);
    EXPECT_NE(std::string(ckt_last_error()).find("sink"), std::string::npos);
}

// >>dropout: dQ, dK, dV with a fixed keep mask Z (the forward's O = (P o Z /
// (1 - p)) V, the same Philox function), against central differences of L;
// masks, GQA, soft-cap, group mode. The mask matters: the gradients without
// dropout miss the differences by far.
TEST(RefBwd, DropoutGradientsMatchCentralDifferences)
{
    for (const char *name : {"no_mask", "causal_bottom_right_sq_gt_sk", "gqa_4_2", "softcap_gqa_window",
                             "group_padding_empty_entries"}) {
        Problem p(CaseNamed(name), 13);
        p.a.p_drop = 0.4f;
        p.a.drop_seed = 0x1234567890abcdefull;
        p.a.drop_offset = 77;
        RunForward(p);
        ASSERT_EQ(p.Run(), CKT_SUCCESS) << ckt_last_error();
        const ckt_fmha_bwd_tensor in[3] = {CKT_FMHA_BWD_TENSOR_Q, CKT_FMHA_BWD_TENSOR_K, CKT_FMHA_BWD_TENSOR_V};
        const std::vector<float> *ref[3] = {&p.dq, &p.dk, &p.dv};
        std::vector<Fd> fd[3];
        for (int t = 0; t < 3; t++) {
            fd[t] = FiniteDifferences(p, in[t]);
            const Worst w = Check(*ref[t], fd[t]);
            EXPECT_LE(w.ratio, 1.0) << name << " " << Describe("dQ dK dV" + 3 * t, w);
            EXPECT_GT(w.max_grad, kMinGrad) << name << ": the check needs non-trivial gradients";
        }
        // p_drop outside [0, 1): an error naming it
        Problem bad(CaseNamed(name), 13);
        bad.a.p_drop = 1.0f;
        EXPECT_EQ(bad.Run(), CKT_ERROR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(ckt_last_error()).find("p_drop: 1"), std::string::npos) << ckt_last_error();
        // the same gradients computed without the mask are far off (dV at least)
        Problem q(CaseNamed(name), 13);
        q.o = p.o;
        q.lse = p.lse;
        ASSERT_EQ(q.Run(), CKT_SUCCESS) << ckt_last_error();
        EXPECT_GT(Check(q.dv, fd[2]).ratio, 10.0) << name << ": dV without the dropout mask";
    }
}

// >>bias and ALiBi: dQ, dK, dV with the bias in the logits, and dbias
// (ckt_ref_fmha_bwd_ex) against central differences of L over every bias
// element (0 where masked), with masks, GQA and group mode; ALiBi's dQ, dK,
// dV; errors naming dbias / alibi_slopes / bias.
void AddBias(Problem &p, uint64_t seed)
{
    p.a.bias_stride_s = p.s.seqlen_k + 2;
    p.a.bias_stride_h = (int64_t)p.s.seqlen_q * p.a.bias_stride_s;
    p.a.bias_stride_b = (int64_t)p.s.nhead_q * p.a.bias_stride_h;
    p.bias.assign((size_t)(p.s.batch * p.a.bias_stride_b), 0.0f);
    ASSERT_EQ(ckt_fill(p.bias.data(), CKT_F32, p.bias.size(), ckt_init_uniform(-2, 2), seed), CKT_SUCCESS);
    p.a.bias = p.bias.data();
    p.a.dbias_stride_b = p.a.bias_stride_b;
    p.a.dbias_stride_h = p.a.bias_stride_h;
    p.a.dbias_stride_s = p.a.bias_stride_s;
}

TEST(RefBwd, BiasGradientsMatchCentralDifferences)
{
    for (const char *name : {"no_mask", "causal_bottom_right_sq_gt_sk", "window_top_left_2_1", "gqa_4_2",
                             "group_padding_empty_entries"}) {
        Problem p(CaseNamed(name), 17);
        AddBias(p, 5);
        if (HasFatalFailure())
            return;
        RunForward(p);
        std::vector<float> dbias(p.bias.size(), kSentinel);
        ASSERT_EQ(ckt_ref_fmha_bwd_ex(&p.a, p.dq.data(), p.dk.data(), p.dv.data(), p.d.data(), dbias.data()),
                  CKT_SUCCESS)
            << ckt_last_error();
        const ckt_fmha_bwd_tensor in[3] = {CKT_FMHA_BWD_TENSOR_Q, CKT_FMHA_BWD_TENSOR_K, CKT_FMHA_BWD_TENSOR_V};
        const std::vector<float> *ref[3] = {&p.dq, &p.dk, &p.dv};
        for (int t = 0; t < 3; t++) {
            const Worst w = Check(*ref[t], FiniteDifferences(p, in[t]));
            EXPECT_LE(w.ratio, 1.0) << name << " " << Describe("dQ dK dV" + 3 * t, w);
        }
        // dbias against central differences of every logical element; the rest untouched
        std::vector<double> bd(p.bias.begin(), p.bias.end());
        std::vector<char> logical(dbias.size(), 0);
        double max_grad = 0.0;
        int zeros = 0;
        for (int b = 0; b < p.s.batch; b++) {
            const Entry e = p.entry(b);
            for (int h = 0; h < p.s.nhead_q; h++)
                for (int i = 0; i < e.sq; i++)
                    for (int j = 0; j < e.sk; j++) {
                        const size_t at = (size_t)(b * p.a.bias_stride_b + h * p.a.bias_stride_h + i * p.a.bias_stride_s + j);
                        logical[at] = 1;
                        const double x0 = bd[at];
                        bd[at] = x0 + kEps;
                        const double up = Forward(p, ToDouble(p.q), ToDouble(p.k), ToDouble(p.v), nullptr, nullptr, nullptr, &bd);
                        bd[at] = x0 - kEps;
                        const double down = Forward(p, ToDouble(p.q), ToDouble(p.k), ToDouble(p.v), nullptr, nullptr, nullptr, &bd);
                        bd[at] = x0;
                        const double fd = (up - down) / (2.0 * kEps);
                        max_grad = std::max(max_grad, std::fabs(fd));
                        EXPECT_NEAR(dbias[at], fd, kAtol + kRtol * std::fabs(fd))
                            << name << ": dbias b " << b << " h " << h << " i " << i << " j " << j;
                        if (!Visible(p.s, i, j, e.sq, e.sk)) {
                            EXPECT_EQ(dbias[at], 0.0f) << name << ": masked dbias";
                            zeros++;
                        }
                    }
        }
        for (size_t x = 0; x < dbias.size(); x++) {
            if (!logical[x]) {
                EXPECT_EQ(dbias[x], kSentinel) << name << ": dbias padding written at " << x;
            }
        }
        EXPECT_GT(max_grad, kMinGrad) << name << ": the check needs non-trivial gradients";
        if (std::string(name) != "no_mask" && std::string(name) != "gqa_4_2") {
            EXPECT_GT(zeros, 0) << name << ": the case must mask some pairs";
        }
    }
}

TEST(RefBwd, AlibiGradientsMatchCentralDifferences)
{
    for (const char *name : {"no_mask", "causal_bottom_right", "window_bottom_right_1_unlimited", "gqa_4_2"}) {
        Problem p(CaseNamed(name), 23);
        p.slopes.resize((size_t)p.s.nhead_q);
        for (int h = 0; h < p.s.nhead_q; h++)
            p.slopes[(size_t)h] = 0.25f + 0.5f * (float)h;
        p.a.alibi_slopes = p.slopes.data();
        RunForward(p);
        ASSERT_EQ(p.Run(), CKT_SUCCESS) << ckt_last_error();
        const ckt_fmha_bwd_tensor in[3] = {CKT_FMHA_BWD_TENSOR_Q, CKT_FMHA_BWD_TENSOR_K, CKT_FMHA_BWD_TENSOR_V};
        const std::vector<float> *ref[3] = {&p.dq, &p.dk, &p.dv};
        for (int t = 0; t < 3; t++) {
            const Worst w = Check(*ref[t], FiniteDifferences(p, in[t]));
            EXPECT_LE(w.ratio, 1.0) << name << " " << Describe("dQ dK dV" + 3 * t, w);
            EXPECT_GT(w.max_grad, kMinGrad) << name;
        }
    }
    // the reference's own errors: dbias without bias, bias with ALiBi, bias with a soft-cap
    Problem p(CaseNamed("no_mask"), 3);
    RunForward(p);
    std::vector<float> dbias((size_t)p.s.batch * p.s.nhead_q * p.s.seqlen_q * p.s.seqlen_k);
    EXPECT_EQ(ckt_ref_fmha_bwd_ex(&p.a, p.dq.data(), p.dk.data(), p.dv.data(), nullptr, dbias.data()),
              CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ckt_last_error()).find("dbias"), std::string::npos) << ckt_last_error();
    AddBias(p, 1);
    const float slope = 1.0f;
    p.a.alibi_slopes = &slope;
    EXPECT_EQ(p.Run(), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ckt_last_error()).find("alibi_slopes"), std::string::npos) << ckt_last_error();
    p.a.alibi_slopes = nullptr;
    p.a.softcap = 2.0f;
    EXPECT_EQ(p.Run(), CKT_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(ckt_last_error()).find("bias"), std::string::npos) << ckt_last_error();
}

// >>dK = dV = 0 for entries without queries

TEST(RefBwd, SeqlenQZeroGivesZeroDkDv)
{
    Problem p(Make("sq0", 2, 2, 1, 0, 4, 8, 8), 3);
    // no queries: q, o, dout, lse and dq_ref are not needed
    ckt_fmha_bwd_args a = p.a;
    a.q = a.o = a.dout = nullptr;
    a.lse = nullptr;
    ASSERT_EQ(ckt_ref_fmha_bwd(&a, nullptr, p.dk.data(), p.dv.data(), nullptr), CKT_SUCCESS) << ckt_last_error();
    // every logical element (2 entries x 1 kv head x 4 keys x 8) is 0, the rest untouched
    for (const std::vector<float> *out : {&p.dk, &p.dv}) {
        size_t zeros = 0;
        for (float x : *out) {
            if (x == 0.0f)
                zeros++;
            else
                EXPECT_EQ(x, kSentinel);
        }
        EXPECT_EQ(zeros, (size_t)2 * 1 * 4 * 8);
    }
    EXPECT_EQ(ckt_fmha_bwd_flops(&a), 0.0);
}

TEST(RefBwd, GroupEntryWithoutQueriesGivesZeroDkDvAndWithoutKeysZeroDq)
{
    const Shape s = CaseNamed("group_padding_empty_entries");
    Problem p(s, 11);
    RunForward(p);
    ASSERT_EQ(p.Run(), CKT_SUCCESS) << ckt_last_error();
    const Entry e1 = p.entry(1), e2 = p.entry(2);
    ASSERT_EQ(e1.sq, 0);
    ASSERT_GT(e1.sk, 0);
    ASSERT_EQ(e2.sk, 0);
    ASSERT_GT(e2.sq, 0);
    for (int hk = 0; hk < s.nhead_k; hk++)
        for (int j = 0; j < e1.sk; j++) {
            for (int c = 0; c < s.hdim_q; c++)
                EXPECT_EQ(p.dk[(size_t)p.At(CKT_FMHA_BWD_TENSOR_DK, 1, hk, j, c)], 0.0f);
            for (int c = 0; c < s.hdim_v; c++)
                EXPECT_EQ(p.dv[(size_t)p.At(CKT_FMHA_BWD_TENSOR_DV, 1, hk, j, c)], 0.0f);
        }
    for (int h = 0; h < s.nhead_q; h++)
        for (int i = 0; i < e2.sq; i++)
            for (int c = 0; c < s.hdim_q; c++)
                EXPECT_EQ(p.dq[(size_t)p.At(CKT_FMHA_BWD_TENSOR_DQ, 2, h, i, c)], 0.0f);
}

// A row whose LSE is -inf (the forward saw no key) contributes nothing, even
// with visible keys: the kernel trusts the given LSE.
TEST(RefBwd, MinusInfLseRowContributesNothing)
{
    Problem p(Make("lse", 1, 1, 1, 2, 3, 8, 8), 5);
    RunForward(p);
    for (int i = 0; i < 2; i++)
        p.lse[(size_t)p.At(CKT_FMHA_BWD_TENSOR_LSE, 0, 0, i, 0)] = -INFINITY;
    ASSERT_EQ(p.Run(), CKT_SUCCESS);
    p.ForEach(CKT_FMHA_BWD_TENSOR_DQ, [&](int64_t at) { EXPECT_EQ(p.dq[(size_t)at], 0.0f); });
    p.ForEach(CKT_FMHA_BWD_TENSOR_DK, [&](int64_t at) { EXPECT_EQ(p.dk[(size_t)at], 0.0f); });
    p.ForEach(CKT_FMHA_BWD_TENSOR_DV, [&](int64_t at) { EXPECT_EQ(p.dv[(size_t)at], 0.0f); });
}

// The 16-bit inputs are read as the kernel sees them: a bf16 host view of
// bf16-exact values gives the fp32 view's gradients.
TEST(RefBwd, Bf16InputsMatchTheFp32View)
{
    Problem p(Make("bf16", 1, 2, 1, 3, 5, 8, 8), 13);
    for (std::vector<float> *x : {&p.q, &p.k, &p.v, &p.dout})
        for (float &f : *x)
            if (!std::isnan(f))
                f = ckt_f32_from_bf16(ckt_bf16_from_f32(f));
    RunForward(p);
    for (float &f : p.o)
        if (!std::isnan(f))
            f = ckt_f32_from_bf16(ckt_bf16_from_f32(f));
    ASSERT_EQ(p.Run(), CKT_SUCCESS);
    auto to_bf16 = [](const std::vector<float> &x) {
        std::vector<uint16_t> y(x.size());
        for (size_t i = 0; i < x.size(); i++)
            ckt_store_f32(y.data(), CKT_BF16, i, x[i]);
        return y;
    };
    const std::vector<uint16_t> q = to_bf16(p.q), k = to_bf16(p.k), v = to_bf16(p.v), o = to_bf16(p.o),
                                dout = to_bf16(p.dout);
    ckt_fmha_bwd_args a = p.a;
    a.dtype = CKT_BF16;
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.o = o.data();
    a.dout = dout.data();
    std::vector<float> dq(p.dq.size(), kSentinel), dk(p.dk.size(), kSentinel), dv(p.dv.size(), kSentinel);
    ASSERT_EQ(ckt_ref_fmha_bwd(&a, dq.data(), dk.data(), dv.data(), nullptr), CKT_SUCCESS) << ckt_last_error();
    EXPECT_EQ(dq, p.dq);
    EXPECT_EQ(dk, p.dk);
    EXPECT_EQ(dv, p.dv);
}

// >>bad arguments: a status and a message naming the argument, outputs untouched

struct BadCase {
    const char *name;
    ckt_status want;
    const char *message; // a substring of ckt_last_error()
    std::function<void(ckt_fmha_bwd_args &, float *&dq, float *&dk, float *&dv)> spoil;
};

TEST(RefBwd, RejectsBadArgumentsWithNamedMessages)
{
    static const int32_t start[3] = {0, 3, 2}; // decreasing
    static const int32_t good_start[3] = {0, 3, 5}, too_long[2] = {4, 2};
    const std::vector<BadCase> cases = {
        // invalid values within the enums' ranges (C++: anything else is undefined)
        {"dtype", CKT_ERROR_INVALID_ARGUMENT, "dtype: 3",
         [](auto &a, auto &, auto &, auto &) { a.dtype = (ckt_dtype)3; }},
        {"batch", CKT_ERROR_INVALID_ARGUMENT, "batch: -1 is negative",
         [](auto &a, auto &, auto &, auto &) { a.batch = -1; }},
        {"seqlen_k", CKT_ERROR_INVALID_ARGUMENT, "seqlen_k: -2",
         [](auto &a, auto &, auto &, auto &) { a.seqlen_k = -2; }},
        {"hdim_v", CKT_ERROR_INVALID_ARGUMENT, "hdim_v: 0", [](auto &a, auto &, auto &, auto &) { a.hdim_v = 0; }},
        {"nhead_q", CKT_ERROR_INVALID_ARGUMENT, "nhead_q: 3 is not a multiple of nhead_k 2",
         [](auto &a, auto &, auto &, auto &) { a.nhead_q = 3; }},
        {"nhead_k", CKT_ERROR_INVALID_ARGUMENT, "nhead_k: 0", [](auto &a, auto &, auto &, auto &) { a.nhead_k = 0; }},
        {"group_mode", CKT_ERROR_INVALID_ARGUMENT, "group_mode: 2",
         [](auto &a, auto &, auto &, auto &) { a.group_mode = 2; }},
        {"scale", CKT_ERROR_INVALID_ARGUMENT, "scale: nan", [](auto &a, auto &, auto &, auto &) { a.scale = NAN; }},
        {"softcap", CKT_ERROR_INVALID_ARGUMENT, "softcap: -1",
         [](auto &a, auto &, auto &, auto &) { a.softcap = -1.0f; }},
        {"mask", CKT_ERROR_INVALID_ARGUMENT, "mask: 7",
         [](auto &a, auto &, auto &, auto &) { a.mask = (ckt_fmha_mask)7; }},
        {"q", CKT_ERROR_NULL_POINTER, ": q: NULL", [](auto &a, auto &, auto &, auto &) { a.q = nullptr; }},
        {"k", CKT_ERROR_NULL_POINTER, ": k: NULL", [](auto &a, auto &, auto &, auto &) { a.k = nullptr; }},
        {"v", CKT_ERROR_NULL_POINTER, ": v: NULL", [](auto &a, auto &, auto &, auto &) { a.v = nullptr; }},
        {"o", CKT_ERROR_NULL_POINTER, ": o: NULL", [](auto &a, auto &, auto &, auto &) { a.o = nullptr; }},
        {"dout", CKT_ERROR_NULL_POINTER, "dout: NULL", [](auto &a, auto &, auto &, auto &) { a.dout = nullptr; }},
        {"lse", CKT_ERROR_NULL_POINTER, "lse: NULL", [](auto &a, auto &, auto &, auto &) { a.lse = nullptr; }},
        {"dq_ref", CKT_ERROR_NULL_POINTER, "dq_ref: NULL", [](auto &, auto &dq, auto &, auto &) { dq = nullptr; }},
        {"dk_ref", CKT_ERROR_NULL_POINTER, "dk_ref: NULL", [](auto &, auto &, auto &dk, auto &) { dk = nullptr; }},
        {"dv_ref", CKT_ERROR_NULL_POINTER, "dv_ref: NULL", [](auto &, auto &, auto &, auto &dv) { dv = nullptr; }},
        {"dk_stride_s", CKT_ERROR_INVALID_ARGUMENT, "dk_stride_s: -8 is negative",
         [](auto &a, auto &, auto &, auto &) { a.dk_stride_s = -8; }},
        {"lse_stride_h", CKT_ERROR_INVALID_ARGUMENT, "lse_stride_h: -1 is negative",
         [](auto &a, auto &, auto &, auto &) { a.lse_stride_h = -1; }},
        {"seqstart_k", CKT_ERROR_NULL_POINTER, "seqstart_k: NULL in group mode",
         [](auto &a, auto &, auto &, auto &) {
             a.group_mode = 1;
             a.seqstart_q = good_start;
         }},
        {"seqstart_q", CKT_ERROR_INVALID_ARGUMENT, "seqstart_q: decreases at entry 1",
         [](auto &a, auto &, auto &, auto &) {
             a.group_mode = 1;
             a.seqstart_q = start;
             a.seqstart_k = good_start;
         }},
        {"seqlen_q_ptr", CKT_ERROR_INVALID_ARGUMENT, "seqlen_q_ptr: [0] = 4 is outside [0, 3]",
         [](auto &a, auto &, auto &, auto &) {
             a.group_mode = 1;
             a.seqstart_q = good_start;
             a.seqstart_k = good_start;
             a.seqlen_q_ptr = too_long;
         }},
    };
    for (const BadCase &c : cases) {
        Problem p(Make("bad", 2, 2, 2, 3, 3, 8, 8), 1);
        RunForward(p);
        ckt_fmha_bwd_args a = p.a;
        float *dq = p.dq.data(), *dk = p.dk.data(), *dv = p.dv.data();
        c.spoil(a, dq, dk, dv);
        ckt_clear_error();
        EXPECT_EQ(ckt_ref_fmha_bwd(&a, dq, dk, dv, p.d.data()), c.want) << c.name;
        const std::string msg = ckt_last_error();
        EXPECT_EQ(msg.rfind("ckt_ref_fmha_bwd: ", 0), 0u) << c.name << ": " << msg;
        EXPECT_NE(msg.find(c.message), std::string::npos) << c.name << ": " << msg;
        for (const std::vector<float> *out : {&p.dq, &p.dk, &p.dv, &p.d})
            for (float x : *out)
                ASSERT_EQ(x, kSentinel) << c.name << ": output written on failure";
    }
    EXPECT_EQ(ckt_ref_fmha_bwd(nullptr, nullptr, nullptr, nullptr, nullptr), CKT_ERROR_NULL_POINTER);
    EXPECT_STREQ(ckt_last_error(), "ckt_ref_fmha_bwd: args: NULL");
}

TEST(RefBwd, EmptyProblemsNeedNoPointers)
{
    ckt_fmha_bwd_args a = CKT_ZERO_INIT;
    a.dtype = CKT_F16;
    a.nhead_q = a.nhead_k = 2;
    a.hdim_q = a.hdim_v = 8;
    a.batch = 0; // no entries
    a.seqlen_q = a.seqlen_k = 4;
    EXPECT_EQ(ckt_ref_fmha_bwd(&a, nullptr, nullptr, nullptr, nullptr), CKT_SUCCESS);
    a.batch = 3; // no rows
    a.seqlen_q = a.seqlen_k = 0;
    EXPECT_EQ(ckt_ref_fmha_bwd(&a, nullptr, nullptr, nullptr, nullptr), CKT_SUCCESS);
    a.seqlen_k = 2; // keys but no queries: dk_ref is needed
    EXPECT_EQ(ckt_ref_fmha_bwd(&a, nullptr, nullptr, nullptr, nullptr), CKT_ERROR_NULL_POINTER);
    EXPECT_STREQ(ckt_last_error(), "ckt_ref_fmha_bwd: k: NULL");
}

// >>helpers

TEST(RefBwd, ElemsSpanEachLayout)
{
    Problem p(Make("elems", 2, 4, 2, 5, 7, 16, 8), 1);
    // inputs [b][h][s][d] with rows of 16 + 3: Q spans (2*4*5 - 1) * 19 + 16
    EXPECT_EQ(ckt_fmha_bwd_elems(&p.a, CKT_FMHA_BWD_TENSOR_Q), (size_t)(2 * 4 * 5 - 1) * 19 + 16);
    EXPECT_EQ(ckt_fmha_bwd_elems(&p.a, CKT_FMHA_BWD_TENSOR_V), (size_t)(2 * 2 * 7 - 1) * 11 + 8);
    // outputs [b][s][h][d] with heads of d + 5
    EXPECT_EQ(ckt_fmha_bwd_elems(&p.a, CKT_FMHA_BWD_TENSOR_DK), (size_t)(2 * 7 * 2 - 1) * 21 + 16);
    EXPECT_EQ(ckt_fmha_bwd_elems(&p.a, CKT_FMHA_BWD_TENSOR_LSE), (size_t)(2 * 4 - 1) * 7 + 5);
    for (int t = 0; t < CKT_FMHA_BWD_TENSOR_COUNT; t++)
        EXPECT_EQ(ckt_fmha_bwd_elems(&p.a, (ckt_fmha_bwd_tensor)t), p.Size((ckt_fmha_bwd_tensor)t)) << t;
    EXPECT_EQ(ckt_fmha_bwd_elems(nullptr, CKT_FMHA_BWD_TENSOR_Q), 0u);
    EXPECT_EQ(ckt_fmha_bwd_elems(&p.a, CKT_FMHA_BWD_TENSOR_COUNT), 0u);
    ckt_fmha_bwd_args g = p.a;
    g.group_mode = 1; // no seqstart arrays: 0, never a crash
    EXPECT_EQ(ckt_fmha_bwd_elems(&g, CKT_FMHA_BWD_TENSOR_DQ), 0u);
    EXPECT_EQ(ckt_fmha_bwd_pairs(&g), 0);
    EXPECT_EQ(ckt_fmha_bwd_flops(nullptr), 0.0);
}

TEST(RefBwd, FlopsAreTwoAndAHalfForwards)
{
    // causal top-left 4 x 6: rows see 1, 2, 3, 4 keys
    ckt_fmha_bwd_args a = CKT_ZERO_INIT;
    a.batch = 3;
    a.nhead_q = 8;
    a.nhead_k = 2;
    a.seqlen_q = 4;
    a.seqlen_k = 6;
    a.hdim_q = 128;
    a.hdim_v = 64;
    a.mask = CKT_MASK_CAUSAL_TOP_LEFT;
    EXPECT_EQ(ckt_fmha_bwd_pairs(&a), 3 * 10);
    const double fwd = 2.0 * (128 + 64) * 8 * 30.0;
    EXPECT_DOUBLE_EQ(ckt_fmha_bwd_flops(&a), 2.5 * fwd);
    a.mask = CKT_MASK_NONE;
    EXPECT_DOUBLE_EQ(ckt_fmha_bwd_flops(&a), 2.5 * 2.0 * (128 + 64) * 8 * 3 * 24.0);
}

TEST(RefBwd, ToleranceFollowsCk)
{
    double rtol = 0, atol = 0;
    ckt_fmha_bwd_tolerance(CKT_F16, 256, 256, &rtol, &atol);
    EXPECT_EQ(rtol, 1e-2);
    EXPECT_EQ(atol, 1e-2);
    ckt_fmha_bwd_tolerance(CKT_BF16, 128, 128, &rtol, &atol);
    EXPECT_EQ(rtol, 1e-2);
    EXPECT_EQ(atol, 1e-2);
    ckt_fmha_bwd_tolerance(CKT_BF16, 256, 256, &rtol, &atol);
    EXPECT_EQ(rtol, 3.2e-2);
    EXPECT_EQ(atol, 3.2e-2);
    ckt_fmha_bwd_tolerance(CKT_BF16, 256, 128, &rtol, &atol); // both above 128 in CK
    EXPECT_EQ(rtol, 1e-2);
    ckt_fmha_bwd_tolerance(CKT_F32, 64, 64, &rtol, &atol);
    EXPECT_EQ(rtol, 1e-4);
    ckt_fmha_bwd_tolerance(CKT_F16, 64, 64, nullptr, nullptr); // no crash
}

TEST(RefBwd, CompareRoundsTheReferenceAndReadsLogicalRowsOnly)
{
    const Shape s = CaseNamed("group_padding_empty_entries");
    Problem p(s, 17);
    RunForward(p);
    ASSERT_EQ(p.Run(), CKT_SUCCESS);
    // a bf16 "kernel" result: the reference rounded once; NaN in the padding
    auto kernel = [](const std::vector<float> &ref) {
        std::vector<uint16_t> y(ref.size());
        for (size_t i = 0; i < ref.size(); i++)
            ckt_store_f32(y.data(), CKT_BF16, i, ref[i] == kSentinel ? kNaN : ref[i]);
        return y;
    };
    std::vector<uint16_t> dq = kernel(p.dq), dk = kernel(p.dk), dv = kernel(p.dv);
    ckt_fmha_bwd_args h = p.a;
    h.dtype = CKT_BF16;
    ckt_compare_result rq, rk, rv;
    EXPECT_EQ(ckt_ref_fmha_bwd_compare(&rq, &rk, &rv, &h, dq.data(), dk.data(), dv.data(), p.dq.data(),
                                       p.dk.data(), p.dv.data(), 0.0, 0.0),
              CKT_SUCCESS)
        << ckt_last_error();
    size_t nq = 0, nk = 0, nv = 0;
    p.ForEach(CKT_FMHA_BWD_TENSOR_DQ, [&](int64_t) { nq++; });
    p.ForEach(CKT_FMHA_BWD_TENSOR_DK, [&](int64_t) { nk++; });
    p.ForEach(CKT_FMHA_BWD_TENSOR_DV, [&](int64_t) { nv++; });
    EXPECT_EQ(rq.n, nq);
    EXPECT_EQ(rk.n, nk);
    EXPECT_EQ(rv.n, nv);
    EXPECT_EQ(rq.atol, 0.0);

    // one dK element off by far more than CK's tolerance
    const size_t bad = (size_t)p.At(CKT_FMHA_BWD_TENSOR_DK, 3, 1, 2, 5);
    ckt_store_f32(dk.data(), CKT_BF16, bad, p.dk[bad] + 0.5f);
    double rtol, atol;
    ckt_fmha_bwd_tolerance(CKT_BF16, s.hdim_q, s.hdim_v, &rtol, &atol);
    EXPECT_EQ(ckt_ref_fmha_bwd_compare(&rq, &rk, &rv, &h, dq.data(), dk.data(), dv.data(), p.dq.data(),
                                       p.dk.data(), p.dv.data(), atol, rtol),
              CKT_ERROR_MISMATCH);
    EXPECT_EQ(rq.mismatches, 0u);
    EXPECT_EQ(rv.mismatches, 0u);
    ASSERT_EQ(rk.mismatches, 1u);
    EXPECT_EQ(rk.first[0].index, bad);
    EXPECT_NE(std::string(ckt_last_error()).find("1 of"), std::string::npos) << ckt_last_error();

    EXPECT_EQ(ckt_ref_fmha_bwd_compare(&rq, nullptr, &rv, &h, dq.data(), dk.data(), dv.data(), p.dq.data(),
                                       p.dk.data(), p.dv.data(), atol, rtol),
              CKT_ERROR_NULL_POINTER);
    EXPECT_STREQ(ckt_last_error(), "ckt_ref_fmha_bwd_compare: r_dk: NULL");
    EXPECT_EQ(ckt_ref_fmha_bwd_compare(&rq, &rk, &rv, &h, dq.data(), nullptr, dv.data(), p.dq.data(),
                                       p.dk.data(), p.dv.data(), atol, rtol),
              CKT_ERROR_NULL_POINTER);
    EXPECT_STREQ(ckt_last_error(), "ckt_ref_fmha_bwd_compare: dk: NULL");
}

} // namespace
