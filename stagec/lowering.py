"""StableHLO emission: one rule per primitive, building ops through the MLIR Python bindings.

`lower_graph(graph)` returns a fresh `ir.Module` (each in its own `ir.Context`, so constants
uniqued in one module never pile up in a long-lived context).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from . import dtypes as _dt
from . import primitives as P
from .core import Graph, Literal, Primitive, ShapedArray

_RULES: dict[Primitive, Callable] = {}


def _ir():
    from iree.compiler import ir  # imported lazily: loading artifacts must not need the compiler
    return ir


def register(*prims: Primitive):
    """Decorator: `rule(ctx, *operands, **params) -> list[ir.Value]` emits StableHLO for `prims`."""
    def deco(fn):
        for p in prims:
            _RULES[p] = fn
        return fn
    return deco


def element_type(dtype: np.dtype):
    ir = _ir()
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return ir.IntegerType.get_signless(1)
    if dtype == _dt.bfloat16:
        return ir.BF16Type.get()
    if _dt.kind(dtype) == "i":
        return ir.IntegerType.get_signless(dtype.itemsize * 8)
    if _dt.kind(dtype) == "u":
        return ir.IntegerType.get_unsigned(dtype.itemsize * 8)
    if _dt.kind(dtype) == "f":
        return {2: ir.F16Type, 4: ir.F32Type, 8: ir.F64Type}[dtype.itemsize].get()
    if _dt.kind(dtype) == "c":
        return ir.ComplexType.get(element_type(np.finfo(dtype).dtype))
    raise TypeError(f"no StableHLO element type for dtype {dtype}")


def tensor_type(aval: ShapedArray):
    return _ir().RankedTensorType.get(list(aval.shape), element_type(aval.dtype))


class Ctx:
    """What an emission rule sees: the avals of the equation's operands and results."""

    def __init__(self, avals_in: Sequence[ShapedArray], avals_out: Sequence[ShapedArray]):
        self.avals_in, self.avals_out = avals_in, avals_out

    def op(self, name: str, operands, result_avals=None, attributes=None, regions: int = 0):
        ir = _ir()
        types = [tensor_type(a) for a in (result_avals if result_avals is not None else self.avals_out)]
        return ir.Operation.create(name, results=types, operands=list(operands),
                                   attributes=attributes or {}, regions=regions)

    def op1(self, name: str, operands, **kw):
        return self.op(name, operands, **kw).result


def constant(value: np.ndarray, aval: ShapedArray):
    """A `stablehlo.constant` holding `value`; stored as a splat when all elements are equal."""
    ir = _ir()
    flat = np.asarray(value, dtype=aval.dtype).reshape(-1)
    if flat.size > 1 and (flat == flat[0]).all():  # NaN never compares equal, so NaN arrays stay dense
        flat = flat[:1]
    ty = tensor_type(aval)
    attr = ir.DenseElementsAttr.get(flat if flat.size == 1 else flat.reshape(aval.shape), type=ty)
    return ir.Operation.create("stablehlo.constant", results=[ty], attributes={"value": attr}).result


def full(value, aval: ShapedArray):
    """A constant of `aval`'s shape filled with `value`."""
    return constant(np.array(value, dtype=aval.dtype), aval)


def i64s(xs) -> object:
    return _ir().DenseI64ArrayAttr.get([int(x) for x in xs])


def i64(x: int):
    ir = _ir()
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(x))


# ---------------------------------------------------------------- rules

_UNARY_OPS = {"neg": "negate", "sign": "sign", "abs": "abs", "floor": "floor", "ceil": "ceil",
              "round": "round_nearest_even", "exp": "exponential", "expm1": "exponential_minus_one",
              "log": "log", "log1p": "log_plus_one", "tanh": "tanh", "logistic": "logistic", "sin": "sine",
              "cos": "cosine", "tan": "tan", "sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt", "not": "not",
              "is_finite": "is_finite"}
_BINARY_OPS = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "rem": "remainder",
               "pow": "power", "max": "maximum", "min": "minimum", "and": "and", "or": "or", "xor": "xor",
               "atan2": "atan2", "shift_left": "shift_left", "shift_right_arithmetic": "shift_right_arithmetic",
               "shift_right_logical": "shift_right_logical"}


