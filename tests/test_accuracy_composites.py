"""Functions of stagec.scipy.special, stagec.nn and stagec.lax built from other functions (issue 38's coverage):
within a few ulps of mpmath over their hard regions (near 1/2 for logit, the normal tails, where 1 + tanh or
1 + erf cancel, x e^x near the smallest normal, huge arguments). Before: logit 2.8e3 float32 ulps near 1/2, ndtr 180
at -13, gelu and silu 1.7e7 / 9.7e6 (JAX 0.10.2 the same), squareplus inf past 1.8e19, lax.exp2 63, betaln 5e8,
float64 ndtri 2.5e6 below 1e-302."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import lax, nn
from stagec.scipy import special

mpmath = pytest.importorskip("mpmath")
from mp_ulps import ulps as _ulps  # noqa: E402


@pytest.fixture(autouse=True)
def _mp_prec():
    """Each test sets mpmath's precision; the next file's tests get theirs back."""
    old = mpmath.mp.prec
    yield
    mpmath.mp.prec = old


def _gelu(a):
    u = mpmath.sqrt(2 / mpmath.pi) * (a + mpmath.mpf("0.044715") * a ** 3)
    return a / (1 + mpmath.exp(-2 * u))


def _squareplus(a):
    return (a + mpmath.sqrt(a * a + 4)) / 2 if a >= 0 else 2 / (mpmath.sqrt(a * a + 4) - a)


def _log_ndtr(a):
    return mpmath.log(mpmath.ncdf(a)) if a <= 0 else mpmath.log1p(-mpmath.ncdf(-a))


# name: (function, mpmath reference, points of float32 (float64: `WIDE`) as (lo, hi) ranges or arrays, ulp bound of
# float32, of float64)
def _near(c, w, n=60):
    return c + np.linspace(-w, w, n)


# IREE's CPU code contracts a product and a sum into one FMA; CUDA's (PTX mul.rn, add.rn) and lavapipe's round each
# op: a few tenths of an ulp more there (an H200, 2026-11-27: erfc(x / sqrt 2) 4.14, gelu 4.30, squareplus 3.11 (3.54 on
# lavapipe), complex128 tan 3.01 ulps). The CPU's bounds hold with FMAs only.
FMA = stagec.config.default_backend == "cpu"


CASES = {
    "logit": (special.logit, lambda a: mpmath.log(a / (1 - a)),
              [_near(0.5, 1e-3), (0.01, 0.99), _near(0.25, 1e-3), _near(0.75, 1e-3), np.geomspace(1e-30, 1e-2, 40)],
              4, 4),
    "ndtr": (special.ndtr, mpmath.ncdf, [(-13, 9), _near(-12.9, 0.1), np.geomspace(1e-30, 5, 30)], 6, 6),
    "log_ndtr": (special.log_ndtr, _log_ndtr, [(0, 15), (-30, 0)], 6, 6),
    "silu": (nn.silu, lambda a: a / (1 + mpmath.exp(-a)), [(-91.5, -85), (-30, 30)], 4, 4),
    "mish": (nn.mish, lambda a: a * mpmath.tanh(mpmath.log1p(mpmath.exp(a))), [(-91.5, -85), (-30, 30)], 4, 4),
    "gelu": (nn.gelu, _gelu, [(-2, 4)], 8, 8),
    # below -2, sigmoid(t) = e^t carries t's rounding (x^3, 0.044715, sqrt(2/pi)) times |t|: 110 ulps at t = -80
    # (float32); 1 + tanh(t / 2) cancelled to 0 (1.7e7 ulps, JAX too)
    "gelu_tail": (nn.gelu, _gelu, [(-10, -2)], 120, 120),
    "gelu_exact": (lambda x: nn.gelu(x, approximate=False), lambda a: a / 2 * mpmath.erfc(-a / mpmath.sqrt(2)),
                   [(-12, 5)], 6, 6),
    # float64 below -20, -npdf(x) times its asymptotic series: x ndtr(x) was 0 where ndtr(x) was subnormal (float32
    # keeps x ndtr(x), as JAX: 1.6e7 ulps on [-13.1, -13.05], where it flushes; the float32 points stop before)
    "gelu_exact_tail": (lambda x: nn.gelu(x, approximate=False), lambda a: a / 2 * mpmath.erfc(-a / mpmath.sqrt(2)),
                        [(-13.0, -9.5)], 4, 4),
    "squareplus": (nn.squareplus, _squareplus, [(-1e3, 1e3), np.geomspace(1e19, 3e38, 20), -np.geomspace(1e19, 3e38, 20)],
                   4, 4),
    "lax.exp2": (lax.exp2, lambda a: mpmath.power(2, a), [(-126, 127), (-1000, 1000)], 1, 2),
    "logaddexp2": (snp.logaddexp2, lambda a, b: mpmath.log(mpmath.power(2, a) + mpmath.power(2, b), 2),
                   [(20, 100), (-100, -20)], 4, 4),
}
WIDE = {"ndtr": [(-37, 9), _near(-37, 0.3)], "gelu_exact_tail": [(-38.4, -19), _near(-37.8, 0.3)], "log_ndtr": [(0, 38), (-40, 0)], "silu": [(-30, 30), (-720, -700)],
        "mish": [(-30, 30), (-720, -700)], "squareplus": [(-1e3, 1e3), -np.geomspace(1e160, 1e300, 20)]}


def _points(name, dt):
    rng = np.random.default_rng(len(name))
    ranges = WIDE.get(name, CASES[name][2]) if dt == np.float64 else CASES[name][2]
    parts = [rng.uniform(*r, 120) if isinstance(r, tuple) else r for r in ranges]
    if name == "lax.exp2" and dt == np.float32:
        parts = parts[:1]
    x = np.concatenate(parts).astype(dt)
    if name == "logaddexp2":  # (pairs: x and a y within 30 of it, both signs of the result)
        return x, (x + rng.uniform(-30, 30, x.size)).astype(dt)
    return (x,)


@functools.cache
def _results(dtname):
    """Every case of `dtname` in one jitted module (one compile)."""
    dt = np.dtype(dtname).type
    names = list(CASES)
    args = [_points(n, dt) for n in names]
    fns = [CASES[n][0] for n in names]

    def every(*groups):
        return [f(*g) for f, g in zip(fns, groups)]
    with _X64(dt):
        outs = stagec.jit(every)(*args)
    return names, args, [np.asarray(o) for o in outs]


class _X64:
    def __init__(self, dt):
        self.on = dt == np.float64

    def __enter__(self):
        self.old = stagec.config.enable_x64
        stagec.config.update("enable_x64", self.on or self.old)

    def __exit__(self, *exc):
        stagec.config.update("enable_x64", self.old)


@pytest.mark.parametrize("dtname", ["float32", "float64"])
@pytest.mark.parametrize("name", list(CASES))
def test_composite_bounds(name, dtname):
    dt = np.dtype(dtname).type
    mpmath.mp.prec = 120
    names, args, outs = _results(dtname)
    i = names.index(name)
    fn, ref, _, b32, b64 = CASES[name]
    got = outs[i]
    assert got.dtype == dt, (name, got.dtype)
    want = [ref(*(mpmath.mpf(float(a[j])) for a in args[i])) for j in range(len(got))]
    err = _ulps(got, want, dt)
    j = int(np.argmax(err))
    bound = b32 if dt == np.float32 else b64
    assert err[j] <= bound, f"{dtname} {name}({', '.join(repr(a[j]) for a in args[i])}) = {got[j]!r}, " \
        f"not {float(want[j])!r}: {err[j]:.1f} ulps"


def test_float64_ndtri_deep_tail(x64):
    """ndtri below q = 1e-302, where Halley's correction ndtr(x) - q was subnormal (read as 0: Acklam's 1e-9 left,
    2.5e6 ulps), and near the central approximation's edge (5.5 ulps: its correction in erf's absolute error)."""
    p = np.concatenate([np.geomspace(1e-307, 1e-290, 40), np.linspace(0.0243, 0.03, 40), np.linspace(0.1, 0.3, 20)])
    got = np.asarray(stagec.jit(special.ndtri)(p))

    def want(q):
        x = mpmath.mpf(-math.sqrt(-2 * math.log(q)))  # (a start; the root of log(ncdf(t) / q))
        x = mpmath.findroot(lambda t: mpmath.log(mpmath.ncdf(t) / mpmath.mpf(float(q))), x)
        return x
    mpmath.mp.prec = 120
    err = _ulps(got, [want(q) for q in p], np.float64)
    j = int(np.argmax(err))
    assert err[j] <= 4, f"ndtri({p[j]!r}) = {got[j]!r}: {err[j]:.1f} ulps"


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_ndtri_of_subnormal_probabilities(dt, request):
    """ndtri of a subnormal q: ndtr(x) / q - 1 in Halley's step had q's few digits (float32 q = 1e-40: 3e4 ulps, and
    NaN at 1e-45, its e^(x^2/2) overflowing; float64 5e-324: 2e12 ulps). Eager: a jitted module flushes subnormal
    operands to zero, as JAX's on the CPU (docs/design.md), and answers -inf. Default dtype and x64."""
    if dt == np.float64:
        request.getfixturevalue("x64")
    tiny = np.finfo(dt).tiny
    p = np.concatenate([np.geomspace(np.finfo(dt).smallest_subnormal, tiny, 12), [tiny * 1.5, 1e-30]]).astype(dt)
    got = np.asarray(special.ndtri(p))
    assert got.dtype == dt
    np.testing.assert_array_equal(np.asarray(stagec.jit(special.ndtri)(p))[-2:], got[-2:])

    def want(q):
        x = mpmath.mpf(-math.sqrt(-2 * math.log(q)))
        return mpmath.findroot(lambda t: mpmath.log(mpmath.ncdf(t) / mpmath.mpf(float(q))), x)
    mpmath.mp.prec = 120
    err = _ulps(got, [want(q) for q in p], dt)
    j = int(np.argmax(err))
    assert err[j] <= 4, f"{dt.__name__} ndtri({p[j]!r}) = {got[j]!r}: {err[j]:.1f} ulps"


