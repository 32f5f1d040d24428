// ckt/fmha/dropout.h, the backward's keep bits of a key-major tile
// (ckt_fmha_dropout_keep_t: one Philox call per (16-key group, query) pair
// of the warp, shared by shuffles on mma.sync) against the per-element
// function ckt_fmha_dropout_byte, bit for bit, over warp tile shapes, lanes,
// thresholds (0: all kept .. 256: none), seeds, offsets, heads and coordinates.
#include "ckt/fmha/dropout.h"
#include "ckt/host.h"
#include "ckt/tile/mma.h"
#include "tests/fmha/fmha_test_util.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

struct KeepCase {
    float p;
    uint64_t seed, offset;
    uint32_t bh;
    int q0, k0; // k0: a multiple of 16
};

typedef struct keep_params {
    const KeepCase *cases; // one per block (one warp)
    uint64_t *out;         // [block][lane]
} keep_params;

// One kernel per warp tile shape (compile-time, as in the backward).
#define KEEP_KERNEL(WM, WN)                                                                                  \
    CKT_KERNEL(keep_t_##WM##x##WN, keep_params, p)                                                           \
    {                                                                                                        \
        const int lane = (int)ckt_lane_id();                                                                 \
        const int64_t b = ckt_block_idx_x();                                                                 \
        const KeepCase c = p.cases[b];                                                                       \
        const ckt_fmha_dropout d = ckt_fmha_dropout_make(c.p, c.seed, c.offset);                             \
        p.out[b * CKT_WARP_SIZE + lane] = ckt_fmha_dropout_keep_t(&d, c.bh, c.q0, c.k0, WM, WN, lane);      \
    }

struct Shape {
    int wm, wn;
    ckt_kernel_ref k;
};

#if defined(CKT_HAS_MFMA)
KEEP_KERNEL(32, 32)
KEEP_KERNEL(64, 32)
KEEP_KERNEL(32, 64)
KEEP_KERNEL(64, 64)
KEEP_KERNEL(32, 128)
KEEP_KERNEL(96, 32)
#define SHAPE(WM, WN) {WM, WN, CKT_KERNEL_REF(keep_t_##WM##x##WN)}
const Shape kShapes[] = {SHAPE(32, 32), SHAPE(64, 32), SHAPE(32, 64), SHAPE(64, 64), SHAPE(32, 128), SHAPE(96, 32)};
#else
KEEP_KERNEL(16, 16)
KEEP_KERNEL(32, 16)
KEEP_KERNEL(16, 32)
KEEP_KERNEL(32, 32)
KEEP_KERNEL(64, 32)
KEEP_KERNEL(32, 64)
KEEP_KERNEL(16, 48)
KEEP_KERNEL(48, 16)
KEEP_KERNEL(128, 16)
KEEP_KERNEL(16, 128)
KEEP_KERNEL(48, 32)
KEEP_KERNEL(16, 64)
#define SHAPE(WM, WN) {WM, WN, CKT_KERNEL_REF(keep_t_##WM##x##WN)}
const Shape kShapes[] = {SHAPE(16, 16), SHAPE(32, 16), SHAPE(16, 32),  SHAPE(32, 32),  SHAPE(64, 32), SHAPE(32, 64),
                         SHAPE(16, 48), SHAPE(48, 16), SHAPE(128, 16), SHAPE(16, 128), SHAPE(48, 32), SHAPE(16, 64)};
#endif

TEST(DropoutTile, KeepBitsOfTransposedTileMatchTheElementFunction)
{
    std::vector<KeepCase> cases;
    // thresholds 1, 26, 128, 230, 256 (nothing kept), 255, 0 (everything kept)
    const float ps[] = {0.5f / 256.0f, 0.1f, 0.5f, 0.9f, 1.0f, 255.4f / 256.0f, 0.001f};
    for (int k = 0; k < 28; k++) {
        KeepCase c;
        c.p = ps[k % 7];
        c.seed = 0x9E3779B97F4A7C15ull * (uint64_t)(k + 1);
        c.offset = ((uint64_t)k << 33) + 5 * (uint64_t)k;
        c.bh = (uint32_t)(k * 7);
        c.q0 = k * 37 % 300;
        c.k0 = 16 * (k * 5 % 23);
        cases.push_back(c);
    }
    FmhaDeviceBuffers bufs;
    const KeepCase *dcases = (const KeepCase *)bufs.dev(cases.data(), cases.size() * sizeof(KeepCase));
    for (const Shape &s : kShapes) {
        const int regs = CKT_WARP_ACC_REGS(s.wm, s.wn);
        ASSERT_LE(regs, 64);
        const size_t n = cases.size() * CKT_WARP_SIZE;
        uint64_t *dout = (uint64_t *)bufs.dev(nullptr, n * sizeof(uint64_t));
        keep_params prm = {dcases, dout};
        ASSERT_EQ(ckt_rt_launch(s.k, ckt_dim3_make((unsigned)cases.size(), 1, 1), ckt_dim3_make(CKT_WARP_SIZE, 1, 1), 0,
                                NULL, &prm),
                  CKT_SUCCESS)
            << ckt_last_error();
        ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS) << ckt_last_error();
        std::vector<uint64_t> got(n);
        ASSERT_EQ(ckt_rt_memcpy(got.data(), dout, n * sizeof(uint64_t), CKT_D2H), CKT_SUCCESS);
        int bad = 0;
        int64_t kept = 0, total = 0;
        for (size_t b = 0; b < cases.size(); b++) {
            const KeepCase &c = cases[b];
            const ckt_fmha_dropout d = ckt_fmha_dropout_make(c.p, c.seed, c.offset);
            for (int lane = 0; lane < CKT_WARP_SIZE; lane++) {
                uint64_t want = 0;
                for (int i = 0; i < regs; i++) {
                    int r, col;
                    ckt_warp_acc_coord(&r, &col, i, lane, s.wm, s.wn);
                    want |= (uint64_t)(ckt_fmha_dropout_byte(&d, c.bh, c.q0 + col, c.k0 + r) >= d.threshold) << i;
                }
                const uint64_t g = got[b * CKT_WARP_SIZE + lane];
                kept += __builtin_popcountll(g);
                total += regs;
                if (g != want && bad++ < 5)
                    ADD_FAILURE() << "tile " << s.wm << "x" << s.wn << " case " << b << " lane " << lane << ": got 0x"
                                  << std::hex << g << ", want 0x" << want << std::dec;
            }
        }
        EXPECT_EQ(bad, 0) << "tile " << s.wm << "x" << s.wn;
        EXPECT_GT(kept, 0);
        EXPECT_LT(kept, total);
    }
}

// The 4-byte comparison behind it, every byte against every threshold <= 255,
// in each byte position, with the other bytes at their extremes.
TEST(DropoutTile, BytewiseCompareIsExact)
{
    for (uint32_t t = 0; t < 256; t++)
        for (uint32_t x = 0; x < 256; x++)
            for (int pos = 0; pos < 4; pos++)
                for (uint32_t other : {0x00u, 0x7fu, 0x80u, 0xffu, t}) {
                    uint32_t w = 0;
                    for (int b = 0; b < 4; b++)
                        w |= (b == pos ? x : other) << (8 * b);
                    const uint32_t got = ckt_fmha_dropout_ge4(w, t * 0x01010101u);
                    uint32_t want = 0;
                    for (int b = 0; b < 4; b++)
                        want |= (uint32_t)(((w >> (8 * b)) & 0xffu) >= t) << (8 * b + 7);
                    ASSERT_EQ(got, want) << "t " << t << " w 0x" << std::hex << w;
                }
}

} // namespace
