"""`stagec.lax`: strict operations (equal shapes, explicit dtypes) and structured control flow, as `jax.lax`.

The elementwise, structural, reduction, indexing and contraction functions are the primitives' own strict
wrappers (`stagec.primitives`); this module adds the composites built from them and the control flow
(`stagec.lax.control_flow`).
"""
from __future__ import annotations

import numpy as np

from ..core import Const, aval_of
from ..tree_util import tree_map
from ..primitives import elementwise as _ew
from ..primitives.dot import Precision, dot, dot_general
from ..primitives.fft import fft
from ..primitives.elementwise import clamp, convert_element_type, select
from ..primitives.elementwise import stop_gradient as _stop_gradient
from ..primitives.indexing import gather, scatter
from ..primitives.reductions import (argmax, argmin, cummax, cummin, cumprod, cumsum, reduce_and, reduce_max,
                                     reduce_min, reduce_or, reduce_prod, reduce_sum, sort)
from ..primitives.structural import (broadcast, broadcast_in_dim, broadcasted_iota, concatenate, dynamic_slice,
                                     dynamic_update_slice, iota, pad, reshape, rev, slice, transpose)

globals().update({name: getattr(_ew, name) for name in _ew.WRAPPERS})  # add, exp, sin, eq, ... (one per primitive)
add, sub, mul, div, neg, real, imag, complex = (  # used below; named for readers and linters
    _ew.add, _ew.sub, _ew.mul, _ew.div, _ew.neg, _ew.real, _ew.imag, _ew.complex)


def power_by_squaring(x, n: int, times=None):
    """`x` to the static power `n >= 1` under the product `times` (default `mul`), by repeated squaring."""
    times = times or mul
    acc, base = None, x
    while n:
        if n & 1:
            acc = base if acc is None else times(acc, base)
        n >>= 1
        if n:
            base = times(base, base)
    return acc


def integer_pow(x, y: int):
    """`x ** y` for a static integer `y`, by repeated squaring (exact for integers)."""
    if y == 0:
        return full_like(x, 1)
    if y < 0:
        return div(full_like(x, 1), integer_pow(x, -y))
    return power_by_squaring(x, y)


def full_like(x, fill_value):
    aval = aval_of(x)
    return broadcast_in_dim(Const(np.array(fill_value, dtype=aval.dtype), aval.update(shape=())), aval.shape, ())


def stop_gradient(x):
    """`x` (a pytree) with zero derivative: differentiation treats its leaves as constants."""
    return tree_map(_stop_gradient, x)


def conj(x):
    """The complex conjugate (re - i*im)."""
    return complex(real(x), neg(imag(x)))


from .control_flow import cond, fori_loop, map, scan, switch, while_loop  # noqa: E402  (uses the functions above)
