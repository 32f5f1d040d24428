// ckt/tile/fp8.h against host products, one warp: the fp8 MMA
// (mma.sync m16n8k32 e4m3) fed by the 16-bit ldmatrix loads of byte tiles
// viewed as 16-bit units (S = Q K^T), and P V with P packed from fp32
// accumulators in the permuted key order and V^T written by the block
// transpose in the same order (mma.sync: the nv profile and NVIDIA GPUs).
// MFMA (the cdna profile and gfx940): S^T = K Q^T with the 16-bit 8-byte
// reads and -0 cleared, O^T = V^T P^T with P^T's B fragments from S^T-shaped
// accumulators and V^T's A fragments gathered in the same permuted key
// order; the FNUZ MFMA's products are a quarter of the OCP ones.
#include "ckt/host.h"
#include "ckt/tile/fp8.h"
#include "tests/tile/tile_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

#if defined(CKT_HAS_MMA_SYNC)

enum { M = 16, N = 16, K = 64, KEYS = 32 };

typedef struct {
    const uint8_t *a;  // A [M][K] e4m3
    const uint8_t *bt; // B^T [N][K] e4m3
    const float *p;    // P [M][KEYS] fp32
    const uint8_t *v;  // V [KEYS][N] e4m3
    float *c;          // C [M][N] = A B
    float *o;          // O [M][N] = e4m3(P) V
} fp8_params;

#define TILE_ELEMS(R, C) CKT_SMEM_ELEMS(CKT_SMEM_PADDED, R, C, 2)

CKT_KERNEL(fp8_tile_kernel, fp8_params, p)
{
    CKT_SHARED_ARRAY(uint16_t, sm, TILE_ELEMS(M, K / 2) + TILE_ELEMS(N, K / 2) + TILE_ELEMS(KEYS, N / 2) +
                                       TILE_ELEMS(N, KEYS / 2));
    const int lane = (int)ckt_lane_id();
    ckt_smem_tile sA = ckt_smem_tile_make(sm, CKT_SMEM_PADDED, K / 2);
    ckt_smem_tile sB = ckt_smem_tile_make(sm + TILE_ELEMS(M, K / 2), CKT_SMEM_PADDED, K / 2);
    ckt_smem_tile sV = ckt_smem_tile_make(sm + TILE_ELEMS(M, K / 2) + TILE_ELEMS(N, K / 2), CKT_SMEM_PADDED, N / 2);
    ckt_smem_tile sVt = ckt_smem_tile_make(sm + TILE_ELEMS(M, K / 2) + TILE_ELEMS(N, K / 2) + TILE_ELEMS(KEYS, N / 2),
                                           CKT_SMEM_PADDED, KEYS / 2);
    for (int e = lane; e < M * K; e += CKT_WARP_SIZE) /* byte e % K of row e / K */
        ((uint8_t *)ckt_smem_tile_ptr(sA, e / K, (e % K) / 2))[e % 2] = p.a[e];
    for (int e = lane; e < N * K; e += CKT_WARP_SIZE)
        ((uint8_t *)ckt_smem_tile_ptr(sB, e / K, (e % K) / 2))[e % 2] = p.bt[e];
    for (int e = lane; e < KEYS * N; e += CKT_WARP_SIZE)
        ((uint8_t *)ckt_smem_tile_ptr(sV, e / N, (e % N) / 2))[e % 2] = p.v[e];
    ckt_block_sync();
    ckt_block_transpose_v_e4m3(sVt, sV, KEYS, N, CKT_WARP_SIZE, lane);
    ckt_block_sync();

    /* C = A B: k-steps of 16 units (32 bytes) */
    float c[CKT_WARP_ACC_REGS(M, N)];
    for (int i = 0; i < CKT_WARP_ACC_REGS(M, N); i++)
        c[i] = 0.0f;
    for (int kk = 0; kk < K / 2; kk += 16) {
        uint32_t af[CKT_WARP_A_REGS(M, 16)], bf[CKT_WARP_B_REGS(16, N)];
        ckt_warp_load_a(af, sA, 0, kk, M, 16);
        ckt_warp_load_b_nk(bf, sB, 0, kk, 16, N);
        ckt_warp_mma(c, af, bf, M, N, 16, CKT_MMA_E4M3);
    }
    /* O = e4m3(P) V: P from fp32 accumulator registers of an M x KEYS tile */
    float pacc[CKT_WARP_ACC_REGS(M, KEYS)], o[CKT_WARP_ACC_REGS(M, N)];
    for (int i = 0; i < CKT_WARP_ACC_REGS(M, KEYS); i++) {
        int r, col;
        ckt_warp_acc_coord(&r, &col, i, lane, M, KEYS);
        pacc[i] = p.p[r * KEYS + col];
    }
    for (int i = 0; i < CKT_WARP_ACC_REGS(M, N); i++)
        o[i] = 0.0f;
    uint32_t pf[CKT_WARP_A_REGS(M, KEYS / 2)], vf[CKT_WARP_B_REGS(16, N)];
    ckt_warp_acc_to_a_e4m3(pf, pacc, M, KEYS, 1.0f);
    ckt_warp_load_b_nk(vf, sVt, 0, 0, 16, N);
    ckt_warp_mma(o, pf, vf, M, N, 16, CKT_MMA_E4M3);
    for (int i = 0; i < CKT_WARP_ACC_REGS(M, N); i++) {
        int r, col;
        ckt_warp_acc_coord(&r, &col, i, lane, M, N);
        p.c[r * N + col] = c[i];
        p.o[r * N + col] = o[i];
    }
}

