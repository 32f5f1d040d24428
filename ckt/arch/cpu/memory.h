/* ckt/arch/cpu/memory.h — async copies and buffer loads/stores on the CPU
 * emulator (API and semantics: ckt/arch/memory.h). Included by ckt/arch/cpu.h.
 *
 * cp.async, nv profile: a copy is queued in its thread (ckt__emu_thread.async,
 * oldest first, each tagged with the group it will belong to) and performed
 * only by the ckt_cp_async_wait() that covers its group, so shared memory keeps
 * its old bytes until then. When the queue is full the oldest copy completes
 * early, which a GPU may do too. cdna profile: copies happen at once (AMD has
 * no cp.async; ckt/arch/amd.h copies synchronously as well).
 *
 * Misuse that a GPU would fault on or silently corrupt — misaligned or
 * non-shared addresses, src_bytes out of range, a buffer range of 2 GiB or
 * more — stops the program with a message naming the call site.
 */
#ifndef CKT_ARCH_CPU_MEMORY_H
#define CKT_ARCH_CPU_MEMORY_H

#include "ckt/arch/config.h"

#if defined(CKT_BACKEND_CPU)

#include "ckt/arch/cpu/emulator.h"
#include "ckt/arch/vector.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(CKT__EMU_ASAN) && defined(__GLIBC__)
#include <malloc.h> /* memalign, for ckt__emu_device_malloc */
#endif

#if CKT_EMU_WARP_SIZE == 32
#define CKT_HAS_CP_ASYNC 1
#endif

/* >>checks */

__attribute__((format(printf, 3, 4), noreturn)) static inline void
ckt__emu_die(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "ckt emulator: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (file)
        fprintf(stderr, " at %s:%d", file, line);
    fprintf(stderr, "\n");
    abort();
}

/* Whether [p, p + n) lies in the running block's shared memory. */
static inline int ckt__emu_in_shared(const void *p, size_t n)
{
    const ckt__emu_worker *w = ckt__emu_self;
    const unsigned char *c = (const unsigned char *)p;
    return w && c >= w->shared && n <= w->shared_bytes &&
           (size_t)(c - w->shared) <= w->shared_bytes - n;
}

/* >>async copies */

static inline void ckt__emu_copy_now(const ckt__emu_async_copy *c)
{
    memcpy(c->dst, c->src, c->src_bytes);
    memset((unsigned char *)c->dst + c->src_bytes, 0, c->bytes - c->src_bytes);
}

/* Performs, in issue order, the queued copies of groups below `group_end`
 * and keeps the others queued. */
static inline void ckt__emu_async_complete(ckt__emu_thread *t, unsigned group_end)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < t->async_count; i++) {
        if (t->async[i].group < group_end)
            ckt__emu_copy_now(&t->async[i]);
        else
            t->async[kept++] = t->async[i];
    }
    t->async_count = kept;
}

static inline void ckt__emu_cp_async(void *smem, const void *gmem, unsigned bytes,
                                     unsigned src_bytes, const char *file, int line)
{
    ckt__emu_worker *w = ckt__emu_self;
    if (!w)
        ckt__emu_fail_outside("ckt_cp_async", file, line);
    if (src_bytes > bytes)
        ckt__emu_die(file, line, "ckt_cp_async_%u: src_bytes %u exceeds %u", bytes, src_bytes,
                     bytes);
    if ((uintptr_t)smem % bytes || (uintptr_t)gmem % bytes)
        ckt__emu_die(file, line, "ckt_cp_async_%u: addresses %p (shared) and %p (global) must be "
                     "%u-byte aligned", bytes, smem, gmem, bytes);
    if (!ckt__emu_in_shared(smem, bytes))
        ckt__emu_die(file, line, "ckt_cp_async_%u: destination %p is not in shared memory", bytes,
                     smem);
    if (src_bytes && ckt__emu_in_shared(gmem, bytes))
        ckt__emu_die(file, line, "ckt_cp_async_%u: source %p is shared memory, not global", bytes,
                     gmem);
    ckt__emu_async_copy c;
    c.dst = smem;
    c.src = gmem;
    c.bytes = bytes;
    c.src_bytes = src_bytes;
#if defined(CKT_HAS_CP_ASYNC)
    ckt__emu_thread *t = w->cur;
    if (t->async_count == CKT__EMU_ASYNC_MAX) { /* full: the oldest completes early */
        ckt__emu_copy_now(&t->async[0]);
        memmove(&t->async[0], &t->async[1], sizeof t->async[0] * (CKT__EMU_ASYNC_MAX - 1));
        t->async_count--;
    }
    c.group = t->async_group;
    t->async[t->async_count++] = c;
#else
    c.group = 0;
    ckt__emu_copy_now(&c);
#endif
}

static inline void ckt__emu_cp_async_commit(void)
{
#if defined(CKT_HAS_CP_ASYNC)
    ckt__emu_thread *t = ckt__emu_cur();
    t->async_group++;
#endif
}

/* Committed groups are 0 .. async_group - 1; the n newest may stay pending. */
static inline void ckt__emu_cp_async_wait(unsigned n)
{
#if defined(CKT_HAS_CP_ASYNC)
    ckt__emu_thread *t = ckt__emu_cur();
    if (n > 7)
        n = 7;
    if (t->async_group > n)
        ckt__emu_async_complete(t, t->async_group - n);
#else
    (void)n;
#endif
}

#define ckt_cp_async_16(smem, gmem, src_bytes)                                                    \
    ckt__emu_cp_async((smem), (gmem), 16u, (src_bytes), __FILE__, __LINE__)
