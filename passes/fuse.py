"""`fuse`: elementwise producer chains -> one `linalg.generic` whose body is `arith` / `math`.

A cluster is a root op plus the elementwise producers whose every use is inside the cluster.
Its inputs enter the generic as full-shape tensors (identity maps), as `broadcast_in_dim` operands
(projected maps, so the broadcast is never materialized) or as splat constants (inlined as
`arith.constant`). A `stablehlo.reduce` with one input and a one-op combiner takes its input's
cluster into a reduction `linalg.generic` (parallel and reduction iterators), so the elementwise
values never reach memory; a cheap cluster feeding several reductions is recomputed in each. A row
reduction of an expensive cluster that is also used elsewhere (softmax's `exp(x - max)`, summed and divided
by its sum) gets one generic with two results, the values and their reduction, so each value is computed once.

Where it applies was decided by measurement (docs/passes.md): clusters that read a reduction's
broadcast result (softmax, layernorm) are left to IREE, which fuses those better by itself, and
transcendental producers are never recomputed. At the CPU target's O3, IREE forms the same dispatches
as we do for every cluster except those reading a `reshape` (`sin(x.reshape(...)) + 1`: 2 dispatches
without us, 1 with), so the default pass, `fuse`, only rewrites clusters that read a reshape: anywhere
else it would cost compile time (~0.2 s the first time a process builds a generic, when the bindings
import their linalg module) and gain nothing. `fuse-all` rewrites every cluster. One more rewrite, on the CPU,
in both: reductions down the columns of values with common producers (a mean squared error and its gradient's
bias sum) become one generic (`_fuse_siblings`), where IREE gives each a dispatch and writes the values one
reads to memory in the other's. `fuse-narrowing` (the CPU's legalization, after `mathlib`) rewrites the
clusters that narrow float64 values inside, which IREE 3.13 cuts into dispatches at each narrowing op, and
`fuse-float64` float64 clusters of 64+ ops, whose shared values IREE 3.13 copies level after level.
Numerics: the scalar ops are the ones IREE's own StableHLO->linalg conversion produces, so results match the
unfused module up to reduction order.
"""
from __future__ import annotations

import numpy as np
from iree.compiler import ir

from . import bindings, mathlib, scalar_ops
from .base import Pass, PassStats, Workaround, register
from .irutil import func_blocks, is_op, make_constant, op_name, producer, reduced_dims, splat_value, tensor_type

MIN_OPS = 2  # elementwise clusters smaller than this are left to IREE
# The largest row whose values one generic computes with their reduction: IREE keeps a tile of rows of them on the
# stack (32 KiB at most); a float64 softmax over 1024 columns (4 rows of 8 KiB) exceeded it and did not compile.
MAX_ROW_BYTES = 4096


def _reads_reshape(members: list) -> bool:
    """Whether a cluster reads a `reshape`'s result: where IREE alone leaves the chain in two dispatches."""
    ids = {m.operation for m in members}
    return any((p := producer(v)) is not None and p.operation not in ids and op_name(p) == "reshape"
               for m in members for v in m.operands)


def _static(v: ir.Value, scalar: bool = False) -> bool:
    """A static, non-empty tensor (empty ones have nothing to fuse, and IREE warns on generics reading them); of
    rank 1 or more unless `scalar`."""
    t = tensor_type(v)
    return t.has_static_shape and (scalar or t.rank >= 1) and all(d > 0 for d in t.shape)


_BRANCHING = ("stablehlo.while", "stablehlo.if", "stablehlo.case")


def _blocks(module: ir.Module):
    """The functions' blocks and, within them, the blocks of loops and branches (not of reductions, sorts or
    scatters, whose bodies compute on scalars in StableHLO alone)."""
    work = list(func_blocks(module))
    while work:
        block = work.pop()
        yield block
        for op in block.operations:
            if op.name in _BRANCHING:
                work.extend(b for r in op.regions for b in r.blocks)


