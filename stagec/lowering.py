"""StableHLO emission machinery: types, constants, the `Ctx` a rule sees, and `lower_graph`.

Each primitive's emission rule lives beside its definition in `stagec.primitives` (`prim.def_lowering`);
this module only walks a graph and calls them. `lower_graph(graph)` returns a fresh `ir.Module` (each in
its own `ir.Context`, so constants uniqued in one module never pile up in a long-lived context). Ops carry
the user's source location recorded while tracing (`Eqn.loc`), printed with debug info.
"""
from __future__ import annotations

import threading
from typing import Callable, NamedTuple, Sequence

import numpy as np

from . import dtypes as _dt
from .core import Graph, Literal, ShapedArray


DYNAMIC = -1  # a dimension known only at run time, in the avals of a shape-polymorphic module


def mlir():
    from iree.compiler import ir  # imported lazily: loading artifacts must not need the compiler
    return ir


# The dialects whose ops stagec builds: `ir.Operation.create` needs its dialect loaded, while parsing loads any
# other registered one when it meets it. A Context that loads every IREE dialect (its default) costs ~25 ms.
DIALECTS = ("builtin", "func", "stablehlo", "chlo", "arith", "math", "tensor", "linalg")


def context():
    """A fresh `ir.Context` with `DIALECTS` loaded, single-threaded (a module holds one function or a few: a thread
    pool per context only costs its start). Loaded by descriptor: `ctx.dialects[name]` (what the Context's
    `load_on_create_dialects` does) also imports each dialect's Python module, linalg's ~80 ms (its named-op DSL)
    in the first compile of a process."""
    ctx = mlir().Context(load_on_create_dialects=())
    for name in DIALECTS:
        ctx.get_dialect_descriptor(name)
    ctx.enable_multithreading(False)
    return ctx


def element_type(dtype: np.dtype):
    ir = mlir()
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
    """The ranked tensor type of `aval`; a negative dimension (`DYNAMIC`) is dynamic (`?`)."""
    ir = mlir()
    dims = [d if d >= 0 else ir.ShapedType.get_dynamic_size() for d in aval.shape]
    return ir.RankedTensorType.get(dims, element_type(aval.dtype))


class Ctx:
    """What an emission rule sees: the avals of the equation's operands and results."""

    def __init__(self, avals_in: Sequence[ShapedArray], avals_out: Sequence[ShapedArray]):
        self.avals_in, self.avals_out = avals_in, avals_out

    def op(self, name: str, operands, result_avals=None, attributes=None, regions: int = 0):
        ir = mlir()
        types = [tensor_type(a) for a in (result_avals if result_avals is not None else self.avals_out)]
        return ir.Operation.create(name, results=types, operands=list(operands),
                                   attributes=attributes or {}, regions=regions)

    def op1(self, name: str, operands, **kw):
        return self.op(name, operands, **kw).result


def constant(value: np.ndarray, aval: ShapedArray):
    """A `stablehlo.constant` holding `value`; stored as a splat when all elements are equal."""
    ir = mlir()
    flat = np.ascontiguousarray(np.asarray(value, dtype=aval.dtype).reshape(-1))  # reshape may keep a stride
    if flat.size > 1 and (flat == flat[0]).all():  # NaN never compares equal, so NaN arrays stay dense
        flat = flat[:1]
    ty = tensor_type(aval)
    attr = ir.DenseElementsAttr.get(flat if flat.size == 1 else flat.reshape(aval.shape), type=ty)
    return ir.Operation.create("stablehlo.constant", results=[ty], attributes={"value": attr}).result


def full(value, aval: ShapedArray):
    """A constant of `aval`'s shape filled with `value`."""
    return constant(np.array(value, dtype=aval.dtype), aval)


def fill(ctx: Ctx, value, like, aval: ShapedArray):
    """A tensor of `aval` filled with `value`, where `like` is a value of type `aval`: a constant, or where
    `aval` has dynamic dimensions (a shape-polymorphic kernel) a scalar broadcast to `like`'s run-time shape."""
    if DYNAMIC not in aval.shape:
        return full(value, aval)
    return broadcast_like(ctx, constant(np.array(value, aval.dtype), aval.update(shape=())), like, aval, aval)


