"""tools/sweep — run a shape grid over the FMHA examples (fmha_fwd, fmha_bwd,
fmha_fwd_appendkv), validate every point, write CSV / JSON and plots.

    bazel build //examples/...                          # the CPU emulator's binaries, or
    bazel build --config=nvidia //examples/...          # the _gpu ones (then on the GPU machine)
    python3 tools/sweep --example fwd,bwd --s 128,256 --d 64,128 --b 1 --h 8 --mask 0,t
    python3 tools/sweep --grid my_grid.json --out sweep_out
    python3 tools/sweep --help

Any --NAME VALUES (or -NAME=VALUES) that is not one of the tool's options is a grid axis of
the example option -NAME: VALUES is a comma list (with a ';' in it, a ';' list, so that a
value may hold commas; -mask windows t:l,r stay whole). Grid files: docs/sweep.md.
Every point runs as `<binary> -json=1 -v=1 -NAME=VALUE ...` (-v=0 with --no-validate).
Outputs under --out: <name>.csv, <name>.json, <name>_<example>_<metric>_<options>.png.
With torch + CUDA importable, PyTorch SDPA (FlashAttention-2, cuDNN) runs the same fwd/bwd
shapes (bench/fmha_bench.py's timing). Exit status: 0 every point valid, 1 a point failed
(mismatch or error), 2 a usage error (grid, binaries).
"""
import argparse
import datetime
import os
import platform
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import grid  # noqa: E402
import report  # noqa: E402
import runner  # noqa: E402
import sdpa  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))


def parser():
    ap = argparse.ArgumentParser(prog="python3 tools/sweep", add_help=False, allow_abbrev=False,
                                 description="Run a shape grid over the FMHA examples (fmha_fwd, fmha_bwd, "
                                             "fmha_fwd_appendkv), validate every point, write CSV, JSON "
                                             "and plots (docs/sweep.md).",
                                 epilog="Grid axes: any other --NAME VALUES, e.g. --b 1 --h 8 --s 128,1024 "
                                        "--d 64,128 --mask 0,t --prec fp16,bf16 (the examples' options).")
    ap.add_argument("--help", action="help", help="this message (-h is the examples' heads option)")
    ap.add_argument("--example", default=None,
                    help="fwd, bwd, appendkv, or a comma list (default: the grid's, else fwd)")
    ap.add_argument("--grid", action="append", default=[], metavar="FILE",
                    help="a grid file, .json (or .yaml / .yml with PyYAML); repeatable; CLI axes override")
    ap.add_argument("--tokens", type=int, default=None, help="b = max(1, TOKENS // s) where b is not given")
    ap.add_argument("--out", default="sweep_out", help="output folder (default: sweep_out)")
    ap.add_argument("--name", default="sweep", help="output file prefix (default: sweep)")
    ap.add_argument("--bin-dir", action="append", default=[], metavar="DIR",
                    help="where the example binaries are (DIR/NAME or DIR/NAME/NAME; default: bazel-bin/examples, "
                         ".gpu_bin)")
    ap.add_argument("--target", choices=["auto", "cpu", "gpu"], default="auto",
                    help="binaries: gpu (NAME_gpu), cpu (the emulator's), auto (gpu when /dev/nvidiactl exists)")
    ap.add_argument("--no-validate", action="store_true", help="-v=0: no CPU reference (big shapes); valid is '-'")
    ap.add_argument("--sdpa", choices=["auto", "on", "off"], default="auto",
                    help="PyTorch SDPA beside ckt: auto (when torch + CUDA import), on (fail without), off")
    ap.add_argument("--bench-dir", action="append", default=[], metavar="DIR",
                    help="where bench/fmha_bench.py is (default: bench/, then the --bin-dir folders)")
    ap.add_argument("--plot", choices=["auto", "off"], default="auto", help="PNG plots when matplotlib imports")
    ap.add_argument("--metric", default="tflops", help="plots: tflops, gbs or tflops,gbs (default: tflops)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per point (default: 3600)")
    ap.add_argument("--fail-fast", action="store_true", help="stop at the first failed point")
    ap.add_argument("--replot", metavar="JSON",
                    help="run nothing: the summary, Markdown table and plots of a sweep's JSON (drawn here from a "
                         "GPU machine's run)")
    ap.add_argument("--dry-run", action="store_true", help="print the points' command lines, run nothing")
    return ap


def split_argv(argv, ap):
    """(the tool's arguments, [(option, [values])] grid axes) from the command line."""
    tool_opts = {s for a in ap._actions for s in a.option_strings}
    takes_value = {s for a in ap._actions for s in a.option_strings if a.nargs != 0}
    mine, axes, i = [], [], 0
    while i < len(argv):
        tok = argv[i]
        name = tok.split("=", 1)[0]
        if name in tool_opts:
            mine.append(tok)
            if "=" not in tok and name in takes_value and i + 1 < len(argv):
                mine.append(argv[i + 1])
                i += 1
        elif tok.startswith("-") and len(tok) > 1 and not tok.lstrip("-")[:1].isdigit():
            opt = name.lstrip("-")
            if "=" in tok:
                value = tok.split("=", 1)[1]
            elif i + 1 < len(argv):
                value = argv[i + 1]
                i += 1
            else:
                raise grid.GridError(f"{tok}: a grid axis needs values (--{opt} V1,V2,...)")
            if opt in ("json", "example"):
                raise grid.GridError(f"{tok}: the tool sets -json=1 itself; the examples are --example")
            axes = [(k, v) for k, v in axes if k != opt] + [(opt, grid.split_range(opt, value))]
        else:
            raise grid.GridError(f"unexpected argument {tok!r} (grid axes are --NAME VALUES)")
        i += 1
    return mine, axes


