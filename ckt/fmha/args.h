/* ckt/fmha/args.h — the arguments of the FMHA forward kernels, shared by the
 * instance launchers (NAME_launch), the dispatcher (ckt_fmha_fwd) and the CPU
 * reference (ckt_ref_fmha_fwd).
 *
 *   O[b][h][i][:] = softmax_j( mask( cap * tanh(scale * Q[b][h][i] . K[b][h/g][j] / cap) ) ) . V[b][h/g][j][:]
 *   LSE[b][h][i]  = log sum_j exp(masked logits)          (natural log, fp32)
 *
 * with g = nhead_q / nhead_k (GQA / MQA) and the soft-cap applied only when
 * softcap > 0. A row whose keys are all masked gives O = 0, LSE = -inf.
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
 */
#ifndef CKT_FMHA_ARGS_H
#define CKT_FMHA_ARGS_H

#include "ckt/host/dtype.h"

#include <stdint.h>

typedef enum ckt_fmha_mask {
    CKT_MASK_NONE = 0,
    CKT_MASK_CAUSAL_TOP_LEFT = 1,
    CKT_MASK_CAUSAL_BOTTOM_RIGHT = 2,
    CKT_MASK_WINDOW_TOP_LEFT = 3,     /* window_left / window_right */
    CKT_MASK_WINDOW_BOTTOM_RIGHT = 4  /* window_left / window_right */
} ckt_fmha_mask;

typedef struct ckt_fmha_fwd_args {
    ckt_dtype dtype; /* CKT_F16 or CKT_BF16: q, k, v, o */
    const void *q, *k, *v;
    void *o;
    float *lse; /* optional */

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
} ckt_fmha_fwd_args;

/* The window bounds a mask implies (left, right; -1 = unlimited) and whether
 * it is aligned bottom-right. */
static inline void ckt_fmha_mask_window(const ckt_fmha_fwd_args *a, int *left, int *right,
                                        int *bottom_right)
{
    switch (a->mask) {
    case CKT_MASK_CAUSAL_TOP_LEFT: *left = -1; *right = 0; *bottom_right = 0; break;
    case CKT_MASK_CAUSAL_BOTTOM_RIGHT: *left = -1; *right = 0; *bottom_right = 1; break;
    case CKT_MASK_WINDOW_TOP_LEFT: *left = a->window_left; *right = a->window_right; *bottom_right = 0; break;
    case CKT_MASK_WINDOW_BOTTOM_RIGHT: *left = a->window_left; *right = a->window_right; *bottom_right = 1; break;
    default: *left = -1; *right = -1; *bottom_right = 0; break;
    }
}

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
