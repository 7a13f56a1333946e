"""`recompute-activations`: a matmul whose activation the backward pass reads in several pieces (gelu's `z`, `z*z`,
`tanh(...)`, `1 + tanh(...)`, `z/2`) gets its activation recomputed in the backward pass from `z` alone, and a barrier
after `z`, so that the matmul's dispatch returns one array.

IREE 3.13 fuses the activation into the forward matmul's dispatch, and every piece the backward pass reads is one more
result of that dispatch; with data tiling its CPU codegen unpacks each further result as one too-large vector
("operations with large vector sizes"), the compile fails, and stagec compiles the whole module again without data
tiling (64-256-256-10 b1024 gelu: 6 results). Rewritten: the matmul returns `z` (a barrier), the activation is an
elementwise dispatch of its own returning what the next matmul reads, and the backward pass reads `z` and the
gradient through one two-operand barrier (a value CSE cannot merge with the forward's, so the recomputation stays)
and recomputes the pieces from them; where the gradient it reads is an elementwise function of one value that later
ops read too (`-dh` and `dh`), that value goes through the barrier and the function is recomputed after it (else
the product making `dh` returns both: 64-256-256-10 b1024 gelu MSE). The same values, op for op: exact. Activations whose backward pass reads one
piece (relu after `compare-clamped`, tanh's `h`) are left alone, as are matmuls under `updates`' size thresholds.
"""
from __future__ import annotations

from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from .irutil import func_blocks, producer, tensor_type
from .updates import _MATMUL, ELEMENTWISE, MIN_CONTRACTION, _contracted, _tiled

MIN_PIECES = 2  # values of the activation the rest of the function reads, from which it is recomputed
_FREE = ("stablehlo.constant", "stablehlo.broadcast_in_dim")  # operands an activation may read besides `z`


def _elementwise(op, shape) -> bool:
    return op.name in ELEMENTWISE and len(op.results) == 1 and list(tensor_type(op.results[0]).shape) == shape


def _free(v: ir.Value) -> bool:
    op = producer(v)
    return op is None or op.name in _FREE


def _chain_end(v: ir.Value, shape) -> ir.Value:
    """`v` through the elementwise ops that are its only use (the bias add): the pre-activation `z`."""
    while True:
        uses = list(v.uses)
        if len(uses) != 1 or not _elementwise(uses[0].owner, shape):
            return v
        v = uses[0].owner.results[0]


def _cone(z: ir.Value, shape, at: dict) -> list:
    """The activation: the elementwise ops computed from `z` and free values only, in block order (`at`)."""
    cone, members, todo = [], {z}, [z]
    while todo:
        for use in list(todo.pop().uses):
            op = use.owner
            if op.operation in cone or not _elementwise(op, shape):
                continue
            if all(o in members or _free(o) for o in op.operands):
                cone.append(op.operation)
                members.add(op.results[0])
                todo.append(op.results[0])
    return sorted(cone, key=lambda o: at[o])


def _kept(cone: list) -> list:
    """The ops of `cone` that stay in the matmul's dispatch: IREE moves an op whose every user is an elementwise op
    outside the cone (the backward pass's) into that user's dispatch, and then its operands are read there."""
    kept = list(cone)
    while True:
        inside = set(kept)
        moved = [c for c in kept if all(u.owner.operation not in inside and u.owner.name in ELEMENTWISE
                                         for u in c.results[0].uses)]
        if not moved:
            return kept
        kept = [c for c in kept if c not in moved]


def _pieces(z: ir.Value, kept: list) -> int:
    """How many values of `z` and `kept` ops something outside `kept` reads (the dispatch's results)."""
    inside = set(kept)
    return sum(any(u.owner.operation not in inside for u in v.uses) for v in [z, *(c.results[0] for c in kept)])


def _copies(ops: list, copy: dict, before) -> dict:
    """Clones of `ops` before the op `before`, reading `copy[v]` for each operand v in `copy`; `copy` gains each
    clone's result under its original's."""
    for c in ops:
        new = c.clone(ip=ir.InsertionPoint(before))
        for i, o in enumerate(c.operands):
            if o in copy:
                new.operands[i] = copy[o]
        copy[c.results[0]] = new.results[0]
    return copy


