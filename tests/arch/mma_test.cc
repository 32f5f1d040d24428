// Warp matrix instructions (ckt/arch/mma.h) and memory operations
// (ckt/arch/memory.h) against their documented register layouts.
//
// Each kernel builds its fragments from row-major matrices in global memory
// with the layout formulas of the vendor documentation, written out here
// independently of the emulator, and the host checks D == A * B + C exactly
// (integer-valued data). The same source passes on the GPU and on the
// emulator, so the emulated layouts are the hardware's.
#include "ckt/host.h"

#include <gtest/gtest.h>

#include <string.h>

#include <vector>

namespace {

struct DeviceBuf {
    void *p = nullptr;
    size_t bytes;
    explicit DeviceBuf(size_t n) : bytes(n) { EXPECT_EQ(ckt_rt_malloc(&p, n), CKT_SUCCESS) << ckt_last_error(); }
    ~DeviceBuf() { ckt_rt_free(p); }
    template <class T> void put(const std::vector<T> &v)
    {
        ASSERT_EQ(ckt_rt_memcpy(p, v.data(), v.size() * sizeof(T), CKT_H2D), CKT_SUCCESS);
    }
    template <class T> void get(std::vector<T> &v)
    {
        ASSERT_EQ(ckt_rt_memcpy(v.data(), p, v.size() * sizeof(T), CKT_D2H), CKT_SUCCESS);
    }
};

// 16-bit bits of an integer-valued float (exact in fp16 and bf16 for |x| <= 256).
uint16_t to_bits(float x, int bf16) { return bf16 ? ckt_bf16_from_f32(x).bits : ckt_f16_from_f32(x).bits; }

std::vector<float> random_ints(size_t n, int lo, int hi, uint64_t seed)
{
    ckt_rng r;
    ckt_rng_seed(&r, seed);
    std::vector<float> v(n);
    for (auto &x : v)
        x = (float)ckt_rng_int(&r, lo, hi);
    return v;
}

// ref[m][n] = C[m][n] + sum_k A[m][k] * B[k][n]; A row-major M x K, B row-major K x N.
std::vector<float> matmul_ref(const std::vector<float> &a, const std::vector<float> &b, const std::vector<float> &c,
                              int M, int N, int K, size_t a_off, size_t b_off, size_t c_off)
{
    std::vector<float> d(M * N);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = c[c_off + m * N + n];
            for (int k = 0; k < K; k++)
                s += (double)a[a_off + m * K + k] * b[b_off + k * N + n];
            d[m * N + n] = (float)s;
        }
    return d;
}

ckt_status launch(ckt_kernel_ref k, unsigned threads, const void *params, unsigned blocks = 1)
{
    return ckt_rt_launch(k, ckt_dim3_make(blocks, 1, 1), ckt_dim3_make(threads, 1, 1), 0, NULL, params);
}

// Packs two 16-bit elements: lo in bits 0-15 (the lower index), hi in 16-31.
#define PACK(lo, hi) ((uint32_t)(lo) | ((uint32_t)(hi) << 16))

// Two MMAs per warp chain over K (K = 2 instruction K), accumulating in place,
// and each warp of the block multiplies its own matrices.
typedef struct mma_params {
    const uint16_t *a; // [warp][M][2K] row-major, f16 or bf16 bits
    const uint16_t *b; // [warp][2K][N] row-major
    const float *c;    // [warp][M][N]
    float *d;          // [warp][M][N]
    int bf16;
    int shape; // MFMA: 0 = 32x32x8, 1 = 16x16x16
} mma_params;

// >>mma.sync m16n8k16
// PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type":
//   groupID = %laneid >> 2, threadID_in_group = %laneid % 4
//   A: row = groupID for a0, a1, a4, a5, groupID + 8 otherwise;
//      col = threadID_in_group * 2 + (i & 1), + 8 for i >= 4
//   B: row = threadID_in_group * 2 + (i & 1), + 8 for i >= 2; col = groupID
//   C/D: row = groupID for c0, c1, groupID + 8 for c2, c3;
//        col = threadID_in_group * 2 + (i & 1)
CKT_KERNEL(mma_sync_kernel, mma_params, p)
{
#if CKT_HAS_MMA_SYNC
    const int M = 16, N = 8, K2 = 32;
    unsigned w = ckt_warp_id(), lane = ckt_lane_id();
    unsigned group = lane >> 2, tig = lane % 4;
    const uint16_t *A = p.a + w * M * K2, *B = p.b + w * K2 * N;
    const float *C = p.c + w * M * N;
    float *D = p.d + w * M * N;
    float acc[4];
    for (unsigned i = 0; i < 4; i++)
        acc[i] = C[(group + (i < 2 ? 0 : 8)) * N + tig * 2 + (i & 1)];
    for (unsigned kb = 0; kb < 2; kb++) { // K blocks of 16
        const uint16_t *Ak = A + kb * 16, *Bk = B + kb * 16 * N;
        uint32_t a[4], b[2];
        // a0,a1 -> a[0]; a2,a3 -> a[1]; a4,a5 -> a[2]; a6,a7 -> a[3]
        a[0] = PACK(Ak[group * K2 + tig * 2], Ak[group * K2 + tig * 2 + 1]);
        a[1] = PACK(Ak[(group + 8) * K2 + tig * 2], Ak[(group + 8) * K2 + tig * 2 + 1]);
        a[2] = PACK(Ak[group * K2 + tig * 2 + 8], Ak[group * K2 + tig * 2 + 9]);
        a[3] = PACK(Ak[(group + 8) * K2 + tig * 2 + 8], Ak[(group + 8) * K2 + tig * 2 + 9]);
        // b0,b1 -> b[0]; b2,b3 -> b[1]
        b[0] = PACK(Bk[(tig * 2) * N + group], Bk[(tig * 2 + 1) * N + group]);
        b[1] = PACK(Bk[(tig * 2 + 8) * N + group], Bk[(tig * 2 + 9) * N + group]);
        if (p.bf16)
            ckt_mma_m16n8k16_bf16(acc, a, b, acc);
        else
            ckt_mma_m16n8k16_f16(acc, a, b, acc);
    }
    for (unsigned i = 0; i < 4; i++)
        D[(group + (i < 2 ? 0 : 8)) * N + tig * 2 + (i & 1)] = acc[i];
#else
    (void)p;
#endif
}

