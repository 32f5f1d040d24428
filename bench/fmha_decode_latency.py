#!/usr/bin/env python3
"""Where a decode call's time goes (GPU machine): for each shape, ckt's call
timed as bench/fmha_decode_bench.py times it (one call after an L2 flush,
CUDA events), the host time of one call (queued behind a sleeping stream),
and the device time of each kernel it launched (torch.profiler), beside
SDPA cuDNN's. Diagnostic, for docs/fmha_inference.md#decode.

    python3 bench/fmha_decode_latency.py --lib .gpu_bin/libckt_fmha.so [--points 8/1x1x65536,...]
"""
import argparse
import collections
import ctypes
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ckt_fmha  # noqa: E402
from fmha_decode_bench import Cache, ckt_args, timed, workspace_for  # noqa: E402


def host_us(fn, n=100):
    torch.cuda.synchronize()
    torch.cuda._sleep(200_000_000)  # keep the GPU busy: the calls only queue
    t = time.perf_counter()
    for _ in range(n):
        fn()
    us = (time.perf_counter() - t) / n * 1e6
    torch.cuda.synchronize()
    return us


def kernels(fn, flush, n=20):
    """Device time of each kernel fn launches, L2 flushed before each call
    (the flush's own kernel left out)."""
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            flush.zero_()
            fn()
        torch.cuda.synchronize()
    acc = collections.defaultdict(float)
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA and "fill" not in ev.name.lower():
            acc[ev.name] += ev.time_range.elapsed_us()
    return {k[:60]: v / n for k, v in acc.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=None)
    ap.add_argument("--points", default="8/1x1x4096,8/1x1x16384,8/1x1x65536,8/1x1x131072,8/1x4x65536")
    ap.add_argument("--page", type=int, default=0)
    args = ap.parse_args()
    lib = ckt_fmha.Lib(args.lib)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    print(f"device {torch.cuda.get_device_name()}")
    for pt in args.points.split(","):
        heads, b, ctx = pt.split("x")
        h, hk = (int(x) for x in heads.split("/"))
        b, ctx = int(b), int(ctx)
        q = torch.randn((b, 1, h, 128), dtype=torch.bfloat16, device="cuda", generator=gen)
        cache = Cache(b, ctx, hk, 128, args.page, torch.bfloat16, gen)
        out = torch.empty_like(q)
        a = ckt_args(lib, q, out, cache, False, 0, torch.empty(16, dtype=torch.uint8, device="cuda"))
        ws = workspace_for(lib, a)
        a = ckt_args(lib, q, out, cache, False, 0, ws)
        splits = lib.lib.ckt_fmha_fwd_num_splits(ctypes.byref(a))
        kc, vc = cache.contiguous()
        qt, kt, vt = q.transpose(1, 2), kc.transpose(1, 2), vc.transpose(1, 2)

        def sdpa():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
        for name, fn in (("ckt", lambda: lib.run(a)), ("cudnn", sdpa)):
            ms = timed(fn, 5, 20, flush)
            hu = host_us(fn)
            ks = kernels(fn, flush)
            kstr = "  ".join(f"{k}: {v:.1f}" for k, v in sorted(ks.items(), key=lambda kv: -kv[1]))
            print(f"{pt:>16} {name:>5} splits {splits:>4}  event {ms * 1e3:7.1f} us  host {hu:6.1f} us  "
                  f"kernels sum {sum(ks.values()):6.1f} us  [{kstr}]", flush=True)


if __name__ == "__main__":
    main()
