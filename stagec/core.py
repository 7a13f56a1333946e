"""Abstract values, tracers, traces and the traced graph. Every operation is a `Primitive.bind`.

`bind` hands the operation to the innermost trace that owns one of its arguments or is staging
(`find_top_trace`): a staging `Trace` records an equation and returns tracers; transformation traces
(autodiff, batching) sit on the same stack. With no trace it runs eagerly through the runtime registered
with `set_eager_impl`.
"""
from __future__ import annotations

import functools
import itertools
import math
import sys
import threading
from typing import Any, Callable, Sequence

import numpy as np

from . import dtypes
from .tree_util import leaf_paths, tree_flatten, tree_unflatten
from .errors import (ConcretizationTypeError, TracerArrayConversionError, TracerBoolConversionError,
                     TracerIntegerConversionError,
                     UnexpectedTracerError)


class ShapedArray:
    """An abstract array: shape and dtype, no values. `weak_type` marks values born of Python scalars."""

    __slots__ = ("shape", "dtype", "weak_type", "_hash")

    def __init__(self, shape: Sequence[int], dtype, weak_type: bool = False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self._hash = hash((self.shape, self.dtype, self.weak_type))

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))  # (np.prod: ~2 us through its Python wrapper)

    def __eq__(self, other):
        return (isinstance(other, ShapedArray) and self.shape == other.shape and self.dtype == other.dtype
                and self.weak_type == other.weak_type)

    def __hash__(self):
        return self._hash

    def __reduce__(self):  # (rebuilt, not copied: a hash is not kept across processes)
        return ShapedArray, (self.shape, self.dtype, self.weak_type)

    def str_short(self) -> str:
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]"

    def __repr__(self):
        return f"ShapedArray({self.str_short()}{', weak_type=True' if self.weak_type else ''})"

    def strip_weak(self) -> ShapedArray:
        return ShapedArray(self.shape, self.dtype) if self.weak_type else self

    def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
        return ShapedArray(self.shape if shape is None else shape, self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)


def _is_python_scalar(x) -> bool:
    return type(x) in (bool, int, float, complex)


# (type, x64) -> a Python scalar's aval (weak but for bool's): one object each, as avals are immutable (an eager
# sampler's call took a dozen, each built anew through the x64 setting: ~1 us each)
_SCALAR_AVALS: dict = {}


def aval_of(x: Any) -> ShapedArray:
    """The abstract value of anything that can be an operand: tracer, Array, NumPy value or Python scalar."""
    t = type(x)
    if t is float or t is int or t is bool or t is complex:
        key = (t, dtypes.config.x64_enabled)
        aval = _SCALAR_AVALS.get(key)
        if aval is None:
            aval = _SCALAR_AVALS[key] = ShapedArray((), dtypes.python_scalar_dtype(x), weak_type=t is not bool)
        return aval
    aval = getattr(x, "aval", None)
    if isinstance(aval, ShapedArray):
        return aval
    if isinstance(x, (np.ndarray, np.generic)):
        return ShapedArray(x.shape, dtypes.canonicalize(x.dtype))
    raise TypeError(f"value of type {type(x).__name__} is not a valid stagec array type")


class Const:
    """A concrete value with an explicit aval (e.g. a Python scalar promoted to a dtype, still weak)."""

    __slots__ = ("aval", "value")

    def __init__(self, value: np.ndarray, aval: ShapedArray):
        self.value, self.aval = value, aval

    def _value(self) -> np.ndarray:
        return self.value


def to_numpy_constant(x: Any, aval: ShapedArray) -> np.ndarray:
    """A concrete operand as a NumPy array of its aval's dtype (for embedding or uploading)."""
    if hasattr(x, "_value"):
        return x._value()
    if _is_python_scalar(x):
        info = np.iinfo(aval.dtype) if dtypes.kind(aval.dtype) in "iu" else None
        if info is not None and not (info.min <= x <= info.max):
            raise OverflowError(f"Python int {x} is too large for {aval.dtype}")
    return np.asarray(x, dtype=aval.dtype)


# ---------------------------------------------------------------- graph


class Var:
    """A value in a traced graph."""

    __slots__ = ("aval", "id")
    _ids = itertools.count()

    def __init__(self, aval: ShapedArray):
        self.aval, self.id = aval, next(Var._ids)

    def __repr__(self):
        return f"%{self.id}:{self.aval.str_short()}"


