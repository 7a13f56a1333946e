"""Indexing: basic (ints, slices, None, ...), integer-array indexing (gather), `x.at[idx]` updates
(scatter), boolean masks with a static result shape, `take`, `take_along_axis` (`nonzero` is in `_nonzero`).

Out-of-bounds traced indices follow JAX: reads clamp (`x.at[i].get(mode='fill')` reads a fill value instead),
updates are dropped (`mode='clip'` clamps them). Concrete ones raise NumPy's IndexError unless a mode is given
(then they behave as traced ones do): the index is known, so it is a bug to report, not a value to clamp or
drop silently. Negative indices in [-n, -1] wrap."""
from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..array import Array
from ..primitives import structural as _structural
from ..core import Const, TracerBase, aval_of
from ._base import _arr, _axis, _composite, _count_nonzero, _is_array, broadcast_shapes, broadcast_to


class NonConcreteBooleanIndexError(IndexError):
    """A boolean mask whose values are unknown while tracing: the result shape would depend on them."""


def _bool_mask_error(mask) -> NonConcreteBooleanIndexError:
    return NonConcreteBooleanIndexError(
        f"Array boolean indices must be concrete; got a traced mask {mask}. The number of True elements decides "
        f"the shape of the result, and stagec compiles for static shapes. Use snp.where(mask, x, fill) to keep the "
        f"shape, x.at[mask].set(value) with a scalar value, or index outside jit.")


def _basic_getitem(x, idx: tuple):
    """Basic indexing on an expanded index: one entry per dim (int, slice, traced int scalar) plus None."""
    av = aval_of(x)
    starts, limits, strides, revs, dyn, out_shape = [], [], [], [], [], []
    dim = 0
    for i in idx:
        if i is None:
            out_shape.append(1)
            continue
        size = av.shape[dim]
        if isinstance(i, slice):
            s, e, st = i.indices(size)
            n = len(range(s, e, st))
            if st < 0:
                revs.append(dim)
                s = size - 1 - s
                st = -st
            starts.append(s)
            limits.append(s + (n - 1) * st + 1 if n else s)
            strides.append(st)
            out_shape.append(n)
        elif _is_array(i):
            dyn.append((dim, i))
            starts.append(0), limits.append(size), strides.append(1)
        else:
            k = operator.index(i)
            if size == 0:
                raise IndexError(f"index {k} is out of bounds for axis {dim} with size 0")
            k = builtins.min(builtins.max(k + size if k < 0 else k, 0), size - 1)  # clamped, as JAX does
            starts.append(k), limits.append(k + 1), strides.append(1)
        dim += 1
    if revs:
        x = lax.rev(x, revs)
    if (starts, limits, strides) != ([0] * av.ndim, list(av.shape), [1] * av.ndim):
        x = lax.slice(x, starts, limits, strides)
    if dyn:
        cur = aval_of(x).shape
        zero = Const(np.array(0, np.int32), aval_of(np.int32(0)))
        st = [zero] * len(cur)
        sizes = list(cur)
        for d, i in dyn:
            i = _as_int32(i, cur[d])
            i = lax.select(lax.lt(i, lax.full_like(i, 0)), lax.add(i, lax.full_like(i, cur[d])), i)
            st[d], sizes[d] = i, 1
        x = _structural.dynamic_slice(x, st, sizes)  # (the primitive's: lax's would count a negative start again)
    return lax.reshape(x, out_shape) if aval_of(x).shape != tuple(out_shape) else x


def _is_int_scalar(i) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _is_bool_scalar(i) -> bool:
    return isinstance(i, (bool, np.bool_)) or (isinstance(i, (np.ndarray, Array)) and i.ndim == 0
                                               and aval_of(i).dtype == np.bool_)


