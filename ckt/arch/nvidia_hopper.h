/* ckt/arch/nvidia_hopper.h — mbarrier, TMA and wgmma on NVIDIA sm_90a
 * (API and layouts: ckt/arch/hopper.h). Included by ckt/arch/nvidia.h. */
#ifndef CKT_ARCH_NVIDIA_HOPPER_H
#define CKT_ARCH_NVIDIA_HOPPER_H

#include "ckt/arch/config.h"
#include "ckt/arch/hopper.h"
#include "ckt/arch/nvidia.h" /* ckt__smem_u32 (nvidia.h includes this file at its end) */

#if defined(CKT_BACKEND_NVIDIA)

#include <cuda.h> /* CUtensorMap and its enums only: the driver is reached through the runtime */
#include <cuda_runtime.h>

/* The kernel takes its parameter struct as a grid constant, so that the
 * address of a ckt_tma_desc inside it is a parameter-space address that the
 * TMA unit can read. */
#define CKT_KERNEL_GRID_CONSTANT(name, T, p) static __global__ void name(const __grid_constant__ T p)
#define CKT_KERNEL_GRID_CONSTANT_BOUNDS(name, T, p, max_threads, min_blocks)                     \
    static __global__ void __launch_bounds__(max_threads, min_blocks) name(const __grid_constant__ T p)

/* >>host: the tensor map, through the driver entry point (no -lcuda) */
typedef CUresult (*ckt__tma_encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                       const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
                                       CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                       CUtensorMapFloatOOBfill);

/* rank 2 or 4: dims, box innermost first; strides of dims[1..] in bytes */
static inline int ckt__tma_encode(ckt_tma_desc *d, const void *base, unsigned elem_bytes, unsigned rank,
                                  const uint64_t *dims, const uint64_t *strides, const unsigned *boxes, ckt_swizzle sw)
{
    static ckt__tma_encode_fn encode;
    if (!encode) {
        void *fn = NULL;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) !=
                cudaSuccess ||
            q != cudaDriverEntryPointSuccess || !fn)
            return -1;
        encode = (ckt__tma_encode_fn)fn;
    }
    const CUtensorMapDataType ty = elem_bytes == 1   ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                   : elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16
                                                     : CU_TENSOR_MAP_DATA_TYPE_UINT32;
    const CUtensorMapSwizzle swz = sw == CKT_SWIZZLE_128B  ? CU_TENSOR_MAP_SWIZZLE_128B
                                   : sw == CKT_SWIZZLE_64B ? CU_TENSOR_MAP_SWIZZLE_64B
                                   : sw == CKT_SWIZZLE_32B ? CU_TENSOR_MAP_SWIZZLE_32B
                                                           : CU_TENSOR_MAP_SWIZZLE_NONE;
    cuuint64_t gd[4], gs[3];
    cuuint32_t box[4], estr[4] = {1, 1, 1, 1};
    for (unsigned i = 0; i < rank; i++) {
        gd[i] = dims[i];
        box[i] = boxes[i];
        if (i + 1 < rank)
            gs[i] = strides[i];
    }
    CUresult r = encode((CUtensorMap *)d, ty, rank, (void *)base, gd, gs, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, swz,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? 0 : -1;
}

static inline int ckt_tma_make_2d(ckt_tma_desc *d, const void *base, unsigned elem_bytes, uint64_t rows,
                                  uint64_t cols, uint64_t row_stride_bytes, unsigned box_rows, unsigned box_cols,
                                  ckt_swizzle sw)
{
    if (!d || !ckt__tma_args_ok(base, elem_bytes, rows, cols, row_stride_bytes, box_rows, box_cols, sw))
        return -1;
    const uint64_t dims[2] = {cols, rows}, strides[1] = {row_stride_bytes};
    const unsigned box[2] = {box_cols, box_rows};
    return ckt__tma_encode(d, base, elem_bytes, 2, dims, strides, box, sw);
}

static inline int ckt_tma_make_4d(ckt_tma_desc *d, const void *base, unsigned elem_bytes, const uint64_t dims[4],
                                  const uint64_t strides[3], const unsigned box[4], ckt_swizzle sw)
{
    if (!d || !ckt__tma_args4_ok(base, elem_bytes, dims, strides, box, sw))
        return -1;
    return ckt__tma_encode(d, base, elem_bytes, 4, dims, strides, box, sw);
}

