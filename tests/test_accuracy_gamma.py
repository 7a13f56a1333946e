"""float32 gamma, gammaln near 0.6 and complex64 logistic (issue 38's last accuracy items), each
against mpmath on a fixed sample of its hard region, on the CPU and on Vulkan (lavapipe). Before: gamma was
exp(gammaln) (281 ulps near +-30), gammaln 18-34 ulps near 0.6 (the Lanczos sum),
complex64 logistic did not compile for Vulkan."""
from __future__ import annotations

import numpy as np
import pytest

import stagec

mpmath = pytest.importorskip("mpmath")
from mp_ulps import ulps as _ulps  # noqa: E402


@pytest.fixture(autouse=True)
def _mp_prec():
    old = mpmath.mp.prec
    mpmath.mp.prec = 100
    yield
    mpmath.mp.prec = old


def _vulkan_or_skip(backend):
    if backend == "vulkan":
        from stagec.compiler.targets import device_names
        if not device_names("vulkan"):
            pytest.skip("no Vulkan device: apt-get install mesa-vulkan-drivers")


BACKENDS = ["cpu", "vulkan"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_gammaln_float32_near_its_zeros(backend):
    """float32 gammaln on [1/4, 5/4] and next to its negative zeros: [1/2, 3/4) took the Lanczos sum (up to 65 ulps
    near 0.75; JAX 0.10.2 72), and the reflection's cancellation left 7-1000 ulps near -2.7477, -4.0396, -5.0009 (JAX's
    up to 5e4); in float64 arithmetic now."""
    _vulkan_or_skip(backend)
    from stagec.scipy import special
    zeros = (-2.457024738220949, -2.747682646727640, -3.143580888349980, -3.955294284858597, -4.039361839740536,
             -4.991716355842564, -5.008116073695123, -7.999975173226450)
    x = np.concatenate([np.linspace(0.5, 0.75, 300), np.linspace(0.25, 0.5, 100), np.linspace(0.75, 1.25, 100),
                        *(z + np.linspace(-3e-3, 3e-3, 80) for z in zeros)]).astype(np.float32)
    edge = np.array([0.0, -0.0, -3.0, -12917639.0, np.inf, -np.inf, 1.0, 2.0, 3e38], np.float32)
    got, got_edge = stagec.jit(lambda x, e: (special.gammaln(x), special.gammaln(e)), backend=backend)(x, edge)
    got = np.asarray(got)
    err = _ulps(got, [mpmath.log(abs(mpmath.gamma(mpmath.mpf(float(v))))) for v in x])
    j = int(np.argmax(err))
    assert err[j] <= 4, f"gammaln({x[j]!r}) = {got[j]!r}: {err[j]:.1f} ulps"
    np.testing.assert_array_equal(np.asarray(got_edge), [np.inf] * 6 + [0, 0, np.inf])


@pytest.mark.parametrize("backend", BACKENDS)
def test_gamma_float32(backend):
    """float32 gamma over (-40, 35.04], near 0 and next to the poles: exp(gammaln) carried gammaln's absolute error
    times e^|.| (281 ulps near +-30, JAX 0.10.2 321 on this sample); `mathlib` computes exp(lgamma(x)) as |Gamma(x)|
    in float64 arithmetic now, while the StableHLO stage keeps JAX's ops."""
    _vulkan_or_skip(backend)
    from stagec.scipy import special
    rng = np.random.default_rng(30)
    x = np.concatenate([rng.uniform(-40, 35.04, 400), rng.uniform(-35, -25, 150), rng.uniform(25, 35.04, 150),
                        np.geomspace(2e-38, 1, 40), -np.geomspace(2e-38, 1, 40), np.arange(-10, 0) + 1e-3,
                        np.arange(-10, 0) - 1e-3]).astype(np.float32)
    x = x[np.abs(x - np.round(x)) > 0]
    got = np.asarray(stagec.jit(special.gamma, backend=backend)(x))
    err = _ulps(got, [mpmath.gamma(mpmath.mpf(float(v))) for v in x])
    j = int(np.argmax(err))
    assert err[j] <= 1, f"gamma({x[j]!r}) = {got[j]!r}: {err[j]:.1f} ulps"
    edge = np.array([0.0, -0.0, -3.0, np.inf, -np.inf, np.nan, 35.05, -2.5], np.float32)
    mixed = np.concatenate([x[:42], edge])  # (the edges after 42 of the points: one module for both checks below)
    got = np.asarray(stagec.jit(special.gamma, backend=backend)(mixed))[42:]
    want = np.array([np.inf, -np.inf, np.nan, np.inf, np.nan, np.nan, np.inf, -0.94530874], np.float32)
    np.testing.assert_array_equal(got, want)
    assert "chlo.lgamma" in stagec.jit(special.gamma).lower(x).as_text()  # (JAX's ops: sign, exp, lgamma)
    eager = np.asarray(special.gamma(mixed))  # (one module, as jit's: the same bits)
    np.testing.assert_array_equal(eager, np.asarray(stagec.jit(special.gamma)(mixed)))


def test_gamma_float64(x64):
    """float64 gamma over (-180, 180): near 1 and 2, tiny arguments, next to the poles and where it over- and
    underflows (+-171). exp(gammaln) lost |gammaln| eps (571 ulps near +-170, JAX 0.10.2 570); `mathlib` computes
    exp(lgamma(x)) as e^E with E a double-double now: within 1.3 ulps (the bound 2), on the CPU (Vulkan has no
    float64 functions)."""
    from stagec.scipy import special
    rng = np.random.default_rng(64)
    x = np.concatenate([rng.uniform(-180, 180, 500), rng.uniform(-1, 3, 100), rng.uniform(160, 171.62, 60),
                        rng.uniform(-178, -160, 60), np.geomspace(2.3e-308, 8, 60), -np.geomspace(2.3e-308, 8, 60),
                        np.arange(-175, 0) + 1e-9, 1 + rng.uniform(-1e-6, 1e-6, 20), 2 + rng.uniform(-1e-6, 1e-6, 20)])
    x = x[x != np.round(x)]
    edge = np.array([0.0, -0.0, -3.0, np.inf, -np.inf, np.nan, 171.7, -2.5, 1.0, 2.0, 1e-300, -1e-300])
    got, got_edge = stagec.jit(lambda x, e: (special.gamma(x), special.gamma(e)))(x, edge)  # (one module)
    got = np.asarray(got)
    assert got.dtype == np.float64
    err = _ulps(got, [mpmath.gamma(mpmath.mpf(float(v))) for v in x], np.float64)
    j = int(np.argmax(err))
    assert err[j] <= 2, f"gamma({x[j]!r}) = {got[j]!r}: {err[j]:.1f} ulps"
    got = np.asarray(got_edge)
    want = [np.inf, -np.inf, np.nan, np.inf, np.nan, np.nan, np.inf, float(mpmath.gamma(-2.5)), 1, 1,
            1e300, -1e300]
    np.testing.assert_allclose(got, want, rtol=3e-16)
    assert "chlo.lgamma" in stagec.jit(special.gamma).lower(x).as_text()  # (JAX's ops: sign, exp, lgamma)


@pytest.mark.parametrize("backend", BACKENDS)
def test_complex64_logistic(backend):
    """complex64 lax.logistic within an ulp of |f| (NumPy complex128's 1 / (1 + e^-z)): Vulkan raised
    NotImplementedError (IREE's NaN guard is a select of complex values), the CPU's was 5.5e4 ulps at |b| ~ 1e4 (its
    float32 sin and cos; JAX 0.10.2 97 on this sample)."""
    _vulkan_or_skip(backend)
    from stagec import lax
    rng = np.random.default_rng(2)
    a = np.concatenate([rng.uniform(-30, 30, 300), np.geomspace(1e-30, 80, 100) * rng.choice([-1, 1], 100)])
    b = np.concatenate([rng.uniform(-30, 30, 300), rng.uniform(-1e4, 1e4, 100)])
    z = np.concatenate([a + 1j * b, np.pi * 1j + rng.uniform(-1e-3, 1e-3, 50) * (1 + 1j)]).astype(np.complex64)
    sp = np.array([np.inf, -np.inf, 0, complex(2, -0.0), -2, complex(np.nan, 0)], np.complex64)
    got, got_sp = stagec.jit(lambda z, s: (lax.logistic(z), lax.logistic(s)), backend=backend)(z, sp)  # (one module)
    got = np.asarray(got).astype(np.complex128)
    want = 1 / (1 + np.exp(-z.astype(np.complex128)))
    err = np.abs(got - want) / (np.finfo(np.float32).eps * np.abs(want))
    j = int(np.argmax(err))
    assert err[j] <= 1, f"logistic({z[j]!r}) = {got[j]!r}, not {want[j]!r}: {err[j]:.1f} ulps"
    got = np.asarray(got_sp)
    np.testing.assert_array_equal(got[:3], [1, 0, 0.5])
    np.testing.assert_allclose(got[3:5].real, 1 / (1 + np.exp([-2.0, 2.0])), rtol=1e-7)
    assert np.signbit(got[3].imag) and not np.signbit(got[4].imag) and np.isnan(got[5].real)  # (b's zero)


def test_gamma_beside_gammaln_in_one_module(x64):
    """gamma and gammaln of the same x in one jit share one lgamma (CSE): gamma's rewrite still applies (it needed
    exponentials as the lgamma's only readers: 61.6 float32 ulps near 30, 2758 float64 ulps near 165), and gammaln
    keeps its own value."""
    from stagec.scipy import special
    mpmath.mp.prec = 120
    cases = ((np.float32, 29.0, 31.0, 1), (np.float64, 160.0, 170.0, 4))
    xs = [np.linspace(lo, hi, 40).astype(dt) for dt, lo, hi, _ in cases]
    outs = stagec.jit(lambda xs: [(special.gamma(v), special.gammaln(v)) for v in xs])(xs)  # (one module, both dtypes)
    for (dt, _, _, bound), x, (g, lg) in zip(cases, xs, outs):
        err = _ulps(np.asarray(g), [mpmath.gamma(mpmath.mpf(float(v))) for v in x], dt)
        assert err.max() <= bound, (dt, float(x[int(np.argmax(err))]), err.max())
        err = _ulps(np.asarray(lg), [mpmath.loggamma(mpmath.mpf(float(v))) for v in x], dt)
        assert err.max() <= 4, (dt, err.max())


def test_gamma_float16():
    """float16 gamma through float32's (exp of a float16 lgamma: 8 ulps, JAX 0.10.2 the same). Against mpmath."""
    from stagec.scipy import special
    x = np.concatenate([np.linspace(-9.9, 8.95, 400), np.linspace(0.01, 1, 50)]).astype(np.float16)  # (65504 past 9.2)
    x = x[x != np.round(x)]
    got = np.asarray(stagec.jit(special.gamma)(x))
    assert got.dtype == np.float16
    err = _ulps(got, [mpmath.gamma(mpmath.mpf(float(v))) for v in x], np.float16)
    assert err.max() <= 1, (float(x[int(np.argmax(err))]), err.max())