def _bool_scalars(x, idx):
    """NumPy's 0-d boolean index: a new axis of length 1 in its place, indexed by the integer array [0] (True) or
    [] (False), an advanced index as any other (`x[True]` is `x[None]`, `x[False]` its empty slice)."""
    t = idx if isinstance(idx, tuple) else (idx,)
    if not builtins.any(_is_bool_scalar(i) for i in t):
        return x, idx

    def width(i) -> int:  # (the dimensions of the expanded x an entry consumes)
        if i is None:
            return 0
        if isinstance(i, (np.ndarray, Array, list)) and np.asarray(i).dtype == np.bool_:  # (a mask: its rank)
            return builtins.max(np.ndim(i), 1)
        return 1
    k = next((j for j, i in enumerate(t) if i is Ellipsis), len(t))
    nd, axes, pos = np.ndim(x) + builtins.sum(map(_is_bool_scalar, t)), [], 0
    for i in t[:k]:
        axes += [pos] if _is_bool_scalar(i) else []
        pos += width(i)
    pos = nd
    for i in reversed(t[k + 1:]):
        pos -= width(i)
        axes += [pos] if _is_bool_scalar(i) else []
    t = tuple(np.zeros(int(bool(i)), np.int32) if _is_bool_scalar(i) else i for i in t)
    return lax.expand_dims(_arr(x), sorted(axes)), t


def _normalize_index(x, idx) -> tuple[tuple, bool]:
    """Expand `idx` to one entry per dimension of `x` (plus None); booleans become integer arrays.
    Returns (entries, has_advanced)."""
    av = aval_of(x)
    if not isinstance(idx, tuple):
        idx = (idx,)
    entries = []
    for i in idx:
        if isinstance(i, list):
            i = np.asarray(i)
            if i.size == 0:
                i = i.astype(np.int32)
        if isinstance(i, Array):  # a concrete device array: read it back once (bounds checks, gather indices)
            i = np.asarray(i)
        if isinstance(i, np.ndarray) and i.ndim == 0 and _dt.kind(i.dtype) in "iu":
            i = int(i)
        entries.append(i)
    n_ell = builtins.sum(1 for i in entries if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    # Boolean arrays index as many dimensions as they have (after their concrete nonzero()).
    consumed = 0
    for i in entries:
        if i is None or i is Ellipsis:
            continue
        if (isinstance(i, np.ndarray) or _is_array(i)) and aval_of(i).dtype == np.bool_:
            consumed += builtins.max(aval_of(i).ndim, 1)
        else:
            consumed += 1
    if consumed > av.ndim:
        raise IndexError(f"too many indices for array: array is {av.ndim}-dimensional, but {consumed} were indexed")
    if n_ell:
        k = entries.index(Ellipsis)
        entries[k:k + 1] = [slice(None)] * (av.ndim - consumed)
    else:
        entries += [slice(None)] * (av.ndim - consumed)
    out, dim, advanced = [], 0, False
    for i in entries:
        if i is None:
            out.append(None)
            continue
        if isinstance(i, slice):
            out.append(i)
            dim += 1
            continue
        if _is_int_scalar(i):
            out.append(operator.index(i))
            dim += 1
            continue
        if isinstance(i, np.ndarray) or _is_array(i):
            ia = aval_of(i)
            if ia.dtype == np.bool_:
                if isinstance(i, TracerBase):
                    raise _bool_mask_error(i)
                mask = np.asarray(i)
                want = av.shape[dim:dim + mask.ndim]
                if mask.shape != want:
                    raise IndexError(f"boolean index did not match indexed array along dimension {dim}; dimension "
                                     f"is {want} but corresponding boolean dimension is {mask.shape}")
                for nz in np.nonzero(mask):
                    out.append(nz.astype(np.int32))
                dim += mask.ndim
                advanced = True
                continue
            if _dt.kind(ia.dtype) not in "iu":
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            if ia.ndim == 0 and isinstance(i, TracerBase):
                out.append(i)  # a traced scalar: dynamic_slice, unless mixed with arrays
            else:
                out.append(i)
                advanced = advanced or ia.ndim > 0 or not isinstance(i, TracerBase)
            dim += 1
            continue
        raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and integer or boolean arrays are "
                         f"valid indices, got {type(i).__name__}")
    return tuple(out), advanced


