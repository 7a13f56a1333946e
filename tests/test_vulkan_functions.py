"""Functions whose Vulkan lowering (IREE 3.13, lavapipe here) differed from the CPU's (issue 38's sweep): each on the
default backend and on Vulkan, against NumPy."""
import math

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec.scipy import special


def _backends():
    from stagec.compiler.targets import device_names
    return ["cpu", pytest.param("vulkan", marks=pytest.mark.skipif(
        not device_names("vulkan"), reason="no Vulkan device: apt-get install mesa-vulkan-drivers libvulkan1"))]


@pytest.mark.parametrize("backend", _backends())
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_fmod_is_exact(backend, dtype):
    # Vulkan's float32 remainder was x - y trunc(x / y) in float32: fmod(825.51117, 249.29161) gave 77.63635 (77.63634),
    # 2e3 ulps of the result over [-1e3, 1e3]; fmod is exact (the result is representable): mathlib's `_fmod`
    rng = np.random.default_rng(0)
    fi, n = np.finfo(dtype), 3000
    lo, hi = np.log2(float(fi.smallest_normal)), np.log2(float(fi.max)) - 1
    mag = lambda: 2.0 ** rng.uniform(lo, hi, n) * rng.choice([-1, 1], n)  # noqa: E731
    sp = np.array([0, -0.0, 1, -1, 2.5, -3, math.inf, -math.inf, math.nan, float(fi.max), float(fi.smallest_normal)])
    x = np.concatenate([mag(), rng.uniform(-1e3, 1e3, n), [825.51117], np.repeat(sp, len(sp))]).astype(dtype)
    y = np.concatenate([mag(), rng.uniform(-1e3, 1e3, n), [249.29161], np.tile(sp, len(sp))]).astype(dtype)
    got = np.asarray(stagec.jit(snp.fmod, backend=backend)(x, y))
    with np.errstate(all="ignore"):
        want = np.fmod(x, y)
    same = ((got == want) & (np.signbit(got) == np.signbit(want))) | (np.isnan(got) & np.isnan(want))
    assert same.all(), list(zip(x[~same], y[~same], got[~same], want[~same]))[:5]


@pytest.mark.parametrize("backend", _backends())
def test_logaddexp2_keeps_float16(backend):
    # ln 2 was a NumPy float64 scalar (not weak): float16 operands gave a float32 result
    rng = np.random.default_rng(1)
    x, y = (rng.uniform(-20, 20, 2000).astype(np.float16) for _ in range(2))
    got = np.asarray(stagec.jit(snp.logaddexp2, backend=backend)(x, y))
    assert got.dtype == np.float16
    want = np.logaddexp2(x.astype(np.float64), y.astype(np.float64))
    # (in ulps of the larger operand: near a zero of the result the float16 steps lose its digits, as JAX's)
    scale = np.maximum(np.maximum(np.abs(x), np.abs(y)), np.abs(want).astype(np.float16))
    assert (np.abs(got - want) / np.spacing(scale).astype(np.float64)).max() <= 2



@pytest.mark.parametrize("backend", _backends())
def test_erfc_and_ndtr_tails(backend):
    # float32 erfc and ndtr where e^(-x^2) and ndtr's split of x / sqrt(2) matter (within 7.6 ulps on both before
    # 2026-11-26's faster forms; JAX 62 and 242). Rounding by x + 1.5 2^23 - 1.5 2^23 is folded to x on lavapipe:
    # ndtr's split done so was 148 ulps at -12.8 there, and erfc's 2^k 7e6.
    sp = pytest.importorskip("scipy.special")
    x = np.concatenate([np.linspace(-12.8, -3, 20001), np.linspace(-3, 9, 10001)]).astype(np.float32)  # (normal results)
    z = np.linspace(-1, 9.1, 20001).astype(np.float32)
    for name, fn, a, ref in (("ndtr", special.ndtr, x, sp.ndtr(x.astype(np.float64))),
                             ("erfc", special.erfc, z, sp.erfc(z.astype(np.float64)))):
        got = np.asarray(stagec.jit(fn, backend=backend)(a))
        ulps = np.abs(got - ref) / np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
        assert ulps.max() <= 9, (name, a[np.argmax(ulps)], ulps.max())
