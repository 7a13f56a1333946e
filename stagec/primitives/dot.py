"""`dot_general`: contraction with batch dimensions (every matmul, einsum and tensordot ends here)."""
from __future__ import annotations

from .. import dtypes as _dt
from .. import lowering as L
from ..core import Primitive, ShapedArray, aval_of
from .elementwise import match_weak


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