def _elementwise(op, shape, expanded: bool = False) -> bool:
    """`expanded`: after `mathlib` (the ops it left are IREE's to lower, as in a generic)."""
    return (op is not None and op_name(op) not in ("constant", "broadcast_in_dim", "reshape", "transpose")
            and not len(op.regions) and scalar_ops.supported(op)
            and (expanded or not mathlib.expands(op))  # (IREE's math.sin: wrong)
            and all(tensor_type(v).shape in (shape, []) for v in op.operands)
            and tensor_type(op.result).shape == shape)


def _grow(seeds: list, shape, expanded: bool = False, fits: dict | None = None) -> list:
    """Members of the cluster rooted at `seeds`, producers before users, all in the seeds' block (a loop's body
    reads values of the blocks around it). `fits`: producer -> whether it may join (its kind, shape and block), a
    caller's to share between clusters of one `shape` and block while the IR is unchanged."""
    members = {s.operation: s for s in seeds}
    block = seeds[0].operation.block
    work = list(seeds)
    if fits is None:
        fits = {}  # (asked again as each user joins)
    while work:  # a producer is (re)checked whenever one of its users joins
        m = work.pop()
        for v in m.operands:
            p = v.owner
            if type(p) is ir.Block:  # (an argument)
                continue
            po = p.operation  # (each dict lookup below hashes it: read once)
            if po in members:
                continue
            fit = fits.get(po)
            if fit is None:
                fit = fits[po] = po.block == block and _elementwise(p, shape, expanded)
            if not fit:
                continue
            if all(u.owner.operation in members for u in p.result.uses):
                members[po] = p
                work.append(p)
    order, placed = [], set()
    stack = [(s, False) for s in reversed(seeds)]
    while stack:  # iterative post-order over operands: a topological order of the members
        m, expanded = stack.pop()
        if m.operation in placed:
            continue
        if expanded:
            placed.add(m.operation)
            order.append(m)
            continue
        stack.append((m, True))
        for v in m.operands:
            p = producer(v)
            if p is not None and p.operation in members and p.operation not in placed:
                stack.append((members[p.operation], False))
    return order


def _input_map(v: ir.Value, rank: int, shape):
    """(tensor, affine map) through which value `v` enters a generic of `rank` loops."""
    dims = [ir.AffineDimExpr.get(i) for i in range(rank)]
    vt = tensor_type(v)
    if vt.rank == 0:
        return v, ir.AffineMap.get(rank, 0, [])
    b = is_op(v, "broadcast_in_dim")
    if b is not None and list(vt.shape) == list(shape):
        src = b.operands[0]
        st = tensor_type(src)
        if st.has_static_shape:
            bdims = list(ir.DenseI64ArrayAttr(b.attributes["broadcast_dimensions"]))
            exprs = [dims[d] if st.shape[i] == shape[d] else ir.AffineConstantExpr.get(0)
                     for i, d in enumerate(bdims)]
            return src, ir.AffineMap.get(rank, 0, exprs)
    return v, ir.AffineMap.get_identity(rank)


_PAR = "#linalg.iterator_type<parallel>"
_RED = "#linalg.iterator_type<reduction>"


def _collect(members: list, rank: int, shape, out_map):
    """(inputs, maps, splat constants, input index) of the generic computing `members`, or None when its
    maps would leave a loop without a bound (a reduction over dims that only broadcasts or splats span)."""
    member_ids = {m.operation for m in members}
    inputs, maps, consts = [], [], {}
    index: dict = {}  # input value -> position
    for m in members:
        for v in m.operands:
            p = producer(v)
            if (p is not None and p.operation in member_ids) or v in index or v in consts:
                continue
            s = splat_value(v)
            if s is not None:
                consts[v] = s
                continue
            src, amap = _input_map(v, rank, shape)
            index[v] = len(inputs)
            inputs.append(src)
            maps.append(amap)

    def covered() -> bool:
        used = {str(e) for m in [*maps, out_map] for e in m.results}
        return all(str(ir.AffineDimExpr.get(d)) in used for d in range(rank))
    if not covered():  # read one broadcast whole (materialized) so that every loop has an extent
        for v, i in index.items():
            if tensor_type(v).rank == rank and inputs[i] is not v:
                inputs[i], maps[i] = v, ir.AffineMap.get_identity(rank)
                break
        if not covered():
            return None
    return inputs, maps, consts, index


