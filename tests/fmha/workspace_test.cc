// ckt/fmha/workspace.h: the backward's workspace planner. Sizes (exact <=
// upper bound), the packed metadata against a reference built here from the
// layout's definition, the persistent partition's properties (contiguous,
// balanced, no idle block, minimal splits), batch mode = group mode with equal
// lengths, error messages, and the synchronous and asynchronous prepares
// (same metadata, dq_acc left as it was, staging reuse on one stream) on every
// backend: the _gpu build runs the asynchronous path on the device.
#include "ckt/fmha/workspace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

// One problem: traits plus the host arrays of group mode (empty in batch mode).
struct Case {
    ckt_fmha_bwd_traits t;
    int block_m, block_n, blocks_per_mp;
    std::vector<int32_t> seqstart_q, seqstart_k, seqlen_q, seqlen_k; // seqlen_*: empty = not given
    std::vector<int> sq, sk;                                           // logical lengths

    const int32_t *sq_start() const { return t.group_mode ? seqstart_q.data() : nullptr; }
    const int32_t *sk_start() const { return t.group_mode ? seqstart_k.data() : nullptr; }
    const int32_t *lq() const { return seqlen_q.empty() ? nullptr : seqlen_q.data(); }
    const int32_t *lk() const { return seqlen_k.empty() ? nullptr : seqlen_k.data(); }
};

std::string describe(const Case &c)
{
    char buf[256];
    snprintf(buf, sizeof buf, "batch %d heads %d/%d hdim %d mode %s mask %d (%d,%d) det %d mps %d tile %dx%d x%d",
             c.t.batch, c.t.nhead_q, c.t.nhead_k, c.t.hdim_q, c.t.group_mode ? "group" : "batch", (int)c.t.mask,
             c.t.window_left, c.t.window_right, c.t.deterministic, c.t.multiprocessors, c.block_m, c.block_n,
             c.blocks_per_mp);
    std::string s = buf;
    s += " sq/sk:";
    for (size_t b = 0; b < c.sq.size() && b < 16; b++)
        s += " " + std::to_string(c.sq[b]) + "/" + std::to_string(c.sk[b]);
    return s;
}

// A random problem: lengths 0..maxlen (zeros included), padding through the
// seqlen arrays, GQA, every mask, both modes, 1..132 multiprocessors.
Case random_case(std::mt19937 &rng, int max_batch, int maxlen, int max_heads)
{
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    Case c;
    c.t = ckt_fmha_bwd_traits();
    c.t.batch = pick(1, max_batch);
    static const int kv[] = {1, 2, 4, 8};
    static const int ratio[] = {1, 1, 2, 4, 8};
    c.t.nhead_k = std::min(kv[pick(0, 3)], max_heads);
    c.t.nhead_q = c.t.nhead_k * ratio[pick(0, 4)];
    static const int hd[] = {32, 64, 96, 128};
    c.t.hdim_q = hd[pick(0, 3)];
    c.t.hdim_v = hd[pick(0, 3)];
    c.t.dtype = pick(0, 1) ? CKT_F16 : CKT_BF16;
    c.t.group_mode = pick(0, 3) != 0;
    c.t.mask = (ckt_fmha_mask)pick(0, 4);
    c.t.window_left = pick(-1, 96);
    c.t.window_right = pick(-1, 96);
    c.t.deterministic = pick(0, 3) != 0;
    static const int mps[] = {1, 2, 3, 7, 16, 32, 80, 108, 132};
    c.t.multiprocessors = mps[pick(0, 8)];
    static const int bns[] = {32, 64, 128};
    static const int bms[] = {16, 32, 64, 128};
    c.block_n = bns[pick(0, 2)];
    c.block_m = bms[pick(0, 3)];
    c.blocks_per_mp = pick(1, 2);
    auto len = [&]() { return pick(0, 5) == 0 ? 0 : pick(1, maxlen); };
    if (c.t.group_mode) {
        const bool pad_q = pick(0, 1), pad_k = pick(0, 1);
        c.seqstart_q.push_back(pick(0, 1) ? 0 : pick(0, 50)); // an offset start is allowed
        c.seqstart_k.push_back(0);
        int mq = 0, mk = 0;
        for (int b = 0; b < c.t.batch; b++) {
            int q = len(), k = len();
            int pq = pad_q ? pick(0, 20) : 0, pk = pad_k ? pick(0, 20) : 0;
            c.sq.push_back(q);
            c.sk.push_back(k);
            if (pad_q)
                c.seqlen_q.push_back(q);
            if (pad_k)
                c.seqlen_k.push_back(k);
            c.seqstart_q.push_back(c.seqstart_q.back() + q + pq);
            c.seqstart_k.push_back(c.seqstart_k.back() + k + pk);
            mq = std::max(mq, q);
            mk = std::max(mk, k);
        }
        c.t.max_seqlen_q = mq + (pick(0, 3) == 0 ? pick(0, 40) : 0);
        c.t.max_seqlen_k = mk + (pick(0, 3) == 0 ? pick(0, 40) : 0);
    } else {
        c.t.max_seqlen_q = len();
        c.t.max_seqlen_k = len();
        c.sq.assign(c.t.batch, c.t.max_seqlen_q);
        c.sk.assign(c.t.batch, c.t.max_seqlen_k);
    }
    return c;
}

ckt_fmha_bwd_plan make_plan(const Case &c)
{
    ckt_fmha_bwd_plan p;
    EXPECT_EQ(ckt_fmha_bwd_plan_make(&p, &c.t, c.block_m, c.block_n, c.blocks_per_mp), CKT_SUCCESS)
        << ckt_last_error();
    return p;
}

std::vector<int64_t> pack(const ckt_fmha_bwd_plan &p, const Case &c)
{
    std::vector<int64_t> meta(p.meta_bytes / sizeof(int64_t));
    EXPECT_EQ(ckt_fmha_bwd_pack(&p, c.sq_start(), c.sk_start(), c.lq(), c.lk(), meta.data(), p.meta_bytes),
              CKT_SUCCESS)
        << ckt_last_error() << "\n" << describe(c);
    return meta;
}

const ckt_fmha_bwd_meta *header(const std::vector<int64_t> &m) { return (const ckt_fmha_bwd_meta *)m.data(); }

