/* ckt/fmha/fwd_body.h — the FMHA forward kernel, instantiated by define-then-include:
 *
 *   #include "ckt/fmha.h"
 *   #define CKT_FMHA_NAME    my_attn_d128_bf16   (required) prefix of what is defined
 *   #define CKT_FMHA_DTYPE   CKT_BF16            (required) CKT_F16 or CKT_BF16
 *   #define CKT_FMHA_HDIM    128                 (required) q/k head dim: 32..576, multiple of 32
 *   #define CKT_FMHA_HDIM_V  128                 (optional, default HDIM) v/o head dim: 32..512
 *   #include CKT_FMHA_FWD_BODY
 *
 * defines
 *   ckt_status my_attn_d128_bf16_launch(const ckt_fmha_fwd_args *a, ckt_stream s);
 *   int        my_attn_d128_bf16_fits(const ckt_fmha_fwd_args *a);
 *   size_t     my_attn_d128_bf16_workspace_bytes(const ckt_fmha_fwd_args *a);   (split-KV)
 *   ckt_status my_attn_d128_bf16_num_splits(const ckt_fmha_fwd_args *a, int *splits);
 *   int        my_attn_d128_bf16_block_m, my_attn_d128_bf16_block_n   (the tile, enum constants)
 * fp8 (docs/fmha.md#fp8): CKT_FMHA_DTYPE CKT_FP8_E4M3 with CKT_FMHA_O_DTYPE
 * CKT_F16 or CKT_BF16 (the output's type; defined for fp8 only), head dims
 * 64..256; NVIDIA sm_89+ (mma.sync m16n8k32 e4m3), AMD gfx940 (MFMA
 * 32x32x16 fp8, OCP bytes read as FNUZ: ckt/tile/fp8.h) and the emulator's
 * nv and cdna profiles; the launcher refuses other devices (sm_80, gfx90a)
 * with CKT_ERROR_UNSUPPORTED.
 * Optional: CKT_FMHA_KV_CACHE 0 compiles the instance without the KV cache
 * (plain tensors only, 2% faster on H200; fits() declines cache calls).
 * CKT_FMHA_BIAS 0 / CKT_FMHA_DROPOUT 0 leave out the bias / ALiBi kernel and
 * the dropout kernel, the costliest to compile (nvcc sm_90a, a d128 bf16
 * instance on an idle 2-core machine: 8.3-8.5 s with both, 5.2-5.6 s
 * without): fits() declines, and the launcher refuses with
 * CKT_ERROR_UNSUPPORTED, calls that set bias / alibi_slopes or p_drop.
 * and the kernels my_attn_d128_bf16_kernel, _drop_kernel (with dropout), _bias_kernel (with
 * bias or ALiBi, and dropout if asked),
 * _combine_kernel (split-KV) and _randval_kernel (dropout's random bytes, for tests),
 * then #undefs the parameters, so a
 * translation unit may include the body again for another instance. Head dims
 * below the instance's (multiples of 8) run with zero padding. Everything else
 * (mask kind and window, scale, soft-cap, GQA, layouts, batch or group mode,
 * LSE, attention sinks) is a runtime argument: see ckt/fmha/args.h.
 *
 * The algorithm is FlashAttention-2's; the kernel reads as its pseudocode,
 * one shared module per step:
 *
 *   (b, h, m0) = this block's tile                      ckt/fmha/schedule.h
 *   entry rows, GQA head, visible key tiles [n_lo, n_hi) ckt/fmha/seqlen.h, mask.h
 *   load Q_i; O = 0, m = -inf, l = 0                     ckt/fmha/softmax.h
 *   for each visible key tile j (K_j, V_j in a cp.async ring):   ckt/fmha/fwd_mainloop_body.h
 *       S = Q_i K_j^T                                    warp MMA (ckt/tile/mma.h)
 *       soft-cap, or bias / ALiBi (scale folded in);    softmax.h, bias.h
 *       mask where the tile is cut                      mask.h
 *       m_new = max(m, rowmax S); P = exp2(S f - m_new)  softmax.h (scale f folded
 *       l = l exp2(m - m_new) + rowsum P                 into the exp2's FMA)
 *       (dropout: P o Z, Z a Philox mask)              ckt/fmha/dropout.h
 *       O = O exp2(m - m_new) + P V_j                    (rescale only when m grew)
 *   (a sink: l += exp2(sink - m), max-safe)              softmax.h (epilogue only)
 *   O /= l (dropout: O /= 1 - p); LSE = m + log l; store both                  ckt/fmha/epilogue.h
 *
 * A block owns BM query rows of one (batch, head) and never loads key tiles
 * wholly outside the mask. A warp owns WM query rows: 32 on NVIDIA (16 for
 * head dims v > 128) and CDNA. The two MMA flavors differ only in the two
 * products (CDNA computes them transposed, see ckt/fmha/softmax.h); the
 * modules hide the rest (the K/V ring has two cp.async stages on NVIDIA by
 * default, CKT_FMHA_STAGES, one on CDNA; O leaves through shared memory on
 * NVIDIA, straight on CDNA). The GQA-packed decode instances split each key
 * tile over the warps of their row group instead (CKT_FMHA_KSPLIT, below).
 *
 * Head dims v above 256 (512; MLA's 576/512) split V's columns over
 * CKT__FMHA_VSPLIT warps that share one row group: each computes the same
 * S = Q K^T and softmax for the group's rows (duplicated, so the statistics
 * agree bit for bit without an exchange) and P V for its DV / VSPLIT
 * columns, so that O stays at d256's 128 registers a lane; each stores its
 * column slice, the group's first warp the LSE. On CDNA Q, K and V of d512
 * exceed the 64 KiB of LDS: K and V of a tile take turns in one unpadded
 * (row-major) buffer beside Q (CKT__FMHA_KV_ONEBUF), 64 KiB exactly; 576/512
 * does not fit and declines there (fits() 0, launch CKT_ERROR_UNSUPPORTED).
 * docs/fmha.md#head-dim-512.
 */

/* >>parameters */
#ifndef CKT_FMHA_NAME
#error "ckt/fmha/fwd_body.h: define CKT_FMHA_NAME (the instance's name prefix) before including the body"
#endif
#ifndef CKT_FMHA_DTYPE
#error "ckt/fmha/fwd_body.h: define CKT_FMHA_DTYPE as CKT_F16 or CKT_BF16"
#endif
#ifndef CKT_FMHA_HDIM
#error "ckt/fmha/fwd_body.h: define CKT_FMHA_HDIM (32, 64, 96, 128, 192, 256, 512 or 576)"
#endif
#ifndef CKT_FMHA_HDIM_V
#define CKT_FMHA_HDIM_V CKT_FMHA_HDIM
#endif
/* fp8 (ckt/tile/fp8.h): CKT_FMHA_O_DTYPE marks an fp8 instance (the
 * preprocessor cannot compare enum constants); its shared tiles hold Q, K
 * and V rows as 16-bit units, two fp8 each, and V^T once per key tile */
#ifdef CKT_FMHA_O_DTYPE
#define CKT__FMHA_FP8 1
#define CKT__FMHA_OUT CKT_FMHA_O_DTYPE
/* key steps of 32 and S = Q K^T rolled: the first configuration without
 * spills on sm_90a for d64 and d128 (nvcc 13: BN 64 spilled 50-460 bytes,
 * BN 32 with the S loop unrolled 36-120); untuned on a GPU yet */
#ifndef CKT_FMHA_BLOCK_N
#define CKT_FMHA_BLOCK_N 32
#endif
#ifndef CKT_FMHA_S_UNROLL
#define CKT_FMHA_S_UNROLL 1
#endif
#else
#define CKT__FMHA_FP8 0
#define CKT__FMHA_OUT CKT_FMHA_DTYPE
#endif
/* optional: 1 packs the query heads of a GQA group into one block's rows
 * (decode: ckt/fmha/pack.h); pair it with few rows a block, e.g.
 * CKT_FMHA_WARP_ROWS 16 and CKT_FMHA_WARPS 4 with CKT_FMHA_KSPLIT 4 (one
 * row group, four warps splitting its keys; NVIDIA) or CKT_FMHA_WARPS 1 */
#ifdef CKT_FMHA_PACK_GQA
#define CKT__FMHA_PACK CKT_FMHA_PACK_GQA
#else
#define CKT__FMHA_PACK 0
#endif
/* optional: 0 compiles the instance without the KV cache (no pages, no
 * split-KV, no cache_batch_idx): its fits() declines such calls */
#ifdef CKT_FMHA_KV_CACHE
#define CKT__FMHA_KVC CKT_FMHA_KV_CACHE
#else
#define CKT__FMHA_KVC 1
#endif

/* optional: 0 leaves out the bias / ALiBi kernel, the dropout kernel
 * (compile time; the launcher refuses calls that need them) */
#ifdef CKT_FMHA_BIAS
#define CKT__FMHA_HAS_BIAS CKT_FMHA_BIAS
#else
#define CKT__FMHA_HAS_BIAS 1
#endif
#ifdef CKT_FMHA_DROPOUT
#define CKT__FMHA_HAS_DROP CKT_FMHA_DROPOUT
#else
#define CKT__FMHA_HAS_DROP 1
#endif

