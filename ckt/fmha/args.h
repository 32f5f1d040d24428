/* ckt/fmha/args.h — the arguments of the FMHA forward kernels, shared by the
 * instance launchers (NAME_launch), the dispatcher (ckt_fmha_fwd) and the CPU
 * reference (ckt_ref_fmha_fwd); further down the backward's
 * (ckt_fmha_bwd_args) and the append-KV kernel's (ckt_fmha_appendkv_args).
 *
 *   O[b][h][i][:] = softmax_j( mask( cap * tanh(scale * Q[b][h][i] . K[b][h/g][j] / cap) ) ) . V[b][h/g][j][:]
 *   LSE[b][h][i]  = log sum_j exp(masked logits)          (natural log, fp32)
 *
 * with g = nhead_q / nhead_k (GQA / MQA) and the soft-cap applied only when
 * softcap > 0. A row whose keys are all masked gives O = 0, LSE = -inf.
 * Optional per-head sink logits (sink, at the struct's end) join every
 * row's denominator (gpt-oss's attention sinks).
 *
 * Layout: every tensor is addressed through strides in elements with a unit
 * stride on the head dimension, so [b][h][s][d] and [b][s][h][d] (and any
 * padding) are the same kernel:
 *   Q[b][h][i][d] = q[b*q_stride_b + h*q_stride_h + i*q_stride_s + d]
 *
 * Batch mode: every batch entry has seqlen_q queries and seqlen_k keys.
 * Group (varlen) mode (group_mode = 1): sequences are packed along s;
 * entry b's queries are rows seqstart_q[b] .. seqstart_q[b+1] - 1 (so
 * stride_b is unused and Q[b][h][i] = q[h*q_stride_h + (seqstart_q[b] + i)*q_stride_s]),
 * likewise keys with seqstart_k. Optional seqlen_q_ptr / seqlen_k_ptr give
 * per-entry logical lengths <= the physical ones (padding at the end of each
 * entry); seqlen_q / seqlen_k are then upper bounds (max over the batch)
 * used to size the grid. seqstart_* and seqlen_*_ptr are device arrays of
 * int32 (batch + 1 and batch entries); cumulative like FlashAttention's
 * cu_seqlens and CK's seqstart_q / seqstart_k.
 *
 * LSE (optional, lse = NULL to skip): batch mode lse[b*lse_stride_b +
 * h*lse_stride_h + i]; group mode lse[h*lse_stride_h + seqstart_q[b] + i].
 *
 * Masks (FlashAttention's convention): query i may see key j when
 *   j - i - off in [-window_left, window_right]     (a bound < 0 = unlimited)
 * with off = 0 (top-left) or seqlen_k - seqlen_q (bottom-right, per entry).
 * CKT_MASK_CAUSAL_* are windows (unlimited, 0).
 *
 * Zero-valued fields mean the default: scale 0 -> 1/sqrt(hdim_q); softcap
 * 0 -> none; mask CKT_MASK_NONE.
 *
 * Zero-initialization, the one idiom for every ckt argument struct, in C and
 * in C++ (gcc, g++, nvcc, hipcc, with -Wall -Wextra):
 *
 *   ckt_fmha_fwd_args a = CKT_ZERO_INIT;     // then set the fields you need
 *
 * (CKT_ZERO_INIT is {0} in C and {} in C++: ckt/arch/config.h. A plain {0}
 * also compiles in C++, since no argument struct starts with an enum, but g++
 * and clang warn about it under -Wextra.)
 */
#ifndef CKT_FMHA_ARGS_H
#define CKT_FMHA_ARGS_H

#include "ckt/host/dtype.h"

#include <stddef.h>
#include <stdint.h>

typedef enum ckt_fmha_mask {
    CKT_MASK_NONE = 0,
    CKT_MASK_CAUSAL_TOP_LEFT = 1,
    CKT_MASK_CAUSAL_BOTTOM_RIGHT = 2,
    CKT_MASK_WINDOW_TOP_LEFT = 3,     /* window_left / window_right */
    CKT_MASK_WINDOW_BOTTOM_RIGHT = 4  /* window_left / window_right */
} ckt_fmha_mask;

