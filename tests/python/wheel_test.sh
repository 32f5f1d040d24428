#!/usr/bin/env bash
# wheel_test LIB BUILD_WHEEL_PY TEST_PY [--asan]: builds the wheel around LIB, checks its RECORD,
# installs it into a fresh venv with pip --no-index, and runs TEST_PY there (tests/python/BUILD).
set -euo pipefail
lib="$(realpath "$1")" builder="$(pwd)/$2" test_py="$(pwd)/$3"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 HOME="$tmp"
unset CKT_FMHA_LIB PYTHONPATH

whl="$(python3 "$builder" --lib "$lib" --backend cpu --out "$tmp/dist" | tail -1)"
echo "wheel: $whl"

# the wheel: the package, the library, and a RECORD whose hashes and sizes match
python3 - "$whl" <<'PY'
import base64, hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = set(z.namelist())
need = {"ckt/__init__.py", "ckt/_lib.py", "ckt/_tensor.py", "ckt/fmha.py", "ckt/_build.py", "ckt/libckt_fmha.so"}
dist = [n.split("/")[0] for n in names if n.endswith(".dist-info/WHEEL")][0]
need |= {f"{dist}/{n}" for n in ("METADATA", "WHEEL", "RECORD")}
assert need <= names, f"missing from the wheel: {sorted(need - names)}"
rec = z.read(f"{dist}/RECORD").decode().splitlines()
listed = set()
for line in rec:
    path, h, size = line.rsplit(",", 2)
    listed.add(path)
    if path.endswith("RECORD"):
        continue
    data = z.read(path)
    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert h == want and int(size) == len(data), f"RECORD: {path} does not match"
assert listed == names, f"RECORD lists {sorted(listed ^ names)} differently"
print(f"RECORD: {len(rec)} entries match")
PY

python3 -m venv --system-site-packages "$tmp/venv"
"$tmp/venv/bin/python" -c "import numpy" || { echo "numpy missing: apt-get install python3-numpy (tools/setup.sh)"; exit 1; }
"$tmp/venv/bin/pip" install --no-index --no-deps -q "$whl"

cd "$tmp"  # away from the sources: the installed package is imported
"$tmp/venv/bin/python" - <<'PY'
import os, ckt, ckt._build
assert ckt.__file__.startswith(os.environ["TEST_TMPDIR"] if "TEST_TMPDIR" in os.environ else "/"), ckt.__file__
print("installed:", os.path.dirname(ckt.__file__), "backend", ckt._build.BACKEND, "library", ckt.find_library())
PY
if [ "${4:-}" = --asan ]; then  # the library is instrumented: its runtimes first, no leak report for python
  export LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
  export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
fi
CKT_EXPECT_BUNDLED=1 "$tmp/venv/bin/python" "$test_py" -v
