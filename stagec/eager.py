"""Eager execution: a primitive bound outside any trace runs now, as a one-equation module compiled through
the persistent cache, without stagec's passes (control flow and callbacks, whose params hold graphs, with them).
Registered with `core.set_eager_impl` at import, so core never imports the runtime. With `config.eager_tiering`
"exact" (the default), an operation whose NumPy rule (`Primitive.def_host`) gives its kernel's bits (`EXACT`)
computes with it while the kernel compiles on a thread (`_Later`); one whose rule may differ computes with its
rule on every call on the CPU: an operation's bits never depend on whether its kernel has compiled. An `exact` one
on small device values (`HOST_READ_ELEMENTS`) reads them back once and takes its rule too.

Kernels are shape-polymorphic where the primitive's emission allows it (`POLYMORPHIC`): one module per
(primitive, params, dtypes, rank, where the empty dimensions are), every other dimension dynamic
(`tensor<?x?xf32>`), so a new length reuses the module. Empty dimensions stay static, and so do
`broadcast_in_dim`'s operand dimensions of 1 (the expanding ones). `broadcast_in_dim` takes its result shape as a
run-time operand; `reshape`, and a slice of leading rows (`_prefix`), are new views of the same buffer (no module). Other primitives compile once per shape. Switch
polymorphic kernels off with `config.eager_polymorphic` (docs/design.md has the measurements).

The loaded modules are kept in a least-recently-used cache of `config.eager_cache_size` entries; threads
asking for one being compiled wait for it (`stages.build_once`). On disk a kernel is keyed by its recipe
(primitive, params, avals, stagec's source hash), so loading one builds no MLIR. `loaded_step` is one equation
with nothing compiled: kernels compiled before or NumPy rules (jit's quick tier, `stagec.quick`, runs graphs so).
"""
from __future__ import annotations

import atexit
import collections
import enum
import functools
import hashlib
import logging
import math
import os
import threading
from typing import Callable, Sequence

import numpy as np

from .array import Array, pending, to_buffers
from .backend import TASK_THRESHOLD, Backend, KnownRuntimeBug, get_backend, keep_heap
from .dispatch import PendingArguments
from .compiler.processes import abandon_compiles, block_sigint
from .config import SettingsCache, config
from .core import (Const, Eqn, Graph, NoHostValue, Primitive, ShapedArray, Var, aval_of, set_eager_impl,
                   to_numpy_constant)
from .errors import CompileError
from .lowering import DYNAMIC, i64s, lower_function, lower_graph, mlir, tensor_type
from .primitives import bits, control_flow, elementwise, gather_p, reductions, structural
from .primitives.dot import dot_general_p
from .stages import Lowered, build_once, compile_cached, find_cached

# Primitives whose emission rule reads no dimension size: their modules stay right with dynamic dimensions, and
# give the same bits as a shape-specific module. Not `dot_general`: its dynamic contraction sums in another
# order (a 1000-long f32 dot differed by 6e-5) and a dynamic matmul loses data tiling.
_ELEMENTWISE = frozenset(getattr(elementwise, n) for n in elementwise.__all__)  # (`_work` counts them as unary)
POLYMORPHIC = frozenset([*_ELEMENTWISE,
                         reductions.reduce_sum_p, reductions.reduce_prod_p, reductions.reduce_max_p,
                         reductions.reduce_min_p, reductions.reduce_and_p, reductions.reduce_or_p,
                         reductions.reduce_xor_p, structural.transpose_p, structural.broadcast_in_dim_p])

log = logging.getLogger("stagec")
# Calls touching more elements (inputs + outputs) take shape-specific modules: on 1M floats a dynamic kernel was
# 2-3x slower than a shape-specific one, while below the CPU's `local-task` threshold both ran alike.
POLYMORPHIC_MAX_ELEMENTS = TASK_THRESHOLD
_cache: collections.OrderedDict[tuple, object] = collections.OrderedDict()
_forms: dict[tuple, tuple | None] = {}  # shape-specific key -> its polymorphic kernel's (key, avals, params), or None
_UNSEEN = object()
_STATIC = "static"  # cached for a polymorphic key whose module could not be built: compile per shape
_HOST = "host"  # `_obtain`: compute with the NumPy rule, the kernel compiles on a thread
_QUEUE = "queue"  # `_obtain`: compute with the NumPy rule, then queue the kernel's compile
# Keys of kernels a call could have queued, called once so far (`_again`): most signatures of exact operations on
# device values are called once (a script's setup, a test), and each queued compile takes ~0.2 CPU-s.
_once: collections.OrderedDict[tuple, bool] = collections.OrderedDict()
ONCE_MAX = 4096
try:  # NumPy's floating-point error state (`np.errstate`), set directly
    from numpy._core._ufunc_config import _extobj_contextvar as _errors, _make_extobj
    _quiet = _make_extobj(all="ignore")
except (ImportError, TypeError):
    _errors = _quiet = None
KEEP_HOST_BYTES = 1 << 20  # a NumPy rule's result up to this size stays as its Array's host copy (printing it
# reads no buffer back); a bigger one would double the memory it takes
stats = {"compiles": 0, "polymorphic": 0, "views": 0, "host": 0}


# a call's signature -> `run(args, params)`: what `_plan` decided for it
_plans = SettingsCache(lambda: 4 * max(config.eager_cache_size, 1))


