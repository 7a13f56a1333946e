"""`stagec.random` against `jax.random`: stored vectors (tests/data/random_vectors.json, written by
tests/data/make_random_vectors.py), JAX itself where it is installed, statistics, jit, keys and errors.

Every case of tests/random_cases.py is drawn once per session (`draw`) and shared by the tests.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import os

import ml_dtypes
import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import dtypes
from stagec import random as sr
from stagec.core import trace_subgraph
from stagec.random import _special

from random_cases import _ALPHA, _COV, _P3, CASES, HEAD, N, SEED, SEEDS_X32, bit_view
from test_eager_composites import _nan_canonical

try:
    import jax
    import jax.random as jr
except ImportError:  # the stored vectors still check everything
    jax = jr = None

with open(os.path.join(os.path.dirname(__file__), "data", "random_vectors.json")) as _f:
    VECTORS = json.load(_f)

_drawn: dict[str, np.ndarray] = {}


class _x64:
    """Set stagec's (and JAX's) 64-bit mode for a block, then restore it."""

    def __init__(self, on: bool):
        self.on = on

    def __enter__(self):
        self.old = stagec.config.enable_x64
        stagec.config.update("enable_x64", self.on)
        if jax is not None:
            self.old_jax = jax.config.jax_enable_x64
            jax.config.update("jax_enable_x64", self.on)

    def __exit__(self, *exc):
        stagec.config.update("enable_x64", self.old)
        if jax is not None:
            jax.config.update("jax_enable_x64", self.old_jax)


def draw(name: str) -> np.ndarray:
    """stagec's result for case `name` (called eagerly: one compiled module per sampler), computed once."""
    if name not in _drawn:
        call, _ = CASES[name]
        with _x64(name.startswith("x64_")):
            _drawn[name] = np.asarray(call(sr, sr.PRNGKey(SEED)))
    return _drawn[name]


def _eps(dtype) -> float:
    return float(dtypes.finfo(np.dtype(dtype)).eps)


def assert_same(got: np.ndarray, want: np.ndarray, kind: str, what: str) -> None:
    """Bit for bit ("exact"), or within 16 eps of max(|want|, 1) ("close": transcendental functions)."""
    assert (got.dtype, got.shape) == (want.dtype, want.shape), what
    if kind == "exact":
        # (a GPU's NaN: one payload, `_nan_canonical`)
        np.testing.assert_array_equal(bit_view(_nan_canonical(got)), bit_view(_nan_canonical(want)), err_msg=what)
        return
    wide = np.complex128 if got.dtype.kind == "c" else np.float64
    g, w = got.astype(wide), want.astype(wide)
    err = np.abs(g - w) / np.maximum(1.0, np.abs(w)) / _eps(got.dtype)
    assert np.all(err <= 16), f"{what}: max error {np.max(err):.1f} eps of max(|x|, 1)"


def _from_bits(bits: list, dtype: np.dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.array(bits, np.uint8).astype(bool)
    return np.array(bits, np.dtype(f"u{dtype.itemsize}")).view(dtype)


# ---------------------------------------------------------------- against JAX's numbers


def test_vectors_were_made_by_jax_default_prng():
    assert VECTORS["prng"] == "threefry2x32" and VECTORS["threefry_partitionable"] is True
    assert VECTORS["seed"] == SEED and set(VECTORS["cases"]) == set(CASES)


@pytest.mark.parametrize("name", list(CASES))
def test_matches_stored_vectors(name):
    rec, kind = VECTORS["cases"][name], CASES[name][1]
    got = draw(name)
    dt = np.dtype(rec["dtype"]) if rec["dtype"] != "bfloat16" else np.dtype(dtypes.bfloat16)
    assert (got.dtype, list(got.shape)) == (dt, rec["shape"])
    flat = got.view(np.dtype(f"f{dt.itemsize // 2}")) if dt.kind == "c" else got  # complex: (re, im) pairs
    head = flat.ravel()[:HEAD]
    assert_same(head, _from_bits(rec["head"], head.dtype), kind, name)
    if kind == "exact":
        assert hashlib.sha256(bit_view(got).ravel().tobytes()).hexdigest() == rec["sha256"], name


@pytest.mark.skipif(jax is None, reason="jax is not installed (the stored vectors are checked instead)")
@pytest.mark.parametrize("name", list(CASES))
def test_matches_jax(name):
    """All values against JAX itself. An exact case's stored SHA-256 already covers all its values, so it
    is drawn from JAX again only when the installed JAX is not the one that wrote the vectors."""
    call, kind = CASES[name]
    if kind == "exact" and jax.__version__ == VECTORS["jax_version"]:
        pytest.skip(f"bit-exactness with jax {jax.__version__} is checked by test_matches_stored_vectors")
    got = draw(name)
    with _x64(name.startswith("x64_")):
        want = np.asarray(call(jr, jr.PRNGKey(SEED)))
    assert_same(got, want, kind, name)


@pytest.mark.parametrize("seed", SEEDS_X32)
def test_seeds(seed):
    """Without x64 a Python int seed is an int32 (its low 32 bits), as in JAX."""
    want = VECTORS["seeds"][str(seed)]
    assert np.asarray(sr.PRNGKey(seed)).tolist() == want
    assert np.asarray(sr.key_data(sr.key(seed))).tolist() == want


# ---------------------------------------------------------------- statistics (one draw per case, N = 2000)


def _moments(x, mean: float, var: float) -> None:
    """Sample mean and variance within 5 standard errors (the variance's from the sample's 4th moment)."""
    x = np.asarray(x, np.float64).ravel()
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / x.size), (x.mean(), mean)
    m4 = np.mean((x - x.mean()) ** 4)
    assert abs(x.var() - var) < 5 * math.sqrt(max(m4 - x.var() ** 2, 0) / x.size), (x.var(), var)


def _freqs(x, p) -> None:
    x = np.asarray(x).ravel()
    for i, pi in enumerate(p):
        assert abs(np.mean(x == i) - pi) < 5 * math.sqrt(pi * (1 - pi) / x.size), (i, np.mean(x == i), pi)


