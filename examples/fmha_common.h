/* examples/fmha_common.h — what the FMHA examples (fmha_fwd, fmha_bwd) share:
 * CK's option spellings and the problem they describe. (Example code: it
 * prints usage errors and exits through CHECK; the library does neither.)
 *
 *   static fmha_problem p;                       // big: static, not on the stack
 *   ckt_init in;
 *   int rc = fmha_problem_parse(&p, &in, argc, argv, "scale_s");
 *   if (rc) return rc;                           // 2: the message is printed
 *   ckt_fmha_fwd_args h = fmha_problem_host_view(&p);   // host seqstarts, for the reference
 *   void *q = fmha_host_tensor(&h, CKT_FMHA_TENSOR_Q, in, seed);
 *   fmha_problem_device_arrays(&p, &dev_args);   // seqstart_q/k (and seqlen_*_ptr) on the device
 *
 * Options fmha_problem_parse reads (CK's tile_example_fmha_fwd / _bwd names):
 *   -prec fp16|bf16|fp8bf16|fp8fp16   -mode 0 batch, 1 group   -b -h -h_k (-1: = h)   -d -d_v (-1: = d)
 *   -s, -s_k          one length (batch mode) or a list a,b,c of at most -b lengths (group
 *                     mode; the last repeats); -s_k=-1: = s
 *   -s_qpad, -s_kpad  group mode: physical rows per entry (>= every length; -1: packed)
 *   -mask             0 none; 1 or t causal top-left; 2 or b causal bottom-right;
 *                     t:l,r / b:l,r sliding window (FlashAttention's sizes, -1 unlimited)
 *   -iperm, -operm    1: [b][h][s][d], 0: [b][s][h][d] (q/k/v and o)
 *   -<scale_opt>      softmax scale (0: 1/sqrt(d)): CK's forward says -scale_s, its backward -scale
 *   -logits_soft_cap  (0: none)
 *   -init             uf or 1: uniform [0, 1) (default); ui or 0: integers in [-3, 3]; nf: normal(0, 3)
 * An example that does not offer one of them leaves it out of its ckt_arg_unknown list.
 *
 * Layout: batch mode strides from -iperm / -operm (ckt_fmha_strides); group mode packs the
 * entries along s (batch strides 0). LSE is [b][h][s] (group mode [h][total rows]).
 */
#ifndef CKT_EXAMPLES_FMHA_COMMON_H
#define CKT_EXAMPLES_FMHA_COMMON_H

#include "ckt/fmha.h"
#include "examples/check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FMHA_MAX_BATCH 4096

/* The problem the options describe: the forward's arguments without tensors, and the
 * host copies of the group-mode arrays. */
typedef struct fmha_problem {
    ckt_fmha_fwd_args a; /* sizes, strides, mask, scale, softcap, dtype; no pointers */
    int mode, iperm, operm, qpad, kpad;
    int64_t rows_q, rows_k; /* rows of the q / k tensors (group mode: all entries, packed) */
    int sq[FMHA_MAX_BATCH], sk[FMHA_MAX_BATCH];  /* logical lengths per entry */
    int32_t seqstart_q[FMHA_MAX_BATCH + 1], seqstart_k[FMHA_MAX_BATCH + 1];
} fmha_problem;

/* "a,b,c" -> out[0..n); returns n, or -1 on a malformed list. */
static inline int fmha_parse_list(const char *s, int *out, int max)
{
    int n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || n == max)
            return -1;
        out[n++] = (int)v;
        if (*end == ',')
            end++;
        else if (*end)
            return -1;
        s = end;
    }
    return n;
}

