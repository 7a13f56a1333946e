"""`lanes-batched`: N alike computations whose results are concatenated, each reading its own equal slice of one
array (attention written as a Python loop over heads) -> one computation batched over the N lanes.

IREE 3.13 fuses a slice into its reader with the offsets as constants, so lanes alike but for their slices' offsets
are compiled as separate executables (8 heads: 41 executables, 24 of them copies of slices). Batched, the lanes are
one set of dispatches. The slices become one reshape and transpose of the range they cover; the concatenation one
transpose and reshape (`fold-movement`, next, merges the moves). Each lane computes what it did, as a batch element
of the same ops (products and reductions over the same elements).

Matched from the `concatenate` back, lane by lane in lockstep: the ops at each step must have one name, attributes
and (for reductions) bodies; a value all lanes share stays unbatched; the leaves are `slice`s of one array at offsets
evenly spaced along one axis, and small constants (a lane's own scale: stacked). A concatenation of several runs of
alike lanes (the gradients of q, k and v: 3 runs of 8 heads) is batched run by run, in one plan. A lane's value read outside the lanes (a gradient reading the forward
pass) is read from the batched value, cut out: the batched ops go before the concatenation where every such reader
comes after it, else before the lanes' first op where all they read is defined before it. Anything else leaves the
lanes alone.
"""
from __future__ import annotations

import math

import numpy as np
from iree.compiler import ir

from .base import Pass, PassStats, register
from .irutil import constant_value, dtype_of, func_blocks, make_constant, producer, splat_value, tensor_type
from .movement import _ints
from .packing import dot_dims
from .widen import ELEMENTWISE

_ELEMENTWISE = ELEMENTWISE | {"stablehlo.convert", "stablehlo.exponential_minus_one", "stablehlo.popcnt",
                              "stablehlo.shift_left", "stablehlo.shift_right_arithmetic",
                              "stablehlo.shift_right_logical", "stablehlo.bitcast_convert"}
_LAYOUT = ("stablehlo.reshape", "stablehlo.transpose", "stablehlo.broadcast_in_dim", "stablehlo.slice",
           "stablehlo.concatenate")
_BATCHED = _ELEMENTWISE | {*_LAYOUT, "stablehlo.reduce", "stablehlo.dot_general"}  # (the ops `_op` batches)
_I64 = ir.DenseI64ArrayAttr
MAX_CONSTANT = 1 << 16  # elements of the stacked constants lanes differ in (more: left alone)
MAX_DEPTH = 200  # ops from a lane's end back to its slices (further: left alone; the match and the emission recurse)


class _NoMatch(Exception):
    pass


def _batched(t, n: int) -> ir.RankedTensorType:
    t = tensor_type(t)
    return ir.RankedTensorType.get([n, *t.shape], t.element_type)


def _alike(ops: list) -> bool:
    """Whether `ops` have one name, result types and attributes, and bodies of the same structure."""
    a = ops[0]
    if not all(o.name == a.name and [r.type for r in o.results] == [r.type for r in a.results]
               and len(o.regions) == len(a.regions) for o in ops[1:]):
        return False
    attrs = _attrs(a)  # (attributes are uniqued: equal ones are one object, compared by identity)
    return attrs is not None and all(_attrs(o) == attrs for o in ops[1:]) and (
        not a.regions or all(_same_bodies(a, o) for o in ops[1:]))


def _attrs(op) -> dict | None:
    """An op's attributes by name; None where the bindings cannot wrap one (a complex constant's value: TypeError,
    and reading it as a named attribute aborted the process)."""
    try:
        return {k: op.attributes[k] for k in op.attributes}
    except TypeError:
        return None


def _same_bodies(a, b) -> bool:
    body = lambda op: [str(o) for r in op.regions for blk in r.blocks for o in blk.operations]
    return body(a) == body(b)


