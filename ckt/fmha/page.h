/* ckt/fmha/page.h — the device's copies of key tiles from a paged pool:
 * a key step's K and V tiles gathered a row group at a time
 * (ckt_fmha_page_load_kv_async: whole 16-byte vectors per key row, the page
 * ids of a thread's rows loaded together), a row table for pages that hold
 * no whole tiles, and a window over one page when a tile lies in it. Where
 * an entry's keys are (ckt_fmha_kv_resolve, ckt_fmha_kv_row) is
 * ckt/fmha/kv.h, host and device alike.
 */
#ifndef CKT_FMHA_PAGE_H
#define CKT_FMHA_PAGE_H

#include "ckt/arch/config.h"
#include "ckt/fmha/kv.h"
#include "ckt/tile/mma.h"

#include <stdint.h>

/* The most key rows one thread copies of a paged tile (ckt__fmha_page_copy:
 * R / (T / (C / 8)), rounded up; 16 for the decode instances). */
#define CKT_FMHA_PAGE_ROWS_MAX 32

/* How T threads copy an R x C tile of 16-bit key rows in 16-byte vectors
 * (C / 8 a row), in ckt__fmha_page_copy and ckt_fmha_page_table_copy alike:
 * thread tid's row group r0, one of g = T / (C / 8), takes rpt = R / g
 * (rounded up) consecutive rows, r0 rpt .. r0 rpt + rpt - 1 (fewer in a
 * ragged last group), at vector column c (elements); a warp's copy is two
 * or more whole rows. ok is 0 for the last T % (C / 8) threads when T is no
 * multiple of C / 8 (they copy nothing); ragged is 1 when g does not divide
 * R (then the last group has fewer rows). */
typedef struct ckt__fmha_row_group {
    int r0, rpt, c, ok, ragged;
} ckt__fmha_row_group;

/* The rows a thread copies (rpt above): a constant where R, C, T are. */
CKT_INLINE CKT_HOST_DEVICE int ckt_fmha_page_rows_per_thread(int R, int C, int T)
{
    return CKT_CEIL_DIV(R, T / (C / 8));
}

CKT_INLINE CKT_HOST_DEVICE ckt__fmha_row_group ckt__fmha_row_group_make(int R, int C, int T, int tid)
{
    const int vpr = C / 8;
    ckt__fmha_row_group g;
    g.r0 = tid / vpr;
    g.rpt = ckt_fmha_page_rows_per_thread(R, C, T);
    g.c = (tid % vpr) * 8;
    g.ok = !(T % vpr != 0 && g.r0 >= T / vpr);
    g.ragged = R % (T / vpr) != 0;
    return g;
}

/* ckt__fmha_page_copy's rows that cross pages: a page id where each page
 * begins. Out of line on NVIDIA (the rare page sizes; inlined, its four
 * copies in the decode kernel cost the contiguous calls 2-5%: code size). */
CKT_DEVICE_OUTLINE void ckt__fmha_page_walk(ckt_smem_tile s, const uint16_t *base, const int32_t *ids, int sk,
                                            int page_size, int num_pages, int64_t page_stride,
                                            int64_t row_stride, int j0, int p, int o, int r0, int RPT, int R,
                                            int c, unsigned bytes)
{
    int32_t id = -1;
    const uint16_t *g = base;
    CKT_UNROLL /* one copy of this code a kernel: unrolled, the id loads issue together */
    for (int i = 0; i < CKT_FMHA_PAGE_ROWS_MAX; i++) {
        if (i >= RPT || r0 * RPT + i >= R) /* RPT rows, or fewer in a ragged last group */
            break;
        const int in = j0 + i < sk;
        if (i == 0 || o == 0) { /* this row opens a page (of this thread's rows) */
            id = in ? ids[p] : -1;
            g = base + (int64_t)id * page_stride + (int64_t)o * row_stride + c;
        }
        const unsigned n = in && id >= 0 && id < num_pages ? bytes : 0u;
        ckt_cp_async_16(ckt_smem_tile_ptr(s, r0 * RPT + i, c), n ? g : base, n);
        g += row_stride;
        if (++o == page_size) {
            o = 0;
            p++;
        }
    }
}

/* The copies of the R x C tile of key rows n0 .. n0 + R of a paged pool
 * (16-bit elements, cols of a row real) into s by T threads, 16-byte
 * vectors (C / 8 a row), each thread RPT consecutive rows
 * (ckt__fmha_row_group): a thread's rows enter a new page only where the
 * position in the page wraps. Rows all in one page (always when the
 * page size is a multiple of RPT: 16 at the d128 decode instances, whose
 * tiles start at multiples of the tile) take one id and a constant row
 * step, like a contiguous tile. Else the page id is loaded where a page
 * begins (and at the first row: one division finds that row's page), the
 * row address carried down the page by the row stride; the walk is
 * arithmetic, so the id loads issue together. (A row group striding the tile, rows
 * r0, r0 + G, ..., loaded an id and made a 64-bit address a row: page 16
 * decode ran at 60% of copy bandwidth, issue-bound on that integer work,
 * ncu on H200.) Rows past kv->sk, rows on a bad page id and columns past
 * cols (a multiple of 8) become zeros. */
