"""Primitives that move data without arithmetic: broadcasts, reshapes, transposes, slices, padding, iota."""
from __future__ import annotations

import builtins

from typing import Sequence

import numpy as np

from .. import dtypes as _dt
from .. import lowering as L
from ..core import Const, Primitive, ShapedArray, aval_of
from . import _ad
from . import elementwise as _ew
from .elementwise import convert_element_type, match_weak, neg


def _broadcast_rule(x: ShapedArray, *, shape: tuple, broadcast_dimensions: tuple) -> ShapedArray:
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(f"broadcast_in_dim: operand of rank {x.ndim} needs {x.ndim} broadcast_dimensions, "
                        f"got {broadcast_dimensions}")
    for i, d in enumerate(broadcast_dimensions):
        if not (0 <= d < len(shape)) or x.shape[i] not in (1, shape[d]):
            raise TypeError(f"broadcast_in_dim: cannot broadcast shape {x.shape} to {shape} with "
                            f"broadcast_dimensions={broadcast_dimensions}")
    return x.update(shape=shape)


broadcast_in_dim_p = Primitive("broadcast_in_dim", _broadcast_rule)
broadcast_in_dim_p.def_lowering(lambda ctx, x, *, shape, broadcast_dimensions: [ctx.op1(
    "stablehlo.broadcast_in_dim", [x], attributes={"broadcast_dimensions": L.i64s(broadcast_dimensions)})])


def _like_shape(like_shape: tuple, like_dims) -> tuple:
    return like_shape if like_dims is None else tuple(like_shape[j] if j >= 0 else 1 for j in like_dims)


def _broadcast_like_rule(x: ShapedArray, like: ShapedArray, *, broadcast_dimensions: tuple = (),
                         like_dims: tuple | None = None) -> ShapedArray:
    shape = _like_shape(like.shape, like_dims)
    _broadcast_rule(x, shape=shape, broadcast_dimensions=broadcast_dimensions)
    return x.update(shape=shape)


# `broadcast_in_dim` to dimensions of another operand (`like_dims`: its dimension for each, -1 for a 1; None: its
# shape), their run-time sizes in a shape-polymorphic module: what a broadcast becomes where an eager composite's
# graph runs for any size (`composites._Poly`).
broadcast_like_p = Primitive("broadcast_like", _broadcast_like_rule)
broadcast_like_p.def_lowering(lambda ctx, x, like, *, broadcast_dimensions=(), like_dims=None: [L.broadcast_like(
    ctx, x, like, ctx.avals_in[1], ctx.avals_out[0], broadcast_dimensions, ctx.avals_in[0], like_dims)])


def _reshape_rule(x: ShapedArray, *, new_sizes: tuple) -> ShapedArray:
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise TypeError(f"cannot reshape array of shape {x.shape} (size {x.size}) into shape {new_sizes}")
    return x.update(shape=new_sizes)


reshape_p = Primitive("reshape", _reshape_rule)
reshape_p.def_lowering(lambda ctx, x, *, new_sizes: [ctx.op1("stablehlo.reshape", [x])])


def _transpose_rule(x: ShapedArray, *, permutation: tuple) -> ShapedArray:
    if sorted(permutation) != list(range(x.ndim)):
        raise ValueError(f"transpose permutation {permutation} is not a permutation of the axes of shape {x.shape}")
    return x.update(shape=tuple(x.shape[p] for p in permutation))


transpose_p = Primitive("transpose", _transpose_rule)
transpose_p.def_lowering(lambda ctx, x, *, permutation: [ctx.op1(
    "stablehlo.transpose", [x], attributes={"permutation": L.i64s(permutation)})])