_MODES = ("promise_in_bounds", "clip", "drop", "fill")


def _check_mode(fname: str, mode: str | None) -> str | None:
    if mode is not None and mode not in _MODES:
        raise ValueError(f"{fname}: unknown mode {mode!r}; expected one of {', '.join(map(repr, _MODES))} or None")
    return mode


def _default_fill(dtype):
    """JAX's fill for out-of-bounds reads: NaN (inexact), the minimum (signed), the maximum (unsigned), True."""
    k = _dt.kind(dtype)
    if k in "fc":
        return np.nan
    if k in "iu":
        info = np.iinfo(dtype)
        return info.min if k == "i" else info.max
    return True


def _full(value, dtype, shape: tuple):
    """A scalar `value` (concrete or traced) cast to `dtype` (as NumPy casts: 2.7 -> 2) and broadcast to `shape`."""
    if _is_array(value):
        v = lax._convert_element_type(value, dtype) if aval_of(value).dtype != dtype else value
    else:
        v = np.asarray(value).astype(dtype)
    return lax.broadcast_in_dim(v, shape, ())


def _as_int32(i, size: int):
    """A traced integer index as int32 without wrapping: values outside [-size-1, size] (unsigned ones of 2**31
    and more, wide int64 ones) first saturate there, so they stay out of bounds after narrowing."""
    dt = aval_of(i).dtype
    if _dt.kind(dt) == "u" and dt.itemsize >= 4:
        i = lax.min(i, lax.full_like(i, size))
    elif dt.itemsize == 8:
        i = lax.clamp(lax.full_like(i, -size - 1), i, lax.full_like(i, size))
    return lax._convert_element_type(i, np.int32) if dt != np.int32 else i


def _index_array(i, size: int, axis: int, fill: bool):
    """An integer index as int32 for `lax.gather` (negatives wrapped) and, when `fill`, its in-bounds mask (None:
    all are). A traced one is left out of bounds where it is: the gather clamps each start into [0, size - 1]
    (its lowering and its NumPy rule alike; a scatter's indices are a gather's results). A concrete one is
    clipped here, before it is narrowed to int32 (2^33 would wrap)."""
    if isinstance(i, TracerBase):
        i = _as_int32(i, size)
        valid = lax.bitwise_and(lax.ge(i, lax.full_like(i, -size)), lax.lt(i, lax.full_like(i, size))) if fill else None
        return lax.select(lax.lt(i, lax.full_like(i, 0)), lax.add(i, lax.full_like(i, size)), i), valid
    v = np.asarray(i).astype(np.int64)
    if size == 0 and v.size and not fill:
        raise IndexError(f"index {int(v.flat[0])} is out of bounds for axis {axis} with size 0")
    ok = (v >= -size) & (v < size)
    out = np.clip(np.where(v < 0, v + size, v), 0, builtins.max(size - 1, 0)).astype(np.int32)
    return out, (None if not fill or ok.all() else ok)


_bounds: dict = {}  # (integer dtype, size) -> the bounds -size and size, and 0, as 0-d arrays (None: out of its range)


def _check_bounds(fname: str, i, size: int, axis: int, strict: bool = True) -> bool | None:
    """Raise IndexError for a concrete index outside [-size, size) (NumPy's check; not `strict`: None there);
    True where the indices are integers and none is negative (none counts from the end)."""
    if isinstance(i, TracerBase):
        return False
    v = i._value() if type(i) is Array else np.asarray(i)
    if v.dtype.kind not in "iu":
        bad, nonnegative = (v >= size) | (v < -size), False
    else:  # (compared with 0-d arrays of its dtype: ~0.5 us less than with Python ints, on a few indices)
        bounds = _bounds.get((v.dtype, size))
        if bounds is None:
            info = np.iinfo(v.dtype)
            if len(_bounds) >= 256:
                _bounds.clear()
            bounds = _bounds[v.dtype, size] = (np.array(-size, v.dtype) if -size >= info.min else None,
                                               np.array(size, v.dtype) if size <= info.max else None,
                                               np.array(0, v.dtype))
        lo, hi, zero = bounds
        bad = v >= hi if hi is not None else None
        nonnegative = v.dtype.kind == "u" or not _count_nonzero(v < zero)
        if not nonnegative and lo is not None:
            bad = v < lo if bad is None else bad | (v < lo)
    if bad is not None and _count_nonzero(bad):  # (`.any()`: ~1 us more on a few indices)
        if not strict:
            return None
        raise IndexError(f"{fname + ': ' if fname else ''}index {int(v[bad].flat[0])} is out of bounds for axis {axis} "
                         f"with size {size}")
    return nonnegative


