/* ckt/fmha/fwd_mainloop_body.h — the forward's key loop, a fragment of the
 * kernel in ckt/fmha/fwd_body.h, included there once per K/V source with
 * CKT__FMHA_KV_SRC defined (0: a contiguous tensor, 1: a paged pool), so
 * that each copy of the loop holds only its own loads: the paged gathers
 * in the loop cost the contiguous forward 2-4% on H200 (measured A/B, one
 * process). CKT__FMHA_DROP: dropout (ckt/fmha/dropout.h) in this copy (0, 1
 * or a runtime test), so that the plain loop holds none of its registers.
 * It uses the kernel's locals and #undefs CKT__FMHA_KV_SRC and CKT__FMHA_DROP. */
#if !defined(CKT__FMHA_KV_SRC) || !defined(CKT__FMHA_DROP)
#error "ckt/fmha/fwd_mainloop_body.h: a fragment of ckt/fmha/fwd_body.h's kernel (define CKT__FMHA_KV_SRC, CKT__FMHA_DROP)"
#endif

    for (int nb = 0; nb < nblocks; nb++) {
        const int n0 = n_lo + nb * BN;
        /* K/V tile nb (and Q) have landed: the STAGES - 2 newer groups may
         * stay in flight; then every warp is past tile nb - 1, whose stage
         * takes tile nb + STAGES - 1 */
        ckt_cp_async_wait(CKT__FMHA_STAGES > 1 ? CKT__FMHA_STAGES - 2 : 0);
        ckt_block_sync();
        if (CKT__FMHA_STAGES > 1) {
            if (nb + CKT__FMHA_STAGES - 1 < nblocks) { /* prefetch */
                ckt_window2d_move(&wk, BN, 0);
                ckt_window2d_move(&wv, BN, 0);
                CKT__FMHA_LOAD_KV_FROM(CKT__FMHA_KV_SRC, (nb + CKT__FMHA_STAGES - 1) % CKT__FMHA_STAGES);
            }
            if (CKT__FMHA_STAGES > 2 || nb + 1 < nblocks)
                ckt_pipe_commit();
        }
#if CKT__FMHA_KV_SRC == 1 && CKT__FMHA_PAGE_TABLE
        /* pages without whole tiles: the page ids of tile nb + STAGES, for
         * its row table at the end of this step (ckt/fmha/page.h) */
        int32_t pt_ids[CKT__FMHA_PT_ROWS];
        CKT_UNROLL
        for (int k = 0; k < CKT__FMHA_PT_ROWS; k++)
            pt_ids[k] = -1;
        const int pt_next = page_rows && nb + CKT__FMHA_STAGES < nblocks;
        if (pt_next)
            ckt_fmha_page_table_ids(pt_ids, &kv, pg.page_size, n0 + CKT__FMHA_STAGES * BN, BN, CKT__FMHA_THREADS, tid,
                                    CKT__FMHA_PT_ROWS);
#endif
        const ckt_smem_tile sK = CKT__FMHA_SK(nb % CKT__FMHA_STAGES), sV = CKT__FMHA_SV(nb % CKT__FMHA_STAGES);
        const int full = n0 >= full_lo && n0 <= full_hi;
        const int n0w = n0 + kofs; /* this warp's first key of the tile (CKT_FMHA_KSPLIT) */
#if CKT__FMHA_FP8 && defined(CKT_HAS_MMA_SYNC) /* V^T of this tile in the permuted key order (ckt/tile/fp8.h); synced before P V */
        ckt_block_transpose_v_e4m3(CKT__FMHA_SVT, sV, BN, DV, CKT__FMHA_THREADS, tid);
#endif

        /* S = Q K^T: the warp's WM query rows by its BNW keys (BN but with CKT_FMHA_KSPLIT) */
        float s_acc[CKT_WARP_ACC_REGS(WM, BNW)];
        CKT_UNROLL
        for (int i = 0; i < CKT_WARP_ACC_REGS(WM, BNW); i++)
            s_acc[i] = 0.0f;
#if defined(CKT_HAS_MMA_SYNC)
        /* A from Q rows of this warp, B from K as [n][k] */
        CKT__FMHA_S_UNROLL
        for (int kk = 0; kk < D; kk += 16) {
            uint32_t qf[CKT_WARP_A_REGS(WM, 16)], kf[CKT_WARP_B_REGS(16, BNW)];
            ckt_warp_load_a(qf, sQ, wr, kk, WM, 16);
            ckt_warp_load_b_nk(kf, sK, kofs, kk, 16, BNW);
            ckt_warp_mma(s_acc, qf, kf, WM, BNW, 16, CKT__FMHA_MMA_IN);
        }
#else
        /* transposed on CDNA, S^T[BN x 32] = K[BN x D] Q^T (A = K rows, B = Q
         * as [n][k]), so that P^T needs no shuffle before the second MFMA;
         * fp8: the same 8-byte reads are 32x32x16's fragments, OCP bytes
         * with -0 made +0 for gfx940's FNUZ MFMA (ckt/tile/fp8.h) */
        CKT_UNROLL_BY(1) /* full unrolling hoists every LDS read: registers spill */
        for (int kk = 0; kk < D; kk += 16) {
            uint32_t kf[CKT_WARP_A_REGS(BN, 16)], qf[CKT_WARP_B_REGS(16, WM)];
            ckt_warp_load_a(kf, sK, 0, kk, BN, 16);
            ckt_warp_load_b_nk(qf, sQ, wr, kk, 16, WM);
            if (CKT__FMHA_FP8) {
                ckt_warp_frag_e4m3_fnuz(kf, CKT_WARP_A_REGS(BN, 16));
                ckt_warp_frag_e4m3_fnuz(qf, CKT_WARP_B_REGS(16, WM));
            }
            ckt_warp_mma(s_acc, kf, qf, BN, WM, 16, CKT__FMHA_MMA_IN);
        }
#endif
        if (CKT__FMHA_KV_ONEBUF) { /* V into K's buffer once every warp has read K */
            ckt_block_sync();
            CKT__FMHA_LOAD_V();
            ckt_pipe_commit();
        }

        /* scores soft-capped (or biased: s scale + B, natural logits; never
         * both), masked to -inf where the mask or the end of the keys cuts
         * the tile (only there: the test is per element) */
        float to_log2 = ckt_fmha_softcap(s_acc, CKT_WARP_ACC_REGS(WM, BNW), scale, a.softcap);
        if (bias_on) { /* a constant: _bias_kernel's copy only */
            ckt_fmha_bias_scores(s_acc, &bias, b, h, wrow0, n0w, WM, BNW, lane, g, scale, CKT__FMHA_BF16);
            to_log2 = CKT_LOG2E;
        }
        if (!full)
            ckt_fmha_mask_scores(s_acc, &mask, wrow0, n0w, WM, BNW, lane, g);

        /* m_new = max(m, rowmax(S)), P = exp2(S f - m_new), l = l corr + rowsum(P) */
        float corr[ROWS];
        const int grew = ckt_fmha_softmax_update(corr, s_acc, row_m, row_l, WM, BNW, to_log2);

        /* dropout (ckt/fmha/dropout.h): P <- P o Z after l took the whole
         * row (the 1 / (1 - p) waits for the epilogue); on CDNA here, on
         * mma.sync once P is packed (below) */
#if defined(CKT_HAS_MFMA)
        if (CKT__FMHA_DROP) {
            const ckt_fmha_dropout dr = ckt_fmha_dropout_of(a.p_drop, a.drop_seed, a.drop_offset, a.drop_seed_offset);
            ckt_fmha_dropout_tile(s_acc, &dr, (uint32_t)b * (uint32_t)a.nhead_q + (uint32_t)h, wrow0, n0, WM, BN, lane, g);
        }
#endif

        /* O = O corr (diag(exp2(m_old - m_new)) O) */
        if (CKT__FMHA_RESCALE_ALWAYS || ckt_warp_any(grew))
            ckt_fmha_rescale(o_acc, corr, WM, DVW);

        if (CKT__FMHA_KV_ONEBUF) { /* V has landed */
            ckt_cp_async_wait(0);
            ckt_block_sync();
        }
        /* O += P V, this warp's columns [vc0, vc0 + DVW) */
#if CKT__FMHA_FP8 && defined(CKT_HAS_MMA_SYNC)
        /* fp8: P scale_p as e4m3 A fragments of k32 steps, keys permuted as
         * V^T's (ckt/tile/fp8.h); no dropout (refused) */
        ckt_block_sync(); /* V^T complete */
        uint32_t pf[CKT_WARP_A_REGS(WM, BN / 2)];
        ckt_warp_acc_to_a_e4m3(pf, s_acc, WM, BN, a.scale_p);
        CKT_UNROLL
        for (int kk = 0; kk < BN / 2; kk += 16) { /* 16 units = 32 keys */
            uint32_t vf[CKT_WARP_B_REGS(16, DVW)], pk[CKT_WARP_A_REGS(WM, 16)];
            CKT_UNROLL
            for (int mi = 0; mi < WM / 16; mi++)
                CKT_UNROLL
                for (int e = 0; e < 4; e++)
                    pk[mi * 4 + e] = pf[(mi * (BN / 32) + kk / 16) * 4 + e];
            ckt_warp_load_b_nk(vf, CKT__FMHA_SVT, vc0, kk, 16, DVW);
            ckt_warp_mma(o_acc, pk, vf, WM, DVW, 16, CKT_MMA_E4M3);
        }
#elif defined(CKT_HAS_MMA_SYNC)
        /* P's registers become A fragments without leaving the lane */
        uint32_t pf[CKT_WARP_A_REGS(WM, BNW)];
        ckt_warp_acc_to_a(pf, s_acc, WM, BNW, CKT__FMHA_BF16);
        if (CKT__FMHA_DROP) { /* dropout on the packed P: the fp32 tile is dead, 32 registers free */
            const ckt_fmha_dropout dr = ckt_fmha_dropout_of(a.p_drop, a.drop_seed, a.drop_offset, a.drop_seed_offset);
            ckt_fmha_dropout_tile_packed(pf, &dr, (uint32_t)b * (uint32_t)a.nhead_q + (uint32_t)h, wrow0, n0w, WM, BNW,
                                         lane, g);
        }
        CKT_UNROLL
        for (int kk = 0; kk < BNW; kk += 16) {
            uint32_t vf[CKT_WARP_B_REGS(16, DVW)], pk[CKT_WARP_A_REGS(WM, 16)];
            CKT_UNROLL
            for (int mi = 0; mi < WM / 16; mi++)
                CKT_UNROLL
                for (int e = 0; e < 4; e++)
                    pk[mi * 4 + e] = pf[(mi * (BNW / 16) + kk / 16) * 4 + e];
            ckt_warp_load_b_kn(vf, sV, kofs + kk, vc0, 16, DVW);
            ckt_warp_mma(o_acc, pk, vf, WM, DVW, 16, CKT__FMHA_BF16);
        }
#elif CKT__FMHA_FP8
        /* fp8 on CDNA, O^T[DV x 32] += V^T[DV x BN] P^T[BN x 32] by k16 steps
         * of 32x32x16 e4m3 over the permuted keys (ckt/tile/fp8.h): the B
         * fragment of step ks is P scale_p at S^T registers 8 ks .. 8 ks + 7
         * of this lane, V^T's A fragment gathered from V in the same order */
        CKT_UNROLL
        for (int ks = 0; ks < BN / 16; ks++) {
            uint32_t pf[2], vf[CKT_WARP_A_REGS(DVW, 8)];
            ckt_warp_acc_to_b_e4m3(pf, s_acc, ks, a.scale_p);
            ckt_warp_load_a_vt_e4m3(vf, sV, 16 * ks, vc0, DVW);
            ckt_warp_mma(o_acc, vf, pf, DVW, WM, 8, CKT_MMA_E4M3);
        }
#else
        /* O^T[DV x 32] += V^T[DV x BN] P^T[BN x 32]: the B fragment of k-step
         * ks (keys 8 ks + 4 (lane/32) .. +3, query lane % 32) is S^T registers
         * 4 ks .. 4 ks + 3 of this lane, packed to 16 bits */
        CKT_UNROLL
        for (int ks = 0; ks < BN / 8; ks++) {
            uint32_t pf[2], vf[CKT_WARP_A_REGS(DVW, 8)];
            const float *p4 = &s_acc[4 * ks];
            pf[0] = CKT__FMHA_BF16 ? ckt_pack2_bf16(p4[0], p4[1]) : ckt_pack2_f16(p4[0], p4[1]);
            pf[1] = CKT__FMHA_BF16 ? ckt_pack2_bf16(p4[2], p4[3]) : ckt_pack2_f16(p4[2], p4[3]);
            /* A = V^T: row d, keys 8 ks + 4 (lane/32) .. +3 = a column of V,
             * gathered like a [k][n] B operand */
            ckt_warp_load_b_kn(vf, sV, ks * 8, vc0, 8, DVW);
            ckt_warp_mma(o_acc, vf, pf, DVW, WM, 8, CKT__FMHA_BF16);
        }
#endif
#if CKT__FMHA_KV_SRC == 1 && CKT__FMHA_PAGE_TABLE
        /* tile nb's stage's table was read by its copies, issued before
         * this step's barrier: it takes tile nb + STAGES's, read after the
         * next step's */
        if (pt_next)
            CKT__FMHA_PT_WRITE(nb % CKT__FMHA_STAGES, pt_ids, n0 + CKT__FMHA_STAGES * BN);
#endif
        if (CKT__FMHA_STAGES == 1 && nb + 1 < nblocks) { /* one buffer: refill it once all are done */
            ckt_block_sync();
            ckt_window2d_move(&wk, BN, 0);
            ckt_window2d_move(&wv, BN, 0);
            if (CKT__FMHA_KV_ONEBUF) /* K alone; V once K is read (above) */
                CKT__FMHA_LOAD_K();
            else
                CKT__FMHA_LOAD_KV_FROM(CKT__FMHA_KV_SRC, 0);
            ckt_pipe_commit();
        }
    }

#undef CKT__FMHA_KV_SRC
#undef CKT__FMHA_DROP
