"""complex64 `x ** y` (issue 38): mathlib's `_cpow` on every target (NumPy's `npy_cpow` in float64 arithmetic).
IREE 3.13's own did not compile on Vulkan (a select of complex values) and on the CPU was 11 ulps off, with 0**(1+1j)
NaN and 1j**(1e38+0j) -inf-inf j. Oracle: NumPy's complex128 power of the same values."""
import functools
import math

import numpy as np
import pytest

import stagec

INF, NAN = math.inf, math.nan


def _ulps(got, want):
    """|got - want| in float32 ulps of |want|, where want is finite and a part flushed to zero (below float32's tiny)
    moves it by less than an ulp; 0 elsewhere."""
    got, want = np.asarray(got).astype(np.complex128), np.asarray(want).astype(np.complex128)
    a = np.abs(want)
    ok = np.isfinite(want) & (a > np.finfo(np.float32).tiny * 2 ** 26) & (a < 3e38)
    with np.errstate(all="ignore"):
        return np.where(ok, np.abs(got - want) / np.spacing(np.where(ok, a, 1).astype(np.float32)), 0)


def _classes(v, signs: bool = True):
    """Per part: NaN, +inf, -inf (or inf without `signs`)."""
    v = np.asarray(v).astype(np.complex128)
    if not signs:
        return np.stack([np.isnan(v.real), np.isinf(v.real), np.isnan(v.imag), np.isinf(v.imag)])
    return np.stack([np.isnan(v.real), np.isposinf(v.real), np.isneginf(v.real),
                     np.isnan(v.imag), np.isposinf(v.imag), np.isneginf(v.imag)])


def _points():
    rng = np.random.default_rng(3)
    n = 3000
    x = (10.0 ** rng.uniform(-3, 3, n) * np.exp(1j * rng.uniform(-np.pi, np.pi, n))).astype(np.complex64)
    y = (rng.uniform(-6, 6, n) + 1j * rng.uniform(-6, 6, n)).astype(np.complex64)
    y[:600] = np.round(y[:600].real * 5)  # integer exponents (NumPy multiplies below 100), negative ones included
    y[600:1200] = y[600:1200].real  # real exponents
    x[1200:1500] = x[1200:1500].real  # real bases, negative ones included
    x[1500:1600] = np.exp(1j * rng.uniform(-np.pi, np.pi, 100))  # |x| ~ 1, a large imaginary exponent
    y[1500:1600] = y[1500:1600] * 1000
    vals = [0.0, -0.0, 1.0, -1.0, -2.5, 0.5, 2.0, 3.0, 1e38, INF, -INF, NAN]
    sp = np.array([complex(a, b) for a in vals for b in vals], np.complex64)
    return x, y, np.repeat(sp, len(sp)), np.tile(sp, len(sp))


def _each(names, z, sp, backend: str) -> dict:
    """{name: (f(z), f(sp))} for each stagec.numpy function named, from one jit of f over z and sp joined (one
    expansion per function to compile, not two)."""
    import stagec.numpy as snp
    got = stagec.jit(lambda a: {k: getattr(snp, k)(a) for k in names}, backend=backend)(np.concatenate([z, sp]))
    return {k: (np.asarray(v)[:len(z)], np.asarray(v)[len(z):]) for k, v in got.items()}


# float_power's cases: it cast its operands to float, the imaginary parts were dropped ((1+2j)**(0.5-1j) gave 1.0)
_FZ, _FW = np.array([1 + 2j, -1 + 0.5j], np.complex64), np.array([0.5 - 1j, 2], np.complex64)
# and e^(y log x) past float32's range times a tiny sine: 2 ** (800+1e-30j) was inf + 1.1e30j (e^a clamped at 2^200)
_FZ, _FW = np.concatenate([_FZ, np.array([2, 2, 2], np.complex64)]), \
    np.concatenate([_FW, np.array([800 + 1e-30j, 1e10 + 1e-30j, 140 + 1e-35j], np.complex64)])


@functools.cache
def _powers(backend: str):
    """x ** y over the sample, the special pairs, the sample's real exponents and float_power's cases joined (one
    expansion of power with y as data, not one per case: expansions in one dispatch compile together, at a cost
    growing faster than their number); float_power of the same (the same op: CSE keeps one); x ** 2.0, 3.0 and 0.5
    (constant exponents)."""
    import stagec.numpy as snp
    x, y, sx, sy = _points()
    n, m = len(x), len(x) + len(sx)
    xs, ys = np.concatenate([x, sx, x, _FZ]), np.concatenate([y, sy, np.zeros(n, np.complex64), _FW])

    def f(x, y):
        yy = snp.concatenate([y[:m], y[:n].real, y[m + n:]])  # (the real exponents: a float32 array, promoted)
        return x ** yy, snp.float_power(x, yy), x[:n] ** 2.0, x[:n] ** 3.0, x[:n] ** 0.5
    return tuple(np.asarray(v) for v in stagec.jit(f, backend=backend)(xs, ys))