def _in(x, lo, hi, closed_hi=False):
    x = np.asarray(x, np.float64)
    assert np.all(x >= lo) and (np.all(x <= hi) if closed_hi else np.all(x < hi)), (x.min(), x.max())


def _truncnorm_moments(a: float, b: float) -> tuple:
    pdf = lambda t: math.exp(-t * t / 2) / math.sqrt(2 * math.pi)
    cdf = lambda t: (1 + math.erf(t / math.sqrt(2))) / 2
    z = cdf(b) - cdf(a)
    mean = (pdf(a) - pdf(b)) / z
    return mean, 1 + (a * pdf(a) - b * pdf(b)) / z - mean ** 2


def _is_perm(x, n):
    return sorted(np.asarray(x).tolist()) == list(range(n))


STATS = {
    "bits": lambda x: _moments(x / 2.0 ** 32, 0.5, 1 / 12),
    "uniform": lambda x: (_in(x, 0, 1), _moments(x, 0.5, 1 / 12)),
    "uniform_range": lambda x: _in((x - [-1, 2, 5]) / (7 - np.array([-1, 2, 5])), 0, 1),
    "uniform_f16": lambda x: (_in(x, 0, 1), _moments(x, 0.5, 1 / 12)),
    "uniform_bf16": lambda x: (_in(x, -2, 2), _moments(x, 0, 4 / 3)),
    "normal": lambda x: _moments(x, 0, 1),
    "normal_c64": lambda x: (_moments(x.real, 0, 0.5), _moments(x.imag, 0, 0.5)),
    "normal_bf16": lambda x: _moments(x, 0, 1),
    "randint": lambda x: (_in(x, -5, 17), _moments(x, 5.5, (22 ** 2 - 1) / 12), set(x.tolist()) == set(range(-5, 17))),
    "randint_bounds": lambda x: (_in(x[:, 1:], [10, 100, 7], [20, 200, 8]), _moments(x[:, 2], 149.5, 9999 / 12),
                                 _moments(x[:, 0] / 2.0 ** 32, 0, 1 / 12)),
    "bernoulli": lambda x: _moments(x, 0.3, 0.21),
    "exponential": lambda x: (_in(x, 0, np.inf), _moments(x, 1, 1)),
    "gumbel": lambda x: _moments(x, np.euler_gamma, math.pi ** 2 / 6),
    "laplace": lambda x: _moments(x, 0, 2),
    "logistic": lambda x: _moments(x, 0, math.pi ** 2 / 3),
    "truncated_normal": lambda x: (_in(x, -1.5, 2.0), _moments(x, *_truncnorm_moments(-1.5, 2.0))),
    "categorical": lambda x: _freqs(x, _P3),
    "categorical_axis0": lambda x: _freqs(x[:, 0], [0.1 / 0.6, 0.5 / 0.6]),
    "categorical_norep": lambda x: all(len(set(c.tolist())) == 4 and set(c.tolist()) <= set(range(6)) for c in x.T),
    "choice": lambda x: [_freqs(x[i] - 3 * i, [1 / 3] * 3) for i in range(4)],
    "choice_p": lambda x: _freqs(x, _P3),
    "choice_p_norep": lambda x: len(set(x.tolist())) == 3,
    "permutation": lambda x: _is_perm(x, 10),
    "permutation_axis1": lambda x: all(_is_perm(r - 4 * i, 4) for i, r in enumerate(x))
    and len({tuple(r - 4 * i) for i, r in enumerate(x)}) == 1,
    "permutation_independent": lambda x: all(_is_perm(r - 4 * i, 4) for i, r in enumerate(x)),
    "gamma": lambda x: [_moments(x[:, i], a, a) for i, a in enumerate(_ALPHA)],
    "beta": lambda x: (_in(x, 0, 1, True), _moments(x, 0.4, 0.04)),
    "dirichlet": lambda x: (np.testing.assert_allclose(x.sum(-1), 1, rtol=1e-5),
                            [_moments(x[:, i], a / 6, a * (6 - a) / 252) for i, a in enumerate([1, 2, 3])]),
    "poisson": lambda x: (_in(x, 0, np.inf), [_moments(x[:, i], lam, lam) for i, lam in enumerate([3, 15, 200])]),
}


@pytest.mark.parametrize("name", list(STATS))
def test_statistics(name):
    result = STATS[name](draw(name))
    for r in (result if isinstance(result, (tuple, list)) else [result]):
        assert r is not False, name


def test_multivariate_normal_statistics():
    x = draw("multivariate_normal").astype(np.float64)
    _moments(x[:, 0], 1.0, 2.0)
    _moments(x[:, 1], -1.0, 1.0)
    np.testing.assert_allclose(np.cov(x.T), _COV, atol=0.15)


def test_multivariate_normal_eigh_and_svd():
    """JAX's factors for method="eigh" and "svd" (v * sqrt(w), u * sqrt(s)) applied to JAX's normals; the
    factor's column signs are the eigensolver's, so the samples equal JAX's only up to them."""
    k, mean = sr.PRNGKey(SEED), np.array([1.0, -1.0], np.float32)
    z = np.asarray(sr.normal(k, (N, 2)), np.float64)
    (w, v), (u, s, _) = stagec.jit(lambda c: (snp.linalg.eigh(c), snp.linalg.svd(c)))(_COV)  # one module
    w, v, u, s = (np.asarray(t, np.float64) for t in (w, v, u, s))
    for method, f in (("eigh", v * np.sqrt(w)), ("svd", u * np.sqrt(s))):
        x = np.asarray(sr.multivariate_normal(k, mean, _COV, (N,), method=method), np.float64)
        np.testing.assert_allclose(f @ f.T, _COV, atol=1e-5)
        np.testing.assert_allclose(x, mean + z @ f.T, atol=2e-5)
        np.testing.assert_allclose(x.mean(0), mean, atol=0.1)
        np.testing.assert_allclose(np.cov(x.T), _COV, atol=0.15)
        if method == "eigh":  # JAX's eigh factors the symmetrized matrix (its svd takes the matrix as is)
            skewed = _COV + np.array([[0, 0.25], [-0.25, 0]], np.float32)
            np.testing.assert_array_equal(sr.multivariate_normal(k, mean, skewed, (N,), method=method), x)


