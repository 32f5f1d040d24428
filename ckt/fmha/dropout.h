/* ckt/fmha/dropout.h — dropout on the attention probabilities, the one home of
 * its logic: the Philox4x32-10 generator, the keep decision of element
 * (b, h, i, j), and its application to a warp's score tile. The forward,
 * the backward and the CPU references all call these, so the backward
 * regenerates exactly the forward's mask.
 *
 *   ckt_fmha_dropout d = ckt_fmha_dropout_make(p_drop, seed, offset);
 *   uint32_t r = ckt_fmha_dropout_byte(&d, b * nhead_q + h, i, j);   // host or device
 *   keep = r >= d.threshold;  kept values are scaled by d.scale = 1 / (1 - p)
 *
 * Semantics (FlashAttention's): O = (P o Z / (1 - p)) V with P the softmax
 * (LSE unaffected) and Z_ij in {0, 1} the keep mask, P(Z_ij = 1) ~ 1 - p.
 *
 * >>rng: Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers:
 * as easy as 1, 2, 3", SC 2011): a counter-based generator, a 128-bit counter
 * and a 64-bit key through 10 rounds of two 32x32 -> 64-bit products. Element
 * (b, h, i, j) of batch entry b (group mode: the entry index), query head h
 * (with GQA the QUERY head), query row i and key j within the entry
 * (logical coordinates: never the packed row), gets byte j % 16 of the 16
 * bytes of
 *     Philox(counter = {j / 16, i, b * nhead_q + h, lo32(offset)},
 *            key     = {lo32(seed), hi32(seed) ^ hi32(offset)})
 * (bytes little-endian within the 4 output words, word (j % 16) / 4). So one
 * Philox call gives 16 consecutive keys of a row; the kernels call it once
 * per 16 keys a lane holds (the forward) or once per 16 keys a warp holds
 * (the backward: >>tile_t, shared by warp shuffles). Distinct offsets give independent masks: a training loop may
 * simply add 1 per call (PyTorch-style larger steps are fine too).
 *
 * >>keep: element dropped when its byte < threshold, threshold =
 * (uint32_t)(p * 256 + 0.5) in fp32 (so p is quantized to 1/256: the drop
 * probability is threshold / 256, CK's uint8 comparison); kept elements are
 * scaled by 1 / (1 - p) (fp32, the requested p). p = 0 is off.
 *
 * Host and device; the tile function (>>tile) on targets with a warp MMA.
 */
#ifndef CKT_FMHA_DROPOUT_H
#define CKT_FMHA_DROPOUT_H

#include "ckt/arch/arch.h"

#include <stdint.h>

/* >>rng: Philox4x32-10 */

#define CKT_PHILOX_M0 0xD2511F53u /* the round multipliers (Salmon et al., table 2) */
#define CKT_PHILOX_M1 0xCD9E8D57u
#define CKT_PHILOX_W0 0x9E3779B9u /* the key schedule's Weyl increments: golden ratio, sqrt(3) - 1 */
#define CKT_PHILOX_W1 0xBB67AE85u
#define CKT_PHILOX_ROUNDS 10 /* (ckt_philox4x32_10 writes them out) */

/* One round: (c0, c1, c2, c3) <- (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0)). */
CKT_INLINE CKT_HOST_DEVICE void ckt__philox_round(uint32_t *c, uint32_t k0, uint32_t k1)
{
    const uint64_t p0 = (uint64_t)CKT_PHILOX_M0 * c[0], p1 = (uint64_t)CKT_PHILOX_M1 * c[2];
    const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    const uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    const uint32_t c1 = c[1], c3 = c[3];
    c[0] = hi1 ^ c1 ^ k0;
    c[1] = lo1;
    c[2] = hi0 ^ c3 ^ k1;
    c[3] = lo0;
}

