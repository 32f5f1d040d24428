/* ckt/fmha/fwd_body.h — the FMHA forward kernel, instantiated by define-then-include:
 *
 *   #include "ckt/fmha.h"
 *   #define CKT_FMHA_NAME    my_attn_d128_bf16   (required) prefix of what is defined
 *   #define CKT_FMHA_DTYPE   CKT_BF16            (required) CKT_F16 or CKT_BF16
 *   #define CKT_FMHA_HDIM    128                 (required) q/k head dim: 32..256, multiple of 32
 *   #define CKT_FMHA_HDIM_V  128                 (optional, default HDIM) v/o head dim
 *   #include CKT_FMHA_FWD_BODY
 *
 * defines
 *   ckt_status my_attn_d128_bf16_launch(const ckt_fmha_fwd_args *a, ckt_stream s);
 *   int        my_attn_d128_bf16_fits(const ckt_fmha_fwd_args *a);
 * and the kernel my_attn_d128_bf16_kernel, then #undefs the parameters, so a
 * translation unit may include the body again for another instance. Head dims
 * below the instance's (multiples of 8) run with zero padding. Everything else
 * (mask kind and window, scale, soft-cap, GQA, layouts, batch or group mode,
 * LSE) is a runtime argument: see ckt/fmha/args.h.
 *
 * The algorithm is FlashAttention-2's: a block owns BM query rows of one
 * (batch, head); it walks the key blocks the mask leaves visible (tiles wholly
 * outside the mask are never loaded), keeps the running row max m and sum l
 * of exp2-scaled scores in registers, rescales the output accumulator when m
 * grows, and divides by l at the end. K and V tiles stream through a
 * two-stage cp.async ring. Each warp owns 16 (NVIDIA) or 32 (CDNA) query rows.
 */

/* >>parameters */
#ifndef CKT_FMHA_NAME
#error "ckt/fmha/fwd_body.h: define CKT_FMHA_NAME (the instance's name prefix) before including the body"
#endif
#ifndef CKT_FMHA_DTYPE
#error "ckt/fmha/fwd_body.h: define CKT_FMHA_DTYPE as CKT_F16 or CKT_BF16"
#endif
#ifndef CKT_FMHA_HDIM
#error "ckt/fmha/fwd_body.h: define CKT_FMHA_HDIM (32, 64, 96, 128, 192 or 256)"
#endif
#ifndef CKT_FMHA_HDIM_V
#define CKT_FMHA_HDIM_V CKT_FMHA_HDIM
#endif

#include "ckt/fmha/args.h"
#include "ckt/fmha/validate.h"
#include "ckt/host/runtime.h"
#include "ckt/tile/mma.h"
#include "ckt/tile/pipeline.h"
#include "ckt/tile/view.h"

#include <math.h>

#define CKT__FMHA_CAT2(a, b) a##b
#define CKT__FMHA_CAT(a, b) CKT__FMHA_CAT2(a, b)
#define CKT__FMHA_FN(suffix) CKT__FMHA_CAT(CKT_FMHA_NAME, suffix)

/* Tile shape: BM query rows per block, BN keys per step. */
#define CKT__FMHA_D CKT_FMHA_HDIM
#define CKT__FMHA_DV CKT_FMHA_HDIM_V
#ifdef CKT_FMHA_WARPS /* optional tuning knobs */
#define CKT__FMHA_WARPS CKT_FMHA_WARPS
#elif defined(CKT_HAS_MFMA)
/* CDNA: 64 KiB of LDS hold Q (32 rows per wavefront) and one K/V stage */
#define CKT__FMHA_WARPS ((CKT_FMHA_HDIM > 128 || CKT_FMHA_HDIM_V > 128) ? 1 : 4)
#else
#define CKT__FMHA_WARPS 4
#endif
#define CKT__FMHA_THREADS (CKT__FMHA_WARPS * CKT_WARP_SIZE)
#if defined(CKT_HAS_MFMA)
#define CKT__FMHA_WM 32 /* MFMA 32x32x8: a wavefront owns 32 query rows */
#define CKT__FMHA_BN 32
#else
/* mma.sync m16n8k16: a warp owns 32 query rows (16 when the O accumulator
 * of 32 rows, DV registers, would not fit beside the scores); key steps of
 * 128 for head dims up to 64, 64 up to 128, else 32 (measured on H200:
 * docs/fmha.md) */
