/* ckt/fmha/validate.h — argument checks of the FMHA forward and backward
 * (and of the append-KV kernel: ckt_fmha_appendkv_validate, its own section
 * at the end, on the same helpers), shared by every instance launcher
 * (NAME_launch / NAME_run), the dispatcher (ckt_fmha_fwd / ckt_fmha_bwd /
 * ckt_fmha_appendkv) and the CPU references.
 *
 *   ckt_status s = ckt_fmha_fwd_validate(a, CKT_BF16, 128, 128);  // the instance's dtype, HDIM, HDIM_V
 *   if (s != CKT_SUCCESS) return s;          // ckt_last_error(): "q_stride_s: 100 is not a multiple of 8 ..."
 *   if (ckt_fmha_fwd_is_empty(a)) return CKT_SUCCESS;   // nothing to launch
 *   (the backward: ckt_fmha_bwd_validate, ckt_fmha_bwd_is_empty)
 *
 * Every failure names the argument first ("argname: what"). The checks both
 * directions share (the fields of ckt_fmha_fwd_args and ckt_fmha_bwd_args
 * that have the same names and meaning):
 *   args               not NULL
 *   dtype              fp16 or bf16 (the forward also fp8 e4m3), and the instance's
 *   sizes              batch, nhead_q, nhead_k, seqlen_q, seqlen_k >= 0;
 *                      nhead_k >= 1 when nhead_q >= 1 and nhead_q a multiple of nhead_k
 *   hdim_q, hdim_v     > 0, multiples of 8 (the 16-byte vector), <= the instance's
 *   group_mode         0 or 1; batch mode takes no seqstart / seqlen arrays
 *   scale, softcap     finite and >= 0 (0 = default / none)
 *   mask               a ckt_fmha_mask; window_left / window_right > 0 only with
 *                      the CKT_MASK_WINDOW_* kinds (elsewhere they would be ignored);
 *                      for windows any value < 0 means unlimited
 * the forward's fp8 (dtype CKT_FP8_E4M3, ckt__fmha_check_fp8):
 *   o_dtype            fp16 or bf16
 *   descale_q/k/v, scale_p  finite and >= 0 (0 = default)
 *   hdim_q, hdim_v, q/k/v strides  multiples of 16 (16-byte rows of bytes)
 *   p_drop, bias, alibi_slopes, the KV cache  unset (CKT_ERROR_UNSUPPORTED)
 * then, if the problem is empty (nothing to compute or write: see
 * ckt_fmha_fwd_is_empty / ckt_fmha_bwd_is_empty), nothing else. Otherwise,
 * for every tensor the call reads or writes:
 *   pointers           not NULL; 16-byte aligned (fp32 lse: 4-byte; the int32
 *                      group arrays: 4-byte)
 *   strides            >= 0, and for fp16 / bf16 tensors multiples of 8 elements; a
 *                      stride of an extent-1 dimension (one head, one batch entry,
 *                      one row) is never used and not checked; stride_b not in group mode
 *   outputs            do not overlap themselves: sorted by stride, each dimension's
 *                      stride covers the span of the dimensions below it, so that no
 *                      two elements share an address (ckt_fmha_check_disjoint; group
 *                      mode counts two rows, the packed total being on the device)
 *   group arrays       seqstart_q, seqstart_k (and the optional logical lengths)
 *                      set and 4-byte aligned in group mode; read on the CPU backend
 *                      only, where "device" arrays are host memory (ckt_fmha_fwd_check_seqs):
 *                      start >= 0, never decreasing; logical lengths within the
 *                      physical ones and within seqlen_q / seqlen_k (the max over the batch)
 * Forward: q and o; k and v when seqlen_k > 0; lse optional; sink optional
 * (4-byte aligned, checked before the empty test); dropout: p_drop in [0, 1),
 * drop_seed_offset 8-byte aligned, randval only with p_drop > 0 (strides >= 0),
 * before the empty test (the backward: p_drop and drop_seed_offset alike).
 * Backward: q, o, dout, lse (required) and dq when seqlen_q > 0; k, v, dk, dv
 * when seqlen_k > 0; sink and dsink optional, 4-byte aligned, dsink only
 * with sink (before the empty test); deterministic 0 or 1; workspace non-NULL, 16-byte aligned
 * (its size and contents are the planner's to check: ckt/fmha/workspace.h).
 * Both: bias and ALiBi (before the empty test, ckt__fmha_check_bias): not
 * both, not with a soft-cap; bias 2-byte aligned, strides >= 0; slopes
 * 4-byte aligned, alibi_stride_b >= 0. Backward's dbias: needs bias, 2-byte
 * aligned, no overlap but for broadcast (zero) batch / head strides.
 * Not checked: that different tensors do not overlap each other, that device
 * arrays are readable (GPU backends), grid limits (the launcher's).
 */
#ifndef CKT_FMHA_VALIDATE_H
#define CKT_FMHA_VALIDATE_H

#include "ckt/arch/config.h"
#include "ckt/fmha/args.h"
#include "ckt/fmha/kv.h"
#include "ckt/fmha/splitkv.h"
#include "ckt/host/status.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest head dim of the append-KV kernel (generic below it). */
#define CKT_FMHA_APPENDKV_MAX_HDIM 256

/* The elements of a vector access: 16 bytes of fp16 / bf16. */
#define CKT_FMHA_VEC_ELEMS 8

static inline const char *ckt_fmha_mask_name(ckt_fmha_mask m)
{
    switch (m) {
    case CKT_MASK_NONE: return "CKT_MASK_NONE";
    case CKT_MASK_CAUSAL_TOP_LEFT: return "CKT_MASK_CAUSAL_TOP_LEFT";
    case CKT_MASK_CAUSAL_BOTTOM_RIGHT: return "CKT_MASK_CAUSAL_BOTTOM_RIGHT";
    case CKT_MASK_WINDOW_TOP_LEFT: return "CKT_MASK_WINDOW_TOP_LEFT";
    case CKT_MASK_WINDOW_BOTTOM_RIGHT: return "CKT_MASK_WINDOW_BOTTOM_RIGHT";
    default: return "?";
    }
}

/* 1 when the call has nothing to compute (and writes nothing): no batch
 * entries, no heads or no queries. seqlen_k = 0 is NOT empty: every row is
 * then fully masked and gets O = 0, LSE = -inf. */
static inline int ckt_fmha_fwd_is_empty(const ckt_fmha_fwd_args *a)
{
    return a->batch == 0 || a->nhead_q == 0 || a->seqlen_q == 0;
}

/* 1 when the backward has nothing to compute (and writes nothing): no batch
 * entries, no query heads, or neither queries nor keys. seqlen_q = 0 with
 * seqlen_k > 0 is NOT empty: the keys get dK = dV = 0 (they saw no query),
 * and seqlen_k = 0 with seqlen_q > 0 gives dQ = 0. (nhead_q = 0 implies
 * nhead_k = 0: there are no heads to write.) */
static inline int ckt_fmha_bwd_is_empty(const ckt_fmha_bwd_args *a)
{
    return a->batch == 0 || a->nhead_q == 0 || (a->seqlen_q == 0 && a->seqlen_k == 0);
}

#define CKT__FMHA_TRY(call)                                                                        \
    do {                                                                                           \
        ckt_status ckt__s = (call);                                                                \
        if (ckt__s != CKT_SUCCESS)                                                                 \
            return ckt__s;                                                                         \
    } while (0)

/* >>the fields both directions share */

typedef struct ckt__fmha_common {
    ckt_dtype dtype;
    int batch, nhead_q, nhead_k;
    int seqlen_q, seqlen_k;
    int hdim_q, hdim_v;
    int group_mode;
    const int32_t *seqstart_q, *seqstart_k;
    const int32_t *seqlen_q_ptr, *seqlen_k_ptr;
    float scale, softcap;
    ckt_fmha_mask mask;
    int window_left, window_right;
    int kv_cache; /* the forward: seqlen_k_ptr also in batch mode (a cache's lengths) */
    int paged;    /* the forward over a paged cache: no seqstart_k */
} ckt__fmha_common;

/* The shared fields, listed once: both adapters copy them. */
#define CKT__FMHA_COMMON_FIELDS(X)                                                                      \
    X(dtype) X(batch) X(nhead_q) X(nhead_k) X(seqlen_q) X(seqlen_k) X(hdim_q) X(hdim_v) X(group_mode)   \
    X(seqstart_q) X(seqstart_k) X(seqlen_q_ptr) X(seqlen_k_ptr) X(scale) X(softcap) X(mask)             \
    X(window_left) X(window_right)
