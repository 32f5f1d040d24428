/* ckt/fmha/appendkv_body.h — the append-KV kernel with rotary embedding,
 * instantiated by define-then-include:
 *
 *   #include "ckt/fmha.h"
 *   #define CKT_FMHA_NAME    my_append_bf16   (required) prefix of what is defined
 *   #define CKT_FMHA_DTYPE   CKT_BF16         (required) CKT_F16 or CKT_BF16
 *   #define CKT_FMHA_APPENDKV_THREADS 128     (optional) threads per block
 *   #include CKT_FMHA_APPENDKV_BODY
 *
 * defines
 *   ckt_status my_append_bf16_launch(const ckt_fmha_appendkv_args *a, ckt_stream s);
 * and the kernel my_append_bf16_kernel, then #undefs the parameters, so a
 * translation unit may include the body again. Every head dim (multiples of
 * 8 up to 256), rotary dim, layout, GQA, the lengths and cache_batch_idx are
 * runtime arguments (ckt/fmha/args.h, ckt_fmha_appendkv_args): the kernel is
 * memory-bound, one instance per type serves all.
 *
 * What a block does (grid: row tiles x heads x batch entries):
 *
 *   (b, h, rows r0 .. r0 + ROWS)  = this block's tile
 *   len = seqlen_k_ptr ? seqlen_k_ptr[b] : seqlen_k;  cb = cache_batch_idx ? cache_batch_idx[b] : b
 *   for each new token t of the tile (h < nhead_k), each pair u of the row:      ckt/fmha/rope.h
 *       Kc[cb][h][len + t][pair u] = rotate(Knew[b][h][t][pair u], cos/sin[len + t][u])
 *       Vc[cb][h][len + t][pair u] = Vnew[b][h][t][pair u]
 *   for each query i of the tile (h < nhead_q), each pair u:
 *       Q[b][h][i][pair u] = rotate(Q[b][h][i][pair u], cos/sin[len + i][u])   in place
 *
 * A thread owns whole pairs (the two elements a rotation mixes), so the
 * in-place rotation of Q has no race; pairs the rotation leaves alone are
 * copied bit for bit. Rows past the cache's capacity or the tables' rows
 * (only possible when a GPU's device lengths break the contract the host
 * cannot check) are skipped: never an out-of-bounds access.
 */

/* >>parameters */
#ifndef CKT_FMHA_NAME
#error "ckt/fmha/appendkv_body.h: define CKT_FMHA_NAME (the instance's name prefix) before including the body"
#endif
#ifndef CKT_FMHA_DTYPE
#error "ckt/fmha/appendkv_body.h: define CKT_FMHA_DTYPE as CKT_F16 or CKT_BF16"
#endif
#ifndef CKT_FMHA_APPENDKV_THREADS
#define CKT_FMHA_APPENDKV_THREADS 128
#endif

#include "ckt/arch/arch.h"
#include "ckt/fmha/args.h"
#include "ckt/fmha/rope.h"
#include "ckt/fmha/seqlen.h"
#include "ckt/fmha/validate.h"
#include "ckt/host/runtime.h"

#define CKT__AKV_CAT2(a, b) a##b
#define CKT__AKV_CAT(a, b) CKT__AKV_CAT2(a, b)
#define CKT__AKV_FN(suffix) CKT__AKV_CAT(CKT_FMHA_NAME, suffix)
#define CKT__AKV_THREADS CKT_FMHA_APPENDKV_THREADS
/* token rows per block: 4 rows of d / 2 pairs are 1..4 pairs a thread (d 64..256) */
#define CKT__AKV_ROWS 4
#define CKT__AKV_BF16 ((CKT_FMHA_DTYPE) == CKT_BF16)

CKT_STATIC_ASSERT(CKT_FMHA_APPENDKV_THREADS > 0 && CKT_FMHA_APPENDKV_THREADS % 32 == 0 &&
                      CKT_FMHA_APPENDKV_THREADS <= 1024,
                  "CKT_FMHA_APPENDKV_THREADS must be a multiple of 32 in [32, 1024]");

