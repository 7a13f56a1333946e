"""`nonzero`, `flatnonzero`, `argwhere` (and so `where(condition)`): the count of nonzero elements decides
the shape, so under `jit` they need a static `size=`; the result is padded with `fill_value` (JAX's API)."""
from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..array import device_put
from ..core import TracerBase, aval_of
from ._base import _arr, _is_array
from ._indexing import NonConcreteBooleanIndexError


def _nonzero_shape_error(a) -> NonConcreteBooleanIndexError:
    return NonConcreteBooleanIndexError(
        f"nonzero/where(condition)/argwhere/flatnonzero: the result shape depends on the values of {a}, which are "
        f"unknown while tracing; pass a static size= (and optionally fill_value=) for a fixed-size result, use "
        f"snp.where(condition, x, y), or call it outside jit.")


def _check_size(fname: str, size) -> int | None:
    if size is None:
        return None
    try:
        size = operator.index(size)
    except TypeError:
        raise TypeError(f"{fname}: size must be a static non-negative int, got {size!r}") from None
    if size < 0:
        raise ValueError(f"{fname}: size must be non-negative, got {size}")
    return size


def _fill_values(fname: str, fill_value, ndim: int) -> tuple:
    """One scalar fill per dimension: `fill_value` is None (0), a scalar, or a tuple of `ndim` scalars."""
    vals = fill_value if isinstance(fill_value, tuple) else (0 if fill_value is None else fill_value,) * ndim
    if len(vals) != ndim or builtins.any(aval_of(_arr(v)).ndim != 0 for v in vals):
        raise ValueError(f"{fname}: fill_value must be a scalar or a tuple of length {ndim}; got {fill_value!r}")
    return vals


def _first_nonzero(a, size: int) -> tuple[list, Any]:
    """Traced: the indices (one int32 array of length `size` per dimension) of the first `size` nonzero
    elements in row-major order, and the count of nonzero elements. Entries past the count are arbitrary.

    A stable sort of the flat positions keyed by -(a != 0) puts the nonzero positions first, in order."""
    av = aval_of(a)
    m = av.size
    if m == 0:
        zero = np.zeros(size, np.int32)
        return [zero] * av.ndim, np.int32(0)
    flat = lax.reshape(a, (m,))
    mask = flat if av.dtype == np.bool_ else lax.ne(flat, lax.full_like(flat, 0))
    mi = lax._convert_element_type(mask, np.int32)
    pos = lax.sort([lax.neg(mi), lax.iota(np.int32, m)], num_keys=2)[1]
    pos = lax.slice(pos, (0,), (size,)) if size <= m else lax.pad(pos, np.int32(0), [(0, size - m, 0)])
    out, stride = [], m
    for d, n in enumerate(av.shape):
        stride //= n
        q = lax.div(pos, lax.full_like(pos, stride)) if stride != 1 else pos
        out.append(lax.rem(q, lax.full_like(q, n)) if d else q)
    return out, lax.reduce_sum(mi, (0,))


def _host_nonzero(a, size: int | None) -> tuple[list, Any]:
    """Concrete: NumPy's nonzero, truncated or zero-padded to `size`, and the count of nonzero elements."""
    nz = np.nonzero(np.asarray(a))
    count = len(nz[0])
    if size is not None:
        nz = [np.pad(i[:size], (0, builtins.max(size - count, 0))) for i in nz]
    return list(nz), count


def nonzero(a: Any, *, size: int | None = None, fill_value=None) -> tuple:
    """Indices of the nonzero elements, one array per dimension. Without `size` the count decides the shape,
    so `a` must be concrete (outside jit); with a static `size` the result has that length, truncated or
    padded with `fill_value` (default 0; a scalar, or a tuple with one per dimension), and works under jit."""
    a = _arr(a)
    size = _check_size("nonzero", size)
    nd = aval_of(a).ndim
    if nd == 0:
        raise ValueError("nonzero: calling nonzero on 0d arrays is not allowed; use snp.nonzero(snp.atleast_1d(a))")
    fills = _fill_values("nonzero", fill_value, nd)
    if isinstance(a, TracerBase):
        if size is None:
            raise _nonzero_shape_error(a)
        idx, count = _first_nonzero(a, size)
    else:
        idx, count = _host_nonzero(a, size)
        if fill_value is None:  # padded with 0 already
            return tuple(device_put(np.asarray(i, _dt.default_int())) for i in idx)
    from ._ufuncs import where
    valid = _valid_mask(size, count)
    return tuple(where(valid, _default_int(i), f) for i, f in zip(idx, fills))


def _valid_mask(size: int, count):
    """arange(size) < count, for an int or a traced int32 scalar `count`."""
    if not isinstance(count, TracerBase):
        return np.arange(size) < int(count)
    return lax.lt(lax.iota(np.int32, size), lax.broadcast_in_dim(count, (size,), ()))


def _default_int(i):
    dt = _dt.default_int()
    if not _is_array(i):
        return np.asarray(i, dt)
    return lax._convert_element_type(i, dt) if aval_of(i).dtype != dt else i


def flatnonzero(a: Any, *, size: int | None = None, fill_value=None):
    """Indices of the nonzero elements of the flattened `a` (`size`, `fill_value`: as for `nonzero`)."""
    from ._shapes import ravel
    return nonzero(ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a: Any, *, size: int | None = None, fill_value=None):
    """The indices of the nonzero elements as rows of a (count, a.ndim) array (`size`, `fill_value`: as for
    `nonzero`; a tuple gives one fill per column)."""
    a = _arr(a)
    size = _check_size("argwhere", size)
    if aval_of(a).ndim == 0:
        if size is None and isinstance(a, TracerBase):
            raise _nonzero_shape_error(a)
        n = size if size is not None else int(np.count_nonzero(np.asarray(a)))
        return device_put(np.zeros((n, 0), _dt.default_int()))
    nz = nonzero(a, size=size, fill_value=fill_value)
    if not builtins.any(isinstance(i, TracerBase) for i in nz):
        return device_put(np.stack([np.asarray(i) for i in nz], axis=1))
    from ._shapes import stack
    return stack(nz, axis=1)
