"""Loading libckt_fmha.so and calling its C ABI (ckt/fmha/dispatch.h) through ctypes.

    lib = ckt.library()                    # loaded once: see find_library
    lib = ckt.load_library("path/to/libckt_fmha.so")   # another build, for this process's calls
    a = lib.new_args("fwd")                # a zeroed ckt_fmha_fwd_args of the library's size
    a.q = ...; lib.call("ckt_fmha_fwd", a, stream)     # CktError with the library's message

The argument structs are declared here field by field (FwdArgs, BwdArgs,
AppendKVArgs: ckt/fmha/args.h). At load every declared field's offset is
compared with the library's (ckt_fmha_*_args_offset); a mismatch refuses the
library. Fields the library has beyond the declared ones (appended by a
later build) are tolerated: new_args allocates the library's sizeof,
zeroed, so those fields keep their zero default.
"""
import ctypes
import os

# ckt_dtype (ckt/host/dtype.h) and ckt_fmha_mask (ckt/fmha/args.h)
CKT_F32, CKT_F16, CKT_BF16 = 0, 1, 2
MASK_NONE, MASK_CAUSAL_TOP_LEFT, MASK_CAUSAL_BOTTOM_RIGHT, MASK_WINDOW_TOP_LEFT, MASK_WINDOW_BOTTOM_RIGHT = range(5)

_i32, _i64, _f32, _ptr = ctypes.c_int, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p

LIB_NAME = "libckt_fmha.so"


class CktError(RuntimeError):
    """A failure of a ckt call. For library failures: function ("ckt_fmha_fwd"), status (the
    ckt_status value), status_string and detail (ckt_fmha_last_error(): it starts with the name
    of the bad argument); None for failures found in Python."""

    def __init__(self, message, function=None, status=None, status_string=None, detail=None):
        super().__init__(message)
        self.function, self.status, self.status_string, self.detail = function, status, status_string, detail


def _strides(*names):
    return [(f"{t}_stride_{x}", _i64) for t in names for x in "bhs"]


class FwdArgs(ctypes.Structure):
    """ckt_fmha_fwd_args, in the order and with the types of ckt/fmha/args.h (its leading fields)."""
    _fields_ = [
        ("q", _ptr), ("k", _ptr), ("v", _ptr),
        ("o", _ptr),
        ("lse", _ptr),
        ("dtype", _i32),  # enum
        ("batch", _i32), ("nhead_q", _i32), ("nhead_k", _i32),
        ("seqlen_q", _i32), ("seqlen_k", _i32),
        ("hdim_q", _i32), ("hdim_v", _i32),
    ] + _strides("q", "k", "v", "o") + [
        ("lse_stride_b", _i64), ("lse_stride_h", _i64),
        ("group_mode", _i32),
        ("seqstart_q", _ptr), ("seqstart_k", _ptr),
        ("seqlen_q_ptr", _ptr), ("seqlen_k_ptr", _ptr),
        ("scale", _f32),
        ("softcap", _f32),
        ("mask", _i32),  # enum
        ("window_left", _i32), ("window_right", _i32),
        # inference (docs/fmha_inference.md): a KV cache, paged or not, and split-KV
        ("cache_batch_idx", _ptr), ("cache_batch", _i32),
        ("page_size", _i32), ("num_pages", _i32),
        ("block_table", _ptr), ("max_pages_per_seq", _i32),
        ("kv_indptr", _ptr), ("kv_indices", _ptr), ("kv_last_page_len", _ptr),
        ("num_splits", _i32),
        ("workspace", _ptr), ("workspace_bytes", ctypes.c_size_t),
        ("sink", _ptr),  # attention sinks: [nhead_q] fp32 logits
        # dropout (ckt/fmha/dropout.h)
        ("p_drop", ctypes.c_float), ("drop_seed", ctypes.c_uint64), ("drop_offset", ctypes.c_uint64),
        ("drop_seed_offset", _ptr),
        ("randval", _ptr), ("randval_stride_b", _i64), ("randval_stride_h", _i64), ("randval_stride_s", _i64),
        # bias and ALiBi
        ("bias", _ptr), ("bias_stride_b", _i64), ("bias_stride_h", _i64), ("bias_stride_s", _i64),
        ("alibi_slopes", _ptr), ("alibi_stride_b", _i64),
        # fp8 (dtype fp8 e4m3: o_dtype, descales, P scale)
        ("o_dtype", _i32), ("descale_q", ctypes.c_float), ("descale_k", ctypes.c_float),
        ("descale_v", ctypes.c_float), ("scale_p", ctypes.c_float),
    ]