class MmaSync : public ::testing::TestWithParam<int> {};

TEST_P(MmaSync, M16n8k16MatchesHost)
{
#if !CKT_HAS_MMA_SYNC
    GTEST_SKIP() << "no mma.sync on " CKT_ARCH_NAME;
#else
    const int bf16 = GetParam(), warps = 3, M = 16, N = 8, K2 = 32;
    auto a = random_ints(warps * M * K2, -4, 4, 1 + bf16), b = random_ints(warps * K2 * N, -4, 4, 3 + bf16);
    auto c = random_ints(warps * M * N, -64, 64, 5);
    std::vector<uint16_t> ah(a.size()), bh(b.size());
    for (size_t i = 0; i < a.size(); i++)
        ah[i] = to_bits(a[i], bf16);
    for (size_t i = 0; i < b.size(); i++)
        bh[i] = to_bits(b[i], bf16);
    DeviceBuf da(ah.size() * 2), db(bh.size() * 2), dc(c.size() * 4), dd(c.size() * 4);
    da.put(ah);
    db.put(bh);
    dc.put(c);
    mma_params p = {(const uint16_t *)da.p, (const uint16_t *)db.p, (const float *)dc.p, (float *)dd.p, bf16, 0};
    ASSERT_EQ(launch(CKT_KERNEL_REF(mma_sync_kernel), warps * 32, &p), CKT_SUCCESS) << ckt_last_error();
    std::vector<float> d(c.size());
    dd.get(d);
    for (int w = 0; w < warps; w++) {
        auto ref = matmul_ref(a, b, c, M, N, K2, w * M * K2, w * K2 * N, w * M * N);
        for (int i = 0; i < M * N; i++)
            ASSERT_EQ(d[w * M * N + i], ref[i]) << "warp " << w << " row " << i / N << " col " << i % N;
    }
#endif
}

INSTANTIATE_TEST_SUITE_P(Types, MmaSync, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int> &i) { return i.param ? "bf16" : "f16"; });

// >>ldmatrix
// PTX ISA, "Warp-level matrix load instruction: ldmatrix": lanes 0-7 give the
// row addresses of matrix 0, 8-15 of matrix 1, 16-23 of 2, 24-31 of 3 (.x1
// reads lanes 0-7 only, .x2 lanes 0-15); "a group of four threads loads an
// entire row": lane l receives row l/4, elements 2(l%4) and 2(l%4)+1, in the
// register of that matrix. .trans: the matrix is loaded column-major.
enum { kLdmVariants = 6 };
typedef struct ldm_params {
    const uint16_t *src; // 32 logical rows of 8 elements: row 8j+i = row i of matrix j
    const int *place;    // physical shared row of each logical row (a permutation of 0..39)
    uint32_t *out;       // [variant][lane][4]
} ldm_params;

#define LDM_ROW 24 // elements per physical shared row: 48 bytes, rows stay 16-byte aligned

CKT_KERNEL(ldmatrix_kernel, ldm_params, p)
{
#if CKT_HAS_MMA_SYNC
    CKT_SHARED_ARRAY(uint16_t, sm, 40 * LDM_ROW);
    unsigned lane = ckt_lane_id();
    for (unsigned e = 0; e < 8; e++)
        sm[p.place[lane] * LDM_ROW + e] = p.src[lane * 8 + e];
    ckt_warp_sync();
    const uint16_t *mine = &sm[p.place[lane] * LDM_ROW];
    // Lanes a variant does not read pass another (valid) row: it must be ignored.
    const uint16_t *other = &sm[p.place[(lane * 7 + 3) % 32] * LDM_ROW];
    uint32_t r[kLdmVariants][4];
    for (int v = 0; v < kLdmVariants; v++)
        for (int j = 0; j < 4; j++)
            r[v][j] = 0xdeadbeefu;
    ckt_ldmatrix_x1(r[0], lane < 8 ? mine : other);
    ckt_ldmatrix_x2(r[1], lane < 16 ? mine : other);
    ckt_ldmatrix_x4(r[2], mine);
    ckt_ldmatrix_x1_trans(r[3], lane < 8 ? mine : other);
    ckt_ldmatrix_x2_trans(r[4], lane < 16 ? mine : other);
    ckt_ldmatrix_x4_trans(r[5], mine);
    for (int v = 0; v < kLdmVariants; v++)
        for (int j = 0; j < 4; j++)
            p.out[(v * 32 + lane) * 4 + j] = r[v][j];
#else
    (void)p;
#endif
}