// The cost of a unit from the definition: query tiles (block_m rows, aligned)
// holding a row that sees some key of the tile, found row by row through
// ckt_fmha_mask_row_cols; times the query heads per kv head; plus 1.
int64_t reference_cost(const Case &c, int b, int tile)
{
    const ckt_fmha_mask_params m =
        ckt_fmha_mask_make(c.t.mask, c.t.window_left, c.t.window_right, c.sq[b], c.sk[b]);
    const int n0 = tile * c.block_n, n1 = std::min(n0 + c.block_n, c.sk[b]);
    int64_t tiles = 0;
    for (int m0 = 0; m0 < c.sq[b]; m0 += c.block_m) {
        bool sees = false;
        for (int i = m0; i < std::min(m0 + c.block_m, c.sq[b]) && !sees; i++) {
            int lo, hi;
            ckt_fmha_mask_row_cols(&m, i, 0, &lo, &hi);
            sees = std::max(lo, n0) <= std::min(hi, n1 - 1);
        }
        tiles += sees;
    }
    return tiles * (c.t.nhead_q / c.t.nhead_k) + 1;
}

int owner(const int64_t *bs, int grid, int64_t u)
{
    int p = 0;
    while (p + 1 < grid && bs[p + 1] <= u)
        p++;
    return p;
}

// Everything the layout says, rebuilt here from the case's lengths.
void check_meta(const Case &c, const ckt_fmha_bwd_plan &p, const std::vector<int64_t> &meta)
{
    SCOPED_TRACE(describe(c));
    const ckt_fmha_bwd_meta *m = header(meta);
    ASSERT_EQ(ckt_fmha_bwd_check_prepared(meta.data(), p.meta_bytes), CKT_SUCCESS) << ckt_last_error();
    const int B = c.t.batch, G = p.grid, HK = c.t.nhead_k;
    ASSERT_EQ(m->batch, B);
    ASSERT_EQ(m->grid, G);
    ASSERT_EQ(m->persistent, c.t.deterministic);
    ASSERT_EQ(m->block_n, c.block_n);
    const int64_t *us = ckt_fmha_bwd_meta_unit_start(m), *bs = ckt_fmha_bwd_meta_block_start(m),
                  *qs = ckt_fmha_bwd_meta_q_row_start(m), *ds = ckt_fmha_bwd_meta_dq_start(m),
                  *ns = ckt_fmha_bwd_meta_nsplits(m);
    int64_t units = 0, rows = 0;
    std::vector<int64_t> ntiles(B);
    for (int b = 0; b < B; b++) {
        ntiles[b] = (c.sk[b] + c.block_n - 1) / c.block_n;
        ASSERT_EQ(us[b], units) << "entry " << b;
        ASSERT_EQ(qs[b], rows) << "entry " << b;
        units += HK * ntiles[b];
        rows += c.sq[b];
    }
    ASSERT_EQ(m->total_units, units);
    ASSERT_EQ(m->total_q_rows, rows);
    ASSERT_LE(units, p.max_units);
    // nsplits: 1, or (persistent) the lanes of the lane schedule, or else the
    // most distinct blocks that touch one (b, hk)
    for (int b = 0; b < B; b++) {
        int64_t want = m->lanes ? m->lanes : 1;
        for (int hk = 0; c.t.deterministic && !m->lanes && hk < HK; hk++) {
            std::vector<int> owners;
            for (int64_t t = 0; t < ntiles[b]; t++)
                owners.push_back(owner(bs, G, us[b] + hk * ntiles[b] + t));
            std::sort(owners.begin(), owners.end());
            want = std::max<int64_t>(want, std::unique(owners.begin(), owners.end()) - owners.begin());
        }
        ASSERT_EQ(ns[b], want) << "nsplits[" << b << "]";
    }
    // the upper bound's argument: sum_b nsplits[b] <= batch + grid - 1
    int64_t splits = 0;
    for (int b = 0; b < B; b++)
        splits += ns[b];
    ASSERT_LE(splits, B + G - 1);
    int64_t dq = 0;
    for (int b = 0; b < B; b++) {
        ASSERT_EQ(ds[b], dq);
        // each (slot, head) matrix: rows rounded up to 16, columns to 8 (the accumulator order)
        dq += ns[b] * c.t.nhead_q * ((c.sq[b] + 15) / 16 * 16) * (int64_t)((c.t.hdim_q + 7) / 8 * 8);
    }
    ASSERT_EQ(ds[B], dq);
    const int64_t d_offset = (int64_t)p.meta_bytes + (dq * 4 + 255) / 256 * 256;
    ASSERT_EQ(m->d_offset, d_offset);
    const int64_t end = d_offset + 4 * (int64_t)c.t.nhead_q * rows;
    if (m->lanes) { // deterministic, every entry of the same key tiles, and B x lanes slots within the bound
        ASSERT_TRUE(c.t.deterministic && (int64_t)B * (m->lanes - 1) <= G - 1);
    }
    if (c.t.dbias_reduce) { // the dS section: past every length's D, at a plan-fixed offset
        const int64_t ds_bytes = 2 * (int64_t)c.t.batch * c.t.nhead_q * c.t.max_seqlen_q * c.t.max_seqlen_k;
        ASSERT_EQ(m->dbias_offset, (int64_t)p.dbias_offset);
        ASSERT_EQ((int64_t)p.dbias_bytes, ds_bytes);
        ASSERT_EQ(m->dbias_offset % 256, 0);
        ASSERT_GE(m->dbias_offset, end);
        ASSERT_EQ(m->need_bytes, m->dbias_offset + ds_bytes);
    } else {
        ASSERT_EQ(m->dbias_offset, 0);
        ASSERT_EQ(m->need_bytes, end);
    }
    ASSERT_LE((size_t)m->need_bytes, ckt_fmha_bwd_workspace_upper_bound(&p));

    if (!c.t.deterministic) {
        ASSERT_EQ(G, std::max<int64_t>(1, p.max_units));
        return;
    }
    // the partition: contiguous, covering, every unit's slot inside nsplits
    ASSERT_EQ(bs[0], 0);
    ASSERT_EQ(bs[G], units);
    for (int q = 0; q < G; q++)
        ASSERT_LE(bs[q], bs[q + 1]) << "block " << q;
    for (int b = 0; b < B; b++)
        for (int hk = 0; hk < HK; hk++)
            for (int64_t t = 0; t < ntiles[b]; t++) {
                const int64_t u = us[b] + hk * ntiles[b] + t;
                const int q = owner(bs, G, u);
                ASSERT_TRUE(bs[q] <= u && u < bs[q + 1]);
                if (!m->lanes) {
                    ASSERT_LT(q - owner(bs, G, us[b] + hk * ntiles[b]), ns[b]) << "unit " << u;
                }
            }
    // the lane schedule: every unit once; a block's units round by round, and
    // in a round one head's key tiles in increasing order; key tile n on lane
    // n % lanes in even rows of lanes tiles and lanes - 1 - n % lanes in odd
    // ones, whose slot it adds into
    if (m->lanes) {
        for (int b = 0; b < B; b++)
            ASSERT_EQ(ntiles[b], m->lane_tiles) << "entry " << b;
        std::vector<int> seen(units, 0);
        for (int q = 0; q < G; q++) {
            int64_t prev_head = -1, prev_n = -1;
            for (int64_t i = 0; i < ckt_fmha_bwd_lane_count(m, q); i++) {
                const int64_t u = ckt_fmha_bwd_lane_unit(m, q, i);
                ASSERT_TRUE(u >= 0 && u < units) << "block " << q << " unit " << u;
                seen[u]++;
                const int64_t head = u / m->lane_tiles, n = u % m->lane_tiles;
                const int64_t row = n / m->lanes, lane = row % 2 ? m->lanes - 1 - n % m->lanes : n % m->lanes;
                ASSERT_EQ(lane, q % m->lanes) << "block " << q << " unit " << u;
                int64_t per = 0; // the tiles of lane q % lanes in one head
                for (int64_t t = 0; t < m->lane_tiles; t++)
                    per += ((t / m->lanes) % 2 ? m->lanes - 1 - t % m->lanes : t % m->lanes) == q % m->lanes;
                ASSERT_EQ(head / m->lane_heads, i / per);
                if (head == prev_head) {
                    ASSERT_GT(n, prev_n) << "block " << q;
                } else {
                    ASSERT_GT(head, prev_head) << "block " << q;
                }
                prev_head = head;
                prev_n = n;
            }
        }
        for (int64_t u = 0; u < units; u++)
            ASSERT_EQ(seen[u], 1) << "unit " << u;
    }
    if (units == 0)
        return;
    // balance: no block costs more than the average plus the costliest unit
    std::vector<int64_t> cost;
    int64_t cmax = 0, total = 0;
    for (int b = 0; b < B; b++)
        for (int hk = 0; hk < HK; hk++)
            for (int64_t t = 0; t < ntiles[b]; t++) {
                cost.push_back(reference_cost(c, b, (int)t));
                cmax = std::max(cmax, cost.back());
                total += cost.back();
            }
    int64_t worst = 0;
    for (int q = 0; q < G; q++) {
        int64_t s = 0;
        for (int64_t u = bs[q]; u < bs[q + 1]; u++)
            s += cost[u];
        worst = std::max(worst, s);
    }
    EXPECT_LE(worst * G, total + cmax * G) << "worst block " << worst << ", average " << total / (double)G
                                           << ", costliest unit " << cmax;
    // no idle multiprocessor: one unit per block at least when there are enough,
    // otherwise one block per unit
    for (int q = 0; q < G; q++) {
        if (units >= G)
            ASSERT_GE(bs[q + 1] - bs[q], 1) << "block " << q << " idle with " << units << " units";
        else
            ASSERT_EQ(bs[q + 1] - bs[q], q < units ? 1 : 0) << "block " << q;
    }
}

