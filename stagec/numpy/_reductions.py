"""Reductions (`axis` int/tuple/None, `keepdims`, `dtype`), running reductions, argmax/argmin."""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..array import Array
from ..config import SettingsCache
from ..core import aval_of, eager_plan, tracing_anywhere
from ._base import _arr, _axes, _axis, _composite, _keep, _promote, astype
from ._creation import full
from ._ufuncs import greater, multiply, subtract, sqrt, where as _where


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
        return lax._convert_element_type(a, _sum_dtype(av.dtype))
    if av.weak_type:
        return lax._convert_element_type(a, av.dtype, weak_type=False)
    return a


def _upcast_f16(x):
    """float16/bfloat16 sums accumulate in float32, as JAX does (returns the value and its own dtype)."""
    dt = aval_of(x).dtype
    return (lax._convert_element_type(x, np.float32, weak_type=False), dt) if dt in (_dt.float16, _dt.bfloat16) \
        else (x, dt)


def _prepare(fname: str, a, axis, dtype, upcast_int: bool):
    (a,) = _promote(fname, _arr(a))
    av = aval_of(a)
    return _cast_input(a, av, dtype, upcast_int), av, _axes(axis, av.ndim, fname)


_OP = {"any": "or", "all": "and"}  # the reduction each name is, for its identity
_COMBINE = {"sum": lax.add, "prod": lax.mul, "max": lax.max, "min": lax.min, "any": lax.bitwise_or,
            "all": lax.bitwise_and}


def _count_of(shape: tuple, axes) -> int:
    """How many elements a reduction over `axes` of `shape` combines."""
    return int(np.prod([shape[i] for i in axes], dtype=np.int64))


def _where_mask(fname: str, where, shape: tuple):
    """`where` as a boolean mask broadcast to `shape` (an error names the function and both shapes)."""
    from ._base import broadcast_to
    try:
        return broadcast_to(astype(_arr(where), bool), shape)
    except ValueError:
        raise ValueError(f"{fname}: `where` of shape {aval_of(_arr(where)).shape} does not broadcast to the "
                         f"array's shape {shape}") from None


def _masked(fname: str, x, where, identity):
    """`x` with the elements outside `where` replaced by `identity`."""
    return lax.select(_where_mask(fname, where, aval_of(x).shape), x, lax.full_like(x, identity))


def _reduction(fname, reducer, identity_ok=True, upcast_int=False, upcast_f16=False):
    # eager: (aval, axis, keepdims) -> (eager plan, params) of a call that is `reducer(a, axes)` alone (under the
    # settings: x64 changes the accumulation dtypes)
    plain = SettingsCache(256)

    def f(a: Any, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None,
          promote_integers: bool = True):
        if not promote_integers and dtype is None:  # (JAX's: integers keep their dtype, bool counts in int32)
            av = aval_of(_arr(a))
            dtype = np.dtype(np.int32) if av.dtype == np.bool_ else av.dtype if _dt.kind(av.dtype) in "iu" else None
        if type(a) is Array and dtype is None and initial is None and where is None and not tracing_anywhere[0]:
            try:
                key = (a.aval, axis if type(axis) is not list else tuple(axis), type(axis), keepdims)
                found = plain.get(key)
            except TypeError:  # (an unhashable axis: the checks below name it)
                key = found = None
            if found is not None and out is None:  # (no promotion, cast or check applies: seen once)
                run, params = found  # (what `reducer` would bind: the runtime's plan of this signature)
                return run([a], params)[0]
        else:
            key = None
        if out is not None:
            raise NotImplementedError(f"{fname}: the `out` argument is not supported (arrays are immutable)")
        x = a
        a, av, axes = _prepare(fname, a, axis, dtype, upcast_int)
        if key is not None and a is x and not (upcast_f16 and av.dtype in (_dt.float16, _dt.bfloat16)) and \
                not keepdims and _count_of(av.shape, axes) != 1 and (identity_ok or not builtins.any(av.shape[i] == 0 for i in axes)):
            params = {"axes": tuple(int(i) for i in axes)}  # (as `reducer` binds them)
            run = eager_plan(reducer.prim, (av,), params)
            if run is not None:
                plain.put(key, (run, params))
        if not identity_ok and initial is None:
            if where is not None:
                raise ValueError(f"reduction operation {fname!r} does not have an identity, so to use a where mask "
                                 f"one has to specify 'initial'")
            if builtins.any(av.shape[i] == 0 for i in axes):
                raise ValueError(f"zero-size array to reduction operation {fname} which has no identity")
        a, out_dt = _upcast_f16(a) if upcast_f16 else (a, aval_of(a).dtype)
        if where is not None:
            a = _masked(fname, a, where, _dt.identity(_OP.get(fname, fname), aval_of(a).dtype))
        # (over one element, or none: no axes, the element itself, as JAX's (XLA's) reduce: sum(float32(-0.0)) was
        # 0.0 + -0.0 = 0.0, prod([inf+1j]) (1+0j) * (inf+1j) = inf+nanj; JAX's -0.0 and inf+1j)
        r = reducer(a, axes) if _count_of(av.shape, axes) != 1 else \
            lax.reshape(a, tuple(d for i, d in enumerate(av.shape) if i not in axes))
        if initial is not None:
            r = _COMBINE[fname](r, lax.full_like(r, initial))
        if aval_of(r).dtype != out_dt:
            r = lax._convert_element_type(r, out_dt, weak_type=False)
        return _keep(r, av.shape, axes, keepdims)
    f.__name__ = fname
    f.__doc__ = (f"`{fname}` over `axis` (int, tuple or None), optionally keeping reduced dims; `initial` joins "
                 f"the reduction and `where` (a mask broadcast to the array) picks the elements that take part.")
    return f


