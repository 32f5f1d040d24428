/* examples/fmha_fwd — the FMHA forward through the dispatcher (ckt_fmha_fwd,
 * libckt_fmha), validated against the CPU reference, timed. The options are
 * those of CK's tile_example_fmha_fwd where they apply:
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
 *   -prec       fp16 | bf16
 *   -iperm, -operm  layout of q/k/v and of o: 1 = [b][h][s][d], 0 = [b][s][h][d]
 *   -scale_s    softmax scale (0: 1/sqrt(d))     -logits_soft_cap  (0: none)
 *   -v          1: validate against the CPU reference (slow for big shapes: -v=0)
 *   -init       uf or 1: uniform [0, 1) (default); ui or 0: integers in [-3, 3];
 *               nf: normal(0, 3)
 *   -seed       (11)  -warmup, -repeat  timed runs (GPU 5 / 20, CPU emulator 0 / 1)
 *   -json       1: print one JSON line with the results instead of the text report
 *
 * Validation (CK's tolerances): |O - O_ref| <= atol + rtol |O_ref|, fp16
 * atol = rtol = 1e-3, bf16 1e-2, with O_ref computed in fp64 and rounded to
 * the output type (O is compared in the output type; the kernel rounds its
 * fp32 result once too); LSE in fp32 with the same tolerances.
 * TFLOPS count only the visible (query, key) pairs: 2 (d + d_v) pairs per head.
 * Exit status: 0 valid (or -v=0), 1 mismatch, 2 error.
 */
#include "ckt/fmha.h"
#include "examples/check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BATCH 4096

typedef struct run_ctx {
    ckt_fmha_fwd_args a;
} run_ctx;

static ckt_status run_fmha(void *ctx, ckt_stream s) { return ckt_fmha_fwd(&((run_ctx *)ctx)->a, s); }

/* "a,b,c" -> out[0..n); returns n, or -1 on a malformed list. */
static int parse_list(const char *s, int *out, int max)
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
static int parse_mask(const char *s, ckt_fmha_fwd_args *a)
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
        if (parse_list(s + 2, lr, 2) != 2)
            return -1;
        a->mask = s[0] == 't' ? CKT_MASK_WINDOW_TOP_LEFT : CKT_MASK_WINDOW_BOTTOM_RIGHT;
        a->window_left = lr[0];
        a->window_right = lr[1];
    } else
        return -1;
    return 0;
}

static void mask_string(char *buf, size_t n, const ckt_fmha_fwd_args *a)
{
    switch (a->mask) {
    case CKT_MASK_CAUSAL_TOP_LEFT: snprintf(buf, n, "t"); break;
    case CKT_MASK_CAUSAL_BOTTOM_RIGHT: snprintf(buf, n, "b"); break;
    case CKT_MASK_WINDOW_TOP_LEFT: snprintf(buf, n, "t:%d,%d", a->window_left, a->window_right); break;
    case CKT_MASK_WINDOW_BOTTOM_RIGHT: snprintf(buf, n, "b:%d,%d", a->window_left, a->window_right); break;
    default: snprintf(buf, n, "n"); break;
    }
}

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "error: %s%s\n", msg, arg ? arg : "");
    return 2;
}