TEST(Ldmatrix, AllVariantsMatchDocumentedDistribution)
{
#if !CKT_HAS_MMA_SYNC
    GTEST_SKIP() << "no ldmatrix on " CKT_ARCH_NAME;
#else
    std::vector<uint16_t> src(32 * 8);
    for (int i = 0; i < 32 * 8; i++)
        src[i] = (uint16_t)(0x1000 + i * 7);
    std::vector<int> place(32);
    for (int i = 0; i < 32; i++)
        place[i] = (i * 11 + 5) % 40; // rows scattered, not adjacent, not in order
    DeviceBuf dsrc(src.size() * 2), dplace(place.size() * 4), dout(kLdmVariants * 32 * 4 * 4);
    dsrc.put(src);
    dplace.put(place);
    ldm_params p = {(const uint16_t *)dsrc.p, (const int *)dplace.p, (uint32_t *)dout.p};
    ASSERT_EQ(launch(CKT_KERNEL_REF(ldmatrix_kernel), 32, &p), CKT_SUCCESS) << ckt_last_error();
    std::vector<uint32_t> out(kLdmVariants * 32 * 4);
    dout.get(out);
    auto M = [&](int j, int row, int col) { return src[(j * 8 + row) * 8 + col]; };
    const int nums[3] = {1, 2, 4};
    for (int v = 0; v < kLdmVariants; v++) {
        int num = nums[v % 3], trans = v >= 3;
        for (int l = 0; l < 32; l++)
            for (int j = 0; j < 4; j++) {
                uint32_t want = 0xdeadbeefu; // registers beyond num are untouched
                if (j < num)
                    want = trans ? PACK(M(j, 2 * (l % 4), l / 4), M(j, 2 * (l % 4) + 1, l / 4))
                                 : PACK(M(j, l / 4, 2 * (l % 4)), M(j, l / 4, 2 * (l % 4) + 1));
                ASSERT_EQ(out[(v * 32 + l) * 4 + j], want)
                    << "x" << num << (trans ? ".trans" : "") << " lane " << l << " register " << j;
            }
    }
#endif
}

// >>stmatrix (sm_90, the emulator's nv profile): the inverse of ldmatrix x4;
// lane 8j+i gives the address of row i of matrix j, lane l's r[j] holds
// Mj[l/4][2(l%4) .. +1]. .trans stores Mj^T: row i of Mj^T is column i of Mj.
typedef struct stm_params {
    const int *place; // physical shared row of each of the 32 stored rows (a permutation in 0..39)
    uint16_t *out;    // [variant][32 rows][8]
} stm_params;

CKT_KERNEL(stmatrix_kernel, stm_params, p)
{
#if defined(CKT_HAS_STMATRIX)
    CKT_SHARED_ARRAY(uint16_t, sm, 40 * LDM_ROW);
    unsigned lane = ckt_lane_id();
    uint32_t r[4];
    for (unsigned j = 0; j < 4; j++) // Mj[row][col] = 0x2000 + 64 j + 8 row + col
        r[j] = PACK(0x2000 + 64 * j + 8 * (lane / 4) + 2 * (lane % 4), 0x2000 + 64 * j + 8 * (lane / 4) + 2 * (lane % 4) + 1);
    for (int v = 0; v < 2; v++) {
        for (unsigned e = 0; e < 8; e++)
            sm[p.place[lane] * LDM_ROW + e] = 0xffff;
        ckt_warp_sync();
        if (v == 0)
            ckt_stmatrix_x4(&sm[p.place[lane] * LDM_ROW], r);
        else
            ckt_stmatrix_x4_trans(&sm[p.place[lane] * LDM_ROW], r);
        ckt_warp_sync();
        for (unsigned e = 0; e < 8; e++)
            p.out[(v * 32 + lane) * 8 + e] = sm[p.place[lane] * LDM_ROW + e];
        ckt_warp_sync();
    }
#else
    (void)p;
#endif
}

TEST(Stmatrix, PlainAndTransposedMatchDocumentedDistribution)
{
#if defined(CKT_BACKEND_NVIDIA) /* the host pass never has CKT_HAS_STMATRIX: ask the device */
    int major = 0, minor = 0;
    ASSERT_EQ(ckt_rt_compute_capability(&major, &minor), CKT_SUCCESS) << ckt_last_error();
    if (major < 9)
        GTEST_SKIP() << "no stmatrix before sm_90 (this device: sm_" << major << minor << ")";
#elif !defined(CKT_HAS_STMATRIX)
    GTEST_SKIP() << "no stmatrix on " CKT_ARCH_NAME;
#endif
#if defined(CKT_BACKEND_NVIDIA) || defined(CKT_HAS_STMATRIX)
    std::vector<int> place(32);
    for (int i = 0; i < 32; i++)
        place[i] = (i * 13 + 7) % 40;
    DeviceBuf dplace(place.size() * 4), dout(2 * 32 * 8 * 2);
    dplace.put(place);
    stm_params p = {(const int *)dplace.p, (uint16_t *)dout.p};
    ASSERT_EQ(launch(CKT_KERNEL_REF(stmatrix_kernel), 32, &p), CKT_SUCCESS) << ckt_last_error();
    std::vector<uint16_t> out(2 * 32 * 8);
    dout.get(out);
    for (int v = 0; v < 2; v++)
        for (int l = 0; l < 32; l++)
            for (int e = 0; e < 8; e++) {
                const int j = l / 8, i = l % 8;
                const int want = v == 0 ? 0x2000 + 64 * j + 8 * i + e : 0x2000 + 64 * j + 8 * e + i;
                ASSERT_EQ(out[(v * 32 + l) * 8 + e], want)
                    << (v ? "stmatrix .trans" : "stmatrix") << " row " << l << " element " << e;
            }
#endif
}

