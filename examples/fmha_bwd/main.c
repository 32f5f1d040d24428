/* examples/fmha_bwd — the FMHA backward through the dispatcher (ckt_fmha_bwd,
 * libckt_fmha): the forward (ckt_fmha_fwd with LSE), then the backward on a
 * random dO, dQ / dK / dV validated against the CPU reference, timed. The
 * options are those of CK's tile_example_fmha_bwd where they apply:
 *
 *   bazel run //examples/fmha_bwd -- -b=2 -h=8 -h_k=2 -s=300 -d=128 -mask=t -prec=bf16
 *   bazel run //examples/fmha_bwd -- -mode=1 -b=3 -s=100,1,57 -s_k=130,0,57 -mask=b:16,0 -deterministic=1
 *   bazel-bin/examples/fmha_bwd/fmha_bwd_gpu -b=4 -h=16 -s=4096 -d=128 -prec=bf16 -v=0 -json=1
 *
 *   -b -h -h_k -s -s_k -d -d_v -mode -mask -prec -iperm -operm -init   as in examples/fmha_fwd
 *               (examples/fmha_common.h): batch (2), heads (2; -h_k=-1: = h), lengths (100;
 *               group mode -s=a,b,c), head dims (64), 0 batch / 1 group, masks 0 1 2 t b t:l,r
 *               b:l,r, fp16 | bf16, layouts (1 [b][h][s][d], 0 [b][s][h][d]), uf | ui | nf
 *   -s_qpad, -s_kpad, -logits_soft_cap   ckt's, as in examples/fmha_fwd (group-mode padding,
 *               soft-cap)
 *   -scale      softmax scale (0: 1/sqrt(d))
 *   -deterministic  1: the deterministic backward (bitwise reproducible dQ / dK / dV)
 *   -prepare    call (default): the one-call ckt_fmha_bwd (plans and prepares on every call);
 *               sync | async: the plan API (ckt/fmha/workspace.h): ckt_fmha_bwd_plan_init once,
 *               a workspace of ckt_fmha_bwd_workspace_upper_bound, then per run
 *               ckt_fmha_bwd_prepare (sync) or ckt_fmha_bwd_prepare_async (no host wait: pinned
 *               staging of plan.staging_bytes from ckt_rt_malloc_host, its status checked after
 *               the first run) and ckt_fmha_bwd_run
 *   -bias       n (none, default), e (elementwise [b][h][s][s_k], uniform [-1, 1]) or a (ALiBi,
 *               slopes 2^(-8 (h+1) / h)); also 0 / 1 / 2 (CK's values); in the forward and the backward
 *   -dbias      1: with -bias=e, the bias gradient dbias (= dS, [b][h][s][s_k]), validated against
 *               ckt_ref_fmha_bwd_ex with the dQ tolerances (and, with -deterministic=1, unchanged
 *               over the timed runs); 0 (default): not computed
 *   -p_drop     dropout probability in [0, 1) (0: off; ckt/fmha/dropout.h), with -drop_seed (1)
 *               and -drop_offset (0): the forward drops with them, the backward regenerates
 *               the same mask; the reference (ckt_ref_fmha_bwd) uses the same mask
 *   -v          1: validate against the CPU reference (slow for big shapes: -v=0)
 *   -seed       (11)  -warmup, -repeat  timed backward runs (GPU 5 / 20, CPU emulator 0 / 1)
 *   -json       1: print one JSON line with the results instead of the text report
 *   -sink       1: attention sinks (gpt-oss): a logit per query head, random in [-2, 4] from
 *               the seed, in the forward and the backward; dsink is validated against
 *               ckt_ref_fmha_bwd_dsink (|err| <= 1e-3 (1 + |ref|): fp32 sums of the same terms)
 *               and, with -deterministic=1, must not change over the timed runs either
 *
 * Data: q, k, v, dO from -init with seeds seed .. seed + 3; O and LSE from the forward kernel.
 * Validation: the reference (ckt/fmha/ref_bwd.h, fp64) takes the same q, k, v, dO and the
 * kernel's O and LSE; dQ, dK, dV are compared in the output type with CK's tolerances
 * (ckt_fmha_bwd_tolerance). TFLOPS: backward FLOPs = 2.5 x the forward's mask-aware count
 * (ckt_fmha_bwd_flops); the time is the backward's alone (all its stages, and with
 * -prepare=call or sync/async the preparation of the workspace too).
 * Hashes: FNV-1a 64 over the raw bytes of each of dq, dk, dv as laid out in device memory
 * (the whole tensor: elements of [b][h][s][d] or [b][s][h][d], group-mode padding rows
 * included, zeroed before the first run), printed as 16 hex digits (dq_hash, dk_hash,
 * dv_hash in the JSON line). With -deterministic=1 the hashes are taken again after the
 * timed runs and must not change.
 * Exit status: 0 valid (or -v=0), 1 mismatch (or a deterministic rerun that differs),
 * 2 error.
 */
