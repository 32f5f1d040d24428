/* ckt/host/runtime.h — ckt_rt_*: one runtime API over HIP, CUDA and the CPU
 * emulator. Plain C; every call returns a ckt_status and, on failure, leaves a
 * detail message (ckt_last_error()).
 *
 *   memory   ckt_rt_malloc(&p, bytes) ckt_rt_free(p)
 *            ckt_rt_memcpy(dst, src, bytes, CKT_H2D|CKT_D2H|CKT_D2D|CKT_H2H)
 *            ckt_rt_memcpy_async(..., stream) ckt_rt_memset(p, byte, bytes)
 *            ckt_rt_memset_async(..., stream)
 *            ckt_rt_malloc_host(&p, bytes) ckt_rt_free_host(p)   pinned host memory
 *   streams  ckt_rt_stream_create(&s) ckt_rt_stream_destroy(s)
 *            ckt_rt_stream_synchronize(s) ckt_rt_device_synchronize()
 *            ckt_rt_launch_host_func(s, fn, user)   fn(user) in stream order
 *            (stream NULL = the default stream)
 *   events   ckt_rt_event_create(&e) ckt_rt_event_destroy(e)
 *            ckt_rt_event_record(e, s) ckt_rt_event_synchronize(e)
 *            ckt_rt_event_elapsed_ms(&ms, start, stop)
 *   launch   ckt_rt_launch(CKT_KERNEL_REF(k), grid, block, smem, stream, &params)
 *            ckt_rt_launch_dependent(...)  the same, may overlap the previous
 *            kernel's tail (the kernel calls ckt_grid_dependency_wait first)
 *   device   ckt_rt_device_props(&props) ckt_rt_multiprocessors(&n)
 *            ckt_rt_compute_capability(&major, &minor)
 *
 * On the CPU backend "device" memory is host memory (filled with 0xFF bytes at
 * allocation, as uninitialised GPU memory is garbage), streams are synchronous
 * (a host function runs inside ckt_rt_launch_host_func) and events read a
 * monotonic clock.
 */
#ifndef CKT_HOST_RUNTIME_H
#define CKT_HOST_RUNTIME_H

#include "ckt/arch/arch.h"
#include "ckt/host/status.h"

#include <stdlib.h>
#include <string.h>

#if defined(CKT_BACKEND_CPU)
#include <time.h>
#elif defined(CKT_BACKEND_NVIDIA)
#include <cuda_runtime_api.h>
#endif

typedef void *ckt_stream; /* cudaStream_t / hipStream_t / unused on the CPU */
typedef void *ckt_event;  /* cudaEvent_t / hipEvent_t / a timestamp on the CPU */

typedef enum ckt_copy_kind { CKT_H2H, CKT_H2D, CKT_D2H, CKT_D2D } ckt_copy_kind;

typedef struct ckt_device_props {
    char name[256];
    const char *backend;        /* "cpu", "nvidia", "amd" */
    int warp_size;
    int multiprocessors;        /* SMs / CUs / CPU cores */
    int cc_major, cc_minor;     /* NVIDIA compute capability; gfx9xx as 9, xx on AMD */
    size_t global_mem_bytes;
    size_t shared_per_block;    /* default limit (bytes) */
    size_t shared_per_block_optin; /* with the dynamic shared-memory opt-in */
    size_t l2_bytes;
} ckt_device_props;

/* >>backend primitives: map the vendor's error to a ckt_status */

#if defined(CKT_BACKEND_NVIDIA)
#define CKT__RT(call, what)                                                                       \
    do {                                                                                          \
        cudaError_t ckt__e = (call);                                                              \
        if (ckt__e != cudaSuccess)                                                                \
            return ckt__fail(ckt__e == cudaErrorMemoryAllocation ? CKT_ERROR_OUT_OF_MEMORY        \
                                                                 : CKT_ERROR_RUNTIME,             \
                             "%s: %s", what, cudaGetErrorString(ckt__e));                         \
    } while (0)
#elif defined(CKT_BACKEND_AMD)
#define CKT__RT(call, what)                                                                       \
    do {                                                                                          \
        hipError_t ckt__e = (call);                                                               \
        if (ckt__e != hipSuccess)                                                                 \
            return ckt__fail(ckt__e == hipErrorOutOfMemory ? CKT_ERROR_OUT_OF_MEMORY              \
                                                           : CKT_ERROR_RUNTIME,                   \
                             "%s: %s", what, hipGetErrorString(ckt__e));                          \
    } while (0)
