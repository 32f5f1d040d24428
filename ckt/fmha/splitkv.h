/* ckt/fmha/splitkv.h — split-KV: the keys a query tile sees, cut into
 * num_splits ranges that separate blocks compute, each leaving a partial
 * output and LSE in fp32; then a combine pass merges them. How many splits
 * (the heuristic), the workspace's layout, a split's share of the key tiles,
 * and the combine.
 *
 *   host:    ns = ckt_fmha_splitkv_heuristic(tiles, slots, key_tiles, CKT_FMHA_MAX_SPLITS);
 *            bytes = ckt_fmha_splitkv_workspace_bytes(ns, batch, nhead_q, seqlen_q, hdim_v);
 *   kernel:  ckt_fmha_split_range(nblocks, ns, t.split, &first, &count);  // its key tiles
 *            ... write the partial O (normalized) and LSE at ckt_fmha_splitkv_row(...)
 *   combine: ckt_fmha_splitkv_combine_row(...) per output row, 64 threads a row
 *
 * Workspace (fp32, rows of one (split, entry, head, query)):
 *   lse_acc [splits][batch][nhead_q][seqlen_q]            at byte 0
 *   o_acc   [splits][batch][nhead_q][seqlen_q][hdim_v]    at ckt_fmha_splitkv_o_offset
 * seqlen_q is the call's (the max over the batch in group mode), so entry
 * b's row i is the same in batch and group mode. The combine of row r:
 *   lse = log sum_s exp(lse_s),  O = sum_s exp(lse_s - lse) O_s
 * in split order: bitwise reproducible. A split that saw no key leaves
 * O_s = 0, lse_s = -inf (weight 0); a row no split saw gets O = 0 and
 * LSE = -inf, like the unsplit forward. Attention sinks (ckt_fmha_fwd_args
 * .sink) are left out of the partials and join here, once:
 *   lse = log(exp(sink) + sum_s exp(lse_s))
 * (a row no split saw: O = 0, LSE = sink).
 */
#ifndef CKT_FMHA_SPLITKV_H
#define CKT_FMHA_SPLITKV_H

#include "ckt/arch/arch.h"
#include "ckt/arch/numeric.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* The most splits a call may ask for (the heuristic stays below it too). */
#define CKT_FMHA_MAX_SPLITS 256
/* The most the automatic count picks (more cost the combine more than they gain: H200) */
#define CKT_FMHA_AUTO_MAX_SPLITS 128

/* Row of (split, b, h, i) in the workspace's lse_acc; o_acc rows are hdim_v
 * floats at the same index. */
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_fmha_splitkv_row(int split, int b, int h, int i, int batch, int nhead_q,
                                                        int seqlen_q)
{
    return (((int64_t)split * batch + b) * nhead_q + h) * seqlen_q + i;
}

/* Byte offset of o_acc: after lse_acc, rounded to 16 bytes. */
CKT_INLINE CKT_HOST_DEVICE size_t ckt_fmha_splitkv_o_offset(int splits, int batch, int nhead_q, int seqlen_q)
{
    const size_t rows = (size_t)splits * (size_t)batch * (size_t)nhead_q * (size_t)seqlen_q;
    return (rows * sizeof(float) + 15) / 16 * 16;
}

/* Bytes of workspace for `splits` splits (0 when splits <= 1: no workspace). */
static inline size_t ckt_fmha_splitkv_workspace_bytes(int splits, int batch, int nhead_q, int seqlen_q, int hdim_v)
{
    if (splits <= 1 || batch <= 0 || nhead_q <= 0 || seqlen_q <= 0 || hdim_v <= 0)
        return 0;
    const size_t rows = (size_t)splits * (size_t)batch * (size_t)nhead_q * (size_t)seqlen_q;
    return ckt_fmha_splitkv_o_offset(splits, batch, nhead_q, seqlen_q) + rows * (size_t)hdim_v * sizeof(float);
}

/* A block's fixed work in key steps, for the automatic split count: its
 * prologue, its partial's store and its share of the combine (fitted to
 * H200 decode: the counts it picks filled one wave where 85%-full waves
 * left 32/8 b1 16k-64k 4-5% slower, bench/results/). */
#define CKT_FMHA_SPLIT_BLOCK_COST 2

