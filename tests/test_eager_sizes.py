"""Which eager calls share one shape-polymorphic kernel: dimensions of size 1 are dynamic as others (not
broadcast_in_dim's operand, whose size-1 dimensions are the expanding ones), and conversions to integers and
bool, the sign of unsigned integers and complex rsqrt build their constants at the operand's run-time shape. The
values are checked against NumPy, the conversions against XLA's rule (toward zero, saturated, NaN to 0)."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import eager, lax

pytestmark = pytest.mark.cpu_only  # (polymorphic eager kernels are the CPU backend's)


@pytest.fixture(autouse=True)
def kernels():
    """Every operation through its compiled kernel, polymorphic ones on (the default)."""
    old = stagec.config.eager_tiering, stagec.config.eager_polymorphic
    stagec.config.update("eager_tiering", "never")
    stagec.config.update("eager_polymorphic", True)
    yield
    stagec.config.update("eager_tiering", old[0])
    stagec.config.update("eager_polymorphic", old[1])


def _to_int(x: np.ndarray, dtype) -> np.ndarray:
    """XLA's float -> integer, in float64: toward zero, saturated at the type's bounds, NaN to 0."""
    info = np.iinfo(dtype)
    v = np.trunc(np.real(x).astype(np.float64))
    return np.where(np.isnan(v), 0, np.clip(v, info.min, info.max)).astype(dtype)


def _values(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape) * 400
    flat = v.reshape(-1)
    flat[: 4] = [np.nan, 3e9, -3e9, -0.7][: flat.size]  # (NaN, past both bounds, toward zero)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dtype)


SHAPES = [(3, 4), (2, 7), (1, 5), (4, 1), (1, 1)]


@pytest.mark.parametrize("src,dst", [(np.float32, np.int32), (np.float32, np.uint8), (np.float32, np.bool_),
                                     (np.float16, np.int16), (np.complex64, np.int32)])
def test_conversions_to_integers_and_bool_take_one_kernel_for_every_shape(src, dst):
    stagec.wait_for_compiles()  # (an earlier test's kernel landing after the clear: a GPU run's first test here)
    stagec.clear_caches()
    before = None
    for k, shape in enumerate(SHAPES):
        x = _values(shape, src, k)
        with np.errstate(invalid="ignore", over="ignore"):
            got = np.asarray(lax.convert_element_type(snp.asarray(x), dst))
            want = (x != 0) if dst is np.bool_ else _to_int(x, dst)
        np.testing.assert_array_equal(got, want, err_msg=f"{src.__name__} -> {dst.__name__} {shape}")
        assert got.dtype == dst
        if before is None:
            before = eager.stats["compiles"]
    assert eager.stats["compiles"] == before, "a new shape compiled another conversion kernel"
    assert eager.kernels() == [("convert_element_type", "polymorphic")]


def test_sign_of_unsigned_and_complex_rsqrt_take_one_kernel_for_every_shape():
    stagec.clear_caches()
    for k, shape in enumerate(SHAPES):
        u = np.random.default_rng(k).integers(0, 3, shape).astype(np.uint32)
        np.testing.assert_array_equal(np.asarray(lax.sign(snp.asarray(u))), np.sign(u))
        z = _values(shape, np.complex64, k)
        z = np.where(np.isfinite(z), z, 2.5 - 1j).astype(np.complex64)
        want = 1 / np.sqrt(z.astype(np.complex128))
        got = np.asarray(lax.rsqrt(snp.asarray(z)))
        assert got.dtype == np.complex64
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(np.float32).eps, err_msg=str(shape))
    assert sorted(eager.kernels()) == [("rsqrt", "polymorphic"), ("sign", "polymorphic")]


def test_unit_dimensions_share_the_kernel_of_longer_ones():
    stagec.clear_caches()
    rng = np.random.default_rng(0)
    first = None
    for shape in [(3, 4), (1, 4), (3, 1), (1, 1)]:
        a, b = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
        np.testing.assert_array_equal(np.asarray(snp.asarray(a) + snp.asarray(b)), a + b)
        np.testing.assert_allclose(np.asarray(snp.exp(snp.asarray(a))), np.exp(a.astype(np.float64)), rtol=3e-7)
        np.testing.assert_array_equal(np.asarray(snp.max(snp.asarray(a), axis=0)), a.max(axis=0))
        np.testing.assert_array_equal(np.asarray(snp.asarray(a).T), a.T)
        if first is None:
            first = eager.stats["compiles"]
    v = rng.standard_normal(5).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(snp.negative(snp.asarray(v))), -v)
    after_first_vector = eager.stats["compiles"]
    np.testing.assert_array_equal(np.asarray(snp.negative(snp.asarray(v[:1]))), -v[:1])
    assert eager.stats["compiles"] == after_first_vector, "a 1-element vector compiled its own kernel"
    assert eager.stats["compiles"] == first + 1, "a unit dimension compiled its own kernel"
    assert all(kind == "polymorphic" for _, kind in eager.kernels()), eager.kernels()


def test_broadcasts_of_unit_dimensions_keep_them_static():
    # (broadcast_in_dim's operand: a size-1 dimension there is an expanding one, static in its kernel's key; a
    # dynamic one would let (1, 4) -> (3, 4)'s kernel serve a (3, 4) operand)
    stagec.clear_caches()
    for shape, to in [((1, 4), (3, 4)), ((3, 1), (3, 5)), ((2, 3), (4, 2, 3))]:
        a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        dims = tuple(range(len(to) - len(shape), len(to)))
        np.testing.assert_array_equal(np.asarray(lax.broadcast_in_dim(snp.asarray(a), to, dims)), np.broadcast_to(a, to))
    operands = sorted(key[2][0].shape for key in eager._cache if key[0].name == "broadcast_in_dim")
    assert operands == [(-1, -1), (-1, 1), (1, -1)], operands


def test_the_default_eager_tiering_compiles_one_division_kernel_per_rank():
    """As users run (`eager_tiering` "exact"): integer division, which has no NumPy rule (NumPy and IREE disagree on
    zero divisors), compiles one polymorphic kernel per rank and dtype over lengths and unit dimensions (before:
    one per shape). (Float -> integer conversions, this test's operation until they took their NumPy rule, no
    longer compile small kernels.)"""
    stagec.config.update("eager_tiering", "exact")
    stagec.clear_caches()
    rng = np.random.default_rng(7)
    for shape in [(3, 40), (1, 40), (2, 45), (40, 1), (1, 1)]:
        for dt in (np.int32, np.int8):
            a = rng.integers(-100, 100, shape).astype(dt)
            b = (rng.integers(1, 9, shape) * rng.choice([-1, 1], shape)).astype(dt)
            want = np.abs(a.astype(np.int64)) // np.abs(b) * np.sign(a.astype(np.int64) * b)  # (toward zero)
            np.testing.assert_array_equal(np.asarray(lax.div(snp.asarray(a), snp.asarray(b))), want,
                                          err_msg=f"{shape} {dt}")
    eager.wait_for_kernels()
    assert eager.kernels() == [("div", "polymorphic")] * 2, eager.kernels()
