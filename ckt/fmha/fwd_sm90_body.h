/* ckt/fmha/fwd_sm90_body.h — the forward on Hopper's instructions, a
 * fragment of ckt/fmha/fwd_body.h (included there once per instance whose
 * head dims are multiples of 64 up to 256 with 16-bit inputs, or 64 / 128
 * with fp8 ones; unpacked; the plain 16-bit d64 instances include it a
 * second time for a narrow kernel). Defines NAME_sm90_kernel and
 * NAME_sm90_run (the instance's launcher calls it first; it declines calls
 * the kernel does not take), NAME_sm90n_... for the narrow kernel.
 *
 * The same algorithm and shared modules as the mma.sync kernel (mask,
 * online softmax, soft-cap, sinks, epilogue: a wgmma accumulator's warp
 * slice of 16 rows has mma.sync's register layout), on FlashAttention-3's
 * structure:
 *
 *   block of 64 NWG query rows, 128 (NWG + 1) threads: NWG = 3 consumer
 *   warpgroups at d64, else 2 (and in d64's narrow kernel, which takes
 *   causal calls up to 4096 query rows: the 128-row tile wastes less of
 *   the diagonal; H200 s2048 +15%, s4096 +6%, s8192 -5%)
 *     warpgroup 0, producer: Q once, then K_j, V_j into a ring of
 *       CKT_FMHA_SM90_STAGES (2) stages (TMA 4-D tiles when the tensors
 *       allow, else cp.async by its 128 threads), K and V each announced
 *       on its own full_k[s] / full_v[s] and reused after empty_k[s] /
 *       empty_v[s] (K_j is free once S_j is done; K_{j+1} goes out before
 *       V_j, as FlashAttention-3's two pipelines); from a paged pool by
 *       TMA its warp 1 stages the page ids in shared memory and warp 0
 *       copies, so that no copy waits for a read of the block table;
 *     warpgroups 1 .. NWG, consumers: 64 query rows each;
 *       S = Q K_j^T        wgmma m64nBNk16 (fp8: k32), Q and K from shared memory
 *       soft-cap, mask, m, l, P    ckt/fmha/softmax.h on the registers
 *       O = O corr + P V_j  wgmma m64nDVk16 (fp8: k32), P from registers,
 *                           V MN-major (fp8: V^T K-major)
 *   epilogue straight from the registers (ckt/fmha/epilogue.h).
 *
 *   a 1-D grid over the tiles (ckt/fmha/schedule.h): a block a tile, or a
 *   persistent grid of a block per multiprocessor (batch-mode calls without
 *   a mask, or causal up to 64 query tiles, on the plain 16-bit instances
 *   at two consumer warpgroups: CKT__F9_PERSIST, ckt_fmha_sm90_persistent),
 *   whose producer loads the next tile's Q (after qempty), K and V while
 *   the consumers finish this one's; the ring's phases run on over a
 *   block's tiles. Causal grids take their tiles in pairs of a long and a
 *   short one, whose work sums to the same.
 *
 * fp8 instances (e4m3 Q, K, V; head dims 64 and 128): wgmma k32 e4m3, both
 * operands K-major, so the producer warpgroup also transposes each V tile
 * (TMA'd into a staging ring of two) into V^T in the permuted key order of
 * ckt/tile/fp8.h, and P is packed to e4m3 as the A operand where it lies
 * (ckt_warp_acc_to_a_e4m3); the scales as the mma.sync kernel's
 * (ckt/fmha/fp8.h). Key tiles of 128.
 *
 * Taken for calls without bias, ALiBi, dropout or split-KV (the mma.sync
 * kernel runs those); 16-bit instances with the KV cache also take
 * cache_batch_idx and paged pools whose page size has a multiple of 8 rows
 * in common with the key tile (TMA copies of page runs; ragged tiles by
 * cp.async: ckt/fmha/sm90.h). docs/fmha.md#hopper.
 */
#if !defined(CKT__FMHA_FN)
#error "ckt/fmha/fwd_sm90_body.h: a fragment of ckt/fmha/fwd_body.h"
#endif

#include "ckt/fmha/sm90.h"

/* the kernel's and its launcher's names: NAME_sm90_kernel, NAME_sm90_run;
 * CKT__F9_NARROW (fwd_body.h's second Hopper kernel of the d64 instances,
 * at two consumer warpgroups for short causal calls): NAME_sm90n_... */
#if defined(CKT__F9_NARROW)
#define CKT__F9_KERNEL _sm90n_kernel
#define CKT__F9_RUN _sm90n_run
#else
#define CKT__F9_KERNEL _sm90_kernel
#define CKT__F9_RUN _sm90_run
#endif

/* consumer warpgroups of 64 query rows: 3 at d64 (FlashAttention-3's
 * 192-row tile: the softmax there outweighs the MMAs, so a third
 * warpgroup's turn hides it; d64's narrow kernel has 2), else 2 */
#ifdef CKT_FMHA_SM90_CONSUMERS /* a tuning knob: 2 or 3 */
#define CKT__F9_NWG CKT_FMHA_SM90_CONSUMERS
#elif defined(CKT__F9_NARROW)
#define CKT__F9_NWG 2
#elif CKT__FMHA_D == 64 && CKT__FMHA_DV == 64 && !CKT__FMHA_FP8
#define CKT__F9_NWG 3
#else
#define CKT__F9_NWG 2
#endif
#define CKT__F9_BM (64 * CKT__F9_NWG)
#if CKT__FMHA_FP8 /* V^T rows are 128 keys (one 128B swizzle atom) */
#define CKT__F9_BN 128
#elif defined(CKT_FMHA_SM90_BLOCK_N) /* a tuning knob: 64, 80, 128, 176, 192 or 256 */
#define CKT__F9_BN CKT_FMHA_SM90_BLOCK_N
#elif CKT__FMHA_D <= 128
#define CKT__F9_BN 128
#elif CKT__FMHA_D == 256 && !CKT__FMHA_KVC /* FlashAttention-3's d256 tile: +3-16% over 64 (H100); the _kv
                                           * twin keeps 64, whose pages of 64, 128, ... make TMA runs */
#define CKT__F9_BN 80
#else
#define CKT__F9_BN 64
#endif
#ifdef CKT_FMHA_SM90_STAGES /* a tuning knob: the K/V ring's depth */
#define CKT__F9_STAGES CKT_FMHA_SM90_STAGES
#else
#define CKT__F9_STAGES 2
#endif
#define CKT__F9_THREADS (128 * (CKT__F9_NWG + 1))
/* registers a thread after setmaxnreg: producer, consumers (65536 a block) */
/* the block's registers: its launch's per thread (65536 over the threads,
 * a multiple of 8) times the threads; setmaxnreg.inc waits until the pool
 * has them, so asking for more than that hangs (seen: 32 / 240 at two
 * consumer warpgroups, 512 > 504 a thread-slot) */
