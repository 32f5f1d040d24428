"""ckt for Python: the FMHA kernels of libckt_fmha (ckt/fmha/dispatch.h) through ctypes, for
PyTorch tensors and any array with __dlpack__ / __cuda_array_interface__ / __array_interface__.
Nothing is compiled at import; torch is optional (imported by the caller, never here).

    import ckt
    o = ckt.fmha.attention(q, k, v, causal=True)     # autograd with torch tensors
    ckt.library()                                    # the loaded libckt_fmha.so (ckt.Library)
    ckt.load_library(path)                           # use another build

Install, API and the wheel: docs/python.md.
"""
from . import fmha
from ._lib import CktError, Library, find_library, library, load_library
from ._tensor import Tensor, as_tensor

__version__ = "0.1.0"
__all__ = ["fmha", "CktError", "Library", "Tensor", "as_tensor", "find_library", "library", "load_library"]
