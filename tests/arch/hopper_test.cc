// Hopper's asynchronous instructions (ckt/arch/hopper.h): mbarriers, TMA 2-D
// tile loads and warpgroup MMA, against host computations.
//
// Every layout the kernels build or the host checks is written out here from
// the documentation (ckt/arch/hopper.h, the PTX ISA), independently of the
// emulator's models, so the same source checks the emulator's nv profile and
// an sm_90a device. Where the target has no wgmma (sm_80 passes, the host
// pass, other profiles) the kernels are empty and the tests skip.
//
//   mbarrier   count and arrivals, expect_tx + TMA, phases in a loop, a
//              producer/consumer ping-pong between two warps
//   TMA        boxes inside and hanging over every edge, 1/2/4-byte elements,
//              swizzle NONE/32B/64B/128B: the exact bytes in shared memory
//   tensor map ckt_tma_make_2d's rules
//   wgmma      m64n{64,128,256}k16, bf16/f16, SS (K-major, B MN-major), RS,
//              128B-swizzled and core-matrix tiles, k-steps, accumulate 0/1;
//              m64n{64,128,256}k32 e4m3 (K-major only), SS and RS, the same
//              tiles of 1-byte elements, negative values and -0
//   emulator   deadlock report on a phase nobody completes, uninitialized
//              mbarrier, a TMA column not at 16 bytes (CPU backend only)
//
// hopper_test_gpu passes on an H100 (126 tests: all but the 3
// emulator-only ones), the e4m3 wgmma cases included (2026-11-26). The 64B
// swizzle of e4m3 tiles has no case here; the fp8 d64 forward
// (fp8_test_gpu) runs it on the H100.
#include "ckt/host.h"

#include <gtest/gtest.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#if !defined(CKT_BACKEND_AMD)

namespace {

// Whether this build and device run the Hopper instructions: an sm_90 device
// (the kernels are built for sm_90a), or the emulator's nv profile.
bool HaveHopper()
{
#if defined(CKT_BACKEND_NVIDIA)
    ckt_device_props props;
    return ckt_rt_device_props(&props) == CKT_SUCCESS && props.cc_major == 9 && props.cc_minor == 0;
#elif defined(CKT_HAS_WGMMA)
    return true;
#else
    return false;
#endif
}

#define SKIP_WITHOUT_HOPPER()                                                                     \
    do {                                                                                          \
        if (!HaveHopper())                                                                        \
            GTEST_SKIP() << "no mbarrier/TMA/wgmma on " CKT_ARCH_NAME " (or not an sm_90 device)"; \
    } while (0)

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

ckt_status Launch(ckt_kernel_ref k, unsigned threads, size_t dyn_shared, const void *params)
{
    ckt_status s = ckt_rt_launch(k, ckt_dim3_make(1, 1, 1), ckt_dim3_make(threads, 1, 1), dyn_shared, NULL, params);
    if (s == CKT_SUCCESS)
        s = ckt_rt_device_synchronize();
    return s;
}

// A small deterministic generator (xorshift64*), so that the host data needs
// nothing but this file.
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 1) {}
    uint32_t next()
    {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        return (uint32_t)((s * 0x2545f4914f6cdd1dull) >> 32);
    }
    int in(int lo, int hi) { return lo + (int)(next() % (uint32_t)(hi - lo + 1)); }
};

// The documented swizzle of a byte offset x from a 1024-byte aligned base,
// rows of W bytes (W = 32, 64, 128; 0: none): x ^ (((x >> 7) & (W/16 - 1)) << 4).
uint32_t SwizzleRef(uint32_t x, unsigned W) { return W ? x ^ (((x >> 7) & (W / 16 - 1)) << 4) : x; }

// >>mbarrier

// (1) Count N: threads 1..N each write flag[t] and arrive; the others and
// thread 0 wait for phase 0 and then must see every flag.
typedef struct mbar_count_params {
    int *out;      // [threads]: the sum of the flags each waiter saw, -1 for arrivers
    unsigned count; // N, arrivals by threads 1..N
} mbar_count_params;

CKT_KERNEL(mbar_count_kernel, mbar_count_params, p)
{
#if defined(CKT_HAS_WGMMA)
    CKT_SHARED_ARRAY(uint64_t, bar, 1);
    CKT_SHARED_ARRAY(int, flag, 256);
    const unsigned t = ckt_thread_rank(), n = ckt_block_dim_x();
    flag[t] = 0;
    if (t == 0)
        ckt_mbar_init(bar, p.count);
    ckt_block_sync();
    if (t >= 1 && t <= p.count) {
        flag[t] = (int)t;
        ckt_mbar_arrive(bar);
        p.out[t] = -1;
    } else {
        ckt_mbar_wait(bar, 0);
        int s = 0;
        for (unsigned i = 0; i < n; i++)
            s += ((volatile int *)flag)[i];
        p.out[t] = s;
    }
#else
    (void)p;
#endif
}

TEST(Mbarrier, CountArrivalsCompletePhaseZero)
{
    SKIP_WITHOUT_HOPPER();
    const unsigned threads = 128;
    for (unsigned count : {1u, 32u, 100u}) {
        DeviceBuf out(threads * 4);
        mbar_count_params p = {(int *)out.p, count};
        ASSERT_EQ(Launch(CKT_KERNEL_REF(mbar_count_kernel), threads, 0, &p), CKT_SUCCESS) << ckt_last_error();
        std::vector<int> o(threads);
        out.get(o);
        const int sum = (int)(count * (count + 1) / 2); // flags 1..N
        for (unsigned t = 0; t < threads; t++)
            EXPECT_EQ(o[t], t >= 1 && t <= count ? -1 : sum) << "count " << count << " thread " << t;
    }
}

