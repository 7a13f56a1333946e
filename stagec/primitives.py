"""The primitive set and each one's shape rule. Emission rules for StableHLO are in `lowering`.

Primitives are strict, as in `jax.lax`: elementwise operands have equal shapes and dtypes;
broadcasting and type promotion happen above, in `stagec.numpy`.
"""
from __future__ import annotations

import numpy as np

from . import dtypes as _dt
from .core import Primitive, ShapedArray

_FLOAT = "f"
_FLOAT_OR_COMPLEX = "fc"
_INT_OR_BOOL = "iub"
_NUMBER = "iufc"
_ANY = "biufc"


def _check_kind(name: str, aval: ShapedArray, kinds: str) -> None:
    if _dt.kind(aval.dtype) not in kinds:
        names = {"b": "boolean", "i": "signed integer", "u": "unsigned integer", "f": "floating", "c": "complex"}
        want = " or ".join(names[k] for k in kinds)
        raise TypeError(f"{name} does not accept dtype {aval.dtype} (it needs a {want} dtype)")


def _unary(name: str, kinds: str = _NUMBER, out_dtype=None) -> Primitive:
    def rule(x: ShapedArray) -> ShapedArray:
        _check_kind(name, x, kinds)
        if out_dtype is not None:
            return ShapedArray(x.shape, out_dtype)
        if name == "abs" and _dt.kind(x.dtype) == "c":
            return ShapedArray(x.shape, np.finfo(x.dtype).dtype, x.weak_type)
        return x
    return Primitive(name, rule)


def _same_shapes(name: str, *avals: ShapedArray) -> None:
    shapes = [a.shape for a in avals]
    if any(s != shapes[0] for s in shapes[1:]):
        raise TypeError(f"{name} got incompatible shapes: {', '.join(map(str, shapes))} (primitives need equal "
                        f"shapes; stagec.numpy broadcasts before calling them)")
    dts = [a.dtype for a in avals]
    if any(d != dts[0] for d in dts[1:]):
        raise TypeError(f"{name} got different dtypes: {', '.join(map(str, dts))}")


def _binary(name: str, kinds: str = _NUMBER, out_dtype=None) -> Primitive:
    def rule(x: ShapedArray, y: ShapedArray) -> ShapedArray:
        _same_shapes(name, x, y)
        _check_kind(name, x, kinds)
        return ShapedArray(x.shape, out_dtype or x.dtype, x.weak_type and y.weak_type and out_dtype is None)
    return Primitive(name, rule)


UNARY = {n: _unary(n, k) for n, k in [
    ("neg", _NUMBER), ("sign", _NUMBER), ("abs", _NUMBER), ("floor", _FLOAT), ("ceil", _FLOAT),
    ("round", _FLOAT), ("exp", _FLOAT_OR_COMPLEX), ("expm1", _FLOAT_OR_COMPLEX), ("log", _FLOAT_OR_COMPLEX),
    ("log1p", _FLOAT_OR_COMPLEX), ("tanh", _FLOAT_OR_COMPLEX), ("logistic", _FLOAT_OR_COMPLEX),
    ("sin", _FLOAT_OR_COMPLEX), ("cos", _FLOAT_OR_COMPLEX), ("tan", _FLOAT_OR_COMPLEX),
    ("sqrt", _FLOAT_OR_COMPLEX), ("rsqrt", _FLOAT_OR_COMPLEX), ("cbrt", _FLOAT), ("not", _INT_OR_BOOL),
]}
UNARY["is_finite"] = _unary("is_finite", _FLOAT, out_dtype=np.dtype(bool))

BINARY = {n: _binary(n, k) for n, k in [
    ("add", _NUMBER), ("sub", _NUMBER), ("mul", _NUMBER), ("div", _NUMBER), ("rem", _NUMBER),
    ("pow", _FLOAT_OR_COMPLEX), ("max", _ANY), ("min", _ANY), ("and", _INT_OR_BOOL), ("or", _INT_OR_BOOL),
    ("xor", _INT_OR_BOOL), ("atan2", _FLOAT), ("shift_left", "iu"), ("shift_right_arithmetic", "iu"),
    ("shift_right_logical", "iu"),
]}
BINARY["add"] = _binary("add", _ANY)  # boolean add is logical or, as in XLA
BINARY["mul"] = _binary("mul", _ANY)

COMPARE = {n: _binary(n, _ANY, out_dtype=np.dtype(bool)) for n in ("eq", "ne", "lt", "le", "gt", "ge")}


