"""Differential tests of reductions (axis int/tuple/None, keepdims, dtype), running reductions, argmax/argmin
and `stagec.nn`: stagec eager, stagec jit and NumPy agree; dtypes follow JAX."""
from __future__ import annotations

import itertools
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import stagec
import stagec.nn as nn
import stagec.numpy as snp
from numpy_diff import MAX_EXAMPLES, BF16, BOOL, F16, F32, I8, I32, U8, arrays, assert_matches, jax, jnp

SETTINGS = settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])
NAMES = ["sum", "prod", "mean", "var", "std", "max", "min", "any", "all", "ptp"]


def _reduce_all(x, axis, keepdims, ddof):
    axes = range(x.ndim) if axis is None else [a % x.ndim for a in (axis if isinstance(axis, tuple) else (axis,))]
    empty = any(x.shape[a] == 0 for a in axes)
    out = {}
    for n in NAMES:
        if (empty and n in ("max", "min", "ptp")) or (n == "ptp" and x.dtype == np.bool_):  # NumPy: errors
            continue
        kw = {"ddof": ddof} if n in ("var", "std") else {}
        out[n] = getattr(snp, n)(x, axis=axis, keepdims=keepdims, **kw)
    return out


_reduce_jit = stagec.jit(_reduce_all, static_argnames=("axis", "keepdims", "ddof"))


def _axes_for(ndim: int):
    opts = [None] + list(range(-ndim, ndim))
    opts += [tuple(c) for r in (2,) for c in itertools.combinations(range(ndim), r)] if ndim >= 2 else []
    return st.sampled_from(opts)


@SETTINGS
@given(st.data())
def test_reductions_match_numpy(data):
    dt = data.draw(st.sampled_from([F32, I32, I8, BOOL, F16, U8, BF16]), "dtype")
    shape = data.draw(st.sampled_from([(2, 3), (3,), (0, 3), ()]), "shape")
    axis = data.draw(_axes_for(len(shape)), "axis")
    keepdims = data.draw(st.booleans(), "keepdims")
    ddof = data.draw(st.sampled_from([0, 1]), "ddof")
    x = data.draw(arrays(dt, shape, -3, 3), "x")
    got = _reduce_jit(x, axis=axis, keepdims=keepdims, ddof=ddof)
    eager = _reduce_all(x, axis, keepdims, ddof) if (shape, dt) in (((2, 3), F32), ((2, 3), I8)) else got
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for n, g in got.items():
            kw = {"ddof": ddof} if n in ("var", "std") else {}
            xin = x.astype(np.float64) if n in ("mean", "var", "std") or stagec.dtypes.kind(dt) == "f" else x
            want = getattr(np, n)(xin, axis=axis, keepdims=keepdims, **kw)
            for r in (g, eager[n]):
                assert_matches(r, want, f"{n}(x: {dt}{shape}, axis={axis}, keepdims={keepdims})", scale=10)
            if jnp is not None:
                o = jax.eval_shape(lambda v: getattr(jnp, n)(v, axis=axis, keepdims=keepdims, **kw), x)
                assert (g.dtype, g.weak_type) == (o.dtype, o.weak_type), f"{n}: {g.aval} vs JAX {o}"


def _arg_cum(x, axis, keepdims):
    out = {"cumsum": snp.cumsum(x, axis=axis), "cumprod": snp.cumprod(x, axis=axis)}
    if x.size and (axis is None or x.shape[axis]):
        out["argmax"] = snp.argmax(x, axis=axis, keepdims=keepdims)
        out["argmin"] = snp.argmin(x, axis=axis, keepdims=keepdims)
    return out


_arg_cum_jit = stagec.jit(_arg_cum, static_argnames=("axis", "keepdims"))


@SETTINGS
@given(st.data())
def test_argmax_argmin_cumsum_cumprod_match_numpy(data):
    dt = data.draw(st.sampled_from([F32, I32, BOOL, I8, U8]), "dtype")
    shape = data.draw(st.sampled_from([(2, 3), (4,), (0, 2)]), "shape")
    axis = data.draw(st.sampled_from([None] + list(range(-len(shape), len(shape)))), "axis")
    keepdims = data.draw(st.booleans(), "keepdims")
    x = data.draw(arrays(dt, shape, -3, 3), "x")  # few distinct values: ties exercise "first index wins"
    got = _arg_cum_jit(x, axis=axis, keepdims=keepdims)
    eager = _arg_cum(x, axis, keepdims) if (shape, dt) == ((2, 3), F32) else got
    for n, g in got.items():
        kw = {"keepdims": keepdims} if n.startswith("arg") else {}
        want = getattr(np, n)(x, axis=axis, **kw)
        if n.startswith("cum") and dt.kind in "iu":
            want = want.astype(g.dtype)  # JAX keeps the integer dtype (wrapping), NumPy widens
        for r in (g, eager[n]):
            assert_matches(r, want, f"{n}(x: {dt}{shape}, axis={axis})")
        if jnp is not None:
            o = jax.eval_shape(lambda v: getattr(jnp, n)(v, axis=axis, **kw), x)
            assert g.dtype == o.dtype, f"{n}: {g.dtype} vs JAX {o.dtype}"


def _nan_reductions(x):
    return [snp.max(x, axis=1), snp.min(x, axis=1), snp.argmax(x, axis=1), snp.argmin(x, axis=1),
            snp.sum(x, axis=1), snp.cumsum(x, axis=1), snp.mean(x, axis=1), snp.argmax(x)]


