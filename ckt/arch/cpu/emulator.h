/* ckt/arch/cpu/emulator.h — the CPU SIMT emulator behind the `cpu` backend.
 *
 * A kernel launch runs every block of the grid; a block runs one fiber per GPU
 * thread (user-space context, its own stack) under a scheduler that switches
 * fibers at barriers and warp collectives, so the kernel source runs unchanged
 * with GPU semantics:
 *   - ckt_block_sync(): every live thread of the block waits until all have
 *     arrived at the same barrier;
 *   - warp collectives (shuffles, ballot, warp sync): each lane's value is
 *     gathered from the other lanes of its warp once all lanes have arrived;
 *   - per-block shared memory, filled with a poison pattern (0xFF bytes: NaN
 *     for floats, -1 for integers) so that reads of never-written shared memory
 *     show up;
 *   - blocks run in parallel on OS threads (CKT_EMU_THREADS, default: cores).
 *
 * Misuse is reported, not hung: a barrier reached by part of the block,
 * barriers or collectives at different call sites, a collective while other
 * lanes of the warp wait elsewhere or have exited, a shuffle reading a lane
 * that a partial warp lacks, and a deadlock (a thread that runs on for
 * CKT_EMU_TIMEOUT_S of CPU time without reaching a barrier or collective,
 * e.g. spinning on a flag that a waiting thread would set) end the launch
 * with an error whose message (ckt_emu_last_error()) names the block, the
 * warps, the lanes and the file:line where each waits:
 *
 *   ckt emulator: block (0,0,0): barrier reached by only part of the block
 *     warp 0 lanes 0-15: wait at block barrier at kernel.c:42
 *     warp 0 lanes 16-31: have exited
 *     warps 1-3 lanes 0-31: wait at block barrier at kernel.c:42
 *
 * A fiber stack overflow hits a guard page; the emulator's SIGSEGV handler
 * (on an alternate signal stack) prints the block and thread and aborts.
 *
 * Fibers run one after another, so a missing barrier can go unnoticed; the
 * schedule order is a knob to expose such races: CKT_EMU_SCHEDULE=forward
 * (default), reverse, or shuffle[:seed], or ckt_emu_set_schedule().
 *
 * Profiles: warp size 32 (nv, default) or 64 (cdna, -DCKT_CPU_PROFILE_CDNA).
 *
 * Environment knobs: CKT_EMU_THREADS (OS threads), CKT_EMU_STACK_KB (fiber
 * stack, default 256 KiB of address space, committed lazily), CKT_EMU_SCHEDULE,
 * CKT_EMU_TIMEOUT_S (deadlock watchdog, default 20 s of CPU time, 0 = off).
 * docs/emulator.md says what is guaranteed and how to debug a kernel with gdb.
 *
 * All state shared between translation units (the current fiber, the last
 * error) lives in weak symbols, so kernels and launches may sit in different
 * files of one program.
 */
#ifndef CKT_ARCH_CPU_EMULATOR_H
#define CKT_ARCH_CPU_EMULATOR_H

#include "ckt/arch/config.h"
#include "ckt/arch/cpu/fiber.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

#ifndef MAP_ANONYMOUS /* hidden by a strict -std=c11 included before ckt */
#define MAP_ANONYMOUS 0x20
#endif
#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0x4000
#endif

#if defined(__SANITIZE_ADDRESS__)
#define CKT__EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CKT__EMU_ASAN 1
#endif
#endif
#if defined(CKT__EMU_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

/* Signal handlers (stack overflow report, deadlock watchdog) need POSIX
 * signals, which a strict -std=c11 TU that included a system header before
 * ckt hides; without them the emulator still works, minus these reports. */
#if defined(__linux__) && defined(SA_SIGINFO) && defined(SA_ONSTACK) && !defined(CKT_EMU_NO_SIGNALS)
#define CKT__EMU_SIGNALS 1
#if defined(SIGEV_THREAD_ID) && defined(CLOCK_THREAD_CPUTIME_ID) && defined(SYS_gettid) &&        \
    (defined(__USE_MISC) || defined(__USE_GNU))
#define CKT__EMU_WATCHDOG 1
#ifndef CKT_EMU_WATCHDOG_SIGNAL
#define CKT_EMU_WATCHDOG_SIGNAL (SIGRTMAX - 2) /* a real-time signal, thread-directed */
#endif
#endif
#endif

#if defined(CKT_CPU_PROFILE_CDNA)
#define CKT_EMU_WARP_SIZE 64
#define CKT_EMU_PROFILE_NAME "cdna"
#else
#define CKT_EMU_WARP_SIZE 32
#define CKT_EMU_PROFILE_NAME "nv"
#endif

#define CKT_EMU_MAX_BLOCK_THREADS 1024
#define CKT_EMU_STATIC_SHARED_BYTES (160u * 1024u) /* room for static shared arrays */
#define CKT__EMU_MSG_BYTES 4096
#define CKT__EMU_GUARD_BYTES (64u * 1024u)    /* PROT_NONE below each fiber stack */
#define CKT__EMU_ALTSTACK_BYTES (64u * 1024u) /* signal stack of each worker */
#define CKT__EMU_DESCRIBE_LINES 8             /* lines of a diagnostic, at most */

/* A kernel entry as the emulator calls it: params points at the kernel's
 * parameter struct. CKT_KERNEL generates one per kernel. */
typedef void (*ckt__emu_entry)(const void *params);

/* HUNG: abandoned by the watchdog after running CKT_EMU_TIMEOUT_S without
 * reaching a barrier or collective. tools/emulator.gdb knows these values. */
enum ckt__emu_state {
    CKT__EMU_RUNNABLE,
    CKT__EMU_AT_BARRIER,
    CKT__EMU_IN_WARP_OP,
    CKT__EMU_AT_MBAR, /* waits for an mbarrier phase, a named barrier (ckt/arch/cpu/hopper.h) or a
                       * flag in global memory (ckt_flag_wait_geq) */
    CKT__EMU_DONE,
    CKT__EMU_HUNG
};

/* Warp collectives: what a lane asks for, resolved by the scheduler once the
 * whole warp has arrived. */
enum ckt__emu_op {
    CKT__EMU_OP_SHFL_IDX,
    CKT__EMU_OP_SHFL_UP,
    CKT__EMU_OP_SHFL_DOWN,
    CKT__EMU_OP_SHFL_XOR,
    CKT__EMU_OP_BALLOT,
    CKT__EMU_OP_SYNC,
    CKT__EMU_OP_CUSTOM /* resolved by a callback (matrix instructions) */
};

/* What a thread in state CKT__EMU_AT_MBAR waits for (its op): an mbarrier
 * phase (op_ptr[0] the barrier, op_arg the parity), a named barrier
 * (op_arg its id, value the completions it saw when it arrived) or a flag
 * (op_ptr[0] an int in global memory, value the int64 it must reach: another
 * block sets it, so the block may be parked, below). */
enum { CKT__EMU_WAIT_MBAR = 100, CKT__EMU_WAIT_NAMED = 101, CKT__EMU_WAIT_FLAG = 102 };

enum ckt_emu_schedule { CKT_EMU_FORWARD, CKT_EMU_REVERSE, CKT_EMU_SHUFFLE };

struct ckt__emu_thread;
struct ckt__emu_worker;