#endif

/* >>memory */

static inline ckt_status ckt_rt_malloc(void **ptr, size_t bytes)
{
    if (!ptr)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_rt_malloc: ptr is NULL");
    *ptr = NULL;
    if (bytes == 0)
        return CKT_SUCCESS;
#if defined(CKT_BACKEND_CPU)
    *ptr = ckt__emu_device_malloc(bytes); /* under ASan, no byte past `bytes` is addressable */
    if (!*ptr)
        return ckt__fail(CKT_ERROR_OUT_OF_MEMORY, "ckt_rt_malloc: %zu bytes", bytes);
#elif defined(CKT_BACKEND_NVIDIA)
    CKT__RT(cudaMalloc(ptr, bytes), "ckt_rt_malloc");
#else
    CKT__RT(hipMalloc(ptr, bytes), "ckt_rt_malloc");
#endif
    return CKT_SUCCESS;
}

static inline ckt_status ckt_rt_free(void *ptr)
{
    if (!ptr)
        return CKT_SUCCESS;
#if defined(CKT_BACKEND_CPU)
    free(ptr);
#elif defined(CKT_BACKEND_NVIDIA)
    CKT__RT(cudaFree(ptr), "ckt_rt_free");
#else
    CKT__RT(hipFree(ptr), "ckt_rt_free");
#endif
    return CKT_SUCCESS;
}

static inline ckt_status ckt_rt_memcpy_async(void *dst, const void *src, size_t bytes,
                                             ckt_copy_kind kind, ckt_stream stream)
{
    if (bytes == 0)
        return CKT_SUCCESS;
    if (!dst || !src)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_rt_memcpy: %s is NULL", dst ? "src" : "dst");
    if ((unsigned)kind > (unsigned)CKT_D2D)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "ckt_rt_memcpy: kind %d", (int)kind);
#if defined(CKT_BACKEND_CPU)
    (void)stream;
    memmove(dst, src, bytes);
#elif defined(CKT_BACKEND_NVIDIA)
    static const cudaMemcpyKind k[] = {cudaMemcpyHostToHost, cudaMemcpyHostToDevice,
                                       cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice};
    CKT__RT(cudaMemcpyAsync(dst, src, bytes, k[kind], (cudaStream_t)stream), "ckt_rt_memcpy");
#else
    static const hipMemcpyKind k[] = {hipMemcpyHostToHost, hipMemcpyHostToDevice,
                                      hipMemcpyDeviceToHost, hipMemcpyDeviceToDevice};
    CKT__RT(hipMemcpyAsync(dst, src, bytes, k[kind], (hipStream_t)stream), "ckt_rt_memcpy");
#endif
    return CKT_SUCCESS;
}

static inline ckt_status ckt_rt_stream_synchronize(ckt_stream stream)
{
#if defined(CKT_BACKEND_CPU)
    (void)stream;
#elif defined(CKT_BACKEND_NVIDIA)
    CKT__RT(cudaStreamSynchronize((cudaStream_t)stream), "ckt_rt_stream_synchronize");
#else
    CKT__RT(hipStreamSynchronize((hipStream_t)stream), "ckt_rt_stream_synchronize");
#endif
    return CKT_SUCCESS;
}

/* Synchronous copy (waits for the default stream). */
static inline ckt_status ckt_rt_memcpy(void *dst, const void *src, size_t bytes, ckt_copy_kind kind)
{
    ckt_status s = ckt_rt_memcpy_async(dst, src, bytes, kind, NULL);
    return s != CKT_SUCCESS ? s : ckt_rt_stream_synchronize(NULL);
}

static inline ckt_status ckt_rt_memset_async(void *dst, int byte, size_t bytes, ckt_stream stream)
{
    if (bytes == 0)
        return CKT_SUCCESS;
    if (!dst)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_rt_memset: dst is NULL");
#if defined(CKT_BACKEND_CPU)
    (void)stream;
    memset(dst, byte, bytes);
#elif defined(CKT_BACKEND_NVIDIA)
    CKT__RT(cudaMemsetAsync(dst, byte, bytes, (cudaStream_t)stream), "ckt_rt_memset");
#else
    CKT__RT(hipMemsetAsync(dst, byte, bytes, (hipStream_t)stream), "ckt_rt_memset");
#endif
    return CKT_SUCCESS;
}

