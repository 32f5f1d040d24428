/* lib/fmha/fwd_d96.c — libckt_fmha instances: fp16 and bf16, hdim_q 96, hdim_v 96. */
#include "lib/fmha/instances.h"

#define CKT_FMHA_KV_CACHE 0 /* plain tensors only: the KV cache costs 2% (fwd_d96_kv.c has it) */
#define CKT_FMHA_NAME ckt_fmha_fwd_f16_d96
#define CKT_FMHA_DTYPE CKT_F16
#define CKT_FMHA_HDIM 96
#include CKT_FMHA_FWD_BODY

#define CKT_FMHA_KV_CACHE 0 /* plain tensors only: the KV cache costs 2% (fwd_d96_kv.c has it) */
#define CKT_FMHA_NAME ckt_fmha_fwd_bf16_d96
#define CKT_FMHA_DTYPE CKT_BF16
#define CKT_FMHA_HDIM 96
#include CKT_FMHA_FWD_BODY

#if !defined(CKT_DEVICE_PASS) /* host data: the device pass of hipcc would emit it too */
CKT__FMHA_FWD_TABLE(d96) = {
    CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_f16_d96, CKT_F16, 96, 96),
    CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_bf16_d96, CKT_BF16, 96, 96),
};
#endif
