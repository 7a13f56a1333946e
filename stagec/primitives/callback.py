"""`callback`: a call from compiled code out to a Python function (debug printing, pure and io callbacks).

The module imports the function (`lowering.import_host_function`) and calls it with `func.call`; the runtime
links a Python VM module that converts the buffer views to NumPy arrays, calls it, and converts the results.
"""
from __future__ import annotations

from typing import Callable, Sequence

from .. import lowering as L
from ..core import Primitive, ShapedArray


class HostFunction:
    """A Python function called from compiled code: takes and returns NumPy arrays.

    `kind` is "debug", "pure" or "io"; compared by identity (each call site is its own function)."""

    __slots__ = ("fn", "name", "result_avals", "kind", "ordered")

    def __init__(self, fn: Callable, name: str, result_avals: Sequence[ShapedArray], kind: str, ordered: bool):
        self.fn, self.name, self.result_avals = fn, name, tuple(result_avals)
        self.kind, self.ordered = kind, bool(ordered)

    def __repr__(self):
        return f"{self.kind}_callback({self.name})"

    def __lt__(self, other):  # params are sorted by name; a graph holds at most one per equation
        return id(self) < id(other)


def _callback_rule(*args: ShapedArray, callback: HostFunction) -> list[ShapedArray]:
    return list(callback.result_avals)


callback_p = Primitive("callback", _callback_rule, multiple_results=True)


@callback_p.def_lowering
def _callback_lower(ctx: L.Ctx, *args, callback: HostFunction):
    """A `func.call` of the imported function. A callback with side effects (debug, io) also takes the token
    of the previous one its block can see and returns a new one, so that IREE keeps them in program order."""
    ir = L.mlir()
    effect = callback.kind != "pure"
    symbol = L.import_host_function(callback.fn, callback.name, ctx.avals_in, ctx.avals_out, effect)
    results, operands = [L.tensor_type(a) for a in ctx.avals_out], list(args)
    if effect:
        tokens, block = L.effect_tokens(), ir.InsertionPoint.current.block
        operands.append(_visible_token(tokens, block))
        results.append(operands[-1].type)
    op = ir.Operation.create("func.call", results=results, operands=operands,
                             attributes={"callee": ir.FlatSymbolRefAttr.get(symbol)})
    outs = list(op.results)
    if effect:
        tokens.append((block, outs.pop()))
    return outs


def _visible_token(tokens: list, block):
    """The latest token defined in `block` or a block enclosing it; else a new constant one."""
    ir = L.mlir()
    enclosing = []
    b = block
    while b is not None:
        enclosing.append(b)
        owner = b.owner  # the op whose region holds b
        b = owner.operation.block if owner is not None and owner.operation.parent is not None else None
    for blk, tok in reversed(tokens):
        if any(blk == e for e in enclosing):
            return tok
    i1 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(1))
    return ir.Operation.create("stablehlo.constant", results=[i1], attributes={
        "value": ir.DenseElementsAttr.get_splat(i1, ir.BoolAttr.get(False))}).result


def callback(fn: HostFunction, *args) -> list:
    """Call `fn.fn` on the values of `args` from compiled code; returns its results (avals `fn.result_avals`)."""
    return callback_p.bind(*args, callback=fn)


# ---------------------------------------------------------------- batching rules

import numpy as np  # noqa: E402

from ._batch import at_front, axis_size  # noqa: E402


@callback_p.def_batch
def _callback_batch(args, dims, *, callback: HostFunction):
    """One call out to Python for the whole batch, which calls the function once per example (JAX's
    `vmap_method="sequential"`) and stacks the results."""
    n = axis_size(args, dims)
    batched = [d is not None for d in dims]
    fn = callback.fn

    def per_example(*values):
        outs = [fn(*[v[i] if b else v for v, b in zip(values, batched)]) for i in range(n)]
        return [np.stack([o[k] for o in outs]) for k in range(len(callback.result_avals))]

    hf = HostFunction(per_example, callback.name, [a.update(shape=(n,) + a.shape) for a in callback.result_avals],
                      callback.kind, callback.ordered)
    outs = callback_p.bind(*[at_front(x, d, n) if d is not None else x for x, d in zip(args, dims)], callback=hf)
    return outs, [0] * len(outs)
