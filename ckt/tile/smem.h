/* ckt/tile/smem.h — tiles in shared memory: layouts that avoid bank
 * conflicts, and copies between global memory, shared memory and registers
 * in the row distribution (ckt/tile/rows.h).
 *
 * A shared tile is R x C elements of elem_bytes (2 or 4) at a 16-byte aligned
 * address, row-major in one of four layouts. Shared memory has 32 banks of 4
 * bytes, so 128 bytes (64 16-bit or 32 fp32 elements) span all banks; a warp's
 * access is conflict-free when the words it touches fall in distinct banks
 * (or are the same word). Units below are 16-byte chunks (4 banks; 8 16-bit or
 * 4 fp32 elements), the size of one vector of the row distribution. A 16-bit
 * tile with 64 columns (one row = 128 bytes = 8 chunks); the entry is the
 * chunk of the tile row stored at those banks:
 *
 *   banks            0-3  4-7  8-11 12-15 16-19 20-23 24-27 28-31
 *   CKT_SMEM_ROW_MAJOR   (offset r*C + c)
 *     row 0           c0   c1   c2   c3   c4   c5   c6   c7
 *     row 1           c0   c1   c2   c3   c4   c5   c6   c7
 *     ...  chunk c0 of rows 0..7 sits in banks 0-3 eight times: 8-way conflict
 *   CKT_SMEM_PADDED      (offset r*(C + 16 bytes) + c: each row 4 banks later)
 *     row 0           c0   c1   c2   c3   c4   c5   c6   c7
 *     row 1           c7   c0   c1   c2   c3   c4   c5   c6
 *     row 2           c6   c7   c0   c1   c2   c3   c4   c5
 *     ...  chunk c0 of rows 0..7 in 8 different bank groups; rows 8 apart
 *          still collide (8 * 16 bytes of padding = 128 bytes)
 *   CKT_SMEM_SWIZZLE     (chunk c of row r stored at chunk c ^ (r % 8))
 *     row 0           c0   c1   c2   c3   c4   c5   c6   c7
 *     row 1           c1   c0   c3   c2   c5   c4   c7   c6
 *     row 2           c2   c3   c0   c1   c6   c7   c4   c5
 *     row 3           c3   c2   c1   c0   c7   c6   c5   c4
 *     ...
 *     row 7           c7   c6   c5   c4   c3   c2   c1   c0
 *     row 8           c0   c1   c2 ... (as row 0)
 *     (what ldmatrix reads through ckt/tile/mma.h's ckt_smem_tile conflict-free)
 *   CKT_SMEM_SWIZZLE_T   (chunk c of row r stored at chunk c ^ ((r ^ r/8) % 8))
 *     rows 0..7 as SWIZZLE; rows 8..15 with keys 1 0 3 2 5 4 7 6; rows
 *     16..23 with keys 2 3 0 1 6 7 4 5; ...: rows 8 apart differ too.
 *
 * Which warp accesses are conflict-free (checked in tests/tile/smem_test.cc):
 *
 *   access                                 ROW_MAJOR PADDED SWIZZLE SWIZZLE_T
 *   a row's vectors, 8 lanes x 16 bytes        yes     yes     yes      yes
 *   one chunk of rows r0..r0+7 (ldmatrix)      no      yes     yes      yes
 *   one column of rows e, e+8, .., e+56        no      no      no       yes
 *     (a transposing read of 16-bit vectors: ckt_rows_load_smem_trans_b16)
 *
 * SWIZZLE and SWIZZLE_T need rows of a multiple of 128 bytes; PADDED costs
 * 16 bytes per row. Sizes: CKT_SMEM_ELEMS(layout, R, C, elem_bytes).
 *
 *   #define TR 64
 *   #define TC 64
 *   CKT_SMEM_CHECK(CKT_SMEM_SWIZZLE_T, TC, 2);
 *   CKT_SHARED_ARRAY(uint16_t, tile, CKT_SMEM_ELEMS(CKT_SMEM_SWIZZLE_T, TR, TC, 2));
 *   ckt_smem_load_async_b16(tile, CKT_SMEM_SWIZZLE_T, &w, TR, TC, 8, 256, t);
 *   ckt_cp_async_wait_all();
 *   ckt_block_sync();
 *   ckt_rows_load_smem_trans_b16(x, tile, CKT_SMEM_SWIZZLE_T, TR, TC, 8, 256, t);
 *
 *   ckt_smem_offset(layout, C, elem_bytes, r, c)   element offset of (r, c)
 *   ckt_smem_load_{b16,f32}        global -> shared, synchronous, masked + fill
 *   ckt_smem_load_async_{b16,f32}  global -> shared with ckt_cp_async_*: zeros
 *                                  outside the view; commit and wait yourself
 *   ckt_rows_load_smem_{b16,f32}   shared -> registers (row distribution)
 *   ckt_rows_store_smem_{b16,f32}  registers -> shared
 *   ckt_rows_load_smem_trans_{b16,f32}  shared R x C -> registers of its
 *                                  C x R transpose, in the row distribution
 * All of them take the tile's R, C, and the distribution's V, T, t as in
 * ckt/tile/rows.h; none synchronizes the block.
 */
