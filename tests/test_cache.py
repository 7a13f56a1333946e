"""Persistent compilation cache: hits and misses, warm processes that never run the IREE compiler,
corrupt entries, concurrent writers, unwritable folders, LRU pruning, and explained misses."""
from __future__ import annotations

import errno
import logging
import math
import os
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import ShapeDtypeStruct as S
from stagec import aot, cache


@pytest.fixture
def cdir(tmp_path, monkeypatch, no_background):
    """An empty cache folder of this test's own, and zeroed hit/miss counters."""
    d = tmp_path / "cache"
    monkeypatch.setenv("STAGEC_CACHE_DIR", str(d))
    cache.reset_stats()
    cache._warned.clear()
    return d


def selu(x):
    return 1.05 * snp.where(x > 0, x, 1.67 * snp.exp(x) - 1.67)


X = np.linspace(-2, 2, 8, dtype=np.float32)
WANT = 1.05 * np.where(X > 0, X, 1.67 * np.exp(X) - 1.67)


@pytest.fixture(scope="module")
def lowered():
    return stagec.jit(selu).lower(S((8,), np.float32))


def entries(d) -> list[str]:
    return sorted(p for p in os.listdir(d) if p.endswith(".stagec")) if os.path.isdir(d) else []


def test_miss_stores_then_hit_loads(cdir, lowered):
    c1 = lowered.compile()
    assert cache.info()["misses"] == 1 and cache.info()["hits"] == 0
    [name] = entries(cdir)
    _, meta = aot.read(cdir / name)
    assert meta["key"] == name[:-len(".stagec")] and meta["name"] == "jit_selu"
    assert meta["in_avals"] == [{"shape": [8], "dtype": "float32", "weak_type": False}]
    assert meta["compile_seconds"] > 0 and meta["created"] <= time.time()
    os.utime(cdir / name, (1, 1))
    c2 = lowered.compile()
    info = cache.info()
    assert (info["hits"], info["misses"], info["entries"]) == (1, 1, 1) and info["bytes"] == os.path.getsize(cdir / name)
    assert os.path.getmtime(cdir / name) > 1  # a hit is a use: LRU order
    assert isinstance(c2.artifact.vmfb, memoryview)  # read from disk (a view of the checked copy)
    np.testing.assert_allclose(np.asarray(c1(X)), WANT, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(c2(X)), WANT, rtol=1e-5)


def test_key_covers_mlir_target_flags_and_versions(monkeypatch):
    base = cache.key_components("module {}", "llvm-cpu", ["--a"])
    k = cache.make_key(base)
    assert cache.make_key(cache.key_components("module {}", "llvm-cpu", ["--a"])) == k
    assert cache.make_key(cache.key_components("module { }", "llvm-cpu", ["--a"])) != k
    assert cache.make_key(cache.key_components("module {}", "vulkan-spirv", ["--a"])) != k
    assert cache.make_key(cache.key_components("module {}", "llvm-cpu", ["--b"])) != k
    assert "host" in cache.key_components("m", "llvm-cpu", ["--iree-llvmcpu-target-cpu=host"])
    monkeypatch.setitem(aot._versions, "compiler", "0.0.0@0123456789ab")
    assert cache.make_key(cache.key_components("module {}", "llvm-cpu", ["--a"])) != k
    monkeypatch.undo()
    monkeypatch.setattr(stagec._version, "__version__", "9.9.9")
    assert cache.make_key(cache.key_components("module {}", "llvm-cpu", ["--a"])) != k


def _log_softmax_loss(z):  # a reduction read twice, one use reaching another reduction: `isolate-reductions` fires
    s = snp.sum(snp.exp(z), 1)
    return snp.sum(z - snp.log(s)[:, None]), 1 / s


