/* examples/copy/copy.h — a tiled copy and a tiled transpose of an m x n
 * matrix, built only from the tile layer (ckt/tile/rows.h, ckt/tile/smem.h).
 *
 *   copy       dst[i][j] = src[i][j]   global -> registers -> global, one
 *              TR x TC tile per block in the row distribution, 16-byte
 *              vectors; variants by rows per tile (2, 4 or 8 vectors per
 *              thread in flight).
 *   transpose  dst[j][i] = src[i][j]   global -> shared (asynchronous copies)
 *              -> registers of the transposed tile -> global; the shared tile
 *              in a plain, padded or swizzled layout (ckt/tile/smem.h).
 *
 * Both take 16-bit elements (fp16 and bf16 alike) or fp32, any m, n >= 0 and
 * leading dimensions (elements between rows) of at least the row length:
 *
 *   copy_launch(CKT_BF16, 4, src, n, dst, n, m, n, stream);
 *   transpose_launch(CKT_F32, CKT_SMEM_SWIZZLE_T, src, n, dst, m, m, n, stream);
 */
#ifndef CKT_EXAMPLES_COPY_H
#define CKT_EXAMPLES_COPY_H

#include "ckt/host/dtype.h"
#include "ckt/host/runtime.h"
#include "ckt/tile/rows.h"
#include "ckt/tile/smem.h"
#include "ckt/tile/view.h"

#define COPY_THREADS 256

typedef struct copy_params {
    ckt_view2d src, dst; /* src m x n; dst m x n (copy) or n x m (transpose) */
    int64_t tiles_n;     /* tiles along n: block b does tile (b / tiles_n, b % tiles_n) */
} copy_params;

/* >>copy: TR x TC tiles, V = 16 bytes, COPY_THREADS threads */

#define COPY_B16_TC 256 /* 512 bytes per tile row: 32 vectors */
#define COPY_F32_TC 128

CKT_ROWS_CHECK(16, COPY_B16_TC, 8, COPY_THREADS, 2);
CKT_ROWS_CHECK(64, COPY_B16_TC, 8, COPY_THREADS, 2);
CKT_ROWS_CHECK(16, COPY_F32_TC, 4, COPY_THREADS, 4);
CKT_ROWS_CHECK(64, COPY_F32_TC, 4, COPY_THREADS, 4);

/* The tile of block b: rows TR * (b / tiles_n), columns TC * (b % tiles_n). */
CKT_INLINE CKT_DEVICE ckt_window2d copy__window(ckt_view2d v, int64_t tiles_n, int TR, int TC)
{
    const int64_t b = ckt_block_idx_x();
    return ckt_window2d_make(v, b / tiles_n * TR, b % tiles_n * TC);
}

/* x: CKT_ROWS_REGS(TR, COPY_B16_TC, COPY_THREADS, 2) registers. */
CKT_INLINE CKT_DEVICE void copy_tile_b16(uint32_t *x, copy_params p, int TR)
{
    const int t = (int)ckt_thread_idx_x();
    const ckt_window2d src = copy__window(p.src, p.tiles_n, TR, COPY_B16_TC);
    const ckt_window2d dst = ckt_window2d_make(p.dst, src.row0, src.col0);
    /* x = src[row0 .. +TR][col0 .. +TC], this thread's vectors */
    ckt_rows_load_b16(x, &src, TR, COPY_B16_TC, 8, COPY_THREADS, t, 0);
    ckt_rows_store_b16(&dst, x, TR, COPY_B16_TC, 8, COPY_THREADS, t);
}

CKT_INLINE CKT_DEVICE void copy_tile_f32(float *x, copy_params p, int TR)
{
    const int t = (int)ckt_thread_idx_x();
    const ckt_window2d src = copy__window(p.src, p.tiles_n, TR, COPY_F32_TC);
    const ckt_window2d dst = ckt_window2d_make(p.dst, src.row0, src.col0);
    ckt_rows_load_f32(x, &src, TR, COPY_F32_TC, 4, COPY_THREADS, t, 0.0f);
    ckt_rows_store_f32(&dst, x, TR, COPY_F32_TC, 4, COPY_THREADS, t);
}