/* out[0..3] <- Philox4x32-10(counter c0..c3, key k0, k1). */
CKT_INLINE CKT_HOST_DEVICE void ckt_philox4x32_10(uint32_t *out, uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                                  uint32_t k0, uint32_t k1)
{
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
    /* CKT_PHILOX_ROUNDS rounds, the key bumped between them; written out
     * (a host-device function: no unroll pragma, which the host compiler
     * of nvcc would warn about) */
    ckt__philox_round(out, k0, k1);
    ckt__philox_round(out, k0 + 1u * CKT_PHILOX_W0, k1 + 1u * CKT_PHILOX_W1);
    ckt__philox_round(out, k0 + 2u * CKT_PHILOX_W0, k1 + 2u * CKT_PHILOX_W1);
    ckt__philox_round(out, k0 + 3u * CKT_PHILOX_W0, k1 + 3u * CKT_PHILOX_W1);
    ckt__philox_round(out, k0 + 4u * CKT_PHILOX_W0, k1 + 4u * CKT_PHILOX_W1);
    ckt__philox_round(out, k0 + 5u * CKT_PHILOX_W0, k1 + 5u * CKT_PHILOX_W1);
    ckt__philox_round(out, k0 + 6u * CKT_PHILOX_W0, k1 + 6u * CKT_PHILOX_W1);
    ckt__philox_round(out, k0 + 7u * CKT_PHILOX_W0, k1 + 7u * CKT_PHILOX_W1);
    ckt__philox_round(out, k0 + 8u * CKT_PHILOX_W0, k1 + 8u * CKT_PHILOX_W1);
    ckt__philox_round(out, k0 + 9u * CKT_PHILOX_W0, k1 + 9u * CKT_PHILOX_W1);
}

/* >>keep: the parameters of one call */

typedef struct ckt_fmha_dropout {
    uint32_t key0, key1; /* Philox key: lo32(seed), hi32(seed) ^ hi32(offset) */
    uint32_t ctr3;       /* counter word 3: lo32(offset) */
    uint32_t threshold;  /* drop when the byte < threshold (0 .. 256) */
    float scale;         /* 1 / (1 - p): kept values */
} ckt_fmha_dropout;

/* The drop threshold of probability p, (uint32_t)(p * 256 + 0.5) in fp32. */
CKT_INLINE CKT_HOST_DEVICE uint32_t ckt_fmha_dropout_threshold(float p)
{
    return p > 0.0f ? (uint32_t)(p * 256.0f + 0.5f) : 0u;
}

CKT_INLINE CKT_HOST_DEVICE ckt_fmha_dropout ckt_fmha_dropout_make(float p, uint64_t seed, uint64_t offset)
{
    ckt_fmha_dropout d;
    d.key0 = (uint32_t)seed;
    d.key1 = (uint32_t)(seed >> 32) ^ (uint32_t)(offset >> 32);
    d.ctr3 = (uint32_t)offset;
    d.threshold = ckt_fmha_dropout_threshold(p);
    d.scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    return d;
}

/* The seed and offset of a call: *seed_offset ({seed, offset}, device
 * memory, read by the kernel: CUDA / HIP graphs replay with new values) when
 * given, else the values. */
CKT_INLINE CKT_HOST_DEVICE ckt_fmha_dropout ckt_fmha_dropout_of(float p, uint64_t seed, uint64_t offset,
                                                                const uint64_t *seed_offset)
{
    if (seed_offset) {
        seed = seed_offset[0];
        offset = seed_offset[1];
    }
    return ckt_fmha_dropout_make(p, seed, offset);
}

/* The 16 random bytes of keys 16 j16 .. 16 j16 + 15 of row i of head bh (b * nhead_q + h). */
CKT_INLINE CKT_HOST_DEVICE void ckt_fmha_dropout_words(uint32_t *w, const ckt_fmha_dropout *d, uint32_t bh, int i,
                                                       int j16)
{
    ckt_philox4x32_10(w, (uint32_t)j16, (uint32_t)i, bh, d->ctr3, d->key0, d->key1);
}

/* Byte k (0 .. 15) of the 4 words w0..w3, by selects (no indexed array: registers stay registers). */
CKT_INLINE CKT_HOST_DEVICE uint32_t ckt_fmha_dropout_pick(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3, int k)
{
    const int q = k >> 2;
    const uint32_t w = q == 0 ? w0 : q == 1 ? w1 : q == 2 ? w2 : w3;
    return (w >> (8 * (k & 3))) & 0xffu;
}

