// Operations on distributed tensors (ckt/tile/regs.h): elementwise ops and
// casts per thread, reductions over groups of lanes, and row reductions in
// the row distribution (shuffles within a warp, shared memory across warps),
// each against a host reference.
#include "ckt/tile/regs.h"
#include "tests/tile/tile_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace {

using namespace tile_test;

// >>elementwise and casts: 16 elements per thread

enum { kN = 16 };

typedef struct elem_params {
    const float *x, *y; // kN per thread
    const uint32_t *h;  // kN / 2 words per thread
    float *out;         // kOps * kN per thread
    uint32_t *out16;    // 2 * kN / 2 per thread
} elem_params;

enum { kFill, kScale, kMap, kMap2, kSubRows, kMulRows, kF32FromF16, kF32FromBf16, kOps };

CKT_KERNEL(elem_kernel, elem_params, p)
{
    const int t = (int)ckt_thread_idx_x();
    float x[kN], y[kN], r[kN], m[kN / 4];
    uint32_t h[kN / 2], g[kN / 2];
    for (int k = 0; k < kN; k++) {
        x[k] = p.x[t * kN + k];
        y[k] = p.y[t * kN + k];
    }
    for (int k = 0; k < kN / 2; k++)
        h[k] = p.h[t * kN / 2 + k];
    for (int k = 0; k < kN / 4; k++)
        m[k] = y[k];
    float *o = p.out + t * kOps * kN;
    ckt_regs_fill_f32(r, kN, 2.5f);
    for (int k = 0; k < kN; k++)
        o[kFill * kN + k] = r[k];
    ckt_regs_scale_f32(r, x, kN, -0.75f);
    for (int k = 0; k < kN; k++)
        o[kScale * kN + k] = r[k];
    CKT_REGS_MAP(r, x, kN, v, v > 0.0f ? v * v : 0.5f * v);
    for (int k = 0; k < kN; k++)
        o[kMap * kN + k] = r[k];
    CKT_REGS_MAP2(r, x, y, kN, u, v, u > v ? u - v : 0.5f * v); // no a*b+c: GPUs fuse it
    for (int k = 0; k < kN; k++)
        o[kMap2 * kN + k] = r[k];
    ckt_regs_sub_rows_f32(r, x, kN, m, 4);
    for (int k = 0; k < kN; k++)
        o[kSubRows * kN + k] = r[k];
    ckt_regs_mul_rows_f32(r, x, kN, m, 4);
    for (int k = 0; k < kN; k++)
        o[kMulRows * kN + k] = r[k];
    ckt_regs_f32_from_f16(r, h, kN);
    for (int k = 0; k < kN; k++)
        o[kF32FromF16 * kN + k] = r[k];
    ckt_regs_f32_from_bf16(r, h, kN);
    for (int k = 0; k < kN; k++)
        o[kF32FromBf16 * kN + k] = r[k];
    uint32_t *o16 = p.out16 + t * kN;
    ckt_regs_f16_from_f32(g, x, kN);
    for (int k = 0; k < kN / 2; k++)
        o16[k] = g[k];
    ckt_regs_bf16_from_f32(g, x, kN);
    for (int k = 0; k < kN / 2; k++)
        o16[kN / 2 + k] = g[k];
    ckt_regs_fill_b16(g, kN, 0x3c01);
    if (t == 0)
        for (int k = 0; k < kN / 2; k++)
            if (g[k] != 0x3c013c01u)
                o16[k] = 0xdeadbeefu; // caught as a cast mismatch
}

bool same(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }

