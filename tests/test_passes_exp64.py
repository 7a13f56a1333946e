"""`mathlib-cpu`: on the CPU a float64 exp is vectorizable arithmetic (not a libm call per element): within 1 ulp of
NumPy's where the result is normal, 0 below that (as every float64 product of IREE's and XLA's CPU code), inf,
0 and NaN where libm gives them."""
from __future__ import annotations

import numpy as np
import pytest
from iree.compiler import ir

import stagec
import stagec.numpy as snp
from stagec import lax
from stagec.passes import REGISTRY, PassStats

pytestmark = pytest.mark.cpu_only  # (the CPU pipeline's `mathlib-cpu`)

RNG = np.random.default_rng(7)
X = np.concatenate([RNG.uniform(-745.2, 709.8, 20000), RNG.standard_normal(5000), RNG.uniform(-1e-6, 1e-6, 500),
                    [0.0, -0.0, np.inf, -np.inf, np.nan, 709.78, 709.79, -708.39, -708.4, -745.13, 5e-324]])


def _check(got: np.ndarray, x: np.ndarray) -> None:
    with np.errstate(over="ignore"):
        want = np.exp(x)
    want = np.where(want < np.finfo(np.float64).tiny, 0.0, want)  # (subnormal results flush to 0)
    finite = np.isfinite(want) & (want > 0)
    assert (np.abs(got[finite] - want[finite]) <= np.spacing(want[finite])).all()
    np.testing.assert_array_equal(got[~finite], want[~finite])  # inf, 0 and NaN exactly


def test_float64_exp_is_arithmetic_within_one_ulp(x64):
    f = stagec.jit(snp.exp)
    low = f.lower(X)
    assert "stablehlo.exponential" in low.as_text("dce") and "stablehlo.exponential" not in low.as_text("mathlib-cpu")
    _check(np.asarray(f(X)), X)


def test_float64_exp_inside_loops_and_the_float32_one_left_alone(x64):
    x = X[:64]  # (finite results: exp(x) * 0 is 0 on the loop's first step)
    f = stagec.jit(lambda v: lax.fori_loop(0, 2, lambda i, c: c + snp.exp(v) * i, snp.zeros_like(v)))
    assert "stablehlo.exponential" not in f.lower(x).as_text("mathlib-cpu")
    _check(np.asarray(f(x)), x)
    x32 = X[:64].astype(np.float32)
    assert "stablehlo.exponential" in stagec.jit(snp.exp).lower(x32).as_text("mathlib-cpu")


@pytest.mark.parametrize("backend, rewritten", [("cpu", True), ("cuda", False)])
def test_exp_f64_only_on_the_cpu(backend, rewritten, x64):
    # (the pass itself rewrites wherever it runs: the CPU's pipeline names it, the GPUs' do not)
    low = stagec.jit(snp.exp, backend=backend).lower(X[:8])
    assert ("mathlib-cpu" in low.stages()) == rewritten
    assert ("stablehlo.exponential" not in low.as_text("final")) == rewritten
    with ir.Context():
        module = ir.Module.parse(low.as_text("dce"))
        REGISTRY["mathlib-cpu"].run(module, PassStats("mathlib-cpu", backend))
        assert "stablehlo.exponential" not in str(module)


def _ulps(got: np.ndarray, want: np.ndarray) -> float:
    """Largest distance in ulps where `want` is a normal number; elsewhere (0, +-1 and inf limits, NaN) exactly,
    subnormal values as 0."""
    normal = np.isfinite(want) & (np.abs(want) >= np.finfo(np.float64).tiny)
    rest = ~normal
    np.testing.assert_array_equal(got[rest], np.where(np.abs(want[rest]) < np.finfo(np.float64).tiny, 0.0, want[rest]))
    return (np.abs(got[normal] - want[normal]) / np.spacing(np.abs(want[normal]))).max()


Y = np.concatenate([RNG.standard_normal(20000) * 3, RNG.uniform(-0.6, 0.6, 10000), RNG.uniform(-1e-5, 1e-5, 500),
                    RNG.uniform(-800, 800, 5000), [0.0, -0.0, 1e-300, -1e-300, 0.5, -0.5, np.nextafter(0.5, 0), -708.5,
                                                   -709.5, -710.0, 709.7, 710.0, np.inf, -np.inf, np.nan]])


def test_float64_logistic_and_expm1_are_arithmetic_within_two_ulps(x64):
    # IREE lowers both to libm's scalar exp; here they are built on passes/exp64.py's exp (expm1 near 0: its series)
    for name, fn, ref, op in (("sigmoid", stagec.nn.sigmoid, lambda v: 1 / (1 + np.exp(-v)), "logistic"),
                              ("expm1", snp.expm1, np.expm1, "exponential_minus_one")):
        f = stagec.jit(fn)
        low = f.lower(Y)
        assert f"stablehlo.{op}" in low.as_text("dce") and f"stablehlo.{op}" not in low.as_text("mathlib-cpu"), name
        with np.errstate(over="ignore"):
            want = ref(Y)
        got = np.asarray(f(Y))
        assert _ulps(got, want) <= 2, name
        assert np.isnan(got[-1]), name
    [neg_zero] = np.flatnonzero((Y == 0) & np.signbit(Y))
    assert np.signbit(got[neg_zero]) and got[neg_zero] == 0  # expm1(-0.0) = -0.0 (the last one: expm1's)


def test_float64_exp_tanh_show_their_ops_and_give_the_same_bits_without_passes(x64):
    # mathlib-cpu is legalization: the StableHLO stage shows the user's ops, `passes="none"` runs it too (it gave libm's
    # exp before), and `fuse` leaves the ops to it (a cluster reading a reshape: IREE's math.exp otherwise)
    fns = (snp.exp, snp.expm1, snp.tanh, stagec.nn.sigmoid)
    f = lambda v: [g(v.reshape(-1)) * 2 for g in fns]  # noqa: E731
    x = Y[:10000].reshape(100, 100)
    text = stagec.jit(f).lower(x).as_text()
    assert all(f"stablehlo.{op}" in text for op in ("exponential", "exponential_minus_one", "tanh", "logistic"))
    default, none = stagec.jit(f)(x), stagec.jit(f, passes="none")(x)
    for a, b in zip(default, none):
        np.testing.assert_array_equal(np.asarray(a).view(np.uint64), np.asarray(b).view(np.uint64))
    got = np.asarray(none[0]) / 2
    _check(got, x.reshape(-1))
