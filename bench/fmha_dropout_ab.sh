#!/usr/bin/env bash
# Dropout's cost against the plain kernel: the forward and the backward
# examples with -p_drop=0 and -p_drop=0.1, alternating, same tensors (same
# seed), one GPU. Prints per point the median ms of each and the ratio
# dropout / plain (1.00 = free). Forward points: prefill (causal, d64 and
# d128), decode (GQA-packed, split-KV); backward: causal prefill, both modes.
#
# With FWD_BASE / BWD_BASE set (the same examples built from the commit before
# dropout), also the plain path of this build against that one: dropout off
# must cost nothing (the key loop has a copy of its own for it).
#
#   bash bench/fmha_dropout_ab.sh bazel-bin/examples/fmha_fwd/fmha_fwd_gpu bazel-bin/examples/fmha_bwd/fmha_bwd_gpu [rounds]
#   FWD_BASE=/tmp/base/fmha_fwd_gpu BWD_BASE=/tmp/base/fmha_bwd_gpu bash bench/fmha_dropout_ab.sh ...
#
# (build: bazel build --config=nvidia //examples/fmha_fwd:fmha_fwd_gpu //examples/fmha_bwd:fmha_bwd_gpu)
set -eu
fwd="$1"; bwd="$2"; rounds="${3:-3}"
ms() { grep -o '"ms":[0-9.]*' | tail -1 | cut -d: -f2; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ab() { # name binary args...
  local name="$1" bin="$2"; shift 2
  local p="" s=""
  for _ in $(seq "$rounds"); do
    p="$p $("$bin" -json=1 -v=0 "$@" 2>/dev/null | ms)"
    s="$s $("$bin" -json=1 -v=0 -p_drop=0.1 -drop_seed=7 -drop_offset=1 "$@" 2>/dev/null | ms)"
  done
  local mp ms_
  mp=$(echo $p | tr ' ' '\n' | median); ms_=$(echo $s | tr ' ' '\n' | median)
  printf '%-40s plain %9.4f ms  dropout %9.4f ms  dropout/plain %.3f\n' "$name" "$mp" "$ms_" "$(awk -v a="$ms_" -v b="$mp" 'BEGIN {print a / b}')"
}
off() { # name binary baseline-binary args...: the plain path, this build against the baseline
  local name="$1" bin="$2" base="$3"; shift 3
  [ -n "$base" ] || return 0
  local p="" b=""
  for _ in $(seq "$rounds"); do
    p="$p $("$bin" -json=1 -v=0 "$@" 2>/dev/null | ms)"
    b="$b $("$base" -json=1 -v=0 "$@" 2>/dev/null | ms)"
  done
  local mp mb
  mp=$(echo $p | tr ' ' '\n' | median); mb=$(echo $b | tr ' ' '\n' | median)
  printf '%-40s base  %9.4f ms  this    %9.4f ms  this/base     %.3f\n' "off: $name" "$mb" "$mp" "$(awk -v a="$mp" -v b="$mb" 'BEGIN {print a / b}')"
}
pts_fwd=("fwd b4 h16 s4096 d128 causal|-b=4 -h=16 -s=4096 -d=128 -mask=b -prec=bf16 -lse=1"
         "fwd b1 h16 s16384 d128 causal|-b=1 -h=16 -s=16384 -d=128 -mask=b -prec=bf16 -lse=1"
         "fwd b4 h16 s4096 d64 causal|-b=4 -h=16 -s=4096 -d=64 -mask=b -prec=bf16 -lse=1"
         "fwd b4 h16 s4096 d128 none|-b=4 -h=16 -s=4096 -d=128 -prec=fp16 -lse=1"
         "fwd decode b8 h64/8 s4/4096 d128 split|-b=8 -h=64 -h_k=8 -s=4 -s_k=4096 -d=128 -mask=b -prec=bf16 -num_splits=4")
pts_bwd=("bwd b4 h16 s4096 d128 causal|-b=4 -h=16 -s=4096 -d=128 -mask=b -prec=bf16"
         "bwd b4 h16 s4096 d64 causal|-b=4 -h=16 -s=4096 -d=64 -mask=b -prec=bf16"
         "bwd b4 h16 s4096 d128 causal det|-b=4 -h=16 -s=4096 -d=128 -mask=b -prec=bf16 -deterministic=1")
for p in "${pts_fwd[@]}"; do ab "${p%%|*}" "$fwd" ${p#*|}; done
for p in "${pts_bwd[@]}"; do ab "${p%%|*}" "$bwd" ${p#*|}; done
for p in "${pts_fwd[@]}"; do off "${p%%|*}" "$fwd" "${FWD_BASE:-}" ${p#*|}; done
for p in "${pts_bwd[@]}"; do off "${p%%|*}" "$bwd" "${BWD_BASE:-}" ${p#*|}; done
