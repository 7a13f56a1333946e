"""Eager composites: a `stagec.numpy` function built of several primitives (`floor_divide`, `mean`, `outer`,
`softmax`, ...), called outside any trace, runs its traced graph as one dispatch instead of binding each
primitive through `eager.apply` (~4 us of planning per primitive).

`numpy._base._composite` marks such functions; the API layer registers `call` with `numpy._base` (numpy never
imports the runtime). A signature (function, Arrays' avals, the other arguments' values) runs plainly on its
first call; its second traces the function into a Graph (no compile) and plans each equation as `eager.apply`
plans it alone (`_runner`): an equation that `eager.apply` computes with its NumPy rule on the CPU (below
`HOST_MAX_ELEMENTS`: inexact ones always, `exact` ones, whose rules give their kernels' bits, on host values)
runs that rule directly on NumPy values (equations on constants alone once, when planned); the others run
`eager._plan`'s runner for their signature: their kernels, as before. So a composite gives the bits it gave op
by op whatever is compiled or cached. The steps run as one generated Python function (`_source`); equations that
give nothing new (dead, repeated, identities, `max` with -inf) are planned away, and broadcasts read by correctly
rounded rules left to NumPy's broadcasting (`_views`): the same bits. From the second call on, a NumPy-rule
select whose mask is uniform gives its taken operand, and the steps only the other operand reads (kernels among
them: gammainc's Temme branch) do not run (`_regions`); a kernel on constants alone runs once, when planned
(`_fold_kernel`): the same bits. A graph of equations that give their own bits in any module (`_exact_eqn`:
integer arithmetic and logic, integer division, data movement), or of such equations and one correctly rounded
float operation that runs as its kernel (`_fusable`: a scalar's broadcast beside a large array), is also compiled as
one module on the eager compile thread (`_Fused`), the calls running op by op until it is loaded: the same bits, one
call. A graph of elementwise steps, broadcasts, reshapes and reductions with inexact steps `_fusable` cannot take,
from `POLY_ELEMENTS` (traced on its first call), runs as one module on every call, its first included:
shape-polymorphic on the CPU below `WHOLE_ELEMENTS` (`_Poly`), shape-specific from there (`_Whole`): the module's
bits, not op by op's, one answer per signature (docs/design.md, "elementwise composites by size class"). Calls that cannot be keyed (tracers, nested array arguments, NaN Python scalars; NumPy arrays but large
ones), calls on arrays still being computed (but `_Whole` and `_Poly` ones), and functions that cannot be traced
alone (they raise, or need a value concretely) run plainly: an error is raised by the function itself, as before. An Array the function makes inside (from its static
arguments) is a constant of the graph; a custom function (`custom_jvp`) is traced through, its primal's equations
planned as op by op runs them; a function that runs eagerly as one jit module (`numpy._base._staged`) makes the
trace fail. Signatures are kept up to 4 * `config.eager_cache_size` and dropped when a setting changes.
"""
from __future__ import annotations

import collections
import functools
import logging
import math
import os
import re
import threading
from typing import Callable

import numpy as np

from .array import Array, device_put
from .backend import get_backend
from .config import LRUSettingsCache, config
from .core import COMPOSITE, Const, Eqn, Graph, Literal, Trace, Var, flatten_outputs, tracing
from . import eager
from .primitives.elementwise import _count_nonzero
from .eager import HOST_READ_ELEMENTS, KEEP_HOST_BYTES, _always_host, _errors, _plain, _plan, _quiet, exact, host_result
from .primitives import bitcast_convert_type_p, control_flow, elementwise, gather_p, reductions, structural
from .lowering import DYNAMIC, lower_graph
from .stages import Lowered, compile_cached
from .tree_util import tree_structure, tree_unflatten

log = logging.getLogger("stagec")
stats = {"traces": 0, "calls": 0, "plain": 0, "fused_queued": 0, "fused": 0, "fused_calls": 0,
         "pruned": 0, "views": 0, "cases": 0, "folded_kernels": 0, "compact": 0, "one_kernel": 0,
         "whole": 0, "whole_calls": 0, "poly": 0, "poly_calls": 0}  # (pruned:
# equations planned away, dead, repeated or identities; views: `_views`; cases: calls that took a composite's
# `eager_case`; folded_kernels: kernel equations on constants alone, run when planned, `_fold_kernel`; compact:
# constant operands read in their compact form, `_compact`; one_kernel: signatures planned as `_one_kernel`; whole:
# signatures compiled as one module, `_Whole`, whole_calls their calls; poly: shape-polymorphic modules compiled or
# loaded, `_Poly`, poly_calls their calls)
_PLAIN = "plain"  # a signature that runs as a plain call
_SEEN = "seen"  # a signature called once (plainly)
# signature -> its runner, or _PLAIN (least recently used first: a loop over new scalar values pushes out the oldest
# signatures, not all of them); emptied with the fused modules (`_unload`) when a setting changes
_sigs = LRUSettingsCache(lambda: 4 * max(config.eager_cache_size, 1), on_clear=lambda: _unload())


class _Unkeyed(Exception):
    """An argument that cannot be part of a signature: the call runs plainly."""


def _static(v):
    """A hashable stand-in for a non-array argument (its type too: 1, 1.0 and True trace differently)."""
    t = type(v)
    if t is float or t is complex:
        if v != v:  # (NaN: never equal to itself, so never found again)
            raise _Unkeyed
        return (t, v, math.copysign(1.0, v.real), math.copysign(1.0, v.imag))  # (-0.0 == 0.0 but divides apart)
    if v is None or t is int or t is bool or t is str or t is type or isinstance(v, np.dtype):
        return (t, v)
    if t is tuple or t is list:
        return (t, tuple([_static(x) for x in v]))
    if isinstance(v, np.generic) and v.dtype.kind in "biufc":  # a NumPy scalar: by its bits (-0.0, NaN included)
        return (t, v.tobytes())
    raise _Unkeyed


def _signature(fn, args, kwargs) -> tuple[tuple, list]:
    """(key, array leaves): Arrays are leaves (their avals in the key), other arguments are static values."""
    key, leaves = [fn], []
    for a in args:
        if type(a) is Array:
            key.append(a.aval)
            leaves.append(a)
        else:
            key.append(_static(a))
    if kwargs:
        for k in sorted(kwargs):
            v = kwargs[k]
            key.append(k)
            if type(v) is Array:
                key.append(v.aval)
                leaves.append(v)
            else:
                key.append(_static(v))
    return tuple(key), leaves


def _hosted(x, least: int):
    """A NumPy array of `least` elements or more as the Array the function would make of it (`device_put`: a copy, its
    dtype canonical): a call with an argument of `POLY_ELEMENTS` (defined below) may be one module (`_whole_graph`), whose bits must
    not depend on an argument's type (a small one beside it too: `hypot(x, column)`)."""
    if type(x) is not np.ndarray or x.size < least or x.dtype.kind not in "biufc":
        return x
    return device_put(x)


def call(fn: Callable, args: tuple, kwargs: dict):
    """`fn(*args, **kwargs)` outside any trace, as one traced graph (`numpy._base._composite`'s eager path)."""
    try:
        key, leaves = _signature(fn, args, kwargs)
    except _Unkeyed:  # (a large NumPy argument: as the Array the function makes of it, and keyed by that; and the
        # other NumPy arguments beside it)
        least = 0 if _long(fn) or any(type(a) is np.ndarray and a.size >= POLY_ELEMENTS
                                      for a in (*args, *kwargs.values())) else POLY_ELEMENTS
        args, kwargs = [_hosted(a, least) for a in args], {k: _hosted(v, least) for k, v in kwargs.items()}
        try:
            key, leaves = _signature(fn, args, kwargs)
        except _Unkeyed:
            stats["plain"] += 1
            return fn(*args, **kwargs)
    run = _sigs.get(key)
    if run is None or run is _SEEN:
        # traced from its second call: a signature met once (`x % k` in a loop over k) costs what it did; from its
        # first where an argument is large (its graph may be `_whole`: one module for every call, the first too)
        run = _sigs.put(key, _make(fn, args, kwargs) if run is _SEEN or _large(leaves) or _long(fn) else _SEEN)
    _sigs.touch(key)
    if run is _PLAIN or run is _SEEN:
        stats["plain"] += 1
        return fn(*args, **kwargs)
    if type(run) is not _Whole and type(run) is not _Poly:  # (a module's call waits behind its pending arguments)
        for x in leaves:
            if x._bv is None and x._job is not None:  # still being computed (`pending`): enqueued op by op, as before
                stats["plain"] += 1
                return fn(*args, **kwargs)
    stats["calls"] += 1
    return run(leaves)


