"""Batching: `vmap`, as JAX's (Autodidax's `BatchTrace`).

A `BatchTrace` holds, for each value of the batched function, the array with every example stacked
along one axis (`BatchTracer.val`) and which axis that is (`bdim`); its tracers show one example's shape.
Each primitive applied to a batched value goes to its batching rule, registered beside the primitive in
`stagec.primitives` with JAX's convention:

    rule(batched_args, batch_dims, **params) -> (out, out_dim)      # lists for multiple results

where a batch dim is an axis, or None for a value that is the same for every example. Unbatched values
stay plain values, so Python control flow on them still works. A primitive without a rule falls back to
a loop over the batch (`lax.map`: one loop in the module); every primitive stagec emits has a rule.

Control flow batches its sub-graphs: `cond` with a batched predicate runs every branch and selects per
example; `while` with a batched condition runs while any example's condition holds, and only the
examples whose condition holds take each step (both as JAX does); `scan` batches its body once, the batch
axis of stacked xs and ys after the scanned one. Those rules live here because
they run the batching machinery on their sub-graphs.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

from . import lax, tree_util
from .core import (Graph, Primitive, ShapedArray, TracerBase, aval_of, eval_graph, flatten_outputs,
                   trace_subgraph, tracing)
from .errors import ConcretizationTypeError, TracerArrayConversionError, UnexpectedTracerError
from .primitives._batch import at_front, axis_size, example_shape, moveaxis
from .primitives.control_flow import _split_caps, cond_p, scan_p, while_p

__all__ = ["vmap", "BatchTrace", "BatchTracer"]


class BatchTracer(TracerBase):
    """One example of a batched value: `val` holds all of them along axis `bdim`."""

    __slots__ = ("_trace", "val", "bdim", "_aval")

    def __init__(self, trace: BatchTrace, val, bdim: int):
        self._trace, self.val, self.bdim, self._aval = trace, val, bdim, None

    @property
    def aval(self) -> ShapedArray:
        if self._aval is None:
            a = aval_of(self.val)
            self._aval = a.update(shape=example_shape(self.val, self.bdim))
        return self._aval

    def __repr__(self):
        return f"BatchTracer<{self.aval!r}, batched along axis {self.bdim} of {aval_of(self.val).str_short()}>"

    __str__ = __repr__

    def _concretization_error(self, what: str, cls=ConcretizationTypeError) -> Exception:
        return cls(f"Abstract tracer value encountered where concrete value is expected: {self}\n"
                   f"The problem arose with the `{what}` function: under vmap ({self._trace.fun_desc}) this value "
                   f"differs from one example to the next, so Python cannot branch on it or convert it. Use "
                   f"stagec.numpy.where or stagec.lax.cond / while_loop, which batch.")

    def __array__(self, dtype=None, copy=None):
        raise TracerArrayConversionError(
            f"The numpy.ndarray conversion method __array__() was called on {self} under vmap "
            f"({self._trace.fun_desc}): use stagec.numpy (snp) functions instead of numpy (np) ones inside "
            f"the batched function.")


class BatchTrace:
    """Sends each primitive applied to its tracers to the primitive's batching rule."""

    level = 0  # set when entered

    def __init__(self, size: int, fun_desc: str = "a function"):
        self.size, self.fun_desc, self.active = size, fun_desc, True

    def unpack(self, x) -> tuple[Any, int | None]:
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.bdim
        return x, None

    def process_primitive(self, prim: Primitive, args: Sequence, params: dict) -> list:
        if not self.active:
            raise UnexpectedTracerError(f"a value batched by vmap of {self.fun_desc} was used after that vmap "
                                        f"returned (stored in a global, a closure or an attribute?)")
        vals, dims = zip(*map(self.unpack, args)) if args else ((), ())
        if all(d is None for d in dims):
            out = prim.bind(*vals, **params)
            return list(out) if prim.multiple_results else [out]
        rule = prim.batch or _loop_rule(prim)
        outs, out_dims = rule(list(vals), list(dims), **params)
        if not prim.multiple_results:
            outs, out_dims = [outs], [out_dims]
        return [o if d is None else BatchTracer(self, o, d) for o, d in zip(outs, out_dims)]


def _loop_rule(prim: Primitive):
    """For a primitive without a rule: apply it to one example at a time, in a loop (`lax.map`)."""
    def rule(args, dims, **params):
        def one(xs):
            it = iter(xs)
            out = prim.bind(*[next(it) if d is not None else x for x, d in zip(args, dims)], **params)
            return list(out) if prim.multiple_results else [out]
        outs = lax.map(one, [moveaxis(x, d, 0) for x, d in zip(args, dims) if d is not None])
        return (outs, [0] * len(outs)) if prim.multiple_results else (outs[0], 0)
    return rule


