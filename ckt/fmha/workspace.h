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
 *   ckt_rt_malloc_host(&staging, plan.staging_bytes);        // pinned, once
 *   ... every step:
 *   ckt_fmha_bwd_prepare_async(&plan, &args, staging, plan.staging_bytes, stream);
 *                                              // or ckt_fmha_bwd_prepare(&plan, &args, stream) (sync)
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
 *   [meta_bytes, +dq)    dq_acc fp32: entry b, slot s, head h: an accumulator-ordered
 *                          matrix (ckt/tile/mma.h) of rows16 = ckt_fmha_bwd_dq_rows(sq_b)
 *                          rows and ld = ckt_fmha_bwd_dq_ld(hdim_q) columns at
 *                          dq_start[b] + (s * nhead_q + h) * rows16 * ld; row i, column d
 *                          at ckt_acc_offset(ld, i, d) from there
 *   [d_offset, +D)       D fp32: D[h][q_row_start[b] + i], h-major over total_q_rows
 *   [dbias_offset, +dS)  only with a broadcast dbias (traits.dbias_reduce): dS in the
 *                          args' dtype, [batch][nhead_q][seqlen_q][seqlen_k] (the
 *                          args' maxima), written by dq_dk_dv in place of dbias; the
 *                          dbias_reduce stage sums it over the broadcast dimensions
 *                          into dbias, in a fixed order (bitwise reproducible).
 *                          dbias_offset comes from the plan alone (after the upper
 *                          bound of the sections above), so with it the exact size is
 *                          dbias_offset + batch * nhead_q * max_seqlen_q * max_seqlen_k * 2.
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
 *     slots 0 .. nsplits[b] - 1 in order. Where every entry has the same key
 *     tiles, the lane schedule instead (meta->lanes > 0; ckt__fmha_bwd_pick_lanes
 *     below): C blocks run one (b, hk) at once, block c its key tiles c,
 *     2C - 1 - c, 2C + c, ... into slot c (nsplits[b] = C).
 *   otherwise: one block per unit (grid = the upper bound of units; blocks past
 *     total_units exit), dQ by fp32 atomics into slot 0.
 * dot_do_o zeroes dq_acc (every row a run reads) before dq_dk_dv runs, so a
 * prepared workspace serves any number of runs with the same lengths; under
 * the lane schedule the mma.sync kernel initializes the slots itself instead
 * (each lane's first key tile of a head stores its dQ and zeroes the rest of
 * its slot; ckt/fmha/bwd_body.h). The
 * prepares leave dq_acc as it is (zeroing it there too was redundant work on
 * every call of the one-call ckt_fmha_bwd).
 * The persistent partition (ckt__fmha_bwd_partition below): a unit also costs
 * 1 for its fixed work; with at least as many units as blocks every block gets
 * a range of one unit or more and no block costs more than the average plus
 * one unit; with fewer units than blocks every unit has a block of its own.
 *
 * Preparing. ckt_fmha_bwd_prepare is synchronous (group mode: it reads the
 * seqstarts back). ckt_fmha_bwd_prepare_async never waits on the host: on the
 * caller's stream it copies the seqstarts device-to-host into
 * the caller's pinned staging buffer, packs them in a host function and copies
 * the metadata host-to-device. A length error found by that packing cannot be
 * returned: the metadata then says status != 0 with total_units = 0 (kernels
 * do nothing) and ckt_fmha_bwd_prepare_async_status(staging) reports it once
 * the stream has passed the prepare.
 *
 * The staging buffer's lifetime rule. It belongs to the caller
 * (ckt_rt_malloc_host, plan.staging_bytes or more). Every access ckt makes to
 * it is stream-ordered, so the next prepare_async on the SAME stream may reuse
 * it at once, with the same plan or another (each call's plan travels in a
 * job record of its own, not in the buffer). The host must not touch it until
 * the stream has passed the prepare, and it must be freed (ckt_rt_free_host)
 * only after synchronizing that stream, never from a stream callback: freeing
 * pinned memory waits for the device while the callback thread holds the
 * runtime's locks, a deadlock. ckt's host function calls no device runtime
 * function, allocates nothing and frees only its own job record (C heap,
 * malloc'd by prepare_async), so ckt needs no callback-side pinned free: the
 * buffer outlives the calls by construction because the caller owns it.
 * Using the buffer on two streams at once needs a buffer per stream.
 */
#ifndef CKT_FMHA_WORKSPACE_H
#define CKT_FMHA_WORKSPACE_H

#include "ckt/arch/config.h"
#include "ckt/fmha/args.h"
#include "ckt/fmha/mask.h"
#include "ckt/fmha/seqlen.h"
#include "ckt/host/runtime.h"
#include "ckt/host/status.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    int multiprocessors; /* 0: the current device's (ckt_rt_multiprocessors) */
    int dsink;           /* 1: attention sinks' gradient (args.dsink): the dsink stage runs */
    int dbias_reduce;    /* 1: dbias broadcasts over entries or heads (a zero dbias_stride_b with
                          * batch > 1, or dbias_stride_h with nhead_q > 1): dS goes through the
                          * workspace and the dbias_reduce stage sums it (ckt_fmha_bwd_dbias_reduces) */
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
    size_t dbias_offset;  /* traits.dbias_reduce: the dS section (see the layout above); else 0 */
    size_t dbias_bytes;   /* its bytes; else 0 */
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
    int64_t dbias_offset; /* bytes from the workspace start to the dS section; 0: none */
    /* deterministic, the lane schedule (lanes 0: the contiguous ranges): every
     * entry has lane_tiles key tiles; head (b, hk) = b * nhead_k + hk runs in
     * round head / lane_heads on blocks (head % lane_heads) * lanes + c,
     * c < lanes, block c taking key tiles c, 2 lanes - 1 - c, 2 lanes + c, ...
     * (ckt_fmha_bwd_lane_unit) into dQ slot c */
    int32_t lanes, lane_heads, lane_rounds, lane_tiles;
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
/* The shape of one dq_acc matrix (entry, slot, head): hdim_q rounded up to 8
 * columns and seqlen_q rounded up to 16 rows, the largest block of the
 * accumulator order (CKT_ACC_BLOCK_COLS / _ROWS, ckt/tile/mma.h) of any
 * backend, so that the plan does not depend on the backend. */
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_fmha_bwd_dq_ld(int hdim_q)
{
    return ((int64_t)hdim_q + 7) / 8 * 8;
}
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_fmha_bwd_dq_rows(int64_t seqlen_q)
{
    return (seqlen_q + 15) / 16 * 16;
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

/* Lane schedule: the units block p runs, and its i-th (key tile order within
 * each round, rounds in order). A head's key tiles go to its C lanes in
 * rows of C, the even rows left to right and the odd ones right to left
 * (lane c takes c, 2C - 1 - c, 2C + c, ...): under a causal mask, where a
 * key tile's work falls with its number, each pair of rows gives every lane
 * the same work (a lane taking c, C + c, ... had about 2 (C - 1) / N more than
 * another: 11% at C = 8, N = 128). */
CKT_INLINE CKT_HOST_DEVICE int ckt_fmha_bwd_lane_pos(int k, int c, int C)
{
    return (k & 1) ? C - 1 - c : c; /* lane c's place in row k */
}
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_fmha_bwd_lane_count(const ckt_fmha_bwd_meta *m, int p)
{
    const int C = m->lanes, c = p % C, slot = p / C, heads = m->batch * m->nhead_k;
    if (slot >= m->lane_heads || slot >= heads)
        return 0;
    const int64_t rounds = (heads - 1 - slot) / m->lane_heads + 1; /* rounds whose head exists */
    const int rows = m->lane_tiles / C, rest = m->lane_tiles % C;  /* whole rows, the last one's tiles */
    const int64_t per = rows + (rest > 0 && ckt_fmha_bwd_lane_pos(rows, c, C) < rest);
    return rounds * per;
}
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_fmha_bwd_lane_unit(const ckt_fmha_bwd_meta *m, int p, int64_t i)
{
    /* 32-bit divisions (a block's units and a head's key tiles fit): the
     * 64-bit ones cost the kernels registers (ptxas spilled more) */
    const unsigned C = (unsigned)m->lanes, c = (unsigned)p % C, N = (unsigned)m->lane_tiles;
    const unsigned rows = N / C, rest = N % C;
    const unsigned per = rows + (rest > 0 && (unsigned)ckt_fmha_bwd_lane_pos((int)rows, (int)c, (int)C) < rest);
    const unsigned ii = (unsigned)i, k = ii % per;
    const int64_t head = (int64_t)(ii / per) * m->lane_heads + (unsigned)p / C;
    return head * (int64_t)N + (int64_t)(k * C + (unsigned)ckt_fmha_bwd_lane_pos((int)k, (int)c, (int)C));
}

/* 1 when a's dbias broadcasts over entries or heads (a zero stride where
 * there are several), so that its elements are sums of dS: the backward
 * then needs traits.dbias_reduce (the dS section and the dbias_reduce stage). */
static inline int ckt_fmha_bwd_dbias_reduces(const ckt_fmha_bwd_args *a)
{
    return a->dbias && ((a->batch > 1 && a->dbias_stride_b == 0) || (a->nhead_q > 1 && a->dbias_stride_h == 0));
}

/* The traits of one call: its own sizes as the maxima (seqlen_q / seqlen_k),
 * the device's multiprocessors. What ckt_fmha_bwd plans with; a training
 * loop that varies its lengths plans once from larger maxima instead. */
static inline ckt_fmha_bwd_traits ckt_fmha_bwd_traits_of(const ckt_fmha_bwd_args *a)
{
    ckt_fmha_bwd_traits t = CKT_ZERO_INIT;
    t.batch = a->batch;
    t.nhead_q = a->nhead_q;
    t.nhead_k = a->nhead_k;
    t.max_seqlen_q = a->seqlen_q;
    t.max_seqlen_k = a->seqlen_k;
    t.hdim_q = a->hdim_q;
    t.hdim_v = a->hdim_v;
    t.dtype = a->dtype;
    t.group_mode = a->group_mode;
    t.mask = a->mask;
    t.window_left = a->window_left;
    t.window_right = a->window_right;
    t.deterministic = a->deterministic;
    t.dsink = a->dsink != NULL;
    t.dbias_reduce = ckt_fmha_bwd_dbias_reduces(a);
    return t;
}

/* >>host: the planner
 *
 *   ckt_fmha_bwd_traits_of(&a)                           the traits of one call
 *   ckt_fmha_bwd_plan_make(&plan, &t, block_m, block_n, blocks_per_mp)
 *   ckt_fmha_bwd_workspace_upper_bound(&plan)            bytes; reads no length
 *   ckt_fmha_bwd_workspace_size(&plan, sq, sk, lq, lk, &bytes)     exact; host arrays
 *   ckt_fmha_bwd_pack(&plan, sq, sk, lq, lk, meta, capacity)      the metadata; host arrays
 *   ckt_fmha_bwd_prepare(&plan, &a, stream)              synchronous
 *   ckt_fmha_bwd_prepare_async(&plan, &a, staging, staging_bytes, stream)
 *   ckt_fmha_bwd_prepare_async_status(staging)           its packing's status, once the stream passed it
 *   ckt_fmha_bwd_check_prepared(meta, bytes)             the invariants of a host copy of the metadata
 *
 * Host arrays (sq, sk, lq, lk) are those of ckt_fmha_bwd_args (seqstart_q,
 * seqstart_k, seqlen_q_ptr, seqlen_k_ptr) read back to the host: NULL in
 * batch mode, where every entry has the traits' max_seqlen_q / max_seqlen_k. */

#define CKT__FMHA_BWD_ROUND(x) (((x) + CKT_FMHA_WS_ALIGN - 1) / CKT_FMHA_WS_ALIGN * CKT_FMHA_WS_ALIGN)

/* Longest sequence a plan accepts, so that key offsets (tile * block_n) stay in int. */
#define CKT__FMHA_BWD_MAX_SEQLEN (1 << 30)

/* Key tiles (work units per kv head) of an entry with sk keys. */
static inline int64_t ckt__fmha_bwd_ntiles(int64_t sk, int block_n)
{
    return sk > 0 ? (sk + block_n - 1) / block_n : 0;
}

/* a * b, or -1 when it exceeds INT64_MAX (a, b >= 0). */
static inline int64_t ckt__fmha_bwd_mul(int64_t a, int64_t b)
{
    if (a < 0 || b < 0 || (a != 0 && b > INT64_MAX / a))
        return -1;
    return a * b;
}

/* The fp32 elements of dq_acc in the worst case the plan admits (no length
 * read): nhead_q * dq_ld * dq_rows(max_seqlen_q) * (a bound on sum_b nsplits[b]). Not
 * persistent: nsplits = 1, so batch. Persistent: each entry's nsplits is at
 * most the blocks one (b, hk) can span, min(grid, key tiles of max_seqlen_k);
 * and, summed over the entries, at most batch + grid - 1: nsplits[b] - 1 is
 * the number of block starts strictly inside one head's unit range of entry
 * b, the heads' ranges are disjoint and there are grid - 1 block starts past
 * 0. So sum_b nsplits[b] <= min(batch * min(grid, tiles), batch + grid - 1).
 * -1 on overflow. */
static inline int64_t ckt__fmha_bwd_dq_bound(const ckt_fmha_bwd_plan *p)
{
    const ckt_fmha_bwd_traits *t = &p->traits;
    int64_t splits = t->batch; /* the bound on sum_b nsplits[b] */
    if (p->persistent) {
        const int64_t nt = ckt__fmha_bwd_ntiles(t->max_seqlen_k, p->block_n);
        int64_t per_entry = nt < p->grid ? nt : p->grid;
        if (per_entry < 1)
            per_entry = 1;
        splits = (int64_t)t->batch * per_entry;
        if (splits > (int64_t)t->batch + p->grid - 1)
            splits = (int64_t)t->batch + p->grid - 1;
    }
    const int64_t e = ckt__fmha_bwd_mul(ckt_fmha_bwd_dq_rows(t->max_seqlen_q) * ckt_fmha_bwd_dq_ld(t->hdim_q),
                                        (int64_t)t->nhead_q);
    return e < 0 ? -1 : ckt__fmha_bwd_mul(e, splits);
}

/* The pinned staging buffer of ckt_fmha_bwd_prepare_async:
 *   [0, 512)            ckt__fmha_bwd_staging_head (the last packing's status)
 *   4 x [A bytes]       seqstart_q, seqstart_k, seqlen_q_ptr, seqlen_k_ptr read back
 *                       (int32, batch + 1 entries; A = 4 (batch + 1) rounded to 256)
 *   [meta_bytes]        the packed metadata, copied to the workspace's start */
typedef struct ckt__fmha_bwd_staging_head {
    int32_t magic;  /* CKT_FMHA_BWD_META_MAGIC once a packing ran into the buffer */
    int32_t status; /* its ckt_status */
    char message[2 * CKT_FMHA_WS_ALIGN - 8];
} ckt__fmha_bwd_staging_head;

#define CKT__FMHA_BWD_STAGING_HEAD_BYTES (2 * CKT_FMHA_WS_ALIGN)
CKT_STATIC_ASSERT(sizeof(ckt__fmha_bwd_staging_head) == CKT__FMHA_BWD_STAGING_HEAD_BYTES,
                  "the staging head must fill its two CKT_FMHA_WS_ALIGN sections");

static inline size_t ckt__fmha_bwd_staging_array_bytes(int batch)
{
    return CKT__FMHA_BWD_ROUND(sizeof(int32_t) * (size_t)(batch + 1));
}

static inline int32_t *ckt__fmha_bwd_staging_array(void *staging, int batch, int i)
{
    return (int32_t *)((char *)staging + CKT__FMHA_BWD_STAGING_HEAD_BYTES +
                       (size_t)i * ckt__fmha_bwd_staging_array_bytes(batch));
}

static inline void *ckt__fmha_bwd_staging_meta(void *staging, int batch)
{
    return (char *)staging + CKT__FMHA_BWD_STAGING_HEAD_BYTES + 4 * ckt__fmha_bwd_staging_array_bytes(batch);
}

/* >>host: plan */

/* Bytes of the metadata, dq_acc and D sections for any lengths within the
 * plan's maxima (the group-mode upper bound; see below). */
static inline size_t ckt__fmha_bwd_sections_bound(const ckt_fmha_bwd_plan *p)
{
    const int64_t rows = (int64_t)p->traits.batch * p->traits.max_seqlen_q;
    return p->meta_bytes + CKT__FMHA_BWD_ROUND((size_t)ckt__fmha_bwd_dq_bound(p) * sizeof(float)) +
           (size_t)rows * (size_t)p->traits.nhead_q * sizeof(float);
}

/* Fills plan for traits t and an instance whose dq_dk_dv block takes block_m
 * query rows per step and block_n keys per unit, blocks_per_mp of them
 * resident per multiprocessor. t->multiprocessors = 0 asks the current device
 * (the plan keeps the count it used). Bad traits: CKT_ERROR_INVALID_ARGUMENT
 * naming the field. */
static inline ckt_status ckt_fmha_bwd_plan_make(ckt_fmha_bwd_plan *plan, const ckt_fmha_bwd_traits *t, int block_m,
                                                int block_n, int blocks_per_mp)
{
    if (!plan || !t)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_fmha_bwd_plan_make: %s is NULL", !plan ? "plan" : "traits");
    memset(plan, 0, sizeof *plan);
#define CKT__WS_CHECK(cond, field, value, what)                                                                  \
    if (!(cond))                                                                                                 \
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "ckt_fmha_bwd_plan_make: %s = %d (%s)", field, (int)(value), \
                         what);
    CKT__WS_CHECK(block_m >= 1, "block_m", block_m, "must be >= 1")
    CKT__WS_CHECK(block_n >= 1, "block_n", block_n, "must be >= 1")
    CKT__WS_CHECK(blocks_per_mp >= 1, "blocks_per_mp", blocks_per_mp, "must be >= 1")
    CKT__WS_CHECK(t->batch >= 1, "traits.batch", t->batch, "must be >= 1")
    CKT__WS_CHECK(t->nhead_k >= 1, "traits.nhead_k", t->nhead_k, "must be >= 1")
    CKT__WS_CHECK(t->nhead_q >= 1 && t->nhead_q % t->nhead_k == 0, "traits.nhead_q", t->nhead_q,
                  "must be a positive multiple of nhead_k")
    CKT__WS_CHECK(t->max_seqlen_q >= 0 && t->max_seqlen_q <= CKT__FMHA_BWD_MAX_SEQLEN, "traits.max_seqlen_q",
                  t->max_seqlen_q, "must be in [0, 2^30]")
    CKT__WS_CHECK(t->max_seqlen_k >= 0 && t->max_seqlen_k <= CKT__FMHA_BWD_MAX_SEQLEN, "traits.max_seqlen_k",
                  t->max_seqlen_k, "must be in [0, 2^30]")
    CKT__WS_CHECK(t->hdim_q >= 1, "traits.hdim_q", t->hdim_q, "must be >= 1")
    CKT__WS_CHECK(t->hdim_v >= 1, "traits.hdim_v", t->hdim_v, "must be >= 1")
    CKT__WS_CHECK(t->dtype == CKT_F16 || t->dtype == CKT_BF16, "traits.dtype", t->dtype, "must be CKT_F16 or CKT_BF16")
    CKT__WS_CHECK(t->group_mode == 0 || t->group_mode == 1, "traits.group_mode", t->group_mode, "must be 0 or 1")
    CKT__WS_CHECK((unsigned)t->mask <= (unsigned)CKT_MASK_WINDOW_BOTTOM_RIGHT, "traits.mask", t->mask,
                  "not a ckt_fmha_mask")
    CKT__WS_CHECK(t->deterministic == 0 || t->deterministic == 1, "traits.deterministic", t->deterministic,
                  "must be 0 or 1")
    CKT__WS_CHECK(t->multiprocessors >= 0, "traits.multiprocessors", t->multiprocessors,
                  "must be >= 0 (0: the device's)")
    CKT__WS_CHECK(t->dbias_reduce == 0 || t->dbias_reduce == 1, "traits.dbias_reduce", t->dbias_reduce,
                  "must be 0 or 1")
#undef CKT__WS_CHECK
    plan->traits = *t;
    if (t->multiprocessors == 0) {
        int n = 0;
        ckt_status s = ckt_rt_multiprocessors(&n);
        if (s != CKT_SUCCESS)
            return s;
        plan->traits.multiprocessors = n > 0 ? n : 1;
    }
    plan->block_m = block_m;
    plan->block_n = block_n;
    plan->blocks_per_mp = blocks_per_mp;
    plan->persistent = t->deterministic;
    plan->max_units = (int64_t)t->batch * t->nhead_k * ckt__fmha_bwd_ntiles(t->max_seqlen_k, block_n);
    const int64_t grid =
        plan->persistent ? (int64_t)plan->traits.multiprocessors * blocks_per_mp : (plan->max_units > 0 ? plan->max_units : 1);
    if (grid > INT32_MAX)
        return ckt__fail(CKT_ERROR_UNSUPPORTED,
                         "ckt_fmha_bwd_plan_make: a grid of %lld dq_dk_dv blocks (%s) exceeds 2^31 - 1",
                         (long long)grid,
                         plan->persistent ? "multiprocessors * blocks_per_mp" : "batch * nhead_k * key tiles");
    plan->grid = (int)grid;
    plan->meta_bytes = ckt_fmha_bwd_meta_bytes(t->batch, plan->grid, plan->persistent);
    plan->staging_bytes =
        CKT__FMHA_BWD_STAGING_HEAD_BYTES + 4 * ckt__fmha_bwd_staging_array_bytes(t->batch) + plan->meta_bytes;
    plan->instance = NULL;
    /* the upper bound must be representable (bytes of dq_acc and D) */
    const int64_t dq = ckt__fmha_bwd_dq_bound(plan);
    const int64_t rows = (int64_t)t->batch * t->max_seqlen_q;
    if (dq < 0 || dq > INT64_MAX / 8 || ckt__fmha_bwd_mul(rows, (int64_t)t->nhead_q * 4) < 0 ||
        ckt__fmha_bwd_mul(rows, (int64_t)t->nhead_q * 4) > INT64_MAX / 4)
        return ckt__fail(CKT_ERROR_UNSUPPORTED,
                         "ckt_fmha_bwd_plan_make: the workspace for batch %d x max_seqlen_q %d x nhead_q %d x "
                         "hdim_q %d overflows",
                         t->batch, t->max_seqlen_q, t->nhead_q, t->hdim_q);
    if (t->dbias_reduce) { /* the dS section, after the sections' upper bound (plan-only) */
        const int64_t ds = ckt__fmha_bwd_mul(ckt__fmha_bwd_mul((int64_t)t->batch * t->nhead_q, t->max_seqlen_q),
                                             (int64_t)t->max_seqlen_k * 2);
        if (ds < 0 || ds > INT64_MAX / 4)
            return ckt__fail(CKT_ERROR_UNSUPPORTED,
                             "ckt_fmha_bwd_plan_make: dbias_reduce's dS section for batch %d x nhead_q %d x "
                             "max_seqlen_q %d x max_seqlen_k %d overflows",
                             t->batch, t->nhead_q, t->max_seqlen_q, t->max_seqlen_k);
        plan->dbias_offset = CKT__FMHA_BWD_ROUND(ckt__fmha_bwd_sections_bound(plan));
        plan->dbias_bytes = (size_t)ds;
    }
    return CKT_SUCCESS;
}

/* The workspace any lengths within the plan's maxima need, computed from the
 * plan alone (so a caller can allocate once; ckt_fmha_bwd_prepare_async
 * requires it): meta_bytes + dq_acc + D with every entry at max_seqlen_q rows
 * and the splits at their most: 1 per entry when not persistent; else at most
 * min(grid, key tiles of max_seqlen_k) per entry and batch + grid - 1 in all
 * (ckt__fmha_bwd_dq_bound says why). 0 for a NULL plan. */
static inline ckt_status ckt_fmha_bwd_workspace_size(const ckt_fmha_bwd_plan *p, const int32_t *seqstart_q,
                                                     const int32_t *seqstart_k, const int32_t *seqlen_q,
                                                     const int32_t *seqlen_k, size_t *bytes);

static inline size_t ckt_fmha_bwd_workspace_upper_bound(const ckt_fmha_bwd_plan *p)
{
    if (!p)
        return 0;
    /* batch mode: the lengths are the traits', so the exact size is known
     * (the caps below can be 10x it in deterministic mode) */
    size_t exact = 0;
    if (!p->traits.group_mode && ckt_fmha_bwd_workspace_size(p, NULL, NULL, NULL, NULL, &exact) == CKT_SUCCESS)
        return exact;
    if (p->traits.dbias_reduce) /* the dS section lies past the others' bound */
        return p->dbias_offset + p->dbias_bytes;
    return ckt__fmha_bwd_sections_bound(p);
}

/* >>host: pack */

/* Entry b's logical lengths (already validated by the packer's first pass). */
static inline void ckt__fmha_bwd_lengths(const ckt_fmha_bwd_plan *p, const int32_t *seqstart_q,
                                         const int32_t *seqstart_k, const int32_t *seqlen_q, const int32_t *seqlen_k,
                                         int b, int *sq, int *sk)
{
    ckt_fmha_seq s = ckt_fmha_seq_resolve(p->traits.group_mode, seqstart_q, seqstart_k, seqlen_q, seqlen_k,
                                          p->traits.max_seqlen_q, p->traits.max_seqlen_k, b);
    *sq = s.sq;
    *sk = s.sk;
}

/* The cost of one unit, key tile `tile` of an entry with mask m: the query
 * tiles (block_m rows, aligned as dq_dk_dv walks them) that see the tile,
 * times the query heads per kv head, plus 1 for the tile's fixed work (load
 * K and V, write dK and dV). */
static inline int64_t ckt__fmha_bwd_unit_cost(const ckt_fmha_bwd_plan *p, const ckt_fmha_mask_params *m, int64_t tile)
{
    int lo, hi;
    ckt_fmha_mask_query_range(m, (int)(tile * p->block_n), p->block_n, &lo, &hi);
    const int64_t qtiles = hi > lo ? CKT_CEIL_DIV((int64_t)hi, p->block_m) - lo / p->block_m : 0;
    return qtiles * (p->traits.nhead_q / p->traits.nhead_k) + 1;
}

/* Turns *m into the metadata of a failed packing: magic set, status s, no
 * unit and no row (kernels that honour the metadata do nothing). */
static inline void ckt__fmha_bwd_meta_fail(const ckt_fmha_bwd_plan *p, void *meta, ckt_status s)
{
    ckt_fmha_bwd_meta *m = (ckt_fmha_bwd_meta *)meta;
    memset(meta, 0, p->meta_bytes);
    m->magic = CKT_FMHA_BWD_META_MAGIC;
    m->status = (int32_t)s;
    m->batch = p->traits.batch;
    m->grid = p->grid;
    m->nhead_q = p->traits.nhead_q;
    m->nhead_k = p->traits.nhead_k;
    m->block_n = p->block_n;
    m->persistent = p->persistent;
    m->d_offset = (int64_t)p->meta_bytes;
    m->need_bytes = (int64_t)p->meta_bytes;
    int64_t *nsplits = (int64_t *)ckt_fmha_bwd_meta_nsplits(m);
    for (int b = 0; b < m->batch; b++)
        nsplits[b] = 1;
}

/* The first pass: lengths checked, unit_start and q_row_start, and (persistent)
 * the cost of one kv head's units of each entry into cost_head[b]. */
static inline ckt_status ckt__fmha_bwd_pack_lengths(const ckt_fmha_bwd_plan *p, const int32_t *seqstart_q,
                                                    const int32_t *seqstart_k, const int32_t *seqlen_q,
                                                    const int32_t *seqlen_k, int64_t *unit_start,
                                                    int64_t *q_row_start, int64_t *cost_head, int64_t *total_cost)
{
    const ckt_fmha_bwd_traits *t = &p->traits;
    int64_t units = 0, rows = 0, cost = 0;
    if (t->group_mode) {
        if (!seqstart_q || !seqstart_k)
            return ckt__fail(CKT_ERROR_NULL_POINTER, "%s: NULL in group mode", !seqstart_q ? "seqstart_q" : "seqstart_k");
        if (seqstart_q[0] < 0 || seqstart_k[0] < 0)
            return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s[0] = %d is negative",
                             seqstart_q[0] < 0 ? "seqstart_q" : "seqstart_k",
                             seqstart_q[0] < 0 ? seqstart_q[0] : seqstart_k[0]);
    }
    for (int b = 0; b < t->batch; b++) {
        int sq = t->max_seqlen_q, sk = t->max_seqlen_k;
        if (t->group_mode) {
            const int32_t *starts[2] = {seqstart_q, seqstart_k};
            const int32_t *lens[2] = {seqlen_q, seqlen_k};
            static const char *const start_name[2] = {"seqstart_q", "seqstart_k"};
            static const char *const len_name[2] = {"seqlen_q_ptr", "seqlen_k_ptr"};
            static const char *const max_name[2] = {"max_seqlen_q", "max_seqlen_k"};
            const int max_len[2] = {t->max_seqlen_q, t->max_seqlen_k};
            int len[2];
            for (int k = 0; k < 2; k++) {
                const int64_t phys = (int64_t)starts[k][b + 1] - starts[k][b];
                if (phys < 0)
                    return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                                     "%s[%d] = %d is less than %s[%d] = %d (seqstarts must not decrease)",
                                     start_name[k], b + 1, starts[k][b + 1], start_name[k], b, starts[k][b]);
                if (lens[k] && (lens[k][b] < 0 || lens[k][b] > phys))
                    return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                                     "%s[%d] = %d is outside [0, %lld], entry %d's physical length %s[%d] - %s[%d]",
                                     len_name[k], b, lens[k][b], (long long)phys, b, start_name[k], b + 1,
                                     start_name[k], b);
                len[k] = lens[k] ? lens[k][b] : (int)phys;
                if ((int64_t)(lens[k] ? lens[k][b] : phys) > max_len[k])
                    return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s[%d]: entry %d has %lld rows, more than the plan's %s %d",
                                     lens[k] ? len_name[k] : start_name[k], lens[k] ? b : b + 1, b,
                                     (long long)(lens[k] ? lens[k][b] : phys), max_name[k], max_len[k]);
            }
            sq = len[0];
            sk = len[1];
        }
        const int64_t nt = ckt__fmha_bwd_ntiles(sk, p->block_n);
        unit_start[b] = units;
        q_row_start[b] = rows;
        units += (int64_t)t->nhead_k * nt;
        rows += sq;
        if (p->persistent) {
            const ckt_fmha_mask_params m = ckt_fmha_mask_make(t->mask, t->window_left, t->window_right, sq, sk);
            int64_t c = 0;
            for (int64_t tile = 0; tile < nt; tile++)
                c += ckt__fmha_bwd_unit_cost(p, &m, tile);
            cost_head[b] = c;
            cost += (int64_t)t->nhead_k * c;
        }
    }
    unit_start[t->batch] = units;
    q_row_start[t->batch] = rows;
    *total_cost = cost;
    return CKT_SUCCESS;
}

