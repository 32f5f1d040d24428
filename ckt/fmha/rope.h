/* ckt/fmha/rope.h — rotary position embedding (RoPE): which elements of a
 * head's row rotate together, and the rotation. Host and device alike: the
 * append-KV kernel (ckt/fmha/appendkv_body.h) and its CPU reference
 * (ckt/fmha/ref_appendkv.h) both go through it.
 *
 *   int e0, e1;
 *   for (int u = 0; u < d / 2; u++) {               // the row's d / 2 pairs
 *       ckt_fmha_rope_pair(&e0, &e1, u, rotary_dim, interleaved);
 *       float x0 = x[e0], x1 = x[e1];
 *       if (u < rotary_dim / 2)                     // pair u turns by angle theta[pos][u]
 *           ckt_fmha_rope_rotate(&x0, &x1, cos_tab[pos * (rotary_dim / 2) + u],
 *                                sin_tab[pos * (rotary_dim / 2) + u]);
 *       y[e0] = x0; y[e1] = x1;
 *   }
 *
 * The math (FlashAttention's apply_rotary_emb, CK's rotary in appendkv): the
 * first rotary_dim elements of a row at position pos form rotary_dim / 2
 * pairs; pair u turns by the angle whose cos / sin are cos[pos][u] /
 * sin[pos][u] (tables [max_pos][rotary_dim / 2], the caller's choice of
 * frequencies, e.g. theta_u = pos * base^(-2u / rotary_dim)):
 *   y[e0] = x[e0] cos - x[e1] sin
 *   y[e1] = x[e1] cos + x[e0] sin
 * Pairs:
 *   interleaved (GPT-J):    e0 = 2u,  e1 = 2u + 1
 *   half-split (GPT-NeoX):  e0 = u,   e1 = u + rotary_dim / 2
 * Elements rotary_dim .. d - 1 pass unchanged; ckt_fmha_rope_pair numbers
 * them as pairs too (u >= rotary_dim / 2: two neighbours), so one loop over
 * d / 2 pairs covers a row. rotary_dim = 0: no rotation, every pair passes.
 * rotary_dim must be even and <= d (d even).
 */
#ifndef CKT_FMHA_ROPE_H
#define CKT_FMHA_ROPE_H

#include "ckt/arch/config.h"

/* The two elements (*e0, *e1) of pair u (0 <= u < d / 2) of a row. */
CKT_INLINE CKT_HOST_DEVICE void ckt_fmha_rope_pair(int *e0, int *e1, int u, int rotary_dim, int interleaved)
{
    const int half = rotary_dim / 2;
    if (u >= half) { /* past the rotary part: elements rotary_dim + 2 (u - half), + 1 */
        *e0 = rotary_dim + 2 * (u - half);
        *e1 = *e0 + 1;
    } else if (interleaved) {
        *e0 = 2 * u;
        *e1 = 2 * u + 1;
    } else {
        *e0 = u;
        *e1 = u + half;
    }
}

/* (x0, x1) turned by the angle of cos c, sin s: x0 c - x1 s, x1 c + x0 s. */
CKT_INLINE CKT_HOST_DEVICE void ckt_fmha_rope_rotate(float *x0, float *x1, float c, float s)
{
    const float a = *x0, b = *x1;
    *x0 = a * c - b * s;
    *x1 = b * c + a * s;
}

/* Offset of row pos in a cos / sin table [max_pos][rotary_dim / 2]. */
CKT_INLINE CKT_HOST_DEVICE int64_t ckt_fmha_rope_row(int64_t pos, int rotary_dim)
{
    return pos * (rotary_dim / 2);
}

#endif /* CKT_FMHA_ROPE_H */
