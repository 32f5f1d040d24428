/* ckt/fmha/sm90.h — what every instance's Hopper forward kernel
 * (ckt/fmha/fwd_sm90_body.h) shares: its parameter struct, the tensor maps
 * of Q, K and V, the swizzled cp.async tile load used where TMA cannot
 * address the tensors, and the run-time choice of the path.
 *
 * Shared tiles hold rows of RB bytes per column block, swizzled at that
 * width (ckt/arch/hopper.h): a [rows][D] tile of 16-bit units is
 * 2 D / RB blocks of rows x RB bytes, block c at c * rows * RB. RB = 128
 * (64 elements) for 16-bit inputs and fp8 d128; fp8 tiles (rows of 16-bit
 * units, two e4m3 each, as the mma.sync kernel's) of 64-byte rows (d64)
 * take RB = 64 and the 64B swizzle.
 *
 * fp8's P V needs V^T K-major (wgmma takes 8-bit operands K-major only):
 * the producer transposes each V tile in shared memory, in the permuted key
 * order of ckt/tile/fp8.h so that P's accumulator is the A operand as it
 * stands (ckt_fmha_sm90_transpose_v_e4m3).
 */
#ifndef CKT_FMHA_SM90_H
#define CKT_FMHA_SM90_H

#include "ckt/arch/arch.h"
#include "ckt/fmha/args.h"
#include "ckt/fmha/page.h"
#include "ckt/host/runtime.h"

#include <stdlib.h>
#include <string.h>

/* the kernel exists on NVIDIA and the emulator (TMA maps, wgmma) */
#if defined(CKT_BACKEND_NVIDIA) || defined(CKT_BACKEND_CPU)

/* The kernel's parameters: the forward's arguments and, when tma is 1, the
 * tensor maps of Q, K and V as (d, s, h, b), or for a paged pool K and V
 * as (d, page position, h, page). exact: the maps' edges are every entry's
 * (batch mode, no per-entry lengths, no KV cache), so TMA's zero fill
 * makes every tile; otherwise (ragged: group mode, per-entry lengths,
 * cache_batch_idx, pages) TMA loads the tiles that lie whole inside the
 * entry (and on valid pages) and the producer's 128 threads copy the rest
 * with cp.async, zeros past the entry. box: the rows of a K / V copy (the
 * key tile, or for pages the largest multiple of 8 dividing both the tile
 * and the page size); 0: K and V by cp.async (short pages). tma 0: the producer loads everything with cp.async
 * (strides TMA cannot take, or CKT_FMHA_SM90_NO_TMA=1). */
typedef struct ckt_fmha_sm90_params {
    ckt_tma_desc tq, tk, tv; /* first: 64-byte aligned */
    ckt_fmha_fwd_args a;
    int tma, exact, box;
    int paired; /* a persistent grid's tiles in pairs (ckt_fmha_fwd_tile_of) */
} ckt_fmha_sm90_params;

/* The rows of a map over a packed group-mode tensor: its length is on the
 * device, so the map spans what a coordinate can reach and the kernel
 * copies by TMA only rows inside an entry. */
#define CKT_FMHA_SM90_PACKED_ROWS 0x7fffffffu

/* The key rows of one TMA copy of a paged pool: gcd(page_size, bn) when it
 * is a multiple of 8 (whole 1024-byte swizzle atoms), else 0 (the call
 * cannot use TMA). */
static inline int ckt_fmha_sm90_page_box(int page_size, int bn)
{
    int x = page_size, y = bn;
    while (y) {
        const int r = x % y;
        x = y;
        y = r;
    }
    return x % 8 == 0 ? x : 0;
}

/* The shortest run of a paged tile (rows of one page) the producer copies
 * by TMA: CKT_FMHA_SM90_PAGE_TMA_MIN (default 32); calls with shorter runs
 * (pages of 8, 16, 24, 40, ...) run on the mma.sync kernel, faster there
 * (H100, causal d128 b4 s4096, pages of 16: 1.10 ms against 1.43 with
 * TMA boxes of 16 rows and 2.68 with the producer's cp.async gather;
 * docs/fmha_inference.md). Read once. */
static inline int ckt_fmha_sm90_page_tma_min(void)
{
    static int cached; /* 0: not read yet */
    if (!cached) {
        const char *v = getenv("CKT_FMHA_SM90_PAGE_TMA_MIN");
        const int n = v ? atoi(v) : 0;
        cached = n > 0 ? n : 32;
    }
    return cached;
}

/* The tensor maps of a's Q, K, V with boxes of qk_box (Q, K) and v_box (V)
 * 16-bit columns by bm (Q) and bn (K, V; p->box for pages) rows, each
 * swizzled at its box's width in bytes (64 or 128); v_cols: V's columns in
 * 16-bit units (hdim_v, or hdim_v / 2 for fp8). ragged_ok: the kernel
 * takes ragged calls (above); else only exact ones. 1 if all three maps
 * are legal (p->exact, p->box set), 0 if the call must use cp.async. */