/* Resolves a CUSTOM warp op: lanes[0..n) are the lanes of one warp, all
 * waiting at the same call site with the same callback. */
typedef void (*ckt__emu_warp_fn)(struct ckt__emu_thread **lanes, unsigned n);

/* A cp.async copy issued and not yet made visible (ckt/arch/cpu/memory.h). */
#define CKT__EMU_ASYNC_MAX 64
typedef struct ckt__emu_async_copy {
    void *dst;
    const void *src;
    unsigned bytes, src_bytes, group;
} ckt__emu_async_copy;

typedef struct ckt__emu_thread {
    ckt__fiber fiber;
    unsigned char *stack; /* usable stack, above its guard page */
    size_t stack_size;
    unsigned tid[3];
    unsigned rank, lane, warp;
    int state;
    /* what the thread waits for, and where */
    int op;
    unsigned op_arg;
    uint64_t value, result;
    const void *op_ptr[4];   /* operand pointers of CUSTOM ops */
    ckt__emu_warp_fn op_fn;
    const char *file;
    int line;
    size_t shared_off; /* bump offset of static shared arrays */
    ckt__emu_async_copy async[CKT__EMU_ASYNC_MAX]; /* pending cp.async, oldest first */
    unsigned async_count, async_group; /* pending copies; id of the open group */
    void *asan_fake_stack;
} ckt__emu_thread;

typedef struct ckt__emu_launch {
    ckt__emu_entry entry;
    const void *params;
    ckt_dim3 grid, block;
    size_t dyn_shared;
    unsigned nthreads;
    unsigned long long nblocks;
    unsigned long long next_block; /* atomic */
    int failed;                    /* atomic */
    int schedule;
    uint64_t seed;
    size_t stack_size;
    double timeout_s; /* watchdog period in CPU seconds; 0 = off */
    struct ckt__emu_worker *workers; /* all of them, for the parked blocks' stall check */
    int nworkers;
    pthread_mutex_t lock;
    char msg[CKT__EMU_MSG_BYTES];
} ckt__emu_launch;

/* A block's resources: its fibers, their stacks and its shared memory. A
 * worker runs the block whose context it holds; a block whose live threads
 * all wait for flags that other blocks set is parked (its context kept
 * aside, fibers suspended) while the worker runs other blocks. */
typedef struct ckt__emu_block_ctx {
    ckt__emu_thread *threads;
    unsigned *order;
    unsigned char *stacks;
    size_t stacks_bytes;
    unsigned char *shared;
    size_t shared_bytes;
    unsigned block_idx[3];
    uint64_t rng;
    unsigned named_count[16], named_gen[16];
} ckt__emu_block_ctx;

typedef struct ckt__emu_worker {
    ckt__emu_launch *launch;
    ckt__emu_thread *threads;
    unsigned *order;
    unsigned char *stacks; /* one mapping: [guard | stack] per thread */
    size_t stacks_bytes;
    unsigned char *shared;
    size_t shared_bytes;
    ckt__fiber sched;
    ckt__emu_thread *cur;
    unsigned block_idx[3];
    uint64_t rng;
    const void *sched_stack_bottom; /* ASan: the scheduler's stack */
    size_t sched_stack_size;
    size_t guard_bytes, per_thread_bytes; /* stacks: [guard | stack] * nthreads */
    unsigned char *altstack;              /* signal stack of this worker's OS thread */
    unsigned named_count[16], named_gen[16]; /* named barriers: arrivals so far, completions */
    volatile int in_fiber;                /* the watchdog's view: a fiber runs */
    volatile unsigned long switches;      /* fibers entered so far */
    unsigned long tick_switches;          /* switches seen at the last watchdog tick */
    int failed;                           /* a block failed: fibers left mid-kernel */
    ckt__emu_block_ctx *parked;           /* blocks waiting for flags, oldest first */
    ckt__emu_block_ctx *spare;            /* contexts of finished blocks, for reuse */
    unsigned nparked, nspare, cap_ctx;    /* (both arrays hold cap_ctx entries) */
    char msg[CKT__EMU_MSG_BYTES];
} ckt__emu_worker;

/* Shared between translation units: weak definitions, one survives linking. */
__attribute__((weak)) __thread ckt__emu_worker *ckt__emu_self;
__attribute__((weak)) __thread char ckt__emu_last_msg[CKT__EMU_MSG_BYTES];
__attribute__((weak)) int ckt__emu_schedule_override = -1;
__attribute__((weak)) uint64_t ckt__emu_seed_override;

/* >>public API */

/* The message of the last failed launch ("" if none). */
static inline const char *ckt_emu_last_error(void) { return ckt__emu_last_msg; }

/* Forces the schedule order of later launches (overrides CKT_EMU_SCHEDULE);
 * pass -1 to go back to the environment / default. */
static inline void ckt_emu_set_schedule(int schedule, uint64_t seed)
{
    ckt__emu_schedule_override = schedule;
    ckt__emu_seed_override = seed;
}

/* >>fiber side: called from kernel code */

static inline ckt__emu_thread *ckt__emu_cur(void) { return ckt__emu_self->cur; }

static inline void ckt__emu_fail_outside(const char *what, const char *file, int line)
{
    fprintf(stderr, "ckt emulator: %s called outside a kernel at %s:%d\n", what, file, line);
    abort();
}

/* Hand control back to the block scheduler; returns when resumed. */
static inline void ckt__emu_yield(ckt__emu_worker *w, ckt__emu_thread *t)
{
#if defined(CKT__EMU_ASAN)
    /* NULL: a finished (or abandoned) fiber's fake stack is released */
    __sanitizer_start_switch_fiber(t->state >= CKT__EMU_DONE ? NULL : &t->asan_fake_stack,
                                   w->sched_stack_bottom, w->sched_stack_size);
#endif
    ckt__fiber_jump(&t->fiber, &w->sched);
#if defined(CKT__EMU_ASAN)
    __sanitizer_finish_switch_fiber(t->asan_fake_stack, NULL, NULL);
#endif
}

static inline void ckt__emu_barrier(const char *file, int line)
{
    ckt__emu_worker *w = ckt__emu_self;
    if (!w)
        ckt__emu_fail_outside("ckt_block_sync()", file, line);
    ckt__emu_thread *t = w->cur;
    t->state = CKT__EMU_AT_BARRIER;
    t->file = file;
    t->line = line;
    ckt__emu_yield(w, t);
}

static inline uint64_t ckt__emu_warp_op(int op, uint64_t value, unsigned arg, const char *file,
                                        int line)
{
    ckt__emu_worker *w = ckt__emu_self;
    if (!w)
        ckt__emu_fail_outside("a warp collective", file, line);
    ckt__emu_thread *t = w->cur;
    t->state = CKT__EMU_IN_WARP_OP;
    t->op = op;
    t->value = value;
    t->op_arg = arg;
    t->op_fn = NULL;
    t->file = file;
    t->line = line;
    ckt__emu_yield(w, t);
    return t->result;
}

/* A warp-wide operation resolved by fn once every lane has arrived: used by
 * the emulated matrix instructions. Operands travel in op_ptr. */