/* The random byte of element (bh, i, j): keep iff >= d->threshold. */
CKT_INLINE CKT_HOST_DEVICE uint32_t ckt_fmha_dropout_byte(const ckt_fmha_dropout *d, uint32_t bh, int i, int j)
{
    uint32_t w[4];
    ckt_fmha_dropout_words(w, d, bh, i, j >> 4);
    return ckt_fmha_dropout_pick(w[0], w[1], w[2], w[3], j & 15);
}

/* The factor of element (bh, i, j): 0 (dropped) or 1 / (1 - p). */
CKT_INLINE CKT_HOST_DEVICE float ckt_fmha_dropout_factor(const ckt_fmha_dropout *d, uint32_t bh, int i, int j)
{
    return ckt_fmha_dropout_byte(d, bh, i, j) >= d->threshold ? d->scale : 0.0f;
}

/* The random bytes of keys j0 .. j1 - 1 of row i of head bh into dst[j]
 * (dst: the row's randval), one Philox call per 16 keys. Host and device:
 * the forward's randval kernel and the reference. */
CKT_INLINE CKT_HOST_DEVICE void ckt_fmha_dropout_store_row(uint8_t *dst, const ckt_fmha_dropout *d, uint32_t bh,
                                                           int i, int j0, int j1)
{
    for (int g = j0 >> 4; g * 16 < j1; g++) {
        uint32_t w[4];
        ckt_fmha_dropout_words(w, d, bh, i, g);
        for (int k = 0; k < 16; k++) {
            const int j = g * 16 + k;
            if (j >= j0 && j < j1)
                dst[j] = (uint8_t)ckt_fmha_dropout_pick(w[0], w[1], w[2], w[3], k);
        }
    }
}

/* >>tile: a warp's probability tile (device, targets with a warp MMA) */

#if defined(CKT_HAS_MMA_SYNC) || defined(CKT_HAS_MFMA)
#include "ckt/fmha/softmax.h"

/* s[] holds P of a warp's query-major tile (ckt/fmha/softmax.h): wm tile
 * rows from row0 by bn keys from n0 (n0 and bn multiples of 16). Zeroes the
 * dropped elements (the caller scales by 1 / (1 - p) once, in the epilogue).
 * Tile row m is query m / pack of head bh0 + m % pack (pack > 1: GQA-packed
 * rows, ckt/fmha/pack.h; else 1); bh0 = b * nhead_q + the first head.
 *
 * One Philox call per (row slot, 16 keys): a lane's columns of a 16-key
 * group are c0 + cc, c0 its first column (< 8) and cc a constant of the
 * register whose remainder mod 16 keeps c0 + cc within the group (mma.sync:
 * cc % 16 in {0, 1, 8, 9}, c0 = 2 (lane % 4); MFMA: cc % 16 in {0..3,
 * 8..11}, c0 = 4 (lane / 32)), so which registers share a call is known at
 * compile time. (The random bytes for tests, randval, are stored by a
 * separate kernel, ckt_fmha_dropout_store_row: stores in this loop cost the
 * CDNA forward 40 registers even when off.) */
CKT_INLINE CKT_DEVICE void ckt_fmha_dropout_tile(float *s, const ckt_fmha_dropout *d, uint32_t bh0, int row0, int n0,
                                                 int wm, int bn, int lane, int pack)
{
    const int c0 = ckt_fmha_acc_col(0, lane, wm, bn);
    CKT_UNROLL
    for (int r = 0; r < CKT_FMHA_ROW_SLOTS(wm); r++) {
        const int m = row0 + ckt_fmha_acc_row(r, lane);
        CKT_UNROLL
        for (int gq = 0; gq < bn / 16; gq++) {
            uint32_t w[4];
            ckt_fmha_dropout_words(w, d, bh0 + (uint32_t)(m % pack), m / pack, (n0 >> 4) + gq);
            CKT_UNROLL
            for (int i = 0; i < CKT_WARP_ACC_REGS(wm, bn); i++) {
                const int cc = ckt_fmha_acc_col(i, 0, wm, bn);
                if (ckt_fmha_acc_slot(i, bn) != r || cc / 16 != gq)
                    continue; /* compile-time after unrolling */
                if (ckt_fmha_dropout_pick(w[0], w[1], w[2], w[3], (c0 + cc) & 15) < d->threshold)
                    s[i] = 0.0f;
            }
        }
    }
}

