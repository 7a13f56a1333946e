"""`stagec.numpy.fft`: NumPy's FFT functions (norm=, n=/s=, axis=/axes=), one axis at a time.

Each 1-D transform is `stablehlo.fft` (`lax.fft`) where IREE 3.13 compiles it (complex64/float32, power-of-two
length) and otherwise a DFT: a matrix product with twiddles computed in float64 on the host (O(n^2) per
axis; exact to rounding). float32 inputs give complex64, as in JAX. See docs/linalg.md for measured accuracy.
"""
from __future__ import annotations

import operator
import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..core import aval_of
from ..primitives.dot import Precision
from ..primitives.fft import supported
from ._base import _api, _axis, _is_array, _staged, asarray
from ._linalg import matmul
from ._reductions import sum
from ._shapes import expand_dims, moveaxis, roll
from ._ufuncs import conjugate, imag, multiply, real

_NORMS = (None, "backward", "ortho", "forward")


def _complex_dtype(dt) -> np.dtype:
    dt = np.dtype(dt)
    if dt in (np.float64, np.complex128):
        return np.dtype(np.complex128)
    return np.dtype(np.complex128 if _dt.to_inexact(dt) == np.float64 else np.complex64)  # (JAX's, by to_inexact)


def _const(value, dtype) -> np.ndarray:
    """A host constant of exactly `dtype` (so that it does not promote the traced operand)."""
    return np.array(value, dtype, order="C")


def _resize(x, n: int, fname: str):
    """Truncate or zero-pad the last axis to n (NumPy's n=)."""
    if n < 1:
        raise ValueError(f"{fname}: invalid number of data points ({n}) specified")
    m = aval_of(x).shape[-1]
    if n < m:
        return x[..., :n]
    if n > m:
        shape = aval_of(x).shape[:-1] + (n - m,)
        # A concatenation, not a pad: under grad a pad transposes to a negative pad, which IREE 3.13 fails to
        # compile after an fft ("write affecting operations on global resources"); a concatenation to slices.
        pad = lambda v: lax.concatenate([v, lax.broadcast_in_dim(_const(0, aval_of(v).dtype), shape, ())],
                                        len(shape) - 1)
        if _dt.kind(aval_of(x).dtype) == "c":  # parts apart: IREE 3.13 crashes on some complex pads
            return lax.complex(pad(real(x)), pad(imag(x)))
        return pad(x)
    return x


def _scale(x, n: int, norm, inverse: bool):
    """Rescale a result computed with NumPy's default ('backward') normalization to `norm`."""
    if norm not in _NORMS:
        raise ValueError(f'fft: invalid norm {norm!r} (use "backward", "ortho" or "forward")')
    if norm in (None, "backward"):
        return x
    f = (np.sqrt(n) if inverse else 1 / np.sqrt(n)) if norm == "ortho" else (n if inverse else 1 / n)
    return multiply(x, _const(f, aval_of(x).dtype))


def _real(dt) -> np.dtype:
    return np.dtype(np.float64) if np.dtype(dt) == np.complex128 else np.dtype(np.float32)


def _c2c_last(x, n: int, inverse: bool):
    """FFT or IFFT (1/n) over the last axis (already of length n), complex in and out."""
    if supported(aval_of(x), "FFT", (n,)) is None:
        return lax.fft(x, "IFFT" if inverse else "FFT", (n,))
    k = np.arange(n)
    w = _twiddles(k, k, n, 1 if inverse else -1)
    if inverse:
        w = w / n
    return _dft(x, w)


