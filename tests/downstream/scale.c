/* tests/downstream/scale.c — a ckt_kernel_binary from another workspace:
 * y = 2 x on the device (GPU, or the CPU emulator), checked on the host.
 * Exit status 0 = every element right. */
#include "ckt/host.h"

#include <stdio.h>

typedef struct scale_params {
    const float *x;
    float *y;
    int64_t n;
} scale_params;

/* y[i] = 2 x[i] for i < n; one thread per element. */
CKT_KERNEL(scale_kernel, scale_params, p)
{
    int64_t i = (int64_t)ckt_block_idx_x() * ckt_block_dim_x() + ckt_thread_idx_x();
    if (i < p.n)
        p.y[i] = 2.0f * p.x[i];
}

#define N 1000 /* not a multiple of the block: the last block is ragged */
#define CHECK(call)                                                                               \
    do {                                                                                          \
        ckt_status s_ = (call);                                                                   \
        if (s_ != CKT_SUCCESS) {                                                                  \
            fprintf(stderr, "error: %s: %s (%s)\n", #call, ckt_status_string(s_),                 \
                    ckt_last_error());                                                            \
            return 2;                                                                             \
        }                                                                                         \
    } while (0)

int main(void)
{
    static float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i - 500.0f;
    void *dx, *dy;
    CHECK(ckt_rt_malloc(&dx, sizeof x));
    CHECK(ckt_rt_malloc(&dy, sizeof y));
    CHECK(ckt_rt_memcpy(dx, x, sizeof x, CKT_H2D));
    scale_params p = {(const float *)dx, (float *)dy, N};
    CHECK(ckt_rt_launch(CKT_KERNEL_REF(scale_kernel), ckt_dim3_make((N + 255) / 256, 1, 1),
                        ckt_dim3_make(256, 1, 1), 0, NULL, &p));
    CHECK(ckt_rt_device_synchronize());
    CHECK(ckt_rt_memcpy(y, dy, sizeof y, CKT_D2H));
    CHECK(ckt_rt_free(dx));
    CHECK(ckt_rt_free(dy));
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += y[i] != 2.0f * x[i];
    printf("scale: %d of %d elements wrong: %s\n", bad, N, bad ? "FAIL" : "PASS");
    return bad != 0;
}
