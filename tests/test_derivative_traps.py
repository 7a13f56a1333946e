"""Derivatives that were silently wrong: a value being differentiated converted by Python or NumPy (JAX raises),
and power's exact cases (a constant 1 there dropped d/dy 10**y at y = 0). Oracles: closed forms in float64."""
import numpy as np
import pytest

import stagec
import stagec.numpy as snp
import stagec.nn as snn
import stagec.scipy.special as sss
from stagec.errors import ConcretizationTypeError, TracerArrayConversionError


@pytest.mark.parametrize("f, err", [
    (lambda x: np.sin(x), TracerArrayConversionError),
    (lambda x: np.asarray(x) * 2, TracerArrayConversionError),
    (lambda x: snp.sum(np.array([x, x])), TracerArrayConversionError),
    (lambda x: float(x) ** 2, ConcretizationTypeError),
    (lambda x: complex(x) * x, ConcretizationTypeError),
    (lambda x: snp.asarray(x.tolist()) * x, ConcretizationTypeError),
], ids=["np.sin", "np.asarray", "np.array", "float", "complex", "tolist"])
def test_a_conversion_that_would_drop_the_derivative_raises(f, err):
    with pytest.raises(err, match="being differentiated"):
        stagec.grad(f)(1.0)
    with pytest.raises(err, match="being differentiated"):
        stagec.jvp(f, (1.0,), (1.0,))


def test_branching_and_integer_use_see_the_primal_as_in_jax():
    assert stagec.grad(lambda x: x if x > 0 else -x)(-2.0) == -1.0
    assert stagec.grad(lambda x: x * int(x))(3.5) == 3.0
    assert stagec.grad(lambda x: x.item() * x)(2.0) == 2.0


def test_power_derivatives_at_its_exact_cases():
    # (the last four: a NaN value's derivatives are NaN, not 0; at -0 a non-integer power's is that of +0)
    x = np.array([10, 1, 1, 1, 0.5, 2, -2, -1, 3, 0, 0, np.inf, 0, -0.0, -2, -2, -0.0, -0.0], np.float32)
    y = np.array([0, 2, 0, -3.5, 0, -1, 3, 0, 1, 2, 0, 0, 1, 1, 0.5, 1.5, 0.5, 2], np.float32)
    dx, dy = stagec.jit(stagec.vmap(stagec.grad(snp.power, argnums=(0, 1))))(x, y)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(all="ignore"):
        want_dx = np.where(y64 == 0, 0, y64 * np.where(y64 == 1, 1, np.power(x64, y64 - 1)))
        # d/dy = x**y log x where x > 0; a negative base's odd power is -|x|**y, so -|x|**y log|x| (stagec's pow is
        # of |x|); 0**0 and inf**0 are constants 1 (derivative 0, as JAX's lax.pow gives at 0**0).
        want_dy = np.where(np.isfinite(x64) & (x64 != 0), np.power(x64, y64) * np.log(np.abs(x64)), 0)
    np.testing.assert_allclose(np.asarray(dx), want_dx, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(dy), want_dy, rtol=1e-6)
    assert dy[0] != 0 and dx[1] == 2 and dx[12] == dx[13] == 1  # (were 0, 0, NaN, NaN)
    assert np.isnan(dx[14:16]).all() and np.isnan(dy[14:16]).all() and dx[16] == np.inf  # (were 0, 0, -inf)