CKT_INLINE CKT_DEVICE void ckt__fmha_page_copy(ckt_smem_tile s, const uint16_t *base, const ckt_fmha_kv *kv,
                                               int page_size, int num_pages, int64_t page_stride,
                                               int64_t row_stride, int n0, int cols, int R, int C, int T, int tid)
{
    const ckt__fmha_row_group rg = ckt__fmha_row_group_make(R, C, T, tid);
    if (!rg.ok)
        return; /* T not a multiple of C / 8: the last threads have no row */
    const int r0 = rg.r0, RPT = rg.rpt, c = rg.c;
    const unsigned bytes = c < cols ? 16u : 0u;
    const int j0 = n0 + r0 * RPT; /* the key of the first row */
    int p = j0 / page_size, o = j0 - p * page_size;
    if (o + RPT <= page_size) {
        /* the thread's rows lie in one page (pages of a multiple of RPT
         * rows: always): one id, rows a constant stride apart, those
         * past kv->sk or on a bad id zero-filled from an address inside
         * the pool (a page has >= RPT rows) */
        const int32_t id = j0 < kv->sk ? kv->ids[p] : -1;
        const int ok = id >= 0 && id < num_pages;
        const int left = kv->sk - j0, nrows = !ok ? 0 : left < RPT ? left : RPT;
        const uint16_t *g = base + (ok ? (int64_t)id * page_stride + (int64_t)o * row_stride : 0) + c;
        CKT_UNROLL
        for (int i = 0; i < RPT; i++) {
            if (rg.ragged && r0 * RPT + i >= R)
                break;
            ckt_cp_async_16(ckt_smem_tile_ptr(s, r0 * RPT + i, c), g + (int64_t)i * row_stride, i < nrows ? bytes : 0u);
        }
        return;
    }
    ckt__fmha_page_walk(s, base, kv->ids, kv->sk, page_size, num_pages, page_stride, row_stride, j0, p, o, r0, RPT, R, c, bytes);
}

/* >>a paged tile's row table: for pages that hold no whole key tiles, the
 * block writes, ahead of a tile's copies, each of its R rows' element
 * offsets in the K and the V pool (from the bases at this head; -1 for a
 * row past kv->sk or on a bad page id) to shared memory, one row a thread;
 * the copying threads (C / 8 a row) then read a row's offset instead of
 * each loading its page id and building its address. The ids of a tile
 * load a key step before its table is written, so their latency hides
 * behind that step (the walk above waited on them before its copies: 15%
 * of the stall samples of page-1 and page-16 decode, ncu on H200).
 *
 *   int32_t ids[N];                                // N = CKT_CEIL_DIV(R, T)
 *   ckt_fmha_page_table_ids(ids, &kv, page_size, n0, R, T, tid, N);       // step t - 1
 *   ckt_fmha_page_table_write(tab, ids, ...);      // before a block barrier
 *   ckt__fmha_page_table_load_kv(sk, sv, kbase, vbase, tab, ...); // after it: the copies
 *
 * A table is 2 R int64 (K's R offsets, then V's). */
#define CKT_FMHA_PAGE_TABLE_BYTES(R) ((size_t)(R) * 2 * sizeof(int64_t))

/* The page ids of the tile at n0's rows tid, tid + T, ... (N of them): -1
 * past kv->sk. */
CKT_INLINE CKT_DEVICE void ckt_fmha_page_table_ids(int32_t *ids, const ckt_fmha_kv *kv, int page_size, int n0,
                                                   int R, int T, int tid, int N)
{
    CKT_UNROLL
    for (int k = 0; k < N; k++) {
        const int r = tid + k * T, j = n0 + r;
        ids[k] = r < R && j < kv->sk ? kv->ids[j / page_size] : -1;
    }
}

/* Rows tid, tid + T, ... of the tile at n0 into the table tab (K's offsets
 * at tab[r], V's at tab[R + r]) from their page ids (above). */
CKT_INLINE CKT_DEVICE void ckt_fmha_page_table_write(int64_t *tab, const int32_t *ids, int page_size, int num_pages,
                                                     int64_t k_page_stride, int64_t k_row_stride,
                                                     int64_t v_page_stride, int64_t v_row_stride, int n0, int R,
                                                     int T, int tid, int N)
{
    CKT_UNROLL
    for (int k = 0; k < N; k++) {
        const int r = tid + k * T;
        if (r >= R)
            break;
        const int o = (n0 + r) % page_size;
        tab[r] = ckt_fmha_page_offset(ids[k], o, num_pages, k_page_stride, k_row_stride);
        tab[R + r] = ckt_fmha_page_offset(ids[k], o, num_pages, v_page_stride, v_row_stride);
    }
}

/* The copies of an R x C tile of key rows (16-bit elements, cols of a row
 * real) whose offsets from base are off[0 .. R) (a row table's K or V
 * half; -1: zeros) into s by T threads, 16-byte vectors, in
 * ckt__fmha_page_copy's row groups (ckt__fmha_row_group), at most
 * CKT_FMHA_PAGE_ROWS_MAX rows a thread (fwd_body.h asserts it for its
 * tiles; a thread's rows past it would not be copied). */
