"""sin, cos and tan of float32, float16, bfloat16 and complex64 with full range reduction, as float64 StableHLO.

IREE 3.13's float32 sine/cosine (MLIR's polynomial approximation) reduce the argument in float32 only:
cos(1e10) gave -1.3e20, cos(1e30) -inf, and a small negative argument came out wrong (sin(-3e-8) gave +6.2e-8);
its complex64 ops inherit that. This emission gets the same ops on every backend:

1. Payne-Hanek in float64, for every finite float32 `|x|`: 2/pi is split into `CHUNKS` numbers of `BITS` bits
   (exact, from integer arithmetic); each `|x| * c_i` is exact (24 + 29 bits), reduced mod 4 exactly
   (`t - 4 floor(t / 4)`, exact for t >= 0). `k` = the nearest integer to their sum; the fraction
   `f = (r_0 - k) + r_1 + ...` is summed from the largest chunk down, so that the integer part cancels on exact
   values and every rounding is relative to the (small) partial sum. `y = f * pi/2` lies in [-pi/4, pi/4]
   and `k mod 4` is the quadrant.
2. The float64 kernels of FreeBSD msun (`k_sinf`, `k_cosf`, `k_tanf`: relative errors below 2^-37, 2^-34,
   2^-25.5 on [-pi/4, pi/4]) on `y`, picked and negated by the quadrant and the sign of x; rounded once.

Measured against NumPy's float64: at most 0.501 ulp (sin, cos) and 0.80 ulp (tan) over 4.6M float32 arguments
(docs/design.md). Tiny `|x|` (< 2^-12, where sin x and tan x round to x) returns `x`, which keeps -0 and
subnormals; inf and NaN give NaN. float64 and complex128 keep IREE's own ops (libm on the CPU: right).
"""
from __future__ import annotations

import functools

import numpy as np

from .. import lowering as L
from ..core import ShapedArray

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
    two_over_pi = (2 << (2 * prec)) // pi  # 2/pi * 2^prec
    digits = two_over_pi >> (prec - n * bits)  # the first n*bits fraction bits (2/pi < 1)
    mask = (1 << bits) - 1
    return tuple(float((digits >> (bits * (n - 1 - i))) & mask) * 2.0 ** (-bits * (i + 1)) for i in range(n))


C = _two_over_pi_chunks()
PIO2 = 1.5707963267948966
# FreeBSD msun k_sinf.c, k_cosf.c, k_tanf.c (double kernels of the float functions).
S1, S2, S3, S4 = -0.166666666416265235595, 0.0083333293858894631756, -0.000198393348360966317347, \
    0.0000027183114939898219064
C0, C1, C2, C3 = -0.499999997251031003120, 0.0416666233237390631894, -0.00138867637746099294692, \
    0.0000243904487962774090654
T = (0.333331395030791399758, 0.133392002712976742718, 0.0533812378445670393523, 0.0245283181166547278873,
     0.00297435743359967304927, 0.00946564784943673166728)


class _Ops:
    """Elementwise float64 ops on tensors of one shape; constants broadcast to it, a dynamic shape included."""

    def __init__(self, ctx: L.Ctx, x, aval: ShapedArray):
        self.ctx, self.shape = ctx, aval.shape
        self.f64 = ShapedArray(aval.shape, np.dtype(np.float64))
        self._consts: dict[tuple, object] = {}
        # (eager polymorphic kernels: the operand's sizes, read at run time, shape the constants)
        self._dims = L.runtime_shape(ctx, x, len(aval.shape)) if L.DYNAMIC in aval.shape else None

    def const(self, v: float, aval: ShapedArray | None = None):
        aval = aval or self.f64
        key = (v, aval.dtype)
        if key not in self._consts:
            self._consts[key] = L.fill(self.ctx, v, aval, self._dims)
        return self._consts[key]

    def __call__(self, name: str, *xs, aval=None):
        xs = [self.const(x) if isinstance(x, float) else x for x in xs]
        return self.ctx.op1("stablehlo." + name, xs, result_avals=[aval or self.f64])

    def add(self, a, b): return self("add", a, b)
    def sub(self, a, b): return self("subtract", a, b)
    def mul(self, a, b): return self("multiply", a, b)

    def cmp(self, a, b, direction: str):
        b = self.const(b) if isinstance(b, float) else b
        return L.compare(self.ctx, a, b, direction, self.f64)

    def bool(self, name: str, a, b):
        return L.bool_op(self.ctx, name, a, b, shape=self.shape)

    def bit(self, k, bit: int):
        """Whether `bit` is set in the int32 `k`."""
        i32 = self.f64.update(dtype=np.dtype(np.int32))
        one = self.const(bit, i32)
        return L.compare(self.ctx, self.ctx.op1("stablehlo.and", [k, one], result_avals=[i32]), one, "EQ", i32)

    def select(self, p, a, b):
        return self("select", p, a, b)

    def mod4(self, t):
        return self.sub(t, self.mul(self("floor", self.mul(t, 0.25)), 4.0))


