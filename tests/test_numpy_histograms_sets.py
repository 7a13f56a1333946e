"""`stagec.numpy`'s histograms (`histogram_bin_edges`, `histogram`, `histogram2d`, `histogramdd`), set functions
(`union1d`, `intersect1d`, `setdiff1d`, `setxor1d`), `compress`, `extract` and `trim_zeros`: against NumPy in
float64, eagerly and under jit (with `size=` where the values decide the length), and against JAX where installed
for what JAX defines beyond NumPy (the padding of sized results, the dtypes)."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec.errors import ConcretizationTypeError

# ---------------------------------------------------------------- histograms

X = np.array([0.0, 1.0, 1.0, 2.0, 2.5, 4.0, 3.0, 0.5, 4.0, 1.5])  # edges 0, 1, ..., 4 for bins=4: ties on edges
W = np.linspace(0.5, 2.0, 10)
H_CASES = [  # (data, kwargs) against np.histogram; the traced ones in one jit
    (X, dict(bins=4)),
    (X, dict(bins=3, range=(0.5, 3.0))),  # values outside the range are not counted
    (X, dict(bins=[0.0, 1.0, 1.5, 4.0], weights=W, density=True)),
    (X.reshape(2, 5), dict(bins=5, weights=W.reshape(2, 5))),
    (np.array([np.nan, 1.0, 2.0, np.inf]), dict(bins=2, range=(0, 2))),  # NaN and inf outside
    (np.full(3, 2.0), dict(bins=2)),  # a zero-width range: widened by 0.5 each side
    (np.zeros(0), dict()),  # empty: NumPy's range (0, 1)
    (np.arange(7), dict(bins=3, density=True)),  # integers: float edges
]


def _check_hist(got, want):
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def test_histogram_against_numpy(x64):
    for a, kw in H_CASES:
        want = np.histogram(a, **kw)
        _check_hist(snp.histogram(a, **kw), want)
        np.testing.assert_allclose(snp.histogram_bin_edges(a, kw.get("bins", 10), kw.get("range")), want[1])
    traced = [c for c in H_CASES[:4]]
    got = stagec.jit(lambda xs, ws: [snp.histogram(x, **{**kw, **({"weights": w} if w is not None else {})})
                                     for x, w, (_, kw) in zip(xs, ws, traced)])(
        [c[0] for c in traced], [c[1].get("weights") for c in traced])
    for g, (a, kw) in zip(got, traced):
        _check_hist(g, np.histogram(a, **kw))


def test_histogramdd_and_2d_against_numpy(x64):
    rng = np.random.default_rng(0)
    s = np.round(rng.standard_normal((40, 3)), 1)
    w = rng.random(40)
    dd = [dict(bins=3), dict(bins=(2, [-1.0, 0.0, 0.5, 2.0], 4), range=[None, None, (-1, 1)]),
          dict(bins=2, weights=w, density=True)]
    d2 = [dict(bins=4), dict(bins=(3, [-2.0, 0.0, 2.0]), weights=w), dict(bins=[-1.0, 0.0, 1.0], density=True)]

    def run(s, w):
        out = [snp.histogramdd(s, **{**kw, **({"weights": w} if "weights" in kw else {})}) for kw in dd]
        return out + [snp.histogram2d(s[:, 0], s[:, 1], **{**kw, **({"weights": w} if "weights" in kw else {})})
                      for kw in d2]
    want = [np.histogramdd(s, **kw) for kw in dd] + [np.histogram2d(s[:, 0], s[:, 1], **kw) for kw in d2]
    for got in (run(s, w), stagec.jit(run)(s, w)):
        for g, wt in zip(got[:3], want[:3]):
            np.testing.assert_allclose(g[0], wt[0], rtol=1e-12)
            for ge, we in zip(g[1], wt[1]):
                np.testing.assert_allclose(ge, we, rtol=1e-12)
        for g, wt in zip(got[3:], want[3:]):
            for ge, we in zip(g, wt):
                np.testing.assert_allclose(ge, we, rtol=1e-12)


def test_histograms_match_jax():
    """JAX's dtypes (float counts from histogram, int counts from histogramdd without weights) and values."""
    jnp = pytest.importorskip("jax.numpy")
    x = np.array([0.5, 1.0, 1.0, 2.0, 3.5, 3.5, 7.0], np.float32)
    i = np.array([3, 1, 4, 1, 5, 9, 2], np.int32)
    s = np.stack([x, x[::-1]], axis=1)
    pairs = [(snp.histogram(x, 3), jnp.histogram(x, 3)), (snp.histogram(i, 4, weights=i), jnp.histogram(i, 4, weights=i)),
             (snp.histogram(np.full(2, 5.0, np.float32)), jnp.histogram(np.full(2, 5.0, np.float32))),
             (snp.histogramdd(s, 3), jnp.histogramdd(s, 3)), (snp.histogram2d(x, i, 2), jnp.histogram2d(x, i, 2))]
    for got, want in pairs:
        for g, w in zip(_leaves(got), _leaves(want)):
            assert g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-6)