#if defined(CKT_HAS_MMA_SYNC)
/* The same mask on P once packed to 16-bit pairs for the second MMA
 * (ckt_warp_acc_to_a: pf[q] holds accumulator registers 2q, the low half,
 * and 2q + 1, the high half: one row, columns c and c + 1). There the fp32
 * tile is dead: 32 fewer live registers than ckt_fmha_dropout_tile on s[]
 * needs, which spilled the d128 forward on sm_90 (at 255). Zeroed halves
 * are +0 in fp16 and bf16.
 *
 * The 4 lanes of a quad hold the same rows, and of each 16-key group lane
 * q (= lane % 4) holds keys 2q, 2q + 1, 8 + 2q, 9 + 2q: bytes 2q, 2q + 1 of
 * the group's words 0-1 and of words 2-3, 32 bits. So the quad shares the
 * Philox calls: of every gb (up to 4) groups, lane q computes group q % gb
 * and hands each lane of the quad its 32 bits (a transpose by xor
 * shuffles, one a group); a lane makes one call a row per gb groups
 * instead of gb. A lane gathers its keep bits of a row (4 a group, 32 for
 * 128 keys), then masks its pairs with compile-time shifts. */
CKT_INLINE CKT_DEVICE uint32_t ckt__fmha_dropout_quad_bits(const uint32_t *w, int q)
{
    const uint32_t lo = (q >> 1) ? w[1] : w[0], hi = (q >> 1) ? w[3] : w[2];
    const int sh = 16 * (q & 1);
    return ((lo >> sh) & 0xffffu) | (((hi >> sh) & 0xffffu) << 16);
}

CKT_INLINE CKT_DEVICE void ckt_fmha_dropout_tile_packed(uint32_t *pf, const ckt_fmha_dropout *d, uint32_t bh0,
                                                        int row0, int n0, int wm, int bn, int lane, int pack)
{
    const int q = lane & 3;                       /* the lane's place in its quad */
    const int gb = bn / 16 < 4 ? bn / 16 : 4;     /* groups a quad shares */
    CKT_UNROLL_BY(1) /* one row slot at a time: unrolled, the Philox chains overlapped and spilled */
    for (int r = 0; r < CKT_FMHA_ROW_SLOTS(wm); r++) {
        const int m = row0 + ckt_fmha_acc_row(r, lane);
        const uint32_t bh = bh0 + (uint32_t)(m % pack);
        uint32_t keep = 0; /* bit 4 g + e: element e (keys 2q, 2q + 1, 8 + 2q, 9 + 2q) of group g kept */
        CKT_UNROLL
        for (int g0 = 0; g0 < bn / 16; g0 += gb) {
            uint32_t w[4];
            ckt_fmha_dropout_words(w, d, bh, m / pack, (n0 >> 4) + g0 + q % gb);
            CKT_UNROLL
            for (int t = 0; t < gb; t++) {
                /* lane q ^ t made group g0 + (q ^ t) % gb; each lane sends the bits its partner needs */
                uint32_t x = ckt__fmha_dropout_quad_bits(w, q ^ t);
                if (t)
                    x = ckt_warp_shfl_xor_u32(x, (unsigned)t);
                const uint32_t k4 = (uint32_t)((x & 0xffu) >= d->threshold) |
                                    (uint32_t)(((x >> 8) & 0xffu) >= d->threshold) << 1 |
                                    (uint32_t)(((x >> 16) & 0xffu) >= d->threshold) << 2 |
                                    (uint32_t)((x >> 24) >= d->threshold) << 3;
                keep |= k4 << (4 * (g0 + (q ^ t) % gb));
            }
        }
        CKT_UNROLL
        for (int p = 0; p < CKT_WARP_ACC_REGS(wm, bn) / 2; p++) {
            if (ckt_fmha_acc_slot(2 * p, bn) != r)
                continue;
            const int cc = ckt_fmha_acc_col(2 * p, 0, wm, bn); /* compile-time: lane 0's column */
            const int bit = 4 * (cc / 16) + ((cc & 15) >= 8 ? 2 : 0);
            pf[p] &= ((keep >> bit) & 1u ? 0x0000ffffu : 0u) | ((keep >> (bit + 1)) & 1u ? 0xffff0000u : 0u);
        }
    }
}
#endif

