"""The shape grid: sweep blocks from JSON / YAML files and CLI ranges, expanded
into points (an example name and a dict of its options).

A block (docs/sweep.md#grid-format):

    {"example": "fwd" | ["fwd", "bwd"],     # which examples (aliases: EXAMPLE_ALIASES)
     "set":    {"prec": "bf16", "b": 2},     # options of every point
     "grid":   {"s": [512, 1024], "d": [64, 128], "mask": ["0", "t"]},   # cartesian product
     "points": [{"d": 64, "h": 32}, {"d": 128, "h": 16}],                # each x the grid
     "tokens": 16384}                       # b = max(1, tokens // s) where b is not given

A file holds one block, a list of blocks, or {"sweeps": [blocks]}. The points of a block
are example x points x grid, the later varying fastest; an option given at several levels
takes the innermost value (grid over points over set). Values: numbers, strings, lists
(joined with commas: a group-mode length list [100, 1, 57] is -s=100,1,57), booleans (1/0).
"""
import itertools
import json
import os
import re

EXAMPLE_ALIASES = {
    "fwd": "fwd", "fmha_fwd": "fwd",
    "bwd": "bwd", "fmha_bwd": "bwd",
    "appendkv": "appendkv", "fwd_appendkv": "appendkv", "fmha_fwd_appendkv": "appendkv",
    "prefill": "prefill", "batch_prefill": "prefill", "fmha_batch_prefill": "prefill",
}

# The order in which a point's options are printed and become CSV columns; the rest follow
# sorted by name.
OPTION_ORDER = ["prec", "mode", "b", "h", "h_k", "s", "s_k", "s_knew", "s_kcap", "s_qpad", "s_kpad", "d", "d_v",
                "rotary_dim", "rotary_interleaved", "cache_batch_idx", "mask", "lse", "deterministic", "prepare",
                "iperm", "operm", "scale_s", "scale", "logits_soft_cap", "init", "seed", "warmup", "repeat", "v"]

BLOCK_KEYS = {"example", "set", "grid", "points", "tokens"}


class GridError(Exception):
    """A grid file or CLI range that cannot be read; the message says where and why."""


class Point:
    """One run: the example's short name, its options (name -> string, in grid order) and
    the names of the options the tool derived (b from tokens)."""

    def __init__(self, example, options, derived=()):
        self.example = example
        self.options = options
        self.derived = set(derived)

    def label(self):
        """'fwd b=2 h=8 s=1024 d=128 mask=t'"""
        return " ".join([self.example] + [f"{k}={v}" for k, v in sorted_options(self.options)])


def option_rank(name):
    return (OPTION_ORDER.index(name), "") if name in OPTION_ORDER else (len(OPTION_ORDER), name)


def sorted_options(options):
    return sorted(options.items(), key=lambda kv: option_rank(kv[0]))


def option_value(name, v):
    """A grid value as the example's option string."""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (list, tuple)):
        return ",".join(option_value(name, x) for x in v)
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (int, float, str)):
        return str(v)
    raise GridError(f"option {name}: a value must be a number, a string or a list, got {v!r}")


def split_range(name, text):
    """A CLI range as a list of option strings: 'a,b,c'; with a ';' anywhere, 'x;y' (so that a
    value may hold commas: --s '100,1,57;64'); -mask windows t:l,r / b:l,r stay whole."""
    if ";" in text:
        items = text.split(";")
    elif name == "mask":
        items = re.findall(r"[tb]:-?\d+,-?\d+|[^,]+", text)
    else:
        items = text.split(",")
    items = [x.strip() for x in items if x.strip()]
    if not items:
        raise GridError(f"--{name}: no values in {text!r}")
    return items