def _check(backend: str):
    x, y, sx, sy = _points()
    n, m = len(x), len(x) + len(sx)
    both, _, sq, cube, half = _powers(backend)
    real = both[m:m + n]
    got, got_sp = both[:n], both[n:m]
    x128, y128 = x.astype(np.complex128), y.astype(np.complex128)
    for g, want in ((got, x128 ** y128), (sq, x128 * x128), (cube, x128 * x128 * x128), (half, np.sqrt(x128)),
                    (real, x128 ** y128.real)):
        err = _ulps(g, want)
        assert err.max() <= 2, (err.max(), x[np.argmax(err)], y[np.argmax(err)], np.asarray(g)[np.argmax(err)])
    assert np.asarray(sq)[np.isreal(x)].imag.max() <= 0  # (real bases squared: exactly real, as NumPy's product)
    with np.errstate(all="ignore"):
        want = (sx.astype(np.complex128) ** sy.astype(np.complex128)).astype(np.complex64)
    # an exponent part of 1e38 makes the phase ~1e38 radians: its float64 rounding decides the signs of an infinite
    # result (NumPy's too), so there only NaN and infinity are compared
    huge = (np.abs(sy.real) == np.float32(1e38)) | (np.abs(sy.imag) == np.float32(1e38))
    bad = ((_classes(got_sp) != _classes(want)).any(0) & ~huge) | (_classes(got_sp, False) != _classes(want, False)).any(0)
    assert not bad.any(), list(zip(sx[bad], sy[bad], np.asarray(got_sp)[bad], want[bad]))[:8]
    assert _ulps(np.asarray(got_sp)[~huge], want[~huge]).max() <= 2
    g = np.asarray(got_sp)
    assert g[(sy == 0)].tolist() == [1] * int((sy == 0).sum())  # x**0 = 1, NaN and inf bases included
    big = both[-3:]  # (2 ** (800+1e-30j), 2 ** (1e10+1e-30j): inf + inf j; 2 ** (140+1e-35j) inf + 9.66e6j)
    assert np.isinf(big.real).all() and np.isinf(big[:2].imag).all(), big
    np.testing.assert_allclose(big[2].imag, (2.0 ** 140) * np.sin(1e-35 * np.log(2.0)), rtol=1e-6)
    assert np.all(g[(sx == 0) & (sy.real > 0)] == 0) and np.isnan(g[(sx == 0) & (sy.real < 0)]).all()


def test_complex64_power():
    _check("cpu")


def _check_sign_sinh_cosh(backend: str):
    # IREE's complex sign is a select of complex values (no SPIR-V: did not compile on Vulkan); its sinh and cosh
    # (e^z -+ e^-z) / 2 were 22 and 14 ulps off on the CPU, 27 and 19 on Vulkan
    rng = np.random.default_rng(4)
    n = 2000
    z = np.concatenate([rng.uniform(-10, 10, n) + 1j * rng.uniform(-10, 10, n),
                        10.0 ** rng.uniform(-30, 1, n) * np.exp(1j * rng.uniform(-np.pi, np.pi, n)),
                        10.0 ** rng.uniform(-30, 38, n) * np.exp(1j * rng.uniform(-np.pi, np.pi, n))]).astype(np.complex64)
    vals = [0.0, -0.0, 1.0, -2.5, 1e38, INF, -INF, NAN]
    sp = np.array([complex(a, b) for a in vals for b in vals], np.complex64)
    fs = {"sign": np.sign, "sinh": np.sinh, "cosh": np.cosh}
    got = _each(fs, z, sp, backend)
    for k, fn in fs.items():
        g, gs = got[k]
        with np.errstate(all="ignore"):
            want, want_sp = fn(z.astype(np.complex128)), fn(sp.astype(np.complex128)).astype(np.complex64)
        sel = slice(None) if k == "sign" else slice(0, 2 * n)  # (sinh, cosh of huge parts overflow: specials below)
        err = _ulps(np.asarray(g)[sel], want[sel])
        assert err.max() <= 2, (k, err.max(), z[sel][np.argmax(err)])
        bad = (_classes(gs) != _classes(want_sp)).any(0)
        assert not bad.any(), (k, list(zip(sp[bad], np.asarray(gs)[bad], want_sp[bad]))[:6])


def test_complex64_sign_sinh_cosh():
    _check_sign_sinh_cosh("cpu")


def test_float_power_of_complex_is_complex():
    x, y, sx, sy = _points()
    m = len(x) + len(sx)
    got = _powers("cpu")[1]
    assert np.iscomplexobj(got)
    x128 = np.concatenate([x, x, _FZ]).astype(np.complex128)
    y128 = np.concatenate([y, y.real, _FW]).astype(np.complex128)
    with np.errstate(all="ignore"):
        want = np.float_power(x128, y128)
    assert _ulps(np.concatenate([got[:len(x)], got[m:]]), want).max() <= 2