/* CK's -mask spellings; 0 on success. */
static inline int fmha_parse_mask(const char *s, ckt_fmha_fwd_args *a)
{
    a->window_left = a->window_right = 0;
    if (strcmp(s, "0") == 0)
        a->mask = CKT_MASK_NONE;
    else if (strcmp(s, "1") == 0 || strcmp(s, "t") == 0)
        a->mask = CKT_MASK_CAUSAL_TOP_LEFT;
    else if (strcmp(s, "2") == 0 || strcmp(s, "b") == 0)
        a->mask = CKT_MASK_CAUSAL_BOTTOM_RIGHT;
    else if ((s[0] == 't' || s[0] == 'b') && s[1] == ':') {
        int lr[2];
        if (fmha_parse_list(s + 2, lr, 2) != 2)
            return -1;
        a->mask = s[0] == 't' ? CKT_MASK_WINDOW_TOP_LEFT : CKT_MASK_WINDOW_BOTTOM_RIGHT;
        a->window_left = lr[0];
        a->window_right = lr[1];
    } else
        return -1;
    return 0;
}

/* The mask as the report prints it: n, t, b, t:l,r, b:l,r. */
static inline void fmha_mask_string(char *buf, size_t n, const ckt_fmha_fwd_args *a)
{
    switch (a->mask) {
    case CKT_MASK_CAUSAL_TOP_LEFT: snprintf(buf, n, "t"); break;
    case CKT_MASK_CAUSAL_BOTTOM_RIGHT: snprintf(buf, n, "b"); break;
    case CKT_MASK_WINDOW_TOP_LEFT: snprintf(buf, n, "t:%d,%d", a->window_left, a->window_right); break;
    case CKT_MASK_WINDOW_BOTTOM_RIGHT: snprintf(buf, n, "b:%d,%d", a->window_left, a->window_right); break;
    default: snprintf(buf, n, "n"); break;
    }
}

/* Prints "error: <msg><arg>" and returns the usage exit status, 2. */
static inline int fmha_usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "error: %s%s\n", msg, arg ? arg : "");
    return 2;
}

/* 0 when every option is in known (NULL-terminated), else 2 after naming the
 * unknown one and listing the known ones. */
static inline int fmha_check_options(int argc, char **argv, const char *const *known)
{
    int bad = ckt_arg_unknown(argc, argv, known);
    if (!bad)
        return 0;
    fprintf(stderr, "error: unknown option %s (options, as -name=value:", argv[bad]);
    for (const char *const *k = known; *k; k++)
        fprintf(stderr, " -%s", *k);
    fprintf(stderr, ")\n");
    return 2;
}

/* Timed runs by default: a few on a GPU, one on the CPU emulator. */
#if defined(CKT_BACKEND_CPU)
#define FMHA_DEFAULT_WARMUP 0
#define FMHA_DEFAULT_REPEAT 1
#else
#define FMHA_DEFAULT_WARMUP 5
#define FMHA_DEFAULT_REPEAT 20
#endif