#ifdef CKT_FMHA_WARP_ROWS
#define CKT__FMHA_WM CKT_FMHA_WARP_ROWS
#else
#define CKT__FMHA_WM (CKT__FMHA_DV <= 128 ? 32 : 16)
#endif
#ifdef CKT_FMHA_BLOCK_N
#define CKT__FMHA_BN CKT_FMHA_BLOCK_N
#else
#define CKT__FMHA_BN (CKT__FMHA_D <= 64 ? 128 : CKT__FMHA_D <= 128 ? 64 : 32)
#endif
#endif
#define CKT__FMHA_BM (CKT__FMHA_WARPS * CKT__FMHA_WM)
/* k-steps of S = Q K^T unrolled per trip: 2 for head dims <= 64, else 4. Full
 * unrolling lets the compiler hoist every K fragment and spill; this keeps
 * them within the register budget (d128 at BN = 64: no spills, 4% faster
 * than BN = 32 fully unrolled; d64 at BN = 128: 3% faster than BN = 64) */
#ifdef CKT_FMHA_S_UNROLL
#define CKT__FMHA_S_UNROLL CKT_UNROLL_BY(CKT_FMHA_S_UNROLL)
#elif CKT_FMHA_HDIM > 64
#define CKT__FMHA_S_UNROLL CKT_UNROLL_BY(4)
#else
#define CKT__FMHA_S_UNROLL CKT_UNROLL_BY(2)
#endif
/* the Q tile's space also holds the O tile in the epilogue */
#define CKT__FMHA_Q_ELEMS                                                                          \
    (CKT__FMHA_D >= CKT__FMHA_DV ? CKT_SMEM_ELEMS(CKT_SMEM_PADDED, CKT__FMHA_BM, CKT__FMHA_D, 2)    \
                                 : CKT_SMEM_ELEMS(CKT_SMEM_PADDED, CKT__FMHA_BM, CKT__FMHA_DV, 2))
#define CKT__FMHA_K_ELEMS CKT_SMEM_ELEMS(CKT_SMEM_PADDED, CKT__FMHA_BN, CKT__FMHA_D, 2)
#define CKT__FMHA_V_ELEMS CKT_SMEM_ELEMS(CKT_SMEM_PADDED, CKT__FMHA_BN, CKT__FMHA_DV, 2)
/* K/V ring stages: 2 where copies are asynchronous (cp.async), else 1 */
#if defined(CKT_HAS_CP_ASYNC)
#define CKT__FMHA_STAGES 2
#else
#define CKT__FMHA_STAGES 1
#endif
#define CKT__FMHA_SMEM_BYTES                                                                      \
    ((size_t)(CKT__FMHA_Q_ELEMS + CKT__FMHA_STAGES * (CKT__FMHA_K_ELEMS + CKT__FMHA_V_ELEMS)) * 2)
#define CKT__FMHA_BF16 ((CKT_FMHA_DTYPE) == CKT_BF16)

CKT_STATIC_ASSERT(CKT__FMHA_D % 32 == 0 && CKT__FMHA_D >= 32 && CKT__FMHA_D <= 256,
                  "CKT_FMHA_HDIM must be a multiple of 32 in [32, 256] (smaller head dims run padded)");
CKT_STATIC_ASSERT(CKT__FMHA_DV % 32 == 0 && CKT__FMHA_DV >= 32 && CKT__FMHA_DV <= 256,
                  "CKT_FMHA_HDIM_V must be a multiple of 32 in [32, 256]");

#if defined(CKT_HAS_MMA_SYNC) || defined(CKT_HAS_MFMA)

/* >>device: the block's sequence and key range (shared by both instruction paths) */

#ifndef CKT__FMHA_COMMON_DEFINED
#define CKT__FMHA_COMMON_DEFINED

typedef struct ckt__fmha_seq {
    int64_t q_start, k_start; /* first row of this entry in Q and K/V (group mode) */
    int sq, sk;               /* logical lengths */
    int off;                  /* mask diagonal offset: 0 or sk - sq */
    int left, right;          /* window, -1 = unlimited */
} ckt__fmha_seq;

CKT_INLINE CKT_DEVICE ckt__fmha_seq ckt__fmha_resolve(const ckt_fmha_fwd_args *a, int b)
{
    ckt__fmha_seq s;
    if (a->group_mode) {
        s.q_start = a->seqstart_q[b];
        s.k_start = a->seqstart_k[b];
        s.sq = a->seqlen_q_ptr ? a->seqlen_q_ptr[b] : a->seqstart_q[b + 1] - a->seqstart_q[b];
        s.sk = a->seqlen_k_ptr ? a->seqlen_k_ptr[b] : a->seqstart_k[b + 1] - a->seqstart_k[b];
    } else {
        s.q_start = 0;
        s.k_start = 0;
        s.sq = a->seqlen_q;
        s.sk = a->seqlen_k;
    }
    int br = 0;
    s.left = -1;
    s.right = -1;
    switch (a->mask) {
    case CKT_MASK_CAUSAL_TOP_LEFT: s.right = 0; break;
    case CKT_MASK_CAUSAL_BOTTOM_RIGHT: s.right = 0; br = 1; break;
    case CKT_MASK_WINDOW_TOP_LEFT: s.left = a->window_left; s.right = a->window_right; break;
    case CKT_MASK_WINDOW_BOTTOM_RIGHT: s.left = a->window_left; s.right = a->window_right; br = 1; break;
    default: break;
    }
    s.off = br ? s.sk - s.sq : 0;
    return s;
}