#define CKT__FMHA_COMMON_COPY(f) c.f = a->f;

static inline ckt__fmha_common ckt__fmha_common_of_fwd(const ckt_fmha_fwd_args *a)
{
    ckt__fmha_common c;
    CKT__FMHA_COMMON_FIELDS(CKT__FMHA_COMMON_COPY)
    c.kv_cache = 1;
    c.paged = a->page_size != 0;
    return c;
}

static inline ckt__fmha_common ckt__fmha_common_of_bwd(const ckt_fmha_bwd_args *a)
{
    ckt__fmha_common c;
    CKT__FMHA_COMMON_FIELDS(CKT__FMHA_COMMON_COPY)
    c.kv_cache = 0;
    c.paged = 0;
    return c;
}

/* Group-mode arrays, read on the host: seqstart_q / seqstart_k (batch + 1
 * entries, start >= 0, never decreasing) and the optional logical lengths
 * seqlen_q_ptr / seqlen_k_ptr (batch entries, 0 <= len <= the physical length
 * seqstart[b + 1] - seqstart[b]); each logical length at most seqlen_q /
 * seqlen_k. Nothing to check in batch mode. The arrays must be readable here:
 * host copies, or the CPU backend's "device" memory. */
static inline ckt_status ckt__fmha_check_starts(const int32_t *start, const int32_t *len, int max, int batch,
                                                const char *ss, const char *ls, const char *ms)
{
    if (!start)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "%s: NULL in group mode", ss);
    if (start[0] < 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: [0] = %d is negative", ss, (int)start[0]);
    for (int b = 0; b < batch; b++) {
        const int32_t phys = start[b + 1] - start[b];
        if (start[b + 1] < start[b])
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: decreases at entry %d (%d then %d)", ss, b,
                             (int)start[b], (int)start[b + 1]);
        int32_t n = phys;
        if (len) {
            n = len[b];
            if (n < 0 || n > phys)
                return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                                 "%s: [%d] = %d is outside [0, %d] (the physical length %s[%d] - %s[%d])", ls, b,
                                 (int)n, (int)phys, ss, b + 1, ss, b);
        }
        if (n > max)
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                             "%s: %d is less than entry %d's length %d (group mode: the max over the batch)", ms, max,
                             b, (int)n);
    }
    return CKT_SUCCESS;
}

/* Per-entry key counts without seqstart_k (the forward's KV cache: batch
 * mode, or a paged cache): 0 <= seqlen_k_ptr[b] <= seqlen_k. */
static inline ckt_status ckt__fmha_check_lengths(const int32_t *len, int max, int batch, const char *ls,
                                                 const char *ms)
{
    for (int b = 0; len && b < batch; b++)
        if (len[b] < 0 || len[b] > max)
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: [%d] = %d is outside [0, %s = %d]", ls, b, (int)len[b],
                             ms, max);
    return CKT_SUCCESS;
}

static inline ckt_status ckt__fmha_check_seqs(const ckt__fmha_common *a)
{
    if (!a->group_mode || a->paged)
        CKT__FMHA_TRY(ckt__fmha_check_lengths(a->seqlen_k_ptr, a->seqlen_k, a->batch, "seqlen_k_ptr", "seqlen_k"));
    if (!a->group_mode)
        return CKT_SUCCESS;
    CKT__FMHA_TRY(ckt__fmha_check_starts(a->seqstart_q, a->seqlen_q_ptr, a->seqlen_q, a->batch, "seqstart_q",
                                         "seqlen_q_ptr", "seqlen_q"));
    if (a->paged)
        return CKT_SUCCESS;
    return ckt__fmha_check_starts(a->seqstart_k, a->seqlen_k_ptr, a->seqlen_k, a->batch, "seqstart_k",
                                  "seqlen_k_ptr", "seqlen_k");
}

/* The group-mode arrays of the forward's or the backward's arguments (the
 * same fields): see ckt__fmha_check_seqs. */
static inline ckt_status ckt_fmha_fwd_check_seqs(const ckt_fmha_fwd_args *a)
{
    const ckt__fmha_common c = ckt__fmha_common_of_fwd(a);
    return ckt__fmha_check_seqs(&c);
}

static inline ckt_status ckt_fmha_bwd_check_seqs(const ckt_fmha_bwd_args *a)
{
    const ckt__fmha_common c = ckt__fmha_common_of_bwd(a);
    return ckt__fmha_check_seqs(&c);
}

/* >>validation helpers */

static inline ckt_status ckt__fmha_check_ptr(const void *p, const char *name, unsigned align)
{
    if (!p)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "%s: NULL", name);
    if ((uintptr_t)p % align != 0)
        return ckt__fail(CKT_ERROR_MISALIGNED, "%s: %#llx is not %u-byte aligned", name,
                         (unsigned long long)(uintptr_t)p, align);
    return CKT_SUCCESS;
}

/* >>dropout: p_drop in [0, 1) (0: off; NaN fails too), drop_seed_offset
 * 8-byte aligned when given; the forward's randval only with p_drop > 0,
 * strides >= 0. Before the empty test. */
static inline ckt_status ckt__fmha_check_dropout(float p, const uint64_t *seed_offset)
{
    if (!(p >= 0.0f && p < 1.0f))
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "p_drop: %g (must be in [0, 1); 0 = no dropout)", (double)p);
    if (seed_offset)
        CKT__FMHA_TRY(ckt__fmha_check_ptr(seed_offset, "drop_seed_offset", 8));
    return CKT_SUCCESS;
}

static inline ckt_status ckt__fmha_check_randval(const ckt_fmha_fwd_args *a)
{
    if (!a->randval)
        return CKT_SUCCESS;
    if (a->p_drop == 0.0f)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "randval: set, but p_drop is 0 (no dropout: nothing to store)");
    if (a->randval_stride_b < 0 || a->randval_stride_h < 0 || a->randval_stride_s < 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "randval_stride_%s: %lld (must be >= 0)",
                         a->randval_stride_b < 0 ? "b" : a->randval_stride_h < 0 ? "h" : "s",
                         (long long)(a->randval_stride_b < 0   ? a->randval_stride_b
                                     : a->randval_stride_h < 0 ? a->randval_stride_h
                                                               : a->randval_stride_s));
    return CKT_SUCCESS;
}

/* A stride of a dimension of `extent` indices; vec: must be a multiple of the
 * vector width. An extent-1 dimension's stride is never used. */
static inline ckt_status ckt__fmha_check_stride(int64_t stride, const char *name, int64_t extent, int vec)
{
    if (extent <= 1)
        return CKT_SUCCESS;
    if (stride < 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %lld is negative", name, (long long)stride);
    if (vec && stride % CKT_FMHA_VEC_ELEMS != 0)
        return ckt__fail(CKT_ERROR_MISALIGNED, "%s: %lld is not a multiple of %d elements (16-byte vectors)",
                         name, (long long)stride, CKT_FMHA_VEC_ELEMS);
    return CKT_SUCCESS;
}

static inline ckt_status ckt__fmha_check_hdim(int d, const char *name, int inst, const char *inst_name)
{
    if (d <= 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %d (must be > 0)", name, d);
    if (d % CKT_FMHA_VEC_ELEMS != 0)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "%s: %d is not a multiple of %d (the vector width)", name, d,
                         CKT_FMHA_VEC_ELEMS);
    if (d > inst)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "%s: %d exceeds this instance's %s %d", name, d, inst_name, inst);
    return CKT_SUCCESS;
}

/* One dimension of a strided layout, for ckt_fmha_check_disjoint: its
 * stride in elements, its extent, the stride's argument name ("o_stride_s";
 * for the unit-stride innermost dimension, the extent's: "hdim_v") and
 * what it indexes ("rows"). */
typedef struct ckt_fmha_dim {
    int64_t stride, extent;
    const char *name, *what;
} ckt_fmha_dim;

