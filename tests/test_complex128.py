"""complex128 functions on the CPU (issue 38) against mpmath, at a precision that covers the parts' exponents (mpmath's
own asin loses a part of 1e-107 at 40 digits), and C99 Annex G's special values (NumPy's complex128 functions follow
them). IREE 3.13's asin, acos, atan, asinh, acosh, atanh were log/sqrt formulas in float64: 8e15 ulps at tiny parts
and 4-15 special values in the wrong class."""
import math

import numpy as np
import pytest

import stagec

mpmath = pytest.importorskip("mpmath")
INF, NAN = math.inf, math.nan
INVERSE = ("arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh")


def _exact(fn, z):
    """fn(z) by mpmath at 40 digits plus twice the decimal exponent of z's farthest part from 1."""
    out = []
    for v in z:
        c = complex(v)
        e = max([abs(math.log10(abs(p))) for p in (c.real, c.imag) if p] or [0])
        with mpmath.workdps(int(40 + 2 * e)):
            out.append(complex(fn(mpmath.mpc(c))))
    return np.array(out)


def _ulps(got, want):
    """|got - want| in ulps of |want| (where |want| is normal: the CPU flushes subnormal results to 0)."""
    a = np.abs(want)
    ok = np.isfinite(want) & (a > 1e-290)
    with np.errstate(all="ignore"):
        return np.where(ok, np.abs(np.asarray(got) - want) / np.spacing(np.where(ok, a, 1)), 0)


def _classes(v):
    v = np.asarray(v).astype(np.complex128)
    return np.stack([np.isnan(v.real), np.isposinf(v.real), np.isneginf(v.real),
                     np.isnan(v.imag), np.isposinf(v.imag), np.isneginf(v.imag)])


def _sample():
    rng = np.random.default_rng(38)
    n = 60
    sign = lambda: rng.choice([-1.0, 1.0], n)  # noqa: E731
    mag = lambda lo, hi: 10.0 ** rng.uniform(lo, hi, n)  # noqa: E731
    z = np.concatenate([
        rng.uniform(-3, 3, n) + 1j * rng.uniform(-3, 3, n),
        mag(-300, -100) * np.exp(1j * rng.uniform(-np.pi, np.pi, n)),  # tiny: f(z) ~ z
        mag(100, 307) * np.exp(1j * rng.uniform(-np.pi, np.pi, n)),  # huge: past the squares' range
        sign() * mag(-300, 300) + 1j * rng.uniform(-3, 3, n),  # one part huge or tiny, the other moderate
        rng.uniform(-3, 3, n) + 1j * sign() * mag(-300, 300),
        sign() * rng.uniform(1, 5, n) + 1j * sign() * mag(-300, -20),  # beside the cuts (-inf, -1], [1, inf)
        sign() * mag(-300, -20) + 1j * sign() * rng.uniform(1, 5, n),  # beside the cuts on the imaginary axis
        sign() * (1 + sign() * mag(-16, -1)) + 1j * sign() * mag(-300, -1),  # near the branch points +-1
        sign() * mag(-300, -1) + 1j * sign() * (1 + sign() * mag(-16, -1)),  # near +-i
        np.exp(1j * rng.uniform(-np.pi, np.pi, n)),  # |z| = 1
        [1 + 1e-300j, -1 - 1e-200j, 1e-300 + 1j, 1e-300 - 1j, 0.5 + 1e-300j, 2 + 1e-300j, 1e200 + 1e100j,
         3e307 - 1e307j, 1e-300 + 1e300j, 1 + 0j, 1j]])
    tiny = np.finfo(np.float64).tiny  # (subnormal parts: IREE's CPU code reads them as 0)
    return z[~(((np.abs(z.real) < tiny) & (z.real != 0)) | ((np.abs(z.imag) < tiny) & (z.imag != 0)))]


def _specials():
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e300, -1e300, INF, -INF, NAN]
    return np.array([complex(a, b) for a in vals for b in vals])


def test_complex128_inverse_functions(x64):
    import stagec.numpy as snp
    z, sp = _sample(), _specials()
    got = stagec.jit(lambda z, s: {k: (getattr(snp, k)(z), getattr(snp, k)(s)) for k in INVERSE})(z, sp)
    for k in INVERSE:
        g, gs = (np.asarray(v) for v in got[k])
        want = _exact(getattr(mpmath, "a" + k[3:]), z)
        err = _ulps(g, want)
        assert err.max() <= 3, (k, z[np.argmax(err)], g[np.argmax(err)], want[np.argmax(err)], err.max())
        with np.errstate(all="ignore"):
            want_sp = getattr(np, k)(sp)
        bad = (_classes(gs) != _classes(want_sp)).any(0)
        assert not bad.any(), (k, list(zip(sp[bad], gs[bad], want_sp[bad]))[:6])
        # on the cuts, the side is the sign of the zero part (C99): NumPy's values, finite ones to 3 ulps
        fin = np.isfinite(want_sp) & (np.abs(want_sp) < 1e300)
        assert _ulps(gs[fin], want_sp[fin]).max() <= 3, (k, sp[fin][np.argmax(_ulps(gs[fin], want_sp[fin]))])
        assert (np.signbit(gs[fin].real) == np.signbit(want_sp[fin].real)).all(), k
        assert (np.signbit(gs[fin].imag) == np.signbit(want_sp[fin].imag)).all(), k


