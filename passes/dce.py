"""`dce`: erase StableHLO ops whose results are unused (every StableHLO op we emit is pure, except control
flow whose regions call out to host callbacks)."""
from __future__ import annotations

from iree.compiler import ir

from .base import Pass, PassStats, register
from .irutil import func_blocks

_IMPURE = {"stablehlo.custom_call", "stablehlo.infeed", "stablehlo.outfeed", "stablehlo.send",
           "stablehlo.recv", "stablehlo.rng", "stablehlo.rng_bit_generator"}


def _calls_out(op) -> bool:
    """Whether `op`'s regions call a function (a host callback: a side effect the op must keep)."""
    found = []

    def visit(inner):
        if inner.name == "func.call":
            found.append(inner)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE
    if len(op.regions):
        op.walk(visit)
    return bool(found)


def _dead(op) -> bool:
    return (op.name.startswith("stablehlo.") and op.name not in _IMPURE and len(op.results) > 0
            and all(len(list(r.uses)) == 0 for r in op.results) and not _calls_out(op))


class DeadCodeElimination(Pass):
    name = "dce"
    description = "erase pure StableHLO ops whose results are never used"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in func_blocks(module):
            changed = True
            while changed:  # erasing an op can make its operands' producers dead
                changed = False
                for op in reversed(list(block.operations)):
                    if _dead(op):
                        op.erase()
                        stats.rewrites["erased"] += 1
                        changed = True


DCE = register(DeadCodeElimination())