#define ckt_cp_async_8(smem, gmem, src_bytes)                                                     \
    ckt__emu_cp_async((smem), (gmem), 8u, (src_bytes), __FILE__, __LINE__)
#define ckt_cp_async_4(smem, gmem, src_bytes)                                                     \
    ckt__emu_cp_async((smem), (gmem), 4u, (src_bytes), __FILE__, __LINE__)
#define ckt_cp_async_commit() ckt__emu_cp_async_commit()
#define ckt_cp_async_wait(n) ckt__emu_cp_async_wait(n)
#define ckt_cp_async_wait_all() (ckt__emu_cp_async_commit(), ckt__emu_cp_async_wait(0))

/* >>buffer loads and stores */

/* Whether the n-byte access at base + off is in range; stops on misuse. */
static inline int ckt__emu_buffer_ok(const void *base, int64_t num_bytes, int64_t off, unsigned n,
                                     const char *what)
{
    if (num_bytes < 0 || num_bytes > INT32_MAX)
        ckt__emu_die(NULL, 0, "%s: num_bytes %lld is outside [0, 2^31) (the AMD buffer range)",
                     what, (long long)num_bytes);
    if ((uintptr_t)base % n || off % (int64_t)n)
        ckt__emu_die(NULL, 0, "%s: base %p + byte_offset %lld is not %u-byte aligned", what,
                     base, (long long)off, n);
    return off >= 0 && off <= num_bytes - (int64_t)n;
}

static inline uint32_t ckt_buffer_load_u32(const void *base, int64_t num_bytes, int64_t off)
{
    uint32_t v = 0;
    if (ckt__emu_buffer_ok(base, num_bytes, off, 4, "ckt_buffer_load_u32"))
        memcpy(&v, (const unsigned char *)base + off, 4);
    return v;
}

static inline ckt_u32x2 ckt_buffer_load_u32x2(const void *base, int64_t num_bytes, int64_t off)
{
    ckt_u32x2 v = {0, 0};
    if (ckt__emu_buffer_ok(base, num_bytes, off, 8, "ckt_buffer_load_u32x2"))
        memcpy(&v, (const unsigned char *)base + off, 8);
    return v;
}

static inline ckt_u32x4 ckt_buffer_load_u32x4(const void *base, int64_t num_bytes, int64_t off)
{
    ckt_u32x4 v = {0, 0, 0, 0};
    if (ckt__emu_buffer_ok(base, num_bytes, off, 16, "ckt_buffer_load_u32x4"))
        memcpy(&v, (const unsigned char *)base + off, 16);
    return v;
}

static inline void ckt_buffer_store_u32(void *base, int64_t num_bytes, int64_t off, uint32_t v)
{
    if (ckt__emu_buffer_ok(base, num_bytes, off, 4, "ckt_buffer_store_u32"))
        memcpy((unsigned char *)base + off, &v, 4);
}

static inline void ckt_buffer_store_u32x2(void *base, int64_t num_bytes, int64_t off, ckt_u32x2 v)
{
    if (ckt__emu_buffer_ok(base, num_bytes, off, 8, "ckt_buffer_store_u32x2"))
        memcpy((unsigned char *)base + off, &v, 8);
}

static inline void ckt_buffer_store_u32x4(void *base, int64_t num_bytes, int64_t off, ckt_u32x4 v)
{
    if (ckt__emu_buffer_ok(base, num_bytes, off, 16, "ckt_buffer_store_u32x4"))
        memcpy((unsigned char *)base + off, &v, 16);
}

static inline ckt_u32x4 ckt_global_load_u32x4(const void *p)
{
    ckt_u32x4 v;
    if ((uintptr_t)p % 16)
        ckt__emu_die(NULL, 0, "ckt_global_load_u32x4: %p is not 16-byte aligned", p);
    memcpy(&v, p, 16);
    return v;
}

static inline void ckt_global_store_u32x4(void *p, ckt_u32x4 v)
{
    if ((uintptr_t)p % 16)
        ckt__emu_die(NULL, 0, "ckt_global_store_u32x4: %p is not 16-byte aligned", p);
    memcpy(p, &v, 16);
}

/* >>device memory: what ckt_rt_malloc returns on the CPU backend
 * `bytes` at a 256-byte aligned address (GPU allocators align that much),
 * filled with 0xFF bytes (fresh GPU memory is garbage), or NULL. Without ASan
 * the block is padded to a multiple of 256 bytes, as on a GPU. Under ASan no
 * byte past `bytes` is addressable, so an access of even one element past the
 * end is reported: with glibc the block is exactly `bytes` (memalign), and the
 * report is a heap-buffer-overflow naming the block and the ckt_rt_malloc that
 * made it; elsewhere the padding is poisoned (a use-after-poison report). An
 * in-bounds access, a whole 16-byte vector included, is never reported. */

static inline void *ckt__emu_device_malloc(size_t bytes)
{
    const size_t align = 256;
    size_t rounded = (bytes + align - 1) / align * align;
    if (rounded < bytes) /* wrapped around: more than SIZE_MAX - 255 */
        return NULL;
#if defined(CKT__EMU_ASAN) && defined(__GLIBC__)
    (void)rounded;
    void *p = memalign(align, bytes);
    if (p)
        memset(p, 0xFF, bytes);
#else
    void *p = aligned_alloc(align, rounded);
    if (p)
        memset(p, 0xFF, rounded);
#if defined(CKT__EMU_ASAN)
    if (p)
        __asan_poison_memory_region((unsigned char *)p + bytes, rounded - bytes);
#endif
#endif
    return p;
}

#endif /* CKT_BACKEND_CPU */
#endif /* CKT_ARCH_CPU_MEMORY_H */