static inline ckt_status ckt_rt_memset(void *dst, int byte, size_t bytes)
{
    ckt_status s = ckt_rt_memset_async(dst, byte, bytes, NULL);
    return s != CKT_SUCCESS ? s : ckt_rt_stream_synchronize(NULL);
}

/* Pinned (page-locked) host memory: what an asynchronous copy needs on the host
 * side to stay asynchronous, and what a host function (ckt_rt_launch_host_func)
 * reads and writes. cudaMallocHost / hipHostMalloc; plain 256-byte aligned
 * host memory on the CPU. */
static inline ckt_status ckt_rt_malloc_host(void **ptr, size_t bytes)
{
    if (!ptr)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_rt_malloc_host: ptr is NULL");
    *ptr = NULL;
    if (bytes == 0)
        return CKT_SUCCESS;
#if defined(CKT_BACKEND_CPU)
    *ptr = aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!*ptr)
        return ckt__fail(CKT_ERROR_OUT_OF_MEMORY, "ckt_rt_malloc_host: %zu bytes", bytes);
#elif defined(CKT_BACKEND_NVIDIA)
    CKT__RT(cudaMallocHost(ptr, bytes), "ckt_rt_malloc_host");
#else
    CKT__RT(hipHostMalloc(ptr, bytes, hipHostMallocDefault), "ckt_rt_malloc_host");
#endif
    return CKT_SUCCESS;
}

/* Frees ckt_rt_malloc_host memory. Synchronize the streams that use it first,
 * and never call this from a host function: freeing pinned memory waits for
 * the device, while the runtime's callback thread holds locks that wait needs
 * (a deadlock; see ckt_rt_launch_host_func). */
static inline ckt_status ckt_rt_free_host(void *ptr)
{
    if (!ptr)
        return CKT_SUCCESS;
#if defined(CKT_BACKEND_CPU)
    free(ptr);
#elif defined(CKT_BACKEND_NVIDIA)
    CKT__RT(cudaFreeHost(ptr), "ckt_rt_free_host");
#else
    CKT__RT(hipHostFree(ptr), "ckt_rt_free_host");
#endif
    return CKT_SUCCESS;
}

/* >>streams */

static inline ckt_status ckt_rt_stream_create(ckt_stream *stream)
{
    if (!stream)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_rt_stream_create: stream is NULL");
#if defined(CKT_BACKEND_CPU)
    *stream = NULL;
#elif defined(CKT_BACKEND_NVIDIA)
    cudaStream_t s;
    CKT__RT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "ckt_rt_stream_create");
    *stream = (ckt_stream)s;
#else
    hipStream_t s;
    CKT__RT(hipStreamCreateWithFlags(&s, hipStreamNonBlocking), "ckt_rt_stream_create");
    *stream = (ckt_stream)s;
#endif
    return CKT_SUCCESS;
}

static inline ckt_status ckt_rt_stream_destroy(ckt_stream stream)
{
#if defined(CKT_BACKEND_CPU)
    (void)stream;
#elif defined(CKT_BACKEND_NVIDIA)
    if (stream)
        CKT__RT(cudaStreamDestroy((cudaStream_t)stream), "ckt_rt_stream_destroy");
#else
    if (stream)
        CKT__RT(hipStreamDestroy((hipStream_t)stream), "ckt_rt_stream_destroy");
#endif
    return CKT_SUCCESS;
}

static inline ckt_status ckt_rt_device_synchronize(void)
{
#if defined(CKT_BACKEND_NVIDIA)
    CKT__RT(cudaDeviceSynchronize(), "ckt_rt_device_synchronize");
#elif defined(CKT_BACKEND_AMD)
    CKT__RT(hipDeviceSynchronize(), "ckt_rt_device_synchronize");
#endif
    return CKT_SUCCESS;
}

/* >>host functions */

#if defined(CKT_BACKEND_AMD)
/* ROCm 5.2's libamdhip64 declares hipLaunchHostFunc but does not export it:
 * hipStreamAddCallback (which blocks later work on the stream until the
 * callback returns) with a trampoline that carries fn and user. */
