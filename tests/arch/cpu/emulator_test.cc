// The CPU SIMT emulator itself (cpu only, nv and cdna profiles): misuse
// diagnostics, schedule orders exposing a race, launches after a failure,
// blocks on several OS threads, stack overflow and (under --config=asan)
// AddressSanitizer inside a kernel.
#include "ckt/host.h"

#include <gtest/gtest.h>

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

namespace {

const unsigned W = CKT_WARP_SIZE;

// Each wait point is a one-line function with its line number beside it, so
// that a test can name the file:line the emulator must report.
#define WAIT_POINT_SYNC(name)                                                                     \
    void name(void) { ckt_block_sync(); }                                                         \
    const int name##_line = __LINE__;
#define WAIT_POINT_SHFL(name)                                                                     \
    uint32_t name(uint32_t v, unsigned src) { return ckt_warp_shfl_idx_u32(v, src); }             \
    const int name##_line = __LINE__;

WAIT_POINT_SYNC(sync_a)
WAIT_POINT_SYNC(sync_b)
WAIT_POINT_SHFL(shfl_a)
WAIT_POINT_SHFL(shfl_b)

// "tests/arch/cpu/emulator_test.cc:123"
std::string At(int line) { return std::string(__FILE__) + ":" + std::to_string(line); }

// "warp 1 lanes 16-31: have exited" with lanes [lo, hi]; "warps 2-3 ..." when
// warp_hi > warp_lo.
std::string Lanes(unsigned warp_lo, unsigned warp_hi, unsigned lo, unsigned hi, const std::string &what)
{
    std::string s = warp_hi > warp_lo ? "warps " + std::to_string(warp_lo) + "-" + std::to_string(warp_hi)
                                      : "warp " + std::to_string(warp_lo);
    s += lo == hi ? " lane " + std::to_string(lo) : " lanes " + std::to_string(lo) + "-" + std::to_string(hi);
    return s + ": " + what;
}

std::string Barrier(int line) { return "wait at block barrier at " + At(line); }
std::string Collective(int line) { return "wait in warp collective at " + At(line); }

// One parameter struct for the misuse kernels: `out` gets something so that
// nothing is optimised away.
typedef struct misuse_params {
    uint32_t *out;
    unsigned arg;
} misuse_params;

ckt_status Launch(ckt_kernel_ref k, unsigned blocks, unsigned threads, misuse_params *p)
{
    return ckt_rt_launch(k, ckt_dim3_make(blocks, 1, 1), ckt_dim3_make(threads, 1, 1), 0, NULL, p);
}

// Expects the launch to have failed with CKT_ERROR_KERNEL and every piece in
// the report.
void ExpectReport(ckt_status s, const std::vector<std::string> &pieces)
{
    ASSERT_EQ(s, CKT_ERROR_KERNEL) << ckt_status_name(s);
    std::string msg = ckt_last_error();
    for (const std::string &p : pieces)
        EXPECT_NE(msg.find(p), std::string::npos) << "missing \"" << p << "\" in:\n" << msg;
}

// >>misuse diagnostics

// (a) Block 1: the upper half of warp 1 returns before the barrier.
CKT_KERNEL(early_exit_kernel, misuse_params, p)
{
    unsigned t = ckt_thread_rank();
    if (ckt_block_idx_x() == 1 && t >= W + W / 2)
        return;
    sync_a();
    p.out[ckt_block_idx_x() * ckt_block_dim_x() + t] = t;
}

TEST(Misuse, BarrierReachedByPartOfTheBlock)
{
    misuse_params p = {NULL, 0};
    ASSERT_EQ(ckt_rt_malloc((void **)&p.out, 4 * W * 4), CKT_SUCCESS);
    ExpectReport(Launch(CKT_KERNEL_REF(early_exit_kernel), 2, 2 * W, &p),
                 {"block (1,0,0): barrier reached by only part of the block",
                  Lanes(0, 0, 0, W - 1, Barrier(sync_a_line)),
                  Lanes(1, 1, 0, W / 2 - 1, Barrier(sync_a_line)),
                  Lanes(1, 1, W / 2, W - 1, "have exited")});
    ckt_rt_free(p.out);
}

// (b) if/else, each with its own barrier.
CKT_KERNEL(two_barriers_kernel, misuse_params, p)
{
    unsigned t = ckt_thread_rank();
    if (t < W / 2)
        sync_a();
    else
        sync_b();
    p.out[t] = t;
}

TEST(Misuse, BarriersAtDifferentCallSites)
{
    misuse_params p = {NULL, 0};
    ASSERT_EQ(ckt_rt_malloc((void **)&p.out, 2 * W * 4), CKT_SUCCESS);
    ExpectReport(Launch(CKT_KERNEL_REF(two_barriers_kernel), 1, 2 * W, &p),
                 {"block (0,0,0): threads wait at barriers at different call sites",
                  Lanes(0, 0, 0, W / 2 - 1, Barrier(sync_a_line)),
                  Lanes(0, 0, W / 2, W - 1, Barrier(sync_b_line)),
                  Lanes(1, 1, 0, W - 1, Barrier(sync_b_line))});
    ckt_rt_free(p.out);
}

// (c) Lanes 0-3 of warp 0 shuffle while the rest of the block is at a barrier.
CKT_KERNEL(collective_vs_barrier_kernel, misuse_params, p)
{
    unsigned t = ckt_thread_rank();
    uint32_t v = t;
    if (t < 4)
        v = shfl_a(v, 0);
    else
        sync_a();
    p.out[t] = v;
}

TEST(Misuse, CollectiveWhileOtherLanesWaitAtBarrier)
{
    misuse_params p = {NULL, 0};
    ASSERT_EQ(ckt_rt_malloc((void **)&p.out, 2 * W * 4), CKT_SUCCESS);
    ExpectReport(Launch(CKT_KERNEL_REF(collective_vs_barrier_kernel), 1, 2 * W, &p),
                 {"block (0,0,0): warp collective while other lanes of the warp wait elsewhere",
                  Lanes(0, 0, 0, 3, Collective(shfl_a_line)), Lanes(0, 0, 4, W - 1, Barrier(sync_a_line))});
    ckt_rt_free(p.out);
}

// (d) The two halves of warp 1 in different shuffles.
CKT_KERNEL(two_collectives_kernel, misuse_params, p)
{
    unsigned t = ckt_thread_rank();
    uint32_t v = t;
    if (t < W + W / 2)
        v = shfl_a(v, 1);
    else
        v = shfl_b(v, 2);
    p.out[t] = v;
}

TEST(Misuse, LanesOfOneWarpInDifferentCollectives)
{
    misuse_params p = {NULL, 0};
    ASSERT_EQ(ckt_rt_malloc((void **)&p.out, 2 * W * 4), CKT_SUCCESS);
    ExpectReport(Launch(CKT_KERNEL_REF(two_collectives_kernel), 1, 2 * W, &p),
                 {"block (0,0,0): lanes of one warp wait in different collectives",
                  Lanes(1, 1, 0, W / 2 - 1, Collective(shfl_a_line)),
                  Lanes(1, 1, W / 2, W - 1, Collective(shfl_b_line))});
    ckt_rt_free(p.out);
}

// (e) The last lane of warp 0 has returned; the others shuffle.
CKT_KERNEL(collective_after_exit_kernel, misuse_params, p)
{
    unsigned t = ckt_thread_rank();
    if (t == W - 1)
        return;
    p.out[t] = shfl_a(t, 0);
}

TEST(Misuse, CollectiveWhileSomeLanesExited)
{
    misuse_params p = {NULL, 0};
    ASSERT_EQ(ckt_rt_malloc((void **)&p.out, W * 4), CKT_SUCCESS);
    ExpectReport(Launch(CKT_KERNEL_REF(collective_after_exit_kernel), 1, W, &p),
                 {"block (0,0,0): warp collective while other lanes of the warp have exited",
                  Lanes(0, 0, 0, W - 2, Collective(shfl_a_line)), Lanes(0, 0, W - 1, W - 1, "have exited")});
    ckt_rt_free(p.out);
}

// (f) Deadlock: the last thread spins on a shared flag that the others would
// set after a barrier that they wait at, for the spinning thread. Deadlocks on
// a GPU too; the emulator's watchdog (CKT_EMU_TIMEOUT_S) reports it.
CKT_KERNEL(spin_deadlock_kernel, misuse_params, p)
{
    CKT_SHARED_ARRAY(int, flag, 1);
    unsigned t = ckt_thread_rank(), n = ckt_block_dim_x();
    if (t == 0)
        flag[0] = 0;
    sync_a();
    if (t == n - 1) {
        while (*(volatile int *)flag == 0) {
        }
    } else {
        sync_b();
        flag[0] = 1;
    }
    p.out[t] = t;
}

TEST(Misuse, DeadlockOnASpinWaitIsReported)
{
    misuse_params p = {NULL, 0};
    ASSERT_EQ(ckt_rt_malloc((void **)&p.out, 2 * W * 4), CKT_SUCCESS);
    setenv("CKT_EMU_TIMEOUT_S", "0.2", 1);
    ckt_status s = Launch(CKT_KERNEL_REF(spin_deadlock_kernel), 1, 2 * W, &p);
    unsetenv("CKT_EMU_TIMEOUT_S");
    char head[128];
    snprintf(head, sizeof head, "block (0,0,0): deadlock: thread (%u,0,0) (warp 1 lane %u) ran for over 0.2 s",
             2 * W - 1, W - 1);
    ExpectReport(s, {head, Lanes(0, 0, 0, W - 1, Barrier(sync_b_line)), Lanes(1, 1, 0, W - 2, Barrier(sync_b_line)),
                     Lanes(1, 1, W - 1, W - 1, "kept running without reaching a barrier or collective")});
    ckt_rt_free(p.out);
}

// (g) A partial warp (W + W/2 threads: warp 1 has W/2 lanes) reads lane W-1.
CKT_KERNEL(partial_warp_shfl_kernel, misuse_params, p)
{
    unsigned t = ckt_thread_rank();
    p.out[t] = shfl_a(t, W - 1);
}

TEST(Misuse, ShuffleReadsALaneThatThePartialWarpLacks)
{
    misuse_params p = {NULL, 0};
    ASSERT_EQ(ckt_rt_malloc((void **)&p.out, 2 * W * 4), CKT_SUCCESS);
    char head[160];
    snprintf(head, sizeof head,
             "block (0,0,0): lane 0 of warp 1 reads lane %u, which does not exist (partial warp of %u lanes)",
             W - 1, W / 2);
    ExpectReport(Launch(CKT_KERNEL_REF(partial_warp_shfl_kernel), 1, W + W / 2, &p),
                 {head, Lanes(1, 1, 0, W / 2 - 1, Collective(shfl_a_line))});
    ckt_rt_free(p.out);
}

// Uniform warps share one line: "warps 1-3 lanes 0-31: ...".
TEST(Misuse, WarpsThatWaitAlikeShareALine)
{
    misuse_params p = {NULL, 0};
    ASSERT_EQ(ckt_rt_malloc((void **)&p.out, 8 * W * 4), CKT_SUCCESS);
    ExpectReport(Launch(CKT_KERNEL_REF(two_barriers_kernel), 1, 4 * W, &p),
                 {Lanes(1, 3, 0, W - 1, Barrier(sync_b_line))});
    ckt_rt_free(p.out);
}

// >>launches after a failure, several OS threads

#define SUM_THREADS 128

typedef struct sum_params {
    const float *x;
    float *sums;   // one per block
    uint64_t *who; // the OS thread that ran each block (may be NULL)
    int n;
    int sleep_us;  // thread 0 of each block sleeps, to spread blocks over threads
} sum_params;

// Block sum through warp shuffles and shared memory: correct in any schedule.
CKT_KERNEL(block_sum_kernel, sum_params, p)
{
    CKT_SHARED_ARRAY(float, partial, SUM_THREADS / CKT_WARP_SIZE);
    unsigned b = ckt_block_idx_x(), t = ckt_thread_idx_x();
    int i = (int)(b * ckt_block_dim_x() + t);
    float v = i < p.n ? p.x[i] : 0.0f;
    for (unsigned m = CKT_WARP_SIZE / 2; m > 0; m /= 2)
        v += ckt_warp_shfl_xor_f32(v, m);
    if (ckt_lane_id() == 0)
        partial[ckt_warp_id()] = v;
    ckt_block_sync();
    if (t == 0) {
        float s = 0.0f;
        for (unsigned w = 0; w < SUM_THREADS / CKT_WARP_SIZE; w++)
            s += partial[w];
        p.sums[b] = s;
        if (p.who)
            p.who[b] = (uint64_t)pthread_self();
        if (p.sleep_us)
            usleep((useconds_t)p.sleep_us);
    }
}

struct SumRun {
    std::vector<float> sums;
    std::vector<uint64_t> who;
    ckt_status status;
};

SumRun RunBlockSum(const std::vector<float> &x, int sleep_us)
{
    int n = (int)x.size(), blocks = (n + SUM_THREADS - 1) / SUM_THREADS;
    SumRun r;
    r.sums.resize(blocks);
    r.who.resize(blocks);
    void *dx, *ds, *dw;
    ckt_rt_malloc(&dx, n * 4);
    ckt_rt_malloc(&ds, blocks * 4);
    ckt_rt_malloc(&dw, blocks * 8);
    ckt_rt_memcpy(dx, x.data(), n * 4, CKT_H2D);
    sum_params p = {(const float *)dx, (float *)ds, (uint64_t *)dw, n, sleep_us};
    r.status = ckt_rt_launch(CKT_KERNEL_REF(block_sum_kernel), ckt_dim3_make(blocks, 1, 1),
                             ckt_dim3_make(SUM_THREADS, 1, 1), 0, NULL, &p);
    ckt_rt_memcpy(r.sums.data(), ds, blocks * 4, CKT_D2H);
    ckt_rt_memcpy(r.who.data(), dw, blocks * 8, CKT_D2H);
    ckt_rt_free(dx);
    ckt_rt_free(ds);
    ckt_rt_free(dw);
    return r;
}

std::vector<float> SumInput(int n)
{
    std::vector<float> x(n);
    ckt_fill(x.data(), CKT_F32, n, ckt_init_int(-4, 4), 7);
    return x;
}

std::vector<float> SumReference(const std::vector<float> &x)
{
    std::vector<float> want((x.size() + SUM_THREADS - 1) / SUM_THREADS, 0.0f);
    for (size_t i = 0; i < x.size(); i++)
        want[i / SUM_THREADS] += x[i]; // small integers: exact in any order
    return want;
}

// A kernel whose threads keep a stack array alive across a barrier; with
// `fail`, half of the last warp returns first, so the launch fails with the
// other fibers parked mid-kernel (under ASan: with poisoned redzones, which
// must not leak into the fiber stacks of the next launch).
typedef struct stack_params {
    int *out;
    int fail;
} stack_params;

__attribute__((noinline)) int SumOf(const int *v, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s;
}

CKT_KERNEL(stack_array_kernel, stack_params, p)
{
    int local[24];
    unsigned t = ckt_thread_rank();
    for (int i = 0; i < 24; i++)
        local[i] = (int)t + i;
    if (p.fail && t >= 2 * W - W / 2)
        return;
    ckt_block_sync();
    p.out[t] = SumOf(local, 24) + (int)ckt_warp_shfl_xor_u32(t, 1);
}

TEST(Launch, AfterAFailedLaunchWorksNormally)
{
    int *out = NULL;
    ASSERT_EQ(ckt_rt_malloc((void **)&out, 2 * W * sizeof(int)), CKT_SUCCESS);
    for (int round = 0; round < 3; round++) {
        stack_params sp = {out, 1};
        EXPECT_EQ(ckt_rt_launch(CKT_KERNEL_REF(stack_array_kernel), ckt_dim3_make(4, 1, 1),
                                ckt_dim3_make(2 * W, 1, 1), 0, NULL, &sp),
                  CKT_ERROR_KERNEL);
        sp.fail = 0;
        ASSERT_EQ(ckt_rt_launch(CKT_KERNEL_REF(stack_array_kernel), ckt_dim3_make(4, 1, 1),
                                ckt_dim3_make(2 * W, 1, 1), 0, NULL, &sp),
                  CKT_SUCCESS)
            << ckt_last_error();
        std::vector<int> got(2 * W);
        ckt_rt_memcpy(got.data(), out, 2 * W * sizeof(int), CKT_D2H);
        for (unsigned t = 0; t < 2 * W; t++)
            ASSERT_EQ(got[t], (int)(24 * t + 276 + (t ^ 1u))) << "thread " << t;
    }
    ckt_rt_free(out);

    misuse_params bad = {NULL, 0};
    ASSERT_EQ(ckt_rt_malloc((void **)&bad.out, 16 * W * 4), CKT_SUCCESS);
    std::vector<float> x = SumInput(5000);
    for (int round = 0; round < 3; round++) {
        // Block 1 of 8 fails while other blocks may be running on other threads.
        EXPECT_EQ(Launch(CKT_KERNEL_REF(early_exit_kernel), 8, 2 * W, &bad), CKT_ERROR_KERNEL);
        EXPECT_NE(std::string(ckt_emu_last_error()).find("barrier reached by only part"), std::string::npos);
        SumRun r = RunBlockSum(x, 0);
        ASSERT_EQ(r.status, CKT_SUCCESS) << ckt_last_error();
        EXPECT_STREQ(ckt_emu_last_error(), "");
        EXPECT_EQ(r.sums, SumReference(x));
    }
    ckt_rt_free(bad.out);
}

TEST(Launch, BlocksOnSeveralOSThreadsGiveTheSameResults)
{
    std::vector<float> x = SumInput(32 * SUM_THREADS - 5);
    setenv("CKT_EMU_THREADS", "1", 1);
    SumRun one = RunBlockSum(x, 0);
    setenv("CKT_EMU_THREADS", "4", 1);
    SumRun four = RunBlockSum(x, 2000);
    unsetenv("CKT_EMU_THREADS");
    ASSERT_EQ(one.status, CKT_SUCCESS) << ckt_last_error();
    ASSERT_EQ(four.status, CKT_SUCCESS) << ckt_last_error();
    EXPECT_EQ(one.sums, SumReference(x));
    EXPECT_EQ(four.sums, one.sums);
    std::set<uint64_t> threads_one(one.who.begin(), one.who.end());
    std::set<uint64_t> threads_four(four.who.begin(), four.who.end());
    EXPECT_EQ(threads_one.size(), 1u);
    EXPECT_GE(threads_four.size(), 2u) << "blocks did not spread over OS threads";
    EXPECT_LE(threads_four.size(), 4u);
}

// >>flags between blocks: a block that waits for another is parked

#define CHAIN_THREADS 64

typedef struct chain_params {
    int *flag;  // [blocks], zero
    int *value; // [blocks]
    int *order; // [blocks]: the position at which each block finished
    int *count; // one counter
    unsigned blocks;
} chain_params;

// Block i waits for block i + 1 (so the first block launched waits for the
// last): thread 0 waits, the block reads value[i + 1] and adds its own
// threads, then thread 0 publishes. value[i] = sum over blocks >= i.
CKT_KERNEL(chain_kernel, chain_params, p)
{
    CKT_SHARED_ARRAY(int, part, CHAIN_THREADS);
    const unsigned i = ckt_block_idx_x(), t = ckt_thread_rank();
    if (t == 0 && i + 1 < p.blocks)
        ckt_flag_wait_geq(&p.flag[i + 1], 1);
    ckt_block_sync();
    part[t] = (int)t + (t == 0 && i + 1 < p.blocks ? p.value[i + 1] : 0);
    ckt_block_sync();
    if (t == 0) {
        int sum = 0;
        for (unsigned k = 0; k < CHAIN_THREADS; k++)
            sum += part[k];
        p.value[i] = sum;
        p.order[i] = ckt_atomic_add_i32(p.count, 1);
    }
    ckt_block_sync();
    if (t == 0)
        ckt_flag_store_release(&p.flag[i], 1);
}

struct ChainRun {
    ckt_status status;
    std::vector<int> value, order;
};

ChainRun RunChain(unsigned blocks)
{
    chain_params p;
    p.blocks = blocks;
    ckt_rt_malloc((void **)&p.flag, 4 * blocks);
    ckt_rt_malloc((void **)&p.value, 4 * blocks);
    ckt_rt_malloc((void **)&p.order, 4 * blocks);
    ckt_rt_malloc((void **)&p.count, 4);
    ckt_rt_memset(p.flag, 0, 4 * blocks);
    ckt_rt_memset(p.count, 0, 4);
    ChainRun r;
    r.status = ckt_rt_launch(CKT_KERNEL_REF(chain_kernel), ckt_dim3_make(blocks, 1, 1),
                             ckt_dim3_make(CHAIN_THREADS, 1, 1), 0, NULL, &p);
    r.value.resize(blocks);
    r.order.resize(blocks);
    ckt_rt_memcpy(r.value.data(), p.value, 4 * blocks, CKT_D2H);
    ckt_rt_memcpy(r.order.data(), p.order, 4 * blocks, CKT_D2H);
    ckt_rt_free(p.flag);
    ckt_rt_free(p.value);
    ckt_rt_free(p.order);
    ckt_rt_free(p.count);
    return r;
}

TEST(Flags, BlocksThatWaitForLaterBlocksAreParkedNotDeadlocked)
{
    const unsigned blocks = 9, per = CHAIN_THREADS * (CHAIN_THREADS - 1) / 2;
    for (const char *threads : {"1", "2", "4"}) {
        for (int schedule : {CKT_EMU_FORWARD, CKT_EMU_REVERSE, CKT_EMU_SHUFFLE}) {
            setenv("CKT_EMU_THREADS", threads, 1);
            ckt_emu_set_schedule(schedule, 7);
            ChainRun r = RunChain(blocks);
            ckt_emu_set_schedule(-1, 0);
            unsetenv("CKT_EMU_THREADS");
            ASSERT_EQ(r.status, CKT_SUCCESS) << threads << " threads: " << ckt_last_error();
            for (unsigned i = 0; i < blocks; i++) {
                EXPECT_EQ(r.value[i], (int)((blocks - i) * per)) << "block " << i << ", " << threads << " threads";
                // every block finished after the one it waited for
                if (i + 1 < blocks) {
                    EXPECT_GT(r.order[i], r.order[i + 1]) << "block " << i;
                }
            }
        }
    }
}

// Lane 0 of each warp of block 0 waits for block 1's flag while the warp's
// other lanes wait in a warp collective for it (legal on GPUs: lanes are
// scheduled independently); then the warp shuffles lane 0's read.
CKT_KERNEL(warp_flag_kernel, chain_params, p)
{
    const unsigned i = ckt_block_idx_x(), t = ckt_thread_rank();
    if (i == 0) {
        int v = 0;
        if (ckt_lane_id() == 0) {
            ckt_flag_wait_geq(&p.flag[1], 1);
            v = p.value[1];
        }
        v = (int)ckt_warp_shfl_idx_u32((uint32_t)v, 0);
        p.order[t] = v;
    } else {
        if (t == 0) {
            p.value[1] = 4242;
            ckt_flag_store_release(&p.flag[1], 1);
        }
    }
}

TEST(Flags, AWarpCollectiveWaitsForLanesThatWaitForAFlag)
{
    chain_params p;
    p.blocks = 2;
    ckt_rt_malloc((void **)&p.flag, 8);
    ckt_rt_malloc((void **)&p.value, 8);
    ckt_rt_malloc((void **)&p.order, 4 * 2 * W);
    for (const char *threads : {"1", "2"}) {
        ckt_rt_memset(p.flag, 0, 8);
        ckt_rt_memset(p.order, 0, 4 * 2 * W);
        setenv("CKT_EMU_THREADS", threads, 1);
        ckt_status s = ckt_rt_launch(CKT_KERNEL_REF(warp_flag_kernel), ckt_dim3_make(2, 1, 1),
                                     ckt_dim3_make(2 * W, 1, 1), 0, NULL, &p);
        unsetenv("CKT_EMU_THREADS");
        ASSERT_EQ(s, CKT_SUCCESS) << threads << " threads: " << ckt_last_error();
        std::vector<int> got(2 * W);
        ckt_rt_memcpy(got.data(), p.order, 4 * 2 * W, CKT_D2H);
        for (unsigned t = 0; t < 2 * W; t++)
            ASSERT_EQ(got[t], 4242) << "thread " << t << ", " << threads << " threads";
    }
    ckt_rt_free(p.flag);
    ckt_rt_free(p.value);
    ckt_rt_free(p.order);
}

// Block 0 waits for a flag no block sets; block 1 finishes normally.
CKT_KERNEL(flag_deadlock_kernel, chain_params, p)
{
    if (ckt_block_idx_x() == 0 && ckt_thread_rank() == 0)
        ckt_flag_wait_geq(&p.flag[0], 1);
    ckt_block_sync();
    p.value[ckt_block_idx_x()] = 1;
}
const int flag_deadlock_line = __LINE__ - 4;

TEST(Flags, AWaitNoBlockEndsIsADeadlockReportNotAHang)
{
    chain_params p;
    p.blocks = 2;
    ckt_rt_malloc((void **)&p.flag, 8);
    ckt_rt_malloc((void **)&p.value, 8);
    ckt_rt_memset(p.flag, 0, 8);
    for (const char *threads : {"1", "2"}) {
        setenv("CKT_EMU_THREADS", threads, 1);
        setenv("CKT_EMU_TIMEOUT_S", "0.3", 1);
        ckt_status s = ckt_rt_launch(CKT_KERNEL_REF(flag_deadlock_kernel), ckt_dim3_make(2, 1, 1),
                                     ckt_dim3_make(2 * W, 1, 1), 0, NULL, &p);
        unsetenv("CKT_EMU_TIMEOUT_S");
        unsetenv("CKT_EMU_THREADS");
        ExpectReport(s, {"block (0,0,0): deadlock: 1 block(s) wait for flags",
                         Lanes(0, 0, 0, 0, "wait for a flag another block sets at " + At(flag_deadlock_line)),
                         Lanes(0, 0, 1, W - 1, Barrier(flag_deadlock_line + 1)),
                         Lanes(1, 1, 0, W - 1, Barrier(flag_deadlock_line + 1))});
    }
    // the next launch works
    RunChain(3);
    ChainRun r = RunChain(3);
    EXPECT_EQ(r.status, CKT_SUCCESS) << ckt_last_error();
    ckt_rt_free(p.flag);
    ckt_rt_free(p.value);
}

// >>schedule orders

#define SHIFT_THREADS 128

typedef struct shift_params {
    const int *in;
    int *out;
    int with_barrier;
} shift_params;

// out[t] = in[t - 1] through shared memory. Without the barrier, thread t
// reads s[t - 1] before thread t - 1 may have written it: in forward order it
// has (fibers run in rank order between waits), so the race hides.
CKT_KERNEL(shift_kernel, shift_params, p)
{
    CKT_SHARED_ARRAY(int, s, SHIFT_THREADS);
    unsigned t = ckt_thread_rank();
    s[t] = p.in[t];
    if (p.with_barrier)
        ckt_block_sync();
    p.out[t] = t > 0 ? s[t - 1] : 0;
}

std::vector<int> RunShift(int schedule, uint64_t seed, int with_barrier)
{
    std::vector<int> in(SHIFT_THREADS), out(SHIFT_THREADS);
    for (int i = 0; i < SHIFT_THREADS; i++)
        in[i] = 1000 + i;
    void *din, *dout;
    ckt_rt_malloc(&din, sizeof(int) * SHIFT_THREADS);
    ckt_rt_malloc(&dout, sizeof(int) * SHIFT_THREADS);
    ckt_rt_memcpy(din, in.data(), sizeof(int) * SHIFT_THREADS, CKT_H2D);
    shift_params p = {(const int *)din, (int *)dout, with_barrier};
    ckt_emu_set_schedule(schedule, seed);
    ckt_status s = ckt_rt_launch(CKT_KERNEL_REF(shift_kernel), ckt_dim3_make(1, 1, 1),
                                 ckt_dim3_make(SHIFT_THREADS, 1, 1), 0, NULL, &p);
    ckt_emu_set_schedule(-1, 0);
    EXPECT_EQ(s, CKT_SUCCESS) << ckt_last_error();
    ckt_rt_memcpy(out.data(), dout, sizeof(int) * SHIFT_THREADS, CKT_D2H);
    ckt_rt_free(din);
    ckt_rt_free(dout);
    return out;
}

std::vector<int> ShiftReference()
{
    std::vector<int> want(SHIFT_THREADS, 0);
    for (int i = 1; i < SHIFT_THREADS; i++)
        want[i] = 1000 + i - 1;
    return want;
}

TEST(Schedule, MissingBarrierPassesForwardButFailsReversedOrShuffled)
{
    EXPECT_EQ(RunShift(CKT_EMU_FORWARD, 0, 0), ShiftReference()) << "the race should hide in forward order";
    EXPECT_NE(RunShift(CKT_EMU_REVERSE, 0, 0), ShiftReference()) << "reverse order should expose the race";
    for (uint64_t seed = 1; seed <= 3; seed++)
        EXPECT_NE(RunShift(CKT_EMU_SHUFFLE, seed, 0), ShiftReference()) << "shuffle seed " << seed;
}

TEST(Schedule, CorrectKernelsGiveTheSameResultInEveryOrder)
{
    EXPECT_EQ(RunShift(CKT_EMU_FORWARD, 0, 1), ShiftReference());
    EXPECT_EQ(RunShift(CKT_EMU_REVERSE, 0, 1), ShiftReference());
    for (uint64_t seed = 1; seed <= 5; seed++)
        EXPECT_EQ(RunShift(CKT_EMU_SHUFFLE, seed, 1), ShiftReference()) << "shuffle seed " << seed;

    std::vector<float> x = SumInput(3000);
    const int orders[] = {CKT_EMU_FORWARD, CKT_EMU_REVERSE, CKT_EMU_SHUFFLE, CKT_EMU_SHUFFLE};
    for (int k = 0; k < 4; k++) {
        ckt_emu_set_schedule(orders[k], 11 + k);
        SumRun r = RunBlockSum(x, 0);
        ckt_emu_set_schedule(-1, 0);
        ASSERT_EQ(r.status, CKT_SUCCESS) << ckt_last_error();
        EXPECT_EQ(r.sums, SumReference(x)) << "order " << k;
    }
}

// >>fatal faults (death tests)

typedef struct deep_params {
    int *out;
    unsigned victim; // the thread that recurses
} deep_params;

// Recursion that the compiler cannot flatten: a 1 KiB frame per level.
__attribute__((noinline)) int Deep(int n)
{
    volatile char frame[1024];
    frame[0] = (char)n;
    frame[1023] = (char)(n >> 8);
    if (n == 0)
        return frame[0];
    return Deep(n - 1) + frame[n & 1023];
}

CKT_KERNEL(stack_overflow_kernel, deep_params, p)
{
    unsigned t = ckt_thread_rank();
    p.out[t] = t == p.victim ? Deep(1 << 20) : 0; // 1 GiB of frames
}

TEST(FatalDeathTest, StackOverflowNamesTheThread)
{
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    int *out = NULL;
    ASSERT_EQ(ckt_rt_malloc((void **)&out, 2 * W * sizeof(int)), CKT_SUCCESS);
    deep_params p = {out, W + 5};
    setenv("CKT_EMU_STACK_KB", "64", 1);
    auto launch = [&] {
        ckt_rt_launch(CKT_KERNEL_REF(stack_overflow_kernel), ckt_dim3_make(3, 1, 1),
                      ckt_dim3_make(2 * W, 1, 1), 0, NULL, &p);
    };
#if defined(CKT_ASAN_BUILD)
    // ASan's own SEGV handler reports the overflow.
    EXPECT_DEATH(launch(), "AddressSanitizer.*stack-overflow");
#else
    char pattern[200];
    snprintf(pattern, sizeof pattern,
             "ckt emulator: stack overflow in block \\([0-9],0,0\\) thread \\(%u,0,0\\) .*raise "
             "CKT_EMU_STACK_KB \\(now 64\\)",
             W + 5);
    EXPECT_DEATH(launch(), pattern);
#endif
    unsetenv("CKT_EMU_STACK_KB");
    ckt_rt_free(out);
}

TEST(FatalDeathTest, OtherFaultsStillCrashAsBefore)
{
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    SumRun r = RunBlockSum(SumInput(100), 0); // the emulator's handlers are installed now
    ASSERT_EQ(r.status, CKT_SUCCESS);
    volatile uintptr_t bad = 16; // a null-page address: an ordinary crash
    EXPECT_DEATH(*(volatile int *)bad = 1, "");
}

#if defined(CKT_ASAN_BUILD)
typedef struct oob_params {
    const float *x;
    float *y;
    int n;
} oob_params;

// Every thread reads x[t + 1]: the last one reads one float past the end.
CKT_KERNEL(oob_read_kernel, oob_params, p)
{
    int t = (int)ckt_thread_rank();
    p.y[t] = p.x[t + 1];
}

TEST(AsanDeathTest, OutOfBoundsGlobalReadInAKernelIsReported)
{
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const int n = 256; // 1 KiB, a multiple of 256 bytes: no padding after it
    void *x, *y;
    ASSERT_EQ(ckt_rt_malloc(&x, n * 4), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&y, n * 4), CKT_SUCCESS);
    oob_params p = {(const float *)x, (float *)y, n};
    EXPECT_DEATH(ckt_rt_launch(CKT_KERNEL_REF(oob_read_kernel), ckt_dim3_make(1, 1, 1),
                               ckt_dim3_make(n, 1, 1), 0, NULL, &p),
                 "heap-buffer-overflow");
    ckt_rt_free(x);
    ckt_rt_free(y);
}

