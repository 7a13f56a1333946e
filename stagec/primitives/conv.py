"""`conv_general_dilated`: N-d convolution with strides, padding, dilations and feature/batch groups (StableHLO's
`convolution`). Its derivatives are convolutions again (the rules of JAX's `lax.convolution`)."""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from .. import dtypes as _dt
from .. import lowering as L
from ..config import config
from ..core import Primitive, ShapedArray, aval_of
from . import _ad
from ._batch import axis_size, example_shape
from ._util import NUMBER, check_kind
from .dot import Precision, canonicalize_precision
from .elementwise import convert_element_type, match_weak
from .structural import reshape, rev, transpose


class ConvDimensionNumbers(NamedTuple):
    """Where the batch/feature and spatial axes are: each spec is (batch or out-feature, feature or in-feature,
    spatial...) as axis numbers of the lhs, the rhs (kernel) and the output."""
    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def conv_general_permutations(dimension_numbers) -> tuple:
    """The axis permutations of ('NCHW', 'OIHW', 'NCHW')-style strings (spatial axes in the kernel's order)."""
    lhs_s, rhs_s, out_s = dimension_numbers
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(pairs):
        spec = dimension_numbers[i]
        if spec.count(a) != 1 or spec.count(b) != 1 or len(set(spec)) != len(spec):
            raise TypeError(f"convolution dimension_numbers[{i}] must contain {a!r} and {b!r} exactly once and no "
                            f"duplicates, got {spec!r}")
    if not set(lhs_s) - {"N", "C"} == set(rhs_s) - {"O", "I"} == set(out_s) - {"N", "C"}:
        raise TypeError(f"convolution dimension_numbers must have the same spatial characters, got {dimension_numbers}")

    def perm(spec, pair):
        spatial = [i for i, c in enumerate(spec) if c not in pair]
        if spec is not rhs_s:
            spatial.sort(key=lambda i: rhs_s.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)
    return tuple(perm(s, p) for s, p in zip(dimension_numbers, pairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """None (NCHW, OIHW, NCHW), three strings, or a ConvDimensionNumbers -> ConvDimensionNumbers."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(int(i) for i in s) for s in dimension_numbers))
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution needs lhs and rhs of equal rank, got {len(lhs_shape)} and {len(rhs_shape)}")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not (isinstance(dimension_numbers, (list, tuple)) and len(dimension_numbers) == 3):
        raise TypeError(f"convolution dimension_numbers must be None, 3 strings or ConvDimensionNumbers, got "
                        f"{dimension_numbers!r}")
    if all(isinstance(s, str) for s in dimension_numbers):
        for s in dimension_numbers:
            if len(s) != len(lhs_shape):
                raise TypeError(f"convolution dimension_numbers {dimension_numbers} do not match rank {len(lhs_shape)}")
        return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))
    return ConvDimensionNumbers(*(tuple(int(i) for i in s) for s in dimension_numbers))


def dilate_shape(shape, dilation) -> tuple:
    return tuple(0 if d == 0 else 1 + r * (d - 1) for d, r in zip(shape, dilation))


def padtype_to_pads(in_shape, window_shape, window_strides, padding: str) -> list[tuple[int, int]]:
    """'SAME' / 'SAME_LOWER' / 'VALID' -> (low, high) per spatial axis."""
    p = padding.upper()
    if p == "VALID":
        return [(0, 0)] * len(in_shape)
    if p not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"unknown padding {padding!r}: expected 'VALID', 'SAME' or 'SAME_LOWER'")
    out = []
    for d, w, s in zip(in_shape, window_shape, window_strides):
        total = max((-(-d // s) - 1) * s + w - d, 0)
        lo = total // 2 if p == "SAME" else total - total // 2
        out.append((lo, total - lo))
    return out


def _conv_rule(lhs: ShapedArray, rhs: ShapedArray, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count, precision=None,
               preferred_element_type=None) -> ShapedArray:
    check_kind("conv_general_dilated", lhs, NUMBER)
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"conv_general_dilated got different dtypes: {lhs.dtype} and {rhs.dtype}")
    if preferred_element_type is not None and _dt.kind(lhs.dtype) == "f" and _dt.kind(preferred_element_type) != "f":
        raise TypeError(f"conv_general_dilated: preferred_element_type {np.dtype(preferred_element_type)} for "
                        f"{lhs.dtype} operands (as JAX: floating operands take a floating preferred_element_type)")
    ls, rs, os_ = dimension_numbers
    n = lhs.ndim - 2
    if not (len(window_strides) == len(padding) == len(lhs_dilation) == len(rhs_dilation) == n):
        raise ValueError(f"conv_general_dilated: window_strides, padding and dilations need {n} entries each")
    if min(window_strides, default=1) < 1 or min(lhs_dilation, default=1) < 1 or min(rhs_dilation, default=1) < 1:
        raise ValueError("conv_general_dilated: strides and dilations must be positive")
    fg, bg = feature_group_count, batch_group_count  # (ValueErrors below, as JAX's shape rule)
    if fg < 1 or bg < 1 or (fg > 1 and bg > 1):
        raise ValueError(f"conv_general_dilated: feature_group_count={fg}, batch_group_count={bg} (one of them is 1)")
    in_feat, k_in, k_out = lhs.shape[ls[1]], rhs.shape[rs[1]], rhs.shape[rs[0]]
    if in_feat != k_in * fg:
        raise ValueError(f"conv_general_dilated: lhs feature dimension {in_feat} != kernel input features {k_in} * "
                        f"feature_group_count {fg}")
    if k_out % fg or k_out % bg or lhs.shape[ls[0]] % bg:
        raise ValueError(f"conv_general_dilated: kernel output features {k_out} and lhs batch {lhs.shape[ls[0]]} "
                         f"must divide by the group counts (feature {fg}, batch {bg})")
    lhs_sp = dilate_shape([lhs.shape[i] for i in ls[2:]], lhs_dilation)
    rhs_sp = dilate_shape([rhs.shape[i] for i in rs[2:]], rhs_dilation)
    spatial = []
    for d, k, (lo, hi), s in zip(lhs_sp, rhs_sp, padding, window_strides):
        padded = d + lo + hi
        if padded < 0:
            raise ValueError(f"conv_general_dilated: padding {padding} is larger than the input")
        spatial.append(0 if padded < k else (padded - k) // s + 1)
    out = [0] * lhs.ndim
    out[os_[0]], out[os_[1]] = lhs.shape[ls[0]] // bg, k_out
    for i, d in zip(os_[2:], spatial):
        out[i] = d
    return ShapedArray(out, preferred_element_type or lhs.dtype, lhs.weak_type and rhs.weak_type)


conv_general_dilated_p = Primitive("conv_general_dilated", _conv_rule)


@conv_general_dilated_p.def_lowering
def _conv_lower(ctx: L.Ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                feature_group_count, batch_group_count, precision=None, preferred_element_type=None):
    ir = L.mlir()
    if _dt.kind(ctx.avals_out[0].dtype) == "c":
        return [_complex_conv(ctx, lhs, rhs, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
                              rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                              feature_group_count=feature_group_count, batch_group_count=batch_group_count,
                              precision=precision)]
    src, out = ctx.avals_in[0], ctx.avals_out[0]
    if src.dtype != out.dtype and _dt.kind(src.dtype) == "u":
        # IREE widens integer operands as signed: uint8 200 * 200 summed as int32 gave (-56)^2; unsigned operands
        # are converted to the result type first (as dot_general's)
        wide = [a.update(dtype=out.dtype) for a in ctx.avals_in]
        lhs, rhs = (ctx.op1("stablehlo.convert", [v], result_avals=[a]) for v, a in zip((lhs, rhs), wide))
        ctx = L.Ctx(wide, ctx.avals_out)
    if _wide_window(ctx, dimension_numbers, batch_group_count):
        return [_conv_as_dot(ctx, lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                             feature_group_count, batch_group_count, precision)]
    ls, rs, os_ = dimension_numbers
    lst = lambda xs: "[" + ", ".join(map(str, xs)) + "]"
    dn = ir.Attribute.parse(
        f"#stablehlo.conv<raw input_batch_dimension = {ls[0]}, input_feature_dimension = {ls[1]}, "
        f"input_spatial_dimensions = {lst(ls[2:])}, kernel_input_feature_dimension = {rs[1]}, "
        f"kernel_output_feature_dimension = {rs[0]}, kernel_spatial_dimensions = {lst(rs[2:])}, "
        f"output_batch_dimension = {os_[0]}, output_feature_dimension = {os_[1]}, "
        f"output_spatial_dimensions = {lst(os_[2:])}>")
    n = len(padding)
    pads = np.array(_trimmed_padding(ctx, padding, window_strides, lhs_dilation, rhs_dilation, ls, rs),
                     np.int64).reshape(n, 2)
    attrs = {"window_strides": L.i64s(window_strides), "lhs_dilation": L.i64s(lhs_dilation),
             "rhs_dilation": L.i64s(rhs_dilation), "dimension_numbers": dn,
             "feature_group_count": L.i64(feature_group_count), "batch_group_count": L.i64(batch_group_count),
             "padding": ir.DenseIntElementsAttr.get(pads, type=ir.RankedTensorType.get(
                 [n, 2], ir.IntegerType.get_signless(64)))}
    if precision and precision != (Precision.DEFAULT, Precision.DEFAULT):
        attrs["precision_config"] = ir.Attribute.parse(
            "[" + ", ".join(f"#stablehlo<precision {p.name}>" for p in precision) + "]")
    return [ctx.op1("stablehlo.convolution", [lhs, rhs], attributes=attrs)]


def _trimmed_padding(ctx: L.Ctx, padding, strides, lhs_dilation, rhs_dilation, ls, rs) -> tuple:
    """`padding` with each high side cut by the rows past the last window (no window reads them, so the same
    numbers), where the input is padded or dilated: iree-compile 3.13 refused a strided convolution with such a
    remainder next to padding or lhs dilation ('linalg.generic' op inferred input/output operand #1 has shape's
    dimension #0 to be 4, but found 3: a 1x1x4x2 input, 3x1 kernel, strides (2, 1), lhs_dilation (1, 2))."""
    (la, ra) = ctx.avals_in
    lhs_sp = dilate_shape([la.shape[i] for i in ls[2:]], lhs_dilation)
    rhs_sp = dilate_shape([ra.shape[i] for i in rs[2:]], rhs_dilation)
    out = []
    for d, k, (lo, hi), s in zip(lhs_sp, rhs_sp, padding, strides):
        padded = d + lo + hi
        out.append((lo, hi - (padded - k) % s if padded >= k else hi))
    return tuple(out)


def _complex_conv(ctx: L.Ctx, lhs, rhs, **params):
    """A complex convolution as four real ones (iree-compile 3.13 crashes on a complex `convolution`)."""
    (la, ra), oa = ctx.avals_in, ctx.avals_out[0]
    real = lambda a: a.update(dtype=np.dtype(np.float32 if a.dtype == np.complex64 else np.float64))
    sub = L.Ctx([real(la), real(ra)], [real(oa)])
    part = lambda x, a, name: ctx.op1(f"stablehlo.{name}", [x], result_avals=[real(a)])
    (lr, li), (rr, ri) = ((part(x, a, "real"), part(x, a, "imag")) for x, a in ((lhs, la), (rhs, ra)))
    conv = lambda a, b: _conv_lower(sub, a, b, **params)[0]
    re = ctx.op1("stablehlo.subtract", [conv(lr, rr), conv(li, ri)], result_avals=[real(oa)])
    im = ctx.op1("stablehlo.add", [conv(lr, ri), conv(li, rr)], result_avals=[real(oa)])
    return ctx.op1("stablehlo.complex", [re, im])


# A convolution whose window is wider than its output (a weight gradient: the window is the output gradient's
# spatial extent, the output the kernel's) becomes one slice of the padded input per output position and a
# dot_general over (input features, window): IREE 3.13 emits such a convolution as a loop nest with the
# tiny output as its only parallel dimensions (the CNN's weight gradient took 85 ms where the dot takes ~1;
# docs/log.md). The patches hold P copies of the input: capped at PATCH_LIMIT elements. (The CPU's pipeline makes the
# slices of up to SLICED_POSITIONS positions one copy: `passes/patches.py`.)
PATCH_LIMIT = 1 << 25
SLICED_POSITIONS = 16  # (more output positions: the patches as one gather, `_patches_gathered`)


def _wide_window(ctx: L.Ctx, dimension_numbers, batch_group_count: int) -> bool:
    (la, ra), oa = ctx.avals_in, ctx.avals_out[0]
    if _dt.kind(oa.dtype) != "f" or min(la.shape + ra.shape + oa.shape) <= 0:
        return False
    _, rs, os_ = dimension_numbers
    positions = int(np.prod([oa.shape[i] for i in os_[2:]]))
    return positions < int(np.prod([ra.shape[i] for i in rs[2:]])) and positions * la.size <= PATCH_LIMIT


def _conv_as_dot(ctx: L.Ctx, lhs, rhs, strides, padding, lhs_dil, rhs_dil, dimension_numbers, groups: int,
                 batch_groups: int, precision):
    """The convolution as patches . kernel: out[b, o, p] = sum_{i, q} padded[b, i, p * stride + q * rhs_dil]
    * rhs[o, i, q], one strided slice of the padded input per output position p, stacked on a new leading axis.
    Operands keep their layouts (no copies beyond the patches) unless there are groups."""
    (la, ra), oa = ctx.avals_in, ctx.avals_out[0]
    ls, rs, os_ = dimension_numbers
    n, g = la.ndim - 2, max(groups, batch_groups)
    if g > 1:  # lhs (batch, groups, features in a group, spatial...) or, batch groups, (groups, batch in a group,
        # features, spatial...); rhs (groups, out, in, spatial...); the groups are the dot's batch dimension
        split = lambda shape, a: (*shape[:a], g, shape[a] // g, *shape[a + 1:])
        lhs = ctx.op1("stablehlo.transpose", [lhs], result_avals=[ShapedArray([la.shape[i] for i in ls], la.dtype)],
                      attributes={"permutation": L.i64s(ls)})
        rhs = ctx.op1("stablehlo.transpose", [rhs], result_avals=[ShapedArray([ra.shape[i] for i in rs], ra.dtype)],
                      attributes={"permutation": L.i64s(rs)})
        la = ShapedArray(split([la.shape[i] for i in ls], 1 if groups > 1 else 0), la.dtype)
        ra = ShapedArray(split([ra.shape[i] for i in rs], 0), ra.dtype)
        lhs = ctx.op1("stablehlo.reshape", [lhs], result_avals=[la])
        rhs = ctx.op1("stablehlo.reshape", [rhs], result_avals=[ra])
        lb, ls = ((1,), (0, 2)) if groups > 1 else ((0,), (1, 2))
        ls, rb, rs = (*ls, *range(3, 3 + n)), (0,), (1, 2, *range(3, 3 + n))
    else:
        lb = rb = ()
    cfg = {ls[2 + k]: (lo, hi, d - 1) for k, ((lo, hi), d) in enumerate(zip(padding, lhs_dil))}
    cfg = [cfg.get(a, (0, 0, 0)) for a in range(la.ndim)]
    if any(c != (0, 0, 0) for c in cfg):
        la = ShapedArray([d + lo + hi + max(d - 1, 0) * it for d, (lo, hi, it) in zip(la.shape, cfg)], la.dtype)
        lhs = ctx.op1("stablehlo.pad", [lhs, L.full(0, ShapedArray((), la.dtype))], result_avals=[la], attributes={
            "edge_padding_low": L.i64s([c[0] for c in cfg]), "edge_padding_high": L.i64s([c[1] for c in cfg]),
            "interior_padding": L.i64s([c[2] for c in cfg])})
    extent = dilate_shape([ra.shape[i] for i in rs[2:]], rhs_dil)
    out_sp = [oa.shape[i] for i in os_[2:]]
    shape, steps = list(la.shape), [1] * la.ndim
    for a, w, d in zip(ls[2:], [ra.shape[i] for i in rs[2:]], rhs_dil):
        shape[a], steps[a] = w, d
    at = ls[0]  # the positions' axis goes right before the batch axis: (positions, batch) is one BLAS dimension
    patch = ShapedArray((*shape[:at], 1, *shape[at:]), la.dtype)
    npos = int(np.prod(out_sp))
    if npos > SLICED_POSITIONS and g == 1:  # (grouped, as under vmap, the gather's reads are strided: slices ran 8%
        # faster in a per-example gradient of a CNN, whose compile they took from 2.4 to 4.4 s)
        xs = _patches_gathered(ctx, lhs, la, ls[2:], [ra.shape[i] for i in rs[2:]], rhs_dil, strides, out_sp, at,
                               npos)
        return _patches_dot(ctx, xs, rhs, oa, ls, rs, os_, lb, rb, at, npos, g, la, ra, precision)
    patches = []
    for pos in np.ndindex(*out_sp):
        start = [0] * la.ndim
        for a, p, s in zip(ls[2:], pos, strides):
            start[a] = p * s
        limit = [st + (e if a in ls[2:] else d) for a, (st, d) in enumerate(zip(start, la.shape))
                 for e in [extent[ls[2:].index(a)] if a in ls[2:] else 0]]
        sl = ctx.op1("stablehlo.slice", [lhs], result_avals=[ShapedArray(shape, la.dtype)], attributes={
            "start_indices": L.i64s(start), "limit_indices": L.i64s(limit), "strides": L.i64s(steps)})
        patches.append(ctx.op1("stablehlo.reshape", [sl], result_avals=[patch]))
    xs = patches[0] if npos == 1 else ctx.op1(
        "stablehlo.concatenate", patches, result_avals=[patch.update(shape=(*shape[:at], npos, *shape[at:]))],
        attributes={"dimension": L.i64(at)})
    return _patches_dot(ctx, xs, rhs, oa, ls, rs, os_, lb, rb, at, npos, g, la, ra, precision)


def _patches_gathered(ctx: L.Ctx, lhs, la: ShapedArray, spatial, window, rhs_dil, strides, out_sp, at: int,
                      npos: int):
    """The patches of `_conv_as_dot` as one `gather` whose starts are computed from iotas: xs[..., p, ..., w, ...] =
    padded[..., p_k * stride_k + w_k * dilation_k, ...] (p the flattened output position at axis `at`, w the window
    offsets on the spatial axes; `npos` positions). One strided slice per position made one IREE dispatch each (a copy into the
    concatenation): 64 positions, 64 dispatches and seconds of compile (JAX's differentially_private_sgd example)."""
    ir = L.mlir()
    up = lambda a: a + (a >= at)
    batch = sorted([at, *(up(a) for a in spatial)])  # (the output axes the starts index, in order)
    sizes = [npos if b == at else window[[up(a) for a in spatial].index(b)] for b in batch]
    i32 = ShapedArray(sizes, np.int32)
    iota = lambda axis: ctx.op1("stablehlo.iota", [], result_avals=[i32], attributes={"iota_dimension": L.i64(axis)})
    c = lambda v: L.full(v, i32)
    pos, parts = iota(batch.index(at)), []
    for k, a in enumerate(spatial):
        p = pos
        if (inner := int(np.prod(out_sp[k + 1:]))) > 1:
            p = ctx.op1("stablehlo.divide", [p, c(inner)], result_avals=[i32])
        if k:
            p = ctx.op1("stablehlo.remainder", [p, c(out_sp[k])], result_avals=[i32])
        start = ctx.op1("stablehlo.add", [ctx.op1("stablehlo.multiply", [p, c(strides[k])], result_avals=[i32]),
                                          ctx.op1("stablehlo.multiply", [iota(batch.index(up(a))), c(rhs_dil[k])],
                                                  result_avals=[i32])], result_avals=[i32])
        parts.append(ctx.op1("stablehlo.reshape", [start], result_avals=[i32.update(shape=(*sizes, 1))]))
    idx = parts[0] if len(parts) == 1 else ctx.op1(
        "stablehlo.concatenate", parts, result_avals=[i32.update(shape=(*sizes, len(parts)))],
        attributes={"dimension": L.i64(len(sizes))})
    rest = [a for a in range(la.ndim) if a not in spatial]
    dn = ir.Attribute.parse(
        f"#stablehlo.gather<offset_dims = {L.dims([up(a) for a in rest])}, collapsed_slice_dims = "
        f"{L.dims(sorted(spatial))}, start_index_map = {L.dims(list(spatial))}, index_vector_dim = {len(sizes)}>")
    shape = [npos if b == at else 0 for b in range(la.ndim + 1)]
    for a in range(la.ndim):
        shape[up(a)] = window[list(spatial).index(a)] if a in spatial else la.shape[a]
    return ctx.op1("stablehlo.gather", [lhs, idx], result_avals=[la.update(shape=tuple(shape))], attributes={
        "dimension_numbers": dn, "slice_sizes": L.i64s([1 if a in spatial else la.shape[a] for a in range(la.ndim)]),
        "indices_are_sorted": ir.BoolAttr.get(False)})


def _patches_dot(ctx: L.Ctx, xs, rhs, oa, ls, rs, os_, lb, rb, at: int, npos: int, g: int, la, ra, precision):
    """The product of `_conv_as_dot`'s patches `xs` (positions at axis `at`) and the kernel, in the output's layout."""
    n = len(ls) - 2
    out_sp = [oa.shape[i] for i in os_[2:]]
    up = lambda a: a + (a >= at)
    ir = L.mlir()
    fmt = lambda xs: "[" + ", ".join(map(str, xs)) + "]"
    dims = ir.Attribute.parse(
        f"#stablehlo.dot<lhs_batching_dimensions = {fmt(map(up, lb))}, rhs_batching_dimensions = {fmt(rb)}, "
        f"lhs_contracting_dimensions = {fmt(map(up, ls[1:]))}, rhs_contracting_dimensions = {fmt(rs[1:])}>")
    attrs = {"dot_dimension_numbers": dims}
    if precision and precision != (Precision.DEFAULT, Precision.DEFAULT):
        attrs["precision_config"] = ir.Attribute.parse(
            "[" + ", ".join(f"#stablehlo<precision {p.name}>" for p in precision) + "]")
    b, o = la.shape[ls[0]], ra.shape[rs[0]]
    # (groups, positions, batch, out features in a group) -> (positions, batch, out features)
    y = ctx.op1("stablehlo.dot_general", [xs, rhs], result_avals=[ShapedArray((g, npos, b, o), oa.dtype)
                                                                   if g > 1 else ShapedArray((npos, b, o), oa.dtype)],
                attributes=attrs)
    if g > 1:
        y = ctx.op1("stablehlo.transpose", [y], result_avals=[ShapedArray((npos, b, g, o), oa.dtype)],
                    attributes={"permutation": L.i64s([1, 2, 0, 3])})
    y = ctx.op1("stablehlo.reshape", [y], result_avals=[ShapedArray((*out_sp, b, o * g), oa.dtype)])
    src = [0] * (n + 2)
    src[os_[0]], src[os_[1]] = n, n + 1
    for j, a in enumerate(os_[2:]):
        src[a] = j
    return ctx.op1("stablehlo.transpose", [y], attributes={"permutation": L.i64s(src)})


# ---------------------------------------------------------------- differentiation rules (JAX's)


def _spec_t(spec: tuple) -> tuple:
    return (spec[1], spec[0]) + tuple(spec[2:])


def _axis_into(src: int, dst: int, x):
    """Merge axis `src` into axis `dst` (numbered after removing `src`), `src` as the major part."""
    shape = aval_of(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new = [d for i, d in enumerate(shape) if i != src]
    new[dst] *= shape[src]
    return reshape(transpose(x, perm), new)


def _axis_out_of(src: int, size1: int, x):
    shape = list(aval_of(x).shape)
    shape[src:src + 1] = [size1, shape[src] // size1]
    return reshape(x, shape)


def _vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dil, rhs_dil):
    ld, rd, od = dilate_shape(in_shape, lhs_dil), dilate_shape(window, rhs_dil), dilate_shape(out_shape, strides)
    before = [r - lo - 1 for r, (lo, _) in zip(rd, padding)]
    return tuple((b, l + r - 1 - o - b) for b, l, r, o in zip(before, ld, rd, od))


def _vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dil, rhs_dil):
    ld, rd, od = dilate_shape(in_shape, lhs_dil), dilate_shape(window, rhs_dil), dilate_shape(out_shape, strides)
    return tuple((lo, (o - l) + (r - lo - 1)) for (lo, _), l, r, o in zip(padding, ld, rd, od))


def _transpose_lhs(g, lhs_aval, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                   feature_group_count, batch_group_count, precision=None, preferred_element_type=None):
    ls, rs, os_ = dimension_numbers
    rhs_shape = aval_of(rhs).shape
    fg = feature_group_count
    if fg > 1:
        rhs = _axis_into(rs[0], rs[1], _axis_out_of(rs[0], fg, rhs))
    elif batch_group_count > 1:
        rhs = _axis_into(rs[0], rs[1], _axis_out_of(rs[0], batch_group_count, rhs))
        fg = batch_group_count
    pads = _vjp_lhs_padding([lhs_aval.shape[i] for i in ls[2:]], [rhs_shape[i] for i in rs[2:]], window_strides,
                            [aval_of(g).shape[i] for i in os_[2:]], padding, lhs_dilation, rhs_dilation)
    w = rev(rhs, rs[2:])
    if aval_of(g).dtype != aval_of(w).dtype:
        w = convert_element_type(w, aval_of(g).dtype)
    out = conv_general_dilated_p.bind(
        g, w, window_strides=tuple(lhs_dilation), padding=pads, lhs_dilation=tuple(window_strides),
        rhs_dilation=tuple(rhs_dilation), dimension_numbers=ConvDimensionNumbers(os_, _spec_t(rs), ls),
        feature_group_count=fg, batch_group_count=1, precision=precision, preferred_element_type=None)
    if batch_group_count > 1:
        out = _axis_into(ls[1], ls[0], _axis_out_of(ls[1], batch_group_count, out))
    return convert_element_type(out, lhs_aval.dtype) if aval_of(out).dtype != lhs_aval.dtype else out


def _transpose_rhs(g, lhs, rhs_aval, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                   feature_group_count, batch_group_count, precision=None, preferred_element_type=None):
    ls, rs, os_ = dimension_numbers
    fg, bg = feature_group_count, batch_group_count
    if bg > 1:
        fg, bg = bg, 1
    elif fg > 1:
        fg, bg = 1, fg
    pads = _vjp_rhs_padding([aval_of(lhs).shape[i] for i in ls[2:]], [rhs_aval.shape[i] for i in rs[2:]],
                            window_strides, [aval_of(g).shape[i] for i in os_[2:]], padding, lhs_dilation,
                            rhs_dilation)
    if aval_of(g).dtype != aval_of(lhs).dtype:
        lhs = convert_element_type(lhs, aval_of(g).dtype)
    out = conv_general_dilated_p.bind(
        lhs, g, window_strides=tuple(rhs_dilation), padding=pads, lhs_dilation=tuple(lhs_dilation),
        rhs_dilation=tuple(window_strides),
        dimension_numbers=ConvDimensionNumbers(_spec_t(ls), _spec_t(os_), _spec_t(rs)),
        feature_group_count=fg, batch_group_count=bg, precision=precision, preferred_element_type=None)
    return convert_element_type(out, rhs_aval.dtype) if aval_of(out).dtype != rhs_aval.dtype else out


def _conv_jvp(primals, tangents, **params):
    lhs, rhs = primals
    tl, tr = tangents
    out = conv_general_dilated_p.bind(lhs, rhs, **params)
    t = None if tl is None else conv_general_dilated_p.bind(tl, rhs, **params)
    if tr is not None:
        t = _ad.add_tangents(t, conv_general_dilated_p.bind(lhs, tr, **params))
    return out, t


def _conv_transpose_rule(ct, lhs, rhs, **params):
    if ct is None:
        return [None, None]
    if _ad.is_undefined(lhs) and _ad.is_undefined(rhs):
        raise TypeError("conv_general_dilated of two tangents is not linear")
    if _ad.is_undefined(lhs):
        return [_transpose_lhs(ct, lhs.aval, rhs, **params), None]
    if aval_of(ct).size == 0:
        return [None, _ad.zeros(rhs.aval)]
    return [None, _transpose_rhs(ct, lhs, rhs.aval, **params)]


conv_general_dilated_p.def_jvp(_conv_jvp)
conv_general_dilated_p.def_transpose(_conv_transpose_rule)


# ---------------------------------------------------------------- batching (JAX's rule; a batch of no examples apart)


@conv_general_dilated_p.def_batch
def _conv_batch(args, dims, *, dimension_numbers, feature_group_count, batch_group_count, **params):
    (lhs, rhs), (ld, rd) = args, dims
    ls, rs, os_ = dimension_numbers
    fg, bg = feature_group_count, batch_group_count
    bind = lambda a, b, fg, bg: conv_general_dilated_p.bind(
        a, b, dimension_numbers=dimension_numbers, feature_group_count=fg, batch_group_count=bg, **params)
    if axis_size(args, dims) == 0:  # a batch of no examples (the regrouping below divides by the batch size)
        example = conv_general_dilated_p.abstract_eval(
            *[aval_of(x).update(shape=example_shape(x, d)) for x, d in zip(args, dims)],
            dimension_numbers=dimension_numbers, feature_group_count=fg, batch_group_count=bg, **params)
        return _ad.zeros(example.update(shape=(0,) + example.shape)), 0
    if ld is not None and rd is not None:
        n = aval_of(lhs).shape[ld]
        if bg > 1:
            new_lhs, bg = _axis_into(ld, ls[0], lhs), bg * n
        else:
            new_lhs, fg = _axis_into(ld, ls[1], lhs), fg * n
        out = bind(new_lhs, _axis_into(rd, rs[0], rhs), fg, bg)
        return _axis_out_of(os_[1], n, out), os_[1]
    if ld is not None:
        n = aval_of(lhs).shape[ld]
        if bg == 1:
            out = bind(_axis_into(ld, ls[0], lhs), rhs, fg, bg)
            return _axis_out_of(os_[0], n, out), os_[0]
        new = _axis_out_of(ls[0] + int(ld <= ls[0]), bg, lhs)
        new = _axis_into(ld + int(ls[0] < ld), ls[0] + 1, new)
        new = _axis_into(ls[0], ls[0], new)
        out = bind(new, rhs, fg, bg)
        return _axis_out_of(os_[0], n, out), os_[0]
    n = aval_of(rhs).shape[rd]
    if fg == 1 and bg == 1:
        out = bind(lhs, _axis_into(rd, rs[0], rhs), fg, bg)
        return _axis_out_of(os_[1], n, out), os_[1]
    g = fg if fg > 1 else bg
    new = _axis_out_of(rs[0] + int(rd <= rs[0]), g, rhs)
    new = _axis_into(rd + int(rs[0] < rd), rs[0] + 1, new)
    new = _axis_into(rs[0], rs[0], new)
    out = bind(lhs, new, fg, bg)
    out = _axis_out_of(os_[1], g, out)
    out = _axis_out_of(os_[1] + 1, n, out)
    out = _axis_into(os_[1], os_[1] + 1, out)
    return out, os_[1]


# ---------------------------------------------------------------- strict wrappers (stagec.lax)


def conv_general_dilated(lhs, rhs, window_strides: Sequence[int], padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count: int = 1, batch_group_count: int = 1,
                         precision=None, preferred_element_type=None):
    """General N-d convolution (JAX's `lax.conv_general_dilated`): `padding` is 'SAME', 'SAME_LOWER', 'VALID' or
    (low, high) pairs; `dimension_numbers` None (NCHW/OIHW/NCHW), strings such as ('NHWC', 'HWIO', 'NHWC'), or a
    `ConvDimensionNumbers`; `precision` None: `config.default_matmul_precision`, read now (as `dot_general`)."""
    lhs, rhs = match_weak(lhs, rhs)
    la, ra = aval_of(lhs), aval_of(rhs)
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    n = la.ndim - 2
    lhs_dilation = tuple(int(d) for d in (lhs_dilation or (1,) * n))
    rhs_dilation = tuple(int(d) for d in (rhs_dilation or (1,) * n))
    window_strides = tuple(int(s) for s in window_strides)
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise ValueError("string padding is not implemented for transposed convolution (lhs_dilation != 1): give "
                             "explicit padding, or use conv_transpose")
        window = dilate_shape([ra.shape[i] for i in dn.rhs_spec[2:]], rhs_dilation)
        padding = padtype_to_pads([la.shape[i] for i in dn.lhs_spec[2:]], window, window_strides, padding)
    padding = tuple((int(lo), int(hi)) for lo, hi in padding)
    pet = None if preferred_element_type is None else _dt.canonicalize(preferred_element_type)
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dn, feature_group_count=int(feature_group_count),
        batch_group_count=int(batch_group_count),
        precision=canonicalize_precision(precision if precision is not None else config.default_matmul_precision),
        preferred_element_type=pet)


def conv(lhs, rhs, window_strides: Sequence[int], padding, precision=None, preferred_element_type=None):
    """`conv_general_dilated` in NCHW/OIHW layout without dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=None,
                              preferred_element_type=None):
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def _transpose_padding(k: int, s: int, padding) -> tuple[int, int]:
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else int(np.ceil(total / 2))
    elif padding == "VALID":
        total, lo = k + s - 2 + max(k - s, 0), k - 1
    else:
        pads = tuple(k - p - 1 for p in padding)
        lo, total = pads[0], sum(pads)
    return lo, total - lo


def conv_transpose(lhs, rhs, strides: Sequence[int], padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel: bool = False, precision=None, preferred_element_type=None,
                   use_consistent_padding: bool = False):
    """The gradient-style "deconvolution" (JAX's `lax.conv_transpose`): a convolution of `lhs` dilated by
    `strides`; default layouts NHWC/HWIO/NHWC (by rank)."""
    nd = aval_of(lhs).ndim
    if dimension_numbers is None:
        dimension_numbers = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                             5: ("NHWDC", "HWDIO", "NHWDC")}.get(nd)
        if dimension_numbers is None:
            raise ValueError(f"conv_transpose has no default layout for rank {nd}: give dimension_numbers")
    dn = conv_dimension_numbers(aval_of(lhs).shape, aval_of(rhs).shape, dimension_numbers)
    k_sp = [aval_of(rhs).shape[i] for i in dn.rhs_spec[2:]]
    rhs_dilation = tuple(rhs_dilation or (1,) * (nd - 2))
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        eff = dilate_shape(k_sp, rhs_dilation)
        rep = [padding] * len(strides) if isinstance(padding, str) else padding
        pads = tuple(_transpose_padding(k, s, p) for k, s, p in zip(eff, strides, rep))
    else:
        pads = padding
    if transpose_kernel:
        rhs = rev(rhs, dn.rhs_spec[2:])
        perm = list(range(nd))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = perm[dn.rhs_spec[1]], perm[dn.rhs_spec[0]]
        rhs = transpose(rhs, perm)
    return conv_general_dilated(lhs, rhs, (1,) * (nd - 2), pads, strides, rhs_dilation, dn, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers) -> tuple:
    """The output shape of `conv_general_dilated` with these shapes (no dilation)."""
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    n = len(lhs_shape) - 2
    if isinstance(padding, str):
        padding = padtype_to_pads([lhs_shape[i] for i in dn.lhs_spec[2:]], [rhs_shape[i] for i in dn.rhs_spec[2:]],
                                  window_strides, padding)
    out = _conv_rule(ShapedArray(lhs_shape, np.float32), ShapedArray(rhs_shape, np.float32),
                     window_strides=tuple(window_strides), padding=tuple(map(tuple, padding)),
                     lhs_dilation=(1,) * n, rhs_dilation=(1,) * n, dimension_numbers=dn, feature_group_count=1,
                     batch_group_count=1)
    return out.shape