def test_betaln_large_and_near_its_zero():
    """betaln past b = 8 by cdflib's algdiv (gammaln(a) + gammaln(b) - gammaln(a + b) lost 5e8 ulps at a = 1e-9,
    b = 1e9), and near (1, 1) with a + b's rounding kept (5e-8 absolute, 1e4 ulps of betaln(1, 1 + 3e-5))."""
    rng = np.random.default_rng(5)
    a = np.concatenate([np.exp(rng.uniform(-20, 20, 200)), 1 + rng.uniform(-1e-3, 1e-3, 100)]).astype(np.float32)
    b = np.concatenate([np.exp(rng.uniform(2.1, 20, 200)), 1 + rng.uniform(-1e-3, 1e-3, 100)]).astype(np.float32)
    got = np.asarray(stagec.jit(special.betaln)(a, b)).astype(np.float64)
    mpmath.mp.prec = 120
    want = np.array([float(mpmath.log(mpmath.beta(mpmath.mpf(float(x)), mpmath.mpf(float(y))))) for x, y in zip(a, b)])
    rel = np.abs(got - want) / np.maximum(np.abs(want), 1e-30)
    far = np.abs(want) > 1e-2
    assert rel[far].max() <= 2e-6, (a[far][np.argmax(rel[far])], b[far][np.argmax(rel[far])], rel[far].max())
    # near (1, 1) betaln is small: its absolute error, within that of the three gammalns at 1 and 2 (3e-8 before: 5e-8)
    assert np.abs(got - want)[~far].max() <= 1e-9 + 4e-7 * np.abs(want)[~far].max()


