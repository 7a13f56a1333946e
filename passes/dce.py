"""`dce`: erase StableHLO ops whose results are unused (every StableHLO op we emit is pure)."""
from __future__ import annotations

from iree.compiler import ir

from .base import Pass, PassStats, register
from .irutil import func_blocks

_IMPURE = {"stablehlo.custom_call", "stablehlo.infeed", "stablehlo.outfeed", "stablehlo.send",
           "stablehlo.recv", "stablehlo.rng", "stablehlo.rng_bit_generator"}


def _dead(op) -> bool:
    return (op.name.startswith("stablehlo.") and op.name not in _IMPURE and len(op.results) > 0
            and all(len(list(r.uses)) == 0 for r in op.results))


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
