/* lib/fmha/bwd_d512.c — libckt_fmha backward instances: fp16 and bf16, hdim_q 512, hdim_v 512. */
#include "lib/fmha/instances.h"

#define CKT_FMHA_NAME ckt_fmha_bwd_f16_d512
#define CKT_FMHA_DTYPE CKT_F16
#define CKT_FMHA_HDIM 512
#include CKT_FMHA_BWD_BODY

#define CKT_FMHA_NAME ckt_fmha_bwd_bf16_d512
#define CKT_FMHA_DTYPE CKT_BF16
#define CKT_FMHA_HDIM 512
#include CKT_FMHA_BWD_BODY

#if !defined(CKT_DEVICE_PASS) /* host data: the device pass of hipcc would emit it too */
CKT__FMHA_BWD_TABLE(d512) = {
    CKT__FMHA_BWD_ENTRY(ckt_fmha_bwd_f16_d512, CKT_F16, 512, 512),
    CKT__FMHA_BWD_ENTRY(ckt_fmha_bwd_bf16_d512, CKT_BF16, 512, 512),
};
#endif
