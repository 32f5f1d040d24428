/* bench/emu_matmul — the CPU emulator running a real tensor-core kernel: the
 * 128x128x128 fp16 -> fp32 tiled matmul of tests/arch/matmul_kernel.h
 * (cp.async + ldmatrix + mma.sync in the nv profile, MFMA 32x32x8 in the cdna
 * profile; 4 blocks of 128 threads), timed per launch on one core.
 *
 *   bazel run -c opt //bench:emu_matmul          nv profile (warp 32)
 *   bazel run -c opt //bench:emu_matmul_cdna     cdna profile (wave 64)
 *
 * Options (-name=value): -m, -n, -k (128 each; multiples of 64, 64, 32),
 * -threads (CKT_EMU_THREADS, default 1: one core), -warmup (3), -repeat (30).
 * The result is checked against a host reference first; exit status 0 = ok.
 * Output: one table row, median and min ms per launch.
 */
#define _DEFAULT_SOURCE 1 /* setenv() under -std=c11 */

#include "ckt/host.h"
#include "tests/arch/matmul_kernel.h"
#include "examples/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long arg_long(int argc, char **argv, const char *name, long fallback)
{
    size_t len = strlen(name);
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-' && strncmp(argv[i] + 1, name, len) == 0 && argv[i][1 + len] == '=')
            return strtol(argv[i] + 2 + len, NULL, 10);
    return fallback;
}

static ckt_status run_mm(void *ctx, ckt_stream s)
{
    const mm_params *p = (const mm_params *)ctx;
    return ckt_rt_launch(CKT_KERNEL_REF(mm_kernel), mm_grid(p->m, p->n), mm_block(), 0, s, p);
}

int main(int argc, char **argv)
{
    int m = (int)arg_long(argc, argv, "m", 128), n = (int)arg_long(argc, argv, "n", 128);
    int k = (int)arg_long(argc, argv, "k", 128);
    int warmup = (int)arg_long(argc, argv, "warmup", 3), repeat = (int)arg_long(argc, argv, "repeat", 30);
    char threads[32];
    snprintf(threads, sizeof threads, "%ld", arg_long(argc, argv, "threads", 1));
    setenv("CKT_EMU_THREADS", threads, 1);
    if (m <= 0 || n <= 0 || k <= 0 || m % MM_BM || n % MM_BN || k % MM_BK) {
        fprintf(stderr, "error: -m, -n, -k must be positive multiples of %d, %d, %d\n", MM_BM, MM_BN,
                MM_BK);
        return 2;
    }
    size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;
    ckt_f16 *a = (ckt_f16 *)malloc(na * sizeof *a), *b = (ckt_f16 *)malloc(nb * sizeof *b);
    float *c = (float *)malloc(nc * sizeof *c);
    if (!a || !b || !c) {
        fprintf(stderr, "error: out of host memory\n");
        return 2;
    }
    ckt_rng r;
    ckt_rng_seed(&r, 7);
    for (size_t i = 0; i < na; i++)
        a[i] = ckt_f16_from_f32((float)ckt_rng_int(&r, -3, 3));
    for (size_t i = 0; i < nb; i++)
        b[i] = ckt_f16_from_f32((float)ckt_rng_int(&r, -3, 3));
    void *da, *db, *dc;
    CHECK(ckt_rt_malloc(&da, na * sizeof *a));
    CHECK(ckt_rt_malloc(&db, nb * sizeof *b));
    CHECK(ckt_rt_malloc(&dc, nc * sizeof *c));
    CHECK(ckt_rt_memcpy(da, a, na * sizeof *a, CKT_H2D));
    CHECK(ckt_rt_memcpy(db, b, nb * sizeof *b, CKT_H2D));
    mm_params p = {(const ckt_f16 *)da, (const ckt_f16 *)db, (float *)dc, m, n, k};

    CHECK(run_mm(&p, NULL));
    CHECK(ckt_rt_memcpy(c, dc, nc * sizeof *c, CKT_D2H));
    long bad = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float want = 0; /* integers: exact in any order */
            for (int q = 0; q < k; q++)
                want += ckt_f32_from_f16(a[(size_t)i * k + q]) * ckt_f32_from_f16(b[(size_t)q * n + j]);
            bad += c[(size_t)i * n + j] != want;
        }

    ckt_timing t;
    CHECK(ckt_time(&t, run_mm, &p, NULL, warmup, repeat, 0));
    printf("%-8s %-14s %8s %9s %9s %10s\n", "profile", "m x n x k", "threads", "median_ms", "min_ms",
           "check");
    char shape[48];
    snprintf(shape, sizeof shape, "%dx%dx%d", m, n, k);
    printf("%-8s %-14s %8s %9.3f %9.3f %10s\n", CKT_EMU_PROFILE_NAME, shape, threads, t.median_ms,
           t.min_ms, bad ? "FAILED" : "ok");
    ckt_rt_free(da);
    ckt_rt_free(db);
    ckt_rt_free(dc);
    free(a);
    free(b);
    free(c);
    return bad ? 1 : 0;
}
