/* lib/fmha/registry.c — libckt_fmha's registry (ckt/fmha/registry.h): every
 * compiled instance described from the dispatcher's tables, the instance
 * set, the JSON export, and the set-aware hints of the dispatcher's
 * messages (lib/fmha/instances.h). */
#include "lib/fmha/instances.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* >>names */

#define CKT__FMHA_FAMILY_NAMES(X) X(FWD, "fwd") X(FWD_KV, "fwd_kv") X(FWD_DECODE, "fwd_decode") \
    X(APPENDKV, "appendkv") X(BWD, "bwd")

const char *ckt_fmha_family_name(int family)
{
#define CKT__FMHA_FAMILY_CASE(f, s) \
    case CKT_FMHA_FAMILY_##f:       \
        return s;
    switch (family) {
        CKT__FMHA_FAMILY_NAMES(CKT__FMHA_FAMILY_CASE)
    default:
        return "?";
    }
#undef CKT__FMHA_FAMILY_CASE
}

const char *ckt_fmha_feature_name(int bit)
{
#define CKT__FMHA_FEATURE_CASE(name, b, s) \
    case b:                                \
        return s;
    switch (bit) {
        CKT_FMHA_FEATURE_TABLE(CKT__FMHA_FEATURE_CASE)
    default:
        return NULL;
    }
#undef CKT__FMHA_FEATURE_CASE
}

const char *ckt_fmha_instance_set(void) { return CKT__FMHA_STR(CKT_FMHA_SET_NAME); }

const char *ckt_fmha_target_arch(void)
{
#if defined(CKT__FMHA_ARCH)
    return CKT__FMHA_STR(CKT__FMHA_ARCH);
#elif defined(CKT_BACKEND_NVIDIA)
    return "nvidia";
#elif defined(CKT_BACKEND_AMD)
    return "amd";
#elif defined(CKT_CPU_PROFILE_CDNA)
    return "cpu-emulator cdna";
#else
    return "cpu-emulator nv";
#endif
}

/* >>output */

void ckt__fmha_printf(ckt__fmha_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int room = o->len < o->size;
    const int w = vsnprintf(room ? o->buf + o->len : NULL, room ? o->size - o->len : 0, fmt, ap);
    va_end(ap);
    o->len += w > 0 ? (size_t)w : 0;
}

/* >>the entries */

/* One per compiled instance; at most this many. */
#define CKT__FMHA_REGISTRY_MAX 256

static ckt_fmha_registry_entry ckt__fmha_registry[CKT__FMHA_REGISTRY_MAX];
static int ckt__fmha_registry_n;
static pthread_once_t ckt__fmha_registry_once = PTHREAD_ONCE_INIT;

/* What every forward and backward instance takes at run time. */
#define CKT__FMHA_FEATURES_ATTENTION                                                                        \
    (CKT_FMHA_FEATURE_GROUP_MODE | CKT_FMHA_FEATURE_GQA | CKT_FMHA_FEATURE_MASKS | CKT_FMHA_FEATURE_SOFTCAP | \
     CKT_FMHA_FEATURE_LSE | CKT_FMHA_FEATURE_PADDED_HDIM | CKT_FMHA_FEATURE_SINK)
#define CKT__FMHA_FEATURES_CACHE (CKT_FMHA_FEATURE_KV_CACHE | CKT_FMHA_FEATURE_PAGED | CKT_FMHA_FEATURE_SPLIT_KV)

static ckt_fmha_registry_entry *ckt__fmha_registry_add(const char *name, ckt_fmha_family family, ckt_dtype dtype,
                                                       int hdim, int hdim_v, const void *instance)
{
    if (ckt__fmha_registry_n >= CKT__FMHA_REGISTRY_MAX)
        return NULL;
    ckt_fmha_registry_entry *e = &ckt__fmha_registry[ckt__fmha_registry_n++];
    memset(e, 0, sizeof *e);
    e->name = name;
    e->family = family;
    e->dtype = dtype;
    e->hdim = hdim;
    e->hdim_v = hdim_v;
    e->arch = ckt_fmha_target_arch();
    e->instance_set = ckt_fmha_instance_set();
    e->instance = instance;
    e->runnable = 1;
    return e;
}