// >>MFMA
// 32x32x8 (AMD matrix instruction calculator; amd-lab-notes matrix-cores,
// mfma_fp32_32x32x8fp16): lane l holds A[l%32][4(l/32) + e] and
// B[4(l/32) + e][l%32], e = 0..3; "d[0:3] cover rows 0-7, d[4:7] rows 8-15,
// ...; first 32 lanes of d[i] cover row i, last 32 lanes row i + 4", column l%32.
// 16x16x16 (same sources, mfma_fp32_16x16x16fp16): lane l holds
// A[l%16][4(l/16) + e] and B[4(l/16) + e][l%16]; d[i] is row i + 4(l/16),
// column l%16. bf16_1k: the same layouts.
CKT_KERNEL(mfma_kernel, mma_params, p)
{
#if CKT_HAS_MFMA
    unsigned w = ckt_warp_id(), lane = ckt_lane_id();
    if (p.shape == 0) {
        const int M = 32, N = 32, K2 = 16;
        unsigned col = lane % 32, half = lane / 32;
        const uint16_t *A = p.a + w * M * K2, *B = p.b + w * K2 * N;
        const float *C = p.c + w * M * N;
        float *D = p.d + w * M * N;
        float acc[16];
        for (unsigned blk = 0; blk < 4; blk++)
            for (unsigned i = 0; i < 4; i++)
                acc[4 * blk + i] = C[(blk * 8 + half * 4 + i) * N + col];
        for (unsigned kb = 0; kb < 2; kb++) { // K blocks of 8
            unsigned k = kb * 8 + half * 4;
            uint32_t a[2], b[2];
            a[0] = PACK(A[col * K2 + k], A[col * K2 + k + 1]);
            a[1] = PACK(A[col * K2 + k + 2], A[col * K2 + k + 3]);
            b[0] = PACK(B[k * N + col], B[(k + 1) * N + col]);
            b[1] = PACK(B[(k + 2) * N + col], B[(k + 3) * N + col]);
            if (p.bf16)
                ckt_mfma_32x32x8_bf16(acc, a, b, acc);
            else
                ckt_mfma_32x32x8_f16(acc, a, b, acc);
        }
        for (unsigned blk = 0; blk < 4; blk++)
            for (unsigned i = 0; i < 4; i++)
                D[(blk * 8 + half * 4 + i) * N + col] = acc[4 * blk + i];
    } else {
        const int M = 16, N = 16, K2 = 32;
        unsigned col = lane % 16, quad = lane / 16;
        const uint16_t *A = p.a + w * M * K2, *B = p.b + w * K2 * N;
        const float *C = p.c + w * M * N;
        float *D = p.d + w * M * N;
        float acc[4];
        for (unsigned i = 0; i < 4; i++)
            acc[i] = C[(i + 4 * quad) * N + col];
        for (unsigned kb = 0; kb < 2; kb++) { // K blocks of 16
            unsigned k = kb * 16 + quad * 4;
            uint32_t a[2], b[2];
            a[0] = PACK(A[col * K2 + k], A[col * K2 + k + 1]);
            a[1] = PACK(A[col * K2 + k + 2], A[col * K2 + k + 3]);
            b[0] = PACK(B[k * N + col], B[(k + 1) * N + col]);
            b[1] = PACK(B[(k + 2) * N + col], B[(k + 3) * N + col]);
            if (p.bf16)
                ckt_mfma_16x16x16_bf16(acc, a, b, acc);
            else
                ckt_mfma_16x16x16_f16(acc, a, b, acc);
        }
        for (unsigned i = 0; i < 4; i++)
            D[(i + 4 * quad) * N + col] = acc[i];
    }
#else
    (void)p;
#endif
}

class Mfma : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(Mfma, MatchesHost)
{
#if !CKT_HAS_MFMA
    GTEST_SKIP() << "no MFMA on " CKT_ARCH_NAME;
#else
    const int shape = std::get<0>(GetParam()), bf16 = std::get<1>(GetParam()), warps = 2;
    const int M = shape ? 16 : 32, N = M, K2 = shape ? 32 : 16;
    auto a = random_ints(warps * M * K2, -4, 4, 11 + bf16), b = random_ints(warps * K2 * N, -4, 4, 13 + shape);
    auto c = random_ints(warps * M * N, -64, 64, 17);
    std::vector<uint16_t> ah(a.size()), bh(b.size());
    for (size_t i = 0; i < a.size(); i++)
        ah[i] = to_bits(a[i], bf16);
    for (size_t i = 0; i < b.size(); i++)
        bh[i] = to_bits(b[i], bf16);
    DeviceBuf da(ah.size() * 2), db(bh.size() * 2), dc(c.size() * 4), dd(c.size() * 4);
    da.put(ah);
    db.put(bh);
    dc.put(c);
    mma_params p = {(const uint16_t *)da.p, (const uint16_t *)db.p, (const float *)dc.p, (float *)dd.p, bf16, shape};
    ASSERT_EQ(launch(CKT_KERNEL_REF(mfma_kernel), warps * 64, &p), CKT_SUCCESS) << ckt_last_error();
    std::vector<float> d(c.size());
    dd.get(d);
    for (int w = 0; w < warps; w++) {
        auto ref = matmul_ref(a, b, c, M, N, K2, w * M * K2, w * K2 * N, w * M * N);
        for (int i = 0; i < M * N; i++)
            ASSERT_EQ(d[w * M * N + i], ref[i]) << "wave " << w << " row " << i / N << " col " << i % N;
    }
#endif
}

