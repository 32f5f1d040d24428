/* examples/gemm — fp16/bf16 GEMM built from the tile layer, validated against
 * the CPU reference, timed.
 *
 *   bazel run //examples/gemm -- -m=300 -n=200 -k=100 -prec=bf16 -layout=nt
 *
 * Options: -m -n -k (sizes; default 512 on the CPU emulator... use any),
 * -prec=fp16|bf16, -layout=nn|nt (B as [K][N] or [N][K]), -v=1 validate,
 * -path=auto|sm80|sm90 (sm90: TMA + wgmma, gemm_sm90.h; auto takes it on an
 * sm_90 GPU, sm80's mma.sync kernel elsewhere; the emulator runs either),
 * -init=0 (uniform [-1,1)) | 1 (integers in [-3,3]), -seed, -warmup, -repeat.
 * Tolerance: fp16 rtol=atol=1e-2 ... scaled by sqrt(k) for long sums.
 * Exit status: 0 validated (or -v=0), 1 mismatch, 2 error.
 */
#include "ckt/host.h"
#include "examples/gemm/gemm.h"
#include "examples/gemm/gemm_sm90.h"
#include "examples/check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct run_ctx {
    gemm_params p;
    int b_nk, sm90;
    ckt_dtype dt;
} run_ctx;

static ckt_status run_gemm(void *ctx, ckt_stream s)
{
    run_ctx *c = (run_ctx *)ctx;
    return c->sm90 ? gemm_sm90_run(&c->p, c->b_nk, c->dt, s) : gemm_run(&c->p, c->b_nk, c->dt, s);
}

