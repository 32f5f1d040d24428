/* examples/fmha_fwd — the FMHA forward through the dispatcher, validated
 * against the CPU reference, timed: CK's tile_example_fmha_fwd options plus
 * the KV cache's (-num_splits, -page_block_size, -page_pool_gb,
 * -cache_batch_idx, -table). The program and its options:
 * examples/fmha_fwd/fwd_example.h.
 *
 *   bazel run //examples/fmha_fwd -- -b=2 -h=8 -h_k=2 -s=300 -d=128 -mask=t -lse=1 -prec=bf16
 *   bazel run //examples/fmha_fwd -- -s=1 -s_k=5000 -h=32 -h_k=8 -d=128 -num_splits=0 -page_block_size=16
 */
#include "examples/fmha_fwd/fwd_example.h"

int main(int argc, char **argv) { return fmha_fwd_example(argc, argv, "fmha_fwd"); }
