"""Values at special points that were silently wrong (found by comparing with JAX at 0, +-inf, NaN and huge
arguments). Oracles: NumPy's float64 functions, mpmath."""
import mpmath
import numpy as np
import pytest

import stagec
import stagec.numpy as snp
import stagec.scipy.special as sss


def test_ldexp_is_exact_over_the_whole_exponent_range():
    x = np.array([3e38, 1.5, 1e-30, 0, -0.0, np.inf, -np.inf, 1.17549435e-38, 0.75], np.float32)
    n = np.array([-200, 127, 200, 200, -200, -2 ** 31, 2 ** 31 - 1, 150, -149], np.int32)
    xs = np.repeat(x, 5)
    ns = (n[:, None] + np.array([-1, 0, 1, -64, 64])[None]).ravel().astype(np.int32)
    got = np.asarray(stagec.jit(snp.ldexp)(xs, ns))
    with np.errstate(all="ignore"):
        want = np.ldexp(xs.astype(np.float64), ns.astype(np.int64))
    want32 = want.astype(np.float32)
    normal = ~((np.abs(want32) < np.finfo(np.float32).tiny) & (want32 != 0))  # (IREE's CPU flushes subnormals to 0)
    np.testing.assert_array_equal(got[normal], want32[normal])
    assert ((got[~normal] == 0) | (got[~normal] == want32[~normal])).all()  # (CUDA keeps them)


def test_heaviside_entr_xlogy_gammasgn_at_nan_zero_and_poles():
    nan, inf = np.nan, np.inf
    x = np.array([nan, 0, -0.0, -1, -2, -0.5, 1, inf], np.float32)
    heav, entr, xlogy, xlog1py, sgn, gamma = stagec.jit(lambda x, z: (
        snp.heaviside(x, 0.5), sss.entr(x), sss.xlogy(z, x), sss.xlog1py(z, x), sss.gammasgn(x),
        sss.gamma(x)))(x, np.zeros_like(x))
    np.testing.assert_array_equal(np.asarray(heav), np.heaviside(x, np.float32(0.5)))
    want_entr = [nan, 0, 0, -inf, -inf, -inf, 0, -inf]
    np.testing.assert_array_equal(np.asarray(entr), np.array(want_entr, np.float32))
    # x * log(y) with x = 0 is 0 unless y is NaN (SciPy's xlogy(0, nan) is nan)
    for got in (xlogy, xlog1py):
        np.testing.assert_array_equal(np.isnan(np.asarray(got)), np.isnan(x))
    # Gamma(+-0) = +-inf, poles at the negative integers (NaN), NaN stays NaN
    want_sgn = [nan, 1, -1, nan, nan, -1, 1, 1]
    np.testing.assert_array_equal(np.asarray(sgn), np.array(want_sgn, np.float32))
    want_gamma = [nan, inf, -inf, nan, nan, float(mpmath.gamma(-0.5)), 1, inf]
    np.testing.assert_allclose(np.asarray(gamma), np.array(want_gamma, np.float32), rtol=1e-6)


def test_float64_arccosh_below_one_is_nan(x64):
    x = np.array([-1e308, -1e20, -2, 0.5, 1, 1.5, 1e20, np.inf, np.nan])
    got = np.asarray(stagec.jit(snp.arccosh)(x))  # (-1e20 gave 0: t + sqrt(2t + t^2) cancelled)
    with np.errstate(invalid="ignore"):
        want = np.arccosh(x)
    np.testing.assert_allclose(got, want, rtol=1e-15)


def _complex_ulps(got, want):
    """|got - want| in float32 ulps of |want| (where |want| is a normal float32)."""
    got, want = np.asarray(got).astype(np.complex128), np.asarray(want).astype(np.complex128)
    tiny = np.finfo(np.float32).tiny
    ok = np.isfinite(want) & (np.abs(want) > tiny) & (np.abs(want) < np.finfo(np.float32).max)
    for part in (want.real, want.imag):  # (a subnormal part is flushed to zero)
        ok &= (part == 0) | (np.abs(part) >= tiny)
    return np.where(ok, np.abs(got - want) / np.spacing(np.abs(want).astype(np.float32)), 0)


def test_complex64_at_large_and_small_magnitudes():
    r = np.random.default_rng(3)
    z = (10.0 ** r.uniform(-37, 37, 3000) * np.exp(1j * r.uniform(-np.pi, np.pi, 3000))).astype(np.complex64)
    z = np.concatenate([z, (r.standard_normal(500) + 1j * r.standard_normal(500)).astype(np.complex64)])
    tiny = np.finfo(np.float32).tiny  # (parts IREE flushes to zero are left out)
    z = z[~(((np.abs(z.real) < tiny) & (z.real != 0)) | ((np.abs(z.imag) < tiny) & (z.imag != 0)))]
    w = z[::-1].copy()
    fs = {"abs": snp.abs, "sqrt": snp.sqrt, "log": snp.log, "log10": snp.log10, "exp": snp.exp, "recip": snp.reciprocal}
    small = np.array([1e-30 + 1e-33j, -1 + 0j, -1e-20 - 3e-21j, 0.5 - 0.25j, -0.75 + 1e-4j, 3e10 + 1j], np.complex64)
    specials = np.array([0j, complex(1e20, 0), complex(-np.inf, 1), complex(2, np.inf), complex(np.inf, 0)], np.complex64)
    *got, g, specials_got = stagec.jit(lambda z, w, small, sp: (  # (one module: log1p and the specials' below too)
        {k: f(z) for k, f in fs.items()}, z / w, snp.log1p(small),
        (snp.log(sp), snp.exp(sp), snp.sqrt(sp), 1 / sp)))(z, w, small, specials)
    z128 = z.astype(np.complex128)
    with np.errstate(all="ignore"):
        want = {"abs": np.abs(z128), "sqrt": np.sqrt(z128), "log": np.log(z128), "log10": np.log10(z128),
                "exp": np.exp(z128), "recip": 1 / z128}
        div = z128 / w.astype(np.complex128)
    small_re = np.abs(z.real) < 80  # (exp: e^re in range)
    for k in fs:
        err = _complex_ulps(got[0][k], want[k])
        if k == "exp":
            err = err[small_re]
        assert err.max() <= 2, (k, err.max())  # (abs(1e20) was inf, sqrt(1e20-1j) 1e10+623j, 1/(1e20+0j) 0)
    err = _complex_ulps(got[1], div)
    normal = np.abs(div) > 1e-37  # (a quotient near the subnormals loses digits IREE flushes)
    # Vulkan's complex64 division is `mathlib-glsl`'s float32 formula (no float64 there, by design): its seven
    # roundings, no FMA, make 2.50 ulps here, and lavapipe's bits are that formula's in NumPy float32, bit for bit
    # (docs/log.md, 2026-11-28): its bound is test_complex_edges's Vulkan one. Elsewhere float64 arithmetic: 0.70.
    assert err[normal].max() <= (3 if stagec.config.default_backend == "vulkan" else 2)
    # log1p against mpmath (NumPy's complex log1p is log(1 + z), 0 for |z| < 1e-8)
    g = np.asarray(g)
    mp = [complex(mpmath.log1p(mpmath.mpc(complex(v)))) if v != -1 else complex(-np.inf, 0) for v in small]
    fin = np.isfinite(np.array(mp))
    assert _complex_ulps(g[fin], np.array(mp)[fin]).max() <= 2 and g[~fin].real[0] == -np.inf
    # C99's special values
    lg, ex, sq, rc = (np.asarray(v) for v in specials_got)
    assert lg[0] == complex(-np.inf, 0) and np.isnan(lg[0].imag) is np.False_
    assert ex[1].real == np.inf and ex[1].imag == 0 and ex[4].real == np.inf and ex[4].imag == 0
    assert sq[2] == complex(0, np.inf) and sq[3] == complex(np.inf, np.inf)
    assert rc[4] == 0 and rc[2] == 0


