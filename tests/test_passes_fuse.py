"""The `fuse` pass: which chains become one linalg.generic, what is left alone, results, dispatches."""
from __future__ import annotations

import re

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec.backend import get_backend

pytestmark = pytest.mark.cpu_only  # (the CPU pipeline's `fuse` and its neighbours)

NO_FUSE = ["fold-constants", "simplify", "cse", "dce"]
FUSE = [*NO_FUSE, "fuse-all"]  # the fusion machinery on every cluster; `fuse` (default) gates it


def selu(x):
    a, scale = 1.6732632423543772, 1.0507009873554805
    return scale * snp.where(x > 0, x, a * snp.exp(x) - a)


def sum_sq_tanh(x):
    return snp.sum(x ** 2 + snp.tanh(x), axis=1)


def bias_relu(x, b):
    return snp.maximum(x + b, 0.0) * 2.0


def int_chain(x):
    return snp.where(x > 2, x * 3 - 1, -x) & 7


X = np.linspace(-3, 3, 24, dtype=np.float32).reshape(4, 6)
B = np.linspace(-1, 1, 6, dtype=np.float32)
I = np.arange(-12, 12, dtype=np.int32).reshape(4, 6)


def fused_text(f, *args) -> str:
    return stagec.jit(f, passes=FUSE).lower(*args).as_text("fuse-all")


def test_selu_is_one_generic():
    text = fused_text(selu, X)
    assert text.count("linalg.generic") == 1
    assert not re.search(r"stablehlo\.(exponential|select|compare|multiply|subtract)", text)
    for op in ("math.exp", "arith.cmpf", "arith.select", "arith.mulf", "arith.subf"):
        assert op in text
    low = stagec.jit(selu, passes=FUSE).lower(X)
    low.as_text()
    st = {s.name: s for s in low.pass_stats}["fuse-all"]
    assert st.rewrites["elementwise"] == 1 and st.rewrites["ops-fused"] >= 5


def test_reduction_takes_its_producers():
    text = fused_text(sum_sq_tanh, X)
    assert "stablehlo.reduce" not in text and "stablehlo.tanh" not in text
    assert text.count("linalg.generic") == 1 and '"parallel", "reduction"' in text
    assert "math.tanh" in text and "arith.addf" in text


def test_broadcast_operand_is_not_materialized():
    text = fused_text(bias_relu, X, B)
    assert "stablehlo.broadcast_in_dim" not in text and "affine_map<(d0, d1) -> (d1)>" in text


def test_integer_chain():
    text = fused_text(int_chain, I)
    assert "arith.cmpi" in text and "arith.muli" in text and "arith.andi" in text


