// Helpers shared by the tile-layer tests: device buffers, launches, and the
// sweep of ragged views and windows that every load/store test runs over.
#ifndef CKT_TESTS_TILE_TILE_TEST_UTIL_H
#define CKT_TESTS_TILE_TILE_TEST_UTIL_H

#include "ckt/host.h"
#include "ckt/tile/view.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <vector>

namespace tile_test {

// A device allocation of n elements of T, freed on scope exit.
template <class T> struct DevBuf {
    T *p = nullptr;
    size_t n = 0;
    explicit DevBuf(size_t count) : n(count)
    {
        void *v = nullptr;
        EXPECT_EQ(ckt_rt_malloc(&v, count * sizeof(T)), CKT_SUCCESS) << ckt_last_error();
        p = (T *)v;
    }
    DevBuf(const DevBuf &) = delete;
    DevBuf &operator=(const DevBuf &) = delete;
    ~DevBuf() { ckt_rt_free(p); }
    void upload(const std::vector<T> &h)
    {
        ASSERT_LE(h.size(), n);
        ASSERT_EQ(ckt_rt_memcpy(p, h.data(), h.size() * sizeof(T), CKT_H2D), CKT_SUCCESS);
    }
    std::vector<T> download() const
    {
        std::vector<T> h(n);
        EXPECT_EQ(ckt_rt_memcpy(h.data(), p, n * sizeof(T), CKT_D2H), CKT_SUCCESS);
        return h;
    }
};

inline ckt_status launch(ckt_kernel_ref k, size_t blocks, unsigned threads, const void *params,
                         size_t dyn_shared = 0)
{
    ckt_status s = ckt_rt_launch(k, ckt_dim3_make((unsigned)blocks, 1, 1),
                                 ckt_dim3_make(threads, 1, 1), dyn_shared, NULL, params);
    return s != CKT_SUCCESS ? s : ckt_rt_device_synchronize();
}

// One view of a buffer and one window on it, in elements. The view's element
// (0, 0) is at buffer offset `off`.
struct Case {
    int64_t rows, cols, stride, off;
    int64_t row0, col0;
};

inline std::ostream &operator<<(std::ostream &o, const Case &c)
{
    return o << "view " << c.rows << "x" << c.cols << " stride " << c.stride << " off " << c.off
             << ", window at (" << c.row0 << ", " << c.col0 << ")";
}

// Ragged views around an R x C tile with vectors of V elements: extents 0, 1,
// not multiples of the tile, larger than it; strides dense (often breaking
// 16-byte alignment), aligned, and misaligned with a base one element off
// (with cols = C - 1 the stride is aligned again, and the window at column -1
// has aligned vectors that straddle the view's left edge); windows inside,
// sticking out on every side, and wholly outside.
inline std::vector<Case> ragged_cases(int R, int C, int V)
{
    std::vector<Case> out;
    const int64_t rows_list[] = {0, 1, R - 1, R + 3, 2 * R + 1};
    const int64_t cols_list[] = {0, 1, V + 1, C - 1, C + 5, 2 * C + 3};
    for (int64_t rows : rows_list)
        for (int64_t cols : cols_list) {
            const int64_t aligned = (cols + 15) / 16 * 16 + 16;
            const int64_t strides[3][2] = {{cols, 0}, {aligned, 0}, {cols + 1, 1}};
            const int64_t row0s[] = {0, -R / 2, rows - R / 2, rows - 1, -R};
            const int64_t col0s[] = {0, -1, -3, V, cols - C / 2, cols - 1};
            for (auto &s : strides)
                for (int64_t r0 : row0s)
                    for (int64_t c0 : col0s)
                        out.push_back(Case{rows, cols, s[0], s[1], r0, c0});
        }
    return out;
}

// Elements a buffer needs for every case (plus room around).
inline int64_t buffer_elems(const std::vector<Case> &cases)
{
    int64_t m = 0;
    for (const Case &c : cases)
        m = std::max(m, c.off + c.rows * c.stride + 16);
    return m;
}

inline bool inside(const Case &c, int64_t r, int64_t col)
{
    return r >= 0 && r < c.rows && col >= 0 && col < c.cols;
}

// The windows of the cases over a device buffer, for the kernels.
template <class T>
std::vector<ckt_window2d> windows(const std::vector<Case> &cases, T *base, int64_t region = 0)
{
    std::vector<ckt_window2d> w;
    for (size_t i = 0; i < cases.size(); i++) {
        const Case &c = cases[i];
        ckt_view2d v = ckt_view2d_make(base + (int64_t)i * region + c.off, c.rows, c.cols, c.stride);
        w.push_back(ckt_window2d_make(v, c.row0, c.col0));
    }
    return w;
}

// Distinct 16-bit and fp32 values for buffer element i.
inline uint16_t pattern16(int64_t i) { return (uint16_t)(i * 40503u + 11u); }
inline float pattern32(int64_t i) { return (float)(i % 1000003) + 0.25f; }

} // namespace tile_test

#endif // CKT_TESTS_TILE_TILE_TEST_UTIL_H
