"""`histogram_bin_edges`, `histogram`, `histogram2d` and `histogramdd`, as JAX computes them: the shapes follow
from the (static) number of bins, so they work under `jit` with traced data. Edges are `linspace` over `range` or
the data's (min, max), a zero-width range widened by 0.5 each side; a value's bin is `searchsorted(edges, value,
side='right')`, the last edge counting in the last bin; values outside the edges (NaN too) are not counted."""
from __future__ import annotations

import builtins
import math
import operator
from typing import Any, Sequence

import numpy as np

from .. import dtypes as _dt
from ..core import TracerBase, aval_of
from .. import numpy as snp
from ._base import _to_float

__all__ = ["histogram_bin_edges", "histogram", "histogram2d", "histogramdd"]


def _no_string_bins(bins) -> None:
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` not implemented.")


def _inexact(x):
    """x in its inexact dtype (integers and bools: the default float), as JAX's `promote_dtypes_inexact`."""
    (x,) = _to_float("histogram", snp.asarray(x))
    return x


def _static_bins(bins) -> int:
    if isinstance(bins, TracerBase):
        raise bins._concretization_error("bins argument of histogram_bin_edges")
    try:
        n = operator.index(bins)
    except TypeError:
        raise TypeError(f"histogram: bins must be an int or a 1-D array of edges, got {bins!r}") from None
    if n < 1:
        raise ValueError("`bins` must be positive, when an integer")
    return n


def histogram_bin_edges(a, bins=10, range: Sequence | None = None, weights=None) -> Any:
    """The bin edges `histogram` uses: `bins` itself when it is 1-D, else bins + 1 evenly spaced edges over
    `range` (default: the data's min and max; (0, 1) for empty data, as NumPy's, where JAX raises). `weights`
    is unused (as in JAX: string `bins` are not supported)."""
    del weights
    _no_string_bins(bins)
    arr = _inexact(a)
    dt = aval_of(arr).dtype
    if np.ndim(bins) == 1:
        return snp.asarray(bins, dtype=dt)
    n = _static_bins(bins)
    if range is None:
        range = (0, 1) if aval_of(arr).size == 0 else (snp.min(arr), snp.max(arr))
    r = snp.stack([snp.asarray(v) for v in range]) if isinstance(range, (list, tuple)) else snp.asarray(range)
    r = r.astype(dt)
    if aval_of(r).shape != (2,):
        raise ValueError(f"`range` must be either None or a sequence of scalars, got {range}")
    flat = r[0] == r[1]
    lo, hi = snp.where(flat, r[0] - 0.5, r[0]), snp.where(flat, r[1] + 0.5, r[1])
    return snp.linspace(lo, hi, n + 1, dtype=dt)


def _bin_index(edges, x):
    """Each value's index into [below, bin 1, ..., bin n, above] (the last edge in bin n; NaN above)."""
    idx = snp.searchsorted(edges, x, side="right")
    return snp.where(x == edges[-1], idx - 1, idx)


def histogram(a, bins=10, range: Sequence | None = None, weights=None, density: bool | None = None) -> tuple:
    """(counts, edges) of the values of `a` (any shape) in `bins` bins (an int, or a 1-D array of edges), as
    JAX's: the counts are floats (the weights' inexact dtype); `density` divides by the total and the widths."""
    _no_string_bins(bins)
    a = _inexact(a)
    if weights is None:
        w = snp.ones_like(a)
    else:
        w = snp.asarray(weights)
        if aval_of(w).shape != aval_of(a).shape:
            raise ValueError("weights should have the same shape as a.")
        a, w = _to_float("histogram", a, w)
    a, w = snp.ravel(a), snp.ravel(w)
    edges = histogram_bin_edges(a, bins, range)
    n = aval_of(edges).shape[0]
    counts = snp.zeros(n, aval_of(w).dtype).at[_bin_index(edges, a)].add(w, mode="drop")[1:]
    if density:
        counts = counts / snp.diff(edges) / counts.sum()
    return counts, edges


def histogramdd(sample, bins=10, range: Sequence | None = None, weights=None, density: bool | None = None) -> tuple:
    """(counts, [edges per dimension]) of the N points of a (N, D) `sample`; `bins` is an int, or one int or
    1-D array of edges per dimension; `range` one (min, max) or None per dimension. As JAX's, the counts are
    the default int without weights, in the weights' dtype with them, and in the sample's with `density`."""
    _no_string_bins(bins)
    if isinstance(sample, (list, tuple)):  # (NumPy reads a list of D coordinate arrays; JAX rejects lists)
        raise TypeError("histogramdd requires an array sample of shape (N, D), not a list or tuple")
    sample = _inexact(sample)
    if aval_of(sample).ndim != 2:
        raise ValueError(f"histogramdd: sample must have shape (N, D), got {aval_of(sample).shape}")
    if weights is not None:
        weights = snp.asarray(weights)
        if aval_of(weights).shape != aval_of(sample).shape[:1]:
            raise ValueError("should have one weight for each sample.")
        sample, weights = _to_float("histogramdd", sample, weights)
    N, D = aval_of(sample).shape
    if range is not None and (len(range) != D or builtins.any(r is not None and np.shape(r)[0] != 2 for r in range)):
        raise ValueError(f"For sample.shape={(N, D)}, range must be a sequence of {D} pairs or Nones; got {range=}")
    try:
        per_dim = list(bins)
    except TypeError:
        per_dim = D * [bins]
    else:
        if len(per_dim) != D:
            raise ValueError("should be a bin for each dimension.")
    idx, edges = [], []
    for i in builtins.range(D):
        e = histogram_bin_edges(sample[:, i], per_dim[i], None if range is None else range[i])
        idx.append(_bin_index(e, sample[:, i]))
        edges.append(e)
    nbins = tuple(aval_of(e).shape[0] + 1 for e in edges)
    flat = snp.ravel_multi_index(tuple(idx), nbins, mode="clip")
    if weights is None:  # (counts in the default int, as JAX's bincount)
        weights = snp.ones(N, _dt.default_int())
    hist = snp.bincount(flat, weights, length=math.prod(nbins)).reshape(nbins)[D * (slice(1, -1),)]
    if density:
        hist = hist.astype(aval_of(sample).dtype)
        hist = hist / hist.sum()
        for norm in snp.ix_(*(snp.diff(e) for e in edges)):
            hist = hist / norm
    return hist, edges


def histogram2d(x, y, bins=10, range: Sequence | None = None, weights=None, density: bool | None = None) -> tuple:
    """(counts, x edges, y edges) of the points (x[i], y[i]): `histogramdd` of the (N, 2) sample; `bins` is an
    int, a pair (of ints or edge arrays), or one edge array for both."""
    _no_string_bins(bins)
    x, y = snp.asarray(x), snp.asarray(y)
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb not in (1, 2):
        bins = [snp.asarray(bins)] * 2
    x, y = _to_float("histogram2d", x, y)
    hist, edges = histogramdd(snp.stack([x, y], axis=1), bins, range, weights, density)
    return hist, edges[0], edges[1]

