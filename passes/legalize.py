"""Legalization and host offloads: rewrites that make a module compile and run right on a target where IREE 3.13
miscompiles an op, cannot compile it, or computes it much slower than the precision asked for allows, and the
CPU's calls of NumPy (BLAS matmuls, long sorts). Each is a registered pass that a target's pipeline names
(`stagec.compiler.targets`); none asks where it runs. The rewrites take a module in place and say whether they
changed it; `stagec.passes.on_text` gives any of them a text-in, text-out form."""
from __future__ import annotations

import math
import re
from typing import Sequence

import numpy as np

from iree.compiler import ir

from stagec.primitives.reductions import SORT_HOST_ROWS
from stagec.lowering import (BLAS_IMPORTS, BLAS_MODULE, BLAS_TYPES, NUM_KEYS, SORT_IMPORTS, STABLE_KEY, SORT_KEY_TYPES,
                            SORT_MODULE, SORT_OPERANDS, pack_dims)

from .base import Pass, PassStats, Workaround, register
from .bindings import bound_bindings, bound_elementwise_bindings, scalar_uses_apart
from . import packing
from .irutil import (Builder, constant_value, make_constant, nbytes, producer, splat_value, sums_an_add,
                     through_barrier)
from .mathlib import _Builder as _ShapedBuilder


# Unary float functions whose NaN input NVIDIA's Vulkan driver lost (exp(NaN) = 0, tanh(NaN) = 1): IREE's
# approximations clamp the argument with SPIR-V's FMin/FMax, which may return the non-NaN operand.
_NAN_GUARDED = ("stablehlo.exponential", "stablehlo.exponential_minus_one", "stablehlo.tanh", "stablehlo.logistic",
                "stablehlo.log", "stablehlo.log_plus_one", "stablehlo.sine", "stablehlo.cosine", "stablehlo.tan",
                "stablehlo.cbrt")


def _element(t) -> ir.Type | None:
    """The element type of a ranked tensor type (0-d included), else None."""
    try:
        return ir.RankedTensorType(t).element_type
    except ValueError:
        return None


def _is_bf16(v) -> bool:
    return _element(v.type) == ir.BF16Type.get()


def _is_f32(v) -> bool:
    return _element(v.type) == ir.F32Type.get()


def _like(t, element) -> ir.Type:
    """Tensor type `t` with another element type."""
    return ir.RankedTensorType.get(ir.RankedTensorType(t).shape, element)


def _create(name, operands, results, attributes=None):
    return ir.Operation.create(name, results=results, operands=operands, attributes=attributes)


def _replace(module: ir.Module, keep, build) -> int:
    """Replace each op for which `keep(op)` holds by `build(op, operands, attrs)`'s value (built before it);
    how many."""
    found = _ops_where(module, keep)
    for op in found:
        with ir.InsertionPoint(op), op.location:
            new = build(op, list(op.operands), {name: op.attributes[name] for name in op.attributes})
        op.results[0].replace_all_uses_with(new)
        op.erase()
    return len(found)


def _operand_apart(op, i: int) -> None:
    """`op`'s operand `i` read through an `optimization_barrier` of its own, made right before `op`."""
    v = op.operands[i]
    with ir.InsertionPoint(op), op.location:
        op.operands[i] = _create("stablehlo.optimization_barrier", [v], [v.type]).result


def _all_operands_apart(op) -> None:
    """All of `op`'s operands read through one `optimization_barrier`, made right before `op`."""
    vals = list(op.operands)
    with ir.InsertionPoint(op), op.location:
        bar = _create("stablehlo.optimization_barrier", vals, [v.type for v in vals])
    for i, r in enumerate(bar.results):
        op.operands[i] = r


def _widen(v):
    return v if _is_f32(v) else _create("stablehlo.convert", [v], [_like(v.type, ir.F32Type.get())]).result


def bf16_in_f32(module: ir.Module, apart: bool) -> int:
    """bf16 `power` and `dot_general` computed in float32 and rounded once; with `apart`, a product's widened
    operands and its float32 result each behind an `optimization_barrier` (dispatches of their own).

    - bf16 `dot_general`: CUDA fails on a bf16 result ("'func.func' op failed to distribute"), so the product
      accumulates in f32 (what JAX does for a bf16 dot) and is rounded once. SPIR-V fails on any bf16 operand
      fused into a matmul ("failed to legalize vector.bitcast"): `apart`.
    - bf16 `power`: CUDA rounded the intermediate y*log(x) to bf16 (16.75**3.72: 34048, not 35629); it is
      computed in f32 and rounded once, as JAX computes bf16 elementwise ops (0-d ones included)."""
    def build(op, operands, attrs):
        out_type = op.results[0].type
        wide = _like(out_type, ir.F32Type.get())
        dot = op.name == "stablehlo.dot_general"
        if apart or not dot:
            operands = [_widen(v) for v in operands]
        if apart and dot:
            operands = list(_create("stablehlo.optimization_barrier", operands, [v.type for v in operands]).results)
        product = _create(op.name, operands, [wide], attrs).result
        if apart and dot:
            product = _create("stablehlo.optimization_barrier", [product], [product.type]).result
        return _create("stablehlo.convert", [product], [out_type]).result
    return _replace(module, lambda op: op.name in ("stablehlo.dot_general", "stablehlo.power")
                    and _is_bf16(op.results[0]), build)


def half_products_in_f32(module: ir.Module) -> int:
    """Each float16 or bfloat16 `dot_general` and `convolution` accumulates in float32 (its result type), rounded once
    after, as XLA computes them. IREE 3.13 summed in the half type: a 40x40 float16 matmul gave 1227 of 1600 results
    other than the exact product rounded (up to 8 ulps), bfloat16 614, convolutions alike (CPU and lavapipe); the
    CPU's `upcast-half-dots` covered only products of 64^3 multiply-adds or more, eager kernels none. A product of
    one-element operands widens them too: IREE made it a `multiply` of half operands with a float32 result, which
    did not legalize (`jit(x @ x)` of a float16 `x` of one element; the product is exact in float32 either way). How
    many."""
    def build(op, operands, attrs):
        out_type = op.results[0].type
        if all(math.prod(ir.RankedTensorType(v.type).shape) == 1 for v in operands):
            operands = [_widen(v) for v in operands]
        return _create("stablehlo.convert", [_create(op.name, operands, [_like(out_type, ir.F32Type.get())],
                                                     attrs).result], [out_type]).result
    return _replace(module, lambda op: op.name in ("stablehlo.dot_general", "stablehlo.convolution")
                    and _element(op.results[0].type) in (ir.F16Type.get(), ir.BF16Type.get()), build)


def grouped_conv_kernels_apart(module: ir.Module) -> int:
    """Each convolution with feature groups whose operands are of a narrower type than its result (a float16 or
    bfloat16 one after `half-products-in-f32`) computes with both widened to the result's type, and each such
    convolution whose operands are both widening `convert`s reads its kernel through an `optimization_barrier`.
    IREE 3.13 folds the two extensions into a grouped convolution and then fails to compile it ("'tensor.collapse_shape'
    op expected collapsed type to be 'tensor<3x1x3xf16>', but got 'tensor<3x1x3xf32>'": every float16 or bfloat16
    depthwise convolution, and `conv(x.astype(float32), w.astype(float32))` of float16 `x` and `w`, eager too). How
    many convolutions."""
    def grouped(op) -> bool:
        return op.name == "stablehlo.convolution" and \
            ir.IntegerAttr(op.attributes["feature_group_count"]).value > 1

    n = 0
    for op in _ops_where(module, grouped):
        out = _element(op.results[0].type)
        changed = False
        for i, v in enumerate(list(op.operands)):
            if _element(v.type) != out and isinstance(out, ir.FloatType):
                with ir.InsertionPoint(op), op.location:
                    op.operands[i] = _create("stablehlo.convert", [v], [_like(v.type, out)]).result
                changed = True
        if all(producer(v) is not None and _widening(producer(v)) for v in op.operands):
            _operand_apart(op, 1)
            changed = True
        n += changed
    return n


def self_updates_apart(module: ir.Module) -> int:
    """Each `dynamic_update_slice` whose update is computed from its own operand (`dus(y, y[:2, :3], (0, 1))`, a
    shift), or from a value updated in place into it by earlier updates, reads the update through an
    `optimization_barrier`. IREE 3.13 updated the operand's buffer in place while
    reading the update from it: overlapping rows came out smeared (`[0, -2, 0, 3]` shifted by one gave `[0, 0, 0,
    0]`), or the call failed ("source and target ranges overlap within the same buffer"), also in loop bodies
    (`fori_loop` shifting its carry). How many."""
    def reads(v, targets) -> bool:  # (the whole producer cone of v: a bound could miss a far read)
        todo, seen = [v], set()
        while todo:
            w = todo.pop()
            if any(w == t for t in targets):
                return True
            src = producer(w)
            if src is not None and src.operation not in seen:
                seen.add(src.operation)
                todo.extend(src.operands)
        return False

    def buffer(v) -> list:  # (v and the operands updated in place into it: one buffer)
        out = [v]
        while (src := producer(out[-1])) is not None and src.name == "stablehlo.dynamic_update_slice":
            out.append(src.operands[0])
        return out

    n = 0
    for op in _ops_where(module, lambda op: op.name == "stablehlo.dynamic_update_slice"):
        owner = op.operands[0].owner  # (a function's argument is copied first; a loop body's is not)
        if not (isinstance(owner, ir.Block) and owner.owner.name == "func.func") and \
                reads(op.operands[1], buffer(op.operands[0])):
            _operand_apart(op, 1)
            n += 1
    return n


def sliced_indices_apart(module: ir.Module) -> int:
    """Each reshape of a slice that a gather's or scatter's indices are computed from, and that is read elsewhere too,
    reads the slice through an `optimization_barrier`. IREE 3.13's BubbleUpExpandShapesPass moved such a reshape (1 ->
    1 x 1) above the slice as a slice of another rank, and the compile failed ("expected rank to be smaller or equal
    to the other rank"; a crash without the other reader's op): the gradient of `lax.switch` or `lax.cond` around an
    `.at[i]` update, whose index is also kept for the transpose. How many."""
    todo = [op.operands[1] for op in _ops_where(module, lambda op: op.name in ("stablehlo.gather", "stablehlo.scatter"))]
    seen, n = set(), 0
    while todo:  # (the indices' producer cones; each op once)
        src = producer(todo.pop())
        if src is None or src.operation in seen:
            continue
        seen.add(src.operation)
        todo.extend(src.operands)
        if src.name == "stablehlo.reshape" and (s := producer(src.operands[0])) is not None and \
                s.name == "stablehlo.slice" and sum(1 for _ in src.results[0].uses) > 1:
            _operand_apart(src, 0)
            n += 1
    return n


def transposed_reductions_apart(module: ir.Module) -> int:
    """Each reduction of several operands (an argmax's value and index) whose result is read in another order (a
    `transpose`, or a `broadcast_in_dim` that permutes, through elementwise ops) passes its results through a barrier.
    IREE 3.13 fused the transposing reader into the reduction and the compile failed ("expected number of yield
    values (2) to match the number of inits"): `vmap(vmap(argmax, in_axes=-1, out_axes=-1))`. How many."""
    def transposed(v) -> bool:
        todo, seen = [v], set()
        while todo:
            for use in todo.pop().uses:
                op = use.owner
                if op.operation in seen:
                    continue
                seen.add(op.operation)
                if op.name == "stablehlo.transpose" or (op.name == "stablehlo.broadcast_in_dim" and list(
                        op.attributes["broadcast_dimensions"]) != sorted(op.attributes["broadcast_dimensions"])):
                    return True
                if len(op.results) == 1 and op.name != "stablehlo.reduce" and op.results[0].type == v.type:
                    todo.append(op.results[0])
        return False

    return _results_apart(module, lambda op: op.name == "stablehlo.reduce" and len(op.results) > 1
                          and any(transposed(r) for r in op.results))


def pads_of_pads_apart(module: ir.Module) -> int:
    """Each `pad` of a `pad`, either with interior padding, reads the inner one through a barrier. IREE 3.13 merged
    the two (of one padding value) and dropped the interior padding: pad(pad([1], low 1), interior 2) was [0, 1, 0, 0],
    not [0, 0, 0, 1] (11 of 58 random pairs; `iree-run-module` alone), which made `jit(grad(eigvalsh))` wrong for every
    matrix (its cotangent's diagonal is such a pair). How many."""
    def interior(op) -> bool:
        return any(int(k) for k in op.attributes["interior_padding"])

    n = 0
    for op in _ops_where(module, lambda op: op.name == "stablehlo.pad"):
        inner = producer(op.operands[0])
        if inner is not None and inner.name == "stablehlo.pad" and (interior(op) or interior(inner)):
            _operand_apart(op, 0)
            n += 1
    return n


def crossed_reductions_apart(module: ir.Module) -> int:
    """Each reduction whose result one op reads in two orders (`s[:, None] + s[None, :]`, `v.T + v` of a keepdims
    sum, an outer product `v @ v.T`; through broadcasts, transposes, reshapes and elementwise ops) passes its results
    through a barrier. IREE 3.13
    fused the reduction into that reader and computed it for one order only: `jit` of the outer sum of a column sum
    with itself was right on the diagonal and 0 elsewhere, `c[:, None] * c[None, :]` of a mean likewise, at any opt
    level on the CPU (lavapipe's Vulkan module was right). How many."""
    def reducing(op) -> bool:  # (stablehlo's, or a generic of `fuse`'s with a reduction loop)
        return op.name == "stablehlo.reduce" or (op.name == "linalg.generic"
                                                 and "reduction" in str(op.attributes["iterator_types"]))
    return _results_apart(module, lambda op: reducing(op) and any(_read_crossed(r) for r in op.results))


_REORDERS = ("stablehlo.broadcast_in_dim", "stablehlo.transpose", "stablehlo.reshape", "stablehlo.reverse",
             "linalg.generic")
_NOT_ELEMENTWISE = ("stablehlo.dot_general", "stablehlo.convolution", "stablehlo.fft", "stablehlo.custom_call",
                    "stablehlo.triangular_solve", "stablehlo.cholesky", "func.return", "func.call")


def _is_outer_product(op) -> bool:
    """Whether `op` is a `dot_general` contracting one element a result (an outer product)."""
    if op.name != "stablehlo.dot_general":
        return False
    t = ir.RankedTensorType(op.operands[0].type)
    return math.prod(t.shape[d] for d in packing.dot_dims(op).get(("lhs", "contracting"), [])) == 1


def _read_crossed(v) -> bool:
    """Whether some op reads `v` in two orders: each value derived from `v` carries the map from its dimensions to
    `v`'s (None: broadcast), and an op receiving two maps reads two orders."""
    shape = lambda x: ir.RankedTensorType(x.type).shape
    todo, reads, opaque = [(v, tuple(range(len(shape(v)))))], {}, 0
    while todo:
        w, m = todo.pop()
        for use in w.uses:
            op = use.owner
            outer = _is_outer_product(op)  # (IREE makes it elementwise: `s[:, None] @ s[None, :]` reads two orders)
            if not outer and (op.name in _NOT_ELEMENTWISE or not (_elementwise(op) or op.name in _REORDERS)):
                continue  # (a product, a return: IREE keeps the reduction apart from it)
            key = (m, use.operand_number) if outer or op.name == "linalg.generic" else m
            if op.name == "linalg.generic":
                key = (m, str(op.attributes["indexing_maps"][use.operand_number]))
            seen = reads.setdefault(op.operation, set())
            if key in seen:
                continue
            seen.add(key)
            if len(seen) > 1:
                return True
            out = None
            if op.name == "stablehlo.broadcast_in_dim":
                src, dst = shape(op.operands[0]), shape(op.results[0])
                out = [None] * len(dst)
                for i, d in enumerate(op.attributes["broadcast_dimensions"]):
                    out[d] = m[i] if src[i] == dst[d] else None
            elif op.name == "stablehlo.transpose":
                out = [m[p] for p in op.attributes["permutation"]]
            elif op.name == "stablehlo.reshape":
                src, dst = shape(op.operands[0]), shape(op.results[0])
                kept = [m[i] for i, n in enumerate(src) if n != 1]
                if [n for n in src if n != 1] == [n for n in dst if n != 1]:  # (unit dimensions added or dropped)
                    it = iter(kept)
                    out = [None if n == 1 else next(it) for n in dst]
                else:  # (another reshape: a map of its own, unlike any other)
                    out, opaque = [("opaque", opaque)] * len(dst), opaque + 1
            elif op.name == "stablehlo.reverse":
                out, opaque = [("opaque", opaque)] * len(m), opaque + 1
            elif op.name != "linalg.generic" and not outer:
                out = m
            if out is not None:
                todo.append((op.results[0], tuple(out)))
    return False


def broadcast_contractions_apart(module: ir.Module) -> int:
    """Each sum over two or more dimensions of a `multiply` whose operand is broadcast along a summed dimension reads
    the product through an `optimization_barrier`. IREE 3.13 took the pair for a contraction in which one operand
    lacks a reduced dimension, and its CPU codegen failed ("'vector.contract' op invalid accumulator/result vector
    shape"), whatever the flags: `jit(lambda x, a: sum(x * a))` of x (2, 128) and a (128,) (a sum of 512 elements or
    more is split into rows first and compiled), `sum(x * a, axis=(1, 2))` of any size. How many."""
    def summed(op) -> bool:
        return any(o.name == "stablehlo.add" for o in op.regions[0].blocks[0].operations)

    def lacks(v, dims) -> bool:  # (`v` broadcast along one of `dims`)
        b = producer(v)
        if b is None or b.name != "stablehlo.broadcast_in_dim":
            return False
        src, dst = ir.RankedTensorType(b.operands[0].type).shape, ir.RankedTensorType(b.results[0].type).shape
        kept = {d for i, d in enumerate(b.attributes["broadcast_dimensions"]) if src[i] == dst[d]}
        return not dims <= kept

    def apart(op) -> bool:
        if op.name != "stablehlo.reduce" or len(op.operands) != 2 or len(op.attributes["dimensions"]) < 2:
            return False
        m = producer(op.operands[0])
        dims = set(op.attributes["dimensions"])
        return m is not None and m.name == "stablehlo.multiply" and summed(op) and any(lacks(v, dims) for v in m.operands)

    found = _ops_where(module, apart)
    for op in found:
        _operand_apart(op, 0)
    return len(found)


def _strided_slice(v) -> bool:
    """Whether `v` is (through reshapes, transposes, conversions) a `slice` whose elements are not one contiguous run
    of its operand's."""
    while (src := producer(v)) is not None and src.name in _VIEWS:
        v = src.operands[0]
    if src is None or src.name != "stablehlo.slice":
        return False
    shape = ir.RankedTensorType(src.operands[0].type).shape
    sizes = ir.RankedTensorType(src.results[0].type).shape
    strides = list(src.attributes["strides"])
    if any(st != 1 and z > 1 for st, z in zip(strides, sizes)):
        return True
    k = next((d for d, z in enumerate(sizes) if z != 1), len(sizes))  # (the first dimension of more than one)
    return any(z != n for z, n in zip(sizes[k + 1:], shape[k + 1:]))