# Control flow: op by op, an eager `while_loop`, `scan` or `cond` is one compiled kernel (`eager.apply` of the
# primitive, its graphs among the parameters), and so is its equation in a composite's plan (the same `eager._plan`):
# the same bits. gammainc's three series loops ran between ~420 primitives op by op, each loop traced again
# on every call.
_LOOPS = frozenset({control_flow.while_p, control_flow.scan_p, control_flow.cond_p})


def _pure(graph) -> bool:
    """Whether every parameter of `graph`'s equations is plain (`eager._plain`) or a control-flow primitive's graphs
    that are so in turn: no function among them (a callback, whose calls a plan could prune or merge, or a custom
    rule recorded in a loop's body)."""
    for e in graph.eqns:
        for v in e.params.values():
            if _plain(v):
                continue
            gs = (v,) if isinstance(v, Graph) else v if type(v) is tuple and v else ()
            if e.prim not in _LOOPS or not gs or not all(isinstance(g, Graph) and _pure(g) for g in gs):
                return False
    return True


def _make(fn: Callable, args: tuple, kwargs: dict):
    """The runner of this signature: `fn` traced with its Array arguments as inputs, then `_runner`; `_PLAIN`
    where the trace raised (the plain call raises it again, as before) or holds a function in a parameter."""
    name = getattr(fn, "__name__", "composite")
    # Not a sub-trace: an Array the function makes from its static arguments (`asarray(q)`, `arange(n)`: the same for
    # every call of the signature) is a constant of the graph, not a capture that made the signature plain; and a
    # custom function (`arctan2`, `i0`) is inlined, as op by op, not one `custom_call` compiled as one program.
    trace = Trace(f"{name} (an eager composite)", COMPOSITE)
    targs, tkw = list(args), dict(kwargs)
    n = 0
    for i, a in enumerate(targs):
        if type(a) is Array:
            targs[i] = trace.new_arg(a.aval, f"argument {i}")
            n += 1
    for k in sorted(tkw):
        if type(tkw[k]) is Array:
            tkw[k] = trace.new_arg(tkw[k].aval, k)
            n += 1
    try:
        with tracing(trace):
            out = fn(*targs, **tkw)
        out_leaves, out_tree = flatten_outputs(out, name)
        graph = trace.to_graph(out_leaves, name)
    except Exception as e:  # (a user error, or a value the function needs concretely)
        log.debug(f"eager composite {name}: runs op by op ({type(e).__name__}: {e})")
        return _PLAIN
    if len(graph.in_vars) != n or not _pure(graph):
        return _PLAIN
    stats["traces"] += 1
    case = getattr(fn, "eager_case", None)
    # (an `eager_case` too: the module takes every case in one pass, where the guard alone read the values back and
    # ran two ufuncs over them, and a call it refused ran op by op: power of 100K floats 1.8 ms)
    size = _whole_graph(graph, _long(fn))
    if size:
        one = _Whole.compile(graph, out_tree) if size >= WHOLE_ELEMENTS else _Poly.compile(graph, out_tree)
        if one is not None:
            return one
    # (the runner keeps the call's other arguments, not its Arrays: `_again` takes each call's own)
    run = _runner(graph, out_tree, fn, tuple(_SLOT if type(a) is Array else a for a in args),
                  {k: _SLOT if type(v) is Array else v for k, v in kwargs.items()})
    if case is not None and run.all_rules and not kwargs:
        guard, simple = case
        short = _make(simple, args, kwargs)
        if short is not _PLAIN:
            return _cased(guard, short, run, args, graph, out_tree)
    return run


# From this many elements (an equation's result) an elementwise step op by op takes its shape-specific kernel
# (`eager._work` counts it twice against `HOST_MAX_ELEMENTS`): a composite of such steps is `_whole` from here.
WHOLE_ELEMENTS = eager.HOST_MAX_ELEMENTS // 2
_MAP = frozenset([*eager._ELEMENTWISE, structural.broadcast_in_dim_p]) - {structural.optimization_barrier_p}
# and reshapes and reductions (`nn.softmax`, `var`, `standardize`: 1000x1000 float32 op by op 1.8-2.5 ms, one module
# 0.35-0.64; 100x1000 polymorphic: 0.05-0.11 ms, op by op 0.10-0.20)
_WHOLE_MORE = frozenset([structural.reshape_p, reductions.reduce_sum_p, reductions.reduce_max_p,
                         reductions.reduce_min_p, reductions.reduce_prod_p, reductions.reduce_and_p,
                         reductions.reduce_or_p])


def _mapped(e) -> bool:
    """Whether equation `e` maps elements to elements of its result's shape: `_MAP`'s, and a bitcast between types of
    one width (power's subnormal test reads a float's bits)."""
    return e.prim in _MAP or e.prim is bitcast_convert_type_p and e.inputs[0].aval.shape == e.outputs[0].aval.shape


# From this many elements to `WHOLE_ELEMENTS`, such a graph on the CPU runs as one shape-polymorphic module (`_Poly`):
# op by op its steps are NumPy rules, one pass over memory each (nn.silu on 64K float32: 59 us, the module 31).
POLY_ELEMENTS = 1 << 13


def _large(leaves) -> bool:
    return any(math.prod(x.aval.shape) >= POLY_ELEMENTS for x in leaves)


def _long(fn) -> bool:
    """Whether `fn` declares itself a long chain of elementwise steps (`eager_module`: `i0`, `i1e`), whose graph
    runs as one module at every size (`_whole_graph`), traced on its first call: op by op on 4x4 float32 its ~380
    NumPy steps took 34 us, the polymorphic module's call ~7.5."""
    return getattr(fn, "eager_module", False)


def _whole_graph(graph, any_size: bool = False) -> int:
    """The elements of the largest result of a graph that runs as one module (`_Whole`, `_Poly`), else 0:
    elementwise equations, broadcasts, reshapes and reductions only, a result of `POLY_ELEMENTS` or more (any size
    with `any_size`: at least 1), and inexact equations that `_Fused` could not fuse with op by op's bits (`nn.silu`,
    `hypot`, `gelu`, `softmax`); its outputs all computed (none an argument or a constant)."""
    if not graph.eqns or any(type(o) is Literal or o in graph.in_vars for o in graph.outs):
        return 0
    big = 0
    for e in graph.eqns:
        if e.prim.multiple_results or not _mapped(e) and e.prim not in _WHOLE_MORE:
            return 0
        big = max(big, *(math.prod(o.aval.shape) for o in e.outputs))
    if big < (1 if any_size else POLY_ELEMENTS):
        return 0
    return big if not _fusable(graph, [e for e in graph.eqns if not _exact_eqn(e)]) else 0


