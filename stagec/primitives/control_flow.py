"""Structured control flow primitives: `cond` (one `stablehlo.if`/`case`), `while` (one `stablehlo.while`) and
`scan` (a loop of known length over stacked inputs and outputs, emitted as a `while` over a counter).

Their parameters hold traced sub-graphs (branches, loop condition and body); values those close over are
extra operands after the regular ones. The user functions (`cond`, `while_loop`, `scan`, ...) are in
`stagec.lax.control_flow`.
"""
from __future__ import annotations

import math

import numpy as np

from .. import lowering as L
from ..core import Const, Graph, Literal, NoHostValue, Primitive, ShapedArray, aval_of, eval_graph, trace_subgraph
from ._ad import zeros
from .elementwise import DEFINED_INT_DIVISION as _DEFINED, add, add_p, lt, sub
from .structural import concatenate, dynamic_slice, dynamic_update_slice, reshape


def _cond_rule(index, *ops, branches, n_ops):
    if index.shape != () or index.dtype != np.int32:
        raise TypeError(f"cond index must be an int32 scalar, got {index.str_short()}")
    # An output is weakly typed only if it is so in every branch.
    return [a.update(weak_type=all(g.out_avals[i].weak_type for g in branches))
            for i, a in enumerate(branches[0].out_avals)]


cond_p = Primitive("cond", _cond_rule, multiple_results=True)


@cond_p.def_lowering
def _cond_lower(ctx: L.Ctx, index, *rest, branches, n_ops):
    ir = L.mlir()
    ops = list(rest[:n_ops])
    caps = list(rest[n_ops:])
    n = len(branches)
    if n == 1:
        return L.emit_graph(branches[0], ops + caps[:len(branches[0].in_vars) - n_ops])
    if n == 2:  # stablehlo.if on (index != 0): region 0 is the true branch (index 1)
        i32 = ShapedArray((), np.int32)
        pred = L.compare(ctx, index, L.full(0, i32), "NE", i32)
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
            ir.Operation.create("stablehlo.return", results=[], operands=L.emit_graph(g, ops + cs))
    return list(op.results)


@cond_p.def_stepwise
def _cond_stepwise(index, *rest, branches, n_ops):
    """The branch `index` picks (clamped, as `stablehlo.case`), its equations bound again."""
    k = min(max(int(np.asarray(index)), 0), len(branches) - 1)
    return eval_graph(branches[k], list(rest[:n_ops]) + _split_caps(branches, n_ops, list(rest[n_ops:]))[k])


# ---------------------------------------------------------------- NumPy rule (`Primitive.def_host`)
# A `cond` whose branches are equations with NumPy rules runs on the host by them: the eager layer takes this rule
# only where each of them gives its kernel's bits (`eager.exact`: an eager sampler's integer hash, `randint`,
# `permutation`), while the `cond`'s module compiles on a thread. Integer division and remainder have no NumPy rule
# (their kernels' edge cases are their own): here they are computed where every quotient is defined, and the rule
# raises `NoHostValue` elsewhere (the caller takes the kernel).


def _eqn_hosts(e) -> bool:
    ins, outs = [x.aval for x in e.inputs], [o.aval for o in e.outputs]
    if e.prim in _DEFINED and all(np.dtype(a.dtype).kind in "iu" for a in (*ins, *outs)):
        return True
    return e.prim.hosts(ins, e.params, outs)


# A branch with a value of more elements computes no rule: its steps would take about as long as the compile
# (docs/log.md, 2026-12-03, fifty-first session).
HOST_GRAPH_ELEMENTS = 1 << 18


def _cond_hosts(avals, params) -> bool:
    """Whether every equation of every branch has a NumPy rule for its operands, none of more than
    `HOST_GRAPH_ELEMENTS` elements (kept on the graph)."""
    ok = True
    for g in params["branches"]:
        h = g.__dict__.get("_hosts")
        if h is None:
            h = g._hosts = all(_eqn_hosts(e) and all(math.prod(o.aval.shape) <= HOST_GRAPH_ELEMENTS for o in e.outputs)
                               for e in g.eqns)
        ok = ok and h
    return ok