def broadcast_like(ctx: Ctx, x, like, like_aval: ShapedArray, aval: ShapedArray, dims=(), x_aval=None,
                   like_dims=None):
    """`x` (0-d, or of `x_aval` with its dimensions at `dims`, as `broadcast_in_dim`) broadcast to `aval`, whose
    dimensions are `like`'s (of `like_aval`) at `like_dims` (-1: a 1; None: all of them): their run-time sizes where
    dynamic."""
    if DYNAMIC not in aval.shape:
        return ctx.op1("stablehlo.broadcast_in_dim", [x], result_avals=[aval],
                       attributes={"broadcast_dimensions": i64s(dims)})
    shape = _shape_of(ctx, [(like, like_aval, d) if d >= 0 else (None, None, 1)
                            for d in (range(aval.ndim) if like_dims is None else like_dims)])
    return _dynamic_broadcast(ctx, x, x_aval.shape if dims else (), shape, dims, aval)


def _dynamic_broadcast(ctx: Ctx, x, xs: tuple, shape, dims, aval: ShapedArray):
    """`stablehlo.dynamic_broadcast_in_dim` of `x` (of shape `xs`) to run-time `shape`: each operand dimension known
    to stretch (a static 1 to a larger one) or not (IREE 3.13 legalizes no other non-scalar one)."""
    return ctx.op1("stablehlo.dynamic_broadcast_in_dim", [x, shape], result_avals=[aval], attributes={
        "broadcast_dimensions": i64s(dims),
        "known_expanding_dimensions": i64s([i for i, d in enumerate(dims) if xs[i] == 1 and aval.shape[d] != 1]),
        "known_nonexpanding_dimensions": i64s([i for i, d in enumerate(dims) if xs[i] != 1 or aval.shape[d] == 1])})


def _shape_of(ctx: Ctx, dims: list):
    """A 1-d int32 tensor of run-time sizes: per entry (value, its aval, dimension), or (None, None, n) for n."""
    i32, one = ShapedArray((), np.dtype(np.int32)), ShapedArray((1,), np.dtype(np.int32))
    sizes = []
    for v, av, d in dims:
        if v is None:
            sizes.append(constant(np.array([d], np.int32), one))
            continue
        if av.dtype.kind == "u":  # (IREE makes unsigned tensors signless but not a `tensor.dim` of one: read a view)
            v = ctx.op1("stablehlo.bitcast_convert", [v], result_avals=[av.update(dtype=np.dtype(f"i{av.dtype.itemsize}"))])
        sizes.append(ctx.op1("stablehlo.reshape", [ctx.op1("stablehlo.get_dimension_size", [v], result_avals=[i32],
                                                           attributes={"dimension": i64(d)})], result_avals=[one]))
    return ctx.op1("stablehlo.concatenate", sizes, result_avals=[ShapedArray((len(dims),), np.dtype(np.int32))],
                   attributes={"dimension": i64(0)})


def i64s(xs) -> object:
    return mlir().DenseI64ArrayAttr.get([int(x) for x in xs])


def i64(x: int):
    ir = mlir()
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(x))


# ---------------------------------------------------------------- shared pieces of rules


def compare(ctx: Ctx, x, y, direction: str, aval: ShapedArray):
    ir = mlir()
    kind = _dt.kind(aval.dtype)
    ctype = "FLOAT" if kind in "fc" else "SIGNED" if kind == "i" else "UNSIGNED"
    out = aval.update(dtype=np.bool_, weak_type=False)
    return ctx.op1("stablehlo.compare", [x, y], result_avals=[out], attributes={
        "comparison_direction": ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>"),
        "compare_type": ir.Attribute.parse(f"#stablehlo<comparison_type {ctype}>")})