def _all_valid(valids, shape: tuple):
    """The AND of the in-bounds masks broadcast to `shape` (NumPy where all are concrete); None: all in bounds."""
    concrete = [np.broadcast_to(v, shape) for v in valids if v is not None and not isinstance(v, TracerBase)]
    out = np.logical_and.reduce(concrete) if concrete else None
    for v in valids:
        if isinstance(v, TracerBase):
            v = broadcast_to(v, shape)
            out = v if out is None else lax.bitwise_and(v, out)
    return out


def _advanced_getitem(x, entries: tuple, fill=None):
    """Integer-array indexing (NumPy's advanced indexing) as one `gather`. With `fill` (a scalar), out-of-bounds
    index entries read it; otherwise they clamp."""
    dim_entries = [e for e in entries if e is not None]
    shape, dtype = aval_of(x).shape, aval_of(x).dtype
    adv = [d for d, e in enumerate(dim_entries) if not isinstance(e, slice)]
    rest = [d for d in range(len(shape)) if d not in adv]
    arrays, valids = zip(*[_index_array(dim_entries[d], shape[d], d, fill is not None) for d in adv])
    shapes = [np.shape(a) if not _is_array(a) else aval_of(a).shape for a in arrays]
    try:
        B = broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together with shapes "
                         f"{' '.join(map(str, shapes))}") from None
    if builtins.all(not _is_array(a) for a in arrays):
        idx = np.stack([np.broadcast_to(a, B) for a in arrays], axis=-1).astype(np.int32)
    else:
        from ._shapes import stack
        idx = stack([broadcast_to(a if _is_array(a) else Const(a, aval_of(a)), B) for a in arrays], axis=-1)
    valid = _all_valid(valids, B)
    k, nb = len(adv), len(B)
    xt = lax.transpose(x, adv + rest)
    gshape = B + tuple(shape[d] for d in rest)
    if aval_of(xt).size == 0 or int(np.prod(B, dtype=np.int64)) == 0:
        g = _full(0 if fill is None else fill, dtype, gshape)  # an indexed axis of size 0: all out of bounds
    else:
        g = lax.gather(xt, idx, offset_dims=tuple(range(nb, nb + len(rest))), collapsed_slice_dims=tuple(range(k)),
                       start_index_map=tuple(range(k)), slice_sizes=(1,) * k + tuple(shape[d] for d in rest))
        if valid is not None:
            mask = lax.broadcast_in_dim(valid, gshape, tuple(range(nb)))
            g = lax.select(mask, g, _full(fill, dtype, gshape))
    # Where the broadcast index dims go: in place of adjacent advanced indices, else first (NumPy's rule).
    positions = [n for n, e in enumerate(entries) if e is not None and not isinstance(e, slice)]
    adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
    layout, r = [], 0  # source axes of g (or None for a new axis), in result order
    if not adjacent:
        layout += list(range(nb))
    for n, e in enumerate(entries):
        if e is None:
            layout.append(None)
        elif isinstance(e, slice):
            layout.append(nb + r)
            r += 1
        elif adjacent and n == positions[0]:
            layout += list(range(nb))
    # The slices apply after the gather (a strided slice feeding a gather miscompiles in IREE 3.13).
    rest_slices = tuple(dim_entries[d] for d in rest)
    if builtins.any(sl != slice(None) for sl in rest_slices):
        g = _basic_getitem(g, (slice(None),) * nb + rest_slices)
    g = lax.transpose(g, [a for a in layout if a is not None])
    gs = aval_of(g).shape
    it = iter(gs)
    final = [1 if a is None else next(it) for a in layout]
    return lax.reshape(g, final) if tuple(final) != gs else g


