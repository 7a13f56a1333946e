"""One program, one answer: eager calls (op by op, then as an eager composite) and `stagec.jit` give the same
values, checked against NumPy or values derived by hand (each says how). Fuzzer findings E1, E2, C2, C5
(docs/log.md, the eager-composite fuzz)."""
import ml_dtypes
import numpy as np
import pytest

import stagec
import stagec.numpy as snp

D = stagec.device_put


def _each_way(f, *args):
    """`f(*args)` eagerly three times (plain, traced, composite: see stagec.composites) and under `stagec.jit`."""
    return [np.asarray(f(*args)) for _ in range(3)] + [np.asarray(stagec.jit(f)(*args))]


def _wrap(v: int, dt) -> int:
    bits = np.iinfo(dt).bits
    return (v + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)


@pytest.mark.parametrize("dt", [np.int32, np.int8])
def test_integer_power_with_negative_exponents(dt):
    """E1: eager raised NumPy's ValueError where jit gave values. Expected: Python's exact x**n wrapped to the dtype
    for n >= 0; for n < 0 the integer part of 1 / x**|n| (1 for x = 1, (-1)**n for x = -1, 0 otherwise, 0 for x = 0
    too: JAX's answers for |x| < 3, where JAX's own are not wrapped powers)."""
    xs, ns = [2, -1, 0, 1, -2, 3, -3, 7], [2, -1, 3, -2, 0, -3, 5, -7]
    x, n = np.array(xs, dt), np.array(ns, dt)
    want = [_wrap(a ** b, dt) if b >= 0 else (1 if a == 1 else (-1) ** b if a == -1 else 0) for a, b in zip(xs, ns)]
    for got in _each_way(snp.power, D(x), D(n)):
        np.testing.assert_array_equal(got, np.array(want, dt))
    # a Python int base (the fuzzer's `snp.power(2, i)`)
    for got in _each_way(lambda v: snp.power(2, v), D(n)):
        np.testing.assert_array_equal(got, np.array([_wrap(2 ** b, dt) if b >= 0 else 0 for b in ns], dt))


_FILL = {np.float32: np.nan, np.int32: np.iinfo(np.int32).min, np.uint8: 255, np.bool_: True}  # JAX's fills


@pytest.mark.parametrize("dt", list(_FILL))
def test_take_out_of_bounds_fills_eagerly_as_under_jit(dt):
    """E2: eager `take` raised IndexError where jit (JAX's default mode, "fill") read the fill value: NaN for
    floats, the minimum (signed), the maximum (unsigned), True. Expected: NumPy's take of the in-bounds indices,
    the fill elsewhere."""
    a = (np.arange(3) + 1).astype(dt)
    k = np.array([1, 5, -4, -1, 0], np.int32)
    ok = (k >= -3) & (k < 3)
    want = np.where(ok, np.take(a, np.where(ok, k, 0)), np.array(_FILL[dt]).astype(dt))
    for f in (snp.take, lambda a, k: snp.take_along_axis(a, k, axis=0), lambda a, k: snp.take(a, k, axis=None)):
        for got in _each_way(f, D(a), D(k)):
            np.testing.assert_array_equal(got, want)
    for got in _each_way(lambda a, k: snp.take(a, k, fill_value=2), D(a), D(k)):
        np.testing.assert_array_equal(got, np.where(ok, want, np.array(2).astype(dt)))
    with pytest.raises(IndexError, match="take: index 5 is out of bounds for axis 0 with size 3"):
        snp.take(D(a), D(k), mode="raise")  # (NumPy's mode, asked for)


def test_take_out_of_bounds_along_an_axis():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    k = np.array([[0, 4], [-5, 3]], np.int32)
    want = np.array([[[0, np.nan], [np.nan, 3]], [[4, np.nan], [np.nan, 7]], [[8, np.nan], [np.nan, 11]]], np.float32)
    for got in _each_way(lambda x, k: snp.take(x, k, axis=1), D(x), D(k)):
        np.testing.assert_array_equal(got, want)
    kk = np.array([[0, 4], [-5, 3], [1, -1]], np.int32)  # (take_along_axis: rows matched)
    want = np.array([[0, np.nan], [np.nan, 7], [9, 11]], np.float32)
    for got in _each_way(lambda x, k: snp.take_along_axis(x, k, axis=1), D(x), D(kk)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", [np.float32, ml_dtypes.bfloat16])
def test_power_with_subnormal_operands(dt):
    """C2: a subnormal exponent: eager inf**1e-40 was NaN and jit's 1 (IREE's CPU kernels read it as 0), bfloat16
    (-104)**tiny 1; a negative subnormal base to a non-integer power was 0 under jit. Expected: NumPy's float64
    pow of the same values rounded to `dt` (JAX's on the CPU too), where the base is normal, 0, inf or NaN, or the
    exponent subnormal (pow(x, tiny) is then 1, or the value at +-0 and +-inf: no subnormal's digits matter), and
    for negative subnormal bases (NaN, or a signed 0 or inf for odd integer powers)."""
    tiny = float(ml_dtypes.finfo(dt).smallest_normal) / 8  # (a subnormal of `dt`)
    xs = [np.inf, 2.0, 0.5, -2.5, -104.0, 0.0, -0.0, 1.0, -1.0, -np.inf, tiny, -tiny, np.nan]
    cases = [(xs, [y] * len(xs)) for y in (tiny, -tiny, 1e-40, -1e-40)]
    cases.append(([-tiny] * 6, [0.5, -0.5, 3.0, -3.0, 2.5, 2.0]))
    for x, y in cases:
        x, y = np.array(x, dt), np.array(y, dt)
        with np.errstate(all="ignore"):
            want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(dt)
        for f in (snp.power, stagec.lax.pow):
            for got in _each_way(f, D(x), D(y)):
                np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64),
                                              err_msg=f"{f.__name__} {x} ** {y}")
    y = np.array([1e-40, 0.5], np.float32)  # (the fuzzer's scalar base)
    for got in _each_way(lambda v: snp.power(np.inf, v), D(y)):
        np.testing.assert_array_equal(got, [np.inf, np.inf])


def test_half_cumsum_accumulates_in_float32_eagerly_as_under_jit():
    """C5, a documented difference: float16 running sums accumulate in float32 and round each prefix (eager and jit
    alike); NumPy and JAX add in float16, so an overflow to -inf stays and -inf + inf is NaN there. Expected: NumPy's
    float32 cumsum rounded to float16 (-65524.5 rounds to -inf; the float32 sum plus inf is inf)."""
    h = np.array([1e-4, -65504, -17, -1, -2.5, np.inf], np.float16)
    want = np.cumsum(h.astype(np.float32)).astype(np.float16)
    assert np.isinf(want[2]) and want[-1] == np.inf
    for f in (snp.cumsum, snp.nancumsum):
        for got in _each_way(f, D(h)):
            assert got.tobytes() == want.tobytes(), got
