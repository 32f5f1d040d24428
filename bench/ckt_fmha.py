"""ctypes binding of libckt_fmha (ckt/fmha/dispatch.h): the FMHA forward and
backward on PyTorch tensors, through the library's C ABI, and an autograd
function that stands in for SDPA in a training step.

    import ckt_fmha
    lib = ckt_fmha.Lib("bazel-bin/lib/fmha/gpu/libckt_fmha.so")   # or $CKT_FMHA_LIB
    o = lib.fwd(q, k, v, causal=True)               # q [b, h, sq, d], k/v [b, h_k, sk, d|d_v]
    o, lse = lib.fwd(q, k, v, return_lse=True)      # lse [b, h, sq] fp32, natural log
    o = lib.fwd_varlen(q, k, v, cu_q, cu_k, max_q, max_k)   # q [total_q, h, d] (FlashAttention's varlen)
    dq, dk, dv = lib.bwd(q, k, v, o, do, lse, causal=True, deterministic=False)

    # training: gradients through torch.autograd (forward saves LSE, backward calls ckt)
    o = ckt_fmha.attention(q, k, v, causal=True)    # layout="bshd": [b, s, h, d] (FlashAttention's)
    o = ckt_fmha.attention(q, k, v, layout="bhsd")  # SDPA's [b, h, s, d]
    o.float().pow(2).mean().backward()              # q.grad, k.grad, v.grad

Tensors may have any strides with a unit stride on the head dim (SDPA's
[b, h, s, d] view of a [b, s, h, d] tensor, for instance); the library checks
16-byte alignment and strides that are multiples of 8 elements. The output is
allocated in the layout of q unless `out` is given. Failures raise
CktError with the library's message naming the bad argument.

FwdArgs / BwdArgs (python/ckt/_lib.py, imported) mirror ckt_fmha_fwd_args /
ckt_fmha_bwd_args field by field; Lib() compares every field offset and the struct size with the
library's (ckt_fmha_fwd_args_offset, ckt_fmha_bwd_args_offset) and refuses to
run on a mismatch. The backward's workspace (ckt_fmha_bwd_workspace_bytes) is
a torch uint8 tensor from PyTorch's caching allocator, allocated per call.
torch is imported only where tensors are used: the module imports without it.
"""
import ctypes
import os
import sys

# The argument structs, the enums and CktError are the Python package's
# (python/ckt/_lib.py: ckt/fmha/args.h field by field), declared once.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from ckt._lib import (  # noqa: E402
    CKT_BF16, CKT_F16, CKT_F32, MASK_CAUSAL_BOTTOM_RIGHT, MASK_CAUSAL_TOP_LEFT, MASK_NONE,
    MASK_WINDOW_BOTTOM_RIGHT, MASK_WINDOW_TOP_LEFT, BwdArgs, CktError, FwdArgs)

__all__ = ["CKT_BF16", "CKT_F16", "CKT_F32", "MASK_CAUSAL_BOTTOM_RIGHT", "MASK_CAUSAL_TOP_LEFT", "MASK_NONE",
           "MASK_WINDOW_BOTTOM_RIGHT", "MASK_WINDOW_TOP_LEFT", "BwdArgs", "CktError", "FwdArgs", "Lib",
           "attention", "default_lib"]

_i32, _ptr = ctypes.c_int, ctypes.c_void_p


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


def _stream(t, stream):
    """The stream to run on: the given one, else the current CUDA stream of t's device (None, the
    default stream, for CPU tensors: the emulator build of the library takes host memory)."""
    if stream is not None:
        return stream
    import torch
    return torch.cuda.current_stream(t.device).cuda_stream if t.is_cuda else None


