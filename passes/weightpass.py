"""`one-weight-pass`: a batch of one's backward product through a weight and that weight's update read the weight
in one pass (one `linalg.generic`) instead of two.

With one row, a dense layer's backward pass computes `dz @ W.T` (a matrix-vector product reading all of `W`) and its
update computes, say, `W - lr * outer(h, dz)` (an elementwise pass reading all of `W` again and writing the new
weight): memory-bound, so the weight is read twice for ~1 flop per element. Both read `W[j, k]` and `dz[k]` only, so
one generic over `(j, k)` computes the update's elements (`parallel` outputs) and `sum_k W[j, k] * dz[k]` (a reduction
output). The 784-1024-1024-10 batch-1 SGD step's 1024x1024 weight: 0.29 ms for both, against 0.31 ms for the update
and 0.17-0.28 ms for the product (BLAS / IREE) apart; and the module calls no BLAS, so a spare core may take it
(docs/runtime.md). docs/log.md, 2026-11-27 (helper train40).

Applies to a float32 `dot_general` of a `1 x N` row by an `M x N` weight contracting both on `N` (no batch) of at least
`MIN_ELEMENTS` weight elements, where an elementwise cluster of `M x N` ops (`fuse`'s clusters) reads the weight and
ends only in the function's results, its other inputs splat constants, broadcasts, `M x N` values, and outer products
(`dot_general`s of a `1 x M` and a `1 x N` row contracting the 1s: the weight gradient, never materialized), all
defined before the product and none computed from it. Numerics: the cluster's ops are the same scalar ops (an outer
product's element is `a * b`, as its one-term sum); the product's sum is in another order, as BLAS's is.
"""
from __future__ import annotations

import math

import numpy as np
from iree.compiler import ir

from . import scalar_ops
from .base import Pass, PassStats, register
from .fuse import _PAR, _RED, _elementwise, _input_map
from .irutil import func_blocks, make_constant, producer, splat_value, tensor_type
from .outer import _dims

MIN_ELEMENTS = 1 << 16  # the least weight elements (smaller ones stay in the caches: nothing to save)


def _row_by_transpose(op) -> tuple[ir.Value, ir.Value] | None:
    """(row, W) where `op` is a float32 `row @ W.T`: `1 x N` by `M x N` contracting N (or by `transpose(W)` contracting
    its first dimension), no batch."""
    if op.name != "stablehlo.dot_general" or len(op.operands) != 2 or _dims(op, "lhs_batching_dimensions") \
            or _dims(op, "lhs_contracting_dimensions") != [1]:
        return None
    row, w = op.operands
    rc = _dims(op, "rhs_contracting_dimensions")
    t = producer(w)
    if rc == [0] and t is not None and t.operation.name == "stablehlo.transpose" \
            and list(ir.DenseI64ArrayAttr(t.attributes["permutation"])) == [1, 0]:
        w = t.operands[0]
    elif rc != [1]:
        return None
    lt, wt = tensor_type(row), tensor_type(w)
    if lt.rank != 2 or wt.rank != 2 or not (lt.has_static_shape and wt.has_static_shape) or lt.shape[0] != 1 \
            or lt.shape[1] != wt.shape[1] or math.prod(wt.shape) < MIN_ELEMENTS \
            or not all(str(t.element_type) == "f32" for t in (lt, wt, tensor_type(op.result))):
        return None
    return row, w


def _outer(v: ir.Value, shape) -> list | None:
    """[(a, i), (b, i)] where `v` is an outer product `M x N` of a `dot_general` contracting only 1s: its operands
    and which dimension of each holds M (of `a`), N (of `b`)."""
    p = producer(v)
    if p is None or p.operation.name != "stablehlo.dot_general" or _dims(p, "lhs_batching_dimensions"):
        return None
    found = []
    for x, c, n in zip(p.operands, (_dims(p, "lhs_contracting_dimensions"), _dims(p, "rhs_contracting_dimensions")),
                       shape):
        s = tensor_type(x).shape
        if len(s) != 2 or len(c) != 1 or s[c[0]] != 1 or s[1 - c[0]] != n:
            return None
        found.append((x, 1 - c[0]))
    return found


def _position(block) -> dict:
    return {op.operation: i for i, op in enumerate(block.operations)}


def _ancestor(op, pos: dict):
    """The op of the block (`pos`) that is `op` or holds it in a region; None if none does."""
    op = op.operation
    while op is not None and op not in pos:
        op = op.parent
    return op


