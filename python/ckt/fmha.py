"""ckt's FMHA (fused multi-head attention) for Python: libckt_fmha's forward, backward and
append-KV (ckt/fmha/dispatch.h) on PyTorch tensors or any array ckt.as_tensor describes.

    import ckt
    o = ckt.fmha.attention(q, k, v, causal=True)               # q [b, sq, h, d], k/v [b, sk, h_k, d|d_v]
    o = ckt.fmha.attention(q, k, v, layout="bhsd")             # SDPA's [b, h, s, d]
    o.float().pow(2).mean().backward()                         # autograd: q.grad, k.grad, v.grad
    o = ckt.fmha.varlen(q, k, v, cu_q, cu_k, max_q, max_k)     # q [total_q, h, d] (FlashAttention's varlen)
    o = ckt.fmha.with_kvcache(q, k_cache, v_cache, k_new, v_new, cache_seqlens=lens,
                              rotary_cos=cos, rotary_sin=sin, causal=True)   # decode step

Masks follow FlashAttention: causal, window=(left, right) (-1: unlimited). attention's
causal aligns top-left like SDPA's is_causal unless bottom_right=True; varlen and
with_kvcache align bottom-right like FlashAttention's. scale None (or 0): 1/sqrt(d);
softcap 0: none; GQA / MQA: h a multiple of h_k; fp16 / bf16, head dims multiples of 8
up to 256. Failures raise ckt.CktError with the library's message, which starts with the
name of the bad argument.

torch tensors get autograd (the forward saves the LSE, the backward calls ckt_fmha_bwd),
outputs from torch's allocator and the current CUDA stream. Other inputs (numpy arrays,
__cuda_array_interface__ / __dlpack__ objects, plain buffers: host memory for the CPU
emulator build) run the same calls; outputs are numpy arrays for numpy inputs, else
ckt.Tensor descriptions of new host buffers, or the out= / lse= given. torch is never
imported here.
"""
import sys

from . import _lib
from ._lib import CktError
from ._tensor import Tensor, as_tensor, copy_like, empty_like_kind, host_int32, is_numpy, is_torch, read_int32

__all__ = ["attention", "varlen", "with_kvcache", "attention_backward", "varlen_backward"]

_CKT_DTYPE = {"float16": _lib.CKT_F16, "bfloat16": _lib.CKT_BF16, "float32": _lib.CKT_F32}


# >>helpers


class _Opts:
    """The mask and scaling options shared by the forward and the backward."""
    __slots__ = ("causal", "window", "bottom_right", "scale", "softcap", "deterministic")

    def __init__(self, causal=False, window=None, bottom_right=False, scale=None, softcap=0.0, deterministic=False):
        self.causal, self.window, self.bottom_right = bool(causal), window, bool(bottom_right)
        self.scale, self.softcap, self.deterministic = float(scale or 0.0), float(softcap or 0.0), bool(deterministic)

    def mask(self):
        """FlashAttention's (causal, window) -> (ckt_fmha_mask, window_left, window_right)."""
        left, right = self.window if self.window is not None else (-1, -1)
        if left >= 0 or right >= 0:
            if self.causal:
                right = 0
            return (_lib.MASK_WINDOW_BOTTOM_RIGHT if self.bottom_right else _lib.MASK_WINDOW_TOP_LEFT), left, right
        if self.causal:
            return (_lib.MASK_CAUSAL_BOTTOM_RIGHT if self.bottom_right else _lib.MASK_CAUSAL_TOP_LEFT), 0, 0
        return _lib.MASK_NONE, 0, 0

    def set(self, a):
        a.mask, a.window_left, a.window_right = self.mask()
        a.scale, a.softcap = self.scale, self.softcap


def _dtype_code(t, name):
    code = _CKT_DTYPE.get(t.dtype)
    if code is None:  # float32 goes through, for the library's own message
        raise CktError(f"{name}: dtype {t.dtype}: ckt_fmha takes float16 or bfloat16")
    return code


def _dims(t, name, axes):
    """{axis: size} of t, whose dims must be named by axes ("bshd")."""
    if t.ndim != len(axes):
        raise CktError(f"{name}: shape {t.shape} has {t.ndim} dims, expected {len(axes)} "
                       f"[{', '.join(axes)}]")
    return dict(zip(axes, t.shape))


def _same(name, t, what, got, want, of="q"):
    if got != want:
        raise CktError(f"{name}: shape {t.shape}: {what} {got} differs from {of}'s {want}")


def _same_dtype(q, named):
    for name, t in named:
        if t is not None and t.dtype != q.dtype:
            raise CktError(f"{name}: dtype {t.dtype}, q is {q.dtype}")


def _unit_d(named):
    for name, t in named:
        if t is not None and t.shape[-1] > 1 and t.strides[-1] != 1:
            raise CktError(f"{name}: the head dim must have stride 1 (strides {t.strides})")


def _set_bhs(a, field, t):
    """field_stride_b / _h / _s from a [b, h, s, d] view."""
    setattr(a, field + "_stride_b", t.strides[0])
    setattr(a, field + "_stride_h", t.strides[1])
    setattr(a, field + "_stride_s", t.strides[2])