#define CKT__F9_POOL ((65536 / (128 * (CKT__F9_NWG + 1)) / 8 * 8) * (CKT__F9_NWG + 1))
#ifdef CKT_FMHA_SM90_PRODUCER_REGS /* a tuning knob: a multiple of 8, 24 .. 256 */
#define CKT__F9_REGS_P CKT_FMHA_SM90_PRODUCER_REGS
#define CKT__F9_REGS_C ((CKT__F9_POOL - CKT__F9_REGS_P) / CKT__F9_NWG / 8 * 8)
#elif CKT__F9_NWG == 2 && CKT__FMHA_KVC /* the paged / ragged producer's state: 40 spilled after each wait */
#define CKT__F9_REGS_P 56
#define CKT__F9_REGS_C 224
#else
#define CKT__F9_REGS_P (CKT__F9_NWG == 2 ? 40 : 32)
#define CKT__F9_REGS_C (CKT__F9_NWG == 2 ? 232 : 160)
#endif
/* Whether a block may take several tiles (a persistent grid: the launcher
 * chooses, ckt_fmha_sm90_persistent): 16-bit instances without the KV
 * cache at two consumer warpgroups. Elsewhere the loop over a block's tiles
 * runs once, its carried state folded away: that state's registers made
 * d64's three consumer warpgroups spill in the hot loop and the _kv
 * producer after each wait (ptxas, SASS; H100: d64 non-causal s4096 0.82x,
 * paged prefill 0.89x). */
#if !CKT__FMHA_FP8 && !CKT__FMHA_KVC && CKT__F9_NWG == 2
#define CKT__F9_PERSIST 1
#else
#define CKT__F9_PERSIST 0
#endif
/* the producer warpgroup's named barriers (1 .. NWG: the consumers' turns):
 * its 128 threads; a paged pool's page-id buffers filled (2) and free (2) */
#define CKT__F9_PBAR 8
#define CKT__F9_IDFULL 9
#define CKT__F9_IDEMPTY 11
#define CKT__F9_IDDONE 13
/* Q, K: rows of CKT__FMHA_D 16-bit units in column blocks of RB bytes */
#define CKT__F9_RB (CKT__FMHA_D >= 64 ? 128 : 64)
#define CKT__F9_Q_BYTES (CKT__F9_BM * CKT__FMHA_D * 2)
#define CKT__F9_K_BYTES (CKT__F9_BN * CKT__FMHA_D * 2)
#if CKT__FMHA_FP8 /* a stage's V^T: DV rows of BN bytes; the staging ring: BN rows of DV bytes */
#define CKT__F9_V_BYTES (CKT__FMHA_DV * CKT__F9_BN)
#define CKT__F9_R_BYTES (CKT__F9_BN * CKT__FMHA_DV)
#else
#define CKT__F9_V_BYTES (CKT__F9_BN * CKT__FMHA_DV * 2)
#define CKT__F9_R_BYTES 0
#endif
#define CKT__F9_STAGE_BYTES (CKT__F9_K_BYTES + CKT__F9_V_BYTES)
#define CKT__F9_BARS (1 + 4 * CKT__F9_STAGES + 3)
/* a paged pool's page ids, staged for the producer's copies: two buffers of
 * CKT__F9_IDS runs (instances with the KV cache) */
#define CKT__F9_IDS 128
#define CKT__F9_ID_BYTES (CKT__FMHA_KVC ? 2 * CKT__F9_IDS * 4 : 0)
#define CKT__F9_SMEM_BYTES                                                                                         \
    ((size_t)CKT__F9_Q_BYTES + CKT__F9_STAGES * (CKT__F9_K_BYTES + CKT__F9_V_BYTES) + 2 * CKT__F9_R_BYTES +     \
     8 * CKT__F9_BARS + CKT__F9_ID_BYTES + 1024)
CKT_STATIC_ASSERT(CKT__F9_SMEM_BYTES <= 227 * 1024, "the Hopper forward's shared memory exceeds 227 KiB");
CKT_STATIC_ASSERT(!CKT__FMHA_FP8 || (CKT__FMHA_D * 2 == CKT__FMHA_DV && (CKT__FMHA_DV == 64 || CKT__FMHA_DV == 128)),
                  "the Hopper forward takes fp8 head dims 64 and 128 (d == d_v)");
CKT_STATIC_ASSERT((CKT__F9_NWG == 2 || CKT__F9_NWG == 3) && (CKT__F9_NWG == 2 || !CKT__FMHA_FP8),
                  "the Hopper forward takes 2 or 3 consumer warpgroups (fp8: 2)");
CKT_STATIC_ASSERT(CKT__F9_REGS_P + CKT__F9_NWG * CKT__F9_REGS_C <= CKT__F9_POOL,
                  "the Hopper forward's setmaxnreg split exceeds the block's registers (setmaxnreg.inc would hang)");
CKT_STATIC_ASSERT(CKT__F9_STAGES >= 2, "the Hopper forward's K/V ring needs 2 stages or more (a consumer releases "
                  "tile j's stage after waiting for tile j + 1's)");

/* wgmma of N columns, f16 or bf16: the element type is an enum constant,
 * which the preprocessor cannot compare, so both are named and the
 * compiler folds the test */
#define CKT__F9_CAT3(a, b, c) a##b##c
#define CKT__F9_WG(n, suffix) CKT__F9_CAT3(ckt_wgmma_m64n, n, suffix)
#if CKT__FMHA_FP8
#define CKT__F9_S_MMA(d, da, db, acc) CKT__F9_WG(CKT__F9_BN, k32_e4m3_ss)(d, da, db, acc)
#define CKT__F9_O_MMA(d, a, db, acc) CKT__F9_WG(CKT__FMHA_DV, k32_e4m3_rs)(d, a, db, acc)
#else
#define CKT__F9_S_MMA(d, da, db, acc)                                                             \
    do {                                                                                          \
        if (CKT__FMHA_BF16)                                                                       \
            CKT__F9_WG(CKT__F9_BN, k16_bf16_ss)(d, da, db, acc);                                  \
        else                                                                                      \
            CKT__F9_WG(CKT__F9_BN, k16_f16_ss)(d, da, db, acc);                                   \
    } while (0)
#define CKT__F9_O_MMA(d, a, db, acc)                                                              \
    do {                                                                                          \
        if (CKT__FMHA_BF16)                                                                       \
            CKT__F9_WG(CKT__FMHA_DV, k16_bf16_rs_bmn)(d, a, db, acc);                             \
        else                                                                                      \
            CKT__F9_WG(CKT__FMHA_DV, k16_f16_rs_bmn)(d, a, db, acc);                              \
    } while (0)
#endif

