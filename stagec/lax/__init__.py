"""`stagec.lax`: strict operations (equal shapes, explicit dtypes) and structured control flow, as `jax.lax`.

The elementwise, structural, reduction, indexing and contraction functions are the primitives' own strict
wrappers (`stagec.primitives`); this module adds the composites built from them and the control flow
(`stagec.lax.control_flow`).
"""
from __future__ import annotations

import builtins as _builtins
import enum as _enum

import numpy as np

from .. import dtypes as _dt
from ..core import Const, ShapedArray, aval_of, composite
from ..tree_util import tree_map
from ..primitives import elementwise as _ew
from ..primitives.bits import bitcast_convert_type, clz, population_count  # noqa: F401
from ..primitives.conv import (ConvDimensionNumbers, conv, conv_dimension_numbers, conv_general_dilated,  # noqa: F401
                               conv_general_permutations, conv_general_shape_tuple, conv_transpose,
                               conv_with_general_padding, padtype_to_pads)
from ..primitives.dot import Precision, dot, dot_general
from ..primitives.fft import fft
from ..primitives.elementwise import clamp, match_weak, reduce_precision, select
from ..primitives.elementwise import convert_element_type as _convert_element_type  # (stagec's own calls: a
# constant stays a host constant, `core.Const`, as JAX's internal `lax._convert_element_type`)
from ..primitives.elementwise import stop_gradient as _stop_gradient
from ..primitives.indexing import gather, scatter
from ..primitives.reductions import (argmax, argmin, cummax, cummin, cumprod, cumsum, reduce_and, reduce_max,
                                     reduce_min, reduce_or, reduce_prod, reduce_sum, reduce_xor, sort)
from ..primitives.windowed import reduce_window_max, reduce_window_min, reduce_window_sum  # noqa: F401
from ..primitives.structural import optimization_barrier_p as _optimization_barrier_p
from ..primitives import structural as _st
from ..primitives.structural import (broadcast, broadcast_in_dim, broadcasted_iota, concatenate, iota, pad, rev,
                                     slice, transpose)


def _scalars_broadcast(f):
    """`f` with rank-0 operands and size-1 dimensions broadcast, as JAX's lax allows (ranks must otherwise be
    equal: no rank promotion)."""
    def op(*xs):
        if len(xs) == 2:  # (first: its TypeError for a Python scalar the other dtype cannot hold is not a shape's)
            xs = _ew.match_weak(*xs)
        try:
            return f(*xs)  # (equal shapes, the usual case, pay nothing for the broadcasting)
        except TypeError:
            shapes = [aval_of(x).shape for x in xs]
            if len(set(shapes)) == 1 or len({len(s) for s in shapes if s}) != 1:
                raise
            try:
                shape = np.broadcast_shapes(*shapes)
            except ValueError:
                raise TypeError(f"{f.__name__} got incompatible shapes {shapes}") from None
        return f(*[x if s == shape else broadcast_in_dim(x, shape, tuple(range(len(s)))) for x, s in zip(xs, shapes)])
    op.__name__ = op.__qualname__ = f.__name__
    op.__doc__ = f.__doc__
    return op


# add, exp, sin, eq, ... (one per primitive)
globals().update({name: _scalars_broadcast(getattr(_ew, name)) if name in _ew._BINARY else getattr(_ew, name)
                  for name in _ew.WRAPPERS})
clamp = _scalars_broadcast(clamp)
add, sub, mul, div, neg, real, imag, complex = (  # used below; named for readers and linters
    globals()["add"], globals()["sub"], globals()["mul"], globals()["div"], _ew.neg, _ew.real, _ew.imag,
    globals()["complex"])