// (2) Phases in a loop: in round i every thread but the last arrives and
// waits for parity i & 1; the last thread writes data[i], then arrives. A
// wait that returned before the phase completed would read a stale value.
// After the loop, a wait on the last completed phase returns at once.
typedef struct mbar_loop_params {
    int *out; // [rounds][threads]
    int rounds;
} mbar_loop_params;

CKT_KERNEL(mbar_loop_kernel, mbar_loop_params, p)
{
#if defined(CKT_HAS_WGMMA)
    CKT_SHARED_ARRAY(uint64_t, bar, 1);
    CKT_SHARED_ARRAY(int, data, 64);
    const unsigned t = ckt_thread_rank(), n = ckt_block_dim_x();
    if (t < 64)
        data[t] = -1;
    if (t == 0)
        ckt_mbar_init(bar, n);
    ckt_block_sync();
    for (int i = 0; i < p.rounds; i++) {
        if (t == n - 1) {
            ((volatile int *)data)[i] = 1000 + i;
            ckt_mbar_arrive(bar);
        } else {
            ckt_mbar_arrive(bar);
            ckt_mbar_wait(bar, (unsigned)i & 1u);
        }
        ckt_mbar_wait(bar, (unsigned)i & 1u);
        p.out[i * n + t] = ((volatile int *)data)[i];
    }
    ckt_mbar_wait(bar, (unsigned)(p.rounds - 1) & 1u); // completed: returns at once
    ckt_block_sync();
#else
    (void)p;
#endif
}

TEST(Mbarrier, PhasesInALoopAlternateParity)
{
    SKIP_WITHOUT_HOPPER();
    const unsigned threads = 96;
    const int rounds = 9;
    DeviceBuf out(rounds * threads * 4);
    mbar_loop_params p = {(int *)out.p, rounds};
    ASSERT_EQ(Launch(CKT_KERNEL_REF(mbar_loop_kernel), threads, 0, &p), CKT_SUCCESS) << ckt_last_error();
    std::vector<int> o(rounds * threads);
    out.get(o);
    for (int i = 0; i < rounds; i++)
        for (unsigned t = 0; t < threads; t++)
            ASSERT_EQ(o[i * threads + t], 1000 + i) << "round " << i << " thread " << t;
}

// (3) Producer/consumer ping-pong: warp 0 fills buf[32] and arrives on
// `full` (count 32), warp 1 waits for it, adds buf into its sums and arrives
// on `empty` (count 32), which warp 0 waits for before refilling. Round i
// waits for parity i & 1 on full, and for round i - 1's parity on empty.
typedef struct pingpong_params {
    int *out; // [32]: warp 1's sums; [32 + r]: what the producer read back
    int rounds;
} pingpong_params;

CKT_KERNEL(pingpong_kernel, pingpong_params, p)
{
#if defined(CKT_HAS_WGMMA)
    CKT_SHARED_ARRAY(uint64_t, bars, 2);
    CKT_SHARED_ARRAY(int, buf, 32);
    uint64_t *full = &bars[0], *empty = &bars[1];
    const unsigned t = ckt_thread_rank(), warp = t / 32, lane = t % 32;
    if (t == 0) {
        ckt_mbar_init(full, 32);
        ckt_mbar_init(empty, 32);
    }
    ckt_block_sync();
    if (warp == 0) {
        for (int i = 0; i < p.rounds; i++) {
            if (i > 0)
                ckt_mbar_wait(empty, (unsigned)(i - 1) & 1u);
            ((volatile int *)buf)[lane] = 100 * i + (int)lane;
            ckt_mbar_arrive(full);
        }
    } else if (warp == 1) {
        int sum = 0;
        for (int i = 0; i < p.rounds; i++) {
            ckt_mbar_wait(full, (unsigned)i & 1u);
            sum += ((volatile int *)buf)[lane];
            ckt_mbar_arrive(empty);
        }
        p.out[lane] = sum;
    }
#else
    (void)p;
#endif
}

TEST(Mbarrier, ProducerConsumerPingPongBetweenTwoWarps)
{
    SKIP_WITHOUT_HOPPER();
    const int rounds = 11;
    DeviceBuf out(32 * 4);
    pingpong_params p = {(int *)out.p, rounds};
    ASSERT_EQ(Launch(CKT_KERNEL_REF(pingpong_kernel), 64, 0, &p), CKT_SUCCESS) << ckt_last_error();
    std::vector<int> o(32);
    out.get(o);
    for (int l = 0; l < 32; l++)
        EXPECT_EQ(o[l], 100 * rounds * (rounds - 1) / 2 + rounds * l) << "lane " << l;
}

// >>TMA

// One box load: thread 0 initializes the barrier; the tile is first filled
// with 0xA5 (so that a byte TMA does not write shows); one thread announces
// the bytes (split: two announcers, so that the copy may land before the
// second announcement when split_expect), issues the load, and every thread
// waits for phase 0 and copies the tile to out.
typedef struct tma_params {
    ckt_tma_desc map; // first: 64-byte aligned
    unsigned char *out;
    int col, row;
    unsigned bytes;   // box_rows * box_cols * elem_bytes
    int split_expect; // announce the bytes in two arrivals (count 2), the second after the copy
} tma_params;

CKT_KERNEL_GRID_CONSTANT(tma_kernel, tma_params, p)
{
#if defined(CKT_HAS_WGMMA)
    CKT_SHARED_ARRAY(uint64_t, bar, 1);
    CKT_DYNAMIC_SHARED(unsigned char, smem_raw);
    unsigned char *tile = (unsigned char *)ckt_smem_align_1024(smem_raw);
    const unsigned t = ckt_thread_rank(), n = ckt_block_dim_x();
    for (unsigned i = t; i < p.bytes; i += n)
        tile[i] = 0xA5;
    ckt_fence_proxy_async(); // the fill before TMA's writes
    if (t == 0)
        ckt_mbar_init(bar, p.split_expect ? 2 : 1);
    ckt_block_sync();
    if (t == 0) {
        const unsigned first = p.split_expect ? p.bytes / 2 : p.bytes;
        ckt_mbar_arrive_expect_tx(bar, first);
        ckt_tma_load_2d(tile, &p.map, p.col, p.row, bar);
    }
    if (p.split_expect) {
        ckt_block_sync(); // the copy is issued (and may have landed) before the rest is announced
        if (t == 32)
            ckt_mbar_arrive_expect_tx(bar, p.bytes - p.bytes / 2);
    }
    ckt_mbar_wait(bar, 0);
    for (unsigned i = t; i < p.bytes; i += n)
        p.out[i] = tile[i];
#else
    (void)p;
#endif
}