CKT_KERNEL_GRID_CONSTANT_BOUNDS(CKT__FMHA_FN(CKT__F9_KERNEL), ckt_fmha_sm90_params, p, CKT__F9_THREADS, 1)
{
#if defined(CKT_HAS_WGMMA)
    enum { D = CKT__FMHA_D, DV = CKT__FMHA_DV, BM = CKT__F9_BM, BN = CKT__F9_BN, S = CKT__F9_STAGES,
           RB = CKT__F9_RB, FP8 = CKT__FMHA_FP8 };
    const ckt_fmha_fwd_args *a = &p.a;
    CKT_DYNAMIC_SHARED(unsigned char, smem_raw);
    unsigned char *smem = (unsigned char *)ckt_smem_align_1024(smem_raw);
    unsigned char *sQ = smem;
#define CKT__F9_SK(s) (smem + CKT__F9_Q_BYTES + (s) * (CKT__F9_K_BYTES + CKT__F9_V_BYTES))
#define CKT__F9_SV(s) (CKT__F9_SK(s) + CKT__F9_K_BYTES)
#define CKT__F9_SR(i) (CKT__F9_SK(S) + (i) * CKT__F9_R_BYTES) /* fp8: V as loaded */
    uint64_t *qbar = (uint64_t *)CKT__F9_SR(2);
    uint64_t *full_k = qbar + 1, *full_v = full_k + S, *empty_k = full_v + S, *empty_v = empty_k + S;
    uint64_t *vbar = empty_v + S;
    uint64_t *qempty = vbar + 2;
    int32_t *sid = (int32_t *)(qbar + CKT__F9_BARS); /* the page-id buffers (paged TMA) */
    const int tid = (int)ckt_thread_idx_x(), wg = tid / 128, lane = (int)ckt_lane_id(), cw = wg - 1;
    /* the tiles (ckt/fmha/schedule.h): block x takes slots x, x + gridDim.x,
     * ... (under a causal mask the pairs of slots 2x, 2x + 1, then
     * gridDim.x pairs on: p.paired): one on a grid of every tile, several on
     * a persistent grid of a block per multiprocessor, where the producer
     * loads the next tile's Q, K and V while the consumers finish this one's
     * (CKT__F9_PERSIST instances) */
    const int mtiles = CKT_CEIL_DIV(a->seqlen_q, BM);
    const int64_t ntiles = ckt_fmha_fwd_slots(a->batch, a->nhead_q, a->seqlen_q, BM, p.paired);
    const ckt_fmha_paging pg = CKT_FMHA_PAGING(*a);
    /* V's row in 16-bit units (fp8: two bytes each) */
    const int v_cols = FP8 ? a->hdim_v / 2 : a->hdim_v, DVU = FP8 ? DV / 2 : DV;
    const float scale = a->scale > 0.0f ? a->scale : 1.0f / sqrtf((float)a->hdim_q);

    /* K and V have their own barriers (FlashAttention-3's two pipelines):
     * full_k[s] / full_v[s]: one arrival with the bytes (TMA) or thread 0's
     * once the producer's cp.async copies landed; fp8 with TMA: full_v[s]
     * the 128 producer threads' once V^T is written; empty_k[s] /
     * empty_v[s]: the 4 NWG consumer warps (K_j once S_j is done, V_j once
     * P_j V_j is); vbar[i] (fp8, TMA): staging buffer i's V landed; qbar:
     * a tile's Q landed; qempty: the consumer warps are done with it (their
     * last S). The ring's phases run on over a block's tiles: key tile j of
     * a tile is the block's kvc + j-th. */
    if (tid == 0) {
        ckt_mbar_init(qbar, 1);
        for (int s = 0; s < S; s++) {
            ckt_mbar_init(&full_k[s], 1);
            ckt_mbar_init(&full_v[s], p.tma && FP8 ? 128 : 1);
            ckt_mbar_init(&empty_k[s], 4 * CKT__F9_NWG);
            ckt_mbar_init(&empty_v[s], 4 * CKT__F9_NWG);
        }
        ckt_mbar_init(&vbar[0], 1);
        ckt_mbar_init(&vbar[1], 1);
        ckt_mbar_init(qempty, 4 * CKT__F9_NWG);
    }
    ckt_block_sync();

    /* the producer's 128 threads' cp.async copies landed (each fences them
     * for wgmma's proxy): thread 0 completes bar's phase (count 1) */
#define CKT__F9_ANNOUNCE(bar)                                                                                     \
    do {                                                                                                          \
        ckt_cp_async_commit();                                                                                    \
        ckt_cp_async_wait_all();                                                                                  \
        ckt_fence_proxy_async();                                                                                  \
        ckt_named_barrier_sync(CKT__F9_PBAR, 128);                                                                \
        if (tid == 0)                                                                                             \
            ckt_mbar_arrive(bar);                                                                                 \
    } while (0)
    /* ping-pong (FlashAttention-3): the consumer warpgroups take turns, in
     * order, to issue their wgmmas, so that one's softmax runs while
     * another's products do: warpgroup cw waits on named barrier 1 + cw, on
     * which the one before it arrives once it has issued (256 threads
     * each); the last arrives first, so that the first goes first. The
     * turns run on over a block's tiles. */
#define CKT__F9_MY_TURN() ckt_named_barrier_sync(1 + cw, 256)
#define CKT__F9_YOUR_TURN() ckt_named_barrier_arrive(1 + (cw + 1) % CKT__F9_NWG, 256)
    /* a tile of the block (ckt/fmha/schedule.h) and its entry, keys and key
     * tiles, as the mma.sync kernel (fwd_body.h): each role's loop over the
     * block's tiles starts with it; tiles past their entry are skipped */
#define CKT__F9_TILE(idx)                                                                                              \
    const ckt_fmha_tile t = ckt_fmha_fwd_tile_of(idx, mtiles, a->nhead_q, BM, p.paired);                                     \
    const int b = t.b, h = t.h, m0 = t.m0;                                                                             \
    const ckt_fmha_seq sq = ckt_fmha_seq_resolve(a->group_mode, a->seqstart_q, a->seqstart_k, a->seqlen_q_ptr,         \
                                                 a->seqlen_k_ptr, a->seqlen_q, a->seqlen_k, b);                        \
    if (m0 >= sq.sq)                                                                                                   \
        continue;                                                                                                      \
    /* the keys: contiguous, through cache_batch_idx, or paged (ckt/fmha/page.h) */                                    \
    ckt_fmha_kv kv = ckt_fmha_kv_resolve(&pg, sq.sk, b);                                                               \
    if (!CKT__FMHA_KVC) { /* an instance without the KV cache: the plain tensors */                                    \
        kv.ids = 0;                                                                                                    \
        kv.cb = b;                                                                                                     \
        kv.sk = sq.sk;                                                                                                 \
    }                                                                                                                  \
    const ckt_fmha_mask_params mask = ckt_fmha_mask_make(a->mask, a->window_left, a->window_right, sq.sq, kv.sk);      \
    int n_lo, n_hi, full_lo, full_hi;                                                                                  \
    ckt_fmha_mask_key_range(&mask, m0, BM, &n_lo, &n_hi);                                                              \
    ckt_fmha_mask_full_keys(&mask, m0, BM, BN, &full_lo, &full_hi);                                                    \
    n_lo = n_lo / BN * BN;                                                                                             \
    const int nblocks = n_hi > n_lo ? CKT_CEIL_DIV(n_hi - n_lo, BN) : 0;

/* the block's next tile: on a grid of every tile there is none */
#define CKT__F9_NEXT(idx) (CKT__F9_PERSIST ? ckt_fmha_fwd_next_tile(idx, ckt_grid_dim_x(), p.paired) : ntiles)

    unsigned kvc = 0, nt = 0; /* the key tiles and the tiles this block took so far */
    if (wg == 0) { /* >>producer */
        ckt_setmaxnreg_dec(CKT__F9_REGS_P);
        if (!FP8 && p.tma && p.exact && tid != 0) /* thread 0 issues every copy */
            return;
        for (int64_t idx = ckt_fmha_fwd_first_tile(ckt_block_idx_x(), p.paired); idx < ntiles; idx = CKT__F9_NEXT(idx)) {
        CKT__F9_TILE(idx);
        const int hk = ckt_fmha_kv_head(h, a->nhead_q, a->nhead_k);
        /* Q, O: the entry's rows; K, V: the entry's (cache entry kv.cb's), or a
         * paged pool at head hk */
        const uint16_t *qp = (const uint16_t *)a->q + ckt_fmha_row_offset(a->group_mode, b, h, sq.q_start, a->q_stride_b, a->q_stride_h, a->q_stride_s);
        const uint16_t *kp = (const uint16_t *)a->k + (kv.ids ? hk * a->k_stride_h : ckt_fmha_row_offset(a->group_mode, kv.cb, hk, sq.k_start, a->k_stride_b, a->k_stride_h, a->k_stride_s));
        const uint16_t *vp = (const uint16_t *)a->v + (kv.ids ? hk * a->v_stride_h : ckt_fmha_row_offset(a->group_mode, kv.cb, hk, sq.k_start, a->v_stride_b, a->v_stride_h, a->v_stride_s));
        if (!FP8) {
            /* thread 0 issues the TMA copies; the 128 threads copy with
             * cp.async what TMA cannot (without maps, or in ragged calls a
             * tile past the entry's end or on a bad page id) and thread 0
             * announces it. K_j goes out before V_{j-1} (FlashAttention-3's
             * order: S_j needs K_j first). Q waits for the consumers to be
             * done with the block's previous tile's. */
            if (nt > 0 && tid == 0)
                ckt_mbar_wait(qempty, (nt - 1) & 1);
            if (p.tma && (p.exact || m0 + BM <= sq.sq)) {
                if (tid == 0) {
                    ckt_mbar_arrive_expect_tx(qbar, CKT__F9_Q_BYTES);
                    for (int c = 0; c < D / 64; c++)
                        ckt_tma_load_4d(sQ + c * BM * 128, &p.tq, 64 * c, a->group_mode ? sq.q_start + m0 : m0, h,
                                        a->group_mode ? 0 : b, qbar);
                }
            } else {
                if (nt > 0)
                    ckt_named_barrier_sync(CKT__F9_PBAR, 128); /* thread 0 saw Q free */
                ckt_fmha_sm90_load_async(sQ, qp, a->q_stride_s, m0, sq.sq, a->hdim_q, BM, D, 128, 128, tid);
                CKT__F9_ANNOUNCE(qbar);
            }
            const int kv_row0 = kv.ids || !a->group_mode ? 0 : sq.k_start, kv_entry = a->group_mode ? 0 : kv.cb;
            /* A paged pool by TMA (runs of p.box >= 32 rows, one page each):
             * warp 1 reads the page ids of the tile's runs into shared
             * memory ahead of the copies (two buffers of CKT__F9_IDS runs;
             * it arrives on named barrier CKT__F9_IDFULL + i once buffer i
             * is filled, where warp 0 syncs before reading it; the two meet
             * on CKT__F9_IDEMPTY + i once warp 0 is done with it, and on
             * CKT__F9_IDDONE at the end: barriers compute-sanitizer's
             * racecheck follows), warp 0 copies (thread 0 by TMA, the warp
             * by cp.async a tile TMA cannot take), warps 2 and 3 rest. A read
             * of the block table on the issuing thread's path, or by the
             * lanes of its warp, cost paged prefill 15-20% (H100, causal
             * d128 b4 s4096, pages of 128: 0.83x of the contiguous call;
             * with no read at all 0.98x). */
            /* (a tile's runs in one buffer: BN / p.box divides CKT__F9_IDS,
             * as at the default key tiles; the CKT_FMHA_SM90_BLOCK_N knob's
             * 192 with runs of 64 rows takes the general path below. The
             * buffers start over at each tile: the _kv kernel's grid has a
             * block a tile, CKT__F9_PERSIST 0.) */
            const int paged_tma =
                CKT__FMHA_KVC && !CKT__F9_PERSIST && kv.ids && p.tma && p.box >= 32 && CKT__F9_IDS % (BN / p.box) == 0;
            const int runs = paged_tma ? BN / p.box : 0, nruns = nblocks * runs;
            if (paged_tma && tid / 32 == 1) { /* the page ids, a buffer at a time */
                for (int c = 0; c * CKT__F9_IDS < nruns; c++) {
                    const int bi = c & 1;
                    if (c >= 2)
                        ckt_named_barrier_sync(CKT__F9_IDEMPTY + bi, 64);
                    for (int k = lane; k < CKT__F9_IDS; k += 32) {
                        const int q = c * CKT__F9_IDS + k, n = n_lo + q * p.box; /* run q's first key */
                        sid[bi * CKT__F9_IDS + k] = q < nruns && n < kv.sk ? kv.ids[n / pg.page_size] : -1;
                    }
                    ckt_named_barrier_arrive(CKT__F9_IDFULL + bi, 64);
                }
                /* stays until warp 0 has read the last buffer (racecheck
                 * lost an arrival's ordering once its warp had exited) */
                ckt_named_barrier_sync(CKT__F9_IDDONE, 64);
            } else if (paged_tma && tid < 32) { /* warp 0 copies; its lanes wait together */
                for (int i = 0; i <= nblocks; i++) {
                    for (int x = 0; x < 2; x++) { /* x 0: K_i, 1: V_{i-1} */
                        const int j = i - x, n0 = n_lo + j * BN, cols = x ? DV : D;
                        if (j < 0 || j >= nblocks)
                            continue;
                        const unsigned g = kvc + (unsigned)j, s = g % S;
                        uint64_t *fb = x ? &full_v[s] : &full_k[s], *eb = x ? &empty_v[s] : &empty_k[s];
                        unsigned char *dst = x ? CKT__F9_SV(s) : CKT__F9_SK(s);
                        const int q0 = j * runs, c = q0 / CKT__F9_IDS, bi = c & 1; /* a tile's runs share a buffer */
                        if (!x && q0 % CKT__F9_IDS == 0)
                            ckt_named_barrier_sync(CKT__F9_IDFULL + bi, 64);
                        /* the runs' pages and rows, worked out before the wait
                         * for the stage so that the copies follow it at once */
                        const int32_t *ids = sid + bi * CKT__F9_IDS + q0 % CKT__F9_IDS;
                        int whole = n0 + BN <= kv.sk, rid[BN / 32], rrow[BN / 32];
                        CKT_UNROLL
                        for (int r = 0; r < BN / 32; r++) {
                            rid[r] = r < runs ? ids[r] : 0;
                            rrow[r] = (n0 + r * p.box) % pg.page_size;
                            whole &= r >= runs || (rid[r] >= 0 && rid[r] < pg.num_pages);
                        }
                        if (g >= S)
                            ckt_mbar_wait(eb, (g / S - 1) & 1);
                        if (whole) {
                            if (lane == 0) {
                                ckt_mbar_arrive_expect_tx(fb, (unsigned)(BN * cols * 2));
                                CKT_UNROLL
                                for (int r = 0; r < BN / 32; r++)
                                    if (r < runs)
                                        for (int c2 = 0; c2 < cols / 64; c2++)
                                            ckt_tma_load_4d(dst + c2 * BN * 128 + r * p.box * 128,
                                                            x ? &p.tv : &p.tk, 64 * c2, rrow[r], hk, rid[r], fb);
                            }
                        } else { /* past the entry's end or on a bad page id: zeros there */
                            ckt_fmha_sm90_load_kv_async(dst, x ? vp : kp, &kv, pg.page_size, pg.num_pages,
                                                        x ? a->v_stride_b : a->k_stride_b,
                                                        x ? a->v_stride_s : a->k_stride_s, n0,
                                                        x ? a->hdim_v : a->hdim_q, BN, cols, 128, 32, lane);
                            ckt_cp_async_commit();
                            ckt_cp_async_wait_all();
                            ckt_fence_proxy_async();
                            ckt_warp_sync();
                            if (lane == 0)
                                ckt_mbar_arrive(fb);
                        }
                        ckt_warp_sync();
                        /* the buffer's last V, when warp 1 has a later buffer
                         * to fill into it: warp 0 meets it there (a sync, not
                         * an arrival: warp 1 waits there already, and
                         * racecheck then orders these reads before its
                         * writes) */
                        if (x && (j + 1) * runs % CKT__F9_IDS == 0 && (j + 1) * runs + CKT__F9_IDS < nruns)
                            ckt_named_barrier_sync(CKT__F9_IDEMPTY + bi, 64);
                    }
                }
                ckt_named_barrier_sync(CKT__F9_IDDONE, 64);
            }
            for (int i = 0; !paged_tma && i <= nblocks; i++) {
                for (int x = 0; x < 2; x++) { /* x 0: K_i, 1: V_{i-1} */
                    const int j = i - x, n0 = n_lo + j * BN, cols = x ? DV : D;
                    if (j < 0 || j >= nblocks)
                        continue;
                    const unsigned g = kvc + (unsigned)j, s = g % S; /* the block's g-th key tile */
                    uint64_t *fb = x ? &full_v[s] : &full_k[s], *eb = x ? &empty_v[s] : &empty_k[s];
                    const unsigned ephase = (g / S - 1) & 1;
                    unsigned char *dst = x ? CKT__F9_SV(s) : CKT__F9_SK(s);
                    /* Only thread 0 waits on the ring's mbarriers; the others
                     * meet it on a named barrier before a tile they copy. (A
                     * thread two phases of an mbarrier behind would take the
                     * parity it waits for as not yet come and hang: on the
                     * H100 1 paged run in 3 did while all 128 threads waited
                     * unsynchronized.) */
                    if (p.tma && p.box &&
                        (p.exact || ckt_fmha_sm90_tile_whole(&kv, pg.page_size, pg.num_pages, n0, BN, p.box))) {
                        /* TMA: a tile inside the entry, on valid pages */
                        if (tid != 0)
                            continue;
                        if (g >= S)
                            ckt_mbar_wait(eb, ephase);
                        ckt_mbar_arrive_expect_tx(fb, (unsigned)(BN * cols * 2));
                        /* rows r .. r + box: one page's (paged), else the tile */
                        for (int r = 0; r < BN; r += p.box) {
                            int row = kv_row0 + n0 + r, entry = kv_entry;
                            if (kv.ids) {
                                entry = kv.ids[(n0 + r) / pg.page_size];
                                row = (n0 + r) % pg.page_size;
                            }
                            for (int c = 0; c < cols / 64; c++)
                                ckt_tma_load_4d(dst + c * BN * 128 + r * 128, x ? &p.tv : &p.tk, 64 * c, row, hk,
                                                entry, fb);
                        }
                    } else { /* the 128 threads copy once thread 0 saw the stage free */
                        if (tid == 0 && g >= S)
                            ckt_mbar_wait(eb, ephase);
                        ckt_named_barrier_sync(CKT__F9_PBAR, 128);
                        ckt_fmha_sm90_load_kv_async(dst, x ? vp : kp, &kv, pg.page_size, pg.num_pages,
                                                    x ? a->v_stride_b : a->k_stride_b, x ? a->v_stride_s : a->k_stride_s,
                                                    n0, x ? a->hdim_v : a->hdim_q, BN, cols, 128, 128, tid);
                        CKT__F9_ANNOUNCE(fb);
                    }
                }
            }
        } else if (p.tma) { /* fp8 (a tile a block): thread 0 issues the copies, the 128 transpose V */
            if (tid == 0) {
                ckt_mbar_arrive_expect_tx(qbar, CKT__F9_Q_BYTES);
                for (int c = 0; c < D * 2 / RB; c++)
                    ckt_tma_load_4d(sQ + c * BM * RB, &p.tq, RB / 2 * c, m0, h, b, qbar);
                for (int j = 0; j < 2 && j < nblocks; j++) {
                    ckt_mbar_arrive_expect_tx(&vbar[j], CKT__F9_R_BYTES);
                    ckt_tma_load_4d(CKT__F9_SR(j), &p.tv, 0, n_lo + j * BN, hk, b, &vbar[j]);
                }
            }
            for (int j = 0; j < nblocks; j++) {
                const int s = j % S, n0 = n_lo + j * BN;
                if (tid == 0) {
                    if (j >= S)
                        ckt_mbar_wait(&empty_k[s], (unsigned)((j / S - 1) & 1));
                    ckt_mbar_arrive_expect_tx(&full_k[s], CKT__F9_K_BYTES);
                    for (int c = 0; c < D * 2 / RB; c++)
                        ckt_tma_load_4d(CKT__F9_SK(s) + c * BN * RB, &p.tk, RB / 2 * c, n0, hk, b, &full_k[s]);
                }
                if (j >= S)
                    ckt_mbar_wait(&empty_v[s], (unsigned)((j / S - 1) & 1));
                ckt_mbar_wait(&vbar[j % 2], (unsigned)((j / 2) & 1));
                ckt_fmha_sm90_transpose_v_e4m3(CKT__F9_SV(s), CKT__F9_SR(j % 2), DV, 128, tid);
                ckt_fence_proxy_async(); /* V^T for wgmma; the staging reads before TMA's next writes */
                ckt_mbar_arrive(&full_v[s]);
                ckt_named_barrier_sync(CKT__F9_PBAR, 128); /* staging buffer j % 2 is read */
                if (tid == 0 && j + 2 < nblocks) {
                    ckt_mbar_arrive_expect_tx(&vbar[j % 2], CKT__F9_R_BYTES);
                    ckt_tma_load_4d(CKT__F9_SR(j % 2), &p.tv, 0, n0 + 2 * BN, hk, b, &vbar[j % 2]);
                }
            }
        } else { /* fp8, cp.async (a tile a block): zeros past the entry's rows and the call's head dims */
        ckt_fmha_sm90_load_async(sQ, qp, a->q_stride_s, m0, sq.sq, a->hdim_q, BM, D, RB, 128, tid);
        CKT__F9_ANNOUNCE(qbar);
        for (int j = 0; j < nblocks; j++) {
            const int s = j % S, n0 = n_lo + j * BN;
            if (j >= S)
                ckt_mbar_wait(&empty_k[s], (unsigned)((j / S - 1) & 1));
            ckt_fmha_sm90_load_async(CKT__F9_SK(s), kp, a->k_stride_s, n0, kv.sk, a->hdim_q, BN, D, RB, 128, tid);
            CKT__F9_ANNOUNCE(&full_k[s]);
            if (j >= S)
                ckt_mbar_wait(&empty_v[s], (unsigned)((j / S - 1) & 1));
            ckt_fmha_sm90_load_async(CKT__F9_SR(0), vp, a->v_stride_s, n0, kv.sk, v_cols, BN, DVU, DV, 128, tid);
            ckt_cp_async_commit();
            ckt_cp_async_wait_all();
            ckt_named_barrier_sync(CKT__F9_PBAR, 128); /* V^T from the staging buffer, which every thread filled part of */
            ckt_fmha_sm90_transpose_v_e4m3(CKT__F9_SV(s), CKT__F9_SR(0), DV, 128, tid);
            ckt_fence_proxy_async();
            ckt_named_barrier_sync(CKT__F9_PBAR, 128); /* V^T written, the staging buffer read */
            if (tid == 0)
                ckt_mbar_arrive(&full_v[s]);
        }
        }
        kvc += (unsigned)nblocks;
        nt++;
        }
        return;
    }
    /* >>consumers: warpgroup cw owns tile rows 64 cw .., its warp w rows 16 w .. */
    ckt_setmaxnreg_inc(CKT__F9_REGS_C);
    if (cw == CKT__F9_NWG - 1)
        CKT__F9_YOUR_TURN();
    for (int64_t idx = ckt_fmha_fwd_first_tile(ckt_block_idx_x(), p.paired); idx < ntiles; idx = CKT__F9_NEXT(idx)) {
    CKT__F9_TILE(idx);
    enum { ROWS = CKT_FMHA_ROW_SLOTS(16) };
    const int wrow0 = m0 + 64 * cw + 16 * ((int)ckt_warp_id() % 4);
    float o_acc[DV / 2], row_m[ROWS], row_l[ROWS];
    CKT_UNROLL
    for (int i = 0; i < DV / 2; i++)
        o_acc[i] = 0.0f;
    ckt_fmha_softmax_init(row_m, row_l, 16);
    /* S = Q K_j^T into s_acc (issued, not waited for): k-steps (k16, or k32
     * for fp8) 32 bytes apart in a row of RB bytes, the rows' column blocks
     * BM / BN rows apart */
#define CKT__F9_ISSUE_S(s_acc, st)                                                                                \
    do {                                                                                                          \
        const uint64_t dk0_ = ckt_wgmma_desc_advance(dk0, (st) * CKT__F9_STAGE_BYTES);                            \
        ckt_wgmma_fence();                                                                                        \
        CKT_UNROLL                                                                                                \
        for (int ks = 0; ks < D / 16; ks++)                                                                       \
            CKT__F9_S_MMA(s_acc, ckt_wgmma_desc_advance(dq0, (ks / (RB / 32)) * BM * RB + (ks % (RB / 32)) * 32), \
                          ckt_wgmma_desc_advance(dk0_, (ks / (RB / 32)) * BN * RB + (ks % (RB / 32)) * 32),       \
                          ks > 0);                                                                                \
        ckt_wgmma_commit();                                                                                       \
    } while (0)
#if CKT__FMHA_FP8
    /* O += P V_j (issued): P from the registers (e4m3, the permuted keys),
     * V^T [DV][BN = 128 keys] K-major, k32 steps 32 bytes apart */
#define CKT__F9_ISSUE_PV(pf, st)                                                                                  \
    do {                                                                                                          \
        const uint64_t dv0_ = ckt_wgmma_desc_advance(dv0, (st) * CKT__F9_STAGE_BYTES);                            \
        ckt_wgmma_fence();                                                                                        \
        CKT_UNROLL                                                                                                \
        for (int kk = 0; kk < BN / 32; kk++)                                                                      \
            CKT__F9_O_MMA(o_acc, &pf[4 * kk], ckt_wgmma_desc_advance(dv0_, kk * 32), 1);                          \
        ckt_wgmma_commit();                                                                                       \
    } while (0)
#else
    /* O += P V_j (issued): P from the registers (mma.sync's A fragments), V
     * [keys][DV] MN-major, 64-column blocks BN rows apart */
#define CKT__F9_ISSUE_PV(pf, st)                                                                                  \
    do {                                                                                                          \
        const uint64_t dv0_ = ckt_wgmma_desc_advance(dv0, (st) * CKT__F9_STAGE_BYTES);                            \
        ckt_wgmma_fence();                                                                                        \
        CKT_UNROLL                                                                                                \
        for (int kk = 0; kk < BN / 16; kk++)                                                                      \
            CKT__F9_O_MMA(o_acc, &pf[4 * kk], ckt_wgmma_desc_advance(dv0_, kk * 16 * 128), 1);                    \
        ckt_wgmma_commit();                                                                                       \
    } while (0)
#endif
    /* the descriptors of Q (this warpgroup's rows) and of stage 0's K and
     * V at their first element; the stage and the k-steps advance them */
    const ckt_swizzle qk_sw = (ckt_swizzle)RB;
    const uint64_t dq0 = ckt_wgmma_desc(sQ + cw * 64 * RB, qk_sw, 16, 8 * RB);
    const uint64_t dk0 = ckt_wgmma_desc(CKT__F9_SK(0), qk_sw, 16, 8 * RB);
#if CKT__FMHA_FP8
    const uint64_t dv0 = ckt_wgmma_desc(CKT__F9_SV(0), CKT_SWIZZLE_128B, 16, 1024);
#else
    const uint64_t dv0 = ckt_wgmma_desc(CKT__F9_SV(0), CKT_SWIZZLE_128B, BN * 128, 1024);
#endif

    /* soft-cap, mask where tile n0 is cut, online softmax (ckt/fmha/softmax.h):
     * s_acc becomes P, corr and grew say how O must be rescaled */
#define CKT__F9_SOFTMAX(n0)                                                                                       \
    const float to_log2 = ckt_fmha_softcap(s_acc, BN / 2, scale, a->softcap);                                     \
    if (!((n0) >= full_lo && (n0) <= full_hi))                                                                    \
        ckt_fmha_mask_scores(s_acc, &mask, wrow0, (n0), 16, BN, lane, 1);                                         \
    float corr[ROWS];                                                                                             \
    const int grew = ckt_fmha_softmax_update(corr, s_acc, row_m, row_l, 16, BN, to_log2)

    /* P as the A operand of P V: 16-bit, or e4m3 times scale_p (fp8) */
#if CKT__FMHA_FP8
#define CKT__F9_TO_P(pf, s_acc) ckt_warp_acc_to_a_e4m3(pf, s_acc, 16, BN, a->scale_p)
#else
#define CKT__F9_TO_P(pf, s_acc) ckt_warp_acc_to_a(pf, s_acc, 16, BN, CKT__FMHA_BF16)
#endif
    /* FlashAttention-3's intra-warpgroup overlap: the softmax of tile j runs
     * while the tensor cores do P_{j-1} V_{j-1}; O is rescaled once that is
     * done. pf holds P of the tile whose P V is next. The first tile is
     * peeled so that every wait in the loop is unconditional (a wait under
     * a branch makes ptxas serialize the wgmmas). */
    uint32_t pf[FP8 ? BN / 8 : BN / 4];
    float s_acc[BN / 2];
    unsigned s_prev = kvc % S; /* the stage of the tile whose P V is next */
    ckt_mbar_wait(qbar, nt & 1);
    if (nblocks > 0) {
        ckt_mbar_wait(&full_k[s_prev], (kvc / S) & 1);
        CKT__F9_MY_TURN();
        CKT__F9_ISSUE_S(s_acc, s_prev);
        CKT__F9_YOUR_TURN();
        ckt_wgmma_wait0();
        ckt_wgmma_fence_operand(s_acc, BN / 2);
        if (lane == 0)
            ckt_mbar_arrive(&empty_k[s_prev]);
        CKT__F9_SOFTMAX(n_lo);
        (void)corr; /* O is still 0 */
        (void)grew;
        CKT__F9_TO_P(pf, s_acc);
    }
    for (int j = 1; j < nblocks; j++) {
        const unsigned g = kvc + (unsigned)j, s = g % S; /* the block's g-th key tile */
        ckt_mbar_wait(&full_k[s], (g / S) & 1);
        CKT__F9_MY_TURN();
        CKT__F9_ISSUE_S(s_acc, s);
        ckt_mbar_wait(&full_v[s_prev], ((g - 1) / S) & 1);
        CKT__F9_ISSUE_PV(pf, s_prev);
        CKT__F9_YOUR_TURN();
        ckt_wgmma_wait1(); /* S_j is done (K_j is free), P_{j-1} V_{j-1} may still run */
        ckt_wgmma_fence_operand(s_acc, BN / 2);
        if (lane == 0)
            ckt_mbar_arrive(&empty_k[s]);
        CKT__F9_SOFTMAX(n_lo + j * BN);
        /* P_{j-1} V_{j-1} done: V_{j-1} is free, O takes tile j's max.
         * (ptxas hoists this wait above the softmax's math, SASS shows; a
         * variant that kept it below, the wait in both arms of a branch on
         * the vote, ran 3-8% slower on H100, so the simpler form stays) */
        ckt_wgmma_wait0();
        ckt_wgmma_fence_operand(o_acc, DV / 2);
        if (lane == 0)
            ckt_mbar_arrive(&empty_v[s_prev]);
        if (ckt_warp_any(grew))
            ckt_fmha_rescale(o_acc, corr, 16, DV);
        CKT__F9_TO_P(pf, s_acc);
        s_prev = s;
    }
    /* every S is done: Q may take the block's next tile's */
    if (lane == 0)
        ckt_mbar_arrive(qempty);
    if (nblocks > 0) { /* the last tile's P V */
        ckt_mbar_wait(&full_v[s_prev], ((kvc + (unsigned)nblocks - 1) / S) & 1);
        CKT__F9_MY_TURN();
        CKT__F9_ISSUE_PV(pf, s_prev);
        CKT__F9_YOUR_TURN();
        ckt_wgmma_wait0();
        ckt_wgmma_fence_operand(o_acc, DV / 2);
        if (lane == 0)
            ckt_mbar_arrive(&empty_v[s_prev]);
    }
#undef CKT__F9_ISSUE_S
#undef CKT__F9_SOFTMAX
#undef CKT__F9_ISSUE_PV
#undef CKT__F9_TO_P

    /* >>epilogue (ckt/fmha/epilogue.h): O = acc / l, sinks, LSE */
    float inv[ROWS];
    ckt_fmha_softmax_finish(inv, row_l, 16);
    if (a->sink) {
        float sink2[ROWS];
        ckt_fmha_sink_rows(sink2, a->sink, h, wrow0, 1, 16, lane);
        ckt_fmha_softmax_sink(inv, row_m, row_l, sink2, 16);
    }
#if CKT__FMHA_FP8 /* O = (P8 V) descale_v / scale_p / l (ckt/fmha/fp8.h) */
    CKT_UNROLL
    for (int r = 0; r < ROWS; r++)
        inv[r] *= a->descale_v / a->scale_p;
#endif
    uint16_t *op = (uint16_t *)a->o + ckt_fmha_row_offset(a->group_mode, b, h, sq.q_start, a->o_stride_b, a->o_stride_h, a->o_stride_s);
    ckt_fmha_warp_store_o(op, a->o_stride_s, sq.sq, a->hdim_v, o_acc, inv, wrow0, 16, DV, CKT__FMHA_BF16, lane);
    if (a->lse)
        ckt_fmha_warp_store_lse(a->lse + ckt_fmha_row_offset(a->group_mode, b, h, sq.q_start, a->lse_stride_b, a->lse_stride_h, 1),
                                row_m, row_l, wrow0, sq.sq, 16, lane);
    kvc += (unsigned)nblocks;
    nt++;
    } /* the block's tiles */
#undef CKT__F9_TILE
#undef CKT__F9_NEXT
#undef CKT__F9_ANNOUNCE
#undef CKT__F9_MY_TURN
#undef CKT__F9_YOUR_TURN
#undef CKT__F9_SK
#undef CKT__F9_SV
#undef CKT__F9_SR
#else
    (void)p;
#endif
}