def apply(prim: Primitive, args: Sequence, params: dict) -> list[Array]:
    """Run one primitive on concrete arguments (Arrays, NumPy values, Python scalars): `core.set_eager_impl`'s
    rule. What a signature (primitive, operands' avals, params, config) runs with is decided once (`_plan`): a call
    seen before does no abstract evaluation and builds no kernel key."""
    return plan(prim, tuple([x.aval if type(x) is Array else aval_of(x) for x in args]), params)(args, params)


def plan(prim: Primitive, avals: Sequence[ShapedArray], params: dict) -> Callable:
    """The `run(args, params)` that `apply` takes for this signature (`core.eager_plan`), kept per signature."""
    try:
        pkey = (prim, tuple(avals), tuple(params.items()))
        run = _plans.get(pkey)
    except TypeError:  # (an unhashable parameter)
        return _plan(prim, list(avals), params)
    if run is None:
        run = _plans.put(pkey, _plan(prim, list(avals), params))
    return run


def _plan(prim: Primitive, avals: list[ShapedArray], params: dict) -> Callable:
    """`run(args, params) -> outputs` for calls of this signature; raises what the abstract evaluation raises."""
    out_avals = prim.out_avals(avals, params)
    if prim.impl is not None:
        return lambda args, params: list(prim.impl(*args, **params))
    backend = get_backend()
    if prim is structural.reshape_p or (prim is structural.slice_p and _prefix(avals[0].shape, params)):
        if config.eager_tiering == "never" or not prim.hosts(avals, params, out_avals):
            return lambda args, params: _view(args, avals, out_avals[0], backend)

        read = config.eager_tiering == "exact" and math.prod(avals[0].shape) <= HOST_READ_ELEMENTS

        def reshape(args, params):  # a value not on the device yet is reshaped where it is
            x = args[0]
            if type(x) is not Array or (x._bv is None and x._npy is not None):
                return _on_host(prim, args, avals, params, out_avals, backend)
            if read and x._npy is None and x._bv is not None:
                x._value()  # a small device value read back once: its views keep the host copy (`_view`)
            return _view(args, avals, out_avals[0], backend)
        return reshape
    if config.eager_tiering == "exact" and prim.hosts(avals, params, out_avals) and not exact(prim, avals, out_avals) \
            and _always_host(prim, avals, params, out_avals, backend):
        return _host_plan(prim, avals, params, out_avals, backend)
    key = (prim, tuple(sorted(params.items())), tuple(avals), backend.name)
    found: list = []  # [(cache key, kernel, polymorphic)] once a call has a loaded kernel
    # An `exact` operation on values all on the host (scalars, NumPy values, results of NumPy rules) takes its rule
    # while the call is small: the kernel's bits, without uploading its operands and reading its result back. With
    # "exact" so does one on small device values (`HOST_READ_ELEMENTS`; read back once, each Array keeps its host
    # copy), unless one is still being computed (its kernel's call is enqueued behind it).
    near = config.eager_tiering != "never" and prim.hosts(avals, params, out_avals) and exact(
        prim, avals, out_avals) and _always_host(prim, avals, params, out_avals, backend)
    host = _host_plan(prim, avals, params, out_avals, backend) if near else None
    read = near and config.eager_tiering == "exact" and sum(math.prod(a.shape) for a in avals) <= HOST_READ_ELEMENTS

    def run(args, params):
        if near and all(type(x) is not Array or x._npy is not None or (read and x._bv is not None) for x in args):
            return host(args, params)
        if found:
            k, kernel, poly = found[0]
            try:
                _cache.move_to_end(k)  # (least recently used order, as `_get` keeps it)
            except KeyError:  # evicted: obtained again
                found.clear()
            else:
                return kernel(args, avals, out_avals) if poly else kernel(args)
        return _dispatch(prim, args, avals, params, out_avals, backend, key, found)
    return run if prim.stepwise is None else _or_stepwise(prim, run, out_avals, backend)


def _or_stepwise(prim: Primitive, run: Callable, out_avals: Sequence[ShapedArray], backend: Backend) -> Callable:
    """`run`, or, once IREE's runtime has refused the kernel (`KnownRuntimeBug`: a loop whose results it left
    unallocated), the operation by its parts (`Primitive.stepwise`), for this call and the signature's next ones:
    Arrays of the avals the kernel's would have (a part may give a constant, or a weakly typed value)."""
    refused: list = []

    def go(args, params):
        if not refused:
            try:
                return run(args, params)
            except KnownRuntimeBug as e:
                refused.append(True)  # (not the exception: its traceback would keep the call's frames alive)
                log.info("%s: %s; running it by its parts", prim.name, e)
        return [o if type(o) is Array and o.aval == w else
                host_result(np.asarray(to_numpy_constant(o.value if isinstance(o, Const) else o, w), w.dtype), w,
                            backend)
                for o, w in zip(prim.stepwise(*args, **params), out_avals)]
    return go


