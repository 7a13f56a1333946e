"""`upcast-half-dots`: on the CPU, a float16 or bfloat16 matmul runs as a float32 one on operands converted
beforehand.

IREE 3.13 computes a float16 `dot_general` in float32 (as XLA does) but converts the operands inside the matmul
kernel, one `vcvtph2ps` per 16 loaded values, and that conversion bounds it (about 2x a float32 matmul). Converted
beforehand (each operand once) and kept apart by an `optimization_barrier` (without it IREE fuses the conversion
back into the kernel), the matmul is a float32 one, its result rounded to float16 once at the end
(docs/passes.md, "Float16 matmuls"). The numbers are the same: both accumulate in float32 and round the result
once. bfloat16 likewise: IREE 3.13 has no AMX or AVX512-BF16 matmul kernel here, and its bfloat16 matmul trailed
the float32 one it becomes (through BLAS: `legalize.blas_dots`).
"""
from __future__ import annotations

import math

from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from .irutil import func_blocks, tensor_type

MIN_MACS = 1 << 18  # smaller matmuls keep one dispatch (two conversions and a barrier cost more than they save)


def _macs(op) -> int:
    """Multiply-adds of a dot_general: the result's elements times the contracted extent."""
    text = str(op.attributes["dot_dimension_numbers"])
    at = text.find("lhs_contracting_dimensions = [")
    dims = [] if at < 0 else [int(d) for d in text[at + 30:text.index("]", at)].split(",") if d.strip()]
    lhs = tensor_type(op.operands[0]).shape
    return math.prod(tensor_type(op.result).shape) * math.prod(lhs[d] for d in dims)


class UpcastHalfDots(Pass):
    name = "upcast-half-dots"
    kind, workaround = "workaround", Workaround("3.13", "tests/test_passes_upcast.py::test_half_matmuls_run_in_float32")
    description = ("CPU: a float16 or bfloat16 matmul runs in float32 on operands converted beforehand (IREE converts "
                   "in its kernel)")

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        with module.context:
            halves, f32 = (ir.F16Type.get(), ir.BF16Type.get()), ir.F32Type.get()
        for block in func_blocks(module):
            for op in list(block.operations):
                op = op.operation
                if op.name != "stablehlo.dot_general" or not all(
                        isinstance(v.type, ir.RankedTensorType) and tensor_type(v).has_static_shape
                        for v in op.operands):
                    continue
                half = tensor_type(op.operands[0]).element_type
                out = tensor_type(op.result)
                if half not in halves or tensor_type(op.operands[1]).element_type != half or \
                        out.element_type not in (half, f32) or _macs(op) < MIN_MACS:
                    continue
                with ir.InsertionPoint(op), op.location:
                    wide = [ir.Operation.create("stablehlo.convert", operands=[v],
                                                results=[ir.RankedTensorType.get(tensor_type(v).shape, f32)]).result
                            for v in op.operands]
                    bar = ir.Operation.create("stablehlo.optimization_barrier", operands=wide,
                                              results=[w.type for w in wide])
                    dot = ir.Operation.create("stablehlo.dot_general", operands=list(bar.results),
                                              results=[ir.RankedTensorType.get(out.shape, f32)],
                                              attributes={n: op.attributes[n] for n in ("dot_dimension_numbers", "precision_config")
                                                          if n in op.attributes})
                    res = dot.result
                    if out.element_type == half:
                        res = ir.Operation.create("stablehlo.convert", operands=[res], results=[out]).result
                op.result.replace_all_uses_with(res)
                op.erase()
                stats.rewrites["half-dot"] += 1


UPCAST_HALF_DOTS = register(UpcastHalfDots())