def _slice_rule(x: ShapedArray, *, start_indices, limit_indices, strides):
    if not (len(start_indices) == len(limit_indices) == len(strides) == x.ndim):
        raise TypeError(f"slice: indices must have one entry per dimension of shape {x.shape}")
    for s, l, st, d in zip(start_indices, limit_indices, strides, x.shape):
        if not (0 <= s <= l <= d) or st < 1:
            raise IndexError(f"slice [{s}:{l}:{st}] is out of bounds for shape {x.shape}")
    return x.update(shape=tuple(max(0, -(-(l - s) // st)) for s, l, st in zip(start_indices, limit_indices, strides)))


slice_p = Primitive("slice", _slice_rule)
slice_p.def_lowering(lambda ctx, x, *, start_indices, limit_indices, strides: [ctx.op1("stablehlo.slice", [x], attributes={
    "start_indices": L.i64s(start_indices), "limit_indices": L.i64s(limit_indices), "strides": L.i64s(strides)})])


def _dynamic_slice_rule(x: ShapedArray, *starts: ShapedArray, slice_sizes: tuple):
    if len(starts) != x.ndim or len(slice_sizes) != x.ndim:
        raise TypeError(f"dynamic_slice needs {x.ndim} start indices for shape {x.shape}")
    if any(s.shape != () or _dt.kind(s.dtype) not in "iu" for s in starts):
        raise TypeError("dynamic_slice start indices must be integer scalars")
    if any(not (0 <= s <= d) for s, d in zip(slice_sizes, x.shape)):
        raise IndexError(f"dynamic_slice sizes {slice_sizes} exceed shape {x.shape}")
    return x.update(shape=slice_sizes)


dynamic_slice_p = Primitive("dynamic_slice", _dynamic_slice_rule)
dynamic_slice_p.def_lowering(lambda ctx, x, *starts, slice_sizes: [ctx.op1(
    "stablehlo.dynamic_slice", [x, *starts], attributes={"slice_sizes": L.i64s(slice_sizes)})])


def _dynamic_update_slice_rule(x: ShapedArray, update: ShapedArray, *starts: ShapedArray):
    if update.ndim != x.ndim or len(starts) != x.ndim or update.dtype != x.dtype:
        raise TypeError(f"dynamic_update_slice: update {update.str_short()} does not fit operand {x.str_short()} "
                        f"with {len(starts)} start indices")
    if any(u > d for u, d in zip(update.shape, x.shape)):
        raise TypeError(f"dynamic_update_slice: update shape {update.shape} exceeds operand shape {x.shape}")
    return x


dynamic_update_slice_p = Primitive("dynamic_update_slice", _dynamic_update_slice_rule)


@dynamic_update_slice_p.def_lowering
def _dynamic_update_slice_lower(ctx: L.Ctx, x, update, *starts):
    """IREE 3.13's CPU dynamic_update_slice writes into its operand's buffer in place; when that operand is
    a function argument, the caller's array would change. Then update fresh tensors and select instead."""
    if not L.is_function_argument(x):  # e.g. scan's output buffers, which the function creates itself
        return [ctx.op1("stablehlo.dynamic_update_slice", [x, update, *starts])]
    aval, uaval = ctx.avals_in[0].update(weak_type=False), ctx.avals_in[1].update(weak_type=False)
    m_aval = aval.update(dtype=np.int8)
    mask = ctx.op1("stablehlo.dynamic_update_slice", [L.splat(ctx, 0, m_aval), L.splat(ctx, 1, uaval.update(
        dtype=np.int8)), *starts], result_avals=[m_aval])
    vals = ctx.op1("stablehlo.dynamic_update_slice", [L.splat(ctx, 0, aval), update, *starts], result_avals=[aval])
    return [ctx.op1("stablehlo.select", [L.compare(ctx, mask, L.splat(ctx, 0, m_aval), "NE", m_aval), vals, x])]


rev_p = Primitive("rev", lambda x, *, dimensions: x)


@rev_p.def_lowering
def _rev_lower(ctx: L.Ctx, x, *, dimensions):
    aval = ctx.avals_in[0]
    if _dt.kind(aval.dtype) == "u":  # IREE cannot lower an unsigned reverse: reverse the same bits as signed
        s = aval.update(dtype=np.dtype(f"i{aval.dtype.itemsize}"))
        r = _rev_lower(L.Ctx([s], [s]), ctx.op1("stablehlo.bitcast_convert", [x], result_avals=[s]),
                       dimensions=dimensions)[0]
        return [ctx.op1("stablehlo.bitcast_convert", [r])]
    return [ctx.op1("stablehlo.reverse", [x], attributes={"dimensions": L.i64s(dimensions)})]


iota_p = Primitive("iota", lambda *, dtype, shape, dimension: ShapedArray(shape, dtype))
iota_p.def_lowering(lambda ctx, *, dtype, shape, dimension: [ctx.op1(
    "stablehlo.iota", [], attributes={"iota_dimension": L.i64(dimension)})])


def _concatenate_rule(*xs: ShapedArray, dimension: int):
    base = xs[0]
    for x in xs[1:]:
        if x.ndim != base.ndim or x.dtype != base.dtype or any(
                a != b for i, (a, b) in enumerate(zip(x.shape, base.shape)) if i != dimension):
            raise TypeError(f"concatenate: cannot join shapes {[x.shape for x in xs]} along axis {dimension}")
    shape = list(base.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, base.dtype, all(x.weak_type for x in xs))


concatenate_p = Primitive("concatenate", _concatenate_rule)
concatenate_p.def_lowering(lambda ctx, *xs, dimension: [ctx.op1(
    "stablehlo.concatenate", xs, attributes={"dimension": L.i64(dimension)})])


def _pad_rule(x: ShapedArray, value: ShapedArray, *, low: tuple, high: tuple, interior: tuple) -> ShapedArray:
    if value.shape != () or value.dtype != x.dtype:
        raise TypeError(f"pad: padding value must be a scalar of dtype {x.dtype}, got {value.str_short()}")
    if not (len(low) == len(high) == len(interior) == x.ndim) or any(i < 0 for i in interior):
        raise ValueError(f"pad: bad padding config low={low} high={high} interior={interior} for shape {x.shape}")
    shape = tuple(lo + hi + d + max(d - 1, 0) * it for d, lo, hi, it in zip(x.shape, low, high, interior))
    if any(d < 0 for d in shape):
        raise ValueError(f"pad: negative padding removes more than shape {x.shape} holds")
    return x.update(shape=shape, weak_type=x.weak_type and value.weak_type)


pad_p = Primitive("pad", _pad_rule)
pad_p.def_lowering(lambda ctx, x, value, *, low, high, interior: [ctx.op1("stablehlo.pad", [x, value], attributes={
    "edge_padding_low": L.i64s(low), "edge_padding_high": L.i64s(high), "interior_padding": L.i64s(interior)})])


# An identity that IREE neither moves computation across nor treats as a constant expression: what depends on it is
# computed when the module runs, never by IREE's compile-time evaluation (`stagec.random` hashes behind it, so a draw
# from a constant key is not evaluated, and embedded, by iree-compile).
optimization_barrier_p = Primitive("optimization_barrier", lambda x: x)
optimization_barrier_p.def_lowering(lambda ctx, x: [ctx.op1("stablehlo.optimization_barrier", [x])])
optimization_barrier_p.def_impl(lambda x: [x])


# ---------------------------------------------------------------- differentiation rules


def _unbroadcast(ct, x, *, shape, broadcast_dimensions):
    """Sum `ct` over the dimensions broadcast_in_dim created or stretched, back to the operand's shape."""
    from .reductions import reduce_sum
    xs = x.aval.shape
    stretched = [broadcast_dimensions[i] for i, d in enumerate(xs) if d == 1 and shape[broadcast_dimensions[i]] != 1]
    summed = [d for d in range(len(shape)) if d not in broadcast_dimensions] + stretched
    r = reduce_sum(ct, summed) if summed else ct
    kept = [d for d in broadcast_dimensions if d not in stretched]
    order = sorted(range(len(kept)), key=lambda i: kept[i])  # kept dims come out in increasing order
    r = transpose(r, [order.index(i) for i in range(len(kept))]) if order != sorted(order) else r
    return reshape(r, xs)


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
    shape = x.aval.shape
    out = aval_of(ct).shape
    real_limits = [s + (n - 1) * st + 1 if n else s for s, n, st in zip(start_indices, out, strides)]
    zero = _ad.zeros(aval_of(ct).update(shape=()))
    return pad(ct, zero, [(s, d - l, st - 1) for s, l, st, d in zip(start_indices, real_limits, strides, shape)])


_ad.deflinear(broadcast_in_dim_p, _unbroadcast)
_ad.deflinear(reshape_p, lambda ct, x, *, new_sizes: reshape(ct, x.aval.shape))
_ad.deflinear(transpose_p, lambda ct, x, *, permutation: transpose(ct, np.argsort(permutation)))
_ad.deflinear(slice_p, _slice_transpose)
_ad.deflinear(rev_p, lambda ct, x, *, dimensions: rev(ct, dimensions))
_ad.deflinear(optimization_barrier_p, lambda ct, x: ct)
_ad.defjvp(broadcast_like_p, lambda g, ans, x, like, **params: broadcast_like_p.bind(g, like, **params), None)
broadcast_like_p.def_transpose(lambda ct, x, like, *, broadcast_dimensions=(), like_dims=None: [
    None if ct is None else _unbroadcast(ct, x, shape=aval_of(ct).shape, broadcast_dimensions=broadcast_dimensions),
    None])


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    x, *starts = primals
    out = dynamic_slice_p.bind(*primals, slice_sizes=slice_sizes)
    return out, None if tangents[0] is None else dynamic_slice_p.bind(tangents[0], *starts, slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct, x, *starts, slice_sizes):
    if ct is None or not _ad.is_undefined(x):
        return [None] * (1 + len(starts))
    return [dynamic_update_slice_p.bind(_ad.zeros(x.aval), ct, *starts)] + [None] * len(starts)


def _dynamic_update_slice_jvp(primals, tangents):
    x, u, *starts = primals
    out = dynamic_update_slice_p.bind(*primals)
    tx, tu = tangents[:2]
    if tx is None and tu is None:
        return out, None
    return out, dynamic_update_slice_p.bind(_ad.instantiate(tx, aval_of(x)), _ad.instantiate(tu, aval_of(u)), *starts)


def _dynamic_update_slice_transpose(ct, x, u, *starts):
    if ct is None:
        return [None] * (2 + len(starts))
    u_aval = u.aval if _ad.is_undefined(u) else aval_of(u)
    ct_x = dynamic_update_slice_p.bind(ct, _ad.zeros(u_aval), *starts) if _ad.is_undefined(x) else None
    ct_u = dynamic_slice_p.bind(ct, *starts, slice_sizes=u_aval.shape) if _ad.is_undefined(u) else None
    return [ct_x, ct_u] + [None] * len(starts)


dynamic_slice_p.def_jvp(_dynamic_slice_jvp)
dynamic_slice_p.def_transpose(_dynamic_slice_transpose)
dynamic_update_slice_p.def_jvp(_dynamic_update_slice_jvp)
dynamic_update_slice_p.def_transpose(_dynamic_update_slice_transpose)


def _concatenate_jvp(primals, tangents, *, dimension):
    out = concatenate_p.bind(*primals, dimension=dimension)
    if all(t is None for t in tangents):
        return out, None
    return out, concatenate_p.bind(*[_ad.instantiate(t, aval_of(p)) for p, t in zip(primals, tangents)],
                                   dimension=dimension)


def _concatenate_transpose(ct, *xs, dimension):
    outs, start = [], 0
    ct_shape = aval_of(ct).shape if ct is not None else None
    for x in xs:
        n = (x.aval if _ad.is_undefined(x) else aval_of(x)).shape[dimension]
        if ct is not None and _ad.is_undefined(x):
            lo = [0] * len(ct_shape)
            hi = list(ct_shape)
            lo[dimension], hi[dimension] = start, start + n
            outs.append(slice(ct, lo, hi))
        else:
            outs.append(None)
        start += n
    return outs


concatenate_p.def_jvp(_concatenate_jvp)
concatenate_p.def_transpose(_concatenate_transpose)


def _pad_jvp(primals, tangents, **params):
    out = pad_p.bind(*primals, **params)
    if all(t is None for t in tangents):
        return out, None
    return out, pad_p.bind(*[_ad.instantiate(t, aval_of(p)) for p, t in zip(primals, tangents)], **params)


def _pad_transpose(ct, x, value, *, low, high, interior):
    from .reductions import reduce_sum
    if ct is None:
        return [None, None]
    ct_aval = aval_of(ct)
    total = lambda v: reduce_sum(v, range(aval_of(v).ndim))
    ct_x = None
    if _ad.is_undefined(x) or _ad.is_undefined(value):
        zero = _ad.zeros(ct_aval.update(shape=()))
        unpadded = pad(ct, zero, [(-lo, -hi, 0) for lo, hi in zip(low, high)])
        ct_x = slice(unpadded, [0] * ct_aval.ndim, aval_of(unpadded).shape, [i + 1 for i in interior])
    ct_v = _ad.add_tangents(total(ct), neg(total(ct_x))) if _ad.is_undefined(value) else None
    return [ct_x if _ad.is_undefined(x) else None, ct_v]




pad_p.def_jvp(_pad_jvp)
pad_p.def_transpose(_pad_transpose)


# ---------------------------------------------------------------- strict wrappers (stagec.lax)


def broadcast_in_dim(x, shape: Sequence[int], broadcast_dimensions: Sequence[int]):
    shape, dims = tuple(int(d) for d in shape), tuple(int(d) for d in broadcast_dimensions)
    if aval_of(x).shape == shape and dims == tuple(range(len(shape))):
        return x
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims)


def broadcast(x, sizes: Sequence[int]):
    """Prepend dimensions `sizes` to `x`."""
    nd = aval_of(x).ndim
    return broadcast_in_dim(x, tuple(sizes) + aval_of(x).shape, tuple(range(len(sizes), len(sizes) + nd)))


def reshape(x, new_sizes: Sequence[int]):
    new_sizes = tuple(int(d) for d in new_sizes)
    if aval_of(x).shape == new_sizes:
        return x
    return reshape_p.bind(x, new_sizes=new_sizes)


def transpose(x, permutation: Sequence[int]):
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))) and len(permutation) == aval_of(x).ndim:  # ((0,) of a matrix:
        return x  # the rule's error)
    return transpose_p.bind(x, permutation=permutation)