#include "ckt/fmha/args.h"
#include "ckt/fmha/dropout.h"
#include "ckt/fmha/bias.h"
#include "ckt/fmha/epilogue.h"
#include "ckt/fmha/fp8.h"
#include "ckt/fmha/mask.h"
#include "ckt/fmha/pack.h"
#include "ckt/fmha/page.h"
#include "ckt/fmha/schedule.h"
#include "ckt/fmha/seqlen.h"
#include "ckt/fmha/softmax.h"
#include "ckt/fmha/splitkv.h"
#include "ckt/fmha/validate.h"
#include "ckt/host/runtime.h"
#include "ckt/tile/fp8.h"
#include "ckt/tile/mma.h"
#include "ckt/tile/pipeline.h"
#include "ckt/tile/view.h"

#include <math.h>

#define CKT__FMHA_CAT2(a, b) a##b
#define CKT__FMHA_CAT(a, b) CKT__FMHA_CAT2(a, b)
#define CKT__FMHA_FN(suffix) CKT__FMHA_CAT(CKT_FMHA_NAME, suffix)

/* Tile shape: BM query rows per block, BN keys per step. */
#define CKT__FMHA_D (CKT__FMHA_FP8 ? CKT_FMHA_HDIM / 2 : CKT_FMHA_HDIM) /* Q/K row: 16-bit units */
#define CKT__FMHA_DV CKT_FMHA_HDIM_V
/* warps that share a row group, each P V for DV / VSPLIT of V's columns
 * (see the top): 2 for head dims v above 256 */
#ifdef CKT_FMHA_VSPLIT
#define CKT__FMHA_VSPLIT CKT_FMHA_VSPLIT
#else
#define CKT__FMHA_VSPLIT (CKT__FMHA_DV > 256 ? 2 : 1)
#endif
#define CKT__FMHA_DVW (CKT__FMHA_DV / CKT__FMHA_VSPLIT) /* a warp's columns of O */
/* warps that share a row group and split each key tile's keys, each with
 * its own online softmax over BN / KSPLIT of them, merged after the loop
 * (ckt_fmha_softmax_merge_warps): the decode instances, whose one row
 * group is too little work a key tile for one warp to keep the memory busy
 * (docs/fmha_inference.md#decode). mma.sync, GQA-packed instances only. */
#ifdef CKT_FMHA_KSPLIT
#define CKT__FMHA_KSPLIT CKT_FMHA_KSPLIT
#else
#define CKT__FMHA_KSPLIT 1
#endif
/* NVIDIA; CDNA up to head dim 256, and 512 with K and V through one
 * unpadded buffer (Q [32][512] + [32][512]: the 64 KiB of LDS exactly) */
#if defined(CKT_HAS_MFMA)
#define CKT__FMHA_SUPPORTED ((CKT__FMHA_D <= 256 && CKT__FMHA_DV <= 256) || (CKT__FMHA_D <= 512 && CKT__FMHA_DV <= CKT__FMHA_D))
#define CKT__FMHA_KV_ONEBUF (CKT__FMHA_D > 256 || CKT__FMHA_DV > 256)
#define CKT__FMHA_LAYOUT (CKT__FMHA_KV_ONEBUF ? CKT_SMEM_ROW_MAJOR : CKT_SMEM_PADDED)
#else
#define CKT__FMHA_SUPPORTED 1
#define CKT__FMHA_KV_ONEBUF 0
/* CKT_FMHA_SMEM_SWIZZLE 1 (a tuning knob, NVIDIA): the Q / K / V tiles in
 * CKT_SMEM_SWIZZLE instead of rows padded by 16 bytes. cp.async into padded
 * rows asks L2 for 1.5x the sectors it copies (ncu, H200: 24 a warp's
 * 512 bytes, the ideal 16; the extra ones hit in L2); swizzled tiles ask for
 * exactly the ideal. Memory-bound instances (decode) gain 5-12%; the
 * compute-bound d128 forward lost 2-7% (docs/tile.md, "Shared memory: layouts and banks"). */
#if defined(CKT_FMHA_SMEM_SWIZZLE) && CKT_FMHA_SMEM_SWIZZLE
#define CKT__FMHA_LAYOUT CKT_SMEM_SWIZZLE
#else
#define CKT__FMHA_LAYOUT CKT_SMEM_PADDED
#endif
#endif
#define CKT__FMHA_DV_IN (CKT__FMHA_FP8 ? CKT__FMHA_DV / 2 : CKT__FMHA_DV) /* V row: 16-bit units */
#ifdef CKT_FMHA_WARPS /* optional tuning knobs */
#define CKT__FMHA_WARPS CKT_FMHA_WARPS
#elif defined(CKT_HAS_MFMA)
/* CDNA: 64 KiB of LDS hold Q (32 rows per wavefront) and one K/V stage */
#define CKT__FMHA_WARPS ((CKT_FMHA_HDIM > 128 || CKT_FMHA_HDIM_V > 128) ? CKT__FMHA_VSPLIT : 4)
#else
#define CKT__FMHA_WARPS 4
#endif
#define CKT__FMHA_THREADS (CKT__FMHA_WARPS * CKT_WARP_SIZE)
#if defined(CKT_HAS_MFMA)
#define CKT__FMHA_WM 32 /* MFMA 32x32x8: a wavefront owns 32 query rows */
#define CKT__FMHA_BN 32
#else
/* mma.sync m16n8k16: a warp owns 32 query rows (16 when the O accumulator
 * of 32 rows, DV registers, would not fit beside the scores); key steps of
 * 128 for head dims up to 64, 64 up to 128, else 32 (measured on H200:
 * docs/fmha.md) */
#ifdef CKT_FMHA_WARP_ROWS
#define CKT__FMHA_WM CKT_FMHA_WARP_ROWS
#else
#define CKT__FMHA_WM (CKT__FMHA_DVW <= 128 ? 32 : 16)
#endif
#ifdef CKT_FMHA_BLOCK_N
#define CKT__FMHA_BN CKT_FMHA_BLOCK_N
#else
#define CKT__FMHA_BN (CKT__FMHA_D <= 64 ? 128 : CKT__FMHA_D <= 128 ? 64 : 32)
#endif
#endif
#define CKT__FMHA_BM (CKT__FMHA_WARPS / (CKT__FMHA_VSPLIT * CKT__FMHA_KSPLIT) * CKT__FMHA_WM)
#define CKT__FMHA_BNW (CKT__FMHA_BN / CKT__FMHA_KSPLIT) /* a warp's keys of a tile */
/* k-steps of S = Q K^T unrolled per trip: 2 for head dims <= 64, else 4. Full
 * unrolling lets the compiler hoist every K fragment and spill; this keeps
 * them within the register budget (d128 at BN = 64: no spills, 4% faster
 * than BN = 32 fully unrolled; d64 at BN = 128: 3% faster than BN = 64) */
#ifdef CKT_FMHA_S_UNROLL
#define CKT__FMHA_S_UNROLL CKT_UNROLL_BY(CKT_FMHA_S_UNROLL)
#elif CKT_FMHA_HDIM > 64
#define CKT__FMHA_S_UNROLL CKT_UNROLL_BY(4)
#else
#define CKT__FMHA_S_UNROLL CKT_UNROLL_BY(2)
#endif
/* the Q tile's space also holds the O tile in the epilogue */
#define CKT__FMHA_Q_ELEMS                                                                          \
    (CKT__FMHA_D >= CKT__FMHA_DV ? CKT_SMEM_ELEMS(CKT__FMHA_LAYOUT, CKT__FMHA_BM, CKT__FMHA_D, 2)    \
                                 : CKT_SMEM_ELEMS(CKT__FMHA_LAYOUT, CKT__FMHA_BM, CKT__FMHA_DV, 2))
#define CKT__FMHA_K_ELEMS CKT_SMEM_ELEMS(CKT__FMHA_LAYOUT, CKT__FMHA_BN, CKT__FMHA_D, 2)
/* V after K in a stage, or in K's buffer (CKT__FMHA_KV_ONEBUF: no space of its own) */
#define CKT__FMHA_V_ELEMS (CKT__FMHA_KV_ONEBUF ? 0 : CKT_SMEM_ELEMS(CKT__FMHA_LAYOUT, CKT__FMHA_BN, CKT__FMHA_DV_IN, 2))
/* fp8 on mma.sync: V^T [DV][BN bytes] in the permuted key order
 * (ckt/tile/fp8.h), one buffer; MFMA gathers V^T's fragments from V */
#if defined(CKT_HAS_MMA_SYNC)
#define CKT__FMHA_VT_ELEMS (CKT__FMHA_FP8 ? CKT_SMEM_ELEMS(CKT_SMEM_PADDED, CKT__FMHA_DV, CKT__FMHA_BN / 2, 2) : 0)
#else
#define CKT__FMHA_VT_ELEMS 0
#endif
/* K/V ring stages: 2 where copies are asynchronous (cp.async), else 1;
 * CKT_FMHA_STAGES (a tuning knob, cp.async targets) keeps STAGES - 1 tiles
 * in flight while one is computed */