def test_half_precision_running_sums_accumulate_in_float32():
    import ml_dtypes
    r = np.random.default_rng(5)
    dts = (np.float16, ml_dtypes.bfloat16)
    xs = [np.concatenate([np.ones(10000), r.standard_normal(3000)]).astype(dt) for dt in dts]
    sums = stagec.jit(lambda xs: [(snp.cumsum(v), snp.cumulative_sum(v)) for v in xs])(xs)  # (one module)
    for dt, x, (a, b) in zip(dts, xs, sums):
        want = np.cumsum(x.astype(np.float64)).astype(dt)  # (float16 stopped at 2048, bfloat16 at 256)
        spacing = np.spacing(np.abs(want.astype(np.float32)).astype(dt)).astype(np.float64)
        for got in (a, b):
            err = np.abs(np.asarray(got).astype(np.float64) - want.astype(np.float64)) / spacing
            assert err.max() <= 1, (dt, err.max())


def test_cholesky_of_a_matrix_that_is_not_positive_definite_is_all_nan():
    """As LAPACK's (through JAX): NaN in the whole lower triangle, not a plausible first column; a positive
    definite matrix in the same batch keeps its factor."""
    a = np.array([[[1, 2], [2, 1]], [[4, 2], [2, 3]]], np.float32)
    for f in (stagec.jit(snp.linalg.cholesky), snp.linalg.cholesky):
        got = np.asarray(f(a))
        assert np.isnan(got[0][np.tril_indices(2)]).all() and got[0, 0, 1] == 0
        np.testing.assert_allclose(got[1], np.linalg.cholesky(a[1].astype(np.float64)), rtol=1e-6)


def test_lax_running_reductions_default_to_axis_zero():
    x = np.array([[1, 5], [3, 2], [2, 7]], np.float32)
    got = stagec.jit(lambda x: (stagec.lax.cummax(x), stagec.lax.cumsum(x, reverse=True)))(x)
    np.testing.assert_array_equal(np.asarray(got[0]), np.maximum.accumulate(x, axis=0))
    np.testing.assert_array_equal(np.asarray(got[1]), np.cumsum(x[::-1], axis=0)[::-1])


def test_linalg_cond_in_each_norm_and_singular_is_inf():
    b = np.array([[2, 1, 0], [1, 3, 1], [0, 1, 4]], np.float32)
    a = np.stack([b, np.zeros_like(b)])
    ps = (None, 2, -2, 1, -1, np.inf, "fro", "nuc")
    got = stagec.jit(lambda a: [snp.linalg.cond(a[:1], p) for p in ps] + [snp.linalg.cond(a)])(a)
    for p, g in zip(ps, got):
        np.testing.assert_allclose(np.asarray(g), np.linalg.cond(b[None].astype(np.float64), p), rtol=1e-5)
    assert np.asarray(got[-1])[1] == np.inf  # (0/0 from the zero matrix, as NumPy's)


def test_gcd_and_lcm_compile_and_wrap_as_numpys_in_every_integer_dtype():
    """lcm did not compile (IREE's stream partitioning: "circular dependency"); its overflow wraps as NumPy's
    |x1| / g * |x2| does."""
    dts = (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32)
    rng = np.random.default_rng(0)
    args = []
    for dt in dts:
        i = np.iinfo(dt)
        args.append(np.r_[rng.integers(max(i.min, -300), min(i.max, 300), 30), 0, i.min, i.max, 127, 50].astype(dt))
        args.append(np.r_[rng.integers(max(i.min, -300), min(i.max, 300), 30), 0, 1, 1, 2, -3 % i.max].astype(dt))
    got = stagec.jit(lambda *a: [(snp.gcd(x, y), snp.lcm(x, y)) for x, y in zip(a[::2], a[1::2])])(*args)
    for (g, l), x, y in zip(got, args[::2], args[1::2]):
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(np.asarray(g), np.gcd(x, y))
            np.testing.assert_array_equal(np.asarray(l), np.lcm(x, y))
        assert np.asarray(l).dtype == x.dtype