class Lib:
    def __init__(self, path=None, check_abi=True):
        """check_abi=False: skip the layout check, for an older library whose
        ckt_fmha_fwd_args is a prefix of this one's (bench/fmha_ab.py)."""
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
        if hasattr(L, "ckt_fmha_fwd_workspace_bytes"):  # libraries with the KV-cache fields
            L.ckt_fmha_fwd_workspace_bytes.argtypes = [ctypes.POINTER(FwdArgs)]
            L.ckt_fmha_fwd_workspace_bytes.restype = ctypes.c_size_t
            L.ckt_fmha_fwd_num_splits.argtypes = [ctypes.POINTER(FwdArgs)]
            L.ckt_fmha_fwd_num_splits.restype = _i32
        L.ckt_fmha_fwd_select.argtypes = [ctypes.POINTER(FwdArgs)]
        L.ckt_fmha_fwd_select.restype = ctypes.POINTER(ctypes.c_char_p)  # first field: const char *name
        # the backward: optional, so that a library without it still serves the forward
        self.has_bwd = hasattr(L, "ckt_fmha_bwd") and hasattr(L, "ckt_fmha_bwd_args_offset")
        if self.has_bwd:
            L.ckt_fmha_bwd.argtypes = [ctypes.POINTER(BwdArgs), _ptr]
            L.ckt_fmha_bwd.restype = _i32
            L.ckt_fmha_bwd_workspace_bytes.argtypes = [ctypes.POINTER(BwdArgs)]
            L.ckt_fmha_bwd_workspace_bytes.restype = ctypes.c_size_t
            L.ckt_fmha_bwd_args_offset.argtypes = [ctypes.c_char_p]
            L.ckt_fmha_bwd_args_offset.restype = ctypes.c_size_t
        if check_abi:
            self.check_abi()

    @staticmethod
    def _abi_diff(struct, off):
        bad = []
        for name, _ in struct._fields_:
            theirs, ours = off(name.encode()), getattr(struct, name).offset
            if theirs != ours:
                bad.append(f"{name}: library {theirs}, ctypes {ours}")
        if off(b"sizeof") != ctypes.sizeof(struct):
            bad.append(f"sizeof: library {off(b'sizeof')}, ctypes {ctypes.sizeof(struct)}")
        return bad

    def check_abi(self):
        """Every field offset and the size of FwdArgs (and BwdArgs) equal the library's."""
        bad = self._abi_diff(FwdArgs, self.lib.ckt_fmha_fwd_args_offset)
        if bad:
            raise CktError(f"{self.path}: ckt_fmha_fwd_args layout differs from bench/ckt_fmha.py: " + "; ".join(bad))
        if self.has_bwd:
            bad = self._abi_diff(BwdArgs, self.lib.ckt_fmha_bwd_args_offset)
            if bad:
                raise CktError(f"{self.path}: ckt_fmha_bwd_args layout differs from bench/ckt_fmha.py: " +
                               "; ".join(bad))

    def run(self, args, stream=None):
        """ckt_fmha_fwd(&args, stream) on a filled FwdArgs; raises CktError on failure."""
        st = self.lib.ckt_fmha_fwd(ctypes.byref(args), stream)
        if st != 0:
            raise CktError(f"ckt_fmha_fwd: {self.lib.ckt_fmha_status_string(st).decode()}: "
                           f"{self.lib.ckt_fmha_last_error().decode()}")

    def _need_bwd(self):
        if not self.has_bwd:
            raise CktError(f"{self.path}: this libckt_fmha has no backward (ckt_fmha_bwd)")

    def run_bwd(self, args, stream=None):
        """ckt_fmha_bwd(&args, stream) on a filled BwdArgs (workspace set); raises CktError on failure."""
        self._need_bwd()
        st = self.lib.ckt_fmha_bwd(ctypes.byref(args), stream)
        if st != 0:
            raise CktError(f"ckt_fmha_bwd: {self.lib.ckt_fmha_status_string(st).decode()}: "
                           f"{self.lib.ckt_fmha_last_error().decode()}")

    def bwd_workspace_bytes(self, args):
        """ckt_fmha_bwd_workspace_bytes(&args): the workspace ckt_fmha_bwd needs (raises when it cannot plan)."""
        self._need_bwd()
        n = self.lib.ckt_fmha_bwd_workspace_bytes(ctypes.byref(args))
        if n == 0:
            raise CktError(f"ckt_fmha_bwd_workspace_bytes: {self.lib.ckt_fmha_last_error().decode()}")
        return n

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
        self.run(a, _stream(q, stream))
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
        self.run(a, _stream(q, stream))
        return (out, lse) if return_lse else out

    def bwd_args(self, q, k, v, o, do, lse, dq, dk, dv, causal=False, window=None, bottom_right=False, scale=0.0,
                 softcap=0.0, deterministic=False):
        """BwdArgs for SDPA's shapes (batch mode): q/dq [b, h, sq, d], k/dk [b, h_k, sk, d],
        v/dv [b, h_k, sk, d_v], o/do [b, h, sq, d_v], lse [b, h, sq] fp32 (the forward's).
        The workspace is left unset (see bwd)."""
        self._need_bwd()
        a = BwdArgs()
        a.dtype = self._dtype(q)
        a.batch, a.nhead_q, a.seqlen_q, a.hdim_q = q.shape
        a.nhead_k, a.seqlen_k, a.hdim_v = k.shape[1], k.shape[2], v.shape[3]
        for t, name, field in ((q, "q", "q"), (k, "k", "k"), (v, "v", "v"), (o, "o", "o"), (do, "do", "dout"),
                               (dq, "dq", "dq"), (dk, "dk", "dk"), (dv, "dv", "dv")):
            if t.dtype != q.dtype:
                raise CktError(f"{name}: dtype {t.dtype}, q is {q.dtype}")
            if t.stride(3) != 1:
                raise CktError(f"{name}: the head dim must have stride 1 (strides {tuple(t.stride())})")
            setattr(a, field, t.data_ptr())
            setattr(a, name + "_stride_b", t.stride(0))
            setattr(a, name + "_stride_h", t.stride(1))
            setattr(a, name + "_stride_s", t.stride(2))
        a.lse = lse.data_ptr()
        a.lse_stride_b, a.lse_stride_h = lse.stride(0), lse.stride(1)
        a.mask, a.window_left, a.window_right = self._mask(causal, window, bottom_right)
        a.scale, a.softcap = float(scale or 0.0), float(softcap or 0.0)
        a.deterministic = 1 if deterministic else 0
        return a

    def bwd_workspace(self, args, device):
        """A torch uint8 workspace of ckt_fmha_bwd_workspace_bytes(args) bytes on device, set into args.
        Returned so that the caller keeps it alive as long as args is used."""
        import torch
        n = self.bwd_workspace_bytes(args)
        ws = torch.empty(n, dtype=torch.uint8, device=device)
        args.workspace, args.workspace_bytes = ws.data_ptr(), n
        return ws

    def bwd(self, q, k, v, o, do, lse, dq=None, dk=None, dv=None, causal=False, window=None, bottom_right=False,
            scale=None, softcap=0.0, deterministic=False, stream=None):
        """The gradients of fwd: dq, dk, dv for SDPA's shapes (q [b, h, sq, d], k [b, h_k, sk, d],
        v [b, h_k, sk, d_v], o and do [b, h, sq, d_v], lse [b, h, sq] fp32 from fwd(return_lse=True)),
        with fwd's mask / scale / softcap arguments. dq / dk / dv are allocated like q / k / v
        (torch.empty_like: the same strides) unless given. deterministic: bitwise reproducible."""
        import torch
        dq = torch.empty_like(q) if dq is None else dq
        dk = torch.empty_like(k) if dk is None else dk
        dv = torch.empty_like(v) if dv is None else dv
        a = self.bwd_args(q, k, v, o, do, lse, dq, dk, dv, causal, window, bottom_right, scale, softcap,
                          deterministic)
        ws = self.bwd_workspace(a, q.device)
        self.run_bwd(a, _stream(q, stream))
        del ws  # the caching allocator keeps it for the stream's work queued above
        return dq, dk, dv