def _set_hs(a, field, t):
    """field_stride_h / _s from a packed [t, h, d] tensor (group mode: no batch stride)."""
    setattr(a, field + "_stride_h", t.strides[1])
    setattr(a, field + "_stride_s", t.strides[0])


def _bhsd(t, layout):
    """The [b, h, s, d] view of a tensor in layout."""
    return t.transpose(1, 2) if layout == "bshd" else t


def _check_layout(layout):
    if layout not in ("bshd", "bhsd"):
        raise CktError(f'layout: must be "bshd" or "bhsd", got {layout!r}')


def _stream(x, stream):
    """The stream to run on: the given one, else torch's current CUDA stream for CUDA tensors,
    else None (the default stream; the emulator build ignores it)."""
    if stream is not None:
        return int(stream) if isinstance(stream, int) else int(getattr(stream, "cuda_stream", stream) or 0)
    if is_torch(x) and x.is_cuda:
        torch = sys.modules["torch"]
        return torch.cuda.current_stream(x.device).cuda_stream
    return None


def _alloc(like, shape, dtype, name):
    """(object returned to the caller, its description): new memory like the caller's `like`."""
    obj, t = empty_like_kind(like, shape, dtype, name)
    return (t if isinstance(like, Tensor) else obj), t


def _given(x, name, dtype=None):
    return None if x is None else as_tensor(x, dtype=dtype, name=name)


def _swap01(obj):
    """obj with its first two dims swapped (a view), of its own kind."""
    if is_torch(obj):
        return obj.transpose(0, 1)
    if is_numpy(obj):
        return obj.swapaxes(0, 1)
    return obj.transpose(0, 1)


# >>the calls on descriptions (no torch)


def _check_batch(layout, q, k, v, o=None, lse=None):
    """The shapes of a batch-mode call in layout; returns (b, h, sq, d, hk, sk, dv)."""
    axes = "bshd" if layout == "bshd" else "bhsd"
    qd, kd, vd = _dims(q, "q", axes), _dims(k, "k", axes), _dims(v, "v", axes)
    _same("k", k, "batch", kd["b"], qd["b"])
    _same("v", v, "batch", vd["b"], qd["b"])
    _same("k", k, "head dim", kd["d"], qd["d"])
    _same("v", v, "heads", vd["h"], kd["h"], "k")
    _same("v", v, "length", vd["s"], kd["s"], "k")
    b, h, sq, d, hk, sk, dv = qd["b"], qd["h"], qd["s"], qd["d"], kd["h"], kd["s"], vd["d"]
    if o is not None:
        want = (b, sq, h, dv) if layout == "bshd" else (b, h, sq, dv)
        if o.shape != want:
            raise CktError(f"out: shape {o.shape}, expected {want}")
    if lse is not None:
        if lse.shape != (b, h, sq) or lse.dtype != "float32":
            raise CktError(f"lse: {lse.dtype} {lse.shape}, expected float32 {(b, h, sq)}")
    return b, h, sq, d, hk, sk, dv


def _check_group(q, k, v, o=None, lse=None):
    """The shapes of a group-mode call: q [total_q, h, d], k / v [total_k, h_k, d | d_v]."""
    qd, kd, vd = _dims(q, "q", "thd"), _dims(k, "k", "thd"), _dims(v, "v", "thd")
    _same("k", k, "head dim", kd["d"], qd["d"])
    _same("v", v, "heads", vd["h"], kd["h"], "k")
    _same("v", v, "length", vd["t"], kd["t"], "k")
    tq, h, d, hk, dv = qd["t"], qd["h"], qd["d"], kd["h"], vd["d"]
    if o is not None and o.shape != (tq, h, dv):
        raise CktError(f"out: shape {o.shape}, expected {(tq, h, dv)}")
    if lse is not None and (lse.shape != (h, tq) or lse.dtype != "float32"):
        raise CktError(f"lse: {lse.dtype} {lse.shape}, expected float32 {(h, tq)}")
    return tq, h, d, hk, dv


class _Group:
    """Group (varlen) mode: device int32 arrays (descriptions) and the max lengths."""
    __slots__ = ("seqstart_q", "seqstart_k", "max_q", "max_k", "seqlen_q", "seqlen_k")

    def __init__(self, seqstart_q, seqstart_k, max_q, max_k, seqlen_q=None, seqlen_k=None):
        for name, t in (("cu_seqlens_q", seqstart_q), ("cu_seqlens_k", seqstart_k), ("seqused_q", seqlen_q),
                        ("seqused_k", seqlen_k)):
            if t is not None and (t.dtype != "int32" or t.ndim != 1 or (t.shape[0] > 1 and t.strides[0] != 1)):
                raise CktError(f"{name}: {t.dtype} {t.shape} strides {t.strides}, expected a contiguous 1-D int32 "
                               f"array")
        if seqstart_q.shape != seqstart_k.shape:
            raise CktError(f"cu_seqlens_k: {seqstart_k.shape[0]} entries, cu_seqlens_q has {seqstart_q.shape[0]}")
        self.seqstart_q, self.seqstart_k, self.seqlen_q, self.seqlen_k = seqstart_q, seqstart_k, seqlen_q, seqlen_k
        self.max_q, self.max_k = int(max_q), int(max_k)

    def set(self, a):
        a.group_mode = 1
        a.batch = self.seqstart_q.shape[0] - 1
        a.seqlen_q, a.seqlen_k = self.max_q, self.max_k
        a.seqstart_q, a.seqstart_k = self.seqstart_q.ptr, self.seqstart_k.ptr
        a.seqlen_q_ptr = self.seqlen_q.ptr if self.seqlen_q is not None else None
        a.seqlen_k_ptr = self.seqlen_k.ptr if self.seqlen_k is not None else None