/* Whether the n dimensions of a layout address every element once (no two
 * index tuples share an address): sorted by stride, each dimension's stride
 * must be at least the span of the dimensions below it,
 *   stride_k >= 1 + sum_{j below k} (extent_j - 1) * stride_j,
 * dimensions of extent 1 (never stepped) ignored. That is sufficient, and
 * for the layouts a tensor library makes (every stride a multiple of the
 * span below, or padding on top) also necessary. On failure
 * CKT_ERROR_INVALID_ARGUMENT naming the offending stride:
 *   "o_stride_s: 64 is less than hdim_v 128: output rows would overlap"
 *   "o_stride_h: 256 is less than 12800, the span of the dimensions below it
 *    (hdim_v, o_stride_s): output heads would overlap"
 *   "o_stride_h: 0 with 4 heads: output heads would overlap"
 * Negative strides are the stride check's (ckt__fmha_check_stride) to report
 * first; here they are taken as they are. dims is reordered. */
static inline ckt_status ckt_fmha_check_disjoint(ckt_fmha_dim *dims, int n)
{
    /* insertion sort by stride (n is 4 at most), extent-1 dimensions dropped */
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (dims[i].extent <= 1)
            continue;
        const ckt_fmha_dim d = dims[i];
        int j = m++;
        for (; j > 0 && dims[j - 1].stride > d.stride; j--)
            dims[j] = dims[j - 1];
        dims[j] = d;
    }
    int64_t span = 1; /* elements from the first to the last of the dimensions so far, + 1 */
    for (int k = 0; k < m; k++) {
        if (dims[k].stride < span) {
            char below[96] = "";
            size_t used = 0;
            for (int j = 0; j < k && used < sizeof below; j++)
                used += (size_t)snprintf(below + used, sizeof below - used, "%s%s", j ? ", " : "", dims[j].name);
            if (k == 0) /* a zero stride (negative ones are reported before) */
                return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %lld with %lld %s: output %s would overlap",
                                 dims[k].name, (long long)dims[k].stride, (long long)dims[k].extent, dims[k].what,
                                 dims[k].what);
            if (k == 1)
                return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %lld is less than %s %lld: output %s would overlap",
                                 dims[k].name, (long long)dims[k].stride, dims[0].name, (long long)span, dims[k].what);
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                             "%s: %lld is less than %lld, the span of the dimensions below it (%s): output %s would overlap",
                             dims[k].name, (long long)dims[k].stride, (long long)span, below, dims[k].what);
        }
        span += (dims[k].extent - 1) * dims[k].stride;
    }
    return CKT_SUCCESS;
}

/* One fp16 / bf16 tensor [b][h][s][d] of the call: pointer (16-byte aligned),
 * strides (>= 0, multiples of 8 where used), and for an output, disjoint
 * (ckt_fmha_check_disjoint). name is its pointer's ("q", "dout"); sname the
 * stride prefix ("q", "do"); heads, rows, width its extents (rows: the
 * entry's rows, counted as two in group mode, whose batch dimension is the
 * packed rows). wname names the width ("hdim_q", "hdim_v"). */
static inline ckt_status ckt__fmha_check_tensor(const void *p, const char *name, const char *sname, int64_t sb,
                                                int64_t sh, int64_t ss, const ckt__fmha_common *c, int heads, int rows,
                                                int width, const char *wname, int output)
{
    char nb[32], nh[32], ns[32];
    const int64_t eb = c->group_mode ? 1 : c->batch, es = c->group_mode ? 2 : rows;
    snprintf(nb, sizeof nb, "%s_stride_b", sname);
    snprintf(nh, sizeof nh, "%s_stride_h", sname);
    snprintf(ns, sizeof ns, "%s_stride_s", sname);
    CKT__FMHA_TRY(ckt__fmha_check_ptr(p, name, 16));
    CKT__FMHA_TRY(ckt__fmha_check_stride(sb, nb, eb, 1));
    CKT__FMHA_TRY(ckt__fmha_check_stride(sh, nh, heads, 1));
    CKT__FMHA_TRY(ckt__fmha_check_stride(ss, ns, es, 1));
    if (output) {
        ckt_fmha_dim dims[4];
        dims[0].stride = 1, dims[0].extent = width, dims[0].name = wname, dims[0].what = "columns";
        dims[1].stride = ss, dims[1].extent = es, dims[1].name = ns, dims[1].what = "rows";
        dims[2].stride = sh, dims[2].extent = heads, dims[2].name = nh, dims[2].what = "heads";
        dims[3].stride = sb, dims[3].extent = eb, dims[3].name = nb, dims[3].what = "batch entries";
        CKT__FMHA_TRY(ckt_fmha_check_disjoint(dims, 4));
    }
    return CKT_SUCCESS;
}

/* The checks every FMHA argument struct shares: the instance's dtype, sizes
 * that must not be negative (names[i] for vals[i]), the GQA head counts and
 * the mode flag. */
static inline ckt_status ckt__fmha_check_dtype(ckt_dtype got, ckt_dtype dtype)
{
    if (got != CKT_F16 && got != CKT_BF16 && !(got == CKT_FP8_E4M3 && dtype == CKT_FP8_E4M3))
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "dtype: %s (%d): fmha takes fp16 or bf16 (and the forward fp8)",
                         ckt_dtype_name(got), (int)got);
    if (got != dtype)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "dtype: %s, this instance is %s", ckt_dtype_name(got),
                         ckt_dtype_name(dtype));
    return CKT_SUCCESS;
}

static inline ckt_status ckt__fmha_check_nonneg(const char *const *names, const int *vals, int n)
{
    for (int i = 0; i < n; i++)
        if (vals[i] < 0)
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %d is negative", names[i], vals[i]);
    return CKT_SUCCESS;
}

static inline ckt_status ckt__fmha_check_heads_mode(int nhead_q, int nhead_k, int group_mode)
{
    if (nhead_q > 0 && nhead_k == 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "nhead_k: 0 (must be >= 1 when nhead_q is %d)", nhead_q);
    if (nhead_k > 0 && nhead_q % nhead_k != 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "nhead_q: %d is not a multiple of nhead_k %d (GQA / MQA)",
                         nhead_q, nhead_k);
    if (group_mode != 0 && group_mode != 1)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "group_mode: %d (0 = batch, 1 = group)", group_mode);
    return CKT_SUCCESS;
}

/* The checks before the empty test, on the shared fields (see the top). */
static inline ckt_status ckt__fmha_check_common(const ckt__fmha_common *a, ckt_dtype dtype, int hdim, int hdim_v)
{
    /* the instance */
    CKT__FMHA_TRY(ckt__fmha_check_dtype(a->dtype, dtype));

    /* sizes */
    {
        const char *const names[] = {"batch", "nhead_q", "nhead_k", "seqlen_q", "seqlen_k"};
        const int vals[] = {a->batch, a->nhead_q, a->nhead_k, a->seqlen_q, a->seqlen_k};
        CKT__FMHA_TRY(ckt__fmha_check_nonneg(names, vals, 5));
    }
    CKT__FMHA_TRY(ckt__fmha_check_hdim(a->hdim_q, "hdim_q", hdim, "HDIM"));
    CKT__FMHA_TRY(ckt__fmha_check_hdim(a->hdim_v, "hdim_v", hdim_v, "HDIM_V"));
    CKT__FMHA_TRY(ckt__fmha_check_heads_mode(a->nhead_q, a->nhead_k, a->group_mode));
    if (!a->group_mode) {
        const char *set = a->seqstart_q ? "seqstart_q" : a->seqstart_k ? "seqstart_k"
                        : a->seqlen_q_ptr ? "seqlen_q_ptr" : a->seqlen_k_ptr && !a->kv_cache ? "seqlen_k_ptr" : NULL;
        if (set)
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: set, but group_mode is 0 (batch mode ignores it)", set);
    }

    /* softmax and mask */
    if (!isfinite(a->scale) || a->scale < 0.0f)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "scale: %g (must be finite and >= 0; 0 = 1/sqrt(hdim_q))",
                         (double)a->scale);
    if (!isfinite(a->softcap) || a->softcap < 0.0f)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "softcap: %g (must be finite and >= 0; 0 = none)",
                         (double)a->softcap);
    if ((unsigned)a->mask > (unsigned)CKT_MASK_WINDOW_BOTTOM_RIGHT)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "mask: %d is not a ckt_fmha_mask", (int)a->mask);
    if (a->mask != CKT_MASK_WINDOW_TOP_LEFT && a->mask != CKT_MASK_WINDOW_BOTTOM_RIGHT &&
        (a->window_left > 0 || a->window_right > 0))
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "%s: %d, but mask %s ignores it (windows are CKT_MASK_WINDOW_TOP_LEFT / _BOTTOM_RIGHT)",
                         a->window_left > 0 ? "window_left" : "window_right",
                         a->window_left > 0 ? a->window_left : a->window_right, ckt_fmha_mask_name(a->mask));
    return CKT_SUCCESS;
}

