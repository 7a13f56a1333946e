"""snp.fft against numpy.fft: norm=, n=/s=, axis=/axes=, the stablehlo.fft path (power-of-two lengths) and the
DFT path (other lengths, float64), with x64 off and on."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import lax
from stagec.compiler.targets import device_names

from numpy_diff import x64mode  # noqa: F401 (a fixture)

rng = np.random.default_rng(0)
Z = (rng.standard_normal((3, 8)) + 1j * rng.standard_normal((3, 8))).astype(np.complex64)
R = rng.standard_normal((4, 6)).astype(np.float32)


def _check(got, want, x64: bool):
    got = np.asarray(got)
    assert got.shape == want.shape
    assert got.dtype == (want.dtype if x64 else {np.dtype(np.complex128): np.complex64,
                                                  np.dtype(np.float64): np.float32}.get(want.dtype, want.dtype))
    tol = 1e-12 if x64 else 1e-6
    assert np.max(np.abs(got - want)) <= tol * max(1.0, np.max(np.abs(want))) * 10


_FFT_NORMS = (None, "backward", "ortho", "forward")


def _c2c_all(m, z, r, h):
    """The 1-D transforms the test checks, for every norm in _FFT_NORMS, by module `m` (snp or np)."""
    return [[m.fft.fft(z, norm=norm), m.fft.ifft(z, norm=norm), m.fft.fft(z, n=6, axis=0, norm=norm),
             m.fft.rfft(r, norm=norm), m.fft.irfft(h, norm=norm), m.fft.irfft(h, n=7, norm=norm)]
            for norm in _FFT_NORMS]


def _nd_all(m, z, r, h):
    return [m.fft.fft2(r), m.fft.ifft2(z), m.fft.fftn(z, s=(2, 4)), m.fft.ifftn(z, axes=(0,)), m.fft.rfft2(r),
            m.fft.rfftn(r, s=(4, 8)), m.fft.irfft2(h), m.fft.irfftn(h, s=(4, 6))]


def _inputs(x64: bool):
    z, r = (Z.astype(np.complex128), R.astype(np.float64)) if x64 else (Z, R)
    return z, r, np.fft.rfft(r).astype(z.dtype), np.fft.rfft2(r).astype(z.dtype)


@functools.cache
def _jitted(x64: bool):
    """(1-D transforms, n-D transforms) in one module per x64 mode (the cache's key: called under that mode)."""
    return stagec.jit(lambda z, r, h, h2: (_c2c_all(snp, z, r, h), _nd_all(snp, z, r, h2)))(*_inputs(x64))


def test_c2c(x64mode):
    z, r, h, _ = _inputs(x64mode)
    for gots, wants in zip(_jitted(x64mode)[0], _c2c_all(np, z, r, h)):
        for g, w in zip(gots, wants):
            _check(g, w, x64mode)
    _check(snp.fft.fft(z, norm="ortho"), np.fft.fft(z, norm="ortho"), x64mode)  # and eagerly


def test_nd(x64mode):
    z, r, _, h = _inputs(x64mode)
    for g, w in zip(_jitted(x64mode)[1], _nd_all(np, z, r, h)):
        _check(g, w, x64mode)


def test_helpers_and_jit():
    freq, rfreq, shift, ishift, back = stagec.jit(lambda r, v: (  # one module
        snp.fft.fftfreq(7, 0.5), snp.fft.rfftfreq(8), snp.fft.fftshift(r), snp.fft.ifftshift(r, axes=1),
        snp.fft.ifft(snp.fft.fft(v))))(R, Z)
    np.testing.assert_allclose(freq, np.fft.fftfreq(7, 0.5), rtol=1e-6)
    np.testing.assert_allclose(rfreq, np.fft.rfftfreq(8))
    np.testing.assert_array_equal(shift, np.fft.fftshift(R))
    np.testing.assert_array_equal(ishift, np.fft.ifftshift(R, axes=1))
    np.testing.assert_allclose(back, Z, atol=1e-6)
    assert snp.fft.fft(np.arange(8)).dtype == np.complex64


def test_fft_primitive_limits():
    big = (rng.standard_normal(1024) + 1j * rng.standard_normal(1024)).astype(np.complex64)
    want = np.fft.fft(big.astype(np.complex128))
    assert np.max(np.abs(np.asarray(lax.fft(big, "FFT", (1024,))) - want)) < 1e-5 * np.max(np.abs(want))
    with pytest.raises(NotImplementedError, match="powers of two"):
        lax.fft(Z[:, :6], "FFT", (6,))
    with pytest.raises(NotImplementedError, match="2-D"):
        lax.fft(Z[:2], "FFT", (2, 8))
    with pytest.raises(ValueError, match="invalid number"):
        snp.fft.fft(Z, n=0)
    with pytest.raises(ValueError, match="norm"):
        snp.fft.fft(Z, norm="bad")


def test_transforms_of_length_one_compile_and_match_numpy():
    """A length-1 transform is a DFT here: IREE 3.13 failed to translate `stablehlo.fft` of length 1 to LLVM
    (IRFFT; RFFT inside a larger module), a CompileError on irfft(z, n=1) and rfft2(x, s=(6, 1))."""
    x = rng.standard_normal((4, 5, 4)).astype(np.float32)
    z = (rng.standard_normal(3) + 1j * rng.standard_normal(3)).astype(np.complex64)
    cases = [(lambda m, a, b: m.fft.irfft(b, n=1)), (lambda m, a, b: m.fft.rfft2(a, s=(6, 1))),
             (lambda m, a, b: m.fft.irfftn(a[0, 0, :1], s=(1,), axes=(0,))), (lambda m, a, b: m.fft.rfft(a, n=1))]
    jitted = stagec.jit(lambda a, b: [f(snp, a, b) for f in cases])(x, z)  # (one module)
    for f, j in zip(cases, jitted):
        want = f(np, x.astype(np.float64), z.astype(np.complex128))
        for got in (f(snp, x, z), j):
            assert got.shape == want.shape
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- differentiation and batching (JAX as oracle)

W8 = np.linspace(-1, 2, 8).astype(np.float32)
_GRAD_CASES = {  # real-valued functions of R (4, 6) or Z (3, 8): the stablehlo.fft path (8) and the DFT path (6)
    "fft": (lambda m, v: m.sum(m.abs(m.fft.fft(v)) ** 2 * m.arange(8)), "Z"),
    "ifft": (lambda m, v: m.sum(m.real(m.fft.ifft(v)) * W8 + m.imag(m.fft.ifft(v)) ** 2), "Z"),
    "rfft": (lambda m, v: m.sum(m.real(m.fft.rfft(v, n=8)) * m.arange(5) + m.imag(m.fft.rfft(v, n=8)) ** 2), "R"),
    "irfft": (lambda m, v: m.sum(m.fft.irfft(m.fft.rfft(v, n=8) * m.arange(5)) ** 3), "R"),
    "dft": (lambda m, v: m.sum(m.abs(m.fft.fft(v)) ** 2 * m.arange(6)) + m.sum(m.fft.irfft(m.fft.rfft(v)) ** 3), "R"),
    "fft2": (lambda m, v: m.sum(m.abs(m.fft.fft2(v)) ** 2 * m.arange(8)), "Z"),
}


@pytest.mark.parametrize("name", sorted(_GRAD_CASES))
def test_grad_against_jax(name):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    f, arg = _GRAD_CASES[name]
    x = {"R": R, "Z": Z}[arg]
    want = np.asarray(jax.jit(jax.grad(lambda v: f(jnp, v)))(x))  # one XLA module, not one per operation
    got = np.asarray(stagec.jit(stagec.grad(lambda v: f(snp, v)))(x))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * np.max(np.abs(want)))


