"""`widen-half`: on the CPU, bfloat16 elementwise ops, reductions and data movement compute in float32; a value is
rounded to bfloat16 only where it leaves them (a result, a matmul's operand, an op not listed here). float16 too,
in a function that broadcasts a reduction's result back (a softmax, a layernorm).

IREE 3.13 already computes the ops of one dispatch in float32 (`(x + 1000) - 1000` gives `x` back), but it
stores a value passed between dispatches (a softmax's row maximum and sum) as bfloat16, and its bfloat16
dispatches were about 3x slower than float32 ones (docs/passes.md, "bfloat16 and float16 arithmetic"). float16
likewise, but this CPU computes float16 natively (AVX-512 FP16), and widened elementwise float16 code was slower:
float16 is widened only where a reduction's result is broadcast back. Each op is wrapped in converts (`float32 -> op -> narrow`), then a convert back to float32 of a
value this pass rounded becomes the float32 value; a convert the program makes itself (`astype`) still rounds.
The results are nearer the exact ones: a bfloat16 softmax of 256x1024 normal values is the exact one rounded once
in all but 4e-6 of its elements (28% differed before; jax.jit 0.10.2, which rounds after each op, 65%).
"""
from __future__ import annotations

import numpy as np
from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from .irutil import func_blocks, make_constant, producer

ELEMENTWISE = frozenset("stablehlo." + n for n in (
    "abs add and atan2 cbrt ceil clamp compare cosine divide exponential exponential_minus_one floor is_finite log "
    "log_plus_one logistic maximum minimum multiply negate not or power remainder round_nearest_afz round_nearest_even "
    "rsqrt select sign sine sqrt subtract tan tanh xor").split())
MOVES = frozenset("stablehlo." + n for n in "broadcast_in_dim concatenate pad reshape reverse slice transpose".split())


def _narrow(t: ir.Type, narrow: tuple) -> bool:
    return isinstance(t, ir.RankedTensorType) and ir.RankedTensorType(t).element_type in narrow


def _wide(t: ir.Type, f32: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(ir.RankedTensorType(t).shape, f32)


def _convert(v: ir.Value, ty: ir.Type) -> ir.Value:
    return ir.Operation.create("stablehlo.convert", operands=[v], results=[ty]).result


class WidenHalf(Pass):
    name = "widen-half"
    kind, workaround = "workaround", Workaround("3.13", "tests/test_passes_widen.py::test_widened_functions_give_float32_results_rounded_once")
    description = ("CPU: bfloat16 (and, in normalizations, float16) elementwise ops, reductions and data movement compute "
                   "in float32, rounded once where a value leaves them (IREE stores values between dispatches narrow)")

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        with module.context:
            bf16, f16, f32 = ir.BF16Type.get(), ir.F16Type.get(), ir.F32Type.get()
        for block in func_blocks(module):
            narrow = (bf16, f16) if _broadcasts_a_reduction(block, f16) else (bf16,)  # (the types widened here)
            wide: dict = {}  # narrow value -> its float32 version: the value this pass rounded, or a convert

            def widen(v: ir.Value) -> ir.Value:
                if v not in wide:
                    with _after(v), v.location:
                        splat = _splat(producer(v))
                        wide[v] = _convert(v, _wide(v.type, f32)) if splat is None else \
                            make_constant(np.array(splat, np.float32), _wide(v.type, f32))
                return wide[v]

            for op in list(block.operations):
                op = op.operation
                if not self._widens(op, narrow):
                    continue
                with op.location:
                    self._widen(op, widen, wide, f32, narrow)
                stats.rewrites["op"] += 1
            self._drop_round_trips(block, wide, f32, stats)

    @staticmethod
    def _widen(op, widen, wide: dict, f32, narrow) -> None:
        """Rewrite `op` in place to compute in float32: operands widened, narrow results rounded after it (each
        rounded value noted in `wide`, with the float32 one it rounds)."""
        for i, v in enumerate(op.operands):
            if _narrow(v.type, narrow):
                op.operands[i] = widen(v)
        for region in op.regions:  # a reduce's body: its arguments and results
            for arg in region.blocks[0].arguments:
                if _narrow(arg.type, narrow):
                    arg.set_type(_wide(arg.type, f32))
            for inner in region.blocks[0].operations:
                for r in inner.results:
                    if _narrow(r.type, narrow):
                        r.set_type(_wide(r.type, f32))
        for r in op.results:
            if _narrow(r.type, narrow):
                narrow_type = r.type
                r.set_type(_wide(r.type, f32))
                with ir.InsertionPoint.after(op), op.location:
                    back = _convert(r, narrow_type)
                r.replace_all_uses_except(back, back.owner.operation)
                wide[back] = r

    @staticmethod
    def _widens(op, narrow) -> bool:
        """Whether `op` is one this pass computes in float32, and touches a narrow type."""
        if op.name == "stablehlo.reduce":
            body = op.regions[0].blocks[0].operations
            if any(inner.name not in ELEMENTWISE and inner.name != "stablehlo.return" for inner in body):
                return False
        elif op.name not in ELEMENTWISE and op.name not in MOVES:
            return False
        return any(_narrow(v.type, narrow) for v in list(op.operands) + list(op.results))

    @staticmethod
    def _drop_round_trips(block: ir.Block, wide: dict, f32, stats: PassStats) -> None:
        """A convert to float32 of a value this pass rounded becomes the float32 value (a round trip the program asked
        for itself stays); converts and constants left unused are erased."""
        for op in list(block.operations):
            op = op.operation
            if op.name == "stablehlo.convert" and ir.RankedTensorType(op.result.type).element_type == f32 and \
                    op.operands[0] in wide and wide[op.operands[0]] != op.result:
                op.result.replace_all_uses_with(wide[op.operands[0]])
                stats.rewrites["round-trip"] += 1
        for op in reversed(list(block.operations)):
            op = op.operation
            if op.name in ("stablehlo.convert", "stablehlo.constant") and not list(op.result.uses):
                op.erase()


def _broadcasts_a_reduction(block: ir.Block, t: ir.Type, depth: int = 4) -> bool:
    """Whether a `stablehlo.reduce` in `block` has its result broadcast back to a `t` tensor (through at most `depth`
    elementwise ops, reshapes and converts), as a softmax or a layernorm does."""
    def reaches(v: ir.Value, d: int) -> bool:
        for use in v.uses:
            user = use.owner
            if user.name == "stablehlo.broadcast_in_dim" and _narrow(user.results[0].type, (t,)):
                return True
            if d and (user.name in ELEMENTWISE or user.name in ("stablehlo.reshape", "stablehlo.convert")) and \
                    any(reaches(r, d - 1) for r in user.results):
                return True
        return False
    return any(op.operation.name == "stablehlo.reduce" and any(reaches(r, depth) for r in op.operation.results)
               for op in block.operations)


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


WIDEN_HALF = register(WidenHalf())
