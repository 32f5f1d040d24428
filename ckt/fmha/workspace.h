/* ckt/fmha/workspace.h — the FMHA backward's workspace: plan, sizes, prepare.
 *
 * The backward runs three stages (dot_do_o, dq_dk_dv, convert_dq) that share
 * one device workspace: packed metadata (the work partition of the dq_dk_dv
 * grid, per-entry offsets), the fp32 dQ accumulator (split into slots in
 * deterministic mode) and D = rowsum(dO * O). The caller never sees its layout:
 *
 *   ckt_fmha_bwd_traits t = CKT_ZERO_INIT;     // shapes (maxima), dtype, mode, mask, deterministic
 *   t.batch = ...; t.multiprocessors = 0;      // 0: ask the device
 *   ckt_fmha_bwd_plan plan;
 *   ckt_fmha_bwd_plan_init(&plan, &t);         // dispatcher (libckt_fmha): picks the instance
 *   size_t ub = ckt_fmha_bwd_workspace_upper_bound(&plan);   // no seqstarts needed
 *   ckt_rt_malloc(&ws, ub);                    // once, from maxima
 *   ... every step:
 *   ckt_fmha_bwd_prepare_async(&plan, &args, staging, stream);  // or ckt_fmha_bwd_prepare (sync)
 *   ckt_fmha_bwd_run(&plan, &args, stream);
 *
 * Layout of the workspace (offsets in bytes, sections 256-byte aligned):
 *   [0, meta_bytes)      ckt_fmha_bwd_meta, then int64 arrays:
 *                          unit_start[batch + 1]  entry b's work units (b, hk, key tile)
 *                                                 are [unit_start[b], unit_start[b+1]),
 *                                                 nhead_k * ceil(sk_b / block_n) of them,
 *                                                 ordered hk-major, key tile minor
 *                          block_start[grid + 1]  (persistent; 1 unused entry otherwise)
 *                                                 block p owns units
 *                                                 [block_start[p], block_start[p+1])
 *                          q_row_start[batch + 1] cumulative logical seqlen_q
 *                          dq_start[batch + 1]    cumulative fp32 elements of dq_acc
 *                          nsplits[batch]         dq_acc slots of entry b (>= 1)
 *   [meta_bytes, +dq)    dq_acc fp32: entry b, slot s, head h, row i, column d at
 *                          dq_start[b] + ((s * nhead_q + h) * sq_b + i) * hdim_q + d
 *   [d_offset, +D)       D fp32: D[h][q_row_start[b] + i], h-major over total_q_rows
 *
 * meta_bytes depends on the plan only (batch, grid, persistent), so the accumulator's
 * offset is known before the seqstarts are.
 *
 * Scheduling of dq_dk_dv (both modes use a grid fixed by the plan, so no
 * launch needs host-read lengths):
 *   deterministic: persistent, grid = multiprocessors * blocks_per_mp; the host
 *     splits the units into contiguous ranges of about equal cost (cost of a
 *     unit: query tiles its key tile sees, times the query heads per kv head)
 *     and block p writes its dQ contributions for (b, hk) into slot
 *     p - owner(first unit of (b, hk)): several key tiles of one (b, hk) in one
 *     block accumulate into one slot, in a fixed order. convert_dq sums the
 *     slots 0 .. nsplits[b] - 1 in order.
 *   otherwise: one block per unit (grid = the upper bound of units; blocks past
 *     total_units exit), dQ by fp32 atomics into slot 0.
 * dot_do_o zeroes dq_acc before dq_dk_dv runs, so a prepared workspace serves
 * any number of runs with the same lengths.
 */
#ifndef CKT_FMHA_WORKSPACE_H
#define CKT_FMHA_WORKSPACE_H

#include "ckt/arch/config.h"
#include "ckt/fmha/args.h"
#include "ckt/host/runtime.h"
#include "ckt/host/status.h"

#include <stddef.h>
#include <stdint.h>

#define CKT_FMHA_BWD_META_MAGIC 0x636b7462 /* "cktb" */
#define CKT_FMHA_WS_ALIGN 256

/* What the caller knows before the lengths: the maxima, the types and the
 * options. Zero-initialize (CKT_ZERO_INIT) and set what applies. */