TEST(BwdWorkspace, RandomVarlenSizesAndPartitions)
{
    std::mt19937 rng(1234);
    int persistent = 0, group = 0, crowded = 0;
    int reduced = 0;
    for (int i = 0; i < 240; i++) {
        Case c = random_case(rng, 16, 300, 8);
        c.t.dbias_reduce = i % 4 == 3; // a broadcast dbias: the dS section too
        reduced += c.t.dbias_reduce;
        ckt_fmha_bwd_plan p = make_plan(c);
        std::vector<int64_t> meta = pack(p, c);
        check_meta(c, p, meta);
        if (HasFatalFailure())
            return;
        size_t exact = 0;
        ASSERT_EQ(ckt_fmha_bwd_workspace_size(&p, c.sq_start(), c.sk_start(), c.lq(), c.lk(), &exact), CKT_SUCCESS);
        EXPECT_EQ(exact, (size_t)header(meta)->need_bytes);
        EXPECT_LE(exact, ckt_fmha_bwd_workspace_upper_bound(&p)) << describe(c);
        persistent += c.t.deterministic;
        group += c.t.group_mode;
        crowded += c.t.deterministic && header(meta)->total_units >= p.grid;
        // packing is a function of its inputs
        EXPECT_EQ(pack(p, c), meta);
    }
    EXPECT_GT(persistent, 100);
    EXPECT_GT(group, 100);
    EXPECT_GT(crowded, 20); // enough cases with more units than blocks
    EXPECT_EQ(reduced, 60);
}

TEST(BwdWorkspace, UpperBoundIsTightForUniformMaxima)
{
    // every entry at the maxima, splits at their most: exact == bound
    Case c;
    c.t = ckt_fmha_bwd_traits();
    c.t.batch = 3;
    c.t.nhead_q = c.t.nhead_k = 1;
    c.t.hdim_q = c.t.hdim_v = 64;
    c.t.dtype = CKT_BF16;
    c.t.max_seqlen_q = 100;
    c.t.max_seqlen_k = 4 * 64;
    c.t.deterministic = 1;
    c.t.multiprocessors = 64; // more blocks than units: one unit per block, 4 splits
    c.block_m = 64;
    c.block_n = 64;
    c.blocks_per_mp = 1;
    c.sq.assign(3, 100);
    c.sk.assign(3, 256);
    ckt_fmha_bwd_plan p = make_plan(c);
    std::vector<int64_t> meta = pack(p, c);
    check_meta(c, p, meta);
    EXPECT_EQ(ckt_fmha_bwd_meta_nsplits(header(meta))[0], 4);
    EXPECT_EQ((size_t)header(meta)->need_bytes, ckt_fmha_bwd_workspace_upper_bound(&p));
}

