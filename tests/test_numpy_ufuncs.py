"""Differential tests of the elementwise functions: stagec eager, stagec jit and NumPy agree (values),
and result dtypes / weak types follow JAX. Special values (NaN, inf, -0.0), integer overflow and empty
arrays are covered explicitly."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import stagec
import stagec.numpy as snp
from numpy_diff import (BF16, BOOL, F16, F32, I8, I16, I32, MAX_EXAMPLES, U8, U32, arrays, assert_matches, check, jax_out,
                        jitted, jnp)

# No shrinking: each shrink step may compile new signatures; the failing example is printed as drawn.
SETTINGS = settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])

# name -> (domain low, high) of the inputs drawn for it.
UNARY = {
    "exp": (-10, 10), "exp2": (-10, 10), "expm1": (-10, 10), "log": (0.01, 100), "log2": (0.01, 100),
    "log10": (0.01, 100), "log1p": (-0.9, 100), "sqrt": (0, 100), "cbrt": (-100, 100), "sin": (-10, 10),
    "cos": (-10, 10), "tan": (-1.4, 1.4), "arcsin": (-0.99, 0.99), "arccos": (-0.99, 0.99), "arctan": (-100, 100),
    "sinh": (-8, 8), "cosh": (-8, 8), "tanh": (-10, 10), "arcsinh": (-100, 100), "arccosh": (1, 100),
    "arctanh": (-0.99, 0.99), "negative": (-100, 100), "positive": (-100, 100), "abs": (-100, 100),
    "sign": (-100, 100), "floor": (-100, 100), "ceil": (-100, 100), "round": (-100, 100), "trunc": (-100, 100),
    "square": (-100, 100), "reciprocal": (0.5, 100), "isnan": (-100, 100), "isinf": (-100, 100),
    "isfinite": (-100, 100), "rint": (-100, 100), "fix": (-100, 100),
}
NAMES = sorted(UNARY)
_NUMPY_REF = {"reciprocal": lambda x: 1.0 / x.astype(np.float64), "fix": np.trunc}


def _all_unary(xs: dict) -> dict:
    return {n: getattr(snp, n)(xs[n]) for n in NAMES}


def _ref(name: str, x: np.ndarray, out_dtype: np.dtype):
    f = _NUMPY_REF.get(name, getattr(np, name))
    return f(x.astype(np.float64) if stagec.dtypes.kind(out_dtype) == "f" else x)


@SETTINGS
@given(st.data())
def test_unary_functions_match_numpy(data):
    dtype = data.draw(st.sampled_from([F32, I8, F16, U8, BF16]), "dtype")
    shape = data.draw(st.sampled_from([(2, 3), (), (0,)]), "shape")
    run_eager = shape == (2, 3) and dtype in (F32, I8)  # eager compiles per primitive: keep to few signatures
    xs = {}
    for n in NAMES:
        lo, hi = UNARY[n]
        if dtype.kind in "iu":
            lo, hi = math.ceil(lo), math.floor(hi)
            if n in ("negative", "positive", "abs", "sign", "square", "floor", "ceil", "round", "trunc", "fix", "rint"):
                lo, hi = None, None  # integer wrap-around, as NumPy
            if n == "sign" and dtype.kind == "u":
                lo = 0
        xs[n] = data.draw(arrays(dtype, shape, lo, hi), n)
    jit = jitted(_all_unary)(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in NAMES:
            eager = getattr(snp, n)(xs[n]) if run_eager else jit[n]
            want = _ref(n, xs[n], eager.dtype)
            assert eager.dtype == jit[n].dtype, n
            assert_matches(eager, want, f"{n} eager {dtype}")
            assert_matches(jit[n], want, f"{n} jit {dtype}")
            if jnp is not None and n not in ("fix",):
                o = jax_out(getattr(jnp, n), xs[n])
                assert (eager.dtype, eager.weak_type) == (o.dtype, o.weak_type), f"{n}({dtype}): {eager.aval} vs JAX {o}"


# ---------------------------------------------------------------- binary functions

ARITH = ["add", "subtract", "multiply", "maximum", "minimum", "fmax", "fmin", "equal", "not_equal", "less",
         "less_equal", "greater", "greater_equal"]
FLOAT_ONLY = ["divide", "true_divide", "arctan2", "hypot", "power", "logaddexp", "copysign"]
INT_ONLY = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "floor_divide", "mod",
            "remainder", "power"]
LOGICAL = ["logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "equal",
           "not_equal", "maximum", "minimum", "add", "multiply"]


def _arith(x, y):
    return [getattr(snp, n)(x, y) for n in ARITH]


def _float_only(x, y):
    return [getattr(snp, n)(x, y) for n in FLOAT_ONLY]


def _int_only(x, y):
    return [getattr(snp, n)(x, y) for n in INT_ONLY]


def _logical(x, y):
    return [getattr(snp, n)(x, y) for n in LOGICAL] + [snp.logical_not(x), snp.invert(x)]


def _np_binary(names, x, y):
    out = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for n in names:
            out.append(getattr(np, n)(x, y))
    return out


def _promoted(x, y, kind_float: bool):
    """Inputs cast to the JAX-promoted dtype (float64 for floating results, to compute the reference)."""
    dt = jnp.result_type(x, y) if jnp is not None else np.result_type(x, y)
    wide = np.float64 if kind_float or np.dtype(dt).kind == "f" else dt
    # A weak Python scalar becomes the promoted dtype first (bfloat16 holds 3.4004 as 3.4062), then widens.
    cast = lambda v: np.asarray(v).astype(dt).astype(wide)
    return cast(x), cast(y)


# (lhs dtype, rhs dtype or a Python scalar type): mixed pairs exercise JAX's promotion table and weak types.
PAIRS = [(F32, F32), (I32, I32), (I8, U8), (F16, float), (I32, int), (U8, U32), (F16, I8), (I16, F32)]


@SETTINGS
@given(st.data())
def test_arithmetic_and_comparisons_match_numpy(data):
    lt, rt = data.draw(st.sampled_from(PAIRS), "dtypes")
    sx, sy = data.draw(st.sampled_from([((2, 3), (2, 3)), ((2, 3), (3,)), ((), (2, 1)), ((0,), ())]), "shapes")
    x = data.draw(arrays(lt, sx, -50, 50), "x")
    y = data.draw(arrays(rt, sy, -50, 50) if isinstance(rt, np.dtype) else
                  st.integers(-50, 50) if rt is int else st.floats(-50, 50, width=16), "y")

    def ref(a, b):
        pa, pb = _promoted(a, b, False)
        if jnp is not None and np.dtype(jnp.result_type(a, b)).kind in "iu":  # integer results wrap in their dtype
            dt = jnp.result_type(a, b)
            pa, pb = np.asarray(a).astype(dt), np.asarray(b).astype(dt)
        return _np_binary(ARITH, pa, pb)

    check(_arith, ref, x, y, jfn=lambda a, b: [getattr(jnp, n)(a, b) for n in ARITH], what=f"arith {lt},{rt}",
          scale=100, eager=sx == sy and rt in (F32, I32, int))


@SETTINGS
@given(st.data())
def test_float_binary_functions_match_numpy(data):
    lt, rt = data.draw(st.sampled_from([(F32, F32), (F16, F16), (I8, F32), (F32, float), (BF16, BF16), (BF16, float)]),
                       "dtypes")
    shape = data.draw(st.sampled_from([(2, 3), ()]), "shape")
    x = data.draw(arrays(lt, shape, 0, 20), "x")
    y = data.draw(arrays(rt, shape, -4, 4) if isinstance(rt, np.dtype) else st.floats(-4, 4, width=16), "y")
    check(_float_only, lambda a, b: _np_binary(FLOAT_ONLY, *_promoted(a, b, True)), x, y,
          jfn=lambda a, b: [getattr(jnp, n)(a, b) for n in FLOAT_ONLY], what=f"float binary {lt},{rt}", scale=10,
          eager=(lt, rt, shape) == (F32, F32, (2, 3)))


@SETTINGS
@given(st.data())
def test_integer_binary_functions_match_numpy(data):
    """Integer division/remainder (including by zero and INT_MIN // -1), shifts, bit operations, powers."""
    dt = data.draw(st.sampled_from([I32, U8]), "dtype")
    shape = data.draw(st.sampled_from([(4,), (2, 3)]), "shape")
    x = data.draw(arrays(dt, shape), "x")
    y = data.draw(arrays(dt, shape, 0 if dt.kind == "u" else -3, 12), "y")  # small: shifts and exponents
    check(_int_only, lambda a, b: _np_binary(INT_ONLY, a, b), x, y,
          jfn=lambda a, b: [getattr(jnp, n)(a, b) for n in INT_ONLY[:-1]] + [jnp.power(a, b)],
          what=f"int binary {dt}", eager=shape == (4,)) if dt.kind == "u" else None
    if dt.kind == "i":  # NumPy refuses negative integer powers; compare the rest on non-negative exponents
        yy = np.abs(y).astype(dt)
        check(_int_only, lambda a, b: _np_binary(INT_ONLY, a, b), x, yy, what=f"int binary {dt}", eager=shape == (4,))


@SETTINGS
@given(st.data())
def test_logical_and_boolean_functions_match_numpy(data):
    shape = data.draw(st.sampled_from([(2, 3), (0,), ()]), "shape")
    x, y = data.draw(arrays(BOOL, shape), "x"), data.draw(arrays(BOOL, shape), "y")
    # (the unary ones in the same module: one compile per shape)
    check(_logical, lambda a, b: _np_binary(LOGICAL, a, b) + [np.logical_not(a), np.invert(a)], x, y,
          jfn=lambda a, b: [getattr(jnp, n)(a, b) for n in LOGICAL] + [jnp.logical_not(a), jnp.invert(a)],
          what="logical", eager=shape == (2, 3))


def _where_select_clip(c, x, y):
    return [snp.where(c, x, y), snp.select([c, ~c], [x, y], default=7), snp.clip(x, -3, 4), snp.clip(x, y, 2.5),
            snp.bitwise_not(c), snp.logical_xor(c, x)]


@SETTINGS
@given(st.data())
def test_where_select_clip_match_numpy(data):
    dt = data.draw(st.sampled_from([F32, I32, I8]), "dtype")
    shape = data.draw(st.sampled_from([(2, 3), (3,)]), "shape")
    c = data.draw(arrays(BOOL, shape), "c")
    x, y = data.draw(arrays(dt, shape, -10, 10), "x"), data.draw(arrays(dt, (3,), -10, 10), "y")

    def ref(c, x, y):
        with np.errstate(all="ignore"):
            rt = jnp.result_type(x, 2.5) if jnp is not None else np.float32
            return [np.where(c, x, y), np.select([c, ~c], [x, y], default=7), np.clip(x, -3, 4),
                    np.minimum(np.maximum(x, y), 2.5).astype(rt), ~c, np.logical_xor(c, x)]

    check(_where_select_clip, ref, c, x, y, what=f"where/select/clip {dt}", eager=shape == (2, 3) and dt == F32,
          jfn=lambda c, x, y: [jnp.where(c, x, y), jnp.select([c, ~c], [x, y], default=7), jnp.clip(x, -3, 4),
                               jnp.clip(x, y, 2.5), ~c, jnp.logical_xor(c, x)])


# ---------------------------------------------------------------- special values


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e30, -1e-30],
                   np.float32)


