"""`fft-as-dft` (Vulkan): each `stablehlo.fft` of at most `MAX_N` points as real products with its DFT matrices.

IREE 3.13's SPIR-V code for `stablehlo.fft` gave garbage on lavapipe (relative error 2e6 at 64 points, 2e7 at 128,
FFT, IFFT and RFFT alike; below 64 points it did not compile). A transform is now X = x W in float32: complex x = xr +
i xi times W = Wr + i Wi as xr Wr - xi Wi and xr Wi + xi Wr (RFFT: x Wr, x Wi; IRFFT: Xr A - Xi B, the Hermitian
halves folded into A and B), the twiddles computed in float64 on the host, as `stagec.numpy.fft`'s DFT for other
lengths. O(n^2) work and constants: longer transforms are a NotImplementedError."""
from __future__ import annotations

import numpy as np

from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from .irutil import make_constant

MAX_N = 1024  # (two 1024 x 1024 float32 matrices: 8 MB of constants)


def _matrices(kind: str, n: int) -> list[np.ndarray]:
    """The real matrices a transform multiplies by (see the module's docstring)."""
    k = np.arange(n)
    if kind in ("FFT", "IFFT"):
        w = np.exp((2j if kind == "IFFT" else -2j) * np.pi * (np.outer(k, k) % n) / n) / (n if kind == "IFFT" else 1)
        return [w.real, w.imag]
    m = n // 2 + 1
    if kind == "RFFT":
        w = np.exp(-2j * np.pi * (np.outer(k, k[:m]) % n) / n)
        return [w.real, w.imag]
    c = np.where((k[:m] == 0) | (2 * k[:m] == n), 1.0, 2.0)[:, None] / n  # (IRFFT: x_t = sum_k c_k Re(X_k e^(2 pi i k t / n)))
    ang = 2 * np.pi * (np.outer(k[:m], k) % n) / n
    return [c * np.cos(ang), c * np.sin(ang)]


def _dot(x: ir.Value, w: np.ndarray) -> ir.Value:
    """x (..., p) times the float32 constant w (p, q)."""
    t = ir.RankedTensorType(x.type)
    wt = ir.RankedTensorType.get(list(w.shape), t.element_type)
    attrs = {"dot_dimension_numbers": ir.Attribute.parse(
        f"#stablehlo.dot<lhs_contracting_dimensions = [{t.rank - 1}], rhs_contracting_dimensions = [0]>")}
    return ir.Operation.create("stablehlo.dot_general", operands=[x, make_constant(w, wt)], attributes=attrs,
                               results=[ir.RankedTensorType.get([*t.shape[:-1], w.shape[1]], t.element_type)]).result


def _op(name: str, operands, ty) -> ir.Value:
    return ir.Operation.create(f"stablehlo.{name}", operands=list(operands), results=[ty]).result


def fft_as_dft(module: ir.Module) -> int:
    """Rewrite each 1-D float32/complex64 `stablehlo.fft` (static shapes); how many."""
    found = []
    module.operation.walk(lambda op: (found.append(op) if op.name == "stablehlo.fft" else None) or ir.WalkResult.ADVANCE)
    for op in found:
        kind = str(op.attributes["fft_type"]).split()[-1].rstrip(">")
        lengths = list(ir.DenseI64ArrayAttr(op.attributes["fft_length"]))
        x, out = op.operands[0], ir.RankedTensorType(op.result.type)
        if len(lengths) != 1 or not ir.RankedTensorType(x.type).has_static_shape:
            raise NotImplementedError(f"stablehlo.fft of {lengths} on Vulkan: IREE 3.13's gives wrong values, and stagec "
                                      "computes only 1-D transforms of static shapes as products")
        n = lengths[0]
        if n > MAX_N:
            raise NotImplementedError(f"fft of {n} points on Vulkan: IREE 3.13's gives wrong values, and stagec's "
                                      f"products with the DFT matrix go to {MAX_N} points; use the cpu or cuda backend")
        with ir.InsertionPoint(op), op.location:
            real_out = ir.RankedTensorType.get(out.shape, ir.F32Type.get())
            a, b = _matrices(kind, n)
            if kind == "RFFT":
                r = _op("complex", [_dot(x, a), _dot(x, b)], out)
            else:
                part = ir.RankedTensorType.get(ir.RankedTensorType(x.type).shape, ir.F32Type.get())
                xr, xi = _op("real", [x], part), _op("imag", [x], part)
                if kind == "IRFFT":
                    r = _op("subtract", [_dot(xr, a), _dot(xi, b)], out)
                else:
                    re = _op("subtract", [_dot(xr, a), _dot(xi, b)], real_out)
                    im = _op("add", [_dot(xr, b), _dot(xi, a)], real_out)
                    r = _op("complex", [re, im], out)
        op.result.replace_all_uses_with(r)
        op.erase()
    return len(found)


class FftAsDft(Pass):
    name, kind = "fft-as-dft", "legalize"
    description = f"each 1-D stablehlo.fft of at most {MAX_N} points as real products with its DFT matrices (Vulkan)"
    workaround = Workaround("3.13", "tests/test_fft.py::test_vulkan_ffts")

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        if n := fft_as_dft(module):
            stats.rewrites["fft-as-dft"] += n


FFT_AS_DFT = register(FftAsDft())
