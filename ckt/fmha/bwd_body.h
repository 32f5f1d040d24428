/* ckt/fmha/bwd_body.h — the FMHA backward, instantiated by define-then-include:
 *
 *   #include "ckt/fmha.h"
 *   #define CKT_FMHA_NAME    my_attn_bwd_d128_bf16   (required) prefix of what is defined
 *   #define CKT_FMHA_DTYPE   CKT_BF16                (required) CKT_F16 or CKT_BF16
 *   #define CKT_FMHA_HDIM    128                     (required) q/k head dim: 32..512, multiple of 32
 *   #define CKT_FMHA_HDIM_V  128                     (optional, default HDIM) v/o head dim
 *   #include CKT_FMHA_BWD_BODY
 *
 * defines
 *   ckt_status NAME_plan(ckt_fmha_bwd_plan *plan, const ckt_fmha_bwd_traits *t);
 *   ckt_status NAME_run(const ckt_fmha_bwd_plan *plan, const ckt_fmha_bwd_args *a, ckt_stream s);
 *   int        NAME_fits(const ckt_fmha_bwd_args *a);
 * and the kernels NAME_dot_do_o_kernel, NAME_dq_dk_dv_kernel (and _dq_dk_dv_drop_kernel with
 * dropout, _dq_dk_dv_bias_kernel with bias or ALiBi; NAME_dbias_zero_kernel before it with dbias,
 * NAME_dbias_reduce_kernel after it with a broadcast dbias),
 * NAME_convert_dq_kernel and NAME_dsink_kernel (attention sinks), then #undefs the parameters (several instances per
 * translation unit are fine). Arguments: ckt_fmha_bwd_args (ckt/fmha/args.h);
 * workspace: ckt/fmha/workspace.h (NAME_plan, then ckt_fmha_bwd_prepare or
 * _prepare_async, then NAME_run).
 *
 * The algorithm is FlashAttention-2's backward. Three stages:
 *   1. dot_do_o:   D[b][h][i] = dO[i] . O[i]; zeroes the dQ accumulator.
 *   2. dq_dk_dv:   a work unit is (batch entry b, kv head hk, key tile of BN
 *                  keys). Its block keeps K and V of the tile in shared memory
 *                  and dK, dV in registers, and walks every query head of hk
 *                  and every query tile of BM rows the mask lets see the keys:
 *                    S^T  = K Q^T              (recomputed logits; + B^T with bias / ALiBi,
 *                                              ckt/fmha/bias.h: the _bias kernel)
 *                    P^T  = exp2(S^T * log2e*scale - LSE*log2e)   (0 where masked)
 *                    dP^T = V dO^T
 *                    dS^T = P^T * (dP^T - D)   (* (1 - tanh^2) with a soft-cap)
 *                    (dropout: dS^T = P^T * (Z^T / (1-p) * dP^T - D), P^T <- P^T Z^T / (1-p)
 *                    for dV: the forward's mask Z regenerated, ckt/fmha/dropout.h)
 *                    dV  += P^T dO,  dK += dS^T Q,  dQ_acc += dS K
 *                  P^T and dS^T go through shared memory (each product has
 *                  its own warp layout). dK is scaled once at the end.
 *   3. convert_dq: dQ = scale * sum of the dQ slots (in order), to fp16/bf16.
 *   (4. dsink:     with attention sinks, dsink[h] = -sum exp(sink[h] - LSE) D
 *                  over every row of head h, a fixed-order reduction. The
 *                  sinks change nothing else: LSE already holds them.)
 *   (dbias:        with bias and dbias, dbias = dS, stored by the _bias kernel
 *                  where it computes dS; dbias_zero before it zeroes the rest.
 *                  A broadcast dbias (a zero batch or head stride): both write
 *                  the workspace's dS section instead, and dbias_reduce sums it
 *                  over the broadcast entries / heads in a fixed order.)
 * Deterministic mode: a persistent grid whose blocks own contiguous unit
 * ranges (the plan's partition); a block adds its dQ contributions to its own
 * slot without atomics. Otherwise one block per unit, dQ by fp32 atomics.
 */

/* >>parameters */
#ifndef CKT_FMHA_NAME
#error "ckt/fmha/bwd_body.h: define CKT_FMHA_NAME (the instance's name prefix) before including the body"
#endif
#ifndef CKT_FMHA_DTYPE
#error "ckt/fmha/bwd_body.h: define CKT_FMHA_DTYPE as CKT_F16 or CKT_BF16"
#endif
#ifndef CKT_FMHA_HDIM
#error "ckt/fmha/bwd_body.h: define CKT_FMHA_HDIM (32, 64, 96, 128, 192, 256 or 512)"
#endif
#ifndef CKT_FMHA_HDIM_V
#define CKT_FMHA_HDIM_V CKT_FMHA_HDIM
#endif

#include "ckt/fmha/args.h"
#include "ckt/fmha/dropout.h"
#include "ckt/fmha/bias.h"
#include "ckt/fmha/mask.h"
#include "ckt/fmha/schedule.h"
#include "ckt/fmha/seqlen.h"
#include "ckt/fmha/softmax.h"
#include "ckt/fmha/validate.h"
#include "ckt/fmha/workspace.h"
#include "ckt/host/runtime.h"
#include "ckt/tile/mma.h"
#include "ckt/tile/pipeline.h"
#include "ckt/tile/view.h"

#include <math.h>

#define CKT__FB_CAT2(a, b) a##b
#define CKT__FB_CAT(a, b) CKT__FB_CAT2(a, b)
#define CKT__FB_FN(suffix) CKT__FB_CAT(CKT_FMHA_NAME, suffix)

#define CKT__FB_D CKT_FMHA_HDIM
#define CKT__FB_DV CKT_FMHA_HDIM_V
#define CKT__FB_BF16 ((CKT_FMHA_DTYPE) == CKT_BF16)

/* >>tile shape
 * BN keys per work unit, BM query rows per step, W warps. Every product has
 * its own warp grid (below). Shared memory holds K [BN][D], V [BN][DV], the
 * Q [BM][D] and dO [BM][DV] tiles (two stages where copies are asynchronous
 * and they fit), P^T and dS^T [BN][BM], and LSE / D of the BM rows.
 *   NVIDIA: 8 warps; BN = 128 for head dims <= 128, 64 up to 256, else 32 (dK
 *   and dV of BN keys live in registers: 128 a lane at d512 with BN = 32, as
 *   at d256 with BN = 64); BM = 128 for head dims <= 64, 64 up to 256, else 32
 *   (Q and dO of a stage: 2 x 32 x 520 elements at d512; two stages on sm_90,
 *   200 KiB, one on sm_80, 133 KiB).
 *   CDNA (64 KiB of LDS, MFMA tiles of 32): head dims <= 64: 4 wavefronts,
 *   BN = BM = 64; <= 128: 2 wavefronts, BN = 64, BM = 32; <= 192: 1 wavefront,
 *   BN = BM = 32. Head dim 256 does not fit the LDS: no CDNA instance. */
#if defined(CKT_HAS_MFMA)
#define CKT__FB_TM 32 /* MFMA 32x32: rows and columns of a warp tile */
#define CKT__FB_TN 32
#define CKT__FB_MAXD (CKT__FB_D > CKT__FB_DV ? CKT__FB_D : CKT__FB_DV)
#ifndef CKT_FMHA_BWD_WARPS
#define CKT_FMHA_BWD_WARPS (CKT__FB_MAXD <= 64 ? 4 : CKT__FB_MAXD <= 128 ? 2 : 1)
#endif
#ifndef CKT_FMHA_BWD_BLOCK_N
#define CKT_FMHA_BWD_BLOCK_N (CKT__FB_MAXD <= 128 ? 64 : 32)
#endif
#ifndef CKT_FMHA_BWD_BLOCK_M
#define CKT_FMHA_BWD_BLOCK_M (CKT__FB_MAXD <= 64 ? 64 : 32)
#endif
#define CKT__FB_SUPPORTED (CKT__FB_MAXD <= 192)
#else
#define CKT__FB_TM 16 /* mma.sync m16; n in pairs of n8 (ldmatrix.x4) */
#define CKT__FB_TN 16
#ifndef CKT_FMHA_BWD_WARPS
#define CKT_FMHA_BWD_WARPS 8
#endif
#ifndef CKT_FMHA_BWD_BLOCK_N
#define CKT_FMHA_BWD_BLOCK_N (CKT__FB_D <= 128 && CKT__FB_DV <= 128 ? 128 : CKT__FB_D <= 256 && CKT__FB_DV <= 256 ? 64 : 32)
#endif
#ifndef CKT_FMHA_BWD_BLOCK_M /* 128 query rows at d64 (H200: 169 -> 177 TFLOPS; no gain above) */
#define CKT_FMHA_BWD_BLOCK_M (CKT__FB_D <= 64 && CKT__FB_DV <= 64 ? 128 : CKT__FB_D <= 256 && CKT__FB_DV <= 256 ? 64 : 32)
#endif
#define CKT__FB_SUPPORTED 1
#endif
#define CKT__FB_W CKT_FMHA_BWD_WARPS
#define CKT__FB_T (CKT__FB_W * CKT_WARP_SIZE)
#define CKT__FB_BN CKT_FMHA_BWD_BLOCK_N
#define CKT__FB_BM CKT_FMHA_BWD_BLOCK_M
/* k-steps per trip of the MMA loops (0: full unrolling; measured on H200 at
 * d128: 2 per trip 175, full 183 TFLOPS) */
#ifndef CKT_FMHA_BWD_UNROLL
#if defined(CKT_HAS_MFMA)
#define CKT_FMHA_BWD_UNROLL 1 /* CDNA: full unrolling hoists every LDS read and spills (as in the forward) */
#else
#define CKT_FMHA_BWD_UNROLL 0
#endif
#endif
#if CKT_FMHA_BWD_UNROLL > 0
#define CKT__FB_KUNROLL CKT_UNROLL_BY(CKT_FMHA_BWD_UNROLL)
#else
#define CKT__FB_KUNROLL CKT_UNROLL
#endif
/* the products over the query tile (dV, dK, dQ): their own knob (NVIDIA:
 * 2 k-steps a trip; H200 d128 b4 h16 s4096: full 246, 2 a trip 249 TFLOPS,
 * deterministic 220 -> 233; at d64 full unrolling, with the late copies of
 * CKT__FB_LATE below: 1.00-1.02x over 2 a trip, ptxas spilling 16 -> 0
 * bytes) */
#ifndef CKT_FMHA_BWD_UNROLL_D
#if defined(CKT_HAS_MFMA)
#define CKT_FMHA_BWD_UNROLL_D CKT_FMHA_BWD_UNROLL
#else
#define CKT_FMHA_BWD_UNROLL_D (CKT__FB_D <= 64 && CKT__FB_DV <= 64 ? 0 : 2)
#endif
#endif

#if CKT_FMHA_BWD_UNROLL_D > 0
#define CKT__FB_KUNROLL_D CKT_UNROLL_BY(CKT_FMHA_BWD_UNROLL_D)
#else
#define CKT__FB_KUNROLL_D CKT_UNROLL
#endif
/* The lean step (NVIDIA): per-unit base pointers for Q, dO, LSE and D that a
 * step offsets by its head and row (no window made a step), the mask's full
 * query tiles as an interval computed once a unit, guards that are constants
 * where every warp takes part in a product, and under a causal mask the long
 * units first (ckt_fmha_bwd_unit_of_block). H100 d128 s4096: 1.27 G issued
 * instructions before (FlashAttention-2: 1.07 G), ~1.14 G for an earlier
 * version of these changes; H200: 1.05-1.16x faster (docs/fmha_bwd.md). CDNA keeps the plain step: there
 * the lean one raised gfx90a d128 from 370/114 to 512/256 VGPR/AGPR, with
 * scratch. */
#if defined(CKT_HAS_MFMA)
#define CKT__FB_LEAN 0
#else
#define CKT__FB_LEAN 1
#endif

/* Whether the lean step copies a step's LSE and D rows with cp.async
 * beside its Q and dO tiles (1), or loads them into registers and stores
 * them after the S^T / dP^T products (0). A tuning knob, CKT_FMHA_BWD_ROWS_ASYNC;
 * measured on the H200 (mma.sync kernel, bf16, s 2048-16384, 1 against 0):
 * d64 1.02-1.04x non-causal and 1.06-1.14x deterministic, d128 non-causal
 * 0.97-0.98x (deterministic 0.98-1.06x over two runs), so from d128 the loads stay. */
