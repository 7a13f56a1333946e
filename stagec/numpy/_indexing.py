"""Indexing: basic (ints, slices, None, ...), integer-array indexing (gather), `x.at[idx]` updates
(scatter), boolean masks with a static result shape, `take`, `take_along_axis`, `nonzero`."""
from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..array import Array, device_put
from ..core import Const, Tracer, aval_of
from ._base import _arr, _axis, _is_array, broadcast_shapes, broadcast_to


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
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for axis {dim} with size {size}")
            k %= size
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
            i = lax.convert_element_type(i, np.int32)
            i = lax.select(lax.lt(i, lax.full_like(i, 0)), lax.add(i, lax.full_like(i, cur[d])), i)
            st[d], sizes[d] = i, 1
        x = lax.dynamic_slice(x, st, sizes)
    return lax.reshape(x, out_shape) if aval_of(x).shape != tuple(out_shape) else x


def _is_int_scalar(i) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


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
        if isinstance(i, (bool, np.bool_)):
            raise NotImplementedError("indexing with a Python/NumPy boolean scalar is not supported")
        if isinstance(i, (np.ndarray, Array)) and i.ndim == 0 and _dt.kind(i.dtype) in "iu":
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
                if isinstance(i, Tracer):
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
            if ia.ndim == 0 and isinstance(i, Tracer):
                out.append(i)  # a traced scalar: dynamic_slice, unless mixed with arrays
            else:
                out.append(i)
                advanced = advanced or ia.ndim > 0 or not isinstance(i, Tracer)
            dim += 1
            continue
        raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and integer or boolean arrays are "
                         f"valid indices, got {type(i).__name__}")
    return tuple(out), advanced


def _index_array(i, size: int, axis: int):
    """An integer index as an int32 array with negatives wrapped; concrete ones are bounds-checked."""
    if isinstance(i, Tracer):
        i = lax.convert_element_type(i, np.int32) if aval_of(i).dtype != np.int32 else i
        i = lax.select(lax.lt(i, lax.full_like(i, 0)), lax.add(i, lax.full_like(i, size)), i)
        # Clamp into bounds here: IREE's CPU gather does not clamp start indices as StableHLO specifies.
        return lax.clamp(lax.full_like(i, 0), i, lax.full_like(i, max(size - 1, 0)))
    v = np.asarray(i)
    bad = (v >= size) | (v < -size)
    if bad.any():
        raise IndexError(f"index {int(v[bad].flat[0])} is out of bounds for axis {axis} with size {size}")
    return np.where(v < 0, v + size, v).astype(np.int32)


def _advanced_getitem(x, entries: tuple):
    """Integer-array indexing (NumPy's advanced indexing) as one `gather`."""
    dim_entries = [e for e in entries if e is not None]
    shape = aval_of(x).shape
    adv = [d for d, e in enumerate(dim_entries) if not isinstance(e, slice)]
    rest = [d for d in range(len(shape)) if d not in adv]
    arrays = [_index_array(dim_entries[d], shape[d], d) for d in adv]
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
    k, nb = len(adv), len(B)
    xt = lax.transpose(x, adv + rest)
    if aval_of(xt).size == 0 or int(np.prod(B, dtype=np.int64)) == 0:
        from ._creation import zeros
        g = zeros(B + tuple(shape[d] for d in rest), aval_of(x).dtype)
    else:
        g = lax.gather(xt, idx, offset_dims=tuple(range(nb, nb + len(rest))), collapsed_slice_dims=tuple(range(k)),
                       start_index_map=tuple(range(k)), slice_sizes=(1,) * k + tuple(shape[d] for d in rest))
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


def _getitem(x, idx):
    """`x[idx]` with NumPy semantics (basic and advanced indexing; concrete boolean masks)."""
    entries, advanced = _normalize_index(x, idx)
    if advanced:
        return _advanced_getitem(x, entries)
    return _basic_getitem(x, entries)


# ---------------------------------------------------------------- functional updates: x.at[idx]


def _scatter(x, idx, values, mode: str):
    x = _arr(x)
    av = aval_of(x)
    dt = av.dtype
    if isinstance(idx, Tracer) and aval_of(idx).dtype == np.bool_:
        return _masked_update(x, idx, values, mode)
    values = _arr(values)
    values = lax.convert_element_type(values, dt) if aval_of(values).dtype != dt else values
    n = av.size
    idt = np.int32 if n < 2 ** 31 else np.int64
    lin = lax.reshape(lax.iota(idt, n), av.shape) if n else None
    if lin is None:
        return x
    sel = _getitem(lin, idx)
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
                      update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), mode=mode)
    return lax.reshape(out, av.shape)


