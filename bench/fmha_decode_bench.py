#!/usr/bin/env python3
"""Decode and paged-prefill benchmark for the GPU machine: ckt's forward over
a KV cache (contiguous or paged, split-KV) against the device's copy
bandwidth and PyTorch SDPA (FlashAttention-2 and cuDNN backends, contiguous
cache), in one process.

    bazel build --config=nvidia //lib/fmha:fmha_gpu        # here, then
    mkdir -p .gpu_bin && cp bazel-bin/lib/fmha/gpu/libckt_fmha.so .gpu_bin/
    # on the GPU machine:
    python3 bench/fmha_decode_bench.py [--lib .gpu_bin/libckt_fmha.so] [--json out.jsonl]
        [--batches 1,4,16,64] [--contexts 4096,16384,65536,131072] [--heads 32/8,8/1]
        [--pages 0,16,128] [--max-tokens 1048576] [--splits auto|auto,1,max] [--prefill]

Decode grid (the issue's): bf16, d 128, one query per entry, GQA 32/8 and
8/1, batch 1..64, context 4k..128k (batch x context capped by
--max-tokens), contiguous cache and pages of 16 and 128 (pages shuffled in
the pool), num_splits automatic (and, with --splits auto,1,max, one split
and the most splits, to show the heuristic's choice against both).
Bandwidth: the bytes of K and V read once (batch x context x kv heads x
(d + d_v) x 2) over the median time; "copy" is a device-to-device copy of
1 GiB timed the same way, so "% copy" compares both on this device now;
"samecp%" times a copy that moves as many bytes as the point reads (half
read, half written) against ckt's time: at small points, where one kernel's
launch and ramp-up weigh, it is what a single kernel of that size reaches.
SDPA runs the contiguous cache with enable_gqa (its flash backend may
decline a shape: then "-"). With --prefill: the paged-cache prefill check
(b 4, s 4096, causal, page 128) against ckt's own contiguous forward.
"""
import argparse
import ctypes
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


def copy_gbs(warmup, repeat, flush):
    src = torch.empty(1 << 29, dtype=torch.float16, device="cuda")  # 1 GiB
    dst = torch.empty_like(src)
    ms = timed(lambda: dst.copy_(src), warmup, repeat, flush)
    return 2 * src.numel() * 2 / ms / 1e6


class Cache:
    """K/V of `batch` entries of `ctx` keys, [b, s, hk, d] contiguous or paged
    ([pages, ps, hk, d], the pages of each entry shuffled over the pool)."""

    def __init__(self, batch, ctx, hk, d, page, dtype, gen):
        self.batch, self.ctx, self.hk, self.d, self.page = batch, ctx, hk, d, page
        if page == 0:
            self.k = torch.randn((batch, ctx, hk, d), dtype=dtype, device="cuda", generator=gen)
            self.v = torch.randn((batch, ctx, hk, d), dtype=dtype, device="cuda", generator=gen)
            self.table = None
        else:
            per = (ctx + page - 1) // page
            pages = batch * per
            self.k = torch.randn((pages, page, hk, d), dtype=dtype, device="cuda", generator=gen)
            self.v = torch.randn((pages, page, hk, d), dtype=dtype, device="cuda", generator=gen)
            perm = torch.randperm(pages, device="cuda", generator=gen).to(torch.int32)
            self.table = perm.view(batch, per).contiguous()
            self.num_pages, self.per = pages, per
        self.lens = torch.full((batch,), ctx, dtype=torch.int32, device="cuda")

    def contiguous(self):
        """[b, s, hk, d] K and V (gathered from the pages)."""
        if self.table is None:
            return self.k, self.v
        idx = self.table.long()
        k = self.k[idx].reshape(self.batch, -1, self.hk, self.d)[:, :self.ctx]
        v = self.v[idx].reshape(self.batch, -1, self.hk, self.d)[:, :self.ctx]
        return k.contiguous(), v.contiguous()