TEST(BwdWorkspace, UpperBoundCountsTheGridOnceNotPerEntry)
{
    // 64 entries of up to 4096 keys on 16 blocks: at most 64 + 15 slots in all,
    // not 64 entries x 16
    ckt_fmha_bwd_traits t = ckt_fmha_bwd_traits();
    t.batch = 64;
    t.nhead_q = 8;
    t.nhead_k = 2;
    t.hdim_q = t.hdim_v = 128;
    t.dtype = CKT_BF16;
    t.group_mode = 1;
    t.max_seqlen_q = t.max_seqlen_k = 4096;
    t.deterministic = 1;
    t.multiprocessors = 8;
    ckt_fmha_bwd_plan p;
    ASSERT_EQ(ckt_fmha_bwd_plan_make(&p, &t, 64, 128, 2), CKT_SUCCESS);
    const size_t rows = 64 * 4096, dq = rows * 8 * 128 * 4 * (64 + 15) / 64;
    EXPECT_EQ(ckt_fmha_bwd_workspace_upper_bound(&p), p.meta_bytes + (dq + 255) / 256 * 256 + rows * 8 * 4);
    // and it holds: every entry at the maxima but the last, causal
    Case c;
    c.t = t;
    c.t.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    c.block_m = 64;
    c.block_n = 128;
    c.blocks_per_mp = 2;
    c.seqstart_q = {0};
    c.seqstart_k = {0};
    for (int b = 0; b < 64; b++) {
        const int l = b == 63 ? 1000 : 4096;
        c.sq.push_back(l);
        c.sk.push_back(l);
        c.seqstart_q.push_back(c.seqstart_q.back() + l);
        c.seqstart_k.push_back(c.seqstart_k.back() + l);
    }
    ckt_fmha_bwd_plan pc = make_plan(c);
    check_meta(c, pc, pack(pc, c));
}

TEST(BwdWorkspace, ManyHeadsFewKeysLeaveNoBlockIdle)
{
    // batch 2, 64 heads, one key tile each: 128 units
    for (int mps : {132, 128, 64, 7}) {
        Case c;
        c.t = ckt_fmha_bwd_traits();
        c.t.batch = 2;
        c.t.nhead_q = c.t.nhead_k = 64;
        c.t.hdim_q = c.t.hdim_v = 128;
        c.t.dtype = CKT_F16;
        c.t.group_mode = 1;
        c.t.max_seqlen_q = 512;
        c.t.max_seqlen_k = 64;
        c.t.deterministic = 1;
        c.t.multiprocessors = mps;
        c.block_m = 64;
        c.block_n = 64;
        c.blocks_per_mp = 1;
        c.seqstart_q = {0, 512, 512 + 64}; // unequal costs: 8 and 1 query tiles
        c.seqstart_k = {0, 64, 128};
        c.sq = {512, 64};
        c.sk = {64, 64};
        ckt_fmha_bwd_plan p = make_plan(c);
        std::vector<int64_t> meta = pack(p, c);
        check_meta(c, p, meta);
        const int64_t *bs = ckt_fmha_bwd_meta_block_start(header(meta));
        int busy = 0;
        for (int q = 0; q < p.grid; q++)
            busy += bs[q + 1] > bs[q];
        EXPECT_EQ(busy, std::min(p.grid, 128)) << mps << " multiprocessors";
        for (int b = 0; b < 2; b++)
            EXPECT_EQ(ckt_fmha_bwd_meta_nsplits(header(meta))[b], 1); // one key tile: one slot
    }
}

TEST(BwdWorkspace, SeveralTilesOfOneHeadShareASlot)
{
    // one entry, one head, 32 key tiles on 4 blocks, in group mode with a
    // second entry of other lengths (no lane schedule): 4 slots, not 32
    Case c;
    c.t = ckt_fmha_bwd_traits();
    c.t.group_mode = 1;
    c.t.batch = 2;
    c.t.nhead_q = c.t.nhead_k = 1;
    c.t.hdim_q = c.t.hdim_v = 64;
    c.t.dtype = CKT_F16;
    c.t.max_seqlen_q = 2048;
    c.t.max_seqlen_k = 2048;
    c.t.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    c.t.deterministic = 1;
    c.t.multiprocessors = 4;
    c.block_m = 64;
    c.block_n = 64;
    c.blocks_per_mp = 1;
    c.sq = {2048, 0};
    c.sk = {2048, 64};
    c.seqstart_q = {0, 2048, 2048};
    c.seqstart_k = {0, 2048, 2048 + 64};
    ckt_fmha_bwd_plan p = make_plan(c);
    std::vector<int64_t> meta = pack(p, c);
    check_meta(c, p, meta);
    EXPECT_EQ(header(meta)->lanes, 0);
    EXPECT_EQ(ckt_fmha_bwd_meta_nsplits(header(meta))[0], 4);
    // causal: the early key tiles see more queries, so the first block holds fewer tiles
    const int64_t *bs = ckt_fmha_bwd_meta_block_start(header(meta));
    EXPECT_LT(bs[1] - bs[0], bs[3] - bs[2]);
}

TEST(BwdWorkspace, EqualLengthsTakeTheLaneSchedule)
{
    // 4 heads of 32 key tiles on 8 blocks: 2 lanes a head, one round, a dQ slot a lane
    Case c;
    c.t = ckt_fmha_bwd_traits();
    c.t.batch = 2;
    c.t.nhead_q = 4;
    c.t.nhead_k = 2;
    c.t.hdim_q = c.t.hdim_v = 64;
    c.t.dtype = CKT_BF16;
    c.t.max_seqlen_q = c.t.max_seqlen_k = 2048;
    c.t.mask = CKT_MASK_CAUSAL_TOP_LEFT;
    c.t.deterministic = 1;
    c.t.multiprocessors = 8;
    c.block_m = 64;
    c.block_n = 64;
    c.blocks_per_mp = 1;
    c.sq = {2048, 2048};
    c.sk = {2048, 2048};
    ckt_fmha_bwd_plan p = make_plan(c);
    std::vector<int64_t> meta = pack(p, c);
    check_meta(c, p, meta);
    const ckt_fmha_bwd_meta *m = header(meta);
    EXPECT_EQ(m->lanes, 2);
    EXPECT_EQ(m->lane_heads, 4);
    EXPECT_EQ(m->lane_rounds, 1);
    EXPECT_EQ(m->lane_tiles, 32);
    EXPECT_EQ(ckt_fmha_bwd_meta_nsplits(m)[0], 2); // a dQ slot a lane
    EXPECT_EQ(ckt_fmha_bwd_meta_nsplits(m)[1], 2);
    // block 3 runs lane 1 of head 1: key tiles 1, 2, 5, 6, ..., 29, 30 (rows
    // of 2 tiles, odd rows right to left)
    EXPECT_EQ(ckt_fmha_bwd_lane_count(m, 3), 16);
    EXPECT_EQ(ckt_fmha_bwd_lane_unit(m, 3, 0), 32 + 1);
    EXPECT_EQ(ckt_fmha_bwd_lane_unit(m, 3, 1), 32 + 2);
    EXPECT_EQ(ckt_fmha_bwd_lane_unit(m, 3, 2), 32 + 5);
    EXPECT_EQ(ckt_fmha_bwd_lane_unit(m, 3, 15), 32 + 30);
    // causal work (a key tile's query tiles fall with its number): the two
    // lanes of a head equal
    int64_t work[2] = {0, 0};
    for (int lane = 0; lane < 2; lane++)
        for (int64_t i = 0; i < ckt_fmha_bwd_lane_count(m, lane); i++)
            work[lane] += 32 - ckt_fmha_bwd_lane_unit(m, lane, i) % 32;
    EXPECT_EQ(work[0], work[1]);
}

