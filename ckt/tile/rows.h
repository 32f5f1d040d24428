/* ckt/tile/rows.h — the row-vector distribution of a tile over threads, and
 * its loads and stores between global memory and registers.
 *
 * A tile of R x C elements is cut into vectors of V contiguous elements of a
 * row (V * elem_bytes = 16 bytes normally: V = 8 for fp16/bf16, 4 for fp32),
 * numbered row-major: vector j covers
 *
 *     row  j / (C/V),  columns (j % (C/V)) * V .. + V - 1.
 *
 * T threads share the tile; thread t (0 <= t < T) owns vectors
 *
 *     j = t + i*T,   i = 0 .. R*C/(V*T) - 1,
 *
 * so consecutive threads read consecutive 16-byte pieces of a row (coalesced)
 * and every thread holds the same number of vectors. Example: R = 4, C = 32,
 * V = 8, T = 8 (4 vectors per row, 16 vectors, 2 per thread):
 *
 *            cols 0-7   8-15  16-23  24-31
 *     row 0     t0      t1     t2     t3        i = 0
 *     row 1     t4      t5     t6     t7        i = 0
 *     row 2     t0      t1     t2     t3        i = 1
 *     row 3     t4      t5     t6     t7        i = 1
 *
 * A thread's registers of the tile (its slice of the distributed tensor) hold
 * its vectors in order i, each vector's elements in column order:
 *
 *   fp32     float    x[CKT_ROWS_REGS(R, C, T, 4)]   element k in x[k]
 *   16-bit   uint32_t x[CKT_ROWS_REGS(R, C, T, 2)]   element k in the low
 *            (k even) or high (k odd) half of x[k / 2]; fp16 and bf16 alike
 *
 * and element k of thread t sits at (ckt_rows_row(..., t, k), ckt_rows_col(...)).
 *
 * Usage (a 64 x 64 bf16 tile over a block of 128 threads):
 *
 *   #define TR 64
 *   #define TC 64
 *   CKT_ROWS_CHECK(TR, TC, 8, 128, 2);
 *   uint32_t x[CKT_ROWS_REGS(TR, TC, 128, 2)];                  // 16 registers
 *   ckt_window2d w = ckt_window2d_make(view, tile_m * TR, tile_n * TC);
 *   ckt_rows_load_b16(x, &w, TR, TC, 8, 128, ckt_thread_rank(), 0);
 *   ...
 *   ckt_rows_store_b16(&w_out, x, TR, TC, 8, 128, ckt_thread_rank());
 *
 * Bounds: elements outside the view ([0, rows) x [0, cols), the window may
 * stick out on any side) read as the fill value and are not written. A vector
 * that lies wholly inside the view and is aligned moves with one 4/8/16-byte
 * access (a 128-bit load or store for 16 bytes); at the ragged edge, or when
 * the view's base or row stride breaks the alignment, it moves element by
 * element (the CPU emulator stops on a misaligned vector access, as a GPU
 * would fault). Offsets are
 * 64-bit. The tile parameters R, C, V, T are plain int arguments: pass
 * compile-time constants, the functions are force-inlined and their loops fold.
 *
 * Unrolling: the loops of the tile layer run over these parameters, so their
 * trip counts are known only once inlined into the kernel; there nvcc and
 * hipcc unroll them fully by themselves and the register arrays stay in
 * registers. They carry no `#pragma unroll`: clang (hipcc) would act on it
 * before inlining, unroll by a guessed count and mark the rest "do not
 * unroll", leaving register arrays indexed by a variable, i.e. in scratch
 * memory (`clang loop unroll(full)` does not have that problem).
 *
 *   CKT_ROWS_CHECK(R, C, V, T, elem_bytes)   compile-time checks of a shape
 *   CKT_ROWS_VECS(R, C, V, T)                vectors per thread
 *   CKT_ROWS_ELEMS(R, C, T)                  elements per thread
 *   CKT_ROWS_REGS(R, C, T, elem_bytes)       32-bit registers per thread
 *   ckt_rows_vec_row / ckt_rows_vec_col      (row, col) of vector i of thread t
 *   ckt_rows_row / ckt_rows_col              (row, col) of element k of thread t
 *   ckt_rows_load_b16 / ckt_rows_load_f32    global -> registers, masked, filled
 *   ckt_rows_store_b16 / ckt_rows_store_f32  registers -> global, masked
 * Shared memory: ckt/tile/smem.h. Register operations and row reductions:
 * ckt/tile/regs.h.
 */
#ifndef CKT_TILE_ROWS_H
#define CKT_TILE_ROWS_H

