"""The runtime: a backend's IREE drivers, devices, device buffers and loaded executables (`Executable`, the hot
path of every call). Compiling is `stagec.compiler`'s; the host modules a module links are `stagec.host`'s; the
order of asynchronous calls is `stagec.dispatch`'s (`Backend` is a `Dispatcher`).

CPU runs on two IREE drivers over the same host memory: `local-sync` runs a call inline on the calling thread
(a few us of overhead), `local-task` spreads each dispatch over a worker pool (more overhead, every core, and a
dispatch waits for its slowest worker). Each executable picks the driver from its largest dispatch's work, read
from the module's IR when it is compiled (`compiler.driver.Facts.work`, `TASK_WORK`; docs/runtime.md), so modules
of small dispatches stay inline and large dispatches use every core. Buffers made by one driver are read by
the other without copies (both are plain host allocations).
"""
from __future__ import annotations

import atexit
import collections
import gc
import os
import re
import tempfile
import threading
import time
import traceback
import warnings
import weakref
from typing import NamedTuple, Sequence

import numpy as np

try:
    import resource  # (Unix: this process's CPU time, `_spare_core`)
except ImportError:
    resource = None

from .compiler import driver
from .compiler.driver import HOST_BLAS, WORKER_STACK
from .compiler.targets import TARGETS, device_names, vulkan_target_flags
from .config import config
from .core import ShapedArray
from .dispatch import Dispatcher, Job
from .errors import CallbackError
from .host import (_blas_module, _lapack_module, _element_type, _element_types, _host_module, _numpy_imports, _rt, _sort_module,
                   _type_name)

TASK_THRESHOLD = 1 << 18  # elements from which a call counts as large (eager's thresholds)
MACS_PER_ELEMENT = driver.MACS_PER_ELEMENT
# A CPU executable runs on local-task where its largest dispatch's work (`driver.op_work`: elements + multiply-adds
# / 8) reaches this, else on local-sync (docs/runtime.md, "Which CPU driver").
TASK_WORK = driver.TASK_WORK
# A fenced module's caller on local-task by `TASK_WORK` polls its signal fence (one run there because a core is spare
# blocks instead: `_wait_spared`): first after `POLL_FIRST` of its shortest of its last calls (a
# hint renewed every call, never a choice), then sleeping `POLL_SHARE` of the time waited so far between polls (at
# least `POLL_MIN`, at most `POLL_MAX` seconds): a few % late at most, a dozen wake-ups a call.
POLL_FIRST, POLL_SHARE, POLL_MIN, POLL_MAX = 0.75, 1 / 32, 2e-5, 1e-3
# Async dispatch ("auto"): an executable runs on its backend's worker thread when it runs on local-task or a GPU,
# calls Python (host callbacks), or its work in all (elements in and out + multiply-adds / 8) reaches this: a
# local-sync call of ~100 us (docs/runtime.md, "Async dispatch"); smaller calls run inline.
ASYNC_WORK = 1 << 18
_ELEMENT_TYPES: dict = {}  # NumPy dtype -> IREE element type (`Backend.put`)
# Executables whose results take at most this many bytes reuse their results list (`Executable.run`), which
# keeps the last results alive until the next call.
REUSED_RESULTS_BYTES = 1 << 16


def _cores() -> int:
    """The cores this process may run on: its main thread's mask, whichever thread asks (one `_confine`d to a core
    would otherwise load its modules for one worker). Given as a count, IREE leaves its workers unpinned: pinned
    (its default) a module ran 1.5x slower in some fresh processes than in others (docs/passes.md, "Threads")."""
    try:
        return len(os.sched_getaffinity(os.getpid()))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


LAVAPIPE = "llvmpipe"  # the device name of lavapipe, Mesa's Vulkan on the CPU


def gpu_backends() -> list[str]:
    """The GPU backends with a GPU here: cuda, vulkan (lavapipe, Mesa's Vulkan on the CPU, does not count)."""
    return [b for b in ("cuda", "vulkan") if any(LAVAPIPE not in n for n in device_names(b))]


class Device:
    """One device a backend runs on, named as JAX names them (`CpuDevice(id=0)`)."""

    def __init__(self, backend: Backend, id: int = 0):
        self.backend, self.id = backend, id
        self.platform = backend.name
        self.device_kind = backend.name

    def __repr__(self):
        return f"{self.platform.capitalize()}Device(id={self.id})"


