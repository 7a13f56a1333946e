"""Shared fixtures. Compiled modules are shared across tests through stagec's in-process caches."""
from __future__ import annotations

import os
import re as _re
import threading

import pytest
from hypothesis import settings

import stagec
from stagec import backend

# Hypothesis draws the same examples on every run, so that a red run reproduces and a green one is not luck;
# STAGEC_HYPOTHESIS_RANDOM=1 explores new ones (with STAGEC_HYPOTHESIS_EXAMPLES=50, say).
settings.register_profile("stagec", derandomize=not os.environ.get("STAGEC_HYPOTHESIS_RANDOM"), database=None)
settings.load_profile("stagec")


def pytest_addoption(parser):
    parser.addoption("--fast", action="store_true",
                     help="the fast tier: tests that need no IREE compile (a test is skipped at its first compile)")
    parser.addoption("--compiles", type=int, default=0, metavar="N",
                     help="list the N tests that made the most IREE compiles (in this process)")


def pytest_configure(config):
    config.addinivalue_line("markers", "compile: needs IREE to compile a module (skipped by --fast)")
    config.addinivalue_line("markers", "cpu_only: the test's subject is a CPU-only mechanism: it runs on the cpu "
                            "backend whatever STAGEC_BACKEND says, its subprocesses too (the `_cpu_only` fixture)")
    config.addinivalue_line("markers", "default_precision: on CUDA too, float32 products keep the default precision "
                            "(bf16_3x there; the `_exact_products_on_cuda` fixture)")
    if config.getoption("--fast"):
        # Tests need no list: whatever reaches IREE's compiler is skipped there (what runs in a subprocess is
        # marked `compile` by its file, below).
        import iree.compiler as ic

        def no_compile(*args, **kwargs):
            if threading.current_thread() is not threading.main_thread():
                _compiled_in_thread.set()  # (a thread cannot skip the test: its report is made a skip, below)
            pytest.skip(_FAST_SKIP)
        ic.compile_str = ic.compile_file = no_compile
        # Also at stagec's door to a compile, before its passes run: tests on their way to a compile spent half the
        # tier's 5 CPU-minutes there (a traced program's errors are still raised: tracing comes before).
        from stagec import stages
        stages.Lowered.compile = no_compile


# Files whose tests compile in a subprocess or a background thread, where --fast's skip cannot reach.
_COMPILE_FILES = {"test_tempfiles.py", "test_cli.py", "test_tiering.py", "test_host.py", "test_async.py", "test_dask.py",
                  "test_heap.py"}


_compiled_in_thread = threading.Event()
# Under a Vulkan default, a test whose float64 math hits this documented NotImplementedError is a skip saying so.
_VULKAN_NO_F64 = "Vulkan has no float64"
_FAST_SKIP = "needs an IREE compile (--fast)"


_compiles: dict[str, int] = {}  # test id -> IREE compiles it made (--compiles)


def _cpu() -> float:
    """CPU seconds of this process and its children: those waited for (iree-compile processes) and those running
    (the compilers that stay, `processes._serve`: their time reached RUSAGE_CHILDREN only when one ended, so a test
    during which one ended was charged its whole life, 100 CPU-s for a test of 2.4 s wall)."""
    import resource
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime + _live_children_cpu()