def _may_be_out_of_bounds(x, entries: tuple) -> bool:
    """Whether a scalar entry (basic indexing) is traced or a concrete int outside [-size, size)."""
    shape, dim = aval_of(x).shape, 0
    for e in entries:
        if e is None:
            continue
        if isinstance(e, TracerBase) or (_is_int_scalar(e) and not -shape[dim] <= e < shape[dim]):
            return True
        dim += 1
    return False


def _check_concrete(x, entries: tuple) -> None:
    """NumPy's IndexError for a concrete index outside [-size, size) (traced ones cannot be checked)."""
    shape, dim = aval_of(x).shape, 0
    for e in entries:
        if e is None:
            continue
        if not isinstance(e, (slice, TracerBase)):
            _check_bounds("", e, shape[dim], dim)
        dim += 1


def _index(x, idx, fill=None, strict: bool = False):
    """`x[idx]` where out-of-bounds entries read `fill` (a scalar) or, when it is None, clamp. `strict`: concrete
    out-of-bounds indices raise IndexError."""
    x, idx = _bool_scalars(x, idx)
    entries, advanced = _normalize_index(x, idx)
    if strict:
        _check_concrete(x, entries)
    if advanced or (fill is not None and _may_be_out_of_bounds(x, entries)):
        return _advanced_getitem(x, entries, fill)
    return _basic_getitem(x, entries)


def _getitem(x, idx, mode: str | None = None, fill_value=None, fname: str = "get"):
    """`x[idx]` with NumPy semantics (basic and advanced indexing; concrete boolean masks). Out of bounds,
    concrete indices raise IndexError (NumPy) and traced ones clamp (JAX), unless a mode says otherwise:
    'clip' clamps, 'fill'/'drop' read `fill_value` (JAX's default: NaN, the dtype's minimum (signed),
    maximum (unsigned) or True)."""
    x = _arr(x)
    fill = None
    if _check_mode(fname, mode) in ("fill", "drop"):
        fill = _default_fill(aval_of(x).dtype) if fill_value is None else fill_value
        if aval_of(_arr(fill)).ndim != 0:
            raise ValueError(f"{fname}: fill_value must be a scalar, got shape {aval_of(_arr(fill)).shape}")
    return _index(x, idx, fill, strict=mode is None)


# ---------------------------------------------------------------- functional updates: x.at[idx]


def _scatter(x, idx, values, op: str, mode: str | None = None):
    """`x` with `values` combined (`op`: set/add/mul/min/max) at `idx`, as one `lax.scatter`. Out of bounds,
    concrete indices raise IndexError by default (NumPy); traced ones, and all with mode 'drop'/'fill', are
    dropped (JAX); 'clip' (and 'promise_in_bounds', whose behaviour there is unspecified) clamps them."""
    x = _arr(x)
    av = aval_of(x)
    dt = av.dtype
    mode = _check_mode(f"at[].{op}", mode)
    if isinstance(idx, TracerBase) and aval_of(idx).dtype == np.bool_:
        return _masked_update(x, idx, values, op)
    values = _arr(values)
    values = lax._convert_element_type(values, dt) if aval_of(values).dtype != dt else values
    n = av.size
    if n == 0:
        return x
    idt = np.int32 if n < 2 ** 31 else np.int64
    lin = lax.reshape(lax.iota(idt, n), av.shape)
    # Dropped updates go to the linear index n, out of bounds: the scatter drops them.
    sel = _index(lin, idx, fill=None if mode in ("clip", "promise_in_bounds") else n, strict=mode is None)
    ss = aval_of(sel).shape
    try:
        values = broadcast_to(values, ss)
    except ValueError:
        raise ValueError(f"shape mismatch: value array of shape {aval_of(values).shape} could not be broadcast to "
                         f"indexing result of shape {ss}") from None
    m = int(np.prod(ss, dtype=np.int64))
    if m == 0:
        return x
    out = lax.scatter(lax.reshape(x, (n,)), lax.reshape(sel, (m, 1)), lax.reshape(values, (m,)),
                      update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), mode=op)
    return lax.reshape(out, av.shape)