def _leaves(t):
    return [np.asarray(v) for x in t for v in (x if isinstance(x, list) else [x])]


@pytest.mark.parametrize("fn", [lambda b: snp.histogram(X, b), lambda b: snp.histogram_bin_edges(X, b),
                                lambda b: snp.histogramdd(X.reshape(5, 2), b),
                                lambda b: snp.histogram2d(X, X, b)])
def test_string_bins_raise(fn):
    with pytest.raises(NotImplementedError, match="string values for `bins`"):
        fn("auto")


def test_histogram_argument_errors():
    with pytest.raises(ConcretizationTypeError, match="bins argument of histogram_bin_edges"):
        stagec.jit(lambda b: snp.histogram(X, b))(3)
    with pytest.raises(ValueError, match="same shape"):
        snp.histogram(X, 3, weights=W[:5])
    with pytest.raises(ValueError, match="must be positive"):
        snp.histogram(X, 0)
    with pytest.raises(ValueError, match="range must be a sequence of 2 pairs"):
        snp.histogramdd(X.reshape(5, 2), 3, range=[(0, 1)])
    with pytest.raises(ValueError, match="a bin for each dimension"):
        snp.histogramdd(X.reshape(5, 2), [3, 3, 3])
    with pytest.raises(TypeError, match="not a list"):
        snp.histogramdd([X, X], 3)


# ---------------------------------------------------------------- set functions

A = np.array([3, 1, 2, 2, 5, 7, 1])
B = np.array([2, 8, 1, 1, 9])
FA = np.array([1.0, np.nan, 2.0, np.nan, -0.5])
FB = np.array([np.nan, 2.0, 3.0])
PAIRS = [(A, B), (FA, FB), (A.reshape(7, 1), B[:0]), (np.unique(A), np.unique(B))]
SETS = [("union1d", {}), ("intersect1d", {}), ("intersect1d", {"return_indices": True}), ("setdiff1d", {}),
        ("setxor1d", {})]
UNIQUE_ONLY = [("intersect1d", {"assume_unique": True, "return_indices": True}),
               ("setdiff1d", {"assume_unique": True}), ("setxor1d", {"assume_unique": True})]


def _eq(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w)


def _padded(want, size: int, fill, index_fills=()):
    """NumPy's result cut or padded to `size` (values with `fill`, index arrays with `index_fills`)."""
    want = want if isinstance(want, tuple) else (want,)
    fills = (fill, *index_fills)
    out = tuple(np.concatenate([w[:size], np.full(max(size - len(w), 0), f, w.dtype)]) for w, f in zip(want, fills))
    return out if len(out) > 1 else out[0]


def test_set_functions_against_numpy(x64):
    for a, b in PAIRS:
        for name, kw in SETS + (UNIQUE_ONLY if a is PAIRS[3][0] else []):
            _eq(getattr(snp, name)(a, b, **kw), getattr(np, name)(a, b, **kw))


def test_set_functions_with_size_against_numpy(x64):
    """Under jit with a static size (longer and shorter than the result) and an explicit fill_value: NumPy's
    result, cut or padded."""
    specs = [(p, name, kw, 6) for p in (PAIRS[0], PAIRS[1]) for name, kw in SETS]
    specs += [(PAIRS[0], name, kw, 2) for name, kw in SETS[:3]] + [(PAIRS[3], name, kw, 5) for name, kw in UNIQUE_ONLY]
    # (one module, each pair passed once: the cases of a pair share its arguments, so the compiler merges the work
    # they have in common, as the sort of the pair's values; the module took 1.6x the time with a copy per case)
    pair_of = [next(k for k, p in enumerate(PAIRS) if p is s[0]) for s in specs]
    got = stagec.jit(lambda ps: [getattr(snp, name)(*ps[k], **kw, size=size, fill_value=-7)
                                 for k, (_, name, kw, size) in zip(pair_of, specs)])(PAIRS)
    for g, ((a, b), name, kw, size) in zip(got, specs):
        fills = (len(np.ravel(a)), len(np.ravel(b))) if kw.get("return_indices") else ()
        _eq(g, _padded(getattr(np, name)(a, b, **kw), size, -7, fills))