static void ckt__fmha_registry_stage(ckt_fmha_registry_entry *e, ckt_fmha_stage s)
{
    if (e->num_stages < CKT_FMHA_MAX_STAGES)
        e->stages[e->num_stages++] = ckt_fmha_stage_name(s);
}

static void ckt__fmha_registry_build(void)
{
    ckt_fmha_registry_entry *e;
    for (int i = 0; ckt_fmha_fwd_instance_at(i); i++) {
        const ckt_fmha_fwd_instance *in = ckt_fmha_fwd_instance_at(i);
        const ckt_fmha_family f = in->packs_gqa  ? CKT_FMHA_FAMILY_FWD_DECODE
                                  : in->kv_cache ? CKT_FMHA_FAMILY_FWD_KV
                                                 : CKT_FMHA_FAMILY_FWD;
        if (!(e = ckt__fmha_registry_add(in->name, f, in->dtype, in->hdim, in->hdim_v, in)))
            return;
        e->block_m = in->block_m;
        e->block_n = in->block_n;
        e->features = CKT__FMHA_FEATURES_ATTENTION | (in->kv_cache ? CKT__FMHA_FEATURES_CACHE : 0u) |
                      (in->packs_gqa ? CKT_FMHA_FEATURE_PACKED_GQA : 0u);
        ckt_fmha_fwd_args probe = CKT_ZERO_INIT;
        probe.dtype = in->dtype;
        probe.o_dtype = in->o_dtype;
        probe.hdim_q = in->hdim;
        probe.hdim_v = in->hdim_v;
        e->runnable = in->fits(&probe);
        ckt__fmha_registry_stage(e, CKT_FMHA_STAGE_ATTENTION);
        if (in->kv_cache) /* split-KV: the attention writes partials, a combine merges them */
            ckt__fmha_registry_stage(e, CKT_FMHA_STAGE_COMBINE);
    }
    for (int i = 0; ckt_fmha_appendkv_instance_at(i); i++) {
        const ckt_fmha_appendkv_instance *in = ckt_fmha_appendkv_instance_at(i);
        if (!(e = ckt__fmha_registry_add(in->name, CKT_FMHA_FAMILY_APPENDKV, in->dtype, CKT_FMHA_APPENDKV_MAX_HDIM,
                                         CKT_FMHA_APPENDKV_MAX_HDIM, in)))
            return;
        e->block_m = 8; /* token rows per block (ckt/fmha/appendkv_body.h) */
        e->features = CKT_FMHA_FEATURE_GROUP_MODE | CKT_FMHA_FEATURE_GQA | CKT_FMHA_FEATURE_PADDED_HDIM |
                      CKT_FMHA_FEATURE_KV_CACHE | CKT_FMHA_FEATURE_PAGED | CKT_FMHA_FEATURE_ROTARY;
        ckt__fmha_registry_stage(e, CKT_FMHA_STAGE_APPENDKV);
    }
    for (int i = 0; ckt_fmha_bwd_instance_at(i); i++) {
        const ckt_fmha_bwd_instance *in = ckt_fmha_bwd_instance_at(i);
        if (!(e = ckt__fmha_registry_add(in->name, CKT_FMHA_FAMILY_BWD, in->dtype, in->hdim, in->hdim_v, in)))
            return;
        e->block_m = in->block_m;
        e->block_n = in->block_n;
        e->features = CKT__FMHA_FEATURES_ATTENTION | CKT_FMHA_FEATURE_DETERMINISTIC;
        ckt_fmha_bwd_args probe = CKT_ZERO_INIT;
        probe.dtype = in->dtype;
        probe.hdim_q = in->hdim;
        probe.hdim_v = in->hdim_v;
        e->runnable = in->fits(&probe);
        ckt__fmha_registry_stage(e, CKT_FMHA_STAGE_DOT_DO_O);
        ckt__fmha_registry_stage(e, CKT_FMHA_STAGE_DQ_DK_DV);
        ckt__fmha_registry_stage(e, CKT_FMHA_STAGE_CONVERT_DQ);
    }
}