def test_jvp_and_vmap():
    t = np.ones_like(Z)
    # One module (op by op: 23 kernels). W8 an argument: with it a constant, IREE 3.13 fails to compile the
    # vmap of grad ("jit global source initialization order invalid"; eagerly op by op it runs).
    (out, tan), got, per_row = stagec.jit(lambda z, t, r, w: (
        stagec.jvp(snp.fft.fft, (z,), (t,)), stagec.vmap(lambda v: snp.fft.rfft(v, n=8), in_axes=1, out_axes=1)(r),
        stagec.vmap(stagec.grad(lambda v: snp.sum(snp.fft.irfft(snp.fft.rfft(v, n=8)) * w)))(r)))(Z, t, R, W8)
    np.testing.assert_allclose(tan, np.fft.fft(t), atol=1e-5)  # fft is linear: its tangent is fft(t)
    np.testing.assert_allclose(out, np.fft.fft(Z), atol=1e-5)
    np.testing.assert_allclose(got, np.fft.rfft(R, n=8, axis=0), atol=1e-5)
    np.testing.assert_allclose(per_row, np.broadcast_to(W8[:6], R.shape), atol=1e-5)  # identity on v's 6 entries


@pytest.mark.skipif(not device_names("vulkan"), reason="no Vulkan device: apt-get install mesa-vulkan-drivers libvulkan1")
def test_vulkan_ffts():
    """IREE 3.13's SPIR-V `stablehlo.fft` gave garbage on lavapipe (relative error 2e6 at 64 points): Vulkan computes
    1-D transforms of up to 1024 points as products with the DFT matrices (`fft-as-dft`), and says so past that."""
    rng = np.random.default_rng(5)
    ns, args = (64, 1024), []
    for n in ns:
        z = (rng.standard_normal((3, n)) + 1j * rng.standard_normal((3, n))).astype(np.complex64)
        r = rng.standard_normal((3, n)).astype(np.float32)
        args.append((z, r, np.fft.rfft(r).astype(np.complex64)))
    gots = stagec.jit(lambda args: [(snp.fft.fft(z), snp.fft.ifft(z), snp.fft.rfft(r), snp.fft.irfft(h, n))
                                    for n, (z, r, h) in zip(ns, args)], backend="vulkan")(args)  # (one module)
    for n, (z, r, h), got in zip(ns, args, gots):
        for g, w in zip(got, (np.fft.fft(z.astype(np.complex128)), np.fft.ifft(z.astype(np.complex128)),
                              np.fft.rfft(r.astype(np.float64)), np.fft.irfft(h.astype(np.complex128), n))):
            assert np.abs(np.asarray(g) - w).max() <= 4e-6 * np.abs(w).max()
    with pytest.raises(NotImplementedError, match="fft of 2048 points on Vulkan"):
        stagec.jit(snp.fft.rfft, backend="vulkan")(np.zeros(2048, np.float32))
