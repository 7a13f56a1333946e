"""Sorting along an axis: `sort`, `argsort` (stable; NaN sorts last, as in NumPy).

IREE's CPU `stablehlo.sort` does not honour `is_stable`, so stability comes from a second key: the
original index."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..core import aval_of
from ._base import _arr, _axis, _promote


def _prepare(fname: str, a, axis):
    (a,) = _promote(fname, _arr(a))
    if axis is None:
        a, axis = lax.reshape(a, (aval_of(a).size,)), 0
    av = aval_of(a)
    if _dt.kind(av.dtype) == "c":
        raise NotImplementedError(f"{fname} of complex arrays is not implemented")
    if av.ndim == 0:
        raise np.exceptions.AxisError(f"{fname}: axis {axis} is out of bounds for array of dimension 0")
    return a, av, _axis(axis, av.ndim, fname)


def sort(a: Any, axis: int | None = -1, *, kind: str | None = None, order=None, stable: bool | None = None):
    """A sorted copy of `a` along `axis` (flattened when None); NaN goes last, equal elements keep their order."""
    if order is not None:
        raise NotImplementedError("sort: `order` (structured arrays) is not supported")
    a, av, axis = _prepare("sort", a, axis)
    if av.size == 0:
        return a
    if _dt.kind(av.dtype) == "f":  # equal keys can differ (-0.0 and 0.0): keep their order, as a stable sort
        idx = lax.broadcasted_iota(np.int32, av.shape, axis)
        return lax.sort([a, idx], dimension=axis, is_stable=True, num_keys=2)[0]
    return lax.sort([a], dimension=axis, is_stable=True, num_keys=1)[0]


def argsort(a: Any, axis: int | None = -1, *, kind: str | None = None, order=None, stable: bool | None = None):
    """Indices that sort `a` along `axis` (a stable sort: ties keep index order; NaN last)."""
    if order is not None:
        raise NotImplementedError("argsort: `order` (structured arrays) is not supported")
    a, av, axis = _prepare("argsort", a, axis)
    idx = lax.broadcasted_iota(_dt.default_int(), av.shape, axis)
    if av.size == 0:
        return idx
    # IREE's CPU sort ignores is_stable: the index as a second key makes ties keep their order.
    return lax.sort([a, idx], dimension=axis, is_stable=True, num_keys=2)[1]