INSTANTIATE_TEST_SUITE_P(ShapesAndTypes, Mfma, ::testing::Combine(::testing::Values(0, 1), ::testing::Values(0, 1)),
                         [](const ::testing::TestParamInfo<std::tuple<int, int>> &i) {
                             return std::string(std::get<0>(i.param) ? "16x16x16_" : "32x32x8_") +
                                    (std::get<1>(i.param) ? "bf16" : "f16");
                         });

// >>MFMA fp8 (gfx940): v_mfma_f32_32x32x16_fp8_fp8 and _16x16x32_fp8_fp8.
// CDNA3 ISA and CK's xdlops_gemm.hpp (mfma_f32_32x32x16f8f8: k_per_blk 8,
// 2 input blocks; 16x16x32f8f8: 8, 4 blocks): lane l holds the 8 bytes
// A[l%M][8(l/M) + e] and B[8(l/M) + e][l%M], e = 0..7, byte e of the 64-bit
// operand; d as the 16-bit shapes. The bytes are OCP e4m3 (ckt's storage),
// read by the instruction as FNUZ: the host product uses half of each OCP
// value, so the test also checks the format relation the fp8 forward uses.
typedef struct mfma_fp8_params {
    const uint8_t *a; // [warp][M][2K] row-major, OCP e4m3 bytes
    const uint8_t *b; // [warp][2K][M]
    const float *c;   // [warp][M][M]
    float *d;         // [warp][M][M]
    int shape;        // 0 = 32x32x16, 1 = 16x16x32
} mfma_fp8_params;

CKT_KERNEL(mfma_fp8_kernel, mfma_fp8_params, p)
{
#if CKT_HAS_MFMA_FP8
    unsigned w = ckt_warp_id(), lane = ckt_lane_id();
    const unsigned M = p.shape ? 16 : 32, K2 = p.shape ? 64 : 32, R = M * M / 64;
    unsigned i = lane % M, q = lane / M;
    const uint8_t *A = p.a + w * M * K2, *B = p.b + w * K2 * M;
    const float *C = p.c + w * M * M;
    float *D = p.d + w * M * M;
    float acc[16];
    for (unsigned r = 0; r < R; r++)
        acc[r] = C[(M == 32 ? 8 * (r / 4) + 4 * q + r % 4 : 4 * q + r) * M + i];
    for (unsigned kb = 0; kb < 2; kb++) { // K blocks of one instruction
        unsigned k = kb * (K2 / 2) + 8 * q;
        uint32_t a[2] = {0, 0}, b[2] = {0, 0};
        for (unsigned e = 0; e < 8; e++) {
            a[e / 4] |= (uint32_t)A[i * K2 + k + e] << (8 * (e % 4));
            b[e / 4] |= (uint32_t)B[(k + e) * M + i] << (8 * (e % 4));
        }
        if (p.shape)
            ckt_mfma_16x16x32_e4m3(acc, a, b, acc);
        else
            ckt_mfma_32x32x16_e4m3(acc, a, b, acc);
    }
    for (unsigned r = 0; r < R; r++)
        D[(M == 32 ? 8 * (r / 4) + 4 * q + r % 4 : 4 * q + r) * M + i] = acc[r];
#else
    (void)p;
#endif
}

class MfmaFp8 : public ::testing::TestWithParam<int> {};

// On AMD the host pass cannot see the device's architecture: the kernel has
// a body in the gfx940 build only, so ask the device (ckt_rt_device_props
// names it "... (gfx940:...)").
bool device_has_mfma_fp8()
{
#if defined(CKT_BACKEND_AMD)
    ckt_device_props d;
    return ckt_rt_device_props(&d) == CKT_SUCCESS && strstr(d.name, "(gfx94") != nullptr;
#elif defined(CKT_HAS_MFMA_FP8)
    return true;
#else
    return false;
#endif
}

TEST_P(MfmaFp8, MatchesHostWithFnuzInputs)
{
#if !CKT_HAS_MFMA
    GTEST_SKIP() << "no MFMA on " CKT_ARCH_NAME;
#else
    if (!device_has_mfma_fp8())
        GTEST_SKIP() << "no fp8 MFMA on this device (gfx940-942 only)";
    const int shape = GetParam(), warps = 2, M = shape ? 16 : 32, K2 = shape ? 64 : 32;
    // e4m3 bytes of small integers and halves (exact products and sums)
    auto bytes = [](size_t n, uint64_t seed) {
        auto x = random_ints(n, -12, 12, seed);
        std::vector<uint8_t> v(n);
        for (size_t i = 0; i < n; i++)
            v[i] = ckt_e4m3_from_f32(x[i] / 2);
        return v;
    };
    auto ab = bytes(warps * M * K2, 21 + shape), bb = bytes(warps * K2 * M, 23 + shape);
    auto c = random_ints(warps * M * M, -64, 64, 27);
    std::vector<float> a(ab.size()), b(bb.size());
    for (size_t i = 0; i < ab.size(); i++)
        a[i] = ckt_f32_from_e4m3(ab[i]) / 2; // the FNUZ reading of an OCP byte
    for (size_t i = 0; i < bb.size(); i++)
        b[i] = ckt_f32_from_e4m3(bb[i]) / 2;
    DeviceBuf da(ab.size()), db(bb.size()), dc(c.size() * 4), dd(c.size() * 4);
    da.put(ab);
    db.put(bb);
    dc.put(c);
    mfma_fp8_params p = {(const uint8_t *)da.p, (const uint8_t *)db.p, (const float *)dc.p, (float *)dd.p, shape};
    ASSERT_EQ(launch(CKT_KERNEL_REF(mfma_fp8_kernel), warps * 64, &p), CKT_SUCCESS) << ckt_last_error();
    std::vector<float> d(c.size());
    dd.get(d);
    for (int w = 0; w < warps; w++) {
        auto ref = matmul_ref(a, b, c, M, M, K2, w * M * K2, w * K2 * M, w * M * M);
        for (int i = 0; i < M * M; i++)
            ASSERT_EQ(d[w * M * M + i], ref[i]) << "wave " << w << " row " << i / M << " col " << i % M;
    }
#endif
}