/* The keys query i may see (j - i - off in [-left, right], j < sk), as
 * columns relative to n0: [*lo, *hi] (empty when *lo > *hi). */
CKT_INLINE CKT_DEVICE void ckt__fmha_visible_cols(const ckt__fmha_seq *s, int i, int n0, int *lo, int *hi)
{
    int l = -(1 << 30), h = s->sk - 1 - n0;
    if (s->left >= 0)
        l = i + s->off - s->left - n0;
    if (s->right >= 0 && i + s->off + s->right - n0 < h)
        h = i + s->off + s->right - n0;
    *lo = l;
    *hi = h;
}

/* The keys [*lo, *hi) some query of rows [m0, m0 + bm) may see. */
CKT_INLINE CKT_DEVICE void ckt__fmha_key_range(const ckt__fmha_seq *s, int m0, int bm, int *lo,
                                               int *hi)
{
    int64_t l = 0, h = s->sk;
    if (s->left >= 0)
        l = (int64_t)m0 + s->off - s->left;
    if (s->right >= 0) {
        int64_t last = (int64_t)(m0 + bm - 1 < s->sq - 1 ? m0 + bm - 1 : s->sq - 1);
        h = last + s->off + s->right + 1;
    }
    *lo = (int)(l < 0 ? 0 : l > s->sk ? s->sk : l);
    *hi = (int)(h < 0 ? 0 : h > s->sk ? s->sk : h);
}

/* Is every (i, j) of rows [m0, m0+bm) x keys [n0, n0+bn) visible (no masking needed)? */
CKT_INLINE CKT_DEVICE int ckt__fmha_tile_full(const ckt__fmha_seq *s, int m0, int bm, int n0, int bn)
{
    if (n0 + bn > s->sk)
        return 0;
    /* the extreme differences j - i - off over the tile */
    int dmin = n0 - (m0 + bm - 1) - s->off, dmax = n0 + bn - 1 - m0 - s->off;
    return (s->left < 0 || dmin >= -s->left) && (s->right < 0 || dmax <= s->right);
}

/* tanh from the fast exp2 and reciprocal: tanh(x) = 1 - 2 / (e^2x + 1).
 * Absolute error ~1e-7; saturates to +-1 without NaN (e^2x = inf gives 1).
 * Inline, unlike libm's tanhf, which hipcc calls out of line when a unit has
 * several instances (the call then spills registers to scratch). */
CKT_INLINE CKT_DEVICE float ckt__fmha_tanh(float x)
{
    return 1.0f - 2.0f * ckt_rcpf_fast(ckt_exp2f_fast(2.0f * CKT_LOG2E * x) + 1.0f);
}

/* Soft-caps the scores s[0 .. n) in place (s <- cap * tanh(s * scale / cap),
 * when softcap > 0) and returns the factor that takes them to the log2
 * domain: logit2 = s * factor. Without a soft-cap the scores stay raw and the
 * scale folds into the exp2's FMA: p = exp2(s * factor - m). The branch is
 * uniform and outside the loop. */
CKT_INLINE CKT_DEVICE float ckt__fmha_softcap(float *s, int n, float scale, float softcap)
{
    if (softcap > 0.0f) {
        const float in = scale / softcap;
        CKT_UNROLL
        for (int i = 0; i < n; i++)
            s[i] = softcap * ckt__fmha_tanh(s[i] * in);
        return CKT_LOG2E;
    }
    return scale * CKT_LOG2E;
}

#endif /* CKT__FMHA_COMMON_DEFINED */

/* >>device: the kernel */