struct TmaCase {
    unsigned eb, sw, box_rows, box_cols;
    int row, col;
    const char *what;
};

// The tensor: rows x cols elements of eb bytes, rows 16-byte padded; element
// byte b of (r, c) is a function of r, c, b (never 0 or 0xA5 inside).
uint8_t TensorByte(unsigned r, unsigned c, unsigned b) { return (uint8_t)(1 + (r * 37 + c * 11 + b * 101) % 163); }

void RunTmaCase(const TmaCase &k, int split_expect)
{
    const unsigned rows = 40, row_bytes_used = 200, cols = row_bytes_used / k.eb, stride = 208;
    std::vector<uint8_t> host(rows * stride, 0xEE);
    for (unsigned r = 0; r < rows; r++)
        for (unsigned c = 0; c < cols; c++)
            for (unsigned b = 0; b < k.eb; b++)
                host[r * stride + c * k.eb + b] = TensorByte(r, c, b);
    DeviceBuf src(host.size());
    src.put(host);
    const unsigned row_bytes = k.box_cols * k.eb, bytes = k.box_rows * row_bytes;
    DeviceBuf out(bytes);
    tma_params p;
    memset(&p, 0, sizeof p);
    ASSERT_EQ(ckt_tma_make_2d(&p.map, src.p, k.eb, rows, cols, stride, k.box_rows, k.box_cols, (ckt_swizzle)k.sw), 0)
        << k.what;
    p.out = (unsigned char *)out.p;
    p.col = k.col;
    p.row = k.row;
    p.bytes = bytes;
    p.split_expect = split_expect;
    ASSERT_EQ(Launch(CKT_KERNEL_REF(tma_kernel), 64, bytes + 1024, &p), CKT_SUCCESS) << k.what << ": "
                                                                                    << ckt_last_error();
    std::vector<uint8_t> got(bytes);
    out.get(got);
    // smem[swizzle(r * row_bytes + c * eb + b)] = T[row + r][col + c] byte b, or 0 outside
    std::vector<uint8_t> want(bytes, 0xA5);
    for (unsigned r = 0; r < k.box_rows; r++)
        for (unsigned c = 0; c < k.box_cols; c++)
            for (unsigned b = 0; b < k.eb; b++) {
                const long gr = (long)k.row + r, gc = (long)k.col + c;
                const bool inside = gr >= 0 && gc >= 0 && gr < (long)rows && gc < (long)cols;
                want[SwizzleRef(r * row_bytes + c * k.eb + b, k.sw)] =
                    inside ? TensorByte((unsigned)gr, (unsigned)gc, b) : 0;
            }
    int bad = 0;
    for (unsigned i = 0; i < bytes && bad < 5; i++)
        if (got[i] != want[i]) {
            ADD_FAILURE() << k.what << " eb " << k.eb << " swizzle " << k.sw << " box " << k.box_rows << "x"
                          << k.box_cols << " at (" << k.row << ", " << k.col << "): smem byte " << i << " (row "
                          << i / row_bytes << ", byte " << i % row_bytes << ") is " << (int)got[i] << ", want "
                          << (int)want[i];
            bad++;
        }
}

// Boxes over the 40 x (200 / eb) tensor: inside, hanging over each edge
// (negative coordinates), larger than the tensor on three sides, wholly
// outside. Columns are at multiples of 16 bytes (ckt_tma_load_2d's rule: an
// H100 stops with "illegal instruction" otherwise); rows are free.
std::vector<TmaCase> TmaCases()
{
    std::vector<TmaCase> v;
    for (unsigned eb : {1u, 2u, 4u})
        for (unsigned sw : {0u, 32u, 64u, 128u}) {
            const unsigned bc = sw ? sw / eb : 48 / eb, chunk = 16 / eb; // elements a 16-byte chunk
            const int half = -(int)(chunk * (bc / chunk / 2));            // half the box left of column 0
            v.push_back({eb, sw, 16, bc, 5, (int)chunk, "inside"});
            v.push_back({eb, sw, 19, bc, 11, (int)(3 * chunk), "inside, ragged rows"});
            v.push_back({eb, sw, 16, bc, -5, -(int)chunk, "over the top and left edges"});
            v.push_back({eb, sw, 16, bc, 40 - 7, (int)(192 / eb), "over the bottom and right edges"});
            v.push_back({eb, sw, 64, bc, -9, half, "over the top, left and bottom edges"});
            v.push_back({eb, sw, 8, bc, -20, 0, "wholly above the tensor"});
            v.push_back({eb, sw, 8, bc, 3, -(int)bc, "wholly left of the tensor"});
            v.push_back({eb, sw, 8, bc, 3, (int)(208 / eb), "wholly right of the tensor"});
        }
    // one box wider than the tensor (NONE, 256 1-byte columns > 200)
    v.push_back({1, 0, 48, 256, -4, -32, "over every edge"});
    return v;
}

// One test per box (a case that faults on a GPU leaves the context unusable:
// run them one by one there to see which).
class TmaLoad : public ::testing::TestWithParam<int> {};

TEST_P(TmaLoad, Load2dBytesInSharedMemory)
{
    SKIP_WITHOUT_HOPPER();
    RunTmaCase(TmaCases()[(size_t)GetParam()], 0);
}