/* >>tile_t: the keep bits of a lane's key-major tile (the backward's S^T:
 * wm keys as rows from k0, a multiple of 16, by wn queries as columns from
 * q0; ckt_warp_acc_coord's layout), bit i for accumulator register i (at
 * most 64 registers). Every (16-key group, query) pair the warp holds takes
 * one Philox call, done once per warp, not once per element:
 *   mma.sync: a lane holds keys g and g + 8 (g = lane / 4) of each group and
 *   wn / 4 queries that depend on t = lane % 4 alone, so the 8 lanes of one t
 *   share all their pairs; lane (g, t) computes pairs g, g + 8, .. of them,
 *   compares the 16 bytes with the threshold 4 at a time (ckt_fmha_dropout_ge4),
 *   and warp shuffles (two pairs a shuffle) hand each lane bits g and g + 8 of
 *   every pair: wm wn / 512 Philox calls a lane instead of wm wn / 32.
 *   MFMA: a lane holds one query per 32 columns and 8 keys of each group
 *   (bytes of words h and h + 2, h = lane / 32): one call per pair, in the
 *   lane (8 elements a call).
 * The mask is the same pure function of (bh, i, j) as everywhere else
 * (tests/fmha/dropout_tile_test compares the bits with ckt_fmha_dropout_byte). */

/* Bit 7 of byte b of the result: byte b of x >= byte b of y, 4 bytes at a
 * time; y = t * 0x01010101 for a threshold t <= 255 (t = 256: callers keep
 * nothing). The low 7 bits compare without a borrow between bytes, (x | 0x80)
 * - (y & 0x7f) keeping bit 7 iff x % 128 >= y % 128; the high bits decide
 * where they differ. */
CKT_INLINE CKT_HOST_DEVICE uint32_t ckt_fmha_dropout_ge4(uint32_t x, uint32_t y)
{
    const uint32_t lo = (x | 0x80808080u) - (y & 0x7f7f7f7fu);
    return ((x & ~y) | (~(x ^ y) & lo)) & 0x80808080u;
}