#if defined(CKT_FMHA_BWD_ROWS_ASYNC)
#define CKT__FB_RASYNC (CKT__FB_LEAN && CKT_FMHA_BWD_ROWS_ASYNC)
#else
#define CKT__FB_RASYNC (CKT__FB_LEAN && CKT__FB_D <= 64)
#endif

/* Whether a step issues the next step's copies (two stages) after its dV /
 * dK products, just before dQ (1), or at its start (0). A tuning knob,
 * CKT_FMHA_BWD_ISSUE_LATE. At the start, ptxas reused the copies' address
 * registers at once and the next instructions waited for the copies to read
 * them (ncu, H200: 5.7% of the stall samples at d64 s2048); after dV / dK
 * the products' ldmatrix reads have drained. Measured on the H200 (mma.sync
 * kernel, bf16, s 2048-16384, 1 against 0): d64 1.02-1.04x in both modes
 * (with UNROLL_D above); d128 1.03-1.05x, deterministic 0.98-1.04x, its
 * deterministic cost held <= 11% by the lane slots' initialization in the
 * kernel (dq_first below). Issuing after the S^T / dP^T products
 * (0.89-0.99x) or after the barrier that follows them (1.00x) gained
 * nothing. */
#ifdef CKT_FMHA_BWD_ISSUE_LATE
#define CKT__FB_LATE CKT_FMHA_BWD_ISSUE_LATE
#else
#define CKT__FB_LATE 1
#endif

/* dQ is computed in column chunks of at most 128 (registers) */
#define CKT__FB_QC (CKT__FB_D > 128 ? 128 : CKT__FB_D)

/* Warp grid of an M x N product over W warps: GM x GN = W warps with warp
 * tiles as square as the tile counts allow (fewest fragment loads per MMA:
 * a warp loads WM/16 + WN/16 operand blocks per k-step for WM*WN/128 MMAs).
 * When no grid uses every warp evenly: as many warps along M as its tiles
 * allow, then a divisor of N's tiles along N; the other warps idle in that
 * product. */
#define CKT__FB_OK(M, N, g)                                                                                  \
    (CKT__FB_W % (g) == 0 && ((M) / CKT__FB_TM) % (g) == 0 && ((N) / CKT__FB_TN) % (CKT__FB_W / (g)) == 0)
#define CKT__FB_COST(M, N, g) (CKT__FB_OK(M, N, g) ? (M) / (g) + (N) * (g) / CKT__FB_W : (1 << 20))
#define CKT__FB_MIN2(M, N, a, b) (CKT__FB_COST(M, N, a) <= CKT__FB_COST(M, N, b) ? (a) : (b))
#define CKT__FB_BEST(M, N) CKT__FB_MIN2(M, N, CKT__FB_MIN2(M, N, 4, 2), CKT__FB_MIN2(M, N, 8, 1))
#define CKT__FB_GM_ANY(M) ((M) / CKT__FB_TM < CKT__FB_W ? (M) / CKT__FB_TM : CKT__FB_W)
#define CKT__FB_GN_CAP(M) (CKT__FB_W / CKT__FB_GM_ANY(M))
#define CKT__FB_GN_ANY(M, N)                                                                                 \
    (((N) / CKT__FB_TN) % 8 == 0 && CKT__FB_GN_CAP(M) >= 8   ? 8                                           \
     : ((N) / CKT__FB_TN) % 4 == 0 && CKT__FB_GN_CAP(M) >= 4 ? 4                                           \
     : ((N) / CKT__FB_TN) % 2 == 0 && CKT__FB_GN_CAP(M) >= 2 ? 2                                           \
                                                             : 1)
#define CKT__FB_GM(M, N) (CKT__FB_OK(M, N, CKT__FB_BEST(M, N)) ? CKT__FB_BEST(M, N) : CKT__FB_GM_ANY(M))
#define CKT__FB_GN(M, N)                                                                                     \
    (CKT__FB_OK(M, N, CKT__FB_BEST(M, N)) ? CKT__FB_W / CKT__FB_BEST(M, N) : CKT__FB_GN_ANY(M, N))

/* shared memory, 16-bit elements: at d128 rows padded by 16 bytes
 * (CKT_SMEM_PADDED: ldmatrix free of bank conflicts, and addresses linear
 * in the column, so the unrolled loops use immediate offsets; measured 5%
 * faster than the swizzle on H200); at d64 swizzled (CKT_SMEM_SWIZZLE:
 * cp.async into padded rows asks L2 for 1.5x the sectors, docs/tile.md;
 * H200 0.5-1.6% faster at all 16 points of the bf16 grid, 2026-11-29) */
#if defined(CKT_FMHA_BWD_LAYOUT) /* tuning knob */
#define CKT__FB_LAYOUT CKT_FMHA_BWD_LAYOUT
#elif CKT__FB_D == 64 && CKT__FB_DV == 64 && defined(CKT_HAS_MMA_SYNC) /* swizzled rows: 128 bytes */
#define CKT__FB_LAYOUT CKT_SMEM_SWIZZLE
#else
#define CKT__FB_LAYOUT CKT_SMEM_PADDED
#endif
#define CKT__FB_K_ELEMS CKT_SMEM_ELEMS(CKT__FB_LAYOUT, CKT__FB_BN, CKT__FB_D, 2)
#define CKT__FB_V_ELEMS CKT_SMEM_ELEMS(CKT__FB_LAYOUT, CKT__FB_BN, CKT__FB_DV, 2)
#define CKT__FB_Q_ELEMS CKT_SMEM_ELEMS(CKT__FB_LAYOUT, CKT__FB_BM, CKT__FB_D, 2)
#define CKT__FB_DO_ELEMS CKT_SMEM_ELEMS(CKT__FB_LAYOUT, CKT__FB_BM, CKT__FB_DV, 2)
#define CKT__FB_P_ELEMS CKT_SMEM_ELEMS(CKT__FB_LAYOUT, CKT__FB_BN, CKT__FB_BM, 2)
#define CKT__FB_ROWS_ELEMS (4 * CKT__FB_BM) /* LSE and D, fp32, as 16-bit units */
#define CKT__FB_STAGE_ELEMS (CKT__FB_Q_ELEMS + CKT__FB_DO_ELEMS + CKT__FB_ROWS_ELEMS)
#define CKT__FB_FIXED_ELEMS (CKT__FB_K_ELEMS + CKT__FB_V_ELEMS + 2 * CKT__FB_P_ELEMS)
/* Q/dO stages: 2 where copies are asynchronous and two fit the shared memory
 * of the target (sm_90: 227 KiB, sm_80: 163 KiB), else 1. The device code
 * of each architecture has its own count; the host picks the matching size
 * at launch (CKT__FB_FN(_smem_bytes)). */
#define CKT__FB_SMEM_FOR(stages) ((size_t)(CKT__FB_FIXED_ELEMS + (stages)*CKT__FB_STAGE_ELEMS) * 2)
#define CKT__FB_STAGES_FOR(limit) (CKT__FB_SMEM_FOR(2) <= (size_t)(limit) ? 2 : 1)
#define CKT__FB_SMEM_SM80 (163 * 1024)
#define CKT__FB_SMEM_SM90 (227 * 1024)
#if defined(CKT_FMHA_BWD_STAGES) /* tuning knob */
#define CKT__FB_STAGES CKT_FMHA_BWD_STAGES
#elif defined(CKT_HAS_CP_ASYNC) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define CKT__FB_STAGES CKT__FB_STAGES_FOR(CKT__FB_SMEM_SM80)
#elif defined(CKT_HAS_CP_ASYNC)
#define CKT__FB_STAGES CKT__FB_STAGES_FOR(CKT__FB_SMEM_SM90)
#else
#define CKT__FB_STAGES 1
#endif

CKT_STATIC_ASSERT(CKT__FB_D % 32 == 0 && CKT__FB_D >= 32 && CKT__FB_D <= 512,
                  "CKT_FMHA_HDIM must be a multiple of 32 in [32, 512] (smaller head dims run padded)");
CKT_STATIC_ASSERT(CKT__FB_DV % 32 == 0 && CKT__FB_DV >= 32 && CKT__FB_DV <= 512,
                  "CKT_FMHA_HDIM_V must be a multiple of 32 in [32, 512]");
CKT_STATIC_ASSERT(CKT__FB_STAGES == 1 || CKT__FB_STAGES == 2, "CKT_FMHA_BWD_STAGES must be 1 or 2 (one step of prefetch)");
CKT_STATIC_ASSERT(CKT__FB_BM <= CKT__FB_T, "CKT_FMHA_BWD_BLOCK_M must not exceed the block's threads (one row each)");
CKT_STATIC_ASSERT(CKT__FB_BN % CKT__FB_TM == 0 && CKT__FB_BM % CKT__FB_TM == 0,
                  "CKT_FMHA_BWD_BLOCK_N and _BLOCK_M must be multiples of the MMA tile (16 NVIDIA, 32 CDNA)");

/* The wgmma kernel (ckt/fmha/bwd_sm90_body.h) for the instances whose
 * default tile it takes: NVIDIA (its body on sm_90a) and the emulator's nv
 * profile, 8 warps, BN 128, head dims 128 / 128 (BM 64) or 64 / 64 (BM 128). */
#if (defined(CKT_BACKEND_NVIDIA) || (defined(CKT_BACKEND_CPU) && CKT_WARP_SIZE == 32)) && CKT__FB_W == 8 &&         \
    CKT__FB_BN == 128 &&                                                                                            \
    ((CKT__FB_D == 128 && CKT__FB_DV == 128 && CKT__FB_BM == 64) || (CKT__FB_D == 64 && CKT__FB_DV == 64 && CKT__FB_BM == 128))
#define CKT__FB_WG 1
#include "ckt/fmha/sm90.h"
#else
#define CKT__FB_WG 0
#endif

/* threads per row of the row kernels (dot_do_o, convert_dq): 8 */
#define CKT__FB_ROW_LANES 8
#define CKT__FB_ROW_THREADS 256
#define CKT__FB_ROWS_PER_BLOCK (CKT__FB_ROW_THREADS / CKT__FB_ROW_LANES)

#if (defined(CKT_HAS_MMA_SYNC) || defined(CKT_HAS_MFMA))

/* >>device: shared helpers of every backward instance */

#ifndef CKT__FMHA_BWD_COMMON_DEFINED
#define CKT__FMHA_BWD_COMMON_DEFINED

/* The workspace's metadata, or NULL when it is not usable for this call
 * (not prepared, a packing error, or smaller than the lengths need): the
 * kernels then write nothing, and never read or write out of bounds. */
CKT_INLINE CKT_DEVICE const ckt_fmha_bwd_meta *ckt__fmha_bwd_meta(const ckt_fmha_bwd_args *a)
{
    const ckt_fmha_bwd_meta *m = (const ckt_fmha_bwd_meta *)a->workspace;
    if (!m || m->magic != CKT_FMHA_BWD_META_MAGIC || m->status != 0 || (size_t)m->need_bytes > a->workspace_bytes ||
        m->batch != a->batch || m->nhead_q != a->nhead_q || m->nhead_k != a->nhead_k)
        return (const ckt_fmha_bwd_meta *)0;
    return m;
}

CKT_INLINE CKT_DEVICE ckt_fmha_seq ckt__fmha_bwd_seq(const ckt_fmha_bwd_args *a, int b)
{
    return ckt_fmha_seq_resolve(a->group_mode, a->seqstart_q, a->seqstart_k, a->seqlen_q_ptr, a->seqlen_k_ptr,
                                a->seqlen_q, a->seqlen_k, b);
}

CKT_INLINE CKT_DEVICE float ckt__fmha_bwd_load16(const uint16_t *p, int bf16)
{
    ckt_f16 h;
    ckt_bf16 g;
    h.bits = *p;
    g.bits = *p;
    return bf16 ? ckt_f32_from_bf16(g) : ckt_f32_from_f16(h);
}

CKT_INLINE CKT_DEVICE uint16_t ckt__fmha_bwd_store16(float x, int bf16)
{
    return bf16 ? ckt_bf16_from_f32(x).bits : ckt_f16_from_f32(x).bits;
}

