"""PyTorch SDPA on a point's shape, when torch with CUDA is importable (the GPU machine):
FlashAttention-2 (SDPBackend.FLASH_ATTENTION) and cuDNN (SDPBackend.CUDNN_ATTENTION).

The timing is bench/fmha_bench.py's (time_sdpa: CUDA events, L2 flushed before each run,
median of repeat after warmup) and for the backward bench/fmha_bwd_bench.py's
(time_sdpa_bwd: torch.autograd.grad on one forward's graph); this module only builds the
tensors of a point. Tensors are [b, s, h, d] (SDPA sees the [b, h, s, d] view), as there.
TFLOPS use the example's FLOP count of the same point (its "flops"), so that the ratios
between backends are time ratios.
"""
import os
import sys

BACKENDS = ("flash", "cudnn")


def load(bench_dirs):
    """(Sdpa, None) or (None, why not)."""
    try:
        import torch
    except ImportError:
        return None, "torch is not importable"
    if not torch.cuda.is_available():
        return None, "torch has no CUDA device"
    for d in bench_dirs:
        if os.path.isfile(os.path.join(d, "fmha_bench.py")) and os.path.isfile(os.path.join(d, "fmha_bwd_bench.py")):
            if d not in sys.path:
                sys.path.insert(0, d)
            break
    else:
        return None, f"bench/fmha_bench.py not found (looked in {', '.join(bench_dirs)}; --bench-dir)"
    try:
        import fmha_bench  # noqa: F401  (bench/: timed, time_sdpa)
        import fmha_bwd_bench  # noqa: F401  (bench/: time_sdpa_bwd)
    except Exception as e:  # an import error inside bench/ (ckt_fmha, torch version)
        return None, f"cannot import bench/fmha_bench.py: {e}"
    return Sdpa(torch), None


def unsupported(example, r):
    """Why SDPA cannot run the point's shape as the example does, or None."""
    if example not in ("fwd", "bwd"):
        return "SDPA: fwd and bwd only"
    if r.get("mode", 0) != 0:
        return "SDPA: batch mode only"
    if r["h_k"] != r["h"]:
        return "SDPA: h_k != h (GQA) not timed"
    if r.get("logits_soft_cap"):
        return "SDPA: no soft-cap"
    mask = r.get("mask", "n")
    if mask not in ("n", "t", "b"):
        return f"SDPA: mask {mask} (only none and causal)"
    if mask == "b" and r["s"] != r["s_k"]:
        return "SDPA: is_causal is top-left; bottom-right needs s == s_k"
    return None


class Sdpa:
    def __init__(self, torch):
        import fmha_bench
        import fmha_bwd_bench
        from torch.nn.attention import SDPBackend

        self.torch = torch
        self.fwd = fmha_bench
        self.bwd = fmha_bwd_bench
        self.backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
        self.flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4 + 1, device="cuda",
                                 dtype=torch.float32)
        self.device = torch.cuda.get_device_name(0)

    def run(self, example, r, flops, nbytes, warmup, repeat):
        """{backend: {"ms", "tflops", "gbs", "error"}} for the point's example JSON r."""
        why = unsupported(example, r)
        if why:
            return {be: {"ms": None, "tflops": None, "gbs": None, "error": why} for be in BACKENDS}
        torch = self.torch
        dtype = torch.bfloat16 if r["prec"] == "bf16" else torch.float16
        b, h, s, sk, d, dv = r["b"], r["h"], r["s"], r["s_k"], r["d"], r["d_v"]
        causal = 1 if r["mask"] in ("t", "b") else 0
        torch.manual_seed(0)
        q = torch.randn(b, s, h, d, device="cuda", dtype=dtype).transpose(1, 2)
        k = torch.randn(b, sk, h, d, device="cuda", dtype=dtype).transpose(1, 2)
        v = torch.randn(b, sk, h, dv, device="cuda", dtype=dtype).transpose(1, 2)
        do = torch.randn(b, s, h, dv, device="cuda", dtype=dtype).transpose(1, 2) if example == "bwd" else None
        out = {}
        for be in BACKENDS:
            if example == "fwd":
                ms, res = self.fwd.time_sdpa(self.backends[be], q, k, v, causal, warmup, repeat, self.flush)
            else:
                ms, res = self.bwd.time_sdpa_bwd(self.backends[be], q, k, v, do, causal, warmup, repeat, self.flush)
            out[be] = {"ms": ms, "tflops": flops / (ms * 1e-3) / 1e12 if ms and flops else None,
                       "gbs": nbytes / (ms * 1e-3) / 1e9 if ms and nbytes else None,
                       "error": None if ms else str(res)}
            del res
        del q, k, v, do
        torch.cuda.empty_cache()  # leave the memory to the next example process
        return out
