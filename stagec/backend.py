"""Backends: IREE targets and compilation, runtime drivers, devices, device buffers, loaded executables.

CPU runs on two IREE drivers over the same host memory. `local-sync` runs a call inline on the
calling thread (~3 us of overhead, measured through `VmContext.invoke`), `local-task` spreads
dispatches over a worker pool (~16 us of overhead, but SELU on 1M floats took 0.32 ms vs 0.49 ms
on 2 cores). Each executable picks the driver from the number of elements it touches and the
multiply-adds of its contractions (`TASK_THRESHOLD`, `MACS_PER_ELEMENT`), so tiny calls stay cheap and
large ones use every core. Buffers made by one driver are read by the other without copies (both are
plain host allocations). The threshold is
where the two crossed in `benchmarks/bench_core.py`'s driver table (exp(x)*2+1: 87 vs 84 us at
262,144 elements; 162 vs 117 us at 524,288), on this 2-core machine.
"""
from __future__ import annotations

import atexit
import collections
import math
import os
import queue
import re
import statistics
import threading
import time
import weakref
from typing import Callable, Sequence

import numpy as np

from .compiler import driver
from .compiler.driver import HOST_BLAS, NO_THREADS, SYSTEM_LINK, WORKER_STACK  # noqa: F401  (their old home)
from .compiler.targets import (CUDA_ARCH, IREE_TARGETS, TARGETS, Target, device_names, find_target,  # noqa: F401
                               host_has_bf16, host_id, vulkan_target_flags)
from .config import config
from .core import ShapedArray
from .errors import CallbackError
from .lowering import BLAS_IMPORTS, BLAS_MODULE, HOST_MODULE, SORT_IMPORTS, SORT_MODULE, SORT_OPERANDS, unpack_dims

TASK_THRESHOLD = 1 << 18  # elements (inputs + outputs) from which a CPU executable runs on local-task
# ... counting a contraction's multiply-adds as 1/8 element each: a matmul computes far more than it touches
# (iree-benchmark-module, 2 idle cores, local-sync vs local-task: 96^3 0.030 vs 0.060 ms, 128^3 0.110 vs 0.091,
# 256^3 0.44 vs 0.26; 128^3 is 2.1M multiply-adds, 49k elements).
MACS_PER_ELEMENT = 8
# Async dispatch ("auto"): an executable runs on its backend's worker thread unless it is a cheap local-sync
# one: it does when it runs on local-task or a GPU, calls Python (host callbacks), or when the fastest of its
# calls 2-4 on local-sync took longer than this (benchmarks/bench_async.py measures the hand-off).
ASYNC_SECONDS = 1e-4
# Calls on each CPU driver while a module calling BLAS chooses one (`Executable._choose_driver`), the first of each
# not timed. local-task is kept only when its median call is below `TASK_MARGIN` times local-sync's: its workers
# share the cores with the caller's other threads. With 4 calls, each driver's fastest compared, value_and_grad of
# an MLP (local-sync 1-4% faster) kept local-task in 2 processes of 8.
DRIVER_CALLS, TASK_MARGIN = 7, 0.97
# Executables whose results take at most this many bytes reuse their results list (`Executable.run`), which
# keeps the last results alive until the next call.
REUSED_RESULTS_BYTES = 1 << 16
# A caller that waits for a call's result within this time of making it ran nothing meanwhile worth overlapping;
# nor within this share of the call's own time, for a call run on its thread: the caller's own way from the
# call's return to its wait (wrapping the results, a pytree, `block_until_ready`) took 98 us in value_and_grad's
# 12 ms right after its matmuls evicted the caches, and every other call was handed to the worker (~70 us more).
WAIT_AT_ONCE_SECONDS, AT_ONCE_SHARE = 5e-5, 0.05
# ... and it is taken to overlap its calls with other work once this many waits in a row came later: one late wait
# is as often a preemption or a garbage collection (value_and_grad's caller: 1 call in 8 handed to the worker).
LATE_WAITS = 2


_IMPORTS = {kind: re.compile(re.escape(name + ".").encode()) for kind, name in (("blas", BLAS_MODULE),
                                                                                  ("sort", SORT_MODULE))}