/* bytes (a multiple of 16) of zeros at p (16-byte aligned), by T threads
 * (this one: t), 16-byte stores. Plain global stores (the loop keeps them
 * inside): as buffer stores, whose base AMD's compiler could not prove the
 * same in all lanes (it comes from the metadata), each was a waterfall loop. */
CKT_INLINE CKT_DEVICE void ckt__fmha_bwd_zero(void *p, int64_t bytes, int t, int T)
{
    for (int64_t off = (int64_t)t * 16; off < bytes; off += 16 * (int64_t)T)
        ckt_global_store_u32x4((char *)p + off, ckt_u32x4_make(0u, 0u, 0u, 0u));
}

/* >>device: stage 1 — D = rowsum(dO * O), dQ accumulator zeroed.
 * Block (row block, head h, entry b); 8 lanes per row, 8 columns a lane per
 * step (16 bytes). */
CKT_INLINE CKT_DEVICE void ckt__fmha_bwd_dot_do_o(const ckt_fmha_bwd_args *a, int bf16, int lanes_by_kernel)
{
    const ckt_fmha_bwd_meta *m = ckt__fmha_bwd_meta(a);
    if (!m)
        return;
    const int b = (int)ckt_block_idx_z(), h = (int)ckt_block_idx_y();
    const int t = (int)ckt_thread_idx_x(), sub = t % CKT__FB_ROW_LANES;
    const int i = (int)ckt_block_idx_x() * CKT__FB_ROWS_PER_BLOCK + t / CKT__FB_ROW_LANES;
    const ckt_fmha_seq s = ckt__fmha_bwd_seq(a, b);
    /* the block's rows of dq_acc[b][slot][h], every slot, zeroed in 16-byte
     * stores: in the accumulator order (ckt/tile/mma.h) whole groups of
     * CKT_ACC_BLOCK_ROWS rows are contiguous, so rows [i0, i1) are the
     * (i1 - i0) * ld floats from i0 * ld (padding rows up to
     * ckt_fmha_bwd_dq_rows included; no kernel reads them) */
    float *dq_acc = (float *)((char *)a->workspace + ckt_fmha_bwd_meta_bytes(m->batch, m->grid, m->persistent));
    const int64_t nsplits = ckt_fmha_bwd_meta_nsplits(m)[b], ld = ckt_fmha_bwd_dq_ld(a->hdim_q);
    const int64_t mat = ckt_fmha_bwd_dq_rows(s.sq) * ld;
    {
        CKT_STATIC_ASSERT(CKT__FB_ROWS_PER_BLOCK % CKT_ACC_BLOCK_ROWS == 0, "a row block holds whole accumulator blocks");
        const int64_t i0 = (int64_t)ckt_block_idx_x() * CKT__FB_ROWS_PER_BLOCK;
        const int64_t rows = ckt_fmha_bwd_dq_rows(s.sq);
        const int64_t i1 = i0 + CKT__FB_ROWS_PER_BLOCK < rows ? i0 + CKT__FB_ROWS_PER_BLOCK : rows;
        const int64_t bytes = (i1 - i0) * ld * (int64_t)sizeof(float); /* a multiple of 16: ld % 8 == 0 */
        /* lanes_by_kernel: the lane schedule's slots are the mma.sync kernel's to initialize */
        for (int64_t sl = 0; sl < nsplits && i1 > i0 && !(lanes_by_kernel && m->lanes > 0); sl++)
            ckt__fmha_bwd_zero(dq_acc + ckt_fmha_bwd_meta_dq_start(m)[b] + (sl * a->nhead_q + h) * mat + i0 * ld, bytes,
                               t, CKT__FB_ROW_THREADS);
    }
    /* every lane takes part in the shuffles: rows past the entry add 0 */
    const int valid = i < s.sq;
    const int64_t row = s.q_start + (valid ? i : 0);
    const uint16_t *o = (const uint16_t *)a->o +
                        ckt_fmha_row_offset(a->group_mode, b, h, row, a->o_stride_b, a->o_stride_h, a->o_stride_s);
    const uint16_t *dout = (const uint16_t *)a->dout + ckt_fmha_row_offset(a->group_mode, b, h, row, a->do_stride_b,
                                                                            a->do_stride_h, a->do_stride_s);
    float acc = 0.0f;
    for (int c = sub * 8; valid && c < a->hdim_v; c += 8 * CKT__FB_ROW_LANES)
        for (int e = 0; e < 8; e++)
            acc += ckt__fmha_bwd_load16(o + c + e, bf16) * ckt__fmha_bwd_load16(dout + c + e, bf16);
    acc += ckt_warp_shfl_xor_f32(acc, 1);
    acc += ckt_warp_shfl_xor_f32(acc, 2);
    acc += ckt_warp_shfl_xor_f32(acc, 4);
    if (!valid)
        return;
    float *dsum = (float *)((char *)a->workspace + m->d_offset);
    if (sub == 0)
        dsum[(int64_t)h * m->total_q_rows + ckt_fmha_bwd_meta_q_row_start(m)[b] + i] = acc;
}

/* dQ[row][c], dQ[row][c + 1] of query head h of entry b <- (x0, x1) * scale, in 16 bits. */
CKT_INLINE CKT_DEVICE void ckt__fmha_bwd_store_dq2(const ckt_fmha_bwd_args *a, const ckt_fmha_seq *s, int b, int h,
                                                   int64_t row, int c, float x0, float x1, float scale, int bf16)
{
    uint16_t *dq = (uint16_t *)a->dq + ckt_fmha_row_offset(a->group_mode, b, h, s->q_start + row, a->dq_stride_b,
                                                          a->dq_stride_h, a->dq_stride_s);
    *(uint32_t *)(dq + c) = bf16 ? ckt_pack2_bf16(x0 * scale, x1 * scale) : ckt_pack2_f16(x0 * scale, x1 * scale);
}

/* >>device: stage 3 — dQ = scale * sum over slots (in order), to 16 bits. */
CKT_INLINE CKT_DEVICE void ckt__fmha_bwd_convert_dq(const ckt_fmha_bwd_args *a, int bf16)
{
    const ckt_fmha_bwd_meta *m = ckt__fmha_bwd_meta(a);
    if (!m)
        return;
    const int b = (int)ckt_block_idx_z(), h = (int)ckt_block_idx_y();
    const int t = (int)ckt_thread_idx_x();
    const ckt_fmha_seq s = ckt__fmha_bwd_seq(a, b);
    const float scale = a->scale > 0.0f ? a->scale : 1.0f / sqrtf((float)a->hdim_q);
#if CKT_ACC_BLOCK_ROWS == 16 && CKT_ACC_BLOCK_COLS == 8
    /* mma.sync's accumulator order: 16-byte vector j of a 16 x 8 block holds
     * (r, c), (r, c + 1), (r + 8, c), (r + 8, c + 1) for r = j / 4, c = 2 (j % 4)
     * (ckt_acc_offset); the block's rows [i0, i1) are contiguous from i0 * ld,
     * read in 16-byte vectors, each summed over the slots in order */
    const int64_t i0 = (int64_t)ckt_block_idx_x() * CKT__FB_ROWS_PER_BLOCK;
    if (i0 >= s.sq)
        return;
    const float *dq_acc = (const float *)((const char *)a->workspace +
                                          ckt_fmha_bwd_meta_bytes(m->batch, m->grid, m->persistent));
    const int64_t nsplits = ckt_fmha_bwd_meta_nsplits(m)[b], ld = ckt_fmha_bwd_dq_ld(a->hdim_q);
    const int64_t rows = ckt_fmha_bwd_dq_rows(s.sq), mat = rows * ld, slot_stride = (int64_t)a->nhead_q * mat;
    const int64_t i1 = i0 + CKT__FB_ROWS_PER_BLOCK < rows ? i0 + CKT__FB_ROWS_PER_BLOCK : rows;
    const int64_t bytes = (i1 - i0) * ld * (int64_t)sizeof(float), slot_bytes = slot_stride * (int64_t)sizeof(float);
    /* inside the workspace: ckt__fmha_bwd_meta checked that the packing's
     * sizes fit it, and the block's rows [i0, i1) lie in each slot */
    const char *r = (const char *)(dq_acc + ckt_fmha_bwd_meta_dq_start(m)[b] + (int64_t)h * mat + i0 * ld);
    for (int64_t off = (int64_t)t * 16; off < bytes; off += 16 * CKT__FB_ROW_THREADS) {
        const int64_t j = off / 16, grp = j / (4 * ld), in = j % (4 * ld);
        const int64_t row = i0 + grp * 16 + (in % 32) / 4;
        const int c = (int)(in / 32) * 8 + 2 * (int)(in % 4);
        float x0 = 0.0f, x1 = 0.0f, x2 = 0.0f, x3 = 0.0f;
        for (int64_t sl = 0; sl < nsplits; sl++) {
            const ckt_u32x4 v = *(const ckt_u32x4 *)(r + sl * slot_bytes + off);
            x0 += ckt_f32_from_bits(v.x);
            x1 += ckt_f32_from_bits(v.y);
            x2 += ckt_f32_from_bits(v.z);
            x3 += ckt_f32_from_bits(v.w);
        }
        if (c >= a->hdim_q)
            continue;
        if (row < s.sq)
            ckt__fmha_bwd_store_dq2(a, &s, b, h, row, c, x0, x1, scale, bf16);
        if (row + 8 < s.sq)
            ckt__fmha_bwd_store_dq2(a, &s, b, h, row + 8, c, x2, x3, scale, bf16);
    }
#else
    const int sub = t % CKT__FB_ROW_LANES;
    const int i = (int)ckt_block_idx_x() * CKT__FB_ROWS_PER_BLOCK + t / CKT__FB_ROW_LANES;
    if (i >= s.sq)
        return;
    const float *dq_acc = (const float *)((const char *)a->workspace +
                                          ckt_fmha_bwd_meta_bytes(m->batch, m->grid, m->persistent));
    const int64_t nsplits = ckt_fmha_bwd_meta_nsplits(m)[b], ld = ckt_fmha_bwd_dq_ld(a->hdim_q);
    const int64_t mat = ckt_fmha_bwd_dq_rows(s.sq) * ld, slot_stride = (int64_t)a->nhead_q * mat;
    const float *r = dq_acc + ckt_fmha_bwd_meta_dq_start(m)[b] + (int64_t)h * mat;
    uint16_t *dq = (uint16_t *)a->dq + ckt_fmha_row_offset(a->group_mode, b, h, s.q_start + i, a->dq_stride_b,
                                                          a->dq_stride_h, a->dq_stride_s);
    for (int c = sub * 2; c < a->hdim_q; c += 2 * CKT__FB_ROW_LANES) {
        /* (i, c) and (i, c + 1) in the accumulator order (ckt/tile/mma.h) */
        const int64_t pc = ckt_acc_offset(ld, i, c), pc1 = ckt_acc_offset(ld, i, c + 1);
        float x0 = 0.0f, x1 = 0.0f;
        for (int64_t sl = 0; sl < nsplits; sl++) {
            x0 += r[sl * slot_stride + pc];
            x1 += r[sl * slot_stride + pc1];
        }
        *(uint32_t *)(dq + c) = bf16 ? ckt_pack2_bf16(x0 * scale, x1 * scale) : ckt_pack2_f16(x0 * scale, x1 * scale);
    }
#endif
}

/* >>device: the sinks' gradient (ckt_fmha_bwd_args.dsink), one block per
 * query head h after dot_do_o has written D:
 *   dsink[h] = -sum_b sum_i exp(sink[h] - LSE[b][h][i]) D[b][h][i]
 * (d LSE_i / d sink = exp(sink - LSE_i), the sink's share of row i, and
 * dO_i . dO_i/d sink = -exp(sink - LSE_i) D_i). Thread t sums rows t, t + T,
 * ... of each entry in order, then a tree over the T threads in shared
 * memory: a fixed order, the same bits every run, in either mode. */
