"""`compare-clamped`: a float compare `x > c` beside `max(x, c)` compares the max (relu's mask in the backward pass
reads the activation); the same booleans, NaN and signed zeros included, and a relu training step that IREE 3.13
compiles data-tiled (without the rewrite its forward matmul fails there and the module is compiled unpacked)."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec.compiler.targets import TARGETS

pytestmark = pytest.mark.cpu_only  # (the CPU pipeline's `compare-clamped` and data tiling)

CASES = {  # name -> (function of x, rewrites expected)
    "x > 0 beside max(x, 0)": (lambda m, x: m.where(x > 0, m.maximum(x, 0.0) * 2, x), 1),
    "0 < x beside max(0, x)": (lambda m, x: m.where(0 < x, m.maximum(0.0, x) + 1, x), 1),
    "x < 1 beside min(x, 1)": (lambda m, x: m.where(x < 1.0, m.minimum(x, 1.0) - 3, x), 1),
    "max after the compare": (lambda m, x: m.where(x > 0.5, 1.0, 0.0) + m.maximum(x, 0.5), 1),
    "x >= 0 (not rewritten)": (lambda m, x: m.where(x >= 0, m.maximum(x, 0.0), -x), 0),
    "another bound (not rewritten)": (lambda m, x: m.where(x > 1.0, m.maximum(x, 0.0), -x), 0),
}
SPECIALS = np.array([np.nan, -np.nan, 0.0, -0.0, 0.5, 1.0, -1.0, np.inf, -np.inf], np.float32)
SUBNORMALS = np.array([1e-45, -1e-45, 1e-39], np.float32)  # (the CPU flushes them: no float64 oracle for those)


def _rewrites(low) -> int:
    return sum(next(s for s in low.pass_stats if s.name == "compare-clamped").rewrites.values())


@pytest.mark.parametrize("name", sorted(CASES))
def test_compare_clamped_rewrites(name):
    fn, want = CASES[name]
    assert _rewrites(stagec.jit(lambda v: fn(snp, v)).lower(np.zeros(8, np.float32))) == want


def test_compare_clamped_keeps_every_value():
    # every case in one module, subnormals included (one compile with the pass, one without)
    x = np.concatenate([SPECIALS, np.random.default_rng(0).standard_normal(53).astype(np.float32)])
    xs = np.concatenate([x, SUBNORMALS])
    names = sorted(CASES)
    every = lambda v: [CASES[n][0](snp, v) for n in names]  # noqa: E731
    f = stagec.jit(every)
    assert _rewrites(f.lower(xs)) == sum(CASES[n][1] for n in names)
    without = tuple(n for n in TARGETS["cpu"].pipeline.passes if n != "compare-clamped")
    for name, got, raw in zip(names, f(xs), stagec.jit(every, passes=without)(xs)):
        got, ref = np.asarray(got), CASES[name][0](np, x.astype(np.float64))
        np.testing.assert_allclose(got[:x.size], ref, rtol=1e-6, atol=0, err_msg=name)
        assert (np.signbit(got[:x.size]) == np.signbit(ref))[~np.isnan(ref)].all(), name
        assert got.tobytes() == np.asarray(raw).tobytes(), name  # the same bits as without the rewrite


def test_relu_gradient_reads_the_activation():
    # d/dw sum(relu(x @ w)^2): the mask compares the relu's result, and the gradient is right (float64 oracle)
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((5, 7)).astype(np.float32)
    f = stagec.jit(stagec.grad(lambda w: snp.sum(stagec.nn.relu(x @ w) ** 2)))
    text = f.lower(w).as_text("compare-clamped")
    assert _rewrites(f.lower(w)) == 1
    cmp = next(ln for ln in text.splitlines() if "stablehlo.compare" in ln)
    mx = next(ln for ln in text.splitlines() if "stablehlo.maximum" in ln)
    assert mx.split("=")[0].strip() in cmp
    z = x.astype(np.float64) @ w.astype(np.float64)
    np.testing.assert_allclose(np.asarray(f(w)), x.T.astype(np.float64) @ (2 * np.maximum(z, 0) * (z > 0)), rtol=1e-5)


def _relu_step(passes):
    def loss(p, x, y):
        (w1, b1), (w2, b2) = p
        return snp.mean((stagec.nn.relu(x @ w1 + b1) @ w2 + b2 - y) ** 2)

    def step(p, x, y):
        g = stagec.grad(loss)(p, x, y)
        return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(p, g)]
    return stagec.jit(step, passes=passes)


def test_relu_step_compiles_data_tiled():
    # 512x256 @ 256x128 + relu and its backward: without the rewrite IREE 3.13's data-tiled codegen fails on the
    # forward matmul's two results ("large vector sizes") and the whole step is compiled again without data tiling
    rng = np.random.default_rng(2)
    p = [(rng.standard_normal((256, 128)).astype(np.float32) / 16, rng.standard_normal(128).astype(np.float32)),
         (rng.standard_normal((128, 10)).astype(np.float32) / 11, np.zeros(10, np.float32))]
    x, y = rng.standard_normal((512, 256)).astype(np.float32), rng.standard_normal((512, 10)).astype(np.float32)
    default = TARGETS["cpu"].pipeline.passes
    assert "compare-clamped" in default
    # (without compare-clamped, recompute-activations would recompute the mask from a barrier on the pre-activation)
    without = tuple(n for n in default if n not in ("compare-clamped", "recompute-activations"))
    compiled = {name: _relu_step(passes).lower(p, x, y).compile() for name, passes in (("default", default),
                                                                                       ("without", without))}
    dropped = {name: "no-data-tiling" in c.variant for name, c in compiled.items()}
    assert dropped == {"default": False, "without": True}  # (the second: IREE 3.13's failure, the workaround's reason)
    # the step against float64 NumPy
    (w1, b1), (w2, b2) = [(w.astype(np.float64), b.astype(np.float64)) for w, b in p]
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    z = x64 @ w1 + b1
    h = np.maximum(z, 0)
    d = 2 * (h @ w2 + b2 - y64) / y64.size
    dh = (d @ w2.T) * (z > 0)
    ref = [(w1 - 0.1 * x64.T @ dh, b1 - 0.1 * dh.sum(0)), (w2 - 0.1 * h.T @ d, b2 - 0.1 * d.sum(0))]
    got = compiled["default"](p, x, y)
    for (gw, gb), (rw, rb) in zip(got, ref):
        np.testing.assert_allclose(np.asarray(gw), rw, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(gb), rb, rtol=1e-4, atol=1e-5)


def test_a_clamp_whose_bound_is_made_after_the_compare_stays_where_it_is():
    # (no CSE before: the max's bound is a second constant equal to the compare's, made after the compare; moving the
    # max before the compare would use it before it is defined)
    from stagec.compiler.driver import run_passes
    text = """func.func @main(%x: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xf32>) {
      %c0 = stablehlo.constant dense<5.000000e-01> : tensor<4xf32>
      %m = stablehlo.compare GT, %x, %c0, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
      %c1 = stablehlo.constant dense<5.000000e-01> : tensor<4xf32>
      %r = stablehlo.maximum %x, %c1 : tensor<4xf32>
      return %m, %r : tensor<4xi1>, tensor<4xf32>
    }"""
    assert run_passes(text, ["compare-clamped"], "cpu") is None  # (unchanged, and no verifier error)
    moved = run_passes(text.replace("%x, %c1", "%x, %c0"), ["compare-clamped"], "cpu")  # the same constant: moved
    assert moved is not None and "stablehlo.compare GT, %0, %cst" in moved