# ---------------------------------------------------------------- keys


def test_split_shapes_and_typed_keys():
    k = sr.PRNGKey(SEED)
    assert sr.split(k).shape == (2, 2) and sr.split(k, (3, 2)).shape == (3, 2, 2)
    t = sr.key(SEED)
    assert isinstance(t, sr.PRNGKeyArray) and t.shape == () and str(t.dtype) == "key<fry>" and "key<fry>" in repr(t)
    ts = sr.split(t, (3, 2))
    assert isinstance(ts, sr.PRNGKeyArray) and ts.shape == (3, 2) and len(ts) == 3
    data = sr.key_data(ts)
    assert data.shape == (3, 2, 2) and data.dtype == np.uint32
    np.testing.assert_array_equal(data, draw("split"))
    np.testing.assert_array_equal(sr.key_data(ts[1, 0]), draw("split")[1, 0])
    np.testing.assert_array_equal(sr.key_data(ts[..., 1]), draw("split")[:, 1])
    a, b = sr.split(t)
    np.testing.assert_array_equal(sr.uniform(b, (N,)), sr.uniform(sr.split(k)[1], (N,)))
    assert bool(sr.wrap_key_data(sr.key_data(t)) == t) and bool(sr.fold_in(t, 12345) != t)
    np.testing.assert_array_equal(sr.key_data(sr.fold_in(t, 12345)), draw("fold_in"))
    assert sr.key_impl(t) == sr.key_impl(k) == "threefry2x32"


def test_fold_in_data():
    k = sr.PRNGKey(SEED)
    np.testing.assert_array_equal(sr.fold_in(k, 12345), draw("fold_in"))
    np.testing.assert_array_equal(sr.fold_in(k, np.uint32(12345)), draw("fold_in"))
    np.testing.assert_array_equal(sr.fold_in(k, snp.asarray(12345)), draw("fold_in"))
    assert not np.array_equal(sr.fold_in(k, 1), sr.fold_in(k, 2))


def test_eager_split_and_fold_in_hash_on_the_host_with_the_kernels_words(monkeypatch):
    # An eager split (up to `HOST_KEYS` keys) or fold_in of a concrete key hashes with Python's integers, no kernel
    # (the samplers' kernel paths raise here), and gives the jitted kernel's words for every key word, key count
    # and message kind
    rng = np.random.default_rng(5)
    keys = [np.array(w, np.uint32) for w in ([0, 0], [2**32 - 1, 2**32 - 1], *rng.integers(0, 2**32, (6, 2)))]
    counts = (1, 2, (2, 1), sr.HOST_KEYS)
    messages = (0, 7, np.uint32(2**32 - 1), True, snp.asarray(np.int32(-5)), snp.asarray(np.uint32(2**31)))
    with monkeypatch.context() as mp:
        for name in ("_sample", "_sample_flat"):
            mp.setattr(sr, name, lambda *a: pytest.fail("an eager split or fold_in took a kernel"))
        eager = [([sr.split(k, n) for n in counts], [sr.fold_in(k, m) for m in messages]) for k in keys]
    jit_split = stagec.jit(lambda k: [sr.split(k, n) for n in counts])
    jit_fold = stagec.jit(lambda k, *ms: [sr.fold_in(k, m) for m in ms])
    for k, (splits, folds) in zip(keys, eager):
        for got, want in zip(splits + folds, jit_split(k) + jit_fold(k, *messages)):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["randint_bounds", "x64_randint", "permutation_independent", "bits_u8", "split",
                                  "uniform", "x64_uniform"])
def test_eager_integer_kernel_first_computes_on_the_host(name, monkeypatch):
    # A sampler whose kernel is integer arithmetic, data movement and sorts (each NumPy rule gives its kernel's
    # bits; uniform's default bounds: the floats' bits made by integer steps) runs on the host by those rules: called
    # once, it compiles nothing; from its second call its kernel compiles meanwhile (an empty cache: no wait for a
    # compile), then answers: JAX's stored values every time
    from stagec import eager
    from stagec.primitives import control_flow
    rules = []
    host = control_flow.cond_p.host
    monkeypatch.setattr(control_flow.cond_p, "host", lambda *a, **k: rules.append(1) or host(*a, **k))
    old = stagec.config.persistent_cache
    stagec.config.update("persistent_cache", False)
    eager.clear_cache()
    try:
        with _x64(name.startswith("x64_")):
            call, want = CASES[name][0], VECTORS["cases"][name]["sha256"]
            digest = lambda: hashlib.sha256(bit_view(np.asarray(call(sr, sr.PRNGKey(SEED)))).ravel().tobytes()).hexdigest()
            assert digest() == want and rules == [1]
            assert not eager._later.queued  # (one call: no compile)
            assert digest() == want and rules == [1, 1]  # (the rule again, the kernel queued)
            assert stagec.wait_for_compiles(300)
            assert digest() == want and rules == [1, 1]  # (the kernel's call)
    finally:
        stagec.config.update("persistent_cache", old)
        eager.clear_cache()


