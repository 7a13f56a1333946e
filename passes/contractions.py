"""`merge-contracted-dims`: a `dot_general` contracting a run of consecutive axes on each side (a weight gradient
of a sequence model, `h (8, 32, 512)` with `g (8, 32, 10)` over axes 0 and 1) contracts one axis of reshaped
operands instead (`h (256, 512)` with `g (256, 10)` over axis 0).

IREE 3.13 collapses such axes itself, but with data tiling it packs the operand through a transpose fused into
the dispatch that makes it: on an AVX2 CPU (AMD EPYC, znver3) gelu's dispatch then wrote `h` and its packed
transpose as 16 KiB vectors ("large vector sizes"), the compile failed and the whole step compiled again without
data tiling (twice the compile, slower products). Reshaped first it is the two-dimensional product, packed as
such. A reshape merging consecutive axes in order is a view; each side's run pairs the same elements in the
same order, so the products and their sum are the same.
"""
from __future__ import annotations

import math

from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from .irutil import func_blocks, tensor_type
from .outer import _dims


def _run(dims: list[int]) -> bool:
    return len(dims) >= 2 and dims == list(range(dims[0], dims[0] + len(dims)))


def _merged(v: ir.Value, dims: list[int]) -> ir.Value:
    t = tensor_type(v)
    shape = list(t.shape)
    shape[dims[0]:dims[-1] + 1] = [math.prod(shape[dims[0]:dims[-1] + 1])]
    return ir.Operation.create("stablehlo.reshape", results=[ir.RankedTensorType.get(shape, t.element_type)],
                               operands=[v]).result


class MergeContractedDims(Pass):
    name = "merge-contracted-dims"
    kind, workaround = "workaround", Workaround(
        "3.13", "tests/test_passes_activations.py::test_gelu_step_of_a_batch_of_sequences_compiles_data_tiled")
    description = "a dot_general contracting consecutive axes on each side contracts one axis of reshaped operands"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in func_blocks(module):
            for op in [o.operation for o in block.operations if o.name == "stablehlo.dot_general"]:
                lc, rc = _dims(op, "lhs_contracting_dimensions"), _dims(op, "rhs_contracting_dimensions")
                if _dims(op, "lhs_batching_dimensions") or not (_run(lc) and _run(rc)) \
                        or not all(tensor_type(v).has_static_shape for v in op.operands):
                    continue
                with ir.InsertionPoint(op), op.location:
                    op.operands[0], op.operands[1] = _merged(op.operands[0], lc), _merged(op.operands[1], rc)
                op.attributes["dot_dimension_numbers"] = ir.Attribute.parse(
                    f"#stablehlo.dot<lhs_contracting_dimensions = [{lc[0]}], rhs_contracting_dimensions = [{rc[0]}]>")
                stats.rewrites["merged"] += 1


MERGE_CONTRACTED_DIMS = register(MergeContractedDims())