/* The persistent partition: block_start[0..grid] for units of total cost
 * `cost`. P(u) = the cost of the units before u. Block p would ideally start
 * at the first unit u with P(u) >= p * cost / grid (so that no block costs
 * more than the average plus one unit); then, when there are at least as
 * many units as blocks, every block gets one unit at least (starts strictly
 * increase, and leave one unit for each later block), and when there are
 * fewer, every unit gets a block of its own. Integer arithmetic only. */
static inline void ckt__fmha_bwd_partition(const ckt_fmha_bwd_plan *p, const int32_t *seqstart_q,
                                           const int32_t *seqstart_k, const int32_t *seqlen_q, const int32_t *seqlen_k,
                                           const int64_t *unit_start, const int64_t *cost_head, int64_t cost,
                                           int64_t *block_start)
{
    const ckt_fmha_bwd_traits *t = &p->traits;
    const int G = p->grid;
    const int64_t U = unit_start[t->batch];
    block_start[0] = 0;
    block_start[G] = U;
    if (U < G) {
        for (int q = 1; q < G; q++)
            block_start[q] = q < U ? q : U;
        return;
    }
    /* thr(q) = ceil(q * cost / G) = q * (cost / G) + ceil(q * (cost % G) / G), without overflow */
    const int64_t cq = cost / G, cr = cost % G;
    int q = 1;
    int64_t thr = cq + (cr + G - 1) / G;
    int64_t base = 0; /* P(unit_start[b]) */
    for (int b = 0; b < t->batch && q < G; b++) {
        const int64_t nt = (unit_start[b + 1] - unit_start[b]) / t->nhead_k;
        if (nt == 0)
            continue;
        const int64_t head = cost_head[b], entry = (int64_t)t->nhead_k * head;
        int sq, sk;
        ckt__fmha_bwd_lengths(p, seqstart_q, seqstart_k, seqlen_q, seqlen_k, b, &sq, &sk);
        const ckt_fmha_mask_params m = ckt_fmha_mask_make(t->mask, t->window_left, t->window_right, sq, sk);
        int64_t cur_hk = -1, tile = 0, acc = 0; /* acc = cost of the head's tiles [0, tile) */
        while (q < G && thr <= base + entry) {
            int64_t u = unit_start[b];
            if (thr > base) {
                const int64_t rel = thr - base, hk = (rel - 1) / head, need = rel - hk * head;
                if (hk != cur_hk) {
                    cur_hk = hk;
                    tile = 0;
                    acc = 0;
                }
                while (acc < need)
                    acc += ckt__fmha_bwd_unit_cost(p, &m, tile++);
                u = unit_start[b] + hk * nt + tile;
            }
            block_start[q++] = u;
            thr = (int64_t)q * cq + ((int64_t)q * cr + G - 1) / G;
        }
        base += entry;
    }
    for (; q < G; q++)
        block_start[q] = U;
    /* no idle block: starts strictly increase, G - q units left for blocks q.. */
    for (q = 1; q < G; q++) {
        int64_t s = block_start[q];
        if (s < block_start[q - 1] + 1)
            s = block_start[q - 1] + 1;
        if (s > U - G + q)
            s = U - G + q;
        block_start[q] = s;
    }
}

