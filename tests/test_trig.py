"""sin, cos and tan against NumPy's float64 (glibc's, fully range-reduced) over every kind of float32 argument:
zeros, subnormals, multiples of pi/2 and their neighbours, 1e3 to the largest float, inf and NaN. Errors are in
float32 ulps of the exact value (relative even near the zeros: the reduction keeps them). Eager, jit, Vulkan,
float16/bfloat16 and float64 (x64)."""
from __future__ import annotations

import functools
import platform
import re

import ml_dtypes
import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec.compiler.targets import device_names

F32 = np.finfo(np.float32)
NAMES = ("sin", "cos", "tan")
# measured on every float32 in [0.5, 512) (float32 arithmetic): 0.87, 0.86, 2.54 (tan as one division since
# 2026-11-26: 1.23 before); in [512, 2^19) and above (float64 arithmetic): 0.60, 0.60, 0.80 (docs/accuracy.md)
ULPS = {"sin": 1.0, "cos": 1.0, "tan": 2.6}


def _trig(x):
    return snp.sin(x), snp.cos(x), snp.tan(x)


_JIT = stagec.jit(_trig)


def _sweep() -> np.ndarray:
    k = np.arange(1, 2000, dtype=np.float64)
    near = (np.concatenate([k, 10.0 ** np.arange(4, 30, 0.5)]) * (np.pi / 2)).astype(np.float32)
    big = np.logspace(3, 38.5, 700).astype(np.float32)
    bits = np.random.default_rng(0).integers(0, 0x7F800000, 20000).astype(np.uint32).view(np.float32)
    # the float32s >= 1 closest to a multiple of pi/2 (x * 2/pi within 2^-29.9 .. 2^-27.8 of an integer; found by
    # searching every float32 >= 1), first 7.729179e28 and 2.1999385e10
    hard = np.array([0x6F79BE45, 0x50A3E87F, 0x6FF9BE45, 0x5123E87F, 0x437CE5F1, 0x7079BE45, 0x6A1976F1, 0x53B146A6],
                    np.uint32).view(np.float32)
    special = np.array([0.0, 1e-45, 1e-40, F32.tiny, 1e-30, 2.0 ** -12, 2.0 ** -13, 1e-4, 0.5, 0.785398, 1.0,
                        3.1415927, 1e3, 1e5, 1e10, 1e30, F32.max], np.float32)
    pos = np.concatenate([special, near, np.nextafter(near, np.float32(np.inf)), np.nextafter(near, np.float32(0)),
                          big, bits, hard])
    return np.concatenate([pos, -pos])


X = _sweep()


def _ulp_errors(got, x, name: str, dtype=np.float32) -> np.ndarray:
    ref = getattr(np, name)(x.astype(np.float64))
    fin = ml_dtypes.finfo(dtype)
    with np.errstate(over="ignore", invalid="ignore"):  # past the largest float: the rounding is inf
        unit = np.spacing(np.clip(np.abs(ref), float(fin.tiny), float(fin.max)).astype(np.float32)).astype(np.float64)
        if dtype != np.float32:  # a narrow float's ulp: 2^(23 - its mantissa bits) float32 ulps
            unit = unit * 2.0 ** (23 - fin.nmant)
        err = np.abs(np.asarray(got).astype(np.float64) - ref) / unit
    return np.where(np.asarray(got) == ref.astype(dtype), 0.0, err)


def _check(results, x, where: str, dtype=np.float32, ulps=ULPS):
    for name, got in zip(NAMES, results):
        got = np.asarray(got)
        assert got.dtype == dtype, (where, name, got.dtype)
        err = _ulp_errors(got, x, name, dtype)
        i = int(np.argmax(err))
        assert err[i] <= ulps[name], f"{where} {name}({x[i]!r}) = {got[i]!r}: {err[i]:.2f} ulp"
        if name != "cos":  # sin and tan keep the sign of zero
            zeros = x == 0
            np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(x[zeros]), err_msg=f"{where} {name}")


def _check_nonfinite(results, where: str):
    for name, got in zip(NAMES, results):
        assert np.isnan(np.asarray(got)).all(), f"{where} {name} of inf/nan: {got}"


NONFINITE = np.array([np.inf, -np.inf, np.nan], np.float32)
FAST, MEDIUM = 512.0, 2.0 ** 19  # below: float32 arithmetic only, Cody-Waite's reduction only (where every |x| is)
# the float32s in [0.78, 12800] closest to a multiple of pi/2 (x 2/pi within 3e-9 of an integer), and in
# [12800, 2^19] (within 2^-26.5 .. 2^-23.2; found by searching every float32 there)
HARD_SMALL = np.array([0x437CE5F1, 0x43FCE5F1, 0x4096CBE4, 0x447CE5F1, 0x4116CBE4, 0x44FCE5F1, 0x416231D6, 0x3FC90FDB,
                       0x474D246F, 0x47CD246F, 0x4882665E, 0x484D246F, 0x475EA134, 0x48CD246F, 0x473BA7AA, 0x48157C22],
                      np.uint32).view(np.float32)
