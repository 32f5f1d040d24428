#!/usr/bin/env bash
# bench/fmha_bwd_dropout_ab.sh — the backward's dropout cost over several
# builds: per point and round, every binary with -p_drop=0 and -p_drop=0.1
# (same tensors), medians; ratio dropout/plain and
# each binary's plain time against the first binary's (the baseline). The
# binaries: examples/fmha_bwd builds, e.g. from tools/bwd_tune.sh (d64 and
# d128, sm_90a) at a baseline commit and at this one:
#   tools/bwd_tune.sh new d64,d128     (and `base` in a checkout of the baseline)
#   bash bench/fmha_bwd_dropout_ab.sh 3 .gpu_bin/tune/base .gpu_bin/tune/new
set -u
rounds=$1; shift
bins=("$@")
ms() { grep -o '"ms":[0-9.]*' | tail -1 | cut -d: -f2; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
pts=("d128 causal|-b=4 -h=16 -s=4096 -d=128 -mask=b -prec=bf16"
     "d64 causal|-b=4 -h=16 -s=4096 -d=64 -mask=b -prec=bf16"
     "d128 causal det|-b=4 -h=16 -s=4096 -d=128 -mask=b -prec=bf16 -deterministic=1")
for pt in "${pts[@]}"; do
  name=${pt%%|*}; args=${pt#*|}
  declare -A P=() S=()
  for _ in $(seq "$rounds"); do
    for b in "${bins[@]}"; do
      P[$b]="${P[$b]:-} $("$b" -json=1 -v=0 $args 2>/dev/null | ms)"
      S[$b]="${S[$b]:-} $("$b" -json=1 -v=0 -p_drop=0.1 -drop_seed=7 -drop_offset=1 $args 2>/dev/null | ms)"
    done
  done
  base_p=""
  for b in "${bins[@]}"; do
    mp=$(echo ${P[$b]} | tr ' ' '\n' | median); md=$(echo ${S[$b]} | tr ' ' '\n' | median)
    [ -n "$base_p" ] || base_p=$mp
    printf 'bwd b4 h16 s4096 %-16s %-8s plain %8.4f ms  dropout %8.4f ms  dropout/plain %.3f  plain/base-plain %.3f  [%s | %s]\n' \
      "$name" "$(basename $b)" "$mp" "$md" "$(awk -v a="$md" -v b="$mp" 'BEGIN{print a/b}')" \
      "$(awk -v a="$mp" -v b="$base_p" 'BEGIN{print a/b}')" "${P[$b]}" "${S[$b]}"
  done
  unset P S
done