CKT_INLINE CKT_DEVICE void ckt__fmha_bwd_dsink(const ckt_fmha_bwd_args *a, float *red)
{
    const ckt_fmha_bwd_meta *m = ckt__fmha_bwd_meta(a);
    if (!m)
        return;
    const int h = (int)ckt_block_idx_x(), t = (int)ckt_thread_idx_x();
    const float sink = a->sink[h];
    const float *dsum = (const float *)((const char *)a->workspace + m->d_offset) + (int64_t)h * m->total_q_rows;
    float acc = 0.0f;
    for (int b = 0; b < a->batch; b++) {
        const ckt_fmha_seq s = ckt__fmha_bwd_seq(a, b);
        const float *lse = a->lse + ckt_fmha_row_offset(a->group_mode, b, h, s.q_start, a->lse_stride_b,
                                                        a->lse_stride_h, 1);
        const float *d = dsum + ckt_fmha_bwd_meta_q_row_start(m)[b];
        for (int i = t; i < s.sq; i += CKT__FB_ROW_THREADS) /* LSE = -inf: a row the sink never joined */
            acc += lse[i] == -INFINITY ? 0.0f : expf(sink - lse[i]) * d[i];
    }
    red[t] = acc;
    ckt_block_sync();
    for (int w = CKT__FB_ROW_THREADS / 2; w > 0; w /= 2) {
        if (t < w)
            red[t] += red[t + w];
        ckt_block_sync();
    }
    if (t == 0)
        a->dsink[h] = -red[0];
}

/* >>device: dbias's zeros (ckt_fmha_bwd_args.dbias, ckt/fmha/bias.h):
 * every logical element of rows x * CKT__FB_ROWS_PER_BLOCK .. of (b, h) =
 * (block z, block y), before dq_dk_dv writes dS over the tiles the mask
 * lets it visit (the pairs it skips are masked: their gradient is 0). */
CKT_INLINE CKT_DEVICE void ckt__fmha_bwd_dbias_zero(const ckt_fmha_bwd_args *a)
{
    const int b = (int)ckt_block_idx_z(), h = (int)ckt_block_idx_y(), t = (int)ckt_thread_idx_x();
    const ckt_fmha_seq s = ckt__fmha_bwd_seq(a, b);
    const int i0 = (int)ckt_block_idx_x() * CKT__FB_ROWS_PER_BLOCK;
    for (int i = i0; i < i0 + CKT__FB_ROWS_PER_BLOCK && i < s.sq; i++) {
        uint16_t *row = (uint16_t *)a->dbias + (int64_t)b * a->dbias_stride_b + (int64_t)h * a->dbias_stride_h +
                        (int64_t)i * a->dbias_stride_s;
        for (int j = t; j < s.sk; j += CKT__FB_ROW_THREADS)
            row[j] = 0;
    }
}

/* >>device: a broadcast dbias (ckt_fmha_bwd_dbias_reduces): rows x *
 * CKT__FB_ROWS_PER_BLOCK .. of dbias's (entry bo, head ho) = (block z,
 * block y), each element the sum, in a fixed order (entries, then heads), of
 * dS[b][h][i][j] in the workspace's dS section (written by dq_dk_dv and
 * dbias_zero over each entry's logical (i, j)) for the entries and heads it
 * stands for; fp32 sums, one rounding. Rows i < seqlen_q and keys j <
 * seqlen_k (the maxima) when entries are reduced, else entry bo's own. */
CKT_INLINE CKT_DEVICE void ckt__fmha_bwd_dbias_reduce(const ckt_fmha_bwd_args *a, int bf16)
{
    const ckt_fmha_bwd_meta *m = ckt__fmha_bwd_meta(a);
    if (!m || m->dbias_offset == 0)
        return;
    const int bo = (int)ckt_block_idx_z(), ho = (int)ckt_block_idx_y(), t = (int)ckt_thread_idx_x();
    const int over_b = a->batch > 1 && a->dbias_stride_b == 0, over_h = a->nhead_q > 1 && a->dbias_stride_h == 0;
    const int b_lo = over_b ? 0 : bo, b_hi = over_b ? a->batch : bo + 1;
    const int h_lo = over_h ? 0 : ho, h_hi = over_h ? a->nhead_q : ho + 1;
    /* dS[b][h][i][j] at ((b nhead_q + h) seqlen_q + i) seqlen_k + j */
    const uint16_t *ds = (const uint16_t *)((const char *)a->workspace + m->dbias_offset);
    int nq = a->seqlen_q, nk = a->seqlen_k;
    if (!over_b) {
        const ckt_fmha_seq s = ckt__fmha_bwd_seq(a, bo);
        nq = s.sq;
        nk = s.sk;
    }
    const int i0 = (int)ckt_block_idx_x() * CKT__FB_ROWS_PER_BLOCK;
    for (int i = i0; i < i0 + CKT__FB_ROWS_PER_BLOCK && i < nq; i++) {
        uint16_t *row = (uint16_t *)a->dbias + (int64_t)bo * a->dbias_stride_b + (int64_t)ho * a->dbias_stride_h +
                        (int64_t)i * a->dbias_stride_s;
        for (int j = t; j < nk; j += CKT__FB_ROW_THREADS) {
            float acc = 0.0f;
            for (int b = b_lo; b < b_hi; b++) {
                const ckt_fmha_seq s = ckt__fmha_bwd_seq(a, b);
                if (i >= s.sq || j >= s.sk)
                    continue; /* outside entry b: no dS */
                for (int h = h_lo; h < h_hi; h++)
                    acc += ckt__fmha_bwd_load16(ds + (((int64_t)b * a->nhead_q + h) * a->seqlen_q + i) * a->seqlen_k + j,
                                                bf16);
            }
            row[j] = ckt__fmha_bwd_store16(acc, bf16);
        }
    }
}

/* >>device: a block's work units [*begin, *end) of dq_dk_dv. Deterministic
 * (persistent): the plan's contiguous range of block p. Otherwise unit p;
 * with lean (NVIDIA) and a causal mask the long units first
 * (ckt_fmha_bwd_unit_of_block, ckt/fmha/schedule.h) where every entry has
 * the same key tiles; any permutation is correct, the order only balances
 * the grid's tail. */
CKT_INLINE CKT_DEVICE void ckt__fmha_bwd_block_units(const ckt_fmha_bwd_meta *meta, const ckt_fmha_bwd_args *a, int p,
                                                     int bn, int lean, int64_t *begin, int64_t *end)
{
    if (meta->lanes) { /* indices into the block's lane units (ckt_fmha_bwd_lane_unit) */
        *begin = 0;
        *end = ckt_fmha_bwd_lane_count(meta, p);
        return;
    }
    if (meta->persistent) {
        *begin = ckt_fmha_bwd_meta_block_start(meta)[p];
        *end = ckt_fmha_bwd_meta_block_start(meta)[p + 1];
        return;
    }
    int64_t u = p;
    if (lean && ckt_fmha_mask_is_causal(a->mask)) {
        const int64_t ntiles = CKT_CEIL_DIV((int64_t)a->seqlen_k, bn);
        u = ckt_fmha_bwd_unit_of_block(p, (int64_t)a->batch * a->nhead_k, ntiles, CKT_FMHA_BWD_GROUP_UNITS);
        if (u != p && ckt_fmha_bwd_meta_unit_start(meta)[meta->batch] != (int64_t)a->batch * a->nhead_k * ntiles)
            u = p; /* entries of different lengths: the grid's order */
    }
    *begin = u;
    *end = u < meta->total_units ? u + 1 : u;
}

/* Unit u = (entry b, kv head hk, key tile at key n0) of block p, and its
 * dQ slot: deterministic, the block's rank among the blocks of (b, hk)
 * (each adds into its own), or with the lane schedule its lane p % lanes;
 * else 0. (u: the unit's number; lane schedule: ckt_fmha_bwd_lane_unit.) */
typedef struct ckt__fmha_bwd_unit {
    ckt_fmha_seq sq;
    int b, hk, n0, slot;
} ckt__fmha_bwd_unit;

CKT_INLINE CKT_DEVICE ckt__fmha_bwd_unit ckt__fmha_bwd_unit_of(const ckt_fmha_bwd_meta *meta, const ckt_fmha_bwd_args *a,
                                                              int64_t v, int p, int bn)
{
    ckt__fmha_bwd_unit r;
    const int lanes = meta->lanes;
    const int64_t u = lanes ? ckt_fmha_bwd_lane_unit(meta, p, v) : v;
    const int64_t *unit_start = ckt_fmha_bwd_meta_unit_start(meta);
    r.b = ckt_fmha_bwd_find(unit_start, meta->batch + 1, u);
    r.sq = ckt__fmha_bwd_seq(a, r.b);
    const int64_t ntiles = CKT_CEIL_DIV((int64_t)r.sq.sk, bn);
    r.hk = (int)((u - unit_start[r.b]) / ntiles);
    r.n0 = (int)((u - unit_start[r.b]) % ntiles) * bn;
    r.slot = lanes              ? (int)((unsigned)p % (unsigned)lanes)
             : meta->persistent ? p - ckt_fmha_bwd_find(ckt_fmha_bwd_meta_block_start(meta), meta->grid + 1,
                                                        unit_start[r.b] + (int64_t)r.hk * ntiles)
                                : 0;
    return r;
}

/* >>device: a warp's accumulator tile to global memory, rows < nrows and
 * columns < ncols of the window starting at p (row stride ss), times mul. */
CKT_INLINE CKT_DEVICE void ckt__fmha_bwd_store_acc(uint16_t *p, int64_t ss, const float *acc, int row0, int col0,
                                                   int WM, int WN, int nrows, int ncols, float mul, int bf16)
{
    const int lane = (int)ckt_lane_id();
    CKT_UNROLL
    for (int i = 0; i < CKT_WARP_ACC_REGS(WM, WN); i++) {
        int r, c;
        ckt_warp_acc_coord(&r, &c, i, lane, WM, WN);
        r += row0;
        c += col0;
        if (r < nrows && c < ncols)
            p[(int64_t)r * ss + c] = ckt__fmha_bwd_store16(acc[i] * mul, bf16);
    }
}

#endif /* CKT__FMHA_BWD_COMMON_DEFINED */

/* >>device: the three kernels */

CKT_KERNEL_BOUNDS(CKT__FB_FN(_dot_do_o_kernel), ckt_fmha_bwd_args, a, CKT__FB_ROW_THREADS)
{
    ckt__fmha_bwd_dot_do_o(&a, CKT__FB_BF16, 0);
}

/* the same, leaving the lane schedule's dQ slots to the mma.sync kernel (its
 * lean step initializes them: dq_first below) */
CKT_KERNEL_BOUNDS(CKT__FB_FN(_dot_do_o_lanes_kernel), ckt_fmha_bwd_args, a, CKT__FB_ROW_THREADS)
{
    ckt__fmha_bwd_dot_do_o(&a, CKT__FB_BF16, 1);
}

CKT_KERNEL_BOUNDS(CKT__FB_FN(_convert_dq_kernel), ckt_fmha_bwd_args, a, CKT__FB_ROW_THREADS)
{
    ckt__fmha_bwd_convert_dq(&a, CKT__FB_BF16);
}

CKT_KERNEL_BOUNDS(CKT__FB_FN(_dsink_kernel), ckt_fmha_bwd_args, a, CKT__FB_ROW_THREADS)
{
    CKT_SHARED_ARRAY(float, red, CKT__FB_ROW_THREADS);
    ckt__fmha_bwd_dsink(&a, red);
}

CKT_KERNEL_BOUNDS(CKT__FB_FN(_dbias_zero_kernel), ckt_fmha_bwd_args, a, CKT__FB_ROW_THREADS)
{
    ckt__fmha_bwd_dbias_zero(&a);
}

CKT_KERNEL_BOUNDS(CKT__FB_FN(_dbias_reduce_kernel), ckt_fmha_bwd_args, a, CKT__FB_ROW_THREADS)
{
    ckt__fmha_bwd_dbias_reduce(&a, CKT__FB_BF16);
}

#if CKT__FB_SUPPORTED
/* dq_dk_dv's body; bias_on and drop_on are constants where it is called:
 * bias_on the copy that adds the bias or ALiBi and writes dbias
 * (ckt/fmha/bias.h); drop_on dropout (ckt/fmha/dropout.h): 0 never, 1
 * always, 2 as a.p_drop says. Three kernels below, _dq_dk_dv_kernel
 * (neither), _dq_dk_dv_drop_kernel (dropout) and _dq_dk_dv_bias_kernel
 * (bias or ALiBi, dropout at run time), so that the plain kernel holds no
 * option's code (a uniform branch in one kernel still raised nvcc's spills
 * at 255 registers: d64 sm_90a 212 -> 428 bytes for the bias; dropout's
 * branch cost the deterministic d128 backward 7% on H100, gone once in its
 * own kernel). */