class RecomputeActivations(Pass):
    name = "recompute-activations"
    kind, workaround = "workaround", Workaround("3.13", "tests/test_passes_activations.py::"
                                                       "test_gelu_step_compiles_data_tiled")
    description = "an activation the backward pass reads in 2+ pieces (gelu) is recomputed there from the matmul's z"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in func_blocks(module):
            for op in [o for o in block.operations if o.name in _MATMUL]:  # (a rewrite erases elementwise ops only)
                if len(op.results) != 1 or _contracted(op) < MIN_CONTRACTION or not _tiled(op):
                    continue
                shape = list(tensor_type(op.results[0]).shape)
                at = {o.operation: i for i, o in enumerate(block.operations)}
                z = _chain_end(op.results[0], shape)
                cone = _cone(z, shape, at)
                if _pieces(z, _kept(cone)) >= MIN_PIECES and self._recompute(block, z, cone):
                    stats.rewrites["recompute"] += 1

    @staticmethod
    def _recompute(block: ir.Block, z: ir.Value, cone: list) -> bool:
        inside = set(cone)
        zdef = producer(z)
        ops = list(block.operations)
        at = {o.operation: i for i, o in enumerate(ops)}
        # the backward pass: elementwise ops outside the cone reading z or the cone
        readers = {u.owner.operation for v in [z, *(c.results[0] for c in cone)] for u in v.uses
                   if u.owner.operation not in inside and u.owner.name in ELEMENTWISE}
        if not readers or zdef is None:
            return False
        first = min(readers, key=lambda o: at[o])
        grad = next((o for o in first.operands if o != z and producer(o) is not None
                     and producer(o).operation not in inside and not _free(o)), None)
        outer = [o for c in cone for o in c.operands if producer(o) is not None and producer(o).operation not in inside
                 and o != z]
        if grad is None or any(at[producer(o).operation] >= at[first] for o in outer):
            return False  # (a value the copies read is defined after the first reader)
        # The gradient as an elementwise function of one value (`-dh`) that later ops read too (`dh`): that value
        # goes through the barrier and the function is recomputed after it (else the matmul making `dh` returns both)
        root, chain, shape = grad, [], list(tensor_type(grad).shape)
        while (p := producer(root)) is not None and _elementwise(p, shape) \
                and len(nonfree := [o for o in p.operands if not _free(o)]) == 1:
            root, chain = nonfree[0], [p, *chain]
        later = lambda u: at.get(u.owner.operation, -1) >= at[first]
        if chain and not all(later(u) or u.owner.operation in {c.operation for c in chain} for u in root.uses):
            root, chain = grad, []
        with zdef.location:
            # the matmul's dispatch returns z: a barrier after it, read by the forward and the backward pass
            with ir.InsertionPoint(ops[at[zdef.operation] + 1]):
                zb = ir.Operation.create("stablehlo.optimization_barrier", results=[z.type], operands=[z]).results[0]
            z.replace_all_uses_with(zb)
            zb.owner.operands[0] = z
            # the backward pass reads (z, gradient) through one barrier and recomputes the cone from them
            with ir.InsertionPoint(first):
                late = [u for v in {root, grad} for u in v.uses if later(u)]
                pair = ir.Operation.create("stablehlo.optimization_barrier", results=[zb.type, root.type],
                                           operands=[zb, root])
                g = _copies(chain, {root: pair.results[1]}, first)
                for u in late:
                    u.owner.operands[u.operand_number] = g[u.owner.operands[u.operand_number]]
                copy = _copies(cone, {zb: pair.results[0]}, first)
        for r in readers:
            for i, o in enumerate(r.operands):
                if o in copy:
                    r.operands[i] = copy[o]
        # the forward's ops nothing reads now, the gradient's chain, and the copies nothing reads
        for c in [*reversed(cone), *reversed(chain), *reversed([producer(v) for v in copy.values() if producer(v)
                                                                 is not None and producer(v).name != "stablehlo.optimization_barrier"])]:
            if not any(True for _ in c.results[0].uses):
                c.operation.erase()
        return True


RECOMPUTE_ACTIVATIONS = register(RecomputeActivations())