_REDUCE_BODY = {"reduce_sum": "add", "reduce_prod": "multiply", "reduce_max": "maximum",
                "reduce_min": "minimum", "reduce_and": "and", "reduce_or": "or", "reduce_xor": "xor"}


def reduce_op(ctx: Ctx, x, name: str, axes):
    ir = mlir()
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



def scalar_block(op, avals: Sequence[ShapedArray], region: int = 0):
    """Append the entry block of `op`'s region: one scalar tensor argument per aval."""
    return op.regions[region].blocks.append(*[tensor_type(a.update(shape=())) for a in avals])


def isnan(ctx: Ctx, x, aval: ShapedArray):
    return compare(ctx, x, x, "NE", aval)


def bool_op(ctx: Ctx, name: str, *xs, shape: tuple = ()):
    return ctx.op1("stablehlo." + name, xs, result_avals=[ShapedArray(shape, np.bool_)])


def order(ctx: Ctx, a, b, aval: ShapedArray, direction: str):
    """(a beats b, a ties b) where beating means `direction` ('GT' or 'LT') in NumPy's order for max/min and
    argmax/argmin: NaN beats everything and ties NaN; complex numbers compare by real, then imaginary part."""
    kind, shape = _dt.kind(aval.dtype), aval.shape
    if kind not in "fc":
        return compare(ctx, a, b, direction, aval), compare(ctx, a, b, "EQ", aval)
    bool_ = lambda name, *xs: bool_op(ctx, name, *xs, shape=shape)
    if kind == "c":
        part = aval.update(dtype=_dt.finfo(aval.dtype).dtype, weak_type=False)
        (ar, ai), (br, bi) = ([ctx.op1(f"stablehlo.{p}", [v], result_avals=[part]) for p in ("real", "imag")]
                              for v in (a, b))
        a_nan = bool_("or", isnan(ctx, ar, part), isnan(ctx, ai, part))
        b_nan = bool_("or", isnan(ctx, br, part), isnan(ctx, bi, part))
        re_eq = compare(ctx, ar, br, "EQ", part)
        beats = bool_("or", compare(ctx, ar, br, direction, part),
                      bool_("and", re_eq, compare(ctx, ai, bi, direction, part)))
        eq = bool_("and", re_eq, compare(ctx, ai, bi, "EQ", part))
    else:
        a_nan, b_nan = isnan(ctx, a, aval), isnan(ctx, b, aval)
        beats, eq = compare(ctx, a, b, direction, aval), compare(ctx, a, b, "EQ", aval)
    b_ok = ctx.op1("stablehlo.not", [b_nan], result_avals=[ShapedArray(shape, np.bool_)])
    beats = bool_("or", bool_("and", beats, b_ok), bool_("and", a_nan, b_ok))
    return beats, bool_("or", eq, bool_("and", a_nan, b_nan))


def combine(ctx: Ctx, body: str, x, y, aval: ShapedArray):
    """`stablehlo.<body>(x, y)` of type `aval`. Complex maximum/minimum compare lexicographically, NaN
    winning, as in NumPy (IREE 3.13 returns wrong values for complex `stablehlo.maximum`)."""
    if body not in ("maximum", "minimum") or _dt.kind(aval.dtype) != "c":
        return ctx.op1("stablehlo." + body, [x, y], result_avals=[aval])
    beats, same = order(ctx, x, y, aval, "GT" if body == "maximum" else "LT")
    pick_x = bool_op(ctx, "or", beats, same, shape=aval.shape)
    return ctx.op1("stablehlo.select", [pick_x, x, y], result_avals=[aval])


# An attribute of a `stablehlo.sort` whose comparator is `nan_last_lt` over its first operands, lexicographic:
# how many (`sort_p`'s lowering sets it; `legalize.host_sorts` reads it).
NUM_KEYS = "stagec.num_keys"
STABLE_KEY = "stagec.stable_key"  # a sort's operand that is only the position, its last key (a stable sort anywhere)


