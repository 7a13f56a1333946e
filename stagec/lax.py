"""`stagec.lax`: thin, strict wrappers over primitives (equal shapes, explicit dtypes), as `jax.lax`."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from . import dtypes
from . import primitives as P
from .core import Const, aval_of, to_numpy_constant


def _match_weak(x, y):
    """Let a weakly typed operand take the other's dtype (lax's only implicit conversion)."""
    ax, ay = aval_of(x), aval_of(y)
    if ax.dtype == ay.dtype:
        return x, y
    if ax.weak_type and not ay.weak_type:
        return convert_element_type(x, ay.dtype, weak_type=False), y
    if ay.weak_type and not ax.weak_type:
        return x, convert_element_type(y, ax.dtype, weak_type=False)
    return x, y


def _binary(name):
    prim = P.BINARY.get(name) or P.COMPARE[name]

    def op(x, y):
        return prim.bind(*_match_weak(x, y))
    op.__name__ = name
    op.__doc__ = f"Elementwise `{name}` of two arrays of equal shape and dtype."
    return op


def _unary(name):
    prim = P.UNARY[name]

    def op(x):
        return prim.bind(x)
    op.__name__ = name
    op.__doc__ = f"Elementwise `{name}`."
    return op


add, sub, mul, div, rem, pow, max, min = (_binary(n) for n in ("add", "sub", "mul", "div", "rem", "pow", "max", "min"))
bitwise_and, bitwise_or, bitwise_xor = _binary("and"), _binary("or"), _binary("xor")
atan2, shift_left = _binary("atan2"), _binary("shift_left")
shift_right_arithmetic, shift_right_logical = _binary("shift_right_arithmetic"), _binary("shift_right_logical")
eq, ne, lt, le, gt, ge = (_binary(n) for n in ("eq", "ne", "lt", "le", "gt", "ge"))
neg, sign, abs, floor, ceil, round = (_unary(n) for n in ("neg", "sign", "abs", "floor", "ceil", "round"))
exp, expm1, log, log1p, tanh, logistic = (_unary(n) for n in ("exp", "expm1", "log", "log1p", "tanh", "logistic"))
sin, cos, tan, sqrt, rsqrt, cbrt = (_unary(n) for n in ("sin", "cos", "tan", "sqrt", "rsqrt", "cbrt"))
bitwise_not, is_finite = _unary("not"), _unary("is_finite")


def select(pred, on_true, on_false):
    """`on_true` where `pred` else `on_false` (pred is boolean, scalar or of the operands' shape)."""
    return P.select.bind(pred, *_match_weak(on_true, on_false))


def convert_element_type(x, new_dtype, weak_type: bool = False):
    """Cast `x` to `new_dtype` (canonicalized for the x64 setting)."""
    new_dtype = dtypes.canonicalize(new_dtype)
    aval = aval_of(x)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        return x
    if not hasattr(x, "_trace") and not hasattr(x, "_bv"):  # a constant: convert on the host
        return Const(to_numpy_constant(x, aval).astype(new_dtype), aval.update(dtype=new_dtype, weak_type=weak_type))
    return P.convert_element_type.bind(x, new_dtype=new_dtype, weak_type=bool(weak_type))


def broadcast_in_dim(x, shape: Sequence[int], broadcast_dimensions: Sequence[int]):
    shape, dims = tuple(int(d) for d in shape), tuple(int(d) for d in broadcast_dimensions)
    if aval_of(x).shape == shape and dims == tuple(range(len(shape))):
        return x
    return P.broadcast_in_dim.bind(x, shape=shape, broadcast_dimensions=dims)


def broadcast(x, sizes: Sequence[int]):
    """Prepend dimensions `sizes` to `x`."""
    nd = aval_of(x).ndim
    return broadcast_in_dim(x, tuple(sizes) + aval_of(x).shape, tuple(range(len(sizes), len(sizes) + nd)))


def reshape(x, new_sizes: Sequence[int]):
    new_sizes = tuple(int(d) for d in new_sizes)
    if aval_of(x).shape == new_sizes:
        return x
    return P.reshape.bind(x, new_sizes=new_sizes)


def transpose(x, permutation: Sequence[int]):
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))):
        return x
    return P.transpose.bind(x, permutation=permutation)