/* The group-mode arrays' pointers, and on the CPU backend their contents. */
static inline ckt_status ckt__fmha_check_group(const ckt__fmha_common *a)
{
    if (!a->group_mode) {
        if (a->seqlen_k_ptr) /* the forward's cache lengths */
            CKT__FMHA_TRY(ckt__fmha_check_ptr(a->seqlen_k_ptr, "seqlen_k_ptr", 4));
#if defined(CKT_BACKEND_CPU)
        CKT__FMHA_TRY(ckt__fmha_check_seqs(a));
#endif
        return CKT_SUCCESS;
    }
    CKT__FMHA_TRY(ckt__fmha_check_ptr(a->seqstart_q, "seqstart_q", 4));
    if (!a->paged)
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->seqstart_k, "seqstart_k", 4));
    if (a->seqlen_q_ptr)
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->seqlen_q_ptr, "seqlen_q_ptr", 4));
    if (a->seqlen_k_ptr)
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->seqlen_k_ptr, "seqlen_k_ptr", 4));
#if defined(CKT_BACKEND_CPU)
    /* the emulator's device memory is host memory: the arrays can be read */
    CKT__FMHA_TRY(ckt__fmha_check_seqs(a));
#endif
    return CKT_SUCCESS;
}

/* The LSE rows (fp32, unit stride along the rows): pointer and strides. */
static inline ckt_status ckt__fmha_check_lse(const float *lse, int64_t sb, int64_t sh, const ckt__fmha_common *c)
{
    CKT__FMHA_TRY(ckt__fmha_check_ptr(lse, "lse", 4));
    CKT__FMHA_TRY(ckt__fmha_check_stride(sb, "lse_stride_b", c->group_mode ? 1 : c->batch, 0));
    return ckt__fmha_check_stride(sh, "lse_stride_h", c->nhead_q, 0);
}

/* >>the forward's KV cache and split-KV (ckt/fmha/args.h, the inference fields) */

/* Does a call use the KV cache's features (pages, cache_batch_idx, a split)?
 * Instances compiled without them (CKT_FMHA_KV_CACHE 0) decline it. */
static inline int ckt_fmha_fwd_uses_kv_cache(const ckt_fmha_fwd_args *a)
{
    return a->page_size != 0 || a->cache_batch_idx != NULL || a->num_splits > 1 ||
           (a->num_splits == 0 && a->workspace != NULL);
}

/* A paged pool: pointer, strides (page, head, position in page) for
 * num_pages pages of page_size rows. */
static inline ckt_status ckt__fmha_check_pool(const void *p, const char *name, int64_t sb, int64_t sh, int64_t ss,
                                              const ckt_fmha_fwd_args *a)
{
    char nb[32], nh[32], ns[32];
    snprintf(nb, sizeof nb, "%s_stride_b", name);
    snprintf(nh, sizeof nh, "%s_stride_h", name);
    snprintf(ns, sizeof ns, "%s_stride_s", name);
    CKT__FMHA_TRY(ckt__fmha_check_ptr(p, name, 16));
    CKT__FMHA_TRY(ckt__fmha_check_stride(sb, nb, a->num_pages, 1));
    CKT__FMHA_TRY(ckt__fmha_check_stride(sh, nh, a->nhead_k, 1));
    return ckt__fmha_check_stride(ss, ns, a->page_size, 1);
}

/* sglang-style tables read on the host (the forward's and the append's):
 * kv_indptr from >= 0 and never decreasing, each kv_last_page_len[b] of an
 * entry with pages in [1, page_size], the ids of its pages in [0, num_pages). */
static inline ckt_status ckt__fmha_check_sglang(const int32_t *indptr, const int32_t *indices, const int32_t *last,
                                                int batch, int page_size, int num_pages)
{
    if (indptr[0] < 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "kv_indptr: [0] = %d is negative", (int)indptr[0]);
    for (int b = 0; b < batch; b++) {
        const int32_t n = indptr[b + 1] - indptr[b];
        if (n < 0)
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "kv_indptr: decreases at entry %d (%d then %d)", b,
                             (int)indptr[b], (int)indptr[b + 1]);
        if (n > 0 && (last[b] < 1 || last[b] > page_size))
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "kv_last_page_len: [%d] = %d is outside [1, page_size %d]", b,
                             (int)last[b], page_size);
        for (int p = 0; p < n; p++) {
            const int32_t id = indices[indptr[b] + p];
            if (id < 0 || id >= num_pages)
                return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                                 "kv_indices: [%d] = %d (entry %d's page %d) is outside [0, num_pages %d)",
                                 (int)(indptr[b] + p), (int)id, b, p, num_pages);
        }
    }
    return CKT_SUCCESS;
}

/* The page tables, read on the host (the CPU backend's device memory): ids
 * of the pages an entry uses in [0, num_pages), lengths within the tables
 * and within seqlen_k. */
static inline ckt_status ckt__fmha_check_pages(const ckt_fmha_fwd_args *a)
{
    const int ps = a->page_size;
    if (a->block_table) { /* vLLM */
        for (int b = 0; b < a->batch; b++) {
            const int cb = a->cache_batch_idx ? a->cache_batch_idx[b] : b;
            const int sk = a->seqlen_k_ptr ? a->seqlen_k_ptr[b] : a->seqlen_k;
            if ((int64_t)sk > (int64_t)a->max_pages_per_seq * ps)
                return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                                 "%s: entry %d has %d keys, more than max_pages_per_seq %d x page_size %d",
                                 a->seqlen_k_ptr ? "seqlen_k_ptr" : "seqlen_k", b, sk, a->max_pages_per_seq, ps);
            for (int p = 0; p < CKT_CEIL_DIV(sk, ps); p++) {
                const int32_t id = a->block_table[(int64_t)cb * a->max_pages_per_seq + p];
                if (id < 0 || id >= a->num_pages)
                    return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                                     "block_table: [%d][%d] = %d (entry %d's page %d) is outside [0, num_pages %d)", cb,
                                     p, (int)id, b, p, a->num_pages);
            }
        }
        return CKT_SUCCESS;
    }
    CKT__FMHA_TRY(ckt__fmha_check_sglang(a->kv_indptr, a->kv_indices, a->kv_last_page_len, a->batch, ps,
                                         a->num_pages)); /* sglang */
    const ckt_fmha_paging pg = CKT_FMHA_PAGING(*a);
    for (int b = 0; b < a->batch; b++) {
        const int64_t sk = ckt_fmha_sglang_keys(&pg, b);
        if (sk > a->seqlen_k)
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                             "seqlen_k: %d is less than entry %d's %lld keys (the max over the batch)", a->seqlen_k, b,
                             (long long)sk);
    }
    return CKT_SUCCESS;
}

/* The paging fields of a forward or an append: page_size >= 0; without
 * pages, no table or pool size; with pages, one table style (a block table
 * with its row length >= 1, or sglang's three arrays, which take neither
 * cache_batch_idx nor seqlen_k_ptr: they select the pages and give the
 * lengths), num_pages >= 1, the tables 4-byte aligned. */