def _generic(members: list, rank: int, shape, outs: list, iterators: list[str], collected=None) -> ir.Operation:
    """Build the linalg.generic computing `members`: one result per `(init, map, combiner or None[, member])` of
    `outs`, each the member's value (default: the last member's), or that value folded into the result by the
    combiner (a reduction)."""
    member_ids = {m.operation for m in members}
    inputs, maps, consts, index = collected or _collect(members, rank, shape, outs[0][1])
    inits = [o[0] for o in outs]
    g = ir.Operation.create(
        "linalg.generic", results=[i.type for i in inits], operands=[*inputs, *inits],
        attributes={"indexing_maps": ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in [*maps, *(o[1] for o in outs)]]),
                    "iterator_types": ir.ArrayAttr.get([ir.Attribute.parse(i) for i in iterators]),
                    "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(inputs), len(inits)])},
        regions=1)
    block = g.regions[0].blocks.append(*[tensor_type(x).element_type for x in [*inputs, *inits]])
    with ir.InsertionPoint(block):
        env = {}

        def scalar(v):
            p = producer(v)
            if p is not None and p.operation in member_ids:
                return env[p.operation]
            if v in consts:
                return scalar_ops.scalar_constant(consts[v], tensor_type(v).element_type)
            return block.arguments[index[v]]
        for m in members:
            env[m.operation] = scalar_ops.emit(m, [scalar(v) for v in m.operands])
        results = []
        for i, (_, _, comb, *of) in enumerate(outs):  # (the value of member `of[0]`, else of the last member)
            value = env[(of[0] if of else members[-1]).operation]
            results.append(value if comb is None else scalar_ops.emit(comb, [block.arguments[len(inputs) + i], value]))
        ir.Operation.create("linalg.yield", results=[], operands=results)
    return g


_CHEAP = {"add", "subtract", "multiply", "maximum", "minimum", "negate", "abs", "compare", "select", "convert",
          "and", "or", "xor", "not"}


def _reduced_value(v: ir.Value) -> bool:
    """Whether `v` is (a broadcast or reshape of) a reduction's result: the normalization pattern
    (softmax, layernorm) that IREE fuses with the reduction itself, better than we would."""
    for _ in range(4):
        p = producer(v)
        if p is None:
            return False
        if p.name in ("stablehlo.reduce", "linalg.generic"):
            return True
        if op_name(p) not in ("broadcast_in_dim", "reshape"):
            return False
        v = p.operands[0]
    return False


def _reads_reduction(members: list) -> bool:
    ids = {m.operation for m in members}
    return any(_reduced_value(v) and tensor_type(v).rank >= 1 for m in members for v in m.operands
               if (p := producer(v)) is None or p.operation not in ids)


def _reduce_parts(op):
    """(combiner op, init value) for a reduce we can fuse into, else None."""
    if len(op.operands) != 2 or len(op.results) != 1 or not _static(op.operands[0]):
        return None
    body = list(op.regions[0].blocks[0].operations)
    args = list(op.regions[0].blocks[0].arguments)
    if len(body) != 2 or op_name(body[0]) not in scalar_ops.REDUCE_COMBINERS:
        return None
    comb = body[0]
    if list(comb.operands) != args or not scalar_ops.supported(comb):
        return None
    init = splat_value(op.operands[1])
    return None if init is None else (comb, init)


def _kill(op, dead: set) -> None:
    dead.add(hash(op.operation))  # recorded before erasing: the caller skips it in its op list
    op.operation.erase()


def _erase(members: list, dead: set) -> None:
    """Erase the fused ops, then the broadcasts and constants that only fed them."""
    ids = {m.operation for m in members}
    feeders = {}
    for m in members:
        for v in m.operands:
            p = producer(v)
            if p is not None and p.operation not in ids and op_name(p) in ("broadcast_in_dim", "constant"):
                feeders[p.operation] = p
    for m in reversed(members):  # members still used (by another reduction) stay
        if not len(list(m.result.uses)):
            _kill(m, dead)
    for p in feeders.values():
        if not any(len(list(r.uses)) for r in p.results):
            _kill(p, dead)