def reduce_pio2(o: _Ops, x):
    """(y, k): float64 x = y + k * pi/2 + 2 pi n with |y| <= pi/4 (+2^-16), k an int32 in [0, 24), for every
    finite float32 x >= 0 (a negative term would lose its low bits to `mod4`: 4 - 2^-21 keeps 51 bits)."""
    r = [o.mul(x, c) for c in C]
    r = [o.mod4(t) if i < _MODDED else t for i, t in enumerate(r)]
    total = r[0]
    for t in r[1:_MODDED]:  # the rest (< 2^-17) can only move k where either choice leaves |f| <= 1/2 + 2^-16
        total = o.add(total, t)
    k = o("floor", o.add(total, 0.5))
    f = o.sub(r[0], k)  # exact, as are the next sums while they need <= 53 bits
    for t in r[1:]:
        f = o.add(f, t)
    q = o.ctx.op1("stablehlo.convert", [k], result_avals=[o.f64.update(dtype=np.dtype(np.int32))])
    return o.mul(f, PIO2), q


def _sin_kernel(o: _Ops, y, z):
    w, s = o.mul(z, z), o.mul(z, y)
    head = o.add(y, o.mul(s, o.add(S1, o.mul(z, S2))))
    return o.add(head, o.mul(o.mul(s, w), o.add(S3, o.mul(z, S4))))


def _cos_kernel(o: _Ops, z):
    w = o.mul(z, z)
    head = o.add(o.add(1.0, o.mul(z, C0)), o.mul(w, C1))
    return o.add(head, o.mul(o.mul(w, z), o.add(C2, o.mul(z, C3))))


def _tan_kernel(o: _Ops, y, z):
    w, s = o.mul(z, z), o.mul(z, y)
    r = o.add(T[4], o.mul(z, T[5]))
    t = o.add(T[2], o.mul(z, T[3]))
    u = o.add(T[0], o.mul(z, T[1]))
    return o.add(o.add(y, o.mul(s, u)), o.mul(o.mul(s, w), o.add(t, o.mul(w, r))))


def _finish(o: _Ops, x, v64, aval: ShapedArray, keep_tiny: bool):
    """float64 `v64` rounded to `aval`'s dtype (float16/bfloat16 through float32); `x` itself where |x| < 2^-12
    if `keep_tiny` (sin, tan: keeps -0 and subnormals)."""
    ctx = o.ctx
    out = ctx.op1("stablehlo.convert", [v64], result_avals=[aval.update(dtype=np.dtype(np.float32))])
    if aval.dtype != np.float32:
        out = ctx.op1("stablehlo.convert", [out], result_avals=[aval])
    if not keep_tiny:
        return out
    tiny = L.compare(ctx, ctx.op1("stablehlo.abs", [x], result_avals=[aval]), o.const(_TINY, aval), "LT", aval)
    return ctx.op1("stablehlo.select", [tiny, x, out], result_avals=[aval])


