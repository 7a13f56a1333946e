"""Eager gammainc, gammaincc and betainc on small arrays (stagec/scipy/_incomplete.py): their loops take several
steps between tests (`_UNROLL`) up to `_UNROLL_MAX_ELEMENTS` elements, one step beyond; eagerly each runs as jit's
module (`_staged`), and as one step of an eager composite calling it (scipy.stats' cdfs). Values against SciPy and
mpmath; eager calls give jit's bits, call after call."""
import mpmath
import numpy as np
import pytest
import scipy.special as ss

import stagec
import stagec.scipy.special as sps
from stagec import composites
from stagec.scipy import _incomplete


def _grid(n, seed):
    r = np.random.default_rng(seed)
    a = np.concatenate([np.abs(r.standard_normal(n // 2)) * 3 + 1e-3, 10 ** r.uniform(-2, 3, n - n // 2)])
    x = a * np.exp(r.uniform(-1.5, 1.5, n))
    b = 10 ** r.uniform(-1, 2.5, n)
    u = r.uniform(0.001, 0.999, n)
    return a, x, b, u


def _bits(v):
    v = np.asarray(v)
    return v.view(np.uint32 if v.dtype == np.float32 else np.uint64)


@pytest.mark.parametrize("n", [16, 5000])
def test_values_against_scipy_and_eager_calls_give_jits_bits(n):
    """float32 values within a few ulps of SciPy's (float64) on each side of the unrolling threshold; every eager call
    gives the bits of jit's module. (Below the threshold, 16 values: the unrolled loop gives the one-step loop's bits,
    `test_unrolled_loop_gives_the_one_step_loops_bits`, so 5000 values check both bodies' values.)"""
    a, x, b, u = (v.astype(np.float32) for v in _grid(n, n))
    A, X, B, U = (stagec.device_put(v) for v in (a, x, b, u))
    cases = {"gammainc": (sps.gammainc, (A, X), ss.gammainc(a.astype(float), x.astype(float))),
             "gammaincc": (sps.gammaincc, (A, X), ss.gammaincc(a.astype(float), x.astype(float))),
             "betainc": (sps.betainc, (A, B, U), ss.betainc(a.astype(float), b.astype(float), u.astype(float)))}
    for name, (f, args, want) in cases.items():
        jitted = _bits(stagec.jit(f)(*args))  # (the module eager calls run: a disk-cache hit)
        for _ in range(3):
            np.testing.assert_array_equal(_bits(f(*args)), jitted, err_msg=name)
        first = np.asarray(f(*args))
        # (relative where the value is below 1/2: each side is computed itself there, not as a complement; a large
        # a's prefactor, an exp near the peak, leaves some ulps)
        ok = (want > 1e-30) & (want < 0.5)
        err = np.abs(first[ok] - want[ok]) / want[ok]
        assert np.max(err) < 1e-4, (name, np.max(err))
        np.testing.assert_allclose(first, want, rtol=0, atol=3e-6, err_msg=name)


def test_a_composite_calling_them_runs_their_module_as_one_step():
    """scipy.stats' gamma and beta cdfs (eager composites) call them as one `staged_call` step: their later calls run
    as composites, with the first (op by op) call's bits, against SciPy."""
    import scipy.stats as st

    import stagec.scipy.stats as sst
    # (16 values: the modules of `test_values_against_scipy...`'s 16)
    a, x, b, u = (v.astype(np.float32) for v in _grid(16, 3))
    A, X, B, U = (stagec.device_put(v) for v in (a, x, b, u))
    cases = {"gamma.cdf": (lambda: sst.gamma.cdf(X, A), st.gamma.cdf(x.astype(float), a.astype(float))),
             "beta.cdf": (lambda: sst.beta.cdf(U, A, B), st.beta.cdf(u.astype(float), a.astype(float), b.astype(float)))}
    for name, (call, want) in cases.items():
        first = np.asarray(call())
        calls = composites.stats["calls"]
        later = [np.asarray(call()) for _ in range(3)]
        assert composites.stats["calls"] >= calls + 2, f"{name} ran op by op on its later calls"
        for v in later:
            np.testing.assert_array_equal(_bits(v), _bits(first), err_msg=name)
        np.testing.assert_allclose(first, want, rtol=0, atol=3e-6, err_msg=name)


@pytest.mark.parametrize("dt, rtol", [(np.float32, 3e-6), (np.float64, 3e-13)])
def test_slow_elements_against_mpmath_eager_and_jit(dt, rtol, request):
    """Elements that take thousands of steps (x near a large a; betainc near its mean for large a, b) beside quick
    ones, 16 wide (unrolled): against mpmath, eager equal to jit where the old loop's were (the same loop: equal)."""
    if dt == np.float64:
        request.getfixturevalue("x64")
    a = np.array([5e4, 3.5, 30, 0.3, 2e5, 0.5, 7, 1.5] * 2, dt)
    x = np.array([4.9e4, 2.0, 31, 0.2, 2.001e5, 0.6, 9, 1.2] * 2, dt)
    # (jit's modules of the functions themselves: those of eager calls on 16 values, `test_values_against_scipy...`
    # and `test_eager_gives_jits_bits...` compile them too, a disk-cache hit for one of them)
    got = stagec.jit(sps.gammainc)(a, x), stagec.jit(sps.gammaincc)(a, x)
    for k, f in enumerate((lambda s, t: mpmath.gammainc(s, 0, t, regularized=True),
                           lambda s, t: mpmath.gammainc(s, t, mpmath.inf, regularized=True))):
        want = [float(f(mpmath.mpf(float(s)), mpmath.mpf(float(t)))) for s, t in zip(a, x)]
        np.testing.assert_allclose(np.asarray(got[k]), want, rtol=rtol)
    ba = np.array([2.0, 3e3, 0.5, 40.0] * 4, dt)
    bb = np.array([3.0, 30.0, 1e-3, 40.0] * 4, dt)
    bx = np.array([0.2, 0.985, 0.9, 0.5] * 4, dt)
    gi = stagec.jit(sps.betainc)(ba, bb, bx)
    want = [float(mpmath.betainc(mpmath.mpf(float(p)), mpmath.mpf(float(q)), 0, mpmath.mpf(float(t)), regularized=True))
            for p, q, t in zip(ba, bb, bx)]
    np.testing.assert_allclose(np.asarray(gi), want, rtol=rtol * 30)


def test_unrolled_loop_gives_the_one_step_loops_bits(monkeypatch):
    """The unrolled body (4 steps a test) and the one-step body give the same bits, the loops' own (jit: one
    module each), slow elements and elements past the step limit (betainc at a = b = 1e9: more than `_MAXIT`
    steps) among them; and the same again eagerly."""
    a, x, b, u = (v.astype(np.float32) for v in _grid(16, 7))  # (8 of them random)
    a[:4], b[:4], u[:4] = 1e9, 1e9, 0.5
    a[4:8], x[4:8] = 5e4, 4.99e4
    fs = {"gammainc": lambda: stagec.jit(lambda a, x: sps.gammainc(a, x))(a, x),
          "gammaincc": lambda: stagec.jit(lambda a, x: sps.gammaincc(a, x))(a, x),
          "betainc": lambda: stagec.jit(lambda a, b, x: sps.betainc(a, b, x))(a, b, u)}
    assert a.size <= _incomplete._UNROLL_MAX_ELEMENTS and _incomplete._UNROLL > 1
    # (unrolled: jit's modules of the functions themselves, those eager calls run on 16 values, a disk-cache hit of
    # `test_values_against_scipy...`'s; one step: a fresh function each, traced again under the patched `_UNROLL`,
    # as jit's cache is per function)
    unrolled = {"gammainc": stagec.jit(sps.gammainc)(a, x), "gammaincc": stagec.jit(sps.gammaincc)(a, x),
                "betainc": stagec.jit(sps.betainc)(a, b, u)}
    unrolled = {k: np.asarray(v) for k, v in unrolled.items()}
    monkeypatch.setattr(_incomplete, "_UNROLL", 1)
    for k, f in fs.items():
        np.testing.assert_array_equal(_bits(f()), _bits(unrolled[k]), err_msg=k)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_eager_gives_jits_bits_on_each_side_of_the_unrolling(dt, request):
    """Small (unrolled) and large (one step a test) alike, eager calls give jit's bits (gammaincc past the threshold:
    gammainc's loop, its other result)."""
    if dt == np.float64:
        request.getfixturevalue("x64")
    # (past the threshold 5000 values, as `test_values_against_scipy...`: float32 gammainc's module is its)
    for n in (16, max(5000, _incomplete._UNROLL_MAX_ELEMENTS + 4)):
        a, x, _, _ = (v.astype(dt) for v in _grid(n, n + 1))
        A, X = stagec.device_put(a), stagec.device_put(x)
        for f in (sps.gammainc, sps.gammaincc) if n == 16 else (sps.gammainc,):
            jitted = _bits(stagec.jit(f)(a, x))
            for _ in range(2):
                np.testing.assert_array_equal(_bits(f(A, X)), jitted, err_msg=(f.__name__, n))