def _fuse_reduce(op, stats: PassStats, dead: set, everywhere: bool, rows: bool) -> bool:
    parts = _reduce_parts(op)
    if parts is None:
        return False
    comb, init = parts
    x = op.operands[0]
    p = producer(x)
    shape = tensor_type(x).shape
    if p is None or not _elementwise(p, shape):
        return False
    users = [u.owner for u in p.result.uses]
    shared = len(users) > 1
    if shared and not all(u.name == "stablehlo.reduce" and _reduce_parts(u) is not None for u in users):
        return rows and _fuse_reduce_keeping_value(op, p, comb, init, users, stats, dead)
    members = _grow([p], shape)
    if shared and any(op_name(m) not in _CHEAP for m in members):
        return False  # recomputing transcendental ops costs more than the pass over memory it saves
    if _reads_reduction(members) or not (everywhere or _reads_reshape(members)):
        return False
    rank = len(shape)
    red, out_map, iterators = _reduce_loops(op, rank)
    collected = _collect(members, rank, shape, out_map)
    if collected is None:
        return False
    with ir.InsertionPoint(op), op.location:
        out_init = make_constant(np.array(init), tensor_type(op.result))
        g = _generic(members, rank, shape, [(out_init, out_map, comb)], iterators, collected)
    _replace_reduce(op, g.results[0], members, stats, dead, "reduce")
    return True


def _reduce_loops(op, rank: int) -> tuple[set, ir.AffineMap, list[str]]:
    """A reduce's reduced dims, the map of its result in the generic's loops, and the loops' iterators."""
    red = set(reduced_dims(op))
    out_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d) for d in range(rank) if d not in red])
    return red, out_map, [_RED if d in red else _PAR for d in range(rank)]


def _replace_reduce(op, result: ir.Value, members: list, stats: PassStats, dead: set, rewrite: str) -> None:
    """`result` for the reduce `op`; erase it, its fused members and its init constant when unused."""
    init_op = producer(op.operands[1])
    op.results[0].replace_all_uses_with(result)
    _kill(op, dead)
    _erase(members, dead)
    if init_op is not None and not len(list(init_op.result.uses)):
        _kill(init_op, dead)
    stats.rewrites[rewrite] += 1
    stats.rewrites["ops-fused"] += len(members)