def _sin_cos(o: _Ops, x, aval: ShapedArray, names: str) -> dict:
    """{name: value of aval} for the names ('sin', 'cos', 'tan') of the real float `x`, from one reduction."""
    x64 = o.ctx.op1("stablehlo.convert", [x], result_avals=[o.f64])
    y, q = reduce_pio2(o, o("abs", x64))  # |x|: every term is >= 0, so reducing it mod 4 is exact
    z = o.mul(y, y)
    odd, q2, neg_x = o.bit(q, 1), o.bit(q, 2), o.cmp(x64, 0.0, "LT")
    out = {}
    if "tan" in names:
        t = _tan_kernel(o, y, z)
        t = o.select(odd, o("negate", o("divide", 1.0, t)), t)
        out["tan"] = o.select(neg_x, o("negate", t), t)
    if "sin" in names or "cos" in names:
        s, c = _sin_kernel(o, y, z), _cos_kernel(o, z)
        if "sin" in names:  # sin(|x|) is negative in quadrants 2 and 3, and sin(x) = -sin(|x|) for x < 0
            v = o.select(odd, c, s)
            out["sin"] = o.select(o.bool("xor", q2, neg_x), o("negate", v), v)
        if "cos" in names:  # cos is negative in quadrants 1 and 2
            v = o.select(odd, s, c)
            out["cos"] = o.select(o.bool("xor", q2, odd), o("negate", v), v)
    return {n: _finish(o, x, v, aval, n != "cos") for n, v in out.items()}


def emit(ctx: L.Ctx, name: str, x, aval: ShapedArray):
    """`name` ('sin', 'cos' or 'tan') of the real float `x` of `aval` (float32 or narrower), range-reduced."""
    return _sin_cos(_Ops(ctx, x, aval), x, aval, name)[name]


def emit_complex(ctx: L.Ctx, name: str, z, aval: ShapedArray):
    """sin, cos or tan of complex64 `z = a + bi` with sin a, cos a, tan a range-reduced (IREE's complex ops use its
    float32 sine: sin(-3e-8+0j) gave +6.2e-8, tan(1e10+0.5j) NaN): sin a cosh b + i cos a sinh b,
    cos a cosh b - i sin a sinh b, and tan as Kahan's tanh: (t + i (1 + t^2) cosh b sinh b) / (1 + (1 + t^2) sinh^2 b)
    with t = tan a, and i sign(b) for |b| > 9, where that rounds to 1 (and sinh^2 b would overflow)."""
    part = aval.update(dtype=np.dtype(np.float32), weak_type=False)
    a, b = (ctx.op1(f"stablehlo.{p}", [z], result_avals=[part]) for p in ("real", "imag"))
    o = _Ops(ctx, a, part)
    sc = _sin_cos(o, a, part, "tan" if name == "tan" else "sin cos")
    ch, sh = (ctx.op1(f"chlo.{f}", [b], result_avals=[part]) for f in ("cosh", "sinh"))

    op = functools.partial(o, aval=part)
    if name == "tan":
        t, one = sc["tan"], o.const(1.0, part)
        beta = op("add", one, op("multiply", t, t))
        denom = op("add", one, op("multiply", beta, op("multiply", sh, sh)))
        big = L.compare(ctx, op("abs", b), o.const(9.0, part), "GT", part)
        im = op("select", big, op("sign", b), op("divide", op("multiply", beta, op("multiply", ch, sh)), denom))
        return ctx.op1("stablehlo.complex", [op("divide", t, denom), im], result_avals=[aval])
    s, zero = sc["sin"], L.compare(ctx, sc["sin"], o.const(0.0, part), "EQ", part)

    def s_times(v):  # sin a is exactly zero for a = +-0 only: then so is the product, where v is inf too (C99)
        return op("select", zero, s, op("multiply", s, v))
    if name == "sin":
        re, im = s_times(ch), op("multiply", sc["cos"], sh)
    else:
        re, im = op("multiply", sc["cos"], ch), op("negate", s_times(sh))
    return ctx.op1("stablehlo.complex", [re, im], result_avals=[aval])
