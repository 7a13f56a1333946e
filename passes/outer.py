"""`isolate-outer`: an outer product gets a dispatch of its own instead of joining the matmul that feeds it.

An outer product is a `dot_general` that contracts nothing but size-1 axes, or a `multiply` of two
`broadcast_in_dim`s (`h[:, :, None] * g[:, None, :]`): each output element is one multiply. It is what
`vmap(grad(...))` of a dense layer emits for the per-example weight gradients (`(b,1,m) x (b,1,n) -> (b,m,n)`).
IREE 3.13 fuses it, as an elementwise consumer, into the dispatch of the matmul that computes one of its
operands and tiles it with that matmul's tile sizes, which vectorize the wrong axis: on the CPU the per-example
gradient of `benchmarks/bench_grad.py` was written by scalar, strided stores, almost all of its dispatch's time.
An `optimization_barrier` on such an operand (small: the output is `MIN_GROWTH` times larger or more) ends the
fusion there; the outer product becomes an elementwise dispatch vectorized along its contiguous axis (the module
took 40% less time; docs/passes.md "CPU speed").
Outer products not fed by a matmul, and small ones, are left alone. A barrier on a broadcast's input keeps
the broadcast itself fused with the multiply (never materialized).
"""
from __future__ import annotations

import math

from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from .irutil import func_blocks, is_op, producer, tensor_type

MIN_ELEMENTS = 1 << 16  # outer products smaller than this are left fused
MIN_GROWTH = 8  # the output has at least this many times the elements of the operand that gets a barrier
_MATMUL = ("stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution")
DEPTH = 8  # producers followed back from an operand looking for a matmul


def _dims(op, key: str) -> list[int]:
    """`lhs_contracting_dimensions` etc. of a dot_general's `#stablehlo.dot<...>` attribute."""
    text = str(op.attributes["dot_dimension_numbers"])
    at = text.find(key + " = [")
    if at < 0:
        return []
    body = text[at + len(key) + 4:text.index("]", at)]
    return [int(d) for d in body.split(",") if d.strip()]


def _size(v: ir.Value) -> int:
    return math.prod(tensor_type(v).shape)


def _factors(op) -> list:
    """(op, operand index) of the factors of an outer product `op` of at least `MIN_ELEMENTS`: both operands of a
    dot_general contracting only size-1 axes, or the inputs of the two broadcasts a `multiply` reads."""
    if op.name not in ("stablehlo.dot_general", "stablehlo.multiply") or not tensor_type(op.result).has_static_shape \
            or _size(op.result) < MIN_ELEMENTS:
        return []
    if op.name == "stablehlo.dot_general":
        lhs = tensor_type(op.operands[0]).shape
        return [(op, 0), (op, 1)] if all(lhs[d] == 1 for d in _dims(op, "lhs_contracting_dimensions")) else []
    bcasts = [is_op(v, "broadcast_in_dim") for v in op.operands]  # a multiply
    if all(bcasts) and bcasts[0].operation != bcasts[1].operation:  # (not the square of one broadcast)
        return [(b.operation, 0) for b in bcasts]
    return []


def _from_matmul(v: ir.Value) -> bool:
    """Whether `v` is a matmul's result, possibly through ops that keep its element count (elementwise ops,
    reshape, transpose, convert): the chain IREE fuses into the matmul's dispatch."""
    work, seen = [(v, 0)], []  # ops, not their ids: the bindings' wrappers are made afresh and freed
    while work:
        v, depth = work.pop()
        p = producer(v)
        if p is None or depth > DEPTH:
            continue
        p = p.operation
        if p.name in _MATMUL:
            return True
        if len(p.regions) or len(p.results) != 1 or any(p == s for s in seen):
            continue
        seen.append(p)
        n = _size(v)
        work += [(o, depth + 1) for o in p.operands
                 if isinstance(o.type, ir.RankedTensorType) and tensor_type(o).has_static_shape and _size(o) == n]
    return False


class IsolateOuter(Pass):
    name = "isolate-outer"
    kind, workaround = "workaround", Workaround("3.13", "tests/test_perf_paths.py::test_per_example_grads_with_isolated_outer_products")
    description = "barrier between a matmul and an outer product it feeds (IREE tiles the fused product badly)"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in func_blocks(module):
            for op in list(block.operations):
                op = op.operation
                for owner, i in _factors(op):
                    v = owner.operands[i]
                    if _size(op.result) < MIN_GROWTH * _size(v) or not _from_matmul(v):
                        continue
                    with ir.InsertionPoint(owner), owner.location:
                        bar = ir.Operation.create("stablehlo.optimization_barrier", results=[v.type], operands=[v])
                    owner.operands[i] = bar.result
                    stats.rewrites["barrier"] += 1


ISOLATE_OUTER = register(IsolateOuter())
