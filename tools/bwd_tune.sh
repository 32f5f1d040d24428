#!/usr/bin/env bash
# tools/bwd_tune.sh — build examples/fmha_bwd against a reduced libckt_fmha
# (only the listed head dims, sm_90a only) with backward tuning knobs, for
# experiments on the GPU machine without a full Bazel build (~20 s a variant):
#
#   tools/bwd_tune.sh OUT_NAME DIMS [knob defines...]
#   tools/bwd_tune.sh base d128
#   tools/bwd_tune.sh bn64 d128 -DCKT_FMHA_BWD_BLOCK_N=64
#
# writes .gpu_bin/tune/OUT_NAME (the example, -prec/-d/... as usual) and
# .gpu_bin/tune/OUT_NAME.so (the reduced library, for bench/fmha_bwd_bench.py --lib).
# The knobs (ckt/fmha/bwd_body.h: CKT_FMHA_BWD_*) apply to the backward
# instances only. ARCH=sm_80 builds for sm_80 instead.
set -euo pipefail
cd "$(dirname "$0")/.."
name=$1; dims=$2; shift 2
source tools/tune_common.sh
pids=()
"$nvcc" "${flags[@]}" -c lib/fmha/dispatch.c -o "$obj/dispatch.o" & pids+=($!)
"$nvcc" "${flags[@]}" -c lib/fmha/appendkv.c -o "$obj/appendkv.o" & pids+=($!)
"$nvcc" "${flags[@]}" -c lib/fmha/registry.c -o "$obj/registry.o" & pids+=($!)
"$nvcc" "${flags[@]}" -c lib/fmha/plan.c -o "$obj/plan.o" & pids+=($!)
for d in ${dims//,/ }; do
  "$nvcc" "${flags[@]}" -c "lib/fmha/fwd_$d.c" -o "$obj/fwd_$d.o" & pids+=($!)
  "$nvcc" "${flags[@]}" "$@" -Xptxas -v -c "lib/fmha/bwd_$d.c" -o "$obj/bwd_$d.o" 2> "$obj/bwd_$d.ptxas" & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
grep -A2 "dq_dk_dv" "$obj"/bwd_*.ptxas | grep -E "Compiling|spill|registers" | sed -e "s/^/$name: /" -e "s/ptxas info *: //" || true
"$nvcc" "${flags[@]}" -c examples/fmha_bwd/main.c -o "$obj/main.o"
"$nvcc" -gencode "arch=$carch,code=$arch" -cudart static "$obj"/main.o "$obj"/dispatch.o "$obj"/registry.o "$obj"/plan.o "$obj"/appendkv.o "$obj"/fwd_*.o "$obj"/bwd_*.o -o "$out/$name"
"$nvcc" -shared -gencode "arch=$carch,code=$arch" -cudart static "$obj"/dispatch.o "$obj"/registry.o "$obj"/plan.o "$obj"/appendkv.o "$obj"/fwd_*.o "$obj"/bwd_*.o -o "$out/$name.so"
rm -rf "$obj"
echo "$out/$name $out/$name.so"
