/* lib/fmha/fwd_fp8_d64.c — libckt_fmha instances: fp8 e4m3 q/k/v (docs/fmha.md#fp8),
 * output fp16 and bf16, hdim_q 64, hdim_v 64; plain tensors (no KV cache). */
#include "lib/fmha/instances.h"

#define CKT_FMHA_KV_CACHE 0
#define CKT_FMHA_NAME ckt_fmha_fwd_fp8f16_d64
#define CKT_FMHA_DTYPE CKT_FP8_E4M3
#define CKT_FMHA_O_DTYPE CKT_F16
#define CKT_FMHA_HDIM 64
#include CKT_FMHA_FWD_BODY

#define CKT_FMHA_KV_CACHE 0
#define CKT_FMHA_NAME ckt_fmha_fwd_fp8bf16_d64
#define CKT_FMHA_DTYPE CKT_FP8_E4M3
#define CKT_FMHA_O_DTYPE CKT_BF16
#define CKT_FMHA_HDIM 64
#include CKT_FMHA_FWD_BODY

#if !defined(CKT_DEVICE_PASS) /* host data: the device pass of hipcc would emit it too */
CKT__FMHA_FWD_TABLE(fp8_d64) = {
    CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_fp8f16_d64, CKT_FP8_E4M3, 64, 64),
    CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_fp8bf16_d64, CKT_FP8_E4M3, 64, 64),
};
#endif
