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
import functools
import hashlib
import math
import os
import platform
import queue
import re
import statistics
import sys
import tempfile
import threading
import time
import weakref
from typing import Callable, Iterator, NamedTuple, Sequence

import numpy as np

from .config import config
from . import legalize, tuning
from .core import ShapedArray
from .errors import CallbackError, CompileError
from .lowering import HOST_MODULE

SYSTEM_LINK = "--iree-llvmcpu-link-embedded=false"  # llvm-cpu: link with the host's linker, not IREE's ELF
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


class Target(NamedTuple):
    """A backend's name, its IREE target backend, the flag that picks an architecture, its default flags."""
    backend: str
    iree: str
    arch_flag: str
    flags: tuple[str, ...]


# IREE 3.13 knows no sm_90 ("missing GPU target"); sm_80 and sm_89 both run on an H100. sm_80 measured faster
# on 9 of 12 workloads of benchmarks/bench_gpu.py (f16 matmul 4096: 1.02 vs 1.29 ms, bf16 1.20 vs 1.32,
# layernorm 0.061 vs 0.091); sm_89 won softmax 4096x1024 (0.071 vs 0.212 ms), in both runs.
CUDA_ARCH = "sm_80"
# IREE demotes f64 to f32 by default; under enable_x64 a float64 must stay float64 (without x64 no f64 reaches
# IREE, so the flag changes nothing then).
_KEEP_F64 = "--iree-input-demote-f64-to-f32=false"
_MULTI_USE_FAILURE, _NO_MULTI_USE = "failed on workgroup distribution verification", "--iree-dispatch-creation-fuse-multi-use=false"
# A float64 op that IREE's llvm-cpu lowers to a libm call (a line of the module naming the op and f64).
_LIBM_F64 = re.compile(r"(?:stablehlo\.(?:exponential|exponential_minus_one|log|log_plus_one|logistic|tanh|sine|cosine|"
                       r"tan|atan2|power|remainder|cbrt)\b|chlo\.\w+)[^\n]*f64")
# A dot_general's contracting dimensions of its left operand, and its operand and result types.
_DOT = re.compile(r"stablehlo\.dot_general [^\n]*?contracting_dims = \[([\d, ]*)\] x [^\n]*? : "
                  r"\(tensor<([^>]*)>, tensor<[^>]*>\) -> tensor<([^>]*)>")
_UNDEFINED_SYMBOL = "error: undefined symbol:"
NO_THREADS = "--mlir-disable-threading"
_KILLED = re.compile(r"Error code: -\d+")  # iree-compile ended by a signal (a crash)
# A CPU dispatch whose tile keeps more on its stack than IREE's default limit (32 KiB). The compile is retried with
# sliced matmul operands materialized (`legalize.materialize_sliced_dot_operands`: `a[:, :128] @ b[:128]` needed
# 144 KiB), then with twice the limit (a row reduction kept with its values by `fuse` over 8 rows of 1024 float32
# needed 32896 bytes), then 1 MiB (below), then without data tiling. A dispatch with too large vectors
# (`tanh(a @ b)[:, :128] @ c`) is retried the same way.
_STACK_FAILURE, _STACK_LIMIT = "exceeded stack allocation limit", "--iree-llvmcpu-stack-allocation-limit=65536"
# ... and last, 1 MiB: IREE's CPU sort keeps 8-16 rows of its (widened) operands on the stack, 128 KiB for a (128, 1024)
# float32 sort, 400 KiB for (1000, 1023). local-task workers get 4 MiB stacks (`WORKER_STACK`); Python's threads,
# which run local-sync modules, have 8 MiB.
_BIG_STACK_LIMIT, WORKER_STACK = "--iree-llvmcpu-stack-allocation-limit=1048576", 4 << 20
_LARGE_VECTORS = "operations with large vector sizes"  # (a tanh fused with a slice and a pack: 32768 bytes)