def strided_gather_operands_apart(module: ir.Module) -> int:
    """Each gather whose operand is a slice that is not one contiguous run (a column `x[1, :, 2]`, `x[::2, 1]`; through
    views) reads it through an `optimization_barrier`: IREE 3.13 fused the slice into the gather's dispatch as a
    strided, rank-reducing load, and LLVM translation failed ("LLVM Translation failed for operation:
    builtin.unrealized_conversion_cast", CPU and CUDA): `x[1, :, 2][i]`, `solve(a, a[:, 0])` of a slice of a batch
    (its pivots gather the right-hand side). How many."""
    n = 0
    for op in _ops_where(module, lambda op: op.name == "stablehlo.gather"):
        if _strided_slice(op.operands[0]):
            _operand_apart(op, 0)
            n += 1
    return n


# IREE 3.13's CPU code lost a strided slice's stride (read the first elements instead) where its operand, of up to
# 16 elements, was computed in the slice's dispatch from values of fewer bits (a widening convert): bfloat16
# `jit(diagonal)` gave the first row, `int8.astype(int32)[::3] + 1` the first values. 64 for a margin.
NARROW_SLICE_MAX_ELEMENTS = 64


def narrow_strided_slices_apart(module: ir.Module, most: int | None = NARROW_SLICE_MAX_ELEMENTS) -> int:
    """Each slice with a stride over an operand of up to `most` elements (None: any) computed from values of fewer
    bits (`_computed_from_narrower`) reads it through an `optimization_barrier`: that computation in a dispatch of its
    own, where IREE then reads the slice with its stride. How many."""
    n = 0
    for op in _ops_where(module, lambda op: op.name == "stablehlo.slice"):
        t = ir.RankedTensorType(op.operands[0].type)
        sizes = ir.RankedTensorType(op.results[0].type).shape
        if t.has_static_shape and (most is None or math.prod(t.shape) <= most) and \
                any(st != 1 and z > 1 for st, z in zip(op.attributes["strides"], sizes)) and \
                _computed_from_narrower(op.operands[0]):
            _operand_apart(op, 0)
            n += 1
    return n


def _bits(t) -> int | None:
    """The bits of an element of tensor type `t` (bool: 1; complex: both parts), else None."""
    et = _element(t)
    if isinstance(et, ir.IntegerType):
        return ir.IntegerType(et).width
    if isinstance(et, ir.FloatType):
        return ir.FloatType(et).width
    if isinstance(et, ir.ComplexType):
        return 2 * ir.FloatType(ir.ComplexType(et).element_type).width
    return None


_FUSED_VIEWS = ("stablehlo.slice", "stablehlo.reshape", "stablehlo.transpose", "stablehlo.broadcast_in_dim",
                "stablehlo.reverse", "stablehlo.clamp")


def _fused_into_consumer(op) -> bool:
    """Whether IREE computes `op` in its consumer's dispatch: a view, an elementwise op (stablehlo's, or a
    `linalg.generic` of `fuse` with parallel loops only), an iota or a splat constant."""
    if op.name in _FUSED_VIEWS or op.name in ("stablehlo.iota", "tensor.empty") or _elementwise(op):
        return op.name != "stablehlo.constant" or splat_value(op.results[0]) is not None
    return op.name == "linalg.generic" and "reduction" not in str(op.attributes["iterator_types"])


def _computed_from_narrower(v) -> bool:
    """Whether `v` is computed, through ops fused into its reader's dispatch (`_fused_into_consumer`), from a value of
    more than one element of fewer bits an element than `v`'s: one of those ops' inputs (an argument, another op's
    result), or the operand of a convert among them, bools aside (IREE may compute that operand in a dispatch of its
    own: a narrowing convert read twice; a comparison's bools it computes in place)."""
    def narrower(w) -> bool:
        t = ir.RankedTensorType(w.type)
        return (b := _bits(t)) is not None and b < bits and t.has_static_shape and math.prod(t.shape) > 1

    bits, todo, seen = _bits(v.type), [v], set()
    if bits is None:
        return False
    while todo:
        src = producer(w := todo.pop())
        if src is None or not _fused_into_consumer(src):
            if narrower(w):
                return True
        elif src.operation not in seen:
            seen.add(src.operation)
            u = src.operands[0] if src.name == "stablehlo.convert" else None
            if u is not None and _bits(u.type) != 1 and narrower(u):
                return True
            todo.extend(src.operands)
    return False


def widened_scatter_updates_apart(module: ir.Module) -> int:
    """Each scatter's updates computed, through views and elementwise ops, from values of fewer bits an element (a
    widening convert: `zeros(n, int64).at[i].set(mask)` of a bool or int32 mask, float32 to float64; a select of
    int64 constants on an int32 comparison) read through an `optimization_barrier`: that computation in a dispatch of
    its own. Fused into the scatter's dispatch, IREE 3.13's CUDA codegen failed ("'func.func' op failed to apply
    fusion + hoisting patterns (set 1)"): `unique`, `intersect1d`, `setdiff1d` and `setxor1d` with `size=`, whose
    inverse and counts scatter int32 positions widened to int64. (Updates of the scatter's width, or widened only from
    scalars, compiled.) How many updates."""
    n = 0
    for op in _ops_where(module, lambda op: op.name == "stablehlo.scatter"):
        k = (len(op.operands) - 1) // 2  # (the inputs, the indices, then the updates)
        for i in range(k + 1, 2 * k + 1):
            if _computed_from_narrower(op.operands[i]):
                _operand_apart(op, i)
                n += 1
    return n


def loop_updates_apart(module: ir.Module) -> int:
    """In a loop that holds a `case` or `if`, each `dynamic_update_slice`'s update passes through an
    `optimization_barrier`. IREE 3.13 lost the loop's in-place updates beside such a branch: a scan whose body
    switches 3 ways stacked its first output and zeros after it (`vmap` of `lax.scan(lambda c, i: (switch(i % 3,
    ...), c[:1]), ...)`), or kept only the first step's carry (read after the loop as `c + sum(ys)`). A barrier on the
    branch's results too fixed the same programs and made five others fail at run time (a null buffer). How many."""
    loops = [op for op in _ops_where(module, lambda op: op.name == "stablehlo.while") if _ops_where(
        op, lambda inner: inner.name in ("stablehlo.case", "stablehlo.if"))]
    # (each update once, though nested loops both hold it)
    updates = {u.operation: u for w in loops for u in _ops_where(w, lambda op: op.name == "stablehlo.dynamic_update_slice")}
    for op in updates.values():
        _operand_apart(op, 1)
    return len(updates)


DEVICE = "#hal.device.promise<@__device_0>"  # (the one device IREE makes for `--iree-hal-target-backends`)
# Bytes a loop carries from which its function is placed: under it IREE's copies of them cost less than the copies
# of shared starts that placing adds (a 300-lane gamma draw's loop carries 14.6 KB: 15 copies, its first call 0.80 -> 0.87 s)
PLACED_BYTES = 1 << 16


def _carried_bytes(w) -> int:
    """The bytes a loop carries (0 where a shape is dynamic: such loops stay as IREE makes them)."""
    if not all(ir.RankedTensorType(v.type).has_static_shape for v in w.operands):
        return 0
    return sum(nbytes(v) for v in w.operands)


def _same_key(v: ir.Value):
    """What IREE takes for one value: the value itself, or a constant's type and contents (it merges equal ones)."""
    op = producer(v)
    if op is not None and op.name == "stablehlo.constant":  # (elided contents compare equal: one more copy, no harm)
        return op.operation.get_asm(large_elements_limit=64).split("=", 1)[1]
    return v


def _loop_aliases(w) -> bool:
    """Whether a loop's body yields what could share a buffer with another carried value: a value it yields twice
    (or equal constants), a constant, a value from outside the loop, or a carried value at another position."""
    body = w.regions[1].blocks[0]
    args = list(body.arguments)
    ret = list(body.operations)[-1]
    seen = set()
    for i, y in enumerate(ret.operands):
        op = producer(y)
        if op is None:
            if y not in args or args.index(y) != i:
                return True
        elif op.name == "stablehlo.constant" or not _inside(op, w):
            return True
        key = _same_key(y)
        if key in seen:
            return True
        seen.add(key)
    return False


def _inside(op, w) -> bool:
    parent = op.operation.parent
    while parent is not None:
        if parent == w.operation:
            return True
        parent = parent.parent
    return False


def _copies(values: list, before) -> list:
    """Copies of `values`, each a new value equal to its source that IREE can neither fold nor merge with another:
    `select(p_k, v, barrier(v))`, p_k a comparison of a barrier of the constant k with k (true, opaque). (A constant
    in place of `barrier(v)` folded the select where v folded to that constant: complex zeros made by
    `stablehlo.complex`.) The comparisons made together, one scalar dispatch; the selects alike but for p_k."""
    with ir.InsertionPoint(before), before.location:
        i32 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))
        ks = [make_constant(np.array(k + 1, np.int32), i32) for k in range(len(values))]
        bs = [_create("stablehlo.optimization_barrier", [k], [i32]).result for k in ks]
        eq = ir.Attribute.parse("#stablehlo<comparison_direction EQ>")
        ps = [_create("stablehlo.compare", [b, k], [ir.RankedTensorType.get([], ir.IntegerType.get_signless(1))],
                      {"comparison_direction": eq}).result for b, k in zip(bs, ks)]
        return [_create("stablehlo.select", [p, v, _create("stablehlo.optimization_barrier", [v], [v.type]).result],
                        [v.type]).result for p, v in zip(ps, values)]


def loops_on_one_device(module: ir.Module) -> int:
    """Each function holding a loop is placed on the device (`stream.affinity`). IREE 3.13's affinity analysis
    gives a loop's carried values no device, so its conversion to streams put a transfer before every use of them
    in the body, and no later pass removed one: each iteration copied every carried tensor whole (a scan's stacked
    outputs, 15 stacks of an LSTM's gradient: time quadratic in the sequence length). Placed, the loop updates them
    in place; but then IREE also let two carried values that start from one value (15 stacks of zeros) share its
    buffer: wrong values. So each carried value starting from a value another one starts from (or an equal constant)
    starts from a copy of it IREE cannot fold or merge (`_copies`), and a function whose loop yields what
    could alias (`_loop_aliases`) keeps IREE's copies, as does one calling the host (BLAS, callbacks: placed, a loop's
    host calls read zeros) or whose loops carry little (`PLACED_BYTES`). How many functions."""
    placed = 0
    for f in _ops_where(module, lambda op: op.name == "func.func"):
        loops = _ops_where(f, lambda op: op.name == "stablehlo.while")
        if (not loops or "stream.affinity" in f.attributes or max(_carried_bytes(w) for w in loops) < PLACED_BYTES
                or any(_loop_aliases(w) for w in loops) or _ops_where(f, lambda op: op.name == "func.call")):
            continue
        for w in loops:
            seen, dups = set(), []
            for i, v in enumerate(w.operands):
                key = _same_key(v)
                if key in seen:
                    dups.append(i)
                seen.add(key)
            for i, c in zip(dups, _copies([w.operands[i] for i in dups], w) if dups else []):
                w.operands[i] = c
        f.attributes["stream.affinity"] = ir.Attribute.parse(DEVICE)
        placed += 1
    return placed


def loops_unplaced(module: ir.Module) -> int:
    """`loops-on-one-device` undone: each function's `stream.affinity` removed (a retry, for what IREE 3.13 fails to
    compile placed). How many."""
    funcs = [op for op in _ops_where(module, lambda op: op.name == "func.func") if "stream.affinity" in op.attributes]
    for op in funcs:
        del op.attributes["stream.affinity"]
    return len(funcs)


def loop_concats_apart(module: ir.Module) -> int:
    """In a loop, each `concatenate` reads its operands through one `optimization_barrier`. IREE 3.13 at O2/O3
    (dispatch creation's multi-use fusion) wrote two such concatenates of one shape into one buffer: the forward-mode
    derivative of a loop around `associative_scan(lambda p, q: p * q * 0.9, c)` returned the tangent's value in the
    primal (`jvp(fori_loop(0, 2, ...))` at [-0.9, 0.6, -0.5]: [-0.9, -0.0243, 0.043] for [-0.9, 0.394, 0.0775]). How
    many."""
    concats = {c.operation: c for w in _ops_where(module, lambda op: op.name == "stablehlo.while")
               for c in _ops_where(w, lambda op: op.name == "stablehlo.concatenate")}
    for op in concats.values():
        _all_operands_apart(op)
    return len(concats)


def nan_guards(module: ir.Module) -> int:
    """Each `_NAN_GUARDED` function passes a NaN input through by a select (NVIDIA's Vulkan returned exp(NaN) = 0)."""
    i1 = ir.IntegerType.get_signless(1)

    def build(op, operands, attrs):
        out_type = op.results[0].type
        e = _create(op.name, operands, [out_type], attrs).result
        nan = _create("stablehlo.compare", [operands[0], operands[0]], [_like(out_type, i1)],
                      {"comparison_direction": ir.Attribute.parse("#stablehlo<comparison_direction NE>")})
        return _create("stablehlo.select", [nan.result, operands[0], e], [out_type]).result
    return _replace(module, lambda op: op.name in _NAN_GUARDED, build)


def f32_dots_bf16_3x(module: ir.Module) -> int:
    """Each float32 `dot_general` below `Precision.HIGHEST` as three bfloat16 products (`_bf16_3x`). IREE has no
    TF32 on CUDA, and its float32 matmul runs on the SIMT cores (4096²: 35 ms against 1.2 ms for bf16 on an H100)."""
    return _replace(module, _is_f32_product_below_highest,
                    lambda op, operands, attrs: _bf16_3x(operands, op.results[0].type, attrs, _create, _like))


_PASS_THROUGH = ("stablehlo.reshape", "stablehlo.convert")  # (no computation: looked through on the way to a reduce)


def _elementwise(op) -> bool:
    """One result of the shape of every operand, no regions (a transpose of a square array counts: conservative)."""
    types = [v.type for v in (*op.results, *op.operands)]
    if (len(op.results) != 1 or len(op.regions) or op.name == "stablehlo.optimization_barrier"
            or not all(isinstance(t, ir.RankedTensorType) for t in types)):  # (tokens: effects, not values)
        return False
    return all(t.shape == types[0].shape for t in types)


def isolate_multi_use_reductions(module: ir.Module) -> bool:
    """Pass each reduction result that IREE 3.13's multi-use fusion (`--iree-dispatch-creation-fuse-multi-use`,
    on at O2 and O3) may compute wrongly passed through an `optimization_barrier`.

    The pattern: a reduction result used more than once, one use an elementwise op (as `log(s)`) whose result reaches
    another reduction (a `stablehlo.reduce`, or a `linalg.generic` of `fuse` with a reduction loop).
    `s = sum(exp(z), 1); (sum(z - log(s)[:, None]), 1 / s)` over 8x33 float32 gave -1149.9 for -1052.4 (a log-softmax
    loss beside the softmax its gradient needs, in `jit(value_and_grad)`), `(sum(z - log(s)[:, None], 1), s)` over
    1000x1000 rows 40% off. Materialized, the result is read by each use and they are right. (Turning the fusion off
    for the whole module fixed those too, but made a complex SVD's module wrong, 4.4 off: the barrier changes the
    module only there.) Layernorm, softmax and log-softmax alone (the reduction's other uses are broadcasts) were
    right in every shape tried and are left alone. Whether it changed the module."""

    def reducing(op) -> bool:  # (stablehlo's, or a generic of `fuse`'s with a reduction loop)
        return op.name == "stablehlo.reduce" or (op.name == "linalg.generic"
                                                 and "reduction" in str(op.attributes["iterator_types"]))

    reduces = _ops_where(module, reducing)
    if len(reduces) < 2:
        return False

    def uses(op):
        for r in op.results:
            for u in r.uses:
                yield u.owner

    def users(op):  # (through keepdims' reshapes)
        for u in uses(op):
            if u.name in _PASS_THROUGH:
                yield from users(u)
            else:
                yield u

    def reaches_reduce(op) -> bool:
        # (`seen` holds the operations, equal and hashed by the op they wrap: each `owner` is a fresh Python
        # wrapper, and the `id` of a freed one was reused for another op, which then counted as seen: the walk
        # stopped early in about a third of the runs and the hazard went unfixed)
        work, seen = [op], set()
        while work:
            o = work.pop()
            if reducing(o):
                return True
            if o.operation in seen or o.name == "func.return":
                continue
            seen.add(o.operation)
            work.extend(uses(o))
        return False

    changed = False
    for r in reduces:
        found = list(users(r))
        # (a use whose results only feed another use, as `is_finite(m)` in `select(is_finite(m), m, 0)`, is part
        # of that use: one value derived from r, not a second consumer)
        ops = {u.operation for u in found}
        found = [u for u in found if not (feeds := [x.operation for x in uses(u)])
                 or not all(x in ops for x in feeds)]
        if len(found) < 2 or not any(_elementwise(u) and reaches_reduce(u) for u in found):
            continue
        for v in r.results:
            through_barrier(v, r)
        changed = True
    return changed


def _ops_where(module, keep) -> list:
    """The ops of `module`, nested ones included, for which `keep(op)` holds, in walk order (post-order: an op after
    the ops nested in it).

    The bodies of `linalg.generic`s are not looked into: the passes build them of scalar `arith` / `math` ops, which
    no `keep` here takes (each asks for StableHLO or `func` ops, or generics themselves), and they are most of a fused
    float64 module's ops (5,691 of 7,426 in 53 stats functions, walked by each of ~30 passes)."""
    found = []
    advance, skip = ir.WalkResult.ADVANCE, ir.WalkResult.SKIP

    def visit(op):
        if keep(op):
            found.append(op)
        return skip if op.name == "linalg.generic" else advance
    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)  # (pre-order: only it skips an op's regions)
    if len(found) < 2:
        return found
    out, open_ = [], []  # (pre-order -> post-order: an op leaves `open_` once the next one is not nested in it)
    for op in found:
        while open_ and not _encloses(open_[-1], op):
            out.append(open_.pop())
        open_.append(op)
    out.extend(reversed(open_))
    return out


def _encloses(outer, op) -> bool:
    """Whether `op` is nested in `outer` (at any depth)."""
    if not len(outer.regions):
        return False
    outer = outer.operation
    p = op.parent
    while p is not None:
        if p.operation == outer:
            return True
        p = p.parent
    return False


# Ops a sliced matmul operand may pass through on its way from the slice (layout and type changes).
_VIEWS = ("stablehlo.reshape", "stablehlo.transpose", "stablehlo.convert", "stablehlo.broadcast_in_dim")


def _reaches(v, hit, through: tuple[str, ...]) -> bool:
    """Whether a producer of `v`, followed back through elementwise ops and the ops named in `through`, is one that
    `hit(op)` accepts."""
    work, seen = [v], set()
    while work:
        src = producer(work.pop())
        if src is None or src.operation in seen:
            continue
        seen.add(src.operation)
        if hit(src):
            return True
        if _elementwise(src) or src.name in through:
            work.extend(src.operands)
    return False