_UINT_OF_WIDTH = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _c99_pow(x, y):
    """C99/NumPy `pow` from `pow(|x|, y)`: IREE's CPU `pow` is exp(y log x), which gives NaN for negative bases
    (even with integer exponents), for 0**0, inf**0, 1**nan and 1**inf, and loses the sign of -0.0.
    Subnormals are told by their bits: IREE's CPU kernels read them as 0, NumPy's rules (eager) do not. A subnormal
    y is the smallest normal of its sign (pow(x, y) is the same: 1, or the value at +-0 and +-inf; inf**1e-40 was
    NaN eagerly, 1 under jit), and a subnormal x is nonzero, its sign read from the bits (-1e-40 ** 0.5 is NaN, as in
    NumPy and JAX). Tested as (|bits| - 1) < (smallest normal's bits - 1), unsigned: LLVM folded the plainer
    `|bits| != 0` into a float compare, which reads subnormals as 0."""
    dt = aval_of(x).dtype
    ut = _UINT_OF_WIDTH[dt.itemsize]
    mask = np.array(np.iinfo(ut).max >> 1, ut)
    sign, small = ~mask, np.array(_dt.finfo(dt).smallest_normal, dt).view(ut)

    def bits(v):  # (its bits, whether it is subnormal)
        b = bitcast_convert_type(v, ut)
        d = _ew.sub(_ew.bitwise_and(b, full_like(b, mask)), full_like(b, 1))
        return b, _ew.lt(d, full_like(b, small - 1))

    yb, y_sub = bits(y)
    y = _ew.select(y_sub, bitcast_convert_type(_ew.bitwise_or(_ew.bitwise_and(yb, full_like(yb, sign)),
                                                              full_like(yb, small)), dt), y)
    xb, x_sub = bits(x)
    x_nonzero = _ew.bitwise_or(_ew.ne(x, full_like(x, 0)), x_sub)
    neg = _ew.bitwise_and(_ew.ge(xb, full_like(xb, sign)), _ew.eq(x, x))  # (the sign bit; not NaN's)
    zero, one = full_like(x, 0), full_like(x, 1)
    y_finite = _ew.is_finite(y)
    # C99's exact ones; where IREE's pow is NaN there (0**0, inf**0, (+-1)**inf, 1**nan) it computes 1**0 instead,
    # so that no NaN reaches the derivative. Elsewhere (10**0, 1**y) pow gives 1 and its derivative (log 10, y).
    unit = _ew.bitwise_or(_ew.eq(y, zero), _ew.eq(x, one))
    unit = _ew.bitwise_or(unit, _ew.bitwise_and(_ew.eq(_ew.abs(x), one), _ew.bitwise_not(y_finite)))
    unit = _ew.bitwise_and(unit, _ew.bitwise_not(_ew.bitwise_and(_ew.ne(y, y), _ew.ne(x, one))))
    unit = _ew.bitwise_or(unit, _ew.bitwise_and(_ew.bitwise_and(y_sub, x_sub), _ew.bitwise_not(neg)))  # (1e-40**1e-40)
    ordinary = _ew.bitwise_and(_ew.bitwise_and(_ew.is_finite(x), x_nonzero), y_finite)
    const = _ew.bitwise_and(unit, _ew.bitwise_not(ordinary))
    is_int = _ew.bitwise_and(_ew.eq(_ew.floor(y), y), y_finite)
    odd = _ew.bitwise_and(is_int, _ew.ne(_ew.rem(y, full_like(y, 2)), zero))
    # |x| as -x where x < 0, and at -0 for odd y (the sign flip below then keeps d/dx x**1 = 1); other powers of -0
    # stay pow(-0, y), whose derivative is that of +0 (d/dx x**0.5 at -0 is +inf, as in JAX).
    flip = _ew.bitwise_and(neg, _ew.bitwise_or(x_nonzero, odd))
    mag = _ew.pow(_ew.select(const, one, _ew.select(flip, _ew.neg(x), x)), _ew.select(const, zero, y))
    out = _ew.select(_ew.bitwise_and(neg, odd), _ew.neg(mag), mag)
    bad = _ew.bitwise_and(_ew.bitwise_and(neg, _ew.bitwise_not(is_int)),
                          _ew.bitwise_and(_ew.bitwise_and(y_finite, _ew.is_finite(x)), x_nonzero))
    # times NaN there (times 1 elsewhere), not a selected constant NaN: the derivative of a NaN value is NaN too
    out = _ew.mul(out, _ew.select(bad, full_like(x, np.nan), one))
    return _ew.select(_ew.bitwise_and(unit, _ew.ne(out, one)), one, out)


def pow(x, y):
    """`x ** y` elementwise, as C99's `pow` (JAX's): a negative base to an integer power, 0**0 = 1, -0.0 kept; the
    primitive alone is exp(y log x) on IREE (NaN for every negative base). An integer `y` with an inexact `x` is
    converted to x's dtype first, as JAX's lowering does."""
    ax, ay = aval_of(x), aval_of(y)
    if _dt.kind(ax.dtype) in "fc" and _dt.kind(ay.dtype) in "iu" and not ay.weak_type:
        y = _convert_element_type(y, ax.dtype)
    if _plain_base(x, y):  # (before broadcasting: a broadcast base is a traced value)
        return _broadcast_pow(x, y)
    if _squares(x, y):
        return mul(x, x)
    return _pow(x, y)


