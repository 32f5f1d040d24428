/* ckt/tile.h — the tile layer: views and windows over tensors, distributions
 * of tiles over threads, distributed tensors (a thread's registers of a tile),
 * load/store between global, shared and registers with bounds masks, warp MMA
 * and block GEMM, and pipeline building blocks. See docs/tile.md. */
#ifndef CKT_TILE_H
#define CKT_TILE_H

#include "ckt/arch/arch.h"
#include "ckt/tile/fp8.h"
#include "ckt/tile/mma.h"
#include "ckt/tile/pipeline.h"
#include "ckt/tile/regs.h"
#include "ckt/tile/rows.h"
#include "ckt/tile/smem.h"
#include "ckt/tile/view.h"

#endif /* CKT_TILE_H */