CKT_INLINE CKT_DEVICE void CKT__FB_FN(_dq_dk_dv_body)(const ckt_fmha_bwd_args a, const int bias_on, const int drop_on)
{
    enum {
        D = CKT__FB_D, DV = CKT__FB_DV, BN = CKT__FB_BN, BM = CKT__FB_BM, QC = CKT__FB_QC,
        /* warp grids: S^T and dP^T [BN x BM]; dK [BN x D]; dV [BN x DV]; dQ [BM x QC] */
        SGM = CKT__FB_GM(BN, BM), SGN = CKT__FB_GN(BN, BM), SWM = BN / SGM, SWN = BM / SGN,
        KGM = CKT__FB_GM(BN, D), KGN = CKT__FB_GN(BN, D), KWM = BN / KGM, KWN = D / KGN,
        VGM = CKT__FB_GM(BN, DV), VGN = CKT__FB_GN(BN, DV), VWM = BN / VGM, VWN = DV / VGN,
        QGM = CKT__FB_GM(BM, QC), QGN = CKT__FB_GN(BM, QC), QWM = BM / QGM, QWN = QC / QGN,
        KSTEP = 16
    };
    CKT_DYNAMIC_SHARED(uint16_t, smem);
    const ckt_fmha_bwd_meta *meta = ckt__fmha_bwd_meta(&a);
    if (!meta)
        return;
    const int tid = (int)ckt_thread_idx_x(), warp = (int)ckt_warp_id();
    const int bf16 = CKT__FB_BF16;
    const float scale = a.scale > 0.0f ? a.scale : 1.0f / sqrtf((float)a.hdim_q);
    const int group = a.nhead_q / a.nhead_k;
    const int64_t dq_ld = ckt_fmha_bwd_dq_ld(a.hdim_q);
    const int drop = drop_on == 2 ? a.p_drop > 0.0f : drop_on; /* a constant but in the _bias kernel */

    /* this block's work units and (below) their decoding: what
     * ckt__fmha_bwd_block_units and ckt__fmha_bwd_unit_of do, written out
     * (as calls they raised ptxas's spills of the sm_90a d128 kernel from 8
     * to 16-24 bytes) */
    const int64_t *unit_start = ckt_fmha_bwd_meta_unit_start(meta);
    const int64_t *block_start = ckt_fmha_bwd_meta_block_start(meta);
    const int p = (int)ckt_block_idx_x();
    int64_t u_begin, u_end;
    if (meta->lanes) { /* indices into the block's lane units */
        u_begin = 0;
        u_end = ckt_fmha_bwd_lane_count(meta, p);
    } else if (meta->persistent) {
        u_begin = block_start[p];
        u_end = block_start[p + 1];
    } else {
        u_begin = p;
#if CKT__FB_LEAN
        /* causal: the long units first (ckt/fmha/schedule.h); any permutation
         * is correct, the order only balances the grid's tail */
        if (ckt_fmha_mask_is_causal(a.mask))
            u_begin = ckt_fmha_bwd_unit_of_block(p, (int64_t)a.batch * a.nhead_k,
                                                 CKT_CEIL_DIV((int64_t)a.seqlen_k, BN), CKT_FMHA_BWD_GROUP_UNITS);
        if (u_begin != p && unit_start[meta->batch] != (int64_t)a.batch * a.nhead_k * CKT_CEIL_DIV((int64_t)a.seqlen_k, BN))
            u_begin = p; /* entries of different lengths: the grid's order */
#endif
        u_end = u_begin < meta->total_units ? u_begin + 1 : u_begin;
    }
    float *dq_acc = (float *)((char *)a.workspace + ckt_fmha_bwd_meta_bytes(meta->batch, meta->grid, meta->persistent));
    const float *dsum = (const float *)((const char *)a.workspace + meta->d_offset);

    /* shared tiles */
    ckt_smem_tile sK = ckt_smem_tile_make(smem, CKT__FB_LAYOUT, D);
    ckt_smem_tile sV = ckt_smem_tile_make(smem + CKT__FB_K_ELEMS, CKT__FB_LAYOUT, DV);
    ckt_smem_tile sPt = ckt_smem_tile_make(smem + CKT__FB_K_ELEMS + CKT__FB_V_ELEMS, CKT__FB_LAYOUT, BM);
    ckt_smem_tile sdSt =
        ckt_smem_tile_make(smem + CKT__FB_K_ELEMS + CKT__FB_V_ELEMS + CKT__FB_P_ELEMS, CKT__FB_LAYOUT, BM);
#define CKT__FB_STAGE(st) (smem + CKT__FB_FIXED_ELEMS + (st) * CKT__FB_STAGE_ELEMS)
#define CKT__FB_SQ(st) ckt_smem_tile_make(CKT__FB_STAGE(st), CKT__FB_LAYOUT, D)
#define CKT__FB_SDO(st) ckt_smem_tile_make(CKT__FB_STAGE(st) + CKT__FB_Q_ELEMS, CKT__FB_LAYOUT, DV)
#define CKT__FB_SROWS(st) ((float *)(CKT__FB_STAGE(st) + CKT__FB_Q_ELEMS + CKT__FB_DO_ELEMS))

    for (int64_t v = u_begin; v < u_end; v++) {
        /* unit u = (entry b, kv head hk, key tile kt) */
        const int64_t u = meta->lanes ? ckt_fmha_bwd_lane_unit(meta, p, v) : v;
        const int b = ckt_fmha_bwd_find(unit_start, meta->batch + 1, u);
        const ckt_fmha_seq sq = ckt__fmha_bwd_seq(&a, b);
        const int64_t ntiles = CKT_CEIL_DIV((int64_t)sq.sk, BN);
        const int hk = (int)((u - unit_start[b]) / ntiles), kt = (int)((u - unit_start[b]) % ntiles);
        const int n0 = kt * BN;
        const ckt_fmha_mask_params mk = ckt_fmha_mask_make(a.mask, a.window_left, a.window_right, sq.sq, sq.sk);
        /* bias or ALiBi (ckt/fmha/bias.h): used by the _bias kernel only */
        const ckt_fmha_bias_params bias = ckt_fmha_bias_make(a.bias, a.bias_stride_b, a.bias_stride_h,
                                                             a.bias_stride_s, a.alibi_slopes, a.alibi_stride_b, &mk);
        /* dQ slot: deterministic, this block's rank among the blocks of (b, hk),
         * or its lane (the lane schedule) */
        int slot = 0;
        if (meta->lanes)
            slot = p % meta->lanes;
        else if (meta->persistent)
            slot = p - ckt_fmha_bwd_find(block_start, meta->grid + 1, unit_start[b] + (int64_t)hk * ntiles);
        const int64_t dq_base = ckt_fmha_bwd_meta_dq_start(meta)[b], dq_mat = ckt_fmha_bwd_dq_rows(sq.sq) * dq_ld;
        const int64_t q_row0 = ckt_fmha_bwd_meta_q_row_start(meta)[b];

        /* the query tiles that see this key tile: [q_lo, q_hi) in steps of BM */
        int q_lo, q_hi;
        ckt_fmha_mask_query_range(&mk, n0, BN, &q_lo, &q_hi);
        q_lo = q_lo / BM * BM;
        const int nqt = q_hi > q_lo ? CKT_CEIL_DIV(q_hi - q_lo, BM) : 0;
        const int nsteps = nqt * group; /* (query head, query tile) pairs */

        /* K, V of the tile (zero past sk) and the first Q / dO tile in flight */
        const uint16_t *kp = (const uint16_t *)a.k +
                             ckt_fmha_row_offset(a.group_mode, b, hk, sq.k_start, a.k_stride_b, a.k_stride_h, a.k_stride_s);
        const uint16_t *vp = (const uint16_t *)a.v +
                             ckt_fmha_row_offset(a.group_mode, b, hk, sq.k_start, a.v_stride_b, a.v_stride_h, a.v_stride_s);
        ckt_block_sync(); /* the previous unit is done with every shared tile */
        {
            ckt_window2d wk = ckt_window2d_make(ckt_view2d_make((void *)kp, sq.sk, a.hdim_q, a.k_stride_s), n0, 0);
            ckt_window2d wv = ckt_window2d_make(ckt_view2d_make((void *)vp, sq.sk, a.hdim_v, a.v_stride_s), n0, 0);
            ckt_smem_tile_load_async(sK, &wk, BN, D, CKT__FB_T, tid);
            ckt_smem_tile_load_async(sV, &wv, BN, DV, CKT__FB_T, tid);
        }
        /* the lane schedule: a lane's first key tile of a head (kt = the lane)
         * stores its dQ into the lane's slot instead of adding it and zeroes
         * the slot's rows outside its query tiles; the lane's later key tiles
         * (after it, in this block) add to them. The same bits as adding onto
         * zeros, without dot_do_o's pass over the slots
         * (NAME_dot_do_o_lanes_kernel leaves them to this kernel). */
#if CKT__FB_LEAN
        const int dq_first = meta->lanes > 0 && kt < meta->lanes;
        if (dq_first) {
            const int64_t rows = ckt_fmha_bwd_dq_rows(sq.sq), row_bytes = dq_ld * (int64_t)sizeof(float);
            const int64_t lo = nqt > 0 ? q_lo : 0, end = (int64_t)q_lo + (int64_t)nqt * BM;
            const int64_t hi = nqt > 0 ? (end < rows ? end : rows) : 0;
            for (int g = 0; g < group; g++) {
                char *mat = (char *)(dq_acc + dq_base + ((int64_t)slot * a.nhead_q + hk * group + g) * dq_mat);
                ckt__fmha_bwd_zero(mat, lo * row_bytes, tid, CKT__FB_T);
                ckt__fmha_bwd_zero(mat + hi * row_bytes, (rows - hi) * row_bytes, tid, CKT__FB_T);
            }
        }
#else
        const int dq_first = 0;
#endif

        /* the loads of a step (query head h_, query tile at row q0_) into stage stg_:
         * CKT__FB_ISSUE: the Q and dO tiles, asynchronously (committed);
         * CKT__FB_ROWS: LSE (log2 domain; +inf for a row with nothing visible,
         * so that its P is 0) and D of row r_ of the tile, into l_ and d_.
         * The lean step copies the rows' LSE and D with the tiles instead
         * (CKT__FB_ROWS_ASYNC, the raw LSE: CKT__FB_L2 takes it to the log2
         * domain where P reads it): a load into registers held across the
         * step's products was spilled at once, its store waiting for the
         * load (ncu, H200: 1.4% of the d64 causal s2048 stall samples on
         * that one store, with the reloads of the registers it displaced) */
#if CKT__FB_LEAN
        /* the unit's bases (query head h0 = hk * group, row 0 of the entry):
         * a step adds its head and row */
        const int h0 = hk * group;
        const uint16_t *q_unit = (const uint16_t *)a.q + ckt_fmha_row_offset(a.group_mode, b, h0, sq.q_start,
                                                                            a.q_stride_b, a.q_stride_h, a.q_stride_s);
        const uint16_t *do_unit = (const uint16_t *)a.dout + ckt_fmha_row_offset(a.group_mode, b, h0, sq.q_start,
                                                                                a.do_stride_b, a.do_stride_h,
                                                                                a.do_stride_s);
        const float *lse_unit = a.lse + ckt_fmha_row_offset(a.group_mode, b, h0, sq.q_start, a.lse_stride_b,
                                                             a.lse_stride_h, 1);
        /* D's head stride, read once a unit: in the copies' macro below ptxas
         * reloaded it from global memory every step (the asm's memory clobber) */
        const int64_t d_stride_h = meta->total_q_rows;
        const float *d_unit = dsum + (int64_t)h0 * d_stride_h + q_row0;
#define CKT__FB_ISSUE(h_, q0_, stg_)                                                                               \
    do {                                                                                                           \
        const int64_t dh_ = (h_)-h0;                                                                               \
        ckt_smem_tile_load_rows_async(CKT__FB_SQ(stg_), q_unit + dh_ * a.q_stride_h + (int64_t)(q0_)*a.q_stride_s, \
                                      a.q_stride_s, sq.sq - (q0_), a.hdim_q, BM, D, CKT__FB_T, tid);               \
        ckt_smem_tile_load_rows_async(CKT__FB_SDO(stg_),                                                           \
                                      do_unit + dh_ * a.do_stride_h + (int64_t)(q0_)*a.do_stride_s, a.do_stride_s, \
                                      sq.sq - (q0_), a.hdim_v, BM, DV, CKT__FB_T, tid);                            \
        if (CKT__FB_RASYNC && tid < BM)                                                                            \
            CKT__FB_ROWS_ASYNC(h_, q0_, stg_);                                                                     \
        ckt_pipe_commit();                                                                                         \
    } while (0)
        /* row tid of the tile: its raw LSE and D (rows past the entry: -inf and 0) */
#define CKT__FB_ROWS_ASYNC(h_, q0_, stg_)                                                                          \
    do {                                                                                                           \
        const int i_ = (q0_) + tid;                                                                                \
        const int64_t dh_ = (h_)-h0;                                                                               \
        float *r_ = CKT__FB_SROWS(stg_);                                                                           \
        if (i_ < sq.sq) {                                                                                          \
            ckt_cp_async_4(r_ + tid, lse_unit + dh_ * a.lse_stride_h + i_, 4);                                     \
            ckt_cp_async_4(r_ + BM + tid, d_unit + dh_ * d_stride_h + i_, 4);                                      \
        } else {                                                                                                   \
            r_[tid] = -INFINITY;                                                                                   \
            r_[BM + tid] = 0.0f;                                                                                   \
        }                                                                                                          \
    } while (0)
#define CKT__FB_ROWS(h_, q0_, r_, l_, d_)                                                                          \
    do {                                                                                                           \
        const int i_ = (q0_) + (r_);                                                                               \
        const int64_t dh_ = (h_)-h0;                                                                               \
        l_ = -INFINITY;                                                                                            \
        d_ = 0.0f;                                                                                                 \
        if (i_ < sq.sq) {                                                                                          \
            l_ = lse_unit[dh_ * a.lse_stride_h + i_];                                                              \
            d_ = d_unit[dh_ * d_stride_h + i_];                                                                    \
        }                                                                                                          \
    } while (0)
#else
#define CKT__FB_ISSUE(h_, q0_, stg_)                                                                               \
    do {                                                                                                           \
        const uint16_t *qp_ = (const uint16_t *)a.q + ckt_fmha_row_offset(a.group_mode, b, h_, sq.q_start,          \
                                                                          a.q_stride_b, a.q_stride_h, a.q_stride_s); \
        const uint16_t *dop_ = (const uint16_t *)a.dout +                                                           \
                               ckt_fmha_row_offset(a.group_mode, b, h_, sq.q_start, a.do_stride_b, a.do_stride_h,   \
                                                   a.do_stride_s);                                                  \
        ckt_window2d wq_ = ckt_window2d_make(ckt_view2d_make((void *)qp_, sq.sq, a.hdim_q, a.q_stride_s), q0_, 0); \
        ckt_window2d wdo_ =                                                                                        \
            ckt_window2d_make(ckt_view2d_make((void *)dop_, sq.sq, a.hdim_v, a.do_stride_s), q0_, 0);              \
        ckt_smem_tile_load_async(CKT__FB_SQ(stg_), &wq_, BM, D, CKT__FB_T, tid);                                   \
        ckt_smem_tile_load_async(CKT__FB_SDO(stg_), &wdo_, BM, DV, CKT__FB_T, tid);                                \
        ckt_pipe_commit();                                                                                         \
    } while (0)
#define CKT__FB_ROWS(h_, q0_, r_, l_, d_)                                                                          \
    do {                                                                                                           \
        const int i_ = (q0_) + (r_);                                                                               \
        l_ = -INFINITY;                                                                                            \
        d_ = 0.0f;                                                                                                 \
        if (i_ < sq.sq) {                                                                                          \
            l_ = a.lse[a.group_mode ? (int64_t)h_ * a.lse_stride_h + sq.q_start + i_                               \
                                    : (int64_t)b * a.lse_stride_b + (int64_t)h_ * a.lse_stride_h + i_];            \
            d_ = dsum[(int64_t)h_ * meta->total_q_rows + q_row0 + i_];                                             \
        }                                                                                                          \
    } while (0)
#endif
        /* the LSE in the log2 domain as P^T uses it (+inf where nothing is
         * visible: P = 0); applied when stored, so that the global load's
         * latency hides behind the step's products */
#define CKT__FB_LSE2(l_) ((l_) == -INFINITY ? INFINITY : (l_)*CKT_LOG2E)
        /* a stage's LSE entry as P reads it: stored raw by the lean step */
#if CKT__FB_RASYNC
#define CKT__FB_L2(x_) CKT__FB_LSE2(x_)
#else
#define CKT__FB_L2(x_) (x_)
#endif
        /* the rows of a tile: thread r < BM holds row r (CKT_STATIC_ASSERT: BM <= threads) */
#if !CKT__FB_RASYNC
        float pre_l = -INFINITY, pre_d = 0.0f;
#endif
        /* the steps walk (query head, query tile) pairs, tiles minor: (h, q0)
         * is step st's, (nh, nq0) step st + 1's (no division in the loop) */
        const int q_end = q_lo + nqt * BM;
        int h = hk * group, q0 = q_lo, nh = h, nq0 = q0 + BM;
        if (nq0 >= q_end) {
            nq0 = q_lo;
            nh++;
        }
        if (nsteps > 0) {
            CKT__FB_ISSUE(h, q0, 0);
#if !CKT__FB_RASYNC
            if (tid < BM) {
                CKT__FB_ROWS(h, q0, tid, pre_l, pre_d);
                CKT__FB_SROWS(0)[tid] = CKT__FB_LSE2(pre_l);
                CKT__FB_SROWS(0)[BM + tid] = pre_d;
            }
#endif
        } else {
            ckt_pipe_commit();
        }

        /* dK and dV of this warp's tile, in registers across the unit */
        float dk_acc[CKT_WARP_ACC_REGS(KWM, KWN)], dv_acc[CKT_WARP_ACC_REGS(VWM, VWN)];
        CKT_UNROLL
        for (int i = 0; i < CKT_WARP_ACC_REGS(KWM, KWN); i++)
            dk_acc[i] = 0.0f;
        CKT_UNROLL
        for (int i = 0; i < CKT_WARP_ACC_REGS(VWM, VWN); i++)
            dv_acc[i] = 0.0f;
        const int sw_m = (warp / SGN) * SWM, sw_n = (warp % SGN) * SWN; /* S^T warp tile: keys, queries */
#if CKT__FB_LEAN
        /* which warps take part in each product: constants where all do */
        const int s_on = SGM * SGN >= CKT__FB_W || warp < SGM * SGN, v_on = VGM * VGN >= CKT__FB_W || warp < VGM * VGN,
                  k_on = KGM * KGN >= CKT__FB_W || warp < KGM * KGN, q_on = QGM * QGN >= CKT__FB_W || warp < QGM * QGN;
        /* the query tiles q0 (as q0 + sw_n) whose S^T warp tile the mask leaves whole */
        int full_lo, full_hi;
        ckt_fmha_mask_full_queries(&mk, n0 + sw_m, SWM, SWN, &full_lo, &full_hi);
#else
        const int s_on = warp < SGM * SGN, v_on = warp < VGM * VGN, k_on = warp < KGM * KGN, q_on = warp < QGM * QGN;
#endif

        for (int st = 0; st < nsteps; st++) {
            const int stg = CKT__FB_STAGES > 1 ? st & 1 : 0;
            ckt_cp_async_wait(0);
            ckt_block_sync(); /* step st's tiles have landed; step st-1 is done with P^T, dS^T */
            const int prefetch = CKT__FB_STAGES > 1 && st + 1 < nsteps;
#if !CKT__FB_LATE /* the next step's copies at the start (CKT__FB_LATE) */
            if (prefetch) {
                CKT__FB_ISSUE(nh, nq0, stg ^ 1);
#if !CKT__FB_RASYNC
                if (tid < BM) /* loaded now, stored after S^T / dP^T: the latency hides behind them */
                    CKT__FB_ROWS(nh, nq0, tid, pre_l, pre_d);
#endif
            }
#endif
            const ckt_smem_tile sQ = CKT__FB_SQ(stg), sdO = CKT__FB_SDO(stg);
            const float *rows = CKT__FB_SROWS(stg);

            if (s_on) {
                /* dropout (ckt/fmha/dropout.h): the keep bits of the lane's S^T elements,
                 * before the products (fewer live registers: on the H100 the backward with
                 * dropout ran 2-3% faster than with them after), one Philox call per
                 * (16-key group, query) pair of the warp tile (shared by warp shuffles on
                 * mma.sync) */
                CKT_STATIC_ASSERT(CKT_WARP_ACC_REGS(SWM, SWN) <= 64,
                                  "dropout's keep bits of a lane's S^T tile must fit 64 (fewer rows or more warps)");
                uint64_t keep = 0;
                if (drop) {
                    const ckt_fmha_dropout dr =
                        ckt_fmha_dropout_of(a.p_drop, a.drop_seed, a.drop_offset, a.drop_seed_offset);
                    keep = ckt_fmha_dropout_keep_t(&dr, (uint32_t)b * (uint32_t)a.nhead_q + (uint32_t)h, q0 + sw_n,
                                                   n0 + sw_m, SWM, SWN, (int)ckt_lane_id());
                }
                /* S^T[keys x queries] = K Q^T and dP^T = V dO^T for this warp's tile */
                float s_acc[CKT_WARP_ACC_REGS(SWM, SWN)], dp_acc[CKT_WARP_ACC_REGS(SWM, SWN)];
                CKT_UNROLL
                for (int i = 0; i < CKT_WARP_ACC_REGS(SWM, SWN); i++) {
                    s_acc[i] = 0.0f;
                    dp_acc[i] = 0.0f;
                }
                CKT__FB_KUNROLL
                for (int kk = 0; kk < D; kk += KSTEP) {
                    uint32_t kf[CKT_WARP_A_REGS(SWM, KSTEP)], qf[CKT_WARP_B_REGS(KSTEP, SWN)];
                    ckt_warp_load_a(kf, sK, sw_m, kk, SWM, KSTEP);
                    ckt_warp_load_b_nk(qf, sQ, sw_n, kk, KSTEP, SWN);
                    ckt_warp_mma(s_acc, kf, qf, SWM, SWN, KSTEP, bf16);
                }
                CKT__FB_KUNROLL
                for (int kk = 0; kk < DV; kk += KSTEP) {
                    uint32_t vf[CKT_WARP_A_REGS(SWM, KSTEP)], of[CKT_WARP_B_REGS(KSTEP, SWN)];
                    ckt_warp_load_a(vf, sV, sw_m, kk, SWM, KSTEP);
                    ckt_warp_load_b_nk(of, sdO, sw_n, kk, KSTEP, SWN);
                    ckt_warp_mma(dp_acc, vf, of, SWM, SWN, KSTEP, bf16);
                }
                /* P^T = exp2(s * log2e * scale - lse2) (soft-capped logits when
                 * softcap > 0), 0 where masked; dS^T = P^T (dP^T - D) (* tanh') */
                const int lane = (int)ckt_lane_id();
                const float cap = a.softcap;
                /* S <- cap tanh(S scale / cap) with a soft-cap (ckt/fmha/softmax.h, the
                 * forward's); to_log2 takes S to the log2 domain */
                float to_log2 = ckt_fmha_softcap(s_acc, CKT_WARP_ACC_REGS(SWM, SWN), scale, cap);
                if (bias_on) { /* S scale + B (never with a soft-cap): natural logits */
                    ckt_fmha_bias_scores_t(s_acc, &bias, b, h, q0 + sw_n, n0 + sw_m, SWM, SWN, lane, scale, bf16);
                    to_log2 = CKT_LOG2E;
                }
                if (drop) { /* dropout (ckt/fmha/dropout.h): the forward's mask Z
                             * regenerated; dV takes P o Z / (1 - p), dS = P (Z / (1 - p) dP - D) (* tanh') */
                    const ckt_fmha_dropout dr =
                        ckt_fmha_dropout_of(a.p_drop, a.drop_seed, a.drop_offset, a.drop_seed_offset);
                    const float inv_cap2 = cap > 0.0f ? 1.0f / (cap * cap) : 0.0f;
                    CKT_UNROLL
                    for (int i = 0; i < CKT_WARP_ACC_REGS(SWM, SWN); i++) {
                        int r, c;
                        ckt_warp_acc_coord(&r, &c, i, lane, SWM, SWN);
                        const float x = s_acc[i], pv = ckt_exp2f_fast(fmaf(x, to_log2, -CKT__FB_L2(rows[sw_n + c])));
                        const float z = (keep >> i) & 1u ? dr.scale : 0.0f;
                        s_acc[i] = pv * z;
                        dp_acc[i] = pv * fmaf(dp_acc[i], z, -rows[BM + sw_n + c]) * fmaf(-x * x, inv_cap2, 1.0f);
                    }
                } else if (cap > 0.0f) { /* tanh' = 1 - (S / cap)^2 (uniform branch) */
                    const float inv_cap2 = 1.0f / (cap * cap);
                    CKT_UNROLL
                    for (int i = 0; i < CKT_WARP_ACC_REGS(SWM, SWN); i++) {
                        int r, c;
                        ckt_warp_acc_coord(&r, &c, i, lane, SWM, SWN);
                        const float x = s_acc[i], pv = ckt_exp2f_fast(fmaf(x, to_log2, -CKT__FB_L2(rows[sw_n + c])));
                        s_acc[i] = pv;
                        dp_acc[i] = pv * (dp_acc[i] - rows[BM + sw_n + c]) * fmaf(-x * x, inv_cap2, 1.0f);
                    }
                } else {
                    CKT_UNROLL
                    for (int i = 0; i < CKT_WARP_ACC_REGS(SWM, SWN); i++) {
                        int r, c;
                        ckt_warp_acc_coord(&r, &c, i, lane, SWM, SWN);
                        const float pv = ckt_exp2f_fast(fmaf(s_acc[i], to_log2, -CKT__FB_L2(rows[sw_n + c])));
                        s_acc[i] = pv;
                        dp_acc[i] = pv * (dp_acc[i] - rows[BM + sw_n + c]);
                    }
                }
                /* only tiles the mask or the ends of the entry cut */
#if CKT__FB_LEAN
                if (!(q0 + sw_n >= full_lo && q0 + sw_n <= full_hi)) {
#else
                if (!ckt_fmha_mask_tile_full(&mk, q0 + sw_n, SWN, n0 + sw_m, SWM)) {
#endif
                    ckt_fmha_mask_scores_t(s_acc, dp_acc, &mk, n0 + sw_m, q0 + sw_n, SWM, SWN, lane);
                }
                if (bias_on && a.dbias) /* dbias = dS, each element by one warp of one block: no reduction */
                    ckt_fmha_dbias_store_t((uint16_t *)a.dbias, a.dbias_stride_b, a.dbias_stride_h,
                                           a.dbias_stride_s, dp_acc, sq.sq, sq.sk, b, h, q0 + sw_n, n0 + sw_m, SWM,
                                           SWN, lane, bf16);
                ckt_warp_store_acc_b16(sPt, s_acc, sw_m, sw_n, SWM, SWN, 1.0f, bf16);
                ckt_warp_store_acc_b16(sdSt, dp_acc, sw_m, sw_n, SWM, SWN, 1.0f, bf16);
            }
#if !CKT__FB_RASYNC && !CKT__FB_LATE
            if (prefetch && tid < BM) {
                CKT__FB_SROWS(stg ^ 1)[tid] = CKT__FB_LSE2(pre_l);
                CKT__FB_SROWS(stg ^ 1)[BM + tid] = pre_d;
            }
#endif
            ckt_block_sync(); /* P^T and dS^T complete */

            /* dV[keys x DV] += P^T dO and dK[keys x D] += dS^T Q */
            if (v_on) {
                const int wm = (warp / VGN) * VWM, wn = (warp % VGN) * VWN;
                CKT__FB_KUNROLL_D
                for (int kk = 0; kk < BM; kk += KSTEP) {
                    uint32_t pf[CKT_WARP_A_REGS(VWM, KSTEP)], of[CKT_WARP_B_REGS(KSTEP, VWN)];
                    ckt_warp_load_a(pf, sPt, wm, kk, VWM, KSTEP);
                    ckt_warp_load_b_kn(of, sdO, kk, wn, KSTEP, VWN);
                    ckt_warp_mma(dv_acc, pf, of, VWM, VWN, KSTEP, bf16);
                }
            }
            if (k_on) {
                const int wm = (warp / KGN) * KWM, wn = (warp % KGN) * KWN;
                CKT__FB_KUNROLL_D
                for (int kk = 0; kk < BM; kk += KSTEP) {
                    uint32_t sf[CKT_WARP_A_REGS(KWM, KSTEP)], qf[CKT_WARP_B_REGS(KSTEP, KWN)];
                    ckt_warp_load_a(sf, sdSt, wm, kk, KWM, KSTEP);
                    ckt_warp_load_b_kn(qf, sQ, kk, wn, KSTEP, KWN);
                    ckt_warp_mma(dk_acc, sf, qf, KWM, KWN, KSTEP, bf16);
                }
            }
            /* the next step's copies, late (CKT__FB_LATE): Q / dO of stage
             * stg ^ 1 were last read by step st - 1, before this step's first barrier */
#if CKT__FB_LATE
            if (prefetch) {
                CKT__FB_ISSUE(nh, nq0, stg ^ 1);
#if !CKT__FB_RASYNC
                if (tid < BM) { /* rows loaded and stored at once */
                    CKT__FB_ROWS(nh, nq0, tid, pre_l, pre_d);
                    CKT__FB_SROWS(stg ^ 1)[tid] = CKT__FB_LSE2(pre_l);
                    CKT__FB_SROWS(stg ^ 1)[BM + tid] = pre_d;
                }
#endif
            }
#endif
            /* dQ[queries x D] += dS K, in column chunks of QC, into the workspace */
            if (q_on) {
                const int wm = (warp / QGN) * QWM, wn = (warp % QGN) * QWN;
                float *dqs = dq_acc + dq_base + ((int64_t)slot * a.nhead_q + h) * dq_mat;
                for (int c0 = 0; c0 < D; c0 += QC) {
                    float q_acc[CKT_WARP_ACC_REGS(QWM, QWN)];
                    CKT_UNROLL
                    for (int i = 0; i < CKT_WARP_ACC_REGS(QWM, QWN); i++)
                        q_acc[i] = 0.0f;
                    CKT__FB_KUNROLL_D
                    for (int kk = 0; kk < BN; kk += KSTEP) {
                        uint32_t sf[CKT_WARP_A_REGS(QWM, KSTEP)], kf[CKT_WARP_B_REGS(KSTEP, QWN)];
                        ckt_warp_load_a_km(sf, sdSt, kk, wm, QWM, KSTEP);
                        ckt_warp_load_b_kn(kf, sK, kk, c0 + wn, KSTEP, QWN);
                        ckt_warp_mma(q_acc, sf, kf, QWM, QWN, KSTEP, bf16);
                    }
                    /* fp32 atomics, 4 columns at a time (the accumulator order);
                     * deterministic mode: into this block's own slot, which no
                     * other block touches, and each element is always added by
                     * the same thread, so the additions come in program order:
                     * a fixed order, the same bytes every run */
                    if (dq_first)
                        ckt_warp_store_acc_f32(dqs, dq_ld, q_acc, q0 + wm, c0 + wn, QWM, QWN, sq.sq - q0 - wm,
                                               a.hdim_q - c0 - wn);
                    else
                        ckt_warp_red_acc_f32(dqs, dq_ld, q_acc, q0 + wm, c0 + wn, QWM, QWN, sq.sq - q0 - wm,
                                             a.hdim_q - c0 - wn);
                }
            }
            if (CKT__FB_STAGES == 1 && st + 1 < nsteps) {
                ckt_block_sync(); /* everyone is done with the single stage */
                CKT__FB_ISSUE(nh, nq0, 0);
#if !CKT__FB_RASYNC
                if (tid < BM) {
                    CKT__FB_ROWS(nh, nq0, tid, pre_l, pre_d);
                    CKT__FB_SROWS(0)[tid] = CKT__FB_LSE2(pre_l);
                    CKT__FB_SROWS(0)[BM + tid] = pre_d;
                }
#endif
            }
            /* advance: step st + 1 becomes the current one */
            h = nh;
            q0 = nq0;
            nq0 += BM;
            if (nq0 >= q_end) {
                nq0 = q_lo;
                nh++;
            }
        }
        ckt_cp_async_wait_all();

        /* dK = scale * acc, dV = acc; keys past sk and padded columns are not written */
        uint16_t *dkp = (uint16_t *)a.dk + ckt_fmha_row_offset(a.group_mode, b, hk, sq.k_start + n0, a.dk_stride_b,
                                                              a.dk_stride_h, a.dk_stride_s);
        uint16_t *dvp = (uint16_t *)a.dv + ckt_fmha_row_offset(a.group_mode, b, hk, sq.k_start + n0, a.dv_stride_b,
                                                              a.dv_stride_h, a.dv_stride_s);
        if (k_on)
            ckt__fmha_bwd_store_acc(dkp, a.dk_stride_s, dk_acc, (warp / KGN) * KWM, (warp % KGN) * KWN, KWM, KWN,
                                    sq.sk - n0, a.hdim_q, scale, bf16);
        if (v_on)
            ckt__fmha_bwd_store_acc(dvp, a.dv_stride_s, dv_acc, (warp / VGN) * VWM, (warp % VGN) * VWN, VWM, VWN,
                                    sq.sk - n0, a.hdim_v, 1.0f, bf16);
#undef CKT__FB_ISSUE
#undef CKT__FB_ROWS
#undef CKT__FB_ROWS_ASYNC
#undef CKT__FB_LSE2
#undef CKT__FB_L2
    }
#undef CKT__FB_STAGE
#undef CKT__FB_SQ
#undef CKT__FB_SDO
#undef CKT__FB_SROWS
}

CKT_KERNEL_BOUNDS(CKT__FB_FN(_dq_dk_dv_kernel), ckt_fmha_bwd_args, a, CKT__FB_T)
{
    CKT__FB_FN(_dq_dk_dv_body)(a, 0, 0);
}

CKT_KERNEL_BOUNDS(CKT__FB_FN(_dq_dk_dv_drop_kernel), ckt_fmha_bwd_args, a, CKT__FB_T)
{
    CKT__FB_FN(_dq_dk_dv_body)(a, 0, 1);
}

CKT_KERNEL_BOUNDS(CKT__FB_FN(_dq_dk_dv_bias_kernel), ckt_fmha_bwd_args, a, CKT__FB_T)
{
    CKT__FB_FN(_dq_dk_dv_body)(a, 1, 2);
}

#if CKT__FB_WG /* the wgmma kernel (NAME_dq_dk_dv_wg_kernel, NAME_wg_wanted) */
#include "ckt/fmha/bwd_sm90_body.h"
#endif
#endif /* CKT__FB_SUPPORTED */

#endif /* CKT_HAS_MMA_SYNC || CKT_HAS_MFMA */

/* >>host: fits, plan, run */

#ifndef CKT__FMHA_BWD_HOST_DEFINED
#define CKT__FMHA_BWD_HOST_DEFINED
/* Does plan (made for an instance of tile bm x bn) describe the call a? */
static inline ckt_status ckt_fmha_bwd_check_plan(const ckt_fmha_bwd_plan *p, const ckt_fmha_bwd_args *a, int bm,
                                                 int bn)
{
    const ckt_fmha_bwd_traits *t = &p->traits;
    if (p->block_m != bm || p->block_n != bn)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "plan: made for a %dx%d tile, this instance's is %dx%d",
                         p->block_m, p->block_n, bm, bn);
#define CKT__FB_SAME(field, tfield)                                                                        \
    if (a->field != t->tfield)                                                                             \
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %d, but the plan's traits have %s = %d", #field, \
                         (int)a->field, #tfield, (int)t->tfield);
    CKT__FB_SAME(batch, batch)
    CKT__FB_SAME(nhead_q, nhead_q)
    CKT__FB_SAME(nhead_k, nhead_k)
    CKT__FB_SAME(hdim_q, hdim_q)
    CKT__FB_SAME(hdim_v, hdim_v)
    CKT__FB_SAME(dtype, dtype)
    CKT__FB_SAME(group_mode, group_mode)
    CKT__FB_SAME(mask, mask)
    CKT__FB_SAME(deterministic, deterministic)
#undef CKT__FB_SAME
    if (ckt_fmha_bwd_dbias_reduces(a) != t->dbias_reduce)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "dbias: %s, but the plan's traits have dbias_reduce = %d (make the plan from "
                         "ckt_fmha_bwd_traits_of, or set traits.dbias_reduce = %d)",
                         ckt_fmha_bwd_dbias_reduces(a) ? "broadcast (a zero batch or head stride): its elements are sums"
                                                       : "not broadcast",
                         t->dbias_reduce, ckt_fmha_bwd_dbias_reduces(a));
    if (a->seqlen_q > t->max_seqlen_q || a->seqlen_k > t->max_seqlen_k)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %d exceeds the plan's max_%s %d",
                         a->seqlen_q > t->max_seqlen_q ? "seqlen_q" : "seqlen_k",
                         a->seqlen_q > t->max_seqlen_q ? a->seqlen_q : a->seqlen_k,
                         a->seqlen_q > t->max_seqlen_q ? "seqlen_q" : "seqlen_k",
                         a->seqlen_q > t->max_seqlen_q ? t->max_seqlen_q : t->max_seqlen_k);
    if (a->workspace_bytes < p->meta_bytes)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "workspace_bytes: %zu is less than the plan's metadata alone (%zu); allocate "
                         "ckt_fmha_bwd_workspace_upper_bound() bytes",
                         a->workspace_bytes, p->meta_bytes);
    return CKT_SUCCESS;
}
#endif

