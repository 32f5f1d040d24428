/* lib/fmha/fwd_d576_dv512.c — libckt_fmha instances: fp16 and bf16, hdim_q
 * 576, hdim_v 512 (MLA: 512 latent + 64 rotary dims of q/k, v the latent).
 * Two warps a row group share V's columns (CKT__FMHA_VSPLIT 2); key steps of
 * 16 so that two stages fit sm_80's 163 KiB (BN 32 would need 174.5 KiB):
 * 105.5 KiB. NVIDIA only, like fwd_d512.c. */
#include "lib/fmha/instances.h"

#define CKT_FMHA_KV_CACHE 0 /* plain tensors only: compile time */
#define CKT_FMHA_BLOCK_N 16
#define CKT_FMHA_NAME ckt_fmha_fwd_f16_d576_dv512
#define CKT_FMHA_DTYPE CKT_F16
#define CKT_FMHA_HDIM 576
#define CKT_FMHA_HDIM_V 512
#include CKT_FMHA_FWD_BODY

#define CKT_FMHA_KV_CACHE 0
#define CKT_FMHA_BLOCK_N 16
#define CKT_FMHA_NAME ckt_fmha_fwd_bf16_d576_dv512
#define CKT_FMHA_DTYPE CKT_BF16
#define CKT_FMHA_HDIM 576
#define CKT_FMHA_HDIM_V 512
#include CKT_FMHA_FWD_BODY

#if !defined(CKT_DEVICE_PASS) /* host data: the device pass of hipcc would emit it too */
CKT__FMHA_FWD_TABLE(d576_dv512) = {
    CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_f16_d576_dv512, CKT_F16, 576, 512),
    CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_bf16_d576_dv512, CKT_BF16, 576, 512),
};
#endif
