// The row distribution (ckt/tile/rows.h): coordinates on the host, and the
// masked loads and stores between global memory and registers, against a
// host reference over ragged views and windows (tile_test::ragged_cases).
#include "ckt/tile/rows.h"
#include "tests/tile/tile_test_util.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace tile_test;

const uint16_t kFill16 = 0xBEEF;
constexpr float kFill32 = -7.5f;
const uint16_t kSentinel16 = 0xFFFF;
constexpr float kSentinel32 = -1.0f;

// The value thread t of block b stores as its element k (never a sentinel).
CKT_INLINE CKT_HOST_DEVICE uint32_t stored16(int64_t b, int t, int k)
{
    return (uint32_t)((b * 131 + t * 17 + k * 3 + 1) & 0x7fff);
}
CKT_INLINE CKT_HOST_DEVICE float stored32(int64_t b, int t, int k)
{
    return (float)(1 + (b % 1000) * 4096 + t * 64 + k);
}

typedef struct io_params {
    const ckt_window2d *win; // one window per block
    void *out;               // loads: the registers of every thread
} io_params;

// Kernels of one shape: load (registers -> out[block][thread][...]) and
// store (registers of known values -> the block's window).
#define ROWS_B16_KERNELS(NAME, R, C, V, T)                                                         \
    CKT_ROWS_CHECK(R, C, V, T, 2);                                                                \
    CKT_KERNEL(NAME##_load, io_params, p)                                                          \
    {                                                                                              \
        const int t = (int)ckt_thread_idx_x();                                                     \
        const int64_t b = ckt_block_idx_x();                                                       \
        const ckt_window2d w = p.win[b];                                                           \
        uint32_t x[CKT_ROWS_REGS(R, C, T, 2)];                                                     \
        ckt_rows_load_b16(x, &w, R, C, V, T, t, kFill16);                                          \
        uint32_t *o = (uint32_t *)p.out + (b * T + t) * CKT_ROWS_REGS(R, C, T, 2);                 \
        for (int k = 0; k < CKT_ROWS_REGS(R, C, T, 2); k++)                                        \
            o[k] = x[k];                                                                           \
    }                                                                                              \
    CKT_KERNEL(NAME##_store, io_params, p)                                                         \
    {                                                                                              \
        const int t = (int)ckt_thread_idx_x();                                                     \
        const int64_t b = ckt_block_idx_x();                                                       \
        const ckt_window2d w = p.win[b];                                                           \
        uint32_t x[CKT_ROWS_REGS(R, C, T, 2)];                                                     \
        for (int k = 0; k < CKT_ROWS_REGS(R, C, T, 2); k++)                                        \
            x[k] = stored16(b, t, 2 * k) | stored16(b, t, 2 * k + 1) << 16;                        \
        ckt_rows_store_b16(&w, x, R, C, V, T, t);                                                  \
    }

#define ROWS_F32_KERNELS(NAME, R, C, V, T)                                                         \
    CKT_ROWS_CHECK(R, C, V, T, 4);                                                                \
    CKT_KERNEL(NAME##_load, io_params, p)                                                          \
    {                                                                                              \
        const int t = (int)ckt_thread_idx_x();                                                     \
        const int64_t b = ckt_block_idx_x();                                                       \
        const ckt_window2d w = p.win[b];                                                           \
        float x[CKT_ROWS_REGS(R, C, T, 4)];                                                        \
        ckt_rows_load_f32(x, &w, R, C, V, T, t, kFill32);                                          \
        float *o = (float *)p.out + (b * T + t) * CKT_ROWS_REGS(R, C, T, 4);                       \
        for (int k = 0; k < CKT_ROWS_REGS(R, C, T, 4); k++)                                        \
            o[k] = x[k];                                                                           \
    }                                                                                              \
    CKT_KERNEL(NAME##_store, io_params, p)                                                         \
    {                                                                                              \
        const int t = (int)ckt_thread_idx_x();                                                     \
        const int64_t b = ckt_block_idx_x();                                                       \
        const ckt_window2d w = p.win[b];                                                           \
        float x[CKT_ROWS_REGS(R, C, T, 4)];                                                        \
        for (int k = 0; k < CKT_ROWS_REGS(R, C, T, 4); k++)                                        \
            x[k] = stored32(b, t, k);                                                              \
        ckt_rows_store_f32(&w, x, R, C, V, T, t);                                                  \
    }

// 16-byte vectors, a row over 4 threads; a row over more vectors than
// threads (4 threads, 2 warps' worth of vectors each); two warps; 4- and
// 8-byte vectors.
ROWS_B16_KERNELS(b16_8x32, 8, 32, 8, 16)
ROWS_B16_KERNELS(b16_2x64_t4, 2, 64, 8, 4)
ROWS_B16_KERNELS(b16_16x64_t64, 16, 64, 8, 64)
ROWS_B16_KERNELS(b16_4x16_v2, 4, 16, 2, 32)
ROWS_B16_KERNELS(b16_4x32_v4, 4, 32, 4, 8)
ROWS_F32_KERNELS(f32_8x16, 8, 16, 4, 16)
ROWS_F32_KERNELS(f32_4x32_v2_t4, 4, 32, 2, 4)
ROWS_F32_KERNELS(f32_4x8_v1, 4, 8, 1, 32)

struct Shape {
    int R, C, V, T;
};

TEST(Rows, CoordinatesCoverTheTileOnceInVectorOrder)
{
    // the example of rows.h; common shapes; a row over more vectors than
    // threads; 15 threads; C/V neither dividing nor a multiple of T; 1 thread
    const Shape shapes[] = {{4, 32, 8, 8},  {8, 64, 8, 32}, {2, 256, 8, 16}, {16, 16, 4, 64},
                            {3, 40, 8, 15}, {4, 48, 8, 4},  {1, 8, 8, 1}};
    for (const Shape &s : shapes) {
        std::vector<int> seen(s.R * s.C, 0);
        const int vpr = s.C / s.V, nv = s.R * s.C / (s.V * s.T);
        for (int t = 0; t < s.T; t++)
            for (int i = 0; i < nv; i++) {
                const int j = t + i * s.T; // vector j: row j / vpr, cols (j % vpr) * V ..
                ASSERT_EQ(ckt_rows_vec_row(s.R, s.C, s.V, s.T, t, i), j / vpr);
                ASSERT_EQ(ckt_rows_vec_col(s.R, s.C, s.V, s.T, t, i), j % vpr * s.V);
                for (int e = 0; e < s.V; e++) {
                    const int k = i * s.V + e, r = ckt_rows_row(s.R, s.C, s.V, s.T, t, k),
                              c = ckt_rows_col(s.R, s.C, s.V, s.T, t, k);
                    ASSERT_EQ(r, j / vpr);
                    ASSERT_EQ(c, j % vpr * s.V + e);
                    seen[r * s.C + c]++;
                }
            }
        for (int x : seen)
            ASSERT_EQ(x, 1) << "shape " << s.R << "x" << s.C << " V " << s.V << " T " << s.T;
    }
}

TEST(Rows, RegisterCounts)
{
    EXPECT_EQ(CKT_ROWS_VECS(64, 64, 8, 128), 4);
    EXPECT_EQ(CKT_ROWS_ELEMS(64, 64, 128), 32);
    EXPECT_EQ(CKT_ROWS_REGS(64, 64, 128, 2), 16);
    EXPECT_EQ(CKT_ROWS_REGS(64, 64, 128, 4), 32);
}

// Loads every case (one block each) and compares each thread's registers with
// the host: element k of thread t is tile (row, col), data inside the view,
// the fill value outside.
void check_load(const Shape &s, int elem_bytes, ckt_kernel_ref kernel)
{
    const std::vector<Case> cases = ragged_cases(s.R, s.C, s.V);
    const int64_t n = buffer_elems(cases);
    const int words = s.R * s.C * elem_bytes / (4 * s.T);
    DevBuf<uint16_t> in16(elem_bytes == 2 ? n : 0);
    DevBuf<float> in32(elem_bytes == 4 ? n : 0);
    std::vector<uint16_t> h16(n);
    std::vector<float> h32(n);
    for (int64_t i = 0; i < n; i++) {
        h16[i] = pattern16(i);
        h32[i] = pattern32(i);
    }
    std::vector<ckt_window2d> w;
    if (elem_bytes == 2) {
        in16.upload(h16);
        w = windows(cases, in16.p);
    } else {
        in32.upload(h32);
        w = windows(cases, in32.p);
    }
    DevBuf<ckt_window2d> dw(w.size());
    dw.upload(w);
    DevBuf<uint32_t> out(cases.size() * s.T * words);
    io_params p = {dw.p, out.p};
    ASSERT_EQ(launch(kernel, cases.size(), s.T, &p), CKT_SUCCESS) << ckt_last_error();
    const std::vector<uint32_t> got = out.download();
    int bad = 0;
    for (size_t b = 0; b < cases.size() && bad < 5; b++) {
        const Case &c = cases[b];
        for (int t = 0; t < s.T; t++)
            for (int k = 0; k < s.R * s.C / s.T; k++) {
                const int64_t r = c.row0 + ckt_rows_row(s.R, s.C, s.V, s.T, t, k),
                              col = c.col0 + ckt_rows_col(s.R, s.C, s.V, s.T, t, k);
                const uint32_t *reg = &got[(b * s.T + t) * words];
                const bool in = inside(c, r, col);
                const int64_t at = c.off + r * c.stride + col;
                uint32_t want, have;
                if (elem_bytes == 2) {
                    want = in ? h16[at] : kFill16;
                    have = (reg[k / 2] >> (16 * (k % 2))) & 0xffff;
                } else {
                    want = ckt_bits_from_f32(in ? h32[at] : kFill32);
                    have = reg[k];
                }
                if (want != have && bad++ < 5)
                    ADD_FAILURE() << c << ": thread " << t << " element " << k << " (tile "
                                  << r - c.row0 << ", " << col - c.col0 << ") got " << std::hex
                                  << have << " want " << want << std::dec;
            }
    }
}

// Stores known registers through every case's window into its own region of
// a buffer full of sentinels; the host applies the same stores to its copy,
// and the whole buffer must match: nothing is written outside the view.
void check_store(const Shape &s, int elem_bytes, ckt_kernel_ref kernel)
{
    const std::vector<Case> cases = ragged_cases(s.R, s.C, s.V);
    const int64_t region = buffer_elems(cases), n = region * (int64_t)cases.size();
    std::vector<uint16_t> want16(elem_bytes == 2 ? n : 0, kSentinel16);
    std::vector<float> want32(elem_bytes == 4 ? n : 0, kSentinel32);
    DevBuf<uint16_t> out16(want16.size());
    DevBuf<float> out32(want32.size());
    std::vector<ckt_window2d> w;
    if (elem_bytes == 2) {
        out16.upload(want16);
        w = windows(cases, out16.p, region);
    } else {
        out32.upload(want32);
        w = windows(cases, out32.p, region);
    }
    DevBuf<ckt_window2d> dw(w.size());
    dw.upload(w);
    io_params p = {dw.p, NULL};
    ASSERT_EQ(launch(kernel, cases.size(), s.T, &p), CKT_SUCCESS) << ckt_last_error();
    for (size_t b = 0; b < cases.size(); b++) {
        const Case &c = cases[b];
        for (int t = 0; t < s.T; t++)
            for (int k = 0; k < s.R * s.C / s.T; k++) {
                const int64_t r = c.row0 + ckt_rows_row(s.R, s.C, s.V, s.T, t, k),
                              col = c.col0 + ckt_rows_col(s.R, s.C, s.V, s.T, t, k);
                if (!inside(c, r, col))
                    continue;
                const int64_t at = (int64_t)b * region + c.off + r * c.stride + col;
                if (elem_bytes == 2)
                    want16[at] = (uint16_t)stored16((int64_t)b, t, k);
                else
                    want32[at] = stored32((int64_t)b, t, k);
            }
    }
    int bad = 0;
    if (elem_bytes == 2) {
        const std::vector<uint16_t> got = out16.download();
        for (int64_t i = 0; i < n && bad < 5; i++)
            if (got[i] != want16[i] && bad++ < 5)
                ADD_FAILURE() << cases[i / region] << ": buffer element " << i % region << " got "
                              << got[i] << " want " << want16[i];
    } else {
        const std::vector<float> got = out32.download();
        for (int64_t i = 0; i < n && bad < 5; i++)
            if (got[i] != want32[i] && bad++ < 5)
                ADD_FAILURE() << cases[i / region] << ": buffer element " << i % region << " got "
                              << got[i] << " want " << want32[i];
    }
}

#define ROWS_TESTS(NAME, R, C, V, T, EB)                                                           \
    TEST(RowsLoad, NAME) { check_load(Shape{R, C, V, T}, EB, CKT_KERNEL_REF(NAME##_load)); }       \
    TEST(RowsStore, NAME) { check_store(Shape{R, C, V, T}, EB, CKT_KERNEL_REF(NAME##_store)); }

ROWS_TESTS(b16_8x32, 8, 32, 8, 16, 2)
ROWS_TESTS(b16_2x64_t4, 2, 64, 8, 4, 2)
ROWS_TESTS(b16_16x64_t64, 16, 64, 8, 64, 2)
ROWS_TESTS(b16_4x16_v2, 4, 16, 2, 32, 2)
ROWS_TESTS(b16_4x32_v4, 4, 32, 4, 8, 2)
ROWS_TESTS(f32_8x16, 8, 16, 4, 16, 4)
ROWS_TESTS(f32_4x32_v2_t4, 4, 32, 2, 4, 4)
ROWS_TESTS(f32_4x8_v1, 4, 8, 1, 32, 4)

} // namespace