def _check_inverse_trig(backend: str):
    # IREE's complex64 asin, acos, atan, asinh, acosh, atanh were log/sqrt formulas in float32: 34-39 ulps on the CPU,
    # up to 505 on Vulkan; mathlib's are Hull et al.'s and Kahan's in float64 arithmetic
    rng = np.random.default_rng(6)
    n = 1500
    ang = lambda: np.exp(1j * rng.uniform(-np.pi, np.pi, n))  # noqa: E731
    z = np.concatenate([10.0 ** rng.uniform(-3, 2, n) * ang(), 10.0 ** rng.uniform(-30, 38, n) * ang(),
                        rng.uniform(-2, 2, n) + 1j * 10.0 ** rng.uniform(-30, 0, n) * rng.choice([-1, 1], n),
                        ang() * (1 + rng.uniform(-1e-6, 1e-6, n)), rng.uniform(-1.5, 1.5, n) + 0j,
                        # atanh(1 + bi) for b < 1e-19 (b^2 / 4 past float32's range) was inf, atan(bi +- 1) too
                        [1 + 1e-20j, 1 + 1e-30j, -1 - 2e-38j, 1e-30 + 1j, -1e-25 - 1j, 1 + 3e-19j]]).astype(np.complex64)
    tiny = np.finfo(np.float32).tiny  # (parts a backend may flush to zero are left out)
    z = z[~(((np.abs(z.real) < tiny) & (z.real != 0)) | ((np.abs(z.imag) < tiny) & (z.imag != 0)))]
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e38, INF, -INF, NAN]
    sp = np.array([complex(a, b) for a in vals for b in vals], np.complex64)
    names = ("arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh")
    got = _each(names, z, sp, backend)
    for k in names:
        g, gs = got[k]
        err = _ulps(g, getattr(np, k)(z.astype(np.complex128)))
        assert err.max() <= 2, (k, err.max(), z[np.argmax(err)])
        with np.errstate(all="ignore"):  # (NumPy's are FreeBSD's: C99's special values)
            want = getattr(np, k)(sp.astype(np.complex128)).astype(np.complex64)
        bad = (_classes(gs) != _classes(want)).any(0)
        assert not bad.any(), (k, list(zip(sp[bad], np.asarray(gs)[bad], want[bad]))[:6])
        assert _ulps(gs, want).max() <= 2


def test_complex64_inverse_trig():
    _check_inverse_trig("cpu")


def test_complex128_sign_sinh_cosh(x64):
    # IREE's complex128 sign(inf j) was NaN + NaN i; sinh and cosh (e^z -+ e^-z) / 2 lost tiny parts
    import mpmath

    rng = np.random.default_rng(8)
    n = 600
    z = np.concatenate([rng.uniform(-30, 30, n) + 1j * rng.uniform(-30, 30, n),
                        10.0 ** rng.uniform(-300, 1, n) * np.exp(1j * rng.uniform(-np.pi, np.pi, n))])
    vals = [0.0, -0.0, 1.0, -2.5, 1e300, INF, -INF, NAN]
    sp = np.array([complex(a, b) for a in vals for b in vals])
    got = _each(("sign", "sinh", "cosh"), z, sp, "cpu")
    for k, mp in (("sign", lambda u: u / abs(u)), ("sinh", mpmath.sinh), ("cosh", mpmath.cosh)):
        g, gs = got[k]
        with mpmath.workdps(40):
            want = np.array([complex(mp(mpmath.mpc(complex(v)))) for v in z])
        a = np.abs(want)
        err = np.abs(np.asarray(g) - want) / np.spacing(a)
        assert err[(a > 1e-290) & (a < 1e300)].max() <= 3, k
        with np.errstate(all="ignore"):
            want_sp = getattr(np, k)(sp)
        bad = (_classes(gs) != _classes(want_sp)).any(0)
        assert not bad.any(), (k, list(zip(sp[bad], np.asarray(gs)[bad], want_sp[bad]))[:6])


# (The Vulkan tests come last: a process's lavapipe device keeps a core spinning from its creation on,
# `backend.SPINNING_WAITS`.)


def test_vulkan_complex64_power():
    from stagec.compiler.targets import device_names
    if not device_names("vulkan"):
        pytest.skip("no Vulkan device: apt-get install mesa-vulkan-drivers libvulkan1")
    _check("vulkan")


def test_vulkan_complex64_sign_sinh_cosh():
    from stagec.compiler.targets import device_names
    if not device_names("vulkan"):
        pytest.skip("no Vulkan device: apt-get install mesa-vulkan-drivers libvulkan1")
    _check_sign_sinh_cosh("vulkan")


def test_vulkan_complex64_inverse_trig():
    from stagec.compiler.targets import device_names
    if not device_names("vulkan"):
        pytest.skip("no Vulkan device: apt-get install mesa-vulkan-drivers libvulkan1")
    _check_inverse_trig("vulkan")