class Backend(Dispatcher):
    """A compile target plus the IREE runtime driver(s) that run its modules (and their calls' order: `Dispatcher`)."""

    def __init__(self, name: str):
        if name not in TARGETS:
            raise ValueError(f"unknown backend {name!r}; choose one of {sorted(TARGETS)}")
        self.name, self.target = name, TARGETS[name].iree
        self._hal: dict[str, tuple] = {}
        self._put: tuple | None = None  # (`_put_args`)
        self._numpy: dict = {}  # (kind, driver) -> a module calling NumPy (`numpy_module`)
        self._lock = threading.Lock()
        self.bind = None  # CUDA: makes the device's context current on the calling thread (`_CudaContext`)
        self.devices = [Device(self)]
        self._init_dispatch()

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
                variant: list | None = None) -> bytes:
        """Final MLIR text and flags (default: `flags()` as the module's facts adjust them) -> IREE VM flatbuffer
        (`stagec.compiler.driver.compile`: the retries taken are appended to `variant`)."""
        if flags is None:
            flags = self.module_flags(mlir, self.flags(), driver.text_facts(mlir))
        return driver.compile(mlir, self.name, fun_name, flags, side_flags, variant)

    # ---- runtime
    def driver_for(self, work: int, calls_blas: bool = False) -> str:
        """The driver for a module whose largest dispatch does `work` (`compiler.driver.op_work`), `calls_blas`
        whether it calls BLAS: a function of these and the cores, never of a timing, so a module runs on one driver
        in every process."""
        if self.name == "cpu":
            if work < TASK_WORK or calls_blas or (config.cpu_threads or _cores()) <= 1:  # (small first: no syscall)
                # One worker is no faster than the calling thread, and hands each dispatch over to it and back.
                # A module calling BLAS: its BLAS calls run on the calling thread, its dispatches are tiled for one
                # (`tuning.spec_flags(one_thread=...)`) (docs/runtime.md, docs/blas.md).
                return "local-sync"
            return "local-task"
        return self.name

    def spares(self, work: int, calls_blas: bool = False, streams: bool = False, alone: bool = False) -> bool:
        """Whether a module of this `work` run on local-sync (`driver_for`) takes local-task for a call while a core
        is spare (`_spare_core`): its work is at least `SPARE_WORK` (`SPARE_ALONE` for one kernel: `alone`), it
        calls no BLAS, it does not `stream` (fewer multiply-adds than the elements it takes and returns, its work in
        all under `SPARE_WORK_EACH` a dispatch: a batch of one's training step, matrix-vector products and updates
        among short dispatches that each cost a hand-over to the workers; docs/runtime.md), and there are cores to
        share."""
        least = driver.SPARE_ALONE if alone else driver.SPARE_WORK
        return (self.name == "cpu" and least <= work < TASK_WORK and not calls_blas and not streams
                and (config.cpu_threads or _cores()) > 1)

    def hal(self, driver: str):
        """(instance, device, hal_module) for an IREE driver, created once."""
        with self._lock:
            if driver not in self._hal:
                rt = _rt()
                if driver == "local-task":  # one worker per core this process may run on, or `cpu_threads`
                    rt.flags.parse_flags(f"--task_topology_group_count={config.cpu_threads or _cores()}",
                                         f"--task_worker_stack_size={WORKER_STACK}")
                threads = _threads() if driver == "vulkan" else set()
                try:
                    if driver in ("local-task", "local-sync") and config.cpu_buffer_cache_mb > 0:
                        dev = rt.get_driver(driver).create_device_by_uri(driver, allocators=[_buffer_cache_spec()])
                    else:
                        dev = rt.get_device(driver)
                except Exception as e:
                    raise RuntimeError(f"stagec backend {self.name!r}: IREE driver {driver!r} is not available "
                                       f"here ({e}); available: {rt.query_available_drivers()}") from None
                if driver == "cuda":
                    self.bind = _CudaContext.of_this_thread()
                if threads and any(SPINNING_WAITS.devices in n for n in device_names("vulkan")):
                    _confine(_running(_threads() - threads))
                nvidia = driver == "vulkan" and any(NVIDIA_VULKAN_WRONG.devices in n for n in device_names("vulkan"))
                if nvidia:
                    warnings.warn(NVIDIA_VULKAN_WRONG_TEXT, RuntimeWarning, stacklevel=2)
                inst = _instance()
                roots = (inst, dev, rt.create_hal_module(inst, dev))
                if nvidia:  # (`NVIDIA_VULKAN_EXIT`: let go of at exit, not pinned)
                    atexit.register(self._let_go, driver)
                    self._hal[driver] = roots
                else:
                    self._hal[driver] = _pinned(roots)
            return self._hal[driver]

    def _let_go(self, driver: str) -> None:
        """At exit, drop what this process holds of `driver`'s device (`NVIDIA_VULKAN_EXIT`): queued calls finish,
        then the upper layers let go (`at_exit_release`: live arrays' buffers), every compiled module on it, and this
        backend's own handles; Python's finalization then frees the device, before the C runtime's exit."""
        self._drain()
        for fn in _exit_releases:
            fn(self)
        for o in gc.get_objects():
            if isinstance(o, Executable) and o.backend is self and o.driver == driver:
                o.release()
            elif isinstance(o, BaseException) and o.__traceback__ is not None:  # (its frames' locals: IREE objects
                traceback.clear_frames(o.__traceback__)                         # freed in any order)
        with self._lock:
            self._hal.pop(driver, None)
            for k in [k for k in self._numpy if k[1] == driver]:
                del self._numpy[k]
            self._put = None
        gc.collect()

    def numpy_module(self, kind: str, driver: str):
        """The module of `kind` ("blas": `_blas_module`, "sort": `_sort_module`, "lapack": `_lapack_module`) on `driver`'s device, created
        once."""
        dev = self.hal(driver)[1]
        with self._lock:
            if (kind, driver) not in self._numpy:
                self._numpy[kind, driver] = {"blas": _blas_module, "sort": _sort_module, "lapack": _lapack_module}[kind](dev)
            return self._numpy[kind, driver]

    @property
    def alloc_driver(self) -> str:
        """The driver buffers are allocated on (CPU drivers share host memory: any of them)."""
        return self.driver_for(0)

    def put(self, value: np.ndarray):
        """Copy a host array into a new device buffer view.

        GPUs get plain device memory filled by a transfer: host-visible device-local memory is managed
        (unified) memory on CUDA, which can hang a shared GPU once it outgrows what the card has free."""
        if self.bind is not None:
            self.bind()
        put = self._put or self._put_args()
        if type(value) is not np.ndarray or not value.flags.c_contiguous:
            value = np.asarray(value, order="C")  # (np.ascontiguousarray would make 0-d arrays 1-d)
        storage = value.view(np.uint8) if value.dtype == np.bool_ else value
        et = _ELEMENT_TYPES.get(value.dtype)
        if et is None:
            et = _ELEMENT_TYPES[value.dtype] = _element_type(value.dtype)
        return put[0](put[1](buffer=storage.reshape(-1), **put[2]), value.shape, et)

    def _put_args(self) -> tuple:
        """(HalBufferView, the allocator's `allocate_buffer_copy`, its other arguments) of `put`, made once (an
        eager call puts its host operands: ~2 us a put went to looking these up)."""
        rt = _rt()
        _, dev, _ = self.hal(self.alloc_driver)
        memory, usage = rt.MemoryType.DEVICE_LOCAL, rt.BufferUsage.DEFAULT
        if self.name == "cpu":
            memory, usage = memory | rt.MemoryType.HOST_VISIBLE, usage | rt.BufferUsage.MAPPING_SCOPED
        self._put = (rt.HalBufferView, dev.allocator.allocate_buffer_copy,
                     {"memory_type": memory, "allowed_usage": usage, "device": dev})
        return self._put

    def get(self, bv, aval: ShapedArray, view: bool = False) -> np.ndarray:
        """Copy a device buffer view back into a new host array (on a GPU through a queue copy). `view`: on the
        CPU, a read-only array of the buffer itself (its mapping keeps the buffer alive), as JAX's `np.asarray`
        gives: for an Array's own value, whose buffer no one writes (donation deletes an Array; its module does
        not write the buffer: no tied operands); not for a host callback's operands, which IREE may reuse once the
        callback returns. 1M float32: 148 -> ~5 us."""
        if aval.size == 0:
            return np.zeros(aval.shape, aval.dtype)
        if self.bind is not None:
            self.bind()
        try:
            mapped = bv.map() if self.name == "cpu" else self._staged(bv)
        except RuntimeError as e:
            raise NotImplementedError(f"stagec backend {self.name!r}: reading a {aval.str_short()} result back "
                                      f"to the host is not supported by IREE driver {self.alloc_driver!r} here "
                                      f"({e})") from None
        dt = np.dtype(np.uint8) if aval.dtype == np.bool_ else aval.dtype
        if view and self.name == "cpu":  # (a read-only memoryview: the array's WRITEABLE flag cannot be set)
            out = np.frombuffer(memoryview(mapped), dt, aval.size).reshape(aval.shape)
        else:
            out = np.array(np.ndarray(aval.shape, dt, mapped), copy=True)
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

    def load(self, vmfb: bytes, in_avals, out_avals, name: str, host_calls: Sequence = (),
             driver: str | None = None, macs: int = 0, work: int | None = None) -> Executable:
        return Executable(self, vmfb, list(in_avals), list(out_avals), name, host_calls, driver, macs, work)


