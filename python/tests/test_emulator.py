"""The ckt package on the CPU emulator build of libckt_fmha, without torch: numpy arrays,
__dlpack__ objects and plain ctypes buffers in host memory ("device" memory on the emulator),
against a float64 numpy reference (ckt/fmha/args.h's formulas).

    python3 python/tests/test_emulator.py -v      # ckt importable (the wheel installed, or
                                                  # PYTHONPATH=python with $CKT_FMHA_LIB set)

tests/python/wheel_test.sh runs it in a fresh venv with the wheel installed (bazel test //tests/python/...).
"""
import ctypes
import math
import os
import unittest

import numpy as np

import ckt
from ckt import _lib

RNG = np.random.default_rng(1234)


# >>references (float64; bhsd)


def additive(b, h, sq, sk, bias=None, alibi=None, bottom_right=False):
    """The float64 [b, h, sq, sk] (broadcast) term added to the scaled logits: bias (broadcastable
    to [b, h, sq, sk], any float dtype; bf16 as uint16 bits) or ALiBi -slope * |j - i - off| with
    slopes [h] or [b, h] and off the mask's diagonal offset (0 top-left, sk - sq bottom-right)."""
    if bias is not None:
        x = from_bf16(bias) if np.asarray(bias).dtype == np.uint16 else bias
        return np.broadcast_to(np.asarray(x, np.float64), (b, h, sq, sk))
    if alibi is not None:
        sl = np.asarray(alibi, np.float64)
        sl = np.broadcast_to(sl.reshape((1,) * (2 - sl.ndim) + sl.shape), (b, h))[..., None, None]
        off = sk - sq if bottom_right else 0
        return -sl * np.abs(np.arange(sk)[None, :] - np.arange(sq)[:, None] - off)
    return 0.0


def ref_attention(q, k, v, causal=False, window=None, bottom_right=False, scale=None, softcap=0.0, sink=None,
                  bias=None, alibi=None, keep=None, p_drop=0.0):
    """O [b, h, sq, dv] and LSE [b, h, sq] of ckt/fmha/args.h; q [b, h, sq, d], k [b, hk, sk, d];
    sink [h]: attention sinks joining each row's denominator; bias / alibi: see additive();
    keep (bool [b, h, sq, sk]) and p_drop: dropout, O = (P o keep / (1 - p)) V, LSE unchanged."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    b, h, sq, d = q.shape
    hk, sk = k.shape[1], k.shape[2]
    k, v = np.repeat(k, h // hk, axis=1), np.repeat(v, h // hk, axis=1)
    scale = scale or 1.0 / math.sqrt(d)
    s = q @ k.transpose(0, 1, 3, 2) * scale
    if softcap:
        s = softcap * np.tanh(s / softcap)
    s = s + additive(b, h, sq, sk, bias, alibi, bottom_right)
    left, right = window if window is not None else (-1, -1)
    if causal:
        right = 0
    off = sk - sq if bottom_right else 0
    i, j = np.arange(sq)[:, None], np.arange(sk)[None, :]
    rel = j - i - off
    vis = np.ones((sq, sk), bool)
    if left >= 0:
        vis &= rel >= -left
    if right >= 0:
        vis &= rel <= right
    s = np.where(vis, s, -np.inf)
    m = s.max(-1, keepdims=True, initial=-np.inf)
    sk_ = None
    if sink is not None:
        sk_ = np.broadcast_to(np.asarray(sink, np.float64)[None, :, None, None], m.shape)
        m = np.maximum(m, sk_)
    m = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - m)
    l = p.sum(-1, keepdims=True)
    if sk_ is not None:
        l = l + np.exp(sk_ - m)
    if keep is not None:
        p = p * keep / (1.0 - p_drop)  # after the row sum: the LSE is the undropped one
    o = np.where(l > 0, (p @ v) / np.where(l > 0, l, 1), 0.0)
    lse = np.where(l[..., 0] > 0, m[..., 0] + np.log(np.where(l > 0, l, 1)[..., 0]), -np.inf)
    return o, lse


def ref_backward(q, k, v, o, do, lse, causal=False, scale=None, bottom_right=False, bias=None, alibi=None, keep=None,
                 p_drop=0.0, want_ds=False):
    """dq, dk, dv of ref_attention (no soft-cap, no window), with the kernel's o and lse; bias /
    alibi / keep / p_drop as there. want_ds: also dS [b, h, sq, sk], the gradient of the scaled
    logits (= dbias)."""
    q, k, v, o, do = (np.asarray(x, np.float64) for x in (q, k, v, o, do))
    b, h, sq, d = q.shape
    hk, sk = k.shape[1], k.shape[2]
    g = h // hk
    kk, vv = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    scale = scale or 1.0 / math.sqrt(d)
    s = q @ kk.transpose(0, 1, 3, 2) * scale + additive(b, h, sq, sk, bias, alibi, bottom_right)
    if causal:
        off = sk - sq if bottom_right else 0
        s = np.where(np.arange(sk)[None, :] - np.arange(sq)[:, None] - off <= 0, s, -np.inf)
    p = np.exp(s - lse[..., None])
    zs = keep / (1.0 - p_drop) if keep is not None else 1.0
    dvv = (p * zs).transpose(0, 1, 3, 2) @ do
    dp = zs * (do @ vv.transpose(0, 1, 3, 2))
    dd = (do * o).sum(-1, keepdims=True)
    ds = p * (dp - dd)
    dq = scale * ds @ kk
    dkk = scale * ds.transpose(0, 1, 3, 2) @ q
    fold = lambda x: x.reshape(b, hk, g, sk, -1).sum(2)
    return (dq, fold(dkk), fold(dvv)) + ((ds,) if want_ds else ())


def philox4x32_10(c, k0, k1):
    """Philox4x32-10 (Salmon et al., SC 2011) on uint64 arrays holding 32-bit words: counters c
    (4 arrays), key (k0, k1); the 4 output words."""
    m32 = np.uint64(0xFFFFFFFF)
    c0, c1, c2, c3 = (np.asarray(x, np.uint64) for x in c)
    k0, k1 = np.uint64(k0), np.uint64(k1)
    for _ in range(10):
        p0, p1 = np.uint64(0xD2511F53) * c0, np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & m32, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & m32
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & m32, (k1 + np.uint64(0xBB67AE85)) & m32
    return c0, c1, c2, c3


def ref_randval(seed, offset, b, h, sq, sk, entries=None):
    """The dropout bytes uint8 [b, h, sq, sk] of ckt/fmha/dropout.h: element (b, h, i, j) takes byte
    j % 16 (little-endian in word (j % 16) / 4) of Philox(counter {j / 16, i, b * h + hh,
    lo32(offset)}, key {lo32(seed), hi32(seed) ^ hi32(offset)}). entries: the batch indices."""
    bb, hh, ii, jj = np.meshgrid(np.arange(b) if entries is None else np.asarray(entries), np.arange(h),
                                 np.arange(sq), np.arange(sk), indexing="ij")
    u = lambda x: np.asarray(x, np.uint64)
    w = philox4x32_10((u(jj // 16), u(ii), u(bb * h + hh), np.full(jj.shape, offset & 0xFFFFFFFF, np.uint64)),
                      seed & 0xFFFFFFFF, (seed >> 32) ^ (offset >> 32))
    kk = jj % 16
    word = np.choose(kk // 4, w)
    return ((word >> u(8 * (kk % 4))) & np.uint64(0xFF)).astype(np.uint8)


def rope(x, pos, cos, sin, interleaved):
    """x [..., d] rotated at positions pos (broadcast over x[..., 0]) by the tables' first rotary_dim."""
    x = np.array(x, np.float64)
    r2 = cos.shape[1]
    c, s = cos[pos].astype(np.float64), sin[pos].astype(np.float64)
    if interleaved:
        a, b = x[..., 0:2 * r2:2].copy(), x[..., 1:2 * r2:2].copy()
        x[..., 0:2 * r2:2], x[..., 1:2 * r2:2] = a * c - b * s, a * s + b * c
    else:
        a, b = x[..., :r2].copy(), x[..., r2:2 * r2].copy()
        x[..., :r2], x[..., r2:2 * r2] = a * c - b * s, a * s + b * c
    return x