TEST(Fp8Tile, QkAndPvMatchHostProducts)
{
    std::mt19937 g(7);
    std::uniform_real_distribution<float> u(-4.0f, 4.0f), up(0.0f, 300.0f);
    std::vector<uint8_t> a(M * K), bt(N * K), v(KEYS * N);
    std::vector<float> pm(M * KEYS);
    for (auto &x : a)
        x = ckt_e4m3_from_f32(u(g));
    for (auto &x : bt)
        x = ckt_e4m3_from_f32(u(g));
    for (auto &x : v)
        x = ckt_e4m3_from_f32(u(g));
    for (auto &x : pm)
        x = up(g);
    tile_test::DevBuf<uint8_t> da(a.size()), db(bt.size()), dv(v.size());
    tile_test::DevBuf<float> dp(pm.size()), dc(M * N), dout(M * N);
    da.upload(a);
    db.upload(bt);
    dv.upload(v);
    dp.upload(pm);
    fp8_params p = {da.p, db.p, dp.p, dv.p, dc.p, dout.p};
    ASSERT_EQ(tile_test::launch(CKT_KERNEL_REF(fp8_tile_kernel), 1, CKT_WARP_SIZE, &p), CKT_SUCCESS)
        << ckt_last_error();
    std::vector<float> c = dc.download(), o = dout.download();
    int bad = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double wc = 0, wo = 0;
            for (int k = 0; k < K; k++)
                wc += (double)ckt_f32_from_e4m3(a[m * K + k]) * ckt_f32_from_e4m3(bt[n * K + k]);
            for (int j = 0; j < KEYS; j++)
                wo += (double)ckt_f32_from_e4m3(ckt_e4m3_from_f32(pm[m * KEYS + j])) * ckt_f32_from_e4m3(v[j * N + n]);
            if (!(std::fabs(c[m * N + n] - wc) <= 1e-3 + 1e-5 * std::fabs(wc)) && bad++ < 5)
                ADD_FAILURE() << "C[" << m << "][" << n << "] = " << c[m * N + n] << ", want " << wc;
            if (!(std::fabs(o[m * N + n] - wo) <= 1e-2 + 1e-5 * std::fabs(wo)) && bad++ < 5)
                ADD_FAILURE() << "O[" << m << "][" << n << "] = " << o[m * N + n] << ", want " << wo;
        }
    EXPECT_EQ(bad, 0);
}

TEST(Fp8Tile, KeyOrderIsAPermutation)
{
    std::vector<int> seen(64, 0);
    for (int kp = 0; kp < 64; kp++)
        seen[ckt_e4m3_key_of(kp)]++;
    for (int k = 0; k < 64; k++)
        EXPECT_EQ(seen[k], 1) << k;
    EXPECT_EQ(ckt_e4m3_key_of(2), 8); // k' = 4t + j, t 0, j 2: key 8
    EXPECT_EQ(ckt_e4m3_key_of(5), 3); // t 1, j 1: key 2 + 1
}

#elif defined(CKT_HAS_MFMA)

// one wave: S^T [KEYS x M] = K [KEYS x D] Q^T, O^T [N x M] = V^T [N x KEYS] P^T
enum { M = 32, D = 64, KEYS = 64, N = 64 };

