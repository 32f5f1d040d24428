#!/usr/bin/env python3
"""FMHA forward benchmark for the GPU machine: ckt (libckt_fmha through its C
ABI, bench/ckt_fmha.py) against PyTorch SDPA with the FlashAttention-2
backend and the cuDNN backend, in one process on the same tensors.

    bazel build --config=nvidia //lib/fmha:fmha_gpu        # here, then
    mkdir -p .gpu_bin && cp bazel-bin/lib/fmha/gpu/libckt_fmha.so .gpu_bin/
    # on the GPU machine (bench/ and .gpu_bin/ carried over):
    python3 bench/fmha_bench.py [--lib .gpu_bin/libckt_fmha.so] [--precs bf16,fp16] [--causal 0,1]
                                [--dims 64,128] [--seqlens 512,1024,...] [--json out.jsonl]

Grid (FlashAttention's benchmark): hidden 2048 (d 64 x 32 heads, d 128 x 16
heads), b * s = 16k tokens, s in 512 .. 16k, bf16 and fp16, causal and not.
Tensors are [b, s, h, d] (SDPA sees the [b, h, s, d] view), as in
FlashAttention's benchmark. Timing: CUDA events around each call, the L2
flushed before each timed run, median of --repeat after --warmup.
TFLOPS use FlashAttention's convention: 4 * b * h * s * s * d, halved when
causal (the same for every backend, so the ratios are time ratios).
Once per shape ckt's output is compared with SDPA's (max abs difference).
With --anchors (default ../shared/anchors/sdpa_h200.tsv when present) the
H200 anchor TFLOPS of the same point are printed beside.
"""
import argparse
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ckt_fmha  # noqa: E402


