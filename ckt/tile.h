/* ckt/tile.h — the tile layer (tile descriptors, distributions, distributed
 * tensors, load/store, warp MMA, block GEMM, pipelines).
 *
 * Status: not written yet (tracked as its own issue). Today this umbrella only
 * brings in the arch layer that the tile layer is built on. */
#ifndef CKT_TILE_H
#define CKT_TILE_H

#include "ckt/arch/arch.h"

#endif /* CKT_TILE_H */