def test_row_reductions_of_widths_no_vector_divides():
    """Rows of 37, 999 and 1000 values: IREE vectorizes them in whole vectors plus a peeled remainder (without
    peeling a 1000-wide row sum was computed one value at a time, 4x slower); every value is still summed once.
    All nine (dtype, width) cases in one module: each row reduction is its own dispatch, compiled as alone."""
    rng = np.random.default_rng(5)
    xs = [(rng.integers(-9, 10, (rows, width)) if dtype == np.int32 else rng.standard_normal((rows, width))).astype(dtype)
          for dtype in (np.float32, np.float16, np.int32) for rows, width in ((300, 37), (64, 999), (48, 1000))]
    outs = stagec.jit(lambda xs: [(x.sum(1), x.max(1), (x * x).sum(1), x.mean(-1)) for x in xs])(xs)
    for x, got in zip(xs, outs):
        want = [x.astype(np.float64).sum(1), x.max(1), (x.astype(np.float64) ** 2).sum(1), x.astype(np.float64).mean(-1)]
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=2e-2 if x.dtype == np.float16 else 1e-5,
                                       atol=1e-4 if x.dtype != np.float16 else 0.5, err_msg=f"{x.dtype}{x.shape}")


def test_nan_and_infinities_in_reductions_match_numpy():
    x = np.array([[1.0, np.nan, 3.0, np.nan], [-np.inf, 2.0, np.inf, 2.0], [5.0, 5.0, -1.0, -1.0]], np.float32)
    want = [np.max(x, axis=1), np.min(x, axis=1), np.argmax(x, axis=1), np.argmin(x, axis=1), np.sum(x, axis=1),
            np.cumsum(x, axis=1), np.mean(x, axis=1), np.argmax(x)]
    for got in (_nan_reductions(x), stagec.jit(_nan_reductions)(x)):
        for k, (g, w) in enumerate(zip(got, want)):
            assert_matches(g, w, f"nan reduction #{k}")


def test_empty_reductions_and_errors_match_numpy():
    e = np.zeros((0, 3), np.float32)
    assert float(snp.sum(e)) == 0.0 and float(snp.prod(e)) == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(float(snp.mean(e))) and np.isnan(np.mean(e))
    assert snp.sum(e, axis=0).shape == (3,) and np.asarray(snp.any(e)).item() is False
    assert np.asarray(snp.all(e)).item() is True
    assert snp.cumsum(e, axis=0).shape == (0, 3)
    for fn in ("max", "min", "argmax", "argmin"):
        with pytest.raises(ValueError):
            getattr(np, fn)(e)
        with pytest.raises(ValueError):
            getattr(snp, fn)(e)
    with pytest.raises(ValueError):
        snp.max(e, axis=0)
    for bad in (2, (0, 0), -3):
        with pytest.raises((ValueError, IndexError)):
            np.sum(np.zeros((2, 2)), axis=bad)
        with pytest.raises((ValueError, IndexError)):
            snp.sum(np.zeros((2, 2)), axis=bad)
    with pytest.raises(np.exceptions.AxisError):
        snp.argmax(np.zeros((2, 2)), axis=2)


def test_reduction_dtype_argument_and_integer_overflow():
    x = np.array([100, 100, 100], np.int8)
    assert snp.sum(x).dtype == np.int32 and int(snp.sum(x)) == 300  # widened, as JAX
    assert snp.sum(x, dtype=np.int8).dtype == np.int8 and int(snp.sum(x, dtype=np.int8)) == np.int8(300 - 256)
    np.testing.assert_array_equal(np.asarray(snp.cumsum(x)), np.cumsum(x).astype(np.int8))  # wraps, as JAX
    assert snp.mean(np.array([1, 2], np.int32)).dtype == np.float32
    assert snp.var(np.array([1, 2], np.int32), dtype=np.float16).dtype == np.float16
    big = np.array([2 ** 30, 2 ** 30], np.int32)
    assert int(snp.sum(big)) == np.int32(-(2 ** 31))  # int32 wrap-around, like NumPy with dtype=int32


# ---------------------------------------------------------------- stagec.nn


def _nn_ref(name, x, axis):
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        if name == "relu":
            return np.maximum(x, 0)
        if name == "sigmoid":
            return 1 / (1 + np.exp(-x))
        if name == "softplus":
            return np.logaddexp(x, 0)
        if name == "gelu":
            return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
        if name == "gelu_exact":
            import math
            return 0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2))) if x.size else x
        m = np.max(x, axis=axis, keepdims=True) if x.size else 0
        lse = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
        if name == "softmax":
            return np.exp(x - lse)
        if name == "log_softmax":
            return x - lse
        if name == "logsumexp":
            return np.squeeze(lse, axis=axis)


def _nn_all(x, axis):
    return {"relu": nn.relu(x), "sigmoid": nn.sigmoid(x), "softplus": nn.softplus(x), "gelu": nn.gelu(x),
            "gelu_exact": nn.gelu(x, approximate=False), "softmax": nn.softmax(x, axis=axis),
            "log_softmax": nn.log_softmax(x, axis=axis), "logsumexp": nn.logsumexp(x, axis=axis)}


_nn_jit = stagec.jit(_nn_all, static_argnames="axis")