def __getattr__(name: str):
    """The offload thresholds, read from the passes that apply them (`stagec.passes.legalize`; their old home)."""
    if name in ("BLAS_MIN_MACS", "BLAS_MIN_VECTOR_MACS", "SORT_MIN_LENGTH"):
        from .passes import legalize
        return getattr(legalize, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

def _cores() -> int:
    """The cores this process may run on. Given as a count, IREE leaves its workers unpinned: pinned (its default)
    a 1M-float SELU took 540-660 us in 5 of 8 fresh processes on 2 idle cores and ~380 us in the others;
    unpinned ~380 us in 8 of 8 (docs/passes.md, "Threads")."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _rt():
    import iree.runtime as rt
    return rt


def gpu_backends() -> list[str]:
    """The GPU backends with a GPU here: cuda, vulkan (lavapipe, Mesa's Vulkan on the CPU, does not count)."""
    return [b for b in ("cuda", "vulkan") if any("llvmpipe" not in n for n in device_names(b))]


class Device:
    """One device a backend runs on, named as JAX names them (`CpuDevice(id=0)`)."""

    def __init__(self, backend: Backend, id: int = 0):
        self.backend, self.id = backend, id
        self.platform = backend.name
        self.device_kind = backend.name

    def __repr__(self):
        return f"{self.platform.capitalize()}Device(id={self.id})"


class Backend:
    """A compile target plus the IREE runtime driver(s) that run its modules."""

    def __init__(self, name: str):
        if name not in TARGETS:
            raise ValueError(f"unknown backend {name!r}; choose one of {sorted(TARGETS)}")
        self.name, self.target = name, TARGETS[name].iree
        self._hal: dict[str, tuple] = {}
        self._numpy: dict = {}  # (kind, driver) -> a module calling NumPy (`numpy_module`)
        self._lock = threading.Lock()
        self.devices = [Device(self)]
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._worker_id = -1
        self._idle = True  # the worker waits for work (heuristic: read without a lock)
        # Calls are claimed in the order they were enqueued, by the worker or by a caller waiting for one that no
        # one has started while nothing else runs (`Job.wait`: no hand-off to the worker and back then).
        self._claim_lock = threading.Lock()
        self._enqueued = self._claimed = self._running = 0
        # While the caller waits for its calls at once (`waits_at_once`), the next call runs on its thread when
        # nothing else is queued (`submit`), else it is left for it to run when it waits.
        self.late_waits = LATE_WAITS  # the caller's waits in a row that came later than `WAIT_AT_ONCE_SECONDS`
        self._stolen: tuple | None = None  # (job, thread) a waiting caller is running (`run_stolen`)
        self.failed: collections.deque = collections.deque(maxlen=64)  # failed Jobs no one has raised yet

    # ---- compilation (`stagec.compiler`)
    def compile_flags(self, arch: str | None = None) -> list[str]:
        """The default compiler flags, with `arch` (a CPU name, `sm_80`, a Vulkan target) replacing the default one."""
        t = TARGETS[self.name]
        flags = [*vulkan_target_flags(), *t.flags] if self.name == "vulkan" else list(t.flags)
        if arch is None:
            return flags
        # (arch_flag[:-1] also drops the default target's `...-features=`, which describe that target only)
        return [f for f in flags if not f.startswith(t.arch_flag[:-1])] + [t.arch_flag + arch]

    def host_blas(self, host_blas: bool | None = None) -> bool:
        """Whether a compile for this backend calls NumPy for its offloads: `host_blas`, else `config.cpu_blas`
        (only a target declaring offloads has any)."""
        return bool(TARGETS[self.name].pipeline.offloads) and (config.cpu_blas if host_blas is None else host_blas)

    def flags(self, arch: str | None = None, host_blas: bool | None = None) -> list[str]:
        """`compile_flags(arch)` (iree-compile's) and `HOST_BLAS` where the compile calls NumPy (`host_blas`), which
        the cache key and the artifact hold and IREE never sees."""
        return self.compile_flags(arch) + ([HOST_BLAS] if self.host_blas(host_blas) else [])

    def module_flags(self, mlir: str, flags: Sequence[str], facts: driver.Facts) -> list[str]:
        """`flags` adjusted to one module from its facts (`stagec.compiler.driver.module_flags`)."""
        return driver.module_flags(self.name, flags, facts, mlir)

    def compile(self, mlir: str, fun_name: str, flags: Sequence[str] | None = None, side_flags: Sequence[str] = (),
                variants: list | None = None) -> bytes:
        """Final MLIR text and flags (default: `compile_flags()`) -> IREE VM flatbuffer
        (`stagec.compiler.driver.compile`)."""
        return driver.compile(mlir, self.name, fun_name, self.compile_flags() if flags is None else flags,
                              side_flags, variants)

    # ---- runtime
    def driver_for(self, elements: int, macs: int = 0) -> str:
        """The driver for a module touching `elements` and computing `macs` multiply-adds in contractions."""
        if self.name == "cpu":
            if (config.cpu_threads or _cores()) <= 1:
                # One worker is no faster than the calling thread, and hands each dispatch over to it and back:
                # jit(value_and_grad) of the MLP on one core 16.0 ms on local-task, 13.3 on local-sync.
                return "local-sync"
            return "local-task" if elements + macs // MACS_PER_ELEMENT >= TASK_THRESHOLD else "local-sync"
        return self.name

    def hal(self, driver: str):
        """(instance, device, hal_module) for an IREE driver, created once."""
        with self._lock:
            if driver not in self._hal:
                rt = _rt()
                if driver == "local-task":  # one worker per core this process may run on, or `cpu_threads`
                    rt.flags.parse_flags(f"--task_topology_group_count={config.cpu_threads or _cores()}",
                                         f"--task_worker_stack_size={WORKER_STACK}")
                try:
                    if driver in ("local-task", "local-sync") and config.cpu_buffer_cache_mb > 0:
                        dev = rt.get_driver(driver).create_device_by_uri(driver, allocators=[_buffer_cache_spec()])
                    else:
                        dev = rt.get_device(driver)
                except Exception as e:
                    raise RuntimeError(f"stagec backend {self.name!r}: IREE driver {driver!r} is not available "
                                       f"here ({e}); available: {rt.query_available_drivers()}") from None
                inst = _instance()
                self._hal[driver] = (inst, dev, rt.create_hal_module(inst, dev))
            return self._hal[driver]

    def numpy_module(self, kind: str, driver: str):
        """The module of `kind` ("blas": `_blas_module`, "sort": `_sort_module`) on `driver`'s device, created
        once."""
        dev = self.hal(driver)[1]
        with self._lock:
            if (kind, driver) not in self._numpy:
                self._numpy[kind, driver] = (_blas_module if kind == "blas" else _sort_module)(dev)
            return self._numpy[kind, driver]

    @property
    def alloc_driver(self) -> str:
        """The driver buffers are allocated on (CPU drivers share host memory: any of them)."""
        return self.driver_for(0)

    def put(self, value: np.ndarray):
        """Copy a host array into a new device buffer view.

        GPUs get plain device memory filled by a transfer: host-visible device-local memory is managed
        (unified) memory on CUDA, which can hang a shared GPU once it outgrows what the card has free."""
        rt = _rt()
        _, dev, _ = self.hal(self.alloc_driver)
        value = np.asarray(value, order="C")  # (np.ascontiguousarray would make 0-d arrays 1-d)
        storage = value.view(np.uint8) if value.dtype == np.bool_ else value
        memory, usage = rt.MemoryType.DEVICE_LOCAL, rt.BufferUsage.DEFAULT
        if self.name == "cpu":
            memory, usage = memory | rt.MemoryType.HOST_VISIBLE, usage | rt.BufferUsage.MAPPING_SCOPED
        buf = dev.allocator.allocate_buffer_copy(memory_type=memory, allowed_usage=usage, device=dev,
                                                 buffer=storage.reshape(-1))
        return rt.HalBufferView(buf, value.shape, _element_type(value.dtype))

    def get(self, bv, aval: ShapedArray) -> np.ndarray:
        """Copy a device buffer view back into a new host array (on a GPU through a queue copy)."""
        if aval.size == 0:
            return np.zeros(aval.shape, aval.dtype)
        try:
            mapped = bv.map() if self.name == "cpu" else self._staged(bv)
        except RuntimeError as e:
            raise NotImplementedError(f"stagec backend {self.name!r}: reading a {aval.str_short()} result back "
                                      f"to the host is not supported by IREE driver {self.alloc_driver!r} here "
                                      f"({e})") from None
        host = np.ndarray(aval.shape, np.dtype(np.uint8) if aval.dtype == np.bool_ else aval.dtype, mapped)
        out = np.array(host, copy=True)
        return out.view(np.bool_) if aval.dtype == np.bool_ else out

    def _staged(self, bv):
        """Map a copy of a device buffer, made by a queue copy into host memory the device writes to and
        awaited before mapping. (`DeviceArray.to_host` fails on lavapipe: it imports unaligned host memory.)"""
        rt = _rt()
        _, dev, _ = self.hal(self.alloc_driver)
        src = bv.get_buffer()
        host = dev.allocator.allocate_buffer(
            memory_type=int(rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE),
            allowed_usage=int(rt.BufferUsage.TRANSFER_TARGET | rt.BufferUsage.MAPPING_SCOPED),
            allocation_size=src.byte_length())
        sem = dev.create_semaphore(0)
        dev.queue_copy(src, host, wait_semaphores=rt.HalFence.create_at(sem, 0),
                       signal_semaphores=rt.HalFence.create_at(sem, 1))
        rt.HalFence.create_at(sem, 1).wait()
        return host.map()

    @property
    def waits_at_once(self) -> bool:
        """Whether the caller waited for its recent calls at once: fewer than `LATE_WAITS` late waits in a row."""
        return self.late_waits < LATE_WAITS

    # ---- async dispatch: one worker thread per backend runs enqueued calls in order
    def submit(self, exe: Executable, args: list) -> Job:
        """Enqueue a call of `exe` on `args` (buffer views, or (Job, index) of earlier calls' results)."""
        job = Job(exe, args)
        if threading.get_ident() == self._worker_id:  # compiled code called from a host callback: run it now
            job.run()
            return job
        if self._worker is None:
            with self._lock:
                if self._worker is None:
                    t = threading.Thread(target=self._work, name=f"stagec-{self.name}", daemon=True)
                    t.start()
                    self._worker_id = t.ident
                    self._worker = t
                    atexit.register(self._drain)
        at_once = self.waits_at_once
        if at_once and exe is not None and not exe.host_calls and self._claim_now(job):
            # The caller waited for its last call at once, and nothing is queued or running: run this one on its
            # thread now. Even enqueued for the caller to take back (`Job.wait`), it woke the worker, whose grab
            # for the GIL then delayed the caller (that path against calls made inline: selu 1M 364-374 -> 319-344 us,
            # a 256^2 matmul 146-154 -> 139-145; docs/design.md).
            # Not a call of host callbacks: one may wait for what the caller does once the call has returned.
            t0 = time.perf_counter()
            self.run_stolen(job)
            t1 = time.perf_counter()
            job.due = t1 + max(WAIT_AT_ONCE_SECONDS, AT_ONCE_SHARE * (t1 - t0))
            return job
        idle = self._idle
        self._enqueue(job)
        # Let the worker take the GIL now (a caller busy in Python would otherwise keep it for up to the switch
        # interval: 5 ms; measured: 8 ms late, 0.1 ms with this), unless the caller is expected to wait for this
        # call at once and run it itself, with no earlier call still waiting to start.
        if idle and (not at_once or job.seq > self._claimed):
            time.sleep(0)
        job.due = time.perf_counter() + WAIT_AT_ONCE_SECONDS
        return job

    def _enqueue(self, job: Job | None) -> None:
        with self._claim_lock:
            if job is not None:
                job.seq, self._enqueued = self._enqueued, self._enqueued + 1
            self._queue.put(job)

    def _claim_now(self, job: Job) -> bool:
        """Whether `job`, not enqueued, is now this thread's to run: no enqueued call waits or runs."""
        with self._claim_lock:
            if self._claimed != self._enqueued or self._running:
                return False
            job.seq = self._enqueued
            self._enqueued += 1
            self._claimed += 1
            self._running += 1
            return True

    def claim(self, job: Job, alone: bool = False) -> bool:
        """Whether `job` is now this thread's to run: the next enqueued call, and (`alone`) none is running."""
        with self._claim_lock:
            if job.seq != self._claimed or (alone and self._running):
                return False
            self._claimed += 1
            self._running += 1
            return True

    def run_stolen(self, job: Job) -> None:
        """Run a claimed `job` on a waiting caller's thread (one at a time: claimed alone), seen by `barrier`."""
        self._stolen = (job, threading.get_ident())
        try:
            self.run_claimed(job)
        finally:
            self._stolen = None

    def run_claimed(self, job: Job) -> None:
        try:
            job.run()
        finally:
            with self._claim_lock:
                self._running -= 1

    def _work(self) -> None:
        q = self._queue
        while True:
            self._idle = q.empty()
            job = q.get()
            self._idle = False
            if job is None:
                return
            if self.claim(job):  # (else a waiting caller ran it)
                self.run_claimed(job)

    def help_until(self, job: Job) -> None:
        """On the worker thread (inside a host callback), run queued calls until `job` is done."""
        while not job.done:
            nxt = self._queue.get()
            if nxt is None:
                raise RuntimeError(f"stagec backend {self.name!r}: worker stopped before {job.exe.name} ran")
            if self.claim(nxt):
                self.run_claimed(nxt)

    def barrier(self) -> None:
        """Wait until every call enqueued so far has run; then raise the first asynchronous failure not yet
        raised (`raise_failed`)."""
        if self._worker is not None:
            self.submit(None, []).wait()
        stolen = self._stolen  # (a call enqueued before, which a waiting caller is running on its thread)
        if stolen is not None and stolen[1] != threading.get_ident():
            stolen[0].wait()
        self.raise_failed()

    def raise_failed(self) -> None:
        """Raise the error of the first failed call whose error no synchronizing point has raised yet."""
        while self.failed:
            job = self.failed.popleft()
            if not job.reported:
                job.raise_error()

    def _drain(self) -> None:  # at exit: let queued calls (and their prints) finish
        if self._worker is not None and self._worker.is_alive():
            done = Job(None, [])
            self._enqueue(done)
            self._enqueue(None)
            done._lock.acquire(timeout=60)

    def load(self, vmfb: bytes, in_avals, out_avals, name: str, host_calls: Sequence = (),
             driver: str | None = None, macs: int = 0) -> Executable:
        return Executable(self, vmfb, list(in_avals), list(out_avals), name, host_calls, driver, macs)


_inst = None


def _instance():
    global _inst
    if _inst is None:
        _inst = _rt().VmInstance()
    return _inst


def _element_type(dtype: np.dtype):
    rt = _rt()
    from iree.runtime.array_interop import map_dtype_to_element_type
    return rt.HalElementType.BOOL_8 if dtype == np.bool_ else map_dtype_to_element_type(dtype)


class Executable:
    """A loaded IREE module; `call(buffer_views)` is the hot path of every jit call.

    `call` is, per executable, `run` (inline: buffer views in and out), `submit` (dispatched asynchronously
    on the backend's worker thread: returns a `Job`) or `_timed` (inline, for the first calls, then one of
    the two), as `config.async_dispatch` and the executable's cost decide (`ASYNC_SECONDS`). Arguments that
    are pending results of earlier calls always go to `submit` (`PendingArguments`)."""

    def __init__(self, backend: Backend, vmfb: bytes, in_avals, out_avals, name: str, host_calls: Sequence = (),
                 driver: str | None = None, macs: int = 0):
        rt = _rt()
        self.backend, self.vmfb, self.name = backend, vmfb, name
        self.in_avals, self.out_avals = in_avals, out_avals
        self.host_calls = bool(host_calls)
        elements = sum(a.size for a in in_avals) + sum(a.size for a in out_avals)
        self.driver = driver or backend.driver_for(elements, macs)
        inst, _, hal_module = backend.hal(self.driver)
        # Copied into IREE's own (aligned) memory: nothing the module runs from can change under it.
        self.module = rt.VmModule.copy_buffer(inst, vmfb)
        self._failure = threading.local()  # .value: (callback name, exception) a host callback raised
        host = [_host_module(self, host_calls)] if host_calls else []
        kinds = _numpy_imports(vmfb)
        host += [backend.numpy_module(k, self.driver) for k in kinds]
        blas = "blas" in kinds
        self.context = rt.VmContext(inst, modules=[hal_module, *host, self.module])
        self.fn = self.module.lookup_function("main")
        self._invoke = self.context.invoke
        # A module calling BLAS on local-task hands each stretch of dispatches between two BLAS calls to IREE's
        # workers and waits for them: two thread wake-ups a stretch, ~80 us where waking an idle core is slow
        # (a 2-core VM). Whether its dispatches gain more than that on every core, only timing tells: its first
        # calls alternate between local-task and local-sync (`_choose_driver`), and the faster one stays.
        self._drivers: list = []
        if blas and driver is None and not host_calls and self.driver == "local-task" \
                and config.async_dispatch == "auto":
            _, _, sync_hal = backend.hal("local-sync")
            sync = rt.VmContext(inst, modules=[sync_hal, *[backend.numpy_module(k, "local-sync") for k in kinds],
                                               self.module])
            self._drivers = [["local-task", self.context, []], ["local-sync", sync, []]]
        if self.fn is None:
            raise RuntimeError(f"module {name} has no function 'main'")
        self._n_out = len(out_avals)
        self._unchecked = True  # until a call's results match `out_avals` (`_check`)
        self._bv, self._list = rt.HalBufferView, rt.VmVariantList
        self._rets: list = []  # results lists to reuse (`run`)
        self._small_outs = (all(d >= 0 for a in out_avals for d in a.shape)  # (dynamic dimensions: any size)
                            and sum(a.size * np.dtype(a.dtype).itemsize for a in out_avals) <= REUSED_RESULTS_BYTES)
        mode = config.async_dispatch  # (one of config's choices, lower-cased)
        self._probes, self._fastest = 4, float("inf")
        if self._drivers:
            self._set_call(Executable._choose_driver)
        elif mode == "always" or (mode == "auto" and (host_calls or self.driver != "local-sync")):
            self._set_call(Executable.submit)
        elif mode == "auto":
            self._set_call(Executable._timed)

    def _set_call(self, method) -> None:
        """Make `call` this method (`run` is the class's own), held without a reference cycle."""
        if method is Executable.run:
            # `del`, never `self.__dict__`: reading that makes every attribute slower to read (~0.2 us a call)
            try:
                del self.call
            except AttributeError:  # another thread decided first
                pass
            return
        ref = weakref.ref(self)
        self.call = lambda bvs: method(ref(), bvs)

    def submit(self, bvs: Sequence) -> Job:
        """Enqueue on the backend's worker; `bvs` may hold (Job, index) of earlier calls' pending results."""
        return self.backend.submit(self, bvs)

    def _timed(self, bvs: Sequence) -> list:
        """One of the first few calls: timed, so that a costly one is dispatched asynchronously from then on."""
        t0 = time.perf_counter()
        outs = self.run(bvs)
        self._probes -= 1
        if self._probes < 3:  # the fastest of calls 2-4 (the first pays for first touches; others get preempted)
            self._fastest = min(self._fastest, time.perf_counter() - t0)
        if self._probes <= 0:
            self._set_call(Executable.submit if self._fastest > ASYNC_SECONDS else Executable.run)
        return outs

    def _choose_driver(self, bvs: Sequence) -> list:
        """One of a BLAS-calling module's first calls: on each CPU driver in turn (`_drivers`), timed but for each
        driver's first; after `DRIVER_CALLS` calls each, the faster driver by their medians (`TASK_MARGIN`) runs the
        module, asynchronously."""
        drivers = self._drivers
        if not drivers:  # (chosen by another thread meanwhile)
            return self.submit(bvs)
        d = min(drivers, key=lambda d: len(d[2]))  # (the driver with the fewest calls so far)
        self.driver, self.context = d[0], d[1]
        self._invoke = d[1].invoke
        t0 = time.perf_counter()
        outs = self.run(bvs)
        d[2].append(time.perf_counter() - t0)
        if all(len(x[2]) >= DRIVER_CALLS for x in drivers):
            task, sync = drivers  # (as `__init__` lists them)
            best = task if statistics.median(task[2][1:]) < TASK_MARGIN * statistics.median(sync[2][1:]) else sync
            self.driver, self.context = best[0], best[1]
            self._invoke = best[1].invoke
            self._drivers = []
            self._set_call(Executable.submit)
        return outs

    def run(self, bvs: Sequence) -> list:
        """Run now on this thread: buffer views in, buffer views out."""
        args = self._list(len(bvs))
        for bv in bvs:
            args.push_ref(bv)
        # A results list of an earlier call (`invoke` empties it first): making one costs ~0.35 us of a ~4 us call.
        # Taken from the pool, so a call on another thread meanwhile gets its own.
        rets = self._rets.pop() if self._rets else self._list(self._n_out)
        try:
            self._invoke(self.fn, args, rets)
        except (IndexError, ValueError) as e:  # IREE's runtime checks on what its compiler emitted
            known = _KNOWN_RUNTIME_BUGS.search(str(e))
            if known is None:
                raise
            raise RuntimeError(f"IREE 3.13 cannot run {self.name}: {known[0]} (its compiler emitted a dispatch the "
                               f"runtime rejects; seen with many values carried through loops, e.g. forward-mode "
                               f"derivatives of while loops, and upstream as iree-org/iree#24753). Differentiating "
                               f"another way round (grad instead of jvp) or fewer loop-carried arrays avoid it.") from e
        except RuntimeError:
            failure, self._failure.value = getattr(self._failure, "value", None), None
            if failure is None:
                raise
            name, exc = failure
            raise CallbackError(f"host callback {name!r} called from {self.name} raised {type(exc).__name__}: "
                                f"{exc}") from exc
        if self._unchecked:
            self._check(rets)
        if self._n_out == 1:
            outs = [rets.get_as_object(0, self._bv)]
        else:
            outs = []  # a loop, not a comprehension: on Python 3.11 a comprehension is one more call (~150 ns)
            for i in range(self._n_out):
                outs.append(rets.get_as_object(i, self._bv))
        if self._small_outs:  # (the list keeps its results alive until the next call: small ones only)
            self._rets.append(rets)
        return outs

    def _check(self, rets) -> None:
        """Raise unless the results are what `out_avals` declares: a module whose metadata lies (or a wrong module)
        would otherwise be read past the end of its buffers. The module fixes its results' count, element types
        and static shapes, so one call that matches checks them all. (A shape-polymorphic module's dynamic
        shapes are checked by its caller, who knows them.)"""
        if len(rets) != self._n_out:
            raise RuntimeError(f"module {self.name} returned {len(rets)} results, but it declares {self._n_out}")
        for i, a in enumerate(self.out_avals):
            bv = rets.get_as_object(i, self._bv)
            if (min(a.shape, default=0) >= 0 and bv.shape != list(a.shape)) or \
                    bv.element_type not in _element_types(a.dtype):
                raise RuntimeError(f"module {self.name} returned result {i} as {_type_name(bv.element_type)}{bv.shape}, but "
                                   f"it declares {a.str_short()} (a wrong or tampered module)")
        self._unchecked = False

    call = run  # inline; `_set_call` may replace it per executable


# Runtime failures of modules IREE 3.13 compiled without complaint: a fused dispatch over more buffers than the
# CPU runtime binds (32), a loop result left unallocated.
_KNOWN_RUNTIME_BUGS = re.compile(r"binding count \d+ > \d+|ref is null; while invoking native function "
                                 r"hal\.buffer_view\.create")


class PendingArguments(Exception):
    """Raised by `array.to_buffers` when an argument is an enqueued call's pending result: `bvs` holds buffer
    views and (Job, index) pairs, for `Executable.submit` (an exception keeps the common path free of tests)."""

    def __init__(self, bvs: list):
        super().__init__("pending arguments")
        self.bvs = bvs


class Job:
    """A call enqueued on a backend's worker thread: its results (buffer views) once run, or its error.

    `wait()` blocks until it ran; `result(i)` is its i-th result or raises the error, naming the function."""

    __slots__ = ("exe", "args", "outs", "error", "done", "reported", "seq", "due", "_lock")

    def __init__(self, exe: Executable | None, args: list):
        self.exe, self.args, self.outs, self.error, self.done, self.reported = exe, args, None, None, False, False
        # its place in the queue; until when a first wait counts as at once (`submit`; 0: waited for since)
        self.seq, self.due = -1, 0.0
        self._lock = threading.Lock()
        self._lock.acquire()  # released once run

    def run(self) -> None:
        exe = self.exe
        try:
            if exe is not None:  # (None: a barrier)
                args = self.args
                for k, a in enumerate(args):
                    if type(a) is tuple:  # an earlier call's result
                        try:
                            args[k] = a[0].result(a[1])
                        except Exception as e:  # (result() marked its error reported: this one carries it)
                            raise _like(e, f"argument {k} of {exe.name} is a result of {a[0].exe.name}, which "
                                           f"failed: {e}") from e
                self.outs = exe.run(args)
        except BaseException as e:  # (kept for the caller: the worker goes on)
            self.error = e
            exe.backend.failed.append(self)
        finally:
            self.args = None
            self.done = True
            self._lock.release()

    def wait(self) -> Job:
        backend = self.exe.backend if self.exe is not None else None
        on_worker = backend is not None and threading.get_ident() == backend._worker_id
        if self.due and backend is not None and not on_worker:  # a caller's first wait for its call: how soon?
            backend.late_waits = backend.late_waits + 1 if time.perf_counter() >= self.due else 0
            self.due = 0.0
        if not self.done:
            if on_worker and self.seq >= backend._claimed:  # (not started: run the queue up to it)
                backend.help_until(self)
            elif not on_worker and backend is not None and backend.claim(self, alone=True):
                backend.run_stolen(self)  # (no one had started it: run here, no hand-off to the worker and back)
            else:
                self._lock.acquire()
                self._lock.release()
        return self

    def result(self, i: int):
        if not self.done or self.due:
            self.wait()
        if self.error is not None:
            self.raise_error()
        return self.outs[i]

    def raise_error(self):
        self.reported = True
        e = self.error
        msg = str(e) if self.exe.name in str(e) else f"{self.exe.name}: {e}"
        raise _like(e, f"{msg} (raised by asynchronously dispatched work)") from e


def _like(e: Exception, msg: str) -> Exception:
    """An exception of `e`'s class (RuntimeError when that class takes no message) saying `msg`."""
    try:
        return type(e)(msg)
    except Exception:
        return RuntimeError(msg)


def _host_module(exe: Executable, host_calls: Sequence):
    """The Python VM module (`lowering.HOST_MODULE`) whose functions the compiled module imports: each converts
    its buffer views to NumPy arrays, calls the Python function, and returns its results as buffer views."""
    rt = _rt()
    backend, failure = exe.backend, exe._failure  # (not `exe`: the executable's context holds this module)

    class Host:
        def __init__(self, iface):
            pass

    iface = rt.PyModuleInterface(HOST_MODULE, Host)
    for hc in host_calls:
        def call(_self, *refs, hc=hc):
            try:
                args = [backend.get(r.deref(rt.HalBufferView), a) for r, a in zip(refs, hc.in_avals)]
                outs = [backend.put(np.asarray(o, a.dtype)).ref for o, a in zip(hc.fn(*args) or (), hc.out_avals)]
            except BaseException as e:  # reported by Executable.run, naming the callback
                failure.value = (hc.name, e)
                raise
            if hc.token:  # the effect token, passed through
                outs.append(refs[-1])
            return None if not outs else outs[0] if len(outs) == 1 else tuple(outs)
        iface.export(hc.name, hc.cconv, call)
    return iface.create()


def _numpy_imports(vmfb) -> list[str]:
    """Which modules calling NumPy ("blas": `blas-dots`, "sort": `host-sorts`) a module imports:
    their import names are in its flatbuffer as written. (A regex searches any bytes-like object in place: a
    cached module is a memoryview, not copied.)"""
    return [kind for kind, pattern in _IMPORTS.items() if pattern.search(vmfb) is not None]


def _buffer_cache_spec() -> str:
    """IREE's caching allocator for the CPU drivers: freed buffers (up to `config.cpu_buffer_cache_mb` in all, each
    at most 256 MiB) are kept for the next allocation of their size. A fresh allocation is fresh pages, and the
    kernel faults each one in when a dispatch first writes it: filling a new 16 MiB buffer took 1.23-1.52 ms, a
    reused one 0.65 (4 MiB: 295 vs 151 us; 256 KiB: 11.8 vs 7.9), while every jit call writes its results into
    new buffers."""
    mb = config.cpu_buffer_cache_mb
    return f"caching:device_local={min(mb, 256)}mib;{mb}mib;64"


def _mapped_allocator(dev) -> Callable[[int], object]:
    """`new(nbytes)`: a new buffer of device `dev` that the host maps, which a module calling NumPy writes its
    results into (`_blas_module`, `_sort_module`)."""
    rt = _rt()
    allocate, mapped = dev.allocator.allocate_buffer, rt.MemoryType.DEVICE_LOCAL | rt.MemoryType.HOST_VISIBLE
    usage = rt.BufferUsage.DEFAULT | rt.BufferUsage.MAPPING_SCOPED
    return lambda nbytes: allocate(memory_type=mapped, allowed_usage=usage, allocation_size=nbytes)


def _operand(shape: Sequence[int], perm: Sequence[int], matrix: tuple, dt: np.dtype) -> tuple:
    """(matrix, strides, None) where an operand of `shape`, its dimensions ordered by `perm` and grouped into
    `matrix` (batch, rows, columns), is a strided view of its row-major memory (BLAS reads either layout in place);
    else (matrix, None, view): `view(mapped)` copies it into that layout."""
    strides = _view_strides(shape, perm, matrix, dt.itemsize)
    if strides is not None:
        return matrix, strides, None
    shape, perm = tuple(shape), tuple(perm)
    return matrix, None, lambda mapped: np.ndarray(shape, dt, mapped).transpose(perm).reshape(matrix)


def _view_strides(shape: Sequence[int], perm: Sequence[int], matrix: Sequence[int], itemsize: int) -> tuple | None:
    """The strides of `x.transpose(perm).reshape(matrix)` for a row-major `x` of `shape` where that is a view
    (each group of dimensions that `matrix` merges is evenly strided), else None (the reshape copies)."""
    c = [itemsize] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        c[i] = c[i + 1] * shape[i + 1]
    dims = [(shape[d], c[d]) for d in perm if shape[d] != 1]  # (an extent of 1 has no stride that matters)
    out, i = [], 0
    for t in matrix:
        if t == 1:
            out.append(itemsize)
            continue
        size, stride = 1, None
        while size < t and i < len(dims):
            n, st = dims[i]
            if stride is not None and stride != st * n:
                return None
            size, stride, i = size * n, st, i + 1
        if size != t:
            return None
        out.append(stride)
    return tuple(out) if i == len(dims) else None


def _blas_module(dev):
    """The Python VM module (`BLAS_MODULE`) whose `dot_general_<k>` a module calls for its large float32
    and float64 matmuls (`blas-dots`): NumPy's matmul (its BLAS) on the operands' mapped memory, writing
    into a new buffer of device `dev` (no copy, unless the dimension numbers need a transpose BLAS cannot take)."""
    rt = _rt()
    bv_type, new_buffer = rt.HalBufferView, _mapped_allocator(dev)
    dtypes = {int(_element_type(np.dtype(t))): np.dtype(t) for t in (np.float32, np.float64)}  # (lowering.BLAS_TYPES)

    class Blas:
        def __init__(self, iface):
            pass

    plans: dict = {}  # (operand shapes, element type, packed dimension numbers) -> `plan`'s result

    def plan(lshape, rshape, et: int, *packed):
        """How one signature calls np.matmul: each operand's matrix (or batch of matrices) as a view of its mapped
        memory (`_operand`), the result's shape and bytes. Worked out once: a call comes right after a BLAS call
        or a dispatch that evicted this Python code from the caches: the glue before the matmul took 22-50 us a
        call in value_and_grad, 16-37 with this."""
        dt = dtypes[et]
        lb, rb, lc, rc = (unpack_dims(d) for d in packed)
        lf = [d for d in range(len(lshape)) if d not in lb and d not in lc]
        rf = [d for d in range(len(rshape)) if d not in rb and d not in rc]
        batch, m, n = [lshape[d] for d in lb], [lshape[d] for d in lf], [rshape[d] for d in rf]
        k = math.prod(lshape[d] for d in lc)
        nb, nm, nn = math.prod(batch), math.prod(m), math.prod(n)
        shape = (*batch, *m, *n)
        lead = () if nb == 1 else (nb,)  # (one batch: a 2-D product, one gemm, either operand transposed in place)
        if len(plans) >= 256:
            plans.clear()
        p = plans[(*lshape, -1, *rshape, et, *packed)] = (
            dt, _operand(lshape, lb + lf + lc, (*lead, nm, k), dt), _operand(rshape, rb + rc + rf, (*lead, k, nn), dt),
            list(shape), (*lead, nm, nn), max(1, math.prod(shape)) * dt.itemsize)
        return p

    def dot_general(_self, lhs_ref, rhs_ref, lb, rb, lc, rc):
        lhs, rhs = lhs_ref.deref(bv_type), rhs_ref.deref(bv_type)
        et = lhs.element_type
        p = plans.get((*lhs.shape, -1, *rhs.shape, int(et), lb, rb, lc, rc))
        if p is None:
            p = plan(lhs.shape, rhs.shape, int(et), lb, rb, lc, rc)
        dt, (l2, lstrides, lview), (r2, rstrides, rview), shape, o2, nbytes = p
        buf = new_buffer(nbytes)
        # (np.ndarray on a mapping's buffer: 0.3 us; its `asarray`: 1.3, and 5-13 right after a large matmul)
        np.matmul(np.ndarray(l2, dt, lhs.map(), 0, lstrides) if lview is None else lview(lhs.map()),
                  np.ndarray(r2, dt, rhs.map(), 0, rstrides) if rview is None else rview(rhs.map()),
                  out=np.ndarray(o2, dt, buf.map()))
        return bv_type(buf, shape, et).ref

    def dot_pair(_self, l1, r1, l2, r2, lb1, rb1, lc1, rc1, lb2, rb2, lc2, rc2):  # (passes.legalize._pair_calls)
        return dot_general(_self, l1, r1, lb1, rb1, lc1, rc1), dot_general(_self, l2, r2, lb2, rb2, lc2, rc2)

    iface = rt.PyModuleInterface(BLAS_MODULE, Blas)
    for i in range(BLAS_IMPORTS):
        iface.export(f"dot_general_{i}", "0rrIIII_r", dot_general)
        iface.export(f"dot_pair_{i}", "0rrrrIIIIIIII_rr", dot_pair)
    return iface.create()


def _sort_module(dev):
    """The Python VM module (`SORT_MODULE`) whose `sort<n>_<k>(operands..., dimension, num_keys)` sorts n
    arrays along `dimension` by the first `num_keys` (lexicographically, NaN last, ties in order: NumPy's stable
    sort, as the comparator `sort_p` emits), into new buffers of device `dev`."""
    rt = _rt()
    bv_type, new_buffer = rt.HalBufferView, _mapped_allocator(dev)
    keys = {et: np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int64)  # (lowering.SORT_KEY_TYPES)
            for et in _element_types(np.dtype(t))}

    class Sort:
        def __init__(self, iface):
            pass

    def sort(_self, *args):
        *refs, dim, num_keys = args
        bvs = [r.deref(bv_type) for r in refs]
        arrays = []
        for i, bv in enumerate(bvs):  # keys by their type; the others moved as bytes
            et = int(bv.element_type)
            dt = keys[et] if i < num_keys else np.dtype(f"V{max(1, (et & 0xFF) // 8)}")
            arrays.append(np.ndarray(bv.shape, dt, bv.map()))
        order = (np.argsort(arrays[0], axis=dim, kind="stable") if num_keys == 1
                 else np.lexsort(arrays[num_keys - 1::-1], axis=dim))
        outs = []
        for a, bv in zip(arrays, bvs):
            buf = new_buffer(max(1, a.nbytes))
            np.ndarray(a.shape, a.dtype, buf.map())[...] = np.take_along_axis(a, order, axis=dim)
            outs.append(bv_type(buf, bv.shape, bv.element_type).ref)
        return outs[0] if len(outs) == 1 else tuple(outs)

    iface = rt.PyModuleInterface(SORT_MODULE, Sort)
    for n in range(1, SORT_OPERANDS + 1):
        for k in range(SORT_IMPORTS):
            iface.export(f"sort{n}_{k}", "0" + "r" * n + "II_" + "r" * n, sort)
    return iface.create()


_backends: dict[str, Backend] = {}


def backends() -> list[Backend]:
    """The backends created so far."""
    return list(_backends.values())


def get_backend(name: str | None = None) -> Backend:
    """The backend called `name` (default: `config.default_backend`), created once."""
    name = name or config.default_backend
    b = _backends.get(name)
    if b is None:
        b = _backends[name] = Backend(name)
    return b


def _element_types(dtype: np.dtype) -> tuple[int, ...]:
    """The IREE element types a result of `dtype` may come back as: its own, or for integers (and bool, stored
    as a byte) the signless integer of its width, as modules return them."""
    et = int(_element_type(dtype))
    bits = et & 0xFF
    if dtype == np.bool_ or dtype.kind in "iu":
        return (et, (0x10 << 24) | bits)
    return (et,)


def _type_name(element_type: int) -> str:
    rt = _rt()
    try:
        return rt.HalElementType(element_type).name
    except ValueError:
        return f"element type {element_type:#x}"
