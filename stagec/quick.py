"""The quick tier: a new jit signature runs at once, op by op, while its fused module compiles in the background
(`config.jit_tiering`: "kernels" through kernels compiled before, "auto" NumPy rules too; off by default, as its
results may differ from the fused module's in the last bits).

- `start(lowered, signatures, key)`: a new signature's runner on this tier (`Tiered`), or None where it cannot
  start here; the jit (`stagec.jit`) compiles it at once then.
- `Tiered`: runs the graph (`graph_runner`), queues the fused compile on a bounded pool (`_Pool`) and, once it is
  ready, swaps the fused runner into the jit's signatures (`Signatures.swap`).
- `graph_runner(graph, backend, host)`: a traced graph, equation by equation, through the eager layer's kernels
  (`eager.loaded_step`).
- `wait_for_compiles(timeout)`: every fused module queued or compiling now.
- `stats`: signatures started here ("tiered"), calls answered here ("quick_calls"), fused runners swapped in.
"""
from __future__ import annotations

import atexit
import collections
import os
import threading
import time
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from . import tree_util
from .array import Array, to_buffers
from .backend import Backend
from .compiler.processes import abandon_compiles, block_sigint
from .config import config
from .core import Const, Graph, Literal, ShapedArray, to_numpy_constant
from .dispatch import PendingArguments
from .eager import KEEP_HOST_BYTES, loaded_step
from .runner import Runner
from .stages import Lowered

if TYPE_CHECKING:  # (the jit imports this module: its signatures are only named here)
    from .jit import Signatures

stats = {"tiered": 0, "quick_calls": 0, "swaps": 0}


def start(lowered: Lowered, signatures: Signatures, key) -> Tiered | None:
    """The runner of a new signature (`key` of a jitted function's `signatures`) on the quick tier, or None where
    it cannot start there: tiering off (`config.jit_tiering`), not the CPU, donated arguments (their buffers must go
    to the fused module's outputs), or an equation whose kernel would have to compile."""
    if config.jit_tiering == "never" or lowered.backend.name != "cpu" or lowered.donated \
            or not isinstance(lowered.graph, Graph):
        return None
    run = graph_runner(lowered.graph, lowered.backend, host=config.jit_tiering == "auto")
    if run is None:
        return None
    if lowered.passes is None:  # the pipeline of now, not of when the thread lowers it
        lowered.passes = config.passes
    stats["tiered"] += 1
    return Tiered(lowered, run, signatures, key)


_compiling: set[Tiered] = set()  # tiers whose fused module is queued or compiling
_compiling_lock = threading.Lock()


