"""What stagec gives IREE for the eager kernels whose compile time a user waits for (issue 40): a sampler's threefry
hash as one `linalg.generic` (`fuse-int-chains`), `split_n` as one hash, gamma's loop as one hash. Values against a
NumPy threefry2x32."""
from __future__ import annotations

import re

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import lax
from stagec import random as sr
from stagec.passes import DEFAULT_PIPELINE
from stagec.random import _prng

pytestmark = pytest.mark.cpu_only  # (`fuse-int-chains` is a pass of the CPU pipeline)

_ROT = ((13, 15, 26, 6), (17, 29, 16, 24))


def _threefry(k1, k2, x1, x2):
    """Threefry-2x32, 20 rounds (Salmon et al.), in NumPy uint32 arithmetic."""
    k1, k2, x1, x2 = (np.asarray(a, np.uint32) for a in (k1, k2, x1, x2))
    rotl = lambda v, d: (v << np.uint32(d)) | (v >> np.uint32(32 - d))
    ks = (k1, k2, k1 ^ k2 ^ np.uint32(0x1BD11BDA))
    x1, x2 = x1 + ks[0], x2 + ks[1]
    for i in range(5):
        for r in _ROT[i % 2]:
            x1 = x1 + x2
            x2 = x1 ^ rotl(x2, r)
        x1 = x1 + ks[(i + 1) % 3]
        x2 = x2 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x1, x2


KEYS = np.random.RandomState(0).randint(0, 2 ** 32, size=(2, 37), dtype=np.uint64).astype(np.uint32)


def _split3(a, b):
    return [w for key in _prng.split_n((a, b), 3) for w in key]


def test_split_n_and_hash_in_a_loop_match_numpy():
    """`split_n`'s stacked hash, and three hashes chained inside a while loop's body (fused there too; enough for
    `MIN_MODULE_OPS`), as NumPy's."""
    def loop(a, b):
        def body(s):
            i, k1, k2 = s
            k1, k2 = _prng.threefry2x32(k1, k2, lax.full_like(k1, 0), lax.full_like(k1, 5))
            k1, k2 = _prng.threefry2x32(k2, k1, lax.full_like(k1, 1), lax.full_like(k1, 2))
            k1, k2 = _prng.threefry2x32(k1, k2, k2, k1)
            return [i + 1, lax.bitwise_not(k1), k2]
        return lax.while_loop(lambda s: s[0] < 3, body, [np.int32(0), a, b])[1:]

    with np.errstate(over="ignore"):
        got = [np.asarray(x) for x in stagec.jit(_split3)(*KEYS)]
        want = [w for i in range(3) for w in _threefry(*KEYS, np.zeros(37, np.uint32), np.full(37, i, np.uint32))]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        k1, k2 = KEYS
        for _ in range(3):
            k1, k2 = _threefry(k1, k2, 0, 5)
            k1, k2 = _threefry(k2, k1, 1, 2)
            k1, k2 = _threefry(k1, k2, k2, k1)
            k1 = ~k1
        got = [np.asarray(x) for x in stagec.jit(loop)(*KEYS)]
        np.testing.assert_array_equal(got[0], k1)
        np.testing.assert_array_equal(got[1], k2)
    text = stagec.jit(loop).lower(*KEYS).as_text("final")
    assert "linalg.generic" in text and "stablehlo.shift_left" not in text, "the hash was not fused"


def test_gamma_eager_kernel_holds_one_hash():
    """An eager gamma kernel of up to `GAMMA_LANES_MAX` values steps each lane through JAX's hashes in one loop: one
    threefry hash in the module (the key schedule xors 0x1BD11BDA once per fused hash; the batched loops, which
    larger draws and jit keep, have 7) and under 600 ops (were ~1300). The draws are those of the module compiled
    without `fuse-int-chains` and of the batched loops (all against JAX in test_random)."""
    key = sr.PRNGKey(3)
    def hashes(text: str) -> int:  # (the key schedule's xor with it: one per hash, wherever the constant is defined)
        names = set(re.findall(r"(%[\w.#]+) = arith.constant 466688986 ", text))
        return sum("arith.xori" in ln and any(re.search(re.escape(n) + r"(?![\w.#])", ln) for n in names)
                   for ln in text.splitlines())
    f = lambda k: sr.gamma(k, 0.7, (300,))
    with sr._eager_kernel():  # (what `_run` traces an eager call's kernel under)
        text = stagec.jit(f).lower(key).as_text("final")
        big = stagec.jit(lambda k: sr.gamma(k, 0.7, (sr.GAMMA_LANES_MAX + 1,))).lower(key).as_text("final")
        without = tuple(p for p in DEFAULT_PIPELINE if p != "fuse-int-chains")
        b = np.asarray(stagec.jit(f, passes=without)(key))
    assert hashes(text) == 1 and not [ln for ln in text.splitlines() if "stablehlo.shift_left" in ln and "ui32>" in ln]
    assert sum(" = " in ln for ln in text.splitlines()) < 600
    assert hashes(big) == 7 and hashes(stagec.jit(f).lower(key).as_text("final")) == 7
    a = np.asarray(sr.gamma(key, 0.7, (300,)))
    for other in (b, np.asarray(stagec.jit(f)(key))):
        np.testing.assert_array_equal(a.view(np.uint32), other.view(np.uint32))


