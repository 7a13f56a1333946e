"""Eager execution: a primitive bound outside any trace runs now, as a one-equation module compiled
once per (primitive, params, input avals, backend) through the persistent cache, without stagec's
passes. Registered with `core.set_eager_impl` at import, so core never imports the runtime.

The loaded modules are kept in a least-recently-used cache of `config.eager_cache_size` entries; threads
asking for one being compiled wait for it (`stages.build_once`).
"""
from __future__ import annotations

import collections
from typing import Sequence

from .aot import Runner
from .array import Array
from .backend import get_backend
from .config import config
from .core import Eqn, Graph, Primitive, ShapedArray, Var, set_eager_impl
from .lowering import lower_graph
from .stages import build_once, compile_cached

_cache: collections.OrderedDict[tuple, Runner] = collections.OrderedDict()
stats = {"compiles": 0}


def apply(prim: Primitive, args: Sequence, avals: Sequence[ShapedArray], params: dict,
          out_avals: list[ShapedArray]) -> list[Array]:
    """Run one primitive on concrete arguments (Arrays, NumPy values, Python scalars)."""
    backend = get_backend()
    key = (prim, tuple(sorted(params.items())), tuple(avals), backend.name)
    runner = _cache.get(key)
    if runner is None:
        def build() -> Runner:
            r = _cache[key] = _compile(prim, avals, params, out_avals, backend)
            while len(_cache) > max(config.eager_cache_size, 1):
                _cache.popitem(last=False)
            return r
        runner = build_once(("eager", key), lambda: _cache.get(key), build)
    else:
        try:
            _cache.move_to_end(key)
        except KeyError:  # dropped by another thread meanwhile
            pass
    return runner(args)


def _compile(prim, avals, params, out_avals, backend) -> Runner:
    in_vars, out_vars = [Var(a) for a in avals], [Var(a) for a in out_avals]
    graph = Graph(in_vars, [Eqn(prim, list(in_vars), params, out_vars)], list(out_vars), prim.name)
    name = f"eager_{prim.name}"
    host_calls: list = []  # a callback primitive bound eagerly (e.g. under vmap) calls out from its module
    art, _ = compile_cached(backend, str(lower_graph(graph, name, host_calls)), name, backend.compile_flags(),
                            graph.in_avals, graph.out_avals, host_calls=host_calls)
    stats["compiles"] += 1
    return art.runner()


def clear_cache() -> None:
    _cache.clear()


set_eager_impl(apply)
