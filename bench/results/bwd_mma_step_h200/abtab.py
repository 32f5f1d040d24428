#!/usr/bin/env python3
"""Tables of the A / B runs in this directory: abtab.py A.jsonl B.jsonl [C.jsonl ...]
(bench/fmha_bwd_bench.py --json files of libraries measured alternately in one
process; the fastest of each library's rounds per point). Prints, per point
(causal, d, s): each file's ms and deterministic ms, the last over the first
(> 1: the last faster), the ratios to FA-2 (its fastest time over the files)
and the deterministic cost (det ms / ms - 1), first -> last."""
import collections
import json
import os
import sys

files = sys.argv[1:]
names = [os.path.basename(f).rsplit(".", 1)[0] for f in files]
data = []
for f in files:
    d = collections.defaultdict(list)
    for line in open(f):
        j = json.loads(line)
        d[(j["causal"], j["d"], j["s"])].append((j["ckt_ms"], j["ckt_det_ms"], j.get("fa2_ms")))
    data.append(d)
A, Z = data[0], data[-1]
for k in sorted(A):
    best = [(min(x[0] for x in d[k]), min(x[1] for x in d[k])) for d in data]
    fa = min(x[2] for d in data for x in d[k] if x[2])
    cols = " | ".join(f"{n} {b[0]:.3f}/{b[1]:.3f}" for n, b in zip(names, best))
    (a, ad), (z, zd) = best[0], best[-1]
    print(f"causal {k[0]} d{k[1]} s{k[2]}: {cols} | last/first {a / z:.3f} det {ad / zd:.3f} | "
          f"FA-2 {fa:.3f} ms: x{fa / a:.2f} -> x{fa / z:.2f} | det +{100 * (ad / a - 1):.1f}% -> +{100 * (zd / z - 1):.1f}%")