@pytest.mark.parametrize("f,args", [(selu, (X,)), (sum_sq_tanh, (X,)), (bias_relu, (X, B)), (int_chain, (I,))])
def test_results_match_unfused(f, args):
    on = np.asarray(stagec.jit(f, passes=FUSE)(*args))
    off = np.asarray(stagec.jit(f, passes="none")(*args))
    if on.dtype.kind == "f":
        np.testing.assert_allclose(on, off, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(on, off)


def test_left_alone():
    # one op: nothing to fuse; unsigned ints: arith has no unsigned types; a producer with two
    # users is not duplicated into both.
    assert "linalg" not in fused_text(lambda x: snp.tanh(x), X)
    assert "linalg" not in fused_text(lambda x: x * 3 + 1, I.astype(np.uint32))
    text = fused_text(lambda x: (snp.exp(x) + 1, snp.exp(x) * 2), X)
    assert text.count("math.exp") == 0 and text.count("stablehlo.exponential") == 1


def test_ops_mathlib_expands_are_left_to_it():
    # a cluster reading a reshape took float32 sin into a linalg.generic (IREE's math.sin, before mathlib):
    # sin(1e10) + 1 was -6.0e21
    x = np.array([1e10, 3e5, -2e7, 1.5], np.float32).reshape(2, 2)
    f = lambda v: snp.sin(v.reshape(4)) + 1  # noqa: E731
    assert "math.sin" not in stagec.jit(f).lower(x).as_text("fuse")
    np.testing.assert_allclose(np.asarray(stagec.jit(f)(x)), np.sin(x.reshape(4).astype(np.float64)) + 1, rtol=1e-6)


def _dispatches(mlir: str) -> int:
    import iree.compiler as ic
    flow = ic.compile_str(mlir, target_backends=["llvm-cpu"], input_type="stablehlo",
                          extra_args=[*get_backend("cpu").compile_flags(), "--compile-to=flow"])
    return len(re.findall(rb"flow\.dispatch @", flow))


def test_fused_selu_is_one_dispatch():
    assert _dispatches(stagec.jit(selu, passes=FUSE).lower(X).as_text("final")) == 1


def softmax(x):
    e = snp.exp(x - snp.max(x, axis=-1, keepdims=True))
    return e / snp.sum(e, axis=-1, keepdims=True)


def test_normalization_left_to_iree():
    # IREE fuses layernorm into one dispatch by itself; a generic reading the broadcast mean made such
    # normalizations two (measured), so elementwise clusters that read a reduction's broadcast result are not fused.
    layernorm = lambda x: (x - snp.mean(x, -1, keepdims=True)) / snp.sqrt(snp.var(x, -1, keepdims=True) + 1e-5)
    assert 'iterator_types = ["parallel", "parallel"]' not in fused_text(layernorm, X)


@pytest.mark.parametrize("passes", [None, FUSE])
def test_softmax_exponentials_computed_once(passes):
    # IREE alone computes exp(x - max) twice (for the sum and for the division); one generic computing both
    # the exponentials and their sum keeps the whole softmax in one dispatch, each exponential computed once.
    f = stagec.jit(softmax, passes=passes, backend="cpu")  # (a CPU rewrite: test_softmax_fusion_is_cpu_only)
    text = f.lower(X).as_text("final")
    assert text.count("math.exp") == 1 and "stablehlo.exponential" not in text and _dispatches(text) == 1
    e = np.exp(X.astype(np.float64) - X.max(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(f(X)), e / e.sum(-1, keepdims=True), rtol=1e-6)
    # down columns, over rows longer than MAX_ROW_BYTES (IREE keeps tiles of them on its 32 KiB stack: a float64
    # softmax over 1024 columns failed to compile), or with a cheap producer (recomputed faster than stored), it is
    # left alone
    assert "linalg" not in stagec.jit(lambda x: softmax(x.T)).lower(X).as_text("final")
    assert "linalg" not in stagec.jit(softmax).lower(np.zeros((2, 1025), np.float32)).as_text("final")
    assert "linalg" not in stagec.jit(lambda x: x * x / snp.sum(x * x, -1, keepdims=True)).lower(X).as_text("final")


def test_softmax_whose_max_is_guarded_compiles():
    # A softmax with an elementwise op on its max (as `where(isfinite(m), m, 0)`) is fused as above, but the tuning
    # spec's one-row tiles do not match it: IREE's 8-row tile of 1024-float rows needed 32896 bytes of its 32 KiB
    # stack and did not compile. The backend retries with a larger limit.
    def guarded(x):
        m = snp.max(x, axis=-1, keepdims=True)
        e = snp.exp(x - snp.where(snp.isfinite(m), m, 0.0))
        return e / snp.sum(e, axis=-1, keepdims=True)
    x = np.random.default_rng(3).standard_normal((64, 1024)).astype(np.float32)
    f = stagec.jit(guarded, backend="cpu")
    assert f.lower(x).as_text("final").count("math.exp") == 1
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(f(x)), e / e.sum(-1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(f(x)), e / e.sum(-1, keepdims=True), rtol=1e-6)  # (the fused module)


def test_exponentials_used_before_their_sum():
    # `e * 2` comes before `sum(e)` in the program: the generic computing both stands where `e` was.
    def f(x):
        e = snp.exp(x - snp.max(x, axis=-1, keepdims=True))
        y = e * 2.0
        return y / snp.sum(e, axis=-1, keepdims=True)
    text = stagec.jit(f, backend="cpu").lower(X).as_text("final")
    assert text.count("math.exp") == 1
    e = np.exp(X.astype(np.float64) - X.max(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(stagec.jit(f, backend="cpu")(X)), 2 * e / e.sum(-1, keepdims=True), rtol=1e-6)


def test_cheap_producer_recomputed_in_each_reduction():
    text = fused_text(lambda x: (snp.sum(x * x + 1, axis=0), snp.max(x * x + 1, axis=1)), X)
    assert text.count("linalg.generic") == 2 and "stablehlo.multiply" not in text
    assert text.count("arith.mulf") == 2  # x*x+1 computed in both, never stored


def test_expensive_producer_not_recomputed():
    text = fused_text(lambda x: (snp.sum(snp.tanh(x), axis=0), snp.sum(snp.tanh(x), axis=1)), X)
    assert "math.tanh" not in text and text.count("stablehlo.tanh") == 1


def test_fuse_saves_a_dispatch_across_reshape():
    f = lambda x: snp.tanh(x.reshape(8, 3)) + 1.0
    assert _dispatches(stagec.jit(f, passes=NO_FUSE).lower(X).as_text("final")) == 2
    assert _dispatches(stagec.jit(f, passes=FUSE).lower(X).as_text("final")) == 1
    np.testing.assert_allclose(np.asarray(stagec.jit(f, passes=FUSE)(X)), np.tanh(X.reshape(8, 3)) + 1, rtol=1e-6, atol=1e-6)


def test_reduction_over_dims_only_a_broadcast_spans_stays_valid():
    """sum(where(broadcast(w), 1, 0)) has no input spanning the broadcast dim: the generic must still give
    every loop an extent (it once produced non-invertible indexing maps and a PassError)."""
    w = np.array([True, False, True, False])

    def count(w):
        return snp.sum(snp.where(snp.broadcast_to(w, (3, 4)), 1.0, 0.0)), snp.sum(snp.broadcast_to(w, (3, 4)) * 2.0, 0)

    text = fused_text(count, w)
    assert "linalg.generic" in text
    total, cols = stagec.jit(count, passes=FUSE)(w)
    assert float(total) == 6.0
    np.testing.assert_array_equal(np.asarray(cols), [6, 0, 6, 0])


def test_empty_tensors_are_not_fused(capfd):
    """A 0-row variance: nothing to fuse; a fused generic over it made IREE warn about uninitialized reads."""
    x = np.zeros((0, 3), np.float32)
    f = stagec.jit(lambda v: snp.var(v, axis=0), passes=FUSE)
    assert "linalg.generic" not in f.lower(x).as_text("fuse-all")
    assert np.isnan(np.asarray(f(x))).all()
    assert "uninitialized" not in capfd.readouterr().err


def test_default_fuse_fires_only_where_iree_leaves_a_split():
    """At O3 IREE fuses SELU, reductions of elementwise chains and two reductions of one cheap producer
    into as few dispatches as `fuse-all` does (benchmarks/bench_passes.py), so the default `fuse` leaves
    them alone (no compile time spent); a chain reading a reshape it still fuses (2 dispatches -> 1)."""
    for f, args in [(selu, (X,)), (sum_sq_tanh, (X,)), (bias_relu, (X, B)),
                    (lambda x: (snp.sum(x * x + 1, axis=0), snp.max(x * x + 1, axis=1)), (X,))]:
        low = stagec.jit(f).lower(*args)
        assert "linalg" not in low.as_text("final")
        assert not {s.name: s for s in low.pass_stats}["fuse"].rewrites
    reshaped = lambda x: snp.tanh(x.reshape(8, 3)) + 1.0
    low = stagec.jit(reshaped).lower(X)
    assert low.as_text("final").count("linalg.generic") == 1 and _dispatches(low.as_text("final")) == 1
    np.testing.assert_allclose(np.asarray(stagec.jit(reshaped)(X)), np.tanh(X.reshape(8, 3)) + 1, rtol=1e-6, atol=1e-6)
    summed = lambda x: snp.sum(snp.tanh(x.reshape(8, 3)) * 2.0, axis=1)
    assert "linalg.generic" in stagec.jit(summed).lower(X).as_text("final")
    np.testing.assert_allclose(np.asarray(stagec.jit(summed)(X)), np.sum(np.tanh(X.reshape(8, 3)) * 2, 1), rtol=1e-5)


def test_softmax_fusion_is_cpu_only():
    # Vulkan's codegen put the two-result generic's rows in workgroup memory (64 KiB of its 16 KiB) and failed:
    # compiling for another target lowers the function again, with that backend's passes.
    lowered = stagec.jit(softmax).lower(np.zeros((64, 256), np.float32))
    assert ("linalg.generic" in lowered.as_text("final")) == (lowered.backend.name == "cpu")
    for target in ("vulkan-spirv", "cuda"):
        assert lowered.compile(target).artifact.target == target



def _mse_and_bias_grad(np_, o, b, y):
    d = o + b - y
    g = d * (2.0 / d.size)
    return np_.mean(d * d), g, np_.sum(g, axis=0)


SIB = [np.random.default_rng(3).standard_normal(s).astype(np.float32) for s in ((64, 300), (300,), (64, 300))]


@pytest.mark.parametrize("name, fn, fused", [
    ("loss and bias gradient", _mse_and_bias_grad, 2),
    ("sum and max down columns of one value", lambda np_, o, b, y: (np_.sum(o * b - y, 0), np_.max(o * b - y, 0)), 2),
    ("three, the value kept", lambda np_, o, b, y: (np_.sum(o - y, 0), np_.sum((o - y) * b, 0), np_.min(o - y, 0),
                                                    (o - y) * 2), 3),
    ("a 3-d array down two dims", lambda np_, o, b, y: (np_.sum((o - y).reshape(8, 8, 300) * 2, (0, 1)),
                                                        np_.max((o - y).reshape(8, 8, 300) * 2, (0, 1))), 2),
    ("unrelated columns", lambda np_, o, b, y: (np_.sum(o * 2, 0), np_.sum(y * 3, 0)), 0),
    ("rows", lambda np_, o, b, y: (np_.sum(o - y, 1), np_.max(o - y, 1)), 0),
])
def test_sibling_reductions_down_columns_are_one_generic_and_right(name, fn, fused):
    # Reductions down the columns of values with common producers: one generic computes them all (and the values
    # used elsewhere); unrelated ones and row reductions are left to IREE.
    f = stagec.jit(lambda *a: fn(snp, *a))
    stats = next(s for s in f.lower(*SIB).pass_stats if s.name == "fuse")
    assert stats.rewrites["sibling-reductions"] == fused, name
    for got, want in zip(f(*SIB), fn(np, *(a.astype(np.float64) for a in SIB))):
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-6, err_msg=name)


def test_a_value_used_before_its_siblings_inputs_exist_is_left_alone():
    # `g` is used by a matmul whose result feeds the other reduction's producers: no single op can compute both.
    def f(o, b, y):
        g = (o - y) + 2
        h = g @ b.reshape(300, 1)  # (64, 1)
        return snp.sum(g, 0), snp.sum((o - y) * h, 0)
    lowered = stagec.jit(f).lower(*SIB)
    assert next(s for s in lowered.pass_stats if s.name == "fuse").rewrites["sibling-reductions"] == 0
    o, b, y = (a.astype(np.float64) for a in SIB)
    g = (o - y) + 2
    for got, want in zip(stagec.jit(f)(*SIB), (g.sum(0), ((o - y) * (g @ b.reshape(300, 1))).sum(0))):
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=1e-4)


def test_value_and_grad_of_a_mean_squared_error_sums_its_loss_beside_the_bias_gradient():
    # split-sums sums the loss down the columns first (as the bias gradient's sum goes), and fuse makes the two
    # one generic: the value and each gradient as NumPy gives them in float64.
    rng = np.random.default_rng(4)
    w, b = rng.standard_normal((32, 300)).astype(np.float32) / 6, rng.standard_normal(300).astype(np.float32)
    x, y = rng.standard_normal((64, 32)).astype(np.float32), rng.standard_normal((64, 300)).astype(np.float32)
    f = stagec.jit(stagec.value_and_grad(lambda w, b: snp.mean((x @ w + b - y) ** 2), argnums=(0, 1)))
    stats = {s.name: s.rewrites for s in f.lower(w, b).pass_stats}
    assert stats["split-sums"]["split-sum"] == 1 and stats["fuse"]["sibling-reductions"] == 2
    loss, (gw, gb) = f(w, b)
    x64, d = x.astype(np.float64), x.astype(np.float64) @ w + b - y
    np.testing.assert_allclose(float(loss), np.mean(d * d), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(gb), 2 * d.sum(0) / d.size, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(np.asarray(gw), 2 * x64.T @ d / d.size, rtol=1e-4, atol=1e-7)


# ---- `fuse-narrowing` (CPU legalization, after mathlib)

def test_float32_betaln_is_one_dispatch():
    """mathlib's float32 betaln computes in float64 and narrows inside (lgamma's float32 exponent bits, the sums'
    rounding): IREE 3.13 fuses a bit-truncating op into no consumer of two operands, so the module was 13 dispatches
    (7 executables) writing ~150 bytes of float64 and int32 values per element; `fuse-narrowing` makes it one
    generic. Values against SciPy."""
    import scipy.special as sp

    from stagec.scipy.special import betaln
    rng = np.random.default_rng(3)
    a = np.concatenate([rng.uniform(0.01, 10, 2000), rng.uniform(1, 1e4, 2096)]).astype(np.float32)
    b = rng.uniform(0.01, 20, 4096).astype(np.float32)
    lowered = stagec.jit(betaln).lower(a, b)
    assert _dispatches(lowered.as_text("final")) == 1
    assert next(s for s in lowered.pass_stats if s.name == "fuse-narrowing").rewrites["narrowing"] >= 1
    want = sp.betaln(a.astype(np.float64), b.astype(np.float64))
    got = np.asarray(stagec.jit(betaln)(a, b)).astype(np.float64)
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - want) / ulp) <= 4


