/* lib/fmha/fwd_d512.c — libckt_fmha instances: fp16 and bf16, hdim_q 512, hdim_v 512.
 * V's columns split over two warps a row group (CKT__FMHA_VSPLIT 2: O of 128
 * registers a lane): BM 32, BN 32, 162.5 KiB of shared memory (sm_80 and
 * sm_90). NVIDIA only: on CDNA fits() declines and launch says
 * CKT_ERROR_UNSUPPORTED (docs/fmha.md#head-dim-512). */
#include "lib/fmha/instances.h"

#define CKT_FMHA_KV_CACHE 0 /* plain tensors only: compile time */
#define CKT_FMHA_NAME ckt_fmha_fwd_f16_d512
#define CKT_FMHA_DTYPE CKT_F16
#define CKT_FMHA_HDIM 512
#include CKT_FMHA_FWD_BODY

#define CKT_FMHA_KV_CACHE 0
#define CKT_FMHA_NAME ckt_fmha_fwd_bf16_d512
#define CKT_FMHA_DTYPE CKT_BF16
#define CKT_FMHA_HDIM 512
#include CKT_FMHA_FWD_BODY

#if !defined(CKT_DEVICE_PASS) /* host data: the device pass of hipcc would emit it too */
CKT__FMHA_FWD_TABLE(d512) = {
    CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_f16_d512, CKT_F16, 512, 512),
    CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_bf16_d512, CKT_BF16, 512, 512),
};
#endif
