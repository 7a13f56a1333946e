"""gammainc, gammaincc and betainc as one loop each (stagec/scipy/_incomplete.py): the module IREE compiles, an
element's value apart from its neighbours', values against mpmath where the sums converge slowly, large arrays."""
import mpmath
import numpy as np
import pytest

import stagec
import stagec.scipy.special as sps

FUNCS = {"gammainc": lambda a, x: sps.gammainc(a, x), "gammaincc": lambda a, x: sps.gammaincc(a, x),
         "betainc": lambda a, x: sps.betainc(a, a + 1, x / (x + a + 1))}


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_one_while_loop_in_the_module(name):
    """The series, the continued fraction (and igamc's series) are one loop (three and two loops before; each loop
    was its test, its counter and its body, executables of their own)."""
    a = np.linspace(0.5, 30, 64).astype(np.float32)
    text = stagec.jit(FUNCS[name]).lower(a, a * 1.1).as_text("final")
    assert text.count("stablehlo.while") == 1


def _mp_p(a, x):
    return float(mpmath.gammainc(mpmath.mpf(float(a)), 0, mpmath.mpf(float(x)), regularized=True))


def _mp_q(a, x):
    return float(mpmath.gammainc(mpmath.mpf(float(a)), mpmath.mpf(float(x)), mpmath.inf, regularized=True))


def _mp_i(a, b, x):
    return float(mpmath.betainc(mpmath.mpf(float(a)), mpmath.mpf(float(b)), 0, mpmath.mpf(float(x)), regularized=True))


# each method's elements: the power series (x < a), the fraction (x > a), igamc's series (x, a small), Temme's
GAMMA_POINTS = [(3.5, 2.0), (5e4, 4.9e4), (30.0, 31.0), (5e4, 5.1e4), (0.3, 0.2), (2e5, 2.001e5)]
BETA_POINTS = [(2.0, 3.0, 0.2), (3e3, 30.0, 0.985), (0.5, 1e-3, 0.9), (40.0, 40.0, 0.5)]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_an_element_does_not_depend_on_its_neighbours(dt, request):
    """Each element stops when its own sum has converged: in an array beside slowly converging elements (a = 5e4
    near x, thousands of steps) its value is the one it has beside quick ones (the loop ran every element until the
    slowest had converged: a fraction's h drifted, 1.9e3 float64 ulps on average on a random grid, docs/log.md)."""
    if dt == np.float64:
        request.getfixturevalue("x64")
    # (jit's modules of the functions themselves, on 16 values: those eager calls run, which
    # tests/test_eager_gammainc_small.py compiles too)
    fs = stagec.jit(sps.gammainc), stagec.jit(sps.gammaincc)
    for a, x in GAMMA_POINTS:
        quick = np.full(16, a, dt), np.full(16, x, dt)
        slow = np.concatenate([[a], np.full(15, 5e4)]).astype(dt), np.concatenate([[x], np.full(15, 4.99e4)]).astype(dt)
        for u, v in zip([f(*quick) for f in fs], [f(*slow) for f in fs]):
            assert np.asarray(u)[0] == np.asarray(v)[0], (a, x)
    g = stagec.jit(sps.betainc)
    for a, b, x in BETA_POINTS:
        quick = [np.full(16, v, dt) for v in (a, b, x)]
        slow = [np.concatenate([[v], np.full(15, w)]).astype(dt) for v, w in ((a, 3e3), (b, 3e3), (x, 0.5))]
        assert np.asarray(g(*quick))[0] == np.asarray(g(*slow))[0], (a, b, x)


@pytest.mark.parametrize("dt, rtol", [(np.float32, 3e-6), (np.float64, 3e-13)])
def test_values_against_mpmath(dt, rtol, request):
    """Where each sum converges slowly (x near a large a: the series' terms' ratio near 1, whose tail the test of
    convergence counts) and in each method's domain."""
    if dt == np.float64:
        request.getfixturevalue("x64")
    # (the points padded to the 16 elements of the test above: its modules, compiled once for both tests)
    n = len(GAMMA_POINTS)
    a, x = (np.array(v, dt) for v in zip(*GAMMA_POINTS))
    p, q = (stagec.jit(f)(*(np.resize(v, 16) for v in (a, x))) for f in (sps.gammainc, sps.gammaincc))
    p, q = np.asarray(p)[:n], np.asarray(q)[:n]
    ae, xe = a.astype(np.float64), x.astype(np.float64)
    np.testing.assert_allclose(p, [_mp_p(*v) for v in zip(ae, xe)], rtol=rtol)
    np.testing.assert_allclose(q, [_mp_q(*v) for v in zip(ae, xe)], rtol=rtol)
    a, b, x = (np.array(v, dt) for v in zip(*BETA_POINTS))
    i = np.asarray(stagec.jit(sps.betainc)(*(np.resize(v, 16) for v in (a, b, x))))[:len(BETA_POINTS)]
    want = [_mp_i(*v) for v in zip(a.astype(np.float64), b.astype(np.float64), x.astype(np.float64))]
    np.testing.assert_allclose(np.asarray(i), want, rtol=rtol * 30)  # (the prefactor's exp near the peak)


def test_eager_calls_keep_their_bits_and_agree_with_jit():
    """Eager calls: the first op by op, the later ones as a composite (the same bits); within an ulp of jit's (the
    eager steps on small arrays are NumPy's correctly rounded exp and log, as before)."""
    a = np.array([[0.5, 3, 2e5, 40], [5e4, 0.2, 7, 1.5]] * 2, np.float32)
    x = np.array([[0.1, 9, 1.999e5, 41], [4.9e4, 0.3, 6, 2.5]] * 2, np.float32)
    for f in (sps.gammainc, sps.gammaincc):
        calls = [np.asarray(f(stagec.device_put(a), stagec.device_put(x))) for _ in range(3)]
        np.testing.assert_array_equal(calls[1], calls[0])
        np.testing.assert_array_equal(calls[2], calls[0])
        np.testing.assert_allclose(calls[0], np.asarray(stagec.jit(f)(a, x)), rtol=2.4e-7, atol=1e-12)


def test_large_arrays_compile():
    """60K float32 elements: the loop's test fused with its body held every state on the reduction's stack (IREE's
    1 MiB limit: "exceeded stack allocation limit")."""
    a = np.linspace(0.5, 30, 60_000).astype(np.float32)
    p = np.asarray(stagec.jit(lambda a: sps.gammainc(a, a * 1.1))(a))
    np.testing.assert_allclose(p[::6000], [_mp_p(v, np.float32(v * np.float32(1.1))) for v in a[::6000]], rtol=3e-6)
    i = np.asarray(stagec.jit(lambda a: sps.betainc(a, a + 1, a / 40))(a))
    assert np.isfinite(i).all()
