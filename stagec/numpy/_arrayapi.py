"""The Python Array API standard (2024.12) where it names or shapes things differently from NumPy: the
inspection namespace, dtype kinds and casting, `nextafter`, `unstack`, `concat`, `permute_dims`,
`searchsorted`, `unique_*`, `diff`, DLPack and devices. Everything else the standard names is a NumPy function
of the other topic modules with the standard's signature."""
from __future__ import annotations

import builtins
import operator
from typing import Any, NamedTuple

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..array import device_put
from ..backend import Device, get_backend
from ..core import Tracer, aval_of
from ._base import _arr, _axis, _broadcast, _device, _is_array, _promote, _to_float, asarray, broadcast_to, place
from ._creation import zeros_like
from ._indexing import take
from ._linalg import matmul
from ._shapes import concatenate, expand_dims, moveaxis, swapaxes, transpose
from ._ufuncs import conjugate, equal, less, less_equal, logical_and, logical_or, minimum, not_equal

# ---------------------------------------------------------------- devices


def to_device(x, device, /, *, stream=None):
    """A copy of `x` on `device` (the array itself when it is there already)."""
    if stream is not None:
        raise ValueError("to_device: stagec has no streams; stream must be None")
    return place(x if _is_array(x) else asarray(x), device, "to_device")


# ---------------------------------------------------------------- inspection


class _Info:
    """`__array_namespace_info__()`: what this namespace supports (the standard's inspection API)."""

    __module__ = "stagec.numpy"

    def capabilities(self) -> dict:
        # Boolean indexing and data-dependent shapes (nonzero, unique_*) work eagerly; under jit they need a
        # static size= (as in JAX).
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> Device:
        return get_backend().devices[0]

    def devices(self) -> list:
        return list(get_backend().devices)

    def default_dtypes(self, *, device=None) -> dict:
        _device(device, "default_dtypes")
        return {"real floating": _dt.default_float(), "complex floating": _dt.default_complex(),
                "integral": _dt.default_int(), "indexing": _dt.default_int()}

    def dtypes(self, *, device=None, kind=None) -> dict:
        _device(device, "dtypes")
        x64 = _dt.default_int() == np.int64
        names = ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32", "complex64"]
        if x64:
            names += ["int64", "uint64", "float64", "complex128"]
        out = {n: np.dtype(n) for n in names}
        if kind is None:
            return out
        return {n: d for n, d in out.items() if isdtype(d, kind)}


def __array_namespace_info__() -> _Info:
    """The Array API inspection namespace: capabilities, devices, dtypes and default dtypes."""
    return _Info()


_KINDS = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu", "real floating": "f",
          "complex floating": "c", "numeric": "iufc"}


def isdtype(dtype, kind) -> bool:
    """Whether `dtype` is of `kind`: a dtype, a kind name ('bool', 'signed integer', 'unsigned integer',
    'integral', 'real floating', 'complex floating', 'numeric') or a tuple of those."""
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    dt = np.dtype(dtype)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r} (one of {sorted(_KINDS)})")
        return _dt.kind(dt) in _KINDS[kind]
    return dt == np.dtype(kind)


def can_cast(from_, to, /) -> bool:
    """Whether `from_` (a dtype or an array) promotes to `to` under the type promotion rules."""
    src = aval_of(from_).dtype if _is_array(from_) else np.dtype(from_)
    dst = np.dtype(to)
    return _dt.result_type((src, False), (dst, False))[0] == dst


# ---------------------------------------------------------------- elementwise


def next_up(x):
    """nextafter(x, +inf) by arithmetic (there is no bitcast primitive): x + |x| * 1.25 * 2**-(nmant+1)
    rounds to the next float for every normal x; where that step would be subnormal, x is scaled up by
    2**(nmant+2) first (exactly) and the step scaled back; zero steps to the smallest subnormal. Subnormal x
    (which CPUs may flush to zero) are not stepped exactly."""
    c = lambda v: lax.full_like(x, v)
    info = _dt.finfo(aval_of(x).dtype)
    k = info.nmant + 2
    small = lax.lt(lax.abs(x), c(2.0 ** (info.minexp + k)))
    xs = lax.select(small, lax.mul(x, c(2.0 ** k)), x)
    step = lax.add(xs, lax.mul(lax.abs(xs), c(1.25 * 2.0 ** -(info.nmant + 1))))
    step = lax.select(small, lax.mul(step, c(2.0 ** -k)), step)
    step = lax.select(lax.eq(x, c(0.0)), c(float(info.smallest_subnormal)), step)
    step = lax.select(lax.eq(x, c(-np.inf)), c(-float(info.max)), step)
    return lax.select(lax.eq(x, c(np.inf)), x, step)