@pytest.mark.parametrize("backend", ["cpu", "vulkan"])
def test_betaln_float32_near_its_zeros(backend):
    """float32 betaln in ulps (mpmath) where its three gammalns cancel: near (1, 1) (540 ulps at (0.99987, 1.00013):
    each gammaln rounded to float32), on (0.1, 1) x (1, 8) (120 at (0.39, 7.33); JAX 0.10.2 89), past 8 in both
    arguments (25 at (1.25e12, 1.67e12): cdflib's algdiv there, JAX 9.3), tiny a with huge b (gammaln(a) + algdiv(a, b)
    cancel: 70 at (0.1012, 5.2e9), JAX 58); bfloat16 (111 bfloat16 ulps at (0.39, 7.31))."""
    if backend == "vulkan":
        from stagec.compiler.targets import device_names
        if not device_names("vulkan"):
            pytest.skip("no Vulkan device: apt-get install mesa-vulkan-drivers")
    import ml_dtypes
    rng = np.random.default_rng(38)
    d = rng.uniform(-2e-4, 2e-4, 200)
    a = np.concatenate([1 + d, rng.uniform(0.1, 1, 300), np.exp(rng.uniform(2.1, 28, 100)), rng.uniform(0.05, 0.2, 100),
                        [0.10119885, 0.9998723, 1.0]])
    b = np.concatenate([1 - d + rng.uniform(-2e-6, 2e-6, 200), rng.uniform(1, 8, 300), np.exp(rng.uniform(2.1, 28, 100)),
                        np.exp(rng.uniform(9, 28, 100)), [5157737984.0, 1.0001279, 1.0]])
    a, b = a.astype(np.float32), b.astype(np.float32)
    mpmath.mp.prec = 120
    cases = ((np.float32, 3), (ml_dtypes.bfloat16, 0.51))
    gots = stagec.jit(lambda xy: [special.betaln(*v) for v in xy], backend=backend)(  # (one module for both dtypes)
        [(a.astype(dt), b.astype(dt)) for dt, _ in cases])
    for (dt, bound), got in zip(cases, gots):
        x, y = a.astype(dt), b.astype(dt)
        got = np.asarray(got)
        assert got.dtype == dt
        want = [mpmath.log(mpmath.beta(mpmath.mpf(float(u)), mpmath.mpf(float(v)))) for u, v in zip(x, y)]
        if dt == np.float32:
            err = _ulps(got, want, dt)
        else:  # (bfloat16: 8 significant bits)
            w = np.array([float(v) for v in want])
            ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(w), 2.0 ** -126))) - 7)
            err = np.where(got.astype(np.float64) == w, 0, np.abs(got.astype(np.float64) - w) / ulp)
        j = int(np.argmax(err))
        assert err[j] <= bound, f"{dt.__name__} betaln({x[j]!r}, {y[j]!r}) = {got[j]!r}: {err[j]:.1f} ulps"
        assert got[-1] == 0  # (betaln(1, 1))


