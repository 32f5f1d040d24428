/* examples/fmha_batch_prefill — batch prefill: the queries of a batch of
 * requests (group mode, one packed sequence) attend to their paged KV cache,
 * causal bottom-right (each request's new tokens are the last of its
 * context). examples/fmha_fwd's program (examples/fmha_fwd/fwd_example.h)
 * with these defaults, which the command line overrides:
 *
 *   -mode=1 -mask=b -page_block_size=16 -table=vllm -b=3 -s=64,1,37 -s_k=300,40,77
 *
 *   bazel run //examples/fmha_batch_prefill -- -table=sglang -page_block_size=3
 *   bazel run //examples/fmha_batch_prefill -- -page_block_size=128 -page_pool_gb=5   (pool past 4 GB)
 *   fmha_batch_prefill_gpu -b=8 -s=512 -s_k=4096 -h=32 -h_k=8 -d=128 -prec=bf16 -v=0
 *
 * -s: each request's new tokens (queries), -s_k: its context (keys, the
 * new tokens included); both lists as in group mode (the last repeats).
 * -table=vllm: block table [b][pages] + per-request lengths; -table=sglang:
 * kv_indptr / kv_indices / kv_last_page_len.
 */
#include "examples/fmha_fwd/fwd_example.h"

int main(int argc, char **argv)
{
    static const char *const defaults[] = {"-mode=1", "-mask=b", "-page_block_size=16", "-table=vllm",
                                           "-b=3", "-s=64,1,37", "-s_k=300,40,77"};
    enum { ND = sizeof defaults / sizeof defaults[0] };
    char **args = (char **)calloc((size_t)argc + ND + 1, sizeof(char *));
    if (!args)
        return 2;
    args[0] = argv[0];
    for (int i = 0; i < ND; i++) /* first: the last occurrence of an option wins */
        args[1 + i] = (char *)defaults[i];
    for (int i = 1; i < argc; i++)
        args[ND + i] = argv[i];
    const int rc = fmha_fwd_example(argc + ND, args, "fmha_batch_prefill");
    free(args);
    return rc;
}
