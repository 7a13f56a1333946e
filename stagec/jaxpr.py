"""`make_jaxpr`: what `jit` traced, printed in the form of JAX's jaxprs (`{ lambda ; a:f32[3]. let ... in (b,) }`)."""
from __future__ import annotations

from typing import Any, Callable

from .core import Graph, Literal, ShapedArray


def _short(aval: ShapedArray) -> str:
    """JAX's short type: f32[3,4], i32[], bool[2], bf16[8]."""
    dt = aval.dtype
    code = "bool" if dt.kind == "b" else "bf16" if dt.name == "bfloat16" else f"{dt.kind}{dt.itemsize * 8}"
    return f"{code}[{','.join(map(str, aval.shape))}]"


def _names():
    i = 0
    while True:
        n, s = i, ""
        while True:
            s = chr(ord("a") + n % 26) + s
            n = n // 26 - 1
            if n < 0:
                break
        yield s
        i += 1


def _fmt_param(v) -> str:
    if isinstance(v, Graph):
        return "{ lambda ... }"
    if isinstance(v, (list, tuple)) and v and all(isinstance(g, Graph) for g in v):
        return "(" + ", ".join("{ lambda ... }" for _ in v) + ")"
    return str(v)


class ClosedJaxpr:
    """A traced function: `.in_avals`, `.out_avals`, `.invars`, `.outvars`, `.eqns` (stagec's equations), `.graph`;
    `str()` is the text."""

    def __init__(self, graph: Graph, out_tree: Any = None):
        self.graph, self.out_tree = graph, out_tree
        self.jaxpr = self

    in_avals = property(lambda self: self.graph.in_avals)
    out_avals = property(lambda self: self.graph.out_avals)
    eqns = property(lambda self: self.graph.eqns)
    # JAX's names for the inputs and outputs (`make_jaxpr(f)(x).jaxpr.invars`): variables with an `.aval`
    invars = property(lambda self: list(self.graph.in_vars))
    outvars = property(lambda self: list(self.graph.outs))

    def pretty_print(self) -> str:
        g, names, env = self.graph, _names(), {}
        var = lambda v: env.setdefault(v.id, next(names))
        atom = lambda x: repr(x.value.item() if x.value.size == 1 else x.value) if isinstance(x, Literal) else var(x)
        decl = lambda v: f"{var(v)}:{_short(v.aval)}"
        lines = ["{ lambda ; " + " ".join(map(decl, g.in_vars)) + ". let"]
        for e in g.eqns:
            ps = ", ".join(f"{k}={_fmt_param(v)}" for k, v in e.params.items())
            lhs = " ".join(map(decl, e.outputs))
            lines.append(f"    {lhs} = {e.prim.name}{f'[{ps}]' if ps else ''} {' '.join(map(atom, e.inputs))}")
        outs = ", ".join(map(atom, g.outs))
        lines.append(f"  in ({outs}{',' if len(g.outs) == 1 else ''}) }}")
        return "\n".join(lines)

    __str__ = pretty_print

    def __repr__(self):
        return self.pretty_print()


def make_jaxpr(fun: Callable, static_argnums=None, static_argnames=None, return_shape: bool = False) -> Callable:
    """`make_jaxpr(f)(*args)`: the equations `jit` traces for `f` on these arguments, as a `ClosedJaxpr`
    (with `return_shape`, also the output's `ShapeDtypeStruct` pytree). `make_mlir` shows the StableHLO."""
    def wrapped(*args, **kwargs):
        from .jit import Jitted
        lowered = Jitted(fun, static_argnums=static_argnums, static_argnames=static_argnames).lower(*args, **kwargs)
        closed = ClosedJaxpr(lowered.graph, lowered.out_tree)
        if not return_shape:
            return closed
        from .aot import ShapeDtypeStruct
        from .tree_util import tree_unflatten
        return closed, tree_unflatten(lowered.out_tree, [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
                                                       for a in closed.out_avals])
    return wrapped
