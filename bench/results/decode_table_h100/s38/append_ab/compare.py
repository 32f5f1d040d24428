#!/usr/bin/env python3
"""Append A / B (examples/fmha_fwd_appendkv -json=1 lines, files ab_VARIANT_ROUND.jsonl):

    python3 compare.py [DIR] [base,grid,fin,glob]

per case, the fastest append time of each variant over its rounds (us, and
GB/s), and the last variant's speed-up over the first; valid: every run of
the case validated (the -v=0 case reads False)."""
import collections
import glob
import json
import os
import sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
variants = (sys.argv[2] if len(sys.argv) > 2 else "base,grid,fin,glob").split(",")
res = collections.defaultdict(lambda: collections.defaultdict(list))
order = []
for v in variants:
    for f in sorted(glob.glob(os.path.join(d, f"ab_{v}_*.jsonl"))):
        for line in open(f):
            j = json.loads(line)
            k = (j["b"], j["h"], j["h_k"], j["s"], j["s_knew"], j["d"], j["rotary_dim"], j["rotary_interleaved"],
                 j["page_block_size"])
            if k not in order:
                order.append(k)
            res[k][v].append((j["append_ms"], j["append_gbs"], j["valid"]))
print("b h h_k s s_knew d rotary inter page | " + " | ".join(f"{v} us (GB/s)" for v in variants) +
      f" | {variants[0]} / {variants[-1]} | valid")
for k in order:
    r = res[k]
    cells = []
    for v in variants:
        if r[v]:
            cells.append(f"{min(x[0] for x in r[v]) * 1e3:6.1f} ({max(x[1] for x in r[v]):5.0f})")
        else:
            cells.append("-")
    sp = min(x[0] for x in r[variants[0]]) / min(x[0] for x in r[variants[-1]]) if r[variants[0]] and r[variants[-1]] else 0
    ok = all(x[2] for v in r for x in r[v])
    print(" ".join(str(x) for x in k).ljust(34) + " | " + " | ".join(cells) + f" | {sp:.2f}x | {ok}")