def _dispatch(prim: Primitive, args, avals, params: dict, out_avals, backend: Backend, key: tuple, found: list):
    """A call through its kernel (or its NumPy rule while the kernel compiles: `_obtain`); the kernel, once
    loaded, is kept in `found` for the next calls."""
    if config.eager_polymorphic:
        form = _forms.get(key, _UNSEEN)
        if form is _UNSEEN:
            form = _polymorphic_form(prim, avals, params, out_avals, backend)
            if len(_forms) >= 4 * max(config.eager_cache_size, 1):
                _forms.clear()
            _forms[key] = form
        if form is not None:
            pkey, pavals, pparams = form
            kernel, outs = _kernel_or_host(pkey, lambda compile: _build_polymorphic(
                prim, pavals, pparams, out_avals, backend, compile), prim, args, avals, params, out_avals, backend)
            if outs is not None:
                return outs
            if kernel is not _STATIC:
                found[:] = [(pkey, kernel, True)]
                return kernel(args, avals, out_avals)
    kernel, outs = _kernel_or_host(key, lambda compile: _static(prim, avals, params, out_avals, backend, compile),
                                   prim, args, avals, params, out_avals, backend)
    if outs is not None:
        return outs
    found[:] = [(key, kernel, False)]
    return kernel(args)


def _kernel_or_host(key: tuple, build: Callable[[bool], object], prim: Primitive, args, avals, params: dict,
                    out_avals, backend: Backend) -> tuple:
    """(kernel, None) as `_obtain` gives it, or (None, outputs) of the NumPy rule it chose; for `_QUEUE` the kernel
    is queued to compile on the thread after the rule answered (the rule's computation does not share the
    interpreter with the compile's Python passes). A rule that gives way (`NoHostValue`) waits for the kernel."""
    kernel = _obtain(key, build, prim, args, avals, params, out_avals, backend)
    if kernel is not _HOST and kernel is not _QUEUE:
        return kernel, None
    try:
        outs = _on_host(prim, args, avals, params, out_avals, backend)
    except NoHostValue:
        return _get(key, lambda: build(True)), None
    if kernel is _QUEUE:
        _later.submit(key, lambda: _get(key, lambda: build(True)))
    return None, outs


def _work(prim: Primitive, avals: Sequence[ShapedArray], params: dict, out_avals: Sequence[ShapedArray]) -> int:
    """Elements a call touches (inputs + outputs), plus a contraction's multiply-adds: NumPy's matmul (OpenBLAS)
    runs on every core from 2^18 of them, and its threads then compete with the caller's and IREE's (on a loaded
    machine many times slower than the kernel; docs/blas.md). An elementwise operation counts as a unary one (its
    result twice), so that a chain of them on one shape takes one side: counted by operands, a 100K-element
    composite ran its binary operations as kernels and its unary ones as rules, uploading and reading back between
    them (docs/log.md, 2026-11-30)."""
    if prim in _ELEMENTWISE:
        return 2 * math.prod(out_avals[0].shape)
    n = sum(math.prod(a.shape) for a in (*avals, *out_avals))
    if prim is dot_general_p:
        (lc, _), _ = params["dimension_numbers"]
        n += math.prod(out_avals[0].shape) * math.prod(avals[0].shape[i] for i in lc)
    return n


def _static(prim, avals, params, out_avals, backend: Backend, compile: bool = True):
    """The loaded shape-specific kernel; with `compile` False, None where its module is not in the persistent cache."""
    art = _compile(prim, avals, params, out_avals, backend, compile)
    return None if art is None else art.runner()


# Operations whose NumPy rule gives the compiled kernel's bits for every input of these dtype kinds: integer and
# boolean arithmetic, comparisons and logic; data movement and selection of any dtype. Not float arithmetic or
# comparisons: IREE's CPU kernels flush subnormal inputs and results to zero (sqrt(1e-40) is 0 there), NumPy's
# do not; nor transcendental functions (other polynomials) or sums (another order). With `config.eager_tiering`
# "exact" those keep one implementation, the NumPy rule on the CPU, for all their calls.
EXACT: dict[Primitive, str] = {
    **{p: "iu" for p in (elementwise.neg_p, elementwise.abs_p, elementwise.sign_p, elementwise.add_p,
                         elementwise.sub_p, elementwise.mul_p)},
    **{p: "biu" for p in (elementwise.max_p, elementwise.min_p, elementwise.not_p, elementwise.and_p,
                          elementwise.or_p, elementwise.xor_p, elementwise.eq_p, elementwise.ne_p, elementwise.lt_p,
                          elementwise.le_p, elementwise.gt_p, elementwise.ge_p, elementwise.clamp_p,
                          elementwise.convert_element_type_p, reductions.reduce_max_p, reductions.reduce_min_p,
                          elementwise.shift_left_p, elementwise.shift_right_logical_p,
                          elementwise.shift_right_arithmetic_p,
                          reductions.reduce_and_p, reductions.reduce_or_p, reductions.reduce_xor_p)},
    **{p: "biufc" for p in (elementwise.select_p, structural.broadcast_in_dim_p, structural.reshape_p,
                            structural.transpose_p, structural.slice_p, structural.dynamic_slice_p,
                            structural.dynamic_update_slice_p, structural.rev_p, structural.iota_p,
                            structural.concatenate_p, structural.pad_p, gather_p,
                            structural.optimization_barrier_p)},
    reductions.sort_p: "biu",  # (floats: the CPU kernel's bits, float64 keys' subnormals tying zero; a GPU's may not)
    # Bits read as they are (a bitcast moves them; is_finite's answer is the same where a kernel flushes a subnormal
    # to zero), leading zeros and set bits counted: frexp's graph is then one fused module (20 -> ~7 us on 4x4)
    bits.bitcast_convert_type_p: "iuf", elementwise.is_finite_p: "bf", bits.clz_p: "iu", bits.population_count_p: "iu",
}