def nan_last_lt(ctx: Ctx, a, b, aval: ShapedArray):
    """a < b in NumPy's sort order: NaN after everything, every NaN equal (a strict weak order)."""
    lt = compare(ctx, a, b, "LT", aval)
    if _dt.kind(aval.dtype) != "f":
        return lt
    a_nan, b_nan = isnan(ctx, a, aval), isnan(ctx, b, aval)
    not_a_nan = ctx.op1("stablehlo.not", [a_nan], result_avals=[ShapedArray((), np.bool_)])
    return bool_op(ctx, "or", lt, bool_op(ctx, "and", not_a_nan, b_nan))


def combiner(name: str, dtype: np.dtype) -> str:
    body = {"sum": "add", "add": "add", "prod": "multiply", "mul": "multiply", "max": "maximum",
            "min": "minimum"}[name]
    if dtype == np.bool_ and body in ("add", "multiply"):
        body = "or" if body == "add" else "and"
    return body


def splat(ctx: Ctx, value, aval: ShapedArray):
    scalar = constant(np.array(value, aval.dtype), aval.update(shape=()))
    return ctx.op1("stablehlo.broadcast_in_dim", [scalar], result_avals=[aval],
                   attributes={"broadcast_dimensions": i64s([])})


def dims(xs) -> str:
    return "[" + ", ".join(map(str, xs)) + "]"


# ---------------------------------------------------------------- graphs


def is_function_argument(x) -> bool:
    """Whether `x` is an argument of the module's function (a caller's buffer), not a value made inside it."""
    ir = mlir()
    if not isinstance(x, ir.BlockArgument):
        return False
    parent = x.owner.owner  # the block's parent op (an OpView, whose .name may be the symbol name)
    return parent is not None and getattr(parent, "operation", parent).name == "func.func"


def emit_graph(graph: Graph, args: Sequence) -> list:
    """Emit `graph`'s equations at the current insertion point, with `args` for its inputs."""
    env: dict[int, object] = {v.id: a for v, a in zip(graph.in_vars, args)}
    read = lambda x: constant(x.value, x.aval) if isinstance(x, Literal) else env[x.id]
    ir = mlir()
    for eqn in graph.eqns:
        rule = eqn.prim.lowering
        if rule is None:
            raise NotImplementedError(f"no StableHLO emission rule for primitive {eqn.prim.name!r}")
        loc = ir.Location.file(*eqn.loc, 0) if eqn.loc else ir.Location.unknown()
        with loc:
            outs = rule(Ctx([i.aval for i in eqn.inputs], [o.aval for o in eqn.outputs]),
                        *[read(i) for i in eqn.inputs], **eqn.params)
        for v, o in zip(eqn.outputs, outs):
            env[v.id] = o
    return [read(o) for o in graph.outs]


class HostCall(NamedTuple):
    """A Python function the module calls: imported as `HOST_MODULE.name` with this calling convention.

    With `token`, the call also takes and returns an effect token (a `tensor<i1>` after its arguments and
    results, passed through by the runtime, never seen by `fn`): side effects chained by data, which IREE
    keeps in order (without it IREE moved a print in a loop body after a branch holding another)."""
    name: str
    fn: Callable
    in_avals: tuple
    out_avals: tuple
    token: bool = False

    @property
    def cconv(self) -> str:
        """IREE's VM calling convention: one ref per buffer view in and out ("0rr_r", "0r_v")."""
        t = "r" if self.token else ""
        return "0" + ("r" * len(self.in_avals) + t or "v") + "_" + ("r" * len(self.out_avals) + t or "v")


HOST_MODULE = "stagec_host"