#ifndef CKT_TILE_SMEM_H
#define CKT_TILE_SMEM_H

#include "ckt/arch/arch.h"
#include "ckt/tile/rows.h"
#include "ckt/tile/view.h"

/* >>layouts */

#define CKT_SMEM_ROW_MAJOR 0 /* r * C + c */
#define CKT_SMEM_PADDED 1    /* r * (C + one chunk) + c */
#define CKT_SMEM_SWIZZLE 2   /* chunk ^= r % 8 */
#define CKT_SMEM_SWIZZLE_T 3 /* chunk ^= (r ^ r / 8) % 8 */

#define CKT_SMEM_CHUNK_BYTES 16

/* Elements from one row to the next, and the tile's size in elements. */
#define CKT_SMEM_PITCH(layout, C, elem_bytes)                                                      \
    ((layout) == CKT_SMEM_PADDED ? (C) + CKT_SMEM_CHUNK_BYTES / (elem_bytes) : (C))
#define CKT_SMEM_ELEMS(layout, R, C, elem_bytes) ((R)*CKT_SMEM_PITCH(layout, C, elem_bytes))
#define CKT_SMEM_BYTES(layout, R, C, elem_bytes)                                                   \
    (CKT_SMEM_ELEMS(layout, R, C, elem_bytes) * (elem_bytes))

#define CKT_SMEM_CHECK(layout, C, elem_bytes)                                                      \
    CKT_STATIC_ASSERT((layout) >= CKT_SMEM_ROW_MAJOR && (layout) <= CKT_SMEM_SWIZZLE_T,           \
                      "shared tile: layout must be one of CKT_SMEM_ROW_MAJOR, CKT_SMEM_PADDED, "   \
                      "CKT_SMEM_SWIZZLE, CKT_SMEM_SWIZZLE_T");                                     \
    CKT_STATIC_ASSERT((C) * (elem_bytes) % CKT_SMEM_CHUNK_BYTES == 0,                             \
                      "shared tile: a row must be a multiple of 16 bytes (8 16-bit or 4 fp32 "     \
                      "elements) so that vectors stay aligned");                                   \
    CKT_STATIC_ASSERT(((layout) != CKT_SMEM_SWIZZLE && (layout) != CKT_SMEM_SWIZZLE_T) ||         \
                          (C) * (elem_bytes) % 128 == 0,                                          \
                      "shared tile: a swizzled row must be a multiple of 128 bytes (64 16-bit "    \
                      "or 32 fp32 elements); use CKT_SMEM_PADDED for narrower tiles")

/* Element offset of (r, c) in an R x C shared tile of the layout. A 16-byte
 * chunk (c / (16 / elem_bytes)) moves as a whole, so vectors of up to 16
 * bytes stay contiguous. */