def _live_children_cpu() -> float:
    """CPU seconds of this process's running children (/proc; 0 where it is missing)."""
    total, me = 0, str(os.getpid())
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0.0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # (ended meanwhile)
            continue
        if fields[1] == me:  # (ppid; utime and stime are the 12th and 13th fields after the name)
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    from stagec import stages
    before = stages.stats["iree_compiles"]
    item._stagec_start = (before, _cpu())
    yield
    _compiles[item.nodeid] = stages.stats["iree_compiles"] - before


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    n = config.getoption("--compiles")
    if n and _compiles:
        terminalreporter.write_sep("=", f"most IREE compiles ({sum(_compiles.values())} in all)")
        for nodeid, k in sorted(_compiles.items(), key=lambda kv: -kv[1])[:n]:
            terminalreporter.write_line(f"{k:5d} {nodeid}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """--fast: a test that failed because a thread of its reached the compiler is a skip."""
    if call.when == "setup":
        _compiled_in_thread.clear()
    report = (yield).get_result()
    if call.when == "teardown" and hasattr(item, "_stagec_start"):  # (sent to xdist's controller with the report)
        from stagec import stages
        n, t = item._stagec_start
        report.user_properties.append(("stagec_cost", (stages.stats["iree_compiles"] - n, _cpu() - t)))
    if (report.when == "call" and report.failed and call.excinfo is not None and _VULKAN_NO_F64 in str(call.excinfo.value)
            and stagec.config.default_backend == "vulkan"):  # (a documented limit, named by its own error)
        report.outcome, report.longrepr = "skipped", (str(item.path), 1, f"Skipped: {_VULKAN_NO_F64} (the error "
                                                      f"tests/test_gpu.py checks): the test's float64 math")
    if not item.config.getoption("--fast"):
        return
    if report.failed and _compiled_in_thread.is_set():
        report.outcome = "skipped"
    if report.skipped and (_FAST_SKIP in str(report.longrepr) or _compiled_in_thread.is_set()):
        report.longrepr = (__file__, 1, f"Skipped: {_FAST_SKIP}")  # (one line in -rs's summary, not one a test)


# Files run longest first, by their durations in the previous run (pytest's cache, .pytest_cache): the workers
# take files in order, so the run does not end waiting on one long file started last. New files count as long.
# Beside them, each file's IREE compiles and CPU seconds (its worker's and its compilers'; "stagec/file-cost"):
# what the suite's time is made of, measurable on a loaded machine.
_DURATIONS_KEY = "stagec/file-seconds"
_file_seconds: dict[str, float] = {}
_file_cost: dict[str, list] = {}  # file -> [IREE compiles, CPU seconds]
_test_cost: dict[str, list] = {}  # test id -> [IREE compiles, CPU seconds] ("stagec/test-cost")


def pytest_runtest_logreport(report):
    f = report.nodeid.partition("::")[0]
    _file_seconds[f] = _file_seconds.get(f, 0.0) + report.duration
    for name, (n, t) in (p for p in report.user_properties if p[0] == "stagec_cost"):
        cost = _file_cost.setdefault(f, [0, 0.0])
        cost[0] += n
        cost[1] = round(cost[1] + t, 2)
        _test_cost[report.nodeid] = [n, round(t, 2)]


def pytest_sessionfinish(session, exitstatus):
    cache = getattr(session.config, "cache", None)
    if cache is not None and _file_seconds and not session.config.getoption("--fast"):
        cache.set(_DURATIONS_KEY, {**cache.get(_DURATIONS_KEY, {}), **_file_seconds})
        cache.set("stagec/file-cost", {**cache.get("stagec/file-cost", {}), **_file_cost})
        cache.set("stagec/test-cost", _test_cost)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in _COMPILE_FILES:
            item.add_marker(pytest.mark.compile)
    cache = getattr(config, "cache", None)
    seconds = cache.get(_DURATIONS_KEY, {}) if cache is not None else {}
    # Files that may create a Vulkan device (they name the backend "vulkan") run last, longest first within each group
    # (where earlier runs' times are known): once a process has a lavapipe device, a core spins for the rest of it
    # (`backend.SPINNING_WAITS`).
    first, vulkan = {}, {}  # file -> its first item's position (the order within a file stays), whether it may
    for i, item in enumerate(items):
        f = item.nodeid.partition("::")[0]
        if f not in first:
            first[f], vulkan[f] = i, bool(_re.search(r"[\"']vulkan[\"']", item.path.read_text()))
    items.sort(key=lambda it: (vulkan[f := it.nodeid.partition("::")[0]], -seconds.get(f, float("inf")), first[f]))
    if config.getoption("--fast"):
        kept = [i for i in items if "compile" not in i.keywords]
        config.hook.pytest_deselected(items=[i for i in items if "compile" in i.keywords])
        items[:] = kept


@pytest.fixture(autouse=True)
def _cpu_only(request):
    """Tests marked `cpu_only` (a mark or a file's `pytestmark`) are about a mechanism only the CPU backend has (the
    host BLAS calls, the NumPy rules of eager operations and jit's quick tier, shape-polymorphic kernels, fused
    composites, the CPU pipeline's passes, glibc's heap): under another default backend (STAGEC_BACKEND=cuda or
    vulkan, scripts/test-gpu.sh) they set `default_backend` to "cpu" for the test and STAGEC_BACKEND for the
    processes it starts, then restore both. The setting is in every cache key and empties the per-setting caches
    (`config.SettingsCache`), so nothing decided for the other backend is reused. With "cpu" already: untouched.
    (A module-scoped fixture is made before this one: it runs on the default backend.)"""
    if request.node.get_closest_marker("cpu_only") is None or stagec.config.default_backend == "cpu":
        yield
        return
    old, env = stagec.config.default_backend, os.environ.get("STAGEC_BACKEND")
    os.environ["STAGEC_BACKEND"] = "cpu"
    stagec.config.update("default_backend", "cpu")
    try:
        yield
    finally:
        stagec.wait_for_compiles(120)  # (background compiles of its CPU modules land before the switch back)
        stagec.config.update("default_backend", old)
        if env is None:
            os.environ.pop("STAGEC_BACKEND", None)
        else:
            os.environ["STAGEC_BACKEND"] = env


@pytest.fixture(autouse=True)
def _exact_products_on_cuda(request):
    """Under a CUDA default backend, float32 products that name no precision are bf16_3x (~2**-16 of relative error
    per product, as JAX's default is TF32 there: docs/design.md, "Precision of float32 products"). The suite's
    oracles bound float32 products, so there its tests run at HIGHEST, except those marked `default_precision`
    (tests/test_gpu.py checks the default's own bound on the GPU), and so do the processes they start. Elsewhere:
    untouched."""
    if stagec.config.default_backend != "cuda" or request.node.get_closest_marker("default_precision") is not None:
        yield
        return
    env = os.environ.get("STAGEC_DEFAULT_MATMUL_PRECISION")
    os.environ["STAGEC_DEFAULT_MATMUL_PRECISION"] = "highest"  # (the processes a test starts too: their bits and
    try:                                                       # cache keys are compared with this one's)
        with stagec.default_matmul_precision("highest"):
            yield
    finally:
        if env is None:
            os.environ.pop("STAGEC_DEFAULT_MATMUL_PRECISION", None)
        else:
            os.environ["STAGEC_DEFAULT_MATMUL_PRECISION"] = env


@pytest.fixture
def no_background():
    """Waits for compiles earlier tests left running in the background (jit's fused modules, eager kernels): they
    store their modules into the cache folder set when they finish, which may be a test's own."""
    from stagec import eager
    stagec.wait_for_compiles()
    eager.wait_for_kernels()


def _setting(name: str, value):
    """A fixture's body: `name` set to `value` for one test, then the previous value back."""
    old = getattr(stagec.config, name)
    stagec.config.update(name, value)
    yield
    stagec.config.update(name, old)


@pytest.fixture
def x64():
    """Enable 64-bit types for one test, then restore the previous setting."""
    yield from _setting("enable_x64", True)


# JAX, the optional oracle, runs on the CPU: on a GPU machine it would otherwise take 75% of the GPU's memory
# in every test process, and stagec's own GPU tests would run out of it.
import os as _os
_os.environ.setdefault("JAX_PLATFORMS", "cpu")

# jit compiles each new signature before its first call (which tier answers a call depends on timing);
# tests/test_tiering.py and tests/test_host.py turn tiering on themselves. (stagec read its environment at import, above.)
_os.environ.setdefault("STAGEC_JIT_TIERING", "never")
stagec.config.update("jit_tiering", _os.environ["STAGEC_JIT_TIERING"])
# The workers fill the cores (one per core, scripts/test.sh), so each iree-compile runs on one thread: ~5% less CPU
# in all than its thread pool (a 4-file slice on 2 workers: 192-195 -> 179-183 CPU-s, docs/log.md 2026-11-27).
# Only that flag changes, never the module (tests/test_kernel_compile.py checks both give the same bytes, and that
# users' default keeps the pool). STAGEC_COMPILE_SINGLE_THREADED=0 runs the suite with the pool.
_cores = len(_os.sched_getaffinity(0)) if hasattr(_os, "sched_getaffinity") else (_os.cpu_count() or 1)
if int(_os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) >= _cores:
    _os.environ.setdefault("STAGEC_COMPILE_SINGLE_THREADED", "1")
    stagec.config.update("compile_single_threaded", stagec.config._defaults["compile_single_threaded"]())


@pytest.fixture
def pooled_compiles():
    """Users' default for the test: iree-compile with its thread pool (`compile_single_threaded` off)."""
    yield from _setting("compile_single_threaded", False)


# Eager operations run as users' do (`eager_tiering` "exact": small inexact ones by their NumPy rules, exact ones
# by them while their kernels compile in the background); tests of the kernels themselves set "never" there.

# Never touch the user's ~/.cache/stagec: a fresh persistent cache per run, set at import so that collection,
# subprocesses and pytest-xdist workers (which inherit the environment) use it too. The process that made it
# removes it at the end. STAGEC_TEST_CACHE_DIR names a folder to reuse across runs instead.
import tempfile as _tempfile

_user_cache_dir = _os.environ.get("STAGEC_CACHE_DIR")
_owned_cache_dir = None
if _os.environ.get("STAGEC_TEST_CACHE_DIR"):
    _os.environ["STAGEC_CACHE_DIR"] = _os.environ["STAGEC_TEST_CACHE_DIR"]
elif _os.environ.get("_STAGEC_RUN_CACHE_DIR"):  # an xdist worker: its controller's folder
    _os.environ["STAGEC_CACHE_DIR"] = _os.environ["_STAGEC_RUN_CACHE_DIR"]
else:
    _owned_cache_dir = _tempfile.mkdtemp(prefix="stagec-test-cache-")
    _os.environ["STAGEC_CACHE_DIR"] = _os.environ["_STAGEC_RUN_CACHE_DIR"] = _owned_cache_dir
# The signing key too (never the user's ~/.config/stagec/key); kept beside a reused cache so its entries verify.
_os.environ.setdefault("STAGEC_KEY_FILE", _os.path.join(_os.environ["STAGEC_CACHE_DIR"], ".key"))


def pytest_unconfigure(config):
    """Delete the run's throwaway cache (not a STAGEC_TEST_CACHE_DIR one) in the process that made it."""
    if _owned_cache_dir:
        import shutil
        shutil.rmtree(_owned_cache_dir, ignore_errors=True)
        _os.environ.pop("_STAGEC_RUN_CACHE_DIR", None)
    if _user_cache_dir is None:
        _os.environ.pop("STAGEC_CACHE_DIR", None)
    else:
        _os.environ["STAGEC_CACHE_DIR"] = _user_cache_dir


# lavapipe's completion threads spin for a Vulkan device's whole life, one core's worth (`backend.SPINNING_WAITS`,
# confined to one core by `backend._confine`). In the suite they took that core from the other worker's compiles
# for the rest of the run: the suite's processes run them at the lowest priority (the 24 Vulkan files on 2 workers:
# 246 -> 153 s). But a call's submission and completion go through them: at that priority, beside the other
# worker's compile, every Vulkan call and read waited ~0.3 s for them. So while this process waits on a Vulkan call
# or read they run at the default priority (raising a priority back needs root or RLIMIT_NICE: without either they
# stay at 19, as before). Not stagec's default: under load a user's Vulkan call would wait for them (p90 24-36 ->
# 340-580 ms with two busy loops on 2 cores; docs/runtime.md, "lavapipe's spinning waits").
_spinners: list = []  # this process's spinning threads
_waiting = [0, threading.Lock()]  # the Vulkan calls and reads waiting now (the last one lowers the priority again)


def _renice(n: int) -> None:
    for t in _spinners:
        try:
            _os.setpriority(_os.PRIO_PROCESS, t, n)
        except OSError:  # (a thread that ended)
            pass


def _confine_low(threads, _confine=backend._confine):
    _confine(threads)
    _spinners.extend(threads)
    _renice(19)


def _spin_while(method, backend_name):
    """`method`, with this process's spinning threads at the default priority while it runs on Vulkan."""
    def waiting(self, *args):
        if not _spinners or backend_name(self) != "vulkan":
            return method(self, *args)
        with _waiting[1]:
            _waiting[0] += 1
            if _waiting[0] == 1:
                _renice(0)
        try:
            return method(self, *args)
        finally:
            with _waiting[1]:
                _waiting[0] -= 1
                if not _waiting[0]:
                    _renice(19)
    return waiting


backend._confine = _confine_low
backend.Executable.run = _spin_while(backend.Executable.run, lambda exe: exe.backend.name)
backend.Backend._staged = _spin_while(backend.Backend._staged, lambda b: b.name)