def slice(x, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * len(start_indices)
    return slice_p.bind(x, start_indices=tuple(map(int, start_indices)),
                        limit_indices=tuple(map(int, limit_indices)), strides=tuple(map(int, strides)))


def slice_in_dim(x, start, limit, stride: int = 1, axis: int = 0):
    """`x[start:limit:stride]` along `axis` (static bounds; None means the start or end, a negative one counts from
    the end once, as JAX's; out of bounds after that is an error, not clipped as Python's)."""
    shape = aval_of(x).shape
    n = shape[axis]
    start = 0 if start is None else int(start)
    limit = n if limit is None else int(limit)
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis] = start + n if start < 0 else start
    limits[axis] = limit + n if limit < 0 else limit
    strides[axis] = int(stride)
    return slice(x, starts, limits, strides)


def _int32_starts(start_indices) -> list:
    """The start indices as int32, each clamped into int32's range first (a uint32 4294967295 or an int64 2^33
    wrapped to -1 or 0: the slice started at 0, not at the end); a float index is a TypeError, as in JAX."""
    out = []
    for s in start_indices:
        dt = aval_of(s).dtype
        if _dt.kind(dt) not in "iu":
            raise TypeError(f"index arguments to dynamic_slice and dynamic_update_slice must be integers, got {dt}")
        if dt != np.int32:
            info, i32 = np.iinfo(dt), np.iinfo(np.int32)
            if info.max > i32.max:
                s = _ew.min(s, Const(np.array(i32.max, dt), ShapedArray((), dt)))
            if info.min < i32.min:
                s = _ew.max(s, Const(np.array(i32.min, dt), ShapedArray((), dt)))
            s = convert_element_type(s, np.int32)
        out.append(s)
    return out


