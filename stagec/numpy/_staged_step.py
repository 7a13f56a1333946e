"""A `_staged` function (eager calls run it as one jit module) as one step of an eager composite's plan.

`_staged` raises in a composite's trace: planned one equation at a time, the function's equations would not give its
module's bits, so a composite calling it ran op by op (betainc's `betaln`: ~300 primitives and a loop traced again
on every call, 6 ms on 4x4). `composite_step(staged)` records such a call as one `staged_call` equation instead,
whose eager rule calls `staged` itself outside any trace: the same jit module (its cache), so the same bits as op
by op. Arrays as positional arguments, the statics by keyword (plain Python values); any other call runs as before.
"""
from __future__ import annotations

import functools
from typing import Callable

from ..array import Array
from ..core import COMPOSITE, Primitive, TracerBase, aval_of, current_trace, trace_subgraph
from ..tree_util import tree_leaves, tree_unflatten

_CALLS: dict[str, Callable] = {}  # name -> the staged function a `staged_call` equation runs


def _plain(v) -> bool:
    return v is None or isinstance(v, (bool, int, float, str)) or (isinstance(v, tuple) and all(_plain(x) for x in v))


@functools.lru_cache(maxsize=256)
def _shapes(name: str, statics: tuple, avals: tuple):
    """(result avals, result tree) of the staged function on operands of these avals, traced once (inside a
    sub-trace `_staged` runs the function's own equations)."""
    fn, kw = _CALLS[name], dict(statics)
    graph, _, tree = trace_subgraph(lambda *xs: fn(*xs, **kw), list(avals), "a staged call's shapes")
    return tuple(graph.out_avals), tree


staged_call_p = Primitive("staged_call", lambda *avals, name, statics: list(_shapes(name, statics, avals)[0]),
                          multiple_results=True)


@staged_call_p.def_impl
def _run(*args, name, statics):
    """The eager call itself: the staged function's jit module."""
    return tree_leaves(_CALLS[name](*args, **dict(statics)))


def composite_step(staged: Callable) -> Callable:
    """`staged` (a `_staged` function), one `staged_call` equation in an eager composite's trace."""
    name = f"{staged.__module__}.{staged.__qualname__}"
    _CALLS[name] = staged

    @functools.wraps(staged)
    def wrapped(*args, **kwargs):
        trace = current_trace()
        if trace is None or trace.purpose != COMPOSITE or not all(isinstance(a, (TracerBase, Array)) for a in args) \
                or not all(_plain(v) for v in kwargs.values()):
            return staged(*args, **kwargs)
        statics = tuple(sorted(kwargs.items()))
        outs = staged_call_p.bind(*args, name=name, statics=statics)
        return tree_unflatten(_shapes(name, statics, tuple(aval_of(a) for a in args))[1], outs)
    return wrapped