sum = _reduction("sum", lax.reduce_sum, upcast_int=True, upcast_f16=True)
prod = _reduction("prod", lax.reduce_prod, upcast_int=True, upcast_f16=True)
_max = _reduction("max", lax.reduce_max, identity_ok=False)
_min = _reduction("min", lax.reduce_min, identity_ok=False)


def max(a: Any, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
    """Largest element over `axis` (NaN propagates, as in NumPy; complex compares real, then imaginary)."""
    return _max(a, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)


def min(a: Any, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
    """Smallest element over `axis` (NaN propagates, as in NumPy; complex compares real, then imaginary)."""
    return _min(a, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)


amax, amin = max, min
_any = _reduction("any", lax.reduce_or)
_all = _reduction("all", lax.reduce_and)


def any(a: Any, axis=None, out=None, keepdims: bool = False, *, where=None):
    """True if any element over `axis` (among those `where` selects) is nonzero."""
    return _any(astype(_arr(a), bool), axis=axis, out=out, keepdims=keepdims, where=where)


def all(a: Any, axis=None, out=None, keepdims: bool = False, *, where=None):
    """True if every element over `axis` (among those `where` selects) is nonzero."""
    return _all(astype(_arr(a), bool), axis=axis, out=out, keepdims=keepdims, where=where)


def _count(av, axes, where, fname: str, dtype):
    """How many elements each reduction sees: a Python int, or (with `where`) an array of `dtype`."""
    if where is None:
        return int(np.prod([av.shape[i] for i in axes], dtype=np.int64))
    w = _where_mask(fname, where, av.shape)
    return lax.reduce_sum(lax._convert_element_type(w, dtype, weak_type=False), axes)


def _float_dtype(av, dtype):
    if dtype is not None:
        return _dt.canonicalize(dtype, warn_from="mean")
    return _dt.to_inexact(av.dtype)


def _divide(total, count):
    """`total / count`, where `count` is an int or an array holding as many elements as `total`. A complex total
    has each part divided by the real count (as NumPy: by count + 0j, mean([-inf+1j]) was -inf+nanj)."""
    if _dt.kind(aval_of(total).dtype) == "c":
        if not isinstance(count, int):
            count = lax._convert_element_type(count, _dt.finfo(aval_of(total).dtype).dtype, weak_type=False)
        return lax.complex(_divide(lax.real(total), count), _divide(lax.imag(total), count))
    if isinstance(count, int):
        return lax.div(total, lax.full_like(total, count))
    count = lax.reshape(lax._convert_element_type(count, aval_of(total).dtype, weak_type=False), aval_of(total).shape)
    return lax.div(total, count)


@_composite
def mean(a: Any, axis=None, dtype=None, out=None, keepdims: bool = False, *, where=None):
    """Arithmetic mean (of the elements `where` selects); integer inputs give the default float, as in JAX.
    float16/bfloat16 accumulate in float32. An empty mean is NaN."""
    a = _arr(a)
    av = aval_of(a)
    axes = _axes(axis, av.ndim, "mean")
    x, out_dt = _upcast_f16(astype(a, _float_dtype(av, dtype)))
    # summed in its own dtype, as JAX's: an integer `dtype` wraps and divides as integers (the default sum of
    # int8/uint8 widened, so mean(x, dtype=np.uint8) differed from JAX's)
    s = sum(x, axis=axis, dtype=aval_of(x).dtype, out=out, keepdims=keepdims, where=where)
    r = _divide(s, _count(av, axes, where, "mean", aval_of(s).dtype))
    return lax._convert_element_type(r, out_dt, weak_type=False) if aval_of(r).dtype != out_dt else r


def _var_types(fname: str, a_dtype, dtype):
    """JAX's (computation dtype, result dtype) of var/nanvar: `dtype` if given (float16/bfloat16 computed in
    float32; a real `dtype` of complex data raises, as JAX's), else an integer's inexact type or a's real type."""
    if dtype is not None:
        dtype = _dt.canonicalize(dtype, warn_from=fname)
        if _dt.kind(dtype) != "c" and _dt.kind(a_dtype) == "c":
            raise ValueError(f"{fname}: a real dtype ({dtype}) for the variance of complex values is not supported "
                             f"(as in JAX, jax-ml/jax#2283)")
        comp = dtype
    elif _dt.kind(a_dtype) not in "fc":
        comp = dtype = _dt.to_inexact(a_dtype)
    else:
        comp, dtype = a_dtype, _dt.finfo(a_dtype).dtype if _dt.kind(a_dtype) == "c" else a_dtype
    return (np.dtype(np.float32) if comp in (_dt.float16, _dt.bfloat16) else comp), np.dtype(dtype)


def _abs2(centered):
    if _dt.kind(aval_of(centered).dtype) == "c":  # |c|**2, a real number
        re, im = lax.real(centered), lax.imag(centered)
        return lax.add(lax.mul(re, re), lax.mul(im, im))
    return multiply(centered, centered)


@_composite
def var(a: Any, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *, where=None,
        mean=None, correction=None):
    """Variance `mean(|a - mean(a)|**2)` with `N - correction` in the denominator (NaN when it is <= 0, as JAX's),
    over the elements `where` selects; `mean` a precomputed mean (broadcast against `a` as kept dims); dtypes as
    JAX's (float16/bfloat16 computed in float32; an integer `dtype` computes in it, a complex one gives complex)."""
    if correction is None:
        correction = ddof
    elif not isinstance(ddof, int) or ddof != 0:
        raise ValueError("var: ddof and correction can't be provided simultaneously")
    if out is not None:
        raise NotImplementedError("var: the `out` argument is not supported (arrays are immutable)")
    a = _arr(a)
    av = aval_of(a)
    axes = _axes(axis, av.ndim, "var")
    comp, dtype = _var_types("var", av.dtype, dtype)
    x = astype(a, comp)
    m = _mean(x, axis=axis, dtype=comp, keepdims=True, where=where) if mean is None else astype(_arr(mean), comp)
    sq = _abs2(subtract(x, m))
    comp = aval_of(sq).dtype  # (real for complex data: not cast to complex below)
    n = _count(av, axes, where, "var", comp)
    ss = sum(sq, axis=axis, dtype=comp, keepdims=keepdims, where=where)
    n = lax.full_like(ss, n) if isinstance(n, int) else lax.reshape(n, aval_of(ss).shape)
    # (correction converted to the computation dtype, as JAX: 1.5 is 1 for an integer dtype; it raised here)
    n = lax.sub(n, lax.full_like(n, np.asarray(correction).astype(comp)))
    r = astype(lax.div(ss, n), dtype)
    return _where(greater(n, lax.full_like(n, 0)), r, np.nan)  # (NaN where N - correction <= 0; a float, as JAX's)


@_composite
def std(a: Any, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *, where=None,
        mean=None, correction=None):
    """Standard deviation, `sqrt(var(...))` (`dtype` inexact, as JAX requires)."""
    if dtype is not None and _dt.kind(_dt.canonicalize(dtype, warn_from="std")) not in "fc":
        raise ValueError(f"dtype argument to std must be inexact; got {np.dtype(dtype)} (as in JAX)")
    return sqrt(var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, where=where, mean=mean,
                    correction=correction))


def ptp(a: Any, axis=None, out=None, keepdims: bool = False):
    return subtract(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


def count_nonzero(a: Any, axis=None, keepdims: bool = False):
    return sum(astype(_arr(a), bool), axis=axis, keepdims=keepdims, dtype=_dt.default_int())


def _argminmax(fname: str, fn, a, axis, keepdims: bool):
    (a,) = _promote(fname, _arr(a))
    av = aval_of(a)
    if av.dtype == np.bool_:
        a = lax._convert_element_type(a, np.int32)
    if axis is None:
        if av.size == 0:
            raise ValueError(f"attempt to get {fname} of an empty sequence")
        out = fn(lax.reshape(a, (av.size,)), 0, _dt.default_int())
        return lax.reshape(out, (1,) * av.ndim) if keepdims else out
    ax = _axis(axis, av.ndim, fname)
    if av.shape[ax] == 0:
        raise ValueError(f"attempt to get {fname} of an empty sequence")
    return _keep(fn(a, ax, _dt.default_int()), av.shape, (ax,), keepdims)


def argmax(a: Any, axis: int | None = None, out=None, keepdims: bool = False):
    """Index of the largest element (the first one; the first NaN if any), flattened when axis is None."""
    return _argminmax("argmax", lax.argmax, a, axis, keepdims)


def argmin(a: Any, axis: int | None = None, out=None, keepdims: bool = False):
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
        a = lax._convert_element_type(a, _dt.default_int())
        if dtype is not None:  # dtype=bool: a running or/and, bool as NumPy's and JAX's (was the int count)
            return lax._convert_element_type(_in_f32(fn, a, axis), np.bool_, weak_type=False)
    return _in_f32(fn, a, axis)


def _in_f32(fn, x, axis):
    """A running reduction of float16/bfloat16 in float32, rounded once (as JAX: cumsum of 10000 float16 ones
    stopped at 2048 in float16)."""
    x, dt = _upcast_f16(x)
    out = fn(x, axis)
    return out if aval_of(out).dtype == dt else lax._convert_element_type(out, dt, weak_type=False)


def cumsum(a: Any, axis: int | None = None, dtype=None, out=None):
    """Running sum along `axis` (of the flattened array when None); integers keep their dtype (as JAX),
    booleans count in the default int."""
    return _cumulative("cumsum", lax.cumsum, a, axis, dtype, False)


def cumprod(a: Any, axis: int | None = None, dtype=None, out=None):
    """Running product along `axis` (of the flattened array when None)."""
    return _cumulative("cumprod", lax.cumprod, a, axis, dtype, False)


def _cumulative_api(fname: str, fn, identity, x, axis, dtype, include_initial: bool):
    """The Array API's cumulative_sum/prod: `sum`'s dtype rules (small integers widen), axis required
    beyond 1-D, and with `include_initial` the identity first (the result is one longer along axis)."""
    (x,) = _promote(fname, _arr(x))
    av = aval_of(x)
    if axis is None:
        if av.ndim != 1:
            raise ValueError(f"{fname}: axis must be given for an array of {av.ndim} dimensions")
        axis = 0
    axis = _axis(axis, av.ndim, fname)
    x = _cast_input(x, av, dtype, True)
    as_bool = aval_of(x).dtype == np.bool_ and dtype is not None
    if aval_of(x).dtype == np.bool_:
        x = lax._convert_element_type(x, _dt.default_int())
    out = _in_f32(fn, x, axis)
    if as_bool:  # dtype=bool: a running or/and, bool as JAX's (was the int count)
        out = lax._convert_element_type(out, np.bool_, weak_type=False)
    if include_initial:
        shape = list(aval_of(out).shape)
        shape[axis] = 1
        out = lax.concatenate([full(shape, identity, aval_of(out).dtype), out], axis)
    return out


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype=None, include_initial: bool = False):
    """Running sum along `axis` (the Array API's: integers widen as in `sum`; `include_initial` puts 0 first)."""
    return _cumulative_api("cumulative_sum", lax.cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype=None, include_initial: bool = False):
    """Running product along `axis` (the Array API's: integers widen as in `prod`; `include_initial` puts 1 first)."""
    return _cumulative_api("cumulative_prod", lax.cumprod, 1, x, axis, dtype, include_initial)


_mean = mean  # (var's `mean` argument shadows the function)