def _masked_update(x, mask, values, op: str):
    """`x.at[mask].op(v)` for a traced boolean mask and a scalar value: an elementwise select."""
    av, mv = aval_of(x), aval_of(mask)
    if mv.shape != av.shape[:mv.ndim] or aval_of(_arr(values)).size != 1:
        raise _bool_mask_error(mask)
    v = lax.reshape(_arr(values), ())
    v = lax._convert_element_type(v, av.dtype) if aval_of(v).dtype != av.dtype else v
    v = broadcast_to(v, av.shape)
    new = {"set": lambda: v, "add": lambda: lax.add(x, v), "mul": lambda: lax.mul(x, v),
           "min": lambda: lax.min(x, v), "max": lambda: lax.max(x, v)}[op]()
    m = lax.broadcast_in_dim(mask, av.shape, tuple(range(mv.ndim)))
    return lax.select(m, new, x)


class _IndexUpdateRef:
    """`x.at[idx]`: functional updates returning a new array (`set`, `add`, `subtract`, `multiply`, `divide`,
    `power`, `min`, `max`, `apply`) and `get`.

    Duplicate indices accumulate for `add`/`multiply`/`divide`/`power`/`min`/`max`/`apply`; for `set` which
    one wins is unspecified.
    As in JAX, out-of-bounds updates are dropped unless `mode='clip'` (traced or concrete indices alike);
    `get` clamps unless `mode='fill'`. `indices_are_sorted` and `unique_indices` are accepted and ignored."""

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: str | None = None,
            fill_value=None):
        return _getitem(self.array, self.index, mode, fill_value)

    def set(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: str | None = None):
        return _scatter(self.array, self.index, values, "set", mode)

    def add(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: str | None = None):
        return _scatter(self.array, self.index, values, "add", mode)

    def subtract(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False,
                 mode: str | None = None):
        from ._ufuncs import negative
        return _scatter(self.array, self.index, negative(values), "add", mode)

    def multiply(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False,
                 mode: str | None = None):
        return _scatter(self.array, self.index, values, "mul", mode)

    mul = multiply

    def divide(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False,
               mode: str | None = None):
        """`x / d` where `d` is the product of the values at each index (1 elsewhere); integers give floats."""
        from ._ufuncs import true_divide
        return true_divide(self.array, self._product(values, mode))

    def power(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False,
              mode: str | None = None):
        """`x ** e` where `e` is the product of the exponents at each index (a repeated index applies each)."""
        from ._ufuncs import power
        return power(self.array, self._product(values, mode))

    def _product(self, values, mode):
        return _scatter(lax.full_like(_arr(self.array), 1), self.index, values, "mul", mode)

    def apply(self, func, *, indices_are_sorted: bool = False, unique_indices: bool = False,
              mode: str | None = None):
        """`func` (elementwise, unary) applied at the indices, once per occurrence of each index."""
        x = _arr(self.array)
        xv = aval_of(x)
        zeros = lax._convert_element_type(lax.full_like(x, 0), np.int32, weak_type=False)
        counts = _scatter(zeros, self.index, np.int32(1), "add", mode)
        rounds = lax.reduce_max(counts, tuple(range(xv.ndim)))

        def body(carry):
            i, v = carry
            fv = func(v)
            fv = lax._convert_element_type(fv, xv.dtype, xv.weak_type) if aval_of(fv).dtype != xv.dtype else fv
            hit = lax.gt(counts, lax.broadcast_in_dim(i, xv.shape, ()))
            return lax.add(i, np.int32(1)), lax.select(hit, fv, v)
        return lax.while_loop(lambda c: lax.lt(c[0], rounds), body, (np.int32(0), x))[1]

    def min(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: str | None = None):
        return _scatter(self.array, self.index, values, "min", mode)

    def max(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: str | None = None):
        return _scatter(self.array, self.index, values, "max", mode)

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"