# ---------------------------------------------------------------- batching sub-graphs


def run_batched(graph: Graph, args: Sequence, dims: Sequence, size: int, fun_desc: str = "a sub-graph"):
    """Evaluate `graph` on batched `args` (batch axes `dims`); returns the outputs and their batch axes."""
    trace = BatchTrace(size, fun_desc)
    with tracing(trace):
        outs = eval_graph(graph, [x if d is None else BatchTracer(trace, x, d) for x, d in zip(args, dims)])
    return [list(t) for t in zip(*map(trace.unpack, outs))] if outs else ([], [])


def _trace(fun: Callable, avals: Sequence[ShapedArray], name: str) -> Graph:
    fun.__name__ = name
    graph, captured, _ = trace_subgraph(fun, list(avals), "vmap")
    assert not captured, "a batched sub-graph takes every value as an input"
    return graph


def _stacked(aval: ShapedArray, size: int) -> ShapedArray:
    return aval.update(shape=(size,) + aval.shape)


def batch_graph(graph: Graph, batched: Sequence[bool], size: int, force: Sequence[bool] | None = None):
    """`graph` on inputs whose batched ones have their batch axis first. Returns the new graph and which
    outputs are batched (batch axis first): those that depend on a batched input, and those in `force`."""
    out_batched: list[bool] = []

    def fun(*args):
        outs, dims = run_batched(graph, args, [0 if b else None for b in batched], size, graph.name)
        out_batched[:] = [d is not None or bool(force and force[i]) for i, d in enumerate(dims)]
        return [at_front(o, d, size) if b else o for o, d, b in zip(outs, dims, out_batched)]

    avals = [_stacked(a, size) if b else a for a, b in zip(graph.in_avals, batched)]
    return _trace(fun, avals, f"{graph.name}_batched"), out_batched


def _fronts(args, dims, size: int, want: Sequence[bool] | None = None) -> list:
    """Batch axes first; with `want`, unbatched values that must be batched are broadcast."""
    want = [d is not None for d in dims] if want is None else want
    return [at_front(x, d, size) if w else x for x, d, w in zip(args, dims, want)]


# ---------------------------------------------------------------- control flow


def _cond_batch(args, dims, *, branches, n_ops):
    (index, *rest), (idim, *rdims) = args, dims
    size = axis_size(args, dims)
    ops, op_dims = rest[:n_ops], rdims[:n_ops]
    caps, cap_dims = _split_caps(branches, n_ops, rest[n_ops:]), _split_caps(branches, n_ops, rdims[n_ops:])
    if idim is not None:  # every branch runs; each example takes its branch's results
        index = moveaxis(index, idim, 0)
        results = [run_batched(g, ops + c, op_dims + cd, size, g.name) for g, c, cd in zip(branches, caps, cap_dims)]
        outs = []
        for k in range(len(branches[0].outs)):
            out = None
            for b, (vals, vdims) in enumerate(results):
                v = at_front(vals[k], vdims[k], size)
                if out is None:
                    out = v
                    continue
                pred = lax.eq(index, lax.full_like(index, b))
                out = lax.select(lax.broadcast_in_dim(pred, aval_of(v).shape, (0,)), v, out)
            outs.append(out)
        return outs, [0] * len(outs)
    flags = [[d is not None for d in op_dims + cd] for cd in cap_dims]
    force = [any(bs) for bs in zip(*[batch_graph(g, f, size)[1] for g, f in zip(branches, flags)])]
    new = tuple(batch_graph(g, f, size, force)[0] for g, f in zip(branches, flags))
    new_caps = [x for c, cd in zip(caps, cap_dims) for x in _fronts(c, cd, size)]
    outs = cond_p.bind(index, *_fronts(ops, op_dims, size), *new_caps, branches=new, n_ops=n_ops)
    return outs, [0 if f else None for f in force]


