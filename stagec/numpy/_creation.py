"""Array creation: zeros/ones/full/empty and their *_like, arange, linspace, eye, tri, meshgrid."""
from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..array import Array, device_put
from ..core import Const, ShapedArray, Tracer, TracerBase, aval_of, current_trace
from ._base import _creation_dtype, _is_array, _promote, _shape_tuple, asarray, astype, broadcast_to, place


def full(shape, fill_value, dtype=None, *, device=None):
    """An array of `shape` filled with `fill_value` (traced `fill_value` allowed); a Python int, float or complex
    and no `dtype` give a weakly typed array, as in JAX (full(3, 7) + int8 is int8)."""
    out = _full(shape, fill_value, dtype)
    if dtype is None and type(fill_value) in (int, float, complex):
        out = lax._convert_element_type(out, aval_of(out).dtype, weak_type=True)
    return place(out, device, "full")


def _full(shape, fill_value, dtype=None):
    shape = _shape_tuple(shape)
    dt = aval_of(fill_value).dtype if dtype is None else _dt.canonicalize(dtype, warn_from="full")
    if _is_array(fill_value):
        return broadcast_to(astype(fill_value, dt), shape)
    value = np.array(fill_value, dtype=dt)
    if current_trace() is None or not shape:  # (a 0-d broadcast would be the bare constant, not a traced array)
        return device_put(np.broadcast_to(value, shape))
    return lax.broadcast_in_dim(Const(value, ShapedArray((), dt)), shape, ())


def zeros(shape, dtype=None, *, device=None):
    return full(shape, 0, _creation_dtype(dtype, _dt.default_float(), "zeros"), device=device)


def ones(shape, dtype=None, *, device=None):
    return full(shape, 1, _creation_dtype(dtype, _dt.default_float(), "ones"), device=device)


def empty(shape, dtype=None, *, device=None):
    return zeros(shape, dtype, device=device)


def zeros_like(a, dtype=None, shape=None, *, device=None):
    return full_like(a, 0, dtype, shape, device=device)


def ones_like(a, dtype=None, shape=None, *, device=None):
    return full_like(a, 1, dtype, shape, device=device)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
    """`fill_value` in the shape of `a` (or `shape`), of its dtype (or `dtype`), on its device (or `device`)."""
    aval = aval_of(a)
    out = full(aval.shape if shape is None else shape, fill_value, aval.dtype if dtype is None else dtype)
    if dtype is None and aval.weak_type:  # (as JAX's: zeros_like(1.0) + a bfloat16 array is bfloat16)
        out = lax._convert_element_type(out, aval.dtype, weak_type=True)
    return place(out, device if device is not None else getattr(a, "device", None) if isinstance(a, Array) else None,
                 "full_like")


def arange(start, stop=None, step=None, dtype=None, *, device=None):
    """Evenly spaced values; `start`, `stop`, `step` must be concrete (static) numbers."""
    return place(_arange(start, stop, step, dtype), device, "arange")