static inline void ckt__emu_warp_custom(ckt__emu_warp_fn fn, const void *p0, const void *p1,
                                        const void *p2, const void *p3, const char *file, int line)
{
    ckt__emu_worker *w = ckt__emu_self;
    if (!w)
        ckt__emu_fail_outside("a warp matrix instruction", file, line);
    ckt__emu_thread *t = w->cur;
    t->state = CKT__EMU_IN_WARP_OP;
    t->op = CKT__EMU_OP_CUSTOM;
    t->op_fn = fn;
    t->op_ptr[0] = p0;
    t->op_ptr[1] = p1;
    t->op_ptr[2] = p2;
    t->op_ptr[3] = p3;
    t->file = file;
    t->line = line;
    ckt__emu_yield(w, t);
}

/* Static shared arrays: every thread of a block declares them in the same
 * order, so a per-thread bump offset yields the same address in all threads. */
static inline void *ckt__emu_shared_alloc(size_t bytes, size_t align, const char *file, int line)
{
    ckt__emu_worker *w = ckt__emu_self;
    if (!w)
        ckt__emu_fail_outside("a shared-memory declaration", file, line);
    ckt__emu_thread *t = w->cur;
    size_t base = w->launch->dyn_shared;
    size_t off = (t->shared_off + align - 1) / align * align;
    if (off + bytes > CKT_EMU_STATIC_SHARED_BYTES) {
        fprintf(stderr,
                "ckt emulator: static shared memory exceeds %u bytes at %s:%d "
                "(raise CKT_EMU_STATIC_SHARED_BYTES or use dynamic shared memory)\n",
                CKT_EMU_STATIC_SHARED_BYTES, file, line);
        abort();
    }
    t->shared_off = off + bytes;
    return w->shared + base + off;
}

static inline void *ckt__emu_shared_dynamic(void) { return ckt__emu_self->shared; }

/* >>scheduler side */

static inline uint64_t ckt__emu_rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline void ckt__emu_fiber_main(void)
{
    ckt__emu_worker *w = ckt__emu_self;
#if defined(CKT__EMU_ASAN)
    __sanitizer_finish_switch_fiber(NULL, &w->sched_stack_bottom, &w->sched_stack_size);
#endif
    w->launch->entry(w->launch->params);
    w = ckt__emu_self;
    ckt__emu_thread *t = w->cur;
    t->state = CKT__EMU_DONE;
    ckt__emu_yield(w, t);
    abort(); /* a finished fiber is never resumed */
}

static inline void ckt__emu_msg(ckt__emu_worker *w, const char *fmt, ...)
{
    size_t len = strlen(w->msg);
    if (len + 1 >= sizeof w->msg)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->msg + len, sizeof w->msg - len, fmt, ap);
    va_end(ap);
}

static inline const char *ckt__emu_state_name(const ckt__emu_thread *t)
{
    switch (t->state) {
    case CKT__EMU_AT_BARRIER: return "wait at block barrier";
    case CKT__EMU_IN_WARP_OP: return "wait in warp collective";
    case CKT__EMU_AT_MBAR:
        return t->op == CKT__EMU_WAIT_NAMED  ? "wait at a named barrier"
               : t->op == CKT__EMU_WAIT_FLAG ? "wait for a flag another block sets"
                                             : "wait for an mbarrier phase";
    case CKT__EMU_DONE: return "have exited";
    case CKT__EMU_HUNG: return "kept running without reaching a barrier or collective";
    default: return "are runnable (not resumed yet)";
    }
}

static inline int ckt__emu_same_wait(const ckt__emu_thread *a, const ckt__emu_thread *b)
{
    if (a->state != b->state)
        return 0;
    if (a->state != CKT__EMU_AT_BARRIER && a->state != CKT__EMU_IN_WARP_OP && a->state != CKT__EMU_AT_MBAR)
        return 1;
    if (a->state == CKT__EMU_AT_MBAR && a->op != b->op)
        return 0;
    return a->line == b->line && strcmp(a->file, b->file) == 0 &&
           (a->state != CKT__EMU_IN_WARP_OP || (a->op == b->op && a->op_fn == b->op_fn));
}

/* Appends to buf what the lanes of threads [first, first + cnt) (one warp)
 * do, one "lanes 0-7,9: wait at block barrier at kernel.c:42\n" per distinct
 * wait, in order of first lane. */
static inline void ckt__emu_warp_summary(ckt__emu_worker *w, unsigned first, unsigned cnt,
                                         char *buf, size_t size)
{
    uint64_t left = cnt >= 64 ? ~0ull : (1ull << cnt) - 1; /* lanes not yet listed */
    size_t len = 0;
    buf[0] = 0;
    while (left && len + 1 < size) {
        unsigned lead = (unsigned)__builtin_ctzll(left);
        const ckt__emu_thread *a = &w->threads[first + lead];
        uint64_t mask = 0;
        for (unsigned i = lead; i < cnt; i++)
            if (((left >> i) & 1) && ckt__emu_same_wait(a, &w->threads[first + i]))
                mask |= 1ull << i;
        left &= ~mask;
        int single = (mask & (mask - 1)) == 0;
        len += (size_t)snprintf(buf + len, size - len, single ? "lane " : "lanes ");
        for (unsigned i = 0, sep = 0; i < cnt && len + 1 < size; i++) {
            if (!((mask >> i) & 1) || (i > 0 && ((mask >> (i - 1)) & 1)))
                continue; /* i starts a run of lanes */
            unsigned j = i;
            while (j + 1 < cnt && ((mask >> (j + 1)) & 1))
                j++;
            len += (size_t)(j > i ? snprintf(buf + len, size - len, "%s%u-%u", sep ? "," : "", i, j)
                                  : snprintf(buf + len, size - len, "%s%u", sep ? "," : "", i));
            sep = 1;
        }
        if (len + 1 >= size)
            break;
        len += (size_t)snprintf(buf + len, size - len, ": %s", ckt__emu_state_name(a));
        if (len + 1 < size &&
            (a->state == CKT__EMU_AT_BARRIER || a->state == CKT__EMU_IN_WARP_OP || a->state == CKT__EMU_AT_MBAR))
            len += (size_t)snprintf(buf + len, size - len, " at %s:%d", a->file, a->line);
        if (len + 1 < size)
            len += (size_t)snprintf(buf + len, size - len, "\n");
    }
}

/* Appends what threads [first, last) wait for, warp by warp; consecutive
 * warps that wait alike share their lines:
 *   "  warp 0 lanes 0-15: wait at block barrier at kernel.c:42"
 *   "  warps 1-3 lanes 0-31: wait at block barrier at kernel.c:42" */
static inline void ckt__emu_describe(ckt__emu_worker *w, unsigned first, unsigned last)
{
    const unsigned W = CKT_EMU_WARP_SIZE;
    char prev[640], cur[640];
    unsigned from = 0, to = 0, lines = 0, dropped = 0;
    prev[0] = 0;
    for (unsigned f = first;; f += W) {
        if (f < last)
            ckt__emu_warp_summary(w, f, last - f < W ? last - f : W, cur, sizeof cur);
        if (f < last && prev[0] && strcmp(cur, prev) == 0) {
            to = f / W;
            continue;
        }
        for (char *l = prev; *l;) { /* flush the lines of warps from..to */
            char *e = strchr(l, '\n');
            size_t n = e ? (size_t)(e - l) : strlen(l);
            if (lines++ >= CKT__EMU_DESCRIBE_LINES)
                dropped++;
            else if (from == to)
                ckt__emu_msg(w, "  warp %u %.*s\n", from, (int)n, l);
            else
                ckt__emu_msg(w, "  warps %u-%u %.*s\n", from, to, (int)n, l);
            l += n + (e != NULL);
        }
        if (f >= last)
            break;
        memcpy(prev, cur, sizeof cur);
        from = to = f / W;
    }
    if (dropped)
        ckt__emu_msg(w, "  (%u more lines)\n", dropped);
}

