/* ckt/fmha/bwd_sm90_body.h — the backward's dq_dk_dv on Hopper's warpgroup
 * MMA (wgmma), included by ckt/fmha/bwd_body.h inside an instance (its
 * parameters and CKT__FB_* macros are in scope). Defines
 *   NAME_dq_dk_dv_wg_kernel      the kernel (a body on sm_90a and the emulator's nv profile)
 *   NAME_wg_smem_bytes           its dynamic shared memory (an enum constant)
 *   NAME_wg_wanted(a)            host: whether call a runs it
 * for the instances whose tile it takes (CKT__FB_WG): 16-bit, head dims
 * 128 / 128 (BM 64) or 64 / 64 (BM 128), BN 128 keys, 8 warps. It does
 * what the mma.sync body does for calls without bias, ALiBi or dropout
 * (every mask, soft-cap, GQA, batch and group mode, the deterministic
 * slots), with the same plan, workspace and unit order; the host takes it on
 * an sm_90 device (ckt_fmha_sm90_wanted; CKT_FMHA_FORCE_SM80=1 keeps the
 * mma.sync kernel, CKT_FMHA_SM90=1 takes it on the emulator).
 *
 * Two warpgroups; warpgroup g owns keys 64 g .. 64 g + 63 of the unit's tile,
 * its warp w the 16 keys 64 g + 16 w ..; per query tile of BM rows, in
 * halves of 64 queries for S^T to dS^T (one at d128, two at d64):
 *   S^T  = K_g Q^T     wgmma m64n64, A = K (shared, K-major), B = Q (K-major)
 *   dP^T = V_g dO^T    the same with V and dO
 *   P^T, dS^T          in the registers, as the mma.sync body computes them
 *                      (a warp's 16 x 64 accumulators are mma.sync's layout)
 *   dV_g += P^T dO     A = P^T from the registers, B = dO (MN-major)
 *   dK_g += dS^T Q     A = dS^T from the registers, B = Q (MN-major)
 *   dQ += dS K         dS stored transposed in shared memory ([query][key],
 *                      K-major); warpgroup g computes a 64 x 64 block of dQ
 *                      (rows 64 g at BM 128, columns 64 g at d128) over all
 *                      BN keys, B = K (MN-major), then fp32 reductions into
 *                      the workspace exactly as the mma.sync body's.
 * Every tile lives in shared memory as panels of 64 columns x rows of 128
 * bytes, 128-byte swizzled (CKT_SMEM_SWIZZLE with 64 columns is wgmma's
 * pattern), copied with cp.async (zeros outside the tensor) and made visible
 * to wgmma with a proxy fence. Q / dO / LSE / D in two stages: the next
 * step's copies run under this step's products. */

#define CKT__FBW_KB (CKT__FB_BN * CKT__FB_D * 2)
#define CKT__FBW_VB (CKT__FB_BN * CKT__FB_DV * 2)
#define CKT__FBW_SB (CKT__FB_BM * CKT__FB_BN * 2)
#define CKT__FBW_QB (CKT__FB_BM * CKT__FB_D * 2)
#define CKT__FBW_OB (CKT__FB_BM * CKT__FB_DV * 2)
#define CKT__FBW_STAGE (CKT__FBW_QB + CKT__FBW_OB)
#define CKT__FBW_ROWS0 (CKT__FBW_KB + CKT__FBW_VB + CKT__FBW_SB + 2 * CKT__FBW_STAGE)
/* + LSE and D of two stages, + 1 KiB to align the base to 1024 bytes */
enum { CKT__FB_FN(_wg_smem_bytes) = CKT__FBW_ROWS0 + 2 * 2 * CKT__FB_BM * 4 + 1024 };