CKT_INLINE CKT_HOST_DEVICE int ckt_smem_offset(int layout, int C, int elem_bytes, int r, int c)
{
    const unsigned ce = (unsigned)(CKT_SMEM_CHUNK_BYTES / elem_bytes); /* elements per chunk */
    if (layout == CKT_SMEM_SWIZZLE || layout == CKT_SMEM_SWIZZLE_T) {
        const unsigned ur = (unsigned)r, uc = (unsigned)c;
        const unsigned key = layout == CKT_SMEM_SWIZZLE ? ur % 8u : (ur ^ (ur / 8u)) % 8u;
        return (int)(ur * (unsigned)C + ((uc / ce) ^ key) * ce + uc % ce);
    }
    return r * CKT_SMEM_PITCH(layout, C, elem_bytes) + c;
}

/* >>private */

/* Vectors moved per batch by the synchronous copy: all loads of a batch are
 * in flight before its stores. */
#define CKT__SMEM_BATCH 8

/* Address of element (r, c) of a shared tile (const or not: the callers know). */
CKT_INLINE CKT_DEVICE char *ckt__smem_vec_ptr(const void *smem, int layout, int C, int elem_bytes,
                                              int r, int c)
{
    return (char *)smem + (int64_t)ckt_smem_offset(layout, C, elem_bytes, r, c) * elem_bytes;
}

CKT_INLINE CKT_DEVICE void ckt__smem_load(void *smem, int layout, const ckt_window2d *src, int R,
                                          int C, int V, int T, int t, int elem_bytes,
                                          uint32_t fill)
{
    const int n = CKT_ROWS_VECS(R, C, V, T), words = V * elem_bytes / 4;
    const int aligned = ckt__window_vec_aligned(src, V * elem_bytes, elem_bytes);
    for (int i0 = 0; i0 < n; i0 += CKT__SMEM_BATCH) {
        uint32_t w[CKT__SMEM_BATCH * 4];
        for (int b = 0; b < CKT__SMEM_BATCH; b++)
            if (i0 + b < n)
                ckt__window_load_vec(w + 4 * b, src, ckt_rows_vec_row(R, C, V, T, t, i0 + b),
                                     ckt_rows_vec_col(R, C, V, T, t, i0 + b), V, elem_bytes,
                                     aligned, fill);
        for (int b = 0; b < CKT__SMEM_BATCH; b++)
            if (i0 + b < n)
                ckt__tile_write(ckt__smem_vec_ptr(smem, layout, C, elem_bytes,
                                                  ckt_rows_vec_row(R, C, V, T, t, i0 + b),
                                                  ckt_rows_vec_col(R, C, V, T, t, i0 + b)),
                                w + 4 * b, words * 4);
    }
}

CKT_INLINE CKT_DEVICE void ckt__smem_load_async(void *smem, int layout, const ckt_window2d *src,
                                                int R, int C, int V, int T, int t, int elem_bytes)
{
    const int vb = V * elem_bytes;
    const int aligned = ckt__window_vec_aligned(src, vb, elem_bytes);
    if (vb == 16 && T % (C / V) == 0 && aligned && src->row0 >= 0 && src->col0 >= 0 &&
        src->row0 + R <= src->view.rows && src->col0 + C <= src->view.cols) {
        /* the whole tile is inside the view (a block-uniform test): no masks;
         * thread t's vectors are T / (C / V) rows apart in one column, so
         * their addresses differ by a constant */
        const int r0 = t / (C / V), c = (t % (C / V)) * V, rstep = T / (C / V);
        const char *g = ckt_window2d_ptr(src, r0, c, elem_bytes);
        const int64_t gstep = (int64_t)rstep * src->view.row_stride * elem_bytes;
        CKT_UNROLL
        for (int j = 0; j < CKT_CEIL_DIV(R, rstep); j++) {
            if (R % rstep != 0 && r0 + j * rstep >= R)
                break;
            ckt_cp_async_16(ckt__smem_vec_ptr(smem, layout, C, elem_bytes, r0 + j * rstep, c),
                            g + j * gstep, 16u);
        }
        return;
    }
    /* thread t's vectors t, t + T, ...: also when the tile has fewer vectors
     * than threads, or not a multiple of T (the tile loaders of ckt/tile/mma.h) */
    const int nvec = R * (C / V);
    for (int i = 0; i < CKT_CEIL_DIV(nvec, T); i++) {
        if (nvec % T != 0 && t + i * T >= nvec)
            break;
        const int r = ckt_rows_vec_row(R, C, V, T, t, i), c = ckt_rows_vec_col(R, C, V, T, t, i);
        const int64_t gr = src->row0 + r, gc = src->col0 + c, cols = src->view.cols;
        const int row_ok = gr >= 0 && gr < src->view.rows;
        char *s = ckt__smem_vec_ptr(smem, layout, C, elem_bytes, r, c);
        if (aligned && (gc >= 0 || gc + V <= 0 || !row_ok)) {
            /* the valid elements are a prefix of the vector (maybe empty) */
            const int64_t left = row_ok && gc >= 0 ? (cols - gc) * elem_bytes : 0;
            const unsigned src_bytes = (unsigned)(left < 0 ? 0 : left < vb ? left : vb);
            const char *g = ckt_window2d_ptr(src, r, c, elem_bytes);
            if (vb == 16)
                ckt_cp_async_16(s, g, src_bytes);
            else if (vb == 8)
                ckt_cp_async_8(s, g, src_bytes);
            else
                ckt_cp_async_4(s, g, src_bytes);
        } else {
            /* straddles the left edge of the view, or misaligned */
            uint32_t w[4];
            ckt__window_load_vec(w, src, r, c, V, elem_bytes, 0, 0u);
            ckt__tile_write(s, w, vb);
        }
    }
}