typedef struct ckt__rt_host_call {
    void (*fn)(void *);
    void *user;
} ckt__rt_host_call;

static inline void ckt__rt_host_trampoline(hipStream_t stream, hipError_t status, void *call)
{
    ckt__rt_host_call c = *(ckt__rt_host_call *)call;
    (void)stream;
    (void)status;
    free(call); /* C heap, not the runtime's: safe on the callback thread */
    c.fn(c.user);
}
#endif

/* Enqueues fn(user) on stream: it runs on a runtime thread once the work
 * enqueued before it is done, and the work enqueued after it waits for it to
 * return (cudaLaunchHostFunc; hipStreamAddCallback on AMD; on the CPU, where
 * streams are synchronous, fn runs before this returns). fn must not call the
 * device runtime (no copies, synchronization, allocation or freeing of device
 * or pinned memory): the callback thread holds runtime locks, and e.g. a
 * pinned free there deadlocks against the application's threads. CUDA skips
 * fn when the context has met an error. */
static inline ckt_status ckt_rt_launch_host_func(ckt_stream stream, void (*fn)(void *), void *user)
{
    if (!fn)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_rt_launch_host_func: fn is NULL");
#if defined(CKT_BACKEND_CPU)
    (void)stream;
    fn(user);
#elif defined(CKT_BACKEND_NVIDIA)
    CKT__RT(cudaLaunchHostFunc((cudaStream_t)stream, fn, user), "ckt_rt_launch_host_func");
#else
    ckt__rt_host_call *c = (ckt__rt_host_call *)malloc(sizeof *c);
    if (!c)
        return ckt__fail(CKT_ERROR_OUT_OF_MEMORY, "ckt_rt_launch_host_func");
    c->fn = fn;
    c->user = user;
    hipError_t e = hipStreamAddCallback((hipStream_t)stream, ckt__rt_host_trampoline, c, 0);
    if (e != hipSuccess) {
        free(c);
        return ckt__fail(CKT_ERROR_RUNTIME, "ckt_rt_launch_host_func: %s", hipGetErrorString(e));
    }
#endif
    return CKT_SUCCESS;
}

/* >>events */

static inline ckt_status ckt_rt_event_create(ckt_event *ev)
{
    if (!ev)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_rt_event_create: ev is NULL");
#if defined(CKT_BACKEND_CPU)
    *ev = calloc(1, sizeof(double));
    if (!*ev)
        return ckt__fail(CKT_ERROR_OUT_OF_MEMORY, "ckt_rt_event_create");
#elif defined(CKT_BACKEND_NVIDIA)
    cudaEvent_t e;
    CKT__RT(cudaEventCreate(&e), "ckt_rt_event_create");
    *ev = (ckt_event)e;
#else
    hipEvent_t e;
    CKT__RT(hipEventCreate(&e), "ckt_rt_event_create");
    *ev = (ckt_event)e;
#endif
    return CKT_SUCCESS;
}

static inline ckt_status ckt_rt_event_destroy(ckt_event ev)
{
    if (!ev)
        return CKT_SUCCESS;
#if defined(CKT_BACKEND_CPU)
    free(ev);
#elif defined(CKT_BACKEND_NVIDIA)
    CKT__RT(cudaEventDestroy((cudaEvent_t)ev), "ckt_rt_event_destroy");
#else
    CKT__RT(hipEventDestroy((hipEvent_t)ev), "ckt_rt_event_destroy");
#endif
    return CKT_SUCCESS;
}

static inline ckt_status ckt_rt_event_record(ckt_event ev, ckt_stream stream)
{
    if (!ev)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_rt_event_record: ev is NULL");
#if defined(CKT_BACKEND_CPU)
    (void)stream;
    struct timespec ts;
#if defined(CLOCK_MONOTONIC)
    clock_gettime(CLOCK_MONOTONIC, &ts);
#else
    timespec_get(&ts, TIME_UTC);
#endif
    *(double *)ev = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
#elif defined(CKT_BACKEND_NVIDIA)
    CKT__RT(cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)stream), "ckt_rt_event_record");
