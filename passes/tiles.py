"""`updates-as-concats`: a chain of `dynamic_update_slice`s at constant starts whose updates tile the whole result (a
grid of blocks, each written once: an image grid drawn block by block in a Python loop) -> a tree of
`concatenate`s of the blocks, the last axis innermost. The first value the chain updates is then never read.

IREE 3.13 copies each update into the result as a dispatch of its own (64 blocks, 64 executables); concatenated,
`fold-movement` (which runs next) makes blocks cut from one array one transpose. Exact: each element of the result
is the one update that wrote it, as before. Starts a `dynamic_update_slice` would clamp, overlapping updates or a
result not covered whole are left alone.
"""
from __future__ import annotations

import math

from iree.compiler import ir

from .base import Pass, PassStats, register
from .irutil import constant_value, func_blocks, producer, tensor_type

_DUS = "stablehlo.dynamic_update_slice"
MIN_UPDATES = 4  # (fewer: left as they are)


def _chain(last) -> list | None:
    """The updates of the chain ending at `last`, first to last: [(starts, shape, value, op)] (back to the first
    update whose result only the next one reads), or None where a start is not a constant."""
    found, op = [], last
    while True:
        starts = [constant_value(v) for v in op.operands[2:]]
        if any(s is None for s in starts):
            return None
        found.append(([int(s[0]) for s in starts], list(tensor_type(op.operands[1]).shape), op.operands[1],
                      op))
        base = producer(op.operands[0])
        if base is None or base.name != _DUS or len(list(base.result.uses)) != 1:
            return found[::-1]
        op = base


def _grid(tiles: list, shape: list[int]) -> dict | None:
    """{cell index: update value} where the tiles cut `shape` into a grid, each cell one tile, else None."""
    cuts = [sorted({t[0][a] for t in tiles}) for a in range(len(shape))]
    if any(c[0] != 0 for c in cuts) or math.prod(len(c) for c in cuts) != len(tiles):
        return None
    cells = {}
    for starts, size, v, _ in tiles:
        cell = []
        for a, (s, n) in enumerate(zip(starts, size)):
            k = cuts[a].index(s)
            end = cuts[a][k + 1] if k + 1 < len(cuts[a]) else shape[a]
            if s + n != end:
                return None
            cell.append(k)
        if tuple(cell) in cells:
            return None
        cells[tuple(cell)] = v
    return cells


def _concat(parts: list, axis: int) -> ir.Value:
    if len(parts) == 1:
        return parts[0]
    t = tensor_type(parts[0])
    shape = list(t.shape)
    shape[axis] = sum(tensor_type(p).shape[axis] for p in parts)
    return ir.Operation.create("stablehlo.concatenate", results=[ir.RankedTensorType.get(shape, t.element_type)],
                               operands=parts, attributes={"dimension": ir.IntegerAttr.get(
                                   ir.IntegerType.get_signless(64), axis)}).result


def _as_concats(last) -> bool:
    shape = list(tensor_type(last.result).shape)
    tiles = _chain(last)
    if tiles is None or len(tiles) < MIN_UPDATES or any(n < 0 for n in shape):
        return False
    if any(s < 0 or s + n > d for starts, size, *_ in tiles for s, n, d in zip(starts, size, shape)):
        return False  # (a start the op would clamp)
    cells = _grid(tiles, shape)
    if cells is None:
        return False
    counts = [1 + max(c[a] for c in cells) for a in range(len(shape))]
    with ir.InsertionPoint(last), last.location:
        def build(prefix: tuple) -> ir.Value:  # the cells under `prefix`, concatenated along the next axis
            a = len(prefix)
            if a == len(shape):
                return cells[prefix]
            return _concat([build(prefix + (k,)) for k in range(counts[a])], a)
        new = build(())
    last.result.replace_all_uses_with(new)
    for *_, op in tiles[::-1]:  # (last first: each one's reader is gone before it)
        op.erase()
    return True


class UpdatesAsConcats(Pass):
    name = "updates-as-concats"
    description = "dynamic_update_slices at constant starts tiling their whole result -> concatenates of the blocks"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in func_blocks(module):
            ends = [o.operation for o in block.operations if o.operation.name == _DUS
                    and not any(u.owner.name == _DUS and u.operand_number == 0 for u in o.operation.result.uses)]
            for op in ends:
                if _as_concats(op):
                    stats.rewrites["tiles"] += 1


register(UpdatesAsConcats())