static void ckt__fmha_registry_init(void) { pthread_once(&ckt__fmha_registry_once, ckt__fmha_registry_build); }

int ckt_fmha_registry_count(void)
{
    ckt__fmha_registry_init();
    return ckt__fmha_registry_n;
}

const ckt_fmha_registry_entry *ckt_fmha_registry_at(int i)
{
    ckt__fmha_registry_init();
    return i >= 0 && i < ckt__fmha_registry_n ? &ckt__fmha_registry[i] : NULL;
}

const ckt_fmha_registry_entry *ckt_fmha_registry_find(const char *name)
{
    for (int i = 0; name && i < ckt_fmha_registry_count(); i++)
        if (strcmp(ckt__fmha_registry[i].name, name) == 0)
            return &ckt__fmha_registry[i];
    return NULL;
}

int ckt_fmha_registry_has_family(int family)
{
    for (int i = 0; i < ckt_fmha_registry_count(); i++)
        if ((int)ckt__fmha_registry[i].family == family)
            return 1;
    return 0;
}

/* >>instance sets: the catalog of every set's files, the sets' families */

typedef struct ckt__fmha_catalog_entry {
    ckt_fmha_family family;
    const char *file;
    int hdim, hdim_v;
} ckt__fmha_catalog_entry;

typedef struct ckt__fmha_set_entry {
    const char *name;
    unsigned families; /* bitmask of ckt_fmha_family */
} ckt__fmha_set_entry;

#define CKT__FMHA_CATALOG_ROW(fam, file, h, hv) {CKT_FMHA_FAMILY_##fam, #file, h, hv},
#define CKT__FMHA_SET_ROW(name, mask) {#name, mask},
/* a last row of zeros: the lists may be empty (a build outside Bazel) */
static const ckt__fmha_catalog_entry ckt__fmha_catalog[] = {CKT__FMHA_CATALOG(CKT__FMHA_CATALOG_ROW){
    CKT_FMHA_FAMILY_COUNT, NULL, 0, 0}};
static const ckt__fmha_set_entry ckt__fmha_sets[] = {CKT__FMHA_SETS(CKT__FMHA_SET_ROW){NULL, 0}};
#undef CKT__FMHA_CATALOG_ROW
#undef CKT__FMHA_SET_ROW

/* The families this build compiles, as a bitmask. */
static unsigned ckt__fmha_compiled_families(void)
{
    unsigned m = 0;
    for (int f = 0; f < CKT_FMHA_FAMILY_COUNT; f++)
        m |= ckt_fmha_registry_has_family(f) ? 1u << f : 0u;
    return m;
}

void ckt__fmha_sets_with(unsigned families, char *buf, size_t size)
{
    ckt__fmha_out o = ckt__fmha_out_make(buf, size);
    for (int s = 0; ckt__fmha_sets[s].name; s++)
        if (ckt__fmha_sets[s].families & families)
            ckt__fmha_printf(&o, "%s%s", o.len ? " or " : "", ckt__fmha_sets[s].name);
    if (!o.len)
        ckt__fmha_printf(&o, "all");
}