/* The lane schedule for B * HK heads of N key tiles each on G blocks: the
 * lanes per head C (0: none) that serve the most work a block-time, C blocks
 * running one head at once (block c of them its key tiles c, 2C - 1 - c,
 * 2C + c, ..., into dQ slot c), G / C heads a round, no head split over rounds. Taken
 * when its efficiency (units over G x the busiest block's units) is 0.85 or
 * more. Against the contiguous ranges: the blocks that run at once share
 * few heads, so their Q, dO, K and V stay in L2, and under a causal mask
 * every lane takes long and short key tiles alike (H200, bf16, d128, b4 h16
 * s4096: 12-17% less time for the causal products; docs/fmha_bwd.md). */
static inline int ckt__fmha_bwd_pick_lanes(int64_t heads, int64_t N, int G, int *heads_per_round, int *rounds)
{
    if (heads < 1 || N < 1 || G < 1)
        return 0;
    int best = 0;
    double best_eff = 0.0;
    for (int64_t C = 1; C <= N && C <= G; C++) {
        const int64_t hr = G / C, R = (heads + hr - 1) / hr, per = (N + C - 1) / C;
        const double eff = (double)(heads * N) / ((double)G * (double)(R * per));
        if (eff > best_eff + 1e-9) {
            best_eff = eff;
            best = (int)C;
            *heads_per_round = (int)hr;
            *rounds = (int)R;
        }
    }
    return best_eff >= 0.85 && *rounds <= 1 << 20 ? best : 0;
}

