#!/usr/bin/env bash
# tools/sweep on the CPU emulator's fmha_fwd / fmha_bwd (tests/tools/BUILD):
#   1. a JSON grid of 4 points (fwd, bwd x s 32, 48): exit 0, a line per point, the CSV and
#      JSON rows (count, fields, valid, options, GB/s = the tool's byte count / time);
#   2. CLI ranges with a value the example rejects (-prec=fp8): exit 1, the example's message
#      in the output, that row valid=no status=error, the good row still ok;
#   3. a stub fmha_fwd that reports a mismatch (exit 1, valid false): exit 1, MISMATCH;
#   4. grid errors exit 2 with a message; CLI splitting (';' lists, -mask windows) in --dry-run;
#   5. plots: PNG files when matplotlib imports, else the skip message; YAML when PyYAML does.
# Usage: sweep_test.sh TOOLS_SWEEP_MAIN FMHA_FWD FMHA_BWD TINY_GRID
set -euo pipefail

sweep=$(dirname "$1")
fwd=$(readlink -f "$2")
bwd=$(readlink -f "$3")
tiny=$4
prefill=$(readlink -f "$5")
tmp=${TEST_TMPDIR:-$(mktemp -d)}
fails=0

fail() {
  echo "FAIL: $*" >&2
  fails=$((fails + 1))
}

# expect_rc WANT OUTFILE CMD...: runs CMD, its stdout+stderr into OUTFILE, checks the status.
expect_rc() {
  local want=$1 out=$2 rc=0
  shift 2
  "$@" >"$out" 2>&1 || rc=$?
  if [ "$rc" != "$want" ]; then
    fail "exit status $rc, want $want: $*"
    sed 's/^/    | /' "$out" >&2
  fi
}

expect_grep() { # expect_grep PATTERN FILE
  grep -q -e "$1" "$2" || { fail "no '$1' in $2:"; sed 's/^/    | /' "$2" >&2; }
}

mkdir -p "$tmp/bin" "$tmp/stub"
ln -sf "$fwd" "$tmp/bin/fmha_fwd"
ln -sf "$bwd" "$tmp/bin/fmha_bwd"
ln -sf "$prefill" "$tmp/bin/fmha_batch_prefill"

# >>0. batch prefill over a paged cache: two page sizes, GB/s from the example's K/V bytes
expect_rc 0 "$tmp/log0" python3 "$sweep" --example prefill --page_block_size 3,16 --b 2 --s "9;4,1" \
  --s_k "40;33,20" --bin-dir "$tmp/bin" --out "$tmp/out0" --sdpa off --plot off
expect_grep "prefill" "$tmp/log0"
[ "$(grep -c ',yes,' "$tmp/out0/sweep.csv" 2>/dev/null || echo 0)" -ge 4 ] ||
  { fail "prefill: want 4 valid rows in $tmp/out0/sweep.csv"; cat "$tmp/out0/sweep.csv" >&2 || true; }

# >>1. the JSON grid: 4 valid points
expect_rc 0 "$tmp/log1" python3 "$sweep" --grid "$tiny" --bin-dir "$tmp/bin" --out "$tmp/out1" --sdpa off
for line in "\[1/4\] fwd b=1 h=2 s=32 d=32 mask=t ... .* ms .* TFLOPS .* GB/s ok" \
            "\[4/4\] bwd b=1 h=2 s=48 d=32 mask=t ... .* ok" "4 points: 4 ok, 0 mismatch, 0 error"; do
  expect_grep "$line" "$tmp/log1"
done
python3 - "$tmp/out1/sweep.csv" "$tmp/out1/sweep.json" <<'EOF' || fail "the CSV / JSON of the grid (above)"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
doc = json.load(open(sys.argv[2]))
errs = []
def check(cond, what):
    if not cond:
        errs.append(what)
check(len(rows) == 4, f"CSV rows: {len(rows)}, want 4")
need = ["index", "example", "b", "h", "s", "d", "mask", "ms", "tflops", "gbs", "valid", "status",
        "sdpa_flash_tflops", "sdpa_cudnn_tflops", "instance", "cmd"]