class _IndexUpdateHelper:
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)


# ---------------------------------------------------------------- take, take_along_axis


@_composite
def _take_in_bounds(a, indices, axis: int | None):
    """`take` of integer indices checked to be in bounds along `axis` (NumPy's negative ones included; None: `a`
    flattened, in the composite)."""
    if axis is None:
        a, axis = lax.reshape(a, (aval_of(a).size,)), 0
    return _getitem(a, (slice(None),) * axis + (indices,), "clip", None, "take")


@_composite
def _take_nonnegative(a, indices, axis: int | None):
    """`take` of integer indices checked to be in [0, size) along `axis` (None: `a` flattened): one gather,
    the indices as they are (no negative one to count from the end, none to clamp)."""
    if axis is None:
        a, axis = lax.reshape(a, (aval_of(a).size,)), 0
    shape, ishape = aval_of(a).shape, aval_of(indices).shape
    nb = len(ishape)
    return lax.gather(a, lax.reshape(indices, (*ishape, 1)), collapsed_slice_dims=(axis,), start_index_map=(axis,),
                      offset_dims=(*range(axis), *range(axis + nb, len(shape) - 1 + nb)),
                      slice_sizes=tuple(1 if d == axis else n for d, n in enumerate(shape)))


@_composite
def _take_filled(a, indices, axis: int | None, fill_value):
    """`take` of integer indices, some outside [-n, n) along `axis` (None: `a` flattened): they read `fill_value`
    (None: NaN for floats, ...: `_default_fill`), as traced ones do."""
    if axis is None:
        a, axis = lax.reshape(a, (aval_of(a).size,)), 0
    return _getitem(a, (slice(None),) * axis + (indices,), "fill", fill_value, "take")


def _take_checked(a, indices: Array, n: int, axis: int, flat: bool, fill_value=None, strict: bool = False):
    """`take` of an Array of integer indices, concrete: one eager composite (one gather of the indices as they are
    where none is negative). Out of [-n, n) they read the fill value, as traced ones do (JAX's default; `strict`,
    mode 'raise': IndexError)."""
    ok = _check_bounds("take", indices, n, axis, strict)
    if ok is None:
        return _take_filled(a, indices, None if flat else axis, fill_value)
    if ok and n:
        return _take_nonnegative(a, indices, None if flat else axis)
    return _take_in_bounds(a, indices, None if flat else axis)