@SETTINGS
@given(st.data())
def test_nn_functions_match_reference(data):
    dt = data.draw(st.sampled_from([F32, F16, BF16]), "dtype")
    shape = data.draw(st.sampled_from([(2, 3), (4,)]), "shape")
    axis = data.draw(st.sampled_from([-1, 0]), "axis")
    x = data.draw(arrays(dt, shape, -30, 30), "x")
    got = _nn_jit(x, axis=axis)
    eager = _nn_all(x, axis) if (dt, shape, axis) == (F32, (2, 3), -1) else got
    for n, g in got.items():
        want = _nn_ref(n, x, axis)
        for r in (g, eager[n]):
            assert r.dtype == dt, f"{n}: dtype {r.dtype}"
            assert_matches(r, want, f"nn.{n}({dt}{shape}, axis={axis})", scale=30 if dt in (F16, BF16) else 10)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name -> (stagec.nn function of x, NumPy reference in float64)
_ACTIVATIONS = {
    "elu": (nn.elu, lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0)))),
    "selu": (nn.selu, lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(np.minimum(x, 0)))),
    "celu": (lambda x: nn.celu(x, 2.0), lambda x: np.maximum(x, 0) + 2 * np.expm1(np.minimum(x, 0) / 2)),
    "leaky_relu": (nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x)),
    "relu6": (nn.relu6, lambda x: np.clip(x, 0, 6)),
    "hard_tanh": (nn.hard_tanh, lambda x: np.clip(x, -1, 1)),
    "hard_sigmoid": (nn.hard_sigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    "hard_silu": (nn.hard_silu, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "log_sigmoid": (nn.log_sigmoid, lambda x: -np.logaddexp(-x, 0)),
    "soft_sign": (nn.soft_sign, lambda x: x / (np.abs(x) + 1)),
    "mish": (nn.mish, lambda x: x * np.tanh(np.logaddexp(x, 0))),
    "squareplus": (nn.squareplus, lambda x: (x + np.sqrt(x * x + 4)) / 2),
    "sparse_plus": (nn.sparse_plus, lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4))),
    "sparse_sigmoid": (nn.sparse_sigmoid, lambda x: np.clip(x + 1, 0, 2) / 2),
    "glu": (nn.glu, lambda x: x[..., :2] * _sigmoid(x[..., 2:])),
    "standardize": (nn.standardize, lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)),
}
_activations_jit = stagec.jit(lambda x: {n: f(x) for n, (f, _) in _ACTIVATIONS.items()})


@SETTINGS
@given(st.data())
def test_nn_activations_match_reference(data):
    dt = data.draw(st.sampled_from([F32, F16]), "dtype")
    x = data.draw(arrays(dt, (3, 4), -8, 8), "x")
    got = _activations_jit(x)
    for n, (f, ref) in _ACTIVATIONS.items():
        want = ref(x.astype(np.float64))
        # eager on float32 only (each eager primitive is a compile per dtype), as in the tests above
        for r in (got[n], f(x) if dt == F32 else got[n]):
            assert r.dtype == dt, f"{n}: dtype {r.dtype}"
            assert_matches(r, want, f"nn.{n}({dt})", scale=30 if dt == F16 else 10)


def test_softmax_where_and_infinite_rows_as_jax():
    x = np.array([[1.0, 2.0, 3.0, 4.0], [0.5, -1.0, 2.0, 0.0]], np.float32)
    m = np.array([[True, False, True, True], [False, True, True, False]])
    e = np.where(m, np.exp(x - np.where(m, x, -np.inf).max(-1, keepdims=True)), 0)
    want = e / e.sum(-1, keepdims=True)
    rows = np.array([[-np.inf, -np.inf], [1.0, np.inf]], np.float32)
    sm, lsm, *inf_rows = stagec.jit(lambda x, m, rows: (nn.softmax(x, where=m), nn.log_softmax(x, where=m),
                                                       nn.softmax(rows), nn.log_softmax(rows)))(x, m, rows)
    np.testing.assert_allclose(np.asarray(sm), want, rtol=1e-6)
    got = np.asarray(lsm)
    assert (got[~m] == -np.inf).all()
    np.testing.assert_allclose(got[m], np.log(want[m]), rtol=1e-5)
    # as JAX: a row of -inf, or holding +inf, is NaN throughout (no silent 0/1 answer)
    for f, jitted in zip((nn.softmax, nn.log_softmax), inf_rows):
        assert np.isnan(np.asarray(jitted)).all() and np.isnan(np.asarray(f(rows))).all()
    with pytest.raises(ValueError, match="glu: axis -1 has size 3"):
        nn.glu(np.zeros((2, 3), np.float32))


def test_nn_extreme_values():
    x = np.array([[-np.inf, -np.inf, -np.inf], [1e30, 0.0, -1e30], [np.nan, 0.0, 1.0]], np.float32)
    lse, sm, sp = stagec.jit(lambda v, w: (nn.logsumexp(v, axis=1), nn.softmax(v[1:2]), nn.softplus(w)))(
        x, np.array([1e4, -1e4], np.float32))
    lse = np.asarray(lse)
    assert lse[0] == -np.inf and lse[1] == np.float32(1e30) and np.isnan(lse[2])
    np.testing.assert_array_equal(np.asarray(sm), [[1.0, 0.0, 0.0]])
    np.testing.assert_array_equal(np.asarray(sp), [1e4, 0.0])
    np.testing.assert_array_equal(np.asarray(nn.relu(np.array([-1, 2], np.int32))), [0, 2])
    assert nn.relu(np.array([-1, 2], np.int32)).dtype == np.int32