#if defined(CKT_HAS_CP_ASYNC) && defined(CKT_FMHA_STAGES)
#define CKT__FMHA_STAGES CKT_FMHA_STAGES
#elif defined(CKT_HAS_CP_ASYNC)
#define CKT__FMHA_STAGES 2
#else
#define CKT__FMHA_STAGES 1
#endif
#define CKT__FMHA_TILES_BYTES                                                                      \
    ((size_t)(CKT__FMHA_Q_ELEMS + CKT__FMHA_STAGES * (CKT__FMHA_K_ELEMS + CKT__FMHA_V_ELEMS) + CKT__FMHA_VT_ELEMS) * 2)
/* CKT_FMHA_KSPLIT: the warps' partial states meet in the same space after the loop */
#define CKT__FMHA_MERGE_BYTES                                                                      \
    (CKT__FMHA_KSPLIT > 1 ? (size_t)CKT__FMHA_WARPS * CKT_FMHA_MERGE_FLOATS(CKT__FMHA_WM, CKT__FMHA_DVW) * 4 : 0)
/* paged pools whose pages hold no whole key tiles: a row table a stage
 * after the tiles (ckt/fmha/page.h), in the GQA-packed (decode) instances
 * where the ring is asynchronous. (The prefill _kv instances keep the page
 * walk: they run at the 255-register cap, and the table's code left the
 * d128 one's dropout kernel 132 bytes of spills, nvcc 13.) */
#if CKT__FMHA_KVC && CKT__FMHA_STAGES >= 2 && CKT__FMHA_PACK
#define CKT__FMHA_PAGE_TABLE 1
#define CKT__FMHA_PT_ROWS CKT_CEIL_DIV(CKT__FMHA_BN, CKT__FMHA_THREADS) /* table rows a thread writes */
#define CKT__FMHA_PT_BYTES ((size_t)CKT__FMHA_STAGES * CKT_FMHA_PAGE_TABLE_BYTES(CKT__FMHA_BN))
#else
#define CKT__FMHA_PAGE_TABLE 0
#define CKT__FMHA_PT_ROWS 1
#define CKT__FMHA_PT_BYTES ((size_t)0)
#endif
#define CKT__FMHA_SMEM_BYTES                                                                                   \
    (CKT__FMHA_TILES_BYTES + CKT__FMHA_PT_BYTES > CKT__FMHA_MERGE_BYTES ? CKT__FMHA_TILES_BYTES + CKT__FMHA_PT_BYTES \
                                                                       : CKT__FMHA_MERGE_BYTES)
#define CKT__FMHA_BF16 ((CKT__FMHA_OUT) == CKT_BF16) /* the output's (and 16-bit inputs') type */
#define CKT__FMHA_MMA_IN (CKT__FMHA_FP8 ? CKT_MMA_E4M3 : CKT__FMHA_BF16) /* ckt_warp_mma's kind */
/* the kernels exist where the target has a warp MMA; fp8's MMA traps in
 * the builds for devices without it (sm_80, gfx90a), which the launcher
 * refuses */
#if defined(CKT_HAS_MMA_SYNC) || defined(CKT_HAS_MFMA)
#define CKT__FMHA_HAS_KERNEL 1
#else
#define CKT__FMHA_HAS_KERNEL 0
#endif
/* blocks a multiprocessor runs at once, for split-KV's heuristic: by
 * shared memory, 227 KB on NVIDIA (sm_90; sm_80 has 163), 64 KB on CDNA */
#if defined(CKT_HAS_MFMA)
#define CKT__FMHA_SMEM_PER_MP (64 * 1024)
#else
#define CKT__FMHA_SMEM_PER_MP (227 * 1024)
#endif
#define CKT__FMHA_BLOCKS_PER_MP                                                                            \
    ((int)(CKT__FMHA_SMEM_PER_MP / CKT__FMHA_SMEM_BYTES) < 1 ? 1                                            \
     : (int)(CKT__FMHA_SMEM_PER_MP / CKT__FMHA_SMEM_BYTES) > 16 ? 16 : (int)(CKT__FMHA_SMEM_PER_MP / CKT__FMHA_SMEM_BYTES))

/* 576 / 512: MLA's shape; shared memory at BM 32 and BN 32, two stages:
 * 162.5 KiB at d512 (sm_80 has 163), d576 needs BN 16 (docs/fmha.md) */
CKT_STATIC_ASSERT(CKT__FMHA_D % 32 == 0 && CKT__FMHA_D >= 32 && CKT__FMHA_D <= 576,
                  "CKT_FMHA_HDIM must be a multiple of 32 in [32, 576] (smaller head dims run padded)");
CKT_STATIC_ASSERT(CKT__FMHA_DV % 32 == 0 && CKT__FMHA_DV >= 32 && CKT__FMHA_DV <= 512,
                  "CKT_FMHA_HDIM_V must be a multiple of 32 in [32, 512]");
CKT_STATIC_ASSERT(CKT__FMHA_DV % (32 * CKT__FMHA_VSPLIT) == 0 && CKT__FMHA_DVW <= 256 &&
                      CKT__FMHA_WARPS % CKT__FMHA_VSPLIT == 0,
                  "CKT_FMHA_VSPLIT: warps a row group, dividing CKT_FMHA_WARPS, with HDIM_V / VSPLIT a multiple of "
                  "32 up to 256 (the O accumulator of a warp)");
CKT_STATIC_ASSERT(CKT__FMHA_VSPLIT == 1 || !CKT__FMHA_PACK, "CKT_FMHA_VSPLIT > 1 does not pack GQA heads");
CKT_STATIC_ASSERT(CKT__FMHA_STAGES >= 1, "CKT_FMHA_STAGES: 1 or more K/V stages");
CKT_STATIC_ASSERT(CKT__FMHA_LAYOUT != CKT_SMEM_SWIZZLE || (CKT__FMHA_D % 64 == 0 && CKT__FMHA_DV % 64 == 0 && !CKT__FMHA_FP8),
                  "CKT_FMHA_SMEM_SWIZZLE 1: 16-bit instances whose head dims are multiples of 64");
#if defined(CKT_HAS_MFMA)
#define CKT__FMHA_KSPLIT_OK 0 /* the transposed products: not written for it */
#else
#define CKT__FMHA_KSPLIT_OK 1
#endif
CKT_STATIC_ASSERT(CKT__FMHA_KSPLIT == 1 ||
                      (CKT__FMHA_KSPLIT_OK && CKT__FMHA_PACK && CKT__FMHA_VSPLIT == 1 && !CKT__FMHA_FP8 &&
                       CKT__FMHA_WARPS % CKT__FMHA_KSPLIT == 0 && CKT__FMHA_BNW % 16 == 0),
                  "CKT_FMHA_KSPLIT > 1: mma.sync, GQA-packed 16-bit instances (CKT_FMHA_PACK_GQA 1) without "
                  "CKT_FMHA_VSPLIT, dividing CKT_FMHA_WARPS, with CKT_FMHA_BLOCK_N / KSPLIT a multiple of 16");
CKT_STATIC_ASSERT(!CKT__FMHA_KV_ONEBUF || (!CKT__FMHA_KVC && !CKT__FMHA_PACK && CKT__FMHA_STAGES == 1),
                  "CDNA at head dims above 256: define CKT_FMHA_KV_CACHE 0 (K and V share one buffer, contiguous only)");
CKT_STATIC_ASSERT(!CKT__FMHA_SUPPORTED || CKT__FMHA_SMEM_BYTES <= CKT__FMHA_SMEM_PER_MP,
                  "the block's shared memory exceeds the target's (CDNA 64 KiB, NVIDIA 227 KiB)");

#if CKT__FMHA_HAS_KERNEL && CKT__FMHA_SUPPORTED
CKT_STATIC_ASSERT(!CKT__FMHA_FP8 || ((CKT_FMHA_DTYPE) == CKT_FP8_E4M3 && CKT__FMHA_BN % 32 == 0 &&
                                     ((CKT__FMHA_OUT) == CKT_F16 || (CKT__FMHA_OUT) == CKT_BF16)),
                  "fp8: CKT_FMHA_O_DTYPE (CKT_F16 or CKT_BF16) goes with CKT_FMHA_DTYPE CKT_FP8_E4M3 only, "
                  "and CKT_FMHA_BLOCK_N must be a multiple of 32 (the k32 MMA)");

/* Rescale O when some row max grew: always for head dims <= 64 on mma.sync
 * (measured faster there than the warp vote), else only when some lane of the
 * warp saw a max grow (after the first tiles that is rare). */
#if defined(CKT_HAS_MMA_SYNC) && CKT_FMHA_HDIM <= 64
#define CKT__FMHA_RESCALE_ALWAYS 1
#else
#define CKT__FMHA_RESCALE_ALWAYS 0
#endif

CKT_STATIC_ASSERT(CKT__FMHA_THREADS >= CKT__FMHA_D / 8 && CKT__FMHA_THREADS >= CKT__FMHA_DV_IN / 8 &&
                      CKT_CEIL_DIV(CKT__FMHA_BN, CKT__FMHA_THREADS / (CKT__FMHA_D / 8)) <= CKT_FMHA_PAGE_ROWS_MAX &&
                      CKT_CEIL_DIV(CKT__FMHA_BN, CKT__FMHA_THREADS / (CKT__FMHA_DV_IN / 8)) <= CKT_FMHA_PAGE_ROWS_MAX,
                  "paged tiles (ckt/fmha/page.h): the block copies whole K and V rows at once, at most "
                  "CKT_FMHA_PAGE_ROWS_MAX rows a thread");