// ckt_rt_malloc pads to 256 bytes like a GPU allocator, but under ASan no byte
// past the requested size is addressable: one element past the end of a block
// of any size is reported, and the report names the block.
// 1000 bytes = 250 floats, not a multiple of 256.
const int kRagged = 250;

// Thread t writes y[t + 1]: the last one writes one float past the end.
CKT_KERNEL(oob_write_kernel, oob_params, p)
{
    int t = (int)ckt_thread_rank();
    p.y[t + 1] = p.x[t];
}

TEST(AsanDeathTest, ReadOneElementPastARaggedAllocationIsReported)
{
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    void *x, *y;
    ASSERT_EQ(ckt_rt_malloc(&x, kRagged * 4), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&y, kRagged * 4), CKT_SUCCESS);
    oob_params p = {(const float *)x, (float *)y, kRagged};
    EXPECT_DEATH(ckt_rt_launch(CKT_KERNEL_REF(oob_read_kernel), ckt_dim3_make(1, 1, 1),
                               ckt_dim3_make(kRagged, 1, 1), 0, NULL, &p),
                 "heap-buffer-overflow.*READ of size 4.*located 0 bytes (to the right of|after) "
                 "1000-byte region");
    ckt_rt_free(x);
    ckt_rt_free(y);
}

