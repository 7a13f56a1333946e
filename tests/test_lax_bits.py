"""`stagec.lax`'s bit primitives (`population_count`, `clz`, `bitcast_convert_type`) and the composites
`nextafter`, `associative_scan`, `cumlogsumexp`, `split`: against NumPy (bits, float64), Python's int, and JAX
where installed (`associative_scan`'s rounding: its algorithm)."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import lax

INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def _int_cases(dt):
    bits = 8 * np.dtype(dt).itemsize
    vals = [0, 1, 2, 3, 5, 255, 2 ** (bits - 1) - 1, 2 ** (bits - 1), 2 ** bits - 1, 2 ** (bits // 2) + 7]
    return np.array([v % 2 ** bits for v in vals], np.uint64).astype(dt)


def _popcount_ref(x):
    bits = 8 * x.dtype.itemsize
    return np.array([bin(int(v) % 2 ** bits).count("1") for v in x.ravel()]).astype(x.dtype)


def _clz_ref(x):
    bits = 8 * x.dtype.itemsize
    return np.array([bits - (int(v) % 2 ** bits).bit_length() for v in x.ravel()]).astype(x.dtype)


def test_population_count_and_clz_every_int_dtype(x64):
    xs = [_int_cases(dt) for dt in INTS]
    jitted = stagec.jit(lambda xs: [(lax.population_count(x), lax.clz(x)) for x in xs])(xs)  # one module
    for x, (pj, cj) in zip(xs, jitted):
        for p, c in ((pj, cj), (lax.population_count(x), lax.clz(x))):
            assert p.dtype == x.dtype and c.dtype == x.dtype
            np.testing.assert_array_equal(p, _popcount_ref(x))
            np.testing.assert_array_equal(c, _clz_ref(x))
    x = _int_cases(np.int32).reshape(2, 5)
    np.testing.assert_array_equal(stagec.vmap(lax.clz, in_axes=1)(x), _clz_ref(x.T).reshape(5, 2))
    for bad in (np.array([True]), np.array([1.0], np.float32)):
        for f in (lax.population_count, lax.clz):
            with pytest.raises(TypeError):
                f(bad)


def test_narrowing_without_x64():
    """An int64 NumPy operand is int32 without x64, on the host as compiled: its low 32 bits count."""
    x = np.array([2 ** 40 + 1, -1], np.int64)
    np.testing.assert_array_equal(lax.population_count(x), [1, 32])
    np.testing.assert_array_equal(lax.clz(x), [31, 0])


BITCASTS = [(np.float32, np.int32), (np.float32, np.uint32), (np.int32, np.float32), (np.float64, np.int64),
            (np.float64, np.uint8), (np.float32, np.uint16), (np.int16, np.float16), (np.uint8, np.float32),
            (np.uint16, np.int32)]


def _bitcast_ref(x, new):
    a, b = x.dtype.itemsize, np.dtype(new).itemsize
    if a >= b:
        return np.ascontiguousarray(x)[..., None].view(new).reshape(x.shape + ((a // b,) if a > b else ()))
    return np.ascontiguousarray(x).view(new).reshape(x.shape[:-1])


def test_bitcast_convert_type_same_and_changing_width(x64):
    rng = np.random.default_rng(0)
    xs = []
    for src, new in BITCASTS:
        ratio = max(np.dtype(new).itemsize // np.dtype(src).itemsize, 1)
        bits = rng.integers(0, 256, size=(3, 2 * ratio * np.dtype(src).itemsize), dtype=np.uint8)
        bits[0, :4] = 0  # zeros; NaN/inf bit patterns come by chance in the float16 / narrow cases
        xs.append(bits.view(src).reshape(3, 2, ratio) if ratio > 1 else bits.view(src))
    jitted = stagec.jit(lambda xs: [lax.bitcast_convert_type(x, new) for x, (_, new) in zip(xs, BITCASTS)])(xs)
    for x, (src, new), j in zip(xs, BITCASTS, jitted):
        want = _bitcast_ref(x, new)
        for got in (j, lax.bitcast_convert_type(x, new)):
            assert got.dtype == np.dtype(new) and got.shape == want.shape, (src, new, got.shape)
            np.testing.assert_array_equal(np.asarray(got).view(np.uint8), want.view(np.uint8))
    x = np.array([1.0, -2.5, np.inf], np.float32)
    np.testing.assert_array_equal(stagec.vmap(lambda v: lax.bitcast_convert_type(v, np.uint8))(x), _bitcast_ref(x, np.uint8))
    u = _bitcast_ref(x, np.uint8)
    np.testing.assert_array_equal(stagec.vmap(lambda v: lax.bitcast_convert_type(v, np.float32), in_axes=1)(u.T), x)
    # piecewise constant: a zero derivative, as JAX's
    np.testing.assert_array_equal(stagec.grad(lambda v: lax.bitcast_convert_type(v, np.float32).sum())(x), 0.0)
    with pytest.raises(TypeError, match="last axis"):
        lax.bitcast_convert_type(np.zeros(3, np.uint8), np.float32)
    with pytest.raises(TypeError, match="bool"):
        lax.bitcast_convert_type(np.zeros(4, bool), np.uint8)


def test_bitcast_against_jax():
    jax = pytest.importorskip("jax")
    x = np.array([[1.0, -0.0], [np.nan, 3e-39]], np.float32)
    got = stagec.jit(lambda x: (lax.bitcast_convert_type(x, np.uint8), lax.bitcast_convert_type(x, np.int32)))(x)
    want = (jax.lax.bitcast_convert_type(x, np.uint8), jax.lax.bitcast_convert_type(x, np.int32))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, np.asarray(w))


def _nextafter_cases(dt, rng):
    info = np.finfo(dt)
    tiny = float(info.smallest_subnormal)
    special = [(0, 1), (-0.0, -1), (0, -0.0), (-0.0, 0), (np.inf, 0), (-np.inf, 0), (np.nan, 0), (1, np.nan),
               (tiny, 0), (-tiny, 0), (tiny, 1), (float(info.tiny), 0), (float(info.max), np.inf), (1, 1), (1, 2),
               (1, 0), (-1, -2), (2, -1), (-2, 1)]
    a, b = zip(*special)
    x1 = np.concatenate([a, rng.standard_normal(40), rng.standard_normal(8) * tiny * 8]).astype(dt)
    x2 = np.concatenate([b, rng.standard_normal(40), rng.standard_normal(8) * tiny * 8]).astype(dt)
    return x1, x2


def _nextafter_ref(x1, x2):
    out = np.nextafter(x1, x2)
    return np.where(x1 == x2, x2, out)  # (C's rule where they are equal: NumPy's float16 keeps x1 = -0.0 there)


def test_nextafter_is_exact_every_float(x64):
    rng = np.random.default_rng(1)
    cases = [_nextafter_cases(dt, rng) for dt in (np.float16, np.float32, np.float64)]
    jitted = stagec.jit(lambda cs: [lax.nextafter(a, b) for a, b in cs])(cases)
    for (x1, x2), j in zip(cases, jitted):
        want = _nextafter_ref(x1, x2)
        for got in (j, lax.nextafter(x1, x2)):
            got = np.asarray(got)
            assert got.dtype == x1.dtype
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            ok = ~np.isnan(want)
            np.testing.assert_array_equal(got[ok].view(f"u{x1.dtype.itemsize}"), want[ok].view(f"u{x1.dtype.itemsize}"))
    with pytest.raises(TypeError):
        lax.nextafter(np.array([1], np.int32), np.array([2], np.int32))


def test_nextafter_against_jax():
    jax = pytest.importorskip("jax")
    x1, x2 = _nextafter_cases(np.float32, np.random.default_rng(2))
    tiny = np.finfo(np.float32).tiny  # (JAX's CPU compares with subnormals flushed: two of them, or one and a zero,
    keep = ~((np.abs(x1) < tiny) & (np.abs(x2) < tiny))  # are equal there, and it answers x2)
    np.testing.assert_array_equal(np.asarray(stagec.jit(lax.nextafter)(x1, x2))[keep],
                                  np.asarray(jax.lax.nextafter(x1, x2))[keep])


def test_associative_scan_matches_cumulative_ops(x64):
    x = np.random.default_rng(3).standard_normal((7, 4))
    got = stagec.jit(lambda x: [lax.associative_scan(snp.add, x, axis=a, reverse=r) for a in (0, 1, -1)
                                for r in (False, True)])(x)
    want = [np.flip(np.cumsum(np.flip(x, a), a), a) if r else np.cumsum(x, a) for a in (0, 1, -1) for r in (False, True)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)
    # a pytree and a non-commutative operation: (a, b) pairs composing affine maps x -> a x + b
    a, b = np.random.default_rng(4).standard_normal((2, 9))
    fa, fb = lax.associative_scan(lambda p, q: (p[0] * q[0], q[0] * p[1] + q[1]), (a, b))
    wa, wb = np.cumprod(a), np.zeros(9)
    for i in range(9):
        wb[i] = b[i] if i == 0 else a[i] * wb[i - 1] + b[i]
    np.testing.assert_allclose(fa, wa, rtol=1e-12)
    np.testing.assert_allclose(fb, wb, rtol=1e-12)
    for n in (0, 1, 2):
        np.testing.assert_array_equal(lax.associative_scan(snp.add, np.arange(n)), np.cumsum(np.arange(n)))
    with pytest.raises(ValueError, match="same first dimension"):
        lax.associative_scan(lambda p, q: p, (np.zeros(3), np.zeros(4)))


def test_associative_scan_rounds_as_jax():
    """float32 sums in JAX's order (pairs, then the recursion): bit for bit, values and gradients."""
    jax = pytest.importorskip("jax")
    x = np.random.default_rng(5).standard_normal((13, 3)).astype(np.float32) * 1e3
    fn = lambda p, q: {"s": p["s"] + q["s"], "m": p["m"] * q["m"]}
    tree = {"s": x, "m": x / 1e3}
    for rev in (False, True):
        want = jax.lax.associative_scan(fn, tree, reverse=rev)
        got = stagec.jit(lambda t: lax.associative_scan(fn, t, reverse=rev))(tree)
        for k in "sm":
            np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]))
    w = np.arange(13, dtype=np.float32)[:, None]
    gw = jax.grad(lambda x: (jax.lax.associative_scan(jax.numpy.multiply, x, axis=0) * w).sum())(x / 1e3)
    gs = stagec.grad(lambda x: (lax.associative_scan(snp.multiply, x, axis=0) * w).sum())(x / 1e3)
    np.testing.assert_allclose(gs, gw, rtol=1e-5, atol=1e-6)