/* The automatic split count: 1 when the unsplit grid fills the device at
 * least twice; else the count with the shortest modelled time, waves x
 * (key tiles a split + CKT_FMHA_SPLIT_BLOCK_COST), the smallest on a tie.
 * (FlashAttention's rule, the smallest count whose waves are 80-85% as
 * full as the best, picked 14-15 splits for 8 tiles on 132 slots: one wave
 * of 112-120 blocks whose splits are 7-14% longer than 16's.) tiles: blocks
 * of the unsplit grid (batch x heads x query tiles); slots: blocks the
 * device runs at once (multiprocessors x blocks per multiprocessor);
 * key_tiles: the key tiles of a query tile (the longest entry's); at most
 * max_splits, and never more than the key tiles or the slots. */
static inline int ckt_fmha_splitkv_heuristic(int64_t tiles, int slots, int key_tiles, int max_splits)
{
    if (tiles <= 0 || slots <= 0 || key_tiles <= 1 || tiles >= 2 * (int64_t)slots)
        return 1;
    int most = max_splits < key_tiles ? max_splits : key_tiles;
    if (most > slots)
        most = slots;
    if (most > CKT_FMHA_MAX_SPLITS)
        most = CKT_FMHA_MAX_SPLITS;
    int best = 1;
    int64_t best_cost = -1;
    for (int s = 1; s <= most; s++) {
        const int64_t waves = CKT_CEIL_DIV(tiles * s, (int64_t)slots);
        const int64_t cost = waves * (CKT_CEIL_DIV(key_tiles, s) + CKT_FMHA_SPLIT_BLOCK_COST);
        if (best_cost < 0 || cost < best_cost) {
            best = s;
            best_cost = cost;
        }
    }
    return best;
}

/* Split `split`'s share of nblocks key tiles: tiles first .. first + count
 * (count 0 for a split past the end). Equal shares, the last one shorter. */
CKT_INLINE CKT_HOST_DEVICE void ckt_fmha_split_range(int nblocks, int splits, int split, int *first, int *count)
{
    const int per = splits > 1 ? CKT_CEIL_DIV(nblocks, splits) : nblocks;
    int f = split * per, n = nblocks - f;
    if (n > per)
        n = per;
    if (n < 0)
        n = 0;
    *first = f;
    *count = n;
}

/* Threads of a combine block: one output row a block. */
#define CKT_FMHA_COMBINE_THREADS 256
/* Partial vectors a combine thread loads before the weights are known
 * (ckt_fmha_splitkv_combine_row): 16 cover the automatic split counts at
 * d128 (8 groups of 32 column threads, 128 splits). */
#ifndef CKT_FMHA_COMBINE_PREFETCH
#define CKT_FMHA_COMBINE_PREFETCH 16
#endif
/* Shared memory of a combine block (bytes): the row's split weights, a
 * float a warp for the reductions, 4 floats a thread for the split groups'
 * partial sums. */
#define CKT_FMHA_COMBINE_SMEM_BYTES                                                                     \
    ((size_t)(CKT_FMHA_MAX_SPLITS + CKT_FMHA_COMBINE_THREADS / 32 + 4 * CKT_FMHA_COMBINE_THREADS) * sizeof(float))

/* x reduced over the block (CKT_FMHA_COMBINE_THREADS threads, this one t):
 * max (is_max) or sum, by xor shuffles in each warp (every lane ends with
 * the same bits: each step adds two values in either order) and then the
 * warps' results in index order, so the same bits every run. red: a float
 * a warp of shared memory; synchronizes the block twice. */
CKT_INLINE CKT_DEVICE float ckt__fmha_combine_reduce(float x, int is_max, int t, float *red)
{
    for (int o = CKT_WARP_SIZE / 2; o > 0; o >>= 1) {
        const float y = ckt_warp_shfl_xor_f32(x, (unsigned)o);
        x = is_max ? (y > x ? y : x) : x + y;
    }
    if (t % CKT_WARP_SIZE == 0)
        red[t / CKT_WARP_SIZE] = x;
    ckt_block_sync();
    x = is_max ? -INFINITY : 0.0f;
    for (int k = 0; k < CKT_FMHA_COMBINE_THREADS / CKT_WARP_SIZE; k++)
        x = is_max ? (red[k] > x ? red[k] : x) : x + red[k];
    ckt_block_sync(); /* everyone has read red */
    return x;
}

/* One output row from the splits' partials, by a block of
 * CKT_FMHA_COMBINE_THREADS threads (this one: t; all of them call it).
 * row: ckt_fmha_splitkv_row of split 0; split_rows: rows from one split to
 * the next (batch x nhead_q x seqlen_q). The weights w[s] = exp(lse_s -
 * lse) go to shared memory (w: CKT_FMHA_MAX_SPLITS floats, red: a float a
 * warp, part: 4 floats a thread); max and sum are fixed-order block
 * reductions. Then the threads split into G = threads / C groups of C =
 * hdim_v / 4 column threads: thread (g, c) sums columns 4 c .. 4 c + 3 over
 * the splits g, g + G, ... in order, and the groups' sums are added in
 * group order: a split-parallel combine (one thread walking every split
 * left a decode step of 114 splits 44 us of combine, H200: ncu), the same
 * bits every run. Rounds to fp16 / bf16 into out; thread 0 writes the LSE
 * to *lse_out when not NULL. sink: the row's head's sink logit (natural
 * log), -INFINITY for none. hdim_v <= 4 x CKT_FMHA_COMBINE_THREADS. */
