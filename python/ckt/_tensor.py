"""The tensor-description layer: what the library needs to know of an array
(address, shape, strides in elements, element type, device), taken from
whatever the caller holds, so that the calls in ckt.fmha do not need torch.

    t = ckt.as_tensor(x)                  # torch.Tensor, __cuda_array_interface__ (CuPy, Numba),
                                          # __array_interface__ (numpy), __dlpack__, a ckt.Tensor
    t = ckt.as_tensor(buf, dtype="bf16", shape=(2, 64, 4, 64))   # a plain buffer (ctypes array, bytearray)
    t.ptr, t.shape, t.strides, t.dtype, t.device

Element types are named "float16", "bfloat16", "float32", "int32", "uint8"
("int64" / "uint64" too: the dropout's device seed and offset)
(aliases "fp16", "half", "bf16", "fp32"). numpy has no bfloat16: describe a
uint16 array as bf16 with dtype="bf16". Devices are ("cpu", 0) and
("cuda", index); the CPU emulator build of libckt_fmha takes "cpu" memory.

Outputs are allocated like an input (empty_like_kind): torch.empty on the
input's device, numpy.empty, or, for other host memory, an aligned ctypes
buffer wrapped in a ckt.Tensor. Device memory of other kinds (CuPy, ...)
is not allocated here: pass out= (and lse= where needed).
"""
import ctypes
import sys

from ._lib import CktError

_DTYPES = {
    "float16": 2, "bfloat16": 2, "float32": 4, "int32": 4, "uint8": 1, "uint16": 2, "int64": 8, "uint64": 8,
}
_ALIASES = {"fp16": "float16", "half": "float16", "f16": "float16", "bf16": "bfloat16", "fp32": "float32",
            "float": "float32", "f32": "float32", "i32": "int32", "int": "int32", "u8": "uint8", "u16": "uint16"}
# numpy / __array_interface__ type strings (little-endian; "|" for one byte)
_TYPESTR = {"f2": "float16", "f4": "float32", "i4": "int32", "u1": "uint8", "u2": "uint16", "V2": "uint16",
            "i8": "int64", "u8": "uint64"}
# struct / memoryview formats (ctypes arrays: c_uint16 -> "<H", c_float -> "<f", ...)
_FORMAT = {"e": "float16", "f": "float32", "i": "int32", "l": None, "B": "uint8", "b": None, "H": "uint16",
           "c": "uint8"}
# DLPack (dlpack.h): kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4
_DL_DTYPES = {(2, 16): "float16", (4, 16): "bfloat16", (2, 32): "float32", (0, 32): "int32", (1, 8): "uint8",
              (1, 16): "uint16", (0, 64): "int64", (1, 64): "uint64"}
_DL_DEVICES = {1: "cpu", 2: "cuda", 3: "cpu", 10: "cuda", 13: "cuda"}  # CPU, CUDA, CUDAHost, ROCm, CUDAManaged


def dtype_name(dtype):
    """The canonical name of an element type given as a name, an alias, a numpy or a torch dtype."""
    if dtype is None:
        return None
    s = str(dtype)
    for prefix in ("torch.", "numpy.", "<class 'numpy."):
        if s.startswith(prefix):
            s = s[len(prefix):].rstrip("'>")
    s = _ALIASES.get(s, s)
    if s not in _DTYPES:
        raise CktError(f"dtype: {dtype!r} is not one of {', '.join(sorted(_DTYPES))} (or fp16, bf16, fp32)")
    return s