def _while_batch(args, dims, *, cond_graph, body_graph, n_carry, n_cond_caps):
    size = axis_size(args, dims)
    k1, k2 = n_carry, n_carry + n_cond_caps
    carry, ccaps, bcaps = args[:k1], args[k1:k2], args[k2:]
    cdims, ccdims, bcdims = dims[:k1], dims[k1:k2], dims[k2:]
    cb = [d is not None for d in cdims]
    ccb, bcb = [d is not None for d in ccdims], [d is not None for d in bcdims]
    while True:  # which carries are batched: those the body makes so, and all of them if the condition is
        pred_batched = batch_graph(cond_graph, cb + ccb, size)[1][0]
        new = [True] * n_carry if pred_batched else [a or b for a, b in zip(cb, batch_graph(body_graph, cb + bcb, size)[1])]
        if new == cb:
            break
        cb = new
    carry = _fronts(carry, cdims, size, cb)
    ccaps, bcaps = _fronts(ccaps, ccdims, size), _fronts(bcaps, bcdims, size)
    if not pred_batched:
        cond_g = batch_graph(cond_graph, cb + ccb, size)[0]
        body_g = batch_graph(body_graph, cb + bcb, size, cb)[0]
        outs = while_p.bind(*carry, *ccaps, *bcaps, cond_graph=cond_g, body_graph=body_g, n_carry=n_carry,
                            n_cond_caps=n_cond_caps)
        return outs, [0 if b else None for b in cb]
    # A condition per example: loop while any holds; an example whose condition fails keeps its carry.
    zero_dims = lambda flags: [0 if f else None for f in flags]

    def cond_fun(*xs):
        (pred,), (d,) = run_batched(cond_graph, xs, zero_dims(cb + ccb), size, cond_graph.name)
        return lax.reduce_or(pred, (0,))

    def body_fun(*xs):
        c, cc, bc = xs[:k1], xs[k1:k2], xs[k2:]
        (pred,), _ = run_batched(cond_graph, c + cc, zero_dims(cb + ccb), size, cond_graph.name)
        new, nd = run_batched(body_graph, c + bc, zero_dims(cb + bcb), size, body_graph.name)
        return [lax.select(lax.broadcast_in_dim(pred, aval_of(old).shape, (0,)), at_front(v, d, size), old)
                for v, d, old in zip(new, nd, c)]

    c_avals = [aval_of(x) for x in carry]
    cond_g = _trace(cond_fun, c_avals + [aval_of(x) for x in ccaps], f"{cond_graph.name}_any")
    body_g = _trace(body_fun, c_avals + [aval_of(x) for x in ccaps + bcaps], f"{body_graph.name}_batched")
    outs = while_p.bind(*carry, *ccaps, *ccaps, *bcaps, cond_graph=cond_g, body_graph=body_g, n_carry=n_carry,
                        n_cond_caps=n_cond_caps)
    return outs, [0] * n_carry


def _scan_batch(args, dims, *, body, length, reverse, n_carry, n_xs):
    """The body batched once; batched xs and ys carry the batch on axis 1 (axis 0 is the scan's)."""
    size = axis_size(args, dims)
    k1, k2 = n_carry, n_carry + n_xs
    cb, rest = [d is not None for d in dims[:k1]], [d is not None for d in dims[k1:]]
    while True:  # which carries are batched: those the body makes so (a fixed point)
        new = [a or b for a, b in zip(cb, batch_graph(body, cb + rest, size)[1][:n_carry])]
        if new == cb:
            break
        cb = new
    g, out_b = batch_graph(body, cb + rest, size, cb + [False] * (len(body.outs) - n_carry))
    carry = _fronts(args[:k1], dims[:k1], size, cb)
    xs = [x if d is None else moveaxis(x, d, 1) for x, d in zip(args[k1:k2], dims[k1:k2])]
    outs = scan_p.bind(*carry, *xs, *_fronts(args[k2:], dims[k2:], size), body=g, length=length, reverse=reverse,
                       n_carry=n_carry, n_xs=n_xs)
    return outs, [0 if b else None for b in cb] + [1 if b else None for b in out_b[n_carry:]]


cond_p.def_batch(_cond_batch)
while_p.def_batch(_while_batch)
scan_p.def_batch(_scan_batch)


# ---------------------------------------------------------------- vmap


def _check_axes(axes, what: str) -> None:
    if not all(type(a) is int for a in tree_util.tree_leaves(axes, is_leaf=lambda x: x is None) if a is not None):
        raise TypeError(f"vmap {what} must be an int, None, or (nested) container with those types as leaves, "
                        f"but got {axes}.")


def _broadcast_prefix(axes, values, what: str) -> list:
    """One axis per leaf of `values`, from `axes`, a tree prefix of it (a leaf of `axes` covers a subtree)."""
    a_leaves, a_tree = tree_util.tree_flatten(axes, is_leaf=lambda x: x is None)
    v_tree = tree_util.tree_structure(values)
    it = iter(a_leaves)

    def go(at, vt) -> list:
        if at.node_type is None:
            return [next(it)] * vt.num_leaves
        if at.node_type != vt.node_type or at.aux != vt.aux or len(at.kids) != len(vt.kids):
            raise ValueError(f"vmap {what} specification must be a tree prefix of the corresponding value, got "
                             f"specification {axes} for value tree {vt}.")
        return [x for ac, vc in zip(at.kids, vt.kids) for x in go(ac, vc)]

    return go(a_tree, v_tree)


