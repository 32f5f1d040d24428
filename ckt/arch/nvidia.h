/* ckt/arch/nvidia.h — the device API on NVIDIA GPUs (nvcc; sm_80, sm_90a).
 * Names and meaning: see ckt/arch/arch.h. This file and ckt/arch/amd.h are the
 * only places that name vendor intrinsics. Include through ckt/arch/arch.h. */
#ifndef CKT_ARCH_NVIDIA_H
#define CKT_ARCH_NVIDIA_H

#include "ckt/arch/config.h"
#include "ckt/arch/numeric.h"
#include "ckt/arch/vector.h"

#if defined(CKT_BACKEND_NVIDIA)

#include <cuda_runtime.h>
#include <string.h>

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
    /* not volatile: a pure read, so repeated calls fold into one */
    unsigned l;
    asm("mov.u32 %0, %%laneid;" : "=r"(l));
    return l;
}
CKT_INLINE CKT_DEVICE unsigned ckt_warp_id(void) { return ckt_thread_rank() / CKT_WARP_SIZE; }

/* >>synchronisation */
CKT_INLINE CKT_DEVICE void ckt_block_sync(void) { __syncthreads(); }
CKT_INLINE CKT_DEVICE void ckt_warp_sync(void) { __syncwarp(CKT__FULL_MASK); }
CKT_INLINE CKT_DEVICE void ckt_threadfence(void) { __threadfence(); }
/* programmatic dependent launch (sm_90; no-ops below): this block lets the
 * stream's next kernel start launching / waits until the stream's previous
 * kernel has completed and its writes are visible */
CKT_INLINE CKT_DEVICE void ckt_grid_dependents_launch(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
CKT_INLINE CKT_DEVICE void ckt_grid_dependency_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

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
/* >>flags between blocks (ckt/arch/arch.h) */
CKT_INLINE CKT_DEVICE void ckt_flag_store_release(int *p, int v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(__cvta_generic_to_global(p)), "r"(v) : "memory");
#else
    __threadfence();
    *(volatile int *)p = v;
#endif
}
CKT_INLINE CKT_DEVICE void ckt_flag_wait_geq(const int *p, int v)
{
    for (;;) {
        int x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
        asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(x) : "l"(__cvta_generic_to_global(p)) : "memory");
#else
        x = *(const volatile int *)p;
        __threadfence();
#endif
        if (x >= v)
            break;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
        __nanosleep(32);
#endif
    }
}

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
CKT_INLINE CKT_DEVICE void ckt_atomic_add_f32x4(float *p, float x0, float x1, float x2, float x3)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(__cvta_generic_to_global(p)), "f"(x0),
                 "f"(x1), "f"(x2), "f"(x3)
                 : "memory");
#else
    atomicAdd(p, x0);
    atomicAdd(p + 1, x1);
    atomicAdd(p + 2, x2);
    atomicAdd(p + 3, x3);
#endif
}

/* >>memory operations (API and semantics: ckt/arch/memory.h) */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "ckt needs sm_80 or newer on NVIDIA (cp.async, ldmatrix, mma.sync m16n8k16 with bf16)"
#endif
#define CKT_HAS_CP_ASYNC 1

/* The shared-state-space address of a generic pointer into shared memory. */
CKT_INLINE CKT_DEVICE uint32_t ckt__smem_u32(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* cp.async: .cg (L2 only) for 16 bytes, .ca for 4 and 8 (.cg takes only 16);
 * the src-size operand zero-fills the rest (PTX ISA, "cp.async"). */
CKT_INLINE CKT_DEVICE void ckt_cp_async_16(void *smem, const void *gmem, unsigned src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(ckt__smem_u32(smem)),
                 "l"(__cvta_generic_to_global(gmem)), "r"(src_bytes)
                 : "memory");
}
CKT_INLINE CKT_DEVICE void ckt_cp_async_8(void *smem, const void *gmem, unsigned src_bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(ckt__smem_u32(smem)),
                 "l"(__cvta_generic_to_global(gmem)), "r"(src_bytes)
                 : "memory");
}
CKT_INLINE CKT_DEVICE void ckt_cp_async_4(void *smem, const void *gmem, unsigned src_bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(ckt__smem_u32(smem)),
                 "l"(__cvta_generic_to_global(gmem)), "r"(src_bytes)
                 : "memory");
}
CKT_INLINE CKT_DEVICE void ckt_cp_async_commit(void)
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
/* cp.async.wait_group takes an immediate: one case per count (a constant n
 * folds to one instruction); n > 7 waits as 7 does, which is stricter. */