TEST(BwdWorkspace, LaneScheduleOnlyWhereItsSlotsFitTheBound)
{
    // 8 heads of 3 key tiles on 12 blocks: 3 lanes in 2 rounds would serve
    // best, but 8 entries x 3 slots exceed the bound's 8 + 12 - 1: the
    // contiguous ranges instead
    Case c;
    c.t = ckt_fmha_bwd_traits();
    c.t.batch = 8;
    c.t.nhead_q = c.t.nhead_k = 1;
    c.t.hdim_q = c.t.hdim_v = 64;
    c.t.dtype = CKT_F16;
    c.t.max_seqlen_q = c.t.max_seqlen_k = 192;
    c.t.deterministic = 1;
    c.t.multiprocessors = 12;
    c.block_m = 64;
    c.block_n = 64;
    c.blocks_per_mp = 1;
    c.sq.assign(8, 192);
    c.sk.assign(8, 192);
    ckt_fmha_bwd_plan p = make_plan(c);
    std::vector<int64_t> meta = pack(p, c);
    check_meta(c, p, meta);
    EXPECT_EQ(header(meta)->lanes, 0);
    // with 4 entries the 3 lanes fit (4 x 2 <= 11)
    c.t.batch = 4;
    c.sq.assign(4, 192);
    c.sk.assign(4, 192);
    p = make_plan(c);
    meta = pack(p, c);
    check_meta(c, p, meta);
    EXPECT_EQ(header(meta)->lanes, 3);
}

TEST(BwdWorkspace, BatchModeEqualsGroupModeWithEqualLengths)
{
    std::mt19937 rng(7);
    for (int i = 0; i < 40; i++) {
        Case c = random_case(rng, 8, 300, 8);
        c.t.group_mode = 0;
        c.seqstart_q.clear();
        c.seqstart_k.clear();
        c.seqlen_q.clear();
        c.seqlen_k.clear();
        c.sq.assign(c.t.batch, c.t.max_seqlen_q);
        c.sk.assign(c.t.batch, c.t.max_seqlen_k);
        Case g = c;
        g.t.group_mode = 1;
        for (int b = 0; b <= c.t.batch; b++) {
            g.seqstart_q.push_back(b * c.t.max_seqlen_q);
            g.seqstart_k.push_back(b * (c.t.max_seqlen_k + 3)); // padded keys...
        }
        for (int b = 0; b < c.t.batch; b++)
            g.seqlen_k.push_back(c.t.max_seqlen_k); // ...given as logical lengths
        ckt_fmha_bwd_plan pb = make_plan(c), pg = make_plan(g);
        std::vector<int64_t> mb = pack(pb, c), mg = pack(pg, g);
        EXPECT_EQ(mb, mg) << describe(c);
        // batch mode knows its lengths: its bound is the exact size, within the group bound
        size_t exact = 0;
        ASSERT_EQ(ckt_fmha_bwd_workspace_size(&pb, nullptr, nullptr, nullptr, nullptr, &exact), CKT_SUCCESS);
        EXPECT_EQ(ckt_fmha_bwd_workspace_upper_bound(&pb), exact) << describe(c);
        EXPECT_LE(ckt_fmha_bwd_workspace_upper_bound(&pb), ckt_fmha_bwd_workspace_upper_bound(&pg)) << describe(c);
    }
}

Case small_group_case()
{
    Case c;
    c.t = ckt_fmha_bwd_traits();
    c.t.batch = 3;
    c.t.nhead_q = 4;
    c.t.nhead_k = 2;
    c.t.hdim_q = c.t.hdim_v = 64;
    c.t.dtype = CKT_F16;
    c.t.group_mode = 1;
    c.t.max_seqlen_q = 100;
    c.t.max_seqlen_k = 100;
    c.t.deterministic = 1;
    c.t.multiprocessors = 8;
    c.block_m = 32;
    c.block_n = 32;
    c.blocks_per_mp = 1;
    c.seqstart_q = {0, 50, 50, 150};
    c.seqstart_k = {0, 70, 90, 190};
    c.sq = {50, 0, 100};
    c.sk = {70, 20, 100};
    return c;
}

std::string pack_error(const Case &c, ckt_status want)
{
    ckt_fmha_bwd_plan p = make_plan(c);
    std::vector<int64_t> meta(p.meta_bytes / 8);
    ckt_status s = ckt_fmha_bwd_pack(&p, c.sq_start(), c.sk_start(), c.lq(), c.lk(), meta.data(), p.meta_bytes);
    EXPECT_EQ(s, want) << ckt_status_name(s);
    std::string msg = ckt_last_error();
    // the metadata of a failed packing: magic, the status, nothing to do
    const ckt_fmha_bwd_meta *m = header(meta);
    EXPECT_EQ(m->magic, CKT_FMHA_BWD_META_MAGIC);
    EXPECT_EQ(m->status, (int32_t)want);
    EXPECT_EQ(m->total_units, 0);
    EXPECT_EQ(m->total_q_rows, 0);
    EXPECT_EQ(ckt_fmha_bwd_check_prepared(meta.data(), p.meta_bytes), want);
    return msg;
}

