/* ckt/host/compare.h — compare a result with a reference, tolerance scaled by
 * the value: element i matches when |x[i] - ref[i]| <= atol + rtol * |ref[i]|
 * (equal values match, so do two infinities of one sign; NaN matches nothing
 * but NaN).
 *
 *   ckt_compare_result r;
 *   ckt_compare(&r, out, CKT_BF16, ref, CKT_F32, n, 1e-2, 1e-2);
 *   if (r.mismatches) ckt_compare_print(stderr, "O", &r);
 *
 * prints e.g.
 *   O: 3 of 4096 elements differ (atol 0.01, rtol 0.01), max abs err 0.5 at [17]
 *     [17] got 1.5 want 1
 *     ...
 */
#ifndef CKT_HOST_COMPARE_H
#define CKT_HOST_COMPARE_H

#include "ckt/host/dtype.h"
#include "ckt/host/status.h"

#include <math.h>
#include <stdio.h>

#define CKT_COMPARE_MAX_REPORTED 8

typedef struct ckt_mismatch {
    size_t index;
    double got, want;
} ckt_mismatch;

typedef struct ckt_compare_result {
    size_t n;              /* elements compared */
    size_t mismatches;     /* elements outside the tolerance */
    double atol, rtol;
    double max_abs_err;    /* over finite pairs */
    size_t max_abs_index;
    int reported;          /* entries used in first[] */
    ckt_mismatch first[CKT_COMPARE_MAX_REPORTED];
} ckt_compare_result;

static inline int ckt_close(double got, double want, double atol, double rtol)
{
    if (got == want)
        return 1; /* also equal infinities */
    if (isnan(want))
        return isnan(got);
    if (isnan(got) || isinf(got) || isinf(want))
        return 0;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* Adds one pair (element `index`: got against want) to r: counts it, tracks
 * the largest finite difference, records a mismatch. For comparisons that
 * walk their own layout (r zeroed, atol / rtol set first). */
static inline void ckt_compare_add(ckt_compare_result *r, size_t index, double got, double want)
{
    r->n++;
    if (isfinite(got) && isfinite(want) && fabs(got - want) > r->max_abs_err) {
        r->max_abs_err = fabs(got - want);
        r->max_abs_index = index;
    }
    if (ckt_close(got, want, r->atol, r->rtol))
        return;
    if (r->reported < CKT_COMPARE_MAX_REPORTED) {
        r->first[r->reported].index = index;
        r->first[r->reported].got = got;
        r->first[r->reported].want = want;
        r->reported++;
    }
    r->mismatches++;
}

/* Compares n elements of got (type gdt) and want (type wdt), host buffers.
 * Returns CKT_SUCCESS when all match, CKT_ERROR_MISMATCH otherwise. */
static inline ckt_status ckt_compare(ckt_compare_result *r, const void *got, ckt_dtype gdt,
                                     const void *want, ckt_dtype wdt, size_t n, double atol,
                                     double rtol)
{
    if (!r)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_compare: r is NULL");
    memset(r, 0, sizeof *r);
    r->atol = atol;
    r->rtol = rtol;
    if (n && (!got || !want))
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_compare: %s is NULL", got ? "want" : "got");
    for (size_t i = 0; i < n; i++)
        ckt_compare_add(r, i, ckt_load_f32(got, gdt, i), ckt_load_f32(want, wdt, i));
    if (r->mismatches)
        return ckt__fail(CKT_ERROR_MISMATCH, "%zu of %zu elements differ", r->mismatches, n);
    return CKT_SUCCESS;
}

static inline void ckt_compare_print(FILE *f, const char *what, const ckt_compare_result *r)
{
    if (!r->mismatches) {
        fprintf(f, "%s: all %zu elements match (atol %g, rtol %g), max abs err %g\n", what, r->n,
                r->atol, r->rtol, r->max_abs_err);
        return;
    }
    fprintf(f, "%s: %zu of %zu elements differ (atol %g, rtol %g), max abs err %g at [%zu]\n",
            what, r->mismatches, r->n, r->atol, r->rtol, r->max_abs_err, r->max_abs_index);
    for (int i = 0; i < r->reported; i++)
        fprintf(f, "  [%zu] got %.6g want %.6g\n", r->first[i].index, r->first[i].got,
                r->first[i].want);
}

#endif /* CKT_HOST_COMPARE_H */
