/* ckt/arch/amd.h — the device API on AMD CDNA GPUs (hipcc; gfx90a, gfx940).
 * Names and meaning: see ckt/arch/arch.h. Include through ckt/arch/arch.h. */
#ifndef CKT_ARCH_AMD_H
#define CKT_ARCH_AMD_H

#include "ckt/arch/config.h"
#include "ckt/arch/numeric.h"
#include "ckt/arch/vector.h"

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
/* programmatic dependent launch: none on AMD (launches stay ordered) */
CKT_INLINE CKT_DEVICE void ckt_grid_dependents_launch(void) {}
CKT_INLINE CKT_DEVICE void ckt_grid_dependency_wait(void) {}

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
CKT_INLINE CKT_DEVICE void ckt_atomic_add_f32x4(float *p, float x0, float x1, float x2, float x3)
{
    atomicAdd(p, x0);
    atomicAdd(p + 1, x1);
    atomicAdd(p + 2, x2);
    atomicAdd(p + 3, x3);
}

/* >>flags between blocks (ckt/arch/arch.h) */
CKT_INLINE CKT_DEVICE void ckt_flag_store_release(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
CKT_INLINE CKT_DEVICE void ckt_flag_wait_geq(const int *p, int v)
{
    while (__atomic_load_n(p, __ATOMIC_ACQUIRE) < v)
        __builtin_amdgcn_s_sleep(1);
}

/* >>memory operations (API and semantics: ckt/arch/memory.h) */

/* No cp.async on CDNA: the copy happens at once (a load and an LDS store),
 * commit and wait do nothing. CKT_HAS_CP_ASYNC stays undefined. */
CKT_INLINE CKT_DEVICE void ckt__copy_zero_fill(void *smem, const void *gmem, unsigned bytes,
                                               unsigned src_bytes)
{
    unsigned char *d = (unsigned char *)smem;
    const unsigned char *s = (const unsigned char *)gmem;
    for (unsigned i = 0; i < bytes; i++)
        d[i] = i < src_bytes ? s[i] : 0;
}
CKT_INLINE CKT_DEVICE void ckt_cp_async_16(void *smem, const void *gmem, unsigned src_bytes)
{
    if (src_bytes >= 16)
        *(uint4 *)smem = *(const uint4 *)gmem;
    else
        ckt__copy_zero_fill(smem, gmem, 16, src_bytes);
}
CKT_INLINE CKT_DEVICE void ckt_cp_async_8(void *smem, const void *gmem, unsigned src_bytes)
{
    if (src_bytes >= 8)
        *(uint2 *)smem = *(const uint2 *)gmem;
    else
        ckt__copy_zero_fill(smem, gmem, 8, src_bytes);
}
CKT_INLINE CKT_DEVICE void ckt_cp_async_4(void *smem, const void *gmem, unsigned src_bytes)
{
    if (src_bytes >= 4)
        *(uint32_t *)smem = *(const uint32_t *)gmem;
    else
        ckt__copy_zero_fill(smem, gmem, 4, src_bytes);
}
CKT_INLINE CKT_DEVICE void ckt_cp_async_commit(void) {}
CKT_INLINE CKT_DEVICE void ckt_cp_async_wait(unsigned n) { (void)n; }
CKT_INLINE CKT_DEVICE void ckt_cp_async_wait_all(void) {}

/* Buffer loads/stores through the LLVM raw buffer intrinsics (clang 15 has no
 * __builtin_amdgcn_raw_buffer_* yet): rsrc is the 128-bit buffer resource,
 * voffset the per-lane byte offset, soffset a uniform one, aux the cache bits. */
typedef int ckt__i32x2 __attribute__((ext_vector_type(2)));
typedef int ckt__i32x4 __attribute__((ext_vector_type(4)));
__device__ int ckt__amd_raw_buffer_load_b32(ckt__i32x4 rsrc, int voffset, int soffset, int aux)
    __asm("llvm.amdgcn.raw.buffer.load.i32");
__device__ ckt__i32x2 ckt__amd_raw_buffer_load_b64(ckt__i32x4 rsrc, int voffset, int soffset,
                                                   int aux) __asm("llvm.amdgcn.raw.buffer.load.v2i32");
__device__ ckt__i32x4 ckt__amd_raw_buffer_load_b128(ckt__i32x4 rsrc, int voffset, int soffset,
                                                    int aux) __asm("llvm.amdgcn.raw.buffer.load.v4i32");
__device__ void ckt__amd_raw_buffer_store_b32(int v, ckt__i32x4 rsrc, int voffset, int soffset,
                                              int aux) __asm("llvm.amdgcn.raw.buffer.store.i32");
__device__ void ckt__amd_raw_buffer_store_b64(ckt__i32x2 v, ckt__i32x4 rsrc, int voffset,
                                              int soffset, int aux)
    __asm("llvm.amdgcn.raw.buffer.store.v2i32");
__device__ void ckt__amd_raw_buffer_store_b128(ckt__i32x4 v, ckt__i32x4 rsrc, int voffset,
                                               int soffset, int aux)
    __asm("llvm.amdgcn.raw.buffer.store.v4i32");

/* Word 3 of the buffer resource on GFX9/CDNA: DATA_FORMAT (bits 15-18) = 4,
 * BUF_DATA_FORMAT_32 (zero would mark the buffer invalid), all else 0. */
#define CKT__AMD_BUFFER_WORD3 0x00020000
/* An offset past every range (num_records < 2^31): the access is dropped and
 * a load returns zeros. */
#define CKT__AMD_BUFFER_OOB ((int)0x80000000u)

/* The buffer resource of [base, base + num_bytes): base address (48 bits),
 * stride 0 (so the range is counted in bytes), num_records = num_bytes. */
CKT_INLINE CKT_DEVICE ckt__i32x4 ckt__amd_buffer_rsrc(const void *base, int64_t num_bytes)
{
    uint64_t a = (uint64_t)(uintptr_t)base;
    ckt__i32x4 r;
    r.x = (int)(uint32_t)a;
    r.y = (int)(uint32_t)((a >> 32) & 0xffffu);
    r.z = (int)(num_bytes > 0x7fffffff ? 0x7fffffff : num_bytes);
    r.w = CKT__AMD_BUFFER_WORD3;
    return r;
}
/* The lane's voffset: byte_offset when the whole access is in range, else
 * CKT__AMD_BUFFER_OOB (all or nothing, as on the other backends). */
CKT_INLINE CKT_DEVICE int ckt__amd_buffer_voffset(int64_t num_bytes, int64_t off, int64_t n)
{
    return off >= 0 && off <= num_bytes - n ? (int)off : CKT__AMD_BUFFER_OOB;
}
CKT_INLINE CKT_DEVICE uint32_t ckt_buffer_load_u32(const void *base, int64_t num_bytes, int64_t off)
{
    return (uint32_t)ckt__amd_raw_buffer_load_b32(ckt__amd_buffer_rsrc(base, num_bytes),
                                                  ckt__amd_buffer_voffset(num_bytes, off, 4), 0, 0);
}
CKT_INLINE CKT_DEVICE ckt_u32x2 ckt_buffer_load_u32x2(const void *base, int64_t num_bytes, int64_t off)
{
    ckt__i32x2 v = ckt__amd_raw_buffer_load_b64(ckt__amd_buffer_rsrc(base, num_bytes),
                                                ckt__amd_buffer_voffset(num_bytes, off, 8), 0, 0);
    return ckt_u32x2_make((uint32_t)v.x, (uint32_t)v.y);
}
CKT_INLINE CKT_DEVICE ckt_u32x4 ckt_buffer_load_u32x4(const void *base, int64_t num_bytes, int64_t off)
{
    ckt__i32x4 v = ckt__amd_raw_buffer_load_b128(ckt__amd_buffer_rsrc(base, num_bytes),
                                                 ckt__amd_buffer_voffset(num_bytes, off, 16), 0, 0);
    return ckt_u32x4_make((uint32_t)v.x, (uint32_t)v.y, (uint32_t)v.z, (uint32_t)v.w);
}
CKT_INLINE CKT_DEVICE void ckt_buffer_store_u32(void *base, int64_t num_bytes, int64_t off, uint32_t v)
{
    ckt__amd_raw_buffer_store_b32((int)v, ckt__amd_buffer_rsrc(base, num_bytes),
                                  ckt__amd_buffer_voffset(num_bytes, off, 4), 0, 0);
}
CKT_INLINE CKT_DEVICE void ckt_buffer_store_u32x2(void *base, int64_t num_bytes, int64_t off, ckt_u32x2 v)
{
    ckt__i32x2 w;
    w.x = (int)v.x;
    w.y = (int)v.y;
    ckt__amd_raw_buffer_store_b64(w, ckt__amd_buffer_rsrc(base, num_bytes),
                                  ckt__amd_buffer_voffset(num_bytes, off, 8), 0, 0);
}
CKT_INLINE CKT_DEVICE void ckt_buffer_store_u32x4(void *base, int64_t num_bytes, int64_t off, ckt_u32x4 v)
{
    ckt__i32x4 w;
    w.x = (int)v.x;
    w.y = (int)v.y;
    w.z = (int)v.z;
    w.w = (int)v.w;
    ckt__amd_raw_buffer_store_b128(w, ckt__amd_buffer_rsrc(base, num_bytes),
                                   ckt__amd_buffer_voffset(num_bytes, off, 16), 0, 0);
}
typedef unsigned ckt__u32x4v __attribute__((ext_vector_type(4)));
CKT_INLINE CKT_DEVICE ckt_u32x4 ckt_global_load_u32x4(const void *p)
{
    const ckt__u32x4v u = *(const ckt__u32x4v *)p;
    return ckt_u32x4_make(u.x, u.y, u.z, u.w);
}
CKT_INLINE CKT_DEVICE void ckt_global_store_u32x4(void *p, ckt_u32x4 v)
{
    ckt__u32x4v u;
    u.x = v.x;
    u.y = v.y;
    u.z = v.z;
    u.w = v.w;
    *(ckt__u32x4v *)p = u;
}

/* >>warp matrix instructions (API and fragment layouts: ckt/arch/mma.h) */
#define CKT_HAS_MFMA 1

typedef _Float16 ckt__f16x4 __attribute__((ext_vector_type(4)));
typedef short ckt__bf16x4 __attribute__((ext_vector_type(4))); /* bf16 bits, as the _1k builtins take */
typedef float ckt__f32x4 __attribute__((ext_vector_type(4)));
typedef float ckt__f32x16 __attribute__((ext_vector_type(16)));

/* Two packed registers as the builtins' 4-element vectors (element 0 = low half of r[0]). */
CKT_INLINE CKT_DEVICE ckt__f16x4 ckt__amd_f16x4(const uint32_t r[2])
{
    ckt__i32x2 v;
    v.x = (int)r[0];
    v.y = (int)r[1];
    return __builtin_bit_cast(ckt__f16x4, v);
}
CKT_INLINE CKT_DEVICE ckt__bf16x4 ckt__amd_bf16x4(const uint32_t r[2])
{
    ckt__i32x2 v;
    v.x = (int)r[0];
    v.y = (int)r[1];
    return __builtin_bit_cast(ckt__bf16x4, v);
}

CKT_INLINE CKT_DEVICE void ckt_mfma_32x32x8_f16(float d[16], const uint32_t a[2], const uint32_t b[2],
                                                const float c[16])
{
    ckt__f32x16 acc;
    for (int i = 0; i < 16; i++)
        acc[i] = c[i];
    acc = __builtin_amdgcn_mfma_f32_32x32x8f16(ckt__amd_f16x4(a), ckt__amd_f16x4(b), acc, 0, 0, 0);
    for (int i = 0; i < 16; i++)
        d[i] = acc[i];
}
CKT_INLINE CKT_DEVICE void ckt_mfma_32x32x8_bf16(float d[16], const uint32_t a[2], const uint32_t b[2],
                                                 const float c[16])
{
    ckt__f32x16 acc;
    for (int i = 0; i < 16; i++)
        acc[i] = c[i];
    acc = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(ckt__amd_bf16x4(a), ckt__amd_bf16x4(b), acc, 0, 0, 0);
    for (int i = 0; i < 16; i++)
        d[i] = acc[i];
}
CKT_INLINE CKT_DEVICE void ckt_mfma_16x16x16_f16(float d[4], const uint32_t a[2], const uint32_t b[2],
                                                 const float c[4])
{
    ckt__f32x4 acc;
    for (int i = 0; i < 4; i++)
        acc[i] = c[i];
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(ckt__amd_f16x4(a), ckt__amd_f16x4(b), acc, 0, 0, 0);
    for (int i = 0; i < 4; i++)
        d[i] = acc[i];
}
CKT_INLINE CKT_DEVICE void ckt_mfma_16x16x16_bf16(float d[4], const uint32_t a[2], const uint32_t b[2],
                                                  const float c[4])
{
    ckt__f32x4 acc;
    for (int i = 0; i < 4; i++)
        acc[i] = c[i];
    acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(ckt__amd_bf16x4(a), ckt__amd_bf16x4(b), acc, 0, 0, 0);
    for (int i = 0; i < 4; i++)
        d[i] = acc[i];
}

/* fp8 e4m3 x e4m3 -> fp32 on gfx940-942 (CKT_HAS_MFMA_FP8 in their device
 * pass; layout in ckt/arch/mma.h): the inputs are read as e4m3 FNUZ
 * (ckt/arch/numeric.h), 8 bytes a lane as one 64-bit operand, byte e =
 * element e. gfx90a has no fp8 MFMA: the functions trap there, and the fp8
 * launchers refuse such devices before launching (ckt/fmha/fp8.h). gfx950's
 * fp8 MFMA reads OCP bytes, another format: not enabled here. */
#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define CKT_HAS_MFMA_FP8 1
#endif
CKT_INLINE CKT_DEVICE long ckt__amd_fp8x8(const uint32_t r[2])
{
    return (long)((uint64_t)r[0] | ((uint64_t)r[1] << 32));
}
CKT_INLINE CKT_DEVICE void ckt_mfma_32x32x16_e4m3(float d[16], const uint32_t a[2], const uint32_t b[2],
                                                  const float c[16])
{
    ckt__f32x16 acc;
    for (int i = 0; i < 16; i++)
        acc[i] = c[i];
#if defined(CKT_HAS_MFMA_FP8)
    acc = __builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8(ckt__amd_fp8x8(a), ckt__amd_fp8x8(b), acc, 0, 0, 0);
#else
    (void)a;
    (void)b;
    __builtin_trap();
#endif
    for (int i = 0; i < 16; i++)
        d[i] = acc[i];
}
CKT_INLINE CKT_DEVICE void ckt_mfma_16x16x32_e4m3(float d[4], const uint32_t a[2], const uint32_t b[2],
                                                  const float c[4])
{
    ckt__f32x4 acc;
    for (int i = 0; i < 4; i++)
        acc[i] = c[i];
#if defined(CKT_HAS_MFMA_FP8)
    acc = __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(ckt__amd_fp8x8(a), ckt__amd_fp8x8(b), acc, 0, 0, 0);
#else
    (void)a;
    (void)b;
    __builtin_trap();
#endif
    for (int i = 0; i < 4; i++)
        d[i] = acc[i];
}

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

/* No programmatic dependent launch on AMD: an ordinary launch. */
static inline int ckt_arch_launch_dependent(ckt_kernel_ref k, ckt_dim3 grid, ckt_dim3 block,
                                            size_t dyn_shared, void *stream, const void *params)
{
    return ckt_arch_launch(k, grid, block, dyn_shared, stream, params);
}

static inline const char *ckt_arch_error_string(int err)
{
    return hipGetErrorString((hipError_t)err);
}

#endif /* CKT_BACKEND_AMD */
#endif /* CKT_ARCH_AMD_H */
