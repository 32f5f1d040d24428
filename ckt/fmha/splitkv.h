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
 *   combine: ckt_fmha_splitkv_combine_row(...) per output row
 *
 * Workspace (fp32, rows of one (split, entry, head, query)):
 *   lse_acc [splits][batch][nhead_q][seqlen_q]            at byte 0
 *   o_acc   [splits][batch][nhead_q][seqlen_q][hdim_v]    at ckt_fmha_splitkv_o_offset
 * seqlen_q is the call's (the max over the batch in group mode), so entry
 * b's row i is the same in batch and group mode. The combine of row r:
 *   lse = log sum_s exp(lse_s),  O = sum_s exp(lse_s - lse) O_s
 * in split order: bitwise reproducible. A split that saw no key leaves
 * O_s = 0, lse_s = -inf (weight 0); a row no split saw gets O = 0 and
 * LSE = -inf, like the unsplit forward.
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

/* The automatic split count: 1 when the unsplit grid already fills the
 * device, else the smallest count whose waves are >= 85% as full as the
 * best count's (FlashAttention's rule). tiles: blocks of the unsplit grid
 * (batch x heads x query tiles); slots: blocks the device runs at once
 * (multiprocessors x blocks per multiprocessor); key_tiles: the key tiles
 * of a query tile (the longest entry's); at most max_splits, and never so
 * many that a split has no key tile or that two counts give the same
 * tiles per split. */
static inline int ckt_fmha_splitkv_heuristic(int64_t tiles, int slots, int key_tiles, int max_splits)
{
    if (tiles <= 0 || slots <= 0 || key_tiles <= 1 || tiles * 10 >= (int64_t)slots * 8)
        return 1;
    int most = max_splits < key_tiles ? max_splits : key_tiles;
    if (most > slots)
        most = slots;
    if (most > CKT_FMHA_MAX_SPLITS)
        most = CKT_FMHA_MAX_SPLITS;
    /* a count that does not shorten the splits against one less is never
     * worth it: only the others compete (for the best, too) */
    double eff[CKT_FMHA_MAX_SPLITS + 1];
    double best = 0.0;
    for (int s = 1; s <= most; s++) {
        const double waves = (double)(tiles * s) / slots;
        const int eligible = s == 1 || CKT_CEIL_DIV(key_tiles, s) != CKT_CEIL_DIV(key_tiles, s - 1);
        eff[s] = eligible ? waves / ceil(waves) : -1.0;
        best = eff[s] > best ? eff[s] : best;
    }
    for (int s = 1; s <= most; s++)
        if (eff[s] >= 0.85 * best)
            return s;
    return 1;
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

/* Output row `row` (ckt_fmha_splitkv_row with split 0) from the splits'
 * partials: O (hdim_v values, 4 per chunk, this thread's chunks c, c + nc,
 * ...) rounded to fp16 / bf16 into out; the LSE into *lse_out when not
 * NULL (one thread of the row should pass it). split_rows: rows from one
 * split to the next (batch x nhead_q x seqlen_q). */
CKT_INLINE CKT_DEVICE void ckt_fmha_splitkv_combine_row(uint16_t *out, float *lse_out, const float *lse_acc,
                                                        const float *o_acc, int64_t split_rows, int64_t row,
                                                        int splits, int hdim_v, int c, int nc, int bf16)
{
    float m = -INFINITY;
    for (int s = 0; s < splits; s++) {
        const float l = lse_acc[s * split_rows + row];
        m = l > m ? l : m;
    }
    float lse = -INFINITY;
    if (m != -INFINITY) {
        float sum = 0.0f;
        for (int s = 0; s < splits; s++)
            sum += expf(lse_acc[s * split_rows + row] - m);
        lse = m + logf(sum);
    }
    if (lse_out)
        *lse_out = lse;
    for (int j = c; 4 * j < hdim_v; j += nc) {
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (lse != -INFINITY)
            for (int s = 0; s < splits; s++) {
                const int64_t r = s * split_rows + row;
                const float w = expf(lse_acc[r] - lse);
                const float *o = o_acc + r * hdim_v + 4 * j;
                if (w > 0.0f)
                    for (int e = 0; e < 4; e++)
                        acc[e] += w * o[e];
            }
        uint32_t *dst = (uint32_t *)(out + 4 * j);
        dst[0] = bf16 ? ckt_pack2_bf16(acc[0], acc[1]) : ckt_pack2_f16(acc[0], acc[1]);
        dst[1] = bf16 ? ckt_pack2_bf16(acc[2], acc[3]) : ckt_pack2_f16(acc[2], acc[3]);
    }
}

#endif /* CKT_FMHA_SPLITKV_H */
