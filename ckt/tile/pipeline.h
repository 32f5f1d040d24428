/* ckt/tile/pipeline.h — a multi-stage shared-memory ring: the main loop of a
 * kernel prefetches tile k + STAGES - 1 while it computes tile k.
 *
 * The producer side issues asynchronous copies (cp.async on sm80+; plain
 * copies where the hardware has none) for one k-tile and commits them as one
 * group; the consumer waits until the group of the tile it needs has landed.
 * With STAGES stages there are STAGES - 1 tiles in flight:
 *
 *   for (s = 0; s < STAGES - 1; s++) {              // prologue
 *       if (s < KT) load_tile_async(s, stage s);
 *       ckt_pipe_commit();                          // one group per tile, even empty
 *   }
 *   for (kt = 0; kt < KT; kt++) {
 *       ckt_pipe_wait(STAGES);                      // tile kt has landed, for all threads
 *       int next = kt + STAGES - 1;                 // its stage was freed by the barrier
 *       if (next < KT) load_tile_async(next, ckt_pipe_stage(next, STAGES));
 *       ckt_pipe_commit();
 *       compute(ckt_pipe_stage(kt, STAGES));
 *   }
 *
 * Committing a group every iteration, empty at the tail, keeps "at most
 * STAGES - 2 groups pending" equivalent to "tile kt is complete".
 */
#ifndef CKT_TILE_PIPELINE_H
#define CKT_TILE_PIPELINE_H

#include "ckt/arch/arch.h"

#define CKT_PIPE_CHECK(STAGES)                                                                     \
    CKT_STATIC_ASSERT((STAGES) >= 2, "a pipeline needs at least 2 stages (1 computing, 1 loading)")

/* Stage (slot of the ring) that holds k-tile kt. */
CKT_INLINE CKT_HOST_DEVICE int ckt_pipe_stage(int kt, int stages) { return kt % stages; }

/* Closes the group of copies issued for one k-tile. */
CKT_INLINE CKT_DEVICE void ckt_pipe_commit(void) { ckt_cp_async_commit(); }

/* Waits until the oldest in-flight k-tile has landed in shared memory and is
 * visible to every thread of the block (ends with a block barrier). */
CKT_INLINE CKT_DEVICE void ckt_pipe_wait(int stages)
{
    ckt_cp_async_wait(stages - 2);
    ckt_block_sync();
}

#endif /* CKT_TILE_PIPELINE_H */