def test_float_to_integer_saturates_and_nan_is_zero_as_in_jax():
    """XLA's conversion, which JAX users get: toward zero, saturated at the integer's bounds, NaN to 0 (IREE gave
    INT_MIN for NaN, 3e9 and -3e9, and 255 for -1.5 as uint8). Same bits eagerly and from a complex's real part,
    and from bfloat16 (its NumPy kind is V: eagerly it wrapped, int8 of inf was 0, uint8 of -1.0 255)."""
    v = np.array([0, -0.0, 0.99, -0.99, 1.5, -1.5, 127.9, 128, -129, 255.5, 256, 65536, 2.1e9, 2147483648, -2.2e9,
                  4294967296, 3e38, -3e38, np.inf, -np.inf, np.nan], np.float32)
    dts = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32)

    def want(x, dt):
        i = np.iinfo(dt)
        with np.errstate(invalid="ignore"):
            return np.where(np.isnan(x), 0, np.clip(np.trunc(x.astype(np.float64)), i.min, i.max)).astype(dt)

    f = lambda x: [x.astype(d) for d in dts] + [x.astype(np.float16).astype(np.int32), (x + 1j).astype(np.int32)]
    # (a NumPy value converted by lax, below: conv; complex to bool: to_bool)
    lax = stagec.lax
    b = v.astype(snp.bfloat16)
    conv = lambda y: [lax.convert_element_type(v, d) + y.astype(d) for d in dts] + \
        [lax.convert_element_type(b, d) + y.astype(d) for d in dts] + \
        [lax.convert_element_type(v.astype(np.float16), np.int32), lax.convert_element_type(v + 1j, np.int32)]
    z = (v + 1j).astype(np.complex64)
    to_bool = lambda z: [lax.convert_element_type(z, np.bool_), z.astype(np.bool_)]
    jf, jg, jh = stagec.jit(lambda v, y, z: (f(v), conv(y), to_bool(z)))(v, np.float32(0), z)  # (one module for the three)
    for got in (jf, f(snp.asarray(v))):
        for g, d in zip(got, dts):
            np.testing.assert_array_equal(np.asarray(g), want(v, d))
        np.testing.assert_array_equal(np.asarray(got[-2]), want(v.astype(np.float16), np.int32))
        np.testing.assert_array_equal(np.asarray(got[-1]), want(v, np.int32))
    # A NumPy value converts on the host (a constant): the same rule, eagerly and under jit, and an Array comes back
    # (it was NumPy's astype, INT_MIN for NaN and 3e9, 44 for 300.0 as uint8, and an internal Const object)
    for got in (jg, conv(np.float32(0))):
        for r, d in zip(got, dts):
            np.testing.assert_array_equal(np.asarray(r), want(v, d))
        for r, d in zip(got[len(dts):], dts):
            np.testing.assert_array_equal(np.asarray(r), want(b, d))
        np.testing.assert_array_equal(np.asarray(got[-2]), want(v.astype(np.float16), np.int32))
        np.testing.assert_array_equal(np.asarray(got[-1]), want(v, np.int32))
    assert type(lax.convert_element_type(np.float32(2.5), np.int32)) is stagec.Array
    # complex to bool: lax takes the real part, as JAX's lax (it tested z != 0: -0.0 - 1j was True); numpy's
    # astype keeps NumPy's z != 0
    for got in (jh, to_bool(z), to_bool(snp.asarray(z))):
        np.testing.assert_array_equal(np.asarray(got[0]), v != 0)
        np.testing.assert_array_equal(np.asarray(got[1]), np.ones(len(v), bool))


def test_lax_dynamic_slice_counts_a_negative_start_from_the_end_as_jax():
    """jax.lax.dynamic_slice(x, (-2,), ...) starts at len - 2 (then clamps); stagec clamped -2 to 0."""
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    lax = stagec.lax
    f = lambda x, i: (lax.dynamic_slice(x, (i, i), (2, 3)), lax.dynamic_update_slice(x, np.ones((2, 3), np.float32),
                      (i, -10)), lax.dynamic_index_in_dim(x, i, 1, False), lax.dynamic_slice_in_dim(x, i, 2, 0))
    a = np.arange(40000, dtype=np.int32)
    g = lambda a, i, j: (lax.dynamic_slice(a, (i,), (2,)), lax.dynamic_update_slice(a[:300], -a[:2], (i,)),
                         lax.dynamic_index_in_dim(a[:300], i, 0, False), lax.dynamic_slice_in_dim(a, j, 2))
    b = np.arange(10, dtype=np.int32)
    h = lambda b, i: (lax.dynamic_slice(b, (i,), (2,)), lax.dynamic_update_slice(b, -b[:2], (i,)))
    jf, jg, jh = stagec.jit(lambda fa, ga, ha: (f(*fa), g(*ga), h(*ha)))(  # (one module for the three)
        (x, np.int32(-2)), (a, np.int8(-100), np.int16(-30000)), (b, np.uint32(2 ** 32 - 1)))
    for got in (jf, f(x, np.int32(-2))):
        np.testing.assert_array_equal(np.asarray(got[0]), x[2:4, 3:6])  # column start 4 clamps to 3
        want = x.copy()
        want[2:4, 0:3] = 1
        np.testing.assert_array_equal(np.asarray(got[1]), want)
        np.testing.assert_array_equal(np.asarray(got[2]), x[:, 4])
        np.testing.assert_array_equal(np.asarray(got[3]), x[2:4])
    # a narrow index counts from the end of a longer axis in a wider type (int8 -100 into 300 is 200; it raised
    # OverflowError; JAX adds 300 in int8, wraps and clamps to 0)
    for got in (jg, g(a, np.int8(-100), np.int16(-30000))):
        np.testing.assert_array_equal(np.asarray(got[0]), [39900, 39901])
        np.testing.assert_array_equal(np.asarray(got[1])[198:203], [198, 199, 0, -1, 202])
        assert int(got[2]) == 200
        np.testing.assert_array_equal(np.asarray(got[3]), [10000, 10001])
    # an index past int32's range clamps, not wraps (uint32 4294967295 was -1: the slice started at 0, not the
    # end); a float index is a TypeError, as in JAX
    for got in (jh, h(b, np.uint32(2 ** 31 + 5))):
        np.testing.assert_array_equal(np.asarray(got[0]), [8, 9])
        np.testing.assert_array_equal(np.asarray(got[1]), [0, 1, 2, 3, 4, 5, 6, 7, 0, -1])
    with pytest.raises(TypeError, match="integers"):
        stagec.jit(lambda b: lax.dynamic_slice(b, (b[1].astype(np.float32),), (2,)))(b)


def test_lax_sort_with_payloads_is_stable_and_top_k_as_jax():
    """lax.sort's `is_stable` (its default) was ignored by the compiled sort; top_k put a later tie first, NaN
    last (JAX: NaN is the largest), and took False over True."""
    lax = stagec.lax
    a = np.array([2, 1, 2, 0, 2, 1], np.float32)
    f = np.array([np.nan, 1, np.nan, 5, -np.inf, 5], np.float32)
    i = np.array([-2 ** 31, 3, -2 ** 31, 3], np.int32)
    b = np.array([True, False, True])
    out = stagec.jit(lambda a, f, i, b: (lax.sort((a, np.arange(6)), num_keys=1)[1], lax.top_k(a, 3)[1],
                                         lax.top_k(f, 3)[1], lax.top_k(i, 3)[1], lax.top_k(b, 2)))(a, f, i, b)
    np.testing.assert_array_equal(np.asarray(out[0]), np.argsort(a, kind="stable"))
    np.testing.assert_array_equal(np.asarray(out[1]), [0, 2, 4])
    np.testing.assert_array_equal(np.asarray(out[2]), [0, 2, 3])
    np.testing.assert_array_equal(np.asarray(out[3]), [1, 3, 0])
    np.testing.assert_array_equal(np.asarray(out[4][0]), [True, True])
    np.testing.assert_array_equal(np.asarray(out[4][1]), [0, 2])