# From this much work (`_work`: elements, inputs + outputs, and multiply-adds) a CPU kernel runs on several threads
# (`local-task`): an inexact operation takes its kernel there (NumPy's one thread was up to 7x slower on 1M floats),
# its NumPy rule below.
HOST_MAX_ELEMENTS = TASK_THRESHOLD
# An `exact` operation reads device operands of up to this many elements (all together) back to take its NumPy
# rule: read back and computed in less time than its kernel's call (docs/log.md, 2026-11-26 helper eager).
HOST_READ_ELEMENTS = 1 << 14


def _always_host(prim: Primitive, avals, params: dict, out_avals, backend: Backend) -> bool:
    """Whether an inexact operation computes with its NumPy rule on every call ("exact" tiering): on the CPU,
    below `HOST_MAX_ELEMENTS` (or its rule's `max_work`, `Primitive.def_host`). From `HOST_HEAP_WORK` such a plan
    sets the heap as a large module does."""
    if backend.name != "cpu":
        return False
    work = _work(prim, avals, params, out_avals)
    top = HOST_MAX_ELEMENTS if prim.host_max_work is None else min(prim.host_max_work, HOST_MAX_ELEMENTS)
    if HOST_HEAP_WORK <= work < top:
        keep_heap(backend)
    return work < top


# NumPy rules allocate their results on every call; under glibc's defaults a block of ~128 KiB or more came from
# fresh pages each time (mmap'd, or the heap's top grown and trimmed again): `nn.silu` on 100K float32 took ~1000
# page faults a call, 2.3 ms (0.37 with the heap kept). A plan of this much work (elements in and out: 2 x 32K
# floats) sets the heap as a large module does (`backend.keep_heap`).
HOST_HEAP_WORK = 1 << 16


def exact(prim: Primitive, avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray],
          params: dict | None = None) -> bool:
    """Whether `prim`'s NumPy rule gives its kernel's bits on these dtypes (`EXACT`); a `cond` (given its `params`)
    where every equation of its branches does (`_exact_graph`)."""
    kinds = EXACT.get(prim)
    if kinds is None:
        return prim is control_flow.cond_p and params is not None and all(map(_exact_graph, params["branches"]))
    return all(np.dtype(a.dtype).kind in kinds for a in (*avals, *out_avals))


def _exact_graph(graph: Graph) -> bool:
    """Whether each equation's NumPy rule gives its kernel's bits, integer division and remainder included (the
    `cond`'s rule computes them where defined and gives way to the kernel elsewhere); kept on the graph."""
    ok = graph.__dict__.get("_exact")
    if ok is None:
        ok = graph._exact = all(map(_exact_step, graph.eqns))
    return ok


def _exact_step(e: Eqn) -> bool:
    ins, outs = [x.aval for x in e.inputs], [o.aval for o in e.outputs]
    if e.prim in elementwise.DEFINED_INT_DIVISION:
        return all(np.dtype(a.dtype).kind in "iu" for a in (*ins, *outs))
    return exact(e.prim, ins, outs, e.params)


def _obtain(key: tuple, build: Callable[[bool], object], prim: Primitive, args, avals, params: dict, out_avals,
            backend: Backend):
    """The kernel under `key` (`_get`, building it with `build(compile=True)`), or `_HOST`: the caller computes
    with the primitive's NumPy rule. With `config.eager_tiering` "exact", an operation whose rule may differ from
    its kernel (not `exact`) computes with its rule on every call on the CPU below `HOST_MAX_ELEMENTS`, and with
    its kernel (waiting for it) from there and elsewhere: decided by operation, dtypes and shape, never by timing;
    an `exact` one (or any, with "auto") whose kernel is not in the persistent cache computes with its rule, and from
    the signature's second call (`_again`) queues the kernel to compile on a thread (`_later`): `_QUEUE`, the caller
    does both (`_kernel_or_host`). Not on
    arguments still being computed: the kernel's call is enqueued behind them, the host would wait for them."""
    mode = config.eager_tiering
    if mode != "never" and prim.hosts(avals, params, out_avals):
        if mode == "exact" and not exact(prim, avals, out_avals, params):
            if _always_host(prim, avals, params, out_avals, backend):
                return _HOST
        elif key not in _cache and key not in _later.failed and not any(pending(x) for x in args):
            if key in _later.queued:
                return _HOST
            kernel = _get(key, lambda: build(False))
            if kernel is not None:
                return kernel
            if not _again(key):
                return _HOST
            if _later.room():
                return _QUEUE
    return _get(key, lambda: build(True))


def _again(key) -> bool:
    """Whether a call of `key` came before this one (`_once`, bounded): its kernel is queued at its second call, so
    that a signature called once compiles nothing in the background."""
    if _once.pop(key, None) is not None:
        return True
    _once[key] = True
    while len(_once) > ONCE_MAX:
        try:
            _once.popitem(last=False)
        except KeyError:  # (emptied by another thread)
            break
    return False