def test_jit_matches_eager():
    """Keys as jit arguments (legacy and typed), as constants and made from a traced seed; a loop (poisson)
    and a sort of a constant (permutation of a NumPy array) under jit. One module for all."""
    lam = np.array([3.0, 15.0, 200.0], np.float32)
    x = np.arange(12).reshape(3, 4)

    def draws(k, t, seed):
        return {"split": sr.split(k, (3, 2)), "uniform": sr.uniform(k, (N,)), "normal": sr.normal(k, (N,)),
                "poisson": sr.poisson(k, lam, (700, 3)), "split_typed": sr.key_data(sr.split(t, (3, 2))),
                "permutation_independent": sr.permutation(k, x, axis=1, independent=True),
                "seeded": sr.PRNGKey(seed), "const": sr.uniform(const, (N,)), "typed_out": sr.split(t, (3, 2))}
    const = sr.PRNGKey(SEED)
    got = stagec.jit(draws)(sr.PRNGKey(SEED), sr.key(SEED), SEED)
    for name in ("split", "uniform", "normal", "poisson", "split_typed", "permutation_independent"):
        np.testing.assert_array_equal(got[name], draw(name), err_msg=name)
    np.testing.assert_array_equal(got["seeded"], const)
    np.testing.assert_array_equal(got["const"], draw("uniform"))
    typed_out = got["typed_out"]  # (a typed key out of the jitted function)
    assert isinstance(typed_out, sr.PRNGKeyArray) and typed_out.shape == (3, 2)
    np.testing.assert_array_equal(sr.key_data(typed_out), draw("split"))


def test_eager_calls_reuse_their_trace_only_for_equal_statics():
    from stagec.random import _STAGED
    k = sr.PRNGKey(SEED)
    sr.gumbel(k, (256,), mode="high")
    n = len(_STAGED)
    again = sr.gumbel(k, (256,), mode="high")  # same function, statics and argument types: no new trace
    low = sr.gumbel(k, (256,), mode="low")  # another static: traced anew
    assert len(_STAGED) == n + 1
    np.testing.assert_array_equal(again, draw("gumbel_high"))
    np.testing.assert_array_equal(low, draw("gumbel")[:256])


def test_eager_samplers_that_make_arrays_inside_are_traced_once(monkeypatch):
    """A sampler whose trace makes Arrays from its statics (`snp.zeros(())` of a scalar draw's loop) has them as
    constants of its kernel, traced once: as captures they made every call trace again (poisson of shape () 4 ms a
    call, 42 us now). Values: poisson's and binomial's as the stored vectors' (their heads)."""
    import stagec.random as R
    traces = []
    monkeypatch.setattr(R, "trace_subgraph", lambda *a: traces.append(1) or trace_subgraph(*a))
    k = sr.PRNGKey(SEED)
    lam = np.array([3.0, 15.0, 200.0], np.float32)
    firsts = [np.asarray(sr.poisson(k, lam)), np.asarray(sr.binomial(k, 8.0, 0.5, ())), np.asarray(sr.poisson(k, 3.0))]
    n = len(traces)
    for _ in range(3):
        again = [np.asarray(sr.poisson(k, lam)), np.asarray(sr.binomial(k, 8.0, 0.5, ())), np.asarray(sr.poisson(k, 3.0))]
        for a, b in zip(again, firsts):
            np.testing.assert_array_equal(a, b)
    assert len(traces) == n
    # (JAX 0.10.2's `jax.random.poisson(PRNGKey(42), lam)` and of 3.0: the rejection loop's draws depend on the shape)
    assert firsts[0].tolist() == [6, 9, 199] and firsts[2] == 6
    np.testing.assert_array_equal(firsts[1], draw("binomial_inversion")[0])  # (value i is counter i's)


# The cases' samplers with another shape (their other arguments as in tests/random_cases.py)
SHAPED = {"uniform": lambda k, s: sr.uniform(k, s), "bits": lambda k, s: sr.bits(k, s),
          "randint": lambda k, s: sr.randint(k, s, -5, 17), "bernoulli": lambda k, s: sr.bernoulli(k, 0.3, s),
          "normal": lambda k, s: sr.normal(k, s), "truncated_normal": lambda k, s: sr.truncated_normal(k, -1.5, 2.0, s),
          "exponential": lambda k, s: sr.exponential(k, s), "logistic": lambda k, s: sr.logistic(k, s)}


_JITTED_SHAPES = ((28, 28), (1500,))


@functools.cache
def _jitted_shaped() -> dict:
    """{(name, shape): the jitted draw} of every `SHAPED` sampler at `_JITTED_SHAPES`, all in one module (each was
    `stagec.jit(lambda k: SHAPED[name](k, s))(sr.PRNGKey(SEED))` alone)."""
    keys = [(name, s) for name in SHAPED for s in _JITTED_SHAPES]
    got = stagec.jit(lambda k: [SHAPED[name](k, s) for name, s in keys])(sr.PRNGKey(SEED))
    return dict(zip(keys, got))


@pytest.mark.parametrize("name", list(SHAPED))
def test_eager_draws_of_small_shapes_share_a_kernel(name):
    # An eager draw of a small shape draws a power of two of values and keeps the first: one traced kernel serves
    # the shapes of a bucket (here 5 shapes of 1024 values or fewer), and value i is JAX's value i whatever the
    # shape (threefry partitionable: the stored draw of 2000 values), and the jitted draw's
    from stagec.random import _STAGED
    whole = draw(name)  # (2000 values, eager: from the bucket of 2048)
    before = len(_STAGED)
    got = {s: np.asarray(SHAPED[name](sr.PRNGKey(SEED), s)) for s in [(3, 5), (10,), (512,), (28, 28), (32, 32)]}
    assert len(_STAGED) - before <= 1, "one traced kernel for the bucket of 1024"
    got[(1500,)] = np.asarray(SHAPED[name](sr.PRNGKey(SEED), (1500,)))
    for s, g in got.items():
        assert g.shape == s
        assert_same(g.ravel(), whole[:g.size], CASES[name][1], f"{name} {s}")
        if s in _JITTED_SHAPES:  # (a view of the bucket's buffer; a view of 2048)
            jitted = _jitted_shaped()[name, s]
            np.testing.assert_array_equal(bit_view(g), bit_view(np.asarray(jitted)), err_msg=f"{name} {s} jitted")


