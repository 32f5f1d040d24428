// ckt/fmha/softmax.h's mask of the backward's transposed tiles
// (ckt_fmha_mask_scores_t: on mma.sync the visible keys of each of a lane's
// query columns from mask.h once, then a compare per register) against the
// per-element predicate ckt_fmha_mask_visible, register by register, over
// warp tile shapes, lanes, every mask kind (windows included), entries of
// unequal lengths and tiles that cross the diagonal, the window edges and
// the ends of the entry.
#include "ckt/fmha/mask.h"
#include "ckt/fmha/softmax.h"
#include "ckt/host.h"
#include "ckt/tile/mma.h"
#include "tests/fmha/fmha_test_util.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <vector>

namespace {

struct MaskCase {
    ckt_fmha_mask_params m;
    int k0, q0; // the tile's first key (rows) and query (columns)
};

typedef struct mask_params {
    const MaskCase *cases; // one per block (one warp)
    uint64_t *out;         // [block][lane]: bit i set where register i was zeroed in both tiles
    int *mismatch;         // [block][lane]: s and t zeroed differently
} mask_params;

// One kernel per warp tile shape (compile-time, as in the backward).
#define MASK_KERNEL(WK, WQ)                                                                                  \
    CKT_KERNEL(mask_t_##WK##x##WQ, mask_params, p)                                                           \
    {                                                                                                        \
        const int lane = (int)ckt_lane_id();                                                                 \
        const int64_t b = ckt_block_idx_x();                                                                 \
        const MaskCase c = p.cases[b];                                                                       \
        float s[CKT_WARP_ACC_REGS(WK, WQ)], t[CKT_WARP_ACC_REGS(WK, WQ)];                                    \
        for (int i = 0; i < CKT_WARP_ACC_REGS(WK, WQ); i++) {                                                \
            s[i] = 1.0f + (float)i;                                                                          \
            t[i] = -2.0f - (float)i;                                                                         \
        }                                                                                                    \
        ckt_fmha_mask_scores_t(s, t, &c.m, c.k0, c.q0, WK, WQ, lane);                                        \
        uint64_t z = 0;                                                                                      \
        int bad = 0;                                                                                         \
        for (int i = 0; i < CKT_WARP_ACC_REGS(WK, WQ); i++) {                                                \
            const int zs = s[i] == 0.0f, zt = t[i] == 0.0f;                                                  \
            bad |= zs != zt || (!zs && (s[i] != 1.0f + (float)i || t[i] != -2.0f - (float)i));               \
            z |= (uint64_t)zs << i;                                                                          \
        }                                                                                                    \
        p.out[b * CKT_WARP_SIZE + lane] = z;                                                                 \
        p.mismatch[b * CKT_WARP_SIZE + lane] = bad;                                                          \
    }

struct Shape {
    int wk, wq;
    ckt_kernel_ref k;
};

#define SHAPE(WK, WQ) {WK, WQ, CKT_KERNEL_REF(mask_t_##WK##x##WQ)}
#if defined(CKT_HAS_MFMA)
MASK_KERNEL(32, 32)
MASK_KERNEL(64, 32)
MASK_KERNEL(32, 64)
const Shape kShapes[] = {SHAPE(32, 32), SHAPE(64, 32), SHAPE(32, 64)};
#else
MASK_KERNEL(16, 16)
MASK_KERNEL(16, 64)  // the wgmma kernel's warp slice
MASK_KERNEL(32, 32)
MASK_KERNEL(64, 32)  // d64's S^T warp tile
MASK_KERNEL(32, 64)
MASK_KERNEL(16, 128)
MASK_KERNEL(48, 16)
const Shape kShapes[] = {SHAPE(16, 16), SHAPE(16, 64), SHAPE(32, 32), SHAPE(64, 32),
                         SHAPE(32, 64), SHAPE(16, 128), SHAPE(48, 16)};
#endif

TEST(MaskTile, TransposedTileMatchesThePredicate)
{
    const ckt_fmha_mask kinds[] = {CKT_MASK_NONE, CKT_MASK_CAUSAL_TOP_LEFT, CKT_MASK_CAUSAL_BOTTOM_RIGHT,
                                   CKT_MASK_WINDOW_TOP_LEFT, CKT_MASK_WINDOW_BOTTOM_RIGHT};
    const int lens[][2] = {{200, 200}, {77, 300}, {300, 77}, {1, 129}, {129, 1}, {64, 64}};
    // windows incl. sides of INT_MAX ("no limit"; a 32-bit sum of mask.h would overflow on them)
    const int wins[][2] = {{10, 5}, {-1, 7}, {40, 0}, {0, 0}, {3, -1}, {INT_MAX, -1}, {-1, INT_MAX}, {INT_MAX, 2}};
    const int nwins = (int)(sizeof(wins) / sizeof(wins[0]));
    std::vector<MaskCase> cases;
    int n = 0;
    for (ckt_fmha_mask kind : kinds)
        for (const auto &len : lens)
            for (int w = 0; w < (kind == CKT_MASK_WINDOW_TOP_LEFT || kind == CKT_MASK_WINDOW_BOTTOM_RIGHT ? nwins : 1);
                 w++)
                for (int pos = 0; pos < 4; pos++, n++) {
                    MaskCase c;
                    c.m = ckt_fmha_mask_make(kind, wins[w][0], wins[w][1], len[0], len[1]);
                    // tiles near the diagonal (offset by the bottom-right shift), past the ends and at 0
                    const int d = c.m.off;
                    const int q0s[] = {0, len[0] - 20, 48 + (n % 5) * 7, len[0] / 2};
                    c.q0 = q0s[pos] < 0 ? 0 : q0s[pos];
                    const int k0 = c.q0 + d - 16 + (n % 3) * 8;
                    c.k0 = k0 < 0 ? 0 : k0;
                    cases.push_back(c);
                }
    FmhaDeviceBuffers bufs;
    const MaskCase *dcases = (const MaskCase *)bufs.dev(cases.data(), cases.size() * sizeof(MaskCase));
    for (const Shape &s : kShapes) {
        const int regs = CKT_WARP_ACC_REGS(s.wk, s.wq);
        ASSERT_LE(regs, 64);
        const size_t nl = cases.size() * CKT_WARP_SIZE;
        uint64_t *dout = (uint64_t *)bufs.dev(nullptr, nl * sizeof(uint64_t));
        int *dbad = (int *)bufs.dev(nullptr, nl * sizeof(int));
        mask_params prm = {dcases, dout, dbad};
        ASSERT_EQ(ckt_rt_launch(s.k, ckt_dim3_make((unsigned)cases.size(), 1, 1), ckt_dim3_make(CKT_WARP_SIZE, 1, 1), 0,
                                NULL, &prm),
                  CKT_SUCCESS)
            << ckt_last_error();
        ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS) << ckt_last_error();
        std::vector<uint64_t> got(nl);
        std::vector<int> gbad(nl);
        ASSERT_EQ(ckt_rt_memcpy(got.data(), dout, nl * sizeof(uint64_t), CKT_D2H), CKT_SUCCESS);
        ASSERT_EQ(ckt_rt_memcpy(gbad.data(), dbad, nl * sizeof(int), CKT_D2H), CKT_SUCCESS);
        int bad = 0;
        int64_t masked = 0, total = 0;
        for (size_t b = 0; b < cases.size(); b++) {
            const MaskCase &c = cases[b];
            for (int lane = 0; lane < CKT_WARP_SIZE; lane++) {
                uint64_t want = 0;
                for (int i = 0; i < regs; i++) {
                    int r, col;
                    ckt_warp_acc_coord(&r, &col, i, lane, s.wk, s.wq);
                    want |= (uint64_t)!ckt_fmha_mask_visible(&c.m, c.q0 + col, c.k0 + r) << i;
                }
                const uint64_t g = got[b * CKT_WARP_SIZE + lane];
                masked += __builtin_popcountll(g);
                total += regs;
                if ((g != want || gbad[b * CKT_WARP_SIZE + lane]) && bad++ < 5)
                    ADD_FAILURE() << "tile " << s.wk << "x" << s.wq << " case " << b << " (sq " << c.m.sq << " sk "
                                  << c.m.sk << " off " << c.m.off << " left " << c.m.left << " right " << c.m.right
                                  << ", k0 " << c.k0 << " q0 " << c.q0 << ") lane " << lane << ": zeroed 0x"
                                  << std::hex << g << ", want 0x" << want << std::dec
                                  << (gbad[b * CKT_WARP_SIZE + lane] ? " (s and t differ, or a kept value changed)"
                                                                     : "");
            }
        }
        EXPECT_EQ(bad, 0) << "tile " << s.wk << "x" << s.wq;
        EXPECT_GT(masked, 0);
        EXPECT_LT(masked, total);
    }
}

} // namespace