def slice_chain(v, slices=("stablehlo.slice", "stablehlo.dynamic_slice")) -> list | None:
    """The ops from a slice to `v` (the slice first) where `v` is one (through reshapes, transposes, conversions),
    else None."""
    ops = []
    while not isinstance(v.owner, ir.Block):  # (a block's: a function argument)
        op = v.owner.operation
        ops.append(op)
        if op.name in slices:
            return ops[::-1]
        if op.name not in _VIEWS:
            return None
        v = op.operands[0]
    return None


def sliced_operand(v) -> bool:
    """Whether `v` is a slice (`slice_chain`): a `dot_general` operand `materialize_sliced_dot_operands`
    materializes (and `driver.Facts.sliced_dots` reads)."""
    return slice_chain(v) is not None


def materialize_sliced_dot_operands(module: ir.Module) -> bool:
    """Pass each `dot_general` operand that is a slice (through reshapes, transposes, conversions) passed
    through an `optimization_barrier`, so that it is computed into a buffer of its own; whether there was one.

    With data tiling, IREE 3.13's llvm-cpu codegen fuses a slice into the packing of a matmul operand and tiles
    it with a whole panel on the stack: `a[:, :128] @ b[:128]` of 256x256 float32 needed 147456 bytes (limit
    32768), `b[:, :128]` as the right operand 66560. Materialized first, the operand packs as any other."""
    dots = _ops_where(module, lambda op: op.name == "stablehlo.dot_general")
    changed = False
    for dot in dots:
        for i, v in enumerate(list(dot.operands)):
            if sliced_operand(v):
                with ir.InsertionPoint(dot), dot.location:
                    bar = ir.Operation.create("stablehlo.optimization_barrier", operands=[v], results=[v.type])
                dot.operands[i] = bar.result
                changed = True
    return changed


def gpu_rewrites(module: ir.Module, legalize: Sequence[str]) -> list[str]:
    """The names of the ops of `module` that the GPU passes among `legalize` (a target's legalization) rewrite."""
    keep = []
    if {"bf16-in-f32", "bf16-in-f32-apart"} & set(legalize):
        keep.append(lambda op: op.name in ("stablehlo.dot_general", "stablehlo.power") and _is_bf16(op.results[0]))
    if "f32-dots-bf16x3" in legalize:
        keep.append(_is_f32_product_below_highest)
    if "nan-guards" in legalize:
        keep.append(lambda op: op.name in _NAN_GUARDED)
    return list(dict.fromkeys(op.name for op in _ops_where(module, lambda op: any(k(op) for k in keep))))


def _is_f32_product_below_highest(op) -> bool:
    if op.name != "stablehlo.dot_general" or not all(_is_f32(v) for v in (op.results[0], *op.operands)):
        return False
    return "precision_config" not in op.attributes or "HIGHEST" not in str(op.attributes["precision_config"])


def _bf16_3x(operands, out_type, attrs: dict, create, like):
    """a·b as a_hi·b_lo + a_lo·b_hi + a_hi·b_hi, each split v = hi + lo into bfloat16 parts (hi = bf16(v),
    lo = bf16(v - hi)), each product accumulated in float32. The dropped lo·lo term and the rounding of lo
    leave about 2**-16 of relative error per product (f32: 2**-24, TF32: 2**-11). An infinite operand
    gives NaN (inf - inf in its lo part)."""
    bf16 = ir.BF16Type.get()
    attrs = {k: v for k, v in attrs.items() if k != "precision_config"}

    def split(v):
        hi = create("stablehlo.convert", [v], [like(v.type, bf16)]).result
        back = create("stablehlo.convert", [hi], [v.type]).result
        rest = create("stablehlo.subtract", [v, back], [v.type]).result
        return hi, create("stablehlo.convert", [rest], [like(v.type, bf16)]).result

    (a_hi, a_lo), (b_hi, b_lo) = split(operands[0]), split(operands[1])
    dot = lambda x, y: create("stablehlo.dot_general", [x, y], [out_type], attrs).result
    add = lambda x, y: create("stablehlo.add", [x, y], [out_type]).result
    return add(add(dot(a_hi, b_lo), dot(a_lo, b_hi)), dot(a_hi, b_hi))




def _declare(module, sym: str, fn_type) -> str:
    """Declare the private function `sym` of type `fn_type` (an import of a host module) at the top of `module`."""
    with ir.InsertionPoint.at_block_begin(module.body), ir.Location.unknown():
        ir.Operation.create("func.func", attributes={
            "sym_name": ir.StringAttr.get(sym), "function_type": ir.TypeAttr.get(fn_type),
            "sym_visibility": ir.StringAttr.get("private")}, regions=1)
    return sym


def _i64s(values: Sequence[int]) -> list:
    """`arith.constant`s of type i64 holding `values`, at the insertion point."""
    i64 = ir.IntegerType.get_signless(64)
    return [ir.Operation.create("arith.constant", results=[i64], attributes={
        "value": ir.IntegerAttr.get(i64, v)}).result for v in values]


def host_sorts(module: ir.Module, min_length: int) -> bool:
    """Replace each `stablehlo.sort` of `sort_p` (its comparator NumPy's order over the first `NUM_KEYS`
    operands, lexicographic, NaN last) along a dimension of at least `min_length`, static shapes, signed or float
    keys, replaced by a call to `SORT_MODULE.sort<n>_<k>(operands..., dimension, num_keys)`; whether one was.

    IREE 3.13's CPU sort compares every pair in a row: 1-D float32, 16000 values 1.25 s, 10^6 over an hour. NumPy's
    stable sort is O(n log n) (docs/design.md, "Sorts")."""
    sorts = _ops_where(module, lambda op: op.name == "stablehlo.sort" and NUM_KEYS in op.attributes)
    symbols: dict[str, str] = {}
    i64 = ir.IntegerType.get_signless(64)
    for sort in sorts:
        # NumPy's sort is stable: the position key that made IREE's sort stable (`STABLE_KEY`) is left out
        drop = ir.IntegerAttr(sort.attributes[STABLE_KEY]).value if STABLE_KEY in sort.attributes else -1
        operands = [v for i, v in enumerate(sort.operands) if i != drop]
        types = [ir.RankedTensorType(v.type) for v in operands]
        dim = ir.IntegerAttr(sort.attributes["dimension"]).value
        keys = ir.IntegerAttr(sort.attributes[NUM_KEYS]).value - (drop >= 0)
        if not (len(types) <= SORT_OPERANDS and all(t.has_static_shape for t in types)
                and types[0].shape[dim] >= min_length
                and all(str(t.element_type) in SORT_KEY_TYPES for t in types[:keys])):
            continue
        n = len(types)
        fn_type = ir.FunctionType.get(types + [i64, i64], types)
        sym = symbols.get(str(fn_type))
        if sym is None:
            k = sum(1 for s in symbols.values() if s.startswith(f"{SORT_MODULE}.sort{n}_"))
            if k == SORT_IMPORTS:
                continue
            sym = symbols[str(fn_type)] = _declare(module, f"{SORT_MODULE}.sort{n}_{k}", fn_type)
        with ir.InsertionPoint(sort), sort.location:
            call = ir.Operation.create("func.call", results=types, operands=[*operands, *_i64s([dim, keys])],
                                       attributes={"callee": ir.FlatSymbolRefAttr.get(sym)})
        for old, new in zip([r for i, r in enumerate(sort.results) if i != drop], call.results):
            old.replace_all_uses_with(new)
        sort.erase()
    return bool(symbols)




def calls_blas(element_types: Sequence[str], macs: int, min_macs: int | None, vector: bool = False,
               min_vector_macs: int | None = None) -> bool:
    """Whether a (statically shaped) `dot_general` whose operands and result have these element types ("f32", ...)
    and `macs` multiply-adds becomes a BLAS call (`blas_dots`): from `min_macs` (None: never), or where it is a
    matrix-vector product (`vector`: one side's free extent is 1) from `min_vector_macs` when given."""
    floor = min_vector_macs if vector and min_vector_macs is not None else min_macs
    return len(set(element_types)) == 1 and element_types[0] in BLAS_TYPES and floor is not None and macs >= floor


def _row_by_weight(dot, types, dims: dict, free: list[int]) -> bool:
    """Whether `dot` is a float32 `x @ W` of one row (x rank 1, or 1 x K, contracted on its last dimension) by a W
    stored K x N (not a transpose) of `ROW_COLUMNS`+ columns and under `ROW_WEIGHT` elements: there IREE's own
    kernel with the CPU's `matvec` tuning part (`tuning._matvec`: these products) reads W's rows faster than a BLAS
    call (1x256x256 5 us against 11, 1x1024x2048 85 against 96; from 2048x2048 BLAS streams a W beyond the caches
    faster: 192 against 230; docs/blas.md)."""
    w, lhs = dot.operands[1].owner, types[0].shape
    return (str(types[2].element_type) == "f32" and free[0] == 1 and free[1] >= ROW_COLUMNS
            and math.prod(types[1].shape) < ROW_WEIGHT
            and len(types[1].shape) == 2 and dims.get(("rhs", "contracting")) == [0]
            and not dims.get(("lhs", "batching")) and len(lhs) <= 2 and dims.get(("lhs", "contracting")) == [len(lhs) - 1]
            and (isinstance(w, ir.Block) or w.name != "stablehlo.transpose"))


def blas_dots(module: ir.Module, min_macs: int | None, min_vector_macs: int | None = None) -> bool:
    """Replace each float32 or float64 `dot_general` of at least `min_macs` multiply-adds (`min_vector_macs`
    for a matrix-vector product; operands and result of one type, static shapes) replaced by a call to
    `BLAS_MODULE.dot_general_<k>(lhs, rhs, lhs batching, rhs batching, lhs contracting, rhs contracting)`
    (dimensions packed by `pack_dims`), two such calls in a row that do not read each other made one call of
    `dot_pair_<k>` (`_pair_calls`); whether one was.

    A float32 row times a weight (`_row_by_weight`) calls BLAS only in a module that packs its products
    (`packing.packs` of those left to IREE): elsewhere IREE's `matvec` part reads it faster.

    IREE 3.13's packed float32 matmul kernel reaches ~140 GFLOP/s a core on the AVX-512 machine, OpenBLAS ~185-200
    (docs/passes.md, "Float32 matmuls" and "through BLAS"); the call costs ~20 us and no copy (operands and result
    are mapped host memory)."""
    calls, rows = [], []  # (dot, its types, its dims) calling BLAS; `_row_by_weight`s among them
    dots = _ops_where(module, lambda op: op.name == "stablehlo.dot_general")
    for dot in dots:
        types = [ir.RankedTensorType(v.type) for v in (*dot.operands, dot.results[0])]
        if not all(t.has_static_shape and 0 < min(t.shape, default=1) for t in types) or \
                max(len(t.shape) for t in types) > 15:
            continue
        dims = packing.dot_dims(dot)
        lc = dims.get(("lhs", "contracting"), [])
        macs = math.prod(types[2].shape) * math.prod(types[0].shape[d] for d in lc)
        free = [math.prod(t.shape[d] for d in range(len(t.shape))
                          if d not in dims.get((side, "batching"), []) + dims.get((side, "contracting"), []))
                for t, side in zip(types, ("lhs", "rhs"))]
        if calls_blas([str(t.element_type) for t in types], macs, min_macs, min(free) == 1, min_vector_macs):
            (rows if _row_by_weight(dot, types, dims, free) else calls).append((dot, types, dims))
    if rows:  # (they stay IREE's where the module is not packed, as its `matvec` part then reads them)
        offloaded = {id(d) for d, _, _ in calls}
        if packing.packs(packing.dot_work(op) for op in dots if id(op) not in offloaded):
            calls += rows
    symbols: dict[str, str] = {}  # function type -> symbol
    i64 = ir.IntegerType.get_signless(64)
    for dot, types, dims in calls:
        operands = list(dot.operands)
        for i, side in enumerate(("lhs", "rhs")):  # read a transposed operand in place: BLAS takes either layout
            t = operands[i].owner
            if isinstance(t, ir.Block) or t.name != "stablehlo.transpose":
                continue
            perm = list(ir.DenseI64ArrayAttr(t.attributes["permutation"]))
            b, c = dims.get((side, "batching"), []), dims.get((side, "contracting"), [])
            free = [perm[d] for d in range(len(perm)) if d not in b and d not in c]
            if free == sorted(free):  # (the result's free dimensions keep their order)
                dims[side, "batching"], dims[side, "contracting"] = [perm[d] for d in b], [perm[d] for d in c]
                operands[i] = t.operands[0]
                types[i] = ir.RankedTensorType(operands[i].type)
        sym = _import(module, symbols, "dot_general", ir.FunctionType.get(types[:2] + [i64] * 4, types[2:]))
        if sym is None:
            continue
        with ir.InsertionPoint(dot), dot.location:
            packed = _i64s([pack_dims(dims.get((side, kind), []))
                            for kind in ("batching", "contracting") for side in ("lhs", "rhs")])
            call = ir.Operation.create("func.call", results=[types[2]], operands=[*operands, *packed],
                                       attributes={"callee": ir.FlatSymbolRefAttr.get(sym)})
        dot.results[0].replace_all_uses_with(call.results[0])
        dot.erase()
    if symbols:
        _pair_calls(module, [calls for calls in _blas_runs(module) if len(calls) > 1])
    return bool(symbols)


def _import(module, symbols: dict, stem: str, fn_type) -> str | None:
    """The symbol of `BLAS_MODULE.<stem>_<k>` for `fn_type`, declared on first use (`symbols`: function type ->
    symbol); None once the module exports no more of them (`BLAS_IMPORTS`)."""
    sym = symbols.get(str(fn_type))
    if sym is None and len(symbols) < BLAS_IMPORTS:
        sym = symbols[str(fn_type)] = _declare(module, f"{BLAS_MODULE}.{stem}_{len(symbols)}", fn_type)
    return sym


def _blas_runs(module) -> list[list]:
    """The module's `dot_general_<k>` calls in runs, each call of a run right after the one before (but for the
    constants holding its dimension numbers) and reading none of its results."""
    prefix = f"@{BLAS_MODULE}.dot_general_"
    runs: list[list] = []

    def reads(op, other) -> bool:
        return any(not isinstance(v.owner, ir.Block) and v.owner.operation == other.operation for v in op.operands)

    def visit(op):
        for region in op.regions:
            for block in region.blocks:
                run: list = []
                for o in block.operations:
                    if o.name == "func.call" and str(o.attributes["callee"]).startswith(prefix):
                        if run and reads(o, run[-1]):
                            run = []
                        if not run:
                            runs.append(run)
                        run.append(o)
                    elif o.name != "arith.constant":
                        run = []
                    visit(o)
    visit(module.operation)
    return runs


def _pair_calls(module, runs: list[list]) -> None:
    """Each two calls in a row of a run (`_blas_runs`: a matmul's two cotangents in a backward pass) become one
    call of `dot_pair_<k>`: one way back to Python in place of two (after a large matmul, 30-40 us of a
    value_and_grad call)."""
    symbols: dict[str, str] = {}
    for run in runs:
        for first, second in zip(run[0:-1:2], run[1::2]):
            ops = [*first.operands[:2], *second.operands[:2], *first.operands[2:], *second.operands[2:]]
            results = [first.results[0].type, second.results[0].type]
            sym = _import(module, symbols, "dot_pair", ir.FunctionType.get([v.type for v in ops], results))
            if sym is None:
                continue
            with ir.InsertionPoint(second), second.location:
                pair = ir.Operation.create("func.call", results=results, operands=ops,
                                           attributes={"callee": ir.FlatSymbolRefAttr.get(sym)})
            for old, new in zip((first, second), pair.results):
                old.results[0].replace_all_uses_with(new)
                old.erase()


# Multiply-adds from which a matmul with no free extent of 1 calls BLAS: never (None). NumPy's BLAS runs on one
# thread (`stagec.host.BLAS_THREADS`), and at no such shape measured did it beat IREE's kernels at every thread
# count, on a loaded machine and off it (docs/blas.md).
BLAS_MIN_MACS: int | None = None
# ... and from which a matrix-vector product does: IREE 3.13 packs the matrix for its data-tiled kernel on every call
# (1x2048x2048: 8-28 ms against BLAS's 0.34-0.44 on one thread, 2 loaded cores).
BLAS_MIN_VECTOR_MACS = 1 << 17
ROW_COLUMNS, ROW_WEIGHT = 256, packing.PACK_BIG  # an `x @ W` IREE keeps (`_row_by_weight`; `tuning.MATVEC_COLUMNS`)
SORT_MIN_LENGTH = SORT_HOST_ROWS  # (`primitives.reductions`: the eager sort rule reads it too)


def _round_bits(b: Builder, x: ir.Value, width: int, drop: int) -> ir.Value:
    """`x` (a float of `width` bits) rounded to nearest, ties to even, at bit `drop` of its pattern by integer ops;
    NaN kept: the float its bits give (IREE cannot fold integer ops into a convert). Of dynamic shape (an eager
    kernel's) the constants are scalars broadcast to `x`'s run-time shape (a `tensor<?xui32>` constant, which does
    not verify, failed every eager float16 to bfloat16 conversion)."""
    bu = _ShapedBuilder(ir.RankedTensorType.get(b.t.shape, ir.IntegerType.get_unsigned(width)), x)
    u = b.op("bitcast_convert", x, ty=bu.t)
    lsb = bu.op("and", bu.op("shift_right_logical", u, bu.c(drop)), bu.c(1))
    low = (1 << drop) - 1
    r = bu.op("and", bu.op("add", bu.op("add", u, bu.c(low >> 1)), lsb), bu.c(((1 << width) - 1) ^ low))
    return b.op("select", b.compare(x, x, "NE"), x, b.op("bitcast_convert", r))


def round_to_bf16(module: ir.Module) -> int:
    """Each `convert` to bfloat16 that IREE 3.13 gets wrong computed from a value rounded first by integer ops, so
    that the value it converts is a bfloat16 already: from float16 (any size: IREE did not round at all, 0.3 stayed
    float16's 0.30004883, bfloat16's is 0.30078125; on Vulkan too), and from float32 or float64 of one element (the
    rounding of a one-element round trip was dropped: `convert(convert(x, bf16), f32) * 3` of 0.3 gave 0.90000004,
    bfloat16's 0.90234375; eager samplers' 0-d parameters met it), and from 16-bit integers (IREE folded the
    rounding away where the value was widened again: uint16 8649 stayed 8649 in one dispatch, 8640 in another, so
    `where(x > x[0], x, x[1])` took x itself in row 0). float16 and 16-bit integers go through float32 (exact).
    float64 is rounded at its own bits: below bfloat16's normal range (1.2e-38) that may round twice; the count
    rewritten."""
    f16, f32, f64, bf16 = ir.F16Type.get(), ir.F32Type.get(), ir.F64Type.get(), ir.BF16Type.get()
    n = 0
    for op in _ops_where(module, lambda op: op.name == "stablehlo.convert"):
        src, dst = ir.RankedTensorType(op.operands[0].type), ir.RankedTensorType(op.results[0].type)
        one = src.has_static_shape and math.prod(src.shape) == 1
        i16 = (it := _integer(src.element_type)) is not None and it.width == 16
        if dst.element_type != bf16 or not (src.element_type == f16 or i16 or one and src.element_type in (f32, f64)):
            continue
        x = op.operands[0]
        with ir.InsertionPoint(op), op.location:
            if src.element_type == f64:
                y = _round_bits(_ShapedBuilder(src, x), x, 64, 45)
            else:
                t32 = ir.RankedTensorType.get(src.shape, f32)
                if src.element_type == f16 or i16:
                    x = Builder(t32).op("convert", x)
                y = _round_bits(_ShapedBuilder(t32, x), x, 32, 16)
        op.operation.operands[0] = y
        n += 1
    return n


