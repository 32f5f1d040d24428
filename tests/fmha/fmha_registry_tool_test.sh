#!/bin/bash
# tools/fmha_registry on the emulator: the table, -json (valid JSON, every
# instance once), -family, the -select reports and plans, bad options.
set -u
tool="$1"
fail() { echo "FAIL: $*"; exit 1; }

out=$("$tool") || fail "table: exit $?"
grep -q "^ckt_fmha_fwd_bf16_d128 .*fwd .*bf16 .*128/128" <<<"$out" || fail "table lacks the bf16 d128 forward: $out"
grep -q "^instance set: all; targets: cpu-emulator nv; 60 instances" <<<"$out" || fail "table footer: $(tail -1 <<<"$out")"

json=$("$tool" -json) || fail "-json: exit $?"
python3 - "$json" <<'PY' || fail "-json does not parse or lacks instances"
import json, sys
d = json.loads(sys.argv[1])
names = [i["name"] for i in d["instances"]]
assert len(names) == len(set(names)) == 60, len(names)  # 56 fp16 / bf16, 4 fp8
assert d["instance_set"] == "all" and d["sets"]["training"] == ["fwd", "bwd"], d["sets"]
kv = [i for i in d["instances"] if i["family"] == "fwd_kv"]
assert len(kv) == 14 and all("paged" in i["features"] and i["stages"] == ["attention", "combine"] for i in kv)
PY
[ "$(grep -c '"family": "bwd"' <<<"$json")" = 16 ] || fail "grep finds not 16 bwd instances in -json"
[ "$("$tool" -json=1 -family=fwd_decode | grep -c '"name"')" = 6 ] || fail "-family=fwd_decode"

out=$("$tool" -select=fwd -prec=bf16 -d=128 -s=1 -s_k=4096 -page_block_size=16) || fail "-select=fwd: exit $?"
grep -q "^ckt_fmha_fwd_decode_bf16_d128: chosen$" <<<"$out" || fail "decode not chosen: $out"
grep -q "^ckt_fmha_fwd_bf16_d128: rejected: compiled without the KV cache; the call sets page_size$" <<<"$out" || fail "$out"
grep -q '^plan: {"family": "fwd_decode", "instance": "ckt_fmha_fwd_decode_bf16_d128"' <<<"$out" || fail "plan: $out"

out=$("$tool" -select=fwd -d=128 -num_splits=4 -cache_batch_idx=1 -b=2 -s=32) || fail "split: exit $?"
grep -q '"num_splits": 4, "workspace_bytes": 1056768, "stages": \["attention_partials", "combine"\]' <<<"$out" || fail "split plan: $out"

out=$("$tool" -select=bwd -d=64 -deterministic=1) || fail "-select=bwd: exit $?"
grep -q '"stages": \["dot_do_o", "dq_dk_dv", "convert_dq"\]' <<<"$out" || fail "bwd plan: $out"

out=$("$tool" -select=fwd -d=584); rc=$?
[ $rc = 1 ] || fail "a miss exits $rc, not 1"
grep -q "^no instance: ckt_fmha_fwd: no instance for fp16 hdim_q=584 hdim_v=584: head dims go up to 576 (q/k) and 512 (v)" <<<"$out" || fail "$out"

"$tool" -bogus=1 2>/dev/null; [ $? = 2 ] || fail "an unknown option does not exit 2"
"$tool" -family=nope 2>/dev/null; [ $? = 2 ] || fail "a bad family does not exit 2"
echo PASS
