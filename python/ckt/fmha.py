"""ckt's FMHA (fused multi-head attention) for Python: libckt_fmha's forward, backward and
append-KV (ckt/fmha/dispatch.h) on PyTorch tensors or any array ckt.as_tensor describes.

    import ckt
    o = ckt.fmha.attention(q, k, v, causal=True)               # q [b, sq, h, d], k/v [b, sk, h_k, d|d_v]
    o = ckt.fmha.attention(q, k, v, layout="bhsd")             # SDPA's [b, h, s, d]
    o.float().pow(2).mean().backward()                         # autograd: q.grad, k.grad, v.grad
    o = ckt.fmha.varlen(q, k, v, cu_q, cu_k, max_q, max_k)     # q [total_q, h, d] (FlashAttention's varlen)
    o = ckt.fmha.with_kvcache(q, k_cache, v_cache, k_new, v_new, cache_seqlens=lens,
                              rotary_cos=cos, rotary_sin=sin, causal=True)   # decode step

Options: sink= (attention sinks), dropout_p= / dropout_seed= / dropout_offset= (dropout; the
backward regenerates the mask), bias= (additive, broadcastable to [b, h, sq, sk]; dbias through
autograd), alibi_slopes= (ALiBi); docs/python.md.

Masks follow FlashAttention: causal, window=(left, right) (-1: unlimited). attention's
causal aligns top-left like SDPA's is_causal unless bottom_right=True; varlen and
with_kvcache align bottom-right like FlashAttention's. scale None (or 0): 1/sqrt(d);
softcap 0: none; GQA / MQA: h a multiple of h_k; fp16 / bf16, head dims multiples of 8
up to 256, and 512 (forward without the KV cache; backward on NVIDIA), q/k 576 with v 512
(forward, NVIDIA).
Failures raise ckt.CktError with the library's message, which starts with the name of
the bad argument.

torch tensors get autograd (the forward saves the LSE, the backward calls ckt_fmha_bwd),
outputs from torch's allocator and the current CUDA stream. Other inputs (numpy arrays,
__cuda_array_interface__ / __dlpack__ objects, plain buffers: host memory for the CPU
emulator build) run the same calls; outputs are numpy arrays for numpy inputs, else
ckt.Tensor descriptions of new host buffers, or the out= / lse= given. torch is never
imported here.
"""
import ctypes
import random
import sys

from . import _lib
from ._lib import CktError
from ._tensor import Tensor, as_tensor, copy_like, empty_like_kind, host_int32, is_numpy, is_torch, read_int32

__all__ = ["attention", "varlen", "with_kvcache", "attention_backward", "varlen_backward", "dropout_threshold"]

_CKT_DTYPE = {"float16": _lib.CKT_F16, "bfloat16": _lib.CKT_BF16, "float32": _lib.CKT_F32}


# >>helpers