def _dynamic(graph):
    """`graph` for any size: each dimension above 1 dynamic, its run-time size read from the argument of the largest
    result's shape (`like`; IREE resolves no size read from a value behind a barrier), a broadcast a `broadcast_like`
    of that argument, each dimension the first of its dimensions of that size. Sound for every call whose own graph
    gives the same dynamic graph (the module's key): in each, every such size was that of the dimension named.

    Where that shape has no 1, values drop their 1s (IREE 3.13 has no dynamic reshape: a keepdims reshape is the value
    itself; kept through a reshape to (n, 1) and back, a reduction's result made softmax 10x slower), results with 1s
    get them back by a broadcast, and an argument with 1s is read as it is by the broadcasts that stretch it (through
    a reshape dropping its 1s too), by no other step. Where it has a 1 (a batch of one), values keep their 1s and a
    reshape must change nothing. None where no argument has that shape, a size is none of its, a reshape moves data,
    a reduction reduces a dropped 1, or another step reads an argument with 1s."""
    shape = max((o.aval.shape for e in graph.eqns for o in e.outputs), key=math.prod)
    like = next((v for v in graph.in_vars if v.aval.shape == shape), None)
    if like is None or all(d <= 1 for d in shape):
        return None
    squeeze = 1 not in shape

    def kept(s: tuple) -> list:  # the positions a value keeps
        return [i for i, d in enumerate(s) if d != 1] if squeeze else list(range(len(s)))

    def dyn(s: tuple, positions=None) -> tuple:
        return tuple(DYNAMIC if s[i] > 1 else s[i] for i in (kept(s) if positions is None else positions))

    def sizes(s: tuple, positions) -> tuple:  # per position, the dimension of `like` of its size (-1: a 1)
        if any(s[i] > 1 and s[i] not in shape for i in positions):
            raise _OtherShape
        return tuple(shape.index(s[i]) if s[i] > 1 else -1 for i in positions)

    new: dict[int, Var] = {}  # a value of `graph` -> its value in the dynamic graph
    raw: dict[int, Var] = {}  # an argument with 1s (squeezing), or a reshape dropping them -> that argument

    def var(v):
        if type(v) is Literal:
            if v.aval.shape:
                raise _OtherShape
            return v
        if v.id in raw:
            raise _OtherShape  # (read by a step other than a broadcast)
        if v.id not in new:
            new[v.id] = Var(v.aval.update(shape=dyn(v.aval.shape)))
        return new[v.id]
    try:
        ins, eqns = [], []
        for v in graph.in_vars:
            if squeeze and 1 in v.aval.shape:
                raw[v.id] = v
                ins.append(new.setdefault(v.id, Var(v.aval.update(shape=dyn(v.aval.shape, range(v.aval.ndim))))))
            else:
                ins.append(var(v))
        full = new[like.id]
        for e in graph.eqns:
            if not _mapped(e) and e.prim not in _WHOLE_MORE:
                return None
            x, out = (e.inputs[0] if e.inputs else None), e.outputs[0]
            xs, os = (x.aval.shape if type(x) is Var else ()), out.aval.shape
            if e.prim is structural.reshape_p:
                if type(x) is Var and x.id in raw and raw[x.id] is x and 1 not in os and \
                        os == tuple(d for d in xs if d != 1):
                    raw[out.id] = x  # (its argument's 1s dropped: the broadcast after reads the argument)
                elif [xs[i] for i in kept(xs)] == [os[i] for i in kept(os)]:
                    new[out.id] = var(x)  # (the same value)
                else:
                    return None
                continue
            if e.prim is structural.broadcast_in_dim_p:
                bd = e.params["broadcast_dimensions"]
                if type(x) is Var and x.id in raw:  # (the argument's own dimensions: its 1s to dimensions left over)
                    arg = raw[x.id]
                    if 1 in os:
                        return None
                    at = list(range(len(xs))) if arg is x else kept(arg.aval.shape)
                    free = iter([d for d in range(len(os)) if d not in bd])
                    dims = tuple(bd[at.index(i)] if i in at else next(free, -1) for i in range(arg.aval.ndim))
                    if -1 in dims:
                        return None
                    src = new[arg.id]
                else:
                    if os == xs and tuple(bd) == tuple(range(len(xs))):
                        new[out.id] = var(x)  # (no broadcast)
                        continue
                    dims, src = tuple(kept(os).index(bd[i]) for i in kept(xs)), var(x)
                eqns.append(Eqn(structural.broadcast_like_p, [src, full], {
                    "broadcast_dimensions": dims, "like_dims": sizes(os, kept(os))}, [var(out)]))
                continue
            if e.prim in _WHOLE_MORE:  # (a reduction)
                ks = kept(xs)
                if any(a not in ks for a in e.params["axes"]):
                    return None
                eqns.append(Eqn(e.prim, [var(x)], {**e.params, "axes": tuple(ks.index(a) for a in e.params["axes"])},
                                [var(out)]))
                continue
            eqns.append(Eqn(e.prim, [var(i) for i in e.inputs], e.params, [var(o) for o in e.outputs]))
        outs = []
        for o in graph.outs:
            os = o.aval.shape if type(o) is Var else ()
            if len(kept(os)) < len(os):  # (its 1s added back)
                everything = list(range(len(os)))
                outs.append(Var(o.aval.update(shape=dyn(os, everything))))
                eqns.append(Eqn(structural.broadcast_like_p, [var(o), full], {
                    "broadcast_dimensions": tuple(kept(os)), "like_dims": sizes(os, everything)}, [outs[-1]]))
            else:
                outs.append(var(o))
        return Graph(ins, eqns, outs, graph.name)
    except _OtherShape:
        return None


class _OtherShape(Exception):
    """A value of `_dynamic`'s graph neither 0-d nor of the full shape."""


class _Poly:
    """A composite signature of mid size on the CPU (`POLY_ELEMENTS` to `WHOLE_ELEMENTS`) run as one shape-polymorphic
    module on every call, its first included (`_dynamic`: one module per function, rank, dtypes and other
    arguments, for every size, compiled or loaded before that first call returns); its calls enqueued behind
    arguments still being computed. One answer for the signature whatever is cached."""

    __slots__ = ("kernel", "in_avals", "out_avals", "out_tree", "all_rules")
    MAX = 64  # loaded modules kept (least recently used dropped: its next signature loads it from the disk cache)

    def __init__(self, kernel, graph, out_tree):
        self.kernel, self.in_avals, self.out_avals = kernel, graph.in_avals, graph.out_avals
        self.out_tree, self.all_rules = out_tree, False

    @staticmethod
    def compile(graph, out_tree) -> "_Poly | None":
        backend = get_backend()
        dyn = _dynamic(graph) if backend.name == "cpu" else None
        if dyn is None:
            return None
        key = (backend.name, dyn.fingerprint())
        with _loaded_lock:
            kernel = _polys.pop(key, _UNSEEN)
            if kernel is not _UNSEEN:
                _polys[key] = kernel
        if kernel is _UNSEEN:
            name = f"composite_{graph.name}"
            try:
                text = str(lower_graph(dyn, name))
                art, _ = compile_cached(backend, text, name, backend.flags(), dyn.in_avals, dyn.out_avals)
                kernel = eager.Polymorphic(art, backend, False)
                stats["poly"] += 1
            except Exception as e:  # (its signatures run op by op)
                log.debug(f"eager composite {graph.name}: no polymorphic module, op by op ({type(e).__name__}: {e})")
                kernel = None
            with _loaded_lock:
                if len(_polys) >= _Poly.MAX:
                    _polys.pop(next(iter(_polys)))
                _polys[key] = kernel
        return None if kernel is None else _Poly(kernel, graph, out_tree)

    def __call__(self, leaves):
        stats["poly_calls"] += 1
        outs = self.kernel(leaves, self.in_avals, self.out_avals)
        return tree_unflatten(self.out_tree, outs)


_polys: dict[tuple, object] = {}  # (backend, dynamic graph's fingerprint) -> eager.Polymorphic, or None (refused)
_UNSEEN = object()


