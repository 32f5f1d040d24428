"""The ckt package with PyTorch: attention / varlen forward and autograd gradients against
float32 references (SDPA and an explicit masked softmax), with_kvcache against a manual cache
update, dropout (against the keep mask of the returned random bytes), bias (dbias, broadcast)
and ALiBi, errors. Skips when torch is absent (the SDPA test: when torch has no SDPA).

    # GPU machine: the GPU build of the library
    bash tools/build_wheel.sh --config=nvidia && pip install --no-index dist/ckt-*.whl
    python3 python/tests/test_torch.py -v
    # or from the sources:  CKT_FMHA_LIB=bazel-bin/lib/fmha/gpu/libckt_fmha.so PYTHONPATH=python python3 ...
    # any machine with torch: CPU tensors on the emulator build
    CKT_TEST_DEVICE=cpu CKT_FMHA_LIB=bazel-bin/lib/fmha/libckt_fmha.so PYTHONPATH=python python3 python/tests/test_torch.py

CKT_TEST_DEVICE: cuda (default when available) or cpu (for the emulator build).
"""
import itertools
import math
import os
import unittest

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the test is skipped as a whole
    torch = None

import ckt

DEV = os.environ.get("CKT_TEST_DEVICE") or ("cuda" if torch is not None and torch.cuda.is_available() else "cpu")


