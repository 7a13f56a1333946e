"""stagec.numpy against NumPy: promotion and weak types, broadcasting, reductions, linear algebra, indexing.

Eager (op by op) and jit results are both compared, since they share primitives but not code paths."""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import stagec
import stagec.numpy as snp

F32 = np.float32


def both(fn, *args):
    """(eager result, jit result) as NumPy arrays; also checks dtype and weak type agree."""
    e, j = fn(*args), stagec.jit(fn)(*args)
    assert e.dtype == j.dtype and e.shape == j.shape and e.weak_type == j.weak_type
    return np.asarray(e), np.asarray(j)


def _position(params: list, p) -> int:
    """The index of parameter `p` in `params` (by identity where it can: 1 == np.int8(1) == True)."""
    for k, q in enumerate(params):
        if q is p or (isinstance(p, tuple) and isinstance(q, tuple) and len(p) == len(q)
                      and all(u is v for u, v in zip(p, q))):
            return k
    return params.index(p)


PROMOTIONS = [
    (1, 2.0, np.float32, True),
    (np.int8(1), 1, np.int8, False),
    (np.int8(1), np.uint8(1), np.int16, False),
    (np.int32(1), 1.0, np.float32, True),  # i32 and a weak float meet at the weak float node
    (np.uint32(1), np.int32(1), np.int32, False),   # i64 narrowed to i32 without x64, as in JAX
    (np.float16(1), 1.0, np.float16, False),
    (np.float16(1), np.int32(1), np.float16, False),
    (True, 1, np.int32, True),
    (np.bool_(True), np.float32(1), np.float32, False),
]
# Every pair's sum in one jitted module (one compile); each pair is still its own test.
_promoted = functools.cache(lambda: stagec.jit(lambda pairs: [x + y for x, y in pairs])([p[:2] for p in PROMOTIONS]))


@pytest.mark.parametrize("a,b,want,weak", PROMOTIONS)
def test_promotion_follows_jax(a, b, want, weak):
    out = _promoted()[_position([p[:2] for p in PROMOTIONS], (a, b))]
    assert out.dtype == want and out.weak_type == weak


def test_python_scalars_are_weak_and_do_not_upcast():
    x = snp.ones(3, dtype=snp.float16)
    assert (x * 2.5).dtype == np.float16
    assert (snp.arange(3) * 2).dtype == np.int32
    assert (snp.arange(3) * 2.0).dtype == np.float32
    # an array of a Python number is weakly typed too, as JAX's; a dtype or a NumPy scalar makes it strong
    assert snp.array(3.0).weak_type is True and snp.asarray(3).weak_type is True
    assert snp.array(3.0, dtype=snp.float32).weak_type is False and snp.asarray(np.float32(3)).weak_type is False
    assert (x * snp.asarray(2.5)).dtype == np.float16 and (x * snp.asarray(np.float32(2.5))).dtype == np.float32


def test_x64_requests_warn_and_narrow():
    with pytest.warns(UserWarning, match="float64 requested in zeros is not available"):
        assert snp.zeros(2, dtype=np.float64).dtype == np.float32
    with pytest.warns(UserWarning, match="int64 requested in astype"):
        assert snp.arange(3).astype(np.int64).dtype == np.int32


def test_x64_enabled_keeps_64_bit(x64):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = snp.arange(4.0)
        assert a.dtype == np.float64 and snp.arange(3).dtype == np.int64
        out = stagec.jit(lambda v: snp.sum(v * 1e-20) + 1.0)(a)
    assert out.dtype == np.float64 and float(out) == 1.0 + 6e-20