# The host modules' ABI: the Python VM modules a compiled module may import (`HOST_MODULE`'s callbacks; the CPU's
# offloads, `stagec.passes.legalize`: NumPy's BLAS and sort), their symbols and argument conventions. An artifact
# records `HOST_ABI` beside the modules it imports; a change to any of these raises it.
HOST_ABI = 4  # (3: the LAPACK module's `det_<k>` and `potrf_sym_<k>`; 4: its `gesdd*_<k>` and `geqrf*_<k>`)
BLAS_MODULE = "stagec_blas"  # `dot_general_<k>(lhs, rhs, 4 x packed dims)`, `dot_pair_<k>` (two products)
BLAS_IMPORTS = 32  # import symbols it exports: one per distinct operand and result types in a module
BLAS_TYPES = ("f32", "f64")
SORT_MODULE = "stagec_sort"  # `sort<n>_<k>(operands..., dimension, num_keys)`
SORT_OPERANDS, SORT_IMPORTS = 8, 8  # it sorts 1-8 arrays together (a float key is two: `_float_key`); 8 symbols per count (one per operand types)
SORT_KEY_TYPES = ("f32", "f64", "i8", "i32", "i64")  # what `sort_p`'s lowering leaves keys as (signed; bool as i8)
LAPACK_MODULE = "stagec_lapack"  # `getrf_<k>(a) -> (lu, perm, swaps)`, `getrs_<k>(lu, perm, b) -> x`, ... (`NAMED`)
LAPACK_IMPORTS = 16  # symbols of each: one per distinct operand types in a module
LAPACK_TYPES = ("f32", "f64", "complex<f32>", "complex<f64>")
# Which of those calls go to the host, by shape only (`host-lapack`, and eager calls that call the host directly:
# `numpy.linalg`): at most `LAPACK_BATCH_PER_ORDER` x n matrices of order n (the host takes one matrix at a time,
# ~3-20 us each at n = 4-8, where the loop takes all of a batch in each of its steps), and for Cholesky (whose loop
# is short: 26 us at 4x4, the call 42) an order of at least `POTRF_MIN_ORDER` (jit CPU time, float32, 2026-11-30:
# inv 4x4 b=8 41 vs 86 us, b=16 64 vs 85, b=32 107 vs 97; eigh 4x4 b=1 44 vs 85, b=16 239 vs 126; eigh 8x8 b=8 183
# vs 307, b=64 1101 vs 585; cholesky 8x8 b=1 40 vs 49, b=4 51 vs 49, b=16 140 vs 53; 16x16 b=16 95 vs 119;
# docs/linalg.md).
LAPACK_BATCH_PER_ORDER, POTRF_BATCH_PER_ORDER, POTRF_MIN_ORDER = 2, 0.5, 8
LAPACK_MAX_BATCH = 64  # (and never more than this many)


def lapack_offloaded(kind: str, n: int, batch: int) -> bool:
    """Whether a named call of `kind` (`passes.lapack.HOST_LAPACK`'s values) on `batch` matrices of order `n` calls
    LAPACK on the host (the rule above)."""
    if kind in ("potrf", "potrf_sym"):
        return n >= POTRF_MIN_ORDER and 0 < batch <= max(1, POTRF_BATCH_PER_ORDER * n)
    return n > 0 and 0 < batch <= min(LAPACK_MAX_BATCH, LAPACK_BATCH_PER_ORDER * n)


HOST_MODULES = (HOST_MODULE, BLAS_MODULE, SORT_MODULE, LAPACK_MODULE)
# The attribute of a private function emitted for a named call (`stagec.named`): its name, which a target's pass may
# answer with a host call (`host-lapack`: "lapack.getrf"); `inline-calls` inlines the others.
NAMED = "stagec.named"


def pack_dims(dims: Sequence[int]) -> int:
    """Dimension indices (each below 15, at most 15) as one integer: 4 bits each, index + 1, first lowest."""
    return sum((d + 1) << (4 * i) for i, d in enumerate(dims))


def unpack_dims(packed: int) -> list[int]:
    dims = []
    while packed:
        dims.append((packed & 15) - 1)
        packed >>= 4
    return dims
_lowering = threading.local()