/* Reads the options above into *p and *in: 0, or 2 after printing what is wrong. */
static inline int fmha_problem_parse(fmha_problem *p, ckt_init *in, int argc, char **argv, const char *scale_opt)
{
    const int batch = (int)ckt_arg_int(argc, argv, "b", 2), nhead = (int)ckt_arg_int(argc, argv, "h", 2);
    int nhead_k = (int)ckt_arg_int(argc, argv, "h_k", -1);
    int d = (int)ckt_arg_int(argc, argv, "d", 64), dv = (int)ckt_arg_int(argc, argv, "d_v", -1);
    const int mode = (int)ckt_arg_int(argc, argv, "mode", 0);
    const int qpad = (int)ckt_arg_int(argc, argv, "s_qpad", -1), kpad = (int)ckt_arg_int(argc, argv, "s_kpad", -1);
    const char *prec = ckt_arg_str(argc, argv, "prec", "fp16"), *init = ckt_arg_str(argc, argv, "init", "uf");
    const char *mask_arg = ckt_arg_str(argc, argv, "mask", "0");
    ckt_fmha_fwd_args *a = &p->a;
    memset(a, 0, sizeof *a);
    p->mode = mode;
    p->iperm = (int)ckt_arg_int(argc, argv, "iperm", 1);
    p->operm = (int)ckt_arg_int(argc, argv, "operm", 1);
    p->qpad = qpad;
    p->kpad = kpad;

    if (strcmp(prec, "fp8bf16") == 0 || strcmp(prec, "fp8fp16") == 0) { /* CK's names: fp8 in, bf16 / fp16 out */
        a->dtype = CKT_FP8_E4M3;
        a->o_dtype = prec[3] == 'b' ? CKT_BF16 : CKT_F16;
    } else if (ckt_dtype_parse(prec, &a->dtype) != 0 || a->dtype == CKT_F32 || a->dtype == CKT_FP8_E4M3)
        return fmha_usage_error("-prec must be fp16, bf16, fp8bf16 or fp8fp16, got ", prec);
    if (mode != 0 && mode != 1)
        return fmha_usage_error("-mode must be 0 (batch) or 1 (group)", NULL);
    if (batch < 1 || batch > FMHA_MAX_BATCH || nhead < 1)
        return fmha_usage_error("-b must be in [1, 4096] and -h >= 1", NULL);
    if (fmha_parse_mask(mask_arg, a) != 0)
        return fmha_usage_error("-mask must be 0, 1, 2, t, b, t:l,r or b:l,r; got ", mask_arg);
    if (strcmp(init, "uf") == 0 || strcmp(init, "1") == 0)
        *in = ckt_init_uniform(0.0f, 1.0f);
    else if (strcmp(init, "ui") == 0 || strcmp(init, "0") == 0)
        *in = ckt_init_int(-3, 3);
    else if (strcmp(init, "nf") == 0)
        *in = ckt_init_normal(0.0f, 3.0f);
    else
        return fmha_usage_error("-init must be uf (1), ui (0) or nf; got ", init);
    nhead_k = nhead_k < 0 ? nhead : nhead_k;
    dv = dv < 0 ? d : dv;

    /* -s / -s_k: per-entry lengths (sq, sk), parsed through the sq/sk arrays' room */
    static int lq[FMHA_MAX_BATCH], lk[FMHA_MAX_BATCH];
    int nq = fmha_parse_list(ckt_arg_str(argc, argv, "s", "100"), lq, FMHA_MAX_BATCH);
    int nk = fmha_parse_list(ckt_arg_str(argc, argv, "s_k", "-1"), lk, FMHA_MAX_BATCH);
    if (nq < 1 || nk < 1 || (mode == 0 && (nq > 1 || nk > 1)) || nq > batch || nk > batch)
        return fmha_usage_error("-s / -s_k: one length (batch mode) or a list of at most -b lengths (group mode)",
                                NULL);
    for (int b = 0; b < batch; b++) {
        p->sq[b] = lq[b < nq ? b : nq - 1];
        p->sk[b] = lk[b < nk ? b : nk - 1];
        p->sk[b] = p->sk[b] < 0 ? p->sq[b] : p->sk[b];
        if (p->sq[b] < 0)
            return fmha_usage_error("-s: lengths must be >= 0", NULL);
    }
    if (mode == 0 && (qpad >= 0 || kpad >= 0))
        return fmha_usage_error("-s_qpad / -s_kpad need -mode=1", NULL);

    /* sizes and strides: group mode packs the entries along s (batch stride 0) */
    a->batch = batch;
    a->nhead_q = nhead;
    a->nhead_k = nhead_k;
    a->hdim_q = d;
    a->hdim_v = dv;
    a->group_mode = mode;
    a->scale = (float)ckt_arg_double(argc, argv, scale_opt, 0.0);
    a->softcap = (float)ckt_arg_double(argc, argv, "logits_soft_cap", 0.0);
    p->rows_q = p->sq[0];
    p->rows_k = p->sk[0];
    if (mode == 1) {
        p->seqstart_q[0] = p->seqstart_k[0] = 0;
        for (int b = 0; b < batch; b++) {
            if ((qpad >= 0 && qpad < p->sq[b]) || (kpad >= 0 && kpad < p->sk[b]))
                return fmha_usage_error("-s_qpad / -s_kpad must be >= every length", NULL);
            p->seqstart_q[b + 1] = p->seqstart_q[b] + (qpad >= 0 ? qpad : p->sq[b]);
            p->seqstart_k[b + 1] = p->seqstart_k[b] + (kpad >= 0 ? kpad : p->sk[b]);
            a->seqlen_q = p->sq[b] > a->seqlen_q ? p->sq[b] : a->seqlen_q;
            a->seqlen_k = p->sk[b] > a->seqlen_k ? p->sk[b] : a->seqlen_k;
        }
        p->rows_q = p->seqstart_q[batch];
        p->rows_k = p->seqstart_k[batch];
    } else {
        a->seqlen_q = p->sq[0];
        a->seqlen_k = p->sk[0];
    }
    const int iperm = p->iperm, operm = p->operm, rq = (int)p->rows_q, rk = (int)p->rows_k;
    ckt_fmha_strides(&a->q_stride_b, &a->q_stride_h, &a->q_stride_s, iperm, nhead, rq, d);
    ckt_fmha_strides(&a->k_stride_b, &a->k_stride_h, &a->k_stride_s, iperm, nhead_k, rk, d);
    ckt_fmha_strides(&a->v_stride_b, &a->v_stride_h, &a->v_stride_s, iperm, nhead_k, rk, dv);
    ckt_fmha_strides(&a->o_stride_b, &a->o_stride_h, &a->o_stride_s, operm, nhead, rq, dv);
    a->lse_stride_h = p->rows_q; /* LSE [b][h][s] (group mode [h][total]) */
    a->lse_stride_b = mode == 1 ? 0 : (int64_t)nhead * p->rows_q;
    if (mode == 1)
        a->q_stride_b = a->k_stride_b = a->v_stride_b = a->o_stride_b = 0;
    return 0;
}