def test_var_past_its_degrees_of_freedom_and_nearest_quantile_ties_as_jax():
    """var/std with N - ddof <= 0 gave NumPy's inf where JAX gives NaN; quantile(method="nearest") rounded a tie
    half to even (NumPy) where JAX takes the lower value. JAX 0.10.2's results as literals."""
    x = np.array([[1.0, 2.0, 4.0, 8.0], [0.5, -1.0, 2.0, 3.0]], np.float32)
    w = np.array([[True, True, False, False], [True, False, False, False]])
    def f(x):
        return (snp.var(x, axis=1, ddof=4), snp.std(x, axis=1, ddof=2, where=w), snp.var(x, axis=1, ddof=1),
                snp.quantile(x, np.array([0.5, 1 / 6, 0.2], np.float32), axis=1, method="nearest"),
                snp.nanquantile(x, 0.5, axis=0, method="nearest"))
    for g in (f, stagec.jit(f)):
        v4, s2, v1, q, nq = (np.asarray(r) for r in g(x))
        assert np.isnan(v4).all() and np.isnan(s2).all()
        np.testing.assert_allclose(v1, np.var(x.astype(np.float64), axis=1, ddof=1), rtol=1e-6)
        np.testing.assert_array_equal(q, [[2.0, 0.5], [1.0, -1.0], [2.0, 0.5]])  # (NumPy: 4 and 2 at q = 0.5)
        np.testing.assert_array_equal(nq, [0.5, -1.0, 2.0, 3.0])


def test_mean_and_nanmean_with_an_integer_dtype_as_jax():
    """mean(x, dtype=int8/uint8) summed in a widened integer (mean of [100, 100, 100, -1] as uint8: JAX's 10 is
    (399 mod 256) // 4); nanmean with an integer dtype returned the default float. JAX 0.10.2's results."""
    x = np.array([[-3, 5, 7, 2], [100, 100, 100, -1]], np.int32)
    f = np.array([[1.5, np.nan, 2.5, 7.9], [-2.5, 3.0, np.nan, 1.0]], np.float32)

    def g(x, f):
        return (snp.mean(x, axis=1, dtype=np.uint8), snp.mean(x, axis=1, dtype=np.int8),
                snp.nanmean(f, axis=1, dtype=np.int32), snp.nanmean(x, axis=0, dtype=np.int32), snp.nanmean(f, axis=1))
    for h in (g, stagec.jit(g)):
        u8, i8, fi, xi, ff = h(x, f)
        assert (u8.dtype, i8.dtype, fi.dtype, xi.dtype) == (np.uint8, np.int8, np.int32, np.int32)
        np.testing.assert_array_equal(np.asarray(u8), [2, 10])
        np.testing.assert_array_equal(np.asarray(i8), [2, 10])
        np.testing.assert_array_equal(np.asarray(fi), [3, 0])
        np.testing.assert_array_equal(np.asarray(xi), [48, 52, 53, 0])
        np.testing.assert_allclose(np.asarray(ff), [3.9666665, 0.5], rtol=1e-6)


def test_cumulative_sum_and_product_with_dtype_bool():
    """cumsum/cumprod(x, dtype=bool) returned the int running count; NumPy and JAX give the running or/and, bool."""
    x = np.array([[0, 2, -1, 0], [0, 0, 3, 1]], np.int32)
    names = ("cumsum", "cumprod", "nancumsum", "nancumprod")
    jitted = stagec.jit(lambda x: {name: getattr(snp, name)(x, axis=1, dtype=bool) for name in names})(x)  # one module
    for name in names:
        for got in (getattr(snp, name)(x, axis=1, dtype=bool), jitted[name]):
            assert got.dtype == np.bool_, name
            np.testing.assert_array_equal(np.asarray(got), getattr(np, name)(x, axis=1, dtype=bool))
    # the Array API's cumulative_sum/prod ignored dtype=bool too (int32 counts); include_initial puts False/True
    for name in ("cumulative_sum", "cumulative_prod"):
        for kw in ({}, {"include_initial": True}):
            got = getattr(snp, name)(x, axis=1, dtype=bool, **kw)
            assert got.dtype == np.bool_, name
            np.testing.assert_array_equal(np.asarray(got), getattr(np, name)(x, axis=1, dtype=bool, **kw))


def test_trapezoid_of_integers_is_computed_in_floats_as_jax():
    """trapezoid added int8 neighbours in int8 (wrapping, as NumPy does: [148, -142] came out [20, -14]) and gave
    booleans' sum the `or`; JAX (the reference) promotes y and x to the inexact dtype first. Against float64 NumPy
    of the converted values."""
    y = (np.arange(1, 7) * 37).astype(np.int8).reshape(2, 3)  # (wrapped already: 37, 74, 111, -108, -71, -34)
    x = np.array([0, 100, 120], np.int8)
    yf, xf = y.astype(np.float64), x.astype(np.float64)
    cases = [(lambda m, a, b: m.trapezoid(a), lambda: np.trapezoid(yf)),
             (lambda m, a, b: m.trapezoid(a, x=b), lambda: np.trapezoid(yf, x=xf)),
             (lambda m, a, b: m.trapezoid(a != 0), lambda: np.trapezoid(np.ones((2, 3)))),
             (lambda m, a, b: m.trapezoid(a, axis=0, dx=0.5), lambda: np.trapezoid(yf, axis=0, dx=0.5))]
    jitted = stagec.jit(lambda a, b: [f(snp, a, b) for f, _ in cases])(y, x)  # (every case in one module)
    for i, ((f, want), in_jit) in enumerate(zip(cases, jitted)):
        for got in (f(snp, y, x), in_jit):
            assert got.dtype == np.float32, i
            np.testing.assert_array_equal(np.asarray(got), want(), err_msg=f"case {i}")


