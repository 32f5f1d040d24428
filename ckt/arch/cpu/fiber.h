/* ckt/arch/cpu/fiber.h — user-space context switch for the CPU emulator.
 *
 *   void ckt__fiber_switch(void **save_sp, void *to_sp);
 *
 * Saves the callee-saved registers of the running context on its stack,
 * stores its stack pointer in *save_sp, and resumes the context whose stack
 * pointer is to_sp. A new context is made by ckt__fiber_prepare(), which lays
 * out a frame that "returns" into entry() on a fresh stack.
 *
 * x86-64 (System V) uses a 12-instruction assembly switch (~16 ns per switch
 * with the scheduler's work around it: bench/emu_switch.c); other targets fall
 * back to ucontext (~150 ns, a signal-mask syscall per switch). The assembly
 * symbol is weak and in a COMDAT section, so every translation unit may
 * include this header and the linker keeps one copy.
 */
#ifndef CKT_ARCH_CPU_FIBER_H
#define CKT_ARCH_CPU_FIBER_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && !defined(CKT_FIBER_UCONTEXT)

#ifdef __cplusplus
extern "C" {
#endif
void ckt__fiber_switch(void **save_sp, void *to_sp);
#ifdef __cplusplus
}
#endif

/* rdi = save_sp, rsi = to_sp. Push order must match ckt__fiber_prepare.
 *
 * The CFI lines let debuggers and unwinders walk through a switch: both stacks
 * hold the same 64-byte frame [csr | r15 r14 r13 r12 rbx rbp | return], so one
 * description holds before and after rsp moves (before: the caller of the
 * fiber that leaves; after: the caller of the one that resumes). A COMDAT
 * section of its own keeps one copy per program and keeps the code out of the
 * line table of whichever function the header's includer had compiled last. */
__asm__(".pushsection .text.ckt__fiber_switch,\"axG\",@progbits,ckt__fiber_switch,comdat\n"
        ".weak ckt__fiber_switch\n"
        ".type ckt__fiber_switch,@function\n"
        ".p2align 4\n"
        "ckt__fiber_switch:\n"
        "  .cfi_startproc\n"
        "  pushq %rbp\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  .cfi_rel_offset %rbp, 0\n"
        "  pushq %rbx\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  .cfi_rel_offset %rbx, 0\n"
        "  pushq %r12\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  .cfi_rel_offset %r12, 0\n"
        "  pushq %r13\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  .cfi_rel_offset %r13, 0\n"
        "  pushq %r14\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  .cfi_rel_offset %r14, 0\n"
        "  pushq %r15\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  .cfi_rel_offset %r15, 0\n"
        "  subq $8, %rsp\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  stmxcsr (%rsp)\n"
        "  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n"
        "  fldcw 4(%rsp)\n"
        "  addq $8, %rsp\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %r15\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  .cfi_restore %r15\n"
        "  popq %r14\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  .cfi_restore %r14\n"
        "  popq %r13\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  .cfi_restore %r13\n"
        "  popq %r12\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  .cfi_restore %r12\n"
        "  popq %rbx\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  .cfi_restore %rbx\n"
        "  popq %rbp\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  .cfi_restore %rbp\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size ckt__fiber_switch,.-ckt__fiber_switch\n"
        ".popsection\n");

typedef struct ckt__fiber {
    void *sp;
} ckt__fiber;

/* Lay out a frame on [stack, stack + size) so that switching to it calls
 * entry() with a System V aligned stack (rsp % 16 == 8 at entry). */
static inline void ckt__fiber_prepare(ckt__fiber *f, unsigned char *stack, size_t size,
                                      void (*entry)(void))
{
    uintptr_t top = ((uintptr_t)(stack + size)) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)top;
    uint32_t csr[2];
    __asm__ volatile("stmxcsr %0" : "=m"(csr[0]));
    __asm__ volatile("fnstcw %0" : "=m"(csr[1]));
    *--sp = 0;                             /* entry's return address: never used */
    *--sp = (uint64_t)(uintptr_t)entry;    /* popped by ret */
    for (int i = 0; i < 6; i++)
        *--sp = 0;                         /* rbp rbx r12 r13 r14 r15 */
    *--sp = (uint64_t)csr[0] | ((uint64_t)csr[1] << 32); /* mxcsr, x87 cw */
    f->sp = sp;
}

static inline void ckt__fiber_jump(ckt__fiber *save, ckt__fiber *to)
{
    ckt__fiber_switch(&save->sp, to->sp);
}

#else /* ucontext fallback */

#include <ucontext.h>

typedef struct ckt__fiber {
    ucontext_t uc;
} ckt__fiber;

static inline void ckt__fiber_prepare(ckt__fiber *f, unsigned char *stack, size_t size,
                                      void (*entry)(void))
{
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = stack;
    f->uc.uc_stack.ss_size = size;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, entry, 0);
}

static inline void ckt__fiber_jump(ckt__fiber *save, ckt__fiber *to)
{
    swapcontext(&save->uc, &to->uc);
}

#endif

#endif /* CKT_ARCH_CPU_FIBER_H */
