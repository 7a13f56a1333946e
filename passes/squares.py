"""`abs-squares`: on the CPU, a sum of squares `reduce(add, x * x)` reduces `abs(x * x)` instead.

IREE 3.13's CPU codegen takes a sum whose input is the square of a value it reads from memory (`sum(x**2)`,
`norm(x)`, `mean(square(x), 1)`, a loss whose difference the backward pass reads too) for a dot product of `x`
with itself and unrolls it into scalar code, about 4x slower than `sum(x, 1)`. An `abs` between the square and
the sum keeps it an ordinary vectorized reduction (docs/passes.md, "Sums of squares"). Exact: a square is never
negative, and `abs` keeps a NaN a NaN (only its sign bit, which no result shows, may change). Left out for row
sums of a value computed from another reduction's result (layernorm's and `var(x, 1)`'s `x - mean`): that is no
load, the tuning spec's `rows` part tiles those reductions, and the `abs` cost a few percent there.
"""
from __future__ import annotations

from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from .irutil import is_float, is_op, producer, reduced_dims, sums, tensor_type


def _reduces_rows(op) -> bool:
    """Whether a reduce sums over its input's last dimensions, not all of them."""
    rank, dims = tensor_type(op.operands[0]).rank, reduced_dims(op)
    return len(dims) < rank and dims == list(range(rank - len(dims), rank))


def _from_a_reduction(v: ir.Value, depth: int = 8) -> bool:
    """Whether `v` is computed, through at most `depth` ops, from a `stablehlo.reduce` result."""
    p = producer(v)
    if p is None or depth == 0 or len(p.regions) and p.name != "stablehlo.reduce":
        return False
    return p.name == "stablehlo.reduce" or any(_from_a_reduction(o, depth - 1) for o in p.operands)


class AbsSquares(Pass):
    name = "abs-squares"
    kind, workaround = "workaround", Workaround("3.13", "tests/test_passes_squares.py::test_abs_squares_puts_abs_between_a_square_and_its_sum")
    description = "CPU: a sum of squares reduces abs(x * x) (IREE unrolls sum(x * x) into scalar code)"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for op in sums(module):
            if not is_float(op.operands[0]):
                continue
            sq = is_op(op.operands[0], "multiply")
            if sq is None or sq.operands[0] != sq.operands[1] or (_reduces_rows(op) and _from_a_reduction(sq.operands[0])):
                continue
            with ir.InsertionPoint(op), op.location:
                absolute = ir.Operation.create("stablehlo.abs", results=[sq.result.type], operands=[sq.result])
            op.operands[0] = absolute.result
            stats.rewrites["abs-square"] += 1


ABS_SQUARES = register(AbsSquares())