class _Lanes:
    """The plan of one concatenate's lanes: `node(values)` -> ("shared", v) | ("slices", ...) | ("constants", ...)
    | ("op", ops, nodes), memoized by the lanes' values; raises _NoMatch where they are not alike."""

    def __init__(self, n: int):
        self.n, self.memo, self.ops = n, {}, []

    def node(self, vals: tuple, depth: int = 0):
        if vals not in self.memo:
            if depth > MAX_DEPTH:
                raise _NoMatch
            self.memo[vals] = self._node(vals, depth)
        return self.memo[vals]

    def _node(self, vals: tuple, depth: int):
        if all(v == vals[0] for v in vals):
            return ("shared", vals[0])
        ops = [producer(v) for v in vals]
        if all(op is not None and op.name == "stablehlo.constant" for op in ops):
            return self._constants(vals)  # (one constant may be read by several lanes)
        if any(op is None for op in ops) or len({op.operation for op in ops}) != len(ops):
            raise _NoMatch  # (arguments of the function, or one op in two lanes)
        ops = [op.operation for op in ops]
        if any(len(op.results) != 1 for op in ops):
            raise _NoMatch
        if ops[0].name == "stablehlo.slice" and all(o.name == "stablehlo.slice" for o in ops):
            leaf = self._slices(ops)
            if leaf is not None:
                return leaf
        if not _alike(ops):
            raise _NoMatch
        op, name = ops[0], ops[0].name
        if name == "stablehlo.iota":
            return ("shared", vals[0])
        if name not in _BATCHED:
            raise _NoMatch
        nodes = [self.node(tuple(o.operands[i] for o in ops), depth + 1) for i in range(len(op.operands))]
        batched = [nd[0] != "shared" for nd in nodes]
        if not any(batched):
            return ("shared", vals[0])  # (the same op of the same values in every lane)
        lane = tensor_type(op.results[0]).shape
        k = len(op.operands) // 2
        if ((name in _ELEMENTWISE and any(tensor_type(v).shape != lane for v in op.operands))  # (a clamp's scalar bounds)
                or (name == "stablehlo.reduce" and (not all(batched[:k]) or any(batched[k:])))  # (initial values batched)
                or (name == "stablehlo.dot_general" and not all(batched) and dot_dims(op).get(("lhs", "batching")))):
            raise _NoMatch
        self.ops.extend(ops)
        return ("op", ops, nodes)

    def _constants(self, vals: tuple):
        """Shared where equal, else ("constants", stacked array, type) where small (a lane's own scale or offset)."""
        if len({v.type for v in vals}) != 1 or isinstance(tensor_type(vals[0]).element_type, ir.ComplexType):
            raise _NoMatch  # (complex values the bindings cannot read)
        if all(producer(v).attributes["value"] == producer(vals[0]).attributes["value"] for v in vals):
            return ("shared", vals[0])
        arrays = [constant_value(v, MAX_CONSTANT) for v in vals]
        t = tensor_type(vals[0])
        if any(a is None for a in arrays) or math.prod(t.shape) * len(vals) > MAX_CONSTANT:
            raise _NoMatch
        return ("constants", np.stack([np.broadcast_to(a, t.shape) for a, _ in arrays]), t)

    def _slices(self, ops: list):
        """The leaf where `ops` slice one array at offsets evenly spaced along one axis, else None."""
        src = ops[0].operands[0]
        if any(o.operands[0] != src for o in ops):
            return None
        starts = [_ints(o.attributes["start_indices"]) for o in ops]
        limits = [_ints(o.attributes["limit_indices"]) for o in ops]
        if any(s != 1 for o in ops for s in _ints(o.attributes["strides"])):
            return None
        axes = [a for a in range(len(starts[0])) if len({s[a] for s in starts}) > 1]
        if len(axes) != 1 or any(lim[b] - s[b] != limits[0][b] - starts[0][b] or (b != axes[0] and s[b] != starts[0][b])
                                 for s, lim in zip(starts, limits) for b in range(len(s))):
            return None
        a, w = axes[0], limits[0][axes[0]] - starts[0][axes[0]]
        step = starts[1][a] - starts[0][a]
        if (step < w or any(s[a] != starts[0][a] + i * step for i, s in enumerate(starts))
                or starts[0][a] + len(ops) * step > tensor_type(src).shape[a]):
            return None  # (overlapping, not evenly spaced, or the last step past the end)
        return ("slices", src, a, step, starts[0], limits[0])


def _emit(node, plan: _Lanes, memo: dict) -> ir.Value | None:
    """The batched value of `node` (lane first), or None for a shared one; inserted at the current point."""
    if node[0] == "shared":
        return None
    if id(node) in memo:
        return memo[id(node)]
    n = plan.n
    if node[0] == "constants":
        out = make_constant(node[1], _batched(node[2], n))
    elif node[0] == "slices":
        _, src, a, step, start, limit = node
        et, w = tensor_type(src).element_type, limit[a] - start[a]
        lim = list(limit)
        lim[a] = start[a] + n * step
        shape = [hi - lo for lo, hi in zip(start, lim)]
        v = _slice(src, shape, start, lim, et)  # (the range the lanes cover, cut into rows of `step`, lanes first)
        split = shape[:a] + [n, step] + shape[a + 1:]
        v = _create("stablehlo.reshape", [v], ir.RankedTensorType.get(split, et))
        perm = [a] + [d for d in range(len(split)) if d != a]
        out = _create("stablehlo.transpose", [v], ir.RankedTensorType.get([split[d] for d in perm], et),
                      permutation=_I64.get(perm))
        if step != w:  # (the first `w` of each row)
            full = [split[d] for d in perm]
            cut = list(full)
            cut[a + 1] = w
            out = _slice(out, cut, [0] * len(full), cut, et)
    else:
        out = _op(node, plan, memo)
    memo[id(node)] = out
    return out


