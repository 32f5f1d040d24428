/* ckt/fmha/softmax.h — the score tile of attention and its online softmax:
 * which query rows a lane's accumulator registers hold (on either MMA
 * flavor), the mask applied to a score tile, the soft-cap and the log2
 * domain, the running row max / sum with the output's rescale factor, and the
 * final 1 / l and LSE. Every FMHA kernel (forward, backward, split-KV) calls
 * these; the forward reads:
 *
 *   float row_m[ROWS], row_l[ROWS], corr[ROWS];          // ROWS = CKT_FMHA_ROW_SLOTS(WM)
 *   ckt_fmha_softmax_init(row_m, row_l, WM);
 *   for each key tile n0:
 *       S = Q K^T                                        // the warp's S tile, s[]
 *       const float to_log2 = ckt_fmha_softcap(s, n, scale, softcap);
 *       if (!full) ckt_fmha_mask_scores(s, &mask, row0, n0, WM, BN, lane, 1);
 *       if (ckt_warp_any(ckt_fmha_softmax_update(corr, s, row_m, row_l, WM, BN, to_log2)))
 *           ckt_fmha_rescale(o, corr, WM, DV);           // O *= exp2(m_old - m_new)
 *       O += P V                                         // s[] now holds P
 *   ckt_fmha_softmax_finish(inv, row_l, WM);             // O = acc * inv; LSE: ckt_fmha_softmax_lse
 *   if (sink) ckt_fmha_softmax_sink(inv, row_m, row_l, sink2, WM);   // attention sinks (>>sink)
 *
 * The math (FlashAttention-2, log2 domain): with f = scale * log2(e) (or
 * log2(e) after a soft-cap, which already applied the scale),
 *   m_new = max(m, rowmax(S) * f),  P = exp2(S * f - m_new)   (one FMA: the scale folded in)
 *   corr  = exp2(m - m_new),        l = l * corr + rowsum(P),  O = O * corr + P V
 *   O /= l at the end,              LSE = (m + log2 l) * ln 2  (natural log)
 * A row with nothing visible keeps m = -inf and subtracts 0, so P = 0 and
 * never NaN; at the end l = 0 gives O = 0 and LSE = -inf.
 *
 * >>rows: the layouts. Score and output tiles are "query-major" here: a
 * tile of a warp's WM query rows by N columns (keys for S, head dims for O).
 *   mma.sync (NVIDIA, the nv profile): the products are S = Q K^T and
 *     O = P V, [WM x N] accumulators; a lane holds query rows lane/4 + 8 s
 *     (s = 0 .. WM/8 - 1, the row slots), and the 4 lanes of a quad share a row.
 *   MFMA (CDNA): the products are transposed, S^T = K Q^T and O^T = V^T P^T,
 *     [N x 32] accumulators, so that P^T's registers are directly the next
 *     MFMA's B operand; a lane holds query lane % 32 (one row slot), and lanes
 *     l and l ^ 32 share it.
 * ckt_fmha_acc_slot / _row / _col and ckt_fmha_row_max / _sum / _leader are
 * the only place the two flavors differ for the softmax, the mask and the
 * epilogue; the coordinates come from ckt/tile/mma.h (ckt_warp_acc_coord,
 * ckt_warp_acc_slot). Device code, on targets with a warp MMA.
 */
#ifndef CKT_FMHA_SOFTMAX_H
#define CKT_FMHA_SOFTMAX_H

#include "ckt/arch/arch.h"
#include "ckt/fmha/mask.h"
#include "ckt/tile/mma.h"

#include <math.h>

#if defined(CKT_HAS_MMA_SYNC) || defined(CKT_HAS_MFMA)

/* Independent dependency chains of a lane's row max and row sum in
 * ckt_fmha_softmax_update (a tuning knob; 1 is the plain serial loop). Two
 * on mma.sync / wgmma: the Hopper kernel's d64 went 307 -> 377 TFLOPS (H100,
 * b4 h32 s4096), d128 and the mma.sync kernel unchanged (docs/fmha.md#hopper);
 * one on MFMA (its registers as they were: no scratch). */