#include "ckt/arch/arch.h"
#include "ckt/tile/view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* >>shape */

#define CKT_ROWS_VECS(R, C, V, T) ((R) * (C) / ((V) * (T)))
#define CKT_ROWS_ELEMS(R, C, T) ((R) * (C) / (T))
#define CKT_ROWS_REGS(R, C, T, elem_bytes) ((R) * (C) * (elem_bytes) / (4 * (T)))

/* Compile-time checks of a row distribution; use at file or block scope:
 *   CKT_ROWS_CHECK(64, 64, 8, 128, 2);
 * The last check keeps every row's vectors in whole threads: either a row is
 * spread over C/V consecutive threads, or one thread holds (C/V)/T vectors of
 * it. Powers of two always pass. */
#define CKT_ROWS_CHECK(R, C, V, T, elem_bytes)                                                     \
    CKT_STATIC_ASSERT((R) > 0 && (C) > 0 && (V) > 0 && (T) > 0,                                   \
                      "rows tile: R, C, V and T must be positive");                                \
    CKT_STATIC_ASSERT((elem_bytes) == 2 || (elem_bytes) == 4,                                     \
                      "rows tile: elem_bytes must be 2 (fp16/bf16) or 4 (fp32)");                  \
    CKT_STATIC_ASSERT((V) * (elem_bytes) == 4 || (V) * (elem_bytes) == 8 ||                       \
                          (V) * (elem_bytes) == 16,                                               \
                      "rows tile: a vector of V elements must be 4, 8 or 16 bytes "                \
                      "(V = 8 for 16-bit elements or V = 4 for fp32 give 16-byte accesses)");      \
    CKT_STATIC_ASSERT((C) % (V) == 0,                                                              \
                      "rows tile: C (columns) must be a multiple of V (elements per vector)");     \
    CKT_STATIC_ASSERT((R) * ((C) / (V)) % (T) == 0,                                               \
                      "rows tile: the R*C/V vectors must split evenly over the T threads "         \
                      "(make R*C a multiple of V*T)");                                             \
    CKT_STATIC_ASSERT((T) % ((C) / (V)) == 0 || ((C) / (V)) % (T) == 0,                           \
                      "rows tile: C/V (vectors per row) must divide T or be a multiple of T")

/* >>coordinates: vector i and element k of thread t */

CKT_INLINE CKT_HOST_DEVICE int ckt_rows_vec_row(int R, int C, int V, int T, int t, int i)
{
    const int vpr = C / V; /* vectors per row */
    (void)R;
    if (T % vpr == 0) /* a row over vpr threads; T/vpr rows per step of i */
        return t / vpr + i * (T / vpr);
    if (vpr % T == 0) /* vpr/T consecutive vectors of a thread per row */
        return i / (vpr / T);
    return (t + i * T) / vpr;
}

CKT_INLINE CKT_HOST_DEVICE int ckt_rows_vec_col(int R, int C, int V, int T, int t, int i)
{
    const int vpr = C / V;
    (void)R;
    if (T % vpr == 0)
        return (t % vpr) * V;
    if (vpr % T == 0)
        return (i % (vpr / T) * T + t) * V;
    return (t + i * T) % vpr * V;
}

CKT_INLINE CKT_HOST_DEVICE int ckt_rows_row(int R, int C, int V, int T, int t, int k)
{
    return ckt_rows_vec_row(R, C, V, T, t, k / V);
}

CKT_INLINE CKT_HOST_DEVICE int ckt_rows_col(int R, int C, int V, int T, int t, int k)
{
    return ckt_rows_vec_col(R, C, V, T, t, k / V) + k % V;
}

/* >>private: aligned vector and element access
 * The GPU paths dereference 8/16-byte aligned structs so that the compilers
 * emit one 64/128-bit access; the CPU path uses memcpy (no aliasing issue). */

#if !defined(CKT_BACKEND_CPU)
typedef struct __attribute__((aligned(16))) ckt__vec16 {
    uint32_t x, y, z, w;
} ckt__vec16;
typedef struct __attribute__((aligned(8))) ckt__vec8 {
    uint32_t x, y;
} ckt__vec8;
#endif

#if defined(CKT_BACKEND_CPU)
/* A GPU faults on a misaligned vector access; the CPU would not notice, so
 * the emulator stops there too. */
static inline void ckt__tile_check_aligned(const void *p, int bytes)
{
    if ((uintptr_t)p % (uintptr_t)bytes) {
        fprintf(stderr, "ckt tile: misaligned %d-byte vector access at %p\n", bytes, p);
        abort();
    }
}
#endif