TEST(BwdWorkspace, BadLengthsNameTheArrayAndEntry)
{
    Case c = small_group_case();
    c.seqstart_q[2] = 40; // decreases after entry 0
    EXPECT_NE(pack_error(c, CKT_ERROR_INVALID_ARGUMENT).find("seqstart_q[2] = 40"), std::string::npos)
        << ckt_last_error();

    c = small_group_case();
    c.seqstart_k[3] = 80;
    EXPECT_NE(pack_error(c, CKT_ERROR_INVALID_ARGUMENT).find("seqstart_k[3]"), std::string::npos);

    c = small_group_case();
    c.seqlen_k = {70, 21, 100}; // entry 1 has 20 physical keys
    std::string m = pack_error(c, CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(m.find("seqlen_k_ptr[1] = 21"), std::string::npos) << m;

    c = small_group_case();
    c.seqlen_q = {50, -1, 10};
    EXPECT_NE(pack_error(c, CKT_ERROR_INVALID_ARGUMENT).find("seqlen_q_ptr[1]"), std::string::npos);

    c = small_group_case();
    c.t.max_seqlen_q = 99; // entry 2 has 100 rows
    m = pack_error(c, CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(m.find("seqstart_q[3]"), std::string::npos) << m;
    EXPECT_NE(m.find("max_seqlen_q 99"), std::string::npos) << m;

    c = small_group_case();
    c.seqstart_q[0] = -5;
    EXPECT_NE(pack_error(c, CKT_ERROR_INVALID_ARGUMENT).find("seqstart_q[0]"), std::string::npos);

    ckt_fmha_bwd_plan p = make_plan(small_group_case());
    std::vector<int64_t> meta(p.meta_bytes / 8);
    EXPECT_EQ(ckt_fmha_bwd_pack(&p, nullptr, nullptr, nullptr, nullptr, meta.data(), p.meta_bytes),
              CKT_ERROR_NULL_POINTER);
    EXPECT_NE(std::string(ckt_last_error()).find("seqstart_q"), std::string::npos);
    EXPECT_EQ(ckt_fmha_bwd_pack(&p, nullptr, nullptr, nullptr, nullptr, meta.data(), p.meta_bytes - 8),
              CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ckt_last_error()).find("meta_capacity"), std::string::npos);
}

TEST(BwdWorkspace, BadTraitsNameTheField)
{
    Case c = small_group_case();
    ckt_fmha_bwd_plan p;
    ckt_fmha_bwd_traits t = c.t;
    t.nhead_q = 3;
    EXPECT_EQ(ckt_fmha_bwd_plan_make(&p, &t, 64, 64, 1), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ckt_last_error()).find("traits.nhead_q = 3"), std::string::npos) << ckt_last_error();
    t = c.t;
    t.batch = 0;
    EXPECT_EQ(ckt_fmha_bwd_plan_make(&p, &t, 64, 64, 1), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ckt_last_error()).find("traits.batch"), std::string::npos);
    t = c.t;
    t.mask = (ckt_fmha_mask)5; // past the last kind (and inside the enum's range: UBSan)
    EXPECT_EQ(ckt_fmha_bwd_plan_make(&p, &t, 64, 64, 1), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ckt_last_error()).find("traits.mask"), std::string::npos);
    t = c.t;
    EXPECT_EQ(ckt_fmha_bwd_plan_make(&p, &t, 64, 0, 1), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ckt_last_error()).find("block_n"), std::string::npos);
    EXPECT_EQ(ckt_fmha_bwd_plan_make(nullptr, &t, 64, 64, 1), CKT_ERROR_NULL_POINTER);
    // multiprocessors 0: the device's
    t.multiprocessors = 0;
    ASSERT_EQ(ckt_fmha_bwd_plan_make(&p, &t, 64, 64, 2), CKT_SUCCESS);
    ckt_device_props d;
    ASSERT_EQ(ckt_rt_device_props(&d), CKT_SUCCESS);
    EXPECT_EQ(p.traits.multiprocessors, d.multiprocessors);
    EXPECT_EQ(p.grid, 2 * d.multiprocessors);
    EXPECT_EQ(p.instance, nullptr);
}

// >>prepare: device memory from here on

// A case's arrays on the device, and a workspace.
struct DeviceCase {
    int32_t *sq = nullptr, *sk = nullptr, *lq = nullptr, *lk = nullptr;
    void *ws = nullptr;
    size_t ws_bytes = 0;

    static int32_t *upload(const std::vector<int32_t> &v)
    {
        if (v.empty())
            return nullptr;
        void *d = nullptr;
        EXPECT_EQ(ckt_rt_malloc(&d, v.size() * 4), CKT_SUCCESS);
        EXPECT_EQ(ckt_rt_memcpy(d, v.data(), v.size() * 4, CKT_H2D), CKT_SUCCESS);
        return (int32_t *)d;
    }
    DeviceCase(const Case &c, size_t bytes) : ws_bytes(bytes)
    {
        sq = upload(c.seqstart_q);
        sk = upload(c.seqstart_k);
        lq = upload(c.seqlen_q);
        lk = upload(c.seqlen_k);
        EXPECT_EQ(ckt_rt_malloc(&ws, bytes), CKT_SUCCESS);
    }
    ~DeviceCase()
    {
        ckt_rt_free(sq);
        ckt_rt_free(sk);
        ckt_rt_free(lq);
        ckt_rt_free(lk);
        ckt_rt_free(ws);
    }
    ckt_fmha_bwd_args args(const Case &c) const
    {
        ckt_fmha_bwd_args a = CKT_ZERO_INIT;
        a.dtype = c.t.dtype;
        a.batch = c.t.batch;
        a.nhead_q = c.t.nhead_q;
        a.nhead_k = c.t.nhead_k;
        a.seqlen_q = c.t.max_seqlen_q;
        a.seqlen_k = c.t.max_seqlen_k;
        a.hdim_q = c.t.hdim_q;
        a.hdim_v = c.t.hdim_v;
        a.group_mode = c.t.group_mode;
        a.seqstart_q = sq;
        a.seqstart_k = sk;
        a.seqlen_q_ptr = lq;
        a.seqlen_k_ptr = lk;
        a.mask = c.t.mask;
        a.window_left = c.t.window_left;
        a.window_right = c.t.window_right;
        a.deterministic = c.t.deterministic;
        a.workspace = ws;
        a.workspace_bytes = ws_bytes;
        return a;
    }
    std::vector<uint8_t> read(size_t bytes) const
    {
        std::vector<uint8_t> h(bytes);
        EXPECT_EQ(ckt_rt_memcpy(h.data(), ws, bytes, CKT_D2H), CKT_SUCCESS);
        return h;
    }
};

std::vector<uint8_t> as_bytes(const std::vector<int64_t> &m)
{
    return std::vector<uint8_t>((const uint8_t *)m.data(), (const uint8_t *)(m.data() + m.size()));
}

bool all_bytes(const std::vector<uint8_t> &v, size_t from, size_t to, uint8_t x)
{
    for (size_t i = from; i < to; i++)
        if (v[i] != x)
            return false;
    return true;
}

