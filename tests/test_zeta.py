"""`stagec.scipy.special.zeta` (Hurwitz) and `polygamma` (JAX's Euler-Maclaurin form) against mpmath: a direct sum
of 64 terms and Euler-Maclaurin's tail at 120 bits (mpmath's own `zeta(22.77, 157.07)` was 3.5e-10 off, its
`nsum` 26% off), where the result is a normal number (near the underflow its terms flush, as JAX's). Eager (NumPy's
rules) and jit (the module's) each within the bound; the derivative in q is -x zeta(x + 1, q)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import stagec
from stagec.scipy import special as ss

mpmath = pytest.importorskip("mpmath")
from mp_ulps import ulps as _ulps  # noqa: E402


def _hurwitz(x, q):
    x, q = mpmath.mpf(float(x)), mpmath.mpf(float(q))
    k = 64
    a = q + k
    s = mpmath.fsum((q + i) ** -x for i in range(k)) + a ** (1 - x) / (x - 1) + a ** -x / 2
    rising = x
    for j in range(1, 8):  # B_2j / (2j)! x (x+1) ... (x+2j-2) a^(-x-2j+1)
        s += mpmath.bernoulli(2 * j) / mpmath.factorial(2 * j) * rising * a ** (-x - 2 * j + 1)
        rising *= (x + 2 * j - 1) * (x + 2 * j)
    return s


def _polygamma(n, x):
    if n == 0:
        return mpmath.digamma(mpmath.mpf(float(x)))
    return (-1) ** (n + 1) * math.factorial(n) * _hurwitz(n + 1, x)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_zeta_and_polygamma_against_mpmath(dtype, x64):
    mpmath.mp.prec = 120
    dt = getattr(np, dtype)
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(1.01, 5, 60), rng.uniform(5, 60, 30)]).astype(dt)
    q = np.concatenate([rng.uniform(0.01, 3, 40), rng.uniform(3, 200, 50)]).astype(dt)
    n = np.array([1, 2, 3, 5, 8] * 12)
    v = np.concatenate([rng.uniform(0.1, 3, 30), rng.uniform(3, 50, 30)]).astype(dt)
    wz = [_hurwitz(a, b) for a, b in zip(x, q)]
    normal = np.array([abs(w) > 1e8 * np.finfo(dt).tiny for w in wz])
    x, q, wz = x[normal], q[normal], [w for w, k in zip(wz, normal) if k]
    wp = [_polygamma(int(k), b) for k, b in zip(n, v)]
    f = lambda x, q, n, v: (ss.zeta(x, q), ss.polygamma(n, v))
    # (JAX 0.10.2 at these points, ulps: zeta 2.2 float32, 10.6 float64; polygamma 16.5, 19.5)
    bound_z, bound_p = (4, 8) if dtype == "float32" else (12, 20)
    for z, p in (f(x, q, n.astype(dt), v), stagec.jit(f)(x, q, n.astype(dt), v)):
        ez, ep = _ulps(z, wz, dt), _ulps(p, wp, dt)
        assert ez.max() <= bound_z, (x[ez.argmax()], q[ez.argmax()], ez.max())
        assert ep.max() <= bound_p, (n[ep.argmax()], v[ep.argmax()], ep.max())


def test_zeta_edges_errors_and_derivative():
    assert np.isinf(float(ss.zeta(np.float32(1.0), np.float32(2.0))))
    # (SciPy's and JAX's: NaN below x = 1 and for n < 0; the sums gave -1.46 and inf)
    assert np.isnan(float(ss.zeta(np.float32(0.5), np.float32(1.0))))
    assert np.isnan(np.asarray(ss.polygamma(np.array([-1.0, -2.0], np.float32), np.float32(-2.0)))).all()
    np.testing.assert_allclose(float(ss.polygamma(0, np.float32(1.0))), -0.5772156649, rtol=1e-6)  # (digamma)
    with pytest.raises(NotImplementedError, match="q=None"):
        ss.zeta(2.0)
    with pytest.raises(ValueError, match="integer"):
        ss.polygamma(1.5, 2.0)
    g = float(stagec.grad(lambda q: ss.zeta(3.0, q))(2.0))
    np.testing.assert_allclose(g, -3 * float(_hurwitz(4, 2.0)), rtol=1e-5)