TEST(AsanDeathTest, WriteOneElementPastARaggedAllocationIsReported)
{
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    void *x, *y;
    ASSERT_EQ(ckt_rt_malloc(&x, kRagged * 4), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&y, kRagged * 4), CKT_SUCCESS);
    oob_params p = {(const float *)x, (float *)y, kRagged};
    EXPECT_DEATH(ckt_rt_launch(CKT_KERNEL_REF(oob_write_kernel), ckt_dim3_make(1, 1, 1),
                               ckt_dim3_make(kRagged, 1, 1), 0, NULL, &p),
                 "heap-buffer-overflow.*WRITE of size 4.*located 0 bytes (to the right of|after) "
                 "1000-byte region");
    ckt_rt_free(x);
    ckt_rt_free(y);
}

typedef struct vec_params {
    const ckt_u32x4 *x;
    ckt_u32x4 *y;
} vec_params;

// y[t] = x[t], one 16-byte vector per thread.
CKT_KERNEL(vec_copy_kernel, vec_params, p)
{
    unsigned t = ckt_thread_rank();
    p.y[t] = p.x[t];
}

// Whole 16-byte vectors up to the very end of a ragged allocation (1008 bytes
// = 63 vectors, not a multiple of 256) are in bounds: not reported.
TEST(AsanTest, VectorsUpToTheEndOfARaggedAllocationAreFine)
{
    const unsigned nvec = 63;
    void *x, *y;
    ASSERT_EQ(ckt_rt_malloc(&x, nvec * 16), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&y, nvec * 16), CKT_SUCCESS);
    std::vector<uint32_t> h(nvec * 4), back(nvec * 4);
    for (size_t i = 0; i < h.size(); i++)
        h[i] = (uint32_t)i * 2654435761u;
    ASSERT_EQ(ckt_rt_memcpy(x, h.data(), nvec * 16, CKT_H2D), CKT_SUCCESS);
    vec_params p = {(const ckt_u32x4 *)x, (ckt_u32x4 *)y};
    ASSERT_EQ(ckt_rt_launch(CKT_KERNEL_REF(vec_copy_kernel), ckt_dim3_make(1, 1, 1),
                            ckt_dim3_make(nvec, 1, 1), 0, NULL, &p),
              CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_memcpy(back.data(), y, nvec * 16, CKT_D2H), CKT_SUCCESS);
    EXPECT_EQ(back, h);
    ckt_rt_free(x);
    ckt_rt_free(y);
}

// ... and one vector more, wholly past the end, is.
TEST(AsanDeathTest, OneVectorPastARaggedAllocationIsReported)
{
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const unsigned nvec = 63;
    void *x, *y;
    ASSERT_EQ(ckt_rt_malloc(&x, nvec * 16), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc(&y, (nvec + 1) * 16), CKT_SUCCESS);
    vec_params p = {(const ckt_u32x4 *)x, (ckt_u32x4 *)y};
    EXPECT_DEATH(ckt_rt_launch(CKT_KERNEL_REF(vec_copy_kernel), ckt_dim3_make(1, 1, 1),
                               ckt_dim3_make(nvec + 1, 1, 1), 0, NULL, &p),
                 "heap-buffer-overflow.*READ of size.*located 0 bytes (to the right of|after) "
                 "1008-byte region");
    ckt_rt_free(x);
    ckt_rt_free(y);
}
#endif

} // namespace