/* >>global -> shared */

/* The R x C tile of 16-bit elements at window src into shared tile smem
 * (layout), by the T threads of the row distribution (thread t); elements
 * outside the view become fill. Synchronous: visible to the block after a
 * ckt_block_sync(). */
CKT_INLINE CKT_DEVICE void ckt_smem_load_b16(void *smem, int layout, const ckt_window2d *src, int R,
                                             int C, int V, int T, int t, uint16_t fill)
{
    ckt__smem_load(smem, layout, src, R, C, V, T, t, 2, fill);
}

CKT_INLINE CKT_DEVICE void ckt_smem_load_f32(void *smem, int layout, const ckt_window2d *src, int R,
                                             int C, int V, int T, int t, float fill)
{
    ckt__smem_load(smem, layout, src, R, C, V, T, t, 4, ckt_bits_from_f32(fill));
}

/* As ckt_smem_load_*, with asynchronous copies (ckt_cp_async_16/8/4,
 * ckt/arch/memory.h) where the vector is aligned; elements outside the view
 * become 0. The caller commits and waits (ckt_cp_async_commit / _wait, or
 * ckt_cp_async_wait_all), then synchronizes the block. Vectors that straddle
 * the left edge of the view, or a view that breaks alignment, are copied
 * synchronously. */
CKT_INLINE CKT_DEVICE void ckt_smem_load_async_b16(void *smem, int layout, const ckt_window2d *src,
                                                   int R, int C, int V, int T, int t)
{
    ckt__smem_load_async(smem, layout, src, R, C, V, T, t, 2);
}

CKT_INLINE CKT_DEVICE void ckt_smem_load_async_f32(void *smem, int layout, const ckt_window2d *src,
                                                   int R, int C, int V, int T, int t)
{
    ckt__smem_load_async(smem, layout, src, R, C, V, T, t, 4);
}

/* >>shared <-> registers */

/* dst = thread t's vectors (row distribution R, C, V, T) of the shared tile. */
CKT_INLINE CKT_DEVICE void ckt_rows_load_smem_b16(uint32_t *dst, const void *smem, int layout, int R,
                                                  int C, int V, int T, int t)
{
    for (int i = 0; i < CKT_ROWS_VECS(R, C, V, T); i++)
        ckt__tile_read(dst + i * (V / 2),
                       ckt__smem_vec_ptr(smem, layout, C, 2,
                                         ckt_rows_vec_row(R, C, V, T, t, i),
                                         ckt_rows_vec_col(R, C, V, T, t, i)),
                       2 * V);
}