def _host_graph(graph: Graph, xs: list) -> list:
    """`graph` on NumPy values, each equation by its NumPy rule (`_cond_hosts` said it has one); a value is dropped
    after its last use (a hash's ~500 intermediates)."""
    env = {v.id: x for v, x in zip(graph.in_vars, xs)}
    read = lambda x: x.value if type(x) is Literal else env[x.id]
    dead = graph.__dict__.get("_dead")
    if dead is None:
        last = {x.id: i for i, e in enumerate(graph.eqns) for x in e.inputs if type(x) is not Literal}
        for o in graph.outs:
            last.pop(getattr(o, "id", None), None)
        dead = graph._dead = [[] for _ in graph.eqns]
        for v, i in last.items():
            dead[i].append(v)
    for e, gone in zip(graph.eqns, dead):
        ins = [read(x) for x in e.inputs]
        for v in gone:
            del env[v]
        defined = _DEFINED.get(e.prim)
        if defined is not None and ins[0].dtype.kind in "iu":
            got = defined(*ins)
            if got is None:
                raise NoHostValue(f"{e.prim.name} of {ins[0].dtype} by zero (or MIN by -1)")
        else:
            got = e.prim.host(*ins, **e.params)
        for v, o in zip(e.outputs, got if e.prim.multiple_results else (got,)):
            env[v.id] = np.asarray(o, v.aval.dtype)
    return [read(o) for o in graph.outs]


def _cond_host(index, *rest, branches, n_ops):
    k = min(max(int(index), 0), len(branches) - 1)
    return _host_graph(branches[k], list(rest[:n_ops]) + _split_caps(branches, n_ops, list(rest[n_ops:]))[k])


# (`max_work` 1: never the rule on every call, as a cheap operation's; only while the module compiles)
cond_p.def_host(_cond_host, _cond_hosts, max_work=1)


def _split_caps(graphs, n_ops, caps) -> list[list]:
    out, k = [], 0
    for g in graphs:
        n = len(g.in_vars) - n_ops
        out.append(caps[k:k + n])
        k += n
    return out


def _while_rule(*args, cond_graph, body_graph, n_carry, n_cond_caps):
    return [a for a in args[:n_carry]]


while_p = Primitive("while", _while_rule, multiple_results=True)


@while_p.def_lowering
def _while_lower(ctx: L.Ctx, *args, cond_graph, body_graph, n_carry, n_cond_caps):
    ir = L.mlir()
    carry = list(args[:n_carry])
    cond_caps = list(args[n_carry:n_carry + n_cond_caps])
    body_caps = list(args[n_carry + n_cond_caps:])
    types = [L.tensor_type(a) for a in ctx.avals_out]
    unread = _unread_carries(body_graph, n_carry)
    if unread:  # (and the start through one: lavapipe's loop of constant carries ran one iteration short)
        carry = list(ir.Operation.create("stablehlo.optimization_barrier", results=[c.type for c in carry],
                                         operands=carry).results)
    op = ctx.op("stablehlo.while", carry, regions=2)
    for region, g, caps in ((op.regions[0], cond_graph, cond_caps), (op.regions[1], body_graph, body_caps)):
        block = region.blocks.append(*types)
        with ir.InsertionPoint(block):
            outs = L.emit_graph(g, list(block.arguments) + caps)
            if g is body_graph and unread:
                # IREE 3.13 fails ("unresolved source materialization") on a loop whose body never reads a carry
                # (`lambda c: (c[1], c[1] * .5)`): the body reads it here, through a barrier beside its first output
                ins = [outs[0]] + [block.arguments[i] for i in unread]
                bar = ir.Operation.create("stablehlo.optimization_barrier", results=[v.type for v in ins], operands=ins)
                outs = [bar.results[0]] + list(outs[1:])
            ir.Operation.create("stablehlo.return", results=[], operands=outs)
    return list(op.results)


