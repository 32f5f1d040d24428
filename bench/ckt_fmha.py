"""ctypes binding of libckt_fmha (ckt/fmha/dispatch.h): the FMHA forward on
PyTorch tensors, through the library's C ABI.

    import ckt_fmha
    lib = ckt_fmha.Lib("bazel-bin/lib/fmha/gpu/libckt_fmha.so")   # or $CKT_FMHA_LIB
    o = lib.fwd(q, k, v, causal=True)               # q [b, h, sq, d], k/v [b, h_k, sk, d|d_v]
    o, lse = lib.fwd(q, k, v, return_lse=True)      # lse [b, h, sq] fp32, natural log
    o = lib.fwd_varlen(q, k, v, cu_q, cu_k, max_q, max_k)   # q [total_q, h, d] (FlashAttention's varlen)

Tensors may have any strides with a unit stride on the head dim (SDPA's
[b, h, s, d] view of a [b, s, h, d] tensor, for instance); the library checks
16-byte alignment and strides that are multiples of 8 elements. The output is
allocated in the layout of q unless `out` is given. Failures raise
CktError with the library's message naming the bad argument.

FwdArgs mirrors ckt_fmha_fwd_args field by field; Lib() compares every field
offset and the struct size with the library's (ckt_fmha_fwd_args_offset) and
refuses to run on a mismatch.
"""
import ctypes
import os

# ckt_dtype (ckt/host/dtype.h) and ckt_fmha_mask (ckt/fmha/args.h)
CKT_F32, CKT_F16, CKT_BF16 = 0, 1, 2
MASK_NONE, MASK_CAUSAL_TOP_LEFT, MASK_CAUSAL_BOTTOM_RIGHT, MASK_WINDOW_TOP_LEFT, MASK_WINDOW_BOTTOM_RIGHT = range(5)

_i32, _i64, _f32, _ptr = ctypes.c_int, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p


class FwdArgs(ctypes.Structure):
    """ckt_fmha_fwd_args, in the order and with the types of ckt/fmha/args.h."""
    _fields_ = [
        ("q", _ptr), ("k", _ptr), ("v", _ptr),
        ("o", _ptr),
        ("lse", _ptr),
        ("dtype", _i32),  # enum
        ("batch", _i32), ("nhead_q", _i32), ("nhead_k", _i32),
        ("seqlen_q", _i32), ("seqlen_k", _i32),
        ("hdim_q", _i32), ("hdim_v", _i32),
        ("q_stride_b", _i64), ("q_stride_h", _i64), ("q_stride_s", _i64),
        ("k_stride_b", _i64), ("k_stride_h", _i64), ("k_stride_s", _i64),
        ("v_stride_b", _i64), ("v_stride_h", _i64), ("v_stride_s", _i64),
        ("o_stride_b", _i64), ("o_stride_h", _i64), ("o_stride_s", _i64),
        ("lse_stride_b", _i64), ("lse_stride_h", _i64),
        ("group_mode", _i32),
        ("seqstart_q", _ptr), ("seqstart_k", _ptr),
        ("seqlen_q_ptr", _ptr), ("seqlen_k_ptr", _ptr),
        ("scale", _f32),
        ("softcap", _f32),
        ("mask", _i32),  # enum
        ("window_left", _i32), ("window_right", _i32),
    ]


class CktError(RuntimeError):
    pass


def _default_path():
    here = os.path.dirname(os.path.abspath(__file__))
    for p in [os.environ.get("CKT_FMHA_LIB"),
              os.path.join(here, "..", ".gpu_bin", "libckt_fmha.so"),  # copied there for the GPU machine
              os.path.join(here, "..", "bazel-bin", "lib", "fmha", "gpu", "libckt_fmha.so"),
              os.path.join(here, "libckt_fmha.so"),
              "libckt_fmha.so"]:
        if p and (os.path.exists(p) or p == "libckt_fmha.so"):
            return p
    return "libckt_fmha.so"