class _Whole:
    """A composite signature run as one module on every call, its first included: compiled (or loaded from the
    persistent cache) before that call returns, as a shape-specific kernel is op by op at these sizes; its calls
    enqueued behind arguments still being computed. Its bits are the module's, compiled as jit compiles the function
    (its passes too), one answer for the signature whatever is cached; they may differ from op by op's in the last
    bits (a product and a sum contracted into one multiply-add, sums in another order). A module IREE refuses leaves the signature
    to `_runner` (op by op), on every call."""

    __slots__ = ("graph", "out_tree", "runner", "all_rules")

    def __init__(self, graph, out_tree, runner):
        self.graph, self.out_tree, self.runner, self.all_rules = graph, out_tree, runner, False

    @staticmethod
    def _load(graph, out_tree):
        # (with jit's passes: the jitted function's module and bits; without them, 1000x1000 `var` and `std` gave
        # other bits than jit and took 444-555 us against 385-424, docs/log.md 2026-12-02)
        return Lowered(graph, f"composite_{graph.name}", None, out_tree, (), None, get_backend()).compile().runner

    @staticmethod
    def compile(graph, out_tree) -> "_Whole | None":
        try:
            runner = _Whole._load(graph, out_tree)
        except Exception as e:
            log.debug(f"eager composite {graph.name}: no whole module, op by op ({type(e).__name__}: {e})")
            return None
        stats["whole"] += 1
        return _Whole(graph, out_tree, runner)._kept()

    def _kept(self) -> "_Whole":
        """Count this loaded module among `config.eager_cache_size`: the oldest one is unloaded (its next call loads
        it again from the persistent cache: the same module)."""
        with _loaded_lock:
            _wholes.append(self)
            while len(_wholes) > max(config.eager_cache_size, 1):
                _wholes.popleft().runner = None
        return self

    def __call__(self, leaves):
        stats["whole_calls"] += 1
        runner = self.runner
        if runner is None:
            self.runner = runner = _Whole._load(self.graph, self.out_tree)
            self._kept()
        return runner(leaves)


_wholes: collections.deque = collections.deque()  # loaded `_Whole` modules, oldest first


def _cased(guard: Callable, short: Callable, run: Callable, args: tuple, graph, out_tree) -> Callable:
    """`run(leaves)` of a composite with an `eager_case` (`guard`, `simple`): where `guard(*args)`, each Array
    replaced by its host value, holds, the runner of `simple` (`short`), else the composite's own: its polymorphic
    module (`_Poly`, compiled at the first call the guard refuses: power's ~80 steps op by op took 50 us on 4x4,
    the module ~5), or where none compiles `run` (every step with a NumPy rule taking it). The composite vouches
    that `simple` gives its bits there, and the module gives op by op's (tests check both). (The other arguments
    are the signature's: the same on each call.)"""
    errors, quiet = _errors, _quiet
    slots = [i for i, a in enumerate(args) if type(a) is Array]
    template = None if len(slots) == len(args) else [None if type(a) is Array else a for a in args]
    own = [None]  # the composite's own runner, chosen at the first call the guard refuses

    def cased(leaves):
        xs = [x._value() for x in leaves]  # (read back once, as the composite's NumPy rules read them)
        if template is not None:
            full = list(template)
            for i, v in zip(slots, xs):
                full[i] = v
            xs = full
        token = errors.set(quiet)
        try:
            ok = guard(*xs)
        except Exception:  # (a guard that cannot tell: the composite's own steps, as on any other failure)
            ok = False
        finally:
            errors.reset(token)
        stats["cases"] += bool(ok)
        if ok:
            return short(leaves)
        if own[0] is None:
            own[0] = _Poly.compile(graph, out_tree) or run
        return own[0](leaves)
    return cased


# Primitives whose eager rule (`impl`) returns its operand itself: a composite's value is its operand's.
_IDENTITY = frozenset([elementwise.stop_gradient_p, structural.optimization_barrier_p])


def _live(graph) -> list:
    """The equations some output depends on (the others are pure and their results unused: never run)."""
    need = {x.id for x in graph.outs if type(x) is not Literal}
    keep = []
    for eqn in reversed(graph.eqns):
        if any(o.id in need for o in eqn.outputs):
            keep.append(eqn)
            need.update(x.id for x in eqn.inputs if type(x) is not Literal)
    return keep[::-1]


def _neutral(prim, ins: list, folded: dict, avals: list, out_avals) -> int | None:
    """The operand a NumPy-rule `max` or `min` equation gives back unchanged: where the other is a constant of the
    dtype's lowest (max) or highest (min) value. `np.maximum(x, -inf)` returns x itself (NaN payloads kept; a
    zero needs another zero for `_max_host`'s fix), likewise for integers; None elsewhere."""
    if prim is not elementwise.max_p and prim is not elementwise.min_p:
        return None
    for k in (0, 1):
        c, other = folded.get(ins[k]), ins[1 - k]
        if c is None or avals[other] != out_avals[0]:
            continue
        kind = c.dtype.kind
        if kind == "f":
            edge = -np.inf if prim is elementwise.max_p else np.inf
        elif kind in "iu":
            info = np.iinfo(c.dtype)
            edge = info.min if prim is elementwise.max_p else info.max
        else:
            continue
        if c.size and bool((c == edge).all()):
            return other
    return None


# An exact composite of NumPy-rule steps on up to `HOST_READ_ELEMENTS` input elements runs them, not a fused module,
# up to this many steps (a step on a few elements takes ~0.3-0.6 us, a module's call ~3.5 us)
HOST_STEPS = 6