#else
    CKT__RT(hipEventRecord((hipEvent_t)ev, (hipStream_t)stream), "ckt_rt_event_record");
#endif
    return CKT_SUCCESS;
}

static inline ckt_status ckt_rt_event_synchronize(ckt_event ev)
{
    if (!ev)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_rt_event_synchronize: ev is NULL");
#if defined(CKT_BACKEND_NVIDIA)
    CKT__RT(cudaEventSynchronize((cudaEvent_t)ev), "ckt_rt_event_synchronize");
#elif defined(CKT_BACKEND_AMD)
    CKT__RT(hipEventSynchronize((hipEvent_t)ev), "ckt_rt_event_synchronize");
#endif
    return CKT_SUCCESS;
}

static inline ckt_status ckt_rt_event_elapsed_ms(float *ms, ckt_event start, ckt_event stop)
{
    if (!ms || !start || !stop)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_rt_event_elapsed_ms: %s is NULL",
                         !ms ? "ms" : !start ? "start" : "stop");
#if defined(CKT_BACKEND_CPU)
    *ms = (float)(*(double *)stop - *(double *)start);
#elif defined(CKT_BACKEND_NVIDIA)
    CKT__RT(cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)stop),
            "ckt_rt_event_elapsed_ms");
#else
    CKT__RT(hipEventElapsedTime(ms, (hipEvent_t)start, (hipEvent_t)stop),
            "ckt_rt_event_elapsed_ms");
#endif
    return CKT_SUCCESS;
}

/* >>launch */

/* The checks and the launch of both launchers below. */
static inline ckt_status ckt__rt_launch(ckt_kernel_ref k, ckt_dim3 grid, ckt_dim3 block, size_t dyn_shared,
                                        ckt_stream stream, const void *params, int dependent)
{
    const char *fn = dependent ? "ckt_rt_launch_dependent" : "ckt_rt_launch";
    if (!k || !params)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "%s: %s is NULL", fn, !k ? "kernel" : "params");
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: grid (%u,%u,%u) / block (%u,%u,%u) has a zero extent", fn,
                         grid.x, grid.y, grid.z, block.x, block.y, block.z);
    int e = dependent ? ckt_arch_launch_dependent(k, grid, block, dyn_shared, stream, params)
                      : ckt_arch_launch(k, grid, block, dyn_shared, stream, params);
    if (e != 0)
#if defined(CKT_BACKEND_CPU)
        return ckt__fail(CKT_ERROR_KERNEL, "%s", ckt_arch_error_string(e));
#else
        return ckt__fail(CKT_ERROR_LAUNCH, "%s: %s", fn, ckt_arch_error_string(e));
#endif
    return CKT_SUCCESS;
}

/* Launches kernel k (CKT_KERNEL_REF(name)) with its parameter struct *params.
 * On the CPU the kernel has run when this returns; an emulator diagnostic
 * (barrier misuse, deadlock, ...) returns CKT_ERROR_KERNEL with the report in
 * ckt_last_error(). */
static inline ckt_status ckt_rt_launch(ckt_kernel_ref k, ckt_dim3 grid, ckt_dim3 block,
                                       size_t dyn_shared, ckt_stream stream, const void *params)
{
    return ckt__rt_launch(k, grid, block, dyn_shared, stream, params, 0);
}

/* As ckt_rt_launch, for a kernel that may start while the previous kernel
 * in the stream finishes (programmatic dependent launch, NVIDIA sm_90; an
 * ordinary launch elsewhere): it must call ckt_grid_dependency_wait()
 * before it reads what that kernel wrote (ckt/arch/arch.h). */
static inline ckt_status ckt_rt_launch_dependent(ckt_kernel_ref k, ckt_dim3 grid, ckt_dim3 block,
                                                 size_t dyn_shared, ckt_stream stream, const void *params)
{
    return ckt__rt_launch(k, grid, block, dyn_shared, stream, params, 1);
}

/* >>device */

/* The current device's multiprocessor count (SMs / CUs / CPU cores): one
 * attribute query, cheap enough for every call (ckt_rt_device_props fills
 * the whole struct and is slow on CUDA). */
