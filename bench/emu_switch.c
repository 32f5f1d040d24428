/* bench/emu_switch.c — cost of a fiber switch in the CPU SIMT emulator.
 *
 *   bazel run -c opt //bench:emu_switch -- [-blocks=64] [-iters=200] [-block=128]
 *   bazel run -c opt //bench:emu_switch_cdna     (wave 64 profile)
 *
 * Blocks of `block` threads each run `iters` waits (ckt_block_sync() and/or
 * warp shuffles). Every wait takes each thread through two context switches:
 * fiber -> scheduler (which resolves the barrier or collective on its own
 * stack) -> fiber. Variants:
 *   empty       the launch and fiber start/exit alone (subtracted below)
 *   sync        iters x ckt_block_sync()
 *   shfl        iters x ckt_warp_shfl_xor_f32()
 *   sync+shfl   iters x (shuffle, barrier): 2 waits per iteration
 * Columns: ns per wait of one thread (a round trip) and per context switch
 * (half of it), net of the empty kernel; first on one OS thread
 * (CKT_EMU_THREADS=1), then on all cores (throughput per switch).
 */
#include "ckt/host.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { V_EMPTY, V_SYNC, V_SHFL, V_MIX, V_COUNT };
static const char *const variant_names[V_COUNT] = {"empty", "sync", "shfl", "sync+shfl"};
static const int waits_per_iter[V_COUNT] = {0, 1, 1, 2};

typedef struct switch_params {
    float *out; /* one per thread of the grid */
    int iters;
    int variant;
} switch_params;

CKT_KERNEL(switch_kernel, switch_params, p)
{
    float v = (float)ckt_thread_rank();
    for (int i = 0; i < p.iters && p.variant != V_EMPTY; i++) {
        if (p.variant != V_SYNC)
            v += ckt_warp_shfl_xor_f32(v, 1u);
        if (p.variant != V_SHFL)
            ckt_block_sync();
    }
    p.out[ckt_block_idx_x() * ckt_block_dim_x() + ckt_thread_idx_x()] = v;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best of `repeat` launches, in seconds. */
static double time_variant(switch_params *p, int blocks, int block, int repeat)
{
    double best = 1e30;
    for (int r = 0; r < repeat; r++) {
        double t0 = now_s();
        ckt_status s = ckt_rt_launch(CKT_KERNEL_REF(switch_kernel), ckt_dim3_make(blocks, 1, 1),
                                     ckt_dim3_make(block, 1, 1), 0, NULL, p);
        double t = now_s() - t0;
        if (s != CKT_SUCCESS) {
            fprintf(stderr, "launch failed: %s\n", ckt_last_error());
            exit(1);
        }
        best = t < best ? t : best;
    }
    return best;
}

static void table(const char *threads, int blocks, int block, int iters)
{
    static char env[32];
    snprintf(env, sizeof env, "%s", threads);
    setenv("CKT_EMU_THREADS", env, 1);
    void *out;
    if (ckt_rt_malloc(&out, (size_t)blocks * block * sizeof(float)) != CKT_SUCCESS) {
        fprintf(stderr, "%s\n", ckt_last_error());
        exit(1);
    }
    switch_params p = {(float *)out, iters, V_EMPTY};
    double empty = time_variant(&p, blocks, block, 5);
    printf("\nCKT_EMU_THREADS=%s: %d blocks x %d threads, %d iterations\n", threads, blocks, block,
           iters);
    printf("%-10s %12s %10s %10s %11s\n", "variant", "waits", "ms", "ns/wait", "ns/switch");
    printf("%-10s %12s %10.3f %10s %11s\n", variant_names[V_EMPTY], "0", 1e3 * empty, "-", "-");
    for (int v = V_SYNC; v < V_COUNT; v++) {
        p.variant = v;
        double t = time_variant(&p, blocks, block, 5);
        double waits = (double)blocks * block * iters * waits_per_iter[v];
        double ns = 1e9 * (t - empty) / waits;
        printf("%-10s %12.0f %10.3f %10.1f %11.1f\n", variant_names[v], waits, 1e3 * t, ns, ns / 2);
    }
    ckt_rt_free(out);
}

int main(int argc, char **argv)
{
    static const char *const known[] = {"blocks", "iters", "block", NULL};
    int bad = ckt_arg_unknown(argc, argv, known);
    if (bad) {
        fprintf(stderr, "unknown argument %s (options: -blocks= -iters= -block=)\n", argv[bad]);
        return 2;
    }
    int blocks = (int)ckt_arg_int(argc, argv, "blocks", 64);
    int iters = (int)ckt_arg_int(argc, argv, "iters", 200);
    int block = (int)ckt_arg_int(argc, argv, "block", 128);
    const char *user_threads = getenv("CKT_EMU_THREADS");
    char cores[16];
    snprintf(cores, sizeof cores, "%ld", sysconf(_SC_NPROCESSORS_ONLN));
    printf("ckt emulator switch cost: profile %s (warp %d)\n", CKT_EMU_PROFILE_NAME, CKT_WARP_SIZE);
    table("1", blocks, block, iters);
    table(user_threads ? user_threads : cores, blocks, block, iters);
    return 0;
}