def test_signed_zeros_and_signed_nans_in_sorts_top_k_and_running_extrema_as_jax():
    """A sort with every operand a key was not stable: -0.0 and 0.0 tie as keys but differ (lax.sort of
    [1, -0.0, 0.0] gave [0.0, -0.0, 1]; NumPy's stable sort is the oracle). top_k orders floats totally, as JAX:
    0.0 over -0.0, -NaN the least (its results below are JAX 0.10.2's). Eager reduce_max/min and cummax/cummin
    (NumPy rules) kept the first of two zeros; the compiled ops and JAX give max(-0.0, 0.0) = 0.0."""
    lax = stagec.lax
    x = np.array([1.0, np.nan, -0.0, 0.0, np.inf, -np.inf, np.nan, 1.0, -np.nan, 0.0, -0.0], np.float32)
    y = np.array([2, 2, 1, 1, 0, 0, 1, 2, 0, 1, 1], np.float32)
    z = np.array([[-0.0, 0.0, -0.0], [0.0, -0.0, -0.0], [-0.0, -0.0, -0.0]], np.float32)
    fs = (lambda v: lax.reduce_max(v, (1,)), lambda v: lax.reduce_min(v, (1,)),
          lambda v: lax.cummax(v, axis=1), lambda v: lax.cummin(v, axis=1, reverse=True))
    (s, (k1, k2), (tv, ti), (hv, hi)), extrema = stagec.jit(lambda x, y, zs: (
        (lax.sort(x), lax.sort((y, x), num_keys=2), lax.top_k(x, 11), lax.top_k(x.astype(snp.float16), 4)),
        [[f(zz) for f in fs] for zz in zs]))(x, y, [z, -z])  # (one module: the jitted extrema below too)
    gpu = stagec.config.default_backend != "cpu"  # (NVIDIA's arithmetic makes any NaN 0x7fffffff, as XLA's GPU code)
    bits = lambda a: np.asarray(a).view(f"u{np.asarray(a).dtype.itemsize}") if not gpu else np.where(  # noqa: E731
        np.isnan(a), 0, np.asarray(a).view(f"u{np.asarray(a).dtype.itemsize}"))
    np.testing.assert_array_equal(bits(s), bits(np.sort(x, kind="stable")))
    order = np.lexsort((x, y))  # (stable: ties keep their order)
    np.testing.assert_array_equal(bits(k1), bits(y[order]))
    np.testing.assert_array_equal(bits(k2), bits(x[order]))
    np.testing.assert_array_equal(np.asarray(ti), [1, 6, 4, 0, 7, 3, 9, 2, 10, 5, 8])
    np.testing.assert_array_equal(bits(tv), bits(x[[1, 6, 4, 0, 7, 3, 9, 2, 10, 5, 8]]))
    # (on a GPU the float16 conversion of -NaN is +NaN: it ranks as the NaNs then, H200 2026-11-30)
    assert np.asarray(hi).tolist() in ([[1, 6, 4, 0]] + [[1, 6, 8, 4]] * gpu)
    sb = lambda a: np.signbit(np.asarray(a)).tolist()
    jax_results = {  # JAX 0.10.2: (reduce_max, reduce_min, cummax, cummin reversed) of z and of -z, as sign bits
        0: ([False, False, True], [True, True, True], [[True, False, False], [False, False, False], [True, True, True]],
            [[True, True, True], [True, True, True], [True, True, True]]),
        1: ([False, False, False], [True, True, False], [[False, False, False], [True, False, False],
                                                          [False, False, False]],
            [[True, True, False], [True, False, False], [False, False, False]])}
    for n, zz in enumerate((z, -z)):
        for i, (f, want) in enumerate(zip(fs, jax_results[n])):
            for got in (f(zz), f(zz), extrema[n][i]):  # (eager: the NumPy rule, then maybe the kernel; jitted)
                assert sb(got) == want, (n, i)


def test_lax_pow_is_c99s_and_lax_broadcasts_scalars_as_jax():
    """lax.pow was exp(y log x): NaN for (-2) ** 2. JAX's lax also takes scalars and size-1 dimensions."""
    x = np.array([-2, -2, -0.0, 0, 1, -8, 3, np.inf, -np.inf], np.float32)
    y = np.array([2, 3, -1, 0, np.nan, 1 / 3, -2, 0, 3], np.float32)
    lax = stagec.lax
    n = np.array([2, 3, -1, 0, 5, -3, -2, 0, 3], np.int32)
    *got, jitted_n = stagec.jit(lambda x, y, n: (lax.pow(x, y), lax.rem(x, 0.7), lax.clamp(-0.5, x, 0.6),
                                                 lax.add(x[None], x[:, None]), lax.pow(x, n)))(x, y, n)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(np.asarray(got[0]), np.power(x, y))
        np.testing.assert_allclose(np.asarray(got[1]), np.fmod(x, np.float32(0.7)), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(got[2]), np.clip(x, -0.5, 0.6))
    np.testing.assert_array_equal(np.asarray(got[3]), x[None] + x[:, None])
    # an integer exponent array is converted to the base's dtype, as JAX's lowering (it raised TypeError)
    for got in (jitted_n, lax.pow(x, n)):
        assert got.dtype == np.float32
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(np.asarray(got), np.power(x, n.astype(np.float32)))


def test_power_special_values_in_every_float_dtype():
    """power's special values (negative bases to integer powers, 0**0, inf**0, (-0)**-1, 1**nan, NaN) as NumPy's in
    float32, float16 and bfloat16 (bfloat16, NumPy kind 'V', skipped C99's rules: 0**0 and (-2)**2 were NaN)."""
    import ml_dtypes
    v = np.array([0, -0.0, np.inf, -np.inf, np.nan, 1, -1, 2, -2, 0.5, -0.5, 3, -3], np.float32)
    x, y = (a.ravel() for a in np.meshgrid(v, v))
    dts = (np.float32, np.float16, ml_dtypes.bfloat16)
    jitted = _jit_each([(snp.power, (x.astype(dt), y.astype(dt))) for dt in dts])
    for dt, j in zip(dts, jitted):
        got = np.asarray(j).astype(np.float64)
        with np.errstate(all="ignore"):
            want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(dt).astype(np.float64)
        np.testing.assert_array_equal(got, want, err_msg=np.dtype(dt).name)
        assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all(), np.dtype(dt).name  # (-0.0 kept)