def _elementwise(opname: str):
    def rule(ctx: Ctx, *xs):
        if opname in ("add", "multiply") and ctx.avals_in[0].dtype == np.bool_:
            return [ctx.op1("stablehlo." + ("or" if opname == "add" else "and"), xs)]
        if opname in ("maximum", "minimum"):
            return [combine(ctx, opname, *xs, ctx.avals_out[0])]
        return [ctx.op1("stablehlo." + opname, xs)]
    return rule


for _n, _op in _UNARY_OPS.items():
    register(P.UNARY[_n])(_elementwise(_op))
for _n, _op in _BINARY_OPS.items():
    register(P.BINARY[_n])(_elementwise(_op))


def compare(ctx: Ctx, x, y, direction: str, aval: ShapedArray):
    ir = _ir()
    kind = _dt.kind(aval.dtype)
    ctype = "FLOAT" if kind in "fc" else "SIGNED" if kind == "i" else "UNSIGNED"
    out = aval.update(dtype=np.bool_, weak_type=False)
    return ctx.op1("stablehlo.compare", [x, y], result_avals=[out], attributes={
        "comparison_direction": ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>"),
        "compare_type": ir.Attribute.parse(f"#stablehlo<comparison_type {ctype}>")})


for _n in P.COMPARE:
    register(P.COMPARE[_n])(lambda ctx, x, y, _d=_n.upper(): [compare(ctx, x, y, _d, ctx.avals_in[0])])


@register(P.select)
def _select(ctx: Ctx, pred, on_true, on_false):
    return [ctx.op1("stablehlo.select", [pred, on_true, on_false])]


@register(P.convert_element_type)
def _convert(ctx: Ctx, x, *, new_dtype, weak_type):
    src, dst = ctx.avals_in[0], ctx.avals_out[0]
    if src.dtype == dst.dtype:
        return [x]
    if dst.dtype == np.bool_:  # any -> bool is `x != 0`, as NumPy defines it
        return [compare(ctx, x, full(0, src), "NE", src)]
    return [ctx.op1("stablehlo.convert", [x])]


@register(P.broadcast_in_dim)
def _broadcast(ctx: Ctx, x, *, shape, broadcast_dimensions):
    return [ctx.op1("stablehlo.broadcast_in_dim", [x], attributes={"broadcast_dimensions": i64s(broadcast_dimensions)})]


@register(P.reshape)
def _reshape(ctx: Ctx, x, *, new_sizes):
    return [ctx.op1("stablehlo.reshape", [x])]


@register(P.transpose)
def _transpose(ctx: Ctx, x, *, permutation):
    return [ctx.op1("stablehlo.transpose", [x], attributes={"permutation": i64s(permutation)})]


_REDUCE_BODY = {"reduce_sum": "add", "reduce_prod": "multiply", "reduce_max": "maximum",
                "reduce_min": "minimum", "reduce_and": "and", "reduce_or": "or"}


def reduce_op(ctx: Ctx, x, name: str, axes):
    ir = _ir()
    aval = ctx.avals_in[0]
    scalar = aval.update(shape=())
    init = constant(np.array(_dt.identity(name.removeprefix("reduce_"), aval.dtype), dtype=aval.dtype), scalar)
    op = ctx.op("stablehlo.reduce", [x, init], attributes={"dimensions": i64s(axes)}, regions=1)
    st = tensor_type(scalar)
    block = op.regions[0].blocks.append(st, st)
    body = _REDUCE_BODY[name]
    if body in ("add", "multiply") and aval.dtype == np.bool_:
        body = "or" if body == "add" else "and"
    with ir.InsertionPoint(block):
        r = combine(ctx, body, *block.arguments, scalar.update(weak_type=False))
        ir.Operation.create("stablehlo.return", results=[], operands=[r])
    return op.result


for _n in P.REDUCE:
    register(P.REDUCE[_n])(lambda ctx, x, *, axes, _n=_n: [reduce_op(ctx, x, _n, axes)])


