"""What a sweep writes: the per-point line, CSV and JSON of all points, the summary
table and the PNG plots (matplotlib, when importable)."""
import csv
import json
import os
import re

from grid import option_rank, sorted_options
from sdpa import BACKENDS

VALID = {True: "yes", False: "no", None: "-"}


def num(x, fmt):
    return format(x, fmt) if isinstance(x, (int, float)) else "-"


def tflops_text(x):
    """TFLOPS with three significant digits at least (the emulator's are tiny)."""
    if not isinstance(x, (int, float)):
        return "-"
    return f"{x:.1f}" if x >= 10 else f"{x:.3g}"


def point_line(row):
    """'0.42 ms 81.2 TFLOPS 512.0 GB/s ok | flash 95.1 cudnn 102 TFLOPS'"""
    if row["status"] == "error":
        first = (row["error"] or "").splitlines()[:1] or [""]
        return ("ERROR: " + re.sub(r"^error: ", "", first[0])).rstrip()
    text = f"{num(row['ms'], '.4g')} ms {tflops_text(row['tflops'])} TFLOPS"
    if row["gbs"] is not None:
        text += f" {num(row['gbs'], '.4g')} GB/s"
    text += " ok" if row["status"] == "ok" and row["valid"] is not False else " MISMATCH"
    if row["status"] == "ok" and row["valid"] is None:
        text += " (not validated)"
    sdpa = row.get("sdpa")
    if sdpa:
        parts = [f"{be} {tflops_text(sdpa[be]['tflops'])}" for be in BACKENDS if sdpa[be]["tflops"] is not None]
        if parts:
            text += " | " + " ".join(parts) + " TFLOPS"
        else:
            text += " | " + (sdpa[BACKENDS[0]]["error"] or "SDPA failed")
    return text


def option_columns(rows):
    names = {k for r in rows for k in r["options"]}
    return sorted(names, key=option_rank)


def sdpa_value(row, be, key):
    s = row.get("sdpa")
    return s[be][key] if s else None


def csv_fields(rows):
    return (["index", "example"] + option_columns(rows)
            + ["ms", "tflops", "gbs", "valid", "status"]
            + [f"sdpa_{be}_{k}" for be in BACKENDS for k in ("ms", "tflops", "gbs")]
            + ["instance", "backend", "device", "error", "cmd"])


def write_csv(path, rows):
    fields = csv_fields(rows)
    opts = set(option_columns(rows))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            out = {k: r["options"].get(k, "") for k in opts}
            out.update({"index": r["index"], "example": r["example"], "valid": VALID[r["valid"]],
                        "status": r["status"], "error": (r["error"] or "").replace("\n", " | "), "cmd": r["cmd"]})
            for k in ("ms", "tflops", "gbs", "instance", "backend", "device"):
                out[k] = "" if r[k] is None else r[k]
            for be in BACKENDS:
                for k in ("ms", "tflops", "gbs"):
                    v = sdpa_value(r, be, k)
                    out[f"sdpa_{be}_{k}"] = "" if v is None else v
            w.writerow(out)


def write_json(path, meta, rows):
    with open(path, "w") as f:
        json.dump(dict(meta, points=rows), f, indent=1)
        f.write("\n")


def varying(rows):
    """The option names whose value differs between rows (the summary's columns)."""
    names = option_columns(rows)
    return [k for k in names if len({r["options"].get(k) for r in rows}) > 1] or names[:4]


def summary(rows, sdpa_on):
    """The summary table, a line per point, then the counts."""
    cols = varying(rows)
    head = ["#", "example"] + cols + ["ms", "TFLOPS", "GB/s"]
    if sdpa_on:
        head += [f"{be} TF" for be in BACKENDS]
    head += ["valid"]
    table = []
    for r in rows:
        line = [str(r["index"]), r["example"]] + [r["options"].get(k, "") for k in cols]
        line += [num(r["ms"], ".4g"), tflops_text(r["tflops"]), num(r["gbs"], ".4g")]
        if sdpa_on:
            line += [tflops_text(sdpa_value(r, be, "tflops")) for be in BACKENDS]
        line += [VALID[r["valid"]] if r["status"] != "error" else "error"]
        table.append(line)
    widths = [max(len(x) for x in col) for col in zip(head, *table)]
    lines = ["  ".join(x.rjust(w) for x, w in zip(row, widths)) for row in [head] + table]
    ok = sum(1 for r in rows if r["status"] == "ok")
    bad = sum(1 for r in rows if r["status"] == "mismatch")
    err = sum(1 for r in rows if r["status"] == "error")
    lines.append(f"{len(rows)} points: {ok} ok, {bad} mismatch, {err} error")
    return "\n".join(lines)


