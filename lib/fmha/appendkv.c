/* lib/fmha/appendkv.c — libckt_fmha's append-KV instances: fp16 and bf16,
 * every head dim up to 256 (ckt/fmha/appendkv_body.h is generic over it). */
#include "lib/fmha/instances.h"

#define CKT_FMHA_NAME ckt_fmha_appendkv_f16
#define CKT_FMHA_DTYPE CKT_F16
#include CKT_FMHA_APPENDKV_BODY

#define CKT_FMHA_NAME ckt_fmha_appendkv_bf16
#define CKT_FMHA_DTYPE CKT_BF16
#include CKT_FMHA_APPENDKV_BODY

#if !defined(CKT_DEVICE_PASS) /* host data: the device pass of hipcc would emit it too */
const ckt_fmha_appendkv_instance ckt__fmha_appendkv[CKT__FMHA_APPENDKV_COUNT] = {
    {"ckt_fmha_appendkv_f16", CKT_F16, ckt_fmha_appendkv_f16_launch},
    {"ckt_fmha_appendkv_bf16", CKT_BF16, ckt_fmha_appendkv_bf16_launch},
};
#endif
