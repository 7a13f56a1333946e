"""`patches-as-one-copy`: a `concatenate` of equally shaped slices of one value, each reshaped to a unit axis at the
concatenation axis, whose starts step over a grid (a convolution's weight gradient: `stagec.primitives.conv` slices
the padded input once per kernel position, 9 for a 3x3 kernel) -> one `linalg.generic` copying the window of every
grid position, whose input map adds the grid index (times its step) to the slice's, and a reshape.

IREE 3.13 copies each slice into the concatenation as a dispatch of its own (`slow_memcpy`): a CNN's SGD step had 18
such dispatches of its 46; as one copy each 3x3 kernel's patches are one dispatch (46 -> 28 executables, the compile
21% less CPU, the same bits; docs/log.md). Exact: the same elements, moved.
"""
from __future__ import annotations

import itertools

import numpy as np
from iree.compiler import ir

from .base import Pass, PassStats, register
from .fuse import _PAR
from .irutil import func_blocks, producer, tensor_type
from .movement import _ints

MAX_GRID_AXES = 3  # (a 3-D convolution's kernel: the orders tried are their permutations)


def _window(v: ir.Value):
    """(source, starts, strides, slice shape) of `v = reshape(slice(source))` where the reshape only adds unit axes
    around the slice's shape, else None."""
    r = producer(v)
    if r is None or r.name != "stablehlo.reshape":
        return None
    s = producer(r.operands[0])
    if s is None or s.name != "stablehlo.slice":
        return None
    return (s.operands[0], _ints(s.attributes["start_indices"]), _ints(s.attributes["strides"]),
            list(tensor_type(s.result).shape))


def _grid(starts: list[list[int]]):
    """(axes, counts, steps) such that the i-th start is the first plus the row-major i-th index of a grid over
    `axes` (in that order: the last varies fastest) times `steps`, else None."""
    base = np.array(starts[0])
    d = np.array(starts) - base
    if (d < 0).any():
        return None
    axes = [a for a in range(d.shape[1]) if d[:, a].any()]
    if not axes or len(axes) > MAX_GRID_AXES:
        return None
    counts, steps = [], []
    for a in axes:
        vals = np.unique(d[:, a])
        step = int(vals[1])
        if not np.array_equal(vals, np.arange(len(vals)) * step):
            return None
        counts.append(len(vals))
        steps.append(step)
    if int(np.prod(counts)) != len(starts):
        return None
    for order in itertools.permutations(range(len(axes))):
        idx = np.array(list(np.ndindex(*[counts[j] for j in order])))  # (row-major over `order`)
        want = np.zeros_like(d)
        for k, j in enumerate(order):
            want[:, axes[j]] = idx[:, k] * steps[j]
        if np.array_equal(want, d):
            return [axes[j] for j in order], [counts[j] for j in order], [steps[j] for j in order]
    return None


def _one_copy(op) -> bool:
    """Rewrite concatenate `op` as one generic and a reshape; whether it did."""
    at = ir.IntegerAttr(op.attributes["dimension"]).value
    wins = [_window(v) for v in op.operands]
    if len(wins) < 2 or any(w is None for w in wins):
        return False
    src, _, strides, shape = wins[0]
    if any(w[0] != src or w[2] != strides or w[3] != shape for w in wins):
        return False
    out_t = tensor_type(op.result)
    elem = out_t.element_type
    if not (isinstance(elem, ir.FloatType) or (isinstance(elem, ir.IntegerType) and elem.is_signless and elem.width >= 8)):
        return False  # (booleans, unsigned integers (a linalg op takes signless ones only), complex: left to IREE)
    piece = list(tensor_type(op.operands[0]).shape)
    if piece != [*shape[:at], 1, *shape[at:]] or any(n < 0 for n in out_t.shape):  # (the unit axis at `at` only)
        return False
    found = _grid([w[1] for w in wins])
    if found is None:
        return False
    axes, counts, steps = found
    q, rank = len(axes), len(shape) + len(axes)
    base = wins[0][1]
    dim = lambda i: ir.AffineDimExpr.get(i)
    loop = lambda a: a if a < at else a + q  # (the loop of the slice's axis a: the grid's loops sit at `at`)
    exprs = []
    for a in range(len(shape)):
        e = dim(loop(a)) * strides[a] + base[a]
        if a in axes:
            j = axes.index(a)
            e = e + dim(at + j) * steps[j]
        exprs.append(e)
    in_map = ir.AffineMap.get(rank, 0, exprs)
    with ir.InsertionPoint(op), op.location:
        grid_t = ir.RankedTensorType.get([*shape[:at], *counts, *shape[at:]], elem)
        init = ir.Operation.create("tensor.empty", results=[grid_t], operands=[]).result
        g = ir.Operation.create(
            "linalg.generic", results=[grid_t], operands=[src, init],
            attributes={"indexing_maps": ir.ArrayAttr.get([ir.AffineMapAttr.get(in_map),
                                                           ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))]),
                        "iterator_types": ir.ArrayAttr.get([ir.Attribute.parse(_PAR)] * rank),
                        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1])},
            regions=1)
        block = g.regions[0].blocks.append(elem, elem)
        with ir.InsertionPoint(block):
            ir.Operation.create("linalg.yield", results=[], operands=[block.arguments[0]])
        new = ir.Operation.create("stablehlo.reshape", results=[out_t], operands=[g.result]).result
    pieces = list(op.operands)
    op.result.replace_all_uses_with(new)
    op.erase()
    for v in pieces:  # (the slices and reshapes no other op reads)
        r = producer(v)
        if r is not None and not list(r.result.uses):
            s = producer(r.operands[0])
            r.erase()
            if s is not None and not list(s.result.uses):
                s.erase()
    return True


class PatchesAsOneCopy(Pass):
    name = "patches-as-one-copy"
    description = "a concatenation of a grid of equally shaped slices of one value (conv patches) -> one copy"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in func_blocks(module):
            for op in [o.operation for o in block.operations if o.operation.name == "stablehlo.concatenate"]:
                if _one_copy(op):
                    stats.rewrites["patches"] += 1


register(PatchesAsOneCopy())