static inline ckt_status ckt_rt_multiprocessors(int *n)
{
    if (!n)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_rt_multiprocessors: n is NULL");
#if defined(CKT_BACKEND_CPU)
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    *n = c > 0 ? (int)c : 1;
#elif defined(CKT_BACKEND_NVIDIA)
    int dev = 0;
    CKT__RT(cudaGetDevice(&dev), "ckt_rt_multiprocessors");
    CKT__RT(cudaDeviceGetAttribute(n, cudaDevAttrMultiProcessorCount, dev), "ckt_rt_multiprocessors");
#else
    int dev = 0;
    CKT__RT(hipGetDevice(&dev), "ckt_rt_multiprocessors");
    CKT__RT(hipDeviceGetAttribute(n, hipDeviceAttributeMultiprocessorCount, dev), "ckt_rt_multiprocessors");
#endif
    return CKT_SUCCESS;
}

/* The current device's architecture version, cheaply: NVIDIA compute
 * capability (9.0 for Hopper); AMD gfx9xx as 9, xx; 0.0 on the CPU. */
static inline ckt_status ckt_rt_compute_capability(int *major, int *minor)
{
    if (!major || !minor)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_rt_compute_capability: %s is NULL", major ? "minor" : "major");
#if defined(CKT_BACKEND_CPU)
    *major = *minor = 0;
#elif defined(CKT_BACKEND_NVIDIA)
    int dev = 0;
    CKT__RT(cudaGetDevice(&dev), "ckt_rt_compute_capability");
    CKT__RT(cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, dev), "ckt_rt_compute_capability");
    CKT__RT(cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, dev), "ckt_rt_compute_capability");
#else
    int dev = 0;
    CKT__RT(hipGetDevice(&dev), "ckt_rt_compute_capability");
    CKT__RT(hipDeviceGetAttribute(major, hipDeviceAttributeComputeCapabilityMajor, dev), "ckt_rt_compute_capability");
    CKT__RT(hipDeviceGetAttribute(minor, hipDeviceAttributeComputeCapabilityMinor, dev), "ckt_rt_compute_capability");
#endif
    return CKT_SUCCESS;
}

static inline ckt_status ckt_rt_device_props(ckt_device_props *p)
{
    if (!p)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_rt_device_props: p is NULL");
    memset(p, 0, sizeof *p);
    p->backend = CKT_BACKEND_NAME;
    p->warp_size = CKT_WARP_SIZE;
#if defined(CKT_BACKEND_CPU)
    snprintf(p->name, sizeof p->name, "CPU SIMT emulator (%s profile)", CKT_EMU_PROFILE_NAME);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    p->multiprocessors = n > 0 ? (int)n : 1;
    p->global_mem_bytes = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    p->shared_per_block = 48u * 1024u;
    p->shared_per_block_optin = 227u * 1024u;
    p->l2_bytes = 0;
#elif defined(CKT_BACKEND_NVIDIA)
    int dev = 0;
    struct cudaDeviceProp d;
    CKT__RT(cudaGetDevice(&dev), "ckt_rt_device_props");
    CKT__RT(cudaGetDeviceProperties(&d, dev), "ckt_rt_device_props");
    snprintf(p->name, sizeof p->name, "%s", d.name);
    p->multiprocessors = d.multiProcessorCount;
    p->cc_major = d.major;
    p->cc_minor = d.minor;
    p->global_mem_bytes = d.totalGlobalMem;
    p->shared_per_block = d.sharedMemPerBlock;
    p->shared_per_block_optin = d.sharedMemPerBlockOptin;
    p->l2_bytes = (size_t)d.l2CacheSize;
#else
    int dev = 0;
    hipDeviceProp_t d;
    CKT__RT(hipGetDevice(&dev), "ckt_rt_device_props");
    CKT__RT(hipGetDeviceProperties(&d, dev), "ckt_rt_device_props");
    snprintf(p->name, sizeof p->name, "%s (%s)", d.name, d.gcnArchName);
    p->multiprocessors = d.multiProcessorCount;
    p->cc_major = d.major;
    p->cc_minor = d.minor;
    p->global_mem_bytes = d.totalGlobalMem;
    p->shared_per_block = d.sharedMemPerBlock;
    p->shared_per_block_optin = d.sharedMemPerBlock;
    p->l2_bytes = (size_t)d.l2CacheSize;
#endif
    return CKT_SUCCESS;
}

#endif /* CKT_HOST_RUNTIME_H */