def _check_sink(t, h, name="sink"):
    """An attention sinks' vector (or its gradient): float32 [h], contiguous."""
    if t is None:
        return None
    if t.dtype != "float32":
        raise CktError(f"{name}: dtype {t.dtype}, want float32 (one logit per query head)")
    if tuple(t.shape) != (h,):
        raise CktError(f"{name}: shape {tuple(t.shape)}, want ({h},) (one logit per query head)")
    if t.strides[0] != 1:
        raise CktError(f"{name}: stride {t.strides[0]}, want 1 (contiguous)")
    return t.ptr


def fwd_call(lib, q, k, v, o, lse, opts, group=None, layout="bhsd", stream=None, sink=None):
    """ckt_fmha_fwd on descriptions (ckt.Tensor): batch mode q / k / v / o in layout, lse [b, h, sq]
    float32 or None; group mode (group: _Group) q [total_q, h, d], lse [h, total_q]. sink: float32
    [h] attention sinks (one logit per query head joining each row's softmax denominator) or None."""
    _same_dtype(q, (("k", k), ("v", v), ("out", o)))
    _unit_d((("q", q), ("k", k), ("v", v), ("out", o)))
    a = lib.new_args("fwd")
    a.dtype = _dtype_code(q, "q")
    a.q, a.k, a.v, a.o = q.ptr, k.ptr, v.ptr, o.ptr
    if group is None:
        b, h, sq, d, hk, sk, dv = _check_batch(layout, q, k, v, o, lse)
        a.batch, a.nhead_q, a.nhead_k, a.seqlen_q, a.seqlen_k, a.hdim_q, a.hdim_v = b, h, hk, sq, sk, d, dv
        for field, t in (("q", q), ("k", k), ("v", v), ("o", o)):
            _set_bhs(a, field, _bhsd(t, layout))
        if lse is not None:
            a.lse, a.lse_stride_b, a.lse_stride_h = lse.ptr, lse.strides[0], lse.strides[1]
    else:
        tq, h, d, hk, dv = _check_group(q, k, v, o, lse)
        a.nhead_q, a.nhead_k, a.hdim_q, a.hdim_v = h, hk, d, dv
        for field, t in (("q", q), ("k", k), ("v", v), ("o", o)):
            _set_hs(a, field, t)
        group.set(a)
        if lse is not None:
            a.lse, a.lse_stride_h = lse.ptr, lse.strides[0]
    opts.set(a)
    a.sink = _check_sink(sink, a.nhead_q)
    lib.call("ckt_fmha_fwd", a, stream)
    return a


def bwd_call(lib, q, k, v, o, do, lse, dq, dk, dv, opts, group=None, layout="bhsd", stream=None, workspace=None,
             sink=None, dsink=None):
    """ckt_fmha_bwd on descriptions: the shapes of fwd_call, do like o, dq / dk / dv like q / k / v;
    sink / dsink: the forward's attention sinks and their gradient (float32 [h]; dsink needs sink).
    workspace: a callable bytes -> description of device memory of that size (kept alive by the
    caller until the call's work is done)."""
    if not lib.has_bwd:
        raise CktError(f"{lib.path}: this libckt_fmha has no backward (ckt_fmha_bwd)")
    named = (("k", k), ("v", v), ("o", o), ("do", do), ("dq", dq), ("dk", dk), ("dv", dv))
    _same_dtype(q, named)
    _unit_d((("q", q),) + named)
    for name, t, like, lname in (("do", do, o, "o"), ("dq", dq, q, "q"), ("dk", dk, k, "k"), ("dv", dv, v, "v")):
        if t.shape != like.shape:
            raise CktError(f"{name}: shape {t.shape} differs from {lname}'s {like.shape}")
    a = lib.new_args("bwd")
    a.dtype = _dtype_code(q, "q")
    a.q, a.k, a.v, a.o, a.dout, a.lse = q.ptr, k.ptr, v.ptr, o.ptr, do.ptr, lse.ptr
    a.dq, a.dk, a.dv = dq.ptr, dk.ptr, dv.ptr
    pairs = (("q", q), ("k", k), ("v", v), ("o", o), ("do", do), ("dq", dq), ("dk", dk), ("dv", dv))
    if group is None:
        b, h, sq, d, hk, sk, dvd = _check_batch(layout, q, k, v, o, lse)
        a.batch, a.nhead_q, a.nhead_k, a.seqlen_q, a.seqlen_k, a.hdim_q, a.hdim_v = b, h, hk, sq, sk, d, dvd
        for field, t in pairs:
            _set_bhs(a, field, _bhsd(t, layout))
        a.lse_stride_b, a.lse_stride_h = lse.strides[0], lse.strides[1]
    else:
        tq, h, d, hk, dvd = _check_group(q, k, v, o, lse)
        a.nhead_q, a.nhead_k, a.hdim_q, a.hdim_v = h, hk, d, dvd
        for field, t in pairs:
            _set_hs(a, field, t)
        group.set(a)
        a.lse_stride_h = lse.strides[0]
    opts.set(a)
    a.deterministic = 1 if opts.deterministic else 0
    a.sink = _check_sink(sink, a.nhead_q)
    a.dsink = _check_sink(dsink, a.nhead_q, "dsink")
    n = lib.bwd_workspace_bytes(a)
    ws = workspace(n)
    a.workspace, a.workspace_bytes = ws.ptr, n
    lib.call("ckt_fmha_bwd", a, stream)
    return a


