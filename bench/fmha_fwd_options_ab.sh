#!/usr/bin/env bash
# The forward's options (dropout, ALiBi, elementwise bias) in two builds of
# the forward example, alternating, same tensors, one GPU: DIR/prev and
# DIR/new each hold fmha_fwd_gpu (e.g. prev: main's build, new: a change).
# Per point the median ms of new without the option (plain), of prev and of
# new with it, and the ratios.
#
#   bash bench/fmha_fwd_options_ab.sh DIR [rounds]
#
# (build: bazel build --config=nvidia //examples/fmha_fwd:fmha_fwd_gpu)
set -u
d="$1"; rounds="${2:-3}"
ms() { grep -o '"ms":[0-9.]*' | tail -1 | cut -d: -f2; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
pt() { # name opts... -- args
  local name="$1" opt="$2"; shift 2
  local n="" p="" pl=""
  for _ in $(seq "$rounds"); do
    n="$n $("$d/new/fmha_fwd_gpu" -json=1 -v=0 $opt "$@" 2>/dev/null | ms)"
    p="$p $("$d/prev/fmha_fwd_gpu" -json=1 -v=0 $opt "$@" 2>/dev/null | ms)"
    pl="$pl $("$d/new/fmha_fwd_gpu" -json=1 -v=0 "$@" 2>/dev/null | ms)"
  done
  local mn mp ml
  mn=$(echo $n | tr ' ' '\n' | median); mp=$(echo $p | tr ' ' '\n' | median); ml=$(echo $pl | tr ' ' '\n' | median)
  printf '%-46s plain %8.4f  prev %8.4f  new %8.4f ms | prev/plain %.2f  new/plain %.2f  new/prev %.3f\n' "$name" "$ml" "$mp" "$mn" \
    "$(awk -v a="$mp" -v b="$ml" 'BEGIN{print a/b}')" "$(awk -v a="$mn" -v b="$ml" 'BEGIN{print a/b}')" "$(awk -v a="$mn" -v b="$mp" 'BEGIN{print a/b}')"
}
D="-p_drop=0.1 -drop_seed=7 -drop_offset=1"
for o in "dropout|$D" "alibi|-bias=a"; do
  n="${o%%|*}"; x="${o#*|}"
  pt "fwd d128 b4 h16 s4096 causal bf16 $n" "$x" -b=4 -h=16 -s=4096 -d=128 -mask=b -prec=bf16 -lse=1
  pt "fwd d64 b4 h16 s4096 causal bf16 $n" "$x" -b=4 -h=16 -s=4096 -d=64 -mask=b -prec=bf16 -lse=1
  pt "fwd d128 b4 h16 s4096 none fp16 $n" "$x" -b=4 -h=16 -s=4096 -d=128 -prec=fp16 -lse=1
  pt "fwd d256 b2 h16 s4096 causal bf16 $n" "$x" -b=2 -h=16 -s=4096 -d=256 -mask=b -prec=bf16 -lse=1
  pt "fwd decode b8 h64/8 s4/4096 d128 split $n" "$x" -b=8 -h=64 -h_k=8 -s=4 -s_k=4096 -d=128 -mask=b -prec=bf16 -num_splits=4
done
pt "fwd d128 b1 h16 s4096 causal bf16 bias elementwise" "-bias=e" -b=1 -h=16 -s=4096 -d=128 -mask=b -prec=bf16 -lse=1
pt "fwd d64 b1 h16 s4096 none fp16 bias elementwise" "-bias=e" -b=1 -h=16 -s=4096 -d=64 -prec=fp16 -lse=1
pt "fwd decode b8 h64/8 s4/4096 d128 split bias elementwise" "-bias=e" -b=8 -h=64 -h_k=8 -s=4 -s_k=4096 -d=128 -mask=b -prec=bf16 -num_splits=4