class _Opts:
    """The mask, scaling and dropout options shared by the forward and the backward. alibi: ALiBi
    slopes are given (the mask then carries ALiBi's diagonal: see mask())."""
    __slots__ = ("causal", "window", "bottom_right", "scale", "softcap", "deterministic", "dropout_p",
                 "dropout_seed", "dropout_offset", "alibi", "seed_offset", "seed_offset_obj")

    def __init__(self, causal=False, window=None, bottom_right=False, scale=None, softcap=0.0, deterministic=False,
                 dropout_p=0.0, dropout_seed=None, dropout_offset=0, alibi=False, dropout_seed_offset=None):
        self.causal, self.window, self.bottom_right = bool(causal), window, bool(bottom_right)
        self.scale, self.softcap, self.deterministic = float(scale or 0.0), float(softcap or 0.0), bool(deterministic)
        try:
            p = float(dropout_p or 0.0)
        except (TypeError, ValueError):
            raise CktError(f"dropout_p: {dropout_p!r} is not a number") from None
        if not 0.0 <= p < 1.0:  # NaN fails too
            raise CktError(f"dropout_p: {dropout_p!r} (must be in [0, 1); 0 = no dropout)")
        self.dropout_p = p
        self.dropout_seed = None if dropout_seed is None else _u64(dropout_seed, "dropout_seed")
        self.dropout_offset = _u64(dropout_offset or 0, "dropout_offset")
        self.alibi = bool(alibi)
        # {seed, offset} in device memory, read by the kernels (CUDA graphs replay with new values)
        self.seed_offset_obj, self.seed_offset = dropout_seed_offset, None
        if dropout_seed_offset is not None:
            t = as_tensor(dropout_seed_offset, name="dropout_seed_offset")
            if t.dtype not in ("int64", "uint64") or t.shape != (2,) or t.strides[0] != 1:
                raise CktError(f"dropout_seed_offset: {t.dtype} {t.shape} strides {t.strides}, want a contiguous "
                               f"int64 / uint64 (2,) array: seed, offset")
            if self.dropout_seed is not None or self.dropout_offset:
                raise CktError("dropout_seed_offset: given with dropout_seed / dropout_offset (one or the other)")
            self.seed_offset = t

    def mask(self):
        """FlashAttention's (causal, window) -> (ckt_fmha_mask, window_left, window_right). With ALiBi
        and no mask, bottom_right gives an unlimited bottom-right window (-1, -1): no key is hidden
        but ALiBi's distances count from the bottom-right diagonal (ckt_fmha_fwd_args: ALiBi's zero
        lies on the mask's diagonal), FlashAttention's convention."""
        left, right = self.window if self.window is not None else (-1, -1)
        if left >= 0 or right >= 0:
            if self.causal:
                right = 0
            return (_lib.MASK_WINDOW_BOTTOM_RIGHT if self.bottom_right else _lib.MASK_WINDOW_TOP_LEFT), left, right
        if self.causal:
            return (_lib.MASK_CAUSAL_BOTTOM_RIGHT if self.bottom_right else _lib.MASK_CAUSAL_TOP_LEFT), 0, 0
        if self.alibi and self.bottom_right:
            return _lib.MASK_WINDOW_BOTTOM_RIGHT, -1, -1
        return _lib.MASK_NONE, 0, 0

    def resolve_seed(self, like):
        """A drawn seed when dropout is on and none was given: torch's default generator for torch
        tensors (torch.manual_seed makes it reproducible), else Python's random (random.seed)."""
        if self.dropout_p > 0.0 and self.dropout_seed is None and self.seed_offset is None:
            if is_torch(like):
                torch = sys.modules["torch"]
                self.dropout_seed = int(torch.randint(-2 ** 63, 2 ** 63 - 1, (1,), dtype=torch.int64).item()) % 2 ** 64
            else:
                self.dropout_seed = random.getrandbits(64)

    def set(self, a):
        a.mask, a.window_left, a.window_right = self.mask()
        a.scale, a.softcap = self.scale, self.softcap
        if self.dropout_p > 0.0 and self.seed_offset is not None:
            a.p_drop, a.drop_seed_offset = self.dropout_p, self.seed_offset.ptr
        elif self.dropout_p > 0.0:
            if self.dropout_seed is None:  # the backward: it must regenerate the forward's mask
                raise CktError("dropout_seed: None with dropout_p > 0 in a backward: pass the forward's seed "
                               "(and offset) so that the same dropout mask is regenerated")
            a.p_drop, a.drop_seed, a.drop_offset = self.dropout_p, self.dropout_seed, self.dropout_offset


def _u64(x, name):
    try:
        v = int(x)
    except (TypeError, ValueError):
        raise CktError(f"{name}: {x!r} is not an integer") from None
    if v != x or not 0 <= v < 2 ** 64:
        raise CktError(f"{name}: {x!r} (must be an integer in [0, 2**64))")
    return v


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


def _bias_strides(t, want, q_dtype, name="bias", keys_at_least=False):
    """(stride_b, stride_h, stride_s) of an additive bias t (a description) broadcastable to want =
    (b, h, s_q, s_k): 2 to 4 dims aligned on the right (numpy / torch broadcasting), a dim of size
    1 (or a missing one) broadcasts through stride 0 except the key dim, which needs unit stride.
    keys_at_least: the key dim may be longer than s_k (with_kvcache: any row width >= the keys)."""
    if t.dtype != q_dtype:
        raise CktError(f"{name}: dtype {t.dtype}, q is {q_dtype} (the bias is added in q's dtype: convert it)")
    if not 2 <= t.ndim <= 4:
        raise CktError(f"{name}: shape {t.shape}: expected 2 to 4 dims broadcastable to [b, h, s_q, s_k] {want}")
    pad = 4 - t.ndim
    shape, strides = (1,) * pad + t.shape, (0,) * pad + t.strides
    nk, wk = shape[3], want[3]
    if (nk < wk) if keys_at_least else (nk != wk and wk > 0):
        why = "at least" if keys_at_least else ("not broadcastable (unit stride on keys)" if nk == 1 else "expected")
        raise CktError(f"{name}: shape {t.shape}: key dim {nk}, {why} {wk} [b, h, s_q, s_k] {want}")
    if wk > 1 and strides[3] != 1:
        raise CktError(f"{name}: strides {t.strides}: the key dim must have stride 1")
    out = []
    for d, what in enumerate(("batch", "heads", "queries")):
        if shape[d] == want[d]:
            out.append(strides[d] if want[d] > 1 else 0)
        elif shape[d] == 1:
            out.append(0)
        else:
            raise CktError(f"{name}: shape {t.shape}: {what} {shape[d]} is neither 1 nor {want[d]} "
                           f"(broadcastable to [b, h, s_q, s_k] {want})")
        if out[-1] < 0:
            raise CktError(f"{name}: strides {t.strides}: negative")
    return tuple(out)


