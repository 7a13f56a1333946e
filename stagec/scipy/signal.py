"""`stagec.scipy.signal` (as `jax.scipy.signal`): N-d convolution and correlation by the direct method, each one
StableHLO convolution of the arrays as a single image and a single kernel."""
from __future__ import annotations


from .. import lax
from .. import numpy as snp
from ..numpy._base import inexact_type
from .._missing import missing, table

_MODES = ("full", "same", "valid")


def _convolve_nd(in1, in2, mode: str, precision=None):
    """JAX's `_convolve_nd`: `in2` flipped and slid over `in1` (the larger one in every dimension)."""
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {list(_MODES)}, got {mode!r}")
    in1, in2 = snp.asarray(in1), snp.asarray(in2)
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if in1.ndim == 0 or in1.size == 0 or in2.size == 0:
        raise ValueError("convolve: inputs must be non-empty arrays of at least one dimension")
    dt = inexact_type(in1, in2)  # (integers convolve as floats, as in JAX)
    in1, in2 = in1.astype(dt), in2.astype(dt)
    no_swap = all(s1 >= s2 for s1, s2 in zip(in1.shape, in2.shape))
    swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
    if not (no_swap or swap):
        raise ValueError("One input must be smaller than the other in every dimension.")
    shape_o = in2.shape
    if swap:
        in1, in2 = in2, in1
    shape = in2.shape
    in2 = snp.flip(in2)
    if mode == "valid":
        padding = [(0, 0)] * len(shape)
    elif mode == "same":
        padding = [(s - 1 - (so - 1) // 2, s - so + (so - 1) // 2) for s, so in zip(shape, shape_o)]
    else:
        padding = [(s - 1, s - 1) for s in shape]
    out = lax.conv_general_dilated(in1[None, None], in2[None, None], (1,) * len(shape), padding,
                                   precision=precision)
    return out[0, 0]


def convolve(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """N-d convolution of `in1` and `in2` (`method` "auto" and "direct" compute directly; "fft" is not here)."""
    if method not in ("auto", "direct"):
        raise NotImplementedError(f"stagec.scipy.signal.convolve: method={method!r} is not implemented in stagec "
                                  f"(use 'direct' or 'auto')")
    return _convolve_nd(in1, in2, mode, precision)


def correlate(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """N-d cross-correlation: `convolve(in1, flip(conj(in2)))`."""
    if method not in ("auto", "direct"):
        raise NotImplementedError(f"stagec.scipy.signal.correlate: method={method!r} is not implemented in stagec "
                                  f"(use 'direct' or 'auto')")
    return _convolve_nd(in1, snp.flip(snp.conj(snp.asarray(in2))), mode, precision)


def _check_2d(in1, in2, boundary, fillvalue, fname):
    if snp.ndim(in1) != 2 or snp.ndim(in2) != 2:
        raise ValueError(f"{fname}() only supports 2-dimensional inputs.")
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"stagec.scipy.signal.{fname}: only boundary='fill', fillvalue=0 (as in JAX)")


def convolve2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0, precision=None):
    _check_2d(in1, in2, boundary, fillvalue, "convolve2d")
    return _convolve_nd(in1, in2, mode, precision)


def correlate2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0, precision=None):
    """2-d cross-correlation, JAX's composition of flips and conjugates (which `mode="same"` centres as JAX does)."""
    _check_2d(in1, in2, boundary, fillvalue, "correlate2d")
    in1, in2 = snp.asarray(in1), snp.asarray(in2)
    swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
    same_shape = in1.shape == in2.shape
    if mode == "valid" and swap and not same_shape:
        return _convolve_nd(snp.flip(in2), snp.conj(in1), mode, precision)
    if mode == "full" and swap:
        return snp.conj(_convolve_nd(snp.flip(in2), snp.conj(in1), mode, precision))
    return snp.flip(_convolve_nd(snp.flip(in1), snp.conj(in2), mode, precision))


__getattr__ = missing(__name__, table(
    "fftconvolve stft istft csd welch detrend",
    "stagec has no FFT-based spectral tools in stagec.scipy.signal; use convolve/correlate (direct) or "
    "stagec.numpy.fft"))
