/* ckt/fmha/schedule.h — which tile a block of an attention kernel works on:
 * the grid of the forward and the block -> (batch, head, query tile) map.
 *
 *   launch:  grid = ckt_fmha_fwd_grid(a->batch, a->nhead_q, a->seqlen_q, BM, splits);
 *   kernel:  const ckt_fmha_tile t = ckt_fmha_fwd_tile(BM, splits);  // t.b, t.h, t.m0, t.split
 *
 * Forward: one block per (query tile, query head, batch entry, key split):
 * x = query tiles of seqlen_q (the maximum over the batch in group mode:
 * blocks past an entry's length exit), y = heads, z = entries x splits
 * (split-KV, ckt/fmha/splitkv.h: z = b * splits + split; 1 split without). The query tiles run in
 * reverse: block x = 0 takes the last tile. Under a causal mask the last
 * tiles see the most keys, so the longest blocks start first and the short
 * ones fill the tail (FlashAttention-2 does the same).
 *
 * A persistent kernel (the Hopper forward, ckt/fmha/fwd_sm90_body.h) runs
 * fewer blocks than tiles on a 1-D grid: block x takes tiles x, x + gridDim.x,
 * ... of ckt_fmha_fwd_slots() in the same order (ckt_fmha_fwd_tile_of), or
 * under a causal mask pairs of a long and a short tile of one (batch, head)
 * (ckt_fmha_fwd_first_tile, ckt_fmha_fwd_next_tile).
 *
 * The backward's non-deterministic grid runs one block per work unit (entry,
 * kv head, key tile); under a causal mask ckt_fmha_bwd_unit_of_block puts
 * the long units first. Its persistent partition lives in
 * ckt/fmha/workspace.h.
 */
#ifndef CKT_FMHA_SCHEDULE_H
#define CKT_FMHA_SCHEDULE_H

#include "ckt/arch/arch.h"

/* One block's work: batch entry b, query head h, first query row m0. */
typedef struct ckt_fmha_tile {
    int b, h;
    int m0;
    int split; /* the key range (split-KV), 0 .. splits - 1 */
} ckt_fmha_tile;

/* The forward's grid for query tiles of bm rows and `splits` key ranges. */
static inline ckt_dim3 ckt_fmha_fwd_grid(int batch, int nhead_q, int seqlen_q, int bm, int splits)
{
    return ckt_dim3_make((unsigned)CKT_CEIL_DIV(seqlen_q, bm), (unsigned)nhead_q, (unsigned)batch * (unsigned)splits);
}

/* This block's tile of the forward grid, last query tile first. */
CKT_INLINE CKT_DEVICE ckt_fmha_tile ckt_fmha_fwd_tile(int bm, int splits)
{
    ckt_fmha_tile t;
    const int z = (int)ckt_block_idx_z();
    t.b = splits > 1 ? z / splits : z;
    t.split = splits > 1 ? z - t.b * splits : 0;
    t.h = (int)ckt_block_idx_y();
    t.m0 = (int)(ckt_grid_dim_x() - 1 - ckt_block_idx_x()) * bm;
    return t;
}

/* The forward's tile slots without splits: every tile (query tiles x heads
 * x entries) in the grid's order (paired 0), or (paired 1, a persistent
 * grid under a causal mask) two a pair of a (batch, head)'s query tiles: its longest and its shortest, the second
 * longest and the second shortest, ...; of an odd count of query tiles the
 * middle one is a pair alone, its second slot empty. A pair sees mtiles + 1
 * query tiles' worth of keys (tiles m and mtiles - 1 - m see m + 1 and
 * mtiles - m), so blocks that take as many pairs finish together. */
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_fmha_fwd_slots(int batch, int nhead_q, int seqlen_q, int bm, int paired)
{
    const int64_t mtiles = CKT_CEIL_DIV(seqlen_q, bm);
    return paired ? (mtiles + 1) / 2 * 2 * nhead_q * batch : mtiles * nhead_q * batch;
}

/* The tile in slot idx of ckt_fmha_fwd_slots(): mtiles query tiles of bm
 * rows a (batch, head), nhead_q heads; heads, then entries, run slowest. An
 * empty slot has m0 = mtiles * bm, past every entry's rows. */
CKT_INLINE CKT_HOST_DEVICE ckt_fmha_tile ckt_fmha_fwd_tile_of(int64_t idx, int mtiles, int nhead_q, int bm, int paired)
{
    ckt_fmha_tile t;
    const int64_t per = paired ? (mtiles + 1) / 2 * 2 : mtiles; /* slots a (batch, head) */
    const int64_t yz = idx / per;
    const int pos = (int)(idx - yz * per);
    int m = mtiles - 1 - pos; /* the grid's order: last tile first */
    if (paired) {
        const int i = pos / 2;
        m = pos & 1 ? (i == mtiles - 1 - i ? mtiles : i) : mtiles - 1 - i;
    }
    t.m0 = m * bm;
    t.h = (int)(yz % nhead_q);
    t.b = (int)(yz / nhead_q);
    t.split = 0;
    return t;
}

/* A persistent block's slots (blocks: the grid's size, block: this one's
 * index): its first, then each next one's; past ckt_fmha_fwd_slots() it is
 * done. paired 0: slots block, block + blocks, ...; paired 1: the pair
 * 2 block, 2 block + 1, then the pair `blocks` pairs on, ... */
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_fmha_fwd_first_tile(int64_t block, int paired)
{
    return paired ? 2 * block : block;
}
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_fmha_fwd_next_tile(int64_t idx, int64_t blocks, int paired)
{
    return !paired ? idx + blocks : (idx & 1) ? idx - 1 + 2 * blocks : idx + 1;
}

/* >>backward: block -> work unit
 * The backward's units are numbered (pair, key tile), pair = (entry, kv head)
 * slowest; block p of a one-block-per-unit grid takes unit p by default.
 * Under a causal mask key tile kt is seen by the queries from about kt * bn
 * on: the first key tiles of a pair are the long ones, so in that order the
 * last pairs' long units start near the end of the grid and leave a tail.
 * ckt_fmha_bwd_unit_of_block(p, pairs, ntiles, group) takes the pairs in
 * groups of max(1, group / ntiles) and, inside a group, runs its units key
 * tile major: the long units of every pair of the group first, the pairs of
 * a group close together (their Q and dO stay in the L2). For `pairs` pairs
 * of ntiles key tiles each (every entry the same length), a permutation of
 * 0 .. pairs * ntiles - 1; p past that range is returned as it is. */
#ifndef CKT_FMHA_BWD_GROUP_UNITS
#define CKT_FMHA_BWD_GROUP_UNITS 128
#endif
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_fmha_bwd_unit_of_block(int64_t p, int64_t pairs, int64_t ntiles,
                                                              int64_t group)
{
    if (ntiles <= 0 || pairs <= 0 || p < 0 || p >= pairs * ntiles)
        return p;
    const int64_t g = group / ntiles > 1 ? group / ntiles : 1; /* pairs a group */
    const int64_t k = p / (g * ntiles), i = p - k * (g * ntiles);
    const int64_t gp = pairs - k * g < g ? pairs - k * g : g; /* pairs in this group (the last: maybe fewer) */
    const int64_t kt = i / gp, pair = k * g + (i - kt * gp);
    return pair * ntiles + kt;
}

#endif /* CKT_FMHA_SCHEDULE_H */