/* Packs the metadata for the given lengths (host arrays; NULLs in batch
 * mode) into meta_out (meta_capacity >= plan->meta_bytes, 8-byte aligned),
 * exactly as the layout above says. Bad lengths (a seqstart that decreases, a
 * logical length below 0 or beyond the physical one or beyond the traits'
 * maximum): an error naming the array and the entry, and meta_out holds the
 * metadata of a failed packing (magic set, status = the error, no unit and
 * no row: kernels do nothing). */
static inline ckt_status ckt_fmha_bwd_pack(const ckt_fmha_bwd_plan *p, const int32_t *seqstart_q,
                                           const int32_t *seqstart_k, const int32_t *seqlen_q,
                                           const int32_t *seqlen_k, void *meta_out, size_t meta_capacity)
{
    if (!p || !meta_out)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_fmha_bwd_pack: %s is NULL", !p ? "plan" : "meta_out");
    if (meta_capacity < p->meta_bytes)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "meta_capacity: %zu bytes, the plan's metadata takes %zu",
                         meta_capacity, p->meta_bytes);
    if ((uintptr_t)meta_out % sizeof(int64_t) != 0)
        return ckt__fail(CKT_ERROR_MISALIGNED, "meta_out: %p is not 8-byte aligned", meta_out);
    const ckt_fmha_bwd_traits *t = &p->traits;
    const int B = t->batch;
    ckt__fmha_bwd_meta_fail(p, meta_out, CKT_SUCCESS); /* the header; arrays zeroed */
    ckt_fmha_bwd_meta *m = (ckt_fmha_bwd_meta *)meta_out;
    int64_t *unit_start = (int64_t *)ckt_fmha_bwd_meta_unit_start(m);
    int64_t *block_start = (int64_t *)ckt_fmha_bwd_meta_block_start(m);
    int64_t *q_row_start = (int64_t *)ckt_fmha_bwd_meta_q_row_start(m);
    int64_t *dq_start = (int64_t *)ckt_fmha_bwd_meta_dq_start(m);
    int64_t *nsplits = (int64_t *)ckt_fmha_bwd_meta_nsplits(m);
    if (!t->group_mode)
        seqstart_q = seqstart_k = seqlen_q = seqlen_k = NULL;

    /* 1. lengths, unit_start, q_row_start; each entry's cost per kv head into dq_start (scratch) */
    int64_t cost = 0;
    ckt_status s = ckt__fmha_bwd_pack_lengths(p, seqstart_q, seqstart_k, seqlen_q, seqlen_k, unit_start, q_row_start,
                                              dq_start, &cost);
    if (s != CKT_SUCCESS) {
        ckt__fmha_bwd_meta_fail(p, meta_out, s);
        return s;
    }
    const int64_t U = unit_start[B];

    /* 2. persistent: the lane schedule, where every entry has the same key
     * tiles, it keeps the blocks busy and its B x lanes dQ slots fit the plan's
     * bound (B + grid - 1); the partition (kept in the metadata either way);
     * nsplits[b] = the lanes, or the most blocks one (b, hk) spans */
    if (p->persistent && U > 0) {
        const int64_t N = (unit_start[1] - unit_start[0]) / t->nhead_k;
        int same = N > 0;
        for (int b = 1; b < B && same; b++)
            same = (unit_start[b + 1] - unit_start[b]) / t->nhead_k == N;
        int hr = 0, R = 0;
        const int C = same ? ckt__fmha_bwd_pick_lanes((int64_t)B * t->nhead_k, N, p->grid, &hr, &R) : 0;
        if (C > 0 && (int64_t)B * (C - 1) <= (int64_t)p->grid - 1) {
            m->lanes = C;
            m->lane_heads = hr;
            m->lane_rounds = R;
            m->lane_tiles = (int32_t)N;
        }
    }
    if (p->persistent)
        ckt__fmha_bwd_partition(p, seqstart_q, seqstart_k, seqlen_q, seqlen_k, unit_start, dq_start, cost,
                                block_start);
    for (int b = 0; b < B; b++) {
        const int64_t nt = (unit_start[b + 1] - unit_start[b]) / t->nhead_k;
        int64_t n = m->lanes ? m->lanes : 1;
        for (int hk = 0; p->persistent && !m->lanes && nt > 0 && hk < t->nhead_k; hk++) {
            const int64_t first = unit_start[b] + hk * nt;
            const int64_t span = ckt_fmha_bwd_find(block_start, p->grid, first + nt - 1) -
                                 ckt_fmha_bwd_find(block_start, p->grid, first) + 1;
            if (span > n)
                n = span;
        }
        nsplits[b] = n;
    }

    /* 3. dq_start (overwrites the scratch), D, sizes */
    dq_start[0] = 0;
    for (int b = 0; b < B; b++)
        dq_start[b + 1] = dq_start[b] + nsplits[b] * t->nhead_q * ckt_fmha_bwd_dq_rows(q_row_start[b + 1] - q_row_start[b]) *
                                         ckt_fmha_bwd_dq_ld(t->hdim_q);
    m->total_units = U;
    m->total_q_rows = q_row_start[B];
    m->d_offset = (int64_t)(p->meta_bytes + CKT__FMHA_BWD_ROUND((size_t)dq_start[B] * sizeof(float)));
    m->need_bytes = m->d_offset + (int64_t)sizeof(float) * t->nhead_q * m->total_q_rows;
    if (t->dbias_reduce) { /* the dS section at its plan-fixed offset */
        m->dbias_offset = (int64_t)p->dbias_offset;
        m->need_bytes = (int64_t)(p->dbias_offset + p->dbias_bytes);
    }
    return CKT_SUCCESS;
}

