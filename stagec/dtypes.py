"""Dtypes, JAX's type-promotion lattice, weak types and 64-bit canonicalization."""
from __future__ import annotations

import functools
import warnings

import ml_dtypes
import numpy as np

from .config import config

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
bfloat16 = np.dtype(ml_dtypes.bfloat16)  # NumPy calls its kind 'V'; `kind()` below says 'f'
# JAX's dtype of the tangent (and cotangent) of an integer or bool value: zero-sized, NumPy only
float0 = np.dtype([("float0", np.void, 0)])
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

SUPPORTED = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
             float16, bfloat16, float32, float64, complex64, complex128)
_NARROW = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}

# JAX's promotion lattice: node -> direct successors. "i*", "f*", "c*" are the weak Python scalar kinds.
_LATTICE = {
    "b1": ["i*"], "i*": ["u8", "i8"], "u8": ["i16", "u16"], "u16": ["i32", "u32"], "u32": ["i64", "u64"],
    "u64": ["f*"], "i8": ["i16"], "i16": ["i32"], "i32": ["i64"], "i64": ["f*"],
    "f*": ["f16", "bf16", "c*"], "f16": ["f32"], "bf16": ["f32"], "f32": ["f64", "c64"], "f64": ["c128"],
    "c*": ["c64"], "c64": ["c128"], "c128": [],
}
_CODE = {bool_: "b1", int8: "i8", int16: "i16", int32: "i32", int64: "i64", uint8: "u8", uint16: "u16",
         uint32: "u32", uint64: "u64", float16: "f16", bfloat16: "bf16", float32: "f32", float64: "f64",
         complex64: "c64", complex128: "c128"}
_FROM_CODE = {v: k for k, v in _CODE.items()}


@functools.cache
def _upper(node: str) -> frozenset:
    return frozenset([node]).union(*(_upper(n) for n in _LATTICE[node]))


def default_int() -> np.dtype:
    return int64 if config.x64_enabled else int32


def default_float() -> np.dtype:
    return float64 if config.x64_enabled else float32


def default_complex() -> np.dtype:
    return complex128 if config.x64_enabled else complex64


def to_inexact(dtype) -> np.dtype:
    """JAX's `to_inexact_dtype`: float32 for bool and integers up to 32 bits, float64 for 64-bit ones (float32
    without x64); an inexact dtype stays. What an inexact function of `stagec.numpy` computes an integer or bool
    operand in."""
    dtype = np.dtype(dtype)
    if kind(dtype) in "fc":
        return dtype
    return canonicalize(float64 if dtype.itemsize == 8 else float32)


def canonicalize(dtype, *, warn_from: str | None = None) -> np.dtype:
    """The dtype stagec really uses: 64-bit types narrow to 32-bit unless x64 is enabled.

    Python's `bool`, `int`, `float`, `complex` mean the default types, silently (as in JAX)."""
    if dtype in (int, float, complex) and isinstance(dtype, type):
        return {int: default_int, float: default_float, complex: default_complex}[dtype]()
    dtype = np.dtype(dtype)
    if dtype not in _CODE:
        raise TypeError(f"stagec does not support dtype {dtype}; supported: {', '.join(map(str, SUPPORTED))}")
    if not config.x64_enabled and dtype in _NARROW:
        narrow = _NARROW[dtype]
        if warn_from:
            warnings.warn(f"Explicitly requested dtype {dtype} requested in {warn_from} is not available, and "
                          f"will be truncated to dtype {narrow}. To enable more dtypes, set "
                          f"stagec.config.update('enable_x64', True) or STAGEC_ENABLE_X64=1.", UserWarning, stacklevel=3)
        return narrow
    return dtype


@functools.cache
def _promote(a: str, b: str) -> str:
    common = _upper(a) & _upper(b)
    return next(n for n in common if _upper(n) == common)


def kind(dtype) -> str:
    """NumPy's one-letter kind ('b', 'i', 'u', 'f', 'c'), with 'f' for bfloat16 (whose NumPy kind is 'V')."""
    dtype = np.dtype(dtype)
    return "f" if dtype == bfloat16 else dtype.kind


def _node(dtype: np.dtype, weak: bool) -> str:
    if weak:
        k = kind(dtype)
        return "f*" if k == "f" else "c*" if k == "c" else "i*" if k in "iu" else "b1"
    return _CODE[dtype]


def result_type(*pairs: tuple[np.dtype, bool]) -> tuple[np.dtype, bool]:
    """Promote (dtype, weak_type) pairs as JAX does; returns the canonical (dtype, weak_type)."""
    node = _node(*pairs[0])
    for p in pairs[1:]:
        node = _promote(node, _node(*p))
    weak = node.endswith("*")
    if weak:
        # A weak result keeps the width of the (single) weak input's dtype class: use the default width.
        dtype = {"i*": default_int(), "f*": default_float(), "c*": default_complex()}[node]
    else:
        dtype = canonicalize(_FROM_CODE[node])
    return dtype, weak


def python_scalar_dtype(x) -> np.dtype:
    """The dtype of a Python scalar under the current x64 setting (it is weakly typed)."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return default_int()
    if isinstance(x, float):
        return default_float()
    if isinstance(x, complex):
        return default_complex()
    raise TypeError(f"not a Python scalar: {type(x).__name__}")


def is_float(dtype) -> bool:
    return kind(dtype) == "f"


def is_int(dtype) -> bool:
    return kind(dtype) in "iu"


def identity(op: str, dtype):
    """The neutral element of reduction `op` ('sum', 'prod', 'max', 'min', 'and', 'or', 'xor') over `dtype`: the
    lowest value for max, the highest for min (complex: both parts infinite)."""
    if op in ("sum", "or", "xor"):
        return 0
    if op == "and" and kind(dtype) in "iu":  # (every bit set)
        return -1 if kind(dtype) == "i" else np.iinfo(dtype).max
    if op in ("prod", "and"):
        return 1
    if dtype == bool_:
        return op == "min"
    if kind(dtype) in "iu":
        info = np.iinfo(dtype)
        return info.min if op == "max" else info.max
    inf = complex(np.inf, np.inf) if kind(dtype) == "c" else np.inf
    return -inf if op == "max" else inf


def finfo(dtype):
    """Machine limits of a float or complex dtype, bfloat16 included (NumPy's finfo rejects it)."""
    return ml_dtypes.finfo(dtype) if np.dtype(dtype) == bfloat16 else np.finfo(dtype)


def iinfo(dtype):
    return np.iinfo(dtype)