@register(P.dot_general)
def _dot_general(ctx: Ctx, lhs, rhs, *, dimension_numbers, preferred_element_type=None):
    ir = _ir()
    (lc, rc), (lb, rb) = dimension_numbers
    if any(ctx.avals_in[0].shape[d] == 0 for d in lc):  # an empty sum; iree-compile crashes (SIGFPE) on it
        return [full(0, ctx.avals_out[0])]
    fmt = lambda xs: "[" + ", ".join(map(str, xs)) + "]"
    dims = ir.Attribute.parse(
        f"#stablehlo.dot<lhs_batching_dimensions = {fmt(lb)}, rhs_batching_dimensions = {fmt(rb)}, "
        f"lhs_contracting_dimensions = {fmt(lc)}, rhs_contracting_dimensions = {fmt(rc)}>")
    return [ctx.op1("stablehlo.dot_general", [lhs, rhs], attributes={"dot_dimension_numbers": dims})]


@register(P.slice_p)
def _slice(ctx: Ctx, x, *, start_indices, limit_indices, strides):
    return [ctx.op1("stablehlo.slice", [x], attributes={
        "start_indices": i64s(start_indices), "limit_indices": i64s(limit_indices), "strides": i64s(strides)})]


@register(P.dynamic_slice)
def _dynamic_slice(ctx: Ctx, x, *starts, slice_sizes):
    return [ctx.op1("stablehlo.dynamic_slice", [x, *starts], attributes={"slice_sizes": i64s(slice_sizes)})]


@register(P.rev)
def _rev(ctx: Ctx, x, *, dimensions):
    aval = ctx.avals_in[0]
    if _dt.kind(aval.dtype) == "u":  # IREE cannot lower an unsigned reverse: reverse the same bits as signed
        s = aval.update(dtype=np.dtype(f"i{aval.dtype.itemsize}"))
        r = _rev(Ctx([s], [s]), ctx.op1("stablehlo.bitcast_convert", [x], result_avals=[s]), dimensions=dimensions)[0]
        return [ctx.op1("stablehlo.bitcast_convert", [r])]
    return [ctx.op1("stablehlo.reverse", [x], attributes={"dimensions": i64s(dimensions)})]


@register(P.iota)
def _iota(ctx: Ctx, *, dtype, shape, dimension):
    return [ctx.op1("stablehlo.iota", [], attributes={"iota_dimension": i64(dimension)})]


@register(P.concatenate)
def _concatenate(ctx: Ctx, *xs, dimension):
    return [ctx.op1("stablehlo.concatenate", xs, attributes={"dimension": i64(dimension)})]


# ---------------------------------------------------------------- graphs


def _is_function_argument(x) -> bool:
    """Whether `x` is an argument of the module's function (a caller's buffer), not a value made inside it."""
    ir = _ir()
    if not isinstance(x, ir.BlockArgument):
        return False
    parent = x.owner.owner  # the block's parent op (an OpView, whose .name may be the symbol name)
    return parent is not None and getattr(parent, "operation", parent).name == "func.func"


@register(P.dynamic_update_slice)
def _dynamic_update_slice(ctx: Ctx, x, update, *starts):
    """IREE 3.13's CPU dynamic_update_slice writes into its operand's buffer in place; when that operand is
    a function argument, the caller's array would change. Then update fresh tensors and select instead."""
    if not _is_function_argument(x):  # e.g. scan's output buffers, which the function creates itself
        return [ctx.op1("stablehlo.dynamic_update_slice", [x, update, *starts])]
    aval, uaval = ctx.avals_in[0].update(weak_type=False), ctx.avals_in[1].update(weak_type=False)
    m_aval = aval.update(dtype=np.int8)
    mask = ctx.op1("stablehlo.dynamic_update_slice", [_splat(ctx, 0, m_aval), _splat(ctx, 1, uaval.update(
        dtype=np.int8)), *starts], result_avals=[m_aval])
    vals = ctx.op1("stablehlo.dynamic_update_slice", [_splat(ctx, 0, aval), update, *starts], result_avals=[aval])
    return [ctx.op1("stablehlo.select", [compare(ctx, mask, _splat(ctx, 0, m_aval), "NE", m_aval), vals, x])]