missing = [f for f in need if f not in (rows[0] if rows else {})]
check(not missing, f"CSV fields missing: {missing}")
check([r.get("example") for r in rows] == ["fwd", "fwd", "bwd", "bwd"], "CSV example column")
check([r.get("s") for r in rows] == ["32", "48", "32", "48"], "CSV s column")
check(all(r.get("valid") == "yes" and r.get("status") == "ok" for r in rows), "CSV valid / status: not all yes / ok")
check(all(float(r.get("ms") or 0) > 0 and float(r.get("tflops") or 0) > 0 for r in rows), "CSV ms / tflops <= 0")
check(all(r.get("sdpa_flash_tflops") == "" for r in rows), "CSV SDPA columns not empty with --sdpa off")
check(all("-json=1" in r.get("cmd", "") and "-v=1" in r.get("cmd", "") and "-mask=t" in r.get("cmd", "")
          for r in rows), "CSV cmd lacks -json=1 -v=1 -mask=t")
pts = doc.get("points", [])
check(len(pts) == 4, f"JSON points: {len(pts)}, want 4")
for p in pts:
    check(p["valid"] is True and p["status"] == "ok", f"JSON point {p['index']}: not valid")
    check(p["options"] == {"b": "1", "h": "2", "d": "32", "mask": "t", "s": p["options"].get("s")},
          f"JSON point {p['index']}: options {p['options']}")
    r = p["result"]
    check(r["s"] == int(p["options"]["s"]) and r["d"] == 32 and r["mask"] == "t", f"JSON point {p['index']}: result")
    # GB/s: each tensor once, 2-byte elements: fwd Q K V O; bwd also dQ dK dV dO, and LSE in fp32
    t = r["b"] * r["h"] * r["s"] * r["d"] * 2
    want = 4 * t if p["example"] == "fwd" else 8 * t + 4 * r["b"] * r["h"] * r["s"]
    check(p["bytes"] == want, f"JSON point {p['index']}: bytes {p['bytes']}, want {want}")
    check(abs(p["gbs"] * p["ms"] * 1e6 - want) < 1e-6 * want, f"JSON point {p['index']}: gbs != bytes / ms")
check(doc.get("validate") is True and doc.get("sdpa") is None, "JSON meta: validate / sdpa")
for e in errs:
    print("  " + e)
sys.exit(1 if errs else 0)
EOF

# >>2. a value the example rejects: the tool exits 1 with the example's message
expect_rc 1 "$tmp/log2" python3 "$sweep" --example fwd --b 1 --h 1 --s 32 --d 32 --prec fp16,fp8 \
  --bin-dir "$tmp/bin" --out "$tmp/out2" --sdpa off --plot off
expect_grep "\[1/2\] fwd prec=fp16 .* ok" "$tmp/log2"
expect_grep "\[2/2\] fwd prec=fp8 .* ERROR: -prec must be fp16, bf16, fp8bf16 or fp8fp16, got fp8" "$tmp/log2"
expect_grep "2 points: 1 ok, 0 mismatch, 1 error" "$tmp/log2"
expect_grep "1 of 2 points failed: #2 (error)" "$tmp/log2"
python3 - "$tmp/out2/sweep.csv" <<'EOF' || fail "the CSV of the rejected point"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ok = (len(rows) == 2 and [r["prec"] for r in rows] == ["fp16", "fp8"] and [r["valid"] for r in rows] == ["yes", "no"]
      and [r["status"] for r in rows] == ["ok", "error"] and "got fp8" in rows[1]["error"] and rows[1]["ms"] == "")
print(rows) if not ok else None
sys.exit(0 if ok else 1)
EOF

# >>3. a mismatch (a stub: the real kernels pass): exit 1, MISMATCH and the message
cat >"$tmp/stub/fmha_fwd" <<'EOF'
#!/bin/sh
echo "O: 3 of 2048 elements differ (first at [0][1][2][3]: 1.5 vs 1.25)" >&2
echo '{"example":"fmha_fwd","backend":"cpu","prec":"fp16","mode":0,"b":1,"h":1,"h_k":1,"s":32,"s_k":32,"d":32,"d_v":32,"mask":"n","lse":0,"valid":false,"flops":131072,"ms":1.0,"tflops":1.31e-07}'
exit 1
EOF
chmod +x "$tmp/stub/fmha_fwd"
expect_rc 1 "$tmp/log3" python3 "$sweep" --s 32 --d 32 --bin-dir "$tmp/stub" --out "$tmp/out3" --sdpa off --plot off
expect_grep "\[1/1\] fwd s=32 d=32 ... 1 ms .* MISMATCH" "$tmp/log3"
expect_grep "    O: 3 of 2048 elements differ" "$tmp/log3"
expect_grep '^1,fwd,32,32,1.0,.*,no,mismatch,' "$tmp/out3/sweep.csv"