def _set_bias(a, bias, alibi, keys_at_least=False):
    """The bias (a description broadcastable to [batch, nhead_q, seqlen_q, seqlen_k] of a) or the
    ALiBi slopes (float32 [h] or [b, h]) into a (fwd or bwd args); keys_at_least as in
    _bias_strides."""
    if bias is not None and alibi is not None:
        raise CktError("alibi_slopes: given together with bias (one additive bias a call: add the ALiBi terms "
                       "into the bias tensor)")
    want = (a.batch, a.nhead_q, a.seqlen_q, a.seqlen_k)
    if bias is not None:
        a.bias = bias.ptr
        a.bias_stride_b, a.bias_stride_h, a.bias_stride_s = _bias_strides(
            bias, want, {_lib.CKT_F16: "float16", _lib.CKT_BF16: "bfloat16"}.get(a.dtype), "bias", keys_at_least)
    if alibi is not None:
        if alibi.dtype != "float32":
            raise CktError(f"alibi_slopes: dtype {alibi.dtype}, want float32 ([h] or [b, h])")
        if alibi.shape == (a.nhead_q,):
            sb = 0
        elif alibi.ndim == 2 and alibi.shape[1] == a.nhead_q and alibi.shape[0] in (1, a.batch):
            sb = alibi.strides[0] if alibi.shape[0] > 1 else 0
        else:
            raise CktError(f"alibi_slopes: shape {alibi.shape}, want ({a.nhead_q},) or ({a.batch}, {a.nhead_q}) "
                           f"([h] or [b, h])")
        if a.nhead_q > 1 and alibi.strides[-1] != 1:
            raise CktError(f"alibi_slopes: strides {alibi.strides}: the head dim must have stride 1")
        if sb < 0:
            raise CktError(f"alibi_slopes: strides {alibi.strides}: negative")
        a.alibi_slopes, a.alibi_stride_b = alibi.ptr, sb


def fwd_call(lib, q, k, v, o, lse, opts, group=None, layout="bhsd", stream=None, sink=None, bias=None,
             alibi_slopes=None, randval=None):
    """ckt_fmha_fwd on descriptions (ckt.Tensor): batch mode q / k / v / o in layout, lse [b, h, sq]
    float32 or None; group mode (group: _Group) q [total_q, h, d], lse [h, total_q]. sink: float32
    [h] attention sinks (one logit per query head joining each row's softmax denominator) or None.
    bias: q's dtype, broadcastable to [b, h, sq, sk] (group mode: [batch, h, max_q, max_k], in-entry
    positions); alibi_slopes: float32 [h] or [b, h]; randval: uint8 [b, h, sq, sk] (group mode
    [batch, h, max_q, max_k]) receiving the dropout bytes (needs opts.dropout_p > 0)."""
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
    _set_bias(a, bias, alibi_slopes)
    if randval is not None:
        if opts.dropout_p == 0.0:
            raise CktError("return_dropout_randval: needs dropout_p > 0 (no dropout: no random bytes)")
        want = (a.batch, a.nhead_q, a.seqlen_q, a.seqlen_k)
        if randval.dtype != "uint8" or randval.shape != want or (want[3] > 1 and randval.strides[3] != 1):
            raise CktError(f"randval: {randval.dtype} {randval.shape} strides {randval.strides}, want uint8 {want} "
                           f"with unit stride on keys")
        a.randval = randval.ptr
        a.randval_stride_b, a.randval_stride_h, a.randval_stride_s = randval.strides[:3]
    lib.call("ckt_fmha_fwd", a, stream)
    return a


