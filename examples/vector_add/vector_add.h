/* examples/vector_add/vector_add.h — the first ckt kernels: c = a + b and a
 * copy, one element per thread, bounds-checked with 64-bit indices.
 *
 *   vadd_params p = {a, b, c, n};
 *   ckt_rt_launch(CKT_KERNEL_REF(vadd_kernel), vadd_grid(n), vadd_block(), 0, stream, &p);
 */
#ifndef CKT_EXAMPLES_VECTOR_ADD_H
#define CKT_EXAMPLES_VECTOR_ADD_H

#include "ckt/arch/arch.h"

#define VADD_BLOCK 256

typedef struct vadd_params {
    const float *a;
    const float *b;
    float *c;
    int64_t n;
} vadd_params;

/* c[i] = a[i] + b[i] for i < n; i = block * VADD_BLOCK + thread. */
CKT_KERNEL_BOUNDS(vadd_kernel, vadd_params, p, VADD_BLOCK)
{
    int64_t i = (int64_t)ckt_block_idx_x() * ckt_block_dim_x() + ckt_thread_idx_x();
    if (i < p.n)
        p.c[i] = p.a[i] + p.b[i];
}

typedef struct copy_params {
    const float *src;
    float *dst;
    int64_t n;
} copy_params;

/* dst[i] = src[i], grid-stride loop: any grid size covers any n. */
CKT_KERNEL(copy_kernel, copy_params, p)
{
    int64_t stride = (int64_t)ckt_grid_dim_x() * ckt_block_dim_x();
    for (int64_t i = (int64_t)ckt_block_idx_x() * ckt_block_dim_x() + ckt_thread_idx_x(); i < p.n;
         i += stride)
        p.dst[i] = p.src[i];
}

static inline ckt_dim3 vadd_grid(int64_t n)
{
    int64_t blocks = CKT_CEIL_DIV(n, (int64_t)VADD_BLOCK);
    return ckt_dim3_make((unsigned)(blocks > 0 ? blocks : 1), 1, 1);
}

static inline ckt_dim3 vadd_block(void) { return ckt_dim3_make(VADD_BLOCK, 1, 1); }

#endif /* CKT_EXAMPLES_VECTOR_ADD_H */
