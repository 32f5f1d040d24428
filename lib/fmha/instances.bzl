"""libckt_fmha's instance files and the named instance sets: the one list.

Every instance file of lib/fmha, by family, with the head dims (q/k, v/o)
its two instances (fp16, bf16) take; and the named sets, each a list of
families. lib/fmha/BUILD derives from it both the files a set compiles and
the X-macros (-DCKT__FMHA_FWD_FILES(X)=..., ...) lib/fmha/instances.h hands
the dispatcher, so the two cannot drift. Choose the set with

    bazel build --define=ckt_fmha_set=inference //lib/fmha:libckt_fmha.so

(all, the default, when no --define names one; docs/fmha.md#registry).
"""

# family -> [(file token, hdim, hdim_v)]; the file is <prefix><token>.c
FMHA_FILES = {
    "fwd": [("d32", 32, 32), ("d64", 64, 64), ("d96", 96, 96), ("d128", 128, 128),
            ("d192_dv128", 192, 128), ("d192", 192, 192), ("d256", 256, 256),
            ("d512", 512, 512), ("d576_dv512", 576, 512),
            ("fp8_d64", 64, 64), ("fp8_d128", 128, 128)],  # fp8 e4m3 in, fp16 / bf16 out
    "fwd_kv": [("d32_kv", 32, 32), ("d64_kv", 64, 64), ("d96_kv", 96, 96), ("d128_kv", 128, 128),
               ("d192_dv128_kv", 192, 128), ("d192_kv", 192, 192), ("d256_kv", 256, 256)],
    "fwd_decode": [("decode_d64", 64, 64), ("decode_d128", 128, 128), ("decode_d256", 256, 256)],
    "bwd": [("d32", 32, 32), ("d64", 64, 64), ("d96", 96, 96), ("d128", 128, 128),
            ("d192_dv128", 192, 128), ("d192", 192, 192), ("d256", 256, 256), ("d512", 512, 512)],
    "appendkv": [("appendkv", 256, 256)],  # one file, generic over head dims up to 256
}

# The C enum constant of each family (ckt/fmha/registry.h: CKT_FMHA_FAMILY_<X>).
_FAMILY_ENUM = {"fwd": "FWD", "fwd_kv": "FWD_KV", "fwd_decode": "FWD_DECODE", "appendkv": "APPENDKV", "bwd": "BWD"}
_FAMILY_BIT = {"fwd": 1, "fwd_kv": 2, "fwd_decode": 4, "appendkv": 8, "bwd": 16}
_FAMILY_PREFIX = {"fwd": "fwd_", "fwd_kv": "fwd_", "fwd_decode": "fwd_", "bwd": "bwd_", "appendkv": ""}

# The named sets: the families each compiles (every head dim of each).
FMHA_SETS = {
    "all": ["fwd", "fwd_kv", "fwd_decode", "appendkv", "bwd"],
    "inference": ["fwd", "fwd_kv", "fwd_decode", "appendkv"],
    "training": ["fwd", "bwd"],
}

def fmha_set_srcs(name):
    """The instance files set `name` compiles (dispatch.c and the rest not included)."""
    return ["%s%s.c" % (_FAMILY_PREFIX[f], tok) for f in FMHA_SETS[name] for tok, _, _ in FMHA_FILES[f]]

def _x(items):
    return "".join(["X(%s)" % i for i in items])

def fmha_set_defines(name):
    """The -D's of set `name` for lib/fmha/instances.h. No spaces, no quotes: Bazel
    tokenizes `defines` like a shell would."""
    fams = FMHA_SETS[name]
    fwd = [tok for f in ["fwd", "fwd_kv", "fwd_decode"] if f in fams for tok, _, _ in FMHA_FILES[f]]
    bwd = [tok for tok, _, _ in FMHA_FILES["bwd"]] if "bwd" in fams else []

    # the catalog: every file of every family (the `all` set), for the
    # dispatcher's "this set lacks it" messages and the registry
    catalog = ["%s,%s,%d,%d" % (_FAMILY_ENUM[f], tok, h, hv) for f in FMHA_SETS["all"] for tok, h, hv in FMHA_FILES[f]]
    sets = ["%s,%d" % (s, _mask(FMHA_SETS[s])) for s in sorted(FMHA_SETS.keys())]
    return [
        "CKT__FMHA_FWD_FILES(X)=" + _x(fwd),
        "CKT__FMHA_BWD_FILES(X)=" + _x(bwd),
        "CKT__FMHA_HAS_APPENDKV=%d" % (1 if "appendkv" in fams else 0),
        "CKT__FMHA_CATALOG(X)=" + _x(catalog),
        "CKT__FMHA_SETS(X)=" + _x(sets),
        "CKT_FMHA_SET_NAME=" + name,
    ]

def _mask(fams):
    m = 0
    for f in fams:
        m += _FAMILY_BIT[f]
    return m

def fmha_set_select(fn, prefix = ":set_"):
    """select() over the sets' config_settings (lib/fmha/BUILD) of fn(set name);
    no --define (or an unknown name) is `all`."""
    d = {prefix + s: fn(s) for s in FMHA_SETS if s != "all"}
    d["//conditions:default"] = fn("all")
    return select(d)