def _reducer(name):
    prim = P.REDUCE[name]

    def op(x, axes: Sequence[int]):
        return prim.bind(x, axes=tuple(int(a) for a in axes))
    op.__name__ = name
    return op


reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and, reduce_or = (
    _reducer(n) for n in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or"))


def dot_general(lhs, rhs, dimension_numbers, preferred_element_type=None):
    """Contract `lhs` and `rhs`: dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))."""
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    pet = None if preferred_element_type is None else dtypes.canonicalize(preferred_element_type)
    return P.dot_general.bind(*_match_weak(lhs, rhs), dimension_numbers=dn, preferred_element_type=pet)


def dot(lhs, rhs, preferred_element_type=None):
    """Vector/matrix product contracting the last axis of `lhs` with the first of `rhs`."""
    return dot_general(lhs, rhs, (((aval_of(lhs).ndim - 1,), (0,)), ((), ())), preferred_element_type)


def slice(x, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * len(start_indices)
    return P.slice_p.bind(x, start_indices=tuple(map(int, start_indices)),
                          limit_indices=tuple(map(int, limit_indices)), strides=tuple(map(int, strides)))


def dynamic_slice(x, start_indices, slice_sizes):
    """Slice of size `slice_sizes` at traced `start_indices` (clamped into bounds, as XLA does)."""
    starts = [convert_element_type(s, np.int32) if aval_of(s).dtype != np.int32 else s for s in start_indices]
    return P.dynamic_slice.bind(x, *starts, slice_sizes=tuple(map(int, slice_sizes)))


def dynamic_update_slice(operand, update, start_indices):
    """`operand` with `update` written at traced `start_indices` (clamped into bounds, as XLA does)."""
    starts = [convert_element_type(s, np.int32) if aval_of(s).dtype != np.int32 else s for s in start_indices]
    operand, update = _match_weak(operand, update)
    return P.dynamic_update_slice.bind(operand, update, *starts)


def rev(x, dimensions: Sequence[int]):
    return P.rev.bind(x, dimensions=tuple(map(int, dimensions))) if dimensions else x


def iota(dtype, size: int):
    return P.iota.bind(dtype=dtypes.canonicalize(dtype), shape=(int(size),), dimension=0)


def broadcasted_iota(dtype, shape: Sequence[int], dimension: int):
    return P.iota.bind(dtype=dtypes.canonicalize(dtype), shape=tuple(map(int, shape)), dimension=int(dimension))


def concatenate(operands: Sequence, dimension: int):
    return P.concatenate.bind(*operands, dimension=int(dimension))


def integer_pow(x, y: int):
    """`x ** y` for a static integer `y`, by repeated squaring (exact for integers)."""
    if y == 0:
        return full_like(x, 1)
    if y < 0:
        return div(full_like(x, 1), integer_pow(x, -y))
    acc, base = None, x
    while y:
        if y & 1:
            acc = base if acc is None else mul(acc, base)
        y >>= 1
        if y:
            base = mul(base, base)
    return acc


def full_like(x, fill_value):
    aval = aval_of(x)
    return broadcast_in_dim(Const(np.array(fill_value, dtype=aval.dtype), aval.update(shape=())), aval.shape, ())


def __getattr__(name: str):
    """Control flow lives in `stagec.control_flow` (it imports this module); re-exported lazily."""
    if name in ("cond", "switch", "while_loop", "fori_loop", "scan", "map"):
        from . import control_flow
        return getattr(control_flow, name)
    raise AttributeError(f"module 'stagec.lax' has no attribute {name!r}")


# ---------------------------------------------------------------- stagec.numpy additions (issue #5)

asin, acos, atan = _unary("asin"), _unary("acos"), _unary("atan")
sinh, cosh, asinh, acosh, atanh = (_unary(n) for n in ("sinh", "cosh", "asinh", "acosh", "atanh"))
erf, round_afz = _unary("erf"), _unary("round_afz")


def clamp(lo, x, hi):
    """`min(max(x, lo), hi)` elementwise (all three of one shape and dtype)."""
    return P.clamp.bind(lo, x, hi)


def argmax(x, axis: int, index_dtype):
    """Index of the largest value along `axis` (the first one on ties; NaN counts as largest)."""
    return P.argminmax.bind(x, axis=int(axis), index_dtype=dtypes.canonicalize(index_dtype), is_max=True)


def argmin(x, axis: int, index_dtype):
    """Index of the smallest value along `axis` (the first one on ties; NaN counts as smallest)."""
    return P.argminmax.bind(x, axis=int(axis), index_dtype=dtypes.canonicalize(index_dtype), is_max=False)


def cumsum(x, axis: int, reverse: bool = False):
    return P.cumulative.bind(x, axis=int(axis), op="sum", reverse=bool(reverse))


def cumprod(x, axis: int, reverse: bool = False):
    return P.cumulative.bind(x, axis=int(axis), op="prod", reverse=bool(reverse))


def cummax(x, axis: int, reverse: bool = False):
    return P.cumulative.bind(x, axis=int(axis), op="max", reverse=bool(reverse))


def cummin(x, axis: int, reverse: bool = False):
    return P.cumulative.bind(x, axis=int(axis), op="min", reverse=bool(reverse))


def sort(operands, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort `operands` (a sequence of equal-shaped arrays) along `dimension` by the first `num_keys`,
    lexicographically; NaN sorts last, as in NumPy. Returns a list."""
    operands = list(operands)
    nd = aval_of(operands[0]).ndim
    return P.sort.bind(*operands, dimension=int(dimension) % (nd or 1), num_keys=int(num_keys),
                       is_stable=bool(is_stable))


def pad(x, padding_value, padding_config):
    """Pad with `padding_value`: `padding_config` is one (low, high, interior) per dimension (low/high may be < 0)."""
    low, high, interior = zip(*padding_config) if padding_config else ((), (), ())
    return P.pad.bind(*_match_weak(x, padding_value), low=tuple(map(int, low)), high=tuple(map(int, high)),
                      interior=tuple(map(int, interior)))


def gather(x, indices, *, offset_dims, collapsed_slice_dims, start_index_map, slice_sizes):
    """XLA gather; the index vectors lie along the last dimension of `indices` (clamped into bounds)."""
    return P.gather.bind(x, indices, offset_dims=tuple(offset_dims), collapsed_slice_dims=tuple(collapsed_slice_dims),
                         start_index_map=tuple(start_index_map), slice_sizes=tuple(map(int, slice_sizes)))


def scatter(x, indices, updates, *, update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims,
            mode: str = "set"):
    """XLA scatter combining with `mode` (set/add/mul/min/max); out-of-bounds updates are dropped."""
    return P.scatter.bind(x, indices, updates, update_window_dims=tuple(update_window_dims),
                          inserted_window_dims=tuple(inserted_window_dims),
                          scatter_dims_to_operand_dims=tuple(scatter_dims_to_operand_dims), mode=mode)


def real(x):
    """The real part of a complex array (a float array)."""
    return P.real_p.bind(x)


def imag(x):
    """The imaginary part of a complex array (a float array)."""
    return P.imag_p.bind(x)


def complex(re, im):
    """A complex array from float real and imaginary parts of one shape and dtype."""
    return P.complex_p.bind(*_match_weak(re, im))


def conj(x):
    """The complex conjugate (re - i*im)."""
    return complex(real(x), neg(imag(x)))
