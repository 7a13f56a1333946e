"""Values at special points that were silently wrong (found by comparing with JAX at 0, +-inf, NaN and huge
arguments). Oracles: NumPy's float64 functions, mpmath."""
import mpmath
import numpy as np

import stagec
import stagec.numpy as snp
import stagec.scipy.special as sss


def test_ldexp_is_exact_over_the_whole_exponent_range():
    x = np.array([3e38, 1.5, 1e-30, 0, -0.0, np.inf, -np.inf, 1.17549435e-38, 0.75], np.float32)
    n = np.array([-200, 127, 200, 200, -200, -2 ** 31, 2 ** 31 - 1, 150, -149], np.int32)
    xs = np.repeat(x, 5)
    ns = (n[:, None] + np.array([-1, 0, 1, -64, 64])[None]).ravel().astype(np.int32)
    got = np.asarray(stagec.jit(snp.ldexp)(xs, ns))
    with np.errstate(all="ignore"):
        want = np.ldexp(xs.astype(np.float64), ns.astype(np.int64))
    want32 = want.astype(np.float32)
    normal = ~((np.abs(want32) < np.finfo(np.float32).tiny) & (want32 != 0))  # (IREE flushes subnormals to 0)
    np.testing.assert_array_equal(got[normal], want32[normal])
    assert (got[~normal] == 0).all()


def test_heaviside_entr_xlogy_gammasgn_at_nan_zero_and_poles():
    nan, inf = np.nan, np.inf
    x = np.array([nan, 0, -0.0, -1, -2, -0.5, 1, inf], np.float32)
    heav, entr, xlogy, xlog1py, sgn, gamma = stagec.jit(lambda x, z: (
        snp.heaviside(x, 0.5), sss.entr(x), sss.xlogy(z, x), sss.xlog1py(z, x), sss.gammasgn(x),
        sss.gamma(x)))(x, np.zeros_like(x))
    np.testing.assert_array_equal(np.asarray(heav), np.heaviside(x, np.float32(0.5)))
    want_entr = [nan, 0, 0, -inf, -inf, -inf, 0, -inf]
    np.testing.assert_array_equal(np.asarray(entr), np.array(want_entr, np.float32))
    # x * log(y) with x = 0 is 0 unless y is NaN (SciPy's xlogy(0, nan) is nan)
    for got in (xlogy, xlog1py):
        np.testing.assert_array_equal(np.isnan(np.asarray(got)), np.isnan(x))
    # Gamma(+-0) = +-inf, poles at the negative integers (NaN), NaN stays NaN
    want_sgn = [nan, 1, -1, nan, nan, -1, 1, 1]
    np.testing.assert_array_equal(np.asarray(sgn), np.array(want_sgn, np.float32))
    want_gamma = [nan, inf, -inf, nan, nan, float(mpmath.gamma(-0.5)), 1, inf]
    np.testing.assert_allclose(np.asarray(gamma), np.array(want_gamma, np.float32), rtol=1e-6)


def test_float64_arccosh_below_one_is_nan(x64):
    x = np.array([-1e308, -1e20, -2, 0.5, 1, 1.5, 1e20, np.inf, np.nan])
    got = np.asarray(stagec.jit(snp.arccosh)(x))  # (-1e20 gave 0: t + sqrt(2t + t^2) cancelled)
    with np.errstate(invalid="ignore"):
        want = np.arccosh(x)
    np.testing.assert_allclose(got, want, rtol=1e-15)