#if defined(CKT_HAS_MMA_SYNC)
CKT_INLINE CKT_DEVICE uint64_t ckt_fmha_dropout_keep_t(const ckt_fmha_dropout *d, uint32_t bh, int q0, int k0,
                                                       int wm, int wn, int lane)
{
    const int g = lane >> 2, t = lane & 3;
    const int nq = wn / 4;            /* query columns of the lanes of one t */
    const int np = (wm / 16) * nq;    /* their (group, query) pairs: p = mi nq + qq */
    const int nk = (np + 7) / 8;      /* pairs a lane computes: p = 8 k + g (at most 4) */
    const uint32_t y = d->threshold * 0x01010101u;
    /* 1: this lane's pairs, one Philox chain at a time (a rolled loop: the
     * backward sits at 255 registers). The keep bit of key 4 q + c (word q, byte c) goes to
     * bit 8 c + q of a pair's 32 bits, so two pairs share a word: pair k at
     * bits 32 (k / 2) + 4 (k % 2) of own */
    uint64_t own = 0;
    CKT_UNROLL_BY(1)
    for (int k = 0; k < nk; k++) {
        const int p = 8 * k + g;
        if (p < np) {
            const int mi = p / nq, qq = p % nq;
            uint32_t w[4];
            ckt_fmha_dropout_words(w, d, bh, q0 + (qq >> 1) * 8 + 2 * t + (qq & 1), (k0 >> 4) + mi);
            const uint32_t m = ckt_fmha_dropout_ge4(w[0], y) >> 7 | ckt_fmha_dropout_ge4(w[1], y) >> 6 |
                               ckt_fmha_dropout_ge4(w[2], y) >> 5 | ckt_fmha_dropout_ge4(w[3], y) >> 4;
            own |= (uint64_t)m << (32 * (k >> 1) + 4 * (k & 1));
        }
    }
    /* 2: pairs 16 hf + s and 16 hf + 8 + s from lane 4 s + t (32 bits of its
     * own); keys g and g + 8 of pair (mi, qq) are bits sg = 8 (g % 4) + g / 4
     * and sg + 2, the keep bits of registers i and i + 2,
     * i = 4 (mi wn / 8 + qq / 2) + qq % 2 */
    const int sg = 8 * (g & 3) + (g >> 2);
    uint64_t keep = 0;
    CKT_UNROLL
    for (int hf = 0; hf < (nk + 1) / 2; hf++) {
        const uint32_t mine = (uint32_t)(own >> (32 * hf));
        CKT_UNROLL
        for (int s = 0; s < 8; s++) {
            if (16 * hf + s >= np)
                continue; /* compile time: no pair from this lane (warp-uniform) */
            const uint32_t v = ckt_warp_shfl_idx_u32(mine, (unsigned)(4 * s + t)) >> sg;
            CKT_UNROLL
            for (int e = 0; e < 2; e++) {
                const int p = 16 * hf + 8 * e + s;
                if (p >= np)
                    continue; /* compile time */
                const int mi = p / nq, qq = p % nq, i = 4 * (mi * (wn / 8) + qq / 2) + qq % 2;
                keep |= (uint64_t)((v >> (4 * e)) & 5u) << i;
            }
        }
    }
    return d->threshold > 255u ? 0 : keep;
}
#else /* CKT_HAS_MFMA */
CKT_INLINE CKT_DEVICE uint64_t ckt_fmha_dropout_keep_t(const ckt_fmha_dropout *d, uint32_t bh, int q0, int k0,
                                                       int wm, int wn, int lane)
{
    const int hw = lane >> 5, tiles_n = wn / 32;
    const uint32_t y = d->threshold * 0x01010101u;
    uint64_t keep = 0;
    /* accumulator tile (tm, tn), half hg: registers 16 (tm tiles_n + tn) + 8 hg
     * + 4 j + c hold key 16 (2 tm + hg) + 8 j + 4 hw + c (byte c of word 2 j + hw);
     * bits 7, 15, 23, 31 of ge4 to bits 28..31 by one product (no carries) */
    CKT_UNROLL
    for (int tile = 0; tile < (wm / 32) * tiles_n; tile++) {
        CKT_UNROLL
        for (int hg = 0; hg < 2; hg++) {
            uint32_t w[4];
            ckt_fmha_dropout_words(w, d, bh, q0 + (tile % tiles_n) * 32 + (lane & 31),
                                   (k0 >> 4) + 2 * (tile / tiles_n) + hg);
            const uint32_t lo = ckt_fmha_dropout_ge4(hw ? w[1] : w[0], y) * 0x00204081u;
            const uint32_t hi = ckt_fmha_dropout_ge4(hw ? w[3] : w[2], y) * 0x00204081u;
            keep |= (uint64_t)(lo >> 28 | hi >> 28 << 4) << (16 * tile + 8 * hg);
        }
    }
    return d->threshold > 255u ? 0 : keep;
}
#endif

/* o-scale factors inv[r] *= 1 / (1 - p) (the epilogue's 1 / l of each row slot). */
CKT_INLINE CKT_DEVICE void ckt_fmha_dropout_scale_rows(float *inv, const ckt_fmha_dropout *d, int wm)
{
    CKT_UNROLL
    for (int r = 0; r < CKT_FMHA_ROW_SLOTS(wm); r++)
        inv[r] *= d->scale;
}
#endif /* CKT_HAS_MMA_SYNC || CKT_HAS_MFMA */

#endif /* CKT_FMHA_DROPOUT_H */
