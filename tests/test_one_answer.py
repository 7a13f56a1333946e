"""One program, one answer: eager calls (op by op, then as an eager composite) and `stagec.jit` give the same
values, checked against NumPy or values derived by hand (each says how). Fuzzer findings E1, E2, C2, C5
(docs/log.md, the eager-composite fuzz)."""
import functools

import ml_dtypes
import numpy as np
import pytest

import stagec
import stagec.numpy as snp

D = stagec.device_put


def _each_way(f, *args, jitted):
    """`f(*args)` eagerly three times (plain, traced, composite: see stagec.composites), and `jitted`: the same call
    under `stagec.jit` (from `_jitted`, its test's module)."""
    return [np.asarray(f(*args)) for _ in range(3)] + [np.asarray(jitted)]


@functools.cache
def _jitted(group: str) -> dict:
    """The jitted side of every `_each_way` call of a group of tests, in one module: {key: `f(*args)` under jit} for
    `_JOBS[group]()`'s {key: (f, args)} (each call as `stagec.jit(f)(*args)`, its arguments the module's)."""
    jobs = _JOBS[group]()
    keys = list(jobs)
    got = stagec.jit(lambda args: [jobs[k][0](*a) for k, a in zip(keys, args)])([jobs[k][1] for k in keys])
    return dict(zip(keys, got))


def _wrap(v: int, dt) -> int:
    bits = np.iinfo(dt).bits
    return (v + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)


_INT_POWER = {"xs": [2, -1, 0, 1, -2, 3, -3, 7], "ns": [2, -1, 3, -2, 0, -3, 5, -7]}


def _int_power_jobs():
    jobs = {}
    for dt in (np.int32, np.int8):
        x, n = np.array(_INT_POWER["xs"], dt), np.array(_INT_POWER["ns"], dt)
        jobs[dt, "power"] = (snp.power, (D(x), D(n)))
        jobs[dt, "int base"] = (lambda v: snp.power(2, v), (D(n),))
    return jobs


@pytest.mark.parametrize("dt", [np.int32, np.int8])
def test_integer_power_with_negative_exponents(dt):
    """E1: eager raised NumPy's ValueError where jit gave values. Expected: Python's exact x**n wrapped to the dtype
    for n >= 0; for n < 0 the integer part of 1 / x**|n| (1 for x = 1, (-1)**n for x = -1, 0 otherwise, 0 for x = 0
    too: JAX's answers for |x| < 3, where JAX's own are not wrapped powers)."""
    xs, ns = _INT_POWER["xs"], _INT_POWER["ns"]
    x, n = np.array(xs, dt), np.array(ns, dt)
    want = [_wrap(a ** b, dt) if b >= 0 else (1 if a == 1 else (-1) ** b if a == -1 else 0) for a, b in zip(xs, ns)]
    for got in _each_way(snp.power, D(x), D(n), jitted=_jitted("int power")[dt, "power"]):
        np.testing.assert_array_equal(got, np.array(want, dt))
    # a Python int base (the fuzzer's `snp.power(2, i)`)
    for got in _each_way(lambda v: snp.power(2, v), D(n), jitted=_jitted("int power")[dt, "int base"]):
        np.testing.assert_array_equal(got, np.array([_wrap(2 ** b, dt) if b >= 0 else 0 for b in ns], dt))


_FILL = {np.float32: np.nan, np.int32: np.iinfo(np.int32).min, np.uint8: 255, np.bool_: True}  # JAX's fills
_TAKE_K = np.array([1, 5, -4, -1, 0], np.int32)
_TAKES = (snp.take, lambda a, k: snp.take_along_axis(a, k, axis=0), lambda a, k: snp.take(a, k, axis=None),
          lambda a, k: snp.take(a, k, fill_value=2))  # (the last: a fill value given)
_AXIS_X = np.arange(12, dtype=np.float32).reshape(3, 4)
_AXIS_K = np.array([[0, 4], [-5, 3]], np.int32)
_AXIS_KK = np.array([[0, 4], [-5, 3], [1, -1]], np.int32)  # (take_along_axis: rows matched)
_AXIS_TAKES = (lambda x, k: snp.take(x, k, axis=1), lambda x, k: snp.take_along_axis(x, k, axis=1))


def _take_jobs():
    jobs = {(dt, i): (f, (D((np.arange(3) + 1).astype(dt)), D(_TAKE_K))) for dt in _FILL for i, f in enumerate(_TAKES)}
    jobs["axis", 0] = (_AXIS_TAKES[0], (D(_AXIS_X), D(_AXIS_K)))
    jobs["axis", 1] = (_AXIS_TAKES[1], (D(_AXIS_X), D(_AXIS_KK)))
    return jobs


@pytest.mark.parametrize("dt", list(_FILL))
def test_take_out_of_bounds_fills_eagerly_as_under_jit(dt):
    """E2: eager `take` raised IndexError where jit (JAX's default mode, "fill") read the fill value: NaN for
    floats, the minimum (signed), the maximum (unsigned), True. Expected: NumPy's take of the in-bounds indices,
    the fill elsewhere."""
    a = (np.arange(3) + 1).astype(dt)
    k = _TAKE_K
    ok = (k >= -3) & (k < 3)
    want = np.where(ok, np.take(a, np.where(ok, k, 0)), np.array(_FILL[dt]).astype(dt))
    for i, f in enumerate(_TAKES[:3]):
        for got in _each_way(f, D(a), D(k), jitted=_jitted("take")[dt, i]):
            np.testing.assert_array_equal(got, want, err_msg=f"take {i}")
    for got in _each_way(_TAKES[3], D(a), D(k), jitted=_jitted("take")[dt, 3]):
        np.testing.assert_array_equal(got, np.where(ok, want, np.array(2).astype(dt)))
    with pytest.raises(IndexError, match="take: index 5 is out of bounds for axis 0 with size 3"):
        snp.take(D(a), D(k), mode="raise")  # (NumPy's mode, asked for)