# >>autograd: ckt_fmha.attention, a stand-in for SDPA / flash_attn_func in a training step

_default_lib = None


def default_lib():
    """The Lib of _default_path(), loaded once."""
    global _default_lib
    if _default_lib is None:
        _default_lib = Lib()
    return _default_lib


def _kernel_ready(t):
    """t, or a contiguous copy when the library could not take it: a head-dim stride other
    than 1, strides not multiples of 8 elements (e.g. the expanded gradient of a sum), or a
    pointer not 16-byte aligned."""
    ok = t.stride(-1) == 1 and all(s % 8 == 0 and s > 0 for s in t.stride()[:-1]) and t.data_ptr() % 16 == 0
    return t if ok else t.contiguous()


def _attention_function():
    import torch

    class _Attention(torch.autograd.Function):
        """q, k, v in [b, h, s, d] views; the forward saves O and LSE, the backward calls ckt_fmha_bwd."""

        @staticmethod
        def forward(ctx, q, k, v, causal, window, bottom_right, scale, softcap, deterministic, lib):
            q, k, v = _kernel_ready(q), _kernel_ready(k), _kernel_ready(v)
            o, lse = lib.fwd(q, k, v, causal=causal, window=window, bottom_right=bottom_right, scale=scale,
                             softcap=softcap, return_lse=True)
            ctx.save_for_backward(q, k, v, o, lse)
            ctx.opts = (causal, window, bottom_right, scale, softcap, deterministic, lib)
            return o

        @staticmethod
        def backward(ctx, do):
            q, k, v, o, lse = ctx.saved_tensors
            causal, window, bottom_right, scale, softcap, deterministic, lib = ctx.opts
            do = _kernel_ready(do)
            dq, dk, dv = lib.bwd(q, k, v, o, do, lse, causal=causal, window=window, bottom_right=bottom_right,
                                 scale=scale, softcap=softcap, deterministic=deterministic)
            return dq, dk, dv, None, None, None, None, None, None, None

    return _Attention


_attention_cls = None


def attention(q, k, v, causal=False, scale=None, softcap=0.0, deterministic=False, layout="bshd", window=None,
              bottom_right=False, lib=None):
    """Attention with gradients through torch.autograd, ckt's forward and backward.

    layout "bshd": q [b, sq, h, d], k [b, sk, h_k, d], v [b, sk, h_k, d_v] (FlashAttention's
    flash_attn_func), output [b, sq, h, d_v]; "bhsd": SDPA's [b, h, s, d] and output
    [b, h, sq, d_v]. GQA / MQA: h a multiple of h_k. causal (top-left, as SDPA's is_causal,
    unless bottom_right), window (left, right; -1 unlimited), scale (None: 1/sqrt(d)),
    softcap (0: none). deterministic: the backward is bitwise reproducible.
    fp16 / bf16 on a CUDA device; head dims up to 256 (multiples of 8)."""
    global _attention_cls
    if layout not in ("bshd", "bhsd"):
        raise CktError(f'layout must be "bshd" or "bhsd", got {layout!r}')
    if _attention_cls is None:
        _attention_cls = _attention_function()
    lib = lib or default_lib()
    if layout == "bshd":
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    o = _attention_cls.apply(q, k, v, bool(causal), window, bool(bottom_right), scale, softcap,
                             bool(deterministic), lib)
    return o.transpose(1, 2) if layout == "bshd" else o