def test_power_values_at_its_exact_cases_are_c99s():
    x = np.array([0, np.inf, 1, 1, -1, -1, -0.0, 0, -0.0, -2, -2, 3, 1, 10, 1], np.float32)
    y = np.array([0, 0, np.nan, np.inf, np.inf, np.nan, 3, -1, -1, 0.5, -3, np.nan, -np.inf, 0, 7.25], np.float32)
    got = np.asarray(stagec.jit(snp.power)(x, y))
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    np.testing.assert_array_equal(got, want)
    ok = ~np.isnan(want)  # (a NaN's sign is not C99's to say)
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_derivatives_at_ties_poles_and_the_origin(jit):
    """Derivatives that a function's edge handling made wrong (JAX's and the closed forms' answers): logaddexp2 at
    a tie (0 and 1 through |x1 - x2|, not 1/2 each), arctan2 at the origin (1 through the axis' own form, not NaN),
    entr at 0 and below (0 through its `where`, not +inf and NaN; d/dx at NaN was 1), digamma at its poles (NaN,
    not +inf)."""
    w = (lambda f: stagec.jit(f)) if jit else (lambda f: f)
    x1 = np.array([0.0, 1.0, 3.0, -2.0, 0.5], np.float32)
    x2 = np.array([0.0, 1.0, -3.0, 1.0, 0.5], np.float32)
    d1, d2 = w(stagec.vmap(stagec.grad(snp.logaddexp2, argnums=(0, 1))))(x1, x2)
    a, b = 2.0 ** x1.astype(np.float64), 2.0 ** x2.astype(np.float64)
    np.testing.assert_allclose(np.asarray(d1), a / (a + b), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(d2), b / (a + b), rtol=1e-6)
    t = w(lambda u, v: stagec.jvp(snp.logaddexp2, (u, v), (np.ones(5, np.float32), 2 * np.ones(5, np.float32)))[1])
    np.testing.assert_allclose(np.asarray(t(x1, x2)), (a + 2 * b) / (a + b), rtol=1e-6)

    y = np.array([0.0, 0.0, 0.0, 1.0, -1.0], np.float32)
    x = np.array([0.0, 2.0, -2.0, 1.0, 0.0], np.float32)
    dy, dx = w(stagec.vmap(stagec.grad(snp.arctan2, argnums=(0, 1))))(y, x)
    jv = w(lambda u, v: stagec.jvp(snp.arctan2, (u, v), (np.ones(5, np.float32), np.zeros(5, np.float32)))[1])(y, x)
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = x.astype(np.float64) ** 2 + y.astype(np.float64) ** 2
        np.testing.assert_allclose(np.asarray(dy), x / r2, rtol=1e-6)  # (NaN at the origin, as JAX's)
        np.testing.assert_allclose(np.asarray(dx), -y / r2, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(jv), x / r2, rtol=1e-6)
    assert np.isnan(np.asarray(jv)[0])

    e = np.array([0.0, 0.5, 2.0, -1.0, np.nan, np.inf], np.float32)
    de = np.asarray(w(stagec.vmap(stagec.grad(sss.entr)))(e))
    with np.errstate(invalid="ignore", divide="ignore"):
        np.testing.assert_allclose(de, -(np.log(e.astype(np.float64)) + 1), rtol=1e-6)

    p = np.array([0.0, -1.0, -2.0, 1.0], np.float32)
    dp = np.asarray(w(stagec.vmap(stagec.grad(sss.digamma)))(p))
    np.testing.assert_array_equal(dp[:3], np.inf)
    np.testing.assert_allclose(dp[3], np.pi ** 2 / 6, rtol=1e-6)


def test_differentiating_nextafter_raises_as_in_jax():
    """nextafter(x, y) ~ x: its derivative in x is 1; a stop_gradient inside gave 0. JAX raises; so does stagec."""
    for f in (lambda v: snp.nextafter(v, 2.0), lambda v: stagec.lax.nextafter(v, np.float32(2.0))):
        assert float(f(np.float32(1.0))) == float(np.nextafter(np.float32(1.0), np.float32(2.0)))
        with pytest.raises(NotImplementedError, match="nextafter"):
            stagec.grad(f)(np.float32(1.0))
        with pytest.raises(NotImplementedError, match="nextafter"):
            stagec.jit(stagec.grad(f))(np.float32(1.0))