class BwdArgs(ctypes.Structure):
    """ckt_fmha_bwd_args, in the order and with the types of ckt/fmha/args.h (its leading fields)."""
    _fields_ = [
        ("q", _ptr), ("k", _ptr), ("v", _ptr), ("o", _ptr), ("dout", _ptr),
        ("lse", _ptr),
        ("dq", _ptr), ("dk", _ptr), ("dv", _ptr),
        ("dtype", _i32),  # enum
        ("batch", _i32), ("nhead_q", _i32), ("nhead_k", _i32),
        ("seqlen_q", _i32), ("seqlen_k", _i32),
        ("hdim_q", _i32), ("hdim_v", _i32),
    ] + _strides("q", "k", "v", "o", "do", "dq", "dk", "dv") + [
        ("lse_stride_b", _i64), ("lse_stride_h", _i64),
        ("group_mode", _i32),
        ("seqstart_q", _ptr), ("seqstart_k", _ptr),
        ("seqlen_q_ptr", _ptr), ("seqlen_k_ptr", _ptr),
        ("scale", _f32),
        ("softcap", _f32),
        ("mask", _i32),  # enum
        ("window_left", _i32), ("window_right", _i32),
        ("deterministic", _i32),
        ("workspace", _ptr),
        ("workspace_bytes", ctypes.c_size_t),
        ("sink", _ptr), ("dsink", _ptr),  # attention sinks and their gradient
        # dropout: the forward's, regenerated
        ("p_drop", ctypes.c_float), ("drop_seed", ctypes.c_uint64), ("drop_offset", ctypes.c_uint64),
        ("drop_seed_offset", _ptr),
        # bias and ALiBi, and the bias's gradient
        ("bias", _ptr), ("bias_stride_b", _i64), ("bias_stride_h", _i64), ("bias_stride_s", _i64),
        ("alibi_slopes", _ptr), ("alibi_stride_b", _i64),
        ("dbias", _ptr), ("dbias_stride_b", _i64), ("dbias_stride_h", _i64), ("dbias_stride_s", _i64),
    ]


class AppendKVArgs(ctypes.Structure):
    """ckt_fmha_appendkv_args, in the order and with the types of ckt/fmha/args.h (its leading fields)."""
    _fields_ = [
        ("q", _ptr),
        ("k_new", _ptr), ("v_new", _ptr),
        ("k_cache", _ptr), ("v_cache", _ptr),
        ("dtype", _i32),  # enum
        ("batch", _i32), ("nhead_q", _i32), ("nhead_k", _i32),
        ("seqlen_q", _i32), ("seqlen_knew", _i32), ("seqlen_k", _i32),
        ("cache_seqlen", _i32), ("cache_batch", _i32),
        ("hdim_q", _i32), ("hdim_v", _i32),
    ] + _strides("q", "knew", "vnew", "k", "v") + [
        ("group_mode", _i32),
        ("seqstart_q", _ptr), ("seqlen_k_ptr", _ptr), ("cache_batch_idx", _ptr),
        ("rotary_dim", _i32), ("rotary_interleaved", _i32),
        ("rotary_cos", _ptr), ("rotary_sin", _ptr),
        ("rotary_max_pos", _i32),
        # a paged cache: a vLLM block table, or sglang-style tables (of the cache after the append)
        ("page_size", _i32), ("num_pages", _i32),
        ("block_table", _ptr), ("max_pages_per_seq", _i32),
        ("kv_indptr", _ptr), ("kv_indices", _ptr), ("kv_last_page_len", _ptr),
    ]