def test_set_functions_with_size_match_jax():
    """The default padding (union1d, intersect1d, setxor1d: the result's smallest value; setdiff1d: 0) is JAX's."""
    jnp = pytest.importorskip("jax.numpy")
    a, b = A.astype(np.int32), B.astype(np.int32)
    fa, fb = FA.astype(np.float32), FB.astype(np.float32)
    cases = [("union1d", (a, b), dict(size=10)), ("intersect1d", (a, b), dict(size=4, return_indices=True)),
             ("intersect1d", (fa, fb), dict(size=3)), ("setdiff1d", (fa, fb), dict(size=4)),
             ("setxor1d", (a, b), dict(size=8)), ("setxor1d", (fa, fb), dict(size=6)),
             ("setxor1d", (a[:0], b[:0]), dict(size=2))]
    got = stagec.jit(lambda ps: [getattr(snp, n)(*ab, **kw) for ab, (n, _, kw) in zip(ps, cases)])(
        [c[1] for c in cases])
    for g, (name, args, kw) in zip(got, cases):
        want = getattr(jnp, name)(*args, **kw)
        for gv, wv in zip(g if isinstance(g, tuple) else (g,), want if isinstance(want, tuple) else (want,)):
            assert np.asarray(gv).dtype == np.asarray(wv).dtype
            np.testing.assert_array_equal(np.asarray(gv), np.asarray(wv))


# ---------------------------------------------------------------- compress, extract, trim_zeros

M = np.arange(12).reshape(3, 4)


def test_compress_extract_against_numpy():
    for cond, axis in (([1, 0, 1], 0), ([0, 1, 1, 0], 1), ([True, False, True], None), ([0, 0, 0], 0)):
        _eq(snp.compress(cond, M, axis), np.compress(cond, M, axis))
    _eq(snp.asarray(M).compress([0, 1, 1, 0], axis=1), M.compress([0, 1, 1, 0], axis=1))  # (the method)
    cond = (M % 3 == 0)
    _eq(snp.extract(cond, M), np.extract(cond, M))
    _eq(snp.extract(cond[:2], M), np.extract(cond[:2], M))  # (the shorter one decides, as JAX's)
    got = stagec.jit(lambda c, m, c2: [snp.compress(c, m, 1, size=3, fill_value=-1), snp.compress(c, m, 0, size=1),
                                       snp.extract(c2, m, size=6, fill_value=99), snp.extract(c2, m, size=2)])(
        np.array([0, 1, 1]), M, cond)
    _eq(got[0], np.concatenate([M[:, 1:3], np.full((3, 1), -1)], axis=1))
    _eq(got[1], M[1:2])
    _eq(got[2], np.array([0, 3, 6, 9, 99, 99]))
    _eq(got[3], np.array([0, 3]))
    with pytest.raises(ValueError, match="out of bounds"):
        snp.compress([1, 0, 0, 1], M, 0)
    with pytest.raises(ValueError, match="size must be"):
        snp.compress([1, 0, 1], M, 0, size=4)


def test_trim_zeros_against_numpy():
    v = np.array([0, 0, 3, 0, 2, 0])
    g = np.zeros((4, 5))
    g[1:3, 1:4] = 1.0
    for args in ((v,), (v, "f"), (v, "B"), (np.zeros(3),), (g,), (g, "fb", 1), (g, "f", 0), (g, "b", (0, 1))):
        _eq(snp.trim_zeros(*args), np.trim_zeros(*args))


@pytest.mark.parametrize("name,args", [("union1d", (A, B)), ("intersect1d", (A, B)), ("setdiff1d", (A, B)),
                                       ("setxor1d", (A, B)), ("compress", (A > 2, A)), ("extract", (A > 2, A))])
def test_set_functions_without_size_under_jit_say_so(name, args):
    with pytest.raises(ConcretizationTypeError, match=rf"{name} \(its output shape depends on the values; give a "
                                                      r"static size="):
        stagec.jit(getattr(snp, name))(*args)


