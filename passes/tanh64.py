"""Float64 tanh as arithmetic IREE vectorizes: the builder of the CPU target's `mathlib-cpu` entry (passes/mathlib.py,
`CPU_EXPANSIONS`), which replaces IREE's call of libm's scalar `tanh` per element.

IREE 3.13 calls libm's scalar `tanh` for each float64 element: 524288 of them took 7.3 ms on one core, XLA 0.39
(docs/passes.md, "Float64 tanh"). Here, with `a = |x|`:
- `a < 0.4`: the Taylor series of tanh, odd, to x**31 (terms from the Bernoulli numbers, exact fractions rounded
  once; the first term left out is below 2**-60 of the result), evaluated on `x` itself so that -0.0 stays -0.0;
- otherwise `1 - 2 / (exp(2a) + 1)` (`exp` as passes/exp64.py computes it; `a` clamped to 20, where tanh rounds to 1),
  with the sign of `x`.
NaN stays NaN. Accuracy: within 3 ulps of NumPy's (libm's) value (tested on 10^5 values; XLA's own float64 tanh
is within 6).
"""
from __future__ import annotations

from fractions import Fraction
from math import comb, factorial

from iree.compiler import ir

from .exp64 import _exp
from .irutil import Builder

SMALL = 0.4  # below: the series (its terms shrink by (0.4 / (pi/2))**2 ~ 1/15 each); above: through exp
TERMS = 16  # x, x**3, ..., x**31
LARGE = 20.0  # tanh(20) is 1 - 8.5e-18: 1.0 in float64


def _bernoulli(n: int) -> list[Fraction]:
    """B_0 .. B_n (B_1 = -1/2)."""
    b = [Fraction(1)]
    for m in range(1, n + 1):
        b.append(-sum(comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return b


def _series() -> list[float]:
    """Coefficients c_1, c_2, ... of tanh(x) = sum c_n x**(2n - 1)."""
    b = _bernoulli(2 * TERMS)
    return [float(Fraction(4 ** n * (4 ** n - 1)) * b[2 * n] / factorial(2 * n)) for n in range(1, TERMS + 1)]


COEFFS = _series()


def _tanh(b: Builder, x: ir.Value) -> ir.Value:
    c, op = b.c, b.op
    a = op("abs", x)
    # small: x * (c1 + x2 (c2 + x2 (c3 + ...)))
    x2 = op("multiply", x, x)
    p = c(COEFFS[-1])
    for k in COEFFS[-2::-1]:
        p = op("add", op("multiply", p, x2), c(k))
    small = op("multiply", x, p)
    # large: 1 - 2 / (exp(2a) + 1), with x's sign
    e = _exp(b, op("multiply", op("minimum", a, c(LARGE)), c(2.0)))
    mag = op("subtract", c(1.0), op("divide", c(2.0), op("add", e, c(1.0))))
    large = op("select", b.compare(x, c(0.0), "LT"), op("negate", mag), mag)
    y = op("select", b.compare(a, c(SMALL), "LT"), small, large)
    return op("select", b.compare(x, x, "NE"), x, y)

