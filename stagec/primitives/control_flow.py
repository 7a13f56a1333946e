"""Structured control flow primitives: `cond` (one `stablehlo.if`/`case`) and `while` (one `stablehlo.while`).

Their parameters hold traced sub-graphs (branches, loop condition and body); values those close over are
extra operands after the regular ones. The user functions (`cond`, `while_loop`, `scan`, ...) are in
`stagec.lax.control_flow`.
"""
from __future__ import annotations

import numpy as np

from .. import lowering as L
from ..core import Primitive, ShapedArray


def _cond_rule(index, *ops, branches, n_ops):
    if index.shape != () or index.dtype != np.int32:
        raise TypeError(f"cond index must be an int32 scalar, got {index.str_short()}")
    # An output is weakly typed only if it is so in every branch.
    return [a.update(weak_type=all(g.out_avals[i].weak_type for g in branches))
            for i, a in enumerate(branches[0].out_avals)]


cond_p = Primitive("cond", _cond_rule, multiple_results=True)


@cond_p.def_lowering
def _cond_lower(ctx: L.Ctx, index, *rest, branches, n_ops):
    ir = L.mlir()
    ops = list(rest[:n_ops])
    caps = list(rest[n_ops:])
    n = len(branches)
    if n == 1:
        return L.emit_graph(branches[0], ops + caps[:len(branches[0].in_vars) - n_ops])
    if n == 2:  # stablehlo.if on (index != 0): region 0 is the true branch (index 1)
        i32 = ShapedArray((), np.int32)
        pred = L.compare(ctx, index, L.full(0, i32), "NE", i32)
        op = ctx.op("stablehlo.if", [pred], regions=2)
        order = [branches[1], branches[0]]
        cap_slices = _split_caps(branches, n_ops, caps)
        cap_order = [cap_slices[1], cap_slices[0]]
    else:
        op = ctx.op("stablehlo.case", [index], regions=n)
        order, cap_order = list(branches), _split_caps(branches, n_ops, caps)
    for region, g, cs in zip(op.regions, order, cap_order):
        block = region.blocks.append()
        with ir.InsertionPoint(block):
            ir.Operation.create("stablehlo.return", results=[], operands=L.emit_graph(g, ops + cs))
    return list(op.results)


def _split_caps(graphs, n_ops, caps) -> list[list]:
    out, k = [], 0
    for g in graphs:
        n = len(g.in_vars) - n_ops
        out.append(caps[k:k + n])
        k += n
    return out


def _while_rule(*args, cond_graph, body_graph, n_carry, n_cond_caps):
    return [a for a in args[:n_carry]]


while_p = Primitive("while", _while_rule, multiple_results=True)


@while_p.def_lowering
def _while_lower(ctx: L.Ctx, *args, cond_graph, body_graph, n_carry, n_cond_caps):
    ir = L.mlir()
    carry = list(args[:n_carry])
    cond_caps = list(args[n_carry:n_carry + n_cond_caps])
    body_caps = list(args[n_carry + n_cond_caps:])
    op = ctx.op("stablehlo.while", carry, regions=2)
    types = [L.tensor_type(a) for a in ctx.avals_out]
    for region, g, caps in ((op.regions[0], cond_graph, cond_caps), (op.regions[1], body_graph, body_caps)):
        block = region.blocks.append(*types)
        with ir.InsertionPoint(block):
            outs = L.emit_graph(g, list(block.arguments) + caps)
            ir.Operation.create("stablehlo.return", results=[], operands=outs)
    return list(op.results)