# >>autograd (torch only; built on first use)

_fn_cls = None


def _kernel_ready(t):
    """t, or a contiguous copy when the library could not take it: a head-dim stride other than 1,
    strides not multiples of 8 elements (e.g. the expanded gradient of a sum), or a pointer not
    16-byte aligned."""
    ok = t.stride(-1) == 1 and all(s % 8 == 0 and s > 0 for s in t.stride()[:-1]) and t.data_ptr() % 16 == 0
    return t if ok else t.contiguous()


def _autograd_function():
    global _fn_cls
    if _fn_cls is None:
        torch = sys.modules["torch"]

        class _Attention(torch.autograd.Function):
            """q, k, v in the caller's layout; spec (_Spec) runs the forward (saving O and LSE) and
            the backward (ckt_fmha_bwd)."""

            @staticmethod
            def forward(ctx, q, k, v, sink, spec):
                q, k, v = _kernel_ready(q), _kernel_ready(k), _kernel_ready(v)
                sink = sink.contiguous() if sink is not None else None
                o, lse = spec.forward(q, k, v, None, None, need_lse=True, sink=sink)
                ctx.save_for_backward(q, k, v, o, lse, sink)
                ctx.spec = spec
                ctx.mark_non_differentiable(lse)
                return o, lse

            @staticmethod
            def backward(ctx, do, _dlse):
                q, k, v, o, lse, sink = ctx.saved_tensors
                do = torch.zeros_like(o) if do is None else _kernel_ready(do)  # only the LSE was used
                want_dsink = sink is not None and ctx.needs_input_grad[3]
                dq, dk, dv, dsink = ctx.spec.backward(q, k, v, o, do, lse, sink=sink, want_dsink=want_dsink)
                return dq, dk, dv, dsink, None

        _fn_cls = _Attention
    return _fn_cls


def _needs_grad(*xs):
    if not any(is_torch(x) for x in xs):
        return False
    torch = sys.modules["torch"]
    return torch.is_grad_enabled() and any(is_torch(x) and x.requires_grad for x in xs)


class _Spec:
    """One call's mode (batch in layout, or group) and options: forward and backward on the
    caller's objects, allocating outputs of their kind."""

    def __init__(self, lib, opts, layout="bhsd", group=None, group_objs=(), stream=None):
        self.lib, self.opts, self.layout, self.group, self.stream = lib, opts, layout, group, stream
        self.group_objs = group_objs  # keeps the arrays behind group alive

    def forward(self, q, k, v, out, lse, need_lse, sink=None):
        qt, kt, vt = as_tensor(q, name="q"), as_tensor(k, name="k"), as_tensor(v, name="v")
        st = as_tensor(sink, name="sink") if sink is not None else None
        if self.group is None:
            b, h, sq, d, hk, sk, dv = _check_batch(self.layout, qt, kt, vt)
            oshape = (b, sq, h, dv) if self.layout == "bshd" else (b, h, sq, dv)
            lshape = (b, h, sq)
        else:
            tq, h, d, hk, dv = _check_group(qt, kt, vt)
            oshape, lshape = (tq, h, dv), (h, tq)
        out, ot = (out, as_tensor(out, name="out")) if out is not None else _alloc(q, oshape, qt.dtype, "out")
        if lse is not None:
            lt = as_tensor(lse, name="lse")
        elif need_lse:
            lse, lt = _alloc(q, lshape, "float32", "lse")
        else:
            lt = None
        fwd_call(self.lib, qt, kt, vt, ot, lt, self.opts, self.group, self.layout, _stream(q, self.stream), st)
        return out, lse

    def backward(self, q, k, v, o, do, lse, dq=None, dk=None, dv=None, sink=None, want_dsink=False, dsink=None):
        """(dq, dk, dv, dsink): dsink (float32 [h]) when want_dsink or given, else None."""
        ts = [as_tensor(x, name=n) for x, n in ((q, "q"), (k, "k"), (v, "v"), (o, "o"), (do, "do"), (lse, "lse"))]
        grads = []
        for g, x, t, name in ((dq, q, ts[0], "dq"), (dk, k, ts[1], "dk"), (dv, v, ts[2], "dv")):
            if g is None:
                g, gt = _alloc(x, t.shape, t.dtype, name)
            else:
                gt = as_tensor(g, name=name)
            grads.append((g, gt))
        keep = []

        def workspace(n):
            obj, t = empty_like_kind(q, (n,), "uint8", "workspace")
            keep.append(obj)  # torch: the caching allocator keeps it for the stream's queued work
            return t

        st = as_tensor(sink, name="sink") if sink is not None else None
        dst = None
        if dsink is not None:
            dst = as_tensor(dsink, name="dsink")
        elif want_dsink:
            if sink is None:
                raise CktError("dsink: needs sink (the forward's attention sinks)")
            dsink, dst = _alloc(sink, st.shape, "float32", "dsink")
        bwd_call(self.lib, *ts, *(gt for _, gt in grads), self.opts, self.group, self.layout,
                 _stream(q, self.stream), workspace, st, dst)
        return tuple(g for g, _ in grads) + (dsink,)