class Lib:
    def __init__(self, path=None):
        self.path = path or _default_path()
        self.lib = ctypes.CDLL(self.path)
        L = self.lib
        L.ckt_fmha_fwd.argtypes = [ctypes.POINTER(FwdArgs), _ptr]
        L.ckt_fmha_fwd.restype = _i32
        L.ckt_fmha_last_error.argtypes = []
        L.ckt_fmha_last_error.restype = ctypes.c_char_p
        L.ckt_fmha_status_string.argtypes = [_i32]
        L.ckt_fmha_status_string.restype = ctypes.c_char_p
        L.ckt_fmha_fwd_args_offset.argtypes = [ctypes.c_char_p]
        L.ckt_fmha_fwd_args_offset.restype = ctypes.c_size_t
        L.ckt_fmha_fwd_select.argtypes = [ctypes.POINTER(FwdArgs)]
        L.ckt_fmha_fwd_select.restype = ctypes.POINTER(ctypes.c_char_p)  # first field: const char *name
        self.check_abi()

    def check_abi(self):
        """Every field offset and the size of FwdArgs equal the library's."""
        off = self.lib.ckt_fmha_fwd_args_offset
        bad = []
        for name, _ in FwdArgs._fields_:
            theirs, ours = off(name.encode()), getattr(FwdArgs, name).offset
            if theirs != ours:
                bad.append(f"{name}: library {theirs}, ctypes {ours}")
        if off(b"sizeof") != ctypes.sizeof(FwdArgs):
            bad.append(f"sizeof: library {off(b'sizeof')}, ctypes {ctypes.sizeof(FwdArgs)}")
        if bad:
            raise CktError(f"{self.path}: ckt_fmha_fwd_args layout differs from bench/ckt_fmha.py: " + "; ".join(bad))

    def run(self, args, stream=None):
        """ckt_fmha_fwd(&args, stream) on a filled FwdArgs; raises CktError on failure."""
        st = self.lib.ckt_fmha_fwd(ctypes.byref(args), stream)
        if st != 0:
            raise CktError(f"ckt_fmha_fwd: {self.lib.ckt_fmha_status_string(st).decode()}: "
                           f"{self.lib.ckt_fmha_last_error().decode()}")

    def instance(self, args):
        """The name of the instance ckt_fmha_fwd would run for args, or None."""
        p = self.lib.ckt_fmha_fwd_select(ctypes.byref(args))
        return p[0].decode() if p else None

    # >>PyTorch

    @staticmethod
    def _dtype(t):
        import torch
        if t.dtype == torch.float16:
            return CKT_F16
        if t.dtype == torch.bfloat16:
            return CKT_BF16
        raise CktError(f"dtype {t.dtype}: ckt_fmha takes float16 or bfloat16")

    @staticmethod
    def _mask(causal, window, bottom_right):
        """SDPA / FlashAttention arguments -> (mask, left, right)."""
        left, right = window if window is not None else (-1, -1)
        if window is not None and (left >= 0 or right >= 0):
            if causal:
                right = 0
            return (MASK_WINDOW_BOTTOM_RIGHT if bottom_right else MASK_WINDOW_TOP_LEFT), left, right
        if causal:
            return (MASK_CAUSAL_BOTTOM_RIGHT if bottom_right else MASK_CAUSAL_TOP_LEFT), 0, 0
        return MASK_NONE, 0, 0

    def fwd_args(self, q, k, v, out, lse=None, causal=False, window=None, bottom_right=False, scale=0.0,
                 softcap=0.0):
        """FwdArgs for q [b, h, sq, d], k [b, h_k, sk, d], v [b, h_k, sk, d_v], out [b, h, sq, d_v],
        lse [b, h, sq] fp32 or None (batch mode)."""
        a = FwdArgs()
        a.dtype = self._dtype(q)
        a.q, a.k, a.v, a.o = q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr()
        a.batch, a.nhead_q, a.seqlen_q, a.hdim_q = q.shape
        a.nhead_k, a.seqlen_k, a.hdim_v = k.shape[1], k.shape[2], v.shape[3]
        for t, name in ((q, "q"), (k, "k"), (v, "v"), (out, "o")):
            if t.stride(3) != 1:
                raise CktError(f"{name}: the head dim must have stride 1 (strides {tuple(t.stride())})")
            setattr(a, name + "_stride_b", t.stride(0))
            setattr(a, name + "_stride_h", t.stride(1))
            setattr(a, name + "_stride_s", t.stride(2))
        if lse is not None:
            a.lse = lse.data_ptr()
            a.lse_stride_b, a.lse_stride_h = lse.stride(0), lse.stride(1)
        a.mask, a.window_left, a.window_right = self._mask(causal, window, bottom_right)
        a.scale, a.softcap = float(scale or 0.0), float(softcap or 0.0)
        return a

    def fwd(self, q, k, v, out=None, causal=False, window=None, bottom_right=False, scale=None, softcap=0.0,
            return_lse=False, stream=None):
        """softmax(q k^T * scale) v, SDPA's shapes: q [b, h, sq, d], k [b, h_k, sk, d],
        v [b, h_k, sk, d_v]. causal / window (left, right; -1 unlimited) align top-left
        unless bottom_right. Returns out (and lse [b, h, sq] fp32 with return_lse)."""
        import torch
        b, h, sq, _ = q.shape
        dv = v.shape[3]
        if out is None:
            if q.stride(1) < q.stride(2):  # q is a [b, s, h, d] tensor seen as [b, h, s, d]
                out = q.new_empty((b, sq, h, dv)).transpose(1, 2)
            else:
                out = q.new_empty((b, h, sq, dv))
        lse = torch.empty((b, h, sq), device=q.device, dtype=torch.float32) if return_lse else None
        a = self.fwd_args(q, k, v, out, lse, causal, window, bottom_right, scale, softcap)
        self.run(a, stream if stream is not None else torch.cuda.current_stream(q.device).cuda_stream)
        return (out, lse) if return_lse else out

    def fwd_varlen(self, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, out=None, causal=False,
                   window=None, bottom_right=True, scale=None, softcap=0.0, return_lse=False, stream=None):
        """Group mode, FlashAttention's varlen convention: q [total_q, h, d], k/v [total_k, h_k, d],
        cu_seqlens_* int32 [batch + 1] on the device; causal aligned bottom-right like FlashAttention.
        lse: [h, total_q]."""
        import torch
        tq, h, _ = q.shape
        if out is None:
            out = q.new_empty((tq, h, v.shape[2]))
        lse = torch.empty((h, tq), device=q.device, dtype=torch.float32) if return_lse else None
        a = FwdArgs()
        a.dtype = self._dtype(q)
        a.q, a.k, a.v, a.o = q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr()
        a.batch = cu_seqlens_q.shape[0] - 1
        a.nhead_q, a.hdim_q = h, q.shape[2]
        a.nhead_k, a.hdim_v = k.shape[1], v.shape[2]
        a.seqlen_q, a.seqlen_k = int(max_seqlen_q), int(max_seqlen_k)
        for t, name in ((q, "q"), (k, "k"), (v, "v"), (out, "o")):
            if t.stride(2) != 1:
                raise CktError(f"{name}: the head dim must have stride 1 (strides {tuple(t.stride())})")
            setattr(a, name + "_stride_h", t.stride(1))
            setattr(a, name + "_stride_s", t.stride(0))
        if lse is not None:
            a.lse, a.lse_stride_h = lse.data_ptr(), lse.stride(0)
        a.group_mode = 1
        for t, name in ((cu_seqlens_q, "cu_seqlens_q"), (cu_seqlens_k, "cu_seqlens_k")):
            if t.dtype != torch.int32 or not t.is_contiguous():
                raise CktError(f"{name}: must be a contiguous int32 tensor")
        a.seqstart_q, a.seqstart_k = cu_seqlens_q.data_ptr(), cu_seqlens_k.data_ptr()
        a.mask, a.window_left, a.window_right = self._mask(causal, window, bottom_right)
        a.scale, a.softcap = float(scale or 0.0), float(softcap or 0.0)
        self.run(a, stream if stream is not None else torch.cuda.current_stream(q.device).cuda_stream)
        return (out, lse) if return_lse else out
