"""`upcast-f16-dots`: on the CPU, a float16 matmul runs as a float32 one on operands converted beforehand.

IREE 3.13 computes a float16 `dot_general` in float32 (as XLA does) but converts the operands inside the matmul
kernel, one `vcvtph2ps` per 16 loaded values, and that conversion bounds it: a 1024^3 float16 matmul took 31 ms
on one core, a float32 one 17. Converted beforehand (each operand once) and kept apart by an
`optimization_barrier` (without it IREE fuses the conversion back into the kernel: 40 ms), the matmul is a
float32 one, result rounded to float16 once at the end: 16 ms (docs/passes.md, "Float16 matmuls"). The numbers
are the same: both accumulate in float32 and round the result once.
"""
from __future__ import annotations

import math

from iree.compiler import ir

from .base import Pass, PassStats, register
from .irutil import func_blocks, tensor_type

MIN_MACS = 1 << 18  # smaller matmuls keep one dispatch (two conversions and a barrier cost more than they save)


def _macs(op) -> int:
    """Multiply-adds of a dot_general: the result's elements times the contracted extent."""
    text = str(op.attributes["dot_dimension_numbers"])
    at = text.find("lhs_contracting_dimensions = [")
    dims = [] if at < 0 else [int(d) for d in text[at + 30:text.index("]", at)].split(",") if d.strip()]
    lhs = tensor_type(op.operands[0]).shape
    return math.prod(tensor_type(op.result).shape) * math.prod(lhs[d] for d in dims)


class UpcastF16Dots(Pass):
    name = "upcast-f16-dots"
    description = "CPU: a float16 matmul runs in float32 on operands converted beforehand (IREE converts in its kernel)"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        if stats.backend != "cpu":
            return
        with module.context:
            f16, f32 = ir.F16Type.get(), ir.F32Type.get()
        for block in func_blocks(module):
            for op in list(block.operations):
                op = op.operation
                if op.name != "stablehlo.dot_general" or not all(
                        isinstance(v.type, ir.RankedTensorType) and tensor_type(v).has_static_shape
                        and tensor_type(v).element_type == f16 for v in op.operands):
                    continue
                out = tensor_type(op.result)
                if out.element_type not in (f16, f32) or _macs(op) < MIN_MACS:
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
                    if out.element_type == f16:
                        res = ir.Operation.create("stablehlo.convert", operands=[res], results=[out]).result
                op.result.replace_all_uses_with(res)
                op.erase()
                stats.rewrites["f16-dot"] += 1


UPCAST_F16_DOTS = register(UpcastF16Dots())