def _special_unary(x):
    return {n: getattr(snp, n)(x) for n in ["negative", "abs", "sign", "floor", "ceil", "round", "trunc", "sqrt",
                                            "exp", "log", "isnan", "isinf", "isfinite", "tanh", "square",
                                            "signbit"]}


def test_special_values_and_signed_zeros_match_numpy():
    # Eager on 2x7 (rank 2: the float32 kernels the other tests' eager checks compile), jit on 14 values.
    eager, jit = _special_unary(SPECIAL.reshape(2, 7)), jitted(_special_unary)(SPECIAL)
    with np.errstate(all="ignore"):
        for n, got in eager.items():
            want = getattr(np, n)(SPECIAL)
            for g in (np.asarray(got).reshape(-1), jit[n]):
                assert_matches(g, want, n)
                if want.dtype.kind == "f":  # the sign of zero, NaN and inf must match, not just the value
                    np.testing.assert_array_equal(np.signbit(np.asarray(g)[~np.isnan(want)]),
                                                  np.signbit(want[~np.isnan(want)]), err_msg=f"{n} signbit")


def _nan_binary(x, y):
    return [snp.maximum(x, y), snp.minimum(x, y), snp.fmax(x, y), snp.fmin(x, y), snp.hypot(x, y),
            snp.floor_divide(x, y), snp.remainder(x, y), snp.arctan2(x, y), snp.clip(x, -1, 1), x * y]