# >>bf16 bits in numpy (no bfloat16 type): round to nearest even


def to_bf16(x):
    u = np.asarray(x, np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(u):
    return (np.asarray(u, np.uint16).astype(np.uint32) << 16).view(np.float32)


def randn(*shape, dtype=np.float16):
    return RNG.standard_normal(shape).astype(dtype)


def varlen_inputs(lens_q, lens_k, h, d, hk=None):
    """Packed varlen inputs: cumulative offsets cu_q, cu_k (int32) and q, do [total_q][h][d], k, v [total_k][hk][d]."""
    cu_q, cu_k = np.cumsum([0] + lens_q).astype(np.int32), np.cumsum([0] + lens_k).astype(np.int32)
    hk = h if hk is None else hk
    return cu_q, cu_k, randn(cu_q[-1], h, d), randn(cu_k[-1], hk, d), randn(cu_k[-1], hk, d), randn(cu_q[-1], h, d)


def bhsd(x):
    return np.asarray(x).transpose(0, 2, 1, 3)


class Close:
    """|got - want| <= atol + rtol * |want| everywhere, else the first few mismatches."""

    @staticmethod
    def check(tc, got, want, atol, rtol, what):
        got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
        tc.assertEqual(got.shape, want.shape, what)
        both_inf = np.isinf(want) & (got == want)
        with np.errstate(invalid="ignore"):  # -inf - -inf: an empty row's LSE, matched by both_inf
            bad = ~((np.abs(got - want) <= atol + rtol * np.abs(want)) | both_inf)
        if bad.any():
            idx = np.argwhere(bad)[:5]
            lines = [f"  {tuple(i)}: got {got[tuple(i)]:.5f}, want {want[tuple(i)]:.5f}" for i in idx]
            tc.fail(f"{what}: {bad.sum()} of {bad.size} mismatches (atol {atol}, rtol {rtol}):\n" + "\n".join(lines))


# >>tests


class Forward(unittest.TestCase):
    def check_case(self, b, h, hk, sq, sk, d, dv=None, layout="bshd", **kw):
        dv = dv or d
        shape = (lambda s, hh, dd: (b, s, hh, dd)) if layout == "bshd" else (lambda s, hh, dd: (b, hh, s, dd))
        q, k, v = randn(*shape(sq, h, d)), randn(*shape(sk, hk, d)), randn(*shape(sk, hk, dv))
        o, lse = ckt.fmha.attention(q, k, v, layout=layout, return_lse=True, **kw)
        self.assertIsInstance(o, np.ndarray)
        self.assertEqual(o.shape, shape(sq, h, dv))
        self.assertEqual(o.dtype, np.float16)
        to = bhsd if layout == "bshd" else np.asarray
        ro, rlse = ref_attention(to(q), to(k), to(v), **kw)
        Close.check(self, to(o), ro, 2e-3, 1e-2, f"O {kw}")
        Close.check(self, lse, rlse, 1e-3, 1e-3, f"LSE {kw}")
        self.assertGreater(np.abs(ro).max(), 0.05)  # not a vacuous comparison

    def test_plain(self):
        self.check_case(2, 4, 4, 16, 24, 64)

    def test_bhsd_gqa_causal(self):
        self.check_case(1, 6, 2, 20, 33, 32, layout="bhsd", causal=True)

    def test_causal_bottom_right(self):
        self.check_case(2, 2, 1, 9, 40, 64, causal=True, bottom_right=True)

    def test_window_softcap_scale(self):
        self.check_case(1, 4, 2, 30, 30, 128, window=(5, 3), softcap=2.0, scale=0.3)

    def test_padded_head_dims(self):
        self.check_case(1, 2, 2, 8, 17, 80, dv=80, causal=True)

    def test_bf16_bits(self):
        q, k, v = (RNG.standard_normal(s).astype(np.float32) for s in ((2, 12, 4, 64), (2, 19, 2, 64), (2, 19, 2, 64)))
        qb, kb, vb = to_bf16(q), to_bf16(k), to_bf16(v)
        o = ckt.fmha.attention(*(ckt.as_tensor(x, dtype="bf16") for x in (qb, kb, vb)), causal=True)
        self.assertIsInstance(o, ckt.Tensor)
        self.assertEqual(o.dtype, "bfloat16")
        ro, _ = ref_attention(*(bhsd(from_bf16(x)) for x in (qb, kb, vb)), causal=True)
        Close.check(self, bhsd(from_bf16(o.numpy())), ro, 1e-2, 2e-2, "O bf16")

    def test_out_given_and_strided_q(self):
        base = randn(1, 16, 4, 2 * 64)  # q is every other 64 of a wider row: strides (.., 512, 128, 1)
        q = base[..., :64]
        k, v = randn(1, 16, 4, 64), randn(1, 16, 4, 64)
        out = np.full((1, 16, 4, 64), np.nan, np.float16)
        self.assertIs(ckt.fmha.attention(q, k, v, out=out), out)
        ro, _ = ref_attention(bhsd(q), bhsd(k), bhsd(v))
        Close.check(self, bhsd(out), ro, 2e-3, 1e-2, "O into out=")

    def test_ctypes_buffers(self):
        """Plain buffers: fp16 bits in ctypes arrays, the output a ckt.Tensor over a new host buffer."""
        b, s, h, d = 1, 10, 2, 32
        arrs = [randn(b, s, h, d) for _ in range(3)]
        bufs = [(ctypes.c_uint16 * a.size)(*a.view(np.uint16).ravel().tolist()) for a in arrs]
        o = ckt.fmha.attention(*(ckt.as_tensor(x, dtype="fp16", shape=(b, s, h, d)) for x in bufs), causal=True)
        self.assertIsInstance(o, ckt.Tensor)
        self.assertEqual((o.shape, o.dtype, o.device), ((b, s, h, d), "float16", ("cpu", 0)))
        got = np.frombuffer((ctypes.c_uint16 * (b * s * h * d)).from_address(o.ptr), np.float16).reshape(b, s, h, d)
        ro, _ = ref_attention(*(bhsd(a) for a in arrs), causal=True)
        Close.check(self, bhsd(got), ro, 2e-3, 1e-2, "O from ctypes buffers")

    def test_dlpack_only(self):
        """Objects with only __dlpack__ (numpy's, behind a wrapper)."""

        class DL:
            def __init__(self, a):
                self.a = a

            def __dlpack__(self, stream=None):
                return self.a.__dlpack__()

            def __dlpack_device__(self):
                return self.a.__dlpack_device__()

        q, k, v = randn(2, 8, 2, 64), randn(2, 8, 2, 64), randn(2, 8, 2, 64)
        t = ckt.as_tensor(DL(q))
        self.assertEqual((t.shape, t.strides, t.dtype, t.ptr), (q.shape, (1024, 128, 64, 1), "float16",
                                                                  q.__array_interface__["data"][0]))
        out = np.empty_like(q)
        ckt.fmha.attention(DL(q), DL(k), DL(v), out=DL(out))
        ro, _ = ref_attention(bhsd(q), bhsd(k), bhsd(v))
        Close.check(self, bhsd(out), ro, 2e-3, 1e-2, "O through DLPack")

    def test_varlen(self):
        lens_q, lens_k = [5, 0, 17, 1], [9, 4, 17, 30]
        h, hk, d = 4, 2, 64
        cu_q, cu_k, q, k, v, _ = varlen_inputs(lens_q, lens_k, h, d, hk)
        o, lse = ckt.fmha.varlen(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k), causal=True, return_lse=True)
        self.assertEqual((o.shape, lse.shape), ((cu_q[-1], h, d), (h, cu_q[-1])))
        for i in range(len(lens_q)):
            qs, ks = slice(cu_q[i], cu_q[i + 1]), slice(cu_k[i], cu_k[i + 1])
            ro, rlse = ref_attention(q[None, qs].transpose(0, 2, 1, 3), k[None, ks].transpose(0, 2, 1, 3),
                                     v[None, ks].transpose(0, 2, 1, 3), causal=True, bottom_right=True)
            Close.check(self, o[qs].transpose(1, 0, 2), ro[0], 2e-3, 1e-2, f"varlen O entry {i}")
            Close.check(self, lse[:, qs], rlse[0], 1e-3, 1e-3, f"varlen LSE entry {i}")