class Literal:
    """A constant operand embedded in the graph."""

    __slots__ = ("value", "aval")

    def __init__(self, value: np.ndarray, aval: ShapedArray):
        self.value, self.aval = value, aval

    def __repr__(self):
        return f"{self.value!r}" if self.value.size < 8 else f"const:{self.aval.str_short()}"


class Eqn:
    """One primitive application; `loc` is (file, line) of the user's code that made it, when traced."""

    __slots__ = ("prim", "inputs", "params", "outputs", "loc")

    def __init__(self, prim: Primitive, inputs: list, params: dict, outputs: list[Var], loc=None):
        self.prim, self.inputs, self.params, self.outputs, self.loc = prim, inputs, params, outputs, loc

    def __repr__(self):
        ps = " ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{', '.join(map(repr, self.outputs))} = {self.prim.name}[{ps}] {' '.join(map(repr, self.inputs))}"


class Graph:
    """A traced function: inputs, equations in order, outputs (Vars or Literals)."""

    def __init__(self, in_vars: list[Var], eqns: list[Eqn], outs: list, name: str = "main"):
        self.in_vars, self.eqns, self.outs, self.name = in_vars, eqns, outs, name

    @property
    def in_avals(self):
        return [v.aval for v in self.in_vars]

    @property
    def out_avals(self):
        return [o.aval for o in self.outs]

    def fingerprint(self) -> tuple:
        """A structural, hashable description: equal for graphs that compute the same thing."""
        fp = self.__dict__.get("_fp")
        if fp is None:
            local: dict[int, int] = {}
            num = lambda v: local.setdefault(v.id, len(local))
            ref = lambda x: (x.aval, x.value.tobytes()) if isinstance(x, Literal) else num(x)
            fp = (tuple((num(v), v.aval) for v in self.in_vars),
                  tuple((e.prim.name, tuple(map(ref, e.inputs)), tuple(sorted(e.params.items())),
                         tuple((num(o), o.aval) for o in e.outputs)) for e in self.eqns),
                  tuple(map(ref, self.outs)))
            self._fp = fp
        return fp

    def __hash__(self):  # (kept: an eager call's plan key holds its graph, a sampler's ~250 avals hashed each call)
        h = self.__dict__.get("_hash")
        if h is None:
            h = self._hash = hash(self.fingerprint())
        return h

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, Graph):
            return False
        a, b = self._canonical(), other._canonical()
        if a is b:
            return True
        if hash(a) != hash(b) or a.fingerprint() != b.fingerprint():
            return False
        # Equal: the later comparisons of these two take the identity path (an eager sampler's graph, traced again
        # for another entry point, compared its ~250 avals with its plan key's on every call: 43 -> 75 us a call).
        b._canon = a
        return True

    def _canonical(self) -> Graph:
        g = self
        while (c := g.__dict__.get("_canon")) is not None:
            g = c
        return g

    def __repr__(self):
        lines = [f"{{ lambda {' '.join(map(repr, self.in_vars))} ."]
        lines += [f"    {e!r}" for e in self.eqns]
        lines.append(f"  in ({', '.join(map(repr, self.outs))}) }}")
        return "\n".join(lines)


def flatten_outputs(out: Any, who: str) -> tuple[list, Any]:
    """Flatten a traced function's result; every leaf must be an array or scalar (`who` names the function)."""
    leaves, tree = tree_flatten(out)
    for i, o in enumerate(leaves):
        try:
            aval_of(o)
        except TypeError:
            raise TypeError(f"{who} returned a value of type {type(o).__name__} at output "
                            f"{leaf_paths(out)[i] or '(top)'}; traced functions return arrays, scalars or "
                            f"pytrees of them") from None
    return leaves, tree


def eval_graph(graph: Graph, args: Sequence) -> list:
    """Run `graph` on `args` by binding its primitives again (under whatever trace is active)."""
    env = {v.id: a for v, a in zip(graph.in_vars, args)}
    read = lambda x: Const(x.value, x.aval) if isinstance(x, Literal) else env[x.id]
    for eqn in graph.eqns:
        outs = eqn.prim.bind(*[read(i) for i in eqn.inputs], **eqn.params)
        for v, o in zip(eqn.outputs, outs if eqn.prim.multiple_results else [outs]):
            env[v.id] = o
    return [read(o) for o in graph.outs]