def bwd_call(lib, q, k, v, o, do, lse, dq, dk, dv, opts, group=None, layout="bhsd", stream=None, workspace=None,
             sink=None, dsink=None, bias=None, alibi_slopes=None, dbias=None):
    """ckt_fmha_bwd on descriptions: the shapes of fwd_call, do like o, dq / dk / dv like q / k / v;
    sink / dsink: the forward's attention sinks and their gradient (float32 [h]; dsink needs sink).
    bias / alibi_slopes: the forward's; dbias: the bias's gradient, a full [b, h, sq, sk] (group
    mode [batch, h, max_q, max_k]) of q's dtype, no broadcast (needs bias). opts carries the
    forward's dropout (p, seed, offset): the same mask is regenerated.
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
    _set_bias(a, bias, alibi_slopes)
    if dbias is not None:
        if bias is None:
            raise CktError("dbias: given, but bias is None (the gradient of which bias? ALiBi has none)")
        want = (a.batch, a.nhead_q, a.seqlen_q, a.seqlen_k)
        if dbias.dtype != q.dtype or dbias.shape != want or (want[3] > 1 and dbias.strides[3] != 1):
            raise CktError(f"dbias: {dbias.dtype} {dbias.shape} strides {dbias.strides}, want {q.dtype} {want} "
                           f"with unit stride on keys (a full gradient: no broadcast dims)")
        a.dbias = dbias.ptr
        a.dbias_stride_b, a.dbias_stride_h, a.dbias_stride_s = dbias.strides[:3]
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
            def forward(ctx, q, k, v, sink, bias, spec, want_randval):
                q, k, v = _kernel_ready(q), _kernel_ready(k), _kernel_ready(v)
                sink = sink.contiguous() if sink is not None else None
                # the dropout bytes are no output of the graph: spec.randval (read by _run)
                o, lse, spec.randval = spec.forward(q, k, v, None, None, need_lse=True, sink=sink, bias=bias,
                                                    want_randval=want_randval)
                ctx.save_for_backward(q, k, v, o, lse, sink, bias)
                ctx.spec = spec
                ctx.mark_non_differentiable(lse)
                return o, lse

            @staticmethod
            def backward(ctx, do, _dlse):
                q, k, v, o, lse, sink, bias = ctx.saved_tensors
                do = torch.zeros_like(o) if do is None else _kernel_ready(do)  # only the LSE was used
                want_dsink = sink is not None and ctx.needs_input_grad[3]
                want_dbias = bias is not None and ctx.needs_input_grad[4]
                dq, dk, dv, dsink, dbias = ctx.spec.backward(q, k, v, o, do, lse, sink=sink, want_dsink=want_dsink,
                                                             bias=bias, want_dbias=want_dbias)
                return dq, dk, dv, dsink, dbias, None, None

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

    def __init__(self, lib, opts, layout="bhsd", group=None, group_objs=(), stream=None, alibi_slopes=None):
        self.lib, self.opts, self.layout, self.group, self.stream = lib, opts, layout, group, stream
        self.group_objs = group_objs  # keeps the arrays behind group alive
        self.alibi_slopes = alibi_slopes  # the caller's object (no gradient)
        self.randval = None  # the autograd forward's dropout bytes, when asked for

    def _scores_shape(self, qt, kt):
        """[b, h, sq, sk] of the scores (group mode: [batch, h, max_q, max_k]), the bias's and the
        dropout bytes' shape."""
        if self.group is None:
            b, h, sq, _, _, sk, _ = _check_batch(self.layout, qt, kt, kt)
            return b, h, sq, sk
        return self.group.seqstart_q.shape[0] - 1, qt.shape[1], self.group.max_q, self.group.max_k

    def forward(self, q, k, v, out, lse, need_lse, sink=None, bias=None, want_randval=False):
        """(out, lse, randval): lse when need_lse or given, randval (uint8 [b, h, sq, sk], the dropout
        bytes) when want_randval, else None."""
        qt, kt, vt = as_tensor(q, name="q"), as_tensor(k, name="k"), as_tensor(v, name="v")
        st = as_tensor(sink, name="sink") if sink is not None else None
        bt = as_tensor(bias, name="bias") if bias is not None else None
        at = as_tensor(self.alibi_slopes, name="alibi_slopes") if self.alibi_slopes is not None else None
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
        randval = rt = None
        if want_randval:
            if self.opts.dropout_p == 0.0:
                raise CktError("return_dropout_randval: needs dropout_p > 0 (no dropout: no random bytes)")
            randval, rt = _zeros(q, self._scores_shape(qt, kt), "uint8", "randval")
        fwd_call(self.lib, qt, kt, vt, ot, lt, self.opts, self.group, self.layout, _stream(q, self.stream), st, bt,
                 at, rt)
        return out, lse, randval

    def backward(self, q, k, v, o, do, lse, dq=None, dk=None, dv=None, sink=None, want_dsink=False, dsink=None,
                 bias=None, want_dbias=False, dbias=None):
        """(dq, dk, dv, dsink, dbias): dsink (float32 [h]) when want_dsink or given, dbias (the bias's
        shape and dtype) when want_dbias or given, else None. A broadcast bias's gradient is computed
        in full and summed over its broadcast dims (torch tensors and numpy arrays)."""
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
        bt = as_tensor(bias, name="bias") if bias is not None else None
        at = as_tensor(self.alibi_slopes, name="alibi_slopes") if self.alibi_slopes is not None else None
        dbt = full = None
        if dbias is not None:
            dbt = as_tensor(dbias, name="dbias")
        elif want_dbias:
            if bias is None:
                raise CktError("dbias: needs bias (the gradient of which bias? ALiBi has none)")
            # full [b, h, sq, sk], zeroed: the library writes the logical elements (not group-mode padding)
            full, dbt = _zeros(q, self._scores_shape(ts[0], ts[1]), bt.dtype, "dbias")
        bwd_call(self.lib, *ts, *(gt for _, gt in grads), self.opts, self.group, self.layout,
                 _stream(q, self.stream), workspace, st, dst, bt, at, dbt)
        if full is not None:
            dbias = _sum_to(full, bt)
        return tuple(g for g, _ in grads) + (dsink, dbias)


