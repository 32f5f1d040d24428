#!/usr/bin/env python3
"""Paged-prefill A / B of builds of libckt_fmha in one process: for each
library, ckt's contiguous forward and the same forward over a paged cache
holding the same keys (causal bf16 d128, h 16/16), alternating libraries
each round, on the same tensors.

    python3 bench/fmha_paged_ab.py A.so [B.so ...] [--points 4x4096x128,1x16384x128,4x4096x16] [--rounds 3]

Prints, per point and library, the median over rounds of the contiguous and
paged times and their ratio (contiguous / paged: the issue's ">= 0.95x of
ckt's own contiguous forward at page size 128"), and each library's times
against the first library's.
"""
import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ckt_fmha  # noqa: E402
from fmha_decode_bench import Cache, ckt_args, timed  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("libs", nargs="+")
    ap.add_argument("--points", default="4x4096x128,1x16384x128,4x4096x16")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--in-order", action="store_true",
                    help="entry b's pages in order in the pool (page i of entry b at b * pages_per_seq + i) "
                         "instead of shuffled: tells the kernel's page logic from the pool's locality")
    args = ap.parse_args()
    libs = [ckt_fmha.Lib(p, check_abi=False) for p in args.libs]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    d, h, dtype = args.d, 16, torch.bfloat16
    print(f"# {torch.cuda.get_device_name()}: causal bf16 d{d} h16; ratio = contiguous / paged time"
          + ("; pages in order" if args.in_order else "; pages shuffled"))
    for point in args.points.split(","):
        b, s, page = (int(x) for x in point.split("x"))
        q = torch.randn((b, s, h, d), dtype=dtype, device="cuda", generator=gen)
        flat = Cache(b, s, h, d, 0, dtype, gen)
        paged = Cache(b, s, h, d, page, dtype, gen)
        if args.in_order:
            paged.table = torch.arange(paged.table.numel(), dtype=torch.int32, device="cuda").view(b, -1).contiguous()
        idx = paged.table.long().view(-1)
        pad = paged.per * page - s
        paged.k[idx] = torch.nn.functional.pad(flat.k, (0, 0, 0, 0, 0, pad)).reshape(b * paged.per, page, h, d)
        paged.v[idx] = torch.nn.functional.pad(flat.v, (0, 0, 0, 0, 0, pad)).reshape(b * paged.per, page, h, d)
        ws = torch.empty(16, dtype=torch.uint8, device="cuda")
        times = {(i, c): [] for i in range(len(libs)) for c in (0, 1)}
        outs = {}
        for _ in range(args.rounds):
            for i, lib in enumerate(libs):
                for c, cache in ((0, flat), (1, paged)):
                    out = torch.empty_like(q)
                    a = ckt_args(lib, q, out, cache, True, 1, ws)
                    times[(i, c)].append(timed(lambda: lib.run(a), 3, args.repeat, flush))
                    outs[(i, c)] = out
        ref = outs[(0, 0)]
        for i, p in enumerate(args.libs):
            tc, tp = statistics.median(times[(i, 0)]), statistics.median(times[(i, 1)])
            base_c, base_p = statistics.median(times[(0, 0)]), statistics.median(times[(0, 1)])
            diff = max((outs[(i, c)] - ref).abs().max().item() for c in (0, 1))
            print(f"b {b} s {s} page {page:4d} {os.path.basename(p):>12}: contiguous {tc:.3f} ms, paged {tp:.3f} ms, "
                  f"ratio {tc / tp:.3f}; vs first: contiguous {base_c / tc:.3f}x paged {base_p / tp:.3f}x; "
                  f"maxdiff {diff:.3g}", flush=True)


if __name__ == "__main__":
    main()