def dynamic_slice(x, start_indices, slice_sizes):
    """Slice of size `slice_sizes` at traced `start_indices` (clamped into bounds, as XLA does)."""
    return dynamic_slice_p.bind(x, *_int32_starts(start_indices), slice_sizes=tuple(map(int, slice_sizes)))


def dynamic_update_slice(operand, update, start_indices):
    """`operand` with `update` written at traced `start_indices` (clamped into bounds, as XLA does)."""
    operand, update = match_weak(operand, update)
    return dynamic_update_slice_p.bind(operand, update, *_int32_starts(start_indices))


def rev(x, dimensions: Sequence[int]):
    return rev_p.bind(x, dimensions=tuple(map(int, dimensions))) if dimensions else x


def iota(dtype, size: int):
    return iota_p.bind(dtype=_dt.canonicalize(dtype), shape=(int(size),), dimension=0)


def broadcasted_iota(dtype, shape: Sequence[int], dimension: int):
    return iota_p.bind(dtype=_dt.canonicalize(dtype), shape=tuple(map(int, shape)), dimension=int(dimension))


def concatenate(operands: Sequence, dimension: int):
    return concatenate_p.bind(*operands, dimension=int(dimension))


def pad(x, padding_value, padding_config):
    """Pad with `padding_value`: `padding_config` is one (low, high, interior) per dimension (low/high may be < 0)."""
    low, high, interior = zip(*padding_config) if padding_config else ((), (), ())
    return pad_p.bind(*match_weak(x, padding_value), low=tuple(map(int, low)), high=tuple(map(int, high)),
                      interior=tuple(map(int, interior)))


