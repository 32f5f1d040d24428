/* ckt/arch/cpu.h — the device API on the CPU backend (the SIMT emulator).
 *
 * Same names and meaning as ckt/arch/nvidia.h and ckt/arch/amd.h; see
 * ckt/arch/arch.h for the list. Calls that wait for other threads (barrier,
 * warp collectives) are macros here so that the emulator can report the
 * file:line where a thread waits.
 */
#ifndef CKT_ARCH_CPU_H
#define CKT_ARCH_CPU_H

#include "ckt/arch/config.h"
#include "ckt/arch/cpu/emulator.h"
#include "ckt/arch/numeric.h"

#include <math.h>

#define CKT_WARP_SIZE CKT_EMU_WARP_SIZE
#define CKT_ARCH_NAME "cpu-emulator-" CKT_EMU_PROFILE_NAME

/* >>ids */
CKT_INLINE unsigned ckt_thread_idx_x(void) { return ckt__emu_cur()->tid[0]; }
CKT_INLINE unsigned ckt_thread_idx_y(void) { return ckt__emu_cur()->tid[1]; }
CKT_INLINE unsigned ckt_thread_idx_z(void) { return ckt__emu_cur()->tid[2]; }
CKT_INLINE unsigned ckt_block_idx_x(void) { return ckt__emu_self->block_idx[0]; }
CKT_INLINE unsigned ckt_block_idx_y(void) { return ckt__emu_self->block_idx[1]; }
CKT_INLINE unsigned ckt_block_idx_z(void) { return ckt__emu_self->block_idx[2]; }
CKT_INLINE unsigned ckt_block_dim_x(void) { return ckt__emu_self->launch->block.x; }
CKT_INLINE unsigned ckt_block_dim_y(void) { return ckt__emu_self->launch->block.y; }
CKT_INLINE unsigned ckt_block_dim_z(void) { return ckt__emu_self->launch->block.z; }
CKT_INLINE unsigned ckt_grid_dim_x(void) { return ckt__emu_self->launch->grid.x; }
CKT_INLINE unsigned ckt_grid_dim_y(void) { return ckt__emu_self->launch->grid.y; }
CKT_INLINE unsigned ckt_grid_dim_z(void) { return ckt__emu_self->launch->grid.z; }
CKT_INLINE unsigned ckt_thread_rank(void) { return ckt__emu_cur()->rank; }
CKT_INLINE unsigned ckt_lane_id(void) { return ckt__emu_cur()->lane; }
CKT_INLINE unsigned ckt_warp_id(void) { return ckt__emu_cur()->warp; }

/* >>synchronisation */
#define ckt_block_sync() ckt__emu_barrier(__FILE__, __LINE__)
#define ckt_warp_sync() ((void)ckt__emu_warp_op(CKT__EMU_OP_SYNC, 0, 0, __FILE__, __LINE__))
#define ckt_threadfence() __atomic_thread_fence(__ATOMIC_SEQ_CST)
/* programmatic dependent launch: launches run one after the other here */
#define ckt_grid_dependents_launch() ((void)0)
#define ckt_grid_dependency_wait() ((void)0)

/* >>warp collectives */
#define ckt_warp_shfl_xor_u32(v, m)                                                               \
    ((uint32_t)ckt__emu_warp_op(CKT__EMU_OP_SHFL_XOR, (uint32_t)(v), (m), __FILE__, __LINE__))
#define ckt_warp_shfl_idx_u32(v, src)                                                             \
    ((uint32_t)ckt__emu_warp_op(CKT__EMU_OP_SHFL_IDX, (uint32_t)(v), (src), __FILE__, __LINE__))
#define ckt_warp_shfl_up_u32(v, d)                                                                \
    ((uint32_t)ckt__emu_warp_op(CKT__EMU_OP_SHFL_UP, (uint32_t)(v), (d), __FILE__, __LINE__))
#define ckt_warp_shfl_down_u32(v, d)                                                              \
    ((uint32_t)ckt__emu_warp_op(CKT__EMU_OP_SHFL_DOWN, (uint32_t)(v), (d), __FILE__, __LINE__))
#define ckt_warp_shfl_xor_f32(v, m) ckt_f32_from_bits(ckt_warp_shfl_xor_u32(ckt_bits_from_f32(v), m))
#define ckt_warp_shfl_idx_f32(v, s) ckt_f32_from_bits(ckt_warp_shfl_idx_u32(ckt_bits_from_f32(v), s))
#define ckt_warp_shfl_up_f32(v, d) ckt_f32_from_bits(ckt_warp_shfl_up_u32(ckt_bits_from_f32(v), d))
#define ckt_warp_shfl_down_f32(v, d)                                                              \
    ckt_f32_from_bits(ckt_warp_shfl_down_u32(ckt_bits_from_f32(v), d))
#define ckt_warp_ballot(pred)                                                                     \
    ((uint64_t)ckt__emu_warp_op(CKT__EMU_OP_BALLOT, (pred) ? 1u : 0u, 0, __FILE__, __LINE__))
#define ckt_warp_any(pred) (ckt_warp_ballot(pred) != 0)
#define ckt_warp_all(pred) (ckt_warp_ballot(!(pred)) == 0)

/* >>shared memory
 * CKT_SHARED_ARRAY(type, name, count): a block-shared array of count elements,
 * 16-byte aligned. `name` is a pointer on the CPU and an array on GPUs: do not
 * take sizeof(name). CKT_DYNAMIC_SHARED(type, name): the launch's dynamic
 * shared memory. */
#define CKT_SHARED_ARRAY(type, name, count)                                                       \
    type *name = (type *)ckt__emu_shared_alloc(sizeof(type) * (size_t)(count), 16, __FILE__,     \
                                               __LINE__)