static inline ckt_status ckt__fmha_check_paging(int page_size, int num_pages, const int32_t *block_table,
                                                int max_pages_per_seq, const int32_t *kv_indptr,
                                                const int32_t *kv_indices, const int32_t *kv_last_page_len,
                                                const int32_t *cache_batch_idx, const int32_t *seqlen_k_ptr)
{
    const int sgl = kv_indptr || kv_indices || kv_last_page_len;
    if (page_size < 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "page_size: %d is negative (0 = no paged cache)", page_size);
    if (page_size == 0) {
        const char *set = block_table ? "block_table" : kv_indptr ? "kv_indptr" : kv_indices ? "kv_indices"
                        : kv_last_page_len ? "kv_last_page_len" : num_pages ? "num_pages"
                        : max_pages_per_seq ? "max_pages_per_seq" : NULL;
        if (set)
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: set, but page_size is 0 (no paged cache)", set);
        return CKT_SUCCESS;
    }
    if (block_table && sgl)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "block_table: set together with kv_indptr / kv_indices / kv_last_page_len (one page-table "
                         "style per call)");
    if (!block_table && !sgl)
        return ckt__fail(CKT_ERROR_NULL_POINTER,
                         "block_table: NULL (a paged cache needs block_table, or kv_indptr, kv_indices and "
                         "kv_last_page_len)");
    if (num_pages <= 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "num_pages: %d (the pool's pages, >= 1)", num_pages);
    if (block_table) {
        CKT__FMHA_TRY(ckt__fmha_check_ptr(block_table, "block_table", 4));
        if (max_pages_per_seq <= 0)
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "max_pages_per_seq: %d (block_table's row length, >= 1)",
                             max_pages_per_seq);
        return CKT_SUCCESS;
    }
    CKT__FMHA_TRY(ckt__fmha_check_ptr(kv_indptr, "kv_indptr", 4));
    CKT__FMHA_TRY(ckt__fmha_check_ptr(kv_indices, "kv_indices", 4));
    CKT__FMHA_TRY(ckt__fmha_check_ptr(kv_last_page_len, "kv_last_page_len", 4));
    if (cache_batch_idx)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "cache_batch_idx: set with sglang-style tables (kv_indptr selects the pages)");
    if (seqlen_k_ptr)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "seqlen_k_ptr: set with sglang-style tables (kv_last_page_len gives the lengths)");
    return CKT_SUCCESS;
}

static inline ckt_status ckt__fmha_check_fwd_cache(const ckt_fmha_fwd_args *a)
{
    if (a->cache_batch < 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "cache_batch: %d is negative (0 = batch)", a->cache_batch);
    if (a->num_splits < 0 || a->num_splits > CKT_FMHA_MAX_SPLITS)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "num_splits: %d (0 = automatic, 1 = none, at most %d)",
                         a->num_splits, CKT_FMHA_MAX_SPLITS);
    if (a->workspace)
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->workspace, "workspace", 16));
    CKT__FMHA_TRY(ckt__fmha_check_paging(a->page_size, a->num_pages, a->block_table, a->max_pages_per_seq,
                                         a->kv_indptr, a->kv_indices, a->kv_last_page_len, a->cache_batch_idx,
                                         a->seqlen_k_ptr));
    if (a->page_size == 0 && a->cache_batch_idx && a->group_mode)
        return ckt__fail(CKT_ERROR_UNSUPPORTED,
                         "cache_batch_idx: set in group mode with a contiguous cache (packed keys have no cache "
                         "entries; use batch mode or a paged cache)");
    if (a->page_size > 0 && a->group_mode && a->seqstart_k)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "seqstart_k: set, but a paged cache has no packed keys (lengths: seqlen_k_ptr or the "
                         "page table)");
    if (a->cache_batch_idx)
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->cache_batch_idx, "cache_batch_idx", 4));
#if defined(CKT_BACKEND_CPU)
    /* the emulator's device memory is host memory: the tables can be read */
    if (a->cache_batch_idx) {
        const int nc = a->cache_batch > 0 ? a->cache_batch : a->batch;
        for (int b = 0; b < a->batch; b++)
            if (a->cache_batch_idx[b] < 0 || a->cache_batch_idx[b] >= nc)
                return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "cache_batch_idx: [%d] = %d is outside [0, %s %d)", b,
                                 (int)a->cache_batch_idx[b], a->cache_batch > 0 ? "cache_batch" : "batch", nc);
    }
    if (a->page_size > 0 && !ckt_fmha_fwd_is_empty(a))
        CKT__FMHA_TRY(ckt__fmha_check_pages(a));
#endif
    return CKT_SUCCESS;
}

/* >>bias: bias and ALiBi (ckt/fmha/bias.h), both directions' fields, before
 * the empty test: one of the two, never with a soft-cap; bias 2-byte
 * aligned, strides >= 0 (zero: broadcast); slopes 4-byte aligned,
 * alibi_stride_b >= 0 */
static inline ckt_status ckt__fmha_check_bias(const void *bias, int64_t sb, int64_t sh, int64_t ss,
                                              const float *slopes, int64_t slope_sb, float softcap)
{
    if (bias && slopes)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "alibi_slopes: set together with bias (one additive bias a call: add the ALiBi terms into "
                         "the bias tensor)");
    if ((bias || slopes) && softcap > 0.0f)
        return ckt__fail(CKT_ERROR_UNSUPPORTED,
                         "%s: set with softcap %g (a bias and a soft-cap have no agreed order: use one of them)",
                         bias ? "bias" : "alibi_slopes", (double)softcap);
    if (bias) {
        CKT__FMHA_TRY(ckt__fmha_check_ptr(bias, "bias", 2));
        CKT__FMHA_TRY(ckt__fmha_check_stride(sb, "bias_stride_b", 2, 0));
        CKT__FMHA_TRY(ckt__fmha_check_stride(sh, "bias_stride_h", 2, 0));
        CKT__FMHA_TRY(ckt__fmha_check_stride(ss, "bias_stride_s", 2, 0));
    }
    if (slopes) {
        CKT__FMHA_TRY(ckt__fmha_check_ptr(slopes, "alibi_slopes", 4));
        CKT__FMHA_TRY(ckt__fmha_check_stride(slope_sb, "alibi_stride_b", 2, 0));
    }
    return CKT_SUCCESS;
}

/* The backward's dbias: only with bias; 2-byte aligned; a
 * [batch][nhead_q][seqlen_q][seqlen_k] layout whose elements are distinct,
 * but for a zero batch or head stride: a broadcast dimension, reduced
 * (ckt_fmha_bwd_dbias_reduces, the dbias_reduce stage). */
static inline ckt_status ckt__fmha_check_dbias(const ckt_fmha_bwd_args *a)
{
    if (!a->dbias)
        return CKT_SUCCESS;
    if (!a->bias)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "dbias: set, but bias is NULL (the gradient of which bias? ALiBi has none)");
    CKT__FMHA_TRY(ckt__fmha_check_ptr(a->dbias, "dbias", 2));
    CKT__FMHA_TRY(ckt__fmha_check_stride(a->dbias_stride_b, "dbias_stride_b", 2, 0));
    CKT__FMHA_TRY(ckt__fmha_check_stride(a->dbias_stride_h, "dbias_stride_h", 2, 0));
    CKT__FMHA_TRY(ckt__fmha_check_stride(a->dbias_stride_s, "dbias_stride_s", 2, 0));
    ckt_fmha_dim dims[4]; /* a broadcast dimension (stride 0) has one element */
    dims[0].stride = a->dbias_stride_b, dims[0].extent = a->dbias_stride_b ? a->batch : 1;
    dims[0].name = "dbias_stride_b", dims[0].what = "entries";
    dims[1].stride = a->dbias_stride_h, dims[1].extent = a->dbias_stride_h ? a->nhead_q : 1;
    dims[1].name = "dbias_stride_h", dims[1].what = "heads";
    dims[2].stride = a->dbias_stride_s, dims[2].extent = a->seqlen_q, dims[2].name = "dbias_stride_s", dims[2].what = "rows";
    dims[3].stride = 1, dims[3].extent = a->seqlen_k, dims[3].name = "seqlen_k", dims[3].what = "keys";
    return ckt_fmha_check_disjoint(dims, 4);
}

/* The fp8 forward's own fields (ckt_fmha_fwd_args >>fp8): o_dtype, the
 * scales, head dims and q/k/v strides in 16-byte vectors (the kernel reads
 * rows as 16-bit units), and the options it does not take. */