CKT_INLINE CKT_DEVICE void ckt_rows_load_smem_f32(float *dst, const void *smem, int layout, int R,
                                                  int C, int V, int T, int t)
{
    for (int i = 0; i < CKT_ROWS_VECS(R, C, V, T); i++) {
        uint32_t w[4];
        ckt__tile_read(w,
                       ckt__smem_vec_ptr(smem, layout, C, 4,
                                         ckt_rows_vec_row(R, C, V, T, t, i),
                                         ckt_rows_vec_col(R, C, V, T, t, i)),
                       4 * V);
        for (int e = 0; e < V; e++)
            dst[i * V + e] = ckt_f32_from_bits(w[e]);
    }
}

/* Shared tile = thread t's vectors in src. */
CKT_INLINE CKT_DEVICE void ckt_rows_store_smem_b16(void *smem, int layout, const uint32_t *src,
                                                   int R, int C, int V, int T, int t)
{
    for (int i = 0; i < CKT_ROWS_VECS(R, C, V, T); i++)
        ckt__tile_write(ckt__smem_vec_ptr(smem, layout, C, 2, ckt_rows_vec_row(R, C, V, T, t, i),
                                          ckt_rows_vec_col(R, C, V, T, t, i)),
                        src + i * (V / 2), 2 * V);
}

CKT_INLINE CKT_DEVICE void ckt_rows_store_smem_f32(void *smem, int layout, const float *src, int R,
                                                   int C, int V, int T, int t)
{
    for (int i = 0; i < CKT_ROWS_VECS(R, C, V, T); i++) {
        uint32_t w[4];
        for (int e = 0; e < V; e++)
            w[e] = ckt_bits_from_f32(src[i * V + e]);
        ckt__tile_write(ckt__smem_vec_ptr(smem, layout, C, 4, ckt_rows_vec_row(R, C, V, T, t, i),
                                          ckt_rows_vec_col(R, C, V, T, t, i)),
                        w, 4 * V);
    }
}

/* dst = thread t's vectors of the C x R transpose of the R x C shared tile,
 * in the row distribution (C, R, V, T): out element (i, j) = tile (j, i).
 * Reads element by element down the tile's columns; with CKT_SMEM_SWIZZLE_T
 * and R = 8V (64 16-bit or 32 fp32 rows) a warp's reads are conflict-free. */
CKT_INLINE CKT_DEVICE void ckt__rows_load_smem_trans(uint32_t *dst, const void *smem, int layout,
                                                     int R, int C, int V, int T, int t,
                                                     int elem_bytes)
{
    for (int i = 0; i < CKT_ROWS_VECS(C, R, V, T); i++) {
        /* out row orow = tile column; out columns ocol.. = tile rows */
        const int orow = ckt_rows_vec_row(C, R, V, T, t, i), ocol = ckt_rows_vec_col(C, R, V, T, t, i);
        uint32_t *w = dst + i * (V * elem_bytes / 4);
        for (int q = 0; q < V * elem_bytes / 4; q++)
            w[q] = 0;
        for (int e = 0; e < V; e++) {
            const uint32_t v = ckt__tile_read_elem(
                ckt__smem_vec_ptr(smem, layout, C, elem_bytes, ocol + e, orow), elem_bytes);
            if (elem_bytes == 4)
                w[e] = v;
            else
                w[e / 2] |= v << (16 * (e % 2));
        }
    }
}

CKT_INLINE CKT_DEVICE void ckt_rows_load_smem_trans_b16(uint32_t *dst, const void *smem, int layout,
                                                        int R, int C, int V, int T, int t)
{
    ckt__rows_load_smem_trans(dst, smem, layout, R, C, V, T, t, 2);
}

CKT_INLINE CKT_DEVICE void ckt_rows_load_smem_trans_f32(float *dst, const void *smem, int layout,
                                                        int R, int C, int V, int T, int t)
{
    for (int i = 0; i < CKT_ROWS_VECS(C, R, V, T); i++) {
        uint32_t w[4];
        const int orow = ckt_rows_vec_row(C, R, V, T, t, i), ocol = ckt_rows_vec_col(C, R, V, T, t, i);
        for (int e = 0; e < V; e++)
            w[e] = ckt__tile_read_elem(ckt__smem_vec_ptr(smem, layout, C, 4, ocol + e, orow), 4);
        for (int e = 0; e < V; e++)
            dst[i * V + e] = ckt_f32_from_bits(w[e]);
    }
}

#endif /* CKT_TILE_SMEM_H */
