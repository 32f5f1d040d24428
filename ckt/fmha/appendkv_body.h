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
 * the kernel my_append_bf16_kernel and, for a launch of it without the
 * launcher, its grid (my_append_bf16_grid(&a).blocks x batch, 1; blocks of
 * CKT_FMHA_APPENDKV_THREADS), then #undefs the parameters, so a
 * translation unit may include the body again. Every head dim (multiples of
 * 8 up to 256), rotary dim, layout, GQA, the lengths and cache_batch_idx are
 * runtime arguments (ckt/fmha/args.h, ckt_fmha_appendkv_args): the kernel is
 * memory-bound, one instance per type serves all.
 *
 * What a block does (grid: (head, row tile) pairs x batch entries, see _grid):
 *
 *   (b, h, rows r0 .. r0 + ROWS)  = this block's tile
 *   len = seqlen_k_ptr ? seqlen_k_ptr[b] : seqlen_k;  cb = cache_batch_idx ? cache_batch_idx[b] : b
 *     (sglang tables: len = their keys - s_knew; ckt_fmha_kv_append, ckt/fmha/kv.h)
 *   for each new token t of the tile (h < nhead_k), each pair u of the row:      ckt/fmha/rope.h
 *       Kc[cb][h][len + t][pair u] = rotate(Knew[b][h][t][pair u], cos/sin[len + t][u])
 *       Vc[cb][h][len + t][pair u] = Vnew[b][h][t][pair u]
 *   for each query i of the tile (h < nhead_q), each pair u:
 *       Q[b][h][i][pair u] = rotate(Q[b][h][i][pair u], cos/sin[len + i][u])   in place
 *
 * A thread owns whole pairs (the two elements a rotation mixes), as 16-byte
 * vectors where the layout allows (no rotation, interleaved, or half-split
 * with rotary_dim a multiple of 16), else single pairs; so the in-place
 * rotation of Q has no race. Elements the rotation leaves alone are copied
 * bit for bit. Rows past the cache's capacity or the tables' rows
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
#include "ckt/fmha/page.h"
#include "ckt/fmha/rope.h"
#include "ckt/fmha/seqlen.h"
#include "ckt/fmha/validate.h"
#include "ckt/host/runtime.h"

#define CKT__AKV_CAT2(a, b) a##b
#define CKT__AKV_CAT(a, b) CKT__AKV_CAT2(a, b)
#define CKT__AKV_FN(suffix) CKT__AKV_CAT(CKT_FMHA_NAME, suffix)
#define CKT__AKV_THREADS CKT_FMHA_APPENDKV_THREADS
/* token rows per block: 8 rows of d / 8 vectors are 0.5 .. 2 vectors a thread (d 64 .. 256) */
#define CKT__AKV_ROWS 8
#define CKT__AKV_BF16 ((CKT_FMHA_DTYPE) == CKT_BF16)

CKT_STATIC_ASSERT(CKT_FMHA_APPENDKV_THREADS > 0 && CKT_FMHA_APPENDKV_THREADS % 32 == 0 &&
                      CKT_FMHA_APPENDKV_THREADS <= 1024,
                  "CKT_FMHA_APPENDKV_THREADS must be a multiple of 32 in [32, 1024]");

/* >>device */

/* 16-bit element <-> fp32 in the instance's type. */
CKT_INLINE CKT_DEVICE float CKT__AKV_FN(_to_f32)(uint32_t bits)
{
    if (CKT__AKV_BF16) {
        ckt_bf16 h;
        h.bits = (uint16_t)bits;
        return ckt_f32_from_bf16(h);
    }
    ckt_f16 h;
    h.bits = (uint16_t)bits;
    return ckt_f32_from_f16(h);
}

CKT_INLINE CKT_DEVICE uint32_t CKT__AKV_FN(_from_f32)(float x)
{
    return CKT__AKV_BF16 ? (uint32_t)ckt_bf16_from_f32(x).bits : (uint32_t)ckt_f16_from_f32(x).bits;
}

/* (x0, x1) as 16-bit elements turned by (c, s), in place. */
CKT_INLINE CKT_DEVICE void CKT__AKV_FN(_rotate)(uint32_t *b0, uint32_t *b1, float c, float s)
{
    float x0 = CKT__AKV_FN(_to_f32)(*b0), x1 = CKT__AKV_FN(_to_f32)(*b1);
    ckt_fmha_rope_rotate(&x0, &x1, c, s);
    *b0 = CKT__AKV_FN(_from_f32)(x0);
    *b1 = CKT__AKV_FN(_from_f32)(x1);
}