static inline ckt_status ckt__fmha_check_fp8(const ckt_fmha_fwd_args *a)
{
    if (a->o_dtype != CKT_F16 && a->o_dtype != CKT_BF16)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "o_dtype: %s (%d): fp8 writes fp16 or bf16", ckt_dtype_name(a->o_dtype),
                         (int)a->o_dtype);
    const char *const sn[] = {"descale_q", "descale_k", "descale_v", "scale_p"};
    const float sv[] = {a->descale_q, a->descale_k, a->descale_v, a->scale_p};
    for (int i = 0; i < 4; i++)
        if (!isfinite(sv[i]) || sv[i] < 0.0f)
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %g (must be finite and >= 0; 0 = %s)", sn[i],
                             (double)sv[i], i < 3 ? "1" : "448");
    if (a->hdim_q % 16 || a->hdim_v % 16)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "%s: %d: fp8 head dims are multiples of 16 (16-byte rows)",
                         a->hdim_q % 16 ? "hdim_q" : "hdim_v", a->hdim_q % 16 ? a->hdim_q : a->hdim_v);
    const char *const tn[] = {"q_stride_b", "q_stride_h", "q_stride_s", "k_stride_b", "k_stride_h",
                              "k_stride_s", "v_stride_b", "v_stride_h", "v_stride_s"};
    const int64_t tv[] = {a->q_stride_b, a->q_stride_h, a->q_stride_s, a->k_stride_b, a->k_stride_h,
                          a->k_stride_s, a->v_stride_b, a->v_stride_h, a->v_stride_s};
    for (int i = 0; i < 9; i++)
        if (tv[i] % 16)
            return ckt__fail(CKT_ERROR_UNSUPPORTED, "%s: %lld: fp8 strides are multiples of 16 elements (16 bytes)",
                             tn[i], (long long)tv[i]);
    if (a->p_drop > 0.0f)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "p_drop: %g: the fp8 forward has no dropout", (double)a->p_drop);
    if (a->bias || a->alibi_slopes)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "%s: set: the fp8 forward has no bias or ALiBi",
                         a->bias ? "bias" : "alibi_slopes");
    if (ckt_fmha_fwd_uses_kv_cache(a))
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "%s: set: the fp8 forward takes plain tensors (no KV cache, split-KV)",
                         a->page_size ? "page_size" : a->cache_batch_idx ? "cache_batch_idx" : "num_splits / workspace");
    return CKT_SUCCESS;
}

/* >>validation */

/* Checks a (device pointers) for an instance of type dtype with head dims
 * hdim (q/k) and hdim_v (v/o). CKT_SUCCESS also for an empty problem:
 * then call ckt_fmha_fwd_is_empty and launch nothing. */
static inline ckt_status ckt_fmha_fwd_validate(const ckt_fmha_fwd_args *a, ckt_dtype dtype, int hdim, int hdim_v)
{
    if (!a)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "args: NULL");
    const ckt__fmha_common c = ckt__fmha_common_of_fwd(a);
    CKT__FMHA_TRY(ckt__fmha_check_common(&c, dtype, hdim, hdim_v));
    if (a->sink)
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->sink, "sink", 4));
    CKT__FMHA_TRY(ckt__fmha_check_dropout(a->p_drop, a->drop_seed_offset));
    CKT__FMHA_TRY(ckt__fmha_check_randval(a));
    CKT__FMHA_TRY(ckt__fmha_check_bias(a->bias, a->bias_stride_b, a->bias_stride_h, a->bias_stride_s, a->alibi_slopes,
                                       a->alibi_stride_b, a->softcap));
    if (dtype == CKT_FP8_E4M3)
        CKT__FMHA_TRY(ckt__fmha_check_fp8(a));
    if (ckt_fmha_fwd_is_empty(a))
        return CKT_SUCCESS;

    CKT__FMHA_TRY(ckt__fmha_check_fwd_cache(a));
    /* tensors, strides in elements (group mode: rows of all entries share stride_s, no stride_b) */
    CKT__FMHA_TRY(ckt__fmha_check_tensor(a->q, "q", "q", a->q_stride_b, a->q_stride_h, a->q_stride_s, &c, a->nhead_q,
                                         a->seqlen_q, a->hdim_q, "hdim_q", 0));
    if (a->page_size > 0) { /* pools of pages */
        CKT__FMHA_TRY(ckt__fmha_check_pool(a->k, "k", a->k_stride_b, a->k_stride_h, a->k_stride_s, a));
        CKT__FMHA_TRY(ckt__fmha_check_pool(a->v, "v", a->v_stride_b, a->v_stride_h, a->v_stride_s, a));
    } else if (a->seqlen_k > 0) {
        CKT__FMHA_TRY(ckt__fmha_check_tensor(a->k, "k", "k", a->k_stride_b, a->k_stride_h, a->k_stride_s, &c,
                                             a->nhead_k, a->seqlen_k, a->hdim_q, "hdim_q", 0));
        CKT__FMHA_TRY(ckt__fmha_check_tensor(a->v, "v", "v", a->v_stride_b, a->v_stride_h, a->v_stride_s, &c,
                                             a->nhead_k, a->seqlen_k, a->hdim_v, "hdim_v", 0));
    }
    CKT__FMHA_TRY(ckt__fmha_check_tensor(a->o, "o", "o", a->o_stride_b, a->o_stride_h, a->o_stride_s, &c, a->nhead_q,
                                         a->seqlen_q, a->hdim_v, "hdim_v", 1));
    if (a->lse)
        CKT__FMHA_TRY(ckt__fmha_check_lse(a->lse, a->lse_stride_b, a->lse_stride_h, &c));
    return ckt__fmha_check_group(&c);
}

/* The backward's arguments (device pointers) for an instance of type dtype
 * with head dims hdim (q/k) and hdim_v (v/o): the forward's checks on the
 * shared fields, and its own tensors (see the top). CKT_SUCCESS also for an
 * empty problem: then call ckt_fmha_bwd_is_empty and launch nothing. */
static inline ckt_status ckt_fmha_bwd_validate(const ckt_fmha_bwd_args *a, ckt_dtype dtype, int hdim, int hdim_v)
{
    if (!a)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "args: NULL");
    const ckt__fmha_common c = ckt__fmha_common_of_bwd(a);
    CKT__FMHA_TRY(ckt__fmha_check_common(&c, dtype, hdim, hdim_v));
    if (a->deterministic != 0 && a->deterministic != 1)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "deterministic: %d (0 or 1)", a->deterministic);
    if (a->dsink && !a->sink)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "dsink: set, but sink is NULL (the gradient of which sinks?)");
    if (a->sink)
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->sink, "sink", 4));
    if (a->dsink)
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->dsink, "dsink", 4));
    CKT__FMHA_TRY(ckt__fmha_check_dropout(a->p_drop, a->drop_seed_offset));
    CKT__FMHA_TRY(ckt__fmha_check_bias(a->bias, a->bias_stride_b, a->bias_stride_h, a->bias_stride_s, a->alibi_slopes,
                                       a->alibi_stride_b, a->softcap));
    CKT__FMHA_TRY(ckt__fmha_check_dbias(a));
    if (ckt_fmha_bwd_is_empty(a))
        return CKT_SUCCESS;

    /* the query side: Q, O, dO and the LSE in, dQ out */
    if (a->seqlen_q > 0) {
        CKT__FMHA_TRY(ckt__fmha_check_tensor(a->q, "q", "q", a->q_stride_b, a->q_stride_h, a->q_stride_s, &c,
                                             a->nhead_q, a->seqlen_q, a->hdim_q, "hdim_q", 0));
        CKT__FMHA_TRY(ckt__fmha_check_tensor(a->o, "o", "o", a->o_stride_b, a->o_stride_h, a->o_stride_s, &c,
                                             a->nhead_q, a->seqlen_q, a->hdim_v, "hdim_v", 0));
        CKT__FMHA_TRY(ckt__fmha_check_tensor(a->dout, "dout", "do", a->do_stride_b, a->do_stride_h, a->do_stride_s,
                                             &c, a->nhead_q, a->seqlen_q, a->hdim_v, "hdim_v", 0));
        CKT__FMHA_TRY(ckt__fmha_check_lse(a->lse, a->lse_stride_b, a->lse_stride_h, &c));
        CKT__FMHA_TRY(ckt__fmha_check_tensor(a->dq, "dq", "dq", a->dq_stride_b, a->dq_stride_h, a->dq_stride_s, &c,
                                             a->nhead_q, a->seqlen_q, a->hdim_q, "hdim_q", 1));
    }
    /* the key side: K, V in, dK, dV out */
    if (a->seqlen_k > 0) {
        CKT__FMHA_TRY(ckt__fmha_check_tensor(a->k, "k", "k", a->k_stride_b, a->k_stride_h, a->k_stride_s, &c,
                                             a->nhead_k, a->seqlen_k, a->hdim_q, "hdim_q", 0));
        CKT__FMHA_TRY(ckt__fmha_check_tensor(a->v, "v", "v", a->v_stride_b, a->v_stride_h, a->v_stride_s, &c,
                                             a->nhead_k, a->seqlen_k, a->hdim_v, "hdim_v", 0));
        CKT__FMHA_TRY(ckt__fmha_check_tensor(a->dk, "dk", "dk", a->dk_stride_b, a->dk_stride_h, a->dk_stride_s, &c,
                                             a->nhead_k, a->seqlen_k, a->hdim_q, "hdim_q", 1));
        CKT__FMHA_TRY(ckt__fmha_check_tensor(a->dv, "dv", "dv", a->dv_stride_b, a->dv_stride_h, a->dv_stride_s, &c,
                                             a->nhead_k, a->seqlen_k, a->hdim_v, "hdim_v", 1));
    }
    if (!a->workspace)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "workspace: NULL (plan and prepare one: ckt/fmha/workspace.h)");
    CKT__FMHA_TRY(ckt__fmha_check_ptr(a->workspace, "workspace", 16));
    return ckt__fmha_check_group(&c);
}