def test_repeated_eager_draws_take_their_kept_steps_and_a_setting_change_drops_them():
    # A repeated eager draw runs the steps its first call decided (`random._DRAWS`: the bucket's kernel, its
    # slice and reshape). Each call, first or repeated, at sizes on both sides of the bucket bounds and in 2-D,
    # gives JAX's stored values; the steps are per sampler, statics and operand types, and a setting change drops
    # them (x64: another default dtype, another kernel).
    from stagec.random import _DRAWS
    k = sr.PRNGKey(SEED)
    for name, call in [("uniform", lambda s: sr.uniform(k, s)), ("bernoulli", lambda s: sr.bernoulli(k, 0.3, s)),
                       ("normal", lambda s: sr.normal(k, s))]:
        rec, kind = VECTORS["cases"][name], CASES[name][1]
        dt = np.dtype(rec["dtype"])
        want = _from_bits(rec["head"], dt)
        for s in [(1,), (100,), (3, 5), (HEAD,), (1024,), (1025,)]:
            n = math.prod(s)
            for i in range(3):
                got = np.asarray(call(s))
                assert got.shape == s and got.dtype == dt
                assert_same(got.ravel()[:HEAD], want[:min(n, HEAD)], kind, f"{name} {s} call {i}")
    n = len(_DRAWS)
    assert n > 0
    sr.uniform(k, (100,), minval=np.float32(2.0))  # (another operand type: its own steps)
    assert len(_DRAWS) == n + 1
    assert np.asarray(sr.uniform(k, (100,), dtype=np.float16)).dtype == np.float16
    with _x64(True):
        assert len(_DRAWS) == 0
        wide = np.asarray(sr.uniform(k, (100,)))
        assert wide.dtype == np.float64 and len(_DRAWS) == 1
        np.testing.assert_array_equal(wide, np.asarray(stagec.jit(lambda k: sr.uniform(k, (100,)))(k)))
    assert np.asarray(sr.uniform(k, (100,))).dtype == np.float32


# (choice_p, permutation, beta, dirichlet, randint and fold_in as the stored-vector cases call them, with arguments
# of the same kinds as before: the same eager kernels, compiled once for both tests)
_EAGER_SAMPLERS = {
    "choice": lambda k: sr.choice(k, 10, (5,)), "choice_without_replacement": lambda k: sr.choice(k, 10, (5,), False),
    "choice_p": lambda k: CASES["choice_p"][0](sr, k),
    "poisson": lambda k: sr.poisson(k, 3.0, (10,)), "permutation": lambda k: CASES["permutation"][0](sr, k),
    "gamma": lambda k: sr.gamma(k, 2.5, (100,)), "beta": lambda k: CASES["beta"][0](sr, k),
    "dirichlet": lambda k: CASES["dirichlet"][0](sr, k),
    "categorical": lambda k: sr.categorical(k, np.zeros((10, 5), np.float32)),
    "randint": lambda k: CASES["randint"][0](sr, k), "t": lambda k: sr.t(k, 3.0, (10,)),
    "orthogonal": lambda k: sr.orthogonal(k, 3), "fold_in": lambda k: CASES["fold_in"][0](sr, k),
    "multivariate_normal": lambda k: sr.multivariate_normal(k, np.zeros(2, np.float32), np.eye(2, dtype=np.float32))}


@pytest.mark.parametrize("name", list(_EAGER_SAMPLERS))
def test_an_eager_sampler_is_traced_once_for_its_repeated_calls(name, monkeypatch):
    # A kernel whose trace captures a concrete Array (`snp.asarray(0)` made inside it: choice's randint bounds,
    # poisson's loop counter) is not kept: each call traced it again (choice 5 ms a call, poisson 10 ms).
    traced = []
    trace = sr.trace_subgraph
    monkeypatch.setattr(sr, "trace_subgraph", lambda *a, **kw: traced.append(1) or trace(*a, **kw))
    call = _EAGER_SAMPLERS[name]
    first = np.asarray(call(sr.PRNGKey(SEED)))
    n = len(traced)
    for seed in (SEED, SEED + 1):
        again = np.asarray(call(sr.PRNGKey(seed)))
    assert len(traced) == n, f"{name}: traced again on a repeated call"
    np.testing.assert_array_equal(np.asarray(call(sr.PRNGKey(SEED))), first)
    assert not np.array_equal(again, first) or again.size < 3


def test_eager_splits_share_a_kernel():
    from stagec.random import _STAGED
    before = len(_STAGED)
    keys = {n: np.asarray(sr.split(sr.PRNGKey(SEED), n)) for n in (2, 3, 5)}
    assert len(_STAGED) - before <= 1
    np.testing.assert_array_equal(keys[3], draw("split").reshape(6, 2)[:3])  # JAX's (3, 2) split, flat
    jitted = stagec.jit(lambda k: {n: sr.split(k, n) for n in keys})(sr.PRNGKey(SEED))  # (one module for the three)
    for n, k in keys.items():
        np.testing.assert_array_equal(k, np.asarray(jitted[n]), err_msg=str(n))


def test_shuffle_is_deprecated():
    x = np.arange(12).reshape(3, 4)
    with pytest.warns(FutureWarning, match="permutation"):
        got = sr.shuffle(sr.PRNGKey(SEED), x, axis=1)
    np.testing.assert_array_equal(got, draw("permutation_independent"))


# ---------------------------------------------------------------- errors, as JAX raises them

