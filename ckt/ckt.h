/* ckt/ckt.h — everything: arch, tile, fmha and host layers.
 *
 * ckt is a header-only, template-free C toolkit for GPU kernels. The same
 * source compiles with hipcc (AMD CDNA), nvcc (NVIDIA) and gcc (the CPU SIMT
 * emulator). See README.md and docs/. */
#ifndef CKT_CKT_H
#define CKT_CKT_H

#include "ckt/arch/arch.h"
#include "ckt/fmha.h"
#include "ckt/host.h"
#include "ckt/tile.h"

#endif /* CKT_CKT_H */
