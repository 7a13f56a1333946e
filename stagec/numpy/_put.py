"""`put`, `put_along_axis` (JAX's: arrays are immutable, so `inplace=False` is required and the updated array is
returned), `packbits` and `unpackbits`."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..core import aval_of
from .. import numpy as snp

__all__ = ["put", "put_along_axis", "packbits", "unpackbits"]


def _immutable(fname: str, inplace: bool) -> None:
    if inplace:
        raise ValueError(f"stagec.numpy.{fname} cannot modify arrays in-place, because stagec arrays are immutable. "
                         f"Pass inplace=False to instead return an updated array.")


def put(a, ind, v, mode: str | None = None, *, inplace: bool = True) -> Any:
    """`a` with its flat entries at `ind` set to `v` (repeated to the length of `ind`). Out-of-bounds indices
    are dropped (mode None), clipped ('clip') or wrapped ('wrap'); `inplace=False` is required."""
    _immutable("put", inplace)
    arr = snp.asarray(a)
    ind, vals = snp.ravel(snp.asarray(ind)), snp.ravel(snp.asarray(v))
    n, m = aval_of(arr).size, aval_of(ind).size
    if not n or not m or not aval_of(vals).size:
        return arr
    vals = snp.resize(vals, (m,))
    if mode is None:
        scatter_mode = "drop"
    elif mode == "clip":
        ind, scatter_mode = snp.clip(ind, 0, n - 1), "promise_in_bounds"
    elif mode == "wrap":
        ind, scatter_mode = ind % n, "promise_in_bounds"
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got {mode=}")
    return snp.ravel(arr).at[ind].set(vals, mode=scatter_mode).reshape(aval_of(arr).shape)


def put_along_axis(arr, indices, values, axis: int | None, inplace: bool = True, *, mode: str | None = None) -> Any:
    """`arr` with `values` (broadcast to `indices`' shape) set at `indices` along `axis` (the flattened array
    if None), the other axes matched with `indices`' axes, as `take_along_axis` reads; `inplace=False` is
    required."""
    _immutable("put_along_axis", inplace)
    a, indices, values = snp.asarray(arr), snp.asarray(indices), snp.asarray(values)
    shape = aval_of(a).shape
    if axis is None:
        a, ax = snp.ravel(a), 0
    else:
        ax = int(axis)
    nd = aval_of(a).ndim
    if aval_of(indices).ndim != nd:
        raise ValueError(f"put_along_axis arguments 'arr' and 'indices' must have same ndim. Got arr.ndim={nd} "
                         f"and indices.ndim={aval_of(indices).ndim}.")
    try:
        values = snp.broadcast_to(values, aval_of(indices).shape)
    except ValueError:
        raise ValueError(f"put_along_axis argument 'values' must be broadcastable to 'indices'. Got "
                         f"values.shape={aval_of(values).shape} and indices.shape={aval_of(indices).shape}.") from None
    ax %= nd
    idx = tuple(indices if d == ax else snp.arange(n).reshape((1,) * d + (n,) + (1,) * (nd - d - 1))
                for d, n in enumerate(aval_of(a).shape))
    out = a.at[idx].set(values, mode=mode)
    return out.reshape(shape) if axis is None else out


def _bitorder(bitorder: str) -> None:
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")


def packbits(a, axis: int | None = None, bitorder: str = "big") -> Any:
    """The nonzero-ness of `a`'s entries along `axis` (flattened if None), packed 8 to a uint8 (the last byte
    padded with zero bits); `bitorder` 'big' puts the first entry in the most significant bit."""
    arr = snp.asarray(a)
    if _dt.kind(aval_of(arr).dtype) not in "biu":
        raise TypeError("Expected an input array of integer or boolean data type")
    _bitorder(bitorder)
    arr = (arr != 0).astype(np.uint8)
    if axis is None:
        arr, axis = snp.ravel(arr), 0
    arr = snp.swapaxes(arr, axis, -1)
    rem = aval_of(arr).shape[-1] % 8
    if rem:
        arr = snp.pad(arr, [(0, 0)] * (aval_of(arr).ndim - 1) + [(0, 8 - rem)])
    arr = arr.reshape(aval_of(arr).shape[:-1] + (aval_of(arr).shape[-1] // 8, 8))
    bits = snp.arange(8, dtype=np.uint8)
    bits = bits[::-1] if bitorder == "big" else bits
    packed = snp.sum(snp.left_shift(arr, bits), axis=-1).astype(np.uint8)
    return snp.swapaxes(packed, axis, -1)


def unpackbits(a, axis: int | None = None, count: int | None = None, bitorder: str = "big") -> Any:
    """The bits of the uint8 array `a` along `axis` (flattened if None) as 0/1 uint8 entries, 8 per byte; `count`
    keeps the first `count` (padding with zeros if it is more)."""
    arr = snp.asarray(a)
    if aval_of(arr).dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    _bitorder(bitorder)
    bits = snp.left_shift(snp.asarray(1, np.uint8), snp.arange(8, dtype=np.uint8))
    bits = bits[::-1] if bitorder == "big" else bits
    if axis is None:
        arr, axis = snp.ravel(arr), 0
    arr = snp.swapaxes(arr, axis, -1)
    unpacked = ((arr[..., None] & bits) > 0).astype(np.uint8)
    unpacked = unpacked.reshape(aval_of(unpacked).shape[:-2] + (-1,))
    if count is not None:
        count = int(count)
        have = aval_of(unpacked).shape[-1]
        if count > have:
            unpacked = snp.pad(unpacked, [(0, 0)] * (aval_of(unpacked).ndim - 1) + [(0, count - have)])
        else:
            unpacked = unpacked[..., :count]
    return snp.swapaxes(unpacked, axis, -1)
