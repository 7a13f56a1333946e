"""Named calls: a function of arrays traced into a sub-graph that the module keeps as a call of a private function
bearing a name (`lowering.NAMED`), so that a target's pass may answer it otherwise: on the CPU, `host-lapack` makes
`_lu` ("lapack.getrf") a call of LAPACK, as JAX calls LAPACK where XLA has no kernel. Every other target, or a
compile without offloads, runs the function's own ops (`inline-calls` inlines it first).

The function must treat its operands' leading dimensions as a batch, all operands with the same batch shape (so
that vmap's batched graph is the same function on a bigger batch, and the host's answer stays valid)."""
from __future__ import annotations

import functools
from typing import Callable

from . import lowering as L
from .ad import JVPTrace, _full
from .batching import batch_graph
from .core import (Eqn, Graph, Literal, Primitive, TracerBase, Var, aval_of, eval_graph, to_numpy_constant,
                   trace_subgraph, tracing)
from .primitives._ad import differentiable
from .primitives._batch import at_front, axis_size

named_p = Primitive("named_call", lambda *avals, graph, name: list(graph.out_avals), multiple_results=True)


def named(name: str) -> Callable:
    """`fn` (arrays in, a tuple or list of arrays out) recorded as one `named_call` of `name`."""
    def deco(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapped(*args):
            graph, caps, _ = trace_subgraph(fn, list(args), f"named call {name}")
            return named_p.bind(*args, graph=_closed(graph, len(args), caps, name), name=name)
        return wrapped
    return deco


def _closed(graph: Graph, n_args: int, caps: list, name: str) -> Graph:
    """`graph` of its first `n_args` inputs alone: the concrete arrays it closed over (`caps`, its other inputs)
    as literals, so that the host answers from the arguments alone."""
    if any(isinstance(c, TracerBase) for c in caps):
        raise TypeError(f"named call {name}: {graph.name} closes over a traced value; pass it as an argument")
    lits = {v.id: Literal(to_numpy_constant(c, v.aval), v.aval) for v, c in zip(graph.in_vars[n_args:], caps)}
    if not lits:
        return graph
    sub = lambda xs: [lits.get(x.id, x) if isinstance(x, Var) else x for x in xs]
    eqns = [Eqn(e.prim, sub(e.inputs), e.params, e.outputs, e.loc) for e in graph.eqns]
    return Graph(graph.in_vars[:n_args], eqns, sub(graph.outs), graph.name)


@named_p.def_lowering
def _named_lower(ctx: L.Ctx, *args, graph, name):
    sym = L.named_function(name, graph)
    op = ctx.op("func.call", list(args), attributes={"callee": L.mlir().FlatSymbolRefAttr.get(sym)})
    return list(op.results)


@named_p.def_stepwise
def _named_stepwise(*args, graph, name):
    return eval_graph(graph, list(args))


@named_p.def_jvp
def _named_jvp(primals, tangents, *, graph, name):
    """The function's own ops differentiated (its primal outputs the named call's)."""
    jt = JVPTrace()
    with tracing(jt):
        outs = eval_graph(graph, [jt.wrap(p, t) for p, t in zip(primals, tangents)])
    tans = [jt.split(o)[1] for o in outs]
    ps = named_p.bind(*primals, graph=graph, name=name)
    return ps, [(_full(aval_of(p).strip_weak(), 0) if t is None else t) if differentiable(aval_of(p)) else None
                for p, t in zip(ps, tans)]


@named_p.def_batch
def _named_batch(args, dims, *, graph, name):
    """The same named function on a batch one axis bigger: every operand batched first (broadcast where it was
    not), every result batched first."""
    size = axis_size(args, dims)
    args = [at_front(x, d, size) for x, d in zip(args, dims)]
    g, _ = batch_graph(graph, [True] * len(args), size, force=[True] * len(graph.out_avals))
    return named_p.bind(*args, graph=g, name=name), [0] * len(graph.out_avals)