/* Runs a on the Hopper kernel when the device, the build and the call allow
 * (*ran = 1, the launch's status), else leaves it to the caller (*ran = 0).
 * a: validated, its split count resolved. */
static inline ckt_status CKT__FMHA_FN(CKT__F9_RUN)(const ckt_fmha_fwd_args *a, ckt_stream stream, int *ran)
{
    *ran = 0;
    if (a->bias || a->alibi_slopes || a->p_drop > 0.0f || a->randval || a->num_splits > 1 ||
        (CKT__FMHA_FP8 && ckt_fmha_fwd_uses_kv_cache(a)))
        return CKT_SUCCESS;
    /* the device's image of the kernel (sm_90a's is 90), per device: a host
     * may mix sm_80 and sm_90 GPUs */
    static int versions[64]; /* ckt_fmha_sm90_binary_version's cache */
    const int binary_version =
        ckt_fmha_sm90_binary_version((const void *)CKT_KERNEL_REF(CKT__FMHA_FN(CKT__F9_KERNEL)), versions);
    /* preferred for fp8 and from head dim 128; at d64 from 2048 keys (at
     * 1024 causal the mma.sync kernel is still faster: docs/fmha.md#hopper) */
    if (!ckt_fmha_sm90_wanted(binary_version, CKT__FMHA_FP8 || CKT__FMHA_D >= 128 || a->seqlen_k >= 2048))
        return CKT_SUCCESS;
    ckt_fmha_sm90_params p;
    memset(&p, 0, sizeof p);
    p.a = *a;
    p.tma = !ckt_fmha_sm90_no_tma() &&
            (CKT__FMHA_FP8 ? ckt_fmha_sm90_maps(&p, a, CKT__F9_BM, CKT__F9_BN, CKT__F9_RB / 2, a->hdim_v / 2, CKT__FMHA_DV / 2, 0)
                           : ckt_fmha_sm90_maps(&p, a, CKT__F9_BM, CKT__F9_BN, 64, a->hdim_v, 64, 1));
    /* 16-bit calls whose strides TMA cannot take run faster on the
     * mma.sync kernel than with the cp.async producer (H100, causal d128
     * group mode: 0.994 against 0.907 ms at b4 s4096 before ragged calls
     * took TMA; docs/fmha.md#hopper), and so do paged pools whose runs are
     * too short for TMA (p.box 0: docs/fmha_inference.md); fp8's cp.async
     * path still beats mma.sync fp8. CKT_FMHA_SM90=1 takes them anyway. */
    if (!CKT__FMHA_FP8 && (!p.tma || p.box == 0) && !ckt_fmha_sm90_forced())
        return CKT_SUCCESS;
    /* a block a tile, or (16-bit) a persistent grid of a block per
     * multiprocessor (ckt_fmha_sm90_persistent) */
    int64_t blocks = ckt_fmha_fwd_slots(a->batch, a->nhead_q, a->seqlen_q, CKT__F9_BM, 0);
    /* causal calls up to 64 query tiles (H200, d128 and d256 against a
     * block a tile: s1024-8192 +4-16%, s16384 -2-4%: a pair is a coarse
     * unit for the last round of pairs) */
    const int causal = ckt_fmha_mask_is_causal(a->mask);
    const int short_causal = causal && CKT_CEIL_DIV(a->seqlen_q, CKT__F9_BM) <= 64;
    if (CKT__F9_PERSIST && ckt_fmha_sm90_persistent(p.tma && p.exact && (a->mask == CKT_MASK_NONE || short_causal))) {
        int mps = 0;
        const ckt_status st = ckt_rt_multiprocessors(&mps);
        if (st != CKT_SUCCESS)
            return st;
        /* causal: pairs of a long and a short tile (ckt/fmha/schedule.h) */
        p.paired = ckt_fmha_sm90_paired(causal);
        if (p.paired)
            blocks = ckt_fmha_fwd_slots(a->batch, a->nhead_q, a->seqlen_q, CKT__F9_BM, 1) / 2;
        if (mps > 0 && mps < blocks)
            blocks = mps;
    }
    if (blocks > 0x7fffffff) /* the grid's x limit: blocks take several tiles */
        blocks = 0x7fffffff;
    *ran = 1;
    return ckt_rt_launch(CKT_KERNEL_REF(CKT__FMHA_FN(CKT__F9_KERNEL)), ckt_dim3_make((unsigned)blocks, 1, 1),
                         ckt_dim3_make(CKT__F9_THREADS, 1, 1), CKT__F9_SMEM_BYTES, stream, &p);
}