def test_a_changed_rewrite_misses_the_cache(cdir, monkeypatch):
    """The key is of what IREE receives, after legalization: a rewrite that changes its output recompiles. (It was
    of the module before legalization: a fixed `isolate_multi_use_reductions` kept serving modules compiled wrong.)"""
    from stagec.passes import REGISTRY
    z = S((8, 33), np.float32)
    compile_ = lambda: stagec.jit(_log_softmax_loss).lower(z).compile()
    compile_()
    assert cache.info()["misses"] == 1
    with monkeypatch.context() as m:
        m.setattr(REGISTRY["isolate-reductions"], "fn", lambda module: 0)  # the rewrite changed: it leaves it alone
        compile_()
        assert cache.info()["misses"] == 2 and cache.info()["hits"] == 0
    compile_()  # (the rewrite as it was: the first entry)
    assert cache.info()["hits"] == 1 and len(entries(cdir)) == 2


def test_a_change_to_the_compile_sides_source_misses_the_cache(cdir, monkeypatch, lowered):
    """Every key holds a digest of the compile side's source (passes, legalize, tuning, the driver), read once per
    process: a change that leaves this module's text alone (a flag rule, a retry) recompiles it too."""
    from stagec.compiler import driver
    files = [os.path.relpath(f, os.path.dirname(stagec.__file__)) for f in driver._compile_side_files()]
    for want in ("tuning.py", *(os.path.join("compiler", n) for n in ("driver.py", "retries.py", "targets.py"))):
        assert want in files
    assert any(f.endswith(os.path.join("passes", "legalize.py")) for f in driver._compile_side_files())
    lowered.compile()
    lowered.compile()
    assert cache.info()["misses"] == 1 and cache.info()["hits"] == 1
    assert driver.source_digest.cache_info().misses <= 1  # (computed once per process)
    monkeypatch.setattr(driver, "source_digest", lambda: "0" * 64)
    lowered.compile()
    assert cache.info()["misses"] == 2


def test_off_switches(cdir, lowered, monkeypatch):
    key_before = stagec.config.key()
    stagec.config.update("persistent_cache", False)
    try:
        assert stagec.config.key() == key_before  # where code is kept does not change what is compiled
        np.testing.assert_allclose(np.asarray(lowered.compile()(X)), WANT, rtol=1e-5)
        assert entries(cdir) == [] and cache.info()["misses"] == 0
    finally:
        stagec.config.update("persistent_cache", True)
    monkeypatch.setenv("STAGEC_CACHE", "0")
    assert type(stagec.config)().persistent_cache is False
    monkeypatch.setenv("STAGEC_CACHE", "1")
    assert type(stagec.config)().persistent_cache is True