class _Later:
    """Kernels compiling on one thread while their calls run on the host (`_obtain`); at most `MAX` queued. At exit
    the queue is dropped and the compile in flight abandoned (its compiler ended), never awaited."""

    MAX = 256

    def __init__(self):
        self.queued: set = set()  # keys queued or compiling
        self.failed: set = set()  # keys whose compile raised: compiled by the next call, which raises the error
        self._jobs: collections.deque = collections.deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closing = False

    def submit(self, key: tuple, build: Callable[[], object]) -> bool:
        """Queue `build()` under `key`; False where the queue is full or the program is exiting."""
        with self._cond:
            if key in self.queued:
                return True
            if self._closing or len(self.queued) >= self.MAX:
                return False
            self.queued.add(key)
            self._jobs.append((key, build))
            if self._thread is None or not self._thread.is_alive():  # (not a daemon: `close` stops it before
                first = self._thread is None  # Python joins it, see jit._at_shutdown)
                self._thread = threading.Thread(target=self._work, name="stagec-eager-compile")
                self._thread.start()
                if first:
                    try:
                        threading._register_atexit(self.close)
                    except (AttributeError, RuntimeError):
                        atexit.register(self.close)
            self._cond.notify_all()
        return True

    def room(self) -> bool:
        """Whether `submit` would queue a new key now."""
        return not self._closing and len(self.queued) < self.MAX

    def _work(self) -> None:
        block_sigint()
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._jobs or self._closing)
                if self._closing:
                    return
                key, build = self._jobs.popleft()
            try:
                build()
            except BaseException as e:  # (raised again by the call that compiles it; the thread serves the rest)
                what = key[0] if isinstance(key, tuple) else key  # (a kernel's key, or a composite itself)
                log.debug(f"eager kernel {what}: background compile failed ({type(e).__name__}: {e})")
                with self._cond:
                    if len(self.failed) >= 1024:
                        self.failed.clear()
                    self.failed.add(key)
            finally:
                with self._cond:
                    self.queued.discard(key)
                    self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every queued kernel is compiled; True if they all are."""
        with self._cond:
            return self._cond.wait_for(lambda: not self.queued, timeout)

    def close(self) -> None:
        """At exit: drop the queue and end the compiler in flight (`abandon_compiles`); Python then
        joins the thread once it leaves the step it is in."""
        with self._cond:
            self._closing = True
            for key, _ in self._jobs:
                self.queued.discard(key)
            self._jobs.clear()
            self._cond.notify_all()
        abandon_compiles()


_later = _Later()


def _after_fork_in_child() -> None:
    """A forked child has no compile thread, and its parent's kernels ran on a runtime fork does not copy."""
    global _later
    _later = _Later()
    _cache.clear()
    _once.clear()
    _forms.clear()
    _plans.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def wait_for_kernels(timeout: float | None = None) -> bool:
    """Wait until the kernels compiling in the background (`config.eager_tiering`) are ready; True if they are."""
    return _later.wait(timeout)


def _on_host(prim: Primitive, args: Sequence, avals: Sequence[ShapedArray], params: dict,
             out_avals: Sequence[ShapedArray], backend: Backend) -> list[Array]:
    """The primitive's NumPy rule; a small result stays on the host until a device call reads it (`Array.on_host`),
    a bigger one is uploaded."""
    return [host_result(v, a, backend) for v, a in zip(host_values(prim, args, avals, params, out_avals), out_avals)]


def host_result(value: np.ndarray, aval: ShapedArray, backend: Backend) -> Array:
    """A NumPy rule's (read-only) result as an Array: kept on the host up to `KEEP_HOST_BYTES`, else uploaded."""
    return Array.on_host(value, aval, backend) if value.nbytes <= KEEP_HOST_BYTES else Array(backend.put(value), aval,
                                                                                             backend)


def _host_plan(prim: Primitive, avals: Sequence[ShapedArray], params: dict, out_avals: Sequence[ShapedArray],
               backend: Backend) -> Callable:
    """`run(args, params)` of a signature computed by its NumPy rule on every call: `_on_host`, with what the
    signature fixes (result dtype and shape, whether it stays on the host) decided once."""
    if len(out_avals) != 1 or prim.multiple_results or _quiet is None:
        return lambda args, params: _on_host(prim, args, avals, params, out_avals, backend)
    fn, kw, (out,) = prim.host, params, out_avals  # (a signature's params: equal on each of its calls)
    if prim.host_bound is not None:  # (the rule for this signature: called on the operands alone)
        fn, kw = prim.host_bound(avals, params), None
    dtype, shape = out.dtype, out.shape
    keep = math.prod(shape) * dtype.itemsize <= KEEP_HOST_BYTES
    on_host, errors, quiet, ndarray = Array.on_host, _errors, _quiet, np.ndarray

    def run(args, params):
        xs = []  # (a loop: a comprehension over `zip` with a conditional chain cost ~1 us of a ~3 us call)
        caller = False  # a caller's NumPy value among the operands (the result may be a view of it)
        for x, a in zip(args, avals):
            t = type(x)
            if t is Array:
                xs.append(x._value())
            elif t is ndarray:
                xs.append(x)
                caller = True
            else:
                xs.append(x._value() if t is Const else to_numpy_constant(x, a))
        token = errors.set(quiet)
        try:
            value = fn(*xs, **kw) if kw else fn(*xs)
        finally:
            errors.reset(token)
        if type(value) is not ndarray or (value.dtype is not dtype and value.dtype != dtype):
            value = np.asarray(value, dtype=dtype)
        if value.shape != shape:
            raise RuntimeError(f"the NumPy rule of {prim.name} gave shape {value.shape} for {out.str_short()}")
        stats["host"] += 1
        if caller:
            for x in args:
                if type(x) is ndarray and x.flags.writeable and np.may_share_memory(value, x):
                    value = value.copy()  # (a view of the caller's array, which it may write to)
                    break
        value.flags.writeable = False
        return [on_host(value, out, backend) if keep else Array(backend.put(value), out, backend)]
    return run