def _select_rule(pred: ShapedArray, on_true: ShapedArray, on_false: ShapedArray) -> ShapedArray:
    if pred.dtype != np.bool_:
        raise TypeError(f"select needs a boolean predicate, got {pred.dtype}")
    _same_shapes("select", on_true, on_false)
    if pred.shape not in ((), on_true.shape):
        raise TypeError(f"select got predicate shape {pred.shape} for operands of shape {on_true.shape}")
    return ShapedArray(on_true.shape, on_true.dtype, on_true.weak_type and on_false.weak_type)


select = Primitive("select", _select_rule)


def _convert_rule(x: ShapedArray, *, new_dtype, weak_type: bool) -> ShapedArray:
    return ShapedArray(x.shape, new_dtype, weak_type)


convert_element_type = Primitive("convert_element_type", _convert_rule)


def _broadcast_rule(x: ShapedArray, *, shape: tuple, broadcast_dimensions: tuple) -> ShapedArray:
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(f"broadcast_in_dim: operand of rank {x.ndim} needs {x.ndim} broadcast_dimensions, "
                        f"got {broadcast_dimensions}")
    for i, d in enumerate(broadcast_dimensions):
        if not (0 <= d < len(shape)) or x.shape[i] not in (1, shape[d]):
            raise TypeError(f"broadcast_in_dim: cannot broadcast shape {x.shape} to {shape} with "
                            f"broadcast_dimensions={broadcast_dimensions}")
    return x.update(shape=shape)


broadcast_in_dim = Primitive("broadcast_in_dim", _broadcast_rule)


def _reshape_rule(x: ShapedArray, *, new_sizes: tuple) -> ShapedArray:
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise TypeError(f"cannot reshape array of shape {x.shape} (size {x.size}) into shape {new_sizes}")
    return x.update(shape=new_sizes)


reshape = Primitive("reshape", _reshape_rule)


def _transpose_rule(x: ShapedArray, *, permutation: tuple) -> ShapedArray:
    if sorted(permutation) != list(range(x.ndim)):
        raise ValueError(f"transpose permutation {permutation} is not a permutation of the axes of shape {x.shape}")
    return x.update(shape=tuple(x.shape[p] for p in permutation))


transpose = Primitive("transpose", _transpose_rule)


def _reduce(name: str, kinds: str) -> Primitive:
    def rule(x: ShapedArray, *, axes: tuple) -> ShapedArray:
        _check_kind(name, x, kinds)
        if any(not (0 <= a < x.ndim) for a in axes) or len(set(axes)) != len(axes):
            raise ValueError(f"{name}: invalid axes {axes} for shape {x.shape}")
        return x.update(shape=tuple(d for i, d in enumerate(x.shape) if i not in axes))
    return Primitive(name, rule)


REDUCE = {"reduce_sum": _reduce("reduce_sum", _ANY), "reduce_prod": _reduce("reduce_prod", _ANY),
          "reduce_max": _reduce("reduce_max", _ANY), "reduce_min": _reduce("reduce_min", _ANY),
          "reduce_and": _reduce("reduce_and", "b"), "reduce_or": _reduce("reduce_or", "b")}


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


dot_general = Primitive("dot_general", _dot_general_rule)


