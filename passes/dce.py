"""`dce`: erase StableHLO ops whose results are unused (every StableHLO op we emit is pure, except control
flow whose regions call out to host callbacks), and stop updating a loop's carries nobody reads (a scan's stacked
outputs that the program drops)."""
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


def _dead_carries(loop) -> int:
    """Make each carry of a `stablehlo.while` that nothing reads (not its result, not the condition, not the other
    carries: what its body computes from it reaches only its own next value) pass through unchanged, so that `_erase`
    drops its computation; how many. Besides the work saved, IREE 3.13 miscompiled a loop with such a carry (a scan's
    unread stacked outputs) beside a `case` or nested `if` reading a value the body computed: every step after the
    first was lost (`lax.scan(..., switch(i % 3, ...), ...)[0]` gave the first step's carry)."""
    cond, body = loop.regions[0].blocks[0], loop.regions[1].blocks[0]
    ret = list(body.operations)[-1]
    n = 0
    for j, arg in enumerate(body.arguments):
        if any(True for _ in loop.results[j].uses) or any(True for _ in cond.arguments[j].uses) or ret.operands[j] == arg:
            continue
        todo, seen, escapes = [arg], set(), False
        while todo and not escapes:
            for use in todo.pop().uses:
                op = use.owner
                if op == ret.operation or op == ret:
                    escapes = use.operand_number != j
                elif op.name in _IMPURE or op.name == "func.call":
                    escapes = True
                elif op.operation not in seen:
                    seen.add(op.operation)
                    if op.name == "stablehlo.return":  # (a nested region's: its op's results carry it on)
                        op = op.parent
                    todo.extend(op.results)
                if escapes:
                    break
        if not escapes:
            ret.operands[j] = arg
            n += 1
    return n


def _erase(block, stats: PassStats) -> None:
    """Erase the dead ops of `block`, then of the blocks nested in its ops."""
    changed = True
    while changed:  # erasing an op can make its operands' producers dead
        changed = False
        for op in reversed(list(block.operations)):
            if _dead(op):
                op.erase()
                stats.rewrites["erased"] += 1
                changed = True
    for op in block.operations:
        if op.name == "stablehlo.while":
            stats.rewrites["dead carries"] += _dead_carries(op)
        for region in op.regions:
            for inner in region.blocks:
                _erase(inner, stats)


class DeadCodeElimination(Pass):
    name = "dce"
    description = "erase pure StableHLO ops whose results are never used; loop carries nobody reads stay unchanged"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in func_blocks(module):
            _erase(block, stats)


DCE = register(DeadCodeElimination())