static inline int CKT__FB_FN(_fits)(const ckt_fmha_bwd_args *a)
{
    return CKT__FB_SUPPORTED && a && a->dtype == (CKT_FMHA_DTYPE) && a->hdim_q > 0 && a->hdim_q <= CKT__FB_D &&
           a->hdim_v > 0 && a->hdim_v <= CKT__FB_DV && a->hdim_q % 8 == 0 && a->hdim_v % 8 == 0;
}

/* The dq_dk_dv tile and the resident blocks per multiprocessor (the
 * persistent grid's factor), for the dispatcher's table. */
#define CKT__FB_BLOCKS_PER_MP 1
enum {
    CKT__FB_FN(_block_m) = CKT__FB_BM,
    CKT__FB_FN(_block_n) = CKT__FB_BN,
    CKT__FB_FN(_blocks_per_mp) = CKT__FB_BLOCKS_PER_MP
};

/* The dq_dk_dv kernel's dynamic shared memory on the current device: the
 * stage count its architecture's device code was compiled with. */
static inline size_t CKT__FB_FN(_smem_bytes)(void)
{
#if defined(CKT_FMHA_BWD_STAGES)
    return CKT__FB_SMEM_FOR(CKT_FMHA_BWD_STAGES);
#elif defined(CKT_HAS_CP_ASYNC) && defined(CKT_BACKEND_NVIDIA)
    int major = 9, minor = 0;
    if (ckt_rt_compute_capability(&major, &minor) != CKT_SUCCESS)
        major = 9;
    return CKT__FB_SMEM_FOR(CKT__FB_STAGES_FOR(major >= 9 ? CKT__FB_SMEM_SM90 : CKT__FB_SMEM_SM80));
#elif defined(CKT_HAS_CP_ASYNC)
    return CKT__FB_SMEM_FOR(CKT__FB_STAGES_FOR(CKT__FB_SMEM_SM90));
#else
    return CKT__FB_SMEM_FOR(1);
#endif
}

