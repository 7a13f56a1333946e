"""Merge commuted twins: `a * b` beside `b * a` (and add, max, min, and, or, xor) become one op.

IREE 3.13's dispatch formation (aggressive fusion, O2/O3) computes such twins inside one dispatch as one value and
returns it twice (`flow.return %v#0, %v#1, %v#1`); the canonicalization that then drops the repeated result sends
its uses to the wrong result (`%d#2` -> `%d#0`, not `%d#1`): a consumer in another dispatch silently reads another
value. The product rule makes the twins (`x*y + y*x`: `jit(grad(hessian))` came back 10% off). One value for both
removes the hazard; the rewrite is exact (IEEE add and multiply commute) and leaves one op fewer."""
from __future__ import annotations

from iree.compiler import ir

from .base import Workaround, register
from .legalize import Rewrite

COMMUTATIVE = frozenset(f"stablehlo.{n}" for n in ("add", "multiply", "maximum", "minimum", "and", "or", "xor"))


def merge_commuted_twins(module: ir.Module) -> int:
    """Replace each commutative binary op whose operands, swapped or not, are an earlier op's of the same name,
    attributes and result type (in the same block), by that op; how many."""
    merged = 0

    def block(b):
        nonlocal merged
        seen: dict = {}
        for op in list(b.operations):
            for region in op.regions:
                for inner in region.blocks:
                    block(inner)
            if op.name not in COMMUTATIVE or len(op.operands) != 2 or len(op.results) != 1:
                continue
            x, y = op.operands
            res = op.results[0]
            attrs = tuple(sorted((a.name, str(a.attr)) for a in op.attributes))
            key = (op.name, res.type, attrs)
            twin = seen.get((*key, y, x)) or seen.get((*key, x, y))
            if twin is not None:
                res.replace_all_uses_with(twin.results[0])
                op.operation.erase()
                merged += 1
                continue
            seen[(*key, x, y)] = op

    for top in module.body.operations:
        for region in top.regions:
            for b in region.blocks:
                block(b)
    return merged


MERGE_COMMUTED = register(Rewrite(
    "merge-commuted", merge_commuted_twins,
    "commuted twins (a*b beside b*a) merged: IREE's dispatch formation mixed up their results", "legalize",
    Workaround("3.13", "tests/test_fusion_hazards.py::"
                       "test_commuted_twins_merge_into_one_op_and_the_minimal_module_is_right")))