class Tiered:
    """A new signature's runner while its fused module compiles (`config.jit_tiering`, opt-in): calls run
    the traced graph op by op (`graph_runner`: kernels compiled before, NumPy rules; results may differ from the
    fused module's in the last bits), and the first call queues the fused compile on the background pool
    (`_pool`; a full queue leaves it to a later call). Once ready, the fused runner replaces this one in the jit
    cache. A failed compile is raised by the next call, which drops this runner: the call after starts afresh."""

    def __init__(self, lowered: Lowered, quick: Callable, cache: Signatures, key):
        self.lowered, self.quick, self.cache, self.key = lowered, quick, cache, key
        self.name, self.backend, self.out_tree = lowered.name, lowered.backend, lowered.out_tree
        self.in_avals, self.out_avals = lowered.graph.in_avals, lowered.graph.out_avals
        self.fused: Runner | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.started = False  # queued on the pool, or compiling
        self._lock = threading.Lock()

    def __call__(self, leaves):
        if self.done.is_set():
            if self.error is not None:
                self.cache.drop(self.key, self)  # (retried by a later call: a fresh trace, a fresh compile)
                raise self.error.with_traceback(None)
            return self.fused(leaves)
        backend = self.backend
        try:
            try:
                bvs = to_buffers(leaves, self.in_avals, backend)
            except PendingArguments as p:  # behind the calls computing them, as a compiled module would be
                job = backend.submit(self, p.bvs)
                outs = [Array.pending(job, i, a, backend) for i, a in enumerate(self.out_avals)]
            else:
                outs = self.quick([Array(bv, a, backend) for bv, a in zip(bvs, self.in_avals)])
        finally:  # (after the first call's work: the lowering and passes on that thread need the GIL)
            self.start()
        stats["quick_calls"] += 1
        tree = self.out_tree
        return outs if tree is None else tree_util.tree_unflatten(tree, outs)

    def run(self, bvs: list) -> list:
        """Buffer views in and out, as `Executable.run`: a call enqueued behind pending arguments (`Job`)."""
        outs = self.quick([Array(bv, a, self.backend) for bv, a in zip(bvs, self.in_avals)])
        return [o._wait() for o in outs]

    def start(self) -> bool:
        """Queue the fused compile on the pool, once; False where its queue is full (a later call asks again)."""
        if self.started:
            return True
        with self._lock:
            if not self.started and not self.done.is_set() and _pool.submit(self):
                self.started = True
                with _compiling_lock:
                    _compiling.add(self)
        return self.started

    def compile(self) -> None:
        """Compile the fused module (on a pool thread, or the caller's where the queue was full) and swap it in."""
        try:
            compiled = self.lowered.compile()
            self.fused = compiled.runner
            self.lowered = None  # (its graph and texts are no longer needed)
            if self.cache.swap(self.key, self, compiled):
                stats["swaps"] += 1
        except BaseException as e:  # raised by the next call (`__call__`)
            self.error = e
        finally:
            self.done.set()
            with _compiling_lock:
                _compiling.discard(self)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the fused module (compiled here if the pool's queue is full); True once ready or failed."""
        if not self.start():
            with self._lock:
                if not self.started and not self.done.is_set():
                    self.started = True
                    self.compile()
        return self.done.wait(timeout)


class _Pool:
    """The background compiles of fused modules: at most `WORKERS` threads (each waits on one `iree-compile`)
    and `QUEUE` queued; beyond that `submit` declines and the quick tier keeps answering. At exit (`close`) the
    queue is dropped, the compilers are ended (`compiler.processes.abandon_compiles`) and nothing is awaited beyond
    the step a thread is in (a lowering) to end."""

    WORKERS = max(1, min(4, (os.cpu_count() or 2) // 2))
    QUEUE = 32

    def __init__(self):
        self._cond = threading.Condition()
        self._jobs: collections.deque[Tiered] = collections.deque()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._closing = False

    def submit(self, tier: Tiered) -> bool:
        with self._cond:
            if self._closing or len(self._jobs) >= self.QUEUE:
                return False
            self._jobs.append(tier)
            if self._idle < len(self._jobs) and len(self._threads) < self.WORKERS:
                if not self._threads:
                    _at_shutdown(self.close)
                t = threading.Thread(target=self._work, name=f"stagec-compile-{len(self._threads)}")
                self._threads.append(t)
                t.start()
            self._cond.notify()
        return True

    def _work(self) -> None:
        block_sigint()
        while True:
            with self._cond:
                self._idle += 1
                self._cond.wait_for(lambda: self._jobs or self._closing)
                self._idle -= 1
                if self._closing:
                    return
                tier = self._jobs.popleft()
            tier.compile()

    def close(self) -> None:
        with self._cond:
            self._closing = True
            dropped = list(self._jobs)
            self._jobs.clear()
            self._cond.notify_all()
        abandon_compiles()
        for t in dropped:
            t.error = RuntimeError("stagec is exiting: the compile was abandoned")
            t.done.set()


def _at_shutdown(fn: Callable[[], None]) -> None:
    """Call `fn` when the program ends, before Python joins its threads: the compile threads are not daemons (one
    inside the MLIR bindings at interpreter teardown aborted the process), so they are told to stop first and
    are joined once they leave the step in progress (a lowering; the compiler itself is killed)."""
    try:
        threading._register_atexit(fn)  # (what concurrent.futures uses for its workers)
    except (AttributeError, RuntimeError):  # (another Python; or shutting down already)
        atexit.register(fn)


_pool = _Pool()


def wait_for_compiles(timeout: float | None = None) -> bool:
    """Wait until every fused module compiling in the background (`config.jit_tiering` "auto") is ready; True if
    all are (False when `timeout` seconds passed first). Errors are raised by the calls, not here."""
    with _compiling_lock:
        pending = list(_compiling)
    deadline = None if timeout is None else time.monotonic() + timeout  # one timeout for all, not each
    return all([t.wait(None if deadline is None else max(0.0, deadline - time.monotonic())) for t in pending])


# ---------------------------------------------------------------- a traced graph, kernel by kernel


def graph_runner(graph: Graph, backend: Backend, host: bool = False) -> Callable[[Sequence], list] | None:
    """`run(leaves) -> [Array]` computing `graph` equation by equation through kernels loaded now (loaded already
    or in the persistent cache) or, with `host`, NumPy rules (`eager.loaded_step`); None where a kernel would have
    to compile, or an equation holds a function or a graph (callbacks, control flow). Polymorphic kernels serve
    calls of any size here (this tier lasts while the fused module compiles)."""
    if not config.eager_polymorphic:
        return None
    steps = []
    for eqn in graph.eqns:
        step = loaded_step(eqn, backend, host)
        if step is None:
            return None
        steps.append((step, eqn.inputs, eqn.outputs))
    outs = graph.outs

    def run(leaves: Sequence) -> list[Array]:
        env = {v.id: x for v, x in zip(graph.in_vars, leaves)}
        read = lambda x: Const(x.value, x.aval) if type(x) is Literal else env[x.id]
        for step, ins, outs_ in steps:
            for v, o in zip(outs_, step([read(i) for i in ins])):
                env[v.id] = o
        return [_as_array(read(o), o.aval, backend) for o in outs]
    return run


def _as_array(x, aval: ShapedArray, backend: Backend) -> Array:
    """An output as a new Array of the graph's aval, as a compiled module returns: an input passed through or one
    value returned twice must not be one object (eager `x[i] = v` rebinds an Array to another buffer)."""
    if type(x) is Array:
        out = x._share()
        out.aval = aval  # (the traced aval: its weak type)
        return out
    value = to_numpy_constant(x, aval)
    out = Array(backend.put(value), aval, backend)
    if type(x) is np.ndarray and value.nbytes <= KEEP_HOST_BYTES:  # a NumPy rule's result (read-only)
        out._npy = value
    return out


def _after_fork_in_child() -> None:
    """A forked child owns no compile thread: a fresh queue."""
    global _compiling_lock, _pool
    _compiling_lock, _pool = threading.Lock(), _Pool()
    _compiling.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)