/* w[0 .. bytes/4) = the `bytes` (4, 8 or 16) at p, which is aligned to bytes. */
CKT_INLINE CKT_DEVICE void ckt__tile_read(uint32_t *w, const void *p, int bytes)
{
#if defined(CKT_BACKEND_CPU)
    ckt__tile_check_aligned(p, bytes);
    memcpy(w, p, (size_t)bytes);
#else
    if (bytes == 16) {
        ckt__vec16 v = *(const ckt__vec16 *)p;
        w[0] = v.x;
        w[1] = v.y;
        w[2] = v.z;
        w[3] = v.w;
    } else if (bytes == 8) {
        ckt__vec8 v = *(const ckt__vec8 *)p;
        w[0] = v.x;
        w[1] = v.y;
    } else {
        w[0] = *(const uint32_t *)p;
    }
#endif
}

CKT_INLINE CKT_DEVICE void ckt__tile_write(void *p, const uint32_t *w, int bytes)
{
#if defined(CKT_BACKEND_CPU)
    ckt__tile_check_aligned(p, bytes);
    memcpy(p, w, (size_t)bytes);
#else
    if (bytes == 16) {
        ckt__vec16 v;
        v.x = w[0];
        v.y = w[1];
        v.z = w[2];
        v.w = w[3];
        *(ckt__vec16 *)p = v;
    } else if (bytes == 8) {
        ckt__vec8 v;
        v.x = w[0];
        v.y = w[1];
        *(ckt__vec8 *)p = v;
    } else {
        *(uint32_t *)p = w[0];
    }
#endif
}

/* One element of elem_bytes (2 or 4) at p, as the low bits of a word. */
CKT_INLINE CKT_DEVICE uint32_t ckt__tile_read_elem(const void *p, int elem_bytes)
{
#if defined(CKT_BACKEND_CPU)
    if (elem_bytes == 2) {
        uint16_t h;
        memcpy(&h, p, 2);
        return h;
    }
    uint32_t u;
    memcpy(&u, p, 4);
    return u;
#else
    return elem_bytes == 2 ? (uint32_t) * (const uint16_t *)p : *(const uint32_t *)p;
#endif
}

CKT_INLINE CKT_DEVICE void ckt__tile_write_elem(void *p, uint32_t v, int elem_bytes)
{
#if defined(CKT_BACKEND_CPU)
    if (elem_bytes == 2) {
        uint16_t h = (uint16_t)v;
        memcpy(p, &h, 2);
    } else {
        memcpy(p, &v, 4);
    }
#else
    if (elem_bytes == 2)
        *(uint16_t *)p = (uint16_t)v;
    else
        *(uint32_t *)p = v;
#endif
}

/* Element e of a vector held in words w: 16-bit elements pack two per word,
 * the lower column in the low half. */
CKT_INLINE CKT_DEVICE uint32_t ckt__vec_get(const uint32_t *w, int e, int elem_bytes)
{
    return elem_bytes == 4 ? w[e] : (w[e / 2] >> (16 * (e % 2))) & 0xffffu;
}

/* Whether every vector of `vec_bytes` in the window is aligned: the tile
 * origin is, and so is the row stride (vector columns are multiples of V). */
CKT_INLINE CKT_DEVICE int ckt__window_vec_aligned(const ckt_window2d *w, int vec_bytes,
                                                  int elem_bytes)
{
    uintptr_t origin = (uintptr_t)w->view.base +
                       (uintptr_t)((w->row0 * w->view.row_stride + w->col0) * elem_bytes);
    uintptr_t stride = (uintptr_t)(w->view.row_stride * elem_bytes);
    return ((origin | stride) & (uintptr_t)(vec_bytes - 1)) == 0;
}

/* out[0 .. V*elem_bytes/4) = the vector of V elements at tile (r, c) of the
 * window; elements outside the view read as `fill` (elem_bytes low bits). */
CKT_INLINE CKT_DEVICE void ckt__window_load_vec(uint32_t *out, const ckt_window2d *w, int r, int c,
                                                int V, int elem_bytes, int aligned, uint32_t fill)
{
    const int64_t gr = w->row0 + r, gc = w->col0 + c, cols = w->view.cols;
    const char *p = ckt_window2d_ptr(w, r, c, elem_bytes);
    const int row_ok = gr >= 0 && gr < w->view.rows;
    if (row_ok && aligned && gc >= 0 && gc + V <= cols) {
        ckt__tile_read(out, p, V * elem_bytes);
        return;
    }
    for (int q = 0; q < V * elem_bytes / 4; q++)
        out[q] = 0;
    for (int e = 0; e < V; e++) {
        const int ok = row_ok && gc + e >= 0 && gc + e < cols;
        const uint32_t v = ok ? ckt__tile_read_elem(p + e * elem_bytes, elem_bytes) : fill;
        if (elem_bytes == 4)
            out[e] = v;
        else
            out[e / 2] |= (v & 0xffffu) << (16 * (e % 2));
    }
}

