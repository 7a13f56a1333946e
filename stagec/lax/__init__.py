"""`stagec.lax`: strict operations (equal shapes, explicit dtypes) and structured control flow, as `jax.lax`.

The elementwise, structural, reduction, indexing and contraction functions are the primitives' own strict
wrappers (`stagec.primitives`); this module adds the composites built from them and the control flow
(`stagec.lax.control_flow`).
"""
from __future__ import annotations

import builtins as _builtins

import numpy as np

from ..core import Const, aval_of
from ..tree_util import tree_map
from ..primitives import elementwise as _ew
from ..primitives.conv import (ConvDimensionNumbers, conv, conv_dimension_numbers, conv_general_dilated,  # noqa: F401
                               conv_general_permutations, conv_general_shape_tuple, conv_transpose,
                               conv_with_general_padding, padtype_to_pads)
from ..primitives.dot import Precision, dot, dot_general
from ..primitives.fft import fft
from ..primitives.elementwise import clamp, convert_element_type, select
from ..primitives.elementwise import stop_gradient as _stop_gradient
from ..primitives.indexing import gather, scatter
from ..primitives.reductions import (argmax, argmin, cummax, cummin, cumprod, cumsum, reduce_and, reduce_max,
                                     reduce_min, reduce_or, reduce_prod, reduce_sum, sort)
from ..primitives.windowed import reduce_window_max, reduce_window_min, reduce_window_sum  # noqa: F401
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


def _axis(x, axis: int) -> int:
    nd = aval_of(x).ndim
    if not -nd <= axis < nd:
        raise ValueError(f"axis {axis} is out of bounds for an array of rank {nd}")
    return axis % nd


def slice_in_dim(operand, start_index, limit_index, stride: int = 1, axis: int = 0):
    """`operand[start:limit:stride]` along `axis` (static bounds; None means the end, negatives count from it)."""
    axis = _axis(operand, axis)
    shape = aval_of(operand).shape
    start, limit, _ = _builtins.slice(start_index, limit_index).indices(shape[axis])
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, max(limit, start), int(stride)
    return slice(operand, starts, limits, strides)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """`operand[index]` along `axis` (a static index; negatives count from the end)."""
    axis = _axis(operand, axis)
    n = aval_of(operand).shape[axis]
    if not -n <= index < n:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {n}")
    index %= n
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    return out if keepdims else reshape(out, [d for i, d in enumerate(aval_of(out).shape) if i != axis])


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


def reduce_window(operand, init_value, computation, window_dimensions, window_strides, padding, base_dilation=None,
                  window_dilation=None):
    """Reduce each window with `computation` (JAX's `lax.reduce_window`): `lax.add`, `lax.max`, `lax.min` or any
    function that traces to one of them; `init_value` also fills the padding."""
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
    out = fn(operand, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    try:
        init = np.asarray(init_value)
    except Exception:
        init = None
    from .. import dtypes as _dt
    if init is not None and init.shape == () and init.dtype != object and init == _dt.identity(op, av.dtype):
        return out
    padded = padding if isinstance(padding, str) else any(lo or hi for lo, hi in padding)
    if op == "sum" and padded:
        raise NotImplementedError("reduce_window with lax.add, padding and an init_value other than 0: the padding "
                                  "counts init_value once per padded element; add it yourself with padding of zeros")
    init = convert_element_type(init_value, av.dtype)
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