#ifndef CKT_FMHA_SOFTMAX_CHAINS
#if defined(CKT_HAS_MFMA)
#define CKT_FMHA_SOFTMAX_CHAINS 1
#else
#define CKT_FMHA_SOFTMAX_CHAINS 2
#endif
#endif
CKT_STATIC_ASSERT(CKT_FMHA_SOFTMAX_CHAINS >= 1, "CKT_FMHA_SOFTMAX_CHAINS: 1 or more");

/* >>rows: the query rows of a lane's accumulator registers */

/* The most row slots a lane holds (per-row scratch arrays are this long; the
 * registers used are CKT_FMHA_ROW_SLOTS(WM)). */
#define CKT_FMHA_ROW_SLOTS_MAX 8

#if defined(CKT_HAS_MMA_SYNC)

/* Row slots of a lane in a warp tile of WM query rows: rows lane/4 + 8 s. */
#define CKT_FMHA_ROW_SLOTS(WM) ((WM) / 8)

/* The row slot of register i of a query-major tile with n columns. */
CKT_INLINE CKT_DEVICE int ckt_fmha_acc_slot(int i, int n)
{
    return ckt_warp_acc_slot(i, n);
}

/* The query row (within the warp's tile) of row slot `slot` of lane. */
CKT_INLINE CKT_DEVICE int ckt_fmha_acc_row(int slot, int lane)
{
    return (lane >> 2) + 8 * slot;
}

/* The column (key or head dim) of register i of lane, in a tile of wm query rows by n columns. */
CKT_INLINE CKT_DEVICE int ckt_fmha_acc_col(int i, int lane, int wm, int n)
{
    int r, c;
    ckt_warp_acc_coord(&r, &c, i, lane, wm, n);
    return c;
}

/* x reduced over the lanes that share a row: the 4 lanes of a quad. */
CKT_INLINE CKT_DEVICE float ckt_fmha_row_max(float x)
{
    x = fmaxf(x, ckt_warp_shfl_xor_f32(x, 1));
    return fmaxf(x, ckt_warp_shfl_xor_f32(x, 2));
}

CKT_INLINE CKT_DEVICE float ckt_fmha_row_sum(float x)
{
    x += ckt_warp_shfl_xor_f32(x, 1);
    return x + ckt_warp_shfl_xor_f32(x, 2);
}

/* Whether lane writes its rows' per-row values (LSE): one lane of each quad. */
CKT_INLINE CKT_DEVICE int ckt_fmha_row_leader(int lane)
{
    return (lane & 3) == 0;
}

#else /* CKT_HAS_MFMA: transposed products, the query along the lanes */

#define CKT_FMHA_ROW_SLOTS(WM) ((WM) * 0 + 1) /* WM = 32, the MFMA N: one slot */

CKT_INLINE CKT_DEVICE int ckt_fmha_acc_slot(int i, int n)
{
    (void)i;
    (void)n;
    return 0;
}

CKT_INLINE CKT_DEVICE int ckt_fmha_acc_row(int slot, int lane)
{
    (void)slot;
    return lane & 31;
}

/* The accumulator is [n x wm] (transposed): the column is its row. */
CKT_INLINE CKT_DEVICE int ckt_fmha_acc_col(int i, int lane, int wm, int n)
{
    int c, q;
    ckt_warp_acc_coord(&c, &q, i, lane, n, wm);
    return c;
}

/* the other half of a query's keys (or head dims) is in lane ^ 32 */
CKT_INLINE CKT_DEVICE float ckt_fmha_row_max(float x)
{
    return fmaxf(x, ckt_warp_shfl_xor_f32(x, 32));
}

CKT_INLINE CKT_DEVICE float ckt_fmha_row_sum(float x)
{
    return x + ckt_warp_shfl_xor_f32(x, 32);
}

CKT_INLINE CKT_DEVICE int ckt_fmha_row_leader(int lane)
{
    return lane < 32;
}

#endif /* the layouts */

/* >>mask: mask.h's visible columns applied to a score tile */

/* s[] <- -inf outside the keys each row sees: s is a warp's score tile of wm
 * rows (tile rows row0 ..) by bn keys (n0 ..), CKT_WARP_ACC_REGS(wm, bn)
 * registers; tile row m is query m / pack of the entry (pack > 1: GQA rows
 * packed, ckt/fmha/pack.h; 1 otherwise, a constant the compiler folds).
 * Call it only for tiles ckt_fmha_mask_tile_full says are cut. */
