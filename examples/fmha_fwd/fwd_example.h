/* examples/fmha_fwd/fwd_example.h — the program of examples/fmha_fwd (main.c)
 * and examples/fmha_batch_prefill (the same with batch-prefill defaults):
 * the FMHA forward through the dispatcher (ckt_fmha_fwd, libckt_fmha),
 * validated against the CPU reference, timed. The options are those of CK's
 * tile_example_fmha_fwd where they apply:
 *
 *   bazel run //examples/fmha_fwd -- -b=2 -h=8 -h_k=2 -s=300 -d=128 -mask=t -lse=1 -prec=bf16
 *   bazel run //examples/fmha_fwd -- -mode=1 -b=3 -s=100,1,57 -s_k=130,0,57 -mask=b:16,0
 *   bazel-bin/examples/fmha_fwd/fmha_fwd_gpu -b=4 -h=16 -s=4096 -d=128 -prec=bf16 -v=0 -json=1
 *
 *   -b          batch (2)                    -h, -h_k   query / key-value heads (2; -h_k=-1: = h)
 *   -s          seqlen_q (100); group mode: -s=a,b,c per entry (the last repeats)
 *   -s_k        seqlen_k (-1: = s), a list in group mode like -s
 *   -s_qpad, -s_kpad  group mode: physical rows per entry (>= each length; -1: packed);
 *               the lengths then go in as seqlen_q_ptr / seqlen_k_ptr
 *   -d, -d_v    head dims of q/k and v/o (64; -d_v=-1: = d)
 *   -mode       0 batch, 1 group (varlen)
 *   -mask       0 none; 1 or t: causal top-left; 2 or b: causal bottom-right;
 *               t:l,r / b:l,r: sliding window (FlashAttention sizes, -1 = unlimited)
 *   -lse        1: also write and check LSE
 *   -prec       fp16 | bf16 | fp8bf16 | fp8fp16 (CK's names: e4m3 q/k/v, bf16 / fp16 o;
 *               -descale_q, -descale_k, -descale_v: the inputs are the values
 *               divided by them, default 1; -scale_p: P's quantization scale,
 *               0 = 448; validated against the reference that quantizes P
 *               the same way, |O - O_ref| <= 2^-5 (max|V| + |O_ref|):
 *               docs/fmha.md#fp8)
 *   -iperm, -operm  layout of q/k/v and of o: 1 = [b][h][s][d], 0 = [b][s][h][d]
 *   -scale_s    softmax scale (0: 1/sqrt(d))     -logits_soft_cap  (0: none)
 *   -v          1: validate against the CPU reference (slow for big shapes: -v=0)
 *   -init       uf or 1: uniform [0, 1) (default); ui or 0: integers in [-3, 3];
 *               nf: normal(0, 3)
 *   -seed       (11)  -warmup, -repeat  timed runs (GPU 5 / 20, CPU emulator 0 / 1)
 *   -json       1: print one JSON line with the results instead of the text report
 *   -sink       1: attention sinks (gpt-oss): a logit per query head, random in
 *               [-2, 4] from the seed, joins every row's softmax denominator
 *   -p_drop     dropout probability in [0, 1) (0: off; ckt/fmha/dropout.h), with
 *   -drop_seed  (1) and -drop_offset (0) the Philox seed and offset, and
 *   -s_randval  1: store the random bytes ([b][h][s][s_k]) and, with -v=1,
 *               check them against the reference's at every visible element
 *   -bias       n (none, default), e (elementwise [b][h][s][s_k], uniform [-1, 1]) or
 *               a (ALiBi, slopes 2^(-8 (h+1) / h)); also 0 / 1 / 2 (CK's values)
 *
 * KV cache (inference; docs/fmha_inference.md):
 *   -num_splits       split-KV: 1 none (default), n splits, 0 automatic (with a workspace)
 *   -page_block_size  0: contiguous K/V (default); n > 0: K/V in pools of n-key pages
 *                     (vLLM block table; pages from both ends of the pool)
 *   -page_pool_gb     the pools span at least this many GB (0: just the pages used);
 *                     on the emulator the pages never used stay untouched
 *   -cache_batch_idx  1: entry b reads cache entry batch - b of a cache of batch + 1
 *                     (batch mode, or with pages)
 *   -table            vllm (block table + lengths, default) or sglang (kv_indptr,
 *                     kv_indices, kv_last_page_len), with -page_block_size
 *
 * Validation (CK's tolerances): |O - O_ref| <= atol + rtol |O_ref|, fp16
 * atol = rtol = 1e-3, bf16 1e-2, with O_ref computed in fp64 and rounded to
 * the output type (O is compared in the output type; the kernel rounds its
 * fp32 result once too); LSE in fp32 with the same tolerances.
 * TFLOPS count only the visible (query, key) pairs: 2 (d + d_v) pairs per head.
 * Exit status: 0 valid (or -v=0), 1 mismatch, 2 error.
 */