def test_nan_inf_propagation_matches_numpy():
    x = np.array([np.nan, 1.0, np.nan, np.inf, -np.inf, 3.0, -7.0, 7.0, 0.0, 5.0, -0.0, 0.0, np.inf, -0.0, -np.inf,
                  -1.0, -np.inf], np.float32)
    y = np.array([1.0, np.nan, np.nan, np.nan, 2.0, np.inf, 2.0, -2.0, 0.0, 0.0, 0.0, -0.0, np.inf, -0.0, -np.inf,
                  -np.inf, np.inf], np.float32)
    want = [np.maximum(x, y), np.minimum(x, y), np.fmax(x, y), np.fmin(x, y), np.hypot(x, y)]
    with np.errstate(all="ignore"):
        want += [np.floor_divide(x, y), np.remainder(x, y), np.arctan2(x, y), np.clip(x, -1, 1), x * y]
    for got in (jitted(_nan_binary)(x, y),):  # eager runs the same primitives; see the special unary test
        for n, (g, w) in enumerate(zip(got, want)):
            assert_matches(g, w, f"nan binary #{n}")


def _pow_edges(x, y):
    return [snp.power(x, y), x ** y]


def test_float_power_special_cases_match_numpy():
    """NumPy's pow for negative bases, zeros, infinities and NaN (IREE's own pow gets these wrong)."""
    x = np.array([0, 0, 0, -2, -2, -8, 2, np.inf, 1, np.nan, 1, -0.0, -0.0, -np.inf, 0.5, 2, -1, -np.inf, -0.5, -1],
                 np.float32)
    y = np.array([0, 2, -1, 2, 3, 1 / 3, 0.5, 0, np.nan, 0, np.inf, 3, -3, 3, np.inf, -np.inf, np.inf, 0.5, np.inf,
                  -np.inf], np.float32)
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    # eager on 4x5 (the rank-2 float32 kernels of the other eager checks), jit on 20 values
    eager = [np.asarray(g).reshape(-1) for g in _pow_edges(x.reshape(4, 5), y.reshape(4, 5))]
    for got in (eager, jitted(_pow_edges)(x, y)):
        for g in got:
            assert_matches(g, want, "pow")
            np.testing.assert_array_equal(np.signbit(np.asarray(g))[~np.isnan(want)], np.signbit(want)[~np.isnan(want)])