/* >>device */

/* One pair u of a row: dst's two elements from src's, turned by (c, s) when
 * u is a rotary pair (u < rotary_dim / 2), else copied. dst may be src. */
CKT_INLINE CKT_DEVICE void CKT__AKV_FN(_pair)(uint16_t *dst, const uint16_t *src, int u, int rotary_dim,
                                              int interleaved, const float *cos_row, const float *sin_row)
{
    int e0, e1;
    ckt_fmha_rope_pair(&e0, &e1, u, rotary_dim, interleaved);
    const uint16_t b0 = src[e0], b1 = src[e1];
    if (u >= rotary_dim / 2) {
        dst[e0] = b0;
        dst[e1] = b1;
        return;
    }
    float x0, x1;
    if (CKT__AKV_BF16) {
        ckt_bf16 h0, h1;
        h0.bits = b0;
        h1.bits = b1;
        x0 = ckt_f32_from_bf16(h0);
        x1 = ckt_f32_from_bf16(h1);
    } else {
        ckt_f16 h0, h1;
        h0.bits = b0;
        h1.bits = b1;
        x0 = ckt_f32_from_f16(h0);
        x1 = ckt_f32_from_f16(h1);
    }
    ckt_fmha_rope_rotate(&x0, &x1, cos_row[u], sin_row[u]);
    dst[e0] = CKT__AKV_BF16 ? ckt_bf16_from_f32(x0).bits : ckt_f16_from_f32(x0).bits;
    dst[e1] = CKT__AKV_BF16 ? ckt_bf16_from_f32(x1).bits : ckt_f16_from_f32(x1).bits;
}

CKT_KERNEL_BOUNDS(CKT__AKV_FN(_kernel), ckt_fmha_appendkv_args, a, CKT__AKV_THREADS)
{
    enum { ROWS = CKT__AKV_ROWS, THREADS = CKT__AKV_THREADS };
    const int tid = (int)ckt_thread_idx_x();
    const int b = (int)ckt_block_idx_z(), h = (int)ckt_block_idx_y(), r0 = (int)ckt_block_idx_x() * ROWS;
    const int rd = a.rotary_dim, inter = a.rotary_interleaved;
    const int64_t len = a.seqlen_k_ptr ? (int64_t)a.seqlen_k_ptr[b] : (int64_t)a.seqlen_k;
    /* positions this call may use: the cache's rows, and the tables' when rotating */
    const int64_t pos_end = rd > 0 && a.rotary_max_pos < a.cache_seqlen ? a.rotary_max_pos : a.cache_seqlen;

    /* >>append: Kc[cb][h][len + t] = rope(Knew[b][h][t], len + t), Vc[cb][h][len + t] = Vnew[b][h][t] */
    if (h < a.nhead_k && r0 < a.seqlen_knew) {
        const int cb = a.cache_batch_idx ? (int)a.cache_batch_idx[b] : b;
        const uint16_t *kn = (const uint16_t *)a.k_new + ckt_fmha_row_offset(0, b, h, 0, a.knew_stride_b, a.knew_stride_h, a.knew_stride_s);
        const uint16_t *vn = (const uint16_t *)a.v_new + ckt_fmha_row_offset(0, b, h, 0, a.vnew_stride_b, a.vnew_stride_h, a.vnew_stride_s);
        /* K: d / 2 pairs a row, rotated */
        const int pk = a.hdim_q / 2, pv = a.hdim_v / 2;
        for (int idx = tid; idx < ROWS * pk; idx += THREADS) {
            const int t = r0 + idx / pk, u = idx % pk;
            const int64_t pos = len + t;
            if (t >= a.seqlen_knew || pos < 0 || pos >= pos_end)
                continue;
            uint16_t *kc = (uint16_t *)a.k_cache + ckt_fmha_row_offset(0, cb, h, pos, a.k_stride_b, a.k_stride_h, a.k_stride_s);
            const int64_t row = rd > 0 ? ckt_fmha_rope_row(pos, rd) : 0;
            CKT__AKV_FN(_pair)(kc, kn + (int64_t)t * a.knew_stride_s, u, rd, inter, a.rotary_cos + row, a.rotary_sin + row);
        }
        /* V: copied (rotary dim 0) */
        for (int idx = tid; idx < ROWS * pv; idx += THREADS) {
            const int t = r0 + idx / pv, u = idx % pv;
            const int64_t pos = len + t;
            if (t >= a.seqlen_knew || pos < 0 || pos >= pos_end)
                continue;
            uint16_t *vc = (uint16_t *)a.v_cache + ckt_fmha_row_offset(0, cb, h, pos, a.v_stride_b, a.v_stride_h, a.v_stride_s);
            CKT__AKV_FN(_pair)(vc, vn + (int64_t)t * a.vnew_stride_s, u, 0, 0, NULL, NULL);
        }
    }

    /* >>queries: Q[b][h][i] = rope(Q[b][h][i], len + i), in place */
    if (rd > 0 && h < a.nhead_q) {
        /* the entry's query rows (group mode: packed by seqstart_q; ckt/fmha/seqlen.h) */
        const ckt_fmha_seq s = ckt_fmha_seq_resolve(a.group_mode, a.seqstart_q, a.seqstart_q, NULL, NULL, a.seqlen_q,
                                                    a.seqlen_q, b);
        if (r0 >= s.sq)
            return;
        const int pq = a.hdim_q / 2;
        for (int idx = tid; idx < ROWS * pq; idx += THREADS) {
            const int i = r0 + idx / pq, u = idx % pq;
            const int64_t pos = len + i;
            if (i >= s.sq || pos < 0 || pos >= a.rotary_max_pos)
                continue;
            uint16_t *qr = (uint16_t *)a.q + ckt_fmha_row_offset(a.group_mode, b, h, s.q_start + i, a.q_stride_b, a.q_stride_h, a.q_stride_s);
            const int64_t row = ckt_fmha_rope_row(pos, rd);
            CKT__AKV_FN(_pair)(qr, qr, u, rd, inter, a.rotary_cos + row, a.rotary_sin + row);
        }
    }
}

