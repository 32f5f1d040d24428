/* lib/fmha/fwd_d192_dv128.c — libckt_fmha instances: fp16 and bf16, hdim_q 192, hdim_v 128. */
#include "lib/fmha/instances.h"

#define CKT_FMHA_KV_CACHE 0 /* plain tensors only: the KV cache costs 2% (fwd_d192_dv128_kv.c has it) */
#define CKT_FMHA_NAME ckt_fmha_fwd_f16_d192_dv128
#define CKT_FMHA_DTYPE CKT_F16
#define CKT_FMHA_HDIM 192
#define CKT_FMHA_HDIM_V 128
#include CKT_FMHA_FWD_BODY

#define CKT_FMHA_KV_CACHE 0 /* plain tensors only: the KV cache costs 2% (fwd_d192_dv128_kv.c has it) */
#define CKT_FMHA_NAME ckt_fmha_fwd_bf16_d192_dv128
#define CKT_FMHA_DTYPE CKT_BF16
#define CKT_FMHA_HDIM 192
#define CKT_FMHA_HDIM_V 128
#include CKT_FMHA_FWD_BODY

#if !defined(CKT_DEVICE_PASS) /* host data: the device pass of hipcc would emit it too */
CKT__FMHA_FWD_TABLE(d192_dv128) = {
    CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_f16_d192_dv128, CKT_F16, 192, 128),
    CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_bf16_d192_dv128, CKT_BF16, 192, 128),
};
#endif