/* Where a step's dQ is reduced into the workspace (a tuning knob): 0 at
 * the step's end after dV / dK, the barrier and dQ; 1 during the next
 * step's first products; 2 dQ issued first (after the barrier), reduced
 * under dV / dK. H200, bf16, s 2048-16384, two rounds on one machine
 * (bench/results/bwd_wg_defer_h200): d64 1 against 0 1.09-1.12x (deterministic
 * 1.04-1.12x), 1 against 2 1.01-1.05x; d128 2 against 0 1.09-1.11x
 * (deterministic 1.04-1.06x), 1 against 0 0.97-0.98x (q_acc live across the
 * step: ptxas's spills 124 -> 376 bytes). */
#if defined(CKT_FMHA_BWD_WG_DEFER) /* like every knob, consumed by the instance that follows it */
#define CKT__FBW_DEFER CKT_FMHA_BWD_WG_DEFER
#else
#define CKT__FBW_DEFER (CKT__FB_D <= 64 ? 1 : 2)
#endif
CKT_STATIC_ASSERT(CKT__FBW_DEFER >= 0 && CKT__FBW_DEFER <= 2, "CKT_FMHA_BWD_WG_DEFER must be 0, 1 or 2");

#if defined(CKT_HAS_WGMMA)
/* the products: S^T / dP^T (n = 64), dK / dV (n = D), dQ (n = 64) */
#define CKT__FBW_MMA_S(d, da, db, acc)                                                                  \
    (CKT__FB_BF16 ? ckt_wgmma_m64n64k16_bf16_ss(d, da, db, acc) : ckt_wgmma_m64n64k16_f16_ss(d, da, db, acc))
#if CKT__FB_D == 128
#define CKT__FBW_MMA_KV(d, af, db, acc)                                                                 \
    (CKT__FB_BF16 ? ckt_wgmma_m64n128k16_bf16_rs_bmn(d, af, db, acc)                                    \
                  : ckt_wgmma_m64n128k16_f16_rs_bmn(d, af, db, acc))
#else
#define CKT__FBW_MMA_KV(d, af, db, acc)                                                                 \
    (CKT__FB_BF16 ? ckt_wgmma_m64n64k16_bf16_rs_bmn(d, af, db, acc) : ckt_wgmma_m64n64k16_f16_rs_bmn(d, af, db, acc))
#endif
#define CKT__FBW_MMA_Q(d, da, db, acc)                                                                  \
    (CKT__FB_BF16 ? ckt_wgmma_m64n64k16_bf16_ss_bmn(d, da, db, acc) : ckt_wgmma_m64n64k16_f16_ss_bmn(d, da, db, acc))

#ifndef CKT__FMHA_BWD_WG_COMMON_DEFINED
#define CKT__FMHA_BWD_WG_COMMON_DEFINED
/* nrows x ncols 16-bit elements at p (row stride ld) into an R x C tile of
 * C / 64 panels [R][64] (CKT_SMEM_SWIZZLE: wgmma's 128-byte swizzle from a
 * 1024-byte aligned base), zeros outside; asynchronous, not committed. */
CKT_INLINE CKT_DEVICE void ckt__fmha_bwd_wg_load(uint16_t *s, const uint16_t *p, int64_t ld, int64_t nrows,
                                                 int64_t ncols, int R, int C, int T, int tid)
{
    for (int pn = 0; pn < C / 64; pn++) {
        const int64_t left = ncols - 64 * pn;
        ckt_smem_tile_load_rows_async(ckt_smem_tile_make(s + pn * R * 64, CKT_SMEM_SWIZZLE, 64), p + 64 * pn, ld, nrows,
                                      left < 0 ? 0 : left, R, 64, T, tid);
    }
}

/* Element (r, c) of such a tile of R rows. */
CKT_INLINE CKT_DEVICE int ckt__fmha_bwd_wg_offset(int R, int r, int c)
{
    return (c / 64) * R * 64 + ckt_smem_offset(CKT_SMEM_SWIZZLE, 64, 2, r, c % 64);
}
#endif
#endif /* CKT_HAS_WGMMA */

