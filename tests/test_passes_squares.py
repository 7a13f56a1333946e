"""`abs-squares`: the CPU pipeline puts `abs` between a square and the sum that reads it (IREE unrolls
sum(x * x) into scalar code); results unchanged, NaN included."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp

pytestmark = pytest.mark.cpu_only  # (the CPU pipeline's `abs-squares`: its stages exist on the cpu backend only)


SQUARES = {  # name -> (function, whether its sum reads a square it gets `abs` of)
    "sum(x**2)": (lambda np_, x: np_.sum(x ** 2), True),
    "norm": (lambda np_, x: np_.linalg.norm(x), True),
    "mean(square(x), 1)": (lambda np_, x: np_.mean(np_.square(x), axis=1), True),
    "sum(x * y)": (lambda np_, x: np_.sum(x * x[::-1]), False),
    "max(x * x)": (lambda np_, x: np_.max(x * x), False),
    # a row sum of a value computed from another reduction: the tuning spec's rows part, no abs
    "var(x, 1)": (lambda np_, x: np_.var(x, axis=1), False),
    "layernorm's variance": (lambda np_, x: np_.mean((x - np_.mean(x, -1, keepdims=True)) ** 2, -1), False),
    "var(x)": (lambda np_, x: np_.var(x), True),
    "std(x, 0)": (lambda np_, x: np_.std(x, 0), True),
}


@pytest.mark.parametrize("name", sorted(SQUARES))
def test_abs_squares_puts_abs_between_a_square_and_its_sum(name):
    # IREE's CPU codegen unrolls sum(x * x) into scalar code; sum(abs(x * x)) stays a vectorized reduction.
    fn, rewritten = SQUARES[name]
    x = np.random.default_rng(4).standard_normal((16, 40)).astype(np.float32)
    low = stagec.jit(lambda v: fn(snp, v)).lower(x)
    before, after = low.as_text("dce"), low.as_text("abs-squares")
    assert after.count("stablehlo.abs") - before.count("stablehlo.abs") == int(rewritten)
    stats = next(s for s in low.pass_stats if s.name == "abs-squares")
    assert stats.rewrites["abs-square"] == int(rewritten)
    run = low.compile()  # (the module the rewrite made, for both inputs)
    np.testing.assert_allclose(np.asarray(run(x)), fn(np, x.astype(np.float64)), rtol=1e-5)
    assert np.isnan(np.asarray(run(np.full(x.shape, np.nan, np.float32)))).all()


def test_abs_squares_only_on_the_cpu():
    for backend, want in (("cpu", 1), ("vulkan", 0)):
        low = stagec.jit(lambda v: snp.sum(v * v), backend=backend).lower(np.ones(8, np.float32))
        assert low.as_text("final").count("stablehlo.abs") == want, backend