struct Pinned {
    void *p = nullptr;
    explicit Pinned(size_t bytes) { EXPECT_EQ(ckt_rt_malloc_host(&p, bytes), CKT_SUCCESS); }
    ~Pinned() { ckt_rt_free_host(p); }
};

struct Stream {
    ckt_stream s = nullptr;
    Stream() { EXPECT_EQ(ckt_rt_stream_create(&s), CKT_SUCCESS); }
    ~Stream() { ckt_rt_stream_destroy(s); }
};

TEST(BwdWorkspace, AsyncPrepareMatchesSyncPrepare)
{
    std::mt19937 rng(99);
    Stream st;
    for (int i = 0; i < 30; i++) {
        Case c = random_case(rng, 6, 200, 4);
        ckt_fmha_bwd_plan p = make_plan(c);
        SCOPED_TRACE(describe(c));
        const std::vector<uint8_t> want = as_bytes(pack(p, c));
        const ckt_fmha_bwd_meta *mw = (const ckt_fmha_bwd_meta *)want.data();
        const size_t ub = ckt_fmha_bwd_workspace_upper_bound(&p), dq_end = p.meta_bytes + (size_t)ckt_fmha_bwd_meta_dq_start(mw)[c.t.batch] * 4;

        DeviceCase sync(c, ub), async(c, ub);
        ASSERT_EQ(ckt_rt_memset(sync.ws, 0xAB, ub), CKT_SUCCESS);
        ASSERT_EQ(ckt_rt_memset(async.ws, 0xCD, ub), CKT_SUCCESS);
        ckt_fmha_bwd_args a = sync.args(c);
        ASSERT_EQ(ckt_fmha_bwd_prepare(&p, &a, st.s), CKT_SUCCESS) << ckt_last_error();
        std::vector<uint8_t> got = sync.read(ub);
        EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin())) << "sync metadata";
        // dq_acc is each run's to initialize: the prepares leave it as it was
        EXPECT_TRUE(all_bytes(got, p.meta_bytes, dq_end, 0xAB)) << "sync dq_acc untouched";

        Pinned staging(p.staging_bytes);
        a = async.args(c);
        ASSERT_EQ(ckt_fmha_bwd_prepare_async(&p, &a, staging.p, p.staging_bytes, st.s), CKT_SUCCESS)
            << ckt_last_error();
        ASSERT_EQ(ckt_rt_stream_synchronize(st.s), CKT_SUCCESS);
        EXPECT_EQ(ckt_fmha_bwd_prepare_async_status(staging.p), CKT_SUCCESS) << ckt_last_error();
        got = async.read(ub);
        EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin())) << "async metadata";
        EXPECT_TRUE(all_bytes(got, p.meta_bytes, dq_end, 0xCD)) << "async dq_acc untouched";
    }
}

Case random_case_in_mode(std::mt19937 &rng, int group_mode, int max_batch)
{
    for (;;) {
        Case c = random_case(rng, max_batch, 200, 4);
        if (c.t.group_mode == group_mode)
            return c;
    }
}

TEST(BwdWorkspace, AsyncStagingIsReusedOnOneStreamWithoutWaiting)
{
    // three prepares of different plans (batch, grid, mode) through one staging
    // buffer, enqueued back to back; each plan is gone before the stream runs,
    // and the lengths reach the device on the same stream just before
    std::mt19937 rng(5);
    Stream st;
    std::vector<Case> cases = {random_case_in_mode(rng, 1, 12), random_case_in_mode(rng, 0, 6),
                               random_case_in_mode(rng, 1, 16)};
    size_t staging_bytes = 0;
    for (const Case &c : cases)
        staging_bytes = std::max(staging_bytes, make_plan(c).staging_bytes);
    Pinned staging(staging_bytes);
    std::vector<std::unique_ptr<DeviceCase>> dev;
    std::vector<std::unique_ptr<Pinned>> sources;
    std::vector<std::vector<uint8_t>> want;
    for (const Case &c : cases) {
        ckt_fmha_bwd_plan *p = new ckt_fmha_bwd_plan(make_plan(c));
        want.push_back(as_bytes(pack(*p, c)));
        dev.emplace_back(new DeviceCase(c, ckt_fmha_bwd_workspace_upper_bound(p)));
        const DeviceCase &d = *dev.back();
        int32_t *dst[4] = {d.sq, d.sk, d.lq, d.lk};
        const std::vector<int32_t> *src[4] = {&c.seqstart_q, &c.seqstart_k, &c.seqlen_q, &c.seqlen_k};
        for (int k = 0; k < 4; k++) {
            if (!dst[k])
                continue;
            const size_t n = src[k]->size() * 4;
            sources.emplace_back(new Pinned(n));
            memcpy(sources.back()->p, src[k]->data(), n);
            ASSERT_EQ(ckt_rt_memset_async(dst[k], 0x7F, n, st.s), CKT_SUCCESS);
            ASSERT_EQ(ckt_rt_memcpy_async(dst[k], sources.back()->p, n, CKT_H2D, st.s), CKT_SUCCESS);
        }
        ckt_fmha_bwd_args a = d.args(c);
        ASSERT_EQ(ckt_fmha_bwd_prepare_async(p, &a, staging.p, staging_bytes, st.s), CKT_SUCCESS) << ckt_last_error();
        memset((void *)p, 0xEE, sizeof *p);
        delete p;
    }
    ASSERT_EQ(ckt_rt_stream_synchronize(st.s), CKT_SUCCESS);
    EXPECT_EQ(ckt_fmha_bwd_prepare_async_status(staging.p), CKT_SUCCESS) << ckt_last_error();
    for (size_t i = 0; i < cases.size(); i++) {
        std::vector<uint8_t> got = dev[i]->read(want[i].size());
        EXPECT_EQ(got, want[i]) << "prepare " << i << ": " << describe(cases[i]);
    }
}

