/* ckt/arch/config.h — backend detection, qualifiers and the few types every
 * layer shares.
 *
 * The backend follows from the compiler, never from a user macro:
 *   hipcc (__HIP__ or __HIPCC__)  -> CKT_BACKEND_AMD     (CDNA, wave 64)
 *   nvcc  (__CUDACC__)            -> CKT_BACKEND_NVIDIA  (warp 32)
 *   anything else (gcc, g++)      -> CKT_BACKEND_CPU     (the SIMT emulator)
 * Exactly one of the three is defined to 1.
 *
 * Qualifiers (empty where the backend has no such notion):
 *   CKT_DEVICE       a function callable from kernels
 *   CKT_HOST_DEVICE  callable from host code and kernels
 *   CKT_INLINE       static inline, forced inline on GPUs
 */
#ifndef CKT_ARCH_CONFIG_H
#define CKT_ARCH_CONFIG_H

/* The CPU backend uses POSIX (mmap, threads, clocks). Under a strict -std=c11
 * ask glibc for it; this only helps when ckt comes before other system headers,
 * so the headers also cope without it. */
#if !defined(_DEFAULT_SOURCE) && !defined(__CUDACC__) && !defined(__HIPCC__)
#define _DEFAULT_SOURCE 1
#endif

#include <stddef.h>
#include <stdint.h>

#if defined(__HIP__) || defined(__HIPCC__)
#define CKT_BACKEND_AMD 1
#define CKT_BACKEND_NAME "amd"
#elif defined(__CUDACC__)
#define CKT_BACKEND_NVIDIA 1
#define CKT_BACKEND_NAME "nvidia"
#else
#define CKT_BACKEND_CPU 1
#define CKT_BACKEND_NAME "cpu"
#endif

#if defined(CKT_BACKEND_CPU)
#define CKT_DEVICE
#define CKT_HOST_DEVICE
#define CKT_INLINE static inline
#else
#define CKT_DEVICE __device__
#define CKT_HOST_DEVICE __host__ __device__
#define CKT_INLINE static inline __attribute__((always_inline))
#endif

/* A device function kept out of line on NVIDIA: for a rarely taken path
 * whose inlined copies would grow a hot kernel's code (instruction cache).
 * Inlined elsewhere (AMD: a call would cost scratch). */
#if defined(CKT_BACKEND_NVIDIA)
#define CKT_DEVICE_OUTLINE static __device__ __noinline__
#else
#define CKT_DEVICE_OUTLINE CKT_INLINE CKT_DEVICE
#endif

/* Fully unroll the next loop on GPUs (its trip count must be a compile-time
 * constant after inlining): `CKT_UNROLL for (int i = 0; i < N; i++) ...`.
 * Nothing on the CPU, where unrolling buys nothing for the emulator. */
#define CKT__PRAGMA(x) _Pragma(#x)
#if defined(CKT_BACKEND_CPU)
#define CKT_UNROLL
#define CKT_UNROLL_BY(n)
#elif defined(CKT_BACKEND_AMD)
/* clang acts on a plain "unroll" before inlining has made the trip count a
 * constant and then never unrolls fully: ask for full unrolling explicitly */
#define CKT_UNROLL _Pragma("clang loop unroll(full)")
#define CKT_UNROLL_BY(n) CKT__PRAGMA(clang loop unroll_count(n))
#else
#define CKT_UNROLL _Pragma("unroll")
#define CKT_UNROLL_BY(n) CKT__PRAGMA(unroll n) /* partial: n iterations per trip */
#endif

/* True while compiling code that runs on a GPU (device pass of nvcc/hipcc). */
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define CKT_DEVICE_PASS 1
#endif

#ifdef __cplusplus
#define CKT_EXTERN_C extern "C"
#define CKT_EXTERN_C_BEGIN extern "C" {
#define CKT_EXTERN_C_END }
#else
#define CKT_EXTERN_C
#define CKT_EXTERN_C_BEGIN
#define CKT_EXTERN_C_END
#endif

/* A grid or block extent. Zero-initialised fields are not defaulted: say 1. */
typedef struct ckt_dim3 {
    unsigned x, y, z;
} ckt_dim3;

CKT_INLINE ckt_dim3 ckt_dim3_make(unsigned x, unsigned y, unsigned z)
{
    ckt_dim3 d;
    d.x = x;
    d.y = y;
    d.z = z;
    return d;
}

/* A compile-time check whose message says what to change:
 *   CKT_STATIC_ASSERT(HDIM % 16 == 0, "HDIM must be a multiple of 16 (the MMA K)"); */
#ifdef __cplusplus
#define CKT_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define CKT_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* The zero initializer of any ckt struct, in C and C++ alike:
 *   ckt_fmha_fwd_args a = CKT_ZERO_INIT;
 * {0} in C (gcc and clang exempt it from -Wmissing-field-initializers), {} in
 * C++ (value-initialization: no warning, and valid whatever the first member's
 * type, an enum included). */
#ifdef __cplusplus
#define CKT_ZERO_INIT {}
#else
#define CKT_ZERO_INIT {0}
#endif

/* ceil(a / b) for positive b. */
#define CKT_CEIL_DIV(a, b) (((a) + (b)-1) / (b))

#endif /* CKT_ARCH_CONFIG_H */