K = np.array([0, 42], np.uint32)
ERRORS = [
    (lambda: sr.uniform(np.zeros(3, np.uint32)), TypeError, "shape to end with"),
    (lambda: sr.uniform(np.zeros(2, np.float32)), TypeError, "dtype = uint32"),
    (lambda: sr.uniform(3), TypeError, "ndim, shape, and dtype"),
    (lambda: sr.uniform([0, 0]), TypeError, "unexpected PRNG key type"),
    (lambda: sr.normal(sr.split(K)), ValueError, "accepts a single key"),
    (lambda: sr.split(sr.split(sr.key(0))), ValueError, "split accepts a single key"),
    (lambda: sr.fold_in(K, np.array([1, 2])), TypeError, "accepts a scalar"),
    (lambda: sr.fold_in(K, -1), OverflowError, "out of bounds"),
    (lambda: sr.uniform(K, (3,), np.int32), ValueError, "must be a float dtype"),
    (lambda: sr.uniform(K, (3,), minval=np.zeros(4)), TypeError, "minval of shape"),
    (lambda: sr.normal(K, (2.5,)), TypeError, "concrete values of integer type"),
    (lambda: sr.normal(K, (-1,)), ValueError, "negative dimension"),
    (lambda: sr.randint(K, (3,), 0, 5, np.float32), TypeError, "only accepts integer dtypes"),
    (lambda: sr.bits(K, (3,), np.int32), ValueError, "unsigned int dtype"),
    (lambda: sr.gamma(K, np.ones(3), (2,)), ValueError, "incompatible"),
    (lambda: sr.bernoulli(K, 1), TypeError, "floating dtype"),
    (lambda: sr.choice(K, 3, (5,), replace=False), ValueError, "larger sample"),
    (lambda: sr.choice(K, 3, 5), TypeError, "must be a sequence"),
    (lambda: sr.choice(K, 3, (2,), p=np.ones(4) / 4), ValueError, "p must be None or a 1D vector"),
    (lambda: sr.categorical(K, np.zeros((2, 3)), shape=(4, 2), replace=False), ValueError, "cannot exceed"),
    (lambda: sr.permutation(K, 2.5), TypeError, "integer or at least 1-dimensional"),
    (lambda: sr.multivariate_normal(K, np.zeros(2), np.eye(3)), ValueError, r"cov.shape == \(..., n, n\)"),
    (lambda: sr.multivariate_normal(K, np.zeros(2), np.eye(2), method="qr"), ValueError, "method must be one of"),
    (lambda: sr.gumbel(K, mode="x"), ValueError, "valid mode"),
    (lambda: sr.PRNGKey(1.5), TypeError, "must be an integer"),
    (lambda: sr.PRNGKey(np.array([1, 2])), TypeError, "scalar seed"),
    (lambda: sr.PRNGKey(sr.key(0)), TypeError, "given a PRNG key"),
    (lambda: sr.key(0, impl="rbg"), NotImplementedError, "threefry2x32"),
]


@pytest.mark.parametrize("call,exc,match", ERRORS)
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# ---------------------------------------------------------------- the stand-ins for missing primitives


def test_special_functions():
    f = stagec.jit(lambda y, x, z: (stagec.lax.erf_inv(y), stagec.lax.lgamma(x), _special.next_up(z),
                                    _special.next_down(z)))
    y = np.array([-0.999, -0.5, -1e-6, 0.0, 0.3, 0.9, 0.99999, 1.0, -1.0], np.float32)
    x = np.array([0.1, 0.5, 1.0, 2.5, 7.0, 33.0, -0.5, -2.5], np.float32)
    tiny = np.finfo(np.float32).tiny
    z = np.array([1.0, -1.0, 2.5, -3e-20, 1e30, 3.4e38, np.inf, -np.inf, -1.5 * tiny, 1.5 * tiny, 3e-37, -1e-31],
                 np.float32)
    ei, lg, up, down = (np.asarray(v) for v in f(y, x, z))
    np.testing.assert_allclose([math.erf(v) for v in ei[1:-2].astype(np.float64)], y[1:-2], rtol=2e-6, atol=1e-7)
    assert ei[-2] == np.inf and ei[-1] == -np.inf
    np.testing.assert_allclose(lg, [math.lgamma(v) for v in x.astype(np.float64)], rtol=2e-6, atol=2e-6)
    np.testing.assert_array_equal(up, np.nextafter(z, np.float32(np.inf)))
    np.testing.assert_array_equal(down, np.nextafter(z, np.float32(-np.inf)))


# ---------------------------------------------------------------- under vmap and grad, where JAX's work


def test_vmap_over_keys_gives_jax_numbers():
    keys = sr.split(sr.PRNGKey(0), 2)
    draw = lambda k: (sr.normal(k, (3,)), sr.bits(sr.fold_in(k, 7), (2,)))
    got, loop = stagec.jit(lambda ks: (stagec.vmap(draw)(ks), [draw(ks[i]) for i in range(len(keys))]))(keys)
    for i, g in enumerate(got):  # a batched sampler draws what the samplers draw one key at a time
        np.testing.assert_array_equal(np.asarray(g), np.stack([np.asarray(row[i]) for row in loop]))
    if jr is not None:
        want = jax.vmap(lambda k: jr.normal(k, (3,)))(jr.split(jr.PRNGKey(0), 2))
        np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want), rtol=1e-6, atol=1e-6)
    new = sr.key_data(stagec.vmap(sr.split)(sr.split(sr.key(1), 3)))
    assert new.shape == (3, 2, 2)
    np.testing.assert_array_equal(new[1], sr.key_data(sr.split(sr.split(sr.key(1), 3)[1])))


def test_grad_through_reparameterized_samplers():
    k = sr.PRNGKey(3)
    z = np.asarray(sr.normal(k, (3,)))
    u = np.asarray(sr.uniform(k, (3,)))  # minval + (maxval - minval) * u: d/dminval = 1 - u

    def f(s, m, lo):
        return snp.sum((m + s * sr.normal(k, (3,))) ** 2) + snp.sum(sr.uniform(k, (3,), minval=lo, maxval=3.0))
    g = stagec.jit(stagec.grad(f, argnums=(0, 1, 2)))(2.0, 0.5, 1.0)
    np.testing.assert_allclose([g[0], g[1], g[2]], [np.sum(2 * (0.5 + 2 * z) * z), np.sum(2 * (0.5 + 2 * z)),
                                                    np.sum(1 - u)], rtol=1e-5)


# JAX 0.10.2's values for the gradients below (PRNGKey(3); `jax` reproduces them where installed)
_GAMMA_GRADS = {
    "gamma": [0.56769073, 2.3236415, 8.209445, 7.2256217],
    "loggamma": [27.947556, 8.20557, 2.0469294, 0.9138195],
    "beta_a": [0.006885987, 0.37876695, 0.31015223, 0.10331344],
    "beta_b": [-0.00015584518, -0.87802213, -0.5762709, -0.1782664],
    "dirichlet": [-0.10481406, -0.15174976, -0.12281428, 0.054092642],
    "grad_of_vmap": [0.4993799, 0.6553295, 1.8887746, 3.310226],
    "vmap_of_grad": [0.4993799, 0.6553295, 1.8887746, 3.310226],
}


