"""Structured control flow: `cond`, `switch`, `while_loop`, `fori_loop`, `scan`, `map`.

Branches and loop bodies are traced once into sub-graphs (never unrolled, `core.trace_subgraph`) and bound
as the `cond`/`while`/`scan` primitives (`stagec.primitives.control_flow`). Values a body closes over (outer tracers,
concrete arrays) become extra operands of the primitive.
"""
from __future__ import annotations

import operator
from typing import Callable, Sequence

import numpy as np

from .. import dtypes as _dt
from ..errors import ConcretizationTypeError
from .. import lax, tree_util
from ..core import ShapedArray, aval_of, trace_subgraph
from ..primitives.control_flow import cond_p, scan_p, while_p


def _fun_name(f: Callable) -> str:
    return getattr(f, "__name__", type(f).__name__)


def _types(avals) -> str:
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def _same_types(a: Sequence[ShapedArray], b: Sequence[ShapedArray]) -> bool:
    return len(a) == len(b) and all((x.shape, x.dtype) == (y.shape, y.dtype) for x, y in zip(a, b))


def _first_difference(a, b) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if (x.shape, x.dtype) != (y.shape, y.dtype):
            return f"position {i}: {x.str_short()} vs {y.str_short()}"
    return f"{len(a)} vs {len(b)} values"


# ---------------------------------------------------------------- cond / switch


def switch(index, branches: Sequence[Callable], *operands):
    """Apply `branches[index]` to `operands` (index clamped into range), as one `stablehlo.case`."""
    branches = list(branches)
    if not branches:
        raise ValueError("switch needs at least one branch")
    index = lax._convert_element_type(index, np.int32) if aval_of(index).dtype != np.int32 else index
    if aval_of(index).shape != ():
        raise TypeError(f"switch/cond index must be a scalar, got shape {aval_of(index).shape}")
    if len(branches) > 1:
        index = lax.max(lax.min(index, len(branches) - 1), 0)
    traced = [trace_subgraph(b, operands, "cond") for b in branches]
    out_tree = traced[0][2]
    base = traced[0][0].out_avals
    for k, (g, _, tree) in enumerate(traced[1:], 1):
        if tree != out_tree or not _same_types(base, g.out_avals):
            raise TypeError(
                f"cond/switch branches must return the same pytree of types: branch 0 "
                f"({_fun_name(branches[0])}) returns {out_tree} {_types(base)} but branch {k} "
                f"({_fun_name(branches[k])}) returns {tree} {_types(g.out_avals)}")
    leaves = tree_util.tree_leaves(list(operands))
    caps = [c for _, cs, _ in traced for c in cs]
    outs = cond_p.bind(index, *leaves, *caps, branches=tuple(g for g, _, _ in traced), n_ops=len(leaves))
    return tree_util.tree_unflatten(out_tree, outs)