int ckt__fmha_set_hint(unsigned families, int hq, int hv, char *buf, size_t size)
{
    if (size)
        buf[0] = 0;
    /* the families of the catalog's files that would cover hq/hv */
    unsigned covering = 0;
    for (int i = 0; ckt__fmha_catalog[i].file; i++) {
        const ckt__fmha_catalog_entry *c = &ckt__fmha_catalog[i];
        if ((families >> c->family & 1u) && c->hdim >= hq && c->hdim_v >= hv)
            covering |= 1u << c->family;
    }
    const unsigned missing = covering & ~ckt__fmha_compiled_families();
    if (!missing || (covering & ~missing))
        return 0; /* none in any set, or this build has a covering family (it lacks only head dims) */
    ckt__fmha_out o = ckt__fmha_out_make(buf, size);
    ckt__fmha_printf(&o, "; instance set '%s' has no ", ckt_fmha_instance_set());
    int n = 0;
    for (int f = 0; f < CKT_FMHA_FAMILY_COUNT; f++)
        if (missing >> f & 1u)
            ckt__fmha_printf(&o, "%s%s", n++ ? " or " : "", ckt_fmha_family_name(f));
    char sets[128];
    ckt__fmha_sets_with(missing, sets, sizeof sets);
    ckt__fmha_printf(&o, " instance for it (build with --define=ckt_fmha_set=%s)", sets);
    return 1;
}

/* >>JSON */

static void ckt__fmha_json_entry(ckt__fmha_out *o, const ckt_fmha_registry_entry *e)
{
    ckt__fmha_printf(o,
                     "{\"name\": \"%s\", \"family\": \"%s\", \"dtype\": \"%s\", \"hdim\": %d, \"hdim_v\": %d, "
                     "\"block_m\": %d, \"block_n\": %d, \"features\": [",
                     e->name, ckt_fmha_family_name(e->family), ckt_dtype_name(e->dtype), e->hdim, e->hdim_v,
                     e->block_m, e->block_n);
    int n = 0;
    for (int b = 0; ckt_fmha_feature_name(b); b++)
        if (e->features >> b & 1u)
            ckt__fmha_printf(o, "%s\"%s\"", n++ ? ", " : "", ckt_fmha_feature_name(b));
    ckt__fmha_printf(o, "], \"runnable\": %s, \"stages\": [", e->runnable ? "true" : "false");
    for (int s = 0; s < e->num_stages; s++)
        ckt__fmha_printf(o, "%s\"%s\"", s ? ", " : "", e->stages[s]);
    ckt__fmha_printf(o, "], \"arch\": \"%s\", \"instance_set\": \"%s\"}", e->arch, e->instance_set);
}

size_t ckt_fmha_registry_json_family(char *buf, size_t size, int family)
{
    ckt__fmha_out o = ckt__fmha_out_make(buf, size);
    ckt__fmha_printf(&o, "{\"instance_set\": \"%s\", \"arch\": \"%s\",\n \"sets\": {", ckt_fmha_instance_set(),
                     ckt_fmha_target_arch());
    for (int s = 0; ckt__fmha_sets[s].name; s++) {
        ckt__fmha_printf(&o, "%s\"%s\": [", s ? ", " : "", ckt__fmha_sets[s].name);
        int n = 0;
        for (int f = 0; f < CKT_FMHA_FAMILY_COUNT; f++)
            if (ckt__fmha_sets[s].families >> f & 1u)
                ckt__fmha_printf(&o, "%s\"%s\"", n++ ? ", " : "", ckt_fmha_family_name(f));
        ckt__fmha_printf(&o, "]");
    }
    ckt__fmha_printf(&o, "},\n \"instances\": [");
    int n = 0;
    for (int i = 0; i < ckt_fmha_registry_count(); i++) {
        const ckt_fmha_registry_entry *e = ckt_fmha_registry_at(i);
        if (family >= 0 && (int)e->family != family)
            continue;
        ckt__fmha_printf(&o, "%s\n  ", n++ ? "," : "");
        ckt__fmha_json_entry(&o, e);
    }
    ckt__fmha_printf(&o, "\n]}\n");
    return o.len;
}

size_t ckt_fmha_registry_json(char *buf, size_t size) { return ckt_fmha_registry_json_family(buf, size, -1); }