def emit_graph(graph: Graph, args: Sequence) -> list:
    """Emit `graph`'s equations at the current insertion point, with `args` for its inputs."""
    env: dict[int, object] = {v.id: a for v, a in zip(graph.in_vars, args)}
    read = lambda x: constant(x.value, x.aval) if isinstance(x, Literal) else env[x.id]
    for eqn in graph.eqns:
        rule = _RULES.get(eqn.prim)
        if rule is None:
            raise NotImplementedError(f"no StableHLO emission rule for primitive {eqn.prim.name!r}")
        outs = rule(Ctx([i.aval for i in eqn.inputs], [o.aval for o in eqn.outputs]),
                    *[read(i) for i in eqn.inputs], **eqn.params)
        for v, o in zip(eqn.outputs, outs):
            env[v.id] = o
    return [read(o) for o in graph.outs]


def lower_graph(graph: Graph, module_name: str = "main"):
    """Emit `graph` as a StableHLO module with one public function `main`."""
    ir = _ir()
    from iree.compiler.dialects import func

    ctx = ir.Context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        module.operation.attributes["sym_name"] = ir.StringAttr.get(module_name)
        in_types = [tensor_type(a) for a in graph.in_avals]
        out_types = [tensor_type(a) for a in graph.out_avals]
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get(in_types, out_types))
            block = fn.add_entry_block()
        with ir.InsertionPoint(block):
            func.ReturnOp(emit_graph(graph, list(block.arguments)))
    return module


# ---------------------------------------------------------------- stagec.numpy additions (issue #5)

for _n in ("asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf"):
    register(P.UNARY[_n])(lambda ctx, x, _n=_n: [ctx.op1("chlo." + _n, [x])])
register(P.UNARY["round_afz"])(lambda ctx, x: [ctx.op1("stablehlo.round_nearest_afz", [x])])


@register(P.clamp)
def _clamp(ctx: Ctx, lo, x, hi):
    return [ctx.op1("stablehlo.clamp", [lo, x, hi])]


def _scalar_block(op, avals: Sequence[ShapedArray], region: int = 0):
    """Append the entry block of `op`'s region: one scalar tensor argument per aval."""
    return op.regions[region].blocks.append(*[tensor_type(a.update(shape=())) for a in avals])


def _isnan(ctx: Ctx, x, aval: ShapedArray):
    return compare(ctx, x, x, "NE", aval)


def _bool_op(ctx: Ctx, name: str, *xs, shape: tuple = ()):
    return ctx.op1("stablehlo." + name, xs, result_avals=[ShapedArray(shape, np.bool_)])


def _order(ctx: Ctx, a, b, aval: ShapedArray, direction: str):
    """(a beats b, a ties b) where beating means `direction` ('GT' or 'LT') in NumPy's order for max/min and
    argmax/argmin: NaN beats everything and ties NaN; complex numbers compare by real, then imaginary part."""
    kind, shape = _dt.kind(aval.dtype), aval.shape
    if kind not in "fc":
        return compare(ctx, a, b, direction, aval), compare(ctx, a, b, "EQ", aval)
    bool_ = lambda name, *xs: _bool_op(ctx, name, *xs, shape=shape)
    if kind == "c":
        part = aval.update(dtype=_dt.finfo(aval.dtype).dtype, weak_type=False)
        (ar, ai), (br, bi) = ([ctx.op1(f"stablehlo.{p}", [v], result_avals=[part]) for p in ("real", "imag")]
                              for v in (a, b))
        a_nan = bool_("or", _isnan(ctx, ar, part), _isnan(ctx, ai, part))
        b_nan = bool_("or", _isnan(ctx, br, part), _isnan(ctx, bi, part))
        re_eq = compare(ctx, ar, br, "EQ", part)
        beats = bool_("or", compare(ctx, ar, br, direction, part),
                      bool_("and", re_eq, compare(ctx, ai, bi, direction, part)))
        eq = bool_("and", re_eq, compare(ctx, ai, bi, "EQ", part))
    else:
        a_nan, b_nan = _isnan(ctx, a, aval), _isnan(ctx, b, aval)
        beats, eq = compare(ctx, a, b, direction, aval), compare(ctx, a, b, "EQ", aval)
    b_ok = ctx.op1("stablehlo.not", [b_nan], result_avals=[ShapedArray(shape, np.bool_)])
    beats = bool_("or", bool_("and", beats, b_ok), bool_("and", a_nan, b_ok))
    return beats, bool_("or", eq, bool_("and", a_nan, b_nan))