/* The 8 elements of a 16-byte vector and back (element 0 in the low half of word 0). */
CKT_INLINE CKT_DEVICE void CKT__AKV_FN(_unpack)(uint32_t e[8], ckt_u32x4 v)
{
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    for (int i = 0; i < 4; i++) {
        e[2 * i] = w[i] & 0xffffu;
        e[2 * i + 1] = w[i] >> 16;
    }
}

CKT_INLINE CKT_DEVICE ckt_u32x4 CKT__AKV_FN(_pack)(const uint32_t e[8])
{
    return ckt_u32x4_make(e[0] | e[1] << 16, e[2] | e[3] << 16, e[4] | e[5] << 16, e[6] | e[7] << 16);
}

/* A row of d elements splits into work units, one a thread at a time:
 *   16-byte vectors: without rotation, or interleaved (pairs 2u, 2u + 1 never
 *     straddle a vector), d / 8 units; half-split with rotary_dim / 2 a multiple
 *     of 8: a vector of the first half together with its partner rotary_dim / 2
 *     further (rotary_dim / 16 units), then the rest's vectors;
 *   else single pairs (ckt_fmha_rope_pair), d / 2 units. */
CKT_INLINE CKT_DEVICE int CKT__AKV_FN(_units)(int d, int rd, int inter)
{
    if (rd == 0 || inter)
        return d / 8;
    if ((rd / 2) % 8 == 0)
        return rd / 16 + (d - rd) / 8;
    return d / 2;
}

/* Unit w of a row: dst = rope(src) at the position of the tables' rows
 * cos_row / sin_row (rotary_dim 0: a copy). dst may be src. Every 16-byte
 * access lies inside the row (w < _units), so the loads and stores take
 * each lane's address as it is (ckt_global_load_u32x4: rows differ from
 * lane to lane, which buffer loads would turn into a loop over them on AMD).
 * The table's floats are read one at a time: as 16-byte vectors they cost
 * the H100 3-4% (bench/results/decode_table_h100/s38/). */
CKT_INLINE CKT_DEVICE void CKT__AKV_FN(_unit)(uint16_t *dst, const uint16_t *src, int w, int rd, int inter,
                                              const float *cos_row, const float *sin_row)
{
    if (rd == 0 || inter) { /* vector w: elements 8w .. 8w + 7, pairs u = 4w + j */
        ckt_u32x4 v = ckt_global_load_u32x4((const char *)src + (int64_t)w * 16);
        if (8 * w < rd) {
            uint32_t e[8];
            CKT__AKV_FN(_unpack)(e, v);
            for (int j = 0; j < 4; j++) {
                const int u = 4 * w + j;
                if (2 * u < rd)
                    CKT__AKV_FN(_rotate)(&e[2 * j], &e[2 * j + 1], cos_row[u], sin_row[u]);
            }
            v = CKT__AKV_FN(_pack)(e);
        }
        ckt_global_store_u32x4((char *)dst + (int64_t)w * 16, v);
        return;
    }
    const int half = rd / 2;
    if (half % 8 == 0) {
        if (w < half / 8) { /* elements 8w + j pair with 8w + j + half: pairs u = 8w + j */
            const int64_t o0 = (int64_t)w * 16, o1 = o0 + (int64_t)half * 2;
            uint32_t e0[8], e1[8];
            CKT__AKV_FN(_unpack)(e0, ckt_global_load_u32x4((const char *)src + o0));
            CKT__AKV_FN(_unpack)(e1, ckt_global_load_u32x4((const char *)src + o1));
            for (int j = 0; j < 8; j++)
                CKT__AKV_FN(_rotate)(&e0[j], &e1[j], cos_row[8 * w + j], sin_row[8 * w + j]);
            ckt_global_store_u32x4((char *)dst + o0, CKT__AKV_FN(_pack)(e0));
            ckt_global_store_u32x4((char *)dst + o1, CKT__AKV_FN(_pack)(e1));
        } else { /* past the rotary part: a copy */
            const int64_t o = (int64_t)rd * 2 + (int64_t)(w - half / 8) * 16;
            ckt_global_store_u32x4((char *)dst + o, ckt_global_load_u32x4((const char *)src + o));
        }
        return;
    }
    /* a single pair u = w */
    int e0, e1;
    ckt_fmha_rope_pair(&e0, &e1, w, rd, inter);
    uint32_t b0 = src[e0], b1 = src[e1];
    if (w < half)
        CKT__AKV_FN(_rotate)(&b0, &b1, cos_row[w], sin_row[w]);
    dst[e0] = (uint16_t)b0;
    dst[e1] = (uint16_t)b1;
}