def _cls_ref(x, axis, reverse):
    x = np.flip(x, axis) if reverse else x
    out = np.logaddexp.accumulate(x.astype(np.float64), axis=axis)
    return np.flip(out, axis) if reverse else out


def test_cumlogsumexp_values_and_gradient(x64):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((6, 5)).astype(np.float32) * 10
    x[0, 1], x[2, 0], x[3, 3] = -np.inf, np.inf, np.nan
    cases = [(a, r) for a in (0, 1) for r in (False, True)]
    got = stagec.jit(lambda x: [lax.cumlogsumexp(x, axis=a, reverse=r) for a, r in cases])(x)
    for (a, r), g in zip(cases, got):
        want = _cls_ref(x, a, r)
        for v in (g, lax.cumlogsumexp(x, axis=a, reverse=r)):
            assert v.dtype == np.float32
            np.testing.assert_allclose(v, want, rtol=4e-7, atol=1e-6)
    # d/dx_j sum_i w_i cls_i = sum_{i >= j} w_i exp(x_j - cls_i), in float64
    x = rng.standard_normal(8)
    w = rng.standard_normal(8)
    cls = np.logaddexp.accumulate(x)
    want = np.array([sum(w[i] * np.exp(x[j] - cls[i]) for i in range(j, 8)) for j in range(8)])
    np.testing.assert_allclose(stagec.grad(lambda x: (lax.cumlogsumexp(x) * w).sum())(x), want, rtol=1e-12)
    np.testing.assert_allclose(stagec.vmap(lambda v: lax.cumlogsumexp(v))(x.reshape(2, 4)),
                               np.logaddexp.accumulate(x.reshape(2, 4), axis=1), rtol=1e-13)
    with pytest.raises(TypeError):
        lax.cumlogsumexp(np.arange(3))