typedef struct {
    const uint8_t *q; // Q [M][D] e4m3
    const uint8_t *k; // K [KEYS][D] e4m3
    const float *p;   // P [M][KEYS] fp32
    const uint8_t *v; // V [KEYS][N] e4m3
    float *s;         // S [M][KEYS] = Q K^T, as the MFMA sums it
    float *o;         // O [M][N] = e4m3(P) V, as the MFMA sums it
} fp8_params;

#define TILE_ELEMS(R, C) CKT_SMEM_ELEMS(CKT_SMEM_PADDED, R, C, 2)

CKT_KERNEL(fp8_tile_kernel, fp8_params, p)
{
    CKT_SHARED_ARRAY(uint16_t, sm, TILE_ELEMS(M, D / 2) + TILE_ELEMS(KEYS, D / 2) + TILE_ELEMS(KEYS, N / 2));
    const int lane = (int)ckt_lane_id();
    ckt_smem_tile sQ = ckt_smem_tile_make(sm, CKT_SMEM_PADDED, D / 2);
    ckt_smem_tile sK = ckt_smem_tile_make(sm + TILE_ELEMS(M, D / 2), CKT_SMEM_PADDED, D / 2);
    ckt_smem_tile sV = ckt_smem_tile_make(sm + TILE_ELEMS(M, D / 2) + TILE_ELEMS(KEYS, D / 2), CKT_SMEM_PADDED, N / 2);
    for (int e = lane; e < M * D; e += CKT_WARP_SIZE) /* byte e % D of row e / D */
        ((uint8_t *)ckt_smem_tile_ptr(sQ, e / D, (e % D) / 2))[e % 2] = p.q[e];
    for (int e = lane; e < KEYS * D; e += CKT_WARP_SIZE)
        ((uint8_t *)ckt_smem_tile_ptr(sK, e / D, (e % D) / 2))[e % 2] = p.k[e];
    for (int e = lane; e < KEYS * N; e += CKT_WARP_SIZE)
        ((uint8_t *)ckt_smem_tile_ptr(sV, e / N, (e % N) / 2))[e % 2] = p.v[e];
    ckt_block_sync();

    /* S^T = K Q^T: k-steps of 8 units (16 bytes) */
    float st[CKT_WARP_ACC_REGS(KEYS, M)];
    for (int i = 0; i < CKT_WARP_ACC_REGS(KEYS, M); i++)
        st[i] = 0.0f;
    for (int kk = 0; kk < D / 2; kk += 8) {
        uint32_t kf[CKT_WARP_A_REGS(KEYS, 8)], qf[CKT_WARP_B_REGS(8, M)];
        ckt_warp_load_a(kf, sK, 0, kk, KEYS, 8);
        ckt_warp_load_b_nk(qf, sQ, 0, kk, 8, M);
        ckt_warp_frag_e4m3_fnuz(kf, CKT_WARP_A_REGS(KEYS, 8));
        ckt_warp_frag_e4m3_fnuz(qf, CKT_WARP_B_REGS(8, M));
        ckt_warp_mma(st, kf, qf, KEYS, M, 8, CKT_MMA_E4M3);
    }
    /* O^T = V^T P^T: P^T in S^T's accumulator layout */
    float pt[CKT_WARP_ACC_REGS(KEYS, M)], ot[CKT_WARP_ACC_REGS(N, M)];
    for (int i = 0; i < CKT_WARP_ACC_REGS(KEYS, M); i++) {
        int key, row;
        ckt_warp_acc_coord(&key, &row, i, lane, KEYS, M);
        pt[i] = p.p[row * KEYS + key];
    }
    for (int i = 0; i < CKT_WARP_ACC_REGS(N, M); i++)
        ot[i] = 0.0f;
    for (int ks = 0; ks < KEYS / 16; ks++) {
        uint32_t pf[2], vf[CKT_WARP_A_REGS(N, 8)];
        ckt_warp_acc_to_b_e4m3(pf, pt, ks, 1.0f);
        ckt_warp_load_a_vt_e4m3(vf, sV, 16 * ks, 0, N);
        ckt_warp_mma(ot, vf, pf, N, M, 8, CKT_MMA_E4M3);
    }
    for (int i = 0; i < CKT_WARP_ACC_REGS(KEYS, M); i++) {
        int key, row;
        ckt_warp_acc_coord(&key, &row, i, lane, KEYS, M);
        p.s[row * KEYS + key] = st[i];
    }
    for (int i = 0; i < CKT_WARP_ACC_REGS(N, M); i++) {
        int col, row;
        ckt_warp_acc_coord(&col, &row, i, lane, N, M);
        p.o[row * N + col] = ot[i];
    }
}

