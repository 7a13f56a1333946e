"""Reductions (`axis` int/tuple/None, `keepdims`, `dtype`), running reductions, argmax/argmin."""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..core import aval_of
from ._base import _arr, _axes, _axis, _keep, _promote, astype
from ._ufuncs import multiply, subtract, sqrt


def _sum_dtype(dt: np.dtype) -> np.dtype | None:
    """JAX's accumulation dtype for sum/prod/cumsum: small integers and bool widen to the default int."""
    if dt == np.bool_ or (_dt.kind(dt) == "i" and dt.itemsize < _dt.default_int().itemsize):
        return _dt.default_int()
    if _dt.kind(dt) == "u" and dt.itemsize < _dt.default_int().itemsize:
        return np.dtype(np.uint64 if _dt.default_int() == np.int64 else np.uint32)
    return None


def _cast_input(a, av, dtype, upcast_int: bool):
    """The operand a reduction accumulates in: `dtype` if given, else widened ints (sum/prod), never weak."""
    if dtype is not None:
        return astype(a, dtype)
    if upcast_int and _sum_dtype(av.dtype) is not None:
        return lax.convert_element_type(a, _sum_dtype(av.dtype))
    if av.weak_type:
        return lax.convert_element_type(a, av.dtype, weak_type=False)
    return a


def _prepare(fname: str, a, axis, dtype, upcast_int: bool):
    (a,) = _promote(fname, _arr(a))
    av = aval_of(a)
    return _cast_input(a, av, dtype, upcast_int), av, _axes(axis, av.ndim, fname)


def _reduction(fname, reducer, identity_ok=True, upcast_int=False):
    def f(a: Any, axis=None, dtype=None, out=None, keepdims: bool = False):
        if out is not None:
            raise NotImplementedError(f"{fname}: the `out` argument is not supported (arrays are immutable)")
        a, av, axes = _prepare(fname, a, axis, dtype, upcast_int)
        if not identity_ok and builtins.any(av.shape[i] == 0 for i in axes):
            raise ValueError(f"zero-size array to reduction operation {fname} which has no identity")
        return _keep(reducer(a, axes), av.shape, axes, keepdims)
    f.__name__ = fname
    f.__doc__ = f"`{fname}` over `axis` (int, tuple or None), optionally keeping reduced dims."
    return f


sum = _reduction("sum", lax.reduce_sum, upcast_int=True)
prod = _reduction("prod", lax.reduce_prod, upcast_int=True)
_max = _reduction("max", lax.reduce_max, identity_ok=False)
_min = _reduction("min", lax.reduce_min, identity_ok=False)


def max(a: Any, axis=None, out=None, keepdims: bool = False):
    """Largest element over `axis` (NaN propagates, as in NumPy)."""
    return _max(a, axis=axis, out=out, keepdims=keepdims)


def min(a: Any, axis=None, out=None, keepdims: bool = False):
    """Smallest element over `axis` (NaN propagates, as in NumPy)."""
    return _min(a, axis=axis, out=out, keepdims=keepdims)


amax, amin = max, min


def any(a: Any, axis=None, out=None, keepdims: bool = False):
    """True if any element over `axis` is nonzero."""
    return _reduction("any", lax.reduce_or)(astype(_arr(a), bool), axis=axis, out=out, keepdims=keepdims)


def all(a: Any, axis=None, out=None, keepdims: bool = False):
    """True if every element over `axis` is nonzero."""
    return _reduction("all", lax.reduce_and)(astype(_arr(a), bool), axis=axis, out=out, keepdims=keepdims)


def _count(av, axes) -> int:
    return int(np.prod([av.shape[i] for i in axes], dtype=np.int64))


def _float_dtype(av, dtype):
    if dtype is not None:
        return _dt.canonicalize(dtype, warn_from="mean")
    return av.dtype if _dt.kind(av.dtype) in "fc" else _dt.default_float()