static inline void ckt__emu_block_error(ckt__emu_worker *w, const char *what, unsigned first,
                                        unsigned last)
{
    w->msg[0] = 0;
    ckt__emu_msg(w, "ckt emulator: block (%u,%u,%u): %s\n", w->block_idx[0], w->block_idx[1],
                 w->block_idx[2], what);
    ckt__emu_describe(w, first, last);
}

/* Collectives are resolved here, on the scheduler's (OS thread's) stack:
 * fiber stacks only hold the kernel's own frames. */
static inline void ckt__emu_run_fiber(ckt__emu_worker *w, ckt__emu_thread *t)
{
    w->cur = t;
    w->switches = w->switches + 1;
    w->in_fiber = 1;
#if defined(CKT__EMU_ASAN)
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, t->stack, t->stack_size);
#endif
    ckt__fiber_jump(&w->sched, &t->fiber);
#if defined(CKT__EMU_ASAN)
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
    w->in_fiber = 0;
}

/* Resolves the warp collective of lanes [first, first + n); 0 on misuse. */
static inline int ckt__emu_resolve_warp(ckt__emu_worker *w, unsigned first, unsigned n)
{
    ckt__emu_thread *t = &w->threads[first];
    const unsigned W = CKT_EMU_WARP_SIZE;
    if (t->op == CKT__EMU_OP_CUSTOM) {
        ckt__emu_thread *lanes[CKT_EMU_WARP_SIZE];
        for (unsigned i = 0; i < n; i++)
            lanes[i] = &w->threads[first + i];
        if (n != W) {
            ckt__emu_block_error(w, "warp matrix instruction in a partial warp", first, first + n);
            return 0;
        }
        t->op_fn(lanes, n);
        return 1;
    }
    if (t->op == CKT__EMU_OP_BALLOT) {
        uint64_t mask = 0;
        for (unsigned i = 0; i < n; i++)
            if (w->threads[first + i].value)
                mask |= 1ull << i;
        for (unsigned i = 0; i < n; i++)
            w->threads[first + i].result = mask;
        return 1;
    }
    for (unsigned i = 0; i < n; i++) {
        ckt__emu_thread *me = &w->threads[first + i];
        unsigned src = i;
        switch (me->op) {
        case CKT__EMU_OP_SHFL_IDX: src = me->op_arg % W; break;
        case CKT__EMU_OP_SHFL_UP: src = me->op_arg <= i ? i - me->op_arg : i; break;
        case CKT__EMU_OP_SHFL_DOWN: src = i + me->op_arg < W ? i + me->op_arg : i; break;
        case CKT__EMU_OP_SHFL_XOR: src = (i ^ me->op_arg) < W ? (i ^ me->op_arg) : i; break;
        default: break; /* SYNC */
        }
        if (src >= n) {
            char what[160];
            snprintf(what, sizeof what,
                     "lane %u of warp %u reads lane %u, which does not exist (partial warp of "
                     "%u lanes)",
                     i, me->warp, src, n);
            ckt__emu_block_error(w, what, first, first + n);
            return 0;
        }
        me->result = w->threads[first + src].value;
    }
    return 1;
}

/* >>mbarrier state (ckt/arch/cpu/hopper.h): the emulator's own encoding of
 * the 64-bit object. Bits 0-19: arrivals a phase expects; 20-39: arrivals
 * still missing; 40-61: bytes still to land (signed: a copy may complete
 * before its expect_tx); 62: 0 on an initialized barrier (shared memory's
 * poison has it set); 63: the current phase's parity. */
static inline int ckt__emu_mbar_phase_done(const void *bar, unsigned parity)
{
    const uint64_t v = *(const uint64_t *)bar;
    return (unsigned)(v >> 63) != (parity & 1u);
}

/* Whether a flag wait is over: *op_ptr[0] >= value (an acquire load: the
 * block that set it may run on another OS thread). */
static inline int ckt__emu_flag_reached(const ckt__emu_thread *t)
{
    return (int64_t)__atomic_load_n((const int *)t->op_ptr[0], __ATOMIC_ACQUIRE) >= (int64_t)t->value;
}

/* Sets up block (bx, by, bz) in the worker's context; ckt__emu_resume_block runs it. */
static inline void ckt__emu_start_block(ckt__emu_worker *w, unsigned bx, unsigned by, unsigned bz)
{
    ckt__emu_launch *L = w->launch;
    const unsigned n = L->nthreads;
    w->block_idx[0] = bx;
    w->block_idx[1] = by;
    w->block_idx[2] = bz;
    memset(w->shared, 0xFF, w->shared_bytes); /* poison */
    memset(w->named_count, 0, sizeof w->named_count);
    memset(w->named_gen, 0, sizeof w->named_gen);
    for (unsigned r = 0; r < n; r++) {
        ckt__emu_thread *t = &w->threads[r];
        t->state = CKT__EMU_RUNNABLE;
        t->shared_off = 0;
        t->async_count = 0; /* copies a finished block never waited for are dropped */
        t->async_group = 0;
        t->file = "";
        t->line = 0;
        ckt__fiber_prepare(&t->fiber, t->stack, t->stack_size, ckt__emu_fiber_main);
    }
    for (unsigned r = 0; r < n; r++)
        w->order[r] = L->schedule == CKT_EMU_REVERSE ? n - 1 - r : r;
}

/* Runs the block in the worker's context until it is done (0), fails (-1,
 * w->msg set) or can only go on once another block sets a flag (1: parked;
 * call again later). */
