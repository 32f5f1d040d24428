/* ckt/arch/hopper.h — Hopper's asynchronous instructions: mbarriers, the
 * tensor memory accelerator (TMA) and warpgroup MMA (wgmma). Included by
 * ckt/arch/arch.h; the implementations live in ckt/arch/nvidia_hopper.h
 * (sm_90a) and ckt/arch/cpu/hopper.h (the emulator's nv profile, exact
 * functional models). docs/tile.md#hopper shows them working together.
 *
 * Feature macro, defined to 1 where the instructions exist:
 *   CKT_HAS_WGMMA   an NVIDIA sm_90a device pass, and the emulator's nv profile
 * The host functions (ckt_tma_make_2d) exist on the nvidia and cpu backends.
 *
 * >>shared-memory alignment
 *   The swizzle patterns below are functions of the shared-memory address:
 *   put every swizzled tile at a 1024-byte aligned address
 *   (ckt_smem_align_1024, for the launch's dynamic shared memory).
 *
 * >>swizzle (ckt_swizzle): a tile of rows of W bytes (W = 32, 64 or 128)
 *   stored with 16-byte chunk c of row r at chunk c ^ (r % (W/16)) within
 *   each group of 8 rows; exactly, for byte address x (from a 1024-aligned
 *   base): x ^ (((x >> 7) & (W/16 - 1)) << 4). CKT_SWIZZLE_NONE stores rows
 *   as they are. TMA writes this pattern, wgmma's descriptors read it.
 *
 * >>mbarrier: a 64-bit object in shared memory that completes a phase when
 *   `count` arrivals have happened and every byte announced by expect_tx has
 *   landed; its phase parity then flips and the next phase starts with the
 *   same count. Phases are waited for by parity (0, 1, 0, ...).
 *     void ckt_mbar_init(uint64_t *bar, unsigned count);
 *         One thread; then ckt_block_sync() before any other use.
 *     void ckt_mbar_arrive(uint64_t *bar);
 *     void ckt_mbar_arrive_expect_tx(uint64_t *bar, unsigned bytes);
 *         Announces `bytes` more to land in this phase, then arrives.
 *     void ckt_mbar_wait(uint64_t *bar, unsigned parity);
 *         Returns once the phase of that parity has completed (the current
 *         phase parity differs from `parity`).
 *
 * >>named barriers (NVIDIA, the emulator's nv profile): a barrier of
 *   `count` threads (a multiple of 32) at id 1..15 (0 is ckt_block_sync's)
 *     void ckt_named_barrier_sync(unsigned id, unsigned count);    arrive, wait
 *     void ckt_named_barrier_arrive(unsigned id, unsigned count);  arrive only
 *   It completes once count threads have arrived; warpgroups take turns
 *   with them (FlashAttention-3's ping-pong: ckt/fmha/fwd_sm90_body.h).
 *
 * >>TMA (2-D tiles; the tensor map is made on the host, passed to the
 *   kernel inside its parameter struct, and the kernel declared with
 *   CKT_KERNEL_GRID_CONSTANT so that its address is a parameter address):
 *     int ckt_tma_make_2d(ckt_tma_desc *d, const void *base, unsigned elem_bytes,
 *                         uint64_t rows, uint64_t cols, uint64_t row_stride_bytes,
 *                         unsigned box_rows, unsigned box_cols, ckt_swizzle sw);
 *         Host. A row-major [rows][cols] tensor, boxes of box_rows x box_cols.
 *         Returns 0, or -1 if the arguments break a TMA rule: base 16-byte
 *         aligned, row_stride_bytes a multiple of 16, box sides 1..256,
 *         box_cols * elem_bytes a multiple of 16, and with a swizzle exactly
 *         W bytes (one swizzled row per box row).
 *     void ckt_tma_load_2d(void *smem, const ckt_tma_desc *d, int col, int row, uint64_t *bar);
 *         One thread. Copies the box whose top-left element is (row, col)
 *         into smem (box rows of box_cols * elem_bytes bytes, swizzled as the
 *         map says); elements outside the tensor (negative coordinates too)
 *         are zeros. The copy completes box_rows * box_cols * elem_bytes
 *         bytes on bar (announce them with ckt_mbar_arrive_expect_tx).
 *         smem 128-byte aligned, 1024 when swizzled; col * elem_bytes a
 *         multiple of 16, negative too (an H100 stops with "illegal
 *         instruction" otherwise; row is free).
 *     int ckt_tma_make_4d(ckt_tma_desc *d, const void *base, unsigned elem_bytes,
 *                         const uint64_t dims[4], const uint64_t strides[3],
 *                         const unsigned box[4], ckt_swizzle sw);
 *     void ckt_tma_load_4d(void *smem, const ckt_tma_desc *d, int c0, int c1, int c2, int c3,
 *                          uint64_t *bar);
 *         The same for a 4-D tensor: dims innermost first (dims[0] contiguous),
 *         strides[i] the bytes between neighbours along dims[i + 1] (multiples
 *         of 16, nonzero; they may overlap, e.g. [b][s][h][d] as (d, s, h, b)),
 *         box[i] the box's extent along dims[i] (1..256), coordinates c0..c3
 *         innermost first. The box lands as box[3] x box[2] x box[1] rows of
 *         box[0] * elem_bytes bytes; c0 * elem_bytes a multiple of 16.
 *     void ckt_fence_proxy_async(void);
 *         Orders this thread's ordinary shared-memory writes before later
 *         reads by TMA or wgmma (fence.proxy.async.shared::cta); each writing
 *         thread fences, then the block syncs.
 *
 * >>wgmma: a warpgroup (4 consecutive warps, the first a multiple of 4)
 *   computes D(64 x N) += A(64 x 16) B(16 x N), fp32 accumulators, bf16 or
 *   f16 inputs, asynchronously:
 *     ckt_wgmma_fence();                      before the first wgmma that reads
 *                                             registers written since
 *     ckt_wgmma_m64n{N}k16_{bf16,f16}_ss[_bmn](float d[N/2], uint64_t desc_a,
 *                                             uint64_t desc_b, int accumulate);
 *     ckt_wgmma_m64n{N}k16_{bf16,f16}_rs[_bmn](float d[N/2], const uint32_t a[4],
 *                                             uint64_t desc_b, int accumulate);
 *     ckt_wgmma_commit();                     closes a group of wgmmas
 *     ckt_wgmma_wait0(); ckt_wgmma_wait1();   until at most 0 / 1 groups pend
 *   N = 64, 80, 128, 176, 192 or 256. accumulate = 0: D = A B (d's old values ignored).
 *   Until the wait that covers it, d must not be read or written, and the
 *   shared memory the wgmma reads must not change.
 *   D's layout (warp w = warp index % 4 of the warpgroup, g = lane / 4,
 *   t = lane % 4), the mma.sync m16n8 accumulator of ckt/arch/mma.h for each
 *   n8 column block j of the warp's 16 rows:
 *     d[4j + i] = D[16 w + g + 8 (i >= 2)][8 j + 2 t + (i & 1)]
 *   _rs: A from registers, the warp's 16 rows as mma.sync m16n8k16's A
 *   fragment (ckt/arch/mma.h): a[0] = A[16w+g][2t..2t+1], a[1] = row +8,
 *   a[2] = A[16w+g][2t+8..2t+9], a[3] = row +8.
 *   _ss: A from shared memory through desc_a. B always from shared memory.
 *   Operands are K-major (rows of the [M][K] / [N][K] matrix contiguous in
 *   k) unless _bmn: B MN-major ([K][N], rows of N contiguous).
 *
 *   Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"):
 *     uint64_t ckt_wgmma_desc(const void *smem, ckt_swizzle sw, unsigned lbo, unsigned sbo);
 *     uint64_t ckt_wgmma_desc_advance(uint64_t desc, uint32_t bytes);
 *   smem is where element (0, 0) of this instruction's operand lies; lbo and
 *   sbo (bytes, multiples of 16) place the 8-row core groups. With T = 16 /
 *   elem_bytes elements per 16-byte chunk and W the swizzle width, element
 *   (r, k) of an operand (r the M or N index) lies at byte
 *     K-major, swizzled:   (r / 8) sbo + (r % 8) W + k elem_bytes     (k elem_bytes < W)
 *     K-major, NONE:       (r / 8) sbo + (k / T) lbo + (r % 8) 16 + (k % T) elem_bytes
 *     MN-major, swizzled:  (r / (W/e)) lbo + (k / 8) sbo + (k % 8) W + (r % (W/e)) e
 *     MN-major, NONE:      (r / T) sbo + (k / 8) lbo + (k % 8) 16 + (r % T) e
 *   (e = elem_bytes), then swizzled. Dense 128B-swizzled K-major tiles of
 *   64 bf16 a row: sbo = 1024, and k-step s starts 32 s bytes into the row.
 */