SMALL = np.concatenate([X[np.abs(X) < MEDIUM], HARD_SMALL, -HARD_SMALL,
                        np.float32([12799.999, 16.474308, 806.61517, MEDIUM - 0.03125, 1e5, 3e5])])
LARGE = np.array([1e5, 1e10, 1e30, -3e38], np.float32)
ALL = np.concatenate([X, SMALL, LARGE, NONFINITE])  # one module, one call, for the checks on float32 jit


@functools.cache
def _all():
    return [np.asarray(r) for r in _JIT(ALL)]


def _part(results, lo, n):
    return [r[lo:lo + n] for r in results]


def test_float32_jit():
    _check(_part(_all(), 0, len(X)), X, "jit")
    _check_nonfinite(_part(_all(), len(ALL) - 3, 3), "jit")


# The default eager tier computes small float32 arrays on the CPU with NumPy's functions (stagec.eager, "exact"):
# their error on X, measured: sin 1.35, cos 1.29, tan 2.90 ulps.
NUMPY_ULPS = {"sin": 1.5, "cos": 1.5, "tan": 3.0}


@pytest.mark.parametrize("tiering", ["exact", "never"])
def test_float32_eager(tiering):
    """A few hundred values eagerly: by default NumPy's functions, with tiering "never" the eager
    (shape-polymorphic) kernels, held to the compiled bounds."""
    x = X[np.r_[:40, 2000:2100, -300:0]]
    old = stagec.config.eager_tiering
    stagec.config.update("eager_tiering", tiering)
    try:
        _check([f(stagec.device_put(x)) for f in (snp.sin, snp.cos, snp.tan)], x, "eager",
               ulps=NUMPY_ULPS if tiering == "exact" else ULPS)
        _check_nonfinite([f(stagec.device_put(NONFINITE)) for f in (snp.sin, snp.cos, snp.tan)], "eager")
    finally:
        stagec.config.update("eager_tiering", old)


def test_float32_path_below_2_19_is_the_mixed_paths_bits():
    """Where every |x| < 512 only the float32 path runs, where every |x| < 2^19 only Cody-Waite's reductions
    (`stablehlo.if`); with one larger element each element takes its own path: the same bits either way, within the
    bounds also at the float32s below 2^19 closest to a multiple of pi/2 (the reduction's hardest cases)."""
    small = SMALL
    fast = np.abs(small) < FAST
    part = np.concatenate([small[:500], np.float32([1e30])])  # (a small tensor: both reductions, no branch)
    # the three arguments' sin, cos and tan in one module (each call lowered for its own argument, as alone)
    alone, only_fast, of_part = stagec.jit(lambda a, b, c: (_trig(a), _trig(b), _trig(c)))(small, small[fast], part)
    mixed = _part(_all(), len(X), len(small))  # (computed with elements >= 2^19 beside them)
    assert np.abs(ALL[np.isfinite(ALL)]).max() > MEDIUM and len(small) >= 1 << 14
    _check(alone, small, "below 2^19")
    for a, m in zip(alone, mixed):
        np.testing.assert_array_equal(np.asarray(a).view(np.uint32), m.view(np.uint32))
    assert (~fast).any() and fast.sum() >= 1 << 14
    for a, m in zip(only_fast, alone):  # (every |x| < 512: the float32 path alone)
        np.testing.assert_array_equal(np.asarray(a).view(np.uint32), np.asarray(m)[fast].view(np.uint32))
    # a small tensor takes both reductions without the branch: the same bits again
    for a, p in zip(alone, of_part):
        np.testing.assert_array_equal(np.asarray(a)[:500].view(np.uint32), np.asarray(p)[:-1].view(np.uint32))
    # (the branch on max |x| is `mathlib`'s; CUDA's `mathlib-cuda` selects each element's tier: no read back)
    assert ("stablehlo.if" in stagec.jit(snp.sin).lower(small).as_text("final")) == (
        stagec.config.default_backend != "cuda")
    assert "stablehlo.if" not in stagec.jit(snp.sin).lower(part).as_text("final")