/* >>named barriers (every NVIDIA target): ids 1..15, count threads */
CKT_INLINE CKT_DEVICE void ckt_named_barrier_sync(unsigned id, unsigned count)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
CKT_INLINE CKT_DEVICE void ckt_named_barrier_arrive(unsigned id, unsigned count)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

/* >>mbarrier */
CKT_INLINE CKT_DEVICE void ckt_mbar_init(uint64_t *bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(ckt__smem_u32(bar)), "r"(count) : "memory");
}
CKT_INLINE CKT_DEVICE void ckt_mbar_arrive(uint64_t *bar)
{
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(ckt__smem_u32(bar))
                 : "memory");
}
CKT_INLINE CKT_DEVICE void ckt_mbar_arrive_expect_tx(uint64_t *bar, unsigned bytes)
{
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(
                     ckt__smem_u32(bar)),
                 "r"(bytes)
                 : "memory");
}
CKT_INLINE CKT_DEVICE void ckt_mbar_wait(uint64_t *bar, unsigned parity)
{
    asm volatile("{\n.reg .pred done;\nckt_mbar_wait_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra ckt_mbar_wait_%=;\n}\n" ::"r"(ckt__smem_u32(bar)),
                 "r"(parity)
                 : "memory");
}

/* >>TMA */
CKT_INLINE CKT_DEVICE void ckt_tma_load_2d(void *smem, const ckt_tma_desc *d, int col, int row, uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3}], [%4];\n" ::"r"(ckt__smem_u32(smem)),
                 "l"((uint64_t)(uintptr_t)d), "r"(col), "r"(row), "r"(ckt__smem_u32(bar))
                 : "memory");
}
CKT_INLINE CKT_DEVICE void ckt_tma_load_4d(void *smem, const ckt_tma_desc *d, int c0, int c1, int c2, int c3,
                                           uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(ckt__smem_u32(smem)),
                 "l"((uint64_t)(uintptr_t)d), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(ckt__smem_u32(bar))
                 : "memory");
}
CKT_INLINE CKT_DEVICE void ckt_fence_proxy_async(void)
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

#endif /* sm_90 */

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CKT_HAS_WGMMA 1

/* >>wgmma */
CKT_INLINE CKT_DEVICE uint64_t ckt_wgmma_desc(const void *smem, ckt_swizzle sw, unsigned lbo, unsigned sbo)
{
    const uint64_t mode = sw == CKT_SWIZZLE_128B ? 1 : sw == CKT_SWIZZLE_64B ? 2 : sw == CKT_SWIZZLE_32B ? 3 : 0;
    return (uint64_t)((ckt__smem_u32(smem) & 0x3ffffu) >> 4) | ((uint64_t)((lbo >> 4) & 0x3fffu) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3fffu) << 32) | (mode << 62);
}
CKT_INLINE CKT_DEVICE void ckt_wgmma_fence(void) { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
CKT_INLINE CKT_DEVICE void ckt_wgmma_commit(void)
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
CKT_INLINE CKT_DEVICE void ckt_wgmma_wait0(void) { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
CKT_INLINE CKT_DEVICE void ckt_wgmma_wait1(void) { asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory"); }

/* Keeps the compiler from moving accesses of d across an async wgmma. */
#define ckt_wgmma_fence_operand(d, n)                                                             \
    do {                                                                                          \
        CKT_UNROLL                                                                                \
        for (int ckt__i = 0; ckt__i < (n); ckt__i++)                                              \
            asm volatile("" : "+f"((d)[ckt__i])::"memory");                                       \
    } while (0)

/* Register budgets of warp-specialized kernels (setmaxnreg; the kernel
 * needs __launch_bounds__(threads, 1)). n: a multiple of 8 in 24..256. */
#define ckt_setmaxnreg_inc(n) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(n))
#define ckt_setmaxnreg_dec(n) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(n))

#include "ckt/arch/nvidia_wgmma.h"

#endif /* sm_90a */

#endif /* CKT_BACKEND_NVIDIA */
#endif /* CKT_ARCH_NVIDIA_HOPPER_H */