def test_narrow_dtypes_stay_narrow():
    """ndtr of float16 was float32 (np.sqrt(2) is a NumPy float64: not weak); each keeps its dtype."""
    import ml_dtypes
    # (one module for the test: both dtypes' functions, float16's log_ndtr tail and mish near 5)
    dts = (np.float16, ml_dtypes.bfloat16)
    tail, near5 = np.linspace(-30, 8, 400).astype(np.float16), np.linspace(4.5, 5.5, 21).astype(np.float16)
    every, tail_got, near5_got = stagec.jit(lambda xs, t, m: (
        [[special.ndtr(x), special.log_ndtr(x), special.logit(x * 0.1 + 0.5), nn.gelu(x, approximate=False),
          nn.silu(x), nn.mish(x), nn.squareplus(x), snp.logaddexp2(x, x), lax.exp2(x)] for x in xs],
        special.log_ndtr(t), nn.mish(m)))([np.linspace(-3, 3, 7).astype(dt) for dt in dts], tail, near5)
    for dt, outs in zip(dts, every):
        for k, o in enumerate(outs):
            assert np.asarray(o).dtype == dt, (dt, k, np.asarray(o).dtype)

    # float16 log_ndtr in float32 (from float16's own ndtr: 43 ulps in its tail)
    x = tail
    got = np.asarray(tail_got)
    mpmath.mp.prec = 80
    err = _ulps(got, [_log_ndtr(mpmath.mpf(float(v))) for v in x], np.float16)
    assert err.max() <= 1, (x[np.argmax(err)], err.max())
    # float16 mish near 5: x n overflowed before the division by n + 2 (inf)
    x = near5
    got = np.asarray(near5_got).astype(np.float64)
    want = x * np.tanh(np.log1p(np.exp(x.astype(np.float64))))
    assert (np.abs(got - want) <= 2 * np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)).all(), got


def test_float64_betaln_past_8(x64):
    """cdflib's algdiv with x = 1 / (1 + a/b) (JAX 0.10.2's port has h / (1 + h): 2.5e-7 relative error, 1.9e9 ulps,
    at a = 0.29, b = 10.9)."""
    rng = np.random.default_rng(8)
    a, b = rng.uniform(0.05, 8, 200), rng.uniform(8, 40, 200)
    got = np.asarray(stagec.jit(special.betaln)(a, b))
    mpmath.mp.prec = 120
    want = np.array([float(mpmath.log(mpmath.beta(mpmath.mpf(x), mpmath.mpf(y)))) for x, y in zip(a, b)])
    rel = np.abs(got - want) / np.abs(want)
    far = np.abs(want) > 0.05  # (below, gammaln(a) + algdiv cancel)
    assert rel[far].max() <= 1e-13, (a[far][np.argmax(rel[far])], b[far][np.argmax(rel[far])], rel[far].max())


