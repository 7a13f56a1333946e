"""Sorts return their operands' bits: float keys compare by their bits (`reductions._float_key`), never as floats
in a kernel that flushes subnormals. float32 keys went through float64 and came back with subnormals as signed
zeros (sort([3, 1e-40, -1e-40, 2]) was [-0, 0, 2, 3]; NumPy and JAX keep them), and `unique` then gave unsorted
duplicates. NumPy is the oracle: its order (NaN last, -0.0 tying 0.0, subnormals ordered), stable, bit for bit."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import lax
from stagec.compiler.targets import device_names
from stagec.passes.legalize import SORT_MIN_LENGTH

SPECIAL = [3.0, 1e-40, -1e-40, 2.0, 0.0, -0.0, np.nan, -np.inf, 1e-45, -1e-45, np.inf, 1e-40, -3.0]


def _row(n: int, dtype, seed: int = 0) -> np.ndarray:
    """`n` values: the special ones (subnormals of `dtype` among them) then random normals and subnormals."""
    tiny = float(ml_dtypes.finfo(dtype).tiny)
    r = np.random.default_rng(seed)
    rest = r.standard_normal(max(0, n - len(SPECIAL))) * np.where(r.random(max(0, n - len(SPECIAL))) < 0.5, tiny, 1)
    special = [v if abs(v) >= 1e-30 or v == 0 else v / 1e-40 * tiny / 4 for v in SPECIAL]
    return np.array((special + list(rest))[:n]).astype(dtype)


def _bits(a) -> np.ndarray:
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def _same(got, want: np.ndarray) -> None:
    """Equal bits, NaNs aside (any NaN for a NaN: a negated NaN's sign is not kept everywhere)."""
    got = np.asarray(got)
    nan = np.isnan(want.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float32)), nan)
    np.testing.assert_array_equal(_bits(got)[~nan], _bits(want)[~nan])


def _sorted(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """NumPy's stable sort of `x`'s values, as bits of `x`'s dtype (bfloat16 through its exact float32)."""
    order = np.argsort(x.astype(np.float32), axis=axis, kind="stable")
    return np.take_along_axis(x, order, axis)


BACKENDS = ["cpu", pytest.param("vulkan", marks=pytest.mark.skipif(
    not device_names("vulkan"), reason="no Vulkan device: apt-get install mesa-vulkan-drivers libvulkan1"))]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [13, SORT_MIN_LENGTH + 5])  # (short rows: IREE's sort; long: the CPU calls NumPy)
def test_sorts_keep_subnormals_and_order_them_as_numpy(backend, n):
    dts = [np.float32, np.float16, ml_dtypes.bfloat16]
    xs = [_row(n, dt, seed=n) for dt in dts]
    f = stagec.jit(lambda vs: [(snp.sort(v), snp.argsort(v), lax.sort((v, -v), num_keys=1)[1],
                                snp.sort(v, descending=True)) for v in vs], backend=backend)
    for x, (s, a, payload, down) in zip(xs, f(xs)):
        want = _sorted(x)
        np.testing.assert_array_equal(_bits(s), _bits(want))
        np.testing.assert_array_equal(np.asarray(a), np.argsort(x.astype(np.float32), kind="stable"))
        _same(payload, (-x)[np.argsort(x.astype(np.float32), kind="stable")])
        # (descending: NaN first as JAX, stable among ties as NumPy's order reversed)
        np.testing.assert_array_equal(np.isnan(np.asarray(down, np.float32)), np.isnan(want[::-1].astype(np.float32)))
        np.testing.assert_array_equal(np.asarray(down, np.float32)[1:], want[::-1].astype(np.float32)[1:])


def test_eager_sorts_and_set_operations_of_subnormals():
    """The default path (eager: NumPy's rule or the kernel) and jit give NumPy's bits."""
    x = _row(13, np.float32)
    for f in (snp.sort, stagec.jit(snp.sort)):
        np.testing.assert_array_equal(_bits(f(x)), _bits(np.sort(x, kind="stable")))
    k, v = lax.sort((x, np.arange(13, dtype=np.float32)), num_keys=1)
    np.testing.assert_array_equal(np.asarray(v), np.argsort(x, kind="stable").astype(np.float32))
    a = np.array([0, 1e-40, 0, 1e-40, 2, -1e-40, -0.0], np.float32)
    np.testing.assert_array_equal(_bits(snp.unique(a)), _bits(np.unique(a)))
    np.testing.assert_array_equal(_bits(snp.union1d(a, a[:3])), _bits(np.union1d(a, a[:3])))
    np.testing.assert_array_equal(_bits(snp.setxor1d(a, a[:2])), _bits(np.setxor1d(a, a[:2])))
    assert np.asarray(snp.intersect1d(np.array([-2.0], np.float32), a)).size == 0
    p = np.asarray(snp.partition(a, 3))
    assert np.all(p[:3] <= p[3]) and np.all(p[4:] >= p[3]) and sorted(_bits(p).tolist()) == sorted(_bits(a).tolist())


@pytest.mark.parametrize("backend", BACKENDS)
def test_integer_sorts_of_every_width_leave_their_arguments_as_they_were(backend):
    """int32 and float32 bits sort as themselves (IREE sorts in place: `legalize.sorts_apart` copies an argument),
    uint32 as int32 with its top bit flipped, narrower ones in int32: no int64, whose SPIR-V sorts of 64, 128 and 256
    values failed to compile ("failed to legalize 'vector.broadcast'")."""
    put = lambda a: stagec.device_put(a, stagec.devices(backend)[0])
    rng = np.random.default_rng(3)
    for dt in (np.int32, np.uint32, np.int16, np.uint8, np.float32):
        for n in (64, 256):
            x = (rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(np.int32).astype(dt)
                 if dt != np.float32 else rng.standard_normal(n).astype(dt))
            a = put(x)
            f = stagec.jit(lambda v: (lax.sort(v), snp.argsort(v)), backend=backend)
            for _ in range(2):
                s, i = f(a)
                np.testing.assert_array_equal(np.asarray(s), np.sort(x))
                np.testing.assert_array_equal(np.asarray(i), np.argsort(x, kind="stable"))
            assert a._backend.get(a._bv, a.aval).tobytes() == x.tobytes()  # (the device buffer, not a host copy)
