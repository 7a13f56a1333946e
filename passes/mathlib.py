"""`mathlib`: elementwise functions whose IREE 3.13 lowering is inaccurate (or missing), rewritten as arithmetic.

The StableHLO stage keeps the user's ops (`stablehlo.sine`, `stablehlo.power`, `chlo.asin`, ...); this pass runs
after it, just before IREE, and replaces each (op, element type) listed in `EXPANSIONS` by an accurate expansion.
Each entry names the IREE behaviour it replaces, the IREE version that showed it and the test that holds the bound
(tests/test_accuracy.py). Float32 and narrower types compute in float64 arithmetic (add, multiply, divide, sqrt,
bit operations: vectorized everywhere, no libm) and round once: within 1 ulp. Float64 expansions use IREE's float64
`log` (libm's on the CPU, libdevice's on CUDA), which is right, and arithmetic.

Kernels: Payne-Hanek reduction and FreeBSD msun's float kernels (sin, cos, tan; below 2^19 Cody-Waite's reduction
and, for sin and cos, one odd polynomial on [-pi/2, pi/2]); fdlibm's `atan` (atan, atan2,
asin, acos); `log` from the float32 exponent bits and the series of atanh; `exp` as 2^k e^r with k through int32
(float32 results) or IREE's own (float64); Newton's iteration for `cbrt`; Kahan's `log1p` trick (x log(1+x) /
((1+x) - 1)) for log1p, asinh and atanh; float64 `power` through a double-double log and exp. exp2, cosh, sinh and
erf (`f32=True`) compute in float32 arithmetic: within 2 ulps at float32 speed. sin, cos and tan (`f32=True`) run in
tiers (`_tiered`): on the CPU float32 arithmetic below 512 (`_fast32`), float64 Cody-Waite below 2^19, Payne-Hanek
above, a tier computed only where some element needs it (`stablehlo.if`). complex64 power (NumPy's `npy_cpow`), sign,
sinh, cosh, asin, acos, atan, asinh, acosh, atanh (Hull et al., Kahan) compute in float64 arithmetic on every target.
`mathlib-glsl` holds what only Vulkan (GLSL) gets wrong (fmod, and Vulkan's complex64 abs, divide, sqrt, exp, log,
log1p); the Vulkan target declares it.
`mathlib-complex` (CPU, CUDA): complex64 functions in float64, complex128 ones with power-of-2 scaling and float64
kernels (asin ... atanh with the huge/tiny edges of Hull et al.'s and Kahan's algorithms, power with y log x in
double-double arithmetic); `mathlib-cpu`: float64 exp, logistic, expm1, tanh as vectorizable arithmetic (IREE calls libm per element),
float32 expm1, asinh, acosh, atanh in float32 arithmetic (IREE's: right, 2-4x slower).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable

import numpy as np
from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from . import exp64, tanh64
from .exp64 import LN2_HI, LN2_LO
from .irutil import Builder, make_constant, nested_ops, producer, splat_value, tensor_type

IREE = "3.13.0"


@dataclasses.dataclass(frozen=True)
class Expansion:
    """One rewrite: `op` of element types `types` becomes `build(b, *operands)` (in float64 for narrower types)."""
    op: str
    types: tuple[str, ...]
    build: Callable
    replaces: str  # what IREE does with the op
    test: str  # the test that shows the bug without the expansion and holds the bound with it
    iree: str = IREE
    applies: Callable | None = None  # where only some of the op's uses are replaced: fn(op) -> bool
    f32: bool = False  # narrow types computed in float32 (not float64)


# ---------------------------------------------------------------- float64 arithmetic helpers

class _Builder(Builder):
    """A Builder whose constants, where `t` has dynamic dimensions (eager shape-polymorphic kernels), are scalars
    broadcast to the run-time shape of `like`."""

    def __init__(self, t: ir.RankedTensorType, like: ir.Value):
        super().__init__(t)
        self._shape = None
        if any(ir.ShapedType.is_dynamic_size(d) for d in t.shape):
            i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
            sizes = [ir.Operation.create("stablehlo.reshape", results=[ir.RankedTensorType.get([1], i32)], operands=[
                ir.Operation.create("stablehlo.get_dimension_size", results=[ir.RankedTensorType.get([], i32)],
                                    operands=[like], attributes={"dimension": ir.IntegerAttr.get(i64, d)}).result]).result
                for d in range(t.rank)]
            self._shape = ir.Operation.create("stablehlo.concatenate", results=[ir.RankedTensorType.get([t.rank], i32)],
                                              operands=sizes, attributes={"dimension": ir.IntegerAttr.get(i64, 0)}).result

    def c(self, v, ty=None) -> ir.Value:
        ty = ty or self.t
        if self._shape is None:
            return super().c(v, ty)
        scalar = make_constant(np.array(v), ir.RankedTensorType.get([], ty.element_type))
        return ir.Operation.create("stablehlo.dynamic_broadcast_in_dim", results=[ty], operands=[scalar, self._shape],
                                   attributes={"broadcast_dimensions": ir.DenseI64ArrayAttr.get([])}).result


class F:
    """Elementwise float64 (or `ty`) StableHLO ops of one shape, constants cached."""

    def __init__(self, b: Builder):
        self.b, self.t = b, b.t
        self.i64 = ir.RankedTensorType.get(b.t.shape, ir.IntegerType.get_signless(64))
        self.i32 = ir.RankedTensorType.get(b.t.shape, ir.IntegerType.get_signless(32))
        self.f32 = ir.RankedTensorType.get(b.t.shape, ir.F32Type.get())
        self._c: dict = {}

    def c(self, v, ty=None):
        key = (float(v) if ty is None else int(v), str(ty))
        if key not in self._c:
            self._c[key] = self.b.c(v, ty)
        return self._c[key]

    def __call__(self, name, *xs, ty=None):
        xs = [self.c(x) if isinstance(x, (int, float)) else x for x in xs]
        return self.b.op(name, *xs, ty=ty)

    def add(self, a, b): return self("add", a, b)
    def sub(self, a, b): return self("subtract", a, b)
    def mul(self, a, b): return self("multiply", a, b)
    def div(self, a, b): return self("divide", a, b)
    def neg(self, a): return self("negate", a)
    def sel(self, p, a, b): return self("select", p, a, b)

    def cmp(self, a, b, d):
        return self.b.compare(a, self.c(b) if isinstance(b, (int, float)) else b, d)

    def poly(self, x, coeffs):
        """coeffs[0] + x (coeffs[1] + x (...)) by Horner."""
        p = self.c(coeffs[-1])
        for k in coeffs[-2::-1]:
            p = self.add(self.mul(p, x), k)
        return p

    def int_(self, name, *xs):
        xs = [self.c(x, self.i64) if isinstance(x, int) else x for x in xs]
        return self.b.op(name, *xs, ty=self.i64)

    def bits(self, x):
        return self.b.op("bitcast_convert", x, ty=self.i64)

    def from_bits(self, i):
        return self.b.op("bitcast_convert", i, ty=self.t)

    def signed(self, x, r):
        """`r` (computed on |x|) with x's sign; x itself where x is 0 (keeps -0)."""
        r = self.sel(self.cmp(x, 0.0, "LT"), self.neg(r), r)
        return self.sel(self.cmp(x, 0.0, "EQ"), x, r)


# ---------------------------------------------------------------- sin, cos, tan (float32 and narrower)

BITS, CHUNKS = 29, 7  # 7 x 29 bits of 2/pi reach 2^-203: |x| < 2^128 leaves an error below 2^-75 in f
_MODDED = 5  # x * c_i for i >= 5 is below 2^-17 for every float32: no reduction mod 4 needed
_TINY = 2.0 ** -12


def _two_over_pi_chunks(n: int = CHUNKS, bits: int = BITS) -> tuple[float, ...]:
    """2/pi = sum(c_i) + O(2^-(n*bits)), each c_i = d_i * 2^-(bits*(i+1)) with d_i < 2^bits (exact floats)."""
    prec = n * bits + 64

    def atan_inv(m: int) -> int:  # atan(1/m) * 2^prec, by its Taylor series in integers
        total, term, k, sign = 0, (1 << prec) // m, 1, 1
        while term:
            total += sign * (term // k)
            term //= m * m
            k, sign = k + 2, -sign
        return total
    pi = 16 * atan_inv(5) - 4 * atan_inv(239)  # Machin's formula, ~prec bits
    digits = ((2 << (2 * prec)) // pi) >> (prec - n * bits)  # the first n*bits fraction bits of 2/pi
    mask = (1 << bits) - 1
    return tuple(float((digits >> (bits * (n - 1 - i))) & mask) * 2.0 ** (-bits * (i + 1)) for i in range(n))


C = _two_over_pi_chunks()
PIO2 = 1.5707963267948966
# FreeBSD msun k_sinf.c, k_cosf.c, k_tanf.c (double kernels of the float functions).
S = (-0.166666666416265235595, 0.0083333293858894631756, -0.000198393348360966317347, 0.0000027183114939898219064)
CC = (-0.499999997251031003120, 0.0416666233237390631894, -0.00138867637746099294692, 0.0000243904487962774090654)
T = (0.333331395030791399758, 0.133392002712976742718, 0.0533812378445670393523, 0.0245283181166547278873,
     0.00297435743359967304927, 0.00946564784943673166728)
# FreeBSD e_rem_pio2f.c's medium range: pi/2 in 33 + 53 bits; k * PIO2_1 is exact for |k| < 2^20.
INVPIO2, PIO2_1, PIO2_1T = 6.36619772367581382433e-01, 1.57079632673412561417e+00, 6.07710050650619224932e-11
MEDIUM = 2.0 ** 19  # below: Cody-Waite's reduction (error < 2^-60 of f); above: Payne-Hanek


def _mod4(f: F, t):
    return f.sub(t, f.mul(f("floor", f.mul(t, 0.25)), 4.0))


def _reduce(f: F, a):
    """(y, k): a = y + k pi/2 + 2 pi n, |y| <= pi/4 (+2^-16), k an int64 in [0, 4), for every finite float32
    a >= 0: Cody-Waite below `MEDIUM`, Payne-Hanek (every term exact or relative to the small sum) above."""
    r = [f.mul(a, c) for c in C]
    r = [_mod4(f, t) if i < _MODDED else t for i, t in enumerate(r)]
    total = r[0]
    for t in r[1:_MODDED]:  # the rest (< 2^-17) can only move k where either choice leaves |f| <= 1/2 + 2^-16
        total = f.add(total, t)
    k_big = f("floor", f.add(total, 0.5))
    fr = f.sub(r[0], k_big)
    for t in r[1:]:
        fr = f.add(fr, t)
    y_big = f.mul(fr, PIO2)
    # the nearest integer through int32 (IREE's float64 floor is a libm call per element on the CPU)
    k_med = f("convert", f.b.op("convert", f.add(f.mul(f.sel(f.cmp(a, MEDIUM, "LT"), a, f.c(0.0)), INVPIO2), 0.5),
                                ty=f.i32))
    y_med = f.sub(f.sub(a, f.mul(k_med, PIO2_1)), f.mul(k_med, PIO2_1T))
    med = f.cmp(a, MEDIUM, "LT")
    y, k = f.sel(med, y_med, y_big), f.sel(med, k_med, k_big)
    return y, f("convert", k, ty=f.i32)  # (int32: Vulkan has no float64 <-> int64 conversion)


def _bit(f: F, k, bit: int):
    one = f.c(bit, f.i32)
    return f.b.compare(f.b.op("and", k, one, ty=f.i32), one, "EQ")


def _kernel(name: str, f: F, x, a, y, q):
    """sin, cos or tan of x (float64 arithmetic) from its reduction |x| = y + q pi/2 (mod 2 pi), |y| <= pi/4 + eps:
    msun's double kernels of the float functions."""
    z = f.mul(y, y)
    w, s = f.mul(z, z), f.mul(z, y)
    odd, q2, neg_x = _bit(f, q, 1), _bit(f, q, 2), f.cmp(x, 0.0, "LT")
    if name == "tan":
        t = f.add(f.add(y, f.mul(s, f.poly(z, T[:2]))),
                  f.mul(f.mul(s, w), f.add(f.poly(z, T[2:4]), f.mul(w, f.poly(z, T[4:])))))
        t = f.sel(odd, f.neg(f.div(1.0, t)), t)
        out = f.sel(neg_x, f.neg(t), t)
    else:
        sn = f.add(f.add(y, f.mul(s, f.poly(z, S[:2]))), f.mul(f.mul(s, w), f.poly(z, S[2:])))
        cs = f.add(f.add(f.add(1.0, f.mul(z, CC[0])), f.mul(w, CC[1])), f.mul(f.mul(w, z), f.poly(z, CC[2:])))
        if name == "sin":  # sin(|x|) is negative in quadrants 2 and 3, and sin(x) = -sin(|x|) for x < 0
            v = f.sel(odd, cs, sn)
            out = f.sel(f.b.op("xor", q2, neg_x, ty=f.b.i1), f.neg(v), v)
        else:  # cos is negative in quadrants 1 and 2
            v = f.sel(odd, sn, cs)
            out = f.sel(f.b.op("xor", q2, odd, ty=f.b.i1), f.neg(v), v)
    if name != "cos":  # sin x and tan x round to x below 2^-12 (keeps -0 and subnormals)
        out = f.sel(f.cmp(a, _TINY, "LT"), x, out)
    return out


def _sin_cos_tan(name: str):
    """sin, cos or tan of a float64 tensor holding float32 values (any magnitude): `_reduce`, then `_kernel`."""
    def build(f: F, x):
        a = f("abs", x)
        y, q = _reduce(f, a)
        return _kernel(name, f, x, a, y, q)
    return build


# sin y = y + y^3 P(y^2) on [-pi/2, pi/2] (fitted for relative error, 2^-27.2: 0.11 ulp of float32)
SIN_PI = (-0.16666659352426047, 0.008333062208708294, -0.00019809352500622387, 2.605294768083026e-06)
# sin and cos in float32 arithmetic (`_reduce32`, `_kernel32`, for |x| < SMALL32), within 1 ulp.
# pi/2 = Q[0] + ... + Q[4]: Q[0..3] of at most 11 bits (k Q[i] exact for k < 2^13), Q[4] the rest rounded.
Q = (float.fromhex("0x1.92p0"), float.fromhex("0x1.fbp-12"), float.fromhex("0x1.51p-22"), float.fromhex("0x1.0bp-34"),
     6.223372171896613e-14)
SMALL32 = 12800.0  # k = round(a 2/pi) <= 8149 < 2^13 below
# Tensors of fewer elements take both reductions unconditionally (the same bits): a `stablehlo.if` there costs a
# reduction, a host-side branch and a cut in the dispatch (a chain of 40 scalar sins became 80 dispatches).
IF_ELEMENTS = 1 << 14


def _two_sum32(f: F, a, b):
    s = f.add(a, b)
    bb = f.sub(s, a)
    return s, f.add(f.sub(a, f.sub(s, bb)), f.sub(b, bb))


def _two_prod32(f: F, a, b):
    """(p, e): p = fl(a b), p + e = a b exactly, in float32 arithmetic (Dekker's split in 12-bit halves)."""
    def split(v):
        c = f.mul(v, 4097.0)
        h = f.sub(c, f.sub(c, v))
        return h, f.sub(v, h)
    p = f.mul(a, b)
    (ah, al), (bh, bl) = split(a), split(b)
    return p, f.add(f.add(f.add(f.sub(f.mul(ah, bh), p), f.mul(ah, bl)), f.mul(al, bh)), f.mul(al, bl))


def _reduce32(f: F, a):
    """(yh, yl, k) in float32 arithmetic: a = yh + yl + k pi/2 to about 2^-55 absolute, |yh| <= pi/4 + 2^-9, k int32,
    for float32 0 <= a < SMALL32 (else k = 0). a - k Q[0] - k Q[1] is exact (Sterbenz, then a 24-bit result), the
    rest in two TwoSums."""
    ki = f.b.op("convert", f.add(f.mul(f.sel(f.cmp(a, SMALL32, "LT"), a, f.c(0.0)), INVPIO2), 0.5), ty=f.i32)
    k = f("convert", ki)
    r = f.sub(f.sub(a, f.mul(k, Q[0])), f.mul(k, Q[1]))
    yh, e1 = _two_sum32(f, r, f.neg(f.mul(k, Q[2])))
    yh, e2 = _two_sum32(f, yh, f.neg(f.mul(k, Q[3])))
    return yh, f.sub(f.add(e1, e2), f.mul(k, Q[4])), ki


def _kernel32(name: str, f: F, x, a, yh, yl, q):
    """sin, cos or tan of x from its reduction |x| = yh + yl + q pi/2 (mod 2 pi), in float32 arithmetic: msun's
    kernels at yh, yl's first-order term added last (sin(yh + yl) ~ sin yh + yl (1 - yh^2/2), cos ~ cos yh - yh yl,
    tan ~ tan yh + yl (1 + tan^2 yh)); cos's 1 - yh^2/2 with the rounding errors of yh^2 and of the difference kept
    (fdlibm's k_cos); tan's -1/t with the division's residual (Dekker's product)."""
    z = f.mul(yh, yh)
    w, s = f.mul(z, z), f.mul(z, yh)
    odd, q2, neg_x = _bit(f, q, 1), _bit(f, q, 2), f.cmp(x, 0.0, "LT")
    if name == "tan":
        c0 = f.add(f.mul(s, f.poly(z, T[:2])), f.mul(f.mul(s, w), f.add(f.poly(z, T[2:4]), f.mul(w, f.poly(z, T[4:])))))
        t0 = f.add(yh, c0)
        corr = f.add(c0, f.mul(yl, f.add(1.0, f.mul(t0, t0))))
        th = f.add(yh, corr)
        tl = f.sub(corr, f.sub(th, yh))  # th + tl = tan(yh + yl)
        inv = f.div(-1.0, th)
        ph, pl = _two_prod32(f, inv, th)
        e = f.sub(f.sub(-1.0, ph), pl)  # -1 - inv th, exactly
        t = f.sel(odd, f.add(inv, f.mul(inv, f.sub(f.mul(inv, tl), e))), f.add(th, tl))  # -1/(th + tl)
        out = f.sel(neg_x, f.neg(t), t)
    else:
        hz = f.mul(z, 0.5)
        sn = f.add(yh, f.add(f.add(f.mul(s, f.poly(z, S[:2])), f.mul(f.mul(s, w), f.poly(z, S[2:]))),
                             f.mul(yl, f.sub(1.0, hz))))
        wc = f.sub(1.0, hz)
        tail = f.add(f.add(f.mul(z, 0.5 + CC[0]), f.mul(w, CC[1])), f.mul(f.mul(w, z), f.poly(z, CC[2:])))
        zl = _two_prod32(f, yh, yh)[1]  # (z's rounding error: 0.3 ulp of cos near pi/4 otherwise)
        cs = f.add(wc, f.add(f.sub(f.sub(1.0, wc), hz), f.sub(tail, f.add(f.mul(yh, yl), f.mul(zl, 0.5)))))
        if name == "sin":
            v = f.sel(odd, cs, sn)
            out = f.sel(f.b.op("xor", q2, neg_x, ty=f.b.i1), f.neg(v), v)
        else:
            v = f.sel(odd, sn, cs)
            out = f.sel(f.b.op("xor", q2, odd, ty=f.b.i1), f.neg(v), v)
    if name != "cos":
        out = f.sel(f.cmp(a, _TINY, "LT"), x, out)
    return f.sel(f.cmp(a, math.inf, "EQ"), f.c(math.nan), out)


def _max_bits(f: F, x):
    """The largest |x| of a float32 tensor, as its int32 bits (a 0-d tensor; NaN's bits are above inf's): an integer
    max vectorizes better than a float one with NaN semantics."""
    i32 = ir.IntegerType.get_signless(32)
    t0 = ir.RankedTensorType.get([], i32)
    bits = f.b.op("and", f.b.op("bitcast_convert", x, ty=f.i32), f.c(0x7FFFFFFF, f.i32), ty=f.i32)
    red = ir.Operation.create("stablehlo.reduce", results=[t0], operands=[bits, make_constant(np.array(0, np.int32), t0)],
                              attributes={"dimensions": ir.DenseI64ArrayAttr.get(list(range(f.t.rank)))}, regions=1)
    block = red.regions[0].blocks.append(t0, t0)
    with ir.InsertionPoint(block):
        m = ir.Operation.create("stablehlo.maximum", results=[t0], operands=list(block.arguments)).result
        ir.Operation.create("stablehlo.return", results=[], operands=[m])
    return red.result


def _below(m, bound: float):
    """A 0-d i1 tensor: whether the bits `m` of `_max_bits` are those of a float32 below `bound`."""
    t0 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))
    limit = make_constant(np.array(np.float32(bound)).view(np.int32), t0)
    return ir.Operation.create("stablehlo.compare", results=[ir.RankedTensorType.get([], ir.IntegerType.get_signless(1))],
                               operands=[m, limit], attributes={"comparison_direction": ir.Attribute.parse(
                                   "#stablehlo<comparison_direction LT>")}).result


def _fold(v, dims, op: str, init):
    t = ir.RankedTensorType(v.type)
    t0 = ir.RankedTensorType.get([], t.element_type)
    red = ir.Operation.create("stablehlo.reduce", results=[ir.RankedTensorType.get(
        [d for i, d in enumerate(t.shape) if i not in dims], t.element_type)], operands=[v, make_constant(
            np.array(init), t0)], attributes={"dimensions": ir.DenseI64ArrayAttr.get(list(dims))}, regions=1)
    block = red.regions[0].blocks.append(t0, t0)
    with ir.InsertionPoint(block):
        m = ir.Operation.create(f"stablehlo.{op}", results=[t0], operands=list(block.arguments)).result
        ir.Operation.create("stablehlo.return", results=[], operands=[m])
    return red.result


