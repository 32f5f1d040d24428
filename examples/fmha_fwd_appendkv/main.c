/* examples/fmha_fwd_appendkv — append new K/V tokens to a KV cache with
 * rotary embedding (ckt_fmha_appendkv), then attention over the updated
 * cache (ckt_fmha_fwd): the two-call recipe of docs/fmha_appendkv.md. Both
 * calls are validated against the CPU references and timed. Options (CK's
 * tile_example_fmha_fwd_appendkv where they apply):
 *
 *   bazel run //examples/fmha_fwd_appendkv -- -b=2 -h=8 -h_k=2 -s_k=100,37 -s_knew=3 -d=128 -rotary_dim=64
 *   bazel-bin/examples/fmha_fwd_appendkv/fmha_fwd_appendkv_gpu -b=16 -h=32 -h_k=8 -s_k=4096 -s_knew=1 -d=128 -prec=bf16 -v=0
 *
 *   -b          batch (2)                    -h, -h_k   query / key-value heads (2; -h_k=-1: = h)
 *   -s          queries per entry, rotated and attended (-1: = s_knew)
 *   -s_k        current cache lengths before the append (100): one value for every entry,
 *               or a list a,b,c (the last repeats; then passed per entry as seqlen_k_ptr)
 *   -s_knew     new tokens per entry (1)
 *   -s_kcap     cache capacity in rows per entry (-1: max(s_k) + s_knew)
 *   -d          head dim of q, k and v (64)
 *   -rotary_dim rotary dim (0: none; even, <= d); cos / sin tables [s_kcap + s][rotary_dim / 2],
 *               theta = pos * 10000^(-2i / rotary_dim), fp32
 *   -rotary_interleaved  1: pairs (2i, 2i + 1) (GPT-J); 0: (i, i + rotary_dim / 2) (GPT-NeoX) (0)
 *   -cache_batch_idx     1: entry b appends to cache row 2b + 1 of a cache of 2b + 1 rows (0)
 *   -page_block_size     0: a contiguous cache (default); n > 0: pools of n-row pages, each
 *               cache row s_kcap rows of pages taken alternately from both ends of the pool;
 *               then the forward reads the pages in batch mode (no group-mode view)
 *   -page_pool_gb        with pages: the device pools span at least this many GB (0: the pages
 *               used); on the emulator the pages never used stay untouched (64-bit addressing)
 *   -table      vllm: a block table [cache rows][pages] + lengths (default); sglang: kv_indptr /
 *               kv_indices / kv_last_page_len of the cache after the append (the forward takes
 *               the same arrays; needs -page_block_size, no -cache_batch_idx)
 *   -mask       of the attention: 0 none; 1 or t; 2 or b (default: decode / chunked prefill);
 *               t:l,r / b:l,r sliding window
 *   -iperm      layout of q, k/v new and the cache: 1 = [b][h][s][d], 0 = [b][s][h][d] (0)
 *   -prec       fp16 | bf16      -v  1: validate against the CPU references
 *   -seed (11)  -warmup, -repeat  timed runs (GPU 5 / 20, CPU emulator 0 / 1)
 *   -json       1: print one JSON line with the results instead of the text report
 *
 * Validation: the appended cache rows and the rotated queries within one
 * rounding of ckt_ref_fmha_appendkv (fp16 1e-3, bf16 1e-2, relative and
 * absolute), every other cache element unchanged; O of the forward over the
 * kernel's cache against ckt_ref_fmha_fwd over the reference's, CK's
 * tolerances. Timing: the append alone (GB/s = bytes of K_new, V_new read and
 * written, Q read and written when rotated, over its time; Q is rotated
 * again at every timed run, which changes its values, not the cost) and the
 * forward (TFLOPS, and GB/s of the cache's K and V read once).
 * Exit status: 0 valid (or -v=0), 1 mismatch, 2 error.
 */
