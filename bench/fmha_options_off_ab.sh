#!/usr/bin/env bash
# The options' cost when off: the plain paths of three builds of the
# forward and backward examples, alternating, same tensors, one GPU.
# DIR/new, DIR/old and DIR/prev each hold fmha_fwd_gpu and fmha_bwd_gpu
# (e.g. new: this build; old: a build from before the options; prev: the
# build before a change). Prints per point the median ms of each and the
# ratios; then the options on (dropout, ALiBi), new against prev.
#
#   bash bench/fmha_options_off_ab.sh DIR [rounds]
#
# (build: bazel build --config=nvidia //examples/fmha_fwd:fmha_fwd_gpu //examples/fmha_bwd:fmha_bwd_gpu)
set -u
d="$1"; rounds="${2:-5}"
ms() { grep -o '"ms":[0-9.]*' | tail -1 | cut -d: -f2; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
three() { # name kind args...
  local name="$1" kind="$2"; shift 2
  local n="" o="" p=""
  for _ in $(seq "$rounds"); do
    n="$n $("$d/new/fmha_${kind}_gpu" -json=1 -v=0 "$@" 2>/dev/null | ms)"
    o="$o $("$d/old/fmha_${kind}_gpu" -json=1 -v=0 "$@" 2>/dev/null | ms)"
    p="$p $("$d/prev/fmha_${kind}_gpu" -json=1 -v=0 "$@" 2>/dev/null | ms)"
  done
  local mn mo mp
  mn=$(echo $n | tr ' ' '\n' | median); mo=$(echo $o | tr ' ' '\n' | median); mp=$(echo $p | tr ' ' '\n' | median)
  printf '%-44s old %8.4f  prev %8.4f  new %8.4f ms | new/old %.3f  prev/old %.3f  new/prev %.3f\n' "$name" "$mo" "$mp" "$mn" \
    "$(awk -v a="$mn" -v b="$mo" 'BEGIN{print a/b}')" "$(awk -v a="$mp" -v b="$mo" 'BEGIN{print a/b}')" "$(awk -v a="$mn" -v b="$mp" 'BEGIN{print a/b}')"
}
two() { # name kind args... : options on, new vs prev
  local name="$1" kind="$2"; shift 2
  local n="" p=""
  for _ in $(seq "$rounds"); do
    n="$n $("$d/new/fmha_${kind}_gpu" -json=1 -v=0 "$@" 2>/dev/null | ms)"
    p="$p $("$d/prev/fmha_${kind}_gpu" -json=1 -v=0 "$@" 2>/dev/null | ms)"
  done
  local mn mp
  mn=$(echo $n | tr ' ' '\n' | median); mp=$(echo $p | tr ' ' '\n' | median)
  printf '%-44s prev %8.4f  new %8.4f ms | new/prev %.3f\n' "$name" "$mp" "$mn" "$(awk -v a="$mn" -v b="$mp" 'BEGIN{print a/b}')"
}
echo "== plain path (options off)"
three "fwd b4 h16 s4096 d128 causal bf16" fwd -b=4 -h=16 -s=4096 -d=128 -mask=b -prec=bf16 -lse=1
three "fwd b1 h16 s16384 d128 causal bf16" fwd -b=1 -h=16 -s=16384 -d=128 -mask=b -prec=bf16 -lse=1
three "fwd b4 h16 s4096 d64 causal bf16" fwd -b=4 -h=16 -s=4096 -d=64 -mask=b -prec=bf16 -lse=1
three "fwd b4 h16 s4096 d64 none fp16" fwd -b=4 -h=16 -s=4096 -d=64 -prec=fp16 -lse=1
three "fwd b4 h16 s4096 d128 none fp16" fwd -b=4 -h=16 -s=4096 -d=128 -prec=fp16 -lse=1
three "fwd b2 h16 s4096 d256 causal bf16" fwd -b=2 -h=16 -s=4096 -d=256 -mask=b -prec=bf16 -lse=1
three "fwd decode b8 h64/8 s4/4096 d128 split" fwd -b=8 -h=64 -h_k=8 -s=4 -s_k=4096 -d=128 -mask=b -prec=bf16 -num_splits=4
three "bwd b4 h16 s4096 d128 causal" bwd -b=4 -h=16 -s=4096 -d=128 -mask=b -prec=bf16
three "bwd b4 h16 s4096 d64 causal" bwd -b=4 -h=16 -s=4096 -d=64 -mask=b -prec=bf16
three "bwd b4 h16 s4096 d128 causal det" bwd -b=4 -h=16 -s=4096 -d=128 -mask=b -prec=bf16 -deterministic=1
three "bwd b4 h16 s4096 d64 causal det" bwd -b=4 -h=16 -s=4096 -d=64 -mask=b -prec=bf16 -deterministic=1
echo "== options on (new vs prev)"
two "fwd d128 causal dropout 0.1" fwd -b=4 -h=16 -s=4096 -d=128 -mask=b -prec=bf16 -p_drop=0.1 -drop_seed=7 -drop_offset=1
two "fwd d128 causal alibi" fwd -b=4 -h=16 -s=4096 -d=128 -mask=b -prec=bf16 -bias=a
two "bwd d128 causal dropout 0.1" bwd -b=4 -h=16 -s=4096 -d=128 -mask=b -prec=bf16 -p_drop=0.1 -drop_seed=7 -drop_offset=1
