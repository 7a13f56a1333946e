"""Long sorts of CPU modules call NumPy's stable sort (`legalize.host_sorts`, `host._sort_module`): IREE 3.13's
CPU sort compares every pair of a row. Results agree with NumPy: NaN last, ties in order, several keys, any
payload, any axis; short rows stay IREE's; with host calls off (`config.cpu_blas`) a module imports none."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import host, lax
from stagec.passes.legalize import SORT_MIN_LENGTH

pytestmark = pytest.mark.cpu_only  # (the CPU's host sorts; GPUs sort in IREE: tests/test_numpy.py and others)
rng = np.random.default_rng(11)
LONG = SORT_MIN_LENGTH + 72


def _imports(f, *args) -> list[str]:
    return host._numpy_imports(stagec.jit(f).lower(*args).compile().artifact.vmfb)


def test_float_rows_with_nan_zeros_and_ties_sort_as_numpy():
    x = rng.integers(-3, 4, (5, LONG)).astype(np.float32)
    x[:, ::9], x[:, 1::11], x[:, 2::13] = np.nan, -0.0, np.inf
    f = lambda v: (snp.sort(v, 1), snp.argsort(v, 1), snp.sort(v.T, 0))
    assert _imports(f, x) == ["sort"]
    s, a, t = stagec.jit(f)(x)
    np.testing.assert_array_equal(np.asarray(s), np.sort(x, 1))
    np.testing.assert_array_equal(np.asarray(a), np.argsort(x, 1, kind="stable"))  # (ties in order: stable)
    np.testing.assert_array_equal(np.asarray(t), np.sort(x.T, 0))


OTHER_DTYPES = [np.int32, np.bool_, np.float16, np.uint8]


@functools.cache
def _other_dtypes() -> tuple:
    """(inputs, their sorts and argsorts) of every OTHER_DTYPES, jitted in one module (one compile, not four)."""
    r = np.random.default_rng(12)
    xs = [(r.integers(0, 7, (3, LONG)) if dt != np.float16 else r.standard_normal((3, LONG))).astype(dt)
          for dt in OTHER_DTYPES]
    return xs, stagec.jit(lambda vs: [(snp.sort(v, -1), snp.argsort(v, -1)) for v in vs])(xs)


@pytest.mark.parametrize("dtype", OTHER_DTYPES)
def test_other_dtypes(dtype):
    xs, got = _other_dtypes()
    x, (s, a) = xs[OTHER_DTYPES.index(dtype)], got[OTHER_DTYPES.index(dtype)]
    assert s.dtype == dtype
    np.testing.assert_array_equal(np.asarray(s), np.sort(x, -1))
    np.testing.assert_array_equal(np.asarray(a), np.argsort(x, -1, kind="stable"))


def test_several_keys_and_payloads():
    k1, k2 = rng.integers(0, 3, LONG).astype(np.int32), rng.integers(0, 4, LONG).astype(np.float32)
    c = (rng.standard_normal(LONG) + 1j * rng.standard_normal(LONG)).astype(np.complex64)
    f = lambda a, b, c: lax.sort((a, b, c, snp.arange(LONG)), num_keys=2)
    assert _imports(f, k1, k2, c) == ["sort"]
    got = stagec.jit(f)(k1, k2, c)
    order = np.lexsort((k2, k1))
    for g, want in zip(got, (k1[order], k2[order], c[order], order)):
        np.testing.assert_array_equal(np.asarray(g), want)
    np.testing.assert_array_equal(np.asarray(stagec.jit(snp.sort)(c)), np.sort(c))  # (complex: two float keys)


def test_64_bit_keys(x64):
    xs = []
    for dt in (np.int64, np.float64, np.uint64):  # (uint64 keys stay IREE's: the host reads keys as signed)
        xs.append(rng.integers(0, 1000, LONG).astype(dt))
        if dt == np.uint64:
            xs[-1][::5] = np.uint64(2 ** 63 + 7)
    got = stagec.jit(lambda vs: [(snp.sort(v), snp.argsort(v)) for v in vs])(xs)  # (one module)
    for x, (s, a) in zip(xs, got):
        assert s.dtype == x.dtype
        np.testing.assert_array_equal(np.asarray(s), np.sort(x))
        np.testing.assert_array_equal(np.asarray(a), np.argsort(x, kind="stable"))


def test_short_rows_stay_in_iree_and_host_calls_off_import_nothing():
    short = rng.standard_normal((4, SORT_MIN_LENGTH - 1)).astype(np.float32)
    assert _imports(lambda v: snp.sort(v, 1), short) == []
    x = rng.standard_normal(LONG).astype(np.float32)
    stagec.config.update("cpu_blas", False)
    try:
        assert _imports(snp.sort, x) == []  # (an artifact IREE's own tools can run)
        off = np.asarray(stagec.jit(snp.sort)(x))
    finally:
        stagec.config.update("cpu_blas", True)
    np.testing.assert_array_equal(off, np.sort(x))


def test_long_sort_in_vmap_grad_eager_and_a_saved_artifact(tmp_path):
    m = rng.standard_normal((3, LONG, 2)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(stagec.vmap(lambda v: snp.sort(v, 1), in_axes=2)(m)),
                                  np.moveaxis(np.sort(m, 1), 2, 0))
    x = rng.standard_normal(LONG).astype(np.float32)
    w = np.arange(LONG, dtype=np.float32)
    g = stagec.jit(stagec.grad(lambda v: (snp.sort(v) * w).sum()))(x)
    np.testing.assert_array_equal(np.asarray(g), w[np.argsort(np.argsort(x))])  # each value's weight: its rank
    np.testing.assert_array_equal(np.asarray(snp.sort(x)), np.sort(x))  # (eager)
    path = tmp_path / "s.stagec"
    stagec.jit(snp.argsort).lower(x).compile().save(path, host_modules=True)  # (it calls NumPy's sort)
    np.testing.assert_array_equal(np.asarray(stagec.load(path)(x)), np.argsort(x, kind="stable"))


def test_a_million_values():
    """IREE's sort would compare ~5*10^11 pairs (hours); NumPy's takes milliseconds."""
    x = rng.standard_normal(1_000_000).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(stagec.jit(snp.sort)(x)), np.sort(x))


def _backends():
    from stagec.compiler.targets import device_names
    return ["cpu", pytest.param("vulkan", marks=pytest.mark.skipif(
        not device_names("vulkan"), reason="no Vulkan device: apt-get install mesa-vulkan-drivers libvulkan1"))]


@pytest.mark.parametrize("backend", _backends())
def test_two_sorts_of_one_constant_expression(backend):
    """Two sorts of a closed-over array in one module share its iota (`legalize.sorts_apart`): IREE 3.13 sorted the
    shared buffer in place, so the second sort read the first's permutation (wrong values, no error)."""
    c = np.array([5, 4, 2, 4, 3, 1, 0, 4], np.float32)
    f = stagec.jit(lambda y: (snp.argsort(snp.asarray(c)), snp.argsort(snp.asarray(c) * 2 + 1),
                              lax.top_k(-snp.asarray(c), 3)[0], lax.top_k(snp.asarray(c), 5)[0]), backend=backend)
    for _ in range(3):  # (NVIDIA's Vulkan once reused a hoisted iota sorted in place from the second call on)
        a, b, t3, t5 = (np.asarray(v) for v in f(1))
        np.testing.assert_array_equal(a, np.argsort(c, kind="stable"))
        np.testing.assert_array_equal(b, np.argsort(c * 2 + 1, kind="stable"))
        np.testing.assert_array_equal(t3, -np.sort(c)[:3])
        np.testing.assert_array_equal(t5, np.sort(c)[::-1][:5])