def _run(spec, q, k, v, out, lse, return_lse, sink=None):
    if _needs_grad(q, k, v, sink):
        if out is not None or lse is not None:
            raise CktError("out / lse: not with autograd (inputs that require grad)")
        o, lse = _autograd_function().apply(q, k, v, sink, spec)
    else:
        o, lse = spec.forward(q, k, v, out, lse, need_lse=return_lse, sink=sink)
    return (o, lse) if return_lse else o


# >>the API


def attention(q, k, v, causal=False, window=None, softcap=0.0, scale=None, layout="bshd", deterministic=False,
              bottom_right=False, return_lse=False, out=None, lse=None, stream=None, lib=None, sink=None):
    """softmax(q k^T * scale) v per head, with gradients through torch.autograd for torch tensors.

    layout "bshd": q [b, sq, h, d], k [b, sk, h_k, d], v [b, sk, h_k, d_v] (FlashAttention's
    flash_attn_func), output [b, sq, h, d_v]; "bhsd": SDPA's [b, h, s, d], output [b, h, sq, d_v].
    causal: top-left aligned (SDPA's is_causal) unless bottom_right (FlashAttention's);
    window (left, right), -1 unlimited; scale None: 1/sqrt(d); softcap 0: none.
    deterministic: the backward is bitwise reproducible. return_lse: also the log-sum-exp,
    [b, h, sq] float32 (natural log). out / lse: outputs to write (no autograd).
    sink: attention sinks (gpt-oss), float32 [h]: a learned logit per query head that joins every
    row's softmax denominator (LSE = log(exp(sink) + sum exp(s))); its gradient flows through
    autograd when it requires grad."""
    _check_layout(layout)
    spec = _Spec(lib or _lib.library(), _Opts(causal, window, bottom_right, scale, softcap, deterministic), layout,
                 stream=stream)
    return _run(spec, q, k, v, out, lse, return_lse, sink)


def attention_backward(q, k, v, o, do, lse, causal=False, window=None, softcap=0.0, scale=None, layout="bshd",
                       deterministic=False, bottom_right=False, dq=None, dk=None, dv=None, stream=None, lib=None,
                       sink=None, dsink=None):
    """The gradients (dq, dk, dv) of attention(..., return_lse=True), given its o, lse and the output's
    gradient do, with the forward's options: the backward without autograd (any inputs). With the
    forward's sink: (dq, dk, dv, dsink), dsink float32 [h] (written into dsink= when given)."""
    _check_layout(layout)
    spec = _Spec(lib or _lib.library(), _Opts(causal, window, bottom_right, scale, softcap, deterministic), layout,
                 stream=stream)
    g = spec.backward(q, k, v, o, do, lse, dq, dk, dv, sink=sink, want_dsink=sink is not None, dsink=dsink)
    return g if sink is not None else g[:3]


def _varlen_spec(q, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q, seqused_k, opts, stream,
                 lib):
    arrs = [as_tensor(x, name=n) if x is not None else None
            for x, n in ((cu_seqlens_q, "cu_seqlens_q"), (cu_seqlens_k, "cu_seqlens_k"), (seqused_q, "seqused_q"),
                         (seqused_k, "seqused_k"))]
    group = _Group(arrs[0], arrs[1], max_seqlen_q, max_seqlen_k, arrs[2], arrs[3])
    return _Spec(lib or _lib.library(), opts, group=group, group_objs=(cu_seqlens_q, cu_seqlens_k, seqused_q,
                                                                       seqused_k), stream=stream)


def varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=False, window=None, softcap=0.0,
           scale=None, deterministic=False, bottom_right=True, seqused_q=None, seqused_k=None, return_lse=False,
           out=None, lse=None, stream=None, lib=None, sink=None):
    """Variable-length attention, FlashAttention's flash_attn_varlen_func convention: sequences packed
    along the first dim, q [total_q, h, d], k [total_k, h_k, d], v [total_k, h_k, d_v], output
    [total_q, h, d_v]; cu_seqlens_q / _k: int32 [batch + 1] cumulative starts, in device memory;
    max_seqlen_*: the longest sequence. seqused_q / _k (optional, int32 [batch]): logical lengths
    shorter than the packed ones. causal / window align bottom-right (per sequence) like
    FlashAttention's unless bottom_right=False. return_lse: also the LSE, [h, total_q] float32.
    Autograd for torch tensors, like attention; sink: attention sinks, like attention's."""
    opts = _Opts(causal, window, bottom_right, scale, softcap, deterministic)
    spec = _varlen_spec(q, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q, seqused_k, opts,
                        stream, lib)
    return _run(spec, q, k, v, out, lse, return_lse, sink)


def varlen_backward(q, k, v, o, do, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=False,
                    window=None, softcap=0.0, scale=None, deterministic=False, bottom_right=True, seqused_q=None,
                    seqused_k=None, dq=None, dk=None, dv=None, stream=None, lib=None, sink=None, dsink=None):
    """The gradients (dq, dk, dv) of varlen(..., return_lse=True) without autograd; with the
    forward's sink, (dq, dk, dv, dsink) like attention_backward."""
    opts = _Opts(causal, window, bottom_right, scale, softcap, deterministic)
    spec = _varlen_spec(q, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q, seqused_k, opts,
                        stream, lib)
    g = spec.backward(q, k, v, o, do, lse, dq, dk, dv, sink=sink, want_dsink=sink is not None, dsink=dsink)
    return g if sink is not None else g[:3]


def _float32_table(x, name):
    """(object, description) of a rotary table as contiguous float32 (FlashAttention passes the data
    type; ckt's tables are fp32: docs/fmha_appendkv.md)."""
    if is_torch(x):
        x = x.float().contiguous()
    elif is_numpy(x):
        import numpy as np
        x = np.ascontiguousarray(x, dtype=np.float32)
    t = as_tensor(x, name=name)
    if t.dtype != "float32" or t.ndim != 2 or not t.is_contiguous():
        raise CktError(f"{name}: {t.dtype} {t.shape}, expected a contiguous float32 [max_pos, rotary_dim / 2] "
                       f"table")
    return x, t


def _lens_after(cache_seqlens, snew, like):
    """(keep, Tensor) of the int32 lengths after the append, cache_seqlens + snew, in memory like q's.
    A torch tensor stays on its device (no host read); host arrays and lists are read."""
    if is_torch(cache_seqlens):
        torch = sys.modules["torch"]
        obj = (cache_seqlens.to(torch.int32) + snew).contiguous() if snew else cache_seqlens
        if obj.dtype != torch.int32 or obj.ndim != 1:
            raise CktError(f"cache_seqlens: {obj.dtype} {tuple(obj.shape)}, expected 1-D int32")
        return obj, as_tensor(obj, name="cache_seqlens")
    if snew == 0 and not isinstance(cache_seqlens, (list, tuple)):
        return cache_seqlens, as_tensor(cache_seqlens, name="cache_seqlens")
    return host_int32([v + snew for v in read_int32(cache_seqlens, "cache_seqlens")], like, "cache_seqlens")


