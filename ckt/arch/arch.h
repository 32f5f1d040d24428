/* ckt/arch/arch.h — the bottom layer: one device API over three backends.
 *
 * Include this (or ckt/ckt.h); it picks ckt/arch/amd.h, ckt/arch/nvidia.h or
 * ckt/arch/cpu.h from the compiler (see ckt/arch/config.h). Nothing above
 * ckt/arch names a vendor intrinsic.
 *
 * What every backend provides (device code):
 *   ids            ckt_thread_idx_{x,y,z}() ckt_block_idx_{x,y,z}()
 *                  ckt_block_dim_{x,y,z}() ckt_grid_dim_{x,y,z}()
 *                  ckt_thread_rank()  linear id in the block
 *                  ckt_lane_id() ckt_warp_id()  CKT_WARP_SIZE (32 NVIDIA, 64 CDNA)
 *   sync           ckt_block_sync() ckt_warp_sync() ckt_threadfence()
 *                  ckt_grid_dependents_launch() ckt_grid_dependency_wait(): a
 *                  kernel launched by ckt_arch_launch_dependent may start
 *                  once every block of the one before it in the stream has
 *                  called the first (or exited); it calls the second before
 *                  touching what that kernel writes (NVIDIA sm_90:
 *                  griddepcontrol; elsewhere the launch is ordinary and both
 *                  do nothing)
 *   collectives    ckt_warp_shfl_{xor,idx,up,down}_{u32,f32}(v, arg)
 *                  ckt_warp_ballot(pred) -> uint64_t lane mask
 *                  ckt_warp_any(pred) ckt_warp_all(pred)
 *                  (whole warp takes part, as __shfl_*_sync with a full mask)
 *   shared memory  CKT_SHARED_ARRAY(type, name, count)  16-byte aligned
 *                  CKT_DYNAMIC_SHARED(type, name)       launch's dynamic smem
 *   numbers        ckt_f16 ckt_bf16 and conversions (ckt/arch/numeric.h)
 *                  ckt_exp2f_fast(x) ckt_rcpf_fast(x)
 *   flags          ckt_flag_store_release(p, v): *p = v (int, global memory), after
 *                  every write this thread made before it (a release at device scope);
 *                  ckt_flag_wait_geq(p, v): returns once *p >= v, and this thread
 *                  then sees what the setter wrote before setting it (an acquire).
 *                  Between blocks of one grid: the one that sets a flag must not
 *                  wait for the waiter, and every block that waits must be resident
 *                  at once with those it waits for (a grid the GPU holds whole).
 *                  The usual pattern: the block's writes, ckt_block_sync(), then one
 *                  thread sets the flag; one thread waits, ckt_block_sync(), then the
 *                  block reads. The emulator parks a waiting block and runs others
 *                  (a wait that no block can end is a deadlock report).
 *   atomics        ckt_atomic_add_i32(p, v) ckt_atomic_add_f32(p, v)
 *                  ckt_atomic_add_f32x4(p, x0, x1, x2, x3): p[k] += xk, each element
 *                  atomically (not the four as one); p 16-byte aligned, global memory.
 *                  One vector reduction on sm_90 (red.global.add.v4.f32), else four.
 *   vectors        ckt_u32x2 ckt_u32x4 (ckt/arch/vector.h)
 *   memory         ckt_cp_async_{16,8,4}(smem, gmem, src_bytes) ckt_cp_async_commit()
 *                  ckt_cp_async_wait(n) ckt_cp_async_wait_all()
 *                  ckt_buffer_{load,store}_{u32,u32x2,u32x4}(base, num_bytes, off[, v])
 *                  (ckt/arch/memory.h: semantics, CKT_HAS_CP_ASYNC)
 *   warp matrix    CKT_HAS_MMA_SYNC: ckt_mma_m16n8k16_{f16,bf16}(d, a, b, c)
 *                    ckt_ldmatrix_{x1,x2,x4}[_trans](r, row_address)
 *                  CKT_HAS_STMATRIX (sm_90, emulator nv profile): ckt_stmatrix_x4[_trans](row_address, r)
 *                  CKT_HAS_MFMA: ckt_mfma_{32x32x8,16x16x16}_{f16,bf16}(d, a, b, c)
 *                  CKT_HAS_MFMA_FP8 (gfx940, emulator cdna): ckt_mfma_{32x32x16,16x16x32}_e4m3(d, a, b, c)
 *                  (ckt/arch/mma.h: fragment layouts)
 *   Hopper         CKT_HAS_WGMMA (sm_90a, emulator nv profile): mbarriers, TMA
 *                  tile loads, warpgroup MMA (ckt/arch/hopper.h)
 *   kernels        CKT_KERNEL(name, ParamsType, p) { ... }
 *                  CKT_KERNEL_BOUNDS(name, ParamsType, p, max_threads)
 *                  CKT_KERNEL_REF(name) -> ckt_kernel_ref
 *                  ckt_arch_launch(ref, grid, block, smem, stream, &params)
 *                  ckt_arch_launch_dependent(...): the same, overlapping the
 *                  previous kernel's tail where the device can (see sync)
 *                  (host code normally calls ckt_rt_launch, ckt/host/runtime.h)
 *
 * A kernel takes one parameter struct by value:
 *
 *     typedef struct { const float *x; float *y; int n; } scale_params;
 *     CKT_KERNEL(scale, scale_params, p) {
 *         int i = (int)(ckt_block_idx_x() * ckt_block_dim_x() + ckt_thread_idx_x());
 *         if (i < p.n) p.y[i] = 2.0f * p.x[i];
 *     }
 *     ...
 *     ckt_rt_launch(CKT_KERNEL_REF(scale), grid, block, 0, stream, &params);
 */
#ifndef CKT_ARCH_ARCH_H
#define CKT_ARCH_ARCH_H

#include "ckt/arch/config.h"
#include "ckt/arch/numeric.h"
#include "ckt/arch/vector.h"

#if defined(CKT_BACKEND_AMD)
#include "ckt/arch/amd.h"
#elif defined(CKT_BACKEND_NVIDIA)
#include "ckt/arch/nvidia.h"
#else
#include "ckt/arch/cpu.h"
#endif

#include "ckt/arch/hopper.h"
#include "ckt/arch/memory.h"
#include "ckt/arch/mma.h"

#endif /* CKT_ARCH_ARCH_H */