/* The exact workspace for these lengths (host arrays as ckt_fmha_bwd_pack's):
 * what the packed metadata's need_bytes says. */
static inline ckt_status ckt_fmha_bwd_workspace_size(const ckt_fmha_bwd_plan *p, const int32_t *seqstart_q,
                                                     const int32_t *seqstart_k, const int32_t *seqlen_q,
                                                     const int32_t *seqlen_k, size_t *bytes)
{
    if (!p || !bytes)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_fmha_bwd_workspace_size: %s is NULL", !p ? "plan" : "bytes");
    *bytes = 0;
    void *meta = malloc(p->meta_bytes);
    if (!meta)
        return ckt__fail(CKT_ERROR_OUT_OF_MEMORY, "ckt_fmha_bwd_workspace_size: %zu bytes", p->meta_bytes);
    ckt_status s = ckt_fmha_bwd_pack(p, seqstart_q, seqstart_k, seqlen_q, seqlen_k, meta, p->meta_bytes);
    if (s == CKT_SUCCESS)
        *bytes = (size_t)((ckt_fmha_bwd_meta *)meta)->need_bytes;
    free(meta);
    return s;
}

/* >>host: prepare */

/* What prepare and prepare_async check before touching anything: a describes
 * the plan's problem (the fields the layout depends on). */