def test_fuse_narrowing_grows_a_cluster_once(monkeypatch, x64):
    """A cluster that narrows nowhere inside is grown once, not again from each of its members (which made the pass
    quadratic: float64 comb, beta and poch in one module, 1.9 s of pipeline, now 0.2). The module as before: one
    narrowing root, nothing fused."""
    from stagec.passes import fuse
    grown, grow = [], fuse._grow
    monkeypatch.setattr(fuse, "_grow", lambda seeds, *a: grown.append(seeds) or grow(seeds, *a))

    def chain(x):  # (under `fuse-float64`'s size, which grows it once too)
        for _ in range(30):
            x = x * 1.1 + 0.3
        return x.astype(np.float32)
    lowered = stagec.jit(chain, passes=["fuse-narrowing"]).lower(np.ones(8, np.float64))
    text = lowered.as_text("final")
    # (the CPU's legalization runs both)
    runs = sum(s.name in ("fuse-narrowing", "fuse-float64") for s in lowered.pass_stats)
    assert runs >= 2 and len(grown) == runs, (len(grown), runs)
    assert "linalg.generic" not in text and text.count("stablehlo.multiply") == 30


BITS = """module {
  func.func @main(%x: tensor<6xf32>) -> (tensor<6xi32>, tensor<6xf32>) {
    %c2 = stablehlo.constant dense<2.0> : tensor<6xf32>
    %c23 = stablehlo.constant dense<23> : tensor<6xi32>
    %c30 = stablehlo.constant dense<30> : tensor<6xi32>
    %c3 = stablehlo.constant dense<3> : tensor<6xi32>
    %c1 = stablehlo.constant dense<1> : tensor<6xi32>
    %cm = stablehlo.constant dense<8388607> : tensor<6xi32>
    %ce = stablehlo.constant dense<1065353216> : tensor<6xi32>
    %v = stablehlo.multiply %x, %c2 : tensor<6xf32>
    %i = stablehlo.bitcast_convert %v : (tensor<6xf32>) -> tensor<6xi32>
    %e = stablehlo.shift_right_logical %i, %c23 : tensor<6xi32>
    %l = stablehlo.and %i, %c1 : tensor<6xi32>
    %s = stablehlo.shift_left %l, %c3 : tensor<6xi32>
    %a = stablehlo.shift_right_arithmetic %i, %c30 : tensor<6xi32>
    %t = stablehlo.add %e, %s : tensor<6xi32>
    %r = stablehlo.add %t, %a : tensor<6xi32>
    %mm = stablehlo.and %i, %cm : tensor<6xi32>
    %mo = stablehlo.or %mm, %ce : tensor<6xi32>
    %m = stablehlo.bitcast_convert %mo : (tensor<6xi32>) -> tensor<6xf32>
    %m1 = stablehlo.add %m, %c2 : tensor<6xf32>
    return %r, %m1 : tensor<6xi32>, tensor<6xf32>
  }
}"""