def _arange(start, stop=None, step=None, dtype=None):
    for v in (start, stop, step):
        if isinstance(v, Tracer):
            raise v._concretization_error("arange")
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    # (the type of start, stop and step together, Python numbers weak, as JAX's: np.int8 bounds give int8)
    default = _dt.result_type(*((aval_of(v).dtype, aval_of(v).weak_type) for v in (start, stop, step)))[0]
    dt = _creation_dtype(dtype, default, "arange")
    host = np.arange(start, stop, step).astype(dt)
    if _dt.kind(dt) in "iu" and _dt.kind(default) not in "iub":
        # Non-integral bounds with an integer dtype: NumPy steps by int(start + step) - int(start), JAX by
        # int(step), truncating the values gives a third answer (arange(-3, 3, 1.5, dtype=int32) is [-3, -1, 1, 3]
        # in NumPy, [-3, -2, -1, 0] in JAX, [-3, -1, 0, 1] truncated); where they differ, say so.
        with np.errstate(all="ignore"):
            jax_rule = (int(np.real(start)) + np.arange(host.shape[0]) * int(np.real(step))).astype(dt)
            try:
                numpy_rule = np.arange(start, stop, step, dtype=dt)
            except (OverflowError, ValueError) as e:  # (NumPy: -3 does not fit uint8)
                numpy_rule = e
        if not (np.array_equal(host, jax_rule) and isinstance(numpy_rule, np.ndarray)
                and np.array_equal(host, numpy_rule)):
            numpy_rule = numpy_rule.tolist() if isinstance(numpy_rule, np.ndarray) else repr(numpy_rule)
            raise ValueError(f"arange({start}, {stop}, {step}, dtype={dt}): NumPy ({numpy_rule}) and JAX "
                             f"({jax_rule.tolist()}) disagree on non-integral bounds with an integer dtype; compute "
                             f"the range in floats and convert it")
    n = host.shape[0]
    if current_trace() is None:
        return device_put(host)
    # Inside a trace: an iota instead of a constant of n elements.
    idx = lax.iota(dt, n)
    if step != 1:
        idx = lax.mul(idx, lax.full_like(idx, step))
    if start != 0:
        idx = lax.add(idx, lax.full_like(idx, start))
    return idx


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype=None, axis: int = 0,
             *, device=None):
    """`num` evenly spaced values from `start` to `stop` (included when `endpoint`), along a new `axis` when the
    bounds are arrays; with `retstep`, also the spacing. Integer dtypes round toward -inf, as NumPy and JAX do."""
    num = _static_int(num, "linspace")
    if num < 0:
        raise ValueError(f"linspace: num must be a non-negative integer, got {num}")
    arrays = builtins.any(isinstance(v, (Array, TracerBase, np.ndarray, np.generic)) for v in (start, stop))
    # (bounds of an inexact dtype keep it, integers take JAX's float for them: float16 bounds give float16)
    default = _dt.to_inexact(_dt.result_type(*((aval_of(v).dtype, aval_of(v).weak_type) for v in (start, stop)))[0]
                             ) if arrays else _dt.default_float()
    dt = _creation_dtype(dtype, default, "linspace")
    if _dt.kind(dt) == "c" or builtins.any(isinstance(v, complex) for v in (start, stop)):
        dt = dt if _dt.kind(dt) == "c" else _dt.default_complex()
    if not _dt.is_float(default) and _dt.kind(default) != "c":
        default = _dt.default_float()
    step_dt = dt if _dt.kind(dt) in "fc" else default
    out, step = (_linspace_traced if arrays else _linspace_const)(start, stop, num, endpoint, axis, dt, step_dt)
    out = place(out, device, "linspace")
    return (out, step) if retstep else out


def _linspace_const(start, stop, num, endpoint, axis, dt, step_dt):
    """Concrete bounds: NumPy's values in float64, rounded once to `dt`."""
    y, step = np.linspace(start, stop, num, endpoint=endpoint, retstep=True, axis=axis)
    if _dt.kind(dt) in "iu":
        y = np.floor(y)
    y, step = y.astype(dt), np.asarray(step).astype(step_dt)
    return (device_put(y), device_put(step)) if current_trace() is None else (asarray(y), asarray(step))


def _linspace_traced(start, stop, num, endpoint, axis, dt, step_dt):
    """Array bounds, traced or not (one formula for both): start*(1-t) + stop*t with t = i/div, so that t = 1
    gives `stop` exactly."""
    start, stop = astype(asarray(start), step_dt), astype(asarray(stop), step_dt)
    shape = np.broadcast_shapes(aval_of(start).shape, aval_of(stop).shape)
    if not -len(shape) - 1 <= axis <= len(shape):
        raise ValueError(f"linspace: axis {axis} is out of range for bounds of shape {shape}")
    ax = axis % (len(shape) + 1)
    start, stop = broadcast_to(start, shape), broadcast_to(stop, shape)
    out_shape = shape[:ax] + (num,) + shape[ax:]
    bdims = tuple(d for d in range(len(out_shape)) if d != ax)
    div = num - 1 if endpoint else num
    real = np.dtype(_dt.finfo(step_dt).dtype)
    step = lax.div(lax.sub(stop, start), lax.full_like(stop, div)) if div > 0 else lax.full_like(stop, np.nan)
    if num == 0:
        return _full(out_shape, 0, dt), step
    t = lax.broadcasted_iota(real, out_shape, ax)
    if div > 0:
        t = lax.div(t, lax.full_like(t, div))
    t = lax._convert_element_type(t, step_dt)
    lo, hi = (lax.broadcast_in_dim(v, out_shape, bdims) for v in (start, stop))
    out = lax.add(lax.mul(lo, lax.sub(lax.full_like(t, 1), t)), lax.mul(hi, t))
    if _dt.kind(dt) in "iu" and div > 0 and _dt.kind(step_dt) == "f":
        # (lo * (div - i) + hi * i) / div: exact for integral bounds but for the one division, so that a value
        # that is an integer is not floored from 4.9999 to 4 (linspace(5, [5], 3, dtype=int) was 5, 4, 5)
        i = lax.broadcasted_iota(step_dt, out_shape, ax)
        d = lax.full_like(i, div)
        out = lax.div(lax.add(lax.mul(lo, lax.sub(d, i)), lax.mul(hi, i)), d)
    if endpoint and div > 0:  # (the last value is `stop` itself, as NumPy and JAX set it: not nan where start is
        # infinite or nan, whose product with 0 the formula takes)
        last = lax.eq(lax.broadcasted_iota(np.dtype(np.int32), out_shape, ax), lax.full_like(
            lax.broadcasted_iota(np.dtype(np.int32), out_shape, ax), div))
        out = lax.select(last, hi, out)
    if _dt.kind(dt) in "iu":
        out = lax.floor(out)
    return lax._convert_element_type(out, dt), step