static inline ckt_status ckt__fmha_bwd_prepare_check(const char *fn, const ckt_fmha_bwd_plan *p,
                                                     const ckt_fmha_bwd_args *a)
{
    if (!p || !a)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "%s: %s is NULL", fn, !p ? "plan" : "args");
    if (p->grid < 1 || p->block_n < 1 || p->meta_bytes == 0)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: plan was not made (ckt_fmha_bwd_plan_make)", fn);
    const ckt_fmha_bwd_traits *t = &p->traits;
#define CKT__WS_SAME(field, tfield)                                                                           \
    if ((int)a->field != (int)t->tfield)                                                                      \
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "%s: args.%s = %d, but the plan's traits have %s = %d", fn, \
                         #field, (int)a->field, #tfield, (int)t->tfield);
    CKT__WS_SAME(batch, batch)
    CKT__WS_SAME(group_mode, group_mode)
    CKT__WS_SAME(nhead_q, nhead_q)
    CKT__WS_SAME(nhead_k, nhead_k)
    CKT__WS_SAME(hdim_q, hdim_q)
    CKT__WS_SAME(deterministic, deterministic)
    if (!t->group_mode) {
        CKT__WS_SAME(seqlen_q, max_seqlen_q)
        CKT__WS_SAME(seqlen_k, max_seqlen_k)
    }
#undef CKT__WS_SAME
    if (t->group_mode && (!a->seqstart_q || !a->seqstart_k))
        return ckt__fail(CKT_ERROR_NULL_POINTER, "%s: args.%s is NULL in group mode", fn,
                         !a->seqstart_q ? "seqstart_q" : "seqstart_k");
    if (!a->workspace)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "%s: args.workspace is NULL", fn);
    if (a->workspace_bytes < p->meta_bytes)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "%s: workspace_bytes = %zu is less than the metadata alone (%zu); allocate "
                         "ckt_fmha_bwd_workspace_upper_bound() = %zu bytes",
                         fn, a->workspace_bytes, p->meta_bytes, ckt_fmha_bwd_workspace_upper_bound(p));
    return CKT_SUCCESS;
}

/* Prepares a->workspace for a's lengths, synchronously: reads the device
 * arrays back (group mode; in stream order on `stream`), packs on the host,
 * checks a->workspace_bytes >= the exact need, copies the metadata to the
 * workspace on `stream`, and returns when that is done (dq_acc is left as it
 * is: each run initializes it).
 * On a length error the workspace gets the metadata of a failed packing (so a
 * run after it does nothing) and the error names the array and the entry. */
static inline ckt_status ckt_fmha_bwd_prepare(const ckt_fmha_bwd_plan *p, const ckt_fmha_bwd_args *a,
                                              ckt_stream stream)
{
    ckt_status s = ckt__fmha_bwd_prepare_check("ckt_fmha_bwd_prepare", p, a);
    if (s != CKT_SUCCESS)
        return s;
    const int B = p->traits.batch;
    const size_t A = sizeof(int32_t) * (size_t)(B + 1);
    char *host = (char *)malloc(p->meta_bytes + 4 * A);
    if (!host)
        return ckt__fail(CKT_ERROR_OUT_OF_MEMORY, "ckt_fmha_bwd_prepare: %zu host bytes", p->meta_bytes + 4 * A);
    void *meta = host; /* malloc's alignment suits int64 */
    int32_t *arr[4] = {NULL, NULL, NULL, NULL};
    const int32_t *src[4] = {a->seqstart_q, a->seqstart_k, a->seqlen_q_ptr, a->seqlen_k_ptr};
    if (p->traits.group_mode) {
        for (int i = 0; i < 4; i++) {
            if (!src[i])
                continue;
            arr[i] = (int32_t *)(host + p->meta_bytes + (size_t)i * A);
            s = ckt_rt_memcpy_async(arr[i], src[i], i < 2 ? A : A - sizeof(int32_t), CKT_D2H, stream);
            if (s != CKT_SUCCESS)
                goto done;
        }
        s = ckt_rt_stream_synchronize(stream);
        if (s != CKT_SUCCESS)
            goto done;
    }
    s = ckt_fmha_bwd_pack(p, arr[0], arr[1], arr[2], arr[3], meta, p->meta_bytes);
    if (s == CKT_SUCCESS && (size_t)((ckt_fmha_bwd_meta *)meta)->need_bytes > a->workspace_bytes) {
        s = ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                      "ckt_fmha_bwd_prepare: workspace_bytes = %zu, these lengths need %zu "
                      "(ckt_fmha_bwd_workspace_size; the upper bound is %zu)",
                      a->workspace_bytes, (size_t)((ckt_fmha_bwd_meta *)meta)->need_bytes,
                      ckt_fmha_bwd_workspace_upper_bound(p));
        ckt__fmha_bwd_meta_fail(p, meta, s);
    }
    {
        /* the metadata (a failed packing's too); dq_acc is each run's to
         * initialize (dot_do_o zeroes it) */
        ckt_status c = ckt_rt_memcpy_async(a->workspace, meta, p->meta_bytes, CKT_H2D, stream);
        if (c == CKT_SUCCESS)
            c = ckt_rt_stream_synchronize(stream);
        if (c != CKT_SUCCESS)
            s = c;
    }