def take(a: Any, indices: Any, axis: int | None = None, out=None, mode: str | None = None, fill_value=None):
    """Elements of `a` at `indices` along `axis` (flattened when None). mode: None or 'fill' (JAX's default:
    out-of-bounds indices, concrete or traced, read `fill_value`, by default as for `x.at[i].get(mode='fill')`:
    NaN for floats), 'raise' (NumPy's IndexError; concrete indices only), 'clip' or 'wrap'."""
    if type(a) is Array and type(indices) is Array and mode is None and _dt.kind(indices.aval.dtype) in "iu":
        # (the usual eager call, the argument checks below in short)
        av = a.aval
        ax = 0 if axis is None else _axis(axis, av.ndim, "take")
        return _take_checked(a, indices, av.size if axis is None else av.shape[ax], ax, axis is None, fill_value)
    a = _arr(a)
    flat = axis is None  # (flattened by `_take_in_bounds` itself where it runs, else below)
    av = aval_of(a)
    axis = 0 if flat else _axis(axis, av.ndim, "take")
    n = av.size if flat else av.shape[axis]
    indices = _arr(indices) if isinstance(indices, (list, tuple)) else indices
    if not (_is_array(indices) or isinstance(indices, np.ndarray)):
        indices = np.asarray(indices)
    if _dt.kind(aval_of(indices).dtype) not in "iu":
        raise IndexError("take: indices must be integers")
    if mode not in (None, "raise", "clip", "wrap", "fill"):
        raise ValueError(f"take: clipmode not understood: {mode!r}")
    if isinstance(indices, TracerBase) and mode == "raise":
        raise NotImplementedError("take: mode='raise' needs concrete indices; traced ones cannot be checked "
                                  "(use mode='fill', the default, or 'clip')")
    mode = mode or "fill"
    if mode == "raise" or (mode == "fill" and type(indices) is Array):
        if type(indices) is Array:
            return _take_checked(a, indices, n, axis, flat, fill_value, strict=mode == "raise")
        _check_bounds("take", indices, n, axis)
    if flat:
        a = lax.reshape(a, (n,))
    if mode != "raise" and mode != "fill":
        if isinstance(indices, TracerBase) or isinstance(indices, Array):
            i = lax._convert_element_type(indices, np.int32)
            if mode == "clip":
                i = lax.clamp(lax.full_like(i, 0), i, lax.full_like(i, builtins.max(n - 1, 0)))
            else:
                from ._ufuncs import remainder
                i = remainder(i, n)
            indices = i
        else:
            v = np.asarray(indices)
            indices = (np.clip(v, 0, builtins.max(n - 1, 0)) if mode == "clip" else v % builtins.max(n, 1)).astype(np.int32)
    if isinstance(indices, np.ndarray) and indices.ndim == 0:
        indices = int(indices)
    # Indices are checked ('raise') or brought into range ('clip', 'wrap') above: 'clip' reads them as they are.
    return _getitem(a, (slice(None),) * axis + (indices,), "fill" if mode == "fill" else "clip", fill_value, "take")


def take_along_axis(arr: Any, indices: Any, axis: int | None = -1, mode: str | None = None, fill_value=None):
    """`arr` picked at `indices` along `axis`, the other axes matched (broadcasting) with `indices`' axes.
    Out of bounds, indices read `fill_value` (mode None or 'fill', JAX's default; NaN for floats), concrete or
    traced alike; mode 'clip' clamps."""
    a = _arr(arr)
    indices = _arr(indices) if isinstance(indices, (list, tuple)) else indices
    if axis is None:
        if aval_of(indices).ndim != 1:
            raise ValueError("take_along_axis: when axis=None, `indices` must have a single dimension.")
        return take(a, indices, mode=mode, fill_value=fill_value)
    av, iv = aval_of(a), aval_of(indices)
    if iv.ndim != av.ndim:
        raise ValueError(f"take_along_axis: `indices` and `arr` must have the same number of dimensions "
                         f"({iv.ndim} != {av.ndim})")
    if _dt.kind(iv.dtype) not in "iu":
        raise IndexError("take_along_axis: indices must be integers")
    axis = _axis(axis, av.ndim, "take_along_axis")
    if mode not in (None, "clip", "fill", "promise_in_bounds"):  # (the last clamps, as in `take`)
        raise ValueError(f"take_along_axis: mode must be None, 'clip', 'fill' or 'promise_in_bounds', got {mode!r}")
    fill = None
    if mode is None or mode == "fill":
        fill = _default_fill(av.dtype) if fill_value is None else fill_value
    shape = broadcast_shapes(*[tuple(d for i, d in enumerate(s) if i != axis) for s in (av.shape, iv.shape)],
                             fname="take_along_axis")
    idx = []
    for d in range(av.ndim):
        if d == axis:
            idx.append(indices)
        else:
            s = [1] * av.ndim
            s[d] = av.shape[d]
            idx.append(np.arange(av.shape[d], dtype=np.int32).reshape(s))
    del shape
    return _advanced_getitem(a, tuple(idx), fill)