def _device_bits(a) -> list:
    """The values in an Array's device buffer (not its kept host copy)."""
    return a._backend.get(a._bv, a.aval).tolist()


@pytest.mark.parametrize("backend", _backends())
def test_sorts_under_x64_leave_their_64_bit_arguments_as_they_were(backend, x64):
    """IREE 3.13 sorts its operands in place. A 64-bit operand had no copy but a `select(x == 1, 1, x)` that IREE
    folds, so under `enable_x64` `jit(lax.sort)` of an int64 array sorted the caller's buffer, and a payload of
    int64 indices came back permuted by the previous call; the eager composite `argpartition`, whose iota is a
    constant passed to the sort's kernel, gave another answer each call. `legalize.sorts_apart` copies an argument
    (or a reshape or slice of one)."""
    put = functools.partial(stagec.device_put, device=stagec.devices(backend)[0])
    keys = rng.permutation(7).astype(np.int64) - 3
    x, i = put(keys.astype(np.float64) / 2), put(np.arange(7, dtype=np.int64))
    k, m = put(keys), put(np.arange(14, dtype=np.int64)[::-1].copy())
    want_keys, want_idx = np.sort(keys), np.argsort(keys, kind="stable")
    jit = functools.partial(stagec.jit, backend=backend)
    calls = [(jit(lambda x, i: lax.sort((x, i), num_keys=1)[1]), (x, i), want_idx),
             (lambda x, i: lax.sort((x, i), num_keys=1)[1], (x, i), want_idx),
             (jit(lax.sort), (k,), want_keys),
             (jit(lambda m: lax.sort(m[2:9])), (m,), np.sort(np.arange(14)[::-1][2:9])),
             (jit(lambda m: lax.sort(m.reshape(2, 7), dimension=1)), (m,), np.sort(np.arange(14)[::-1].reshape(2, 7), 1))]
    for f, args, want in calls:
        before = [_device_bits(a) for a in args]
        for _ in range(3):
            np.testing.assert_array_equal(np.asarray(f(*args)), want)
        assert [_device_bits(a) for a in args] == before
    if backend == "cpu":  # (eager composites run on the default backend)
        got = [np.asarray(snp.argpartition(x, 0))[0] for _ in range(6)]
        assert got == [int(np.argmin(keys))] * 6


@pytest.mark.parametrize("backend", _backends())
def test_two_argsorts_under_x64_give_the_right_indices_on_every_call(backend, x64):
    """Under `enable_x64` argsort's indices are int64 and the shared iota reaches both sorts through a `select`, not
    a `convert`: with a barrier on it alone IREE 3.13 sorted the hoisted iota in place, so every call but the
    first gave wrong indices, and a tangent through `take_along_axis` with them (`legalize.sorts_apart`)."""
    f = stagec.jit(lambda x: (snp.argsort(x, axis=1), snp.argsort(-x, axis=1),
                              snp.take_along_axis(x, snp.argsort(x, axis=1), axis=1)), backend=backend)
    rng = np.random.default_rng(1)
    dtypes = [np.float32] if backend == "vulkan" else [np.float32, np.float64]  # (lavapipe: no float64 sorts here)
    for dt in dtypes:
        for _ in range(4):
            x = rng.uniform(-2, 2, (3, 5)).astype(dt)
            a, b, s = (np.asarray(v) for v in f(x))
            assert a.dtype == np.int64
            np.testing.assert_array_equal(a, np.argsort(x, axis=1, kind="stable"))
            np.testing.assert_array_equal(b, np.argsort(-x, axis=1, kind="stable"))
            np.testing.assert_array_equal(s, np.sort(x, axis=1))
