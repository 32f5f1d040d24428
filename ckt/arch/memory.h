/* ckt/arch/memory.h — memory operations beyond plain loads and stores:
 * asynchronous global -> shared copies, and range-checked buffer loads and
 * stores. Included by ckt/arch/arch.h; the implementations live in the
 * backend headers (ckt/arch/nvidia.h, ckt/arch/amd.h, ckt/arch/cpu/memory.h).
 *
 * >>async copies  (NVIDIA cp.async; PTX ISA, "Data Movement and Conversion
 *   Instructions: cp.async", "cp.async.commit_group", "cp.async.wait_group")
 *   void ckt_cp_async_16(void *smem, const void *gmem, unsigned src_bytes);
 *   void ckt_cp_async_8 (void *smem, const void *gmem, unsigned src_bytes);
 *   void ckt_cp_async_4 (void *smem, const void *gmem, unsigned src_bytes);
 *       Copy the first src_bytes (0..N) of the N bytes at gmem (global memory)
 *       to smem (shared memory) and zero the remaining N - src_bytes, so a
 *       tile edge reads zeros: pass src_bytes 0 for a row past the end. Both
 *       addresses are N-byte aligned. (cp.async.cg for 16 bytes, .ca for 4, 8.)
 *   void ckt_cp_async_commit(void);
 *       Closes the group of the copies this thread issued since the last commit.
 *   void ckt_cp_async_wait(unsigned n);
 *       Waits until at most n of this thread's committed groups are pending:
 *       the copies of all older groups are then visible to this thread, and
 *       to the block after a ckt_block_sync(). n = 0 waits for all committed
 *       groups; n > 7 waits as 7 does (cp.async.wait_group takes a constant).
 *   void ckt_cp_async_wait_all(void);
 *       commit + wait(0): every copy issued so far.
 *   Between the copy and the wait covering it, the destination holds old or
 *   new bytes, unpredictably: read it only after the wait. The emulator's nv
 *   profile defers every copy to the wait that covers it, so a kernel that
 *   reads too early sees the old contents (fresh shared memory is 0xFF
 *   poison), never the data; copies never waited for are dropped.
 *   CKT_HAS_CP_ASYNC is 1 where the copies are asynchronous (NVIDIA, the
 *   emulator's nv profile). Elsewhere (AMD, the cdna profile) the same calls
 *   copy synchronously and commit / wait do nothing, so kernels use them
 *   unconditionally.
 *
 * >>buffer loads and stores  (AMD raw buffer instructions: the hardware range
 *   check of a buffer resource, AMD CDNA3 ISA, "Vector Memory Buffer
 *   Instructions")
 *   uint32_t  ckt_buffer_load_u32  (const void *base, int64_t num_bytes, int64_t byte_offset);
 *   ckt_u32x2 ckt_buffer_load_u32x2(const void *base, int64_t num_bytes, int64_t byte_offset);
 *   ckt_u32x4 ckt_buffer_load_u32x4(const void *base, int64_t num_bytes, int64_t byte_offset);
 *   void ckt_buffer_store_u32  (void *base, int64_t num_bytes, int64_t byte_offset, uint32_t v);
 *   void ckt_buffer_store_u32x2(void *base, int64_t num_bytes, int64_t byte_offset, ckt_u32x2 v);
 *   void ckt_buffer_store_u32x4(void *base, int64_t num_bytes, int64_t byte_offset, ckt_u32x4 v);
 *       The N-byte access at base + byte_offset happens when it lies inside
 *       [base, base + num_bytes): 0 <= byte_offset and byte_offset + N <=
 *       num_bytes. Otherwise a load returns zeros and a store writes nothing.
 *       Requirements: base and byte_offset are multiples of N; 0 <= num_bytes
 *       < 2^31 (the AMD range is 32-bit) (the emulator checks these two);
 *       base and num_bytes are the same in all lanes of the warp (not
 *       checked; on AMD a base per lane costs a loop over the lanes' bases).
 *   On AMD: buffer_load/store_dword{,x2,x4} with a buffer resource of
 *   num_bytes records; an offset outside the range is moved to 2^31, which the
 *   hardware drops, so no lane branches. On NVIDIA and the CPU: a guarded
 *   plain load or store with the same result.
 *
 * >>global vector loads and stores  (each lane its own address)
 *   ckt_u32x4 ckt_global_load_u32x4 (const void *p);
 *   void      ckt_global_store_u32x4(void *p, ckt_u32x4 v);
 *       The 16 bytes at p, a 16-byte aligned global address (the emulator
 *       checks the alignment), with no range test: for accesses whose bounds
 *       the caller has made sure of, from addresses that differ from lane to
 *       lane (rows of a tile). The buffer forms above want one base a warp:
 *       given a base per lane, AMD's compiler loops over the lanes' distinct
 *       bases (v_readfirstlane), once for each.
 */
#ifndef CKT_ARCH_MEMORY_H
#define CKT_ARCH_MEMORY_H

#include "ckt/arch/arch.h"

#endif /* CKT_ARCH_MEMORY_H */