# Values along the sorted dimension from which a sort calls NumPy (IREE 3.13's compares every pair of a row).
# `jit(snp.sort)` of 1-D float32, IREE vs NumPy, us per call: 64 values 27 vs 44, 128 94 vs 31, 256 331 vs 33,
# 1000 4958 vs 70; 16000 values 1.25 s vs 1.5 ms; 10^6 (with `argsort`) 136 ms through NumPy.
SORT_MIN_LENGTH = 128
# Multiply-adds from which a matmul calls BLAS. `jit(a @ b)` float32, us per call back to back, fresh processes,
# 2 cores, BLAS vs IREE: 64^3 11.9 vs 11.4, 96^3 19.6 vs 19.9, 128x128x64 30.4 vs 22.3, 128^3 44 vs 117,
# 256^3 160 vs 450, 512^3 0.94 vs 2.09 ms, 16x4096x16 44 vs 136, 1x2048x2048 342 vs 1422.
BLAS_MIN_MACS = 1 << 21
# ... and from which a matrix-vector product does: IREE 3.13 packs the matrix for its data-tiled kernel on every call.
# `jit(a @ b)` float32, STAGEC_CACHE=0, IREE vs BLAS, us: 1x256x256 20 vs 16, 256x256x1 20 vs 17, 512x512x1 230 vs
# 38, 1000x1000x1 612 vs 91, 1x1000x1000 584 vs 122 (but 16x1000x16, not a vector: 18 vs 25).
BLAS_MIN_VECTOR_MACS = 1 << 16
# Not an IREE flag: `Backend.compile` takes it out and calls NumPy for the module's large float32/float64 matmuls
# (BLAS, `legalize.blas_dots`) and its long sorts (`legalize.host_sorts`). One of the CPU's flags while
# `config.cpu_blas` is on (`Backend.flags`), so that every cache key (jit modules' and eager kernels') and an
# artifact's metadata hold the choice; with the thresholds above in its value, so that a module compiled under
# other thresholds is not taken from the persistent cache.
HOST_BLAS = f"--stagec-host-blas={BLAS_MIN_MACS},{BLAS_MIN_VECTOR_MACS},{SORT_MIN_LENGTH}"
_IMPORTS = {kind: re.compile(re.escape(name + ".").encode())
            for kind, name in (("blas", legalize.BLAS_MODULE), ("sort", legalize.SORT_MODULE))}
_HOST, _DATA_TILING = "--iree-llvmcpu-target-cpu=host", "--iree-dispatch-creation-data-tiling"
_TUNING = tuning.FLAG


def contraction_macs(mlir: str, flags: Sequence[str] = ()) -> int:
    """The multiply-adds of the module's dot_generals (each counted once, also inside loops; unknown dims as 1),
    but for those that call BLAS (`HOST_BLAS` in `flags`), which does not run on IREE's workers."""
    return sum(macs for macs, blas in _dots(mlir, flags) if not blas)


def _dots(mlir: str, flags: Sequence[str]) -> Iterator[tuple[int, bool]]:
    """(multiply-adds, whether it calls BLAS) of each dot_general of the module, read from its text."""
    for m in _DOT.finditer(mlir):
        lhs, out = (t.split("x")[:-1] for t in (m[2], m[3]))
        k = math.prod(int(lhs[int(i)]) for i in m[1].split(",") if i.strip() and lhs[int(i)].isdigit())
        macs = k * math.prod(int(d) for d in out if d.isdigit())
        # (the rhs's type is taken as the lhs's, and a product is a matrix-vector one when the lhs is all contracted
        # or its result as large as its lhs's free part (batch dimensions not told apart): a product miscounted here
        # only moves the driver choice)
        types = [m[2].rsplit("x", 1)[-1], m[3].rsplit("x", 1)[-1]]
        lhs_free = math.prod(int(d) for d in lhs if d.isdigit()) // max(k, 1)
        vector = lhs_free == 1 or math.prod(int(d) for d in out if d.isdigit()) == lhs_free
        yield macs, HOST_BLAS in flags and legalize.calls_blas(types, macs, BLAS_MIN_MACS, vector,
                                                               BLAS_MIN_VECTOR_MACS)


def key_flags(flags: Sequence[str]) -> list[str]:
    """`flags` as a cache key holds them: a tuning spec by its file name, not its folder (stagec writes the spec it
    composes into a folder of each process, under a name made of its content; `flag_files` holds the content)."""
    return [_TUNING + os.path.basename(f[len(_TUNING):]) if f.startswith(_TUNING) else f for f in flags]