CKT_KERNEL_BOUNDS(CKT__FB_FN(_dq_dk_dv_wg_kernel), ckt_fmha_bwd_args, a, CKT__FB_T)
{
#if defined(CKT_HAS_WGMMA)
    enum {
        D = CKT__FB_D, DV = CKT__FB_DV, BN = CKT__FB_BN, BM = CKT__FB_BM, T = CKT__FB_T,
        KB = CKT__FBW_KB, VB = CKT__FBW_VB, SB = CKT__FBW_SB, QB = CKT__FBW_QB, STAGE = CKT__FBW_STAGE,
        QR = BM / 64 /* dQ: warpgroups along its rows (1: along its columns) */
    };
    CKT_STATIC_ASSERT(BN == 128 && T == 256 && QR * (D / 64) == 2, "the wgmma backward's tile: 2 warpgroups, BN 128");
    CKT_DYNAMIC_SHARED(unsigned char, smem_raw);
    char *sm = (char *)ckt_smem_align_1024(smem_raw);
    uint16_t *const sK = (uint16_t *)sm, *const sV = (uint16_t *)(sm + KB), *const sdS = (uint16_t *)(sm + KB + VB);
#define CKT__FBW_SQ(st) ((uint16_t *)(sm + KB + VB + SB + (st)*STAGE))
#define CKT__FBW_SDO(st) ((uint16_t *)(sm + KB + VB + SB + (st)*STAGE + QB))
#define CKT__FBW_SROWS(st) ((float *)(sm + CKT__FBW_ROWS0) + (st)*2 * BM)
    const ckt_fmha_bwd_meta *meta = ckt__fmha_bwd_meta(&a);
    if (!meta)
        return;
    const int tid = (int)ckt_thread_idx_x(), warp = (int)ckt_warp_id(), lane = (int)ckt_lane_id();
    const int wg = warp / 4, wrow = 64 * wg + 16 * (warp % 4); /* the warp's first key of the tile */
    const int bf16 = CKT__FB_BF16;
    const float scale = a.scale > 0.0f ? a.scale : 1.0f / sqrtf((float)a.hdim_q);
    const int group = a.nhead_q / a.nhead_k;
    const int64_t dq_ld = ckt_fmha_bwd_dq_ld(a.hdim_q);
    const int p = (int)ckt_block_idx_x();
    int64_t u_begin, u_end;
    ckt__fmha_bwd_block_units(meta, &a, p, BN, 1, &u_begin, &u_end);
    float *dq_acc = (float *)((char *)a.workspace + ckt_fmha_bwd_meta_bytes(meta->batch, meta->grid, meta->persistent));
    const float *dsum = (const float *)((const char *)a.workspace + meta->d_offset);

    /* descriptors at stage 0 and k-step 0: S^T's A (this warpgroup's keys of
     * K, V: K-major) and B (Q, dO: K-major); dK's / dV's B (Q, dO: MN-major,
     * 64-column panels BM rows apart); dQ's A (dS rows qr..) and B (K's
     * columns qc..: MN-major) */
    const int qr = (wg % QR) * 64, qc = (wg / QR) * 64;
    const uint64_t kmaj = ckt_wgmma_desc(sm, CKT_SWIZZLE_128B, 16, 1024);          /* K-major */
    const uint64_t mn_bm = ckt_wgmma_desc(sm, CKT_SWIZZLE_128B, BM * 128, 1024);   /* MN-major, panels of BM rows */
    const uint64_t mn_bn = ckt_wgmma_desc(sm, CKT_SWIZZLE_128B, BN * 128, 1024);   /* MN-major, panels of BN rows */
    const uint64_t k_a = ckt_wgmma_desc_advance(kmaj, 64 * wg * 128);
    const uint64_t v_a = ckt_wgmma_desc_advance(kmaj, KB + 64 * wg * 128);
    const uint64_t q_b = ckt_wgmma_desc_advance(kmaj, KB + VB + SB);
    const uint64_t do_b = ckt_wgmma_desc_advance(kmaj, KB + VB + SB + QB);
    const uint64_t q_bmn = ckt_wgmma_desc_advance(mn_bm, KB + VB + SB);
    const uint64_t do_bmn = ckt_wgmma_desc_advance(mn_bm, KB + VB + SB + QB);
    const uint64_t ds_a = ckt_wgmma_desc_advance(kmaj, KB + VB + qr * 128);
    const uint64_t k_bmn = ckt_wgmma_desc_advance(mn_bn, (qc / 64) * BN * 128);

    for (int64_t u = u_begin; u < u_end; u++) {
        const ckt__fmha_bwd_unit un = ckt__fmha_bwd_unit_of(meta, &a, u, p, BN);
        const ckt_fmha_seq sq = un.sq;
        const int b = un.b, hk = un.hk, n0 = un.n0;
        const ckt_fmha_mask_params mk = ckt_fmha_mask_make(a.mask, a.window_left, a.window_right, sq.sq, sq.sk);
        const int64_t dq_base = ckt_fmha_bwd_meta_dq_start(meta)[b], dq_mat = ckt_fmha_bwd_dq_rows(sq.sq) * dq_ld;
        const int64_t q_row0 = ckt_fmha_bwd_meta_q_row_start(meta)[b];
        int q_lo, q_hi;
        ckt_fmha_mask_query_range(&mk, n0, BN, &q_lo, &q_hi);
        q_lo = q_lo / BM * BM;
        const int nqt = q_hi > q_lo ? CKT_CEIL_DIV(q_hi - q_lo, BM) : 0;
        const int nsteps = nqt * group;

        const uint16_t *kp = (const uint16_t *)a.k + ckt_fmha_row_offset(a.group_mode, b, hk, sq.k_start + n0,
                                                                        a.k_stride_b, a.k_stride_h, a.k_stride_s);
        const uint16_t *vp = (const uint16_t *)a.v + ckt_fmha_row_offset(a.group_mode, b, hk, sq.k_start + n0,
                                                                        a.v_stride_b, a.v_stride_h, a.v_stride_s);
        ckt_block_sync(); /* the previous unit is done with every shared tile */
        ckt__fmha_bwd_wg_load(sK, kp, a.k_stride_s, sq.sk - n0, a.hdim_q, BN, D, T, tid);
        ckt__fmha_bwd_wg_load(sV, vp, a.v_stride_s, sq.sk - n0, a.hdim_v, BN, DV, T, tid);

        /* the unit's bases (query head h0 = hk * group, row 0 of the entry) */
        const int h0 = hk * group;
        const uint16_t *q_unit = (const uint16_t *)a.q + ckt_fmha_row_offset(a.group_mode, b, h0, sq.q_start,
                                                                            a.q_stride_b, a.q_stride_h, a.q_stride_s);
        const uint16_t *do_unit = (const uint16_t *)a.dout + ckt_fmha_row_offset(a.group_mode, b, h0, sq.q_start,
                                                                                a.do_stride_b, a.do_stride_h,
                                                                                a.do_stride_s);
        const float *lse_unit = a.lse + ckt_fmha_row_offset(a.group_mode, b, h0, sq.q_start, a.lse_stride_b,
                                                             a.lse_stride_h, 1);
        const float *d_unit = dsum + (int64_t)h0 * meta->total_q_rows + q_row0;
        /* a step's (query head h_, rows q0_ ..) Q and dO into stage stg_; its
         * LSE (log2 domain, +inf for a row that saw nothing: P = 0) and D of
         * row r_ into l_, d_ */
#define CKT__FBW_ISSUE(h_, q0_, stg_)                                                                              \
    do {                                                                                                           \
        const int64_t dh_ = (h_)-h0;                                                                               \
        ckt__fmha_bwd_wg_load(CKT__FBW_SQ(stg_), q_unit + dh_ * a.q_stride_h + (int64_t)(q0_)*a.q_stride_s,         \
                              a.q_stride_s, sq.sq - (q0_), a.hdim_q, BM, D, T, tid);                               \
        ckt__fmha_bwd_wg_load(CKT__FBW_SDO(stg_), do_unit + dh_ * a.do_stride_h + (int64_t)(q0_)*a.do_stride_s,     \
                              a.do_stride_s, sq.sq - (q0_), a.hdim_v, BM, DV, T, tid);                             \
        ckt_pipe_commit();                                                                                         \
    } while (0)
#define CKT__FBW_ROWS(h_, q0_, r_, l_, d_)                                                                         \
    do {                                                                                                           \
        const int i_ = (q0_) + (r_);                                                                               \
        const int64_t dh_ = (h_)-h0;                                                                               \
        l_ = INFINITY;                                                                                             \
        d_ = 0.0f;                                                                                                 \
        if (i_ < sq.sq) {                                                                                          \
            const float x_ = lse_unit[dh_ * a.lse_stride_h + i_];                                                  \
            l_ = x_ == -INFINITY ? INFINITY : x_ * CKT_LOG2E;                                                      \
            d_ = d_unit[dh_ * meta->total_q_rows + i_];                                                            \
        }                                                                                                          \
    } while (0)
        const int q_end = q_lo + nqt * BM;
        int h = h0, q0 = q_lo, nh = h, nq0 = q0 + BM;
        if (nq0 >= q_end) {
            nq0 = q_lo;
            nh++;
        }
        float pre_l = INFINITY, pre_d = 0.0f;
        if (nsteps > 0) {
            CKT__FBW_ISSUE(h, q0, 0);
            if (tid < BM) {
                CKT__FBW_ROWS(h, q0, tid, pre_l, pre_d);
                CKT__FBW_SROWS(0)[tid] = pre_l;
                CKT__FBW_SROWS(0)[BM + tid] = pre_d;
            }
        } else {
            ckt_pipe_commit();
        }

        float dk_acc[D / 2], dv_acc[DV / 2];
        CKT_UNROLL
        for (int i = 0; i < D / 2; i++)
            dk_acc[i] = 0.0f;
        CKT_UNROLL
        for (int i = 0; i < DV / 2; i++)
            dv_acc[i] = 0.0f;
        /* the 64-query sub-tiles whose 16 x 64 S^T warp tile the mask leaves whole */
        int full_lo, full_hi;
        ckt_fmha_mask_full_queries(&mk, n0 + wrow, 16, 64, &full_lo, &full_hi);
        const float cap = a.softcap, inv_cap2 = cap > 0.0f ? 1.0f / (cap * cap) : 0.0f;

        /* a step's dQ: q_acc, reduced into the workspace where CKT__FBW_DEFER
         * says (order 1: during the next step's S^T / dP^T products, q_acc
         * held until then); pdq / pr0 say where it goes (pdq NULL: nothing
         * pending) */
        float q_acc[32];
        CKT_UNROLL
        for (int i = 0; i < 32; i++)
            q_acc[i] = 0.0f;
        float *pdq = (float *)0;
        int pr0 = 0;
        for (int st = 0; st < nsteps; st++) {
            const int stg = st & 1;
            /* the previous step's dV / dK / dQ products are done (their shared
             * tiles may change after the barrier below) */
            ckt_wgmma_wait0();
            ckt_wgmma_fence_operand(q_acc, 32);
            ckt_wgmma_fence_operand(dv_acc, DV / 2);
            ckt_wgmma_fence_operand(dk_acc, D / 2);
            ckt_cp_async_wait(0);
            ckt_fence_proxy_async(); /* this thread's copies, before wgmma reads them */
            ckt_block_sync();        /* step st's tiles have landed; step st - 1 is done with every tile */
            const int prefetch = st + 1 < nsteps;
            if (prefetch) {
                CKT__FBW_ISSUE(nh, nq0, stg ^ 1);
                if (tid < BM)
                    CKT__FBW_ROWS(nh, nq0, tid, pre_l, pre_d);
            }
            const uint32_t so = (uint32_t)(stg * STAGE); /* the stage's offset from stage 0 */
            const float *rows = CKT__FBW_SROWS(stg);

            /* per 64 queries of the tile (BM 128: two halves, so that S^T and dP^T
             * take 64 registers, not 128): S^T = K_g Q^T, dP^T = V_g dO^T (two
             * groups), then P^T and dS^T packed as A operands (pf, df), and dS
             * into shared memory as [query][key] (stmatrix .trans) */
            uint32_t pf[BM / 4], df[BM / 4];
            CKT_UNROLL
            for (int hq = 0; hq < BM / 64; hq++) {
                const uint32_t qo = so + (uint32_t)hq * 64 * 128; /* this half's first row of Q / dO */
                float s_acc[32], dp_acc[32];
                ckt_wgmma_fence();
                CKT_UNROLL
                for (int ks = 0; ks < D / 16; ks++)
                    CKT__FBW_MMA_S(s_acc, ckt_wgmma_desc_advance(k_a, (ks / 4) * BN * 128 + (ks % 4) * 32),
                                   ckt_wgmma_desc_advance(q_b, qo + (ks / 4) * BM * 128 + (ks % 4) * 32), ks > 0);
                ckt_wgmma_commit();
                CKT_UNROLL
                for (int ks = 0; ks < DV / 16; ks++)
                    CKT__FBW_MMA_S(dp_acc, ckt_wgmma_desc_advance(v_a, (ks / 4) * BN * 128 + (ks % 4) * 32),
                                   ckt_wgmma_desc_advance(do_b, qo + (ks / 4) * BM * 128 + (ks % 4) * 32), ks > 0);
                ckt_wgmma_commit();
                const float *hrows = rows + 64 * hq;
#if CKT__FBW_DEFER == 1
                if (hq == 0 && pdq) /* the previous step's dQ, under these products */
                    ckt_warp_red_acc_f32(pdq, dq_ld, q_acc, pr0, qc, 16, 64, sq.sq - pr0, a.hdim_q - qc);
#endif

                /* P^T = exp2(S^T log2e scale - LSE log2e) (soft-capped logits with a cap) */
                ckt_wgmma_wait1();
                ckt_wgmma_fence_operand(s_acc, 32);
                const float to_log2 = ckt_fmha_softcap(s_acc, 32, scale, cap);
                CKT_UNROLL
                for (int i = 0; i < 32; i++) {
                    int r, c;
                    ckt_warp_acc_coord(&r, &c, i, lane, 16, 64);
                    (void)r;
                    s_acc[i] = ckt_exp2f_fast(fmaf(s_acc[i], to_log2, -hrows[c]));
                }
                /* dS^T = P^T (dP^T - D) (* tanh' = 1 - (S / cap)^2 with a cap) */
                ckt_wgmma_wait0();
                ckt_wgmma_fence_operand(dp_acc, 32);
                CKT_UNROLL
                for (int i = 0; i < 32; i++) {
                    int r, c;
                    ckt_warp_acc_coord(&r, &c, i, lane, 16, 64);
                    (void)r;
                    dp_acc[i] = s_acc[i] * (dp_acc[i] - hrows[BM + c]);
                }
                if (cap > 0.0f) {
                    /* the capped logit from P (S = (log2 P + LSE) / to_log2; where P
                     * underflows dS is 0 anyway): the logits' registers already hold
                     * P, and a wait under this uniform branch would serialize the
                     * wgmmas */
                    CKT_UNROLL
                    for (int i = 0; i < 32; i++) {
                        int r, c;
                        ckt_warp_acc_coord(&r, &c, i, lane, 16, 64);
                        (void)r;
                        const float x = s_acc[i] > 0.0f ? (log2f(s_acc[i]) + hrows[c]) / to_log2 : 0.0f;
                        dp_acc[i] *= fmaf(-x * x, inv_cap2, 1.0f);
                    }
                }
                /* only tiles the mask or the ends of the entry cut */
                const int hq0 = q0 + 64 * hq;
                if (!(hq0 >= full_lo && hq0 <= full_hi)) {
                    ckt_fmha_mask_scores_t(s_acc, dp_acc, &mk, n0 + wrow, hq0, 16, 64, lane);
                }
                ckt_warp_acc_to_a(&pf[16 * hq], s_acc, 16, 64, bf16);
                ckt_warp_acc_to_a(&df[16 * hq], dp_acc, 16, 64, bf16);
                /* a 16 x 16 block of dS^T a stmatrix .trans: lane 8j + i stores row i
                 * of Mj^T, query 16 nj + 8 (j / 2) + i, keys wrow + 8 (j % 2) .. + 7 */
                CKT_UNROLL
                for (int nj = 0; nj < 4; nj++)
                    ckt_stmatrix_x4_trans(sdS + ckt__fmha_bwd_wg_offset(BM, 64 * hq + 16 * nj + 8 * (lane / 16) + lane % 8,
                                                                        wrow + 8 * ((lane / 8) % 2)),
                                          &df[16 * hq + 4 * nj]);
            }
            ckt_fence_proxy_async(); /* dS's stores, before wgmma reads them */

            if (prefetch && tid < BM) {
                CKT__FBW_SROWS(stg ^ 1)[tid] = pre_l;
                CKT__FBW_SROWS(stg ^ 1)[BM + tid] = pre_d;
            }
            /* dV_g += P^T dO, dK_g += dS^T Q (one group), and dQ[qr.. + 64][qc.. + 64]
             * = dS K over the BN keys (needs both warpgroups' dS), then into the
             * workspace (deterministic mode: this block's own slot,
             * ckt/fmha/bwd_body.h); the order: CKT__FBW_DEFER */
#define CKT__FBW_ISSUE_KV()                                                                                        \
    do {                                                                                                           \
        ckt_wgmma_fence();                                                                                         \
        CKT_UNROLL                                                                                                 \
        for (int kk = 0; kk < BM / 16; kk++)                                                                       \
            CKT__FBW_MMA_KV(dv_acc, &pf[4 * kk], ckt_wgmma_desc_advance(do_bmn, so + kk * 16 * 128), 1);          \
        CKT_UNROLL                                                                                                 \
        for (int kk = 0; kk < BM / 16; kk++)                                                                       \
            CKT__FBW_MMA_KV(dk_acc, &df[4 * kk], ckt_wgmma_desc_advance(q_bmn, so + kk * 16 * 128), 1);           \
        ckt_wgmma_commit();                                                                                        \
    } while (0)
#define CKT__FBW_ISSUE_Q()                                                                                         \
    do {                                                                                                           \
        ckt_wgmma_fence();                                                                                         \
        CKT_UNROLL                                                                                                 \
        for (int ks = 0; ks < BN / 16; ks++)                                                                       \
            CKT__FBW_MMA_Q(q_acc, ckt_wgmma_desc_advance(ds_a, (ks / 4) * BM * 128 + (ks % 4) * 32),               \
                           ckt_wgmma_desc_advance(k_bmn, ks * 16 * 128), ks > 0);                                  \
        ckt_wgmma_commit();                                                                                        \
    } while (0)
            pdq = dq_acc + dq_base + ((int64_t)un.slot * a.nhead_q + h) * dq_mat;
            pr0 = q0 + qr + 16 * (warp % 4);
#if CKT__FBW_DEFER == 2
            /* dQ first, its reduction under dV / dK */
            ckt_block_sync(); /* dS complete */
            CKT__FBW_ISSUE_Q();
            CKT__FBW_ISSUE_KV();
            ckt_wgmma_wait1();
            ckt_wgmma_fence_operand(q_acc, 32);
            ckt_warp_red_acc_f32(pdq, dq_ld, q_acc, pr0, qc, 16, 64, sq.sq - pr0, a.hdim_q - qc);
            pdq = (float *)0;
#else
            /* dV / dK under the barrier's wait, then dQ */
            CKT__FBW_ISSUE_KV();
            ckt_block_sync(); /* dS complete */
            CKT__FBW_ISSUE_Q();
#if !CKT__FBW_DEFER
            ckt_wgmma_wait0();
            ckt_wgmma_fence_operand(q_acc, 32);
            ckt_warp_red_acc_f32(pdq, dq_ld, q_acc, pr0, qc, 16, 64, sq.sq - pr0, a.hdim_q - qc);
            pdq = (float *)0;
#endif
#endif
#undef CKT__FBW_ISSUE_KV
#undef CKT__FBW_ISSUE_Q
            h = nh;
            q0 = nq0;
            nq0 += BM;
            if (nq0 >= q_end) {
                nq0 = q_lo;
                nh++;
            }
        }
        ckt_wgmma_wait0();
        ckt_wgmma_fence_operand(q_acc, 32);
        ckt_wgmma_fence_operand(dv_acc, DV / 2);
        ckt_wgmma_fence_operand(dk_acc, D / 2);
        if (pdq) /* the last step's dQ */
            ckt_warp_red_acc_f32(pdq, dq_ld, q_acc, pr0, qc, 16, 64, sq.sq - pr0, a.hdim_q - qc);
        ckt_cp_async_wait_all();

        /* dK = scale * acc, dV = acc; keys past sk and padded columns are not written */
        uint16_t *dkp = (uint16_t *)a.dk + ckt_fmha_row_offset(a.group_mode, b, hk, sq.k_start + n0, a.dk_stride_b,
                                                              a.dk_stride_h, a.dk_stride_s);
        uint16_t *dvp = (uint16_t *)a.dv + ckt_fmha_row_offset(a.group_mode, b, hk, sq.k_start + n0, a.dv_stride_b,
                                                              a.dv_stride_h, a.dv_stride_s);
        ckt__fmha_bwd_store_acc(dkp, a.dk_stride_s, dk_acc, wrow, 0, 16, D, sq.sk - n0, a.hdim_q, scale, bf16);
        ckt__fmha_bwd_store_acc(dvp, a.dv_stride_s, dv_acc, wrow, 0, 16, DV, sq.sk - n0, a.hdim_v, 1.0f, bf16);
#undef CKT__FBW_ISSUE
#undef CKT__FBW_ROWS
    }
#undef CKT__FBW_SQ
#undef CKT__FBW_SDO
#undef CKT__FBW_SROWS
#else
    (void)a;
#endif
}

