/* ckt/fmha/mask.h — the attention mask of one batch entry, as every FMHA
 * kernel (forward, backward, and the inference variants) and the host
 * planner see it: the predicate, the visible columns of a row, the key range
 * of a query tile, the query range of a key tile, and whether a tile needs
 * masking at all.
 *
 *   ckt_fmha_mask_params m = ckt_fmha_mask_make(a.mask, a.window_left, a.window_right, sq, sk);
 *   if (ckt_fmha_mask_visible(&m, i, j)) ...
 *
 * Convention (FlashAttention's, see ckt/fmha/args.h): query i (0 <= i < sq)
 * sees key j (0 <= j < sk) when
 *     j - i - off in [-left, right]          (a bound < 0 is unlimited)
 * with off = 0 for top-left masks and sk - sq for bottom-right ones. Causal
 * masks are windows (unlimited, 0). Host and device alike.
 */
#ifndef CKT_FMHA_MASK_H
#define CKT_FMHA_MASK_H

#include "ckt/arch/config.h"
#include "ckt/fmha/args.h"

#include <stdint.h>

typedef struct ckt_fmha_mask_params {
    int sq, sk;      /* the entry's logical lengths */
    int off;         /* diagonal offset: 0 (top-left) or sk - sq (bottom-right) */
    int left, right; /* window sides, < 0 = unlimited */
} ckt_fmha_mask_params;

/* Whether kind is a causal mask (top-left or bottom-right): a query tile's
 * keys grow with its rows (schedules balance on it). */
CKT_INLINE CKT_HOST_DEVICE int ckt_fmha_mask_is_causal(ckt_fmha_mask kind)
{
    return kind == CKT_MASK_CAUSAL_TOP_LEFT || kind == CKT_MASK_CAUSAL_BOTTOM_RIGHT;
}

/* The mask of kind with window sides wl / wr (used by the window kinds only)
 * for an entry of sq queries and sk keys. */
CKT_INLINE CKT_HOST_DEVICE ckt_fmha_mask_params ckt_fmha_mask_make(ckt_fmha_mask kind, int wl, int wr, int sq,
                                                                   int sk)
{
    ckt_fmha_mask_params m;
    int br = 0;
    m.sq = sq;
    m.sk = sk;
    m.left = -1;
    m.right = -1;
    switch (kind) {
    case CKT_MASK_CAUSAL_TOP_LEFT: m.right = 0; break;
    case CKT_MASK_CAUSAL_BOTTOM_RIGHT: m.right = 0; br = 1; break;
    case CKT_MASK_WINDOW_TOP_LEFT: m.left = wl; m.right = wr; break;
    case CKT_MASK_WINDOW_BOTTOM_RIGHT: m.left = wl; m.right = wr; br = 1; break;
    default: break;
    }
    /* |j - i - off| < max(sq, sk) inside the entry: a side of sq + sk or more
     * cuts nothing, and is unlimited (so that INT_MAX, a common "no limit",
     * cannot overflow the 32-bit sums of ckt_fmha_mask_row_cols and the
     * other range functions) */
    if (m.left < 0 || (int64_t)m.left >= (int64_t)sq + sk)
        m.left = -1;
    if (m.right < 0 || (int64_t)m.right >= (int64_t)sq + sk)
        m.right = -1;
    m.off = br ? sk - sq : 0;
    return m;
}

/* Does query i see key j? (Both inside the entry, and inside the window.) */
CKT_INLINE CKT_HOST_DEVICE int ckt_fmha_mask_visible(const ckt_fmha_mask_params *m, int i, int j)
{
    const int64_t d = (int64_t)j - i - m->off;
    return i >= 0 && i < m->sq && j >= 0 && j < m->sk && (m->left < 0 || d >= -m->left) &&
           (m->right < 0 || d <= m->right);
}

/* The keys query i sees, as columns relative to n0: [*lo, *hi] (inclusive;
 * empty when *lo > *hi, also for a row outside [0, sq)). Columns below 0 or
 * past the tile are the caller's to ignore. */
CKT_INLINE CKT_HOST_DEVICE void ckt_fmha_mask_row_cols(const ckt_fmha_mask_params *m, int i, int n0, int *lo,
                                                       int *hi)
{
    int l = -(1 << 30), h = m->sk - 1 - n0;
    if (m->left >= 0)
        l = i + m->off - m->left - n0;
    if (m->right >= 0 && i + m->off + m->right - n0 < h)
        h = i + m->off + m->right - n0;
    if (i < 0 || i >= m->sq) {
        l = 1;
        h = 0;
    }
    *lo = l;
    *hi = h;
}

/* The keys [*lo, *hi) that some query of rows [m0, m0 + bm) sees (clamped to
 * [0, sk]; empty when *lo >= *hi). */
