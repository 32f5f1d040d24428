#!/usr/bin/env python3
"""compare.py PREFIX BASE VARIANT... — the A / B tables of this directory.

Reads PREFIX + "r<round>_" + NAME + ".jsonl" (bench/fmha_bwd_bench.py --json
lines; e.g. PREFIX "final_" for the mma.sync runs, "final_wg" for the wgmma
kernel's), takes the fastest round per point and prints, per point, the base's
time, its ratio to FlashAttention-2 and deterministic cost, then for each
variant: speed-up over the base (non-deterministic, deterministic), ratio to
FA-2 and deterministic cost; last, each variant's geometric-mean speed-up.
A '!' marks a point where two deterministic runs were not bitwise equal."""
import glob
import json
import math
import sys


def load(prefix, name):
    pts = {}
    for f in sorted(glob.glob(f"{prefix}r[0-9]_{name}.jsonl")):
        for line in open(f):
            j = json.loads(line)
            pts.setdefault((j["causal"], j["d"], j["s"]), []).append(j)
    return pts


def best(runs, key):
    vals = [r[key] for r in runs if r.get(key)]
    return min(vals) if vals else float("nan")


def stats(runs):
    t, td, fa = best(runs, "ckt_ms"), best(runs, "ckt_det_ms"), best(runs, "fa2_ms")
    ok = all(r.get("det_bitwise") in (True, None) for r in runs)
    return t, td, fa, ok


def main():
    prefix, base, variants = sys.argv[1], sys.argv[2], sys.argv[3:]
    b = load(prefix, base)
    vs = {v: load(prefix, v) for v in variants}
    logs = {v: [] for v in variants}
    print("causal d s | base ms, x FA-2, det cost | variant: speed-up (det speed-up), x FA-2, det cost")
    for k in sorted(b):
        t, td, fa, ok = stats(b[k])
        row = f"{k[0]} {k[1]:3d} {k[2]:5d} | {base} {t:7.3f} ms x{fa / t:.2f} {100 * (td / t - 1):+5.1f}%{'' if ok else '!'}"
        for v in variants:
            if k not in vs[v]:
                continue
            vt, vtd, vfa, vok = stats(vs[v][k])
            logs[v].append(math.log(t / vt))
            row += f" | {v} {t / vt:.3f} ({td / vtd:.3f}) x{vfa / vt:.2f} {100 * (vtd / vt - 1):+5.1f}%{'' if vok else '!'}"
        print(row)
    for v in variants:
        if logs[v]:
            print(f"{v}: geometric-mean speed-up {math.exp(sum(logs[v]) / len(logs[v])):.4f} over {len(logs[v])} points")


if __name__ == "__main__":
    main()