#include "examples/fmha_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ckt_status run_append(void *ctx, ckt_stream s) { return ckt_fmha_appendkv((const ckt_fmha_appendkv_args *)ctx, s); }
static ckt_status run_fwd(void *ctx, ckt_stream s) { return ckt_fmha_fwd((const ckt_fmha_fwd_args *)ctx, s); }

/* Strides of [b][h][s][d] (bhsd) or [b][s][h][d]. */
static void strides(int64_t *sb, int64_t *sh, int64_t *ss, int bhsd, int nhead, int rows, int d)
{
    ckt_fmha_strides(sb, sh, ss, bhsd, nhead, rows, d);
}

static size_t span(int64_t nb, int64_t nh, int64_t rows, int64_t d, int64_t sb, int64_t sh, int64_t ss)
{
    return nb > 0 && nh > 0 && rows > 0 ? (size_t)((nb - 1) * sb + (nh - 1) * sh + (rows - 1) * ss + d) : 0;
}

static int close16(const void *got, const void *want, size_t i, ckt_dtype dt, double tol)
{
    const uint16_t g = ((const uint16_t *)got)[i], w = ((const uint16_t *)want)[i];
    if (g == w)
        return 1;
    const double x = ckt_load_f32(got, dt, i), y = ckt_load_f32(want, dt, i);
    return fabs(x - y) <= tol + tol * fabs(y);
}

/* n host page ids as pool ids, on the device. */
static const int32_t *device_ids(const int32_t *ids, int n, int64_t pool_pages)
{
    int32_t *m = (int32_t *)fmha_host_alloc((size_t)n + 1, 4);
    for (int i = 0; i < n; i++)
        m[i] = fmha_pool_page(ids[i], pool_pages);
    const int32_t *dev = (const int32_t *)fmha_device_copy(m, (size_t)(n + 1) * 4);
    free(m);
    return dev;
}

/* The host's n pages (page_bytes each) to or from their pool pages. */
static void copy_pages(void *pool, void *host, int n, int64_t page_bytes, int64_t pool_pages, ckt_copy_kind kind)
{
    for (int c = 0; c < n; c++) {
        char *dp = (char *)pool + (int64_t)fmha_pool_page(c, pool_pages) * page_bytes, *hp = (char *)host + (int64_t)c * page_bytes;
        if (kind == CKT_H2D)
            CHECK(ckt_rt_memcpy(dp, hp, (size_t)page_bytes, CKT_H2D));
        else
            CHECK(ckt_rt_memcpy(hp, dp, (size_t)page_bytes, CKT_D2H));
    }
}

