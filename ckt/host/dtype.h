/* ckt/host/dtype.h — element types as a runtime value, for host code that
 * handles buffers of several types (init, compare, references, CLIs).
 *
 *   ckt_dtype_size(CKT_BF16) == 2      ckt_dtype_name(CKT_F16) == "fp16"
 *   ckt_load_f32(ptr, dt, i)           element i as float
 *   ckt_store_f32(ptr, dt, i, v)       store v (rounded to nearest even)
 */
#ifndef CKT_HOST_DTYPE_H
#define CKT_HOST_DTYPE_H

#include "ckt/arch/numeric.h"

#include <string.h>

/* CKT_FP8_E4M3: OCP e4m3 bytes (ckt/arch/numeric.h), the fp8 forward's q/k/v. */
typedef enum ckt_dtype { CKT_F32, CKT_F16, CKT_BF16, CKT_FP8_E4M3 } ckt_dtype;

static inline size_t ckt_dtype_size(ckt_dtype dt) { return dt == CKT_F32 ? 4 : dt == CKT_FP8_E4M3 ? 1 : 2; }

static inline const char *ckt_dtype_name(ckt_dtype dt)
{
    return dt == CKT_F32 ? "fp32" : dt == CKT_F16 ? "fp16" : dt == CKT_BF16 ? "bf16" : dt == CKT_FP8_E4M3 ? "fp8" : "?";
}

/* Parses "fp32", "fp16", "bf16", "fp8" (CK's -prec spelling); -1 if unknown. */
static inline int ckt_dtype_parse(const char *s, ckt_dtype *out)
{
    if (!s || !out)
        return -1;
    if (strcmp(s, "fp32") == 0 || strcmp(s, "f32") == 0)
        *out = CKT_F32;
    else if (strcmp(s, "fp16") == 0 || strcmp(s, "f16") == 0)
        *out = CKT_F16;
    else if (strcmp(s, "bf16") == 0)
        *out = CKT_BF16;
    else if (strcmp(s, "fp8") == 0 || strcmp(s, "e4m3") == 0)
        *out = CKT_FP8_E4M3;
    else
        return -1;
    return 0;
}

static inline float ckt_load_f32(const void *p, ckt_dtype dt, size_t i)
{
    if (dt == CKT_F32)
        return ((const float *)p)[i];
    if (dt == CKT_F16)
        return ckt_f32_from_f16(((const ckt_f16 *)p)[i]);
    if (dt == CKT_FP8_E4M3)
        return ckt_f32_from_e4m3(((const uint8_t *)p)[i]);
    return ckt_f32_from_bf16(((const ckt_bf16 *)p)[i]);
}

static inline void ckt_store_f32(void *p, ckt_dtype dt, size_t i, float v)
{
    if (dt == CKT_F32)
        ((float *)p)[i] = v;
    else if (dt == CKT_F16)
        ((ckt_f16 *)p)[i] = ckt_f16_from_f32(v);
    else if (dt == CKT_FP8_E4M3)
        ((uint8_t *)p)[i] = ckt_e4m3_from_f32(v);
    else
        ((ckt_bf16 *)p)[i] = ckt_bf16_from_f32(v);
}

#endif /* CKT_HOST_DTYPE_H */