INSTANTIATE_TEST_SUITE_P(Boxes, TmaLoad, ::testing::Range(0, (int)TmaCases().size()),
                         [](const ::testing::TestParamInfo<int> &i) {
                             const TmaCase k = TmaCases()[(size_t)i.param];
                             std::string name = std::string(k.what) + "_eb" + std::to_string(k.eb) + "_sw" +
                                                std::to_string(k.sw);
                             for (char &c : name)
                                 if (!isalnum((unsigned char)c))
                                     c = '_';
                             return std::to_string(i.param) + "_" + name;
                         });

TEST(Mbarrier, ExpectTxAndATmaLoadComplete)
{
    SKIP_WITHOUT_HOPPER();
    // count 1: arrive_expect_tx then the copy; count 2: the copy lands
    // before the second half of its bytes is announced (the transaction
    // count goes below zero and the phase must still wait for the arrival)
    RunTmaCase({2, 128, 32, 64, 3, 8, "expect_tx, one arrival"}, 0);
    RunTmaCase({2, 128, 32, 64, 3, 8, "expect_tx, split over two arrivals"}, 1);
    RunTmaCase({4, 0, 64, 4, 0, 0, "expect_tx, split over two arrivals"}, 1);
}

// >>tensor map rules

TEST(Tma, Make2dRules)
{
    SKIP_WITHOUT_HOPPER();
    DeviceBuf buf(1 << 20);
    const unsigned char *b = (const unsigned char *)buf.p;
    ckt_tma_desc d;
    struct Case {
        const void *base;
        unsigned eb;
        uint64_t rows, cols, stride;
        unsigned br, bc;
        unsigned sw;
        int want;
        const char *what;
    } cases[] = {
        {b, 2, 64, 64, 128, 64, 64, 128, 0, "legal: bf16 64x64, 128B swizzle"},
        {b, 1, 300, 200, 208, 256, 16, 0, 0, "legal: 256 rows, no swizzle"},
        {b, 1, 64, 512, 512, 1, 256, 0, 0, "legal: 256 1-byte columns, no swizzle"},
        {b, 4, 64, 64, 256, 8, 8, 32, 0, "legal: 4-byte, 32B swizzle"},
        {b, 2, 64, 64, 128, 8, 32, 64, 0, "legal: 2-byte, 64B swizzle"},
        {b + 16, 2, 64, 64, 128, 64, 64, 128, 0, "legal: base 16-byte aligned"},
        {b + 8, 2, 64, 64, 128, 64, 64, 128, -1, "base 8 bytes off 16-byte alignment"},
        {nullptr, 2, 64, 64, 128, 64, 64, 128, -1, "null base"},
        {b, 2, 64, 60, 120, 64, 64, 128, -1, "row stride 120 (not a multiple of 16)"},
        {b, 2, 64, 64, 112, 8, 8, 0, -1, "row stride shorter than a row"},
        {b, 2, 64, 64, 128, 0, 64, 128, -1, "box rows 0"},
        {b, 2, 300, 64, 128, 257, 64, 128, -1, "box rows 257"},
        {b, 2, 64, 64, 128, 8, 0, 0, -1, "box cols 0"},
        {b, 1, 64, 512, 512, 8, 272, 0, -1, "box cols 272 (over 256)"},
        {b, 2, 64, 64, 128, 8, 12, 0, -1, "box row 24 bytes (not a multiple of 16)"},
        {b, 2, 64, 64, 128, 8, 32, 128, -1, "128B swizzle, box row 64 bytes"},
        {b, 2, 64, 64, 128, 8, 64, 64, -1, "64B swizzle, box row 128 bytes"},
        {b, 4, 64, 64, 256, 8, 4, 32, -1, "32B swizzle, box row 16 bytes"},
        {b, 2, 64, 64, 128, 8, 64, 96, -1, "swizzle 96 (no such mode)"},
        {b, 3, 64, 64, 192, 8, 16, 0, -1, "3-byte elements"},
        {b, 8, 64, 64, 512, 8, 2, 0, -1, "8-byte elements"},
        {b, 2, 0, 64, 128, 8, 64, 0, -1, "zero rows"},
        {b, 2, 64, 0, 128, 8, 64, 0, -1, "zero cols"},
    };
    for (const Case &c : cases) {
        memset(&d, 0x5a, sizeof d);
        EXPECT_EQ(ckt_tma_make_2d(&d, c.base, c.eb, c.rows, c.cols, c.stride, c.br, c.bc, (ckt_swizzle)c.sw), c.want)
            << c.what;
    }
    EXPECT_EQ(ckt_tma_make_2d(nullptr, b, 2, 64, 64, 128, 64, 64, CKT_SWIZZLE_128B), -1) << "null map";
}

// >>wgmma
//
// One warpgroup: D(64 x N) = [C +] A(64 x K) B(K x N), K = 128 bytes of
// elements: 64 bf16/f16 in four k16 steps or 128 e4m3 in four k32 steps (a
// step is 32 bytes of K either way; the first with the test's `accumulate`,
// the others with 1). A [64][K] and B ([K][N], logically) come from global
// memory as bits; the kernel places them in shared memory in the layout under
// test, computed here from the canonical layouts (CUTLASS's GMMA descriptors;
// e the element bytes, 2 or 1 (e4m3), T = 16 / e elements a 16-byte chunk;
// byte offsets of element (r, k), r the M or N index):
//   K-major, 128B:  sw128((r / 8) 1024 + (r % 8) 128 + e k)     sbo = 1024
//                   (a row of K is one 128-byte swizzle atom row)
//                   k-step s: descriptor start + 32 s
//   K-major, none:  (r / 8) sbo + (k / T) lbo + (r % 8) 16 + e (k % T)
//                   (core matrices of 8 rows x 16 bytes)
//                   A: lbo = 128, sbo = 1024 (k chunks adjacent)
//                   B: lbo = N/8 * 128, sbo = 128 (row groups adjacent)
//                   k-step s (2 chunks): start + 2 s lbo
// 16-bit only (8-bit types take no transpose: e4m3 has K-major operands only):
//   MN-major, 128B: sw128((r / 64) lbo + (k / 8) 1024 + (k % 8) 128 + 2 (r % 64))
//                   lbo = 8192 (64-column boxes of 64 k rows), sbo = 1024;
//                   k-step s: start + 2048 s
//   MN-major, none: (r / 8) sbo + (k / 8) lbo + (k % 8) 16 + 2 (r % 8)
//                   lbo = 128, sbo = 1024; k-step s: start + 2 s lbo
// RS: A in registers, the mma.sync A fragment of the warp's rows: m16n8k16
// (16-bit) or m16n8k32 (e4m3), the same bytes either way (see wg_run).