/* The problem's arguments with the host copies of the group-mode arrays (a host view
 * for the CPU reference and the element counts; tensors still NULL). */
static inline ckt_fmha_fwd_args fmha_problem_host_view(const fmha_problem *p)
{
    ckt_fmha_fwd_args h = p->a;
    if (p->mode == 1) {
        h.seqstart_q = p->seqstart_q;
        h.seqstart_k = p->seqstart_k;
        h.seqlen_q_ptr = p->qpad >= 0 ? p->sq : NULL;
        h.seqlen_k_ptr = p->kpad >= 0 ? p->sk : NULL;
    }
    return h;
}

/* A zeroed host buffer of n elements of es bytes (one more, so that n = 0 is not NULL);
 * exits with a message when the host is out of memory. */
static inline void *fmha_host_alloc(size_t n, size_t es)
{
    void *p = calloc(n + 1, es);
    if (!p) {
        fprintf(stderr, "error: out of host memory\n");
        exit(2);
    }
    return p;
}

/* A device copy of bytes of a host buffer (ckt_rt_malloc's pointer also for 0 bytes). */
static inline void *fmha_device_copy(const void *host, size_t bytes)
{
    void *d = NULL;
    CHECK(ckt_rt_malloc(&d, bytes));
    CHECK(ckt_rt_memcpy(d, host, bytes, CKT_H2D));
    return d;
}

/* Group mode: device copies of seqstart_q / seqstart_k and, with -s_qpad / -s_kpad,
 * of the logical lengths, into the four pointers (NULL in batch mode). */
static inline void fmha_problem_device_arrays(const fmha_problem *p, const int32_t **seqstart_q,
                                       const int32_t **seqstart_k, const int32_t **seqlen_q,
                                       const int32_t **seqlen_k)
{
    *seqstart_q = *seqstart_k = *seqlen_q = *seqlen_k = NULL;
    if (p->mode != 1)
        return;
    const size_t sb = (size_t)(p->a.batch + 1) * 4, lb = (size_t)p->a.batch * 4;
    *seqstart_q = (const int32_t *)fmha_device_copy(p->seqstart_q, sb);
    *seqstart_k = (const int32_t *)fmha_device_copy(p->seqstart_k, sb);
    if (p->qpad >= 0)
        *seqlen_q = (const int32_t *)fmha_device_copy(p->sq, lb);
    if (p->kpad >= 0)
        *seqlen_k = (const int32_t *)fmha_device_copy(p->sk, lb);
}

/* Pages of a paged pool of page_bytes a page spanning at least pool_gb GB
 * (option -page_pool_gb) and holding at least `need` pages; -1 past 2^31 - 1
 * pages (a page id is an int32). */
