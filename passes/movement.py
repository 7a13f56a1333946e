"""`fold-movement`: a concatenation of pieces cut from one array becomes one reshape / reverse / transpose of it.

Code written for NumPy builds layouts from pieces: JAX's VAE example draws its image grid as
`vstack([hstack([next(images).T for _ in range(10)][::-1]) for _ in range(10)]).T`, 100 slices, 100 transposes
and 11 concatenations of one (100, 28, 28) array. IREE 3.13 gives each piece a dispatch of its own (111 here),
and each dispatch costs its own code generation: most of that function's compile time (8 of 9 s of CPU).

The pass takes a `concatenate` whose operands are reached from a single array X only through slices, reshapes,
transposes, reverses and concatenations, and finds where each result element comes from by evaluating those
ops in NumPy on X's flat indices. Where that map is a bijection of the form "split X into axes, reverse some,
permute them, merge them" (strides found by walking the flat map, then checked element for element), the
concatenation is replaced by that chain: one transpose for IREE. Data moves exactly as before (no arithmetic);
anything else is left alone.
"""
from __future__ import annotations

import math

import numpy as np
from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from .irutil import func_blocks, producer, tensor_type

MOVES = ("stablehlo.slice", "stablehlo.reshape", "stablehlo.transpose", "stablehlo.reverse", "stablehlo.concatenate")
MIN_OPERANDS = 3  # a concatenation of fewer pieces is left as it is
MAX_ELEMENTS = 1 << 22  # the index map is evaluated in NumPy: larger sources are left alone


def _ints(attr) -> list[int]:
    try:
        return list(ir.DenseI64ArrayAttr(attr))
    except ValueError:
        return [int(v) for v in ir.DenseIntElementsAttr(attr)]


def _evaluate(v: ir.Value, source: ir.Value, at: np.ndarray, memo: dict):
    """The flat indices into `source` of each element of `v`, or None where `v` is not reached from `source`
    through the moves alone."""
    if v == source:
        return at
    if v in memo:
        return memo[v]
    p = producer(v)
    if p is None or p.operation.name not in MOVES or not tensor_type(v).has_static_shape:
        return None
    op = p.operation
    args = [_evaluate(o, source, at, memo) for o in op.operands]
    if any(a is None for a in args):
        return None
    a, attrs, shape = args[0], op.attributes, tuple(tensor_type(v).shape)
    if op.name == "stablehlo.slice":
        out = a[tuple(slice(s, e, st) for s, e, st in zip(_ints(attrs["start_indices"]), _ints(attrs["limit_indices"]),
                                                          _ints(attrs["strides"])))]
    elif op.name == "stablehlo.reshape":
        out = a.reshape(shape)
    elif op.name == "stablehlo.transpose":
        out = a.transpose(_ints(attrs["permutation"]))
    elif op.name == "stablehlo.reverse":
        out = np.flip(a, tuple(_ints(attrs["dimensions"])))
    else:
        out = np.concatenate(args, axis=ir.IntegerAttr(attrs["dimension"]).value)
    memo[v] = out
    return out


def _source(root) -> ir.Value | None:
    """The one non-move value the moves ending at `root` start from, or None."""
    work, leaves, seen = [root], [], 0
    while work:
        op = work.pop()
        seen += 1
        if seen > 4096:
            return None
        for o in op.operands:
            p = producer(o)
            if p is not None and p.operation.name in MOVES:
                work.append(p.operation)
            elif not any(o == leaf for leaf in leaves):
                leaves.append(o)
    return leaves[0] if len(leaves) == 1 else None


def factor(flat: np.ndarray, n: int):
    """(axis sizes of the source split, reversed axes, permutation) such that reshaping an array of n elements to
    the sizes, reversing, transposing and flattening gives `flat` (flat indices), or None."""
    m = flat.size
    if m != n or m < 2 or not np.array_equal(np.sort(flat), np.arange(n)):
        return None
    levels, block = [], 1  # (size, stride) from the innermost output axis out
    while block < m:
        s = int(flat[block]) - int(flat[0])
        k = 1
        while block * (k + 1) <= m and int(flat[block * k]) - int(flat[0]) == k * s:
            k += 1
        if m % (block * k):
            return None
        levels.append((k, s))
        block *= k
    grid = np.zeros(1, np.int64)
    for size, stride in levels:  # rebuild the map from the levels and compare
        grid = (np.arange(size, dtype=np.int64)[:, None] * stride + grid[None, :]).ravel()
    if not np.array_equal(grid + int(flat[0]), flat):
        return None
    by_stride = sorted(range(len(levels)), key=lambda i: -abs(levels[i][1]))  # source axes, outermost first
    expect = 1
    for i in reversed(by_stride):
        if abs(levels[i][1]) != expect:
            return None
        expect *= levels[i][0]
    sizes = [levels[i][0] for i in by_stride]
    rev = [j for j, i in enumerate(by_stride) if levels[i][1] < 0]
    perm = [by_stride.index(i) for i in reversed(range(len(levels)))]  # output axes, outermost first
    return sizes, rev, perm


def _emit(x: ir.Value, shape: tuple, sizes, rev, perm) -> ir.Value:
    et = tensor_type(x).element_type
    v = ir.Operation.create("stablehlo.reshape", results=[ir.RankedTensorType.get(sizes, et)], operands=[x]).result
    if rev:
        v = ir.Operation.create("stablehlo.reverse", results=[v.type], operands=[v],
                                attributes={"dimensions": ir.DenseI64ArrayAttr.get(rev)}).result
    if perm != sorted(perm):
        v = ir.Operation.create("stablehlo.transpose", results=[ir.RankedTensorType.get([sizes[p] for p in perm], et)],
                                operands=[v], attributes={"permutation": ir.DenseI64ArrayAttr.get(perm)}).result
    return ir.Operation.create("stablehlo.reshape", results=[ir.RankedTensorType.get(list(shape), et)],
                               operands=[v]).result


def fold_movement(module: ir.Module, stats: PassStats | None = None) -> int:
    """Rewrite the concatenations the pass describes; returns how many."""
    n = 0
    for block in func_blocks(module):
        for op in reversed(list(block.operations)):  # the outermost concatenation first: it sees the whole layout
            op = op.operation
            if op.name != "stablehlo.concatenate" or len(op.operands) < MIN_OPERANDS:
                continue
            res = op.results[0]
            if not any(True for _ in res.uses) or not tensor_type(res).has_static_shape:
                continue
            x = _source(op)
            if x is None or not isinstance(x.type, ir.RankedTensorType) or not tensor_type(x).has_static_shape:
                continue
            size = math.prod(tensor_type(x).shape)
            if size > MAX_ELEMENTS:
                continue
            shape = tuple(tensor_type(res).shape)
            idx = _evaluate(res, x, np.arange(size, dtype=np.int64).reshape(tensor_type(x).shape), {})
            f = None if idx is None else factor(idx.ravel(), size)
            if f is None:
                continue
            with ir.InsertionPoint(op), op.location:
                new = _emit(x, shape, *f)
            res.replace_all_uses_with(new)
            n += 1
            if stats is not None:
                stats.rewrites["concatenation"] += 1
    return n


class FoldMovement(Pass):
    name = "fold-movement"
    kind = "workaround"
    workaround = Workaround("3.13", "tests/test_passes_movement.py::test_image_grid_is_one_transpose")
    description = "a concatenation of pieces of one array as one reshape/reverse/transpose (not a dispatch per piece)"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        fold_movement(module, stats)


FOLD_MOVEMENT = register(FoldMovement())