def test_running_reductions_differentiate_ties_as_jax(x64):
    """cumlogsumexp's gradient at equal neighbours was wrong (logaddexp through max and abs gives 0 and 1 at
    x1 == x2, JAX's rule 1/2 each: [.., 0.5, 0.5, ..] gave 1.06 and 6.67 for 4.40 and 3.33; oracle: the formula in
    float64). cummax/cummin at ties split the derivative by another tree than JAX's associative scan (stored: JAX
    0.10.2's gradients)."""
    x = np.array([0.3, 0.5, 0.5, 0.5, -0.2, 0.5, 0.5])
    w = np.arange(1.0, 8.0)
    cls = np.logaddexp.accumulate(x)
    want = np.array([sum(w[i] * np.exp(x[j] - cls[i]) for i in range(j, 7)) for j in range(7)])
    got = stagec.jit(lambda v: [stagec.grad(lambda u: (lax.cumlogsumexp(u) * w.astype(u.dtype)).sum())(u)
                                for u in (v, v.astype(np.float32))] +
                     [stagec.grad(lambda u: (lax.cummax(u) * w.astype(u.dtype)).sum())(v.astype(np.float32)),
                      stagec.grad(lambda u: (lax.cummin(-u, reverse=True) * w.astype(u.dtype)).sum())(
                          v.astype(np.float32))])(x)
    np.testing.assert_allclose(got[0], want, rtol=1e-12)
    np.testing.assert_allclose(got[1], want, rtol=2e-6)
    np.testing.assert_array_equal(got[2], [1, 10.375, 4.9375, 3.4375, 0, 4.75, 3.5])
    np.testing.assert_array_equal(got[3], [0, -0.75, -2.25, -3.5, 0, -7.25, -14.25])