typedef struct ckt_fmha_bwd_traits {
    int batch, nhead_q, nhead_k;
    int max_seqlen_q, max_seqlen_k; /* batch mode: the lengths */
    int hdim_q, hdim_v;
    ckt_dtype dtype;
    int group_mode;
    ckt_fmha_mask mask;
    int window_left, window_right;
    int deterministic;
    int multiprocessors; /* 0: the current device's (ckt_rt_device_props) */
} ckt_fmha_bwd_traits;

/* A plan: the traits and what the instance and the device add. Made by
 * ckt_fmha_bwd_plan_make (any instance: give its tile) or by the dispatcher's
 * ckt_fmha_bwd_plan_init. Plain data: copy it freely. */
typedef struct ckt_fmha_bwd_plan {
    ckt_fmha_bwd_traits traits;
    int block_m;        /* query rows per step of dq_dk_dv */
    int block_n;        /* keys per work unit */
    int blocks_per_mp;  /* resident dq_dk_dv blocks per multiprocessor */
    int persistent;     /* = traits.deterministic */
    int grid;           /* dq_dk_dv blocks */
    int64_t max_units;  /* batch * nhead_k * ceil(max_seqlen_k / block_n) */
    size_t meta_bytes;  /* the metadata section (depends on batch and grid only) */
    size_t staging_bytes; /* the pinned staging buffer of ckt_fmha_bwd_prepare_async */
    const void *instance; /* the dispatcher's instance (NULL for plan_make) */
} ckt_fmha_bwd_plan;

/* The metadata header at the workspace's start (device and host view). */
typedef struct ckt_fmha_bwd_meta {
    int32_t magic;       /* CKT_FMHA_BWD_META_MAGIC once prepared */
    int32_t status;      /* 0, or a ckt_status the async packing met (bad seqstarts) */
    int32_t batch, grid;
    int32_t nhead_q, nhead_k;
    int32_t block_n, persistent;
    int64_t total_units;  /* sum over entries of nhead_k * key tiles */
    int64_t total_q_rows; /* sum of logical seqlen_q */
    int64_t d_offset;     /* bytes from the workspace start to D */
    int64_t need_bytes;   /* the exact workspace size these lengths need */
} ckt_fmha_bwd_meta;

/* >>device view of the metadata */

CKT_INLINE CKT_HOST_DEVICE const int64_t *ckt_fmha_bwd_meta_unit_start(const ckt_fmha_bwd_meta *m)
{
    return (const int64_t *)(m + 1);
}
CKT_INLINE CKT_HOST_DEVICE const int64_t *ckt_fmha_bwd_meta_block_start(const ckt_fmha_bwd_meta *m)
{
    return ckt_fmha_bwd_meta_unit_start(m) + m->batch + 1;
}
CKT_INLINE CKT_HOST_DEVICE const int64_t *ckt_fmha_bwd_meta_q_row_start(const ckt_fmha_bwd_meta *m)
{
    return ckt_fmha_bwd_meta_block_start(m) + (m->persistent ? m->grid + 1 : 1);
}
CKT_INLINE CKT_HOST_DEVICE const int64_t *ckt_fmha_bwd_meta_dq_start(const ckt_fmha_bwd_meta *m)
{
    return ckt_fmha_bwd_meta_q_row_start(m) + m->batch + 1;
}
CKT_INLINE CKT_HOST_DEVICE const int64_t *ckt_fmha_bwd_meta_nsplits(const ckt_fmha_bwd_meta *m)
{
    return ckt_fmha_bwd_meta_dq_start(m) + m->batch + 1;
}

/* Bytes of the metadata section for batch entries and a dq_dk_dv grid of
 * grid blocks (persistent: one block_start entry per block). */
CKT_INLINE CKT_HOST_DEVICE size_t ckt_fmha_bwd_meta_bytes(int batch, int grid, int persistent)
{
    size_t n = sizeof(ckt_fmha_bwd_meta) +
               sizeof(int64_t) * ((size_t)(batch + 1) * 4 + (persistent ? (size_t)grid + 1 : 1));
    return (n + CKT_FMHA_WS_ALIGN - 1) / CKT_FMHA_WS_ALIGN * CKT_FMHA_WS_ALIGN;
}

/* The largest index i in [0, n) with a[i] <= x (a ascending, a[0] <= x). */
CKT_INLINE CKT_HOST_DEVICE int ckt_fmha_bwd_find(const int64_t *a, int n, int64_t x)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) >> 1;
        if (a[mid] <= x)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* >>host: the planner (implementations below) */

#endif /* CKT_FMHA_WORKSPACE_H */
