"""`stagec.lax` at edge values against NumPy, closed forms and JAX 0.10.2's results stored as literals (so that these
run without JAX)."""
from __future__ import annotations

import numpy as np

import stagec
from stagec import lax

INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def test_reduce_and_or_xor_of_integers_are_bitwise_as_jax(x64):
    """JAX's reduce_and/or/xor of integers are bitwise (stagec's took booleans only, and had no reduce_xor); the
    reduction of nothing is every bit set for `and`, 0 for `or` and `xor`."""
    xs = [np.array([[5, 3, 7, -1], [12, 10, 6, -128]]).astype(dt) for dt in INTS]
    xs.append(np.array([[True, True, False, True], [True, True, True, True]]))
    fs = lambda x: [lax.reduce_and(x, (1,)), lax.reduce_or(x, (1,)), lax.reduce_xor(x, (1,)), lax.reduce_xor(x, (0, 1)),
                    lax.reduce_and(x[:, :0], (1,)), lax.reduce_or(x[:0], (0,)), lax.reduce_xor(x[:0], (0,))]
    jitted = stagec.jit(lambda xs: [fs(x) for x in xs])(xs)  # (one module)
    for x, got_jit in zip(xs, jitted):
        ones = np.array(True if x.dtype == np.bool_ else ~np.zeros((), x.dtype), x.dtype)
        want = [np.bitwise_and.reduce(x, 1), np.bitwise_or.reduce(x, 1), np.bitwise_xor.reduce(x, 1),
                np.bitwise_xor.reduce(x, None), np.full(2, ones), np.zeros(4, x.dtype), np.zeros(4, x.dtype)]
        for got in (fs(x), got_jit):
            for g, w in zip(got, want):
                assert np.asarray(g).dtype == x.dtype
                np.testing.assert_array_equal(np.asarray(g), w)
    assert int(lax.reduce_and(np.array([-1, -1], np.int8), (0,))) == -1
    np.testing.assert_array_equal(stagec.vmap(lambda v: lax.reduce_xor(v, (0,)))(np.arange(6).reshape(2, 3)), [3, 2])


# JAX 0.10.2's jax.lax.reduce_precision of X (float32) to (exponent_bits, mantissa_bits): rounded to nearest even,
# infinite beyond the format's largest value, zero below its smallest normal (not a cast to float16: 6e-5, a
# float16 subnormal, is 0.0 here), unchanged where the format is as wide as float32's exponent (1e-39 for (8, 7))
X = [1.0 + 2 ** -8, 1.0 + 3 * 2 ** -9, 1 / 3, -1.4, 0.1, 65504, 65519, 65520, 1e5, -1e5, 6.2e-5, 6e-5, 3e-8, 1e-39, -0.0,
     np.inf, -np.inf, np.nan, 3.4e38]
JAX_REDUCE_PRECISION = {
    (5, 10): [1.00390625, 1.005859375, 0.333251953125, -1.400390625, 0.0999755859375, 65504.0, 65504.0, np.inf,
              np.inf, -np.inf, 6.198883056640625e-05, 0.0, 0.0, 0.0, -0.0, np.inf, -np.inf, np.nan, np.inf],
    (8, 7): [1.0, 1.0078125, 0.333984375, -1.3984375, 0.10009765625, 65536.0, 65536.0, 65536.0, 99840.0, -99840.0,
             6.198883056640625e-05, 6.008148193359375e-05, 3.003515303134918e-08, 1.0101904577379033e-39, -0.0, np.inf,
             -np.inf, np.nan, np.inf],
    (5, 2): [1.0, 1.0, 0.3125, -1.5, 0.09375, np.inf, np.inf, np.inf, np.inf, -np.inf, 6.103515625e-05,
             6.103515625e-05, 0.0, 0.0, -0.0, np.inf, -np.inf, np.nan, np.inf],
    (4, 3): [1.0, 1.0, 0.34375, -1.375, 0.1015625, np.inf, np.inf, np.inf, np.inf, -np.inf, 0.0, 0.0, 0.0, 0.0, -0.0,
             np.inf, -np.inf, np.nan, np.inf],
}


def test_reduce_precision_as_jax():
    """`lax.reduce_precision` was missing (NotInStagec); it is `stablehlo.reduce_precision`, eager and jitted, and
    its derivative passes the cotangent through the same rounding, as JAX's."""
    x = np.array(X, np.float32)
    formats = list(JAX_REDUCE_PRECISION)
    jitted = stagec.jit(lambda x: [lax.reduce_precision(x, e, m) for e, m in formats])(x)
    for (e, m), j in zip(formats, jitted):
        want = np.array(JAX_REDUCE_PRECISION[e, m], np.float32)
        for got in (lax.reduce_precision(x, e, m), j):
            got = np.asarray(got)
            assert got.dtype == np.float32
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
            np.testing.assert_array_equal(got, want)
    # (5, 10) is float16's format and (8, 7) bfloat16's: in their normal ranges a round trip through the type
    normal = np.array([1 / 3, -1.4, 0.1, 7.25, 1000.1, -3e-3], np.float32)
    np.testing.assert_array_equal(lax.reduce_precision(normal, 5, 10), normal.astype(np.float16).astype(np.float32))
    h = np.array([1 / 3, 65504, 1e-3], np.float16)
    np.testing.assert_array_equal(lax.reduce_precision(h, 5, 10), h)
    g = stagec.grad(lambda x: (lax.reduce_precision(x, 5, 2) * 1.3).sum())(np.ones(3, np.float32))
    np.testing.assert_array_equal(g, [1.25] * 3)  # (the cotangent 1.3 rounded to 2 mantissa bits, as JAX's)
    for bad in (np.array([1], np.int32), np.array([1j], np.complex64)):
        try:
            lax.reduce_precision(bad, 5, 10)
        except TypeError as e:
            assert "reduce_precision" in str(e)
        else:
            raise AssertionError("reduce_precision of a non-float")