#ifndef CKT_ARCH_HOPPER_H
#define CKT_ARCH_HOPPER_H

#include "ckt/arch/config.h"

/* A TMA tensor map: 128 opaque bytes (CUtensorMap on NVIDIA, which wants
 * them 64-byte aligned; the emulator keeps its own fields in the same space
 * and needs no more than 8: a 64-byte aligned struct passed by value makes
 * gcc note an ABI change at every kernel that takes one). */
#if defined(CKT_BACKEND_NVIDIA)
#define CKT__TMA_DESC_ALIGN 64
#else
#define CKT__TMA_DESC_ALIGN 8
#endif
typedef struct ckt_tma_desc {
    __attribute__((aligned(CKT__TMA_DESC_ALIGN))) uint64_t opaque[16];
} ckt_tma_desc;

typedef enum ckt_swizzle {
    CKT_SWIZZLE_NONE = 0,
    CKT_SWIZZLE_32B = 32,
    CKT_SWIZZLE_64B = 64,
    CKT_SWIZZLE_128B = 128
} ckt_swizzle;

/* Whether a TMA 2-D map with these arguments is legal (ckt_tma_make_2d's
 * rules, shared by the backends). */
static inline int ckt__tma_args_ok(const void *base, unsigned elem_bytes, uint64_t rows, uint64_t cols,
                                   uint64_t row_stride_bytes, unsigned box_rows, unsigned box_cols, ckt_swizzle sw)
{
    if (!base || (uintptr_t)base % 16 || (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4))
        return 0;
    if (rows == 0 || cols == 0 || row_stride_bytes % 16 || row_stride_bytes < cols * elem_bytes)
        return 0;
    if (box_rows < 1 || box_rows > 256 || box_cols < 1 || box_cols > 256 || (box_cols * elem_bytes) % 16)
        return 0;
    if (sw != CKT_SWIZZLE_NONE && box_cols * elem_bytes != (unsigned)sw)
        return 0;
    return sw == CKT_SWIZZLE_NONE || sw == CKT_SWIZZLE_32B || sw == CKT_SWIZZLE_64B || sw == CKT_SWIZZLE_128B;
}

