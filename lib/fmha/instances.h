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
 * CKT__FMHA_FWD_FILES here and to FMHA_SRCS in BUILD.
 */
#ifndef CKT_LIB_FMHA_INSTANCES_H
#define CKT_LIB_FMHA_INSTANCES_H

#include "ckt/fmha.h"
#include "ckt/fmha/dispatch.h"

/* The instance files, cheapest first (the dispatcher still picks by cost).
 * A tuning build may list fewer (tools/bwd_tune.sh: -D'CKT__FMHA_FWD_FILES(X)=X(d128)'). */
#ifndef CKT__FMHA_FWD_FILES
#define CKT__FMHA_FWD_FILES(X) X(d32) X(d64) X(d96) X(d128) X(d192_dv128) X(d192) X(d256) \
    X(d32_kv) X(d64_kv) X(d96_kv) X(d128_kv) X(d192_dv128_kv) X(d192_kv) X(d256_kv) \
    X(decode_d64) X(decode_d128) X(decode_d256)
#endif

/* The backward's instance files (bwd_<dims>.c, ckt/fmha/bwd_body.h), the same pairs. */
#ifndef CKT__FMHA_BWD_FILES
#define CKT__FMHA_BWD_FILES(X) X(d32) X(d64) X(d96) X(d128) X(d192_dv128) X(d192) X(d256)
#endif

/* Instances per file: fp16 and bf16. */
#define CKT__FMHA_FWD_PER_FILE 2

#define CKT__FMHA_FWD_TABLE(file) const ckt_fmha_fwd_instance ckt__fmha_fwd_##file[CKT__FMHA_FWD_PER_FILE]

/* The body's NAME_fits / NAME_launch / ... are static: the table carries them out. */
#define CKT__FMHA_FWD_ENTRY(name, dtype, hdim, hdim_v)                                                    \
    {#name, (dtype), (hdim), (hdim_v), name##_fits, name##_launch, name##_block_m, name##_block_n,            \
     name##_num_splits, name##_workspace_bytes, name##_packs_gqa, name##_kv_cache}

/* The backward's: the body defines NAME_fits / NAME_run and its tile. */
#define CKT__FMHA_BWD_TABLE(file) const ckt_fmha_bwd_instance ckt__fmha_bwd_##file[CKT__FMHA_FWD_PER_FILE]
#define CKT__FMHA_BWD_ENTRY(name, dtype, hdim, hdim_v)                                                    \
    {#name, (dtype), (hdim), (hdim_v), name##_block_m, name##_block_n, name##_blocks_per_mp, name##_fits, name##_run}

/* The append-KV instances (appendkv.c: fp16, bf16; ckt/fmha/appendkv_body.h). */
#define CKT__FMHA_APPENDKV_COUNT 2

#ifdef __cplusplus
extern "C" {
#endif
extern const ckt_fmha_appendkv_instance ckt__fmha_appendkv[CKT__FMHA_APPENDKV_COUNT];
/* extern first, so that the const tables have external linkage in C++ too */
#define CKT__FMHA_FWD_DECLARE(file) extern CKT__FMHA_FWD_TABLE(file);
CKT__FMHA_FWD_FILES(CKT__FMHA_FWD_DECLARE)
#undef CKT__FMHA_FWD_DECLARE
#define CKT__FMHA_BWD_DECLARE(file) extern CKT__FMHA_BWD_TABLE(file);
CKT__FMHA_BWD_FILES(CKT__FMHA_BWD_DECLARE)
#undef CKT__FMHA_BWD_DECLARE
#ifdef __cplusplus
}
#endif

#endif /* CKT_LIB_FMHA_INSTANCES_H */