def _runner(graph, out_tree, fn: Callable, args: tuple, kwargs: dict) -> Callable:
    """`run(leaves)`: the graph's equations back to back, each as `eager.apply` runs it alone (module docstring),
    as one generated Python function (`_source`)."""
    backend = get_backend()
    host_ok = config.eager_tiering == "exact" and _quiet is not None
    slot: dict[int, int] = {}  # Var id -> its index in the values list
    consts: list = []  # (index, NumPy value) of the Literals and of equations on them alone
    avals: list = []
    folded: dict[int, np.ndarray] = {}  # index -> value, of Literals and of equations on them alone
    literals: dict[tuple, int] = {}  # a small Literal's value -> its index (equal ones are one value)
    seen: dict[tuple, list] = {}  # (primitive, params, input indices) -> output indices: an equation met before

    def index(x) -> int:
        if type(x) is Literal:
            v = x.value
            key = (x.aval, v.dtype.str, v.shape, v.tobytes()) if v.size <= 16 else None
            i = literals.get(key) if key is not None else None
            if i is None:
                i = len(avals)
                consts.append((i, v))
                folded[i] = v
                avals.append(x.aval)
                if key is not None:
                    literals[key] = i
            return i
        return slot[x.id]
    for v in graph.in_vars:
        slot[v.id] = len(avals)
        avals.append(v.aval)
    n_in = len(avals)
    steps = []  # (NumPy rule or None, params, primitive, eager plan or None, input indices, output indices, guard)
    all_rules = host_ok and backend.name == "cpu"  # every equation with a NumPy rule takes it (`_cased`)
    live = _live(graph)
    stats["pruned"] += len(graph.eqns) - len(live)
    kernels: list = []  # the inexact equations planned as kernels
    for eqn in live:
        ins = [index(x) for x in eqn.inputs]
        prim, params = eqn.prim, eqn.params
        if prim in _IDENTITY:  # (its rule returns the operand itself)
            slot[eqn.outputs[0].id] = ins[0]
            stats["pruned"] += 1
            continue
        # an equation met before (same primitive, parameters and operands) gives the same values (the parameters by
        # their repr, which names all of them (`_make` checked) and tells -0.0 from 0.0 and 1 from 1.0 and True;
        # a loop's graphs by themselves: equal graphs, the same computation)
        key = (prim, repr(sorted(params.items())) if prim not in _LOOPS else tuple(sorted(params.items())), tuple(ins))
        if key in seen:
            for o, i in zip(eqn.outputs, seen[key]):
                slot[o.id] = i
            stats["pruned"] += 1
            continue
        in_avals, out_avals = [avals[i] for i in ins], [o.aval for o in eqn.outputs]
        host = host_ok and prim.impl is None and \
            prim.hosts(in_avals, params, out_avals) and _always_host(prim, in_avals, params, out_avals, backend)
        same = _neutral(prim, ins, folded, avals, out_avals) if host else None
        if same is not None:  # max(x, -inf), min(x, inf): the rule gives x's bits, NaNs' included
            slot[eqn.outputs[0].id] = same
            stats["pruned"] += 1
            continue
        outs = []
        for o in eqn.outputs:
            slot[o.id] = len(avals)
            outs.append(len(avals))
            avals.append(o.aval)
        seen[key] = outs
        if host and all(i in folded for i in ins):  # constants only (broadcast zeros, ...): the same each call
            values = _fold(prim, [folded[i] for i in ins], params, out_avals)
            if values is not None:
                for o, value in zip(outs, values):
                    folded[o] = value
                    consts.append((o, value))
                continue
        if not host and prim.impl is None and ins and all(i in folded for i in ins) and \
                sum(math.prod(a.shape) for a in out_avals) <= KEPT_CONSTANT_ELEMENTS:
            # a kernel on constants alone (`median`'s index conversions): run once, here, its results constants
            values = _fold_kernel(prim, [Const(folded[i], avals[i]) for i in ins], in_avals, params, out_avals)
            if values is not None:
                for o, value in zip(outs, values):
                    folded[o] = value
                    consts.append((o, value))
                stats["folded_kernels"] += 1
                continue
        if not host and prim.hosts(in_avals, params, out_avals):
            all_rules = False
        if not host and not _exact_eqn(eqn):
            kernels.append(eqn)
        guard = None
        if host_ok and not host and prim in _DEFINED and all(np.dtype(a.dtype).kind in "iu" for a in in_avals) \
                and sum(math.prod(a.shape) for a in in_avals) <= HOST_READ_ELEMENTS \
                and _always_host(prim, in_avals, params, out_avals, backend):
            guard = _DEFINED[prim]
        steps.append((prim.host if host else None, params, prim, None if host else _plan(prim, in_avals, params),
                      ins, outs, guard))
    results = [index(o) for o in graph.outs]
    single = out_tree == tree_structure(0)
    views = _views(steps, avals, results)
    stats["views"] += len(views)
    compact = _compact(steps, consts, avals, views)
    stats["compact"] += len(compact)
    steps_of = _source(steps, consts, avals, n_in, results, backend, views, compact)
    passed = [(k, i) for k, i in enumerate(results) if i < n_in]  # outputs that are inputs, returned as they are
    # (not where every step is a NumPy rule on a few elements: the steps take less time than a module's call)
    small = all(s[3] is None for s in steps) and len(steps) <= HOST_STEPS and \
        sum(math.prod(a.shape) for a in avals[:n_in]) <= HOST_READ_ELEMENTS
    fused = _Fused(graph, backend, None if passed else out_tree) if host_ok and backend.name == "cpu" and graph.eqns and \
        not small and _fusable(graph, kernels) else None
    if fused is None and single and len(steps) == 1 and steps[0][0] is None and steps[0][6] is None and \
            steps[0][5] == results and all(i < n_in or i in folded for i in steps[0][4]):
        # (constant operands, `power(x, 3.5)`'s exponent, as `_source` passes them: a small one's host Array, its
        # buffer kept)
        ins = [i if i < n_in else Array.on_host(folded[i], avals[i], backend) if folded[i].size <= KEPT_CONSTANT_ELEMENTS
               and not folded[i].flags.writeable else Const(folded[i], avals[i]) for i in steps[0][4]]
        stats["one_kernel"] += 1
        return _one_kernel(steps[0][3], steps[0][1], graph.name, fn, args, kwargs, all_rules,
                           None if ins == list(range(n_in)) else ins)
    errors, quiet = _errors, _quiet
    first, later = steps_of
    current = [first]  # the first call checks each NumPy rule's result (`_source`), the next ones take `later()`
    first_lock = threading.Lock()  # (`first` notes what it saw in state `later` shares: one thread at a time)

    def run(leaves):
        if fused is not None:
            module = fused.runner
            if module is not None:  # compiled: the graph as one module (the same bits: every step is exact)
                stats["fused_calls"] += 1
                if not passed:
                    return module(leaves)  # (the module's runner builds the output tree)
                outs = module(leaves)
                for k, i in passed:
                    outs[k] = leaves[i]
                return outs[0] if single else tree_unflatten(out_tree, outs)
            if not fused.queued:
                fused.queue()
        token = errors.set(quiet) if host_ok else None
        try:
            f = current[0]
            if f is first:
                with first_lock:
                    f = current[0]
                    outs = f(leaves)
                    if f is first:
                        current[0] = later()
            else:
                outs = f(leaves)
        except Exception as e:  # (raised op by op again, where the functions name themselves)
            log.debug(f"eager composite {graph.name}: runs op by op ({type(e).__name__}: {e})")
            stats["plain"] += 1
            if token is not None:
                errors.reset(token)
                token = None
            return _again(fn, args, kwargs, leaves)
        finally:
            if token is not None:
                errors.reset(token)
        return outs[0] if single else tree_unflatten(out_tree, outs)
    run.all_rules = all_rules
    return run


def _one_kernel(plan: Callable, params: dict, name: str, fn: Callable, args: tuple, kwargs: dict,
                all_rules: bool, ins: list | None = None) -> Callable:
    """`run(leaves)` of a graph that is one equation through its kernel (`pow`, an eager case's): its plan called
    directly, on the arguments as they are, or on `ins`: each operand an argument's index or a constant's Array."""
    if ins is not None:
        slots = [(j, i) for j, i in enumerate(ins) if type(i) is int]
        ops = list(ins)

    def run(leaves):
        try:
            if ins is None:
                return plan(leaves, params)[0]
            xs = ops.copy()
            for j, i in slots:
                xs[j] = leaves[i]
            return plan(xs, params)[0]
        except Exception as e:  # (raised op by op again, where the function names itself)
            log.debug(f"eager composite {name}: runs op by op ({type(e).__name__}: {e})")
            stats["plain"] += 1
            return _again(fn, args, kwargs, leaves)
    run.all_rules = all_rules
    return run


# Operations whose NumPy rules broadcast their operands and give each element's correctly rounded (or exact)
# value whatever the operands' layout: a broadcast feeding only these can be a view of its operand's shape with
# ones (NumPy broadcasts it), not the stretched view `_broadcast_host` builds. (Not the transcendental functions:
# NumPy's vector and scalar loops differ there, and a layout may pick either.)
_BROADCASTING = frozenset([elementwise.add_p, elementwise.sub_p, elementwise.mul_p, elementwise.div_p,
                           elementwise.max_p, elementwise.min_p, elementwise.eq_p, elementwise.ne_p, elementwise.lt_p,
                           elementwise.le_p, elementwise.gt_p, elementwise.ge_p, elementwise.and_p,
                           elementwise.or_p, elementwise.xor_p, elementwise.select_p])


