/* ckt/arch/vector.h — register vectors of 32-bit words: what one vector load
 * or store moves (16 bytes = one global/shared transaction per lane).
 *
 *   ckt_u32x2  two words   (8 bytes)
 *   ckt_u32x4  four words  (16 bytes)
 *
 * Plain structs, the same on every backend and on the host; the compilers keep
 * them in registers. Reinterpret the words with ckt_f32_from_bits() or as
 * packed 16-bit pairs (ckt_pack_f16x2(), ckt/arch/mma.h).
 */
#ifndef CKT_ARCH_VECTOR_H
#define CKT_ARCH_VECTOR_H

#include "ckt/arch/config.h"

typedef struct ckt_u32x2 {
    uint32_t x, y;
} ckt_u32x2;

typedef struct ckt_u32x4 {
    uint32_t x, y, z, w;
} ckt_u32x4;

CKT_INLINE CKT_HOST_DEVICE ckt_u32x2 ckt_u32x2_make(uint32_t x, uint32_t y)
{
    ckt_u32x2 v;
    v.x = x;
    v.y = y;
    return v;
}

CKT_INLINE CKT_HOST_DEVICE ckt_u32x4 ckt_u32x4_make(uint32_t x, uint32_t y, uint32_t z, uint32_t w)
{
    ckt_u32x4 v;
    v.x = x;
    v.y = y;
    v.z = z;
    v.w = w;
    return v;
}

#endif /* CKT_ARCH_VECTOR_H */