INSTANTIATE_TEST_SUITE_P(Shapes, MfmaFp8, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int> &i) { return i.param ? "16x16x32" : "32x32x16"; });

// >>async copies
// Zero fill: thread t copies 16, 8 and 4 bytes with src_bytes = t % 17, t % 9,
// t % 5, and the block reads back a neighbour's chunk after the wait + barrier.
#define CP_THREADS 64
typedef struct cp_params {
    const unsigned char *src; // CP_THREADS * 28 bytes
    unsigned char *out;       // CP_THREADS * 28 bytes
} cp_params;

CKT_KERNEL(cp_async_fill_kernel, cp_params, p)
{
    CKT_SHARED_ARRAY(unsigned char, s16, CP_THREADS * 16);
    CKT_SHARED_ARRAY(unsigned char, s8, CP_THREADS * 8);
    CKT_SHARED_ARRAY(unsigned char, s4, CP_THREADS * 4);
    unsigned t = ckt_thread_idx_x(), u = (t + 1) % CP_THREADS;
    const unsigned char *g16 = p.src, *g8 = p.src + CP_THREADS * 16, *g4 = g8 + CP_THREADS * 8;
    ckt_cp_async_16(s16 + 16 * t, g16 + 16 * t, t % 17);
    ckt_cp_async_8(s8 + 8 * t, g8 + 8 * t, t % 9);
    ckt_cp_async_4(s4 + 4 * t, g4 + 4 * t, t % 5);
    ckt_cp_async_commit();
    ckt_cp_async_wait(0);
    ckt_block_sync();
    for (unsigned i = 0; i < 16; i++)
        p.out[16 * u + i] = s16[16 * u + i];
    for (unsigned i = 0; i < 8; i++)
        p.out[CP_THREADS * 16 + 8 * u + i] = s8[8 * u + i];
    for (unsigned i = 0; i < 4; i++)
        p.out[CP_THREADS * 24 + 4 * u + i] = s4[4 * u + i];
}

TEST(CpAsync, CopiesAndZeroFills)
{
    const int bytes = CP_THREADS * 28;
    std::vector<unsigned char> src(bytes), out(bytes);
    for (int i = 0; i < bytes; i++)
        src[i] = (unsigned char)(1 + i % 251);
    DeviceBuf dsrc(bytes), dout(bytes);
    dsrc.put(src);
    cp_params p = {(const unsigned char *)dsrc.p, (unsigned char *)dout.p};
    ASSERT_EQ(launch(CKT_KERNEL_REF(cp_async_fill_kernel), CP_THREADS, &p), CKT_SUCCESS) << ckt_last_error();
    dout.get(out);
    const int size[3] = {16, 8, 4}, base[3] = {0, CP_THREADS * 16, CP_THREADS * 24};
    for (int s = 0; s < 3; s++)
        for (int t = 0; t < CP_THREADS; t++) {
            int src_bytes = t % (size[s] + 1);
            for (int i = 0; i < size[s]; i++) {
                int at = base[s] + size[s] * t + i;
                ASSERT_EQ(out[at], i < src_bytes ? src[at] : 0) << size[s] << "-byte copy, thread " << t << " byte " << i;
            }
        }
}

// Groups: what a thread sees of its own copies before and after each wait.
// Snapshots per thread: [0] X before any wait, [1] X after wait(1), [2] Y
// after wait(1), [3] Y after wait(0), [4] Z (never committed) after wait(0),
// [5] Z after wait_all.
typedef struct cp_group_params {
    const uint32_t *src; // [3][CP_THREADS][4]: X, Y, Z sources
    uint32_t *out;       // [6][CP_THREADS][4]
} cp_group_params;

CKT_KERNEL(cp_async_group_kernel, cp_group_params, p)
{
    CKT_SHARED_ARRAY(uint32_t, sx, CP_THREADS * 4);
    CKT_SHARED_ARRAY(uint32_t, sy, CP_THREADS * 4);
    CKT_SHARED_ARRAY(uint32_t, sz, CP_THREADS * 4);
    unsigned t = ckt_thread_idx_x();
    uint32_t *x = sx + 4 * t, *y = sy + 4 * t, *z = sz + 4 * t;
    const uint32_t *gx = p.src + 4 * t, *gy = gx + CP_THREADS * 4, *gz = gy + CP_THREADS * 4;
    uint32_t *o = p.out + 4 * t;
    const unsigned snap = CP_THREADS * 4;
    ckt_cp_async_16(x, gx, 16);
    ckt_cp_async_commit(); // group 0: X
    ckt_cp_async_16(y, gy, 16);
    ckt_cp_async_commit(); // group 1: Y
    ckt_cp_async_16(z, gz, 16); // not committed
    for (int i = 0; i < 4; i++)
        o[0 * snap + i] = x[i];
    ckt_cp_async_wait(1); // group 0 done
    for (int i = 0; i < 4; i++) {
        o[1 * snap + i] = x[i];
        o[2 * snap + i] = y[i];
    }
    ckt_cp_async_wait(0); // groups 0 and 1 done; Z is in no group
    for (int i = 0; i < 4; i++) {
        o[3 * snap + i] = y[i];
        o[4 * snap + i] = z[i];
    }
    ckt_cp_async_wait_all();
    for (int i = 0; i < 4; i++)
        o[5 * snap + i] = z[i];
}