def test_bit_operations_in_a_generic_as_numpy():
    """`fuse` puts bitcasts and shifts by constants in generics (`fuse-narrowing` needs them: mathlib's float32
    log reads the exponent bits): the float32 exponent and mantissa bits as NumPy's."""
    from stagec.passes import pipeline
    from test_fusion_hazards import _run_on_cpu
    fused = pipeline.on_text(BITS, lambda m: pipeline.run_pipeline(m, ["fuse-all"])[0].stats.rewrites["elementwise"])
    assert all(op in fused for op in ("arith.shrui", "arith.shli", "arith.shrsi", "arith.bitcast"))
    assert "stablehlo.shift" not in fused and "stablehlo.bitcast" not in fused
    x = np.array([1.5, -3.0, 1e-3, 6e4, 0.0, -1e-30], np.float32)
    i = (x * 2).view(np.int32)
    want = [(i.view(np.uint32) >> 23).astype(np.int32) + ((i & 1) << 3) + (i >> 30),
            ((i & 0x7FFFFF) | (127 << 23)).view(np.float32) + 2]
    for got, w in zip(_run_on_cpu(fused, [x]), want):
        np.testing.assert_array_equal(got, w)


# ---- `fuse-float64` (CPU legalization, after mathlib)

def _largest_dump_before_hoisting(mlir: str) -> str:
    """IREE's module as its `HoistIntoGlobalsPass` receives it, the largest of its runs (up to flow)."""
    import os
    import subprocess

    from iree.compiler.tools.binaries import find_tool
    exe = find_tool("iree-compile")  # (the package's: no script beside a Python that has no venv of its own)
    r = subprocess.run([exe, "--iree-hal-target-backends=llvm-cpu", "--iree-input-type=stablehlo",
                        *get_backend("cpu").compile_flags(), "--compile-to=flow", "--mlir-disable-threading",
                        "--mlir-print-ir-before=iree-util-hoist-into-globals", "-", "-o", os.devnull],
                       input=mlir, capture_output=True, text=True, check=True)
    return max(r.stderr.split("IR Dump Before"), key=len)