def test_trim_zeros_under_jit_says_so():
    with pytest.raises(ConcretizationTypeError, match="trim_zeros .*outside jit"):
        stagec.jit(snp.trim_zeros)(A)


def test_value_sized_functions_of_constants_under_jit_as_numpy():
    """Without size=, a closed-over constant (not a traced argument) is computed while tracing: NumPy's results,
    a constant of the jitted function (`_base.value_sized`); a traced argument still raises (above)."""
    c, d = np.array([3, 1, 3, 0, 5, -2]), np.array([1.5, 2.0, 5.0, -2.0])
    z = np.array([0, 0, 1, 0, 2, 0])
    cases = {"union1d": (np.union1d, (c, d)), "intersect1d": (np.intersect1d, (c, d)),
             "setdiff1d": (np.setdiff1d, (c, d)), "setxor1d": (np.setxor1d, (c, d)),
             "compress": (np.compress, (c > 1, c)), "extract": (np.extract, (c > 1, c)),
             "trim_zeros": (np.trim_zeros, (z,)), "unique": (np.unique, (d,))}
    got = stagec.jit(lambda y: {k: getattr(snp, k)(*args) + y.astype(int) * 0 for k, (_, args) in cases.items()})(
        np.float32(0))
    for k, (f, args) in cases.items():
        np.testing.assert_array_equal(got[k], f(*args), err_msg=k)


# ---------------------------------------------------------------- put, put_along_axis, packbits, unpackbits


def test_put_and_put_along_axis_against_numpy():
    x = np.arange(12.0).reshape(3, 4)

    def np_put(f, *args):
        y = x.copy()
        f(y, *args)
        return y
    i = np.array([[0, 2], [1, 1], [3, 0]])
    j = np.array([[2, 0, 1, 0]])
    got = [snp.put(x, np.array([0, -1, 5]), np.array([9.0, 8.0]), inplace=False),
           snp.put(x, np.array([1, 30]), 7.0, mode="clip", inplace=False),
           snp.put(x, np.array([1, 30]), 7.0, mode="wrap", inplace=False),
           snp.put_along_axis(x, i, -1.0, 1, inplace=False),
           snp.put_along_axis(x, j, np.array([[7.0, 8, 9, 10]]), 0, inplace=False),
           snp.put_along_axis(x, np.array([3, 11]), 5.0, None, inplace=False)]
    want = [np_put(np.put, np.array([0, -1, 5]), np.array([9.0, 8.0])),
            np_put(np.put, np.array([1, 30]), 7.0, "clip"), np_put(np.put, np.array([1, 30]), 7.0, "wrap"),
            np_put(np.put_along_axis, i, -1.0, 1), np_put(np.put_along_axis, j, np.array([[7.0, 8, 9, 10]]), 0),
            np_put(np.put_along_axis, np.array([3, 11]), 5.0, None)]
    for g, w in zip(got, want):
        _eq(g, w)
    _eq(snp.put(x, np.array([1, 30]), 7.0, inplace=False), np_put(np.put, np.array([1]), 7.0))  # (JAX: dropped)
    with pytest.raises(ValueError, match="inplace=False"):
        snp.put(x, 0, 1.0)
    with pytest.raises(ValueError, match="inplace=False"):
        snp.put_along_axis(x, i, 1.0, 1)


def test_packbits_unpackbits_against_numpy():
    b = np.array([[1, 0, 1, 1, 0, 0, 0, 1, 1, 1], [0, 1, 0, 0, 0, 0, 0, 0, 0, 1]], np.uint8)
    p = np.packbits(b, axis=1)
    for kw in (dict(), dict(axis=1), dict(axis=0, bitorder="little")):
        _eq(snp.packbits(b, **kw), np.packbits(b, **kw))
        _eq(snp.packbits(b.astype(bool), **kw), np.packbits(b.astype(bool), **kw))
    for kw in (dict(), dict(axis=1, count=10), dict(axis=1, count=20), dict(axis=1, count=-3),
               dict(axis=0, bitorder="little")):
        _eq(snp.unpackbits(p, **kw), np.unpackbits(p, **kw))
    _eq(stagec.jit(lambda b: snp.unpackbits(snp.packbits(b, axis=1), axis=1, count=10))(b), b)
    with pytest.raises(TypeError, match="unsigned byte"):
        snp.unpackbits(b.astype(np.int32))
    with pytest.raises(TypeError, match="integer or boolean"):
        snp.packbits(b.astype(np.float32))


