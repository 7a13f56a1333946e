"""`split-sums`: on the CPU a sum over all of a large array sums rows of 256-4096 elements, then the row sums (IREE
summed it in one sequential accumulator: float32 sums of 2**24 ones stopped at 2**24)."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp

pytestmark = pytest.mark.cpu_only  # (the CPU pipeline's `split-sums`)

RNG = np.random.default_rng(10)


def _stats(f, *x):
    return next(s for s in stagec.jit(f).lower(*x).pass_stats if s.name == "split-sums").rewrites["split-sum"]


def test_float32_sum_past_two_to_the_24_is_exact():
    x = np.ones(2 ** 24 + 1000, np.float32)
    assert float(stagec.jit(snp.sum)(x)) == 2 ** 24 + 1000  # (one accumulator: 16777216)


@pytest.mark.parametrize("name, fn, shape", [
    ("sum(x * x)", lambda np_, v: np_.sum(v * v), (1000, 1023)),
    ("var", lambda np_, v: np_.var(v), (1000, 1023)),
    ("sum(x**2 + sin x)", lambda np_, v: np_.sum(v ** 2 + np_.sin(v)), (1 << 20,)),
    ("mean of (n, 3)", lambda np_, v: np_.mean(v), (65536, 3)),
])
def test_whole_array_sums_are_rows_then_row_sums_and_accurate(name, fn, shape):
    # (offset from zero: a mean near 0 has no relative accuracy to check; the float32 reduction's rounding, which
    # differs between AVX2 and AVX-512, is a few 1e-9 of a mean of 0.002)
    x = (3 * RNG.standard_normal(shape) + 1).astype(np.float32)
    assert _stats(lambda v: fn(snp, v), x) >= 1
    got = float(stagec.jit(lambda v: fn(snp, v))(x))
    want = float(fn(np, x.astype(np.float64)))
    assert abs(got - want) <= 2e-6 * abs(want), (got, want)  # (one accumulator: 5e-4 for sum(x * x))


def test_integer_mean_and_sum():
    i = RNG.integers(0, 1000, (1000, 1023)).astype(np.int32)
    total, mean = stagec.jit(lambda v: (snp.sum(v), snp.mean(v)))(i)  # (one module)
    assert int(total) == int(i.sum())
    assert abs(float(mean) - i.astype(np.float64).mean()) <= 1e-6 * i.mean()


def test_small_partial_and_prime_sums_are_left_alone():
    assert _stats(snp.sum, np.ones(300, np.float32)) == 0  # small (no row of 256 to sum twice)
    assert _stats(lambda v: snp.sum(v, 1), np.ones((64, 1024), np.float32)) == 0  # not over all dimensions
    assert _stats(snp.sum, np.ones(65537, np.float32)) == 0  # no row length divides a prime
    assert _stats(snp.max, np.ones(1 << 16, np.float32)) == 0  # (a max has no rounding to bound)


@pytest.mark.parametrize("shape", [(500, 10), (1000, 16), (100, 100)])
def test_a_whole_sum_beside_a_sample_compiles_at_once(shape):
    """A VAE's KL term summed over a few thousand elements beside the sample it draws (bench_compile's `vae.loss`):
    IREE fused the whole sum into the sample's dispatch, which its CPU codegen could not distribute ("restricted to
    workgroup distributed contexts"), and the module compiled twice (the `no-aggressive-fusion` retry). Summed in
    rows first, it compiles at once. Against float64 NumPy, given the same normal draws."""
    from stagec import random

    def f(key, mu, h, w):
        s = stagec.nn.softplus(h)
        z = mu + snp.sqrt(s) * random.normal(key, mu.shape)
        return z @ w, snp.sum(1.0 + snp.log(s) - mu ** 2.0 - s)

    mu, h = RNG.standard_normal((2, *shape)).astype(np.float32)
    w = RNG.standard_normal((shape[1], 512)).astype(np.float32)
    key = random.PRNGKey(0)
    assert _stats(lambda *a: f(*a)[1], key, mu, h, w) >= 1
    c = stagec.jit(f).lower(key, mu, h, w).compile()
    assert c.variant == []
    out, kl = c(key, mu, h, w)
    s = np.logaddexp(0.0, h.astype(np.float64))
    noise = np.asarray(random.normal(key, shape), np.float64)
    np.testing.assert_allclose(float(kl), np.sum(1 + np.log(s) - mu.astype(np.float64) ** 2 - s), rtol=2e-5)
    np.testing.assert_allclose(np.asarray(out), (mu + np.sqrt(s) * noise) @ w, rtol=2e-4, atol=2e-3)
