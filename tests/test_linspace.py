"""linspace and its family as in JAX: retstep, axis, array and traced bounds, integer dtypes rounded toward -inf.
Oracle: NumPy's linspace in float64."""
import numpy as np
import pytest

import stagec
import stagec.numpy as snp


@pytest.mark.parametrize("num, endpoint", [(0, True), (1, True), (1, False), (2, True), (7, True), (7, False)])
def test_constant_bounds_match_numpy(num, endpoint):
    got, step = snp.linspace(-1.5, 3.0, num, endpoint=endpoint, retstep=True)
    want, wstep = np.linspace(-1.5, 3.0, num, endpoint=endpoint, retstep=True)
    np.testing.assert_array_equal(np.asarray(got), want.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(step), np.float32(wstep))


def test_integer_dtypes_round_toward_minus_infinity():
    for args in [(-1, 0, 3), (-7, 5, 9), (0, -10, 4)]:
        want = np.linspace(*args, dtype=np.int32)
        np.testing.assert_array_equal(np.asarray(snp.linspace(*args, dtype=np.int32)), want)
        np.testing.assert_array_equal(np.asarray(snp.linspace(snp.asarray(float(args[0])), *args[1:],
                                                              dtype=np.int32)), want)


def test_array_and_traced_bounds_along_an_axis():
    a, b = np.array([0.0, -3.0, 1e3], np.float32), np.float32(2.0)

    def f(a, b):
        return [snp.linspace(a, b, 7, axis=ax, retstep=True) for ax in (0, -1)] + [snp.linspace(a, b, 1),
                                                                                   snp.linspace(a, b, 0)]
    for got in (stagec.jit(f)(a, b), f(snp.asarray(a), b)):  # traced and eager arrays: the same formula
        (g0, s0), (g1, s1), one, empty = got
        want, wstep = np.linspace(a.astype(np.float64), b, 7, retstep=True)
        np.testing.assert_allclose(np.asarray(g0), want, rtol=2e-7, atol=1e-7)
        np.testing.assert_array_equal(np.asarray(g1), np.asarray(g0).T)
        np.testing.assert_allclose(np.asarray(s0), wstep, rtol=1e-7)
        assert np.asarray(g0)[-1].tolist() == [2.0] * 3  # the endpoint exactly
        assert one.shape == (1, 3) and empty.shape == (0, 3)


def test_bounds_are_differentiable_and_batch():
    g = stagec.jacfwd(lambda s, e: snp.linspace(s, e, 5), argnums=(0, 1))(1.0, 3.0)
    t = np.linspace(0, 1, 5)
    np.testing.assert_allclose(np.asarray(g[0]), 1 - t, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(g[1]), t, rtol=1e-6)
    # geomspace(a, 8) = a**(1 - i/3) * 8**(i/3): the derivative at a = 1 is (1 - i/3) * 2**i
    i = np.arange(4)
    np.testing.assert_allclose(np.asarray(stagec.jacfwd(lambda a: snp.geomspace(a, 8.0, 4))(1.0)),
                               (1 - i / 3) * 2.0 ** i, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(stagec.jit(stagec.vmap(lambda s: snp.logspace(s, 2.0, 3)))(
        np.array([0.0, 1.0], np.float32))), [np.logspace(0, 2, 3), np.logspace(1, 2, 3)], rtol=1e-6)
