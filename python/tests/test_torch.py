"""The ckt package with PyTorch: attention / varlen forward and autograd gradients against
float32 references (SDPA and an explicit masked softmax), with_kvcache against a manual cache
update, errors. Skips when torch is absent.

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


def ref(q, k, v, causal=False, window=None, bottom_right=False, scale=None, softcap=0.0):
    """[b, h, s, d] float32 attention of ckt/fmha/args.h, differentiable; k / v with h_k heads."""
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
    vis = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
    if left >= 0:
        vis &= rel >= -left
    if right >= 0:
        vis &= rel <= right
    s = s.masked_fill(~vis, float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)
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