def test_second_derivatives_take_the_first_derivatives_rules():
    """Second derivatives where a first derivative's rule was right but its own derivative went through the primal's
    branches: softplus and log_sigmoid at 0 (1/2, not sigmoid'(0) = 1/4: logaddexp's weights were differentiated
    through max and |x1 - x2|), logaddexp2 at a tie, sinc at and near 0 (a constant 1 at 0: sinc''(0) was 0, not
    -pi^2/3; sinc'(1e-4) 100% off, the quotient's derivatives cancelling),
    digamma's (trigamma's reflection branch, untaken, was 0 * inf = NaN at 1, 2, 3), log_ndtr at 0 (a `defjvps`
    answer computed by the primal's branches). Oracles: closed forms, mpmath."""
    import mpmath
    h = lambda f, x: float(stagec.grad(stagec.grad(f))(np.float32(x)))
    assert h(snn.softplus, 0.0) == pytest.approx(0.25, rel=1e-6)
    assert h(snn.log_sigmoid, 0.0) == pytest.approx(-0.25, rel=1e-6)
    assert h(lambda x: snp.logaddexp(x, 0.5), 0.5) == pytest.approx(0.25, rel=1e-6)
    assert h(lambda x: snp.logaddexp2(x, 0.5), 0.5) == pytest.approx(np.log(2) / 4, rel=1e-6)
    d = stagec.grad
    sinc_at_0 = [float(f(np.float32(0))) for f in (d(snp.sinc), d(d(snp.sinc)), d(d(d(snp.sinc))), d(d(d(d(snp.sinc)))))]
    np.testing.assert_allclose(sinc_at_0, [0, -np.pi ** 2 / 3, 0, np.pi ** 4 / 5], rtol=1e-6)
    near = np.array([1e-30, 1e-4, 0.05], np.float32)  # (sinc'(x) ~ -pi^2 x / 3 + pi^4 x^3 / 30)
    np.testing.assert_allclose(np.asarray(stagec.vmap(d(snp.sinc))(near)),
                               -np.pi ** 2 * near / 3 + np.pi ** 4 * near.astype(np.float64) ** 3 / 30, rtol=2e-5)
    for x in (1.0, 2.0, 3.0, 0.25):
        assert h(sss.digamma, x) == pytest.approx(float(mpmath.polygamma(2, x)), rel=1e-5)
    for x in (0.0, -3.0, -12.0, 2.0):
        want = mpmath.diff(lambda t: mpmath.log(mpmath.ncdf(t)), x, 2)
        assert h(sss.log_ndtr, x) == pytest.approx(float(want), rel=1e-5), x
    jitted = stagec.jit(stagec.vmap(stagec.grad(stagec.grad(snn.softplus))))(np.array([0.0, 1.0], np.float32))
    np.testing.assert_allclose(np.asarray(jitted), [0.25, np.exp(-1) / (1 + np.exp(-1)) ** 2], rtol=1e-6)


def test_float64_digamma_derivative_to_float64(x64):
    """trigamma (digamma's derivative) in float64: the recurrence to x + 16 before the asymptotic series (to x + 6
    its truncation was 4e-12 of the value: 610 ulps at 0.99; JAX 1.2), eager and jitted, against mpmath."""
    import mpmath
    x = np.array([1e-3, 0.3, 0.99, 1.5, 3.7, 6.2, 15.9, 16.1, 50.0, -1.3, -7.25])
    want = np.array([float(mpmath.polygamma(1, float(t))) for t in x])
    f = stagec.vmap(stagec.grad(sss.digamma))
    for g in (f(x), stagec.jit(f)(x)):
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-15)


def test_normal_cdf_second_derivatives_in_their_tails(x64):
    """ndtr' is the density itself (through float64 ndtr's split argument ndtr''(-1e-30) was -0, not 4e-31), and
    log_ndtr's derivative reads its answer only where its branch is taken (exp(-log_ndtr(-100)) overflowed where it
    was not: log_ndtr''(-100) NaN; JAX -0.9999). Against closed forms and mpmath, eager and jitted."""
    import mpmath
    x = np.array([-1e-30, 1e-30, -0.3, -20.0, -40.0, -100.0, 3.0])
    want_ndtr = -x * np.exp(-x * x / 2) / np.sqrt(2 * np.pi)
    want_log = np.array([float(mpmath.diff(lambda t: mpmath.log(mpmath.ncdf(t)), float(t), 2)) for t in x])
    d2 = lambda f: stagec.vmap(stagec.grad(stagec.grad(f)))  # noqa: E731
    both = lambda x: (d2(sss.ndtr)(x), d2(sss.log_ndtr)(x))  # noqa: E731
    for got in (both(x), stagec.jit(both)(x)):
        np.testing.assert_allclose(np.asarray(got[0]), want_ndtr, rtol=1e-14)
        np.testing.assert_allclose(np.asarray(got[1]), want_log, rtol=1e-12)
