"""`isolate-batch-sums`: a value read only by a sum over its leading dimension and by one matmul (the first layer's
`dz`: the bias gradient sums it over the batch, the weight gradient `x.T @ dz` contracts it) gets an
`optimization_barrier`, so that its producer's dispatch stores it as it is.

Without it IREE 3.13 fuses the sum and the packing of the matmul's operand (data tiling) into one dispatch that keeps
a 32-column strip of the whole batch on the stack: 128 bytes a row (b1024: 128 KiB, b4096: 512 KiB), over the CPU
target's 64 KiB limit past `MAX_ROWS` rows (seen from `MIN_COLUMNS` columns), and the compile fails and is retried
with a 1 MiB limit (a second full compile; past 8192 rows that fails too and the module is compiled without data tiling). Behind the barrier the
sum and the pack read the stored value, as they do where two matmuls read it (a hidden layer's `dz`); the step's CPU
time is the same (docs/log.md). Exact: a barrier changes no value.
"""
from __future__ import annotations

from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from .irutil import func_blocks, reduced_dims, tensor_type, through_barrier
from .outer import _dims
from .updates import _MATMUL

MAX_ROWS = 512  # rows a fused sum-and-pack keeps within 64 KiB of stack (128 bytes a row)
# ... and the columns from which it was seen to fuse them: 640x256, 1024x256 and 1024x512 failed; 1024x128 and 1024x32
# (10-32-32-1 b1024) compiled fused within the limit, and a barrier there only adds a dispatch
MIN_COLUMNS = 256


def _contracts_leading(dot, v: ir.Value) -> bool:
    """Whether matmul `dot` contracts the leading dimension of its operand `v`."""
    if dot.name != "stablehlo.dot_general":
        return False
    side = "lhs" if dot.operands[0] == v else "rhs"
    return _dims(dot, f"{side}_contracting_dimensions") == [0]


def _batch_sum_and_matmul(v: ir.Value) -> bool:
    users = [u.owner for u in v.uses]
    sums = [u for u in users if u.name == "stablehlo.reduce" and reduced_dims(u) == [0]]
    dots = [u for u in users if u.name in _MATMUL and _contracts_leading(u, v)]
    return len(sums) >= 1 and len(dots) == 1 and len(sums) + len(dots) == len(users)


class IsolateBatchSums(Pass):
    name = "isolate-batch-sums"
    kind, workaround = "workaround", Workaround("3.13", "tests/test_passes_activations.py::"
                                                       "test_relu_step_compiles_within_the_stack_limit")
    description = "a value summed over its leading dimension and read by one matmul is stored (the pack stays apart)"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in func_blocks(module):
            ops = list(block.operations)
            for i, op in enumerate(ops):
                if len(op.results) != 1 or op.name == "stablehlo.optimization_barrier":
                    continue
                v = op.results[0]
                if not isinstance(v.type, ir.RankedTensorType) or len(shape := tensor_type(v).shape) != 2 \
                        or shape[0] <= MAX_ROWS or shape[1] < MIN_COLUMNS or not _batch_sum_and_matmul(v):
                    continue
                through_barrier(v, op)
                stats.rewrites["sum-apart"] += 1


ISOLATE_BATCH_SUMS = register(IsolateBatchSums())