def _fuse_reduce_keeping_value(op, p, comb, init, users: list, stats: PassStats, dead: set) -> bool:
    """Softmax's `e = exp(x - max)`, used by `sum(e, -1)` and by `e / sum`: one generic computes each row's `e`
    and its sum. IREE, left alone, computes the exponentials twice, once for the sum and once for the division;
    this way they are computed once. Only on the CPU (Vulkan's codegen put the rows in workgroup memory and
    did not compile: 64 KiB of its 16 KiB), for rows (the last dimensions reduced, so that IREE keeps the
    consumer in the same dispatch; of an input that is not a transpose) and clusters holding a transcendental
    op (a cheap one is recomputed faster than it is stored)."""
    shape = tensor_type(p.result).shape
    rank = len(shape)
    red, out_map, iterators = _reduce_loops(op, rank)
    if rank < 2 or sorted(red) != list(range(rank - len(red), rank)) or sum(u.name == "stablehlo.reduce" for u in users) != 1:
        return False
    row = int(np.prod([shape[d] for d in red])) * (tensor_type(p.result).element_type.width // 8)
    members = _grow([p], shape)
    if row > MAX_ROW_BYTES or all(op_name(m) in _CHEAP for m in members):
        return False
    # Loop extents from the inputs and the reduced result only: IREE 3.13 ran a reduction whose dimension only the
    # values' output (a tensor.empty) spans over one element (softmax of an all-masked row under jit: 1.0 each).
    collected = _collect(members, rank, shape, out_map)
    if collected is None or any(is_op(v, "transpose") is not None for v in collected[0]):
        return False  # (down columns of the input: slower fused, measured)
    with ir.InsertionPoint(p), op.location:  # where `p` was: a user of `p` may come before the reduce
        value_init = ir.Operation.create("tensor.empty", results=[p.result.type], operands=[]).result
        red_init = make_constant(np.array(init), tensor_type(op.result))
        g = _generic(members, rank, shape, [(value_init, ir.AffineMap.get_identity(rank), None), (red_init, out_map, comb)],
                     iterators, collected)
    p.result.replace_all_uses_with(g.results[0])  # (p stays a member: erased with the others once unused)
    _replace_reduce(op, g.results[1], members, stats, dead, "reduce-keeping-value")
    return True


def _sibling_groups(block) -> list[list]:
    """The block's fusable reductions (`_reduce_parts`) of elementwise results, grouped by input shape, element
    type and reduced dimensions when those are leading ones (down columns): groups of two or more."""
    groups: dict = {}
    for op in block.operations:
        if op.name != "stablehlo.reduce" or _reduce_parts(op) is None:
            continue
        t = tensor_type(op.operands[0])
        dims = reduced_dims(op)
        if t.rank < 2 or dims != list(range(len(dims))) or len(dims) >= t.rank \
                or not _elementwise(producer(op.operands[0]), t.shape):
            continue
        groups.setdefault((tuple(t.shape), str(t.element_type), tuple(dims)), []).append(op)
    return [g for g in groups.values() if len(g) > 1]


def _reach(seed, shape) -> set:
    """The elementwise ops `seed`'s value is computed from (itself included)."""
    out, work = set(), [seed]
    while work:
        m = work.pop()
        if m.operation in out:
            continue
        out.add(m.operation)
        work += [p for v in m.operands if (p := producer(v)) is not None and _elementwise(p, shape)]
    return out


def _permuted(m: ir.AffineMap, perm: dict) -> ir.AffineMap:
    """`m` with each loop `d` renamed `perm[d]`."""
    return ir.AffineMap.get(m.n_dims, 0, [ir.AffineDimExpr.get(perm[e.position]) if isinstance(e, ir.AffineDimExpr)
                                          else e for e in m.results])


def _fuse_siblings(ops: list, stats: PassStats, dead: set) -> bool:
    """Reductions down the columns of values computed from common elementwise producers (a mean squared error and
    its gradient's bias sum, both from `d = x @ w + b - y`) -> one generic: each reduction, and each value also
    used elsewhere (the gradient itself), computed in one pass over the inputs. IREE gives each reduction a
    dispatch of its own, and the values one reads are written to memory by the other's and read back."""
    shape = tensor_type(ops[0].operands[0]).shape
    reaches = [_reach(producer(op.operands[0]), shape) for op in ops]
    chosen, union = [0], set(reaches[0])
    for i in range(1, len(ops)):  # (only reductions sharing producers with those chosen: else nothing is saved)
        if reaches[i] & union:
            chosen.append(i)
            union |= reaches[i]
    if len(chosen) < 2:
        return False
    ops = [ops[i] for i in chosen]
    seeds = list({(p := producer(op.operands[0])).operation: p for op in ops}.values())
    members, kept = _grow(seeds, shape), None
    while True:  # producers of the reductions used elsewhere too (returned, say) join as values kept beside them
        ids = {m.operation for m in members} | {op.operation for op in ops}
        now = [m for m in members if any(u.owner.operation not in ids for u in m.result.uses)]
        if len(now) > 2:  # (more full-size results than 2: not measured)
            break
        grown, kept = members, now
        extra = {p.operation: p for m in members for v in m.operands
                 if (p := producer(v)) is not None and p.operation not in ids and p.operation in union}
        if not extra:
            break
        seeds += list(extra.values())
        members = _grow(seeds, shape)
    if kept is None or _reads_reduction(grown):
        return False
    members = grown
    ids = {m.operation for m in members} | {op.operation for op in ops}
    rank = len(shape)
    red, out_map, iterators = _reduce_loops(ops[0], rank)
    collected = _collect(members, rank, shape, out_map)  # (not the kept values' map: `_fuse_reduce_keeping_value`)
    if collected is None:
        return False
    # One op must do it all: after every input is defined, before every use of what it replaces.
    block = ops[0].operation.block
    order = {op.operation: i for i, op in enumerate(block.operations)}
    first_use = min([order.get(u.owner.operation, -1) for m in kept for u in m.result.uses
                     if u.owner.operation not in ids] +
                    [order.get(u.owner.operation, -1) for op in ops for u in op.result.uses])
    defs = [order.get(p.operation, -1) for v in collected[0] if (p := producer(v)) is not None]
    last_def = max(defs, default=-1)
    if first_use <= last_def:
        return False
    ops_list = list(block.operations)
    before = ops_list[last_def + 1]
    # Loops in IREE's order, the kept dimensions first (IREE would interchange them so): the maps it compiles are
    # then these, which the CPU tuning spec's `columns` part matches (`tuning.sibling_maps`).
    order_ = [d for d in range(rank) if d not in red] + sorted(red)
    perm = {d: i for i, d in enumerate(order_)}
    inputs, maps, consts, index = collected
    collected = inputs, [_permuted(m, perm) for m in maps], consts, index
    iterators = [iterators[d] for d in order_]
    out_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(i) for i in range(rank - len(red))])
    with ir.InsertionPoint(before), ops[0].location:
        outs = [(ir.Operation.create("tensor.empty", results=[m.result.type], operands=[]).result,
                 _permuted(ir.AffineMap.get_identity(rank), perm), None, m) for m in kept]
        for op in ops:
            comb, init = _reduce_parts(op)
            outs.append((make_constant(np.array(init), tensor_type(op.result)), out_map, comb,
                         producer(op.operands[0])))
        g = _generic(members, rank, shape, outs, iterators, collected)
    for i, op in enumerate(ops):
        init_op = producer(op.operands[1])
        op.results[0].replace_all_uses_with(g.results[len(kept) + i])
        _kill(op, dead)
        if init_op is not None and not len(list(init_op.result.uses)):
            _kill(init_op, dead)
    for i, m in enumerate(kept):
        m.result.replace_all_uses_with(g.results[i])
    _erase(members, dead)
    stats.rewrites["sibling-reductions"] += len(ops)
    stats.rewrites["ops-fused"] += len(members)
    return True


