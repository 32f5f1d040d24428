/* lib/fmha/instances.h — how libckt_fmha's instance files publish their
 * instances to the dispatcher (dispatch.c).
 *
 * Each fwd_<dims>.c instantiates ckt/fmha/fwd_body.h for fp16 and bf16 and
 * lists both in a table named after the file:
 *
 *   #define CKT_FMHA_NAME ckt_fmha_fwd_f16_d128  ... #include CKT_FMHA_FWD_BODY
 *   CKT__FMHA_FWD_TABLE(d128) = {CKT__FMHA_FWD_ENTRY(ckt_fmha_fwd_f16_d128, CKT_F16, 128, 128), ...};
 *
 * One file per head-dim pair, so that the build compiles them in parallel
 * (each holds the two dtypes). To add an instance file: add it to
 * lib/fmha/instances.bzl, the one list: lib/fmha/BUILD derives from it both
 * the files an instance set compiles and the X-macros below.
 */
#ifndef CKT_LIB_FMHA_INSTANCES_H
#define CKT_LIB_FMHA_INSTANCES_H

#include "ckt/fmha.h"
#include "ckt/fmha/dispatch.h"
#include "ckt/fmha/plan.h"
#include "ckt/fmha/registry.h"

#include <stdarg.h>
#include <stddef.h>

/* From the build (lib/fmha/instances.bzl, fmha_set_defines), for the chosen
 * instance set:
 *   CKT__FMHA_FWD_FILES(X)   X(d32)X(d64)...  the forward's instance files, cheapest first
 *   CKT__FMHA_BWD_FILES(X)   the backward's (bwd_<dims>.c); may be empty
 *   CKT__FMHA_HAS_APPENDKV   1 when appendkv.c is compiled
 *   CKT__FMHA_CATALOG(X)     X(FAMILY, file, hdim, hdim_v) for every file of
 *                            every set: what another set would offer
 *   CKT__FMHA_SETS(X)        X(name, family bitmask) for every named set
 *   CKT_FMHA_SET_NAME        the set's name (a bare word: inference)
 * A tuning build outside Bazel gives the file lists itself
 * (tools/bwd_tune.sh: -D'CKT__FMHA_FWD_FILES(X)=X(d128)'); the rest then
 * defaults to a set named "custom" that knows no other. */
/* An instance file compiled alone (tools/amd_resources.sh lib/fmha/fwd_d128.c)
 * needs no list; dispatch.c, which does, checks that the build gave them. */
#ifndef CKT__FMHA_FWD_FILES
#define CKT__FMHA_FWD_FILES(X)
#endif
#ifndef CKT__FMHA_BWD_FILES
#define CKT__FMHA_BWD_FILES(X)
#endif
#ifndef CKT__FMHA_HAS_APPENDKV
#define CKT__FMHA_HAS_APPENDKV 1
#endif
#ifndef CKT__FMHA_CATALOG
#define CKT__FMHA_CATALOG(X)
#endif
#ifndef CKT__FMHA_SETS
#define CKT__FMHA_SETS(X)
#endif
#ifndef CKT_FMHA_SET_NAME
#define CKT_FMHA_SET_NAME custom
#endif
#define CKT__FMHA_STR2(...) #__VA_ARGS__
#define CKT__FMHA_STR(...) CKT__FMHA_STR2(__VA_ARGS__)

/* Instances per file: fp16 and bf16. */
#define CKT__FMHA_FWD_PER_FILE 2

#define CKT__FMHA_FWD_TABLE(file) const ckt_fmha_fwd_instance ckt__fmha_fwd_##file[CKT__FMHA_FWD_PER_FILE]