def flag_files(flags: Sequence[str]) -> dict[str, str]:
    """The files `flags` name whose contents change the module (the tuning spec), as name -> sha256."""
    out = {}
    for f in flags:
        if f.startswith(_TUNING):
            st = os.stat(path := f[len(_TUNING):])
            out[os.path.basename(path)] = _file_sha256(path, st.st_mtime_ns, st.st_size)
    return out


@functools.lru_cache(maxsize=8)
def _file_sha256(path: str, mtime_ns: int, size: int) -> str:
    """A flag file's digest, read again only when the file changes (every cache key holds it)."""
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def _cores() -> int:
    """The cores this process may run on. Given as a count, IREE leaves its workers unpinned: pinned (its default)
    a 1M-float SELU took 540-660 us in 5 of 8 fresh processes on 2 idle cores and ~380 us in the others;
    unpinned ~380 us in 8 of 8 (docs/passes.md, "Threads")."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_compilers: set = set()  # iree-compile processes running now (`_compile_str`)
_compilers_lock = threading.Lock()
_abandoned = False  # set at exit (`abandon_compiles`): no compiler starts from then on


def _compile_str(mlir: str, target: str, args: list) -> bytes:
    """`iree.compiler.compile_str`, its `iree-compile` subprocess tracked (`_invoke`)."""
    import iree.compiler as ic
    from iree.compiler.tools import core
    if core.invoke_immediate is not _invoke:
        core.invoke_immediate = _invoke  # (what compile_str calls; the same contract)
    return ic.compile_str(mlir, target_backends=[target], input_type="stablehlo", extra_args=args)


def _invoke(command_line: list, *, input_file=None, immediate_input=None) -> bytes:
    """iree.compiler's `invoke_immediate`, in a subprocess this process tracks, so that `abandon_compiles` can end
    it (a compile is never left running after its program) and an interrupted call ends it too."""
    import subprocess

    from iree.compiler.tools.binaries import CompilerToolError
    stdin = open(input_file, "rb") if input_file is not None else subprocess.PIPE
    try:
        proc = _start(command_line, stdin)
        try:
            out, err = proc.communicate(immediate_input)
        except BaseException:  # (KeyboardInterrupt too: the compiler ends with the call)
            proc.kill()
            proc.wait()
            raise
        finally:
            with _compilers_lock:
                _compilers.discard(proc)
    finally:
        if input_file is not None:
            stdin.close()
    if _abandoned:
        raise CompileError("stagec is exiting: the compile was abandoned")
    if proc.returncode != 0:
        raise CompilerToolError(subprocess.CompletedProcess(command_line, proc.returncode, out, err))
    if err:
        sys.stderr.write(err.decode(errors="replace"))
    return out


def _start(command_line: list, stdin) -> object:
    """The compiler's process, registered in `_compilers` before a Ctrl-C can interrupt the caller: in the main
    thread SIGINT is held while it starts (a KeyboardInterrupt inside `Popen`, after the fork, left the
    compiler running: 1 in 80 tries), then delivered once the process is ended."""
    import signal
    import subprocess
    main = threading.current_thread() is threading.main_thread()
    got: list = []
    old = signal.signal(signal.SIGINT, lambda sig, frame: got.append(sig)) if main else None
    try:
        with _compilers_lock:
            if _abandoned:
                raise CompileError("stagec is exiting: the compile was abandoned")
            proc = subprocess.Popen(command_line, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            _compilers.add(proc)
            if len(_compilers) == 1 and not _exit_hooked:
                _hook_exit()
    finally:
        if main:
            signal.signal(signal.SIGINT, old)
    if got:
        proc.kill()
        proc.wait()
        with _compilers_lock:
            _compilers.discard(proc)
        signal.raise_signal(signal.SIGINT)  # (the program's own handler: KeyboardInterrupt by default)
    return proc


_exit_hooked = False


def _hook_exit() -> None:
    """At exit, end any compiler still running (a call interrupted between its start and its wait)."""
    global _exit_hooked
    _exit_hooked = True
    atexit.register(abandon_compiles)


def abandon_compiles() -> None:
    """End every compiler process this process started and refuse new ones (at exit: a pending compile is
    abandoned, never awaited)."""
    global _abandoned
    with _compilers_lock:
        _abandoned = True
        procs = list(_compilers)
    for proc in procs:
        try:
            proc.kill()
        except OSError:
            pass


def _retry_args(error: str, args: list, backend: str) -> list | None:
    """The flags that get around a known IREE 3.13 failure (`error`) of a compile with `args`, or None. Each
    retry adds or drops one flag, so the retries end."""
    if _UNDEFINED_SYMBOL in error and backend == "cpu" and SYSTEM_LINK not in args:
        return args + [SYSTEM_LINK]  # a libm call _LIBM_F64 did not foresee (`floor` without SSE4.1): link libm
    if _MULTI_USE_FAILURE in error and _NO_MULTI_USE not in args:
        # At O2/O3 with data tiling some modules fail (a jit(value_and_grad) whose exp(w) feeds a sum and the
        # backward pass) when IREE fuses multi-use producers; without that fusion they compile. Other modules
        # keep it: it puts layernorm in one dispatch (8.8 -> 5.0 ms).
        return args + [_NO_MULTI_USE]
    if _STACK_FAILURE in error and backend == "cpu":
        if _STACK_LIMIT not in args and _BIG_STACK_LIMIT not in args:
            return args + [_STACK_LIMIT]
        if _BIG_STACK_LIMIT not in args:
            return [a for a in args if a != _STACK_LIMIT] + [_BIG_STACK_LIMIT]
        if _DATA_TILING in args:  # (a pattern not foreseen: unpacked matmuls are slower, never wrong)
            return [a for a in args if a != _DATA_TILING]
    if _LARGE_VECTORS in error and backend == "cpu" and _DATA_TILING in args:
        return [a for a in args if a != _DATA_TILING]
    spec = next((a for a in args if a.startswith(_TUNING)), None)
    if spec and ("tuning spec" in error or "source executable" in error):
        return [a for a in args if a != spec]  # the tuning spec is a speed-up only: never a reason to fail
    if _KILLED.search(error) and _DATA_TILING in args:
        # iree-compile now and then segfaults in MaterializeDeviceEncodingPass on vmap(grad(cholesky)) modules
        # with data tiling; without it they compile every time (docs/linalg.md). The cache then keeps that build
        # under the usual key: the same results, slower matmuls, until the cache entry is pruned.
        return [a for a in args if a != _DATA_TILING]
    return None


TARGETS: dict[str, Target] = {t.backend: t for t in (
    # host: without it IREE warns and emits generic x86 code. Data tiling: a 1024^2 f32 matmul went
    # from 38 ms to 14 ms with it (measured on this machine, iree 3.13). O3 (IREE's default is O0): its
    # dispatch formation fuses layernorm's two reductions and their consumer into one pass (8.8 -> 5.0 ms
    # CPU time), its codegen vectorizes softmax's and sum(x**2+sin x)'s row reductions better (10.3 -> 8.4,
    # 1.02 -> 0.56 ms); matmuls, SELU and compile time unchanged (docs/passes.md, "IREE flags").
    # Peeling: a vector dimension that the vector length does not divide is split into whole vectors and a
    # remainder loop; without it IREE 3.13 lowered a lone row reduction over 1000 floats one element at a time
    # (`x.sum(1)` over 1000x1000 638 -> 251 us; at 1024 columns 116 either way; docs/passes.md, "Rows not a multiple
    # of 16").
    Target("cpu", "llvm-cpu", "--iree-llvmcpu-target-cpu=",
           (_HOST, _DATA_TILING, "--iree-opt-level=O3", _KEEP_F64, "--iree-llvmcpu-vector-pproc-strategy=peel")),
    # The Vulkan target itself comes from the device found (`vulkan_target_flags`). A hoisted constant
    # expression (argsort's iota, sorted in place) was reused corrupted from the second call on NVIDIA's
    # Vulkan: take_along_axis(x, argsort(x)) right once, then wrong; not hoisting fixes it.
    Target("vulkan", "vulkan-spirv", "--iree-vulkan-target=", ("--iree-opt-const-expr-hoisting=false", _KEEP_F64)),
    # Split reduction: `sum` of 1M floats went from 0.209 to 0.062 ms on an H100 (benchmarks/bench_gpu.py).
    Target("cuda", "cuda", "--iree-cuda-target=",
           (f"--iree-cuda-target={CUDA_ARCH}", "--iree-dispatch-creation-enable-split-reduction", _KEEP_F64)),
)}
IREE_TARGETS: dict[str, Target] = {t.iree: t for t in TARGETS.values()}


def find_target(name: str) -> Target:
    """The target named by an IREE target backend ("llvm-cpu") or a stagec backend ("cpu")."""
    t = IREE_TARGETS.get(name) or TARGETS.get(name)
    if t is None:
        raise ValueError(f"unknown target {name!r}; choose one of {sorted(IREE_TARGETS)} "
                         f"(or the backend names {sorted(TARGETS)})")
    return t


@functools.cache
def _cpuinfo() -> str:
    """The host CPU's model name and feature flags lines of /proc/cpuinfo ("" where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return ""
    return "".join(next((ln for ln in text.splitlines() if ln.startswith(k)), "") for k in ("model name", "flags"))