typedef struct ckt_fmha_fwd_args {
    const void *q, *k, *v;
    void *o;
    float *lse;      /* optional */
    ckt_dtype dtype; /* CKT_F16 or CKT_BF16: q, k, v, o; or CKT_FP8_E4M3: q, k, v (o: o_dtype, >>fp8) */

    int batch, nhead_q, nhead_k;
    int seqlen_q, seqlen_k; /* batch mode: exact; group mode: max over entries */
    int hdim_q, hdim_v;

    int64_t q_stride_b, q_stride_h, q_stride_s;
    int64_t k_stride_b, k_stride_h, k_stride_s;
    int64_t v_stride_b, v_stride_h, v_stride_s;
    int64_t o_stride_b, o_stride_h, o_stride_s;
    int64_t lse_stride_b, lse_stride_h;

    int group_mode;
    const int32_t *seqstart_q, *seqstart_k;     /* group mode, device, batch + 1 */
    const int32_t *seqlen_q_ptr, *seqlen_k_ptr; /* optional logical lengths, device */

    float scale;   /* 0: 1/sqrt(hdim_q) */
    float softcap; /* 0: none */
    ckt_fmha_mask mask;
    int window_left, window_right; /* window masks; < 0 = unlimited */

    /* >>inference (docs/fmha_inference.md): a KV cache, paged or not, and
     * split-KV. All zero: k / v are the tensors described above. */

    /* Cache entry of batch entry b: cache_batch_idx[b] (device, batch
     * entries, each in [0, cache_batch)): the batch index of k / v in batch
     * mode, the block_table row when paged. NULL: b. */
    const int32_t *cache_batch_idx;
    int cache_batch; /* entries of the cache (block_table rows when paged); 0 = batch */

    /* Paged KV (ckt/fmha/page.h): page_size > 0 makes k and v pools of
     * num_pages pages of page_size keys (any size >= 1):
     *   K[b][hk][j] = k[page(b, j / page_size) * k_stride_b + hk * k_stride_h + (j % page_size) * k_stride_s]
     * (likewise v), k_stride_b being the page stride. The pages of entry b:
     *   vLLM:   page(b, p) = block_table[cb * max_pages_per_seq + p], cb as
     *           above; keys seqlen_k_ptr[b] (seqlen_k when NULL), at most
     *           max_pages_per_seq * page_size;
     *   sglang: page(b, p) = kv_indices[kv_indptr[b] + p]; keys
     *           (kv_indptr[b + 1] - kv_indptr[b] - 1) * page_size + kv_last_page_len[b].
     * One style per call. Queries in batch or group mode (batch prefill:
     * seqstart_q); seqstart_k is unused. seqlen_k bounds every entry's keys
     * (the max over the batch). Page ids outside [0, num_pages) read as
     * zeros on a GPU; where the host can read the tables (the CPU backend)
     * they are an error naming the entry. */
    int page_size, num_pages;
    const int32_t *block_table; /* vLLM, device, [cache_batch][max_pages_per_seq] */
    int max_pages_per_seq;
    const int32_t *kv_indptr, *kv_indices, *kv_last_page_len; /* sglang, device */

    /* Split-KV (ckt/fmha/splitkv.h): the keys of each query tile split into
     * num_splits ranges computed by separate blocks, each writing a partial
     * O and LSE (fp32) to the workspace, merged by a combine kernel in a
     * fixed order (bitwise reproducible). num_splits 0: automatic when a
     * workspace is given (ckt_fmha_splitkv_heuristic), else 1; 1: no split.
     * The workspace (device, 16-byte aligned) holds
     * ckt_fmha_splitkv_workspace_bytes(...) bytes (the dispatcher's
     * ckt_fmha_fwd_workspace_bytes says how many for a call). */
    int num_splits;
    void *workspace;
    size_t workspace_bytes;

    /* >>sink: attention sinks (gpt-oss). sink[h] is query head h's learned
     * logit, in the units of the scaled (soft-capped) scores and never
     * scaled or capped itself; it joins each row's softmax denominator but
     * brings no value:
     *   O[b][h][i] = sum_j exp(s_ij - LSE_i) V_j,   LSE_i = log(exp(sink[h]) + sum_j exp(s_ij))
     * A row with no visible key gets O = 0, LSE = sink[h]. Split-KV adds it
     * once, in the combine. */
    const float *sink; /* optional, device, [nhead_q] fp32: per-head sink logits (gpt-oss); NULL: none */

    /* >>dropout (ckt/fmha/dropout.h): on the probabilities, FlashAttention's
     *   O = (P o Z / (1 - p_drop)) V,   LSE unaffected,
     * Z_ij = 0 with probability p_drop (quantized to 1/256), a pure function
     * of (seed, offset, b, h, i, j) by Philox4x32-10: logical coordinates
     * (group mode: the entry and the row within it; GQA: the query head), so
     * the backward (ckt_fmha_bwd_args, the same three values) regenerates the
     * mask. p_drop 0: off; outside [0, 1): an error naming p_drop. Every path
     * takes it: batch / group mode, masks, GQA, split-KV, paged, decode. */
    float p_drop;
    uint64_t drop_seed, drop_offset;
    const uint64_t *drop_seed_offset; /* optional, device, {seed, offset}: read by the kernel instead (graphs) */
    /* optional, device, for tests: the random byte of each element (dropped
     * when < ckt_fmha_dropout_threshold(p_drop)), written at
     *   randval[b * randval_stride_b + h * randval_stride_h + i * randval_stride_s + j]
     * (i, j within the entry in group mode too) wherever the kernel computes
     * P: at least every (i, j) the mask lets query i see; the rest untouched. */
    uint8_t *randval;
    int64_t randval_stride_b, randval_stride_h, randval_stride_s;
    /* >>bias: bias and ALiBi (ckt/fmha/bias.h, docs/fmha.md). Both add to
     * the scaled logits before the mask and the softmax:
     *   s_ij = scale * Q[b][h][i] . K[b][h/g][j] + B[b][h][i][j]
     * Elementwise bias, in the args' dtype, addressed per logical (entry b,
     * query head h, query i, key j) of the entry, in batch and group mode
     * alike (group mode: i and j count from the entry's start):
     *   B[b][h][i][j] = bias[b*bias_stride_b + h*bias_stride_h + i*bias_stride_s + j]
     * (a zero stride broadcasts over that dimension). ALiBi, no tensor read:
     *   B[b][h][i][j] = -slope * |j - i - off|,  slope = alibi_slopes[b*alibi_stride_b + h]
     * off the mask's diagonal offset (ckt/fmha/mask.h: 0 top-left and for
     * CKT_MASK_NONE, seqlen_k - seqlen_q bottom-right, per entry). At most
     * one of the two per call, and neither with a soft-cap (errors naming
     * alibi_slopes / bias). */
    const void *bias; /* optional, device, dtype; NULL: none */
    int64_t bias_stride_b, bias_stride_h, bias_stride_s; /* elements; unit stride on j */
    const float *alibi_slopes; /* optional, device, fp32; NULL: none */
    int64_t alibi_stride_b;    /* 0: [nhead_q] for every entry; else [batch][nhead_q] rows this far apart */

    /* >>fp8: the fp8 forward (dtype CKT_FP8_E4M3: q, k, v are OCP e4m3 bytes,
     * strides in elements = bytes; docs/fmha.md#fp8). Ignored for fp16 / bf16.
     *   S = scale * descale_q * descale_k * (Q . K)     (fp32 accumulation)
     *   P = exp(S - m) (fp32, l = rowsum P); P8 = e4m3(P * scale_p)
     *   O = (P8 V) * descale_v / scale_p / l            (fp32), stored as o_dtype
     * A descale is the factor the stored bytes were divided by (x = descale *
     * e4m3 value); 0 means 1. scale_p 0 means CKT_FMHA_FP8_SCALE_P (448: P's
     * maximum, 1, lands on e4m3's largest value). Not with dropout, bias or
     * ALiBi (errors naming them); soft-cap, sinks, masks, GQA, group mode
     * and LSE work. */
    ckt_dtype o_dtype; /* fp8: the type of o, CKT_F16 or CKT_BF16 */
    float descale_q, descale_k, descale_v;
    float scale_p;
} ckt_fmha_fwd_args;

