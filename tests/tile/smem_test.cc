// Shared-memory tiles (ckt/tile/smem.h): the layouts (a bijection that keeps
// 16-byte chunks whole; which warp accesses are free of bank conflicts, as
// the table in smem.h says), global -> shared copies (synchronous and
// asynchronous) over ragged windows, and shared <-> registers, plain and
// transposing, each against a host reference, for every layout.
#include "ckt/tile/smem.h"
#include "tests/tile/tile_test_util.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

namespace {

using namespace tile_test;

const int kLayouts[] = {CKT_SMEM_ROW_MAJOR, CKT_SMEM_PADDED, CKT_SMEM_SWIZZLE, CKT_SMEM_SWIZZLE_T};
const char *const kLayoutNames[] = {"row-major", "padded", "swizzle", "swizzle_t"};

bool swizzled(int layout) { return layout == CKT_SMEM_SWIZZLE || layout == CKT_SMEM_SWIZZLE_T; }

// >>layouts on the host

TEST(SmemLayout, BijectionKeepsChunksWhole)
{
    struct { int C, eb; } shapes[] = {{64, 2}, {128, 2}, {192, 2}, {32, 4}, {64, 4}, {8, 2}, {24, 2}, {4, 4}};
    const int R = 19;
    for (auto s : shapes)
        for (int layout : kLayouts) {
            if (swizzled(layout) && s.C * s.eb % 128)
                continue; // CKT_SMEM_CHECK rejects it
            const int size = CKT_SMEM_ELEMS(layout, R, s.C, s.eb), ce = 16 / s.eb;
            std::set<int> seen;
            for (int r = 0; r < R; r++)
                for (int c = 0; c < s.C; c++) {
                    const int off = ckt_smem_offset(layout, s.C, s.eb, r, c);
                    ASSERT_GE(off, 0);
                    ASSERT_LT(off, size);
                    ASSERT_TRUE(seen.insert(off).second) << "layout " << layout << " (" << r << ", " << c << ")";
                    // chunks move whole and stay 16-byte aligned
                    ASSERT_EQ(off - c % ce, ckt_smem_offset(layout, s.C, s.eb, r, c - c % ce));
                    ASSERT_EQ((off - c % ce) * s.eb % 16, 0);
                }
        }
    EXPECT_EQ(CKT_SMEM_ELEMS(CKT_SMEM_PADDED, 64, 64, 2), 64 * 72);
    EXPECT_EQ(CKT_SMEM_BYTES(CKT_SMEM_SWIZZLE, 64, 64, 2), 8192);
}

// Accesses of one warp instruction: (byte address, bytes) per lane. Returns
// the worst number of distinct 4-byte words that one of the 32 banks must
// serve in one phase (16-byte accesses go 8 lanes per phase, 8-byte 16 lanes,
// smaller 32): 1 means conflict-free.
int bank_ways(const std::vector<std::pair<int, int>> &acc)
{
    if (acc.empty())
        return 0;
    const int per_phase = acc[0].second == 16 ? 8 : acc[0].second == 8 ? 16 : 32;
    int worst = 0;
    for (size_t p0 = 0; p0 < acc.size(); p0 += per_phase) {
        std::map<int, std::set<int>> words; // bank -> words
        for (size_t l = p0; l < acc.size() && l < p0 + per_phase; l++)
            for (int b = 0; b < acc[l].second; b += 4)
                words[(acc[l].first + b) / 4 % 32].insert((acc[l].first + b) / 4);
        for (auto &w : words)
            worst = std::max(worst, (int)w.second.size());
    }
    return worst;
}

// A warp (lanes 0..31) storing its first vector of the row distribution.
int ways_row_vectors(int layout, int C, int eb)
{
    const int V = 16 / eb, T = 32, R = T * V / C;
    std::vector<std::pair<int, int>> acc;
    for (int t = 0; t < T; t++)
        acc.push_back({ckt_smem_offset(layout, C, eb, ckt_rows_vec_row(R, C, V, T, t, 0),
                                       ckt_rows_vec_col(R, C, V, T, t, 0)) * eb, 16});
    return bank_ways(acc);
}

// ldmatrix: lanes 0..7 read chunk `chunk` of rows r0 .. r0+7.
int ways_ldmatrix(int layout, int C, int eb, int r0, int chunk)
{
    std::vector<std::pair<int, int>> acc;
    for (int l = 0; l < 8; l++)
        acc.push_back({ckt_smem_offset(layout, C, eb, r0 + l, chunk * 16 / eb) * eb, 16});
    return bank_ways(acc);
}

// ckt_rows_load_smem_trans: the first warp's reads of element e of vector i.
int ways_trans(int layout, int R, int C, int V, int T, int eb)
{
    int worst = 0;
    for (int i = 0; i < C * R / (V * T); i++)
        for (int e = 0; e < V; e++) {
            std::vector<std::pair<int, int>> acc;
            for (int t = 0; t < 32; t++) {
                const int orow = ckt_rows_vec_row(C, R, V, T, t, i), ocol = ckt_rows_vec_col(C, R, V, T, t, i);
                acc.push_back({ckt_smem_offset(layout, C, eb, ocol + e, orow) * eb, eb});
            }
            worst = std::max(worst, bank_ways(acc));
        }
    return worst;
}

TEST(SmemLayout, BankConflictsAsDocumented)
{
    for (int li = 0; li < 4; li++) {
        const int layout = kLayouts[li];
        // a row's vectors: always free
        EXPECT_EQ(ways_row_vectors(layout, 64, 2), 1) << kLayoutNames[li];
        EXPECT_EQ(ways_row_vectors(layout, 128, 2), 1) << kLayoutNames[li];
        EXPECT_EQ(ways_row_vectors(layout, 32, 4), 1) << kLayoutNames[li];
        // ldmatrix: 8 consecutive rows, one chunk
        int ld = 0;
        for (int r0 : {0, 8, 16, 56})
            for (int chunk = 0; chunk < 8; chunk++)
                ld = std::max(ld, ways_ldmatrix(layout, 64, 2, r0, chunk));
        EXPECT_EQ(ld, layout == CKT_SMEM_ROW_MAJOR ? 8 : 1) << kLayoutNames[li];
        // transposing reads of the transpose example's tiles
        const int tb16 = ways_trans(layout, 64, 64, 8, 256, 2), tf32 = ways_trans(layout, 32, 64, 4, 256, 4);
        if (layout == CKT_SMEM_SWIZZLE_T) {
            EXPECT_EQ(tb16, 1);
            EXPECT_EQ(tf32, 1);
        } else {
            EXPECT_GT(tb16, 1) << kLayoutNames[li];
            EXPECT_GT(tf32, 1) << kLayoutNames[li];
        }
        printf("%-10s ldmatrix %d-way, transposing reads: 16-bit %d-way, fp32 %d-way\n",
               kLayoutNames[li], ld, tb16, tf32);
    }
}

// >>global -> shared

typedef struct g2s_params {
    const ckt_window2d *win; // one per block
    void *out;               // per block: the shared tile's image (elems elements)
    int layout, async, elems;
} g2s_params;

const uint16_t kFill16 = 0x7bad;
constexpr float kFill32 = 3.5f;

#define G2S_KERNELS(NAME, R, C, V, T)                                                              \
    CKT_ROWS_CHECK(R, C, V, T, 2);                                                                \
    CKT_SMEM_CHECK(CKT_SMEM_SWIZZLE_T, C, 2);                                                     \
    CKT_KERNEL(NAME##_b16, g2s_params, p)                                                          \
    {                                                                                              \
        CKT_SHARED_ARRAY(uint16_t, tile, CKT_SMEM_ELEMS(CKT_SMEM_PADDED, R, C, 2));                \
        const int t = (int)ckt_thread_idx_x();                                                     \
        const int64_t b = ckt_block_idx_x();                                                       \
        const ckt_window2d w = p.win[b];                                                           \
        if (p.async) {                                                                             \
            ckt_smem_load_async_b16(tile, p.layout, &w, R, C, V, T, t);                            \
            ckt_cp_async_commit();                                                                 \
            ckt_cp_async_wait(0);                                                                  \
        } else {                                                                                   \
            ckt_smem_load_b16(tile, p.layout, &w, R, C, V, T, t, kFill16);                         \
        }                                                                                          \
        ckt_block_sync();                                                                          \
        for (int i = t; i < p.elems; i += T)                                                       \
            ((uint16_t *)p.out)[b * p.elems + i] = tile[i];                                        \
    }

#define G2S_KERNELS_F32(NAME, R, C, V, T)                                                          \
    CKT_ROWS_CHECK(R, C, V, T, 4);                                                                \
    CKT_SMEM_CHECK(CKT_SMEM_SWIZZLE_T, C, 4);                                                     \
    CKT_KERNEL(NAME##_f32, g2s_params, p)                                                          \
    {                                                                                              \
        CKT_SHARED_ARRAY(float, tile, CKT_SMEM_ELEMS(CKT_SMEM_PADDED, R, C, 4));                   \
        const int t = (int)ckt_thread_idx_x();                                                     \
        const int64_t b = ckt_block_idx_x();                                                       \
        const ckt_window2d w = p.win[b];                                                           \
        if (p.async) {                                                                             \
            ckt_smem_load_async_f32(tile, p.layout, &w, R, C, V, T, t);                            \
            ckt_cp_async_wait_all();                                                               \
        } else {                                                                                   \
            ckt_smem_load_f32(tile, p.layout, &w, R, C, V, T, t, kFill32);                         \
        }                                                                                          \
        ckt_block_sync();                                                                          \
        for (int i = t; i < p.elems; i += T)                                                       \
            ((float *)p.out)[b * p.elems + i] = tile[i];                                           \
    }

// 16-byte vectors (cp.async 16), 8-byte (cp.async 8), 4-byte (cp.async 4);
// more vectors than threads in a row
G2S_KERNELS(g2s_8x64, 8, 64, 8, 32)
G2S_KERNELS(g2s_4x64_v4, 4, 64, 4, 16)
G2S_KERNELS(g2s_2x128_t8, 2, 128, 8, 8)
G2S_KERNELS_F32(g2s_8x32, 8, 32, 4, 32)
G2S_KERNELS_F32(g2s_4x32_v1, 4, 32, 1, 64)

struct Shape {
    int R, C, V, T;
};

void check_g2s(const Shape &s, int eb, ckt_kernel_ref kernel)
{
    const std::vector<Case> cases = ragged_cases(s.R, s.C, s.V);
    const int64_t n = buffer_elems(cases);
    std::vector<uint16_t> h16(n);
    std::vector<float> h32(n);
    for (int64_t i = 0; i < n; i++) {
        h16[i] = pattern16(i);
        h32[i] = pattern32(i);
    }
    DevBuf<uint16_t> in16(eb == 2 ? n : 0);
    DevBuf<float> in32(eb == 4 ? n : 0);
    std::vector<ckt_window2d> w;
    if (eb == 2) {
        in16.upload(h16);
        w = windows(cases, in16.p);
    } else {
        in32.upload(h32);
        w = windows(cases, in32.p);
    }
    DevBuf<ckt_window2d> dw(w.size());
    dw.upload(w);
    for (int li = 0; li < 4; li++)
        for (int async = 0; async < 2; async++) {
            const int layout = kLayouts[li], elems = CKT_SMEM_ELEMS(layout, s.R, s.C, eb);
            DevBuf<uint32_t> out((cases.size() * elems * eb + 3) / 4);
            g2s_params p = {dw.p, out.p, layout, async, elems};
            ASSERT_EQ(launch(kernel, cases.size(), s.T, &p), CKT_SUCCESS) << ckt_last_error();
            const std::vector<uint32_t> o = out.download();
            int bad = 0;
            for (size_t b = 0; b < cases.size() && bad < 5; b++) {
                const Case &c = cases[b];
                for (int r = 0; r < s.R; r++)
                    for (int col = 0; col < s.C; col++) {
                        const int64_t at = (int64_t)b * elems + ckt_smem_offset(layout, s.C, eb, r, col);
                        const bool in = inside(c, c.row0 + r, c.col0 + col);
                        const int64_t src = c.off + (c.row0 + r) * c.stride + c.col0 + col;
                        uint32_t want, have;
                        if (eb == 2) {
                            want = in ? h16[src] : async ? 0 : kFill16;
                            have = ((const uint16_t *)o.data())[at];
                        } else {
                            want = ckt_bits_from_f32(in ? h32[src] : async ? 0.0f : kFill32);
                            have = o[at];
                        }
                        if (want != have && bad++ < 5)
                            ADD_FAILURE() << kLayoutNames[li] << (async ? " async " : " sync ") << c
                                          << ": tile (" << r << ", " << col << ") got " << std::hex
                                          << have << " want " << want << std::dec;
                    }
            }
        }
}

TEST(SmemLoad, B16_8x64) { check_g2s(Shape{8, 64, 8, 32}, 2, CKT_KERNEL_REF(g2s_8x64_b16)); }
TEST(SmemLoad, B16_4x64_V4) { check_g2s(Shape{4, 64, 4, 16}, 2, CKT_KERNEL_REF(g2s_4x64_v4_b16)); }
TEST(SmemLoad, B16_2x128_T8) { check_g2s(Shape{2, 128, 8, 8}, 2, CKT_KERNEL_REF(g2s_2x128_t8_b16)); }
TEST(SmemLoad, F32_8x32) { check_g2s(Shape{8, 32, 4, 32}, 4, CKT_KERNEL_REF(g2s_8x32_f32)); }
TEST(SmemLoad, F32_4x32_V1) { check_g2s(Shape{4, 32, 1, 64}, 4, CKT_KERNEL_REF(g2s_4x32_v1_f32)); }

// >>shared <-> registers

typedef struct s2r_params {
    const uint32_t *image; // the shared tile's contents (words)
    uint32_t *regs;        // per thread: the tile's registers, then the transpose's
    uint32_t *back;        // the tile stored back from the registers (words)
    int layout, words;     // words of the shared tile
} s2r_params;

// Thread t: x = its vectors of the tile, y = its vectors of the tile's
// transpose (C x R), then x stored into a second tile.
#define S2R_KERNEL(NAME, R, C, V, T, EB, TYPE, SUFFIX)                                             \
    CKT_ROWS_CHECK(R, C, V, T, EB);                                                               \
    CKT_ROWS_CHECK(C, R, V, T, EB);                                                               \
    CKT_KERNEL(NAME, s2r_params, p)                                                                \
    {                                                                                              \
        CKT_SHARED_ARRAY(uint32_t, tile, CKT_SMEM_BYTES(CKT_SMEM_PADDED, R, C, EB) / 4);           \
        CKT_SHARED_ARRAY(uint32_t, back, CKT_SMEM_BYTES(CKT_SMEM_PADDED, R, C, EB) / 4);           \
        const int t = (int)ckt_thread_idx_x();                                                     \
        for (int i = t; i < p.words; i += T) {                                                     \
            tile[i] = p.image[i];                                                                  \
            back[i] = 0xA5A5A5A5u;                                                                 \
        }                                                                                          \
        ckt_block_sync();                                                                          \
        TYPE x[CKT_ROWS_REGS(R, C, T, EB)], y[CKT_ROWS_REGS(R, C, T, EB)];                         \
        ckt_rows_load_smem_##SUFFIX(x, tile, p.layout, R, C, V, T, t);                             \
        ckt_rows_load_smem_trans_##SUFFIX(y, tile, p.layout, R, C, V, T, t);                       \
        ckt_rows_store_smem_##SUFFIX(back, p.layout, x, R, C, V, T, t);                            \
        const int n = CKT_ROWS_REGS(R, C, T, EB);                                                  \
        for (int k = 0; k < n; k++) {                                                              \
            memcpy(&p.regs[(t * 2) * n + k], &x[k], 4);                                            \
            memcpy(&p.regs[(t * 2 + 1) * n + k], &y[k], 4);                                       \
        }                                                                                          \
        ckt_block_sync();                                                                          \
        for (int i = t; i < p.words; i += T)                                                       \
            p.back[i] = back[i];                                                                   \
    }

S2R_KERNEL(s2r_b16_64x64, 64, 64, 8, 64, 2, uint32_t, b16)
S2R_KERNEL(s2r_b16_16x64_v4, 16, 64, 4, 32, 2, uint32_t, b16)
S2R_KERNEL(s2r_f32_32x64, 32, 64, 4, 64, 4, float, f32)
S2R_KERNEL(s2r_f32_8x32_v2, 8, 32, 2, 16, 4, float, f32)

uint32_t elem_of(const std::vector<uint32_t> &words, int64_t i, int eb)
{
    return eb == 4 ? words[i] : (words[i / 2] >> (16 * (i % 2))) & 0xffff;
}

void check_s2r(const Shape &s, int eb, ckt_kernel_ref kernel)
{
    for (int li = 0; li < 4; li++) {
        const int layout = kLayouts[li];
        if (swizzled(layout) && s.C * eb % 128)
            continue;
        const int words = CKT_SMEM_BYTES(layout, s.R, s.C, eb) / 4, n = s.R * s.C * eb / (4 * s.T);
        std::vector<uint32_t> image(words);
        for (int i = 0; i < words; i++)
            image[i] = eb == 2 ? (uint32_t)pattern16(2 * i) | (uint32_t)pattern16(2 * i + 1) << 16
                               : ckt_bits_from_f32(pattern32(i));
        DevBuf<uint32_t> dimage(words), regs(2 * s.T * n), back(words);
        dimage.upload(image);
        s2r_params p = {dimage.p, regs.p, back.p, layout, words};
        ASSERT_EQ(launch(kernel, 1, s.T, &p), CKT_SUCCESS) << ckt_last_error();
        const std::vector<uint32_t> got = regs.download(), b = back.download();
        for (int t = 0; t < s.T; t++)
            for (int k = 0; k < s.R * s.C / s.T; k++) {
                // x: tile (r, c); y: transpose (r', c') = tile (c', r')
                const int r = ckt_rows_row(s.R, s.C, s.V, s.T, t, k), c = ckt_rows_col(s.R, s.C, s.V, s.T, t, k);
                const int tr = ckt_rows_row(s.C, s.R, s.V, s.T, t, k), tc = ckt_rows_col(s.C, s.R, s.V, s.T, t, k);
                const std::vector<uint32_t> x(got.begin() + (2 * t) * n, got.begin() + (2 * t + 1) * n);
                const std::vector<uint32_t> y(got.begin() + (2 * t + 1) * n, got.begin() + (2 * t + 2) * n);
                ASSERT_EQ(elem_of(x, k, eb), elem_of(image, ckt_smem_offset(layout, s.C, eb, r, c), eb))
                    << kLayoutNames[li] << " load: thread " << t << " element " << k;
                ASSERT_EQ(elem_of(y, k, eb), elem_of(image, ckt_smem_offset(layout, s.C, eb, tc, tr), eb))
                    << kLayoutNames[li] << " transposing load: thread " << t << " element " << k;
            }
        for (int r = 0; r < s.R; r++)
            for (int c = 0; c < s.C; c++) {
                const int off = ckt_smem_offset(layout, s.C, eb, r, c);
                ASSERT_EQ(elem_of(b, off, eb), elem_of(image, off, eb))
                    << kLayoutNames[li] << " store: tile (" << r << ", " << c << ")";
            }
    }
}

TEST(SmemRegs, B16_64x64) { check_s2r(Shape{64, 64, 8, 64}, 2, CKT_KERNEL_REF(s2r_b16_64x64)); }
TEST(SmemRegs, B16_16x64_V4) { check_s2r(Shape{16, 64, 4, 32}, 2, CKT_KERNEL_REF(s2r_b16_16x64_v4)); }
TEST(SmemRegs, F32_32x64) { check_s2r(Shape{32, 64, 4, 64}, 4, CKT_KERNEL_REF(s2r_f32_32x64)); }
TEST(SmemRegs, F32_8x32_V2) { check_s2r(Shape{8, 32, 2, 16}, 4, CKT_KERNEL_REF(s2r_f32_8x32_v2)); }

} // namespace