# ---------------------------------------------------------------- tracing


class Trace:
    """Records equations while one function is traced; knows the argument each input came from."""

    level = 0  # set when entered: its depth on the trace stack

    def __init__(self, fun_desc: str = "a function", purpose: str = "jit", sub: bool = False):
        self.fun_desc, self.purpose, self.sub = fun_desc, purpose, sub
        self.in_vars: list[Var] = []
        self.arg_labels: list[str] = []
        self.eqns: list[Eqn] = []
        self.producer: dict[int, Eqn] = {}
        self.active = True
        # A sub-trace (a branch or loop body) turns values from outside it into extra inputs:
        # tracers of enclosing traces, and concrete Arrays (so its graph does not depend on their data).
        self.captured: list = []
        self._capture_ids: dict[int, Var] = {}

    def _capture(self, x: Any, label: str) -> Var:
        key = id(x._var) if isinstance(x, Tracer) else id(x)
        v = self._capture_ids.get(key)
        if v is None:
            v = self._capture_ids[key] = Var(x.aval)
            self.in_vars.append(v)
            self.arg_labels.append(label)
            self.captured.append(x)
        return v

    def new_arg(self, aval: ShapedArray, label: str) -> Tracer:
        v = Var(aval)
        self.in_vars.append(v)
        self.arg_labels.append(label)
        return Tracer(self, v)

    def atom(self, x: Any):
        if isinstance(x, Tracer):
            if x._trace is self:
                return x._var
            if self.sub and x._trace.active:
                return self._capture(x, "a value from the enclosing function")
            raise _escaped(x)
        if isinstance(x, TracerBase):  # a transformation's tracer (JVP, batching) from outside a branch/body
            if self.sub and x._trace.active:
                return self._capture(x, "a value from the enclosing function")
            raise UnexpectedTracerError(f"{x!r} reached a staged function outside the transformation that made it")
        if self.sub and hasattr(x, "_bv"):
            return self._capture(x, "a closed-over array")
        aval = aval_of(x)
        return Literal(to_numpy_constant(x, aval), aval)

    def process_primitive(self, prim: Primitive, args: Sequence, params: dict) -> list[Tracer]:
        return self.add(prim, args, params, prim.out_avals([aval_of(a) for a in args], params))

    def add(self, prim: Primitive, args: Sequence, params: dict, out_avals: list[ShapedArray]) -> list[Tracer]:
        inputs = [self.atom(a) for a in args]
        outs = [Var(a) for a in out_avals]
        eqn = Eqn(prim, inputs, params, outs, _user_location())
        self.eqns.append(eqn)
        for o in outs:
            self.producer[o.id] = eqn
        return [Tracer(self, o) for o in outs]

    def depends_on(self, var: Var) -> list[str]:
        """Labels of the arguments whose values `var` was computed from."""
        index = {v.id: i for i, v in enumerate(self.in_vars)}
        seen, stack, found = set(), [var], set()
        while stack:
            v = stack.pop()
            if v.id in seen:
                continue
            seen.add(v.id)
            if v.id in index:
                found.add(index[v.id])
            eqn = self.producer.get(v.id)
            if eqn is not None:
                stack.extend(i for i in eqn.inputs if isinstance(i, Var))
        return [self.arg_labels[i] for i in sorted(found)]

    def to_graph(self, outs: Sequence, name: str) -> Graph:
        out_atoms = [self.atom(o) for o in outs]  # may capture, so before reading in_vars
        return Graph(list(self.in_vars), list(self.eqns), out_atoms, name)


_state = threading.local()
# Traces active in any thread: while there are none, a hot path (a jit call) skips the thread-local stack.
tracing_anywhere = [0]
_anywhere_lock = threading.Lock()


def _stack() -> list[Trace]:
    s = getattr(_state, "stack", None)
    if s is None:
        s = _state.stack = []
    return s


def current_trace() -> Trace | None:
    """The innermost staging trace (the one that records graphs), or None when running eagerly.

    Transformation traces (JVP, batching) may sit above it on the stack; they only process operations on
    their own tracers (`find_top_trace`)."""
    if not tracing_anywhere[0]:  # (no trace in any thread: eager code skips the thread-local stack)
        return None
    for t in reversed(_stack()):
        if isinstance(t, Trace):
            return t
    return None


