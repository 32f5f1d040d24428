/* ckt/fmha/page.h — where the keys of a batch entry live in a KV cache:
 * contiguous (optionally through cache_batch_idx) or in a pool of pages
 * found through a vLLM block table or sglang's indptr / indices / last
 * page length (ckt/fmha/args.h, the inference fields). The one place every
 * FMHA kernel and the CPU reference turn (entry, key row) into an address.
 *
 *   const ckt_fmha_paging pg = CKT_FMHA_PAGING(a);          // the args' paging fields
 *   const ckt_fmha_kv kv = ckt_fmha_kv_resolve(&pg, s.sk, b);  // s: ckt/fmha/seqlen.h
 *   int64_t off = ckt_fmha_kv_row(&kv, pg.page_size, pg.num_pages, k_stride_b, k_stride_s, j);
 *   // K[b][hk][j][:] at k + hk * k_stride_h + off (off < 0: a bad page id)
 *
 * A paged pool's page stride is the tensor's stride_b, its position-in-page
 * stride stride_s; every offset is 64-bit (pools past 4 GB). On the device
 * the key tiles load with ckt_fmha_page_load_async, a gather of whole
 * 16-byte vectors per key row. Host and device alike, except the loader.
 */
#ifndef CKT_FMHA_PAGE_H
#define CKT_FMHA_PAGE_H

#include "ckt/arch/config.h"
#include "ckt/tile/mma.h"

#include <stdint.h>

/* The paging fields of an argument struct, copied (kernels keep them in
 * registers; taking the address of a kernel parameter would copy it whole). */
typedef struct ckt_fmha_paging {
    int page_size, num_pages; /* page_size 0: contiguous */
    const int32_t *block_table;
    int max_pages_per_seq;
    const int32_t *kv_indptr, *kv_indices, *kv_last_page_len;
    const int32_t *cache_batch_idx;
} ckt_fmha_paging;

#define CKT_FMHA_PAGING(a)                                                                        \
    ckt_fmha_paging_make((a).page_size, (a).num_pages, (a).block_table, (a).max_pages_per_seq,     \
                         (a).kv_indptr, (a).kv_indices, (a).kv_last_page_len, (a).cache_batch_idx)

CKT_INLINE CKT_HOST_DEVICE ckt_fmha_paging ckt_fmha_paging_make(int page_size, int num_pages,
                                                                 const int32_t *block_table, int max_pages,
                                                                 const int32_t *kv_indptr, const int32_t *kv_indices,
                                                                 const int32_t *kv_last_page_len,
                                                                 const int32_t *cache_batch_idx)
{
    ckt_fmha_paging p;
    p.page_size = page_size;
    p.num_pages = num_pages;
    p.block_table = block_table;
    p.max_pages_per_seq = max_pages;
    p.kv_indptr = kv_indptr;
    p.kv_indices = kv_indices;
    p.kv_last_page_len = kv_last_page_len;
    p.cache_batch_idx = cache_batch_idx;
    return p;
}

/* The keys of one entry: sk of them; contiguous (ids NULL) in cache entry
 * cb, or paged through ids[0 .. npages). */
typedef struct ckt_fmha_kv {
    const int32_t *ids;
    int npages;
    int sk;
    int cb;
} ckt_fmha_kv;

/* Entry b's keys; sk: its length from ckt_fmha_seq_resolve (seqlen_k_ptr[b]
 * or seqlen_k; used by the contiguous and vLLM styles, bounded by the
 * table's row). */
CKT_INLINE CKT_HOST_DEVICE ckt_fmha_kv ckt_fmha_kv_resolve(const ckt_fmha_paging *p, int sk, int b)
{
    ckt_fmha_kv kv;
    kv.cb = p->cache_batch_idx ? p->cache_batch_idx[b] : b;
    kv.ids = 0;
    kv.npages = 0;
    kv.sk = sk;
    if (p->page_size <= 0)
        return kv;
    if (p->kv_indptr) { /* sglang */
        const int32_t first = p->kv_indptr[b];
        kv.ids = p->kv_indices + first;
        kv.npages = p->kv_indptr[b + 1] - first;
        kv.sk = kv.npages > 0 ? (kv.npages - 1) * p->page_size + p->kv_last_page_len[b] : 0;
    } else { /* vLLM */
        kv.ids = p->block_table + (int64_t)kv.cb * p->max_pages_per_seq;
        kv.npages = p->max_pages_per_seq;
    }
    if (kv.npages < 0)
        kv.npages = 0;
    const int64_t cap = (int64_t)kv.npages * p->page_size;
    if ((int64_t)kv.sk > cap)
        kv.sk = (int)cap;
    if (kv.sk < 0)
        kv.sk = 0;
    return kv;
}