enum WgLayout { K_SW128, K_NONE, MN_SW128, MN_NONE };
// The element type.
enum WgType { WG_F16, WG_BF16, WG_E4M3 };

typedef struct wgmma_params {
    const unsigned char *a; // [64][K] elements of WG_ELEM_BYTES(type) bytes
    const unsigned char *b; // [K (k)][N]
    const float *c;         // [64][N]
    float *d;               // [64][N]
    int n, type, a_layout, b_layout, rs, accumulate;
} wgmma_params;

#define WG_ELEM_BYTES(type) ((type) == WG_E4M3 ? 1u : 2u)
#define WG_KB 128 // K in bytes: 64 16-bit or 128 e4m3 elements, four 32-byte k-steps
#define WG_A_BYTES (64 * WG_KB)
#define WG_B_BYTES (256 * WG_KB)
#define WG_SMEM (WG_A_BYTES + WG_B_BYTES + 1024)

#if defined(CKT_HAS_WGMMA)
CKT_INLINE CKT_DEVICE uint32_t wg_sw128(uint32_t x) { return x ^ (((x >> 7) & 7u) << 4); }

// Byte offset of element (r, k) in the layout; n: B's N (the none-K-major
// lbo); e: the element bytes (K-major layouts; the MN-major ones are 16-bit).
CKT_INLINE CKT_DEVICE uint32_t wg_offset(int layout, int is_b, unsigned n, unsigned e, unsigned r, unsigned k)
{
    const unsigned T = 16 / e; // elements a 16-byte chunk
    switch (layout) {
    case K_SW128: return wg_sw128((r / 8) * 1024 + (r % 8) * 128 + e * k);
    case K_NONE:
        return is_b ? (r / 8) * 128 + (k / T) * (n / 8 * 128) + (r % 8) * 16 + e * (k % T)
                    : (r / 8) * 1024 + (k / T) * 128 + (r % 8) * 16 + e * (k % T);
    case MN_SW128: return wg_sw128((r / 64) * 8192 + (k / 8) * 1024 + (k % 8) * 128 + 2 * (r % 64));
    default: return (r / 8) * 1024 + (k / 8) * 128 + (k % 8) * 16 + 2 * (r % 8);
    }
}

// The descriptor of k-step s of an operand in that layout (32 bytes of K a
// step for every type, so the same for 2- and 1-byte elements).
CKT_INLINE CKT_DEVICE uint64_t wg_desc(const unsigned char *base, int layout, int is_b, unsigned n, int s)
{
    switch (layout) {
    case K_SW128: return ckt_wgmma_desc(base + 32 * s, CKT_SWIZZLE_128B, 16, 1024);
    case K_NONE:
        return is_b ? ckt_wgmma_desc(base + 2 * s * (n / 8 * 128), CKT_SWIZZLE_NONE, n / 8 * 128, 128)
                    : ckt_wgmma_desc(base + 2 * s * 128, CKT_SWIZZLE_NONE, 128, 1024);
    case MN_SW128: return ckt_wgmma_desc(base + 2048 * s, CKT_SWIZZLE_128B, 8192, 1024);
    default: return ckt_wgmma_desc(base + 2 * s * 128, CKT_SWIZZLE_NONE, 128, 1024);
    }
}

#define WG_CALL(N, ty, d, a, da, db, acc, rs, bmn)                                                \
    do {                                                                                          \
        if (rs && bmn)                                                                            \
            ckt_wgmma_m64n##N##k16_##ty##_rs_bmn((d), (a), (db), (acc));                          \
        else if (rs)                                                                              \
            ckt_wgmma_m64n##N##k16_##ty##_rs((d), (a), (db), (acc));                              \
        else if (bmn)                                                                             \
            ckt_wgmma_m64n##N##k16_##ty##_ss_bmn((d), (da), (db), (acc));                         \
        else                                                                                      \
            ckt_wgmma_m64n##N##k16_##ty##_ss((d), (da), (db), (acc));                             \
    } while (0)

// e4m3: k32, K-major B only (no _bmn).
#define WG_CALL_E4M3(N, d, a, da, db, acc, rs)                                                    \
    do {                                                                                          \
        if (rs)                                                                                   \
            ckt_wgmma_m64n##N##k32_e4m3_rs((d), (a), (db), (acc));                                \
        else                                                                                      \
            ckt_wgmma_m64n##N##k32_e4m3_ss((d), (da), (db), (acc));                               \
    } while (0)