static inline int ckt__emu_resume_block(ckt__emu_worker *w)
{
    ckt__emu_launch *L = w->launch;
    const unsigned n = L->nthreads, W = CKT_EMU_WARP_SIZE;
    for (;;) {
        if (L->schedule == CKT_EMU_SHUFFLE)
            for (unsigned r = n - 1; r > 0; r--) {
                unsigned k = (unsigned)(ckt__emu_rng_next(&w->rng) % (r + 1));
                unsigned tmp = w->order[r];
                w->order[r] = w->order[k];
                w->order[k] = tmp;
            }
        for (unsigned r = 0; r < n; r++) {
            ckt__emu_thread *t = &w->threads[w->order[r]];
            if (t->state != CKT__EMU_RUNNABLE)
                continue;
            ckt__emu_run_fiber(w, t);
            if (t->state == CKT__EMU_HUNG) {
                char what[320];
                snprintf(what, sizeof what,
                         "deadlock: thread (%u,%u,%u) (warp %u lane %u) ran for over %g s of CPU time "
                         "without reaching a barrier or warp collective; spinning on memory that "
                         "another thread writes? (threads are not preempted; CKT_EMU_TIMEOUT_S)",
                         t->tid[0], t->tid[1], t->tid[2], t->warp, t->lane, L->timeout_s);
                ckt__emu_block_error(w, what, 0, n);
                return -1;
            }
        }
        /* Every thread now waits or is done. mbarrier waits whose phase has
         * completed go on first: a lane released here may be the one its
         * warp's collective waits for. */
        unsigned released = 0, at_mbar = 0, at_flag = 0;
        for (unsigned r = 0; r < n; r++) {
            ckt__emu_thread *t = &w->threads[r];
            if (t->state != CKT__EMU_AT_MBAR)
                continue;
            if (t->op == CKT__EMU_WAIT_NAMED  ? w->named_gen[t->op_arg % 16] != (unsigned)t->value
                : t->op == CKT__EMU_WAIT_FLAG ? ckt__emu_flag_reached(t)
                                              : ckt__emu_mbar_phase_done(t->op_ptr[0], t->op_arg)) {
                t->state = CKT__EMU_RUNNABLE;
                released++;
            } else {
                at_mbar++;
                at_flag += t->op == CKT__EMU_WAIT_FLAG;
            }
        }
        if (released)
            continue;
        /* Warp collectives next. */
        unsigned done = 0, at_barrier = 0, in_warp = 0;
        for (unsigned first = 0; first < n; first += W) {
            unsigned cnt = n - first < W ? n - first : W;
            unsigned wd = 0, wb = 0, wo = 0, wf = 0;
            for (unsigned i = 0; i < cnt; i++) {
                const ckt__emu_thread *t = &w->threads[first + i];
                int s = t->state;
                wd += s == CKT__EMU_DONE;
                wb += s == CKT__EMU_AT_BARRIER;
                wo += s == CKT__EMU_IN_WARP_OP;
                wf += s == CKT__EMU_AT_MBAR && t->op == CKT__EMU_WAIT_FLAG;
            }
            done += wd;
            at_barrier += wb;
            in_warp += wo;
            if (wo == 0)
                continue;
            if (wf && wo + wf == cnt)
                continue; /* the collective waits for lanes that wait for a flag (GPUs allow it) */
            if (wo != cnt) {
                ckt__emu_block_error(w,
                                     wd ? "warp collective while other lanes of the warp have "
                                          "exited"
                                        : "warp collective while other lanes of the warp wait "
                                          "elsewhere",
                                     first, first + cnt);
                return -1;
            }
            for (unsigned i = 1; i < cnt; i++)
                if (!ckt__emu_same_wait(&w->threads[first], &w->threads[first + i])) {
                    ckt__emu_block_error(w, "lanes of one warp wait in different collectives",
                                         first, first + cnt);
                    return -1;
                }
            if (!ckt__emu_resolve_warp(w, first, cnt))
                return -1;
            for (unsigned i = 0; i < cnt; i++)
                w->threads[first + i].state = CKT__EMU_RUNNABLE;
            released += cnt;
        }
        if (released)
            continue;
        if (done == n)
            return 0;
        if (at_barrier && in_warp == 0 && at_mbar == 0) {
            if (done) {
                ckt__emu_block_error(w, "barrier reached by only part of the block", 0, n);
                return -1;
            }
            const ckt__emu_thread *a = NULL;
            for (unsigned r = 0; r < n; r++) {
                if (!a)
                    a = &w->threads[r];
                else if (!ckt__emu_same_wait(a, &w->threads[r])) {
                    ckt__emu_block_error(w, "threads wait at barriers at different call sites",
                                         0, n);
                    return -1;
                }
            }
            for (unsigned r = 0; r < n; r++)
                w->threads[r].state = CKT__EMU_RUNNABLE;
            continue;
        }
        if (at_flag)
            return 1; /* only another block can let it go on */
        ckt__emu_block_error(w, "deadlock: no thread can proceed", 0, n);
        return -1;
    }
}

/* >>signals: stack overflow report and deadlock watchdog
 *
 * Installed once per process, lazily, by the first launch. A fiber that
 * overflows its stack faults on the guard below it; the kernel can only
 * deliver that SIGSEGV on an alternate stack, which each worker sets for its
 * OS thread while it runs blocks. Faults elsewhere go to the handler that was
 * there before (or the default action). Under ASan, which reports stack
 * overflows itself, the SIGSEGV handler is left out.
 *
 * The watchdog is a timer on each worker's CPU time (CKT_EMU_TIMEOUT_S); a
 * tick that finds the same fiber running since the previous tick abandons
 * that fiber (switching from the handler back to the scheduler), and the
 * launch fails with a deadlock report. */

#if defined(CKT__EMU_SIGNALS)

__attribute__((weak)) int ckt__emu_signals_state; /* 0 not installed, 1 installing, 2 done */
__attribute__((weak)) int ckt__emu_watchdog_ok;   /* the watchdog signal's handler is ours */
__attribute__((weak)) struct sigaction ckt__emu_prev_segv;

/* Async-signal-safe formatting for the fault report. */
static inline char *ckt__emu_put_s(char *p, char *end, const char *s)
{
    while (*s && p < end)
        *p++ = *s++;
    return p;
}

static inline char *ckt__emu_put_u(char *p, char *end, unsigned long long v, unsigned base)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v && n < 24);
    while (n && p < end)
        *p++ = tmp[--n];
    return p;
}

static inline char *ckt__emu_put_dim(char *p, char *end, const unsigned *v)
{
    p = ckt__emu_put_s(p, end, "(");
    for (int i = 0; i < 3; i++) {
        p = ckt__emu_put_u(p, end, v[i], 10);
        p = ckt__emu_put_s(p, end, i < 2 ? "," : ")");
    }
    return p;
}

static inline void ckt__emu_on_segv(int sig, siginfo_t *si, void *ctx)
{
    ckt__emu_worker *w = ckt__emu_self;
    uintptr_t a = (uintptr_t)si->si_addr;
    if (w && w->stacks && w->per_thread_bytes) {
        uintptr_t off = a - (uintptr_t)w->stacks;
        if (a >= (uintptr_t)w->stacks && off < w->stacks_bytes &&
            off % w->per_thread_bytes < w->guard_bytes) {
            const ckt__emu_thread *t = &w->threads[off / w->per_thread_bytes];
            char msg[400], *p = msg, *end = msg + sizeof msg;
            p = ckt__emu_put_s(p, end, "ckt emulator: stack overflow in block ");
            p = ckt__emu_put_dim(p, end, w->block_idx);
            p = ckt__emu_put_s(p, end, " thread ");
            p = ckt__emu_put_dim(p, end, t->tid);
#if defined(__x86_64__)
            p = ckt__emu_put_s(p, end, " at pc 0x"); /* gregs[16]: REG_RIP, a _GNU_SOURCE name */
            p = ckt__emu_put_u(p, end, (unsigned long long)((ucontext_t *)ctx)->uc_mcontext.gregs[16], 16);
#endif
            p = ckt__emu_put_s(p, end, " (fault address 0x");
            p = ckt__emu_put_u(p, end, a, 16);
            p = ckt__emu_put_s(p, end, ", in the guard below its stack) \xe2\x80\x94 raise CKT_EMU_STACK_KB (now ");
            p = ckt__emu_put_u(p, end, t->stack_size / 1024, 10);
            p = ckt__emu_put_s(p, end, ")\n");
            if (write(2, msg, (size_t)(p - msg)) < 0) {
            }
            abort();
        }
    }
    const struct sigaction *prev = &ckt__emu_prev_segv;
    if ((prev->sa_flags & SA_SIGINFO) && prev->sa_sigaction) {
        prev->sa_sigaction(sig, si, ctx);
        return;
    }
    if (!(prev->sa_flags & SA_SIGINFO) && prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
        prev->sa_handler(sig);
        return;
    }
    struct sigaction dfl; /* default action: the fault repeats, or the raise lands */
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
}