/* Element offset of key row j (0 <= j < kv.sk) of the entry's head 0 in a
 * tensor of strides (stride_b, stride_s): the page's (paged: stride_b is the
 * page stride) or the cache entry's; -1 for a page id outside [0, num_pages). */
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_fmha_kv_row(const ckt_fmha_kv *kv, int page_size, int num_pages,
                                                   int64_t stride_b, int64_t stride_s, int64_t j)
{
    if (!kv->ids)
        return (int64_t)kv->cb * stride_b + j * stride_s;
    const int64_t p = j / page_size;
    const int32_t id = kv->ids[p];
    if (id < 0 || id >= num_pages)
        return -1;
    return (int64_t)id * stride_b + (j - p * page_size) * stride_s;
}


/* Issues the asynchronous copy of key rows n0 .. n0 + R of a paged pool
 * into the shared tile s (R x C 16-bit elements), by T threads (this one:
 * tid), like ckt_smem_tile_load_async: rows past sk, columns past cols
 * and rows on a bad page id become zeros. base: the pool at this head
 * (k + hk * k_stride_h); a page is page_stride elements, a row in it
 * row_stride. Each thread keeps its page and position across its rows, so
 * there is one division per call. Needs T a multiple of C / 8. */
CKT_INLINE CKT_DEVICE void ckt_fmha_page_load_async(ckt_smem_tile s, const uint16_t *base, const ckt_fmha_kv *kv,
                                                    int page_size, int num_pages, int64_t page_stride,
                                                    int64_t row_stride, int n0, int cols, int R, int C, int T,
                                                    int tid)
{
    const int vpr = C / 8, r0 = tid / vpr, c = (tid % vpr) * 8, rstep = T / vpr;
    const unsigned bytes = c < cols ? 16u : 0u; /* cols is a multiple of 8 */
    if (page_size % R == 0 && n0 % R == 0) {
        /* the tile lies in one page (pages of a multiple of the tile's rows):
         * one page id for the block, then rows at a constant stride */
        const int p = n0 / page_size;
        const int32_t id = n0 < kv->sk ? kv->ids[p] : -1;
        const int ok = id >= 0 && id < num_pages;
        const uint16_t *g = base + (ok ? (int64_t)id * page_stride + (int64_t)(n0 - p * page_size + r0) * row_stride + c : 0);
        CKT_UNROLL
        for (int i = 0; i < CKT_CEIL_DIV(R, rstep); i++) {
            if (R % rstep != 0 && r0 + i * rstep >= R)
                break;
            const unsigned n = ok && n0 + r0 + i * rstep < kv->sk ? bytes : 0u;
            ckt_cp_async_16(ckt_smem_tile_ptr(s, r0 + i * rstep, c), g + (n ? (int64_t)i * rstep * row_stride : 0), n);
        }
        return;
    }
    int j = n0 + r0;
    int p = j / page_size, o = j - p * page_size;
    int32_t id = j < kv->sk ? kv->ids[p] : -1; /* reloaded only when the rows cross a page */
    CKT_UNROLL
    for (int i = 0; i < CKT_CEIL_DIV(R, rstep); i++) {
        if (R % rstep != 0 && r0 + i * rstep >= R)
            break;
        const unsigned n = j < kv->sk && id >= 0 && id < num_pages ? bytes : 0u;
        const uint16_t *g = base + (n ? (int64_t)id * page_stride + (int64_t)o * row_stride + c : 0);
        ckt_cp_async_16(ckt_smem_tile_ptr(s, r0 + i * rstep, c), g, n);
        j += rstep;
        o += rstep;
        if (o >= page_size) {
            do { /* once for pages of >= rstep rows */
                o -= page_size;
                p++;
            } while (o >= page_size);
            id = j < kv->sk ? kv->ids[p] : -1;
        }
    }
}

#endif /* CKT_FMHA_PAGE_H */