static inline int64_t fmha_pool_pages(double pool_gb, int64_t page_bytes, int64_t need)
{
    const int64_t want = pool_gb > 0 ? (int64_t)(pool_gb * 1073741824.0 / (double)page_bytes) + 1 : 0;
    const int64_t n = want > need ? want : need;
    return n > INT32_MAX ? -1 : n;
}

/* The n-th page handed out of a pool of pool_pages: alternately from its
 * start and its end (0, last, 1, last - 1, ...), so that a big pool has
 * pages in use at both ends (64-bit addressing). */
static inline int32_t fmha_pool_page(int64_t n, int64_t pool_pages)
{
    return (int32_t)(n % 2 == 0 ? n / 2 : pool_pages - 1 - n / 2);
}

/* >>KV cache: the contiguous K / V of a host view re-laid as the forward's
 * cache (options -page_block_size, -page_pool_gb, -cache_batch_idx,
 * -num_splits of fmha_fwd and fmha_batch_prefill).
 *
 * page_size > 0: pools [page][page_size][h_k][d] of at least pool_gb GB
 * each (and at least the pages used plus 3), entry b's pages taken
 * alternately from the pool's start and its end (so that a big pool puts
 * pages at both ends: 64-bit addressing), its block-table row cbi[b] (cbi
 * NULL: b) of a table of cache_batch rows; or sglang tables (sglang = 1:
 * kv_indptr / kv_indices / kv_last_page_len, no cbi). page_size 0 with cbi:
 * a contiguous cache of cache_batch entries [cb][s][h_k][d] (batch mode).
 * On the CPU backend the pools come from calloc: pages never used stay
 * untouched (sparse). dev's k / v, strides and cache fields are set; the
 * key lengths go in as seqlen_k_ptr (vLLM, contiguous) and seqstart_k is
 * cleared when paged. */
typedef struct fmha_cache {
    void *k, *v;
    int sparse; /* the pools are calloc's (free()), else ckt_rt_malloc's */
    size_t k_bytes;
    int32_t *dev_arrays[5]; /* table / indptr, indices, last, lengths, cbi */
} fmha_cache;

static inline void *fmha_pool_alloc(size_t bytes, int *sparse)
{
    void *p = NULL;
#if defined(CKT_BACKEND_CPU)
    p = calloc(1, bytes); /* untouched pages stay unbacked */
    *sparse = 1;
    if (!p) {
        fprintf(stderr, "error: no %zu bytes of address space for the pool\n", bytes);
        exit(2);
    }
#else
    *sparse = 0;
    CHECK(ckt_rt_malloc(&p, bytes));
#endif
    return p;
}

