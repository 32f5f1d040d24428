/* ckt/fmha/kv.h — where the keys of a batch entry live in a KV cache:
 * contiguous (optionally through cache_batch_idx) or in a pool of pages
 * found through a vLLM block table or sglang's indptr / indices / last
 * page length (ckt/fmha/args.h, the inference fields). The one place the
 * kernels, the CPU references and the host's validation turn (entry, key
 * row) into an address and an append into its rows. Host and device alike;
 * the device's tile loaders over pages are ckt/fmha/page.h.
 *
 *   const ckt_fmha_paging pg = CKT_FMHA_PAGING(a);          // the args' paging fields
 *   const ckt_fmha_kv kv = ckt_fmha_kv_resolve(&pg, s.sk, b);  // s: ckt/fmha/seqlen.h
 *   int64_t off = ckt_fmha_kv_row(&kv, pg.page_size, pg.num_pages, k_stride_b, k_stride_s, j);
 *   // K[b][hk][j][:] at k + hk * k_stride_h + off (off < 0: a bad page id)
 *
 * A paged pool's page stride is the tensor's stride_b, its position-in-page
 * stride stride_s; every offset is 64-bit (pools past 4 GB).
 */
#ifndef CKT_FMHA_KV_H
#define CKT_FMHA_KV_H

#include "ckt/arch/config.h"

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

/* Entry b's keys in sglang-style tables: (its pages - 1) x page_size +
 * its last page's rows, 0 without pages; 64-bit (the host's checks compare
 * it unclamped, ckt_fmha_kv_resolve bounds it). */
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_fmha_sglang_keys(const ckt_fmha_paging *p, int b)
{
    const int32_t n = p->kv_indptr[b + 1] - p->kv_indptr[b];
    return n > 0 ? (int64_t)(n - 1) * p->page_size + p->kv_last_page_len[b] : 0;
}

/* Entry b's keys; sk: its length from ckt_fmha_seq_resolve (seqlen_k_ptr[b]
 * or seqlen_k; used by the contiguous and vLLM styles); bounded by the
 * table's pages and by 2^31 - 1. */
CKT_INLINE CKT_HOST_DEVICE ckt_fmha_kv ckt_fmha_kv_resolve(const ckt_fmha_paging *p, int sk, int b)
{
    ckt_fmha_kv kv;
    kv.cb = p->cache_batch_idx ? p->cache_batch_idx[b] : b;
    kv.ids = 0;
    kv.npages = 0;
    kv.sk = sk;
    if (p->page_size <= 0)
        return kv;
    int64_t keys = sk;
    if (p->kv_indptr) { /* sglang */
        const int32_t first = p->kv_indptr[b];
        kv.ids = p->kv_indices + first;
        kv.npages = p->kv_indptr[b + 1] - first;
        keys = ckt_fmha_sglang_keys(p, b);
    } else { /* vLLM */
        kv.ids = p->block_table + (int64_t)kv.cb * p->max_pages_per_seq;
        kv.npages = p->max_pages_per_seq;
    }
    if (kv.npages < 0)
        kv.npages = 0;
    const int64_t cap = (int64_t)kv.npages * p->page_size;
    keys = keys > cap ? cap : keys < 0 ? 0 : keys;
    kv.sk = keys < 0x7fffffff ? (int)keys : 0x7fffffff;
    return kv;
}

/* A cache entry's rows for a writer (append-KV): contiguous entry cb (block
 * table NULL), or the row cb of a vLLM block table; capacity rows. */
CKT_INLINE CKT_HOST_DEVICE ckt_fmha_kv ckt_fmha_cache_entry(const int32_t *block_table, int max_pages, int cb,
                                                            int capacity)
{
    ckt_fmha_kv kv;
    kv.cb = cb;
    kv.ids = block_table ? block_table + (int64_t)cb * max_pages : 0;
    kv.npages = block_table ? max_pages : 0;
    kv.sk = capacity;
    return kv;
}

/* Rows a cache entry of a writer (append-KV) holds, unless sglang tables
 * give them: cache_seqlen, or with a paged cache max_pages_per_seq x
 * page_size; at most 2^31 - 1 (a key count is an int). */
CKT_INLINE CKT_HOST_DEVICE int ckt_fmha_append_capacity(const ckt_fmha_paging *p, int cache_seqlen)
{
    const int64_t cap = p->page_size > 0 ? (int64_t)p->max_pages_per_seq * p->page_size : (int64_t)cache_seqlen;
    return cap < 0 ? 0 : cap < 0x7fffffff ? (int)cap : 0x7fffffff;
}

/* The rows entry b of an append writes (append-KV; p: its arguments'
 * paging fields, CKT_FMHA_PAGING; cache_batch: the rows of its cache or
 * block table): kv.sk is how many rows it may hold (the contiguous entry's
 * cache_seqlen, a block-table row's pages x page_size, or the keys
 * sglang-style tables give, which count the new tokens; 0 for a cache row
 * outside [0, cache_batch): nothing may be written) and *first the row of
 * its first new token: len (its current length, from seqlen_k_ptr or
 * seqlen_k), or with sglang tables kv.sk - s_knew (negative when the tables
 * hold fewer keys than the append brings: nothing may be written then).
 * The kernel, the CPU reference and the host's checks all take it. */
CKT_INLINE CKT_HOST_DEVICE ckt_fmha_kv ckt_fmha_kv_append(const ckt_fmha_paging *p, int64_t len, int s_knew,
                                                         int cache_seqlen, int cache_batch, int b, int64_t *first)
{
    if (p->page_size > 0 && p->kv_indptr) {
        const ckt_fmha_kv kv = ckt_fmha_kv_resolve(p, 0, b);
        *first = (int64_t)kv.sk - s_knew;
        return kv;
    }
    *first = len;
    const int cb = p->cache_batch_idx ? p->cache_batch_idx[b] : b;
    ckt_fmha_kv kv = ckt_fmha_cache_entry(p->page_size > 0 ? p->block_table : 0, p->max_pages_per_seq, cb,
                                          ckt_fmha_append_capacity(p, cache_seqlen));
    if (cb < 0 || cb >= cache_batch)
        kv.sk = 0; /* a bad device index: skipped (the host checks it where it can read it) */
    return kv;
}

/* Element offset of row o of page id in a pool of num_pages pages (strides:
 * page, row in the page); -1 for an id outside [0, num_pages). */
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_fmha_page_offset(int32_t id, int64_t o, int num_pages, int64_t page_stride,
                                                        int64_t row_stride)
{
    return id >= 0 && id < num_pages ? (int64_t)id * page_stride + o * row_stride : -1;
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
    return ckt_fmha_page_offset(kv->ids[p], j - p * page_size, num_pages, stride_b, stride_s);
}

#endif /* CKT_FMHA_KV_H */