static inline int ckt_fmha_sm90_maps(ckt_fmha_sm90_params *p, const ckt_fmha_fwd_args *a, int bm, int bn, int qk_box,
                                     int v_cols, int v_box, int ragged_ok)
{
    const int paged = a->page_size > 0;
    const int exact = !a->group_mode && !a->seqlen_q_ptr && !a->seqlen_k_ptr && !paged && !a->cache_batch_idx;
    if (!exact && !ragged_ok)
        return 0;
    /* pages whose runs are shorter than ckt_fmha_sm90_page_tma_min() rows
     * load K and V with cp.async (box 0; Q still by TMA) */
    int box = paged ? ckt_fmha_sm90_page_box(a->page_size, bn) : bn;
    if (paged && box < ckt_fmha_sm90_page_tma_min())
        box = 0;
    const int64_t packed = a->group_mode ? (int64_t)CKT_FMHA_SM90_PACKED_ROWS : 0;
    const int64_t kv_rows = paged ? a->page_size : packed ? packed : a->seqlen_k;
    const int64_t kv_entries = paged ? a->num_pages : a->group_mode ? 1 : a->cache_batch > 0 ? a->cache_batch : a->batch;
    const void *base[3] = {a->q, a->k, a->v};
    const int64_t cols[3] = {a->hdim_q, a->hdim_q, v_cols}, rows[3] = {packed ? packed : a->seqlen_q, kv_rows, kv_rows};
    const int64_t heads[3] = {a->nhead_q, a->nhead_k, a->nhead_k};
    const int64_t entries[3] = {a->group_mode ? 1 : a->batch, kv_entries, kv_entries};
    const int64_t ss[3] = {a->q_stride_s, a->k_stride_s, a->v_stride_s}, sh[3] = {a->q_stride_h, a->k_stride_h, a->v_stride_h};
    const int64_t sb[3] = {a->q_stride_b, a->k_stride_b, a->v_stride_b};
    ckt_tma_desc *d[3] = {&p->tq, &p->tk, &p->tv};
    for (int i = 0; i < (box ? 3 : 1); i++) {
        if (rows[i] <= 0 || entries[i] <= 0 || ss[i] <= 0 || sh[i] < 0 || sb[i] < 0)
            return 0;
        /* a stride along a dimension of extent 1 is never used: any legal one */
        const uint64_t dims[4] = {(uint64_t)cols[i], (uint64_t)rows[i], (uint64_t)heads[i], (uint64_t)entries[i]};
        const uint64_t strides[3] = {(uint64_t)ss[i] * 2, heads[i] > 1 ? (uint64_t)sh[i] * 2 : 16,
                                     entries[i] > 1 ? (uint64_t)sb[i] * 2 : 16};
        const int bc = i == 2 ? v_box : qk_box;
        const unsigned box4[4] = {(unsigned)bc, (unsigned)(i == 0 ? bm : box), 1, 1};
        if (ckt_tma_make_4d(d[i], base[i], 2, dims, strides, box4, (ckt_swizzle)(2 * bc)) != 0)
            return 0;
    }
    p->exact = exact;
    p->box = box;
    return 1;
}

/* The Hopper kernel's environment switches: variable `name` = "1" -> 1,
 * "0" -> 0, unset or anything else -> dflt. */
static inline int ckt_fmha_sm90_env_flag(const char *name, int dflt)
{
    const char *v = getenv(name);
    if (v && strcmp(v, "1") == 0)
        return 1;
    if (v && strcmp(v, "0") == 0)
        return 0;
    return dflt;
}

static inline int ckt_fmha_sm90_forced(void)
{
    return ckt_fmha_sm90_env_flag("CKT_FMHA_SM90", 0);
}

/* The binary version of kernel's image on the current device (90: sm_90a's,
 * the only one with a Hopper kernel's body), asked once a device and kept in
 * cache (64 ints, zeros at first, the caller's static); 0 when unknown. The
 * emulator has no images: 0 there (ckt_fmha_sm90_wanted ignores it). */
static inline int ckt_fmha_sm90_binary_version(const void *kernel, int *cache)
{
#if defined(CKT_BACKEND_NVIDIA)
    int dev = 0, version;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0)
        dev = 0;
    if (dev < 64 && cache[dev])
        return cache[dev] - 1;
    cudaFuncAttributes fa;
    version = cudaFuncGetAttributes(&fa, kernel) == cudaSuccess ? fa.binaryVersion : 0;
    if (dev < 64)
        cache[dev] = version + 1;
    return version;
#else
    (void)kernel;
    (void)cache;
    return 0;
#endif
}

