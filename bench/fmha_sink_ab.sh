#!/usr/bin/env bash
# Attention sinks' cost against the plain kernel (issue 12): the forward and
# the backward examples with -sink=0 and -sink=1, alternating, same tensors
# (same seed), one GPU. Prints per point the median ms of each and the ratio
# sink / plain (1.00 = free), as a Markdown table. Forward points: prefill (causal) and decode
# (GQA-packed, split-KV automatic); backward: causal prefill, both modes.
#
#   bash bench/fmha_sink_ab.sh bazel-bin/examples/fmha_fwd/fmha_fwd_gpu bazel-bin/examples/fmha_bwd/fmha_bwd_gpu [rounds]
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
    p="$p $("$bin" -json=1 -v=0 -sink=0 "$@" 2>/dev/null | ms)"
    s="$s $("$bin" -json=1 -v=0 -sink=1 "$@" 2>/dev/null | ms)"
  done
  local mp ms_
  mp=$(echo $p | tr ' ' '\n' | median); ms_=$(echo $s | tr ' ' '\n' | median)
  printf '| %s | %.4f | %.4f | %.3f |\n' "$name" "$mp" "$ms_" "$(awk -v a="$ms_" -v b="$mp" 'BEGIN {print a / b}')"
}
# a Markdown table (docs/perf/sink_ab_*.md are this script's output)
echo "Attention sinks against the plain kernel: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), bf16, median of $rounds alternating runs ($(date -u +%F))"
echo
echo "| point | plain ms | sink ms | sink / plain |"
echo "|---|---|---|---|"
ab "fwd b4 h16 s4096 d128 causal" "$fwd" -b=4 -h=16 -s=4096 -d=128 -mask=b -prec=bf16 -lse=1
ab "fwd b1 h16 s16384 d128 causal" "$fwd" -b=1 -h=16 -s=16384 -d=128 -mask=b -prec=bf16 -lse=1
ab "fwd b4 h16 s4096 d64 causal" "$fwd" -b=4 -h=16 -s=4096 -d=64 -mask=b -prec=bf16 -lse=1
ab "fwd decode b64 h32/8 s1/8192 d128 auto" "$fwd" -b=64 -h=32 -h_k=8 -s=1 -s_k=8192 -d=128 -prec=bf16 -num_splits=0
ab "fwd decode b8 h64/8 s4/4096 d128 split" "$fwd" -b=8 -h=64 -h_k=8 -s=4 -s_k=4096 -d=128 -mask=b -prec=bf16 -num_splits=4
ab "bwd b4 h16 s4096 d128 causal" "$bwd" -b=4 -h=16 -s=4096 -d=128 -mask=b -prec=bf16
ab "bwd b4 h16 s4096 d128 causal det" "$bwd" -b=4 -h=16 -s=4096 -d=128 -mask=b -prec=bf16 -deterministic=1