// One k-step: the instruction of this N, type, A source and B major
// (if constexpr: d has N / 2 elements, the other shapes' operands do not exist).
template <int N>
CKT_INLINE CKT_DEVICE void wg_step(const wgmma_params *p, float *d, const uint32_t *a, uint64_t da, uint64_t db, int acc)
{
    const int bmn = p->b_layout == MN_SW128 || p->b_layout == MN_NONE;
    if constexpr (N == 64) {
        if (p->type == WG_E4M3)
            WG_CALL_E4M3(64, d, a, da, db, acc, p->rs);
        else if (p->type == WG_BF16)
            WG_CALL(64, bf16, d, a, da, db, acc, p->rs, bmn);
        else
            WG_CALL(64, f16, d, a, da, db, acc, p->rs, bmn);
    } else if constexpr (N == 128) {
        if (p->type == WG_E4M3)
            WG_CALL_E4M3(128, d, a, da, db, acc, p->rs);
        else if (p->type == WG_BF16)
            WG_CALL(128, bf16, d, a, da, db, acc, p->rs, bmn);
        else
            WG_CALL(128, f16, d, a, da, db, acc, p->rs, bmn);
    } else {
        if (p->type == WG_E4M3)
            WG_CALL_E4M3(256, d, a, da, db, acc, p->rs);
        else if (p->type == WG_BF16)
            WG_CALL(256, bf16, d, a, da, db, acc, p->rs, bmn);
        else
            WG_CALL(256, f16, d, a, da, db, acc, p->rs, bmn);
    }
}

// One warpgroup's D(64 x N), N a compile-time constant so that d lives in
// registers (the accumulators of an asynchronous wgmma).
template <int N> CKT_INLINE CKT_DEVICE void wg_run(const wgmma_params *p, const unsigned char *sa, const unsigned char *sb)
{
    const unsigned t = ckt_thread_rank(), w = t / 32, lane = t % 32, g = lane / 4, tq = lane % 4;
    // d[4j + i] = D[16 w + g + 8 (i >= 2)][8 j + 2 tq + (i & 1)]; NaN where the
    // first step must ignore d (accumulate = 0)
    float d[N / 2];
    CKT_UNROLL
    for (int j = 0; j < N / 8; j++)
        CKT_UNROLL
        for (int i = 0; i < 4; i++)
            d[4 * j + i] = p->accumulate ? p->c[(16 * w + g + 8 * (i >= 2)) * N + 8 * j + 2 * tq + (i & 1)]
                                         : ckt_f32_from_bits(0x7fc00000u);
    CKT_UNROLL
    for (int s = 0; s < WG_KB / 32; s++) {
        // 16-bit (m16n8k16): a[0] = A[16w+g][2tq..+1], a[1] = row + 8, a[2] = cols + 8, a[3] = both
        //   (k-step s: cols + 16 s);
        // e4m3 (m16n8k32): a[0] = A[16w+g][4tq..+3], a[1] = row + 8, a[2] = cols + 16, a[3] = both
        //   (k-step s: cols + 32 s);
        // in bytes both are: a[q] = the 4 bytes of row 16w+g + 8 (q & 1) from byte
        // 32 s + 4 tq + 16 (q >> 1), the lowest k in the low bits
        uint32_t a[4];
        CKT_UNROLL
        for (unsigned q = 0; q < 4; q++) {
            const unsigned m = 16 * w + g + 8 * (q & 1), kb = 32 * s + 4 * tq + 16 * (q >> 1);
            const unsigned char *x = p->a + m * WG_KB + kb;
            a[q] = (uint32_t)x[0] | ((uint32_t)x[1] << 8) | ((uint32_t)x[2] << 16) | ((uint32_t)x[3] << 24);
        }
        const uint64_t da = p->rs ? 0 : wg_desc(sa, p->a_layout, 0, N, s);
        const uint64_t db = wg_desc(sb, p->b_layout, 1, N, s);
        ckt_wgmma_fence(); // d and a were written since the last wgmma
        wg_step<N>(p, d, a, da, db, s == 0 ? p->accumulate : 1);
    }
    ckt_wgmma_commit();
    ckt_wgmma_wait0();
    ckt_wgmma_fence_operand(d, N / 2);
    CKT_UNROLL
    for (int j = 0; j < N / 8; j++)
        CKT_UNROLL
        for (int i = 0; i < 4; i++)
            p->d[(16 * w + g + 8 * (i >= 2)) * N + 8 * j + 2 * tq + (i & 1)] = d[4 * j + i];
}
#endif

CKT_KERNEL(wgmma_kernel, wgmma_params, p)
{
#if defined(CKT_HAS_WGMMA)
    CKT_DYNAMIC_SHARED(unsigned char, smem_raw);
    unsigned char *sa = (unsigned char *)ckt_smem_align_1024(smem_raw), *sb = sa + WG_A_BYTES;
    const unsigned t = ckt_thread_rank(), N = (unsigned)p.n, e = WG_ELEM_BYTES(p.type), K = WG_KB / e;
    // sa[offset(m, k)] = A[m][k]; sb[offset(n, k)] = B[k][n] (e bytes each)
    for (unsigned i = t; i < 64 * K; i += 128) {
        const unsigned m = i / K, k = i % K;
        for (unsigned j = 0; j < e; j++)
            sa[wg_offset(p.a_layout, 0, N, e, m, k) + j] = p.a[i * e + j];
    }
    for (unsigned i = t; i < K * N; i += 128) {
        const unsigned k = i / N, n = i % N;
        for (unsigned j = 0; j < e; j++)
            sb[wg_offset(p.b_layout, 1, N, e, n, k) + j] = p.b[i * e + j];
    }
    ckt_fence_proxy_async(); // these writes before wgmma's reads
    ckt_block_sync();
    if (p.n == 64)
        wg_run<64>(&p, sa, sb);
    else if (p.n == 128)
        wg_run<128>(&p, sa, sb);
    else
        wg_run<256>(&p, sa, sb);
#else
    (void)p;
#endif
}