def import_host_function(fn: Callable, label: str, in_avals: Sequence[ShapedArray],
                         out_avals: Sequence[ShapedArray], token: bool = False) -> str:
    """Declare a host (Python) function in the module being lowered; returns the symbol to `func.call`.

    The runtime links a Python VM module named `HOST_MODULE` that exports it (`HostCall`)."""
    ir = mlir()
    module, calls = getattr(_lowering, "module", None), getattr(_lowering, "host_calls", None)
    if module is None or calls is None:
        raise NotImplementedError("host callbacks need the module's host calls collected (lower_graph(host_calls=[]))")
    safe = "".join(c if c.isalnum() or c == "_" else "_" for c in label)[:40] or "callback"
    call = HostCall(f"{safe}_{len(calls)}", fn, tuple(in_avals), tuple(out_avals), token)
    calls.append(call)
    tok = [ir.RankedTensorType.get([], ir.IntegerType.get_signless(1))] if token else []
    fn_type = ir.FunctionType.get([tensor_type(a) for a in in_avals] + tok, [tensor_type(a) for a in out_avals] + tok)
    with ir.InsertionPoint.at_block_begin(module.body), ir.Location.unknown():
        ir.Operation.create("func.func", attributes={
            "sym_name": ir.StringAttr.get(f"{HOST_MODULE}.{call.name}"),
            "function_type": ir.TypeAttr.get(fn_type), "sym_visibility": ir.StringAttr.get("private")}, regions=1)
    return f"{HOST_MODULE}.{call.name}"


def named_function(name: str, graph: Graph) -> str:
    """Declare a private function of the module being lowered whose body is `graph`, marked `NAMED` = `name` (one
    per distinct graph); returns its symbol, to `func.call`."""
    ir = mlir()
    module, done = _lowering.module, _lowering.named
    sym = done.get(graph)
    if sym is None:
        sym = done[graph] = f"{name.replace('.', '_')}_{len(done)}"
        fn_type = ir.FunctionType.get([tensor_type(a) for a in graph.in_avals],
                                      [tensor_type(a) for a in graph.out_avals])
        with ir.InsertionPoint.at_block_begin(module.body), ir.Location.unknown():
            fn = ir.Operation.create("func.func", attributes={
                "sym_name": ir.StringAttr.get(sym), "function_type": ir.TypeAttr.get(fn_type),
                "sym_visibility": ir.StringAttr.get("private"), NAMED: ir.StringAttr.get(name)}, regions=1)
            block = fn.regions[0].blocks.append(*fn_type.inputs)
        with ir.InsertionPoint(block), ir.Location.unknown():
            ir.Operation.create("func.return", operands=emit_graph(graph, list(block.arguments)))
    return sym


def named_calls(module) -> bool:
    """Whether `module` holds a named function (`named_function`)."""
    return any(NAMED in op.attributes for op in module.body.operations if op.operation.name == "func.func")


def lower_function(body: Callable, in_avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray],
                   module_name: str = "main"):
    """A fresh module with one public function `main(in_avals) -> out_avals`, whose ops `body(*arguments)`
    emits (returning the results)."""
    ir = mlir()
    from iree.compiler.dialects import func

    with context(), ir.Location.unknown():
        module = ir.Module.create()
        module.operation.attributes["sym_name"] = ir.StringAttr.get(module_name)
        in_types = [tensor_type(a) for a in in_avals]
        out_types = [tensor_type(a) for a in out_avals]
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get(in_types, out_types))
            block = fn.add_entry_block()
        with ir.InsertionPoint(block):
            func.ReturnOp(body(module, *block.arguments))
    return module


def effect_tokens() -> list:
    """The (block, token) of each effectful host call lowered so far in this module, in order: the next one
    takes the latest token its block can see (`HostCall.token`)."""
    return _lowering.tokens


def lower_graph(graph: Graph, module_name: str = "main", host_calls: list | None = None):
    """Emit `graph` as a StableHLO module with one public function `main`.

    Host callbacks in the graph append a `HostCall` each to `host_calls` (without it, they raise)."""
    def body(module, *args):
        _lowering.module, _lowering.host_calls, _lowering.tokens, _lowering.named = module, host_calls, [], {}
        try:
            return emit_graph(graph, list(args))
        finally:
            _lowering.module = _lowering.host_calls = _lowering.tokens = _lowering.named = None
    return lower_function(body, graph.in_avals, graph.out_avals, module_name)