ROWS = 256  # the first stage of `_tiers`' reduction: this many rows, reduced in parallel


def _tiers(f: F, x):
    """The largest |x| of x's elements as its float32 bits (an int32: |x|'s order; NaN above inf), reduced by max:
    over ROWS rows in parallel where the size allows (a 1-d int32 tensor of the rows' maxima), else over all (0-d).
    `_all_below` compares it with a tier's bound."""
    i32 = ir.IntegerType.get_signless(32)
    n = math.prod(f.t.shape) if f.t.has_static_shape else 0
    rows = n and n % ROWS == 0 and n >= ROWS * ROWS
    src = producer(x)
    if src is not None and src.name == "stablehlo.convert" and str(tensor_type(src.operands[0]).element_type) in (
            "f16", "bf16", "f64"):  # (float16, bfloat16: x widened; a float64 one narrowed)
        # |x| widened apart from x: IREE 3.13 made the shared widening a result of the reduction's dispatch, which
        # SPIR-V staged whole in workgroup memory (float16 sin of 20000 values: 80000 bytes, over Vulkan's 16384)
        narrow = src.operands[0]
        x = ir.Operation.create("stablehlo.convert", results=[x.type], operands=[ir.Operation.create(
            "stablehlo.abs", results=[narrow.type], operands=[narrow]).result]).result
    if rows:  # (x reshaped first: its bits are not those the kernel takes, which would make this dispatch write them)
        x = ir.Operation.create("stablehlo.reshape", results=[ir.RankedTensorType.get(
            [ROWS, n // ROWS], f.t.element_type)], operands=[x]).result
    shape = ir.RankedTensorType(x.type).shape
    it = ir.RankedTensorType.get(shape, i32)
    b = _Builder(ir.RankedTensorType(x.type), x)
    v = b.op("and", b.op("bitcast_convert", x, ty=it), b.c(0x7FFFFFFF, it), ty=it)
    return _fold(v, [1] if rows else list(range(len(shape))), "maximum", np.int32(0))


def _all_below(tiers, bound: float):
    """A 0-d i1 tensor: whether every |x| of `_tiers` is below `bound` (an `and` of the rows: no scalar dispatch)."""
    t = ir.RankedTensorType(tiers.type)
    i1 = ir.IntegerType.get_signless(1)
    lim = int(np.array(np.float32(bound)).view(np.int32))
    lt = ir.Operation.create("stablehlo.compare", results=[ir.RankedTensorType.get(t.shape, i1)], operands=[
        tiers, make_constant(np.array(lim, np.int32), t)], attributes={"comparison_direction": ir.Attribute.parse(
            "#stablehlo<comparison_direction LT>")}).result
    return _fold(lt, list(range(t.rank)), "and", np.bool_(True)) if t.rank else lt


def _branch(f: F, pred, then, other):
    """`stablehlo.if` on the 0-d `pred`: then(F) or other(F), each a float32 tensor like f's."""
    op = ir.Operation.create("stablehlo.if", results=[f.t], operands=[pred], regions=2)
    for region, fn in zip(op.regions, (then, other)):
        with ir.InsertionPoint(region.blocks.append()):
            ir.Operation.create("stablehlo.return", results=[], operands=[fn(F(f.b))])
    return op.result


def _medium32(name: str, f: F, x):
    """float32 sin, cos or tan of x (a float32 tensor), for |x| < MEDIUM: Cody-Waite's reduction in float64, then
    sin and cos by one odd polynomial on [-pi/2, pi/2] (|x| = y + k pi for sin, y + (k + 1/2) pi for cos), tan by
    msun's polynomial on [-pi/4, pi/4] (Horner's order); rounded to float32, the sign set there."""
    d = F(_Builder(ir.RankedTensorType.get(f.t.shape, ir.F64Type.get()), x))
    a = d("abs", d("convert", x))
    neg_x = f.cmp(x, 0.0, "LT")
    if name == "tan":
        ki = d.b.op("convert", d.add(d.mul(a, INVPIO2), 0.5), ty=d.i32)  # (a >= 0: truncation rounds)
        m = d("convert", ki)
    else:  # sin: k = round(a / pi); cos: floor(a / pi); y = a - k pi (sin), a - (2k + 1) pi/2 (cos)
        ki = d.b.op("convert", d.add(d.mul(a, 1 / math.pi), 0.5) if name == "sin" else d.mul(a, 1 / math.pi), ty=d.i32)
        m = d("convert", ki)
        m = m if name == "sin" else d.add(d.mul(m, 2.0), 1.0)
    pi_1, pi_1t = (2 * PIO2_1, 2 * PIO2_1T) if name == "sin" else (PIO2_1, PIO2_1T)  # (sin: m = k, times pi)
    y = d.sub(d.sub(a, d.mul(m, pi_1)), d.mul(m, pi_1t))
    if name == "tan":  # msun's polynomial by Horner; -1/t in odd quadrants; the sign set below
        z = d.mul(y, y)
        t = d.add(y, d.mul(d.mul(z, y), d.poly(z, T)))
        r = d("convert", d.sel(_bit(f, ki, 1), d.div(-1.0, t), t), ty=f.t)
        flip = neg_x
    else:
        z = d.mul(y, y)
        r = d("convert", d.add(y, d.mul(d.mul(z, y), d.poly(z, SIN_PI))), ty=f.t)
        flip = f.b.op("xor", _bit(f, ki, 1), neg_x, ty=f.b.i1) if name == "sin" else f.b.compare(  # (cos: k even)
            f.b.op("and", ki, f.c(1, f.i32), ty=f.i32), f.c(0, f.i32), "EQ")
    out = f.sel(flip, f.neg(r), r)
    return out if name == "cos" else f.sel(f.cmp(f("abs", x), _TINY, "LT"), x, out)


# float32 sin, cos, tan for |x| < FAST32, all in float32 arithmetic (`_fast32`).
FAST32 = 512.0  # below: k = round(2|x|/pi) <= 326 < 2^9
# pi/2 = P[0] + P[1] + P[2] + P[3]: 15, 10 and 9 bits (k P[i] exact, k P[0] and k P[1] multiples of 2^-24, k P[2] of
# 2^-34), the rest rounded (k times its error below 2^-54)
P = (float.fromhex("0x1.921cp0"), float.fromhex("0x1.da8p-15"), float.fromhex("0x1.11p-26"), 2.563344151594519e-12)
MAGIC = 12582912.0  # 1.5 * 2^23: v + MAGIC rounds v to an integer, held in the low bits
# On [-pi/4 - 2^-9, pi/4 + 2^-9], float32 coefficients (fitted minimax, each rounded then the rest refitted): sin y =
# y + y^3 S(y^2) (relative error 2^-27.8), cos y = 1 - y^2/2 + y^4 C(y^2) (2^-32.9); tan y = y (1 + a z) / (1 + b z +
# c z^2), z = y^2 (TANR: (a, b, c), minimax rational, 2^-25.8).
S32 = (-0.16666653752326965, 0.008332106284797192, -0.00019507846445776522)
C32 = (0.04166664555668831, -0.0013887308305129409, 2.443209450575523e-05)
TANR = (-0.09578283131122589, -0.4291166663169861, 0.009710023179650307)


def _fast32(name: str, f: F, x):
    """float32 sin, cos or tan of x for |x| < FAST32, in float32 arithmetic. |x| = yh + yl + k pi/2, k = round(2|x|/pi)
    through MAGIC; yh + yl to about 2^-54 (the float32s below 512 come within 2^-27.8 of a multiple of pi/2): |x| - k
    P[0] - k P[1] is exact (Sterbenz, then a multiple of 2^-24 below 1), k P[2] by Fast2Sum (exact where the
    difference is below 2^-10; else the larger operand comes first), k P[3] into yl. Then msun's scheme: sin or cos by
    k's parity, cos's 1 - y^2/2 with its rounding error kept; tan as one division n / d of the rational's numerator
    (yl's term yl tan'(y) ~ yl (1 + y^2) folded in as yl (1 + y^2) d) and denominator, -d / n in odd quadrants (within
    2.6 ulps: each of n, d and n / d rounds once). Signs by xor of the sign bit. No sum has two products as operands:
    IREE's CPU code contracts a product and a sum into an FMA, and which of two products is fused depends on the
    code around it (the tiers' dispatches gave different bits); a sum of an FMA with +0 ends a product."""
    a = f("abs", x)
    t = f.add(f.mul(a, 2 / math.pi), MAGIC)
    k = f.sub(t, MAGIC)
    kb = f.b.op("bitcast_convert", t, ty=f.i32)  # k in the low bits
    r = f.sub(f.sub(a, f.mul(k, P[0])), f.mul(k, P[1]))
    p2 = f.mul(k, P[2])
    yh = f.sub(r, p2)
    yl = f.sub(f.sub(f.sub(r, yh), p2), f.mul(k, P[3]))
    z = f.mul(yh, yh)
    i32 = lambda v: f.c(v, f.i32)  # noqa: E731
    sign = f.b.op("and", f.b.op("bitcast_convert", x, ty=f.i32), i32(-0x80000000), ty=f.i32)
    odd = f.b.compare(f.b.op("and", kb, i32(1), ty=f.i32), i32(0), "NE")
    if name == "tan":
        # tan(yh + yl) = n / d, n = yh (1 + a z) + yl (1 + z) d, d = 1 + z (b + c z); -d / n in odd quadrants
        e = f.add(f.mul(yl, z), yl)  # yl tan'(y) ~ yl (1 + z)
        d = f.add(f.mul(z, f.add(f.mul(z, TANR[2]), TANR[1])), 1.0)
        n = f.add(yh, f.add(f.mul(f.mul(yh, z), TANR[0]), f.add(f.mul(e, d), 0.0)))  # (+0: see below)
        r = f.div(f.sel(odd, f.neg(d), n), f.sel(odd, n, d))
        flip = sign
    else:
        sn = f.add(yh, f.add(f.mul(f.mul(yh, z), f.poly(z, S32)), yl))
        hz = f.mul(z, 0.5)
        w = f.sub(1.0, hz)
        rec = f.sub(f.sub(f.sub(1.0, w), hz), f.mul(yh, yl))  # 1 - hz - w, and yl's term
        cs = f.add(w, f.add(f.mul(f.mul(z, z), f.poly(z, C32)), rec))
        # sin: negative in quadrants 2, 3 (k & 2), and for x < 0; cos: in quadrants 1, 2 ((k + 1) & 2)
        q2 = f.b.op("shift_left", kb if name == "sin" else f.b.op("add", kb, i32(1), ty=f.i32), i32(30), ty=f.i32)
        q2 = f.b.op("and", q2, i32(-0x80000000), ty=f.i32)
        r = f.sel(odd, cs, sn) if name == "sin" else f.sel(odd, sn, cs)
        flip = f.b.op("xor", q2, sign, ty=f.i32) if name == "sin" else q2
    out = f.b.op("bitcast_convert", f.b.op("xor", f.b.op("bitcast_convert", r, ty=f.i32), flip, ty=f.i32), ty=f.t)
    return out if name == "cos" else f.sel(f.cmp(a, _TINY, "LT"), x, out)  # (x itself: the CPU flushes subnormals)


def _tiered(f: F, x, fns, bounds, branch: bool = True):
    """fns[i](F) (float32 tensors like x) where bounds[i - 1] <= |x| < bounds[i] (the last: above), each element by
    its own |x|. With `branch`, tensors of IF_ELEMENTS or more compute only the functions their largest |x| needs
    (`_tiers`, then `stablehlo.if`s); smaller ones all, selected (a branch there costs more than the work it skips)."""
    def chain(g: F, n: int):  # fns[:n], selected by |x|
        a, r = g("abs", x), fns[n - 1](g)
        for i in range(n - 2, -1, -1):
            r = g.sel(g.cmp(a, bounds[i], "LT"), fns[i](g), r)
        return r
    if not branch or f.t.has_static_shape and math.prod(f.t.shape) < IF_ELEMENTS:
        return chain(f, len(fns))
    m = _tiers(f, x)

    def level(g: F, i: int):
        return chain(g, i + 1) if i == len(bounds) else _branch(
            g, _all_below(m, bounds[i]), lambda h: chain(h, i + 1), lambda h: level(h, i + 1))
    return level(f, 0)


def _sin_cos_tan32(name: str, fast: bool = False, branch: bool = True):
    """float32 sin, cos or tan: (`fast`) `_fast32` in float32 arithmetic below FAST32, `_medium32` in float64 below
    MEDIUM, the float64 `_reduce` (Payne-Hanek) and `_kernel` above (`_tiered`, `branch` as there)."""
    def big(f: F, x):
        d = F(_Builder(ir.RankedTensorType.get(f.t.shape, ir.F64Type.get()), x))
        return d("convert", _sin_cos_tan(name)(d, d("convert", x)), ty=f.t)

    def build(f: F, x):
        fns = [lambda g: _medium32(name, g, x), lambda g: big(g, x)]
        return _tiered(f, x, [lambda g: _fast32(name, g, x), *fns], [FAST32, MEDIUM], branch) if fast else \
            _tiered(f, x, fns, [MEDIUM], branch)
    return build


# ---------------------------------------------------------------- atan, atan2, asin, acos (float32 and narrower)

# fdlibm s_atan.c
ATANHI = (4.63647609000806093515e-01, 7.85398163397448278999e-01, 9.82793723247329054082e-01, 1.57079632679489655800e+00)
ATANLO = (2.26987774529616870924e-17, 3.06161699786838301793e-17, 1.39033110312309984516e-17, 6.12323399573676603587e-17)
AT = (3.33333333333329318027e-01, -1.99999999998764832476e-01, 1.42857142725034663711e-01, -1.11111104054623557880e-01,
      9.09088713343650656196e-02, -7.69187620504482999495e-02, 6.66107313738753120669e-02, -5.83357013379057348645e-02,
      4.97687799461593236017e-02, -3.65315727442169155270e-02, 1.62858201153657823623e-02)


def _atan_abs(f: F, a):
    """atan(a) for float64 a >= 0 (inf included), fdlibm's reduction to |t| < 7/16 and its polynomial."""
    lims, cs = (7 / 16, 11 / 16, 19 / 16, 39 / 16), (0.5, 1.0, 1.5)
    ge = [f.cmp(a, v, "GE") for v in lims]
    c = f.c(0.0)
    for g, v in zip(ge[:3], cs):
        c = f.sel(g, f.c(v), c)
    num = f.sel(ge[3], f.c(-1.0), f.sub(a, c))
    den = f.sel(ge[3], a, f.add(1.0, f.mul(c, a)))
    t = f.div(num, den)
    z = f.mul(t, t)
    w = f.mul(z, z)
    s1 = f.mul(z, f.poly(w, AT[0::2]))
    s2 = f.mul(w, f.poly(w, AT[1::2]))
    ts = f.mul(t, f.add(s1, s2))
    hi, lo = f.c(0.0), f.c(0.0)
    for g, h, l in zip(ge, ATANHI, ATANLO):
        hi, lo = f.sel(g, f.c(h), hi), f.sel(g, f.c(l), lo)
    return f.sub(hi, f.sub(f.sub(ts, lo), t))  # (hi = lo = 0 below 7/16: t - t s)


def _atan(f: F, x):
    return f.signed(x, _atan_abs(f, f("abs", x)))


def _atan2(f: F, y, x):
    """atan2 of float64 y, x from atan(|y| / |x|) (whose rounding is 2^-53: for float32 results). Zeros, infinities
    and NaN as C99's atan2."""
    ay, ax = f("abs", y), f("abs", x)
    both_inf = f.b.op("and", f.cmp(ay, math.inf, "EQ"), f.cmp(ax, math.inf, "EQ"), ty=f.b.i1)
    r = f.sel(both_inf, f.c(math.pi / 4), _atan_abs(f, f.div(ay, ax)))
    r = f.sel(f.cmp(ay, 0.0, "EQ"), f.c(0.0), r)  # (0/0: NaN otherwise)
    x_neg = f.b.op("or", f.cmp(x, 0.0, "LT"), f.b.op("and", f.cmp(x, 0.0, "EQ"), f.cmp(f.div(1.0, x), 0.0, "LT"),
                                                       ty=f.b.i1), ty=f.b.i1)
    r = f.sel(x_neg, f.sub(math.pi, r), r)
    y_neg = f.b.op("or", f.cmp(y, 0.0, "LT"), f.b.op("and", f.cmp(y, 0.0, "EQ"), f.cmp(f.div(1.0, y), 0.0, "LT"),
                                                       ty=f.b.i1), ty=f.b.i1)
    r = f.sel(y_neg, f.neg(r), r)
    nan = f.b.op("or", f.cmp(x, x, "NE"), f.cmp(y, y, "NE"), ty=f.b.i1)
    return f.sel(nan, f.add(x, y), r)


def _asin(f: F, x):
    """asin x = atan(x / sqrt((1 - x)(1 + x))) in float64 (1 - x exact for a float32 x)."""
    d = f("sqrt", f.mul(f.sub(1.0, x), f.add(1.0, x)))
    return f.signed(x, _atan_abs(f, f.div(f("abs", x), d)))


def _acos(f: F, x):
    """acos x = 2 atan(sqrt((1 - x) / (1 + x))) in float64."""
    return f.mul(2.0, _atan_abs(f, f("sqrt", f.div(f.sub(1.0, x), f.add(1.0, x)))))


# ---------------------------------------------------------------- exp, log, power, sinh, cosh, cbrt

LN2 = math.log(2)
SQRT2 = math.sqrt(2)
LOG_TERMS = tuple(2 / (2 * n + 1) for n in range(13))  # log m = 2 atanh s = s (2 + z (2/3 + z (2/5 ...))), z = s^2


def _log(f: F, x):
    """log of float64 x holding a float32 value (0, inf and NaN included): e ln2 + 2 atanh((m - 1) / (m + 1)),
    m in [sqrt(1/2), sqrt(2)), e and m from the float32 bits (Vulkan has no float64 bitcast); subnormals scaled
    by 2^24 first. Relative error near 2^-52 away from 1, absolute 2^-53 near it."""
    sub = f.cmp(x, 2.0 ** -126, "LT")
    x32 = f("convert", f.sel(sub, f.mul(x, 2.0 ** 24), x), ty=f.f32)
    i = f.b.op("bitcast_convert", x32, ty=f.i32)
    c32 = lambda v: f.c(v, f.i32)  # noqa: E731
    e = f.b.op("subtract", f.b.op("shift_right_logical", i, c32(23), ty=f.i32), c32(127), ty=f.i32)
    m32 = f.b.op("or", f.b.op("and", i, c32((1 << 23) - 1), ty=f.i32), c32(127 << 23), ty=f.i32)
    m = f("convert", f.b.op("bitcast_convert", m32, ty=f.f32))
    big = f.cmp(m, SQRT2, "GT")
    m = f.sel(big, f.mul(m, 0.5), m)
    e = f.add(f.add(f("convert", e), f.sel(big, f.c(1.0), f.c(0.0))), f.sel(sub, f.c(-24.0), f.c(0.0)))
    s = f.div(f.sub(m, 1.0), f.add(m, 1.0))
    r = f.add(f.mul(e, LN2), f.mul(s, f.poly(f.mul(s, s), LOG_TERMS)))
    r = f.sel(f.cmp(x, 0.0, "EQ"), f.c(-math.inf), r)
    r = f.sel(f.cmp(x, math.inf, "EQ"), x, r)
    return f.sel(f.b.op("or", f.cmp(x, 0.0, "LT"), f.cmp(x, x, "NE"), ty=f.b.i1), f.c(math.nan), r)


EXP_TERMS = tuple(1 / math.factorial(n) for n in range(11))  # |r| <= ln2/2: the first left out is 2^-38 relative


def _exp32(f: F, x):
    """exp of float64 x for float32 results: 2^k exp(r), k = round(x / ln 2) through int32 (x clamped to +-200 ln 2,
    past the float32 range), r = x - k ln 2 in two parts, 2^k as two float32 powers of 2 (no float64 bitcast,
    which Vulkan lacks, and no float64 rounding op, a libm call on the CPU). NaN stays NaN."""
    xc = f("clamp", f.c(-200 * LN2), x, f.c(200 * LN2))
    ki = f.b.op("convert", f.add(f.mul(xc, 1 / LN2), 256.5), ty=f.i32)  # (positive: truncation is floor)
    c32 = lambda v: f.c(v, f.i32)  # noqa: E731
    ki = f.b.op("subtract", ki, c32(256), ty=f.i32)
    k = f("convert", ki)
    r = f.sub(f.sub(xc, f.mul(k, LN2_HI)), f.mul(k, LN2_LO))
    p = f.poly(r, EXP_TERMS)
    k1 = f.b.op("shift_right_arithmetic", ki, c32(1), ty=f.i32)
    k2 = f.b.op("subtract", ki, k1, ty=f.i32)

    def two_to(n):
        bits = f.b.op("shift_left", f.b.op("add", n, c32(127), ty=f.i32), c32(23), ty=f.i32)
        return f("convert", f.b.op("bitcast_convert", bits, ty=f.f32))
    y = f.mul(f.mul(p, two_to(k1)), two_to(k2))
    return f.sel(f.cmp(x, x, "NE"), x, y)


# 2 atanh(s) / (s ln 2) in z = s^2 on [0, (3 - 2 sqrt 2)^2] (log2 m = s P(s^2), s = (m - 1) / (m + 1)), and 2^r on
# [-1/2, 1/2]: minimax (weighted least squares, Lawson's iteration), relative errors 2^-45 and 2^-34.5
POW_LOG2 = (2.8853900817778486, 0.9617966941135455, 0.5770779423112072, 0.41220925765845245, 0.319905478609784,
            0.282903357900901)
POW_EXP2 = (0.9999999999616809, 0.693147180728451, 0.2402265119815683, 0.05550410353436481, 0.009618027253763373,
            0.0013333922573064614, 0.00015469291115558257, 1.5201919347107632e-05)
SQRT_HALF_BITS = 0x3F3504F3  # float32 sqrt(1/2)'s bits: x's bits less these, shifted, give e with m in [sqrt(1/2), sqrt 2)


def _exp32_wide(f: F, x):
    """e^x of float64 x as (e^(x/2))^2: up to 2^400, so that e^x times a tiny sine still overflows float32 where the
    exact product does (`_exp32`'s clamp at 2^200 made exp(800+1e-30j) and exp2(800+1e-30j) inf + 1.1e30j)."""
    h = _exp32(f, f.mul(x, 0.5))
    return f.mul(h, h)


def _power(f: F, x, y):
    """x**y of float32 x, y (float16/bfloat16 through float32) as 2^(y log2 x) in float64 arithmetic: log2 x = e +
    s P(s^2) with e and m = x / 2^e in [sqrt(1/2), sqrt 2) from x's float32 bits (subnormals scaled by 2^24 first), s
    = (m - 1) / (m + 1); 2^t = 2^k 2^r, k = round(t) through int32, 2^r by a polynomial, 2^k as two float32 powers of
    2 (Vulkan has no float64 bitcast). y log2 x is within 2^-37 of itself for results in range: one rounding, to
    float32. x = 0 gives 0 or inf, x = inf inf or 0, x < 0 and NaN NaN (exp(y log x)'s, IREE's own); stagec.numpy's
    `power` handles negative bases, 0**0, 1**inf."""
    d = F(_Builder(ir.RankedTensorType.get(f.t.shape, ir.F64Type.get()), x))
    c32 = lambda v: f.c(v, f.i32)  # noqa: E731
    i32 = lambda name, *v: f.b.op(name, *v, ty=f.i32)  # noqa: E731
    sub = f.cmp(x, 2.0 ** -126, "LT")
    i = f.b.op("bitcast_convert", f.sel(sub, f.mul(x, 2.0 ** 24), x), ty=f.i32)
    e = i32("shift_right_arithmetic", i32("subtract", i, c32(SQRT_HALF_BITS)), c32(23))
    m = d("convert", f.b.op("bitcast_convert", i32("subtract", i, i32("shift_left", e, c32(23))), ty=f.t))
    e = d("convert", i32("subtract", e, i32("select", sub, c32(24), c32(0))))
    s = d.div(d.sub(m, 1.0), d.add(m, 1.0))
    lg = d.add(e, d.mul(s, d.poly(d.mul(s, s), POW_LOG2)))
    lg = d.sel(f.cmp(x, 0.0, "EQ"), d.c(-math.inf), d.sel(f.cmp(x, math.inf, "EQ"), d.c(math.inf), lg))
    t = d.mul(d("convert", y), d.sel(f.cmp(x, 0.0, "GE"), lg, d.c(math.nan)))  # (NaN x: not GE)
    tc = d("clamp", d.c(-200.0), t, d.c(200.0))
    ki = i32("subtract", d.b.op("convert", d.add(tc, 256.5), ty=f.i32), c32(256))  # (positive: truncation is floor)
    p = d.poly(d.sub(tc, d("convert", ki)), POW_EXP2)
    k1 = i32("shift_right_arithmetic", ki, c32(1))
    two_to = lambda n: d("convert", f.b.op("bitcast_convert", i32("shift_left", i32("add", n, c32(127)), c32(23)),  # noqa: E731
                                                          ty=f.t))
    r = d("convert", d.mul(d.mul(p, two_to(k1)), two_to(i32("subtract", ki, k1))), ty=f.t)
    return f.sel(d.cmp(t, t, "NE"), f.c(math.nan), r)


EXP2_TERMS = tuple(LN2 ** n / math.factorial(n) for n in range(9))  # 2^r, |r| <= 1/2: 2^-32 left out


def _exp2_f32(f: F, y):
    """2^y in float32 arithmetic: 2^k 2^r, k = round(y) (y clamped to [-160, 130]), r = y - k exact, 2^r by its Taylor
    series (Horner; within 1 ulp), 2^k as two float32 powers of 2 (subnormal results round once more)."""
    yc = f("clamp", f.c(-160.0), y, f.c(130.0))
    c32 = lambda v: f.c(v, f.i32)  # noqa: E731
    ki = f.b.op("subtract", f.b.op("convert", f.add(yc, 256.5), ty=f.i32), c32(256), ty=f.i32)  # (truncation: floor)
    p = f.poly(f.sub(yc, f("convert", ki)), EXP2_TERMS)
    k1 = f.b.op("shift_right_arithmetic", ki, c32(1), ty=f.i32)
    two_to = lambda n: f.b.op("bitcast_convert", f.b.op("shift_left", f.b.op("add", n, c32(127), ty=f.i32), c32(23),  # noqa: E731
                                                                   ty=f.i32), ty=f.t)
    r = f.mul(f.mul(p, two_to(k1)), two_to(f.b.op("subtract", ki, k1, ty=f.i32)))
    return f.sel(f.cmp(y, y, "NE"), y, r)


LN2_HI32, LN2_LO32 = float.fromhex("0x1.62e4p-1"), 1.4286068203094173e-06  # ln 2: 16 bits (k LN2_HI32 exact) + rest


def _cosh_f32(f: F, x):
    """cosh in float32 arithmetic: e/2 + 1/(2e), e = e^|x| = 2^k e^r (Cody-Waite: k LN2_HI32 exact, |r| <= 0.35),
    e^r by its Taylor series to r^8; no cancellation: within 2 ulps. Past |x| = 88 (e^|x| overflows, cosh not yet):
    (e^(|x|/2) / 2) e^(|x|/2), |x|/2 taken at most 88 (inf past 176: 2^k's exponent field overflowed from |x| = 200,
    cosh(710) was 0)."""
    a = f("abs", x)
    big = f.cmp(a, 88.0, "GT")
    h = f("clamp", f.c(0.0), f.sel(big, f.mul(a, 0.5), a), f.c(88.0))
    ki = f.b.op("convert", f.add(f.mul(h, 1 / LN2), 0.5), ty=f.i32)
    k = f("convert", ki)
    r = f.sub(f.sub(h, f.mul(k, LN2_HI32)), f.mul(k, LN2_LO32))
    p = f.poly(r, [1 / math.factorial(n) for n in range(9)])
    c32 = lambda v: f.c(v, f.i32)  # noqa: E731
    e = f.mul(p, f.b.op("bitcast_convert", f.b.op("shift_left", f.b.op("add", ki, c32(127), ty=f.i32), c32(23),
                                                   ty=f.i32), ty=f.t))
    r = f.sel(big, f.mul(f.mul(e, 0.5), e), f.add(f.mul(e, 0.5), f.div(0.5, e)))
    return f.sel(f.cmp(x, x, "NE"), x, r)


def _sinh_cosh(name: str):
    """(e^a +- e^-a) / 2 with a = |x|; past a = 20 (where e^-a is below an ulp) (e^(a/2) / 2) e^(a/2), finite up to
    the overflow threshold of the result rather than of e^a; sinh below 1/2 by its Taylor series to x^17 (no
    cancellation). Within 3 ulps in float64 (exp's 1 ulp, twice), 0.5 after rounding to float32."""
    def build(f: F, x, narrow: bool = False):
        a = f("abs", x)
        exp = functools.partial(_exp32, f) if narrow else functools.partial(f, "exponential")  # (IREE's: right)
        e2 = exp(f.mul(a, 0.5))
        e = f.mul(e2, e2) if narrow else exp(a)  # (float32: one exp, within 3 float64 ulps, does)
        inv, half = f.div(0.5, e), f.mul(e, 0.5)
        huge = f.mul(f.mul(e2, 0.5), e2)
        big = f.cmp(a, 20.0, "GT")
        if name == "cosh":
            return f.sel(big, huge, f.add(half, inv))
        small = f.mul(x, f.poly(f.mul(x, x), [1 / math.factorial(2 * n + 1) for n in range(9)]))
        r = f.signed(x, f.sel(big, huge, f.sub(half, inv)))
        return f.sel(f.cmp(a, 0.5, "LT"), small, r)
    return build


# ---------------------------------------------------------------- expm1, sinh, asinh, acosh, atanh in float32 arithmetic

EXPM1_F32 = tuple(1 / math.factorial(n) for n in range(2, 9))  # (e^r - 1 - r) / r^2, |r| <= ln2/2: 2^-30 left out
SINH_F32 = tuple(1 / math.factorial(2 * n + 1) for n in range(1, 6))  # (sinh x - x) / x^3, |x| < 1: 2^-32 left out


def _pow2_f32(f: F, k):
    """2^k for int32 k in [-126, 127] (float32 bits)."""
    c32 = lambda v: f.c(v, f.i32)  # noqa: E731
    return f.b.op("bitcast_convert", f.b.op("shift_left", f.b.op("add", k, c32(127), ty=f.i32), c32(23), ty=f.i32),
                  ty=f.t)


def _reduce_ln2_f32(f: F, a, lo: float, hi: float):
    """(k, r) with a = k ln 2 + r, k = round(a / ln 2) (int32, a clamped to [lo, hi]), |r| <= ln2/2 (Cody-Waite:
    k LN2_HI32 exact, one rounding in r)."""
    ac = f("clamp", f.c(lo), a, f.c(hi))
    bias = float(math.ceil(-lo / LN2) + 1)  # (positive before the truncation: floor)
    ki = f.b.op("subtract", f.b.op("convert", f.add(f.mul(ac, 1 / LN2), bias + 0.5), ty=f.i32), f.c(int(bias), f.i32),
                ty=f.i32)
    k = f("convert", ki)
    return ki, f.sub(f.sub(ac, f.mul(k, LN2_HI32)), f.mul(k, LN2_LO32))


def _expm1_f32(f: F, x):
    """e^x - 1 in float32 arithmetic: 2^k (1 + p) - 1 = 2 (t p + (t - 1/2)), t = 2^(k-1), k = round(x / ln 2) (x
    clamped to [-32, 89]: -1 and inf beyond), p = e^r - 1 = r + r^2 q(r) by Taylor's series. t - 1/2 is exact for
    k <= 25 (it rounds to t past it, to -1/2 below -25): one rounding in the sum, no cancellation but for k = 1.
    Within 1.5 ulps; x itself below 2^-25 (keeps -0; t p is subnormal below 2^-125) and NaN."""
    ki, r = _reduce_ln2_f32(f, x, -32.0, 89.0)
    p = f.add(r, f.mul(f.mul(r, r), f.poly(r, EXPM1_F32)))
    t = _pow2_f32(f, f.b.op("subtract", ki, f.c(1, f.i32), ty=f.i32))
    y = f.mul(f.add(f.mul(t, p), f.sub(t, 0.5)), 2.0)
    keep = f.b.op("or", f.cmp(f("abs", x), 2.0 ** -25, "LT"), f.cmp(x, x, "NE"), ty=f.b.i1)  # (t p: subnormal)
    return f.sel(keep, x, y)


def _sinh_f32(f: F, x):
    """sinh in float32 arithmetic: below |x| = 1 x + x^3 q(x^2) (Taylor's series); else with h = e^|x| / 4 = 2^(k-2)
    e^r (|x| clamped to 89.5: inf beyond), 2 (h - 1/(16 h)) (at most coth(1) = 1.31 times e^|x|'s error) with x's
    sign. Within 2 ulps."""
    a = f("abs", x)
    ki, r = _reduce_ln2_f32(f, a, 0.0, 89.5)
    e = f.poly(r, [1 / math.factorial(n) for n in range(9)])
    h = f.mul(e, _pow2_f32(f, f.b.op("subtract", ki, f.c(2, f.i32), ty=f.i32)))
    big = f.mul(f.sub(h, f.div(0.0625, h)), 2.0)
    big = f.sel(f.cmp(x, 0.0, "LT"), f.neg(big), big)
    x2 = f.mul(x, x)
    small = f.add(x, f.mul(x, f.mul(x2, f.poly(x2, SINH_F32))))
    return f.sel(f.cmp(a, 1.0, "GE"), big, small)  # (NaN: small)


def _with_sign_of(f: F, r, x):
    """r >= 0 (or NaN) with the sign bit of x: an integer or of the bits."""
    i = lambda v: f.b.op("bitcast_convert", v, ty=f.i32)  # noqa: E731
    s = f.b.op("and", i(x), f.c(-(1 << 31), f.i32), ty=f.i32)
    return f.b.op("bitcast_convert", f.b.op("or", i(r), s, ty=f.i32), ty=f.t)


LG32 = (0.66666662693, 0.40000972152, 0.28498786688, 0.24279078841)  # fdlibm e_logf.c's Lg1..Lg4 (minimax, float32)


def _log1p_f32(f: F, v):
    """log1p(v) for float32 v >= 0 (inf and NaN: v) in float32 arithmetic, fdlibm's log1pf: u = 1 + v = 2^k m, m in
    [sqrt(2)/2, sqrt(2)) from u's bits, c = (v - (u - 1)) / u the rounding of u (exact below 2^24; past it below
    2^-24 of the result), f = m - 1, s = f / (2 + f), log(1 + f) = f - (hfsq - s (hfsq + R(s^2))), hfsq = f^2 / 2.
    Within 1 ulp. No sum has two products as operands (`_fast32`: the FMA IREE fuses must not depend on context)."""
    i32 = lambda v: f.c(v, f.i32)  # noqa: E731
    u = f.add(v, 1.0)
    iu = f.b.op("add", f.b.op("bitcast_convert", u, ty=f.i32), i32(0x3F800000 - 0x3F3504F3), ty=f.i32)
    k = f("convert", f.b.op("subtract", f.b.op("shift_right_arithmetic", iu, i32(23), ty=f.i32), i32(127), ty=f.i32))
    m = f.b.op("bitcast_convert", f.b.op("add", f.b.op("and", iu, i32(0x007FFFFF), ty=f.i32), i32(0x3F3504F3), ty=f.i32),
               ty=f.t)
    fm = f.sub(m, 1.0)
    c = f.div(f.sub(v, f.sub(u, 1.0)), u)
    s = f.div(fm, f.add(fm, 2.0))
    z = f.mul(s, s)
    hfsq = f.add(f.mul(f.mul(fm, 0.5), fm), 0.0)  # (+0: a sum, not a product)
    a = f.add(f.mul(z, f.poly(z, LG32)), hfsq)
    r = f.add(f.add(f.sub(f.add(f.mul(s, a), f.add(f.mul(k, LN2_LO32), c)), hfsq), fm), f.mul(k, LN2_HI32))
    return f.sel(f.cmp(v, math.inf, "LT"), r, v)


BIG_F32 = 2.0 ** 12  # past it asinh a = log(a) + ln 2 + 1/(4a^2), acosh a = log(a) + ln 2 - 1/(4a^2): 2^-28 relative


def _log1p_big(f: F, a, v):
    """log1p(v), but log(a) + ln 2 past BIG_F32 (a - 1 is exact below 2^24, so log1p(a - 1) = log a; above, log1p(a)
    is log a to 2^-28): one log1p (IREE's: Kahan's log(u) v / (u - 1)) either way."""
    big = f.cmp(a, BIG_F32, "GT")
    return f.add(_log1p_f32(f, f.sel(big, f.sub(a, 1.0), v)), f.sel(big, f.c(LN2), f.c(0.0)))


def _asinh_f32(f: F, x):
    """asinh in float32 arithmetic: log1p(a + a^2 / (1 + sqrt(1 + a^2))), a = |x| (fdlibm's, no cancellation), log a +
    ln 2 past BIG_F32 (`_log1p_big`), x's sign."""
    a = f("abs", x)
    a2 = f.mul(a, a)
    v = f.add(a, f.div(a2, f.add(1.0, f("sqrt", f.add(1.0, a2)))))
    return _with_sign_of(f, _log1p_big(f, a, v), x)


def _acosh_f32(f: F, x):
    """acosh in float32 arithmetic: log1p(t + sqrt(t (t + 2))), t = x - 1 (exact below 2^24), log x + ln 2 past BIG_F32
    (`_log1p_big`); NaN below 1."""
    t = f.sub(x, 1.0)
    r = _log1p_big(f, x, f.add(t, f("sqrt", f.mul(t, f.add(t, 2.0)))))
    return f.sel(f.cmp(x, 1.0, "LT"), f.c(math.nan), r)


def _atanh_f32(f: F, x):
    """atanh in float32 arithmetic, fdlibm's: log1p(v) / 2, v = 2a + 2a^2 / (1 - a) below a = |x| = 1/2, 2a / (1 - a)
    (1 - a exact) from it (one division either way); x's sign."""
    a = f("abs", x)
    a2 = f.add(a, a)
    low = f.cmp(a, 0.5, "LT")
    q = f.div(f.sel(low, f.mul(a2, a), a2), f.sub(1.0, a))
    r = f.mul(0.5, _log1p_f32(f, f.sel(low, f.add(a2, q), q)))
    return _with_sign_of(f, f.sel(f.cmp(a, 1.0, "GT"), f.c(math.nan), r), x)


CBRTF_B1 = 709958130  # fdlibm s_cbrtf.c: (127 - 127/3 - 0.03306235651) * 2**23


def _cbrt(f: F, x, narrow: bool = False):
    """Cube root of float64 x: |x| scaled by powers 2^(3n) into float32's range, fdlibm's exponent/3 first guess from
    its float32 bits (6% off; no float64 bitcast, which Vulkan lacks), four Newton steps t += (x/t^2 - t)/3, scaled
    back. Within 1 ulp; 0, inf and NaN return x."""
    a = f("abs", x)
    a_s, back = a, f.c(1.0)
    for e in (768, 384, 192, 96):
        hi, lo = f.cmp(a_s, 2.0 ** e, "GT"), f.cmp(a_s, 2.0 ** -e, "LT")
        a_s = f.mul(a_s, f.sel(hi, f.c(2.0 ** -e), f.sel(lo, f.c(2.0 ** e), f.c(1.0))))
        back = f.mul(back, f.sel(hi, f.c(2.0 ** (e // 3)), f.sel(lo, f.c(2.0 ** -(e // 3)), f.c(1.0))))
    c32 = lambda v: f.c(v, f.i32)  # noqa: E731
    i = f.b.op("bitcast_convert", f("convert", a_s, ty=f.f32), ty=f.i32)
    g = f.b.op("add", f.b.op("divide", i, c32(3), ty=f.i32), c32(CBRTF_B1), ty=f.i32)
    t = f("convert", f.b.op("bitcast_convert", g, ty=f.f32))
    for _ in range(3 if narrow else 4):  # (6% -> 4e-3 -> 2e-5 -> 4e-10 -> 1e-19)
        t = f.add(t, f.mul(f.sub(f.div(a_s, f.mul(t, t)), t), 1 / 3))
    t = f.mul(t, back)
    special = f.b.op("or", f.cmp(a, math.inf, "EQ"), f.cmp(x, x, "NE"), ty=f.b.i1)
    r = f.sel(special, x, f.sel(f.cmp(x, 0.0, "LT"), f.neg(t), t))
    return f.sel(f.cmp(a_s, 0.0, "EQ"), f.mul(x, 0.0), r)  # (a subnormal read as 0 where the CPU flushes them)


def _power64(f: F, x, y):
    """float64 2**y (stagec.numpy's exp2): 2^k e^(r ln 2), k = round(y), r = y - k exact, r ln 2 in two parts (its
    error 2^-54 absolute), 2^k as two powers of 2 from their bits. Other bases: IREE's own power (replaced by None)."""
    k = f("round_nearest_even", f("clamp", f.c(-1100.0), y, f.c(1100.0)))
    r = f.sub(f("clamp", f.c(-1100.0), y, f.c(1100.0)), k)
    e = f("exponential", f.add(f.mul(r, LN2_HI), f.mul(r, LN2_LO)))
    ki = f("convert", k, ty=f.i64)
    k1 = f.int_("shift_right_arithmetic", ki, 1)
    k2 = f.int_("subtract", ki, k1)
    two_to = lambda n: f.from_bits(f.int_("shift_left", f.int_("add", n, 1023), 52))  # noqa: E731
    return f.sel(f.cmp(y, y, "NE"), y, f.mul(f.mul(e, two_to(k1)), two_to(k2)))


# ---------------------------------------------------------------- erf (float32 and narrower)

# erf's two pieces, in v = x^2 - V0 (x^2 about the middle of [0, 2 V0]: Horner's sums there cancel little): erf x / x
# - 1 on [0, sqrt(2 V0)] (|x| <= 1.1524) as a polynomial of degree 6 (0.13 ulps), erfc x on [1.1524, 4] as a rational
# of degree (5, 5) (0.26 of 2^-24): weighted minimax fits (Loeb's linearization, Lawson's iteration) to mpmath's. The
# split at 1.15 (3/2 before) lets the polynomial be one degree shorter, and rounded to float32 the whole is within
# 1.04 ulps (1.38 before, on the same dense grid).
ERF_LOW = (-0.07858551067726166, -0.2564327715926372, 0.07094896800410179, -0.016142909726832952,
           0.003050154019177041, -0.0004957485910309948, 6.840164749521226e-05)
ERF_HIGH_P = (0.24894742812637052, -0.0885294241781604, 0.012987884968500958, -0.0009779187784339455,
              3.76001109408693e-05, -5.87655407821866e-07)
ERF_HIGH_Q = (1.0, 1.068793818042411, 0.3516568835364414, 0.10180593393758533, 0.007833588209331043,
              0.0022690422907286865)
ERF_V0 = 0.6640625  # v = x^2 - ERF_V0; the rational from v = ERF_V0 on (|x| = sqrt(2 ERF_V0))


def _erf(f: F, x):
    """erf in float32 arithmetic: x + x h(v) below |x| = 1.15 (x itself exact: keeps -0 and subnormals; NaN takes
    this side), 1 - P(t) / Q(t) above, t = min(v, 16 - V0) (erf rounds to 1 past 3.9; t below V0 belongs to the
    other side, whatever the rational gives there) and x's sign bit: 17 multiply-adds and one division, within
    1.04 ulps."""
    v = f.sub(f.mul(x, x), ERF_V0)
    small = f.add(x, f.mul(x, f.poly(v, ERF_LOW)))
    t = f("minimum", v, f.c(16.0 - ERF_V0))
    big = f.sub(1.0, f.div(f.poly(t, ERF_HIGH_P), f.poly(t, ERF_HIGH_Q)))
    c32 = lambda n: f.c(n, f.i32)  # noqa: E731
    bits = lambda a: f.b.op("bitcast_convert", a, ty=f.i32)  # noqa: E731
    big = f.b.op("bitcast_convert", f.b.op("or", bits(big), f.b.op("and", bits(x), c32(-(1 << 31)), ty=f.i32),
                                           ty=f.i32), ty=f.t)
    return f.sel(f.cmp(v, ERF_V0, "GE"), big, small)


# ---------------------------------------------------------------- float64 erfinv

# Giles, "Approximating the erfinv function" (GPU Computing Gems, vol. 2, 2011): erfinv x = x p(w), w = -log((1 - x)
# (1 + x)), p one of three polynomials (constant term first here): in w - 3.125 below w = 6.25, in sqrt w - 3.25
# below 16, in sqrt w - 5 past it.
GILES_W = tuple(reversed((
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18, 1.115787767802518096e-17,
    -1.333171662854620906e-16, 2.0972767875968561637e-17, 6.6376381343583238325e-15, -4.0545662729752068639e-14,
    -8.1519341976054721522e-14, 2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08, 4.2347877827932403518e-07,
    -1.3654692000834678645e-06, -1.3882523362786468719e-05, 0.0001867342080340571352, -0.00074070253416626697512,
    -0.0060336708714301490533, 0.24015818242558961693, 1.6536545626831027356)))
GILES_SQRT16 = tuple(reversed((
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07, 1.8239629214389227755e-08,
    1.5027403968909827627e-06, -4.013867526981545969e-06, 2.9234449089955446044e-06, 1.2475304481671778723e-05,
    -4.7318229009055733981e-05, 6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066, -0.0037512085075692412107,
    0.005370914553590063617, 1.0052589676941592334, 3.0838856104922207635)))
GILES_SQRT_BIG = tuple(reversed((
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09, -3.7894654401267369937e-09,
    7.6157012080783393804e-09, -1.4960026627149240478e-08, 2.9147953450901080826e-08, -6.7711997758452339498e-08,
    2.2900482228026654717e-07, -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
    7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026, 1.0103004648645343977,
    4.8499064014085844221)))


def _erfinv64(f: F, x):
    """float64 erfinv (Giles): (1 - x)(1 + x) has no cancellation near +-1, where XLA's -log1p(-x^2) loses x^2's
    low bits (4.6e5 ulps at 1 - 7e-9 once a log1p call computes it: CUDA); +-1 gives +-inf, NaN and |x| > 1 NaN."""
    w = f.neg(f("log", f.mul(f.sub(1.0, x), f.add(1.0, x))))
    s = f("sqrt", w)
    p = f.sel(f.cmp(w, 6.25, "LT"), f.poly(f.sub(w, 3.125), GILES_W),
              f.sel(f.cmp(w, 16.0, "LT"), f.poly(f.sub(s, 3.25), GILES_SQRT16), f.poly(f.sub(s, 5.0), GILES_SQRT_BIG)))
    return f.sel(f.cmp(f("abs", x), 1.0, "EQ"), f.mul(x, math.inf), f.mul(p, x))


# ---------------------------------------------------------------- float64 power: double-double log and exp

SPLIT = 134217729.0  # 2^27 + 1: Dekker's split of a float64 into two 26-bit halves
TWO_THIRDS = (2 / 3, float.fromhex("0x1.5555555555555p-55"))  # 2/3 as hi + lo
LOG_TAIL = tuple(2 / (2 * n + 1) for n in range(2, 12))  # 2 atanh s = 2s + 2s^3/3 + s^5 (2/5 + 2/7 s^2 + ...)
EXP_DD_TERMS = tuple(1 / math.factorial(n) for n in range(2, 16))  # e^r - 1 - r = r^2 (1/2 + r/6 + ...), |r| <= 0.35
SQRT1_5, SQRT3 = math.sqrt(1.5), math.sqrt(3)
LOG1_5 = (float.fromhex("0x1.9f323ecp-2"), float.fromhex("0x1.7f3097e56d1afp-31"))  # log(3/2): 28 bits + the rest


def _split(f: F, a):
    c = f.mul(a, SPLIT)
    hi = f.sub(c, f.sub(c, a))
    return hi, f.sub(a, hi)


def _two_prod(f: F, a, b):
    """(p, e): p = fl(a b), p + e = a b exactly (Dekker; |a|, |b| < 2^995)."""
    p = f.mul(a, b)
    (ah, al), (bh, bl) = _split(f, a), _split(f, b)
    return p, f.add(f.add(f.add(f.sub(f.mul(ah, bh), p), f.mul(ah, bl)), f.mul(al, bh)), f.mul(al, bl))


def _two_sum(f: F, a, b):
    """(s, e): s = fl(a + b), s + e = a + b exactly (Knuth)."""
    s = f.add(a, b)
    bb = f.sub(s, a)
    return s, f.add(f.sub(a, f.sub(s, bb)), f.sub(b, bb))


def _log_dd(f: F, i):
    """log x = hi + lo to about 2^-68 relative, for float64 x > 0 finite given as its bits `i` (int64; subnormals
    through their integer significand, so that no flush to zero reads them as 0): x = 2^e m, m in [1, 2) from the
    bits; log m = log c + 2 atanh s, s = (m - c) / (m + c), c = 1 below sqrt(3/2), 3/2 below sqrt(3), else 2
    (fdlibm's pow: |s| <= 0.102); s as a double-double, the first two terms of 2 atanh s in double-double
    arithmetic, e ln 2 in two parts (e LN2_HI exact)."""
    sub = f.b.compare(i, f.c(1 << 52, f.i64), "LT")
    x = f.sel(sub, f("convert", i), f.from_bits(i))  # (a subnormal's significand is its bits: x 2^1074)
    i = f.bits(x)
    e = f("convert", f.int_("subtract", f.int_("shift_right_logical", i, 52), 1023))
    m = f.from_bits(f.int_("or", f.int_("and", i, (1 << 52) - 1), 1023 << 52))
    top = f.cmp(m, SQRT3, "GE")
    mid = f.b.op("and", f.cmp(m, SQRT1_5, "GE"), f.b.op("not", top, ty=f.b.i1), ty=f.b.i1)
    c = f.sel(top, f.c(2.0), f.sel(mid, f.c(1.5), f.c(1.0)))  # (c = 2: log m = ln 2 + log(m / 2), into e)
    fm = f.sub(m, c)  # (exact: m / 2 <= c <= 2 m)
    u, ul = _two_sum(f, m, c)
    s = f.div(fm, u)
    ph, pl = _two_prod(f, s, u)
    sl = f.div(f.sub(f.sub(f.sub(fm, ph), pl), f.mul(s, ul)), u)  # s + sl = fm / (m + c) to 2^-100
    zh, zl = _two_prod(f, s, s)
    ch, cl = _two_prod(f, zh, s)
    cl = f.add(cl, f.mul(zl, s))  # s^3 = ch + cl
    dh, dl = _two_prod(f, ch, TWO_THIRDS[0])
    dl = f.add(dl, f.add(f.mul(cl, TWO_THIRDS[0]), f.mul(ch, TWO_THIRDS[1])))  # 2/3 s^3 = dh + dl
    rest = f.mul(f.mul(ch, zh), f.poly(zh, LOG_TAIL))
    lo = f.add(f.add(f.mul(2.0, sl), dl), f.add(f.mul(f.mul(2.0, zh), sl), rest))
    h, l = _two_sum(f, f.mul(2.0, s), dh)
    lc_hi, lc_lo = (f.sel(mid, f.c(v), f.c(0.0)) for v in LOG1_5)
    e = f.add(e, f.add(f.sel(top, f.c(1.0), f.c(0.0)), f.sel(sub, f.c(-1074.0), f.c(0.0))))
    hi, lo2 = _two_sum(f, f.add(f.mul(e, LN2_HI), lc_hi), h)  # (e LN2_HI + lc_hi: 43 bits, exact)
    return hi, f.add(lo2, f.add(f.add(l, lo), f.add(f.mul(e, LN2_LO), lc_lo)))


def _exp_dd(f: F, th, tl):
    """e^(th + tl) for float64 th (NaN and infinities included), tl a correction below 1 (else read as 0): 2^k
    e^(r + rr), k = round(th / ln 2) (th clamped to +-1100), r + rr = th + tl - k ln 2 exactly enough, e^r - 1 - r by
    its Taylor series, 1 + r as a double-double, 2^k as two powers of 2: one rounding at the end (0.5 ulp + 2^-60)."""
    tl = f.sel(f.cmp(f("abs", tl), 1.0, "LT"), tl, f.c(0.0))
    t = f("minimum", f("maximum", th, f.c(-1100.0)), f.c(1100.0))  # (a clamp, in ops a fused generic takes)
    # k = floor(t / ln 2 + 1/2), an integer of float64 read as int64 from the bits of k + 2^52 (exact): no float ->
    # int conversion, which `fuse-float64`'s generic leaves out (its out-of-range results differ between lowerings)
    kf = f("floor", f.add(f.mul(t, 1 / LN2), 2048.5))
    ki = f.int_("subtract", f.bits(f.add(kf, 2.0 ** 52)), (0x433 << 52) + 2048)
    k = f("convert", ki)
    r, rr = _two_sum(f, f.sub(t, f.mul(k, LN2_HI)), f.sub(tl, f.mul(k, LN2_LO)))
    q = f.mul(f.mul(r, r), f.poly(r, EXP_DD_TERMS))
    s1 = f.add(1.0, r)
    e1 = f.sub(r, f.sub(s1, 1.0))
    y = f.add(s1, f.add(e1, f.add(q, f.mul(rr, f.add(1.0, r)))))
    k1 = f.int_("shift_right_arithmetic", ki, 1)
    two_to = lambda n: f.from_bits(f.int_("shift_left", f.int_("add", n, 1023), 52))  # noqa: E731
    y = f.mul(f.mul(y, two_to(k1)), two_to(f.int_("subtract", ki, k1)))
    return f.sel(f.cmp(th, th, "NE"), th, y)


def _pow64(f: F, x, y):
    """float64 x**y = e^(y log x), y log x as a double-double (y's product exact): within 1 ulp where IREE's
    exp(y log x) loses 64. x <= 0, inf and NaN as IREE's own (stagec.numpy's `power` handles negative bases, 0**0,
    1**inf); 2**y as `_power64`."""
    if splat_value(x) == 2.0:
        return _power64(f, x, y)
    i = f.bits(x)  # (the bits decide: a flush to zero reads a subnormal as 0 in some comparisons, not in others)
    pos = f.b.op("and", f.b.compare(i, f.c(0, f.i64), "GT"), f.b.compare(i, f.c(0x7FF << 52, f.i64), "LT"), ty=f.b.i1)
    hi, lo = _log_dd(f, f.b.op("select", pos, i, f.c(0x3FF << 52, f.i64), ty=f.i64))
    th, tl = _two_prod(f, y, hi)
    tl = f.add(tl, f.mul(y, lo))
    zero = f.b.compare(f.int_("shift_left", i, 1), f.c(0, f.i64), "EQ")  # (+-0)
    edge = f.sel(zero, f.c(-math.inf), f.sel(f.b.compare(i, f.c(0x7FF << 52, f.i64), "EQ"), f.c(math.inf),
                                              f.c(math.nan)))
    return _exp_dd(f, f.sel(pos, th, f.mul(y, edge)), tl)


# ---------------------------------------------------------------- log1p, asinh, atanh (float64)

def _log1p64(f: F, x):
    """Kahan's log1p: log(u) x / (u - 1), u = 1 + x (x itself where u == 1), with IREE's float64 log (right)."""
    u = f.add(1.0, x)
    um1 = f.sub(u, 1.0)
    r = f.mul(f("log", u), f.div(x, f.sel(f.cmp(um1, 0.0, "EQ"), f.c(1.0), um1)))
    r = f.sel(f.cmp(um1, 0.0, "EQ"), x, r)
    return f.sel(f.cmp(x, math.inf, "EQ"), x, r)


def _asinh64(f: F, x):
    a = f("abs", x)
    a2 = f.mul(a, a)
    small = _log1p64(f, f.add(a, f.div(a2, f.add(1.0, f("sqrt", f.add(1.0, a2))))))
    big = f.add(f("log", a), LN2)
    r = f.sel(f.cmp(a, 2.0 ** 28, "GT"), big, small)
    return f.sel(f.cmp(x, x, "NE"), x, f.signed(x, r))


def _atanh64(f: F, x):
    a = f("abs", x)
    one_m = f.sub(1.0, a)
    small = f.add(f.mul(2.0, a), f.div(f.mul(f.mul(2.0, a), a), one_m))
    big = f.div(f.mul(2.0, a), one_m)
    r = f.mul(0.5, _log1p64(f, f.sel(f.cmp(a, 0.5, "LT"), small, big)))
    return f.sel(f.cmp(x, x, "NE"), x, f.signed(x, r))


def _acosh64(f: F, x):
    """acosh x = log1p(t + sqrt(2t + t^2)), t = x - 1 (exact near 1); log(x) + ln 2 past 2^28."""
    t = f.sub(x, 1.0)
    small = _log1p64(f, f.add(t, f("sqrt", f.add(f.mul(2.0, t), f.mul(t, t)))))
    big = f.add(f("log", x), LN2)
    r = f.sel(f.cmp(x, 2.0 ** 28, "GT"), big, small)
    return f.sel(f.cmp(x, 1.0, "LT"), f.c(math.nan), r)  # (below -2^26, t + sqrt(...) cancelled to log1p(0) = 0)


def _complex_trig(name: str, k=None):
    """sin, cos or tan of complex64 a + bi in float64 (IREE's complex ops use its float32 sine: sin(-3e-8+0j) gave
    +6.2e-8, tan(1e10+0.5j) NaN): sin a cosh b + i cos a sinh b, cos a cosh b - i sin a sinh b, and tan as -i tanh(iz)
    (`_ctanh`, Kahan's)."""
    def build(f: F, a, b):
        kk = k or _K32
        if name == "tan":
            return _ctan(f, a, b, kk)
        ch, sh = kk.cosh(f, b), kk.sinh(f, b)
        s, c = kk.sin(f, a), kk.cos(f, a)
        zero = f.cmp(s, 0.0, "EQ")  # sin a is 0 for a = +-0 only: so is the product, where cosh/sinh b is inf (C99)
        s_times = lambda v: f.sel(zero, s, f.mul(s, v))  # noqa: E731
        if name == "sin":
            re, im = s_times(ch), f.mul(c, sh)
        else:
            re, im = f.mul(c, ch), f.neg(s_times(sh))
        if k is _K64:  # past |b| = 709 cosh b and sinh b overflow where their products need not: sin(1e-307+800j)
            # was inf + inf j (2.4e40 + inf j); v cosh b as (v e^(|b|/2) / 2) e^(|b|/2) there
            over = f.cmp(f("abs", b), 709.0, "GT")
            e2 = f("exponential", f.mul(f("abs", b), 0.5))
            hch = lambda v: f.mul(f.mul(v, f.mul(e2, 0.5)), e2)  # noqa: E731
            s_hch = f.sel(zero, s, hch(s))
            if name == "sin":
                re, im = f.sel(over, s_hch, re), f.sel(over, f.signed(b, hch(c)), im)
            else:
                re, im = f.sel(over, hch(c), re), f.sel(over, f.neg(f.signed(b, s_hch)), im)
        # a inf or NaN (C99, through csinh/ccosh of iz): a zero imaginary part where b is 0; sin: +inf where b is
        # infinite (FreeBSD's, NumPy's sign), cos: a real part +inf there
        bad = f.b.op("not", f.cmp(f("abs", a), math.inf, "LT"), ty=f.b.i1)
        b_inf, b_zero = _is_inf(f, b), f.cmp(b, 0.0, "EQ")
        if name == "sin":
            im = f.sel(bad, f.sel(b_zero, b, f.sel(b_inf, f.c(math.inf), im)), im)
        else:
            re = f.sel(f.b.op("and", bad, b_inf, ty=f.b.i1), f.c(math.inf), re)
            im = f.sel(f.b.op("and", bad, b_zero, ty=f.b.i1), b, im)
        return re, im
    return build


# ---------------------------------------------------------------- exp, expm1, log1p, asinh, atanh, acosh (GLSL float32)

EXPM1_TERMS = tuple(1 / math.factorial(n) for n in range(1, 14))  # |x| < 1/2: x (1 + x/2 + ...), 2^-44 relative


def _expm1_32(f: F, x):
    small = f.mul(x, f.poly(x, EXPM1_TERMS))
    return f.sel(f.cmp(f("abs", x), 0.5, "LT"), small, f.sub(_exp32(f, x), 1.0))


def _log1p_wide(f: F, v):
    """log(1 + v) for float64 v > -1 (any value, not only float32 ones): u = 1 + v, log of u rounded to float32
    (`_log`) plus log(u / u32) ~ (u - u32) / u32; below 2^-20 its series (1 + v is inexact there)."""
    u = f.add(1.0, v)
    u32 = f("convert", f("convert", u, ty=f.f32))
    ok = f.b.op("and", f.cmp(u32, 0.0, "GT"), f.cmp(u32, math.inf, "LT"), ty=f.b.i1)
    r = f.add(_log(f, u32), f.sel(ok, f.div(f.sub(u, u32), f.sel(ok, u32, f.c(1.0))), f.c(0.0)))
    small = f.mul(v, f.poly(v, (1.0, -1 / 2, 1 / 3, -1 / 4)))
    return f.sel(f.cmp(f("abs", v), 2.0 ** -20, "LT"), small, r)


TANH_SERIES = (1.0, -1 / 3, 2 / 15, -17 / 315, 62 / 2835)  # |x| < 1/16: x (1 - x^2/3 + ...), 2^-46 relative


def _tanh32(f: F, x):
    """tanh of float64 x for float32 results: 1 - 2 / (e^(2|x|) + 1) (`_exp32`), its odd series below 1/16 (where the
    subtraction would leave e^(2|x|)'s relative error over |x|), |x| taken to 10 at most (tanh rounds to 1 from 9.01);
    x's sign, -0 and NaN kept."""
    a = f("minimum", f("abs", x), f.c(10.0))
    big = f.sub(1.0, f.div(2.0, f.add(_exp32(f, f.mul(2.0, a)), 1.0)))
    small = f.mul(a, f.poly(f.mul(a, a), TANH_SERIES))
    r = f.sel(f.cmp(a, 1 / 16, "LT"), small, big)
    return f.sel(f.cmp(x, x, "NE"), x, f.signed(x, r))


BIG32 = 2.0 ** 14  # past it asinh a = log(2a) + 1/(4a^2) and acosh a = log(2a) - 1/(4a^2) to 2^-30


def _asinh32(f: F, x):
    a = f("abs", x)
    a2 = f.mul(a, a)
    small = _log1p_wide(f, f.add(a, f.div(a2, f.add(1.0, f("sqrt", f.add(1.0, a2))))))
    r = f.sel(f.cmp(a, BIG32, "GT"), f.add(_log(f, a), LN2), small)
    return f.sel(f.cmp(x, x, "NE"), x, f.signed(x, r))


def _atanh32(f: F, x):
    a = f("abs", x)
    r = f.mul(0.5, _log1p_wide(f, f.div(f.mul(2.0, a), f.sub(1.0, a))))
    return f.sel(f.cmp(x, x, "NE"), x, f.signed(x, r))


def _acosh32(f: F, x):
    t = f.sub(x, 1.0)
    small = _log1p_wide(f, f.add(t, f("sqrt", f.add(f.mul(2.0, t), f.mul(t, t)))))
    r = f.sel(f.cmp(x, BIG32, "GT"), f.add(_log(f, x), LN2), small)
    return f.sel(f.cmp(x, 1.0, "LT"), f.c(math.nan), r)


FMOD_STEP = 26  # bits of the quotient taken per step of `_fmod`


def _fmod(f: F, x, y):
    """C's fmod of float64 x, y holding float32 (or narrower) values, exact: |x| reduced by |y| 2^k for k = 260, 234,
    ..., 0, each step's quotient trunc(r / (|y| 2^k)) < 2^26 (no rounding crosses an integer: a nonzero fraction is
    at least 2^-24) and r - q |y| 2^k exact (every value a multiple of ulp(|y|) 2^k below 2^50 of them); the sign of x.
    Vulkan's float32 remainder is x - y trunc(x / y) in float32: fmod(825.51117, 249.29161) 77.63635, not 77.63634.
    The quotient's truncation is a floor (r / b >= 0): as a float64 -> int32 -> float64 round trip, lavapipe on an AVX2
    host (AMD EPYC) gave fmod(3.8159065e10, -196.1932) 0, not 1.7225952."""
    ax, ay = f("abs", x), f("abs", y)
    r = ax
    for k in range(10 * FMOD_STEP, -1, -FMOD_STEP):
        b = f.mul(ay, 2.0 ** k)
        q = f("floor", f.div(r, b))  # (r, b >= 0: truncation)
        r = f.sub(r, f.mul(q, b))
    out = f.sel(f.cmp(x, 0.0, "LT"), f.neg(r), r)
    out = f.sel(f.cmp(r, 0.0, "EQ"), f.sel(_neg_sign(f, x, True), f.neg(f.c(0.0)), f.c(0.0)), out)  # (x's sign)
    bad = f.b.op("or", f.b.op("not", _finite(f, x), ty=f.b.i1), f.cmp(ay, 0.0, "EQ"), ty=f.b.i1)
    out = f.sel(bad, f.c(math.nan), out)
    out = f.sel(f.b.op("and", _finite(f, x), _is_inf(f, y), ty=f.b.i1), x, out)
    return f.sel(f.cmp(y, y, "NE"), y, out)


# ---------------------------------------------------------------- complex64 in float64 (IREE's are float32 formulas)
# IREE 3.13 computes complex64 |z|, division, sqrt and log from re^2 + im^2 in float32: it overflows past 1.8e19 and
# underflows below 1e-19 (abs(1e20) was inf, abs(1e-30) 0, 1/(1e20+0j) 0, sqrt(1e20-1j) had imaginary part 623).
# In float64 the squares of float32 parts are exact and in range; C99's special values are kept where noted.


def _inf_either(f: F, a, b):
    return f.b.op("or", f.cmp(f("abs", a), math.inf, "EQ"), f.cmp(f("abs", b), math.inf, "EQ"), ty=f.b.i1)


def _neg_sign(f: F, x, portable: bool = False):
    """x < 0 or x = -0: the sign bit; `portable` (every target's code): a float64's from 1/x = -inf, as Vulkan has no
    float64 bitcast (a division: slower)."""
    if str(f.t.element_type) == "f32":
        return f.b.compare(f.b.op("bitcast_convert", x, ty=f.i32), f.c(0, f.i32), "LT")
    if not portable:
        return f.b.compare(f.bits(x), f.c(0, f.i64), "LT")
    return f.b.op("or", f.cmp(x, 0.0, "LT"), f.b.op("and", f.cmp(x, 0.0, "EQ"), f.cmp(f.div(1.0, x), 0.0, "LT"),
                                                    ty=f.b.i1), ty=f.b.i1)


def _cabs(f: F, a, b):
    return f.sel(_inf_either(f, a, b), f.c(math.inf), f("sqrt", f.add(f.mul(a, a), f.mul(b, b))))


def _cdiv(f: F, a, b, c, d):
    """In float64 the squares of float32 parts are exact and in range; `_cdiv_special`'s C99 values."""
    den = f.add(f.mul(c, c), f.mul(d, d))
    re, im = f.div(f.add(f.mul(a, c), f.mul(b, d)), den), f.div(f.sub(f.mul(b, c), f.mul(a, d)), den)
    return _cdiv_recovered(f, a, b, c, d, re, im)


def _csqrt(f: F, a, b, cabs=_cabs):
    """t = sqrt((|a| + |z|) / 2): (t, b / 2t) for a >= 0, (|b| / 2t, t with b's sign) below; (0, b) at 0, and
    (inf, b) where b is infinite (C99)."""
    t = f("sqrt", f.mul(0.5, f.add(f("abs", a), cabs(f, a, b))))
    two_t = f.mul(2.0, t)
    neg_a = f.cmp(a, 0.0, "LT")
    re = f.sel(neg_a, f.div(f("abs", b), two_t), t)
    im = f.sel(neg_a, f.sel(_neg_sign(f, b), f.neg(t), t), f.div(b, two_t))
    zero, b_inf = f.cmp(t, 0.0, "EQ"), f.cmp(f("abs", b), math.inf, "EQ")
    re = f.sel(b_inf, f.c(math.inf), f.sel(zero, f.c(0.0), re))
    return re, f.sel(b_inf, b, f.sel(zero, b, im))


def _clog(f: F, a, b):
    """(log |z|, atan2(b, a)): |z|^2 exact in float64, so log(|z|^2) / 2 keeps its digits near |z| = 1."""
    re = f.mul(0.5, f("log", f.add(f.mul(a, a), f.mul(b, b))))
    return f.sel(_inf_either(f, a, b), f.c(math.inf), re), f("atan2", b, a)


def _clog1p(f: F, a, b):
    """log(1 + z): |1 + z|^2 = 1 + s with s = a (2 + a) + b^2, so log1p(s) / 2 near |1 + z| = 1, log elsewhere."""
    u = f.add(1.0, a)
    s = f.add(f.mul(a, f.add(2.0, a)), f.mul(b, b))
    near = f.b.op("and", f.cmp(s, -0.5, "GT"), f.cmp(s, 1.0, "LT"), ty=f.b.i1)
    re = f.mul(0.5, f.sel(near, _log1p64(f, s), f("log", f.add(f.mul(u, u), f.mul(b, b)))))
    return f.sel(_inf_either(f, a, b), f.c(math.inf), re), f("atan2", b, u)


def _cexp(f: F, a, b, k=None, exp=None):
    """e^a (cos b, sin b), with b's own zero where b is 0 (C99: exp(x + 0i) = e^x + 0i, not inf * 0 = NaN); the
    kernels `k`'s (complex64's by default), e^a by `exp` (IREE's float64 exp by default)."""
    k = k or _K32
    e = exp(f, a) if exp else f("exponential", a)
    c, sn = k.cos(f, b), k.sin(f, b)
    zero = f.cmp(b, 0.0, "EQ")
    re, im = f.sel(zero, e, f.mul(e, c)), f.sel(zero, b, f.mul(e, sn))
    if k is _K64:  # (past a = 709 e^a overflows where e^a sin b need not: exp(800+1e-307j) was inf + inf j, not
        # inf + 4.9e40j; (e^(a/2) sin b) e^(a/2) there)
        over = f.cmp(a, 709.0, "GT")
        h = exp(f, f.mul(a, 0.5)) if exp else f("exponential", f.mul(a, 0.5))
        re = f.sel(over, f.sel(zero, e, f.mul(f.mul(h, c), h)), re)
        im = f.sel(over, f.sel(zero, b, f.mul(f.mul(h, sn), h)), im)
    # b inf or NaN: (inf, NaN) for a = +inf, (0, 0) for a = -inf (C99)
    b_bad = f.b.op("not", f.cmp(f("abs", b), math.inf, "LT"), ty=f.b.i1)
    pinf = f.b.op("and", f.cmp(a, math.inf, "EQ"), b_bad, ty=f.b.i1)
    ninf = f.b.op("and", f.cmp(a, -math.inf, "EQ"), b_bad, ty=f.b.i1)
    return (f.sel(pinf, f.c(math.inf), f.sel(ninf, f.c(0.0), re)),
            f.sel(pinf, f.c(math.nan), f.sel(ninf, f.c(0.0), im)))


class _K32:
    """The real kernels complex64 functions use, in float64 arithmetic for float32 values (also on Vulkan)."""
    tan, sin, cos = (staticmethod(_sin_cos_tan(n)) for n in ("tan", "sin", "cos"))
    sinh, cosh = (staticmethod(lambda f, x, n=n: _sinh_cosh(n)(f, x, narrow=True)) for n in ("sinh", "cosh"))
    exp = staticmethod(_exp32)
    expm1 = staticmethod(_expm1_32)


class _K64:
    """complex128's: IREE's float64 sin, cos, tan (libm's on the CPU, libdevice's on CUDA: right), exp and expm1 as
    passes/exp64.py's arithmetic, sinh and cosh as `_sinh_cosh`'s."""
    tan, sin, cos = (staticmethod(lambda f, x, n=n: f(n, x)) for n in ("tan", "sine", "cosine"))
    sinh, cosh = (staticmethod(lambda f, x, n=n: _sinh_cosh(n)(f, x)) for n in ("sinh", "cosh"))
    exp = staticmethod(lambda f, x: exp64._exp(f.b, x))
    expm1 = staticmethod(lambda f, x: exp64._expm1(f.b, x))


def _ctanh(f: F, a, b, k=_K32):
    """tanh of complex64 a + bi in float64, FreeBSD's ctanh (Kahan's): t = tan b, s = sinh a, beta = 1 + t^2:
    (beta s sqrt(1 + s^2), t) / (1 + beta s^2); past |a| = 22 (sign(a), 4 sin b cos b e^(-2|a|)), which IREE's formula
    made 1+nanj (tanh(4.7e10+3.6e10j)). C99's special values: a NaN gives (NaN, b) where b is 0 and NaN + NaN i
    elsewhere; a = +-inf (+-1, a zero with the sign of sin b cos b); b inf or NaN with a finite (a if a is 0, NaN)."""
    t, sn, cs, s = k.tan(f, b), k.sin(f, b), k.cos(f, b), k.sinh(f, a)
    beta = f.add(1.0, f.mul(t, t))
    s2 = f.mul(s, s)
    den = f.add(1.0, f.mul(beta, s2))
    re, im = f.div(f.mul(f.mul(beta, s), f("sqrt", f.add(1.0, s2))), den), f.div(t, den)
    sc = f.mul(sn, cs)
    e = k.exp(f, f.neg(f("abs", a)))
    big = f.cmp(f("abs", a), 22.0, "GE")
    one = _copysign(f, f.c(1.0), a, True)
    re = f.sel(big, one, re)
    im = f.sel(big, f.mul(f.mul(4.0, sc), f.mul(e, e)), im)
    a_inf, a_nan = _is_inf(f, a), f.cmp(a, a, "NE")
    b_bad = f.b.op("not", f.cmp(f("abs", b), math.inf, "LT"), ty=f.b.i1)  # (inf or NaN)
    nan = f.c(math.nan)
    re = f.sel(b_bad, f.sel(f.cmp(a, 0.0, "EQ"), a, nan), re)
    im = f.sel(b_bad, nan, im)
    re = f.sel(a_inf, one, re)
    im = f.sel(a_inf, _copysign(f, f.c(0.0), f.sel(_is_inf(f, b), b, sc), True), im)
    re = f.sel(a_nan, a, re)
    im = f.sel(a_nan, f.sel(f.cmp(b, 0.0, "EQ"), b, nan), im)
    return re, im


def _ctan(f: F, a, b, k=_K32):
    """tan z = -i tanh(iz): (v, -u) for tanh(-b + ai) = u + vi (C99's definition, special values included)."""
    u, v = _ctanh(f, f.neg(b), a, k)
    return v, f.neg(u)


def _cexpm1(f: F, a, b, k=_K32):
    """e^z - 1 of complex64 z = a + bi in float64: (expm1(a) cos b - 2 sin^2(b/2), e^a sin b) (no cancellation near
    0), e^a as (e^(a/2))^2 (finite in float64 for every float32 a); IREE's formula overflowed where the result does
    not (expm1(89.7-1098j)'s real part was inf, not 9.4e37) and gave NaN for huge parts (expm1(-3e23+9e23j)). Special
    values as C99's cexp(z) - 1: (expm1(a), b) where b is 0; (inf, NaN) for a = +inf and b inf or NaN, (-1, 0) for
    a = -inf."""
    e2 = k.exp(f, f.mul(a, 0.5))
    ea = f.mul(e2, e2)
    em1 = f.sel(f.cmp(f("abs", a), 0.5, "LT"), k.expm1(f, a), f.sub(ea, 1.0))
    sh = k.sin(f, f.mul(b, 0.5))
    re = f.sub(f.mul(em1, k.cos(f, b)), f.mul(2.0, f.mul(sh, sh)))
    im = f.mul(f.mul(e2, k.sin(f, b)), e2)  # (not ea sin b: e^a overflows float64 past a = 709, the product need not)
    b_bad = f.b.op("not", f.cmp(f("abs", b), math.inf, "LT"), ty=f.b.i1)
    pinf = f.b.op("and", f.cmp(a, math.inf, "EQ"), b_bad, ty=f.b.i1)
    ninf = f.cmp(a, -math.inf, "EQ")
    re = f.sel(pinf, f.c(math.inf), f.sel(ninf, f.c(-1.0), re))
    im = f.sel(pinf, f.c(math.nan), f.sel(ninf, f.c(0.0), im))
    zero = f.cmp(b, 0.0, "EQ")
    return f.sel(zero, k.expm1(f, a), re), f.sel(zero, b, im)


# ---------------------------------------------------------------- complex128 with scaling (IREE's |z|^2 overflows)
# IREE 3.13 computes complex128 |z|, division, sqrt and log from re^2 + im^2 in float64: past 1e154 it overflows and
# below 1e-154 it underflows (abs(1e200+1e200j) was inf, 1/(1e-200+1e-200j) inf+infj, log(1e300j) inf). Here the
# parts are scaled by a power of 2 (exact) first.

def _pow2_of(f: F, m):
    """(p, e, 1/p): p = 2^e, e (int64) the exponent of float64 m > 0, at most 1022 (p = 1, e = 0 where m is 0,
    subnormal, inf or NaN)."""
    e = f.int_("subtract", f.int_("shift_right_logical", f.bits(m), 52), 1023)
    ok = f.b.op("and", f.b.compare(e, f.c(-1023, f.i64), "GT"), f.b.compare(e, f.c(1024, f.i64), "LT"), ty=f.b.i1)
    e = f.b.op("select", ok, f.b.op("minimum", e, f.c(1022, f.i64), ty=f.i64), f.c(0, f.i64), ty=f.i64)
    return _two_to64(f, e), e, _two_to64(f, f.int_("subtract", f.c(0, f.i64), e))


def _two_to64(f: F, n):
    """2^n for int64 n in [-1022, 1023]."""
    return f.from_bits(f.int_("shift_left", f.int_("add", n, 1023), 52))


def _scale_by(f: F, v, k):
    """v 2^k for int64 k (clamped to +-2044), as two exact steps (over- and underflow only where the result does)."""
    k = f.b.op("clamp", f.c(-2044, f.i64), k, f.c(2044, f.i64), ty=f.i64)
    k1 = f.int_("shift_right_arithmetic", k, 1)
    return f.mul(f.mul(v, _two_to64(f, k1)), _two_to64(f, f.int_("subtract", k, k1)))


def _cabs64(f: F, a, b):
    """|z| = 2^e sqrt((a/2^e)^2 + (b/2^e)^2), 2^e the exponent of max(|a|, |b|)."""
    p, _, inv = _pow2_of(f, f("maximum", f("abs", a), f("abs", b)))
    a1, b1 = f.mul(a, inv), f.mul(b, inv)
    return f.sel(_inf_either(f, a, b), f.c(math.inf), f.mul(f("sqrt", f.add(f.mul(a1, a1), f.mul(b1, b1))), p))


def _is_inf(f: F, v):
    return f.cmp(f("abs", v), math.inf, "EQ")


def _finite(f: F, v):
    return f.cmp(f("abs", v), math.inf, "LT")


def _copysign(f: F, mag, s, portable: bool = False):
    """|mag| with the sign bit of s (`_neg_sign`'s `portable`)."""
    return f.sel(_neg_sign(f, s, portable), f.neg(f("abs", mag)), f("abs", mag))


def _cdiv64(f: F, a, b, c, d):
    """(a + bi) / (c + di) with both scaled to exponent 0 by powers of 2 (exact), the quotient scaled back in two
    steps; C99 Annex G's special values (`_cdiv_special`)."""
    _, ec, ic = _pow2_of(f, f("maximum", f("abs", c), f("abs", d)))
    _, en, in_ = _pow2_of(f, f("maximum", f("abs", a), f("abs", b)))
    a1, b1, c1, d1 = f.mul(a, in_), f.mul(b, in_), f.mul(c, ic), f.mul(d, ic)
    den = f.add(f.mul(c1, c1), f.mul(d1, d1))
    k = f.int_("subtract", en, ec)
    re = _scale_by(f, f.div(f.add(f.mul(a1, c1), f.mul(b1, d1)), den), k)
    im = _scale_by(f, f.div(f.sub(f.mul(b1, c1), f.mul(a1, d1)), den), k)
    return _cdiv_recovered(f, a, b, c, d, re, im)


def _any(f: F, mask):
    """A 0-d i1 tensor: whether `mask` (i1, `f`'s shape) holds anywhere (an int32 max: an i1 reduction fused with
    its producer kept a whole tensor on IREE's stack)."""
    i32 = ir.IntegerType.get_signless(32)
    t0 = ir.RankedTensorType.get([], i32)
    ones = f.b.op("select", mask, f.c(1, f.i32), f.c(0, f.i32), ty=f.i32)
    red = ir.Operation.create("stablehlo.reduce", results=[t0], operands=[ones, make_constant(np.array(0, np.int32), t0)],
                              attributes={"dimensions": ir.DenseI64ArrayAttr.get(list(range(f.t.rank)))}, regions=1)
    block = red.regions[0].blocks.append(t0, t0)
    with ir.InsertionPoint(block):
        m = ir.Operation.create("stablehlo.maximum", results=[t0], operands=list(block.arguments)).result
        ir.Operation.create("stablehlo.return", results=[], operands=[m])
    return ir.Operation.create("stablehlo.compare", results=[ir.RankedTensorType.get([], ir.IntegerType.get_signless(1))],
                               operands=[red.result, make_constant(np.array(0, np.int32), t0)], attributes={
                                   "comparison_direction": ir.Attribute.parse("#stablehlo<comparison_direction NE>")}).result


def _cdiv_recovered(f: F, a, b, c, d, re, im):
    """`_cdiv_special`'s recovery of the quotient re + im i, taken (a `stablehlo.if`) only where some element is
    NaN + NaN i: the recovery changes nothing elsewhere, and costed twice the division (complex64 on the CPU: 3.2 ms
    per 262k elements against 1.2). Small or dynamically shaped tensors select it always."""
    if not f.t.has_static_shape or math.prod(f.t.shape) < IF_ELEMENTS:
        return _cdiv_special(f, a, b, c, d, re, im)
    # (the quotient computed apart: fused into the reduction's dispatch, IREE kept whole tensors on the stack)
    re, im = ir.Operation.create("stablehlo.optimization_barrier", results=[f.t, f.t], operands=[re, im]).results
    nan = f.b.op("and", f.cmp(re, re, "NE"), f.cmp(im, im, "NE"), ty=f.b.i1)
    branch = ir.Operation.create("stablehlo.if", results=[f.t, f.t], operands=[_any(f, nan)], regions=2)
    for region, fn in zip(branch.regions, (lambda g: _cdiv_special(g, a, b, c, d, re, im), lambda g: (re, im))):
        with ir.InsertionPoint(region.blocks.append()):
            ir.Operation.create("stablehlo.return", results=[], operands=list(fn(F(f.b))))
    return branch.results[0], branch.results[1]


def _cdiv_special(f: F, a, b, c, d, re, im):
    """C99 Annex G's recovery (`_Cdivd`) of a NaN + NaN i quotient re + im i of (a + bi) / (c + di): a finite
    numerator over an infinite denominator is a signed zero, an infinite one over a finite one infinite, a
    nonzero one over zero infinite. One formula (A C + B D, B C - A D) S for the first two, operands chosen by
    selects (a zero of the unit operands is +0)."""
    and_ = lambda p, q: f.b.op("and", p, q, ty=f.b.i1)  # noqa: E731
    or_ = lambda p, q: f.b.op("or", p, q, ty=f.b.i1)  # noqa: E731
    mags = [f("abs", v) for v in (a, b, c, d)]
    inf = [f.cmp(m, math.inf, "EQ") for m in mags]
    fin = [f.cmp(m, math.inf, "LT") for m in mags]
    nan = and_(f.cmp(re, re, "NE"), f.cmp(im, im, "NE"))
    unit = lambda v, i: f.sel(inf[i], f.sel(f.cmp(v, 0.0, "LT"), f.c(-1.0), f.c(1.0)), f.c(0.0))  # noqa: E731
    r1 = and_(nan, and_(and_(f.cmp(c, 0.0, "EQ"), f.cmp(d, 0.0, "EQ")), or_(f.cmp(a, a, "EQ"), f.cmp(b, b, "EQ"))))
    r2 = and_(nan, and_(or_(inf[0], inf[1]), and_(fin[2], fin[3])))
    r3 = and_(nan, and_(or_(inf[2], inf[3]), and_(fin[0], fin[1])))
    A, B = f.sel(r2, unit(a, 0), a), f.sel(r2, unit(b, 1), b)
    C, D = f.sel(r3, unit(c, 2), c), f.sel(r3, unit(d, 3), d)
    S = f.sel(r2, f.c(math.inf), f.c(0.0))
    r23 = or_(r2, r3)
    re = f.sel(r23, f.mul(f.add(f.mul(A, C), f.mul(B, D)), S), re)
    im = f.sel(r23, f.mul(f.sub(f.mul(B, C), f.mul(A, D)), S), im)
    inf_c = f.sel(_neg_sign(f, c), f.c(-math.inf), f.c(math.inf))
    return f.sel(r1, f.mul(inf_c, a), re), f.sel(r1, f.mul(inf_c, b), im)


def _scaled_csqrt(cabs, edge: int, up: int, down: int):
    """`_csqrt` (with `cabs`) of z 2^(-2k) times 2^k: k = `up` past 2^edge, -`down` below 2^-edge (sqrt halves the
    exponent, so the scaled |z| neither overflows nor underflows)."""
    def sqrt(f: F, a, b):
        m = f("maximum", f("abs", a), f("abs", b))
        big, small = f.cmp(m, 2.0 ** edge, "GT"), f.cmp(m, 2.0 ** -edge, "LT")
        s_in = f.sel(big, f.c(2.0 ** (-2 * up)), f.sel(small, f.c(2.0 ** (2 * down)), f.c(1.0)))
        s_out = f.sel(big, f.c(2.0 ** up), f.sel(small, f.c(2.0 ** -down), f.c(1.0)))
        re, im = _csqrt(f, f.mul(a, s_in), f.mul(b, s_in), cabs)
        return f.mul(re, s_out), f.mul(im, s_out)
    return sqrt


_csqrt64 = _scaled_csqrt(_cabs64, 1000, 100, 100)


def _clog64(f: F, a, b):
    """(log |z|, atan2(b, a)): where |z|^2 is in (1/4, 4), log1p(a^2 + b^2 - 1) / 2 with the squares as exact
    double-double products (no cancellation near |z| = 1); elsewhere log(|z| / 2^e) + e ln 2."""
    ax, ay = f("abs", a), f("abs", b)
    x, y = f("maximum", ax, ay), f("minimum", ax, ay)
    _, e, inv = _pow2_of(f, x)
    x1, y1 = f.mul(x, inv), f.mul(y, inv)
    ef = f("convert", e)
    far = f.add(f.mul(0.5, f("log", f.add(f.mul(x1, x1), f.mul(y1, y1)))), f.add(f.mul(ef, LN2_HI), f.mul(ef, LN2_LO)))
    xn, yn = (f.sel(f.cmp(v, 2.0, "LT"), v, f.c(0.0)) for v in (x, y))  # (Dekker's split overflows past 2^995)
    (p1, e1), (p2, e2) = _two_prod(f, xn, xn), _two_prod(f, yn, yn)
    s, l1 = _two_sum(f, p1, f.c(-1.0))
    s, l2 = _two_sum(f, s, p2)
    s = f.add(s, f.add(f.add(l1, l2), f.add(e1, e2)))
    h2 = f.add(p1, p2)
    near = f.b.op("and", f.b.op("and", f.cmp(h2, 0.25, "GT"), f.cmp(h2, 4.0, "LT"), ty=f.b.i1), f.cmp(x, 2.0, "LT"),
                  ty=f.b.i1)
    re = f.sel(near, f.mul(0.5, _log1p64(f, s)), far)
    return f.sel(_inf_either(f, a, b), f.c(math.inf), re), f("atan2", b, a)


def _clog1p64(f: F, a, b):
    """log(1 + z): `_clog1p`'s log1p(s) / 2 for |1 + z|^2 in (1/2, 4) (s exact enough there, 1 + a not), `_clog64`
    of 1 + z elsewhere."""
    u = f.add(1.0, a)
    s = f.add(f.mul(a, f.add(2.0, a)), f.mul(b, b))
    near = f.b.op("and", f.cmp(s, -0.5, "GT"), f.cmp(s, 3.0, "LT"), ty=f.b.i1)
    re = f.sel(near, f.mul(0.5, _log1p64(f, s)), _clog64(f, u, b)[0])
    return f.sel(_inf_either(f, a, b), f.c(math.inf), re), f("atan2", b, u)


# ---------------------------------------------------------------- complex64 in float32 with scaling (Vulkan)
# Vulkan's SPIR-V has no float64 log, exp or atan2 (`mathlib-complex` needs them), and float64 arithmetic is slow on
# GPUs: there complex64 abs, division and sqrt compute in float32, the parts scaled by powers of 2 (exact) first;
# log in float64 arithmetic (no float64 function). IREE's float32 formulas over- and underflowed: on lavapipe
# abs(1e20+0j) was inf, (1e20+0j)/(1e20+0j) NaN, sqrt(-4+0j) -0+2j.

def _exponent32(f: F, m):
    """The exponent of float32 m clamped to [-126, 126] (0 and subnormals: -126; inf and NaN: 126), int32."""
    e = f.b.op("subtract", f.b.op("shift_right_logical", f.b.op("bitcast_convert", m, ty=f.i32), f.c(23, f.i32),
                                  ty=f.i32), f.c(127, f.i32), ty=f.i32)
    return f.b.op("clamp", f.c(-126, f.i32), e, f.c(126, f.i32), ty=f.i32)


def _two_to32(f: F, n):
    """2^n as float32 for int32 n in [-126, 127]."""
    return f.b.op("bitcast_convert", f.b.op("shift_left", f.b.op("add", n, f.c(127, f.i32), ty=f.i32),
                                            f.c(23, f.i32), ty=f.i32), ty=f.t)


def _unit_scale32(f: F, a, b):
    """(a 2^-e, b 2^-e, e): e the exponent of max(|a|, |b|), so the larger part is in [1, 4) (subnormal ones below)."""
    e = _exponent32(f, f("maximum", f("abs", a), f("abs", b)))
    s = _two_to32(f, f.b.op("negate", e, ty=f.i32))
    return f.mul(a, s), f.mul(b, s), e


def _cabs32(f: F, a, b):
    a1, b1, e = _unit_scale32(f, a, b)
    r = f.mul(f("sqrt", f.add(f.mul(a1, a1), f.mul(b1, b1))), _two_to32(f, e))
    return f.sel(_inf_either(f, a, b), f.c(math.inf), r)


def _cdiv32(f: F, a, b, c, d):
    """Both operands scaled to exponent 0 (`_unit_scale32`), the quotient scaled back by 2^(en - ec) in two steps;
    `_cdiv_special`'s C99 values."""
    a1, b1, en = _unit_scale32(f, a, b)
    c1, d1, ec = _unit_scale32(f, c, d)
    den = f.add(f.mul(c1, c1), f.mul(d1, d1))
    k = f.b.op("subtract", en, ec, ty=f.i32)
    k1 = f.b.op("shift_right_arithmetic", k, f.c(1, f.i32), ty=f.i32)
    s1, s2 = _two_to32(f, k1), _two_to32(f, f.b.op("subtract", k, k1, ty=f.i32))
    back = lambda v: f.mul(f.mul(f.div(v, den), s1), s2)  # noqa: E731
    re, im = back(f.add(f.mul(a1, c1), f.mul(b1, d1))), back(f.sub(f.mul(b1, c1), f.mul(a1, d1)))
    return _cdiv_recovered(f, a, b, c, d, re, im)


_csqrt32 = _scaled_csqrt(_cabs32, 60, 40, 50)


def _clog_glsl(f: F, a, b):
    """log of complex64 a + bi in float64 arithmetic (a, b float32 values), no float64 function: with x = max(|a|,
    |b|), y = min, log |z| = log1p((x - 1)(x + 1) + y^2) / 2 near |z| = 1 (each term exact), log x + log1p((y/x)^2) / 2
    elsewhere; `_log`, `_log1p_wide` and fdlibm's `_atan2` (mathlib's, from float32 bits and arithmetic)."""
    ax, ay = f("abs", a), f("abs", b)
    x, y = f("maximum", ax, ay), f("minimum", ax, ay)
    s = f.add(f.mul(f.sub(x, 1.0), f.add(x, 1.0)), f.mul(y, y))
    q = f.div(y, f.sel(f.cmp(x, 0.0, "EQ"), f.c(1.0), x))
    far = f.add(_log(f, x), f.mul(0.5, _log1p_wide(f, f.mul(q, q))))
    near = f.b.op("and", f.cmp(s, -0.75, "GT"), f.cmp(s, 3.0, "LT"), ty=f.b.i1)
    re = f.sel(near, f.mul(0.5, _log1p_wide(f, s)), far)
    re = f.sel(f.cmp(x, 0.0, "EQ"), f.c(-math.inf), re)
    return f.sel(_inf_either(f, a, b), f.c(math.inf), re), _atan2(f, b, a)


def _clog1p_glsl(f: F, a, b):
    """log(1 + z) as `_clog1p` with `_log1p_wide` near |1 + z| = 1 and `_clog_glsl` of 1 + z elsewhere (1 + a rounded
    to float32 there: 2^-25 of a log >= 0.35)."""
    u = f.add(1.0, a)
    s = f.add(f.mul(a, f.add(2.0, a)), f.mul(b, b))
    near = f.b.op("and", f.cmp(s, -0.5, "GT"), f.cmp(s, 3.0, "LT"), ty=f.b.i1)
    re = f.sel(near, f.mul(0.5, _log1p_wide(f, s)), _clog_glsl(f, u, b)[0])
    return f.sel(_inf_either(f, a, b), f.c(math.inf), re), _atan2(f, b, u)


# ---------------------------------------------------------------- complex64 power (every target)
# IREE 3.13 lowers a complex power to exp(y log x) in float32 with a select of complex values: SPIR-V has none (it did
# not compile on Vulkan), and on the CPU it was 11 ulps off, 0**(1+1j) NaN, 1j**(1e38+0j) -inf-inf j. Here NumPy's
# `npy_cpow`, in float64 arithmetic and no float64 function (so Vulkan too).

def _csign(f: F, a, b, cabs=_cabs):
    """z / |z| (`cabs`'s |z|), NumPy's: 0 at 0, NaN + NaN i where a part is NaN or both are infinite, (+-1, 0) or
    (0, +-1) where one part is (IREE's is a select of complex values: no SPIR-V)."""
    h = cabs(f, a, b)
    re, im = f.div(a, h), f.div(b, h)
    zero = f.b.op("and", f.cmp(a, 0.0, "EQ"), f.cmp(b, 0.0, "EQ"), ty=f.b.i1)
    re, im = f.sel(zero, f.c(0.0), re), f.sel(zero, f.c(0.0), im)
    a_inf, b_inf = _is_inf(f, a), _is_inf(f, b)
    unit = lambda v: f.sel(f.cmp(v, 0.0, "LT"), f.c(-1.0), f.c(1.0))  # noqa: E731
    only_a = f.b.op("and", a_inf, f.b.op("not", b_inf, ty=f.b.i1), ty=f.b.i1)
    only_b = f.b.op("and", b_inf, f.b.op("not", a_inf, ty=f.b.i1), ty=f.b.i1)
    re, im = f.sel(only_a, unit(a), f.sel(only_b, f.c(0.0), re)), f.sel(only_a, f.c(0.0), f.sel(only_b, unit(b), im))
    return re, im


def _complex_hyperbolic(name: str, k=None):
    """sinh z = -i sin(iz) and cosh z = cos(iz) (C99's definitions, special values included) by `_complex_trig`:
    IREE's (e^z -+ e^-z) / 2 was 22 (sinh) and 14 (cosh) ulps off on the CPU, 27 and 19 on Vulkan."""
    trig = _complex_trig("sin" if name == "sinh" else "cos", k)

    def build(f: F, a, b):
        u, v = trig(f, f.neg(b), a)
        return (v, f.neg(u)) if name == "sinh" else (u, v)
    return build


# ---------------------------------------------------------------- complex64 asin, acos, atan, asinh, acosh, atanh
# IREE 3.13's are log/sqrt formulas in float32: 34-39 ulps on the CPU, 505 (asin, asinh) and 127 (atan, atanh) on
# Vulkan. Here Hull, Fairgrieve and Tang's casin/cacos (ACM TOMS 23(3), 1997) and Kahan's catanh in float64
# arithmetic with mathlib's kernels (no float64 function: Vulkan too), on the first quadrant, C99's special values and
# symmetries (which NumPy's, FreeBSD's, follow).

_B_CROSS = 0.6417


def _log_big(f: F, w):
    """log of float64 w >= 2 up to 2^130 (`_log1p_wide` of w - 1, w scaled by 1/4 past 2^100: float32's range)."""
    big = f.cmp(w, 2.0 ** 100, "GT")
    r = _log1p_wide(f, f.sub(f.mul(w, f.sel(big, f.c(0.25), f.c(1.0))), 1.0))
    return f.add(r, f.sel(big, f.c(2 * LN2), f.c(0.0)))


class _AK32:
    """The real kernels of complex64's inverse functions: float64 arithmetic, no float64 function (Vulkan too)."""
    asin, acos, log1p, log_big, atan2 = (staticmethod(k) for k in (_asin, _acos, _log1p_wide, _log_big, _atan2))
    big = None  # (float32 parts: no square over- or underflows in float64)

    @staticmethod
    def atan_q(f: F, num, den):
        """atan(num / den) for num, den >= 0 (den > 0 or num / den = inf)."""
        return _atan_abs(f, f.div(num, den))


class _AK64:
    """complex128's: IREE's float64 atan2, log (libm's on the CPU) and `_log1p64`; past `big` the asymptotic forms."""
    log1p = staticmethod(_log1p64)
    log_big = staticmethod(lambda f, w: f("log", w))
    atan2 = staticmethod(lambda f, y, x: f("atan2", y, x))
    atan_q = atan2
    asin = staticmethod(lambda f, v: f("atan2", v, f("sqrt", f.mul(f.sub(1.0, v), f.add(1.0, v)))))
    acos = staticmethod(lambda f, v: f("atan2", f("sqrt", f.mul(f.sub(1.0, v), f.add(1.0, v))), v))
    big = 1e10  # asin z = -i log(2iz) + O(1 / z^2) past 2^28 (the squares below overflow past 1e154)


def _log_abs64(f: F, m, n):
    """log |m + ni| for m >= n >= 0, m > 0 (no square over- or underflows): log m + log1p((n / m)^2) / 2."""
    q = f.div(n, m)
    return f.add(f("log", m), f.mul(0.5, _log1p64(f, f.mul(q, q))))


def _casin_q(f: F, x, y, k=_AK32):
    """(re asin z, im asin z, re acos z) for finite z = x + iy, x, y >= 0 (Hull et al.: r = |z + 1|, s = |z - 1|,
    A = (r + s) / 2, B = x / A; A - 1 without cancellation near A = 1; sqrt((A - 1)(A + 1)) as y sqrt(...) for x < 1,
    so that a tiny y (y^2 underflows) keeps im = y / sqrt(1 - x^2); s = y at x = 1). Kernels `k`'s; past `k.big`
    (complex128) the asymptotic forms (atan2(x, y), log 2|z|)."""
    xp1, xm1, one_mx = f.add(x, 1.0), f.sub(x, 1.0), f.sub(1.0, x)
    y2 = f.mul(y, y)
    r, s = f("sqrt", f.add(f.mul(xp1, xp1), y2)), f("sqrt", f.add(f.mul(xm1, xm1), y2))
    s = f.sel(f.cmp(x, 1.0, "EQ"), y, s)
    A = f.mul(0.5, f.add(r, s))
    B = f.div(x, A)
    rx = f.add(r, xp1)
    small = f.cmp(x, 1.0, "LE")
    apx = f.mul(0.5, f.add(A, x))
    # x <= 1: sqrt(apx (y^2 / (r + x + 1) + (s + 1 - x))); x > 1: y sqrt(apx (1 / (r + x + 1) + 1 / (s + x - 1)))
    d_small = f("sqrt", f.mul(apx, f.add(f.div(y2, rx), f.add(s, one_mx))))
    sxm1 = f.add(s, xm1)
    d_big = f.mul(y, f("sqrt", f.mul(apx, f.add(f.div(1.0, rx), f.div(1.0, f.sel(small, f.c(1.0), sxm1))))))
    d = f.sel(small, d_small, d_big)  # sqrt(1 - B^2) A, computed without cancellation
    near = f.cmp(B, _B_CROSS, "GT")
    re_asin = f.sel(near, k.atan_q(f, x, d), k.asin(f, B))
    re_acos = f.sel(near, k.atan_q(f, d, f.sel(f.cmp(x, 0.0, "EQ"), f.c(1.0), x)), k.acos(f, B))
    lt1 = f.cmp(x, 1.0, "LT")
    h = f.mul(0.5, f.add(f.div(1.0, rx), f.div(1.0, f.sel(lt1, f.add(s, one_mx), f.c(1.0)))))  # (A - 1) / y^2, x < 1
    am1_big = f.mul(0.5, f.add(f.div(y2, rx), sxm1))
    am1 = f.sel(lt1, f.mul(y2, h), am1_big)
    root = f.sel(lt1, f.mul(y, f("sqrt", f.mul(h, f.add(A, 1.0)))), f("sqrt", f.mul(am1_big, f.add(A, 1.0))))
    im_near = k.log1p(f, f.add(am1, root))
    im_far = k.log_big(f, f.add(A, f("sqrt", f.sub(f.mul(A, A), 1.0))))
    im = f.sel(f.cmp(A, 1.5, "LE"), im_near, im_far)
    if k.big is None:
        return re_asin, im, re_acos
    m, n = f("maximum", x, y), f("minimum", x, y)
    far = f.cmp(m, k.big, "GT")
    im_huge = f.add(_log_abs64(f, f.sel(far, m, f.c(1.0)), f.sel(far, n, f.c(0.0))), LN2)
    return f.sel(far, k.atan2(f, x, y), re_asin), f.sel(far, im_huge, im), f.sel(far, k.atan2(f, y, x), re_acos)


def _flags(f: F, a, b):
    """(a inf, b inf, a NaN, b NaN, a finite, b finite)."""
    return _is_inf(f, a), _is_inf(f, b), f.cmp(a, a, "NE"), f.cmp(b, b, "NE"), _finite(f, a), _finite(f, b)


def _casinh_q(f: F, a, b, k=_AK32):
    """|asinh(a + bi)|'s parts (P, Q) for a, b >= 0 (or NaN): `_casin_q` of (b, a), swapped; C99's special values."""
    ai, bi, an, bn, af, bf = _flags(f, a, b)
    fin = f.b.op("and", af, bf, ty=f.b.i1)
    q, p, _ = _casin_q(f, f.sel(fin, b, f.c(0.0)), f.sel(fin, a, f.c(0.0)), k)
    and_ = lambda u, v: f.b.op("and", u, v, ty=f.b.i1)  # noqa: E731
    or_ = lambda u, v: f.b.op("or", u, v, ty=f.b.i1)  # noqa: E731
    nan, inf = f.c(math.nan), f.c(math.inf)
    p = f.sel(or_(ai, bi), inf, f.sel(or_(an, bn), nan, p))
    q = f.sel(and_(ai, bi), f.c(math.pi / 4), f.sel(and_(bi, af), f.c(math.pi / 2), f.sel(and_(ai, bf), f.c(0.0),
              f.sel(and_(an, f.cmp(b, 0.0, "EQ")), f.c(0.0), f.sel(or_(an, bn), nan, q)))))
    return p, q


def _casin(f: F, x, y, k=_AK32):
    q, p = _casinh_q(f, f("abs", y), f("abs", x), k)
    return _copysign(f, p, x, True), _copysign(f, q, y, True)


def _casinh(f: F, x, y, k=_AK32):
    p, q = _casinh_q(f, f("abs", x), f("abs", y), k)
    return _copysign(f, p, x, True), _copysign(f, q, y, True)


def _cacos(f: F, x, y, k=_AK32):
    """acos z: (R, -I) on the first quadrant by `_casin_q`, then pi - R for x < 0 and the sign of -y; C99's values."""
    a, b = f("abs", x), f("abs", y)
    ai, bi, an, bn, af, bf = _flags(f, a, b)
    and_ = lambda u, v: f.b.op("and", u, v, ty=f.b.i1)  # noqa: E731
    or_ = lambda u, v: f.b.op("or", u, v, ty=f.b.i1)  # noqa: E731
    fin = and_(af, bf)
    _, im, re = _casin_q(f, f.sel(fin, a, f.c(0.0)), f.sel(fin, b, f.c(0.0)), k)
    nan, inf = f.c(math.nan), f.c(math.inf)
    im = f.sel(or_(ai, bi), inf, f.sel(and_(f.cmp(a, 0.0, "EQ"), bn), nan, f.sel(or_(an, bn), nan, im)))
    re = f.sel(and_(ai, bi), f.c(math.pi / 4), f.sel(and_(bi, af), f.c(math.pi / 2), f.sel(and_(ai, bf), f.c(0.0),
               f.sel(and_(f.cmp(a, 0.0, "EQ"), bn), f.c(math.pi / 2), f.sel(or_(an, bn), nan, re)))))
    re = f.sel(_neg_sign(f, x, True), f.sub(math.pi, re), re)
    return re, f.sel(_neg_sign(f, y, True), im, f.neg(im))


def _cacosh(f: F, x, y, k=_AK32):
    """acosh z = (|im acos z|, re acos z with y's sign) (C99's: cacosh(conj z) = conj cacosh z, a real part >= 0)."""
    re, im = _cacos(f, x, y, k)
    return f("abs", im), _copysign(f, re, y, True)


def _catanh_q(f: F, a, b, k=_AK32):
    """atanh(a + bi) for a, b >= 0 (or NaN), Kahan's: (log1p(4a / ((1 - a)^2 + b^2)) / 4, atan2(2b, (1 - a)(1 + a) -
    b^2) / 2), the difference of squares ordered so that its large part is exact; C99's special values. Kernels
    `k`'s; with `k.big` (complex128) also Kahan's edges: (re 1/z, pi/2) past 1e150 (the squares overflow), and a
    real part (ln 2 - log b) / 2 at a = 1, b < 1e-100 (b^2 underflows)."""
    ai, bi, an, bn, af, bf = _flags(f, a, b)
    and_ = lambda u, v: f.b.op("and", u, v, ty=f.b.i1)  # noqa: E731
    or_ = lambda u, v: f.b.op("or", u, v, ty=f.b.i1)  # noqa: E731
    fin = and_(af, bf)
    a0, b0 = f.sel(fin, a, f.c(0.0)), f.sel(fin, b, f.c(0.0))
    one_ma = f.sub(1.0, a0)
    w = f.div(f.mul(4.0, a0), f.add(f.mul(one_ma, one_ma), f.mul(b0, b0)))
    if k.big is None:
        # complex64: w reaches 4 / b^2 = 2^254 at a = 1 (past `_log1p_wide`'s float32 range: atanh(1+1e-20j) was inf),
        # log1p(w) = log(w 2^-128) + 128 ln 2 there (w - 1 keeps 25 bits of w 2^-128 >= 2^-28: 2^-29 of the result)
        huge = f.cmp(w, 2.0 ** 100, "GT")
        re = f.mul(0.25, f.add(k.log1p(f, f.sel(huge, f.sub(f.mul(w, 2.0 ** -128), 1.0), w)),
                               f.sel(huge, f.c(128 * LN2), f.c(0.0))))
    else:
        re = f.mul(0.25, k.log1p(f, w))
    re = f.sel(and_(f.cmp(a0, 1.0, "EQ"), f.cmp(b0, 0.0, "EQ")), f.c(math.inf), re)
    big_a = f.cmp(a0, b0, "GE")
    m, n = f.sel(big_a, a0, b0), f.sel(big_a, b0, a0)
    den = f.sub(f.mul(f.sub(1.0, m), f.add(1.0, m)), f.mul(n, n))  # (1 - a^2 - b^2)
    im = f.mul(0.5, k.atan2(f, f.mul(2.0, b0), den))
    if k.big is not None:
        one_tiny = and_(f.cmp(a0, 1.0, "EQ"), f.cmp(b0, 1e-100, "LT"))
        re = f.sel(one_tiny, f.mul(0.5, f.sub(LN2, f("log", f.sel(one_tiny, b0, f.c(1.0))))), re)
        huge = f.cmp(m, 1e150, "GT")
        q = f.div(n, f.sel(huge, m, f.c(1.0)))
        re = f.sel(huge, f.div(f.div(f.sel(big_a, f.c(1.0), q), m), f.add(1.0, f.mul(q, q))), re)
        im = f.sel(huge, f.c(math.pi / 2), im)
    nan = f.c(math.nan)
    any_inf = or_(ai, bi)
    re = f.sel(any_inf, f.c(0.0), f.sel(and_(f.cmp(a, 0.0, "EQ"), bn), f.c(0.0), f.sel(or_(an, bn), nan, re)))
    im = f.sel(bi, f.c(math.pi / 2), f.sel(and_(ai, bf), f.c(math.pi / 2), f.sel(or_(an, bn), nan, im)))
    return re, im


def _catanh(f: F, x, y, k=_AK32):
    p, q = _catanh_q(f, f("abs", x), f("abs", y), k)
    return _copysign(f, p, x, True), _copysign(f, q, y, True)


def _catan(f: F, x, y, k=_AK32):
    p, q = _catanh_q(f, f("abs", y), f("abs", x), k)
    return _copysign(f, q, x, True), _copysign(f, p, y, True)


def _cmul(f: F, a, b, c, d):
    """(a + bi)(c + di), the schoolbook product (NumPy's `cmul`: its infinities and NaNs)."""
    return f.sub(f.mul(a, c), f.mul(b, d)), f.add(f.mul(a, d), f.mul(b, c))


def _crecip(f: F, c, d):
    """1 / (c + di) by Smith's formula, as NumPy's `cdiv` of 1 (its NaNs: (inf, NaN) for 1/0)."""
    ac, ad = f("abs", c), f("abs", d)
    first = f.cmp(ac, ad, "GE")  # (False where either is NaN: the second branch, as NumPy's)
    num, oth = f.sel(first, c, d), f.sel(first, d, c)
    rat = f.div(oth, num)
    scl = f.div(1.0, f.add(num, f.mul(oth, rat)))
    zr = f.mul(rat, 0.0)  # (ai * rat, ai = 0: NaN for an infinite or NaN ratio, as NumPy's)
    re = f.sel(first, f.mul(f.add(1.0, zr), scl), f.mul(f.add(rat, 0.0), scl))
    im = f.sel(first, f.mul(f.sub(0.0, rat), scl), f.mul(f.sub(zr, 1.0), scl))
    zero = f.b.op("and", f.cmp(ac, 0.0, "EQ"), f.cmp(ad, 0.0, "EQ"), ty=f.b.i1)
    return f.sel(zero, f.div(1.0, ac), re), f.sel(zero, f.div(0.0, ad), im)


def _cpow_int(f: F, a, b, c, n32):
    """(a + bi)^n for the integer n = c = `n32` (int32), |n| < 128, as NumPy's loop: n = 1, 2, 3 unrolled, else 1 times
    the squarings z^(2^k) of n's bits, and 1 / that for n < 0."""
    m = f.b.op("abs", n32, ty=f.i32)
    # 1 times z as NumPy's product: (a - 0 b, b + 0 a), 0 v written as a select (NaN for an infinite v): lavapipe
    # folded 0 * inf to 0
    zero_times = lambda v: f.sel(_finite(f, v), f.c(0.0), f.c(math.nan))  # noqa: E731
    acc, p = (f.c(1.0), f.c(0.0)), (a, b)
    for k in range(7):
        prod = (f.sub(p[0], zero_times(p[1])), f.add(p[1], zero_times(p[0]))) if k == 0 else _cmul(f, *acc, *p)
        acc = tuple(f.sel(_bit(f, m, 1 << k), v, w) for v, w in zip(prod, acc))
        if k < 6:
            p = _cmul(f, *p, *p)
    z2 = _cmul(f, a, b, a, b)
    z3 = _cmul(f, a, b, *z2)
    inv = _crecip(f, *acc)
    neg = f.cmp(c, 0.0, "LT")
    out = []
    for i in range(2):
        v = f.sel(neg, inv[i], acc[i])
        v = f.sel(f.cmp(c, 3.0, "EQ"), z3[i], v)
        v = f.sel(f.cmp(c, 2.0, "EQ"), z2[i], v)
        out.append(f.sel(f.cmp(c, 1.0, "EQ"), (a, b)[i], v))
    return tuple(out)


def _cpow(f: F, a, b, c, d, wide: bool = False):
    """(a + bi)^(c + di) of complex64 values in float64, NumPy's `npy_cpow`: 1 for y = 0; for x = 0, 0 where c > 0 and
    NaN + NaN i elsewhere; `_cpow_int` for d = 0 and an integer c, |c| < 100; else C99's cexp(y clog x) (glibc's cpow):
    `_clog_glsl`, the product with Annex G's recovery of NaN + NaN i, `_cexp` with C99's special values. The product's
    error (2^-52 of |y log x|) moves the phase: within 1 ulp of float32 while |y log x| < 2^26. `wide`: complex128
    values: `_clog_dd`, `_cpow_dd` (y log x in double-double arithmetic)."""
    if wide:
        L, ll, t = _clog_dd(f, a, b)
    else:
        (L, t), ll = _clog_glsl(f, a, b), None
    re, im = _cmul(f, c, d, L, t)
    re, im = _cmul_recovered(f, c, d, L, t, re, im)
    er, ei = _cpow_dd(f, c, d, L, ll, t, re, im) if wide else _cexp(f, re, im, exp=_exp32_wide)
    n32 = f.b.op("convert", f("clamp", f.c(-127.0), c, f.c(127.0)), ty=f.i32)  # (not floor: a libm call on the CPU)
    pr, pi = _cpow_int(f, a, b, c, n32)
    and_ = lambda p, q: f.b.op("and", p, q, ty=f.b.i1)  # noqa: E731
    is_int = and_(and_(f.cmp(d, 0.0, "EQ"), f.cmp(f("convert", n32), c, "EQ")), f.cmp(f("abs", c), 100.0, "LT"))
    er, ei = f.sel(is_int, pr, er), f.sel(is_int, pi, ei)
    x0 = and_(f.cmp(a, 0.0, "EQ"), f.cmp(b, 0.0, "EQ"))
    pos = f.cmp(c, 0.0, "GT")
    er, ei = f.sel(x0, f.sel(pos, f.c(0.0), f.c(math.nan)), er), f.sel(x0, f.sel(pos, f.c(0.0), f.c(math.nan)), ei)
    y0 = and_(f.cmp(c, 0.0, "EQ"), f.cmp(d, 0.0, "EQ"))
    return f.sel(y0, f.c(1.0), er), f.sel(y0, f.c(0.0), ei)


def _clog_dd(f: F, a, b):
    """(lh, ll, t): log|x| = lh + ll as a double-double, t = atan2(b, a), for complex128 x = a + bi: log m + log1p((n /
    m)^2) / 2 (m, n the larger and smaller |part|) with log m by `_log_dd`; C99's clog real part (ll = 0) where x is
    0, infinite or NaN."""
    ax, ay = f("abs", a), f("abs", b)
    m, n = f("maximum", ax, ay), f("minimum", ax, ay)
    fin = f.b.op("and", f.cmp(m, 0.0, "GT"), f.cmp(m, math.inf, "LT"), ty=f.b.i1)  # (False for NaN)
    m1 = f.sel(fin, m, f.c(1.0))
    q = f.div(f.sel(fin, n, f.c(0.0)), m1)
    lh, ll = _two_sum(f, *_log_dd(f, f.bits(m1)))  # (normalized: its lo reaches 2^-18 of hi)
    lh, e = _two_sum(f, lh, f.mul(0.5, _log1p64(f, f.mul(q, q))))
    edge = f.sel(_inf_either(f, a, b), f.c(math.inf), f.sel(f.cmp(m, 0.0, "EQ"), f.c(-math.inf), f.c(math.nan)))
    return f.sel(fin, lh, edge), f.sel(fin, f.add(ll, e), f.c(0.0)), f("atan2", b, a)


def _cpow_dd(f: F, c, d, lh, ll, t, re, im):
    """complex128 x^y for finite nonzero x = e^(lh + ll + ti) and finite y = c + di, as e^(c log|x| - d t) (cos q,
    sin q), q = c t + d log|x|, the sums and products in double-double arithmetic, `_exp_dd`, and cos, sin of q_hi +
    q_lo to first order in q_lo. What remains is t's rounding (2^-53 t) times |y|: e^(y log x) rounded in float64
    (NumPy's, glibc's) was 50 ulps off at |y log x| = 30, 830 at |x| = 1e279. Elsewhere C99's cexp of y log x = re +
    im i (its phase q_hi where x and y are finite: one cos and sin for both)."""
    ok = f.b.op("and", f.b.op("and", _finite(f, lh), _finite(f, t), ty=f.b.i1),
                f.b.op("and", _finite(f, c), _finite(f, d), ty=f.b.i1), ty=f.b.i1)
    c1, d1 = f.sel(ok, c, f.c(0.0)), f.sel(ok, d, f.c(0.0))
    rh, rl = _two_prod(f, c1, lh)  # c log|x| - d t
    ph, pl = _two_prod(f, d1, t)
    rh, e = _two_sum(f, rh, f.neg(ph))
    rl = f.add(f.add(rl, f.mul(c1, ll)), f.sub(e, pl))
    qh, ql = _two_prod(f, c1, t)  # q = c t + d log|x|
    sh, sl = _two_prod(f, d1, lh)
    qh, e = _two_sum(f, qh, sh)
    ql = f.add(f.add(ql, f.mul(d1, ll)), f.add(e, sl))
    im = f.sel(ok, qh, im)
    er, ei = _cexp(f, re, im, _K64, _K64.exp)
    mag = _exp_dd(f, rh, rl)
    ql = f.sel(f.cmp(f("abs", qh), 2.0 ** 52, "LT"), ql, f.c(0.0))  # (past 2^52 the phase has no digits left)
    cq, sq = _K64.cos(f, im), _K64.sin(f, im)
    re, im = f.mul(mag, f.sub(cq, f.mul(sq, ql))), f.mul(mag, f.add(sq, f.mul(cq, ql)))
    use = f.b.op("and", ok, f.cmp(mag, math.inf, "LT"), ty=f.b.i1)
    return f.sel(use, re, er), f.sel(use, im, ei)


def _cmul_recovered(f: F, a, b, c, d, re, im):
    """C99 Annex G's recovery (`__muldc3`) of a NaN + NaN i product re + im i of (a + bi)(c + di): an infinite operand
    as a unit (+-1 or +-0 per part, the other's NaN parts +-0), then infinity times the product."""
    and_ = lambda p, q: f.b.op("and", p, q, ty=f.b.i1)  # noqa: E731
    or_ = lambda p, q: f.b.op("or", p, q, ty=f.b.i1)  # noqa: E731
    nan = lambda v: f.cmp(v, v, "NE")  # noqa: E731
    box = lambda v: _copysign(f, f.sel(_is_inf(f, v), f.c(1.0), f.c(0.0)), v, True)  # noqa: E731
    zero_nan = lambda v: f.sel(nan(v), _copysign(f, f.c(0.0), v, True), v)  # noqa: E731
    inf_ab, inf_cd = or_(_is_inf(f, a), _is_inf(f, b)), or_(_is_inf(f, c), _is_inf(f, d))
    both = and_(nan(re), nan(im))
    A, B = f.sel(inf_ab, box(a), a), f.sel(inf_ab, box(b), b)
    C, D = f.sel(inf_ab, zero_nan(c), c), f.sel(inf_ab, zero_nan(d), d)
    C, D = f.sel(inf_cd, box(C), C), f.sel(inf_cd, box(D), D)
    A, B = f.sel(inf_cd, zero_nan(A), A), f.sel(inf_cd, zero_nan(B), B)
    prods = [f.mul(a, c), f.mul(b, d), f.mul(a, d), f.mul(b, c)]
    big = or_(or_(_is_inf(f, prods[0]), _is_inf(f, prods[1])), or_(_is_inf(f, prods[2]), _is_inf(f, prods[3])))
    third = and_(f.b.op("not", or_(inf_ab, inf_cd), ty=f.b.i1), big)
    A, B, C, D = (f.sel(third, zero_nan(v), v) for v in (A, B, C, D))
    recalc = and_(both, or_(or_(inf_ab, inf_cd), big))
    x, y = _cmul(f, A, B, C, D)
    return f.sel(recalc, f.mul(math.inf, x), re), f.sel(recalc, f.mul(math.inf, y), im)


# ---------------------------------------------------------------- the table

NARROW = ("f32", "f16", "bf16")
_T = "tests/test_accuracy.py::"
EXPANSIONS = [
    *(Expansion(f"stablehlo.{op}", NARROW, _sin_cos_tan32(n), "reduces the argument in float32 only: cos(1e10) "
                "gave -1.3e20, sin(-3e-8) +6.2e-8", _T + "test_float32_bounds", f32=True)
      for op, n in (("sine", "sin"), ("cosine", "cos"), ("tan", "tan"))),
    *(Expansion(f"stablehlo.{op}", ("complex<f32>",), _complex_trig(n), "complex ops over IREE's float32 sine: "
                "sin(-3e-8+0j) gave +6.2e-8, tan(1e10+0.5j) NaN", _T + "test_complex64_trig")
      for op, n in (("sine", "sin"), ("cosine", "cos"), ("tan", "tan"))),
    Expansion("stablehlo.tanh", ("complex<f32>",), _ctanh, "float32 formula: tanh(4.7e10+3.6e10j) 1+nanj, "
              "tanh(0+inf j) NaN+NaN i", "tests/test_complex_edges.py::test_complex64_tanh_tan_expm1_sin_cos"),
    Expansion("stablehlo.exponential_minus_one", ("complex<f32>",), _cexpm1, "float32 formula: expm1(89.7-1098j) "
              "inf+infj (9.4e37+infj), expm1(-3e23+9e23j) NaN", "tests/test_complex_edges.py::test_complex64_tanh_tan_expm1_sin_cos"),
    Expansion("stablehlo.power", NARROW, lambda f, x, y: _exp2_f32(f, y), "exp2 as exp(y log 2) in float32: 63 ulps",
              _T + "test_float32_binary_bounds", applies=lambda op: splat_value(op.operands[0]) == 2.0, f32=True),
    Expansion("stablehlo.power", NARROW, _power, "float32 exp(y log x) in float32: 124 ulps",
              _T + "test_float32_power_edges", f32=True),
    Expansion("stablehlo.atan2", NARROW, _atan2, "float32 polynomial: 39 ulps", _T + "test_float32_bounds"),
    Expansion("chlo.atan", NARROW, _atan, "through float32 atan2: 38 ulps", _T + "test_float32_bounds"),
    Expansion("chlo.asin", NARROW, _asin, "through float32 atan2: 39 ulps near +-1", _T + "test_float32_bounds"),
    Expansion("chlo.acos", NARROW, _acos, "through float32 atan2: 39 ulps", _T + "test_float32_bounds"),
    Expansion("chlo.sinh", NARROW, _sinh_f32, "float32 (e^x - e^-x)/2: 23 ulps", _T + "test_float32_bounds", f32=True),
    Expansion("chlo.cosh", NARROW, _cosh_f32, "float32 (e^x + e^-x)/2: 23 ulps", _T + "test_float32_bounds", f32=True),
    Expansion("stablehlo.cbrt", NARROW, lambda f, x: _cbrt(f, x, narrow=True), "float32 polynomial: 11.6 ulps", _T + "test_float32_bounds"),
    Expansion("chlo.erf", NARROW, _erf, "float32 rational: 5.4 ulps, 0 for |x| < 7e-37 (1.7e7 ulps)", _T + "test_erf_float32",
              f32=True),
    Expansion("chlo.sinh", ("f64",), _sinh_cosh("sinh"), "(e^x - e^-x)/2: 9e15 ulps near 0",
              _T + "test_float64_bounds"),
    Expansion("chlo.cosh", ("f64",), _sinh_cosh("cosh"), "(e^x + e^-x)/2: 16 ulps", _T + "test_float64_bounds"),
    Expansion("stablehlo.cbrt", ("f64",), _cbrt, "no float64 lowering: 'failed to legalize operation math.cbrt'",
              _T + "test_float64_bounds"),
    Expansion("stablehlo.power", ("f64",), _pow64, "float64 exp(y log x): 64 ulps (exp2: 86)",
              _T + "test_float64_power"),
    Expansion("stablehlo.log_plus_one", ("f64",), _log1p64, "float64 log1p as log(1 + x): 9e15 ulps near 0",
              _T + "test_float64_bounds"),
    Expansion("chlo.erf_inv", ("f64",), _erfinv64, "XLA's Giles polynomials of -log1p(-x^2): 4.6e5 ulps near 1 "
              "on CUDA (its log1p a call; 3 on the CPU)", _T + "test_erfinv_float64"),
    Expansion("chlo.asinh", ("f64",), _asinh64, "through log(1 + x): 9e15 ulps near 0", _T + "test_float64_bounds"),
    Expansion("chlo.atanh", ("f64",), _atanh64, "through log(1 + x): 9e15 ulps near 0", _T + "test_float64_bounds"),
    Expansion("chlo.acosh", ("f64",), _acosh64, "log(x + sqrt(x^2 - 1)): 1.4e7 ulps near 1", _T + "test_float64_bounds"),
    Expansion("stablehlo.sign", ("complex<f32>",), _csign, "z / |z| with a select of complex values: no SPIR-V",
              "tests/test_complex_power.py::test_vulkan_complex64_sign_sinh_cosh"),
    *(Expansion(f"chlo.{n}", ("complex<f32>",), _complex_hyperbolic(n), "(e^z -+ e^-z) / 2: 22 ulps (sinh), 14 (cosh)",
                "tests/test_complex_power.py::test_complex64_sign_sinh_cosh") for n in ("sinh", "cosh")),
    *(Expansion(f"chlo.{n}", ("complex<f32>",), build, "log/sqrt formulas in float32: 34-39 ulps (CPU), 127-505 "
                "(Vulkan)", "tests/test_complex_power.py::test_complex64_inverse_trig")
      for n, build in (("asin", _casin), ("acos", _cacos), ("atan", _catan), ("asinh", _casinh), ("acosh", _cacosh),
                       ("atanh", _catanh))),
    Expansion("stablehlo.power", ("complex<f32>",), _cpow, "exp(y log x) in float32 with a select of complex values: "
              "no SPIR-V; 11 ulps on the CPU, 0**(1+1j) NaN", "tests/test_complex_power.py::test_complex64_power"),
]
_C = "tests/test_edge_values.py::test_complex64_at_large_and_small_magnitudes"
_C128 = "tests/test_complex_edges.py::test_complex128_at_large_and_small_magnitudes"
# complex64 in float64: needs float64 log, exp and atan2, so the CPU and CUDA targets declare it (`mathlib-complex`);
# Vulkan's SPIR-V has none (there IREE's float32 formulas remain).
COMPLEX_EXPANSIONS = [
    *(Expansion(op, ("complex<f32>",), build, what, _C) for op, build, what in (
        ("stablehlo.abs", _cabs, "float32 sqrt(re^2 + im^2): abs(1e20) inf, abs(1e-30) 0"),
        ("stablehlo.divide", _cdiv, "float32 re^2 + im^2: 1/(1e20+0j) gave 0, 1/(1e-30+0j) inf+nanj"),
        ("stablehlo.sqrt", _csqrt, "float32 |z|: sqrt(1e20-1j) gave 1e10+623j"),
        ("stablehlo.log", _clog, "float32 |z|: log(1e20j) inf, log(0) -inf+nanj"),
        ("stablehlo.log_plus_one", _clog1p, "log(1 + z) in float32: log1p(-1+0j) 0+nanj"),
        ("stablehlo.exponential", _cexp, "e^a (cos b, sin b) in float32: exp(1e20+0j) inf+nanj"))),
    *(Expansion(op, ("complex<f64>",), build, what, _C128) for op, build, what in (
        ("stablehlo.abs", _cabs64, "float64 sqrt(re^2 + im^2): abs(1e200+1e200j) inf, abs(1e-200j) 0"),
        ("stablehlo.divide", _cdiv64, "float64 re^2 + im^2: 1/(1e-200+1e-200j) inf+infj, (1e200+1e200j)/(1e200+1e200j) NaN"),
        ("stablehlo.sqrt", _csqrt64, "float64 |z|: sqrt(1e300+1e300j) inf"),
        ("stablehlo.log", _clog64, "float64 |z|: log(1e300j) inf, log(1e-300j) -inf"),
        ("stablehlo.log_plus_one", _clog1p64, "float64 |1 + z|^2: log1p(1e300j) inf"),
        ("stablehlo.sine", _complex_trig("sin", _K64), "sinh b as (e^b - e^-b)/2: sin(1e-300+2e-112j) had imaginary "
         "part 0"),
        ("stablehlo.cosine", _complex_trig("cos", _K64), "sinh b as (e^b - e^-b)/2: 0 for tiny b"),
        ("stablehlo.tan", _complex_trig("tan", _K64), "tan(2e-113+2e-112j) had imaginary part 0"),
        ("stablehlo.tanh", lambda f, a, b: _ctanh(f, a, b, _K64), "tanh(-1e-149+1e-150j) had real part 0"),
        ("stablehlo.sign", lambda f, a, b: _csign(f, a, b, _cabs64), "sign(inf j) NaN + NaN i"),
        ("chlo.sinh", _complex_hyperbolic("sinh", _K64), "(e^z - e^-z) / 2: 0 for tiny parts"),
        ("chlo.cosh", _complex_hyperbolic("cosh", _K64), "(e^z + e^-z) / 2: its imaginary part 0 for tiny parts"),
        ("stablehlo.exponential", lambda f, a, b: _cexp(f, a, b, _K64, _K64.exp), "exp(1e308+0j) inf+nanj"),
        ("stablehlo.exponential_minus_one", lambda f, a, b: _cexpm1(f, a, b, _K64),
         "e^a cos b - 1: expm1(-1e-149+1e-150j)'s real part -4e-301"))),
    *(Expansion(f"chlo.{n}", ("complex<f64>",), functools.partial(build, k=_AK64), "log/sqrt formulas in float64: "
                "8e15 ulps at tiny parts (asin(-1.2e-105-3.2e-105j)), 4-15 special values in the wrong class",
                "tests/test_complex128.py::test_complex128_inverse_functions")
      for n, build in (("asin", _casin), ("acos", _cacos), ("atan", _catan), ("asinh", _casinh), ("acosh", _cacosh),
                       ("atanh", _catanh))),
    Expansion("stablehlo.power", ("complex<f64>",), functools.partial(_cpow, wide=True), "exp(y log x) with IREE's "
              "complex log: 9-80 ulps for integer exponents (416 at x = 1e-135, y = 2), 2624 of 6561 special pairs "
              "off NumPy's class (0**(1+1j) NaN)", "tests/test_complex128.py::test_complex128_power"),
]
_G = "tests/test_accuracy.py::test_vulkan_float32_bounds"
_V = "tests/test_complex_edges.py::test_vulkan_complex64_at_large_and_small_magnitudes"
# Vulkan's float32 functions (GLSL's, lavapipe's): exp(x) as exp2(x log2 e), 68 ulps at |x| = 80; log1p(x) as
# log(1 + x), 8e6 ulps near 0 (so asinh and atanh); acosh 351 near 1; tanh 4.25 at 5.8. Declared by the Vulkan target
# (`mathlib-glsl`).
GLSL_EXPANSIONS = [
    Expansion("stablehlo.exponential", NARROW, _exp32, "exp2(x log2 e) in float32: 68 ulps", _G),
    Expansion("stablehlo.exponential_minus_one", NARROW, _expm1_32, "through float32 exp: 41 ulps", _G),
    Expansion("stablehlo.log_plus_one", NARROW, lambda f, x: _log1p_wide(f, x), "log(1 + x): 8e6 ulps near 0", _G),
    Expansion("chlo.asinh", NARROW, _asinh32, "through log(1 + x): 8e6 ulps near 0", _G),
    Expansion("chlo.atanh", NARROW, _atanh32, "through log(1 + x): 4e6 ulps near 0", _G),
    Expansion("chlo.acosh", NARROW, _acosh32, "log(x + sqrt(x^2 - 1)) in float32: 351 ulps near 1", _G),
    Expansion("stablehlo.tanh", NARROW, _tanh32, "lavapipe's float32 tanh: 4.25 ulps at 5.8", _G),
    Expansion("stablehlo.remainder", NARROW, _fmod, "x - y trunc(x / y) in float32: 2e3 ulps (fmod is exact)",
              "tests/test_vulkan_functions.py::test_fmod_is_exact"),
    Expansion("stablehlo.abs", ("complex<f32>",), _cabs32, "float32 sqrt(re^2 + im^2): abs(1e20+0j) inf", _V, f32=True),
    Expansion("stablehlo.divide", ("complex<f32>",), _cdiv32, "float32 re^2 + im^2: (1e20+0j)/(1e20+0j) NaN", _V,
              f32=True),
    Expansion("stablehlo.sqrt", ("complex<f32>",), _csqrt32, "float32 |z|: sqrt(-4+0j) -0+2j, sqrt(1e20-1j) wrong", _V,
              f32=True),
    Expansion("stablehlo.log", ("complex<f32>",), _clog_glsl, "a select of complex values: does not compile", _V),
    Expansion("stablehlo.log_plus_one", ("complex<f32>",), _clog1p_glsl, "a select of complex values: does not compile",
              _V),
    Expansion("stablehlo.exponential", ("complex<f32>",), lambda f, a, b: _cexp(f, a, b, exp=_exp32_wide),
              "a select of complex values: does not compile", _V),
]

_E, _H = "tests/test_passes_exp64.py::", "tests/test_passes_tanh64.py::"
# IREE 3.13 has no vector float64 exp or tanh for llvm-cpu: a scalar libm call per element (a float64 SELU over 1M
# values 3.5 ms on 2 cores, XLA 0.9; tanh over 524288 7.3 ms on one core, XLA 0.39). Right, but slow: the CPU target
# declares these (`mathlib-cpu`, before `mathlib`, whose float64 expansions keep IREE's exp), as vectorizable
# arithmetic (passes/exp64.py, passes/tanh64.py). Also float32 sin, cos, tan with their float32-arithmetic tier
# (`_fast32`): its error-free sums (Fast2Sum) need a compiler that keeps them; Vulkan's (Mesa's NIR) simplifies
# (r - (r - p)) - p to 0 (lavapipe: sin(493.23) = -2.5e-5, 6.7e7 ulps), so there `mathlib`'s float64 tiers remain.
CPU_EXPANSIONS = [
    *(Expansion(f"stablehlo.{op}", NARROW, _sin_cos_tan32(n, fast=True), "reduces the argument in float32 only: "
                "cos(1e10) gave -1.3e20, sin(-3e-8) +6.2e-8", "tests/test_trig.py::test_float32_jit", f32=True)
      for op, n in (("sine", "sin"), ("cosine", "cos"), ("tan", "tan"))),
    # float32 expm1, asinh, acosh, atanh: IREE's are right but slow (its expm1 is an exp, a log and a division; the
    # CHLO expansions take a log and a log1p, or two log1p, per element)
    *(Expansion(op, NARROW, build, what, _T + "test_float32_bounds", f32=True) for op, build, what in (
        ("stablehlo.exponential_minus_one", _expm1_f32, "exp, log and a division: 4.7x exp's time"),
        ("chlo.asinh", _asinh_f32, "a log and a log1p (the large-argument branch's and the other's)"),
        ("chlo.acosh", _acosh_f32, "a log and a log1p, two square roots"),
        ("chlo.atanh", _atanh_f32, "(log1p(x) - log1p(-x)) / 2: two log1p"))),
    Expansion("stablehlo.exponential", ("f64",), lambda f, x: exp64._exp(f.b, x), "libm's scalar exp per element",
              _E + "test_float64_exp_is_arithmetic_within_one_ulp", applies=lambda op: not exp_of_lgamma(op)),
    Expansion("stablehlo.logistic", ("f64",), lambda f, x: exp64._logistic(f.b, x), "libm's scalar exp per element",
              _E + "test_float64_logistic_and_expm1_are_arithmetic_within_two_ulps"),
    Expansion("stablehlo.exponential_minus_one", ("f64",), lambda f, x: exp64._expm1(f.b, x),
              "libm's scalar expm1 per element", _E + "test_float64_logistic_and_expm1_are_arithmetic_within_two_ulps"),
    Expansion("stablehlo.tanh", ("f64",), lambda f, x: tanh64._tanh(f.b, x), "libm's scalar tanh per element",
              _H + "test_float64_tanh_is_arithmetic_within_three_ulps"),
]


def _log_scaled_f32(f: F, x):
    """log x, a subnormal x scaled by 2^24 first: IREE's CUDA log (MLIR's polynomial) reads x below 2^-126 as
    2^-126 (log(1e-45) was -87.3, not -103.3; scipy's ndtri(1e-45) -12.95, not -14.1)."""
    sub = f.cmp(x, 2.0 ** -126, "LT")
    return f.sub(f("log", f.sel(sub, f.mul(x, 2.0 ** 24), x)), f.sel(sub, f.c(24 * LN2), f.c(0.0)))


# CUDA: float32 sin, cos and tan with the float32 tier and every tier selected (`mathlib`'s branch on max |x| reads
# the maximum back to the host: most of a sin's time on an H200), the CPU's float32 expm1 (docs/gpu.md); float32
# log of subnormals
CUDA_EXPANSIONS = [
    Expansion("stablehlo.log", ("f32",), _log_scaled_f32, "subnormals read as 2^-126",
              "tests/test_gpu.py::test_float32_logs_of_subnormals_for_cuda", f32=True),
    *(Expansion(f"stablehlo.{op}", NARROW, _sin_cos_tan32(n, fast=True, branch=False), "`mathlib`'s branch on max |x| "
                "reads the maximum back to the host", _T + "test_float32_bounds",
                f32=True) for op, n in (("sine", "sin"), ("cosine", "cos"), ("tan", "tan"))),
    Expansion("stablehlo.exponential_minus_one", NARROW, _expm1_f32, "5.3 ulps off at 88.72",
              _T + "test_float32_kernels_across_their_thresholds", f32=True),
]
# float64's square root rounded to float32 is float32's correctly rounded one (53 >= 2 * 24 + 2 bits). A table apart
# (`sqrt-in-f64`): in `mathlib-cuda`'s table `fuse` would leave every sqrt unfused, on every target; the pass also
# rewrites the scalar square roots of the generics `fuse` made.
_S = "tests/test_gpu.py::test_float32_square_roots_are_correctly_rounded_for_cuda"
SQRT_EXPANSIONS = [
    Expansion("stablehlo.sqrt", NARROW, lambda f, x: f("sqrt", x), "PTX sqrt.approx.f32 (1 ulp off)", _S),
    Expansion("stablehlo.rsqrt", NARROW, lambda f, x: f.div(f.c(1.0), f("sqrt", x)), "PTX rsqrt.approx.f32", _S),
]


def exp_of_lgamma(op) -> bool:
    """Whether `op` is an exponential of a float32 or float64 `chlo.lgamma` (scipy.special.gamma's exp(gammaln(x))):
    `mathlib` computes it as |Gamma(x)| from x (passes/special.py), so `mathlib-cpu` leaves it. Other readers of
    the lgamma (gammaln beside gamma in one module, shared by CSE) do not matter: they keep their lgamma."""
    if op.name != "stablehlo.exponential" or not op.operands:
        return False
    lg = producer(op.operands[0])
    return (lg is not None and lg.name == "chlo.lgamma" and isinstance(lg.result.type, ir.RankedTensorType)
            and str(ir.RankedTensorType(lg.result.type).element_type) in ("f32", "f64"))


def _by_op(table) -> dict[str, list[Expansion]]:
    out: dict[str, list[Expansion]] = {}
    for e in table:
        out.setdefault(e.op, []).append(e)
    return out


_BY_OP, _BY_OP_GLSL, _BY_OP_COMPLEX = _by_op(EXPANSIONS), _by_op(GLSL_EXPANSIONS), _by_op(COMPLEX_EXPANSIONS)
_BY_OP_CPU, _BY_OP_CUDA, _BY_OP_SQRT = _by_op(CPU_EXPANSIONS), _by_op(CUDA_EXPANSIONS), _by_op(SQRT_EXPANSIONS)


_READ: list = []  # predicates of ops whose form an expansion reads (`read_by_expansions`)


def add_expansions(*exps: Expansion, reads=None) -> None:
    """Register more entries of `EXPANSIONS` (passes/special.py's, at import time); `reads(op)`: whether `op` is an
    operand's producer that one of them reads (`expands` then holds it out of `fuse`'s generics)."""
    EXPANSIONS.extend(exps)
    for e in exps:
        _BY_OP.setdefault(e.op, []).append(e)
    if reads is not None:
        _READ.append(reads)


def _type_name(t: ir.Type) -> str:
    return str(t)


def _expanded(exp: Expansion, op, t, name: str):
    """`exp` built in place of `op` (result type `t`, element type `name`): in float32 where the expansion is
    written for it, else in float64 (complex64 by its parts), the result converted back."""
    f32 = ir.RankedTensorType.get(t.shape, ir.F32Type.get())
    if exp.f32 and name == "complex<f32>":  # (in float32 arithmetic, by its parts)
        b = _Builder(f32, op.operands[0])
        out = exp.build(F(b), *[b.op(p, v, ty=f32) for v in op.operands for p in ("real", "imag")])
        return out if not isinstance(out, tuple) else b.op("complex", *out, ty=t)
    if exp.f32 and name in NARROW:
        b = _Builder(f32, op.operands[0])
        r = exp.build(F(b), *[v if name == "f32" else b.op("convert", v, ty=f32) for v in op.operands])
        return r if name == "f32" else b.op("convert", r, ty=t)
    b = _Builder(ir.RankedTensorType.get(t.shape, ir.F64Type.get()), op.operands[0])
    if name in ("complex<f32>", "complex<f64>"):
        part = f32 if name == "complex<f32>" else b.t
        c64 = ir.RankedTensorType.get(t.shape, ir.ComplexType.get(ir.F64Type.get()))
        wide = [v if part == b.t else b.op("convert", v, ty=c64) for v in op.operands]
        out = exp.build(F(b), *[b.op(p, v) for v in wide for p in ("real", "imag")])
        back = (lambda v: v) if part == b.t else (lambda v: b.op("convert", v, ty=f32))  # noqa: E731
        if not isinstance(out, tuple):  # (a real result: abs)
            return back(out)
        return b.op("complex", *(back(v) for v in out), ty=t)
    xs = [v if name == "f64" else b.op("convert", v if name == "f32" else b.op("convert", v, ty=f32))
          for v in op.operands]  # (narrow types through float32: IREE's f64 -> f16 convert gave 0)
    r = exp.build(F(b), *xs)
    if name == "f64":
        return r
    r = b.op("convert", r, ty=f32)
    return r if name == "f32" else b.op("convert", r, ty=t)


def expand(module: ir.Module, stats: PassStats | None = None, table: dict | None = None) -> int:
    """Rewrite every op of `EXPANSIONS` (or of `table`, by op name) in `module` (loops and branches included); the
    number rewritten."""
    n = 0
    by_op = _BY_OP if table is None else table
    # Consumers before their producers: an expansion that reads what produced its operand (gamma's exp of an lgamma,
    # betaln's sums of lgammas) sees it as written, and a producer it left without readers is erased, not expanded.
    for op in reversed(list(nested_ops(module.operation, tuple(by_op)))):
        if len(op.results) != 1 or not isinstance(op.result.type, ir.RankedTensorType):
            continue
        if next(iter(op.result.uses), None) is None:  # (one an expansion read past: erfc of erfc(x) w, pure)
            op.erase()
            continue
        t = tensor_type(op.result.type)
        name = _type_name(tensor_type(op.operands[0].type).element_type if op.operands else t.element_type)
        exp = next((e for e in by_op[op.name] if name in e.types and (e.applies is None or e.applies(op))), None)
        if exp is None:
            continue
        with ir.InsertionPoint(op), op.location:
            r = _expanded(exp, op, t, name)
        if stats is not None:
            stats.rewrites[f"{op.name.partition('.')[2]}-{name}"] += 1
        op.result.replace_all_uses_with(r)
        op.erase()
        n += 1
    return n


class MathLib(Pass):
    name = "mathlib"
    description = "elementwise functions IREE 3.13 lowers inaccurately, as accurate arithmetic (after StableHLO)"
    kind = "expansion"  # (what it writes is IREE's concern: the StableHLO stage ends before it)
    workaround = Workaround("3.13", "tests/test_accuracy.py::test_float32_bounds")  # (each entry names its own)

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        expand(module, stats)


MATHLIB = register(MathLib())


class _Table(Pass):
    """A mathlib table that some targets declare apart (`table`: by op name)."""
    kind = "expansion"
    table: dict = {}

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        expand(module, stats, self.table)


class MathLibGLSL(_Table):
    name, table, workaround = "mathlib-glsl", _BY_OP_GLSL, Workaround("3.13", _G)
    description = ("Vulkan: float32 exp, expm1, log1p, asinh, atanh, acosh (GLSL's are inaccurate) as float64 arithmetic,"
                   " fmod exact; complex64 abs, divide, sqrt with scaling in float32; exp, log, log1p in float64 arithmetic")


class MathLibComplex(_Table):
    name, table, workaround = "mathlib-complex", _BY_OP_COMPLEX, Workaround("3.13", _C)
    description = "complex64 abs, divide, sqrt, log, log1p, exp in float64 (IREE's float32 |z|^2 over- and underflows)"


class MathLibCPU(_Table):
    name, table, workaround = "mathlib-cpu", _BY_OP_CPU, Workaround("3.13", _E + "test_float64_exp_is_arithmetic_within_one_ulp")
    description = ("CPU: float64 exp, logistic, expm1 and tanh as vectorizable arithmetic (IREE calls libm per element);"
                   " float32 sin, cos, tan with a float32 tier; float32 expm1, asinh, acosh, atanh in float32")


class MathLibCUDA(_Table):
    name, table, workaround = "mathlib-cuda", _BY_OP_CUDA, Workaround("3.13", _T + "test_float32_bounds")
    description = ("CUDA: float32 sin, cos, tan with a float32 tier, every tier selected (no branch); float32 expm1 in "
                   "float32")


class SqrtInF64(_Table):
    name, table, workaround = "sqrt-in-f64", _BY_OP_SQRT, Workaround("3.13", _S)
    description = "float32, float16 and bfloat16 sqrt and rsqrt in float64, rounded once (IREE's CUDA: approximate)"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        expand(module, stats, self.table)
        f64 = ir.F64Type.get()
        for op in nested_ops(module.operation, ("math.sqrt", "math.rsqrt")):  # (in `fuse`'s generics)
            t = op.result.type
            if str(t) not in NARROW:
                continue
            steps = [f64] if str(t) == "f32" else [ir.F32Type.get(), f64]  # (half types through float32, as above)
            with ir.InsertionPoint(op), op.location:
                r = op.operands[0]
                for w in steps:
                    r = ir.Operation.create("arith.extf", results=[w], operands=[r]).result
                r = ir.Operation.create("math.sqrt", results=[f64], operands=[r]).result
                if op.name == "math.rsqrt":
                    one = ir.Operation.create("arith.constant", results=[f64],
                                              attributes={"value": ir.FloatAttr.get(f64, 1.0)}).result
                    r = ir.Operation.create("arith.divf", results=[f64], operands=[one, r]).result
                for w in [*steps[-2::-1], t]:
                    r = ir.Operation.create("arith.truncf", results=[w], operands=[r]).result
            stats.rewrites[f"{op.name}-{t}"] += 1
            op.result.replace_all_uses_with(r)
            op.erase()


MATHLIB_GLSL, MATHLIB_COMPLEX, MATHLIB_CPU = register(MathLibGLSL()), register(MathLibComplex()), register(MathLibCPU())
MATHLIB_CUDA, SQRT_IN_F64 = register(MathLibCUDA()), register(SqrtInF64())


def expands(op) -> bool:
    """Whether `mathlib` (every target's), `mathlib-cpu` or `mathlib-cuda` has an entry for `op` (its name and operand type), or an
    entry reads `op` (erfc's v * 1/sqrt 2): `fuse` leaves such ops alone, so that they reach the expansion (in a
    `linalg.generic` they would be IREE's own: sin(1e10) was -6e21 there). (Not the GLSL table's float32 exp: fused,
    Vulkan keeps GLSL's.)"""
    if not op.operands or not isinstance(op.operands[0].type, ir.RankedTensorType):
        return False
    if any(r(op) for r in _READ):
        return True
    name = _type_name(tensor_type(op.operands[0].type).element_type)
    return any(name in e.types and (e.applies is None or e.applies(op))
               for t in (_BY_OP, _BY_OP_CPU, _BY_OP_CUDA) for e in t.get(op.name, ()))