static inline ckt_status CKT__FB_FN(_plan)(ckt_fmha_bwd_plan *plan, const ckt_fmha_bwd_traits *t)
{
    return ckt_fmha_bwd_plan_make(plan, t, CKT__FB_BM, CKT__FB_BN, CKT__FB_BLOCKS_PER_MP);
}

static inline ckt_status CKT__FB_FN(_run)(const ckt_fmha_bwd_plan *plan, const ckt_fmha_bwd_args *a,
                                          ckt_stream stream)
{
    CKT__FMHA_TRY(ckt_fmha_bwd_validate(a, (CKT_FMHA_DTYPE), CKT__FB_D, CKT__FB_DV));
    if (!plan)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "plan: NULL");
    CKT__FMHA_TRY(ckt_fmha_bwd_check_plan(plan, a, CKT__FB_BM, CKT__FB_BN));
    if (ckt_fmha_bwd_is_empty(a))
        return CKT_SUCCESS;
#if (defined(CKT_HAS_MMA_SYNC) || defined(CKT_HAS_MFMA)) && CKT__FB_SUPPORTED
    const ckt_dim3 rows_grid = ckt_dim3_make((unsigned)CKT_CEIL_DIV(a->seqlen_q, CKT__FB_ROWS_PER_BLOCK),
                                             (unsigned)a->nhead_q, (unsigned)a->batch);
    const ckt_dim3 rows_block = ckt_dim3_make(CKT__FB_ROW_THREADS, 1, 1);
