/* ckt/fmha/ref_appendkv.h — CPU reference of the append-KV kernel
 * (ckt_fmha_appendkv_args, ckt/fmha/appendkv_body.h): rotate and append on
 * host copies, element by element through ckt/fmha/rope.h.
 *
 *   ckt_fmha_appendkv_args h = args;          // the kernel's arguments with HOST copies of
 *   h.q = hq; h.k_new = hkn; h.v_new = hvn;   //   every tensor, table and int32 array
 *   h.k_cache = hkc; h.v_cache = hvc; h.rotary_cos = hcos; ...
 *   ckt_ref_fmha_appendkv(&h);                // hkc / hvc appended, hq rotated, like the kernel
 *
 * then attention over the updated cache is ckt_ref_fmha_fwd (ckt/fmha/ref.h)
 * on a forward host view of it (docs/fmha_appendkv.md, the two-call recipe).
 *
 * The reference rounds each rotated element to the data type once, as the
 * kernel does (fp32 math; the kernel may contract a * c - b * s into an FMA,
 * so compare rotated values with a tolerance of one rounding); pairs the
 * rotation leaves alone, and V, are copied bit for bit.
 */
#ifndef CKT_FMHA_REF_APPENDKV_H
#define CKT_FMHA_REF_APPENDKV_H

#include "ckt/fmha/args.h"
#include "ckt/fmha/kv.h"
#include "ckt/fmha/rope.h"
#include "ckt/fmha/seqlen.h"
#include "ckt/fmha/validate.h"
#include "ckt/host/dtype.h"
#include "ckt/host/status.h"

#include <stdint.h>

/* One row of d elements at position pos: dst = rope(src) (rotary_dim 0: a copy). */
static inline void ckt__ref_fmha_rope_row(uint16_t *dst, const uint16_t *src, int d, int64_t pos, int rotary_dim,
                                          int interleaved, const float *cos_tab, const float *sin_tab, ckt_dtype dt)
{
    for (int u = 0; u < d / 2; u++) {
        int e0, e1;
        ckt_fmha_rope_pair(&e0, &e1, u, rotary_dim, interleaved);
        if (u >= rotary_dim / 2) {
            const uint16_t b0 = src[e0], b1 = src[e1];
            dst[e0] = b0;
            dst[e1] = b1;
            continue;
        }
        float x0 = ckt_load_f32(src, dt, (size_t)e0), x1 = ckt_load_f32(src, dt, (size_t)e1);
        const int64_t row = ckt_fmha_rope_row(pos, rotary_dim);
        ckt_fmha_rope_rotate(&x0, &x1, cos_tab[row + u], sin_tab[row + u]);
        ckt_store_f32(dst, dt, (size_t)e0, x0);
        ckt_store_f32(dst, dt, (size_t)e1, x1);
    }
}

/* Appends (and rotates) on the host view h: writes h->k_cache, h->v_cache
 * and rotates h->q in place. Checks h as the kernel's launcher would (and
 * its arrays, which are host memory here) first. */
static inline ckt_status ckt_ref_fmha_appendkv(const ckt_fmha_appendkv_args *h)
{
    CKT__FMHA_TRY(ckt_fmha_appendkv_validate(h, h ? h->dtype : CKT_F16));
    CKT__FMHA_TRY(ckt_fmha_appendkv_check_arrays(h));
    if (ckt_fmha_appendkv_is_empty(h))
        return CKT_SUCCESS;
    const int rd = h->rotary_dim;
    for (int b = 0; b < h->batch; b++) {
        /* the entry's cache rows (contiguous or paged) and its current length (ckt/fmha/kv.h) */
        const ckt_fmha_paging pg = CKT_FMHA_PAGING(*h);
        int64_t len;
        const ckt_fmha_kv kv = ckt_fmha_kv_append(&pg, h->seqlen_k_ptr ? h->seqlen_k_ptr[b] : h->seqlen_k,
                                                  h->seqlen_knew, h->cache_seqlen,
                                                  h->cache_batch > 0 ? h->cache_batch : h->batch, b, &len);
        for (int hk = 0; hk < h->nhead_k; hk++)
            for (int t = 0; t < h->seqlen_knew; t++) {
                const int64_t pos = len + t;
                const int64_t ko = ckt_fmha_kv_row(&kv, h->page_size, h->num_pages, h->k_stride_b, h->k_stride_s, pos);
                const int64_t vo = ckt_fmha_kv_row(&kv, h->page_size, h->num_pages, h->v_stride_b, h->v_stride_s, pos);
                ckt__ref_fmha_rope_row(
                    (uint16_t *)h->k_cache + hk * h->k_stride_h + ko,
                    (const uint16_t *)h->k_new + ckt_fmha_row_offset(0, b, hk, t, h->knew_stride_b, h->knew_stride_h, h->knew_stride_s),
                    h->hdim_q, pos, rd, h->rotary_interleaved, h->rotary_cos, h->rotary_sin, h->dtype);
                ckt__ref_fmha_rope_row(
                    (uint16_t *)h->v_cache + hk * h->v_stride_h + vo,
                    (const uint16_t *)h->v_new + ckt_fmha_row_offset(0, b, hk, t, h->vnew_stride_b, h->vnew_stride_h, h->vnew_stride_s),
                    h->hdim_v, pos, 0, 0, NULL, NULL, h->dtype);
            }
        if (!ckt_fmha_appendkv_rotates_q(h))
            continue;
        const ckt_fmha_seq s = ckt_fmha_seq_resolve(h->group_mode, h->seqstart_q, h->seqstart_q, NULL, NULL,
                                                    h->seqlen_q, h->seqlen_q, b);
        for (int hq = 0; hq < h->nhead_q; hq++)
            for (int i = 0; i < s.sq; i++) {
                uint16_t *qr = (uint16_t *)h->q + ckt_fmha_row_offset(h->group_mode, b, hq, s.q_start + i, h->q_stride_b,
                                                                      h->q_stride_h, h->q_stride_s);
                ckt__ref_fmha_rope_row(qr, qr, h->hdim_q, len + i, rd, h->rotary_interleaved, h->rotary_cos,
                                       h->rotary_sin, h->dtype);
            }
    }
    return CKT_SUCCESS;
}

#endif /* CKT_FMHA_REF_APPENDKV_H */