/* >>append-KV (ckt_fmha_appendkv_args, ckt/fmha/appendkv_body.h)
 *
 * Before the empty test: dtype; sizes >= 0; hdim_q, hdim_v multiples of 8 up
 * to 256; GQA; group_mode 0 / 1 (seqstart_q only in group mode);
 * rotary_dim even, in [0, hdim_q]; rotary_interleaved 0 / 1; cache_batch >=
 * batch without cache_batch_idx; with a scalar length, seqlen_k + seqlen_knew
 * <= cache_seqlen and (rotating) seqlen_k + max(seqlen_knew, seqlen_q) <=
 * rotary_max_pos. Then the tensors it reads (k_new, v_new) and writes
 * (k_cache, v_cache, q when rotating: disjoint), the tables (4-byte aligned),
 * the int32 arrays (4-byte aligned), and on the CPU backend their contents:
 * seqstart_q, each seqlen_k_ptr[b] >= 0 within the capacity and the tables,
 * each cache_batch_idx[b] in [0, cache_batch) and no two entries on one
 * cache row (their appends would race). A paged cache takes one table
 * style: block_table (max_pages_per_seq >= 1) or the three sglang arrays
 * (without cache_batch_idx or seqlen_k_ptr; on the CPU backend: the forward's
 * table checks, and each entry's keys >= seqlen_knew). */

/* 1 when the call writes nothing: no entries, or neither new tokens (or kv
 * heads) nor queries to rotate. */
static inline int ckt_fmha_appendkv_is_empty(const ckt_fmha_appendkv_args *a)
{
    const int appends = a->seqlen_knew > 0 && a->nhead_k > 0;
    const int rotates_q = a->rotary_dim > 0 && a->seqlen_q > 0 && a->nhead_q > 0;
    return a->batch == 0 || (!appends && !rotates_q);
}

/* Whether the call rotates Q (and so reads and writes q). */
static inline int ckt_fmha_appendkv_rotates_q(const ckt_fmha_appendkv_args *a)
{
    return a->rotary_dim > 0 && a->seqlen_q > 0 && a->nhead_q > 0;
}

/* Entry b's queries (host-readable arrays in group mode). */
static inline int ckt__fmha_appendkv_rows_q(const ckt_fmha_appendkv_args *a, int b)
{
    return a->group_mode ? a->seqstart_q[b + 1] - a->seqstart_q[b] : a->seqlen_q;
}

/* One entry's length len against the capacity and the rotary tables. */
static inline ckt_status ckt__fmha_appendkv_check_len(const ckt_fmha_appendkv_args *a, int64_t len, int64_t rows_q,
                                                      const char *name)
{
    if (len < 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: %lld is negative", name, (long long)len);
    /* (no append: the cache is not touched; sglang tables: their keys are the capacity, checked by the caller) */
    const ckt_fmha_paging pg = CKT_FMHA_PAGING(*a);
    const int cap = ckt_fmha_append_capacity(&pg, a->cache_seqlen); /* the kernel's (ckt/fmha/kv.h) */
    if (!a->kv_indptr && a->seqlen_knew > 0 && len + a->seqlen_knew > cap)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "%s: %lld + seqlen_knew %d = %lld exceeds %s %d (the cache would overflow)", name,
                         (long long)len, a->seqlen_knew, (long long)(len + a->seqlen_knew),
                         a->page_size > 0 ? "max_pages_per_seq x page_size (at most 2^31 - 1)" : "cache_seqlen", cap);
    if (a->rotary_dim > 0) {
        const int64_t need = len + (rows_q > a->seqlen_knew ? rows_q : a->seqlen_knew);
        if (need > a->rotary_max_pos)
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                             "rotary_max_pos: %d, but %s %lld needs positions up to %lld (rows of rotary_cos / rotary_sin)",
                             a->rotary_max_pos, name, (long long)len, (long long)need - 1);
    }
    return CKT_SUCCESS;
}

static inline int ckt__fmha_cmp_i64(const void *x, const void *y)
{
    const int64_t u = *(const int64_t *)x, v = *(const int64_t *)y;
    return u < v ? -1 : u > v;
}

/* An append through sglang tables (checked): no two entries write one
 * (page, row) slot (entries may share the pages they read, as sglang's
 * prefix sharing does, but not the rows they append: the writes would race). */
static inline ckt_status ckt__fmha_check_sglang_slots(const ckt_fmha_appendkv_args *a)
{
    const int64_t n = (int64_t)a->batch * a->seqlen_knew;
    int64_t *slot = (int64_t *)malloc((size_t)n * sizeof(int64_t));
    if (!slot)
        return ckt__fail(CKT_ERROR_OUT_OF_MEMORY, "kv_indices: no host memory to check %lld appended slots",
                         (long long)n);
    const ckt_fmha_paging pg = CKT_FMHA_PAGING(*a);
    for (int b = 0; b < a->batch; b++) {
        const int64_t keys = ckt_fmha_sglang_keys(&pg, b);
        for (int t = 0; t < a->seqlen_knew; t++) {
            const int64_t pos = keys - a->seqlen_knew + t, p = pos / a->page_size;
            slot[(int64_t)b * a->seqlen_knew + t] =
                (int64_t)a->kv_indices[a->kv_indptr[b] + p] * a->page_size + (pos - p * a->page_size);
        }
    }
    qsort(slot, (size_t)n, sizeof(int64_t), ckt__fmha_cmp_i64);
    for (int64_t i = 1; i < n; i++)
        if (slot[i] == slot[i - 1]) {
            const int64_t id = slot[i] / a->page_size, row = slot[i] % a->page_size;
            free(slot);
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                             "kv_indices: two appended tokens go to row %lld of page %lld (entries' new rows must not "
                             "share a slot: the writes would race)",
                             (long long)row, (long long)id);
        }
    free(slot);
    return CKT_SUCCESS;
}

/* The device arrays of an append (host-readable: host copies, or the CPU
 * backend's memory): seqstart_q, the lengths against the capacity and the
 * tables, the cache rows (in range, distinct). */