class Backward(unittest.TestCase):
    def test_attention_backward(self):
        for det in (False, True):
            b, h, hk, sq, sk, d = 2, 4, 2, 24, 40, 64
            q, k, v = randn(b, sq, h, d), randn(b, sk, hk, d), randn(b, sk, hk, d)
            do = randn(b, sq, h, d)
            o, lse = ckt.fmha.attention(q, k, v, causal=True, bottom_right=True, return_lse=True)
            dq, dk, dv = ckt.fmha.attention_backward(q, k, v, o, do, lse, causal=True, bottom_right=True,
                                                     deterministic=det)
            rq, rk, rv = ref_backward(bhsd(q), bhsd(k), bhsd(v), bhsd(o), bhsd(do), lse, causal=True,
                                      bottom_right=True)
            for name, got, want in (("dq", dq, rq), ("dk", dk, rk), ("dv", dv, rv)):
                self.assertEqual(got.shape, bhsd(want).shape)
                Close.check(self, bhsd(got), want, 1e-2, 2e-2, f"{name} deterministic={det}")
                self.assertGreater(np.abs(want).max(), 0.1)

    def test_varlen_backward(self):
        lens = [7, 20]
        cu = np.cumsum([0] + lens).astype(np.int32)
        q, k, v, do = (randn(cu[-1], 2, 32) for _ in range(4))
        o, lse = ckt.fmha.varlen(q, k, v, cu, cu, max(lens), max(lens), causal=True, return_lse=True)
        dq, dk, dv = ckt.fmha.varlen_backward(q, k, v, o, do, lse, cu, cu, max(lens), max(lens), causal=True)
        for i in range(len(lens)):
            s = slice(cu[i], cu[i + 1])
            as4 = lambda x: np.asarray(x[s], np.float64).transpose(1, 0, 2)[None]
            r = ref_backward(as4(q), as4(k), as4(v), as4(o), as4(do), lse[None, :, s], causal=True)
            for name, got, want in zip(("dq", "dk", "dv"), (dq, dk, dv), r):
                Close.check(self, as4(got), want, 1e-2, 2e-2, f"varlen {name} entry {i}")


class Sink(unittest.TestCase):
    """Attention sinks (gpt-oss): sink= on attention / varlen / with_kvcache, dsink from the backward."""

    def test_forward_backward(self):
        b, h, hk, sq, sk, d = 2, 4, 2, 19, 33, 64
        q, k, v, do = randn(b, sq, h, d), randn(b, sk, hk, d), randn(b, sk, hk, d), randn(b, sq, h, d)
        sink = np.array([0.5, -1.0, 2.0, 8.0], np.float32)  # 8: the sink dominates that head
        for det in (False, True):
            o, lse = ckt.fmha.attention(q, k, v, causal=True, bottom_right=True, return_lse=True, sink=sink)
            ro, rlse = ref_attention(bhsd(q), bhsd(k), bhsd(v), causal=True, bottom_right=True, sink=sink)
            Close.check(self, bhsd(o), ro, 2e-3, 1e-2, "O with sinks")
            Close.check(self, lse, rlse, 1e-3, 1e-3, "LSE with sinks")
            plain = ckt.fmha.attention(q, k, v, causal=True, bottom_right=True)
            self.assertGreater(np.abs(np.asarray(plain, np.float64) - o).max(), 0.01)  # the sink matters
            dq, dk, dv, dsink = ckt.fmha.attention_backward(q, k, v, o, do, lse, causal=True, bottom_right=True,
                                                            deterministic=det, sink=sink)
            rq, rk, rv = ref_backward(bhsd(q), bhsd(k), bhsd(v), bhsd(o), bhsd(do), lse, causal=True,
                                      bottom_right=True)
            for name, got, want in (("dq", dq, rq), ("dk", dk, rk), ("dv", dv, rv)):
                Close.check(self, bhsd(got), want, 1e-2, 2e-2, f"{name} with sinks, deterministic={det}")
            # dsink[h] = -sum_{b,i} exp(sink[h] - LSE) * rowsum(dO * O)
            dd = (bhsd(do).astype(np.float64) * bhsd(o).astype(np.float64)).sum(-1)
            want = -(np.exp(sink.astype(np.float64)[None, :, None] - lse) * dd).sum((0, 2))
            self.assertEqual((dsink.shape, dsink.dtype), ((h,), np.float32))
            Close.check(self, dsink, want, 1e-3, 1e-3, f"dsink, deterministic={det}")
            self.assertGreater(np.abs(want).max(), 1e-3)

    def test_varlen_and_kvcache(self):
        lens = [7, 20]
        cu = np.cumsum([0] + lens).astype(np.int32)
        q, k, v = (randn(cu[-1], 2, 32) for _ in range(3))
        sink = np.array([1.0, -0.5], np.float32)
        o, lse = ckt.fmha.varlen(q, k, v, cu, cu, max(lens), max(lens), causal=True, return_lse=True, sink=sink)
        for i in range(len(lens)):
            s = slice(cu[i], cu[i + 1])
            as4 = lambda x: np.asarray(x[s], np.float64).transpose(1, 0, 2)[None]
            ro, rlse = ref_attention(as4(q), as4(k), as4(v), causal=True, bottom_right=True, sink=sink)
            Close.check(self, as4(o), ro, 2e-3, 1e-2, f"varlen O with sinks, entry {i}")
            Close.check(self, lse[None, :, s], rlse, 1e-3, 1e-3, f"varlen LSE with sinks, entry {i}")
        b, h, hk, d, cap = 2, 4, 2, 64, 80
        kc, vc = randn(b, cap, hk, d), randn(b, cap, hk, d)
        qd = randn(b, 1, h, d)
        sink4 = np.array([0.0, 1.0, -2.0, 3.0], np.float32)
        for splits in (1, 3):
            o = ckt.fmha.with_kvcache(qd, kc, vc, cache_seqlens=np.array([50, 80], np.int32), num_splits=splits,
                                      sink=sink4)
            for i, n in enumerate((50, 80)):
                ro, _ = ref_attention(bhsd(qd[i:i + 1]), bhsd(kc[i:i + 1, :n]), bhsd(vc[i:i + 1, :n]), sink=sink4)
                Close.check(self, bhsd(o[i:i + 1]), ro, 2e-3, 1e-2, f"with_kvcache sinks, splits {splits}, entry {i}")

    def test_errors(self):
        q = k = v = randn(1, 8, 2, 32)
        for bad, starts in ((np.zeros(3, np.float32), "sink: shape"), (np.zeros(2, np.float16), "sink: dtype"),
                            (np.zeros(4, np.float32)[::2], "sink: stride")):
            with self.assertRaises(ckt.CktError) as cm:
                ckt.fmha.attention(q, k, v, sink=bad)
            self.assertTrue(str(cm.exception).startswith(starts), str(cm.exception))


