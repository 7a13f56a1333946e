"""Which CPU modules pack their matmuls (data tiling: both operands copied into tiles on every call): the rule, once,
for the compile driver (`driver.Facts.packs`, which drops `targets.DATA_TILING`) and for the passes
that must know it beforehand (`legalize.blas_dots`, `rows`).

A module packs where it has a product of `PACK_MACS` multiply-adds or more that reuses its operands enough (no free
and no contracting extent under `PACK_EXTENT`: a matrix-vector product reads each matrix element once, an outer
product multiplies each pair once, and a product of a few rows, or over a few, packs a weight for little work: a
784-1024-1024-10 training step at batch 4 ran 1.7x faster unpacked), unless it would pack operands beyond the caches
(`PACK_BIG` elements or more) for too little work: packing one costs about `PACK_COST` multiply-adds per element (a
4096x4096 weight ~27 ms, where 8 rows times it took 5 ms unpacked). Small products ran 1.1-2.8x faster unpacked
(docs/passes.md, "Which matmuls are packed")."""
from __future__ import annotations

import math
import re
from typing import Iterable

from iree.compiler import ir

PACK_MACS, PACK_BIG, PACK_COST, PACK_EXTENT = 1 << 21, 1 << 22, 256, 12
_DIMS = re.compile(r"(lhs|rhs)_(batching|contracting)_dimensions = \[([\d, ]*)\]")


def dot_dims(op) -> dict:
    """A dot_general's dimension numbers: {("lhs" | "rhs", "batching" | "contracting"): [dims]}."""
    return {(m[1], m[2]): [int(d) for d in m[3].split(",") if d.strip()]
            for m in _DIMS.finditer(str(op.attributes["dot_dimension_numbers"]))}


def dot_work(op) -> tuple[int, int, bool]:
    """A dot_general's multiply-adds, the elements of its operands of `PACK_BIG` elements or more (unknown dimensions
    as 1), and whether it reuses operand elements enough to pack them (`PACK_EXTENT`)."""
    lhs, rhs, out = (ir.RankedTensorType(t) for t in (op.operands[0].type, op.operands[1].type, op.results[0].type))
    dims = dot_dims(op)
    known = lambda n: n if n >= 0 else 1  # (a dynamic extent)
    k = math.prod(known(lhs.shape[d]) for d in dims.get(("lhs", "contracting"), []))
    size = lambda t: math.prod(known(n) for n in t.shape)
    free = [math.prod(known(t.shape[d]) for d in range(t.rank) if d not in dims.get((side, "batching"), [])
                      + dims.get((side, "contracting"), [])) for t, side in ((lhs, "lhs"), (rhs, "rhs"))]
    return (k * math.prod(known(n) for n in out.shape), sum(n for n in (size(lhs), size(rhs)) if n >= PACK_BIG),
            min(k, *free) >= PACK_EXTENT)


def packs(works: Iterable[tuple[int, int, bool]]) -> bool:
    """Whether a module whose products have these `dot_work`s packs them."""
    largest = total = big = 0
    for macs, b, reuse in works:
        largest, total, big = max(largest, macs if reuse else 0), total + macs, big + b
    return largest >= PACK_MACS and total >= PACK_COST * big