CKT_KERNEL_BOUNDS(copy_b16_r16, copy_params, p, COPY_THREADS)
{
    uint32_t x[CKT_ROWS_REGS(16, COPY_B16_TC, COPY_THREADS, 2)];
    copy_tile_b16(x, p, 16);
}
CKT_KERNEL_BOUNDS(copy_b16_r32, copy_params, p, COPY_THREADS)
{
    uint32_t x[CKT_ROWS_REGS(32, COPY_B16_TC, COPY_THREADS, 2)];
    copy_tile_b16(x, p, 32);
}
CKT_KERNEL_BOUNDS(copy_b16_r64, copy_params, p, COPY_THREADS)
{
    uint32_t x[CKT_ROWS_REGS(64, COPY_B16_TC, COPY_THREADS, 2)];
    copy_tile_b16(x, p, 64);
}
CKT_KERNEL_BOUNDS(copy_f32_r16, copy_params, p, COPY_THREADS)
{
    float x[CKT_ROWS_REGS(16, COPY_F32_TC, COPY_THREADS, 4)];
    copy_tile_f32(x, p, 16);
}
CKT_KERNEL_BOUNDS(copy_f32_r32, copy_params, p, COPY_THREADS)
{
    float x[CKT_ROWS_REGS(32, COPY_F32_TC, COPY_THREADS, 4)];
    copy_tile_f32(x, p, 32);
}
CKT_KERNEL_BOUNDS(copy_f32_r64, copy_params, p, COPY_THREADS)
{
    float x[CKT_ROWS_REGS(64, COPY_F32_TC, COPY_THREADS, 4)];
    copy_tile_f32(x, p, 64);
}

/* >>transpose: TR x TC input tiles with TR = 8 vectors (conflict-free
 * transposing reads with CKT_SMEM_SWIZZLE_T), TC = 64 */

#define TRANSPOSE_B16_TR 64
#define TRANSPOSE_F32_TR 32
#define TRANSPOSE_TC 64

CKT_ROWS_CHECK(TRANSPOSE_B16_TR, TRANSPOSE_TC, 8, COPY_THREADS, 2); /* load: TR x TC */
CKT_ROWS_CHECK(TRANSPOSE_TC, TRANSPOSE_B16_TR, 8, COPY_THREADS, 2); /* store: TC x TR */
CKT_ROWS_CHECK(TRANSPOSE_F32_TR, TRANSPOSE_TC, 4, COPY_THREADS, 4);
CKT_ROWS_CHECK(TRANSPOSE_TC, TRANSPOSE_F32_TR, 4, COPY_THREADS, 4);
CKT_SMEM_CHECK(CKT_SMEM_SWIZZLE_T, TRANSPOSE_TC, 2);
CKT_SMEM_CHECK(CKT_SMEM_SWIZZLE_T, TRANSPOSE_TC, 4);

/* tile: CKT_SMEM_ELEMS(layout, TR, TC, 2) elements of shared memory;
 * x: CKT_ROWS_REGS(TC, TR, COPY_THREADS, 2) registers. */
CKT_INLINE CKT_DEVICE void transpose_tile_b16(void *tile, uint32_t *x, copy_params p, int layout)
{
    const int TR = TRANSPOSE_B16_TR, TC = TRANSPOSE_TC, t = (int)ckt_thread_idx_x();
    const ckt_window2d src = copy__window(p.src, p.tiles_n, TR, TC);
    /* tile[r][c] = src[row0 + r][col0 + c] (0 outside) */
    ckt_smem_load_async_b16(tile, layout, &src, TR, TC, 8, COPY_THREADS, t);
    ckt_cp_async_wait_all();
    ckt_block_sync();
    /* x = this thread's vectors of tile^T (TC x TR) */
    ckt_rows_load_smem_trans_b16(x, tile, layout, TR, TC, 8, COPY_THREADS, t);
    /* dst[col0 + j][row0 + i] = tile^T[j][i] */
    const ckt_window2d dst = ckt_window2d_make(p.dst, src.col0, src.row0);
    ckt_rows_store_b16(&dst, x, TC, TR, 8, COPY_THREADS, t);
}