def next_down(x):
    """nextafter(x, -inf)."""
    return lax.neg(next_up(lax.neg(x)))


def nextafter(x1, x2, /):
    """The next representable float after `x1` toward `x2` (x2 where they are equal, NaN where either is)."""
    x1, x2 = _broadcast("nextafter", *_to_float("nextafter", _arr(x1), _arr(x2)))
    if _dt.kind(aval_of(x1).dtype) != "f":
        raise TypeError(f"nextafter: real floating-point inputs required, got {aval_of(x1).dtype}")
    return lax.nextafter(x1, x2)  # (on the bits: exact for subnormals too)


# ---------------------------------------------------------------- manipulation


def concat(arrays, /, *, axis: int | None = 0):
    """`concatenate` under the standard's name (axis=None flattens first)."""
    return concatenate(arrays, axis=axis)


def permute_dims(x, /, axes: tuple):
    """`transpose` with the axes given (the standard's name)."""
    return transpose(x, axes)


def matrix_transpose(x, /):
    """Swap the last two axes."""
    x = _arr(x)
    if aval_of(x).ndim < 2:
        raise ValueError(f"matrix_transpose: x must have at least 2 dimensions, got shape {aval_of(x).shape}")
    return swapaxes(x, -1, -2)


def vecdot(x1, x2, /, *, axis: int = -1):
    """Dot product over `axis` (the first argument conjugated), broadcasting the other axes."""
    x1, x2 = _promote("vecdot", _arr(x1), _arr(x2))
    n1, n2 = aval_of(x1).ndim, aval_of(x2).ndim
    if n1 == 0 or n2 == 0:
        raise ValueError("vecdot: arguments must have at least one dimension")
    if not -builtins.min(n1, n2) <= axis < 0 and not 0 <= axis < builtins.min(n1, n2):
        raise np.exceptions.AxisError(f"vecdot: axis {axis} is out of bounds for shapes {aval_of(x1).shape} and "
                                      f"{aval_of(x2).shape}")
    if aval_of(x1).shape[axis] != aval_of(x2).shape[axis]:
        raise ValueError(f"vecdot: shapes {aval_of(x1).shape} and {aval_of(x2).shape} differ along axis {axis}")
    if axis >= 0:
        axis -= builtins.max(n1, n2) if n1 == n2 else builtins.min(n1, n2)
        axis = builtins.max(axis, -builtins.min(n1, n2))
    a, b = moveaxis(x1, axis, -1), moveaxis(x2, axis, -1)
    return matmul(expand_dims(conjugate(a), -2), expand_dims(b, -1))[..., 0, 0]


def unstack(x, /, *, axis: int = 0) -> tuple:
    """The slices of `x` along `axis`, as a tuple."""
    x = _arr(x)
    x = x if _is_array(x) else asarray(x)
    ax = _axis(axis, aval_of(x).ndim, "unstack")
    x = moveaxis(x, ax, 0)
    return tuple(x[i] for i in range(aval_of(x).shape[0]))


def diff(x, /, n: int = 1, axis: int = -1, prepend=None, append=None):
    """The `n`-th forward difference along `axis` (after adding `prepend` and `append`)."""
    x = _arr(x)
    x = x if _is_array(x) else asarray(x)
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    ax = _axis(axis, aval_of(x).ndim, "diff")

    def edge(p):
        p = _arr(p)
        shape = list(aval_of(x).shape)
        shape[ax] = 1 if aval_of(p).ndim == 0 else aval_of(p).shape[ax]
        return broadcast_to(p, shape)
    if prepend is not None or append is not None:
        x = concatenate(([edge(prepend)] if prepend is not None else []) + [x]
                        + ([edge(append)] if append is not None else []), axis=ax)
    cut = lambda a, b: x[(slice(None),) * ax + (slice(a, b),)]
    for _ in range(n):
        hi, lo = cut(1, None), cut(None, -1)
        x = lax.ne(hi, lo) if aval_of(x).dtype == np.bool_ else lax.sub(hi, lo)
    return x


# ---------------------------------------------------------------- searching and sets


_SEARCH_METHODS = ("scan", "scan_unrolled", "sort", "compare_all")


