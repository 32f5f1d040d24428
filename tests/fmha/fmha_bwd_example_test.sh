#!/usr/bin/env bash
# examples/fmha_bwd on the CPU emulator: CK's options parse; batch and group
# mode (with padding), masks, GQA/MQA, soft-cap, d != d_v, the one-call API and
# both -prepare paths validate dQ / dK / dV against the CPU reference (exit 0);
# -deterministic=1 gives the same dq/dk/dv hashes in two processes (and in one,
# "rerun_identical"); -bias=e|a and -dbias=1 validate against the reference;
# options not supported yet (-p_drop) exit non-zero with a message saying so;
# bad options exit 2.
set -u
bin="$1"
fail=0
run() {
  if ! out=$("$bin" "$@" 2>&1); then
    echo "FAIL: fmha_bwd $*"; echo "$out"; fail=1
  else
    echo "ok: fmha_bwd $* -> $(echo "$out" | tail -1)"
  fi
}
run -s=64
run -prec=bf16 -s=70 -mask=t -bias=n -dbias=0 -p_drop=0.0
run -b=1 -h=4 -h_k=1 -s=40 -s_k=90 -mask=b -iperm=0 -operm=0
run -h=4 -h_k=2 -s=50 -mask=t:10,5 -d=32 -d_v=32 -scale=0.2
run -s=50 -mask=t -logits_soft_cap=5 -init=ui
run -s=33 -d=192 -d_v=128 -prec=bf16
run -s=40 -s_k=70 -d=512 -h=2 -h_k=1 -mask=b -prec=bf16
run -mode=1 -b=3 -s=40,1,9 -s_k=5,0,60 -d=512 -mask=t -deterministic=1
run -mode=1 -b=3 -s=60,1,33 -s_k=70,0,33 -mask=b:16,0 -prec=bf16
run -mode=1 -b=2 -s=20,33 -deterministic=1 -prepare=sync
run -mode=1 -b=3 -s=10,0,33 -s_qpad=40 -s_kpad=50 -mask=2 -deterministic=1 -prepare=async
run -s=48 -mask=t -deterministic=1 -prepare=async
run -s=48 -prepare=async
run -s=0 -s_k=5
# attention sinks: dsink against the reference; GQA, masks with rows that see no key, group mode
run -sink=1 -h=4 -h_k=2 -s=70 -s_k=40 -mask=b
run -sink=1 -mode=1 -b=3 -s=40,0,9 -s_k=5,20,60 -mask=b -deterministic=1 -prepare=async -logits_soft_cap=5
js=$("$bin" -json=1 -sink=1 -s=60 -deterministic=1 -warmup=0 -repeat=2 2>/dev/null | tail -1)
case "$js" in
  *'"sink":1,"dsink_max_abs_err":'*'"valid":true,"rerun_identical":true'*) echo "ok: -json -sink=1 -> $js" ;;
  *) echo "FAIL: -json -sink=1 printed: $js"; fail=1 ;;
esac
# dropout: the forward's mask regenerated, against the reference; GQA, masks, group mode,
# deterministic, soft-cap, sinks
run -p_drop=0.2 -h=4 -h_k=2 -s=70 -s_k=40 -mask=b
run -p_drop=0.5 -drop_seed=7 -drop_offset=3 -mode=1 -b=3 -s=40,0,9 -s_k=5,20,60 -mask=t -deterministic=1 -prepare=async -logits_soft_cap=5
run -p_drop=0.3 -sink=1 -s=48 -prec=bf16 -deterministic=1
js=$("$bin" -json=1 -p_drop=0.25 -drop_seed=5 -drop_offset=9 -s=60 -deterministic=1 -warmup=0 -repeat=2 2>/dev/null | tail -1)
case "$js" in
  *'"p_drop":0.25,"drop_seed":5,"drop_offset":9,'*'"valid":true,"rerun_identical":true'*) echo "ok: -json -p_drop -> $js" ;;
  *) echo "FAIL: -json -p_drop printed: $js"; fail=1 ;;
esac

# bias and ALiBi (-bias=e|a, CK's names), dbias against the reference; masks, GQA, group mode
run -bias=e -dbias=1 -h=4 -h_k=2 -s=70 -s_k=40 -mask=b
run -bias=a -s=50 -mask=t -prec=bf16
run -bias=1 -dbias=1 -mode=1 -b=3 -s=40,0,9 -s_k=5,20,60 -mask=b -deterministic=1 -prepare=async
run -bias=2 -mode=1 -b=2 -s=33,17 -s_k=20,64 -mask=t:8,0
js=$("$bin" -json=1 -bias=e -dbias=1 -s=60 -deterministic=1 -warmup=0 -repeat=2 2>/dev/null | tail -1)
case "$js" in
  *'"bias":"e","dbias":1,"dbias_max_abs_err":'*'"valid":true,"rerun_identical":true'*) echo "ok: -json -bias=e -dbias=1 -> $js" ;;
  *) echo "FAIL: -json -bias=e -dbias=1 printed: $js"; fail=1 ;;
esac

# -deterministic=1: two processes, the same bytes
j1=$("$bin" -json=1 -b=2 -h=4 -h_k=2 -s=90 -mask=b -deterministic=1 -warmup=1 -repeat=1 2>/dev/null | tail -1)
j2=$("$bin" -json=1 -b=2 -h=4 -h_k=2 -s=90 -mask=b -deterministic=1 -warmup=0 -repeat=1 2>/dev/null | tail -1)
hashes() { echo "$1" | grep -o '"d[qkv]_hash":"[0-9a-f]\{16\}"' | tr '\n' ' '; }
case "$j1" in
  '{"example":"fmha_bwd"'*'"valid":true,"rerun_identical":true'*'"dq_hash":"'*'"tflops":'*'}')
    echo "ok: -json -> $j1" ;;
  *) echo "FAIL: -json printed: $j1"; fail=1 ;;
esac
h1=$(hashes "$j1"); h2=$(hashes "$j2")
if [ -n "$h1" ] && [ "$h1" = "$h2" ] && [ "$(echo "$h1" | wc -w)" = 3 ]; then
  echo "ok: -deterministic=1 twice -> $h1"
else
  echo "FAIL: -deterministic=1 hashes differ: '$h1' vs '$h2'"; fail=1
fi

for bad in -prec=fp32 -mask=x -d=100 -mode=0\ -s=1,2 -foo=1 -prepare=maybe -deterministic=2 -lse=1 -sink=3 -p_drop=1 -p_drop=-0.1 \
           -bias=x -dbias=2 -dbias=1\ -bias=a -dbias=1; do
  "$bin" $bad >/dev/null 2>&1
  rc=$?
  if [ "$rc" != 2 ]; then echo "FAIL: fmha_bwd $bad exited $rc, want 2"; fail=1; else echo "ok: fmha_bwd $bad -> exit 2"; fi
done
exit $fail