/* The body's NAME_fits / NAME_launch / ... are static: the table carries them out. */
#define CKT__FMHA_FWD_ENTRY(name, dtype, hdim, hdim_v)                                                    \
    {#name, (dtype), (hdim), (hdim_v), name##_fits, name##_launch, name##_block_m, name##_block_n,            \
     name##_num_splits, name##_workspace_bytes, name##_packs_gqa, name##_kv_cache, (ckt_dtype)name##_o_dtype}

/* The backward's: the body defines NAME_fits / NAME_run and its tile. */
#define CKT__FMHA_BWD_TABLE(file) const ckt_fmha_bwd_instance ckt__fmha_bwd_##file[CKT__FMHA_FWD_PER_FILE]
#define CKT__FMHA_BWD_ENTRY(name, dtype, hdim, hdim_v)                                                    \
    {#name, (dtype), (hdim), (hdim_v), name##_block_m, name##_block_n, name##_blocks_per_mp, name##_fits, name##_run}

/* The append-KV instances (appendkv.c: fp16, bf16; ckt/fmha/appendkv_body.h). */
#define CKT__FMHA_APPENDKV_COUNT 2

#ifdef __cplusplus
extern "C" {
#endif
#if CKT__FMHA_HAS_APPENDKV
extern const ckt_fmha_appendkv_instance ckt__fmha_appendkv[CKT__FMHA_APPENDKV_COUNT];
#endif
/* extern first, so that the const tables have external linkage in C++ too */
#define CKT__FMHA_FWD_DECLARE(file) extern CKT__FMHA_FWD_TABLE(file);
CKT__FMHA_FWD_FILES(CKT__FMHA_FWD_DECLARE)
#undef CKT__FMHA_FWD_DECLARE
#define CKT__FMHA_BWD_DECLARE(file) extern CKT__FMHA_BWD_TABLE(file);
CKT__FMHA_BWD_FILES(CKT__FMHA_BWD_DECLARE)
#undef CKT__FMHA_BWD_DECLARE

/* >>private helpers of dispatch.c, registry.c and plan.c (registry.c) */

/* snprintf-style output: writes what fits into buf[0 .. size) (always
 * terminated when size > 0), counts the whole length in len. */
typedef struct ckt__fmha_out {
    char *buf;
    size_t size, len;
} ckt__fmha_out;

static inline ckt__fmha_out ckt__fmha_out_make(char *buf, size_t size)
{
    ckt__fmha_out o;
    o.buf = buf;
    o.size = buf ? size : 0;
    o.len = 0;
    if (o.size)
        buf[0] = 0;
    return o;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void ckt__fmha_printf(ckt__fmha_out *o, const char *fmt, ...);

/* The named sets that compile some family of the bitmask `families`
 * ("all or inference"); "all" when the build knows no set list. */
void ckt__fmha_sets_with(unsigned families, char *buf, size_t size);

/* When this build lacks every instance of `families` (bitmask of
 * ckt_fmha_family) that covers head dims hq/hv, but another named set has
 * one: writes "; instance set 'training' has no fwd_kv instance for it
 * (build with --define=ckt_fmha_set=all or inference)" into buf and returns
 * 1; else buf = "" and 0. */
int ckt__fmha_set_hint(unsigned families, int hq, int hv, char *buf, size_t size);

/* ckt_fmha_fwd_select with the status (dispatch.c). */
const ckt_fmha_fwd_instance *ckt__fmha_fwd_pick(const ckt_fmha_fwd_args *a, ckt_status *st);

#ifdef __cplusplus
}
#endif

/* The decode instances' block (lib/fmha/fwd_decode_d*.c): on NVIDIA
 * CKT__DEC_WARPS warps share the 16 rows and split each key tile of
 * CKT__DEC_BN keys (CKT_FMHA_KSPLIT, ckt/fmha/fwd_body.h), a file's BN its
 * own; CDNA one wavefront (no KSPLIT there). -D overrides for experiments. */
#if defined(CKT_HAS_MFMA)
#undef CKT__DEC_WARPS
#undef CKT__DEC_BN
#define CKT__DEC_WARPS 1
#elif !defined(CKT__DEC_WARPS)
#define CKT__DEC_WARPS 4
#endif

#endif /* CKT_LIB_FMHA_INSTANCES_H */
