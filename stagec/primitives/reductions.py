"""Reductions: `reduce_*` over axes, `argminmax`, running reductions (`cumulative`) and `sort`."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import dtypes as _dt
from .. import lowering as L
from ..core import Primitive, ShapedArray, aval_of
from ._util import ANY, NUMBER, check_axis, check_kind, same_shapes_only


def _reduce(name: str, kinds: str) -> Primitive:
    def rule(x: ShapedArray, *, axes: tuple) -> ShapedArray:
        check_kind(name, x, kinds)
        if any(not (0 <= a < x.ndim) for a in axes) or len(set(axes)) != len(axes):
            raise ValueError(f"{name}: invalid axes {axes} for shape {x.shape}")
        return x.update(shape=tuple(d for i, d in enumerate(x.shape) if i not in axes))
    prim = Primitive(name, rule)
    prim.def_lowering(lambda ctx, x, *, axes: [L.reduce_op(ctx, x, name, axes)])
    return prim


reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p = (_reduce(n, ANY) for n in (
    "reduce_sum", "reduce_prod", "reduce_max", "reduce_min"))
reduce_and_p, reduce_or_p = _reduce("reduce_and", "b"), _reduce("reduce_or", "b")


def _argminmax_rule(x: ShapedArray, *, axis: int, index_dtype, is_max: bool) -> ShapedArray:
    check_axis("argmax" if is_max else "argmin", x, axis)
    check_kind("argmax" if is_max else "argmin", x, "iufc")
    if x.shape[axis] == 0:
        raise ValueError(f"attempt to get {'argmax' if is_max else 'argmin'} of an empty sequence")
    return ShapedArray(tuple(d for i, d in enumerate(x.shape) if i != axis), index_dtype)


argminmax_p = Primitive("argminmax", _argminmax_rule)


@argminmax_p.def_lowering
def _argminmax(ctx: L.Ctx, x, *, axis, index_dtype, is_max):
    ir = L.mlir()
    aval, out = ctx.avals_in[0], ctx.avals_out[0]
    s_val, s_idx = aval.update(shape=(), weak_type=False), ShapedArray((), index_dtype)
    idx = ctx.op1("stablehlo.iota", [], result_avals=[ShapedArray(aval.shape, index_dtype)],
                  attributes={"iota_dimension": L.i64(axis)})
    init_v = L.constant(np.array(_dt.identity("max" if is_max else "min", aval.dtype), aval.dtype), s_val)
    init_i = L.constant(np.array(np.iinfo(index_dtype).max, index_dtype), s_idx)
    op = ctx.op("stablehlo.reduce", [x, idx, init_v, init_i], result_avals=[aval.update(shape=out.shape), out],
                attributes={"dimensions": L.i64s([axis])}, regions=1)
    block = L.scalar_block(op, [s_val, s_idx, s_val, s_idx])
    with ir.InsertionPoint(block):
        av, ai, bv, bi = block.arguments
        # Total order: NaN is the most extreme value (NumPy returns the first NaN); ties go to the lower index.
        better, same = L.order(ctx, av, bv, s_val, "GT" if is_max else "LT")
        first = L.bool_op(ctx, "and", same, L.compare(ctx, ai, bi, "LT", s_idx))
        pick_a = L.bool_op(ctx, "or", better, first)
        rv = ctx.op1("stablehlo.select", [pick_a, av, bv], result_avals=[s_val])
        ri = ctx.op1("stablehlo.select", [pick_a, ai, bi], result_avals=[s_idx])
        ir.Operation.create("stablehlo.return", results=[], operands=[rv, ri])
    return [op.results[1]]


def _cumulative_rule(x: ShapedArray, *, axis: int, op: str, reverse: bool) -> ShapedArray:
    check_axis("cum" + op, x, axis)
    if op not in ("sum", "prod", "max", "min"):
        raise ValueError(f"cumulative: unknown op {op!r}")
    check_kind("cum" + op, x, ANY if op in ("max", "min") else NUMBER)
    return x.strip_weak()


cumulative_p = Primitive("cumulative", _cumulative_rule)


@cumulative_p.def_lowering
def _cumulative(ctx: L.Ctx, x, *, axis, op, reverse):
    """A running reduction: reduce_window over a window as long as the axis, padded on one side."""
    ir = L.mlir()
    aval = ctx.avals_in[0]
    if _dt.kind(aval.dtype) == "u":  # IREE cannot lower unsigned reduce_window bodies: compute in a signed type
        if op in ("sum", "prod"):  # two's complement: wrapping add/multiply agree bit for bit
            signed = np.dtype(f"i{aval.dtype.itemsize}")
        elif aval.dtype.itemsize < 8:  # order-preserving: widen
            signed = np.dtype(f"i{2 * aval.dtype.itemsize}")
        else:
            raise NotImplementedError(f"cum{op} of {aval.dtype} arrays is not supported (IREE lowers no unsigned "
                                      f"reduce_window and there is no wider signed type)")
        s_aval = aval.update(dtype=signed)
        inner = L.Ctx([s_aval], [s_aval])
        xs = ctx.op1("stablehlo.convert", [x], result_avals=[s_aval])
        (r,) = _cumulative(inner, xs, axis=axis, op=op, reverse=reverse)
        return [ctx.op1("stablehlo.convert", [r])]
    s = aval.update(shape=(), weak_type=False)
    n = aval.shape[axis]
    init = L.constant(np.array(_dt.identity(op, aval.dtype), aval.dtype), s)
    window = [max(n, 1) if i == axis else 1 for i in range(aval.ndim)]  # a window of 0 is invalid
    pads = np.zeros((aval.ndim, 2), np.int64)
    pads[axis] = (0, max(n - 1, 0)) if reverse else (max(n - 1, 0), 0)
    padding = ir.DenseIntElementsAttr.get(pads, type=ir.RankedTensorType.get([aval.ndim, 2],
                                                                            ir.IntegerType.get_signless(64)))
    red = ctx.op("stablehlo.reduce_window", [x, init], attributes={
        "window_dimensions": L.i64s(window), "window_strides": L.i64s([1] * aval.ndim), "padding": padding}, regions=1)
    block = L.scalar_block(red, [s, s])
    with ir.InsertionPoint(block):
        r = L.combine(ctx, L.combiner(op, aval.dtype), *block.arguments, s)
        ir.Operation.create("stablehlo.return", results=[], operands=[r])
    return [red.result]


_WIDER = {"b": np.int8, "i1": np.int64, "i2": np.int64, "i4": np.int64, "u1": np.int64, "u2": np.int64,
          "u4": np.int64, "f2": np.float32, "f4": np.float64}


def _fresh(ctx: L.Ctx, x, aval: ShapedArray):
    """`x` as a new tensor, widened where a wider type holds it exactly (returns the value and its aval).

    IREE 3.13's CPU sort works in place on its operand buffers even when those are function arguments,
    i.e. the caller's arrays; a conversion is a real copy no canonicalization can remove. 64-bit operands
    (x64 only) get select(x == 1, 1, x), which is not guaranteed to survive folding."""
    key = "b" if aval.dtype == np.bool_ else f"{_dt.kind(aval.dtype)}{aval.dtype.itemsize}"
    if key in _WIDER:
        wide = aval.update(dtype=np.dtype(_WIDER[key]), weak_type=False)
        return ctx.op1("stablehlo.convert", [x], result_avals=[wide]), wide
    one = L.splat(ctx, 1, aval)
    return ctx.op1("stablehlo.select", [L.compare(ctx, x, one, "EQ", aval), one, x], result_avals=[aval]), aval



def _sort_rule(*xs: ShapedArray, dimension: int, num_keys: int, is_stable: bool):
    same_shapes_only("sort", *xs)
    check_axis("sort", xs[0], dimension)
    if not 1 <= num_keys <= len(xs):
        raise ValueError(f"sort: num_keys={num_keys} for {len(xs)} operands")
    for x in xs[:num_keys]:
        check_kind("sort", x, "biuf")
    return list(xs)


sort_p = Primitive("sort", _sort_rule, multiple_results=True)


@sort_p.def_lowering
def _sort(ctx: L.Ctx, *xs, dimension, num_keys, is_stable):
    ir = L.mlir()
    fresh = [_fresh(ctx, x, a.update(weak_type=False)) for x, a in zip(xs, ctx.avals_in)]
    xs, scalars = [f[0] for f in fresh], [f[1].update(shape=()) for f in fresh]
    op = ctx.op("stablehlo.sort", xs, result_avals=[f[1] for f in fresh],
                attributes={"dimension": L.i64(dimension), "is_stable": ir.BoolAttr.get(bool(is_stable))}, regions=1)
    block = L.scalar_block(op, [s for s in scalars for _ in (0, 1)])
    args = list(block.arguments)
    with ir.InsertionPoint(block):
        result = None
        for k in reversed(range(num_keys)):  # lexicographic: key k decides only where keys < k tie
            a, b, s = args[2 * k], args[2 * k + 1], scalars[k]
            lt = L.nan_last_lt(ctx, a, b, s)
            if result is None:
                result = lt
            else:
                gt = L.nan_last_lt(ctx, b, a, s)
                tie = ctx.op1("stablehlo.not", [L.bool_op(ctx, "or", lt, gt)], result_avals=[ShapedArray((), np.bool_)])
                result = L.bool_op(ctx, "or", lt, L.bool_op(ctx, "and", tie, result))
        ir.Operation.create("stablehlo.return", results=[], operands=[result])
    return [r if f[1].dtype == a.dtype else (ctx.op1("stablehlo.convert", [r], result_avals=[a])
                                             if a.dtype != np.bool_ else L.compare(ctx, r, L.splat(ctx, 0, f[1]), "NE", f[1]))
            for r, f, a in zip(op.results, fresh, ctx.avals_out)]


# ---------------------------------------------------------------- strict wrappers (stagec.lax)


def _reducer(prim: Primitive):
    def op(x, axes: Sequence[int]):
        return prim.bind(x, axes=tuple(int(a) for a in axes))
    op.__name__ = op.__qualname__ = prim.name
    op.__doc__ = f"`{prim.name}` of `x` over `axes`."
    return op


reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and, reduce_or = map(_reducer, (
    reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p))


def argmax(x, axis: int, index_dtype):
    """Index of the largest value along `axis` (the first one on ties; NaN counts as largest)."""
    return argminmax_p.bind(x, axis=int(axis), index_dtype=_dt.canonicalize(index_dtype), is_max=True)


def argmin(x, axis: int, index_dtype):
    """Index of the smallest value along `axis` (the first one on ties; NaN counts as smallest)."""
    return argminmax_p.bind(x, axis=int(axis), index_dtype=_dt.canonicalize(index_dtype), is_max=False)


def _running(op_name: str):
    def op(x, axis: int, reverse: bool = False):
        return cumulative_p.bind(x, axis=int(axis), op=op_name, reverse=bool(reverse))
    op.__name__ = op.__qualname__ = "cum" + op_name
    op.__doc__ = f"Running {op_name} along `axis` (from the end if `reverse`)."
    return op


cumsum, cumprod, cummax, cummin = map(_running, ("sum", "prod", "max", "min"))


def sort(operands, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort `operands` (a sequence of equal-shaped arrays) along `dimension` by the first `num_keys`,
    lexicographically; NaN sorts last, as in NumPy. Returns a list."""
    operands = list(operands)
    nd = aval_of(operands[0]).ndim
    return sort_p.bind(*operands, dimension=int(dimension) % (nd or 1), num_keys=int(num_keys),
                       is_stable=bool(is_stable))
