"""Silent wrong answers found by the third fuzz run (x64, gcd/lcm): complex logaddexp2 (real formula on complex
values), complex sinc away from the real axis (the imaginary part was range-reduced as the real one), and gcd/lcm with
a type's minimum (abs taken before the cast to the result type; floor modulo by a negative divisor). Oracles: NumPy
(complex128 sinc; gcd/lcm in each type), each eager and under jit."""
import functools

import numpy as np
import pytest

import stagec
import stagec.numpy as snp

D = stagec.device_put


# ---------------------------------------------------------------- logaddexp2 of complex: raises as logaddexp's


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_logaddexp2_of_complex_raises_as_logaddexp(dt, request):
    """It gave max(x1, x2) + log1p(2^-|x1 - x2|) / ln 2 on complex values: [2.0979+1.6103j, 0.6654+0j] for
    log2(2^a + 2^b) = [2.3266+1.1070j, 0.3491+1.0900j]."""
    if dt == np.complex128:
        request.getfixturevalue("x64")
    a = np.array([1.5580319984012951 + 1.6102895231870147j, 0.5 + 0j], dt)
    b = np.array([1.3010370244608143 + 0.5j, 3j], dt)
    for x1, x2 in ((a, b), (a, b.real), (a.real, b), (a, 2.0)):
        with pytest.raises(NotImplementedError, match="logaddexp2 of complex"):
            snp.logaddexp2(D(x1), D(x2) if isinstance(x2, np.ndarray) else x2)
        with pytest.raises(NotImplementedError, match="logaddexp2 of complex"):
            stagec.jit(snp.logaddexp2)(x1, x2)
    with pytest.raises(NotImplementedError, match="logaddexp of complex"):  # (the treatment it now shares)
        snp.logaddexp(D(a), D(b))
    r1, r2 = a.real.astype(np.float32), b.real.astype(np.float32)  # the real path still answers as NumPy's
    np.testing.assert_allclose(np.asarray(snp.logaddexp2(D(r1), D(r2))), np.logaddexp2(r1, r2), rtol=1e-6)


# ---------------------------------------------------------------- sinc of complex


def _sinc_points():
    re = np.array([0, 0.25, 0.5, 1, 1.5, 2, 2.75, 6.714946524435019, 10.5, -3.2, 100.25, -1e3 - 0.5])
    im = np.array([0, 1e-3, 0.5, -1, 1, 2.1968092972236293, -2.1968092972236293, 5, -10, 30])
    z = (re[:, None] + 1j * im[None, :]).ravel()
    extra = [0.05 + 0.05j, -0.07j, 1e-5 + 1e-5j, 0.09 - 0.03j]  # inside the series' disc
    return np.r_[z, extra]


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_sinc_of_complex_matches_numpy_off_the_real_axis(dt, request):
    """sinc(6.71 - 2.20j) was 0.0343 + 0.0307j (NumPy 12.2557 + 18.7329j): x - 2 round(x / 2) rounded the imaginary
    part too, and the fold into [-1/2, 1/2] compared complex values."""
    if dt == np.complex128:
        request.getfixturevalue("x64")
    z = _sinc_points().astype(dt)
    want = np.sinc(z.astype(np.complex128))
    assert np.isclose(want[np.argmin(np.abs(z - (6.714946524435019 - 2.1968092972236293j)))],
                      12.2556943 + 18.7329294j)
    rtol = 2e-5 if dt == np.complex64 else 1e-12
    scale = np.maximum(np.abs(want), 1)  # (near a zero: error relative to |sinc| ~ 1 there)
    big = np.abs(want) > 0.01 * np.finfo(dt).max  # (sinh(pi 30) overflows complex64: inf + nanj, as NumPy's)
    jitted = _jit_sinc32()[0] if dt == np.complex64 else stagec.jit(snp.sinc)(z)
    for got in (snp.sinc(D(z)), jitted):
        got = np.asarray(got)
        assert got.dtype == dt
        assert not np.isfinite(got[big]).any()
        err = np.abs(got[~big] - want[~big]) / scale[~big]
        assert err.max() < rtol, (z[~big][err.argmax()], got[~big][err.argmax()], want[~big][err.argmax()])
    e, j = np.asarray(snp.sinc(D(z))), np.asarray(jitted)
    np.testing.assert_allclose(e, j, rtol=4 * rtol, atol=4 * rtol)


_SINC_REAL = np.array([0, 0.05, 0.5, 1, 1.5, 2, 6.714946524435019, -3.25, 1e6 + 0.5, 3e37], np.float32)


@functools.cache
def _jit_sinc32():
    """jit(sinc) of the complex64 points and of the float32 ones (`_SINC_REAL`), in one module."""
    assert not stagec.config.enable_x64
    return stagec.jit(lambda z, x: (snp.sinc(z), snp.sinc(x)))(_sinc_points().astype(np.complex64), _SINC_REAL)


def test_sinc_of_real_is_unchanged():
    x = _SINC_REAL
    want = np.sinc(x.astype(np.float64))
    got = np.asarray(_jit_sinc32()[1])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(snp.sinc(D(x))), got, rtol=2e-7)  # (eager sin and jit sin: 1 ulp apart)


# ---------------------------------------------------------------- gcd / lcm with a type's minimum