def test_split(x64):
    x = np.arange(24.0).reshape(4, 6)
    for axis, sizes in ((0, (1, 3)), (1, (2, 0, 4)), (-1, (6,))):
        got = lax.split(x, sizes, axis)
        jitted = stagec.jit(lambda x: lax.split(x, sizes, axis))(x)
        want = np.split(x, np.cumsum(sizes)[:-1], axis)
        assert len(got) == len(want) == len(jitted)
        for g, j, w in zip(got, jitted, want):
            np.testing.assert_array_equal(g, w)
            np.testing.assert_array_equal(j, w)
    w = np.arange(1.0, 7.0)
    grad = stagec.grad(lambda x: sum((p * i).sum() for i, p in enumerate(lax.split(x, (2, 3, 1)))))(w)
    np.testing.assert_array_equal(grad, [0, 0, 1, 1, 1, 2])
    with pytest.raises(ValueError, match="Sum of sizes"):
        lax.split(x, (2, 3), 0)


def test_bitcast_and_nextafter_of_scalars():
    """0-d values and Python scalars, eagerly (the NumPy rule made a 0-d value 1-d: `jnp.nextafter(2, 1)` raised)."""
    assert np.asarray(lax.bitcast_convert_type(np.float32(1.0), np.int32)).tolist() == 1065353216
    assert np.asarray(lax.bitcast_convert_type(np.float32(1.0), np.uint16)).tolist() == [0, 16256]
    got = snp.nextafter(2, 1)
    assert got.shape == () and np.asarray(got) == np.nextafter(np.float32(2), np.float32(1))


@pytest.mark.parametrize("backend", ["cpu", "vulkan"])
def test_clz_of_narrow_integers_on_each_backend(backend):
    """8- and 16-bit counts (lavapipe could not compile them: the lowering counts in int32). Oracle: bit_length."""
    from stagec.compiler.targets import device_names
    if backend == "vulkan" and not device_names("vulkan"):
        pytest.skip("no Vulkan device")
    dts = (np.int8, np.uint8, np.int16, np.uint16)
    xs = [np.array([0, 1, 2, 3, np.iinfo(d).max, np.iinfo(d).min, 5], d) for d in dts]
    for x, got in zip(xs, stagec.jit(lambda *a: [lax.clz(v) for v in a], backend=backend)(*xs)):
        w = np.iinfo(x.dtype).bits
        want = [w - int(v).bit_length() for v in x.astype(f"u{w // 8}")]
        assert np.asarray(got).dtype == x.dtype and np.asarray(got).tolist() == want