def _fuse_elementwise(op, stats: PassStats, dead: set, everywhere: bool) -> bool:
    if len(op.results) != 1 or len(op.regions) or not _static(op.result):
        return False
    shape = tensor_type(op.result).shape
    if not _elementwise(op, shape):
        return False
    members = _grow([op], shape)
    if len(members) < MIN_OPS or not (everywhere or _reads_reshape(members)):
        # (each member's own cluster is a part of this one, too small or reading no reshape as well: not grown again;
        # a long chain was grown from each of its ops, quadratic in its length)
        dead.update(hash(m.operation) for m in members if m.operation != op.operation)
        return False
    if _reads_reduction(members):
        return False
    _replace(op, members, shape, dead, stats, "elementwise")
    return True


def _replace(op, members: list, shape, dead: set, stats: PassStats, kind: str, roots: list | None = None) -> None:
    """Replace the elementwise cluster `members` (rooted at `op`, of result `shape`; or at each of `roots`, the
    generic placed at `op`, after every member) by one `linalg.generic`."""
    rank, roots = len(shape), roots or [op]
    with ir.InsertionPoint(op), op.location:
        outs = [(ir.Operation.create("tensor.empty", results=[r.result.type], operands=[]).result,
                 ir.AffineMap.get_identity(rank), None, r) for r in roots]
        g = _generic(members, rank, shape, outs, [_PAR] * rank)
    for r, v in zip(roots, g.results):
        r.result.replace_all_uses_with(v)
    _erase(members, dead)
    stats.rewrites[kind] += 1
    stats.rewrites["ops-fused"] += len(members)


