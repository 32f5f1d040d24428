/* ckt/fmha/seqlen.h — where a batch entry's rows are and how long it is
 * (batch or group mode, padding), and the GQA head map: the one place every
 * FMHA kernel resolves them.
 *
 *   ckt_fmha_seq s = ckt_fmha_seq_resolve(a.group_mode, a.seqstart_q, a.seqstart_k,
 *                                         a.seqlen_q_ptr, a.seqlen_k_ptr, a.seqlen_q, a.seqlen_k, b);
 *   // Q[b][h][i][:] at q + ckt_fmha_row_offset(a.group_mode, b, h, s.q_start + i, sb, sh, ss)
 *
 * Batch mode: every entry has seqlen_q / seqlen_k rows starting at 0 (rows
 * are addressed with stride_b); the forward's KV cache may give each entry
 * its own key count, seqlen_k_ptr[b]. Group mode: entry b's rows are
 * seqstart[b] .. seqstart[b+1] - 1 of one packed sequence (no stride_b), its
 * logical length seqlen_*_ptr[b] when given (the rest is padding), else the
 * physical one; a paged cache has no seqstart_k (its keys: seqlen_k_ptr[b]
 * or seqlen_k, then ckt/fmha/page.h). Host and device alike.
 */
#ifndef CKT_FMHA_SEQLEN_H
#define CKT_FMHA_SEQLEN_H

#include "ckt/arch/config.h"

#include <stdint.h>

typedef struct ckt_fmha_seq {
    int64_t q_start, k_start; /* first row of the entry (group mode; 0 in batch mode) */
    int sq, sk;               /* logical lengths */
} ckt_fmha_seq;

CKT_INLINE CKT_HOST_DEVICE ckt_fmha_seq ckt_fmha_seq_resolve(int group_mode, const int32_t *seqstart_q,
                                                             const int32_t *seqstart_k,
                                                             const int32_t *seqlen_q_ptr,
                                                             const int32_t *seqlen_k_ptr, int seqlen_q,
                                                             int seqlen_k, int b)
{
    ckt_fmha_seq s;
    if (group_mode) {
        s.q_start = seqstart_q[b];
        s.sq = seqlen_q_ptr ? seqlen_q_ptr[b] : seqstart_q[b + 1] - seqstart_q[b];
    } else {
        s.q_start = 0;
        s.sq = seqlen_q;
    }
    /* keys: packed rows in group mode; else (batch mode, or a paged cache,
     * which has no seqstart_k) seqlen_k_ptr[b] or seqlen_k */
    s.k_start = group_mode && seqstart_k ? seqstart_k[b] : 0;
    s.sk = seqlen_k_ptr ? seqlen_k_ptr[b] : group_mode && seqstart_k ? seqstart_k[b + 1] - seqstart_k[b] : seqlen_k;
    return s;
}

/* The kv head of query head h (GQA / MQA: nhead_q / nhead_k query heads share one). */
CKT_INLINE CKT_HOST_DEVICE int ckt_fmha_kv_head(int h, int nhead_q, int nhead_k)
{
    return h / (nhead_q / nhead_k);
}

/* Element offset of row `row` (entry-relative start already added in group
 * mode) of head h of entry b in a tensor with strides (sb, sh, ss); the batch
 * stride is not used in group mode. */
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_fmha_row_offset(int group_mode, int b, int h, int64_t row, int64_t sb,
                                                       int64_t sh, int64_t ss)
{
    return (group_mode ? 0 : (int64_t)b * sb) + (int64_t)h * sh + row * ss;
}

#endif /* CKT_FMHA_SEQLEN_H */
