"""`jax.numpy` names built on the bit primitives and sorting, each as JAX computes it: `frexp`, `spacing`,
`bitwise_count`, `partition`, `argpartition` and `unique` (with a static `size=` under jit)."""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..ad import custom_jvp
from ..core import TracerBase, aval_of
from .. import numpy as snp
from ._base import _to_float, value_sized

__all__ = ["frexp", "spacing", "bitwise_count", "partition", "argpartition", "unique"]


def _arr(x):
    return snp.asarray(x)


def _real_float(name: str, x):
    (x,) = _to_float(name, _arr(x))
    if _dt.kind(aval_of(x).dtype) == "c":
        raise TypeError(f"{name} does not support complex-valued inputs")
    return x


def _frexp_bits(x):
    """(mantissa, exponent) from the bits: |mantissa| in [0.5, 1), exact for subnormals too (their leading bit
    found by `lax.clz`); x itself and exponent 0 at zeros, infinities and NaN."""
    dt = aval_of(x).dtype
    info = _dt.finfo(dt)
    width = 8 * dt.itemsize
    ut = np.dtype(f"u{dt.itemsize}")
    it = np.dtype(f"i{dt.itemsize}")
    c = lambda v, t=ut: lax.full_like(b, v) if t == ut else lax.full_like(e_field, v)
    b = lax.bitcast_convert_type(x, ut)
    nmant, bias = int(info.nmant), 1 - int(info.minexp)
    sign = lax.bitwise_and(b, c(1 << (width - 1)))
    mag = lax.bitwise_and(b, c((1 << (width - 1)) - 1))
    mant = lax.bitwise_and(mag, c((1 << nmant) - 1))
    e_field = lax._convert_element_type(lax.shift_right_logical(mag, c(nmant)), it)
    top = lax.sub(c(width - 1, it), lax._convert_element_type(lax.clz(mag), it))  # the highest set bit (subnormals)
    shift = lax._convert_element_type(lax.sub(c(nmant, it), top), ut)
    sub = lax.eq(e_field, c(0, it))
    mant = lax.select(sub, lax.bitwise_and(lax.shift_left(mag, shift), c((1 << nmant) - 1)), mant)
    e = lax.select(sub, lax.add(top, c(int(info.minexp) - nmant + 1, it)), lax.sub(e_field, c(bias - 1, it)))
    m = lax.bitcast_convert_type(lax.bitwise_or(lax.bitwise_or(sign, c((bias - 1) << nmant)), mant), dt)
    special = lax.bitwise_or(lax.eq(mag, c(0)), lax.bitwise_not(lax.is_finite(x)))
    return lax.select(special, x, m), lax._convert_element_type(lax.select(special, c(0, it), e), np.int32)


_frexp = custom_jvp(_frexp_bits)


@_frexp.defjvp
def _frexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    m, e = _frexp_bits(x)
    return (m, e), (snp.ldexp(t, -e), snp.zeros_like(e))  # dm/dx = 2**-e


def frexp(x, /):
    """(mantissa, exponent) with x = mantissa * 2**exponent and |mantissa| in [0.5, 1) (int32 exponents), as
    NumPy's, exact for subnormals (JAX on CPU flushes them); the mantissa's derivative is 2**-exponent."""
    return _frexp(_real_float("frexp", x))


def spacing(x, /):
    """The distance from x to the next float away from zero (JAX's rule: signed as x; toward +inf for float16)."""
    x = _real_float("spacing", x)
    inf = lax.full_like(x, np.inf)
    if aval_of(x).dtype == np.float16:
        return lax.sub(lax.nextafter(x, inf), x)
    out = lax.sub(lax.nextafter(x, snp.copysign(inf, x)), x)
    return snp.where(out == 0, snp.copysign(lax.full_like(x, float(_dt.finfo(aval_of(x).dtype).smallest_subnormal)),
                                            x), out)


def bitwise_count(x, /):
    """The number of 1 bits of |x| (uint8), as `numpy.bitwise_count`."""
    x = _arr(x)
    dt = aval_of(x).dtype
    if dt == np.bool_:
        x = x.astype(np.uint8)
    elif _dt.kind(dt) not in "iu":
        raise TypeError(f"bitwise_count needs integer inputs, got {dt}")
    return lax._convert_element_type(lax.population_count(snp.abs(x)), np.uint8)


def _last(a, axis: int):
    a = _arr(a)
    if _dt.kind(aval_of(a).dtype) == "c":
        raise NotImplementedError("partition / argpartition of complex arrays (as in JAX)")
    nd = aval_of(a).ndim
    if not -nd <= axis < nd:
        raise ValueError(f"axis {axis} is out of bounds for an array of rank {nd}")
    return snp.swapaxes(a, axis % nd, -1), axis % nd


def _kth(kth: int, n: int) -> int:
    kth = int(kth)
    if not -n <= kth < n:
        raise ValueError(f"kth {kth} is out of bounds for an axis of length {n}")
    return kth % n