class eagerly:
    """Context manager: operations on concrete values run now inside it, whatever traces this thread has open (a
    constant's computation whose result's shape depends on its values, under jit: `numpy.unique`)."""

    def __enter__(self):
        self.saved, _state.stack = _stack(), []

    def __exit__(self, *exc):
        _state.stack = self.saved


class tracing:
    """Context manager making `trace` the one `bind` records into."""

    def __init__(self, trace: Trace):
        self.trace = trace

    def __enter__(self):
        stack = _stack()
        self.trace.level = len(stack) + 1
        stack.append(self.trace)
        with _anywhere_lock:
            tracing_anywhere[0] += 1
        return self.trace

    def __exit__(self, *exc):
        _stack().pop()
        with _anywhere_lock:
            tracing_anywhere[0] -= 1
        self.trace.active = False


_PKG = __file__.rsplit("/", 1)[0] + "/"


def _user_location():
    """(file, line) of the innermost frame outside stagec: where the user's code made an operation."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_PKG):
        f = f.f_back
    return (f.f_code.co_filename, f.f_lineno) if f is not None else None


def trace_subgraph(fun: Callable, args: Sequence, purpose: str) -> tuple[Graph, list, Any]:
    """Trace `fun(*args)` (args: a pytree whose leaves are arrays or avals) into a sub-graph of the current one.

    Returns (graph, captured outer values, output tree). The graph's inputs are the flattened args followed by
    one input per captured value (tracers of enclosing traces and concrete arrays the body closes over)."""
    name = getattr(fun, "__name__", type(fun).__name__)
    leaves, tree = tree_flatten(list(args))
    trace = Trace(f"{name} (in {purpose})", purpose, sub=True)
    avals = [a if isinstance(a, ShapedArray) else aval_of(a) for a in leaves]
    tracers = [trace.new_arg(a.update(), f"{purpose} operand {i}") for i, a in enumerate(avals)]
    with tracing(trace):
        out = fun(*tree_unflatten(tree, tracers))
    out_leaves, out_tree = flatten_outputs(out, f"{name} (in {purpose})")
    return trace.to_graph(out_leaves, name), list(trace.captured), out_tree


def _escaped(t: Tracer) -> UnexpectedTracerError:
    return UnexpectedTracerError(
        f"Encountered an unexpected tracer {t}: it was created while tracing {t._trace.fun_desc} and has escaped "
        f"that trace (stored in a global, a closure or an attribute?). Return values from the traced function "
        f"instead of saving them as side effects.")


# ---------------------------------------------------------------- primitives

_eager_impl: Callable | None = None
# Dtypes whose NumPy rules are checked against the compiled ops (tests/test_host.py). Not float16/bfloat16:
# stagec's compiled sums of them accumulate in float32, NumPy's in the narrow type.
HOST_DTYPES = frozenset(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                              np.uint32, np.uint64, np.float32, np.float64, np.complex64,
                                              np.complex128))


class NoHostValue(Exception):
    """Raised by a NumPy rule that cannot give its kernel's bits for these values (an integer division by zero in a
    `cond`'s branch): the eager caller takes the kernel instead."""


def set_eager_impl(fn: Callable, planner: Callable | None = None) -> None:
    """Register how a primitive runs outside any trace: `fn(prim, args, params) -> outputs`, its abstract
    evaluation (which checks the operands) and its `impl` rule included; and `planner(prim, avals, params)`, the
    `run(args, params) -> outputs` that `fn` calls for that signature (`eager_plan`).

    The runtime layer (`stagec.eager`) registers itself at import; core never imports it."""
    global _eager_impl, _eager_planner
    _eager_impl, _eager_planner = fn, planner


_eager_planner: Callable | None = None


def eager_plan(prim: "Primitive", avals: Sequence[ShapedArray], params: dict) -> Callable | None:
    """`run(args, params) -> outputs`: how eager calls of this signature run (Arrays of `avals`, these params),
    for callers that keep it per signature and drop it when a setting changes (`config.key_now`); None where
    no runtime is registered. Raises what the abstract evaluation raises."""
    return None if _eager_planner is None else _eager_planner(prim, avals, params)


_composite_runner: Callable | None = None
COMPOSITE = "composite"  # the purpose of the trace a composite's runner makes (`Trace.purpose`)


def set_composite_runner(fn: Callable) -> None:
    """Register how an eager call of a `composite` function runs: `fn(function, args, kwargs)` (the runtime layer
    registers `stagec.composites.call`, which runs its traced graph as one dispatch; core never imports it)."""
    global _composite_runner
    _composite_runner = fn