def test_average_with_integer_weights_is_computed_in_floats_as_jax():
    """average multiplied int8 values by int8 weights before converting (wrapping: [1.49, 18.49] came out [0.37,
    0.45]); JAX promotes a and the weights to the inexact dtype first. Against float64 NumPy."""
    y = (np.arange(1, 7) * 91).astype(np.int8).reshape(2, 3)
    w, w2 = np.array([100, 120, 7], np.int8), np.array([300, 400], np.int16)
    def f(a, b, b2):
        return (snp.average(a, axis=1, weights=b, returned=True), snp.average(a.astype(np.int16), axis=0, weights=b2))
    for got, got2 in (f(y, w, w2), stagec.jit(f)(y, w, w2)):  # (eager, then both jitted in one module)
        np.testing.assert_allclose(np.asarray(got[0]), np.average(y.astype(float), axis=1, weights=w.astype(float)),
                                   rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(got[1]), [227, 227])
        np.testing.assert_allclose(np.asarray(got2), np.average(y.astype(float), axis=0, weights=[300, 400]), rtol=1e-6)


BROADCAST_PRODUCT_SUMS = [  # (function of the numpy module, shapes): IREE 3.13's CPU codegen failed on each
    (lambda m, x, a: m.sum(x * a), [(2, 128), (128,)]),
    (lambda m, x, a: m.mean(x * (a * 2)), [(3, 100), (100,)]),
    (lambda m, x, a: m.sum(x * a, axis=(1, 2)), [(4, 3, 100), (100,)]),
    (lambda m, x, a: (m.mean(x * a[:, None, :], axis=(1, 2)), m.minimum(x * a[:, None, :], a[:, None, :])),
     [(3, 16, 127), (3, 127)]),  # (a vmap's batched form)
]


@pytest.mark.parametrize("i", range(len(BROADCAST_PRODUCT_SUMS)))
def test_sums_of_products_with_a_broadcast_vector_compile(i):
    """A sum over two or more axes of `x * a`, `a` broadcast along a summed axis: IREE 3.13 took it for a contraction
    and its CPU codegen failed ("'vector.contract' op invalid accumulator/result vector shape"), a CompileError
    (`broadcast-contractions-apart`). Found 2026-11-29 by random programs. Against NumPy; first call's bits the
    second's; eager too."""
    fn, shapes = BROADCAST_PRODUCT_SUMS[i]
    rng = np.random.default_rng(i)
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    f = stagec.jit(lambda *v: fn(snp, *v))
    first, second = f(*args), f(*args)
    leaves = lambda o: [np.asarray(v) for v in (o if isinstance(o, tuple) else (o,))]
    want = leaves(fn(np, *[a.astype(np.float64) for a in args]))
    for a, b, c, w in zip(leaves(first), leaves(second), leaves(fn(snp, *[snp.asarray(a) for a in args])), want):
        np.testing.assert_allclose(a, w, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(c, w, rtol=1e-5, atol=1e-5)
        assert a.tobytes() == b.tobytes()


def test_quantile_infinities_axis_tuples_inverted_cdf_and_weights():
    """quantile's 'linear' was low + (high - low) * t: between -inf and 1 that is NaN, where JAX's
    low * (1 - t) + high * t (and NumPy's, at t >= 1/2) is -inf; a tuple `axis`, method='inverted_cdf' and
    `weights` raised (JAX has them). Oracles: JAX's values as literals (the infinities), NumPy (the rest)."""
    inf = np.float32(np.inf)
    got = snp.quantile(np.array([-inf, 1, inf, 2]), np.array([0.1, 0.3, 0.5, 0.7], np.float32))
    np.testing.assert_array_equal(np.asarray(got), [-inf, -inf, 1.5, inf])  # (JAX 0.10.2's; NumPy's [nan, -inf, ..])
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    x[0, 1, 2] = x[0, 1, 3]  # a tie
    xn = x.copy()
    xn[1, 2, :] = np.nan
    q = np.array([0, 0.2, 0.5, 0.9, 1], np.float32)
    w = np.random.default_rng(1).integers(0, 4, (4, 5)).astype(np.float32)
    cases = [(fn, axis, kd, method) for axis, kd in (((0, 2), False), ((2, 1), True), (None, True), (1, False))
             for fn in ("quantile", "nanquantile")
             for method in ("linear", "higher", "inverted_cdf")]  # ("nearest": JAX breaks ties down)
    wcases = ((1, 2), (2, 1), None)
    # (one module: eager calls compiled each primitive and took ~30 s)
    got = stagec.jit(lambda x, xn, q, w: (
        [getattr(snp, fn)(x if fn == "quantile" else xn, q, axis=a, keepdims=kd, method=mt) for fn, a, kd, mt in cases],
        [snp.median(x, axis=a, keepdims=kd) for _, a, kd, _ in cases[::6]],
        [snp.quantile(x, q, axis=a, method="inverted_cdf", weights=w if a == (1, 2) else w.T if a else
                      snp.broadcast_to(w, x.shape)) for a in wcases]))(x, xn, q, w)
    for g, (fn, axis, kd, method) in zip(got[0], cases):
        want = getattr(np, fn)(x if fn == "quantile" else xn, q, axis=axis, keepdims=kd, method=method)
        assert g.shape == want.shape, (fn, axis, kd, method)
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6, err_msg=f"{fn} {axis} {kd} {method}")
    for g, (_, axis, kd, _) in zip(got[1], cases[::6]):
        np.testing.assert_allclose(np.asarray(g), np.median(x, axis=axis, keepdims=kd), rtol=1e-6)
    for g, axis in zip(got[2], wcases):
        ww = w if axis == (1, 2) else w.T if axis else np.broadcast_to(w, x.shape)
        np.testing.assert_allclose(np.asarray(g), np.quantile(x, q, axis=axis, method="inverted_cdf", weights=ww),
                                   rtol=1e-6, err_msg=str(axis))
    with pytest.raises(NotImplementedError, match="weights"):
        snp.quantile(x, 0.5, weights=np.ones(x.shape), method="linear")


