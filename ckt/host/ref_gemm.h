/* ckt/host/ref_gemm.h — CPU reference GEMM (fp32 or fp64 accumulation).
 *
 *   C[m][n] = sum_k A[m][k] * B[k][n]
 *
 * A row-major [M][K] (lda), B row-major [K][N] (ldb >= N) or, with b_nk,
 * stored as [N][K] (ldb >= K); C row-major [M][N] (ldc), written as float.
 * Inputs of any ckt_dtype.
 */
#ifndef CKT_HOST_REF_GEMM_H
#define CKT_HOST_REF_GEMM_H

#include "ckt/host/dtype.h"

#include <stdint.h>

static inline void ckt_ref_gemm(float *c, int64_t ldc, const void *a, ckt_dtype adt, int64_t lda,
                                const void *b, ckt_dtype bdt, int64_t ldb, int b_nk, int64_t m,
                                int64_t n, int64_t k)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0;
            for (int64_t p = 0; p < k; p++) {
                double av = ckt_load_f32(a, adt, (size_t)(i * lda + p));
                double bv = ckt_load_f32(b, bdt, (size_t)(b_nk ? j * ldb + p : p * ldb + j));
                s += av * bv;
            }
            c[i * ldc + j] = (float)s;
        }
}

#endif /* CKT_HOST_REF_GEMM_H */
