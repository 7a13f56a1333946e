"""Sampler calls shared by tests/test_random.py and tests/data/make_random_vectors.py.

Each case is `(call, kind)`: `call(R, key)` draws with `R` = `stagec.random` or `jax.random` from
`key` = `R.PRNGKey(SEED)`; kind "exact" means bit for bit, "close" within a few ulps of max(|x|, 1)
(transcendental functions of IREE and XLA differ). Cases named `x64_*` run with 64-bit types enabled.
Elementwise samplers draw element i from counter i whatever the shape (threefry partitionable), so one
large draw serves both the stored-vector check (its first values) and the statistics.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

SEED = 42
N = 2000
HEAD = 16  # values stored per case

_P3 = np.array([0.1, 0.2, 0.7], np.float32)
_LOGITS = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32))
_COV = np.array([[2.0, 0.5], [0.5, 1.0]], np.float32)
_ALPHA = np.array([0.3, 1.0, 2.5, 10.0], np.float32)


def _typed(R, fn):
    """Run `fn` on a typed key of the same seed and return raw key data (typed keys are not arrays)."""
    return R.key_data(fn(R.key(SEED)))


CASES = {
    "bits": (lambda R, k: R.bits(k, (N,)), "exact"),
    "bits_u8": (lambda R, k: R.bits(k, (64,), np.uint8), "exact"),
    "split": (lambda R, k: R.split(k, (3, 2)), "exact"),
    "split_typed": (lambda R, k: _typed(R, lambda t: R.split(t, (3, 2))), "exact"),  # split's module
    "fold_in": (lambda R, k: R.fold_in(k, 12345), "exact"),
    "fold_in_split": (lambda R, k: R.split(R.fold_in(R.split(k)[1], 7)), "exact"),
    "uniform": (lambda R, k: R.uniform(k, (N,)), "exact"),
    "uniform_range": (lambda R, k: R.uniform(k, (4, 3), minval=np.array([-1.0, 2.0, 5.0], np.float32),
                                             maxval=7.0), "exact"),
    "uniform_f16": (lambda R, k: R.uniform(k, (256,), np.float16), "exact"),
    "uniform_bf16": (lambda R, k: R.uniform(k, (256,), ml_dtypes.bfloat16, -2.0, 2.0), "exact"),
    "normal": (lambda R, k: R.normal(k, (N,)), "close"),
    "normal_c64": (lambda R, k: R.normal(k, (500,), np.complex64), "close"),
    "normal_bf16": (lambda R, k: R.normal(k, (256,), ml_dtypes.bfloat16), "close"),
    "randint": (lambda R, k: R.randint(k, (N,), -5, 17), "exact"),
    "randint_u8": (lambda R, k: R.randint(k, (64,), 0, 256, np.uint8), "exact"),
    "randint_bounds": (lambda R, k: R.randint(k, (500, 4), np.array([-2 ** 31, 10, 100, 7], np.int32),
                                              np.array([2 ** 31 - 1, 20, 200, 8], np.int32)), "exact"),
    "bernoulli": (lambda R, k: R.bernoulli(k, 0.3, (N,)), "exact"),
    "bernoulli_high": (lambda R, k: R.bernoulli(k, np.array([0.1, 0.9], np.float32), (32, 2), mode="high"), "exact"),
    "exponential": (lambda R, k: R.exponential(k, (N,)), "close"),
    "gumbel": (lambda R, k: R.gumbel(k, (N,)), "close"),
    "gumbel_high": (lambda R, k: R.gumbel(k, (256,), mode="high"), "close"),
    "laplace": (lambda R, k: R.laplace(k, (N,)), "close"),
    "logistic": (lambda R, k: R.logistic(k, (N,)), "close"),
    "truncated_normal": (lambda R, k: R.truncated_normal(k, -1.5, 2.0, (N,)), "close"),
    "categorical": (lambda R, k: R.categorical(k, np.log(_P3), shape=(N,)), "exact"),
    "categorical_axis0": (lambda R, k: R.categorical(k, _LOGITS, axis=0, shape=(50, 3)), "exact"),
    "categorical_norep": (lambda R, k: R.categorical(k, np.zeros((2, 6), np.float32), shape=(4, 2),
                                                     replace=False), "exact"),
    "choice": (lambda R, k: R.choice(k, np.arange(12.0, dtype=np.float32).reshape(4, 3), (N,), axis=1), "exact"),
    "choice_p": (lambda R, k: R.choice(k, 3, (N,), p=_P3), "exact"),
    "choice_p_norep": (lambda R, k: R.choice(k, 5, (3,), replace=False,
                                             p=np.array([0.1, 0.2, 0.3, 0.2, 0.2], np.float32)), "exact"),
    "permutation": (lambda R, k: R.permutation(k, 10), "exact"),
    "permutation_axis1": (lambda R, k: R.permutation(k, np.arange(12).reshape(3, 4), axis=1), "exact"),
    "permutation_independent": (lambda R, k: R.permutation(k, np.arange(12).reshape(3, 4), axis=1,
                                                           independent=True), "exact"),
    "gamma": (lambda R, k: R.gamma(k, _ALPHA, (500, 4)), "close"),
    "beta": (lambda R, k: R.beta(k, 2.0, 3.0, (N,)), "close"),
    "dirichlet": (lambda R, k: R.dirichlet(k, np.array([1.0, 2.0, 3.0], np.float32), (500,)), "close"),
    "poisson": (lambda R, k: R.poisson(k, np.array([3.0, 15.0, 200.0], np.float32), (700, 3)), "exact"),
    "multivariate_normal": (lambda R, k: R.multivariate_normal(k, np.array([1.0, -1.0], np.float32), _COV, (N,)),
                            "close"),
    # (counts: the inversion loop where n q <= 10, BTRS above, failures counted where p > 1/2; NaN, inf and 0 cases)
    "binomial": (lambda R, k: R.binomial(k, np.array([5.0, 40.0, 1000.0, 7.5], np.float32),
                                         np.array([0.3, 0.6, 0.25, 0.9], np.float32), (500, 4)), "exact"),
    "binomial_inversion": (lambda R, k: R.binomial(k, 8.0, 0.5, (256,)), "exact"),  # (eagerly one loop: n q <= 10)
    "binomial_edges": (lambda R, k: R.binomial(k, np.array([0, 1, -1, np.nan, np.inf, 20, 20, 1e4, 20], np.float32),
                                               np.array([0.5, 0, 0.5, 0.5, 0.3, -0.1, np.nan, 1, 1.5], np.float32)),
                       "exact"),
    "multinomial": (lambda R, k: R.multinomial(k, np.array([10.0, 300.0], np.float32),
                                               np.array([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]], np.float32)), "exact"),
    "x64_seeds": (lambda R, k: np.stack([np.asarray(R.PRNGKey(s)) for s in (-1, 2 ** 40 + 7, -(2 ** 40))]),
                  "exact"),
    "x64_bits": (lambda R, k: R.bits(k, (64,), np.uint64), "exact"),
    "x64_uniform": (lambda R, k: R.uniform(k, (256,), np.float64), "exact"),
    "x64_normal": (lambda R, k: R.normal(k, (256,), np.float64), "close"),
    "x64_randint": (lambda R, k: R.randint(k, (64,), -2 ** 40, 2 ** 40, np.int64), "exact"),
    "x64_binomial": (lambda R, k: R.binomial(k, 60.0, 0.35, (64,)), "exact"),
}

SEEDS_X32 = (0, 42, -1, 2 ** 31, 2 ** 32 + 5, 2 ** 40 + 7)  # Python ints are int32 without x64, as in JAX


def bit_view(x: np.ndarray) -> np.ndarray:
    """The values of `x` as unsigned integers of the same width (floats by their bit patterns)."""
    x = np.ascontiguousarray(x)
    if x.dtype == np.bool_:
        return x.astype(np.uint8)
    if x.dtype.kind == "c":
        x = x.view(np.dtype(f"f{x.dtype.itemsize // 2}"))
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))