CKT_INLINE CKT_DEVICE void transpose_tile_f32(void *tile, float *x, copy_params p, int layout)
{
    const int TR = TRANSPOSE_F32_TR, TC = TRANSPOSE_TC, t = (int)ckt_thread_idx_x();
    const ckt_window2d src = copy__window(p.src, p.tiles_n, TR, TC);
    ckt_smem_load_async_f32(tile, layout, &src, TR, TC, 4, COPY_THREADS, t);
    ckt_cp_async_wait_all();
    ckt_block_sync();
    ckt_rows_load_smem_trans_f32(x, tile, layout, TR, TC, 4, COPY_THREADS, t);
    const ckt_window2d dst = ckt_window2d_make(p.dst, src.col0, src.row0);
    ckt_rows_store_f32(&dst, x, TC, TR, 4, COPY_THREADS, t);
}

/* Shared memory for any layout: the padded one is the largest. */
#define TRANSPOSE_B16_SMEM CKT_SMEM_ELEMS(CKT_SMEM_PADDED, TRANSPOSE_B16_TR, TRANSPOSE_TC, 2)
#define TRANSPOSE_F32_SMEM CKT_SMEM_ELEMS(CKT_SMEM_PADDED, TRANSPOSE_F32_TR, TRANSPOSE_TC, 4)
#define TRANSPOSE_B16_REGS CKT_ROWS_REGS(TRANSPOSE_TC, TRANSPOSE_B16_TR, COPY_THREADS, 2)
#define TRANSPOSE_F32_REGS CKT_ROWS_REGS(TRANSPOSE_TC, TRANSPOSE_F32_TR, COPY_THREADS, 4)

CKT_KERNEL_BOUNDS(transpose_b16_plain, copy_params, p, COPY_THREADS)
{
    CKT_SHARED_ARRAY(uint16_t, tile, TRANSPOSE_B16_SMEM);
    uint32_t x[TRANSPOSE_B16_REGS];
    transpose_tile_b16(tile, x, p, CKT_SMEM_ROW_MAJOR);
}
CKT_KERNEL_BOUNDS(transpose_b16_padded, copy_params, p, COPY_THREADS)
{
    CKT_SHARED_ARRAY(uint16_t, tile, TRANSPOSE_B16_SMEM);
    uint32_t x[TRANSPOSE_B16_REGS];
    transpose_tile_b16(tile, x, p, CKT_SMEM_PADDED);
}
CKT_KERNEL_BOUNDS(transpose_b16_swizzle, copy_params, p, COPY_THREADS)
{
    CKT_SHARED_ARRAY(uint16_t, tile, TRANSPOSE_B16_SMEM);
    uint32_t x[TRANSPOSE_B16_REGS];
    transpose_tile_b16(tile, x, p, CKT_SMEM_SWIZZLE_T);
}
CKT_KERNEL_BOUNDS(transpose_f32_plain, copy_params, p, COPY_THREADS)
{
    CKT_SHARED_ARRAY(float, tile, TRANSPOSE_F32_SMEM);
    float x[TRANSPOSE_F32_REGS];
    transpose_tile_f32(tile, x, p, CKT_SMEM_ROW_MAJOR);
}
CKT_KERNEL_BOUNDS(transpose_f32_padded, copy_params, p, COPY_THREADS)
{
    CKT_SHARED_ARRAY(float, tile, TRANSPOSE_F32_SMEM);
    float x[TRANSPOSE_F32_REGS];
    transpose_tile_f32(tile, x, p, CKT_SMEM_PADDED);
}
CKT_KERNEL_BOUNDS(transpose_f32_swizzle, copy_params, p, COPY_THREADS)
{
    CKT_SHARED_ARRAY(float, tile, TRANSPOSE_F32_SMEM);
    float x[TRANSPOSE_F32_REGS];
    transpose_tile_f32(tile, x, p, CKT_SMEM_SWIZZLE_T);
}

/* >>host side */

/* Rows per copy tile for `vecs` vectors per thread (2, 4 or 8); 0 if none. */
static inline int copy_tile_rows(int vecs) { return vecs == 2 ? 16 : vecs == 4 ? 32 : vecs == 8 ? 64 : 0; }

