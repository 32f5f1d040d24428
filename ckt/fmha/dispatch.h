/* ckt/fmha/dispatch.h — the FMHA forward as a library call: libckt_fmha
 * (lib/fmha/) compiles a set of instances and ckt_fmha_fwd picks one from the
 * arguments. C ABI: callable from C, C++, and Python through ctypes.
 *
 *   ckt_fmha_fwd_args a = CKT_ZERO_INIT;   // ckt/fmha/args.h; device pointers
 *   a.dtype = CKT_BF16; a.q = q; ...
 *   ckt_status s = ckt_fmha_fwd(&a, stream);
 *   if (s != CKT_SUCCESS) fprintf(stderr, "%s\n", ckt_fmha_last_error());
 *
 * Instances, for fp16 and bf16 each (hdim_q / hdim_v):
 *   32/32  64/64  96/96  128/128  192/128  192/192  256/256
 * each without the KV cache (plain tensors: the dispatcher's choice for them)
 * and with it (`_kv_`: pages, split-KV, cache_batch_idx), and decode
 * instances (GQA packed, 16-row tiles, with the KV cache) 64/64 128/128 256/256.
 * The call runs the cheapest instance whose head dims are >= the arguments'
 * (other multiples of 8 up to 256 run padded, e.g. 80 on 96/96, 128/64 on
 * 128/128), and returns CKT_ERROR_NO_INSTANCE, saying why, when none fits
 * (a head dim that is not a multiple of 8 or exceeds 256, or, in a build of
 * another instance set, a family the set leaves out). The instance
 * validates the rest (ckt/fmha/validate.h). What is compiled and why a call
 * runs what it runs: ckt/fmha/registry.h; plans (stages, workspace):
 * ckt/fmha/plan.h.
 *
 * Build: bazel build //lib/fmha:libckt_fmha.so (cpu emulator) or
 * --config=nvidia|amd //lib/fmha:fmha_gpu (bazel-bin/lib/fmha/gpu/libckt_fmha.so);
 * static linking: //lib/fmha:fmha_lib.
 */
#ifndef CKT_FMHA_DISPATCH_H
#define CKT_FMHA_DISPATCH_H

#include "ckt/fmha/args.h"
#include "ckt/fmha/workspace.h"
#include "ckt/host/runtime.h"
#include "ckt/host/status.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One compiled instance: name ("ckt_fmha_fwd_bf16_d128"), type, head dims,
 * and its entry points (from ckt/fmha/fwd_body.h). */
typedef struct ckt_fmha_fwd_instance {
    const char *name;
    ckt_dtype dtype;
    int hdim, hdim_v;
    int (*fits)(const ckt_fmha_fwd_args *a);
    ckt_status (*launch)(const ckt_fmha_fwd_args *a, ckt_stream stream);
    int block_m, block_n; /* the tile: query rows and keys per step */
    ckt_status (*num_splits)(const ckt_fmha_fwd_args *a, int *splits);
    size_t (*workspace_bytes)(const ckt_fmha_fwd_args *a);
    int packs_gqa; /* a decode instance: GQA groups packed (ckt/fmha/pack.h) */
    int kv_cache;  /* takes the KV cache (pages, split-KV, cache_batch_idx); the
                    * instances without it are 2% faster on plain tensors */
    ckt_dtype o_dtype; /* the output's type: dtype, or for fp8 (dtype CKT_FP8_E4M3) fp16 / bf16 */
} ckt_fmha_fwd_instance;

/* Calls with at most this many queries (seqlen_q) run on a decode instance
 * when one covers the head dims (hdim 64, 128, 256); longer ones never do. */
#define CKT_FMHA_DECODE_MAX_Q 16

/* Runs the forward on `stream` (cudaStream_t / hipStream_t; NULL = default):
 * over contiguous K/V or a KV cache (paged or not), split-KV when asked
 * (num_splits, workspace: ckt/fmha/args.h, docs/fmha_inference.md). */
ckt_status ckt_fmha_fwd(const ckt_fmha_fwd_args *a, ckt_stream stream);

/* The workspace a call with a's fields needs once given one (num_splits 0
 * = automatic: the split count the heuristic picks on this device); 0 when
 * it runs unsplit, or when no instance fits (ckt_fmha_last_error() says). */
size_t ckt_fmha_fwd_workspace_bytes(const ckt_fmha_fwd_args *a);

/* The split count a call runs with (1 = unsplit), or -1 when no instance
 * fits. */
int ckt_fmha_fwd_num_splits(const ckt_fmha_fwd_args *a);

/* The instance ckt_fmha_fwd would run for a, or NULL (ckt_fmha_last_error()
 * says why). */
const ckt_fmha_fwd_instance *ckt_fmha_fwd_select(const ckt_fmha_fwd_args *a);

/* The i-th compiled instance (0 <= i < count), NULL past the end. */
const ckt_fmha_fwd_instance *ckt_fmha_fwd_instance_at(int i);

/* The calling thread's last failure detail, and a status's message (for
 * callers without the header-only host layer, e.g. ctypes). */
const char *ckt_fmha_last_error(void);
const char *ckt_fmha_status_string(int status);

