// ckt/fmha/schedule.h: the forward's persistent tile orders. Every tile of
// the grid is taken exactly once, whatever the grid's size, in both orders;
// the paired order (causal) gives each block pairs of one (batch, head)'s
// tiles whose key tiles sum to about the same (mtiles or mtiles + 1 tiles'
// worth of keys), longest first.
#include "ckt/fmha/schedule.h"

#include <gtest/gtest.h>

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

} // namespace