class Tensor:
    """A strided array the library can address: ptr (int), shape and strides (elements), dtype (a
    name), device ("cpu" | "cuda", index); owner keeps the memory alive."""

    __slots__ = ("ptr", "shape", "strides", "dtype", "device", "owner")

    def __init__(self, ptr, shape, dtype, strides=None, device=("cpu", 0), owner=None):
        self.ptr = int(ptr or 0)
        self.shape = tuple(int(n) for n in shape)
        self.dtype = dtype_name(dtype)
        self.strides = tuple(int(s) for s in strides) if strides is not None else _contiguous(self.shape)
        if len(self.strides) != len(self.shape):
            raise CktError(f"strides: {self.strides} do not match shape {self.shape}")
        self.device = (device, 0) if isinstance(device, str) else tuple(device)
        self.owner = owner

    def __repr__(self):
        return (f"ckt.Tensor(ptr={self.ptr:#x}, shape={self.shape}, strides={self.strides}, dtype={self.dtype}, "
                f"device={self.device[0]}:{self.device[1]})")

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def itemsize(self):
        return _DTYPES[self.dtype]

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def is_contiguous(self):
        return all(a == b for a, b, n in zip(self.strides, _contiguous(self.shape), self.shape) if n > 1)

    def transpose(self, i, j):
        """The same memory with dims i and j swapped (no copy)."""
        sh, st = list(self.shape), list(self.strides)
        sh[i], sh[j] = sh[j], sh[i]
        st[i], st[j] = st[j], st[i]
        return Tensor(self.ptr, sh, self.dtype, st, self.device, self.owner)

    def view_as(self, dtype):
        """The same memory read as another element type of the same size (uint16 <-> bf16 / fp16)."""
        dtype = dtype_name(dtype)
        if _DTYPES[dtype] != self.itemsize:
            raise CktError(f"dtype: {dtype} has not the size of {self.dtype}")
        return Tensor(self.ptr, self.shape, dtype, self.strides, self.device, self.owner)

    def numpy(self):
        """A numpy array over this host memory (no copy); bf16 reads as uint16."""
        import numpy as np
        if self.device[0] != "cpu":
            raise CktError(f"numpy(): the tensor is on {self.device[0]}, not host memory")
        npdt = {"float16": np.float16, "bfloat16": np.uint16, "uint16": np.uint16, "float32": np.float32,
                "int32": np.int32, "uint8": np.uint8}[self.dtype]
        span = 1 + sum((n - 1) * s for n, s in zip(self.shape, self.strides)) if self.numel() else 0
        buf = (ctypes.c_char * (span * self.itemsize)).from_address(self.ptr)
        flat = np.frombuffer(buf, dtype=npdt, count=span)
        return np.lib.stride_tricks.as_strided(flat, self.shape, [s * self.itemsize for s in self.strides])


def _contiguous(shape):
    st, acc = [], 1
    for n in reversed(shape):
        st.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(st))


def is_torch(x):
    t = type(x)
    return t.__module__.split(".")[0] == "torch" and hasattr(x, "data_ptr") and hasattr(x, "stride")


def is_numpy(x):
    return type(x).__module__.split(".")[0] == "numpy" and hasattr(x, "__array_interface__")


def _from_torch(x, dtype):
    dev = ("cuda", x.device.index or 0) if x.device.type == "cuda" else (x.device.type, 0)
    if dev[0] not in ("cpu", "cuda"):
        raise CktError(f"device: {x.device} (ckt takes cuda tensors, or cpu ones on the emulator build)")
    return Tensor(x.data_ptr(), tuple(x.shape), dtype or dtype_name(x.dtype), tuple(x.stride()), dev, x)