def test_loop_speed_hints_of_jax_are_accepted():
    """scan(..., unroll=3), fori_loop(..., unroll=2), map(..., batch_size=2) raised TypeError; the values are
    the loop's (oracle: the Python loop in float64)."""
    x = np.array([0.5, -1.2, 2.0, 0.3], np.float32)
    lax = stagec.lax
    (c, ys), f, m = stagec.jit(lambda a: (lax.scan(lambda c, v: (c * 0.9 + v, c * v), 1.0, a, unroll=3),
                                          lax.fori_loop(0, 3, lambda i, v: v * 1.5 + i, a, unroll=2),
                                          lax.map(lambda v: v * 2 + 1, a, batch_size=2)))(x)
    want_c, want_y = 1.0, []
    for v in x.astype(np.float64):
        want_y.append(want_c * v)
        want_c = want_c * 0.9 + v
    np.testing.assert_allclose(np.asarray(ys), want_y, rtol=1e-6)
    np.testing.assert_allclose(float(c), want_c, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(f), ((x * 1.5) * 1.5 + 1) * 1.5 + 2, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(m), x * 2 + 1, rtol=1e-6)


def test_fortran_order_reshape_and_ravel():
    """`order="F"` raised (ravel took no `order`); as NumPy's and JAX's."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    f = lambda a: (snp.ravel(a, order="F"), a.reshape(4, -1, order="F"), a.flatten(order="F"))
    for got in (stagec.jit(f)(x), f(snp.asarray(x))):
        for g, w in zip(got, (np.ravel(x, order="F"), x.reshape(4, -1, order="F"), x.flatten(order="F"))):
            np.testing.assert_array_equal(np.asarray(g), w)


def test_stats_at_nan_data_or_parameters_are_nan():
    """A NaN failed each support test and gave log-probability -inf (probability 0), and expon.cdf(NaN) 0;
    SciPy gives NaN. Away from NaN: closed forms in float64."""
    st = stagec.scipy.stats
    v = np.array([np.nan, -1.0, 0.0, 1.0, 0.5], np.float32)
    out = stagec.jit(lambda v: (st.beta.logpdf(v, 2.0, 3.0), st.expon.logpdf(v), st.uniform.logpdf(v, -1.0, 2.0),
                                st.gamma.logpdf(v, 2.0), st.poisson.logpmf(v, 3.0), st.bernoulli.logpmf(v, 0.3),
                                st.expon.cdf(v), st.gamma.logpdf(1.0, v)))(v)
    for o in out:
        assert np.isnan(np.asarray(o)[0])
    x = v[1:].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = [np.where((x > 0) & (x < 1), np.log(12 * x * (1 - x) ** 2), -np.inf),
                np.where(x >= 0, -x, -np.inf), np.where((x >= -1) & (x <= 1), -np.log(2), -np.inf),
                np.where(x > 0, np.log(x) - x, -np.inf),
                [-np.inf, -3, np.log(3) - 3, -np.inf],  # (k = -1, 0, 1, 0.5)
                np.where(x == 0, np.log(0.7), np.where(x == 1, np.log(0.3), -np.inf)),
                np.where(x >= 0, -np.expm1(-x), 0)]
    for o, w in zip(out, want):
        np.testing.assert_allclose(np.asarray(o)[1:], w, rtol=1e-6)


def test_median_of_huge_values_and_nan_extrema_of_infinite_complex():
    """median([65504, 65504]) in float16 (and [max, max] in float32) was inf: (lo + hi) / 2 overflowed (JAX's too);
    complex nanmin filled NaNs with inf + 0j, below inf + inf j: nanmin([inf+inf j, NaN]) was inf + 0j (JAX's too)."""
    dts = (np.float16, np.float32)
    jitted = stagec.jit(lambda xs: [snp.nanmedian(x) for x in xs])(  # (one module for both dtypes)
        [np.array([-np.finfo(dt).max, np.nan, -np.finfo(dt).max], dt) for dt in dts])
    for dt, j in zip(dts, jitted):
        m = np.finfo(dt).max
        assert snp.median(np.array([m, m, 1, m], dt)) == m
        assert j == -m and j.dtype == dt, (dt, j)
    z = np.array([complex(-1, np.nan), complex(np.inf, np.inf), complex(np.nan, -1)], np.complex64)
    assert snp.nanmin(z) == complex(np.inf, np.inf) and snp.nanmax(-z) == complex(-np.inf, -np.inf)


def test_logsumexp_return_sign():
    """return_sign raised NotImplementedError; oracle: the float64 sum."""
    a = np.array([[1, 3, 2], [0.5, 1, 2], [0, 0, 0]], np.float32)
    b = np.array([1.0, -1.0, 2.0], np.float32)
    (out, sign), (z, zs) = stagec.jit(lambda a: (stagec.scipy.special.logsumexp(a, axis=1, b=b, return_sign=True),
                                                  stagec.scipy.special.logsumexp(a[0], b=b * 0, return_sign=True)))(a)
    s = (b * np.exp(a.astype(np.float64))).sum(axis=1)
    np.testing.assert_allclose(np.asarray(out), np.log(np.abs(s)), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(sign), np.sign(s))
    assert float(z) == -np.inf and float(zs) == 0


def test_logsumexp_where_empty_and_zero_weights():
    """logsumexp had no `where=` (TypeError), raised on an empty axis (JAX: -inf), and an infinite a under b = 0 gave
    NaN (JAX: no term); integer activations called eagerly raised TypeError on a host constant, and hard_tanh made
    integers float. Oracle: float64 NumPy."""
    a = np.array([[1.0, 2.0, -np.inf, 0.5], [np.inf, 1.0, 0.0, -1.0], [-1.0, 3.0, 2.0, 0.0]], np.float32)
    w = np.array([True, False, True, False])
    a64 = np.where(w, a.astype(np.float64), -np.inf)
    m = a64.max(1, keepdims=True)
    want_w = np.log(np.exp(a64[2] - m[2]).sum()) + m[2, 0]
    b = np.array([0.0, 1.0, 1.0, 2.0], np.float32)
    want_b = np.log((b[1:] * np.exp(a[1:2, 1:].astype(np.float64))).sum())
    lse = stagec.nn.logsumexp
    for f in (lambda x: (lse(x, axis=1, where=w), lse(x, axis=1, b=b), lse(x[:, :0], axis=1), lse(x, where=w[None] & (x < 2))),
              stagec.jit(lambda x: (lse(x, axis=1, where=w), lse(x, axis=1, b=b), lse(x[:, :0], axis=1),
                                    lse(x, where=w[None] & (x < 2))))):
        got_w, got_b, empty, masked = f(a)
        np.testing.assert_allclose(np.asarray(got_w)[2], want_w, rtol=1e-6)
        assert np.asarray(got_w)[1] == np.inf
        np.testing.assert_allclose(np.asarray(got_b)[1], want_b, rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(empty), [-np.inf] * 3)
        np.testing.assert_allclose(float(masked), np.log(np.exp([1.0, 0.0, -1.0]).sum()), rtol=1e-6)
    ints = np.array([-3, 0, 2, 7], np.int32)
    np.testing.assert_allclose(np.asarray(stagec.nn.elu(ints)), np.where(ints > 0, ints, np.expm1(ints)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(stagec.nn.leaky_relu(ints)), np.where(ints >= 0, ints, 0.01 * ints), rtol=1e-6)
    t = stagec.nn.hard_tanh(ints)
    assert t.dtype == np.int32 and np.asarray(t).tolist() == [-1, 0, 1, 1]


def test_one_hot_is_the_default_float_under_x64(x64):
    """one_hot's default dtype was float32 whatever the setting; JAX's is the default float (float64 under x64)."""
    ids = np.array([0, 2, 5, -1])
    for f in (stagec.nn.one_hot, stagec.jit(stagec.nn.one_hot, static_argnums=1)):
        got = f(ids, 3)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(np.asarray(got), np.eye(3)[[0, 2]].tolist() + [[0, 0, 0]] * 2)


def test_zero_by_zero_linalg_and_traced_zero_d_creation():
    """det, inv, slogdet, solve, cholesky, qr of 0x0 matrices raised IndexError (an empty loop's body was
    traced); snp.full((), v) and zeros_like(scalar) under jit were bare constants without operators."""
    la = snp.linalg
    z = np.zeros((2, 0, 0), np.float32)
    (det, inv, (sign, logdet), sol, chol, q), got = stagec.jit(lambda a, x: (  # (one module)
        (la.det(a), la.inv(a), la.slogdet(a[0]), la.solve(a, a), la.cholesky(a), la.qr(a)[0]),
        (snp.full((), 7.0) % 2 + x, snp.zeros_like(x) % 2)))(z, np.float32(1))
    np.testing.assert_array_equal(np.asarray(det), [1, 1])
    assert float(sign) == 1 and float(logdet) == 0
    assert np.asarray(inv).shape == np.asarray(sol).shape == np.asarray(chol).shape == np.asarray(q).shape == z.shape
    assert float(got[0]) == 2 and float(got[1]) == 0


def test_lax_round_is_half_away_from_zero_by_default_as_jax():
    # jax.lax.round's default is RoundingMethod.AWAY_FROM_ZERO (stagec's was to nearest even: 2.5 -> 2.0)
    import stagec.lax as lax
    x = np.array([0.5, 1.5, 2.5, -2.5, -0.5, 2.45, -0.0, np.inf, np.nan], np.float32)
    afz, afz0, even = stagec.jit(lambda x: (lax.round(x), lax.round(x, 0),
                                            lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)))(x)
    want_afz = np.array([1, 2, 3, -3, -1, 2, -0.0, np.inf, np.nan], np.float32)  # (jax.lax.round's values)
    np.testing.assert_array_equal(np.asarray(afz), want_afz)
    np.testing.assert_array_equal(np.asarray(afz0), want_afz)
    np.testing.assert_array_equal(np.asarray(even), np.rint(x))
    assert np.signbit(np.asarray(afz)[6]) and np.signbit(np.asarray(afz)[4])
    np.testing.assert_array_equal(np.asarray(snp.round(x[:5])), np.rint(x[:5]))  # (NumPy's rule stays NumPy's)


def test_lax_integer_pow_of_scalars_is_an_array_and_negative_integer_powers_raise():
    import pytest
    import stagec.lax as lax
    for x in (np.complex64(1 + 2j), np.float32(3), np.int8(-3)):
        for y in (0, 1):
            out = lax.integer_pow(x, y)  # (was a host `Const` for y = 0, the NumPy scalar itself for y = 1)
            assert np.asarray(out).dtype == x.dtype and np.asarray(out) == (1 if y == 0 else x)
    with pytest.raises(TypeError, match="negative powers"):
        lax.integer_pow(np.array([2, -1], np.int32), -1)  # (JAX raises; 1 // x was answered)


def _jit_each(calls):
    """[stagec.jit(f)(*args) for f, args in calls], all in one module (each call's arguments the module's)."""
    return stagec.jit(lambda a: [f(*x) for (f, _), x in zip(calls, a)])([args for _, args in calls])


def _both(f, *args, rtol=0.0, jitted=None):
    """`f` eagerly and under `jit` (`jitted`: `stagec.jit(f)(*args)`, given where `_jit_each` made it with others),
    asserted to agree (in bits unless `rtol`: exp's and matmul's differ in the last place), and that result."""
    eager = f(*[stagec.device_put(a) for a in args])
    jitted = stagec.jit(f)(*args) if jitted is None else jitted
    for e, j in zip(*(v if isinstance(v, tuple) else (v,) for v in (eager, jitted))):
        e, j = np.asarray(e), np.asarray(j)
        assert e.dtype == j.dtype and (e.tobytes() == j.tobytes() if rtol == 0 else np.allclose(e, j, rtol=rtol))
    return eager


def test_sinc_where_pi_x_overflows_and_erfcx_of_huge_negatives():
    """sinc(3e38) is 0, its value (3e38 is an integer: mpmath's sinpi(x) / (pi x) is 0; NumPy and JAX give
    sin(inf) / inf, NaN), NaN only at infinities; erfcx(-3e38) was NaN (the split of a huge x; SciPy: inf)."""
    import ml_dtypes
    x = np.array([3e38, -3.4e38, 2.5, 1e30, np.inf], np.float32)
    h = np.array([30000, -40000, 2.5], np.float16)
    e = np.array([-3e38, -1e10, -np.inf, -30.5, -9.3, -1.5, 0.5], np.float32)
    b = e.astype(ml_dtypes.bfloat16)
    jitted = _jit_each([(snp.sinc, (x,)), (snp.sinc, (h,)), (sss.erfcx, (e,)), (sss.erfcx, (b,))])
    want = np.array([0.0, 0.0, 1 / (2.5 * np.pi), 0.0, np.nan], np.float32)  # (sin(2.5 pi) = 1)
    np.testing.assert_allclose(np.asarray(_both(snp.sinc, x, jitted=jitted[0])), want, rtol=2e-7, atol=0)
    np.testing.assert_allclose(np.asarray(_both(snp.sinc, h, jitted=jitted[1])).astype(np.float32), [0, 0, 0.1273],
                               rtol=1e-3, atol=0)
    ss = pytest.importorskip("scipy.special")
    x = e
    with np.errstate(over="ignore"):
        want = ss.erfcx(x.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(_both(sss.erfcx, x, rtol=1e-6, jitted=jitted[2])), want, rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(_both(sss.erfcx, b, jitted=jitted[3]))[:4].astype(np.float32), np.inf)


def test_erfcx_of_huge_negatives_float64(x64):
    ss = pytest.importorskip("scipy.special")
    # (203 values, the five repeated: the float64 module of test_accuracy_special_more's test_erfcx, not one of 5)
    x = np.resize(np.array([-1.7e308, -1e200, -31.0, -26.0, -2.0]), 203)
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(np.asarray(_both(sss.erfcx, x)), ss.erfcx(x), rtol=1e-13)


def _p_series_mp(a, x):
    """P(a, x) = x^a e^-x / Gamma(a + 1) sum_n x^n / ((a+1)...(a+n)) in mpmath (its gammainc gives up at a ~ 1e7)."""
    with mpmath.workdps(40):  # (a log x - x - log Gamma(a + 1) cancels 8 digits at a = 3e7)
        a, x = mpmath.mpf(a), mpmath.mpf(x)
        total = term = mpmath.mpf(1)
        n = 0
        while term > total * mpmath.mpf(10) ** -20:
            n += 1
            term = term * x / (a + n)
            total += term
        return float(mpmath.exp(a * mpmath.log(x) - x - mpmath.loggamma(a + 1)) * total)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_gammainc_at_huge_a(dt, request):
    """gammainc(2**31, 2**31) was 0.172 (the series stopped after 20000 steps, float32's a + n stuck at a; JAX: 0);
    Temme's uniform expansion from a = 1e5 near x = a. Oracles: P(a, a) = 1/2 + 1/(3 sqrt(2 pi a)) + 1/(540 a
    sqrt(2 pi a)) + O(a^-5/2) (DLMF 8.12.3 at eta = 0: c_0(0) = -1/3, c_1(0) = -1/540), and the power series in
    mpmath (SciPy's own series stops short at (3e7, 2.997e7): 1.88e-8 for 2.14e-8)."""
    if dt == np.float64:
        request.getfixturevalue("x64")
    # (and x far below a, the last four: log1pmx((x - a) / a) took 1 + t rounded, x's digits lost: float32
    # gammainc(10, 0.1) was 426 eps off, float64 (84.3, 0.098) 30729; now within 8 a eps, P's own condition in x)
    # (16 values, the last four's first four again and one more: the modules of 16 values that
    # tests/test_eager_gammainc_small.py compiles, a disk-cache hit in a suite run)
    a = np.array([2 ** 31 - 1, 1e12, 1e6, 3e7, 1e5, 1e5, 2e5, 10, 16.447586, 30, 84.28366] +
                 [10, 16.447586, 30, 84.28366, 10], dt)
    x = np.array([2 ** 31 - 1, 1e12, 1e6, 2.997e7, 98500, 70000, 2.7e5, 0.1, 0.044075858, 3, 0.09777846] +
                 [0.1, 0.044075858, 3, 0.09777846, 0.1], dt)
    # (both groups in one eager call and one jitted module each: the same bits for the first seven, within rtol for
    # the last four, whose exp and log differ eagerly in the last place; an eager call runs its function's jit module,
    # so the jitted side is `jit(gammainc)` and `jit(gammaincc)`, modules the eager calls compiled, not a third one)
    eager = sss.gammainc(*[stagec.device_put(v) for v in (a, x)]), sss.gammaincc(*[stagec.device_put(v) for v in (a, x)])
    jitted = stagec.jit(sss.gammainc)(a, x), stagec.jit(sss.gammaincc)(a, x)
    for e, j in zip(eager, jitted):
        e, j = np.asarray(e), np.asarray(j)
        assert e.dtype == j.dtype == dt and e[:7].tobytes() == j[:7].tobytes()
    low = np.asarray(eager[0])[7:]
    assert np.allclose(low, np.asarray(jitted[0])[7:], rtol=1e-5 if dt == np.float32 else 1e-13)  # (as `_both`)
    p, q = np.asarray(eager[0], np.float64)[:7], np.asarray(eager[1], np.float64)[:7]
    a, x = a[:7], x[:7]
    A, X = a.astype(np.float64), x.astype(np.float64)
    s = np.sqrt(2 * np.pi * A[:3])
    want = 0.5 + 1 / (3 * s) + 1 / (540 * A[:3] * s)
    tol = 3e-7 if dt == np.float32 else 1e-14
    np.testing.assert_allclose(p[:3], want, rtol=tol)
    np.testing.assert_allclose(q[:3], 1 - want, rtol=tol)
    want = [_p_series_mp(A[i], X[i]) for i in (3, 4)]
    np.testing.assert_allclose(p[3:5], want, rtol=1e-5 if dt == np.float32 else 1e-13)
    np.testing.assert_array_equal(p[5:], [0, 1])  # (e^-4700, 1 - e^-4000: outside Temme's band)
    np.testing.assert_array_equal(q[5:], [1, 0])
    a, x = np.array([10, 16.447586, 30, 84.28366], dt), np.array([0.1, 0.044075858, 3, 0.09777846], dt)
    p = low.astype(np.float64)
    for i in range(3 if dt == np.float32 else 4):  # (P(84.3, 0.098) = 6e-213: 0 in float32)
        A, X = float(a[i]), float(x[i])
        np.testing.assert_allclose(p[i], _p_series_mp(A, X), rtol=8 * A * np.finfo(dt).eps)


def test_pad_linear_ramp_at_integer_extremes():
    """The ramp's edge - start was taken in the integer type and wrapped (int32: 536870915 for NumPy's -536870909)."""
    a = np.array([[-2 ** 31, 2 ** 31 - 1, 0, 1, 2 ** 31 - 2], [7, -1, 26, -32, 45], [34, -35, 7, -27, 20]], np.int32)
    u = np.array([0, 2 ** 32 - 1, 3], np.uint32)
    cases = [(a, pw, ev) for ev in (5, -2 ** 31, ((-7, 2 ** 31 - 1), (3, -2 ** 31))) for pw in (2, ((3, 1), (0, 4)))]
    cases += [(u, 4, ev) for ev in (0, 2 ** 32 - 1)]
    ramps = [lambda v, pw=pw, ev=ev: snp.pad(v, pw, mode="linear_ramp", end_values=ev) for _, pw, ev in cases]
    jitted = _jit_each([(f, (x,)) for f, (x, _, _) in zip(ramps, cases)])
    for f, j, (x, pw, ev) in zip(ramps, jitted, cases):
        got = _both(f, x, jitted=j)
        np.testing.assert_array_equal(np.asarray(got), np.pad(x, pw, mode="linear_ramp", end_values=ev),
                                      err_msg=f"{x.dtype} {pw} {ev}")


def test_pad_linear_ramp_at_int64_extremes(x64):
    # exact floor(start + i (edge - start) / 3), by Python's ints (NumPy's float64 ramp rounds these)
    b = np.array([-2 ** 63, 2 ** 63 - 1], np.int64)
    evs = (5, -2 ** 63, 2 ** 63 - 1)
    ramps = [lambda v, ev=ev: snp.pad(v, 3, mode="linear_ramp", end_values=ev) for ev in evs]
    jitted = _jit_each([(f, (b,)) for f in ramps])
    for ev, f, j in zip(evs, ramps, jitted):
        got = _both(f, b, jitted=j)
        ramp = [[ev + i * (int(e) - ev) // 3 for i in range(3)] for e in b]
        assert np.asarray(got).tolist() == ramp[0] + b.tolist() + ramp[1][::-1]


def test_poly_trapezoid_geomspace_at_nan_and_huge_values():
    """poly's leading 1 became NaN with a NaN root (the convolution multiplied its zero padding by it); trapezoid
    summed before halving (inf for NumPy's 3e38); geomspace between signs was all NaN (NumPy: the ends kept)."""
    roots = [np.array(r, np.float32) for r in ([-1.0, np.nan, -104.0, 0.5], [0.0, 1.0], [np.inf, 1.0],
                                               [1.5, -2.25, 3.0, 0.1])]
    y = np.array([[0, 1], [3e38, -3e38], [88.7, 1]], np.float32)
    trap = lambda v: snp.trapezoid(v, axis=0)  # noqa: E731
    spaces = ((-1.0, 2.0, 3), (-1.0, 2.0, 1), (1e-3, -1e3, 1), (2.0, -1.0, 4, False), (2.0, 7.0, 5))
    geoms = [lambda s, e, args=args: snp.geomspace(s, e, *args[2:]) for args in spaces]
    jitted = _jit_each([(snp.poly, (r,)) for r in roots] + [(trap, (y,))] +
                       [(g, tuple(np.float32(args[:2]))) for g, args in zip(geoms, spaces)])
    for r, j in zip(roots, jitted):
        assert np.asarray(_both(snp.poly, r, jitted=j)).tobytes() == np.poly(r).astype(np.float32).tobytes(), r
    np.testing.assert_allclose(np.asarray(_both(trap, y, jitted=jitted[len(roots)])),
                               np.trapezoid(y.astype(np.float64), axis=0), rtol=1e-6)
    with np.errstate(invalid="ignore"):
        for args, g, j in zip(spaces, geoms, jitted[len(roots) + 1:]):
            got = _both(g, *np.float32(args[:2]), jitted=j)
            np.testing.assert_allclose(np.asarray(got), np.geomspace(*args), rtol=1e-6, err_msg=str(args))


def test_lax_top_k_of_empty_and_nextafter_broadcasts_as_jax():
    lax = stagec.lax
    tops = (((0,), 0), ((3, 0), 0), ((0, 3), 2))  # (the gather's slice of 1 did not fit the empty axis)
    top_k = [lambda x, k=k: lax.top_k(x, k) for _, k in tops]
    pairs = [(np.linspace(-2, 2, int(np.prod(s1))).reshape(s1).astype(np.float32), np.full(s2, 0.5, np.float32))
             for s1, s2 in (((3, 1), (1, 5)), ((2, 3), ()), ((0,), (1,)))]  # (jax.lax.nextafter broadcasts these)
    jitted = _jit_each([(f, (np.zeros(shape, np.float32),)) for f, (shape, _) in zip(top_k, tops)] +
                       [(lax.nextafter, xs) for xs in pairs])
    for (shape, k), f, j in zip(tops, top_k, jitted):
        v, i = _both(f, np.zeros(shape, np.float32), jitted=j)
        assert v.shape == i.shape == shape[:-1] + (k,) and v.dtype == np.float32 and i.dtype == np.int32
    for (x1, x2), j in zip(pairs, jitted[len(tops):]):
        np.testing.assert_array_equal(np.asarray(_both(lax.nextafter, x1, x2, jitted=j)), np.nextafter(x1, x2))
    with pytest.raises(TypeError):
        lax.nextafter(np.zeros(3, np.float32), np.zeros((2, 3), np.float32))  # (ranks differ: JAX raises too)


def test_cov_with_frequency_and_analytic_weights():
    """Raised NotImplementedError; NumPy's formula (float64: the oracle)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 7)).astype(np.float32)
    fw = np.array([1, 2, 1, 3, 1, 1, 0], np.int32)
    aw = rng.uniform(0.1, 2, 7).astype(np.float32)
    kws = (dict(fweights=fw), dict(aweights=aw), dict(fweights=fw, aweights=aw), dict(aweights=aw, ddof=0),
           dict(fweights=fw, ddof=3))
    covs = [lambda v, *w, kw=kw: snp.cov(v, **dict(zip(kw, w)), **{k: v for k, v in kw.items() if k == "ddof"})
            for kw in kws]
    weights = [[v for k, v in kw.items() if k != "ddof"] for kw in kws]
    jitted = _jit_each([(f, (x, *w)) for f, w in zip(covs, weights)])
    for kw, f, w, j in zip(kws, covs, weights, jitted):
        got = _both(f, x, *w, rtol=1e-6, jitted=j)
        np.testing.assert_allclose(np.asarray(got), np.cov(x.astype(np.float64), **kw), rtol=2e-5, atol=1e-6)
    with pytest.raises(TypeError, match="fweights must be integer"):
        snp.cov(x, fweights=aw)


# (last: a process's lavapipe device keeps a core spinning from its creation on, `backend.SPINNING_WAITS`)
def test_lax_sort_with_payloads_is_stable_on_vulkan():
    """The stability key compiles on Vulkan too (an integer key before a payload crashed its iree-compile)."""
    import pytest
    from stagec.compiler.targets import device_names
    if not device_names("vulkan"):
        pytest.skip("no Vulkan device: apt-get install mesa-vulkan-drivers libvulkan1")
    a = np.array([2, 1, 2, 0, 2, 1], np.float32)
    got = stagec.jit(lambda a: stagec.lax.sort((a, snp.arange(6.0)), num_keys=1)[1], backend="vulkan")(a)
    np.testing.assert_array_equal(np.asarray(got), np.argsort(a, kind="stable"))