#include "ckt/fmha/ref_bwd.h" /* ckt_ref_fmha_bwd, ckt_fmha_bwd_flops, ckt_fmha_bwd_tolerance */
#include "examples/fmha_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum prepare_mode { PREPARE_CALL, PREPARE_SYNC, PREPARE_ASYNC } prepare_mode;

typedef struct run_ctx {
    ckt_fmha_bwd_args a;
    prepare_mode prepare;
    ckt_fmha_bwd_plan plan; /* -prepare=sync|async */
    void *staging;          /* -prepare=async: pinned host memory of plan.staging_bytes */
} run_ctx;

/* One backward, as timed. */
static ckt_status run_bwd(void *ctx_, ckt_stream s)
{
    run_ctx *ctx = (run_ctx *)ctx_;
    if (ctx->prepare == PREPARE_CALL)
        return ckt_fmha_bwd(&ctx->a, s);
    ckt_status st = ctx->prepare == PREPARE_ASYNC
                        ? ckt_fmha_bwd_prepare_async(&ctx->plan, &ctx->a, ctx->staging, ctx->plan.staging_bytes, s)
                        : ckt_fmha_bwd_prepare(&ctx->plan, &ctx->a, s);
    return st != CKT_SUCCESS ? st : ckt_fmha_bwd_run(&ctx->plan, &ctx->a, s);
}

/* The backward's arguments for the forward's problem: the same sizes, strides, group-mode
 * arrays, mask, scale and soft-cap; dO laid out like O, dQ like Q, dK like K, dV like V.
 * No tensor is set. */
static ckt_fmha_bwd_args bwd_args_of(const ckt_fmha_fwd_args *f)
{
    ckt_fmha_bwd_args a = CKT_ZERO_INIT;
    a.dtype = f->dtype;
    a.batch = f->batch;
    a.nhead_q = f->nhead_q;
    a.nhead_k = f->nhead_k;
    a.seqlen_q = f->seqlen_q;
    a.seqlen_k = f->seqlen_k;
    a.hdim_q = f->hdim_q;
    a.hdim_v = f->hdim_v;
    a.q_stride_b = a.dq_stride_b = f->q_stride_b;
    a.q_stride_h = a.dq_stride_h = f->q_stride_h;
    a.q_stride_s = a.dq_stride_s = f->q_stride_s;
    a.k_stride_b = a.dk_stride_b = f->k_stride_b;
    a.k_stride_h = a.dk_stride_h = f->k_stride_h;
    a.k_stride_s = a.dk_stride_s = f->k_stride_s;
    a.v_stride_b = a.dv_stride_b = f->v_stride_b;
    a.v_stride_h = a.dv_stride_h = f->v_stride_h;
    a.v_stride_s = a.dv_stride_s = f->v_stride_s;
    a.o_stride_b = a.do_stride_b = f->o_stride_b;
    a.o_stride_h = a.do_stride_h = f->o_stride_h;
    a.o_stride_s = a.do_stride_s = f->o_stride_s;
    a.lse_stride_b = f->lse_stride_b;
    a.lse_stride_h = f->lse_stride_h;
    a.group_mode = f->group_mode;
    a.seqstart_q = f->seqstart_q;
    a.seqstart_k = f->seqstart_k;
    a.seqlen_q_ptr = f->seqlen_q_ptr;
    a.seqlen_k_ptr = f->seqlen_k_ptr;
    a.scale = f->scale;
    a.softcap = f->softcap;
    a.mask = f->mask;
    a.window_left = f->window_left;
    a.window_right = f->window_right;
    return a;
}