def _from_interface(x, iface, device, dtype):
    typestr = iface["typestr"]
    name = _TYPESTR.get(typestr[1:])
    if typestr[0] == ">" or (name is None and dtype is None):
        raise CktError(f"dtype: {typestr!r} is not a type ckt takes (float16, float32, int32, uint8, or uint16 "
                       f"with dtype='bf16')")
    dtype = dtype or name
    item = int(typestr[2:])
    ptr = iface["data"][0] if iface.get("data") else 0
    shape = iface["shape"]
    if iface.get("strides") is None:
        strides = None
    else:
        if any(s % item for s in iface["strides"]):
            raise CktError(f"strides: {iface['strides']} bytes are not multiples of the element size {item}")
        strides = [s // item for s in iface["strides"]]
    return Tensor(ptr, shape, dtype, strides, device, x)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


def _from_dlpack(x, dtype):
    """Reads the DLManagedTensor of x.__dlpack__() without consuming it: the capsule (kept in owner)
    keeps the memory alive and frees it when dropped."""
    cap = x.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    p = get(cap, b"dltensor")
    t = _DLTensor.from_address(p)  # DLManagedTensor starts with its DLTensor
    dev = _DL_DEVICES.get(t.device.device_type)
    name = _DL_DTYPES.get((t.dtype.code, t.dtype.bits))
    if dev is None:
        raise CktError(f"device: DLPack device type {t.device.device_type} is not CPU or CUDA / ROCm")
    if t.dtype.lanes != 1 or (name is None and dtype is None):
        raise CktError(f"dtype: DLPack code {t.dtype.code}, {t.dtype.bits} bits, {t.dtype.lanes} lanes "
                       f"is not a type ckt takes")
    shape = [t.shape[i] for i in range(t.ndim)]
    strides = [t.strides[i] for i in range(t.ndim)] if t.strides else None
    return Tensor((t.data or 0) + t.byte_offset, shape, dtype or name, strides, (dev, t.device.device_id),
                  (x, cap))


def _from_buffer(x, dtype, shape):
    m = memoryview(x)
    fmt = m.format.lstrip("<=@")
    name = dtype or _FORMAT.get(fmt)
    if name is None:
        raise CktError(f"dtype: buffer format {m.format!r}: give dtype=")
    name = dtype_name(name)
    if m.readonly:
        raise CktError("buffer: read-only (ckt writes outputs in place)")
    if not m.c_contiguous:
        raise CktError("buffer: not contiguous (describe it with ckt.Tensor(ptr, shape, dtype, strides))")
    nbytes = m.nbytes
    ptr = ctypes.addressof(ctypes.c_char.from_buffer(m)) if nbytes else 0
    n = nbytes // _DTYPES[name]
    shape = tuple(shape) if shape is not None else (n,)
    t = Tensor(ptr, shape, name, None, ("cpu", 0), (x, m))
    if t.numel() * t.itemsize > nbytes:
        raise CktError(f"shape: {shape} of {name} needs {t.numel() * t.itemsize} bytes, the buffer has {nbytes}")
    return t


def as_tensor(x, dtype=None, shape=None, name="tensor"):
    """A ckt.Tensor describing x (see the module's doc). dtype overrides the element type (same size:
    "bf16" for a uint16 array); shape reshapes a plain contiguous buffer."""
    dtype = dtype_name(dtype)
    try:
        if isinstance(x, Tensor):
            t = x if dtype is None else x.view_as(dtype)
        elif is_torch(x):
            t = _from_torch(x, dtype)
        elif hasattr(x, "__cuda_array_interface__"):
            iface = x.__cuda_array_interface__
            t = _from_interface(x, iface, ("cuda", 0), dtype)
        elif hasattr(x, "__array_interface__"):
            t = _from_interface(x, x.__array_interface__, ("cpu", 0), dtype)
        elif hasattr(x, "__dlpack__"):
            t = _from_dlpack(x, dtype)
        else:
            try:
                memoryview(x)
            except TypeError:
                raise CktError(f"{type(x).__name__}: not a tensor (torch, __cuda_array_interface__, "
                               f"__array_interface__, __dlpack__ or a buffer)") from None
            t = _from_buffer(x, dtype, shape)
        if shape is not None and tuple(shape) != t.shape:
            if not t.is_contiguous() or _prod(shape) != t.numel():
                raise CktError(f"shape: cannot view {t.shape} as {tuple(shape)}")
            t = Tensor(t.ptr, shape, t.dtype, None, t.device, t.owner)
    except CktError as e:
        raise CktError(f"{name}: {e}") from None
    return t


def _prod(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


# >>allocation like an input


def _torch_dtype(torch, name):
    return {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "int32": torch.int32,
            "int64": torch.int64,
            "uint8": torch.uint8}[name]


def empty_like_kind(like, shape, dtype, name="out"):
    """(obj, Tensor): new memory of shape and dtype of the kind of `like` (the caller's object):
    a torch tensor on like's device, a numpy array, or an aligned host buffer (a ckt.Tensor)."""
    dtype = dtype_name(dtype)
    if is_torch(like):
        torch = sys.modules["torch"]
        obj = torch.empty(tuple(shape), dtype=_torch_dtype(torch, dtype), device=like.device)
        return obj, as_tensor(obj)
    t = like if isinstance(like, Tensor) else None
    owner = t.owner[0] if t is not None and isinstance(t.owner, tuple) else (t.owner if t is not None else like)
    if is_numpy(owner) or is_numpy(like):
        import numpy as np
        npdt = {"float16": np.float16, "bfloat16": np.uint16, "uint16": np.uint16, "float32": np.float32,
                "int32": np.int32, "uint8": np.uint8}[dtype]
        obj = np.empty(tuple(shape), dtype=npdt)
        return obj, as_tensor(obj, dtype=dtype)
    desc = t if t is not None else as_tensor(like)
    if desc.device[0] != "cpu":
        raise CktError(f"{name}: cannot allocate {desc.device[0]} memory for a {type(like).__name__}: pass {name}=")
    n = max(_prod(shape) * _DTYPES[dtype], 1)
    buf = (ctypes.c_uint8 * (n + 64))()
    ptr = (ctypes.addressof(buf) + 63) // 64 * 64
    out = Tensor(ptr, shape, dtype, None, ("cpu", 0), buf)
    return out, out


def host_int32(values, like, name):
    """(obj, Tensor) of int32 values in memory of like's kind (device memory for torch CUDA tensors)."""
    values = [int(v) for v in values]
    if is_torch(like):
        torch = sys.modules["torch"]
        obj = torch.tensor(values, dtype=torch.int32, device=like.device)
        return obj, as_tensor(obj)
    obj, t = empty_like_kind(like, (len(values),), "int32", name)
    if t.device[0] != "cpu":
        raise CktError(f"{name}: cannot write {t.device[0]} memory here")
    (ctypes.c_int32 * len(values)).from_address(t.ptr)[:] = values
    return obj, t


def read_int32(x, name):
    """The values of a 1-D int32 array (a list, an int, host memory, or a torch tensor anywhere)."""
    if isinstance(x, int):
        return [x]
    if isinstance(x, (list, tuple)):
        return [int(v) for v in x]
    if is_torch(x):
        return [int(v) for v in x.detach().to("cpu").tolist()]
    t = as_tensor(x, name=name)
    if t.dtype != "int32" or t.ndim != 1:
        raise CktError(f"{name}: {t.dtype} {t.shape}, expected a 1-D int32 array")
    if t.device[0] != "cpu":
        raise CktError(f"{name}: on {t.device[0]}: pass a torch tensor, a list or host memory")
    arr = (ctypes.c_int32 * 1)
    return [arr.from_address(t.ptr + 4 * i * t.strides[0])[0] for i in range(t.shape[0])]


def copy_like(x, t, name):
    """(obj, Tensor): a contiguous copy of x (described by t), of x's kind."""
    if is_torch(x):
        obj = x.contiguous().clone() if x.is_contiguous() else x.contiguous()
        return obj, as_tensor(obj)
    obj, out = empty_like_kind(x, t.shape, t.dtype, name)
    if t.device[0] != "cpu":
        raise CktError(f"{name}: cannot copy {t.device[0]} memory of a {type(x).__name__}")
    if is_numpy(obj):
        obj[...] = t.numpy()
    elif t.is_contiguous():
        ctypes.memmove(out.ptr, t.ptr, t.numel() * t.itemsize)
    else:
        raise CktError(f"{name}: a strided plain buffer: make it contiguous first")
    return obj, out