/* >>backward (ckt/fmha/bwd_body.h instances; workspace: ckt/fmha/workspace.h)
 *
 *   ckt_fmha_bwd_traits t = CKT_ZERO_INIT;  t.batch = ...;
 *   ckt_fmha_bwd_plan plan;
 *   ckt_fmha_bwd_plan_init(&plan, &t);                 // picks the instance
 *   void *ws; ckt_rt_malloc(&ws, ckt_fmha_bwd_workspace_upper_bound(&plan));
 *   a.workspace = ws; a.workspace_bytes = ...;
 *   ckt_fmha_bwd_prepare_async(&plan, &a, staging, plan.staging_bytes, stream);  // or _prepare
 *   ckt_fmha_bwd_run(&plan, &a, stream);               // dot_do_o, dq_dk_dv, convert_dq
 *
 * or, in one call that plans and prepares synchronously (group mode: reads
 * the seqstarts back, which waits for the stream):
 *   a.workspace = ws; a.workspace_bytes = ckt_fmha_bwd_workspace_bytes(&a);
 *   ckt_fmha_bwd(&a, stream);
 *
 * Instances, fp16 and bf16 each: the forward's head-dim pairs. */
typedef struct ckt_fmha_bwd_instance {
    const char *name;
    ckt_dtype dtype;
    int hdim, hdim_v;
    int block_m, block_n, blocks_per_mp; /* the dq_dk_dv tile and occupancy */
    int (*fits)(const ckt_fmha_bwd_args *a);
    ckt_status (*run)(const ckt_fmha_bwd_plan *plan, const ckt_fmha_bwd_args *a, ckt_stream stream);
} ckt_fmha_bwd_instance;

/* Plans for traits t: picks the instance (head dims, dtype) and fills plan. */
ckt_status ckt_fmha_bwd_plan_init(ckt_fmha_bwd_plan *plan, const ckt_fmha_bwd_traits *t);

/* Runs the three stages on a workspace prepared for plan. */
ckt_status ckt_fmha_bwd_run(const ckt_fmha_bwd_plan *plan, const ckt_fmha_bwd_args *a, ckt_stream stream);

/* Plans from a's fields (max lengths seqlen_q / seqlen_k, the device's
 * multiprocessors), prepares a->workspace synchronously and runs. */
ckt_status ckt_fmha_bwd(const ckt_fmha_bwd_args *a, ckt_stream stream);

/* The workspace ckt_fmha_bwd needs for a (the plan's upper bound; no lengths
 * read), or 0 when a cannot be planned (ckt_fmha_last_error() says why). */
size_t ckt_fmha_bwd_workspace_bytes(const ckt_fmha_bwd_args *a);

/* The backward instance ckt_fmha_bwd_plan_init would pick, or NULL; and the
 * i-th compiled one. */
const ckt_fmha_bwd_instance *ckt_fmha_bwd_select(const ckt_fmha_bwd_traits *t);
const ckt_fmha_bwd_instance *ckt_fmha_bwd_instance_at(int i);

/* >>append-KV (ckt/fmha/appendkv_body.h; docs/fmha_appendkv.md)
 *
 *   ckt_fmha_appendkv_args a = CKT_ZERO_INIT;  // ckt/fmha/args.h; device pointers
 *   ... a.rotary_dim = 64; a.rotary_cos = cos; a.rotary_sin = sin; ...
 *   ckt_fmha_appendkv(&a, stream);            // K_new, V_new into the cache; Q, K_new rotated
 *   ckt_fmha_fwd(&f, stream);                 // attention over the updated cache
 *
 * One instance per type (fp16, bf16), generic over head dims up to 256. */
typedef struct ckt_fmha_appendkv_instance {
    const char *name;
    ckt_dtype dtype;
    ckt_status (*launch)(const ckt_fmha_appendkv_args *a, ckt_stream stream);
} ckt_fmha_appendkv_instance;

/* Appends and rotates on `stream`; validation as ckt_fmha_appendkv_validate. */
ckt_status ckt_fmha_appendkv(const ckt_fmha_appendkv_args *a, ckt_stream stream);

/* The i-th compiled append-KV instance, NULL past the end. */
const ckt_fmha_appendkv_instance *ckt_fmha_appendkv_instance_at(int i);

/* The append-KV instance ckt_fmha_appendkv would run for a (its dtype, head
 * dims up to 256, multiples of 8), or NULL (ckt_fmha_last_error() says why,
 * naming the instance set when this build has no append-KV instance). */
const ckt_fmha_appendkv_instance *ckt_fmha_appendkv_select(const ckt_fmha_appendkv_args *a);

/* ABI check for bindings: the offset of a field of ckt_fmha_fwd_args in this
 * library's build ("sizeof" gives the struct size), (size_t)-1 for an unknown
 * name. bench/ckt_fmha.py compares it with its ctypes Structure. */
size_t ckt_fmha_fwd_args_offset(const char *field);
size_t ckt_fmha_bwd_args_offset(const char *field);
size_t ckt_fmha_appendkv_args_offset(const char *field);

#ifdef __cplusplus
}
#endif

#endif /* CKT_FMHA_DISPATCH_H */