class Quirk(NamedTuple):
    """A driver defect the runtime works around: the devices it shows on (a part of their name), the versions it
    was seen with, and the test that shows it (a pytest node id). A new IREE or Mesa means checking it again."""
    devices: str
    versions: str
    test: str


# lavapipe (Mesa 22.3) waits on several timeline semaphores at once (VK_SEMAPHORE_WAIT_ANY_BIT) by polling them in a
# loop, and IREE 3.13 keeps such a wait on one completion thread per queue for the device's life: two threads that
# spin forever, two cores busy while the program idles. Both are confined to one core (`_confine`): the program keeps
# the others, and a call's latency is the same (docs/runtime.md, "lavapipe's spinning waits").
SPINNING_WAITS = Quirk(LAVAPIPE, "IREE 3.13.0, Mesa 22.3.6",
                       "tests/test_vulkan_idle.py::test_an_idle_lavapipe_device_keeps_at_most_one_core_busy")


# IREE 3.13's local-task driver keeps memory a call allocated, in some modules whose results are fed back as the
# next call's arguments (a training loop's state): 784-1024-1024-10 b32 Adam kept ~21 MiB of mapped blocks a call
# (7 MiB resident), IREE alone too (benchmarks/leak_local_task.py); local-sync keeps none. The transients kept were
# those crossing a host wait mid-call, which each fusion barrier made: the CPU target now drops its barriers once
# IREE has formed the dispatches (`targets.BARRIERS_DROPPED`), and that step keeps none. A guard stays for any
# other wait: a module run there looks at the process's resident memory every `LEAK_EVERY` calls; after
# `LEAK_WINDOWS` looks in a row each `LEAK_MB` MiB a call higher, its calls go to local-sync, with a RuntimeWarning
# (the same bits: `Executable._look_for_leak`).
LOCAL_TASK_LEAK = Quirk("local-task", "IREE 3.13.0",
                        "tests/test_heap.py::test_a_training_loop_on_local_task_keeps_no_memory")
LEAK_EVERY, LEAK_WINDOWS, LEAK_MB = 32, 3, 1