int main(int argc, char **argv)
{
    static const char *const known[] = {"m", "n", "k", "prec", "layout", "v", "init", "seed",
                                        "warmup", "repeat", "path", NULL};
    int bad = ckt_arg_unknown(argc, argv, known);
    if (bad) {
        fprintf(stderr, "error: unknown option %s (options: -m -n -k -prec -layout -v -init -seed -warmup -repeat -path, as -name=value)\n", argv[bad]);
        return 2;
    }
    int64_t m = ckt_arg_int(argc, argv, "m", 512), n = ckt_arg_int(argc, argv, "n", 512),
            k = ckt_arg_int(argc, argv, "k", 512);
    const char *prec = ckt_arg_str(argc, argv, "prec", "fp16");
    const char *layout = ckt_arg_str(argc, argv, "layout", "nn");
    int validate = (int)ckt_arg_int(argc, argv, "v", 1), init = (int)ckt_arg_int(argc, argv, "init", 0);
    uint64_t seed = (uint64_t)ckt_arg_int(argc, argv, "seed", 11);
    int warmup = (int)ckt_arg_int(argc, argv, "warmup", 3), repeat = (int)ckt_arg_int(argc, argv, "repeat", 10);
    run_ctx ctx;
    if (ckt_dtype_parse(prec, &ctx.dt) != 0 || ctx.dt == CKT_F32) {
        fprintf(stderr, "error: -prec must be fp16 or bf16 (got %s)\n", prec);
        return 2;
    }
    if (strcmp(layout, "nn") != 0 && strcmp(layout, "nt") != 0) {
        fprintf(stderr, "error: -layout must be nn or nt (got %s)\n", layout);
        return 2;
    }
    if (m < 0 || n < 0 || k < 0) {
        fprintf(stderr, "error: -m, -n, -k must be >= 0\n");
        return 2;
    }
    ctx.b_nk = strcmp(layout, "nt") == 0;
    const char *path = ckt_arg_str(argc, argv, "path", "auto");
    if (strcmp(path, "auto") != 0 && strcmp(path, "sm80") != 0 && strcmp(path, "sm90") != 0) {
        fprintf(stderr, "error: -path must be auto, sm80 or sm90 (got %s)\n", path);
        return 2;
    }
    ctx.sm90 = strcmp(path, "sm90") == 0 || (strcmp(path, "auto") == 0 && gemm_sm90_supported() &&
                                             strcmp(CKT_BACKEND_NAME, "nvidia") == 0);
    ckt_device_props props;
    CHECK(ckt_rt_device_props(&props));
    printf("device: %s [backend %s]\n", props.name, props.backend);

    /* leading dimensions padded to a multiple of 8 elements (16 bytes) */
    int64_t lda = (k + 7) / 8 * 8, ldb = ctx.b_nk ? lda : (n + 7) / 8 * 8, ldc = n;
    size_t a_elems = (size_t)(m * lda), b_elems = (size_t)((ctx.b_nk ? n : k) * ldb), c_elems = (size_t)(m * ldc);
    uint16_t *ha = (uint16_t *)calloc(a_elems + 1, 2), *hb = (uint16_t *)calloc(b_elems + 1, 2);
    uint16_t *hc = (uint16_t *)calloc(c_elems + 1, 2);
    float *ref = (float *)calloc(c_elems + 1, 4);
    if (!ha || !hb || !hc || !ref) {
        fprintf(stderr, "error: out of host memory\n");
        return 2;
    }
    ckt_init in = init == 1 ? ckt_init_int(-3, 3) : ckt_init_uniform(-1.0f, 1.0f);
    CHECK(ckt_fill(ha, ctx.dt, a_elems, in, seed));
    CHECK(ckt_fill(hb, ctx.dt, b_elems, in, seed + 1));

    void *da, *db, *dc;
    CHECK(ckt_rt_malloc(&da, a_elems * 2 + 16));
    CHECK(ckt_rt_malloc(&db, b_elems * 2 + 16));
    CHECK(ckt_rt_malloc(&dc, c_elems * 2 + 16));
    CHECK(ckt_rt_memcpy(da, ha, a_elems * 2, CKT_H2D));
    CHECK(ckt_rt_memcpy(db, hb, b_elems * 2, CKT_H2D));
    ctx.p.a = da;
    ctx.p.b = db;
    ctx.p.c = dc;
    ctx.p.m = m;
    ctx.p.n = n;
    ctx.p.k = k;
    ctx.p.lda = lda;
    ctx.p.ldb = ldb;
    ctx.p.ldc = ldc;
    CHECK(run_gemm(&ctx, NULL));
    CHECK(ckt_rt_device_synchronize());
    CHECK(ckt_rt_memcpy(hc, dc, c_elems * 2, CKT_D2H));

    int rc = 0;
    if (validate) {
        ckt_ref_gemm(ref, ldc, ha, ctx.dt, lda, hb, ctx.dt, ldb, ctx.b_nk, m, n, k);
        /* the result is rounded to fp16/bf16 once; fp32 sums differ from the
         * fp64 reference by ~k * 2^-24 relative */
        double tol = ctx.dt == CKT_BF16 ? 1e-2 : 1e-3;
        ckt_compare_result r;
        ckt_status s = ckt_compare(&r, hc, ctx.dt, ref, CKT_F32, c_elems, tol * sqrt((double)k > 1 ? (double)k : 1.0) * 0.5, tol);
        ckt_compare_print(stdout, "C", &r);
        rc = s == CKT_SUCCESS ? 0 : 1;
        printf("validation: %s\n", rc == 0 ? "PASS" : "FAIL");
    }
    if (repeat > 0) {
        ckt_timing t;
        CHECK(ckt_time(&t, run_gemm, &ctx, NULL, warmup, repeat, CKT_FLUSH_L2));
        double tflops = t.median_ms > 0 ? 2.0 * (double)m * n * k / (t.median_ms * 1e-3) / 1e12 : 0.0;
        printf("gemm %s %s %s m=%lld n=%lld k=%lld: %.4f ms, %.1f TFLOPS\n", ctx.sm90 ? "sm90" : "sm80", prec, layout,
               (long long)m, (long long)n, (long long)k, t.median_ms, tflops);
    }
    ckt_rt_free(da);
    ckt_rt_free(db);
    ckt_rt_free(dc);
    free(ha);
    free(hb);
    free(hc);
    free(ref);
    return rc;
}