def composite_runner() -> Callable | None:
    return _composite_runner


def composite(fn):
    """Mark a function built of several primitives (`stagec.numpy`'s, `lax.top_k`): called outside any trace, it runs
    as one traced graph (`set_composite_runner`) with the bits its primitives give one by one; under a trace, a plain
    call. Only for functions that do the same thing on tracers as on concrete arrays (no concrete checks of values)."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        run = _composite_runner
        if run is None or (tracing_anywhere[0] and current_trace() is not None):
            return fn(*args, **kwargs)
        return run(fn, args, kwargs)
    return wrapped


class Primitive:
    """A named operation. Its rules are registered beside its definition (`stagec.primitives`):

    `abstract_eval(*avals, **params) -> aval(s)`, `lowering(ctx, *values, **params) -> [ir.Value]`, and the
    optional `impl` (eager override), `stepwise` (eager, by its parts, where IREE cannot run its kernel), `jvp`,
    `transpose` and `batch` rules. Upper layers read them; core only calls `abstract_eval` and hands everything else
    to the trace that processes the primitive."""

    def __init__(self, name: str, abstract_eval: Callable[..., Any] | None = None, multiple_results: bool = False):
        self.name, self.multiple_results = name, multiple_results
        self.abstract_eval = abstract_eval
        self.lowering: Callable | None = None
        self.impl: Callable | None = None
        self.stepwise: Callable | None = None
        self.jvp: Callable | None = None
        self.transpose: Callable | None = None
        self.batch: Callable | None = None
        self.host: Callable | None = None  # NumPy rule: see def_host
        self.host_accepts: Callable | None = None
        self.host_bound: Callable | None = None
        self.host_max_work: int | None = None  # see def_host

    def __repr__(self):
        return self.name

    def def_abstract_eval(self, fn: Callable) -> Callable:
        self.abstract_eval = fn
        return fn

    def def_lowering(self, fn: Callable) -> Callable:
        self.lowering = fn
        return fn

    def def_impl(self, fn: Callable) -> Callable:
        self.impl = fn
        return fn

    def def_stepwise(self, fn: Callable) -> Callable:
        """`fn(*args, **params) -> outputs`: the op run by its parts (its sub-graphs' equations, bound again), for
        an eager call whose kernel IREE's runtime refuses (`backend.KnownRuntimeBug`)."""
        self.stepwise = fn
        return fn

    def def_host(self, fn: Callable, accepts: Callable | None = None, bound: Callable | None = None,
                 max_work: int | None = None) -> Callable:
        """The NumPy rule `fn(*ndarrays, **params) -> ndarray`: the op's values on the host, equal to the compiled
        op's up to the tolerance docs/design.md gives (the first tier while its module compiles). It serves
        operands of `HOST_DTYPES` only, and where `accepts(avals, params)` says so. `bound(avals, params)`, if
        given, is `fn` for one signature: `g(*ndarrays)` giving `fn`'s values, its per-call steps done once.
        `max_work`: a rule of several passes, whose kernel takes less time from this much work (`eager._work`),
        serves an inexact call below it only (the eager layer's bound is the default)."""
        self.host, self.host_accepts, self.host_bound, self.host_max_work = fn, accepts, bound, max_work
        return fn

    def hosts(self, avals: Sequence[ShapedArray], params: dict, out_avals: Sequence[ShapedArray] = ()) -> bool:
        """Whether the NumPy rule serves a call on `avals` (giving `out_avals`)."""
        return self.host is not None and all(a.dtype in HOST_DTYPES for a in (*avals, *out_avals)) and (
            self.host_accepts is None or self.host_accepts(avals, params))

    def def_jvp(self, fn: Callable) -> Callable:
        self.jvp = fn
        return fn

    def def_transpose(self, fn: Callable) -> Callable:
        self.transpose = fn
        return fn

    def def_batch(self, fn: Callable) -> Callable:
        self.batch = fn
        return fn

    def out_avals(self, avals: Sequence[ShapedArray], params: dict) -> list[ShapedArray]:
        out = self.abstract_eval(*avals, **params)
        return list(out) if self.multiple_results else [out]

    def bind(self, *args, **params):
        for a in args:
            if isinstance(a, Tracer) and not a._trace.active:
                raise _escaped(a)
        trace = find_top_trace(args)
        outs = trace.process_primitive(self, args, params) if trace is not None else self._run_eager(args, params)
        return outs if self.multiple_results else outs[0]

    def _run_eager(self, args: Sequence, params: dict) -> list:
        if _eager_impl is None:
            raise RuntimeError(f"cannot run {self.name} eagerly: no runtime registered (import stagec)")
        return _eager_impl(self, args, params)


def find_top_trace(args: Sequence):
    """The trace that processes a primitive applied to `args`: the innermost of the traces owning tracer
    arguments and the innermost staging trace (omnistaging: every operation under `jit` is recorded)."""
    top = current_trace()
    for a in args:
        if isinstance(a, TracerBase) and (top is None or a._trace.level > top.level):
            top = a._trace
    return top


# ---------------------------------------------------------------- tracers


class ArrayOps:
    """What tracers and concrete Arrays share. The NumPy operators and methods (`x + y`, `x.sum()`, `x.at`)
    are installed on this class by `stagec.numpy` at import (`install_array_methods`); core names no NumPy."""

    __array_priority__ = 100
    __hash__ = None  # arrays are unhashable, as in NumPy

    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: self.aval.size)
    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    weak_type = property(lambda self: self.aval.weak_type)

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.aval.shape[0]))

    def __pos__(self):
        return self