def combine(ctx: Ctx, body: str, x, y, aval: ShapedArray):
    """`stablehlo.<body>(x, y)` of type `aval`. Complex maximum/minimum compare lexicographically, NaN
    winning, as in NumPy (IREE 3.13 returns wrong values for complex `stablehlo.maximum`)."""
    if body not in ("maximum", "minimum") or _dt.kind(aval.dtype) != "c":
        return ctx.op1("stablehlo." + body, [x, y], result_avals=[aval])
    beats, same = _order(ctx, x, y, aval, "GT" if body == "maximum" else "LT")
    pick_x = _bool_op(ctx, "or", beats, same, shape=aval.shape)
    return ctx.op1("stablehlo.select", [pick_x, x, y], result_avals=[aval])


def _nan_last_lt(ctx: Ctx, a, b, aval: ShapedArray):
    """a < b in NumPy's sort order: NaN after everything, every NaN equal (a strict weak order)."""
    lt = compare(ctx, a, b, "LT", aval)
    if _dt.kind(aval.dtype) != "f":
        return lt
    a_nan, b_nan = _isnan(ctx, a, aval), _isnan(ctx, b, aval)
    not_a_nan = ctx.op1("stablehlo.not", [a_nan], result_avals=[ShapedArray((), np.bool_)])
    return _bool_op(ctx, "or", lt, _bool_op(ctx, "and", not_a_nan, b_nan))


@register(P.argminmax)
def _argminmax(ctx: Ctx, x, *, axis, index_dtype, is_max):
    ir = _ir()
    aval, out = ctx.avals_in[0], ctx.avals_out[0]
    s_val, s_idx = aval.update(shape=(), weak_type=False), ShapedArray((), index_dtype)
    idx = ctx.op1("stablehlo.iota", [], result_avals=[ShapedArray(aval.shape, index_dtype)],
                  attributes={"iota_dimension": i64(axis)})
    init_v = constant(np.array(_dt.identity("max" if is_max else "min", aval.dtype), aval.dtype), s_val)
    init_i = constant(np.array(np.iinfo(index_dtype).max, index_dtype), s_idx)
    op = ctx.op("stablehlo.reduce", [x, idx, init_v, init_i], result_avals=[aval.update(shape=out.shape), out],
                attributes={"dimensions": i64s([axis])}, regions=1)
    block = _scalar_block(op, [s_val, s_idx, s_val, s_idx])
    with ir.InsertionPoint(block):
        av, ai, bv, bi = block.arguments
        # Total order: NaN is the most extreme value (NumPy returns the first NaN); ties go to the lower index.
        better, same = _order(ctx, av, bv, s_val, "GT" if is_max else "LT")
        first = _bool_op(ctx, "and", same, compare(ctx, ai, bi, "LT", s_idx))
        pick_a = _bool_op(ctx, "or", better, first)
        rv = ctx.op1("stablehlo.select", [pick_a, av, bv], result_avals=[s_val])
        ri = ctx.op1("stablehlo.select", [pick_a, ai, bi], result_avals=[s_idx])
        ir.Operation.create("stablehlo.return", results=[], operands=[rv, ri])
    return [op.results[1]]


def _combiner(name: str, dtype: np.dtype) -> str:
    body = {"sum": "add", "add": "add", "prod": "multiply", "mul": "multiply", "max": "maximum",
            "min": "minimum"}[name]
    if dtype == np.bool_ and body in ("add", "multiply"):
        body = "or" if body == "add" else "and"
    return body


