"""`widen-bf16`: on the CPU, bfloat16 elementwise ops, reductions and data movement compute in float32; a value
is rounded to bfloat16 only where it leaves them (a result, a matmul's operand, an op not listed here).

IREE 3.13 already computes the ops of one dispatch in float32 (`(x + 1000) - 1000` gives `x` back), but it
stores a value passed between dispatches (a softmax's row maximum and sum) as bfloat16, and its bfloat16
dispatches were slow: bfloat16 softmax 4096x1024 took 4.5-4.8 ms on 2 cores, against 1.3 ms so widened and 1.2 ms
in float32 (docs/passes.md, "bfloat16").
Each op is wrapped in converts (`float32 -> op -> bfloat16`), then every `convert(convert(y))` that goes
float32 -> bfloat16 -> float32 becomes `y`. The results are nearer the exact ones: a bfloat16 softmax of 256x1024
normal values is the exact one rounded once in all but 4e-6 of its elements (28% differed before; jax.jit 0.10.2,
which rounds after each op, 65%). float16 is left as it is.
"""
from __future__ import annotations

import numpy as np
from iree.compiler import ir

from .base import Pass, PassStats, register
from .irutil import func_blocks, make_constant, producer

ELEMENTWISE = frozenset("stablehlo." + n for n in (
    "abs add and atan2 cbrt ceil clamp compare cosine divide exponential exponential_minus_one floor is_finite log "
    "log_plus_one logistic maximum minimum multiply negate not or power remainder round_nearest_afz round_nearest_even "
    "rsqrt select sign sine sqrt subtract tan tanh xor").split())
MOVES = frozenset("stablehlo." + n for n in "broadcast_in_dim concatenate pad reshape reverse slice transpose".split())


def _narrow(t: ir.Type, bf16: ir.Type) -> bool:
    return isinstance(t, ir.RankedTensorType) and ir.RankedTensorType(t).element_type == bf16


def _wide(t: ir.Type, f32: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(ir.RankedTensorType(t).shape, f32)


def _convert(v: ir.Value, ty: ir.Type) -> ir.Value:
    return ir.Operation.create("stablehlo.convert", operands=[v], results=[ty]).result


class WidenBf16(Pass):
    name = "widen-bf16"
    description = ("CPU: bfloat16 elementwise ops, reductions and data movement compute in float32, rounded once where a "
                   "value leaves them (IREE stores the values passed between dispatches as bfloat16)")

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        if stats.backend != "cpu":
            return
        with module.context:
            bf16, f32 = ir.BF16Type.get(), ir.F32Type.get()
        for block in func_blocks(module):
            wide: dict = {}  # bfloat16 value -> its float32 version

            def widen(v: ir.Value) -> ir.Value:
                """`v` in float32: the value it was rounded from, else one convert per value."""
                p = producer(v)
                if p is not None and p.name == "stablehlo.convert" and ir.RankedTensorType(p.operands[0].type).element_type == f32:
                    return p.operands[0]
                if v not in wide:
                    with _after(v), v.location:
                        splat = _splat(p)
                        wide[v] = _convert(v, _wide(v.type, f32)) if splat is None else \
                            make_constant(np.array(splat, np.float32), _wide(v.type, f32))
                return wide[v]

            for op in list(block.operations):
                op = op.operation
                if not self._widens(op, bf16):
                    continue
                with op.location:
                    self._widen(op, widen, f32, bf16)
                stats.rewrites["op"] += 1
            self._drop_round_trips(block, f32, bf16, stats)

    @staticmethod
    def _widen(op, widen, f32, bf16) -> None:
        """Rewrite `op` in place to compute in float32: operands widened, bfloat16 results rounded after it."""
        for i, v in enumerate(op.operands):
            if _narrow(v.type, bf16):
                op.operands[i] = widen(v)
        for region in op.regions:  # a reduce's body: its arguments and results
            for arg in region.blocks[0].arguments:
                if _narrow(arg.type, bf16):
                    arg.set_type(_wide(arg.type, f32))
            for inner in region.blocks[0].operations:
                for r in inner.results:
                    if _narrow(r.type, bf16):
                        r.set_type(_wide(r.type, f32))
        for r in op.results:
            if _narrow(r.type, bf16):
                narrow_type = r.type
                r.set_type(_wide(r.type, f32))
                with ir.InsertionPoint.after(op), op.location:
                    back = _convert(r, narrow_type)
                r.replace_all_uses_except(back, back.owner.operation)

    @staticmethod
    def _widens(op, bf16) -> bool:
        """Whether `op` is one this pass computes in float32, and touches bfloat16."""
        if op.name == "stablehlo.reduce":
            body = op.regions[0].blocks[0].operations
            if any(inner.name not in ELEMENTWISE and inner.name != "stablehlo.return" for inner in body):
                return False
        elif op.name not in ELEMENTWISE and op.name not in MOVES:
            return False
        return any(_narrow(v.type, bf16) for v in list(op.operands) + list(op.results))

    @staticmethod
    def _drop_round_trips(block: ir.Block, f32, bf16, stats: PassStats) -> None:
        """`convert(convert(y))` float32 -> bfloat16 -> float32 becomes `y`; converts and constants left unused are
        erased."""
        for op in list(block.operations):
            op = op.operation
            if op.name != "stablehlo.convert" or ir.RankedTensorType(op.result.type).element_type != f32:
                continue
            p = producer(op.operands[0])
            if p is not None and p.name == "stablehlo.convert" and \
                    ir.RankedTensorType(p.operands[0].type).element_type == f32 and _narrow(p.result.type, bf16):
                op.result.replace_all_uses_with(p.operands[0])
                stats.rewrites["round-trip"] += 1
        for op in reversed(list(block.operations)):
            op = op.operation
            if op.name in ("stablehlo.convert", "stablehlo.constant") and not list(op.result.uses):
                op.erase()


def _splat(op) -> float | None:
    """The one value of a splat `stablehlo.constant` (None for another op)."""
    if op is None or op.name != "stablehlo.constant":
        return None
    attr = op.attributes["value"]
    if not isinstance(attr, ir.DenseElementsAttr) or not attr.is_splat:
        return None
    return ir.FloatAttr(attr.get_splat_value()).value


def _after(v: ir.Value) -> ir.InsertionPoint:
    """An insertion point right after `v` is defined (a block argument: the block's start)."""
    p = producer(v)
    if p is None:
        block = v.owner
        ops = list(block.operations)
        return ir.InsertionPoint(ops[0]) if ops else ir.InsertionPoint(block)
    return ir.InsertionPoint.after(p.operation)


WIDEN_BF16 = register(WidenBf16())