def test_a_lone_hash_in_a_loop_body_is_fused():
    """Below `MIN_MODULE_OPS` a loop body's chain is fused still: there IREE gave each carried value the chain
    computes a dispatch of its own (gamma's one-hash loop: 10 dispatches). Values as NumPy's."""
    def loop(a, b):
        def body(s):
            i, k1, k2 = s
            return [i + 1, *_prng.threefry2x32(k1, k2, lax.full_like(k1, 0), lax.full_like(k1, 5))]
        return lax.while_loop(lambda s: s[0] < 3, body, [np.int32(0), a, b])[1:]

    text = stagec.jit(loop).lower(*KEYS).as_text("final")
    assert "linalg.generic" in text and "stablehlo.shift_left" not in text, "the hash was not fused"
    k1, k2 = KEYS
    with np.errstate(over="ignore"):
        for _ in range(3):
            k1, k2 = _threefry(k1, k2, 0, 5)
    got = [np.asarray(x) for x in stagec.jit(loop)(*KEYS)]
    np.testing.assert_array_equal(got[0], k1)
    np.testing.assert_array_equal(got[1], k2)


def test_hash_chains_fused_in_beta_and_poisson():
    """beta joins its two key halves with a concatenate read before the chain's last op (the pass cut there and,
    where a position went stale, looped forever); poisson's (a traced rate: both of its algorithms) sit in loops. Only the passes run here."""
    key, lam = sr.PRNGKey(0), np.float32(3.0)
    for f in (lambda k, a: sr.beta(k, a, 3.0, (100,)), lambda k, a: sr.poisson(k, a, (100,))):
        text = stagec.jit(f).lower(key, lam).as_text("final")
        assert not [ln for ln in text.splitlines() if "stablehlo.shift_left" in ln and "ui32>" in ln]


def test_a_lone_hash_is_left_to_iree():
    """`normal` has one hash: not worth the bindings' linalg import (`MIN_MODULE_OPS`)."""
    text = stagec.jit(lambda k: sr.normal(k, (100,))).lower(sr.PRNGKey(0)).as_text("final")
    assert "linalg.generic" not in text


_FRESH = """
import sys
import numpy as np
import stagec
from stagec import lax
from stagec.random import _prng
keys = np.random.RandomState(0).randint(0, 2 ** 32, size=(2, 37), dtype=np.uint64).astype(np.uint32)
def f(a, b):
    def body(s):
        i, k1, k2 = s
        k1, k2 = _prng.threefry2x32(k1, k2, lax.full_like(k1, 0), lax.full_like(k1, 5))
        k1, k2 = _prng.threefry2x32(k2, k1, k1, k2)
        k1, k2 = _prng.threefry2x32(k1, k2, k2, k1)
        return [i + 1, k1, k2]
    return lax.while_loop(lambda s: s[0] < 2, body, [np.int32(0), a, b])[1:]
assert "linalg.generic" in stagec.jit(f).lower(*keys).as_text("final")
got = np.stack([np.asarray(x) for x in stagec.jit(f)(*keys)])
print("dsl" if any(m.startswith("iree.compiler.dialects.linalg.opdsl") for m in sys.modules) else "no dsl")
from iree.compiler.dialects import linalg
print(linalg.GenericOp.__name__, hasattr(linalg, "matmul"))
np.save(sys.argv[1], got)
"""