def replot(args, metrics):
    """--replot JSON: the outputs of a finished sweep, from its JSON."""
    import json
    try:
        with open(args.replot) as f:
            data = json.load(f)
        rows = data["points"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"sweep: --replot {args.replot}: not a sweep's JSON ({e})", file=sys.stderr)
        return 2
    meta = {k: v for k, v in data.items() if k != "points"}
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, args.name)
    with open(base + ".md", "w") as f:
        f.write(report.markdown(rows, meta))
    print(report.summary(rows, any(r.get("sdpa") for r in rows)))
    print(f"wrote {base}.md")
    if args.plot == "auto":
        files, why_not = report.plot(rows, args.out, args.name, metrics)
        print(f"plots: {why_not}" if files is None else f"plots: {len(files)} in {args.out}/")
    return 0


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `python3 tools/sweep --dry-run | head`
    ap = parser()
    try:
        mine, axes = split_argv(argv, ap)
        args = ap.parse_args(mine)
        examples = grid.examples_of(args.example.split(","), "--example") if args.example else None
        points = grid.build_points(args.grid, axes, examples, args.tokens)
    except grid.GridError as e:
        print(f"sweep: {e}", file=sys.stderr)
        return 2
    metrics = [m.strip() for m in args.metric.split(",") if m.strip()]
    if args.replot:
        return replot(args, metrics)
    if not points or any(m not in ("tflops", "gbs") for m in metrics):
        print("sweep: no points" if not points else f"sweep: --metric is tflops, gbs or both, got {args.metric}",
              file=sys.stderr)
        return 2

    bin_dirs = args.bin_dir or [os.path.join(REPO, "bazel-bin", "examples"), os.path.join(REPO, ".gpu_bin")]
    binaries = {}
    for ex in sorted({p.example for p in points}):
        path, kind = runner.find_binary(ex, bin_dirs, args.target)
        if not path:
            print(f"sweep: no {runner.BINARIES[ex]} binary for --target={args.target} (tried {', '.join(kind)}); "
                  f"build it: bazel build //examples/{runner.BINARIES[ex]} (emulator) or --config=nvidia (_gpu)",
                  file=sys.stderr)
            return 2
        binaries[ex] = path

    if args.dry_run:
        for i, p in enumerate(points, 1):
            print(f"[{i}/{len(points)}] {p.label()}: {' '.join(runner.command(binaries[p.example], p, not args.no_validate))}")
        return 0

    bench = args.bench_dir or [os.path.join(REPO, "bench")] + bin_dirs
    torch_sdpa, why = (None, "--sdpa=off") if args.sdpa == "off" else sdpa.load(bench)
    if args.sdpa == "on" and not torch_sdpa:
        print(f"sweep: --sdpa=on but {why}", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    meta = {"tool": "tools/sweep", "argv": argv, "started": datetime.datetime.now().isoformat(timespec="seconds"),
            "host": platform.node(), "target": args.target, "binaries": binaries,
            "validate": not args.no_validate, "sdpa": torch_sdpa.device if torch_sdpa else None,
            "sdpa_skipped": None if torch_sdpa else why}
    print(f"# {len(points)} points; binaries: {', '.join(binaries.values())}")
    print(f"# SDPA: {('on, ' + torch_sdpa.device) if torch_sdpa else 'off (' + why + ')'}")

    rows = []
    for i, p in enumerate(points, 1):
        print(f"[{i}/{len(points)}] {p.label()} ... ", end="", flush=True)
        row = runner.run_point(i, p, binaries[p.example], not args.no_validate, args.timeout)
        row["sdpa"] = None
        if torch_sdpa and row["result"] is not None:
            warmup = int(p.options.get("warmup", 5))
            repeat = int(p.options.get("repeat", 20))
            row["sdpa"] = torch_sdpa.run(p.example, row["result"], row["flops"], row["bytes"], warmup, repeat)
        rows.append(row)
        print(report.point_line(row), flush=True)
        if row["error"]:  # the example's message (an error's first line is on the point's line)
            for line in row["error"].splitlines()[0 if row["status"] == "mismatch" else 1:]:
                print(f"    {line}")
        if args.fail_fast and row["status"] != "ok":
            print("sweep: --fail-fast: stopping")
            break

    base = os.path.join(args.out, args.name)
    report.write_csv(base + ".csv", rows)
    report.write_json(base + ".json", meta, rows)
    with open(base + ".md", "w") as f:
        f.write(report.markdown(rows, meta))
    print()
    print(report.summary(rows, torch_sdpa is not None))
    print(f"wrote {base}.csv, {base}.json, {base}.md")
    if args.plot == "auto":
        files, why_not = report.plot(rows, args.out, args.name, metrics)
        print(f"plots: {why_not}" if files is None else f"plots: {len(files)} in {args.out}/")
    failed = [r for r in rows if r["status"] != "ok"]
    if failed:
        print(f"sweep: {len(failed)} of {len(rows)} points failed: "
              + ", ".join(f"#{r['index']} ({r['status']})" for r in failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
