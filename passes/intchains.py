"""`fuse-int-chains`: long chains of integer elementwise ops (threefry's unrolled rounds) -> one `linalg.generic`.

A random sampler's hash is ~120 integer ops (add, xor, shifts, or) per 20 rounds, all of one shape. Given as that many
StableHLO ops, IREE's global passes and its elementwise fusion cost ~0.13 s of CPU per hash (a gamma sampler holds 7-11
of them); given as one generic whose body is `arith`, about half (docs/log.md, 2026-11-26 kern helper). A chain is a
connected set of such ops of one shape and element type, in one block (loop bodies too), of at least `MIN_OPS` ops;
the values read outside it become the generic's results (a hash has two: its words). Unsigned tensors enter and leave
through `bitcast_convert` (arith is signless). Integer arithmetic is exact: the bits are the same. Only modules with
`MIN_MODULE_OPS` such ops (about 3 hashes: beta, poisson, ...) are rewritten, a lone float32 `normal` is not (a
module where mathlib expands a float64 or complex128 op is: `_kernels64`); but chains in a loop body are: there IREE
gives each carried value a chain computes a dispatch of its own (gamma's one-hash loop, `random._gamma_lanes`: 10
dispatches, 3 fused; a jitted `poisson(k, 3.0, (100,))` 0.76-0.82 -> 0.61-0.71 s CPU).
"""
from __future__ import annotations

from iree.compiler import ir

from . import mathlib
from .base import Pass, PassStats, register
from .fuse import _PAR, _collect
from .irutil import op_name, producer, splat_value, tensor_type

MIN_OPS = 48  # smaller chains are left to IREE (a hash is ~120 ops; index arithmetic a few)
# A module's chains are fused only where they hold this many ops (about 3 hashes): the first generic a process
# builds imports the bindings' linalg module (~0.15 s of CPU), more than one or two hashes save.
MIN_MODULE_OPS = 300
_BINARY = {"add": "arith.addi", "subtract": "arith.subi", "multiply": "arith.muli", "and": "arith.andi",
           "or": "arith.ori", "xor": "arith.xori", "shift_left": "arith.shli", "shift_right_logical": "arith.shrui"}
_SHIFTS = ("shift_left", "shift_right_logical")


def _kernels64(module: ir.Module) -> bool:
    """Whether `mathlib` expands a float64 or complex128 op of `module`. Those kernels are generics (`fuse-float64`: the
    linalg import is paid), and IREE 3.13 copied the hashes left as StableHLO ops into their dispatches: complex128
    asin of two `normal` draws compiled in 11 s, 5.0 with its two hashes fused, power 4.5 -> 2.4 (docs/log.md,
    2026-11-27, fourteenth session)."""
    found = []

    def visit(op):  # (`expands` holds only for a ranked tensor operand)
        if mathlib.expands(op) and str(tensor_type(op.operands[0].type).element_type) in ("f64", "complex<f64>"):
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    return bool(found)


def _int_type(t) -> ir.IntegerType | None:
    try:
        it = ir.IntegerType(t)
    except ValueError:
        return None
    return it if it.width in (32, 64) else None


def _member(op) -> bool:
    """An op a chain may hold: a binary integer op (or `not`) on static tensors of its result's shape and type
    (splats and broadcasts too), a shift only by a constant below the width (arith's shifts are poison past it)."""
    name = op_name(op)
    if not op.name.startswith("stablehlo.") or (name not in _BINARY and name != "not") or len(op.results) != 1:
        return False
    t = tensor_type(op.result)
    if not t.has_static_shape or t.rank < 1 or _int_type(t.element_type) is None:
        return False
    for v in op.operands:
        vt = tensor_type(v)
        if vt.element_type != t.element_type or (list(vt.shape) != list(t.shape) and splat_value(v) is None):
            return False
    if name in _SHIFTS:
        s = splat_value(op.operands[1])
        return s is not None and 0 <= int(s) < t.element_type.width
    return True


def _blocks(op):
    for region in op.regions:
        for block in region.blocks:
            yield block
            for inner in block.operations:
                yield from _blocks(inner)