done:
    free(host);
    return s;
}

/* What the host function of one ckt_fmha_bwd_prepare_async needs: a copy of
 * the plan (the caller's may be gone by the time it runs), the staging buffer
 * and which arrays were read back. Allocated (malloc) by prepare_async on the
 * caller's thread, released (free) by the host function. */
typedef struct ckt__fmha_bwd_job {
    ckt_fmha_bwd_plan plan;
    void *staging;
    size_t workspace_bytes;
    int has_seqlen_q, has_seqlen_k;
} ckt__fmha_bwd_job;

/* The host function: packs the read-back arrays into the staging buffer's
 * metadata section and records the status. No device runtime call; the only
 * memory it releases is its own job record (C heap). */
static inline void ckt__fmha_bwd_packer(void *user)
{
    ckt__fmha_bwd_job *j = (ckt__fmha_bwd_job *)user;
    const ckt_fmha_bwd_plan *p = &j->plan;
    const int B = p->traits.batch, g = p->traits.group_mode;
    void *meta = ckt__fmha_bwd_staging_meta(j->staging, B);
    ckt_status s = ckt_fmha_bwd_pack(p, g ? ckt__fmha_bwd_staging_array(j->staging, B, 0) : NULL,
                                     g ? ckt__fmha_bwd_staging_array(j->staging, B, 1) : NULL,
                                     g && j->has_seqlen_q ? ckt__fmha_bwd_staging_array(j->staging, B, 2) : NULL,
                                     g && j->has_seqlen_k ? ckt__fmha_bwd_staging_array(j->staging, B, 3) : NULL,
                                     meta, p->meta_bytes);
    if (s == CKT_SUCCESS && (size_t)((ckt_fmha_bwd_meta *)meta)->need_bytes > j->workspace_bytes) {
        /* cannot happen for lengths within the maxima (need <= upper bound <= workspace_bytes) */
        s = ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "ckt_fmha_bwd_prepare_async: workspace_bytes = %zu, the lengths need %lld",
                      j->workspace_bytes, (long long)((ckt_fmha_bwd_meta *)meta)->need_bytes);
        ckt__fmha_bwd_meta_fail(p, meta, s);
    }
    ckt__fmha_bwd_staging_head *h = (ckt__fmha_bwd_staging_head *)j->staging;
    h->status = (int32_t)s;
    const char *msg = s == CKT_SUCCESS ? "" : ckt_last_error();
    size_t n = strlen(msg);
    if (n >= sizeof h->message)
        n = sizeof h->message - 1;
    memcpy(h->message, msg, n);
    h->message[n] = 0;
    h->magic = CKT_FMHA_BWD_META_MAGIC;
    free(j);
}

/* Prepares a->workspace on `stream` without any host synchronization:
 *   1. group mode: copies seqstart_q / seqstart_k (and seqlen_q_ptr /
 *      seqlen_k_ptr when given) device-to-host into the staging buffer,
 *   2. packs them there in a host function (ckt_rt_launch_host_func),
 *   3. copies the packed metadata host-to-device to the workspace's start
 *   (dq_acc is not touched: each run's dot_do_o zeroes it).
 * Batch mode skips step 2. staging: pinned host memory (ckt_rt_malloc_host) of
 * staging_bytes >= plan->staging_bytes; a->workspace_bytes must be at least
 * ckt_fmha_bwd_workspace_upper_bound (the lengths are not known here). What it
 * can check without the lengths it checks now; a length error found by the
 * packing is recorded in the metadata (status set, magic set, total_units =
 * 0: the kernels do nothing) and in the staging buffer: read it with
 * ckt_fmha_bwd_prepare_async_status once the stream has passed the prepare.
 * Lifetime: see the staging buffer's rule at the top of this header. */
static inline ckt_status ckt_fmha_bwd_prepare_async(const ckt_fmha_bwd_plan *p, const ckt_fmha_bwd_args *a,
                                                    void *staging, size_t staging_bytes, ckt_stream stream)
{
    ckt_status s = ckt__fmha_bwd_prepare_check("ckt_fmha_bwd_prepare_async", p, a);
    if (s != CKT_SUCCESS)
        return s;
    if (!staging)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_fmha_bwd_prepare_async: staging is NULL");
    if (staging_bytes < p->staging_bytes)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "ckt_fmha_bwd_prepare_async: staging_bytes = %zu, the plan needs %zu (plan.staging_bytes)",
                         staging_bytes, p->staging_bytes);
    if ((uintptr_t)staging % sizeof(int64_t) != 0)
        return ckt__fail(CKT_ERROR_MISALIGNED, "ckt_fmha_bwd_prepare_async: staging %p is not 8-byte aligned", staging);
    const size_t ub = ckt_fmha_bwd_workspace_upper_bound(p);
    if (a->workspace_bytes < ub)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "ckt_fmha_bwd_prepare_async: workspace_bytes = %zu is less than "
                         "ckt_fmha_bwd_workspace_upper_bound() = %zu, which the asynchronous prepare needs "
                         "(it cannot read the lengths)",
                         a->workspace_bytes, ub);
    const int B = p->traits.batch, g = p->traits.group_mode;
    ckt__fmha_bwd_job *j = (ckt__fmha_bwd_job *)malloc(sizeof *j);
    if (!j)
        return ckt__fail(CKT_ERROR_OUT_OF_MEMORY, "ckt_fmha_bwd_prepare_async: the job record");
    j->plan = *p;
    j->staging = staging;
    j->workspace_bytes = a->workspace_bytes;
    j->has_seqlen_q = g && a->seqlen_q_ptr;
    j->has_seqlen_k = g && a->seqlen_k_ptr;

    /* 1. the lengths, device to host */
    const int32_t *src[4] = {a->seqstart_q, a->seqstart_k, j->has_seqlen_q ? a->seqlen_q_ptr : NULL,
                             j->has_seqlen_k ? a->seqlen_k_ptr : NULL};
    for (int i = 0; g && i < 4 && s == CKT_SUCCESS; i++)
        if (src[i])
            s = ckt_rt_memcpy_async(ckt__fmha_bwd_staging_array(staging, B, i), src[i],
                                    sizeof(int32_t) * (size_t)(i < 2 ? B + 1 : B), CKT_D2H, stream);
    /* 2. pack (the job belongs to the host function once enqueued) */
    if (s == CKT_SUCCESS)
        s = ckt_rt_launch_host_func(stream, ckt__fmha_bwd_packer, j);
    if (s != CKT_SUCCESS) {
        free(j);
        return s;
    }
    /* 3. the metadata, host to device */
    return ckt_rt_memcpy_async(a->workspace, ckt__fmha_bwd_staging_meta(staging, B), p->meta_bytes, CKT_H2D, stream);
}

/* The status of the last packing that ran into staging (call it after the
 * stream has passed the prepare_async): CKT_SUCCESS, or the length error
 * with its message (ckt_last_error()). */