CKT_STATIC_ASSERT(CKT__FMHA_BN % 16 == 0 && CKT__FMHA_BN <= 128,
                  "CKT_FMHA_BLOCK_N: a multiple of 16 up to 128 (dropout's keep bits of a row: 32, ckt/fmha/dropout.h)");
CKT_STATIC_ASSERT(CKT_FMHA_ROW_SLOTS(CKT__FMHA_WM) <= CKT_FMHA_ROW_SLOTS_MAX,
                  "CKT_FMHA_WARP_ROWS: at most 64 query rows per warp (ckt/fmha/softmax.h, CKT_FMHA_ROW_SLOTS_MAX)");
CKT_STATIC_ASSERT(CKT_ROWS_REGS(CKT__FMHA_BM, CKT__FMHA_DV, CKT__FMHA_THREADS, 2) <= CKT_FMHA_STORE_O_REGS_MAX,
                  "the O tile of a block exceeds CKT_FMHA_STORE_O_REGS_MAX registers a thread (ckt/fmha/epilogue.h): "
                  "use fewer query rows or more warps");

/* >>device: the kernel, FlashAttention-2's forward for one (batch, head,
 * query tile). bias_on and drop_on are constants where it is called:
 * bias_on the copy with the bias or ALiBi (ckt/fmha/bias.h); drop_on
 * dropout (ckt/fmha/dropout.h): 0 never, 1 always, 2 as a.p_drop says.
 * Three kernels below: _kernel (neither), _drop_kernel (dropout) and
 * _bias_kernel (bias or ALiBi, dropout at run time), so that the plain
 * kernel holds no option's code at all. A uniform branch in one kernel
 * still costs: the bias's branch cost the d64 sm_90a kernel 2 registers
 * and 800 bytes of spills (nvcc); dropout's loop copy beside the plain
 * one, registers unchanged, cost the plain d64 forward 4-5% on H100 (back
 * to the pre-dropout time once in its own kernel: bench/fmha_dropout_ab.sh,
 * docs/fmha.md). */

