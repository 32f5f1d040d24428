/* examples/copy — a tiled copy and a transpose of an m x n matrix built only
 * from the tile layer (examples/copy/copy.h), validated against the host and
 * timed in GB/s (bytes read + bytes written per second).
 *
 *   bazel run //examples/copy -- -m=1000 -n=1003 -prec=bf16
 *   ./copy_gpu -m=16384 -n=16384 -prec=fp16 -memcpy=1      (on a GPU machine)
 *
 * Options (-name=value):
 *   -m, -n      matrix rows and columns (default 1000 x 1003)
 *   -prec       fp16, bf16 or fp32 (default fp16)
 *   -op         copy, transpose or all (default all)
 *   -vecs       copy: 16-byte vectors per thread, 2, 4 or 8 (default 4);
 *               0 runs all three
 *   -layout     transpose: shared tile layout plain, padded or swizzle
 *               (default swizzle); all runs all three
 *   -memcpy     1: also time the runtime's device-to-device memcpy of the
 *               same bytes, in the same process, and print each kernel's
 *               bandwidth as a share of it (default 0)
 *   -v          validate against the host (default 1)
 *   -warmup, -repeat   timing runs (default 3, 10; -repeat=0 skips timing)
 *   -seed       data seed (default 7)
 * Every result also prints as one line "RESULT op=... gbs=..." for scripts
 * (bench/copy_bench.sh). Exit status: 0 when all validations pass, 1 when
 * one fails, 2 on errors.
 */
#include "ckt/host.h"
#include "examples/copy/copy.h"
#include "examples/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct run_ctx {
    int op; /* 0 copy, 1 transpose, 2 memcpy */
    int variant;
    ckt_dtype dt;
    const void *src;
    void *dst;
    int64_t m, n;
} run_ctx;

static ckt_status run_once(void *ctx, ckt_stream s)
{
    const run_ctx *c = (const run_ctx *)ctx;
    if (c->op == 0)
        return copy_launch(c->dt, c->variant, c->src, c->n, c->dst, c->n, c->m, c->n, s);
    if (c->op == 1)
        return transpose_launch(c->dt, c->variant, c->src, c->n, c->dst, c->m, c->m, c->n, s);
    return ckt_rt_memcpy_async(c->dst, c->src, (size_t)(c->m * c->n) * ckt_dtype_size(c->dt),
                               CKT_D2D, s);
}

static const char *layout_name(int layout)
{
    return layout == CKT_SMEM_ROW_MAJOR ? "plain" : layout == CKT_SMEM_PADDED ? "padded" : "swizzle";
}

static const char *variant_name(const run_ctx *c, char *buf, size_t size)
{
    if (c->op == 0)
        snprintf(buf, size, "vecs%d", c->variant);
    else if (c->op == 1)
        snprintf(buf, size, "%s", layout_name(c->variant));
    else
        snprintf(buf, size, "d2d");
    return buf;
}

/* Runs one kernel: validation (host reference in ref, m*n elements), then
 * timing. Returns 0 (ok), 1 (mismatch), 2 (error); *gbs gets the bandwidth. */
static int run_case(run_ctx *c, const void *ref, void *host_out, int validate, int warmup,
                    int repeat, double *gbs)
{
    static const char *const ops[] = {"copy", "transpose", "memcpy"};
    const size_t bytes = (size_t)(c->m * c->n) * ckt_dtype_size(c->dt);
    char name[32];
    int rc = 0;
    variant_name(c, name, sizeof name);
    *gbs = 0;
    if (validate && c->op != 2) {
        CHECK(ckt_rt_memset(c->dst, 0xA5, bytes));
        CHECK(run_once(c, NULL));
        CHECK(ckt_rt_device_synchronize());
        CHECK(ckt_rt_memcpy(host_out, c->dst, bytes, CKT_D2H));
        ckt_compare_result r;
        ckt_status s = ckt_compare(&r, host_out, c->dt, ref, c->dt, (size_t)(c->m * c->n), 0, 0);
        char what[64];
        snprintf(what, sizeof what, "%s %s %s", ops[c->op], ckt_dtype_name(c->dt), name);
        ckt_compare_print(stdout, what, &r);
        rc = s == CKT_SUCCESS ? 0 : 1;
    }
    if (repeat > 0) {
        ckt_timing t;
        CHECK(ckt_time(&t, run_once, c, NULL, warmup, repeat, CKT_FLUSH_L2));
        *gbs = t.median_ms > 0 ? 2.0 * (double)bytes / (t.median_ms * 1e-3) / 1e9 : 0.0;
        printf("%-9s %-4s %-8s m=%lld n=%lld: median %.4f ms (min %.4f, %d runs), %.1f GB/s\n",
               ops[c->op], ckt_dtype_name(c->dt), name, (long long)c->m, (long long)c->n,
               t.median_ms, t.min_ms, t.repeat, *gbs);
        printf("RESULT op=%s prec=%s variant=%s m=%lld n=%lld ms=%.5f gbs=%.1f valid=%s\n",
               ops[c->op], ckt_dtype_name(c->dt), name, (long long)c->m, (long long)c->n,
               t.median_ms, *gbs, !validate || c->op == 2 ? "skipped" : rc ? "FAIL" : "PASS");
    }
    return rc;
}