# >>4. usage errors (exit 2) and the CLI's splitting
echo '{"example": "fwd", "grid": {"s": [32]}, "sizes": {}}' >"$tmp/bad.json"
expect_rc 2 "$tmp/log4" python3 "$sweep" --grid "$tmp/bad.json" --bin-dir "$tmp/bin"
expect_grep "unknown key(s) sizes" "$tmp/log4"
expect_rc 2 "$tmp/log4b" python3 "$sweep" --example fwd --bin-dir "$tmp/stub" --example nope
expect_grep "unknown example 'nope'" "$tmp/log4b"
expect_rc 2 "$tmp/log4c" python3 "$sweep" --example bwd --s 32 --bin-dir "$tmp/stub"
expect_grep "no fmha_bwd binary" "$tmp/log4c"
expect_rc 0 "$tmp/log4d" python3 "$sweep" --dry-run --bin-dir "$tmp/bin" --example bwd --mode 1 --b 3 \
  --s '100,1,57;64' --mask 't:16,0,b' --tokens 4096
expect_grep "\[4/4\] bwd mode=1 b=3 s=64 mask=b: " "$tmp/log4d"
expect_grep "\[1/4\] bwd mode=1 b=3 s=100,1,57 mask=t:16,0: .*fmha_bwd -json=1 -v=1 -mode=1 -b=3 -s=100,1,57 -mask=t:16,0$" \
  "$tmp/log4d"
expect_rc 0 "$tmp/log4e" python3 "$sweep" --dry-run --bin-dir "$tmp/bin" --s 512,2048 --tokens 4096 --no-validate
expect_grep "\[2/2\] fwd b=2 s=2048: .* -v=0 -s=2048 -b=2$" "$tmp/log4e"

# >>5. plots and YAML, where their modules import
if python3 -c "import matplotlib" 2>/dev/null; then
  expect_grep "plots: 2 in" "$tmp/log1"
  ls "$tmp/out1"/sweep_fwd_tflops_*.png >/dev/null 2>&1 || fail "no fwd plot in $tmp/out1"
  ls "$tmp/out1"/sweep_bwd_tflops_*.png >/dev/null 2>&1 || fail "no bwd plot in $tmp/out1"
else
  expect_grep "plots: matplotlib is not importable" "$tmp/log1"
fi
if python3 -c "import yaml" 2>/dev/null; then
  printf 'example: [fwd, bwd]\nset: {b: 1, h: 2, d: 32}\ngrid:\n  s: [32, 48]\n  mask: ["0", t]\n' >"$tmp/g.yaml"
  expect_rc 0 "$tmp/log5" python3 "$sweep" --dry-run --grid "$tmp/g.yaml" --bin-dir "$tmp/bin"
  expect_grep "\[8/8\] bwd b=1 h=2 s=48 d=32 mask=t: " "$tmp/log5"
fi

# >>6. the Markdown table, and --replot from a finished sweep's JSON
[ -s "$tmp/out1/sweep.md" ] || fail "no $tmp/out1/sweep.md"
expect_grep '^| example | .*ckt TFLOPS | GB/s | valid |$' "$tmp/out1/sweep.md"
[ "$(grep -c '^| fwd |' "$tmp/out1/sweep.md")" -ge 1 ] || fail "no fwd row in $tmp/out1/sweep.md"
expect_rc 0 "$tmp/log6" python3 "$sweep" --replot "$tmp/out1/sweep.json" --out "$tmp/out6" --name again --plot off
cmp -s "$tmp/out1/sweep.md" "$tmp/out6/again.md" || fail "--replot: $tmp/out6/again.md differs from the run's table"
echo '{"no": "points"}' >"$tmp/notasweep.json"
expect_rc 2 "$tmp/log7" python3 "$sweep" --replot "$tmp/notasweep.json" --out "$tmp/out7"
expect_grep "not a sweep's JSON" "$tmp/log7"

if [ "$fails" != 0 ]; then
  echo "sweep_test: $fails failure(s)" >&2
  exit 1
fi
echo "sweep_test: ok"