def test_default_location(monkeypatch):
    monkeypatch.delenv("STAGEC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "/x/cache")
    assert cache.cache_dir() == "/x/cache/stagec"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.cache_dir() == os.path.join(os.path.expanduser("~"), ".cache", "stagec")


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty"])
def test_corrupt_entry_warns_once_recompiles_and_replaces(cdir, lowered, damage):
    lowered.compile()
    [name] = entries(cdir)
    path = cdir / name
    data = path.read_bytes()
    if damage == "flip":
        bad = bytearray(data)
        bad[100] ^= 0x55
        path.write_bytes(bytes(bad))
    else:
        path.write_bytes(data[:len(data) // 2] if damage == "truncate" else b"")
    with pytest.warns(RuntimeWarning, match=r"stagec persistent cache: ignoring a bad entry .*recompiling") as rec:
        c = lowered.compile()
    assert len([w for w in rec if "bad entry" in str(w.message)]) == 1
    np.testing.assert_allclose(np.asarray(c(X)), WANT, rtol=1e-5)
    assert path.read_bytes()[:len(data) - 200] == data[:len(data) - 200] or aot.read(path)  # replaced, sound
    aot.read(path)
    assert cache.info()["corrupt"] == 1


def test_unwritable_dir_degrades_to_memory(tmp_path, monkeypatch, lowered):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("STAGEC_CACHE_DIR", str(blocker / "cache"))  # cannot be created, even by root
    cache._warned.clear()
    with pytest.warns(RuntimeWarning, match=r"cannot write to .*a-file/cache .*compiling in memory only"):
        c = lowered.compile()
    np.testing.assert_allclose(np.asarray(c(X)), WANT, rtol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reported once per folder, not on every compile
        lowered.compile()


def test_full_disk_degrades_to_memory(cdir, lowered, monkeypatch):
    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(aot, "write_atomic", full)
    with pytest.warns(RuntimeWarning, match="No space left on device"):
        c = lowered.compile()
    np.testing.assert_allclose(np.asarray(c(X)), WANT, rtol=1e-5)
    assert entries(cdir) == []


def test_prune_evicts_least_recently_used(cdir):
    os.makedirs(cdir)
    for i, name in enumerate(["old", "mid", "new"]):
        p = cdir / f"{name}.stagec"
        p.write_bytes(aot.pack(b"x" * 1000, {}))  # (signed with this user's key: prune counts only those)
        os.utime(p, (1000 + i, 1000 + i))
    (cdir / "unrelated.txt").write_text("kept")
    size = os.path.getsize(cdir / "old.stagec")
    assert cache.prune(2 * size) == 1 and entries(cdir) == ["mid.stagec", "new.stagec"]
    assert cache.prune(size) == 1 and entries(cdir) == ["new.stagec"]
    assert cache.clear() == 1 and entries(cdir) == [] and (cdir / "unrelated.txt").exists()
    assert cache.parse_size("1G") == 1 << 30 and cache.parse_size("1.5KiB") == 1536 and cache.parse_size("7") == 7
    with pytest.raises(ValueError, match="invalid size '1Q'"):
        cache.parse_size("1Q")


def test_max_size_bounds_the_cache_on_store(cdir, lowered):
    stagec.config.update("persistent_cache_max_size", "1")
    try:
        lowered.compile()
    finally:
        stagec.config.update("persistent_cache_max_size", "2G")
    assert entries(cdir) == []  # stored, then evicted: larger than the bound


def test_eager_primitives_are_cached_on_disk(cdir):
    stagec.clear_caches()
    # an eager op with no NumPy rule (erf: NumPy has none), so its kernel compiles (arctan2 has a rule since 2026-11-30)
    y = stagec.lax.erf(np.float32([0.25, 0.5, 3.0]))
    np.testing.assert_allclose(np.asarray(y), [math.erf(v) for v in (0.25, 0.5, 3.0)], rtol=1e-6)
    assert any(aot.read(cdir / n)[1]["name"].startswith("eager_") for n in entries(cdir))


# ---------------------------------------------------------------- other processes

PROGRAM = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import stagec, stagec.numpy as snp
    if os.environ.get("BLOCK_COMPILER"):
        import iree.compiler
        def refuse(*a, **k):
            raise SystemExit("the IREE compiler was invoked")
        iree.compiler.compile_str = refuse
    SCALE = float(os.environ.get("SCALE", "2"))

    @stagec.jit
    def f(x):
        return snp.tanh(x) * SCALE  # a global: part of the program, so of the key

    barrier = os.environ.get("BARRIER")
    if barrier:  # start compiling together with the other writer
        open(f"{barrier}.{os.getpid()}", "w").close()
        t0 = time.time()
        while len([n for n in os.listdir(os.path.dirname(barrier)) if n.startswith(os.path.basename(barrier))]) < 2:
            if time.time() - t0 > 60:
                raise SystemExit("barrier timeout")
            time.sleep(0.002)
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    y = np.asarray(f(x))
    assert np.allclose(y, np.tanh(x) * SCALE, rtol=1e-5), y
    i = stagec.cache.info()
    print(i["hits"], i["misses"])
""")


def run_program(cdir, **env) -> subprocess.CompletedProcess:
    e = {**os.environ, "STAGEC_CACHE_DIR": str(cdir), **env}
    return subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, env=e, timeout=180)


@pytest.mark.compile  # (it compiles in a subprocess: not in --fast)
def test_warm_process_loads_without_the_compiler_and_honours_globals(cdir):
    cold = run_program(cdir)
    assert cold.returncode == 0, cold.stderr
    assert cold.stdout.split() == ["0", "1"]
    warm = run_program(cdir, BLOCK_COMPILER="1")
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout.split() == ["1", "0"]
    changed = run_program(cdir, BLOCK_COMPILER="1", SCALE="3")  # a changed global must not reuse the entry
    assert changed.returncode != 0 and "the IREE compiler was invoked" in changed.stderr


@pytest.mark.compile  # (it compiles in a subprocess: not in --fast)
def test_two_processes_compiling_one_key_leave_one_good_entry(cdir, tmp_path):
    os.makedirs(cdir)
    env = {**os.environ, "STAGEC_CACHE_DIR": str(cdir), "BARRIER": str(tmp_path / "ready"),
           # (the documented warning of NVIDIA's Vulkan, not the cache's: backend.NVIDIA_VULKAN_WRONG)
           "PYTHONWARNINGS": "ignore:stagec's Vulkan backend on an NVIDIA GPU:RuntimeWarning"}
    procs = [subprocess.Popen([sys.executable, "-c", PROGRAM], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=180) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert out.split() in (["0", "1"], ["1", "0"])  # each compiled (miss) or loaded (hit)
    assert "warning" not in "".join(err for _, err in outs).lower()
    [name] = entries(cdir)
    assert sorted(os.listdir(cdir)) == [name]  # no temp files left behind
    _, meta = aot.read(cdir / name)
    assert meta["name"] == "jit_f"


# ---------------------------------------------------------------- explaining misses


@pytest.fixture
def explain(caplog):
    stagec.config.update("explain_cache_misses", True)
    caplog.set_level(logging.WARNING, logger="stagec")
    yield caplog
    stagec.config.update("explain_cache_misses", False)


def messages(caplog, kind: str) -> list[str]:
    out = [r.getMessage() for r in caplog.records if kind in r.getMessage()]
    caplog.clear()
    return out


def test_explain_tracing_misses(cdir, explain):
    def poly(x, n):
        return x ** n + 1.0

    f = stagec.jit(poly, static_argnames="n")
    f(np.ones(3, np.float32), n=2)
    [m] = messages(explain, "TRACING CACHE MISS")
    assert "poly" in m and "first trace" in m and f"called from {__file__}:" in m
    f(np.ones(5, np.float32), n=2)
    [m] = messages(explain, "TRACING CACHE MISS")
    assert "argument 'x' shape changed from float32[3] to float32[5]" in m
    f(np.ones(3, np.int32), n=2)
    [m] = messages(explain, "TRACING CACHE MISS")
    assert "argument 'x' dtype changed from float32 to int32" in m
    f(np.ones(3, np.float32), n=3)
    [m] = messages(explain, "TRACING CACHE MISS")
    assert "static argument 'n' changed from 2 to 3" in m
    f(np.ones(3, np.float32), n=2.0)  # equal to 2, another type: another trace, named
    [m] = messages(explain, "TRACING CACHE MISS")
    assert "static argument 'n' changed from 2 to 2.0" in m
    f(np.ones(3, np.float32), n=2)  # seen before: no message
    assert messages(explain, "TRACING CACHE MISS") == []

    t = stagec.jit(lambda scale, params, bias=0.0: [p * scale + bias for p in params], static_argnums=0)
    t(2.0, [np.ones(2, np.float32)])
    messages(explain, "MISS")
    t(2.0, [np.ones(2, np.float32), np.ones(2, np.float32)])
    [m] = messages(explain, "TRACING CACHE MISS")
    assert "argument 'params' structure changed from [*] to [*, *]" in m
    t(2.0, [np.ones(2, np.float32)], bias=1.0)
    [m] = messages(explain, "TRACING CACHE MISS")
    assert "keyword arguments changed from [] to ['bias']" in m

    g = stagec.jit(lambda x: x * 2)
    g(np.float32(1.0))
    messages(explain, "TRACING CACHE MISS")
    g(1.0)
    [m] = messages(explain, "TRACING CACHE MISS")
    assert "weak_type changed from False to True" in m

    def make():
        return stagec.jit(lambda x: x - 1)
    make()(np.ones(2, np.float32))
    messages(explain, "TRACING CACHE MISS")
    make()(np.ones(2, np.float32))
    [m] = messages(explain, "TRACING CACHE MISS")
    assert "a new function object" in m

    h = stagec.jit(lambda x: x + 1)
    h(np.ones(2, np.float32))
    messages(explain, "MISS")
    stagec.config.update("passes", "none")
    try:
        h(np.ones(2, np.float32))
    finally:
        stagec.config.update("passes", "default")
    [m] = messages(explain, "TRACING CACHE MISS")
    assert "config flag passes changed from 'default' to 'none'" in m


def test_explain_persistent_misses(cdir, explain):
    def program(c):
        return stagec.jit(lambda x: x * c + 1.0, backend=None)

    program(2.0).lower(S((4,), np.float32)).compile()
    [m] = messages(explain, "PERSISTENT CACHE MISS")
    assert "never compiled before" in m
    program(3.0).lower(S((4,), np.float32)).compile()  # a closure value changed
    [m] = messages(explain, "PERSISTENT CACHE MISS")
    assert "the program (MLIR) differs" in m and "3.0" in m and "first changed line" in m
    program(2.0).lower(S((4,), np.float32)).compile(flags=["--iree-opt-level=O1"])
    [m] = messages(explain, "PERSISTENT CACHE MISS")
    assert "compiler flags" in m and "--iree-opt-level=O1" in m and "program" not in m


def test_arch_replaces_the_default_target_flag():
    from stagec.backend import get_backend
    from stagec.compiler.targets import DATA_TILING, find_target
    cpu = get_backend("cpu").compile_flags("x86-64-v3")
    assert "--iree-llvmcpu-target-cpu=x86-64-v3" in cpu and "--iree-llvmcpu-target-cpu=host" not in cpu
    assert DATA_TILING in cpu  # the other defaults stay
    assert get_backend("cuda").compile_flags("sm_86").count("--iree-cuda-target=sm_86") == 1
    assert not any("sm_80" in f for f in get_backend("cuda").compile_flags("sm_86"))
    vulkan = get_backend("vulkan").compile_flags("ampere")  # (the found device's target features go too)
    assert [f for f in vulkan if f.startswith("--iree-vulkan-target")] == ["--iree-vulkan-target=ampere"]
    assert find_target("cpu") is find_target("llvm-cpu") and find_target("vulkan").iree == "vulkan-spirv"
    with pytest.raises(ValueError, match=r"unknown target 'tpu'; choose one of \['cuda', 'llvm-cpu', 'vulkan-spirv'\]"):
        find_target("tpu")


SPEC_PROGRAM = textwrap.dedent("""
    import numpy as np, stagec, stagec.numpy as snp
    from stagec import cache
    stagec.config.update("jit_tiering", "never")
    x = np.ones((8, 40), np.float32)
    e = lambda v: snp.exp(v - v.max(1, keepdims=True))
    stagec.jit(lambda v: e(v) / e(v).sum(1, keepdims=True))(x)  # (a softmax: its module gets the CPU tuning spec)
    print(cache.info()["hits"], cache.info()["misses"])
""")


@pytest.mark.compile  # (it compiles in a subprocess: not in --fast)
def test_a_module_with_a_tuning_spec_hits_the_cache_in_the_next_process(cdir):
    # Each process writes the spec it composes into a folder of its own: the key names the file, not the folder.
    runs = [subprocess.run([sys.executable, "-c", SPEC_PROGRAM], capture_output=True, text=True, timeout=180,
                           env={**os.environ, "STAGEC_CACHE_DIR": str(cdir)}) for _ in range(2)]
    assert [r.stdout.split() for r in runs] == [["0", "1"], ["1", "0"]], [r.stderr[-500:] for r in runs]
    assert len(entries(cdir)) == 1