def _views(steps, avals, results) -> dict[int, tuple]:
    """step number -> the shape (the operand's dimensions, ones elsewhere) a NumPy-rule `broadcast_in_dim` can
    reshape its operand to instead: its result is no output, every step reading it is a NumPy rule in
    `_BROADCASTING` and still gets its full result shape from its operands."""
    made = {o: n for n, s in enumerate(steps) for o in s[5]}
    readers: dict[int, list] = {}
    for n, (_, _, _, _, ins, _, _) in enumerate(steps):
        for i in ins:
            readers.setdefault(i, []).append(n)
    kernel_made = {o for rule, *_, outs, _ in steps if rule is None for o in outs}
    views: dict[int, tuple] = {}
    for n, (rule, params, prim, _, ins, outs, _) in enumerate(steps):
        if rule is None or prim is not structural.broadcast_in_dim_p or ins[0] in kernel_made or outs[0] in results:
            continue
        dims, shape = tuple(params["broadcast_dimensions"]), avals[outs[0]].shape
        if list(dims) != sorted(set(dims)) or not all(steps[r][0] is not None and steps[r][2] in _BROADCASTING
                                                      for r in readers.get(outs[0], ())):
            continue
        kshape = [1] * len(shape)
        for i, d in enumerate(dims):
            kshape[d] = avals[ins[0]].shape[i]
        views[n] = tuple(kshape)
    while True:  # (each reader's operands, views included, still broadcast to its result's shape)
        shape_of = lambda i: views[made[i]] if i in made and made[i] in views else avals[i].shape
        bad = [n for n in views for r in readers.get(steps[n][5][0], ())
               if _broadcast_shape([shape_of(i) for i in steps[r][4]]) != avals[steps[r][5][0]].shape]
        if not bad:
            return views
        for n in bad:
            views.pop(n, None)


def _compact(steps, consts, avals, views: dict) -> dict[tuple, np.ndarray]:
    """(step, operand) -> the value a NumPy-rule step in `_BROADCASTING` reads instead of a constant that is a
    stretched view (a folded `broadcast_in_dim`: strides 0): its one value as a 0-d array where every stride is 0
    (NumPy's loops take ~0.36 us on 4x4 with a 0-d operand, ~0.83 with the stretched view), else a contiguous copy
    of a small one; where the step's operands still broadcast to its result's shape. Each element is the same
    value, and those rules give each element's correctly rounded (or exact) value whatever the layout (real
    dtypes): the same bits. Other readers (transcendental rules, kernels, uniform selects' taken operands) keep the view."""
    small = {}
    for i, c in consts:
        if type(c) is not np.ndarray or not c.ndim or not c.size or 0 not in c.strides or c.dtype.kind == "c":
            continue  # (complex products are not correctly rounded: NumPy's loops for a layout may differ)
        if not any(c.strides):
            z = np.array(c[(0,) * c.ndim], dtype=c.dtype)
        elif c.size <= KEPT_CONSTANT_ELEMENTS:
            z = np.ascontiguousarray(c)
        else:
            continue
        z.flags.writeable = False
        small[i] = z
    made = {o: n for n, s in enumerate(steps) for o in s[5]}
    shape_of = lambda i: views[made[i]] if i in made and made[i] in views else avals[i].shape
    out: dict[tuple, np.ndarray] = {}
    for n, (rule, _, prim, _, ins, outs, _) in enumerate(steps):
        if rule is None or prim not in _BROADCASTING or n in views or not any(i in small for i in ins):
            continue
        shapes = [shape_of(i) for i in ins]
        for j, i in enumerate(ins):  # (one at a time: each kept where the result's shape still follows)
            if i in small:
                was, shapes[j] = shapes[j], small[i].shape
                if _broadcast_shape(shapes) == avals[outs[0]].shape:
                    out[n, j] = small[i]
                else:
                    shapes[j] = was
    return out


def _broadcast_shape(shapes):
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        return None


KEPT_CONSTANT_ELEMENTS = 1024  # a constant operand of a kernel step up to this size is uploaded once per signature

_RESHAPE = re.compile(r"    v\d+ = \w+(\.reshape\(s\d+\))?$")  # a generated reshape (or the value itself)


# max and min of float `abs` results (`hypot`'s): their zeros are all +0, so NumPy's maximum and minimum give IEEE's
# max and min of zeros, and the rules' sign fix (a pass over the result to find zeros) is skipped (docs/log.md,
# 2026-12-01).
_MINMAX = {elementwise.max_p: np.maximum, elementwise.min_p: np.minimum}