def empty_like(a, dtype=None, shape=None, *, device=None):
    """Like `zeros_like` (stagec arrays are never uninitialized)."""
    return zeros_like(a, dtype, shape, device=device)


def _iota_2d(n: int, m: int, k: int):
    """A boolean (n, m) array: True where column - row == k ... as int32 row and column iotas."""
    rows = lax.broadcasted_iota(np.int32, (n, m), 0)
    cols = lax.broadcasted_iota(np.int32, (n, m), 1)
    return rows, cols


def _static_int(v, what: str) -> int:
    if isinstance(v, Tracer):
        raise v._concretization_error(what)
    return operator.index(v)


def eye(N: int, M: int | None = None, k: int = 0, dtype=None, *, device=None):
    """A 2-D array with ones on diagonal `k` and zeros elsewhere."""
    return place(_eye(N, M, k, dtype), device, "eye")


def _eye(N: int, M: int | None = None, k: int = 0, dtype=None):
    N = _static_int(N, "eye")
    M = N if M is None else _static_int(M, "eye")
    k = _static_int(k, "eye")
    if N < 0 or M < 0:
        raise ValueError(f"negative dimensions are not allowed (eye({N}, {M}))")
    dt = _creation_dtype(dtype, _dt.default_float(), "eye")
    if current_trace() is None:
        return device_put(np.eye(N, M, k, dtype=dt))
    rows, cols = _iota_2d(N, M, k)
    on = lax.eq(lax.sub(cols, rows), lax.full_like(rows, k))
    return lax._convert_element_type(on, dt)


def identity(n: int, dtype=None):
    return eye(n, dtype=dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype=None):
    """Ones at and below diagonal `k` (j <= i + k), zeros above."""
    N = _static_int(N, "tri")
    M = N if M is None else _static_int(M, "tri")
    k = _static_int(k, "tri")
    dt = _creation_dtype(dtype, _dt.default_float(), "tri")
    if current_trace() is None:
        return device_put(np.tri(N, M, k, dtype=dt))
    rows, cols = _iota_2d(N, M, k)
    return lax._convert_element_type(lax.le(cols, lax.add(rows, lax.full_like(rows, k))), dt)


def _tri_mask(m, k: int, lower: bool, fname: str):
    shape = aval_of(m).shape
    if len(shape) < 2:
        raise ValueError(f"{fname}: input array must be at least 2-d, got shape {shape}")
    rows, cols = _iota_2d(shape[-2], shape[-1], k)
    kk = lax.add(rows, lax.full_like(rows, k))
    mask = lax.le(cols, kk) if lower else lax.ge(cols, kk)
    return broadcast_to(mask, shape)


def tril(m: Any, k: int = 0):
    """Zero the elements above diagonal `k` (of the last two axes)."""
    (m,) = _promote("tril", m)
    m = m if _is_array(m) else asarray(m)
    mask = _tri_mask(m, _static_int(k, "tril"), True, "tril")
    return lax.select(mask, m, lax.full_like(m, 0))


def triu(m: Any, k: int = 0):
    """Zero the elements below diagonal `k` (of the last two axes)."""
    (m,) = _promote("triu", m)
    m = m if _is_array(m) else asarray(m)
    mask = _tri_mask(m, _static_int(k, "triu"), False, "triu")
    return lax.select(mask, m, lax.full_like(m, 0))


def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list:
    """Coordinate arrays from 1-D coordinate vectors ('xy' Cartesian or 'ij' matrix indexing)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    xs = [x if _is_array(x) else asarray(x) for x in xi]
    for x in xs:
        if aval_of(x).ndim != 1:
            raise ValueError(f"meshgrid: arguments must be 1-D, got shape {aval_of(x).shape}")
    shape = [aval_of(x).shape[0] for x in xs]
    if indexing == "xy" and len(xs) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, x in enumerate(xs):
        axis = (1 if i == 0 else 0 if i == 1 else i) if indexing == "xy" and len(xs) >= 2 else i
        if sparse:
            s = [1] * len(xs)
            s[axis] = aval_of(x).shape[0]
            out.append(lax.reshape(x, s))
        else:
            out.append(lax.broadcast_in_dim(x, shape, (axis,)))
    return out