def markdown(rows, meta):
    """A Markdown table of the points (docs' performance tables are this, not typed): the varying
    options, ckt's TFLOPS and GB/s, SDPA's TFLOPS and ckt's time ratio against each backend."""
    cols = varying(rows)
    sdpa_on = any(r.get("sdpa") for r in rows)
    head = ["example"] + cols + ["ckt ms", "ckt TFLOPS", "GB/s"]
    if sdpa_on:
        head += [f"{be} TFLOPS" for be in BACKENDS] + [f"ckt / {be}" for be in BACKENDS]
    head += ["valid"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        line = [r["example"]] + [str(r["options"].get(k, "")) for k in cols]
        line += [num(r["ms"], ".4g"), tflops_text(r["tflops"]), num(r["gbs"], ".4g")]
        if sdpa_on:
            line += [tflops_text(sdpa_value(r, be, "tflops")) for be in BACKENDS]
            for be in BACKENDS:  # time ratio: SDPA's time over ckt's (> 1: ckt faster)
                ms = sdpa_value(r, be, "ms")
                line.append(f"{ms / r['ms']:.2f}x" if ms and r["ms"] else "-")
        line.append(VALID[r["valid"]] if r["status"] != "error" else "error")
        lines.append("| " + " | ".join(line) + " |")
    lines += [""] + group_summary(rows, sdpa_on)
    device = next((r["device"] for r in rows if r.get("device")), "?")
    lines.append("")
    lines.append(f"{len(rows)} points on {device}; `python3 tools/sweep {' '.join(meta.get('argv') or [])}`"
                 f" ({meta.get('started', '')})")
    return "\n".join(lines) + "\n"


def group_summary(rows, sdpa_on):
    """Markdown lines: per line of the plots (example and the options but the lengths), the range
    over its points of ckt's TFLOPS and of its time ratio against each SDPA backend."""
    def span(xs, fmt):
        xs = [x for x in xs if x is not None]
        if not xs:
            return "-"
        lo, hi = min(xs), max(xs)
        return format(lo, fmt) if format(lo, fmt) == format(hi, fmt) else f"{format(lo, fmt)}-{format(hi, fmt)}"
    groups = plot_groups(rows)
    if not groups:
        return []
    head = ["example", "options", "s", "ckt TFLOPS"] + ([f"ckt / {be}" for be in BACKENDS] if sdpa_on else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (example, key), grp in groups.items():
        xs = sorted(x_of(r) for r in grp)
        line = [example, " ".join(f"{k}={v}" for k, v in key), f"{xs[0]}-{xs[-1]}" if len(xs) > 1 else str(xs[0]),
                span([r["tflops"] for r in grp], ".0f")]
        if sdpa_on:
            for be in BACKENDS:
                ratios = [sdpa_value(r, be, "ms") / r["ms"] if sdpa_value(r, be, "ms") and r["ms"] else None
                          for r in grp]
                line.append(span(ratios, ".2f") + ("x" if any(x is not None for x in ratios) else ""))
        lines.append("| " + " | ".join(line) + " |")
    return lines


def x_of(row):
    """The plot's x: the point's seqlen_q (group mode: the longest)."""
    r = row["result"] or {}
    return r.get("s") if row["example"] != "appendkv" else r.get("s_k_max")


def plot_groups(rows):
    """{(example, key options): [rows]}: a figure per example and per value of every option
    but the sequence lengths (and b where the tool derived it from tokens)."""
    groups = {}
    for r in rows:
        if r["status"] == "error" or x_of(r) is None:
            continue
        key = tuple((k, v) for k, v in sorted_options(r["options"])
                    if k not in ("s", "s_k", "s_kcap") and k not in r["derived"])
        groups.setdefault((r["example"], key), []).append(r)
    return groups


def plot(rows, out_dir, prefix, metrics):
    """The PNG files written, or (None, why not)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None, "matplotlib is not importable (Debian: apt-get install python3-matplotlib): no plots"
    files = []
    for (example, key), grp in sorted(plot_groups(rows).items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        grp = sorted(grp, key=x_of)
        for metric in metrics:
            fig, ax = plt.subplots(figsize=(7, 4.5))
            xs = [x_of(r) for r in grp]
            series = [("ckt", [r[metric] for r in grp])]
            series += [(f"sdpa_{be}", [sdpa_value(r, be, metric) for r in grp]) for be in BACKENDS]
            drawn = 0
            for name, ys in series:
                pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
                    drawn += 1
            if not drawn:
                plt.close(fig)
                continue
            if len(set(xs)) > 1 and max(xs) / max(1, min(xs)) >= 8:
                ax.set_xscale("log", base=2)
            ax.set_xticks(sorted(set(xs)))
            ax.set_xticklabels([str(x) for x in sorted(set(xs))])
            ax.minorticks_off()
            ax.set_xlabel("seqlen (s)")
            ax.set_ylabel({"tflops": "TFLOPS", "gbs": "GB/s"}[metric])
            title = " ".join([example] + [f"{k}={v}" for k, v in key])
            ax.set_title(title, fontsize=9)
            ax.grid(True, alpha=0.3)
            ax.legend()
            slug = re.sub(r"[^A-Za-z0-9_.=-]+", "_", "_".join(f"{k}{v}" for k, v in key))[:120]
            path = os.path.join(out_dir, f"{prefix}_{example}_{metric}_{slug or 'all'}.png")
            fig.tight_layout()
            fig.savefig(path, dpi=100)
            plt.close(fig)
            files.append(path)
    return files, None