/* The grid of a call (x: blocks an entry, y: entries). Heads [0, h1) both
 * append and rotate (tiles1 row tiles: the longer part), heads [h1, heads)
 * only one of the two (tiles2): no block that would have nothing to do
 * (a decode call rotating one query of 32 heads and appending one token to
 * 8 took 32 blocks an entry, 8 now with 24 one-tile ones: equal; a prefill
 * append of 4096 tokens took 512 x 32, now 512 x 8 + 24). */
#ifndef CKT__AKV_GRID_TYPE /* once a translation unit: the body is included once an instance */
#define CKT__AKV_GRID_TYPE
typedef struct ckt__akv_grid {
    int h1, tiles1, tiles2;
    int64_t blocks; /* an entry's */
} ckt__akv_grid;
#endif

/* (fields, not the struct's address: in the kernel that would copy the
 * arguments to a local, on AMD 512 bytes of LDS) */
CKT_INLINE CKT_HOST_DEVICE ckt__akv_grid CKT__AKV_FN(_grid_of)(int seqlen_knew, int nhead_k, int rotary_dim, int seqlen_q,
                                                               int nhead_q)
{
    const int heads_a = seqlen_knew > 0 ? nhead_k : 0;
    const int heads_q = rotary_dim > 0 && seqlen_q > 0 ? nhead_q : 0;
    const int tk = heads_a > 0 ? CKT_CEIL_DIV(seqlen_knew, CKT__AKV_ROWS) : 0;
    const int tq = heads_q > 0 ? CKT_CEIL_DIV(seqlen_q, CKT__AKV_ROWS) : 0;
    ckt__akv_grid g;
    g.h1 = heads_a < heads_q ? heads_a : heads_q;
    g.tiles1 = tk > tq ? tk : tq;
    g.tiles2 = heads_a > heads_q ? tk : tq;
    const int heads = heads_a > heads_q ? heads_a : heads_q;
    g.blocks = (int64_t)g.h1 * g.tiles1 + (int64_t)(heads - g.h1) * g.tiles2;
    return g;
}

/* The grid of a call, for a launch of the kernel itself: (blocks, batch, 1). */
static inline ckt__akv_grid CKT__AKV_FN(_grid)(const ckt_fmha_appendkv_args *a)
{
    return CKT__AKV_FN(_grid_of)(a->seqlen_knew, a->nhead_k, a->rotary_dim, a->seqlen_q, a->nhead_q);
}