#if defined(CKT__EMU_WATCHDOG)
static inline void ckt__emu_on_tick(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)si;
    (void)ctx;
    ckt__emu_worker *w = ckt__emu_self;
    if (!w || !w->in_fiber)
        return;
    if (w->switches != w->tick_switches) {
        w->tick_switches = w->switches;
        return;
    }
    /* One fiber has run for a whole period. The handler runs on that fiber's
     * stack unless the tick landed inside a switch: then wait for the next. */
    ckt__emu_thread *t = w->cur;
    const unsigned char *here = (const unsigned char *)__builtin_frame_address(0);
    if (here < t->stack || here >= t->stack + t->stack_size)
        return;
    t->state = CKT__EMU_HUNG;
    ckt__emu_yield(w, t); /* never resumed */
    abort();
}

/* Arms the watchdog on the calling thread's CPU clock; 1 if armed. */
static inline int ckt__emu_watchdog_start(double seconds, timer_t *timer)
{
    if (!(seconds > 0) || !ckt__emu_watchdog_ok)
        return 0;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = CKT_EMU_WATCHDOG_SIGNAL;
#if defined(sigev_notify_thread_id)
    ev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
#else
    ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
#endif
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, timer) != 0)
        return 0;
    struct itimerspec its;
    its.it_value.tv_sec = (time_t)seconds;
    its.it_value.tv_nsec = (long)((seconds - (double)its.it_value.tv_sec) * 1e9);
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec < 1000000)
        its.it_value.tv_nsec = 1000000;
    its.it_interval = its.it_value;
    if (timer_settime(*timer, 0, &its, NULL) != 0) {
        timer_delete(*timer);
        return 0;
    }
    return 1;
}
#endif

static inline void ckt__emu_install_signals(void)
{
    if (__atomic_load_n(&ckt__emu_signals_state, __ATOMIC_ACQUIRE) == 2)
        return;
    int expect = 0;
    if (!__atomic_compare_exchange_n(&ckt__emu_signals_state, &expect, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(&ckt__emu_signals_state, __ATOMIC_ACQUIRE) != 2) {
        } /* another thread installs them */
        return;
    }
    struct sigaction sa;
#if !defined(CKT__EMU_ASAN)
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = ckt__emu_on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &ckt__emu_prev_segv);
#endif
#if defined(CKT__EMU_WATCHDOG)
    /* Only a signal nobody handles: never take over the program's own. */
    if (sigaction(CKT_EMU_WATCHDOG_SIGNAL, NULL, &sa) == 0 && !(sa.sa_flags & SA_SIGINFO) &&
        sa.sa_handler == SIG_DFL) {
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = ckt__emu_on_tick;
        /* NODEFER: the handler leaves by a fiber switch, not by returning */
        sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        ckt__emu_watchdog_ok = sigaction(CKT_EMU_WATCHDOG_SIGNAL, &sa, NULL) == 0;
    }
#endif
    __atomic_store_n(&ckt__emu_signals_state, 2, __ATOMIC_RELEASE);
}

#endif /* CKT__EMU_SIGNALS */

/* >>block contexts: a worker's current block lives in its own fields
 * (threads, stacks, shared, ...); these move one block's set in or out. */
static inline void ckt__emu_ctx_save(const ckt__emu_worker *w, ckt__emu_block_ctx *c)
{
    c->threads = w->threads;
    c->order = w->order;
    c->stacks = w->stacks;
    c->stacks_bytes = w->stacks_bytes;
    c->shared = w->shared;
    c->shared_bytes = w->shared_bytes;
    memcpy(c->block_idx, w->block_idx, sizeof c->block_idx);
    c->rng = w->rng;
    memcpy(c->named_count, w->named_count, sizeof c->named_count);
    memcpy(c->named_gen, w->named_gen, sizeof c->named_gen);
}
static inline void ckt__emu_ctx_load(ckt__emu_worker *w, const ckt__emu_block_ctx *c)
{
    w->threads = c->threads;
    w->order = c->order;
    w->stacks = c->stacks;
    w->stacks_bytes = c->stacks_bytes;
    w->shared = c->shared;
    w->shared_bytes = c->shared_bytes;
    memcpy(w->block_idx, c->block_idx, sizeof w->block_idx);
    w->rng = c->rng;
    memcpy(w->named_count, c->named_count, sizeof w->named_count);
    memcpy(w->named_gen, c->named_gen, sizeof w->named_gen);
}

/* Frees the resources of the context in the worker's fields. */
static inline void ckt__emu_ctx_free_current(ckt__emu_worker *w)
{
#if defined(CKT__EMU_ASAN)
    /* Fibers left mid-kernel keep their frames' redzones poisoned; a later
     * mapping at the same address must not inherit them. */
    if (w->stacks)
        __asan_unpoison_memory_region(w->stacks, w->stacks_bytes);
#endif
    if (w->stacks)
        munmap(w->stacks, w->stacks_bytes);
    free(w->threads);
    free(w->order);
    free(w->shared);
    w->stacks = NULL;
    w->threads = NULL;
    w->order = NULL;
    w->shared = NULL;
}

/* Allocates a fresh context into the worker's fields; -1 when out of memory. */
static inline int ckt__emu_ctx_alloc_current(ckt__emu_worker *w)
{
    ckt__emu_launch *L = w->launch;
    const unsigned n = L->nthreads;
    const size_t guard = w->guard_bytes, per = w->per_thread_bytes;
    w->threads = (ckt__emu_thread *)calloc(n, sizeof(ckt__emu_thread));
    w->order = (unsigned *)calloc(n, sizeof(unsigned));
    w->shared_bytes = L->dyn_shared + CKT_EMU_STATIC_SHARED_BYTES;
    /* 1024-byte aligned, as the swizzle patterns of TMA and wgmma assume (ckt/arch/hopper.h) */
    w->shared = (unsigned char *)aligned_alloc(1024, (w->shared_bytes + 1023) / 1024 * 1024);
    w->stacks_bytes = per * n;
    void *m = mmap(NULL, w->stacks_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
                   MAP_NORESERVE, -1, 0);
    w->stacks = m == MAP_FAILED ? NULL : (unsigned char *)m;
    if (!w->threads || !w->order || !w->shared || !w->stacks) {
        ckt__emu_ctx_free_current(w);
        return -1;
    }
    for (unsigned r = 0; r < n; r++) {
        ckt__emu_thread *t = &w->threads[r];
        unsigned char *base = w->stacks + per * r;
        mprotect(base, guard, PROT_NONE);
        t->stack = base + guard;
        t->stack_size = L->stack_size;
        t->rank = r;
        t->tid[0] = r % L->block.x;
        t->tid[1] = (r / L->block.x) % L->block.y;
        t->tid[2] = r / (L->block.x * L->block.y);
        t->lane = r % CKT_EMU_WARP_SIZE;
        t->warp = r / CKT_EMU_WARP_SIZE;
    }
    return 0;
}