def partition(a, kth: int, axis: int = -1):
    """`a` with the kth smallest value along `axis` at position kth, laid out as JAX's: the kth + 1 smallest first in
    ascending order, then the others in descending order. From a stable sort, which puts every NaN last as NumPy
    does (JAX's `-top_k(-x)` orders NaNs by their sign bit: a -NaN comes first there; stagec's `top_k` puts every
    NaN first, so that trick lost a value and repeated a NaN)."""
    arr, axis = _last(a, axis)
    n = aval_of(arr).shape[-1]
    kth = _kth(kth, n)
    s = snp.sort(arr, axis=-1)
    return snp.swapaxes(snp.concatenate([s[..., :kth + 1], s[..., kth + 1:][..., ::-1]], axis=-1), -1, axis)


def argpartition(a, kth: int, axis: int = -1):
    """Indices that partition `a` at kth along `axis`, as JAX's: those of the kth + 1 smallest values in ascending
    order of value (a stable sort's: NaN last, as `partition`), then the others in ascending order of index."""
    arr, axis = _last(a, axis)
    shape = aval_of(arr).shape
    n = shape[-1]
    kth = _kth(kth, n)
    bottom = snp.argsort(arr, axis=-1, stable=True)[..., :kth + 1].astype(np.int32)  # (NaN last: `partition`)
    rest = snp.ones(shape, np.float32)
    if n:  # ones with zeros at the bottom indices, then the indices of the ones in order
        lead = [snp.arange(d).reshape((-1,) + (1,) * (len(shape) - 1 - i)) for i, d in enumerate(shape[:-1])]
        rest = rest.at[(*lead, bottom)].set(0.0)
    top = lax.top_k(rest, n - kth - 1)[1]
    return snp.swapaxes(snp.concatenate([bottom, top], axis=-1), -1, axis)


@value_sized
def unique(ar, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: int | None = None, *, equal_nan: bool = True, size: int | None = None, fill_value=None,
           sorted: bool = True):
    """The sorted unique values of `ar` (of its slices along `axis`), as JAX's `jnp.unique`: with a static `size`
    the results have that length (padded with `fill_value`, default the smallest value; indices and counts with
    the first index and 0) and it works under jit; without `size` the values decide the length, so `ar` must be
    concrete (it reads the number of unique values, as `bincount` reads its length; under jit too, where `ar` is
    a constant rather than a traced argument)."""
    arr = _arr(ar)
    if size is not None:
        size = int(size)
    elif isinstance(arr, TracerBase):
        raise arr._concretization_error("unique (its result's size depends on the values: pass a static size= "
                                        "(and optionally fill_value=) under jit)")
    shape = aval_of(arr).shape
    if axis is None:
        arr, ax = arr.reshape(-1), 0
    else:
        ax = int(axis) % max(len(shape), 1)
    if aval_of(arr).shape[ax] == 0 and size and fill_value is None:
        raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, fill_value must be specified")
    aux = snp.moveaxis(arr, ax, 0)
    if _dt.kind(aval_of(aux).dtype) == "c":  # (a NaN in one part only: a NaN, as JAX)
        aux = snp.where(snp.isnan(aux), snp.asarray(np.nan, aval_of(aux).dtype), aux)
    n, *rest = aval_of(aux).shape
    inner = int(np.prod(rest))
    if inner == 0:
        n, perm = 1, snp.zeros(1, _dt.default_int())
    else:
        perm = snp.lexsort(aux.reshape(n, inner).T[::-1])
    aux = aux[perm]
    if aval_of(aux).size:
        nan_eq = equal_nan and _dt.kind(aval_of(aux).dtype) in "fc"
        ne = aux[1:] != aux[:-1]
        if nan_eq:
            ne = ne & ~(snp.isnan(aux[1:]) & snp.isnan(aux[:-1]))
        mask = snp.ones(n, bool).at[1:].set(snp.any(ne, axis=tuple(range(1, aval_of(aux).ndim))))
    else:
        mask = snp.zeros(n, bool)
    if size is None:
        size = int(np.asarray(mask).sum())
    ind = snp.nonzero(mask, size=size)[0]
    result = aux[ind] if aval_of(aux).size else aux
    if fill_value is not None:
        fill = snp.asarray(fill_value).astype(aval_of(result).dtype)
        if aval_of(result).shape[0]:
            valid = (snp.arange(size) < snp.sum(mask)).reshape((-1,) + (1,) * (aval_of(result).ndim - 1))
            result = snp.where(valid, result, fill)
        else:
            result = snp.full((size, *aval_of(result).shape[1:]), fill, aval_of(result).dtype)
    ret = (snp.moveaxis(result, 0, ax),)
    if return_index:
        ret += (perm[ind] if aval_of(aux).size else perm,)
    if return_inverse:
        if aval_of(aux).size:
            inv = snp.zeros(mask.shape, _dt.default_int()).at[perm].set(snp.cumsum(mask) - 1)
        else:
            inv = snp.zeros(aval_of(arr).shape[ax], _dt.default_int())
        ret += (inv.reshape(shape) if axis is None else inv,)
    if return_counts:
        if aval_of(aux).size:
            idx = snp.nonzero(mask, size=size + 1)[0]
            idx = idx.at[1:].set(snp.where(idx[1:], idx[1:], mask.size))
            ret += (snp.diff(idx),)
        elif aval_of(arr).shape[ax]:
            ret += (snp.full((1,), aval_of(arr).shape[ax], _dt.default_int()),)
        else:
            ret += (snp.zeros(0, _dt.default_int()),)
    return ret[0] if len(ret) == 1 else ret