CKT_KERNEL_BOUNDS(CKT__AKV_FN(_kernel), ckt_fmha_appendkv_args, a, CKT__AKV_THREADS)
{
    enum { ROWS = CKT__AKV_ROWS, THREADS = CKT__AKV_THREADS };
    const int tid = (int)ckt_thread_idx_x();
    /* this block's (entry b, head h, rows r0 .. r0 + ROWS): see _grid */
    const ckt__akv_grid gr = CKT__AKV_FN(_grid_of)(a.seqlen_knew, a.nhead_k, a.rotary_dim, a.seqlen_q, a.nhead_q);
    const int b = (int)ckt_block_idx_y();
    int x = (int)ckt_block_idx_x(), h, r0;
    if (x < gr.h1 * gr.tiles1) {
        h = x / gr.tiles1;
        r0 = x % gr.tiles1 * ROWS;
    } else {
        x -= gr.h1 * gr.tiles1;
        h = gr.h1 + x / gr.tiles2;
        r0 = x % gr.tiles2 * ROWS;
    }
    const int rd = a.rotary_dim, inter = a.rotary_interleaved;
    /* the entry's rows (contiguous, a block-table row or sglang tables) and
     * its current length len (ckt/fmha/kv.h) */
    const ckt_fmha_paging pg = CKT_FMHA_PAGING(a);
    int64_t len;
    const ckt_fmha_kv kv = ckt_fmha_kv_append(&pg, a.seqlen_k_ptr ? (int64_t)a.seqlen_k_ptr[b] : (int64_t)a.seqlen_k,
                                              a.seqlen_knew, a.cache_seqlen, a.cache_batch > 0 ? a.cache_batch : a.batch,
                                              b, &len);
    /* positions this call may use: the entry's rows, and the tables' when rotating */
    const int64_t cap = kv.sk;
    const int64_t pos_end = rd > 0 && a.rotary_max_pos < cap ? a.rotary_max_pos : cap;

    /* >>append: Kc[cb][h][len + t] = rope(Knew[b][h][t], len + t), Vc[cb][h][len + t] = Vnew[b][h][t] */
    /* (kv.sk 0: no rows, e.g. a bad cache_batch_idx on the device) */
    if (h < a.nhead_k && r0 < a.seqlen_knew && kv.sk > 0) {
        const uint16_t *kn = (const uint16_t *)a.k_new + ckt_fmha_row_offset(0, b, h, 0, a.knew_stride_b, a.knew_stride_h, a.knew_stride_s);
        const uint16_t *vn = (const uint16_t *)a.v_new + ckt_fmha_row_offset(0, b, h, 0, a.vnew_stride_b, a.vnew_stride_h, a.vnew_stride_s);
        /* K: rotated; V: copied (units of a row: see _units) */
        const int pk = CKT__AKV_FN(_units)(a.hdim_q, rd, inter), pv = CKT__AKV_FN(_units)(a.hdim_v, 0, 0);
        for (int idx = tid; idx < ROWS * pk; idx += THREADS) {
            const int t = r0 + idx / pk, u = idx % pk;
            const int64_t pos = len + t;
            if (t >= a.seqlen_knew || pos < 0 || pos >= pos_end)
                continue;
            const int64_t off = ckt_fmha_kv_row(&kv, a.page_size, a.num_pages, a.k_stride_b, a.k_stride_s, pos);
            if (off < 0)
                continue; /* a bad page id: skipped (the host checks the table where it can read it) */
            uint16_t *kc = (uint16_t *)a.k_cache + h * a.k_stride_h + off;
            const int64_t row = rd > 0 ? ckt_fmha_rope_row(pos, rd) : 0;
            CKT__AKV_FN(_unit)(kc, kn + (int64_t)t * a.knew_stride_s, u, rd, inter, a.rotary_cos + row, a.rotary_sin + row);
        }
        for (int idx = tid; idx < ROWS * pv; idx += THREADS) {
            const int t = r0 + idx / pv, u = idx % pv;
            const int64_t pos = len + t;
            if (t >= a.seqlen_knew || pos < 0 || pos >= pos_end)
                continue;
            const int64_t off = ckt_fmha_kv_row(&kv, a.page_size, a.num_pages, a.v_stride_b, a.v_stride_s, pos);
            if (off < 0)
                continue;
            uint16_t *vc = (uint16_t *)a.v_cache + h * a.v_stride_h + off;
            CKT__AKV_FN(_unit)(vc, vn + (int64_t)t * a.vnew_stride_s, u, 0, 0, NULL, NULL);
        }
    }

    /* >>queries: Q[b][h][i] = rope(Q[b][h][i], len + i), in place */
    if (rd > 0 && h < a.nhead_q) {
        /* the entry's query rows (group mode: packed by seqstart_q; ckt/fmha/seqlen.h) */
        const ckt_fmha_seq s = ckt_fmha_seq_resolve(a.group_mode, a.seqstart_q, a.seqstart_q, NULL, NULL, a.seqlen_q,
                                                    a.seqlen_q, b);
        if (r0 >= s.sq)
            return;
        const int pq = CKT__AKV_FN(_units)(a.hdim_q, rd, inter);
        for (int idx = tid; idx < ROWS * pq; idx += THREADS) {
            const int i = r0 + idx / pq, u = idx % pq;
            const int64_t pos = len + i;
            if (i >= s.sq || pos < 0 || pos >= a.rotary_max_pos)
                continue;
            uint16_t *qr = (uint16_t *)a.q + ckt_fmha_row_offset(a.group_mode, b, h, s.q_start + i, a.q_stride_b, a.q_stride_h, a.q_stride_s);
            const int64_t row = ckt_fmha_rope_row(pos, rd);
            CKT__AKV_FN(_unit)(qr, qr, u, rd, inter, a.rotary_cos + row, a.rotary_sin + row);
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
    /* grid: an entry's blocks (_grid) x entries; CUDA takes 2^31 - 1
     * blocks in x, HIP 2^32 - 1 threads */
    const ckt__akv_grid g = CKT__AKV_FN(_grid)(a);
    if (g.blocks > (int64_t)(0xffffffffu / CKT__AKV_THREADS))
        return ckt__fail(CKT_ERROR_UNSUPPORTED,
                         "seqlen_knew / seqlen_q: %lld blocks of %d rows an entry (heads x row tiles) exceed the grid's %u",
                         (long long)g.blocks, CKT__AKV_ROWS, 0xffffffffu / CKT__AKV_THREADS);
    if (a->batch > 65535)
        return ckt__fail(CKT_ERROR_UNSUPPORTED, "batch: %d entries exceed the grid's 65535", a->batch);
    return ckt_rt_launch(CKT_KERNEL_REF(CKT__AKV_FN(_kernel)), ckt_dim3_make((unsigned)g.blocks, (unsigned)a->batch, 1),
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
