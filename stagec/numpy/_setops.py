"""`union1d`, `intersect1d`, `setdiff1d`, `setxor1d`, `compress`, `extract` and `trim_zeros`, as JAX's: the
values decide the result's length, so under `jit` the set functions, `compress` and `extract` need a static
`size=` (the result padded with `fill_value`, JAX's defaults), and `trim_zeros` needs concrete values (JAX has no
`size=` for it). Without `size` the inputs must be concrete (outside jit): the result is NumPy's.

Each set function computes a fixed-size result (length `size`, or an upper bound when eager) and the number of
valid entries; eagerly without `size` that number is read and the result cut to it, as `unique` does."""
from __future__ import annotations

import builtins
import operator
from typing import Any, Sequence

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..core import TracerBase, aval_of
from .. import numpy as snp
from ._base import _promote, value_sized
from ._nonzero import _check_size

__all__ = ["union1d", "intersect1d", "setdiff1d", "setxor1d", "compress", "extract", "trim_zeros"]


def _shape_error(fname: str, x) -> Exception:
    return x._concretization_error(f"{fname} (its output shape depends on the values; give a static size= "
                                   f"(and optionally fill_value=) under jit)")


def _need_concrete(fname: str, size: int | None, *xs) -> None:
    """Without `size` the inputs must be concrete: a traced one raises, naming `fname` and `size=`."""
    for x in xs:
        if size is None and isinstance(x, TracerBase):
            raise _shape_error(fname, x)


def _cut(fname: str, outs: tuple, count) -> tuple:
    """The eager result without `size`: the first `count` entries of each output (count must be concrete)."""
    if isinstance(count, TracerBase):
        raise _shape_error(fname, count)
    n = int(count)
    return tuple(o[:n] for o in outs)


def _flat_pair(fname: str, ar1, ar2) -> tuple:
    a1, a2 = _promote(fname, snp.ravel(snp.asarray(ar1)), snp.ravel(snp.asarray(ar2)))
    return snp.asarray(a1), snp.asarray(a2)


def _unique_padded(x) -> tuple:
    """(sorted unique values of 1-D x padded to x's length, index of each's first occurrence, their number)."""
    n = aval_of(x).shape[0]
    u, idx, counts = snp.unique(x, return_index=True, return_counts=True, size=n, fill_value=0)
    return u, idx, snp.sum(counts > 0)


def _sorted_valid(u1, k1, u2, k2) -> tuple:
    """The valid entries (the first k1 of u1, the first k2 of u2) sorted first, with their positions in
    concatenate([u1, u2]) (ties: u1's first), and the valid count."""
    n1, n2 = aval_of(u1).shape[0], aval_of(u2).shape[0]
    arr = snp.concatenate([u1, u2])
    valid = snp.concatenate([snp.arange(n1) < k1, snp.arange(n2) < k2])
    key = lax._convert_element_type(snp.logical_not(valid), np.int32)
    _, aux, pos = lax.sort([key, arr, snp.arange(n1 + n2, dtype=_dt.default_int())], is_stable=True, num_keys=2)
    return aux, pos, k1 + k2


def _pick(aux, mask, size: int, fill_value) -> tuple:
    """The entries of `aux` where `mask` (the first `size`), padded with `fill_value` (default, as JAX's: the
    smallest picked value; 0 if none), the indices picked, and their count."""
    count = snp.sum(mask)
    n = aval_of(aux).shape[0]
    if n:
        where_ = snp.nonzero(mask, size=size, fill_value=n)[0]
        vals = aux.at[where_].get(mode="fill", fill_value=0)
    else:
        where_, vals = snp.zeros(size, _dt.default_int()), snp.zeros(size, aval_of(aux).dtype)
    valid = snp.arange(size) < count
    if fill_value is None:
        if size:  # (JAX's two steps: the largest value, then the smallest of the result)
            vals = snp.where(valid, vals, snp.max(vals))
            vals = snp.where(valid, vals, snp.min(vals))
    else:
        vals = snp.where(valid, vals, snp.asarray(fill_value).astype(aval_of(vals).dtype))
    return vals, where_, valid, count