def _grid(dt):
    i = np.iinfo(dt)
    v = [0, 1, 2, 6, 12, 64, 100, 127, i.max, i.max - 1, i.max // 2 + 1]
    if i.min < 0:
        v += [-1, -6, -64, -100, -127, i.min, i.min + 1, i.min // 2]
    v = np.array(sorted(set(v)), dt)
    return np.repeat(v, len(v)), np.tile(v, len(v))


def _gcd_lcm(a, b):
    return snp.gcd(a, b), snp.lcm(a, b)


_GRID = (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32)
_GRID_X64 = (np.int64, np.uint64)
_I8 = np.array([-128, -127, -1, 0, 6, 127], np.int8)
_U8 = np.array([0, 255, 128, 12, 1, 2], np.uint8)
_I32 = np.array([-2 ** 31, -2 ** 31, 0, -2 ** 31 + 1, 2 ** 31 - 1, -6], np.int32)
_I16 = np.array([-2 ** 15, 0, -2 ** 15, 2 ** 15 - 1, -4, 8], np.int16)
_U16 = np.array([0, 65535, 32768, 12, 1, 2], np.uint16)
_MIXED = ((_I8, _U8), (_U8, _I8), (_I8, _I32), (_I32, _I8), (_U8, _I32), (_I32, _U8), (_I8, _I16), (_I16, _U8),
          (_U16, _I32), (_I16, _U16))
_X64_I64 = np.array([-(2 ** 63 - 1), -2 ** 63, 0, 6, -2 ** 63, 12], np.int64)
_X64_I32 = np.array([-2 ** 31, -2 ** 31, -2 ** 31, -2 ** 31, 0, -6], np.int32)
_X64_U32 = np.array([2 ** 32 - 1, 2 ** 31, 0, 12, 1, 2 ** 31], np.uint32)
_MIXED_X64 = ((_X64_I64, _X64_I32), (_X64_I32, _X64_I64), (_X64_I64, _X64_U32), (_X64_U32, _X64_I32),
              (_X64_I32, _X64_U32))
_SCALAR_X = np.array([-128, -64, 6, 0], np.int8)
_SCALARS = (-128, 4, 0)


@functools.cache
def _jitted(x64: bool) -> dict:
    """The jitted side of every gcd/lcm test of one x64 setting, in one module: {case: (gcd, lcm)} for the grids
    and mixed pairs, {("scalar", s): gcd(x, s)} for the Python scalars (a closed-over int, as each was jitted
    alone). The eager calls stay one per case."""
    assert stagec.config.enable_x64 == x64
    cases = {np.dtype(dt).name: _grid(dt) for dt in (_GRID_X64 if x64 else _GRID)}
    cases.update({("mixed", i): ab for i, ab in enumerate(_MIXED_X64 if x64 else _MIXED)})
    keys = list(cases)

    def f(pairs, x):
        out = [_gcd_lcm(a, b) for a, b in pairs]
        return out if x64 else out + [snp.gcd(x, s) for s in _SCALARS]
    got = stagec.jit(f)([cases[k] for k in keys], _SCALAR_X)
    return dict(zip(keys + ([] if x64 else [("scalar", s) for s in _SCALARS]), got))


def _check(x1, x2, jitted):
    """Eager gcd and lcm of (x1, x2), and `jitted` (their jitted (gcd, lcm) from `_jitted`), against NumPy's."""
    with np.errstate(all="ignore"):
        wg, wl = np.gcd(x1, x2), np.lcm(x1, x2)
    eg, el = snp.gcd(D(x1), D(x2)), snp.lcm(D(x1), D(x2))
    jg, jl = jitted
    for got, want in ((eg, wg), (jg, wg), (el, wl), (jl, wl)):
        got = np.asarray(got)
        assert got.dtype == want.dtype, (x1.dtype, x2.dtype, got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want, err_msg=f"{x1.dtype}, {x2.dtype}")


@pytest.mark.parametrize("dt", _GRID)
def test_gcd_lcm_with_the_types_minimum_match_numpy(dt):
    """gcd(int8 [-127, -100, -64, 6], int8 -128) was [-1, -4, -64, -2] (NumPy [1, 4, 64, 2]); NumPy's gcd(INT_MIN,
    INT_MIN) and gcd(INT_MIN, 0) are INT_MIN itself (|INT_MIN| wraps), kept."""
    _check(*_grid(dt), _jitted(False)[np.dtype(dt).name])


@pytest.mark.parametrize("dt", _GRID_X64)
def test_gcd_lcm_with_the_types_minimum_match_numpy_x64(dt, x64):
    _check(*_grid(dt), _jitted(True)[np.dtype(dt).name])


def test_gcd_lcm_mixed_types_take_abs_in_the_result_type():
    """int8 -128 with uint8 0 gave int16 -128 (NumPy 128); uint8 with int32 -2**31 gave [-1, -4] (NumPy [1, 4])."""
    for i, (a, b) in enumerate(_MIXED):
        _check(a, b, _jitted(False)[("mixed", i)])


def test_gcd_lcm_mixed_types_x64(x64):
    """lcm(int64 -(2**63 - 1), int32 -2**31) was 2147483648 (NumPy -2147483648, wrapped)."""
    for i, (a, b) in enumerate(_MIXED_X64):
        _check(a, b, _jitted(True)[("mixed", i)])


def test_gcd_lcm_python_scalars():
    x = _SCALAR_X
    for s in _SCALARS:
        want = np.gcd(x, np.int8(s))
        np.testing.assert_array_equal(np.asarray(snp.gcd(D(x), s)), want)
        np.testing.assert_array_equal(np.asarray(_jitted(False)[("scalar", s)]), want, err_msg=f"jit, {s}")
        np.testing.assert_array_equal(np.asarray(snp.gcd(s, D(x))), want)
