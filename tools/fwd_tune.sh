#!/usr/bin/env bash
# tools/fwd_tune.sh — a reduced libckt_fmha (only the listed head dims,
# sm_90a only) whose forward instances take tuning knobs, for A / B runs of
# bench/fmha_ab.py or bench/fmha_bench.py on the GPU machine without a full
# Bazel build:
#
#   tools/fwd_tune.sh OUT_NAME DIMS [KNOB=VALUE ...] [-DMACRO=VALUE ...]
#   tools/fwd_tune.sh base d64,d128
#   tools/fwd_tune.sh bn192 d64 CKT_FMHA_SM90_BLOCK_N=192
#   tools/fwd_tune.sh dec decode_d64,decode_d128,decode_d256      (the decode instances)
#   tools/fwd_tune.sh dec_bn64 decode_d128 -DCKT__DEC_BN=64        (a file-level knob)
#
# writes .gpu_bin/tune/OUT_NAME.so and prints ptxas's registers and spills of
# the Hopper kernels. The forward body #undef's its knobs after each instance
# (ckt/fmha/fwd_body.h), so a knob given as -D on the command line would reach
# only a file's first instance (fp16): here each knob is #define'd before
# every instance of a copy of lib/fmha/fwd_DIM.c. A -D argument goes to the
# compiler instead, for knobs a file reads once before its instances (the
# decode files' CKT__DEC_BN, CKT__DEC_WARPS, CKT__DEC_STAGES: lib/fmha/
# instances.h). A DIM without a backward file (decode_*) builds the forward
# alone. ARCH=sm_80 builds for sm_80.
set -euo pipefail
cd "$(dirname "$0")/.."
name=$1; dims=$2; shift 2
source tools/tune_common.sh
knobs=""
for kv in "$@"; do
  case $kv in
    -D*) flags+=("$kv") ;;
    *) knobs="$knobs#define ${kv%%=*} ${kv#*=}\n" ;;
  esac
done
pids=()
for f in dispatch appendkv registry plan; do
  "$nvcc" "${flags[@]}" -c "lib/fmha/$f.c" -o "$obj/$f.o" & pids+=($!)
done
for d in ${dims//,/ }; do
  sed "s|^#include CKT_FMHA_FWD_BODY|${knobs}#include CKT_FMHA_FWD_BODY|" "lib/fmha/fwd_$d.c" > "$obj/fwd_$d.c"
  "$nvcc" "${flags[@]}" -Xptxas -v -c "$obj/fwd_$d.c" -o "$obj/fwd_$d.o" 2> "$obj/fwd_$d.ptxas" & pids+=($!)
  if [ -f "lib/fmha/bwd_$d.c" ]; then
    "$nvcc" "${flags[@]}" -c "lib/fmha/bwd_$d.c" -o "$obj/bwd_$d.o" & pids+=($!)
  fi
done
for p in "${pids[@]}"; do wait "$p"; done
grep -A2 "bf16.*sm90n\?_kernel\|decode_bf16_d[0-9]*_kernel" "$obj"/fwd_*.ptxas | grep -E "Compiling|spill|registers" | sed -e "s/^/$name: /" -e "s/ptxas info *: //" || true
"$nvcc" -shared -gencode "arch=$carch,code=$arch" -cudart static "$obj"/*.o -o "$out/$name.so"
rm -rf "$obj"
echo "$out/$name.so"
