"""Special values a fuzzer found wrong (inf and NaN inputs, empty matrices), each against an oracle computed in
float64 without stagec: the DFT path of snp.fft (exact twiddles), complex exp2, matrix norms of empty matrices; and
convolutions of finite inputs."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
import stagec.scipy.signal as ssig

inf, nan = np.inf, np.nan


def _same(got, want):
    """Equal values, with NaNs and infs (and their signs) in the same places; finite ones to float32 rounding."""
    got, want = np.asarray(got).astype(want.dtype), np.asarray(want)
    for g, w in ((got.real, want.real), (got.imag, want.imag)) if want.dtype.kind == "c" else ((got, want),):
        assert np.array_equal(np.isnan(g), np.isnan(w)), (got, want)
        assert np.array_equal(np.isposinf(g), np.isposinf(w)) and np.array_equal(np.isneginf(g), np.isneginf(w)), (got, want)
        fin = np.isfinite(w)
        np.testing.assert_allclose(g[fin], w[fin], rtol=2e-6, atol=2e-6 * max(1.0, np.max(np.abs(w[fin]), initial=0)))


# ---------------------------------------------------------------- fft (the DFT path: lengths that are not powers of two)


def test_dft_path_is_exact_at_quarter_turns_and_finite_inputs_match_float64():
    """The DFT path's twiddles are exact at multiples of a quarter turn (cos and sin 0 or +-1), so the transform of
    an impulse is exact there; finite transforms are within float32 rounding of NumPy's float64 ones."""
    for n in (5, 6, 12):
        x = np.zeros(n, np.float32)
        x[n // 2] = 1.0
        want = np.exp(-2j * np.pi * np.arange(n) * (n // 2) / n)
        want.real[np.abs(want.real) < 1e-12], want.imag[np.abs(want.imag) < 1e-12] = 0, 0
        got = np.asarray(snp.fft.fft(x)).astype(np.complex128)
        q = 4 * np.arange(n) * (n // 2) % n == 0  # (bins at a quarter turn: exactly 0 or +-1 in each part)
        np.testing.assert_array_equal(got[q], np.round(want[q].real) + 1j * np.round(want[q].imag))
        np.testing.assert_allclose(got, want, atol=1e-6)
    x = np.random.default_rng(0).standard_normal((4, 1000)).astype(np.float32)
    for f in (snp.fft.rfft, stagec.jit(snp.fft.rfft)):
        want = np.fft.rfft(x.astype(np.float64))
        assert np.abs(np.asarray(f(x)) - want).max() < 2e-6 * np.abs(want).max()


# ---------------------------------------------------------------- exp2 and exp of complex special values

_Z = [complex(inf, 0), complex(inf, 3), complex(-inf, 3), complex(inf, -0.0), complex(-inf, 0), complex(inf, inf),
      complex(-inf, inf), complex(nan, 0), complex(1, inf), complex(inf, nan), complex(0, inf), complex(nan, 1),
      complex(2, 3), complex(-1.5, 0.25), complex(200, 0), complex(-200, 1)]


@pytest.mark.parametrize("name", ["exp2", "exp"])
def test_complex_exp2_special_values(name):
    """C99 Annex G's cexp (NumPy's, in complex128) at inf and NaN parts; exp2(z) = exp(z ln 2) there (JAX: NaN + NaN j)."""
    z = np.array(_Z, np.complex64)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(z.astype(np.complex128))
    with np.errstate(all="ignore"):
        want = want.astype(np.complex64).astype(np.complex128)  # (complex64's overflow)
    _same(getattr(snp, name)(z), want)
    _same(stagec.jit(getattr(snp, name))(z), want)
    got = np.asarray(getattr(snp, name)(z))
    assert np.array_equal(np.signbit(got.imag[:5]), np.signbit(want.imag[:5]))  # (inf - 0j keeps its -0)


# ---------------------------------------------------------------- matrix norms of empty matrices


@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0), (2, 0, 0)])
def test_empty_matrix_norms(shape):
    """NumPy's: 0 where the norm is a max (ord 1, 2, inf) or a sum, an error where it is a min over an empty axis."""
    x = np.zeros(shape, np.float32)
    axis = None if len(shape) == 2 else (1, 2)
    for ord in (None, 1, 2, inf, "fro", "nuc", -1, -2, -inf):
        try:
            want = np.linalg.norm(x.astype(np.float64), ord=ord, axis=axis)
        except ValueError:
            with pytest.raises(ValueError, match=rf"norm: ord={ord!r} .*empty axis .*shape \({shape[0]},"):
                snp.linalg.norm(x, ord=ord, axis=axis)
            continue
        got = snp.linalg.norm(x, ord=ord, axis=axis)
        assert got.dtype == np.float32 and np.array_equal(np.asarray(got), want), (ord, got, want)


# ---------------------------------------------------------------- convolutions of finite inputs


def test_convolutions_of_finite_inputs_match_float64():
    """convolve, correlate and scipy.signal against NumPy's float64; eager and jit give the same bits in float32
    (complex64 correlate differs in rounding between eager and jit: left, docs/log.md 2026-11-30)."""
    rng = np.random.default_rng(3)
    a, v = rng.standard_normal(40).astype(np.float32), rng.standard_normal(7).astype(np.float32)
    c = (a[:20] + 1j * a[20:]).astype(np.complex64)
    for f, args in ((snp.convolve, (a, v)), (snp.correlate, (c, v[:5], "same")), (ssig.convolve, (a, v))):
        eager = np.asarray(f(*args))
        jitted = np.asarray(stagec.jit(f, static_argnums=tuple(range(2, len(args))))(*args))
        assert np.array_equal(eager, jitted) or eager.dtype == np.complex64 and np.allclose(eager, jitted, rtol=1e-6)
        np.testing.assert_allclose(eager, np.convolve(args[0].astype(np.complex128), args[1], "full")
                                   if f is not snp.correlate else np.correlate(c.astype(np.complex128), v[:5], "same"),
                                   rtol=1e-5, atol=1e-5)
