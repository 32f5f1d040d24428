/* ckt/fmha/appendkv_fwd.h — attention over the KV cache an append filled:
 * the forward's arguments (ckt_fmha_fwd_args, group mode) that read the cache
 * of a ckt_fmha_appendkv_args in place. The second call of the two-call
 * recipe (docs/fmha_appendkv.md):
 *
 *   ckt_fmha_appendkv(&a, stream);
 *   ckt_fmha_fwd_args f;
 *   int32_t sq[B + 1], sk[B + 1], lq[B], lk[B];        // host arrays it fills
 *   ckt_fmha_appendkv_fwd_args(&f, sq, sk, lq, lk, &a, len_host, cbi_host, seqstart_q_host);
 *   // copy sq, sk, lq, lk to the device: f.seqstart_q, f.seqstart_k, f.seqlen_q_ptr, f.seqlen_k_ptr;
 *   f.o = o;  f.mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;   // and the o strides if not like q's
 *   ckt_fmha_fwd(&f, stream);
 *
 * How: the forward's group mode addresses row j of entry b at
 * h * stride_h + (seqstart[b] + j) * stride_s, the cache at
 * cb * stride_b + h * stride_h + pos * stride_s; they agree when
 * seqstart_k[b] = cb * (stride_b / stride_s), which needs stride_b to be a
 * multiple of stride_s ([b][s][h][d] and [b][h][s][d] caches both are) and
 * the rows to increase with b (seqstart never decreases): cache_batch_idx,
 * when given, must then be increasing. Entry b sees len_b + s_knew keys
 * (seqlen_k_ptr). The queries likewise: batch-mode q as rows
 * b * (q_stride_b / q_stride_s) onwards, group-mode q through its own
 * seqstart_q; seqlen_q_ptr = the entry's queries. O gets q's strides scaled
 * to hdim_v (o like q); set them after the call for another layout.
 *
 * len_host, cbi_host, seqstart_q_host: host copies of a's seqlen_k_ptr,
 * cache_batch_idx, seqstart_q (NULL where a has none). Statuses name the
 * argument that prevents the view.
 */
#ifndef CKT_FMHA_APPENDKV_FWD_H
#define CKT_FMHA_APPENDKV_FWD_H

#include "ckt/fmha/args.h"
#include "ckt/fmha/validate.h"
#include "ckt/host/status.h"

#include <stdint.h>
#include <string.h>

static inline ckt_status ckt_fmha_appendkv_fwd_args(ckt_fmha_fwd_args *f, int32_t *seqstart_q, int32_t *seqstart_k,
                                                    int32_t *seqlen_q, int32_t *seqlen_k,
                                                    const ckt_fmha_appendkv_args *a, const int32_t *len_host,
                                                    const int32_t *cbi_host, const int32_t *seqstart_q_host)
{
    if (!f || !a || !seqstart_q || !seqstart_k || !seqlen_q || !seqlen_k)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_fmha_appendkv_fwd_args: %s is NULL",
                         !f ? "f" : !a ? "a" : "an output array");
    if (a->seqlen_k_ptr && !len_host)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "len_host: NULL, but the append has seqlen_k_ptr");
    if (a->cache_batch_idx && !cbi_host)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "cbi_host: NULL, but the append has cache_batch_idx");
    if (a->group_mode && !seqstart_q_host)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "seqstart_q_host: NULL, but the append is in group mode");
    if (a->batch < 1)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "batch: %d (the view needs an entry)", a->batch);
    /* rows per cache entry in the packed view */
    if (a->k_stride_s <= 0 || a->k_stride_b % a->k_stride_s != 0)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "k_stride_b: %lld is not a multiple of k_stride_s %lld",
                         (long long)a->k_stride_b, (long long)a->k_stride_s);
    const int64_t rows_k = a->k_stride_b / a->k_stride_s;
    if (a->v_stride_s <= 0 || a->v_stride_b != rows_k * a->v_stride_s)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "v_stride_b: %lld is not %lld rows of v_stride_s %lld, like k's",
                         (long long)a->v_stride_b, (long long)rows_k, (long long)a->v_stride_s);
    int64_t rows_q = 0;
    if (!a->group_mode) {
        if (a->q_stride_s <= 0 || a->q_stride_b % a->q_stride_s != 0)
            return ckt__fail(CKT_ERROR_UNSUPPORTED, "q_stride_b: %lld is not a multiple of q_stride_s %lld",
                             (long long)a->q_stride_b, (long long)a->q_stride_s);
        rows_q = a->q_stride_b / a->q_stride_s;
    }
    memset(f, 0, sizeof *f);
    f->q = a->q;
    f->k = a->k_cache;
    f->v = a->v_cache;
    f->dtype = a->dtype;
    f->batch = a->batch, f->nhead_q = a->nhead_q, f->nhead_k = a->nhead_k;
    f->hdim_q = a->hdim_q, f->hdim_v = a->hdim_v;
    f->group_mode = 1;
    f->q_stride_h = a->q_stride_h, f->q_stride_s = a->q_stride_s;
    f->k_stride_h = a->k_stride_h, f->k_stride_s = a->k_stride_s;
    f->v_stride_h = a->v_stride_h, f->v_stride_s = a->v_stride_s;
    f->o_stride_h = a->q_stride_h / a->hdim_q * a->hdim_v;
    f->o_stride_s = a->q_stride_s / a->hdim_q * a->hdim_v;
    for (int b = 0; b < a->batch; b++) {
        const int64_t cb = cbi_host ? cbi_host[b] : b;
        if (b > 0 && cb * rows_k < (int64_t)seqstart_k[b - 1] + rows_k)
            return ckt__fail(CKT_ERROR_UNSUPPORTED,
                             "cache_batch_idx: [%d] = %lld after %lld: the forward's view needs increasing rows", b,
                             (long long)cb, (long long)cbi_host[b - 1]);
        if ((cb + 1) * rows_k > INT32_MAX)
            return ckt__fail(CKT_ERROR_UNSUPPORTED, "k_stride_b: cache rows past int32 in the packed view");
        seqstart_k[b] = (int32_t)(cb * rows_k);
        seqlen_k[b] = (a->seqlen_k_ptr ? len_host[b] : a->seqlen_k) + a->seqlen_knew;
        if (a->group_mode) {
            seqstart_q[b] = seqstart_q_host[b];
            seqlen_q[b] = seqstart_q_host[b + 1] - seqstart_q_host[b];
        } else {
            if ((b + 1) * rows_q > INT32_MAX)
                return ckt__fail(CKT_ERROR_UNSUPPORTED, "q_stride_b: query rows past int32 in the packed view");
            seqstart_q[b] = (int32_t)(b * rows_q);
            seqlen_q[b] = a->seqlen_q;
        }
        f->seqlen_q = seqlen_q[b] > f->seqlen_q ? seqlen_q[b] : f->seqlen_q;
        f->seqlen_k = seqlen_k[b] > f->seqlen_k ? seqlen_k[b] : f->seqlen_k;
    }
    seqstart_k[a->batch] = seqstart_k[a->batch - 1] + (int32_t)rows_k;
    seqstart_q[a->batch] = a->group_mode ? seqstart_q_host[a->batch] : (int32_t)(a->batch * rows_q);
    return CKT_SUCCESS;
}

#endif /* CKT_FMHA_APPENDKV_FWD_H */
