/* ckt/fmha/fp8.h — the fp8 forward's scales (ckt_fmha_fwd_args >>fp8,
 * docs/fmha.md#fp8): what the launcher hands the kernel.
 *
 *   ckt_fmha_fwd_args k;
 *   ckt_fmha_fp8_kernel_args(&k, a);   // a validated (ckt_fmha_fwd_validate)
 *
 * The kernel reads q, k, v as rows of 16-bit units (two e4m3 bytes each:
 * ckt/tile/fp8.h), so k's q/k/v strides and hdim_q count units (validation
 * made them even: multiples of 16 bytes), and the scales arrive resolved:
 *   k.scale     = scale (0: 1/sqrt(hdim_q)) * descale_q * descale_k
 *   k.descale_v = descale_v (0: 1),  k.scale_p = scale_p (0: CKT_FMHA_FP8_SCALE_P)
 * so that S = k.scale (Q8 . K8) and O = (P8 V8) k.descale_v / k.scale_p / l,
 * P8 = e4m3(P k.scale_p). hdim_v stays in elements (O's columns). */
#ifndef CKT_FMHA_FP8_H
#define CKT_FMHA_FP8_H

#include "ckt/fmha/args.h"

#include <math.h>

static inline float ckt_fmha_fp8_or_one(float x) { return x > 0.0f ? x : 1.0f; }

static inline float ckt_fmha_fp8_scale_p(const ckt_fmha_fwd_args *a)
{
    return a->scale_p > 0.0f ? a->scale_p : CKT_FMHA_FP8_SCALE_P;
}

static inline void ckt_fmha_fp8_kernel_args(ckt_fmha_fwd_args *k, const ckt_fmha_fwd_args *a)
{
    *k = *a;
    const float scale = a->scale > 0.0f ? a->scale : 1.0f / sqrtf((float)a->hdim_q);
    k->scale = scale * ckt_fmha_fp8_or_one(a->descale_q) * ckt_fmha_fp8_or_one(a->descale_k);
    k->descale_v = ckt_fmha_fp8_or_one(a->descale_v);
    k->scale_p = ckt_fmha_fp8_scale_p(a);
    k->hdim_q = a->hdim_q / 2;
    k->q_stride_b = a->q_stride_b / 2, k->q_stride_h = a->q_stride_h / 2, k->q_stride_s = a->q_stride_s / 2;
    k->k_stride_b = a->k_stride_b / 2, k->k_stride_h = a->k_stride_h / 2, k->k_stride_s = a->k_stride_s / 2;
    k->v_stride_b = a->v_stride_b / 2, k->v_stride_h = a->v_stride_h / 2, k->v_stride_s = a->v_stride_s / 2;
}

#endif /* CKT_FMHA_FP8_H */