@value_sized
def union1d(ar1, ar2, *, size: int | None = None, fill_value=None) -> Any:
    """The sorted unique values of both arrays (flattened): `unique` of their concatenation, with its `size`
    and `fill_value` (default: the smallest value)."""
    size = _check_size("union1d", size)
    arr = snp.concatenate([snp.ravel(snp.asarray(ar1)), snp.ravel(snp.asarray(ar2))])
    if size is not None:
        return snp.unique(arr, size=size, fill_value=fill_value)
    _need_concrete("union1d", size, arr)
    n = aval_of(arr).shape[0]
    u, counts = snp.unique(arr, return_counts=True, size=n, fill_value=0)
    return _cut("union1d", (u,), snp.sum(counts > 0))[0]


@value_sized
def intersect1d(ar1, ar2, assume_unique: bool = False, return_indices: bool = False, *, size: int | None = None,
                fill_value=None) -> Any:
    """The sorted values in both arrays (flattened); with `return_indices` also the indices of their first
    occurrences in each. With `size`, padded with `fill_value` (default: the smallest value of the result),
    the indices with each array's length."""
    size = _check_size("intersect1d", size)
    a1, a2 = _flat_pair("intersect1d", ar1, ar2)
    n1, n2 = aval_of(a1).shape[0], aval_of(a2).shape[0]
    _need_concrete("intersect1d", size, a1, a2)
    if assume_unique:
        u1, i1, k1, u2, i2, k2 = a1, None, n1, a2, None, n2
    else:
        (u1, i1, k1), (u2, i2, k2) = _unique_padded(a1), _unique_padded(a2)
    aux, pos, k = _sorted_valid(u1, k1, u2, k2)
    n = n1 + n2
    mask = (aux[1:] == aux[:-1]) & (snp.arange(1, n) < k) if n else snp.zeros(0, bool)
    vals, at, valid, count = _pick(aux, mask, n if size is None else size, fill_value)
    outs: tuple = (vals,)
    if return_indices:
        if n:
            j1 = snp.where(valid, pos.at[at].get(mode="fill", fill_value=n1), n1)
            j2 = snp.where(valid, pos.at[at + 1].get(mode="fill", fill_value=n1) - n1, n2)
        else:
            j1 = j2 = snp.zeros(aval_of(vals).shape[0], _dt.default_int())
        if not assume_unique:
            j1 = i1.at[j1].get(mode="fill", fill_value=n1) if n1 else j1
            j2 = i2.at[j2].get(mode="fill", fill_value=n2) if n2 else j2
        outs += (j1.astype(_dt.default_int()), j2.astype(_dt.default_int()))
    if size is None:
        outs = _cut("intersect1d", outs, count)
    return outs if return_indices else outs[0]


@value_sized
def setdiff1d(ar1, ar2, assume_unique: bool = False, *, size: int | None = None, fill_value=None) -> Any:
    """The values of `ar1` not in `ar2` (flattened): sorted and unique, or in ar1's order with
    `assume_unique`. With `size`, padded with `fill_value` (default 0, as JAX's)."""
    size = _check_size("setdiff1d", size)
    a1, a2 = _flat_pair("setdiff1d", ar1, ar2)
    _need_concrete("setdiff1d", size, a1, a2)
    n1 = aval_of(a1).shape[0]
    fill = snp.asarray(0 if fill_value is None else fill_value).astype(aval_of(a1).dtype)
    if n1 == 0:
        return snp.full((size or 0,), fill, aval_of(a1).dtype)
    u, k = (a1, n1) if assume_unique else _unique_padded(a1)[::2]
    mask = (snp.arange(n1) < k) & ~snp.isin(u, a2)
    vals, _, _, count = _pick(u, mask, n1 if size is None else size, fill)
    return _cut("setdiff1d", (vals,), count)[0] if size is None else vals