CKT_INLINE CKT_DEVICE void CKT__FMHA_FN(_body)(const ckt_fmha_fwd_args a, const int bias_on, const int drop_on)
{
    enum { D = CKT__FMHA_D, DV = CKT__FMHA_DV, BM = CKT__FMHA_BM, BN = CKT__FMHA_BN, WM = CKT__FMHA_WM };
    enum { BNW = CKT__FMHA_BNW }; /* this warp's keys of a tile (BN / KSPLIT) */
    enum { DVW = CKT__FMHA_DVW }; /* this warp's columns of O (DV / VSPLIT) */
    enum { ROWS = CKT_FMHA_ROW_SLOTS(WM) }; /* query rows a lane holds (ckt/fmha/softmax.h) */
    CKT_DYNAMIC_SHARED(uint16_t, smem);
    const int tid = (int)ckt_thread_idx_x(), warp = (int)ckt_warp_id(), lane = (int)ckt_lane_id();
    /* split-KV's combine may launch now (it waits for this grid to finish) */
    ckt_grid_dependents_launch();

    /* >>the tile: (b, h, query rows m0 .. m0 + BM, key split) and its entry
     * (ckt/fmha/schedule.h, seqlen.h, page.h, mask.h); num_splits is the
     * launcher's resolved count */
    const int splits = CKT__FMHA_KVC && a.num_splits > 1 ? a.num_splits : 1;
    const ckt_fmha_tile t = ckt_fmha_fwd_tile(BM, splits);
    /* g: tile rows per query; packed (ckt/fmha/pack.h), the grid's heads
     * are kv heads and h the group's first query head */
    const int g = CKT__FMHA_PACK ? a.nhead_q / a.nhead_k : 1;
    const int hk = CKT__FMHA_PACK ? t.h : ckt_fmha_kv_head(t.h, a.nhead_q, a.nhead_k);
    const int b = t.b, h = CKT__FMHA_PACK ? t.h * g : t.h, m0 = t.m0;
    const ckt_fmha_seq sq = ckt_fmha_seq_resolve(a.group_mode, a.seqstart_q, a.seqstart_k, a.seqlen_q_ptr,
                                                 a.seqlen_k_ptr, a.seqlen_q, a.seqlen_k, b);
    if (m0 >= sq.sq * g)
        return; /* whole block past this entry's queries (group mode, or ragged grid) */
    const int i0 = m0 / g, ni = (m0 + BM - 1) / g - i0 + 1; /* the block's queries */
    const ckt_fmha_paging pg = CKT_FMHA_PAGING(a);
    ckt_fmha_kv kv = ckt_fmha_kv_resolve(&pg, sq.sk, b); /* the keys: contiguous or paged */
    if (!CKT__FMHA_KVC) { /* an instance without the KV cache: the plain tensors */
        kv.ids = 0;
        kv.cb = b;
        kv.sk = sq.sk;
    }
    const ckt_fmha_mask_params mask = ckt_fmha_mask_make(a.mask, a.window_left, a.window_right, sq.sq, kv.sk);
    const float scale = a.scale > 0.0f ? a.scale : 1.0f / sqrtf((float)a.hdim_q);
    /* the warp's row group (first row wr of the tile) and column slice of O,
     * [vc0, vc0 + DVW): the VSPLIT warps of a group share their rows */
    const int wr = warp / (CKT__FMHA_VSPLIT * CKT__FMHA_KSPLIT) * WM, vc0 = warp % CKT__FMHA_VSPLIT * DVW;
    /* CKT_FMHA_KSPLIT: this warp's keys of each tile, [kofs, kofs + BNW) */
    const int kofs = warp % CKT__FMHA_KSPLIT * BNW;
    const int wrow0 = m0 + wr; /* this warp's first tile row */
    /* bias or ALiBi (ckt/fmha/bias.h): in the _bias_kernel only */
    const ckt_fmha_bias_params bias = ckt_fmha_bias_make(a.bias, a.bias_stride_b, a.bias_stride_h, a.bias_stride_s,
                                                         a.alibi_slopes, a.alibi_stride_b, &mask);

    /* views: Q[b][h][i][:], K[cb][hk][j][:], V[cb][hk][j][:], O[b][h][i][:]
     * of the entry (cb: its cache entry); a paged pool at head hk */
    const uint16_t *qp = (const uint16_t *)a.q + ckt_fmha_row_offset(a.group_mode, b, h, sq.q_start, a.q_stride_b, a.q_stride_h, a.q_stride_s);
    const uint16_t *kp = (const uint16_t *)a.k + (kv.ids ? hk * a.k_stride_h : ckt_fmha_row_offset(a.group_mode, kv.cb, hk, sq.k_start, a.k_stride_b, a.k_stride_h, a.k_stride_s));
    const uint16_t *vp = (const uint16_t *)a.v + (kv.ids ? hk * a.v_stride_h : ckt_fmha_row_offset(a.group_mode, kv.cb, hk, sq.k_start, a.v_stride_b, a.v_stride_h, a.v_stride_s));
    uint16_t *op = (uint16_t *)a.o + ckt_fmha_row_offset(a.group_mode, b, h, sq.q_start, a.o_stride_b, a.o_stride_h, a.o_stride_s);
    ckt_window2d wq = ckt_window2d_make(ckt_view2d_make((void *)qp, sq.sq, a.hdim_q, a.q_stride_s), m0, 0);

    /* the key tiles some row of the block sees: [n_lo, n_hi) from BN-aligned n_lo */
    int n_lo, n_hi, full_lo, full_hi;
    ckt_fmha_mask_key_range(&mask, i0, ni, &n_lo, &n_hi);
    /* the key tiles that no row of the block needs masked: n0 in [full_lo,
     * full_hi], block-uniform (uniform registers on NVIDIA). Testing each
     * warp's tile in the loop (ckt_fmha_mask_tile_full) held four more
     * registers across it at the 255 limit: d64 spilled and its softmax
     * schedule clumped, 3-5% slower on H200. Near the mask's edge a warp may
     * now mask a tile it sees whole: a no-op. */
    ckt_fmha_mask_full_keys(&mask, i0, ni, BN, &full_lo, &full_hi);
    n_lo = n_lo / BN * BN;
    int nblocks = n_hi > n_lo ? CKT_CEIL_DIV(n_hi - n_lo, BN) : 0;
    if (splits > 1) { /* this split's share of the tiles (ckt/fmha/splitkv.h) */
        int first;
        ckt_fmha_split_range(nblocks, splits, t.split, &first, &nblocks);
        n_lo += first * BN;
    }
    /* a paged pool whose pages hold whole key tiles (tiles start at multiples of BN) */
    const int page_tiles = kv.ids && pg.page_size % BN == 0;
    /* windows at the first tile (for a paged pool only their origin moves) */
    ckt_window2d wk = ckt_window2d_make(ckt_view2d_make((void *)kp, kv.sk, a.hdim_q, a.k_stride_s), n_lo, 0);
    ckt_window2d wv = ckt_window2d_make(ckt_view2d_make((void *)vp, kv.sk, CKT__FMHA_FP8 ? a.hdim_v / 2 : a.hdim_v,
                                                        a.v_stride_s), n_lo, 0);

    /* shared tiles padded 16 bytes a row (CKT_SMEM_PADDED): Q [BM][D], then
     * per stage K [BN][D] and V [BN][DV] */
    ckt_smem_tile sQ = ckt_smem_tile_make(smem, CKT__FMHA_LAYOUT, D);
#define CKT__FMHA_SK(st) ckt_smem_tile_make(smem + CKT__FMHA_Q_ELEMS + (st) * (CKT__FMHA_K_ELEMS + CKT__FMHA_V_ELEMS), CKT__FMHA_LAYOUT, D)
#define CKT__FMHA_SV(st) ckt_smem_tile_make(smem + CKT__FMHA_Q_ELEMS + (st) * (CKT__FMHA_K_ELEMS + CKT__FMHA_V_ELEMS) + (CKT__FMHA_KV_ONEBUF ? 0 : CKT__FMHA_K_ELEMS), CKT__FMHA_LAYOUT, CKT__FMHA_DV_IN)
#define CKT__FMHA_SVT ckt_smem_tile_make(smem + CKT__FMHA_Q_ELEMS + CKT__FMHA_STAGES * (CKT__FMHA_K_ELEMS + CKT__FMHA_V_ELEMS), CKT_SMEM_PADDED, BN / 2)
/* stage st's row table (ckt/fmha/page.h): K's BN row offsets, then V's */
#define CKT__FMHA_PT(st) ((int64_t *)(void *)((char *)smem + CKT__FMHA_TILES_BYTES) + (st) * 2 * BN)
/* the row table of the tile at n0 into stage st's, from its ids */
#define CKT__FMHA_PT_WRITE(st, ids, n0)                                                                         \
    ckt_fmha_page_table_write(CKT__FMHA_PT(st), ids, pg.page_size, pg.num_pages, a.k_stride_b, a.k_stride_s,     \
                              a.v_stride_b, a.v_stride_s, n0, BN, CKT__FMHA_THREADS, tid, CKT__FMHA_PT_ROWS)
/* K/V tile at the windows' origin into stage st from source src (a
 * constant in the key loop): 0 the contiguous tile, 1 a paged pool
 * (ckt/fmha/page.h: one page id a tile when pages hold whole tiles, else a
 * gather per key row) */
#define CKT__FMHA_LOAD_KV_FROM(src, st)                                                                         \
    do {                                                                                                        \
        if ((src) == 1 && page_tiles) { /* pages hold whole key tiles: one page id a tile */                  \
            const int32_t id_ = ckt_fmha_page_tile_id(&kv, pg.page_size, (int)wk.row0);                         \
            const ckt_window2d pk_ = ckt_fmha_page_tile_window(kp, id_, &kv, pg.page_size, pg.num_pages,         \
                                                               a.k_stride_b, a.k_stride_s, (int)wk.row0, a.hdim_q); \
            const ckt_window2d pv_ = ckt_fmha_page_tile_window(vp, id_, &kv, pg.page_size, pg.num_pages,         \
                                                               a.v_stride_b, a.v_stride_s, (int)wv.row0, a.hdim_v); \
            ckt_smem_tile_load_async(CKT__FMHA_SK(st), &pk_, BN, D, CKT__FMHA_THREADS, tid);                    \
            ckt_smem_tile_load_async(CKT__FMHA_SV(st), &pv_, BN, CKT__FMHA_DV_IN, CKT__FMHA_THREADS, tid);      \
        } else if ((src) == 1 && page_rows) { /* offsets from the stage's row table */                          \
            ckt__fmha_page_table_load_kv(CKT__FMHA_SK(st), CKT__FMHA_SV(st), kp, vp, CKT__FMHA_PT(st), a.hdim_q,  \
                                         a.hdim_v, BN, D, CKT__FMHA_DV_IN, CKT__FMHA_THREADS, tid);               \
        } else if ((src) == 1) {                                                                                \
            ckt_fmha_page_load_kv_async(CKT__FMHA_SK(st), CKT__FMHA_SV(st), kp, vp, &kv, pg.page_size,            \
                                        pg.num_pages, a.k_stride_b, a.k_stride_s, a.v_stride_b, a.v_stride_s,   \
                                        (int)wk.row0, a.hdim_q, a.hdim_v, BN, D, CKT__FMHA_DV_IN, CKT__FMHA_THREADS, tid); \
        } else {                                                                                                \
            ckt_smem_tile_load_async(CKT__FMHA_SK(st), &wk, BN, D, CKT__FMHA_THREADS, tid);                     \
            ckt_smem_tile_load_async(CKT__FMHA_SV(st), &wv, BN, CKT__FMHA_DV_IN, CKT__FMHA_THREADS, tid);       \
        }                                                                                                       \
    } while (0)

/* CKT__FMHA_KV_ONEBUF: the tile's K, or its V, alone into the one buffer
 * (contiguous tensors: the instance has no KV cache) */
#define CKT__FMHA_LOAD_K() ckt_smem_tile_load_async(CKT__FMHA_SK(0), &wk, BN, D, CKT__FMHA_THREADS, tid)
#define CKT__FMHA_LOAD_V() ckt_smem_tile_load_async(CKT__FMHA_SV(0), &wv, BN, DV, CKT__FMHA_THREADS, tid)

    /* pages that hold no whole key tiles and that cut a thread's rows
     * (sizes that are no multiple of the rows a thread copies, RPT: 16 at
     * d128; the others take one page id a thread, ckt__fmha_page_copy):
     * the row tables of the first STAGES tiles (the loop writes each later
     * one a step ahead) */
    const int page_rows = CKT__FMHA_PAGE_TABLE && kv.ids && !page_tiles &&
                          (pg.page_size % ckt_fmha_page_rows_per_thread(BN, D, CKT__FMHA_THREADS) != 0 ||
                           pg.page_size % ckt_fmha_page_rows_per_thread(BN, CKT__FMHA_DV_IN, CKT__FMHA_THREADS) != 0);
    if (page_rows) {
        for (int st = 0; st < CKT__FMHA_STAGES && st < nblocks; st++) {
            int32_t ids_[CKT__FMHA_PT_ROWS];
            ckt_fmha_page_table_ids(ids_, &kv, pg.page_size, n_lo + st * BN, BN, CKT__FMHA_THREADS, tid, CKT__FMHA_PT_ROWS);
            CKT__FMHA_PT_WRITE(st, ids_, n_lo + st * BN);
        }
        ckt_block_sync();
    }
    /* Q and the first K/V tile in flight */
    if (CKT__FMHA_PACK)
        ckt_fmha_pack_load_q_async(sQ, qp, a.q_stride_h, a.q_stride_s, g, sq.sq, m0, a.hdim_q, BM, D, CKT__FMHA_THREADS, tid);
    else
        ckt_smem_tile_load_async(sQ, &wq, BM, D, CKT__FMHA_THREADS, tid);
    if (nblocks > 0 && CKT__FMHA_KV_ONEBUF)
        CKT__FMHA_LOAD_K();
    else if (nblocks > 0)
        CKT__FMHA_LOAD_KV_FROM(kv.ids ? 1 : 0, 0);
    ckt_pipe_commit();
    /* a deeper ring (CKT_FMHA_STAGES > 2): tiles 1 .. STAGES - 2 in flight
     * too, a commit group each (empty past the last tile, so that the loop's
     * wait counts alike) */
    for (int st = 1; st + 1 < CKT__FMHA_STAGES; st++) {
        if (st < nblocks) {
            ckt_window2d_move(&wk, BN, 0);
            ckt_window2d_move(&wv, BN, 0);
            CKT__FMHA_LOAD_KV_FROM(kv.ids ? 1 : 0, st);
        }
        ckt_pipe_commit();
    }

    /* O = 0, m = -inf, l = 0: the accumulator and the running max (log2
     * domain) and partial sum of each of the lane's rows */
    float o_acc[CKT_WARP_ACC_REGS(WM, DVW)];
    float row_m[ROWS], row_l[ROWS];
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(WM, DVW); i++)
        o_acc[i] = 0.0f;
    ckt_fmha_softmax_init(row_m, row_l, WM);

    /* >>the key loop (ckt/fmha/fwd_mainloop_body.h), one copy per K/V source
     * (and, in the _bias kernel, for the contiguous one with and without
     * dropout); drop is a constant in the _kernel and the _drop_kernel */
    const int drop = drop_on == 2 ? a.p_drop > 0.0f : drop_on;
    if (!kv.ids && !drop) {
#define CKT__FMHA_KV_SRC 0
#define CKT__FMHA_DROP 0
#include "ckt/fmha/fwd_mainloop_body.h"
    } else if (!kv.ids) { /* dropout: its own copy, so that the plain loop keeps its registers */
#define CKT__FMHA_KV_SRC 0
#define CKT__FMHA_DROP 1
#include "ckt/fmha/fwd_mainloop_body.h"
    } else {
#define CKT__FMHA_KV_SRC 1
#define CKT__FMHA_DROP drop
#include "ckt/fmha/fwd_mainloop_body.h"
    }
    ckt_cp_async_wait_all(); /* nothing may stay in flight past the block's end */