#define CKT_DYNAMIC_SHARED(type, name) type *name = (type *)ckt__emu_shared_dynamic()

/* >>fast math (accurate libm on the CPU) */
CKT_INLINE float ckt_exp2f_fast(float x) { return exp2f(x); }
CKT_INLINE float ckt_rcpf_fast(float x) { return 1.0f / x; }

/* >>atomics (blocks run on several OS threads) */
CKT_INLINE int ckt_atomic_add_i32(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
CKT_INLINE float ckt_atomic_add_f32(float *p, float v)
{
    uint32_t *u = (uint32_t *)p;
    uint32_t old = __atomic_load_n(u, __ATOMIC_RELAXED), upd;
    do
        upd = ckt_bits_from_f32(ckt_f32_from_bits(old) + v);
    while (!__atomic_compare_exchange_n(u, &old, upd, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return ckt_f32_from_bits(old);
}

/* >>kernels and launch
 * CKT_KERNEL(name, ParamsType, p) { body }  defines kernel `name` taking its
 * parameters as one struct p, by value. CKT_KERNEL_REF(name) is the handle that
 * ckt_rt_launch / ckt_arch_launch take. */
typedef ckt__emu_entry ckt_kernel_ref;

/* (two levels, so that a name built by another macro is expanded first) */
#define CKT_KERNEL(name, T, p) CKT__KERNEL(name, T, p)
#define CKT__KERNEL(name, T, p)                                                                   \
    static void name(T p);                                                                        \
    __attribute__((unused)) static void name##_ckt_entry(const void *ckt__params)                 \
    {                                                                                             \
        name(*(const T *)ckt__params);                                                            \
    }                                                                                             \
    static void name(T p)
#define CKT_KERNEL_BOUNDS(name, T, p, max_threads) CKT__KERNEL(name, T, p)
#define CKT_KERNEL_REF(name) CKT__KERNEL_REF(name)
#define CKT__KERNEL_REF(name) ((ckt_kernel_ref)(name##_ckt_entry))

/* Runs the kernel synchronously; returns 0 or -1 (message: ckt_emu_last_error()). */
static inline int ckt_arch_launch(ckt_kernel_ref k, ckt_dim3 grid, ckt_dim3 block,
                                  size_t dyn_shared, void *stream, const void *params)
{
    (void)stream;
    return ckt__emu_launch_kernel(k, grid, block, dyn_shared, params);
}

/* Launches run in order on the emulator: an ordinary launch. */
static inline int ckt_arch_launch_dependent(ckt_kernel_ref k, ckt_dim3 grid, ckt_dim3 block,
                                            size_t dyn_shared, void *stream, const void *params)
{
    return ckt_arch_launch(k, grid, block, dyn_shared, stream, params);
}

static inline const char *ckt_arch_error_string(int err)
{
    return err ? ckt_emu_last_error() : "no error";
}

/* >>memory operations and warp matrix instructions of the profile
 * (ckt/arch/memory.h, ckt/arch/mma.h) */
#include "ckt/arch/cpu/memory.h"
#include "ckt/arch/cpu/mfma_cdna.h"
#include "ckt/arch/cpu/mma_nv.h"
#include "ckt/arch/cpu/hopper.h"

/* >>atomics: the vector reduction (after memory.h: its diagnostics; like
 * memory.h, only when the emulator is the backend) */
#if defined(CKT_BACKEND_CPU)
/* (a GPU faults on a misaligned vector reduction: the emulator says where) */
CKT_INLINE void ckt__emu_atomic_add_f32x4(float *p, float x0, float x1, float x2, float x3, const char *file,
                                          int line)
{
    if ((uintptr_t)p % 16)
        ckt__emu_die(file, line, "ckt_atomic_add_f32x4: %p is not 16-byte aligned", (void *)p);
    ckt_atomic_add_f32(p, x0);
    ckt_atomic_add_f32(p + 1, x1);
    ckt_atomic_add_f32(p + 2, x2);
    ckt_atomic_add_f32(p + 3, x3);
}
#define ckt_atomic_add_f32x4(p, x0, x1, x2, x3) ckt__emu_atomic_add_f32x4((p), (x0), (x1), (x2), (x3), __FILE__, __LINE__)

/* flags between blocks: a wait that is not over parks the thread (and, once
 * every live thread of the block waits for flags, the block: the worker runs
 * other blocks meanwhile, ckt/arch/cpu/emulator.h) */
CKT_INLINE void ckt__emu_flag_wait_geq(const int *p, int v, const char *file, int line)
{
    ckt__emu_worker *w = ckt__emu_self;
    if (!w)
        ckt__emu_fail_outside("ckt_flag_wait_geq()", file, line);
    if ((uintptr_t)p % sizeof(int))
        ckt__emu_die(file, line, "ckt_flag_wait_geq: %p is not 4-byte aligned", (const void *)p);
    if (__atomic_load_n(p, __ATOMIC_ACQUIRE) >= v)
        return;
    ckt__emu_thread *t = w->cur;
    t->state = CKT__EMU_AT_MBAR;
    t->op = CKT__EMU_WAIT_FLAG;
    t->op_ptr[0] = p;
    t->value = (uint64_t)(int64_t)v;
    t->file = file;
    t->line = line;
    ckt__emu_yield(w, t);
}
#define ckt_flag_wait_geq(p, v) ckt__emu_flag_wait_geq((p), (v), __FILE__, __LINE__)
CKT_INLINE void ckt_flag_store_release(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
#endif

#endif /* CKT_ARCH_CPU_H */