def test_take_out_of_bounds_along_an_axis():
    x, k, kk = _AXIS_X, _AXIS_K, _AXIS_KK
    want = np.array([[[0, np.nan], [np.nan, 3]], [[4, np.nan], [np.nan, 7]], [[8, np.nan], [np.nan, 11]]], np.float32)
    for got in _each_way(_AXIS_TAKES[0], D(x), D(k), jitted=_jitted("take")["axis", 0]):
        np.testing.assert_array_equal(got, want)
    want = np.array([[0, np.nan], [np.nan, 7], [9, 11]], np.float32)
    for got in _each_way(_AXIS_TAKES[1], D(x), D(kk), jitted=_jitted("take")["axis", 1]):
        np.testing.assert_array_equal(got, want)


def _power_cases(dt):
    """[(x, y)] of test_power_with_subnormal_operands for `dt`."""
    tiny = float(ml_dtypes.finfo(dt).smallest_normal) / 8  # (a subnormal of `dt`)
    xs = [np.inf, 2.0, 0.5, -2.5, -104.0, 0.0, -0.0, 1.0, -1.0, -np.inf, tiny, -tiny, np.nan]
    cases = [(xs, [y] * len(xs)) for y in (tiny, -tiny, 1e-40, -1e-40)]
    cases.append(([-tiny] * 6, [0.5, -0.5, 3.0, -3.0, 2.5, 2.0]))
    return [(np.array(x, dt), np.array(y, dt)) for x, y in cases]


_SCALAR_BASE_Y = np.array([1e-40, 0.5], np.float32)  # (the fuzzer's scalar base)


def _power_jobs():
    """power and lax.pow of each dtype's cases, concatenated (elementwise: value i is the pow of x[i] and y[i] in
    any length; sliced back in the test): one pow per function and dtype in the module, as the cases of one shape
    shared a module each."""
    jobs = {}
    for dt in (np.float32, ml_dtypes.bfloat16):
        cases = _power_cases(dt)
        x, y = (np.concatenate([c[j] for c in cases]) for j in (0, 1))
        jobs.update({(np.dtype(dt).name, f.__name__): (f, (D(x), D(y))) for f in (snp.power, stagec.lax.pow)})
    jobs["scalar base"] = (lambda v: snp.power(np.inf, v), (D(_SCALAR_BASE_Y),))
    return jobs


@pytest.mark.parametrize("dt", [np.float32, ml_dtypes.bfloat16])
def test_power_with_subnormal_operands(dt):
    """C2: a subnormal exponent: eager inf**1e-40 was NaN and jit's 1 (IREE's CPU kernels read it as 0), bfloat16
    (-104)**tiny 1; a negative subnormal base to a non-integer power was 0 under jit. Expected: NumPy's float64
    pow of the same values rounded to `dt` (JAX's on the CPU too), where the base is normal, 0, inf or NaN, or the
    exponent subnormal (pow(x, tiny) is then 1, or the value at +-0 and +-inf: no subnormal's digits matter), and
    for negative subnormal bases (NaN, or a signed 0 or inf for odd integer powers)."""
    at = 0
    for x, y in _power_cases(dt):
        with np.errstate(all="ignore"):
            want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(dt)
        for f in (snp.power, stagec.lax.pow):
            jitted = np.asarray(_jitted("power")[np.dtype(dt).name, f.__name__])[at:at + len(x)]
            for got in _each_way(f, D(x), D(y), jitted=jitted):
                np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64),
                                              err_msg=f"{f.__name__} {x} ** {y}")
        at += len(x)
    y = _SCALAR_BASE_Y
    for got in _each_way(lambda v: snp.power(np.inf, v), D(y), jitted=_jitted("power")["scalar base"]):
        np.testing.assert_array_equal(got, [np.inf, np.inf])


_HALF = np.array([1e-4, -65504, -17, -1, -2.5, np.inf], np.float16)


def test_half_cumsum_accumulates_in_float32_eagerly_as_under_jit():
    """C5, a documented difference: float16 running sums accumulate in float32 and round each prefix (eager and jit
    alike); NumPy and JAX add in float16, so an overflow to -inf stays and -inf + inf is NaN there. Expected: NumPy's
    float32 cumsum rounded to float16 (-65524.5 rounds to -inf; the float32 sum plus inf is inf)."""
    h = _HALF
    want = np.cumsum(h.astype(np.float32)).astype(np.float16)
    assert np.isinf(want[2]) and want[-1] == np.inf
    for f in (snp.cumsum, snp.nancumsum):
        for got in _each_way(f, D(h), jitted=_jitted("cumsum")[f.__name__]):
            assert got.tobytes() == want.tobytes(), (f.__name__, got)


_JOBS = {"int power": _int_power_jobs, "take": _take_jobs, "power": _power_jobs,
         "cumsum": lambda: {f.__name__: (f, (D(_HALF),)) for f in (snp.cumsum, snp.nancumsum)}}
