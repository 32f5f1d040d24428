/* ckt/tile/view.h — a 2-D view of a tensor in memory and a window (tile
 * origin) that moves along it.
 *
 *   view    base pointer, valid extent (rows x cols) and the stride between
 *           rows, in elements; columns are contiguous (unit stride). 64-bit
 *           sizes and offsets throughout. Elements outside [0,rows) x [0,cols)
 *           are masked by every load (filled) and store (dropped).
 *   window  a view plus the origin (row0, col0) of the current tile. Moving a
 *           window moves the origin; the tile's shape is a compile-time
 *           constant of the code that uses it, not part of the window.
 *
 *   // A[b][h][i][:] with layout [b][s][h][d]: rows = seqlen, row stride = h*d
 *   ckt_view2d q = ckt_view2d_make(q_ptr + (b*s*H + h)*D, s, D, H*D);
 *   ckt_window2d w = ckt_window2d_make(q, m_block * 64, 0);
 *   ... load tile ... ckt_window2d_move(&w, 0, 32);   // next 32 columns
 *
 * Element size is passed where bytes matter (2 for fp16/bf16, 4 for fp32) so
 * that one function serves every type of that size.
 */
#ifndef CKT_TILE_VIEW_H
#define CKT_TILE_VIEW_H

#include "ckt/arch/arch.h"

typedef struct ckt_view2d {
    void *base;         /* element (0, 0) */
    int64_t rows, cols; /* valid extent */
    int64_t row_stride; /* elements from one row to the next */
} ckt_view2d;

typedef struct ckt_window2d {
    ckt_view2d view;
    int64_t row0, col0; /* tile origin, in elements of the view */
} ckt_window2d;

CKT_INLINE CKT_HOST_DEVICE ckt_view2d ckt_view2d_make(void *base, int64_t rows, int64_t cols,
                                                      int64_t row_stride)
{
    ckt_view2d v;
    v.base = base;
    v.rows = rows;
    v.cols = cols;
    v.row_stride = row_stride;
    return v;
}

CKT_INLINE CKT_HOST_DEVICE ckt_window2d ckt_window2d_make(ckt_view2d v, int64_t row0, int64_t col0)
{
    ckt_window2d w;
    w.view = v;
    w.row0 = row0;
    w.col0 = col0;
    return w;
}

CKT_INLINE CKT_HOST_DEVICE void ckt_window2d_move(ckt_window2d *w, int64_t drows, int64_t dcols)
{
    w->row0 += drows;
    w->col0 += dcols;
}

/* Is element (r, c) of the tile (relative to the origin) inside the view? */
CKT_INLINE CKT_HOST_DEVICE int ckt_window2d_valid(const ckt_window2d *w, int r, int c)
{
    int64_t gr = w->row0 + r, gc = w->col0 + c;
    return gr >= 0 && gr < w->view.rows && gc >= 0 && gc < w->view.cols;
}

/* How many of the `n` columns starting at tile column c are valid (0..n). */
CKT_INLINE CKT_HOST_DEVICE int ckt_window2d_valid_cols(const ckt_window2d *w, int r, int c, int n)
{
    int64_t gr = w->row0 + r, gc = w->col0 + c;
    if (gr < 0 || gr >= w->view.rows || gc >= w->view.cols || gc + n <= 0)
        return 0;
    int64_t left = w->view.cols - gc;
    return gc < 0 ? 0 : (left < n ? (int)left : n);
}

/* Address of tile element (r, c); elem_bytes is the element size. The
 * address may lie outside the view: check validity before dereferencing. */
CKT_INLINE CKT_HOST_DEVICE char *ckt_window2d_ptr(const ckt_window2d *w, int r, int c,
                                                  int elem_bytes)
{
    return (char *)w->view.base +
           ((w->row0 + r) * w->view.row_stride + (w->col0 + c)) * (int64_t)elem_bytes;
}

#endif /* CKT_TILE_VIEW_H */