def as_list(name, v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


def examples_of(v, where):
    out = []
    for e in as_list("example", v):
        if str(e) not in EXAMPLE_ALIASES:
            raise GridError(f"{where}: unknown example {e!r} (one of: {', '.join(sorted(EXAMPLE_ALIASES))})")
        out.append(EXAMPLE_ALIASES[str(e)])
    return out


def first_length(s):
    """The first length of an -s value ('100,1,57' -> 100)."""
    try:
        return int(str(s).split(",")[0])
    except ValueError:
        return None


def expand_block(block, where, default_example="fwd"):
    """The points of one block."""
    if not isinstance(block, dict):
        raise GridError(f"{where}: a sweep block must be an object, got {type(block).__name__}")
    unknown = set(block) - BLOCK_KEYS
    if unknown:
        raise GridError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} (a block has {', '.join(sorted(BLOCK_KEYS))}; "
                        f"options go under \"set\", \"grid\" or \"points\")")
    examples = examples_of(block.get("example", default_example), where)
    fixed = block.get("set", {}) or {}
    grid = block.get("grid", {}) or {}
    points = block.get("points", [{}]) or [{}]
    if not isinstance(fixed, dict) or not isinstance(grid, dict) or not isinstance(points, list):
        raise GridError(f"{where}: \"set\" and \"grid\" must be objects, \"points\" a list of objects")
    tokens = block.get("tokens")
    axes = [(k, as_list(k, v)) for k, v in grid.items()]
    for k, vals in axes:
        if not vals:
            raise GridError(f"{where}: grid axis {k} has no values")
    out = []
    for ex in examples:
        for p in points:
            if not isinstance(p, dict):
                raise GridError(f"{where}: each of \"points\" must be an object, got {p!r}")
            for combo in itertools.product(*[vals for _, vals in axes]):
                opts = {}
                for k, v in list(fixed.items()) + list(p.items()) + [(k, v) for (k, _), v in zip(axes, combo)]:
                    if k == "example":
                        raise GridError(f"{where}: \"example\" belongs to the block, not to its options")
                    opts[k] = option_value(k, v)
                derived = []
                if tokens and "b" not in opts:
                    s0 = first_length(opts.get("s", opts.get("s_k", "")))
                    if not s0 or s0 < 1:
                        raise GridError(f"{where}: \"tokens\" needs a positive s at every point")
                    opts["b"] = str(max(1, int(tokens) // s0))
                    derived.append("b")
                out.append(Point(ex, opts, derived))
    return out


def load_file(path):
    """The blocks of a grid file (.json; .yaml / .yml when PyYAML is importable)."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise GridError(f"{path}: {e.strerror}")
    if path.endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError:
            raise GridError(f"{path}: YAML grids need PyYAML (Debian: apt-get install python3-yaml); "
                            f"or write the grid as JSON")
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise GridError(f"{path}: {e}")
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise GridError(f"{path}:{e.lineno}:{e.colno}: {e.msg}")
    if isinstance(data, dict) and "sweeps" in data:
        data = data["sweeps"]
    blocks = data if isinstance(data, list) else [data]
    return [(b, f"{os.path.basename(path)} block {i + 1}") for i, b in enumerate(blocks)]


def build_points(grid_files, cli_axes, cli_examples=None, tokens=None):
    """The points of the grid files with the CLI ranges applied to every block (an axis
    replaces the block's value of that option), or, without files, of one block made of
    the CLI ranges. cli_axes: [(name, [values])]; cli_examples: a list or None."""
    blocks = []
    for path in grid_files:
        blocks.extend(load_file(path))
    if not blocks:
        blocks = [({}, "command line")]
    points = []
    for block, where in blocks:
        if isinstance(block, dict) and cli_axes:
            block = dict(block)
            grid = dict(block.get("grid", {}) or {})
            fixed = {k: v for k, v in (block.get("set", {}) or {}).items()}
            pts = [dict(p) for p in (block.get("points", []) or []) if isinstance(p, dict)]
            for name, vals in cli_axes:
                fixed.pop(name, None)
                for p in pts:
                    p.pop(name, None)
                grid[name] = vals
            block["grid"], block["set"] = grid, fixed
            if pts:
                block["points"] = pts
        if isinstance(block, dict) and cli_examples:
            block = dict(block, example=cli_examples)
        if isinstance(block, dict) and tokens:
            block = dict(block, tokens=tokens)
        points.extend(expand_block(block, where))
    return points