CKT_INLINE CKT_DEVICE void ckt_cp_async_wait(unsigned n)
{
    switch (n) {
    case 0: asm volatile("cp.async.wait_group 0;\n" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;\n" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;\n" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;\n" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;\n" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;\n" ::: "memory"); break;
    case 6: asm volatile("cp.async.wait_group 6;\n" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 7;\n" ::: "memory"); break;
    }
}
CKT_INLINE CKT_DEVICE void ckt_cp_async_wait_all(void)
{
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}

/* Buffer loads/stores: a guarded plain access (NVIDIA has no range-checked
 * loads); same results as AMD's buffer instructions. */
CKT_INLINE CKT_DEVICE int ckt__buffer_in_range(int64_t num_bytes, int64_t off, int64_t n)
{
    return off >= 0 && off <= num_bytes - n;
}
CKT_INLINE CKT_DEVICE uint32_t ckt_buffer_load_u32(const void *base, int64_t num_bytes, int64_t off)
{
    return ckt__buffer_in_range(num_bytes, off, 4) ? *(const uint32_t *)((const char *)base + off)
                                                   : 0u;
}
CKT_INLINE CKT_DEVICE ckt_u32x2 ckt_buffer_load_u32x2(const void *base, int64_t num_bytes, int64_t off)
{
    ckt_u32x2 v = {0, 0};
    if (ckt__buffer_in_range(num_bytes, off, 8)) {
        uint2 u = *(const uint2 *)((const char *)base + off);
        v.x = u.x;
        v.y = u.y;
    }
    return v;
}
CKT_INLINE CKT_DEVICE ckt_u32x4 ckt_buffer_load_u32x4(const void *base, int64_t num_bytes, int64_t off)
{
    ckt_u32x4 v = {0, 0, 0, 0};
    if (ckt__buffer_in_range(num_bytes, off, 16)) {
        uint4 u = *(const uint4 *)((const char *)base + off);
        v.x = u.x;
        v.y = u.y;
        v.z = u.z;
        v.w = u.w;
    }
    return v;
}
CKT_INLINE CKT_DEVICE void ckt_buffer_store_u32(void *base, int64_t num_bytes, int64_t off, uint32_t v)
{
    if (ckt__buffer_in_range(num_bytes, off, 4))
        *(uint32_t *)((char *)base + off) = v;
}
CKT_INLINE CKT_DEVICE void ckt_buffer_store_u32x2(void *base, int64_t num_bytes, int64_t off, ckt_u32x2 v)
{
    if (ckt__buffer_in_range(num_bytes, off, 8))
        *(uint2 *)((char *)base + off) = make_uint2(v.x, v.y);
}
CKT_INLINE CKT_DEVICE void ckt_buffer_store_u32x4(void *base, int64_t num_bytes, int64_t off, ckt_u32x4 v)
{
    if (ckt__buffer_in_range(num_bytes, off, 16))
        *(uint4 *)((char *)base + off) = make_uint4(v.x, v.y, v.z, v.w);
}
CKT_INLINE CKT_DEVICE ckt_u32x4 ckt_global_load_u32x4(const void *p)
{
    const uint4 u = *(const uint4 *)p;
    return ckt_u32x4_make(u.x, u.y, u.z, u.w);
}
CKT_INLINE CKT_DEVICE void ckt_global_store_u32x4(void *p, ckt_u32x4 v)
{
    *(uint4 *)p = make_uint4(v.x, v.y, v.z, v.w);
}

/* >>warp matrix instructions (API and fragment layouts: ckt/arch/mma.h) */
#define CKT_HAS_MMA_SYNC 1

CKT_INLINE CKT_DEVICE void ckt_mma_m16n8k16_f16(float d[4], const uint32_t a[4], const uint32_t b[2],
                                                const float c[4])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
                   "f"(c[1]), "f"(c[2]), "f"(c[3]));
}
CKT_INLINE CKT_DEVICE void ckt_mma_m16n8k16_bf16(float d[4], const uint32_t a[4], const uint32_t b[2],
                                                 const float c[4])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
                   "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

