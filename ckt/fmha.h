/* ckt/fmha.h — fused multi-head attention kernels.
 *
 * Status: not written yet (tracked as its own issue). Today this umbrella only
 * brings in the layers the FMHA kernels are built on. */
#ifndef CKT_FMHA_H
#define CKT_FMHA_H

#include "ckt/host.h"
#include "ckt/tile.h"

#endif /* CKT_FMHA_H */
