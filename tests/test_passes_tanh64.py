"""`mathlib-cpu`: on the CPU a float64 tanh is vectorizable arithmetic (not a libm call per element): within 3 ulps
of NumPy's (XLA's own is within 6), -0.0, +-1, NaN and the series/exp seam at |x| = 0.4 as libm gives them."""
from __future__ import annotations

import numpy as np
import pytest
from iree.compiler import ir

import stagec
import stagec.numpy as snp
from stagec import lax
from stagec.passes import REGISTRY, PassStats

pytestmark = pytest.mark.cpu_only  # (the CPU pipeline's `mathlib-cpu`)

RNG = np.random.default_rng(8)
X = np.concatenate([RNG.standard_normal(20000) * 3, RNG.uniform(-0.45, 0.45, 10000), RNG.uniform(-1e-4, 1e-4, 500),
                    RNG.uniform(0.399, 0.401, 2000), RNG.uniform(-25, 25, 2000),
                    [0.0, -0.0, 1e-300, -1e-300, 0.4, -0.4, np.nextafter(0.4, 0), 19.06, 20.0, 710.0, -1e300,
                     np.inf, -np.inf, np.nan]])


def _check(got: np.ndarray, x: np.ndarray) -> None:
    want = np.tanh(x)
    nonzero = np.isfinite(want) & (want != 0)
    ulps = np.abs(got[nonzero] - want[nonzero]) / np.spacing(np.abs(want[nonzero]))
    assert ulps.max() <= 3, f"{ulps.max()} ulps at x = {x[nonzero][ulps.argmax()]!r}"
    np.testing.assert_array_equal(got[~nonzero], want[~nonzero])  # zeros (their signs too) and NaN exactly
    assert (np.signbit(got[~nonzero]) == np.signbit(want[~nonzero])).all()


def test_float64_tanh_is_arithmetic_within_three_ulps(x64):
    f = stagec.jit(snp.tanh)
    low = f.lower(X)
    assert "stablehlo.tanh" in low.as_text("dce") and "stablehlo.tanh" not in low.as_text("mathlib-cpu")
    _check(np.asarray(f(X)), X)


def test_float64_tanh_inside_loops_and_the_float32_one_left_alone(x64):
    x = X[:64]
    f = stagec.jit(lambda v: lax.fori_loop(0, 2, lambda i, c: c + snp.tanh(v) * i, snp.zeros_like(v)))
    assert "stablehlo.tanh" not in f.lower(x).as_text("mathlib-cpu")
    _check(np.asarray(f(x)), x)
    assert "stablehlo.tanh" in stagec.jit(snp.tanh).lower(x.astype(np.float32)).as_text("mathlib-cpu")


def test_float64_tanh_gradient_through_the_rewrite(x64):
    x = np.array([-3.0, -0.5, -0.1, 0.0, 0.2, 0.39, 0.41, 2.0])
    got = np.asarray(stagec.jit(stagec.vmap(stagec.grad(snp.tanh)))(x))
    np.testing.assert_allclose(got, 1 - np.tanh(x) ** 2, rtol=1e-14, atol=1e-16)


@pytest.mark.parametrize("backend, rewritten", [("cpu", True), ("cuda", False)])
def test_tanh_f64_only_on_the_cpu(backend, rewritten, x64):
    low = stagec.jit(snp.tanh, backend=backend).lower(X[:8])
    assert ("mathlib-cpu" in low.stages()) == rewritten
    assert ("stablehlo.tanh" not in low.as_text("final")) == rewritten
    with ir.Context():
        module = ir.Module.parse(low.as_text("dce"))
        REGISTRY["mathlib-cpu"].run(module, PassStats("mathlib-cpu", backend))
        assert "stablehlo.tanh" not in str(module)