static inline void fmha_cache_make(fmha_cache *c, ckt_fmha_fwd_args *dev, const ckt_fmha_fwd_args *h, int page_size,
                                   double pool_gb, const int32_t *cbi, int cache_batch, int sglang)
{
    const int B = h->batch, hk = h->nhead_k, dq = h->hdim_q, dv = h->hdim_v;
    const size_t es = ckt_dtype_size(h->dtype);
    int32_t *len = (int32_t *)fmha_host_alloc((size_t)B, 4);
    int max_sk = 0, total_pages = 0, max_pages = 1;
    for (int b = 0; b < B; b++) {
        len[b] = ckt_fmha_fwd_entry(h, b).sk;
        max_sk = len[b] > max_sk ? len[b] : max_sk;
        if (page_size > 0) {
            const int n = (len[b] + page_size - 1) / page_size;
            total_pages += n;
            max_pages = n > max_pages ? n : max_pages;
        }
    }
    memset(c, 0, sizeof *c);
    dev->cache_batch_idx = NULL;
    dev->cache_batch = cbi ? cache_batch : 0;
    const int rows = page_size > 0 ? page_size : max_sk; /* rows of a page / a cache entry */
    const int64_t ks = (int64_t)hk * dq, vs = (int64_t)hk * dv; /* [.][row][hk][d] */
    int64_t nunits = page_size > 0 ? total_pages + 3 : (cbi ? cache_batch : B);
    if (page_size > 0) {
        nunits = fmha_pool_pages(pool_gb, (int64_t)rows * ks * (int64_t)es, nunits);
        if (nunits < 0) {
            fprintf(stderr, "error: -page_pool_gb=%g needs more than 2^31 pages\n", pool_gb);
            exit(2);
        }
    }
    c->k_bytes = (size_t)nunits * rows * ks * es;
    c->k = fmha_pool_alloc(c->k_bytes, &c->sparse);
    c->v = fmha_pool_alloc((size_t)nunits * rows * vs * es, &c->sparse);
    /* the units (pages or cache entries) of entry b, and the tables */
    int32_t *table = (int32_t *)fmha_host_alloc((size_t)(cbi ? cache_batch : B) * max_pages + total_pages + 1, 4);
    int32_t *indptr = (int32_t *)fmha_host_alloc((size_t)B + 1, 4), *last = (int32_t *)fmha_host_alloc((size_t)B, 4);
    void *kbuf = fmha_host_alloc((size_t)rows * ks, es), *vbuf = fmha_host_alloc((size_t)rows * vs, es);
    int next = 0;
    for (int b = 0; b < B; b++) {
        const ckt_fmha_seq e = ckt_fmha_fwd_entry(h, b);
        const int cb = cbi ? cbi[b] : b;
        const int n = page_size > 0 ? (len[b] + page_size - 1) / page_size : 1;
        indptr[b + 1] = indptr[b] + (page_size > 0 ? n : 0);
        last[b] = page_size > 0 && n > 0 ? len[b] - (n - 1) * page_size : 0;
        for (int u = 0; u < n; u++) {
            int64_t id = cb;
            if (page_size > 0) {
                id = fmha_pool_page(next++, nunits);
                if (sglang)
                    table[indptr[b] + u] = (int32_t)id;
                else
                    table[(int64_t)cb * max_pages + u] = (int32_t)id;
            }
            memset(kbuf, 0, (size_t)rows * ks * es);
            memset(vbuf, 0, (size_t)rows * vs * es);
            for (int r = 0; r < rows && (int64_t)u * rows + r < len[b]; r++)
                for (int g = 0; g < hk; g++) {
                    const int64_t j = e.k_start + (int64_t)u * rows + r;
                    memcpy((char *)kbuf + (r * ks + (int64_t)g * dq) * es,
                           (const char *)h->k + ckt_fmha_row_offset(h->group_mode, b, g, j, h->k_stride_b, h->k_stride_h, h->k_stride_s) * es,
                           (size_t)dq * es);
                    memcpy((char *)vbuf + (r * vs + (int64_t)g * dv) * es,
                           (const char *)h->v + ckt_fmha_row_offset(h->group_mode, b, g, j, h->v_stride_b, h->v_stride_h, h->v_stride_s) * es,
                           (size_t)dv * es);
                }
            CHECK(ckt_rt_memcpy((char *)c->k + id * rows * ks * (int64_t)es, kbuf, (size_t)rows * ks * es, CKT_H2D));
            CHECK(ckt_rt_memcpy((char *)c->v + id * rows * vs * (int64_t)es, vbuf, (size_t)rows * vs * es, CKT_H2D));
        }
    }
    dev->k = c->k;
    dev->v = c->v;
    dev->k_stride_s = ks, dev->k_stride_h = dq, dev->k_stride_b = rows * ks;
    dev->v_stride_s = vs, dev->v_stride_h = dv, dev->v_stride_b = rows * vs;
    dev->seqstart_k = NULL;
    dev->seqlen_k_ptr = NULL;
    if (page_size > 0) {
        dev->page_size = page_size;
        dev->num_pages = (int)nunits;
        if (sglang) {
            c->dev_arrays[0] = (int32_t *)fmha_device_copy(indptr, (size_t)(B + 1) * 4);
            c->dev_arrays[1] = (int32_t *)fmha_device_copy(table, (size_t)(indptr[B] + 1) * 4);
            c->dev_arrays[2] = (int32_t *)fmha_device_copy(last, (size_t)B * 4);
            dev->kv_indptr = c->dev_arrays[0];
            dev->kv_indices = c->dev_arrays[1];
            dev->kv_last_page_len = c->dev_arrays[2];
        } else {
            c->dev_arrays[0] = (int32_t *)fmha_device_copy(table, (size_t)(cbi ? cache_batch : B) * max_pages * 4);
            dev->block_table = c->dev_arrays[0];
            dev->max_pages_per_seq = max_pages;
        }
    }
    if (!sglang) {
        c->dev_arrays[3] = (int32_t *)fmha_device_copy(len, (size_t)B * 4);
        dev->seqlen_k_ptr = c->dev_arrays[3];
    }
    if (cbi) {
        c->dev_arrays[4] = (int32_t *)fmha_device_copy(cbi, (size_t)B * 4);
        dev->cache_batch_idx = c->dev_arrays[4];
    }
    free(len);
    free(table);
    free(indptr);
    free(last);
    free(kbuf);
    free(vbuf);
}

