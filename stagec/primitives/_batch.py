"""What the batching rules share (`stagec.batching` runs them; each family file registers its own).

A batching rule has JAX's convention: `rule(batched_args, batch_dims, **params) -> (out, out_dim)`, or
`(outs, out_dims)` for a primitive with several results. `batch_dims[i]` is the axis of `batched_args[i]`
that runs over the batch, or None for an operand that is the same for every example; the rule returns
where the batch axis of each result is (None: the result is the same for every example). A rule runs only
when at least one operand is batched.
"""
from __future__ import annotations

from typing import Sequence

from ..core import Primitive, aval_of


def axis_size(args: Sequence, dims: Sequence) -> int:
    """The batch size: the length of any batched operand along its batch axis."""
    return next(aval_of(x).shape[d] for x, d in zip(args, dims) if d is not None)


def moveaxis(x, src: int, dst: int):
    from .structural import transpose
    nd = aval_of(x).ndim
    src, dst = src % nd, dst % nd
    if src == dst:
        return x
    perm = [i for i in range(nd) if i != src]
    perm.insert(dst, src)
    return transpose(x, perm)


def at_front(x, dim: int | None, size: int):
    """`x` with its batch axis first; an unbatched `x` is broadcast along a new first axis of `size`."""
    if dim is not None:
        return moveaxis(x, dim, 0)
    from .structural import broadcast
    return broadcast(x, (size,))


def example_shape(x, dim: int | None) -> tuple:
    """The shape of one example of `x`."""
    shape = aval_of(x).shape
    return shape if dim is None else shape[:dim] + shape[dim + 1:]


def elementwise_rule(prim: Primitive):
    """The rule of an elementwise primitive: operands of one shape per example (a predicate may be a scalar).
    Operands batched along the same axis stay there; otherwise the batch axis goes first and unbatched
    operands are broadcast (a scalar one stays a scalar, as `select` allows)."""
    def rule(args, dims, **params):
        if None not in dims and len(set(dims)) == 1:
            return prim.bind(*args, **params), dims[0]
        size = axis_size(args, dims)
        shape = max((example_shape(x, d) for x, d in zip(args, dims)), key=len)
        out = []
        for x, d in zip(args, dims):
            ex = example_shape(x, d)
            if d is None and ex == () and shape != ():
                out.append(x)
            elif ex != shape:  # a batched scalar predicate of non-scalar operands
                from .structural import broadcast_in_dim
                out.append(broadcast_in_dim(at_front(x, d, size), (size,) + shape, (0,)))
            else:
                out.append(at_front(x, d, size))
        return prim.bind(*out, **params), 0
    return rule