def test_squareplus_paths_and_ndtr_edges():
    """squareplus with a constant b (a + sqrt(a^2 + b/4), a = |x|/2; |x| past 2^61; float16 through float32: 2.6
    float16 ulps before, from float16 hypot) and with any other b (hypot: an array, b past 2^94); ndtr's clamp at
    +-16 (inf, NaN, huge arguments: its 2^-8 split adds and subtracts 1.5 2^24)."""
    mpmath.mp.prec = 120
    x = np.concatenate([np.linspace(-300, 300, 601), [0.0, -0.0, 2.0 ** 61, -2.0 ** 61, 3e38, -3e38, 1e-40, -1e-40]])

    def want(a, b):
        a, b = mpmath.mpf(float(a)), mpmath.mpf(float(b))
        return (a + mpmath.sqrt(a * a + b)) / 2 if a >= 0 else b / 2 / (mpmath.sqrt(a * a + b) - a)
    cases = ((np.float32, 4, 3), (np.float32, 0.3, 3), (np.float16, 4, 0.5), (np.float32, 1e30, 4))
    xss = [x.astype(dt)[np.isfinite(x.astype(dt))] for dt, _, _ in cases]
    bs = np.full(x.size, 4, np.float32)  # (an array b: hypot's path)
    special_x = np.array([np.inf, -np.inf, np.nan], np.float32)
    e = np.array([-np.inf, -1e38, -1e30, -16, -15.99, -8, 0, 8, 16, 1e30, np.inf, np.nan], np.float32)
    # (one module for the test: each constant b's squareplus its own, the array b's, the default's and ndtr)
    consts, arr, default, nd = stagec.jit(lambda xss, x, bs, s, e: (
        [nn.squareplus(v, b) for v, (_, b, _) in zip(xss, cases)], nn.squareplus(x, bs), nn.squareplus(s),
        special.ndtr(e)))(xss, x.astype(np.float32), bs, special_x, e)
    for (dt, b, bound), xs, got in zip(cases, xss, consts):
        got = np.asarray(got)
        err = _ulps(got, [want(a, dt(b)) for a in xs], dt)
        assert got.dtype == dt and err.max() <= bound, (dt, b, xs[np.argmax(err)], err.max())
    got = np.asarray(arr)
    assert _ulps(got, [want(a, 4) for a in x.astype(np.float32)], np.float32).max() <= 4
    got = np.asarray(default)
    assert got[0] == np.inf and got[1] == 0 and np.isnan(got[2]), got

    got = np.asarray(nd)
    ref = np.array([float(mpmath.ncdf(mpmath.mpf(float(v)))) for v in e[:-1]], np.float32)
    assert np.isnan(got[-1]) and np.allclose(got[:-1], ref, rtol=2e-7, atol=0), got


def test_squareplus_of_negative_and_infinite_b():
    """b < 0: (x + sqrt(x^2 + b)) / 2 where x^2 >= -b, NaN where not (hypot(x, sqrt(b)) gave NaN everywhere); b = inf:
    inf (b/4 / y was inf / inf, NaN, below 0). Eager (the default) and jitted, against mpmath."""
    mpmath.mp.prec = 120
    x = np.concatenate([np.linspace(-50, 50, 201), [1e20, -1e20, 3e38, -3e38]]).astype(np.float32)

    def want(a, b):
        a, b = mpmath.mpf(float(a)), mpmath.mpf(float(b))
        if a * a + b < 0:
            return mpmath.nan
        return (a + mpmath.sqrt(a * a + b)) / 2 if a >= 0 else b / 2 / (mpmath.sqrt(a * a + b) - a)
    for b in (-1.0, -2.5, -1e30):
        ref = [want(a, np.float32(b)) for a in x]
        nan = np.array([mpmath.isnan(r) for r in ref])
        for got in (np.asarray(nn.squareplus(x, b)), np.asarray(stagec.jit(nn.squareplus)(x, np.float32(b)))):
            np.testing.assert_array_equal(np.isnan(got), nan)
            assert (~nan).sum() >= 4 and _ulps(got[~nan], [r for r, n in zip(ref, nan) if not n]).max() <= 4, b
    np.testing.assert_array_equal(np.asarray(nn.squareplus(x, np.inf)), np.full(x.size, np.inf, np.float32))