def host_id() -> str:
    """The host CPU (model and feature flags): what a module compiled for `target-cpu=host` assumes."""
    return f"{platform.machine()}:{hashlib.sha256(_cpuinfo().encode()).hexdigest()[:16]}"


def host_has_bf16() -> bool:
    """Whether the host CPU has bfloat16 arithmetic (AVX-512 BF16 or AMX-BF16) that IREE's data-tiled
    bf16 matmuls use."""
    return any(f in _cpuinfo().split() for f in ("avx512_bf16", "amx_bf16"))


def _rt():
    import iree.runtime as rt
    return rt


# Vulkan targets. IREE's default (vp_android_baseline_2022) has 32-bit storage only: a bool or int8 tensor is
# written as read-modify-write of whole 32-bit words, so a 5-byte bool result gets an 8-byte store. NVIDIA's
# driver drops stores past a buffer's end (robust buffer access): bools past the last full word came back 0
# on an H100 while lavapipe kept them. An NVIDIA GPU gets its architecture's target (8/16/64-bit types,
# 32-wide subgroups, tensor cores); any other device the baseline plus the 8/16/64-bit storage and arithmetic
# that every desktop driver and lavapipe have.
_VULKAN_NVIDIA = ("--iree-vulkan-target=ampere",)
_VULKAN_PORTABLE = ("--iree-vulkan-target=vp_android_baseline_2022",
                    "--iree-vulkan-target-features=spirv:v1.3,cap:Shader,cap:StorageBuffer8BitAccess,"
                    "cap:StorageBuffer16BitAccess,cap:Int8,cap:Int16,cap:Int64,cap:Float16,cap:Float64,"
                    "ext:SPV_KHR_8bit_storage,ext:SPV_KHR_16bit_storage")