static inline ckt_status ckt_fmha_appendkv_check_arrays(const ckt_fmha_appendkv_args *a)
{
    const ckt_fmha_paging pg = CKT_FMHA_PAGING(*a);
    const int cache_batch = a->cache_batch > 0 ? a->cache_batch : a->batch;
    if (a->group_mode)
        CKT__FMHA_TRY(ckt__fmha_check_starts(a->seqstart_q, NULL, a->seqlen_q, a->batch, "seqstart_q", "",
                                             "seqlen_q"));
    if (a->seqlen_k_ptr) {
        for (int b = 0; b < a->batch; b++) {
            char name[40];
            snprintf(name, sizeof name, "seqlen_k_ptr[%d]", b);
            CKT__FMHA_TRY(ckt__fmha_appendkv_check_len(a, a->seqlen_k_ptr[b], ckt_fmha_appendkv_rotates_q(a) ? ckt__fmha_appendkv_rows_q(a, b) : 0, name));
        }
    }
    if (a->page_size > 0 && a->kv_indptr) { /* sglang tables: they give the lengths, new tokens included */
        CKT__FMHA_TRY(ckt__fmha_check_sglang(a->kv_indptr, a->kv_indices, a->kv_last_page_len, a->batch, a->page_size,
                                             a->num_pages));
        for (int b = 0; b < a->batch; b++) {
            /* its length as the kernel sees it (ckt_fmha_kv_append, ckt/fmha/kv.h) */
            const int64_t keys = ckt_fmha_sglang_keys(&pg, b);
            if (keys < a->seqlen_knew)
                return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                                 "kv_last_page_len: entry %d's tables hold %lld keys, fewer than seqlen_knew %d (they "
                                 "describe the cache after the append)",
                                 b, (long long)keys, a->seqlen_knew);
            char name[64];
            snprintf(name, sizeof name, "entry %d's length (kv tables' keys - seqlen_knew)", b);
            CKT__FMHA_TRY(ckt__fmha_appendkv_check_len(a, keys - a->seqlen_knew,
                                                       ckt_fmha_appendkv_rotates_q(a) ? ckt__fmha_appendkv_rows_q(a, b) : 0,
                                                       name));
        }
        if (a->seqlen_knew > 0 && a->nhead_k > 0)
            CKT__FMHA_TRY(ckt__fmha_check_sglang_slots(a));
    }
    if (a->block_table && a->page_size > 0 && a->seqlen_knew > 0 && a->nhead_k > 0) { /* the pages the append writes */
        for (int b = 0; b < a->batch; b++) {
            const int64_t len = a->seqlen_k_ptr ? a->seqlen_k_ptr[b] : a->seqlen_k;
            const int cb = a->cache_batch_idx ? a->cache_batch_idx[b] : b;
            if (cb < 0 || cb >= cache_batch)
                continue; /* reported below */
            for (int64_t p = len / a->page_size; p <= (len + a->seqlen_knew - 1) / a->page_size; p++) {
                const int32_t id = a->block_table[(int64_t)cb * a->max_pages_per_seq + p];
                if (id < 0 || id >= a->num_pages)
                    return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                                     "block_table: [%d][%lld] = %d (entry %d's page %lld) is outside [0, num_pages %d)",
                                     cb, (long long)p, (int)id, b, (long long)p, a->num_pages);
            }
        }
    }
    if (a->cache_batch_idx && a->seqlen_knew > 0 && a->nhead_k > 0) {
        for (int b = 0; b < a->batch; b++) {
            const int32_t cb = a->cache_batch_idx[b];
            if (cb < 0 || cb >= cache_batch)
                return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "cache_batch_idx: [%d] = %d is outside [0, cache_batch %d)",
                                 b, (int)cb, cache_batch);
            for (int e = 0; e < b; e++)
                if (a->cache_batch_idx[e] == cb)
                    return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                                     "cache_batch_idx: entries %d and %d both append to cache row %d", e, b, (int)cb);
        }
    }
    return CKT_SUCCESS;
}

static inline ckt_status ckt_fmha_appendkv_validate(const ckt_fmha_appendkv_args *a, ckt_dtype dtype)
{
    if (!a)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "args: NULL");
    CKT__FMHA_TRY(ckt__fmha_check_dtype(a->dtype, dtype));
    {
        const char *const names[] = {"batch", "nhead_q", "nhead_k", "seqlen_q", "seqlen_knew", "seqlen_k",
                                     "cache_seqlen", "cache_batch", "rotary_max_pos"};
        const int vals[] = {a->batch, a->nhead_q, a->nhead_k, a->seqlen_q, a->seqlen_knew, a->seqlen_k,
                            a->cache_seqlen, a->cache_batch, a->rotary_max_pos};
        CKT__FMHA_TRY(ckt__fmha_check_nonneg(names, vals, 9));
    }
    CKT__FMHA_TRY(ckt__fmha_check_hdim(a->hdim_q, "hdim_q", CKT_FMHA_APPENDKV_MAX_HDIM, "maximum"));
    CKT__FMHA_TRY(ckt__fmha_check_hdim(a->hdim_v, "hdim_v", CKT_FMHA_APPENDKV_MAX_HDIM, "maximum"));
    CKT__FMHA_TRY(ckt__fmha_check_heads_mode(a->nhead_q, a->nhead_k, a->group_mode));
    if (!a->group_mode && a->seqstart_q)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "seqstart_q: set, but group_mode is 0 (batch mode ignores it)");
    if (a->rotary_dim < 0 || a->rotary_dim % 2 != 0 || a->rotary_dim > a->hdim_q)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "rotary_dim: %d (must be even, in [0, hdim_q %d])",
                         a->rotary_dim, a->hdim_q);
    if (a->rotary_interleaved != 0 && a->rotary_interleaved != 1)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "rotary_interleaved: %d (1 = pairs (2i, 2i+1), 0 = half-split)",
                         a->rotary_interleaved);
    const int cache_batch = a->cache_batch > 0 ? a->cache_batch : a->batch;
    CKT__FMHA_TRY(ckt__fmha_check_paging(a->page_size, a->num_pages, a->block_table, a->max_pages_per_seq,
                                         a->kv_indptr, a->kv_indices, a->kv_last_page_len, a->cache_batch_idx,
                                         a->seqlen_k_ptr));
    const int sgl = a->page_size > 0 && a->kv_indptr;
    if (!a->cache_batch_idx && !sgl && cache_batch < a->batch)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "cache_batch: %d entries for batch %d (without cache_batch_idx entry b writes cache row b)",
                         cache_batch, a->batch);
    if (!a->seqlen_k_ptr && !sgl && a->batch > 0)
        CKT__FMHA_TRY(ckt__fmha_appendkv_check_len(a, a->seqlen_k, a->seqlen_q, "seqlen_k"));
    if (ckt_fmha_appendkv_is_empty(a))
        return CKT_SUCCESS;

    /* tensors: the new tokens and the cache are batch-strided, the queries follow group_mode */
    ckt__fmha_common c;
    memset(&c, 0, sizeof c);
    c.batch = a->batch;
    if (a->seqlen_knew > 0 && a->nhead_k > 0) {
        CKT__FMHA_TRY(ckt__fmha_check_tensor(a->k_new, "k_new", "knew", a->knew_stride_b, a->knew_stride_h,
                                             a->knew_stride_s, &c, a->nhead_k, a->seqlen_knew, a->hdim_q, "hdim_q", 0));
        CKT__FMHA_TRY(ckt__fmha_check_tensor(a->v_new, "v_new", "vnew", a->vnew_stride_b, a->vnew_stride_h,
                                             a->vnew_stride_s, &c, a->nhead_k, a->seqlen_knew, a->hdim_v, "hdim_v", 0));
        /* the cache: cache_batch entries of cache_seqlen rows, or num_pages pages of page_size */
        c.batch = a->page_size > 0 ? a->num_pages : cache_batch;
        const int rows = a->page_size > 0 ? a->page_size : a->cache_seqlen;
        CKT__FMHA_TRY(ckt__fmha_check_tensor(a->k_cache, "k_cache", "k", a->k_stride_b, a->k_stride_h, a->k_stride_s,
                                             &c, a->nhead_k, rows, a->hdim_q, "hdim_q", 1));
        CKT__FMHA_TRY(ckt__fmha_check_tensor(a->v_cache, "v_cache", "v", a->v_stride_b, a->v_stride_h, a->v_stride_s,
                                             &c, a->nhead_k, rows, a->hdim_v, "hdim_v", 1));
    }
    if (ckt_fmha_appendkv_rotates_q(a)) {
        c.batch = a->batch;
        c.group_mode = a->group_mode;
        CKT__FMHA_TRY(ckt__fmha_check_tensor(a->q, "q", "q", a->q_stride_b, a->q_stride_h, a->q_stride_s, &c,
                                             a->nhead_q, a->seqlen_q, a->hdim_q, "hdim_q", 1));
    }
    if (a->rotary_dim > 0) {
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->rotary_cos, "rotary_cos", 4));
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->rotary_sin, "rotary_sin", 4));
    }
    if (a->group_mode)
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->seqstart_q, "seqstart_q", 4));
    if (a->seqlen_k_ptr)
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->seqlen_k_ptr, "seqlen_k_ptr", 4));
    if (a->cache_batch_idx)
        CKT__FMHA_TRY(ckt__fmha_check_ptr(a->cache_batch_idx, "cache_batch_idx", 4));
#if defined(CKT_BACKEND_CPU)
    /* the emulator's device memory is host memory: the arrays can be read */
    return ckt_fmha_appendkv_check_arrays(a);
#else
    return CKT_SUCCESS;
#endif
}

#endif /* CKT_FMHA_VALIDATE_H */