/* Stores the vector in words in[] to tile (r, c) of the window; elements
 * outside the view are dropped. */
CKT_INLINE CKT_DEVICE void ckt__window_store_vec(const ckt_window2d *w, int r, int c, int V,
                                                 int elem_bytes, int aligned, const uint32_t *in)
{
    const int64_t gr = w->row0 + r, gc = w->col0 + c, cols = w->view.cols;
    char *p = ckt_window2d_ptr(w, r, c, elem_bytes);
    const int row_ok = gr >= 0 && gr < w->view.rows;
    if (row_ok && aligned && gc >= 0 && gc + V <= cols) {
        ckt__tile_write(p, in, V * elem_bytes);
        return;
    }
    for (int e = 0; e < V; e++)
        if (row_ok && gc + e >= 0 && gc + e < cols)
            ckt__tile_write_elem(p + e * elem_bytes, ckt__vec_get(in, e, elem_bytes), elem_bytes);
}

/* >>global <-> registers */

/* dst (CKT_ROWS_REGS(R, C, T, 2) words) = thread t's vectors of the R x C
 * tile of 16-bit elements at window src; outside the view: fill (the bits
 * of an fp16 or bf16). */
CKT_INLINE CKT_DEVICE void ckt_rows_load_b16(uint32_t *dst, const ckt_window2d *src, int R, int C,
                                             int V, int T, int t, uint16_t fill)
{
    const int aligned = ckt__window_vec_aligned(src, 2 * V, 2);
    for (int i = 0; i < CKT_ROWS_VECS(R, C, V, T); i++)
        ckt__window_load_vec(dst + i * (V / 2), src, ckt_rows_vec_row(R, C, V, T, t, i),
                             ckt_rows_vec_col(R, C, V, T, t, i), V, 2, aligned, fill);
}

/* dst (CKT_ROWS_REGS(R, C, T, 4) floats) = thread t's vectors of the R x C
 * fp32 tile at window src; outside the view: fill. */
CKT_INLINE CKT_DEVICE void ckt_rows_load_f32(float *dst, const ckt_window2d *src, int R, int C,
                                             int V, int T, int t, float fill)
{
    const int aligned = ckt__window_vec_aligned(src, 4 * V, 4);
    for (int i = 0; i < CKT_ROWS_VECS(R, C, V, T); i++) {
        uint32_t w[4];
        ckt__window_load_vec(w, src, ckt_rows_vec_row(R, C, V, T, t, i),
                             ckt_rows_vec_col(R, C, V, T, t, i), V, 4, aligned,
                             ckt_bits_from_f32(fill));
        for (int e = 0; e < V; e++)
            dst[i * V + e] = ckt_f32_from_bits(w[e]);
    }
}

/* Window dst = thread t's vectors of the R x C tile of 16-bit elements in
 * src; elements outside the view are not written. */
CKT_INLINE CKT_DEVICE void ckt_rows_store_b16(const ckt_window2d *dst, const uint32_t *src, int R,
                                              int C, int V, int T, int t)
{
    const int aligned = ckt__window_vec_aligned(dst, 2 * V, 2);
    for (int i = 0; i < CKT_ROWS_VECS(R, C, V, T); i++)
        ckt__window_store_vec(dst, ckt_rows_vec_row(R, C, V, T, t, i),
                              ckt_rows_vec_col(R, C, V, T, t, i), V, 2, aligned, src + i * (V / 2));
}

CKT_INLINE CKT_DEVICE void ckt_rows_store_f32(const ckt_window2d *dst, const float *src, int R,
                                              int C, int V, int T, int t)
{
    const int aligned = ckt__window_vec_aligned(dst, 4 * V, 4);
    for (int i = 0; i < CKT_ROWS_VECS(R, C, V, T); i++) {
        uint32_t w[4];
        for (int e = 0; e < V; e++)
            w[e] = ckt_bits_from_f32(src[i * V + e]);
        ckt__window_store_vec(dst, ckt_rows_vec_row(R, C, V, T, t, i),
                              ckt_rows_vec_col(R, C, V, T, t, i), V, 4, aligned, w);
    }
}

#endif /* CKT_TILE_ROWS_H */