class Dropout(unittest.TestCase):
    """dropout_p / dropout_seed / dropout_offset: the random bytes against a numpy Philox4x32-10, O
    against the reference with the keep mask they give, the backward regenerating the mask."""
    P, SEED, OFFSET = 0.3, 2 ** 40 + 123, 2 ** 33 + 7  # both words of seed and offset matter

    def kw(self, **more):
        return dict(dropout_p=self.P, dropout_seed=self.SEED, dropout_offset=self.OFFSET, **more)

    def test_threshold(self):
        self.assertEqual([ckt.fmha.dropout_threshold(p) for p in (0.0, 0.1, 0.3, 0.5, 0.999)], [0, 26, 77, 128, 256])

    def test_forward_randval(self):
        b, h, hk, sq, sk, d = 2, 4, 2, 19, 40, 64
        q, k, v = randn(b, sq, h, d), randn(b, sk, hk, d), randn(b, sk, hk, d)
        o, lse, rv = ckt.fmha.attention(q, k, v, causal=True, bottom_right=True, return_lse=True,
                                        return_dropout_randval=True, **self.kw())
        self.assertEqual((rv.shape, rv.dtype), ((b, h, sq, sk), np.uint8))
        vis = np.arange(sk)[None, :] - np.arange(sq)[:, None] - (sk - sq) <= 0  # the bytes of visible pairs
        np.testing.assert_array_equal(rv[..., vis], ref_randval(self.SEED, self.OFFSET, b, h, sq, sk)[..., vis])
        keep = rv >= ckt.fmha.dropout_threshold(self.P)
        self.assertLess(abs(keep[..., vis].mean() - (1 - 77 / 256)), 0.05)
        ro, rlse = ref_attention(bhsd(q), bhsd(k), bhsd(v), causal=True, bottom_right=True, keep=keep, p_drop=self.P)
        Close.check(self, bhsd(o), ro, 2e-3, 1e-2, "O with dropout")
        Close.check(self, lse, rlse, 1e-3, 1e-3, "LSE with dropout (the undropped one)")
        plain = ckt.fmha.attention(q, k, v, causal=True, bottom_right=True)
        self.assertGreater(np.abs(np.asarray(plain, np.float64) - o).max(), 0.05)  # dropout happened
        # the same seed and offset: the same output; another offset, another seed: another mask
        again = ckt.fmha.attention(q, k, v, causal=True, bottom_right=True, **self.kw())
        np.testing.assert_array_equal(again, o)
        for kw in (dict(self.kw(), dropout_offset=self.OFFSET + 1), dict(self.kw(), dropout_seed=self.SEED + 2 ** 32)):
            other = ckt.fmha.attention(q, k, v, causal=True, bottom_right=True, return_dropout_randval=True, **kw)[1]
            self.assertGreater((other[..., vis] != rv[..., vis]).mean(), 0.9)

    def test_drawn_seed(self):
        q = k = v = randn(1, 16, 2, 32)
        a = ckt.fmha.attention(q, k, v, dropout_p=0.5)
        b = ckt.fmha.attention(q, k, v, dropout_p=0.5)
        self.assertFalse(np.array_equal(a, b))  # a new seed each call

    def test_backward(self):
        b, h, hk, sq, sk, d = 2, 4, 2, 24, 40, 64
        q, k, v, do = randn(b, sq, h, d), randn(b, sk, hk, d), randn(b, sk, hk, d), randn(b, sq, h, d)
        o, lse, rv = ckt.fmha.attention(q, k, v, causal=True, bottom_right=True, return_lse=True,
                                        return_dropout_randval=True, **self.kw())
        keep = rv >= ckt.fmha.dropout_threshold(self.P)
        rq, rk, rvv = ref_backward(bhsd(q), bhsd(k), bhsd(v), bhsd(o), bhsd(do), lse, causal=True, bottom_right=True,
                                   keep=keep, p_drop=self.P)
        plain = ref_backward(bhsd(q), bhsd(k), bhsd(v), bhsd(o), bhsd(do), lse, causal=True, bottom_right=True)
        self.assertGreater(np.abs(plain[2] - rvv).max(), 0.1)  # the mask matters to the reference
        for det in (False, True):
            dq, dk, dv = ckt.fmha.attention_backward(q, k, v, o, do, lse, causal=True, bottom_right=True,
                                                     deterministic=det, **self.kw())
            for name, got, want in (("dq", dq, rq), ("dk", dk, rk), ("dv", dv, rvv)):
                Close.check(self, bhsd(got), want, 1e-2, 2e-2, f"{name} with dropout, deterministic={det}")

    def test_varlen(self):
        lens_q, lens_k = [7, 0, 20], [9, 5, 20]
        h, d = 2, 32
        cu_q, cu_k, q, k, v, do = varlen_inputs(lens_q, lens_k, h, d)
        mq, mk = max(lens_q), max(lens_k)
        o, lse, rv = ckt.fmha.varlen(q, k, v, cu_q, cu_k, mq, mk, causal=True, return_lse=True,
                                     return_dropout_randval=True, **self.kw())
        self.assertEqual(rv.shape, (3, h, mq, mk))  # per entry and in-entry position
        dq, dk, dv = ckt.fmha.varlen_backward(q, k, v, o, do, lse, cu_q, cu_k, mq, mk, causal=True, **self.kw())
        for i in range(3):
            qs, ks = slice(cu_q[i], cu_q[i + 1]), slice(cu_k[i], cu_k[i + 1])
            nq, nk = lens_q[i], lens_k[i]
            want_rv = ref_randval(self.SEED, self.OFFSET, 1, h, nq, nk, entries=[i])[0]
            vis = np.arange(nk)[None, :] - np.arange(nq)[:, None] - (nk - nq) <= 0
            np.testing.assert_array_equal(rv[i, :, :nq, :nk][:, vis], want_rv[:, vis])
            keep = rv[None, i, :, :nq, :nk] >= ckt.fmha.dropout_threshold(self.P)
            as4 = lambda x, s: np.asarray(x[s], np.float64).transpose(1, 0, 2)[None]
            ro, _ = ref_attention(as4(q, qs), as4(k, ks), as4(v, ks), causal=True, bottom_right=True, keep=keep,
                                  p_drop=self.P)
            Close.check(self, as4(o, qs), ro, 2e-3, 1e-2, f"varlen O with dropout, entry {i}")
            r = ref_backward(as4(q, qs), as4(k, ks), as4(v, ks), as4(o, qs), as4(do, qs), lse[None, :, qs],
                             causal=True, bottom_right=True, keep=keep, p_drop=self.P)
            for name, got, s_, want in zip(("dq", "dk", "dv"), (dq, dk, dv), (qs, ks, ks), r):
                Close.check(self, as4(got, s_), want, 1e-2, 2e-2, f"varlen {name} with dropout, entry {i}")

    def test_seed_offset_in_memory(self):
        """dropout_seed_offset: {seed, offset} read from memory by the kernels, the same mask as by value."""
        b, h, sq, sk, d = 1, 2, 16, 40, 32
        q, k, v, do = randn(b, sq, h, d), randn(b, sk, h, d), randn(b, sk, h, d), randn(b, sq, h, d)
        so = np.array([self.SEED, self.OFFSET], np.uint64)
        kw = dict(dropout_p=self.P, dropout_seed_offset=so)
        o, lse, rv = ckt.fmha.attention(q, k, v, return_lse=True, return_dropout_randval=True, **kw)
        np.testing.assert_array_equal(rv, ref_randval(self.SEED, self.OFFSET, b, h, sq, sk))
        np.testing.assert_array_equal(o, ckt.fmha.attention(q, k, v, **self.kw()))
        got = ckt.fmha.attention_backward(q, k, v, o, do, lse, **kw)
        want = ckt.fmha.attention_backward(q, k, v, o, do, lse, **self.kw())
        for name, g, w in zip(("dq", "dk", "dv"), got, want):
            np.testing.assert_array_equal(g, w, name)
        so[1] += 1  # new values in the same memory: another mask
        self.assertFalse(np.array_equal(o, ckt.fmha.attention(q, k, v, **kw)))
        for bad, text in ((np.zeros(3, np.uint64), "dropout_seed_offset: uint64 (3,)"),
                          (np.zeros(2, np.int32), "dropout_seed_offset: int32 (2,)")):
            with self.assertRaises(ckt.CktError) as cm:
                ckt.fmha.attention(q, k, v, dropout_p=0.1, dropout_seed_offset=bad)
            self.assertTrue(str(cm.exception).startswith(text), str(cm.exception))
        with self.assertRaises(ckt.CktError) as cm:
            ckt.fmha.attention(q, k, v, dropout_p=0.1, dropout_seed_offset=so, dropout_seed=1)
        self.assertTrue(str(cm.exception).startswith("dropout_seed_offset: given with dropout_seed"))

    def test_errors(self):
        q = k = v = randn(1, 8, 2, 32)
        for kw, text in ((dict(dropout_p=1.0), "dropout_p: 1.0 (must be in [0, 1)"),
                         (dict(dropout_p=-0.1), "dropout_p: -0.1"), (dict(dropout_p=float("nan")), "dropout_p: nan"),
                         (dict(dropout_p=0.1, dropout_seed=-1), "dropout_seed: -1"),
                         (dict(dropout_p=0.1, dropout_offset=2 ** 64), "dropout_offset:"),
                         (dict(dropout_p=0.1, dropout_seed=1.5), "dropout_seed: 1.5"),
                         (dict(return_dropout_randval=True), "return_dropout_randval: needs dropout_p > 0")):
            with self.assertRaises(ckt.CktError) as cm:
                ckt.fmha.attention(q, k, v, **kw)
            self.assertTrue(str(cm.exception).startswith(text), str(cm.exception))
        o, lse = ckt.fmha.attention(q, k, v, return_lse=True, dropout_p=0.1, dropout_seed=5)
        with self.assertRaises(ckt.CktError) as cm:
            ckt.fmha.attention_backward(q, k, v, o, o, lse, dropout_p=0.1)  # the seed is needed
        self.assertTrue(str(cm.exception).startswith("dropout_seed: None"), str(cm.exception))