def test_lax_refuses_a_python_scalar_its_operand_dtype_cannot_hold():
    """A weakly typed operand takes the other's dtype only where that keeps its value. lax.add of an int32 array
    and 2.5 added 2, of a uint8 array and -1 added 255 (max(uint8, -1) was 255), of a float32 array and 1j dropped
    the imaginary part; JAX 0.10.2 raises a TypeError for each."""
    i32, u8, f32 = np.arange(3, dtype=np.int32), np.arange(3, dtype=np.uint8), np.arange(3, dtype=np.float32)
    bad = [(lax.add, i32, 2.5), (lax.add, i32, 2.0), (lax.max, u8, -1), (lax.add, u8, 300), (lax.sub, np.int8(1), 200),
           (lax.add, f32, 1j), (lax.mul, i32, 1j), (lax.add, np.array([True]), 1), (lax.lt, u8, -1)]
    for f, x, c in bad:
        for call in (lambda: f(x, c), lambda: f(c, x), lambda: stagec.jit(lambda x: f(x, c))(x)):
            try:
                out = call()
            except TypeError:
                continue
            raise AssertionError(f"{f.__name__}({x.dtype}, {c!r}) gave {out}")
    # a traced Python int (a weakly typed int32 of unknown value) into a narrower integer type: max(uint8, -1) was 255
    for f in (lax.max, lax.lt, lax.add):
        try:
            out = stagec.jit(lambda x, s: f(x, s))(u8, -1)
        except TypeError:
            continue
        raise AssertionError(f"jitted {f.__name__}(uint8, traced -1) gave {out}")
    try:
        lax.pad(i32, 0.5, [(1, 1, 0)])
    except TypeError:
        pass
    else:
        raise AssertionError("pad of int32 with 0.5")
    # where the value is kept: as before
    np.testing.assert_array_equal(lax.add(i32, 2), [2, 3, 4])
    np.testing.assert_array_equal(lax.add(u8, 255), [255, 0, 1])
    np.testing.assert_array_equal(stagec.jit(lambda x: lax.max(x, 1))(u8), [1, 1, 2])
    np.testing.assert_array_equal(lax.add(f32, 2), [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(lax.mul(f32, 0.5), [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(lax.add(f32.astype(np.complex64), 2.0), [2, 3, 4])
    np.testing.assert_array_equal(lax.pad(i32, -1, [(1, 0, 0)]), [-1, 0, 1, 2])
    np.testing.assert_array_equal(stagec.jit(lambda x, s: lax.max(x, s))(i32, 1), [1, 1, 2])
    np.testing.assert_array_equal(stagec.jit(lambda x, s: lax.mul(x, s))(f32, 2), [0.0, 2.0, 4.0])


def test_half_precision_lax_cumsum_accumulates_in_float32():
    """lax.cumsum of 3000 float16 ones stopped at 2048 (bfloat16: at 256): each prefix added in the half type.
    JAX 0.10.2's (its tree of adds gives each prefix exactly here): [256, 257, 301, 2048, 2048, 2072, 3000] at
    indices [255, 256, 300, 2047, 2048, 2070, 2999] for float16, [256, 256, 300, 2048, 2048, 2064, 3008] for
    bfloat16: the exact prefix rounded once to the type."""
    import ml_dtypes
    idx = [255, 256, 300, 2047, 2048, 2070, 2999]
    want = {np.float16: [256, 257, 301, 2048, 2048, 2072, 3000], ml_dtypes.bfloat16: [256, 256, 300, 2048, 2048, 2064,
                                                                                     3008]}
    for dt in (np.float16, ml_dtypes.bfloat16):
        x = np.full(3000, 1, dt)
        np.testing.assert_array_equal(np.arange(1, 3001).astype(dt)[idx].astype(np.float64), want[dt])
        f = lambda x: (lax.cumsum(x), lax.cumsum(x, reverse=True)[::-1], lax.cumprod(x[:15] + x[:15] / 2))
        for got in (f(x), stagec.jit(f)(x)):
            for g in got[:2]:
                assert np.asarray(g).dtype == dt
                np.testing.assert_array_equal(np.asarray(g)[idx].astype(np.float64), want[dt])
            # 1.5 ** k (exact in float32 for k <= 15) rounded once, not the product of rounded partial products
            np.testing.assert_array_equal(np.asarray(got[2]), (1.5 ** np.arange(1, 16)).astype(dt))


def test_conj_of_a_real_array_is_complex_as_jax():
    """JAX's lax.conj of float32/float64 is the array as complex64/complex128 (stagec raised "real does not accept
    dtype float32"); other real dtypes raise a TypeError naming conj."""
    x = np.array([1.5, -0.0, np.inf], np.float32)
    for got in (lax.conj(x), stagec.jit(lax.conj)(x)):
        got = np.asarray(got)
        assert got.dtype == np.complex64
        np.testing.assert_array_equal(got.real, x)
        np.testing.assert_array_equal(np.signbit(got.real), np.signbit(x))
        np.testing.assert_array_equal(got.imag, 0)
    np.testing.assert_array_equal(lax.conj(np.array([1 + 2j], np.complex64)), [1 - 2j])
    for bad in (np.array([1], np.int32), np.array([1], np.float16)):
        try:
            lax.conj(bad)
        except TypeError as e:
            assert "conj" in str(e)
        else:
            raise AssertionError(f"conj of {bad.dtype}")


def test_running_and_windowed_max_min_of_unsigned_integers_every_width(x64):
    """IREE lowers no unsigned reduce_window: max and min were computed widened to a signed type, and uint64 (no
    wider one) raised NotImplementedError under jit (eagerly NumPy answered). They run on the bits with the sign
    bit flipped now, in every width; reduce_window's results are JAX 0.10.2's."""
    for dt in (np.uint8, np.uint16, np.uint32, np.uint64):
        m, top = np.iinfo(dt).max, 1 << (8 * np.dtype(dt).itemsize - 1)
        x = np.array([[5, m, 0, top, 7, m - 1, 1]], dtype=object).astype(dt)
        f = lambda x: (lax.cummax(x, 1), lax.cummin(x, 1), lax.cummax(x, 1, True), lax.cummin(x, 1, True),
                       lax.reduce_window(x, np.array(0, dt), lax.max, (1, 3), (1, 2), "SAME"),
                       lax.reduce_window(x, np.array(m, dt), lax.min, (1, 2), (1, 1), [(0, 0), (1, 1)], (1, 2)))
        want = (np.maximum.accumulate(x, 1), np.minimum.accumulate(x, 1), np.maximum.accumulate(x[:, ::-1], 1)[:, ::-1],
                np.minimum.accumulate(x[:, ::-1], 1)[:, ::-1], np.array([[m, m, m - 1, m - 1]], dtype=object).astype(dt),
                np.array([[5, 5, m, m, 0, 0, top, top, 7, 7, m - 1, m - 1, 1, 1]], dtype=object).astype(dt))
        for got in (stagec.jit(f)(x), f(x)):
            for g, w in zip(got, want):
                assert np.asarray(g).dtype == dt
                np.testing.assert_array_equal(np.asarray(g), w)


def test_complex_rsqrt_is_one_over_sqrt_on_the_branch_cut(x64):
    """IREE's complex rsqrt took the upper side of the cut where the imaginary part is -0.0: rsqrt(-2.5-0j) was
    -0.632j, though sqrt(-2.5-0j) is -1.581j (C99's, NumPy's) and 1/that +0.632j (JAX 0.10.2's rsqrt too)."""
    r = np.array([-2.5, -1.0, 3.0, 0.5, -1e-3, 1e3])
    re, im = [a.ravel() for a in np.meshgrid(r, np.concatenate([r, [0.0, -0.0]]))]
    for dt in (np.complex64, np.complex128):
        z = np.empty(re.size, dt)
        z.real, z.imag = re, im
        want = 1 / np.sqrt(z.astype(np.complex128))
        for got in (lax.rsqrt(z), stagec.jit(lax.rsqrt)(z)):
            got = np.asarray(got)
            assert got.dtype == dt
            np.testing.assert_allclose(got, want, rtol=1e-6 if dt == np.complex64 else 1e-14)
    assert complex(stagec.jit(lax.rsqrt)(np.complex64(complex(-4, -0.0)))) == 0.5j
    assert complex(lax.rsqrt(np.complex64(complex(-4, 0.0)))) == -0.5j


def test_float64_lgamma_of_one_is_positive_zero(x64):
    """lgamma's series about 1, z (-gamma + ...), gave -0.0 at 1 in float64 (JAX, SciPy: +0.0); its values near 1
    against mpmath (SciPy's gammaln is 1e7 ulps off at 0.9999999, stagec's within one)."""
    import mpmath
    x = np.array([1.0, 2.0, 0.9999999, 1.0000001, 0.8, 1.2])
    want = np.array([float(mpmath.loggamma(float(t))) for t in x])
    for got in (np.asarray(lax.lgamma(x)), np.asarray(stagec.jit(lax.lgamma)(x))):
        assert not np.signbit(got[:2]).any(), got
        np.testing.assert_allclose(got, want, rtol=4e-16)
