"""`jax.lax` composites over the bit primitives and slices: `nextafter`, `associative_scan`, `cumlogsumexp`,
`split`, each following JAX's algorithm so that values (and derivatives, where JAX defines them) agree."""
from __future__ import annotations

import builtins as _builtins

import numpy as np

from .. import dtypes as _dt
from ..core import aval_of
from ..primitives import elementwise as _ew
from ..primitives.bits import bitcast_convert_type
from ..primitives.structural import concatenate, pad, rev
from ..tree_util import tree_flatten, tree_unflatten
from . import full_like, slice_in_dim  # (defined before `lax` imports this module)


def nextafter(x1, x2):
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
    x1, x2 = _ew.stop_gradient(x1), _ew.stop_gradient(x2)
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


def _interleave(a, b, axis):
    """a[0], b[0], a[1], b[1], ... along `axis` (len(a) is len(b) or one more), by padding and adding, as JAX."""
    na, nb = aval_of(a).shape[axis], aval_of(b).shape[axis]
    nd = aval_of(a).ndim
    op = _ew.bitwise_or if aval_of(a).dtype == np.bool_ else _ew.add
    cfg = lambda lo, hi: [(lo, hi, 1) if i == axis else (0, 0, 0) for i in range(nd)]
    zero = lambda x: np.zeros((), aval_of(x).dtype)
    if na == nb:
        return op(pad(a, zero(a), cfg(0, 1)), pad(b, zero(b), cfg(1, 0)))
    return op(pad(a, zero(a), cfg(0, 0)), pad(b, zero(b), cfg(1, 1)))


def associative_scan(fn, elems, reverse: bool = False, axis: int = 0):
    """The inclusive scan of `elems` (a pytree of arrays of one length along `axis`) with the associative `fn`
    (taking and returning such pytrees), by JAX's parallel algorithm (`jax.lax.associative_scan`: pairwise
    combination, recursion on the half, interleaving), so that non-exact operations round as in JAX."""
    flat, tree = tree_flatten(elems)
    if not flat:
        return elems
    if reverse:
        flat = [rev(e, [axis % aval_of(e).ndim]) if aval_of(e).ndim else e for e in flat]
    nd = aval_of(flat[0]).ndim
    if not -nd <= axis < _builtins.max(nd, 1):
        raise ValueError(f"associative_scan: axis {axis} is out of bounds for rank {nd}")
    axis %= _builtins.max(nd, 1)
    n = aval_of(flat[0]).shape[axis]
    if any(aval_of(e).shape[axis] != n for e in flat[1:]):
        raise ValueError(f"Array inputs to associative_scan must have the same first dimension. "
                         f"(saw: {[aval_of(e).shape for e in flat]})")

    def combine(a, b):
        c, _ = tree_flatten(fn(tree_unflatten(tree, a), tree_unflatten(tree, b)))
        return c

    def scan(es):
        m = aval_of(es[0]).shape[axis]
        if m < 2:
            return es
        reduced = combine([slice_in_dim(e, 0, -1, 2, axis) for e in es], [slice_in_dim(e, 1, None, 2, axis) for e in es])
        odd = scan(reduced)
        if m % 2 == 0:
            even = combine([slice_in_dim(e, 0, -1, 1, axis) for e in odd], [slice_in_dim(e, 2, None, 2, axis) for e in es])
        else:
            even = combine(odd, [slice_in_dim(e, 2, None, 2, axis) for e in es])
        even = [concatenate([slice_in_dim(e, 0, 1, 1, axis), r], axis) for e, r in zip(es, even)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd)]

    out = scan(flat)
    if reverse:
        out = [rev(e, [axis]) for e in out]
    return tree_unflatten(tree, out)


def _logaddexp(x1, x2):
    """log(exp(x1) + exp(x2)) as JAX's lax-level one: x1 + x2 where their difference is NaN (a NaN, or infinities
    of one sign)."""
    amax = _ew.max(x1, x2)
    delta = _ew.sub(x1, x2)
    return _ew.select(_ew.ne(delta, delta), _ew.add(x1, x2),
                      _ew.add(amax, _ew.log1p(_ew.exp(_ew.neg(_ew.abs(delta))))))


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
