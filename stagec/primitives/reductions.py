"""Reductions: `reduce_*` over axes, `argminmax`, running reductions (`cumulative`) and `sort`."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import dtypes as _dt
from .. import lowering as L
from ..core import Primitive, ShapedArray, aval_of
from . import _ad
from . import elementwise as ew
from ..tree_util import tree_flatten, tree_unflatten
from .structural import (broadcast_in_dim, broadcasted_iota, concatenate, pad, reshape, rev,
                         transpose)
from .structural import slice_in_dim
from ._util import ANY, NUMBER, check_axis, check_kind, of_kinds, same_shapes_only


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
# (bitwise over integers, as JAX's: lax.reduce_and of an int32 array was a TypeError)
reduce_and_p, reduce_or_p, reduce_xor_p = (_reduce(n, "biu") for n in ("reduce_and", "reduce_or", "reduce_xor"))


def _reduce_wide(name: str):
    """float16/bfloat16 sums and products accumulate in float32 (as XLA does, so JAX's gradients, whose
    transposed broadcasts are such sums, come out alike: 4096 ones sum to 4096, not float16's 2048)."""
    def rule(ctx: L.Ctx, x, *, axes):
        (a,), (o,) = ctx.avals_in, ctx.avals_out
        if a.dtype not in (_dt.float16, _dt.bfloat16):
            return [L.reduce_op(ctx, x, name, axes)]
        wa, wo = a.update(dtype=np.float32), o.update(dtype=np.float32)
        wide = ctx.op1("stablehlo.convert", [x], result_avals=[wa])
        r = L.reduce_op(L.Ctx([wa], [wo]), wide, name, axes)
        return [ctx.op1("stablehlo.convert", [r], result_avals=[o])]
    return rule


reduce_sum_p.def_lowering(_reduce_wide("reduce_sum"))
reduce_prod_p.def_lowering(_reduce_wide("reduce_prod"))


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


def in_signed(ctx: L.Ctx, x, op: str, inner):
    """`inner(ctx', x')`, an unsigned reduce_window of `op`, computed in the signed type of the same width (IREE lowers
    no unsigned reduce_window body): sum and product on the values converted (two's complement wraps alike), max
    and min on the bits with the sign bit flipped, which order as signed integers as the unsigned values do (this
    widened them before, and raised NotImplementedError for uint64)."""
    aval, out = ctx.avals_in[0].update(weak_type=False), ctx.avals_out[0].update(weak_type=False)
    signed = np.dtype(f"i{aval.dtype.itemsize}")
    s_in, s_out = aval.update(dtype=signed), out.update(dtype=signed)
    if op in ("sum", "prod"):
        (r,) = inner(L.Ctx([s_in], [s_out]), ctx.op1("stablehlo.convert", [x], result_avals=[s_in]))
        return ctx.op1("stablehlo.convert", [r])
    top = 1 << (8 * aval.dtype.itemsize - 1)
    flipped = ctx.op1("stablehlo.xor", [x, L.full(top, aval)], result_avals=[aval])
    (r,) = inner(L.Ctx([s_in], [s_out]), ctx.op1("stablehlo.bitcast_convert", [flipped], result_avals=[s_in]))
    r = ctx.op1("stablehlo.bitcast_convert", [r], result_avals=[out])
    return ctx.op1("stablehlo.xor", [r, L.full(top, out)])


@cumulative_p.def_lowering
def _cumulative(ctx: L.Ctx, x, *, axis, op, reverse):
    """A running reduction: reduce_window over a window as long as the axis, padded on one side."""
    ir = L.mlir()
    aval = ctx.avals_in[0]
    if _dt.kind(aval.dtype) == "u":  # IREE cannot lower unsigned reduce_window bodies: compute in a signed type
        return [in_signed(ctx, x, op, lambda c, xs: _cumulative(c, xs, axis=axis, op=op, reverse=reverse))]
    if aval.dtype in (_dt.float16, _dt.bfloat16) and op in ("sum", "prod"):  # accumulate in float32, as reduce_sum:
        # float16 running sums of ones stopped at 2048 (bfloat16's at 256); JAX's, a tree of half-precision adds, get
        # 3000 for 3000 ones
        wide = aval.update(dtype=np.dtype(np.float32), weak_type=False)
        (r,) = _cumulative(L.Ctx([wide], [wide]), ctx.op1("stablehlo.convert", [x], result_avals=[wide]), axis=axis,
                           op=op, reverse=reverse)
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


# (int64 only where needed: IREE 3.13's SPIR-V failed to compile int64 sorts of 64, 128, 256 values, "failed to
# legalize 'vector.broadcast'"; float32 here is the position key, exact in float64)
_WIDER = {"b": np.int8, "i1": np.int32, "i2": np.int32, "u1": np.int32, "u2": np.int32, "f4": np.float64}
_FLIP = np.int32(np.iinfo(np.int32).min)  # (uint32 as int32 in the same order: its top bit flipped, `_fresh`)


def _fresh(ctx: L.Ctx, x, aval: ShapedArray):
    """`x` as a new tensor, widened where a wider type holds it exactly (returns the value and its aval).

    IREE 3.13's CPU sort works in place on its operand buffers even when those are function arguments,
    i.e. the caller's arrays; a conversion is a real copy no canonicalization can remove. 64-bit operands
    and int32 operands get select(x == 1, 1, x), which IREE folds: no copy (`passes.legalize.sorts_apart` copies an
    argument), but without it IREE fused a strided slice into the sort's dispatch and failed to compile it
    (x64 `eigh`'s sorted eigenvalues)."""
    key = "b" if aval.dtype == np.bool_ else f"{_dt.kind(aval.dtype)}{aval.dtype.itemsize}"
    if key == "u4":  # (a new value; the sort's output flips it back)
        i32 = aval.update(dtype=np.dtype(np.int32), weak_type=False)
        bits = ctx.op1("stablehlo.bitcast_convert", [x], result_avals=[i32])
        return ctx.op1("stablehlo.xor", [bits, L.splat(ctx, _FLIP, i32)], result_avals=[i32]), i32
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


def _bits(ctx: L.Ctx, x, aval: ShapedArray):
    """(x's bits as a signed integer of its width, that aval): how a float operand moves through a sort."""
    it = aval.update(dtype=np.dtype(f"i{aval.dtype.itemsize}"), weak_type=False)
    return ctx.op1("stablehlo.bitcast_convert", [x], result_avals=[it]), it


def _float_key(ctx: L.Ctx, x, aval: ShapedArray):
    """(key, its aval) of a float16/bfloat16/float32 sort key: an int32 in NumPy's order (NaN last, every NaN and
    both zeros equal) computed from its bits, never compared or converted as a float: IREE's CPU kernels flush
    subnormals (a float32 -> float64 copy gave sort([3, 1e-40, -1e-40, 2]) = [-0, 0, 2, 3])."""
    bits, it = _bits(ctx, x, aval)
    top, inf = np.iinfo(it.dtype).max, int(np.array(np.inf, aval.dtype).view(it.dtype))
    op = lambda name, *xs: ctx.op1(f"stablehlo.{name}", list(xs), result_avals=[it])
    c = lambda v: L.splat(ctx, v, it)
    mag = op("and", bits, c(top))
    key = op("select", L.compare(ctx, bits, c(0), "LT", it), op("xor", bits, c(top)), bits)  # (sign-magnitude ->
    key = op("select", L.compare(ctx, mag, c(0), "EQ", it), c(0), key)                         # two's complement)
    key = op("select", L.compare(ctx, mag, c(inf), "GT", it), c(top), key)
    if it.dtype.itemsize < 4:  # (float16, bfloat16: int32 keys, as the host sorts read them)
        wide = it.update(dtype=np.dtype(np.int32))
        return ctx.op1("stablehlo.convert", [key], result_avals=[wide]), wide
    return key, it


@sort_p.def_lowering
def _sort(ctx: L.Ctx, *xs, dimension, num_keys, is_stable):
    if ctx.avals_in[0].shape[dimension] <= 1:  # (nothing to order: IREE 3.13's Vulkan compile of such a sort failed,
        return list(xs)                        # "failed to legalize 'vector.broadcast'")
    ir = L.mlir()
    avals = [a.update(weak_type=False) for a in ctx.avals_in]
    floats = [_dt.kind(a.dtype) == "f" and a.dtype.itemsize < 8 for a in avals]  # (float64: Vulkan has no bitcast;
    # compared as floats, its subnormals tie zero on the CPU)
    # operands: the keys (a float's as `_float_key`), [the position], then the values the keys do not give (the
    # payloads, and every float as its bits); `where[i]` is the operand whose result gives xs[i]
    fresh = [(_float_key if f else _fresh)(ctx, x, a) for x, a, f in zip(xs[:num_keys], avals, floats)]
    where = list(range(len(xs)))
    for i, (x, a, f) in enumerate(zip(xs, avals, floats)):
        if i >= num_keys or f:
            where[i] = len(fresh)
            fresh.append(_fresh(ctx, *_bits(ctx, x, a)) if f else _fresh(ctx, x, a))
    # with every operand a key, equal keys are equal rows, except floats: -0.0 and 0.0 (and NaNs) tie as keys
    # yet differ in bits (an unstable sort of [1, -0.0, 0.0] gave [0.0, -0.0, 1])
    stable = is_stable and (len(fresh) > num_keys or any(_dt.kind(a.dtype) == "f" for a in avals[:num_keys]))
    if stable:  # the position as the last key: the compiled CPU sort was not stable (lax.sort of [2,1,2,0,2,1])
        # float positions (exact below 2^24), copied as every operand is: an integer key followed by a payload
        # crashed Vulkan's iree-compile (lavapipe, IREE 3.13), and so did a bare iota
        pos = avals[0].update(dtype=np.dtype(np.float32 if avals[0].shape[dimension] <= 1 << 24 else np.int32))
        iota = ctx.op1("stablehlo.iota", [], result_avals=[pos], attributes={"iota_dimension": L.i64(dimension)})
        fresh.insert(num_keys, _fresh(ctx, iota, pos))
        where = [w + (w >= num_keys) for w in where]
        num_keys += 1
    ops, scalars = [f[0] for f in fresh], [f[1].update(shape=()) for f in fresh]
    attrs = {"dimension": L.i64(dimension), "is_stable": ir.BoolAttr.get(bool(is_stable)), L.NUM_KEYS: L.i64(num_keys)}
    if stable:  # (a host sort, stable itself, drops it)
        attrs[L.STABLE_KEY] = L.i64(num_keys - 1)
    op = ctx.op("stablehlo.sort", ops, result_avals=[f[1] for f in fresh], regions=1, attributes=attrs)  # (the comparator is NumPy's order: the CPU may sort with NumPy, `host_sorts`)
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
    outs = []
    for w, a, f in zip(where, avals, floats):
        r, have = op.results[w], fresh[w][1]
        if f:  # (the bits, as a signed integer of the float's width)
            it = a.update(dtype=np.dtype(f"i{a.dtype.itemsize}"))
            if have.dtype != it.dtype:
                r = ctx.op1("stablehlo.convert", [r], result_avals=[it])
            r = ctx.op1("stablehlo.bitcast_convert", [r], result_avals=[a])
        elif a.dtype == np.uint32:
            r = ctx.op1("stablehlo.bitcast_convert", [ctx.op1("stablehlo.xor", [r, L.splat(ctx, _FLIP, have)],
                                                             result_avals=[have])], result_avals=[a])
        elif have.dtype != a.dtype:
            r = (ctx.op1("stablehlo.convert", [r], result_avals=[a]) if a.dtype != np.bool_
                 else L.compare(ctx, r, L.splat(ctx, 0, have), "NE", have))
        outs.append(r)
    return outs


# ---------------------------------------------------------------- differentiation rules


def _kept(x: ShapedArray, axes) -> tuple:
    return tuple(i for i in range(x.ndim) if i not in axes)


def _sum_transpose(ct, x, *, axes):
    return broadcast_in_dim(ct, x.aval.shape, _kept(x.aval, axes))


def _extremum_jvp(primals, tangents, *, axes, prim):
    """The tangent at the extreme elements, averaged over ties (as JAX)."""
    (x,), (g,) = primals, tangents
    ans = prim.bind(x, axes=axes)
    av = aval_of(x)
    at = ew.convert_element_type(ew.eq(x, broadcast_in_dim(ans, av.shape, _kept(av, axes))), av.dtype)
    return ans, ew.div(reduce_sum(ew.mul(g, at), axes), reduce_sum(at, axes))


def _last_axis(x, axes):
    """`x` with `axes` moved last and flattened into one: (kept..., n)."""
    av = aval_of(x)
    kept = _kept(av, axes)
    t = transpose(x, kept + tuple(axes))
    return reshape(t, [av.shape[i] for i in kept] + [int(np.prod([av.shape[a] for a in axes], dtype=np.int64))])


def _shift(x, axis: int, s: int, fill):
    """x shifted by `s` along `axis` (towards higher indices), `fill` coming in."""
    av = aval_of(x)
    cfg = [(s, -s, 0) if i == axis else (0, 0, 0) for i in range(av.ndim)]
    return pad(x, _scalar(av, fill), cfg)


def _scalar(av: ShapedArray, value):
    from ..core import Const
    return Const(np.array(value, av.dtype), ShapedArray((), av.dtype, av.weak_type))


def _prod_jvp(primals, tangents, *, axes):
    """d prod = sum_i g_i * (product of the others), with the others as exclusive prefix times suffix
    products (exact where x has zeros)."""
    (x,), (g,) = primals, tangents
    ans = reduce_prod_p.bind(x, axes=axes)
    if not axes:
        return ans, g
    xs, gs = _last_axis(x, axes), _last_axis(g, axes)
    last = aval_of(xs).ndim - 1
    if aval_of(xs).shape[last] == 0:
        return ans, _ad.zeros(aval_of(ans))
    left = _shift(cumprod(xs, last), last, 1, 1)
    right = _shift(cumprod(xs, last, reverse=True), last, -1, 1)
    return ans, reduce_sum(ew.mul(gs, ew.mul(left, right)), (last,))


def _cumulative_jvp(primals, tangents, *, axis, op, reverse):
    (x,), (g,) = primals, tangents
    ans = cumulative_p.bind(x, axis=axis, op=op, reverse=reverse)
    if op == "sum":
        return ans, cumulative_p.bind(g, axis=axis, op=op, reverse=reverse)
    # JAX differentiates its parallel prefix scan (`associative_scan`); the same tree of pairs (value, tangent)
    # here, so that ties share the derivative as in JAX (cummax of [0.5, 0.5, 0.5]); the value itself is `ans`

    def combine(a, b):
        (y, dy), (z, dz) = a, b
        if op == "prod":
            return ew.mul(y, z), ew.add(ew.mul(dy, z), ew.mul(y, dz))
        new = (ew.max if op == "max" else ew.min)(y, z)
        return new, ew.add(ew.mul(dy, ew._balanced_eq(y, new, z)), ew.mul(dz, ew._balanced_eq(z, new, y)))
    return ans, associative_scan(combine, (x, g), reverse=reverse, axis=axis)[1]


def _interleave(a, b, axis):
    """a[0], b[0], a[1], b[1], ... along `axis` (len(a) is len(b) or one more), by padding and adding, as JAX."""
    na, nb = aval_of(a).shape[axis], aval_of(b).shape[axis]
    nd = aval_of(a).ndim
    op = ew.bitwise_or if aval_of(a).dtype == np.bool_ else ew.add
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
    if not -nd <= axis < max(nd, 1):
        raise ValueError(f"associative_scan: axis {axis} is out of bounds for rank {nd}")
    axis %= max(nd, 1)
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


def take_along(x, idx, axis: int):
    """x[..., idx, ...] along `axis` for an index array of x's shape (a gather; its transpose scatters)."""
    from .indexing import gather
    shape = aval_of(x).shape
    idx = ew.convert_element_type(idx, np.int32)
    cols = [idx if d == axis else broadcasted_iota(np.int32, shape, d) for d in range(len(shape))]
    full = concatenate([reshape(c, shape + (1,)) for c in cols], len(shape))
    n = len(shape)
    return gather(x, full, offset_dims=(), collapsed_slice_dims=tuple(range(n)), start_index_map=tuple(range(n)),
                  slice_sizes=(1,) * n)


def _sort_jvp(primals, tangents, *, dimension, num_keys, is_stable):
    shape = aval_of(primals[0]).shape
    # The permutation rides along as one more operand; its dtype differs from every operand's, so that
    # common-subexpression elimination cannot merge it with an iota already sorted (IREE sorts in place
    # and rejects one buffer passed twice).
    used = {aval_of(p).dtype for p in primals}
    dt = next(np.dtype(d) for d in (np.int32, np.uint32, np.int16) if np.dtype(d) not in used)
    outs = sort_p.bind(*primals, broadcasted_iota(dt, shape, dimension), dimension=dimension,
                       num_keys=num_keys, is_stable=is_stable)
    perm = outs[-1]
    return outs[:-1], [None if t is None else take_along(t, perm, dimension) for t in tangents]


reduce_sum_p.def_jvp(lambda primals, tangents, *, axes: (reduce_sum_p.bind(*primals, axes=axes),
                                                         reduce_sum_p.bind(*tangents, axes=axes)))
reduce_sum_p.def_transpose(lambda ct, x, *, axes: [None if ct is None else _sum_transpose(ct, x, axes=axes)])
reduce_max_p.def_jvp(lambda p, t, *, axes: _extremum_jvp(p, t, axes=axes, prim=reduce_max_p))
reduce_min_p.def_jvp(lambda p, t, *, axes: _extremum_jvp(p, t, axes=axes, prim=reduce_min_p))
reduce_prod_p.def_jvp(_prod_jvp)
cumulative_p.def_jvp(_cumulative_jvp)
cumulative_p.def_transpose(lambda ct, x, *, axis, op, reverse: [
    None if ct is None else cumulative_p.bind(ct, axis=axis, op=op, reverse=not reverse)])
sort_p.def_jvp(_sort_jvp)


# ---------------------------------------------------------------- strict wrappers (stagec.lax)


def _reducer(prim: Primitive):
    def op(x, axes: Sequence[int]):
        return prim.bind(x, axes=tuple(int(a) for a in axes))
    op.__name__ = op.__qualname__ = prim.name
    op.__doc__ = f"`{prim.name}` of `x` over `axes`."
    op.prim = prim  # (`numpy._reductions`' eager shortcut binds it itself)
    return op


reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and, reduce_or, reduce_xor = map(_reducer, (
    reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p, reduce_xor_p))


def _ordered(x):
    """Booleans as uint8 (False < True, as JAX's argmax of booleans orders them)."""
    return ew.convert_element_type(x, np.uint8) if aval_of(x).dtype == np.bool_ else x


def argmax(x, axis: int, index_dtype):
    """Index of the largest value along `axis` (the first one on ties; NaN counts as largest)."""
    return argminmax_p.bind(_ordered(x), axis=int(axis), index_dtype=_dt.canonicalize(index_dtype), is_max=True)


def argmin(x, axis: int, index_dtype):
    """Index of the smallest value along `axis` (the first one on ties; NaN counts as smallest)."""
    return argminmax_p.bind(_ordered(x), axis=int(axis), index_dtype=_dt.canonicalize(index_dtype), is_max=False)


def _running(op_name: str):
    def op(x, axis: int = 0, reverse: bool = False):
        return cumulative_p.bind(x, axis=int(axis), op=op_name, reverse=bool(reverse))
    op.__name__ = op.__qualname__ = "cum" + op_name
    op.__doc__ = f"Running {op_name} along `axis` (from the end if `reverse`)."
    return op


cumsum, cumprod, cummax, cummin = map(_running, ("sum", "prod", "max", "min"))


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort `operand` (an array, or a sequence of equal-shaped arrays) along `dimension` by the first `num_keys`,
    lexicographically; NaN sorts last, as in NumPy. Returns an array, or a tuple for a sequence (as JAX)."""
    single = not isinstance(operand, (list, tuple))
    operands = [operand] if single else list(operand)
    nd = aval_of(operands[0]).ndim
    if not -nd <= int(dimension) < max(nd, 1):  # (taken modulo the rank, dimension=2 of a matrix sorted axis 0)
        raise ValueError(f"sort: dimension {dimension} is out of bounds for an array of rank {nd}")
    out = sort_p.bind(*operands, dimension=int(dimension) % (nd or 1), num_keys=int(num_keys),
                      is_stable=bool(is_stable))
    return out[0] if single else tuple(out)


# ---------------------------------------------------------------- batching rules

from ._batch import at_front, axis_size, moveaxis  # noqa: E402


def _reduce_batch(prim: Primitive):
    def rule(args, dims, *, axes):
        (x,), (d,) = args, dims
        return prim.bind(moveaxis(x, d, 0), axes=tuple(a + 1 for a in axes)), 0
    return rule


for _p in (reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p, reduce_xor_p):
    _p.def_batch(_reduce_batch(_p))


@argminmax_p.def_batch
def _argminmax_batch(args, dims, *, axis, index_dtype, is_max):
    (x,), (d,) = args, dims
    return argminmax_p.bind(moveaxis(x, d, 0), axis=axis + 1, index_dtype=index_dtype, is_max=is_max), 0


@cumulative_p.def_batch
def _cumulative_batch(args, dims, *, axis, op, reverse):
    (x,), (d,) = args, dims
    return cumulative_p.bind(x, axis=axis + (axis >= d), op=op, reverse=reverse), d


@sort_p.def_batch
def _sort_batch(args, dims, *, dimension, num_keys, is_stable):
    n = axis_size(args, dims)
    outs = sort_p.bind(*[at_front(x, d, n) for x, d in zip(args, dims)], dimension=dimension + 1,
                       num_keys=num_keys, is_stable=is_stable)
    return outs, [0] * len(outs)


# ---------------------------------------------------------------- NumPy rules (`Primitive.def_host`)

def _zero_signs(x, r, op: str, combine):
    """`r`, a float max or min of `x` by NumPy (which keeps the first of two equal zeros), with the compiled op's
    signed zeros: a zero result is +0.0 for max where any +0.0 went in (else -0.0), -0.0 for min where any -0.0
    went in. `combine(mask)` reduces or accumulates a mask as `r` was made."""
    if op not in ("max", "min") or _dt.kind(r.dtype) != "f" or np.count_nonzero(r) == r.size:
        return r
    zero_in = (x == 0) & (np.signbit(x) == (op == "min"))
    return np.where(r == 0, np.where(combine(zero_in), -0.0 if op == "min" else 0.0, -0.0 if op == "max" else 0.0)
                    .astype(r.dtype), r)


def _reduce_host(ufunc, op: str):
    """(NumPy rule, its `bound` form: `Primitive.def_host`) of a reduction by `ufunc`."""
    initials: dict = {}  # dtype -> `initial` (the reduction of nothing, max's included), found once per dtype
    reduce = ufunc.reduce

    def rule(x, *, axes):
        dtype = x.dtype
        initial = initials.get(dtype)
        if initial is None:
            initial = initials[dtype] = _dt.identity(op, dtype)
        axes = tuple(axes)
        return _zero_signs(x, reduce(x, axes, dtype, None, False, initial), op,
                           lambda m: np.logical_or.reduce(m, axes))

    def bound(avals, params):  # (`rule` for one signature: ~0.5 us less a call on a few elements)
        dtype = np.dtype(avals[0].dtype)
        axes, initial = tuple(params["axes"]), _dt.identity(op, dtype)
        if op in ("max", "min") and _dt.kind(dtype) == "f":
            count, fix = np.count_nonzero, _zero_signs

            def signed(x):
                r = reduce(x, axes, dtype, None, False, initial)
                if count(r) == r.size:  # (no zero result: `_zero_signs`'s own first test, ~0.3 us less a call)
                    return r
                return fix(x, r, op, lambda m: np.logical_or.reduce(m, axes))
            return signed
        return lambda x: reduce(x, axes, dtype, None, False, initial)
    return rule, bound


def _cumulative_host(x, *, axis, op, reverse):
    ufunc = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[op]
    x = np.flip(x, axis) if reverse else x
    if x.dtype in (_dt.float16, _dt.bfloat16) and op in ("sum", "prod"):  # (in float32, as the lowering)
        out = ufunc.accumulate(x.astype(np.float32), axis=axis).astype(x.dtype)
        return np.flip(out, axis) if reverse else out
    out = _zero_signs(x, ufunc.accumulate(x, axis=axis, dtype=x.dtype), op,
                      lambda m: np.logical_or.accumulate(m, axis=axis))
    return np.flip(out, axis) if reverse else out


for _p, _ufunc, _op, _kinds in [(reduce_sum_p, np.add, "sum", "biufc"), (reduce_prod_p, np.multiply, "prod", "iufc"),
                                (reduce_max_p, np.maximum, "max", "biuf"), (reduce_min_p, np.minimum, "min", "biuf"),
                                (reduce_and_p, np.bitwise_and, "and", "biu"), (reduce_or_p, np.bitwise_or, "or", "biu"),
                                (reduce_xor_p, np.bitwise_xor, "xor", "biu")]:
    _rule, _bound = _reduce_host(_ufunc, _op)
    _p.def_host(_rule, of_kinds(_kinds), _bound)
argminmax_p.def_host(lambda x, *, axis, index_dtype, is_max: (np.argmax if is_max else np.argmin)(x, axis)
                     .astype(index_dtype), of_kinds("biuf"))  # (the first NaN or tie, as the compiled op)
cumulative_p.def_host(_cumulative_host, of_kinds("biuf"))


_TINY64 = np.finfo(np.float64).tiny


def _sort_host(*xs, dimension, num_keys, is_stable):
    """The compiled sort's values: NumPy's stable sort, lexicographic on the first `num_keys`, NaN last, -0.0 tying
    0.0, every value's bits kept (the kernel compares floats by their bits, `_float_key`; float64 keys as floats,
    their subnormals as zeros: IREE's CPU kernels flush them)."""
    if xs[0].shape[dimension] <= 1:  # (the lowering returns its operands as they are)
        return list(xs)
    keys = [np.where(np.abs(k) < _TINY64, 0.0, k) if k.dtype == np.float64 else k for k in xs[:num_keys]]
    order = np.argsort(keys[0], axis=dimension, kind="stable") if num_keys == 1 else \
        np.lexsort(keys[::-1], axis=dimension)
    if order.ndim == 1:
        return [x[order] for x in xs]
    # (flat positions once for every operand: NumPy's take_along_axis took ~6 us a call on 4x4)
    idx = order.swapaxes(dimension, -1)
    n = idx.shape[-1]
    flat = (idx + np.arange(0, idx.size, n).reshape(idx.shape[:-1] + (1,))).ravel()
    return [x.swapaxes(dimension, -1).reshape(-1)[flat].reshape(idx.shape).swapaxes(dimension, -1) for x in xs]


# Values along the sorted dimension from which a CPU module's sort calls NumPy (`host-sorts`, with `config.cpu_blas`:
# IREE 3.13's sort compares every pair of a row, jitted sort of 64 float32 27 us, 100 62 us, 127 98 us; the call
# costs ~14 us at any such length; they cross at 44-48, docs/log.md 2026-11-30).
SORT_HOST_ROWS = 48


def _sort_hosts(avals, params) -> bool:
    """Whether the rule gives the kernel's bits: not for an unstable sort of floats or of payloads (tied keys, -0.0
    and 0.0 or NaNs, may come in another order), nor for float64 keys in rows of `SORT_HOST_ROWS` or more (the
    host sort there compares their subnormals)."""
    if not all(_dt.kind(a.dtype) in "biuf" for a in avals):
        return False
    keys = avals[:params["num_keys"]]
    if not params["is_stable"] and (len(avals) > len(keys) or any(_dt.kind(a.dtype) == "f" for a in keys)):
        return False
    return avals[0].shape[params["dimension"]] < SORT_HOST_ROWS or all(a.dtype != np.float64 for a in keys)


sort_p.def_host(_sort_host, _sort_hosts)