CKT_INLINE CKT_DEVICE void ckt_fmha_splitkv_combine_row(uint16_t *out, float *lse_out, const float *lse_acc,
                                                        const float *o_acc, int64_t split_rows, int64_t row,
                                                        int splits, int hdim_v, float sink, int t, float *w,
                                                        float *red, float *part, int bf16)
{
    enum { T = CKT_FMHA_COMBINE_THREADS, PRE = CKT_FMHA_COMBINE_PREFETCH };
    const int C = (hdim_v + 3) / 4, G = T / C; /* column threads, split groups */
    const int c = t % C, g = t / C;
    const float *o = o_acc + row * hdim_v + 4 * c;
    const int64_t step = split_rows * hdim_v;
    /* this thread's first PRE partial vectors (splits g, g + G, ...) in
     * flight before the LSE reductions: they do not need the weights, so
     * the loads and the reductions' barriers overlap (one round trip less
     * for every PRE splits) */
    ckt_u32x4 pre[PRE];
    CKT_UNROLL
    for (int k = 0; k < PRE; k++)
        pre[k] = g < G && g + k * G < splits ? *(const ckt_u32x4 *)(o + (g + k * G) * step) : ckt_u32x4_make(0, 0, 0, 0);
    float m = -INFINITY;
    for (int s = t; s < splits; s += T) {
        const float l = lse_acc[s * split_rows + row];
        w[s] = l;
        m = l > m ? l : m;
    }
    m = ckt__fmha_combine_reduce(m, 1, t, red);
    m = sink > m ? sink : m;
    float sum = 0.0f;
    for (int s = t; s < splits; s += T)
        sum += m == -INFINITY ? 0.0f : expf(w[s] - m);
    sum = ckt__fmha_combine_reduce(sum, 0, t, red);
    if (sink != -INFINITY) /* then m >= sink is finite */
        sum += expf(sink - m);
    const float lse = m == -INFINITY ? -INFINITY : m + logf(sum);
    for (int s = t; s < splits; s += T)
        w[s] = lse == -INFINITY ? 0.0f : expf(w[s] - lse);
    ckt_block_sync();
    if (t == 0 && lse_out)
        *lse_out = lse;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (g < G) {
        /* in split order: the prefetched vectors, then the rest */
        CKT_UNROLL
        for (int k = 0; k < PRE; k++) {
            if (g + k * G < splits) {
                const float ws = w[g + k * G];
                acc[0] += ws * ckt_f32_from_bits(pre[k].x);
                acc[1] += ws * ckt_f32_from_bits(pre[k].y);
                acc[2] += ws * ckt_f32_from_bits(pre[k].z);
                acc[3] += ws * ckt_f32_from_bits(pre[k].w);
            }
        }
        CKT_UNROLL_BY(4)
        for (int s = g + PRE * G; s < splits; s += G) {
            const float ws = w[s];
            const ckt_u32x4 x = *(const ckt_u32x4 *)(o + s * step); /* one 16-byte load */
            acc[0] += ws * ckt_f32_from_bits(x.x);
            acc[1] += ws * ckt_f32_from_bits(x.y);
            acc[2] += ws * ckt_f32_from_bits(x.z);
            acc[3] += ws * ckt_f32_from_bits(x.w);
        }
        for (int e = 0; e < 4; e++)
            part[(g * C + c) * 4 + e] = acc[e];
    }
    ckt_block_sync();
    if (g != 0)
        return;
    for (int k = 1; k < G; k++) /* the groups in order */
        for (int e = 0; e < 4; e++)
            acc[e] += part[(k * C + c) * 4 + e];
    uint32_t *dst = (uint32_t *)(out + 4 * c);
    dst[0] = bf16 ? ckt_pack2_bf16(acc[0], acc[1]) : ckt_pack2_f16(acc[0], acc[1]);
    dst[1] = bf16 ? ckt_pack2_bf16(acc[2], acc[3]) : ckt_pack2_f16(acc[2], acc[3]);
}

#endif /* CKT_FMHA_SPLITKV_H */
