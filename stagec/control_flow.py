"""Structured control flow: `cond`, `switch`, `while_loop`, `fori_loop`, `scan`, `map`.

Branches and loop bodies are traced once into sub-graphs (never unrolled) and emitted as
`stablehlo.if` / `stablehlo.case` / `stablehlo.while` with regions. Values a body closes over
(outer tracers, concrete arrays) become extra operands of the primitive.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import dtypes as _dt, lax, lowering, tree_util
from .core import Graph, Primitive, ShapedArray, Trace, aval_of, eval_graph, flatten_outputs, tracing
from .lowering import Ctx, emit_graph, tensor_type


def _fun_name(f: Callable) -> str:
    return getattr(f, "__name__", type(f).__name__)


def trace_subgraph(fun: Callable, args: Sequence, purpose: str) -> tuple[Graph, list, Any]:
    """Trace `fun(*args)` (args: a pytree's leaves are avals) into a sub-graph.

    Returns (graph, captured outer values, output tree). The graph's inputs are the flattened
    args followed by one input per captured value.
    """
    leaves, tree = tree_util.tree_flatten(list(args))
    trace = Trace(f"{_fun_name(fun)} (in {purpose})", purpose, sub=True)
    tracers = [trace.new_arg(aval_of(a).update(), f"{purpose} operand {i}") for i, a in enumerate(leaves)]
    with tracing(trace):
        out = fun(*tree_util.tree_unflatten(tree, tracers))
    out_leaves, out_tree = flatten_outputs(out, f"{_fun_name(fun)} (in {purpose})")
    return trace.to_graph(out_leaves, _fun_name(fun)), list(trace.captured), out_tree


def _types(avals) -> str:
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def _same_types(a: Sequence[ShapedArray], b: Sequence[ShapedArray]) -> bool:
    return len(a) == len(b) and all((x.shape, x.dtype) == (y.shape, y.dtype) for x, y in zip(a, b))


def _first_difference(a, b) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if (x.shape, x.dtype) != (y.shape, y.dtype):
            return f"position {i}: {x.str_short()} vs {y.str_short()}"
    return f"{len(a)} vs {len(b)} values"


# ---------------------------------------------------------------- cond / switch


def _cond_rule(index, *ops, branches, n_ops):
    if index.shape != () or index.dtype != np.int32:
        raise TypeError(f"cond index must be an int32 scalar, got {index.str_short()}")
    # An output is weakly typed only if it is so in every branch.
    return [a.update(weak_type=all(g.out_avals[i].weak_type for g in branches))
            for i, a in enumerate(branches[0].out_avals)]


cond_p = Primitive("cond", _cond_rule, multiple_results=True)


def switch(index, branches: Sequence[Callable], *operands):
    """Apply `branches[index]` to `operands` (index clamped into range), as one `stablehlo.case`."""
    branches = list(branches)
    if not branches:
        raise ValueError("switch needs at least one branch")
    index = lax.convert_element_type(index, np.int32) if aval_of(index).dtype != np.int32 else index
    if aval_of(index).shape != ():
        raise TypeError(f"switch/cond index must be a scalar, got shape {aval_of(index).shape}")
    if len(branches) > 1:
        index = lax.max(lax.min(index, len(branches) - 1), 0)
    traced = [trace_subgraph(b, operands, "cond") for b in branches]
    out_tree = traced[0][2]
    base = traced[0][0].out_avals
    for k, (g, _, tree) in enumerate(traced[1:], 1):
        if tree != out_tree or not _same_types(base, g.out_avals):
            raise TypeError(
                f"cond/switch branches must return the same pytree of types: branch 0 "
                f"({_fun_name(branches[0])}) returns {out_tree} {_types(base)} but branch {k} "
                f"({_fun_name(branches[k])}) returns {tree} {_types(g.out_avals)}")
    leaves = tree_util.tree_leaves(list(operands))
    caps = [c for _, cs, _ in traced for c in cs]
    outs = cond_p.bind(index, *leaves, *caps, branches=tuple(g for g, _, _ in traced), n_ops=len(leaves))
    return tree_util.tree_unflatten(out_tree, outs)


def cond(pred, true_fun: Callable, false_fun: Callable, *operands):
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)`; only the chosen branch runs."""
    av = aval_of(pred)
    if av.shape != ():
        raise TypeError(f"cond predicate must be a scalar, got shape {av.shape}")
    if av.dtype != np.bool_:
        pred = lax.ne(pred, lax.full_like(pred, 0))
    return switch(lax.convert_element_type(pred, np.int32), [false_fun, true_fun], *operands)


@lowering.register(cond_p)
def _cond_lower(ctx: Ctx, index, *rest, branches, n_ops):
    ir = lowering._ir()
    ops = list(rest[:n_ops])
    caps = list(rest[n_ops:])
    n = len(branches)
    if n == 1:
        return emit_graph(branches[0], ops + caps[:len(branches[0].in_vars) - n_ops])
    if n == 2:  # stablehlo.if on (index != 0): region 0 is the true branch (index 1)
        i32 = ShapedArray((), np.int32)
        pred = lowering.compare(ctx, index, lowering.full(0, i32), "NE", i32)
        op = ctx.op("stablehlo.if", [pred], regions=2)
        order = [branches[1], branches[0]]
        cap_slices = _split_caps(branches, n_ops, caps)
        cap_order = [cap_slices[1], cap_slices[0]]
    else:
        op = ctx.op("stablehlo.case", [index], regions=n)
        order, cap_order = list(branches), _split_caps(branches, n_ops, caps)
    for region, g, cs in zip(op.regions, order, cap_order):
        block = region.blocks.append()
        with ir.InsertionPoint(block):
            ir.Operation.create("stablehlo.return", results=[], operands=emit_graph(g, ops + cs))
    return list(op.results)


def _split_caps(graphs, n_ops, caps) -> list[list]:
    out, k = [], 0
    for g in graphs:
        n = len(g.in_vars) - n_ops
        out.append(caps[k:k + n])
        k += n
    return out


# ---------------------------------------------------------------- while


def _while_rule(*args, cond_graph, body_graph, n_carry, n_cond_caps):
    return [a for a in args[:n_carry]]


while_p = Primitive("while", _while_rule, multiple_results=True)


def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """`while cond_fun(val): val = body_fun(val)`, as one `stablehlo.while` (traced once)."""
    init_leaves, init_tree = tree_util.tree_flatten(init_val)
    init_avals = [aval_of(x) for x in init_leaves]
    for attempt in range(2):
        body, body_caps, body_tree = trace_subgraph(body_fun, [init_val], "while_loop body")
        if body_tree != init_tree or not _same_types(init_avals, body.out_avals):
            raise TypeError(f"while_loop body_fun ({_fun_name(body_fun)}) must return the same pytree of types as "
                            f"its input: input {init_tree} {_types(init_avals)}, output {body_tree} "
                            f"{_types(body.out_avals)}; first difference at carry "
                            f"{_first_difference(init_avals, body.out_avals)}")
        # A weakly typed initial value whose body result is strongly typed becomes strong (as in JAX).
        strong = [i for i, (a, b) in enumerate(zip(init_avals, body.out_avals)) if a.weak_type and not b.weak_type]
        if not strong or attempt:
            break
        init_leaves = [lax.convert_element_type(x, a.dtype, False) if i in strong else x
                       for i, (x, a) in enumerate(zip(init_leaves, init_avals))]
        init_avals = [aval_of(x) for x in init_leaves]
        init_val = tree_util.tree_unflatten(init_tree, init_leaves)
    cond, cond_caps, cond_tree = trace_subgraph(cond_fun, [init_val], "while_loop cond")
    if len(cond.outs) != 1 or cond.out_avals[0].shape != () or cond.out_avals[0].dtype != np.bool_:
        raise TypeError(f"while_loop cond_fun ({_fun_name(cond_fun)}) must return a boolean scalar, got "
                        f"{_types(cond.out_avals)}")
    outs = while_p.bind(*init_leaves, *cond_caps, *body_caps, cond_graph=cond, body_graph=body,
                        n_carry=len(init_leaves), n_cond_caps=len(cond_caps))
    return tree_util.tree_unflatten(init_tree, outs)


@lowering.register(while_p)
def _while_lower(ctx: Ctx, *args, cond_graph, body_graph, n_carry, n_cond_caps):
    ir = lowering._ir()
    carry = list(args[:n_carry])
    cond_caps = list(args[n_carry:n_carry + n_cond_caps])
    body_caps = list(args[n_carry + n_cond_caps:])
    op = ctx.op("stablehlo.while", carry, regions=2)
    types = [tensor_type(a) for a in ctx.avals_out]
    for region, g, caps in ((op.regions[0], cond_graph, cond_caps), (op.regions[1], body_graph, body_caps)):
        block = region.blocks.append(*types)
        with ir.InsertionPoint(block):
            outs = emit_graph(g, list(block.arguments) + caps)
            ir.Operation.create("stablehlo.return", results=[], operands=outs)
    return list(op.results)


def fori_loop(lower, upper, body_fun: Callable, init_val):
    """`for i in range(lower, upper): val = body_fun(i, val)`, as a `stablehlo.while`."""
    dt = np.result_type(aval_of(lower).dtype, aval_of(upper).dtype)
    dt = np.int32 if _dt.kind(dt) not in "iu" or dt.itemsize < 4 else dt
    lo = lax.convert_element_type(lower, dt, False)
    hi = lax.convert_element_type(upper, dt, False)

    def body(state):
        i, hi_, val = state
        return lax.add(i, lax.full_like(i, 1)), hi_, body_fun(i, val)

    return while_loop(lambda s: lax.lt(s[0], s[1]), body, (lo, hi, init_val))[2]


# ---------------------------------------------------------------- scan / map


def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False):
    """`carry, y = f(carry, x)` over the leading axis of `xs`; returns (carry, stacked ys)."""
    from . import numpy as snp
    x_leaves, x_tree = tree_util.tree_flatten(xs)
    lengths = {aval_of(x).shape[0] if aval_of(x).shape else None for x in x_leaves}
    if None in lengths:
        raise ValueError("scan got a scalar in xs: every leaf of xs needs a leading axis to scan over")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise ValueError(f"scan got inconsistent lengths: leading axes of xs {sorted(lengths)}"
                         + (f" and length={length}" if length is not None else ""))
    n = lengths.pop()
    x_avals = [aval_of(x).update(shape=aval_of(x).shape[1:]) for x in x_leaves]
    x_proto = tree_util.tree_unflatten(x_tree, [_Proto(a) for a in x_avals])
    probe, probe_caps, out_tree = trace_subgraph(f, [init, x_proto], "scan")  # f is traced once, here
    if out_tree.node_type is not tuple or len(out_tree.children) != 2:
        raise TypeError(f"scan body {_fun_name(f)} must return a pair (carry, y), got {out_tree}")
    n_carry = len(tree_util.tree_leaves(init))
    y_avals = probe.out_avals[n_carry:]
    y_tree = out_tree.children[1]
    ys0 = [snp.zeros((n,) + a.shape, a.dtype) for a in y_avals]

    def body(state):
        i, carry, ys = state
        idx = lax.sub(lax.full_like(i, n - 1), i) if reverse else i
        x = [_index(x, idx) for x in x_leaves]
        outs = eval_graph(probe, tree_util.tree_leaves(carry) + x + probe_caps)
        carry2 = tree_util.tree_unflatten(out_tree.children[0], outs[:n_carry])
        y_leaves = outs[n_carry:]
        ys = [_update(buf, lax.convert_element_type(v, aval_of(buf).dtype), idx) for buf, v in zip(ys, y_leaves)]
        return lax.add(i, lax.full_like(i, 1)), carry2, ys

    start = lax.convert_element_type(0, np.int32)
    _, carry, ys = while_loop(lambda s: lax.lt(s[0], lax.full_like(s[0], n)), body, (start, init, ys0))
    return carry, tree_util.tree_unflatten(y_tree, ys)


class _Proto:
    """An abstract stand-in used only to learn a body's output types."""

    def __init__(self, aval: ShapedArray):
        self.aval = aval


def _index(x, i):
    """x[i] along axis 0 for a traced i."""
    av = aval_of(x)
    zero = lax.convert_element_type(0, np.int32)
    sl = lax.dynamic_slice(x, [i] + [zero] * (av.ndim - 1), (1,) + av.shape[1:])
    return lax.reshape(sl, av.shape[1:])


def _update(buf, value, i):
    from . import primitives as P
    av = aval_of(buf)
    zero = lax.convert_element_type(0, np.int32)
    upd = lax.reshape(value, (1,) + av.shape[1:])
    return P.dynamic_update_slice.bind(buf, upd, i, *([zero] * (av.ndim - 1)))


def map(f: Callable, xs):
    """`stack([f(x) for x in xs])` as a loop (`scan` with no carry)."""
    return scan(lambda c, x: (c, f(x)), (), xs)[1]