def install_array_methods(methods: dict[str, Any]) -> None:
    """Install operators and methods on every array type (tracers and Arrays), as the NumPy layer defines them."""
    for name, fn in methods.items():
        setattr(ArrayOps, name, fn)


class TracerBase(ArrayOps):
    """A value a trace stands in for; `_trace` is the trace that processes operations on it. Python's conversions
    raise the trace's `_concretization_error` (a tracer has no value to give)."""

    __slots__ = ()

    def _concretization_error(self, what: str, cls=ConcretizationTypeError) -> Exception:  # (each trace's says more)
        return cls(f"Abstract tracer value encountered where concrete value is expected: {self} (`{what}`)")

    def __bool__(self): raise self._concretization_error("bool", TracerBoolConversionError)
    def __int__(self): raise self._concretization_error("int")
    def __float__(self): raise self._concretization_error("float")
    def __complex__(self): raise self._concretization_error("complex")
    def __index__(self): raise self._concretization_error("__index__", TracerIntegerConversionError)
    def item(self): raise self._concretization_error("item")
    def tolist(self): raise self._concretization_error("tolist")


class Tracer(TracerBase):
    """Stands for an array while a function is traced: it has a shape and dtype, never values."""

    __slots__ = ("_trace", "_var")

    def __init__(self, trace: Trace, var: Var):
        self._trace, self._var = trace, var

    @property
    def aval(self) -> ShapedArray:
        return self._var.aval

    def __repr__(self):
        return f"Traced<{self.aval!r}>"

    __str__ = __repr__

    def _concretization_error(self, what: str, cls=ConcretizationTypeError) -> Exception:
        t = self._trace
        deps = t.depends_on(self._var) if t.active else []
        if deps:
            names = ", ".join(repr(d) for d in deps)
            why = f"it depends on the value of the argument{'s' if len(deps) > 1 else ''} {names}"
        else:
            why = "it is computed while tracing and has no concrete value"
        return cls(
            f"Abstract tracer value encountered where concrete value is expected: {self}\n"
            f"The problem arose with the `{what}` function.\n"
            f"While tracing the function {t.fun_desc} for {t.purpose}, this concrete value was not available in "
            f"Python because {why}.\n"
            f"Use stagec.lax.cond / stagec.lax.while_loop (or snp.where) for control flow on traced values, or "
            f"mark the argument static with static_argnums= / static_argnames= so it is a Python value while "
            f"tracing (the function then recompiles for each new value).")

    def __array__(self, dtype=None, copy=None):
        t = self._trace
        deps = t.depends_on(self._var) if t.active else []
        dep = f" It depends on the argument(s) {', '.join(map(repr, deps))}." if deps else ""
        raise TracerArrayConversionError(
            f"The numpy.ndarray conversion method __array__() was called on {self} while tracing the function "
            f"{t.fun_desc} for {t.purpose}.{dep} A traced value has no data yet: use stagec.numpy (snp) "
            f"functions instead of numpy (np) ones inside the traced function, or mark the argument static.")