def timed(fn, warmup, repeat, flush):
    """Median ms of fn() over repeat runs, L2 flushed before each (outside the events)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def sdpa(backend, q, k, v, causal):
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))


def time_sdpa(backend, q, k, v, causal, warmup, repeat, flush):
    """(ms, output) or (None, error text) when the backend cannot run the shape."""
    try:
        with sdpa_kernel(backend):  # entered once: the timed call is the bare op
            out = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
            ms = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)), warmup, repeat,
                       flush)
        return ms, out
    except RuntimeError as e:
        return None, str(e).splitlines()[0][:80]


def load_anchors(path, pass_="fwd"):
    """{(dtype, d, s, causal, backend): tflops} from the anchors TSV (the rows of pass_: fwd or bwd)."""
    anchors = {}
    if not path or not os.path.exists(path):
        return anchors
    with open(path) as f:
        for line in f:
            if line.startswith("#") or line.startswith("pass"):
                continue
            p = line.rstrip("\n").split("\t")
            if len(p) < 10 or p[0] != pass_:
                continue
            anchors[(p[1], int(p[5]), int(p[4]), int(p[6]), p[7])] = float(p[9])
    return anchors


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=None, help="libckt_fmha.so (default: $CKT_FMHA_LIB, .gpu_bin/, bazel-bin/lib/fmha/gpu/)")
    ap.add_argument("--precs", default="bf16,fp16")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--tokens", type=int, default=16384, help="b * s")
    ap.add_argument("--seqlens", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--no-cudnn", action="store_true")
    ap.add_argument("--anchors", default=os.path.join(here, "..", "..", "shared", "anchors", "sdpa_h200.tsv"))
    ap.add_argument("--json", default=None, help="append one JSON line per point to this file")
    args = ap.parse_args()

    lib = ckt_fmha.Lib(args.lib)
    anchors = load_anchors(args.anchors)
    dev = torch.cuda.get_device_name(0)
    print(f"# {dev}, torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}, "
          f"ckt {lib.path}")
    print("# TFLOPS = 4*b*h*s*s*d (/2 causal) / time; ratio = ckt / backend; maxdiff = max |O_ckt - O_sdpa|")
    hdr = (f"{'prec':4} {'causal':>6} {'d':>4} {'h':>3} {'b':>3} {'s':>6} | {'ckt ms':>8} {'ckt TF':>7} | "
           f"{'FA2 TF':>7} {'x FA2':>6} | {'cuDNN TF':>8} {'x cuDNN':>7} | {'maxdiff':>8} | {'anchor FA2/cuDNN':>16}  instance")
    print(hdr)
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4 + 1, device="cuda",
                        dtype=torch.float32)
    out_json = open(args.json, "a", buffering=1) if args.json else None  # a line at a time: a run cut short keeps its points
    for prec in args.precs.split(","):
        dtype = torch.bfloat16 if prec == "bf16" else torch.float16
        tname = "bfloat16" if prec == "bf16" else "float16"
        for causal in [int(c) for c in args.causal.split(",")]:
            for d in [int(x) for x in args.dims.split(",")]:
                h = args.hidden // d
                for s in [int(x) for x in args.seqlens.split(",")]:
                    b = max(1, args.tokens // s)
                    torch.manual_seed(0)
                    # [b, s, h, d] storage, [b, h, s, d] views
                    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=dtype).transpose(1, 2) for _ in range(3))
                    o = torch.empty(b, s, h, d, device="cuda", dtype=dtype).transpose(1, 2)
                    flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
                    tf = lambda ms: flops / (ms * 1e-3) / 1e12 if ms else None  # noqa: E731

                    fa = lib.fwd_args(q, k, v, o, causal=causal)
                    stream = torch.cuda.current_stream().cuda_stream
                    inst = lib.instance(fa)
                    try:
                        ckt_ms = timed(lambda: lib.run(fa, stream), args.warmup, args.repeat, flush)
                        ckt_err = None
                    except ckt_fmha.CktError as e:
                        ckt_ms, ckt_err = None, str(e)
                    fa2_ms, fa2_out = time_sdpa(SDPBackend.FLASH_ATTENTION, q, k, v, causal, args.warmup,
                                                args.repeat, flush)
                    cudnn_ms, cudnn_out = (None, "skipped") if args.no_cudnn else time_sdpa(
                        SDPBackend.CUDNN_ATTENTION, q, k, v, causal, args.warmup, args.repeat, flush)

                    # correctness, once per shape: against FA2's output (else cuDNN's, else math)
                    maxdiff = None
                    if ckt_ms:
                        lib.run(fa, stream)
                        ref = fa2_out if fa2_ms else cudnn_out if cudnn_ms else sdpa(SDPBackend.MATH, q, k, v, causal)
                        maxdiff = (o.float() - ref.float()).abs().max().item()

                    ckt_tf, fa2_tf, cudnn_tf = tf(ckt_ms), tf(fa2_ms), tf(cudnn_ms)
                    a_fa2 = anchors.get((tname, d, s, causal, "flash"))
                    a_cudnn = anchors.get((tname, d, s, causal, "cudnn"))

                    def fmt(x, w, p=1):
                        return f"{x:{w}.{p}f}" if x is not None else f"{'-':>{w}}"

                    anchor = f"{fmt(a_fa2, 7, 0)}/{fmt(a_cudnn, 7, 0)}" if (a_fa2 or a_cudnn) else f"{'':16}"
                    line = (f"{prec:4} {causal:6d} {d:4d} {h:3d} {b:3d} {s:6d} | {fmt(ckt_ms, 8, 3)} {fmt(ckt_tf, 7)} | "
                            f"{fmt(fa2_tf, 7)} {fmt(ckt_tf / fa2_tf if ckt_tf and fa2_tf else None, 6, 2)} | "
                            f"{fmt(cudnn_tf, 8)} {fmt(ckt_tf / cudnn_tf if ckt_tf and cudnn_tf else None, 7, 2)} | "
                            f"{fmt(maxdiff, 8, 4)} | {anchor:>16}  {inst}")
                    if ckt_err:
                        line += f"  ckt error: {ckt_err}"
                    if fa2_ms is None:
                        line += f"  FA2: {fa2_out}"
                    if cudnn_ms is None and not args.no_cudnn:
                        line += f"  cuDNN: {cudnn_out}"
                    print(line, flush=True)
                    if out_json:
                        out_json.write(json.dumps({
                            "device": dev, "prec": prec, "causal": causal, "d": d, "h": h, "b": b, "s": s,
                            "instance": inst, "ckt_ms": ckt_ms, "ckt_tflops": ckt_tf, "fa2_ms": fa2_ms,
                            "fa2_tflops": fa2_tf, "cudnn_ms": cudnn_ms, "cudnn_tflops": cudnn_tf,
                            "maxdiff": maxdiff, "anchor_fa2_tflops": a_fa2, "anchor_cudnn_tflops": a_cudnn,
                            "error": ckt_err}) + "\n")
                    del q, k, v, o, fa2_out, cudnn_out
    if out_json:
        out_json.close()


if __name__ == "__main__":
    main()