def device_names(driver: str) -> list[str]:
    """Names of the devices an IREE driver finds here ([] when the driver, its library or a device is missing)."""
    try:
        return [d["name"] for d in _rt().get_driver(driver).query_available_devices()]
    except Exception:
        return []


def gpu_backends() -> list[str]:
    """The GPU backends with a GPU here: cuda, vulkan (lavapipe, Mesa's Vulkan on the CPU, does not count)."""
    return [b for b in ("cuda", "vulkan") if any("llvmpipe" not in n for n in device_names(b))]


@functools.cache
def vulkan_target_flags() -> tuple[str, ...]:
    """The Vulkan target for the first device IREE's Vulkan driver finds (portable when there is none), or
    STAGEC_VULKAN_TARGET's: an IREE Vulkan target name (`ampere`, `rdna3`, ...) or `portable`."""
    chosen = os.environ.get("STAGEC_VULKAN_TARGET")
    if chosen:
        return _VULKAN_PORTABLE if chosen == "portable" else (f"--iree-vulkan-target={chosen}",)
    names = device_names("vulkan")
    return _VULKAN_NVIDIA if names and "NVIDIA" in names[0] else _VULKAN_PORTABLE


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

    # ---- compilation
    def compile_flags(self, arch: str | None = None) -> list[str]:
        """The default compiler flags, with `arch` (a CPU name, `sm_80`, a Vulkan target) replacing the default one."""
        t = TARGETS[self.name]
        flags = [*vulkan_target_flags(), *t.flags] if self.name == "vulkan" else list(t.flags)
        if arch is None:
            return flags
        # (arch_flag[:-1] also drops the default target's `...-features=`, which describe that target only)
        return [f for f in flags if not f.startswith(t.arch_flag[:-1])] + [t.arch_flag + arch]

    def flags(self, arch: str | None = None) -> list[str]:
        """`compile_flags(arch)` (iree-compile's) and stagec's own choices for the backend's modules, which
        `compile` takes out before IREE sees them: `HOST_BLAS` on the CPU while `config.cpu_blas` is on."""
        return self.compile_flags(arch) + ([HOST_BLAS] if self.name == "cpu" and config.cpu_blas else [])

    def module_flags(self, mlir: str, flags: Sequence[str]) -> list[str]:
        """`flags` adjusted to one module (what the cache key must hold): without data tiling for a bf16 module
        on a host CPU without bf16 arithmetic. Data tiling packs bf16 matmuls for bf16 instructions; without
        them (AVX2, Zen 3) IREE 3.13's data-tiled 256^2 bf16 matmul took 42-62 ms of CPU, untiled 1.0 ms.
        With the parts of the CPU tuning spec that apply to the module (`tuning.parts_for`), for one thread where
        the module calls BLAS: its dispatches between the calls run on local-sync (`Executable._choose_driver`
        finds it faster but for large stretches)."""
        flags = list(flags)
        if self.name == "cpu" and "xbf16>" in mlir and _HOST in flags and not host_has_bf16():
            flags = [f for f in flags if f != _DATA_TILING]
        if self.name == "cpu" and not any(f.startswith(_TUNING) for f in flags):
            flags += tuning.spec_flags(mlir, one_thread=any(blas for _, blas in _dots(mlir, flags)))
        return flags

    def compile(self, mlir: str, fun_name: str, flags: Sequence[str] | None = None,
                side_flags: Sequence[str] = ()) -> bytes:
        """MLIR text -> IREE VM flatbuffer, or a CompileError naming the function and MLIR file.

        `flags` replaces `flags()`; `side_flags` (e.g. dumping dispatch sources) do not change the module."""
        import iree.compiler as ic
        extra = list(side_flags)
        flags = self.module_flags(mlir, self.flags() if flags is None else flags)
        if any(f.startswith(_TUNING) for f in flags):
            # IREE 3.13 loads a tuning spec under a lock and verifies it on its thread pool; the waiting thread may
            # pick up another dispatch's configuration, which asks for the same lock: iree-compile hung (all
            # threads in futex waits) three times in one run of the test suite. Single-threaded, it cannot
            # (the same recursion as iree-org/iree#22842). A side flag: the module is the same.
            extra.append(NO_THREADS)
        if self.name == "cpu" and SYSTEM_LINK not in flags and _LIBM_F64.search(mlir):
            # IREE's embedded ELF linker has no f64 libm (`undefined symbol: tanh`); a system library links
            # against the host's libm. Float64 arithmetic alone (sin/cos's float32 range reduction) links embedded,
            # which keeps an artifact free of the host's libraries. Derived from the MLIR: the cache key covers it.
            extra.append(SYSTEM_LINK)
        # (a silent wrong answer of IREE's multi-use fusion; derived from the MLIR: the cache key covers it)
        mlir = legalize.isolate_multi_use_reductions(mlir) or mlir
        rewrites = legalize.gpu_rewrites(mlir, self.name) if self.name != "cpu" else []
        if rewrites:  # derived from the MLIR and the backend, so the cache key already covers it
            mlir = legalize.legalize_for_gpu(mlir, self.name, rewrites)
        if HOST_BLAS in flags:
            flags = [f for f in flags if f != HOST_BLAS]
            mlir = legalize.blas_dots(mlir, BLAS_MIN_MACS, BLAS_MIN_VECTOR_MACS) or mlir
            mlir = legalize.host_sorts(mlir, SORT_MIN_LENGTH) or mlir
        args = [*flags, *extra]
        try:
            while True:
                try:
                    return _compile_str(mlir, self.target, args)
                except ic.CompilerToolError as e:
                    too_big = _STACK_FAILURE in str(e) or _LARGE_VECTORS in str(e)
                    # (None once done: materialized operands are read from a barrier, not a slice)
                    rewritten = (legalize.materialize_sliced_dot_operands(mlir)
                                 if too_big and self.name == "cpu" else None)
                    if rewritten is not None:
                        mlir = rewritten
                        continue
                    args = _retry_args(str(e), args, self.name)
                    if args is None:
                        raise
        except ic.CompilerToolError as e:
            path = _save_failed_mlir(mlir, fun_name)
            diag = "\n".join(line for line in str(e).splitlines() if "error" in line.lower())[:2000]
            f64 = re.search(r"'spirv\.GL\.(\w+)' op operand .* but got 'f64'", diag)
            if f64:
                raise NotImplementedError(f"function {fun_name!r}: Vulkan has no float64 {f64[1].lower()} (SPIR-V's "
                                          f"GLSL functions take 16/32-bit floats); use float32 there, or the cpu "
                                          f"or cuda backend (MLIR in {path})") from None
            raise CompileError(f"IREE could not compile function {fun_name!r} for {self.target}; the MLIR "
                               f"it was given is in {path}\n{diag}") from None

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


