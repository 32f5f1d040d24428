#!/usr/bin/env python3
"""A / B of decode runs (bench/fmha_decode_bench.py --json files):

    python3 compare.py 'swizzle/dec_cpf_*.jsonl' 'swizzle/dec_swz_*.jsonl'

per point (heads, batch, context, page): the fastest time of each side over
its files, the speed-up (A / B), B's time against SDPA cuDNN's and B's share
of the copy bandwidth; then the geometric mean of the speed-ups per page size.
"""
import collections
import glob
import json
import math
import sys


def load(pattern):
    best = {}
    for path in sorted(glob.glob(pattern)):
        for line in open(path):
            j = json.loads(line)
            k = (j["heads"], j["batch"], j["ctx"], j["page"])
            b = best.setdefault(k, dict(ms=j["ms"], cudnn=j["sdpa_cudnn_ms"], gbs=j["gbs"], copy=j["copy_gbs"]))
            b["ms"] = min(b["ms"], j["ms"])
            b["gbs"] = max(b["gbs"], j["gbs"])
            if j["sdpa_cudnn_ms"]:
                b["cudnn"] = min(b["cudnn"] or 1e9, j["sdpa_cudnn_ms"])
    return best


def main():
    a, b = load(sys.argv[1]), load(sys.argv[2])
    per_page = collections.defaultdict(list)
    print("heads   b      ctx  page     A us     B us  A/B   B x cuDNN  B %copy")
    for k in sorted(set(a) & set(b), key=lambda k: (k[3], k[0], k[1], k[2])):
        x, y = a[k], b[k]
        r = x["ms"] / y["ms"]
        per_page[k[3]].append(r)
        cud = f"{y['cudnn'] / y['ms']:9.3f}" if y["cudnn"] else f"{'-':>9}"
        print(f"{k[0]:>5} {k[1]:3d} {k[2]:8d} {k[3]:5d} {1000 * x['ms']:8.1f} {1000 * y['ms']:8.1f} {r:5.3f} {cud} {100 * y['gbs'] / y['copy']:7.1f}%")
    for p, rs in sorted(per_page.items()):
        g = math.exp(sum(map(math.log, rs)) / len(rs))
        print(f"page {p}: geometric mean A/B {g:.3f} (min {min(rs):.3f}, max {max(rs):.3f}, {len(rs)} points)")


if __name__ == "__main__":
    main()