def _int_edges(x, y):
    return [x // y, x % y, snp.fmod(x, y), x + x, x * y, -x, snp.abs(x), x - y]


def test_integer_overflow_and_division_by_zero_follow_numpy():
    """Wrap-around like NumPy; integer // and % by zero give 0 and INT_MIN // -1 gives INT_MIN, as NumPy."""
    lo, hi = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    x = np.array([lo, lo, hi, 7, -7, 0, 5], np.int32)
    y = np.array([-1, 1, 2, 0, 0, 0, -2], np.int32)
    with np.errstate(all="ignore"):
        want = [x // y, x % y, np.fmod(x, y), x + x, x * y, -x, np.abs(x), x - y]
    for got in (_int_edges(x, y), jitted(_int_edges)(x, y)):
        for n, (g, w) in enumerate(zip(got, want)):
            assert_matches(g, w, f"int edge #{n}")
    u = np.array([0, 1, 255], np.uint8)
    np.testing.assert_array_equal(np.asarray(snp.negative(u)), np.negative(u))
    np.testing.assert_array_equal(np.asarray(snp.asarray(u) + np.uint8(1)), u + np.uint8(1))


def test_empty_arrays_elementwise():
    e = np.zeros((0, 3), np.float32)
    # Eager: a unary, a binary with a scalar, a select and a broadcast operand (arctan2's composite of the same
    # elementwise kernels is under jit only: each eager primitive on an empty shape is one more compile).
    fn = lambda a: [snp.exp(a), a + 1, snp.where(a > 0, a, 0.0), snp.maximum(a, snp.ones(3))]
    for got in (fn(e), jitted(lambda a: fn(a) + [snp.arctan2(a, a)])(e)):
        for g in got:
            assert g.shape == (0, 3) and g.dtype == np.float32


def test_power_special_cases():
    x = np.array([2, -2, 0, 1, -1, 3], np.int32)
    np.testing.assert_array_equal(np.asarray(stagec.jit(snp.power)(x, np.array([10, 3, 0, 7, 5, 20], np.int32))),
                                  np.power(x, np.array([10, 3, 0, 7, 5, 20], np.int32)))
    # A negative array exponent: 1/x**n rounded toward zero (1 and -1 keep magnitude 1), eager and jit alike
    # (NumPy raises; tests/test_one_answer.py has more).
    for f in (snp.power, stagec.jit(snp.power)):
        np.testing.assert_array_equal(np.asarray(f(x, np.full(6, -3, np.int32))), [0, 0, 0, 1, -1, 0])
    # a float32 Array ** a Python float stays float32 (on 2x3: the rank-2 kernels the other eager checks compile)
    r = snp.asarray(np.full((2, 3), 2.0, np.float32)) ** 0.5
    assert r.dtype == np.float32
    np.testing.assert_allclose(np.asarray(r), np.full((2, 3), np.sqrt(2.0)), rtol=1e-6)


def test_elementwise_errors_match_numpy_kinds():
    b = np.array([True, False])
    for fn in (snp.negative, snp.sign):
        with pytest.raises(TypeError):
            fn(b)
        with pytest.raises(TypeError):
            getattr(np, fn.__name__)(b)
    with pytest.raises(TypeError):
        snp.left_shift(np.float32(1), 2)
    with pytest.raises(TypeError):
        np.left_shift(np.float32(1), 2)
    with pytest.raises(TypeError):
        snp.bitwise_and(np.float32(1), np.float32(1))
    with pytest.raises(TypeError):
        np.bitwise_and(np.float32(1), np.float32(1))
    with pytest.raises(ValueError):
        snp.add(np.zeros(2), np.zeros(3))
    with pytest.raises(ValueError):
        np.add(np.zeros(2), np.zeros(3))
    with pytest.raises(TypeError):
        snp.add(np.zeros(2), "a")


# ---------------------------------------------------------------- complex64


def _complex_fns(z, w):
    return [z + w, z * w, z / w, z - 1j, snp.exp(z), snp.log(z), snp.sqrt(z), snp.abs(z), snp.conj(z),
            snp.real(z), snp.imag(z), snp.angle(z), snp.isfinite(z), snp.isinf(z), snp.sum(z), snp.mean(z),
            snp.var(z), snp.matmul(z[None], w[:, None]), snp.where(snp.real(z) > 0, z, w), z ** 2, snp.sign(z),
            snp.sin(z), snp.tanh(z), snp.vdot(z, w), snp.einsum("i,i->", z, w), snp.square(z)]


def test_complex64_matches_numpy():
    """complex64 through eager and jit (with the default passes, which leave complex constants alone)."""
    rng = np.random.default_rng(0)
    z = (rng.standard_normal(5) + 1j * rng.standard_normal(5)).astype(np.complex64)
    w = (rng.standard_normal(5) + 1j * rng.standard_normal(5)).astype(np.complex64)
    with np.errstate(all="ignore"):
        want = [z + w, z * w, z / w, z - 1j, np.exp(z), np.log(z), np.sqrt(z), np.abs(z), np.conj(z), np.real(z),
                np.imag(z), np.angle(z), np.isfinite(z), np.isinf(z), np.sum(z), np.mean(z), np.var(z),
                np.matmul(z[None], w[:, None]), np.where(np.real(z) > 0, z, w), z ** 2, np.sign(z), np.sin(z),
                np.tanh(z), np.vdot(z, w), np.einsum("i,i->", z, w), np.square(z)]
    jit = stagec.jit(_complex_fns)(z, w)
    eager = [snp.asarray(z) * snp.asarray(w), snp.exp(snp.asarray(z)), snp.abs(snp.asarray(z)), snp.conj(z),
             snp.real(z), snp.imag(z)]
    for got, ref in ((eager, [want[1], want[4], want[7], want[8], want[9], want[10]]), (jit, want)):
        for k, (g, ww) in enumerate(zip(got, ref)):
            assert_matches(g, ww, f"complex #{k}", rtol=1e-5, atol=1e-5)
            assert g.dtype == (ww.dtype if ww.dtype in (np.bool_, np.complex64) else np.float32) or \
                ww.dtype == np.complex128 and g.dtype == np.complex64, f"complex #{k}: {g.dtype}"


def test_rint_rounds_complex_parts():
    """rint of a complex value rounds each part, halves to even (it returned the value unrounded, silently; JAX's
    docstring example). Against NumPy."""
    x = np.array([-2.5 + 3.5j, 4.5 - 0.5j, 1.4 + 2.6j, -0.5 - 1.5j], np.complex64)
    for got in (snp.rint(x), stagec.jit(snp.rint)(x)):
        np.testing.assert_array_equal(np.asarray(got), np.rint(x))


def test_signbit_reads_the_sign_of_nan_and_zero():
    """The sign bit itself (a float's bits as a signed integer's), as NumPy and JAX: -NaN and -0.0 included, in every
    float dtype, eagerly and under jit; copysign from a -NaN takes its sign. (It was False for -NaN.)"""
    import ml_dtypes
    v = np.array([-np.nan, np.nan, -0.0, 0.0, -np.inf, np.inf, -2.5, 3.0, -1e-30], np.float32)
    dts = (np.float32, np.float16, ml_dtypes.bfloat16)
    *signbits, copysigned = stagec.jit(lambda *xs: (*map(snp.signbit, xs), snp.copysign(3.0, xs[0])))(
        *(v.astype(dt) for dt in dts))  # (one module: every dtype's signbit and copysign)
    for dt, in_jit in zip(dts, signbits):
        x = v.astype(dt)
        want = np.signbit(x.astype(np.float32))  # (float32 keeps a NaN's sign)
        assert want[0] and not want[1]
        for got in (snp.signbit(snp.asarray(x)), in_jit):
            assert np.asarray(got).tolist() == want.tolist(), dt
    np.testing.assert_array_equal(np.asarray(copysigned), np.copysign(3.0, v))
    assert np.asarray(snp.signbit(np.float32(-0.0))) and np.asarray(snp.copysign(1.0, -2.0)) == -1.0  # (0-d, eager)
    with pytest.raises(ValueError, match="not well defined"):
        snp.signbit(np.array([1j], np.complex64))


# ---------------------------------------------------------------- ldexp, float_power, linspace: JAX's dtypes

_LDEXP_X1 = {"bool": np.array([True, False, True]), "int8": np.array([1, -3, 5], np.int8),
             "float16": np.array([1.5, -0.25, 3.0], np.float16), "bfloat16": np.array([1.5, -0.25, 3.0], BF16),
             "float32": np.array([1.5, -3e38, 1e-30], np.float32)}
_LDEXP_X2 = {"int8": [0, -5, 7], "uint8": [0, 4, 200], "int16": [3, -300, 20], "uint16": [1, 0, 70],
             "int32": [2, -126, 100], "uint32": [3, 4, 1 << 31]}


def test_ldexp_of_every_integer_exponent_dtype_is_x1_times_a_power_of_two():
    """x1 * 2**x2 against float64 NumPy, rounded once to the result's dtype (x1's float, as jax.numpy's), for every
    integer exponent dtype. An unsigned exponent was clipped to [-lim, lim] as that dtype, where -lim wraps to a large
    value: ldexp(True, uint32 3) gave inf, ldexp(1, uint8 0) 2**23 (a silent wrong answer, eager and jitted)."""
    x2s = {b: np.array(x2, b) for b, x2 in _LDEXP_X2.items()}
    pairs = {(a, b): (x1, x2s[b]) for a, x1 in _LDEXP_X1.items() for b in x2s}
    # (one module, each x1 and x2 passed once: the pairs of one operand share its work there)
    got = stagec.jit(lambda x1s, x2s: {(a, b): snp.ldexp(x1s[a], x2s[b]) for a, b in pairs})(_LDEXP_X1, x2s)
    got[("eager", "uint8")] = snp.ldexp(np.array([1.0, 2.0], np.float32), np.array([0, 3], np.uint8))
    pairs[("eager", "uint8")] = (np.array([1.0, 2.0], np.float32), np.array([0, 3], np.uint8))
    for k, (x1, x2) in pairs.items():
        dt = np.float32 if x1.dtype.kind in "biu" else x1.dtype
        with np.errstate(over="ignore"):
            want = (x1.astype(np.float64) * np.exp2(x2.astype(np.float64))).astype(dt)
        if dt == BF16 and stagec.config.default_backend == "cpu":  # (bfloat16 subnormals flush to zero on the CPU, as
            # JAX's do there: ldexp(-0.25, -126) -0.0; CUDA keeps them, -2**-128 on the H200)
            want = np.where(np.abs(want.astype(np.float64)) < float(stagec.numpy.finfo(BF16).tiny), want * 0, want)
        assert got[k].dtype == dt, k
        np.testing.assert_array_equal(np.asarray(got[k]).astype(np.float64), want.astype(np.float64), err_msg=str(k))


def test_ldexp_takes_a_real_x1_and_an_integer_x2_as_jax_numpy():
    for x1, x2 in ((np.ones(2, np.float32), 1.5), (np.ones(2, np.float32), np.ones(2, np.float32)),
                   (np.ones(2, np.complex64), 2)):
        with pytest.raises(ValueError, match="ldexp not supported for input types"):
            snp.ldexp(x1, x2)


# (dtypes stored from JAX 0.10.2: jnp.float_power(x1, x2).dtype, jnp.linspace(a, b, 3).dtype, x64 off)
_FLOAT_POWER_DTYPES = [(np.float16, 2, np.float16), (BF16, np.int32, BF16), (np.int8, 2, np.float32),
                       (np.float32, np.float32, np.float32), (np.complex64, 2, np.complex64)]


@pytest.mark.parametrize("x1, x2, want", _FLOAT_POWER_DTYPES)
def test_float_power_is_computed_in_jaxs_dtype(x1, x2, want):
    a = (np.array([0.5, 1.5, 3.0]) + (0.5j if x1 is np.complex64 else 0)).astype(x1)
    b = x2 if isinstance(x2, int) else np.array([2, 3, 1]).astype(x2)
    got = snp.float_power(a, b)
    assert got.dtype == want
    ref = np.float_power(a.astype(np.complex128 if x1 is np.complex64 else np.float64), np.asarray(b, np.float64))
    np.testing.assert_allclose(np.asarray(got).astype(ref.dtype), ref, rtol=float(stagec.numpy.finfo(want).eps) * 4)


@pytest.mark.parametrize("dt", [np.float16, BF16, np.float32])
def test_linspace_of_numpy_bounds_keeps_their_float_dtype(dt):
    """jnp.linspace(np.float16(0), np.float16(1), 3) is float16 (JAX 0.10.2); NumPy bounds were read as Python
    numbers (the default float), and bfloat16 ones raised in NumPy's finfo."""
    got = snp.linspace(np.array(0.0, dt)[()], np.array(2.0, dt)[()], 5)
    assert got.dtype == dt
    np.testing.assert_array_equal(np.asarray(got, np.float64), [0.0, 0.5, 1.0, 1.5, 2.0])


@pytest.mark.parametrize("jitted", [False, True])
def test_linspace_of_array_bounds_ends_at_stop_itself(jitted):
    """With `endpoint` the last value is `stop` exactly, as NumPy and JAX set it, where `start` is infinite or nan
    (stagec's formula, start * (1 - t) + stop * t, gave nan there: nan * 0). Values stored from NumPy 2.4 and
    JAX 0.10.2 (they agree)."""
    a, b = np.array([np.nan, np.inf, 1.0, -np.inf], np.float32), np.array([1.0, 2.0, np.inf, 5.0], np.float32)
    f = lambda a, b: snp.linspace(a, b, 4)
    got = np.asarray((stagec.jit(f) if jitted else f)(stagec.device_put(a), stagec.device_put(b)))
    np.testing.assert_array_equal(got[-1], [1.0, 2.0, np.inf, 5.0])
    np.testing.assert_array_equal(got[1], [np.nan, np.inf, np.inf, -np.inf])
    ints = snp.linspace(stagec.device_put(np.array([0.0, 3.0], np.float32)), np.array([10.0, 4.0], np.float32), 6,
                        dtype=np.int32)
    np.testing.assert_array_equal(np.asarray(ints), [[0, 3], [2, 3], [4, 3], [6, 3], [8, 3], [10, 4]])


@pytest.mark.parametrize("x64", [False, True])
def test_powers_of_booleans_are_int32_as_in_jax(x64, request):
    """A boolean base is int32 in `power`, under x64 too (JAX's `to_numeric_dtype`; stagec took the default int
    there), and boolean ** boolean is int32 too (it raised a TypeError here). Stored from JAX 0.10.2."""
    if x64:
        request.getfixturevalue("x64")
    a = snp.asarray([True, False])
    jitted = stagec.jit(lambda b: (snp.power(b, b), b ** 3))(a)  # (one module for both jitted powers)
    got = [a ** 2, a ** a, snp.power(a, np.bool_(False)), jitted[0], snp.power(True, a),
           snp.asarray(True) ** np.int8(2), jitted[1]]
    want = [[1, 0], [1, 1], [1, 1], [1, 1], [1, 1], 1, [1, 0]]
    for g, w in zip(got, want):
        assert g.dtype == np.int32 and np.asarray(g).tolist() == w


@pytest.mark.parametrize("jit", [False, True])
def test_integer_functions_of_booleans_are_int32_as_in_jax(jit):
    """floor_divide, remainder, fmod, divmod and the shifts take booleans as int32 (JAX's `promote_dtypes_numeric`;
    they raised a TypeError here), and `positive` returns them. Stored from JAX 0.10.2."""
    a, b = np.array([True, False, True]), np.array([True, True, True])
    want = {"floor_divide": [1, 0, 1], "remainder": [0, 0, 0], "fmod": [0, 0, 0], "left_shift": [2, 0, 2],
            "right_shift": [0, 0, 0]}

    def every(a, b):
        return ({name: getattr(snp, name)(a, b) for name in want}, snp.divmod(a, b), snp.left_shift(a, 3),
                snp.positive(a))
    got, (q, r), shifted, p = stagec.jit(every)(a, b) if jit else every(a, b)  # (jitted: one module)
    for name, w in want.items():
        g = got[name]
        assert g.dtype == np.int32 and np.asarray(g).tolist() == w, name
    assert (q.dtype, r.dtype) == (np.int32, np.int32) and np.asarray(q).tolist() == [1, 0, 1]
    assert np.asarray(shifted).tolist() == [8, 0, 8]
    assert p.dtype == np.bool_ and np.asarray(p).tolist() == a.tolist()


_INEXACT_OF_INTS = ["true_divide", "hypot", "arctan2", "logaddexp", "logaddexp2", "copysign", "float_power"]


def test_a_python_int_keeps_its_value_beside_an_unsigned_array():
    """`uint32_array / -3` is -1/3 (JAX's and NumPy's): the Python int was promoted to uint32 first (4294967293),
    and the quotient was 2.3e-10, silently; likewise hypot, arctan2, logaddexp, copysign, float_power (and eager
    logaddexp2 of a Python scalar raised a TypeError). Against float64 NumPy on the same values, eager and jitted
    (every operand order in one module)."""
    u32, u8 = np.array([1, 0, 3, 7], np.uint32), np.array([1, 2, 250], np.uint8)
    orders = ((u32, -3), (-3, u32), (u8, -1))

    def call(name, v, order):
        a, b = order
        k = b if isinstance(a, np.ndarray) else a
        return getattr(snp, name)(*((v, k) if isinstance(a, np.ndarray) else (k, v)))
    every = stagec.jit(lambda vs: [{n: call(n, v, o) for n in _INEXACT_OF_INTS} for v, o in zip(vs, orders)])(
        [a if isinstance(a, np.ndarray) else b for a, b in orders])
    for (a, b), by_name in zip(orders, every):
        arr = a if isinstance(a, np.ndarray) else b
        for name in _INEXACT_OF_INTS:
            want = getattr(np, name)(*(x.astype(np.float64) if isinstance(x, np.ndarray) else float(x) for x in (a, b)))
            for got in (call(name, arr, (a, b)), by_name[name]):
                assert got.dtype == np.float32, name
                np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=3e-7, atol=0,
                                           err_msg=f"{name} {a!r} {b!r}")


@pytest.mark.parametrize("name", ["arctan2", "logaddexp"])
def test_complex_arctan2_and_logaddexp_name_themselves(name):
    """JAX computes both of complex arguments; here they raise an error naming the function, not an internal
    one ("is_finite does not accept dtype complex64", "add got different dtypes")."""
    for call in (lambda: getattr(snp, name)(np.ones(2, np.complex64), 1.0),
                 lambda: stagec.jit(lambda z: getattr(snp, name)(z, 1.0))(np.ones(2, np.complex64))):
        with pytest.raises(NotImplementedError, match=f"{name} of complex arguments"):
            call()


def test_round_integers_half_to_even_and_float16_in_float32():
    """round(x, -k) of integers rounded halves up (round(25, -1) was 30; NumPy 20; JAX raises); float16 scaled in
    float16 overflowed (round(12344, 1) was inf; JAX's, scaled in float32, 12344); decimals beyond the precision
    gave NaN (JAX: the input). Oracle: NumPy, and JAX's float16 value."""
    cases = [(np.array([15, 25, -15, -25, 149, 150, 12345, -2**31 + 5, 2**31 - 5], np.int32), -1),
             (np.array([15, 25, 250, 255], np.uint8), -1), (np.array([100, -128, 127, 50, -106], np.int8), -2),
             (np.array([100, -128], np.int8), -3)]
    rounded = stagec.jit(lambda xs: [snp.round(x, d) for x, (_, d) in zip(xs, cases)])([c[0] for c in cases])
    for (x, d), in_jit in zip(cases, rounded):  # (jitted: every case in one module)
        for got in (snp.round(x, d), in_jit):
            assert got.dtype == x.dtype, (x.dtype, d)
            np.testing.assert_array_equal(np.asarray(got), np.round(x, d), err_msg=f"{x.dtype} {d}")
    h = np.array([12345.678, 0.5, 1.25, 6e4], np.float16)
    np.testing.assert_array_equal(np.asarray(snp.round(h, 1)), np.array([12344, 0.5, 1.2, 6e4], np.float16))
    np.testing.assert_array_equal(np.asarray(snp.round(np.float32(2.5), 40)), np.float32(2.5))
