"""`flip-transposed-dots`: on the CPU, a float32 `A @ B.T` of 8-256 rows by a large `B` (a dense layer's
backward `dz @ W.T`, or a `dot` of a `transpose`, which IREE folds into the same kernel) is computed as
`(B @ A.T).T`, the transposes of the small `A` and of the result each a dispatch of their own.

Such a product is in a module IREE 3.13 compiles without data tiling (`driver.Facts.packs`: packing `W` on every
call costs more than the products gain), and its unpacked kernel for a right operand contracted along its rows
is 2.5-4x slower than for `B @ A.T`, where `B`'s rows are contracted in memory order (`iree-benchmark-module
--device=local-sync`, 4096x4096 `B`, CPU ms: 8 rows 6.6 -> 3.9, 32 22.5 -> 6.5, 128 87.5 -> 24.6, 256 171 ->
51, the transposes included; 2 rows 3.75 -> 3.79, and 256 rows packed, 102 -> 103: left alone). The barriers keep
IREE from folding the transposes back into the product (without them: 90 and 132 ms at 128 rows). Each element
is the same dot product of a row of `A` and a row of `B`, summed in the kernel's order, as any matmul's.
"""
from __future__ import annotations

import math

from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from .irutil import func_blocks, is_op, tensor_type
from .outer import _dims

MIN_ROWS, MAX_ROWS = 8, 256  # rows of `A` (`dz`: the batch) for which the flipped product was faster
MIN_ELEMENTS = 1 << 22  # elements of `B` from which it is: a module with such a weight is compiled unpacked
# (`driver.PACK_BIG`); a smaller one is packed, and packing reads either layout at the same speed


def _flippable(op) -> ir.Value | None:
    """`B` where `op` is a static float32 `A @ B.T` (rank 2, no batch; `B.T` a contraction of `B`'s second
    dimension or a `transpose` of `B`) of `MIN_ROWS`-`MAX_ROWS` rows and a `B` of `MIN_ELEMENTS` or more, else
    None."""
    if op.name != "stablehlo.dot_general" or "algorithm" in op.attributes or len(op.results) != 1:
        return None
    a, b = (tensor_type(v) for v in op.operands)
    if not (a.rank == b.rank == 2 and a.has_static_shape and b.has_static_shape
            and isinstance(a.element_type, ir.F32Type) and isinstance(b.element_type, ir.F32Type)
            and isinstance(tensor_type(op.results[0]).element_type, ir.F32Type)):
        return None
    if _dims(op, "lhs_batching_dimensions") or _dims(op, "rhs_batching_dimensions") or \
            _dims(op, "lhs_contracting_dimensions") != [1]:
        return None
    rhs = op.operands[1]
    if _dims(op, "rhs_contracting_dimensions") == [1]:
        b_value = rhs
    elif _dims(op, "rhs_contracting_dimensions") == [0] and (t := is_op(rhs, "transpose")) is not None:
        b_value = t.operands[0]  # (a rank-2 transpose swaps the two dimensions)
    else:
        return None
    ok = MIN_ROWS <= a.shape[0] <= MAX_ROWS and math.prod(b.shape) >= MIN_ELEMENTS
    return b_value if ok else None


def _transpose(v: ir.Value) -> ir.Value:
    t = tensor_type(v)
    out = ir.RankedTensorType.get(list(reversed(t.shape)), t.element_type)
    return ir.Operation.create("stablehlo.transpose", results=[out], operands=[v],
                               attributes={"permutation": ir.DenseI64ArrayAttr.get([1, 0])}).result


def _barrier(v: ir.Value) -> ir.Value:
    return ir.Operation.create("stablehlo.optimization_barrier", results=[v.type], operands=[v]).result


class FlipTransposedDots(Pass):
    name = "flip-transposed-dots"
    kind, workaround = "workaround", Workaround("3.13", "tests/test_perf_paths.py::"
                                                       "test_unpacked_dz_times_w_transposed_is_flipped")
    description = "CPU: float32 A @ B.T of 8-256 rows by a large B computed as (B @ A.T).T (IREE's unpacked kernel)"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in func_blocks(module):
            for op, b in [(o.operation, b) for o in block.operations if (b := _flippable(o.operation)) is not None]:
                a, bt = op.operands
                rows, cols = tensor_type(a).shape[0], tensor_type(b).shape[0]
                with ir.InsertionPoint(op), op.location:
                    at = _barrier(_transpose(a))
                    attrs = {"dot_dimension_numbers": ir.Attribute.parse(
                        "#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>")}
                    if "precision_config" in op.attributes:  # (one entry per operand: swapped with them)
                        attrs["precision_config"] = ir.ArrayAttr.get(list(op.attributes["precision_config"])[::-1])
                    flipped = ir.Operation.create("stablehlo.dot_general", operands=[b, at], attributes=attrs,
                                                  results=[ir.RankedTensorType.get(
                                                      [cols, rows], tensor_type(op.results[0]).element_type)])
                    out = _transpose(_barrier(flipped.result))
                op.results[0].replace_all_uses_with(out)
                op.erase()
                if bt != b and not any(True for _ in bt.uses):  # (a `transpose` of `B` nothing else reads)
                    bt.owner.erase()
                stats.rewrites["flip"] += 1


FLIP_TRANSPOSED_DOTS = register(FlipTransposedDots())