/* Room for one more parked and one more spare context. */
static inline int ckt__emu_ctx_reserve(ckt__emu_worker *w)
{
    if (w->nparked + w->nspare + 2 <= w->cap_ctx) /* + the one in use and a new one */
        return 0;
    unsigned cap = w->cap_ctx ? 2 * w->cap_ctx : 4;
    ckt__emu_block_ctx *p = (ckt__emu_block_ctx *)realloc(w->parked, cap * sizeof *p);
    if (!p)
        return -1;
    w->parked = p;
    ckt__emu_block_ctx *q = (ckt__emu_block_ctx *)realloc(w->spare, cap * sizeof *q);
    if (!q)
        return -1;
    w->spare = q;
    w->cap_ctx = cap;
    return 0;
}

/* The fibers entered so far by every worker: it stands still only when no
 * block anywhere makes progress. */
static inline unsigned long ckt__emu_all_switches(const ckt__emu_launch *L)
{
    unsigned long n = 0;
    for (int i = 0; i < L->nworkers; i++)
        n += L->workers[i].switches;
    return n;
}

static inline double ckt__emu_wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Records the worker's failure (w->msg) as the launch's, once. */
static inline void ckt__emu_worker_fail(ckt__emu_worker *w)
{
    ckt__emu_launch *L = w->launch;
    w->failed = 1;
    pthread_mutex_lock(&L->lock);
    if (!L->failed) {
        memcpy(L->msg, w->msg, sizeof L->msg);
        __atomic_store_n(&L->failed, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&L->lock);
}

/* Runs the block in the worker's context until done, failed or parked;
 * a parked block's context goes to the parked list and a spare (or new)
 * one takes its place. 0, or -1 (failed). */
static inline int ckt__emu_run_current(ckt__emu_worker *w)
{
    int rc = ckt__emu_resume_block(w);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return 0;
    if (ckt__emu_ctx_reserve(w) != 0) {
        snprintf(w->msg, sizeof w->msg, "ckt emulator: out of memory for a parked block");
        return -1;
    }
    ckt__emu_ctx_save(w, &w->parked[w->nparked++]);
    if (w->nspare)
        ckt__emu_ctx_load(w, &w->spare[--w->nspare]);
    else {
        w->threads = NULL;
        w->stacks = NULL;
        w->order = NULL;
        w->shared = NULL;
        if (ckt__emu_ctx_alloc_current(w) != 0) {
            snprintf(w->msg, sizeof w->msg, "ckt emulator: out of memory for the fibers of another block "
                                            "(%u blocks wait for flags)", w->nparked);
            return -1;
        }
    }
    return 0;
}

/* One pass over the parked blocks: each runs until it is done or parked
 * again. 0, or -1 (failed). *progress: some fiber ran. */
static inline int ckt__emu_resume_parked(ckt__emu_worker *w, int *progress)
{
    *progress = 0;
    for (unsigned i = 0; i < w->nparked;) {
        const unsigned long before = w->switches;
        ckt__emu_ctx_save(w, &w->spare[w->nspare++]); /* the idle context, aside */
        ckt__emu_ctx_load(w, &w->parked[i]);
        int rc = ckt__emu_resume_block(w);
        if (w->switches != before)
            *progress = 1;
        if (rc < 0)
            return -1;
        if (rc == 1) { /* parked again: back to its place, the idle context back */
            ckt__emu_ctx_save(w, &w->parked[i]);
            ckt__emu_ctx_load(w, &w->spare[--w->nspare]);
            i++;
        } else { /* done: its context stays as the idle one (the other is spare) */
            w->parked[i] = w->parked[--w->nparked];
        }
    }
    return 0;
}

/* The report of blocks parked for good: each block and where it waits. */
static inline void ckt__emu_parked_error(ckt__emu_worker *w, double waited)
{
    char head[320];
    snprintf(head, sizeof head,
             "deadlock: %u block(s) wait for flags (ckt_flag_wait_geq) that no block sets%s; "
             "blocks that wait on each other must all be resident (a grid no larger than the GPU holds at once)",
             w->nparked, waited > 0 ? " (no progress anywhere for the watchdog's period)" : "");
    ckt__emu_block_ctx idle;
    ckt__emu_ctx_save(w, &idle);
    ckt__emu_ctx_load(w, &w->parked[0]);
    ckt__emu_block_error(w, head, 0, w->launch->nthreads);
    ckt__emu_ctx_save(w, &w->parked[0]);
    ckt__emu_ctx_load(w, &idle);
}

static inline void *ckt__emu_worker_main(void *arg)
{
    ckt__emu_worker *w = (ckt__emu_worker *)arg;
    ckt__emu_launch *L = w->launch;
    ckt__emu_self = w;
#if defined(CKT__EMU_SIGNALS)
    stack_t alt, old_alt;
    memset(&alt, 0, sizeof alt);
    alt.ss_sp = w->altstack;
    alt.ss_size = CKT__EMU_ALTSTACK_BYTES;
    int have_alt = w->altstack && sigaltstack(&alt, &old_alt) == 0;
#endif
#if defined(CKT__EMU_WATCHDOG)
    timer_t timer;
    int have_timer = ckt__emu_watchdog_start(L->timeout_s, &timer);
#endif
    /* Blocks in launch order. One that waits for a flag another block sets is
     * parked, and retried before each new block; once no new block is left,
     * the parked ones are retried until done. No progress anywhere (one
     * worker: at once; several: for the watchdog's period of wall time) is a
     * deadlock. */
    unsigned long seen = 0;
    double stalled_since = -1.0;
    for (;;) {
        if (__atomic_load_n(&L->failed, __ATOMIC_RELAXED))
            break;
        int progress = 0;
        if (w->nparked && (ckt__emu_ctx_reserve(w) != 0 || ckt__emu_resume_parked(w, &progress) != 0)) {
            ckt__emu_worker_fail(w);
            break;
        }
        unsigned long long b = __atomic_fetch_add(&L->next_block, 1ull, __ATOMIC_RELAXED);
        if (b < L->nblocks) {
            unsigned bx = (unsigned)(b % L->grid.x);
            unsigned by = (unsigned)((b / L->grid.x) % L->grid.y);
            unsigned bz = (unsigned)(b / ((unsigned long long)L->grid.x * L->grid.y));
            ckt__emu_start_block(w, bx, by, bz);
            w->rng = L->seed ^ (b * 0x9e3779b97f4a7c15ull);
            if (ckt__emu_run_current(w) != 0) {
                ckt__emu_worker_fail(w);
                break;
            }
            stalled_since = -1.0;
            continue;
        }
        __atomic_store_n(&L->next_block, L->nblocks, __ATOMIC_RELAXED); /* no wrap-around */
        if (!w->nparked)
            break;
        if (progress) {
            stalled_since = -1.0;
            continue;
        }
        /* stalled: every parked block waits; other workers may set the flags */
        const unsigned long all = ckt__emu_all_switches(L);
        const double now = ckt__emu_wall_seconds();
        if (stalled_since < 0.0 || all != seen) {
            stalled_since = now;
            seen = all;
        }
        if (L->nworkers == 1 || (L->timeout_s > 0.0 && now - stalled_since > L->timeout_s)) {
            ckt__emu_parked_error(w, L->nworkers == 1 ? 0.0 : now - stalled_since);
            ckt__emu_worker_fail(w);
            break;
        }
        struct timespec nap = {0, 50000}; /* 50 us */
        nanosleep(&nap, NULL);
    }
#if defined(CKT__EMU_WATCHDOG)
    if (have_timer)
        timer_delete(timer);
#endif
#if defined(CKT__EMU_SIGNALS)
    if (have_alt)
        sigaltstack(&old_alt, NULL);
#endif
    ckt__emu_self = NULL;
    return NULL;
}

static inline void ckt__emu_worker_free(ckt__emu_worker *w)
{
    /* parked blocks' fibers are left mid-kernel (a failed launch) */
    ckt__emu_block_ctx current;
    ckt__emu_ctx_save(w, &current);
    for (unsigned i = 0; i < w->nparked; i++) {
        ckt__emu_ctx_load(w, &w->parked[i]);
        ckt__emu_ctx_free_current(w);
    }
    for (unsigned i = 0; i < w->nspare; i++) {
        ckt__emu_ctx_load(w, &w->spare[i]);
        ckt__emu_ctx_free_current(w);
    }
    w->nparked = w->nspare = 0;
    free(w->parked);
    free(w->spare);
    w->parked = w->spare = NULL;
    ckt__emu_ctx_load(w, &current);
    ckt__emu_ctx_free_current(w);
    free(w->altstack);
    w->altstack = NULL;
}

static inline int ckt__emu_worker_init(ckt__emu_worker *w, ckt__emu_launch *L)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t guard = (CKT__EMU_GUARD_BYTES + page - 1) / page * page;
    memset(w, 0, sizeof *w);
    w->launch = L;
    w->guard_bytes = guard;
    w->per_thread_bytes = L->stack_size + guard; /* guard pages below each stack */
#if defined(CKT__EMU_SIGNALS)
    w->altstack = (unsigned char *)malloc(CKT__EMU_ALTSTACK_BYTES);
#endif
    if (ckt__emu_ctx_alloc_current(w) != 0) {
        ckt__emu_worker_free(w);
        return -1;
    }
    return 0;
}