@while_p.def_stepwise
def _while_stepwise(*args, cond_graph, body_graph, n_carry, n_cond_caps):
    """The loop on the host: the condition read back each step, the body's equations bound again."""
    carry = list(args[:n_carry])
    cond_caps, body_caps = list(args[n_carry:n_carry + n_cond_caps]), list(args[n_carry + n_cond_caps:])
    while bool(np.asarray(eval_graph(cond_graph, carry + cond_caps)[0])):
        carry = eval_graph(body_graph, carry + body_caps)
    return carry


def _unread_carries(body, n_carry: int) -> list[int]:
    """The carries whose value the loop body never reads (neither an equation's input nor an output)."""
    used = {i.id for e in body.eqns for i in e.inputs if hasattr(i, "id")}
    used |= {o.id for o in body.outs if hasattr(o, "id")}
    return [k for k, v in enumerate(body.in_vars[:n_carry]) if v.id not in used]


def _scan_rule(*avals, body, length, reverse, n_carry, n_xs):
    ys = body.out_avals[n_carry:]
    return list(avals[:n_carry]) + [y.update(shape=(length,) + y.shape, weak_type=False) for y in ys]


# Operands: carry, xs (stacked along axis 0), consts; `body(carry, x, consts) -> (carry, y)` runs `length` times
# (from the last x when `reverse`); results: the final carry, then each y stacked along axis 0. A primitive of
# its own (not a `while` at once) so that differentiation and batching see which values are per-iteration.
scan_p = Primitive("scan", _scan_rule, multiple_results=True)


def _i32(v: int) -> Const:
    return Const(np.array(v, np.int32), ShapedArray((), np.int32))


def _unsigned(graph) -> bool:
    """Whether `graph` (or a graph in its equations' parameters) computes an unsigned integer value."""
    for e in graph.eqns:
        if any(np.dtype(o.aval.dtype).kind == "u" for o in e.outputs):
            return True
        for p in e.params.values():
            if any(isinstance(g, Graph) and _unsigned(g) for g in (p if isinstance(p, (tuple, list)) else (p,))):
                return True
    return False


def _counters(body, n_carry: int) -> list[int]:
    """The int32 scalar carries the body only counts up by one (a `fori_loop`'s index): at step i such a carry
    is its initial value plus i. [] where the body computes unsigned integers: IREE 3.13 then computed one from
    the loop's own index in host code, where an unsigned add does not lower ('arith.addi' of ui32: a PRNG key
    folded with the index)."""
    if _unsigned(body):
        return []
    made = {o.id: e for e in body.eqns for o in e.outputs}
    out = []
    for k in range(n_carry):
        v, o = body.in_vars[k], body.outs[k]
        e = made.get(getattr(o, "id", None))
        if (v.aval.shape != () or v.aval.dtype != np.int32 or e is None or e.prim is not add_p
                or len(e.inputs) != 2 or v not in e.inputs):
            continue
        one = e.inputs[1 - e.inputs.index(v)]
        if isinstance(one, (Const, Literal)) and np.shape(one.value) == () and int(one.value) == 1:
            out.append(k)
    return out