def searchsorted(x1, x2, /, side: str = "left", sorter=None, *, method: str = "scan"):
    """Insertion indices of `x2` into 1-D sorted `x1` (`side` 'left': before equal entries), int32 as JAX's (int64
    only past 2**31 - 1 entries); NaN sorts last, complex numbers by real then imaginary part (each NaN last), as
    `sort`. `method` is JAX's choice of algorithm; all give the same indices (one binary search here)."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if method not in _SEARCH_METHODS:
        raise ValueError(f"searchsorted: method must be one of {_SEARCH_METHODS}, got {method!r}")
    x1, x2 = _promote("searchsorted", _arr(x1), _arr(x2))
    if aval_of(x1).ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-dimensional, got shape {aval_of(x1).shape}")
    if sorter is not None:
        x1 = take(x1, sorter)
    n, kind = aval_of(x1).shape[0], _dt.kind(aval_of(x1).dtype)

    def lt(a, q, or_equal):  # a < q (a <= q) in NumPy's order of floats: NaN last, NaNs equal
        if kind not in "fc":
            return less_equal(a, q) if or_equal else less(a, q)
        if or_equal:
            return logical_or(less_equal(a, q), not_equal(q, q))
        return logical_or(less(a, q), logical_and(not_equal(q, q), equal(a, a)))

    def eq(a, q):
        return logical_or(equal(a, q), logical_and(not_equal(a, a), not_equal(q, q)))

    def before(a):  # whether `a` (an entry of x1) goes before the query
        if kind != "c":
            return lt(a, x2, side == "right")
        ar, ai, qr, qi = lax.real(a), lax.imag(a), lax.real(x2), lax.imag(x2)
        return logical_or(lt(ar, qr, False), logical_and(eq(ar, qr), lt(ai, qi, side == "right")))

    # A binary search, branch-free: the count of entries before the query, built from the largest power of two
    # down (log2(n) gathers of the queries' size; comparing every pair was 13x JAX's time for 10^4 x 10^5).
    count = asarray(zeros_like(x2, np.int32 if n <= np.iinfo(np.int32).max else np.int64))
    step = 1 << max(n.bit_length() - 1, 0)
    while n and step:
        more = count + step
        ok = logical_and(less_equal(more, n), before(take(x1, minimum(more, n) - 1)))
        count = lax.select(ok, more, count)
        step >>= 1
    return count


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def _unique_host(fname: str, x, **kw):
    """np.unique on the host: the number of unique values is data, so `x` must be concrete (under jit,
    use `unique(..., size=)`). NaNs are distinct, as the standard says."""
    if isinstance(x, Tracer):
        raise x._concretization_error(f"{fname} (its output shape depends on the values; use snp.unique with a "
                                      f"static size= under jit)")
    host = np.asarray(x)
    out = np.unique(host.reshape(-1), equal_nan=False, **kw)
    return out if isinstance(out, tuple) else (out,)


def _idx(v):
    return device_put(np.asarray(v).astype(_dt.default_int()))


def unique_values(x, /):
    """The distinct values of `x`, sorted (eager only)."""
    (v,) = _unique_host("unique_values", x)
    return asarray(v)


def unique_counts(x, /) -> UniqueCountsResult:
    """The distinct values of `x` and how often each occurs (eager only)."""
    v, c = _unique_host("unique_counts", x, return_counts=True)
    return UniqueCountsResult(asarray(v), _idx(c))


def unique_inverse(x, /) -> UniqueInverseResult:
    """The distinct values of `x`, and for each element of `x` the index of its value (shaped as x)."""
    v, inv = _unique_host("unique_inverse", x, return_inverse=True)
    return UniqueInverseResult(asarray(v), _idx(inv.reshape(aval_of(x).shape)))


def unique_all(x, /) -> UniqueAllResult:
    """values, first indices, inverse indices (shaped as x) and counts (eager only)."""
    v, i, inv, c = _unique_host("unique_all", x, return_index=True, return_inverse=True, return_counts=True)
    return UniqueAllResult(asarray(v), _idx(i), _idx(inv.reshape(aval_of(x).shape)), _idx(c))


# ---------------------------------------------------------------- DLPack


def from_dlpack(x, /, *, device=None, copy=None):
    """An array from any DLPack producer (copied to the device)."""
    if copy is False:
        raise ValueError("from_dlpack: copy=False is impossible (stagec arrays live in IREE buffers)")
    host = np.from_dlpack(x)
    return place(device_put(np.array(host)), device, "from_dlpack")


def dlpack(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule of a host copy (the array's buffer is IREE's: a consumer gets a CPU copy)."""
    if copy is False:
        raise BufferError("__dlpack__: copy=False is impossible (stagec arrays live in IREE buffers)")
    if isinstance(self, Tracer):
        raise self._concretization_error("__dlpack__")
    host = np.array(self)
    return host.__dlpack__(**({"max_version": max_version} if max_version is not None else {}))


def dlpack_device(self, /):
    return (1, 0)  # kDLCPU: what __dlpack__ exports


__all__ = ["__array_namespace_info__", "can_cast", "concat", "diff", "from_dlpack", "isdtype", "matrix_transpose",
           "nextafter", "permute_dims", "searchsorted", "to_device", "unique_all", "unique_counts",
           "unique_inverse", "unique_values", "unstack", "vecdot"]