/* Whether a TMA 4-D map with these arguments is legal (ckt_tma_make_4d). */
static inline int ckt__tma_args4_ok(const void *base, unsigned elem_bytes, const uint64_t *dims, const uint64_t *strides,
                                    const unsigned *box, ckt_swizzle sw)
{
    if (!dims || !strides || !box || !ckt__tma_args_ok(base, elem_bytes, dims[1], dims[0], strides[0], box[1], box[0], sw))
        return 0;
    for (int i = 1; i < 4; i++)
        if (dims[i] == 0 || box[i] < 1 || box[i] > 256)
            return 0;
    for (int i = 0; i < 3; i++)
        if (strides[i] == 0 || strides[i] % 16 || strides[i] >= (1ull << 40))
            return 0;
    return 1;
}

/* The swizzle of ckt_swizzle sw applied to byte offset x (from a 1024-byte
 * aligned base). */
CKT_INLINE CKT_HOST_DEVICE uint32_t ckt_swizzle_offset(uint32_t x, ckt_swizzle sw)
{
    return sw == CKT_SWIZZLE_NONE ? x : x ^ (((x >> 7) & ((uint32_t)sw / 16u - 1u)) << 4);
}

/* The descriptor of the operand `bytes` further on in shared memory (a
 * multiple of 16; the start address is the descriptor's low field): one
 * add in a loop instead of a new descriptor. */
CKT_INLINE CKT_HOST_DEVICE uint64_t ckt_wgmma_desc_advance(uint64_t desc, uint32_t bytes)
{
    return desc + (uint64_t)(bytes >> 4);
}

/* p rounded up to a multiple of 1024 bytes (the base of swizzled tiles in
 * the launch's dynamic shared memory: allocate 1 KiB more). */
CKT_INLINE CKT_HOST_DEVICE void *ckt_smem_align_1024(void *p)
{
    return (void *)(((uintptr_t)p + 1023u) & ~(uintptr_t)1023u);
}

#endif /* CKT_ARCH_HOPPER_H */