#if CKT__FB_WG
    const int wg = CKT__FB_FN(_wg_wanted)(a); /* the wgmma kernel instead of the mma.sync one */
#else
    const int wg = 0;
#endif
    /* the lean mma.sync step initializes the lane schedule's dQ slots itself */
#if CKT__FB_LEAN
    const ckt_kernel_ref dot_do_o =
        wg ? CKT_KERNEL_REF(CKT__FB_FN(_dot_do_o_kernel)) : CKT_KERNEL_REF(CKT__FB_FN(_dot_do_o_lanes_kernel));
#else
    const ckt_kernel_ref dot_do_o = CKT_KERNEL_REF(CKT__FB_FN(_dot_do_o_kernel));
    (void)wg;
#endif
    if (a->seqlen_q > 0)
        CKT__FMHA_TRY(ckt_rt_launch(dot_do_o, rows_grid, rows_block, 0, stream, a));
    /* a broadcast dbias: dS into the workspace's dS section, summed by dbias_reduce below */
    ckt_fmha_bwd_args k = *a;
    if (plan->traits.dbias_reduce) {
        if (a->workspace_bytes < plan->dbias_offset + plan->dbias_bytes)
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                             "workspace_bytes: %zu, but the broadcast dbias's dS section ends at %zu "
                             "(ckt_fmha_bwd_workspace_upper_bound)",
                             a->workspace_bytes, plan->dbias_offset + plan->dbias_bytes);
        k.dbias = (char *)a->workspace + plan->dbias_offset;
        k.dbias_stride_s = a->seqlen_k;
        k.dbias_stride_h = (int64_t)a->seqlen_q * a->seqlen_k;
        k.dbias_stride_b = (int64_t)a->nhead_q * k.dbias_stride_h;
    }
    if (a->dbias && a->seqlen_q > 0 && a->seqlen_k > 0) /* zeros where the mask hides (i, j); dq_dk_dv writes the rest */
        CKT__FMHA_TRY(ckt_rt_launch(CKT_KERNEL_REF(CKT__FB_FN(_dbias_zero_kernel)), rows_grid, rows_block, 0, stream, &k));
    ckt_kernel_ref dq_dk_dv = a->bias || a->alibi_slopes ? CKT_KERNEL_REF(CKT__FB_FN(_dq_dk_dv_bias_kernel))
                              : a->p_drop > 0.0f             ? CKT_KERNEL_REF(CKT__FB_FN(_dq_dk_dv_drop_kernel))
                                                             : CKT_KERNEL_REF(CKT__FB_FN(_dq_dk_dv_kernel));
    size_t dq_dk_dv_smem = CKT__FB_FN(_smem_bytes)();
#if CKT__FB_WG
    if (wg) { /* Hopper: the wgmma kernel (same plan, tile and workspace) */
        dq_dk_dv = CKT_KERNEL_REF(CKT__FB_FN(_dq_dk_dv_wg_kernel));
        dq_dk_dv_smem = CKT__FB_FN(_wg_smem_bytes);
    }
#endif
    CKT__FMHA_TRY(ckt_rt_launch(dq_dk_dv, ckt_dim3_make((unsigned)plan->grid, 1, 1), ckt_dim3_make(CKT__FB_T, 1, 1),
                                dq_dk_dv_smem, stream, &k));
    if (plan->traits.dbias_reduce && a->seqlen_q > 0 && a->seqlen_k > 0) /* dbias = dS summed over the broadcast */
        CKT__FMHA_TRY(ckt_rt_launch(CKT_KERNEL_REF(CKT__FB_FN(_dbias_reduce_kernel)),
                                    ckt_dim3_make((unsigned)CKT_CEIL_DIV(a->seqlen_q, CKT__FB_ROWS_PER_BLOCK),
                                                  a->dbias_stride_h == 0 ? 1u : (unsigned)a->nhead_q,
                                                  a->dbias_stride_b == 0 ? 1u : (unsigned)a->batch),
                                    rows_block, 0, stream, a));
    if (a->seqlen_q > 0)
        CKT__FMHA_TRY(ckt_rt_launch(CKT_KERNEL_REF(CKT__FB_FN(_convert_dq_kernel)), rows_grid, rows_block, 0, stream, a));
    if (a->dsink) /* after dot_do_o's D; one block per query head */
        CKT__FMHA_TRY(ckt_rt_launch(CKT_KERNEL_REF(CKT__FB_FN(_dsink_kernel)), ckt_dim3_make((unsigned)a->nhead_q, 1, 1),
                                    rows_block, 0, stream, a));
    return CKT_SUCCESS;
#else
    (void)stream;
    return ckt__fail(CKT_ERROR_UNSUPPORTED, "fmha bwd: %s",
                     CKT__FB_SUPPORTED ? "this target has no warp MMA"
                                       : "head dims above 192 do not fit the CDNA LDS (64 KiB) in the backward");
#endif
}

/* >>consumed parameters */
#undef CKT_FMHA_NAME
#undef CKT_FMHA_DTYPE
#undef CKT_FMHA_HDIM
#undef CKT_FMHA_HDIM_V
#undef CKT_FMHA_BWD_WARPS
#undef CKT_FMHA_BWD_BLOCK_N
#undef CKT_FMHA_BWD_BLOCK_M
#undef CKT_FMHA_BWD_UNROLL
#undef CKT_FMHA_BWD_STAGES
#undef CKT_FMHA_BWD_LAYOUT
#undef CKT__FB_KUNROLL
#undef CKT__FB_KUNROLL_D
#undef CKT_FMHA_BWD_UNROLL_D
#undef CKT_FMHA_BWD_WG_DEFER
#undef CKT__FB_FN
#undef CKT__FB_D
#undef CKT__FB_DV
#undef CKT__FB_BF16
#undef CKT__FB_TM
#undef CKT__FB_TN
#undef CKT__FB_MAXD
#undef CKT__FB_SUPPORTED
#undef CKT__FB_W
#undef CKT__FB_T
#undef CKT__FB_BN
#undef CKT__FB_BM
#undef CKT__FB_QC
#undef CKT__FB_RASYNC
#undef CKT_FMHA_BWD_ROWS_ASYNC
#undef CKT__FB_LATE
#undef CKT_FMHA_BWD_ISSUE_LATE
#undef CKT__FB_GN
#undef CKT__FB_GM
#undef CKT__FB_GN_ANY
#undef CKT__FB_GN_CAP
#undef CKT__FB_GM_ANY
#undef CKT__FB_BEST
#undef CKT__FB_MIN2
#undef CKT__FB_COST
#undef CKT__FB_OK
#undef CKT__FB_LAYOUT
#undef CKT__FB_K_ELEMS
#undef CKT__FB_V_ELEMS
#undef CKT__FB_Q_ELEMS
#undef CKT__FB_DO_ELEMS
#undef CKT__FB_P_ELEMS
#undef CKT__FB_ROWS_ELEMS
#undef CKT__FB_STAGE_ELEMS
#undef CKT__FB_FIXED_ELEMS
#undef CKT__FB_STAGES
#undef CKT__FB_SMEM_FOR
#undef CKT__FB_STAGES_FOR
#undef CKT__FB_SMEM_SM80
#undef CKT__FB_SMEM_SM90
#undef CKT__FB_BLOCKS_PER_MP
#undef CKT__FB_WG
