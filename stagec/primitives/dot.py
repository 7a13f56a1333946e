"""`dot_general`: contraction with batch dimensions (every matmul, einsum and tensordot ends here)."""
from __future__ import annotations

import enum
import math

import numpy as np

from .. import dtypes as _dt
from .. import lowering as L
from ..config import config
from ..core import Primitive, ShapedArray, aval_of
from . import _ad
from .elementwise import _float_to_int, convert_element_type, host_convert, match_weak
from .structural import transpose


class Precision(enum.Enum):
    """How exactly a float32 product is computed (JAX's `lax.Precision`). The CPU computes every one in
    float32. CUDA: DEFAULT and HIGH take three bfloat16 tensor-core products (`bf16_3x`, about 2**-16
    relative error per product), HIGHEST plain float32. Vulkan: float32 for all (IREE's SPIR-V has no bf16)."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    def __str__(self) -> str:
        return self.name

    @classmethod
    def of(cls, p) -> "Precision":
        """A Precision from itself or one of JAX's names: default/bfloat16/fastest, high/tensorfloat32,
        highest/float32."""
        if isinstance(p, Precision):
            return p
        names = {"default": cls.DEFAULT, "bfloat16": cls.DEFAULT, "fastest": cls.DEFAULT,
                 "high": cls.HIGH, "tensorfloat32": cls.HIGH, "highest": cls.HIGHEST, "float32": cls.HIGHEST}
        if isinstance(p, str) and p.lower() in names:
            return names[p.lower()]
        raise ValueError(f"unknown precision {p!r}: expected a lax.Precision or one of {sorted(names)}")


def canonicalize_precision(precision) -> tuple[Precision, Precision] | None:
    """None, one precision for both operands, or a pair (JAX's convention) -> None or a pair."""
    if precision is None:
        return None
    if isinstance(precision, (tuple, list)):
        if len(precision) != 2:
            raise ValueError(f"precision must be one value or a pair (lhs, rhs), got {precision!r}")
        lhs, rhs = (None if p is None else Precision.of(p) for p in precision)
        if lhs is None and rhs is None:
            return None
        return (lhs or Precision.DEFAULT, rhs or Precision.DEFAULT)
    p = Precision.of(precision)
    return (p, p)


def _dot_general_rule(lhs: ShapedArray, rhs: ShapedArray, *, dimension_numbers, precision=None,
                      preferred_element_type=None):
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
def _dot_general(ctx: L.Ctx, lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None):
    ir = L.mlir()
    (lc, rc), (lb, rb) = dimension_numbers
    if any(ctx.avals_in[0].shape[d] == 0 for d in lc):  # an empty sum; iree-compile crashes (SIGFPE) on it
        return [L.full(0, ctx.avals_out[0])]
    if _dt.kind(ctx.avals_out[0].dtype) == "c":
        return [_complex_dot(ctx, lhs, rhs, dimension_numbers)]
    src, out = ctx.avals_in[0], ctx.avals_out[0]
    if src.dtype != out.dtype and _dt.kind(src.dtype) == "f" and _dt.kind(out.dtype) in "iu":
        # XLA (so JAX) sums in the float type and converts the sum: 0.6 + 0.7 + 1.6 as int32 is 2 (IREE converted
        # each operand first: 1)
        fa = out.update(dtype=src.dtype)
        (r,) = _dot_general(L.Ctx(ctx.avals_in, [fa]), lhs, rhs, dimension_numbers=dimension_numbers,
                            precision=precision)
        return [_float_to_int(ctx, r, fa, out)]
    if src.dtype != out.dtype and _dt.kind(src.dtype) == "u":
        # IREE widens integer operands as signed: uint8 200 * 200 summed as int32 or float32 gave 1600 ((-56)^2);
        # unsigned operands are converted to the result type first
        wide = [a.update(dtype=out.dtype) for a in ctx.avals_in]
        lhs, rhs = (ctx.op1("stablehlo.convert", [v], result_avals=[a]) for v, a in zip((lhs, rhs), wide))
        ctx = L.Ctx(wide, ctx.avals_out)
    fmt = lambda xs: "[" + ", ".join(map(str, xs)) + "]"
    dims = ir.Attribute.parse(
        f"#stablehlo.dot<lhs_batching_dimensions = {fmt(lb)}, rhs_batching_dimensions = {fmt(rb)}, "
        f"lhs_contracting_dimensions = {fmt(lc)}, rhs_contracting_dimensions = {fmt(rc)}>")
    attrs = {"dot_dimension_numbers": dims}
    if precision and precision != (Precision.DEFAULT, Precision.DEFAULT):  # absent means DEFAULT
        attrs["precision_config"] = ir.Attribute.parse(
            "[" + ", ".join(f"#stablehlo<precision {p.name}>" for p in precision) + "]")
    return [ctx.op1("stablehlo.dot_general", [lhs, rhs], attributes=attrs)]


def _complex_dot(ctx: L.Ctx, lhs, rhs, dimension_numbers):
    """A complex dot_general as a broadcast multiply and sum over the contracted axes: IREE 3.13 with
    --iree-dispatch-creation-data-tiling fails on a complex dot_general, even one split into real dots
    ('vector.transfer_read op requires valid padding vector elemental type')."""
    (lc, rc), (lb, rb) = dimension_numbers
    out = ctx.avals_out[0]
    la, ra = ctx.avals_in
    lfree = [i for i in range(la.ndim) if i not in lc and i not in lb]
    rfree = [i for i in range(ra.ndim) if i not in rc and i not in rb]
    nb, nl, nr = len(lb), len(lfree), len(rfree)
    prod = out.update(shape=out.shape + tuple(la.shape[i] for i in lc))

    def spread(x, aval, perm, free_at):  # x transposed to (batch, free, contracted), broadcast to prod's shape
        if aval.dtype != out.dtype:
            aval = aval.update(dtype=out.dtype)
            x = ctx.op1("stablehlo.convert", [x], result_avals=[aval])
        t = aval.update(shape=tuple(aval.shape[i] for i in perm))
        x = ctx.op1("stablehlo.transpose", [x], result_avals=[t], attributes={"permutation": L.i64s(perm)})
        n_free = len(perm) - nb - len(lc)
        dims = list(range(nb)) + list(range(free_at, free_at + n_free)) + list(range(nb + nl + nr, prod.ndim))
        return ctx.op1("stablehlo.broadcast_in_dim", [x], result_avals=[prod],
                       attributes={"broadcast_dimensions": L.i64s(dims)})

    x = spread(lhs, la, list(lb) + lfree + list(lc), nb)
    y = spread(rhs, ra, list(rb) + rfree + list(rc), nb + nl)
    p = ctx.op1("stablehlo.multiply", [x, y], result_avals=[prod])
    return L.reduce_op(L.Ctx([prod], [out]), p, "reduce_sum", range(out.ndim, prod.ndim))


# ---------------------------------------------------------------- differentiation rules


def _dot_jvp(primals, tangents, **kw):
    x, y = primals
    tx, ty = tangents
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


def _transpose_lhs(ct, x_aval: ShapedArray, y, dimension_numbers, precision, swap_ans: bool = False):
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
    out_axes = tuple(np.argsort(list(xb) + x_kept + xc_by_y))
    swapped = tuple(np.argsort(list(xb) + xc_by_y + x_kept))
    if out_axes != tuple(range(len(out_axes))) and swapped == tuple(range(len(swapped))):
        # dot(y, ct) comes out in x's layout where dot(ct, y) would need a transpose (a weight's gradient
        # h^T g rather than (g^T h)^T): IREE runs the contraction alike, and the transpose costs a pass
        (a, b), (c, d) = dims
        r = dot_general_p.bind(y, ct, dimension_numbers=((b, a), (d, c)),
                               precision=None if precision is None else tuple(precision[::-1]),
                               preferred_element_type=None)
        return _cast_to(r, x_aval)
    r = transpose(dot_general_p.bind(ct, y, dimension_numbers=dims, precision=precision,
                                     preferred_element_type=None), out_axes)
    return _cast_to(r, x_aval)


def _cast_to(r, x_aval: ShapedArray):
    return convert_element_type(r, x_aval.dtype, x_aval.weak_type) if aval_of(r).dtype != x_aval.dtype else r


def _dot_transpose(ct, x, y, *, dimension_numbers, precision=None, preferred_element_type=None):
    if ct is None:
        return [None, None]
    (xc, yc), (xb, yb) = dimension_numbers
    if _ad.is_undefined(x) and _ad.is_undefined(y):
        raise TypeError("dot_general of two tangents is not linear")
    if _ad.is_undefined(x):
        return [_transpose_lhs(ct, x.aval, y, dimension_numbers, precision), None]
    swapped = precision and (precision[1], precision[0])
    return [None, _transpose_lhs(ct, y.aval, x, ((yc, xc), (yb, xb)), swapped, swap_ans=True)]


dot_general_p.def_jvp(_dot_jvp)
dot_general_p.def_transpose(_dot_transpose)


# ---------------------------------------------------------------- strict wrappers (stagec.lax)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """Contract `lhs` and `rhs`: dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch));
    `precision`: None (`config.default_matmul_precision`, read now), a `Precision` (or its name) or a pair."""
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    pet = None if preferred_element_type is None else _dt.canonicalize(preferred_element_type)
    return dot_general_p.bind(*match_weak(lhs, rhs), dimension_numbers=dn,
                              precision=canonicalize_precision(precision if precision is not None
                                                               else config.default_matmul_precision),
                              preferred_element_type=pet)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector/matrix product contracting the last axis of `lhs` with the first of `rhs`."""
    return dot_general(lhs, rhs, (((aval_of(lhs).ndim - 1,), (0,)), ((), ())), precision, preferred_element_type)


# ---------------------------------------------------------------- batching rules

from ._batch import moveaxis  # noqa: E402


@dot_general_p.def_batch
def _dot_general_batch(args, dims, *, dimension_numbers, **params):
    """Both batched: one more batch dimension (first in the result). One batched: its batch axis is a free
    dimension of that side, and stays one in the result."""
    (lhs, rhs), (ld, rd) = args, dims
    (lc, rc), (lb, rb) = dimension_numbers
    up = lambda t, d: tuple(a + (a >= d) for a in t)
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


# ---------------------------------------------------------------- NumPy rule (`Primitive.def_host`)

def _dot_general_host(x, y, *, dimension_numbers, precision=None, preferred_element_type=None):
    """Batch, free and contracted dimensions grouped by transposes, then one `np.matmul` (BLAS for floats)."""
    (lc, rc), (lb, rb) = dimension_numbers
    dtype = preferred_element_type or x.dtype
    if _dt.kind(x.dtype) == "f" and _dt.kind(dtype) in "iu":  # the float sum converted, as the compiled product
        return host_convert(_dot_general_host(x, y, dimension_numbers=dimension_numbers), dtype)
    if np.dtype(dtype).itemsize == 2 and _dt.kind(dtype) == "f":  # float16, bfloat16: summed in float32 and rounded
        # once, as the compiled product (`half-products-in-f32`); NumPy's float16 matmul sums in float16 (8 ulps off)
        return _dot_general_host(x, y, dimension_numbers=dimension_numbers,
                                 preferred_element_type=np.float32).astype(dtype)
    if not lb and len(lc) == 1 and x.ndim <= 2 and y.ndim <= 2:  # one contracted dimension of matrices or vectors:
        # as below, without its transposes and reshapes (~15 us of steps for a matrix product, ~4 for a vector's)
        x, y = x.astype(dtype, copy=False), y.astype(dtype, copy=False)
        return np.matmul(x if lc[0] == x.ndim - 1 else x.T, y if rc[0] == 0 else y.T)
    lf = [i for i in range(x.ndim) if i not in lc and i not in lb]
    rf = [i for i in range(y.ndim) if i not in rc and i not in rb]
    batch = [x.shape[i] for i in lb]
    size = lambda a, dims: math.prod([a.shape[i] for i in dims])  # (Python ints: np.prod took ~4 us a call)
    xt = x.transpose([*lb, *lf, *lc]).astype(dtype, copy=False).reshape(*batch, size(x, lf), size(x, lc))
    yt = y.transpose([*rb, *rc, *rf]).astype(dtype, copy=False).reshape(*batch, size(y, rc), size(y, rf))
    out = np.matmul(xt, yt)
    # (a tuple: with no batch or free dimensions, `reshape()` of nothing raised TypeError; einsum("ij,ji->"))
    return out.reshape(tuple(batch) + tuple(x.shape[i] for i in lf) + tuple(y.shape[i] for i in rf))


dot_general_p.def_host(_dot_general_host)
