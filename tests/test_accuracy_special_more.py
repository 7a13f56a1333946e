"""`stagec.scipy.special`'s factorial, comb, beta, poch, rel_entr and kl_div against mpmath: within the project's
bound, max(4 ulps, JAX's error at the same points). JAX's error is measured live where JAX is installed, else the
stored one (JAX 0.10.2, 2026-11-27, CPU); the formulas are JAX's (exp of gammaln sums: factorial(31) is 256 float32
ulps off in JAX) except factorial's (gamma(n + 1)) and rel_entr's log (log1p near p = q: 2 ulps where JAX's p log p - p log q has 1.7e7)."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import stagec
from stagec.scipy import special as ss

mpmath = pytest.importorskip("mpmath")
from mp_ulps import ulps as _ulps  # noqa: E402


def _points(name, dt):
    rng = np.random.default_rng(len(name))
    if name == "factorial":
        return (np.concatenate([np.arange(0, 35 if dt == np.float32 else 171), rng.uniform(0, 34, 40)]).astype(dt),)
    if name == "comb":
        n = rng.integers(0, 60, 80).astype(dt)
        return n, np.floor(rng.uniform(0, 1, 80) * n).astype(dt)
    if name == "beta":
        return rng.uniform(0.1, 30, 80).astype(dt), rng.uniform(0.1, 30, 80).astype(dt)
    if name == "poch":
        return rng.uniform(0.5, 10, 80).astype(dt), rng.uniform(0, 5, 80).astype(dt)
    p = np.concatenate([rng.uniform(0.01, 5, 60), rng.uniform(0.01, 5, 40), [1e30, 1e-30, 3.0]])
    q = np.concatenate([rng.uniform(0.01, 5, 60), p[60:100] * rng.uniform(0.9, 1.1, 40), [1e-30, 1e30, 3.0 + 1e-6]])
    return p.astype(dt), q.astype(dt)


def _rel_entr(p, q):
    return p * mpmath.log(p / q)


CASES = {  # name: (mpmath reference, stored JAX float32 / float64 errors in ulps at these points)
    "factorial": (lambda n: mpmath.gamma(n + 1), 256, 1700),
    "comb": (mpmath.binomial, 476, 2300),
    "beta": (mpmath.beta, 199, 900),
    "poch": (mpmath.rf, 51, 200),
    "rel_entr": (_rel_entr, 1.7e7, 1e15),
    "kl_div": (lambda p, q: _rel_entr(p, q) - p + q, 2.8e14, 1e30),
}


@functools.cache
def _results(dtname):
    dt = np.dtype(dtname).type
    old = stagec.config.enable_x64
    stagec.config.update("enable_x64", dt == np.float64 or old)
    try:
        args = {n: _points(n, dt) for n in CASES}
        outs = stagec.jit(lambda a: {n: getattr(ss, n)(*a[n]) for n in CASES})(args)  # one module
    finally:
        stagec.config.update("enable_x64", old)
    return args, {n: np.asarray(o) for n, o in outs.items()}


def _jax_error(name, args, want, dt):
    try:
        import jax
        import jax.scipy.special as js
    except ImportError:
        return None
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", dt == np.float64)
    try:
        got = np.asarray(getattr(js, name)(*args))
    finally:
        jax.config.update("jax_enable_x64", old)
    return float(np.max(_ulps(got, want, dt)))


@pytest.mark.parametrize("dtname", ["float32", "float64"])
@pytest.mark.parametrize("name", list(CASES))
def test_within_max_of_4_ulps_and_jaxs_error(name, dtname):
    dt = np.dtype(dtname).type
    mpmath.mp.prec = 200
    args, outs = _results(dtname)
    got, a = outs[name], args[name]
    assert got.dtype == dt
    ref, j32, j64 = CASES[name]
    want = [ref(*(mpmath.mpf(float(x[i])) for x in a)) for i in range(len(got))]
    err = _ulps(got, want, dt)
    live = _jax_error(name, a, want, dt)
    bound = max(4.0, live if live is not None else (j32 if dt == np.float32 else j64))
    i = int(np.argmax(err))
    assert err[i] <= bound, f"{dtname} {name}{tuple(x[i] for x in a)}: {err[i]:.1f} ulps (bound {bound:.1f})"


def test_special_values_and_derivatives(x64):
    np.testing.assert_allclose(ss.factorial(np.array([-1.0, 0.0, 1.0, 5.0])), [0, 1, 1, 120], rtol=1e-13)
    np.testing.assert_allclose(ss.comb(np.array([5.0, 5.0, -1.0, 3.0]), np.array([2.0, 6.0, 0.0, 0.0])),
                               [10, 0, 0, 1], rtol=1e-13)
    np.testing.assert_allclose(ss.comb(4.0, 2.0, repetition=True), 10.0, rtol=1e-14)  # C(5, 2)
    np.testing.assert_array_equal(ss.rel_entr(np.array([0.0, 0.0, 1.0, -1.0]), np.array([0.0, 1.0, 0.0, 1.0])),
                                  [0, 0, np.inf, np.inf])
    # (five elements: betaln's float64 module of five values, below, not one of two scalars)
    np.testing.assert_allclose(ss.beta(np.full(5, -0.5), np.full(5, 2.0)), [float(mpmath.beta(-0.5, 2))] * 5,
                               rtol=1e-13)
    # past Gamma's overflow poch was inf / inf = NaN (poch(100, 1)); betaln and beta NaN at negative a with a + b < 8
    # (psi's series of a negative sum; algdiv); rel_entr of a NaN inf, kl_div(inf, 0) inf - inf
    # (poch(2.5, 0) = 1 and beta(-1.5, 0.5) = 0 are the last element of the calls below, each checked on its own: an
    # eager call compiles a module per shape, and a call of one element was one more module per dtype)
    mpmath.mp.prec = 100
    for dt, ulps in ((np.float32, 12), (np.float64, 12)):
        # (16 elements, the first 7 twice: eager poch runs its module of 16 values, `test_poch_eager_is_jits_module`'s)
        z = np.array([100, 1e4, 40, 171.5, 30, 1e10, 36, 200] + [100, 1e4, 40, 171.5, 30, 1e10, 36] + [2.5], dt)
        m = np.array([1, 0.5, 3, 2, 10, 2, -2, -20] + [1, 0.5, 3, 2, 10, 2, -2] + [0], dt)
        want = np.array([float(mpmath.rf(float(u), float(v))) for u, v in zip(z[:-1], m[:-1])]).astype(dt)
        got = np.asarray(ss.poch(z, m))
        np.testing.assert_allclose(got[:-1], want, rtol=ulps * np.finfo(dt).eps, atol=0)
        np.testing.assert_array_equal(got[-1:], [1.0])
        a, b = np.array([-10.5, -2.5, -7.3, -10.5, -1.5], dt), np.array([10, 1e-4, -1.5, 1, 0.5], dt)
        want = [float(mpmath.log(abs(mpmath.beta(float(u), float(v))))) for u, v in zip(a[:-1], b[:-1])]
        np.testing.assert_allclose(np.asarray(ss.betaln(a, b))[:-1], want, rtol=8 * np.finfo(dt).eps)
        want = [float(mpmath.beta(float(u), float(v))) for u, v in zip(a[:-1], b[:-1])]
        got = np.asarray(ss.beta(a, b))
        np.testing.assert_allclose(got[:-1], want, rtol=40 * np.finfo(dt).eps)
        np.testing.assert_array_equal(got[-1:], [0.0])
        nan, inf = np.nan, np.inf
        np.testing.assert_array_equal(ss.rel_entr(np.array([nan, 1, nan], dt), np.array([1, nan, 0], dt)), [nan] * 3)
        np.testing.assert_array_equal(ss.kl_div(np.array([inf, 0, 1, nan, 0], dt), np.array([0, -inf, 0, 1, 2], dt)),
                                      [inf, inf, inf, nan, 2])
    # float16 and bfloat16 in float32, rounded once: poch(9984, 1) was 9792 in bfloat16 (its betaln rounded, then exp),
    # kl_div(1e4, 10) inf in float16 (p log(p / q) past 65504), rel_entr of bfloat16 raised (NumPy's finfo)
    import ml_dtypes
    for dt in (np.float16, ml_dtypes.bfloat16):
        # (16 elements: computed in float32 by the module of 16 float32 values, as above)
        got = np.asarray(ss.poch(np.array([9984, 100] * 8, dt), np.array([1, 2] * 8, dt))).astype(np.float64)
        np.testing.assert_allclose(got, [9984, 10100] * 8, rtol=2 ** -8)  # (within an ulp: 10100 is a float16 tie)
        # (two elements, each checked: poch's rank-1 conversion kernels above; one element took static-shape ones)
        got = np.asarray(ss.kl_div(np.array([1e4] * 2, dt), np.array([10] * 2, dt))).astype(np.float64)
        np.testing.assert_allclose(got, [59078.0] * 2, rtol=2 ** -8)
        np.testing.assert_array_equal(np.asarray(ss.rel_entr(np.array([2] * 2, dt), np.array([1] * 2, dt))),
                                      np.array([2 * np.log(2)] * 2).astype(dt))
    z, m = 2.5, 1.7  # d/dz and d/dm of Gamma(z + m) / Gamma(z), from mpmath
    mpmath.mp.prec = 100
    dz, dm = stagec.grad(lambda z, m: ss.poch(z, m), argnums=(0, 1))(z, m)
    np.testing.assert_allclose(dz, float(mpmath.diff(lambda t: mpmath.rf(t, m), z)), rtol=1e-12)
    np.testing.assert_allclose(dm, float(mpmath.diff(lambda t: mpmath.rf(z, t), m)), rtol=1e-12)


def _erfcx_ref(x):
    return mpmath.erfc(x) * mpmath.exp(x * x)


@pytest.mark.parametrize("dtname", ["float32", "float64"])
def test_erfcx(dtname):
    """Within 4 ulps with FMAs (the CPU: measured 3.3 float32, 3.7 float64). JAX's is 50 float32 (338 float64) ulps below -3 (x^2's
    rounding times x^2), 5 in float64 on (3, 20), and 0 where erfc(x) is subnormal (float32 past 9.2, float64 past
    26.5: 1.6e7 and 6e15 ulps)."""
    dt = np.dtype(dtname).type
    mpmath.mp.prec = 300
    rng = np.random.default_rng(9)
    cuts = (20.0, 26.6) if dt == np.float64 else (9.3, 10.1)
    low = -26.0 if dt == np.float64 else -9.3
    x = np.concatenate([rng.uniform(-3, 3, 60), rng.uniform(3, cuts[1], 60), *(rng.uniform(c - 0.3, c + 0.3, 15)
                        for c in cuts), np.geomspace(cuts[1], 1e6, 20), rng.uniform(low, -3, 30), [0.0, 1.0, 8.0]])
    x = x.astype(dt)
    old = stagec.config.enable_x64
    stagec.config.update("enable_x64", dt == np.float64 or old)
    try:
        got = np.asarray(stagec.jit(ss.erfcx)(x))
    finally:
        stagec.config.update("enable_x64", old)
    assert got.dtype == dt
    err = _ulps(got, [_erfcx_ref(mpmath.mpf(float(v))) for v in x], dt)
    i = int(np.argmax(err))
    # Without FMAs (lavapipe, CUDA: each op rounded) the float32 rational is 6.4 ulps at 10.03 (NumPy float32, op by
    # op, 2M points on [0, 10.1]; lavapipe's bits are that emulation's at 4000 random points).
    bound = 4 if dt == np.float64 or stagec.config.default_backend == "cpu" else 6.5
    assert err[i] <= bound, f"{dtname} erfcx({x[i]!r}) = {got[i]!r}: {err[i]:.1f} ulps"
    g = stagec.grad(ss.erfcx)(2.0)  # 2 x erfcx(x) - 2 / sqrt(pi)
    np.testing.assert_allclose(g, float(2 * 2 * _erfcx_ref(mpmath.mpf(2)) - 2 / mpmath.sqrt(mpmath.pi)), rtol=1e-6)
    np.testing.assert_array_equal(ss.erfcx(np.array([np.nan, np.inf, -np.inf], dt)), [np.nan, 0.0, np.inf])


def test_poch_eager_is_jits_module(x64):
    """Eager poch runs its jit module (one module, not ~70 equations op by op), also as one step of an eager
    composite: the same bits as jit on each branch (the Gammas' quotient, past their overflow with lo or n or both
    past 8, z + m > 0 > m, the signed exp of gammaln's difference, m = 0, NaN, inf), float16 via float32."""
    from stagec.numpy._base import _composite
    z = np.array([2.5, 100, 1e4, 40, 171.5, 30, 1e10, 36, 200, -3.7, -40.5, 1e-39, np.inf, np.nan, 5, 0.5], np.float64)
    m = np.array([1.7, 1, 0.5, 3, 2, 10, 2, -2, -20, 2.2, 1.5, 3, 1, 1, 0, 40], np.float64)
    twice = _composite(lambda z, m: ss.poch(z, m) * 2)

    def _poch(z, m):  # (jit of poch under its kernel's name: float32's and float64's module is the one eager calls
        return ss.poch(z, m)  # run, `jit__poch`, a cache hit of their module, not the same module again as `jit_poch`)
    for dt in (np.float16, np.float32, np.float64):
        a, b = z.astype(dt), m.astype(dt)
        want = np.asarray(stagec.jit(_poch)(a, b))
        ua = {2: np.uint16, 4: np.uint32, 8: np.uint64}[want.dtype.itemsize]
        x, y = stagec.device_put(a), stagec.device_put(b)
        for _ in range(2):
            np.testing.assert_array_equal(np.asarray(ss.poch(x, y)).view(ua), want.view(ua))
        for _ in range(3):  # (the first call plain, then its plan)
            np.testing.assert_array_equal((np.asarray(twice(x, y)) / 2).view(ua), want.view(ua))


def test_softmax_and_log_softmax_default_to_every_axis():
    """`scipy.special.softmax` and `log_softmax` normalize over every axis unless told (SciPy's and
    `jax.scipy.special`'s default; `nn.softmax`'s is the last axis): they returned `nn`'s row softmax, silently."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 2
    w = x.astype(np.float64)
    for axis, keep in [(None, None), (1, 1), (0, 0)]:
        e = np.exp(w - w.max(axis=keep, keepdims=True))
        soft = e / e.sum(axis=keep, keepdims=True)
        kw = {} if axis is None else {"axis": axis}
        np.testing.assert_allclose(np.asarray(ss.softmax(x, **kw)), soft, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(ss.log_softmax(x, **kw)), np.log(soft), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(np.asarray(stagec.jit(lambda v: ss.softmax(v, **kw))(x)), soft, rtol=1e-6)
    assert float(ss.softmax(np.float32(2.0))) == 1.0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_factorial_of_integers_is_one_answer_eager_and_jitted(dtype, x64):
    """factorial is `gamma(n + 1)`: eager calls and jit give the same bits, within an ulp of n! (exp(gammaln(n + 1))
    gave 3628800.0000000023 eagerly for factorial(10.0) and the exact value jitted)."""
    import math
    n = np.arange(0, 35 if dtype == "float32" else 171, dtype=dtype)
    eager, jitted = np.asarray(ss.factorial(n)), np.asarray(stagec.jit(ss.factorial)(n))
    np.testing.assert_array_equal(eager, jitted)
    err = _ulps(eager, [mpmath.mpf(math.factorial(int(k))) for k in n], getattr(np, dtype))
    assert np.max(err) <= 1, (n[np.argmax(err)], np.max(err))
