#!/usr/bin/env python3
"""Gradient check of ckt_fmha.attention (bench/ckt_fmha.py: ckt's forward and
backward as a torch.autograd.Function) against PyTorch, for the GPU machine.

    bazel build --config=nvidia //lib/fmha:fmha_gpu        # here, then
    mkdir -p .gpu_bin && cp bazel-bin/lib/fmha/gpu/libckt_fmha.so .gpu_bin/
    # on the GPU machine (bench/ and .gpu_bin/ carried over):
    python3 bench/bwd_check.py [--lib .gpu_bin/libckt_fmha.so] [--quick]
    # on this machine, through the emulator build (CPU tensors, small shapes; slow):
    bazel build //lib/fmha:libckt_fmha.so
    python3 bench/bwd_check.py --device cpu --lib bazel-bin/lib/fmha/libckt_fmha.so --quick

Each case makes q, k, v and a gradient g of the output, runs loss = (out * g).sum();
loss.backward() three ways and compares the gradients (FlashAttention's test method):
  ref: the attention written out in fp32 (softmax(q k^T * scale, masked) v), from the same
       fp16/bf16 inputs upcast;
  pt:  PyTorch in the inputs' precision: SDPA (flash backend where it takes the case, else
       the math backend; on the CPU the written-out attention rounded to the precision);
  ckt: ckt_fmha.attention.
PASS when, for dq, dk, dv (and the output), max |ckt - ref| <= 2 * max |pt - ref| + atol
(atol 1e-3 x max |ref|, for gradients that pt happens to get almost exact; pt's error
capped at 5% of max |ref|, so that a wrong baseline cannot pass everything). Cases: bf16 and
fp16, head dims 64 and 128, causal and not, GQA (h_k < h), sq != sk, both layouts
(bshd, bhsd), ragged lengths; a training-step case (linear projections into attention,
gradients of the weights); deterministic: two backward runs with deterministic=True give
bitwise identical dq, dk, dv. Prints PASS / FAIL per case, then "N passed, N failed";
exit status 1 when any failed.
"""
import argparse
import math
import os
import sys
import zlib

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ckt_fmha  # noqa: E402