def _masked_update(x, mask, values, mode: str):
    """`x.at[mask].op(v)` for a traced boolean mask and a scalar value: an elementwise select."""
    av, mv = aval_of(x), aval_of(mask)
    if mv.shape != av.shape[:mv.ndim] or aval_of(_arr(values)).size != 1:
        raise _bool_mask_error(mask)
    v = lax.reshape(_arr(values), ())
    v = lax.convert_element_type(v, av.dtype) if aval_of(v).dtype != av.dtype else v
    v = broadcast_to(v, av.shape)
    new = {"set": lambda: v, "add": lambda: lax.add(x, v), "mul": lambda: lax.mul(x, v),
           "min": lambda: lax.min(x, v), "max": lambda: lax.max(x, v)}[mode]()
    m = lax.broadcast_in_dim(mask, av.shape, tuple(range(mv.ndim)))
    return lax.select(m, new, x)


class _IndexUpdateRef:
    """`x.at[idx]`: functional updates returning a new array (`set`, `add`, `multiply`, `min`, `max`, `get`).

    Duplicate indices accumulate for `add`/`multiply`/`min`/`max`; for `set` which one wins is unspecified.
    Traced out-of-bounds indices are clamped into bounds (as for reads); concrete ones raise IndexError."""

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def get(self, **kw):
        return _getitem(self.array, self.index)

    def set(self, values, **kw):
        return _scatter(self.array, self.index, values, "set")

    def add(self, values, **kw):
        return _scatter(self.array, self.index, values, "add")

    def subtract(self, values, **kw):
        from ._ufuncs import negative
        return _scatter(self.array, self.index, negative(values), "add")

    def multiply(self, values, **kw):
        return _scatter(self.array, self.index, values, "mul")

    mul = multiply

    def divide(self, values, **kw):
        from ._ufuncs import true_divide
        return _scatter(self.array, self.index, true_divide(1, values), "mul")

    def min(self, values, **kw):
        return _scatter(self.array, self.index, values, "min")

    def max(self, values, **kw):
        return _scatter(self.array, self.index, values, "max")

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"


class _IndexUpdateHelper:
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)


# ---------------------------------------------------------------- take, take_along_axis, nonzero


def take(a: Any, indices: Any, axis: int | None = None, out=None, mode: str | None = None):
    """Elements of `a` at `indices` along `axis` (flattened when None). mode: 'raise' (concrete indices are
    bounds-checked; traced ones clamp), 'clip' or 'wrap'."""
    a = _arr(a)
    if axis is None:
        a, axis = lax.reshape(a, (aval_of(a).size,)), 0
    av = aval_of(a)
    axis = _axis(axis, av.ndim, "take")
    n = av.shape[axis]
    indices = _arr(indices) if isinstance(indices, (list, tuple)) else indices
    if not (_is_array(indices) or isinstance(indices, np.ndarray)):
        indices = np.asarray(indices)
    if _dt.kind(aval_of(indices).dtype) not in "iu":
        raise IndexError("take: indices must be integers")
    mode = mode or "raise"
    if mode not in ("raise", "clip", "wrap"):
        raise ValueError(f"take: clipmode not understood: {mode!r}")
    if mode != "raise":
        if isinstance(indices, Tracer) or isinstance(indices, Array):
            i = lax.convert_element_type(indices, np.int32)
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
    return _getitem(a, (slice(None),) * axis + (indices,))


def take_along_axis(arr: Any, indices: Any, axis: int | None, mode: str | None = None):
    """`arr` picked at `indices` along `axis`, the other axes matched (broadcasting) with `indices`' axes."""
    a = _arr(arr)
    indices = _arr(indices) if isinstance(indices, (list, tuple)) else indices
    if axis is None:
        if aval_of(indices).ndim != 1:
            raise ValueError("take_along_axis: when axis=None, `indices` must have a single dimension.")
        return take(a, indices)
    av, iv = aval_of(a), aval_of(indices)
    if iv.ndim != av.ndim:
        raise ValueError(f"take_along_axis: `indices` and `arr` must have the same number of dimensions "
                         f"({iv.ndim} != {av.ndim})")
    if _dt.kind(iv.dtype) not in "iu":
        raise IndexError("take_along_axis: indices must be integers")
    axis = _axis(axis, av.ndim, "take_along_axis")
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
    return _advanced_getitem(a, tuple(idx))


def nonzero(a: Any, *, size: int | None = None, fill_value=None) -> tuple:
    """Indices of the nonzero elements, one array per dimension. The count decides the shape, so `a` must be
    concrete (outside jit)."""
    a = _arr(a)
    if isinstance(a, Tracer):
        raise _bool_mask_error(a).__class__(
            f"nonzero/where(condition)/argwhere: the result shape depends on the values of {a}, which are unknown "
            f"while tracing; use snp.where(condition, x, y) or call it outside jit.")
    host = np.asarray(a)
    return tuple(device_put(i.astype(_dt.default_int())) for i in np.nonzero(host))


def flatnonzero(a: Any):
    from ._shapes import ravel
    return nonzero(ravel(a))[0]


def argwhere(a: Any):
    nz = nonzero(a)
    host = np.stack([np.asarray(i) for i in nz], axis=-1) if nz else np.zeros((1, 0), _dt.default_int())
    return device_put(host.reshape(-1, builtins.max(aval_of(_arr(a)).ndim, 0)))
