"""Eager kernels: shape-polymorphic modules give the same bits as shape-specific ones, for every dtype, empty and
0-d arrays; a new length reuses a module; reshape is a view; big calls keep shape-specific modules."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import dtypes as _dt
from stagec import eager
from threads import run_at_once

pytestmark = pytest.mark.cpu_only  # (polymorphic eager kernels are the CPU backend's; elsewhere all are per shape)

WIDE = [_dt.int64, _dt.uint64, _dt.float64, _dt.complex128]  # need enable_x64
NARROW = [d for d in _dt.SUPPORTED if d not in WIDE]


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape) * 3
    if _dt.kind(dtype) == "c":
        v = v + 1j * rng.standard_normal(shape)
    if _dt.kind(dtype) == "u":
        v = np.abs(v)
    return np.asarray(v).astype(dtype)


@pytest.fixture(autouse=True)
def kernels_only():
    """Every operation through its compiled kernel (`eager_tiering` "never"): this file tests the kernels themselves
    (the default's NumPy rules and background compiles: tests/test_eager_dispatch.py)."""
    old = stagec.config.eager_tiering
    stagec.config.update("eager_tiering", "never")
    yield
    stagec.config.update("eager_tiering", old)


@pytest.fixture
def polymorphic():
    """Run `f` with and without polymorphic kernels; returns both results as NumPy arrays."""
    old = stagec.config.eager_polymorphic

    def run(f, *args):
        out = []
        for on in (True, False):
            stagec.config.update("eager_polymorphic", on)
            out.append(np.asarray(f(*[snp.asarray(a) for a in args])))
        stagec.config.update("eager_polymorphic", old)
        return out
    yield run
    stagec.config.update("eager_polymorphic", old)


def same_bits(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes(), (a, b)


OPS = {"add": lambda x: x + x, "mul scalar": lambda x: x * 2, "sum axis 0": lambda x: snp.sum(x, axis=0)}


def check(dtype, polymorphic, shapes):
    """`polymorphic`: the fixture, which restores the setting. The kernels of the polymorphic run are read before
    the shape-specific run (one compile of each, not a third run to read them)."""
    for name, f in OPS.items():
        for shape in shapes:
            if name == "sum axis 0" and shape == ():
                continue
            x = sample(shape, dtype)
            stagec.wait_for_compiles()  # (kernels an earlier test queued in the background would land after the clear)
            stagec.clear_caches()
            stagec.config.update("eager_polymorphic", True)
            got = np.asarray(f(snp.asarray(x)))
            kinds = {k for _, k in eager.kernels()}
            stagec.config.update("eager_polymorphic", False)
            same_bits(got, np.asarray(f(snp.asarray(x))))
            if shape == (2, 3):  # every dimension dynamic: computed by polymorphic kernels only
                assert kinds == {"polymorphic"}, (name, eager.kernels())
            elif shape == ():  # nothing to make dynamic: the shape-specific kernels
                assert kinds <= {"static"}, (name, eager.kernels())


@pytest.mark.parametrize("dtype", NARROW, ids=str)
def test_same_bits_every_dtype(dtype, polymorphic):
    check(dtype, polymorphic, [(2, 3)])


@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_same_bits_every_wide_dtype(dtype, polymorphic, x64):
    check(dtype, polymorphic, [(2, 3)])


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float32, np.complex64], ids=str)
def test_same_bits_empty_and_0d(dtype, polymorphic):
    check(dtype, polymorphic, [(0, 3), (3, 0), ()])


@pytest.mark.parametrize("name,f", [
    ("exp", snp.exp), ("tanh", snp.tanh), ("sin", snp.sin), ("log1p abs", lambda x: snp.log1p(snp.abs(x))),
    ("pow", lambda x: x ** 3.5), ("div", lambda x: x / (x * x + 1)), ("max axis 1", lambda x: snp.max(x, axis=1)),
    ("mean", snp.mean), ("where", lambda x: snp.where(x > 0, x, -x)), ("transpose", lambda x: x.T + 1),
    ("clip", lambda x: snp.clip(x, -1.0, 1.0)), ("astype bool", lambda x: x.astype(bool))])
def test_same_bits_float32(name, f, polymorphic):
    x = sample((37, 129), np.float32)
    x[0, :3] = [np.nan, np.inf, -0.0]
    got, want = polymorphic(f, x)
    same_bits(got, want)


def test_new_length_reuses_the_module():
    stagec.config.update("eager_polymorphic", True)
    f = lambda x: snp.sum(snp.exp(x) * x + 1.0)
    np.asarray(f(snp.asarray(sample(11, np.float32))))
    before = eager.stats["compiles"]
    for n in (2, 5, 300, 4097):
        x = sample(n, np.float32, seed=n)
        np.testing.assert_allclose(np.asarray(f(snp.asarray(x))), np.sum(np.exp(x) * x + 1), rtol=1e-5)
    assert eager.stats["compiles"] == before


