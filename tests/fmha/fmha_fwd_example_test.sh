#!/usr/bin/env bash
# examples/fmha_fwd on the CPU emulator: CK's options parse, every variant
# validates against the CPU reference (exit 0), -json prints one JSON line,
# bad options exit 2.
set -u
bin="$1"
fail=0
run() {
  if ! out=$("$bin" "$@" 2>&1); then
    echo "FAIL: fmha_fwd $*"; echo "$out"; fail=1
  else
    echo "ok: fmha_fwd $* -> $(echo "$out" | tail -1)"
  fi
}
run
run -prec=bf16 -lse=1 -mask=t
run -b=1 -h=4 -h_k=1 -s=70 -s_k=130 -mask=b -iperm=0 -operm=0 -lse=1
run -h=4 -h_k=2 -mask=t:10,5 -d=192 -d_v=128 -prec=bf16
run -mask=b:-1,3 -d=80 -d_v=40 -scale_s=0.2 -logits_soft_cap=5
run -mode=1 -b=3 -s=100,1,57 -s_k=130,0,57 -mask=b:16,0 -lse=1
run -mode=1 -b=4 -s=10,0,33 -s_qpad=40 -s_kpad=50 -lse=1 -mask=2 -init=ui
run -s=1 -s_k=0 -lse=1 -init=nf
# head dim 512 and MLA's 576/512 (V's columns split over two warps a row group)
run -d=512 -h=2 -h_k=1 -s=40 -s_k=70 -mask=b -lse=1
run -d=512 -mode=1 -b=3 -s=40,1,9 -s_k=5,0,60 -mask=t -prec=bf16 -lse=1
run -d=576 -d_v=512 -s=1 -s_k=257 -h=8 -h_k=1 -prec=bf16 -lse=1
# the KV cache: split-KV, pages (vLLM and sglang tables), cache_batch_idx, a sparse pool past 4 GB
run -s=1 -s_k=300 -h=8 -h_k=2 -num_splits=3 -prec=bf16 -lse=1
run -s=4 -s_k=200 -num_splits=0 -page_block_size=16 -mask=b
run -b=3 -s=2 -s_k=90 -page_block_size=3 -cache_batch_idx=1 -num_splits=2
run -mode=1 -b=3 -s=5,0,9 -s_k=70,10,129 -page_block_size=48 -table=sglang -mask=b -lse=1
run -b=2 -s=1 -s_k=100 -page_block_size=16 -page_pool_gb=5
run -s=3 -s_k=100 -cache_batch_idx=1 -iperm=0
# attention sinks: plain, GQA decode (packed), split-KV, group mode with rows that see no key
run -sink=1 -lse=1 -mask=b -h=4 -h_k=2
run -sink=1 -s=3 -s_k=200 -h=8 -h_k=2 -num_splits=3 -lse=1 -prec=bf16
run -sink=1 -mode=1 -b=3 -s=40,1,9 -s_k=5,0,60 -mask=b -lse=1 -logits_soft_cap=5
# bias and ALiBi (-bias=e|a): plain, GQA decode (packed), split-KV, paged, group mode
run -bias=e -lse=1 -mask=b -h=4 -h_k=2
run -bias=a -lse=1 -mask=t -prec=bf16 -s=70 -s_k=130
run -bias=e -s=3 -s_k=200 -h=8 -h_k=2 -num_splits=3 -lse=1 -prec=bf16
run -bias=a -s=4 -s_k=200 -num_splits=0 -page_block_size=16 -mask=b
run -bias=1 -mode=1 -b=3 -s=40,1,9 -s_k=5,0,60 -mask=b -lse=1
jb=$("$bin" -json=1 -bias=a -b=1 -s=20 2>/dev/null | tail -1)
case "$jb" in
  *'"bias":"a"'*'"valid":true'*) echo "ok: -json -bias=a -> $jb" ;;
  *) echo "FAIL: -json -bias=a printed: $jb"; fail=1 ;;