def _twiddles(k, t, n: int, sign: int) -> np.ndarray:
    """exp(sign 2 pi i k t / n) in float64, exactly 0 and +-1 at multiples of a quarter turn (NumPy's cos and sin
    give 6e-17 there: the product of an impulse was not exact)."""
    m = np.outer(k, t) % n
    w = np.exp(sign * 2j * np.pi * m / n)
    q = 4 * m % n == 0
    w[q] = np.array([1, complex(0, sign), -1, complex(0, -sign)])[4 * m[q] // n]
    return w


def _dft(x, w: np.ndarray):
    """x @ w for a host matrix w, as broadcast multiplies and sums in real and imaginary parts (IREE 3.13 fails on
    a complex dot_general with data tiling, and crashes on a complex128 multiply-reduce). An inf input gives NaN
    where a twiddle's part is exactly 0 (inf * 0), as IREE's power-of-two FFT does: leaving those products out
    took a `cond` on the input's finiteness, which under `vmap` runs both branches (rfft of 16 x 300: 8.9 ms
    against 0.46; docs/log.md 2026-11-30)."""
    rd = _real(_complex_dtype(aval_of(x).dtype))
    x = x if _dt.kind(aval_of(x).dtype) == "c" else lax._convert_element_type(x, rd, False)
    return _products(x, w, rd)


def _products(x, w: np.ndarray, rd):
    mm = lambda a, b: sum(multiply(expand_dims(a, -1), _const(b, rd)), axis=-2)

    if _dt.kind(aval_of(x).dtype) != "c":
        return lax.complex(mm(x, w.real), mm(x, w.imag))
    xr, xi = real(x), imag(x)
    return lax.complex(mm(xr, w.real) - mm(xi, w.imag), mm(xr, w.imag) + mm(xi, w.real))


def _prep(x, fname: str, complex_in: bool = True):
    x = x if _is_array(x) else asarray(x)
    dt = aval_of(x).dtype
    if _dt.kind(dt) not in "biufc" or dt.itemsize < 4 and _dt.kind(dt) in "fc" and not complex_in:
        raise TypeError(f"{fname}: unsupported dtype {dt}")  # (JAX's c2c transforms take half floats, in complex64)
    target = _complex_dtype(dt) if complex_in else _real(_complex_dtype(dt))
    if complex_in or _dt.kind(dt) != "c":
        return lax._convert_element_type(x, target, False) if (dt, aval_of(x).weak_type) != (target, False) else x
    raise TypeError(f"{fname}: a real input is required, got {dt}")


def _c2c(x, n, axis, norm, inverse: bool, fname: str):
    x = _prep(x, fname)
    ax = _axis(axis, aval_of(x).ndim, fname)
    x = moveaxis(x, ax, -1)
    n = aval_of(x).shape[-1] if n is None else operator.index(n)
    x = _resize(x, n, fname)
    return moveaxis(_scale(_c2c_last(x, n, inverse), n, norm, inverse), -1, ax)


def _rfft(x, n, axis, norm, fname: str = "rfft"):
    x = _prep(x, fname, complex_in=False)
    ax = _axis(axis, aval_of(x).ndim, fname)
    x = moveaxis(x, ax, -1)
    n = aval_of(x).shape[-1] if n is None else operator.index(n)
    x = _resize(x, n, fname)
    if supported(aval_of(x), "RFFT", (n,)) is None:
        out = lax.fft(x, "RFFT", (n,))
    else:
        k = np.arange(n)
        out = _dft(x, _twiddles(k, k[:n // 2 + 1], n, -1))
    return moveaxis(_scale(out, n, norm, False), -1, ax)


def _irfft(x, n, axis, norm, fname: str = "irfft"):
    x = _prep(x, fname)
    ax = _axis(axis, aval_of(x).ndim, fname)
    x = moveaxis(x, ax, -1)
    n = 2 * (aval_of(x).shape[-1] - 1) if n is None else operator.index(n)
    if n < 1:
        raise ValueError(f"{fname}: invalid number of data points ({n}) specified")
    x = _resize(x, n // 2 + 1, fname)
    if supported(aval_of(x), "FFT", (n,)) is None:
        out = lax.fft(x, "IRFFT", (n,))
    else:  # out[t] = Re(sum_k c_k X_k e^{2 pi i k t / n}) / n, c_k = 2 except for k = 0 and k = n/2
        k = np.arange(n // 2 + 1)
        c = np.where((k == 0) | (2 * k == n), 1.0, 2.0)[:, None]
        w = c * _twiddles(k, np.arange(n), n, 1) / n
        rd = _real(aval_of(x).dtype)
        hi = Precision.HIGHEST  # (in float32, as JAX's cuFFT: CUDA's default product is bf16_3x)
        out = matmul(real(x), _const(w.real, rd), precision=hi) - matmul(imag(x), _const(w.imag, rd), precision=hi)
    return moveaxis(_scale(out, n, norm, True), -1, ax)


def _axes_and_sizes(x, s, axes, fname: str, real_last: bool = False):
    nd = aval_of(x).ndim
    if s is not None:
        s = [operator.index(d) for d in s]
    if axes is None:
        axes = list(range(-len(s), 0)) if s is not None else list(range(nd))
    else:
        axes = [operator.index(a) for a in axes]
    axes = [_axis(a, nd, fname) for a in axes]
    if s is not None and len(s) != len(axes):
        raise ValueError(f"{fname}: shape s={s} and axes={axes} have different lengths")
    if s is None:
        s = [aval_of(x).shape[a] for a in axes]
        if real_last and axes:
            s[-1] = 2 * (s[-1] - 1)
    return s, axes


@_staged("n", "axis", "norm")
def fft(a, n=None, axis: int = -1, norm=None):
    """Discrete Fourier transform over `axis` (truncated/zero-padded to `n`)."""
    return _c2c(a, n, axis, norm, False, "fft")


@_staged("n", "axis", "norm")
def ifft(a, n=None, axis: int = -1, norm=None):
    """Inverse discrete Fourier transform over `axis`."""
    return _c2c(a, n, axis, norm, True, "ifft")


@_staged("n", "axis", "norm")
def rfft(a, n=None, axis: int = -1, norm=None):
    """Transform of real input: the n // 2 + 1 non-negative frequencies."""
    return _rfft(a, n, axis, norm)


@_staged("n", "axis", "norm")
def irfft(a, n=None, axis: int = -1, norm=None):
    """Inverse of `rfft`: real output of length `n` (default 2 * (m - 1))."""
    return _irfft(a, n, axis, norm)


def _cn(a, s, axes, norm, inverse: bool, fname: str):
    a = _prep(a, fname)
    s, axes = _axes_and_sizes(a, s, axes, fname)
    for n, ax in reversed(list(zip(s, axes))):
        a = _c2c(a, n, ax, norm, inverse, fname)
    return a


@_staged("s", "axes", "norm")
def fftn(a, s=None, axes=None, norm=None):
    """N-dimensional transform over `axes` (all by default), one axis at a time."""
    return _cn(a, s, axes, norm, False, "fftn")


@_staged("s", "axes", "norm")
def ifftn(a, s=None, axes=None, norm=None):
    """N-dimensional inverse transform."""
    return _cn(a, s, axes, norm, True, "ifftn")


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """Transform over the last two axes."""
    return fftn(a, s=_tuple(s), axes=_tuple(axes), norm=norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """Inverse transform over the last two axes."""
    return ifftn(a, s=_tuple(s), axes=_tuple(axes), norm=norm)


@_staged("s", "axes", "norm")
def rfftn(a, s=None, axes=None, norm=None):
    """Real N-dimensional transform: `rfft` over the last of `axes`, then `fft` over the others."""
    a = _prep(a, "rfftn", complex_in=False)
    s, axes = _axes_and_sizes(a, s, axes, "rfftn")
    a = _rfft(a, s[-1], axes[-1], norm, "rfftn")
    for n, ax in reversed(list(zip(s[:-1], axes[:-1]))):
        a = _c2c(a, n, ax, norm, False, "rfftn")
    return a


@_staged("s", "axes", "norm")
def irfftn(a, s=None, axes=None, norm=None):
    """Inverse of `rfftn`: `ifft` over all but the last of `axes`, then `irfft` over it."""
    a = _prep(a, "irfftn")
    s, axes = _axes_and_sizes(a, s, axes, "irfftn", real_last=True)
    for n, ax in zip(s[:-1], axes[:-1]):
        a = _c2c(a, n, ax, norm, True, "irfftn")
    return _irfft(a, s[-1], axes[-1], norm, "irfftn")


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """Real transform over the last two axes."""
    return rfftn(a, s=_tuple(s), axes=_tuple(axes), norm=norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """Inverse of `rfft2`."""
    return irfftn(a, s=_tuple(s), axes=_tuple(axes), norm=norm)


_SWAP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


@_staged("n", "axis", "norm")
def hfft(a, n=None, axis: int = -1, norm=None):
    """Transform of a Hermitian-symmetric signal given by its first half: real output of length `n`."""
    if norm not in _NORMS:
        raise ValueError(f'hfft: invalid norm {norm!r} (use "backward", "ortho" or "forward")')
    return _irfft(conjugate(_prep(a, "hfft")), n, axis, _SWAP[norm], "hfft")


@_staged("n", "axis", "norm")
def ihfft(a, n=None, axis: int = -1, norm=None):
    """Inverse of `hfft`: the n // 2 + 1 non-negative frequencies of a real signal's inverse transform."""
    if norm not in _NORMS:
        raise ValueError(f'ihfft: invalid norm {norm!r} (use "backward", "ortho" or "forward")')
    return conjugate(_rfft(a, n, axis, _SWAP[norm], "ihfft"))


def _tuple(x):
    return None if x is None else tuple(x)


def fftfreq(n: int, d: float = 1.0, *, dtype=None, device=None):
    """Sample frequencies [0, 1, ..., n/2-1, -n/2, ..., -1] / (d n)."""
    n = operator.index(n)
    f = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)]) / (d * n)
    return asarray(f, dtype=dtype or _dt.default_float(), device=device)


def rfftfreq(n: int, d: float = 1.0, *, dtype=None, device=None):
    """Sample frequencies of `rfft`: [0, 1, ..., n/2] / (d n)."""
    n = operator.index(n)
    return asarray(np.arange(0, n // 2 + 1) / (d * n), dtype=dtype or _dt.default_float(), device=device)


def fftshift(x, axes=None):
    """Move the zero frequency to the centre (roll by n // 2 along `axes`, all by default)."""
    x = x if _is_array(x) else asarray(x)
    axes = tuple(range(aval_of(x).ndim)) if axes is None else (axes if isinstance(axes, (tuple, list)) else (axes,))
    return roll(x, [aval_of(x).shape[a] // 2 for a in axes], axes)


def ifftshift(x, axes=None):
    """Inverse of `fftshift` (roll by -(n // 2))."""
    x = x if _is_array(x) else asarray(x)
    axes = tuple(range(aval_of(x).ndim)) if axes is None else (axes if isinstance(axes, (tuple, list)) else (axes,))
    return roll(x, [-(aval_of(x).shape[a] // 2) for a in axes], axes)


__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]
globals().update({k: _api(globals()[k]) for k in __all__})  # eager results are Arrays
