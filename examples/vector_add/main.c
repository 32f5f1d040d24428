/* examples/vector_add — the first ckt kernel, end to end: c = a + b on the
 * device (GPU, or the CPU emulator), validated against the CPU, then timed.
 *
 *   bazel run //examples/vector_add -- -n=1000003 -v=1
 *
 * Options (CK style, -name=value): -n elements (default 1000003), -v validate
 * (1), -seed (11), -warmup (3), -repeat (10). Exit status 0 = validated.
 */
#include "ckt/host.h"
#include "examples/vector_add/vector_add.h"
#include "examples/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct run_ctx {
    vadd_params p;
} run_ctx;

static ckt_status run_vadd(void *ctx, ckt_stream s)
{
    run_ctx *c = (run_ctx *)ctx;
    return ckt_rt_launch(CKT_KERNEL_REF(vadd_kernel), vadd_grid(c->p.n), vadd_block(), 0, s, &c->p);
}

int main(int argc, char **argv)
{
    long long n = ckt_arg_int(argc, argv, "n", 1000003);
    int validate = (int)ckt_arg_int(argc, argv, "v", 1);
    uint64_t seed = (uint64_t)ckt_arg_int(argc, argv, "seed", 11);
    int warmup = (int)ckt_arg_int(argc, argv, "warmup", 3);
    int repeat = (int)ckt_arg_int(argc, argv, "repeat", 10);
    if (n < 0) {
        fprintf(stderr, "error: -n must be >= 0 (got %lld)\n", n);
        return 2;
    }
    ckt_device_props props;
    CHECK(ckt_rt_device_props(&props));
    printf("device: %s [backend %s, warp %d]\n", props.name, props.backend, props.warp_size);

    size_t bytes = (size_t)n * sizeof(float);
    float *ha = (float *)malloc(bytes + 4), *hb = (float *)malloc(bytes + 4);
    float *hc = (float *)malloc(bytes + 4), *ref = (float *)malloc(bytes + 4);
    if (!ha || !hb || !hc || !ref) {
        fprintf(stderr, "error: out of host memory\n");
        return 2;
    }
    CHECK(ckt_fill(ha, CKT_F32, (size_t)n, ckt_init_uniform(-1.0f, 1.0f), seed));
    CHECK(ckt_fill(hb, CKT_F32, (size_t)n, ckt_init_uniform(-1.0f, 1.0f), seed + 1));
    for (long long i = 0; i < n; i++)
        ref[i] = ha[i] + hb[i];

    void *da, *db, *dc;
    CHECK(ckt_rt_malloc(&da, bytes));
    CHECK(ckt_rt_malloc(&db, bytes));
    CHECK(ckt_rt_malloc(&dc, bytes));
    CHECK(ckt_rt_memcpy(da, ha, bytes, CKT_H2D));
    CHECK(ckt_rt_memcpy(db, hb, bytes, CKT_H2D));

    run_ctx ctx;
    ctx.p.a = (const float *)da;
    ctx.p.b = (const float *)db;
    ctx.p.c = (float *)dc;
    ctx.p.n = n;
    CHECK(run_vadd(&ctx, NULL));
    CHECK(ckt_rt_device_synchronize());
    CHECK(ckt_rt_memcpy(hc, dc, bytes, CKT_D2H));

    int rc = 0;
    if (validate) {
        ckt_compare_result r;
        ckt_status s = ckt_compare(&r, hc, CKT_F32, ref, CKT_F32, (size_t)n, 0.0, 0.0);
        ckt_compare_print(stdout, "c = a + b", &r);
        rc = s == CKT_SUCCESS ? 0 : 1;
        printf("validation: %s\n", rc == 0 ? "PASS" : "FAIL");
    }
    if (repeat > 0) {
        ckt_timing t;
        CHECK(ckt_time(&t, run_vadd, &ctx, NULL, warmup, repeat, CKT_FLUSH_L2));
        double gbs = t.median_ms > 0 ? 3.0 * (double)bytes / (t.median_ms * 1e-3) / 1e9 : 0.0;
        printf("vector_add n=%lld: median %.4f ms (min %.4f, %d runs), %.1f GB/s\n", n,
               t.median_ms, t.min_ms, t.repeat, gbs);
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