static inline ckt_status copy__run(ckt_kernel_ref k, int TR, int TC, const void *src, int64_t ld_src,
                                   void *dst, int64_t ld_dst, int64_t m, int64_t n, int64_t dst_rows,
                                   int64_t dst_cols, ckt_stream stream)
{
    if (m < 0 || n < 0 || ld_src < n || ld_dst < dst_cols)
        return CKT_ERROR_INVALID_ARGUMENT; /* sizes >= 0, leading dimensions >= row length */
    if (m == 0 || n == 0)
        return CKT_SUCCESS;
    copy_params p;
    p.src = ckt_view2d_make((void *)src, m, n, ld_src);
    p.dst = ckt_view2d_make(dst, dst_rows, dst_cols, ld_dst);
    p.tiles_n = CKT_CEIL_DIV(n, (int64_t)TC);
    const int64_t blocks = CKT_CEIL_DIV(m, (int64_t)TR) * p.tiles_n;
    if (blocks > 0x7fffffff)
        return CKT_ERROR_UNSUPPORTED; /* more tiles than a 1-D grid holds */
    return ckt_rt_launch(k, ckt_dim3_make((unsigned)blocks, 1, 1),
                         ckt_dim3_make(COPY_THREADS, 1, 1), 0, stream, &p);
}

/* dst[i][j] = src[i][j] for the m x n matrices (leading dimensions ld_*),
 * 2, 4 or 8 vectors per thread. */
static inline ckt_status copy_launch(ckt_dtype dt, int vecs, const void *src, int64_t ld_src,
                                     void *dst, int64_t ld_dst, int64_t m, int64_t n,
                                     ckt_stream stream)
{
    static const ckt_kernel_ref b16[3] = {CKT_KERNEL_REF(copy_b16_r16), CKT_KERNEL_REF(copy_b16_r32),
                                          CKT_KERNEL_REF(copy_b16_r64)};
    static const ckt_kernel_ref f32[3] = {CKT_KERNEL_REF(copy_f32_r16), CKT_KERNEL_REF(copy_f32_r32),
                                          CKT_KERNEL_REF(copy_f32_r64)};
    const int v = vecs == 2 ? 0 : vecs == 4 ? 1 : vecs == 8 ? 2 : -1;
    if (v < 0)
        return CKT_ERROR_INVALID_ARGUMENT;
    return copy__run(dt == CKT_F32 ? f32[v] : b16[v], copy_tile_rows(vecs),
                     dt == CKT_F32 ? COPY_F32_TC : COPY_B16_TC, src, ld_src, dst, ld_dst, m, n, m, n,
                     stream);
}

/* dst[j][i] = src[i][j]: src m x n (leading dimension ld_src >= n), dst
 * n x m (ld_dst >= m); layout CKT_SMEM_ROW_MAJOR, _PADDED or _SWIZZLE_T. */
static inline ckt_status transpose_launch(ckt_dtype dt, int layout, const void *src, int64_t ld_src,
                                          void *dst, int64_t ld_dst, int64_t m, int64_t n,
                                          ckt_stream stream)
{
    const int l = layout == CKT_SMEM_ROW_MAJOR ? 0
                  : layout == CKT_SMEM_PADDED  ? 1
                  : layout == CKT_SMEM_SWIZZLE_T ? 2
                                                 : -1;
    static const ckt_kernel_ref b16[3] = {CKT_KERNEL_REF(transpose_b16_plain),
                                          CKT_KERNEL_REF(transpose_b16_padded),
                                          CKT_KERNEL_REF(transpose_b16_swizzle)};
    static const ckt_kernel_ref f32[3] = {CKT_KERNEL_REF(transpose_f32_plain),
                                          CKT_KERNEL_REF(transpose_f32_padded),
                                          CKT_KERNEL_REF(transpose_f32_swizzle)};
    if (l < 0)
        return CKT_ERROR_INVALID_ARGUMENT;
    return copy__run(dt == CKT_F32 ? f32[l] : b16[l],
                     dt == CKT_F32 ? TRANSPOSE_F32_TR : TRANSPOSE_B16_TR, TRANSPOSE_TC, src, ld_src,
                     dst, ld_dst, m, n, n, m, stream);
}

#endif /* CKT_EXAMPLES_COPY_H */