class _CudaContext:
    """IREE's CUDA device makes its (primary) context current on the thread that creates it only; a call, upload,
    read or load on another thread (the backend's worker, a host callback, a user's thread) then fails with
    CUDA_ERROR_INVALID_CONTEXT. So each thread makes that context current before its first use (`__call__`)."""

    def __init__(self, lib, ctx):
        self._set, self._ctx, self._tls = lib.cuCtxSetCurrent, ctx, threading.local()

    @classmethod
    def of_this_thread(cls) -> "_CudaContext | None":
        """The context current here (just after IREE made its device), or None where libcuda is not found."""
        import ctypes
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError:
            return None
        ctx = ctypes.c_void_p()
        if lib.cuCtxGetCurrent(ctypes.byref(ctx)) != 0 or not ctx.value:
            return None
        return cls(lib, ctx)

    def __call__(self) -> None:
        if not getattr(self._tls, "bound", False):
            if self._set(self._ctx) != 0:
                raise RuntimeError("stagec backend 'cuda': cuCtxSetCurrent failed on this thread")
            self._tls.bound = True


# Answers measured wrong on NVIDIA's Vulkan driver, not yet understood (right on lavapipe and CUDA): said once, when
# the device is made, so that they are not silent (docs/gpu.md).
NVIDIA_VULKAN_WRONG = Quirk("NVIDIA", "IREE 3.13.0, NVIDIA driver 580.159 (H200)",
                            "tests/test_trig.py::test_float32_jit")
NVIDIA_VULKAN_WRONG_TEXT = (
    "stagec's Vulkan backend on an NVIDIA GPU gave wrong answers in its tests: float32 sin, cos and tan up to 34 ulps "
    "off near multiples of pi/2, tanh, erfc, erfcx, ndtr and float64 power over their error bounds, power(tiny, -x) = "
    "inf, the sign of signed integer floor_divide and remainder, int32 partition, float16 roundings skipped, "
    "subnormals flushed to zero, and more (docs/gpu.md). Use backend='cuda' on NVIDIA GPUs.")

# NVIDIA's Vulkan driver tears itself down when the process exits: a Vulkan device still alive then segfaults it
# after its last line (exit 139, 3 of 3 on an H200; scripts/gpu-exit-probe.sh). So there its runtime roots are not
# pinned (`_pinned`): at exit `Backend._let_go` drops every reference to the device the process can reach, buffers
# first, and the device is freed during Python's finalization (3 of 3 exit 0 in the probe). Elsewhere they stay
# pinned: on lavapipe an IREE object a kept traceback held, freed after the device, crashed the fuzz test's exit.
NVIDIA_VULKAN_EXIT = Quirk("NVIDIA", "IREE 3.13.0, NVIDIA driver 580.159 (H200)",
                           "tests/test_gpu.py::test_a_vulkan_process_lets_go_of_its_device_at_exit")

_exit_releases: list = []  # fn(backend): what an upper layer holds of a backend's device, dropped at exit


def at_exit_release(fn):
    """Register `fn(backend)`, run by `Backend._let_go` at exit: it drops what its layer holds on that backend."""
    _exit_releases.append(fn)
    return fn


# IREE 3.13's CUDA driver sets its context current on the creating thread only (`_CudaContext`).
CUDA_THREAD_CONTEXT = Quirk("NVIDIA", "IREE 3.13.0, NVIDIA driver 580.159",
                            "tests/test_gpu.py::test_cuda_runs_on_any_thread")


def _threads() -> set[int]:
    """This process's threads ({} where /proc is missing)."""
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except OSError:
        return set()


def _running(threads: set[int], samples: int = 5, every: float = 0.01) -> list[int]:
    """Those of `threads` found runnable (not waiting in the kernel) at each of `samples` looks `every` s apart."""
    def state(t):
        try:
            with open(f"/proc/self/task/{t}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return "X"
    found = set(threads)
    for i in range(samples):
        found = {t for t in found if state(t) == "R"}
        if not found:
            break
        time.sleep(every if i < samples - 1 else 0)
    return sorted(found)


def _confine(threads: list[int]) -> None:
    """Run `threads` on one core only (the last this process may use), where it has more than one."""
    try:
        cores = sorted(os.sched_getaffinity(os.getpid()))
        if len(cores) > 1:
            for t in threads:
                os.sched_setaffinity(t, {cores[-1]})
    except (AttributeError, OSError):  # no affinity here, or a thread that ended: nothing to confine
        pass


def _pinned(objs: tuple) -> tuple:
    """`objs`, never freed (the process's runtime roots): at interpreter teardown the garbage collector frees
    objects in any order, and a buffer view freed after its device called into a torn-down runtime (a segfault
    after the program's last line, exit status 139)."""
    import ctypes
    for o in objs:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(o))
    return objs


_inst = None


def _instance():
    global _inst
    if _inst is None:
        _own_dylib_dir()
        _inst = _rt().VmInstance()
    return _inst


_DYLIB_ENV, _DYLIB_OWNER = "IREE_PRESERVE_DYLIB_TEMP_FILES", "_STAGEC_DYLIB_DIR"
_dylib_dir: list[str] = []  # this process's folder for IREE's loaded libraries, if it made one