int main(int argc, char **argv)
{
    static const char *const known[] = {"b", "h", "h_k", "s", "s_k", "s_knew", "s_kcap", "d", "rotary_dim",
                                        "rotary_interleaved", "cache_batch_idx", "page_block_size", "page_pool_gb",
                                        "table", "mask",
                                        "iperm", "prec", "v", "seed", "warmup", "repeat", "json", NULL};
    if (fmha_check_options(argc, argv, known))
        return 2;
    const int batch = (int)ckt_arg_int(argc, argv, "b", 2), nhead = (int)ckt_arg_int(argc, argv, "h", 2);
    int nhead_k = (int)ckt_arg_int(argc, argv, "h_k", -1);
    const int s_knew = (int)ckt_arg_int(argc, argv, "s_knew", 1);
    int sq = (int)ckt_arg_int(argc, argv, "s", -1), cap = (int)ckt_arg_int(argc, argv, "s_kcap", -1);
    const int d = (int)ckt_arg_int(argc, argv, "d", 64), rd = (int)ckt_arg_int(argc, argv, "rotary_dim", 0);
    const int inter = (int)ckt_arg_int(argc, argv, "rotary_interleaved", 0);
    const int use_cbi = (int)ckt_arg_int(argc, argv, "cache_batch_idx", 0);
    const int page_size = (int)ckt_arg_int(argc, argv, "page_block_size", 0);
    const double pool_gb = ckt_arg_double(argc, argv, "page_pool_gb", 0.0);
    const char *table_s = ckt_arg_str(argc, argv, "table", "vllm");
    const int sglang = strcmp(table_s, "sglang") == 0, paged = page_size > 0;
    const int bhsd = (int)ckt_arg_int(argc, argv, "iperm", 0);
    const int validate = (int)ckt_arg_int(argc, argv, "v", 1), json = (int)ckt_arg_int(argc, argv, "json", 0);
    const uint64_t seed = (uint64_t)ckt_arg_int(argc, argv, "seed", 11);
    const int warmup = (int)ckt_arg_int(argc, argv, "warmup", FMHA_DEFAULT_WARMUP);
    const int repeat = (int)ckt_arg_int(argc, argv, "repeat", FMHA_DEFAULT_REPEAT);
    const char *prec = ckt_arg_str(argc, argv, "prec", "fp16");
    const char *mask_arg = ckt_arg_str(argc, argv, "mask", "b");
    FILE *report = json ? stderr : stdout;

    /* >>arguments */
    ckt_dtype dt;
    if (ckt_dtype_parse(prec, &dt) != 0 || dt == CKT_F32)
        return fmha_usage_error("-prec must be fp16 or bf16, got ", prec);
    if (batch < 1 || batch > FMHA_MAX_BATCH || nhead < 1)
        return fmha_usage_error("-b must be in [1, 4096] and -h >= 1", NULL);
    nhead_k = nhead_k < 0 ? nhead : nhead_k;
    if (!sglang && strcmp(table_s, "vllm") != 0)
        return fmha_usage_error("-table must be vllm or sglang, got ", table_s);
    if (page_size < 0 || pool_gb < 0)
        return fmha_usage_error("-page_block_size and -page_pool_gb must be >= 0", NULL);
    if (pool_gb > 0 && !paged)
        return fmha_usage_error("-page_pool_gb needs -page_block_size > 0", NULL);
    if (sglang && (!paged || use_cbi))
        return fmha_usage_error("-table=sglang needs -page_block_size > 0 and no -cache_batch_idx", NULL);
    sq = sq < 0 ? s_knew : sq;
    static int lens[FMHA_MAX_BATCH];
    const int nlens = fmha_parse_list(ckt_arg_str(argc, argv, "s_k", "100"), lens, batch);
    if (nlens < 1)
        return fmha_usage_error("-s_k must be a length or a list of at most -b lengths", NULL);
    static int32_t len[FMHA_MAX_BATCH], cbi[FMHA_MAX_BATCH];
    int max_len = 0;
    for (int b = 0; b < batch; b++) {
        len[b] = lens[b < nlens ? b : nlens - 1];
        max_len = len[b] > max_len ? len[b] : max_len;
        cbi[b] = use_cbi ? 2 * b + 1 : b;
    }
    cap = cap < 0 ? max_len + s_knew : cap;
    if (sglang && cap < max_len + s_knew) /* sglang's tables hold every entry's keys after the append */
        return fmha_usage_error("-s_kcap must be >= max(-s_k) + -s_knew with -table=sglang", NULL);
    const int cache_batch = use_cbi ? 2 * batch + 1 : batch;
    ckt_fmha_fwd_args fm = CKT_ZERO_INIT; /* the mask */
    if (fmha_parse_mask(mask_arg, &fm) != 0)
        return fmha_usage_error("-mask must be 0, 1, 2, t, b, t:l,r or b:l,r; got ", mask_arg);

    ckt_fmha_appendkv_args a = CKT_ZERO_INIT;
    a.dtype = dt;
    a.batch = batch, a.nhead_q = nhead, a.nhead_k = nhead_k;
    a.seqlen_q = sq, a.seqlen_knew = s_knew, a.cache_seqlen = cap, a.hdim_q = a.hdim_v = d;
    a.seqlen_k = nlens == 1 ? len[0] : 0; /* one length: scalar; a list: seqlen_k_ptr */
    a.cache_batch = use_cbi ? cache_batch : 0;
    a.rotary_dim = rd, a.rotary_interleaved = inter;
    a.rotary_max_pos = rd ? cap + sq : 0;
    strides(&a.q_stride_b, &a.q_stride_h, &a.q_stride_s, bhsd, nhead, sq, d);
    strides(&a.knew_stride_b, &a.knew_stride_h, &a.knew_stride_s, bhsd, nhead_k, s_knew, d);
    strides(&a.vnew_stride_b, &a.vnew_stride_h, &a.vnew_stride_s, bhsd, nhead_k, s_knew, d);
    /* the cache: cache_batch entries of cap rows, or pages (a page:
     * page_size rows in the cache's layout). Paged, the host holds the
     * num_pages pages in use (cache row r's page p is page r max_pages + p:
     * identity tables, for the references) and the device a pool of
     * pool_pages >= num_pages, host page c at pool page fmha_pool_page(c)
     * (examples/fmha_common.h):
     * alternately from the pool's start and its end */
    const int unit_rows = paged ? page_size : cap;
    const int max_pages = paged ? (cap + page_size - 1) / page_size : 0, num_pages = cache_batch * max_pages;
    strides(&a.k_stride_b, &a.k_stride_h, &a.k_stride_s, bhsd, nhead_k, unit_rows, d);
    strides(&a.v_stride_b, &a.v_stride_h, &a.v_stride_s, bhsd, nhead_k, unit_rows, d);
    const size_t es = ckt_dtype_size(dt);
    const int64_t pool_pages = paged ? fmha_pool_pages(pool_gb, a.k_stride_b * (int64_t)es, num_pages) : num_pages;
    if (pool_pages < 0)
        return fmha_usage_error("-page_pool_gb needs more than 2^31 pages", NULL);
    int32_t *table = NULL, *indptr = NULL, *indices = NULL, *last = NULL; /* host page ids */
    static int32_t flk[FMHA_MAX_BATCH]; /* keys after the append */
    for (int b = 0; b < batch; b++)
        flk[b] = len[b] + s_knew;
    if (paged) {
        table = (int32_t *)fmha_host_alloc((size_t)num_pages, 4);
        for (int i = 0; i < num_pages; i++)
            table[i] = i;
        a.page_size = page_size, a.num_pages = num_pages;
        if (sglang) { /* entry b: the first pages of table row b that hold its keys after the append */
            indptr = (int32_t *)fmha_host_alloc((size_t)batch + 1, 4);
            indices = (int32_t *)fmha_host_alloc((size_t)num_pages + 1, 4);
            last = (int32_t *)fmha_host_alloc((size_t)batch, 4);
            indptr[0] = 0;
            for (int b = 0; b < batch; b++) {
                const int n = (flk[b] + page_size - 1) / page_size;
                for (int p = 0; p < n; p++)
                    indices[indptr[b] + p] = table[(size_t)b * max_pages + p];
                indptr[b + 1] = indptr[b] + n;
                last[b] = n > 0 ? flk[b] - (n - 1) * page_size : 0;
            }
            a.seqlen_k = 0; /* the tables give the lengths */
        } else {
            a.max_pages_per_seq = max_pages;
        }
    }

    const size_t nq = span(batch, nhead, sq, d, a.q_stride_b, a.q_stride_h, a.q_stride_s);
    const size_t nn = span(batch, nhead_k, s_knew, d, a.knew_stride_b, a.knew_stride_h, a.knew_stride_s);
    const size_t nc = span(paged ? num_pages : cache_batch, nhead_k, unit_rows, d, a.k_stride_b, a.k_stride_h,
                           a.k_stride_s);
    void *hq = fmha_host_alloc(nq, es), *hkn = fmha_host_alloc(nn, es), *hvn = fmha_host_alloc(nn, es);
    void *hkc = fmha_host_alloc(nc, es), *hvc = fmha_host_alloc(nc, es);
    const ckt_init in = ckt_init_uniform(-1.0f, 1.0f);
    CHECK(ckt_fill(hq, dt, nq, in, seed));
    CHECK(ckt_fill(hkn, dt, nn, in, seed + 1));
    CHECK(ckt_fill(hvn, dt, nn, in, seed + 2));
    CHECK(ckt_fill(hkc, dt, nc, in, seed + 3)); /* old tokens (and garbage past them) */
    CHECK(ckt_fill(hvc, dt, nc, in, seed + 4));
    const size_t ntab = rd ? (size_t)a.rotary_max_pos * (size_t)(rd / 2) : 0;
    float *hcos = (float *)fmha_host_alloc(ntab, 4), *hsin = (float *)fmha_host_alloc(ntab, 4);
    for (int p = 0; p < a.rotary_max_pos; p++)
        for (int i = 0; i < rd / 2; i++) {
            const double th = p * pow(10000.0, -2.0 * i / rd);
            hcos[(size_t)p * (rd / 2) + i] = (float)cos(th);
            hsin[(size_t)p * (rd / 2) + i] = (float)sin(th);
        }

    /* >>device: the append */
    ckt_device_props props;
    CHECK(ckt_rt_device_props(&props));
    ckt_fmha_appendkv_args da = a;
    da.q = fmha_device_copy(hq, nq * es);
    da.k_new = fmha_device_copy(hkn, nn * es);
    da.v_new = fmha_device_copy(hvn, nn * es);
    if (paged) { /* the pools (sparse on the emulator), the host's pages copied in */
        int sparse;
        da.num_pages = (int)pool_pages;
        da.k_cache = fmha_pool_alloc((size_t)pool_pages * (size_t)a.k_stride_b * es, &sparse);
        da.v_cache = fmha_pool_alloc((size_t)pool_pages * (size_t)a.v_stride_b * es, &sparse);
        copy_pages(da.k_cache, hkc, num_pages, a.k_stride_b * (int64_t)es, pool_pages, CKT_H2D);
        copy_pages(da.v_cache, hvc, num_pages, a.v_stride_b * (int64_t)es, pool_pages, CKT_H2D);
    } else {
        da.k_cache = fmha_device_copy(hkc, nc * es);
        da.v_cache = fmha_device_copy(hvc, nc * es);
    }
    da.rotary_cos = rd ? (const float *)fmha_device_copy(hcos, ntab * 4) : NULL;
    da.rotary_sin = rd ? (const float *)fmha_device_copy(hsin, ntab * 4) : NULL;
    da.seqlen_k_ptr = nlens == 1 || sglang ? NULL : (const int32_t *)fmha_device_copy(len, (size_t)batch * 4);
    da.cache_batch_idx = use_cbi ? (const int32_t *)fmha_device_copy(cbi, (size_t)batch * 4) : NULL;
    if (paged && !sglang)
        da.block_table = device_ids(table, num_pages, pool_pages);
    if (sglang) {
        da.kv_indptr = (const int32_t *)fmha_device_copy(indptr, (size_t)(batch + 1) * 4);
        da.kv_indices = device_ids(indices, indptr[batch], pool_pages);
        da.kv_last_page_len = (const int32_t *)fmha_device_copy(last, (size_t)batch * 4);
    }
    CHECK(run_append(&da, NULL));
    CHECK(ckt_rt_device_synchronize());

    /* >>device: attention over the updated cache. Contiguous: the forward in
     * group mode reading the cache in place (ckt/fmha/appendkv_fwd.h):
     * entry b's keys are its len_b + s_knew cache rows, its queries the
     * rotated q. Paged: the forward in batch mode over the same pool and
     * tables (vLLM: lengths len_b + s_knew; sglang: the same arrays). f has
     * the device arrays, fview the host's (reference, FLOPs). */
    ckt_fmha_fwd_args f = CKT_ZERO_INIT, fview;
    static int32_t fsq[FMHA_MAX_BATCH + 1], fsk[FMHA_MAX_BATCH + 1], flq[FMHA_MAX_BATCH];
    if (!paged) {
        CHECK(ckt_fmha_appendkv_fwd_args(&f, fsq, fsk, flq, flk, &da, len, use_cbi ? cbi : NULL, NULL));
        fview = f;
        fview.seqstart_q = fsq, fview.seqstart_k = fsk, fview.seqlen_q_ptr = flq, fview.seqlen_k_ptr = flk;
        f.seqstart_q = (const int32_t *)fmha_device_copy(fsq, (size_t)(batch + 1) * 4);
        f.seqstart_k = (const int32_t *)fmha_device_copy(fsk, (size_t)(batch + 1) * 4);
        f.seqlen_q_ptr = (const int32_t *)fmha_device_copy(flq, (size_t)batch * 4);
        f.seqlen_k_ptr = (const int32_t *)fmha_device_copy(flk, (size_t)batch * 4);
    } else {
        f.dtype = dt, f.batch = batch, f.nhead_q = nhead, f.nhead_k = nhead_k, f.hdim_q = f.hdim_v = d;
        f.seqlen_q = sq, f.seqlen_k = max_len + s_knew;
        f.q = da.q, f.k = da.k_cache, f.v = da.v_cache;
        f.q_stride_b = f.o_stride_b = a.q_stride_b, f.q_stride_h = f.o_stride_h = a.q_stride_h;
        f.q_stride_s = f.o_stride_s = a.q_stride_s;
        f.k_stride_b = a.k_stride_b, f.k_stride_h = a.k_stride_h, f.k_stride_s = a.k_stride_s;
        f.v_stride_b = a.v_stride_b, f.v_stride_h = a.v_stride_h, f.v_stride_s = a.v_stride_s;
        f.page_size = page_size, f.num_pages = da.num_pages;
        f.block_table = da.block_table, f.max_pages_per_seq = a.max_pages_per_seq;
        f.cache_batch_idx = da.cache_batch_idx, f.cache_batch = a.cache_batch;
        f.kv_indptr = da.kv_indptr, f.kv_indices = da.kv_indices, f.kv_last_page_len = da.kv_last_page_len;
        fview = f;
        fview.num_pages = num_pages;
        fview.block_table = sglang ? NULL : table, fview.cache_batch_idx = use_cbi ? cbi : NULL;
        fview.kv_indptr = indptr, fview.kv_indices = indices, fview.kv_last_page_len = last;
        if (!sglang) {
            fview.seqlen_k_ptr = flk;
            f.seqlen_k_ptr = (const int32_t *)fmha_device_copy(flk, (size_t)batch * 4);
        }
    }
    f.mask = fm.mask, f.window_left = fm.window_left, f.window_right = fm.window_right;
    fview.mask = f.mask, fview.window_left = f.window_left, fview.window_right = f.window_right;
    ckt_fmha_fwd_args df = f;
    void *dout = NULL;
    CHECK(ckt_rt_malloc(&dout, nq * es));
    df.o = dout;
    const ckt_fmha_fwd_instance *inst = ckt_fmha_fwd_select(&df);
    CHECK(run_fwd(&df, NULL));
    CHECK(ckt_rt_device_synchronize());

    /* >>validation */
    int rc = 0;
    const double tol = dt == CKT_BF16 ? 1e-2 : 1e-3;
    ckt_compare_result ro;
    memset(&ro, 0, sizeof ro);
    size_t append_bad = 0;
    if (validate) {
        void *gq = fmha_host_alloc(nq, es), *gkc = fmha_host_alloc(nc, es), *gvc = fmha_host_alloc(nc, es);
        void *go = fmha_host_alloc(nq, es);
        CHECK(ckt_rt_memcpy(gq, da.q, nq * es, CKT_D2H));
        if (paged) { /* the pages in use (the rest of a pool is never touched) */
            copy_pages(da.k_cache, gkc, num_pages, a.k_stride_b * (int64_t)es, pool_pages, CKT_D2H);
            copy_pages(da.v_cache, gvc, num_pages, a.v_stride_b * (int64_t)es, pool_pages, CKT_D2H);
        } else {
            CHECK(ckt_rt_memcpy(gkc, da.k_cache, nc * es, CKT_D2H));
            CHECK(ckt_rt_memcpy(gvc, da.v_cache, nc * es, CKT_D2H));
        }
        CHECK(ckt_rt_memcpy(go, dout, nq * es, CKT_D2H));
        ckt_fmha_appendkv_args h = a; /* the reference, in place on the host copies */
        h.q = hq, h.k_new = hkn, h.v_new = hvn, h.k_cache = hkc, h.v_cache = hvc;
        h.rotary_cos = rd ? hcos : NULL, h.rotary_sin = rd ? hsin : NULL;
        h.seqlen_k_ptr = da.seqlen_k_ptr ? len : NULL;
        h.cache_batch_idx = use_cbi ? cbi : NULL;
        h.block_table = paged && !sglang ? table : NULL;
        h.kv_indptr = indptr, h.kv_indices = indices, h.kv_last_page_len = last;
        CHECK(ckt_ref_fmha_appendkv(&h));
        for (size_t i = 0; i < nq; i++)
            append_bad += !close16(gq, hq, i, dt, tol);
        for (size_t i = 0; i < nc; i++)
            append_bad += !close16(gkc, hkc, i, dt, tol) + !close16(gvc, hvc, i, dt, tol);
        ckt_fmha_fwd_args fh = fview;
        fh.q = hq, fh.k = hkc, fh.v = hvc;
        float *o_ref = (float *)fmha_host_alloc(nq, 4);
        CHECK(ckt_ref_fmha_fwd(&fh, o_ref, NULL));
        ckt_status s = ckt_ref_fmha_compare(&ro, NULL, &fh, go, NULL, o_ref, NULL, tol, tol);
        if (s != CKT_SUCCESS && s != CKT_ERROR_MISMATCH)
            CHECK(s);
        rc = s == CKT_SUCCESS && append_bad == 0 ? 0 : 1;
        if (rc || !json) {
            fprintf(report, "append: %zu elements of q and the cache differ from the reference\n", append_bad);
            ckt_compare_print(report, "O", &ro);
        }
        free(gq), free(gkc), free(gvc), free(go), free(o_ref);
    }

    /* >>timing */
    ckt_timing ta, tf;
    memset(&ta, 0, sizeof ta);
    memset(&tf, 0, sizeof tf);
    if (repeat > 0) {
        CHECK(ckt_time(&ta, run_append, &da, NULL, warmup, repeat, CKT_FLUSH_L2));
        CHECK(ckt_time(&tf, run_fwd, &df, NULL, warmup, repeat, CKT_FLUSH_L2));
    }
    const double row_bytes = (double)d * (double)es;
    const double append_bytes = 2.0 * 2.0 * batch * nhead_k * (double)s_knew * row_bytes /* K, V: read, written */
                              + (rd ? 2.0 * batch * nhead * (double)sq * row_bytes : 0.0); /* Q: read, written */
    const ckt_fmha_fwd_args fh_sizes = fview; /* host view of the sizes, for the FLOP count */
    double kv_rows = 0.0;
    for (int b = 0; b < batch; b++)
        kv_rows += flk[b];
    const double fwd_bytes = 2.0 * nhead_k * kv_rows * row_bytes; /* the cache's K and V read once */
    const double flops = ckt_fmha_fwd_flops(&fh_sizes);
    const double a_gbs = ta.median_ms > 0 ? append_bytes / (ta.median_ms * 1e-3) / 1e9 : 0.0;
    const double f_gbs = tf.median_ms > 0 ? fwd_bytes / (tf.median_ms * 1e-3) / 1e9 : 0.0;
    const double f_tflops = tf.median_ms > 0 ? flops / (tf.median_ms * 1e-3) / 1e12 : 0.0;
    char mask_s[64];
    fmha_mask_string(mask_s, sizeof mask_s, &f);
    const char *valid = validate ? (rc == 0 ? "y" : "n") : "-";
    fprintf(report,
            "[%s|%s] b:%d, h:%d/%d, s:%d, s_k:%d(max)+%d, cap:%d, d:%d, rotary:%d%s, cache_batch_idx:%d, page:%d%s "
            "(pool %.3g GB), mask:%s [%s]\n"
            "  appendkv: %.4f ms, %.4g GB/s;  fwd (%s): %.4f ms, %.4g TFlops, %.4g GB/s;  valid:%s\n",
            prec, bhsd ? "bhsd" : "bshd", batch, nhead, nhead_k, sq, max_len, s_knew, cap, d, rd,
            rd ? (inter ? " interleaved" : " half") : "", use_cbi, page_size, paged ? (sglang ? " sglang" : " vllm") : "",
            paged ? (double)pool_pages * (double)a.k_stride_b * (double)es / 1073741824.0 : 0.0, mask_s, props.backend, (double)ta.median_ms, a_gbs,
            inst ? inst->name : "?", (double)tf.median_ms, f_tflops, f_gbs, valid);
    if (json)
        printf("{\"example\":\"fmha_fwd_appendkv\",\"backend\":\"%s\",\"device\":\"%s\",\"prec\":\"%s\",\"b\":%d,"
               "\"h\":%d,\"h_k\":%d,\"s\":%d,\"s_k_max\":%d,\"s_knew\":%d,\"s_kcap\":%d,\"d\":%d,\"rotary_dim\":%d,"
               "\"rotary_interleaved\":%d,\"cache_batch_idx\":%d,\"page_block_size\":%d,\"table\":\"%s\","
               "\"mask\":\"%s\",\"valid\":%s,"
               "\"append_ms\":%.6f,\"append_gbs\":%.6g,\"fwd_ms\":%.6f,\"fwd_tflops\":%.6g,\"fwd_gbs\":%.6g}\n",
               props.backend, props.name, prec, batch, nhead, nhead_k, sq, max_len, s_knew, cap, d, rd, inter,
               use_cbi, page_size, paged ? table_s : "", mask_s, validate ? (rc == 0 ? "true" : "false") : "null",
               (double)ta.median_ms, a_gbs,
               (double)tf.median_ms, f_tflops, f_gbs);

    ckt_rt_free(da.q), ckt_rt_free((void *)da.k_new), ckt_rt_free((void *)da.v_new);
    ckt_rt_free(da.k_cache), ckt_rt_free(da.v_cache);
    ckt_rt_free((void *)da.rotary_cos), ckt_rt_free((void *)da.rotary_sin);
    ckt_rt_free((void *)da.seqlen_k_ptr), ckt_rt_free((void *)da.cache_batch_idx);
    ckt_rt_free((void *)da.block_table), ckt_rt_free((void *)da.kv_indptr);
    ckt_rt_free((void *)da.kv_indices), ckt_rt_free((void *)da.kv_last_page_len);
    ckt_rt_free(dout);
    ckt_rt_free((void *)df.seqstart_q), ckt_rt_free((void *)df.seqstart_k);
    ckt_rt_free((void *)df.seqlen_q_ptr), ckt_rt_free((void *)df.seqlen_k_ptr);
    free(hq), free(hkn), free(hvn), free(hkc), free(hvc), free(hcos), free(hsin);
    free(table), free(indptr), free(indices), free(last);
    return rc;
}