CKT_KERNEL_BOUNDS(CKT__FMHA_FN(_kernel), ckt_fmha_fwd_args, a, CKT__FMHA_THREADS)
{
    enum { D = CKT__FMHA_D, DV = CKT__FMHA_DV, BM = CKT__FMHA_BM, BN = CKT__FMHA_BN, WM = CKT__FMHA_WM };
    CKT_DYNAMIC_SHARED(uint16_t, smem);
    const int tid = (int)ckt_thread_idx_x(), warp = (int)ckt_warp_id(), lane = (int)ckt_lane_id();
    const int b = (int)ckt_block_idx_z(), h = (int)ckt_block_idx_y();
    /* the last query blocks first: under a causal mask they see the most keys,
     * so the longest blocks start early and the short ones fill the tail */
    const int m0 = (int)(ckt_grid_dim_x() - 1 - ckt_block_idx_x()) * BM;
    const int hk = h / (a.nhead_q / a.nhead_k);
    const ckt__fmha_seq sq = ckt__fmha_resolve(&a, b);
    if (m0 >= sq.sq)
        return; /* whole block past this entry's queries (group mode, or ragged grid) */
    const float scale = a.scale > 0.0f ? a.scale : 1.0f / sqrtf((float)a.hdim_q);

    /* views: Q[b][h][i][:], K[b][hk][j][:], V[b][hk][j][:], O[b][h][i][:] */
    const int64_t qb = a.group_mode ? 0 : (int64_t)b * a.q_stride_b, kb = a.group_mode ? 0 : (int64_t)b * a.k_stride_b;
    const int64_t vb = a.group_mode ? 0 : (int64_t)b * a.v_stride_b, ob = a.group_mode ? 0 : (int64_t)b * a.o_stride_b;
    const uint16_t *qp = (const uint16_t *)a.q + qb + h * a.q_stride_h + sq.q_start * a.q_stride_s;
    const uint16_t *kp = (const uint16_t *)a.k + kb + hk * a.k_stride_h + sq.k_start * a.k_stride_s;
    const uint16_t *vp = (const uint16_t *)a.v + vb + hk * a.v_stride_h + sq.k_start * a.v_stride_s;
    uint16_t *op = (uint16_t *)a.o + ob + h * a.o_stride_h + sq.q_start * a.o_stride_s;
    ckt_window2d wq = ckt_window2d_make(ckt_view2d_make((void *)qp, sq.sq, a.hdim_q, a.q_stride_s), m0, 0);

    int n_lo, n_hi;
    ckt__fmha_key_range(&sq, m0, BM, &n_lo, &n_hi);
    n_lo = n_lo / BN * BN;
    const int nblocks = n_hi > n_lo ? CKT_CEIL_DIV(n_hi - n_lo, BN) : 0;
    ckt_window2d wk = ckt_window2d_make(ckt_view2d_make((void *)kp, sq.sk, a.hdim_q, a.k_stride_s), n_lo, 0);
    ckt_window2d wv = ckt_window2d_make(ckt_view2d_make((void *)vp, sq.sk, a.hdim_v, a.v_stride_s), n_lo, 0);

    /* shared tiles padded 16 bytes a row (CKT_SMEM_PADDED): Q [BM][D], then
     * per stage K [BN][D] and V [BN][DV] */
    ckt_smem_tile sQ = ckt_smem_tile_make(smem, CKT_SMEM_PADDED, D);
#define CKT__FMHA_SK(st) ckt_smem_tile_make(smem + CKT__FMHA_Q_ELEMS + (st) * (CKT__FMHA_K_ELEMS + CKT__FMHA_V_ELEMS), CKT_SMEM_PADDED, D)
#define CKT__FMHA_SV(st) ckt_smem_tile_make(smem + CKT__FMHA_Q_ELEMS + (st) * (CKT__FMHA_K_ELEMS + CKT__FMHA_V_ELEMS) + CKT__FMHA_K_ELEMS, CKT_SMEM_PADDED, DV)

    /* Q and the first K/V tile in flight */
    ckt_smem_tile_load_async(sQ, &wq, BM, D, CKT__FMHA_THREADS, tid);
    if (nblocks > 0) {
        ckt_smem_tile_load_async(CKT__FMHA_SK(0), &wk, BN, D, CKT__FMHA_THREADS, tid);
        ckt_smem_tile_load_async(CKT__FMHA_SV(0), &wv, BN, DV, CKT__FMHA_THREADS, tid);
    }
    ckt_pipe_commit();

    /* per-lane state: O accumulator, running max (log2 domain) and sum per row */
#if defined(CKT_HAS_MMA_SYNC)
    enum { ROWS = WM / 8 }; /* a lane holds rows g, g + 8, g + 16, .. of its warp's WM: slot r >> 3 */
#else
    enum { ROWS = 1 }; /* a lane holds query column lane % 32 of the transposed tiles */
#endif
    float o_acc[CKT_WARP_ACC_REGS(WM, DV)];
    float row_m[ROWS], row_l[ROWS];
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(WM, DV); i++)
        o_acc[i] = 0.0f;
    CKT_UNROLL
    for (int r = 0; r < ROWS; r++) {
        row_m[r] = -INFINITY;
        row_l[r] = 0.0f;
    }
    const int wrow0 = m0 + warp * WM; /* this warp's first query row */

    for (int nb = 0; nb < nblocks; nb++) {
        const int n0 = n_lo + nb * BN;
        /* K/V tile nb (and Q) have landed: one group is in flight at a time */
        ckt_cp_async_wait(0);
        ckt_block_sync();
        if (CKT__FMHA_STAGES > 1 && nb + 1 < nblocks) { /* prefetch the next K/V tile */
            ckt_window2d_move(&wk, BN, 0);
            ckt_window2d_move(&wv, BN, 0);
            ckt_smem_tile_load_async(CKT__FMHA_SK((nb + 1) % CKT__FMHA_STAGES), &wk, BN, D, CKT__FMHA_THREADS, tid);
            ckt_smem_tile_load_async(CKT__FMHA_SV((nb + 1) % CKT__FMHA_STAGES), &wv, BN, DV, CKT__FMHA_THREADS, tid);
            ckt_pipe_commit();
        }
        const ckt_smem_tile sK = CKT__FMHA_SK(nb % CKT__FMHA_STAGES), sV = CKT__FMHA_SV(nb % CKT__FMHA_STAGES);
        const int full = ckt__fmha_tile_full(&sq, wrow0, WM, n0, BN);

#if defined(CKT_HAS_MMA_SYNC)
        /* S[16 x BN] = Q[16 x D] K^T: A from Q rows of this warp, B from K as [n][k] */
        float s_acc[CKT_WARP_ACC_REGS(WM, BN)];
        CKT_UNROLL
        for (int i = 0; i < CKT_WARP_ACC_REGS(WM, BN); i++)
            s_acc[i] = 0.0f;
        CKT__FMHA_S_UNROLL
        for (int kk = 0; kk < D; kk += 16) {
            uint32_t qf[CKT_WARP_A_REGS(WM, 16)], kf[CKT_WARP_B_REGS(16, BN)];
            ckt_warp_load_a(qf, sQ, warp * WM, kk, WM, 16);
            ckt_warp_load_b_nk(kf, sK, 0, kk, 16, BN);
            ckt_warp_mma(s_acc, qf, kf, WM, BN, 16, CKT__FMHA_BF16);
        }
        /* scores (soft-capped), masked to -inf; row max over the lane's
         * elements (row slot r / 8), then over the 4 lanes of a quad (xor 1, 2);
         * the max and the running state are in the log2 domain */
        const float to_log2 = ckt__fmha_softcap(s_acc, CKT_WARP_ACC_REGS(WM, BN), scale, a.softcap);
        if (!full) { /* only tiles the mask or the end of the keys cut */
            /* visible columns of the lane's row slot r, relative to n0: [lo, hi] */
            int lo[ROWS], hi[ROWS];
            CKT_UNROLL
            for (int r = 0; r < ROWS; r++)
                ckt__fmha_visible_cols(&sq, wrow0 + (lane >> 2) + 8 * r, n0, &lo[r], &hi[r]);
            CKT_UNROLL
            for (int i = 0; i < CKT_WARP_ACC_REGS(WM, BN); i++) {
                int r, c;
                ckt_warp_acc_coord(&r, &c, i, lane, WM, BN);
                const int slot = ckt_warp_acc_slot(i, BN);
                if (c < lo[slot] || c > hi[slot])
                    s_acc[i] = -INFINITY;
            }
        }
        float mx[ROWS];
        CKT_UNROLL
        for (int r = 0; r < ROWS; r++)
            mx[r] = -INFINITY;
        CKT_UNROLL
        for (int i = 0; i < CKT_WARP_ACC_REGS(WM, BN); i++)
            mx[ckt_warp_acc_slot(i, BN)] = fmaxf(mx[ckt_warp_acc_slot(i, BN)], s_acc[i]);
        float corr[ROWS], m_use[ROWS], sum[ROWS];
        CKT_UNROLL
        for (int r = 0; r < ROWS; r++) {
            mx[r] = fmaxf(mx[r], ckt_warp_shfl_xor_f32(mx[r], 1));
            mx[r] = fmaxf(mx[r], ckt_warp_shfl_xor_f32(mx[r], 2));
            float m_new = fmaxf(row_m[r], mx[r] * to_log2);
            /* a row with nothing visible yet keeps m = -inf: subtract 0 there */
            m_use[r] = m_new == -INFINITY ? 0.0f : m_new;
            corr[r] = ckt_exp2f_fast(row_m[r] - m_use[r]);
            row_m[r] = m_new;
            sum[r] = 0.0f;
        }
        CKT_UNROLL
        for (int i = 0; i < CKT_WARP_ACC_REGS(WM, BN); i++) {
            float p = ckt_exp2f_fast(fmaf(s_acc[i], to_log2, -m_use[ckt_warp_acc_slot(i, BN)]));
            s_acc[i] = p;
            sum[ckt_warp_acc_slot(i, BN)] += p;
        }
        /* row_l stays this lane's partial sum (the 4 lanes of a quad share
         * the max, so partial sums rescale alike); the quad adds them up once,
         * after the loop */
        CKT_UNROLL
        for (int r = 0; r < ROWS; r++)
            row_l[r] = row_l[r] * corr[r] + sum[r];
        /* rescale O only when some row max of the warp grew (after the first
         * tiles it rarely does) */
        int grew = 0;
        CKT_UNROLL
        for (int r = 0; r < ROWS; r++)
            grew |= corr[r] != 1.0f;
        /* (for head dims <= 64, rescaling unconditionally measured faster) */
        if (CKT__FMHA_D <= 64 || ckt_warp_any(grew))
        {
            CKT_UNROLL
            for (int i = 0; i < CKT_WARP_ACC_REGS(WM, DV); i++)
                o_acc[i] *= corr[ckt_warp_acc_slot(i, DV)];
        }
        /* O[WM x DV] += P[WM x BN] V[BN x DV]: P's registers become A fragments */
        uint32_t pf[CKT_WARP_A_REGS(WM, BN)];
        ckt_warp_acc_to_a(pf, s_acc, WM, BN, CKT__FMHA_BF16);
        CKT_UNROLL
        for (int kk = 0; kk < BN; kk += 16) {
            uint32_t vf[CKT_WARP_B_REGS(16, DV)], pk[CKT_WARP_A_REGS(WM, 16)];
            CKT_UNROLL
            for (int mi = 0; mi < WM / 16; mi++)
                CKT_UNROLL
                for (int e = 0; e < 4; e++)
                    pk[mi * 4 + e] = pf[(mi * (BN / 16) + kk / 16) * 4 + e];
            ckt_warp_load_b_kn(vf, sV, kk, 0, 16, DV);
            ckt_warp_mma(o_acc, pk, vf, WM, DV, 16, CKT__FMHA_BF16);
        }
#else /* CKT_HAS_MFMA */
        /* Transposed on CDNA, so that P needs no shuffle between the two MFMAs:
         * S^T[BN x 32] = K[BN x D] Q^T: A = K rows, B = Q as [n][k]. A lane
         * holds query column lane % 32, keys 8 (r/4) + 4 (lane/32) + r%4. */
        float s_acc[CKT_WARP_ACC_REGS(BN, WM)];
        CKT_UNROLL
        for (int i = 0; i < CKT_WARP_ACC_REGS(BN, WM); i++)
            s_acc[i] = 0.0f;
        CKT_UNROLL_BY(1) /* full unrolling hoists every LDS read: registers spill */
        for (int kk = 0; kk < D; kk += 16) {
            uint32_t kf[CKT_WARP_A_REGS(BN, 16)], qf[CKT_WARP_B_REGS(16, WM)];
            ckt_warp_load_a(kf, sK, 0, kk, BN, 16);
            ckt_warp_load_b_nk(qf, sQ, warp * WM, kk, 16, WM);
            ckt_warp_mma(s_acc, kf, qf, BN, WM, 16, CKT__FMHA_BF16);
        }
        const float to_log2 = ckt__fmha_softcap(s_acc, CKT_WARP_ACC_REGS(BN, WM), scale, a.softcap);
        if (!full) {
            int lo, hi; /* visible keys of this lane's query, relative to n0 */
            ckt__fmha_visible_cols(&sq, wrow0 + (lane & 31), n0, &lo, &hi);
            CKT_UNROLL
            for (int i = 0; i < CKT_WARP_ACC_REGS(BN, WM); i++) {
                int key, q;
                ckt_warp_acc_coord(&key, &q, i, lane, BN, WM);
                if (key < lo || key > hi)
                    s_acc[i] = -INFINITY;
            }
        }
        float mx = -INFINITY;
        CKT_UNROLL
        for (int i = 0; i < CKT_WARP_ACC_REGS(BN, WM); i++)
            mx = fmaxf(mx, s_acc[i]);
        /* the other half of the keys of this query is in lane ^ 32 */
        mx = fmaxf(mx, ckt_warp_shfl_xor_f32(mx, 32));
        float m_new = fmaxf(row_m[0], mx * to_log2);
        float m_use = m_new == -INFINITY ? 0.0f : m_new;
        float corr = ckt_exp2f_fast(row_m[0] - m_use);
        row_m[0] = m_new;
        float sum = 0.0f;
        CKT_UNROLL
        for (int i = 0; i < CKT_WARP_ACC_REGS(BN, WM); i++) {
            float p = ckt_exp2f_fast(fmaf(s_acc[i], to_log2, -m_use));
            s_acc[i] = p;
            sum += p;
        }
        row_l[0] = row_l[0] * corr + sum; /* partial: lane ^ 32 holds the rest */
        if (ckt_warp_any(corr != 1.0f)) {
            CKT_UNROLL
            for (int i = 0; i < CKT_WARP_ACC_REGS(DV, WM); i++)
                o_acc[i] *= corr;
        }
        /* O^T[DV x 32] += V^T[DV x BN] P^T[BN x 32]: the B fragment of k-step
         * ks (keys 8 ks + 4 (lane/32) .. +3, query lane % 32) is S^T registers
         * 4 ks .. 4 ks + 3 of this lane, packed to 16 bits */
        CKT_UNROLL
        for (int ks = 0; ks < BN / 8; ks++) {
            uint32_t pf[2], vf[CKT_WARP_A_REGS(DV, 8)];
            const float *p4 = &s_acc[4 * ks];
            pf[0] = CKT__FMHA_BF16 ? ckt_pack2_bf16(p4[0], p4[1]) : ckt_pack2_f16(p4[0], p4[1]);
            pf[1] = CKT__FMHA_BF16 ? ckt_pack2_bf16(p4[2], p4[3]) : ckt_pack2_f16(p4[2], p4[3]);
            /* A = V^T: row d, keys 8 ks + 4 (lane/32) .. +3 = a column of V,
             * gathered like a [k][n] B operand */
            ckt_warp_load_b_kn(vf, sV, ks * 8, 0, 8, DV);
            ckt_warp_mma(o_acc, vf, pf, DV, WM, 8, CKT__FMHA_BF16);
        }
#endif
        if (CKT__FMHA_STAGES == 1 && nb + 1 < nblocks) { /* one buffer: refill it once all are done */
            ckt_block_sync();
            ckt_window2d_move(&wk, BN, 0);
            ckt_window2d_move(&wv, BN, 0);
            ckt_smem_tile_load_async(CKT__FMHA_SK(0), &wk, BN, D, CKT__FMHA_THREADS, tid);
            ckt_smem_tile_load_async(CKT__FMHA_SV(0), &wv, BN, DV, CKT__FMHA_THREADS, tid);
            ckt_pipe_commit();
        }
    }
    ckt_cp_async_wait_all(); /* nothing may stay in flight past the block's end */

    /* >>epilogue: O = acc / l (0 for rows that saw no key), LSE = ln(l) + m ln 2 */