def test_float32_squareplus_quotient_and_derivative():
    """float32 squareplus below 0 is c / y, c = b / 4, y = |x| / 2 + sqrt(x^2 / 4 + c): within 3 ulps of mpmath over
    every binade of x (|x| up to 3.4e38, where x^2 / 4 overflows; b = 1e-37, c near the subnormals), and its derivative
    (1 + x / sqrt(x^2 + b)) / 2 within 1e-6 relative of float64 NumPy's where that is above 1e-30."""
    mpmath.mp.prec = 120
    rng = np.random.default_rng(12)
    x = -np.concatenate([np.geomspace(1e-3, 3.4e38, 3000), rng.uniform(0, 50, 1000)]).astype(np.float32)
    xs = x[np.abs(x) < 1e12]  # (past 5e12 the derivative is half its value, on main as well: not the quotient's)
    bases = (4, 0.3, 1e-37)
    # (one module for the test: each b's squareplus and derivative)
    outs = stagec.jit(lambda x, xs: [(nn.squareplus(x, b), stagec.vmap(stagec.grad(lambda v: nn.squareplus(v, b)))(xs))
                                     for b in bases])(x, xs)
    for b, (got, g) in zip(bases, outs):
        got, g = np.asarray(got), np.asarray(g)
        want = [mpmath.mpf(b) / 2 / (mpmath.sqrt(mpmath.mpf(float(a)) ** 2 + b) - mpmath.mpf(float(a))) for a in x]
        err = _ulps(got, want, np.float32)
        j = int(np.argmax(err))
        assert err[j] <= (3 if FMA else 3.6), f"squareplus({x[j]!r}, {b}) = {got[j]!r}, not {float(want[j])!r}: " \
            f"{err[j]:.2f} ulps"
        x64 = xs.astype(np.float64)
        gw = 0.5 * b / (np.sqrt(x64 * x64 + b) * (np.sqrt(x64 * x64 + b) - x64))  # (1 + x / s) / 2 without cancelling
        rel = np.where(gw > 1e-30, np.abs(g - gw) / gw, 0)
        j = int(np.argmax(rel))
        assert rel[j] <= 1e-6, f"squareplus'({xs[j]!r}, {b}) = {g[j]!r}, not {gw[j]!r}"


def test_exact_gelu_at_infinities_and_in_bfloat16():
    """gelu(-inf) is 0 (x ndtr(x) was -inf * 0 = NaN), gelu(inf) inf, NaN stays NaN; bfloat16's tail in float32
    through -npdf(x) (1 + series): within half an ulp where x ndtr(x) flushed ndtr's subnormal (216 ulps, JAX 192)."""
    import ml_dtypes
    x = np.linspace(-13.2, -9, 300).astype(ml_dtypes.bfloat16)
    at_inf, of_x = stagec.jit(lambda *a: [nn.gelu(v, approximate=False) for v in a])(
        np.array([-np.inf, np.inf, np.nan], np.float32), x)  # (one module: both arguments' gelu)
    got = np.asarray(at_inf)
    assert got[0] == 0 and got[1] == np.inf and np.isnan(got[2])
    mpmath.mp.prec = 80
    want = np.array([float(a / 2 * mpmath.erfc(-a / mpmath.sqrt(2))) for a in map(mpmath.mpf, x.astype(np.float64))])
    got = np.asarray(of_x).astype(np.float64)
    spacing = 2.0 ** (np.floor(np.log2(np.abs(want))) - 7)  # (bfloat16: 8 significant bits)
    err = np.where((np.abs(want) < 1.18e-38) & (np.abs(got) < 1.18e-38), 0, np.abs(got - want) / spacing)
    j = int(np.argmax(err))
    assert err[j] <= 1, f"gelu({x[j]}) = {got[j]!r}, not {want[j]!r}: {err[j]:.1f} ulps"


def test_betaln_rewrites_keep_look_alike_expressions():
    """`mathlib` recognises betaln's two float32 sums by their shape; an expression of the same shape with another
    term (a user's gammaln(a) + (gammaln(b) - (gammaln(a + b) + y))) or another bound (min(a, 1) for betaln's 8)
    keeps its own value (the rewrites dropped y, and took lgamma(a) for lgamma(min(a, 1))). Against SciPy float64."""
    sp = pytest.importorskip("scipy.special")
    a, b = np.array([0.5, 1.5, 3.0], np.float32), np.array([2.0, 2.5, 4.0], np.float32)
    y = np.array([10.0, 100.0, -7.0], np.float32)
    a2, b2 = np.array([0.5, 3.0, 5.0], np.float32), np.array([10.0, 20.0, 100.0], np.float32)
    got, got2 = (np.asarray(r) for r in stagec.jit(lambda a, b, y, a2, b2: (  # (one module: the two expressions)
        special.gammaln(a) + (special.gammaln(b) - (special.gammaln(a + b) + y)),
        special.gammaln(snp.minimum(a2, 1.0)) + special._algdiv(a2, snp.maximum(b2, 8.0))))(a, b, y, a2, b2))
    want = sp.gammaln(a.astype(np.float64)) + (sp.gammaln(b.astype(np.float64)) - (sp.gammaln((a + b).astype(
        np.float64)) + y))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)
    a, b, got = a2, b2, got2
    ad, bd = a.astype(np.float64), b.astype(np.float64)  # algdiv(a, b) = lgamma(b) - lgamma(a + b)
    np.testing.assert_allclose(got, sp.gammaln(np.minimum(ad, 1)) + sp.gammaln(bd) - sp.gammaln(ad + bd), rtol=2e-6)