def _slice(v: ir.Value, shape: list, start: list, limit: list, et) -> ir.Value:
    return _create("stablehlo.slice", [v], ir.RankedTensorType.get(shape, et), start_indices=_I64.get(list(start)),
                   limit_indices=_I64.get(list(limit)), strides=_I64.get([1] * len(start)))


def _create(name: str, operands: list, ty: ir.Type, **attrs) -> ir.Value:
    return ir.Operation.create(name, results=[ty], operands=operands, attributes=attrs).result


def _spread(v: ir.Value, n: int) -> ir.Value:
    """A shared operand of an elementwise op, batched: a splat constant of the batched shape, else a broadcast."""
    t = _batched(v.type, n)
    splat = splat_value(v)
    if splat is not None and dtype_of(v) is not None:
        return make_constant(np.array(splat, dtype_of(v)), t)
    return _create("stablehlo.broadcast_in_dim", [v], t,
                   broadcast_dimensions=_I64.get(list(range(1, tensor_type(v).rank + 1))))


def _op(node, plan: _Lanes, memo: dict) -> ir.Value:
    _, ops, nodes = node
    n, op = plan.n, ops[0]
    args = [_emit(nd, plan, memo) for nd in nodes]
    shared = [nd[1] if nd[0] == "shared" else None for nd in nodes]
    out_t = _batched(op.results[0].type, n)
    name, attrs = op.name, _attrs(op)
    shift = lambda key: _I64.get([d + 1 for d in _ints(attrs[key])])
    if name in _ELEMENTWISE:
        args = [a if a is not None else _spread(s, n) for a, s in zip(args, shared)]
    elif name == "stablehlo.reshape":
        pass
    elif name == "stablehlo.transpose":
        attrs["permutation"] = _I64.get([0] + [d + 1 for d in _ints(attrs["permutation"])])
    elif name == "stablehlo.broadcast_in_dim":
        attrs["broadcast_dimensions"] = _I64.get([0] + [d + 1 for d in _ints(attrs["broadcast_dimensions"])])
    elif name == "stablehlo.slice":
        for key, first in (("start_indices", 0), ("limit_indices", n), ("strides", 1)):
            attrs[key] = _I64.get([first] + _ints(attrs[key]))
    elif name == "stablehlo.concatenate":
        args = [a if a is not None else _spread(s, n) for a, s in zip(args, shared)]
        attrs["dimension"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(
            ir.IntegerAttr(attrs["dimension"]).value) + 1)
    elif name == "stablehlo.reduce":
        attrs["dimensions"] = shift("dimensions")
    elif name == "stablehlo.dot_general":
        return _dot(op, args, shared, attrs, out_t, n)
    operands = [a if a is not None else s for a, s in zip(args, shared)]
    new = op.clone(ir.InsertionPoint.current)  # (keeps a reduction's body)
    for i, v in enumerate(operands):
        new.operands[i] = v
    for r, rop in zip(new.results, op.results):
        r.set_type(_batched(rop.type, n))
    for key, val in attrs.items():
        new.attributes[key] = val
    return new.results[0]


def _dot(op, args: list, shared: list, attrs: dict, out_t, n: int) -> ir.Value:
    """A batched dot_general: both operands batched (a new batch dimension, first), or one of them, of a product
    with no batch dimensions (the lanes a free dimension of that operand; moved first)."""
    d = dot_dims(op)
    get = lambda side, kind: d.get((side, kind), [])
    lb, rb, lc, rc = get("lhs", "batching"), get("rhs", "batching"), get("lhs", "contracting"), get("rhs", "contracting")
    up = lambda dims: [x + 1 for x in dims]
    lhs, rhs = (a if a is not None else s for a, s in zip(args, shared))
    if args[0] is not None and args[1] is not None:
        lb, rb, lc, rc, perm = [0] + up(lb), [0] + up(rb), up(lc), up(rc), None
    elif args[0] is not None:
        lc, perm = up(lc), None
    else:
        rc = up(rc)
        lhs_free = tensor_type(op.operands[0]).rank - len(lc)
        perm = [lhs_free] + [i for i in range(out_t.rank) if i != lhs_free]
    dims = ir.Attribute.parse(
        f"#stablehlo.dot<lhs_batching_dimensions = {lb}, rhs_batching_dimensions = {rb}, "
        f"lhs_contracting_dimensions = {lc}, rhs_contracting_dimensions = {rc}>")
    shape = list(out_t.shape)
    if perm is not None:  # (lhs free dimensions, the lanes, rhs free dimensions)
        inv = [perm.index(i) for i in range(len(perm))]
        shape = [shape[i] for i in inv]
    keep = {k: v for k, v in attrs.items() if k != "dot_dimension_numbers"}
    v = _create("stablehlo.dot_general", [lhs, rhs], ir.RankedTensorType.get(shape, out_t.element_type),
                dot_dimension_numbers=dims, **keep)
    if perm is not None:
        v = _create("stablehlo.transpose", [v], out_t, permutation=_I64.get(perm))
    return v