#if defined(CKT_HAS_MMA_SYNC)
    float inv[ROWS];
    CKT_UNROLL
    for (int r = 0; r < ROWS; r++) {
        row_l[r] += ckt_warp_shfl_xor_f32(row_l[r], 1);
        row_l[r] += ckt_warp_shfl_xor_f32(row_l[r], 2);
        inv[r] = row_l[r] > 0.0f ? 1.0f / row_l[r] : 0.0f;
    }
    /* O goes out through shared memory (the Q tile's space, free once every
     * warp is past the loop): the accumulator layout scatters 4-byte pairs,
     * the row distribution then writes whole 16-byte vectors, masked */
    ckt_block_sync();
    const ckt_smem_tile sO = ckt_smem_tile_make(smem, CKT_SMEM_PADDED, DV);
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(WM, DV); i += 2) {
        int r, c;
        ckt_warp_acc_coord(&r, &c, i, lane, WM, DV);
        float x0 = o_acc[i] * inv[ckt_warp_acc_slot(i, DV)], x1 = o_acc[i + 1] * inv[ckt_warp_acc_slot(i, DV)];
        *(uint32_t *)ckt_smem_tile_ptr(sO, warp * WM + r, c) =
            CKT__FMHA_BF16 ? ckt_pack2_bf16(x0, x1) : ckt_pack2_f16(x0, x1);
    }
    ckt_block_sync();
    {
        uint32_t ov[CKT_ROWS_REGS(BM, DV, CKT__FMHA_THREADS, 2)];
        ckt_window2d wo = ckt_window2d_make(ckt_view2d_make(op, sq.sq, a.hdim_v, a.o_stride_s), m0, 0);
        ckt_rows_load_smem_b16(ov, sO.base, CKT_SMEM_PADDED, BM, DV, 8, CKT__FMHA_THREADS, tid);
        ckt_rows_store_b16(&wo, ov, BM, DV, 8, CKT__FMHA_THREADS, tid);
    }
    if (a.lse && (lane & 3) == 0) {
        CKT_UNROLL
        for (int r = 0; r < ROWS; r++) {
            int i = wrow0 + (lane >> 2) + 8 * r;
            if (i < sq.sq) {
                float lse = row_l[r] > 0.0f ? (row_m[r] + log2f(row_l[r])) * CKT_LN2 : -INFINITY;
                int64_t at = a.group_mode ? (int64_t)h * a.lse_stride_h + sq.q_start + i
                                          : (int64_t)b * a.lse_stride_b + (int64_t)h * a.lse_stride_h + i;
                a.lse[at] = lse;
            }
        }
    }