#if CKT__FMHA_KSPLIT > 1
    /* the KSPLIT warps of the row group merge their softmax states into the
     * first, which stores the rows (GQA-packed: straight from registers) */
    if (!ckt_fmha_softmax_merge_warps(o_acc, row_m, row_l, WM, DVW,
                                      (float *)(void *)smem + warp / CKT__FMHA_KSPLIT * CKT__FMHA_KSPLIT *
                                                                  CKT_FMHA_MERGE_FLOATS(WM, DVW),
                                      warp % CKT__FMHA_KSPLIT, CKT__FMHA_KSPLIT, lane))
        return;
#endif

    /* >>epilogue (ckt/fmha/epilogue.h): O = acc / l (0 for rows that saw no
     * key), staged where it pays in the Q tile's space, free once every warp
     * is past the loop; LSE = (m + log2 l) ln 2 */
    float inv[ROWS];
    ckt_fmha_softmax_finish(inv, row_l, WM);
    if (a.sink && splits <= 1) { /* attention sinks: here, or once in split-KV's combine */
        float sink2[ROWS];
        ckt_fmha_sink_rows(sink2, a.sink, h, wrow0, g, WM, lane);
        ckt_fmha_softmax_sink(inv, row_m, row_l, sink2, WM);
    }
    if (drop) { /* dropout: kept P scaled by 1 / (1 - p) once, here (split-KV: each partial) */
        const ckt_fmha_dropout dr = ckt_fmha_dropout_of(a.p_drop, a.drop_seed, a.drop_offset, a.drop_seed_offset);
        ckt_fmha_dropout_scale_rows(inv, &dr, WM);
    }
    /* the group's first warp stores the LSE; each its columns [vc0, vc0 + DVW) of O */
    const int lse_warp = vc0 == 0;
#if CKT__FMHA_FP8 /* O = (P8 V) descale_v / scale_p / l (the launcher resolved both) */
    CKT_UNROLL
    for (int r = 0; r < ROWS; r++)
        inv[r] *= a.descale_v / a.scale_p;
#endif
    if (splits > 1) { /* a partial: fp32 O and LSE into the workspace (ckt/fmha/splitkv.h) */
        const int64_t r0 = ckt_fmha_splitkv_row(t.split, b, h, 0, a.batch, a.nhead_q, a.seqlen_q);
        float *o_acc_ws = (float *)((char *)a.workspace + ckt_fmha_splitkv_o_offset(splits, a.batch, a.nhead_q, a.seqlen_q));
        if (CKT__FMHA_PACK) { /* heads seqlen_q rows apart */
            ckt_fmha_pack_store_o_f32(o_acc_ws + r0 * a.hdim_v + vc0, (int64_t)a.seqlen_q * a.hdim_v, a.hdim_v, g, sq.sq,
                                      a.hdim_v - vc0, o_acc, inv, wrow0, WM, DVW, lane);
            if (lse_warp)
                ckt_fmha_pack_store_lse((float *)a.workspace + r0, a.seqlen_q, 1, g, sq.sq, row_m, row_l, wrow0, WM, lane);
        } else {
            ckt_fmha_warp_store_o_f32(o_acc_ws + r0 * a.hdim_v + vc0, a.hdim_v, sq.sq, a.hdim_v - vc0, o_acc, inv, wrow0,
                                      WM, DVW, lane);
            if (lse_warp)
                ckt_fmha_warp_store_lse((float *)a.workspace + r0, row_m, row_l, wrow0, sq.sq, WM, lane);
        }
        return;
    }
    if (CKT__FMHA_PACK) { /* rows of g heads: straight from the registers */
        ckt_fmha_pack_store_o(op + vc0, a.o_stride_h, a.o_stride_s, g, sq.sq, a.hdim_v - vc0, o_acc, inv, wrow0, WM,
                              DVW, CKT__FMHA_BF16, lane);
        if (a.lse && lse_warp)
            ckt_fmha_pack_store_lse(a.lse + ckt_fmha_row_offset(a.group_mode, b, h, sq.q_start, a.lse_stride_b, a.lse_stride_h, 1),
                                    a.lse_stride_h, 1, g, sq.sq, row_m, row_l, wrow0, WM, lane);
        return;
    }
    ckt_fmha_block_store_o_cols(op, a.o_stride_s, sq.sq, a.hdim_v, m0, ckt_smem_tile_make(smem, CKT__FMHA_LAYOUT, DV),
                                o_acc, inv, wr, vc0, WM, BM, DV, DVW, CKT__FMHA_THREADS, tid, CKT__FMHA_BF16, lane);
    if (a.lse && lse_warp)
        ckt_fmha_warp_store_lse(a.lse + ckt_fmha_row_offset(a.group_mode, b, h, sq.q_start, a.lse_stride_b, a.lse_stride_h, 1),
                                row_m, row_l, wrow0, sq.sq, WM, lane);
#undef CKT__FMHA_SK
#undef CKT__FMHA_SV
#undef CKT__FMHA_SVT
#undef CKT__FMHA_PT
#undef CKT__FMHA_PT_WRITE
#undef CKT__FMHA_LOAD_KV_FROM
#undef CKT__FMHA_LOAD_K
#undef CKT__FMHA_LOAD_V
}

CKT_KERNEL_BOUNDS(CKT__FMHA_FN(_kernel), ckt_fmha_fwd_args, a, CKT__FMHA_THREADS)
{
    CKT__FMHA_FN(_body)(a, 0, 0);
}

/* fp8 takes neither dropout nor bias (validation refuses them); an
 * instance without one (CKT_FMHA_BIAS / CKT_FMHA_DROPOUT 0) refuses its
 * calls in the launcher, which names the plain kernel for them */
#if !CKT__FMHA_FP8 && CKT__FMHA_HAS_DROP
CKT_KERNEL_BOUNDS(CKT__FMHA_FN(_drop_kernel), ckt_fmha_fwd_args, a, CKT__FMHA_THREADS)
{
    CKT__FMHA_FN(_body)(a, 0, 1);
}
#define CKT__FMHA_DROP_K _drop_kernel
#else
#define CKT__FMHA_DROP_K _kernel
#endif
#if !CKT__FMHA_FP8 && CKT__FMHA_HAS_BIAS
CKT_KERNEL_BOUNDS(CKT__FMHA_FN(_bias_kernel), ckt_fmha_fwd_args, a, CKT__FMHA_THREADS)
{
    CKT__FMHA_FN(_body)(a, 1, CKT__FMHA_HAS_DROP ? 2 : 0);
}
#define CKT__FMHA_BIAS_K _bias_kernel
#else
#define CKT__FMHA_BIAS_K _kernel
#endif

/* >>device: split-KV's combine (ckt/fmha/splitkv.h): one output row a
 * block of CKT_FMHA_COMBINE_THREADS threads, the splits shared out among
 * them */
CKT_KERNEL_BOUNDS(CKT__FMHA_FN(_combine_kernel), ckt_fmha_fwd_args, a, CKT_FMHA_COMBINE_THREADS)
{
    CKT_DYNAMIC_SHARED(float, smem);
    /* launched to overlap the attention kernel's tail (ckt_rt_launch_dependent):
     * its partials are complete and visible past this */
    ckt_grid_dependency_wait();
    const int t = (int)ckt_thread_idx_x();
    const int b = (int)ckt_block_idx_z(), h = (int)ckt_block_idx_y(), i = (int)ckt_block_idx_x();
    const ckt_fmha_seq sq = ckt_fmha_seq_resolve(a.group_mode, a.seqstart_q, a.seqstart_k, a.seqlen_q_ptr,
                                                 a.seqlen_k_ptr, a.seqlen_q, a.seqlen_k, b);
    if (i >= sq.sq)
        return; /* the whole block: a row past the entry's queries */
    const int64_t row = ckt_fmha_splitkv_row(0, b, h, i, a.batch, a.nhead_q, a.seqlen_q);
    const int64_t split_rows = (int64_t)a.batch * a.nhead_q * a.seqlen_q;
    const float *o_acc = (const float *)((const char *)a.workspace +
                                         ckt_fmha_splitkv_o_offset(a.num_splits, a.batch, a.nhead_q, a.seqlen_q));
    uint16_t *out = (uint16_t *)a.o + ckt_fmha_row_offset(a.group_mode, b, h, sq.q_start + i, a.o_stride_b, a.o_stride_h, a.o_stride_s);
    float *lse = a.lse ? a.lse + ckt_fmha_row_offset(a.group_mode, b, h, sq.q_start + i, a.lse_stride_b, a.lse_stride_h, 1) : 0;
    const float sink = a.sink ? a.sink[h] : -INFINITY; /* the partials have none: added once, here */
    ckt_fmha_splitkv_combine_row(out, lse, (const float *)a.workspace, o_acc, split_rows, row, a.num_splits, a.hdim_v,
                                 sink, t, smem, smem + CKT_FMHA_MAX_SPLITS,
                                 smem + CKT_FMHA_MAX_SPLITS + CKT_FMHA_COMBINE_THREADS / 32, CKT__FMHA_BF16);
}