def _zeros(like, shape, dtype, name):
    """(object, description) of new zeroed memory of like's kind (see _alloc)."""
    obj, t = _alloc(like, shape, dtype, name)
    if is_torch(obj):
        obj.zero_()
    elif is_numpy(obj):
        obj.fill(0)
    elif t.device[0] == "cpu":
        ctypes.memset(t.ptr, 0, t.numel() * t.itemsize)
    else:
        raise CktError(f"{name}: cannot clear {t.device[0]} memory here: pass {name}=")
    return obj, t


def _sum_to(full, bt):
    """full, the [b, h, sq, sk] gradient of a bias that broadcasts (its described shape bt.shape,
    2 to 4 dims, some of size 1), summed over the broadcast dims into the bias's shape (fp32 sums)."""
    shape4 = (1,) * (4 - bt.ndim) + bt.shape
    axes = tuple(d for d in range(4) if shape4[d] == 1 and full.shape[d] != 1)
    if not axes:  # only missing leading dims: the same memory
        if isinstance(full, Tensor):
            return Tensor(full.ptr, bt.shape, full.dtype, None, full.device, full.owner)
        return full.reshape(bt.shape)
    if is_torch(full):
        return full.float().sum(dim=axes, keepdim=True).to(full.dtype).reshape(bt.shape)
    if is_numpy(full) and bt.dtype == "float16":
        import numpy as np
        return full.astype(np.float32).sum(axis=axes, keepdims=True).astype(np.float16).reshape(bt.shape)
    raise CktError(f"bias: shape {bt.shape} broadcasts: its gradient needs a sum over the broadcast dims, done "
                   f"here for torch tensors and float16 numpy arrays only: pass a full [b, h, s_q, s_k] bias or "
                   f"dbias=")


def _prep_bias(bias):
    """A torch bias the library can read: unit stride on keys (else a copy, through autograd)."""
    if is_torch(bias) and bias.dim() >= 1 and bias.shape[-1] > 1 and bias.stride(-1) != 1:
        return bias.contiguous()
    return bias


def _run(spec, q, k, v, out, lse, return_lse, sink=None, bias=None, return_randval=False):
    bias = _prep_bias(bias)
    spec.opts.resolve_seed(q)  # one seed for the forward and autograd's backward
    if _needs_grad(q, k, v, sink, bias):
        if out is not None or lse is not None:
            raise CktError("out / lse: not with autograd (inputs that require grad)")
        o, lse = _autograd_function().apply(q, k, v, sink, bias, spec, return_randval)
        randval = spec.randval
    else:
        o, lse, randval = spec.forward(q, k, v, out, lse, need_lse=return_lse, sink=sink, bias=bias,
                                       want_randval=return_randval)
    res = (o,) + ((lse,) if return_lse else ()) + ((randval,) if return_randval else ())
    return res if len(res) > 1 else o


# >>the API


def attention(q, k, v, causal=False, window=None, softcap=0.0, scale=None, layout="bshd", deterministic=False,
              bottom_right=False, return_lse=False, out=None, lse=None, stream=None, lib=None, sink=None,
              dropout_p=0.0, dropout_seed=None, dropout_offset=0, return_dropout_randval=False, bias=None,
              alibi_slopes=None, dropout_seed_offset=None):
    """softmax(q k^T * scale) v per head, with gradients through torch.autograd for torch tensors.

    layout "bshd": q [b, sq, h, d], k [b, sk, h_k, d], v [b, sk, h_k, d_v] (FlashAttention's
    flash_attn_func), output [b, sq, h, d_v]; "bhsd": SDPA's [b, h, s, d], output [b, h, sq, d_v].
    causal: top-left aligned (SDPA's is_causal) unless bottom_right (FlashAttention's);
    window (left, right), -1 unlimited; scale None: 1/sqrt(d); softcap 0: none.
    deterministic: the backward is bitwise reproducible. return_lse: also the log-sum-exp,
    [b, h, sq] float32 (natural log). out / lse: outputs to write (no autograd).
    sink: attention sinks (gpt-oss), float32 [h]: a learned logit per query head that joins every
    row's softmax denominator (LSE = log(exp(sink) + sum exp(s))); its gradient flows through
    autograd when it requires grad.

    dropout_p: FlashAttention's dropout on the probabilities, O = (P o Z / (1 - p)) V, applied
    whenever > 0 (pass 0 in evaluation); the keep mask Z is a pure function of (dropout_seed,
    dropout_offset, b, h, i, j) (Philox4x32-10, ckt/fmha/dropout.h), so autograd's backward
    regenerates it. dropout_seed None: drawn from torch's default generator (torch inputs) or
    Python's random; pass it (and dropout_offset) to call attention_backward yourself.
    dropout_seed_offset: instead, a device int64 / uint64 [2] tensor {seed, offset} read by the
    kernels (CUDA graphs: write new values before a replay); it must hold the same values when
    the backward runs.
    return_dropout_randval: also the random byte of every element, uint8 [b, h, sq, sk] (kept
    where >= dropout_threshold(dropout_p); elements the mask hides may be 0), appended to the
    outputs (after the LSE).

    bias: an additive bias of the scaled logits, of q's dtype, broadcastable to [b, h, sq, sk]
    (2 to 4 dims; size-1 or missing batch / head / query dims broadcast; the key dim is sk with
    unit stride). Its gradient (autograd, when it requires grad) is computed in full and summed
    over the broadcast dims. alibi_slopes: ALiBi, float32 [h] or [b, h]: -slope * |j - i - off|
    added, off the mask's diagonal offset (0 top-left, sk - sq with bottom_right). Not both; not
    with softcap."""
    _check_layout(layout)
    opts = _Opts(causal, window, bottom_right, scale, softcap, deterministic, dropout_p, dropout_seed, dropout_offset,
                 alibi_slopes is not None, dropout_seed_offset)
    spec = _Spec(lib or _lib.library(), opts, layout, stream=stream, alibi_slopes=alibi_slopes)
    return _run(spec, q, k, v, out, lse, return_lse, sink, bias, return_dropout_randval)