#else
    row_l[0] += ckt_warp_shfl_xor_f32(row_l[0], 32);
    const float inv = row_l[0] > 0.0f ? 1.0f / row_l[0] : 0.0f;
    const int qi = wrow0 + (lane & 31);
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(DV, WM); i++) {
        int d, q;
        ckt_warp_acc_coord(&d, &q, i, lane, DV, WM);
        float x = o_acc[i] * inv;
        if (qi < sq.sq && d < a.hdim_v)
            op[(int64_t)qi * a.o_stride_s + d] = CKT__FMHA_BF16 ? ckt_bf16_from_f32(x).bits : ckt_f16_from_f32(x).bits;
    }
    if (a.lse && lane < 32 && qi < sq.sq) {
        float lse = row_l[0] > 0.0f ? (row_m[0] + log2f(row_l[0])) * CKT_LN2 : -INFINITY;
        int64_t at = a.group_mode ? (int64_t)h * a.lse_stride_h + sq.q_start + qi
                                  : (int64_t)b * a.lse_stride_b + (int64_t)h * a.lse_stride_h + qi;
        a.lse[at] = lse;
    }
#endif
#undef CKT__FMHA_SK
#undef CKT__FMHA_SV
}

#endif /* CKT_HAS_MMA_SYNC || CKT_HAS_MFMA */

