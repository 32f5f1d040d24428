/* ckt/arch/amd.h — the device API on AMD CDNA GPUs (hipcc; gfx90a, gfx940).
 * Names and meaning: see ckt/arch/arch.h. Include through ckt/arch/arch.h. */
#ifndef CKT_ARCH_AMD_H
#define CKT_ARCH_AMD_H

#include "ckt/arch/config.h"
#include "ckt/arch/numeric.h"

#if defined(CKT_BACKEND_AMD)

#include <hip/hip_runtime.h>

#define CKT_WARP_SIZE 64 /* CDNA wavefront */
#define CKT_ARCH_NAME "amd"

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
CKT_INLINE CKT_DEVICE unsigned ckt_lane_id(void) { return __lane_id(); }
CKT_INLINE CKT_DEVICE unsigned ckt_warp_id(void) { return ckt_thread_rank() / CKT_WARP_SIZE; }

/* >>synchronisation */
CKT_INLINE CKT_DEVICE void ckt_block_sync(void) { __syncthreads(); }
CKT_INLINE CKT_DEVICE void ckt_warp_sync(void) { __builtin_amdgcn_wave_barrier(); }
CKT_INLINE CKT_DEVICE void ckt_threadfence(void) { __threadfence(); }

/* >>warp (wavefront) collectives */
CKT_INLINE CKT_DEVICE uint32_t ckt_warp_shfl_xor_u32(uint32_t v, unsigned m) { return (uint32_t)__shfl_xor((int)v, (int)m); }
CKT_INLINE CKT_DEVICE uint32_t ckt_warp_shfl_idx_u32(uint32_t v, unsigned s) { return (uint32_t)__shfl((int)v, (int)s); }
CKT_INLINE CKT_DEVICE uint32_t ckt_warp_shfl_up_u32(uint32_t v, unsigned d) { return (uint32_t)__shfl_up((int)v, d); }
CKT_INLINE CKT_DEVICE uint32_t ckt_warp_shfl_down_u32(uint32_t v, unsigned d) { return (uint32_t)__shfl_down((int)v, d); }
CKT_INLINE CKT_DEVICE float ckt_warp_shfl_xor_f32(float v, unsigned m) { return __shfl_xor(v, (int)m); }
CKT_INLINE CKT_DEVICE float ckt_warp_shfl_idx_f32(float v, unsigned s) { return __shfl(v, (int)s); }
CKT_INLINE CKT_DEVICE float ckt_warp_shfl_up_f32(float v, unsigned d) { return __shfl_up(v, d); }
CKT_INLINE CKT_DEVICE float ckt_warp_shfl_down_f32(float v, unsigned d) { return __shfl_down(v, d); }
CKT_INLINE CKT_DEVICE uint64_t ckt_warp_ballot(int pred) { return (uint64_t)__ballot(pred); }
CKT_INLINE CKT_DEVICE int ckt_warp_any(int pred) { return __ballot(pred) != 0; }
CKT_INLINE CKT_DEVICE int ckt_warp_all(int pred) { return __ballot(!pred) == 0; }

/* >>shared memory (LDS) */
#define CKT_SHARED_ARRAY(type, name, count) __shared__ __attribute__((aligned(16))) type name[(count)]
#define CKT_DYNAMIC_SHARED(type, name)                                                            \
    extern __shared__ __attribute__((aligned(16))) unsigned char ckt__dynamic_smem[];             \
    type *name = (type *)ckt__dynamic_smem

/* >>fast math: v_exp_f32 / v_rcp_f32 */
CKT_INLINE CKT_DEVICE float ckt_exp2f_fast(float x) { return exp2f(x); }
CKT_INLINE CKT_DEVICE float ckt_rcpf_fast(float x) { return __builtin_amdgcn_rcpf(x); }

/* >>atomics */
CKT_INLINE CKT_DEVICE int ckt_atomic_add_i32(int *p, int v) { return atomicAdd(p, v); }
CKT_INLINE CKT_DEVICE float ckt_atomic_add_f32(float *p, float v) { return atomicAdd(p, v); }

/* >>kernels and launch */
typedef const void *ckt_kernel_ref;

#define CKT_KERNEL(name, T, p) static __global__ void name(T p)
#define CKT_KERNEL_BOUNDS(name, T, p, max_threads)                                                \
    static __global__ void __launch_bounds__(max_threads) name(T p)
#define CKT_KERNEL_REF(name) ((ckt_kernel_ref)(name))

static inline int ckt_arch_launch(ckt_kernel_ref k, ckt_dim3 grid, ckt_dim3 block,
                                  size_t dyn_shared, void *stream, const void *params)
{
    void *args[1];
    args[0] = (void *)params;
    hipError_t e = hipLaunchKernel(k, dim3(grid.x, grid.y, grid.z), dim3(block.x, block.y, block.z),
                                   args, dyn_shared, (hipStream_t)stream);
    return (int)e;
}

static inline const char *ckt_arch_error_string(int err)
{
    return hipGetErrorString((hipError_t)err);
}

#endif /* CKT_BACKEND_AMD */
#endif /* CKT_ARCH_AMD_H */
