"""`dot_general`: contraction with batch dimensions (every matmul, einsum and tensordot ends here)."""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from .. import lowering as L
from ..core import Primitive, ShapedArray, aval_of
from . import _ad
from .elementwise import convert_element_type, match_weak
from .structural import transpose


def _dot_general_rule(lhs: ShapedArray, rhs: ShapedArray, *, dimension_numbers, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"dot_general got different dtypes: {lhs.dtype} and {rhs.dtype}")
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        if lhs.shape[a] != rhs.shape[b]:
            raise TypeError(f"dot_general: shapes {lhs.shape} and {rhs.shape} do not match on dimension "
                            f"{a} of the left vs {b} of the right ({lhs.shape[a]} != {rhs.shape[b]})")
    batch = [lhs.shape[i] for i in lb]
    lfree = [d for i, d in enumerate(lhs.shape) if i not in lc and i not in lb]
    rfree = [d for i, d in enumerate(rhs.shape) if i not in rc and i not in rb]
    return ShapedArray(batch + lfree + rfree, preferred_element_type or lhs.dtype, lhs.weak_type and rhs.weak_type)


dot_general_p = Primitive("dot_general", _dot_general_rule)


@dot_general_p.def_lowering
def _dot_general(ctx: L.Ctx, lhs, rhs, *, dimension_numbers, preferred_element_type=None):
    ir = L.mlir()
    (lc, rc), (lb, rb) = dimension_numbers
    if any(ctx.avals_in[0].shape[d] == 0 for d in lc):  # an empty sum; iree-compile crashes (SIGFPE) on it
        return [L.full(0, ctx.avals_out[0])]
    fmt = lambda xs: "[" + ", ".join(map(str, xs)) + "]"
    dims = ir.Attribute.parse(
        f"#stablehlo.dot<lhs_batching_dimensions = {fmt(lb)}, rhs_batching_dimensions = {fmt(rb)}, "
        f"lhs_contracting_dimensions = {fmt(lc)}, rhs_contracting_dimensions = {fmt(rc)}>")
    return [ctx.op1("stablehlo.dot_general", [lhs, rhs], attributes={"dot_dimension_numbers": dims})]


# ---------------------------------------------------------------- differentiation rules


def _dot_jvp(primals, tangents, *, dimension_numbers, preferred_element_type=None):
    x, y = primals
    tx, ty = tangents
    kw = dict(dimension_numbers=dimension_numbers, preferred_element_type=preferred_element_type)
    out = dot_general_p.bind(x, y, **kw)
    t = None
    if tx is not None:
        t = dot_general_p.bind(tx, y, **kw)
    if ty is not None:
        t = _ad.add_tangents(t, dot_general_p.bind(x, ty, **kw))
    return out, t


def _remaining(n: int, *removed) -> list[int]:
    gone = {i for r in removed for i in r}
    return [i for i in range(n) if i not in gone]


def _transpose_lhs(ct, x_aval: ShapedArray, y, dimension_numbers, swap_ans: bool = False):
    """The cotangent of the left operand (JAX's `_dot_general_transpose_lhs`)."""
    (xc, yc), (xb, yb) = dimension_numbers
    y_aval = aval_of(y)
    x_kept = _remaining(x_aval.ndim, xc, xb)
    y_kept = _remaining(y_aval.ndim, yc, yb)
    nb = len(xb)
    if swap_ans:
        ans_y = list(range(nb, nb + len(y_kept)))
    else:
        ans_y = list(range(nb + len(x_kept), nb + len(x_kept) + len(y_kept)))
    dims = ((tuple(ans_y), tuple(y_kept)), (tuple(range(nb)), tuple(yb)))
    if aval_of(ct).dtype != y_aval.dtype:
        ct = convert_element_type(ct, y_aval.dtype)
    xc_by_y = [xc[i] for i in np.argsort(yc)]
    out_axes = np.argsort(list(xb) + x_kept + xc_by_y)
    r = transpose(dot_general_p.bind(ct, y, dimension_numbers=dims, preferred_element_type=None), tuple(out_axes))
    return convert_element_type(r, x_aval.dtype, x_aval.weak_type) if aval_of(r).dtype != x_aval.dtype else r


def _dot_transpose(ct, x, y, *, dimension_numbers, preferred_element_type=None):
    if ct is None:
        return [None, None]
    (xc, yc), (xb, yb) = dimension_numbers
    if _ad.is_undefined(x) and _ad.is_undefined(y):
        raise TypeError("dot_general of two tangents is not linear")
    if _ad.is_undefined(x):
        return [_transpose_lhs(ct, x.aval, y, dimension_numbers), None]
    return [None, _transpose_lhs(ct, y.aval, x, ((yc, xc), (yb, xb)), swap_ans=True)]


dot_general_p.def_jvp(_dot_jvp)
dot_general_p.def_transpose(_dot_transpose)


# ---------------------------------------------------------------- strict wrappers (stagec.lax)


def dot_general(lhs, rhs, dimension_numbers, preferred_element_type=None):
    """Contract `lhs` and `rhs`: dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))."""
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    pet = None if preferred_element_type is None else _dt.canonicalize(preferred_element_type)
    return dot_general_p.bind(*match_weak(lhs, rhs), dimension_numbers=dn, preferred_element_type=pet)


def dot(lhs, rhs, preferred_element_type=None):
    """Vector/matrix product contracting the last axis of `lhs` with the first of `rhs`."""
    return dot_general(lhs, rhs, (((aval_of(lhs).ndim - 1,), (0,)), ((), ())), preferred_element_type)


# ---------------------------------------------------------------- batching rules

from ._batch import moveaxis  # noqa: E402


@dot_general_p.def_batch
def _dot_general_batch(args, dims, *, dimension_numbers, preferred_element_type=None):
    """Both batched: one more batch dimension (first in the result). One batched: its batch axis is a free
    dimension of that side, and stays one in the result."""
    (lhs, rhs), (ld, rd) = args, dims
    (lc, rc), (lb, rb) = dimension_numbers
    up = lambda t, d: tuple(a + (a >= d) for a in t)
    params = dict(preferred_element_type=preferred_element_type)
    if ld is not None and rd is not None:
        lhs, rhs = moveaxis(lhs, ld, 0), moveaxis(rhs, rd, 0)
        dn = ((up(lc, 0), up(rc, 0)), ((0,) + up(lb, 0), (0,) + up(rb, 0)))
        return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **params), 0
    if ld is not None:
        dn = ((up(lc, ld), rc), (up(lb, ld), rb))
        lfree = [i for i in range(aval_of(lhs).ndim) if i not in dn[0][0] and i not in dn[1][0]]
        return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **params), len(lb) + lfree.index(ld)
    dn = ((lc, up(rc, rd)), (lb, up(rb, rd)))
    nl = aval_of(lhs).ndim - len(lc) - len(lb)
    rfree = [i for i in range(aval_of(rhs).ndim) if i not in dn[0][1] and i not in dn[1][1]]
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **params), len(rb) + nl + rfree.index(rd)