def ckt_args(lib, q, out, cache, causal, splits, ws):
    """FwdArgs for q [b, sq, h, d] over the cache, num_splits `splits` (0 = auto)."""
    b, sq, h, d = q.shape
    a = ckt_fmha.FwdArgs()
    a.dtype = lib._dtype(q)
    a.q, a.o, a.k, a.v = q.data_ptr(), out.data_ptr(), cache.k.data_ptr(), cache.v.data_ptr()
    a.batch, a.nhead_q, a.nhead_k, a.seqlen_q, a.seqlen_k, a.hdim_q, a.hdim_v = b, h, cache.hk, sq, cache.ctx, d, d
    a.q_stride_b, a.q_stride_s, a.q_stride_h = q.stride(0), q.stride(1), q.stride(2)
    a.o_stride_b, a.o_stride_s, a.o_stride_h = out.stride(0), out.stride(1), out.stride(2)
    a.k_stride_b, a.k_stride_s, a.k_stride_h = cache.k.stride(0), cache.k.stride(1), cache.k.stride(2)
    a.v_stride_b, a.v_stride_s, a.v_stride_h = cache.v.stride(0), cache.v.stride(1), cache.v.stride(2)
    a.seqlen_k_ptr = cache.lens.data_ptr()
    if cache.table is not None:
        a.page_size, a.num_pages = cache.page, cache.num_pages
        a.block_table, a.max_pages_per_seq = cache.table.data_ptr(), cache.per
    a.mask = ckt_fmha.MASK_CAUSAL_BOTTOM_RIGHT if causal else ckt_fmha.MASK_NONE
    a.num_splits = splits
    a.workspace = ws.data_ptr()
    a.workspace_bytes = ws.numel()
    return a