esac
json=$("$bin" -json=1 -sink=1 -b=1 -s=20 2>/dev/null | tail -1)
case "$json" in
  *'"sink":1'*'"valid":true'*) echo "ok: -json -sink=1 -> $json" ;;
  *) echo "FAIL: -json -sink=1 printed: $json"; fail=1 ;;
esac
# dropout: O against the reference, the stored random bytes against the reference's;
# GQA decode (packed), split-KV, paged, group mode, masks
run -p_drop=0.2 -s_randval=1 -lse=1 -mask=b -h=4 -h_k=2
run -p_drop=0.5 -s_randval=1 -s=3 -s_k=200 -h=8 -h_k=2 -num_splits=3 -prec=bf16
run -p_drop=0.3 -s_randval=1 -mode=1 -b=3 -s=40,1,9 -s_k=5,0,60 -mask=t -drop_seed=9 -drop_offset=4
run -p_drop=0.1 -s_randval=1 -b=2 -s=5 -s_k=100 -page_block_size=16 -mask=b
json=$("$bin" -json=1 -p_drop=0.4 -drop_seed=3 -drop_offset=8 -s_randval=1 -b=1 -s=20 2>/dev/null | tail -1)
case "$json" in
  *'"p_drop":0.4,"drop_seed":3,"drop_offset":8,"s_randval":1,"randval_mismatches":0,'*'"valid":true'*) echo "ok: -json -p_drop -> $json" ;;
  *) echo "FAIL: -json -p_drop printed: $json"; fail=1 ;;
esac
out=$("$bin" -b=2 -s=1 -s_k=100 -page_block_size=16 -page_pool_gb=5 2>&1 | tail -1)
case "$out" in
  *'pool>4GB'*'valid:y') echo "ok: -page_pool_gb=5 -> $out" ;;
  *) echo "FAIL: -page_pool_gb=5 printed: $out"; fail=1 ;;
esac
json=$("$bin" -json=1 -b=1 -s=20 2>/dev/null | tail -1)
case "$json" in
  '{"example":"fmha_fwd"'*'"valid":true'*'"tflops":'*'}') echo "ok: -json -> $json" ;;
  *) echo "FAIL: -json printed: $json"; fail=1 ;;
esac
# fp8 (CK's -prec names): e4m3 q/k/v, bf16 / fp16 out, descales, the quantizing reference
run -prec=fp8bf16 -lse=1 -mask=t -h=4 -h_k=2 -s=100 -s_k=70
run -prec=fp8fp16 -d=128 -mode=1 -b=3 -s=40,1,9 -s_k=5,3,60 -mask=b -descale_q=0.03 -descale_v=0.25 -scale_p=256
out=$("$bin" -prec=fp8bf16 -b=1 -s=20 2>&1 | tail -1)
case "$out" in
  '[fp8bf16|'*'ckt_fmha_fwd_fp8bf16_d64'*'valid:y') echo "ok: -prec=fp8bf16 -> $out" ;;
  *) echo "FAIL: -prec=fp8bf16 printed: $out"; fail=1 ;;
esac
for bad in -prec=fp8 -prec=fp8bf16\ -p_drop=0.1 -prec=fp8fp16\ -bias=e -prec=fp8bf16\ -d=72; do
  "$bin" $bad >/dev/null 2>&1
  rc=$?
  if [ "$rc" = 0 ]; then echo "FAIL: fmha_fwd $bad exited 0"; fail=1; else echo "ok: fmha_fwd $bad -> exit $rc"; fi
done
for bad in -bias=x -prec=fp32 -mask=x -d=100 -mode=0\ -s=1,2 -foo=1 -s_kpad=8 -num_splits=-1 -table=x -table=sglang \
           -mode=1\ -cache_batch_idx=1 -num_splits=1000 -sink=2 -p_drop=1 -s_randval=1 -p_drop=0.1\ -s_randval=2; do
  "$bin" $bad >/dev/null 2>&1
  rc=$?
  if [ "$rc" != 2 ]; then echo "FAIL: fmha_fwd $bad exited $rc, want 2"; fail=1; else echo "ok: fmha_fwd $bad -> exit 2"; fi
done
exit $fail