#undef CKT__F9_BM
#undef CKT__F9_KERNEL
#undef CKT__F9_RUN
#undef CKT__F9_NARROW
#undef CKT__F9_NWG
#undef CKT__F9_REGS_P
#undef CKT__F9_REGS_C
#undef CKT__F9_PERSIST
#undef CKT__F9_POOL
#undef CKT_FMHA_SM90_PRODUCER_REGS
#undef CKT__F9_PBAR
#undef CKT__F9_IDFULL
#undef CKT__F9_IDEMPTY
#undef CKT__F9_IDDONE
#undef CKT_FMHA_SM90_CONSUMERS
#undef CKT__F9_BN
#undef CKT__F9_STAGES
#undef CKT__F9_THREADS
#undef CKT__F9_Q_BYTES
#undef CKT__F9_K_BYTES
#undef CKT__F9_V_BYTES
#undef CKT__F9_R_BYTES
#undef CKT__F9_RB
#undef CKT__F9_BARS
#undef CKT__F9_IDS
#undef CKT__F9_ID_BYTES
#undef CKT__F9_STAGE_BYTES
#undef CKT_FMHA_SM90_STAGES
#undef CKT__F9_SMEM_BYTES
#undef CKT__F9_CAT3
#undef CKT__F9_WG
#undef CKT_FMHA_SM90_BLOCK_N
#undef CKT__F9_S_MMA
#undef CKT__F9_O_MMA