static inline void fmha_cache_free(fmha_cache *c)
{
    if (c->sparse) {
        free(c->k);
        free(c->v);
    } else {
        ckt_rt_free(c->k);
        ckt_rt_free(c->v);
    }
    for (int i = 0; i < 5; i++)
        ckt_rt_free(c->dev_arrays[i]);
}

/* The scale the kernels use: -scale / -scale_s, or 1/sqrt(d) when 0. */
static inline double fmha_scale(const ckt_fmha_fwd_args *a)
{
    return a->scale != 0.0f ? (double)a->scale : 1.0 / sqrt((double)a->hdim_q);
}

/* >>bias: -bias=n|e|a, CK's option (also 0 / 1 / 2): none, an elementwise
 * bias [batch][nhead_q][seqlen_q][seqlen_k] (dense, the args' dtype,
 * uniform in [-1, 1] from the seed; group mode: max lengths, logical
 * positions), or ALiBi with the paper's slopes 2^(-8 (h + 1) / nhead_q)
 * shared by the batch. ckt/fmha/bias.h has the semantics. */
typedef struct fmha_bias {
    int kind;         /* 0 none, 1 elementwise, 2 ALiBi */
    void *host, *dev; /* the tensor or the slopes, host and device copies */
    int64_t sb, sh, ss;
} fmha_bias;

/* The kind of a -bias value, -1 when it is none of the spellings. */
static inline int fmha_bias_parse(const char *s)
{
    if (!strcmp(s, "n") || !strcmp(s, "0"))
        return 0;
    if (!strcmp(s, "e") || !strcmp(s, "1"))
        return 1;
    if (!strcmp(s, "a") || !strcmp(s, "2"))
        return 2;
    return -1;
}

static inline const char *fmha_bias_name(int kind)
{
    return kind == 1 ? "e" : kind == 2 ? "a" : "n";
}

static inline void fmha_bias_make(fmha_bias *bi, int kind, ckt_dtype dt, int batch, int nhead, int sq, int sk,
                                  uint64_t seed)
{
    memset(bi, 0, sizeof *bi);
    bi->kind = kind;
    if (kind == 1) {
        const size_t n = (size_t)batch * nhead * sq * sk, es = ckt_dtype_size(dt);
        bi->ss = sk;
        bi->sh = (int64_t)sq * sk;
        bi->sb = (int64_t)nhead * sq * sk;
        bi->host = fmha_host_alloc(n, es);
        CHECK(ckt_fill(bi->host, dt, n, ckt_init_uniform(-1, 1), seed));
        bi->dev = fmha_device_copy(bi->host, n * es);
    } else if (kind == 2) {
        float *sl = (float *)fmha_host_alloc((size_t)nhead, 4);
        for (int h = 0; h < nhead; h++)
            sl[h] = (float)pow(2.0, -8.0 * (h + 1) / nhead);
        bi->host = sl;
        bi->dev = fmha_device_copy(sl, (size_t)nhead * 4);
    }
}

static inline void fmha_bias_free(fmha_bias *bi)
{
    ckt_rt_free(bi->dev);
    free(bi->host);
    memset(bi, 0, sizeof *bi);
}

#endif /* CKT_EXAMPLES_FMHA_COMMON_H */
