"""`fft`: discrete Fourier transforms over the trailing axes (`stablehlo.fft`).

IREE 3.13 (llvm-cpu) compiles `stablehlo.fft` only over one axis, for complex64 (FFT, IFFT) or float32
(RFFT, IRFFT), with a power-of-two length from 2; f64/complex128 and 2-D or 3-D `fft_lengths` fail to legalize.
The wrapper raises NotImplementedError naming the case; `stagec.numpy.fft` computes the others as DFTs.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import dtypes as _dt
from .. import lowering as L
from ..core import Primitive, ShapedArray, aval_of

FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")


def _fft_rule(x: ShapedArray, *, fft_type: str, fft_lengths: tuple) -> ShapedArray:
    k = len(fft_lengths)
    if fft_type not in FFT_TYPES:
        raise ValueError(f"fft: unknown fft_type {fft_type!r} (one of {FFT_TYPES})")
    if not 1 <= k <= 3 or x.ndim < k:
        raise ValueError(f"fft: fft_lengths {fft_lengths} needs 1 to 3 trailing axes of shape {x.shape}")
    kind = _dt.kind(x.dtype)
    real = np.float64 if x.dtype in (np.float64, np.complex128) else np.float32
    cplx = np.complex128 if real == np.float64 else np.complex64
    if fft_type == "RFFT":
        if kind != "f" or x.shape[-k:] != tuple(fft_lengths):
            raise TypeError(f"fft RFFT needs a float32/float64 operand ending in {fft_lengths}, got {x.str_short()}")
        return ShapedArray(x.shape[:-1] + (fft_lengths[-1] // 2 + 1,), cplx)
    if kind != "c":
        raise TypeError(f"fft {fft_type} needs a complex operand, got {x.str_short()}")
    if fft_type == "IRFFT":
        want = tuple(fft_lengths[:-1]) + (fft_lengths[-1] // 2 + 1,)
        if x.shape[-k:] != want:
            raise TypeError(f"fft IRFFT with fft_lengths {fft_lengths} needs trailing shape {want}, got {x.shape}")
        return ShapedArray(x.shape[:-1] + (fft_lengths[-1],), real)
    if x.shape[-k:] != tuple(fft_lengths):
        raise TypeError(f"fft {fft_type}: fft_lengths {fft_lengths} do not match trailing shape {x.shape}")
    return x.strip_weak()


fft_p = Primitive("fft", _fft_rule)


@fft_p.def_lowering
def _fft_lower(ctx: L.Ctx, x, *, fft_type: str, fft_lengths: tuple):
    ir = L.mlir()
    return [ctx.op1("stablehlo.fft", [x], attributes={
        "fft_type": ir.Attribute.parse(f"#stablehlo<fft_type {fft_type}>"), "fft_length": L.i64s(fft_lengths)})]


def supported(aval: ShapedArray, fft_type: str, fft_lengths: Sequence[int]) -> str | None:
    """Why IREE 3.13 cannot compile this transform (None when it can)."""
    if len(fft_lengths) != 1:
        return f"{len(fft_lengths)}-D fft_lengths (only one axis at a time)"
    n = int(fft_lengths[0])
    if n < 2 or n & (n - 1):  # (length 1: RFFT in a larger module and IRFFT failed to translate to LLVM)
        return f"length {n} (only powers of two from 2)"
    if aval.dtype not in (np.float32, np.complex64):
        return f"dtype {aval.dtype} (only float32/complex64)"
    return None


def fft(x, fft_type: str, fft_lengths: Sequence[int]):
    """`stablehlo.fft` over the trailing `len(fft_lengths)` axes (unnormalized forward, 1/n inverse)."""
    lengths = tuple(int(n) for n in fft_lengths)
    why = supported(aval_of(x), fft_type, lengths)
    if why is not None:
        raise NotImplementedError(f"fft {fft_type}: IREE 3.13 cannot compile stablehlo.fft for {why}")
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=lengths)


# ---------------------------------------------------------------- batching rules

from ._batch import moveaxis  # noqa: E402


@fft_p.def_batch
def _fft_batch(args, dims, *, fft_type, fft_lengths):
    (x,), (d,) = args, dims
    return fft_p.bind(moveaxis(x, d, 0), fft_type=fft_type, fft_lengths=fft_lengths), 0


# ---------------------------------------------------------------- differentiation rules (JAX's)

from . import _ad  # noqa: E402
from ..core import Const  # noqa: E402
from .elementwise import complex_p, imag_p, mul, neg, real_p  # noqa: E402
from .structural import pad  # noqa: E402


def _rfft_transpose(ct, fft_lengths: tuple):
    """RFFT is FFT of the real input, truncated to n//2 + 1 bins: its transpose zero-pads the bins back to n,
    applies FFT (the DFT matrix is symmetric) and keeps the real part (the transpose of real -> complex)."""
    n = fft_lengths[-1]
    shape = aval_of(ct).shape
    widths = [(0, 0, 0)] * (len(shape) - 1) + [(0, n - shape[-1], 0)]
    full = pad(ct, np.zeros((), aval_of(ct).dtype), widths)  # (in parts for IREE: legalize's complex-pads-in-parts)
    return real_p.bind(fft_p.bind(full, fft_type="FFT", fft_lengths=fft_lengths))


def _irfft_transpose(ct, fft_lengths: tuple):
    """IRFFT reads bins 1..n/2-1 twice (as themselves and their conjugates): the conjugated RFFT of the
    cotangent, those bins doubled, scaled by 1/n."""
    x = fft_p.bind(ct, fft_type="RFFT", fft_lengths=fft_lengths)
    x = complex_p.bind(real_p.bind(x), neg(imag_p.bind(x)))
    m, n = aval_of(x).shape[-1], fft_lengths[-1]
    odd = n % 2
    w = np.concatenate([[1.0], np.full(m - 2 + odd, 2.0), np.ones(1 - odd)]) / float(np.prod(fft_lengths))
    wc = np.broadcast_to(w.astype(aval_of(x).dtype), aval_of(x).shape)
    return mul(x, Const(np.ascontiguousarray(wc), ShapedArray(wc.shape, wc.dtype)))


def _fft_transpose(ct, x, *, fft_type: str, fft_lengths: tuple):
    if fft_type == "RFFT":
        return _rfft_transpose(ct, fft_lengths)
    if fft_type == "IRFFT":
        return _irfft_transpose(ct, fft_lengths)
    return fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)  # the DFT matrix is symmetric


_ad.deflinear(fft_p, _fft_transpose)