def test_quantile_positions_in_q_dtype_median_by_midpoint_and_empty_axes_as_jax():
    """quantile cast q to a's dtype and computed the positions in it: 0.5 * 299 in bfloat16 is 150, so the 'lower'
    median of 300 bfloat16 values was x[150] (JAX: x[149]), and of 3000 float16 values x[1500] (JAX: x[1499]).
    median used 'linear' (weights 1 and 0: inf * 0 made median([1, inf, inf]) NaN; JAX's 'midpoint' gives inf);
    nanquantile clamped a q past 1 to the row's end, a NaN (JAX: its last number); a kept axis of size 0 failed to
    reshape; jitted, a quantile over an empty axis was NaN (JAX and NumPy raise). JAX 0.10.2's values as literals."""
    b = np.arange(300).astype(ml_dtypes.bfloat16)
    h = np.arange(3000).astype(np.float16)
    inf = np.inf
    r = np.array([[1, inf, inf, 0], [2, -inf, 5, 7]], np.float32)
    xn = np.array([1, 2, np.nan, 4], np.float32)
    got = stagec.jit(lambda b, h, r, xn, e: (
        snp.quantile(b, 0.5, method="lower"), snp.quantile(h, np.float32(0.5), method="lower"),
        snp.quantile(h, 0.5), snp.median(r[0, :3]), snp.median(r, axis=1), snp.nanmedian(snp.where(r > 6, np.nan, r), axis=1),
        snp.nanquantile(xn, 1.5), snp.nanquantile(xn, np.array([-1.0, 1.25], np.float32), method="higher"),
        snp.quantile(e, 0.5, axis=(0, 2)), snp.median(e, axis=0)))(b, h, r, xn, np.zeros((2, 0, 3), np.float32))
    want = [149.0, 1499.0, 1500.0, inf, [inf, 3.5], [0.5, 2.0], 4.0, [1.0, 4.0]]
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(np.asarray(g, np.float64), w, err_msg=str(k))
    assert got[0].dtype == ml_dtypes.bfloat16 and got[1].dtype == np.float16
    assert got[8].shape == (0,) and got[9].shape == (0, 3)
    for f in (lambda e: snp.quantile(e, 0.5, axis=1), lambda e: snp.nanmedian(e, axis=None)):
        for run in (f, stagec.jit(f)):
            with pytest.raises(IndexError):
                run(np.zeros((2, 0, 3), np.float32))


def test_var_dtypes_mean_argument_promote_integers_and_out_positions_as_jax():
    """JAX's keywords and dtype rules that stagec lacked: sum/prod `promote_integers=False` (a TypeError);
    var/std/nanvar/nanstd `mean=` (a TypeError); nanmean/nanvar/nanstd/nansum's `out` in JAX's position (so
    `nanvar(x, 0, None, None, 1)` bound 1 to keepdims and None to ddof); var with an integer `dtype` and
    correction=1.5 raised on a reshape (JAX: float32 of the integer arithmetic), var(float16, dtype=complex64) was
    float32 (JAX: complex64), nanvar(bfloat16, dtype=int8) float32 (JAX: int8); mean(complex [-inf+1j]) was
    -inf+nanj (divided by 1+0j). JAX 0.10.2's values as literals."""
    x = np.array([[1.5, -2.25, 7.0, 3.0], [0.5, 4.0, -1.0, 9.5]], np.float32)
    xn = np.array([[1.5, np.nan, 7.0, 3.0], [np.nan, 4.0, -1.0, 9.5]], np.float32)
    xb = (x * 3).astype(ml_dtypes.bfloat16)
    h = np.array([0.5, 1.5, 4.25], np.float16)

    def f(x, xn, xb, h):
        return [snp.sum(np.array([100, 100, 100], np.int8), promote_integers=False),
                snp.sum(np.array([True, True, False]), promote_integers=False),
                snp.prod(np.array([16, 16, 2], np.uint8), promote_integers=False),
                snp.var(x, axis=1, dtype=np.int32, correction=1.5, keepdims=True),
                snp.var(h, dtype=np.complex64),
                snp.var(x, axis=1, mean=np.array([[1.0], [2.0]], np.float32)),
                snp.std(x, axis=0, mean=snp.mean(x, 0, keepdims=True), ddof=1),
                snp.nanvar(xb, axis=1, dtype=np.int8),
                snp.nanvar(xn, 0, None, None, 1),
                snp.nanstd(xn, 1, None, None, 0, True),
                snp.nanvar(xn, axis=1, mean=np.array([[3.0], [4.0]], np.float32)),
                snp.argmax(x, 1, None, True),
                snp.mean(np.array([-np.inf + 1j], np.complex64))]
    want = [(44, np.int8), (2, np.int32), (0, np.uint8), ([[14.0], [20.0]], np.float32),
            (2.5138888 + 0j, np.complex64), ([12.703125, 17.875], np.float32),
            ([0.70710677, 4.4194174, 5.656854, 4.5961943], np.float32), ([-33, 16], np.int8),
            ([np.nan, np.nan, 32.0, 21.125], np.float32), ([[2.321398], [4.2882266]], np.float32),
            ([6.0833335, 18.416666], np.float32), ([[2], [3]], np.int32), (-np.inf + 1j, np.complex64)]
    for k, (g, (w, dt)) in enumerate(zip(stagec.jit(f)(x, xn, xb, h), want)):
        assert g.dtype == dt, (k, g.dtype)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w, dt), rtol=1e-6, err_msg=str(k))
    for bad, err in ((lambda: snp.var(x.astype(np.complex64), dtype=np.float32), ValueError),
                     (lambda: snp.std(x, dtype=np.int32), ValueError), (lambda: snp.var(x, ddof=1, correction=1), ValueError),
                     (lambda: snp.nanstd(x, dtype=np.int32), TypeError), (lambda: snp.nanmean(x, out=x), NotImplementedError)):
        with pytest.raises(err):
            bad()


