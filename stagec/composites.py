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
by op whatever is compiled or cached. A graph of equations that give their own bits in any module (`_exact_eqn`:
integer arithmetic and logic, integer division, data movement) is also compiled as one module on the eager compile
thread (`_Fused`), the calls running op by op until it is loaded: the same bits, one call. Calls that cannot be keyed
(tracers, NumPy or nested array arguments, NaN scalars), calls on arrays still being computed, and functions
that cannot be traced alone (they raise, need a value concretely or close over a device array) run plainly:
an error is raised by the function itself, as before. Signatures are kept up to 4 * `config.eager_cache_size`
and dropped when a setting changes.
"""
from __future__ import annotations

import collections
import functools
import logging
import math
import os
import threading
from typing import Callable

import numpy as np

from .array import Array
from .backend import get_backend
from .config import config
from .core import Const, Literal, Trace, flatten_outputs, tracing
from . import eager
from .eager import HOST_READ_ELEMENTS, _always_host, _errors, _plain, _plan, _quiet, exact, host_result
from .primitives import elementwise, gather_p
from .stages import Lowered
from .tree_util import tree_structure, tree_unflatten

log = logging.getLogger("stagec")
stats = {"traces": 0, "calls": 0, "plain": 0, "fused_queued": 0, "fused": 0, "fused_calls": 0}
_PLAIN = "plain"  # a signature that runs as a plain call
_SEEN = "seen"  # a signature called once (plainly)
_sigs: collections.OrderedDict[tuple, object] = collections.OrderedDict()  # signature -> its runner, or _PLAIN
# (least recently used first: a loop over new scalar values pushes out the oldest signatures, not all of them)
_sigs_config: list = [None]  # the `config.key_now` they were made under


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


def call(fn: Callable, args: tuple, kwargs: dict):
    """`fn(*args, **kwargs)` outside any trace, as one traced graph (`numpy._base._composite`'s eager path)."""
    if config.key_now is not _sigs_config[0]:  # any setting changed: signatures are planned again
        clear_cache()
        _sigs_config[0] = config.key_now
    try:
        key, leaves = _signature(fn, args, kwargs)
    except _Unkeyed:
        stats["plain"] += 1
        return fn(*args, **kwargs)
    run = _sigs.get(key)
    if run is None or run is _SEEN:
        # traced from its second call: a signature met once (`x % k` in a loop over k) costs what it did
        run = _SEEN if run is None else _make(fn, args, kwargs)
        if key not in _sigs and len(_sigs) >= 4 * max(config.eager_cache_size, 1):
            _sigs.popitem(last=False)
        _sigs[key] = run
    _sigs.move_to_end(key)
    if run is _PLAIN or run is _SEEN:
        stats["plain"] += 1
        return fn(*args, **kwargs)
    for x in leaves:
        if x._bv is None and x._job is not None:  # still being computed (`pending`): enqueued op by op, as before
            stats["plain"] += 1
            return fn(*args, **kwargs)
    stats["calls"] += 1
    return run(leaves)


def _make(fn: Callable, args: tuple, kwargs: dict):
    """The runner of this signature: `fn` traced with its Array arguments as inputs, then `_runner`; `_PLAIN`
    where the trace raised (the plain call raises it again, as before) or closed over a device array."""
    name = getattr(fn, "__name__", "composite")
    trace = Trace(f"{name} (an eager composite)", "composite", sub=True)  # (sub: device arrays are captured)
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
    if trace.captured or len(graph.in_vars) != n or not all(
            _plain(v) for e in graph.eqns for v in e.params.values()):
        return _PLAIN  # (a graph or function in a parameter: control flow, a callback, a custom rule, which op by
        # op run as their bodies' operations, would compile as one program here)
    stats["traces"] += 1
    # (the runner keeps the call's other arguments, not its Arrays: `_again` takes each call's own)
    return _runner(graph, out_tree, fn, tuple(_SLOT if type(a) is Array else a for a in args),
                   {k: _SLOT if type(v) is Array else v for k, v in kwargs.items()})


def _runner(graph, out_tree, fn: Callable, args: tuple, kwargs: dict) -> Callable:
    """`run(leaves)`: the graph's equations back to back, each as `eager.apply` runs it alone (module docstring)."""
    backend = get_backend()
    host_ok = config.eager_tiering == "exact" and _quiet is not None
    slot: dict[int, int] = {}  # Var id -> its index in the values list
    consts: list = []  # (index, NumPy value) of the Literals
    avals: list = []

    folded: dict[int, np.ndarray] = {}  # index -> value, of Literals and of equations on them alone

    def index(x) -> int:
        if type(x) is Literal:
            consts.append((len(avals), x.value))
            folded[len(avals)] = x.value
            avals.append(x.aval)
            return len(avals) - 1
        return slot[x.id]
    for v in graph.in_vars:
        slot[v.id] = len(avals)
        avals.append(v.aval)
    n_in = len(avals)
    steps = []  # (NumPy rule or None, params, primitive, eager plan or None, input indices, output indices)
    for eqn in graph.eqns:
        ins = [index(x) for x in eqn.inputs]
        outs = []
        for o in eqn.outputs:
            slot[o.id] = len(avals)
            outs.append(len(avals))
            avals.append(o.aval)
        in_avals, out_avals = [avals[i] for i in ins], [o.aval for o in eqn.outputs]
        prim, params = eqn.prim, eqn.params
        host = host_ok and not prim.multiple_results and prim.impl is None and \
            prim.hosts(in_avals, params, out_avals) and _always_host(prim, in_avals, params, out_avals, backend)
        if host and all(i in folded for i in ins):  # constants only (broadcast zeros, ...): the same each call
            value = _fold(prim, [folded[i] for i in ins], params, out_avals[0])
            if value is not None:
                folded[outs[0]] = value
                consts.append((outs[0], value))
                continue
        guard = None
        if host_ok and not host and prim in _DEFINED and all(np.dtype(a.dtype).kind in "iu" for a in in_avals) \
                and sum(math.prod(a.shape) for a in in_avals) <= HOST_READ_ELEMENTS \
                and _always_host(prim, in_avals, params, out_avals, backend):
            guard = _DEFINED[prim]
        steps.append((prim.host if host else None, params, prim, None if host else _plan(prim, in_avals, params),
                      ins, outs, guard))
    results = [index(o) for o in graph.outs]
    single = out_tree == tree_structure(0)
    size = len(avals)
    # Values by index: the inputs' host copies where a NumPy rule reads them, constants, then each equation's
    # result (a NumPy value from a rule, an Array from a kernel). A kernel's step gets the input Arrays
    # themselves, Literals as Consts, rules' results as host Arrays: what `eager.apply` got op by op.
    kernel_made = {i for rule, _, _, _, _, outs, _ in steps if rule is None for i in outs}
    read = sorted({i for rule, _, _, _, ins, _, guard in steps if rule is not None or guard is not None
                   for i in ins if i < n_in})
    template = [None] * size
    for i, c in consts:
        template[i] = c
    const_of = {i: Const(c, avals[i]) for i, c in consts}
    plan = []  # (NumPy rule, (arity, first two input indices, input indices, output index, dtype, shape, an input
    # from a kernel?, name)) or
    # (None, (eager plan, params, [(input index, 0: an input, 1: a constant, 2: a result)], its Const or None,
    #  its aval, output indices, a rule for the values where it gives the kernel's bits (`_DEFINED`), dtype))
    for rule, params, prim, step, ins, outs, guard in steps:
        if rule is not None:
            a = avals[outs[0]]
            plan.append((functools.partial(rule, **params) if params else rule,
                         (len(ins), ins[0] if ins else None, ins[1] if len(ins) > 1 else None, ins, outs[0],
                          np.dtype(a.dtype), a.shape, any(i in kernel_made for i in ins), prim.name)))
        else:
            plan.append((None, (step, params, [(i, 0 if i < n_in else 1 if i in const_of else 2) for i in ins],
                                [const_of.get(i) for i in ins], [avals[i] for i in ins], outs, guard,
                                avals[outs[0]].dtype)))
    errors, quiet, ndarray, on_host = _errors, _quiet, np.ndarray, Array.on_host
    passed = [(k, i) for k, i in enumerate(results) if i < n_in]  # outputs that are inputs, returned as they are
    fused = _Fused(graph, backend, None if passed else out_tree) if host_ok and backend.name == "cpu" and graph.eqns and \
        all(_exact_eqn(e) for e in graph.eqns) else None

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
        vals = template[:]
        for i in read:
            x = leaves[i]
            vals[i] = x._npy if x._npy is not None else x._value()
        token = errors.set(quiet) if host_ok else None
        try:
            for rule, how in plan:
                if rule is not None:
                    n, i0, i1, ins, out, dtype, shape, mixed, name = how
                    if mixed:
                        xs = [x._value() if type(x) is Array else x for x in [vals[i] for i in ins]]
                        value = rule(*xs)
                    elif n == 2:  # (most steps: no list built)
                        value = rule(vals[i0], vals[i1])
                    elif n == 1:
                        value = rule(vals[i0])
                    else:
                        value = rule(*[vals[i] for i in ins])
                    if type(value) is not ndarray or (value.dtype is not dtype and value.dtype != dtype):
                        value = np.asarray(value, dtype=dtype)
                    if value.shape != shape:
                        raise RuntimeError(f"the NumPy rule of {name} gave shape {value.shape} for {shape}")
                    vals[out] = value
                else:
                    step, params, ins, consts_in, in_avals, outs, guard, dtype = how
                    if guard is not None:  # (integer division: on the host where defined, the kernel's bits)
                        value = guard(*[x._value() if type(x) is Array else x for x in [vals[i] for i, _ in ins]])
                        if value is not None:
                            vals[outs[0]] = np.asarray(value, dtype)  # (a 0-d quotient is a NumPy scalar)
                            continue
                    xs = []
                    for (i, kind), c, a in zip(ins, consts_in, in_avals):
                        if kind == 0:
                            xs.append(leaves[i])
                        elif kind == 1:
                            xs.append(c)
                        else:
                            x = vals[i]
                            xs.append(on_host(x, a, backend) if type(x) is ndarray else x)
                    for i, o in zip(outs, step(xs, params)):
                        vals[i] = o
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
        outs = []
        for i in results:
            x = leaves[i] if i < n_in else vals[i]  # (an input returned as it is: the same Array, as op by op)
            if type(x) is ndarray:  # a NumPy rule's result (or a constant): an Array, as `eager.apply` returns
                a = avals[i]
                x.flags.writeable = False
                x = host_result(x, a, backend)
            outs.append(x)
        return outs[0] if single else tree_unflatten(out_tree, outs)
    return run


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


# Integer division and remainder have no NumPy rule (`eager.apply` calls their kernels: division by zero and
# MIN / -1 are the kernels' own); where every quotient is defined NumPy gives the kernel's bits, so a composite
# computes them on the host there (`floor_divide`'s divisor is never 0 nor -1 beside MIN: always).
_DEFINED = {elementwise.div_p: elementwise.defined_int_div, elementwise.rem_p: elementwise.defined_int_rem}


def _fold(prim, xs: list, params: dict, aval) -> np.ndarray | None:
    """An equation on constants computed once by its NumPy rule, as each call would (read-only); None where the
    rule raised or gave another shape (the step then runs each call, and raises or is checked there), or where
    the value would hold more than `HOST_READ_ELEMENTS` elements of memory (a broadcast view holds none)."""
    try:
        token = _errors.set(_quiet)
        try:
            value = np.asarray(prim.host(*xs, **params), dtype=aval.dtype)
        finally:
            _errors.reset(token)
    except Exception:
        return None
    if value.shape != aval.shape or (value.size > HOST_READ_ELEMENTS and 0 not in value.strides):
        return None
    value.flags.writeable = False
    return value


_SLOT = object()  # where a runner's arguments held an Array


def _again(fn, args, kwargs, leaves):
    """The plain call with this call's arrays (the runner was made with another call's)."""
    it = iter(leaves)
    args = [next(it) if a is _SLOT else a for a in args]
    kwargs = {k: next(it) if kwargs[k] is _SLOT else kwargs[k] for k in sorted(kwargs)}
    return fn(*args, **kwargs)


def clear_cache() -> None:
    _sigs.clear()
    with _loaded_lock:
        for f in _loaded:
            f.runner = None
        _loaded.clear()


def _after_fork_in_child() -> None:
    """The plans hold kernels and modules loaded on the parent's runtime; its compile thread is not the child's."""
    global _loaded_lock
    _loaded_lock = threading.Lock()  # (held by that thread at the fork, perhaps)
    clear_cache()


os.register_at_fork(after_in_child=_after_fork_in_child)
