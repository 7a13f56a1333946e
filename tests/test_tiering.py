"""Tiered jit (`config.jit_tiering` "kernels"; "auto" adds NumPy rules, tests/test_host.py): a new signature whose
kernels are compiled already runs kernel by kernel while its fused module compiles on a thread, which then takes
over. Counters of the jit and quick
layers (`stagec.jit.stats`, `stagec.quick.stats`) say which tier ran; `stagec.wait_for_compiles()` makes the swap happen (no timing)."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import eager, lax, quick, stages
from stagec.errors import CompileError
from threads import run_at_once

pytestmark = pytest.mark.cpu_only  # (the quick tier runs on the CPU only: stagec.quick.start)
jit_mod = sys.modules["stagec.jit"]
EPS = np.finfo(np.float32).eps


@pytest.fixture(autouse=True)
def tiering():
    """The quick tier on compiled kernels: eager operations (which compile them here) through their kernels too."""
    old = stagec.config.jit_tiering, stagec.config.eager_tiering
    stagec.config.update("jit_tiering", "kernels")
    stagec.config.update("eager_tiering", "never")
    yield
    stagec.wait_for_compiles()
    stagec.config.update("jit_tiering", old[0])
    stagec.config.update("eager_tiering", old[1])


def layernorm(x):
    mu = snp.mean(x, axis=-1, keepdims=True)
    var = snp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / snp.sqrt(var + 1e-5)


def sample(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def counts() -> dict:
    return {**jit_mod.stats, **quick.stats}


def delta(before: dict) -> dict:
    return {k: v - before[k] for k, v in counts().items()}


def test_quick_tier_then_fused():
    x = sample(6, 40)
    want = np.asarray(layernorm(snp.asarray(sample(3, 5))))  # op by op: compiles the kernels layernorm needs
    assert want.shape == (3, 5)
    eager_x = np.asarray(layernorm(snp.asarray(x)))
    f = stagec.jit(layernorm)
    before = counts()
    first = np.asarray(f(x))
    d = delta(before)
    assert d["tiered"] == 1 and d["quick_calls"] == 1
    assert first.tobytes() == eager_x.tobytes()  # the same kernels as op by op: the same bits
    assert stagec.wait_for_compiles()
    fused = np.asarray(f(x))
    d = delta(before)
    assert d["compiles"] == 1 and d["swaps"] == 1 and d["quick_calls"] == 1  # the last call ran the fused module
    [runner] = f._cache.values()
    assert not isinstance(runner, quick.Tiered)
    # Fusion reorders float work: within a few eps of each other (docs/design.md, "Tiered jit")
    np.testing.assert_array_less(np.abs(first.astype(np.float64) - fused), 8 * EPS * np.maximum(1, np.abs(fused)))
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(fused, ref, rtol=1e-5, atol=1e-5)


def test_outputs_pytrees_literals_and_passthrough():
    def f(x, y):
        return {"sum": x + y, "same": x, "one": 1.0, "sq": (x * x,)}
    x, y = sample(7), sample(7, seed=1)
    np.asarray(f(snp.asarray(x[:3]), snp.asarray(y[:3]))["sum"])  # kernels
    np.asarray(snp.asarray(x[:3]) * snp.asarray(x[:3]))
    before = counts()
    quick = stagec.jit(f)(x, y)
    assert delta(before)["quick_calls"] == 1
    stagec.config.update("jit_tiering", "never")
    plain = stagec.jit(lambda x, y: f(x, y))(x, y)
    stagec.config.update("jit_tiering", "kernels")
    assert sorted(quick) == sorted(plain)
    for k in ("sum", "same", "one"):
        assert type(quick[k]) is stagec.Array and quick[k].aval == plain[k].aval, k
        np.testing.assert_array_equal(np.asarray(quick[k]), np.asarray(plain[k]))
    assert isinstance(quick["sq"], tuple) and quick["sq"][0].aval == plain["sq"][0].aval


def test_outputs_are_new_arrays():
    """A graph without equations needs no kernel: it tiers at once."""
    def twice(x):
        return x, x
    x = sample(3)
    before = counts()
    a, b = stagec.jit(twice)(x)
    assert delta(before)["quick_calls"] == 1
    assert a is not b
    a[0] = 7.0  # rebinds `a` alone, as with a compiled module's results
    assert float(np.asarray(b)[0]) == float(x[0]) and float(np.asarray(a)[0]) == 7.0


def test_never_and_control_flow_compile_at_once():
    x = sample(4, 9)
    np.asarray(snp.tanh(snp.asarray(x)) * 2)  # kernels
    stagec.config.update("jit_tiering", "never")
    before = counts()
    np.asarray(stagec.jit(lambda x: snp.tanh(x) * 2)(x))
    assert delta(before)["tiered"] == 0 and delta(before)["compiles"] == 1
    stagec.config.update("jit_tiering", "kernels")
    np.asarray(snp.asarray(x).sum() > 0)  # its other kernels: only the cond can refuse the quick tier
    before = counts()
    out = stagec.jit(lambda x: lax.cond(x.sum() > 0, lambda v: snp.tanh(v) * 2, lambda v: v, x))(x)
    assert delta(before)["tiered"] == 0 and delta(before)["compiles"] == 1  # a branch's graph: no quick tier
    assert out.shape == x.shape
    with pytest.raises(ValueError, match="jit_tiering"):
        stagec.config.update("jit_tiering", "sometimes")


def test_a_kernel_to_compile_means_no_tier(tmp_path, monkeypatch):
    """With an empty persistent cache the kernels would compile one by one: the fused module compiles instead."""
    monkeypatch.setenv("STAGEC_CACHE_DIR", str(tmp_path))
    stagec.clear_caches()
    before, iree = counts(), stages.stats["iree_compiles"]
    out = stagec.jit(lambda x: snp.exp(x) * 3)(sample(5, 6))
    assert delta(before)["tiered"] == 0 and delta(before)["compiles"] == 1
    assert stages.stats["iree_compiles"] - iree == 1
    np.testing.assert_allclose(np.asarray(out), np.exp(sample(5, 6)) * 3, rtol=1e-6)


def test_kernels_load_from_disk_without_mlir(tmp_path, monkeypatch):
    """A kernel compiled by an earlier process is found by its recipe: no MLIR is built for it."""
    monkeypatch.setenv("STAGEC_CACHE_DIR", str(tmp_path))
    stagec.clear_caches()
    x = snp.asarray(sample(11))
    want = np.asarray(snp.exp(x) - x)
    stagec.clear_caches()  # (as a new process: only the disk has them)
    lowered = []
    monkeypatch.setattr(eager, "lower_graph", lambda *a, **k: lowered.append(a) or pytest.fail("lowered"))
    iree = stages.stats["iree_compiles"]
    assert np.asarray(snp.exp(x) - x).tobytes() == want.tobytes()
    assert stages.stats["iree_compiles"] == iree and not lowered


def test_eight_threads_one_trace_one_compile():
    def fun(x):
        return snp.abs(x) * 0.5 + x
    x = sample(9, 13, seed=3)
    np.asarray(fun(snp.asarray(x[:2, :3])))  # kernels
    f = stagec.jit(fun)
    before = counts()
    outs = []

    def work(_):
        for _ in range(3):
            outs.append(np.asarray(f(x)))
    errors = run_at_once(work)
    assert not errors
    assert stagec.wait_for_compiles()
    d = delta(before)
    assert d["traces"] == 1 and d["tiered"] == 1 and d["compiles"] == 1 and d["swaps"] == 1
    assert d["quick_calls"] >= 1  # the first calls (how many ran before the swap depends on timing)
    want = np.abs(x) * 0.5 + x
    for o in outs + [np.asarray(f(x))]:
        np.testing.assert_allclose(o, want, rtol=2 * EPS)
    assert not stages._building


def test_pending_arguments_from_async_calls():
    old = stagec.config.async_dispatch
    stagec.config.update("async_dispatch", "always")
    try:
        g = stagec.jit(lambda x: x * 3.0)
        x = sample(10, seed=4)
        np.asarray(snp.asarray(x) * 3.0 - 1.0)  # kernels
        h = stagec.jit(lambda y: y - 1.0)
        stagec.config.update("jit_tiering", "never")
        y = g(x)  # enqueued: possibly still pending when h reads it
        stagec.config.update("jit_tiering", "kernels")
        before = counts()
        out = np.asarray(h(y))
        assert delta(before)["quick_calls"] == 1
        np.testing.assert_allclose(out, x * 3.0 - 1.0, rtol=EPS)
    finally:
        stagec.config.update("async_dispatch", old)


def test_compile_error_surfaces_naming_the_function(monkeypatch):
    def broken_tail(x):
        return snp.exp(x) + x
    x = sample(3, 4, seed=5)
    np.asarray(broken_tail(snp.asarray(x)))  # kernels

    def fail(self, *a, **k):
        raise CompileError(f"IREE could not compile function {self.name!r} for llvm-cpu (injected)")
    monkeypatch.setattr(stages.Lowered, "compile", fail)
    f = stagec.jit(broken_tail)
    first = np.asarray(f(x))  # the quick tier answers
    np.testing.assert_allclose(first, np.exp(x) + x, rtol=2 * EPS)
    stagec.wait_for_compiles()
    for _ in range(2):  # the call after a failed compile raises it; the next starts afresh (a retry), which fails
        with pytest.raises(CompileError, match="jit_broken_tail"):
            f(x)
        np.testing.assert_allclose(np.asarray(f(x)), np.exp(x) + x, rtol=2 * EPS)
        stagec.wait_for_compiles()


def test_the_swap_installs_the_module_an_untiered_jit_compiles():
    """Steady state is the untiered one: the same pipeline, the same module (its persistent-cache entry)."""
    def scaled(x):
        return snp.tanh(x) * 0.25 - x
    x = sample(5, 8, seed=6)
    np.asarray(scaled(snp.asarray(x[:2])))  # kernels
    f = stagec.jit(scaled)
    f(x)
    stagec.wait_for_compiles()
    [tiered_runner] = f._cache.values()
    stagec.clear_caches()
    stagec.config.update("jit_tiering", "never")
    iree = stages.stats["iree_compiles"]
    g = stagec.jit(scaled)
    g(x)
    [plain_runner] = g._cache.values()
    assert stages.stats["iree_compiles"] == iree  # found on disk: the key the tiered compile stored
    assert bytes(plain_runner.exe.vmfb) == bytes(tiered_runner.exe.vmfb)
