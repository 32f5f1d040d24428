#!/usr/bin/env bash
# bench/fmha_bwd_cases.sh BIN — examples/fmha_bwd (BIN) over ragged cases
# on the GPU machine, each validated against the CPU reference (exit 1 if any
# fails): d64 and d128 (the Hopper wgmma kernel's head dims on an sm_90
# device; CKT_FMHA_FORCE_SM80=1 for the mma.sync kernels), fp16 and bf16,
# every mask kind incl. windows, batch and group mode with padding, GQA /
# MQA, soft-cap, deterministic, lengths that are not multiples of the tiles.
set -u
bin="$1"; shift
n=0; bad=0
run() {
  n=$((n + 1))
  if out=$("$bin" "$@" -warmup=0 -repeat=1 2>&1) && echo "$out" | tail -1 | grep -q "valid:y"; then
    :
  else
    bad=$((bad + 1)); echo "FAIL: $* -> $(echo "$out" | tail -2 | tr '\n' ' ')"
  fi
}
for d in 64 128; do
  for prec in fp16 bf16; do
    for mask in 0 t b t:10,5 b:40,0 t:-1,7; do
      run -prec=$prec -d=$d -b=2 -h=4 -h_k=2 -s=333 -s_k=517 -mask=$mask
      run -prec=$prec -d=$d -b=1 -h=2 -s=700 -mask=$mask -deterministic=1
      run -prec=$prec -d=$d -mode=1 -b=4 -h=4 -h_k=1 -s=130,1,0,257 -s_k=300,64,17,129 -mask=$mask
    done
    run -prec=$prec -d=$d -b=2 -h=6 -h_k=3 -s=200 -s_k=190 -mask=t -logits_soft_cap=30
    run -prec=$prec -d=$d -mode=1 -b=3 -s=60,1,333 -s_k=70,0,333 -s_qpad=400 -s_kpad=400 -mask=b -deterministic=1 -prepare=async
    run -prec=$prec -d=$d -b=1 -h=8 -h_k=1 -s=1000 -s_k=1000 -mask=b -deterministic=1
    run -prec=$prec -d=$d -b=1 -h=2 -s=64 -s_k=2000 -mask=0
  done
done
echo "$((n - bad)) of $n cases valid"
[ "$bad" -eq 0 ]