class Fuse(Pass):
    """`everywhere=False`: only the clusters IREE would leave split (those reading a reshape)."""

    def __init__(self, name: str, everywhere: bool, description: str, rows: bool = True):
        self.name, self.everywhere, self.description, self.rows = name, everywhere, description, rows

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in func_blocks(module):
            self._block(block, stats)

    def _block(self, block, stats: PassStats) -> None:
        dead: set = set()
        if self.rows:  # (the groups are apart: one's rewrite erases nothing of another)
            for group in _sibling_groups(block):
                _fuse_siblings(group, stats, dead)
        snapshot = [(hash(op.operation), op) for op in block.operations]  # hashed while all are alive
        for h, op in reversed(snapshot):  # users before producers
            if h in dead:  # erased by an earlier rewrite: not to be touched
                continue
            if op.name == "stablehlo.reduce":
                _fuse_reduce(op, stats, dead, self.everywhere, self.rows)
            elif op.name.startswith("stablehlo."):
                _fuse_elementwise(op, stats, dead, self.everywhere)


def _narrows(op) -> bool:
    """A float64 operand and a result of 8 to 32 bits: what IREE 3.13's dispatch creation takes for a bit-truncating op
    (isBitTruncateOp), which it fuses into no consumer of two operands or more."""
    return (any(str(tensor_type(v).element_type) == "f64" for v in op.operands)
            and str(tensor_type(op.result).element_type) in ("f32", "f16", "bf16", "i32", "i16", "i8"))


class FuseNarrowing(Pass):
    """`fuse-narrowing`: an elementwise cluster that narrows float64 values inside (mathlib's float32 expansions in
    float64 arithmetic) -> one `linalg.generic`. IREE 3.13 fuses a bit-truncating op (float64 in, float32 or int32
    out) into no consumer of two operands or more, nor one of several uses, so such a cluster became several
    dispatches whose float64 values went to memory: float32 betaln, 13 dispatches writing and reading 160 MB per 1M
    elements (docs/log.md 2026-11-26). Runs after `mathlib` (the CPU's legalization): the ops it left are IREE's
    own, the same scalar ops in a generic."""
    name = "fuse-narrowing"
    description = "elementwise clusters narrowing float64 values inside (mathlib's) -> one linalg.generic"
    kind = "workaround"
    workaround = Workaround("3.13", "tests/test_passes_fuse.py::test_float32_betaln_is_one_dispatch")

    rewrite = "narrowing"

    @staticmethod
    def hint(op) -> bool:
        """Whether `op` may belong to a cluster this pass takes (no such op in a block: its clusters are not grown)."""
        return _narrows(op)

    @staticmethod
    def takes(members: list, roots: list) -> bool:
        """Whether the cluster `members` (of results `roots`) becomes a generic. Where it does not, neither does any
        of its members' own clusters (each a part of it): those are not grown again."""
        ids = {r.operation for r in roots}
        return any(_narrows(m) for m in members if m.operation not in ids)  # (a narrowing root: a dispatch's output)

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in _blocks(module):
            if not any(op.name.startswith("stablehlo.") and len(op.results) == 1 and not len(op.regions)
                       and _static(op.result, True) and self.hint(op) for op in block.operations):
                continue  # (no candidate: no cluster to fuse; most modules, without growing each op's cluster)
            dead: set = set()
            snapshot = [(hash(op.operation), op) for op in block.operations]
            # (each op's place in the block: members are ops of the snapshot, whose order rewrites keep)
            where = {op.operation: i for i, (_, op) in enumerate(snapshot)}
            # shape -> `_grow`'s fits, shared by the clusters grown until a rewrite changes the block (most clusters
            # are not taken: a module's float64 ops were each asked ~8 times, a third of the pass's time)
            fits: dict = {}
            for h, op in reversed(snapshot):  # users before producers: the root first
                if h not in dead and op.name.startswith("stablehlo."):
                    self._cluster(op, stats, dead, where, fits)

    def _cluster(self, op, stats: PassStats, dead: set, where: dict, fits: dict) -> None:
        if len(op.results) != 1 or len(op.regions) or not _static(op.result, True):
            return
        shape = tensor_type(op.result).shape
        if not _elementwise(op, shape, True):
            return
        roots = _complex_parts(op, shape) or [op]
        members = _grow(roots, shape, True, fits.setdefault(tuple(shape), {}))
        if not self.takes(members, roots) or _bound_inputs(members, shape) > bindings.LIMIT:
            ids = {r.operation for r in roots}
            dead.update(hash(m.operation) for m in members if m.operation not in ids)
            return
        members.sort(key=lambda m: where[m.operation])  # (the order written: 4% faster float32 gammaln than _grow's)
        _replace(members[-1], members, shape, dead, stats, self.rewrite, roots)
        fits.clear()  # (ops erased and made: what was asked of them is not known of the new block)


