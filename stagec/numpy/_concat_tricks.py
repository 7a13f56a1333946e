"""`r_` and `c_`: NumPy's (and JAX's) concatenation by index notation, with JAX's rules (slices become `arange`, or
`linspace` for a complex step; a leading string sets axis, minimum rank and where 1-d items go)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import aval_of
from .. import numpy as snp

__all__ = ["r_", "c_"]


def _grid(s: slice):
    start, stop, step = s.start or 0, s.stop, s.step or 1
    if np.iscomplex(step):
        return snp.linspace(start, stop, int(abs(step)))
    return snp.arange(start, stop, step)


def _ndmin(x, n: int):
    shape = aval_of(x).shape
    return x.reshape((1,) * (n - len(shape)) + shape) if len(shape) < n else x


class _AxisConcat:
    axis: int
    ndmin: int
    trans1d: int
    op_name: str

    def __getitem__(self, key: Any):
        items = key if isinstance(key, tuple) else (key,)
        params = [self.axis, self.ndmin, self.trans1d, -1]
        directive = items[0]
        if isinstance(directive, str):
            items = items[1:]
            if directive == "r":
                params[-1] = 0
            elif directive == "c":
                params[-1] = 1
            else:
                vec: list = directive.split(",")
                vec = vec + params[len(vec):] if len(vec) < 4 else vec[:3] + [params[-1]]
                try:
                    params = [int(v) for v in vec]
                except ValueError as err:
                    raise ValueError(f"could not understand directive {directive!r}") from err
        axis, ndmin, trans1d, matrix = params
        out = []
        for item in items:
            if isinstance(item, slice):
                obj, item_ndim = _grid(item), 0
            elif isinstance(item, str):
                raise ValueError("string directive must be placed at the beginning")
            else:
                obj = snp.asarray(item)
                item_ndim = obj.ndim
            obj = _ndmin(obj, ndmin)
            if trans1d != -1 and ndmin - item_ndim > 0:
                order = tuple(range(ndmin))
                shifts = ndmin - abs(ndmin + trans1d + 1) % ndmin
                obj = snp.transpose(obj, order[shifts:] + order[:shifts])
            out.append(obj)
        res = snp.concatenate(tuple(out), axis=axis)
        if matrix != -1 and res.ndim == 1:
            res = snp.expand_dims(res, matrix)
        return res

    def __len__(self) -> int:
        return 0


class RClass(_AxisConcat):
    """Concatenation along the first axis by index notation: `r_[1:4, [0, 0], x]`."""
    axis, ndmin, trans1d, op_name = 0, 1, -1, "r_"


class CClass(_AxisConcat):
    """Columns stacked by index notation: `c_[a, b]` puts 1-d items as columns (axis -1, rank at least 2)."""
    axis, ndmin, trans1d, op_name = -1, 2, 0, "c_"


r_, c_ = RClass(), CClass()