def test_bincount_counts_in_the_default_int(x64):
    """Counts without weights are the default integer (int64 under x64, as JAX's; they were int32), eager and
    under jit, NumPy's values."""
    x = np.array([0, 2, 2, 5, 2], np.int64)
    want = np.bincount(x)
    got = [snp.bincount(x), stagec.jit(lambda v: snp.bincount(v, length=6))(x)]
    for g in got:
        assert np.asarray(g).dtype == np.int64
        np.testing.assert_array_equal(np.asarray(g), want)
    stagec.config.update("enable_x64", False)
    try:
        assert np.asarray(snp.bincount(x.astype(np.int32))).dtype == np.int32
    finally:
        stagec.config.update("enable_x64", True)


def test_bincount_refuses_what_numpy_refuses():
    for bad, err in ((np.int32(3), ValueError), (np.ones((2, 2), np.int32), ValueError), (np.ones(3), TypeError)):
        with pytest.raises(err):
            np.bincount(bad)
        with pytest.raises(err, match="bincount"):
            snp.bincount(bad, length=4)
    with pytest.raises(ValueError, match="1-dimensional"):  # (a vmap's example is 0-d)
        stagec.vmap(lambda i: snp.bincount(i, length=5))(np.arange(3, dtype=np.int32))


def test_searchsorted_interp_and_bincount_options_as_jax():
    """searchsorted rejected JAX's `method=` and a positional `side`, raised on complex arrays (NumPy and JAX order
    them by real, then imaginary part) and gave int64 under x64 (JAX: int32); interp raised on `period=`, on
    complex `fp` (a searchsorted error) and took 'extrapolate' for a value; bincount refused booleans (JAX counts
    them) and summed boolean weights as an `or` (NumPy counts, JAX raises: stagec raises). Oracle: NumPy."""
    a = np.array([1, 1 + 1j, 2 - 1j, 2, 2 + 3j], np.complex64)
    v = np.array([1 + 0.5j, 2 - 1j, 0, 2, 3j, 5 - 5j], np.complex64)
    srt, q = np.array([1, 2, 2, 3, np.nan], np.float32), np.array([2, np.nan, 0, 9], np.float32)
    xp, fp = np.array([190, -190, 350, -350], np.float32), np.array([5, 10, 3, 4], np.float32)
    x = np.array([-180, -170, -185, 185, -10, -5, 0, 365], np.float32)
    xr, xpr = np.array([-1, 0.5, 2.5, 6], np.float32), np.array([0, 1, 3], np.float32)
    cfp = np.array([1 + 1j, 2, -1j], np.complex64)
    old = stagec.config.enable_x64
    stagec.config.update("enable_x64", True)
    try:
        got = [snp.searchsorted(a, v, side=s) for s in ("left", "right")] + [
            snp.searchsorted(srt, q, "right", method="compare_all"), snp.digitize(q, srt[:4])]
        want = [np.searchsorted(a, v, side=s) for s in ("left", "right")] + [
            np.searchsorted(srt, q, "right"), np.digitize(q, srt[:4])]
        for g, w in zip(got, want):
            assert g.dtype == np.int32  # (JAX's)
            np.testing.assert_array_equal(np.asarray(g), w)
    finally:
        stagec.config.update("enable_x64", old)
    got = stagec.jit(lambda x, xp, fp, xr, xpr, cfp: (
        snp.interp(x, xp, fp, period=360), snp.interp(xr, xpr, cfp),
        snp.interp(xr, xpr, cfp[::-1].real, left="extrapolate", right="extrapolate")))(x, xp, fp, xr, xpr, cfp)
    np.testing.assert_allclose(np.asarray(got[0]), np.interp(x, xp, fp, period=360), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got[1]), np.interp(xr, xpr, cfp), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got[2]), [-2, 1, 1.25, -0.5], rtol=1e-6)  # (the end segments continued; JAX's)
    with pytest.raises(ValueError, match="method"):
        snp.searchsorted(srt, q, method="binary")
    np.testing.assert_array_equal(np.asarray(snp.bincount(np.array([True, False, True]))), [1, 2])
    with pytest.raises(TypeError, match="boolean weights"):
        snp.bincount(np.array([0, 1, 1]), weights=np.array([True, True, False]))