/* Whether calls may take the Hopper kernel: an sm_90 device whose image
 * of the kernel is sm_90a's (binary_version 90), for instances where it is
 * the faster kernel (preferred) or with CKT_FMHA_SM90=1, unless the
 * environment says CKT_FMHA_FORCE_SM80=1; on the emulator's nv profile only
 * when CKT_FMHA_SM90=1 (the tests run it so; the mma.sync kernel stays the
 * emulator's default). */
static inline int ckt_fmha_sm90_wanted(int binary_version, int preferred)
{
    if (ckt_fmha_sm90_env_flag("CKT_FMHA_FORCE_SM80", 0))
        return 0;
    const int forced = ckt_fmha_sm90_forced();
#if defined(CKT_BACKEND_CPU)
    (void)binary_version;
    (void)preferred;
    return forced;
#else
    return binary_version == 90 && (preferred || forced);
#endif
}

/* CKT_FMHA_SM90=1: the Hopper kernel for every call it can take (tests,
 * comparisons), also where it is not the faster kernel. */
/* CKT_FMHA_SM90_NO_TMA=1: the producer loads with cp.async even where TMA
 * could (for tests of that path on batch-mode calls). */
static inline int ckt_fmha_sm90_no_tma(void)
{
    return ckt_fmha_sm90_env_flag("CKT_FMHA_SM90_NO_TMA", 0);
}

/* Whether a 16-bit call runs on a persistent grid (a block per
 * multiprocessor taking several tiles: the next tile's loads overlap this
 * one's epilogue): CKT_FMHA_SM90_PERSISTENT=1 always, =0 never, else
 * `preferred` (the launcher's: batch-mode calls with TMA, unmasked or
 * causal; ragged and windowed grids keep a block a tile, where the
 * hardware's block scheduler balances tiles of unequal work better than a
 * fixed stride). docs/fmha.md#hopper. */
static inline int ckt_fmha_sm90_persistent(int preferred)
{
    return ckt_fmha_sm90_env_flag("CKT_FMHA_SM90_PERSISTENT", preferred);
}

/* Whether a persistent grid takes its tiles in pairs of a long and a short
 * one (ckt_fmha_fwd_tile_of): CKT_FMHA_SM90_PAIRED=1 always, =0 never, else
 * `preferred` (the launcher's: under a causal mask). */
static inline int ckt_fmha_sm90_paired(int preferred)
{
    return ckt_fmha_sm90_env_flag("CKT_FMHA_SM90_PAIRED", preferred);
}

/* Whether a d64 call runs on the instance's narrow kernel (two consumer
 * warpgroups, 128-row tiles) rather than its three-warpgroup one:
 * CKT_FMHA_SM90_NARROW=1 always, =0 never, else `preferred` (the
 * launcher's: causal calls up to 4096 query rows). */
static inline int ckt_fmha_sm90_narrow(int preferred)
{
    return ckt_fmha_sm90_env_flag("CKT_FMHA_SM90_NARROW", preferred);
}

#if defined(CKT_HAS_WGMMA)
/* tile[r][c] (r < rows, c < cols: a [rows][cols] tile of 16-bit units in
 * column blocks of rb bytes (64 or 128), swizzled at rb) <- src[row0 + r][c],
 * zeros past valid_rows and valid_cols (multiples of 8): 16-byte cp.async
 * chunks over threads nt (this one: t). */
CKT_INLINE CKT_DEVICE void ckt_fmha_sm90_load_async(unsigned char *tile, const uint16_t *src, int64_t ld, int row0,
                                                    int valid_rows, int valid_cols, int rows, int cols, int rb, int nt,
                                                    int t)
{
    const int chunks = cols / 8, per_block = rb / 16;
    for (int idx = t; idx < rows * chunks; idx += nt) {
        const int r = idx / chunks, c8 = idx % chunks, gr = row0 + r, gc = c8 * 8;
        unsigned char *dst = tile + (c8 / per_block) * rows * rb +
                             ckt_swizzle_offset((uint32_t)(r * rb + (c8 % per_block) * 16), (ckt_swizzle)rb);
        const int ok = gr < valid_rows && gc < valid_cols;
        ckt_cp_async_16(dst, ok ? (const void *)(src + (int64_t)gr * ld + gc) : (const void *)src, ok ? 16u : 0u);
    }
}

/* The key tile at n0 as ckt_fmha_sm90_load_async loads it (rows x cols
 * 16-bit units in column blocks of rb bytes, swizzled), its rows from the
 * entry's keys kv (ckt/fmha/page.h): contiguous (kv->ids NULL) row j at
 * base + j * row_stride, or paged from the pool at base; zeros past
 * kv->sk, on bad page ids and past valid_cols. */