@pytest.mark.compile  # (it compiles in a subprocess: not in --fast)
def test_first_compile_skips_linalg_python_dsl(tmp_path):
    """A process's first compile of a module with generics (the passes wrap them) does not import linalg's Python
    module (its named-op DSL: ~80 ms, `passes.irutil._defer_dialect_modules`); importing it afterwards still gives
    the whole module. The values as NumPy's threefry."""
    import os
    import subprocess
    import sys
    out = tmp_path / "got.npy"
    env = dict(os.environ, STAGEC_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", _FRESH, str(out)], env=env, capture_output=True, text=True,
                       timeout=600, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[:2] == ["no dsl", "GenericOp True"], r.stdout
    k1, k2 = KEYS
    with np.errstate(over="ignore"):
        for _ in range(2):
            k1, k2 = _threefry(k1, k2, 0, 5)
            k1, k2 = _threefry(k2, k1, k1, k2)
            k1, k2 = _threefry(k1, k2, k2, k1)
    np.testing.assert_array_equal(np.load(out), np.stack([k1, k2]))


def test_wrapping_stablehlo_ops_imports_nothing(monkeypatch):
    """The bindings import `iree.compiler.dialects.<dialect>` to wrap an op until one import succeeds; StableHLO has
    no such module, so each wrap tried again (80k failed imports, 0.26 s, in one `random.ball` compile) until
    `passes.irutil` gave it an empty one."""
    import importlib._bootstrap as bootstrap
    f = lambda k: sr.ball(k, 3, 2, (50,))  # noqa: E731
    stagec.jit(f).lower(sr.PRNGKey(0)).as_text("final")
    tried, find = [], bootstrap._find_and_load
    monkeypatch.setattr(bootstrap, "_find_and_load", lambda name, *a: (tried.append(name), find(name, *a))[1])
    text = stagec.jit(f).lower(sr.PRNGKey(1)).as_text("final")
    assert "stablehlo." in text
    assert not [n for n in tried if n.startswith("iree.compiler.dialects.")], sorted(set(tried))



def test_single_threaded_compiles_give_the_same_module(monkeypatch):
    """`compile_single_threaded` (the suite's setting, tests/conftest.py) only adds iree-compile's
    `--mlir-disable-threading`: users' default keeps IREE's thread pool, and both give the same module's bytes."""
    from stagec.compiler import driver, processes
    real, seen = processes.compile_str, []
    monkeypatch.setattr(processes, "compile_str", lambda m, t, a: seen.append((m, a, real(m, t, a))) or seen[-1][2])
    before = (stagec.config.compile_single_threaded, stagec.config.persistent_cache)
    x = np.linspace(-3, 3, 4096, dtype=np.float32).reshape(64, 64)
    f = lambda a: snp.tanh(a @ a.T) * 2 + snp.sum(a, axis=0)  # noqa: E731
    try:
        stagec.config.update("persistent_cache", False)
        stagec.config.update("compile_single_threaded", False)  # (users' default)
        stagec.jit(f).lower(x).compile()
        stagec.config.update("compile_single_threaded", True)
        stagec.jit(f).lower(x).compile()
    finally:
        stagec.config.update("compile_single_threaded", before[0])
        stagec.config.update("persistent_cache", before[1])
    (text, pooled, pooled_vmfb), (text2, single, single_vmfb) = seen
    assert text2 == text and driver.NO_THREADS not in pooled and single == [*pooled, driver.NO_THREADS]
    assert single_vmfb == pooled_vmfb


def test_a_lone_hash_beside_a_float64_kernel_is_fused(x64):
    """A module where mathlib expands a float64 or complex128 op (float64 `normal`'s erfinv) has its hashes fused below
    `MIN_MODULE_OPS` too: its kernels are generics already, and IREE 3.13 copied the hashes left as StableHLO ops into
    their dispatches (complex128 asin of two `normal` draws compiled in 11 s, 5 fused). A float32 `normal` alone is
    left as it was. The draws as the module without `fuse-int-chains` gives them (both JAX's: test_random)."""
    key = sr.PRNGKey(5)
    chains = lambda f: next(s for s in stagec.jit(f).lower(key).pass_stats  # noqa: E731
                            if s.name == "fuse-int-chains").rewrites["chains"]
    f = lambda k: sr.normal(k, (40,))  # noqa: E731
    assert chains(f) >= 1 and chains(lambda k: sr.normal(k, (40,), np.float32)) == 0
    without = tuple(p for p in DEFAULT_PIPELINE if p != "fuse-int-chains")
    np.testing.assert_array_equal(np.asarray(stagec.jit(f)(key)), np.asarray(stagec.jit(f, passes=without)(key)))
