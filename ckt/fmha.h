/* ckt/fmha.h — fused multi-head attention.
 *
 *   #include "ckt/fmha.h"
 *   #define CKT_FMHA_NAME   my_attn_d128_bf16
 *   #define CKT_FMHA_DTYPE  CKT_BF16
 *   #define CKT_FMHA_HDIM   128
 *   #include CKT_FMHA_FWD_BODY      // my_attn_d128_bf16_launch(&args, stream)
 *
 * Arguments: ckt/fmha/args.h. Kernel and instantiation: ckt/fmha/fwd_body.h. */
#ifndef CKT_FMHA_H
#define CKT_FMHA_H

#include "ckt/fmha/appendkv_fwd.h" /* the forward's view of the cache an append filled */
#include "ckt/fmha/args.h"
#include "ckt/fmha/bias.h"     /* additive bias and ALiBi */
#include "ckt/fmha/dispatch.h" /* ckt_fmha_fwd: the compiled instances of libckt_fmha */
#include "ckt/fmha/fp8.h"      /* the fp8 forward's scales, as the launcher hands them on */
#include "ckt/fmha/plan.h"     /* plans of libckt_fmha's calls: stages, workspace */
#include "ckt/fmha/ref.h"      /* CPU reference of the forward, FLOP count, comparison */
#include "ckt/fmha/ref_appendkv.h" /* CPU reference of the append-KV kernel */
#include "ckt/fmha/registry.h" /* libckt_fmha's instances described, select reports, JSON */
#include "ckt/fmha/rope.h"     /* rotary embedding */
#include "ckt/fmha/validate.h"
#include "ckt/fmha/workspace.h" /* the backward's plan and workspace */
#include "ckt/host.h"
#include "ckt/tile.h"

/* The forward kernel's body file, for `#include CKT_FMHA_FWD_BODY`. */
#define CKT_FMHA_FWD_BODY "ckt/fmha/fwd_body.h"

/* The backward's (three kernels, a plan and a run), for `#include CKT_FMHA_BWD_BODY`. */
#define CKT_FMHA_BWD_BODY "ckt/fmha/bwd_body.h"

/* The append-KV kernel's (rotary embedding, KV cache append), for
 * `#include CKT_FMHA_APPENDKV_BODY`: docs/fmha_appendkv.md. */
#define CKT_FMHA_APPENDKV_BODY "ckt/fmha/appendkv_body.h"

#endif /* CKT_FMHA_H */