def test_complex128_power(x64):
    # IREE's: exp(y log x) for every exponent (9-80 ulps for integer ones, 416 for (1e-135j)**2), 0**(1+1j) NaN + NaN i
    rng = np.random.default_rng(39)
    n = 150
    x = np.concatenate([10.0 ** rng.uniform(-3, 3, n) * np.exp(1j * rng.uniform(-np.pi, np.pi, n)),
                        10.0 ** rng.uniform(-150, 150, n) * np.exp(1j * rng.uniform(-np.pi, np.pi, n))])
    y = np.concatenate([rng.choice([2.0, 3.0, -1.0, -2.0, 7.0, -16.0], n), np.full(n, 2.0)]) + 0j
    xs = 10.0 ** rng.uniform(-300, 300, n) * np.exp(1j * rng.uniform(-np.pi, np.pi, n))
    ys = np.concatenate([rng.uniform(-1, 1, n // 2) + 0j, rng.uniform(-1, 1, n - n // 2) * (1 + 1j)])
    xs[: n // 3] = 10.0 ** rng.uniform(-3, 3, n // 3) * np.exp(1j * rng.uniform(-np.pi, np.pi, n // 3))
    ys[: n // 3] = rng.uniform(-6, 6, n // 3) + 1j * rng.uniform(-6, 6, n // 3)
    vals = [0.0, -0.0, 1.0, -2.5, 1e300, INF, -INF, NAN]
    sp = np.array([complex(a, b) for a in vals for b in vals])
    sx, sy = np.repeat(sp, len(sp)), np.tile(sp, len(sp))
    # (the three sets in one power op: one expansion to compile, not three in one dispatch)
    args = np.concatenate([x, xs, sx]), np.concatenate([y, ys, sy])
    if stagec.config.default_backend == "vulkan":  # (IREE lowers it to a select of complex values, SPIR-V has none)
        with pytest.raises(NotImplementedError, match="Vulkan has no complex128 power"):
            stagec.jit(lambda a, b: a ** b)(*args)
        return
    got = np.asarray(stagec.jit(lambda a, b: a ** b)(*args))
    g, gs, gsp = np.split(got, [len(x), len(x) + len(xs)])
    with mpmath.workdps(60):
        want = np.array([complex(mpmath.mpc(complex(p)) ** int(q.real)) for p, q in zip(x, y)])
        want_s = np.array([complex(mpmath.mpc(complex(p)) ** mpmath.mpc(complex(q))) for p, q in zip(xs, ys)])
    e = _ulps(g, want)  # integer exponents: NumPy's products (binary powering: NumPy's x**-16 is 6.3 ulps off here)
    assert e[np.abs(y) <= 3].max() <= 1.5 and e.max() <= 8
    # y log x in double-double arithmetic: what is left is arg x's rounding times |y| (here 4.5 ulps; NumPy's and
    # glibc's cexp(y clog x) were 490 ulps off on these points)
    assert _ulps(gs, want_s).max() <= 6
    with np.errstate(all="ignore"):
        want_sp = sx ** sy
    # an infinite result's signs are cos and sin of a phase past 1e300 where a part is 1e300: classes without signs
    huge = (np.abs(np.concatenate([[sx.real], [sx.imag], [sy.real], [sy.imag]])) == 1e300).any(0)
    cls = lambda v: np.stack([np.isnan(v.real), np.isinf(v.real), np.isnan(v.imag), np.isinf(v.imag)])  # noqa: E731
    bad = ((_classes(gsp) != _classes(want_sp)).any(0) & ~huge) | (cls(gsp) != cls(want_sp)).any(0)
    assert not bad.any(), list(zip(sx[bad], sy[bad], gsp[bad], want_sp[bad]))[:6]
    fin = np.isfinite(sx) & np.isfinite(sy) & ~huge & (sx != 0)
    below = np.signbit(sx[fin].imag)  # (on the cut, -0 is its lower side: x^y = conj(conj(x)^conj(y)); mpmath has no -0)
    with mpmath.workdps(60):
        want_fin = np.array([complex(mpmath.mpc(complex(p)) ** mpmath.mpc(complex(q)))
                             for p, q in zip(np.where(below, sx[fin].conj(), sx[fin]), np.where(below, sy[fin].conj(), sy[fin]))])
    want_fin = np.where(below, want_fin.conj(), want_fin)
    assert _ulps(gsp[fin], want_fin).max() <= 4


@pytest.mark.cpu_only  # (the CPU's and CUDA's legalization; Vulkan has no float64)
@pytest.mark.parametrize("shape", [(17,), (3, 6), (64, 64)])  # in the module's text: a list, nested lists, hex bytes
def test_closed_over_complex128_arrays_compile(x64, shape):
    """A closed-over complex128 array of more than 16 values: `iree-compile` crashed (SIGFPE) packing the constant,
    on the CPU and for CUDA. `complex128-constants-in-parts` builds it from its float64 parts, bit for bit: NaN,
    infinities, -0, the largest and smallest normal parts, a subnormal one, thirds."""
    n = math.prod(shape)
    rng = np.random.default_rng(n)
    c = rng.normal(size=n) + 1j * rng.normal(size=n)
    c[:7] = [complex(NAN, 1), complex(INF, -INF), complex(-0.0, 1e308), complex(5e-324, -2.3e-308), 1 / 3 - 2j / 3,
             complex(-1.7976931348623157e308, 2.2250738585072014e-308), 0.1 + 0.2j]
    c = c.reshape(shape)
    x = rng.normal(size=n)
    x[2] = -0.0
    x = x.reshape(shape)
    f = stagec.jit(lambda v: v + c)
    assert "stablehlo.complex" in f.lower(x).as_text("final")
    got = np.asarray(f(x))
    np.testing.assert_array_equal(got, x + c)
    assert np.signbit(got.reshape(-1)[2].real)
    if shape == (17,):
        assert len(f.lower(x).compile("cuda").artifact.vmfb) > 1000  # (the compile side; no GPU needed)


@pytest.mark.cpu_only  # (the CPU's and CUDA's legalization; Vulkan has no float64)
def test_complex128_splats_compile(x64):
    """A complex128 splat IREE fills as a buffer of its own (a loop's initial zeros, a loop's carried constant):
    iree-compile failed ("'stream.async.splat' op operand #0 must be ... integer, but got 'i128'"): complex128 qr,
    cholesky, pinv, lstsq did not compile. `complex128-constants-in-parts` builds it from float64 splats."""
    import stagec.numpy as snp
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 3)) + 1j * rng.normal(size=(4, 3))
    got = stagec.jit(lambda a: (snp.matmul(*snp.linalg.qr(a)), snp.full((2, 2), 1 - 2j), snp.linalg.pinv(a)))(a)
    for g, w in zip(got, (a, np.full((2, 2), 1 - 2j), np.linalg.pinv(a))):
        np.testing.assert_allclose(g, w, atol=1e-12)


@pytest.mark.cpu_only
def test_complex128_of_constant_parts_in_a_product(x64):
    """jit(grad) of sum(real(inv(a)) * w): its cotangent complex(w, 0) is made of constants, which IREE 3.13 folded
    and read as w + w j in the products after it (a wrong gradient, silently). Against the closed form
    -inv(a)^T w inv(a)^T (JAX's convention: d/d re - i d/d im)."""
    import stagec.numpy as snp
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 2)) + 1j * rng.normal(size=(2, 2)) + 2 * np.eye(2)
    w = rng.normal(size=(2, 2))
    got = stagec.jit(stagec.grad(lambda a: snp.sum(snp.real(snp.linalg.inv(a)) * w)))(a)
    ai = np.linalg.inv(a)
    np.testing.assert_allclose(got, -ai.T @ w @ ai.T, atol=1e-12)


@pytest.mark.cpu_only
def test_complex128_gradient_of_a_triangular_solve(x64):
    """grad of a complex128 solve_triangular, eager and jitted: its transposed loop updates zeros in parts
    (`complex-pads-in-parts`); IREE 3.13 updated a barriered part in place where the loop reused it, so later
    iterations read earlier updates as zeros (wrong, silently). Against the closed form -u x^T on the upper triangle,
    u = T^-T w (f = sum(re(x) w), x = T^-1 b)."""
    import stagec.numpy as snp
    from stagec.scipy import linalg as sl
    rng = np.random.default_rng(0)
    t = np.triu(rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3)) + 3 * np.eye(3))
    b, w = rng.normal(size=3) + 1j * rng.normal(size=3), rng.normal(size=3)
    f = lambda t: snp.sum(snp.real(sl.solve_triangular(t, b)) * w)  # noqa: E731
    want = np.triu(-np.outer(np.linalg.solve(t.T, w), np.linalg.solve(t, b)))
    for got in (stagec.grad(f)(t), stagec.jit(stagec.grad(f))(t)):
        np.testing.assert_allclose(got, want, atol=1e-12)
    # 1 x 1 through cho_solve: f = re(b) / re(a) (cho_factor reads the diagonal's real part), a barrier on its scalar
    # constant parts made a dispatch of 35 bindings (the runtime's limit is 32)
    g = stagec.jit(stagec.grad(lambda a: snp.sum(snp.real(sl.cho_solve(sl.cho_factor(a), np.array([[1 + 1j]]))))))
    np.testing.assert_allclose(g(np.array([[2.0 + 0j]])), [[-0.25]], atol=1e-12)
