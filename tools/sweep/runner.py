"""Running one point: the example binary with -json=1 (and -v=1 unless the point says
otherwise), its JSON line read back into a row.

The examples (examples/fmha_fwd, fmha_bwd, fmha_fwd_appendkv) print one JSON line on stdout
with -json=1 and their text report on stderr; exit status 0 valid (or -v=0), 1 mismatch,
2 error (a usage error prints "error: ..." on stderr).
"""
import json
import os
import shlex
import subprocess
import time

# short name -> the example's binary (the GPU build appends _gpu)
BINARIES = {"fwd": "fmha_fwd", "bwd": "fmha_bwd", "appendkv": "fmha_fwd_appendkv",
            "prefill": "fmha_batch_prefill"}

ELEMENT_BYTES = {"fp16": 2, "bf16": 2}


def gpu_present():
    """An NVIDIA GPU this process can use (the _gpu binaries need only the driver)."""
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")


def find_binary(example, bin_dirs, target):
    """(path, kind) of the example's binary, kind 'gpu' or 'cpu', or (None, what was tried).
    target: 'gpu', 'cpu' or 'auto' (gpu binaries first when a GPU is present). A binary is
    looked for as DIR/NAME and DIR/NAME/NAME (bazel-bin/examples), NAME + '_gpu' for gpu."""
    name = BINARIES[example]
    kinds = {"gpu": ["gpu"], "cpu": ["cpu"], "auto": ["gpu", "cpu"] if gpu_present() else ["cpu"]}[target]
    tried = []
    for kind in kinds:
        exe = name + ("_gpu" if kind == "gpu" else "")
        for d in bin_dirs:
            for path in (os.path.join(d, exe), os.path.join(d, name, exe)):
                tried.append(path)
                if os.path.isfile(path) and os.access(path, os.X_OK):
                    return path, kind
    return None, tried


def command(binary, point, validate):
    cmd = [binary, "-json=1"]
    if "v" not in point.options:
        cmd.append(f"-v={1 if validate else 0}")
    cmd += [f"-{k}={v}" for k, v in point.options.items() if k != "json"]
    return cmd


def lengths(text, batch):
    """Per-entry lengths of an -s / -s_k list (the last repeats), or None."""
    try:
        vals = [int(x) for x in str(text).split(",")]
    except ValueError:
        return None
    return [vals[min(i, len(vals) - 1)] for i in range(batch)]


def fmha_bytes(example, r, options):
    """Bytes the kernel must move at least, each tensor once (docs/sweep.md#outputs):
    fwd: Q, K, V read, O written (+ LSE fp32 with -lse=1);
    bwd: Q, K, V, O, dO read, dQ, dK, dV written, LSE read (fp32);
    appendkv: the example's own count (the forward over the cache: K and V read once);
    prefill (and fwd over a KV cache): the example's kv_gbs, K and V read once."""
    if example == "appendkv" or example == "prefill":
        return None
    es = ELEMENT_BYTES.get(r.get("prec"), 2)
    b, h, hk, d, dv = r["b"], r["h"], r["h_k"], r["d"], r["d_v"]
    if r.get("mode", 0) == 1:
        sq = lengths(options.get("s", "100"), b)
        sk = lengths(options.get("s_k", "-1"), b)
        if sq is None or sk is None:
            return None
        rows_q = sum(sq)
        rows_k = sum(q if k < 0 else k for q, k in zip(sq, sk))
    else:
        rows_q, rows_k = b * r["s"], b * r["s_k"]
    q, o = h * rows_q * d * es, h * rows_q * dv * es
    k, v = hk * rows_k * d * es, hk * rows_k * dv * es
    lse = 4 * h * rows_q
    if example == "fwd":
        return q + k + v + o + (lse if r.get("lse") else 0)
    return 2 * (q + k + v) + 2 * o + lse


def stderr_message(text, limit=6):
    """The lines of the example's stderr worth showing: its 'error:' lines, else the last few."""
    lines = [x for x in text.splitlines() if x.strip()]
    errs = [x for x in lines if x.startswith("error")]
    return "\n".join((errs or lines)[-limit:])


def run_point(index, point, binary, validate, timeout):
    """The row of one point: options, command, status ('ok', 'mismatch', 'error'), valid
    (True, False, None when not validated), ms, tflops, gbs, flops, the example's JSON."""
    cmd = command(binary, point, validate)
    row = {"index": index, "example": point.example, "options": dict(point.options), "derived": sorted(point.derived),
           "cmd": " ".join(shlex.quote(c) for c in cmd), "status": "error", "valid": False, "ms": None,
           "tflops": None, "gbs": None, "flops": None, "bytes": None, "instance": None, "backend": None,
           "device": None, "error": None, "result": None, "wall_s": None}
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        row["error"] = f"timed out after {timeout} s"
        return row
    except OSError as e:
        row["error"] = f"cannot run {cmd[0]}: {e.strerror}"
        return row
    row["wall_s"] = round(time.monotonic() - t0, 3)
    result = None
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            try:
                result = json.loads(line)
            except ValueError:
                pass
            break
    if p.returncode not in (0, 1) or result is None:
        msg = stderr_message(p.stderr) or f"exit status {p.returncode}, no JSON line"
        row["error"] = msg if p.returncode >= 0 else f"killed by signal {-p.returncode}: {msg}"
        return row
    row["result"] = result
    row["instance"], row["backend"], row["device"] = result.get("instance"), result.get("backend"), result.get("device")
    if point.example == "appendkv":
        row["ms"], row["tflops"], row["gbs"] = result.get("fwd_ms"), result.get("fwd_tflops"), result.get("fwd_gbs")
    else:
        row["ms"], row["tflops"], row["flops"] = result.get("ms"), result.get("tflops"), result.get("flops")
        try:
            row["bytes"] = fmha_bytes(point.example, result, point.options)
        except (KeyError, TypeError):  # a JSON line without the sizes: no GB/s
            row["bytes"] = None
        if row["bytes"] and row["ms"]:
            row["gbs"] = row["bytes"] / (row["ms"] * 1e-3) / 1e9
        elif result.get("kv_gbs") is not None:  # a KV cache's figure of merit
            row["gbs"] = result["kv_gbs"]
    row["valid"] = result.get("valid")
    if p.returncode == 1 or row["valid"] is False:
        row["status"], row["valid"] = "mismatch", False
        row["error"] = stderr_message(p.stderr) or "the example's check failed"
    else:
        row["status"] = "ok"
    return row