def _bound_inputs(members: list, shape) -> int:
    """The buffers IREE binds to the dispatch of a cluster's generic: the values it reads from outside (constants
    aside), but of more than one element only those IREE fuses no producer of (arguments, results of ops that are not
    elementwise: a loop's). The runtime binds at most 32 a dispatch: a float64 sum of 40 arguments' terms (one
    generic of 40 inputs) failed to load; float64 gammainc and gammaincc of scalars (IREE fuses none of a scalar
    generic's producers) made one of 33 and failed at the first call. Left as ops, IREE forms its own dispatches and
    `bound-bindings` cuts the scalars' runs."""
    ids = {m.operation for m in members}
    scalar = int(np.prod(shape)) <= 1
    return len({v for m in members for v in m.operands
                if (p := producer(v)) is None or (p.operation not in ids and p.name != "stablehlo.constant"
                                                  and (scalar or not _elementwise(p, shape, True)))})


def _complex_parts(op, shape) -> list | None:
    """The producers of the two parts of the one `complex` op reading `op` (one of them), where both are elementwise
    and read by it alone: one cluster with two results (apart, the values both parts share, as mathlib's complex
    division's scales, would belong to neither cluster)."""
    use = next(iter(op.result.uses), None)
    if use is None or len(list(op.result.uses)) != 1 or use.owner.name != "stablehlo.complex":
        return None
    parts = [producer(v) for v in use.owner.operands]
    if (any(p is None or p.operation.block != op.operation.block or not _elementwise(p, shape, True)
            or len(list(p.result.uses)) != 1 for p in parts)
            or parts[0].operation == parts[1].operation):
        return None
    return parts


MIN_FLOAT64 = 64  # the smallest float64 cluster `fuse-float64` takes


def _float64(op) -> bool:
    return str(tensor_type(op.result).element_type) == "f64"


class FuseFloat64(FuseNarrowing):
    """`fuse-float64`: a float64 elementwise cluster of `MIN_FLOAT64` ops or more (mathlib's double-double power, its
    float64 kernels) -> one `linalg.generic`. IREE 3.13's `FuseMultiUseElementwiseProducerPass` fuses a producer of
    several uses into its consumer with a copy of its body, again at each level of a graph whose values are shared
    (Dekker's splits): float64 `gamma(...) ** 0.5` grew from 232 multiplications to a generic of 2,749, and the
    `HoistIntoGlobalsPass` after it took 3.5 s; float64 `random.ball` compiled for 65 s. One generic is one op to
    it. Runs after `mathlib` (the CPU's legalization): the same scalar ops IREE would emit."""
    name = "fuse-float64"
    description = f"float64 elementwise clusters of {MIN_FLOAT64}+ ops (mathlib's kernels) -> one linalg.generic"
    kind = "workaround"
    workaround = Workaround("3.13", "tests/test_passes_fuse.py::test_float64_power_after_gamma_is_not_copied_by_iree")
    rewrite = "float64"
    hint = staticmethod(_float64)

    @staticmethod
    def takes(members: list, roots: list) -> bool:
        return len(members) >= MIN_FLOAT64 and any(_float64(m) for m in members)


FUSE = register(Fuse("fuse", False, "elementwise chains (and the reductions they feed) reading a reshape -> one "
                                    "linalg.generic with an arith/math body, where IREE alone leaves them split"))
FUSE_CHAINS = register(Fuse("fuse-chains", False, "fuse's chains alone: no sibling reductions, no reductions "
                                                  "keeping their input (GPU targets)", rows=False))
FUSE_ALL = register(Fuse("fuse-all", True, "every elementwise chain (and the reductions it feeds) -> one "
                                          "linalg.generic with an arith/math body"))
FUSE_NARROWING = register(FuseNarrowing())
FUSE_FLOAT64 = register(FuseFloat64())