@value_sized
def setxor1d(ar1, ar2, assume_unique: bool = False, *, size: int | None = None, fill_value=None) -> Any:
    """The sorted values in exactly one of the arrays (flattened; NaNs differ, as NumPy's). With `size`, padded
    with `fill_value` (default: the smallest value of the result, as JAX's)."""
    size = _check_size("setxor1d", size)
    a1, a2 = _flat_pair("setxor1d", ar1, ar2)
    _need_concrete("setxor1d", size, a1, a2)
    n1, n2 = aval_of(a1).shape[0], aval_of(a2).shape[0]
    if assume_unique:
        u1, k1, u2, k2 = a1, n1, a2, n2
    else:
        (u1, _, k1), (u2, _, k2) = _unique_padded(a1), _unique_padded(a2)
    aux, _, k = _sorted_valid(u1, k1, u2, k2)
    n = n1 + n2
    i = snp.arange(n + 1)
    differs = snp.concatenate([snp.ones(1, bool), aux[1:] != aux[:-1], snp.ones(1, bool)]) if n else i < 1
    flag = (differs & (i <= k)) | (i == k)
    vals, _, _, count = _pick(aux, flag[1:] & flag[:-1], n if size is None else size, fill_value)
    return _cut("setxor1d", (vals,), count)[0] if size is None else vals


@value_sized
def compress(condition, a, axis: int | None = None, *, size: int | None = None, fill_value=0, out=None) -> Any:
    """The slices of `a` along `axis` (flattened `a` if None) where the 1-D `condition` is true; as JAX's, the
    shorter of the two is the length used. With `size` (at most that length) the first `size` such slices,
    padded with `fill_value`."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to compress is not supported.")
    size = _check_size("compress", size)
    cond = snp.asarray(condition)
    if aval_of(cond).ndim != 1:
        raise ValueError("condition must be a 1D array")
    arr = snp.ravel(snp.asarray(a)) if axis is None else snp.moveaxis(snp.asarray(a), axis, 0)
    m = builtins.min(aval_of(arr).shape[0], aval_of(cond).shape[0])
    if size is None:
        _need_concrete("compress", size, cond)
        c = np.asarray(cond).astype(bool)
        if c[m:].any():
            raise ValueError("condition contains entries that are out of bounds")
        result = snp.take(arr[:m], snp.asarray(np.flatnonzero(c[:m]).astype(_dt.default_int())), axis=0)
    elif not size <= m:
        raise ValueError(f"size must be positive and not greater than the size of the array axis; got {size=} "
                         f"for a.shape[axis]={m}")
    else:
        arr = arr[:m]
        c = cond[:m].astype(bool)
        mask = c.reshape((m,) + (1,) * (aval_of(arr).ndim - 1))
        arr = snp.where(mask, arr, snp.asarray(fill_value).astype(aval_of(arr).dtype))
        result = arr[snp.argsort(lax._convert_element_type(~c, np.int32), stable=True)][:size]
    return result if axis is None else snp.moveaxis(result, 0, axis)


@value_sized
def extract(condition, arr, *, size: int | None = None, fill_value=0) -> Any:
    """The entries of flattened `arr` where flattened `condition` is true: `compress` of the two, flattened."""
    condition = snp.ravel(snp.asarray(condition))
    _need_concrete("extract", size, condition)
    return compress(condition, snp.ravel(snp.asarray(arr)), size=size, fill_value=fill_value)


@value_sized
def trim_zeros(filt, trim: str = "fb", axis: int | Sequence[int] | None = None) -> Any:
    """`filt` without its leading ('f') and/or trailing ('b') all-zero slices along `axis` (default: every axis).
    The values decide the shape and JAX has no `size=` here, so `filt` must be concrete (outside jit)."""
    filt = snp.asarray(filt)
    if isinstance(filt, TracerBase):
        raise filt._concretization_error("trim_zeros (its output shape depends on the values of filt: call it "
                                         "outside jit)")
    nd = aval_of(filt).ndim
    axes = builtins.range(nd) if axis is None else (axis,) if isinstance(axis, int) else axis
    axes = {operator.index(ax) % builtins.max(nd, 1) for ax in axes}
    trim = trim.lower()
    if not axes or ("f" not in trim and "b" not in trim):
        return filt
    host = np.asarray(filt) != 0
    cuts = []
    for ax in builtins.range(nd):
        if ax not in axes:
            cuts.append(slice(None))
            continue
        nz = np.flatnonzero(host.any(axis=tuple(d for d in builtins.range(nd) if d != ax)))
        if not nz.size:
            cuts.append(slice(0, 0))
            continue
        cuts.append(slice(int(nz[0]) if "f" in trim else None, int(nz[-1]) + 1 if "b" in trim else None))
    return filt[tuple(cuts)]