def _source(steps, consts, avals, n_in: int, results: list, backend, views: dict,
            compact: dict | None = None) -> tuple[Callable, Callable]:
    """(`f(leaves) -> list of output Arrays`, a function making the next calls' `f`), running `steps` as
    straight-line Python (no loop over a plan, no per-step dispatch on its kind): NumPy rules called on NumPy
    values, kernels' plans on Arrays (Literals as Consts, rules' results as host Arrays: what `eager.apply` got op by
    op), integer division on the host where its guard says it is defined. The first checks each rule's result
    shape and converts a result of another type or dtype (a 0-d result is a NumPy scalar), noting which rules needed
    it: a rule's result type, dtype and shape follow its operands' dtypes and shapes, which the signature fixes, so
    the next calls' function converts only those, and 0-d results. `compact`: (step, operand) -> the constant's
    compact value (`_compact`), which that NumPy rule reads instead."""
    ns = {"ndarray": np.ndarray, "Array": Array, "asarray": np.asarray, "on_host": Array.on_host, "backend": backend}
    names: dict[int, str] = {}  # index -> the expression of its value (host values, or Arrays from kernels)
    kernel_made: set = set()  # indices whose value may be an Array (a kernel's result)
    for i, c in consts:
        ns[f"c{i}"] = c
        names[i] = f"c{i}"
    read = sorted({i for rule, _, _, _, ins, _, guard in steps if rule is not None or guard is not None
                   for i in ins if i < n_in})
    ns["_val"] = lambda x: x._value() if type(x) is Array else x
    ns["_up"] = lambda x, a: Array.on_host(x, a, backend) if type(x) is np.ndarray else x
    ns["_const"] = {}

    def host(i: int) -> str:  # a NumPy value
        return f"_val(v{i})" if i in kernel_made else names[i]

    def operand(i: int, n: int, j: int) -> str:  # what a kernel's plan gets
        if i < n_in:
            return f"L{i}"
        if i in kernel_made:
            ns[f"a{n}_{j}"] = avals[i]
            return f"_up(v{i}, a{n}_{j})"
        if names[i].startswith("c"):
            c = ns[names[i]]  # (a small one as a host Array: uploaded by the first call, its buffer kept)
            ns[f"k{n}_{j}"] = Array.on_host(c, avals[i], backend) if c.size <= KEPT_CONSTANT_ELEMENTS and \
                not c.flags.writeable else Const(c, avals[i])
            return f"k{n}_{j}"
        ns[f"a{n}_{j}"] = avals[i]
        return f"_up(v{i}, a{n}_{j})"

    reshaped: dict[int, tuple] = {}  # index of a reshape's result -> its first operand's expression and shape
    ns["_cnt"] = _count_nonzero
    made = {o: n for n, s in enumerate(steps) for o in s[5]}
    shape_of = lambda i: views[made[i]] if i in made and made[i] in views else avals[i].shape  # (at run time)

    def of_abs(i: int) -> bool:  # a float `abs` rule's result: its zeros are +0 (and its NaNs positive)
        s = steps[made[i]] if i in made else None
        return s is not None and s[0] is not None and s[2] is elementwise.abs_p and np.dtype(avals[i].dtype).kind == "f"

    def body(check: bool, conv: set) -> list[str]:
        kernel_made.clear()
        reshaped.clear()
        for i in range(n_in):
            names[i] = f"v{i}"
        lines = [f"    {''.join(f'L{i}, ' for i in range(n_in))}= leaves"] if n_in else []
        for i in read:
            lines.append(f"    v{i} = L{i}._value()")
        # (the first call runs every step: it notes each rule's conversions, `_conv`, for all of them)
        ctx, sides = ([()] * len(steps), {}) if check else _regions(steps, results, shape_of, avals)
        lines += region((), ctx, sides, check, conv, "", {})
        return lines

    def step(n: int, check: bool, conv: set) -> list[str]:
        """Step `n`'s lines (the select's own line first)."""
        rule, params, prim, plan, ins, outs, guard = steps[n]
        lines = []
        if rule is not None:
            o, a = outs[0], avals[outs[0]]
            args = ", ".join(host(i) for i in ins)
            if compact:
                parts = []
                for j, i in enumerate(ins):
                    if (n, j) in compact:
                        ns[f"z{n}_{j}"] = compact[n, j]
                        parts.append(f"z{n}_{j}")
                    else:
                        parts.append(host(i))
                args = ", ".join(parts)
            if n in views or (prim is structural.reshape_p and ins[0] not in kernel_made):
                # (reshape's rule is this method call; a reshape of a reshape reads the first one's operand)
                ns[f"s{n}"] = shape = views[n] if n in views else tuple(params["new_sizes"])
                src, src_shape = reshaped.get(ins[0], (args, avals[ins[0]].shape))
                # (to the shape it has: that value itself)
                lines.append(f"    v{o} = {src}" if shape == src_shape else f"    v{o} = {src}.reshape(s{n})")
                reshaped[o] = (src, src_shape)
            else:
                bound = prim.host_bound  # (the rule for this signature, where it has one)
                ns[f"r{n}"] = bound([avals[i] for i in ins], params) if bound is not None else \
                    functools.partial(rule, **params) if params else rule
                if prim in _MINMAX and all(of_abs(i) for i in ins):
                    ns[f"r{n}"] = _MINMAX[prim]
                # (a rule of several results, `sort`'s, gives a sequence of them)
                lines.append(f"    {''.join(f'v{o}, ' for o in outs)}= r{n}({args})" if prim.multiple_results
                             else f"    v{o} = r{n}({args})")
                for k, o in enumerate(outs):
                    a, d, h = avals[o], f"d{n}" if k == 0 else f"d{n}_{k}", f"h{n}" if k == 0 else f"h{n}_{k}"
                    ns[d] = np.dtype(a.dtype)
                    if check:
                        ns[h] = a.shape
                        lines += [f"    if type(v{o}) is not ndarray or v{o}.dtype is not {d}: "
                                  f"v{o} = asarray(v{o}, {d}); _conv.add({n})",
                                  f"    if v{o}.shape != {h}: raise RuntimeError("
                                  f"'the NumPy rule of {prim.name} gave shape ' + str(v{o}.shape) + ' for {a.shape}')"]
                    elif n in conv or not a.shape:  # (0-d: `_max_host` gives a scalar or a 0-d array, by value)
                        lines.append(f"    if type(v{o}) is not ndarray or v{o}.dtype is not {d}: "
                                     f"v{o} = asarray(v{o}, {d})")
            for o in outs:
                names[o] = f"v{o}"
            return lines
        ns[f"p{n}"], ns[f"q{n}"] = plan, params
        call = [f"    {''.join(f'v{o}, ' for o in outs)}= p{n}([{', '.join(operand(i, n, j) for j, i in enumerate(ins))}], q{n})"]
        if guard is not None:  # (integer division: on the host where defined, the kernel's bits)
            ns[f"g{n}"], ns[f"d{n}"] = guard, np.dtype(avals[outs[0]].dtype)
            lines += [f"    v{outs[0]} = g{n}({', '.join(host(i) for i in ins)})",
                      f"    if v{outs[0]} is not None: v{outs[0]} = asarray(v{outs[0]}, d{n})",
                      "    else:", "    " + call[0]]
        else:
            lines += call
        for o in outs:
            names[o] = f"v{o}"
            kernel_made.add(o)
        return lines

    def region(c: tuple, ctx: list, sides: dict, check: bool, conv: set, pad: str, counted: dict) -> list[str]:
        """The lines of the steps in context `c` (`_regions`), each select's regions inside its tests. `counted`:
        mask index -> the names of its value and its count, made by the lines before these (in this or an
        enclosing region)."""
        lines, counted = [], dict(counted)
        for n in range(len(steps)):
            if ctx[n] != c:
                continue
            if n not in sides:
                lines += [pad + ln for ln in step(n, check, conv)]
                continue
            # a select whose mask may be uniform: each operand's steps run only where some element takes them
            _, _, _, _, (p, t, f), (o,), _ = steps[n]
            if p not in counted:
                m = host(p)
                if not re.fullmatch(r"[vc]\d+", m):
                    lines.append(f"{pad}    m{n} = {m}")
                    m = f"m{n}"
                if m.startswith("c") and isinstance(ns.get(m), np.ndarray):  # (a constant mask: counted once, here)
                    lines.append(f"{pad}    n{n} = {int(_count_nonzero(ns[m]))}")
                else:
                    lines.append(f"{pad}    n{n} = _cnt({m})")
                counted[p] = (m, f"n{n}")
            m, cnt = counted[p]
            size = math.prod(shape_of(p))  # (the mask's, as the rules give it: the signature fixes it)
            for k, test in ((1, cnt), (2, f"{cnt} != {size}")):
                inner = region(c + ((n, k),), ctx, sides, check, conv, pad + "    ", counted)
                if inner:
                    lines += [f"{pad}    if {test}:", *inner]
            full = step(n, check, conv)  # (`v = r(m, t, f)`, and its conversion where the first call made one)
            full[0] = full[0].replace(f"r{n}({host(p)}, ", f"r{n}({m}, ", 1)  # (a compact constant mask: kept)
            sk = sides[n]
            lines += [f"{pad}    if {cnt} == 0: v{o} = {host(f)}" if sk[1] else f"{pad}    if {cnt} == 0: {full[0].strip()}",
                      f"{pad}    elif {cnt} == {size}: v{o} = {host(t)}" if sk[2] else
                      f"{pad}    elif {cnt} == {size}: {full[0].strip()}",
                      f"{pad}    else: {full[0].strip()}", *[pad + ln for ln in full[1:]]]
        return lines

    def outputs(lines: list) -> list[str]:
        outs = []
        for k, i in enumerate(results):
            if i < n_in:
                outs.append(f"L{i}")  # (an input returned as it is: the same Array, as op by op)
                continue
            ns[f"o{k}"] = a = avals[i]
            if i in kernel_made or not names[i].startswith("v") or \
                    math.prod(a.shape) * np.dtype(a.dtype).itemsize > KEEP_HOST_BYTES:
                outs.append(f"_res({names[i]}, o{k})")
            else:  # a NumPy rule's result: an Array of it kept on the host (`eager.host_result`)
                lines.append(f"    v{i}.flags.writeable = False")
                outs.append(f"on_host(v{i}, o{k}, backend)")
        lines.append(f"    return [{', '.join(outs)}]")
        # (a reshape only read by other reshapes, which read its operand instead, is not made)
        return [ln for ln in lines if not (_RESHAPE.match(ln) and
                                           not any(re.search(rf"\b{ln.split()[0]}\b", other) for other in lines
                                                   if other is not ln))]

    def res(x, a):  # a NumPy rule's result (or a constant): an Array, as `eager.apply` returns
        if type(x) is np.ndarray:
            x.flags.writeable = False
            return host_result(x, a, backend)
        return x
    ns["_res"] = res
    ns["_conv"] = conv = set()  # the rules whose result the first call converted

    def make(check: bool) -> Callable:
        text = "def steps(leaves):\n" + "\n".join(outputs(body(check, set(conv)))) + "\n"
        exec(compile(text, "<eager composite>", "exec"), ns)
        f = ns.pop("steps")
        f.text = text  # (for a reader debugging a composite)
        return f
    return make(True), lambda: make(False)