TEST(CpAsync, DataVisibleExactlyAfterTheCoveringWait)
{
    const int words = CP_THREADS * 4;
    std::vector<uint32_t> src(3 * words), out(6 * words);
    for (int i = 0; i < 3 * words; i++)
        src[i] = 0x01000000u * (uint32_t)(1 + i / words) + (uint32_t)i;
    DeviceBuf dsrc(src.size() * 4), dout(out.size() * 4);
    dsrc.put(src);
    cp_group_params p = {(const uint32_t *)dsrc.p, (uint32_t *)dout.p};
    ASSERT_EQ(launch(CKT_KERNEL_REF(cp_async_group_kernel), CP_THREADS, &p), CKT_SUCCESS) << ckt_last_error();
    dout.get(out);
    const uint32_t *X = &src[0], *Y = &src[words], *Z = &src[2 * words];
    const uint32_t poison = 0xffffffffu; // fresh shared memory on the emulator
    for (int i = 0; i < words; i++) {
        ASSERT_EQ(out[1 * words + i], X[i]) << "X after wait(1), word " << i;
        ASSERT_EQ(out[3 * words + i], Y[i]) << "Y after wait(0), word " << i;
        ASSERT_EQ(out[5 * words + i], Z[i]) << "Z after wait_all, word " << i;
#if CKT_HAS_CP_ASYNC && defined(CKT_BACKEND_CPU)
        // The emulator performs a copy only at the wait that covers it.
        ASSERT_EQ(out[0 * words + i], poison) << "X visible before any wait, word " << i;
        ASSERT_EQ(out[2 * words + i], poison) << "Y visible before its wait, word " << i;
        ASSERT_EQ(out[4 * words + i], poison) << "uncommitted Z visible after wait(0), word " << i;
#elif !CKT_HAS_CP_ASYNC
        // Synchronous copies (AMD, the cdna profile): visible at once.
        (void)poison;
        ASSERT_EQ(out[0 * words + i], X[i]);
        ASSERT_EQ(out[2 * words + i], Y[i]);
        ASSERT_EQ(out[4 * words + i], Z[i]);
#else
        (void)poison; // a GPU may complete early: nothing to check before the wait
#endif
    }
}

// More copies in flight than the emulator queues (it completes the oldest
// early, as hardware may): all must arrive, across 10 groups.
#define CP_MANY 80
CKT_KERNEL(cp_async_many_kernel, cp_params, p)
{
    CKT_SHARED_ARRAY(uint32_t, s, CP_THREADS * CP_MANY);
    unsigned t = ckt_thread_idx_x();
    const uint32_t *g = (const uint32_t *)p.src;
    for (unsigned i = 0; i < CP_MANY; i++) {
        ckt_cp_async_4(&s[i * CP_THREADS + t], &g[i * CP_THREADS + t], 4);
        if (i % 8 == 7)
            ckt_cp_async_commit();
    }
    ckt_cp_async_wait(0);
    ckt_block_sync();
    uint32_t *o = (uint32_t *)p.out;
    for (unsigned i = 0; i < CP_MANY; i++)
        o[i * CP_THREADS + t] = s[i * CP_THREADS + (t + 5) % CP_THREADS];
}

TEST(CpAsync, ManyGroupsInFlight)
{
    const int words = CP_THREADS * CP_MANY;
    std::vector<uint32_t> src(words), out(words);
    for (int i = 0; i < words; i++)
        src[i] = 0x9e3779b9u * (uint32_t)i;
    DeviceBuf dsrc(words * 4), dout(words * 4);
    dsrc.put(src);
    cp_params p = {(const unsigned char *)dsrc.p, (unsigned char *)dout.p};
    ASSERT_EQ(launch(CKT_KERNEL_REF(cp_async_many_kernel), CP_THREADS, &p), CKT_SUCCESS) << ckt_last_error();
    dout.get(out);
    for (int i = 0; i < CP_MANY; i++)
        for (int t = 0; t < CP_THREADS; t++)
            ASSERT_EQ(out[i * CP_THREADS + t], src[i * CP_THREADS + (t + 5) % CP_THREADS]) << "copy " << i << " thread " << t;
}

// >>buffer loads and stores
// Thread t accesses byte offset (t - 8) * N (N = 4, 8, 16) of a num_bytes
// range: negative, inside, straddling the end and past it.
#define BUF_THREADS 64
#define BUF_RANGE 500 // a u32 at 496 fits; u32x2 at 496 and u32x4 at 496 straddle the end
typedef struct buf_params {
    const unsigned char *src; // 1024 readable bytes
    uint32_t *loaded;         // [BUF_THREADS][7]: u32, u32x2, u32x4
    unsigned char *dst;       // 3 regions of 1024 bytes, prefilled by the host
    int64_t num_bytes;
} buf_params;