def _slice_rule(x: ShapedArray, *, start_indices, limit_indices, strides):
    if not (len(start_indices) == len(limit_indices) == len(strides) == x.ndim):
        raise TypeError(f"slice: indices must have one entry per dimension of shape {x.shape}")
    for s, l, st, d in zip(start_indices, limit_indices, strides, x.shape):
        if not (0 <= s <= l <= d) or st < 1:
            raise IndexError(f"slice [{s}:{l}:{st}] is out of bounds for shape {x.shape}")
    return x.update(shape=tuple(max(0, -(-(l - s) // st)) for s, l, st in zip(start_indices, limit_indices, strides)))


slice_p = Primitive("slice", _slice_rule)


def _dynamic_slice_rule(x: ShapedArray, *starts: ShapedArray, slice_sizes: tuple):
    if len(starts) != x.ndim or len(slice_sizes) != x.ndim:
        raise TypeError(f"dynamic_slice needs {x.ndim} start indices for shape {x.shape}")
    if any(s.shape != () or _dt.kind(s.dtype) not in "iu" for s in starts):
        raise TypeError("dynamic_slice start indices must be integer scalars")
    if any(not (0 <= s <= d) for s, d in zip(slice_sizes, x.shape)):
        raise IndexError(f"dynamic_slice sizes {slice_sizes} exceed shape {x.shape}")
    return x.update(shape=slice_sizes)


dynamic_slice = Primitive("dynamic_slice", _dynamic_slice_rule)


def _rev_rule(x: ShapedArray, *, dimensions: tuple):
    return x


rev = Primitive("rev", _rev_rule)


def _iota_rule(*, dtype, shape: tuple, dimension: int):
    return ShapedArray(shape, dtype)


iota = Primitive("iota", _iota_rule)


def _concatenate_rule(*xs: ShapedArray, dimension: int):
    base = xs[0]
    for x in xs[1:]:
        if x.ndim != base.ndim or x.dtype != base.dtype or any(
                a != b for i, (a, b) in enumerate(zip(x.shape, base.shape)) if i != dimension):
            raise TypeError(f"concatenate: cannot join shapes {[x.shape for x in xs]} along axis {dimension}")
    shape = list(base.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, base.dtype, all(x.weak_type for x in xs))


concatenate = Primitive("concatenate", _concatenate_rule)


def _dynamic_update_slice_rule(x: ShapedArray, update: ShapedArray, *starts: ShapedArray):
    if update.ndim != x.ndim or len(starts) != x.ndim or update.dtype != x.dtype:
        raise TypeError(f"dynamic_update_slice: update {update.str_short()} does not fit operand {x.str_short()} "
                        f"with {len(starts)} start indices")
    if any(u > d for u, d in zip(update.shape, x.shape)):
        raise TypeError(f"dynamic_update_slice: update shape {update.shape} exceeds operand shape {x.shape}")
    return x


dynamic_update_slice = Primitive("dynamic_update_slice", _dynamic_update_slice_rule)


# ---------------------------------------------------------------- stagec.numpy additions (issue #5)

# Elementwise functions StableHLO leaves to its CHLO companion dialect (IREE legalizes them).
for _n in ("asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf"):
    UNARY[_n] = _unary(_n, _FLOAT if _n == "erf" else _FLOAT_OR_COMPLEX)
UNARY["round_afz"] = _unary("round_afz", _FLOAT)


def _clamp_rule(lo: ShapedArray, x: ShapedArray, hi: ShapedArray) -> ShapedArray:
    _same_shapes("clamp", lo, x, hi)
    _check_kind("clamp", x, _ANY)
    return x.update(weak_type=x.weak_type and lo.weak_type and hi.weak_type)


clamp = Primitive("clamp", _clamp_rule)


def _check_axis(name: str, x: ShapedArray, axis: int) -> None:
    if not 0 <= axis < x.ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for shape {x.shape}")


def _argminmax_rule(x: ShapedArray, *, axis: int, index_dtype, is_max: bool) -> ShapedArray:
    _check_axis("argmax" if is_max else "argmin", x, axis)
    _check_kind("argmax" if is_max else "argmin", x, "iufc")
    if x.shape[axis] == 0:
        raise ValueError(f"attempt to get {'argmax' if is_max else 'argmin'} of an empty sequence")
    return ShapedArray(tuple(d for i, d in enumerate(x.shape) if i != axis), index_dtype)


argminmax = Primitive("argminmax", _argminmax_rule)


def _cumulative_rule(x: ShapedArray, *, axis: int, op: str, reverse: bool) -> ShapedArray:
    _check_axis("cum" + op, x, axis)
    if op not in ("sum", "prod", "max", "min"):
        raise ValueError(f"cumulative: unknown op {op!r}")
    _check_kind("cum" + op, x, _ANY if op in ("max", "min") else _NUMBER)
    return x.strip_weak()


cumulative = Primitive("cumulative", _cumulative_rule)


def _sort_rule(*xs: ShapedArray, dimension: int, num_keys: int, is_stable: bool):
    _same_shapes_only("sort", *xs)
    _check_axis("sort", xs[0], dimension)
    if not 1 <= num_keys <= len(xs):
        raise ValueError(f"sort: num_keys={num_keys} for {len(xs)} operands")
    for x in xs[:num_keys]:
        _check_kind("sort", x, "biuf")
    return list(xs)


def _same_shapes_only(name: str, *avals: ShapedArray) -> None:
    if any(a.shape != avals[0].shape for a in avals[1:]):
        raise TypeError(f"{name} got incompatible shapes: {', '.join(str(a.shape) for a in avals)}")


sort = Primitive("sort", _sort_rule, multiple_results=True)


def _pad_rule(x: ShapedArray, value: ShapedArray, *, low: tuple, high: tuple, interior: tuple) -> ShapedArray:
    if value.shape != () or value.dtype != x.dtype:
        raise TypeError(f"pad: padding value must be a scalar of dtype {x.dtype}, got {value.str_short()}")
    if not (len(low) == len(high) == len(interior) == x.ndim) or any(i < 0 for i in interior):
        raise ValueError(f"pad: bad padding config low={low} high={high} interior={interior} for shape {x.shape}")
    shape = tuple(lo + hi + d + max(d - 1, 0) * it for d, lo, hi, it in zip(x.shape, low, high, interior))
    if any(d < 0 for d in shape):
        raise ValueError(f"pad: negative padding removes more than shape {x.shape} holds")
    return x.update(shape=shape, weak_type=x.weak_type and value.weak_type)


pad = Primitive("pad", _pad_rule)


def _gather_rule(x: ShapedArray, idx: ShapedArray, *, offset_dims: tuple, collapsed_slice_dims: tuple,
                 start_index_map: tuple, slice_sizes: tuple) -> ShapedArray:
    """XLA gather with `index_vector_dim` = the last dimension of `idx`."""
    if _dt.kind(idx.dtype) not in "iu" or idx.ndim < 1 or idx.shape[-1] != len(start_index_map):
        raise TypeError(f"gather: indices {idx.str_short()} need an integer last dimension of size "
                        f"{len(start_index_map)}")
    if len(slice_sizes) != x.ndim or any(not 0 <= s <= d for s, d in zip(slice_sizes, x.shape)):
        raise TypeError(f"gather: slice_sizes {slice_sizes} do not fit shape {x.shape}")
    if any(slice_sizes[d] > 1 for d in collapsed_slice_dims):
        raise TypeError(f"gather: collapsed dimensions {collapsed_slice_dims} must have slice size <= 1")
    batch = list(idx.shape[:-1])
    offsets = [s for i, s in enumerate(slice_sizes) if i not in collapsed_slice_dims]
    if len(offset_dims) != len(offsets):
        raise TypeError(f"gather: offset_dims {offset_dims} must name {len(offsets)} output dimensions")
    out, it_b, it_o = [], iter(batch), iter(offsets)
    for i in range(len(batch) + len(offsets)):
        out.append(next(it_o) if i in offset_dims else next(it_b))
    return x.update(shape=out)


gather = Primitive("gather", _gather_rule)


def _scatter_rule(x: ShapedArray, idx: ShapedArray, upd: ShapedArray, *, update_window_dims: tuple,
                  inserted_window_dims: tuple, scatter_dims_to_operand_dims: tuple, mode: str) -> ShapedArray:
    """XLA scatter with `index_vector_dim` = the last dimension of `idx`; `mode` combines old and new values."""
    if mode not in ("set", "add", "mul", "min", "max"):
        raise ValueError(f"scatter: unknown mode {mode!r}")
    if upd.dtype != x.dtype:
        raise TypeError(f"scatter: updates dtype {upd.dtype} differs from operand dtype {x.dtype}")
    if _dt.kind(idx.dtype) not in "iu" or idx.ndim < 1 or idx.shape[-1] != len(scatter_dims_to_operand_dims):
        raise TypeError(f"scatter: indices {idx.str_short()} need an integer last dimension of size "
                        f"{len(scatter_dims_to_operand_dims)}")
    if upd.ndim != idx.ndim - 1 + len(update_window_dims):
        raise TypeError(f"scatter: updates of shape {upd.shape} do not match indices {idx.shape} and "
                        f"update_window_dims {update_window_dims}")
    return x.strip_weak() if not (x.weak_type and upd.weak_type) else x


scatter = Primitive("scatter", _scatter_rule)


def _real_imag_rule(name: str):
    def rule(x: ShapedArray) -> ShapedArray:
        _check_kind(name, x, "c")
        return ShapedArray(x.shape, np.finfo(x.dtype).dtype, x.weak_type)
    return rule


real_p = Primitive("real", _real_imag_rule("real"))
imag_p = Primitive("imag", _real_imag_rule("imag"))


def _complex_rule(re: ShapedArray, im: ShapedArray) -> ShapedArray:
    _same_shapes("complex", re, im)
    _check_kind("complex", re, _FLOAT)
    if re.dtype.itemsize not in (4, 8):
        raise TypeError(f"complex: parts must be float32 or float64, got {re.dtype}")
    return ShapedArray(re.shape, np.dtype(np.complex64 if re.dtype.itemsize == 4 else np.complex128),
                       re.weak_type and im.weak_type)


complex_p = Primitive("complex", _complex_rule)