def workspace_for(lib, a):
    n = lib.lib.ckt_fmha_fwd_workspace_bytes(ctypes.byref(a))
    return torch.empty(max(n, 16), dtype=torch.uint8, device="cuda")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=None)
    ap.add_argument("--batches", default="1,4,16,64")
    ap.add_argument("--contexts", default="4096,16384,65536,131072")
    ap.add_argument("--heads", default="32/8,8/1")
    ap.add_argument("--pages", default="0,16,128")
    ap.add_argument("--sq", type=int, default=1)
    ap.add_argument("--max-tokens", type=int, default=1 << 20)
    ap.add_argument("--splits", default="auto")
    ap.add_argument("--prefill", action="store_true")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--d", type=int, default=128, help="head dim (q/k and v)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    lib = ckt_fmha.Lib(args.lib)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    dtype, d = torch.bfloat16, args.d
    copy = copy_gbs(args.warmup, args.repeat, flush)
    print(f"device {torch.cuda.get_device_name()}  copy {copy:.0f} GB/s (1 GiB device-to-device)")
    out_json = open(args.json, "a", buffering=1) if args.json else None  # a line at a time: a run cut short keeps its points
    hdr = f"{'heads':>6} {'b':>3} {'ctx':>7} {'page':>5} {'splits':>7} {'ms':>8} {'GB/s':>7} {'%copy':>6}" \
          f" {'flash%':>7} {'cudnn%':>7} {'samecp%':>7}  maxdiff"
    print(hdr)
    modes = args.splits.split(",")
    for heads in args.heads.split(","):
        h, hk = (int(x) for x in heads.split("/"))
        for batch in (int(x) for x in args.batches.split(",")):
            for ctx in (int(x) for x in args.contexts.split(",")):
                if batch * ctx > args.max_tokens:
                    continue
                q = torch.randn((batch, args.sq, h, d), dtype=dtype, device="cuda", generator=gen)
                kv_bytes = batch * ctx * hk * 2 * d * 2
                sdpa_ms = {}
                # a device-to-device copy that moves as many bytes (kv_bytes / 2
                # read, as many written): the time one kernel of this size takes
                src = torch.empty(kv_bytes // 4, dtype=torch.float16, device="cuda")
                dst = torch.empty_like(src)
                same_copy_ms = timed(lambda: dst.copy_(src), args.warmup, args.repeat, flush)
                del src, dst
                for page in (int(x) for x in args.pages.split(",")):
                    cache = Cache(batch, ctx, hk, d, page, dtype, gen)
                    kc, vc = cache.contiguous()
                    qt, kt, vt = q.transpose(1, 2), kc.transpose(1, 2), vc.transpose(1, 2)
                    if not sdpa_ms:  # SDPA timed once per shape, on the contiguous cache
                        for name, be in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
                            try:
                                with sdpa_kernel(be):
                                    F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
                                    sdpa_ms[name] = timed(
                                        lambda: F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True),
                                        args.warmup, args.repeat, flush)
                            except RuntimeError:
                                sdpa_ms[name] = None
                    # the reference: SDPA (any backend) over this cache's keys
                    ref = F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True).transpose(1, 2)
                    del kc, vc, qt, kt, vt
                    for mode in modes:
                        out = torch.empty_like(q)
                        splits = 0
                        if mode == "max":
                            splits = min(128, (ctx + 63) // 64)
                        elif mode != "auto":
                            splits = int(mode)
                        a = ckt_args(lib, q, out, cache, False, splits, torch.empty(16, dtype=torch.uint8,
                                                                                    device="cuda"))
                        ws = workspace_for(lib, a)
                        a = ckt_args(lib, q, out, cache, False, splits, ws)
                        used = lib.lib.ckt_fmha_fwd_num_splits(ctypes.byref(a))
                        ms = timed(lambda: lib.run(a), args.warmup, args.repeat, flush)
                        diff = (out.float() - ref.float()).abs().max().item()
                        gbs = kv_bytes / ms / 1e6

                        def ratio(name):
                            t = sdpa_ms.get(name)
                            return f"{t / ms:7.2f}" if t else f"{'-':>7}"
                        print(f"{heads:>6} {batch:>3} {ctx:>7} {page or '-':>5} {str(used) + ('*' if mode == 'auto' else ''):>7}"
                              f" {ms:8.4f} {gbs:7.0f} {100 * gbs / copy:5.1f}% {ratio('flash')} {ratio('cudnn')}"
                              f" {100 * same_copy_ms / ms:6.1f}%"
                              f"  {diff:.3g}", flush=True)
                        if out_json:
                            out_json.write(json.dumps(dict(kind="decode", d=d, heads=heads, batch=batch, ctx=ctx, page=page,
                                                           mode=mode, splits=used, ms=ms, gbs=gbs, copy_gbs=copy,
                                                           sdpa_flash_ms=sdpa_ms.get("flash"),
                                                           sdpa_cudnn_ms=sdpa_ms.get("cudnn"), same_copy_ms=same_copy_ms,
                                                           maxdiff=diff)) + "\n")
                    del cache
                torch.cuda.empty_cache()
    if args.prefill:
        print("\nprefill over a paged cache (causal, bf16 d128, h 16/16): paged / contiguous time ratio")
        for b, s, page in ((4, 4096, 128), (1, 16384, 128), (4, 4096, 16)):
            q = torch.randn((b, s, 16, d), dtype=dtype, device="cuda", generator=gen)
            times = {}
            outs = {}
            for pg in (0, page):
                cache = Cache(b, s, 16, d, pg, dtype, gen) if pg == 0 else Cache(b, s, 16, d, pg, dtype, gen)
                if pg:  # the same keys as the contiguous run: copy them into the pages
                    idx = cache.table.long().view(-1)
                    kc, vc = prev
                    per = cache.per
                    pad = per * pg - s
                    kp = torch.nn.functional.pad(kc, (0, 0, 0, 0, 0, pad)).reshape(b * per, pg, 16, d)
                    vp = torch.nn.functional.pad(vc, (0, 0, 0, 0, 0, pad)).reshape(b * per, pg, 16, d)
                    cache.k[idx] = kp
                    cache.v[idx] = vp
                else:
                    prev = (cache.k, cache.v)
                out = torch.empty_like(q)
                a = ckt_args(lib, q, out, cache, True, 1, torch.empty(16, dtype=torch.uint8, device="cuda"))
                times[pg] = timed(lambda: lib.run(a), args.warmup, args.repeat, flush)
                outs[pg] = out
            flops = 4 * b * 16 * s * s * d / 2
            same = (outs[0] - outs[page]).abs().max().item()
            print(f"  b {b} s {s} page {page}: contiguous {times[0]:.3f} ms ({flops / times[0] / 1e9:.0f} TFLOPS), "
                  f"paged {times[page]:.3f} ms ({flops / times[page] / 1e9:.0f} TFLOPS): "
                  f"{times[0] / times[page]:.3f}x  maxdiff {same:.3g}", flush=True)
            if out_json:
                out_json.write(json.dumps(dict(kind="prefill", batch=b, s=s, page=page, contiguous_ms=times[0],
                                               paged_ms=times[page], maxdiff=same)) + "\n")


if __name__ == "__main__":
    main()