CKT_KERNEL(buffer_kernel, buf_params, p)
{
    unsigned t = ckt_thread_idx_x();
    int64_t i = (int64_t)t - 8;
    uint32_t *o = p.loaded + 7 * t;
    uint32_t v1 = ckt_buffer_load_u32(p.src, p.num_bytes, i * 4);
    ckt_u32x2 v2 = ckt_buffer_load_u32x2(p.src, p.num_bytes, i * 8);
    ckt_u32x4 v4 = ckt_buffer_load_u32x4(p.src, p.num_bytes, i * 16);
    o[0] = v1;
    o[1] = v2.x;
    o[2] = v2.y;
    o[3] = v4.x;
    o[4] = v4.y;
    o[5] = v4.z;
    o[6] = v4.w;
    uint32_t tag = 0xa0000000u + 0x100u * t;
    ckt_buffer_store_u32(p.dst, p.num_bytes, i * 4, tag);
    ckt_buffer_store_u32x2(p.dst + 1024, p.num_bytes, i * 8, ckt_u32x2_make(tag + 1, tag + 2));
    ckt_buffer_store_u32x4(p.dst + 2048, p.num_bytes, i * 16, ckt_u32x4_make(tag + 3, tag + 4, tag + 5, tag + 6));
}

TEST(Buffer, OutOfRangeLoadsReadZeroAndStoresAreDropped)
{
    std::vector<unsigned char> src(1024), dst(3 * 1024, 0xee), dst_init(dst);
    for (int i = 0; i < 1024; i++)
        src[i] = (unsigned char)(7 + i * 13);
    std::vector<uint32_t> loaded(BUF_THREADS * 7);
    DeviceBuf dsrc(1024), dloaded(loaded.size() * 4), ddst(dst.size());
    dsrc.put(src);
    ddst.put(dst);
    buf_params p = {(const unsigned char *)dsrc.p, (uint32_t *)dloaded.p, (unsigned char *)ddst.p, BUF_RANGE};
    ASSERT_EQ(launch(CKT_KERNEL_REF(buffer_kernel), BUF_THREADS, &p), CKT_SUCCESS) << ckt_last_error();
    dloaded.get(loaded);
    ddst.get(dst);
    auto word = [&](int64_t byte) {
        uint32_t w;
        memcpy(&w, &src[byte], 4);
        return w;
    };
    const int n_of[3] = {4, 8, 16}, first[3] = {0, 1, 3};
    for (int t = 0; t < BUF_THREADS; t++) {
        int64_t i = t - 8;
        for (int s = 0; s < 3; s++) {
            int64_t n = n_of[s], off = i * n;
            bool in = off >= 0 && off + n <= BUF_RANGE;
            for (int w = 0; w < n / 4; w++)
                ASSERT_EQ(loaded[7 * t + first[s] + w], in ? word(off + 4 * w) : 0u)
                    << n << "-byte load at " << off << " word " << w;
            if (!in)
                continue;
            for (int w = 0; w < n / 4; w++) { // the stored words, where in range
                uint32_t got;
                memcpy(&got, &dst[1024 * s + off + 4 * w], 4);
                ASSERT_EQ(got, 0xa0000000u + 0x100u * t + first[s] + w) << n << "-byte store at " << off;
            }
        }
    }
    // Nothing else changed: no byte at or past the range end, none before a
    // region's base (a negative offset would land in the previous region).
    for (int s = 0; s < 3; s++)
        for (int b = 0; b < 1024; b++) {
            int n = n_of[s], chunk = b / n;
            if (chunk < BUF_THREADS - 8 && (chunk + 1) * n <= BUF_RANGE)
                continue; // written by thread chunk + 8, checked above
            ASSERT_EQ(dst[1024 * s + b], dst_init[1024 * s + b]) << n << "-byte stores changed byte " << b;
        }
}

// >>global vector loads and stores: each lane its own 16-byte aligned
// address (thread t reads vector (t * 7) % 64 of src, writes vector t of dst)
typedef struct glob_params {
    const unsigned char *src; // 64 vectors
    unsigned char *dst;       // 64 vectors
} glob_params;

CKT_KERNEL(global_vec_kernel, glob_params, p)
{
    const unsigned t = ckt_thread_idx_x();
    const ckt_u32x4 v = ckt_global_load_u32x4(p.src + 16 * ((t * 7) % 64));
    ckt_global_store_u32x4(p.dst + 16 * t, ckt_u32x4_make(v.w, v.z, v.y, v.x + t));
}

TEST(GlobalVec, EachLaneItsOwnAddress)
{
    std::vector<unsigned char> src(1024), dst(1024, 0xee);
    for (int i = 0; i < 1024; i++)
        src[i] = (unsigned char)(3 + i * 29);
    DeviceBuf dsrc(1024), ddst(1024);
    dsrc.put(src);
    ddst.put(dst);
    glob_params p = {(const unsigned char *)dsrc.p, (unsigned char *)ddst.p};
    ASSERT_EQ(launch(CKT_KERNEL_REF(global_vec_kernel), 64, &p), CKT_SUCCESS) << ckt_last_error();
    ddst.get(dst);
    for (int t = 0; t < 64; t++) {
        uint32_t in[4], out[4];
        memcpy(in, &src[16 * ((t * 7) % 64)], 16);
        memcpy(out, &dst[16 * t], 16);
        EXPECT_EQ(out[0], in[3]) << t;
        EXPECT_EQ(out[1], in[2]) << t;
        EXPECT_EQ(out[2], in[1]) << t;
        EXPECT_EQ(out[3], in[0] + (uint32_t)t) << t;
    }
}

} // namespace
