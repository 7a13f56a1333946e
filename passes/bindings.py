"""Keep every dispatch under the runtime's binding limit: cut long runs of scalar ops with barriers.

IREE's `FormScalarDispatches` puts all the scalar ops (tensors of at most one element) that lie between
two non-scalar uses into one dispatch, without bound on its results; the runtime then refuses a dispatch
with more than 32 bindings when the module is loaded ("binding count 48 > 32"). A function with many
independent scalar results (a vmap over scalars, a jit returning 40 numbers) hits it. `bound_bindings`
walks each function body and, where a run of scalar ops would read and write more than `LIMIT` buffers,
routes every value crossing the cut through one `stablehlo.optimization_barrier`: IREE neither pulls
ops across it nor fuses past it. Runs after every pipeline (it is legalization, not optimization).
"""
from __future__ import annotations

from iree.compiler import ir

from .irutil import func_blocks, producer, through_barrier

LIMIT = 24  # bindings (inputs + results) of one run of scalar ops; the runtime's limit is 32
WINDOW = 1024  # scalar ops a run is scanned past its last prefix within the limit (float64 poch's grad: 387 at 12)
_NOT_COMPUTE = {"stablehlo.constant", "stablehlo.optimization_barrier", "stablehlo.while", "stablehlo.if",
                "stablehlo.case", "stablehlo.custom_call", "func.return", "func.call"}


def _small(t: ir.Type) -> bool:
    if not isinstance(t, ir.RankedTensorType):
        try:
            t = ir.RankedTensorType(t)
        except ValueError:
            return False
    return t.has_static_shape and t.rank <= 1 and all(d <= 1 for d in t.shape)


def _scalar(op) -> bool:
    """An op IREE would place in a scalar dispatch: a computation on tensors of at most one element."""
    return (op.name not in _NOT_COMPUTE and op.name.split(".")[0] in ("stablehlo", "chlo", "linalg", "tensor")
            and len(op.results) > 0 and all(_small(v.type) for v in [*op.operands, *op.results]))


def _owner(use) -> ir.Operation:
    o = use.owner
    return getattr(o, "operation", o)


def _cut(before, group: list, later: set) -> None:
    """Insert a barrier before op `before` carrying each value of `group` used by an op of `later` (and the
    group's last result, so that IREE's backward walk stops there), and make those uses read it."""
    crossing = [r for g in group for r in g.results
                if any(_owner(u) in later for u in r.uses) or (g is group[-1] and r == g.results[0])]
    with ir.InsertionPoint(before), before.location:
        bar = ir.Operation.create("stablehlo.optimization_barrier", results=[v.type for v in crossing],
                                  operands=crossing)
    for v, nv in zip(crossing, bar.results):
        for use in list(v.uses):
            if _owner(use) in later:
                _owner(use).operands[use.operand_number] = nv


def _fusable(op) -> bool:
    """An op IREE may fuse into an elementwise dispatch: a scalar op (`_scalar`), or one whose results all have one
    static shape that each operand has too or broadcasts to (a scalar, or `broadcast_in_dim`'s)."""
    if _scalar(op):
        return True
    if op.name in _NOT_COMPUTE or op.name.split(".")[0] not in ("stablehlo", "chlo") or not op.results or op.regions:
        return False
    types = [v.type for v in (*op.results, *op.operands)]
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape for t in types):
        return False
    shape = types[0].shape
    return (all(ir.RankedTensorType(r.type).shape == shape for r in op.results)
            and (op.name == "stablehlo.broadcast_in_dim"
                 or all(ir.RankedTensorType(v.type).shape == shape or _small(v.type) for v in op.operands)))


def _runs(ops: list, limit: int, member=_scalar) -> list:
    """(index of the op before which a cut goes, the group of scalar ops the cut closes) per cut. A run's bindings
    are its inputs from outside and its results read outside it (a chain of 100 scalar ops with one result read
    later has two): counting every result cut a scalar threefry hash (125 ops) into 6 dispatches. A run is cut
    after its longest prefix within `limit`, not its first over it: values live inside a run are no bindings, and
    a cut where many are live makes each one an input of the next run (float64 gamma of one element: one dispatch
    of 2 bindings uncut; cut at its first prefix over 24, a dispatch of 18)."""
    scalars = [(i, op) for i, op in enumerate(ops) if member(op)]
    runnable = {op for _, op in scalars}
    cuts, start = [], 0
    while start < len(scalars):
        best, members, ext, outs, kept = start + 1, set(), set(), set(), 0
        for j in range(start, len(scalars)):
            op = scalars[j][1]
            ext |= {v for v in op.operands
                    if (p := producer(v)) is None or (p.operation not in members and p.name != "stablehlo.constant")}
            kept += sum(1 for r in op.results if any(_owner(u) not in runnable for u in r.uses))
            if len(ext) + kept > limit or j - best > WINDOW:  # (inputs, and results read by no scalar op, only grow)
                break
            members.add(op)
            outs -= {v for v in op.operands if v in outs and all(_owner(u) in members for u in v.uses)}
            outs |= {r for r in op.results if any(True for _ in r.uses)}
            if len(ext) + len(outs) <= limit:
                best = j + 1
        if best == len(scalars):
            break
        cuts.append((scalars[best][0], [op for _, op in scalars[start:best]]))
        start = best
    return cuts


def bound_bindings(module: ir.Module, limit: int = LIMIT, member=_scalar) -> int:
    """Cut the runs of scalar ops (or of the ops `member` accepts) of `module`'s functions that would exceed `limit`
    bindings; returns the number of barriers inserted."""
    n = 0
    with module.context:
        for block in func_blocks(module):
            ops = [op.operation for op in block.operations]
            for i, group in reversed(_runs(ops, limit, member)):  # (from the last: a cut's uses are the later ops')
                _cut(ops[i], group, set(ops[i:]))
                n += 1
    return n


def bound_elementwise_bindings(module: ir.Module, limit: int) -> int:
    """`bound_bindings` over runs of elementwise ops (`_fusable`), not only scalar ones."""
    return bound_bindings(module, limit, _fusable)


def scalar_uses_apart(module: ir.Module, uses: int = 3) -> int:
    """Each result of a scalar op (`_scalar`) of a function's body read `uses` times or more comes through an
    `optimization_barrier` (a CUDA retry, before `bound_elementwise_bindings`: IREE split a long scalar run itself
    and one of its dispatches wrote 17-21 values read by the others: a scalar sine's gradient at 1e10, vmap of 40
    unary and binary functions over one element). Loop and branch bodies are left, as `bound_bindings` leaves them.
    The count rewritten."""
    n = 0
    with module.context:
        for block in func_blocks(module):
            for op in [op.operation for op in block.operations]:
                if not _scalar(op):
                    continue
                for r in op.results:
                    if len(list(r.uses)) >= uses:
                        through_barrier(r, op)
                        n += 1
    return n
