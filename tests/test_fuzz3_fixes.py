"""Silent wrong answers found by the third fuzz run (x64, gcd/lcm): complex logaddexp2 (real formula on complex
values), complex sinc away from the real axis (the imaginary part was range-reduced as the real one), and gcd/lcm with
a type's minimum (abs taken before the cast to the result type; floor modulo by a negative divisor). Oracles: NumPy
(complex128 sinc; gcd/lcm in each type), each eager and under jit."""
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
    for got in (snp.sinc(D(z)), stagec.jit(snp.sinc)(z)):
        got = np.asarray(got)
        assert got.dtype == dt
        assert not np.isfinite(got[big]).any()
        err = np.abs(got[~big] - want[~big]) / scale[~big]
        assert err.max() < rtol, (z[~big][err.argmax()], got[~big][err.argmax()], want[~big][err.argmax()])
    e, j = np.asarray(snp.sinc(D(z))), np.asarray(stagec.jit(snp.sinc)(z))
    np.testing.assert_allclose(e, j, rtol=4 * rtol, atol=4 * rtol)


def test_sinc_of_real_is_unchanged():
    x = np.array([0, 0.05, 0.5, 1, 1.5, 2, 6.714946524435019, -3.25, 1e6 + 0.5, 3e37], np.float32)
    want = np.sinc(x.astype(np.float64))
    got = np.asarray(stagec.jit(snp.sinc)(x))
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


def _check(x1, x2):
    with np.errstate(all="ignore"):
        wg, wl = np.gcd(x1, x2), np.lcm(x1, x2)
    eg, el = snp.gcd(D(x1), D(x2)), snp.lcm(D(x1), D(x2))
    jg, jl = stagec.jit(lambda a, b: (snp.gcd(a, b), snp.lcm(a, b)))(x1, x2)
    for got, want in ((eg, wg), (jg, wg), (el, wl), (jl, wl)):
        got = np.asarray(got)
        assert got.dtype == want.dtype, (x1.dtype, x2.dtype, got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want, err_msg=f"{x1.dtype}, {x2.dtype}")


@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32])
def test_gcd_lcm_with_the_types_minimum_match_numpy(dt):
    """gcd(int8 [-127, -100, -64, 6], int8 -128) was [-1, -4, -64, -2] (NumPy [1, 4, 64, 2]); NumPy's gcd(INT_MIN,
    INT_MIN) and gcd(INT_MIN, 0) are INT_MIN itself (|INT_MIN| wraps), kept."""
    _check(*_grid(dt))


@pytest.mark.parametrize("dt", [np.int64, np.uint64])
def test_gcd_lcm_with_the_types_minimum_match_numpy_x64(dt, x64):
    _check(*_grid(dt))


def test_gcd_lcm_mixed_types_take_abs_in_the_result_type():
    """int8 -128 with uint8 0 gave int16 -128 (NumPy 128); uint8 with int32 -2**31 gave [-1, -4] (NumPy [1, 4])."""
    i8 = np.array([-128, -127, -1, 0, 6, 127], np.int8)
    u8 = np.array([0, 255, 128, 12, 1, 2], np.uint8)
    i32 = np.array([-2 ** 31, -2 ** 31, 0, -2 ** 31 + 1, 2 ** 31 - 1, -6], np.int32)
    i16 = np.array([-2 ** 15, 0, -2 ** 15, 2 ** 15 - 1, -4, 8], np.int16)
    u16 = np.array([0, 65535, 32768, 12, 1, 2], np.uint16)
    for a, b in ((i8, u8), (u8, i8), (i8, i32), (i32, i8), (u8, i32), (i32, u8), (i8, i16), (i16, u8),
                 (u16, i32), (i16, u16)):
        _check(a, b)


def test_gcd_lcm_mixed_types_x64(x64):
    """lcm(int64 -(2**63 - 1), int32 -2**31) was 2147483648 (NumPy -2147483648, wrapped)."""
    i64 = np.array([-(2 ** 63 - 1), -2 ** 63, 0, 6, -2 ** 63, 12], np.int64)
    i32 = np.array([-2 ** 31, -2 ** 31, -2 ** 31, -2 ** 31, 0, -6], np.int32)
    u32 = np.array([2 ** 32 - 1, 2 ** 31, 0, 12, 1, 2 ** 31], np.uint32)
    for a, b in ((i64, i32), (i32, i64), (i64, u32), (u32, i32), (i32, u32)):
        _check(a, b)


def test_gcd_lcm_python_scalars():
    x = np.array([-128, -64, 6, 0], np.int8)
    for s in (-128, 4, 0):
        want = np.gcd(x, np.int8(s))
        np.testing.assert_array_equal(np.asarray(snp.gcd(D(x), s)), want)
        np.testing.assert_array_equal(np.asarray(stagec.jit(lambda a: snp.gcd(a, s))(x)), want)
        np.testing.assert_array_equal(np.asarray(snp.gcd(s, D(x))), want)