/* The fp8 forward's default P quantization scale (ckt_fmha_fwd_args.scale_p 0). */
#define CKT_FMHA_FP8_SCALE_P 448.0f

/* >>backward: ckt_fmha_bwd_args
 *
 * The gradients of the forward above, given its inputs, its output O, the
 * output's gradient dO and the forward's LSE (natural log, as the forward
 * writes it with lse != NULL):
 *
 *   D[b][h][i]  = sum_d dO[b][h][i][d] * O[b][h][i][d]                     (dot_do_o)
 *   P           = exp(S - LSE)      S: the forward's masked, soft-capped, scaled logits
 *   dV[b][hk]   = sum over the query heads h of kv head hk:  P^T dO
 *   dP          = dO V^T,   dS = P * (dP - D)  (* (1 - tanh^2) with a soft-cap)
 *   dK[b][hk]   = scale * sum over h: dS^T Q,    dQ = scale * dS K
 *
 * Shapes, layouts, masks, group mode, GQA, scale and soft-cap are those of
 * ckt_fmha_fwd_args, field by field (same names, same meaning); do / dq / dk
 * / dv have their own strides (dq like q, dk like k, dv like v, do like o).
 * Outputs are written for logical rows only: in group mode rows past an
 * entry's logical length (padding) are left untouched; an entry with
 * seqlen_q = 0 gets dK = dV = 0 over its logical keys.
 *
 * workspace: device memory of at least the planner's size
 * (ckt/fmha/workspace.h), prepared for this call by ckt_fmha_bwd_prepare or
 * ckt_fmha_bwd_prepare_async (the dispatcher's ckt_fmha_bwd does both when
 * given no plan). The caller never sees the accumulator layout.
 *
 * deterministic = 1: dQ, dK, dV are bitwise identical from run to run (no
 * floating-point atomics; a persistent grid with a fixed partition).
 */