def _own_dylib_dir() -> None:
    """IREE 3.13 loads a CPU module linked by the host's linker (SYSTEM_LINK) from a file: it reserves
    $TMPDIR/iree_dylib_XXXXXX (mkstemp), writes iree_dylib_XXXXXX_mem_.so, dlopens and removes that, but never
    the empty file it reserved, so every process left some in $TMPDIR. IREE writes them into a folder named by
    IREE_PRESERVE_DYLIB_TEMP_FILES (read once, at the first load) instead: one of this process's own, emptied as
    it goes (`_reap_dylibs`) and removed at exit; folders of dead processes are removed when the next one starts.
    A folder the user names is left alone."""
    if os.environ.get(_DYLIB_ENV) and os.environ.get(_DYLIB_ENV) != os.environ.get(_DYLIB_OWNER):
        return
    import shutil
    tmp = tempfile.gettempdir()
    for n in os.listdir(tmp):
        pid = n.split("-")[2] if n.startswith("stagec-dylib-") and n.count("-") >= 3 else ""
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(tmp, n), ignore_errors=True)
    d = tempfile.mkdtemp(prefix=f"stagec-dylib-{os.getpid()}-")
    os.environ[_DYLIB_ENV] = os.environ[_DYLIB_OWNER] = d  # (children that load IREE modules make their own)
    _dylib_dir.append(d)
    atexit.register(shutil.rmtree, d, True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass
    return True


def _reap_dylibs() -> None:
    """Remove IREE's files of loaded libraries (a minute after they were written: a library another thread
    writes now is dlopened within that time; the dlopened ones stay mapped)."""
    if not _dylib_dir:
        return
    old = time.time() - 60
    with os.scandir(_dylib_dir[0]) as it:
        for e in it:
            try:
                if e.stat().st_mtime < old:
                    os.unlink(e.path)
            except OSError:
                pass


class Executable:
    """A loaded IREE module; `call(buffer_views)` is the hot path of every jit call.

    `call` is, per executable, `run` (inline: buffer views in and out) or `submit` (dispatched asynchronously
    on the backend's worker thread: returns a `Job`), as `config.async_dispatch`, the driver and the module's work
    decide (`ASYNC_WORK`), once, when it is loaded. Arguments that are pending results of earlier calls always go
    to `submit` (`PendingArguments`).

    `macs`: the module's multiply-adds in all; `work`: its largest op's (`compiler.driver.Facts`; None for a module
    stored without it: its elements in and out + `macs` / 8, an upper bound)."""

    def __init__(self, backend: Backend, vmfb: bytes, in_avals, out_avals, name: str, host_calls: Sequence = (),
                 driver: str | None = None, macs: int = 0, work: int | None = None):
        rt = _rt()
        self.backend, self.vmfb, self.name = backend, vmfb, name
        self.in_avals, self.out_avals = in_avals, out_avals
        self.host_calls = bool(host_calls)
        self.effects = any(h.token for h in host_calls)  # (debug or io callbacks: `Job.wait`)
        elements = sum(a.size for a in in_avals) + sum(a.size for a in out_avals)
        kinds = _numpy_imports(vmfb)
        self.total = elements + macs // MACS_PER_ELEMENT  # the module's work in all
        self.work = self.total if work is None else work  # its largest dispatch's
        self.driver = driver or backend.driver_for(self.work, "blas" in kinds)
        if self.work >= HEAP_WORK:
            keep_heap(backend)
        inst, _, hal_module = backend.hal(self.driver)
        self._bind = backend.bind
        if self._bind is not None:
            self._bind()
        # Copied into IREE's own (aligned) memory: nothing the module runs from can change under it.
        self.module = rt.VmModule.copy_buffer(inst, vmfb)
        self._failure = threading.local()  # .value: (callback name, exception) a host callback raised
        host = [_host_module(self, host_calls)] if host_calls else []
        host += [backend.numpy_module(k, self.driver) for k in kinds]
        try:
            self.context = rt.VmContext(inst, modules=[hal_module, *host, self.module])
        except (IndexError, ValueError) as e:  # (its initializer's dispatches run as it loads)
            bug = _known_bug(name, e)
            if bug is None:
                raise
            raise bug from e
        _reap_dylibs()
        self.fn = self.module.lookup_function("main")
        self._invoke = self.context.invoke
        if self.fn is None:
            raise RuntimeError(f"module {name} has no function 'main'")
        # Compiled for local-task (`driver.FENCED`): `main` takes a wait and a signal fence, returns once queued.
        self._fenced = self.fn.reflection.get("iree.abi.model") == "coarse-fences"
        self._device = backend.hal(self.driver)[1] if self._fenced else None
        # (invoke, device) on local-task, for the calls made while a core is spare (`Backend.spares`); the module
        # is shared, its state is the context's. Fenced only: IREE's blocking wait would spin (`_poll`).
        self._spare = None
        if self._fenced and self.driver == "local-sync" and not host:
            # (one kernel: one dispatch function and no products; a product's function may run more than once a
            # call, as three layers in a row do)
            n = _dispatches(vmfb)
            if backend.spares(self.work, streams=0 < macs < elements and self.total < SPARE_WORK_EACH * n,
                              alone=n == 1 and macs == 0):
                t_inst, t_dev, t_hal = backend.hal("local-task")
                self._spare = (rt.VmContext(t_inst, modules=[t_hal, self.module]).invoke, t_dev)
        # [local-task calls, resident bytes at the last look, looks in a row that grew] (`LOCAL_TASK_LEAK`)
        self._leak = [0, 0, 0] if self._fenced and not host and (self.driver == "local-task" or self._spare) else None
        self._waits: collections.deque = collections.deque(maxlen=8)  # its last calls' seconds (`_poll`)
        self._n_out = len(out_avals)
        self._unchecked = True  # until a call's results match `out_avals` (`_check`)
        self._bv, self._list = rt.HalBufferView, rt.VmVariantList
        self._rets: list = []  # results lists to reuse (`run`)
        self._small_outs = (all(d >= 0 for a in out_avals for d in a.shape)  # (dynamic dimensions: any size)
                            and sum(a.size * np.dtype(a.dtype).itemsize for a in out_avals) <= REUSED_RESULTS_BYTES)
        mode = config.async_dispatch  # (one of config's choices, lower-cased)
        if mode == "always" or (mode == "auto" and (host_calls or self.driver != "local-sync"
                                                    or self.total >= ASYNC_WORK)):
            self._set_call(Executable.submit)

    def release(self) -> None:
        """Drop this module's hold on its device (at exit, `Backend._let_go`): a later call raises."""
        self.module = self.context = self.fn = self._invoke = self._device = self._spare = None
        self._rets = []

        def released(bvs):
            raise RuntimeError(f"module {self.name} was released at interpreter exit")
        self.call = self.run = self.submit = released

    def _set_call(self, method) -> None:
        """Make `call` this method (`run` is the class's own), held without a reference cycle."""
        ref = weakref.ref(self)
        self.call = lambda bvs: method(ref(), bvs)

    def submit(self, bvs: Sequence) -> Job:
        """Enqueue on the backend's worker; `bvs` may hold (Job, index) of earlier calls' pending results."""
        return self.backend.submit(self, bvs)

    def run(self, bvs: Sequence) -> list:
        """Run now on this thread: buffer views in, buffer views out."""
        if self._bind is not None:
            self._bind()
        args = self._list(len(bvs) + 2 * self._fenced)
        for bv in bvs:
            args.push_ref(bv)
        spare = self._spare
        spared = spare is not None and _spare_core()
        invoke = spare[0] if spared else self._invoke
        if self._fenced:  # a timeline of its own: waits for nothing (0), signals 1 when the call is done
            sem = (spare[1] if spared else self._device).create_semaphore(0)
            args.push_ref(_fence_at(sem, 0))
            args.push_ref(done := _fence_at(sem, 1))
        # A results list of an earlier call (`invoke` empties it first): making one costs ~0.35 us of a ~4 us call.
        # Taken from the pool, so a call on another thread meanwhile gets its own (one pop: a test of the pool and
        # then a pop let two threads take its last list, and the second raised IndexError).
        try:
            rets = self._rets.pop()
        except IndexError:
            rets = self._list(self._n_out)
        try:
            invoke(self.fn, args, rets)
            if spared:
                _wait_spared(done)
            elif self._fenced:
                _poll(done, self._waits)
        except (IndexError, ValueError) as e:  # IREE's runtime checks on what its compiler emitted
            bug = _known_bug(self.name, e)
            if bug is None:
                raise
            raise bug from e
        except RuntimeError:
            failure, self._failure.value = getattr(self._failure, "value", None), None
            if failure is None:
                raise
            name, exc = failure
            raise CallbackError(f"host callback {name!r} called from {self.name} raised {type(exc).__name__}: "
                                f"{exc}") from exc
        if self._leak is not None and (spared or self.driver == "local-task"):
            self._leak[0] += 1
            if self._leak[0] % LEAK_EVERY == 0:
                self._look_for_leak()
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

    def _look_for_leak(self) -> None:
        """`LOCAL_TASK_LEAK`: move this module's calls to local-sync once the process's resident memory grew by
        `LEAK_MB` MiB a call or more over `LEAK_WINDOWS` windows of `LEAK_EVERY` local-task calls in a row."""
        leak, rss = self._leak, _resident()
        grew, leak[1] = rss - leak[1], rss
        leak[2] = leak[2] + 1 if leak[0] > LEAK_EVERY and grew >= LEAK_EVERY * LEAK_MB << 20 else 0
        if leak[2] < LEAK_WINDOWS:
            return
        if self.driver == "local-task":
            inst, dev, hal = self.backend.hal("local-sync")
            self.context = _rt().VmContext(inst, modules=[hal, self.module])
            self._invoke, self._device, self.driver = self.context.invoke, dev, "local-sync"
        self._spare = self._leak = None
        warnings.warn(f"module {self.name}: IREE 3.13's local-task driver kept {grew / LEAK_EVERY / 2**20:.0f} MiB a "
                      f"call over its last {LEAK_EVERY * LEAK_WINDOWS} calls (a known leak of that driver): its calls "
                      f"now run on local-sync, on one thread (the same results)", RuntimeWarning, stacklevel=2)

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


# A module that streams (fewer multiply-adds than elements in and out) takes local-task while spare only where its work
# in all comes to this much per dispatch function (`_dispatches`) or more (docs/runtime.md, rule 4).
SPARE_WORK_EACH = driver.SPARE_WORK
_DISPATCH = re.compile(rb"main_dispatch_(\d+)|_encoding_(\d+)_encode")


def _dispatches(vmfb) -> int:
    """How many dispatch functions a CPU module's flatbuffer holds (their names as written; one may run several times
    a call: a lower bound of its dispatches a call)."""
    return max(1, len({m.groups() for m in _DISPATCH.finditer(vmfb)}))


def _resident() -> int:
    """The process's resident memory in bytes (0 where /proc cannot be read)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _fence_at(sem, value: int):
    return _rt().HalFence.create_at(sem, value)


def _poll(fence, waits: collections.deque | None = None) -> None:
    """Wait for `fence` by polling it (never in IREE's blocking wait, whose clean-up spins on the caller's core:
    docs/runtime.md, "Waiting for local-task"): first after `POLL_FIRST` of the shortest of `waits` (the seconds of
    the last calls; this one's is appended, unless it was done at once: run on local-sync), then every `POLL_SHARE`
    of the time waited so far."""
    if fence.wait(timeout=0):
        return
    t0 = time.perf_counter()
    if waits and min(waits) > POLL_MIN:
        time.sleep(min(waits) * POLL_FIRST)
    while not fence.wait(timeout=0):
        time.sleep(min(max((time.perf_counter() - t0) * POLL_SHARE, POLL_MIN), POLL_MAX))
    if waits is not None:
        waits.append(time.perf_counter() - t0)


def _wait_spared(fence) -> None:
    """Wait for `fence` of a call on local-task while the cores are spare (`_spare_core`): in IREE's blocking wait
    (woken as the call ends; the GIL is released), the calling thread `SCHED_BATCH` meanwhile, so that its wake-up
    never preempts the worker that signals (woken onto that worker's core, IREE's waiter would spin until the worker
    left its callback). Polling (`_poll`) wakes late by a sleep's overshoot, more than a 1M-element kernel gains on
    two workers (docs/runtime.md, "Waiting for local-task"). A thread of another policy than SCHED_OTHER is left
    as it is; where the policy cannot be set, `_poll`."""
    if fence.wait(timeout=0):
        return
    if _set_policy is None:
        return _poll(fence)
    if os.sched_getscheduler(0) != os.SCHED_OTHER:
        fence.wait()
        return
    try:
        _set_policy(0, os.SCHED_BATCH, _POLICY_PARAM)
    except OSError:  # (a sandbox that forbids it)
        return _poll(fence)
    try:
        fence.wait()
    finally:
        _set_policy(0, os.SCHED_OTHER, _POLICY_PARAM)


_set_policy = getattr(os, "sched_setscheduler", None) if hasattr(os, "SCHED_BATCH") else None  # (Linux)
_POLICY_PARAM = os.sched_param(0) if _set_policy is not None else None


# `_spare_core` measures other programs' use of the cores over windows of at least `SPARE_EVERY` seconds (its answer
# stands meanwhile), and answers yes once `SPARE_READS` windows in a row found them using under `SPARE_OTHERS` cores.
SPARE_EVERY, SPARE_READS, SPARE_OTHERS = 0.1, 2, 0.35
# [window start, the machine's busy ticks then, this process's CPU seconds then, the answer, the windows in a row
# found spare, /proc/stat's descriptor (None: not yet opened; False: none)]
_spare_state: list = [-1.0, 0, 0.0, False, 0, None]
_spare_lock = threading.Lock()


def _busy_ticks(fd: int) -> int:
    """The machine's busy clock ticks (user, nice, system, irq, softirq, steal) from /proc/stat's first line."""
    f = os.pread(fd, 256, 0).split(b"\n", 1)[0].split()
    return sum(int(f[i]) for i in (1, 2, 3, 6, 7, 8))


def _spare_core() -> bool:
    """Whether the cores are free of other programs now: over each of the last `SPARE_READS` windows of at least
    `SPARE_EVERY` s, the machine's busy time (/proc/stat) less this process's own (`getrusage`) came to under
    `SPARE_OTHERS` cores. Where another program runs, a second worker waits for its turn at every dispatch (a
    training step of 5 ms took 11 on local-task beside two other programs; docs/runtime.md, "Which CPU driver");
    either driver gives the same bits. This process's own threads never count (a count of running threads, read
    as a call starts, found this process's other threads running in most reads). False where /proc/stat cannot be
    read."""
    st = _spare_state
    now = time.monotonic()
    if now - st[0] < SPARE_EVERY:
        return st[3]
    if st[5] is None and resource is not None:
        with _spare_lock:
            if st[5] is None:
                try:
                    _busy_ticks(fd := os.open("/proc/stat", os.O_RDONLY))
                    st[5] = fd
                except (OSError, ValueError, IndexError):
                    st[5] = False
    if st[5] is None or st[5] is False:  # (a descriptor may be 0)
        return False
    ru = resource.getrusage(resource.RUSAGE_SELF)
    ticks, ours = _busy_ticks(st[5]), ru.ru_utime + ru.ru_stime
    if st[0] >= 0:
        others = ((ticks - st[1]) / _TICKS - (ours - st[2])) / (now - st[0])
        st[4] = st[4] + 1 if others < SPARE_OTHERS else 0
        st[3] = st[4] >= SPARE_READS
    st[0], st[1], st[2] = now, ticks, ours
    return st[3]


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # /proc/stat's ticks a second


class KnownRuntimeBug(RuntimeError):
    """A module IREE compiled without complaint that its runtime refuses to run (`_KNOWN_RUNTIME_BUGS`); an eager
    control-flow operation then runs by its parts (`Primitive.stepwise`)."""


# Runtime failures of modules IREE 3.13 compiled without complaint: a fused dispatch over more buffers than the
# CPU runtime binds (32), a loop or branch result left unallocated (a null buffer, or a command buffer's reference to a
# binding slot it never declared).
_KNOWN_RUNTIME_BUGS = re.compile(r"binding count \d+ > \d+|ref is null; while invoking native function "
                                 r"hal\.buffer_view\.create|indirect buffer reference slot \d+ is out range of the "
                                 r"declared binding capacity|binding table slot requires a buffer but none was provided")


def _known_bug(name: str, e: Exception) -> KnownRuntimeBug | None:
    """`KnownRuntimeBug` naming function `name` where IREE's runtime refused what its compiler emitted (`e` one of
    `_KNOWN_RUNTIME_BUGS`), else None."""
    known = _KNOWN_RUNTIME_BUGS.search(str(e))
    if known is None:
        return None
    return KnownRuntimeBug(f"IREE 3.13 cannot run {name}: {known[0]} (its compiler emitted a dispatch the runtime "
                           f"rejects; seen with many values carried through loops, e.g. forward-mode derivatives of "
                           f"while loops, upstream as iree-org/iree#24753, and with one elementwise expression of ~30 "
                           f"or more array arguments). Differentiating another way round (grad instead of jvp), fewer "
                           f"loop-carried arrays, or the arguments stacked into fewer arrays avoid it.")


def _buffer_cache_spec() -> str:
    """IREE's caching allocator for the CPU drivers: freed buffers (up to `config.cpu_buffer_cache_mb` in all, each
    at most 256 MiB) are kept for the next allocation of their size. A fresh allocation is fresh pages, and the
    kernel faults each one in when a dispatch first writes it (a new buffer took about twice as long to fill as a
    reused one), while every jit call writes its results into new buffers."""
    mb = config.cpu_buffer_cache_mb
    return f"caching:device_local={min(mb, 256)}mib;{mb}mib;64"


HEAP_WORK = 1 << 20  # the least work (`Executable.work`) of a CPU module that sets the heap (`_keep_heap`)
_heap_kept = False


def keep_heap(backend: Backend) -> None:
    """`_keep_heap` on the CPU (`config.cpu_heap_keep_mb`), the backend's worker renewed where it set the heap now (its
    thread's heap is then the main one). For a large CPU module, and for NumPy rules on large values (`eager`)."""
    if backend.name == "cpu" and _keep_heap(config.cpu_heap_keep_mb):
        backend.renew_worker()