def test_large_arguments_match_numpy():
    x = LARGE
    s, c, t = _part(_all(), len(X) + len(SMALL), len(x))
    np.testing.assert_allclose(np.asarray(c), np.cos(x.astype(np.float64)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(s), np.sin(x.astype(np.float64)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(t), np.tan(x.astype(np.float64)), rtol=2e-6)


NARROW = (np.float16, ml_dtypes.bfloat16)


def _narrow_x(dtype):
    fin = ml_dtypes.finfo(dtype)
    x = np.concatenate([X[np.abs(X) <= float(fin.max)].astype(dtype), np.array([fin.max, -fin.max], dtype)])
    return x[np.isfinite(x)]


@functools.cache
def _narrow():  # (both dtypes in one module)
    return stagec.jit(lambda a, b: (_trig(a), _trig(b)))(*map(_narrow_x, NARROW))


@pytest.mark.parametrize("i", [0, 1], ids=["float16", "bfloat16"])
def test_narrow_floats_round_once(i):
    dtype, x = NARROW[i], _narrow_x(NARROW[i])
    # rounded from float32 (itself within 0.5 ulp): within an ulp of the exact value (tan: 1.5)
    _check(_narrow()[i], x.astype(np.float32), str(np.dtype(dtype)), dtype=np.dtype(dtype),
           ulps={"sin": 1.0, "cos": 1.0, "tan": 1.5})


def test_gradients_at_large_arguments():
    x = np.float32(1e10)
    ds, dc, dt = stagec.jit(lambda x: [stagec.grad(f)(x) for f in (snp.sin, snp.cos, snp.tan)])(x)
    np.testing.assert_allclose(ds, np.cos(1e10), rtol=1e-6)
    np.testing.assert_allclose(dc, -np.sin(1e10), rtol=1e-6)
    np.testing.assert_allclose(dt, 1 + np.tan(1e10) ** 2, rtol=4e-6)


def test_vulkan():
    if not device_names("vulkan"):
        pytest.skip("no Vulkan device: apt-get install mesa-vulkan-drivers libvulkan1")
    on_x, on_nonfinite = stagec.jit(lambda a, b: (_trig(a), _trig(b)), backend="vulkan")(X, NONFINITE)  # one module
    _check(on_x, X, "vulkan")
    _check_nonfinite(on_nonfinite, "vulkan")


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["float16", "bfloat16"])
def test_vulkan_narrow_floats_of_many_values(dtype):
    """float16/bfloat16 sin of 20000 values: the tiers' reduction read the widened values that the kernel reads too,
    and IREE 3.13 made them a result of the reduction's dispatch, staged whole in workgroup memory (80000 bytes, over
    lavapipe's 16384): the module did not compile for Vulkan. Within an ulp of NumPy's float64 sin, rounded."""
    if not device_names("vulkan"):
        pytest.skip("no Vulkan device: apt-get install mesa-vulkan-drivers libvulkan1")
    x = np.random.default_rng(7).uniform(-300, 300, 20000).astype(dtype)
    got = np.asarray(stagec.jit(snp.sin, backend="vulkan")(x)).astype(np.float64)
    want = np.sin(x.astype(np.float64))
    assert np.all(np.abs(got - want) <= np.spacing(np.abs(want).astype(dtype)).astype(np.float64))


def test_float64(x64):
    """float64 keeps IREE's ops (libm on the CPU): right for large arguments too."""
    x = np.concatenate([np.array([0.0, 1e-300, 0.5, 1e3, 1e10, 1e22, 1e100, 1e300, np.finfo(np.float64).max]),
                        np.logspace(-5, 308, 300), np.arange(1, 300) * (np.pi / 2)])
    x = np.concatenate([x, -x])
    for name, got in zip(NAMES, stagec.jit(_trig)(x)):
        got = np.asarray(got)
        assert got.dtype == np.float64
        ref = getattr(np, name)(x)
        np.testing.assert_array_max_ulp(got, ref, maxulp=2)


def test_complex64():
    """sin, cos, tan of complex64 from the range-reduced real functions: relative error of a few float32 ulps (most
    of it IREE's cosh: 5e-7 at 20) on a grid with small negative, large and zero real parts (IREE's complex ops
    gave sin(-3e-8+0j) = +6.2e-8, cos(10-2j) 8e-5 off, tan(1e10+0.5j) NaN)."""
    re = np.array([0.0, -0.0, -3e-8, 1e-30, 0.5, -2.0, 3.0, 30.0, -100.0, 1e5, 1e10, -3e38], np.float32)
    im = np.array([0.0, -0.0, 1e-3, -0.5, 2.0, -5.0, 20.0, 100.0], np.float32)
    z = (re[:, None] + 1j * im[None, :]).astype(np.complex64).ravel()
    z = z[np.abs(z.imag) < 50]  # cosh(100) overflows float32, while sin(1e-30) cosh(100) does not
    zero_re = np.array([complex(0.0, 100), complex(-0.0, 3), complex(0.0, np.inf)], np.complex64)
    far = np.array([complex(1, 9.5), complex(1, -np.inf), complex(0.5, 30)], np.complex64)
    every = [np.asarray(r) for r in _JIT(np.concatenate([z, zero_re, far]))]  # (one module)
    n = len(z)
    for where, results in (("jit", [r[:n] for r in every]), ("eager", [f(stagec.device_put(z)) for f in (snp.sin, snp.cos, snp.tan)])):
        for name, got in zip(NAMES, results):
            got, want = np.asarray(got), getattr(np, name)(z.astype(np.complex128))
            assert got.dtype == np.complex64
            err = np.abs(got - want) / np.maximum(np.abs(want), np.finfo(np.float32).tiny)
            i = int(np.argmax(err))
            assert err[i] < 1e-6, f"{where} {name}({z[i]}) = {got[i]}, want {want[i]}"
    s = every[0][n:n + 3]  # sin(+-0 + iy) = +-0 + i sinh y, even where cosh y = inf
    np.testing.assert_array_equal(s.real, zero_re.real)
    assert np.signbit(s.real).tolist() == [False, True, False] and np.isposinf(s.imag[[0, 2]]).all()
    t = every[2][n + 3:]
    np.testing.assert_array_equal(t.imag, [1, -1, 1])  # tan(a + ib) -> i sign(b) as |b| grows, no inf/inf
    assert (np.abs(t.real) < 1e-7).all()


@pytest.mark.cpu_only  # (the CPU target's linking; under a GPU default it compiled for the GPU: H200 2026-11-30)
def test_modules_for_this_cpu_link_with_the_host_linker_portable_ones_embedded_float64_libm_with_libm(tmp_path):
    """A module for this machine's CPU (`host`, the default) links with the host's linker (a small module compiles
    ~45 ms faster); one for another CPU (`arch=`) keeps IREE's embedded ELF, loadable anywhere; a float64
    transcendental calls libm, so it takes the host's linker whatever the CPU. Each gives the same bits."""
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the portable CPU named here (x86-64-v3) is an x86-64 one")
    x = np.linspace(-30, 30, 101, dtype=np.float32)
    lo = stagec.jit(lambda v: snp.cos(v) * snp.exp(v / 8)).lower(x)
    assert not lo.facts.libm_f64
    host, v3 = lo.compile(), lo.compile("llvm-cpu", arch="x86-64-v3")
    assert b"system-elf-x86_64" in bytes(host.artifact.vmfb) and b"embedded-elf-x86_64" not in bytes(host.artifact.vmfb)
    assert b"embedded-elf-x86_64" in bytes(v3.artifact.vmfb) and b"system-elf-x86_64" not in bytes(v3.artifact.vmfb)
    want = (np.cos(x.astype(np.float64)) * np.exp(x.astype(np.float64) / 8)).astype(np.float32)
    np.testing.assert_allclose(host(x), want, rtol=4e-6)
    host.save(tmp_path / "host.stagec")
    loaded = stagec.load(tmp_path / "host.stagec")
    np.testing.assert_array_equal(loaded(x), host(x))
    np.testing.assert_array_equal(v3(x), host(x))  # (libm's bits are IREE's own musl code in either library)
    old = stagec.config.enable_x64
    stagec.config.update("enable_x64", True)
    try:
        f = stagec.jit(lambda x: snp.log(snp.abs(x)) + snp.sin(x))  # (exp and tanh are arithmetic now: mathlib-cpu)
        lo64 = f.lower(np.ones(3))
        assert lo64.facts.libm_f64
        assert b"system-elf-x86_64" in bytes(lo64.compile("llvm-cpu", arch="x86-64-v3").artifact.vmfb)
        x = np.array([0.5, -3.0, 700.0])
        np.testing.assert_allclose(f(x), np.log(np.abs(x)) + np.sin(x), rtol=1e-15)
    finally:
        stagec.config.update("enable_x64", old)


@pytest.mark.parametrize("name", ["power", "sign"])  # (complex64 ones compile: tests/test_complex_power.py)
def test_vulkan_complex128_functions_it_cannot_compile_are_a_clear_error(name, x64):
    if not device_names("vulkan"):
        pytest.skip("no Vulkan device: apt-get install mesa-vulkan-drivers libvulkan1")
    fn = (lambda z: snp.power(z, z)) if name == "power" else getattr(snp, name)
    z = np.array([1 + 2j, -0.5 + 0.1j], np.complex128)
    try:  # (a target with float64, as NVIDIA's, compiles some: then the answer must be right)
        got = stagec.jit(fn, backend="vulkan")(z)
    except NotImplementedError as e:
        assert re.search(f"Vulkan has no (complex128 {name}|float64 )", str(e)), e
    else:
        np.testing.assert_allclose(np.asarray(got), np.power(z, z) if name == "power" else np.sign(z), rtol=1e-12)
