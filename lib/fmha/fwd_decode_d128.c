/* lib/fmha/fwd_decode_d128.c — libckt_fmha's decode instances, fp16 and bf16,
 * hdim 128: the GQA group's query heads packed into one block's rows
 * (ckt/fmha/pack.h), 16 rows (CDNA: one wavefront of 32), so that a step of
 * 1..16 queries reads each K/V byte once per group. The dispatcher runs
 * them for seqlen_q <= CKT_FMHA_DECODE_MAX_Q. */
#include "lib/fmha/instances.h"

/* NVIDIA: CKT__DEC_WARPS warps share the 16 rows and split each key tile of
 * CKT__DEC_BN keys (CKT_FMHA_KSPLIT, ckt/fmha/fwd_body.h), so that the four
 * schedulers of a multiprocessor work on one block's tiles. H100, the decode
 * grid: 0.86x -> 0.90x cuDNN (geometric mean), the best of 2, 4 and 8
 * warps, tiles of 64 and 128, 2, 3 and 4 stages
 * (docs/fmha_inference.md#decode). CDNA: one wavefront (lib/fmha/instances.h). */
#if !defined(CKT_HAS_MFMA) && !defined(CKT__DEC_BN)
#define CKT__DEC_BN 128
#endif
#if defined(CKT_HAS_MFMA)
#undef CKT__DEC_STAGES
#endif

#define CKT_FMHA_NAME ckt_fmha_fwd_decode_f16_d128
#define CKT_FMHA_DTYPE CKT_F16
#define CKT_FMHA_HDIM 128
#define CKT_FMHA_PACK_GQA 1
#define CKT_FMHA_WARPS CKT__DEC_WARPS
#define CKT_FMHA_KSPLIT CKT__DEC_WARPS
#define CKT_FMHA_WARP_ROWS 16
#define CKT_FMHA_SMEM_SWIZZLE 1 /* NVIDIA: exact L2 sectors for the K/V copies */
#ifdef CKT__DEC_BN
#define CKT_FMHA_BLOCK_N CKT__DEC_BN
#endif
#ifdef CKT__DEC_STAGES
#define CKT_FMHA_STAGES CKT__DEC_STAGES
#endif
#include CKT_FMHA_FWD_BODY

#define CKT_FMHA_NAME ckt_fmha_fwd_decode_bf16_d128
#define CKT_FMHA_DTYPE CKT_BF16
#define CKT_FMHA_HDIM 128
#define CKT_FMHA_PACK_GQA 1
#define CKT_FMHA_WARPS CKT__DEC_WARPS
#define CKT_FMHA_KSPLIT CKT__DEC_WARPS
#define CKT_FMHA_WARP_ROWS 16
#define CKT_FMHA_SMEM_SWIZZLE 1 /* NVIDIA: exact L2 sectors for the K/V copies */
#ifdef CKT__DEC_BN
#define CKT_FMHA_BLOCK_N CKT__DEC_BN
#endif
#ifdef CKT__DEC_STAGES
#define CKT_FMHA_STAGES CKT__DEC_STAGES
#endif
#include CKT_FMHA_FWD_BODY

#if !defined(CKT_DEVICE_PASS) /* host data: the device pass of hipcc would emit it too */
CKT__FMHA_FWD_TABLE(decode_d128) = {
    CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_decode_f16_d128, CKT_F16, 128, 128),
    CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_decode_bf16_d128, CKT_BF16, 128, 128),
};
#endif