def _arg_names(fun: Callable, args: tuple, kwargs: dict) -> list[str]:
    """A name per argument leaf for error messages: the parameter name and the path inside it."""
    try:
        params = [p.name for p in inspect.signature(fun).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = []
    for i, a in enumerate(args):
        base = params[i] if i < len(params) else f"args[{i}]"
        names += [base + p for p in tree_util.leaf_paths(a)]
    for k in sorted(kwargs):  # kwargs flatten in sorted order
        names += [k + p for p in tree_util.leaf_paths(kwargs[k])]
    return names


def _desc(fun: Callable) -> str:
    return getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or repr(fun)


def vmap(fun: Callable, in_axes=0, out_axes=0, axis_size: int | None = None) -> Callable:
    """Vectorize `fun` over a new axis: `vmap(f)(xs)` is `stack([f(x) for x in xs])`, computed batched.

    `in_axes`: for each positional argument (a tuple prefix of the arguments, or one int/None for all),
    the axis to map over, or None for an argument shared by every example; keyword arguments are mapped
    over axis 0. `out_axes`: where the mapped axis goes in each output. `axis_size`: the batch size when
    no argument is mapped."""
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)  # as JAX: a list of axes reads as the tuple of positional arguments
    if not (in_axes is None or type(in_axes) in (int, tuple)):
        raise TypeError(f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional "
                        f"arguments passed to the function, but got {in_axes}.")
    _check_axes(in_axes, "in_axes")
    _check_axes(out_axes, "out_axes")
    if axis_size is not None and (type(axis_size) is not int or axis_size < 0):
        raise TypeError(f"vmap axis_size must be a non-negative int, got {axis_size!r}")

    @functools.wraps(fun)
    def batched(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                             f"positional arguments passed to the function, but got len(in_axes)={len(in_axes)}, "
                             f"len(args)={len(args)}")
        leaves, tree = tree_util.tree_flatten((args, kwargs))
        axes = _broadcast_prefix((in_axes, 0), (args, kwargs), "in_axes")
        names = _arg_names(fun, args, kwargs)
        axes = [_canonical_axis(x, ax, name) for x, ax, name in zip(leaves, axes, names)]
        size = _batch_size(leaves, axes, names, axis_size)
        trace = BatchTrace(size, _desc(fun))
        with tracing(trace):
            ins = [x if ax is None else BatchTracer(trace, x, ax) for x, ax in zip(leaves, axes)]
            a, kw = tree_util.tree_unflatten(tree, ins)
            out = fun(*a, **kw)
        out_leaves, out_tree = flatten_outputs(out, _desc(fun))
        oaxes = _broadcast_prefix(out_axes, tree_util.tree_unflatten(out_tree, out_leaves), "out_axes")
        return tree_util.tree_unflatten(out_tree, [_place(trace, o, ax, size) for o, ax in zip(out_leaves, oaxes)])

    batched.__doc__ = f"Vectorized version of {_desc(fun)}." + (f"\n\n{fun.__doc__}" if fun.__doc__ else "")
    return batched


def _canonical_axis(x, ax, name: str) -> int | None:
    if ax is None:
        return None
    shape = aval_of(x).shape
    if not -len(shape) <= ax < len(shape):
        raise ValueError(f"vmap was requested to map its argument along axis {ax}, which implies that its rank "
                         f"should be at least {ax + 1 if ax >= 0 else -ax}, but is only {len(shape)} (its shape is "
                         f"{shape}): argument {name}")
    return ax % len(shape)


def _batch_size(leaves, axes, names, axis_size) -> int:
    sizes = {aval_of(x).shape[ax] for x, ax in zip(leaves, axes) if ax is not None}
    if axis_size is not None:
        sizes.add(axis_size)
    if not sizes:
        raise ValueError("vmap must have at least one non-None value in in_axes (or an axis_size)")
    if len(sizes) == 1:
        return sizes.pop()
    lines = [f"  * one axis had size {aval_of(x).shape[ax]}: axis {ax} of argument {name} of type "
             f"{aval_of(x).str_short()}" for x, ax, name in zip(leaves, axes, names) if ax is not None]
    if axis_size is not None:
        lines.append(f"  * the axis_size argument was {axis_size}")
    raise ValueError("vmap got inconsistent sizes for array axes to be mapped:\n" + ";\n".join(lines))


def _place(trace: BatchTrace, out, ax, size: int):
    """An output with its batch axis at `ax` (an unbatched output is broadcast along it)."""
    val, d = trace.unpack(out)
    if ax is None:
        if d is not None:
            raise ValueError(f"vmap has mapped output but out_axes is None (an output of {trace.fun_desc} of type "
                             f"{aval_of(out).str_short()} per example depends on the mapped inputs)")
        return val
    nd = aval_of(val).ndim + (d is None)
    if not -nd <= ax < nd:
        raise ValueError(f"vmap out_axes={ax} is out of bounds for an output of rank {nd - 1} per example "
                         f"(of {trace.fun_desc})")
    return moveaxis(at_front(val, d, size), 0, ax % nd)