def test_products_with_a_converted_mask_keep_nan_and_max_gradients_at_nan_as_jax():
    """Under jit `x * b.astype(float32)` of a bool b gave 0 where x is inf or NaN and b is False (IREE 3.13 rewrote
    the product of a converted bool as select(b, x, 0); IEEE and JAX: NaN), so the gradient of `max` over a row
    holding a NaN was 0 under jit (JAX and eager stagec: NaN, its tie count 0 / 0); ties still share the gradient.
    JAX 0.10.2's values as literals; eager alike."""
    q = np.array([np.inf, np.inf, np.nan, -np.inf], np.float32)
    b = np.array([False, True, False, False])
    x = np.array([[1, np.nan, 3], [3, 1, 3]], np.float32)

    def f(q, b, x):
        return q * b.astype(np.float32), q * b.astype(np.float16), stagec.grad(lambda v: snp.max(v, axis=1).sum())(x)
    for got in (stagec.jit(f)(q, b, x), f(q, b, x)):
        np.testing.assert_array_equal(np.asarray(got[0]), [np.nan, np.inf, np.nan, np.nan])
        np.testing.assert_array_equal(np.asarray(got[1]), np.array([np.nan, np.inf, np.nan, np.nan], np.float16))
        np.testing.assert_array_equal(np.asarray(got[2]), [[np.nan] * 3, [0.5, 0.0, 0.5]])