class Bias(unittest.TestCase):
    """bias= (broadcast shapes, dbias) and alibi_slopes= on attention / varlen / with_kvcache."""

    def fwd_case(self, bias_shape=None, alibi_shape=None, layout="bshd", b=2, h=4, hk=2, sq=19, sk=33, d=64, **kw):
        shape = (lambda s, hh: (b, s, hh, d)) if layout == "bshd" else (lambda s, hh: (b, hh, s, d))
        to = bhsd if layout == "bshd" else np.asarray
        q, k, v = randn(*shape(sq, h)), randn(*shape(sk, hk)), randn(*shape(sk, hk))
        bias = 2 * randn(*bias_shape) if bias_shape else None
        alibi = RNG.uniform(0.05, 1.0, alibi_shape).astype(np.float32) if alibi_shape else None
        o, lse = ckt.fmha.attention(q, k, v, layout=layout, return_lse=True, bias=bias, alibi_slopes=alibi, **kw)
        ro, rlse = ref_attention(to(q), to(k), to(v), bias=bias, alibi=alibi, **kw)
        what = f"bias {bias_shape} alibi {alibi_shape} {layout} {kw}"
        Close.check(self, to(o), ro, 2e-3, 1e-2, "O, " + what)
        Close.check(self, lse, rlse, 1e-3, 1e-3, "LSE, " + what)
        plain, _ = ref_attention(to(q), to(k), to(v), **kw)
        self.assertGreater(np.abs(plain - ro).max(), 0.05, what)  # the bias matters

    def test_bias_shapes(self):
        b, h, sq, sk = 2, 4, 19, 33
        for bs in ((b, h, sq, sk), (1, h, sq, sk), (b, 1, sq, sk), (b, 1, 1, sk), (h, sq, sk), (sq, sk)):
            self.fwd_case(bs, causal=True)
        self.fwd_case((b, h, sq, sk), layout="bhsd", bottom_right=True, window=(6, 2))

    def test_bias_strided_and_expanded(self):
        q, k, v = randn(1, 8, 2, 32), randn(1, 12, 2, 32), randn(1, 12, 2, 32)
        wide = randn(1, 2, 8, 20)
        bias = wide[..., 3:15]  # rows 20 apart, keys 1
        o = ckt.fmha.attention(q, k, v, bias=bias)
        ro, _ = ref_attention(bhsd(q), bhsd(k), bhsd(v), bias=bias)
        Close.check(self, bhsd(o), ro, 2e-3, 1e-2, "O with a strided bias")
        row = randn(1, 1, 1, 12)
        o = ckt.fmha.attention(q, k, v, bias=np.broadcast_to(row, (1, 2, 8, 12)))  # stride-0 dims
        ro, _ = ref_attention(bhsd(q), bhsd(k), bhsd(v), bias=row)
        Close.check(self, bhsd(o), ro, 2e-3, 1e-2, "O with an expanded bias")

    def test_bias_bf16(self):
        q, k, v = (to_bf16(RNG.standard_normal(s)) for s in ((1, 12, 2, 64), (1, 16, 2, 64), (1, 16, 2, 64)))
        bias = to_bf16(2 * RNG.standard_normal((1, 2, 12, 16)))
        bf = lambda x: ckt.as_tensor(x, dtype="bf16")
        o = ckt.fmha.attention(bf(q), bf(k), bf(v), bias=bf(bias), causal=True)
        ro, _ = ref_attention(*(bhsd(from_bf16(x)) for x in (q, k, v)), bias=bias, causal=True)
        Close.check(self, bhsd(from_bf16(o.numpy())), ro, 1e-2, 2e-2, "O bf16 with bias")

    def test_alibi(self):
        for kw in (dict(causal=True), dict(causal=True, bottom_right=True), dict(), dict(bottom_right=True),
                   dict(window=(5, 3), bottom_right=True)):
            self.fwd_case(alibi_shape=(4,), **kw)
        self.fwd_case(alibi_shape=(2, 4), causal=True, bottom_right=True)
        self.fwd_case(alibi_shape=(1, 4), layout="bhsd")

    def test_backward_dbias(self):
        b, h, hk, sq, sk, d = 2, 4, 2, 24, 40, 64
        q, k, v, do = randn(b, sq, h, d), randn(b, sk, hk, d), randn(b, sk, hk, d), randn(b, sq, h, d)
        for bs in ((b, h, sq, sk), (1, h, sq, sk), (b, 1, 1, sk), (sq, sk)):
            bias = 2 * randn(*bs)
            o, lse = ckt.fmha.attention(q, k, v, causal=True, bottom_right=True, return_lse=True, bias=bias)
            for det in (False, True):
                dq, dk, dv, dbias = ckt.fmha.attention_backward(q, k, v, o, do, lse, causal=True, bottom_right=True,
                                                                deterministic=det, bias=bias, return_dbias=True)
                rq, rk, rv, ds = ref_backward(bhsd(q), bhsd(k), bhsd(v), bhsd(o), bhsd(do), lse, causal=True,
                                              bottom_right=True, bias=bias, want_ds=True)
                for name, got, want in (("dq", dq, rq), ("dk", dk, rk), ("dv", dv, rv)):
                    Close.check(self, bhsd(got), want, 1e-2, 2e-2, f"{name} with bias {bs}, det={det}")
                want = ds.sum(axis=tuple(i for i in range(4) if ((1,) * (4 - len(bs)) + bs)[i] == 1),
                              keepdims=True).reshape(bs)
                self.assertEqual((dbias.shape, dbias.dtype), (bs, np.float16))
                Close.check(self, dbias, want, 1e-2, 2e-2, f"dbias {bs}, det={det}")
                self.assertGreater(np.abs(want).max(), 0.1)
        # ALiBi: the gradients of q, k, v (ALiBi has none of its own)
        sl = np.array([0.1, 0.3, 0.5, 1.0], np.float32)
        o, lse = ckt.fmha.attention(q, k, v, return_lse=True, alibi_slopes=sl, bottom_right=True)
        got = ckt.fmha.attention_backward(q, k, v, o, do, lse, alibi_slopes=sl, bottom_right=True)
        want = ref_backward(bhsd(q), bhsd(k), bhsd(v), bhsd(o), bhsd(do), lse, alibi=sl, bottom_right=True)
        for name, g, w in zip(("dq", "dk", "dv"), got, want):
            Close.check(self, bhsd(g), w, 1e-2, 2e-2, f"{name} with ALiBi")

    def test_bias_dropout_sink_together(self):
        b, h, sq, sk, d = 1, 2, 16, 24, 32
        q, k, v, do = randn(b, sq, h, d), randn(b, sk, h, d), randn(b, sk, h, d), randn(b, sq, h, d)
        bias, sink = randn(b, h, sq, sk), np.array([0.5, 1.5], np.float32)
        kw = dict(dropout_p=0.2, dropout_seed=99, dropout_offset=3, bias=bias, sink=sink, causal=True)
        o, lse, rv = ckt.fmha.attention(q, k, v, return_lse=True, return_dropout_randval=True, **kw)
        keep = rv >= ckt.fmha.dropout_threshold(0.2)
        ro, rlse = ref_attention(bhsd(q), bhsd(k), bhsd(v), causal=True, bias=bias, sink=sink, keep=keep, p_drop=0.2)
        Close.check(self, bhsd(o), ro, 2e-3, 1e-2, "O with bias, dropout and sinks")
        Close.check(self, lse, rlse, 1e-3, 1e-3, "LSE with bias, dropout and sinks")
        dq, dk, dv, dsink, dbias = ckt.fmha.attention_backward(q, k, v, o, do, lse, return_dbias=True, **kw)
        rq, rk, rvv, ds = ref_backward(bhsd(q), bhsd(k), bhsd(v), bhsd(o), bhsd(do), lse, causal=True, bias=bias,
                                       keep=keep, p_drop=0.2, want_ds=True)
        for name, got, want in (("dq", dq, rq), ("dk", dk, rk), ("dv", dv, rvv)):
            Close.check(self, bhsd(got), want, 1e-2, 2e-2, f"{name} with bias, dropout and sinks")
        Close.check(self, dbias, ds, 1e-2, 2e-2, "dbias with dropout and sinks")
        self.assertEqual(dsink.shape, (h,))

    def test_varlen(self):
        lens_q, lens_k = [5, 0, 17], [9, 4, 17]
        h, d = 2, 64
        cu_q, cu_k, q, k, v, do = varlen_inputs(lens_q, lens_k, h, d)
        mq, mk = max(lens_q), max(lens_k)
        bias, sl = 2 * randn(3, h, mq, mk), np.array([[0.2, 0.7], [0.1, 0.4], [1.0, 0.3]], np.float32)
        as4 = lambda x, s: np.asarray(x[s], np.float64).transpose(1, 0, 2)[None]
        for kw in (dict(bias=bias), dict(alibi_slopes=sl), dict(alibi_slopes=sl, causal=True)):
            o, lse = ckt.fmha.varlen(q, k, v, cu_q, cu_k, mq, mk, return_lse=True, **kw)
            g = ckt.fmha.varlen_backward(q, k, v, o, do, lse, cu_q, cu_k, mq, mk, return_dbias="bias" in kw, **kw)
            if "bias" in kw:
                self.assertEqual(g[3].shape, (3, h, mq, mk))
            for i in range(3):
                qs, ks = slice(cu_q[i], cu_q[i + 1]), slice(cu_k[i], cu_k[i + 1])
                nq, nk = lens_q[i], lens_k[i]
                rkw = dict(causal=kw.get("causal", False), bottom_right=True,
                           bias=bias[None, i, :, :nq, :nk] if "bias" in kw else None,
                           alibi=sl[i] if "alibi_slopes" in kw else None)
                ro, rlse = ref_attention(as4(q, qs), as4(k, ks), as4(v, ks), **rkw)
                Close.check(self, as4(o, qs), ro, 2e-3, 1e-2, f"varlen O {list(kw)} entry {i}")
                Close.check(self, lse[None, :, qs], rlse, 1e-3, 1e-3, f"varlen LSE {list(kw)} entry {i}")
                r = ref_backward(as4(q, qs), as4(k, ks), as4(v, ks), as4(o, qs), as4(do, qs), lse[None, :, qs],
                                 want_ds=True, **rkw)
                for name, got, s_, want in zip(("dq", "dk", "dv"), g, (qs, ks, ks), r):
                    Close.check(self, as4(got, s_), want, 1e-2, 2e-2, f"varlen {name} {list(kw)} entry {i}")
                if "bias" in kw:
                    Close.check(self, g[3][None, i, :, :nq, :nk], r[3], 1e-2, 2e-2, f"varlen dbias entry {i}")
                    self.assertFalse(g[3][i, :, nq:].any() or g[3][i, :, :, nk:].any())  # padding: 0

    def test_with_kvcache(self):
        b, h, hk, d, cap, sq = 2, 4, 2, 64, 80, 2
        lens = np.array([50, 77], np.int32)
        kc, vc = randn(b, cap, hk, d), randn(b, cap, hk, d)
        kn, vn, q = randn(b, sq, hk, d), randn(b, sq, hk, d), randn(b, sq, h, d)
        bias = 2 * randn(b, 1, sq, cap + 3)  # wider than the cache: any width >= the keys
        sl = np.array([0.1, 0.2, 0.4, 0.8], np.float32)
        for kw, splits in ((dict(bias=bias), 1), (dict(bias=bias), 3), (dict(alibi_slopes=sl), 1),
                           (dict(alibi_slopes=sl), 2), (dict(alibi_slopes=sl, causal=True), 0)):
            k2, v2 = kc.copy(), vc.copy()
            o = ckt.fmha.with_kvcache(q, k2, v2, kn, vn, cache_seqlens=lens, num_splits=splits, **kw)
            for i in range(b):
                n = lens[i] + sq
                rkw = dict(bias=bias[None, i, :, :, :n] if "bias" in kw else None,
                           alibi=sl if "alibi_slopes" in kw else None, causal=kw.get("causal", False))
                ro, _ = ref_attention(bhsd(q[i:i + 1]), bhsd(k2[i:i + 1, :n]), bhsd(v2[i:i + 1, :n]),
                                      bottom_right=True, **rkw)
                Close.check(self, bhsd(o[i:i + 1]), ro, 2e-3, 1e-2, f"with_kvcache {list(kw)} splits {splits} {i}")

    def test_errors(self):
        q = k = v = randn(2, 8, 2, 32)
        o, lse = ckt.fmha.attention(q, k, v, return_lse=True)
        full = randn(2, 2, 8, 8)
        sl = np.ones(2, np.float32)
        for kw, text in ((dict(bias=full, alibi_slopes=sl), "alibi_slopes: given together with bias"),
                         (dict(bias=full, softcap=5.0), "bias: set with softcap"),
                         (dict(alibi_slopes=sl, softcap=5.0), "alibi_slopes: set with softcap"),
                         (dict(bias=full.astype(np.float32)), "bias: dtype float32, q is float16"),
                         (dict(bias=randn(2, 2, 8, 9)), "bias: shape (2, 2, 8, 9): key dim 9, expected 8"),
                         (dict(bias=randn(2, 2, 8, 1)), "bias: shape (2, 2, 8, 1): key dim 1, not broadcastable"),
                         (dict(bias=randn(3, 2, 8, 8)), "bias: shape (3, 2, 8, 8): batch 3 is neither 1 nor 2"),
                         (dict(bias=randn(8)), "bias: shape (8,): expected 2 to 4 dims"),
                         (dict(bias=randn(2, 2, 8, 16)[..., ::2]), "bias: strides"),
                         (dict(alibi_slopes=np.ones(3, np.float32)), "alibi_slopes: shape (3,)"),
                         (dict(alibi_slopes=np.ones(2, np.float16)), "alibi_slopes: dtype float16")):
            with self.assertRaises(ckt.CktError) as cm:
                ckt.fmha.attention(q, k, v, **kw)
            self.assertTrue(str(cm.exception).startswith(text) or f": {text}" in str(cm.exception),
                            f"{text!r} not in {str(cm.exception)!r}")
        for kw, text in ((dict(return_dbias=True), "dbias: needs bias"),
                         (dict(dbias=full), "dbias: given, but bias is None"),
                         (dict(bias=full, dbias=randn(1, 2, 8, 8)), "dbias: float16 (1, 2, 8, 8)")):
            with self.assertRaises(ckt.CktError) as cm:
                ckt.fmha.attention_backward(q, k, v, o, o, lse, **kw)
            self.assertTrue(str(cm.exception).startswith(text), str(cm.exception))
        # a broadcast bf16 bias held as uint16 bits: no sum here
        bf = lambda x: ckt.as_tensor(to_bf16(x), dtype="bf16")
        qb = bf(np.asarray(q, np.float32))
        ob, lb = ckt.fmha.attention(qb, qb, qb, return_lse=True)
        with self.assertRaises(ckt.CktError) as cm:
            ckt.fmha.attention_backward(qb, qb, qb, ob, ob, lb, bias=bf(np.zeros((1, 2, 8, 8), np.float32)),
                                        return_dbias=True)
        self.assertTrue(str(cm.exception).startswith("bias: shape (1, 2, 8, 8) broadcasts"), str(cm.exception))