def host_values(prim: Primitive, args: Sequence, avals: Sequence[ShapedArray], params: dict,
                out_avals: Sequence[ShapedArray]) -> list[np.ndarray]:
    """`prim`'s NumPy rule on `args` (Arrays, NumPy values, constants): read-only arrays of `out_avals`."""
    xs = [x._value() if type(x) is Array else x if type(x) is np.ndarray else to_numpy_constant(x, a)
          for x, a in zip(args, avals)]
    if _quiet is not None:  # (`np.errstate(all="ignore")`, without building its state on each call: ~0.6 us)
        token = _errors.set(_quiet)
        try:
            values = prim.host(*xs, **params)
        finally:
            _errors.reset(token)
    else:
        with np.errstate(all="ignore"):
            values = prim.host(*xs, **params)
    outs = []
    for value, aval in zip(values if prim.multiple_results else (values,), out_avals, strict=True):
        value = np.asarray(value, dtype=aval.dtype)
        if value.shape != aval.shape:
            raise RuntimeError(f"the NumPy rule of {prim.name} gave shape {value.shape} for {aval.str_short()}")
        if any(type(x) is np.ndarray and x.flags.writeable and np.may_share_memory(value, x) for x in args):
            value = value.copy()  # (a view of the caller's array, which it may write to)
        value.setflags(write=False)
        outs.append(value)
    stats["host"] += 1
    return outs


def _get(key: tuple, build):
    """The kernel cached under `key`, else `build()` (once across threads), kept least recently used first;
    None where `build()` found none (it only looks in the persistent cache: `graph_runner`)."""
    kernel = _cache.get(key)
    if kernel is not None:
        try:
            _cache.move_to_end(key)
        except KeyError:  # dropped by another thread meanwhile
            pass
        return kernel

    def store():
        k = build()
        if k is None:
            return None
        _cache[key] = k
        while len(_cache) > max(config.eager_cache_size, 1):
            _cache.popitem(last=False)
        return k
    return build_once(("eager", key), lambda: _cache.get(key), store)


def _compile(prim, avals, params, out_avals, backend, compile: bool = True):
    """The kernel's artifact, from the persistent cache (by recipe where there is one) or compiled; with
    `compile` False, None where it is not cached."""
    name = f"eager_{prim.name}"
    host_calls: list = []  # a callback primitive bound eagerly (e.g. under vmap) calls out from its module

    def text() -> str:
        in_vars, out_vars = [Var(a) for a in avals], [Var(a) for a in out_avals]
        graph = Graph(in_vars, [Eqn(prim, list(in_vars), params, out_vars)], list(out_vars), prim.name)
        return str(lower_graph(graph, name, host_calls))
    recipe = _recipe(prim, avals, params)
    if not compile:
        return None if recipe is None else find_cached(backend, backend.flags(), recipe, avals, out_avals)
    if recipe is None:  # control flow or a callback: a program, compiled with stagec's passes as jit compiles it
        in_vars, out_vars = [Var(a) for a in avals], [Var(a) for a in out_avals]
        graph = Graph(in_vars, [Eqn(prim, list(in_vars), params, out_vars)], list(out_vars), prim.name)
        stats["compiles"] += 1
        return Lowered(graph, name, None, None, (), None, backend).compile().artifact
    art, _ = compile_cached(backend, text if recipe is not None else text(), name, backend.flags(), avals,
                            out_avals, host_calls=host_calls, recipe=recipe)
    stats["compiles"] += 1
    return art


def _plain(v) -> bool:
    """Whether `repr(v)` names all of `v`: numbers, strings, dtypes, enums, tuples of them (not an array, a
    function or a graph, whose repr elides or names an address)."""
    if v is None or isinstance(v, (bool, int, float, complex, str, np.dtype, enum.Enum, type)):
        return True
    if isinstance(v, np.generic):
        return v.ndim == 0
    if isinstance(v, (tuple, list, frozenset)):
        return all(_plain(x) for x in v)
    return False


@functools.cache
def source_digest() -> str:
    """sha256 of the code that emits a kernel's MLIR (stagec's modules and primitives; the legalization passes a
    kernel goes through are in the key's compiler digest, `driver.source_digest`): a kernel's recipe holds it, so an
    edited lowering rule never loads an older module."""
    root = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for d in (root, os.path.join(root, "primitives")):
        for n in sorted(os.listdir(d)):
            if n.endswith(".py"):
                with open(os.path.join(d, n), "rb") as f:
                    h.update(n.encode() + b"\0" + f.read())
    return h.hexdigest()


def _recipe(prim: Primitive, avals: Sequence[ShapedArray], params: dict, kind: str = "graph") -> dict | None:
    """What a kernel's module is built from, complete (the persistent cache's key for it, found without building
    any MLIR); None where a parameter's repr may not name all of it."""
    if not all(_plain(v) for v in params.values()):
        return None
    return {"kernel": kind, "primitive": prim.name, "params": repr(sorted(params.items())),
            "avals": [a.str_short() for a in avals], "source": source_digest()}