def test_elementwise_math_matches_numpy():
    xs = np.linspace(0.1, 3.0, 16).astype(F32)
    fn = lambda x: snp.stack([snp.exp(x), snp.log(x), snp.sin(x), snp.cos(x), snp.tanh(x), snp.sqrt(x),
                              snp.abs(-x), snp.maximum(x, 1.5), snp.minimum(x, 1.5), x ** 3, x / 3, -x])
    want = np.stack([np.exp(xs), np.log(xs), np.sin(xs), np.cos(xs), np.tanh(xs), np.sqrt(xs), np.abs(-xs),
                     np.maximum(xs, 1.5), np.minimum(xs, 1.5), xs ** 3, xs / 3, -xs])
    e, j = both(fn, snp.asarray(xs))
    np.testing.assert_allclose(e, want, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(j, want, rtol=2e-6, atol=1e-6)


def test_integer_division_and_remainder_follow_numpy_signs():
    a = np.array([-7, -3, 0, 3, 7, 8], np.int32)
    b = np.array([2, -2, 3, -3, 3, -5], np.int32)
    for fn, ref in [(lambda x, y: x // y, np.floor_divide), (lambda x, y: x % y, np.remainder)]:
        e, j = both(fn, snp.asarray(a), snp.asarray(b))
        np.testing.assert_array_equal(e, ref(a, b))
        np.testing.assert_array_equal(j, ref(a, b))
    fa, fb = a.astype(F32), b.astype(F32)
    np.testing.assert_array_equal(np.asarray(snp.asarray(fa) % snp.asarray(fb)), np.remainder(fa, fb))
    np.testing.assert_array_equal(np.asarray(snp.asarray(fa) // snp.asarray(fb)), np.floor_divide(fa, fb))
    np.testing.assert_array_equal(np.asarray(snp.asarray(a) / 2), a / np.float32(2))


def test_comparisons_where_and_booleans():
    a = np.array([1.0, -2.0, 3.0, np.nan], F32)
    e, j = both(lambda x: snp.where(x > 0, x, 0.0), snp.asarray(a))
    np.testing.assert_array_equal(e, np.where(a > 0, a, 0.0))
    np.testing.assert_array_equal(j, e)
    m = snp.asarray(a) >= 1.0
    assert m.dtype == np.bool_ and np.asarray(m).tolist() == [True, False, True, False]
    assert np.asarray(~m).tolist() == [False, True, False, True]
    assert np.asarray((m & True) | False).tolist() == [True, False, True, False]


def test_broadcasting_rules_and_errors():
    a = snp.ones((2, 1, 3))
    b = snp.arange(4.0).reshape(4, 1)
    assert (a + b).shape == (2, 4, 3)
    np.testing.assert_array_equal(np.asarray(a + b), np.ones((2, 1, 3)) + np.arange(4.0).reshape(4, 1))
    with pytest.raises(ValueError, match=r"multiply: shapes \(2, 1, 3\), \(2,\) are incompatible for broadcasting"):
        a * snp.ones(2)


REDUCTION_AXES = [(None, False), (0, False), (1, True), ((0, 2), False), (-1, True)]
_RX = np.arange(24, dtype=F32).reshape(2, 3, 4) - 7
_reductions = functools.cache(lambda: stagec.jit(lambda v: [
    (snp.sum(v, axis=a, keepdims=k), snp.mean(v, axis=a, keepdims=k), snp.max(v, axis=a, keepdims=k),
     snp.min(v, axis=a, keepdims=k)) for a, k in REDUCTION_AXES])(snp.asarray(_RX)))  # one module for all axes


@pytest.mark.parametrize("axis,keepdims", REDUCTION_AXES)
def test_reductions_match_numpy(axis, keepdims):
    x = _RX
    got = _reductions()[_position(REDUCTION_AXES, (axis, keepdims))]
    want = (np.sum(x, axis=axis, keepdims=keepdims), np.mean(x, axis=axis, keepdims=keepdims),
            np.max(x, axis=axis, keepdims=keepdims), np.min(x, axis=axis, keepdims=keepdims))
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6)


def test_reduction_dtypes_and_errors():
    assert snp.sum(snp.ones(3, dtype=snp.int8)).dtype == np.int32
    assert snp.sum(snp.array([True, True, False])).dtype == np.int32
    assert int(snp.sum(snp.array([True, True, False]))) == 2
    assert snp.mean(snp.arange(4)).dtype == np.float32 and float(snp.mean(snp.arange(4))) == 1.5
    assert snp.sum(snp.ones(3), dtype=snp.int32).dtype == np.int32
    with pytest.raises(ValueError, match="zero-size array to reduction operation max"):
        snp.max(snp.zeros((0, 2)), axis=0)
    with pytest.raises(ValueError, match="sum: axis 3 is out of bounds for array of dimension 2"):
        snp.sum(snp.ones((2, 2)), axis=3)


MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
                 ((5, 2, 3), (1, 3, 4))]
_MATMUL_ARGS = [(lambda rng: tuple(rng.standard_normal(s).astype(F32) for s in pair))(np.random.default_rng(0))
                for pair in MATMUL_SHAPES]
_matmuls = functools.cache(lambda: stagec.jit(lambda args: [x @ y for x, y in args])(_MATMUL_ARGS))  # one module


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_shapes_match_numpy(sa, sb):
    k = _position(MATMUL_SHAPES, (sa, sb))
    a, b = _MATMUL_ARGS[k]
    got = _matmuls()[k]
    want = a @ b
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_dot_and_transpose():
    a = np.arange(6, dtype=F32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(snp.dot(a, a.T)), a @ a.T)
    np.testing.assert_array_equal(np.asarray(snp.asarray(a).T), a.T)
    np.testing.assert_array_equal(np.asarray(snp.dot(snp.asarray(a), 2.0)), a * 2)
    b = np.arange(24, dtype=F32).reshape(2, 3, 4)
    np.testing.assert_array_equal(np.asarray(snp.transpose(b, (2, 0, 1))), np.transpose(b, (2, 0, 1)))
    np.testing.assert_array_equal(np.asarray(snp.asarray(b).reshape(4, -1)), b.reshape(4, -1))
    with pytest.raises(ValueError, match=r"cannot reshape array of shape \(2, 3, 4\) \(size 24\) into shape \(5, -1\)"):
        snp.asarray(b).reshape(5, -1)


BASIC_INDICES = [1, -1, (0, 2), slice(None, None, -1), (slice(1, None), slice(None, None, 2)), (None, Ellipsis, 1),
                 (Ellipsis, None), (slice(3, 1, -1), 0), slice(5, 10)]
_basic_gets = functools.cache(lambda: stagec.jit(lambda v: [v[i] for i in BASIC_INDICES])(
    np.arange(20, dtype=F32).reshape(4, 5)))  # one module for all indices


@pytest.mark.parametrize("idx", BASIC_INDICES)
def test_basic_indexing_matches_numpy(idx):
    x = np.arange(20, dtype=F32).reshape(4, 5)
    got = _basic_gets()[_position(BASIC_INDICES, idx)]
    np.testing.assert_array_equal(np.asarray(got), x[idx])


def test_traced_integer_index_and_bounds_errors():
    x = np.arange(20, dtype=F32).reshape(4, 5)
    get = stagec.jit(lambda v, i: v[i, 1:])
    np.testing.assert_array_equal(np.asarray(get(x, 2)), x[2, 1:])
    np.testing.assert_array_equal(np.asarray(get(x, -1)), x[-1, 1:])
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        snp.asarray(x)[4]
    np.testing.assert_array_equal(np.asarray(get(x, 4)), x[3, 1:])  # traced: clamped, as JAX does
    # A concrete mask has a static result shape; a traced one does not (issue #5: boolean masks).
    np.testing.assert_array_equal(np.asarray(snp.asarray(x)[snp.asarray(x) > 3]), x[x > 3])
    with pytest.raises(IndexError, match="boolean indices must be concrete"):
        stagec.jit(lambda v: v[v > 3])(x)


def test_creation_functions():
    assert np.asarray(snp.zeros((2, 3))).tolist() == np.zeros((2, 3)).tolist()
    assert snp.ones(3, dtype=snp.int32).dtype == np.int32
    assert np.asarray(snp.full((2,), 7)).tolist() == [7, 7] and snp.full((2,), 7).dtype == np.int32
    np.testing.assert_array_equal(np.asarray(snp.arange(2, 11, 3)), np.arange(2, 11, 3))
    np.testing.assert_allclose(np.asarray(snp.arange(0.5, 2.0, 0.25)), np.arange(0.5, 2.0, 0.25))
    traced, stacked = stagec.jit(lambda x, a, b: (snp.arange(2, 11, 3) + snp.zeros(3, snp.int32) + x,  # (one module)
                                                  snp.array([a, b, 3.0])))(0, 1.0, 2.0)
    np.testing.assert_array_equal(np.asarray(traced), np.arange(2, 11, 3))
    np.testing.assert_array_equal(np.asarray(snp.array([[1, 2], [3, 4]])), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(np.asarray(stacked), [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="cannot make an array from str"):
        snp.array("abc")


def test_astype_and_casts():
    x = snp.array([-1.7, 0.0, 2.5])
    np.testing.assert_array_equal(np.asarray(x.astype(snp.int32)), np.array([-1.7, 0.0, 2.5], F32).astype(np.int32))
    np.testing.assert_array_equal(np.asarray(x.astype(bool)), [True, False, True])
    assert np.asarray(snp.array([True, False]).astype(snp.float32)).tolist() == [1.0, 0.0]


def test_python_types_as_dtypes_mean_defaults_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert snp.arange(3).astype(float).dtype == np.float32
        assert snp.zeros(2, dtype=int).dtype == np.int32
        assert snp.ones(2).astype(bool).dtype == np.bool_


def test_x64_transcendentals_compile_and_match_numpy(x64):
    x = np.linspace(-2.0, 2.0, 9)
    fn = lambda v: (snp.tanh(v), snp.sin(v), snp.cos(v), snp.arctan2(v, 1.5), v % 0.7)
    if stagec.config.default_backend == "vulkan":
        with pytest.raises(NotImplementedError, match="Vulkan has no float64"):
            stagec.jit(fn)(x)
        return
    got = stagec.jit(fn)(x)
    want = (np.tanh(x), np.sin(x), np.cos(x), np.arctan2(x, 1.5), np.remainder(x, 0.7))
    for g, w in zip(got, want):
        assert g.dtype == np.float64
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(snp.asarray(x) % 0.7), np.remainder(x, 0.7), rtol=1e-12)  # eager


def test_atleast_nd_shapes_match_numpy():
    for f, nf in ((snp.atleast_1d, np.atleast_1d), (snp.atleast_2d, np.atleast_2d), (snp.atleast_3d, np.atleast_3d)):
        for x in (np.float32(1), np.ones(2, np.float32), np.ones((2, 3), np.float32), np.ones((1, 2, 3, 4), np.float32)):
            assert f(x).shape == nf(x).shape, (f.__name__, x.shape)
        pair = f(np.ones(2, np.float32), np.float32(1))
        assert [p.shape for p in pair] == [p.shape for p in nf(np.ones(2), 1.0)]


def test_python_int_too_large_raises_eagerly_and_under_jit():
    for f in (lambda: snp.asarray(2**40), lambda: snp.array([1, 2**33]), lambda: stagec.jit(lambda x: x)(2**40)):
        with pytest.raises(OverflowError, match="too large for int32"):
            f()
    assert int(snp.asarray(2**31 - 1)) == 2**31 - 1


@pytest.mark.parametrize("make", [lambda: snp.ones(-5), lambda: stagec.jit(lambda: snp.ones(-5))(),
                                  lambda: snp.zeros((2, -1))])
def test_negative_dimensions_raise_a_clear_error(make):
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        make()


def test_the_array_methods_jax_arrays_have_match_numpy():
    # conj/real/imag/diagonal/trace/nonzero/ptp/searchsorted/itemsize/nbytes/copy, on Arrays and under jit.
    x = (np.arange(12.0).reshape(3, 4) - 5).astype(np.float32)
    z = (x + 1j * x[::-1]).astype(np.complex64)
    s = np.sort(x.ravel())

    def use(a, c, srt):
        return (a.copy(), a.diagonal(1), a.trace(), a.ptp(0), srt.searchsorted(np.float32(0.5)), c.conj(),
                c.conjugate(), c.real, c.imag, a.nonzero(size=12)[1], a.itemsize, a.nbytes)
    want = (x, x.diagonal(1), x.trace(), np.ptp(x, 0), s.searchsorted(0.5), z.conj(), z.conjugate(), z.real, z.imag,
            np.nonzero(x)[1].tolist() + [0], 4, 48)  # (nonzero's size=12: padded with 0, as in JAX)
    for got in (use(snp.asarray(x), snp.asarray(z), snp.asarray(s)), stagec.jit(use)(x, z, s)):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_array_methods_take_jaxs_keywords_and_pythons_divmod_round_and_view():
    """Methods take what JAX's do (initial=, where=, descending=, ...: they raised a TypeError), `divmod(x, k)`,
    `round(x)` (an integer array where ndigits is None, as JAX's), and `x.view(dtype)`. Against NumPy."""
    x = np.array([1.5, -2.0, 3.0, 0.25], np.float32)
    i = np.array([7, -8, 9, 3], np.int32)

    def use(a, k):
        return (a.max(initial=10.0), a.min(where=a > 0, initial=5.0), a.prod(where=a > 0), a.sum(axis=0, initial=1.0),
                a.argsort(descending=True), a.sort(descending=True), a.mean(where=a > 0), a.std(ddof=1),
                a.any(where=a > 2), *divmod(k, 4), *divmod(17, k), round(a[0]), round(a, 1), a.view(np.int32),
                a.view(np.uint16), k.view(np.float32), k.view(np.int8)[:4])
    want = (np.float32(10), np.float32(0.25), np.float32(1.125), np.float32(3.75), np.array([2, 0, 3, 1]),
            np.array([3.0, 1.5, 0.25, -2.0], np.float32), np.float32(4.75 / 3), np.float32(np.std(x, ddof=1)), True,
            *divmod(i, 4), *divmod(17, i), 2, np.round(x, 1), x.view(np.int32), x.view(np.uint16), i.view(np.float32),
            i.view(np.int8)[:4])
    for got in (use(snp.asarray(x), snp.asarray(i)), stagec.jit(use)(x, i)):
        for k, (g, w) in enumerate(zip(got, want)):
            g, wd = np.asarray(g), np.asarray(w).dtype  # (NumPy's 64-bit defaults are JAX's 32-bit ones)
            assert g.dtype == {np.dtype(np.int64): np.int32, np.dtype(np.float64): np.float32}.get(wd, wd), (k, g.dtype)
            np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=str(k))
    with pytest.raises(NotImplementedError, match="view from float32 to bool"):
        snp.asarray(x).view(bool)


def test_arange_takes_the_type_of_its_bounds_as_jax():
    """arange took the default int or float whatever its bounds (np.int8 bounds give int8 in JAX, np.float16 ones
    float16). Stored from JAX 0.10.2, values against NumPy."""
    got = [snp.arange(np.int8(7), np.int8(120), 40), snp.arange(np.int8(5)), snp.arange(np.uint8(2), 10),
           snp.arange(np.int16(2), 10.0), snp.arange(2, np.int8(10)), snp.arange(np.float16(1), 3),
           snp.arange(snp.asarray(3, snp.int8)), snp.arange(3), snp.arange(2.5), snp.arange(True, 3)]
    want = ["int8", "int8", "uint8", "float32", "int8", "float16", "int8", "int32", "float32", "int32"]
    assert [str(g.dtype) for g in got] == want
    np.testing.assert_array_equal(np.asarray(got[0]), [7, 47, 87])
    np.testing.assert_array_equal(np.asarray(stagec.jit(lambda: snp.arange(np.int8(7), np.int8(120), 40))()),
                                  [7, 47, 87])


def test_append_and_polyval_promote_a_python_scalar_weakly():
    """append(int8 x, 1) and polyval(float16 p, 2.0) made the Python scalar a strong int32/float32 array first (so
    int32 and float32); JAX keeps int8 and float16. Stored from JAX 0.10.2, values against NumPy."""
    i8, p16 = np.array([1, -2], np.int8), np.array([1, 2, 3], np.float16)

    def use(x, p):
        return (snp.append(x, 1), snp.append(2.5, p), snp.polyval(p, 2.0), snp.polyval(x, 1),
                snp.polyval(p, np.float32(2)))
    for a, b, v, w, u in (use(i8, p16), stagec.jit(use)(i8, p16)):
        assert a.dtype == np.int8 and np.asarray(a).tolist() == [1, -2, 1]
        assert b.dtype == np.float16 and v.dtype == np.float16 and float(v) == 11.0
        assert w.dtype == np.int8 and u.dtype == np.float32