def _regions(steps, results: list, shape_of: Callable, avals: list) -> tuple[list, dict]:
    """(ctx, sides): where each step runs when a NumPy-rule select's mask is uniform. `sides[n]`, of select step
    `n`, tells for its operands 1 (on_true) and 2 (on_false) whether it can go unread: where the mask takes the
    other one everywhere, that one (of the result's shape as the rule runs) is the select's value, the same bits.
    `ctx[n]` is the chain of (select, operand) step `n`'s every use runs under (outermost first): the steps an
    operand alone reads run only where some element takes that operand (`_source`)."""
    sides = {}
    for n, (rule, _, prim, _, ins, outs, _) in enumerate(steps):
        # (not on an empty mask: "no element true" and "every element true" both hold there, and the code that
        # skips an operand would make neither)
        if rule is not None and prim is elementwise.select_p and math.prod(shape_of(ins[0])):
            shape = avals[outs[0]].shape
            sides[n] = {1: shape_of(ins[2]) == shape, 2: shape_of(ins[1]) == shape}
    uses: dict[int, list] = {}
    for n, s in enumerate(steps):
        for k, i in enumerate(s[4]):
            uses.setdefault(i, []).append((n, k))
    out = set(results)
    ctx: list = [()] * len(steps)
    for n in range(len(steps) - 1, -1, -1):
        common = None
        for o in steps[n][5]:
            cs = [()] if o in out else []
            for u, k in uses.get(o, ()):
                cs.append(ctx[u] + ((u, k),) if u in sides and k and sides[u][k] else ctx[u])
            for c in cs:
                if common is None:
                    common = c
                else:
                    m = 0
                    while m < min(len(c), len(common)) and c[m] == common[m]:
                        m += 1
                    common = common[:m]
        ctx[n] = common or ()
    return ctx, sides


def _exact_eqn(eqn) -> bool:
    """Whether an equation gives the same bits in a fused module as its own kernel or NumPy rule op by op: an
    `exact` operation (integer arithmetic and logic, data movement: its rule gives its kernel's bits), integer
    division (the kernel's edge cases are its lowering's selects, the same in any module; a composite's own
    divisors are never 0 nor MIN / -1), a gather (data movement, indices clamped alike everywhere)."""
    prim = eqn.prim
    if prim.impl is not None or prim.multiple_results:
        return False
    ins, outs = [x.aval for x in eqn.inputs], [o.aval for o in eqn.outputs]
    if prim in _DEFINED:
        return all(np.dtype(a.dtype).kind in "iu" for a in (*ins, *outs))
    return prim is gather_p or exact(prim, ins, outs)


# Float operations correctly rounded in any module (one IEEE operation per element, no polynomial, nothing to
# contract with): one of them planned as its kernel, between exact equations (`_fusable`), gives its kernel's bits.
_IEEE = frozenset([elementwise.add_p, elementwise.sub_p, elementwise.mul_p, elementwise.div_p, elementwise.max_p,
                   elementwise.min_p, elementwise.eq_p, elementwise.ne_p, elementwise.lt_p, elementwise.le_p,
                   elementwise.gt_p, elementwise.ge_p])


def _fusable(graph, kernels: list) -> bool:
    """Whether the graph as one module gives the bits op by op gives: every equation exact (`_exact_eqn`), or all
    but one, an `_IEEE` operation on real floats that op by op runs as its kernel (`kernels`, not its NumPy rule),
    beside data movement (`x > 0` on 1M floats: the scalar's broadcast and the comparison, one pass, not two)."""
    inexact = [e for e in graph.eqns if not _exact_eqn(e)]
    if not inexact:
        return True
    return len(inexact) == 1 and inexact[0] in kernels and inexact[0].prim in _IEEE and all(
        np.dtype(x.aval.dtype).kind == "f" for x in inexact[0].inputs)  # (a comparison's result: bool)


class _Fused:
    """A composite graph of exact equations (`_exact_eqn`) compiled as one module on the eager layer's compile
    thread (`eager._later`); its calls run op by op until `runner` is set. Loaded modules are bounded
    (`config.eager_cache_size`): the oldest one is dropped and its signature runs op by op again."""

    def __init__(self, graph, backend, out_tree):
        self.graph, self.backend, self.out_tree = graph, backend, out_tree
        self.runner = None
        self.queued = False

    def queue(self) -> None:
        if eager._later.submit(self, self.compile):  # (a full queue: asked again by the next call)
            self.queued = True
            stats["fused_queued"] += 1

    def compile(self) -> None:
        try:  # without stagec's passes, as the eager kernels: the graph's own operations
            runner = Lowered(self.graph, f"composite_{self.graph.name}", None, self.out_tree, (), "none",
                             self.backend).compile().runner
        except Exception as e:  # (the op-by-op path stays)
            log.debug(f"eager composite {self.graph.name}: no fused module ({type(e).__name__}: {e})")
            return
        finally:
            self.graph = None
        with _loaded_lock:  # (`clear_cache` runs on the caller's thread)
            if len(_loaded) >= max(config.eager_cache_size, 1):
                _loaded.pop(0).runner = None
            _loaded.append(self)
        self.runner = runner
        stats["fused"] += 1


_loaded: list[_Fused] = []  # fused modules loaded, oldest first
_loaded_lock = threading.Lock()


# A composite computes integer division and remainder on the host where every quotient is defined
# (`floor_divide`'s divisor is never 0 nor -1 beside MIN: always).
_DEFINED = elementwise.DEFINED_INT_DIVISION


def _fold(prim, xs: list, params: dict, out_avals: list) -> list | None:
    """The results of an equation on constants computed once by its NumPy rule, as each call would (read-only);
    None where the rule raised or gave another shape (the step then runs each call, and raises or is checked
    there), or where a value would hold more than `HOST_READ_ELEMENTS` elements of memory (a broadcast view holds
    none)."""
    try:
        token = _errors.set(_quiet)
        try:
            got = prim.host(*xs, **params)
            values = [np.asarray(v, dtype=a.dtype)
                      for v, a in zip(got if prim.multiple_results else (got,), out_avals, strict=True)]
        finally:
            _errors.reset(token)
    except Exception:
        return None
    for value, aval in zip(values, out_avals):
        if value.shape != aval.shape or (value.size > HOST_READ_ELEMENTS and 0 not in value.strides):
            return None
    for value in values:
        value.flags.writeable = False
    return values


def _fold_kernel(prim, xs: list, in_avals: list, params: dict, out_avals: list) -> list | None:
    """The results of an equation on constants alone, computed once as each call computes them (`eager._plan`'s
    runner for its signature: its kernel, or its NumPy rule where that gives the kernel's bits), read back
    (read-only); None where that raised or gave another dtype or shape (the step then runs on each call)."""
    try:
        token = _errors.set(_quiet)
        try:
            values = [x._value() if type(x) is Array else np.asarray(x) for x in _plan(prim, in_avals, params)(xs, params)]
        finally:
            _errors.reset(token)
    except Exception:
        return None
    if len(values) != len(out_avals) or any(v.shape != a.shape or v.dtype != a.dtype for v, a in zip(values, out_avals)):
        return None
    values = [np.array(v) for v in values]  # (its own copies: a readback may be a view of the buffer)
    for v in values:
        v.flags.writeable = False
    return values


_SLOT = object()  # where a runner's arguments held an Array


def _again(fn, args, kwargs, leaves):
    """The plain call with this call's arrays (the runner was made with another call's)."""
    it = iter(leaves)
    args = [next(it) if a is _SLOT else a for a in args]
    kwargs = {k: next(it) if kwargs[k] is _SLOT else kwargs[k] for k in sorted(kwargs)}
    return fn(*args, **kwargs)


def clear_cache() -> None:
    _sigs.clear()


def _unload() -> None:
    """Drop the loaded fused modules (their signatures run op by op again)."""
    with _loaded_lock:
        for f in _loaded:
            f.runner = None
        _loaded.clear()
        _polys.clear()
        for w in _wholes:
            w.runner = None  # (their signatures are dropped too: `_sigs` is cleared with them)
        _wholes.clear()


def _after_fork_in_child() -> None:
    """The plans hold kernels and modules loaded on the parent's runtime; its compile thread is not the child's."""
    global _loaded_lock
    _loaded_lock = threading.Lock()  # (held by that thread at the fork, perhaps)
    clear_cache()


os.register_at_fork(after_in_child=_after_fork_in_child)