def ref_attention(q, k, v, causal, scale=None, round_to=None):
    """Written-out attention on [b, h, s, d] tensors (k, v with h_k heads: GQA), causal top-left
    (SDPA's is_causal), computed in fp32; with round_to (a dtype) the logits, probabilities and
    output are rounded to it, as a kernel in that precision would (the CPU stand-in for SDPA)."""
    h, hk = q.shape[1], k.shape[1]
    if hk != h:
        k, v = k.repeat_interleave(h // hk, dim=1), v.repeat_interleave(h // hk, dim=1)

    def rnd(t):
        return t.to(round_to).float() if round_to is not None else t

    scale = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    s = rnd(torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale)
    if causal:
        sq, sk = q.shape[2], k.shape[2]
        visible = torch.ones(sq, sk, dtype=torch.bool, device=q.device).tril()
        s = s.masked_fill(~visible, float("-inf"))
    return rnd(torch.matmul(rnd(torch.softmax(s, dim=-1)), v.float())).to(q.dtype)


def sdpa_pt(q, k, v, causal):
    """PyTorch's attention in the inputs' precision: SDPA (flash where it can, else math), or the
    written-out attention where there is no SDPA (CPU, old torch)."""
    if not q.is_cuda or not hasattr(F, "scaled_dot_product_attention"):
        return ref_attention(q, k, v, causal, round_to=q.dtype), "ref rounded to the precision"
    h, hk = q.shape[1], k.shape[1]
    if hk != h:  # GQA: SDPA's enable_gqa is recent; repeating the heads gives the same gradients (summed)
        k, v = k.repeat_interleave(h // hk, dim=1), v.repeat_interleave(h // hk, dim=1)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal), "flash"
    except RuntimeError:
        with sdpa_kernel(SDPBackend.MATH):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal), "math"


def grads_of(fn, leaves, g):
    """fn(*leaves) -> out; (out, grads of (out * g).sum() w.r.t. leaves)."""
    leaves = [x.detach().clone().requires_grad_() for x in leaves]
    out = fn(*leaves)
    (out.float() * g.float()).sum().backward()
    return out.detach(), [x.grad for x in leaves]


def compare(name, got, pt, ref):
    """Max errors against ref, and whether got is within 2x pt's error (+ a floor). pt's error
    counts at most 5% of max |ref|, so that a baseline that is itself wrong (e.g. another
    causal alignment) cannot make the check vacuous."""
    e_got = (got.float() - ref.float()).abs().max().item()
    e_pt = (pt.float() - ref.float()).abs().max().item()
    ref_max = max(ref.float().abs().max().item(), 1e-6)
    return e_got <= 2 * min(e_pt, 0.05 * ref_max) + 1e-3 * ref_max, f"{name} {e_got:.2e} (pt {e_pt:.2e})"


class Checker:
    def __init__(self, lib, device):
        self.lib, self.device = lib, device
        self.passed = self.failed = 0

    def report(self, ok, what, detail):
        self.passed += ok
        self.failed += not ok
        print(f"{'PASS' if ok else 'FAIL'}: {what}: {detail}", flush=True)

    def case(self, prec, b, h, hk, sq, sk, d, causal, layout="bshd", deterministic=False):
        dtype = torch.bfloat16 if prec == "bf16" else torch.float16
        what = (f"{prec} b={b} h={h}/{hk} s={sq}/{sk} d={d} causal={int(causal)} {layout}"
                f"{' det' if deterministic else ''}")
        gen = torch.Generator(device="cpu").manual_seed(zlib.crc32(what.encode()))
        # [b, s, h, d] storage; the bhsd layout passes the [b, h, s, d] views
        q, k, v, g = (torch.randn(b, n, hh, d, generator=gen).to(self.device, dtype)
                      for n, hh in ((sq, h), (sk, hk), (sk, hk), (sq, h)))
        if layout == "bhsd":
            q, k, v, g = (t.transpose(1, 2) for t in (q, k, v, g))

        def bhsd(t):
            return t.transpose(1, 2) if layout == "bshd" else t

        def back(t):
            return t.transpose(1, 2) if layout == "bshd" else t

        try:
            o_ckt, g_ckt = grads_of(lambda q_, k_, v_: ckt_fmha.attention(
                q_, k_, v_, causal=causal, deterministic=deterministic, layout=layout, lib=self.lib), (q, k, v), g)
        except ckt_fmha.CktError as e:
            self.report(False, what, f"ckt error: {e}")
            return
        o_ref, g_ref = grads_of(lambda q_, k_, v_: back(ref_attention(bhsd(q_), bhsd(k_), bhsd(v_), causal)),
                                (q.float(), k.float(), v.float()), g)
        backend = []

        def pt(q_, k_, v_):
            out, name = sdpa_pt(bhsd(q_), bhsd(k_), bhsd(v_), causal)
            backend.append(name)
            return back(out)

        o_pt, g_pt = grads_of(pt, (q, k, v), g)
        results = [compare("o", o_ckt, o_pt, o_ref)] + [
            compare(n, x, y, z) for n, x, y, z in zip(("dq", "dk", "dv"), g_ckt, g_pt, g_ref)]
        self.report(all(ok for ok, _ in results), what, f"vs fp32 ref, pt = {backend[0]}: " +
                    ", ".join(t for _, t in results))

    def deterministic(self, prec, b, h, hk, s, d, causal):
        """Two backward runs with deterministic=True: bitwise identical gradients."""
        dtype = torch.bfloat16 if prec == "bf16" else torch.float16
        what = f"deterministic {prec} b={b} h={h}/{hk} s={s} d={d} causal={int(causal)}"
        gen = torch.Generator(device="cpu").manual_seed(7)
        q, k, v, g = (torch.randn(b, s, hh, d, generator=gen).to(self.device, dtype) for hh in (h, hk, hk, h))
        runs = []
        for _ in range(2):
            _, gr = grads_of(lambda q_, k_, v_: ckt_fmha.attention(q_, k_, v_, causal=causal, deterministic=True,
                                                                   lib=self.lib), (q, k, v), g)
            runs.append(gr)
        same = [torch.equal(x, y) for x, y in zip(*runs)]
        self.report(all(same), what, "dq, dk, dv bitwise equal: " + ", ".join(
            f"{n} {'yes' if s_ else 'NO'}" for n, s_ in zip(("dq", "dk", "dv"), same)))

    def training_step(self, prec, b, s, hidden, h, hk, causal):
        """x -> linear q/k/v projections -> attention -> linear out; gradients of the weights."""
        dtype = torch.bfloat16 if prec == "bf16" else torch.float16
        d = hidden // h
        what = f"training step {prec} b={b} s={s} hidden={hidden} h={h}/{hk} causal={int(causal)}"
        gen = torch.Generator(device="cpu").manual_seed(3)
        x = torch.randn(b, s, hidden, generator=gen).to(self.device, dtype)
        w_qkv = (torch.randn(hidden, (h + 2 * hk) * d, generator=gen) / math.sqrt(hidden)).to(self.device, dtype)
        w_o = (torch.randn(h * d, hidden, generator=gen) / math.sqrt(h * d)).to(self.device, dtype)

        def model(attn, w_qkv_, w_o_, x_):
            qkv = (x_ @ w_qkv_).view(b, s, h + 2 * hk, d)
            q, k, v = qkv[:, :, :h], qkv[:, :, h:h + hk], qkv[:, :, h + hk:]
            return attn(q, k, v).reshape(b, s, h * d) @ w_o_

        def ckt_attn(q, k, v):
            return ckt_fmha.attention(q, k, v, causal=causal, lib=self.lib)

        def ref_attn(q, k, v):
            return ref_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal).transpose(1, 2)

        def pt_attn(q, k, v):
            return sdpa_pt(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal)[0].transpose(1, 2)

        g = torch.randn(b, s, hidden, generator=gen).to(self.device, dtype)
        try:
            y_ckt, g_ckt = grads_of(lambda *a: model(ckt_attn, *a), (w_qkv, w_o, x), g)
        except ckt_fmha.CktError as e:
            self.report(False, what, f"ckt error: {e}")
            return
        y_ref, g_ref = grads_of(lambda *a: model(ref_attn, *a), (w_qkv.float(), w_o.float(), x.float()), g)
        y_pt, g_pt = grads_of(lambda *a: model(pt_attn, *a), (w_qkv, w_o, x), g)
        results = [compare("y", y_ckt, y_pt, y_ref)] + [
            compare(n, a_, b_, c_) for n, a_, b_, c_ in zip(("dW_qkv", "dW_o", "dx"), g_ckt, g_pt, g_ref)]
        self.report(all(ok for ok, _ in results), what, ", ".join(t for _, t in results))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=None, help="libckt_fmha.so (default: $CKT_FMHA_LIB, .gpu_bin/, bazel-bin/lib/fmha/gpu/)")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu with the emulator build of the library")
    ap.add_argument("--quick", action="store_true", help="a few small cases (the emulator's pace)")
    args = ap.parse_args()
    lib = ckt_fmha.Lib(args.lib)
    if not lib.has_bwd:
        sys.exit(f"{lib.path}: no backward in this libckt_fmha (ckt_fmha_bwd)")
    dev = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu (emulator)"
    print(f"# {dev}, torch {torch.__version__}, ckt {lib.path}")
    c = Checker(lib, args.device)
    if args.quick:
        c.case("fp16", 1, 2, 2, 64, 64, 64, False)
        c.case("bf16", 1, 4, 2, 70, 70, 64, True, layout="bhsd")
        c.case("fp16", 2, 2, 1, 40, 72, 32, True)
        c.deterministic("bf16", 1, 2, 1, 96, 64, True)
        c.training_step("bf16", 1, 48, 128, 4, 2, True)
    else:
        for prec in ("bf16", "fp16"):
            for d in (64, 128):
                for causal in (False, True):
                    c.case(prec, 2, 8, 8, 1024, 1024, d, causal)
                    c.case(prec, 2, 16, 4, 512, 512, d, causal, layout="bhsd")       # GQA
            c.case(prec, 3, 4, 1, 1000, 1000, 128, True)                             # MQA, ragged
            c.case(prec, 2, 8, 2, 384, 640, 64, False)                               # sq != sk
            c.case(prec, 2, 8, 2, 640, 384, 64, True)                                # sq > sk, causal
            c.case(prec, 1, 4, 4, 257, 257, 256, True)                               # d256, ragged
        c.deterministic("bf16", 2, 16, 4, 2048, 128, True)
        c.deterministic("fp16", 4, 8, 8, 1024, 64, False)
        c.training_step("bf16", 2, 512, 1024, 16, 4, True)
        c.training_step("fp16", 2, 512, 1024, 8, 8, False)
    print(f"{c.passed} passed, {c.failed} failed")
    sys.exit(1 if c.failed else 0)


if __name__ == "__main__":
    main()