CKT_INLINE CKT_DEVICE void ckt_fmha_mask_scores(float *s, const ckt_fmha_mask_params *m, int row0, int n0, int wm,
                                                int bn, int lane, int pack)
{
    /* visible columns of the lane's row slot r, relative to n0 and to the
     * lane's first column: [lo, hi]. A register's column is the lane's first
     * plus a constant of the register (both layouts), so the test per
     * register compares with an immediate. */
    const int c0 = ckt_fmha_acc_col(0, lane, wm, bn);
    int lo[CKT_FMHA_ROW_SLOTS_MAX], hi[CKT_FMHA_ROW_SLOTS_MAX];
    CKT_UNROLL
    for (int r = 0; r < CKT_FMHA_ROW_SLOTS(wm); r++) {
        ckt_fmha_mask_row_cols(m, (row0 + ckt_fmha_acc_row(r, lane)) / pack, n0, &lo[r], &hi[r]);
        lo[r] -= c0;
        hi[r] -= c0;
    }
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(wm, bn); i++) {
        const int c = ckt_fmha_acc_col(i, 0, wm, bn), slot = ckt_fmha_acc_slot(i, bn);
        if (c < lo[slot] || c > hi[slot])
            s[i] = -INFINITY;
    }
}

/* s[] and t[] <- 0 where a query does not see a key, on the backward's
 * transposed tiles (S^T and dP^T: a warp's wk x wq accumulator tile of rows
 * keys k0 .. and columns queries q0 .., ckt/fmha/bwd_body.h). On mma.sync a
 * lane's columns are 2 (lane & 3) + 8 n + e (e < 2) and its rows lane / 4
 * plus a constant of the register: the visible keys of each of its wq / 4
 * columns come from mask.h once, and each register compares its constant
 * row with them (the predicate per element was 21 instructions with
 * branches: 6.6% of the stall samples of the d64 causal s2048 backward, ncu
 * on the H200). Call it only for tiles ckt_fmha_mask_tile_full says are cut. */
#define CKT_FMHA_MASK_T_COLS_MAX 32 /* wq <= 128: the backward's S^T tiles have <= 64 registers a lane
                                     * (its CKT_STATIC_ASSERT) and >= 16 rows */
CKT_INLINE CKT_DEVICE void ckt_fmha_mask_scores_t(float *s, float *t, const ckt_fmha_mask_params *m, int k0, int q0,
                                                  int wk, int wq, int lane)
{
#if defined(CKT_HAS_MMA_SYNC)
    int lo[CKT_FMHA_MASK_T_COLS_MAX], hi[CKT_FMHA_MASK_T_COLS_MAX];
    const int g = lane >> 2, c0 = 2 * (lane & 3);
    CKT_UNROLL
    for (int j = 0; j < wq / 4; j++) { /* column c0 + 8 (j / 2) + j % 2: keys [lo, hi] of k0 + g */
        ckt_fmha_mask_row_cols(m, q0 + c0 + 8 * (j >> 1) + (j & 1), k0 + g, &lo[j], &hi[j]);
    }
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(wk, wq); i++) {
        int r, c;
        ckt_warp_acc_coord(&r, &c, i, 0, wk, wq); /* lane 0's: the constants */
        const int j = 2 * (c >> 3) + (c & 1);
        if (r < lo[j] || r > hi[j]) {
            s[i] = 0.0f;
            t[i] = 0.0f;
        }
    }
#else
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(wk, wq); i++) {
        int r, c;
        ckt_warp_acc_coord(&r, &c, i, lane, wk, wq);
        if (!ckt_fmha_mask_visible(m, q0 + c, k0 + r)) {
            s[i] = 0.0f;
            t[i] = 0.0f;
        }
    }
#endif
}

/* >>scores: soft-cap and the log2 domain */

/* tanh from the fast exp2 and reciprocal: tanh(x) = 1 - 2 / (e^2x + 1).
 * Absolute error ~1e-7; saturates to +-1 without NaN (e^2x = inf gives 1).
 * Inline, unlike libm's tanhf, which hipcc calls out of line when a unit has
 * several instances (the call then spills registers to scratch). */