static inline int ckt__emu_env_int(const char *name, int fallback)
{
    const char *s = getenv(name);
    return s && *s ? atoi(s) : fallback;
}

/* Runs a kernel over the grid. Returns 0, or -1 with ckt_emu_last_error() set. */
static inline int ckt__emu_launch_kernel(ckt__emu_entry entry, ckt_dim3 grid, ckt_dim3 block,
                                         size_t dyn_shared, const void *params)
{
    ckt__emu_launch L;
    memset(&L, 0, sizeof L);
    ckt__emu_last_msg[0] = 0;
    unsigned long long nthreads = (unsigned long long)block.x * block.y * block.z;
    if (!entry || grid.x == 0 || grid.y == 0 || grid.z == 0 || nthreads == 0 ||
        nthreads > CKT_EMU_MAX_BLOCK_THREADS || grid.y > 65535 || grid.z > 65535 ||
        block.z > 64) {
        snprintf(ckt__emu_last_msg, CKT__EMU_MSG_BYTES,
                 "ckt emulator: invalid launch: grid (%u,%u,%u) block (%u,%u,%u) (at most %d "
                 "threads per block, no zero extent)",
                 grid.x, grid.y, grid.z, block.x, block.y, block.z, CKT_EMU_MAX_BLOCK_THREADS);
        return -1;
    }
    if (ckt__emu_self) {
        snprintf(ckt__emu_last_msg, CKT__EMU_MSG_BYTES,
                 "ckt emulator: a kernel launch from inside a kernel is not supported");
        return -1;
    }
    L.entry = entry;
    L.params = params;
    L.grid = grid;
    L.block = block;
    L.dyn_shared = (dyn_shared + 15) / 16 * 16;
    L.nthreads = (unsigned)nthreads;
    L.nblocks = (unsigned long long)grid.x * grid.y * grid.z;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    L.stack_size = (size_t)ckt__emu_env_int("CKT_EMU_STACK_KB", 256) * 1024u;
    if (L.stack_size < 16384)
        L.stack_size = 16384;
    L.stack_size = (L.stack_size + page - 1) / page * page; /* guards stay page-aligned */
    const char *tmo = getenv("CKT_EMU_TIMEOUT_S");
    L.timeout_s = tmo && *tmo ? strtod(tmo, NULL) : 20.0;
#if defined(CKT__EMU_SIGNALS)
    ckt__emu_install_signals();
#endif
    L.schedule = CKT_EMU_FORWARD;
    L.seed = 1;
    if (ckt__emu_schedule_override >= 0) {
        L.schedule = ckt__emu_schedule_override;
        L.seed = ckt__emu_seed_override;
    } else {
        const char *s = getenv("CKT_EMU_SCHEDULE");
        if (s && strcmp(s, "reverse") == 0)
            L.schedule = CKT_EMU_REVERSE;
        else if (s && strncmp(s, "shuffle", 7) == 0) {
            L.schedule = CKT_EMU_SHUFFLE;
            if (s[7] == ':')
                L.seed = strtoull(s + 8, NULL, 10);
        }
    }
    pthread_mutex_init(&L.lock, NULL);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nworkers = ckt__emu_env_int("CKT_EMU_THREADS", ncpu > 0 ? (int)ncpu : 1);
    if (nworkers < 1)
        nworkers = 1;
    if ((unsigned long long)nworkers > L.nblocks)
        nworkers = (int)L.nblocks;
    if (nworkers > 64)
        nworkers = 64;
    ckt__emu_worker *ws = (ckt__emu_worker *)calloc((size_t)nworkers, sizeof(ckt__emu_worker));
    L.workers = ws;
    L.nworkers = nworkers;
    pthread_t tids[64];
    int started = 0, rc = 0;
    if (!ws)
        rc = -1;
    for (int i = 0; rc == 0 && i < nworkers; i++) {
        if (ckt__emu_worker_init(&ws[i], &L) != 0) {
            rc = -1;
            break;
        }
        started++;
    }
    if (rc != 0) {
        snprintf(ckt__emu_last_msg, CKT__EMU_MSG_BYTES,
                 "ckt emulator: out of memory for %u fibers", L.nthreads);
    } else if (nworkers == 1) {
        ckt__emu_worker_main(&ws[0]);
    } else {
        for (int i = 1; i < nworkers; i++)
            if (pthread_create(&tids[i], NULL, ckt__emu_worker_main, &ws[i]) != 0)
                ws[i].launch = NULL; /* the other workers take its blocks */
        ckt__emu_worker_main(&ws[0]);
        for (int i = 1; i < nworkers; i++)
            if (ws[i].launch)
                pthread_join(tids[i], NULL);
    }
    for (int i = 0; i < started; i++)
        ckt__emu_worker_free(&ws[i]);
    free(ws);
    if (rc == 0 && L.failed) {
        memcpy(ckt__emu_last_msg, L.msg, CKT__EMU_MSG_BYTES);
        rc = -1;
    }
    pthread_mutex_destroy(&L.lock);
    return rc;
}

#endif /* CKT_ARCH_CPU_EMULATOR_H */