CKT_INLINE CKT_DEVICE void ckt_fmha_page_table_copy(ckt_smem_tile s, const uint16_t *base, const int64_t *off,
                                                    int cols, int R, int C, int T, int tid)
{
    const ckt__fmha_row_group rg = ckt__fmha_row_group_make(R, C, T, tid);
    if (!rg.ok)
        return;
    const unsigned bytes = rg.c < cols ? 16u : 0u;
    CKT_UNROLL /* out of line below: one copy a kernel, its loads issued together */
    for (int i = 0; i < CKT_FMHA_PAGE_ROWS_MAX; i++) {
        const int r = rg.r0 * rg.rpt + i;
        if (i >= rg.rpt || r >= R)
            break;
        const int64_t o = off[r];
        ckt_cp_async_16(ckt_smem_tile_ptr(s, r, rg.c), base + (o >= 0 ? o : 0) + rg.c, o >= 0 ? bytes : 0u);
    }
}

/* A key step's K and V tiles from a stage's row table tab (K's R offsets,
 * then V's). Out of line on NVIDIA, like the page walk: the table's pages
 * are the rare sizes, and the copies inlined at the decode kernel's four
 * load sites cost its contiguous calls up to 10% (2-3 us a call at small
 * batches: code size; H100). */
CKT_DEVICE_OUTLINE void ckt__fmha_page_table_load_kv(ckt_smem_tile sk, ckt_smem_tile sv, const uint16_t *kbase,
                                                     const uint16_t *vbase, const int64_t *tab, int cols_k,
                                                     int cols_v, int R, int CK, int CV, int T, int tid)
{
    ckt_fmha_page_table_copy(sk, kbase, tab, cols_k, R, CK, T, tid);
    ckt_fmha_page_table_copy(sv, vbase, tab + R, cols_v, R, CV, T, tid);
}

/* The key tile at n0 when pages hold whole tiles (page size a multiple of
 * the tile): its page's id (-1 past kv->sk), and the window of the tile in
 * a view of that page's rows that hold keys (no rows for a bad id), which
 * the contiguous tile loaders (ckt_smem_tile_load_async) read: whole tiles
 * take their unguarded path, the rest read zeros past the keys. */
CKT_INLINE CKT_DEVICE int32_t ckt_fmha_page_tile_id(const ckt_fmha_kv *kv, int page_size, int n0)
{
    return n0 < kv->sk ? kv->ids[n0 / page_size] : -1;
}

CKT_INLINE CKT_DEVICE ckt_window2d ckt_fmha_page_tile_window(const uint16_t *base, int32_t id, const ckt_fmha_kv *kv,
                                                            int page_size, int num_pages, int64_t page_stride,
                                                            int64_t row_stride, int n0, int cols)
{
    const int first = n0 / page_size * page_size;
    const int ok = id >= 0 && id < num_pages;
    const int rows = !ok ? 0 : kv->sk - first < page_size ? kv->sk - first : page_size;
    return ckt_window2d_make(ckt_view2d_make((void *)(base + (ok ? (int64_t)id * page_stride : 0)), rows, cols,
                                             row_stride),
                             n0 - first, 0);
}

/* Issues the asynchronous copies of key rows n0 .. n0 + R of a paged pool
 * (any page size; for pages that hold whole tiles the contiguous loader
 * over ckt_fmha_page_tile_window is faster) into the shared tiles sk (R x CK, the K pool at kbase) and sv (R x CV,
 * the V pool at vbase), by T threads (this one: tid), like
 * ckt_smem_tile_load_async: rows past kv->sk, columns past cols_k / cols_v
 * and rows on a bad page id become zeros. The bases are the pools at this
 * head (k + hk * k_stride_h); a page is *_page_stride elements, a row in it
 * *_row_stride. Needs whole 16-byte vectors a row (C a multiple of 8); when
 * T is not a multiple of C / 8 the last T % (C / 8) threads copy nothing.
 * V's walk loads the same ids as K's (L1 hits). */
CKT_INLINE CKT_DEVICE void ckt_fmha_page_load_kv_async(ckt_smem_tile sk, ckt_smem_tile sv, const uint16_t *kbase,
                                                       const uint16_t *vbase, const ckt_fmha_kv *kv, int page_size,
                                                       int num_pages, int64_t k_page_stride, int64_t k_row_stride,
                                                       int64_t v_page_stride, int64_t v_row_stride, int n0,
                                                       int cols_k, int cols_v, int R, int CK, int CV, int T, int tid)
{
    ckt__fmha_page_copy(sk, kbase, kv, page_size, num_pages, k_page_stride, k_row_stride, n0, cols_k, R, CK, T, tid);
    ckt__fmha_page_copy(sv, vbase, kv, page_size, num_pages, v_page_stride, v_row_stride, n0, cols_v, R, CV, T, tid);
}

#endif /* CKT_FMHA_PAGE_H */