def _keep_heap(mb: int) -> bool:
    """Has glibc's malloc serve large blocks from its heap and keep up to `mb` MiB freed at its top, once per process,
    when the first CPU module of `HEAP_WORK` or more loads, or eager plans NumPy rules on large values (`keep_heap`;
    a process of small modules keeps glibc's defaults; a no-op where `mb` is 0 or the C library is not glibc).
    IREE 3.13's CPU drivers calloc a module's transient
    slab on every call, outside the device allocator (`_buffer_cache_spec` never sees it); glibc mmaps any block
    over 32 MiB afresh and unmaps it when freed, so each call faulted in the whole slab again: a 128-4096-4096-10
    Adam step, 192.5 MiB of transients, spent 49,000 page faults and ~75% of its time there (docs/runtime.md).
    Only glibc's main heap (arena) can: another thread's arena maps any block over 64 MiB afresh, whatever the
    settings, so threads started from then on share the main arena (`M_ARENA_MAX` 1) and the backend's worker
    thread is renewed (`Dispatcher.renew_worker`). True where it set them now."""
    global _heap_kept
    if _heap_kept or mb <= 0:
        return False
    _heap_kept = True
    import ctypes
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # (glibc only: musl's and macOS's mallopt differ or are absent)
        libc.mallopt(-1, ctypes.c_int(min(mb, 2047) << 20))  # M_TRIM_THRESHOLD: free top kept up to `mb`
        libc.mallopt(-4, ctypes.c_int(0))  # M_MMAP_MAX: no block is mmap'd (sbrk fails over to mmap)
        libc.mallopt(-8, ctypes.c_int(1))  # M_ARENA_MAX: threads started from now on share the main arena
    except (OSError, AttributeError):
        return False
    return True


_backends: dict[str, Backend] = {}


def backends() -> list[Backend]:
    """The backends created so far."""
    return list(_backends.values())


def get_backend(name: str | None = None) -> Backend:
    """The backend called `name` (default: `config.default_backend`), created once."""
    name = name or config.default_backend
    b = _backends.get(name)
    if b is None:
        if _forked:
            raise RuntimeError(_forked)
        b = _backends[name] = Backend(name)
    return b


_forked = ""  # in a child forked after IREE's runtime started: why stagec refuses to run there


def _after_fork_in_child() -> None:
    """IREE's runtime (its devices, worker threads, queues) is not copied by fork: a child forked after it started
    would wait forever on threads that are not there. It gets a clear error instead; the compilers it started
    are its parent's (`compiler.processes`)."""
    global _forked
    if _backends:
        _backends.clear()
        _forked = ("stagec cannot run in a process forked after it started IREE's runtime (its threads are not "
                   "copied by fork); use multiprocessing's 'spawn' or 'forkserver' start method, or fork before "
                   "the first stagec operation")


os.register_at_fork(after_in_child=_after_fork_in_child)