# ---------------------------------------------------------------- shape-polymorphic kernels


def _dims(shape: Sequence[int], ones: bool = False) -> tuple[int, ...]:
    """`shape` with its dimensions dynamic, but those of size 0 (and of size 1 unless `ones`: broadcast_in_dim's,
    whose size-1 operand dimensions are the expanding ones) static."""
    return tuple(d if d == 0 or (d == 1 and not ones) else DYNAMIC for d in shape)


def _polymorphic_form(prim: Primitive, avals: Sequence[ShapedArray], params: dict, out_avals, backend: Backend,
                      any_size: bool = False):
    """(key, avals, params) of the polymorphic kernel for this call; None where it compiles per shape (a primitive
    outside `POLYMORPHIC`, a call too big for it unless `any_size`, no dimension to make dynamic, a GPU: not
    measured there)."""
    if (prim not in POLYMORPHIC or backend.name != "cpu" or (not any_size and sum(
            math.prod(a.shape) for a in (*avals, *out_avals)) >= POLYMORPHIC_MAX_ELEMENTS)):
        return None
    bcast = prim is structural.broadcast_in_dim_p
    pavals = tuple(ShapedArray(_dims(a.shape, not bcast), a.dtype) for a in avals)
    if bcast:
        params = dict(params, shape=_dims(params["shape"]))
        if DYNAMIC not in params["shape"]:
            return None
    elif not any(DYNAMIC in a.shape for a in pavals):
        return None
    return (prim, tuple(sorted(params.items())), pavals, backend.name, "poly"), pavals, params


def _build_polymorphic(prim, avals, params, out_avals, backend: Backend, compile: bool = True):
    """The loaded polymorphic kernel, or `_STATIC` where its emission needs sizes (a constant of the operand's
    shape, ...): found while lowering or compiling, then this key compiles per shape. With `compile` False:
    None where its module is not in the persistent cache."""
    try:
        pouts = prim.out_avals(list(avals), params)
        if [(a.ndim, a.dtype) for a in pouts] != [(a.ndim, a.dtype) for a in out_avals] or any(
                p != DYNAMIC and p != c for po, co in zip(pouts, out_avals) for p, c in zip(po.shape, co.shape)):
            return _STATIC
        pouts = [a.strip_weak() for a in pouts]
        if prim is structural.broadcast_in_dim_p:
            art = _compile_broadcast(avals[0], pouts[0], params["broadcast_dimensions"], backend, compile)
        else:
            art = _compile(prim, avals, params, pouts, backend, compile)
        if art is None:
            return None
    except (ValueError, TypeError, RuntimeError, CompileError, NotImplementedError) as e:
        log.debug(f"eager {prim.name}: no shape-polymorphic module ({type(e).__name__}: {e}); one per shape")
        return _STATIC
    stats["polymorphic"] += 1
    return Polymorphic(art, backend, prim is structural.broadcast_in_dim_p)


def _compile_broadcast(aval: ShapedArray, out: ShapedArray, broadcast_dimensions, backend: Backend,
                       compile: bool = True):
    """`stablehlo.dynamic_broadcast_in_dim` with the result shape as a second operand (int64[rank])."""
    shape_aval = ShapedArray((out.ndim,), np.int64)
    expanding = [aval.shape[i] == 1 and out.shape[d] != 1 for i, d in enumerate(broadcast_dimensions)]

    def body(module, x, shape):
        attrs = {"broadcast_dimensions": i64s(broadcast_dimensions),
                 "known_expanding_dimensions": i64s(i for i, e in enumerate(expanding) if e),
                 "known_nonexpanding_dimensions": i64s(i for i, e in enumerate(expanding) if not e)}
        return [mlir().Operation.create("stablehlo.dynamic_broadcast_in_dim", results=[tensor_type(out)],
                                        operands=[x, shape], attributes=attrs).result]
    name = "eager_broadcast_in_dim"
    recipe = _recipe(structural.broadcast_in_dim_p, [aval, out], {"broadcast_dimensions": broadcast_dimensions},
                     "dynamic_broadcast_in_dim")
    if not compile:
        return find_cached(backend, backend.flags(), recipe, [aval, shape_aval], [out])
    text = lambda: str(lower_function(body, [aval, shape_aval], [out], name))
    art, _ = compile_cached(backend, text, name, backend.flags(), [aval, shape_aval], [out], recipe=recipe)
    stats["compiles"] += 1
    return art