def test_eager_betaln_is_the_jitted_one():
    """Eager betaln runs as one module (`_staged`): op by op its float32 sums were not rewritten (540 ulps at
    (0.99987, 1.00013), 70 at (0.1012, 5.2e9)). Against mpmath."""
    mpmath.mp.prec = 120
    # (5 values, the first again: the module of 5 that tests/test_accuracy_special_more.py's eager betaln runs)
    a = np.array([0.9998723, 0.39, 0.10119885, 2.5, 0.9998723], np.float32)
    b = np.array([1.0001279, 7.33, 5157737984.0, 3.5, 1.0001279], np.float32)
    got = np.asarray(special.betaln(a, b))
    want = [mpmath.log(mpmath.beta(mpmath.mpf(float(u)), mpmath.mpf(float(v)))) for u, v in zip(a, b)]
    err = _ulps(got, want)
    assert err.max() <= 4, (err, got)


def _stablehlo_ops(text):
    import re
    return sorted(set(re.findall(r"\b(?:stablehlo|chlo)\.[a-z_]+", text)) - {"stablehlo.constant"})


def test_float32_ndtr_and_exact_gelu_are_erfc_of_x_over_sqrt2():
    """float32 ndtr and exact gelu are written as JAX's: erfc(x * f32(-1/sqrt 2)) / 2 (times max(x, -16)), and `mathlib`
    computes that erfc from x itself (e^(-x^2 / 2) from an exact square): fewer operations per element (80, 91 with
    the rounded z = -x / sqrt 2 and its error dz carried: floor, division, selects at the StableHLO stage), half the time.
    Any erfc(v * f32(+-1/sqrt 2)) is read so: its product's rounding was 180 ulps at v = -13; also where `fuse` would
    take the product into a generic (it reads a reshape)."""
    x = np.zeros(64, np.float32)
    gelu = lambda v: nn.gelu(v, approximate=False)  # noqa: E731
    for f, want in ((gelu, ["chlo.erfc", "stablehlo.maximum", "stablehlo.multiply"]),
                    (special.ndtr, ["chlo.erfc", "stablehlo.multiply"])):
        lowered = stagec.jit(f).lower(x)
        assert _stablehlo_ops(lowered.as_text()) == want
        final = lowered.as_text("final")
        assert "chlo.erfc" not in final and final.count(" = stablehlo.") - final.count("stablehlo.constant") <= 80

    c = np.float32(math.sqrt(0.5))
    v = np.concatenate([np.linspace(-12.9, 9, 2001), np.linspace(-13, -12, 100)]).astype(np.float32)
    u = (v - np.float32(0.5)).reshape(-1, 1)
    v = (u + np.float32(0.5)).reshape(-1)  # (the third case's v: its add and product were one generic without the guard)
    fns = (lambda a: special.erfc(a * -c), lambda a: special.erfc(c * a),
           lambda a: special.erfc((a.reshape(-1) + 0.5) * -c))
    mpmath.mp.prec = 80
    refs = {s: [mpmath.erfc(s * mpmath.mpf(float(a)) / mpmath.sqrt(2)) for a in v] for s in (-1, 1)}
    gots = stagec.jit(lambda v, u: [f(u if k == 2 else v) for k, f in enumerate(fns)])(v, u)  # (one module)
    for k, (got, s) in enumerate(zip(gots, (-1, 1, -1))):
        got = np.asarray(got)
        err = _ulps(got, refs[s], np.float32)
        j = int(np.argmax(err))
        assert err[j] <= (4 if FMA else 4.5), f"case {k}: erfc({s} * {v[j]!r} / sqrt 2) = {got[j]!r}: {err[j]:.1f} ulps"


def test_float32_ndtr_and_exact_gelu_eager_as_jit():
    """Eager ndtr and exact gelu run as one module (`_staged`: op by op, the erfc would read the rounded product): the
    jit's bits, within 4 (ndtr) and 5 (gelu) ulps of mpmath on [-12.9, 6]."""
    x = np.linspace(-12.9, 6, 1500).astype(np.float32)
    mpmath.mp.prec = 80

    def _gelu_exact(v):  # (named as the eager call's module, `jit__gelu_exact`: jit's module is that one, one compile)
        return nn.gelu(v, approximate=False)
    gelu = _gelu_exact
    for f, ref, bound in ((special.ndtr, mpmath.ncdf, 4), (gelu, lambda a: a * mpmath.ncdf(a), 5)):
        got = np.asarray(f(stagec.device_put(x)))
        np.testing.assert_array_equal(got, np.asarray(stagec.jit(f)(x)))
        err = _ulps(got, [ref(mpmath.mpf(float(a))) for a in x], np.float32)
        assert err.max() <= bound, (x[np.argmax(err)], err.max())


