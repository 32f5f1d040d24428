/* ckt/arch/nvidia.h — the device API on NVIDIA GPUs (nvcc; sm_80, sm_90a).
 * Names and meaning: see ckt/arch/arch.h. This file and ckt/arch/amd.h are the
 * only places that name vendor intrinsics. Include through ckt/arch/arch.h. */
#ifndef CKT_ARCH_NVIDIA_H
#define CKT_ARCH_NVIDIA_H

#include "ckt/arch/config.h"
#include "ckt/arch/numeric.h"

#if defined(CKT_BACKEND_NVIDIA)

#include <cuda_runtime.h>

#define CKT_WARP_SIZE 32
#define CKT_ARCH_NAME "nvidia"
#define CKT__FULL_MASK 0xffffffffu

/* >>ids */
CKT_INLINE CKT_DEVICE unsigned ckt_thread_idx_x(void) { return threadIdx.x; }
CKT_INLINE CKT_DEVICE unsigned ckt_thread_idx_y(void) { return threadIdx.y; }
CKT_INLINE CKT_DEVICE unsigned ckt_thread_idx_z(void) { return threadIdx.z; }
CKT_INLINE CKT_DEVICE unsigned ckt_block_idx_x(void) { return blockIdx.x; }
CKT_INLINE CKT_DEVICE unsigned ckt_block_idx_y(void) { return blockIdx.y; }
CKT_INLINE CKT_DEVICE unsigned ckt_block_idx_z(void) { return blockIdx.z; }
CKT_INLINE CKT_DEVICE unsigned ckt_block_dim_x(void) { return blockDim.x; }
CKT_INLINE CKT_DEVICE unsigned ckt_block_dim_y(void) { return blockDim.y; }
CKT_INLINE CKT_DEVICE unsigned ckt_block_dim_z(void) { return blockDim.z; }
CKT_INLINE CKT_DEVICE unsigned ckt_grid_dim_x(void) { return gridDim.x; }
CKT_INLINE CKT_DEVICE unsigned ckt_grid_dim_y(void) { return gridDim.y; }
CKT_INLINE CKT_DEVICE unsigned ckt_grid_dim_z(void) { return gridDim.z; }
CKT_INLINE CKT_DEVICE unsigned ckt_thread_rank(void)
{
    return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
}
CKT_INLINE CKT_DEVICE unsigned ckt_lane_id(void)
{
    unsigned l;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
    return l;
}
CKT_INLINE CKT_DEVICE unsigned ckt_warp_id(void) { return ckt_thread_rank() / CKT_WARP_SIZE; }

/* >>synchronisation */
CKT_INLINE CKT_DEVICE void ckt_block_sync(void) { __syncthreads(); }
CKT_INLINE CKT_DEVICE void ckt_warp_sync(void) { __syncwarp(CKT__FULL_MASK); }
CKT_INLINE CKT_DEVICE void ckt_threadfence(void) { __threadfence(); }

/* >>warp collectives (all lanes of the warp take part) */
CKT_INLINE CKT_DEVICE uint32_t ckt_warp_shfl_xor_u32(uint32_t v, unsigned m) { return __shfl_xor_sync(CKT__FULL_MASK, v, (int)m); }
CKT_INLINE CKT_DEVICE uint32_t ckt_warp_shfl_idx_u32(uint32_t v, unsigned s) { return __shfl_sync(CKT__FULL_MASK, v, (int)s); }
CKT_INLINE CKT_DEVICE uint32_t ckt_warp_shfl_up_u32(uint32_t v, unsigned d) { return __shfl_up_sync(CKT__FULL_MASK, v, d); }
CKT_INLINE CKT_DEVICE uint32_t ckt_warp_shfl_down_u32(uint32_t v, unsigned d) { return __shfl_down_sync(CKT__FULL_MASK, v, d); }
CKT_INLINE CKT_DEVICE float ckt_warp_shfl_xor_f32(float v, unsigned m) { return __shfl_xor_sync(CKT__FULL_MASK, v, (int)m); }
CKT_INLINE CKT_DEVICE float ckt_warp_shfl_idx_f32(float v, unsigned s) { return __shfl_sync(CKT__FULL_MASK, v, (int)s); }
CKT_INLINE CKT_DEVICE float ckt_warp_shfl_up_f32(float v, unsigned d) { return __shfl_up_sync(CKT__FULL_MASK, v, d); }
CKT_INLINE CKT_DEVICE float ckt_warp_shfl_down_f32(float v, unsigned d) { return __shfl_down_sync(CKT__FULL_MASK, v, d); }
CKT_INLINE CKT_DEVICE uint64_t ckt_warp_ballot(int pred) { return (uint64_t)__ballot_sync(CKT__FULL_MASK, pred); }
CKT_INLINE CKT_DEVICE int ckt_warp_any(int pred) { return __any_sync(CKT__FULL_MASK, pred); }
CKT_INLINE CKT_DEVICE int ckt_warp_all(int pred) { return __all_sync(CKT__FULL_MASK, pred); }

/* >>shared memory */
#define CKT_SHARED_ARRAY(type, name, count) __shared__ __align__(16) type name[(count)]
#define CKT_DYNAMIC_SHARED(type, name)                                                            \
    extern __shared__ __align__(16) unsigned char ckt__dynamic_smem[];                            \
    type *name = (type *)ckt__dynamic_smem

/* >>fast math: ex2.approx / rcp.approx (flush-to-zero) */
CKT_INLINE CKT_DEVICE float ckt_exp2f_fast(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
CKT_INLINE CKT_DEVICE float ckt_rcpf_fast(float x)
{
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* >>atomics */
CKT_INLINE CKT_DEVICE int ckt_atomic_add_i32(int *p, int v) { return atomicAdd(p, v); }
CKT_INLINE CKT_DEVICE float ckt_atomic_add_f32(float *p, float v) { return atomicAdd(p, v); }

/* >>kernels and launch */
typedef const void *ckt_kernel_ref;

#define CKT_KERNEL(name, T, p) static __global__ void name(T p)
#define CKT_KERNEL_BOUNDS(name, T, p, max_threads)                                                \
    static __global__ void __launch_bounds__(max_threads) name(T p)
#define CKT_KERNEL_REF(name) ((ckt_kernel_ref)(name))

/* Launches on `stream`; returns the cudaError_t as an int (0 = success). Raises
 * the kernel's dynamic shared-memory limit when more than 48 KiB is asked. */
static inline int ckt_arch_launch(ckt_kernel_ref k, ckt_dim3 grid, ckt_dim3 block,
                                  size_t dyn_shared, void *stream, const void *params)
{
    void *args[1];
    args[0] = (void *)params;
    if (dyn_shared > 48u * 1024u) {
        cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)dyn_shared);
        if (e != cudaSuccess)
            return (int)e;
    }
    cudaError_t e = cudaLaunchKernel(k, dim3(grid.x, grid.y, grid.z),
                                     dim3(block.x, block.y, block.z), args, dyn_shared,
                                     (cudaStream_t)stream);
    return (int)e;
}

static inline const char *ckt_arch_error_string(int err)
{
    return cudaGetErrorString((cudaError_t)err);
}

#endif /* CKT_BACKEND_NVIDIA */
#endif /* CKT_ARCH_NVIDIA_H */
