// Warp collectives, block barrier and shared memory on every backend.
#include "ckt/host.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

enum { kShflXor, kShflIdx, kShflUp, kShflDown, kBallot };

typedef struct shfl_params {
    const uint32_t *in;
    uint32_t *out;
    int op;
    unsigned arg;
} shfl_params;

CKT_KERNEL(shfl_kernel, shfl_params, p)
{
    unsigned t = ckt_thread_rank();
    uint32_t v = p.in[t], r = 0;
    switch (p.op) {
    case kShflXor: r = ckt_warp_shfl_xor_u32(v, p.arg); break;
    case kShflIdx: r = ckt_warp_shfl_idx_u32(v, p.arg); break;
    case kShflUp: r = ckt_warp_shfl_up_u32(v, p.arg); break;
    case kShflDown: r = ckt_warp_shfl_down_u32(v, p.arg); break;
    default: {
        uint64_t m = ckt_warp_ballot(v & 1u);
        r = (uint32_t)(m >> (32 * (p.arg & 1))); // arg selects the half
    }
    }
    p.out[t] = r;
}

// Expected result of a warp op for lane `lane` of a full warp, from the
// CUDA/HIP definitions.
uint32_t expect(const std::vector<uint32_t> &in, unsigned t, int op, unsigned arg)
{
    const unsigned W = CKT_WARP_SIZE, base = t / W * W, lane = t % W;
    switch (op) {
    case kShflXor: return (lane ^ arg) < W ? in[base + (lane ^ arg)] : in[t];
    case kShflIdx: return in[base + arg % W];
    case kShflUp: return lane >= arg ? in[t - arg] : in[t];
    case kShflDown: return lane + arg < W ? in[t + arg] : in[t];
    default: {
        uint64_t m = 0;
        for (unsigned i = 0; i < W; i++)
            m |= (uint64_t)(in[base + i] & 1u) << i;
        return (uint32_t)(m >> (32 * (arg & 1)));
    }
    }
}

TEST(Warp, ShufflesAndBallotMatchDefinition)
{
    const unsigned threads = 4 * CKT_WARP_SIZE;
    std::vector<uint32_t> in(threads), out(threads);
    for (unsigned i = 0; i < threads; i++)
        in[i] = i * 2654435761u;
    void *din, *dout;
    ASSERT_EQ(ckt_rt_malloc(&din, threads * 4), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&dout, threads * 4), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(din, in.data(), threads * 4, CKT_H2D), CKT_SUCCESS);
    const unsigned args[] = {0, 1, 3, 7, 16, 31, CKT_WARP_SIZE - 1};
    for (int op = kShflXor; op <= kBallot; op++)
        for (unsigned arg : args) {
            shfl_params p = {(const uint32_t *)din, (uint32_t *)dout, op, arg};
            ASSERT_EQ(ckt_rt_launch(CKT_KERNEL_REF(shfl_kernel), ckt_dim3_make(1, 1, 1),
                                    ckt_dim3_make(threads, 1, 1), 0, NULL, &p),
                      CKT_SUCCESS)
                << ckt_last_error();
            ASSERT_EQ(ckt_rt_memcpy(out.data(), dout, threads * 4, CKT_D2H), CKT_SUCCESS);
            for (unsigned t = 0; t < threads; t++)
                ASSERT_EQ(out[t], expect(in, t, op, arg)) << "op " << op << " arg " << arg << " thread " << t;
        }
    ckt_rt_free(din);
    ckt_rt_free(dout);
}

// Block sum: warp shuffles, then shared memory across warps.
typedef struct reduce_params {
    const float *x;
    float *sums; // one per block
    int n;
} reduce_params;

#define REDUCE_THREADS 256

CKT_KERNEL(block_sum_kernel, reduce_params, p)
{
    CKT_SHARED_ARRAY(float, partial, REDUCE_THREADS / CKT_WARP_SIZE);
    int i = (int)(ckt_block_idx_x() * ckt_block_dim_x() + ckt_thread_idx_x());
    float v = i < p.n ? p.x[i] : 0.0f;
    for (unsigned m = CKT_WARP_SIZE / 2; m > 0; m /= 2)
        v += ckt_warp_shfl_xor_f32(v, m);
    if (ckt_lane_id() == 0)
        partial[ckt_warp_id()] = v;
    ckt_block_sync();
    if (ckt_thread_idx_x() == 0) {
        float s = 0.0f;
        for (unsigned w = 0; w < REDUCE_THREADS / CKT_WARP_SIZE; w++)
            s += partial[w];
        p.sums[ckt_block_idx_x()] = s;
    }
}