static inline ckt_status ckt_fmha_bwd_prepare_async_status(const void *staging)
{
    if (!staging)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_fmha_bwd_prepare_async_status: staging is NULL");
    const ckt__fmha_bwd_staging_head *h = (const ckt__fmha_bwd_staging_head *)staging;
    if (h->magic != CKT_FMHA_BWD_META_MAGIC)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT,
                         "ckt_fmha_bwd_prepare_async_status: no packing has run into this staging buffer "
                         "(synchronize the stream first)");
    if (h->status != CKT_SUCCESS)
        return ckt__fail((ckt_status)h->status, "%s", h->message);
    return CKT_SUCCESS;
}

/* >>host: check */

/* Checks a host copy of the metadata section (bytes of it, e.g. read back
 * from a prepared workspace) against the layout's invariants: magic; its
 * status (returned with a message); unit_start, q_row_start, dq_start
 * non-decreasing from 0, unit counts multiples of nhead_k; block_start (if
 * persistent) non-decreasing from 0 to total_units; nsplits[b] >= 1 and every
 * (b, hk)'s units within nsplits[b] blocks; dq_start steps that nsplits allow;
 * d_offset and need_bytes consistent. For tests and debugging. */
static inline ckt_status ckt_fmha_bwd_check_prepared(const void *meta, size_t bytes)
{
    const ckt_fmha_bwd_meta *m = (const ckt_fmha_bwd_meta *)meta;
    if (!m)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_fmha_bwd_check_prepared: meta is NULL");
#define CKT__WS_REQUIRE(cond, ...)                                                   \
    if (!(cond))                                                                     \
        return ckt__fail(CKT_ERROR_MISMATCH, "ckt_fmha_bwd_check_prepared: " __VA_ARGS__)
    CKT__WS_REQUIRE(bytes >= sizeof *m, "%zu bytes hold no header", bytes);
    CKT__WS_REQUIRE(m->magic == CKT_FMHA_BWD_META_MAGIC, "magic 0x%08x (not prepared)", (unsigned)m->magic);
    if (m->status != 0)
        return ckt__fail((ckt_status)m->status, "ckt_fmha_bwd_check_prepared: the packing failed (status %d, %s)",
                         (int)m->status, ckt_status_string((ckt_status)m->status));
    CKT__WS_REQUIRE(m->batch >= 1 && m->grid >= 1 && m->nhead_k >= 1 && m->nhead_q % m->nhead_k == 0,
                    "header batch %d grid %d nhead_q %d nhead_k %d", (int)m->batch, (int)m->grid, (int)m->nhead_q,
                    (int)m->nhead_k);
    const size_t mb = ckt_fmha_bwd_meta_bytes(m->batch, m->grid, m->persistent);
    CKT__WS_REQUIRE(bytes >= mb, "%zu bytes, the metadata takes %zu", bytes, mb);
    const int B = m->batch, G = m->grid;
    const int64_t *us = ckt_fmha_bwd_meta_unit_start(m), *bs = ckt_fmha_bwd_meta_block_start(m),
                  *qs = ckt_fmha_bwd_meta_q_row_start(m), *ds = ckt_fmha_bwd_meta_dq_start(m),
                  *ns = ckt_fmha_bwd_meta_nsplits(m);
    CKT__WS_REQUIRE(us[0] == 0 && qs[0] == 0 && ds[0] == 0, "unit_start[0], q_row_start[0], dq_start[0] must be 0");
    CKT__WS_REQUIRE(us[B] == m->total_units, "unit_start[%d] = %lld, total_units = %lld", B, (long long)us[B],
                    (long long)m->total_units);
    CKT__WS_REQUIRE(qs[B] == m->total_q_rows, "q_row_start[%d] = %lld, total_q_rows = %lld", B, (long long)qs[B],
                    (long long)m->total_q_rows);
    if (m->persistent) {
        CKT__WS_REQUIRE(bs[0] == 0 && bs[G] == m->total_units, "block_start[0] = %lld, block_start[%d] = %lld",
                        (long long)bs[0], G, (long long)bs[G]);
        for (int q = 0; q < G; q++)
            CKT__WS_REQUIRE(bs[q + 1] >= bs[q], "block_start[%d] = %lld < block_start[%d] = %lld", q + 1,
                            (long long)bs[q + 1], q, (long long)bs[q]);
    }
    for (int b = 0; b < B; b++) {
        const int64_t n = us[b + 1] - us[b], rows = qs[b + 1] - qs[b], dq = ds[b + 1] - ds[b];
        CKT__WS_REQUIRE(n >= 0 && n % m->nhead_k == 0, "entry %d has %lld units, not a multiple of nhead_k %d", b,
                        (long long)n, (int)m->nhead_k);
        CKT__WS_REQUIRE(rows >= 0, "q_row_start decreases at entry %d", b);
        CKT__WS_REQUIRE(ns[b] >= 1 && (m->persistent || ns[b] == 1), "nsplits[%d] = %lld", b, (long long)ns[b]);
        CKT__WS_REQUIRE(dq >= 0 && (rows == 0 ? dq == 0 : dq % (ns[b] * m->nhead_q * ckt_fmha_bwd_dq_rows(rows)) == 0),
                        "dq_start[%d] - dq_start[%d] = %lld is not nsplits * nhead_q * dq_rows * dq_ld", b + 1, b,
                        (long long)dq);
        const int64_t nt = n / m->nhead_k;
        if (m->lanes) /* the lane schedule: slot c for lane c */
            CKT__WS_REQUIRE(ns[b] == m->lanes && nt == m->lane_tiles,
                            "lane schedule of %d lanes over %d key tiles, but entry %d has nsplits %lld and %lld key "
                            "tiles", (int)m->lanes, (int)m->lane_tiles, b, (long long)ns[b], (long long)nt);
        for (int hk = 0; m->persistent && !m->lanes && nt > 0 && hk < m->nhead_k; hk++) {
            const int64_t first = us[b] + hk * nt;
            const int64_t span = ckt_fmha_bwd_find(bs, G, first + nt - 1) - ckt_fmha_bwd_find(bs, G, first) + 1;
            CKT__WS_REQUIRE(span <= ns[b], "entry %d, kv head %d spans %lld blocks, nsplits[%d] = %lld", b, hk,
                            (long long)span, b, (long long)ns[b]);
        }
    }
    if (m->lanes)
        CKT__WS_REQUIRE(m->persistent && m->lanes >= 1 && m->lanes <= m->lane_tiles && m->lane_heads >= 1 &&
                            m->lane_rounds >= 1 &&
                            (int64_t)m->lanes * m->lane_heads <= G &&
                            (int64_t)m->lane_heads * m->lane_rounds >= (int64_t)B * m->nhead_k,
                        "lanes %d, lane_heads %d, lane_rounds %d for grid %d", (int)m->lanes, (int)m->lane_heads,
                        (int)m->lane_rounds, G);
    CKT__WS_REQUIRE(m->d_offset >= (int64_t)(mb + (size_t)ds[B] * sizeof(float)) && m->d_offset % CKT_FMHA_WS_ALIGN == 0,
                    "d_offset %lld is inside dq_acc or misaligned", (long long)m->d_offset);
    if (m->dbias_offset == 0) {
        CKT__WS_REQUIRE(m->need_bytes == m->d_offset + (int64_t)sizeof(float) * m->nhead_q * m->total_q_rows,
                        "need_bytes %lld != d_offset + D", (long long)m->need_bytes);
    } else {
        CKT__WS_REQUIRE(m->dbias_offset >= m->d_offset + (int64_t)sizeof(float) * m->nhead_q * m->total_q_rows &&
                            m->dbias_offset % CKT_FMHA_WS_ALIGN == 0 && m->need_bytes >= m->dbias_offset,
                        "dbias_offset %lld is inside D or misaligned, or need_bytes %lld does not pass it",
                        (long long)m->dbias_offset, (long long)m->need_bytes);
    }
#undef CKT__WS_REQUIRE
    return CKT_SUCCESS;
}

#endif /* CKT_FMHA_WORKSPACE_H */
