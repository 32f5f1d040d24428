#!/usr/bin/env python3
"""FMHA backward benchmark for the GPU machine: ckt's backward (libckt_fmha's
ckt_fmha_bwd through bench/ckt_fmha.py), non-deterministic and deterministic,
against PyTorch SDPA's FlashAttention-2 and cuDNN backwards, in one process on
the same tensors.

    bazel build --config=nvidia //lib/fmha:fmha_gpu        # here, then
    mkdir -p .gpu_bin && cp bazel-bin/lib/fmha/gpu/libckt_fmha.so .gpu_bin/
    # on the GPU machine (bench/ and .gpu_bin/ carried over):
    python3 bench/fmha_bwd_bench.py [--lib .gpu_bin/libckt_fmha.so] [--precs bf16,fp16] [--causal 0,1]
                                    [--dims 64,128,256] [--seqlens 1024,...,16384] [--json out.jsonl]

Grid (the forward bench's, FlashAttention's): hidden 2048 (h = 2048 / d:
d 64 x 32 heads, d 128 x 16, d 256 x 8), b * s = 16k tokens, s in 1k .. 16k,
bf16 and fp16, causal (top-left) and not. Tensors are [b, s, h, d] (SDPA sees
the [b, h, s, d] view); dO is random normal like q, k, v.

Only the backward is timed; the forward's outputs are prepared once per
point: ckt's O and LSE from its own forward (ckt_fmha_fwd), SDPA's autograd
graph from one forward per backend. Timed calls:
  ckt:       ckt_fmha_bwd(&args, stream) on prepared arguments: the one-call API, so planning
             and preparing the workspace are in the time (its three kernels too)
  ckt det:   the same with deterministic = 1
  FA2/cuDNN: torch.autograd.grad(out, (q, k, v), dO, retain_graph=True) under
             sdpa_kernel(FLASH_ATTENTION / CUDNN_ATTENTION): the backend's backward kernels,
             plus PyTorch's autograd dispatch (a few microseconds)
CUDA events around each call, the L2 flushed before each timed run (outside
the events), median of --repeat after --warmup (fmha_bench.timed).
TFLOPS: FlashAttention's convention, backward = 2.5 x the forward's
4 * b * h * s * s * d, halved when causal (the same for every backend, so the
ratios are time ratios). Ratios: ckt / backend (> 1: ckt faster);
det +% = deterministic time over non-deterministic time - 1. Once per point
ckt's dQ / dK / dV are compared with FA2's (else cuDNN's): maxdiff is the
largest max |difference| of the three; bitwise: two deterministic runs give
identical dQ, dK, dV. With --anchors (default ../shared/anchors/sdpa_h200.tsv)
the H200 anchor TFLOPS of the same point (bwd rows) are printed beside.
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ckt_fmha  # noqa: E402
from fmha_bench import load_anchors, timed  # noqa: E402


def time_sdpa_bwd(backend, q, k, v, do, causal, warmup, repeat, flush):
    """(ms, (dq, dk, dv)) of the backend's backward, or (None, error text) when it cannot run the shape."""
    try:
        qr, kr, vr = (t.detach().requires_grad_() for t in (q, k, v))
        with sdpa_kernel(backend):  # entered once: the timed call is the bare backward
            out = F.scaled_dot_product_attention(qr, kr, vr, is_causal=bool(causal))
            grads = torch.autograd.grad(out, (qr, kr, vr), do, retain_graph=True)
            ms = timed(lambda: torch.autograd.grad(out, (qr, kr, vr), do, retain_graph=True), warmup, repeat,
                       flush)
        return ms, grads
    except RuntimeError as e:
        return None, str(e).splitlines()[0][:80]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=None, help="libckt_fmha.so (default: $CKT_FMHA_LIB, .gpu_bin/, bazel-bin/lib/fmha/gpu/)")
    ap.add_argument("--precs", default="bf16,fp16")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--dims", default="64,128,256")
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--tokens", type=int, default=16384, help="b * s")
    ap.add_argument("--seqlens", default="1024,2048,4096,8192,16384")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--no-cudnn", action="store_true")
    ap.add_argument("--no-det", action="store_true", help="skip ckt's deterministic backward")
    ap.add_argument("--sm80", action="store_true",
                    help="also time ckt's backward with CKT_FMHA_FORCE_SM80=1 (the mma.sync kernels on a Hopper), "
                         "same process and tensors: sm80 ms and det ms, and sm80 / default (> 1: the default faster)")
    ap.add_argument("--anchors", default=os.path.join(here, "..", "..", "shared", "anchors", "sdpa_h200.tsv"))
    ap.add_argument("--json", default=None, help="append one JSON line per point to this file")
    args = ap.parse_args()

    lib = ckt_fmha.Lib(args.lib)
    if not lib.has_bwd:
        sys.exit(f"{lib.path}: no backward in this libckt_fmha (ckt_fmha_bwd)")
    anchors = load_anchors(args.anchors, "bwd")
    dev = torch.cuda.get_device_name(0)
    print(f"# {dev}, torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}, "
          f"ckt {lib.path}")
    print("# backward only; TFLOPS = 2.5 * 4*b*h*s*s*d (/2 causal) / time; x = ckt / backend (time ratio); "
          "det +% = det time / ckt time - 1; maxdiff = max |dX_ckt - dX_FA2| over dq, dk, dv; "
          "bitwise = two det runs identical")
    hdr = (f"{'prec':4} {'causal':>6} {'d':>4} {'h':>3} {'b':>3} {'s':>6} | {'ckt ms':>8} {'ckt TF':>7} | "
           f"{'det ms':>8} {'det TF':>7} {'det +%':>6} | {'FA2 TF':>7} {'x FA2':>6} {'det x':>6} | "
           f"{'cuDNN TF':>8} {'x cuDNN':>7} | {'maxdiff':>8} {'bitwise':>7} | {'anchor FA2/cuDNN':>16}")
    print(hdr)
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4 + 1, device="cuda",
                        dtype=torch.float32)
    out_json = open(args.json, "a", buffering=1) if args.json else None  # a line at a time: a run cut short keeps its points
    stream = torch.cuda.current_stream().cuda_stream
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
                    q, k, v, do = (torch.randn(b, s, h, d, device="cuda", dtype=dtype).transpose(1, 2)
                                   for _ in range(4))
                    flops = 2.5 * 4.0 * b * h * s * s * d / (2 if causal else 1)
                    tf = lambda ms: flops / (ms * 1e-3) / 1e12 if ms else None  # noqa: E731

                    # ckt: forward once, then the backward's arguments (non-deterministic, deterministic)
                    ckt_err, ckt_ms, det_ms, maxdiff, bitwise, grads = None, None, None, None, None, None
                    sm80_ms, sm80_diff, sm80_det_ms = None, None, None
                    try:
                        o, lse = lib.fwd(q, k, v, causal=causal, return_lse=True)
                        dq, dk, dv = (torch.empty_like(t) for t in (q, k, v))
                        a = lib.bwd_args(q, k, v, o, do, lse, dq, dk, dv, causal=causal)
                        keep = [lib.bwd_workspace(a, q.device)]  # the workspaces live as long as the args
                        ckt_ms = timed(lambda: lib.run_bwd(a, stream), args.warmup, args.repeat, flush)
                        lib.run_bwd(a, stream)
                        grads = (dq.clone(), dk.clone(), dv.clone())
                        if args.sm80:  # the dispatcher reads the variable at every call
                            os.environ["CKT_FMHA_FORCE_SM80"] = "1"
                            try:
                                sm80_ms = timed(lambda: lib.run_bwd(a, stream), args.warmup, args.repeat, flush)
                                lib.run_bwd(a, stream)
                                sm80_diff = max((x.float() - y.float()).abs().max().item()
                                                for x, y in zip(grads, (dq, dk, dv)))
                            finally:
                                del os.environ["CKT_FMHA_FORCE_SM80"]
                        if not args.no_det:
                            ad = lib.bwd_args(q, k, v, o, do, lse, dq, dk, dv, causal=causal, deterministic=True)
                            keep.append(lib.bwd_workspace(ad, q.device))
                            det_ms = timed(lambda: lib.run_bwd(ad, stream), args.warmup, args.repeat, flush)
                            lib.run_bwd(ad, stream)
                            first = (dq.clone(), dk.clone(), dv.clone())
                            lib.run_bwd(ad, stream)
                            bitwise = all(torch.equal(x, y) for x, y in zip(first, (dq, dk, dv)))
                            del first
                            if args.sm80:
                                os.environ["CKT_FMHA_FORCE_SM80"] = "1"
                                try:
                                    sm80_det_ms = timed(lambda: lib.run_bwd(ad, stream), args.warmup, args.repeat,
                                                        flush)
                                finally:
                                    del os.environ["CKT_FMHA_FORCE_SM80"]
                        del keep, o, lse, dq, dk, dv
                    except ckt_fmha.CktError as e:
                        ckt_err = str(e)
                    fa2_ms, fa2_g = time_sdpa_bwd(SDPBackend.FLASH_ATTENTION, q, k, v, do, causal, args.warmup,
                                                  args.repeat, flush)
                    cudnn_ms, cudnn_g = (None, "skipped") if args.no_cudnn else time_sdpa_bwd(
                        SDPBackend.CUDNN_ATTENTION, q, k, v, do, causal, args.warmup, args.repeat, flush)

                    # correctness, once per point: against FA2's gradients (else cuDNN's)
                    ref = fa2_g if fa2_ms else cudnn_g if cudnn_ms else None
                    if grads is not None and ref is not None:
                        maxdiff = max((x.float() - y.float()).abs().max().item() for x, y in zip(grads, ref))

                    ckt_tf, det_tf, fa2_tf, cudnn_tf = tf(ckt_ms), tf(det_ms), tf(fa2_ms), tf(cudnn_ms)
                    det_over = (det_ms / ckt_ms - 1) * 100 if det_ms and ckt_ms else None
                    a_fa2 = anchors.get((tname, d, s, causal, "flash"))
                    a_cudnn = anchors.get((tname, d, s, causal, "cudnn"))

                    def fmt(x, w, p=1):
                        return f"{x:{w}.{p}f}" if x is not None else f"{'-':>{w}}"

                    def ratio(x, y):
                        return x / y if x and y else None

                    anchor = f"{fmt(a_fa2, 7, 0)}/{fmt(a_cudnn, 7, 0)}" if (a_fa2 or a_cudnn) else f"{'':16}"
                    bw = "-" if bitwise is None else "yes" if bitwise else "NO"
                    line = (f"{prec:4} {causal:6d} {d:4d} {h:3d} {b:3d} {s:6d} | {fmt(ckt_ms, 8, 3)} {fmt(ckt_tf, 7)} | "
                            f"{fmt(det_ms, 8, 3)} {fmt(det_tf, 7)} {fmt(det_over, 6)} | "
                            f"{fmt(fa2_tf, 7)} {fmt(ratio(ckt_tf, fa2_tf), 6, 2)} {fmt(ratio(det_tf, fa2_tf), 6, 2)} | "
                            f"{fmt(cudnn_tf, 8)} {fmt(ratio(ckt_tf, cudnn_tf), 7, 2)} | "
                            f"{fmt(maxdiff, 8, 4)} {bw:>7} | {anchor:>16}")
                    if args.sm80:
                        line += (f" | sm80 {fmt(sm80_ms, 8, 3)} ms, x {fmt(ratio(sm80_ms, ckt_ms), 5, 2)}, det "
                                 f"{fmt(sm80_det_ms, 8, 3)} ms, x {fmt(ratio(sm80_det_ms, det_ms), 5, 2)}, "
                                 f"diff {fmt(sm80_diff, 7, 4)}")
                    if ckt_err:
                        line += f"  ckt error: {ckt_err}"
                    if fa2_ms is None:
                        line += f"  FA2: {fa2_g}"
                    if cudnn_ms is None and not args.no_cudnn:
                        line += f"  cuDNN: {cudnn_g}"
                    print(line, flush=True)
                    if out_json:
                        out_json.write(json.dumps({
                            "pass": "bwd", "device": dev, "prec": prec, "causal": causal, "d": d, "h": h, "b": b,
                            "s": s, "ckt_ms": ckt_ms, "ckt_tflops": ckt_tf, "ckt_det_ms": det_ms,
                            "ckt_det_tflops": det_tf, "det_overhead_pct": det_over, "fa2_ms": fa2_ms,
                            "fa2_tflops": fa2_tf, "cudnn_ms": cudnn_ms, "cudnn_tflops": cudnn_tf,
                            "ckt_over_fa2": ratio(ckt_tf, fa2_tf), "ckt_over_cudnn": ratio(ckt_tf, cudnn_tf),
                            "det_over_fa2": ratio(det_tf, fa2_tf), "maxdiff": maxdiff, "det_bitwise": bitwise,
                            "anchor_fa2_tflops": a_fa2, "anchor_cudnn_tflops": a_cudnn, "error": ckt_err,
                            "sm80_ms": sm80_ms, "sm80_det_ms": sm80_det_ms, "sm80_maxdiff": sm80_diff}) + "\n")
                    del q, k, v, do, grads, fa2_g, cudnn_g, ref
    if out_json:
        out_json.close()


if __name__ == "__main__":
    main()