_broadcast_pow = _scalars_broadcast(_ew.pow)


@_scalars_broadcast
def _pow(x, y):
    x, y = match_weak(x, y)
    if _dt.kind(aval_of(x).dtype) == "f" and aval_of(x).dtype == aval_of(y).dtype:  # (bfloat16's NumPy kind is 'V')
        return _c99_pow_graph(x, y)
    return _ew.pow(x, y)


def _ordinary_powers(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether every element of these host values is an ordinary power: `x` positive, finite and not 1, `y` finite
    and not 0, as NumPy compares them (`log(x) * y` finite and nonzero; an overflow or underflow there only says
    no). There `_c99_pow`'s special cases, each step by its NumPy rule, select nothing and multiply by 1: the graph
    gives the `pow` primitive's bits on the operands as they are."""
    if x.dtype != y.dtype or x.dtype not in (np.float32, np.float64):
        return False
    t = np.multiply(np.log(x), y)
    return _ew._count_nonzero(np.isfinite(t)) == t.size and _ew._count_nonzero(t) == t.size


def _c99_pow_graph(x, y):
    """`_c99_pow` of float operands of one dtype and shape; eager, one composite (not its ~80 primitives op by op),
    and where `_ordinary_powers` holds the `pow` primitive alone, on the operands where they are."""
    return _c99_pow(x, y)


_c99_pow_graph.eager_case = (_ordinary_powers, lambda x, y: _ew.pow(x, y))
_c99_pow_graph = composite(_c99_pow_graph)


def _known(x) -> np.ndarray | None:
    """`x`'s value where it is known while tracing (a number, a NumPy array, a `Const`; not a bool), else None."""
    v = x.value if isinstance(x, Const) else x
    if isinstance(v, bool) or not isinstance(v, (int, float, np.ndarray, np.generic)):
        return None
    return np.asarray(v)


def _squares(x, y) -> bool:
    """Whether `x ** y` is `x * x`: float `x`, `y` a known scalar 2 (weak or of `x`'s dtype). C99's pow(x, 2) is x^2
    rounded once, as the product (NaN, infinities and -0 alike), and its derivative 2 x; XLA rewrites it so too. (The
    pow primitive's expansion and C99's selects were in a VAE's loss for `mu ** 2.`.)"""
    v = _known(y)
    return (v is not None and v.ndim == 0 and v == 2 and _dt.kind(aval_of(x).dtype) == "f"
            and (aval_of(y).weak_type or aval_of(y).dtype == aval_of(x).dtype))


def _plain_base(x, y) -> bool:
    """Whether `x` is known while tracing and each of its elements, in `y`'s dtype, is positive, finite and not 1.
    There C99's pow is the primitive's exp(y log x) for every y (1 at +-0, 0 or inf at +-inf, NaN at NaN), and
    `_c99_pow`'s selects pick nothing: `2.0 ** t`, Adam's `b1 ** count` (26 of them in JAX's training cookbook's step:
    its compile 8.7 -> 7.6 s without them)."""
    v = _known(x)
    if v is None or v.dtype.kind not in "iuf" or _dt.kind(aval_of(y).dtype) != "f" or \
            not (aval_of(x).weak_type or aval_of(x).dtype == aval_of(y).dtype):
        return False
    with np.errstate(over="ignore"):  # (1e300 in float32: inf, not plain)
        v = v.astype(aval_of(y).dtype).astype(np.float64)
    return bool(np.all((v > 0) & (v < np.inf) & (v != 1)))


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
        return _as_array(full_like(x, 1))  # (a constant of x's aval: `Const` for a scalar, not an array)
    if y < 0:
        if _dt.kind(aval_of(x).dtype) in "biu":
            raise TypeError(f"Integers cannot be raised to negative powers, got integer_pow({aval_of(x).str_short()}, "
                            f"{y}) (as in JAX; 1 // x**{-y} was answered)")
        return div(full_like(x, 1), integer_pow(x, -y))
    return _as_array(power_by_squaring(x, y))  # (y = 1: x itself, which may be a NumPy value)


def _as_array(out):
    """`out` as an array or tracer: a NumPy or Python value, or a host `Const`, through the conversion primitive."""
    if hasattr(out, "_trace") or hasattr(out, "_bv"):  # (a tracer or an Array)
        return out
    return _ew.convert_element_type_p.bind(out, new_dtype=aval_of(out).dtype, weak_type=aval_of(out).weak_type)


def convert_element_type(operand, new_dtype):
    """`operand` cast to `new_dtype` (canonicalized for the x64 setting), as JAX's: an array (or a tracer) in any
    case; a NumPy or Python value too converts as the compiled conversion does (float to integer saturated, NaN
    to 0). Complex to bool takes the real part, as JAX's lax (NumPy's `astype`, and stagec.numpy's, test x != 0)."""
    if _dt.kind(aval_of(operand).dtype) == "c" and _dt.canonicalize(new_dtype) == np.bool_:
        operand = _ew.real(operand)
    out = _convert_element_type(operand, new_dtype)
    if hasattr(out, "_trace") or hasattr(out, "_bv"):  # (a tracer or an Array)
        return out
    return _ew.convert_element_type_p.bind(out, new_dtype=aval_of(out).dtype, weak_type=False)


class RoundingMethod(_enum.IntEnum):
    """`round`'s tie rule, as `jax.lax.RoundingMethod`."""
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
    """`x` rounded to an integral value, ties away from zero (JAX's default) or, with `TO_NEAREST_EVEN`, to even.
    (This was the round primitive alone, to nearest even: `round(2.5)` was 2.0, JAX's 3.0.)"""
    method = RoundingMethod(rounding_method)
    return (_ew.round if method == RoundingMethod.TO_NEAREST_EVEN else _ew.round_afz)(x)


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    """An array of `x`'s shape and dtype (or `shape`, `dtype`) filled with `fill_value`."""
    aval = aval_of(x)
    if sharding is not None:
        raise NotImplementedError("full_like: stagec runs on one device and takes no sharding")
    dt = aval.dtype if dtype is None else _dt.canonicalize(dtype)
    weak = aval.weak_type if dtype is None else False
    shape = aval.shape if shape is None else tuple(int(d) for d in shape)
    # (0-d: the host constant itself, which stagec's passes read as a literal; a 0-d full_like called eagerly is
    # that Const, not an Array)
    return broadcast_in_dim(Const(np.array(fill_value, dtype=dt), ShapedArray((), dt, weak)), shape, ())


def reshape(operand, new_sizes, dimensions=None, sharding=None):
    """`operand` (transposed by `dimensions` first, if given) in the shape `new_sizes`."""
    if sharding is not None:
        raise NotImplementedError("reshape: stagec runs on one device and takes no sharding")
    if dimensions is not None:
        operand = transpose(operand, tuple(dimensions))
    return _st.reshape(operand, new_sizes)


def stop_gradient(x):
    """`x` (a pytree) with zero derivative: differentiation treats its leaves as constants."""
    return tree_map(_stop_gradient, x)


def conj(x):
    """The complex conjugate (re - i*im); of a float32 or float64 array, that array as complex, as JAX's (it raised
    "real does not accept dtype float32")."""
    dt = aval_of(x).dtype
    if _dt.kind(dt) == "f" and dt.itemsize in (4, 8):
        return complex(x, full_like(x, 0))
    if _dt.kind(dt) != "c":
        raise TypeError(f"conj does not accept dtype {dt} (it needs float32, float64 or a complex dtype)")
    return complex(real(x), neg(imag(x)))


def _axis(x, axis: int) -> int:
    nd = aval_of(x).ndim
    if not -nd <= axis < nd:
        raise ValueError(f"axis {axis} is out of bounds for an array of rank {nd}")
    return axis % nd


def slice_in_dim(operand, start_index, limit_index, stride: int = 1, axis: int = 0):
    """`operand[start:limit:stride]` along `axis` (static bounds; None means the start or end, a negative one
    counts from the end once, as JAX's; out of bounds after that is an error, not clipped as Python's)."""
    return _st.slice_in_dim(operand, start_index, limit_index, stride, _axis(operand, axis))


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """`operand[index]` along `axis` (a static index; negatives count from the end)."""
    axis = _axis(operand, axis)
    n = aval_of(operand).shape[axis]
    if not -n <= index < n:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {n}")
    index %= n
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    return out if keepdims else reshape(out, [d for i, d in enumerate(aval_of(out).shape) if i != axis])


def _from_end(starts, shape) -> list:
    """A negative start counts from the end (once), as in JAX's wrappers; XLA's op then clamps into bounds."""
    out = []
    for i, d in zip(starts, shape):
        if isinstance(i, (int, np.integer)):  # (kept in int32's range: the op clamps it into bounds anyway)
            out.append(_builtins.min(_builtins.max(int(i) + d if i < 0 else int(i), -2 ** 31), 2 ** 31 - 1))
        elif np.issubdtype(aval_of(i).dtype, np.signedinteger):
            if d > np.iinfo(aval_of(i).dtype).max:  # (an int8 -100 into 300: 200, which int8 does not hold)
                i = _convert_element_type(i, np.int32 if d <= np.iinfo(np.int32).max else np.int64)
            out.append(select(_ew.lt(i, full_like(i, 0)), add(i, full_like(i, d)), i))
        else:
            out.append(i)
    return out


def dynamic_slice(operand, start_indices, slice_sizes):
    """Slice of size `slice_sizes` at traced `start_indices` (negative ones from the end; clamped into bounds)."""
    return _st.dynamic_slice(operand, _from_end(start_indices, aval_of(operand).shape), slice_sizes)


def dynamic_update_slice(operand, update, start_indices):
    """`operand` with `update` written at traced `start_indices` (negative ones from the end; clamped into
    bounds)."""
    return _st.dynamic_update_slice(operand, update, _from_end(start_indices, aval_of(operand).shape))


def _starts_at(operand, axis: int, index) -> list:
    zero = np.zeros((), np.int32)
    return [index if i == axis else zero for i in range(aval_of(operand).ndim)]


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0):
    """`slice_size` elements from a traced `start_index` along `axis` (the start clamps to stay in bounds)."""
    axis = _axis(operand, axis)
    sizes = list(aval_of(operand).shape)
    sizes[axis] = int(slice_size)
    return dynamic_slice(operand, _starts_at(operand, axis, start_index), sizes)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True):
    """`operand[index]` along `axis` for a traced `index` (clamped into bounds)."""
    axis = _axis(operand, axis)
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else reshape(out, [d for i, d in enumerate(aval_of(out).shape) if i != axis])


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int):
    """`operand` with `update` written from a traced `start_index` along `axis` (clamped to stay in bounds)."""
    axis = _axis(operand, axis)
    return dynamic_update_slice(operand, update, _starts_at(operand, axis, start_index))


