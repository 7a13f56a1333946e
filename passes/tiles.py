"""`updates-as-concats` and `pad-sums-as-concats`: writes that tile an array, as concatenations.

`updates-as-concats`: a chain of `dynamic_update_slice`s at constant starts whose updates tile the whole result (a
grid of blocks, each written once: an image grid drawn block by block in a Python loop) -> a tree of
`concatenate`s of the blocks, the last axis innermost. The first value the chain updates is then never read.

IREE 3.13 copies each update into the result as a dispatch of its own (64 blocks, 64 executables); concatenated,
`fold-movement` (which runs next) makes blocks cut from one array one transpose. Exact: each element of the result
is the one update that wrote it, as before. Starts a `dynamic_update_slice` would clamp, overlapping updates or a
result not covered whole are left alone.

`pad-sums-as-concats`: a sum of zero-padded pieces placed apart along one axis (the gradient of slices of one array:
each slice's transpose pads its cotangent) -> a `concatenate` of the pieces, zeros between them, plus the sum's other
terms. IREE 3.13 made each pad an add of a whole array (24 heads' slices: 24 passes over the gradient of qkv).
Exact but for a piece's -0.0, which the sum made +0.0 and the concatenation keeps (as `simplify`'s x + 0 -> x, and
XLA).
"""
from __future__ import annotations

import math

import numpy as np

from iree.compiler import ir

from .base import Pass, PassStats, register
from .irutil import constant_value, dtype_of, func_blocks, make_constant, producer, splat_value, tensor_type
from .movement import _ints

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


MIN_PADS = 4  # (fewer: left as they are)


def _terms(root) -> tuple[list, list]:
    """The terms of the sum `root` heads (adds read only by the sum are opened), and its adds, `root` first."""
    out, adds, work = [], [root], [root.operands[1], root.operands[0]]
    while work:
        v = work.pop()
        op = producer(v)
        if op is not None and op.name == "stablehlo.add" and len(list(v.uses)) == 1:
            adds.append(op.operation)
            work += [op.operands[1], op.operands[0]]
        else:
            out.append(v)
    return out, adds


def _placed(v):
    """(axis, low, piece) where `v` is a zero pad of a piece along one axis only (no interior padding), else None."""
    op = producer(v)
    if op is None or op.name != "stablehlo.pad":
        return None
    zero = splat_value(op.operands[1])
    if zero is None or zero != 0 or np.signbit(zero):  # (+0: the zeros between the pieces)
        return None
    low, high, interior = (_ints(op.attributes[k]) for k in ("edge_padding_low", "edge_padding_high",
                                                             "interior_padding"))
    axes = [a for a in range(len(low)) if low[a] or high[a]]
    if any(interior) or any(x < 0 for x in low + high) or len(axes) != 1:
        return None
    return axes[0], low[axes[0]], op.operands[0]


def _pads_as_concat(root) -> bool:
    terms, adds = _terms(root)
    placed = [(t, _placed(t)) for t in terms]
    pads = [(p, t) for t, p in placed if p is not None]
    axes = {p[0] for p, _ in pads}
    if len(pads) < MIN_PADS or len(axes) != 1 or dtype_of(root.result) is None:
        return False
    a, rt = axes.pop(), tensor_type(root.result)
    pads.sort(key=lambda pt: pt[0][1])
    ends = [low + tensor_type(piece).shape[a] for (_, low, piece), _ in pads]
    if any(e > p[0][1] for e, p in zip(ends, pads[1:])):
        return False  # (pieces overlapping)
    parts, at = [], 0
    with ir.InsertionPoint(root), root.location:
        def zeros(n):
            shape = list(rt.shape)
            shape[a] = n
            return make_constant(np.array(0), ir.RankedTensorType.get(shape, rt.element_type))
        for (_, low, piece), _ in pads:
            if low > at:
                parts.append(zeros(low - at))
            parts.append(piece)
            at = low + tensor_type(piece).shape[a]
        if at < rt.shape[a]:
            parts.append(zeros(rt.shape[a] - at))
        v = _concat(parts, a)
        for t, p in placed:
            if p is None:
                v = ir.Operation.create("stablehlo.add", results=[rt], operands=[v, t]).result
    root.result.replace_all_uses_with(v)
    for op in adds + [producer(t).operation for t, p in placed if p is not None]:  # (readers first)
        if not list(op.result.uses):
            op.erase()
    return True


class PadSumsAsConcats(Pass):
    name = "pad-sums-as-concats"
    description = "a sum of zero pads of pieces apart along one axis -> a concatenate of the pieces"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in func_blocks(module):
            roots = [o.operation for o in block.operations if o.operation.name == "stablehlo.add" and not (
                len(list(o.operation.result.uses)) == 1
                and next(iter(o.operation.result.uses)).owner.name == "stablehlo.add")]
            for op in roots:
                if tensor_type(op.result).has_static_shape and _pads_as_concat(op):
                    stats.rewrites["pads"] += 1


register(PadSumsAsConcats())
