"""bfloat16: promotion as in JAX's table, StableHLO `bf16`, and values that agree with NumPy computed in
float32 and rounded to bfloat16 (NumPy's own bfloat16 comes from `ml_dtypes`, whose kind is 'V')."""
from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec.compiler.targets import device_names
from numpy_diff import jnp

BF16 = np.dtype(ml_dtypes.bfloat16)
RTOL = 2 ** -7  # one bfloat16 ulp (8 significant bits), relative
RNG = np.random.default_rng(7)
X = RNG.uniform(-3, 3, (2, 5)).astype(BF16)
POS = RNG.uniform(0.1, 3, (2, 5)).astype(BF16)
UNIT = RNG.uniform(-0.9, 0.9, (2, 5)).astype(BF16)

UNARY = {"negative": X, "abs": X, "sign": X, "floor": X, "ceil": X, "rint": X, "trunc": X, "square": X,
         "exp": X, "exp2": X, "expm1": X, "log": POS, "log2": POS, "log10": POS, "log1p": POS, "sqrt": POS,
         "cbrt": X, "reciprocal": POS, "sin": X, "cos": X, "tan": UNIT, "arcsin": UNIT, "arccos": UNIT,
         "arctan": X, "sinh": X, "cosh": X, "tanh": X, "arcsinh": X, "arccosh": POS + 1, "arctanh": UNIT}
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "arctan2", "hypot", "fmax",
          "fmin", "mod", "floor_divide"]


def _close(got, want_f32, what: str, ulps: float = 2) -> None:
    """`got` is bfloat16 and within `ulps` bfloat16 ulps of the float32 reference rounded to bfloat16."""
    got = np.asarray(got)
    assert got.dtype == BF16, f"{what}: dtype {got.dtype}, expected bfloat16"
    want = np.asarray(want_f32, np.float32).astype(BF16).astype(np.float32)
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=ulps * RTOL, atol=ulps * RTOL, equal_nan=True,
                               err_msg=what)


def _f32(fn, *xs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*[np.asarray(x).astype(np.float32) for x in xs])


@stagec.jit
def _all_unary(xs):
    return {n: getattr(snp, n)(x) for n, x in xs.items()}


@stagec.jit
def _all_binary(x, y):
    return {n: getattr(snp, n)(x, y) for n in BINARY}


def test_unary_functions_match_float32_rounded():
    out = _all_unary(UNARY)
    for n, x in UNARY.items():
        _close(out[n], _f32(getattr(np, n), x), n)


def test_binary_functions_match_float32_rounded():
    y = POS
    out = _all_binary(X, y)
    for n in BINARY:
        # floor_divide/mod round a quotient: one bfloat16 ulp in the quotient can move the floor by one.
        _close(out[n], _f32(getattr(np, n), X, y), n, ulps=2 if n not in ("mod", "floor_divide") else 300)
    eager = snp.multiply(X, y)
    _close(eager, _f32(np.multiply, X, y), "eager multiply")


@pytest.mark.parametrize("other, want, weak", [
    (np.float16, np.float32, False), (np.float32, np.float32, False), (np.int32, BF16, False),
    (np.uint8, BF16, False), (np.bool_, BF16, False), (np.complex64, np.complex64, False),
    (float, BF16, False), (int, BF16, False)])
def test_promotion_follows_jax(other, want, weak):
    x = np.ones((2,), BF16)
    y = other(1) if isinstance(other, type) and other in (float, int) else np.ones((2,), other)
    got = stagec.make_mlir(lambda a, b: a + b)(x, y)
    assert f"tensor<2x{ {np.dtype(np.float32): 'f32', BF16: 'bf16', np.dtype(np.complex64): 'complex<f32>'}[np.dtype(want)] }>" \
        .replace(" ", "") in got.split("return")[1]
    r = snp.add(x, y)
    assert r.dtype == np.dtype(want) and r.weak_type == weak
    if jnp is not None:
        j = jnp.add(jnp.asarray(x), y if not isinstance(y, np.ndarray) else jnp.asarray(y))
        assert (np.dtype(j.dtype), j.weak_type) == (np.dtype(want), weak)


def test_weak_float_scalar_keeps_bfloat16_and_mlir_says_bf16():
    text = stagec.make_mlir(lambda a: a * 1.5 + 1)(X)
    assert "tensor<2x5xbf16>" in text and "f16>" not in text.replace("bf16>", "")
    _close(stagec.jit(lambda a: a * 1.5 + 1)(X), _f32(lambda a: a * 1.5 + 1, X), "a*1.5+1")


def test_float16_and_bfloat16_signatures_do_not_share_a_compiled_module():
    f = stagec.jit(lambda a: a * 2)
    h, b = f(np.ones(3, np.float16)), f(np.ones(3, BF16))
    assert h.dtype == np.float16 and b.dtype == BF16
    np.testing.assert_array_equal(np.asarray(b).astype(np.float32), [2, 2, 2])
    assert f._cache_size() == 2