def dynamic_update_index_in_dim(operand, update, index, axis: int):
    """`operand` with `update` (of rank one less, or with a size-1 `axis`) written at a traced `index`."""
    axis = _axis(operand, axis)
    if aval_of(update).ndim == aval_of(operand).ndim - 1:
        shape = list(aval_of(update).shape)
        shape.insert(axis, 1)
        update = reshape(update, shape)
    return dynamic_update_slice_in_dim(operand, update, index, axis)


_WINDOW_OPS = {"add": ("sum", reduce_window_sum), "max": ("max", reduce_window_max), "min": ("min", reduce_window_min)}


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None, padding="VALID",
                  base_dilation=None, window_dilation=None):
    """Reduce each window with `computation` (JAX's `lax.reduce_window`): `lax.add`, `lax.max`, `lax.min` or any
    function that traces to one of them; `init_value` enters each window once."""
    from ..core import ShapedArray, trace_subgraph
    av = aval_of(operand)
    s = ShapedArray((), av.dtype)
    graph, captured, _ = trace_subgraph(computation, [s, s], "reduce_window")
    names = [e.prim.name for e in graph.eqns]
    ops = [n for n in names if n in _WINDOW_OPS]
    if len(ops) != 1 or captured or any(n not in _WINDOW_OPS and n != "convert_element_type" for n in names):
        raise NotImplementedError(f"reduce_window of a computation made of {names}: stagec reduces windows with "
                                  f"add, max or min (lax.add, lax.max, lax.min); build others from those")
    op, fn = _WINDOW_OPS[ops[0]]
    if window_strides is None:  # (JAX's defaults: unit strides, 'VALID')
        window_strides = (1,) * av.ndim
    out = fn(operand, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    try:
        init = np.asarray(init_value)
    except Exception:
        init = None
    if init is not None and init.shape == () and init.dtype != object and init == _dt.identity(op, av.dtype):
        return out
    # init_value once per window, padding and base dilation's holes not counted: XLA's (so JAX's) reduce_window
    # (reduce_window([1, 1, 1], 5, add, (2,), (1,), [(1, 1)]) is [6, 7, 7, 6])
    init = _convert_element_type(init_value, av.dtype)
    full = broadcast_in_dim(init, aval_of(out).shape, ())
    return {"sum": add, "max": _ew.max, "min": _ew.min}[op](out, full)


def _reduce_window_shape(operand_shape, window_dimensions, window_strides, padding, base_dilation=None,
                         window_dilation=None) -> tuple:
    from ..core import ShapedArray
    from ..primitives.windowed import _canon, reduce_window_p
    x = ShapedArray(operand_shape, np.float32)
    return reduce_window_p.abstract_eval(x, op="sum", **_canon(x, window_dimensions, window_strides, padding,
                                                              base_dilation, window_dilation)).shape


reduce_window_shape_tuple = _reduce_window_shape


from .control_flow import cond, fori_loop, map, scan, switch, while_loop  # noqa: E402  (uses the functions above)
from ._extra import associative_scan, cumlogsumexp, nextafter, split  # noqa: E402,F401
nextafter = _scalars_broadcast(nextafter)  # (as jax.lax.nextafter: (3, 1) with (1, 5), or with a scalar)


def expand_dims(array, dimensions):
    """`array` with size-1 axes inserted at `dimensions` (positions in the result)."""
    shape = list(aval_of(array).shape)
    nd = len(shape) + len(dimensions)
    if len({d % nd for d in dimensions}) != len(dimensions) or any(not -nd <= d < nd for d in dimensions):
        raise ValueError(f"expand_dims: dimensions {tuple(dimensions)} repeat or fall outside rank {nd}")
    for d in sorted(d % nd for d in dimensions):
        shape.insert(d, 1)
    return reshape(array, shape)


def squeeze(array, dimensions):
    """`array` without the size-1 axes `dimensions`."""
    shape = aval_of(array).shape
    if any(not -len(shape) <= d < len(shape) for d in dimensions):  # (taken modulo the rank: 3 of rank 3 was 0)
        raise ValueError(f"squeeze: dimensions {tuple(dimensions)} out of bounds for rank {len(shape)}")
    dims = {d % len(shape) for d in dimensions}
    if len(dims) != len(dimensions):
        raise ValueError(f"squeeze: dimensions {tuple(dimensions)} are not unique")
    if any(shape[d] != 1 for d in dims):
        raise ValueError(f"squeeze: dimensions {tuple(dimensions)} of shape {shape} are not all of size 1")
    return reshape(array, [s for i, s in enumerate(shape) if i not in dims])


def full(shape, fill_value, dtype=None):
    dt = _dt.canonicalize(dtype) if dtype is not None else aval_of(fill_value).dtype
    return broadcast_in_dim(_convert_element_type(fill_value, dt), tuple(shape), ())


def square(x):
    return mul(x, x)


def reciprocal(x):
    """1 / x; integers raise a TypeError, as JAX's (integer division gave 1 // 2 = 0)."""
    dt = aval_of(x).dtype
    if _dt.kind(dt) in "biu":
        raise TypeError(f"lax.reciprocal: integers have no reciprocal (got {dt}); convert x to a float first")
    return div(full_like(x, 1), x)


def exp2(x):
    """2^x: the `exp2` primitive (`stablehlo.power` of 2: within an ulp); of a complex x, `pow(2, x)`."""
    if _dt.kind(aval_of(x).dtype) == "c":
        return _ew.pow(full_like(x, 2), x)
    return _ew.exp2(x)


def batch_matmul(lhs, rhs, precision=None):
    """Matrix products over the leading batch axes of two arrays of equal rank >= 2."""
    nd = aval_of(lhs).ndim
    batch = tuple(range(nd - 2))
    return dot_general(lhs, rhs, (((nd - 1,), (nd - 2,)), (batch, batch)), precision)


def select_n(which, *cases):
    """cases[which] elementwise (`which` boolean for two cases, else an integer in [0, len(cases)))."""
    if _dt.kind(aval_of(which).dtype) not in "biu":  # (a float `which` was compared with 0, 1, ...)
        raise TypeError(f"select_n: `which` must be boolean or integer, got {aval_of(which).dtype}")
    if len(cases) == 1:
        return cases[0]
    if aval_of(which).dtype == np.bool_:
        if len(cases) != 2:
            raise ValueError("select_n with a boolean predicate takes exactly two cases")
        return select(which, cases[1], cases[0])
    out = cases[-1]
    for i in range(len(cases) - 2, -1, -1):
        out = select(_ew.eq(which, full_like(which, i)), cases[i], out)
    return out


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """`values` sorted by `keys` along `dimension`: (sorted keys, values in that order)."""
    return sort((keys, values), dimension, is_stable, num_keys=1)


@composite  # (eager: one plan of its ~12 primitives, the bits op by op gives; 199 -> 40-58 us on 4x4)
def top_k(operand, k: int):
    """The `k` largest entries along the last axis, and their indices (ties: the lower index first). Floats
    in JAX's total order: -NaN < -inf < ... < -0.0 < 0.0 < ... < inf < NaN (by sign bit)."""
    av = aval_of(operand)
    nd = av.ndim
    if nd == 0 or not 0 <= int(k) <= av.shape[-1]:  # (slicing took k > n as n, and k = -1 as n - 1)
        raise ValueError(f"top_k: k={k} for an operand of shape {av.shape} (it needs 0 <= k <= the last axis)")
    idx = broadcasted_iota(np.int32, av.shape, nd - 1)
    # ascending keys for descending values: ~x for integers and booleans (no overflow at INT_MIN); floats as
    # their bits in a signed integer, the magnitude bits flipped where the sign is set (the total order: ties
    # only of equal bits); the index as the last key keeps ties in order on any sort
    key = operand
    if _dt.kind(av.dtype) == "f":
        it = np.dtype(f"i{av.dtype.itemsize}")
        bits = bitcast_convert_type(operand, it)
        sign = _ew.shift_right_arithmetic(bits, full_like(bits, 8 * it.itemsize - 1))
        key = _ew.bitwise_xor(bits, _ew.bitwise_and(sign, full_like(bits, np.iinfo(it).max)))
    elif _dt.kind(av.dtype) not in "biu":
        raise TypeError(f"top_k does not accept dtype {av.dtype} (it needs a boolean, integer or floating dtype)")
    if 0 in av.shape[:-1] + (int(k),):  # (nothing to gather: its slice of 1 did not fit an empty axis)
        return slice_in_dim(operand, 0, int(k), axis=nd - 1), slice_in_dim(idx, 0, int(k), axis=nd - 1)
    order = sort((_ew.bitwise_not(key), idx), nd - 1, True, num_keys=2)[-1]
    order = slice_in_dim(order, 0, int(k), axis=nd - 1)
    return _take_last(operand, order), order


def _take_last(x, idx):
    """x[..., idx] along the last axis for an index array of x's leading shape plus k."""
    av, ia = aval_of(x), aval_of(idx)
    nd = av.ndim
    cols = [idx if d == nd - 1 else broadcasted_iota(np.int32, ia.shape, d) for d in range(nd)]
    full_idx = concatenate([reshape(c, ia.shape + (1,)) for c in cols], nd)
    return gather(x, full_idx, offset_dims=(), collapsed_slice_dims=tuple(range(nd)), start_index_map=tuple(range(nd)),
                  slice_sizes=(1,) * nd)


def optimization_barrier(operand):
    """`operand` (a pytree) unchanged, as a value IREE neither moves computation across nor evaluates at compile
    time (`stablehlo.optimization_barrier` per leaf)."""
    return tree_map(lambda x: _optimization_barrier_p.bind(x), operand)


def broadcast_to_rank(x, rank: int):
    nd = aval_of(x).ndim
    return reshape(x, (1,) * (rank - nd) + aval_of(x).shape) if nd < rank else x


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    shape = aval_of(operand).shape
    stop = len(shape) if stop_dimension is None else stop_dimension
    return reshape(operand, shape[:start_dimension] + (int(np.prod(shape[start_dimension:stop])),) + shape[stop:])


def broadcast_shapes(*shapes) -> tuple:
    return tuple(np.broadcast_shapes(*shapes))


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                                 dimension_numbers=None, precision=None, preferred_element_type=None):
    """The patches a convolution with a `filter_shape` window sees, as features (channel-major, as JAX's): a
    convolution with an identity kernel."""
    la = aval_of(lhs)
    filter_shape = tuple(int(d) for d in filter_shape)
    dn = conv_dimension_numbers(la.shape, (1, 1) + filter_shape, dimension_numbers)
    c, k = la.shape[dn.lhs_spec[1]], int(np.prod(filter_shape))
    # Each window position goes to its own output channel: an identity kernel per input channel (JAX's layout).
    kernel = np.broadcast_to(np.eye(k, dtype=la.dtype), (c, k, k)).reshape((c * k, 1) + filter_shape)
    oihw = tuple(range(la.ndim))
    return conv_general_dilated(lhs, kernel, window_strides, padding, lhs_dilation, rhs_dilation,
                                ConvDimensionNumbers(dn.lhs_spec, oihw, dn.out_spec), c, 1, precision,
                                preferred_element_type)


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count: int = 1) -> tuple:
    return conv_general_shape_tuple(lhs_shape, rhs_shape, strides, pads, None)