def test_float64_power_after_gamma_is_not_copied_by_iree(x64):
    """float64 `gamma(...) ** 0.5`: IREE 3.13's `FuseMultiUseElementwiseProducerPass` copied the shared producers of
    mathlib's double-double power into their consumers, level after level (231 multiplications in the module, 2,749
    in the generic it made; `HoistIntoGlobalsPass` then took 3.5 s, and float64 `random.ball` compiled for 65 s).
    `fuse-float64` makes the power one generic. Values against NumPy's power of the same draws."""
    from stagec import random
    key = random.PRNGKey(0)
    f = stagec.jit(lambda k: (lambda g: (g, g ** 0.5))(random.gamma(k, 0.5, (64,), np.float64)))
    lowered = f.lower(key)
    final = lowered.as_text("final")
    assert next(s for s in lowered.pass_stats if s.name == "fuse-float64").rewrites["float64"] >= 1
    muls = final.count("stablehlo.multiply") + final.count("arith.mulf")
    assert _largest_dump_before_hoisting(final).count("arith.mulf") <= 1.5 * muls  # (2,749 for 231 without the pass)
    assert lowered.facts.libm_f64  # (the generic's math.log: linked with the host's linker, no failing first compile)
    g, got = (np.asarray(v) for v in f(key))
    assert np.all(np.abs(got - g ** 0.5) <= np.spacing(g ** 0.5))