def mean(a: Any, axis=None, dtype=None, out=None, keepdims: bool = False):
    """Arithmetic mean; integer inputs give the default float, as in JAX. An empty mean is NaN."""
    a = _arr(a)
    av = aval_of(a)
    axes = _axes(axis, av.ndim, "mean")
    s = sum(astype(a, _float_dtype(av, dtype)), axis=axis, out=out, keepdims=keepdims)
    return lax.div(s, lax.full_like(s, _count(av, axes)))


def var(a: Any, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *, correction=None):
    """Variance `mean(|a - mean(a)|**2)` with `N - ddof` in the denominator (inf/NaN when N - ddof <= 0)."""
    if correction is not None:
        ddof = correction
    a = _arr(a)
    av = aval_of(a)
    axes = _axes(axis, av.ndim, "var")
    x = astype(a, _float_dtype(av, dtype))
    centered = subtract(x, mean(x, axis=axis, keepdims=True))
    if _dt.kind(aval_of(centered).dtype) == "c":  # |c|**2, a real number
        re, im = lax.real(centered), lax.imag(centered)
        sq = lax.add(lax.mul(re, re), lax.mul(im, im))
    else:
        sq = multiply(centered, centered)
    ss = sum(sq, axis=axis, out=out, keepdims=keepdims)
    return lax.div(ss, lax.full_like(ss, builtins.max(_count(av, axes) - ddof, 0)))


def std(a: Any, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *, correction=None):
    """Standard deviation, `sqrt(var(...))`."""
    return sqrt(var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, correction=correction))


def ptp(a: Any, axis=None, out=None, keepdims: bool = False):
    return subtract(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


def count_nonzero(a: Any, axis=None, keepdims: bool = False):
    return sum(astype(_arr(a), bool), axis=axis, keepdims=keepdims, dtype=_dt.default_int())


def _argminmax(fname: str, fn, a, axis, keepdims: bool):
    (a,) = _promote(fname, _arr(a))
    av = aval_of(a)
    if _dt.kind(av.dtype) == "c":
        raise NotImplementedError(f"{fname} of complex arrays is not implemented")
    if av.dtype == np.bool_:
        a = lax.convert_element_type(a, np.int32)
    if axis is None:
        if av.size == 0:
            raise ValueError(f"attempt to get {fname} of an empty sequence")
        out = fn(lax.reshape(a, (av.size,)), 0, _dt.default_int())
        return lax.reshape(out, (1,) * av.ndim) if keepdims else out
    ax = _axis(axis, av.ndim, fname)
    if av.shape[ax] == 0:
        raise ValueError(f"attempt to get {fname} of an empty sequence")
    return _keep(fn(a, ax, _dt.default_int()), av.shape, (ax,), keepdims)


def argmax(a: Any, axis: int | None = None, out=None, *, keepdims: bool = False):
    """Index of the largest element (the first one; the first NaN if any), flattened when axis is None."""
    return _argminmax("argmax", lax.argmax, a, axis, keepdims)


def argmin(a: Any, axis: int | None = None, out=None, *, keepdims: bool = False):
    """Index of the smallest element (the first one; the first NaN if any), flattened when axis is None."""
    return _argminmax("argmin", lax.argmin, a, axis, keepdims)


def _cumulative(fname: str, fn, a, axis, dtype, upcast_int: bool):
    (a,) = _promote(fname, _arr(a))
    if axis is None:
        a, axis = lax.reshape(a, (aval_of(a).size,)), 0
    av = aval_of(a)
    axis = _axis(axis, av.ndim, fname)
    a = _cast_input(a, av, dtype, upcast_int)
    if aval_of(a).dtype == np.bool_ and fname in ("cumsum", "cumprod"):
        a = lax.convert_element_type(a, _dt.default_int())
    return fn(a, axis)


def cumsum(a: Any, axis: int | None = None, dtype=None, out=None):
    """Running sum along `axis` (of the flattened array when None); integers keep their dtype (as JAX),
    booleans count in the default int."""
    return _cumulative("cumsum", lax.cumsum, a, axis, dtype, False)


def cumprod(a: Any, axis: int | None = None, dtype=None, out=None):
    """Running product along `axis` (of the flattened array when None)."""
    return _cumulative("cumprod", lax.cumprod, a, axis, dtype, False)


cumulative_sum, cumulative_prod = cumsum, cumprod