from .._missing import ONE_DEVICE as _ONE_DEVICE, PRIMITIVE as _PRIMITIVE, missing as _missing, table as _table  # noqa: E402,I001

__getattr__ = _missing(__name__, {
    **_table("abs_p acos_p acosh_p add_p after_all_p all_gather_p all_to_all_p and_p approx_top_k_p argmax_p argmin_p "
             "asin_p asinh_p atan2_p atan_p atanh_p axis_index_p bessel_i0e_p bessel_i1e_p bitcast_convert_type_p "
             "broadcast_in_dim_p cbrt_p ceil_p clamp_p clz_p complex_p concatenate_p cond_p conj_p "
             "conv_general_dilated_p convert_element_type_p copy_p cos_p cosh_p create_token_p cumlogsumexp_p "
             "cummax_p cummin_p cumprod_p cumsum_p dce_sink_p device_put_p digamma_p div_p dot_general_p "
             "dynamic_slice_p dynamic_update_slice_p eq_p eq_to_p erf_inv_p erf_p erfc_p exp2_p exp_p expm1_p fft_p "
             "floor_p gather_p ge_p gt_p igamma_grad_a_p igamma_p igammac_p imag_p integer_pow_p iota_p is_finite_p "
             "le_p le_to_p lgamma_p linear_solve_p log1p_p log_p logistic_p lt_p lt_to_p max_p min_p mul_p mulhi_p "
             "ne_p neg_p nextafter_p not_p optimization_barrier_p or_p pad_p pmax_p pmin_p polygamma_p "
             "population_count_p pow_p ppermute_p psum_p ragged_all_to_all_p real_p reduce_and_p reduce_max_p "
             "reduce_min_p reduce_or_p reduce_p reduce_precision_p reduce_prod_p reduce_sum_p reduce_window_max_p "
             "reduce_window_min_p reduce_window_p reduce_window_sum_p reduce_xor_p regularized_incomplete_beta_p "
             "rem_p reshape_p rev_p rng_bit_generator_p rng_uniform_p round_p rsqrt_p scan_p scatter_add_p "
             "scatter_max_p scatter_min_p scatter_mul_p scatter_p scatter_sub_p select_and_gather_add_p "
             "select_and_scatter_add_p select_and_scatter_p select_n_p sharding_constraint_p shift_left_p "
             "shift_right_arithmetic_p shift_right_logical_p sign_p sin_p sinh_p slice_p sort_p split_p sqrt_p "
             "square_p squeeze_p stack_p stage_p stop_gradient_p sub_p tan_p tanh_p tile_p top_k_p transpose_p "
             "unstack_p while_p xor_p zeta_p log2_p one_minus_square_p", _PRIMITIVE),
    **_table("all_gather all_to_all axis_index axis_size pbroadcast pcast pmax pmean pmin ppermute precv psend "
             "pshuffle psum psum_scatter pswapaxes ragged_all_to_all with_sharding_constraint", _ONE_DEVICE),
    **_table("igamma igammac igamma_grad_a polygamma zeta betainc bessel_i0e bessel_i1e random_gamma_grad",
             "not implemented (stagec.lax has lgamma, digamma, erf, erfc and erf_inv)"),
    **_table("AccuracyMode DotAlgorithm DotAlgorithmPreset RaggedDotDimensionNumbers RandomAlgorithm "
             "Tolerance PrecisionLike ConvGeneralDilatedDimensionNumbers DotDimensionNumbers FftType "
             "GatherDimensionNumbers GatherScatterMode ScatterDimensionNumbers",
             "stagec's lax takes plain tuples and keywords here (see the function's docstring)"),
    **_table("gather_p", _PRIMITIVE),
    **_table("after_all create_token approx_max_k approx_min_k broadcast_like "
             "composite conv_general_dilated_local conv_transpose_shape_tuple custom_linear_solve "
             "custom_root dce_sink dtype empty index_take linalg mulhi platform_dependent "
             "ragged_dot ragged_dot_general reduce rng_bit_generator "
             "rng_uniform scaled_dot scatter_add scatter_apply scatter_max scatter_min scatter_mul scatter_sub "
             "shape_as_value stack stage tile unstack", "not implemented yet (a JAX name stagec lacks)"),
    **_table("log2 one_minus_square", "not implemented yet (new in JAX 0.11; stagec.numpy.log2, and (1 - x) * (1 + x))"),
})