def _save_failed_mlir(mlir: str, fun_name: str) -> str:
    d = os.environ.get("STAGEC_DUMP_DIR") or tempfile.mkdtemp(prefix="stagec-failed-")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"{''.join(c if c.isalnum() or c in '_-' else '_' for c in fun_name)}.failed.mlir")
    with open(path, "w") as f:
        f.write(mlir)
    return path


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
    """Which modules calling NumPy ("blas": `legalize.blas_dots`, "sort": `legalize.host_sorts`) a module imports:
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
    """The Python VM module (`legalize.BLAS_MODULE`) whose `dot_general_<k>` a module calls for its large float32
    and float64 matmuls (`legalize.blas_dots`): NumPy's matmul (its BLAS) on the operands' mapped memory, writing
    into a new buffer of device `dev` (no copy, unless the dimension numbers need a transpose BLAS cannot take)."""
    rt = _rt()
    bv_type, new_buffer = rt.HalBufferView, _mapped_allocator(dev)
    dtypes = {int(_element_type(np.dtype(t))): np.dtype(t) for t in (np.float32, np.float64)}  # (legalize.BLAS_TYPES)

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
        lb, rb, lc, rc = (legalize.unpack_dims(d) for d in packed)
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

    def dot_pair(_self, l1, r1, l2, r2, lb1, rb1, lc1, rc1, lb2, rb2, lc2, rc2):  # (legalize._pair_calls)
        return dot_general(_self, l1, r1, lb1, rb1, lc1, rc1), dot_general(_self, l2, r2, lb2, rb2, lc2, rc2)

    iface = rt.PyModuleInterface(legalize.BLAS_MODULE, Blas)
    for i in range(legalize.BLAS_IMPORTS):
        iface.export(f"dot_general_{i}", "0rrIIII_r", dot_general)
        iface.export(f"dot_pair_{i}", "0rrrrIIIIIIII_rr", dot_pair)
    return iface.create()


def _sort_module(dev):
    """The Python VM module (`legalize.SORT_MODULE`) whose `sort<n>_<k>(operands..., dimension, num_keys)` sorts n
    arrays along `dimension` by the first `num_keys` (lexicographically, NaN last, ties in order: NumPy's stable
    sort, as the comparator `sort_p` emits), into new buffers of device `dev`."""
    rt = _rt()
    bv_type, new_buffer = rt.HalBufferView, _mapped_allocator(dev)
    keys = {et: np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int64)  # (legalize.SORT_KEY_TYPES)
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

    iface = rt.PyModuleInterface(legalize.SORT_MODULE, Sort)
    for n in range(1, legalize.SORT_OPERANDS + 1):
        for k in range(legalize.SORT_IMPORTS):
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
        if _forked:
            raise RuntimeError(_forked)
        b = _backends[name] = Backend(name)
    return b


_forked = ""  # in a child forked after IREE's runtime started: why stagec refuses to run there


def _after_fork_in_child() -> None:
    """IREE's runtime (its devices, worker threads, queues) is not copied by fork: a child forked after it started
    would wait forever on threads that are not there. It gets a clear error instead; compiles it started are
    its parent's."""
    global _forked, _compilers_lock, _abandoned
    _compilers.clear()
    _compilers_lock, _abandoned = threading.Lock(), False
    if _backends:
        _backends.clear()
        _forked = ("stagec cannot run in a process forked after it started IREE's runtime (its threads are not "
                   "copied by fork); use multiprocessing's 'spawn' or 'forkserver' start method, or fork before "
                   "the first stagec operation")


os.register_at_fork(after_in_child=_after_fork_in_child)


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