def _fold(block, dot, stats: PassStats) -> bool:
    row, w = _row_by_transpose(dot)
    shape = list(tensor_type(w).shape)
    # the update: elementwise M x N ops reached from W, ending in the function's results only
    seen, work, roots = set(), [u.owner for u in w.uses], []
    while work:
        o = work.pop()
        if o.operation in seen or not _elementwise(o, shape):
            continue
        seen.add(o.operation)
        outside = [u.owner for u in o.result.uses if not _elementwise(u.owner, shape)]
        if outside:
            if not all(u.name == "func.return" for u in outside):
                return False
            roots.append(o)
        work += [u.owner for u in o.result.uses]
    if not roots:
        return False
    # ... and the elementwise ops they read that are used only there or by the return too (Adam's moments)
    pos = _position(block)
    found = {r.operation: r for r in roots}
    work = list(roots)
    while work:
        for v in work.pop().operands:
            p = producer(v)
            if p is None or p.operation in found or not _elementwise(p, shape):
                continue
            if all(u.owner.operation in found or u.owner.name == "func.return" for u in p.result.uses):
                found[p.operation] = p
                work.append(p)
    members = sorted(found.values(), key=lambda m: pos[m.operation])  # (the block's order: producers first)
    roots = [m for m in members if any(u.owner.name == "func.return" for u in m.result.uses)]
    ids = set(found)
    # the generic goes after its inputs and the product's place, before the product's first user (none of its
    # inputs is then computed from the product)
    users = [_ancestor(u.owner, pos) for u in dot.result.uses]
    if any(u is None for u in users):
        return False
    first_use = min((pos[u] for u in users), default=len(pos))
    here = pos[dot.operation]
    inputs: dict = {}  # (value, map as text) -> (input index, source, map)
    leaves: dict = {}  # value -> ("const", splat) | ("in", key) | ("outer", key a, key b)
    outer_ops = []

    def take(v: ir.Value, amap) -> tuple | None:
        nonlocal here
        p = producer(v)
        if p is not None:
            at = pos.get(p.operation, first_use)
            if at >= first_use:
                return None  # (defined after the product's first user: perhaps from the product)
            here = max(here, at + 1)
        key = (v, str(amap))
        if key not in inputs:
            inputs[key] = (len(inputs), v, amap)
        return key
    d = [ir.AffineDimExpr.get(i) for i in range(2)]
    zero = ir.AffineConstantExpr.get(0)
    for m in members:
        for v in m.operands:
            p = producer(v)
            if (p is not None and p.operation in ids) or v in leaves:
                continue
            s = splat_value(v)
            if s is not None:
                leaves[v] = ("const", s)
                continue
            ab = _outer(v, shape)
            if ab is not None and all(u.owner.operation in ids for u in v.uses):
                (a, ia), (b, ib) = ab
                ka = take(a, ir.AffineMap.get(2, 0, [d[0], zero] if ia == 0 else [zero, d[0]]))
                kb = take(b, ir.AffineMap.get(2, 0, [d[1], zero] if ib == 0 else [zero, d[1]]))
                if ka is None or kb is None:
                    return False
                leaves[v] = ("outer", ka, kb)
                outer_ops.append(producer(v))
                continue
            if tensor_type(v).shape != shape and tensor_type(v).rank != 0:
                return False
            src, amap = _input_map(v, 2, shape)
            k = take(src, amap)
            if k is None:
                return False
            leaves[v] = ("in", k)
    kw, kr = take(w, ir.AffineMap.get_identity(2)), take(row, ir.AffineMap.get(2, 0, [zero, d[1]]))
    if kw is None or kr is None:
        return False
    ins = sorted(inputs.values(), key=lambda t: t[0])
    f32 = tensor_type(w).element_type
    before = list(block.operations)[here].operation  # (here <= first_use: the product or an op up to its user)
    with ir.InsertionPoint(before), dot.location:
        outs = [ir.Operation.create("tensor.empty", results=[r.result.type], operands=[]).result for r in roots]
        acc = make_constant(np.zeros(shape[0], np.float32), ir.RankedTensorType.get([shape[0]], f32))
        maps = [t[2] for t in ins] + [ir.AffineMap.get_identity(2)] * len(outs) + [ir.AffineMap.get(2, 0, [d[0]])]
        g = ir.Operation.create(
            "linalg.generic", results=[o.type for o in outs] + [acc.type], operands=[*(t[1] for t in ins), *outs, acc],
            attributes={"indexing_maps": ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                        "iterator_types": ir.ArrayAttr.get([ir.Attribute.parse(i) for i in (_PAR, _RED)]),
                        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(ins), len(outs) + 1])},
            regions=1)
        body = g.regions[0].blocks.append(*[tensor_type(t[1]).element_type for t in ins], *[f32] * (len(outs) + 1))
        with ir.InsertionPoint(body):
            env: dict = {}

            def scalar(v):
                p = producer(v)
                if p is not None and p.operation in ids:
                    return env[p.operation]
                leaf = leaves[v]
                if leaf[0] == "const":
                    return scalar_ops.scalar_constant(leaf[1], tensor_type(v).element_type)
                if leaf[0] == "in":
                    return body.arguments[inputs[leaf[1]][0]]
                if v not in env:
                    env[v] = ir.Operation.create("arith.mulf", results=[f32], operands=[
                        body.arguments[inputs[leaf[1]][0]], body.arguments[inputs[leaf[2]][0]]]).result
                return env[v]
            for m in members:
                env[m.operation] = scalar_ops.emit(m, [scalar(v) for v in m.operands])
            prod = ir.Operation.create("arith.mulf", results=[f32], operands=[
                body.arguments[inputs[kw][0]], body.arguments[inputs[kr][0]]]).result
            total = ir.Operation.create("arith.addf", results=[f32], operands=[body.arguments[-1], prod]).result
            ir.Operation.create("linalg.yield", results=[], operands=[*(env[r.operation] for r in roots), total])
        product = ir.Operation.create("stablehlo.reshape", results=[dot.result.type], operands=[g.results[-1]]).result
    for r, new in zip(roots, g.results):
        r.result.replace_all_uses_with(new)
    dot.result.replace_all_uses_with(product)
    for m in reversed(members):
        m.operation.erase()
    t = producer(dot.operands[1])  # (W, or the transpose of it the product read)
    dot.operation.erase()
    for o in outer_ops + ([t] if t is not None and t.operation.name == "stablehlo.transpose" else []):
        if not len(list(o.result.uses)):
            o.operation.erase()
    stats.rewrites["weight-read-once"] += 1
    return True


class OneWeightPass(Pass):
    name = "one-weight-pass"
    description = "a batch of one's `dz @ W.T` and W's elementwise update -> one generic reading W once"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in func_blocks(module):
            for op in [o.operation for o in block.operations if _row_by_transpose(o.operation) is not None]:
                _fold(block, op, stats)


ONE_WEIGHT_PASS = register(OneWeightPass())
