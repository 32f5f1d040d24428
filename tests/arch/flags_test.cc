// Flags between blocks (ckt_flag_store_release / ckt_flag_wait_geq,
// ckt/arch/arch.h) on every backend: blocks that wait for blocks launched
// after them, and data passed through the release / acquire. The grid is a
// few blocks, resident at once on any GPU; on the emulator a waiting block is
// parked (tests/arch/cpu/emulator_test.cc checks that machinery itself).
#include "ckt/host.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

#define FLAG_THREADS 128
#define FLAG_WORDS 1000

typedef struct flag_params {
    int *flag;   // [blocks], zero
    int *data;   // [blocks][FLAG_WORDS]
    int *count;  // one counter
    int *order;  // [blocks]: when each block finished, from the counter
    unsigned blocks;
} flag_params;

// Block i waits for block i + 1's flag, then reads the block's words (written
// by all its threads before the flag), adds its own and writes its words for
// block i - 1: data[i][w] = sum over blocks j >= i of (j + w).
CKT_KERNEL(flag_chain_kernel, flag_params, p)
{
    const unsigned i = ckt_block_idx_x(), t = ckt_thread_rank();
    if (t == 0 && i + 1 < p.blocks)
        ckt_flag_wait_geq(&p.flag[i + 1], 1);
    ckt_block_sync();
    for (unsigned w = t; w < FLAG_WORDS; w += FLAG_THREADS) {
        const int below = i + 1 < p.blocks ? p.data[(size_t)(i + 1) * FLAG_WORDS + w] : 0;
        p.data[(size_t)i * FLAG_WORDS + w] = below + (int)(i + w);
    }
    ckt_block_sync();
    if (t == 0) {
        p.order[i] = ckt_atomic_add_i32(p.count, 1);
        ckt_flag_store_release(&p.flag[i], 1);
    }
}

TEST(Flags, BlocksWaitForLaterBlocksAndSeeTheirWrites)
{
    const unsigned blocks = 6;
    flag_params p;
    p.blocks = blocks;
    ASSERT_EQ(ckt_rt_malloc((void **)&p.flag, 4 * blocks), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc((void **)&p.data, 4 * (size_t)blocks * FLAG_WORDS), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc((void **)&p.count, 4), CKT_SUCCESS);
    ASSERT_EQ(ckt_rt_malloc((void **)&p.order, 4 * blocks), CKT_SUCCESS);
    for (int round = 0; round < 3; round++) {
        ASSERT_EQ(ckt_rt_memset(p.flag, 0, 4 * blocks), CKT_SUCCESS);
        ASSERT_EQ(ckt_rt_memset(p.data, 0xFF, 4 * (size_t)blocks * FLAG_WORDS), CKT_SUCCESS);
        ASSERT_EQ(ckt_rt_memset(p.count, 0, 4), CKT_SUCCESS);
        ASSERT_EQ(ckt_rt_launch(CKT_KERNEL_REF(flag_chain_kernel), ckt_dim3_make(blocks, 1, 1),
                                ckt_dim3_make(FLAG_THREADS, 1, 1), 0, NULL, &p),
                  CKT_SUCCESS)
            << ckt_last_error();
        ASSERT_EQ(ckt_rt_device_synchronize(), CKT_SUCCESS);
        std::vector<int> data((size_t)blocks * FLAG_WORDS), order(blocks);
        ASSERT_EQ(ckt_rt_memcpy(data.data(), p.data, data.size() * 4, CKT_D2H), CKT_SUCCESS);
        ASSERT_EQ(ckt_rt_memcpy(order.data(), p.order, 4 * blocks, CKT_D2H), CKT_SUCCESS);
        for (unsigned i = 0; i < blocks; i++) {
            for (unsigned w = 0; w < FLAG_WORDS; w++) {
                int want = 0;
                for (unsigned j = i; j < blocks; j++)
                    want += (int)(j + w);
                ASSERT_EQ(data[(size_t)i * FLAG_WORDS + w], want) << "block " << i << " word " << w;
            }
            EXPECT_EQ(order[i], (int)(blocks - 1 - i)) << "block " << i << " finished out of the chain's order";
        }
    }
    ckt_rt_free(p.flag);
    ckt_rt_free(p.data);
    ckt_rt_free(p.count);
    ckt_rt_free(p.order);
}

} // namespace