/* fp8 e4m3 x e4m3 -> fp32 (sm_89+, CKT_HAS_MMA_FP8 where the device pass
 * targets one; layout in ckt/arch/mma.h). Below sm_89 the instruction does
 * not exist: the function traps, and the fp8 launchers refuse such devices
 * with CKT_ERROR_UNSUPPORTED before launching. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define CKT_HAS_MMA_FP8 1
#endif
CKT_INLINE CKT_DEVICE void ckt_mma_m16n8k32_e4m3(float d[4], const uint32_t a[4], const uint32_t b[2],
                                                 const float c[4])
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
                   "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
    (void)a;
    (void)b;
    d[0] = c[0], d[1] = c[1], d[2] = c[2], d[3] = c[3];
    __trap();
#endif
}

CKT_INLINE CKT_DEVICE void ckt_ldmatrix_x1(uint32_t r[1], const void *row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
                 : "=r"(r[0]) : "r"(ckt__smem_u32(row)));
}
CKT_INLINE CKT_DEVICE void ckt_ldmatrix_x2(uint32_t r[2], const void *row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(ckt__smem_u32(row)));
}
CKT_INLINE CKT_DEVICE void ckt_ldmatrix_x4(uint32_t r[4], const void *row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(ckt__smem_u32(row)));
}
CKT_INLINE CKT_DEVICE void ckt_ldmatrix_x1_trans(uint32_t r[1], const void *row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
                 : "=r"(r[0]) : "r"(ckt__smem_u32(row)));
}
CKT_INLINE CKT_DEVICE void ckt_ldmatrix_x2_trans(uint32_t r[2], const void *row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(ckt__smem_u32(row)));
}
CKT_INLINE CKT_DEVICE void ckt_ldmatrix_x4_trans(uint32_t r[4], const void *row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(ckt__smem_u32(row)));
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CKT_HAS_STMATRIX 1
CKT_INLINE CKT_DEVICE void ckt_stmatrix_x4(void *row, const uint32_t r[4])
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};\n" ::"r"(ckt__smem_u32(row)),
                 "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
}
CKT_INLINE CKT_DEVICE void ckt_stmatrix_x4_trans(void *row, const uint32_t r[4])
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1,%2,%3,%4};\n" ::"r"(ckt__smem_u32(row)),
                 "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
}
#endif

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

/* As ckt_arch_launch, with programmatic stream serialization where the
 * kernel's own code was built for sm_90 or later (its binary version: only
 * there is its ckt_grid_dependency_wait() compiled in): the kernel may begin
 * while the previous one in the stream finishes, and waits there before
 * touching what that one writes. Elsewhere, or when the driver declines the
 * attribute, an ordinary launch. */
static inline int ckt_arch_launch_dependent(ckt_kernel_ref k, ckt_dim3 grid, ckt_dim3 block,
                                            size_t dyn_shared, void *stream, const void *params)
{
    cudaFuncAttributes fa;
    if (cudaFuncGetAttributes(&fa, k) != cudaSuccess || fa.binaryVersion < 90)
        return ckt_arch_launch(k, grid, block, dyn_shared, stream, params);
    if (dyn_shared > 48u * 1024u) {
        cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn_shared);
        if (e != cudaSuccess)
            return (int)e;
    }
    void *args[1];
    args[0] = (void *)params;
    cudaLaunchAttribute attr[1];
    memset(attr, 0, sizeof attr);
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg; /* every field set below */
    cfg.gridDim = dim3(grid.x, grid.y, grid.z);
    cfg.blockDim = dim3(block.x, block.y, block.z);
    cfg.dynamicSmemBytes = dyn_shared;
    cfg.stream = (cudaStream_t)stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    cudaError_t e = cudaLaunchKernelExC(&cfg, k, args);
    if (e == cudaErrorNotSupported) {
        (void)cudaGetLastError(); /* not sticky: clear it, then the ordinary launch */
        return ckt_arch_launch(k, grid, block, dyn_shared, stream, params);
    }
    return (int)e;
}

static inline const char *ckt_arch_error_string(int err)
{
    return cudaGetErrorString((cudaError_t)err);
}

#include "ckt/arch/nvidia_hopper.h"

#endif /* CKT_BACKEND_NVIDIA */
#endif /* CKT_ARCH_NVIDIA_H */