def _chains(block) -> list[list]:
    """The chains of `block`: members in block order, each chain of one shape and element type."""
    ops = [op for op in block.operations if _member(op)]
    index = {op.operation: i for i, op in enumerate(ops)}
    parent = list(range(len(ops)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for i, op in enumerate(ops):
        for v in op.operands:
            p = producer(v)
            j = index.get(p.operation) if p is not None else None
            if j is not None and tensor_type(p.result) == tensor_type(op.result):
                parent[find(i)] = find(j)
    groups: dict = {}
    for i, op in enumerate(ops):
        groups.setdefault(find(i), []).append(op)
    return [g for g in groups.values() if len(g) >= MIN_OPS]


def _signless(t: ir.RankedTensorType) -> ir.RankedTensorType:
    it = ir.IntegerType(t.element_type)
    return t if it.is_signless else ir.RankedTensorType.get(t.shape, ir.IntegerType.get_signless(it.width),
                                                            loc=ir.Location.unknown())


def _bitcast(v: ir.Value, t: ir.RankedTensorType) -> ir.Value:
    if v.type == t:
        return v
    return ir.Operation.create("stablehlo.bitcast_convert", results=[t], operands=[v]).result


def _fuse(chain: list, stats: PassStats) -> int | None:
    """Replace `chain` by one generic placed at its last op; or, where something outside it reads a member before
    that op (a loop between two hashes), the position of the first such reader (the caller cuts the chain there)."""
    ids = {m.operation for m in chain}
    # (positions taken afresh: the bindings may hand out new objects for ops once others were erased)
    position = {op.operation: i for i, op in enumerate(chain[-1].operation.block.operations)}
    last = position[chain[-1].operation]
    roots, cut = [], None  # members read outside the chain (each read after the chain's last op)
    for m in chain:
        outside = [u.owner for u in m.result.uses if u.owner.operation not in ids]
        if outside:
            for o in outside:
                while o.operation not in position and o.parent is not None:  # (a reader in a nested region: its
                    o = o.parent  # ancestor in this block)
                p = position.get(o.operation, -1)
                if p <= last:
                    cut = p if cut is None else min(cut, p)
            roots.append(m)
    if cut is not None:
        return cut if cut > position[chain[0].operation] else -1
    t = tensor_type(chain[-1].result)
    st, rank, shape = _signless(t), t.rank, list(t.shape)
    elem = st.element_type
    with ir.InsertionPoint(chain[-1]), chain[-1].location:
        identity = ir.AffineMap.get_identity(rank)
        inputs, maps, consts, index = _collect(chain, rank, shape, identity)  # (the identity output covers every loop)
        inputs = [_bitcast(src, _signless(tensor_type(src))) for src in inputs]
        consts = {v: int(c) for v, c in consts.items()}
        inits = [ir.Operation.create("tensor.empty", results=[st], operands=[]).result for _ in roots]
        g = ir.Operation.create(
            "linalg.generic", results=[st] * len(roots), operands=[*inputs, *inits],
            attributes={"indexing_maps": ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in
                                                           [*maps, *[identity] * len(roots)]]),
                        "iterator_types": ir.ArrayAttr.get([ir.Attribute.parse(_PAR)] * rank),
                        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(inputs), len(inits)])},
            regions=1)
        block = g.regions[0].blocks.append(*[elem] * (len(inputs) + len(inits)))
        with ir.InsertionPoint(block):
            env, made, width = {}, {}, elem.width

            def scalar(v):
                p = producer(v)
                if p is not None and p.operation in ids:
                    return env[p.operation]
                if v in consts:
                    c = consts[v] % (1 << width)
                    return constant(c - (1 << width) if c >= 1 << (width - 1) else c)
                return block.arguments[index[v]]

            def constant(c):
                if c not in made:
                    made[c] = ir.Operation.create("arith.constant", results=[elem],
                                                  attributes={"value": ir.IntegerAttr.get(elem, c)}).result
                return made[c]
            for m in chain:
                args = [scalar(v) for v in m.operands]
                if op_name(m) == "not":  # (x xor all-ones)
                    args.append(constant(-1))
                name = _BINARY.get(op_name(m), "arith.xori")
                env[m.operation] = ir.Operation.create(name, results=[elem], operands=args).result
            ir.Operation.create("linalg.yield", results=[], operands=[env[r.operation] for r in roots])
    with ir.InsertionPoint(chain[-1]), chain[-1].location:
        outs = [_bitcast(g.results[i], t) for i in range(len(roots))]
    # (after the chain's last op: its readers all come later)
    for r, out in zip(roots, outs):
        r.result.replace_all_uses_with(out)
    for m in reversed(chain):
        m.operation.erase()
    stats.rewrites["chains"] += 1
    stats.rewrites["ops-fused"] += len(chain)
    return None


class FuseIntChains(Pass):
    name = "fuse-int-chains"
    description = ("chains of >= 48 integer elementwise ops (a random sampler's hash) -> one linalg.generic: IREE "
                   "compiles them in about half the time")

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        found = [(block, chains) for fn in module.body.operations for block in list(_blocks(fn))
                 if (chains := _chains(block))]
        if sum(len(c) for _, chains in found for c in chains) < MIN_MODULE_OPS and not _kernels64(module):
            # (a loop body's chains still: see the docstring)
            found = [(block, chains) for block, chains in found if block.owner.operation.name != "func.func"]
        for _, work in found:
            while work:
                chain = work.pop()
                at = {m.operation: i for i, m in enumerate(chain[-1].operation.block.operations)}
                cut = _fuse(chain, stats)
                if cut is not None and cut >= 0:
                    work += [part for part in ([m for m in chain if at[m.operation] < cut],
                                               [m for m in chain if at[m.operation] >= cut])
                             if len(part) >= MIN_OPS]


register(FuseIntChains())
