/* ckt/host/timer.h — time a GPU operation with events: warmup runs, then
 * `repeat` timed runs, each preceded (outside the timed span) by an L2 flush,
 * and the median, min, mean and max in milliseconds.
 *
 *   static ckt_status run(void *ctx, ckt_stream s) { ... launch ... }
 *   ckt_timing t;
 *   ckt_time(&t, run, &ctx, stream, 5, 20, CKT_FLUSH_L2);
 *   printf("%.3f ms\n", t.median_ms);
 *
 * flush_bytes: 0 = no flush, CKT_FLUSH_L2 = twice the device's L2 size,
 * anything else = that many bytes written between runs.
 */
#ifndef CKT_HOST_TIMER_H
#define CKT_HOST_TIMER_H

#include "ckt/host/runtime.h"

#include <stdlib.h>

#define CKT_FLUSH_L2 ((size_t)-1)

typedef ckt_status (*ckt_timed_fn)(void *ctx, ckt_stream stream);

typedef struct ckt_timing {
    float median_ms, min_ms, mean_ms, max_ms;
    int repeat;
} ckt_timing;

static inline int ckt__cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static inline ckt_status ckt_time(ckt_timing *out, ckt_timed_fn fn, void *ctx, ckt_stream stream,
                                  int warmup, int repeat, size_t flush_bytes)
{
    if (!out || !fn)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_time: %s is NULL", out ? "fn" : "out");
    if (warmup < 0 || repeat < 1)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "ckt_time: warmup %d / repeat %d (need >= 0 / >= 1)",
                         warmup, repeat);
    memset(out, 0, sizeof *out);
    ckt_status s = CKT_SUCCESS;
    void *flush = NULL;
    ckt_event e0 = NULL, e1 = NULL;
    float *ms = (float *)calloc((size_t)repeat, sizeof(float));
    if (!ms)
        return ckt__fail(CKT_ERROR_OUT_OF_MEMORY, "ckt_time: %d timings", repeat);
    if (flush_bytes == CKT_FLUSH_L2) {
        ckt_device_props p;
        s = ckt_rt_device_props(&p);
        flush_bytes = s == CKT_SUCCESS ? 2 * p.l2_bytes : 0;
    }
    if (s == CKT_SUCCESS && flush_bytes)
        s = ckt_rt_malloc(&flush, flush_bytes);
    if (s == CKT_SUCCESS)
        s = ckt_rt_event_create(&e0);
    if (s == CKT_SUCCESS)
        s = ckt_rt_event_create(&e1);
    for (int i = 0; s == CKT_SUCCESS && i < warmup; i++)
        s = fn(ctx, stream);
    for (int i = 0; s == CKT_SUCCESS && i < repeat; i++) {
        if (flush)
            s = ckt_rt_memset_async(flush, i & 0xff, flush_bytes, stream);
        if (s == CKT_SUCCESS)
            s = ckt_rt_event_record(e0, stream);
        if (s == CKT_SUCCESS)
            s = fn(ctx, stream);
        if (s == CKT_SUCCESS)
            s = ckt_rt_event_record(e1, stream);
        if (s == CKT_SUCCESS)
            s = ckt_rt_event_synchronize(e1);
        if (s == CKT_SUCCESS)
            s = ckt_rt_event_elapsed_ms(&ms[i], e0, e1);
    }
    if (s == CKT_SUCCESS) {
        double sum = 0;
        for (int i = 0; i < repeat; i++)
            sum += ms[i];
        qsort(ms, (size_t)repeat, sizeof(float), ckt__cmp_float);
        out->repeat = repeat;
        out->min_ms = ms[0];
        out->max_ms = ms[repeat - 1];
        out->median_ms = repeat % 2 ? ms[repeat / 2] : 0.5f * (ms[repeat / 2 - 1] + ms[repeat / 2]);
        out->mean_ms = (float)(sum / repeat);
    }
    ckt_rt_event_destroy(e0);
    ckt_rt_event_destroy(e1);
    ckt_rt_free(flush);
    free(ms);
    return s;
}

#endif /* CKT_HOST_TIMER_H */
