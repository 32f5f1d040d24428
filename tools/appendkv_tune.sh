#!/usr/bin/env bash
# tools/appendkv_tune.sh — examples/fmha_fwd_appendkv against a reduced
# libckt_fmha (the append kernel and the listed forward head dims, sm_90a
# only), for A / B runs of the append on the GPU machine without the full
# Bazel build (which compiles every instance: ~30 min on 2 cores):
#
#   tools/appendkv_tune.sh OUT_NAME DIMS [-DMACRO=VALUE ...]
#   tools/appendkv_tune.sh app decode_d128,d128,decode_d64
#
# writes .gpu_bin/tune/OUT_NAME (the example; its forward runs only the
# listed dims: -d=128 needs decode_d128 for -s up to 16 queries, d128 above).
# ARCH=sm_80 builds for sm_80.
set -euo pipefail
cd "$(dirname "$0")/.."
name=$1; dims=$2; shift 2
FWD_ONLY=1 source tools/tune_common.sh  # the forward alone: no backward instances
flags+=("$@")
pids=()
for f in dispatch appendkv registry plan; do
  "$nvcc" "${flags[@]}" -c "lib/fmha/$f.c" -o "$obj/$f.o" & pids+=($!)
done
for d in ${dims//,/ }; do
  "$nvcc" "${flags[@]}" -c "lib/fmha/fwd_$d.c" -o "$obj/fwd_$d.o" & pids+=($!)
done
"$nvcc" "${flags[@]}" -c examples/fmha_fwd_appendkv/main.c -o "$obj/main.o" & pids+=($!)
for p in "${pids[@]}"; do wait "$p"; done
"$nvcc" -gencode "arch=$carch,code=$arch" -cudart static "$obj"/*.o -o "$out/$name"
rm -rf "$obj"
echo "$out/$name"
