"""Helpers the families' differentiation rules share (the transformation itself is `stagec.ad`).

A JVP rule is `jvp(primals, tangents, **params) -> (out, tangent_out)` (lists for multiple results); a
tangent is `None` where it is known to be zero. A transpose rule is `transpose(ct, *args, **params) ->
[ct per arg]`: the linear inputs come as `UndefinedPrimal`, the others as values; a cotangent is `None`
where it is zero. Rules are written with the strict wrappers (`prim.bind`), so they are differentiable too.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import dtypes as _dt
from ..core import Const, Primitive, ShapedArray, aval_of


class UndefinedPrimal:
    """A linear input of an equation being transposed: only its abstract value is known."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x) -> bool:
    return type(x) is UndefinedPrimal


def is_linear(x) -> bool:
    """True for a tangent being recorded for transposition (`stagec.ad` marks its tracers `_linear`)."""
    return getattr(x, "_linear", False)


def differentiable(aval: ShapedArray) -> bool:
    return _dt.kind(aval.dtype) in "fc"


def zeros(aval: ShapedArray):
    """An array of zeros of `aval` (a real computation, also when running eagerly)."""
    from .structural import broadcast_in_dim_p
    z = Const(np.zeros((), aval.dtype), ShapedArray((), aval.dtype, aval.weak_type))
    return broadcast_in_dim_p.bind(z, shape=aval.shape, broadcast_dimensions=())


def full_like(x, value):
    """`value` in `x`'s shape and dtype, weakly typed (a host constant when `x` is a scalar)."""
    from .structural import broadcast_in_dim_p
    av = aval_of(x)
    c = Const(np.array(value, av.dtype), ShapedArray((), av.dtype, True))
    return broadcast_in_dim_p.bind(c, shape=av.shape, broadcast_dimensions=()) if av.shape else c


def instantiate(t, aval: ShapedArray):
    return zeros(aval) if t is None else t


def add_tangents(a, b):
    from .elementwise import add
    return b if a is None else a if b is None else add(a, b)


def defjvp(prim: Primitive, *terms: Callable | None) -> None:
    """JVP of a single-result primitive as a sum of terms, one per operand: `term(g, ans, *primals, **params)`
    is the contribution of operand i's tangent `g` (None for an operand with no derivative)."""
    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        out = None
        for term, t in zip(terms, tangents):
            if t is not None and term is not None:
                out = add_tangents(out, term(t, ans, *primals, **params))
        return ans, out
    prim.def_jvp(rule)


def defzero(prim: Primitive) -> None:
    """A piecewise-constant primitive: its derivative is zero wherever it is defined."""
    prim.def_jvp(lambda primals, tangents, **params: (prim.bind(*primals, **params), None))


def deflinear(prim: Primitive, transpose: Callable) -> None:
    """A primitive linear in its single operand: the JVP applies it to the tangent; `transpose(ct, x, **params)`
    returns the operand's cotangent."""
    prim.def_jvp(lambda primals, tangents, **params: (prim.bind(*primals, **params), prim.bind(*tangents, **params)))
    prim.def_transpose(lambda ct, x, **params: [None if ct is None else transpose(ct, x, **params)])