def cond(pred, true_fun: Callable, false_fun: Callable, *operands):
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)`; only the chosen branch runs."""
    av = aval_of(pred)
    if av.shape != ():
        raise TypeError(f"cond predicate must be a scalar, got shape {av.shape}")
    if av.dtype != np.bool_:
        pred = lax.ne(pred, lax.full_like(pred, 0))
    return switch(lax._convert_element_type(pred, np.int32), [false_fun, true_fun], *operands)


# ---------------------------------------------------------------- while


def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """`while cond_fun(val): val = body_fun(val)`, as one `stablehlo.while` (traced once)."""
    init_leaves, init_tree = tree_util.tree_flatten(init_val)
    init_avals = [aval_of(x) for x in init_leaves]
    for attempt in range(2):
        body, body_caps, body_tree = trace_subgraph(body_fun, [init_val], "while_loop body")
        if body_tree != init_tree or not _same_types(init_avals, body.out_avals):
            raise TypeError(f"while_loop body_fun ({_fun_name(body_fun)}) must return the same pytree of types as "
                            f"its input: input {init_tree} {_types(init_avals)}, output {body_tree} "
                            f"{_types(body.out_avals)}; first difference at carry "
                            f"{_first_difference(init_avals, body.out_avals)}")
        # A weakly typed initial value whose body result is strongly typed becomes strong (as in JAX).
        strong = [i for i, (a, b) in enumerate(zip(init_avals, body.out_avals)) if a.weak_type and not b.weak_type]
        if not strong or attempt:
            break
        init_leaves = [lax._convert_element_type(x, a.dtype, False) if i in strong else x
                       for i, (x, a) in enumerate(zip(init_leaves, init_avals))]
        init_avals = [aval_of(x) for x in init_leaves]
        init_val = tree_util.tree_unflatten(init_tree, init_leaves)
    cond, cond_caps, cond_tree = trace_subgraph(cond_fun, [init_val], "while_loop cond")
    if len(cond.outs) != 1 or cond.out_avals[0].shape != () or cond.out_avals[0].dtype != np.bool_:
        raise TypeError(f"while_loop cond_fun ({_fun_name(cond_fun)}) must return a boolean scalar, got "
                        f"{_types(cond.out_avals)}")
    outs = while_p.bind(*init_leaves, *cond_caps, *body_caps, cond_graph=cond, body_graph=body,
                        n_carry=len(init_leaves), n_cond_caps=len(cond_caps))
    return tree_util.tree_unflatten(init_tree, outs)


def _concrete_int(x) -> int | None:
    """`x` as a Python int if it is a concrete integer scalar, else None: a Python or NumPy integer, an eager Array, or
    a JVP tracer of one (as JAX's `core.is_concrete`: `grad` of a loop whose bound is computed eagerly)."""
    if isinstance(x, (bool, np.bool_)):
        return None
    try:
        av = aval_of(x)
    except TypeError:
        return None
    if av.shape != () or _dt.kind(av.dtype) not in "iu":
        return None
    try:
        return operator.index(x)
    except (ConcretizationTypeError, TypeError):  # (a staged value)
        return None


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll: int | bool | None = None):
    """`for i in range(lower, upper): val = body_fun(i, val)`, as one loop. With concrete bounds it is a `scan`
    (reverse-mode differentiable, as in JAX); with traced bounds a `while_loop` (forward mode only). `unroll`,
    a speed hint in JAX, is accepted and left to IREE (the values are the same). With concrete bounds and no step
    (upper <= lower) it returns `init_val` without tracing the body (JAX traces it, so a weak carry the body would
    make strong stays weak here; a 0x0 matrix's LU has no column for its body to read)."""
    dt = np.result_type(aval_of(lower).dtype, aval_of(upper).dtype)
    dt = np.int32 if _dt.kind(dt) not in "iu" or dt.itemsize < 4 else dt
    lo_c, hi_c = _concrete_int(lower), _concrete_int(upper)
    if lo_c is not None and hi_c is not None:
        if hi_c <= lo_c:  # no step: the body is not traced (see the docstring)
            return tree_util.tree_map(lambda v: lax._convert_element_type(v, aval_of(v).dtype, aval_of(v).weak_type),
                                      init_val)

        def step(carry, _):
            i, val = carry
            return (lax.add(i, lax.full_like(i, 1)), body_fun(i, val)), ()
        start = lax._convert_element_type(lo_c, dt, False)
        return scan(step, (start, init_val), None, length=max(hi_c - lo_c, 0))[0][1]
    lo = lax._convert_element_type(lower, dt, False)
    hi = lax._convert_element_type(upper, dt, False)

    def body(state):
        i, hi_, val = state
        return lax.add(i, lax.full_like(i, 1)), hi_, body_fun(i, val)

    return while_loop(lambda s: lax.lt(s[0], s[1]), body, (lo, hi, init_val))[2]


# ---------------------------------------------------------------- scan / map


def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False, unroll: int | bool = 1,
         _split_transpose: bool = False):
    """`carry, y = f(carry, x)` over the leading axis of `xs`; returns (carry, stacked ys). One `scan` primitive
    (a loop in the module, never unrolled: JAX's `unroll` hint is accepted, the values are the same); `f` is
    traced once."""
    x_leaves, x_tree = tree_util.tree_flatten(xs)
    lengths = {aval_of(x).shape[0] if aval_of(x).shape else None for x in x_leaves}
    if None in lengths:
        raise ValueError("scan got a scalar in xs: every leaf of xs needs a leading axis to scan over")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise ValueError(f"scan got inconsistent lengths: leading axes of xs {sorted(lengths)}"
                         + (f" and length={length}" if length is not None else "")
                         if x_leaves or length is not None else "scan got no xs and no length")
    n = lengths.pop()
    x_avals = [aval_of(x).update(shape=aval_of(x).shape[1:]) for x in x_leaves]
    x_proto = tree_util.tree_unflatten(x_tree, [_Proto(a) for a in x_avals])
    body, consts, out_tree = trace_subgraph(f, [init, x_proto], "scan")  # f is traced once, here
    if out_tree.node_type is not tuple or len(out_tree.kids) != 2:
        raise TypeError(f"scan body {_fun_name(f)} must return a pair (carry, y), got {out_tree}")
    init_leaves, init_tree = tree_util.tree_flatten(init)
    n_carry = len(init_leaves)
    in_avals, out_avals = [aval_of(x) for x in init_leaves], body.out_avals[:n_carry]
    if out_tree.kids[0] != init_tree or not _same_types(in_avals, out_avals):
        raise TypeError(f"scan body {_fun_name(f)} must return a carry of the same pytree of types as its input: "
                        f"input {init_tree} {_types(in_avals)}, output {out_tree.kids[0]} {_types(out_avals)}; "
                        f"first difference at carry {_first_difference(in_avals, out_avals)}")
    # A weakly typed initial carry whose body result is strongly typed becomes strong (as in JAX).
    init_leaves = [lax._convert_element_type(x, a.dtype, False) if aval_of(x).weak_type and not a.weak_type else x
                   for x, a in zip(init_leaves, out_avals)]
    outs = scan_p.bind(*init_leaves, *x_leaves, *consts, body=body, length=n, reverse=bool(reverse),
                       n_carry=n_carry, n_xs=len(x_leaves))
    return (tree_util.tree_unflatten(init_tree, outs[:n_carry]),
            tree_util.tree_unflatten(out_tree.kids[1], outs[n_carry:]))


class _Proto:
    """An abstract stand-in used only to learn a body's output types."""

    def __init__(self, aval: ShapedArray):
        self.aval = aval


def map(f: Callable, xs, *, batch_size: int | None = None):
    """`stack([f(x) for x in xs])` as a loop (`scan` with no carry). `batch_size` (JAX: vmap over chunks of that
    size) gives the same values and is accepted as a hint."""
    return scan(lambda c, x: (c, f(x)), (), xs)[1]