# kind -> (Structure, the library's offset function, the C struct's name)
_STRUCTS = {
    "fwd": (FwdArgs, "ckt_fmha_fwd_args_offset", "ckt_fmha_fwd_args"),
    "bwd": (BwdArgs, "ckt_fmha_bwd_args_offset", "ckt_fmha_bwd_args"),
    "appendkv": (AppendKVArgs, "ckt_fmha_appendkv_args_offset", "ckt_fmha_appendkv_args"),
}
_NO_FIELD = ctypes.c_size_t(-1).value


def abi_diff(struct, offset):
    """The declared fields of struct whose offset differs from offset(name) (the library's), and
    a library struct smaller than the declared fields: a list of messages, empty when compatible."""
    bad = []
    end = 0
    for name, ty in struct._fields_:
        ours, theirs = getattr(struct, name).offset, offset(name.encode())
        end = max(end, ours + ctypes.sizeof(ty))
        if theirs == _NO_FIELD:
            bad.append(f"{name}: not in the library (an older build?)")
        elif theirs != ours:
            bad.append(f"{name}: library {theirs}, ctypes {ours}")
    size = offset(b"sizeof")
    if size == _NO_FIELD or size < end:
        bad.append(f"sizeof: library {size}, the declared fields end at {end}")
    return bad