def bf16_from_integers_rounded(module: ir.Module) -> int:
    """Each bfloat16 `iota` computed as a float32 one converted, and each `convert` to bfloat16 from integers (8 bits
    or wider), or from float32 an `iota` or a conversion from integers computed, converts a float32 value rounded to
    bfloat16's bits by integer ops first (`_round_bits`): float32 first, then bfloat16, as JAX and stagec's CPU round.

    IREE 3.13 folds such a conversion into one from the integer (arith's truncf(sitofp) -> sitofp), whose SPIR-V
    bfloat16 emulation did not compile ("'spirv.Bitcast' op mismatch in result type bitwidth 16 and operand type
    bitwidth 32", every Vulkan target: `linspace` of bfloat16 bounds, eagerly an `iota` of bfloat16). The value it
    converts now is a bfloat16 already, computed by integer ops, which IREE does not fold. The count rewritten."""
    f32, bf16 = ir.F32Type.get(), ir.BF16Type.get()
    n = 0
    for op in _ops_where(module, lambda op: op.name == "stablehlo.iota" and _element(op.results[0].type) == bf16):
        t = ir.RankedTensorType(op.results[0].type)
        with ir.InsertionPoint(op), op.location:
            i = _create("stablehlo.iota", [], [_like(t, f32)], {"iota_dimension": op.attributes["iota_dimension"]})
            c = _create("stablehlo.convert", [i.result], [t])
        op.results[0].replace_all_uses_with(c.result)
        op.erase()

    def from_integers(v) -> bool:
        src = producer(v)
        return src is not None and (src.name == "stablehlo.iota" or src.name == "stablehlo.convert" and isinstance(
            _element(src.operands[0].type), ir.IntegerType))

    def keep(op) -> bool:
        if op.name != "stablehlo.convert" or _element(op.results[0].type) != bf16:
            return False
        src = _element(op.operands[0].type)
        if isinstance(src, ir.IntegerType):
            return ir.IntegerType(src).width >= 8
        return src == f32 and from_integers(op.operands[0])

    for op in _ops_where(module, keep):
        x = op.operands[0]
        with ir.InsertionPoint(op), op.location:
            t32 = _like(x.type, f32)
            if _element(x.type) != f32:
                x = _create("stablehlo.convert", [x], [t32]).result
            op.operation.operands[0] = _round_bits(_ShapedBuilder(ir.RankedTensorType(t32), x), x, 32, 16)
        n += 1
    return n


def _integer(t) -> ir.IntegerType | None:
    try:
        return ir.IntegerType(t)
    except (ValueError, TypeError):
        return None


def unsigned_to_float_via_i32(module: ir.Module) -> int:
    """Each `convert` from bool or an 8- or 16-bit unsigned integer to a floating or complex type goes through
    int32 (exact). IREE 3.13's global optimization folds such a convert into the matmul or convolution that consumes
    it, as a signed extension: true became -1.0 and uint8 200 became -56.0 (`jit(jnp.dot)` of bool or uint8 images
    and a float32 matrix); from int32 it folds a signed conversion, which is right. The count rewritten."""
    n = 0
    for op in _ops_where(module, lambda op: op.name == "stablehlo.convert"):
        it, dst = _integer(_element(op.operands[0].type)), _element(op.results[0].type)
        if it is None or dst is None or _integer(dst) is not None or \
                not (it.width == 1 or it.is_unsigned and it.width in (8, 16)):
            continue
        if it.width == 1 and isinstance(dst, ir.FloatType):
            # A bool to a real float is select(b, 1.0, 0.0): through int32, IREE 3.13 still read the convert of a
            # bool and rewrote `x * convert(b)` as select(b, x, 0), so inf * 0.0 and nan * 0.0 were 0 under jit
            # (JAX: NaN; the gradient of max over a row holding a NaN was 0, eagerly NaN). The select it keeps.
            with ir.InsertionPoint(op), op.location:
                b = _ShapedBuilder(ir.RankedTensorType(op.results[0].type), op.operands[0])
                sel = b.op("select", op.operands[0], b.c(1.0), b.c(0.0))
            op.results[0].replace_all_uses_with(sel)
            op.operation.erase()
            n += 1
            continue
        with ir.InsertionPoint(op), op.location:
            wide = _create("stablehlo.convert", [op.operands[0]],
                           [_like(op.operands[0].type, ir.IntegerType.get_signless(32))]).result
        op.operation.operands[0] = wide
        n += 1
    return n


def _full_reduction(op) -> bool:
    """A `stablehlo.reduce` over every dimension of static operands of rank 2+."""
    if op.name != "stablehlo.reduce":
        return False
    t = ir.RankedTensorType(op.operands[0].type)
    return t.has_static_shape and t.rank >= 2 and len(ir.DenseI64ArrayAttr(op.attributes["dimensions"])) == t.rank