def _grads(g, sink, want_dbias):
    """attention_backward's result: (dq, dk, dv), then dsink with sink, then dbias when asked for."""
    return g[:3] + ((g[3],) if sink is not None else ()) + ((g[4],) if want_dbias else ())


def attention_backward(q, k, v, o, do, lse, causal=False, window=None, softcap=0.0, scale=None, layout="bshd",
                       deterministic=False, bottom_right=False, dq=None, dk=None, dv=None, stream=None, lib=None,
                       sink=None, dsink=None, dropout_p=0.0, dropout_seed=None, dropout_offset=0, bias=None,
                       alibi_slopes=None, return_dbias=False, dbias=None, dropout_seed_offset=None):
    """The gradients (dq, dk, dv) of attention(..., return_lse=True), given its o, lse and the output's
    gradient do, with the forward's options: the backward without autograd (any inputs). With the
    forward's sink: (dq, dk, dv, dsink), dsink float32 [h] (written into dsink= when given).
    Dropout: the forward's dropout_p, dropout_seed and dropout_offset (the seed is required), or
    its dropout_seed_offset.
    bias / alibi_slopes: the forward's; return_dbias (or dbias= given, a full [b, h, sq, sk] of
    q's dtype): the bias's gradient appended (last), of the bias's shape (a broadcast bias's summed
    over the broadcast dims: torch tensors and float16 numpy arrays)."""
    _check_layout(layout)
    opts = _Opts(causal, window, bottom_right, scale, softcap, deterministic, dropout_p, dropout_seed, dropout_offset,
                 alibi_slopes is not None, dropout_seed_offset)
    spec = _Spec(lib or _lib.library(), opts, layout, stream=stream, alibi_slopes=alibi_slopes)
    want_dbias = return_dbias or dbias is not None
    g = spec.backward(q, k, v, o, do, lse, dq, dk, dv, sink=sink, want_dsink=sink is not None, dsink=dsink,
                      bias=_prep_bias(bias), want_dbias=want_dbias, dbias=dbias)
    return _grads(g, sink, want_dbias)


def _varlen_spec(q, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q, seqused_k, opts, stream,
                 lib, alibi_slopes=None):
    arrs = [as_tensor(x, name=n) if x is not None else None
            for x, n in ((cu_seqlens_q, "cu_seqlens_q"), (cu_seqlens_k, "cu_seqlens_k"), (seqused_q, "seqused_q"),
                         (seqused_k, "seqused_k"))]
    group = _Group(arrs[0], arrs[1], max_seqlen_q, max_seqlen_k, arrs[2], arrs[3])
    return _Spec(lib or _lib.library(), opts, group=group, group_objs=(cu_seqlens_q, cu_seqlens_k, seqused_q,
                                                                       seqused_k), stream=stream,
                 alibi_slopes=alibi_slopes)


def varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=False, window=None, softcap=0.0,
           scale=None, deterministic=False, bottom_right=True, seqused_q=None, seqused_k=None, return_lse=False,
           out=None, lse=None, stream=None, lib=None, sink=None, dropout_p=0.0, dropout_seed=None, dropout_offset=0,
           return_dropout_randval=False, bias=None, alibi_slopes=None, dropout_seed_offset=None):
    """Variable-length attention, FlashAttention's flash_attn_varlen_func convention: sequences packed
    along the first dim, q [total_q, h, d], k [total_k, h_k, d], v [total_k, h_k, d_v], output
    [total_q, h, d_v]; cu_seqlens_q / _k: int32 [batch + 1] cumulative starts, in device memory;
    max_seqlen_*: the longest sequence. seqused_q / _k (optional, int32 [batch]): logical lengths
    shorter than the packed ones. causal / window align bottom-right (per sequence) like
    FlashAttention's unless bottom_right=False. return_lse: also the LSE, [h, total_q] float32.
    Autograd for torch tensors, like attention; sink, dropout and ALiBi like attention's. bias
    (and the dropout bytes) are indexed per sequence and in-sequence position, not packed:
    broadcastable to [batch, h, max_seqlen_q, max_seqlen_k] (the gradient's padding is 0)."""
    opts = _Opts(causal, window, bottom_right, scale, softcap, deterministic, dropout_p, dropout_seed, dropout_offset,
                 alibi_slopes is not None, dropout_seed_offset)
    spec = _varlen_spec(q, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q, seqused_k, opts,
                        stream, lib, alibi_slopes)
    return _run(spec, q, k, v, out, lse, return_lse, sink, bias, return_dropout_randval)


def varlen_backward(q, k, v, o, do, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=False,
                    window=None, softcap=0.0, scale=None, deterministic=False, bottom_right=True, seqused_q=None,
                    seqused_k=None, dq=None, dk=None, dv=None, stream=None, lib=None, sink=None, dsink=None,
                    dropout_p=0.0, dropout_seed=None, dropout_offset=0, bias=None, alibi_slopes=None,
                    return_dbias=False, dbias=None, dropout_seed_offset=None):
    """The gradients (dq, dk, dv) of varlen(..., return_lse=True) without autograd; with the
    forward's sink, (dq, dk, dv, dsink); dropout, bias, ALiBi and dbias like attention_backward
    (dbias [batch, h, max_seqlen_q, max_seqlen_k])."""
    opts = _Opts(causal, window, bottom_right, scale, softcap, deterministic, dropout_p, dropout_seed, dropout_offset,
                 alibi_slopes is not None, dropout_seed_offset)
    spec = _varlen_spec(q, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q, seqused_k, opts,
                        stream, lib, alibi_slopes)
    want_dbias = return_dbias or dbias is not None
    g = spec.backward(q, k, v, o, do, lse, dq, dk, dv, sink=sink, want_dsink=sink is not None, dsink=dsink,
                      bias=_prep_bias(bias), want_dbias=want_dbias, dbias=dbias)
    return _grads(g, sink, want_dbias)


def dropout_threshold(dropout_p):
    """The byte below which an element is dropped: round(dropout_p * 256) (computed in float32 like
    the kernels: the drop probability is quantized to 1/256; kept values are scaled by
    1 / (1 - dropout_p)). keep = randval >= dropout_threshold(p) for return_dropout_randval's bytes."""
    p = _Opts(dropout_p=dropout_p).dropout_p
    f = ctypes.c_float(ctypes.c_float(p).value * 256.0).value
    return int(ctypes.c_float(f + 0.5).value) if p > 0 else 0


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


_INT32_MAX = 2**31 - 1


def _sglang_tables(indptr, indices, last, b, like, keep):
    """None without sglang-style tables, else their Tensors (indptr [b + 1], indices [n], last [b],
    int32; lists are copied to memory like q's, kept alive in keep)."""
    given = {"kv_indptr": indptr, "kv_indices": indices, "kv_last_page_len": last}
    if all(v is None for v in given.values()):
        return None
    ts = []
    for name, x in given.items():
        if x is None:
            other = next(n for n, v in given.items() if v is not None)
            raise CktError(f"{name}: None, but {other} is given (sglang's tables come as three)")
        obj, t = host_int32(x, like, name) if isinstance(x, (list, tuple)) else (x, as_tensor(x, name=name))
        want = {"kv_indptr": b + 1, "kv_last_page_len": b}.get(name)
        if t.dtype != "int32" or t.ndim != 1 or not t.is_contiguous() or (want is not None and t.shape[0] != want):
            raise CktError(f"{name}: {t.dtype} {t.shape}, expected contiguous int32 "
                           f"({want if want is not None else 'n'},)")
        keep.append(obj)
        ts.append(t)
    return ts