int main(int argc, char **argv)
{
    static const char *const known[] = {"b", "h", "h_k", "s", "s_k", "s_qpad", "s_kpad", "d", "d_v", "mode",
                                        "mask", "lse", "prec", "iperm", "operm", "scale_s", "logits_soft_cap",
                                        "v", "init", "seed", "warmup", "repeat", "json", NULL};
    int bad = ckt_arg_unknown(argc, argv, known);
    if (bad) {
        fprintf(stderr, "error: unknown option %s (options, as -name=value: -b -h -h_k -s -s_k -s_qpad -s_kpad "
                        "-d -d_v -mode -mask -lse -prec -iperm -operm -scale_s -logits_soft_cap -v -init -seed "
                        "-warmup -repeat -json)\n", argv[bad]);
        return 2;
    }
#if defined(CKT_BACKEND_CPU)
    const int def_warmup = 0, def_repeat = 1;
#else
    const int def_warmup = 5, def_repeat = 20;
#endif
    const int batch = (int)ckt_arg_int(argc, argv, "b", 2), nhead = (int)ckt_arg_int(argc, argv, "h", 2);
    int nhead_k = (int)ckt_arg_int(argc, argv, "h_k", -1);
    int d = (int)ckt_arg_int(argc, argv, "d", 64), dv = (int)ckt_arg_int(argc, argv, "d_v", -1);
    const int mode = (int)ckt_arg_int(argc, argv, "mode", 0), lse_on = (int)ckt_arg_int(argc, argv, "lse", 0);
    const int iperm = (int)ckt_arg_int(argc, argv, "iperm", 1), operm = (int)ckt_arg_int(argc, argv, "operm", 1);
    const int validate = (int)ckt_arg_int(argc, argv, "v", 1), json = (int)ckt_arg_int(argc, argv, "json", 0);
    const int qpad = (int)ckt_arg_int(argc, argv, "s_qpad", -1), kpad = (int)ckt_arg_int(argc, argv, "s_kpad", -1);
    const uint64_t seed = (uint64_t)ckt_arg_int(argc, argv, "seed", 11);
    const int warmup = (int)ckt_arg_int(argc, argv, "warmup", def_warmup);
    const int repeat = (int)ckt_arg_int(argc, argv, "repeat", def_repeat);
    const char *prec = ckt_arg_str(argc, argv, "prec", "fp16"), *init = ckt_arg_str(argc, argv, "init", "uf");
    const char *mask_arg = ckt_arg_str(argc, argv, "mask", "0");
    FILE *report = json ? stderr : stdout; /* with -json the text goes to stderr */

    /* >>arguments */
    ckt_fmha_fwd_args a;
    memset(&a, 0, sizeof a);
    if (ckt_dtype_parse(prec, &a.dtype) != 0 || a.dtype == CKT_F32)
        return usage_error("-prec must be fp16 or bf16, got ", prec);
    if (mode != 0 && mode != 1)
        return usage_error("-mode must be 0 (batch) or 1 (group)", NULL);
    if (batch < 1 || batch > MAX_BATCH || nhead < 1)
        return usage_error("-b must be in [1, 4096] and -h >= 1", NULL);
    if (parse_mask(mask_arg, &a) != 0)
        return usage_error("-mask must be 0, 1, 2, t, b, t:l,r or b:l,r; got ", mask_arg);
    ckt_init in;
    if (strcmp(init, "uf") == 0 || strcmp(init, "1") == 0)
        in = ckt_init_uniform(0.0f, 1.0f);
    else if (strcmp(init, "ui") == 0 || strcmp(init, "0") == 0)
        in = ckt_init_int(-3, 3);
    else if (strcmp(init, "nf") == 0)
        in = ckt_init_normal(0.0f, 3.0f);
    else
        return usage_error("-init must be uf (1), ui (0) or nf; got ", init);
    nhead_k = nhead_k < 0 ? nhead : nhead_k;
    dv = dv < 0 ? d : dv;

    static int sq[MAX_BATCH], sk[MAX_BATCH], lq[MAX_BATCH], lk[MAX_BATCH];
    int nq = parse_list(ckt_arg_str(argc, argv, "s", "100"), lq, MAX_BATCH);
    int nk = parse_list(ckt_arg_str(argc, argv, "s_k", "-1"), lk, MAX_BATCH);
    if (nq < 1 || nk < 1 || (mode == 0 && (nq > 1 || nk > 1)) || nq > batch || nk > batch)
        return usage_error("-s / -s_k: one length (batch mode) or a list of at most -b lengths (group mode)", NULL);
    for (int b = 0; b < batch; b++) {
        sq[b] = lq[b < nq ? b : nq - 1];
        sk[b] = lk[b < nk ? b : nk - 1];
        sk[b] = sk[b] < 0 ? sq[b] : sk[b];
        if (sq[b] < 0)
            return usage_error("-s: lengths must be >= 0", NULL);
    }
    if (mode == 0 && (qpad >= 0 || kpad >= 0))
        return usage_error("-s_qpad / -s_kpad need -mode=1", NULL);

    /* sizes and strides: group mode packs the entries along s (batch stride 0) */
    static int32_t seqstart_q[MAX_BATCH + 1], seqstart_k[MAX_BATCH + 1];
    a.batch = batch;
    a.nhead_q = nhead;
    a.nhead_k = nhead_k;
    a.hdim_q = d;
    a.hdim_v = dv;
    a.group_mode = mode;
    a.scale = (float)ckt_arg_double(argc, argv, "scale_s", 0.0);
    a.softcap = (float)ckt_arg_double(argc, argv, "logits_soft_cap", 0.0);
    int64_t rows_q = sq[0], rows_k = sk[0];
    if (mode == 1) {
        seqstart_q[0] = seqstart_k[0] = 0;
        for (int b = 0; b < batch; b++) {
            if ((qpad >= 0 && qpad < sq[b]) || (kpad >= 0 && kpad < sk[b]))
                return usage_error("-s_qpad / -s_kpad must be >= every length", NULL);
            seqstart_q[b + 1] = seqstart_q[b] + (qpad >= 0 ? qpad : sq[b]);
            seqstart_k[b + 1] = seqstart_k[b] + (kpad >= 0 ? kpad : sk[b]);
            a.seqlen_q = sq[b] > a.seqlen_q ? sq[b] : a.seqlen_q;
            a.seqlen_k = sk[b] > a.seqlen_k ? sk[b] : a.seqlen_k;
        }
        rows_q = seqstart_q[batch];
        rows_k = seqstart_k[batch];
    } else {
        a.seqlen_q = sq[0];
        a.seqlen_k = sk[0];
    }
    ckt_fmha_strides(&a.q_stride_b, &a.q_stride_h, &a.q_stride_s, iperm, nhead, (int)rows_q, d);
    ckt_fmha_strides(&a.k_stride_b, &a.k_stride_h, &a.k_stride_s, iperm, nhead_k, (int)rows_k, d);
    ckt_fmha_strides(&a.v_stride_b, &a.v_stride_h, &a.v_stride_s, iperm, nhead_k, (int)rows_k, dv);
    ckt_fmha_strides(&a.o_stride_b, &a.o_stride_h, &a.o_stride_s, operm, nhead, (int)rows_q, dv);
    a.lse_stride_h = rows_q; /* LSE [b][h][s] (group mode [h][total]) */
    a.lse_stride_b = mode == 1 ? 0 : (int64_t)nhead * rows_q;
    if (mode == 1)
        a.q_stride_b = a.k_stride_b = a.v_stride_b = a.o_stride_b = 0;

    /* the host view: same sizes and strides, host arrays */
    ckt_fmha_fwd_args h = a;
    if (mode == 1) {
        h.seqstart_q = seqstart_q;
        h.seqstart_k = seqstart_k;
        h.seqlen_q_ptr = qpad >= 0 ? sq : NULL;
        h.seqlen_k_ptr = kpad >= 0 ? sk : NULL;
    }
    const size_t nq_el = ckt_fmha_fwd_elems(&h, CKT_FMHA_TENSOR_Q), nk_el = ckt_fmha_fwd_elems(&h, CKT_FMHA_TENSOR_K);
    const size_t nv_el = ckt_fmha_fwd_elems(&h, CKT_FMHA_TENSOR_V), no_el = ckt_fmha_fwd_elems(&h, CKT_FMHA_TENSOR_O);
    const size_t nl_el = lse_on ? ckt_fmha_fwd_elems(&h, CKT_FMHA_TENSOR_LSE) : 0;
    const size_t es = ckt_dtype_size(a.dtype);
    void *hq = calloc(nq_el + 1, es), *hk = calloc(nk_el + 1, es), *hv = calloc(nv_el + 1, es);
    void *ho = calloc(no_el + 1, es);
    float *hl = (float *)calloc(nl_el + 1, 4), *o_ref = (float *)calloc(no_el + 1, 4);
    float *l_ref = (float *)calloc(nl_el + 1, 4);
    if (!hq || !hk || !hv || !ho || !hl || !o_ref || !l_ref)
        return usage_error("out of host memory", NULL);
    CHECK(ckt_fill(hq, a.dtype, nq_el, in, seed));
    CHECK(ckt_fill(hk, a.dtype, nk_el, in, seed + 1));
    CHECK(ckt_fill(hv, a.dtype, nv_el, in, seed + 2));
    h.q = hq;
    h.k = hk;
    h.v = hv;

    /* >>device */
    ckt_device_props props;
    CHECK(ckt_rt_device_props(&props));
    void *dq = NULL, *dk = NULL, *dv_ = NULL, *dout = NULL, *dl = NULL, *dsq = NULL, *dsk = NULL, *dlq = NULL,
         *dlk = NULL;
    CHECK(ckt_rt_malloc(&dq, nq_el * es));
    CHECK(ckt_rt_malloc(&dk, nk_el * es));
    CHECK(ckt_rt_malloc(&dv_, nv_el * es));
    CHECK(ckt_rt_malloc(&dout, no_el * es));
    CHECK(ckt_rt_memcpy(dq, hq, nq_el * es, CKT_H2D));
    CHECK(ckt_rt_memcpy(dk, hk, nk_el * es, CKT_H2D));
    CHECK(ckt_rt_memcpy(dv_, hv, nv_el * es, CKT_H2D));
    if (lse_on)
        CHECK(ckt_rt_malloc(&dl, nl_el * 4));
    if (mode == 1) {
        const size_t sb = (size_t)(batch + 1) * 4, lb = (size_t)batch * 4;
        CHECK(ckt_rt_malloc(&dsq, sb));
        CHECK(ckt_rt_malloc(&dsk, sb));
        CHECK(ckt_rt_memcpy(dsq, seqstart_q, sb, CKT_H2D));
        CHECK(ckt_rt_memcpy(dsk, seqstart_k, sb, CKT_H2D));
        if (qpad >= 0) {
            CHECK(ckt_rt_malloc(&dlq, lb));
            CHECK(ckt_rt_memcpy(dlq, sq, lb, CKT_H2D));
        }
        if (kpad >= 0) {
            CHECK(ckt_rt_malloc(&dlk, lb));
            CHECK(ckt_rt_memcpy(dlk, sk, lb, CKT_H2D));
        }
    }
    run_ctx ctx;
    ctx.a = a;
    ctx.a.q = dq;
    ctx.a.k = dk;
    ctx.a.v = dv_;
    ctx.a.o = dout;
    ctx.a.lse = (float *)dl;
    ctx.a.seqstart_q = (const int32_t *)dsq;
    ctx.a.seqstart_k = (const int32_t *)dsk;
    ctx.a.seqlen_q_ptr = (const int32_t *)dlq;
    ctx.a.seqlen_k_ptr = (const int32_t *)dlk;

    const ckt_fmha_fwd_instance *inst = ckt_fmha_fwd_select(&ctx.a);
    CHECK(run_fmha(&ctx, NULL));
    CHECK(ckt_rt_device_synchronize());
    CHECK(ckt_rt_memcpy(ho, dout, no_el * es, CKT_D2H));
    if (lse_on)
        CHECK(ckt_rt_memcpy(hl, dl, nl_el * 4, CKT_D2H));

    /* >>validation */
    int rc = 0;
    const double tol = a.dtype == CKT_BF16 ? 1e-2 : 1e-3;
    ckt_compare_result ro, rl;
    memset(&ro, 0, sizeof ro);
    memset(&rl, 0, sizeof rl);
    if (validate) {
        CHECK(ckt_ref_fmha_fwd(&h, o_ref, lse_on ? l_ref : NULL));
        ckt_status s = ckt_ref_fmha_compare(&ro, &rl, &h, ho, lse_on ? hl : NULL, o_ref, lse_on ? l_ref : NULL,
                                            tol, tol);
        if (s != CKT_SUCCESS && s != CKT_ERROR_MISMATCH)
            CHECK(s);
        rc = s == CKT_SUCCESS ? 0 : 1;
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
    mask_string(mask_s, sizeof mask_s, &a);
    snprintf(sq_s, sizeof sq_s, "%d%s", a.seqlen_q, mode == 1 ? "(max)" : "");
    snprintf(sk_s, sizeof sk_s, "%d%s", a.seqlen_k, mode == 1 ? "(max)" : "");
    const char *valid = validate ? (rc == 0 ? "y" : "n") : "-";
    fprintf(report,
            "[%s|%s|%s] b:%d, h:%d/%d, s:%s/%s, d:%d/%d, scale_s:%g, softcap:%g, lse:%d, mask:%s, %s [%s], "
            "%.4f ms, %.4g TFlops, valid:%s\n",
            prec, mode ? "group" : "batch", iperm ? "bhsd" : "bshd", batch, nhead, nhead_k, sq_s, sk_s, d, dv,
            a.scale != 0.0f ? (double)a.scale : 1.0 / sqrt((double)d), (double)a.softcap, lse_on, mask_s,
            inst ? inst->name : "?", props.backend, (double)t.median_ms, tflops, valid);
    if (json) {
        printf("{\"example\":\"fmha_fwd\",\"backend\":\"%s\",\"device\":\"%s\",\"instance\":\"%s\",\"prec\":\"%s\","
               "\"mode\":%d,\"b\":%d,\"h\":%d,\"h_k\":%d,\"s\":%d,\"s_k\":%d,\"d\":%d,\"d_v\":%d,\"mask\":\"%s\","
               "\"lse\":%d,\"iperm\":%d,\"operm\":%d,\"scale_s\":%g,\"logits_soft_cap\":%g,"
               "\"valid\":%s,\"o_max_abs_err\":%g,\"lse_max_abs_err\":%g,"
               "\"flops\":%.0f,\"ms\":%.6f,\"min_ms\":%.6f,\"repeat\":%d,\"tflops\":%.6g}\n",
               props.backend, props.name, inst ? inst->name : "?", prec, mode, batch, nhead, nhead_k, a.seqlen_q,
               a.seqlen_k, d, dv, mask_s, lse_on, iperm, operm,
               a.scale != 0.0f ? (double)a.scale : 1.0 / sqrt((double)d), (double)a.softcap,
               validate ? (rc == 0 ? "true" : "false") : "null", ro.max_abs_err, rl.max_abs_err, flops,
               (double)t.median_ms, (double)t.min_ms, t.repeat, tflops);
    }

    ckt_rt_free(dq);
    ckt_rt_free(dk);
    ckt_rt_free(dv_);
    ckt_rt_free(dout);
    ckt_rt_free(dl);
    ckt_rt_free(dsq);
    ckt_rt_free(dsk);
    ckt_rt_free(dlq);
    ckt_rt_free(dlk);
    free(hq);
    free(hk);
    free(hv);
    free(ho);
    free(hl);
    free(o_ref);
    free(l_ref);
    return rc;
}