def flatten_full_reductions(module: ir.Module) -> int:
    """Each reduction over every dimension of operands of rank 2+ reduces their 1-D reshapes (the same elements in
    the same order). IREE 3.13's CUDA split reduction failed to distribute the sum of 64x64 floats, and compiles
    that of 4096. How many."""
    found = _ops_where(module, _full_reduction)
    for op in found:
        for i in range(len(op.operands) // 2):  # (the operands, then their inits)
            t = ir.RankedTensorType(op.operands[i].type)
            with ir.InsertionPoint(op), op.location:
                flat = ir.RankedTensorType.get([math.prod(t.shape)], t.element_type)
                op.operands[i] = _create("stablehlo.reshape", [op.operands[i]], [flat]).result
        op.attributes["dimensions"] = ir.DenseI64ArrayAttr.get([0])
    return len(found)


ROWS = 512  # (IREE 3.13's CUDA split reduction left a full variadic reduction of 1000 elements alone, not 1024)


def variadic_reductions_in_rows(module: ir.Module) -> int:
    """Each reduction of two or more operands of more than `ROWS` elements to one element (argmax: values and
    indices) reduces `ROWS` rows of them first, then their results: the operands flattened, filled up with their inits.

    IREE 3.13's CUDA split reduction cannot split a reduction of several results ("failed to form split reduction
    dispatch": `argmax` of 1024 floats or more, of 4096x1 over its rows too); a row reduction it leaves alone.
    How many."""
    def keep(op) -> bool:
        if op.name != "stablehlo.reduce" or len(op.operands) < 4:
            return False
        t = ir.RankedTensorType(op.operands[0].type)
        return (t.has_static_shape and math.prod(t.shape) > ROWS
                and math.prod(ir.RankedTensorType(op.results[0].type).shape) == 1)
    found = _ops_where(module, keep)
    for op in found:
        k = len(op.operands) // 2
        shape = ir.RankedTensorType(op.operands[0].type).shape
        dims = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
        n = math.prod(shape)
        cols = -(-n // ROWS)
        tensor = lambda v, s: ir.RankedTensorType.get(s, _element(v.type))  # noqa: E731
        reshape = lambda v, s: v if ir.RankedTensorType(v.type).shape == s else _create(  # noqa: E731
            "stablehlo.reshape", [v], [tensor(v, s)]).result
        with ir.InsertionPoint(op), op.location:
            rows = []
            for x, init in zip(list(op.operands)[:k], list(op.operands)[k:]):
                x = reshape(x, [n])
                if ROWS * cols > n:  # (a concatenation: complex128 parts padded by `pad` failed, "'stream.yield' op
                    # used resource not listed in explicit captures")
                    fill = _create("stablehlo.broadcast_in_dim", [init], [tensor(x, [ROWS * cols - n])],
                                   {"broadcast_dimensions": ir.DenseI64ArrayAttr.get([])}).result
                    x = _create("stablehlo.concatenate", [x, fill], [tensor(x, [ROWS * cols])],
                                {"dimension": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)}).result
                rows.append(reshape(x, [ROWS, cols]))
            first = ir.Operation.create("stablehlo.reduce", operands=rows + list(op.operands)[k:], regions=1,
                                        results=[tensor(v, [ROWS]) for v in rows],
                                        attributes={"dimensions": ir.DenseI64ArrayAttr.get([1])})
            body = op.operation.clone(ir.InsertionPoint(op))
            # (the rows' results where the operand's reduced dimensions were: the first ROWS long, the others 1)
            left = [ROWS if i == dims[0] else 1 if i in dims else d for i, d in enumerate(shape)]
            for i, r in enumerate(first.results):
                op.operands[i] = reshape(r, left)
        body.regions[0].blocks[0].append_to(first.regions[0])
        body.erase()
    return len(found)


LOOP = 65535  # Mesa's lavapipe ends every shader loop after this many iterations (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS)
COLS = 4096  # the first stage's rows (`long_reductions_in_rows`)


def outer_product_operands_apart(module: ir.Module) -> int:
    """Each product contracting one element a result (an outer product: `u @ w` of a column by a row) reads an operand
    computed by another product or a reduction (through views) through an `optimization_barrier`. IREE 3.13 made such
    a product elementwise and fused the producing product into it, and that dispatch's SPIR-V gave wrong values on
    lavapipe from 9 x 9 (`u @ (u.T @ R)`: 1.9 off; every QR of 9 x 9 or more: Householder's rank-one updates). How
    many operands."""
    def reduced(v) -> bool:
        src = producer(v)
        while src is not None and src.name in _VIEWS:
            src = producer(src.operands[0])
        return src is not None and src.name in ("stablehlo.dot_general", "stablehlo.reduce")

    return _operands_apart(module, _is_outer_product, reduced)


def _operands_apart(module: ir.Module, keep, apart) -> int:
    """Each operand `v` of an op for which `keep(op)` holds, where `apart(v)`, read through an
    `optimization_barrier` of its own. How many operands."""
    n = 0
    for op in _ops_where(module, keep):
        for i, v in enumerate(list(op.operands)):
            if apart(v):
                _operand_apart(op, i)
                n += 1
    return n


UNFUSED = "stagec.no_aggressive_fusion"  # (a module attribute: `stagec.compiler.driver` reads it, `Facts.unfused`)


def pool_gradients_unfused(module: ir.Module) -> bool:
    """Where a product's or convolution's result is read (through views: vmap reshapes it) by two or more `select`s
    (or generics made of them) that each feed a `pad`, the gradient of an overlapping max pool, mark the module
    `UNFUSED`: it is compiled without aggressive fusion. At O3 IREE 3.13's aggressive fusion put the product and the
    selects in one dispatch that its CPU codegen could not distribute ("write affecting operations on global
    resources"), and the `no-aggressive-fusion` retry compiled the module again after the failed compile: twice the
    time (JAX's differentially_private_sgd example: 10.4 s). (A barrier between the product and the selects also
    compiled, but a CNN's SGD step ran 7-18% slower than without aggressive fusion.) Whether it marked."""
    def pooled(op) -> bool:  # (a select `fuse` made a generic of)
        return op.name in ("stablehlo.select", "linalg.generic") and len(op.results) == 1 and any(
            u.owner.name == "stablehlo.pad" for u in op.results[0].uses)

    def readers(v) -> list:
        return [r for u in v.uses for r in (readers(u.owner.results[0]) if u.owner.name in _VIEWS else [u.owner])]

    if not any(len({r for r in readers(op.results[0]) if pooled(r)}) >= 2 for op in _ops_where(
            module, lambda op: op.name in ("stablehlo.dot_general", "stablehlo.convolution"))):
        return False
    module.operation.attributes[UNFUSED] = ir.UnitAttr.get()
    return True


def dynamic_reductions_unfused(module: ir.Module) -> bool:
    """A module with a dynamic dimension among its arguments (an eager composite's shape-polymorphic module,
    `composites._Poly`) and a reduction is marked `UNFUSED`: compiled without aggressive fusion. IREE 3.13's aggressive
    fusion of such a module recomputed the reduction in its readers' dispatch: nn.softmax of (100, 1000) float32
    took 2.4 ms against 0.19 without it (the shape-specific module: 0.21). Whether it marked."""
    def dynamic(t) -> bool:
        try:
            return not ir.RankedTensorType(t).has_static_shape
        except ValueError:  # (not a ranked tensor)
            return False
    funcs = [op for op in module.body.operations if op.operation.name == "func.func"]  # (no walk: most have none)
    if not any(dynamic(a.type) for f in funcs for b in f.regions[0].blocks for a in b.arguments) or not _ops_where(
            module, lambda op: op.name == "stablehlo.reduce"):
        return False
    module.operation.attributes[UNFUSED] = ir.UnitAttr.get()
    return True


def gathered_f64_operands_apart(module: ir.Module) -> int:
    """Each float64 product's operand computed by a `gather` (through views, slices and selects) reads it through an
    `optimization_barrier`. IREE 3.13 fused the gather into the product's dispatch, and its SPIR-V gave wrong values
    on lavapipe (a transposed gathered operand, or any gathered right operand: eigh and svd sort their columns by a
    gather, so `pinv`, `lstsq` and eigh's derivatives were wrong in float64; float32 was right). How many operands."""
    def gathered(v) -> bool:
        todo, seen = [v], set()  # (selects share operands: each producer once)
        while todo:
            src = producer(todo.pop())
            if src is None or src in seen:
                continue
            seen.add(src)
            if src.name == "stablehlo.gather":
                return True
            if src.name in _VIEWS or src.name == "stablehlo.slice":
                todo.append(src.operands[0])
            elif src.name == "stablehlo.select":
                todo += list(src.operands)[1:]
        return False

    return _operands_apart(module, lambda op: op.name == "stablehlo.dot_general" and ir.RankedTensorType(
        op.result.type).element_type == ir.F64Type.get(), gathered)


def _int64_constant(op) -> np.ndarray | None:
    """The value of a `constant` of int64, or of a `concatenate` of int64 constants (left unfolded by
    `fold-constants`), else None."""
    t = ir.RankedTensorType(op.results[0].type)
    if t.element_type != ir.IntegerType.get_signless(64) or not t.has_static_shape:
        return None
    if op.name == "stablehlo.constant":
        v = constant_value(op.result)
        return None if v is None or v[1] else v[0]
    if op.name != "stablehlo.concatenate":
        return None
    parts = [constant_value(v) for v in op.operands]
    if any(p is None for p in parts):
        return None
    dim = ir.IntegerAttr(op.attributes["dimension"]).value
    return np.concatenate([np.broadcast_to(a, ir.RankedTensorType(v.type).shape) for (a, _), v in
                           zip(parts, op.operands)], axis=dim)


def int64_constants_from_int32(module: ir.Module) -> int:
    """Each int64 constant of several different values, all in int32's range (at most 2^16 elements), built as an int32
    constant through a barrier, converted: IREE 3.13's SPIR-V for the portable Vulkan target could not materialize
    such a constant in a dispatch ("failed to legalize unresolved target materialization from ('i64') to
    ('vector<2xi32>')": the per-dimension bounds of a gather's clamp, `x[i, j]` of int64 indices; a concatenation of
    int64 constants, as `histogramdd`'s). How many."""
    def keep(op) -> bool:
        if op.name not in ("stablehlo.constant", "stablehlo.concatenate") or not 1 < math.prod(
                ir.RankedTensorType(op.results[0].type).shape) <= 1 << 16:
            return False
        v = _int64_constant(op)
        return v is not None and len(np.unique(v)) > 1 and -2 ** 31 <= v.min() and v.max() < 2 ** 31

    found = _ops_where(module, keep)
    for op in found:
        with ir.InsertionPoint(op), op.location:
            t = ir.RankedTensorType(op.result.type)
            i32 = ir.RankedTensorType.get(t.shape, ir.IntegerType.get_signless(32))
            c = make_constant(_int64_constant(op).astype(np.int32), i32)
            wide = _create("stablehlo.convert", [_create("stablehlo.optimization_barrier", [c], [i32]).result],
                           [t]).result
        op.result.replace_all_uses_with(wide)
        op.erase()
    return len(found)


def converted_product_operands_apart(module: ir.Module) -> int:
    """Each product's or convolution's operand computed (through views and elementwise ops: a convert, a saturating
    float-to-integer conversion's selects) from values of another element type reads it through an
    `optimization_barrier`: that computation in a dispatch of its own. Fused into the product's dispatch, lavapipe gave
    wrong values now and then (`dot(uint8_images, W)`: 2 calls in 20 off by up to 300; bool, uint16 too; on
    2026-11-29 int8 and int16 to float32, float16 and bfloat16 to int32, and `x[:, :4] @ x[:4]` of such an x: the first
    one or two calls of five). How many operands."""
    def converted(v) -> bool:
        et, todo, seen = _element(v.type), [v], set()
        while todo:
            src = producer(todo.pop())
            views = ("stablehlo.slice", "stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.transpose")
            if src is None or src.operation in seen or not (src.name in views or _elementwise(src)):
                continue
            seen.add(src.operation)
            if src.name == "stablehlo.select" and all(splat_value(w) is not None for w in src.operands[1:]):
                return True  # (select(b, 1.0, 0.0): a bool converted, as `unsigned-to-float` writes it)
            for i, w in enumerate(src.operands):  # (a select's predicate is i1 of any product: looked through)
                if _element(w.type) != et and not (i == 0 and src.name == "stablehlo.select"):
                    return True
                todo.append(w)
        return False

    return _operands_apart(module, lambda op: op.name in ("stablehlo.dot_general", "stablehlo.convolution"), converted)


def unsigned_extensions_apart(module: ir.Module) -> int:
    """Each product's or convolution's operand that a `convert` computes directly from bool or unsigned values reads
    it through an `optimization_barrier`. IREE 3.13's global optimization folds such a convert into the matmul as a
    signed extension: `jit(a.astype(int32) @ b)` of bool `a` gave -(a @ b), of uint8 200 it read -56; uint32 to
    float64 likewise (bool, uint8 and uint16 to floats go through int32 first: `unsigned-to-float`). How many."""
    def unsigned(v) -> bool:
        src = producer(v)
        if src is None or src.name != "stablehlo.convert":
            return False
        it = _integer(_element(src.operands[0].type))
        return it is not None and (it.width == 1 or it.is_unsigned)

    return _operands_apart(module, lambda op: op.name in ("stablehlo.dot_general", "stablehlo.convolution"), unsigned)


WIDE = 1 << 22  # the most elements of the products a long contraction is computed from (`long_contractions`)


def _sum(x: ir.Value, dims: list[int], et) -> ir.Value:
    """`x` summed over `dims` (a float or integer element type `et`): a `stablehlo.reduce` with an add body."""
    zero = ir.FloatAttr.get(et, 0.0) if isinstance(et, ir.FloatType) else ir.IntegerAttr.get(et, 0)
    scalar = ir.RankedTensorType.get([], et)
    init = _create("stablehlo.constant", [], [scalar], {"value": ir.DenseElementsAttr.get_splat(scalar, zero)})
    shape = ir.RankedTensorType(x.type).shape
    out = ir.RankedTensorType.get([n for i, n in enumerate(shape) if i not in dims], et)
    op = ir.Operation.create("stablehlo.reduce", operands=[x, init.result], results=[out], regions=1,
                             attributes={"dimensions": ir.DenseI64ArrayAttr.get(dims)})
    block = op.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        add = _create("stablehlo.add", list(block.arguments), [scalar])
        _create("stablehlo.return", [add.result], [])
    return op.result


def long_contractions(module: ir.Module) -> int:
    """Each product (`dot_general`, static shapes, float or integer) that contracts more than `LOOP` elements a result
    and whose products number at most `WIDE`, as a broadcast multiplication and a sum (which `long-reductions-in-rows`
    then stages): IREE's SPIR-V code contracted `x @ x` of 70000 floats in one loop. How many."""
    def keep(op) -> bool:
        if op.name != "stablehlo.dot_general":
            return False
        ts = [ir.RankedTensorType(v.type) for v in (*op.operands, op.result)]
        et = ts[2].element_type
        if not all(t.has_static_shape for t in ts) or not (isinstance(et, ir.FloatType) or isinstance(
                et, ir.IntegerType) and ir.IntegerType(et).width > 1):  # (a bool product is no sum)
            return False
        k = math.prod(ts[0].shape[d] for d in packing.dot_dims(op).get(("lhs", "contracting"), []))
        return k > LOOP and k * math.prod(ts[2].shape) <= WIDE

    found = _ops_where(module, keep)
    for op in found:
        dims, out = packing.dot_dims(op), ir.RankedTensorType(op.result.type)
        sides = []
        for v, side in zip(op.operands, ("lhs", "rhs")):
            t = ir.RankedTensorType(v.type)
            b, c = dims.get((side, "batching"), []), dims.get((side, "contracting"), [])
            sides.append((v, t, b, [d for d in range(t.rank) if d not in b + c], c))
        (_, lt, lb, lf, lc), (_, rt, rb, rf, rc) = sides
        nb, nl, nr = len(lb), len(lf), len(rf)
        cs = [lt.shape[d] for d in lc]
        wide = out.shape + cs  # [batch, lhs free, rhs free, contracted]
        with ir.InsertionPoint(op), op.location:
            parts = []
            for (v, t, b, f, c), at in zip(sides, (list(range(nb + nl)), [*range(nb), *range(nb + nl, nb + nl + nr)])):
                order = b + f + c
                if order != list(range(t.rank)):
                    v = _create("stablehlo.transpose", [v], [ir.RankedTensorType.get([t.shape[d] for d in order],
                                t.element_type)], {"permutation": ir.DenseI64ArrayAttr.get(order)}).result
                if t.element_type != out.element_type:
                    v = _create("stablehlo.convert", [v], [ir.RankedTensorType.get(
                        ir.RankedTensorType(v.type).shape, out.element_type)]).result
                to = at + list(range(len(out.shape), len(wide)))
                parts.append(_create("stablehlo.broadcast_in_dim", [v], [ir.RankedTensorType.get(
                    wide, out.element_type)], {"broadcast_dimensions": ir.DenseI64ArrayAttr.get(to)}).result)
            prod = _create("stablehlo.multiply", parts, [parts[0].type]).result
            r = _sum(prod, list(range(len(out.shape), len(wide))), out.element_type)
        op.result.replace_all_uses_with(r)
        op.erase()
    return len(found)


def _conv_dims(op) -> tuple[int, int, int, int]:
    """A `convolution`'s input batch, input feature, kernel output feature and output feature dimensions, read from
    its `dimension_numbers` (`#stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>`: the bindings have no reader)."""
    lhs, rhs, out = re.findall(r"\[([^\]]*)\]", str(op.attributes["dimension_numbers"]))[:3]
    at = lambda spec, c: [s.strip() for s in spec.split(",")].index(c)
    return at(lhs, "b"), at(lhs, "f"), at(rhs, "o"), at(out, "f")


def grouped_convs_apart(module: ir.Module) -> int:
    """Each grouped `convolution` (static shapes) that IREE's SPIR-V code got wrong as G convolutions of one group
    each, on slices of the operands, their results concatenated: every `batch_group_count` > 1, and a
    `feature_group_count` > 1 of 2+ input features a group. IREE 3.13's Vulkan dispatch wrote zeros or wrong values
    there on lavapipe (of one input feature a group, depthwise, it was right; of 2+, wrong unless both the batch and
    the output features a group were 1). `vmap` of a convolution over both operands is a grouped one. How many."""
    def keep(op) -> bool:
        if op.name != "stablehlo.convolution" or not all(ir.RankedTensorType(v.type).has_static_shape
                                                         for v in (*op.operands, op.result)):
            return False
        g = ir.IntegerAttr(op.attributes["feature_group_count"]).value
        if ir.IntegerAttr(op.attributes["batch_group_count"]).value > 1:
            return True
        if g == 1:
            return False
        return ir.RankedTensorType(op.operands[0].type).shape[_conv_dims(op)[1]] // g >= 2

    found = _ops_where(module, keep)
    for op in found:
        lb, lf, ro, of = _conv_dims(op)
        fg, bg = (ir.IntegerAttr(op.attributes[k]).value for k in ("feature_group_count", "batch_group_count"))
        n, lhs_dim = (fg, lf) if fg > 1 else (bg, lb)
        out = ir.RankedTensorType(op.result.type)
        attrs = {name: op.attributes[name] for name in op.attributes}
        i64 = ir.IntegerType.get_signless(64)
        attrs["feature_group_count"] = attrs["batch_group_count"] = ir.IntegerAttr.get(i64, 1)

        def part(v, dim, g):
            t = ir.RankedTensorType(v.type)
            size = t.shape[dim] // n
            start, limit = [0] * t.rank, list(t.shape)
            start[dim], limit[dim] = g * size, (g + 1) * size
            shape = list(t.shape)
            shape[dim] = size
            return _create("stablehlo.slice", [v], [ir.RankedTensorType.get(shape, t.element_type)], {
                "start_indices": ir.DenseI64ArrayAttr.get(start), "limit_indices": ir.DenseI64ArrayAttr.get(limit),
                "strides": ir.DenseI64ArrayAttr.get([1] * t.rank)}).result

        shape = list(out.shape)
        shape[of] //= n
        with ir.InsertionPoint(op), op.location:
            parts = [_create("stablehlo.convolution", [part(op.operands[0], lhs_dim, g), part(op.operands[1], ro, g)],
                             [ir.RankedTensorType.get(shape, out.element_type)], attrs).result for g in range(n)]
            r = _create("stablehlo.concatenate", parts, [out], {"dimension": ir.IntegerAttr.get(i64, of)}).result
        op.result.replace_all_uses_with(r)
        op.erase()
    return len(found)


def long_reductions_in_rows(module: ir.Module) -> int:
    """Each reduction of more than `LOOP` elements to each result (static shapes) reduces them in two stages of at
    most `LOOP`: the reduced dimensions moved last and flattened, filled up with the inits to rows of `COLS`, the rows
    first, then their results. IREE 3.13's SPIR-V code for a target without subgroups reduces serially, one thread a
    result, and lavapipe (Mesa's Vulkan on the CPU) ends a loop after `LOOP` iterations: `sum` of 65536 floats left
    out the last one, silently. How many."""
    def extent(op) -> int:
        t = ir.RankedTensorType(op.operands[0].type)
        return math.prod(t.shape[d] for d in ir.DenseI64ArrayAttr(op.attributes["dimensions"]))

    found = _ops_where(module, lambda op: op.name == "stablehlo.reduce" and ir.RankedTensorType(
        op.operands[0].type).has_static_shape and extent(op) > LOOP)
    for op in found:
        k = len(op.operands) // 2
        shape = ir.RankedTensorType(op.operands[0].type).shape
        dims = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
        kept = [d for d in range(len(shape)) if d not in dims]
        ks, e = [shape[d] for d in kept], extent(op)
        cols = COLS if e <= COLS * LOOP else -(-e // LOOP)
        rows = -(-e // cols)
        tensor = lambda v, s: ir.RankedTensorType.get(s, _element(v.type))  # noqa: E731
        with ir.InsertionPoint(op), op.location:
            staged = []
            for x, init in zip(list(op.operands)[:k], list(op.operands)[k:]):
                if kept + dims != list(range(len(shape))):
                    x = _create("stablehlo.transpose", [x], [tensor(x, ks + [shape[d] for d in dims])],
                                {"permutation": ir.DenseI64ArrayAttr.get(kept + dims)}).result
                if ir.RankedTensorType(x.type).shape != ks + [e]:
                    x = _create("stablehlo.reshape", [x], [tensor(x, ks + [e])]).result
                if rows * cols > e:  # (the inits: a reduction's identities, as `variadic_reductions_in_rows` takes them)
                    fill = _create("stablehlo.broadcast_in_dim", [init], [tensor(x, ks + [rows * cols - e])],
                                   {"broadcast_dimensions": ir.DenseI64ArrayAttr.get([])}).result
                    x = _create("stablehlo.concatenate", [x, fill], [tensor(x, ks + [rows * cols])],
                                {"dimension": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), len(ks))}).result
                staged.append(_create("stablehlo.reshape", [x], [tensor(x, ks + [rows, cols])]).result)
            first = ir.Operation.create("stablehlo.reduce", operands=staged + list(op.operands)[k:], regions=1,
                                        results=[tensor(v, ks + [rows]) for v in staged],
                                        attributes={"dimensions": ir.DenseI64ArrayAttr.get([len(ks) + 1])})
            body = op.operation.clone(ir.InsertionPoint(op))
            for i, r in enumerate(first.results):
                op.operands[i] = r
            op.attributes["dimensions"] = ir.DenseI64ArrayAttr.get([len(ks)])
        body.regions[0].blocks[0].append_to(first.regions[0])
        body.erase()
        # the results read through a barrier: IREE fused the second stage into a consumer of the operand's size and
        # ran that serially (x - mean(x) of 70000 values: one thread, 70000 iterations)
        results = list(op.results)
        with ir.InsertionPoint.after(op), op.location:
            bar = _create("stablehlo.optimization_barrier", results, [r.type for r in results])
        for r, b in zip(results, bar.results):
            r.replace_all_uses_except(b, bar)
    return len(found)


def _complex(v) -> bool:
    return isinstance(_element(v.type), ir.ComplexType)


def complex_reduction_inputs_apart(module: ir.Module) -> int:
    """Each real operand of a `reduce` computed from complex values (through elementwise ops and views: `abs(z)`,
    `real(z)`) comes through an `optimization_barrier`, a dispatch of its own. IREE 3.13's CUDA pipeline fused the
    complex read into the reduction and segfaulted padding it (GPUApplyPaddingLevel: `sum(abs(z))` of 256 complex64,
    a row sum of `real(z)` of 64x64; complex eigh's Frobenius norm). The count rewritten."""
    def from_complex(v) -> bool:
        return _reaches(v, lambda src: any(_complex(o) for o in src.operands), _VIEWS)
    n = 0
    for op in _ops_where(module, lambda op: op.name == "stablehlo.reduce"):
        for i, v in enumerate(list(op.operands)[:len(op.operands) // 2]):
            if not _complex(v) and from_complex(v):
                with ir.InsertionPoint(op), op.location:
                    op.operands[i] = _create("stablehlo.optimization_barrier", [v], [v.type]).result
                n += 1
    return n


def complex_of_reductions_apart(module: ir.Module) -> int:
    """Each operand of a `complex` computed by a reduction (through elementwise ops and views) comes through an
    `optimization_barrier`: the complex op in a dispatch of its own. IREE 3.13's CUDA pipeline fused it into the
    reductions' dispatch and iree-compile segfaulted (rfft of 4x1000 float32 as a DFT: two sums of 4x1000x501
    products; 64x33 compiled). The count rewritten."""
    n = 0
    for op in _ops_where(module, lambda op: op.name == "stablehlo.complex"):
        for i, v in enumerate(list(op.operands)):
            if _reaches(v, lambda src: src.name == "stablehlo.reduce", _VIEWS):
                with ir.InsertionPoint(op), op.location:
                    op.operands[i] = _create("stablehlo.optimization_barrier", [v], [v.type]).result
                n += 1
    return n


def sorts_apart(module: ir.Module) -> int:
    """Each `sort` operand that another op (or the same sort again) also reads, or that is an argument
    (`_argument_view`), is a copy of the sort's own: `select(p, v, 0)`, `p` true but opaque to IREE (`k != -1` of a
    barrier of `k`, a number of the copy's own).

    IREE 3.13 sorts its operands in place: two sorts of one constant expression (two argsorts share their iota),
    hoisted into the module's initializer, each sorted the shared buffer, so the second read the first's
    permutation (`jit` of argsort(c) and argsort(2c + 1): the second result wrong). A barrier on the value is no
    copy: IREE sorted the hoisted value through it (under `enable_x64`, `jit` of argsort(x) and argsort(-x): every
    call but the first wrong). Two copies alike are merged back into one (IREE's CSE: the barriers of one constant
    merged, and the sort of float64 keys got the int64 sort's permutation), hence `k`; a barrier on an int64 value
    failed to compile on Vulkan, hence int32. The count of operands so given."""
    n = 0
    for op in _ops_where(module, lambda op: op.name == "stablehlo.sort"):
        for i, v in enumerate(list(op.operands)):
            src = producer(v)
            if sum(1 for _ in v.uses) < 2 and not _argument_view(v) or src is not None and \
                    src.name == "stablehlo.constant":  # (IREE copies a constant it sorts: its buffer is read-only)
                continue
            with ir.InsertionPoint(op), op.location:
                b = Builder(ir.RankedTensorType.get([], ir.IntegerType.get_signless(32)))
                k = _create("stablehlo.optimization_barrier", [b.c(n)], [b.t]).result  # (one number per copy: a
                own = Builder(ir.RankedTensorType(v.type))  # value sorted twice by one sort gets two copies too)
                op.operation.operands[i] = own.op("select", b.compare(k, b.c(-1), "NE"), v, own.c(0))
            n += 1
    return n


def _argument_view(v) -> bool:
    """Whether `v` is a function's argument (the caller's array), or a reshape or slice of one: IREE 3.13
    sorted such an operand in place, in the caller's buffer (under `enable_x64`, `jit(lax.sort)` of an int64 array
    left it sorted, and the eager composite `argpartition`, whose iota is a constant passed to the sort's kernel,
    gave another answer each call)."""
    while (src := producer(v)) is not None:
        if src.name in ("stablehlo.reshape", "stablehlo.slice"):
            v = src.operands[0]
        elif src.name == "stablehlo.select" and _folded_identity(src):  # (the sort lowering's select(x == 1, 1, x))
            v = src.operands[2]
        elif src.name == "linalg.generic" and _copy_generic(src):  # (that select as `fuse` and `fuse-chains` leave it)
            v = src.operands[0]
        else:
            break
    if src is not None or not isinstance(v, ir.BlockArgument):
        return False
    return ir.BlockArgument(v).owner.owner.operation.name == "func.func"  # (a loop's carried value is its own)


def _folded_identity(select) -> bool:
    """Whether `select` is `select(x == c, c, x)` (x itself, which IREE folds)."""
    p, on_true, x = select.operands
    cmp = producer(p)
    return cmp is not None and cmp.name == "stablehlo.compare" and cmp.operands[0] == x and \
        cmp.operands[1] == on_true and str(cmp.attributes["comparison_direction"]).endswith("EQ>")


def _copy_generic(op) -> bool:
    """Whether `op` is a `linalg.generic` of one input mapped elementwise in place (identity maps): the sort
    lowering's select as `fuse` leaves it, a copy IREE may fold (a real computation then gets one copy more)."""
    if len(op.operands) != 2 or len(op.results) != 1:
        return False
    maps = [ir.AffineMapAttr(m).value for m in op.attributes["indexing_maps"]]
    return all(m == ir.AffineMap.get_identity(m.n_dims) for m in maps)


def int64_sort_slices_apart(module: ir.Module) -> int:
    """Each `sort` operand of 64-bit integers computed by a slice (through reshapes and elementwise copies: the sort
    lowering's `select(x == 1, 1, x)`, which IREE folds) read through an `optimization_barrier`. IREE 3.13 fused the
    slice into the sort's dispatch, and its SPIR-V for the portable target failed to compile it ("failed to legalize
    operation 'vector.from_elements'" / "'vector.extract'" of vector<2xi64>): under `enable_x64` a sort of a column,
    of `x[2:7]` or `x[::2]`, and `unique(rows, axis=0)`. Its CUDA codegen "failed to bufferize" the sort, which sorts
    in place, of such a slice (`sort(x[1])`, `lexsort`, `unique(rows, axis=0, size=5)`; int32 and float keys
    compiled). How many operands."""
    def sliced(v) -> bool:
        while (src := producer(v)) is not None:
            if src.name in ("stablehlo.slice", "stablehlo.dynamic_slice"):
                return True
            ins = [u for u in src.operands if (p := producer(u)) is None or p.name != "tensor.empty"]
            if src.name == "stablehlo.reshape" or src.name == "linalg.generic" and len(ins) == 1:
                v = src.operands[0]
            elif src.name == "stablehlo.select":
                v = src.operands[2]
            else:
                return False
        return False

    def int64(v) -> bool:
        return (it := _integer(_element(v.type))) is not None and it.width == 64

    return _operands_apart(module, lambda op: op.name == "stablehlo.sort", lambda v: int64(v) and sliced(v))


def reduction_results_apart(module: ir.Module) -> int:
    """Each reduction's results (a `stablehlo.reduce`, or a `linalg.generic` of `fuse` with a reduction loop) read
    through an `optimization_barrier`: each reduction a dispatch apart from its consumers. A retry for Vulkan
    (`retries.RETRIES`), where IREE 3.13's SPIR-V kept a reduction's result in workgroup memory beside the consumer
    that broadcasts it and read it from other threads with no barrier between (the gradient of a max pool of 2 x 2
    windows: the first maximum's index a reduction, compared with every element of its window). How many reductions."""
    return _results_apart(module, lambda op: op.name == "stablehlo.reduce" or (
        op.name == "linalg.generic" and "reduction" in str(op.attributes["iterator_types"])))


def _widening(op) -> bool:
    """`op` is a `convert` to a wider type of the same kind (float to float, integer or bool to integer) of more than
    one element: what IREE 3.13 clones into each consumer's dispatch (a "bit extend")."""
    if op.name != "stablehlo.convert":
        return False
    src, dst = _element(op.operands[0].type), _element(op.results[0].type)
    t = ir.RankedTensorType(op.results[0].type)
    if src is None or dst is None or not t.has_static_shape or math.prod(t.shape) < 2:
        return False
    if isinstance(src, ir.FloatType) and isinstance(dst, ir.FloatType):
        return ir.FloatType(dst).width > ir.FloatType(src).width
    return isinstance(src, ir.IntegerType) and isinstance(dst, ir.IntegerType) and \
        ir.IntegerType(dst).width > ir.IntegerType(src).width


def widening_converts_apart(module: ir.Module) -> int:
    """Each widening `convert` read by two ops or more is read through one `optimization_barrier` after it.

    IREE 3.13 clones such a convert into each consumer's dispatch; where a consumer reads it transposed, the SPIR-V
    pipeline kept the cloned convert's result in workgroup memory and read it back by other threads with no barrier
    between (a race: `partition` and `argpartition` of a float32 column under `enable_x64`, whose float64 keys, the
    transpose of the column, are copied twice by `sorts-apart`, gave zeros and stale values on lavapipe). Through a
    barrier the convert is a dispatch of its own. How many converts."""
    return _results_apart(module, lambda op: _widening(op) and sum(1 for _ in op.results[0].uses) >= 2)


def reduce_window_inits_apart(module: ir.Module) -> int:
    """Where a module has two `reduce_window`s or more, each one's init value is a copy of its own: `select(p, v, k)`,
    `p` true but opaque to IREE (`k != -1`, `k` a barrier of a number of the window's own, as in `sorts_apart`).

    IREE 3.13 fills each pooling's output with its init, and CSE made one fill of two poolings of one output shape
    and init: the first pooling's dispatch wrote the fill as a second result, accumulated in place into the first,
    and CUDA's codegen "failed to bufferize" that dispatch (two max poolings of 1x3x5x5 by 2x2 windows; `vmap` of a
    convolution and its max pooling beside the loop of them, in test_vmap). Each fill of its own value, each is
    made in its pooling's dispatch. (A pooling beside a reduction or a broadcast of its init compiled.) The count
    of windows so given."""
    found = _ops_where(module, lambda op: op.name == "stablehlo.reduce_window")
    if len(found) < 2:
        return 0
    for n, op in enumerate(found):
        k = len(op.operands) // 2  # (the operands, then their inits)
        with ir.InsertionPoint(op), op.location:
            b = Builder(ir.RankedTensorType.get([], ir.IntegerType.get_signless(32)))
            kn = _create("stablehlo.optimization_barrier", [b.c(n)], [b.t]).result
            p = b.compare(kn, b.c(-1), "NE")
            for i in range(k, 2 * k):
                v = op.operands[i]
                own = Builder(ir.RankedTensorType(v.type))  # (the other value opaque too: a constant equal to
                op.operands[i] = own.op("select", p, v, own.op("convert", kn))  # v, select(p, 0, 0) folded to 0)
    return len(found)


def _in_halves(module: ir.Module, name: str, count) -> int:
    """Each `name` op of 64-bit integers computed by `count(b, hi, lo)` on the int32 halves of its operand (each half
    sign-extended, in int32's range: its convert keeps its bits; `b` builds int32 ops). The count rewritten."""
    i32 = ir.IntegerType.get_signless(32)

    def build(op, operands, attrs):
        t = ir.RankedTensorType(op.results[0].type)
        x = operands[0]
        b64 = Builder(ir.RankedTensorType.get(t.shape, ir.IntegerType.get_signless(64)))
        if ir.IntegerType(t.element_type).is_unsigned:
            x = b64.op("bitcast_convert", x)
        b = Builder(ir.RankedTensorType.get(t.shape, i32))
        hi = b.op("convert", b64.op("shift_right_arithmetic", x, b64.c(32)))
        lo = b.op("convert", b64.op("shift_right_arithmetic", b64.op("shift_left", x, b64.c(32)), b64.c(32)))
        n = count(b, hi, lo)
        return b64.op("convert", n, ty=t) if t.element_type == b64.t.element_type else \
            b64.op("bitcast_convert", b64.op("convert", n), ty=t)
    return _replace(module, lambda op: op.name == name
                    and (it := _integer(_element(op.results[0].type))) is not None and it.width == 64, build)


def clz64_in_halves(module: ir.Module) -> int:
    """Each `count_leading_zeros` of 64-bit integers counted on their 32-bit halves: the high half's count, or 32
    plus the low half's where the high half is 0. IREE 3.13's SPIR-V lowering has no 64-bit count ("failed to
    legalize operation 'math.ctlz'" of i64 for NVIDIA's `ampere` target: float64 `frexp`); 32-bit ones compile.
    The count rewritten."""
    def count(b, hi, lo):
        clz = lambda v: b.op("count_leading_zeros", v)  # noqa: E731
        return b.op("select", b.compare(hi, b.c(0), "EQ"), b.op("add", clz(lo), b.c(32)), clz(hi))
    return _in_halves(module, "stablehlo.count_leading_zeros", count)


def popcnt64_in_halves(module: ir.Module) -> int:
    """Each `popcnt` of 64-bit integers as the sum of its 32-bit halves' counts. IREE 3.13's SPIR-V for the portable
    Vulkan target failed on a 64-bit count ("failed to legalize unresolved target materialization from ('i64') to
    ('vector<2xi32>')": `population_count` of int64 or uint64 under x64). The count rewritten."""
    return _in_halves(module, "stablehlo.popcnt",
                      lambda b, hi, lo: b.op("add", b.op("popcnt", hi), b.op("popcnt", lo)))


def _behind_barrier(op) -> None:
    """`op`'s results read through one `optimization_barrier` right after it (by every other reader)."""
    results = list(op.results)
    with ir.InsertionPoint.after(op), op.location:
        bar = _create("stablehlo.optimization_barrier", results, [r.type for r in results])
    for r, b in zip(results, bar.results):
        r.replace_all_uses_except(b, bar)


def _results_apart(module: ir.Module, keep) -> int:
    """The results of each op for which `keep(op)` holds read through a barrier (`_behind_barrier`). How many ops."""
    found = _ops_where(module, keep)
    for op in found:
        _behind_barrier(op)
    return len(found)


def sort_results_kept(module: ir.Module) -> int:
    """Each `sort` with a result nobody reads passes all its results through one `optimization_barrier`.

    IREE 3.13 reads the operand of an unread result from a read-only binding and sorts a copy of it, whose
    distribution the SPIR-V pipeline crashes on (segfault in GPUDistributeSharedMemoryCopy): a quantile and a nanmedian
    in one module; CUDA "failed to bufferize" it (`sort` of 64+ floats: its comparator reads the unread index
    operand). Every result written, each operand is sorted in a buffer of its own. The count rewritten."""
    return _results_apart(module, lambda op: op.name == "stablehlo.sort" and len(op.results) > 1
                          and any(next(iter(r.uses), None) is None for r in op.results))


def _complex_folded(block) -> None:
    """In `block`: `real`/`imag` of a `complex` op read its part, and a `select` of two `complex` ops selects parts
    (no complex value left where only those ops make one: complex128 ones failed in a reduction's body); dead
    `complex` ops erased."""
    for o in list(block.operations):
        srcs = [producer(v) for v in o.operands]
        made = [s is not None and s.name == "stablehlo.complex" for s in srcs]
        if o.name in ("stablehlo.real", "stablehlo.imag") and made[0]:
            o.results[0].replace_all_uses_with(srcs[0].operands[o.name == "stablehlo.imag"])
            o.erase()
        elif o.name == "stablehlo.select" and _complex(o.results[0]) and all(made[1:]):
            with ir.InsertionPoint(o), o.location:
                sel = [_create("stablehlo.select", [o.operands[0], srcs[1].operands[i], srcs[2].operands[i]],
                               [srcs[1].operands[i].type]).result for i in (0, 1)]
                o.results[0].replace_all_uses_with(_create("stablehlo.complex", sel, [o.results[0].type]).result)
            o.erase()
    for o in reversed(list(block.operations)):
        if o.name == "stablehlo.complex" and next(iter(o.results[0].uses), None) is None:
            o.erase()


def complex_reductions_in_parts(module: ir.Module) -> int:
    """Each `reduce` of several operands, one complex or more, reduces each complex operand's real and imaginary
    parts (its body joins them again, then splits its results: `_complex_folded`). IREE 3.13's CUDA pipeline
    segfaulted on a complex operand beside another (`argmax` of complex values: of 9 with its values' result unread,
    of 64x64 rows, of 1000). The count rewritten."""
    found = _ops_where(module, lambda op: op.name == "stablehlo.reduce" and len(op.operands) >= 4
                       and any(_complex(v) for v in op.operands))

    def parts(vs):  # (complex values as their parts, at the insertion point)
        out = []
        for v in vs:
            if not _complex(v):
                out.append(v)
                continue
            t = _like(v.type, ir.ComplexType(_element(v.type)).element_type)
            out += [_create(f"stablehlo.{p}", [v], [t]).result for p in ("real", "imag")]
        return out

    def joined(vs, old):  # (`old`'s values from `vs`, complex ones from their parts)
        it, out = iter(vs), []
        for o in old:
            out.append(_create("stablehlo.complex", [next(it), next(it)], [o.type]).result if _complex(o) else next(it))
        return out

    for op in found:
        k = len(op.operands) // 2
        with ir.InsertionPoint(op), op.location:
            operands = parts(list(op.operands)[:k]) + parts(list(op.operands)[k:])
            m = len(operands) // 2
            new = ir.Operation.create("stablehlo.reduce", operands=operands, regions=1, attributes={
                "dimensions": op.attributes["dimensions"]}, results=[
                ir.RankedTensorType.get(ir.RankedTensorType(op.results[0].type).shape, _element(v.type))
                for v in operands[m:]])
            old = op.regions[0].blocks[0]
            block = new.regions[0].blocks.append(*[v.type for v in operands[m:]] * 2)
        with ir.InsertionPoint(block), op.location:
            args = list(block.arguments)
            olds = list(old.arguments)
            for a, v in zip(olds, joined(args[:m], olds[:k]) + joined(args[m:], olds[k:])):
                a.replace_all_uses_with(v)
        for o in list(old.operations):
            o.detach_from_parent()
            ir.InsertionPoint(block).insert(o)
        ret = block.operations[len(block.operations) - 1]
        with ir.InsertionPoint(ret), op.location:
            _create("stablehlo.return", parts(list(ret.operands)), [])
        ret.erase()
        _complex_folded(block)
        with ir.InsertionPoint.after(new), op.location:
            for r, v in zip(op.results, joined(list(new.results), list(op.results))):
                r.replace_all_uses_with(v)
        op.erase()
    return len(found)


def complex_constants_apart(module: ir.Module) -> int:
    """Each complex constant of more than one element is read through an `optimization_barrier`: a buffer of its own.

    IREE 3.13 copies a constant into each dispatch that reads it, and SPIR-V has no complex constant ("failed to
    legalize operation 'arith.constant'": a DFT matrix of fft). (A splat, a fill there, compiles; the bindings cannot
    read a complex attribute to tell one.) On the CPU (and CUDA, not checked there) IREE 3.13 hoisted the parts of
    such a constant that `mathlib-complex`'s expansions read into its initializer, and they were read wrong: `x / b`
    was x / (re + re j) for a closed-over complex64 `b`, `sin(b)` inf, `tanh(b)` and `arcsin(b)` off, silently (root
    cause in IREE not found; docs/log.md, 2026-11-28). The count rewritten."""
    return _results_apart(module, lambda op: op.name == "stablehlo.constant"
                          and isinstance(_element(op.results[0].type), ir.ComplexType)
                          and math.prod(ir.RankedTensorType(op.results[0].type).shape) > 1)


def _one_value(v) -> complex | None:
    """The value of `v` where it is a complex constant of one value (0-d or a splat, through broadcasts and
    reshapes), read from its text (the bindings cannot read a complex attribute), else None."""
    while not isinstance(v.owner, ir.Block) and v.owner.name in ("stablehlo.broadcast_in_dim", "stablehlo.reshape"):
        v = v.owner.operands[0]
    if isinstance(v.owner, ir.Block) or v.owner.name != "stablehlo.constant":
        return None
    text = str(v.owner)
    pairs = _PAIR.findall(text[text.index("dense<"):].split("> : ", 1)[0])
    return complex(_f64(pairs[0][0]), _f64(pairs[0][1])) if len(pairs) == 1 and '"0x' not in text else None


def _constant(v) -> bool:
    """Whether `v` is a constant, through broadcasts and reshapes (a zero tensor; the bindings cannot read a complex
    attribute to tell a splat)."""
    while not isinstance(v.owner, ir.Block) and v.owner.name in ("stablehlo.broadcast_in_dim", "stablehlo.reshape"):
        v = v.owner.operands[0]
    return not isinstance(v.owner, ir.Block) and v.owner.name == "stablehlo.constant"


def complex_pads_in_parts(module: ir.Module) -> int:
    """Each complex `pad`, and each complex `dynamic_update_slice` into a constant (IREE raises an update of a
    splat to a pad: the transpose of a `dynamic_slice`), as two real ones of its parts, made complex again. iree-compile 3.13 crashed
    (SIGSEGV) on a complex `stablehlo.pad` on the CPU (`snp.pad` of complex values under jit, complex
    convolve/correlate in modes "full" and "same", fft's transposes), and failed on the update ("'arith.constant' op
    attribute 'value' failed to satisfy constraint": the complex gradient of `solve_triangular`'s loop, `cho_solve`).
    The count rewritten."""
    ops = _ops_where(module, lambda op: (op.name == "stablehlo.pad" or op.name == "stablehlo.dynamic_update_slice"
                                         and _constant(op.operands[0]))
                     and isinstance(_element(op.results[0].type), ir.ComplexType))
    for op in ops:
        t = ir.RankedTensorType(op.results[0].type)
        part_of = lambda v: ir.RankedTensorType.get(ir.RankedTensorType(v.type).shape,
                                                    ir.ComplexType(_element(v.type)).element_type)
        with ir.InsertionPoint(op), op.location:
            b = Builder(t)
            attrs = {k: op.attributes[k] for k in ("edge_padding_low", "edge_padding_high", "interior_padding")} \
                if op.name == "stablehlo.pad" else {}
            # (the first two operands are complex: the pad's operand and value, the update's operand and update; an
            # updated splat's parts are splats of their own, not parts read from a constant: IREE 3.13 updated such a
            # read in place where a loop reused it, `_constant_parts_apart`)
            z = _one_value(op.operands[0]) if op.name == "stablehlo.dynamic_update_slice" else None
            part = lambda name, v: (make_constant(np.array(z.real if name == "real" else z.imag), part_of(v))  # noqa: E731
                                    if z is not None and v == op.operands[0] else b.op(name, v, ty=part_of(v)))
            ops_of = lambda name: [part(name, v) for v in list(op.operands)[:2]] + list(op.operands)[2:]
            parts = [b.op(op.name.split(".")[1], *ops_of(name), ty=part_of(op.results[0]), **attrs)
                     for name in ("real", "imag")]
            op.results[0].replace_all_uses_with(b.op("complex", *parts))
        op.erase()
    return len(ops)


def complex_division_constants_apart(module: ir.Module) -> int:
    """Each complex64 `divide`'s operand computed from a constant alone (through broadcasts, reshapes, converts) is read
    through an `optimization_barrier`: a buffer, not constants in the division's dispatch. There lavapipe folds
    x * 0.0 to 0.0 (Mesa's inexact fmul: SPIR-V asks for no IEEE infinities), which lost the NaN of 0 * inf that
    `mathlib-glsl`'s division takes Annex G's recovery on: 1 / (inf + 0j) was NaN - 0j, not 0, 1 / (0 - inf j) NaN.
    The count rewritten."""
    def constant(v) -> bool:
        op = producer(v)
        while op is not None and op.name in ("stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.convert"):
            op = producer(op.operands[0])
        return op is not None and op.name == "stablehlo.constant"
    c64 = ir.ComplexType.get(ir.F32Type.get())  # (complex128: no splat of i128 through a barrier; Vulkan raises)
    return _operands_apart(module, lambda op: op.name == "stablehlo.divide" and _element(op.results[0].type) == c64,
                           constant)


_PAIR = re.compile(r"\(([^,()]+),([^,()]+)\)")


def _f64(token: str) -> float:
    """A float64 as MLIR prints one: decimal, or its bits in hex (NaN, infinities)."""
    token = token.strip()
    return float(np.uint64(int(token, 16)).view(np.float64)) if token.startswith("0x") else float(token)


def _complex128_values(op, shape) -> np.ndarray | None:
    """A complex<f64> constant's values (the bindings cannot read its attribute: read from the op's text), or None
    for a splat."""
    text = str(op)
    text = text[text.index("dense<"):]
    if (m := re.match(r'dense<"0x([0-9A-Fa-f]+)">', text)) is not None:
        values = np.frombuffer(bytes.fromhex(m.group(1)), "<c16")
    else:
        values = np.array([complex(_f64(a), _f64(b)) for a, b in _PAIR.findall(text.split("> : ", 1)[0])])
    return None if values.size <= 1 else values.reshape(shape)


def complex128_constants_in_parts(module: ir.Module) -> int:
    """Each complex128 constant of more than one value built by `stablehlo.complex` from two float64 constants, and
    each complex128 splat of more than one element (a splat constant, or a broadcast of a constant of one value)
    from two float64 splats.

    IREE 3.13's stream packing of a complex<f64> constant of more than 16 elements fails (a SIGFPE in
    `SizedStorageDenseElementsAttrModel::getStorageSize`, `iree-compile` exits -8, on the CPU and CUDA alike):
    `jit(lambda x: x + c)` with a closed-over complex128 array of 17 values did not compile. A complex128 splat of a
    function's body that IREE fills as a buffer of its own (a loop's initial zeros: complex128 qr, cholesky, pinv,
    lstsq, the gradient of solve_triangular) failed ("'stream.async.splat' op operand #0 must be ... integer, but got
    'i128'"); so did one of a single value (0-d, or one element: a splat, a broadcast or reshape of a scalar constant)
    returned or read by a concatenation (`atleast_2d` of a complex128 scalar, `concatenate` of `zeros(1)`, `ediff1d`'s
    `to_begin`, `polyint`): each splat of a function's body is rewritten, whatever its size. The count rewritten."""
    c128 = ir.ComplexType.get(ir.F64Type.get())
    found = _ops_where(module, lambda op: op.name == "stablehlo.constant"
                       and _element(op.results[0].type) == c128
                       and math.prod(ir.RankedTensorType(op.results[0].type).shape) > 1)
    n = 0
    for op in found:
        t = ir.RankedTensorType(op.results[0].type)
        values = _complex128_values(op, list(t.shape))
        if values is None:
            continue
        _in_parts(op, t, np.ascontiguousarray(values.real), np.ascontiguousarray(values.imag))
        n += 1
    splats = _ops_where(module, lambda op: op.name in ("stablehlo.constant", "stablehlo.broadcast_in_dim",
                                                        "stablehlo.reshape")
                        and _element(op.results[0].type) == c128 and op.parent.name == "func.func"
                        and _one_value(op.results[0]) is not None)
    done = 0
    for op in reversed(splats):  # (the last of a chain first: the constant it reads is left unread, not rewritten)
        if not any(True for r in op.results for _ in r.uses):
            continue
        t = ir.RankedTensorType(op.results[0].type)
        z = _one_value(op.results[0])
        if z is None:
            continue
        _in_parts(op, t, np.array(z.real), np.array(z.imag))
        done += 1
    return n + done + _constant_parts_apart(module, c128)


def _in_parts(op, t, re: np.ndarray, im: np.ndarray) -> None:
    """`op`'s complex128 value (of type `t`) made by `stablehlo.complex` of float64 constants `re` and `im` (each a
    splat where 0-d); `op` erased."""
    with ir.InsertionPoint(op), op.location:
        f64 = _like(t, ir.F64Type.get())
        parts = [make_constant(p, f64) for p in (re, im)]
        op.results[0].replace_all_uses_with(_create("stablehlo.complex", parts, [t]).result)
    op.erase()


def _top_level(op) -> bool:
    """Whether `op` is in a function's body and each of its results is read there only (no loop or branch reads it)."""
    return op.parent.name == "func.func" and all(u.owner.parent.name == "func.func"
                                                  for r in op.results for u in r.uses)


def _constant_parts_apart(module: ir.Module, c128) -> int:
    """Each complex128 `complex` of more than one element of a function's body, read there only (not in a loop's),
    whose parts are both computed from constants alone reads them through an `optimization_barrier` (a scalar's
    barrier joined a run of scalar ops past the runtime's 32 bindings: the 1 x 1 complex128 gradient of cho_solve). IREE 3.13 folds such a complex into a constant and read its
    imaginary part wrong where a product and sum consumed it (as re + re j: the reverse mode of `real(inv(a)) * w`,
    whose cotangent is complex(w, 0), gave a wrong gradient under jit). Not where a loop body reads it: there IREE
    3.13 updated the barrier's result in place (a `dynamic_update_slice` of a part), so the next iteration read the
    update as the constant (the gradient of a complex128 `solve_triangular`). The count rewritten."""
    memo: dict = {}

    def from_constants(v) -> bool:
        op = producer(v)
        if op is None:
            return False
        key = op  # (an op's hash is its identity in the bindings)
        if key not in memo:
            memo[key] = False  # (cycles cannot occur in SSA; a guard all the same)
            memo[key] = op.name == "stablehlo.constant" or (len(op.regions) == 0 and len(op.operands) > 0 and all(
                from_constants(o) for o in op.operands))
        return memo[key]
    found = _ops_where(module, lambda op: op.name == "stablehlo.complex" and _element(op.results[0].type) == c128
                       and math.prod(ir.RankedTensorType(op.results[0].type).shape) > 1 and _top_level(op)
                       and all(from_constants(o) for o in op.operands))
    for op in found:
        _all_operands_apart(op)
    return len(found)


def uint8_division_in_int32(module: ir.Module) -> int:
    """Each uint8 `divide` and `remainder` computed in int32 (exact: both operands are 0..255), its widened operands
    from a dispatch of their own (a barrier). IREE 3.13's SPIR-V codegen emulates the 8-bit integers of a dispatch
    that loads them, and has no unsigned division there ("bitwidth emulation is not implemented yet on unsigned op
    pattern": arith.divui of vector<1xi8>; in int32 or int16 too, which IREE makes unsigned: the operands are
    non-negative). The count rewritten."""
    def build(op, operands, attrs):
        i32 = ir.IntegerType.get_signless(32)
        wide = [_create("stablehlo.convert", [v], [_like(v.type, i32)]).result for v in operands]
        wide = list(_create("stablehlo.optimization_barrier", wide, [v.type for v in wide]).results)
        out = _create(op.name, wide, [_like(op.results[0].type, i32)], attrs).result
        return _create("stablehlo.convert", [out], [op.results[0].type]).result
    u8 = lambda t: (it := _integer(_element(t))) is not None and it.is_unsigned and it.width == 8  # noqa: E731
    return _replace(module, lambda op: op.name in ("stablehlo.divide", "stablehlo.remainder")
                    and u8(op.results[0].type), build)


def signed_remainders_of_min(module: ir.Module) -> int:
    """Each signed integer `remainder` takes its dividend's sign where the dividend is its type's minimum. IREE 3.13's
    SPIR-V lowering of `remsi` computes |x| % |y| and negates it where x != |x|, which misses x = MIN (|MIN| is MIN):
    rem(-128, 7) was 2, not -2, on lavapipe (int8, int16, int32; `%` and `remainder` of MIN too). Where x is MIN
    that |x| % |y| (of 2^(n-1) unsigned) is the remainder's magnitude, so its negation is right. The count rewritten."""
    def build(op, operands, attrs):
        b = Builder(ir.RankedTensorType(op.results[0].type))
        r = _create(op.name, operands, [op.results[0].type], attrs).result
        low = b.c(-(1 << (_integer(b.t.element_type).width - 1)))
        return b.op("select", b.compare(operands[0], low, "EQ"), b.op("negate", r), r)
    signed = lambda t: (it := _integer(_element(t))) is not None and it.is_signless and it.width > 1  # noqa: E731
    return _replace(module, lambda op: op.name == "stablehlo.remainder" and signed(op.results[0].type), build)


def signed_zeros_of_max_min(module: ir.Module) -> int:
    """Each float `maximum` and `minimum` of a function's body (not a reduction's) orders -0 below +0 (IEEE 754-2019's,
    StableHLO's, JAX's) where both operands are zeros: max is a + b there and min -((-a) + (-b)), exact and of the
    right sign; with a splat zero operand c (a `relu`), c or the other operand (IREE folds x + 0.0 to x). IREE 3.13's
    SPIR-V is GLSL's FMax/FMin, which lavapipe computes as x86's maxps: the second operand where they compare equal,
    so max(+0, -0) was -0 (`maximum(x, -0.0)`, `lax.max`). Left: a bfloat16 splat zero operand (`relu` of bfloat16;
    `splat_value` reads no bfloat16, and IREE folds the sum's x + 0.0 to x). The count rewritten."""
    def build(op, operands, attrs):
        b = Builder(ir.RankedTensorType(op.results[0].type))
        x, y = operands
        m = _create(op.name, operands, [op.results[0].type], attrs).result
        big, zero = op.name == "stablehlo.maximum", b.c(0.0)
        cx, cy = splat_value(x), splat_value(y)
        if cx == 0 or cy == 0:  # (the zero that wins where both are: max's +0, min's -0; else the other operand)
            other, const, c = (y, x, cx) if cx == 0 else (x, y, cy)
            wins = math.copysign(1.0, c) == (1.0 if big else -1.0)
            return b.op("select", b.compare(other, zero, "EQ"), const if wins else other, m)
        both = b.op("and", b.compare(x, zero, "EQ"), b.compare(y, zero, "EQ"), ty=b.i1)
        z = b.op("add", x, y) if big else b.op("negate", b.op("add", b.op("negate", x), b.op("negate", y)))
        return b.op("select", both, z, m)

    def keep(op) -> bool:
        if op.name not in ("stablehlo.maximum", "stablehlo.minimum") or op.parent.name != "func.func" or \
                not isinstance(_element(op.results[0].type), (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type)):
            return False
        for v in op.operands:  # (a constant without zeros: no two zeros meet there)
            c = constant_value(v, 1 << 16)
            if c is not None and not (np.asarray(c[0]) == 0).any():
                return False
        return True
    return _replace(module, keep, build)


def reductions_in_one_dimension(module: ir.Module) -> int:
    """Each `reduce` over two dimensions or more (static shapes) reduces one: its operands' reduced dimensions merged
    by a reshape where they are adjacent, else moved last by a transpose first (the same elements, and each result's
    in the same order). IREE 3.13's SPIR-V reduction for NVIDIA's target (`ampere`: subgroup reductions) did not
    compile several of them ("failed to legalize operation 'vector.create_mask'", "'vector.transfer_read' op with rank
    > 1 should be broken down": the total of a 64 x 33 log-softmax loss, `sum(z - log(s)[:, None])`; over dimensions 0
    and 2 even of an argument). How many."""
    found = _ops_where(module, lambda op: op.name == "stablehlo.reduce" and len(
        ir.DenseI64ArrayAttr(op.attributes["dimensions"])) > 1 and ir.RankedTensorType(
        op.operands[0].type).has_static_shape)
    for op in found:
        k = len(op.operands) // 2  # (the operands, then their inits)
        shape = ir.RankedTensorType(op.operands[0].type).shape
        dims = sorted(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
        e = math.prod(shape[d] for d in dims)
        if dims == list(range(dims[0], dims[-1] + 1)):
            perm, merged, at = None, [*shape[:dims[0]], e, *shape[dims[-1] + 1:]], dims[0]
        else:
            kept = [d for d in range(len(shape)) if d not in dims]
            perm, merged, at = kept + dims, [*(shape[d] for d in kept), e], len(kept)
        with ir.InsertionPoint(op), op.location:
            for i in range(k):
                x = op.operands[i]
                if perm is not None:
                    x = _create("stablehlo.transpose", [x], [ir.RankedTensorType.get(
                        [shape[d] for d in perm], _element(x.type))], {"permutation": ir.DenseI64ArrayAttr.get(perm)}).result
                op.operands[i] = _create("stablehlo.reshape", [x], [ir.RankedTensorType.get(merged, _element(x.type))]).result
        op.attributes["dimensions"] = ir.DenseI64ArrayAttr.get([at])
    return len(found)


_SIGN_FLIPPED = {"f32": (32, 1 << 31), "f16": (16, 1 << 15)}


def negated_sums_as_sign_flips(module: ir.Module) -> int:
    """Each float `negate` a sum reads (a `reduce` that adds, through reshapes, transposes and broadcasts) computed
    without `negate`: float32 and float16 as their bits with the sign bit flipped (exactly negate's value, NaN's sign
    too, and fused as before), bfloat16 read through an `optimization_barrier` (its 16-bit bitcast did not compile
    there). IREE 3.13 folds acc + (-x) into acc - x, and its SPIR-V subgroup reduction (NVIDIA's target) has no
    identity for a subtraction ("'linalg.generic' op Failed to get an identity value for the reduction operation": the
    gradient of a log-softmax loss, a row sum of -pad(...); `sum(-x)` of 32 floats). How many negates."""
    def feeds_sum(op) -> bool:
        work, seen = [op], set()
        while work:
            o = work.pop()
            if o.operation in seen:
                continue
            seen.add(o.operation)
            for r in o.results:
                for u in r.uses:
                    owner = u.owner
                    if owner.name == "stablehlo.reduce" and sums_an_add(owner):
                        return True
                    if owner.name in ("stablehlo.reshape", "stablehlo.transpose", "stablehlo.broadcast_in_dim"):
                        work.append(owner)
        return False

    def keep(op) -> bool:
        return (op.name == "stablehlo.negate" and str(_element(op.results[0].type)) in (*_SIGN_FLIPPED, "bf16")
                and feeds_sum(op))

    found = _ops_where(module, keep)
    for op in found:
        t = ir.RankedTensorType(op.results[0].type)
        if str(t.element_type) == "bf16":
            _behind_barrier(op)
            continue
        width, sign = _SIGN_FLIPPED[str(t.element_type)]
        x = op.operands[0]
        with ir.InsertionPoint(op), op.location:
            b = _ShapedBuilder(ir.RankedTensorType.get(t.shape, ir.IntegerType.get_unsigned(width)), x)
            flipped = b.op("xor", b.op("bitcast_convert", x), b.c(sign))
            y = _create("stablehlo.bitcast_convert", [flipped], [t]).result
        op.results[0].replace_all_uses_with(y)
        op.erase()
    return len(found)


_CONTRACTIONS = ("stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution")


def complex_products_apart(module: ir.Module) -> int:
    """Each `complex` whose real or imaginary part is computed from a product (a `dot_general` or convolution, through
    elementwise ops) reads both parts through one `optimization_barrier`. IREE 3.13 fused the complex into the
    product's dispatch, and the SPIR-V pipeline of NVIDIA's target (`ampere`) did not compile that dispatch ("failed
    to legalize unresolved source materialization from memref<1xcomplex<f32>...", "failed to legalize operation
    'arith.constant' ... vector<256xf32>": `fft-as-dft`'s transforms, x Wr + i x Wi, of 3 x 33 and of 1024 points).
    The count rewritten."""
    def from_product(v) -> bool:
        return _reaches(v, lambda src: src.name in _CONTRACTIONS, ("stablehlo.reshape", "stablehlo.broadcast_in_dim"))

    found = _ops_where(module, lambda op: op.name == "stablehlo.complex" and any(from_product(v) for v in op.operands))
    for op in found:
        _all_operands_apart(op)
    return len(found)


class Rewrite(Pass):
    """A pass made of one rewrite function `fn(module) -> count or bool` (counted under the pass's name)."""

    def __init__(self, name: str, fn, description: str, kind: str, workaround: Workaround | None = None):
        self.name, self.fn, self.description, self.kind, self.workaround = name, fn, description, kind, workaround

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        stats.rewrites[self.name] += int(self.fn(module))


_IREE = "3.13"
BOUND_BINDINGS = register(Rewrite(
    "bound-bindings", bound_bindings, "long runs of scalar ops cut by barriers (dispatches under 32 bindings)",
    "legalize", Workaround(_IREE, "tests/test_jit.py::test_many_scalar_operands_and_results")))
BOUND_BINDINGS_16 = register(Rewrite(
    "bound-bindings-16", lambda m: bound_bindings(m, 12),
    "long runs of scalar ops cut by barriers (dispatches under 16 bindings: CUDA's runtime binds no more)", "legalize",
    Workaround(_IREE, "tests/test_gpu.py::test_cuda_dispatches_bind_at_most_16_buffers")))
ELEMENTWISE_BINDINGS_16 = register(Rewrite(
    "elementwise-bindings-16", lambda m: bound_elementwise_bindings(m, 12),
    "long runs of elementwise ops cut by barriers (a CUDA retry: IREE fused 40 float64 terms into one dispatch of "
    "32-41 buffers; its runtime binds 16)", "legalize",
    Workaround(_IREE, "tests/test_gpu.py::test_long_elementwise_chains_compile_for_cuda_within_16_bindings")))
SCALAR_USES_APART = register(Rewrite(
    "scalar-uses-apart", scalar_uses_apart,
    "a scalar value read three times or more comes through a barrier (a CUDA retry: IREE's own split of a long scalar "
    "run made a dispatch of 17-23 buffers)", "legalize",
    Workaround(_IREE, "tests/test_gpu.py::test_long_elementwise_chains_compile_for_cuda_within_16_bindings")))
ISOLATE_REDUCTIONS = register(Rewrite(
    "isolate-reductions", isolate_multi_use_reductions,
    "a reduction result used twice, one use reaching another reduction, read through a barrier", "legalize",
    Workaround(_IREE, "tests/test_fusion_hazards.py::test_the_hazard_is_found_every_time")))
MATERIALIZE_SLICED_DOTS = register(Rewrite(
    "materialize-sliced-dots", materialize_sliced_dot_operands,
    "matmul operands that are slices computed into buffers of their own (a CPU retry: stack limit)", "legalize",
    Workaround(_IREE, "tests/test_numpy_linalg.py::test_matmuls_of_sliced_operands_compile_and_match_numpy")))
BF16_IN_F32 = register(Rewrite(
    "bf16-in-f32", lambda m: bf16_in_f32(m, apart=False),
    "bf16 power and matmul computed in float32, rounded once (CUDA)", "legalize",
    Workaround(_IREE, "tests/test_gpu.py::test_bfloat16_matmul_compiles_for_gpus")))
BF16_IN_F32_APART = register(Rewrite(
    "bf16-in-f32-apart", lambda m: bf16_in_f32(m, apart=True),
    "bf16 power and matmul computed in float32, a matmul's operands widened in dispatches apart (SPIR-V)",
    "legalize", Workaround(_IREE, "tests/test_gpu.py::test_bfloat16_matmul_compiles_for_gpus")))
ROUND_TO_BF16 = register(Rewrite(
    "round-to-bf16", round_to_bf16,
    "a convert to bfloat16 from float16, or of one float32/float64 element, rounded by integer ops first",
    "legalize", Workaround(_IREE, "tests/test_dtypes_bf16_scalars.py::test_conversions_to_bfloat16_round")))
UNSIGNED_TO_FLOAT = register(Rewrite(
    "unsigned-to-float", unsigned_to_float_via_i32,
    "a convert from bool, uint8 or uint16 to a float or complex type goes through int32", "legalize",
    Workaround(_IREE, "tests/test_dtypes.py::test_products_of_bool_and_unsigned_operands_under_jit")))
SELF_UPDATES_APART = register(Rewrite(
    "self-updates-apart", self_updates_apart,
    "a dynamic_update_slice's update computed from its own operand comes through a barrier (IREE updated the buffer "
    "in place while reading the update from it)", "legalize",
    Workaround(_IREE, "tests/test_passes_updates.py::test_updates_computed_from_their_own_operand")))
SLICED_INDICES_APART = register(Rewrite(
    "sliced-indices-apart", sliced_indices_apart,
    "a reshaped slice that a gather's or scatter's indices are computed from, read elsewhere too, reshapes the slice "
    "through a barrier (IREE moved the reshape above the slice with the wrong rank: the compile failed)", "legalize",
    Workaround(_IREE, "tests/test_control_flow.py::test_gradients_of_branches_around_indexed_updates_compile")))
TRANSPOSED_REDUCTIONS_APART = register(Rewrite(
    "transposed-reductions-apart", transposed_reductions_apart,
    "a reduction of several operands whose result is read transposed passes its results through a barrier (IREE "
    "fused the transpose into it: the compile failed)", "legalize",
    Workaround(_IREE, "tests/test_vmap.py::test_nested_vmaps_of_argmax_over_the_last_axis_compile")))
PADS_OF_PADS_APART = register(Rewrite(
    "pads-of-pads-apart", pads_of_pads_apart,
    "a pad of a pad, either with interior padding, reads the inner one through a barrier (IREE merged them and "
    "dropped the interior padding: wrong values)", "legalize",
    Workaround(_IREE, "tests/test_fusion_hazards.py::test_pads_of_pads_with_interior_padding_are_right")))
CROSSED_REDUCTIONS_APART = register(Rewrite(
    "crossed-reductions-apart", crossed_reductions_apart,
    "a reduction whose result one op reads in two orders (s[:, None] + s[None, :]) passes its results through a "
    "barrier (IREE's CPU code fused it into that reader and computed one order: wrong values off the diagonal)",
    "legalize",
    Workaround(_IREE, "tests/test_fusion_hazards.py::test_a_reduction_read_in_two_orders_is_right")))
BROADCAST_CONTRACTIONS_APART = register(Rewrite(
    "broadcast-contractions-apart", broadcast_contractions_apart,
    "a sum over two or more dimensions of a product with an operand broadcast along one of them reads the product "
    "through a barrier (IREE's CPU codegen took it for a contraction and failed)", "legalize",
    Workaround(_IREE, "tests/test_numpy_reductions.py::test_sums_of_products_with_a_broadcast_vector_compile")))
STRIDED_GATHER_OPERANDS_APART = register(Rewrite(
    "strided-gather-operands-apart", strided_gather_operands_apart,
    "a gather's operand that is a strided slice (a column) read through a barrier (IREE's fused strided load failed "
    "LLVM translation)", "legalize",
    Workaround(_IREE, "tests/test_numpy_indexing.py::test_indexing_a_column_of_a_batch_by_an_array_compiles")))
NARROW_STRIDED_SLICES_APART = register(Rewrite(
    "narrow-strided-slices-apart", narrow_strided_slices_apart,
    "a strided slice of a small operand computed from narrower values (a widening convert) reads it through a barrier "
    "(IREE's CPU code dropped the stride: the first elements)", "legalize",
    Workaround(_IREE, "tests/test_fusion_hazards.py::test_strided_slices_of_widened_small_values_keep_their_stride")))
NARROW_STRIDED_SLICES_APART_ANY = register(Rewrite(
    "narrow-strided-slices-apart-any", lambda m: narrow_strided_slices_apart(m, None),
    "a strided slice of an operand of any size computed from narrower values reads it through a barrier (IREE's "
    "SPIR-V read other elements, by size: 16, 17, 64 or 65 bfloat16 or int8 values on lavapipe; CUDA's codegen "
    "failed)", "legalize",
    Workaround(_IREE, "tests/test_lavapipe.py::test_strided_slices_of_widened_values_keep_their_stride")))
WIDENED_SCATTER_UPDATES_APART = register(Rewrite(
    "widened-scatter-updates-apart", widened_scatter_updates_apart,
    "a scatter's updates computed from values of fewer bits an element (a widening convert) come through a barrier "
    "(CUDA: IREE failed to apply fusion + hoisting patterns to the fused dispatch)", "legalize",
    Workaround(_IREE, "tests/test_gpu.py::test_scatters_of_widened_updates_compile_for_cuda")))
LOOP_CONCATS_APART = register(Rewrite(
    "loop-concats-apart", loop_concats_apart,
    "in a loop, each concatenate reads its operands through a barrier (IREE wrote two concatenates of one shape "
    "into one buffer: a loop's forward-mode derivative returned tangents as primals)", "legalize",
    Workaround(_IREE, "tests/test_control_flow.py::test_concatenates_in_a_loop_keep_their_own_values")))
LOOPS_ON_ONE_DEVICE = register(Rewrite(
    "loops-on-one-device", loops_on_one_device,
    "a function holding a loop is placed on the device (IREE gave the loop's carried values none, and copied each of "
    "them whole every iteration)", "legalize",
    Workaround(_IREE, "tests/test_control_flow.py::test_a_long_scan_stacks_its_outputs_in_place")))
LOOPS_UNPLACED = register(Rewrite(
    "loops-unplaced", loops_unplaced,
    "each function's device placement removed (a retry: a placed module IREE failed to convert to streams)", "legalize",
    Workaround(_IREE, "tests/test_retries.py::test_a_placed_loop_iree_cannot_convert_compiles_unplaced")))
LOOP_UPDATES_APART = register(Rewrite(
    "loop-updates-apart", loop_updates_apart,
    "in a loop holding a case or if, each in-place update's value passes through a barrier (IREE lost the loop's "
    "in-place updates beside the branch: a scan kept one step)", "legalize",
    Workaround(_IREE, "tests/test_control_flow.py::test_a_scan_that_switches_stacks_every_step")))
HALF_PRODUCTS_IN_F32 = register(Rewrite(
    "half-products-in-f32", half_products_in_f32,
    "float16 and bfloat16 products and convolutions accumulate in float32, rounded once (IREE summed in the half "
    "type: up to 8 ulps off)", "legalize",
    Workaround(_IREE, "tests/test_dtypes.py::test_half_products_and_convolutions_sum_in_float32")))
GROUPED_CONV_KERNELS_APART = register(Rewrite(
    "grouped-conv-kernels-apart", grouped_conv_kernels_apart,
    "a grouped convolution of widened operands computes in the result's type, its kernel read through a barrier "
    "(IREE folded the widening into a depthwise convolution and failed to compile it)", "legalize",
    Workaround(_IREE, "tests/test_conv.py::test_half_and_widened_depthwise_convolutions_compile")))
UNSIGNED_EXTENSIONS_APART = register(Rewrite(
    "unsigned-extensions-apart", unsigned_extensions_apart,
    "a product's operand converted directly from bool or unsigned values read through a barrier (IREE folded the "
    "conversion into the matmul as a signed extension)", "legalize",
    Workaround(_IREE, "tests/test_dtypes.py::test_products_of_bool_and_unsigned_operands_widened_to_integers")))
FLATTEN_FULL_REDUCTIONS = register(Rewrite(
    "flatten-full-reductions", flatten_full_reductions,
    "a reduction over every dimension of a 2-D+ operand reduces its 1-D reshape (CUDA: split reduction)", "legalize",
    Workaround(_IREE, "tests/test_gpu.py::test_full_reductions_compile_for_cuda")))
VARIADIC_REDUCTIONS_IN_ROWS = register(Rewrite(
    "variadic-reductions-in-rows", variadic_reductions_in_rows,
    f"a reduction of several 1-D operands over all of them reduces {ROWS} rows first (CUDA: split reduction)",
    "legalize", Workaround(_IREE, "tests/test_gpu.py::test_argmax_of_a_long_array_compiles_for_cuda")))
OUTER_PRODUCT_OPERANDS_APART = register(Rewrite(
    "outer-product-operands-apart", outer_product_operands_apart,
    "an outer product's operand computed by a product or a reduction read through a barrier (lavapipe: IREE's fused "
    "dispatch gave wrong values from 9 x 9)", "legalize",
    Workaround(_IREE, "tests/test_lavapipe.py::test_householder_qr")))
POOL_GRADIENTS_UNFUSED = register(Rewrite(
    "pool-gradients-unfused", pool_gradients_unfused,
    "a module with a product read by two or more selects that feed pads (an overlapping max pool's gradient) is "
    "compiled without aggressive fusion (CPU at O3: a dispatch IREE could not distribute, then a second compile)",
    "legalize", Workaround(_IREE, "tests/test_retries.py::test_grad_of_an_overlapping_max_pool_then_a_product_compiles")))
DYNAMIC_REDUCTIONS_UNFUSED = register(Rewrite(
    "dynamic-reductions-unfused", dynamic_reductions_unfused,
    "a module with dynamic arguments and a reduction is compiled without aggressive fusion (CPU: the reduction was "
    "recomputed in its readers' dispatch, nn.softmax 12x slower)", "legalize",
    Workaround(_IREE, "tests/test_eager_whole.py::test_polymorphic_reductions_are_one_pass")))
GATHERED_F64_OPERANDS_APART = register(Rewrite(
    "gathered-f64-operands-apart", gathered_f64_operands_apart,
    "a float64 product's operand computed by a gather read through a barrier (lavapipe: IREE's fused dispatch gave "
    "wrong values)", "legalize", Workaround(_IREE, "tests/test_lavapipe.py::test_float64_products_of_gathered_operands")))
INT64_CONSTANTS_FROM_INT32 = register(Rewrite(
    "int64-constants-from-int32", int64_constants_from_int32,
    "int64 constants (or concatenations of them) of several values in int32's range built from int32 ones (SPIR-V: "
    "IREE could not materialize them)", "legalize",
    Workaround(_IREE, "tests/test_lavapipe.py::test_int64_constants_of_several_values")))
CONVERTED_PRODUCT_OPERANDS_APART = register(Rewrite(
    "converted-product-operands-apart", converted_product_operands_apart,
    "a product's operand computed from values of another element type read through a barrier (lavapipe: the fused "
    "conversion gave wrong values now and then)", "legalize",
    Workaround(_IREE, "tests/test_lavapipe.py::test_products_of_converted_operands_every_call")))
LONG_CONTRACTIONS = register(Rewrite(
    "long-contractions", long_contractions,
    f"a product contracting more than {LOOP} elements a result, of at most {WIDE} products, as a multiplication and a "
    "sum (lavapipe ends a shader loop there)", "legalize", Workaround(_IREE, "tests/test_lavapipe.py::test_long_dots")))
GROUPED_CONVS_APART = register(Rewrite(
    "grouped-convs-apart", grouped_convs_apart,
    "a grouped convolution (batch groups; feature groups of 2+ input features) as one convolution a group, "
    "concatenated (SPIR-V: zeros or wrong values on lavapipe)", "legalize",
    Workaround(_IREE, "tests/test_lavapipe.py::test_grouped_convolutions")))
LONG_REDUCTIONS_IN_ROWS = register(Rewrite(
    "long-reductions-in-rows", long_reductions_in_rows,
    f"a reduction of more than {LOOP} elements a result in two stages of at most {LOOP} (lavapipe ends a shader "
    "loop there)", "legalize", Workaround(_IREE, "tests/test_lavapipe.py::test_long_reductions")))
SORTS_APART = register(Rewrite(
    "sorts-apart", sorts_apart, "a sort operand read elsewhere too comes through a barrier of its own (IREE sorts "
    "in place)", "legalize", Workaround(_IREE, "tests/test_sorts.py::test_two_sorts_of_one_constant_expression")))
INT64_SORT_SLICES_APART = register(Rewrite(
    "int64-sort-slices-apart", int64_sort_slices_apart,
    "a sort's int64 operand computed by a slice read through a barrier (SPIR-V: the fused slice did not compile; "
    "CUDA: the sort failed to bufferize)",
    "legalize", Workaround(_IREE, "tests/test_lavapipe.py::test_sorts_of_int64_slices")))
REDUCTION_RESULTS_APART = register(Rewrite(
    "reduction-results-apart", reduction_results_apart,
    "every reduction's results read through a barrier (a Vulkan retry: IREE's SPIR-V read a fused reduction's result "
    "from other threads with no barrier)", "legalize",
    Workaround(_IREE, "tests/test_lavapipe.py::test_max_pool_gradients_read_their_window_maxima_synced")))
WIDENING_CONVERTS_APART = register(Rewrite(
    "widening-converts-apart", widening_converts_apart,
    "a widening convert read twice or more read through a barrier (SPIR-V: its clone in a transposing dispatch raced "
    "through workgroup memory)", "legalize",
    Workaround(_IREE, "tests/test_lavapipe.py::test_widened_values_read_transposed_twice")))
SORT_RESULTS_KEPT = register(Rewrite(
    "sort-results-kept", sort_results_kept,
    "a sort with an unread result passes all its results through a barrier (GPUs: IREE sorted a read-only copy)",
    "legalize", Workaround(_IREE, "tests/test_gpu.py::test_vulkan_compiles_a_quantile_and_a_nanmedian_in_one_module")))
REDUCE_WINDOW_INITS_APART = register(Rewrite(
    "reduce-window-inits-apart", reduce_window_inits_apart,
    "each of two or more reduce_windows reads an init value of its own (CUDA: a shared fill failed to bufferize)",
    "legalize", Workaround(_IREE, "tests/test_gpu.py::test_two_poolings_compile_for_cuda")))
CLZ64_IN_HALVES = register(Rewrite(
    "clz64-in-halves", clz64_in_halves,
    "64-bit count_leading_zeros counted on 32-bit halves (SPIR-V: no 64-bit math.ctlz on NVIDIA's target)",
    "legalize", Workaround(_IREE, "tests/test_gpu.py::test_vulkan_counts_leading_zeros_of_64_bit_integers")))
POPCNT64_IN_HALVES = register(Rewrite(
    "popcnt64-in-halves", popcnt64_in_halves,
    "64-bit popcnt as the sum of its 32-bit halves' counts (SPIR-V: the portable target's i64 count did not compile)",
    "legalize", Workaround(_IREE, "tests/test_lavapipe.py::test_population_counts_of_64_bit_integers")))
COMPLEX_REDUCTIONS_IN_PARTS = register(Rewrite(
    "complex-reductions-in-parts", complex_reductions_in_parts,
    "a reduction of several operands reduces the real and imaginary parts of complex ones (CUDA: iree-compile "
    "segfaulted)", "legalize", Workaround(_IREE, "tests/test_gpu.py::test_argmax_of_complex_values_compiles_for_cuda")))
COMPLEX_REDUCTION_INPUTS_APART = register(Rewrite(
    "complex-reduction-inputs-apart", complex_reduction_inputs_apart,
    "a reduction's real operand computed from complex values comes through a barrier (CUDA: iree-compile segfaulted)",
    "legalize", Workaround(_IREE, "tests/test_gpu.py::test_reductions_of_values_of_complex_ones_compile_for_cuda")))
COMPLEX_OF_REDUCTIONS_APART = register(Rewrite(
    "complex-of-reductions-apart", complex_of_reductions_apart,
    "a complex op's operand computed by a reduction comes through a barrier (CUDA: iree-compile segfaulted)",
    "legalize", Workaround(_IREE, "tests/test_gpu.py::test_complex_of_reductions_compiles_for_cuda")))
COMPLEX_CONSTANTS_APART = register(Rewrite(
    "complex-constants-apart", complex_constants_apart,
    "complex constants of more than one element read through a barrier (SPIR-V has no complex constants)",
    "legalize", Workaround(_IREE, "tests/test_gpu.py::test_vulkan_complex_constants_compile_and_run")))
COMPLEX_PADS_IN_PARTS = register(Rewrite(
    "complex-pads-in-parts", complex_pads_in_parts,
    "a complex pad, or update of a constant, as two real ones (iree-compile crashed on the pad, failed on the update)",
    "legalize", Workaround(_IREE, "tests/test_numpy_shapes.py::test_complex_pad_and_full_convolutions_compile")))
COMPLEX128_CONSTANTS_IN_PARTS = register(Rewrite(
    "complex128-constants-in-parts", complex128_constants_in_parts,
    "complex128 constants of more than one value built from their float64 parts (iree-compile crashed packing "
    "one of more than 16)", "legalize",
    Workaround(_IREE, "tests/test_complex128.py::test_closed_over_complex128_arrays_compile")))
UINT8_DIVISION_IN_INT32 = register(Rewrite(
    "u8-division-in-i32", uint8_division_in_int32,
    "uint8 divide and remainder computed in int32 (SPIR-V: no unsigned 8-bit division)",
    "legalize", Workaround(_IREE, "tests/test_gpu.py::test_vulkan_divides_uint8")))
SIGNED_REMAINDERS_OF_MIN = register(Rewrite(
    "signed-remainders-of-min", signed_remainders_of_min,
    "a signed integer remainder negated where the dividend is its type's minimum (SPIR-V: rem(MIN, y) was positive)",
    "legalize", Workaround(_IREE, "tests/test_lavapipe.py::test_signed_remainders_of_the_minimum")))
SIGNED_ZEROS_OF_MAX_MIN = register(Rewrite(
    "signed-zeros-of-max-min", signed_zeros_of_max_min,
    "float maximum and minimum of two zeros as a sum (SPIR-V's FMax/FMin: max(+0, -0) was -0 on lavapipe)",
    "legalize", Workaround(_IREE, "tests/test_lavapipe.py::test_max_and_min_of_signed_zeros")))
COMPLEX_DIVISION_CONSTANTS_APART = register(Rewrite(
    "complex-division-constants-apart", complex_division_constants_apart,
    "a complex division's constant operand read through a barrier (lavapipe folded 0 * inf to 0 in the dispatch: "
    "1 / (inf + 0j) was NaN)", "legalize",
    Workaround(_IREE, "tests/test_lavapipe.py::test_complex_reciprocals_of_infinities")))
NAN_GUARDS = register(Rewrite(
    "nan-guards", nan_guards, "exp, log, tanh, sin, ... pass a NaN input through by a select (NVIDIA's Vulkan)",
    "legalize", Workaround(_IREE, "tests/test_gpu.py::test_gpu_rewrites_keep_the_signature_and_guard_nan_on_vulkan")))
F32_DOTS_BF16_3X = register(Rewrite(
    "f32-dots-bf16x3", f32_dots_bf16_3x,
    "float32 matmuls below Precision.HIGHEST as three bf16 tensor-core products (CUDA: no TF32)", "legalize",
    Workaround(_IREE, "tests/test_precision.py::"
                      "test_cuda_float32_products_below_highest_are_bf16_3x_and_keep_near_float32_accuracy")))
BF16_FROM_INTEGERS_ROUNDED = register(Rewrite(
    "bf16-from-integers-rounded", bf16_from_integers_rounded,
    "a bfloat16 iota, or a convert to bfloat16 from integers (or an iota's float32), converts a float32 value rounded "
    "by integer ops (SPIR-V: IREE folded it into an integer-to-bfloat16 conversion that did not compile)", "legalize",
    Workaround(_IREE, "tests/test_gpu.py::test_vulkan_compiles_bfloat16_from_integers")))
REDUCTIONS_IN_ONE_DIMENSION = register(Rewrite(
    "reductions-in-one-dimension", reductions_in_one_dimension,
    "a reduction over several dimensions reduces them merged into one (NVIDIA's Vulkan target: IREE's subgroup "
    "reduction of several dimensions did not compile)", "legalize",
    Workaround(_IREE, "tests/test_gpu.py::test_vulkan_compiles_reductions_over_several_dimensions")))
NEGATED_SUMS_AS_SIGN_FLIPS = register(Rewrite(
    "negated-sums-as-sign-flips", negated_sums_as_sign_flips,
    "a float negate a sum reads flips the sign bit by integer ops (bfloat16: through a barrier) (NVIDIA's Vulkan target: "
    "IREE folded acc + -x into a subtraction its subgroup reduction has no identity for)", "legalize",
    Workaround(_IREE, "tests/test_gpu.py::test_vulkan_compiles_sums_of_negated_values")))
COMPLEX_PRODUCTS_APART = register(Rewrite(
    "complex-products-apart", complex_products_apart,
    "a complex op whose parts are computed from products reads them through a barrier (NVIDIA's Vulkan target: the "
    "product's dispatch writing complex values did not compile)", "legalize",
    Workaround(_IREE, "tests/test_gpu.py::test_vulkan_compiles_complex_values_of_products")))
BLAS_DOTS = register(Rewrite(
    "blas-dots", lambda m: blas_dots(m, BLAS_MIN_MACS, BLAS_MIN_VECTOR_MACS),
    f"float32/float64 matrix-vector products of at least {BLAS_MIN_VECTOR_MACS} multiply-adds call NumPy's BLAS "
    f"({BLAS_MODULE})",
    "offload"))
HOST_SORTS = register(Rewrite(
    "host-sorts", lambda m: host_sorts(m, SORT_MIN_LENGTH),
    f"sorts of rows of at least {SORT_MIN_LENGTH} values call NumPy's stable sort ({SORT_MODULE})", "offload"))
