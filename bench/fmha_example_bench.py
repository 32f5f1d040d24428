#!/usr/bin/env python3
"""Forward and backward TFLOPS of the ckt examples against PyTorch SDPA, in one
process on the GPU machine, for the options bench/fmha_bench.py does not
cover: fp8 (-prec=fp8bf16) against ckt's own bf16 and SDPA (flash, cuDNN;
cuDNN's fp8 SDPA where this torch exposes it), and head dim 512 (and MLA's
576/512), where SDPA's flash and cuDNN backends stop at 256: against SDPA's
memory-efficient backend.

    bazel build --config=nvidia //examples/fmha_fwd:fmha_fwd_gpu //examples/fmha_bwd:fmha_bwd_gpu
    mkdir -p .gpu_bin && cp bazel-bin/examples/fmha_fwd/fmha_fwd_gpu bazel-bin/examples/fmha_bwd/fmha_bwd_gpu .gpu_bin/
    # on the GPU machine:
    python3 bench/fmha_example_bench.py --what fp8 [--bin-dir .gpu_bin] [--json out.jsonl]
    python3 bench/fmha_example_bench.py --what d512

ckt's time is the example's own (-json=1: median of -repeat CUDA-event timed
runs after -warmup, -v=0: no validation in the timed run); SDPA's: median of
CUDA-event timed runs here. FLOPs: FlashAttention's convention (4 b h s s d,
halved when causal; the backward 2.5x), so ratios are time ratios.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def example(binary, args):
    """The JSON line of one example run, or None (the error printed)."""
    cmd = [binary] + ["-%s=%s" % kv for kv in args.items()] + ["-v=0", "-json=1"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        print("  ckt failed (%d): %s %s" % (p.returncode, " ".join(cmd), (p.stderr or p.stdout)[-300:]), file=sys.stderr)
        return None
    return json.loads(lines[-1])


def timed(fn, warmup=5, repeat=20):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeat):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)


def sdpa_ms(backend, q, k, v, causal, bwd=False):
    """Median ms of SDPA (forward, or forward + backward minus forward), None when it cannot run."""
    try:
        with sdpa_kernel(backend):
            if not bwd:
                return timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
            qq, kk, vv = (x.detach().requires_grad_() for x in (q, k, v))
            o = F.scaled_dot_product_attention(qq, kk, vv, is_causal=causal)
            do = torch.randn_like(o)
            return timed(lambda: torch.autograd.grad(o, (qq, kk, vv), do, retain_graph=True))
    except Exception:  # noqa: BLE001 (a backend that refuses the shape)
        return None


def flops(b, h, s, d, dv, causal, bwd):
    f = 2.0 * b * h * s * s * (d + dv) * (0.5 if causal else 1.0)
    return f * 2.5 if bwd else f


def fp8_sdpa_ms(q, k, v, causal):
    """cuDNN's fp8 SDPA if this torch runs it on float8_e4m3fn inputs, else None."""
    try:
        q8, k8, v8 = (x.to(torch.float8_e4m3fn) for x in (q, k, v))
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return timed(lambda: F.scaled_dot_product_attention(q8, k8, v8, is_causal=causal))
    except Exception:  # noqa: BLE001
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--what", choices=["fp8", "d512"], required=True)
    ap.add_argument("--bin-dir", default=".gpu_bin")
    ap.add_argument("--seqlens", default="1024,2048,4096,8192")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--json", default="")
    o = ap.parse_args()
    fwd = os.path.join(o.bin_dir, "fmha_fwd_gpu")
    bwd_bin = os.path.join(o.bin_dir, "fmha_bwd_gpu")
    out = open(o.json, "a") if o.json else None
    dev = torch.cuda.get_device_name()
    print("device:", dev, "torch", torch.__version__)
    if o.what == "fp8":
        dims = [(64, 64), (128, 128)]
    else:
        dims = [(512, 512), (576, 512)]
    for d, dv in dims:
        for s in [int(x) for x in o.seqlens.split(",")]:
            for causal in [int(x) for x in o.causal.split(",")]:
                h = 2048 // d if o.what == "fp8" else 8
                b = max(1, 16384 // s) if o.what == "fp8" else max(1, 4096 // s)
                base = dict(b=b, h=h, s=s, d=d, d_v=dv, mask="t" if causal else "0", warmup=5, repeat=20)
                row = dict(device=dev, what=o.what, b=b, h=h, s=s, d=d, dv=dv, causal=causal)
                q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
                k = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
                v = torch.randn(b, h, s, dv, device="cuda", dtype=torch.bfloat16)
                fl = flops(b, h, s, d, dv, causal, False)
                tf = lambda ms: fl / (ms * 1e-3) / 1e12 if ms else None  # noqa: E731
                if o.what == "fp8":
                    r8 = example(fwd, dict(base, prec="fp8bf16"))
                    r16 = example(fwd, dict(base, prec="bf16"))
                    row["ckt_fp8_ms"] = r8 and r8["ms"]
                    row["ckt_bf16_ms"] = r16 and r16["ms"]
                    row["flash_ms"] = sdpa_ms(SDPBackend.FLASH_ATTENTION, q, k, v, bool(causal))
                    row["cudnn_ms"] = sdpa_ms(SDPBackend.CUDNN_ATTENTION, q, k, v, bool(causal))
                    row["cudnn_fp8_ms"] = fp8_sdpa_ms(q, k, v, bool(causal))
                else:
                    rf = example(fwd, dict(base, prec="bf16"))
                    row["ckt_fwd_ms"] = rf and rf["ms"]
                    row["efficient_ms"] = sdpa_ms(SDPBackend.EFFICIENT_ATTENTION, q, k, v, bool(causal))
                    if d == dv:
                        rb = example(bwd_bin, dict(base, prec="bf16"))
                        row["ckt_bwd_ms"] = rb and rb["ms"]
                        row["efficient_bwd_ms"] = sdpa_ms(SDPBackend.EFFICIENT_ATTENTION, q, k, v, bool(causal), True)
                        fb = flops(b, h, s, d, dv, causal, True)
                        row["ckt_bwd_tflops"] = row["ckt_bwd_ms"] and fb / (row["ckt_bwd_ms"] * 1e-3) / 1e12
                msr = {kk: vv for kk, vv in row.items() if kk.endswith("_ms")}
                txt = " ".join("%s %.3f ms (%.0f TF)" % (kk[:-3], vv, tf(vv)) for kk, vv in msr.items()
                               if vv and not kk.endswith("bwd_ms"))
                if o.what == "fp8" and row["ckt_fp8_ms"]:
                    for ref in ("ckt_bf16_ms", "flash_ms", "cudnn_ms", "cudnn_fp8_ms"):
                        if row.get(ref):
                            row["fp8_speedup_vs_" + ref[:-3]] = row[ref] / row["ckt_fp8_ms"]
                if o.what == "d512" and row.get("ckt_fwd_ms") and row.get("efficient_ms"):
                    row["fwd_x_efficient"] = row["efficient_ms"] / row["ckt_fwd_ms"]
                if row.get("ckt_bwd_ms") and row.get("efficient_bwd_ms"):
                    row["bwd_x_efficient"] = row["efficient_bwd_ms"] / row["ckt_bwd_ms"]
                print("b%d h%d s%d d%d/%d causal %d: %s %s" % (b, h, s, d, dv, causal, txt,
                      {kk: round(vv, 3) for kk, vv in row.items() if "_x_" in kk or "speedup" in kk or "tflops" in kk}))
                sys.stdout.flush()
                if out:
                    out.write(json.dumps(row) + "\n")
                del q, k, v
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