TEST(Block, SumWithShufflesAndSharedMemory)
{
    for (int n : {1, 100, 256, 257, 5000}) {
        int blocks = (n + REDUCE_THREADS - 1) / REDUCE_THREADS;
        std::vector<float> x(n), sums(blocks);
        ASSERT_EQ(ckt_fill(x.data(), CKT_F32, n, ckt_init_int(-4, 4), 9), CKT_SUCCESS);
        void *dx, *ds;
        ASSERT_EQ(ckt_rt_malloc(&dx, n * 4), CKT_SUCCESS);
        ASSERT_EQ(ckt_rt_malloc(&ds, blocks * 4), CKT_SUCCESS);
        ASSERT_EQ(ckt_rt_memcpy(dx, x.data(), n * 4, CKT_H2D), CKT_SUCCESS);
        reduce_params p = {(const float *)dx, (float *)ds, n};
        ASSERT_EQ(ckt_rt_launch(CKT_KERNEL_REF(block_sum_kernel), ckt_dim3_make(blocks, 1, 1),
                                ckt_dim3_make(REDUCE_THREADS, 1, 1), 0, NULL, &p),
                  CKT_SUCCESS)
            << ckt_last_error();
        ASSERT_EQ(ckt_rt_memcpy(sums.data(), ds, blocks * 4, CKT_D2H), CKT_SUCCESS);
        for (int b = 0; b < blocks; b++) {
            float want = 0; // integers: exact in any order
            for (int i = b * REDUCE_THREADS; i < n && i < (b + 1) * REDUCE_THREADS; i++)
                want += x[i];
            EXPECT_EQ(sums[b], want) << "n " << n << " block " << b;
        }
        ckt_rt_free(dx);
        ckt_rt_free(ds);
    }
}

// Thread ids in a 3-D block and grid, and dynamic shared memory.
typedef struct ids_params {
    unsigned *out; // 4 words per thread: rank, lane, warp, block linear id
} ids_params;

CKT_KERNEL(ids_kernel, ids_params, p)
{
    CKT_DYNAMIC_SHARED(unsigned, scratch);
    unsigned r = ckt_thread_rank();
    unsigned nthreads = ckt_block_dim_x() * ckt_block_dim_y() * ckt_block_dim_z();
    unsigned b = (ckt_block_idx_z() * ckt_grid_dim_y() + ckt_block_idx_y()) * ckt_grid_dim_x() + ckt_block_idx_x();
    scratch[nthreads - 1 - r] = r; // reversed through shared memory
    ckt_block_sync();
    unsigned *o = p.out + 4 * (b * nthreads + r);
    o[0] = scratch[nthreads - 1 - r];
    o[1] = ckt_lane_id();
    o[2] = ckt_warp_id();
    o[3] = b;
}

TEST(Block, ThreadIdsIn3DAndDynamicShared)
{
    ckt_dim3 grid = ckt_dim3_make(2, 3, 2), block = ckt_dim3_make(8, 4, 3);
    unsigned nthreads = 96, nblocks = 12, words = 4 * nthreads * nblocks;
    void *d;
    ASSERT_EQ(ckt_rt_malloc(&d, words * 4), CKT_SUCCESS);
    ids_params p = {(unsigned *)d};
    ASSERT_EQ(ckt_rt_launch(CKT_KERNEL_REF(ids_kernel), grid, block, nthreads * 4, NULL, &p), CKT_SUCCESS)
        << ckt_last_error();
    std::vector<unsigned> out(words);
    ASSERT_EQ(ckt_rt_memcpy(out.data(), d, words * 4, CKT_D2H), CKT_SUCCESS);
    for (unsigned b = 0; b < nblocks; b++)
        for (unsigned r = 0; r < nthreads; r++) {
            const unsigned *o = &out[4 * (b * nthreads + r)];
            ASSERT_EQ(o[0], r);
            ASSERT_EQ(o[1], r % CKT_WARP_SIZE);
            ASSERT_EQ(o[2], r / CKT_WARP_SIZE);
            ASSERT_EQ(o[3], b);
        }
    ckt_rt_free(d);
}

} // namespace
