#!/usr/bin/env bash
# Bias and ALiBi: their cost against the plain kernel, and (optionally) the
# plain kernel's cost against main's build. The forward and backward examples
# with -bias=n, -bias=e, -bias=a (and -bias=e -dbias=1 in the backward),
# alternating, same tensors (same seed), one GPU. Prints per point the median
# ms of each and the ratios to the plain run (1.00 = free).
#
#   bash bench/fmha_bias_ab.sh FWD BWD [rounds] [FWD_MAIN BWD_MAIN]
#
#   FWD, BWD            bazel-bin/examples/fmha_fwd/fmha_fwd_gpu, bazel-bin/examples/fmha_bwd/fmha_bwd_gpu
#                       (bazel build --config=nvidia //examples/fmha_fwd:fmha_fwd_gpu //examples/fmha_bwd:fmha_bwd_gpu)
#   FWD_MAIN, BWD_MAIN  optional: the same examples built from main; then a column "off/main"
#                       compares this branch's -bias=n run with main's (the option off must cost
#                       nothing: the plain kernels have no bias code, see docs/fmha.md)
#
# Forward points: prefill (causal, d64 and d128), decode (GQA-packed,
# split-KV automatic and explicit); backward: causal prefill, both modes.
# The elementwise bias is a full [b][h][s_q][s_k] tensor (b2 h16 s4096: 1 GiB
# in bf16, made and filled on the host each run: the prefill points take a
# while; dbias as much again).
set -eu
fwd="$1"; bwd="$2"; rounds="${3:-3}"; fwd_main="${4:-}"; bwd_main="${5:-}"
ms() { grep -o '"ms":[0-9.]*' | tail -1 | cut -d: -f2; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
# name kind(fwd|bwd) args...
ab() {
  local name="$1" kind="$2"; shift 2
  local bin main variants
  if [ "$kind" = fwd ]; then bin="$fwd"; main="$fwd_main"; variants="-bias=e -bias=a"
  else bin="$bwd"; main="$bwd_main"; variants="-bias=e -bias=e:-dbias=1 -bias=a"; fi
  local p="" m="" v
  declare -A got
  for _ in $(seq "$rounds"); do
    p="$p $("$bin" -json=1 -v=0 -bias=n "$@" 2>/dev/null | ms)"
    if [ -n "$main" ]; then m="$m $("$main" -json=1 -v=0 "$@" 2>/dev/null | ms)"; fi
    for v in $variants; do
      got[$v]="${got[$v]:-} $("$bin" -json=1 -v=0 ${v//:/ } "$@" 2>/dev/null | ms)"
    done
  done
  local mp line
  mp=$(echo $p | tr ' ' '\n' | median)
  line=$(printf '%-38s plain %9.4f ms' "$name" "$mp")
  if [ -n "$main" ]; then
    local mm; mm=$(echo $m | tr ' ' '\n' | median)
    line="$line$(printf '  main %9.4f  off/main %.3f' "$mm" "$(awk -v a="$mp" -v b="$mm" 'BEGIN {print a / b}')")"
  fi
  for v in $variants; do
    local mv; mv=$(echo ${got[$v]} | tr ' ' '\n' | median)
    line="$line$(printf '  %s %9.4f (%.3f)' "${v//:/ }" "$mv" "$(awk -v a="$mv" -v b="$mp" 'BEGIN {print a / b}')")"
  done
  echo "$line"
}
ab "fwd b2 h16 s4096 d128 causal" fwd -b=2 -h=16 -s=4096 -d=128 -mask=b -prec=bf16 -lse=1
ab "fwd b2 h16 s4096 d64 causal" fwd -b=2 -h=16 -s=4096 -d=64 -mask=b -prec=bf16 -lse=1
ab "fwd b2 h16 s4096 d128 none" fwd -b=2 -h=16 -s=4096 -d=128 -prec=bf16
ab "fwd decode b64 h32/8 s1/8192 d128 auto" fwd -b=64 -h=32 -h_k=8 -s=1 -s_k=8192 -d=128 -prec=bf16 -num_splits=0
ab "fwd decode b8 h64/8 s4/4096 d128 split" fwd -b=8 -h=64 -h_k=8 -s=4 -s_k=4096 -d=128 -mask=b -prec=bf16 -num_splits=4
ab "bwd b2 h16 s4096 d128 causal" bwd -b=2 -h=16 -s=4096 -d=128 -mask=b -prec=bf16
ab "bwd b2 h16 s4096 d128 causal det" bwd -b=2 -h=16 -s=4096 -d=128 -mask=b -prec=bf16 -deterministic=1
ab "bwd b2 h16 s4096 d64 causal" bwd -b=2 -h=16 -s=4096 -d=64 -mask=b -prec=bf16