TEST(BwdWorkspace, AsyncLengthErrorLandsInMetaAndStatus)
{
    Case c = small_group_case();
    ckt_fmha_bwd_plan p = make_plan(c);
    c.seqstart_k[2] = 10; // decreasing: only the packing can see it
    const size_t ub = ckt_fmha_bwd_workspace_upper_bound(&p);
    DeviceCase d(c, ub);
    Pinned staging(p.staging_bytes);
    Stream st;
    ckt_fmha_bwd_args a = d.args(c);
    ASSERT_EQ(ckt_fmha_bwd_prepare_async(&p, &a, staging.p, p.staging_bytes, st.s), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_stream_synchronize(st.s), CKT_SUCCESS);
    EXPECT_EQ(ckt_fmha_bwd_prepare_async_status(staging.p), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ckt_last_error()).find("seqstart_k[2] = 10"), std::string::npos) << ckt_last_error();
    std::vector<uint8_t> got = d.read(p.meta_bytes);
    const ckt_fmha_bwd_meta *m = (const ckt_fmha_bwd_meta *)got.data();
    EXPECT_EQ(m->magic, CKT_FMHA_BWD_META_MAGIC);
    EXPECT_EQ(m->status, (int32_t)CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(m->total_units, 0);
    // the synchronous prepare returns it, and leaves the same metadata
    DeviceCase e(c, ub);
    a = e.args(c);
    EXPECT_EQ(ckt_fmha_bwd_prepare(&p, &a, st.s), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ckt_last_error()).find("seqstart_k[2] = 10"), std::string::npos) << ckt_last_error();
    EXPECT_EQ(e.read(p.meta_bytes), got);
}

TEST(BwdWorkspace, PrepareChecksSizesAndArguments)
{
    Case c = small_group_case();
    ckt_fmha_bwd_plan p = make_plan(c);
    std::vector<int64_t> meta = pack(p, c);
    const size_t need = (size_t)header(meta)->need_bytes, ub = ckt_fmha_bwd_workspace_upper_bound(&p);
    ASSERT_LT(need, ub);
    Stream st;
    {
        DeviceCase d(c, need);
        ckt_fmha_bwd_args a = d.args(c);
        EXPECT_EQ(ckt_fmha_bwd_prepare(&p, &a, st.s), CKT_SUCCESS) << ckt_last_error(); // exact is enough
        a.workspace_bytes = need - 1;
        EXPECT_EQ(ckt_fmha_bwd_prepare(&p, &a, st.s), CKT_ERROR_INVALID_ARGUMENT);
        std::string m = ckt_last_error();
        EXPECT_NE(m.find("workspace_bytes = " + std::to_string(need - 1)), std::string::npos) << m;
        EXPECT_NE(m.find(std::to_string(need)), std::string::npos) << m;
        // the async prepare wants the upper bound
        Pinned staging(p.staging_bytes);
        a.workspace_bytes = need;
        EXPECT_EQ(ckt_fmha_bwd_prepare_async(&p, &a, staging.p, p.staging_bytes, st.s), CKT_ERROR_INVALID_ARGUMENT);
        m = ckt_last_error();
        EXPECT_NE(m.find("upper_bound() = " + std::to_string(ub)), std::string::npos) << m;
    }
    DeviceCase d(c, ub);
    ckt_fmha_bwd_args a = d.args(c);
    Pinned staging(p.staging_bytes);
    EXPECT_EQ(ckt_fmha_bwd_prepare_async(&p, &a, staging.p, p.staging_bytes - 1, st.s), CKT_ERROR_INVALID_ARGUMENT);
    std::string m = ckt_last_error();
    EXPECT_NE(m.find("staging_bytes = " + std::to_string(p.staging_bytes - 1)), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(p.staging_bytes)), std::string::npos) << m;
    EXPECT_EQ(ckt_fmha_bwd_prepare_async(&p, &a, nullptr, p.staging_bytes, st.s), CKT_ERROR_NULL_POINTER);
    EXPECT_NE(std::string(ckt_last_error()).find("staging"), std::string::npos);
    a.batch = 2;
    EXPECT_EQ(ckt_fmha_bwd_prepare(&p, &a, st.s), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ckt_last_error()).find("args.batch = 2"), std::string::npos) << ckt_last_error();
    a = d.args(c);
    a.seqstart_k = nullptr;
    EXPECT_EQ(ckt_fmha_bwd_prepare_async(&p, &a, staging.p, p.staging_bytes, st.s), CKT_ERROR_NULL_POINTER);
    EXPECT_NE(std::string(ckt_last_error()).find("seqstart_k"), std::string::npos);
    a = d.args(c);
    a.deterministic = 0;
    EXPECT_EQ(ckt_fmha_bwd_prepare(&p, &a, st.s), CKT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ckt_last_error()).find("deterministic"), std::string::npos);
}

// >>runtime: the pieces the async prepare stands on

struct HostFnState {
    int32_t *pinned;
    int seen;
};

void host_fn(void *user)
{
    HostFnState *s = (HostFnState *)user;
    s->seen = s->pinned[0];   // what the D2H copy before it brought
    s->pinned[1] = s->seen + 1; // what the H2D copy after it takes
}

TEST(BwdWorkspace, RuntimeHostFunctionRunsInStreamOrder)
{
    void *p = (void *)1;
    EXPECT_EQ(ckt_rt_malloc_host(&p, 0), CKT_SUCCESS);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(ckt_rt_free_host(nullptr), CKT_SUCCESS);
    EXPECT_EQ(ckt_rt_malloc_host(nullptr, 8), CKT_ERROR_NULL_POINTER);
    EXPECT_EQ(ckt_rt_launch_host_func(nullptr, nullptr, nullptr), CKT_ERROR_NULL_POINTER);

    Pinned pinned(64);
    void *dev = nullptr;
    ASSERT_EQ(ckt_rt_malloc(&dev, 64), CKT_SUCCESS);
    Stream st;
    HostFnState s = {(int32_t *)pinned.p, -1};
    for (int round = 0; round < 3; round++) {
        ASSERT_EQ(ckt_rt_memset_async(dev, 0x11 * (round + 1), 4, st.s), CKT_SUCCESS);
        ASSERT_EQ(ckt_rt_memcpy_async(pinned.p, dev, 4, CKT_D2H, st.s), CKT_SUCCESS);
        ASSERT_EQ(ckt_rt_launch_host_func(st.s, host_fn, &s), CKT_SUCCESS);
        ASSERT_EQ(ckt_rt_memcpy_async((char *)dev + 4, (int32_t *)pinned.p + 1, 4, CKT_H2D, st.s), CKT_SUCCESS);
        ASSERT_EQ(ckt_rt_stream_synchronize(st.s), CKT_SUCCESS);
        int32_t back[2];
        ASSERT_EQ(ckt_rt_memcpy(back, dev, 8, CKT_D2H), CKT_SUCCESS);
        const int32_t v = (int32_t)(0x01010101u * (0x11u * (round + 1)));
        EXPECT_EQ(s.seen, v);
        EXPECT_EQ(back[1], v + 1);
    }
    ckt_rt_free(dev);
}

} // namespace
