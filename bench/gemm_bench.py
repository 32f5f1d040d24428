#!/usr/bin/env python3
"""GEMM benchmark for the GPU machine: ckt's examples/gemm against cuBLAS
(torch.matmul) on the same GPU in the same run.

    python3 bench/gemm_bench.py --bin .gpu_bin/gemm_gpu [--sizes 2048,4096,8192]

ckt runs as a subprocess (its own event timer: median of -repeat runs, L2
flushed between runs); cuBLAS is timed here the same way (CUDA events, median,
L2 flush). Prints one row per point with both TFLOPS and ckt/cuBLAS.
"""
import argparse
import re
import statistics
import subprocess

import torch


def time_cublas(m, n, k, dtype, layout, warmup=5, repeat=20):
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype) if layout == "nn" else torch.randn(n, k, device="cuda", dtype=dtype)
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4 + 1, device="cuda", dtype=torch.float32)
    f = (lambda: a @ b) if layout == "nn" else (lambda: a @ b.t())
    for _ in range(warmup):
        f()
    times = []
    for _ in range(repeat):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        f()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    ms = statistics.median(times)
    return ms, 2.0 * m * n * k / (ms * 1e-3) / 1e12


def time_ckt(binary, m, n, k, prec, layout):
    out = subprocess.run([binary, f"-m={m}", f"-n={n}", f"-k={k}", f"-prec={prec}", f"-layout={layout}",
                          "-v=0", "-warmup=5", "-repeat=20"], capture_output=True, text=True, check=True).stdout
    hit = re.search(r"([0-9.]+) ms, ([0-9.]+) TFLOPS", out)
    return float(hit.group(1)), float(hit.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=".gpu_bin/gemm_gpu")
    ap.add_argument("--sizes", default="2048,4096,8192")
    ap.add_argument("--layouts", default="nn,nt")
    ap.add_argument("--precs", default="bf16,fp16")
    args = ap.parse_args()
    print(f"# {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    print(f"{'prec':5} {'layout':6} {'size':>6} {'ckt ms':>8} {'ckt TF':>8} {'cuBLAS ms':>9} {'cuBLAS TF':>9} {'ratio':>6}")
    for prec in args.precs.split(","):
        dtype = torch.bfloat16 if prec == "bf16" else torch.float16
        for layout in args.layouts.split(","):
            for s in [int(x) for x in args.sizes.split(",")]:
                cms, ctf = time_ckt(args.bin, s, s, s, prec, layout)
                bms, btf = time_cublas(s, s, s, dtype, layout)
                print(f"{prec:5} {layout:6} {s:6d} {cms:8.3f} {ctf:8.1f} {bms:9.3f} {btf:9.1f} {ctf / btf:6.2f}", flush=True)


if __name__ == "__main__":
    main()