class Errors(unittest.TestCase):
    def expect(self, starts, fn, *a, **kw):
        with self.assertRaises(ckt.CktError) as cm:
            fn(*a, **kw)
        msg = str(cm.exception)
        self.assertIn(starts, msg)
        return cm.exception

    def test_head_dim_7(self):
        z = np.zeros((1, 8, 2, 7), np.float16)
        e = self.expect("hdim_q=7", ckt.fmha.attention, z, z, z)
        self.assertEqual(e.function, "ckt_fmha_fwd")
        self.assertIn("hdim_q is not a multiple of 8", e.detail)  # the library's ckt_fmha_last_error()

    def test_gqa_heads(self):
        q, kv = np.zeros((1, 8, 3, 64), np.float16), np.zeros((1, 8, 2, 64), np.float16)
        e = self.expect("nhead_q: 3 is not a multiple of nhead_k 2", ckt.fmha.attention, q, kv, kv)
        self.assertTrue(e.detail.startswith("nhead_q:"))

    def test_mismatched_shapes(self):
        z = lambda *s: np.zeros(s, np.float16)
        self.expect("k: shape (1, 8, 2, 32): head dim 32 differs from q's 64", ckt.fmha.attention,
                    z(1, 8, 2, 64), z(1, 8, 2, 32), z(1, 8, 2, 64))
        self.expect("v: shape (1, 9, 2, 64): length 9 differs from k's 8", ckt.fmha.attention,
                    z(1, 8, 2, 64), z(1, 8, 2, 64), z(1, 9, 2, 64))
        self.expect("q: shape (8, 2, 64) has 3 dims, expected 4", ckt.fmha.attention,
                    z(8, 2, 64), z(1, 8, 2, 64), z(1, 8, 2, 64))
        self.expect("out: shape (1, 8, 2, 32), expected (1, 8, 2, 64)", ckt.fmha.attention,
                    z(1, 8, 2, 64), z(1, 8, 2, 64), z(1, 8, 2, 64), out=z(1, 8, 2, 32))

    def test_dtype(self):
        f = np.zeros((1, 8, 2, 64), np.float32)
        e = self.expect("dtype: fp32", ckt.fmha.attention, f, f, f)  # the library's own message
        self.assertTrue(e.detail.startswith("dtype:"))
        h = np.zeros((1, 8, 2, 64), np.float16)
        self.expect("k: dtype float32, q is float16", ckt.fmha.attention, h, f, h)
        self.expect("layout:", ckt.fmha.attention, h, h, h, layout="sbhd")

    def test_library_checks_strides(self):
        q = np.zeros((1, 8, 2, 64 + 4), np.float16)[..., :64]  # row stride 68: not a multiple of 8 elements
        z = np.zeros((1, 8, 2, 64), np.float16)
        e = self.expect("stride", ckt.fmha.attention, q, z, z)
        self.assertIsNotNone(e.status)

    def test_varlen_bad_cu(self):
        cu = np.array([0, 8, 4], np.int32)  # decreasing
        q = np.zeros((8, 2, 64), np.float16)
        e = self.expect("seqstart_q", ckt.fmha.varlen, q, q, q, cu, np.array([0, 4, 8], np.int32), 8, 8)
        self.assertIn("decreases", e.detail)
        self.expect("cu_seqlens_q:", ckt.fmha.varlen, q, q, q, cu.astype(np.int64), cu, 8, 8)