// A random element of the type, its bits in *bits and the value the reference
// uses. 16-bit: an integer in -3..3. e4m3: one of 0, -0 (0x80), +-0.25, +-0.5,
// +-1, +-1.5, +-2, +-3, +-4, decoded from its byte (ckt_f32_from_e4m3). Every
// product is then a multiple of 1/16 of magnitude at most 16, so D's sums of
// 128 of them and a C in -50..50 are exact in fp32, in any order.
float RandomElement(Rng &rng, int type, uint16_t *bits)
{
    if (type == WG_E4M3) {
        static const float mag[8] = {0.0f, 0.25f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f};
        const int i = rng.in(0, 15);
        *bits = ckt_e4m3_from_f32(i < 8 ? mag[i] : -mag[i - 8]); // -0.0f: 0x80
        return ckt_f32_from_e4m3((uint8_t)*bits);
    }
    const float x = (float)rng.in(-3, 3);
    *bits = type == WG_BF16 ? ckt_bf16_from_f32(x).bits : ckt_f16_from_f32(x).bits;
    return x;
}

// v: random elements of the type; bits: theirs, e bytes each, little-endian.
void RandomOperand(Rng &rng, int type, std::vector<float> &v, std::vector<uint8_t> &bits)
{
    const unsigned e = WG_ELEM_BYTES(type);
    bits.resize(v.size() * e);
    for (size_t i = 0; i < v.size(); i++) {
        uint16_t x;
        v[i] = RandomElement(rng, type, &x);
        for (unsigned j = 0; j < e; j++)
            bits[i * e + j] = (uint8_t)(x >> (8 * j));
    }
}

const char *LayoutName(int l)
{
    return l == K_SW128 ? "K-major 128B" : l == K_NONE ? "K-major none" : l == MN_SW128 ? "MN-major 128B" : "MN-major none";
}

void RunWgmma(int n, int type, int a_layout, int b_layout, int rs, int accumulate)
{
    Rng rng((uint64_t)(n * 131 + type * 17 + a_layout * 5 + b_layout * 3 + rs * 7 + accumulate));
    const int K = WG_KB / (int)WG_ELEM_BYTES(type);
    std::vector<float> a(64 * K), b(K * n), c(64 * n);
    std::vector<uint8_t> ah, bh; // the bits of a and b
    RandomOperand(rng, type, a, ah);
    RandomOperand(rng, type, b, bh);
    for (auto &x : c)
        x = (float)rng.in(-50, 50);
    DeviceBuf da(ah.size()), db(bh.size()), dc(c.size() * 4), dd(c.size() * 4);
    da.put(ah);
    db.put(bh);
    dc.put(c);
    wgmma_params p = {(const unsigned char *)da.p, (const unsigned char *)db.p, (const float *)dc.p, (float *)dd.p,
                      n, type, a_layout, b_layout, rs, accumulate};
    std::string what = std::string("m64n") + std::to_string(n) +
                       (type == WG_E4M3 ? "k32 e4m3 " : type == WG_BF16 ? "k16 bf16 " : "k16 f16 ") +
                       (rs ? "RS" : "SS A " + std::string(LayoutName(a_layout))) + ", B " + LayoutName(b_layout) +
                       ", accumulate " + std::to_string(accumulate);
    ASSERT_EQ(Launch(CKT_KERNEL_REF(wgmma_kernel), 128, WG_SMEM, &p), CKT_SUCCESS) << what << ": " << ckt_last_error();
    std::vector<float> d(64 * n);
    dd.get(d);
    int bad = 0;
    for (int m = 0; m < 64 && bad < 5; m++)
        for (int j = 0; j < n && bad < 5; j++) {
            float want = accumulate ? c[m * n + j] : 0.0f;
            for (int k = 0; k < K; k++)
                want += a[m * K + k] * b[k * n + j];
            if (d[m * n + j] != want) {
                ADD_FAILURE() << what << ": D[" << m << "][" << j << "] = " << d[m * n + j] << ", want " << want;
                bad++;
            }
        }
}

class Wgmma : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(Wgmma, SsBothKMajor)
{
    SKIP_WITHOUT_HOPPER();
    const int n = std::get<0>(GetParam()), type = std::get<1>(GetParam());
    for (int acc = 0; acc < 2; acc++) {
        RunWgmma(n, type, K_SW128, K_SW128, 0, acc);
        RunWgmma(n, type, K_NONE, K_NONE, 0, acc);
    }
    RunWgmma(n, type, K_SW128, K_NONE, 0, 1);
}

TEST_P(Wgmma, SsBMnMajor)
{
    SKIP_WITHOUT_HOPPER();
    const int n = std::get<0>(GetParam()), type = std::get<1>(GetParam());
    for (int acc = 0; acc < 2; acc++) {
        RunWgmma(n, type, K_SW128, MN_SW128, 0, acc);
        RunWgmma(n, type, K_NONE, MN_NONE, 0, acc);
    }
}