int main(int argc, char **argv)
{
    static const char *const known[] = {"m", "n", "prec", "op", "vecs", "layout", "memcpy", "v",
                                        "warmup", "repeat", "seed", NULL};
    int bad = ckt_arg_unknown(argc, argv, known);
    if (bad) {
        fprintf(stderr, "error: unknown option %s (see the top of examples/copy/main.c)\n", argv[bad]);
        return 2;
    }
    const long long m = ckt_arg_int(argc, argv, "m", 1000), n = ckt_arg_int(argc, argv, "n", 1003);
    const char *prec = ckt_arg_str(argc, argv, "prec", "fp16");
    const char *op = ckt_arg_str(argc, argv, "op", "all");
    const int vecs = (int)ckt_arg_int(argc, argv, "vecs", 4);
    const char *layout = ckt_arg_str(argc, argv, "layout", "swizzle");
    const int memcpy_too = (int)ckt_arg_int(argc, argv, "memcpy", 0);
    const int validate = (int)ckt_arg_int(argc, argv, "v", 1);
    const int warmup = (int)ckt_arg_int(argc, argv, "warmup", 3);
    const int repeat = (int)ckt_arg_int(argc, argv, "repeat", 10);
    const uint64_t seed = (uint64_t)ckt_arg_int(argc, argv, "seed", 7);
    ckt_dtype dt;
    if (ckt_dtype_parse(prec, &dt) != 0) {
        fprintf(stderr, "error: -prec=%s (fp16, bf16 or fp32)\n", prec);
        return 2;
    }
    const int do_copy = !strcmp(op, "copy") || !strcmp(op, "all");
    const int do_transpose = !strcmp(op, "transpose") || !strcmp(op, "all");
    if (m < 0 || n < 0 || (!do_copy && !do_transpose) || (vecs && !copy_tile_rows(vecs))) {
        fprintf(stderr, "error: need -m, -n >= 0, -op=copy|transpose|all, -vecs=0|2|4|8\n");
        return 2;
    }
    int layouts[3], nlayouts = 0;
    if (!strcmp(layout, "plain") || !strcmp(layout, "all"))
        layouts[nlayouts++] = CKT_SMEM_ROW_MAJOR;
    if (!strcmp(layout, "padded") || !strcmp(layout, "all"))
        layouts[nlayouts++] = CKT_SMEM_PADDED;
    if (!strcmp(layout, "swizzle") || !strcmp(layout, "all"))
        layouts[nlayouts++] = CKT_SMEM_SWIZZLE_T;
    if (!nlayouts) {
        fprintf(stderr, "error: -layout=%s (plain, padded, swizzle or all)\n", layout);
        return 2;
    }

    ckt_device_props props;
    CHECK(ckt_rt_device_props(&props));
    printf("device: %s [backend %s, warp %d]\n", props.name, props.backend, props.warp_size);

    const size_t count = (size_t)(m * n), bytes = count * ckt_dtype_size(dt);
    void *h_src = malloc(bytes + 16), *h_ref = malloc(bytes + 16), *h_out = malloc(bytes + 16);
    if (!h_src || !h_ref || !h_out) {
        fprintf(stderr, "error: out of host memory\n");
        return 2;
    }
    CHECK(ckt_fill(h_src, dt, count, ckt_init_uniform(-4.0f, 4.0f), seed));
    void *d_src, *d_dst;
    CHECK(ckt_rt_malloc(&d_src, bytes));
    CHECK(ckt_rt_malloc(&d_dst, bytes));
    CHECK(ckt_rt_memcpy(d_src, h_src, bytes, CKT_H2D));

    run_ctx c;
    c.dt = dt;
    c.src = d_src;
    c.dst = d_dst;
    c.m = m;
    c.n = n;
    int fails = 0;
    double best_copy = 0, best_transpose = 0, memcpy_gbs = 0, gbs;
    if (do_copy) {
        memcpy(h_ref, h_src, bytes); /* ref[i][j] = src[i][j] */
        c.op = 0;
        for (int v = 2; v <= 8; v *= 2) {
            if (vecs && v != vecs)
                continue;
            c.variant = v;
            int rc = run_case(&c, h_ref, h_out, validate, warmup, repeat, &gbs);
            if (rc == 2)
                return 2;
            fails += rc;
            best_copy = gbs > best_copy ? gbs : best_copy;
        }
    }
    if (do_transpose) {
        const size_t es = ckt_dtype_size(dt);
        for (long long i = 0; i < m; i++) /* ref[j][i] = src[i][j] */
            for (long long j = 0; j < n; j++)
                memcpy((char *)h_ref + (size_t)(j * m + i) * es, (char *)h_src + (size_t)(i * n + j) * es, es);
        c.op = 1;
        for (int l = 0; l < nlayouts; l++) {
            c.variant = layouts[l];
            int rc = run_case(&c, h_ref, h_out, validate, warmup, repeat, &gbs);
            if (rc == 2)
                return 2;
            fails += rc;
            best_transpose = gbs > best_transpose ? gbs : best_transpose;
        }
    }
    if (memcpy_too && repeat > 0) {
        c.op = 2;
        c.variant = 0;
        if (run_case(&c, h_ref, h_out, 0, warmup, repeat, &memcpy_gbs) == 2)
            return 2;
        if (memcpy_gbs > 0) {
            if (do_copy)
                printf("copy: best %.1f GB/s = %.1f%% of device-to-device memcpy (%.1f GB/s)\n",
                       best_copy, 100.0 * best_copy / memcpy_gbs, memcpy_gbs);
            if (do_transpose)
                printf("transpose: best %.1f GB/s = %.1f%% of device-to-device memcpy\n",
                       best_transpose, 100.0 * best_transpose / memcpy_gbs);
        }
    }
    if (validate)
        printf("validation: %s\n", fails ? "FAIL" : "PASS");
    ckt_rt_free(d_src);
    ckt_rt_free(d_dst);
    free(h_src);
    free(h_ref);
    free(h_out);
    return fails ? 1 : 0;
}