class KVCache(unittest.TestCase):
    def run_case(self, b=3, bc=None, h=4, hk=2, d=64, scap=48, lens=(10, 0, 30), snew=3, sq=3, rotary_dim=32,
                 interleaved=True, causal=True, cbi=None, scalar_len=None, as_list=False, page=0, num_splits=0,
                 sglang=False):
        bc = bc or b
        kc, vc = randn(bc, scap, hk, d), randn(bc, scap, hk, d)
        kc0, vc0 = kc.copy(), vc.copy()
        table = None
        if page:  # the same cache as pages of `page` rows, shuffled over a pool with 2 spare pages
            per = -(-scap // page)
            npages = bc * per + 2
            ids = RNG.permutation(npages)[:bc * per].astype(np.int32)
            table = ids.reshape(bc, per)
            pool_k, pool_v = randn(npages, page, hk, d), randn(npages, page, hk, d)
            padded = lambda x: np.concatenate([x, np.zeros((bc, per * page - scap, hk, d), x.dtype)], 1)
            pool_k[ids] = padded(kc).reshape(bc * per, page, hk, d)
            pool_v[ids] = padded(vc).reshape(bc * per, page, hk, d)
            unpage = lambda pool: pool[table].reshape(bc, per * page, hk, d)[:, :scap]
        q = randn(b, sq, h, d)
        q0 = q.copy()
        kn, vn = (randn(b, snew, hk, d), randn(b, snew, hk, d)) if snew else (None, None)
        max_pos = scap + sq
        ang = RNG.uniform(0, 2 * np.pi, (max_pos, rotary_dim // 2)) if rotary_dim else None
        cos, sin = (np.cos(ang).astype(np.float16), np.sin(ang).astype(np.float16)) if rotary_dim else (None, None)
        if scalar_len is not None:
            seqlens, lens = scalar_len, [scalar_len] * b
        else:
            seqlens = list(lens) if as_list else np.array(lens, np.int32)
        cbi_arr = np.array(cbi, np.int32) if cbi is not None else None
        kw = dict(cache_seqlens=seqlens, cache_batch_idx=cbi_arr, block_table=table)
        if sglang:  # the same pages as sglang's tables of the cache after the append
            n = [-(-(L + snew) // page) for L in lens]
            indptr = np.concatenate([[0], np.cumsum(n)]).astype(np.int32)
            indices = np.concatenate([table[i, :n[i]] for i in range(b)]).astype(np.int32)
            last = [L + snew - (k - 1) * page if k else 0 for L, k in zip(lens, n)]
            kw = dict(kv_indptr=indptr, kv_indices=indices, kv_last_page_len=last if as_list else
                      np.array(last, np.int32))
        o, lse = ckt.fmha.with_kvcache(q, pool_k if page else kc, pool_v if page else vc, kn, vn,
                                       rotary_cos=cos, rotary_sin=sin, rotary_interleaved=interleaved,
                                       causal=causal, num_splits=num_splits, return_lse=True, **kw)
        if page:
            kc, vc = unpage(pool_k), unpage(pool_v)
        self.assertEqual((o.shape, lse.shape), ((b, sq, h, d), (b, h, sq)))
        np.testing.assert_array_equal(q, q0)  # q is not modified
        want_k, want_v = kc0.astype(np.float64), vc0.astype(np.float64)
        for i in range(b):
            cb = cbi[i] if cbi is not None else i
            L = lens[i]
            pos = np.arange(L, L + snew)
            if snew:
                newk = rope(kn[i].transpose(1, 0, 2), pos, cos, sin, interleaved) if rotary_dim else kn[i].transpose(1, 0, 2)
                want_k[cb, L:L + snew] = newk.transpose(1, 0, 2)
                want_v[cb, L:L + snew] = vn[i]
            qi = q[i].transpose(1, 0, 2)
            if rotary_dim:
                qi = rope(qi, np.arange(L, L + sq), cos, sin, interleaved).astype(np.float16)
            n = L + snew
            ro, rlse = ref_attention(qi[None], want_k[cb, :n].transpose(1, 0, 2)[None].astype(np.float16),
                                     want_v[cb, :n].transpose(1, 0, 2)[None], causal=causal, bottom_right=True)
            Close.check(self, o[i].transpose(1, 0, 2), ro[0], 3e-3, 1e-2, f"with_kvcache O entry {i}")
            Close.check(self, lse[i], rlse[0], 2e-3, 2e-3, f"with_kvcache LSE entry {i}")
        Close.check(self, kc, want_k, 2e-3, 2e-3, "k_cache after the append (rotated; the rest unchanged)")
        np.testing.assert_array_equal(vc, want_v.astype(np.float16))
        if snew:
            self.assertFalse(np.array_equal(kc, kc0))

    def test_decode_rotary_interleaved(self):
        self.run_case(sq=1, snew=1)

    def test_prefill_chunk_half_split(self):
        self.run_case(interleaved=False, rotary_dim=64, snew=5, sq=5)

    def test_no_rotary_scalar_len_list(self):
        self.run_case(rotary_dim=0, scalar_len=12, snew=2, sq=2)
        self.run_case(rotary_dim=0, lens=(3, 9, 44), as_list=True, snew=4, sq=1, causal=False)

    def test_cache_batch_idx(self):
        self.run_case(b=2, bc=4, lens=(5, 20), cbi=(1, 3), snew=2, sq=2)

    def test_cache_batch_idx_any_order(self):
        self.run_case(b=3, bc=4, lens=(5, 20, 0), cbi=(3, 0, 2), snew=2, sq=2)

    def test_paged(self):
        for page in (1, 5, 16, 64):
            self.run_case(page=page, scap=50, lens=(10, 0, 33), snew=3, sq=3)

    def test_paged_sglang(self):
        for page in (1, 3, 16):
            self.run_case(page=page, scap=50, lens=(10, 0, 33), snew=3, sq=3, sglang=True)
        self.run_case(page=5, scap=60, lens=(41, 2, 0), snew=1, sq=1, rotary_dim=0, sglang=True, as_list=True,
                      num_splits=2)

    def test_paged_cache_batch_idx_decode(self):
        self.run_case(b=2, bc=3, page=7, scap=40, lens=(17, 30), cbi=(2, 0), snew=1, sq=1, rotary_dim=0)

    def test_split_kv(self):
        for splits in (1, 2, 3):
            self.run_case(num_splits=splits, scap=200, lens=(150, 0, 190), snew=2, sq=2)
        self.run_case(num_splits=2, page=16, scap=200, lens=(150, 7, 190), snew=1, sq=1)

    def test_no_new_tokens(self):
        self.run_case(snew=0, sq=2, rotary_dim=16)

    def test_errors(self):
        kc = np.zeros((2, 16, 2, 64), np.float16)
        q, kn = np.zeros((2, 1, 2, 64), np.float16), np.zeros((2, 4, 2, 64), np.float16)
        e = self.assert_err("seqlen_k", q, kc, kc.copy(), kn, kn, cache_seqlens=np.array([10, 14], np.int32))
        self.assertIn("cache_seqlen", e.detail)  # 14 + 4 > 16: the library's capacity check
        self.assert_err("cache_batch_idx", q, kc, kc.copy(), kn, kn,
                        cache_seqlens=np.array([0, 0], np.int32), cache_batch_idx=np.array([1, 2], np.int32))
        self.assert_err("block_table: int64", q, kc, kc.copy(), kn, kn, cache_seqlens=0,
                        block_table=np.zeros((2, 2), np.int64))
        self.assert_err("cache_seqlens: None with a block_table", q, kc, kc.copy(),
                        block_table=np.zeros((2, 2), np.int32))
        self.assert_err("num_splits: -1", q, kc, kc.copy(), kn, kn, cache_seqlens=0, num_splits=-1)
        ip, ix, lp = np.array([0, 1, 2], np.int32), np.array([0, 1], np.int32), np.array([4, 4], np.int32)
        self.assert_err("kv_last_page_len: None, but kv_indptr", q, kc, kc.copy(), kn, kn, kv_indptr=ip,
                        kv_indices=ix)
        self.assert_err("cache_seqlens: given with kv_indptr", q, kc, kc.copy(), kn, kn, cache_seqlens=0,
                        kv_indptr=ip, kv_indices=ix, kv_last_page_len=lp)
        self.assert_err("kv_indptr: int32 (2,)", q, kc, kc.copy(), kn, kn, kv_indptr=ip[:2], kv_indices=ix,
                        kv_last_page_len=lp)
        e = self.assert_err("kv_last_page_len", q, kc, kc.copy(), kn, kn, kv_indptr=ip, kv_indices=ix,
                            kv_last_page_len=np.array([2, 4], np.int32))  # 2 keys < 4 new tokens: the library
        self.assertIn("seqlen_knew", e.detail)
        self.assert_err("kv_indptr: [2] = 3 is past kv_indices' 2 entries", q, kc, kc.copy(), kn, kn,
                        kv_indptr=np.array([0, 1, 3], np.int32), kv_indices=ix, kv_last_page_len=lp)
        self.assert_err("max_seqlen_k: given without kv_indptr", q, kc, kc.copy(), kn, kn, cache_seqlens=0,
                        max_seqlen_k=8)
        self.assert_err("max_seqlen_k: 4294967296", q, kc, kc.copy(), kn, kn, kv_indptr=ip, kv_indices=ix,
                        kv_last_page_len=lp, max_seqlen_k=2**32)
        self.assert_err("k_new: shape (2, 4, 2, 32)", q, kc, kc.copy(), kn[..., :32], kn, cache_seqlens=0)
        cos = np.zeros((20, 8), np.float32)
        self.assert_err("rotary_cos: without causal", np.zeros((2, 3, 2, 64), np.float16), kc, kc.copy(),
                        kn, kn, cache_seqlens=0, rotary_cos=cos, rotary_sin=cos)

    def assert_err(self, text, *a, **kw):
        with self.assertRaises(ckt.CktError) as cm:
            ckt.fmha.with_kvcache(*a, **kw)
        self.assertIn(text, str(cm.exception))
        return cm.exception


class ABI(unittest.TestCase):
    def test_loaded(self):
        lib = ckt.library()
        self.assertTrue(lib.has_bwd and lib.has_appendkv)
        self.assertGreaterEqual(lib.sizeof["fwd"], ctypes.sizeof(_lib.FwdArgs))

    def test_appended_fields_tolerated(self):
        """A library whose struct has fields past the declared ones (paged KV, split-KV) loads, and
        the argument buffers have its size, zeroed; a moved field is refused, naming it."""
        real = ckt.library().lib.ckt_fmha_fwd_args_offset
        big = real(b"sizeof") + 64  # a later build's struct
        grown = lambda name: big if name == b"sizeof" else real(name)
        self.assertEqual(_lib.abi_diff(_lib.FwdArgs, grown), [])
        moved = lambda name: big if name == b"sizeof" else real(name) + (8 if name == b"scale" else 0)
        self.assertEqual(len(_lib.abi_diff(_lib.FwdArgs, moved)), 1)
        self.assertIn("scale: library", _lib.abi_diff(_lib.FwdArgs, moved)[0])
        older = lambda name: ctypes.c_size_t(-1).value if name == b"window_right" else real(name)
        self.assertIn("not in the library", _lib.abi_diff(_lib.FwdArgs, older)[0])
        lib = ckt.library()
        lib.sizeof = dict(lib.sizeof, fwd=big)
        try:
            a = lib.new_args("fwd")
            self.assertEqual(len(a._objects and next(iter(a._objects.values())) or b""), big)
            self.assertEqual(ctypes.string_at(ctypes.addressof(a), big), bytes(big))
        finally:
            lib.sizeof["fwd"] = real(b"sizeof")

    def test_library_location(self):
        path = ckt.find_library()
        self.assertTrue(os.path.exists(path))
        if os.environ.get("CKT_EXPECT_BUNDLED"):
            self.assertEqual(os.path.dirname(path), os.path.dirname(ckt.__file__))


if __name__ == "__main__":
    unittest.main()