def test_float32_exact_gelu_where_ndtr_underflows():
    """float32 gelu(x) = erfc(x * f32(-1/sqrt 2)) (max(x, -16) / 2): `mathlib` takes the factor in before erfc's 2^k
    scale where erfc(x) is subnormal, flushed to 0 (x in [-13.2, -12.95]: x ndtr(x) was 0 there, 1.6e7 ulps, JAX
    alike); also in the general erfc(v) w (not gelu's w; w computed)."""
    x = np.concatenate([np.linspace(-13.25, -12.9, 701), np.linspace(-12, 0, 50)]).astype(np.float32)
    mpmath.mp.prec = 80
    want = [a * mpmath.ncdf(a) for a in map(mpmath.mpf, x.astype(np.float64))]
    f = stagec.jit(lambda v: nn.gelu(v, approximate=False))
    got = np.asarray(f(x))
    err = _ulps(got, want, np.float32)
    j = int(np.argmax(err))
    assert err[j] <= (4 if FMA else 4.5), f"gelu({x[j]!r}) = {got[j]!r}, not {float(want[j])!r}: {err[j]:.1f} ulps"
    assert np.abs(got[x < -13.19]).max() < 1.2e-38  # (results subnormal: flushed)
    # erfc(v) w with another w, |w| from 1e-30 to 1e30
    v = np.linspace(8.5, 10, 401).astype(np.float32)  # (past 10.1 erfc rounds to 0: so does the product)
    w = np.geomspace(1e-30, 1e30, 401).astype(np.float32)
    for k, g in enumerate((lambda v, w: special.erfc(v) * w,
                           lambda v, w: special.erfc(v) * (w.reshape(-1) * -2))):
        got = np.asarray(stagec.jit(g)(v, w if k == 0 else w.reshape(-1, 1)))
        want = [mpmath.erfc(mpmath.mpf(float(a))) * float(b) * (1 if k == 0 else -2) for a, b in zip(v, w)]
        err = _ulps(got, want, np.float32)
        j = int(np.argmax(err))
        assert err[j] <= 5, f"case {k}: erfc({v[j]!r}) w({w[j]!r}) = {got[j]!r}: {err[j]:.1f} ulps"  # (erfc's 4, w's 1/2)


def test_float32_logit_one_division():
    """float32 logit: one division in its kernel (Kahan's log1p on [1/4, 3/4] took three, a CPU's dearest ops: 0.70
    ms on 1M float32 on one thread, 0.58 now) and within 1.5 ulps of float64 NumPy over [1/4, 3/4] and its edges
    (Kahan's: 2.8 near 1/2)."""
    rng = np.random.default_rng(38)
    x = np.concatenate([rng.uniform(0.2, 0.8, 1 << 18), rng.uniform(0, 1, 1 << 16), _near(0.5, 2e-4, 4000),
                        _near(0.25, 1e-5, 200), _near(0.75, 1e-5, 200), np.geomspace(2.0 ** -126, 1e-3, 400),
                        1 - np.geomspace(2.0 ** -24, 1e-3, 400)]).astype(np.float32)
    assert stagec.jit(special.logit).lower(x).as_text("final").count("stablehlo.divide") == 1
    edge = np.array([0, -0.0, 1, 0.5, -1e-30, -1, 1.5, np.inf, -np.inf, np.nan], np.float32)
    got, at_edge = stagec.jit(lambda x, e: (special.logit(x), special.logit(e)))(x, edge)  # (one module)
    got = np.asarray(got).astype(np.float64)
    xd = x.astype(np.float64)
    want = np.log(xd) - np.log1p(-xd)  # (a float64 difference: 1e-9 float32 ulps off near 1/2)
    err = np.abs(got - want) / np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    err[want == 0] = np.abs(got[want == 0])
    j = int(np.argmax(err))
    assert err[j] <= 1.5, f"logit({x[j]!r}) = {got[j]!r}, not {want[j]!r}: {err[j]:.2f} ulps"
    np.testing.assert_array_equal(np.asarray(at_edge),
                                  [-np.inf, -np.inf, np.inf, 0, *[np.nan] * 6])