typedef struct ckt_fmha_bwd_args {
    const void *q, *k, *v, *o, *dout; /* dout: dO (do is a C keyword) */
    const float *lse;                 /* required: the forward's LSE */
    void *dq, *dk, *dv;
    ckt_dtype dtype; /* CKT_F16 or CKT_BF16: every tensor but lse */

    int batch, nhead_q, nhead_k;
    int seqlen_q, seqlen_k; /* batch mode: exact; group mode: max over entries */
    int hdim_q, hdim_v;

    int64_t q_stride_b, q_stride_h, q_stride_s;
    int64_t k_stride_b, k_stride_h, k_stride_s;
    int64_t v_stride_b, v_stride_h, v_stride_s;
    int64_t o_stride_b, o_stride_h, o_stride_s;
    int64_t do_stride_b, do_stride_h, do_stride_s;
    int64_t dq_stride_b, dq_stride_h, dq_stride_s;
    int64_t dk_stride_b, dk_stride_h, dk_stride_s;
    int64_t dv_stride_b, dv_stride_h, dv_stride_s;
    int64_t lse_stride_b, lse_stride_h;

    int group_mode;
    const int32_t *seqstart_q, *seqstart_k;     /* group mode, device, batch + 1 */
    const int32_t *seqlen_q_ptr, *seqlen_k_ptr; /* optional logical lengths, device */

    float scale;   /* 0: 1/sqrt(hdim_q) */
    float softcap; /* 0: none */
    ckt_fmha_mask mask;
    int window_left, window_right;

    int deterministic;
    void *workspace;        /* device, prepared (ckt/fmha/workspace.h) */
    size_t workspace_bytes; /* its size, checked against the plan's need */

    /* >>sink: the forward's per-head sink logits (ckt_fmha_fwd_args.sink),
     * when it ran with them (its LSE includes them; nothing else changes),
     * and their gradient, a reduction over every row of every entry:
     *   dsink[h] = -sum_b sum_i exp(sink[h] - LSE[b][h][i]) D[b][h][i]
     * in a fixed order (bitwise reproducible in either mode). */
    const float *sink; /* optional, device, [nhead_q] fp32; NULL: none */
    float *dsink;      /* [nhead_q] fp32, written (not accumulated); NULL: not wanted (needs sink) */

    /* >>dropout: the forward's (ckt_fmha_fwd_args, same meaning), so that
     * the same mask Z is regenerated:
     *   dV = (P o Z / (1 - p))^T dO,  dS = P o (Z / (1 - p) o (dO V^T) - D)
     * (D = rowsum(dO o O) as always: docs/fmha_bwd.md). */
    float p_drop;
    uint64_t drop_seed, drop_offset;
    const uint64_t *drop_seed_offset; /* optional, device, {seed, offset}: read by the kernel instead (graphs) */
    /* >>bias: bias and ALiBi, the forward's (ckt_fmha_fwd_args, same
     * fields, same meaning: the LSE given holds them), and the bias's
     * gradient dbias = dS, the gradient of the scaled logits s_ij:
     *   dbias[b*dbias_stride_b + h*dbias_stride_h + i*dbias_stride_s + j] = dS[b][h][i][j]
     * for every logical (b, h, i, j) of the entries (written, not
     * accumulated; 0 where the mask hides (i, j); padding untouched).
     * Broadcast (a bias shared by the entries or the heads): a zero
     * dbias_stride_b (batch > 1) and / or dbias_stride_h (nhead_q > 1)
     * gives dbias reduced to that shape, the sum of dS over the broadcast
     * dimensions, in a fixed order (bitwise reproducible), rows i <
     * seqlen_q and keys j < seqlen_k (the maxima; an element no entry
     * reaches is 0). It needs the planner's dS section (traits.dbias_reduce,
     * set by ckt_fmha_bwd_traits_of) and runs one more stage, dbias_reduce
     * (ckt/fmha/workspace.h). Needs bias; ALiBi has no gradient. */
    const void *bias; /* optional, device, dtype; NULL: none */
    int64_t bias_stride_b, bias_stride_h, bias_stride_s;
    const float *alibi_slopes; /* optional, device, fp32; NULL: none */
    int64_t alibi_stride_b;
    void *dbias; /* optional, device, dtype, written; NULL: not wanted (needs bias) */
    int64_t dbias_stride_b, dbias_stride_h, dbias_stride_s;
} ckt_fmha_bwd_args;

