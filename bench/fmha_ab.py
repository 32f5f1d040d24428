#!/usr/bin/env python3
"""A / B of two builds of libckt_fmha's forward in one process, on the same
tensors, alternating: whether a change cost the forward speed.

    python3 bench/fmha_ab.py OLD.so NEW.so [--dims 64,128] [--seqlens 1024,4096,16384] [--rounds 3] [--varlen] [--causal 0,1] [--p-drop 0.1]

FlashAttention's grid (hidden 2048, b * s = 16k tokens, [b, s, h, d] bf16),
causal and not. Each round times A then B (median of --repeat, L2 flushed
before each run); the ratio is A's time over B's (> 1: B faster), the median
over rounds. --varlen: the same shapes in group mode (b entries of s tokens,
cu_seqlens on the device: the ragged path). OLD.so may predate fields of ckt_fmha_fwd_args (its struct is a
prefix): its layout is not checked.
"""
import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ckt_fmha  # noqa: E402
from fmha_bench import timed  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--seqlens", default="1024,4096,16384")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--varlen", action="store_true")
    ap.add_argument("--causal", default="0,1", help="the masks: 0 none, 1 causal")
    ap.add_argument("--p-drop", type=float, default=0.0, help="dropout probability (batch mode; seed 7)")
    args = ap.parse_args()
    libs = [ckt_fmha.Lib(args.a, check_abi=False), ckt_fmha.Lib(args.b)]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    print(f"# {torch.cuda.get_device_name()}: A = {args.a}, B = {args.b}; ratio = time A / time B (> 1: B faster)")
    print(f"{'causal':>6} {'d':>4} {'s':>6} {'A ms':>8} {'B ms':>8} {'ratio':>6}")
    ratios = []
    for causal in (int(x) for x in args.causal.split(",")):
        for d in (int(x) for x in args.dims.split(",")):
            h = 2048 // d
            for s in (int(x) for x in args.seqlens.split(",")):
                b = max(1, 16384 // s)
                if args.varlen:
                    q, k, v = (torch.randn((b * s, h, d), dtype=torch.bfloat16, device="cuda") for _ in range(3))
                    cu = torch.arange(0, b + 1, dtype=torch.int32, device="cuda") * s

                    def run(lib, o):
                        lib.fwd_varlen(q, k, v, cu, cu, s, s, out=o, causal=bool(causal))
                else:
                    q, k, v = (torch.randn((b, s, h, d), dtype=torch.bfloat16, device="cuda").transpose(1, 2)
                               for _ in range(3))

                    def run(lib, o):
                        if args.p_drop > 0.0:
                            a = lib.fwd_args(q, k, v, o, causal=bool(causal))
                            a.p_drop, a.drop_seed, a.drop_offset = args.p_drop, 7, 1
                            lib.run(a, torch.cuda.current_stream().cuda_stream)
                        else:
                            lib.fwd(q, k, v, out=o, causal=bool(causal))
                outs = [torch.empty_like(q) for _ in libs]
                ta, tb, rs = [], [], []
                for _ in range(args.rounds):
                    t = [timed(lambda lib=lib, o=o: run(lib, o), 3, args.repeat, flush) for lib, o in zip(libs, outs)]
                    ta.append(t[0])
                    tb.append(t[1])
                    rs.append(t[0] / t[1])
                same = (outs[0] - outs[1]).abs().max().item()
                r = statistics.median(rs)
                ratios.append(r)
                print(f"{causal:>6} {d:>4} {s:>6} {statistics.median(ta):8.3f} {statistics.median(tb):8.3f} {r:6.3f}"
                      f"  (max |O_A - O_B| {same:.3g})", flush=True)
    geo = 1.0
    for r in ratios:
        geo *= r
    print(f"# geometric mean of the ratios: {geo ** (1 / len(ratios)):.4f}; worst {min(ratios):.3f}")


if __name__ == "__main__":
    main()
