"""Float64 exp, logistic and expm1 as arithmetic IREE vectorizes: the builders of the CPU target's `mathlib-cpu`
entries (passes/mathlib.py, `CPU_EXPANSIONS`), which replace IREE's call of libm's scalar `exp` per element
(float64 sigmoid over 524288 values: 3.49 ms on one core, XLA 0.76; expm1 3.11, XLA 0.87). `logistic` is
`1 / (1 + exp(-x))`, `exponential_minus_one` below 0.5 in magnitude its Taylor series to degree 17, computed on `x` so
that -0.0 stays -0.0, above `exp(x) - 1`.

IREE 3.13 has no vector float64 `exp` for llvm-cpu: each element is a scalar libm call (a float64 SELU over 1M
values took 3.5 ms on 2 cores, XLA 0.9; docs/passes.md, "Float64 exp"). Here: `k = round(x / ln 2)`,
`r = x - k ln 2` in two parts (Cody and Waite: `k * LN2_HI` is exact), `exp(r)` for `|r| <= ln(2)/2` by its
Taylor series to degree 13 (truncation below 1e-17 relative), times `2**k` built from the exponent bits in two
halves, so that results past the normal range round to subnormals, zero or infinity as the product does.
NaN stays NaN. Accuracy: within 1 ulp of NumPy's (libm's) value wherever the result is a normal number. A result
below the normal range is 0, as every other float64 product of IREE's CPU code (and XLA's: JAX's `exp(-740.)` is
0 too) flushes subnormals; only libm's scalar `exp` returned them.
"""
from __future__ import annotations

import math

from iree.compiler import ir

from .irutil import Builder

# ln 2 in two parts (fdlibm's): LN2_HI has 32 significant bits, so k * LN2_HI is exact for |k| < 2**20, and LN2_LO
# is the rest to double precision. (math.log(2) - LN2_HI would carry the rounding error of math.log(2): 213 ulps
# at |x| ~ 709.)
LN2_HI = float.fromhex("0x1.62e42fee00000p-1")
LN2_LO = float.fromhex("0x1.a39ef35793c76p-33")
DEGREE = 13
LIMIT = 746.0  # |x| past this gives 0 or infinity anyway; clamped so that k stays a small integer


EXPM1_SMALL, EXPM1_DEGREE = 0.5, 17  # (the first term left out, 0.5**18 / 18!, is 2**-70 of the result)


def _exp(b: Builder, x: ir.Value) -> ir.Value:
    c, op = b.c, b.op
    i64 = ir.RankedTensorType.get(b.t.shape, ir.IntegerType.get_signless(64))
    xc = op("clamp", c(-LIMIT), x, c(LIMIT))
    k = op("round_nearest_even", op("multiply", xc, c(1 / math.log(2))))
    r = op("subtract", op("subtract", xc, op("multiply", k, c(LN2_HI))), op("multiply", k, c(LN2_LO)))
    p = c(1 / math.factorial(DEGREE))
    for n in range(DEGREE - 1, -1, -1):  # Horner: 1 + r (1 + r (1/2 + r (1/6 + ...)))
        p = op("add", op("multiply", p, r), c(1 / math.factorial(n)))
    ki = op("convert", k, ty=i64)
    k1 = op("shift_right_arithmetic", ki, c(1, i64), ty=i64)  # 2**k = 2**k1 * 2**(k - k1), each a normal number
    k2 = op("subtract", ki, k1, ty=i64)

    def two_to(n):
        bits = op("shift_left", op("add", n, c(1023, i64), ty=i64), c(52, i64), ty=i64)
        return op("bitcast_convert", bits)
    y = op("multiply", op("multiply", p, two_to(k1)), two_to(k2))
    return op("select", b.compare(x, x, "NE"), x, y)


def _logistic(b: Builder, x: ir.Value) -> ir.Value:
    """1 / (1 + exp(-x)): within 2 ulps (exp's 1, the division's 1/2); 0 where exp(-x) overflows (x < -709.78,
    where the value is subnormal: flushed, as all float64 results here)."""
    one = b.c(1.0)
    return b.op("divide", one, b.op("add", one, _exp(b, b.op("negate", x))))


def _expm1(b: Builder, x: ir.Value) -> ir.Value:
    c, op = b.c, b.op
    p = c(1 / math.factorial(EXPM1_DEGREE))
    for n in range(EXPM1_DEGREE - 1, 0, -1):  # x (1 + x (1/2 + x (1/6 + ...)))
        p = op("add", op("multiply", p, x), c(1 / math.factorial(n)))
    small = op("multiply", x, p)
    large = op("subtract", _exp(b, x), c(1.0))
    return op("select", b.compare(op("abs", x), c(EXPM1_SMALL), "LT"), small, large)  # (NaN: exp(NaN) - 1 is NaN)