def test_complex128_divisions_in_a_loop_are_one_generic_each(x64):
    """complex128 divisions of scalars in a loop body: mathlib's scaled division computes the quotient's two parts
    from shared scales, so a cluster per part held neither scale, and `fuse-float64` took none (nor did it look
    inside loops). IREE 3.13 then copied the shared values into their consumers: the eager gradient of a 3x3 complex
    solve_triangular spent 5.4 CPU-s of its compile in `HoistIntoGlobalsPass`'s analysis of a 15,800-op generic
    (0.8 s with the parts of each division in one generic, 2026-11-29). Values against NumPy's loop."""
    from stagec import lax
    f = stagec.jit(lambda z, c: lax.fori_loop(0, 3, lambda i, z: z / (z + c) + 1 / z, z))
    z, c = np.complex128(0.3 - 1.2j), np.complex128(2 + 0.5j)
    lowered = f.lower(z, c)
    final = lowered.as_text("final")
    assert next(s for s in lowered.pass_stats if s.name == "fuse-float64").rewrites["float64"] == 2
    muls = final.count("stablehlo.multiply") + final.count("arith.mulf")
    assert _largest_dump_before_hoisting(final).count("arith.mulf") <= 1.5 * muls  # (115 for 44 without the pairs)
    want = z
    for _ in range(3):
        want = want / (want + c) + 1 / want
    assert abs(complex(f(z, c)) - want) <= 4e-16 * abs(want)