@stagec.jit
def _reductions(x):
    return {"sum": snp.sum(x), "sum1": snp.sum(x, axis=1), "prod": snp.prod(x, axis=0), "mean": snp.mean(x),
            "var": snp.var(x, axis=1), "std": snp.std(x), "max": snp.max(x, axis=1), "min": snp.min(x),
            "argmax": snp.argmax(x, axis=1), "argmin": snp.argmin(x), "cumsum": snp.cumsum(x, axis=1),
            "sort": snp.sort(x, axis=1), "argsort": snp.argsort(x, axis=1), "dot": snp.dot(x, x.T),
            "matmul": snp.matmul(x.T, x), "einsum": snp.einsum("ij,ij->i", x, x),
            "softmax": stagec.nn.softmax(x, axis=-1), "where": snp.where(x > 0, x, 0.0),
            "concat": snp.concatenate([x, x[:, ::-1]], axis=1)}


def test_reductions_linear_algebra_and_shapes():
    out = _reductions(X)
    x = np.asarray(X).astype(np.float32)
    e = np.exp(x - x.max(-1, keepdims=True))
    refs = {"sum": x.sum(), "sum1": x.sum(1), "prod": x.prod(0), "mean": x.mean(), "var": x.var(1), "std": x.std(),
            "max": x.max(1), "min": x.min(), "cumsum": np.cumsum(x, 1), "sort": np.sort(x, 1),
            "dot": x @ x.T, "matmul": x.T @ x, "einsum": (x * x).sum(1), "softmax": e / e.sum(-1, keepdims=True),
            "where": np.where(x > 0, x, 0), "concat": np.concatenate([x, x[:, ::-1]], 1)}
    for k, want in refs.items():
        _close(out[k], want, k, ulps=4)
    np.testing.assert_array_equal(np.asarray(out["argmax"]), x.argmax(1))
    np.testing.assert_array_equal(np.asarray(out["argmin"]), x.argmin())
    np.testing.assert_array_equal(np.asarray(out["argsort"]), np.argsort(x, 1, kind="stable"))


def test_sums_accumulate_in_float32_as_jax():
    """1000 ones: a bfloat16 accumulator stops at 256 (256 + 1 rounds back to 256); JAX upcasts."""
    ones = np.ones(1000, BF16)
    for r, want in ((snp.sum(ones), 1000), (stagec.jit(snp.sum)(ones), 1000), (snp.mean(3 * ones), 3)):
        assert r.dtype == BF16
        assert float(np.asarray(r).astype(np.float32)) == want


def test_host_round_trip_casts_and_creation():
    a = stagec.device_put(X)
    assert a.dtype == BF16 and a.shape == (2, 5)
    np.testing.assert_array_equal(np.asarray(a).view(np.uint16), X.view(np.uint16))  # bit-exact
    assert snp.zeros(3, snp.bfloat16).dtype == BF16 and snp.arange(4, dtype="bfloat16").dtype == BF16
    np.testing.assert_array_equal(np.asarray(snp.asarray(X).astype(np.float32)), X.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(snp.asarray(np.float32(1.00390625)).astype(BF16)).astype(np.float32),
                                  [1.0])  # rounds to nearest even
    assert snp.issubdtype(snp.bfloat16, snp.floating) and not snp.issubdtype(snp.bfloat16, snp.integer)
    assert snp.finfo(snp.bfloat16).eps == 2 ** -7
    assert np.isnan(float(np.asarray(snp.divide(np.zeros(1, BF16), 0.0))[0]))


def test_aot_artifact_and_cli_spec_keep_bfloat16(tmp_path):
    from stagec.aot import ShapeDtypeStruct, load
    from stagec.cli import parse_spec
    name, sds = parse_spec("x=bf16[2,5]")
    assert name == "x" and sds == ShapeDtypeStruct((2, 5), BF16)
    lowered = stagec.jit(lambda x: snp.tanh(x) * 2).lower(sds)
    assert "tensor<2x5xbf16>" in lowered.as_text()
    lowered.compile().save(tmp_path / "tanh.stagec")
    got = load(tmp_path / "tanh.stagec")(X)
    _close(got, _f32(lambda x: np.tanh(x) * 2, X), "loaded artifact")


def test_vulkan_runs_bfloat16():
    if not device_names("vulkan"):
        pytest.skip("no Vulkan device: apt-get install mesa-vulkan-drivers libvulkan1")
    f = stagec.jit(lambda x: (snp.tanh(x) * 2, snp.sum(x * x, axis=1)), backend="vulkan")
    t, s = f(X)
    _close(t, _f32(lambda x: np.tanh(x) * 2, X), "vulkan tanh")
    _close(s, _f32(lambda x: (x * x).sum(1), X), "vulkan sum", ulps=4)


def test_eager_conversion_of_float16_and_int16_to_bfloat16():
    """Eager `astype(bfloat16)` of float16 and int16 (a shape-polymorphic kernel) failed to compile: the pass that
    rounds them by integer ops (`round-to-bf16`) built a `tensor<?xui32>` constant, which does not verify (met by
    `nansum(x_f16, dtype=bfloat16)`). Against NumPy's float32 rounded to bfloat16, bit for bit."""
    h = np.array([0.3, np.nan, np.inf, -0.0, 65504.0, 1e-7, -3.14], np.float16)
    i = np.array([8649, -3, 300, -32768, 32767], np.int16)
    for v in (h, i, h[:1]):
        got = np.asarray(snp.asarray(v).astype(BF16))
        np.testing.assert_array_equal(got.view(np.uint16), v.astype(np.float32).astype(BF16).view(np.uint16))