class Library:
    """libckt_fmha.so loaded with ctypes; has_bwd / has_appendkv say which entry points it has."""

    def __init__(self, path):
        self.path = path
        try:
            self.lib = L = ctypes.CDLL(path)
        except OSError as e:
            raise CktError(f"{path}: cannot load ({e})") from None
        for fn, res, args in [
            ("ckt_fmha_fwd", _i32, [_ptr, _ptr]),
            ("ckt_fmha_fwd_select", ctypes.POINTER(ctypes.c_char_p), [_ptr]),  # first field: const char *name
            ("ckt_fmha_last_error", ctypes.c_char_p, []),
            ("ckt_fmha_status_string", ctypes.c_char_p, [_i32]),
            ("ckt_fmha_fwd_args_offset", ctypes.c_size_t, [ctypes.c_char_p]),
            ("ckt_fmha_fwd_workspace_bytes", ctypes.c_size_t, [_ptr]),
            ("ckt_fmha_fwd_num_splits", _i32, [_ptr]),
            ("ckt_fmha_bwd", _i32, [_ptr, _ptr]),
            ("ckt_fmha_bwd_workspace_bytes", ctypes.c_size_t, [_ptr]),
            ("ckt_fmha_bwd_args_offset", ctypes.c_size_t, [ctypes.c_char_p]),
            ("ckt_fmha_appendkv", _i32, [_ptr, _ptr]),
            ("ckt_fmha_appendkv_args_offset", ctypes.c_size_t, [ctypes.c_char_p]),
        ]:
            if hasattr(L, fn):
                f = getattr(L, fn)
                f.restype, f.argtypes = res, args
        for fn in ("ckt_fmha_fwd", "ckt_fmha_last_error", "ckt_fmha_status_string", "ckt_fmha_fwd_args_offset"):
            if not hasattr(L, fn):
                raise CktError(f"{path}: no {fn}: not a libckt_fmha")
        self.has_bwd = hasattr(L, "ckt_fmha_bwd") and hasattr(L, "ckt_fmha_bwd_args_offset")
        self.has_appendkv = hasattr(L, "ckt_fmha_appendkv") and hasattr(L, "ckt_fmha_appendkv_args_offset")
        self.sizeof = {}
        for kind, (struct, off, cname) in _STRUCTS.items():
            if not hasattr(L, off):
                continue
            bad = abi_diff(struct, getattr(L, off))
            if bad:
                raise CktError(f"{path}: {cname} differs from the ckt package's ({kind}): " + "; ".join(bad))
            self.sizeof[kind] = getattr(L, off)(b"sizeof")

    def __repr__(self):
        return f"ckt.Library({self.path!r})"

    def new_args(self, kind):
        """A zeroed argument struct ("fwd", "bwd", "appendkv") over a buffer of the library's size."""
        if kind not in self.sizeof:
            raise CktError(f"{self.path}: this libckt_fmha has no {_STRUCTS[kind][2]} (no {kind} entry point)")
        struct = _STRUCTS[kind][0]
        buf = ctypes.create_string_buffer(max(self.sizeof[kind], ctypes.sizeof(struct)))
        return struct.from_buffer(buf)  # keeps buf alive

    def error(self, fn, status):
        s = self.lib.ckt_fmha_status_string(status).decode()
        d = self.lib.ckt_fmha_last_error().decode()
        return CktError(f"{fn}: {s}: {d}", fn, status, s, d)

    def call(self, fn, args, stream=None):
        """fn(&args, stream) for ckt_fmha_fwd / _bwd / _appendkv; raises CktError on a failed status."""
        f = getattr(self.lib, fn, None)
        if f is None:
            raise CktError(f"{self.path}: this libckt_fmha has no {fn}")
        st = f(ctypes.addressof(args), stream)
        if st != 0:
            raise self.error(fn, st)

    def bwd_workspace_bytes(self, args):
        n = self.lib.ckt_fmha_bwd_workspace_bytes(ctypes.addressof(args))
        if n == 0:
            d = self.lib.ckt_fmha_last_error().decode()
            raise CktError(f"ckt_fmha_bwd_workspace_bytes: {d}", "ckt_fmha_bwd_workspace_bytes", None, None, d)
        return n

    def fwd_workspace_bytes(self, args):
        """The split-KV workspace ckt_fmha_fwd needs for args (0: the call runs unsplit)."""
        if not hasattr(self.lib, "ckt_fmha_fwd_workspace_bytes"):
            return 0
        return self.lib.ckt_fmha_fwd_workspace_bytes(ctypes.addressof(args))

    def fwd_num_splits(self, args):
        """The split count ckt_fmha_fwd runs args with (1: unsplit; -1: no instance fits)."""
        return self.lib.ckt_fmha_fwd_num_splits(ctypes.addressof(args))

    def instance(self, args):
        """The name of the forward instance ckt_fmha_fwd would run for args, or None."""
        p = self.lib.ckt_fmha_fwd_select(ctypes.addressof(args))
        return p[0].decode() if p else None


def find_library():
    """Where libckt_fmha.so is looked for, in order: the copy bundled in the package (the wheel's),
    $CKT_FMHA_LIB, then a source checkout's bazel-bin (GPU build first, then the CPU emulator's)."""
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))  # python/ckt/ -> the repository
    for p in [os.path.join(here, LIB_NAME),
              os.environ.get("CKT_FMHA_LIB"),
              os.path.join(root, "bazel-bin", "lib", "fmha", "gpu", LIB_NAME),
              os.path.join(root, "bazel-bin", "lib", "fmha", LIB_NAME)]:
        if p and os.path.exists(p):
            return p
    raise CktError(f"{LIB_NAME} not found: not bundled in {here}, $CKT_FMHA_LIB unset or missing "
                   f"(install the wheel: docs/python.md, or set CKT_FMHA_LIB)")


_library = None


def library():
    """The process's Library (find_library's, loaded on first use)."""
    global _library
    if _library is None:
        _library = Library(find_library())
    return _library


def load_library(path):
    """Loads libckt_fmha.so from path and makes it the process's Library (returned)."""
    global _library
    _library = Library(path)
    return _library
