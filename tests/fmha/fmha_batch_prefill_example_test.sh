#!/usr/bin/env bash
# examples/fmha_batch_prefill on the CPU emulator: group-mode queries over a
# paged cache (vLLM and sglang tables, page sizes from 1 to past the key
# tile, split-KV, a sparse pool past 4 GB) validate against the CPU
# reference (exit 0); bad options exit 2.
set -u
bin="$1"
fail=0
run() {
  if ! out=$("$bin" "$@" 2>&1); then
    echo "FAIL: fmha_batch_prefill $*"; echo "$out"; fail=1
  else
    echo "ok: fmha_batch_prefill $* -> $(echo "$out" | tail -1)"
  fi
}
run
run -table=sglang -page_block_size=3
run -page_block_size=1 -h=4 -h_k=1 -prec=bf16 -lse=1
run -page_block_size=100 -table=sglang -num_splits=2 -d=128
run -page_block_size=256 -b=2 -s=33,70 -s_k=33,300 -mask=b:40,0
run -page_block_size=128 -page_pool_gb=5 -b=2 -s=9 -s_k=200
out=$("$bin" -json=1 2>/dev/null | tail -1)
case "$out" in
  '{"example":"fmha_batch_prefill"'*'"page_block_size":16'*'"valid":true'*) echo "ok: -json -> $out" ;;
  *) echo "FAIL: -json printed: $out"; fail=1 ;;
esac
for bad in -page_block_size=-1 -table=flashinfer -mode=1\ -s=1,2,3,4,5\ -b=2; do
  "$bin" $bad >/dev/null 2>&1
  rc=$?
  if [ "$rc" != 2 ]; then echo "FAIL: fmha_batch_prefill $bad exited $rc, want 2"; fail=1; else echo "ok: fmha_batch_prefill $bad -> exit 2"; fi
done
exit $fail
