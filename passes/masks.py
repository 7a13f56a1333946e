"""`compare-clamped`: a float compare `x > c` beside `max(x, c)` compares the max instead (`x < c` beside `min(x, c)`
the min): relu's mask in the backward pass then reads the activation, not the value before it.

The gradient of `relu(x @ w + b)` needs `x @ w + b > 0`. Read from the pre-activation, the forward matmul's dispatch
returns two arrays (the pre-activation and the relu), and IREE 3.13's data-tiled CPU codegen fails on that epilogue
("operations with large vector sizes", b1024 256-512-512): the compile is retried without data tiling and every
matmul of the module runs unpacked (a training step 36 -> 26 ms of CPU time with the rewrite, docs/log.md). Read
from the max, the matmul returns one array. Exact, NaN and signed zeros included: `max(x, c) > c` iff `x > c` (a
NaN propagates through the max and compares false either way; max(-0, +0) is +0, not > +0 nor > -0).
"""
from __future__ import annotations

from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from .irutil import func_blocks, is_float, splat_value

# compare direction -> (op, the compare's operand it clamps): x > c beside max(x, c), c < x beside max(c, x);
# x < c beside min(x, c), c > x beside min(c, x)
_CLAMPS = {"GT": (("stablehlo.maximum", 0), ("stablehlo.minimum", 1)),
           "LT": (("stablehlo.maximum", 1), ("stablehlo.minimum", 0))}


def _same(a: ir.Value, b: ir.Value) -> bool:
    """Whether `a` and `b` are one value, or constants splatting the same float (bits included)."""
    if a == b:
        return True
    sa, sb = splat_value(a), splat_value(b)
    return sa is not None and sb is not None and a.type == b.type and repr(float(sa)) == repr(float(sb))


def _clamp_of(x: ir.Value, c: ir.Value, name: str):
    """An op `name`(x, c) or `name`(c, x) among the users of `x`, or None."""
    for use in x.uses:
        op = use.owner
        if op.name == name and len(op.operands) == 2 and op.results[0].type == x.type:
            a, b = op.operands
            if (a == x and _same(b, c)) or (b == x and _same(a, c)):
                return op
    return None


def _direction(op) -> str:
    return str(op.attributes["comparison_direction"]).split()[-1].rstrip(">")


def _float_compare(op) -> bool:
    t = op.attributes["compare_type"] if "compare_type" in op.attributes else None
    return is_float(op.operands[0]) and (t is None or str(t).split()[-1].rstrip(">") == "FLOAT")


class CompareClamped(Pass):
    name = "compare-clamped"
    kind, workaround = "workaround", Workaround("3.13", "tests/test_passes_masks.py::"
                                                       "test_relu_step_compiles_data_tiled")
    description = "a float compare x > c beside max(x, c) compares the max (relu's mask reads the activation)"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in func_blocks(module):
            ops = list(block.operations)
            at = {o.operation: i for i, o in enumerate(ops)}
            for op in ops:
                if op.name != "stablehlo.compare" or not _float_compare(op):
                    continue
                for name, which in _CLAMPS.get(_direction(op), ()):
                    x, c = op.operands[which], op.operands[1 - which]
                    clamp = _clamp_of(x, c, name)
                    if clamp is None or clamp.operation not in at:
                        continue
                    if at[clamp.operation] > at[op.operation]:
                        # (after the compare: moved just before it, if its operands are defined there; a constant
                        # equal to the compare's but made after it is not)
                        if any(not isinstance(v.owner, ir.Block) and at.get(v.owner.operation, -1) > at[op.operation]
                               for v in clamp.operands):
                            continue
                        clamp.operation.move_before(op)
                        at[clamp.operation] = at[op.operation] - 0.5
                    op.operands[which] = clamp.results[0]
                    stats.rewrites["compare-" + name.removeprefix("stablehlo.")] += 1
                    break


COMPARE_CLAMPED = register(CompareClamped())
