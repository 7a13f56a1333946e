"""`split-sums`: on the CPU, a sum over all of an array of 512 elements or more sums its rows first, then the row sums.

IREE 3.13 (without its split-reduction option) sums a whole array in one accumulator, one element after the other,
on one thread: `sum(ones(2**24 + 1000))` in float32 was 16777216 (JAX, NumPy: 16778216), `sum(x * x)` over
1000x1023 was 5e-4 off, and a float32 `mean` of integers 3e-5. Summing rows of 256-4096 elements, then the row
sums, bounds each sequential sum, and the rows run in parallel, vectorized: faster and about 100x more accurate
(docs/passes.md, "Whole-array sums"). IREE's own `--iree-dispatch-creation-enable-split-reduction` was as accurate
but slower. The result is the same sum in another order (as XLA's and NumPy's pairwise sums are).
Smaller arrays too (from 512 elements, the least with rows of 256 to sum): IREE fused a whole-array sum of some
thousand elements into a dispatch whose other results it distributes over workgroups, which its CPU codegen cannot
compile ("restricted to workgroup distributed contexts": a VAE's KL term beside its sample, 500x10 to 1000x16); the
row sums distribute. That compile failed and took the `no-aggressive-fusion` retry (a second compile).
"""
from __future__ import annotations

import math

from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from .irutil import reduced_dims, splat_value, sums, tensor_type

MIN_ELEMENTS = 1 << 14  # a sum beside a column reduction of this size or more is summed down its columns first
ROW = (256, 4096)  # the row lengths a flat array is cut into (the largest divisor of its size in this range)


def _row_length(shape: list[int]) -> int | None:
    """The length of the rows the sum of an array of `shape` takes first (its last dimension when that is in
    `ROW`'s range, else a divisor of its size there), or None."""
    if len(shape) >= 2 and ROW[0] <= shape[-1] <= ROW[1]:
        return shape[-1]
    n = math.prod(shape)
    return next((b for b in range(ROW[1], ROW[0] - 1, -1) if n % b == 0 and n // b > 1), None)


def _sum(x: ir.Value, dims: list[int], init: ir.Value) -> ir.Value:
    """`stablehlo.reduce` of `x` over `dims` with an add body."""
    t = tensor_type(x)
    out = ir.RankedTensorType.get([d for i, d in enumerate(t.shape) if i not in dims], t.element_type)
    op = ir.Operation.create("stablehlo.reduce", results=[out], operands=[x, init],
                             attributes={"dimensions": ir.DenseI64ArrayAttr.get(dims)}, regions=1)
    scalar = ir.RankedTensorType.get([], t.element_type)
    block = op.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        add = ir.Operation.create("stablehlo.add", results=[scalar], operands=list(block.arguments))
        ir.Operation.create("stablehlo.return", results=[], operands=[add.result])
    return op.result


def _sibling_columns(op, shape: list[int]) -> int:
    """How many leading dimensions another reduction in `op`'s block reduces, of an array of `shape` (0: none).
    A mean squared error beside its gradient's bias sum, say: summed down the columns first, the whole sum is a
    reduction like the other, and `fuse` computes both in one pass over their common producers."""
    for other in op.block.operations:
        if other.name != "stablehlo.reduce" or other.operation == op or len(other.operands) != 2:
            continue
        t = tensor_type(other.operands[0])
        dims = reduced_dims(other)
        k = len(dims)
        # (each sequential sum, down a column and then of the column sums, at most MIN_ELEMENTS long)
        if t.has_static_shape and list(t.shape) == shape and 0 < k < len(shape) and dims == list(range(k)) \
                and max(math.prod(shape[:k]), math.prod(shape[k:])) <= MIN_ELEMENTS:
            return k
    return 0


class SplitSums(Pass):
    name = "split-sums"
    kind, workaround = "workaround", Workaround("3.13", "tests/test_passes_split_sums.py::test_float32_sum_past_two_to_the_24_is_exact")
    description = "CPU: a sum over all of an array sums rows of 256-4096 first (IREE sums it in one accumulator)"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for op in sums(module):
            x, init = op.operands[0], op.operands[1]
            t = tensor_type(x)
            dims = reduced_dims(op)
            if not t.has_static_shape or dims != list(range(t.rank)) or splat_value(init) != 0:
                continue
            lead = _sibling_columns(op, list(t.shape)) if math.prod(t.shape) >= MIN_ELEMENTS else 0
            if lead:  # down the columns first, as a reduction beside it does: `fuse` can then do both in one pass
                with ir.InsertionPoint(op), op.location:
                    total = _sum(_sum(x, list(range(lead)), init), list(range(t.rank - lead)), init)
                op.result.replace_all_uses_with(total)
                op.erase()
                stats.rewrites["split-sum"] += 1
                continue
            row = _row_length(list(t.shape))
            if row is None:
                continue
            with ir.InsertionPoint(op), op.location:
                if not (t.rank >= 2 and t.shape[-1] == row):
                    flat = ir.RankedTensorType.get([math.prod(t.shape) // row, row], t.element_type)
                    x = ir.Operation.create("stablehlo.reshape", results=[flat], operands=[x]).result
                rank = tensor_type(x).rank
                rows = _sum(x, [rank - 1], init)
                total = _sum(rows, list(range(rank - 1)), init)
            op.result.replace_all_uses_with(total)
            op.erase()
            stats.rewrites["split-sum"] += 1


SPLIT_SUMS = register(SplitSums())