def ref(q, k, v, causal=False, window=None, bottom_right=False, scale=None, softcap=0.0, bias=None, alibi=None,
        keep=None, p_drop=0.0):
    """[b, h, s, d] float32 attention of ckt/fmha/args.h, differentiable; k / v with h_k heads.
    bias: broadcastable to [b, h, sq, sk], added to the scaled logits; alibi: slopes [h] or [b, h],
    -slope * |j - i - off| added (off: the mask's diagonal); keep (bool [b, h, sq, sk]) and p_drop:
    dropout on the probabilities, O = (P o keep / (1 - p)) V."""
    q, k, v = q.float(), k.float(), v.float()
    h, hk, sq, sk = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
    k, v = k.repeat_interleave(h // hk, 1), v.repeat_interleave(h // hk, 1)
    s = q @ k.transpose(-1, -2) * (scale or 1.0 / math.sqrt(q.shape[-1]))
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    left, right = window if window is not None else (-1, -1)
    if causal:
        right = 0
    rel = (torch.arange(sk, device=q.device)[None, :] - torch.arange(sq, device=q.device)[:, None]
           - (sk - sq if bottom_right else 0))
    if bias is not None:
        s = s + bias.float()
    if alibi is not None:
        sl = alibi.float().reshape((1,) * (2 - alibi.dim()) + tuple(alibi.shape))
        s = s - sl[..., None, None] * rel.abs().float()
    vis = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
    if left >= 0:
        vis &= rel >= -left
    if right >= 0:
        vis &= rel <= right
    s = s.masked_fill(~vis, float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)
    if keep is not None:
        p = p * keep / (1.0 - p_drop)
    return p @ v


def close(tc, got, want, atol, rtol, what):
    got, want = got.float(), want.float()
    err = (got - want).abs() - (atol + rtol * want.abs())
    if (err > 0).any():
        i = int(err.flatten().argmax())
        tc.fail(f"{what}: {(err > 0).sum().item()} of {err.numel()} mismatches, worst at flat {i}: "
                f"got {got.flatten()[i].item():.5f}, want {want.flatten()[i].item():.5f}")


def rand(*shape, dtype=None, grad=False):
    x = torch.randn(*shape, device=DEV, dtype=dtype or torch.float16)
    return x.requires_grad_(grad)


@unittest.skipIf(torch is None, "torch is not installed")
class Torch(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)

    def grads_case(self, layout, b, h, hk, sq, sk, d, dtype=None, **kw):
        dtype = dtype or torch.float16
        shp = (lambda s, hh: (b, s, hh, d)) if layout == "bshd" else (lambda s, hh: (b, hh, s, d))
        q, k, v = rand(*shp(sq, h), dtype=dtype, grad=True), rand(*shp(sk, hk), dtype=dtype, grad=True), \
            rand(*shp(sk, hk), dtype=dtype, grad=True)
        o = ckt.fmha.attention(q, k, v, layout=layout, **kw)
        self.assertEqual(o.shape, shp(sq, h))
        do = torch.randn_like(o)
        (o.float() * do).sum().backward()
        got = [q.grad, k.grad, v.grad]
        q2, k2, v2 = (x.detach().clone().requires_grad_(True) for x in (q, k, v))
        tr = (lambda x: x.transpose(1, 2)) if layout == "bshd" else (lambda x: x)
        ro = tr(ref(tr(q2), tr(k2), tr(v2), **{a: kw[a] for a in kw if a != "deterministic"}))
        (ro * do.float()).sum().backward()
        tol = 2e-2 if dtype == torch.bfloat16 else 5e-3
        close(self, o, ro, tol, 2 * tol, f"O {layout} {kw}")
        for name, g, r in zip(("dq", "dk", "dv"), got, (q2.grad, k2.grad, v2.grad)):
            self.assertEqual(g.shape, r.shape)
            close(self, g, r, 2 * tol, 4 * tol, f"{name} {layout} {kw}")

    def test_bshd_causal_gqa(self):
        self.grads_case("bshd", 2, 8, 2, 65, 65, 64, causal=True)

    def test_bhsd_bf16(self):
        self.grads_case("bhsd", 1, 4, 4, 40, 97, 128, dtype=torch.bfloat16)

    def test_bottom_right_window_softcap(self):
        self.grads_case("bshd", 1, 4, 1, 33, 80, 64, causal=True, bottom_right=True, window=(16, 0), softcap=3.0,
                        deterministic=True)

    @unittest.skipIf(torch is not None and not hasattr(F, "scaled_dot_product_attention"), "torch < 2.0: no SDPA")
    def test_against_sdpa(self):
        q, k, v = rand(2, 4, 50, 64), rand(2, 4, 50, 64), rand(2, 4, 50, 64)
        o = ckt.fmha.attention(q, k, v, causal=True, layout="bhsd")
        want = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
        close(self, o, want, 5e-3, 1e-2, "O vs SDPA")

    def test_expanded_grad(self):
        """o.sum().backward(): a gradient with stride 0 (copied before ckt's backward)."""
        q, k, v = rand(1, 16, 2, 32, grad=True), rand(1, 16, 2, 32, grad=True), rand(1, 16, 2, 32, grad=True)
        ckt.fmha.attention(q, k, v).sum().backward()
        self.assertTrue(all(torch.isfinite(x.grad).all() for x in (q, k, v)))
        self.assertGreater(v.grad.abs().max().item(), 0.1)

    def test_lse(self):
        q, k, v = rand(1, 20, 2, 64), rand(1, 30, 2, 64), rand(1, 30, 2, 64)
        o, lse = ckt.fmha.attention(q, k, v, return_lse=True)
        s = q.float().transpose(1, 2) @ k.float().transpose(1, 2).transpose(-1, -2) / 8.0
        close(self, lse, torch.logsumexp(s, -1), 1e-3, 1e-3, "LSE")

    def test_varlen_grads(self):
        lens = [13, 1, 40]
        cu = torch.tensor([0] + list(itertools.accumulate(lens)), dtype=torch.int32, device=DEV)
        q, k, v = (rand(int(cu[-1]), 4, 64, grad=True) for _ in range(3))
        o = ckt.fmha.varlen(q, k, v, cu, cu, max(lens), max(lens), causal=True)
        do = torch.randn_like(o)
        (o.float() * do).sum().backward()
        for i in range(len(lens)):
            s = slice(int(cu[i]), int(cu[i + 1]))
            q2, k2, v2 = (x.detach()[s].transpose(0, 1)[None].clone().requires_grad_(True) for x in (q, k, v))
            ro = ref(q2, k2, v2, causal=True, bottom_right=True)
            (ro * do[s].transpose(0, 1)[None].float()).sum().backward()
            close(self, o[s].transpose(0, 1)[None], ro, 5e-3, 1e-2, f"varlen O {i}")
            for name, g, r in (("dq", q.grad, q2.grad), ("dk", k.grad, k2.grad), ("dv", v.grad, v2.grad)):
                close(self, g[s].transpose(0, 1)[None], r, 1e-2, 2e-2, f"varlen {name} {i}")

    def test_with_kvcache(self):
        b, h, hk, d, cap, snew, rd = 3, 8, 2, 128, 64, 2, 64
        kc, vc = rand(b, cap, hk, d), rand(b, cap, hk, d)
        kc0 = kc.clone()
        lens = torch.tensor([5, 0, 60], dtype=torch.int32, device=DEV)
        q, kn, vn = rand(b, snew, h, d), rand(b, snew, hk, d), rand(b, snew, hk, d)
        ang = torch.rand(cap + snew, rd // 2, device=DEV) * 6.28
        cos, sin = ang.cos().half(), ang.sin().half()
        q0 = q.clone()
        o = ckt.fmha.with_kvcache(q, kc, vc, kn, vn, cache_seqlens=lens, rotary_cos=cos, rotary_sin=sin,
                                  rotary_interleaved=False, causal=True)
        self.assertTrue(torch.equal(q, q0))

        def rope(x, pos):  # x [s, h, d], half-split
            c, s_ = cos.float()[pos][:, None], sin.float()[pos][:, None]
            x = x.float().clone()
            a, bb = x[..., :rd // 2].clone(), x[..., rd // 2:rd].clone()
            x[..., :rd // 2], x[..., rd // 2:rd] = a * c - bb * s_, a * s_ + bb * c
            return x

        for i in range(b):
            L = int(lens[i])
            pos = torch.arange(L, L + snew, device=DEV)
            close(self, kc[i, L:L + snew], rope(kn[i], pos), 2e-3, 2e-3, f"k_cache rows {i}")
            self.assertTrue(torch.equal(vc[i, L:L + snew], vn[i]))
            self.assertTrue(torch.equal(kc[i, :L], kc0[i, :L]))
            qi = rope(q[i], pos).half().transpose(0, 1)[None]
            ro = ref(qi, kc[i, :L + snew].transpose(0, 1)[None], vc[i, :L + snew].transpose(0, 1)[None],
                     causal=True, bottom_right=True)
            close(self, o[i].transpose(0, 1)[None], ro, 5e-3, 1e-2, f"with_kvcache O {i}")

    def test_with_kvcache_paged_split(self):
        """Decode over a paged cache (vLLM block table, shuffled pages) with automatic and explicit
        split-KV, appending one token, against the same attention on the gathered cache."""
        b, h, hk, d, page = 3, 8, 2, 128, 16
        cap = 2048 if DEV == "cuda" else 128
        per = cap // page
        pool_k, pool_v = rand(b * per + 3, page, hk, d), rand(b * per + 3, page, hk, d)
        table = torch.randperm(b * per + 3, device=DEV)[:b * per].to(torch.int32).view(b, per)
        lens = torch.tensor([cap - 1, 7, cap // 2], dtype=torch.int32, device=DEV)
        cbi = torch.tensor([2, 0, 1], dtype=torch.int32, device=DEV)
        for splits in (0, 1, 3):
            q, kn, vn = rand(b, 1, h, d), rand(b, 1, hk, d), rand(b, 1, hk, d)
            o, lse = ckt.fmha.with_kvcache(q, pool_k, pool_v, kn, vn, cache_seqlens=lens, cache_batch_idx=cbi,
                                           block_table=table, causal=True, num_splits=splits, return_lse=True)
            for i in range(b):
                cb, L = int(cbi[i]), int(lens[i]) + 1
                kk = pool_k[table[cb].long()].reshape(-1, hk, d)[:L]
                vv = pool_v[table[cb].long()].reshape(-1, hk, d)[:L]
                self.assertTrue(torch.equal(kk[L - 1], kn[i, 0]) and torch.equal(vv[L - 1], vn[i, 0]))
                ro = ref(q[i].transpose(0, 1)[None], kk.transpose(0, 1)[None], vv.transpose(0, 1)[None],
                         causal=True, bottom_right=True)
                close(self, o[i].transpose(0, 1)[None], ro, 5e-3, 1e-2, f"paged splits {splits} O {i}")
                self.assertEqual(tuple(lse.shape), (b, h, 1))

    def test_sink_grads(self):
        """Attention sinks: out and every gradient (dsink too) through autograd against a float32
        reference whose softmax has the sink as an extra column (gpt-oss)."""
        b, h, hk, sq, sk, d = 2, 4, 2, 37, 70, 64
        q, k, v = rand(b, sq, h, d, grad=True), rand(b, sk, hk, d, grad=True), rand(b, sk, hk, d, grad=True)
        sink = torch.tensor([0.5, -1.0, 2.0, 4.0], device=DEV, requires_grad=True)
        o = ckt.fmha.attention(q, k, v, causal=True, bottom_right=True, sink=sink)
        do = torch.randn_like(o)
        o.backward(do)
        got = [x.grad.clone() for x in (q, k, v, sink)]
        qr, kr, vr = (x.detach().float().transpose(1, 2).requires_grad_() for x in (q, k, v))
        sr = sink.detach().clone().requires_grad_()
        kk, vv = kr.repeat_interleave(h // hk, 1), vr.repeat_interleave(h // hk, 1)
        s = qr @ kk.transpose(-1, -2) / math.sqrt(d)
        vis = torch.arange(sk, device=DEV)[None, :] - torch.arange(sq, device=DEV)[:, None] - (sk - sq) <= 0
        s = s.masked_fill(~vis, float("-inf"))
        s = torch.cat([s, sr[None, :, None, None].expand(b, h, sq, 1)], -1)  # the sink column
        ro = torch.softmax(s, -1)[..., :sk] @ vv
        ro.backward(do.float().transpose(1, 2))
        close(self, o.transpose(1, 2), ro, 2e-3, 1e-2, "out with sinks")
        for name, g, r in zip(("dq", "dk", "dv"), got[:3], (qr.grad, kr.grad, vr.grad)):
            close(self, g.transpose(1, 2), r, 1e-2, 2e-2, f"{name} with sinks")
        close(self, got[3], sr.grad, 1e-2, 1e-2, "dsink")
        self.assertGreater(sr.grad.abs().max().item(), 1e-3)

    def test_dropout_grads(self):
        """Dropout through autograd: out and gradients against the float32 reference with the keep
        mask of the returned random bytes (the backward regenerates the forward's mask)."""
        b, h, hk, sq, sk, d, p = 2, 4, 2, 37, 70, 64, 0.25
        q, k, v = rand(b, sq, h, d, grad=True), rand(b, sk, hk, d, grad=True), rand(b, sk, hk, d, grad=True)
        kw = dict(causal=True, bottom_right=True, dropout_p=p, dropout_seed=2 ** 35 + 11, dropout_offset=2 ** 32 + 5)
        o, rv = ckt.fmha.attention(q, k, v, return_dropout_randval=True, **kw)
        self.assertEqual((tuple(rv.shape), rv.dtype, rv.device.type), ((b, h, sq, sk), torch.uint8, q.device.type))
        self.assertTrue(torch.equal(ckt.fmha.attention(q.detach(), k.detach(), v.detach(), **kw), o.detach()))
        do = torch.randn_like(o)
        o.backward(do)
        keep = rv >= ckt.fmha.dropout_threshold(p)
        vis = torch.arange(sk, device=DEV)[None, :] - torch.arange(sq, device=DEV)[:, None] - (sk - sq) <= 0
        self.assertLess(abs(keep[..., vis].float().mean().item() - (1 - 64 / 256)), 0.05)  # hidden: maybe 0
        qr, kr, vr = (x.detach().transpose(1, 2).clone().requires_grad_() for x in (q, k, v))
        ro = ref(qr, kr, vr, causal=True, bottom_right=True, keep=keep, p_drop=p)
        ro.backward(do.float().transpose(1, 2))
        close(self, o.transpose(1, 2), ro, 5e-3, 1e-2, "out with dropout")
        for name, g, r in (("dq", q.grad, qr.grad), ("dk", k.grad, kr.grad), ("dv", v.grad, vr.grad)):
            close(self, g.transpose(1, 2), r, 1e-2, 2e-2, f"{name} with dropout")
        # a drawn seed follows torch.manual_seed
        torch.manual_seed(5)
        a = ckt.fmha.attention(q.detach(), k.detach(), v.detach(), dropout_p=0.5)
        torch.manual_seed(5)
        self.assertTrue(torch.equal(a, ckt.fmha.attention(q.detach(), k.detach(), v.detach(), dropout_p=0.5)))
        self.assertFalse(torch.equal(a, ckt.fmha.attention(q.detach(), k.detach(), v.detach(), dropout_p=0.5)))

    def test_dropout_seed_offset_tensor(self):
        """dropout_seed_offset: an int64 [2] tensor on the device, read by the kernels; the same out
        and gradients (deterministic mode: bitwise) as the values passed by value."""
        b, h, sq, sk, d, p = 1, 4, 30, 50, 64, 0.2
        seed, off = 2 ** 40 + 3, 17
        grads = []
        for kw in (dict(dropout_seed=seed, dropout_offset=off),
                   dict(dropout_seed_offset=torch.tensor([seed, off], dtype=torch.int64, device=DEV))):
            torch.manual_seed(1)
            q, k, v = rand(b, sq, h, d, grad=True), rand(b, sk, h, d, grad=True), rand(b, sk, h, d, grad=True)
            o = ckt.fmha.attention(q, k, v, causal=True, dropout_p=p, deterministic=True, **kw)
            o.backward(torch.ones_like(o))
            grads.append([o.detach(), q.grad, k.grad, v.grad])
        for name, a, c in zip(("out", "dq", "dk", "dv"), *grads):
            self.assertTrue(torch.equal(a, c), name)

    def bias_case(self, leaf, make=lambda x: x, dtype=torch.float16, **kw):
        """attention with bias = make(leaf) against ref with make(a copy of leaf): out, dq, dk, dv,
        and leaf's gradient when it requires grad (autograd sums a broadcast bias's over its
        broadcast dims, through ckt's reduction or torch's expand)."""
        b, h, hk, sq, sk, d = 2, 4, 2, 33, 48, 64
        q, k, v = (rand(b, s, n, d, dtype=dtype, grad=True) for s, n in ((sq, h), (sk, hk), (sk, hk)))
        o = ckt.fmha.attention(q, k, v, bias=make(leaf), **kw)
        do = torch.randn_like(o)
        o.backward(do)
        qr, kr, vr = (x.detach().transpose(1, 2).clone().requires_grad_() for x in (q, k, v))
        lr = leaf.detach().clone().requires_grad_(leaf.requires_grad)
        ro = ref(qr, kr, vr, bias=make(lr), **kw)
        ro.backward(do.float().transpose(1, 2))
        tol = 2e-2 if dtype == torch.bfloat16 else 5e-3
        what = f"bias {tuple(make(leaf).shape)} from {tuple(leaf.shape)}"
        close(self, o.transpose(1, 2), ro, tol, 2 * tol, "out with " + what)
        for name, g, r in (("dq", q.grad, qr.grad), ("dk", k.grad, kr.grad), ("dv", v.grad, vr.grad)):
            close(self, g.transpose(1, 2), r, 2 * tol, 4 * tol, f"{name} with {what}")
        if not leaf.requires_grad:
            self.assertIsNone(leaf.grad)
            return
        self.assertEqual((leaf.grad.shape, leaf.grad.dtype), (leaf.shape, leaf.dtype))
        close(self, leaf.grad, lr.grad, 2 * tol, 4 * tol, "dbias of " + what)
        self.assertGreater(lr.grad.abs().max().item(), 1e-2)

    def test_bias_grads(self):
        """bias= through autograd: full, broadcast over the batch, a 2-D [sq, sk], an expanded
        [b, 1, 1, sk] with a window, one without grad, bf16."""
        b, h, sq, sk = 2, 4, 33, 48
        for shape in ((b, h, sq, sk), (1, h, sq, sk), (sq, sk)):
            self.bias_case(rand(*shape, grad=True), causal=True)
        self.bias_case(rand(b, 1, 1, sk, grad=True), lambda x: x.expand(b, h, sq, sk), bottom_right=True,
                       window=(8, 4))
        self.bias_case(rand(b, h, sq, sk))  # no grad wanted
        self.bias_case(rand(b, h, sq, sk, dtype=torch.bfloat16, grad=True), dtype=torch.bfloat16)

    def test_alibi(self):
        b, h, sq, sk, d = 2, 4, 20, 45, 64
        for slopes, kw in ((torch.tensor([0.05, 0.1, 0.3, 1.0], device=DEV), dict(bottom_right=True)),
                           (torch.rand(b, h, device=DEV), dict(causal=True)),
                           (torch.rand(h, device=DEV), dict())):
            q, k, v = rand(b, sq, h, d, grad=True), rand(b, sk, h, d, grad=True), rand(b, sk, h, d, grad=True)
            o = ckt.fmha.attention(q, k, v, alibi_slopes=slopes, **kw)
            do = torch.randn_like(o)
            o.backward(do)
            qr, kr, vr = (x.detach().transpose(1, 2).clone().requires_grad_() for x in (q, k, v))
            ro = ref(qr, kr, vr, alibi=slopes, **kw)
            ro.backward(do.float().transpose(1, 2))
            close(self, o.transpose(1, 2), ro, 5e-3, 1e-2, f"out with ALiBi {kw}")
            for name, g, r in (("dq", q.grad, qr.grad), ("dk", k.grad, kr.grad), ("dv", v.grad, vr.grad)):
                close(self, g.transpose(1, 2), r, 1e-2, 2e-2, f"{name} with ALiBi {kw}")

    def test_varlen_bias_grads(self):
        lens = [13, 1, 40]
        cu = torch.tensor([0] + list(itertools.accumulate(lens)), dtype=torch.int32, device=DEV)
        h, d, m = 2, 64, max(lens)
        q, k, v = (rand(int(cu[-1]), h, d, grad=True) for _ in range(3))
        bias = rand(len(lens), h, m, m, grad=True)
        o = ckt.fmha.varlen(q, k, v, cu, cu, m, m, causal=True, bias=bias)
        do = torch.randn_like(o)
        o.backward(do)
        self.assertEqual(bias.grad.shape, bias.shape)
        for i, n in enumerate(lens):
            s = slice(int(cu[i]), int(cu[i + 1]))
            q2, k2, v2 = (x.detach()[s].transpose(0, 1)[None].clone().requires_grad_(True) for x in (q, k, v))
            b2 = bias.detach()[i:i + 1, :, :n, :n].clone().requires_grad_(True)
            ro = ref(q2, k2, v2, causal=True, bottom_right=True, bias=b2)
            (ro * do[s].transpose(0, 1)[None].float()).sum().backward()
            close(self, o[s].transpose(0, 1)[None], ro, 5e-3, 1e-2, f"varlen O with bias {i}")
            for name, g, r in (("dq", q.grad[s], q2.grad), ("dk", k.grad[s], k2.grad), ("dv", v.grad[s], v2.grad)):
                close(self, g.transpose(0, 1)[None], r, 1e-2, 2e-2, f"varlen {name} with bias {i}")
            close(self, bias.grad[i:i + 1, :, :n, :n], b2.grad, 1e-2, 2e-2, f"varlen dbias {i}")
            self.assertEqual(bias.grad[i, :, n:].abs().max().item() if n < m else 0.0, 0.0)  # padding

    def test_with_kvcache_alibi(self):
        b, h, hk, d, cap = 2, 4, 2, 64, 96
        kc, vc = rand(b, cap, hk, d), rand(b, cap, hk, d)
        lens = torch.tensor([30, 95], dtype=torch.int32, device=DEV)
        q = rand(b, 1, h, d)
        slopes = torch.tensor([0.05, 0.1, 0.3, 1.0], device=DEV)
        for splits in (1, 2):
            o = ckt.fmha.with_kvcache(q, kc, vc, cache_seqlens=lens, alibi_slopes=slopes, num_splits=splits)
            for i in range(b):
                n = int(lens[i])
                ro = ref(q[i].transpose(0, 1)[None], kc[i, :n].transpose(0, 1)[None], vc[i, :n].transpose(0, 1)[None],
                         bottom_right=True, alibi=slopes)
                close(self, o[i].transpose(0, 1)[None], ro, 5e-3, 1e-2, f"with_kvcache ALiBi splits {splits} {i}")

    def test_option_errors(self):
        z = torch.zeros(1, 8, 2, 64, device=DEV, dtype=torch.float16)
        for kw, text in ((dict(dropout_p=1.0), "dropout_p:"),
                         (dict(bias=torch.zeros(1, 2, 8, 8, device=DEV)), "bias: dtype float32, q is float16"),
                         (dict(bias=torch.zeros(1, 2, 8, 8, device=DEV, dtype=torch.float16),
                               alibi_slopes=torch.ones(2, device=DEV)), "alibi_slopes:"),
                         (dict(alibi_slopes=torch.ones(2, device=DEV), softcap=10.0),
                          "alibi_slopes: set with softcap")):
            with self.assertRaises(ckt.CktError) as cm:
                ckt.fmha.attention(z, z, z, **kw)
            self.assertIn(text, str(cm.exception))

    def test_errors(self):
        z = torch.zeros(1, 8, 2, 7, device=DEV, dtype=torch.float16)
        with self.assertRaises(ckt.CktError) as cm:
            ckt.fmha.attention(z, z, z)
        self.assertIn("hdim_q is not a multiple of 8", str(cm.exception))
        z = torch.zeros(1, 8, 3, 64, device=DEV, dtype=torch.float16)
        with self.assertRaises(ckt.CktError) as cm:
            ckt.fmha.attention(z, z[:, :, :2], z[:, :, :2])
        self.assertTrue(cm.exception.detail.startswith("nhead_q:"))


if __name__ == "__main__":
    unittest.main()
