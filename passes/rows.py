"""`weight-left`: a float32 `A @ B.T` (`A @ transpose(B)` too) of few rows by a large `B` (a dense layer's `dz @ W.T`) computed as
`(B @ A.T).T`, the small transposes kept out of the product's dispatch by barriers.

IREE 3.13 tiles an unpacked `A @ B.T` (both operands read along the reduction) with 16-long vectors along the
reduction, transposing blocks of `B` in registers: 32x4096x4096 took 21 ms on one core, 128 rows 88, where `A @ B`
with the `skinny` tiles takes 7 / 23. Written `B @ A.T`, the weight is the left operand read row by row (its
rows are the result's columns), `A.T` a small `K x M` right operand, and IREE's plain matmul tiles vectorize along
`M`: 8 rows 6.5 -> 3.7 ms, 32 21 -> 5.8, 128 88 -> 24-31 (one core; docs/passes.md, "Float32 `A @ B.T` of few
rows"). The barriers keep IREE from folding either transpose back into the product (it did: 26-52 ms). Only for
`ROWS_MIN` to `ROWS_MAX` rows (2 and 4 rows ran as fast either way, 1 row is a matrix-vector product read in
order already) by a `B` of `BIG` elements or more (a module with such a product is not packed below `ROWS_MAX` rows, `packing.PACK_BIG`).
"""
from __future__ import annotations

import math

from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from .packing import PACK_BIG
from .irutil import func_blocks, producer, tensor_type

ROWS_MIN, ROWS_MAX = 8, 256  # the rows of `A` (`SKINNY_ROWS` of `stagec.tuning`: what stays unpacked)
BIG = PACK_BIG  # the least elements of `B` (beyond the caches: such a module is not packed)
_A_AT_BT = "#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>"
_A_AT_B = "#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>"


def a_at_bt(op) -> tuple[ir.Value, ir.Value] | None:
    """(A, B) where `op` is a rank-2 `A @ B.T`: a `dot_general` contracting both operands' last dimension, or `A @ C`
    with `C` a transpose of `B`; else None."""
    if op.name != "stablehlo.dot_general":
        return None
    a, b = op.operands
    dims = str(op.attributes["dot_dimension_numbers"])
    if dims == _A_AT_B and (t := producer(b)) is not None and t.operation.name == "stablehlo.transpose" \
            and list(ir.DenseI64ArrayAttr(t.operation.attributes["permutation"])) == [1, 0]:
        return a, t.operation.operands[0]
    return (a, b) if dims == _A_AT_BT else None


def _operands(op) -> tuple[ir.Value, ir.Value] | None:
    """(A, B) where `op` is a static float32 rank-2 `A @ B.T` (`a_at_bt`) of `ROWS_MIN`-`ROWS_MAX` rows by a `B` of
    `BIG`+ elements, else None."""
    if (ab := a_at_bt(op)) is None:
        return None
    a, b = ab
    ta, tb, out = tensor_type(a), tensor_type(b), tensor_type(op.results[0])
    ok = (all(t.has_static_shape and t.rank == 2 and str(t.element_type) == "f32" for t in (ta, tb, out))
          and ROWS_MIN <= ta.shape[0] <= ROWS_MAX and math.prod(tb.shape) >= BIG)
    return (a, b) if ok else None


def _transpose(v: ir.Value) -> ir.Value:
    t = tensor_type(v)
    ty = ir.RankedTensorType.get([t.shape[1], t.shape[0]], t.element_type)
    return ir.Operation.create("stablehlo.transpose", results=[ty], operands=[v],
                               attributes={"permutation": ir.DenseI64ArrayAttr.get([1, 0])}).result


def _barrier(v: ir.Value) -> ir.Value:
    return ir.Operation.create("stablehlo.optimization_barrier", results=[v.type], operands=[v]).result


class WeightLeft(Pass):
    name = "weight-left"
    kind, workaround = "workaround", Workaround(
        "3.13", "tests/test_perf_paths.py::test_a_at_b_t_of_few_rows_multiplies_the_weight_from_the_left")
    description = "A @ B.T of few rows by a large B as (B @ A.T).T (IREE's A @ B.T kernel transposes B's blocks)"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in func_blocks(module):
            for op in list(block.operations):
                op = op.operation
                if (ab := _operands(op)) is None:
                    continue
                a, b = ab
                m, n = tensor_type(op.results[0]).shape
                attrs = {"dot_dimension_numbers": ir.Attribute.parse(_A_AT_B)}
                if "precision_config" in op.attributes:
                    attrs["precision_config"] = op.attributes["precision_config"]
                with ir.InsertionPoint(op), op.location:
                    at = _barrier(_transpose(a))
                    prod = ir.Operation.create(
                        "stablehlo.dot_general", operands=[b, at], attributes=attrs,
                        results=[ir.RankedTensorType.get([n, m], tensor_type(op.results[0]).element_type)]).result
                    out = _transpose(_barrier(prod))
                t = producer(op.operands[1])
                op.results[0].replace_all_uses_with(out)
                op.erase()
                if t is not None and t.operation.name == "stablehlo.transpose" and not list(t.operation.results[0].uses):
                    t.operation.erase()  # (the transpose of `B` that `A @ transpose(B)` read)
                stats.rewrites["weight-left"] += 1


WEIGHT_LEFT = register(WeightLeft())