@register(P.cumulative)
def _cumulative(ctx: Ctx, x, *, axis, op, reverse):
    """A running reduction: reduce_window over a window as long as the axis, padded on one side."""
    ir = _ir()
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
        inner = Ctx([s_aval], [s_aval])
        xs = ctx.op1("stablehlo.convert", [x], result_avals=[s_aval])
        (r,) = _cumulative(inner, xs, axis=axis, op=op, reverse=reverse)
        return [ctx.op1("stablehlo.convert", [r])]
    s = aval.update(shape=(), weak_type=False)
    n = aval.shape[axis]
    init = constant(np.array(_dt.identity(op, aval.dtype), aval.dtype), s)
    window = [max(n, 1) if i == axis else 1 for i in range(aval.ndim)]  # a window of 0 is invalid
    pads = np.zeros((aval.ndim, 2), np.int64)
    pads[axis] = (0, max(n - 1, 0)) if reverse else (max(n - 1, 0), 0)
    padding = ir.DenseIntElementsAttr.get(pads, type=ir.RankedTensorType.get([aval.ndim, 2],
                                                                            ir.IntegerType.get_signless(64)))
    red = ctx.op("stablehlo.reduce_window", [x, init], attributes={
        "window_dimensions": i64s(window), "window_strides": i64s([1] * aval.ndim), "padding": padding}, regions=1)
    block = _scalar_block(red, [s, s])
    with ir.InsertionPoint(block):
        r = combine(ctx, _combiner(op, aval.dtype), *block.arguments, s)
        ir.Operation.create("stablehlo.return", results=[], operands=[r])
    return [red.result]


_WIDER = {"b": np.int8, "i1": np.int64, "i2": np.int64, "i4": np.int64, "u1": np.int64, "u2": np.int64,
          "u4": np.int64, "f2": np.float32, "f4": np.float64}


def _fresh(ctx: Ctx, x, aval: ShapedArray):
    """`x` as a new tensor, widened where a wider type holds it exactly (returns the value and its aval).

    IREE 3.13's CPU sort works in place on its operand buffers even when those are function arguments,
    i.e. the caller's arrays; a conversion is a real copy no canonicalization can remove. 64-bit operands
    (x64 only) get select(x == 1, 1, x), which is not guaranteed to survive folding."""
    key = "b" if aval.dtype == np.bool_ else f"{_dt.kind(aval.dtype)}{aval.dtype.itemsize}"
    if key in _WIDER:
        wide = aval.update(dtype=np.dtype(_WIDER[key]), weak_type=False)
        return ctx.op1("stablehlo.convert", [x], result_avals=[wide]), wide
    one = _splat(ctx, 1, aval)
    return ctx.op1("stablehlo.select", [compare(ctx, x, one, "EQ", aval), one, x], result_avals=[aval]), aval


@register(P.sort)
def _sort(ctx: Ctx, *xs, dimension, num_keys, is_stable):
    ir = _ir()
    fresh = [_fresh(ctx, x, a.update(weak_type=False)) for x, a in zip(xs, ctx.avals_in)]
    xs, scalars = [f[0] for f in fresh], [f[1].update(shape=()) for f in fresh]
    op = ctx.op("stablehlo.sort", xs, result_avals=[f[1] for f in fresh],
                attributes={"dimension": i64(dimension), "is_stable": ir.BoolAttr.get(bool(is_stable))}, regions=1)
    block = _scalar_block(op, [s for s in scalars for _ in (0, 1)])
    args = list(block.arguments)
    with ir.InsertionPoint(block):
        result = None
        for k in reversed(range(num_keys)):  # lexicographic: key k decides only where keys < k tie
            a, b, s = args[2 * k], args[2 * k + 1], scalars[k]
            lt = _nan_last_lt(ctx, a, b, s)
            if result is None:
                result = lt
            else:
                gt = _nan_last_lt(ctx, b, a, s)
                tie = ctx.op1("stablehlo.not", [_bool_op(ctx, "or", lt, gt)], result_avals=[ShapedArray((), np.bool_)])
                result = _bool_op(ctx, "or", lt, _bool_op(ctx, "and", tie, result))
        ir.Operation.create("stablehlo.return", results=[], operands=[result])
    return [r if f[1].dtype == a.dtype else (ctx.op1("stablehlo.convert", [r], result_avals=[a])
                                             if a.dtype != np.bool_ else compare(ctx, r, _splat(ctx, 0, f[1]), "NE", f[1]))
            for r, f, a in zip(op.results, fresh, ctx.avals_out)]


