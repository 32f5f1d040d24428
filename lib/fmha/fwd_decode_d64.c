/* lib/fmha/fwd_decode_d64.c — libckt_fmha's decode instances, fp16 and bf16,
 * hdim 64: the GQA group's query heads packed into one block's rows
 * (ckt/fmha/pack.h), 16 rows (CDNA: one wavefront of 32), so that
 * a step of 1..16 queries reads each K/V byte once per group. The
 * dispatcher runs them for seqlen_q <= CKT_FMHA_DECODE_MAX_Q. */
#include "lib/fmha/instances.h"

/* decode's block on NVIDIA: lib/fmha/instances.h (key tiles of 128 here) */
#if !defined(CKT_HAS_MFMA) && !defined(CKT__DEC_BN)
#define CKT__DEC_BN 128
#endif

#define CKT_FMHA_NAME ckt_fmha_fwd_decode_f16_d64
#define CKT_FMHA_DTYPE CKT_F16
#define CKT_FMHA_HDIM 64
#define CKT_FMHA_PACK_GQA 1
#define CKT_FMHA_WARPS CKT__DEC_WARPS
#define CKT_FMHA_KSPLIT CKT__DEC_WARPS
#define CKT_FMHA_WARP_ROWS 16
#define CKT_FMHA_SMEM_SWIZZLE 1 /* NVIDIA: exact L2 sectors for the K/V copies */
#ifdef CKT__DEC_BN
#define CKT_FMHA_BLOCK_N CKT__DEC_BN
#endif
#include CKT_FMHA_FWD_BODY

#define CKT_FMHA_NAME ckt_fmha_fwd_decode_bf16_d64
#define CKT_FMHA_DTYPE CKT_BF16
#define CKT_FMHA_HDIM 64
#define CKT_FMHA_PACK_GQA 1
#define CKT_FMHA_WARPS CKT__DEC_WARPS
#define CKT_FMHA_KSPLIT CKT__DEC_WARPS
#define CKT_FMHA_WARP_ROWS 16
#define CKT_FMHA_SMEM_SWIZZLE 1 /* NVIDIA: exact L2 sectors for the K/V copies */
#ifdef CKT__DEC_BN
#define CKT_FMHA_BLOCK_N CKT__DEC_BN
#endif
#include CKT_FMHA_FWD_BODY

#if !defined(CKT_DEVICE_PASS) /* host data: the device pass of hipcc would emit it too */
CKT__FMHA_FWD_TABLE(decode_d64) = {
    CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_decode_f16_d64, CKT_F16, 64, 64),
    CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_decode_bf16_d64, CKT_BF16, 64, 64),
};
#endif
