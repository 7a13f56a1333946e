"""`isolate-updates`: a matmul whose result feeds, through elementwise ops, two or more of the function's results
(Adam's update: the weight gradient `h.T @ g` makes the new parameter and both moments) gets an
`optimization_barrier` on its result, so that the update is an elementwise dispatch of its own.

IREE 3.13 fuses such an update into the matmul's dispatch as a multi-result epilogue; with data tiling its CPU codegen
then unpacks each further result as one too-large vector ("operations with large vector sizes", 4x8x16x16), the
compile fails, and stagec compiles the whole module again without data tiling: every matmul of the step then runs
unpacked (docs/log.md). Behind the barrier the matmul keeps its packed kernel and the update reads its result once.
An update with one result (SGD: `w - lr * g`) is left fused: IREE compiles that epilogue. So is a matmul contracting
fewer than `MIN_CONTRACTION` elements (a batch under 16): the step's products are then skinny, data tiling packs each
weight on every call for little reuse, and the unpacked module IREE falls back to was faster (128-4096-4096-10 b8
Adam: 322 ms unpacked, 470 ms data-tiled with the barrier; docs/log.md). Exact: a barrier changes no value.
"""
from __future__ import annotations

import math

from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from .irutil import func_blocks, tensor_type
from .outer import _dims

_MATMUL = ("stablehlo.dot_general", "stablehlo.dot")
ELEMENTWISE = frozenset(f"stablehlo.{n}" for n in (
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "negate", "abs", "sqrt", "rsqrt", "exponential",
    "log", "tanh", "logistic", "power", "select", "compare", "convert", "clamp", "sign"))
MIN_RESULTS = 2  # function results an update computes from the matmul, from which it gets a dispatch of its own
MIN_CONTRACTION = 16  # elements a matmul contracts (the batch, for a weight gradient), from which it does
# ... and the result's last two dimensions from which it does: the unpack that fails is a 64x128 tile as one vector;
# smaller results compile fused, and a barrier there only added a dispatch (32-128-10 b256 Adam: 171 -> 204 us)
MIN_TILE = (64, 128)


def _contracted(dot) -> int:
    """How many elements a matmul contracts (its lhs's contracting dimensions; unknown ones as 1)."""
    shape = tensor_type(dot.operands[0]).shape
    dims = _dims(dot, "lhs_contracting_dimensions") if dot.name == "stablehlo.dot_general" else [len(shape) - 1]
    return math.prod(max(shape[d], 1) for d in dims)


def _tiled(dot) -> bool:
    """Whether a matmul's result holds at least one `MIN_TILE` of rows (its lhs's free dimensions, which IREE
    collapses into one: a (8, 32, 128) @ (128, 512) product has 256 rows) by columns (its rhs's)."""
    shape = tensor_type(dot.results[0]).shape
    if dot.name != "stablehlo.dot_general":
        return len(shape) >= 2 and shape[-2] >= MIN_TILE[0] and shape[-1] >= MIN_TILE[1]
    lhs = tensor_type(dot.operands[0]).shape
    batch = len(_dims(dot, "lhs_batching_dimensions"))
    free = len(lhs) - batch - len(_dims(dot, "lhs_contracting_dimensions"))
    rows, cols = math.prod(shape[batch:batch + free]), math.prod(shape[batch + free:])
    return rows >= MIN_TILE[0] and cols >= MIN_TILE[1]


def _returned(dot) -> int:
    """How many distinct values in the elementwise cone of `dot`'s result (same-shape elementwise ops reading it,
    and so on) the function returns."""
    shape = tensor_type(dot.results[0]).shape
    cone, todo, found = set(), [dot.results[0]], set()
    while todo:
        v = todo.pop()
        for use in v.uses:
            op = use.owner
            if op.name == "func.return":
                found.add(use.operand_number)
            elif op.name in ELEMENTWISE and len(op.results) == 1 and op.operation not in cone and \
                    list(tensor_type(op.results[0]).shape) == list(shape):
                cone.add(op.operation)
                todo.append(op.results[0])
    return len(found)


class IsolateUpdates(Pass):
    name = "isolate-updates"
    kind, workaround = "workaround", Workaround("3.13", "tests/test_passes_updates.py::"
                                                       "test_adam_step_compiles_data_tiled")
    description = "a matmul feeding 2+ results through elementwise ops (Adam's update) ends its dispatch there"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in func_blocks(module):
            ops = list(block.operations)
            for i, op in enumerate(ops):
                if (op.name not in _MATMUL or len(op.results) != 1 or _contracted(op) < MIN_CONTRACTION
                        or not _tiled(op) or _returned(op) < MIN_RESULTS):
                    continue
                r = op.results[0]
                with ir.InsertionPoint(ops[i + 1]), op.location:
                    bar = ir.Operation.create("stablehlo.optimization_barrier", results=[r.type], operands=[r])
                r.replace_all_uses_with(bar.results[0])
                bar.operands[0] = r
                stats.rewrites["update-apart"] += 1


ISOLATE_UPDATES = register(IsolateUpdates())