TEST(Regs, ElementwiseAndCastsMatchHost)
{
    const int T = 64;
    std::vector<float> x(T * kN), y(T * kN);
    std::vector<uint32_t> h(T * kN / 2);
    ASSERT_EQ(ckt_fill(x.data(), CKT_F32, x.size(), ckt_init_normal(0, 100), 3), CKT_SUCCESS);
    ASSERT_EQ(ckt_fill(y.data(), CKT_F32, y.size(), ckt_init_uniform(-2, 2), 4), CKT_SUCCESS);
    // casts: special values (ties, subnormals, overflow, inf, nan) in thread 0
    const float special[kN] = {0.0f, -0.0f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 65519.0f,
                              65520.0f, 1e-8f, -3e-5f, INFINITY, -INFINITY, NAN, 1.0f + 1.0f / 256,
                              3.0e38f, 1e-40f, -2.5f, 70000.0f};
    for (int k = 0; k < kN; k++)
        x[k] = special[k];
    ckt_rng r;
    ckt_rng_seed(&r, 5);
    for (auto &w : h)
        w = (uint32_t)ckt_rng_u64(&r);
    DevBuf<float> dx(x.size()), dy(y.size()), out(T * kOps * kN);
    DevBuf<uint32_t> dh(h.size()), out16(T * kN);
    dx.upload(x);
    dy.upload(y);
    dh.upload(h);
    elem_params p = {dx.p, dy.p, dh.p, out.p, out16.p};
    ASSERT_EQ(launch(CKT_KERNEL_REF(elem_kernel), 1, T, &p), CKT_SUCCESS) << ckt_last_error();
    const std::vector<float> o = out.download();
    const std::vector<uint32_t> o16 = out16.download();
    int bad = 0;
    for (int t = 0; t < T; t++)
        for (int k = 0; k < kN; k++) {
            const float xv = x[t * kN + k], yv = y[t * kN + k], m = y[t * kN + k / 4];
            const uint16_t hk = (uint16_t)(h[t * kN / 2 + k / 2] >> (16 * (k % 2)));
            ckt_f16 f16;
            f16.bits = hk;
            ckt_bf16 bf16;
            bf16.bits = hk;
            const float want[kOps] = {2.5f,
                                      -0.75f * xv,
                                      xv > 0.0f ? xv * xv : 0.5f * xv,
                                      xv > yv ? xv - yv : 0.5f * yv,
                                      xv - m,
                                      xv * m,
                                      ckt_f32_from_f16(f16),
                                      ckt_f32_from_bf16(bf16)};
            for (int op = 0; op < kOps; op++)
                if (!same(o[(t * kOps + op) * kN + k], want[op]) && bad++ < 8)
                    ADD_FAILURE() << "op " << op << " thread " << t << " element " << k << " got "
                                  << o[(t * kOps + op) * kN + k] << " want " << want[op];
            const uint16_t got16 = (uint16_t)(o16[t * kN + k / 2] >> (16 * (k % 2)));
            const uint16_t gotb16 = (uint16_t)(o16[t * kN + kN / 2 + k / 2] >> (16 * (k % 2)));
            const ckt_f16 wf = ckt_f16_from_f32(xv);
            const ckt_bf16 wb = ckt_bf16_from_f32(xv);
            if (!std::isnan(xv)) { // NaN payloads may differ: both stay NaN
                EXPECT_EQ(got16, wf.bits) << "fp16 of " << xv << " thread " << t;
                EXPECT_EQ(gotb16, wb.bits) << "bf16 of " << xv << " thread " << t;
            } else {
                EXPECT_TRUE((got16 & 0x7c00) == 0x7c00 && (got16 & 0x3ff));
                EXPECT_TRUE((gotb16 & 0x7f80) == 0x7f80 && (gotb16 & 0x7f));
            }
        }
}

// >>lane groups

typedef struct group_params {
    const float *in;
    float *out; // 2 per thread: max, sum
    int n, stride;
} group_params;

CKT_KERNEL(group_kernel, group_params, p)
{
    const int t = (int)ckt_thread_idx_x();
    const float v = p.in[t];
    p.out[2 * t] = ckt_warp_group_max_f32(v, p.n, p.stride);
    p.out[2 * t + 1] = ckt_warp_group_sum_f32(v, p.n, p.stride);
}

TEST(Regs, WarpGroupReductionsMatchHost)
{
    const int W = CKT_WARP_SIZE, T = 2 * W;
    std::vector<float> in(T);
    ASSERT_EQ(ckt_fill(in.data(), CKT_F32, T, ckt_init_int(-50, 50), 8), CKT_SUCCESS);
    DevBuf<float> din(T), dout(2 * T);
    din.upload(in);
    for (int n = 1; n <= W; n *= 2)
        for (int stride = 1; n * stride <= W; stride *= 2) {
            group_params p = {din.p, dout.p, n, stride};
            ASSERT_EQ(launch(CKT_KERNEL_REF(group_kernel), 1, T, &p), CKT_SUCCESS) << ckt_last_error();
            const std::vector<float> o = dout.download();
            const int mask = stride * (n - 1); // lane bits that vary within a group
            for (int t = 0; t < T; t++) {
                float mx = -INFINITY, sum = 0; // integers: exact in any order
                for (int u = t / W * W; u < t / W * W + W; u++)
                    if (((u % W) & ~mask) == ((t % W) & ~mask)) {
                        mx = std::max(mx, in[u]);
                        sum += in[u];
                    }
                ASSERT_EQ(o[2 * t], mx) << "n " << n << " stride " << stride << " thread " << t;
                ASSERT_EQ(o[2 * t + 1], sum) << "n " << n << " stride " << stride << " thread " << t;
            }
        }
}

// >>row reductions in the row distribution

typedef struct rowred_params {
    const ckt_window2d *win; // one per block
    float *out;              // per block, thread: max of each vector, then sum
} rowred_params;

