"""Sorting along an axis: `sort`, `argsort` (stable; NaN sorts last, as in NumPy).

IREE's CPU `stablehlo.sort` does not honour `is_stable`, so stability comes from a last key: the
original index. Complex numbers sort as in NumPy: by real, then imaginary part, those with a NaN part last."""
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
    if av.ndim == 0:
        raise np.exceptions.AxisError(f"{fname}: axis {axis} is out of bounds for array of dimension 0")
    return a, av, _axis(axis, av.ndim, fname)


def _keys(a, av) -> list:
    """Sort keys of `a`: for complex, NumPy's (has a NaN part, real, imag), else `a` itself."""
    if _dt.kind(av.dtype) != "c":
        return [a]
    re, im = lax.real(a), lax.imag(a)
    return [lax.bitwise_or(lax.ne(re, re), lax.ne(im, im)), re, im]


def _sorted_indices(a, av, axis: int, index_dtype, descending: bool):
    """The permutation that stably sorts `a` along `axis` (descending: ties still keep index order)."""
    if descending:  # ascending positions in the reversed array, mapped back and reversed: NaN first, ties in order
        up = _sorted_indices(lax.rev(a, (axis,)), av, axis, index_dtype, False)
        return lax.rev(lax.sub(lax.full_like(up, av.shape[axis] - 1), up), (axis,))
    idx = lax.broadcasted_iota(index_dtype, av.shape, axis)
    keys = _keys(a, av)
    return lax.sort([*keys, idx], dimension=axis, is_stable=True, num_keys=len(keys) + 1)[-1]


def sort(a: Any, axis: int | None = -1, *, kind: str | None = None, order=None, stable: bool | None = None,
         descending: bool = False):
    """A sorted copy of `a` along `axis` (flattened when None); NaN goes last, equal elements keep their
    order; complex numbers by real part, then imaginary part. `descending` reverses the order."""
    if order is not None:
        raise NotImplementedError("sort: `order` (structured arrays) is not supported")
    a, av, axis = _prepare("sort", a, axis)
    if av.size == 0:
        return a
    # (stable: equal keys can differ, -0.0 and 0.0; the lowering adds the position key a float sort needs)
    keys = _keys(a, av)
    keys = lax.sort(keys, dimension=axis, is_stable=True, num_keys=len(keys))
    out = lax.complex(*keys[1:]) if len(keys) == 3 else keys[0]
    return lax.rev(out, (axis,)) if descending else out


def argsort(a: Any, axis: int | None = -1, *, kind: str | None = None, order=None, stable: bool | None = None,
            descending: bool = False):
    """Indices that sort `a` along `axis` (a stable sort: ties keep index order; NaN last; complex
    lexicographically). With `descending`, the largest first and ties still in index order (with stable=False,
    JAX's: the ascending order reversed)."""
    if order is not None:
        raise NotImplementedError("argsort: `order` (structured arrays) is not supported")
    a, av, axis = _prepare("argsort", a, axis)
    if av.size == 0:
        return lax.broadcasted_iota(_dt.default_int(), av.shape, axis)
    if descending and stable is False:  # (JAX's: the ascending order reversed, ties last index first)
        return lax.rev(_sorted_indices(a, av, axis, _dt.default_int(), False), (axis,))
    return _sorted_indices(a, av, axis, _dt.default_int(), descending)