/* >>append-KV: ckt_fmha_appendkv_args (kernel: ckt/fmha/appendkv_body.h)
 *
 * Appends s_knew = seqlen_knew new tokens per batch entry to a KV cache and
 * applies rotary embedding (ckt/fmha/rope.h) to them and to Q, as CK's
 * appendkv and FlashAttention's flash_attn_with_kvcache do. Entry b's cache
 * row is cb = cache_batch_idx ? cache_batch_idx[b] : b; its current length
 * (before the append) is len_b = seqlen_k_ptr ? seqlen_k_ptr[b] : seqlen_k
 * (with sglang-style page tables: their keys minus s_knew, below):
 *
 *   Kc[cb][hk][len_b + t][:] = rope(Knew[b][hk][t][:], len_b + t)     t < s_knew
 *   Vc[cb][hk][len_b + t][:] = Vnew[b][hk][t][:]
 *   Q[b][h][i][:]            = rope(Q[b][h][i][:], len_b + i)         in place, i < the entry's queries
 *
 * rope(x, pos) turns the first rotary_dim elements of x by the angles of
 * row pos of the tables rotary_cos / rotary_sin: fp32 (whatever the data
 * type: positions up to 128k need the precision), [rotary_max_pos][rotary_dim / 2]
 * contiguous; interleaved pairs (2u, 2u + 1) when rotary_interleaved, else
 * half-split (u, u + rotary_dim / 2). rotary_dim = 0: no rotation (a plain
 * append; q is then not touched and may be NULL). Q's position is its
 * distance past the cache's current end: query i of entry b sits at
 * len_b + i (FlashAttention's convention under a causal mask: the queries
 * are the new tokens). Q is rotated in place; copy it first to keep it.
 *
 * The cache after the append holds len_b + s_knew rows of entry b: attend
 * to it with ckt_fmha_fwd (docs/fmha_appendkv.md gives the two-call recipe;
 * the forward reads a contiguous or paged cache with the same
 * cache_batch_idx and block table directly: docs/fmha_inference.md).
 *
 * Layouts: strides in elements, unit stride on d, like the forward's.
 * k_new / v_new: [batch][nhead_k][s_knew][d] through knew_stride_* /
 * vnew_stride_*. The cache k_cache / v_cache: contiguous through
 * k_stride_b / _h / _s (entries of cache_seqlen rows: the capacity; the
 * cache's batch dimension has cache_batch entries, 0 = batch). q: batch mode
 * [batch][nhead_q][seqlen_q][d] (q_stride_*), group mode (group_mode = 1)
 * entry b's queries are rows seqstart_q[b] .. seqstart_q[b + 1] - 1 of one
 * packed sequence (no q_stride_b; seqlen_q is then the max over the batch).
 *
 * Capacity: len_b + s_knew <= cache_seqlen and len_b + max(s_knew, the
 * entry's queries) <= rotary_max_pos (when rotary_dim > 0). Checked where
 * the host can read the lengths (scalar seqlen_k; on the CPU backend, the
 * arrays too); on a GPU, rows past either bound are not written (no
 * out-of-bounds access), nothing else reports them.
 */