CKT_INLINE CKT_DEVICE void ckt_fmha_sm90_load_kv_async(unsigned char *tile, const uint16_t *base, const ckt_fmha_kv *kv,
                                                       int page_size, int num_pages, int64_t page_stride,
                                                       int64_t row_stride, int n0, int valid_cols, int rows, int cols,
                                                       int rb, int nt, int t)
{
    const int chunks = cols / 8, per_block = rb / 16;
    for (int idx = t; idx < rows * chunks; idx += nt) {
        const int r = idx / chunks, c8 = idx % chunks, j = n0 + r, gc = c8 * 8;
        unsigned char *dst = tile + (c8 / per_block) * rows * rb +
                             ckt_swizzle_offset((uint32_t)(r * rb + (c8 % per_block) * 16), (ckt_swizzle)rb);
        int64_t off = -1;
        if (j < kv->sk && gc < valid_cols)
            off = kv->ids ? ckt_fmha_kv_row(kv, page_size, num_pages, page_stride, row_stride, j)
                          : (int64_t)j * row_stride;
        ckt_cp_async_16(dst, off >= 0 ? (const void *)(base + off + gc) : (const void *)base, off >= 0 ? 16u : 0u);
    }
}

/* Whether the key tile [n0, n0 + bn) lies whole inside the entry's keys
 * and, paged, on valid pages (box rows a copy): TMA can load it. */
CKT_INLINE CKT_DEVICE int ckt_fmha_sm90_tile_whole(const ckt_fmha_kv *kv, int page_size, int num_pages, int n0, int bn,
                                                   int box)
{
    if (n0 + bn > kv->sk)
        return 0;
    if (!kv->ids)
        return 1;
    int ok = 1;
    for (int r = 0; r < bn; r += box) {
        const int32_t id = kv->ids[(n0 + r) / page_size];
        ok &= id >= 0 && id < num_pages;
    }
    return ok;
}

/* fp8: vt[d][k'] <- v[key(k')][d] for d < dv, k' < 128 (ckt_e4m3_key_of's
 * order: ckt/tile/fp8.h), by the nt / 32 warps of threads nt (this one: t):
 * v the [128 keys][dv bytes] tile, rows of dv bytes swizzled at dv (64 or
 * 128); vt dv rows of 128 bytes, 128B swizzled (the K-major B operand of
 * wgmma k32). A warp moves 16 keys x 32 columns a step: ldmatrix.x4.trans
 * of v as 16-bit units gives lane (g, t) keys 2t, 2t+1 (and + 8) of
 * columns 2g, 2g+1 (and + 16); two byte permutes make vt's words of rows
 * 2g and 2g+1 at k' = 4t .. 4t+3, which is the permuted order ({2t, 2t+1,
 * 2t+8, 2t+9}); stmatrix.x4 writes them. */
CKT_INLINE CKT_DEVICE void ckt_fmha_sm90_transpose_v_e4m3(unsigned char *vt, const unsigned char *v, int dv, int nt,
                                                           int t)
{
    const int lane = t % 32, m = lane / 8, r = lane % 8, steps = 8 * (dv / 32);
    const ckt_swizzle vsw = (ckt_swizzle)dv;
    CKT_UNROLL
    for (int st = t / 32; st < steps; st += nt / 32) {
        const int kb = st % 8, c0 = 32 * (st / 8); /* keys 16 kb .., columns c0 .. c0 + 31 */
        /* matrix m: keys 16 kb + 8 (m & 1) + 0..7, columns c0 + 16 (m >> 1) + 0..15 */
        uint32_t w[4], x[4];
        ckt_ldmatrix_x4_trans(w, v + ckt_swizzle_offset((uint32_t)((16 * kb + 8 * (m & 1) + r) * dv + c0 + 16 * (m >> 1)), vsw));
        x[0] = ckt_byte_perm(w[0], w[1], 0x6420); /* row c0 + 2g:      keys 2t, 2t+1, 2t+8, 2t+9 */
        x[1] = ckt_byte_perm(w[0], w[1], 0x7531); /* row c0 + 2g + 1 */
        x[2] = ckt_byte_perm(w[2], w[3], 0x6420); /* row c0 + 16 + 2g */
        x[3] = ckt_byte_perm(w[2], w[3], 0x7531); /* row c0 + 16 + 2g + 1 */
        /* matrix m: vt rows c0 + 16 (m >> 1) + 2 r + (m & 1), bytes 16 kb .. + 15 */
        ckt_stmatrix_x4(vt + ckt_swizzle_offset((uint32_t)((c0 + 16 * (m >> 1) + 2 * r + (m & 1)) * 128 + 16 * kb),
                                                CKT_SWIZZLE_128B),
                        x);
    }
}
#endif

#endif /* CKT_BACKEND_NVIDIA || CKT_BACKEND_CPU */

#endif /* CKT_FMHA_SM90_H */