def _scan_as_while(*args, body, length, reverse, n_carry, n_xs):
    """The scan as one `while` over a counter: each step slices the xs, runs the body, writes the ys. A carry the
    body counts up by one is not carried: the body reads the counter plus its initial value (IREE keeps a
    carried count on the device, a dispatch a step, and reads the loop's own index on the host)."""
    carry, xs, consts = args[:n_carry], args[n_carry:n_carry + n_xs], args[n_carry + n_xs:]
    y_avals = [a.update(weak_type=False) for a in body.out_avals[n_carry:]]
    n_ys = len(y_avals)
    i32 = ShapedArray((), np.int32)
    if length == 0:  # no iteration: the carry as it came, empty ys (and no slice of an empty xs to trace)
        return list(carry) + [zeros(a.update(shape=(0,) + a.shape)) for a in y_avals]
    counted = _counters(body, n_carry)
    kept = [k for k in range(n_carry) if k not in counted]
    starts = [carry[k] for k in counted]
    n_kept, n_st = len(kept), len(starts)

    def step(i, *a):
        c, ys = a[:n_kept], a[n_kept:n_kept + n_ys]
        xs_ = a[n_kept + n_ys:n_kept + n_ys + n_xs]
        st, ks = a[n_kept + n_ys + n_xs:n_kept + n_ys + n_xs + n_st], a[n_kept + n_ys + n_xs + n_st:]
        k = sub(_i32(length - 1), i) if reverse else i
        sl = [reshape(dynamic_slice(x, [k] + [_i32(0)] * (x.aval.ndim - 1), (1,) + x.aval.shape[1:]),
                      x.aval.shape[1:]) for x in xs_]
        full = dict(zip(kept, c)) | {j: add(s0, i) for j, s0 in zip(counted, st)}
        outs = eval_graph(body, [full[j] for j in range(n_carry)] + sl + list(ks))
        ys = [dynamic_update_slice(b, reshape(y, (1,) + y.aval.shape), [k] + [_i32(0)] * y.aval.ndim)
              for b, y in zip(ys, outs[n_carry:])]
        return [add(i, _i32(1))] + [outs[j] for j in kept] + ys

    loop_avals = [i32] + [_aval(carry[k]) for k in kept] + [y.update(shape=(length,) + y.shape) for y in y_avals]
    step_g, caps, _ = trace_subgraph(step, loop_avals + [_aval(x) for x in (*xs, *starts, *consts)], "scan")
    cond_g, ccaps, _ = trace_subgraph(lambda i, *a: lt(i, _i32(length)), loop_avals, "scan")
    assert not caps and not ccaps
    ys0 = [zeros(a) for a in loop_avals[1 + n_kept:]]
    outs = while_p.bind(_i32(0), *[carry[k] for k in kept], *ys0, *xs, *starts, *consts, cond_graph=cond_g,
                        body_graph=step_g, n_carry=1 + n_kept + n_ys, n_cond_caps=0)
    final = dict(zip(kept, outs[1:1 + n_kept])) | {j: add(s0, _i32(length)) for j, s0 in zip(counted, starts)}
    return [final[j] for j in range(n_carry)] + list(outs[1 + n_kept:])


@scan_p.def_stepwise
def _scan_stepwise(*args, body, length, reverse, n_carry, n_xs):
    """The scan on the host: each step's xs sliced, the body's equations bound again, the ys stacked at the end."""
    carry, xs, consts = list(args[:n_carry]), args[n_carry:n_carry + n_xs], list(args[n_carry + n_xs:])
    if length == 0:
        return _scan_as_while(*args, body=body, length=length, reverse=reverse, n_carry=n_carry, n_xs=n_xs)
    ys: list = []
    for k in (range(length - 1, -1, -1) if reverse else range(length)):
        sl = [reshape(dynamic_slice(x, [_i32(k)] + [_i32(0)] * (aval_of(x).ndim - 1), (1,) + aval_of(x).shape[1:]),
                      aval_of(x).shape[1:]) for x in xs]
        outs = eval_graph(body, carry + sl + consts)
        carry = outs[:n_carry]
        ys.append([reshape(y, (1,) + aval_of(y).shape) for y in outs[n_carry:]])
    if reverse:
        ys.reverse()
    return carry + [concatenate(col, 0) for col in zip(*ys)]


def _aval(x) -> ShapedArray:
    return x if isinstance(x, ShapedArray) else x.aval


@scan_p.def_lowering
def _scan_lower(ctx: L.Ctx, *args, **params):
    graph, _, _ = trace_subgraph(lambda *a: _scan_as_while(*a, **params), list(ctx.avals_in), "scan")
    return L.emit_graph(graph, list(args))