def with_kvcache(q, k_cache, v_cache, k_new=None, v_new=None, cache_seqlens=None, rotary_cos=None, rotary_sin=None,
                 rotary_interleaved=True, cache_batch_idx=None, block_table=None, causal=False, window=None,
                 softcap=0.0, scale=None, num_splits=0, return_lse=False, out=None, stream=None, lib=None, sink=None):
    """Decoding with a KV cache, FlashAttention's flash_attn_with_kvcache: appends k_new / v_new to the
    cache in place (ckt_fmha_appendkv, rotating k_new and q by the rotary tables) and attends over
    each entry's first cache_seqlens[b] + s_new cache rows (ckt_fmha_fwd over the cache in place:
    contiguous or paged, split-KV; docs/fmha_inference.md).

    q [b, sq, h, d]. The cache, contiguous: k_cache [b_c, s_cache, h_k, d], v_cache [b_c, s_cache,
    h_k, d_v]; paged (block_table int32 [b_c, max_pages], vLLM style): k_cache [num_pages,
    page_size, h_k, d], v_cache [num_pages, page_size, h_k, d_v], entry b's position j at row
    j % page_size of page block_table[cb][j // page_size]; either way updated in place. k_new
    [b, s_new, h_k, d], v_new [b, s_new, h_k, d_v] or None; cache_seqlens: an int or int32 [b]
    (the lengths before the append; None: the whole cache, contiguous only); cache_batch_idx:
    int32 [b], entry b's cache row cb (its block-table row when paged; any order, no two entries
    appending to one row); rotary_cos / rotary_sin [max_pos, rotary_dim / 2] (converted to
    float32), pairs (2i, 2i+1) when rotary_interleaved else (i, i + rotary_dim / 2). Query i of
    entry b sits at position cache_seqlens[b] + i (the queries are the new tokens); q itself is not
    modified (a rotated copy is used). causal and window align bottom-right. num_splits: split-KV
    (0: automatic from the device and the shape, with a workspace allocated here; 1: no split;
    n: n key ranges merged by a deterministic combine). Returns out [b, sq, h, d_v] (and lse
    [b, h, sq] float32). cache_seqlens is not advanced: add s_new yourself. sink: attention
    sinks, float32 [h], like attention's (split-KV adds them once, in the combine).

    With torch tensors nothing is read back to the host (cache_seqlens stays on the device); the
    library checks what it can read and the kernels stay in bounds for the rest."""
    lib = lib or _lib.library()
    if not lib.has_appendkv:
        raise CktError(f"{lib.path}: this libckt_fmha has no append-KV (ckt_fmha_appendkv)")
    qt, kc, vc = as_tensor(q, name="q"), as_tensor(k_cache, name="k_cache"), as_tensor(v_cache, name="v_cache")
    kn, vn = _given(k_new, "k_new"), _given(v_new, "v_new")
    if (kn is None) != (vn is None):
        raise CktError(f"{'v_new' if kn is not None else 'k_new'}: None, but {'k_new' if kn is not None else 'v_new'}"
                       f" is given")
    _same_dtype(qt, (("k_cache", kc), ("v_cache", vc), ("k_new", kn), ("v_new", vn)))
    _unit_d((("q", qt), ("k_cache", kc), ("v_cache", vc), ("k_new", kn), ("v_new", vn)))
    qd, kd, vd = _dims(qt, "q", "bshd"), _dims(kc, "k_cache", "bshd"), _dims(vc, "v_cache", "bshd")
    b, sq, h, d = qd["b"], qd["s"], qd["h"], qd["d"]
    hk, dv = kd["h"], vd["d"]
    _same("k_cache", kc, "head dim", kd["d"], d)
    if vc.shape != (kd["b"], kd["s"], hk, dv):
        raise CktError(f"v_cache: shape {vc.shape}, expected {(kd['b'], kd['s'], hk, dv)} like k_cache")
    for name, t, want in (("k_new", kn, (b, kn.shape[1] if kn is not None and kn.ndim == 4 else -1, hk, d)),
                          ("v_new", vn, (b, kn.shape[1] if kn is not None and kn.ndim == 4 else -1, hk, dv))):
        if t is not None and t.shape != want:
            raise CktError(f"{name}: shape {t.shape}, expected {want} [b, s, h, d]")
    snew = kn.shape[1] if kn is not None else 0

    keep = []
    # the cache: contiguous [b_c, s_cache, ...] or a pool [num_pages, page_size, ...] and its table
    bt = None
    if block_table is not None:
        bt_obj = block_table
        bt = as_tensor(block_table, name="block_table")
        if bt.dtype != "int32" or bt.ndim != 2 or not bt.is_contiguous():
            raise CktError(f"block_table: {bt.dtype} {bt.shape}, expected a contiguous int32 [batch, max_pages]")
        keep.append(bt_obj)
        page_size, num_pages, bc = kd["s"], kd["b"], bt.shape[0]
        capacity = bt.shape[1] * page_size
    else:
        page_size, num_pages, bc = 0, 0, kd["b"]
        capacity = kd["s"]

    # the lengths: before the append (appendkv) and after it (the forward's keys)
    lens_t = fwd_lens_t = None
    if cache_seqlens is None:
        if kn is not None:
            raise CktError("cache_seqlens: None, but k_new is given (where would it go?)")
        if bt is not None:
            raise CktError("cache_seqlens: None with a block_table (the lengths of a paged cache must be given)")
        seqlen_k = capacity
    elif isinstance(cache_seqlens, int):
        seqlen_k = cache_seqlens
    else:
        seqlen_k = 0
        if isinstance(cache_seqlens, (list, tuple)):
            lens_obj, lens_t = host_int32(cache_seqlens, q, "cache_seqlens")
        else:
            lens_obj, lens_t = cache_seqlens, as_tensor(cache_seqlens, name="cache_seqlens")
        if lens_t.dtype != "int32" or lens_t.shape != (b,):
            raise CktError(f"cache_seqlens: {lens_t.dtype} {lens_t.shape}, expected int32 ({b},) (q's batch)")
        fwd_obj, fwd_lens_t = _lens_after(lens_obj, snew, q)
        keep += [lens_obj, fwd_obj]
    cbi_t = None
    if cache_batch_idx is not None:
        if isinstance(cache_batch_idx, (list, tuple)):
            cbi_obj, cbi_t = host_int32(cache_batch_idx, q, "cache_batch_idx")
        else:
            cbi_obj, cbi_t = cache_batch_idx, as_tensor(cache_batch_idx, name="cache_batch_idx")
        if cbi_t.dtype != "int32" or cbi_t.shape != (b,):
            raise CktError(f"cache_batch_idx: {cbi_t.dtype} {cbi_t.shape}, expected int32 ({b},) (q's batch)")
        keep.append(cbi_obj)

    rot = rotary_cos is not None or rotary_sin is not None
    if rot and (rotary_cos is None or rotary_sin is None):
        raise CktError(f"{'rotary_sin' if rotary_cos is not None else 'rotary_cos'}: None, but the other table is "
                       f"given")
    left, right = window if window is not None else (-1, -1)
    if rot and sq > 1 and not causal and left < 0 and right < 0:
        raise CktError("rotary_cos: without causal or a window FlashAttention puts every query at cache_seqlens; "
                       "ckt puts query i at cache_seqlens + i: pass causal=True (or one query per call)")

    stream = _stream(q, stream)
    if rot:  # q: rotated in place by the append, so a copy
        qobj, qt = copy_like(q, qt, "q")
        keep.append(qobj)
        cos_obj, cos_t = _float32_table(rotary_cos, "rotary_cos")
        sin_obj, sin_t = _float32_table(rotary_sin, "rotary_sin")
        keep += [cos_obj, sin_obj]
        if cos_t.shape != sin_t.shape:
            raise CktError(f"rotary_sin: shape {sin_t.shape} differs from rotary_cos's {cos_t.shape}")

    def cache_fields(a):
        _set_bhs(a, "k", _bhsd(kc, "bshd"))
        _set_bhs(a, "v", _bhsd(vc, "bshd"))
        a.cache_batch_idx = cbi_t.ptr if cbi_t is not None else None
        a.cache_batch = bc
        if bt is not None:
            a.page_size, a.num_pages = page_size, num_pages
            a.block_table, a.max_pages_per_seq = bt.ptr, bt.shape[1]

    # 1: append + rotate (nothing to do without new tokens or a rotation)
    if kn is not None or rot:
        a = lib.new_args("appendkv")
        a.dtype = _dtype_code(qt, "q")
        a.q, a.k_cache, a.v_cache = qt.ptr, kc.ptr, vc.ptr
        a.k_new, a.v_new = (kn.ptr, vn.ptr) if kn is not None else (None, None)
        a.batch, a.nhead_q, a.nhead_k, a.hdim_q, a.hdim_v = b, h, hk, d, dv
        a.seqlen_q, a.seqlen_knew, a.seqlen_k = sq, snew, seqlen_k
        a.cache_seqlen = capacity
        _set_bhs(a, "q", _bhsd(qt, "bshd"))
        cache_fields(a)
        if kn is not None:
            _set_bhs(a, "knew", _bhsd(kn, "bshd"))
            _set_bhs(a, "vnew", _bhsd(vn, "bshd"))
        a.seqlen_k_ptr = lens_t.ptr if lens_t is not None else None
        if rot:
            a.rotary_dim = 2 * cos_t.shape[1]
            a.rotary_interleaved = 1 if rotary_interleaved else 0
            a.rotary_cos, a.rotary_sin, a.rotary_max_pos = cos_t.ptr, sin_t.ptr, cos_t.shape[0]
        lib.call("ckt_fmha_appendkv", a, stream)

    # 2: attend over the cache in place: batch mode, entry b's keys its first len_b + s_new rows
    if out is None:
        out, ot = _alloc(q, (b, sq, h, dv), qt.dtype, "out")
    else:
        ot = as_tensor(out, name="out")
        if ot.shape != (b, sq, h, dv):
            raise CktError(f"out: shape {ot.shape}, expected {(b, sq, h, dv)} [b, s, h, d_v]")
    lse_ret = lt = None
    if return_lse:
        lse_ret, lt = _alloc(q, (b, h, sq), "float32", "lse")
    f = lib.new_args("fwd")
    f.dtype = _dtype_code(qt, "q")
    f.q, f.k, f.v, f.o = qt.ptr, kc.ptr, vc.ptr, ot.ptr
    f.batch, f.nhead_q, f.nhead_k, f.hdim_q, f.hdim_v = b, h, hk, d, dv
    f.seqlen_q = sq
    f.seqlen_k = capacity if fwd_lens_t is not None else seqlen_k + snew
    f.seqlen_k_ptr = fwd_lens_t.ptr if fwd_lens_t is not None else None
    _set_bhs(f, "q", _bhsd(qt, "bshd"))
    _set_bhs(f, "o", _bhsd(ot, "bshd"))
    cache_fields(f)
    if lt is not None:
        f.lse, f.lse_stride_b, f.lse_stride_h = lt.ptr, lt.strides[0], lt.strides[1]
    _Opts(causal, window, True, scale, softcap).set(f)
    f.sink = _check_sink(as_tensor(sink, name="sink") if sink is not None else None, h)
    if num_splits < 0:
        raise CktError(f"num_splits: {num_splits}, expected 0 (automatic), 1 (no split) or a count")
    f.num_splits = num_splits
    ws = lib.fwd_workspace_bytes(f)  # 0: the call runs unsplit
    if ws:
        ws_obj, ws_t = _alloc(q, (ws,), "uint8", "workspace")
        keep.append(ws_obj)
        f.workspace, f.workspace_bytes = ws_t.ptr, ws
    elif num_splits == 0:
        f.num_splits = 1
    lib.call("ckt_fmha_fwd", f, stream)
    del keep  # torch: the caching allocator holds the memory for the stream's queued work
    return (out, lse_ret) if return_lse else out