CKT_INLINE CKT_DEVICE float ckt_fmha_tanh(float x)
{
    return 1.0f - 2.0f * ckt_rcpf_fast(ckt_exp2f_fast(2.0f * CKT_LOG2E * x) + 1.0f);
}

/* Soft-caps the scores s[0 .. n) in place (s <- cap * tanh(s * scale / cap),
 * when softcap > 0) and returns the factor f that takes them to the log2
 * domain: logit2 = s * f. Without a soft-cap the scores stay raw and the
 * scale folds into the exp2's FMA: p = exp2(s * f - m). The branch is
 * uniform and outside the loop. */
CKT_INLINE CKT_DEVICE float ckt_fmha_softcap(float *s, int n, float scale, float softcap)
{
    if (softcap > 0.0f) {
        const float in = scale / softcap;
        CKT_UNROLL
        for (int i = 0; i < n; i++)
            s[i] = softcap * ckt_fmha_tanh(s[i] * in);
        return CKT_LOG2E;
    }
    return scale * CKT_LOG2E;
}

/* >>online softmax */

/* Running state of the lane's row slots: m = -inf (log2 domain), l = 0. */
CKT_INLINE CKT_DEVICE void ckt_fmha_softmax_init(float *row_m, float *row_l, int wm)
{
    CKT_UNROLL
    for (int r = 0; r < CKT_FMHA_ROW_SLOTS(wm); r++) {
        row_m[r] = -INFINITY;
        row_l[r] = 0.0f;
    }
}

/* One key tile of the online softmax. s[] is the warp's score tile (wm query
 * rows by bn keys, masked, soft-capped; raw scores times to_log2 are log2
 * logits); on return it holds P = exp2(s * to_log2 - m_new) in fp32, row_m
 * the new maxima and corr[r] = exp2(m_old - m_new), the factor the output
 * accumulator's row r must be scaled by (ckt_fmha_rescale). row_l stays this
 * lane's partial sum: the lanes of a row share its max, so their partial sums
 * rescale alike and are added up once, after the loop
 * (ckt_fmha_softmax_finish). Returns 1 when some corr of this lane is not 1
 * (a row max grew); after the first tiles that is rare, so callers rescale
 * only when some lane of the warp says so. */
CKT_INLINE CKT_DEVICE int ckt_fmha_softmax_update(float *corr, float *s, float *row_m, float *row_l, int wm, int bn,
                                                  float to_log2)
{
    enum { R_MAX = CKT_FMHA_ROW_SLOTS_MAX, CH = CKT_FMHA_SOFTMAX_CHAINS };
    float mx[R_MAX][CH], m_use[R_MAX], sum[R_MAX][CH];
    /* row max over the lane's elements in CH independent chains (register
     * i in chain (i / 4) % CH: short dependency chains, which the warps of
     * a scheduler cannot hide otherwise), then over the lanes of the row */
    CKT_UNROLL
    for (int r = 0; r < CKT_FMHA_ROW_SLOTS(wm); r++)
        CKT_UNROLL
        for (int c = 0; c < CH; c++)
            mx[r][c] = -INFINITY, sum[r][c] = 0.0f;
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(wm, bn); i++)
        mx[ckt_fmha_acc_slot(i, bn)][(i >> 2) % CH] = fmaxf(mx[ckt_fmha_acc_slot(i, bn)][(i >> 2) % CH], s[i]);
    CKT_UNROLL
    for (int r = 0; r < CKT_FMHA_ROW_SLOTS(wm); r++) {
        float m = mx[r][0];
        CKT_UNROLL
        for (int c = 1; c < CH; c++)
            m = fmaxf(m, mx[r][c]);
        m = ckt_fmha_row_max(m);
        const float m_new = fmaxf(row_m[r], m * to_log2);
        /* a row with nothing visible yet keeps m = -inf: subtract 0 there */
        m_use[r] = m_new == -INFINITY ? 0.0f : m_new;
        corr[r] = ckt_exp2f_fast(row_m[r] - m_use[r]);
        row_m[r] = m_new;
    }
    /* P = exp2(S * f - m): the scale rides in the FMA; the sums in CH
     * chains too, added in a fixed order */
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(wm, bn); i++) {
        const float p = ckt_exp2f_fast(fmaf(s[i], to_log2, -m_use[ckt_fmha_acc_slot(i, bn)]));
        s[i] = p;
        sum[ckt_fmha_acc_slot(i, bn)][(i >> 2) % CH] += p;
    }
    CKT_UNROLL
    for (int r = 0; r < CKT_FMHA_ROW_SLOTS(wm); r++)
        CKT_UNROLL
        for (int c = 1; c < CH; c++)
            sum[r][0] += sum[r][c];
    int grew = 0;
    CKT_UNROLL
    for (int r = 0; r < CKT_FMHA_ROW_SLOTS(wm); r++) {
        row_l[r] = row_l[r] * corr[r] + sum[r][0];
        grew |= corr[r] != 1.0f;
    }
    return grew;
}