def _plan(vals: tuple) -> tuple | None:
    """(plan, tops) for the concatenated `vals` as runs of alike lanes: all of them, else the fewest equal runs
    that match (q, k and v's gradients, 8 heads each: 3 runs of 8); None where none does."""
    n = len(vals)
    for g in [g for g in range(n, 1, -1) if n % g == 0]:
        runs = [vals[i:i + g] for i in range(0, n, g)]
        if any(len({str(v.type) for v in run}) != 1 for run in runs):
            continue
        plan = _Lanes(g)
        try:
            tops = [plan.node(run) for run in runs]
        except _NoMatch:
            continue
        nodes = plan.memo.values()
        if (all(top[0] == "op" for top in tops) and any(nd[0] == "slices" for nd in nodes)
                and any(nd[0] == "op" and nd[1][0].name not in _LAYOUT for nd in nodes)):
            return plan, tops  # (lanes of data movement alone are `fold-movement`'s)
    return None


def _where(root, plan: _Lanes, outside: list):
    """Where the batched ops go: before the concatenation where every lane value read elsewhere is read after it;
    else before the lanes' first op, where everything they read from outside them is defined before it; else None."""
    block = root.block
    pos = {hash(o.operation): k for k, o in enumerate(block.operations)}
    if any(user.block != block for *_, user, _ in outside):
        return None
    if all(pos[hash(user)] > pos[hash(root)] for *_, user, _ in outside):
        return root
    first = min(plan.ops, key=lambda op: pos[hash(op)])
    for node in plan.memo.values():
        if node[0] in ("shared", "slices"):
            op = producer(node[1])
            if op is not None and op.operation.block == block and pos[hash(op.operation)] > pos[hash(first)]:
                return None
    return first


def _batch(root, erased: set) -> bool:
    vals = tuple(root.operands)
    axis = int(ir.IntegerAttr(root.attributes["dimension"]).value)
    if len(vals) < 2 or not all(tensor_type(v).has_static_shape for v in vals):
        return False
    found = _plan(vals)
    if found is None:
        return False
    plan, tops = found
    inside = {*plan.ops, root}
    outside = [(node, i, op, u.owner.operation, u.operand_number) for node in plan.memo.values() if node[0] == "op"
               for i, op in enumerate(node[1]) for u in op.results[0].uses if u.owner not in inside]
    at = _where(root, plan, outside)
    if at is None:
        return False
    with ir.InsertionPoint(at), root.location:
        memo, parts = {}, []
        for top in tops:
            v = _emit(top, plan, memo)
            t = tensor_type(v)  # (lanes, lane...): the lanes next to the axis, then merged with it
            shape = list(t.shape)
            perm = list(range(1, axis + 1)) + [0] + list(range(axis + 1, t.rank))
            v = _create("stablehlo.transpose", [v], ir.RankedTensorType.get([shape[p] for p in perm], t.element_type),
                        permutation=_I64.get(perm))
            merged = shape[1:]
            merged[axis] *= plan.n
            parts.append(_create("stablehlo.reshape", [v], ir.RankedTensorType.get(merged, t.element_type)))
        v = parts[0] if len(parts) == 1 else _create(
            "stablehlo.concatenate", parts, root.results[0].type,
            dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), axis))
        for node, i, op, user, k in outside:  # (lane i of the batched value, where read after the concatenation)
            b = memo[id(node)]
            bt = tensor_type(b)
            cut = _slice(b, [1, *bt.shape[1:]], [i] + [0] * (bt.rank - 1), [i + 1, *bt.shape[1:]], bt.element_type)
            user.operands[k] = _create("stablehlo.reshape", [cut], op.results[0].type)
    root.results[0].replace_all_uses_with(v)
    for op in [root, *plan.ops[::-1]]:  # (readers first; the leaves' slices are left to dce)
        if not list(op.results[0].uses):
            erased.add(hash(op))
            op.erase()
    return True


class LanesBatched(Pass):
    name = "lanes-batched"
    description = "alike computations on evenly spaced slices of one array, concatenated -> one batched computation"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        for block in func_blocks(module):
            erased: set = set()  # (the hashes of ops a rewrite erased: their pointers)
            for h, op in [(hash(o.operation), o.operation) for o in block.operations
                          if o.operation.name == "stablehlo.concatenate"]:
                if h not in erased and _batch(op, erased):
                    stats.rewrites["lanes"] += 1


register(LanesBatched())