CKT_INLINE CKT_HOST_DEVICE void ckt_fmha_mask_key_range(const ckt_fmha_mask_params *m, int m0, int bm, int *lo,
                                                        int *hi)
{
    int64_t l = 0, h = m->sk;
    const int64_t last = (int64_t)(m0 + bm - 1 < m->sq - 1 ? m0 + bm - 1 : m->sq - 1);
    if (m->left >= 0)
        l = (int64_t)m0 + m->off - m->left;
    if (m->right >= 0)
        h = last + m->off + m->right + 1;
    if (last < m0)
        h = 0; /* no query rows */
    *lo = (int)(l < 0 ? 0 : l > m->sk ? m->sk : l);
    *hi = (int)(h < 0 ? 0 : h > m->sk ? m->sk : h);
}

/* The queries [*lo, *hi) that see some key of [n0, n0 + bn) (clamped to
 * [0, sq]; empty when *lo >= *hi): query i sees key j when
 * i in [j - off - right, j - off + left]. The backward walks these. */
CKT_INLINE CKT_HOST_DEVICE void ckt_fmha_mask_query_range(const ckt_fmha_mask_params *m, int n0, int bn, int *lo,
                                                          int *hi)
{
    const int64_t last = (int64_t)(n0 + bn - 1 < m->sk - 1 ? n0 + bn - 1 : m->sk - 1);
    int64_t l = 0, h = m->sq;
    if (m->right >= 0)
        l = (int64_t)n0 - m->off - m->right;
    if (m->left >= 0)
        h = last - m->off + m->left + 1;
    if (last < n0)
        h = 0; /* no keys */
    *lo = (int)(l < 0 ? 0 : l > m->sq ? m->sq : l);
    *hi = (int)(h < 0 ? 0 : h > m->sq ? m->sq : h);
}

/* Is every (i, j) of rows [m0, m0 + bm) x keys [n0, n0 + bn) visible, so
 * that the tile needs no masking? (Rows past sq or keys past sk: no.) */
CKT_INLINE CKT_HOST_DEVICE int ckt_fmha_mask_tile_full(const ckt_fmha_mask_params *m, int m0, int bm, int n0,
                                                       int bn)
{
    if (n0 + bn > m->sk || m0 + bm > m->sq)
        return 0;
    /* the extreme differences j - i - off over the tile */
    const int64_t dmin = (int64_t)n0 - (m0 + bm - 1) - m->off, dmax = (int64_t)n0 + bn - 1 - m0 - m->off;
    return (m->left < 0 || dmin >= -m->left) && (m->right < 0 || dmax <= m->right);
}

/* The tile starts n0 for which ckt_fmha_mask_tile_full(m, m0, bm, n0, bn)
 * holds, as one interval: lo <= n0 <= hi (empty when *lo > *hi). Computed
 * once per query tile, it leaves a kernel's key loop two 32-bit compares a
 * step: the conditions n0 + bn <= sk, dmin >= -left and dmax <= right of
 * ckt_fmha_mask_tile_full each bound n0 from one side. */
CKT_INLINE CKT_HOST_DEVICE void ckt_fmha_mask_full_keys(const ckt_fmha_mask_params *m, int m0, int bm, int bn, int *lo,
                                                        int *hi)
{
    int64_t l = INT32_MIN, h = (int64_t)m->sk - bn;
    if (m->left >= 0) /* n0 - (m0 + bm - 1) - off >= -left */
        l = (int64_t)m0 + bm - 1 + m->off - m->left;
    if (m->right >= 0 && (int64_t)m0 + m->off + m->right - bn + 1 < h) /* n0 + bn - 1 - m0 - off <= right */
        h = (int64_t)m0 + m->off + m->right - bn + 1;
    if ((int64_t)m0 + bm > m->sq) {
        l = 1; /* rows past the entry: never full */
        h = 0;
    }
    *lo = (int)(l < INT32_MIN ? INT32_MIN : l > INT32_MAX ? INT32_MAX : l);
    *hi = (int)(h < INT32_MIN ? INT32_MIN : h > INT32_MAX ? INT32_MAX : h);
}

/* The transpose: the tile starts m0 for which ckt_fmha_mask_tile_full(m,
 * m0, bm, n0, bn) holds, as one interval lo <= m0 <= hi (empty when *lo >
 * *hi). The backward walks the query tiles of one key tile: computed once a
 * key tile, it leaves each step two compares. */
CKT_INLINE CKT_HOST_DEVICE void ckt_fmha_mask_full_queries(const ckt_fmha_mask_params *m, int n0, int bn, int bm,
                                                           int *lo, int *hi)
{
    int64_t l = INT32_MIN, h = (int64_t)m->sq - bm;
    if (m->right >= 0) /* n0 + bn - 1 - m0 - off <= right */
        l = (int64_t)n0 + bn - 1 - m->off - m->right;
    if (m->left >= 0 && (int64_t)n0 - bm + 1 - m->off + m->left < h) /* n0 - (m0 + bm - 1) - off >= -left */
        h = (int64_t)n0 - bm + 1 - m->off + m->left;
    if ((int64_t)n0 + bn > m->sk) {
        l = 1; /* keys past the entry: never full */
        h = 0;
    }
    *lo = (int)(l < INT32_MIN ? INT32_MIN : l > INT32_MAX ? INT32_MAX : l);
    *hi = (int)(h < INT32_MIN ? INT32_MIN : h > INT32_MAX ? INT32_MAX : h);
}

#endif /* CKT_FMHA_MASK_H */