/* o[] *= corr of its row: o is a query-major accumulator of wm rows by n columns. */
CKT_INLINE CKT_DEVICE void ckt_fmha_rescale(float *o, const float *corr, int wm, int n)
{
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(wm, n); i++)
        o[i] *= corr[ckt_fmha_acc_slot(i, n)];
}

/* After the last key tile: the lanes of each row add up their partial sums
 * (row_l becomes the row's l) and inv[r] = 1 / l, 0 for a row that saw no key. */
CKT_INLINE CKT_DEVICE void ckt_fmha_softmax_finish(float *inv, float *row_l, int wm)
{
    CKT_UNROLL
    for (int r = 0; r < CKT_FMHA_ROW_SLOTS(wm); r++) {
        row_l[r] = ckt_fmha_row_sum(row_l[r]);
        inv[r] = row_l[r] > 0.0f ? 1.0f / row_l[r] : 0.0f;
    }
}

/* >>sink: attention sinks (gpt-oss), in the epilogue only */

/* sink2[r] of the lane's row slots: the sink logit of each row's query head
 * in the log2 domain, sink[head0 + row % g] * log2 e, for tile rows row0 +
 * ckt_fmha_acc_row(r, lane); g = 1 unless the rows are GQA-packed
 * (ckt/fmha/pack.h: tile row m is head head0 + m % g). */
CKT_INLINE CKT_DEVICE void ckt_fmha_sink_rows(float *sink2, const float *sink, int head0, int row0, int g, int wm,
                                              int lane)
{
    CKT_UNROLL
    for (int r = 0; r < CKT_FMHA_ROW_SLOTS(wm); r++)
        sink2[r] = sink[head0 + (row0 + ckt_fmha_acc_row(r, lane)) % g] * CKT_LOG2E;
}

/* After ckt_fmha_softmax_finish: the sink (sink2[r], log2 domain; -inf:
 * none) joins each finished row's denominator without a value:
 *   M = max(m, sink2),  l = l exp2(m - M) + exp2(sink2 - M),  inv = exp2(m - M) / l,  m = M
 * so O = acc * inv and LSE = ckt_fmha_softmax_lse(m, l) = ln(exp(sink) +
 * sum_j exp(s_j)) as they stand; a row that saw no key gets O = 0 and LSE =
 * sink. Taking the max keeps exp2 in range whichever side dominates. */
CKT_INLINE CKT_DEVICE void ckt_fmha_softmax_sink(float *inv, float *row_m, float *row_l, const float *sink2, int wm)
{
    CKT_UNROLL
    for (int r = 0; r < CKT_FMHA_ROW_SLOTS(wm); r++) {
        const float m = row_m[r], M = fmaxf(m, sink2[r]);
        if (M == -INFINITY)
            continue; /* no key and no sink: O = 0, LSE = -inf as before */
        const float c = ckt_exp2f_fast(m - M); /* 0 for a row that saw no key */
        row_l[r] = row_l[r] * c + ckt_exp2f_fast(sink2[r] - M);
        inv[r] = c / row_l[r];
        row_m[r] = M;
    }
}

/* >>merge: warps that shared rows but split the keys (the decode instances'
 * CKT_FMHA_KSPLIT, docs/fmha_inference.md#decode) */

/* Floats of shared memory one warp's partial state takes in
 * ckt_fmha_softmax_merge_warps: its accumulator of wm rows by n columns and
 * its rows' m and l, a float a lane each. */