TEST_P(Wgmma, RsAFromRegisters)
{
    SKIP_WITHOUT_HOPPER();
    const int n = std::get<0>(GetParam()), type = std::get<1>(GetParam());
    for (int acc = 0; acc < 2; acc++) {
        RunWgmma(n, type, K_SW128, K_SW128, 1, acc);
        RunWgmma(n, type, K_SW128, MN_NONE, 1, acc);
    }
    RunWgmma(n, type, K_SW128, K_NONE, 1, 1);
    RunWgmma(n, type, K_SW128, MN_SW128, 1, 0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Wgmma,
                         ::testing::Combine(::testing::Values(64, 128, 256), ::testing::Values(WG_BF16, WG_F16)),
                         [](const ::testing::TestParamInfo<std::tuple<int, int>> &i) {
                             return "n" + std::to_string(std::get<0>(i.param)) +
                                    (std::get<1>(i.param) == WG_BF16 ? "_bf16" : "_f16");
                         });

// e4m3 (k32): both operands K-major, A from shared memory or registers.
class WgmmaE4m3 : public ::testing::TestWithParam<int> {};

TEST_P(WgmmaE4m3, SsBothKMajor)
{
    SKIP_WITHOUT_HOPPER();
    const int n = GetParam();
    for (int acc = 0; acc < 2; acc++) {
        RunWgmma(n, WG_E4M3, K_SW128, K_SW128, 0, acc);
        RunWgmma(n, WG_E4M3, K_NONE, K_NONE, 0, acc);
    }
    RunWgmma(n, WG_E4M3, K_SW128, K_NONE, 0, 1);
    RunWgmma(n, WG_E4M3, K_NONE, K_SW128, 0, 0);
}

TEST_P(WgmmaE4m3, RsAFromRegisters)
{
    SKIP_WITHOUT_HOPPER();
    const int n = GetParam();
    for (int acc = 0; acc < 2; acc++) {
        RunWgmma(n, WG_E4M3, K_SW128, K_SW128, 1, acc);
        RunWgmma(n, WG_E4M3, K_SW128, K_NONE, 1, acc);
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, WgmmaE4m3, ::testing::Values(64, 128, 256),
                         [](const ::testing::TestParamInfo<int> &i) { return "n" + std::to_string(i.param); });

// >>emulator diagnostics (CPU backend: a GPU hangs or faults instead)
#if defined(CKT_BACKEND_CPU) && defined(CKT_HAS_WGMMA)

typedef struct diag_params {
    int *out;
} diag_params;

// The wait site on its own line, so that the test can name its file:line.
void wait_phase0(uint64_t *bar) { ckt_mbar_wait(bar, 0); }
const int wait_phase0_line = __LINE__ - 1;

// Count 2, one arrival: phase 0 never completes.
CKT_KERNEL(mbar_deadlock_kernel, diag_params, p)
{
    CKT_SHARED_ARRAY(uint64_t, bar, 1);
    const unsigned t = ckt_thread_rank();
    if (t == 0)
        ckt_mbar_init(bar, 2);
    ckt_block_sync();
    if (t == 0)
        ckt_mbar_arrive(bar);
    wait_phase0(bar);
    p.out[t] = 1;
}

TEST(EmulatorDiagnostics, WaitOnAPhaseNobodyCompletesIsADeadlock)
{
    DeviceBuf out(64 * 4);
    diag_params p = {(int *)out.p};
    ckt_status s = ckt_rt_launch(CKT_KERNEL_REF(mbar_deadlock_kernel), ckt_dim3_make(1, 1, 1),
                                 ckt_dim3_make(64, 1, 1), 0, NULL, &p);
    if (s == CKT_SUCCESS)
        s = ckt_rt_device_synchronize();
    ASSERT_EQ(s, CKT_ERROR_KERNEL) << ckt_status_name(s);
    const std::string msg = ckt_last_error();
    const std::string at = std::string(__FILE__) + ":" + std::to_string(wait_phase0_line);
    EXPECT_NE(msg.find("deadlock"), std::string::npos) << msg;
    EXPECT_NE(msg.find("warps 0-1 lanes 0-31: wait for an mbarrier phase at " + at), std::string::npos) << msg;
}

// A wait and an arrival on a barrier no thread initialized (shared memory
// starts poisoned): the emulator stops the program naming the call.
CKT_KERNEL(mbar_uninit_wait_kernel, diag_params, p)
{
    CKT_SHARED_ARRAY(uint64_t, bar, 1);
    ckt_mbar_wait(bar, 0);
    p.out[ckt_thread_rank()] = 1;
}

CKT_KERNEL(mbar_uninit_arrive_kernel, diag_params, p)
{
    CKT_SHARED_ARRAY(uint64_t, bar, 1);
    ckt_mbar_arrive(bar);
    p.out[ckt_thread_rank()] = 1;
}

TEST(EmulatorDiagnosticsDeathTest, UninitializedMbarrierStopsTheProgram)
{
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    DeviceBuf out(32 * 4);
    diag_params p = {(int *)out.p};
    EXPECT_DEATH(ckt_rt_launch(CKT_KERNEL_REF(mbar_uninit_wait_kernel), ckt_dim3_make(1, 1, 1),
                               ckt_dim3_make(32, 1, 1), 0, NULL, &p),
                 "ckt_mbar_wait: the mbarrier at 0x[0-9a-f]+ was never initialized \\(ckt_mbar_init\\) at "
                 ".*hopper_test.cc:[0-9]+");
    EXPECT_DEATH(ckt_rt_launch(CKT_KERNEL_REF(mbar_uninit_arrive_kernel), ckt_dim3_make(1, 1, 1),
                               ckt_dim3_make(32, 1, 1), 0, NULL, &p),
                 "ckt_mbar_arrive: the mbarrier at 0x[0-9a-f]+ was never initialized");
}

// A box whose first column is not at a multiple of 16 bytes: an H100 stops
// with "illegal instruction", the emulator names the call.
TEST(EmulatorDiagnosticsDeathTest, TmaColumnNotAtSixteenBytesStopsTheProgram)
{
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    DeviceBuf src(40 * 208), out(16 * 48);
    tma_params p;
    memset(&p, 0, sizeof p);
    ASSERT_EQ(ckt_tma_make_2d(&p.map, src.p, 2, 40, 100, 208, 16, 24, CKT_SWIZZLE_NONE), 0);
    p.out = (unsigned char *)out.p;
    p.col = 3;
    p.bytes = 16 * 48;
    EXPECT_DEATH(ckt_rt_launch(CKT_KERNEL_REF(tma_kernel), ckt_dim3_make(1, 1, 1), ckt_dim3_make(64, 1, 1),
                               p.bytes + 1024, NULL, &p),
                 "ckt_tma_load: column 3 of 2-byte elements is not at a multiple of 16 bytes.* at "
                 ".*hopper_test.cc:[0-9]+");
}

#endif // CKT_BACKEND_CPU && CKT_HAS_WGMMA

} // namespace

#else // CKT_BACKEND_AMD

TEST(Hopper, NotOnAmd) { GTEST_SKIP() << "mbarrier, TMA and wgmma are NVIDIA Hopper instructions"; }

#endif