#define ROWRED_KERNEL(NAME, R, C, V, T)                                                            \
    CKT_ROWS_CHECK(R, C, V, T, 4);                                                                \
    CKT_ROWS_REDUCE_CHECK(R, C, V, T);                                                            \
    CKT_KERNEL(NAME, rowred_params, p)                                                             \
    {                                                                                              \
        CKT_SHARED_ARRAY(float, scratch, CKT_ROWS_REDUCE_SMEM(R, C, V, T));                        \
        const int t = (int)ckt_thread_idx_x();                                                     \
        const int64_t b = ckt_block_idx_x();                                                       \
        const ckt_window2d w = p.win[b];                                                           \
        float x[CKT_ROWS_REGS(R, C, T, 4)], mx[CKT_ROWS_VECS(R, C, V, T)],                         \
            sum[CKT_ROWS_VECS(R, C, V, T)];                                                        \
        ckt_rows_load_f32(x, &w, R, C, V, T, t, -INFINITY);                                        \
        ckt_rows_row_max(mx, x, R, C, V, T, t, scratch);                                           \
        ckt_rows_load_f32(x, &w, R, C, V, T, t, 0.0f);                                             \
        ckt_rows_row_sum(sum, x, R, C, V, T, t, scratch);                                          \
        float *o = p.out + (b * T + t) * 2 * CKT_ROWS_VECS(R, C, V, T);                            \
        for (int i = 0; i < CKT_ROWS_VECS(R, C, V, T); i++) {                                      \
            o[i] = mx[i];                                                                          \
            o[CKT_ROWS_VECS(R, C, V, T) + i] = sum[i];                                             \
        }                                                                                          \
    }

// a row over 16 lanes; over 32 lanes; over 128 threads (2 or 4 warps: shared
// memory); 4 vectors of a row per thread over 16 lanes; 2 vectors per thread
// over 128 threads; 8-byte vectors
ROWRED_KERNEL(rowred_8x64, 8, 64, 4, 64)
ROWRED_KERNEL(rowred_2x128, 2, 128, 4, 64)
ROWRED_KERNEL(rowred_2x512, 2, 512, 4, 256)
ROWRED_KERNEL(rowred_4x256_t16, 4, 256, 4, 16)
ROWRED_KERNEL(rowred_2x1024_t128, 2, 1024, 4, 128)
ROWRED_KERNEL(rowred_8x32_v2, 8, 32, 2, 32)

struct Shape {
    int R, C, V, T;
};

void check_row_reductions(const Shape &s, ckt_kernel_ref kernel)
{
    // windows partially outside the view: the fills (-inf, 0) must not count
    std::vector<Case> cases;
    const int64_t cols_list[] = {1, s.C / 2 + 3, s.C, s.C + 9};
    for (int64_t cols : cols_list)
        for (int64_t row0 : {0, -1, 1})
            for (int64_t col0 : {0, -5, 8})
                cases.push_back(Case{s.R + 1, cols, cols + 8, 0, row0, col0});
    const int64_t n = buffer_elems(cases);
    std::vector<float> h(n);
    ASSERT_EQ(ckt_fill(h.data(), CKT_F32, n, ckt_init_int(-1000, 1000), 12), CKT_SUCCESS);
    DevBuf<float> in(n);
    in.upload(h);
    const std::vector<ckt_window2d> w = windows(cases, in.p);
    DevBuf<ckt_window2d> dw(w.size());
    dw.upload(w);
    const int nv = s.R * s.C / (s.V * s.T);
    DevBuf<float> out(cases.size() * s.T * 2 * nv);
    rowred_params p = {dw.p, out.p};
    ASSERT_EQ(launch(kernel, cases.size(), s.T, &p), CKT_SUCCESS) << ckt_last_error();
    const std::vector<float> o = out.download();
    for (size_t b = 0; b < cases.size(); b++) {
        const Case &c = cases[b];
        for (int t = 0; t < s.T; t++)
            for (int i = 0; i < nv; i++) {
                const int r = ckt_rows_vec_row(s.R, s.C, s.V, s.T, t, i);
                float mx = -INFINITY, sum = 0;
                for (int col = 0; col < s.C; col++)
                    if (inside(c, c.row0 + r, c.col0 + col)) {
                        const float v = h[(c.row0 + r) * c.stride + c.col0 + col];
                        mx = std::max(mx, v);
                        sum += v;
                    }
                const float *ot = &o[(b * s.T + t) * 2 * nv];
                ASSERT_EQ(ot[i], mx) << c << " thread " << t << " vector " << i << " (row " << r << ")";
                ASSERT_EQ(ot[nv + i], sum) << c << " thread " << t << " vector " << i << " (row " << r << ")";
            }
    }
}

#define ROWRED_TEST(NAME, R, C, V, T)                                                              \
    TEST(RegsRowReduce, NAME) { check_row_reductions(Shape{R, C, V, T}, CKT_KERNEL_REF(NAME)); }

ROWRED_TEST(rowred_8x64, 8, 64, 4, 64)
ROWRED_TEST(rowred_2x128, 2, 128, 4, 64)
ROWRED_TEST(rowred_2x512, 2, 512, 4, 256)
ROWRED_TEST(rowred_4x256_t16, 4, 256, 4, 16)
ROWRED_TEST(rowred_2x1024_t128, 2, 1024, 4, 128)
ROWRED_TEST(rowred_8x32_v2, 8, 32, 2, 32)

} // namespace