/* >>device: dropout's random bytes for tests (ckt_fmha_fwd_args.randval):
 * one thread a query row of (b, h), every key of the entry, the same Philox
 * calls as the key loop's mask (ckt/fmha/dropout.h); launched after it when
 * randval is given, so that the loop holds no store of its own */
#define CKT__FMHA_RANDVAL_THREADS 64
CKT_KERNEL_BOUNDS(CKT__FMHA_FN(_randval_kernel), ckt_fmha_fwd_args, a, CKT__FMHA_RANDVAL_THREADS)
{
    const int b = (int)ckt_block_idx_z(), h = (int)ckt_block_idx_y();
    const int i = (int)(ckt_block_idx_x() * CKT__FMHA_RANDVAL_THREADS + ckt_thread_idx_x());
    const ckt_fmha_seq sq = ckt_fmha_seq_resolve(a.group_mode, a.seqstart_q, a.seqstart_k, a.seqlen_q_ptr,
                                                 a.seqlen_k_ptr, a.seqlen_q, a.seqlen_k, b);
    if (i >= sq.sq)
        return;
    const ckt_fmha_paging pg = CKT_FMHA_PAGING(a);
    const int sk = CKT__FMHA_KVC ? ckt_fmha_kv_resolve(&pg, sq.sk, b).sk : sq.sk; /* the entry's keys */
    const ckt_fmha_dropout dr = ckt_fmha_dropout_of(a.p_drop, a.drop_seed, a.drop_offset, a.drop_seed_offset);
    /* randval[b][h][i][:] */
    uint8_t *row = a.randval + (int64_t)b * a.randval_stride_b + (int64_t)h * a.randval_stride_h + (int64_t)i * a.randval_stride_s;
    ckt_fmha_dropout_store_row(row, &dr, (uint32_t)b * (uint32_t)a.nhead_q + (uint32_t)h, i, 0, sk);
}

#endif /* CKT__FMHA_HAS_KERNEL */

/* >>host: fits, split count, workspace and launch */

enum {
    CKT__FMHA_FN(_block_m) = CKT__FMHA_BM,
    CKT__FMHA_FN(_block_n) = CKT__FMHA_BN,
    CKT__FMHA_FN(_packs_gqa) = CKT__FMHA_PACK,
    CKT__FMHA_FN(_kv_cache) = CKT__FMHA_KVC,
    CKT__FMHA_FN(_o_dtype) = CKT__FMHA_OUT
};

/* The grid's heads and tile rows per entry: query heads and queries, or
 * packed, kv heads and queries x group size. */
static inline int CKT__FMHA_FN(_grid_heads)(const ckt_fmha_fwd_args *a)
{
    return CKT__FMHA_PACK ? a->nhead_k : a->nhead_q;
}

static inline int CKT__FMHA_FN(_grid_rows)(const ckt_fmha_fwd_args *a)
{
    return CKT__FMHA_PACK ? a->seqlen_q * (a->nhead_q / a->nhead_k) : a->seqlen_q;
}

static inline int CKT__FMHA_FN(_fits)(const ckt_fmha_fwd_args *a)
{
    return CKT__FMHA_SUPPORTED && a && a->dtype == (CKT_FMHA_DTYPE) && (!CKT__FMHA_FP8 || a->o_dtype == (CKT__FMHA_OUT)) &&
           a->hdim_q > 0 && a->hdim_q <= CKT_FMHA_HDIM &&
           a->hdim_v > 0 && a->hdim_v <= CKT__FMHA_DV && a->hdim_q % 8 == 0 && a->hdim_v % 8 == 0 &&
           (CKT__FMHA_KVC || !ckt_fmha_fwd_uses_kv_cache(a)) &&
           (CKT__FMHA_HAS_BIAS || (!a->bias && !a->alibi_slopes)) && (CKT__FMHA_HAS_DROP || !(a->p_drop > 0.0f));
}

/* The split count a call runs with: num_splits when >= 1; 0 (automatic):
 * ckt_fmha_splitkv_heuristic over this instance's tiles and the device's
 * multiprocessors when a workspace is given (with_workspace < 0: a's own;
 * else as the flag says), else 1. */
static inline ckt_status CKT__FMHA_FN(_splits)(const ckt_fmha_fwd_args *a, int with_workspace, int *splits)
{
    *splits = 1;
    if (!a)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "args: NULL");
    if (a->num_splits != 0) {
        *splits = a->num_splits;
        return CKT_SUCCESS;
    }
    if (!(with_workspace < 0 ? a->workspace != NULL : with_workspace) || ckt_fmha_fwd_is_empty(a))
        return CKT_SUCCESS;
    int mps = 1;
    ckt_status st = ckt_rt_multiprocessors(&mps);
    if (st != CKT_SUCCESS)
        return st;
    const int64_t tiles = (int64_t)a->batch * CKT__FMHA_FN(_grid_heads)(a) * CKT_CEIL_DIV(CKT__FMHA_FN(_grid_rows)(a), CKT__FMHA_BM);
    *splits = ckt_fmha_splitkv_heuristic(tiles, mps * CKT__FMHA_BLOCKS_PER_MP, CKT_CEIL_DIV(a->seqlen_k, CKT__FMHA_BN),
                                         CKT_FMHA_AUTO_MAX_SPLITS);
    return CKT_SUCCESS;
}

/* The split count a call with a's fields runs with (see above). */
static inline ckt_status CKT__FMHA_FN(_num_splits)(const ckt_fmha_fwd_args *a, int *splits)
{
    return CKT__FMHA_FN(_splits)(a, -1, splits);
}

/* Bytes of workspace a call with a's fields and a workspace needs (so
 * num_splits 0 is automatic): 0 when it runs unsplit, and 0 when the count
 * cannot be resolved (ckt_last_error() says why). */
static inline size_t CKT__FMHA_FN(_workspace_bytes)(const ckt_fmha_fwd_args *a)
{
    int splits;
    if (CKT__FMHA_FN(_splits)(a, 1, &splits) != CKT_SUCCESS)
        return 0;
    return ckt_fmha_splitkv_workspace_bytes(splits, a->batch, a->nhead_q, a->seqlen_q, a->hdim_v);
}

/* >>the Hopper kernel (ckt/fmha/fwd_sm90_body.h): instances of 16-bit
 * inputs with head dims multiples of 64 up to 256, and the fp8 ones of
 * head dims 64 and 128, on NVIDIA and the emulator's nv profile */
#if (defined(CKT_BACKEND_NVIDIA) || (defined(CKT_BACKEND_CPU) && CKT_WARP_SIZE == 32)) && !CKT__FMHA_PACK &&       \
    CKT__FMHA_VSPLIT == 1 &&                                                                                       \
    ((!CKT__FMHA_FP8 && CKT__FMHA_D % 64 == 0 && CKT__FMHA_DV % 64 == 0 && CKT__FMHA_D <= 256 &&                \
      CKT__FMHA_DV <= 256) ||                                                                                     \
     (CKT__FMHA_FP8 && (CKT__FMHA_DV == 64 || CKT__FMHA_DV == 128) && CKT__FMHA_D * 2 == CKT__FMHA_DV))
#define CKT__FMHA_SM90 1
/* d64 (plain 16-bit instances): a second, narrow kernel of 128-row tiles
 * for short causal calls (fwd_sm90_body.h; not where a knob sets the
 * consumer warpgroups) */
#if CKT__FMHA_D == 64 && CKT__FMHA_DV == 64 && !CKT__FMHA_FP8 && !CKT__FMHA_KVC && !defined(CKT_FMHA_SM90_CONSUMERS)
#define CKT__FMHA_SM90N 1
#else
#define CKT__FMHA_SM90N 0
#endif
#include "ckt/fmha/fwd_sm90_body.h"
#if CKT__FMHA_SM90N
#define CKT__F9_NARROW 1
#include "ckt/fmha/fwd_sm90_body.h"
#endif
#else
#define CKT__FMHA_SM90 0
#define CKT__FMHA_SM90N 0
#endif

static inline ckt_status CKT__FMHA_FN(_launch)(const ckt_fmha_fwd_args *a, ckt_stream stream)
{
    if (!CKT__FMHA_SUPPORTED) /* before the arguments: no call can run */
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "fmha: head dims %d/%d do not fit the CDNA LDS (64 KiB) in the "
                         "forward (up to 512/512)", CKT__FMHA_D, CKT__FMHA_DV);
    ckt_status st = ckt_fmha_fwd_validate(a, (CKT_FMHA_DTYPE), CKT_FMHA_HDIM, CKT__FMHA_DV);
    if (st != CKT_SUCCESS)
        return st;
#if CKT__FMHA_FP8
    if (a->o_dtype != (CKT__FMHA_OUT))
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "o_dtype: %s, this instance writes %s", ckt_dtype_name(a->o_dtype),
                         ckt_dtype_name(CKT__FMHA_OUT));
#if !CKT__FMHA_HAS_KERNEL
    return ckt__fail(CKT_ERROR_UNSUPPORTED, "dtype: fp8 runs on NVIDIA sm_89+ (mma.sync e4m3), AMD gfx940 (MFMA fp8) "
                     "and the emulator; this target has no fp8 warp MMA");
