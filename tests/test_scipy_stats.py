"""`stagec.scipy.special.gammainc/gammaincc/betainc` and `stagec.scipy.stats`' distribution functions against SciPy
in float64 (an independent oracle), float32 and float64, in the tails and at the domain's edges. Each check compiles
one module for many functions and points (IREE compiles dominate this file's time)."""
import numpy as np
import pytest

import stagec
from stagec._missing import NotInStagec
from stagec.scipy import special as sp, stats

ss = pytest.importorskip("scipy.special")
st = pytest.importorskip("scipy.stats")


def _rel(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return np.abs(got - want) / np.abs(want)


def _points(n=120, seed=0):
    """(a, x) for gammainc: a over 1e-3..1e5 with x within a factor 3 of a, plus hard cases: x = a at large a,
    tiny a, tiny x, far tails."""
    rng = np.random.default_rng(seed)
    a = 10 ** rng.uniform(-3, 5, n)
    x = a * 10 ** rng.uniform(-0.5, 0.5, n)
    a = np.concatenate([a, [1e3, 1e4, 1e5, 1e5, 1e-3, 1e-3, 0.5, 2.0, 30.0, 30.0, 1.0, 5.0]])
    x = np.concatenate([x, [1e3 + 5, 1e4 - 50, 1e5, 1e5 + 900, 0.5, 1e-4, 30.0, 1e-6, 3.0, 80.0, 1.05, 0.01]])
    return a, x


def _beta_points(n=120, seed=1):
    rng = np.random.default_rng(seed)
    a, b, x = 10 ** rng.uniform(-2, 4, n), 10 ** rng.uniform(-2, 4, n), rng.uniform(0, 1, n)
    a = np.concatenate([a, [3.7, 1e4, 0.5, 1e-3, 200.0, 2.0, 5e3]])
    b = np.concatenate([b, [0.011, 1e4, 0.5, 1e-3, 300.0, 3.0, 2.0]])
    x = np.concatenate([x, [0.85, 0.501, 1e-8, 0.3, 0.2, 0.999999, 0.9995]])
    return a, b, x


def _incomplete(a, x, ab, bb, xb):
    return sp.gammainc(a, x), sp.gammaincc(a, x), sp.betainc(ab, bb, xb)


# the domain's edges, where SciPy answers 0, 1 or NaN exactly
_NAN = np.nan
_EDGES_G = np.array([(0, 1), (0, 0), (1, 0), (np.inf, 1), (1, np.inf), (_NAN, 1), (-1, 1), (1, -1), (np.inf, np.inf),
                     (2, _NAN)]).T
_EDGES_B = np.array([(0, 1, .5), (1, 0, .5), (0, 0, .5), (1, 1, 0), (1, 1, 1), (2, 3, -0.1), (2, 3, 1.1),
                     (np.inf, 1, .5), (1, np.inf, .5), (_NAN, 1, .5), (-1, 1, .5), (2, 3, _NAN)]).T


def _check_incomplete(dtype, tol_g, tol_b):
    a, x = (np.concatenate([v, e]).astype(dtype) for v, e in zip(_points(), _EDGES_G))
    ab, bb, xb = (np.concatenate([v, e]).astype(dtype) for v, e in zip(_beta_points(), _EDGES_B))
    p, q, r = stagec.jit(_incomplete)(a, x, ab, bb, xb)
    assert p.dtype == q.dtype == r.dtype == dtype
    A, X = a.astype(np.float64), x.astype(np.float64)  # (the oracle at the rounded inputs)
    tiny = np.finfo(dtype).tiny * 1e6
    ng, nb = _EDGES_G.shape[1], _EDGES_B.shape[1]
    for got, want in ((p, ss.gammainc(A, X)), (q, ss.gammaincc(A, X))):
        np.testing.assert_array_equal(got[-ng:], want[-ng:])
        m = want > tiny
        assert _rel(got, want)[m].max() < tol_g
    want = ss.betainc(ab.astype(np.float64), bb.astype(np.float64), xb.astype(np.float64))
    np.testing.assert_array_equal(r[-nb:], want[-nb:])
    m = want > tiny
    assert _rel(r, want)[m].max() < tol_b


def test_incomplete_float32():
    # float32: 1.5e-5 measured over a in 1e-3..1e5 (x = a, a = 1e5 included); betainc 2e-4 where a or b >= 1e3 or
    # b < 0.1 with x near 1 (the fraction's rounding over hundreds of terms), 8e-5 below
    _check_incomplete(np.float32, 3e-5, 5e-4)


def test_incomplete_float64(x64):
    _check_incomplete(np.float64, 5e-12, 5e-12)


def test_incomplete_eager_and_grad():
    np.testing.assert_allclose(sp.gammainc(np.float32(3), np.float32(2.5)), ss.gammainc(3, 2.5), rtol=2e-6)  # eager
    # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a); d/dx I_x(a, b) = x^(a-1) (1-x)^(b-1) / B(a, b): SciPy's densities
    g = stagec.jit(stagec.grad(lambda x: sp.gammainc(3.0, x) - 2 * sp.gammaincc(0.5, x) + sp.betainc(2.0, 3.0, x / 4)))
    want = st.gamma.pdf(1.5, 3) + 2 * st.gamma.pdf(1.5, 0.5) + st.beta.pdf(1.5 / 4, 2, 3) / 4
    np.testing.assert_allclose(g(np.float32(1.5)), want, rtol=1e-5)
    for f, name in ((lambda a: sp.gammainc(a, 2.0), "respect to a"), (lambda a: sp.gammaincc(a, 2.0), "respect to a"),
                    (lambda b: sp.betainc(2.0, b, 0.5), "respect to a or b")):
        with pytest.raises(NotImplementedError, match=name):
            stagec.grad(f)(3.0)


def _stats_calls(S, x, q, k, loops=True, full=True):
    """{name: value} of every distribution function at x (reals), q (probabilities) and k (counts), with `S`
    stagec's stats or SciPy's (the same names and signatures). `loops`: also those built on gammainc and betainc
    (a few of each: their while loops take most of the compile time); `full`: also the densities and mass functions."""
    out = {}
    if loops:
        for d, nm, args in (("gamma", "cdf", (2.5, -3.0, 1.5)), ("chi2", "logcdf", (3.0, -2.0)),
                            ("beta", "logsf", (2.0, 0.5, -20.0, 40.0)), ("beta", "logcdf", (2.0, 0.5, -20.0, 40.0))):
            out[f"{d}.{nm}"] = getattr(getattr(S, d), nm)(x, *args)
        out.update({"gennorm.cdf": S.gennorm.cdf(x, 1.5), "poisson.cdf": S.poisson.cdf(k, 4.5, 1.0)})
    for nm in ("cdf", "logcdf", "sf", "logsf"):
        out[f"norm.{nm}"] = getattr(S.norm, nm)(x, 1.0, 2.0)
        out[f"expon.{nm}"] = getattr(S.expon, nm)(x, -1.0, 2.0)
        out[f"cauchy.{nm}"] = getattr(S.cauchy, nm)(x, 0.5, 2.0)
        out[f"pareto.{nm}"] = getattr(S.pareto, nm)(x, 2.5, -1.0, 2.0)
        for g in ("gumbel_l", "gumbel_r"):
            out[f"{g}.{nm}"] = getattr(getattr(S, g), nm)(x, 0.5, 2.0)
    for nm in ("pdf", "logpdf") if full else ():
        out[f"chi2.{nm}"] = getattr(S.chi2, nm)(x, 3.0, -2.0)
        out[f"pareto.{nm}"] = getattr(S.pareto, nm)(x, 2.5, -1.0, 2.0)
        out[f"gennorm.{nm}"] = getattr(S.gennorm, nm)(x, 1.5)
        out[f"vonmises.{nm}"] = getattr(S.vonmises, nm)(x / 10, 2.0)
        for g in ("gumbel_l", "gumbel_r"):
            out[f"{g}.{nm}"] = getattr(getattr(S, g), nm)(x, 0.5, 2.0)
    out.update({} if not full else {"laplace.cdf": S.laplace.cdf(x, 0.5, 2.0), "logistic.sf": S.logistic.sf(x, 0.5, 2.0),
                "bernoulli.cdf": S.bernoulli.cdf(k / 8, 0.3), "geom.logpmf": S.geom.logpmf(k, 0.3, -1.0),
                "binom.logpmf": S.binom.logpmf(k, 12.0, 0.3), "nbinom.logpmf": S.nbinom.logpmf(k, 3.5, 0.3),
                "betabinom.logpmf": S.betabinom.logpmf(k, 12.0, 2.5, 0.7), "poisson.pmf": S.poisson.pmf(k, 4.5)})
    for d, args in (("norm", (1.0, 2.0)), ("expon", (-1.0, 2.0)), ("logistic", (0.5, 2.0)), ("cauchy", (0.5, 2.0)),
                    ("uniform", (-1.0, 3.0)), ("pareto", (2.5, -1.0, 2.0)), ("gumbel_l", (0.5, 2.0)),
                    ("gumbel_r", (0.5, 2.0)), ("bernoulli", (0.3,))):
        out[f"{d}.ppf"] = getattr(S, d).ppf(q, *args)
        if d in ("norm", "logistic", "cauchy"):
            out[f"{d}.isf"] = getattr(S, d).isf(q, *args)
    return out


def _check_stats(dtype, rtol, deep, loops, full=True):
    x = np.concatenate([np.linspace(-30, 30, 41), [-1e3, -1e5, 1e3, 1e5]] if deep else [np.linspace(-9, 9, 19)])
    q = np.array([0, 1e-30 if deep else 1e-6, 1e-3, 0.1, 0.3, 0.5, 0.7, 0.999, 1 - 1e-7, 1, 1.5, -0.1])
    k = np.array([-2, -1, 0, 1, 2, 3, 5, 7, 12, 13, 2.5])
    x, q, k = x.astype(dtype), q.astype(dtype), k.astype(dtype)
    got = stagec.jit(lambda x, q, k: _stats_calls(stats, x, q, k, loops, full))(x, q, k)
    want = _stats_calls(st, x.astype(np.float64), q.astype(np.float64), k.astype(np.float64), loops, full)
    want["bernoulli.ppf"][q == 0] = 0  # (JAX's: the least k with cdf(k) >= 0 is 0; SciPy says -1)
    bad = []
    tiny = np.finfo(dtype).tiny * 1e6
    for n, w in want.items():
        assert got[n].dtype == dtype, n
        g = np.asarray(got[n], np.float64)
        fin = np.isfinite(w) & (np.abs(w) > tiny)
        rest = ~np.isfinite(w) & ~np.isnan(w)  # (infinities exactly; values below `tiny` may underflow)
        same = (np.array_equal(np.isnan(g), np.isnan(w)) and np.array_equal(g[rest], w[rest])
                and np.all(np.abs(g[np.abs(w) <= tiny]) <= tiny))
        err = _rel(g[fin], w[fin]).max(initial=0)
        if not same or err > rtol:
            bad.append((n, err, same, g, w))
    assert not bad


def test_stats_float64(x64):
    _check_stats(np.float64, 1e-11, deep=True, loops=True)


def test_beta_log_tails_step_one_loop(x64):
    """beta.logcdf and logsf take both tails from one loop over both (two loops, on swapped parameters, were two loop
    bodies for IREE, and on one float64 element with array parameters a module IREE 3.13's runtime refused: 35
    bindings > 32)."""
    x, a, b = np.array([0.0]), np.array([2.0]), np.array([0.5])
    f = stagec.jit(lambda x, a, b: (stats.beta.logcdf(x, a, b, -0.1, 1.2), stats.beta.logsf(x, a, b, -0.1, 1.2)))
    assert f.lower(x, a, b).as_text("final").count("stablehlo.while") == 1
    lc, ls = f(x, a, b)
    np.testing.assert_allclose(lc, st.beta.logcdf(x, a, b, -0.1, 1.2), rtol=1e-13)
    np.testing.assert_allclose(ls, st.beta.logsf(x, a, b, -0.1, 1.2), rtol=1e-13)


def test_beta_log_tails_in_the_default_float32():
    x = np.linspace(-0.1, 1.1, 25).astype(np.float32)  # (the far tails at both ends, and outside the support)
    lc, ls = stagec.jit(lambda x: (stats.beta.logcdf(x, 2.0, 0.5), stats.beta.logsf(x, 2.0, 0.5)))(x)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(lc, st.beta.logcdf(x64, 2.0, 0.5), rtol=2e-5)
    np.testing.assert_allclose(ls, st.beta.logsf(x64, 2.0, 0.5), rtol=2e-5)


def test_two_gamma_loops_on_float64_scalars(x64):
    """Float64 gammainc and gammaincc (another a) of scalars: `fuse-float64` made one generic of 33 scalar inputs
    after the loops, a dispatch of more buffers than IREE 3.13's runtime binds (the first call raised)."""
    p, q = stagec.jit(lambda x, a: (sp.gammainc(a, x), sp.gammaincc(2 * a, x)))(np.float64(2.5), np.float64(3.0))
    np.testing.assert_allclose([p, q], [ss.gammainc(3.0, 2.5), ss.gammaincc(6.0, 2.5)], rtol=1e-14)


def test_stats_float32():
    # the tails' functions (gammainc's and betainc's float32: above; densities: float64 only, for time)
    _check_stats(np.float32, 2e-5, deep=False, loops=False, full=False)


def test_stats_more():
    rng = np.random.default_rng(3)
    alpha = np.array([0.5, 2.0, 3.5])
    xs = rng.dirichlet(alpha, 4).T  # (K, n): JAX's layout
    np.testing.assert_allclose(stats.dirichlet.logpdf(xs, alpha), [st.dirichlet.logpdf(v, alpha) for v in xs.T],
                               rtol=1e-5)
    np.testing.assert_allclose(stats.dirichlet.logpdf(xs[:2], alpha), [st.dirichlet.logpdf(v, alpha) for v in xs.T],
                               rtol=1e-5)
    counts = np.array([[2.0, 3.0, 5.0], [0.0, 10.0, 0.0], [1.0, 1.0, 7.0]])
    p = np.array([0.2, 0.5, 0.3])
    np.testing.assert_allclose(stats.multinomial.logpmf(counts, 10.0, p)[:2], st.multinomial.logpmf(counts[:2], 10, p),
                               rtol=1e-5)
    assert stats.multinomial.logpmf(counts, 10.0, p)[2] == -np.inf  # (counts summing to 9)
    a = rng.standard_normal((5, 7)).astype(np.float32)
    np.testing.assert_allclose(stats.sem(a), st.sem(a), rtol=1e-5)
    np.testing.assert_allclose(stats.sem(a, axis=None, ddof=0), st.sem(a, axis=None, ddof=0), rtol=1e-5)
    # invalid parameters give NaN, as SciPy
    for got, want in ((stats.expon.cdf(1.0, 0.0, -1.0), np.nan), (stats.gamma.cdf(1.0, 2.0, 0.0, 0.0), np.nan),
                      (stats.pareto.sf(2.0, -1.0), np.nan), (stats.vonmises.pdf(0.1, -1.0), np.nan),
                      (stats.binom.pmf(2.0, 5.0, 1.5), np.nan)):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(NotInStagec, match="truncnorm"):
        stats.truncnorm


def test_stats_jax_names():
    """Each function JAX's distributions have that stagec now implements is there under the same name."""
    jst = pytest.importorskip("jax.scipy.stats")
    for d in ("norm", "expon", "laplace", "logistic", "cauchy", "uniform", "gamma", "beta", "poisson", "bernoulli",
              "chi2", "geom", "binom", "nbinom", "pareto", "gumbel_l", "gumbel_r", "gennorm", "vonmises", "dirichlet",
              "multinomial", "betabinom"):
        want = {n for n in dir(getattr(jst, d)) if not n.startswith("_") and n not in ("entropy", "promote_args_inexact")}
        assert want <= set(dir(getattr(stats, d))), (d, want - set(dir(getattr(stats, d))))


def _measure(n=2000):
    """Max relative errors of gammainc, gammaincc and betainc against SciPy at n random points per dtype (a, b over
    1e-3..1e5 and 1e-2..1e4, x within a factor 3 of a / uniform), by region: `python tests/test_scipy_stats.py`."""
    rng = np.random.default_rng(7)
    a = 10 ** rng.uniform(-3, 5, n)
    x = a * 10 ** rng.uniform(-0.5, 0.5, n)
    ab, bb, xb = 10 ** rng.uniform(-2, 4, n), 10 ** rng.uniform(-2, 4, n), rng.uniform(0, 1, n)
    for dtype in (np.float32, np.float64):
        stagec.config.update("enable_x64", dtype == np.float64)
        args = [v.astype(dtype) for v in (a, x, ab, bb, xb)]
        p, q, r = stagec.jit(_incomplete)(*args)
        A, X, AB, BB, XB = (v.astype(np.float64) for v in args)
        tiny = np.finfo(dtype).tiny * 1e6
        for name, got, want, par in (("gammainc", p, ss.gammainc(A, X), A), ("gammaincc", q, ss.gammaincc(A, X), A),
                                     ("betainc", r, ss.betainc(AB, BB, XB), np.maximum(AB, BB))):
            e = np.where(want > tiny, _rel(got, want), 0)
            parts = [f"{lo:g}<=param<{hi:g}: {e[(par >= lo) & (par < hi)].max():.2g}"
                     for lo, hi in ((0, 100), (100, 1e3), (1e3, 1e6))]
            print(f"{np.dtype(dtype).name} {name}: max rel {e.max():.2g} ({', '.join(parts)})")


if __name__ == "__main__":
    _measure()