typedef struct ckt_fmha_appendkv_args {
    void *q;                   /* rotated in place; unused when rotary_dim = 0 */
    const void *k_new, *v_new; /* the new tokens */
    void *k_cache, *v_cache;   /* written at rows len_b .. len_b + s_knew - 1 */
    ckt_dtype dtype;           /* CKT_F16 or CKT_BF16: every tensor but the tables */

    int batch, nhead_q, nhead_k;
    int seqlen_q;     /* queries per entry to rotate (group mode: the max) */
    int seqlen_knew;  /* s_knew, new tokens per entry */
    int seqlen_k;     /* current length of every entry, when seqlen_k_ptr is NULL */
    int cache_seqlen; /* rows per cache entry (capacity) */
    int cache_batch;  /* entries of the cache's batch dimension; 0 = batch */
    int hdim_q, hdim_v;

    int64_t q_stride_b, q_stride_h, q_stride_s;
    int64_t knew_stride_b, knew_stride_h, knew_stride_s;
    int64_t vnew_stride_b, vnew_stride_h, vnew_stride_s;
    int64_t k_stride_b, k_stride_h, k_stride_s; /* the cache */
    int64_t v_stride_b, v_stride_h, v_stride_s;

    int group_mode;
    const int32_t *seqstart_q;      /* group mode, device, batch + 1 */
    const int32_t *seqlen_k_ptr;    /* optional, device, batch: len_b */
    const int32_t *cache_batch_idx; /* optional, device, batch: cb */

    int rotary_dim;         /* 0 (none) or even, <= hdim_q */
    int rotary_interleaved; /* 1: pairs (2u, 2u + 1); 0: (u, u + rotary_dim / 2) */
    const float *rotary_cos, *rotary_sin; /* device, [rotary_max_pos][rotary_dim / 2] */
    int rotary_max_pos;

    /* A paged cache (vLLM block table, like ckt_fmha_fwd_args'): page_size
     * > 0 makes k_cache / v_cache pools of num_pages pages, k_stride_b the
     * page stride; position pos of cache row cb is row pos % page_size of
     * page block_table[cb * max_pages_per_seq + pos / page_size]; the
     * capacity is max_pages_per_seq * page_size (cache_seqlen unused). */
    int page_size, num_pages;
    const int32_t *block_table; /* device, [cache_batch][max_pages_per_seq] */
    int max_pages_per_seq;

    /* Or sglang-style tables (instead of block_table; ckt_fmha_fwd_args'
     * fields), which describe the cache AFTER the append, so that the
     * forward takes the same three arrays: entry b's pages are
     * kv_indices[kv_indptr[b] .. kv_indptr[b + 1]), its keys (pages - 1) x
     * page_size + kv_last_page_len[b], the s_knew new ones included; its
     * current length len_b is that minus seqlen_knew (seqlen_k and
     * seqlen_k_ptr unused; no cache_batch_idx). */
    const int32_t *kv_indptr, *kv_indices, *kv_last_page_len; /* device */
} ckt_fmha_appendkv_args;

/* The mask's window, visibility predicate and tile ranges: ckt/fmha/mask.h. */

/* Contiguous strides for [b][h][s][d] (bhsd = 1) or [b][s][h][d] (bhsd = 0);
 * in group mode the batch stride is unused (set to 0). */
static inline void ckt_fmha_strides(int64_t *sb, int64_t *sh, int64_t *ss, int bhsd, int nhead,
                                    int seqlen, int hdim)
{
    if (bhsd) {
        *ss = hdim;
        *sh = (int64_t)seqlen * hdim;
        *sb = (int64_t)nhead * seqlen * hdim;
    } else {
        *ss = (int64_t)nhead * hdim;
        *sh = hdim;
        *sb = (int64_t)seqlen * nhead * hdim;
    }
}

#endif /* CKT_FMHA_ARGS_H */