def test_fuse_float64_takes_big_float64_clusters_only(x64):
    """A float64 chain under `MIN_FLOAT64` ops and a float32 power are left to IREE; float64 digamma (a kernel of
    ~100 ops) is one generic, its values within 1e-14 of SciPy's (past its zero at 1.46, as JAX's)."""
    import scipy.special as sp

    from stagec.passes.fuse import MIN_FLOAT64
    from stagec.scipy.special import digamma

    def chain(x):
        for _ in range(MIN_FLOAT64 // 2 - 1):
            x = x * 1.1 + 0.3
        return x
    fused = lambda f, x: next(s for s in stagec.jit(f).lower(x).pass_stats  # noqa: E731
                              if s.name == "fuse-float64").rewrites["float64"]
    assert fused(chain, np.ones(8)) == 0
    assert fused(lambda x: x ** (x - 1), np.ones(8, np.float32)) == 0
    x = np.geomspace(2.0, 1e5, 4096)
    assert fused(digamma, x) == 1
    np.testing.assert_allclose(np.asarray(stagec.jit(digamma)(x)), sp.digamma(x), rtol=1e-14, atol=0)


def test_softmax_of_a_constant_row_sums_every_column():
    """An all-masked row (`where(False, x, c)` is the splat c): the softmax generic's loop over columns was spanned
    only by the values' output, and IREE 3.13 ran that reduction over one element (1.0 each, not 1/3); the sum
    of exp of the splat itself (a splat made by `simplify`, after `fold-constants`) was counted once too."""
    x = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], np.float32)
    for c in (0.0, np.finfo(np.float32).min):
        def f(x, c=c):
            z = snp.where(np.zeros((2, 3), bool), x, c)
            e = snp.exp(z - snp.max(z, axis=-1, keepdims=True))
            return e / snp.sum(e, axis=-1, keepdims=True), snp.sum(snp.exp(z - c), axis=-1)
        sm, total = stagec.jit(f, backend="cpu")(x)
        np.testing.assert_allclose(np.asarray(sm), np.full((2, 3), 1 / 3), rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(total), [3.0, 3.0])


def test_a_long_chain_the_default_fuse_leaves_is_grown_once(monkeypatch):
    """`fuse` (the default) takes only chains that read a reshape. A chain it leaves was grown again from each of its
    ops in turn (each a part of the first), quadratic in its length: 554 clusters for float32 `betainc`. The members of
    a chain it leaves are not grown again; the module is the same."""
    from stagec.passes import fuse
    grown = []
    real = fuse._grow
    monkeypatch.setattr(fuse, "_grow", lambda seeds, *a: grown.append(len(seeds)) or real(seeds, *a))

    def chain(x):
        for i in range(200):
            x = x * 1.01 + float(i % 7)
        return x
    text = stagec.jit(chain, passes=[*NO_FUSE, "fuse"]).lower(X).as_text("fuse")
    assert "linalg.generic" not in text and text.count("stablehlo.multiply") == 200
    assert len(grown) <= 2
