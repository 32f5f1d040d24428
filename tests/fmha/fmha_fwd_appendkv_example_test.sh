#!/usr/bin/env bash
# examples/fmha_fwd_appendkv on the CPU emulator: CK's options parse, the
# append and the attention over the updated cache validate against the CPU
# references (exit 0), -json prints one JSON line, bad options exit 2.
set -u
bin="$1"
fail=0
run() {
  if ! out=$("$bin" "$@" 2>&1); then
    echo "FAIL: fmha_fwd_appendkv $*"; echo "$out"; fail=1
  else
    echo "ok: fmha_fwd_appendkv $* -> $(echo "$out" | tail -1)"
  fi
}
run
run -b=3 -h=4 -h_k=2 -s_k=37,0,90 -s_knew=3 -rotary_dim=64
run -b=2 -h=6 -h_k=3 -s_k=20 -s_knew=5 -s=5 -d=128 -rotary_dim=32 -rotary_interleaved=1 -prec=bf16 -iperm=1
run -b=2 -h=2 -h_k=1 -s_k=7,50 -s_knew=9 -s=2 -d=40 -rotary_dim=40 -cache_batch_idx=1 -mask=0 -s_kcap=64
run -b=1 -h=2 -s_k=10 -s_knew=0 -s=3 -rotary_dim=16 -mask=t:4,0
# paged: a vLLM block table (with cache_batch_idx, [page][h][row][d]) and sglang's tables
run -b=3 -h=8 -h_k=2 -s_k=50,7,0 -s_knew=3 -s=3 -d=128 -rotary_dim=32 -rotary_interleaved=1 -page_block_size=1 -cache_batch_idx=1 -iperm=1
run -b=3 -h=4 -h_k=2 -s_k=100,37,0 -s_knew=2 -rotary_dim=64 -page_block_size=16 -table=sglang -prec=bf16
run -b=2 -h=2 -s_k=33 -s_knew=4 -s=2 -page_block_size=5 -table=sglang -mask=0
# a pool past 4 GB (sparse on the emulator: only the pages in use are touched), pages at both ends
run -b=2 -h=4 -h_k=1 -s_k=60,9 -s_knew=2 -rotary_dim=64 -page_block_size=8 -page_pool_gb=4.5 -table=sglang
json=$("$bin" -json=1 -b=1 -s_k=20 -rotary_dim=16 2>/dev/null | tail -1)
case "$json" in
  '{"example":"fmha_fwd_appendkv"'*'"page_block_size":0'*'"valid":true'*'"fwd_gbs":'*'}') echo "ok: -json -> $json" ;;
  *) echo "FAIL: -json printed: $json"; fail=1 ;;
esac
for bad in -prec=fp32 -mask=x -rotary_dim=7 -rotary_dim=80 -s_kcap=50 -foo=1 -s_k=a -table=sglang -table=x \
           -page_block_size=-1 "-page_block_size=4 -table=sglang -cache_batch_idx=1" -page_pool_gb=1 \
           "-b=2 -s_k=33 -s_knew=4 -page_block_size=5 -table=sglang -s_kcap=10"; do
  "$bin" $bad >/dev/null 2>&1
  rc=$?
  if [ "$rc" != 2 ]; then echo "FAIL: fmha_fwd_appendkv $bad exited $rc, want 2"; fail=1; else echo "ok: fmha_fwd_appendkv $bad -> exit 2"; fi
done
exit $fail