/* >>host: fits and launch */

static inline int CKT__FMHA_FN(_fits)(const ckt_fmha_fwd_args *a)
{
    return a && a->dtype == (CKT_FMHA_DTYPE) && a->hdim_q > 0 && a->hdim_q <= CKT__FMHA_D &&
           a->hdim_v > 0 && a->hdim_v <= CKT__FMHA_DV && a->hdim_q % 8 == 0 && a->hdim_v % 8 == 0;
}

static inline ckt_status CKT__FMHA_FN(_launch)(const ckt_fmha_fwd_args *a, ckt_stream stream)
{
    ckt_status st = ckt_fmha_fwd_validate(a, (CKT_FMHA_DTYPE), CKT__FMHA_D, CKT__FMHA_DV);
    if (st != CKT_SUCCESS)
        return st;
#if defined(CKT_HAS_MMA_SYNC) || defined(CKT_HAS_MFMA)
    if (a->batch == 0 || a->seqlen_q == 0 || a->nhead_q == 0)
        return CKT_SUCCESS; /* nothing to compute */
    ckt_dim3 grid = ckt_dim3_make((unsigned)CKT_CEIL_DIV(a->seqlen_q, CKT__FMHA_BM), (unsigned)a->nhead_q,
                                  (unsigned)a->batch);
    return ckt_rt_launch(CKT_KERNEL_REF(CKT__FMHA_FN(_kernel)), grid, ckt_dim3_make(CKT__FMHA_THREADS, 1, 1),
                         CKT__FMHA_SMEM_BYTES, stream, a);
#else
    (void)stream;
    return ckt__fail(CKT_ERROR_UNSUPPORTED, "%s: this target has no warp MMA", "fmha");
#endif
}

/* >>consumed parameters */
#undef CKT_FMHA_NAME
#undef CKT_FMHA_DTYPE
#undef CKT_FMHA_HDIM
#undef CKT_FMHA_HDIM_V
#undef CKT__FMHA_D
#undef CKT__FMHA_DV
#undef CKT__FMHA_WARPS
#undef CKT__FMHA_THREADS
#undef CKT__FMHA_WM
#undef CKT__FMHA_BN
#undef CKT__FMHA_BM
#undef CKT__FMHA_S_UNROLL
#undef CKT__FMHA_Q_ELEMS
#undef CKT__FMHA_K_ELEMS
#undef CKT__FMHA_V_ELEMS
#undef CKT__FMHA_STAGES
#undef CKT__FMHA_SMEM_BYTES
#undef CKT__FMHA_BF16
#undef CKT__FMHA_FN
