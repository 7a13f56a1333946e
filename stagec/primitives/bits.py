"""Bit-level primitives: `population_count`, `clz` (count leading zeros) and `bitcast_convert_type`, as `jax.lax`'s.

Each is defined once here with its shape rule, its StableHLO emission (`stablehlo.popcnt`,
`stablehlo.count_leading_zeros`, `stablehlo.bitcast_convert`), its NumPy rule, its derivative (none: integer
results; a float-to-float bitcast is piecewise constant, zero as in JAX) and its batching rule.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from .. import lowering as L
from ..core import Primitive, ShapedArray
from . import _ad
from ._batch import at_front, axis_size, elementwise_rule
from ._util import check_kind, of_kinds


def _int_unary(name: str, op: str) -> Primitive:
    def rule(x: ShapedArray) -> ShapedArray:
        check_kind(name, x, "iu")
        return x

    def lower(ctx: L.Ctx, x):
        aval = ctx.avals_in[0]
        if op == "stablehlo.count_leading_zeros" and aval.dtype.itemsize < 4:  # (lavapipe could not compile an 8- or
            # 16-bit count: zero-extended to int32, counted, less the 32 - width leading zeros the extension adds)
            u = aval.update(dtype=np.dtype(f"u{aval.dtype.itemsize}"), weak_type=False)
            wide = aval.update(dtype=np.dtype(np.int32), weak_type=False)
            xu = x if _dt.kind(aval.dtype) == "u" else ctx.op1("stablehlo.bitcast_convert", [x], result_avals=[u])
            r = ctx.op1(op, [ctx.op1("stablehlo.convert", [xu], result_avals=[wide])], result_avals=[wide])
            r = ctx.op1("stablehlo.subtract", [r, L.full(32 - aval.dtype.itemsize * 8, wide)], result_avals=[wide])
            return [ctx.op1("stablehlo.convert", [r])]
        if _dt.kind(aval.dtype) == "u":  # the same bits as signed (the counts do not depend on the signedness)
            s = aval.update(dtype=np.dtype(f"i{aval.dtype.itemsize}"), weak_type=False)
            r = ctx.op1(op, [ctx.op1("stablehlo.bitcast_convert", [x], result_avals=[s])], result_avals=[s])
            return [ctx.op1("stablehlo.bitcast_convert", [r])]
        return [ctx.op1(op, [x])]
    prim = Primitive(name, rule)
    prim.def_lowering(lower)
    prim.def_batch(elementwise_rule(prim))
    return prim


population_count_p = _int_unary("population_count", "stablehlo.popcnt")
clz_p = _int_unary("clz", "stablehlo.count_leading_zeros")


def _unsigned(x: np.ndarray) -> np.ndarray:
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _popcount_host(x):
    return np.bitwise_count(_unsigned(np.asarray(x))).astype(x.dtype)


def _clz_host(x):
    """Leading zeros: the width less the bit length, frexp's exponent of the value as a float64 (exact up to 32 bits;
    a 64-bit value as its two halves). The halving loop it replaces took 20 NumPy passes (frexp of 4x4: 49 us)."""
    y = _unsigned(np.asarray(x))
    bits = 8 * y.dtype.itemsize
    if bits <= 32:
        return (bits - np.frexp(y.astype(np.float64))[1]).astype(x.dtype)
    hi, lo = (y >> np.uint64(32)).astype(np.uint32), (y & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    n = np.where(hi != 0, 32 - np.frexp(hi.astype(np.float64))[1], 64 - np.frexp(lo.astype(np.float64))[1])
    return n.astype(x.dtype)


population_count_p.def_host(_popcount_host, of_kinds("iu"))
clz_p.def_host(_clz_host, of_kinds("iu"))


def _bitcast_rule(x: ShapedArray, *, new_dtype) -> ShapedArray:
    new_dtype = np.dtype(new_dtype)
    if x.dtype == np.bool_ or new_dtype == np.bool_:
        raise TypeError("bitcast_convert_type does not accept booleans (as in JAX)")
    a, b = x.dtype.itemsize, new_dtype.itemsize
    if a == b:
        return ShapedArray(x.shape, new_dtype)
    if a > b:  # one element becomes a trailing axis of a / b
        return ShapedArray(x.shape + (a // b,), new_dtype)
    if not x.shape or x.shape[-1] != b // a:
        raise TypeError(f"bitcast_convert_type from {x.dtype} to {new_dtype}: the last axis of the operand must be "
                        f"{b // a} long (it is shape {x.shape})")
    return ShapedArray(x.shape[:-1], new_dtype)


bitcast_convert_type_p = Primitive("bitcast_convert_type", _bitcast_rule)
bitcast_convert_type_p.def_lowering(lambda ctx, x, *, new_dtype: [ctx.op1("stablehlo.bitcast_convert", [x])])
_ad.defzero(bitcast_convert_type_p)


def _bitcast_host(x, *, new_dtype):
    new_dtype = np.dtype(new_dtype)
    x = np.asarray(x, order="C")  # (not ascontiguousarray: it makes a 0-d value 1-d)
    a, b = x.dtype.itemsize, new_dtype.itemsize
    if a >= b:
        return x.reshape(x.shape + (1,)).view(new_dtype).reshape(x.shape + ((a // b,) if a > b else ()))
    return x.view(new_dtype).reshape(x.shape[:-1])


bitcast_convert_type_p.def_host(_bitcast_host, lambda avals, params: True)


@bitcast_convert_type_p.def_batch
def _bitcast_batch(args, dims, *, new_dtype):
    (x,), (d,) = args, dims
    return bitcast_convert_type_p.bind(at_front(x, d, axis_size(args, dims)), new_dtype=new_dtype), 0


# ---------------------------------------------------------------- strict wrappers (stagec.lax)


def _canonical(x):
    """A NumPy operand in its dtype for the x64 setting (an int64 array is int32 without x64): the counts and the
    bitcasts read the bits of that width, on the host too."""
    if isinstance(x, (np.ndarray, np.generic)) and _dt.canonicalize(x.dtype) != x.dtype:
        return np.asarray(x).astype(_dt.canonicalize(x.dtype))
    return x


def population_count(x):
    """The number of set bits of each element of an integer array (its dtype)."""
    return population_count_p.bind(_canonical(x))


def clz(x):
    """The number of leading zero bits of each element of an integer array (its dtype; the width for 0)."""
    return clz_p.bind(_canonical(x))


def bitcast_convert_type(operand, new_dtype):
    """`operand`'s bits read as `new_dtype` (as `jax.lax.bitcast_convert_type`): equal widths keep the shape; a
    narrower `new_dtype` adds a trailing axis (wider / narrower long, the low-order bytes first as on a
    little-endian host), a wider one consumes a trailing axis of that length."""
    return bitcast_convert_type_p.bind(_canonical(operand), new_dtype=_dt.canonicalize(new_dtype))