#endif
#if defined(CKT_BACKEND_NVIDIA) && !defined(CKT_DEVICE_PASS)
    { /* the code the device runs: sm_80's build of the kernel has no fp8 MMA */
        cudaFuncAttributes fa;
        if (cudaFuncGetAttributes(&fa, (const void *)CKT_KERNEL_REF(CKT__FMHA_FN(_kernel))) != cudaSuccess)
            return ckt__fail(CKT_ERROR_UNSUPPORTED, "dtype: fp8: no kernel image for this device");
        if (fa.binaryVersion < 89)
            return ckt__fail(CKT_ERROR_UNSUPPORTED, "dtype: fp8 needs mma.sync e4m3 (sm_89+); this device runs the "
                             "kernel's sm_%d build", fa.binaryVersion);
    }
#elif defined(CKT_BACKEND_AMD) && !defined(CKT_DEVICE_PASS)
    st = ckt_fmha_fp8_check_device(); /* gfx90a's build of the kernel has no fp8 MFMA */
    if (st != CKT_SUCCESS)
        return st;
#endif
    /* strides and hdim_q in 16-bit units, the scales resolved, with what
     * the target's MMA makes of an operand (gfx940: half) folded in
     * (ckt/fmha/fp8.h) */
    ckt_fmha_fwd_args f8;
    ckt_fmha_fp8_kernel_args(&f8, a, CKT_E4M3_MMA_OPERAND_SCALE);
    a = &f8;
#endif
    if (!CKT__FMHA_KVC && ckt_fmha_fwd_uses_kv_cache(a))
        return ckt__fail(CKT_ERROR_UNSUPPORTED,
                         "%s: set, but this instance was compiled without the KV cache (CKT_FMHA_KV_CACHE 0)",
                         a->page_size ? "page_size" : a->cache_batch_idx ? "cache_batch_idx" : "num_splits / workspace");
    if (!CKT__FMHA_HAS_BIAS && (a->bias || a->alibi_slopes))
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "%s: set, but this instance was compiled without the bias kernel "
                         "(CKT_FMHA_BIAS 0)", a->bias ? "bias" : "alibi_slopes");
    if (!CKT__FMHA_HAS_DROP && a->p_drop > 0.0f)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "p_drop: %g, but this instance was compiled without the dropout "
                         "kernel (CKT_FMHA_DROPOUT 0)", (double)a->p_drop);
#if CKT__FMHA_HAS_KERNEL && CKT__FMHA_SUPPORTED
    if (ckt_fmha_fwd_is_empty(a))
        return CKT_SUCCESS; /* nothing to compute */
    ckt_fmha_fwd_args k = *a; /* with the resolved split count */
    st = CKT__FMHA_FN(_num_splits)(a, &k.num_splits);
    if (st != CKT_SUCCESS)
        return st;
    if (k.num_splits > 1) {
        const size_t need = ckt_fmha_splitkv_workspace_bytes(k.num_splits, a->batch, a->nhead_q, a->seqlen_q, a->hdim_v);
        if (!a->workspace)
            return ckt__fail(CKT_ERROR_NULL_POINTER, "workspace: NULL, but num_splits %d needs %zu bytes", k.num_splits, need);
        if (a->workspace_bytes < need)
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "workspace_bytes: %zu, but %d splits need %zu",
                             a->workspace_bytes, k.num_splits, need);
        if ((int64_t)a->batch * k.num_splits > 65535)
            return ckt__fail(CKT_ERROR_UNSUPPORTED, "num_splits: %d splits x batch %d exceed the grid's 65535",
                             k.num_splits, a->batch);
    }
#if CKT__FMHA_SM90
    { /* calls the Hopper kernel takes (on an sm_90 device) go there */
        int ran;
#if CKT__FMHA_SM90N
        if (ckt_fmha_sm90_narrow(ckt_fmha_mask_is_causal(k.mask) && k.seqlen_q <= 4096))
            st = CKT__FMHA_FN(_sm90n_run)(&k, stream, &ran);
        else
#endif
            st = CKT__FMHA_FN(_sm90_run)(&k, stream, &ran);
        if (ran)
            return st;
    }
#endif
    st = ckt_rt_launch(a->bias || a->alibi_slopes ? CKT_KERNEL_REF(CKT__FMHA_FN(CKT__FMHA_BIAS_K))
                       : a->p_drop > 0.0f             ? CKT_KERNEL_REF(CKT__FMHA_FN(CKT__FMHA_DROP_K))
                                                      : CKT_KERNEL_REF(CKT__FMHA_FN(_kernel)),
                       ckt_fmha_fwd_grid(a->batch, CKT__FMHA_FN(_grid_heads)(a), CKT__FMHA_FN(_grid_rows)(a), CKT__FMHA_BM,
                                         k.num_splits),
                       ckt_dim3_make(CKT__FMHA_THREADS, 1, 1), CKT__FMHA_SMEM_BYTES, stream, &k);
    if (st == CKT_SUCCESS && a->randval && a->p_drop > 0.0f) /* dropout's random bytes, for tests */
        st = ckt_rt_launch(CKT_KERNEL_REF(CKT__FMHA_FN(_randval_kernel)),
                           ckt_dim3_make((unsigned)CKT_CEIL_DIV(a->seqlen_q, CKT__FMHA_RANDVAL_THREADS),
                                         (unsigned)a->nhead_q, (unsigned)a->batch),
                           ckt_dim3_make(CKT__FMHA_RANDVAL_THREADS, 1, 1), 0, stream, &k);
    if (st != CKT_SUCCESS || k.num_splits <= 1)
        return st;
    /* the combine's launch and its blocks' start overlap this kernel's tail */
    return ckt_rt_launch_dependent(CKT_KERNEL_REF(CKT__FMHA_FN(_combine_kernel)),
                         ckt_dim3_make((unsigned)a->seqlen_q, (unsigned)a->nhead_q,
                                       (unsigned)a->batch),
                         ckt_dim3_make(CKT_FMHA_COMBINE_THREADS, 1, 1), CKT_FMHA_COMBINE_SMEM_BYTES, stream, &k);
#else
    (void)stream;
    return ckt__fail(CKT_ERROR_UNSUPPORTED, "%s: this target has no warp MMA", "fmha");
#endif
}

/* >>consumed parameters */
#undef CKT_FMHA_NAME
#undef CKT_FMHA_DTYPE
#undef CKT_FMHA_HDIM
#undef CKT_FMHA_HDIM_V
#undef CKT_FMHA_O_DTYPE
#undef CKT__FMHA_FP8
#undef CKT__FMHA_OUT
#undef CKT__FMHA_DV_IN
#undef CKT__FMHA_VT_ELEMS
#undef CKT__FMHA_MMA_IN
#undef CKT__FMHA_HAS_KERNEL
#undef CKT__FMHA_SM90
#undef CKT__FMHA_SM90N
#undef CKT__FMHA_DROP_K
#undef CKT__FMHA_BIAS_K
#undef CKT__FMHA_D
#undef CKT__FMHA_DV
#undef CKT__FMHA_DVW
#undef CKT__FMHA_VSPLIT
#undef CKT__FMHA_KSPLIT
#undef CKT__FMHA_KSPLIT_OK
#undef CKT__FMHA_BNW
#undef CKT__FMHA_TILES_BYTES
#undef CKT__FMHA_PAGE_TABLE
#undef CKT__FMHA_PT_ROWS
#undef CKT__FMHA_PT_BYTES
#undef CKT__FMHA_MERGE_BYTES
#undef CKT__FMHA_SUPPORTED
#undef CKT__FMHA_KV_ONEBUF
#undef CKT__FMHA_LAYOUT
#undef CKT_FMHA_VSPLIT
#undef CKT__FMHA_WARPS
#undef CKT__FMHA_THREADS
#undef CKT__FMHA_WM
#undef CKT__FMHA_BN
#undef CKT__FMHA_BM
#undef CKT__FMHA_S_UNROLL
#undef CKT__FMHA_Q_ELEMS
#undef CKT__FMHA_K_ELEMS
#undef CKT__FMHA_V_ELEMS
#undef CKT__FMHA_STAGES
#undef CKT__FMHA_SMEM_BYTES
#undef CKT__FMHA_BF16
#undef CKT__FMHA_RESCALE_ALWAYS
#undef CKT__FMHA_RANDVAL_THREADS
#undef CKT__FMHA_BLOCKS_PER_MP
#undef CKT__FMHA_SMEM_PER_MP
#undef CKT__FMHA_PACK
#undef CKT_FMHA_PACK_GQA
#undef CKT__FMHA_KVC
#undef CKT_FMHA_KV_CACHE
#undef CKT__FMHA_HAS_BIAS
#undef CKT_FMHA_BIAS
#undef CKT__FMHA_HAS_DROP
#undef CKT_FMHA_DROPOUT
#undef CKT_FMHA_WARPS /* the tuning knobs are per instance too */
#undef CKT_FMHA_WARP_ROWS
#undef CKT_FMHA_KSPLIT
#undef CKT_FMHA_STAGES
#undef CKT_FMHA_BLOCK_N
#undef CKT_FMHA_S_UNROLL
#undef CKT_FMHA_SMEM_SWIZZLE
#undef CKT__FMHA_FN