def test_gradients_of_nanmedian_and_logsumexp_with_nan_masks_and_negative_sums_as_jax():
    """Gradients that reached entries JAX keeps constant: nanmedian/nanpercentile of an all-NaN row sent the
    cotangent to a NaN entry (JAX: 0, its NaNs are a constant NaN); logsumexp(b=...) of a negative sum had the
    gradient of log(negative) (JAX selects a NaN: 0); logsumexp(where=...) gave NaN gradients at masked NaNs (JAX
    zeroes them first). logsumexp(complex, return_sign=True) was complex (JAX: real log|sum|, shifted by the max
    of the real parts). JAX 0.10.2's values as literals."""
    nan = np.nan
    x = np.array([[1, nan, 3, 2], [nan] * 4, [0.5, -1, 2, 4]], np.float32)
    w = np.array([[True, False, True, True], [False, True, False, False], [True, True, False, True]])
    b = np.array([1, -2, 0.5, 3], np.float32)
    big = np.array([[0, 5, 0, 0], [0] * 4, [0] * 4], np.float32)
    c = np.array([[3 + 0j, 2j, 3 + 0j, -2 + 0j], [1 - 1j, 0.5 + 2j, -3j, 2 + 0j]], np.complex64)

    def f(x, c):
        g = lambda fn: stagec.grad(lambda v: fn(v).sum())(x)
        return [g(lambda v: snp.nanmedian(v, axis=1) * np.array([1.0, 2, 3], np.float32)),
                g(lambda v: snp.nanpercentile(v, 30.0, axis=1)),
                g(lambda v: nn.logsumexp(snp.where(snp.isnan(v), 0, v) + big, axis=1, b=b)),
                g(lambda v: nn.logsumexp(v, axis=1, where=w)), *nn.logsumexp(c, axis=1, return_sign=True)]
    want = [[[0, 0, 0, 1], [0] * 4, [1.5, 0, 1.5, 0]], [[0.4, 0, 0, 0.6], [0] * 4, [0.9, 0.1, 0, 0]],
            [[0] * 4, [0] * 4, [0.00979039, -0.00436906, 0.02193875, 0.9726399]],
            [[0.09003057, 0, 0.6652409, 0.24472845], [0, nan, 0, 0], [0.02912176, 0.00649794, 0, 0.9643803]],
            [3.6863918, 1.9798315], [0.9997403 + 0.02278905j, 0.99173164 - 0.12832901j]]
    got = stagec.jit(f)(x, c)
    for k, (g, wv) in enumerate(zip(got, want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(wv), rtol=2e-6, atol=1e-7, err_msg=str(k))
    assert got[4].dtype == np.float32 and got[5].dtype == np.complex64


def test_reductions_over_no_axes_return_the_operand_and_bool_sums_without_promotion_as_jax():
    """A reduction over no axes (a 0-d array, `axis=()`) or one element added the identity: sum(float32(-0.0)), its
    mean and sum([[-0.0, 2]], axis=0) had 0.0 (JAX's: -0.0), prod([inf+1j]) was inf+nanj (JAX's XLA reduce of one
    element is that element: inf+1j); sum(bool, promote_integers=False) under x64 was
    int64 (JAX: int32). JAX 0.10.2's values as literals; eager (twice: the eager shortcut caches a plan) and jit."""
    z = np.float32(-0.0)
    x = np.array([[-0.0, 2.0]], np.float32)

    def f(z, x):
        return (snp.sum(z), snp.mean(z), snp.sum(x, axis=()), snp.sum(x, axis=(), where=np.array([True, False])),
                snp.sum(np.float16(-0.0)), snp.sum(np.array([True, False]), promote_integers=False),
                snp.sum(x, axis=0), snp.mean(x, axis=0), snp.prod(np.array([np.inf + 1j], np.complex64)))
    for got in (f(z, x), f(z, x), stagec.jit(f)(z, x)):
        assert complex(got[8]) == np.inf + 1j  # (a reduction of one element: that element, 1 * (inf+1j) is inf+nanj)
        got = [np.asarray(g) for g in got]
        for g, w in zip(got[:5] + got[6:8], [-0.0, -0.0, [[-0.0, 2.0]], [[-0.0, 0.0]], -0.0, [-0.0, 2.0], [-0.0, 2.0]]):
            np.testing.assert_array_equal(g, w)
            np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
        assert got[4].dtype == np.float16 and got[5].dtype == np.int32 and got[5] == 1
    old = stagec.config.enable_x64
    stagec.config.update("enable_x64", True)
    try:
        got = snp.sum(np.array([True, False, True]), promote_integers=False)
        assert got.dtype == np.int32 and int(got) == 2
    finally:
        stagec.config.update("enable_x64", old)


def test_quantile_of_a_number_as_of_an_array_q_and_odd_median_of_subnormals(x64):
    """A number q's positions are constants (slices of the sorted values, not gathers): the same values as an Array
    q's and as NumPy's, NaN, infinities and signed zeros among them, axes and keepdims. An odd-length 'midpoint'
    median is its middle value itself: jitted, (v + v) / 2 of a float64 subnormal was 0 (the kernel flushes it), the
    eager call's 5e-324; NumPy's 5e-324."""
    a = np.array([-1.0, 5e-324, 1.0])
    for run in (snp.median, stagec.jit(snp.median)):
        assert [float(run(a)) for _ in range(3)] == [np.median(a)] * 3 == [5e-324] * 3
    rng = np.random.default_rng(4)
    pool = np.array([np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 3e38, -3e38, np.nan])
    for dt in (np.float32, np.float64):
        for shape, axis in (((16,), None), ((4, 5), 1), ((3, 4, 2), (0, 2)), ((5, 3), None)):
            for vals in (rng.standard_normal(shape), rng.choice(pool[:-1], shape), rng.choice(pool, shape)):
                x = vals.astype(dt)
                for method in ("linear", "lower", "higher", "midpoint", "nearest"):
                    for q in (0.5, 0.3, 1.0, 0.0):
                        for kd in (False, True):
                            got = snp.quantile(x, dt(q), axis=axis, method=method, keepdims=kd)
                            arr = snp.quantile(x, snp.asarray(dt(q)), axis=axis, method=method, keepdims=kd)
                            assert got.shape == arr.shape and np.asarray(got).tobytes() == np.asarray(arr).tobytes()
                            # (JAX's 'nearest' ties take the lower value, NumPy's the even one; its 'linear' between
                            # -inf and 1 is -inf, NumPy's NaN)
                            if method != "nearest" and not np.isinf(x).any():
                                with warnings.catch_warnings():
                                    warnings.simplefilter("ignore")
                                    want = np.quantile(x.astype(np.float64), q, axis=axis, method=method, keepdims=kd)
                                np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-6)


def test_nan_quantiles_of_rows_with_and_without_nan_give_numpys_values_and_one_answer():
    """nanmedian and nanquantile (methods but 'linear') of a number q take the constant positions in rows without NaN
    (eagerly the NaN-counting steps are skipped where no row has one): NumPy's values, every eager call's bits the
    same and jit's, with rows of NaN, of none, all NaN and infinities."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((5, 6)).astype(np.float32)
    x[1, [0, 4]] = np.nan
    x[2, :] = np.nan
    x[3, 2] = np.inf
    x[4, 1] = -np.inf
    clean = x[[0, 3, 4]]
    cases = [(snp.nanmedian, np.nanmedian, {}), (snp.nanquantile, np.nanquantile, {"q": 0.25, "method": "lower"}),
             (snp.nanquantile, np.nanquantile, {"q": 0.6, "method": "higher"}),
             (snp.nanpercentile, np.nanpercentile, {"q": 40.0, "method": "nearest"})]
    for v in (x, clean):
        for f, g, kw in cases:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # (NumPy's all-NaN slice)
                want = g(v.astype(np.float64), axis=1, **kw).astype(np.float32)
            got = [np.asarray(f(snp.asarray(v), axis=1, **kw)) for _ in range(3)]
            jitted = np.asarray(stagec.jit(lambda a: f(a, axis=1, **kw))(v))
            np.testing.assert_array_equal(got[0], want, err_msg=f"{f.__name__} {kw}")
            for other in (*got[1:], jitted):
                np.testing.assert_array_equal(other.view(np.uint32), got[0].view(np.uint32), err_msg=f.__name__)