#ifndef CKT_EXAMPLES_FMHA_FWD_EXAMPLE_H
#define CKT_EXAMPLES_FMHA_FWD_EXAMPLE_H

#include "examples/fmha_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct run_ctx {
    ckt_fmha_fwd_args a;
} run_ctx;

static ckt_status run_fmha(void *ctx, ckt_stream s) { return ckt_fmha_fwd(&((run_ctx *)ctx)->a, s); }

/* The program; name: the example's, for its JSON line. */
static int fmha_fwd_example(int argc, char **argv, const char *name)
{
    static const char *const known[] = {"b", "h", "h_k", "s", "s_k", "s_qpad", "s_kpad", "d", "d_v", "mode",
                                        "mask", "lse", "prec", "iperm", "operm", "scale_s", "logits_soft_cap",
                                        "descale_q", "descale_k", "descale_v", "scale_p",
                                        "v", "init", "seed", "warmup", "repeat", "json", "num_splits",
                                        "page_block_size", "page_pool_gb", "cache_batch_idx", "table", "sink",
                                        "p_drop", "drop_seed", "drop_offset", "s_randval", "bias", NULL};
    if (fmha_check_options(argc, argv, known))
        return 2;
    const int lse_on = (int)ckt_arg_int(argc, argv, "lse", 0);
    const int validate = (int)ckt_arg_int(argc, argv, "v", 1), json = (int)ckt_arg_int(argc, argv, "json", 0);
    const uint64_t seed = (uint64_t)ckt_arg_int(argc, argv, "seed", 11);
    const int warmup = (int)ckt_arg_int(argc, argv, "warmup", FMHA_DEFAULT_WARMUP);
    const int repeat = (int)ckt_arg_int(argc, argv, "repeat", FMHA_DEFAULT_REPEAT);
    const char *prec = ckt_arg_str(argc, argv, "prec", "fp16");
    FILE *report = json ? stderr : stdout; /* with -json the text goes to stderr */
    const int num_splits = (int)ckt_arg_int(argc, argv, "num_splits", 1);
    const int page_size = (int)ckt_arg_int(argc, argv, "page_block_size", 0);
    const double pool_gb = ckt_arg_double(argc, argv, "page_pool_gb", 0.0);
    const int cbi_on = (int)ckt_arg_int(argc, argv, "cache_batch_idx", 0);
    const char *table = ckt_arg_str(argc, argv, "table", "vllm");
    const int sglang = strcmp(table, "sglang") == 0;
    const int sink_on = (int)ckt_arg_int(argc, argv, "sink", 0);
    const int bias_kind = fmha_bias_parse(ckt_arg_str(argc, argv, "bias", "n"));
    if (bias_kind < 0)
        return fmha_usage_error("-bias must be n, e or a (0, 1, 2); got ", ckt_arg_str(argc, argv, "bias", "n"));
    if (sink_on != 0 && sink_on != 1)
        return fmha_usage_error("-sink must be 0 or 1", NULL);
    const double p_drop = ckt_arg_double(argc, argv, "p_drop", 0.0);
    const uint64_t drop_seed = (uint64_t)ckt_arg_int(argc, argv, "drop_seed", 1);
    const uint64_t drop_offset = (uint64_t)ckt_arg_int(argc, argv, "drop_offset", 0);
    const int randval_on = (int)ckt_arg_int(argc, argv, "s_randval", 0);
    if (!(p_drop >= 0.0 && p_drop < 1.0))
        return fmha_usage_error("-p_drop must be in [0, 1)", NULL);
    if (randval_on != 0 && randval_on != 1)
        return fmha_usage_error("-s_randval must be 0 or 1", NULL);
    if (randval_on && p_drop == 0.0)
        return fmha_usage_error("-s_randval=1 needs -p_drop > 0", NULL);
    if (!sglang && strcmp(table, "vllm") != 0)
        return fmha_usage_error("-table must be vllm or sglang, got ", table);
    if (sglang && (page_size == 0 || cbi_on))
        return fmha_usage_error("-table=sglang needs -page_block_size > 0 and no -cache_batch_idx", NULL);
    if (num_splits < 0 || page_size < 0 || pool_gb < 0 || (cbi_on != 0 && cbi_on != 1))
        return fmha_usage_error("-num_splits, -page_block_size, -page_pool_gb must be >= 0, -cache_batch_idx 0 or 1",
                                NULL);

    /* >>arguments (examples/fmha_common.h: sizes, strides, mask, group-mode arrays) */
    static fmha_problem p;
    ckt_init in;
    int usage = fmha_problem_parse(&p, &in, argc, argv, "scale_s");
    if (usage)
        return usage;
    const ckt_fmha_fwd_args a = p.a;
    const int mode = p.mode, iperm = p.iperm, operm = p.operm;
    if (cbi_on && mode == 1 && page_size == 0)
        return fmha_usage_error("-cache_batch_idx=1 needs batch mode (-mode=0) or pages (-page_block_size)", NULL);
    const int batch = a.batch, nhead = a.nhead_q, nhead_k = a.nhead_k, d = a.hdim_q, dv = a.hdim_v;

    /* the host view: same sizes and strides, host arrays */
    ckt_fmha_fwd_args h = fmha_problem_host_view(&p);
    const size_t nq_el = ckt_fmha_fwd_elems(&h, CKT_FMHA_TENSOR_Q), nk_el = ckt_fmha_fwd_elems(&h, CKT_FMHA_TENSOR_K);
    const size_t nv_el = ckt_fmha_fwd_elems(&h, CKT_FMHA_TENSOR_V), no_el = ckt_fmha_fwd_elems(&h, CKT_FMHA_TENSOR_O);
    const size_t nl_el = lse_on ? ckt_fmha_fwd_elems(&h, CKT_FMHA_TENSOR_LSE) : 0;
    const int fp8 = a.dtype == CKT_FP8_E4M3;
    const size_t es = ckt_dtype_size(a.dtype), eo = ckt_dtype_size(fp8 ? a.o_dtype : a.dtype); /* in, out */
    void *hq = fmha_host_alloc(nq_el, es), *hk = fmha_host_alloc(nk_el, es), *hv = fmha_host_alloc(nv_el, es);
    void *ho = fmha_host_alloc(no_el, eo);
    float *hl = (float *)fmha_host_alloc(nl_el, 4), *o_ref = (float *)fmha_host_alloc(no_el, 4);
    float *l_ref = (float *)fmha_host_alloc(nl_el, 4);
    CHECK(ckt_fill(hq, a.dtype, nq_el, in, seed));
    CHECK(ckt_fill(hk, a.dtype, nk_el, in, seed + 1));
    CHECK(ckt_fill(hv, a.dtype, nv_el, in, seed + 2));
    if (fp8) { /* stored values / descale: the same attention whatever the descales */
        const float ds[3] = {(float)ckt_arg_double(argc, argv, "descale_q", 1.0),
                             (float)ckt_arg_double(argc, argv, "descale_k", 1.0),
                             (float)ckt_arg_double(argc, argv, "descale_v", 1.0)};
        void *hx[3] = {hq, hk, hv};
        const size_t nx[3] = {nq_el, nk_el, nv_el};
        for (int t = 0; t < 3; t++)
            for (size_t i = 0; ds[t] != 1.0f && ds[t] > 0.0f && i < nx[t]; i++)
                ckt_store_f32(hx[t], CKT_FP8_E4M3, i, ckt_load_f32(hx[t], CKT_FP8_E4M3, i) / ds[t]);
        h.descale_q = ds[0], h.descale_k = ds[1], h.descale_v = ds[2];
        h.scale_p = (float)ckt_arg_double(argc, argv, "scale_p", 0.0);
    }
    h.q = hq;
    h.k = hk;
    h.v = hv;
    float *hsink = NULL;
    if (sink_on) { /* per-head sink logits */
        hsink = (float *)fmha_host_alloc((size_t)nhead, 4);
        CHECK(ckt_fill(hsink, CKT_F32, (size_t)nhead, ckt_init_uniform(-2, 4), seed + 5));
        h.sink = hsink;
    }
    /* dropout: the same probability, seed and offset for the kernel and the reference */
    h.p_drop = (float)p_drop;
    h.drop_seed = drop_seed;
    h.drop_offset = drop_offset;
    uint8_t *hrv = NULL, *rv_ref = NULL;
    size_t nrv = 0;
    if (randval_on) { /* randval[b][h][i][j]: the max lengths in group mode */
        h.randval_stride_s = h.seqlen_k;
        h.randval_stride_h = (int64_t)h.seqlen_q * h.seqlen_k;
        h.randval_stride_b = (int64_t)nhead * h.randval_stride_h;
        nrv = (size_t)batch * (size_t)h.randval_stride_b;
        hrv = (uint8_t *)fmha_host_alloc(nrv, 1);
        rv_ref = (uint8_t *)fmha_host_alloc(nrv, 1);
    }
    fmha_bias bias; /* -bias: the tensor or the slopes */
    fmha_bias_make(&bias, bias_kind, a.dtype, batch, nhead, a.seqlen_q, a.seqlen_k, seed + 6);
    if (bias_kind == 1) {
        h.bias = bias.host;
        h.bias_stride_b = bias.sb, h.bias_stride_h = bias.sh, h.bias_stride_s = bias.ss;
    } else if (bias_kind == 2) {
        h.alibi_slopes = (const float *)bias.host;
    }

    /* >>device */
    ckt_device_props props;
    CHECK(ckt_rt_device_props(&props));
    void *dout = NULL, *dl = NULL;
    void *dq = fmha_device_copy(hq, nq_el * es), *dk = fmha_device_copy(hk, nk_el * es);
    void *dv_ = fmha_device_copy(hv, nv_el * es);
    CHECK(ckt_rt_malloc(&dout, no_el * eo));
    if (lse_on)
        CHECK(ckt_rt_malloc(&dl, nl_el * 4));
    run_ctx ctx;
    ctx.a = a;
    ctx.a.q = dq;
    ctx.a.k = dk;
    ctx.a.v = dv_;
    ctx.a.o = dout;
    ctx.a.lse = (float *)dl;
    ctx.a.descale_q = h.descale_q, ctx.a.descale_k = h.descale_k, ctx.a.descale_v = h.descale_v;
    ctx.a.scale_p = h.scale_p;
    ctx.a.sink = sink_on ? (const float *)fmha_device_copy(hsink, (size_t)nhead * 4) : NULL;
    ctx.a.p_drop = h.p_drop;
    ctx.a.drop_seed = drop_seed;
    ctx.a.drop_offset = drop_offset;
    ctx.a.randval_stride_b = h.randval_stride_b;
    ctx.a.randval_stride_h = h.randval_stride_h;
    ctx.a.randval_stride_s = h.randval_stride_s;
    if (randval_on)
        CHECK(ckt_rt_malloc((void **)&ctx.a.randval, nrv));
    ctx.a.bias = bias_kind == 1 ? bias.dev : NULL;
    ctx.a.bias_stride_b = h.bias_stride_b, ctx.a.bias_stride_h = h.bias_stride_h, ctx.a.bias_stride_s = h.bias_stride_s;
    ctx.a.alibi_slopes = bias_kind == 2 ? (const float *)bias.dev : NULL;
    fmha_problem_device_arrays(&p, &ctx.a.seqstart_q, &ctx.a.seqstart_k, &ctx.a.seqlen_q_ptr, &ctx.a.seqlen_k_ptr);
    const int32_t *dev_seqstart_k = ctx.a.seqstart_k, *dev_seqlen_k = ctx.a.seqlen_k_ptr;
    fmha_cache cache;
    int32_t *cbi = NULL;
    memset(&cache, 0, sizeof cache);
    if (page_size > 0 || cbi_on) { /* K / V as a cache: pages and / or cache entries */
        if (cbi_on) {
            cbi = (int32_t *)fmha_host_alloc((size_t)batch, 4);
            for (int b = 0; b < batch; b++)
                cbi[b] = batch - b; /* entry 0 of the cache stays unused */
        }
        fmha_cache_make(&cache, &ctx.a, &h, page_size, pool_gb, cbi, batch + 1, sglang);
    }
    void *ws = NULL;
    ctx.a.num_splits = num_splits;
    ctx.a.workspace_bytes = ckt_fmha_fwd_workspace_bytes(&ctx.a);
    if (ctx.a.workspace_bytes > 0) {
        CHECK(ckt_rt_malloc(&ws, ctx.a.workspace_bytes));
        ctx.a.workspace = ws;
    }
    const int splits_used = ckt_fmha_fwd_num_splits(&ctx.a);

    const ckt_fmha_fwd_instance *inst = ckt_fmha_fwd_select(&ctx.a);
    CHECK(run_fmha(&ctx, NULL));
    CHECK(ckt_rt_device_synchronize());
    CHECK(ckt_rt_memcpy(ho, dout, no_el * eo, CKT_D2H));
    if (lse_on)
        CHECK(ckt_rt_memcpy(hl, dl, nl_el * 4, CKT_D2H));
    if (randval_on)
        CHECK(ckt_rt_memcpy(hrv, ctx.a.randval, nrv, CKT_D2H));

    /* >>validation */
    int rc = 0;
    double tol = a.dtype == CKT_BF16 ? 1e-2 : 1e-3, atol = tol;
    if (fp8) { /* docs/fmha.md#fp8: 2^-5 (max|V| descale_v + |O_ref|) against the quantizing reference */
        double vmax = 0.0;
        for (size_t i = 0; i < nv_el; i++)
            vmax = fmax(vmax, fabs((double)ckt_load_f32(hv, CKT_FP8_E4M3, i)));
        tol = 1.0 / 32;
        atol = tol * vmax * (h.descale_v > 0.0f ? h.descale_v : 1.0);
    }
    ckt_compare_result ro, rl;
    memset(&ro, 0, sizeof ro);
    memset(&rl, 0, sizeof rl);
    int64_t rv_bad = 0;
    if (validate) {
        h.randval = rv_ref; /* the reference's random bytes */
        CHECK(ckt_ref_fmha_fwd(&h, o_ref, lse_on ? l_ref : NULL));
        h.randval = NULL;
        for (int b = 0; randval_on && b < batch; b++) { /* the kernel's bytes at every visible (i, j) */
            const ckt_fmha_entry e = ckt_fmha_fwd_entry(&h, b);
            for (int hh = 0; hh < nhead; hh++)
                for (int64_t i = 0; i < e.sq; i++) {
                    int64_t lo, hi;
                    ckt_fmha_fwd_row_keys(&h, i, e.sq, e.sk, &lo, &hi);
                    for (int64_t j = lo; j < hi; j++) {
                        const size_t o = (size_t)(b * h.randval_stride_b + hh * h.randval_stride_h + i * h.randval_stride_s + j);
                        if (hrv[o] != rv_ref[o] && rv_bad++ < 5)
                            fprintf(report, "randval[%d][%d][%lld][%lld]: %d, the reference %d\n", b, hh, (long long)i,
                                    (long long)j, hrv[o], rv_ref[o]);
                    }
                }
        }
        ckt_status s = ckt_ref_fmha_compare(&ro, &rl, &h, ho, lse_on ? hl : NULL, o_ref, lse_on ? l_ref : NULL,
                                            atol, tol);
        if (s != CKT_SUCCESS && s != CKT_ERROR_MISMATCH)
            CHECK(s);
        rc = s == CKT_SUCCESS && rv_bad == 0 ? 0 : 1;
        if (rc || !json) {
            ckt_compare_print(report, "O", &ro);
            if (lse_on)
                ckt_compare_print(report, "LSE", &rl);
        }
    }

    /* >>timing */
    ckt_timing t;
    memset(&t, 0, sizeof t);
    if (repeat > 0)
        CHECK(ckt_time(&t, run_fmha, &ctx, NULL, warmup, repeat, CKT_FLUSH_L2));
    const double flops = ckt_fmha_fwd_flops(&h);
    const double tflops = t.median_ms > 0 ? flops / (t.median_ms * 1e-3) / 1e12 : 0.0;

    char mask_s[64], sq_s[64], sk_s[64];
    fmha_mask_string(mask_s, sizeof mask_s, &a);
    snprintf(sq_s, sizeof sq_s, "%d%s", a.seqlen_q, mode == 1 ? "(max)" : "");
    snprintf(sk_s, sizeof sk_s, "%d%s", a.seqlen_k, mode == 1 ? "(max)" : "");
    const char *valid = validate ? (rc == 0 ? "y" : "n") : "-";
    /* bytes of K and V read once (the decode figure of merit) */
    double kv_bytes = 0.0;
    for (int b = 0; b < batch; b++)
        kv_bytes += (double)ckt_fmha_fwd_entry(&h, b).sk * nhead_k * (d + dv) * (double)es;
    const double gbs = t.median_ms > 0 ? kv_bytes / (t.median_ms * 1e-3) / 1e9 : 0.0;
    char cache_s[96] = "";
    if (page_size > 0 || cbi_on || splits_used != 1)
        snprintf(cache_s, sizeof cache_s, ", splits:%d, page:%d%s%s%s", splits_used, page_size,
                 page_size > 0 ? (sglang ? " sglang" : " vllm") : "", cbi_on ? ", cache_batch_idx" : "",
                 cache.k_bytes > ((size_t)4 << 30) ? ", pool>4GB" : "");
    fprintf(report,
            "[%s|%s|%s] b:%d, h:%d/%d, s:%s/%s, d:%d/%d, scale_s:%g, softcap:%g, lse:%d, mask:%s%s, %s [%s], "
            "%.4f ms, %.4g TFlops, %.4g GB/s, sink:%d, p_drop:%g, bias:%s, valid:%s\n",
            prec, mode ? "group" : "batch", iperm ? "bhsd" : "bshd", batch, nhead, nhead_k, sq_s, sk_s, d, dv,
            fmha_scale(&a), (double)a.softcap, lse_on, mask_s, cache_s,
            inst ? inst->name : "?", props.backend, (double)t.median_ms, tflops, gbs, sink_on, p_drop,
            fmha_bias_name(bias_kind), valid);
    if (json) {
        printf("{\"example\":\"%s\",\"backend\":\"%s\",\"device\":\"%s\",\"instance\":\"%s\",\"prec\":\"%s\","
               "\"mode\":%d,\"b\":%d,\"h\":%d,\"h_k\":%d,\"s\":%d,\"s_k\":%d,\"d\":%d,\"d_v\":%d,\"mask\":\"%s\","
               "\"lse\":%d,\"iperm\":%d,\"operm\":%d,\"scale_s\":%g,\"logits_soft_cap\":%g,"
               "\"num_splits\":%d,\"page_block_size\":%d,\"cache_batch_idx\":%d,\"sink\":%d,\"p_drop\":%g,"
               "\"drop_seed\":%llu,\"drop_offset\":%llu,\"s_randval\":%d,\"randval_mismatches\":%lld,\"bias\":\"%s\",\"kv_gbs\":%.6g,"
               "\"valid\":%s,\"o_max_abs_err\":%g,\"lse_max_abs_err\":%g,"
               "\"flops\":%.0f,\"ms\":%.6f,\"min_ms\":%.6f,\"repeat\":%d,\"tflops\":%.6g}\n",
               name, props.backend, props.name, inst ? inst->name : "?", prec, mode, batch, nhead, nhead_k, a.seqlen_q,
               a.seqlen_k, d, dv, mask_s, lse_on, iperm, operm,
               fmha_scale(&a), (double)a.softcap, splits_used, page_size, cbi_on, sink_on, p_drop,
               (unsigned long long)drop_seed, (unsigned long long)drop_offset, randval_on, (long long)rv_bad,
               fmha_bias_name(bias_kind), gbs,
               validate ? (rc == 0 ? "true" : "false") : "null", ro.max_abs_err, rl.max_abs_err, flops,
               (double)t.median_ms, (double)t.min_ms, t.repeat, tflops);
    }

    ckt_rt_free(dq);
    ckt_rt_free(dk);
    ckt_rt_free(dv_);
    ckt_rt_free(dout);
    ckt_rt_free(dl);
    ckt_rt_free((void *)ctx.a.seqstart_q);
    ckt_rt_free((void *)dev_seqstart_k);
    ckt_rt_free((void *)ctx.a.seqlen_q_ptr);
    ckt_rt_free((void *)dev_seqlen_k);
    ckt_rt_free(ws);
    ckt_rt_free((void *)ctx.a.sink);
    free(hsink);
    ckt_rt_free(ctx.a.randval);
    free(hrv);
    free(rv_ref);
    fmha_bias_free(&bias);
    if (page_size > 0 || cbi_on)
        fmha_cache_free(&cache);
    free(cbi);
    free(hq);
    free(hk);
    free(hv);
    free(ho);
    free(hl);
    free(o_ref);
    free(l_ref);
    return rc;
}

#endif /* CKT_EXAMPLES_FMHA_FWD_EXAMPLE_H */