#define CKT_FMHA_MERGE_FLOATS(wm, n) ((CKT_WARP_ACC_REGS(wm, n) + 2 * CKT_FMHA_ROW_SLOTS(wm)) * CKT_WARP_SIZE)

/* kw warps of the block (a group; this one is number ks in it) hold partial
 * states (o, row_m, row_l, before ckt_fmha_softmax_finish) of the same query
 * rows over disjoint keys. Afterwards the group's first warp (ks == 0, the
 * call returns 1 there, else 0) holds their merge:
 *   m = max_w m_w,  l = sum_w l_w exp2(m_w - m),  o = sum_w o_w exp2(m_w - m)
 * summed in warp order, so the result is the same bits every run whatever
 * the warps' timing. Lane L of every warp holds the same rows (the layout is
 * the warp's), so the merge pairs registers lane by lane. A block-wide call
 * (two barriers: every warp of the block calls it); red is the group's
 * kw * CKT_FMHA_MERGE_FLOATS(wm, n) floats of shared memory, free to reuse
 * (the first barrier waits for every warp's last read of what was there). */
CKT_INLINE CKT_DEVICE int ckt_fmha_softmax_merge_warps(float *o, float *row_m, float *row_l, int wm, int n, float *red,
                                                       int ks, int kw, int lane)
{
    const int R = CKT_FMHA_ROW_SLOTS(wm), A = CKT_WARP_ACC_REGS(wm, n);
    ckt_block_sync();
    if (ks > 0) { /* [m rows][l rows][o registers], a float a lane */
        float *mine = red + ks * CKT_FMHA_MERGE_FLOATS(wm, n) + lane;
        CKT_UNROLL
        for (int r = 0; r < R; r++) {
            mine[r * CKT_WARP_SIZE] = row_m[r];
            mine[(R + r) * CKT_WARP_SIZE] = row_l[r];
        }
        CKT_UNROLL
        for (int i = 0; i < A; i++)
            mine[(2 * R + i) * CKT_WARP_SIZE] = o[i];
    }
    ckt_block_sync();
    if (ks > 0)
        return 0;
    float m[CKT_FMHA_ROW_SLOTS_MAX], f[CKT_FMHA_ROW_SLOTS_MAX];
    CKT_UNROLL
    for (int r = 0; r < R; r++)
        m[r] = row_m[r];
    for (int w = 1; w < kw; w++)
        CKT_UNROLL
        for (int r = 0; r < R; r++)
            m[r] = fmaxf(m[r], red[w * CKT_FMHA_MERGE_FLOATS(wm, n) + r * CKT_WARP_SIZE + lane]);
    /* a row no warp saw keeps m = -inf: subtract 0 there (every factor 0) */
    CKT_UNROLL
    for (int r = 0; r < R; r++) {
        const float m_use = m[r] == -INFINITY ? 0.0f : m[r];
        f[r] = ckt_exp2f_fast(row_m[r] - m_use);
        row_l[r] *= f[r];
        row_m[r] = m[r];
        m[r] = m_use;
    }
    CKT_UNROLL
    for (int i = 0; i < A; i++)
        o[i] *= f[ckt_fmha_acc_slot(i, n)];
    for (int w = 1; w < kw; w++) {
        const float *theirs = red + w * CKT_FMHA_MERGE_FLOATS(wm, n) + lane;
        CKT_UNROLL
        for (int r = 0; r < R; r++) {
            f[r] = ckt_exp2f_fast(theirs[r * CKT_WARP_SIZE] - m[r]);
            row_l[r] += theirs[(R + r) * CKT_WARP_SIZE] * f[r];
        }
        CKT_UNROLL
        for (int i = 0; i < A; i++)
            o[i] += theirs[(2 * R + i) * CKT_WARP_SIZE] * f[ckt_fmha_acc_slot(i, n)];
    }
    return 1;
}

/* LSE = ln(sum_j exp(s_j)) of a finished row: (m + log2 l) * ln 2, -inf when
 * the row saw no key. */
CKT_INLINE CKT_DEVICE float ckt_fmha_softmax_lse(float m, float l)
{
    return l > 0.0f ? (m + log2f(l)) * CKT_LN2 : -INFINITY;
}

#endif /* CKT_HAS_MMA_SYNC || CKT_HAS_MFMA */

#endif /* CKT_FMHA_SOFTMAX_H */