/* >>host: launch */

static inline ckt_status CKT__AKV_FN(_launch)(const ckt_fmha_appendkv_args *a, ckt_stream stream)
{
    ckt_status st = ckt_fmha_appendkv_validate(a, (CKT_FMHA_DTYPE));
    if (st != CKT_SUCCESS)
        return st;
    if (ckt_fmha_appendkv_is_empty(a))
        return CKT_SUCCESS;
    /* grid: row tiles of the longer of the new tokens and the rotated queries, x the heads of either, x entries */
    const int rot_q = ckt_fmha_appendkv_rotates_q(a), app = a->seqlen_knew > 0 && a->nhead_k > 0;
    const int rows = app && (!rot_q || a->seqlen_knew > a->seqlen_q) ? a->seqlen_knew : a->seqlen_q;
    const int heads = rot_q && (!app || a->nhead_q > a->nhead_k) ? a->nhead_q : a->nhead_k;
    if (heads > 65535)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "nhead_q: %d heads exceed the grid's 65535", heads);
    if (a->batch > 65535)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "batch: %d entries exceed the grid's 65535", a->batch);
    return ckt_rt_launch(CKT_KERNEL_REF(CKT__AKV_FN(_kernel)),
                         ckt_dim3_make((unsigned)CKT_CEIL_DIV(rows, CKT__AKV_ROWS), (unsigned)heads, (unsigned)a->batch),
                         ckt_dim3_make(CKT__AKV_THREADS, 1, 1), 0, stream, a);
}

/* >>consumed parameters */
#undef CKT_FMHA_NAME
#undef CKT_FMHA_DTYPE
#undef CKT_FMHA_APPENDKV_THREADS
#undef CKT__AKV_THREADS
#undef CKT__AKV_ROWS
#undef CKT__AKV_BF16
#undef CKT__AKV_FN