@register(P.pad)
def _pad(ctx: Ctx, x, value, *, low, high, interior):
    return [ctx.op1("stablehlo.pad", [x, value], attributes={
        "edge_padding_low": i64s(low), "edge_padding_high": i64s(high), "interior_padding": i64s(interior)})]


def _dims(xs) -> str:
    return "[" + ", ".join(map(str, xs)) + "]"


@register(P.gather)
def _gather(ctx: Ctx, x, idx, *, offset_dims, collapsed_slice_dims, start_index_map, slice_sizes):
    ir = _ir()
    dn = ir.Attribute.parse(
        f"#stablehlo.gather<offset_dims = {_dims(offset_dims)}, collapsed_slice_dims = {_dims(collapsed_slice_dims)}, "
        f"start_index_map = {_dims(start_index_map)}, index_vector_dim = {ctx.avals_in[1].ndim - 1}>")
    return [ctx.op1("stablehlo.gather", [x, idx], attributes={
        "dimension_numbers": dn, "slice_sizes": i64s(slice_sizes), "indices_are_sorted": ir.BoolAttr.get(False)})]


def _raw_scatter(ctx: Ctx, x, idx, upd, aval: ShapedArray, dn, mode: str):
    ir = _ir()
    op = ctx.op("stablehlo.scatter", [x, idx, upd], result_avals=[aval], attributes={
        "scatter_dimension_numbers": dn, "indices_are_sorted": ir.BoolAttr.get(False),
        "unique_indices": ir.BoolAttr.get(False)}, regions=1)
    s = aval.update(shape=(), weak_type=False)
    block = _scalar_block(op, [s, s])
    with ir.InsertionPoint(block):
        old, new = block.arguments
        r = new if mode == "set" else combine(ctx, _combiner(mode, s.dtype), old, new, s)
        ir.Operation.create("stablehlo.return", results=[], operands=[r])
    return op.result


def _splat(ctx: Ctx, value, aval: ShapedArray):
    scalar = constant(np.array(value, aval.dtype), aval.update(shape=()))
    return ctx.op1("stablehlo.broadcast_in_dim", [scalar], result_avals=[aval],
                   attributes={"broadcast_dimensions": i64s([])})


@register(P.scatter)
def _scatter(ctx: Ctx, x, idx, upd, *, update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims, mode):
    """IREE 3.13's CPU scatter writes into its operand's buffer even when that is a function argument (the
    caller's array), so never scatter into `x`: scatter into a fresh neutral-element tensor and combine."""
    ir = _ir()
    dn = ir.Attribute.parse(
        f"#stablehlo.scatter<update_window_dims = {_dims(update_window_dims)}, inserted_window_dims = "
        f"{_dims(inserted_window_dims)}, scatter_dims_to_operand_dims = {_dims(scatter_dims_to_operand_dims)}, "
        f"index_vector_dim = {ctx.avals_in[1].ndim - 1}>")
    aval, uaval = ctx.avals_in[0].update(weak_type=False), ctx.avals_in[2]
    if mode == "set":
        m_aval, mu_aval = aval.update(dtype=np.int8), uaval.update(dtype=np.int8, weak_type=False)
        mask = _raw_scatter(ctx, _splat(ctx, 0, m_aval), idx, _splat(ctx, 1, mu_aval), m_aval, dn, "set")
        vals = _raw_scatter(ctx, _splat(ctx, 0, aval), idx, upd, aval, dn, "set")
        pred = compare(ctx, mask, _splat(ctx, 0, m_aval), "NE", m_aval)
        return [ctx.op1("stablehlo.select", [pred, vals, x])]
    base = _splat(ctx, _dt.identity({"add": "sum", "mul": "prod"}.get(mode, mode), aval.dtype), aval)
    s = _raw_scatter(ctx, base, idx, upd, aval, dn, mode)
    return [combine(ctx, _combiner(mode, aval.dtype), x, s, aval)]


register(P.real_p)(lambda ctx, x: [ctx.op1("stablehlo.real", [x])])
register(P.imag_p)(lambda ctx, x: [ctx.op1("stablehlo.imag", [x])])
register(P.complex_p)(lambda ctx, re, im: [ctx.op1("stablehlo.complex", [re, im])])