#undef CKT__FBW_MMA_S
#undef CKT__FBW_DEFER
#undef CKT__FBW_MMA_KV
#undef CKT__FBW_MMA_Q
#undef CKT__FBW_KB
#undef CKT__FBW_VB
#undef CKT__FBW_SB
#undef CKT__FBW_QB
#undef CKT__FBW_OB
#undef CKT__FBW_STAGE
#undef CKT__FBW_ROWS0

/* >>host: whether call a runs the wgmma kernel: no bias, ALiBi or dropout
 * (those run the mma.sync body's kernels), and ckt_fmha_sm90_wanted (an sm_90
 * device whose image of the kernel is sm_90a's; CKT_FMHA_FORCE_SM80=1 says
 * no; on the emulator only with CKT_FMHA_SM90=1) */
static inline int CKT__FB_FN(_wg_wanted)(const ckt_fmha_bwd_args *a)
{
    if (a->bias || a->alibi_slopes || a->p_drop > 0.0f)
        return 0;
    static int versions[64]; /* ckt_fmha_sm90_binary_version's cache */
    const int binary_version =
        ckt_fmha_sm90_binary_version((const void *)CKT_KERNEL_REF(CKT__FB_FN(_dq_dk_dv_wg_kernel)), versions);
    return ckt_fmha_sm90_wanted(binary_version, 1);
}
