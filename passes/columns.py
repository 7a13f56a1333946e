"""`column-products`: on the CPU, a sum of products down columns, `sum(a * b, 0)`, sums `a * b + 0.0` instead.

IREE 3.13 takes a sum of a product over the leading dimensions (a bias gradient `sum(g * tanh'(h), 0)`, a
weighted column sum) for a matrix-vector product ("matvec_like") and lowers it one scalar at a time, several
times slower than the same sum along rows. With `+ 0.0` between the product and the sum it is an ordinary
reduction, vectorized along the rows (docs/passes.md, "Column sums of products", has the measurements). Exact:
the sum starts at +0.0, and `p + 0.0` differs from `p` only for p = -0.0, which adds nothing to a sum that is
never -0.0 (x - x rounds to +0.0). Float32 only (float64 was slower with it; float16 and bfloat16 unchanged), and
sums whose last dimension is reduced are left alone (slightly slower with the addition). Sums in loop bodies and
branches too: svd's Jacobi step `sum(a * a[:, partner], 0)` as a matvec took half of the module's LLVM code and
~0.3 s of its compile.
"""
from __future__ import annotations

import numpy as np
from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from .irutil import is_op, make_constant, nested_ops, reduced_dims, splat_value, sums_an_add, tensor_type


class ColumnProducts(Pass):
    name = "column-products"
    kind, workaround = "workaround", Workaround("3.13", "tests/test_passes_columns.py::test_column_products_sum_plus_zero_and_match_numpy")
    description = "CPU: a sum of products down columns sums a * b + 0.0 (IREE lowers sum(a * b, 0) as scalar code)"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for op in _sums(module):
            t = tensor_type(op.operands[0])
            if not isinstance(t.element_type, ir.F32Type):  # (float64 measured slower with it)
                continue
            init = splat_value(op.operands[1])
            if (t.rank < 2 or t.rank - 1 in reduced_dims(op) or init != 0.0 or np.signbit(init)
                    or is_op(op.operands[0], "multiply") is None):
                continue
            with ir.InsertionPoint(op), op.location:
                zero = make_constant(np.array(0.0), t)
                plus = ir.Operation.create("stablehlo.add", results=[t], operands=[op.operands[0], zero])
            op.operands[0] = plus.result
            stats.rewrites["column-product"] += 1


def _sums(module: ir.Module) -> list:
    """The module's adding `stablehlo.reduce` ops (`sums_an_add`), in loop bodies and branches too."""
    return [op for fn in module.body.operations for op in nested_ops(fn.operation, ("stablehlo.reduce",))
            if sums_an_add(op)]


COLUMN_PRODUCTS = register(ColumnProducts())