def with_kvcache(q, k_cache, v_cache, k_new=None, v_new=None, cache_seqlens=None, rotary_cos=None, rotary_sin=None,
                 rotary_interleaved=True, cache_batch_idx=None, block_table=None, causal=False, window=None,
                 softcap=0.0, scale=None, num_splits=0, return_lse=False, out=None, stream=None, lib=None, sink=None,
                 bias=None, alibi_slopes=None, kv_indptr=None, kv_indices=None, kv_last_page_len=None,
                 max_seqlen_k=None):
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
    bias: q's dtype, broadcastable to [b, h, sq, n] with n at least the keys any entry may have
    (the cache's capacity: s_cache, or max_pages * page_size when paged; cache_seqlens + s_new
    for an int cache_seqlens), indexed by entry b and key position j in the sequence (whatever
    page holds it). alibi_slopes: float32 [h] or [b, h], distances from the bottom-right diagonal
    (FlashAttention's: -slope * |i + len - sq - j|). No gradients here.

    sglang-style page tables instead of block_table and cache_seqlens: kv_indptr int32 [b + 1],
    kv_indices int32 [n], kv_last_page_len int32 [b], describing the cache AFTER the append (entry
    b's pages kv_indices[kv_indptr[b]:kv_indptr[b + 1]], its keys (pages - 1) * page_size +
    kv_last_page_len[b], the s_new new ones included; the pool as with block_table). No
    cache_batch_idx. max_seqlen_k: the most keys of an entry (read from host tables; for device
    tensors, without it, bounded by len(kv_indices) * page_size: the split heuristic then sees that
    many keys, and bias must be that wide).

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
    sgl = _sglang_tables(kv_indptr, kv_indices, kv_last_page_len, b, q, keep)
    if sgl is not None:
        for name, given in (("block_table", block_table), ("cache_seqlens", cache_seqlens),
                            ("cache_batch_idx", cache_batch_idx)):
            if given is not None:
                raise CktError(f"{name}: given with kv_indptr / kv_indices / kv_last_page_len (sglang's tables "
                               f"select the pages and give the lengths, the new tokens included)")
        page_size, num_pages, bc = kd["s"], kd["b"], b
        if not any(is_torch(x) for x in (kv_indptr, kv_last_page_len)):  # host tables: read them
            ip, lp = read_int32(kv_indptr, "kv_indptr"), read_int32(kv_last_page_len, "kv_last_page_len")
            if ip[-1] > sgl[1].shape[0]:
                raise CktError(f"kv_indptr: [{b}] = {ip[-1]} is past kv_indices' {sgl[1].shape[0]} entries")
            if max_seqlen_k is None:
                max_seqlen_k = max([(ip[i + 1] - ip[i] - 1) * page_size + lp[i] if ip[i + 1] > ip[i] else 0
                                    for i in range(b)] + [0])
        elif max_seqlen_k is None:  # device tables, never read back: a bound
            max_seqlen_k = min(sgl[1].shape[0] * page_size, _INT32_MAX)
        if not 0 <= max_seqlen_k <= _INT32_MAX:
            raise CktError(f"max_seqlen_k: {max_seqlen_k} is outside [0, 2^31 - 1]")
        capacity = max_seqlen_k
    elif max_seqlen_k is not None:
        raise CktError("max_seqlen_k: given without kv_indptr / kv_indices / kv_last_page_len (it bounds sglang "
                       "tables' lengths; cache_seqlens gives the others)")
    elif block_table is not None:
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
    if sgl is not None:
        seqlen_k = capacity
    elif cache_seqlens is None:
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
        if sgl is not None:
            a.page_size, a.num_pages = page_size, num_pages
            a.kv_indptr, a.kv_indices, a.kv_last_page_len = (t.ptr for t in sgl)

    # 1: append + rotate (nothing to do without new tokens or a rotation)
    if kn is not None or rot:
        a = lib.new_args("appendkv")
        a.dtype = _dtype_code(qt, "q")
        a.q, a.k_cache, a.v_cache = qt.ptr, kc.ptr, vc.ptr
        a.k_new, a.v_new = (kn.ptr, vn.ptr) if kn is not None else (None, None)
        a.batch, a.nhead_q, a.nhead_k, a.hdim_q, a.hdim_v = b, h, hk, d, dv
        a.seqlen_q, a.seqlen_knew, a.seqlen_k = sq, snew, 0 if sgl is not None else seqlen_k
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
    f.seqlen_k = capacity if fwd_lens_t is not None or sgl is not None else seqlen_k + snew
    f.seqlen_k_ptr = fwd_lens_t.ptr if fwd_lens_t is not None else None
    _set_bhs(f, "q", _bhsd(qt, "bshd"))
    _set_bhs(f, "o", _bhsd(ot, "bshd"))
    cache_fields(f)
    if lt is not None:
        f.lse, f.lse_stride_b, f.lse_stride_h = lt.ptr, lt.strides[0], lt.strides[1]
    _Opts(causal, window, True, scale, softcap, alibi=alibi_slopes is not None).set(f)
    f.sink = _check_sink(as_tensor(sink, name="sink") if sink is not None else None, h)
    bias = _prep_bias(bias)  # kept alive to the call's end (a torch copy when the key stride is not 1)
    _set_bias(f, _given(bias, "bias"), _given(alibi_slopes, "alibi_slopes"), keys_at_least=True)
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
