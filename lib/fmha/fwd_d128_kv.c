/* lib/fmha/fwd_d128_kv.c — libckt_fmha instances with the KV cache (paged K/V,
 * split-KV, cache_batch_idx: docs/fmha_inference.md): fp16 and bf16, hdim_q 128, hdim_v 128. */
#include "lib/fmha/instances.h"

#define CKT_FMHA_NAME ckt_fmha_fwd_kv_f16_d128
#define CKT_FMHA_DTYPE CKT_F16
#define CKT_FMHA_HDIM 128
#include CKT_FMHA_FWD_BODY

#define CKT_FMHA_NAME ckt_fmha_fwd_kv_bf16_d128
#define CKT_FMHA_DTYPE CKT_BF16
#define CKT_FMHA_HDIM 128
#include CKT_FMHA_FWD_BODY

#if !defined(CKT_DEVICE_PASS) /* host data: the device pass of hipcc would emit it too */
CKT__FMHA_FWD_TABLE(d128_kv) = {
    CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_kv_f16_d128, CKT_F16, 128, 128),
    CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_kv_bf16_d128, CKT_BF16, 128, 128),
};
#endif
