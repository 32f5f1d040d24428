// ckt/fmha/schedule.h: the forward's persistent tile orders. Every tile of
// the grid is taken exactly once, whatever the grid's size, in both orders;
// the paired order (causal) gives each block pairs of one (batch, head)'s
// tiles whose key tiles sum to about the same (mtiles or mtiles + 1 tiles'
// worth of keys), longest first. The backward's causal unit order (a block ->
// unit permutation, key tile major in groups of pairs).
#include "ckt/fmha/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

namespace {

struct Visit {
    int block;
    ckt_fmha_tile t;
};

// The tiles each of `blocks` blocks takes, in its order.
std::vector<std::vector<ckt_fmha_tile>> walk(int batch, int heads, int seqlen, int bm, int64_t blocks, int paired)
{
    const int mtiles = CKT_CEIL_DIV(seqlen, bm);
    const int64_t slots = ckt_fmha_fwd_slots(batch, heads, seqlen, bm, paired);
    std::vector<std::vector<ckt_fmha_tile>> out((size_t)blocks);
    for (int64_t x = 0; x < blocks; x++)
        for (int64_t idx = ckt_fmha_fwd_first_tile(x, paired); idx < slots;
             idx = ckt_fmha_fwd_next_tile(idx, blocks, paired))
            out[(size_t)x].push_back(ckt_fmha_fwd_tile_of(idx, mtiles, heads, bm, paired));
    return out;
}

TEST(FmhaSchedule, EveryTileOnceInBothOrders)
{
    const int bm = 128;
    for (int paired = 0; paired < 2; paired++)
        for (int seqlen : {1, 127, 128, 129, 640, 2048, 2000})
            for (int heads : {1, 3, 16})
                for (int batch : {1, 2, 5})
                    for (int64_t blocks : {1, 2, 7, 132, 100000}) {
                        const int mtiles = CKT_CEIL_DIV(seqlen, bm);
                        std::map<std::tuple<int, int, int>, int> seen;
                        int64_t empty = 0;
                        for (const auto &tiles : walk(batch, heads, seqlen, bm, blocks, paired))
                            for (const ckt_fmha_tile &t : tiles) {
                                if (t.m0 == mtiles * bm) { // an empty slot: the odd middle tile's partner
                                    empty++;
                                    continue;
                                }
                                ASSERT_GE(t.b, 0);
                                ASSERT_LT(t.b, batch);
                                ASSERT_GE(t.h, 0);
                                ASSERT_LT(t.h, heads);
                                ASSERT_EQ(t.m0 % bm, 0);
                                ASSERT_GE(t.m0, 0);
                                ASSERT_LT(t.m0, seqlen);
                                ASSERT_EQ(t.split, 0);
                                seen[std::make_tuple(t.b, t.h, t.m0)]++;
                            }
                        ASSERT_EQ((int64_t)seen.size(), (int64_t)batch * heads * mtiles)
                            << "paired " << paired << " s " << seqlen << " h " << heads << " b " << batch
                            << " blocks " << blocks;
                        for (const auto &kv : seen)
                            ASSERT_EQ(kv.second, 1);
                        // one empty slot a (batch, head) where pairs leave the middle tile alone
                        ASSERT_EQ(empty, paired && mtiles % 2 ? (int64_t)batch * heads : 0);
                    }
}

TEST(FmhaSchedule, UnpairedIsTheGridOrder)
{
    // block x's first tile is the block-per-tile grid's block x: the last
    // query tile of head 0, entry 0 first
    const auto tiles = walk(2, 3, 1000, 128, 5, 0);
    EXPECT_EQ(tiles[0][0].m0, 7 * 128);
    EXPECT_EQ(tiles[0][0].h, 0);
    EXPECT_EQ(tiles[1][0].m0, 6 * 128);
    EXPECT_EQ(tiles[0][1].m0, 2 * 128); // 0 + 5
    EXPECT_EQ(tiles[0][2].m0, 5 * 128); // 10 = head 1's 2nd
    EXPECT_EQ(tiles[0][2].h, 1);
}

TEST(FmhaSchedule, PairsBalanceCausalWork)
{
    // causal, square: query tile m sees m + 1 key tiles of bm keys; a pair,
    // long tile first, sees mtiles + 1, the odd middle tile alone half that
    const int bm = 128;
    for (int seqlen : {2048, 1920, 16384, 129})
        for (int64_t blocks : {1, 13, 132}) {
            const int mtiles = CKT_CEIL_DIV(seqlen, bm);
            const auto tiles = walk(4, 5, seqlen, bm, blocks, 1);
            for (int64_t x = 0; x < blocks; x++) {
                const auto &ts = tiles[(size_t)x];
                ASSERT_EQ(ts.size() % 2, 0u); // slots come in pairs
                for (size_t i = 0; i < ts.size(); i += 2) {
                    ASSERT_EQ(ts[i].b, ts[i + 1].b);
                    ASSERT_EQ(ts[i].h, ts[i + 1].h);
                    ASSERT_GT(ts[i].m0, ts[i + 1].m0 == mtiles * bm ? -1 : ts[i + 1].m0);
                    if (ts[i + 1].m0 == mtiles * bm) {
                        ASSERT_EQ(ts[i].m0, mtiles / 2 * bm) << "the middle tile alone";
                        continue;
                    }
                    ASSERT_EQ(ts[i].m0 / bm + 1 + ts[i + 1].m0 / bm + 1, mtiles + 1) << "block " << x << " pair " << i / 2;
                }
            }
            EXPECT_EQ(tiles[0][0].m0, (mtiles - 1) * bm); // the longest first
        }
}

// The backward's causal unit order: a permutation of the units for any shape;
// inside a group of pairs, key tiles never go down; every pair's first key
// tile (its longest unit) comes before any pair's second in the group; the
// pairs of a group are consecutive ones.
TEST(FmhaSchedule, BackwardUnitOrderIsAPermutationKeyTileMajorInGroups)
{
    for (int64_t pairs : {1, 2, 3, 7, 16, 64, 129})
        for (int64_t ntiles : {1, 2, 5, 16, 32, 128, 200})
            for (int64_t group : {1, 64, 128, 1000}) {
                const int64_t n = pairs * ntiles, g = std::max<int64_t>(1, group / ntiles);
                std::vector<int> seen((size_t)n, 0);
                int64_t prev_kt = -1, prev_group = -1;
                for (int64_t p = 0; p < n; p++) {
                    const int64_t u = ckt_fmha_bwd_unit_of_block(p, pairs, ntiles, group);
                    ASSERT_GE(u, 0);
                    ASSERT_LT(u, n);
                    ASSERT_EQ(seen[(size_t)u]++, 0) << "unit " << u << " twice";
                    const int64_t pair = u / ntiles, kt = u % ntiles, grp = pair / g;
                    ASSERT_GE(grp, prev_group) << "groups run in order";
                    if (grp == prev_group) {
                        ASSERT_GE(kt, prev_kt) << "key tiles never go down inside a group";
                    }
                    prev_group = grp;
                    prev_kt = kt;
                }
                // out of range: unchanged
                EXPECT_EQ(ckt_fmha_bwd_unit_of_block(n, pairs, ntiles, group), n);
                EXPECT_EQ(ckt_fmha_bwd_unit_of_block(-1, pairs, ntiles, group), -1);
            }
    // one group of 4 pairs of 32 tiles (group 128): blocks 0..3 take the 4 pairs' tile 0
    for (int64_t p = 0; p < 4; p++)
        EXPECT_EQ(ckt_fmha_bwd_unit_of_block(p, 8, 32, 128), p * 32);
    EXPECT_EQ(ckt_fmha_bwd_unit_of_block(4, 8, 32, 128), 1);
    EXPECT_EQ(ckt_fmha_bwd_unit_of_block(128, 8, 32, 128), 4 * 32); // the second group starts at pair 4
}

} // namespace