# ---------------------------------------------------------------- batching rules

from ._batch import at_front, axis_size, example_shape, moveaxis  # noqa: E402


@broadcast_in_dim_p.def_batch
def _broadcast_batch(args, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = args, dims
    return broadcast_in_dim(moveaxis(x, d, 0), (aval_of(x).shape[d],) + shape,
                            (0,) + tuple(b + 1 for b in broadcast_dimensions)), 0


@reshape_p.def_batch
def _reshape_batch(args, dims, *, new_sizes):
    (x,), (d,) = args, dims
    return reshape(moveaxis(x, d, 0), (aval_of(x).shape[d],) + new_sizes), 0


optimization_barrier_p.def_batch(lambda args, dims: (optimization_barrier_p.bind(args[0]), dims[0]))


@broadcast_like_p.def_batch
def _broadcast_like_batch(args, dims, *, broadcast_dimensions=(), like_dims=None):
    (x, like), (dx, dl) = args, dims
    shape = (axis_size(args, dims),) + _like_shape(example_shape(like, dl), like_dims)
    moved = tuple(d + 1 for d in broadcast_dimensions)
    if dx is None:
        ld = None if like_dims is None else (0,) + tuple(j + 1 if j >= 0 else -1 for j in like_dims)
        return broadcast_like_p.bind(x, moveaxis(like, dl, 0), broadcast_dimensions=moved, like_dims=ld), 0
    return broadcast_in_dim(moveaxis(x, dx, 0), shape, (0,) + moved), 0


@transpose_p.def_batch
def _transpose_batch(args, dims, *, permutation):
    (x,), (d,) = args, dims
    return transpose(moveaxis(x, d, 0), (0,) + tuple(p + 1 for p in permutation)), 0


@slice_p.def_batch
def _slice_batch(args, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = args, dims
    ins = lambda t, v: t[:d] + (v,) + t[d:]
    return slice(x, ins(start_indices, 0), ins(limit_indices, aval_of(x).shape[d]), ins(strides, 1)), d


@rev_p.def_batch
def _rev_batch(args, dims, *, dimensions):
    (x,), (d,) = args, dims
    return rev(x, [a + (a >= d) for a in dimensions]), d


@concatenate_p.def_batch
def _concatenate_batch(args, dims, *, dimension):
    n = axis_size(args, dims)
    return concatenate([at_front(x, d, n) for x, d in zip(args, dims)], dimension + 1), 0


@pad_p.def_batch
def _pad_batch(args, dims, *, low, high, interior):
    (x, value), (d, vd) = args, dims
    n = axis_size(args, dims)
    x = at_front(x, d, n)
    config = [(0, 0, 0)] + list(zip(low, high, interior))
    if vd is None:
        return pad(x, value, config), 0
    # A padding value per example: pad with anything, then select it where the padding is (as JAX does).
    mask = pad(broadcast_in_dim(True, aval_of(x).shape, ()), False, config)
    padded = pad(x, convert_element_type(0, aval_of(x).dtype), config)
    fill = broadcast_in_dim(at_front(value, vd, n), aval_of(padded).shape, (0,))
    from .elementwise import select
    return select(mask, padded, fill), 0


def _starts_per_example(starts, dims, n: int, limits: Sequence[int]):
    """The start indices as one (n, rank) int32 array, each clamped into [0, limit] as XLA clamps them."""
    from .elementwise import clamp
    cols = []
    for s, d, lim in zip(starts, dims, limits):
        s = at_front(convert_element_type(s, np.int32), d, n)
        lo, hi = broadcast_in_dim(np.int32(0), (n,), ()), broadcast_in_dim(np.int32(max(lim, 0)), (n,), ())
        cols.append(reshape(clamp(lo, s, hi), (n, 1)))
    return concatenate(cols, 1)


@dynamic_slice_p.def_batch
def _dynamic_slice_batch(args, dims, *, slice_sizes):
    (x, *starts), (d, *sdims) = args, dims
    if all(s is None for s in sdims):
        zero = convert_element_type(0, np.int32)
        sizes = slice_sizes[:d] + (aval_of(x).shape[d],) + slice_sizes[d:]
        return dynamic_slice(x, starts[:d] + [zero] + starts[d:], sizes), d
    # Per-example starts: a gather of one slice per example (the gather rule batches the operand too).
    from .indexing import gather_p
    n = axis_size(args, dims)
    shape = example_shape(x, d)
    idx = _starts_per_example(starts, sdims, n, [a - s for a, s in zip(shape, slice_sizes)])
    nd = len(shape)
    return gather_p.batch([x, idx], [d, 0], offset_dims=tuple(range(nd)), collapsed_slice_dims=(),
                          start_index_map=tuple(range(nd)), slice_sizes=slice_sizes)


@dynamic_update_slice_p.def_batch
def _dynamic_update_slice_batch(args, dims):
    (x, upd, *starts), (d, ud, *sdims) = args, dims
    n = axis_size(args, dims)
    x, upd = at_front(x, d, n), at_front(upd, ud, n)
    if all(s is None for s in sdims):
        zero = convert_element_type(0, np.int32)
        return dynamic_update_slice(x, upd, [zero] + list(starts)), 0
    if n == 0:  # a batch of no examples: nothing to update (the scatter's example-number index would not fit)
        return x, 0
    # Per-example starts: scatter each element of the update to its place (starts clamped first, as XLA
    # clamps them; IREE compiles scatters of single elements, not of partial windows along indexed axes).
    from .elementwise import add
    from .indexing import scatter
    shape, ushape = aval_of(x).shape[1:], aval_of(upd).shape[1:]
    nd = len(shape)
    idx = _starts_per_example(starts, sdims, n, [a - u for a, u in zip(shape, ushape)])  # (n, nd)
    grid = (n,) + ushape + (nd,)
    offsets = concatenate([broadcasted_iota(np.int32, (n,) + ushape + (1,), k + 1) for k in range(nd)], nd + 1)
    pos = add(broadcast_in_dim(idx, grid, (0, nd + 1)), offsets)
    pos = concatenate([broadcasted_iota(np.int32, (n,) + ushape + (1,), 0), pos], nd + 1)
    return scatter(x, pos, upd, update_window_dims=(), inserted_window_dims=tuple(range(nd + 1)),
                   scatter_dims_to_operand_dims=tuple(range(nd + 1)), mode="set"), 0


# ---------------------------------------------------------------- NumPy rules (`Primitive.def_host`)
# (`builtins.slice`: this module's `slice` is lax.slice)

def _broadcast_host(x, *, shape, broadcast_dimensions):
    """A read-only view of `x`: stride 0 along new and stretched dimensions (built directly: ~0.3 us, where
    transpose, reshape and `np.broadcast_to` took ~3 us)."""
    if type(x) is np.ndarray and x.flags.c_contiguous and x.size:
        strides = [0] * len(shape)
        for i, d in enumerate(broadcast_dimensions):
            if x.shape[i] != 1:
                strides[d] = x.strides[i]
        out = np.ndarray(shape, x.dtype, x, 0, strides)
        out.flags.writeable = False
        return out
    order = sorted(range(x.ndim), key=lambda i: broadcast_dimensions[i])
    x = x.transpose(order)
    dims = [broadcast_dimensions[i] for i in order]
    return np.broadcast_to(x.reshape([x.shape[dims.index(d)] if d in dims else 1 for d in range(len(shape))]),
                           shape)


def _starts(x, starts, sizes) -> tuple:
    """Start indices clamped so that the window fits, as `stablehlo.dynamic_slice` clamps them."""
    return tuple(int(min(max(int(s), 0), d - n)) for s, d, n in zip(starts, x.shape, sizes))


def _dynamic_update_slice_host(x, update, *starts):
    out = x.copy()
    at = _starts(x, starts, update.shape)
    out[tuple(builtins.slice(s, s + n) for s, n in zip(at, update.shape))] = update
    return out


def _iota_host(*, dtype, shape, dimension):
    line = np.arange(shape[dimension], dtype=dtype).reshape([-1 if i == dimension else 1 for i in range(len(shape))])
    return np.broadcast_to(line, shape)


def _pad_host(x, value, *, low, high, interior):
    if not any(interior) and min(low, default=0) >= 0 and min(high, default=0) >= 0:  # (np.pad: ~10 us more)
        out = np.full([lo + d + hi for d, lo, hi in zip(x.shape, low, high)], value, x.dtype)
        out[tuple(builtins.slice(lo, lo + d) for d, lo in zip(x.shape, low))] = x
        return out
    spread = np.full([d + max(d - 1, 0) * it for d, it in zip(x.shape, interior)], value, x.dtype)
    spread[tuple(builtins.slice(None, None, it + 1) for it in interior)] = x
    out = np.pad(spread, [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high)], constant_values=value)
    return out[tuple(builtins.slice(max(-lo, 0), out.shape[i] - max(-hi, 0)) for i, (lo, hi) in enumerate(zip(low, high)))]


def _pad_bound(avals, params):
    """`_pad_host` for one signature: where nothing is cut or spread, the result's shape and the operand's place
    in it found once (np.full's Python layer too: ~1 us less a call on a few elements)."""
    low, high, interior = params["low"], params["high"], params["interior"]
    if any(interior) or min(low, default=0) < 0 or min(high, default=0) < 0:
        return lambda x, value: _pad_host(x, value, **params)
    shape = tuple(lo + d + hi for d, lo, hi in zip(avals[0].shape, low, high))
    inner, dtype = tuple(builtins.slice(lo, lo + d) for d, lo in zip(avals[0].shape, low)), np.dtype(avals[0].dtype)
    empty = np.empty

    def pad(x, value):
        out = empty(shape, dtype)
        out.fill(value)
        out[inner] = x
        return out
    return pad


def _slices(start_indices, limit_indices, strides) -> tuple:
    return tuple(builtins.slice(s, e, st) for s, e, st in zip(start_indices, limit_indices, strides))


broadcast_in_dim_p.def_host(_broadcast_host)
reshape_p.def_host(lambda x, *, new_sizes: x.reshape(new_sizes))
transpose_p.def_host(lambda x, *, permutation: x.transpose(permutation))
# (bound: the index built once per signature, ~1.2 us of a 4x4 `median`'s three one-element slices each)
slice_p.def_host(lambda x, **params: x[_slices(**params)], None,
                 lambda avals, params: (lambda x, _at=_slices(**params): x[_at]))
dynamic_slice_p.def_host(lambda x, *starts, slice_sizes: x[tuple(
    builtins.slice(s, s + n) for s, n in zip(_starts(x, starts, slice_sizes), slice_sizes))])
dynamic_update_slice_p.def_host(_dynamic_update_slice_host)
rev_p.def_host(lambda x, *, dimensions: np.flip(x, tuple(dimensions)))
iota_p.def_host(_iota_host)
concatenate_p.def_host(lambda *xs, dimension: np.concatenate(xs, axis=dimension))
pad_p.def_host(_pad_host, None, _pad_bound)
optimization_barrier_p.def_host(lambda x: x)
broadcast_like_p.def_host(lambda x, like, *, broadcast_dimensions=(), like_dims=None: _broadcast_host(
    x, shape=_like_shape(np.shape(like), like_dims), broadcast_dimensions=broadcast_dimensions))
