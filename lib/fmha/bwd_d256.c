/* lib/fmha/bwd_d256.c — libckt_fmha backward instances: fp16 and bf16, hdim_q 256, hdim_v 256. */
#include "lib/fmha/instances.h"

#define CKT_FMHA_NAME ckt_fmha_bwd_f16_d256
#define CKT_FMHA_DTYPE CKT_F16
#define CKT_FMHA_HDIM 256
#include CKT_FMHA_BWD_BODY

#define CKT_FMHA_NAME ckt_fmha_bwd_bf16_d256
#define CKT_FMHA_DTYPE CKT_BF16
#define CKT_FMHA_HDIM 256
#include CKT_FMHA_BWD_BODY

#if !defined(CKT_DEVICE_PASS) /* host data: the device pass of hipcc would emit it too */
CKT__FMHA_BWD_TABLE(d256) = {
    CKT__FMHA_BWD_ENTRY(ckt_fmha_bwd_f16_d256, CKT_F16, 256, 256),
    CKT__FMHA_BWD_ENTRY(ckt_fmha_bwd_bf16_d256, CKT_BF16, 256, 256),
};
#endif