class Polymorphic:
    """A loaded shape-polymorphic kernel. It serves calls up to `POLYMORPHIC_MAX_ELEMENTS` (on the CPU: those
    that run inline on `local-sync`); bigger ones take a shape-specific module (see `apply`)."""

    def __init__(self, artifact, backend: Backend, shape_operand: bool):
        self.shape_operand = shape_operand
        a = artifact
        self.exe = backend.load(a.vmfb, a.in_avals, a.out_avals, a.name, driver=backend.driver_for(0))
        self._shapes: dict[tuple, object] = {}  # result shape -> its device buffer (broadcast), a few kept

    def __call__(self, args: Sequence, avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray]) -> list:
        exe = self.exe
        backend = exe.backend
        pending = False
        try:
            bvs = to_buffers(args, avals, backend)
        except PendingArguments as p:  # enqueued behind the calls computing them, as a jitted call: no wait
            bvs, pending = list(p.bvs), True
        if self.shape_operand:
            shape = out_avals[0].shape
            bv = self._shapes.get(shape)
            if bv is None:
                if len(self._shapes) >= 64:
                    self._shapes.clear()
                bv = self._shapes[shape] = backend.put(np.array(shape, np.int64))
            bvs.append(bv)
        if pending:
            job = exe.submit(bvs)
            return [Array.pending(job, i, aval, backend) for i, aval in enumerate(out_avals)]
        res = exe.call(bvs)
        if type(res) is not list:  # dispatched asynchronously (config.async_dispatch "always"): small, so wait
            res = [res.result(i) for i in range(len(out_avals))]
        outs = []
        for i, (bv, aval) in enumerate(zip(res, out_avals)):
            if bv.shape != list(aval.shape):
                raise RuntimeError(f"module {exe.name} returned result {i} of shape {tuple(bv.shape)} for "
                                   f"{aval.str_short()} (a wrong or tampered module)")
            outs.append(Array(bv, aval, backend))
        return outs


def _ready_buffers(args: Sequence, avals: Sequence[ShapedArray], backend: Backend) -> list:
    """`to_buffers`, first waiting for arguments still being computed by asynchronous calls: these kernels run
    inline (small calls, and views of a buffer that must exist)."""
    try:
        return to_buffers(args, avals, backend)
    except PendingArguments:
        for x in args:
            if type(x) is Array:
                x.block_until_ready()
        return to_buffers(args, avals, backend)


def _prefix(shape: Sequence[int], params: dict) -> bool:
    """Whether a slice keeps a row-major prefix of its operand (leading rows, all of each), half of it or more: it is
    then a view of the operand's buffer (`_view`), which it keeps alive (so not for a small part of a large array)."""
    start, limit, strides = params["start_indices"], params["limit_indices"], params["strides"]
    return (len(shape) > 0 and not any(start) and all(st == 1 for st in strides)
            and tuple(limit[1:]) == tuple(shape[1:]) and 0 < shape[0] <= 2 * limit[0])


def _view(args: Sequence, avals: Sequence[ShapedArray], out: ShapedArray, backend: Backend) -> list[Array]:
    """`reshape`, or a slice that keeps a prefix (`_prefix`): the same buffer seen with another shape (row-major
    either way; arrays are immutable; IREE's buffer views may cover a buffer's first bytes only)."""
    import iree.runtime as rt
    (bv,) = _ready_buffers(args[:1], avals[:1], backend)
    stats["views"] += 1
    view = Array(rt.HalBufferView(bv.get_buffer(), list(out.shape), bv.element_type), out, backend)
    x = args[0]
    if type(x) is Array and x._npy is not None:  # its host copy, seen alike (read-only: a view, no copy)
        v = x._npy.reshape(-1)[:math.prod(out.shape)].reshape(out.shape)
        v.flags.writeable = False  # (a copy where the host copy was not contiguous)
        view._npy = v
    return [view]


# ---------------------------------------------------------------- one equation with nothing compiled (the quick tier)


def loaded_step(eqn: Eqn, backend: Backend, host: bool = False):
    """`step(args) -> outputs` for one equation of a traced graph: its kernel, loaded now (loaded already or in the
    persistent cache), or with `host` its primitive's NumPy rule; None where a kernel would have to compile.
    (`stagec.quick` runs a graph with these.)"""
    prim, params = eqn.prim, eqn.params
    avals, out_avals = [x.aval for x in eqn.inputs], [v.aval for v in eqn.outputs]
    if not all(_plain(v) for v in params.values()):
        return None
    if prim.impl is not None:
        return lambda args: list(prim.impl(*args, **params))
    host = host and prim.hosts(avals, params, out_avals)
    on_host = lambda args: host_values(prim, args, avals, params, out_avals)
    if prim is structural.reshape_p or (prim is structural.slice_p and _prefix(avals[0].shape, params)):
        return lambda args: on_host(args) if type(args[0]) is np.ndarray else _view(args, avals, out_avals[0], backend)
    form = _polymorphic_form(prim, avals, params, out_avals, backend, any_size=True)
    if form is not None:
        pkey, pavals, pparams = form
        kernel = _get(pkey, lambda: _build_polymorphic(prim, pavals, pparams, out_avals, backend, compile=False))
        if kernel is not None and kernel is not _STATIC:
            return lambda args: kernel(args, avals, out_avals)
        if kernel is None:
            return on_host if host else None
    key = (prim, tuple(sorted(params.items())), tuple(avals), backend.name)
    kernel = _get(key, lambda: _static(prim, avals, params, out_avals, backend, compile=False))
    return kernel if kernel is not None else on_host if host else None


def kernels() -> list[tuple[str, str]]:
    """(primitive name, kind) of each loaded kernel, least recently used first; kind: "polymorphic", "static"
    (one shape), or "per-shape" (a polymorphic key whose module could not be built)."""
    kind = lambda k: "polymorphic" if isinstance(k, Polymorphic) else "per-shape" if k is _STATIC else "static"
    return [(key[0].name, kind(k)) for key, k in list(_cache.items())]


def clear_cache() -> None:
    _cache.clear()
    _once.clear()
    _forms.clear()
    _plans.clear()


set_eager_impl(apply, plan)
