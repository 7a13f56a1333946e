"""`jax.lax` composites over the bit primitives and slices: `nextafter`, `associative_scan`, `cumlogsumexp`,
`split`, each following JAX's algorithm so that values (and derivatives, where JAX defines them) agree."""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..core import aval_of, composite
from ..primitives import elementwise as _ew
from ..ad import custom_jvp
from ..primitives.bits import bitcast_convert_type
from ..primitives.reductions import associative_scan
from . import full_like, slice_in_dim  # (defined before `lax` imports this module)


def _nextafter(x1, x2):
    """The next representable float after `x1` toward `x2`, elementwise (XLA's algorithm on the bits, as
    `jax.lax.nextafter`): `x2` where they are equal, the smallest subnormal signed as `x2` from a zero, NaN where
    either is NaN. Not differentiable (as in JAX). Subnormals step exactly, as NumPy's and C's (JAX on CPU
    takes a subnormal `x1` beside a zero `x2` as equal to it: nextafter(-1e-45, 0) is 0.0 there, -0.0 here)."""
    x1, x2 = _ew.match_weak(x1, x2)
    a1, a2 = aval_of(x1), aval_of(x2)
    for a in (a1, a2):
        if _dt.kind(a.dtype) != "f":
            raise TypeError(f"nextafter does not accept dtype {a.dtype} (it needs floating operands)")
    if a1.dtype != a2.dtype or a1.shape != a2.shape:
        raise TypeError(f"nextafter needs operands of one shape and dtype, got {a1.str_short()} and {a2.str_short()}")
    ut = np.dtype(f"u{a1.dtype.itemsize}")
    b1, b2 = bitcast_convert_type(x1, ut), bitcast_convert_type(x2, ut)
    u = lambda v: full_like(b1, v)
    sign = 1 << (8 * ut.itemsize - 1)
    abs1, abs2 = _ew.bitwise_and(b1, u(sign - 1)), _ew.bitwise_and(b2, u(sign - 1))
    s1, s2 = _ew.bitwise_and(b1, u(sign)), _ew.bitwise_and(b2, u(sign))
    smaller = _ew.bitwise_or(_ew.gt(abs1, abs2), _ew.ne(s1, s2))
    out = _ew.select(smaller, _ew.sub(b1, u(1)), _ew.add(b1, u(1)))
    from_zero = _ew.select(_ew.eq(abs2, u(0)), b2, _ew.bitwise_or(s2, u(1)))
    out = _ew.select(_ew.eq(abs1, u(0)), from_zero, out)
    # equal as bits (or two zeros), not as floats: a CPU comparing with subnormals flushed to zero (XLA's, IREE's)
    # would call -1e-45 equal to 0 and answer 0.0 rather than -0.0 (NumPy's and C's answer)
    same = _ew.bitwise_or(_ew.eq(b1, b2), _ew.bitwise_and(_ew.eq(abs1, u(0)), _ew.eq(abs2, u(0))))
    out = _ew.select(same, b2, out)
    nan = _ew.bitwise_or(_ew.ne(x1, x1), _ew.ne(x2, x2))
    out = bitcast_convert_type(out, a1.dtype)
    return _ew.select(nan, full_like(x1, np.nan), out)


# Differentiating it raises, as in JAX (its derivative in x1 is ~1, not the 0 a stop_gradient gave).
nextafter = custom_jvp(_nextafter)
nextafter.__name__ = nextafter.__qualname__ = "nextafter"


@nextafter.defjvp
def _nextafter_jvp(primals, tangents):
    raise NotImplementedError("Differentiation rule for 'nextafter' not implemented (as in JAX): it steps "
                              "through the bits of floats; differentiate the value it approximates instead")


nextafter = composite(nextafter)  # (eager: one plan of its bit operations, the bits op by op gives; 165 -> 16 us)


def _logaddexp_value(x1, x2):
    """log(exp(x1) + exp(x2)) as JAX's lax-level one: x1 + x2 where their difference is NaN (a NaN, or infinities
    of one sign)."""
    amax = _ew.max(x1, x2)
    delta = _ew.sub(x1, x2)
    return _ew.select(_ew.ne(delta, delta), _ew.add(x1, x2),
                      _ew.add(amax, _ew.log1p(_ew.exp(_ew.neg(_ew.abs(delta))))))


# JAX's derivative: t1 exp(x1 - out) + t2 exp(x2 - out), 1/2 each where x1 == x2 (the formula's own, through max
# and abs, gives 0 and 1 there: cumlogsumexp's gradient at equal values was wrong)
_logaddexp = custom_jvp(_logaddexp_value)


@_logaddexp.defjvp
def _logaddexp_jvp(primals, tangents):
    x1, x2 = primals
    out = _logaddexp_value(x1, x2)
    inf = full_like(out, np.inf)
    finite = lambda v: _ew.select(_ew.eq(v, inf), full_like(v, 0), v)  # (+inf as 0: a weight, not inf - inf)
    part = lambda x, t: _ew.mul(t, _ew.exp(_ew.sub(finite(x), finite(out))))
    return out, _ew.add(part(x1, tangents[0]), part(x2, tangents[1]))


@composite  # (eager: the scan's steps as one composite, not op by op)
def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
    """log(cumsum(exp(operand))) along `axis`, computed as JAX does off TPU: an `associative_scan` of logaddexp."""
    av = aval_of(operand)
    if _dt.kind(av.dtype) not in "f":
        raise TypeError(f"cumlogsumexp does not accept dtype {av.dtype} (it needs a floating dtype)")
    if not -av.ndim <= axis < av.ndim:
        raise ValueError(f"cumlogsumexp: axis {axis} is out of bounds for rank {av.ndim}")
    return associative_scan(_logaddexp, operand, reverse=reverse, axis=axis % av.ndim)


def split(operand, sizes, axis: int = 0) -> list:
    """`operand` cut along `axis` into consecutive pieces of the static `sizes` (which sum to its length)."""
    av = aval_of(operand)
    if not -av.ndim <= axis < av.ndim:
        raise ValueError(f"split: axis {axis} is out of bounds for rank {av.ndim}")
    axis %= av.ndim
    sizes = [int(s) for s in sizes]
    if any(s < 0 for s in sizes):
        raise ValueError(f"Sizes must be nonnegative, got {sizes}")
    if sum(sizes) != av.shape[axis]:
        raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the operand shape "
                         f"{list(av.shape)}")
    out, start = [], 0
    for s in sizes:
        out.append(slice_in_dim(operand, start, start + s, 1, axis))
        start += s
    return out