def test_zero_dimensions_stay_static_and_unit_ones_take_the_polymorphic_kernel():
    stagec.config.update("eager_polymorphic", True)
    stagec.clear_caches()
    x = snp.asarray(sample((1, 4), np.float32))
    got = np.asarray(x + snp.asarray(sample((1, 4), np.float32, seed=1)))
    np.testing.assert_array_equal(got, sample((1, 4), np.float32) + sample((1, 4), np.float32, seed=1))
    np.testing.assert_array_equal(np.asarray(snp.asarray(np.float32(2)) * 3), np.float32(6))
    assert ("add", "polymorphic") in eager.kernels()
    empty = np.asarray(snp.exp(snp.zeros((0, 5))))
    assert empty.shape == (0, 5)


def test_big_calls_take_shape_specific_modules():
    stagec.config.update("eager_polymorphic", True)
    stagec.clear_caches()
    n = eager.POLYMORPHIC_MAX_ELEMENTS
    x = sample(n, np.float32)
    np.testing.assert_array_equal(np.asarray(snp.negative(snp.asarray(x))), -x)
    assert eager.kernels() == [("neg", "static")]


def test_a_polymorphic_lowering_that_needs_sizes_falls_back(monkeypatch):
    # A rule that builds a constant of the operand's shape (`lowering.full`) emits no dynamic module: the key
    # compiles per shape. (stagec's own rules build such constants with `lowering.fill`: tests/test_eager_sizes.py.)
    # Negation written as 0 - x here, so nothing it compiles may reach the persistent cache or outlive the test.
    from stagec import lowering as L
    from stagec.primitives import elementwise
    monkeypatch.setattr(elementwise.neg_p, "lowering", lambda ctx, x: [
        ctx.op1("stablehlo.subtract", [L.full(0, ctx.avals_in[0]), x])])
    old = stagec.config.persistent_cache
    stagec.config.update("persistent_cache", False)
    stagec.config.update("eager_polymorphic", True)
    stagec.clear_caches()
    try:
        x = np.array([0.5, 1.5, -2.0, 3.0, np.nan], np.float32)
        np.testing.assert_array_equal(np.asarray(snp.negative(snp.asarray(x))), -x)
        assert sorted(eager.kernels()) == [("neg", "per-shape"), ("neg", "static")]
    finally:
        stagec.clear_caches()
        stagec.config.update("persistent_cache", old)


def test_reshape_is_a_view_that_outlives_its_source():
    x = snp.asarray(np.arange(12, dtype=np.int16))
    before = eager.stats["compiles"]
    y = x.reshape(3, 4)
    z = snp.reshape(y, (2, 2, 3))
    x.delete()
    np.testing.assert_array_equal(np.asarray(z), np.arange(12, dtype=np.int16).reshape(2, 2, 3))
    np.testing.assert_array_equal(np.asarray(y.T), np.arange(12).reshape(3, 4).T)
    b = snp.asarray(np.array([True, False, True, True])).reshape(2, 2)
    np.testing.assert_array_equal(np.asarray(b), [[True, False], [True, True]])
    assert eager.stats["compiles"] - before <= 1  # only the transpose


def test_threads_share_one_polymorphic_module():
    stagec.config.update("eager_polymorphic", True)
    stagec.clear_caches()
    before = eager.stats["compiles"]
    xs = [sample(n, np.float32, seed=n) for n in (3, 9, 27, 81, 243, 729)]
    out: dict[int, np.ndarray] = {}

    def work(i):
        out[i] = np.asarray(snp.cosh(snp.asarray(xs[i])))
    assert not run_at_once(work, len(xs))
    for i, x in enumerate(xs):
        np.testing.assert_allclose(out[i], np.cosh(x), rtol=1e-5)
    assert eager.stats["compiles"] - before == 1


def test_the_compile_thread_outlives_a_job_that_raises_anything():
    """A background job that raises a BaseException (as a composite's compile under --fast's skip did), keyed by
    an object rather than a kernel's tuple, neither ends the compile thread nor leaves its key queued forever."""

    class Stop(BaseException):
        pass

    def boom():
        raise Stop("a job that raises what `except Exception` misses")

    key, done = object(), []
    assert eager._later.submit(key, boom)
    assert eager._later.wait(60)
    assert key in eager._later.failed
    assert eager._later.submit(("after the failure", id(key)), lambda: done.append(1))
    assert eager._later.wait(60) and done == [1]


def test_the_calls_seen_once_are_bounded_and_the_second_call_is_told(monkeypatch):
    """`eager._again`: False at a key's first call, True at its second; the keys seen once are bounded (oldest
    dropped: called again after that, a key counts as new) and emptied by `clear_cache`."""
    monkeypatch.setattr(eager, "ONCE_MAX", 8)
    eager.clear_cache()
    assert [eager._again(("k", i)) for i in range(20)] == [False] * 20
    assert len(eager._once) == 8
    assert eager._again(("k", 19)) and not eager._again(("k", 19))  # (told once, then new again)
    assert not eager._again(("k", 0))  # (dropped as the oldest)
    eager.clear_cache()
    assert not eager._once