def test_gamma_family_grads_match_jax():
    """gamma, loggamma, beta and dirichlet differentiate w.r.t. their shape parameters by JAX's implicit
    reparameterization; grad(vmap) and vmap(grad) of gamma with batched alpha too. All in one jitted module, as
    JAX's side is (eager, each op compiled: 60 compiles; the eager gradient has its own test below)."""
    k, a, b = sr.PRNGKey(3), _ALPHA, np.array([2.0, 0.7, 1.5, 4.0], np.float32)
    w = np.arange(1.0, 5.0, dtype=np.float32)

    def grads(m, r, a, b):
        return (m.grad(lambda a: (r.gamma(k, a, (2, 4)) * w).sum())(a),
                m.grad(lambda a: (r.loggamma(k, a, (2, 4)) * w).sum())(a),
                *m.grad(lambda a, b: (r.beta(k, a, b) * w).sum(), (0, 1))(a, b),
                m.grad(lambda a: (r.dirichlet(k, a, (2,)) * w).sum())(a),
                m.grad(lambda a: (m.vmap(lambda x: r.gamma(k, x))(a) * w).sum())(a),
                m.vmap(m.grad(lambda x: r.gamma(k, x)))(a) * w)
    got = [np.asarray(g) for g in stagec.jit(lambda a, b: grads(stagec, sr, a, b))(a, b)]
    for (name, want), g in zip(_GAMMA_GRADS.items(), got):
        np.testing.assert_allclose(g, want, rtol=2e-5, atol=1e-7, err_msg=name)
    if jax is not None:
        k = jr.PRNGKey(3)
        for g, t in zip(got, jax.jit(lambda a, b: grads(jax, jr, a, b))(a, b)):  # one XLA module (op by op: 2x CPU)
            np.testing.assert_allclose(g, np.asarray(t), rtol=2e-5, atol=1e-7)


def test_eager_grad_of_a_scalar_gamma_matches_jax():
    """Eager control flow compiles with stagec's passes, as jit does: IREE rejected the scalar sampler's
    derivative (a `cond` holding while loops) as a one-op module ("circular dependency" in stream partitioning).
    JAX 0.10.2 gives 0.9656761884689331 for this key and alpha."""
    f = lambda r, a: r.gamma(r.PRNGKey(0), a).sum()
    got = float(stagec.grad(lambda a: f(sr, a))(np.float32(2.0)))
    np.testing.assert_allclose(got, 0.9656761884689331, rtol=2e-6)
    if jax is not None:
        np.testing.assert_allclose(got, float(jax.grad(lambda a: f(jr, a))(np.float32(2.0))), rtol=2e-6)


def test_gamma_grad_keeps_the_cdf_fixed():
    """d sample / d alpha = -(dP/dalpha) / (dP/dx) at the sample (P the regularized incomplete gamma
    function): the sample moves with alpha at a fixed quantile, over the series and continued-fraction
    ranges, in float64."""
    special = pytest.importorskip("scipy.special")
    k, a = sr.PRNGKey(1), np.array([0.05, 0.3, 1.0, 2.5, 10.0, 40.0, 300.0])
    with _x64(True):
        x, g = (np.asarray(v) for v in stagec.jvp(lambda a: sr.gamma(k, a, (3, 7), dtype=np.float64), (a,),
                                                  (np.ones(7),)))
    h = 1e-6 * a
    dp_da = (special.gammainc(a + h, x) - special.gammainc(a - h, x)) / (2 * h)
    dp_dx = np.exp((a - 1) * np.log(x) - x - special.gammaln(a))
    np.testing.assert_allclose(g, -dp_da / dp_dx, rtol=1e-6)


@pytest.mark.parametrize("n", [sr.GAMMA_LANES_MAX, sr.GAMMA_LANES_MAX + 1])
def test_gamma_draws_of_either_loop_are_jax_draws(n):
    """An eager call of up to `GAMMA_LANES_MAX` values steps each lane through JAX's hashes in one loop; larger ones
    and jit run JAX's batched loops: JAX's draws either way (16 eps: IREE's and XLA's log and erf_inv differ in their
    last bits), gamma and loggamma, alpha from 0.05 (boosted) to 8; eager and jit bit for bit alike."""
    if jax is None:
        pytest.skip("needs JAX")
    a = np.linspace(0.05, 8.0, n).astype(np.float32)
    if n == sr.GAMMA_LANES_MAX:  # (one module for both samplers)
        jitted = stagec.jit(lambda k, a: {name: getattr(sr, name)(k, a) for name in ("gamma", "loggamma")})(
            sr.PRNGKey(11), a)
    for name in ("gamma", "loggamma"):
        want = np.asarray(getattr(jr, name)(jr.PRNGKey(11), a))
        got = np.asarray(getattr(sr, name)(sr.PRNGKey(11), a))
        assert_same(got, want, "close", f"{name} of {n}")
        if n == sr.GAMMA_LANES_MAX:
            np.testing.assert_array_equal(got.view(np.uint32), np.asarray(jitted[name]).view(np.uint32), err_msg=name)


def test_bfloat16_gamma_draws_follow_jax_distribution():
    """bfloat16 gamma draws against JAX's (two-sample Kolmogorov-Smirnov, other keys: independent samples; the
    exact gamma law is no oracle here, as Marsaglia-Tsang in bfloat16 is off by itself: JAX's mean at alpha 2.5 is
    2.46-2.50). Their bits are not JAX's (about 55% agree, as many as with the batched loops' draws: where a value
    is rounded to bfloat16 differs; there IREE's dispatches rounded it)."""
    if jax is None:
        pytest.skip("needs JAX")
    stats = pytest.importorskip("scipy.stats")
    bf16 = ml_dtypes.bfloat16
    for alpha in (0.3, 2.5):
        x = np.asarray(sr.gamma(sr.PRNGKey(5), alpha, (8192,), dtype=bf16)).astype(np.float64)
        y = np.asarray(jr.gamma(jr.PRNGKey(6), alpha, (8192,), dtype=bf16)).astype(np.float64)
        assert stats.ks_2samp(x, y).pvalue > 1e-3, alpha


