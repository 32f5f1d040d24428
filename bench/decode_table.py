#!/usr/bin/env python3
"""Markdown table of bench/fmha_decode_bench.py's JSON lines (decode points,
automatic split count): per (heads, batch, context) the K/V bandwidth as a
share of the copy bandwidth for the contiguous cache and each page size, the
split count, and the contiguous point's speed against SDPA (flash, cuDNN;
> 1 = ckt faster).

    python3 bench/decode_table.py bench/results/decode_h200.jsonl
"""
import json
import sys


def main(path):
    rows = {}
    pages = set()
    for line in open(path):
        p = json.loads(line)
        if p.get("kind") != "decode" or p.get("mode") != "auto":
            continue
        key = (p["heads"], p["batch"], p["ctx"])
        rows.setdefault(key, {})[p["page"]] = p
        pages.add(p["page"])
    pages = sorted(pages)
    names = ["contiguous" if g == 0 else f"page {g}" for g in pages]
    print("| heads q/kv | batch | context | splits | " + " | ".join(f"{n} % copy" for n in names) +
          " | vs SDPA flash | vs SDPA cuDNN |")
    print("|" + " --- |" * (6 + len(pages)))
    for key in sorted(rows, key=lambda k: (k[0], k[1], k[2])):
        r = rows[key]
        c = r.get(0)
        cells = [f"{100 * r[g]['gbs'] / r[g]['copy_gbs']:.0f}%" if g in r else "-" for g in pages]
        fl = f"{c['sdpa_flash_ms'] / c['ms']:.2f}x" if c and c.get("sdpa_flash_ms") else "-"
        cu = f"{c['sdpa_cudnn_ms'] / c['ms']:.2f}x" if c and c.get("sdpa_cudnn_ms") else "-"
        splits = c["splits"] if c else next(iter(r.values()))["splits"]
        print(f"| {key[0]} | {key[1]} | {key[2] // 1024}k | {splits} | " + " | ".join(cells) + f" | {fl} | {cu} |")


if __name__ == "__main__":
    main(sys.argv[1])