/* FNV-1a, 64 bits (offset basis 0xcbf29ce484222325, prime 0x100000001b3), over n bytes. */
static uint64_t fnv1a64(const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The hash of bytes of device memory (copied to the host buffer tmp of at least bytes). */
static uint64_t device_hash(const void *dev, void *tmp, size_t bytes)
{
    CHECK(ckt_rt_memcpy(tmp, dev, bytes, CKT_D2H));
    return fnv1a64(tmp, bytes);
}

/* -bias / -dbias: 0 when the value means "off" (one of the accepted spellings). */
static int off_value(const char *v, const char *const *ok)
{
    for (; *ok; ok++)
        if (strcmp(v, *ok) == 0)
            return 0;
    char *end;
    double x = strtod(v, &end); /* numeric zero: 0, 0.0, 0e0 */
    return !(end != v && *end == 0 && x == 0.0);
}

int main(int argc, char **argv)
{
    static const char *const known[] = {"b", "h", "h_k", "s", "s_k", "s_qpad", "s_kpad", "d", "d_v", "mode",
                                        "mask", "prec", "iperm", "operm", "scale", "logits_soft_cap",
                                        "deterministic", "prepare", "bias", "dbias", "p_drop", "v", "init",
                                        "seed", "warmup", "repeat", "json", "sink", "drop_seed", "drop_offset", NULL};
    if (fmha_check_options(argc, argv, known))
        return 2;
    static const char *const num_off[] = {NULL};
    const char *bias = ckt_arg_str(argc, argv, "bias", "n"), *dbias = ckt_arg_str(argc, argv, "dbias", "0");
    const double p_drop = ckt_arg_double(argc, argv, "p_drop", 0.0);
    const uint64_t drop_seed = (uint64_t)ckt_arg_int(argc, argv, "drop_seed", 1);
    const uint64_t drop_offset = (uint64_t)ckt_arg_int(argc, argv, "drop_offset", 0);
    if (!(p_drop >= 0.0 && p_drop < 1.0))
        return fmha_usage_error("-p_drop must be in [0, 1)", NULL);
    const int bias_kind = fmha_bias_parse(bias);
    if (bias_kind < 0)
        return fmha_usage_error("-bias must be n, e or a (0, 1, 2); got ", bias);
    const int dbias_on = strcmp(dbias, "1") == 0 ? 1 : off_value(dbias, num_off) ? -1 : 0;
    if (dbias_on < 0)
        return fmha_usage_error("-dbias must be 0 or 1; got ", dbias);
    if (dbias_on && bias_kind != 1)
        return fmha_usage_error("-dbias=1 needs -bias=e (the gradient of an elementwise bias; ALiBi has none)", NULL);
    const int validate = (int)ckt_arg_int(argc, argv, "v", 1), json = (int)ckt_arg_int(argc, argv, "json", 0);
    const int deterministic = (int)ckt_arg_int(argc, argv, "deterministic", 0);
    const uint64_t seed = (uint64_t)ckt_arg_int(argc, argv, "seed", 11);
    const int warmup = (int)ckt_arg_int(argc, argv, "warmup", FMHA_DEFAULT_WARMUP);
    const int repeat = (int)ckt_arg_int(argc, argv, "repeat", FMHA_DEFAULT_REPEAT);
    const char *prec = ckt_arg_str(argc, argv, "prec", "fp16");
    const char *prepare_arg = ckt_arg_str(argc, argv, "prepare", "call");
    FILE *report = json ? stderr : stdout; /* with -json the text goes to stderr */
    prepare_mode prepare;
    if (strcmp(prepare_arg, "call") == 0)
        prepare = PREPARE_CALL;
    else if (strcmp(prepare_arg, "sync") == 0)
        prepare = PREPARE_SYNC;
    else if (strcmp(prepare_arg, "async") == 0)
        prepare = PREPARE_ASYNC;
    else
        return fmha_usage_error("-prepare must be call, sync or async; got ", prepare_arg);
    if (deterministic != 0 && deterministic != 1)
        return fmha_usage_error("-deterministic must be 0 or 1", NULL);
    const int sink_on = (int)ckt_arg_int(argc, argv, "sink", 0);
    if (sink_on != 0 && sink_on != 1)
        return fmha_usage_error("-sink must be 0 or 1", NULL);

    /* >>arguments (examples/fmha_common.h: sizes, strides, mask, group-mode arrays) */
    static fmha_problem p;
    ckt_init in;
    int usage = fmha_problem_parse(&p, &in, argc, argv, "scale");
    if (usage)
        return usage;
    const ckt_fmha_fwd_args f = p.a;
    const int mode = p.mode, iperm = p.iperm, operm = p.operm;

    /* the host view of the forward: same sizes and strides, host arrays */
    ckt_fmha_fwd_args hf = fmha_problem_host_view(&p);
    const size_t nq_el = ckt_fmha_fwd_elems(&hf, CKT_FMHA_TENSOR_Q), nk_el = ckt_fmha_fwd_elems(&hf, CKT_FMHA_TENSOR_K);
    const size_t nv_el = ckt_fmha_fwd_elems(&hf, CKT_FMHA_TENSOR_V), no_el = ckt_fmha_fwd_elems(&hf, CKT_FMHA_TENSOR_O);
    const size_t nl_el = ckt_fmha_fwd_elems(&hf, CKT_FMHA_TENSOR_LSE);
    const size_t es = ckt_dtype_size(f.dtype);
    void *hq = fmha_host_alloc(nq_el, es), *hk = fmha_host_alloc(nk_el, es), *hv = fmha_host_alloc(nv_el, es);
    void *ho = fmha_host_alloc(no_el, es), *hdo = fmha_host_alloc(no_el, es);
    void *hdq = fmha_host_alloc(nq_el, es), *hdk = fmha_host_alloc(nk_el, es), *hdv = fmha_host_alloc(nv_el, es);
    float *hl = (float *)fmha_host_alloc(nl_el, 4);
    size_t n_max = nq_el > nk_el ? nq_el : nk_el;
    n_max = n_max > nv_el ? n_max : nv_el;
    void *tmp = fmha_host_alloc(n_max, es);
    CHECK(ckt_fill(hq, f.dtype, nq_el, in, seed));
    CHECK(ckt_fill(hk, f.dtype, nk_el, in, seed + 1));
    CHECK(ckt_fill(hv, f.dtype, nv_el, in, seed + 2));
    CHECK(ckt_fill(hdo, f.dtype, no_el, in, seed + 3));
    float *hsink = NULL, *hdsink = NULL, *ddsink = NULL;
    if (sink_on) { /* per-head sink logits and their gradient */
        hsink = (float *)fmha_host_alloc((size_t)f.nhead_q, 4);
        hdsink = (float *)fmha_host_alloc((size_t)f.nhead_q, 4);
        CHECK(ckt_fill(hsink, CKT_F32, (size_t)f.nhead_q, ckt_init_uniform(-2, 4), seed + 5));
    }
    fmha_bias bias_t; /* -bias: the tensor or the slopes; -dbias: the gradient, dense like the bias */
    fmha_bias_make(&bias_t, bias_kind, f.dtype, f.batch, f.nhead_q, f.seqlen_q, f.seqlen_k, seed + 6);
    const size_t nb_el = dbias_on ? (size_t)f.batch * f.nhead_q * f.seqlen_q * f.seqlen_k : 0;
    void *hdbias = dbias_on ? fmha_host_alloc(nb_el, es) : NULL, *ddbias = NULL;

    /* >>device */
    ckt_device_props props;
    CHECK(ckt_rt_device_props(&props));
    void *dq = fmha_device_copy(hq, nq_el * es), *dk = fmha_device_copy(hk, nk_el * es);
    void *dv = fmha_device_copy(hv, nv_el * es), *ddo = fmha_device_copy(hdo, no_el * es);
    void *dout = NULL, *dl = NULL, *ddq = NULL, *ddk = NULL, *ddv = NULL, *ws = NULL;
    CHECK(ckt_rt_malloc(&dout, no_el * es));
    CHECK(ckt_rt_malloc(&dl, nl_el * 4));
    CHECK(ckt_rt_malloc(&ddq, nq_el * es));
    CHECK(ckt_rt_malloc(&ddk, nk_el * es));
    CHECK(ckt_rt_malloc(&ddv, nv_el * es));
    CHECK(ckt_rt_memset(ddq, 0, nq_el * es)); /* rows the backward leaves alone hash as zeros */
    CHECK(ckt_rt_memset(ddk, 0, nk_el * es));
    CHECK(ckt_rt_memset(ddv, 0, nv_el * es));

    /* >>forward: O and LSE */
    ckt_fmha_fwd_args fa = f;
    fa.q = dq;
    fa.k = dk;
    fa.v = dv;
    fa.o = dout;
    fa.lse = (float *)dl;
    fa.sink = sink_on ? (const float *)fmha_device_copy(hsink, (size_t)f.nhead_q * 4) : NULL;
    fa.p_drop = (float)p_drop; /* the forward drops; the backward regenerates its mask */
    fa.drop_seed = drop_seed;
    fa.drop_offset = drop_offset;
    fa.bias = bias_kind == 1 ? bias_t.dev : NULL;
    fa.bias_stride_b = bias_t.sb, fa.bias_stride_h = bias_t.sh, fa.bias_stride_s = bias_t.ss;
    fa.alibi_slopes = bias_kind == 2 ? (const float *)bias_t.dev : NULL;
    if (dbias_on) {
        CHECK(ckt_rt_malloc(&ddbias, nb_el * es));
        CHECK(ckt_rt_memset(ddbias, 0, nb_el * es));
    }
    if (sink_on)
        CHECK(ckt_rt_malloc((void **)&ddsink, (size_t)f.nhead_q * 4));
    fmha_problem_device_arrays(&p, &fa.seqstart_q, &fa.seqstart_k, &fa.seqlen_q_ptr, &fa.seqlen_k_ptr);
    CHECK(ckt_fmha_fwd(&fa, NULL));
    CHECK(ckt_rt_device_synchronize());
    CHECK(ckt_rt_memcpy(ho, dout, no_el * es, CKT_D2H));
    CHECK(ckt_rt_memcpy(hl, dl, nl_el * 4, CKT_D2H));

    /* >>backward: workspace, then one run to validate and hash */
    static run_ctx ctx;
    ctx.a = bwd_args_of(&fa);
    ctx.a.q = dq;
    ctx.a.k = dk;
    ctx.a.v = dv;
    ctx.a.o = dout;
    ctx.a.lse = (const float *)dl;
    ctx.a.dout = ddo;
    ctx.a.dq = ddq;
    ctx.a.dk = ddk;
    ctx.a.dv = ddv;
    ctx.a.deterministic = deterministic;
    ctx.a.sink = fa.sink;
    ctx.a.dsink = ddsink;
    ctx.a.p_drop = fa.p_drop;
    ctx.a.drop_seed = drop_seed;
    ctx.a.drop_offset = drop_offset;
    ctx.a.bias = fa.bias;
    ctx.a.bias_stride_b = fa.bias_stride_b, ctx.a.bias_stride_h = fa.bias_stride_h, ctx.a.bias_stride_s = fa.bias_stride_s;
    ctx.a.alibi_slopes = fa.alibi_slopes;
    ctx.a.dbias = ddbias;
    ctx.a.dbias_stride_b = bias_t.sb, ctx.a.dbias_stride_h = bias_t.sh, ctx.a.dbias_stride_s = bias_t.ss;
    ctx.prepare = prepare;
    const ckt_fmha_bwd_traits traits = ckt_fmha_bwd_traits_of(&ctx.a);
    const ckt_fmha_bwd_instance *inst = ckt_fmha_bwd_select(&traits);
    if (prepare == PREPARE_CALL) {
        ctx.a.workspace_bytes = ckt_fmha_bwd_workspace_bytes(&ctx.a);
        if (ctx.a.workspace_bytes == 0) {
            fprintf(stderr, "error: ckt_fmha_bwd_workspace_bytes: %s\n", ckt_fmha_last_error());
            exit(2);
        }
    } else {
        CHECK(ckt_fmha_bwd_plan_init(&ctx.plan, &traits));
        ctx.a.workspace_bytes = ckt_fmha_bwd_workspace_upper_bound(&ctx.plan);
        if (prepare == PREPARE_ASYNC)
            CHECK(ckt_rt_malloc_host(&ctx.staging, ctx.plan.staging_bytes));
    }
    CHECK(ckt_rt_malloc(&ws, ctx.a.workspace_bytes));
    ctx.a.workspace = ws;
    CHECK(run_bwd(&ctx, NULL));
    CHECK(ckt_rt_device_synchronize());
    if (prepare == PREPARE_ASYNC)
        CHECK(ckt_fmha_bwd_prepare_async_status(ctx.staging)); /* the packing's verdict on the lengths */
    CHECK(ckt_rt_memcpy(hdq, ddq, nq_el * es, CKT_D2H));
    CHECK(ckt_rt_memcpy(hdk, ddk, nk_el * es, CKT_D2H));
    CHECK(ckt_rt_memcpy(hdv, ddv, nv_el * es, CKT_D2H));
    const uint64_t hash_dq = fnv1a64(hdq, nq_el * es), hash_dk = fnv1a64(hdk, nk_el * es);
    const uint64_t hash_dv = fnv1a64(hdv, nv_el * es);
    if (sink_on)
        CHECK(ckt_rt_memcpy(hdsink, ddsink, (size_t)f.nhead_q * 4, CKT_D2H));
    if (dbias_on)
        CHECK(ckt_rt_memcpy(hdbias, ddbias, nb_el * es, CKT_D2H));

    /* the host view of the backward: host tensors, the kernel's O and LSE */
    ckt_fmha_bwd_args hb = bwd_args_of(&hf);
    hb.q = hq;
    hb.k = hk;
    hb.v = hv;
    hb.o = ho;
    hb.lse = hl;
    hb.dout = hdo;
    hb.deterministic = deterministic;
    hb.sink = hsink;
    hb.p_drop = fa.p_drop;
    hb.drop_seed = drop_seed;
    hb.drop_offset = drop_offset;
    hb.bias = bias_kind == 1 ? bias_t.host : NULL;
    hb.bias_stride_b = bias_t.sb, hb.bias_stride_h = bias_t.sh, hb.bias_stride_s = bias_t.ss;
    hb.alibi_slopes = bias_kind == 2 ? (const float *)bias_t.host : NULL;
    hb.dbias_stride_b = bias_t.sb, hb.dbias_stride_h = bias_t.sh, hb.dbias_stride_s = bias_t.ss;

    /* >>validation */
    int rc = 0;
    ckt_compare_result rq, rk, rv;
    memset(&rq, 0, sizeof rq);
    memset(&rk, 0, sizeof rk);
    memset(&rv, 0, sizeof rv);
    double atol = 0, rtol = 0, dsink_err = 0, dbias_err = 0;
    ckt_fmha_bwd_tolerance(f.dtype, f.hdim_q, f.hdim_v, &rtol, &atol);
    if (validate) {
        float *dq_ref = (float *)fmha_host_alloc(nq_el, 4), *dk_ref = (float *)fmha_host_alloc(nk_el, 4);
        float *dv_ref = (float *)fmha_host_alloc(nv_el, 4);
        float *dbias_ref = dbias_on ? (float *)fmha_host_alloc(nb_el, 4) : NULL;
        CHECK(ckt_ref_fmha_bwd_ex(&hb, dq_ref, dk_ref, dv_ref, NULL, dbias_ref));
        ckt_status s = ckt_ref_fmha_bwd_compare(&rq, &rk, &rv, &hb, hdq, hdk, hdv, dq_ref, dk_ref, dv_ref, atol,
                                                rtol);
        if (s != CKT_SUCCESS && s != CKT_ERROR_MISMATCH)
            CHECK(s);
        rc = s == CKT_SUCCESS ? 0 : 1;
        if (rc || !json) {
            ckt_compare_print(report, "dQ", &rq);
            ckt_compare_print(report, "dK", &rk);
            ckt_compare_print(report, "dV", &rv);
        }
        if (dbias_on) { /* dbias = dS over the logical elements, in the output type */
            ckt_compare_result rb;
            memset(&rb, 0, sizeof rb);
            rb.atol = atol;
            rb.rtol = rtol;
            for (int b = 0; b < f.batch; b++) {
                const ckt_fmha_entry e = ckt_fmha_fwd_entry(&hf, b);
                for (int h = 0; h < f.nhead_q; h++)
                    for (int i = 0; i < e.sq; i++)
                        for (int j = 0; j < e.sk; j++) {
                            const size_t at = (size_t)(b * bias_t.sb + h * bias_t.sh + i * bias_t.ss + j);
                            uint32_t x = 0;
                            ckt_store_f32(&x, f.dtype, 0, dbias_ref[at]);
                            ckt_compare_add(&rb, at, ckt_load_f32(hdbias, f.dtype, at), ckt_load_f32(&x, f.dtype, 0));
                        }
            }
            dbias_err = rb.max_abs_err;
            if (rb.mismatches || !json)
                ckt_compare_print(report, "dbias", &rb);
            if (rb.mismatches)
                rc = 1;
        }
        free(dbias_ref);
        free(dq_ref);
        free(dk_ref);
        free(dv_ref);
        if (sink_on) { /* dsink: fp32 sums of the reference's (double) terms */
            float *dsink_ref = (float *)fmha_host_alloc((size_t)f.nhead_q, 4);
            CHECK(ckt_ref_fmha_bwd_dsink(&hb, dsink_ref));
            for (int h = 0; h < f.nhead_q; h++) {
                const double e = fabs((double)hdsink[h] - dsink_ref[h]);
                dsink_err = e > dsink_err ? e : dsink_err;
                if (!(e <= 1e-3 * (1.0 + fabs((double)dsink_ref[h])))) {
                    fprintf(report, "dsink[%d]: %g, the reference %g\n", h, (double)hdsink[h], (double)dsink_ref[h]);
                    rc = 1;
                }
            }
            free(dsink_ref);
        }
    }

    /* >>timing */
    ckt_timing t;
    memset(&t, 0, sizeof t);
    if (repeat > 0)
        CHECK(ckt_time(&t, run_bwd, &ctx, NULL, warmup, repeat, CKT_FLUSH_L2));
    const double flops = ckt_fmha_bwd_flops(&hb);
    const double tflops = t.median_ms > 0 ? flops / (t.median_ms * 1e-3) / 1e12 : 0.0;
    const char *valid = validate ? (rc == 0 ? "y" : "n") : "-";
    int stable = -1; /* deterministic: 1 when the timed runs reproduced the first bit for bit */
    if (deterministic && repeat + warmup > 0) {
        stable = device_hash(ddq, tmp, nq_el * es) == hash_dq && device_hash(ddk, tmp, nk_el * es) == hash_dk &&
                 device_hash(ddv, tmp, nv_el * es) == hash_dv;
        if (sink_on) {
            float *again = (float *)fmha_host_alloc((size_t)f.nhead_q, 4);
            CHECK(ckt_rt_memcpy(again, ddsink, (size_t)f.nhead_q * 4, CKT_D2H));
            stable = stable && memcmp(again, hdsink, (size_t)f.nhead_q * 4) == 0;
            free(again);
        }
        if (dbias_on) {
            void *again = fmha_host_alloc(nb_el, es);
            CHECK(ckt_rt_memcpy(again, ddbias, nb_el * es, CKT_D2H));
            stable = stable && memcmp(again, hdbias, nb_el * es) == 0;
            free(again);
        }
        if (!stable) {
            fprintf(stderr, "error: -deterministic=1: dQ / dK / dV after %d more runs differ from the first run's\n",
                    warmup + repeat);
            rc = 1;
        }
    }

    char mask_s[64], sq_s[64], sk_s[64];
    fmha_mask_string(mask_s, sizeof mask_s, &f);
    snprintf(sq_s, sizeof sq_s, "%d%s", f.seqlen_q, mode == 1 ? "(max)" : "");
    snprintf(sk_s, sizeof sk_s, "%d%s", f.seqlen_k, mode == 1 ? "(max)" : "");
    fprintf(report,
            "[%s|%s|%s] b:%d, h:%d/%d, s:%s/%s, d:%d/%d, scale:%g, softcap:%g, mask:%s, deterministic:%d, "
            "prepare:%s, sink:%d, p_drop:%g, bias:%s, dbias:%d, %s [%s], %.4f ms, %.4g TFlops, valid:%s, hash dq:%016llx dk:%016llx dv:%016llx\n",
            prec, mode ? "group" : "batch", iperm ? "bhsd" : "bshd", f.batch, f.nhead_q, f.nhead_k, sq_s, sk_s,
            f.hdim_q, f.hdim_v, fmha_scale(&f), (double)f.softcap, mask_s, deterministic, prepare_arg, sink_on, p_drop,
            fmha_bias_name(bias_kind), dbias_on, inst ? inst->name : "?", props.backend, (double)t.median_ms, tflops, valid,
            (unsigned long long)hash_dq, (unsigned long long)hash_dk, (unsigned long long)hash_dv);
    if (json) {
        printf("{\"example\":\"fmha_bwd\",\"backend\":\"%s\",\"device\":\"%s\",\"instance\":\"%s\",\"prec\":\"%s\","
               "\"mode\":%d,\"b\":%d,\"h\":%d,\"h_k\":%d,\"s\":%d,\"s_k\":%d,\"d\":%d,\"d_v\":%d,\"mask\":\"%s\","
               "\"iperm\":%d,\"operm\":%d,\"scale\":%g,\"logits_soft_cap\":%g,\"deterministic\":%d,"
               "\"prepare\":\"%s\",\"sink\":%d,\"dsink_max_abs_err\":%g,\"p_drop\":%g,\"drop_seed\":%llu,\"drop_offset\":%llu,"
               "\"bias\":\"%s\",\"dbias\":%d,\"dbias_max_abs_err\":%g,"
               "\"workspace_bytes\":%zu,\"valid\":%s,\"rerun_identical\":%s,\"dq_max_abs_err\":%g,"
               "\"dk_max_abs_err\":%g,\"dv_max_abs_err\":%g,\"atol\":%g,\"rtol\":%g,"
               "\"dq_hash\":\"%016llx\",\"dk_hash\":\"%016llx\",\"dv_hash\":\"%016llx\",\"hash\":\"fnv1a64\","
               "\"flops\":%.0f,\"ms\":%.6f,\"min_ms\":%.6f,\"repeat\":%d,\"tflops\":%.6g}\n",
               props.backend, props.name, inst ? inst->name : "?", prec, mode, f.batch, f.nhead_q, f.nhead_k,
               f.seqlen_q, f.seqlen_k, f.hdim_q, f.hdim_v, mask_s, iperm, operm, fmha_scale(&f), (double)f.softcap,
               deterministic, prepare_arg, sink_on, dsink_err, p_drop, (unsigned long long)drop_seed,
               (unsigned long long)drop_offset, fmha_bias_name(bias_kind), dbias_on, dbias_err, ctx.a.workspace_bytes,
               validate ? (valid[0] == 'y' ? "true" : "false") : "null",
               stable < 0 ? "null" : stable ? "true" : "false", rq.max_abs_err, rk.max_abs_err, rv.max_abs_err,
               atol, rtol, (unsigned long long)hash_dq, (unsigned long long)hash_dk, (unsigned long long)hash_dv,
               flops, (double)t.median_ms, (double)t.min_ms, t.repeat, tflops);
    }

    ckt_rt_free(dq);
    ckt_rt_free(dk);
    ckt_rt_free(dv);
    ckt_rt_free(ddo);
    ckt_rt_free(dout);
    ckt_rt_free(dl);
    ckt_rt_free(ddq);
    ckt_rt_free(ddk);
    ckt_rt_free(ddv);
    ckt_rt_free(ws);
    ckt_rt_free((void *)fa.sink);
    ckt_rt_free(ddsink);
    free(hsink);
    free(hdsink);
    fmha_bias_free(&bias_t);
    ckt_rt_free(ddbias);
    free(hdbias);
    ckt_rt_free_host(ctx.staging);
    ckt_rt_free((void *)fa.seqstart_q);
    ckt_rt_free((void *)fa.seqstart_k);
    ckt_rt_free((void *)fa.seqlen_q_ptr);
    ckt_rt_free((void *)fa.seqlen_k_ptr);
    free(hq);
    free(hk);
    free(hv);
    free(ho);
    free(hdo);
    free(hdq);
    free(hdk);
    free(hdv);
    free(hl);
    free(tmp);
    return rc;
}