def test_draws_from_a_constant_key_are_left_to_run_time():
    """A key closed over under jit is a constant, and so is every value of the hash: without the barrier on the
    key words IREE hoisted the unrolled rounds' intermediates into globals and evaluated them inside iree-compile
    (JAX's VAE example's loss, a closed-over key: 67 globals, 43 of 48 s of its compile)."""
    import iree.compiler as ic
    f = stagec.jit(lambda x: x + sr.normal(sr.PRNGKey(SEED), (64, 10)))
    final = f.lower(np.zeros((64, 10), np.float32)).as_text("final")
    opt = ic.compile_str(final, target_backends=["llvm-cpu"], input_type="stablehlo",
                         extra_args=["--compile-to=global-optimization", "--iree-opt-const-eval=false"]).decode()
    hoisted = [ln for ln in opt.splitlines() if "util.global private @__hoisted" in ln and "64x10" in ln]
    assert hoisted == []
    np.testing.assert_array_equal(f(np.zeros((64, 10), np.float32)), sr.normal(sr.PRNGKey(SEED), (64, 10)))
    # and the draw under jit from a closed-over key is JAX's (the stored vector of the `normal` case)
    rec = VECTORS["cases"]["normal"]
    got = np.asarray(stagec.jit(lambda: CASES["normal"][0](sr, sr.PRNGKey(SEED)))())
    assert_same(got.ravel()[:HEAD], _from_bits(rec["head"], np.float32), "close", "normal under jit")


def test_bfloat16_uniform_rounds_as_jax_does():
    """JAX's bfloat16 uniform is float32 arithmetic rounded to bfloat16 after each operation (XLA on CPU); IREE
    dropped the rounding of the product and of the bounds, so draws over wide bounds were an ulp off, and an
    infinite bound gave +nan for JAX's -nan. JAX 0.10.2's bit patterns, eager and under jit."""
    bf16 = ml_dtypes.bfloat16
    lo = np.array([-1.2654214710460526e+21, -1.0, 0.0], np.float32)
    hi = np.array([[-7.037352358069927e+20], [3e4]], np.float32)
    cases = [(lambda k: sr.uniform(k, (8,), bf16, -6e4, 6e4), [51032, 51050, 18072, 50962, 17712, 50720, 50834, 50720]),
             (lambda k: sr.uniform(k, (2, 3), bf16, lo, hi), [[57991, 49024, 0], [57950, 18037, 17986]]),
             (lambda k: sr.uniform(k, (3,), bf16, -np.inf, np.inf), [65472, 65472, 65472])]
    jitted = stagec.jit(lambda k: [f(k) for f, _ in cases])(sr.PRNGKey(7))  # (one module for the three)
    for i, ((f, want), j) in enumerate(zip(cases, jitted)):
        for got in (f(sr.PRNGKey(7)), j):
            np.testing.assert_array_equal(np.asarray(got).view(np.uint16), want, err_msg=str(i))


def test_poisson_of_a_constant_half_rate_under_jit():
    """A closed-over float16 rate was converted to a host constant without comparisons (TypeError under jit)."""
    lam = np.array([0.0, 3.0, 9.99, 10.0, 1e4, 6e4], np.float16)
    want = [0, 1, 10, 16, 9984, 60016]  # JAX 0.10.2
    np.testing.assert_array_equal(stagec.jit(lambda k: sr.poisson(k, lam))(sr.PRNGKey(7)), want)
    np.testing.assert_array_equal(sr.poisson(sr.PRNGKey(7), lam), want)


def test_eager_poisson_and_gamma_of_a_scalar_take_their_own_kernels_and_give_the_same_values():
    """An eager poisson compiles only the loops its rates take (Knuth's below 10 or NaN, the rejection loop from 10,
    both for a mix), and an eager gamma of a scalar alpha broadcasts it over its padded lanes: the same values. Knuth's
    values and gamma's depend on their own rate and counter only: a column of the mixed `poisson` case (JAX's bits,
    sha256) and of the array `gamma` case. A rejection value is the last one accepted,
    so it depends on how long the loop runs: JAX 0.10.2's values for a constant rate."""
    assert [sr._poisson_branches(x) for x in (3.0, np.nan, 10.0, np.float64(10 - 1e-7), np.array([3.0, 30.0]))] \
        == ["knuth", "knuth", "rejection", "rejection", "both"]  # (9.9999999 is 10 in float32, as the kernel has it)
    assert sr._poisson_branches(stagec.device_put(np.float32(3))) == "both"  # (an Array's value is not read back)
    k = sr.PRNGKey(SEED)
    np.testing.assert_array_equal(sr.poisson(k, 3.0, (700, 3))[:, 0], draw("poisson")[:, 0])
    want = [34, 20, 32, 43, 36, 29, 34, 30, 26, 34, 30, 18, 24, 24, 26, 20, 32, 28, 32, 21, 42, 47, 33, 28, 46, 33, 31,
            30, 30, 39, 32, 24, 30, 28, 30, 26, 24, 38, 26, 29, 34, 31, 34, 28, 32, 30, 24, 44, 32, 24, 29, 23, 36, 33,
            22, 30, 36, 36, 34, 21, 40, 41, 26, 28]
    np.testing.assert_array_equal(sr.poisson(sr.PRNGKey(5), 30.0, (64,)), want)
    got = np.asarray(sr.gamma(k, _ALPHA[0], (499, 4)))  # (1996 values: 4 lanes past them)
    np.testing.assert_array_equal(got[:, 0].view(np.uint32), draw("gamma")[:499, 0].view(np.uint32))
