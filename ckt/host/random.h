/* ckt/host/random.h — seeded random numbers and buffer initialisation.
 *
 * The generator is xoshiro256** seeded through splitmix64: the same seed gives
 * the same numbers on every machine and backend.
 *
 *   ckt_rng r; ckt_rng_seed(&r, 42);
 *   float u = ckt_rng_uniform(&r, -1.0f, 1.0f);   in [lo, hi)
 *   float g = ckt_rng_normal(&r, 0.0f, 1.0f);
 *   int   k = ckt_rng_int(&r, -3, 3);              in [lo, hi], inclusive
 *
 *   ckt_fill(buf, CKT_BF16, n, ckt_init_uniform(-1, 1), seed);   host buffers
 */
#ifndef CKT_HOST_RANDOM_H
#define CKT_HOST_RANDOM_H

#include "ckt/host/dtype.h"
#include "ckt/host/status.h"

#include <math.h>
#include <stdint.h>

typedef struct ckt_rng {
    uint64_t s[4];
} ckt_rng;

static inline uint64_t ckt__splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline void ckt_rng_seed(ckt_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = ckt__splitmix64(&seed);
}

static inline uint64_t ckt__rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t ckt_rng_u64(ckt_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = ckt__rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = ckt__rotl64(s[3], 45);
    return result;
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double ckt_rng_unit(ckt_rng *r) { return (double)(ckt_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0); }

static inline float ckt_rng_uniform(ckt_rng *r, float lo, float hi)
{
    float v = (float)((double)lo + ((double)hi - (double)lo) * ckt_rng_unit(r));
    return v < hi ? v : lo; /* rounding to float may reach hi */
}

/* Box-Muller; one of the pair is discarded to keep the state simple. */
static inline float ckt_rng_normal(ckt_rng *r, float mean, float stddev)
{
    double u1 = 1.0 - ckt_rng_unit(r); /* (0, 1] */
    double u2 = ckt_rng_unit(r);
    return mean + stddev * (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* Uniform integer in [lo, hi] (inclusive); lo <= hi. */
static inline int ckt_rng_int(ckt_rng *r, int lo, int hi)
{
    uint64_t span = (uint64_t)((int64_t)hi - (int64_t)lo) + 1;
    return (int)((int64_t)lo + (int64_t)(ckt_rng_u64(r) % span));
}

typedef enum ckt_init_kind {
    CKT_INIT_UNIFORM, /* a, b: [a, b) */
    CKT_INIT_NORMAL,  /* a: mean, b: stddev */
    CKT_INIT_INT,     /* a, b: integers in [a, b] */
    CKT_INIT_CONST    /* a */
} ckt_init_kind;

typedef struct ckt_init {
    ckt_init_kind kind;
    float a, b;
} ckt_init;

static inline ckt_init ckt_init_make(ckt_init_kind k, float a, float b)
{
    ckt_init i;
    i.kind = k;
    i.a = a;
    i.b = b;
    return i;
}
static inline ckt_init ckt_init_uniform(float lo, float hi) { return ckt_init_make(CKT_INIT_UNIFORM, lo, hi); }
static inline ckt_init ckt_init_normal(float mean, float sd) { return ckt_init_make(CKT_INIT_NORMAL, mean, sd); }
static inline ckt_init ckt_init_int(int lo, int hi) { return ckt_init_make(CKT_INIT_INT, (float)lo, (float)hi); }
static inline ckt_init ckt_init_const(float v) { return ckt_init_make(CKT_INIT_CONST, v, 0); }

/* Fills n elements of the host buffer x (type dt). */
static inline ckt_status ckt_fill(void *x, ckt_dtype dt, size_t n, ckt_init init, uint64_t seed)
{
    if (!x && n)
        return ckt__fail(CKT_ERROR_NULL_POINTER, "ckt_fill: x is NULL");
    if (init.kind == CKT_INIT_INT && init.a > init.b)
        return ckt__fail(CKT_ERROR_INVALID_ARGUMENT, "ckt_fill: int range [%g, %g] is empty",
                         (double)init.a, (double)init.b);
    ckt_rng r;
    ckt_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        float v;
        switch (init.kind) {
        case CKT_INIT_UNIFORM: v = ckt_rng_uniform(&r, init.a, init.b); break;
        case CKT_INIT_NORMAL: v = ckt_rng_normal(&r, init.a, init.b); break;
        case CKT_INIT_INT: v = (float)ckt_rng_int(&r, (int)init.a, (int)init.b); break;
        default: v = init.a; break;
        }
        ckt_store_f32(x, dt, i, v);
    }
    return CKT_SUCCESS;
}

#endif /* CKT_HOST_RANDOM_H */
