# gdb helpers for kernels on the ckt CPU SIMT emulator (docs/emulator.md).
#
#   (gdb) source tools/emulator.gdb
#   (gdb) ckt-where            block and GPU thread running on this OS thread
#   (gdb) ckt-threads [a [b]]  threads a..b-1 of the block: ids, state, wait site
#   (gdb) ckt-fiber-bt N       backtrace of thread N's parked fiber (x86-64)
#
# They read ckt__emu_self, the emulator's per-OS-thread worker, so select an
# OS thread that runs blocks (CKT_EMU_THREADS=1 keeps it to one).

define ckt-where
  if ckt__emu_self == 0
    printf "this OS thread runs no ckt block\n"
  else
    set $ckt_w = ckt__emu_self
    printf "block (%u,%u,%u)", $ckt_w->block_idx[0], $ckt_w->block_idx[1], $ckt_w->block_idx[2]
    if $ckt_w->in_fiber
      set $ckt_t = $ckt_w->cur
      printf ", thread (%u,%u,%u) rank %u warp %u lane %u\n", $ckt_t->tid[0], $ckt_t->tid[1], $ckt_t->tid[2], $ckt_t->rank, $ckt_t->warp, $ckt_t->lane
    else
      printf ", in the scheduler (no fiber running)\n"
    end
  end
end
document ckt-where
Print the block and the GPU thread that this OS thread is running.
end

define ckt-threads
  set $ckt_w = ckt__emu_self
  set $ckt_a = 0
  set $ckt_b = $ckt_w->launch->nthreads
  if $argc >= 1
    set $ckt_a = $arg0
    set $ckt_b = $arg0 + 1
  end
  if $argc >= 2
    set $ckt_b = $arg1
  end
  while $ckt_a < $ckt_b
    set $ckt_t = &$ckt_w->threads[$ckt_a]
    printf "rank %4u (%u,%u,%u) warp %2u lane %2u  ", $ckt_t->rank, $ckt_t->tid[0], $ckt_t->tid[1], $ckt_t->tid[2], $ckt_t->warp, $ckt_t->lane
    if $ckt_t->state == 0
      printf "runnable, last wait %s:%d\n", $ckt_t->file, $ckt_t->line
    end
    if $ckt_t->state == 1
      printf "at block barrier %s:%d\n", $ckt_t->file, $ckt_t->line
    end
    if $ckt_t->state == 2
      printf "in warp collective %s:%d\n", $ckt_t->file, $ckt_t->line
    end
    if $ckt_t->state == 3
      printf "at mbarrier %p (phase of parity %u) %s:%d\n", $ckt_t->op_ptr[0], $ckt_t->op_arg, $ckt_t->file, $ckt_t->line
    end
    if $ckt_t->state == 4
      printf "exited\n"
    end
    if $ckt_t->state == 5
      printf "abandoned by the watchdog\n"
    end
    set $ckt_a = $ckt_a + 1
  end
end
document ckt-threads
ckt-threads [FIRST [END]]: list the block's threads FIRST..END-1 (all by default):
ids, state and the file:line of their wait.
end

# A parked fiber's stack pointer points at the frame that ckt__fiber_switch
# pushed: [mxcsr/x87 cw | r15 r14 r13 r12 rbx rbp | return address]. Pretend
# to be there for one `bt`, then put the registers back.
define ckt-fiber-bt
  set $ckt_f = (unsigned long *)ckt__emu_self->threads[$arg0].fiber.sp
  set $ckt_sp = $sp
  set $ckt_pc = $pc
  set $ckt_bp = $rbp
  set $rbp = $ckt_f[6]
  set $sp = $ckt_f + 8
  set $pc = $ckt_f[7]
  bt
  set $sp = $ckt_sp
  set $pc = $ckt_pc
  set $rbp = $ckt_bp
end
document ckt-fiber-bt
ckt-fiber-bt N: backtrace of GPU thread N (rank in the block) where it is parked
(at a barrier or collective). Not for the fiber that is running now: use bt.
end