TEST(Fp8Tile, TransposedProductsMatchHost)
{
#if defined(CKT_BACKEND_AMD)
    ckt_device_props dp;
    if (ckt_rt_device_props(&dp) != CKT_SUCCESS || !strstr(dp.name, "(gfx94"))
        GTEST_SKIP() << "no fp8 MFMA on this device (gfx940-942 only)";
#endif
    std::mt19937 g(7);
    std::uniform_real_distribution<float> u(-4.0f, 4.0f), up(0.0f, 300.0f);
    // OCP bytes, one in 8 a -0 (FNUZ's NaN unless cleared)
    auto e4m3 = [&](size_t n) {
        std::vector<uint8_t> x(n);
        for (auto &b : x)
            b = g() % 8 == 0 ? 0x80 : ckt_e4m3_from_f32(u(g));
        return x;
    };
    std::vector<uint8_t> q = e4m3(M * D), k = e4m3(KEYS * D), v = e4m3(KEYS * N);
    std::vector<float> pm(M * KEYS);
    for (auto &x : pm)
        x = up(g);
    tile_test::DevBuf<uint8_t> dq(q.size()), dk(k.size()), dv(v.size());
    tile_test::DevBuf<float> dpm(pm.size()), ds(M * KEYS), dout(M * N);
    dq.upload(q);
    dk.upload(k);
    dv.upload(v);
    dpm.upload(pm);
    fp8_params p = {dq.p, dk.p, dpm.p, dv.p, ds.p, dout.p};
    ASSERT_EQ(tile_test::launch(CKT_KERNEL_REF(fp8_tile_kernel), 1, CKT_WARP_SIZE, &p), CKT_SUCCESS)
        << ckt_last_error();
    std::vector<float> s = ds.download(), o = dout.download();
    // the FNUZ MFMA reads each OCP operand as half its value
    const double q2 = (double)CKT_E4M3_MMA_OPERAND_SCALE * CKT_E4M3_MMA_OPERAND_SCALE;
    int bad = 0;
    for (int m = 0; m < M; m++) {
        for (int j = 0; j < KEYS; j++) {
            double w = 0;
            for (int d = 0; d < D; d++)
                w += (double)ckt_f32_from_e4m3(q[m * D + d]) * ckt_f32_from_e4m3(k[j * D + d]);
            w *= q2;
            if (!(std::fabs(s[m * KEYS + j] - w) <= 1e-3 + 1e-5 * std::fabs(w)) && bad++ < 5)
                ADD_FAILURE() << "S[" << m << "][" << j << "] = " << s[m * KEYS + j] << ", want " << w;
        }
        for (int n = 0; n < N; n++) {
            double w = 0;
            for (int j = 0; j < KEYS; j++)
                w += (double)ckt_f32_from_e4m3(ckt_e4m3_from_f32(pm[m * KEYS + j])) * ckt_f32_from_e4m3(v[j * N + n]);
            w *= q2;
            if (!(std::fabs(o[m * N + n] - w) <= 1e-2 + 1e-5 * std::fabs(w)) && bad++ < 5)
                ADD_FAILURE() << "O[" << m << "][" << n << "] = " << o[m * N + n] << ", want " << w;
        }
    }
    EXPECT_EQ(bad, 0);
}

TEST(Fp8Tile, KeyOrderIsAPermutation)
{
    std::vector<int> seen(64, 0);
    for (int kp = 0; kp < 64; kp++) {
        seen[ckt_e4m3_key_of(kp)]++;
        EXPECT_EQ(ckt_e4m3_key_of(ckt_e4m3_key_of(kp)), kp) << kp; // bits 2 and 3 swapped: an involution
    }
    for (int k = 0; k < 64; k++)
        EXPECT_EQ(seen[k], 1) << k;
    EXPECT_EQ(ckt_e4m3_key_of(4), 8);  // lane / 32 = 0, byte 4: key 8
    EXPECT_EQ(ckt_e4m3_key_of(9), 5);  // lane / 32 = 1, byte 1: key 4 + 1
}

#else

TEST(Fp8Tile, NeedsAWarpMma) { GTEST_SKIP() << "fp8 MMA: mma.sync or MFMA"; }

#endif

} // namespace
