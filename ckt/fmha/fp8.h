/* ckt/fmha/fp8.h — the fp8 forward's scales (ckt_fmha_fwd_args >>fp8,
 * docs/fmha.md#fp8): what the launcher hands the kernel, and whether the
 * device can run it.
 *
 *   ckt_fmha_fwd_args k;
 *   ckt_fmha_fp8_kernel_args(&k, a, CKT_E4M3_MMA_OPERAND_SCALE);   // a validated
 *
 * The kernel reads q, k, v as rows of 16-bit units (two e4m3 bytes each:
 * ckt/tile/fp8.h), so k's q/k/v strides and hdim_q count units (validation
 * made them even: multiples of 16 bytes), and the scales arrive resolved:
 *   k.scale     = scale (0: 1/sqrt(hdim_q)) * descale_q * descale_k / g^2
 *   k.descale_v = descale_v (0: 1) / g^2,  k.scale_p = scale_p (0: CKT_FMHA_FP8_SCALE_P)
 * so that S = k.scale (Q8 . K8)_mma and O = (P8 V8)_mma k.descale_v / k.scale_p / l,
 * P8 = e4m3(P k.scale_p), where g (operand_scale) is what the target's fp8
 * MMA makes of an operand's value: 1 on mma.sync, 1/2 on gfx940's MFMA (it
 * reads OCP bytes as FNUZ: half), so each product of two operands arrives
 * divided by 4 and the scales multiply it back (exactly: powers of 2).
 * hdim_v stays in elements (O's columns). */
#ifndef CKT_FMHA_FP8_H
#define CKT_FMHA_FP8_H

#include "ckt/fmha/args.h"
#include "ckt/host/status.h"

#include <math.h>
#include <string.h>

#if defined(CKT_BACKEND_AMD)
#include <hip/hip_runtime_api.h>
#endif

static inline float ckt_fmha_fp8_or_one(float x) { return x > 0.0f ? x : 1.0f; }

static inline float ckt_fmha_fp8_scale_p(const ckt_fmha_fwd_args *a)
{
    return a->scale_p > 0.0f ? a->scale_p : CKT_FMHA_FP8_SCALE_P;
}

static inline void ckt_fmha_fp8_kernel_args(ckt_fmha_fwd_args *k, const ckt_fmha_fwd_args *a, float operand_scale)
{
    *k = *a;
    const float scale = a->scale > 0.0f ? a->scale : 1.0f / sqrtf((float)a->hdim_q);
    const float gain = 1.0f / (operand_scale * operand_scale); /* a product of two operands */
    k->scale = scale * ckt_fmha_fp8_or_one(a->descale_q) * ckt_fmha_fp8_or_one(a->descale_k) * gain;
    k->descale_v = ckt_fmha_fp8_or_one(a->descale_v) * gain;
    k->scale_p = ckt_fmha_fp8_scale_p(a);
    k->hdim_q = a->hdim_q / 2;
    k->q_stride_b = a->q_stride_b / 2, k->q_stride_h = a->q_stride_h / 2, k->q_stride_s = a->q_stride_s / 2;
    k->k_stride_b = a->k_stride_b / 2, k->k_stride_h = a->k_stride_h / 2, k->k_stride_s = a->k_stride_s / 2;
    k->v_stride_b = a->v_stride_b / 2, k->v_stride_h = a->v_stride_h / 2, k->v_stride_s = a->v_stride_s / 2;
}

#if defined(CKT_BACKEND_AMD)
/* CKT_SUCCESS if the current device has the fp8 MFMA the AMD kernel uses
 * (gfx940-942: e4m3 FNUZ), else CKT_ERROR_UNSUPPORTED naming the device:
 * gfx90a has no fp8 MFMA (its build of the kernel traps), gfx950's reads
 * OCP bytes (another kernel). The device's gcnArchName ("gfx940:sramecc+:
 * xnack-"), as NVIDIA's launcher checks the kernel's binaryVersion. */
static inline ckt_status ckt_fmha_fp8_check_device(void)
{
    int dev = 0;
    hipDeviceProp_t p;
    if (hipGetDevice(&dev) != hipSuccess || hipGetDeviceProperties(&p, dev) != hipSuccess)
        return ckt__fail(CKT_ERROR_RUNTIME, "dtype: fp8: the device's properties could not be read");
    if (strncmp(p.gcnArchName, "gfx940", 6) != 0 && strncmp(p.gcnArchName, "gfx941", 6) != 0 &&
        strncmp(p.gcnArchName, "gfx942", 6) != 0)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "dtype: fp8 needs the fp8 MFMA of gfx940 (gfx940-942, "
                         "v_mfma_f32_32x32x16_fp8_fp8); this device is %s (gfx90a has none)", p.gcnArchName);
    return CKT_SUCCESS;
}
#endif

#endif /* CKT_FMHA_FP8_H */
