"""Calls an edge-value sweep against JAX found wrong or crashing (2026-12-02): each against NumPy or exact values."""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import lax
from stagec.primitives.elementwise import host_convert
from stagec.scipy import special


def test_select_takes_nonzero_conditions_of_any_dtype():
    """As JAX's (NumPy raises): an int condition holds where nonzero; it raised a TypeError."""
    x = np.arange(6, dtype=np.float32)
    c1, c2 = np.array([1, 0, 2, 0, 1, 0]), np.array([0, 1, 0, 1, 0, 0], np.float32)
    want = np.select([c1 != 0, c2 != 0], [x, -x], 7)
    for f in (snp.select, stagec.jit(snp.select)):
        np.testing.assert_array_equal(np.asarray(f([c1, c2], [x, -x], 7)), want)


def test_trace_of_a_traced_offset():
    """jit with the offset an argument (JAX takes it; it raised TracerIntegerConversionError)."""
    a = np.arange(24.0).reshape(2, 3, 4)
    f = stagec.jit(lambda a, o: snp.trace(a, o, 1, 2))
    for o in range(-4, 6):
        np.testing.assert_array_equal(np.asarray(f(a, o)), np.trace(a, o, 1, 2))


def test_special_functions_of_integers_are_those_of_their_floats():
    """Integer arguments (float32, as JAX's promotion): entr, logit, log_ndtr and ndtri crashed on a host constant
    ("'Const' object has no attribute 'dtype'")."""
    x = np.array([1, 2], np.int32)
    want = {"entr": [0.0, -2 * math.log(2)], "logit": [np.inf, np.nan],
            "log_ndtr": [math.log(0.5 * math.erfc(-1 / math.sqrt(2))), math.log(0.5 * math.erfc(-2 / math.sqrt(2)))],
            "ndtri": [np.inf, np.nan]}
    for name, w in want.items():
        got = np.asarray(getattr(special, name)(x))
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, w, rtol=2e-7, err_msg=name)


def test_lax_reciprocal_of_integers_raises_as_jax():
    with pytest.raises(TypeError, match="reciprocal"):
        lax.reciprocal(np.array([1, 2], np.int32))
    np.testing.assert_array_equal(np.asarray(snp.reciprocal(np.array([1, 2], np.int32))), [1.0, 0.5])  # (promotes)


def _shift_reference(x: int, c: int, bits: int, kind: str, signed: bool) -> int:
    """StableHLO's shifts on Python ints: a count outside [0, bits) (read unsigned) gives 0, or the sign fill."""
    c %= 1 << bits  # (the count's bits, unsigned)
    u = x % (1 << bits)  # (x's bits)
    s = u - (1 << bits) if u >> (bits - 1) else u  # (x's bits read signed)
    if kind == "left":
        r = (u << c) % (1 << bits) if c < bits else 0
    elif kind == "logical":
        r = u >> c if c < bits else 0
    else:
        r = (s >> c if c < bits else (-1 if s < 0 else 0)) % (1 << bits)
    return r - (1 << bits) if signed and r >> (bits - 1) else r


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32])
def test_shifts_eager_and_jitted_against_the_specification(dtype):
    """Shifts by counts in and out of range (negative, at and past the width): eager calls (their NumPy rules) and
    jit (the module), each against StableHLO's definition computed on Python ints."""
    info, bits = np.iinfo(dtype), 8 * np.dtype(dtype).itemsize
    rng = np.random.default_rng(bits)
    x = rng.integers(info.min, info.max, 64, endpoint=True).astype(dtype)
    c = np.concatenate([rng.integers(max(info.min, -3), bits + 3, 48), rng.integers(info.min, info.max, 16)]).astype(dtype)
    ops = {"left": lax.shift_left, "logical": lax.shift_right_logical, "arithmetic": lax.shift_right_arithmetic}
    jitted = stagec.jit(lambda x, c: [f(x, c) for f in ops.values()])(x, c)
    inside = rng.integers(0, bits, 64).astype(dtype)  # (every count in range: the rules' path without selects)
    for (kind, f), j in zip(ops.items(), jitted):
        want = np.array([_shift_reference(int(a), int(b), bits, kind, info.min < 0) for a, b in zip(x, c)], dtype)
        np.testing.assert_array_equal(np.asarray(f(x, c)), want, err_msg=f"eager {kind}")
        np.testing.assert_array_equal(np.asarray(j), want, err_msg=f"jit {kind}")
        want = np.array([_shift_reference(int(a), int(b), bits, kind, info.min < 0) for a, b in zip(x, inside)], dtype)
        np.testing.assert_array_equal(np.asarray(f(x, inside)), want, err_msg=f"eager {kind}, counts in range")


@pytest.mark.parametrize("src", [np.float16, np.float32])
def test_float_to_int_of_infinities_without_nan_saturates_quietly(src):
    """Eager float -> integer conversion of values with an infinity but no NaN (the rule's fast path checks the range):
    the lowering's saturation, jit's bits, no NumPy warning (float16's bound below int32's range was -inf, and -inf
    took NumPy's cast, whose value is the platform's)."""
    for dst, vals in itertools.product((np.int32, np.int16, np.uint8, np.uint32), ([-np.inf, 1.5, -2.7, -0.0],
                                                                                  [np.inf, 1.5, -0.0])):
        x, info = np.array(vals, src), np.iinfo(dst)
        want = np.array([info.min if v == -np.inf else info.max if v == np.inf else min(max(int(v), info.min), info.max)
                         for v in vals], dst)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = np.asarray(snp.asarray(x).astype(dst))
        np.testing.assert_array_equal(got, want, err_msg=f"{np.dtype(src).name} -> {np.dtype(dst).name}")
        with np.errstate(invalid="raise"):  # (the rule itself casts no value NumPy cannot: no platform's value)
            np.testing.assert_array_equal(host_convert(x, dst), want)
        np.testing.assert_array_equal(np.asarray(stagec.jit(lambda v: v.astype(dst))(x)), want)
