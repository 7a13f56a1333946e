"""`loop-weights-transposed`: a loop's `A @ B.T` (or `A @ transpose(B)`) with `B` from outside the loop reads `B`
transposed once, before it.

IREE 3.13's llvm-cpu codegen of an unpacked `A @ B.T` (both operands read along the reduction; a layer's
`dz @ W.T` in a backward pass) transposes blocks of `B` in registers: an LSTM gradient's 16x256 by 64x256 step took
6.3 us where the same product as `A @ C`, `C` the 256x64 transpose, took 2.1. In a loop (`scan`, `fori_loop`) whose
`B` is the same every iteration (a weight the body closes over), `C = B.T` is made once before the loop, behind a
barrier (else IREE folds the transpose back into the product), and the body's product reads it: the 40-step LSTM
gradient 1.22 -> 1.04 ms (docs/log.md, 2026-11-30). Made in the body, the transpose cost about what it saved; out of
loops (`weight-left` takes the large ones) the extra dispatch did too. Only where the module does not pack its
products (data tiling lays `B` out itself, `packing.packs`).
"""
from __future__ import annotations

from iree.compiler import ir

from . import packing
from .base import Pass, PassStats, Workaround, register
from .irutil import is_float, nested_ops, producer, tensor_type
from .rows import _A_AT_B, _barrier, _transpose, a_at_bt


def _outside(value: ir.Value, loop) -> bool:
    """Whether `value` is defined outside `loop` (neither by an op in it nor as an argument of its blocks)."""
    owner = producer(value)
    op = value.owner.owner if owner is None else owner.operation  # (a block argument: the op owning its block)
    while op is not None:
        if op == loop:
            return False
        op = op.parent
    return True


def _hoisted_to(dot, b: ir.Value):
    """The outermost `stablehlo.while` around `dot` that `b` is defined outside of, or None."""
    best, op = None, dot.parent
    while op is not None and op.name != "func.func":
        if op.name == "stablehlo.while":
            if not _outside(b, op):
                break
            best = op
        op = op.parent
    return best


class LoopWeightsTransposed(Pass):
    name = "loop-weights-transposed"
    kind, workaround = "workaround", Workaround(
        "3.13", "tests/test_perf_paths.py::test_a_loops_product_by_a_transposed_weight_reads_it_transposed_once")
    description = "a loop's A @ B.T with B from outside the loop -> A @ C, C = B.T made once before the loop"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        dots = nested_ops(module.operation, ("stablehlo.dot_general",))
        if packing.packs(packing.dot_work(op) for op in dots):
            return
        made: dict = {}  # (loop, B) -> B.T behind its barrier
        for dot in dots:
            if (ab := a_at_bt(dot)) is None:  # (`A @ transpose(B)` too: IREE folds the transpose into the product)
                continue
            a, b = ab
            if not all(tensor_type(v).has_static_shape and is_float(v) for v in (a, b)) or tensor_type(b).rank != 2 \
                    or (loop := _hoisted_to(dot, b)) is None:
                continue
            if (loop, b) not in made:
                with ir.InsertionPoint(loop), loop.location:
                    made[loop, b] = _barrier(_transpose(b))
                stats.rewrites["transposed before a loop"] += 1
            dot.operands[1] = made[loop, b]
            dot.attributes["dot_dimension_numbers"] = ir.Attribute.parse(_A_AT_B)
            stats.rewrites["product reading it"] += 1


LOOP_WEIGHTS_TRANSPOSED = register(LoopWeightsTransposed())
