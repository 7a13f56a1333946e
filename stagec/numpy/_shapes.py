"""Shape manipulation: reshape, transpose, joining and splitting, tiling, flipping, rolling, padding."""
from __future__ import annotations

import builtins
import math
import operator
from typing import Any

import numpy as np

from .. import dtypes as _dt, lax
from ..core import Const, Tracer, aval_of
from ._base import _arr, _axis, _composite, _fresh, _is_array, _promote, _shape_tuple, asarray, broadcast_shapes, broadcast_to
from ._ufuncs import round as _round


def reshape(a: Any, newshape=None, order: str = "C", *, shape=None, copy: bool | None = None):
    """Reshape in C (or Fortran: `order="F"`) order; one dimension may be -1. A reshape is a new array (no views):
    copy=True always gives one, copy=False is accepted as JAX accepts it."""
    a = _arr(a)
    if order not in ("C", "F"):
        raise NotImplementedError(f"reshape: order must be 'C' or 'F', not {order!r} (as in JAX)")
    newshape = _shape_tuple(shape if shape is not None else newshape, negative_ok=True)
    if order == "F":  # Fortran order: C order of the reversed axes
        return transpose(reshape(transpose(a), tuple(reversed(newshape))))
    size = aval_of(a).size
    if newshape.count(-1) > 1:
        raise ValueError("reshape: can only specify one unknown dimension")
    if -1 in newshape:
        known = math.prod(d for d in newshape if d != -1)  # (Python ints: np.prod cost ~3 us a call)
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of shape {aval_of(a).shape} (size {size}) into shape {newshape}")
        newshape = tuple(size // known if d == -1 else d for d in newshape)
    if builtins.any(d < 0 for d in newshape) or math.prod(newshape) != size:
        raise ValueError(f"cannot reshape array of shape {aval_of(a).shape} (size {size}) into shape {newshape}")
    out = lax.reshape(a, newshape)
    return _fresh(out) if copy and out is a else out


def ravel(a, order: str = "C"):
    """The elements as a 1-D array, in C (or Fortran: `order="F"`) order."""
    return reshape(_arr(a), (-1,), order)


def transpose(a, axes=None):
    a = _arr(a)
    nd = aval_of(a).ndim
    axes = tuple(reversed(range(nd))) if axes is None else tuple(_axis(x, nd, "transpose") for x in axes)
    return lax.transpose(a, axes)


def squeeze(a, axis=None):
    a = _arr(a)
    shape = aval_of(a).shape
    if axis is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    else:
        axes = [_axis(x, len(shape), "squeeze") for x in ((axis,) if isinstance(axis, int) else axis)]
        for x in axes:
            if shape[x] != 1:
                raise ValueError(f"squeeze: cannot select an axis to squeeze out which has size not equal to one "
                                 f"(axis {x} of shape {shape})")
    return lax.reshape(a, [d for i, d in enumerate(shape) if i not in axes])


def expand_dims(a, axis):
    a = _arr(a)
    shape = list(aval_of(a).shape)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    nd = len(shape) + len(axes)
    for x in sorted(_axis(x, nd, "expand_dims") for x in axes):
        shape.insert(x, 1)
    return lax.reshape(a, shape)


def concatenate(arrays, axis: int | None = 0, dtype=None):
    """Join arrays along an existing axis (flattened first when axis is None)."""
    if len(arrays) == 0:
        raise ValueError("need at least one array to concatenate")
    arrays = [_arr(a) for a in arrays]
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    arrays = _promote("concatenate", *arrays)
    if dtype is not None:
        from ._base import astype
        arrays = [astype(a, dtype) for a in arrays]
    shapes = [aval_of(a).shape for a in arrays]
    nd = len(shapes[0])
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = _axis(axis, nd, "concatenate")
    for s in shapes[1:]:
        if len(s) != nd or builtins.any(x != y for i, (x, y) in enumerate(zip(s, shapes[0])) if i != axis):
            raise ValueError(f"concatenate: all the input array dimensions except for the concatenation axis must "
                             f"match exactly, got shapes {shapes} for axis {axis}")
    arrays = [a if _is_array(a) else asarray(a) for a in arrays]
    return arrays[0] if len(arrays) == 1 else lax.concatenate(arrays, axis)


def stack(arrays, axis: int = 0, dtype=None):
    """Join arrays of one shape along a new axis."""
    if len(arrays) == 0:
        raise ValueError("need at least one array to stack")
    arrays = _promote("stack", *[_arr(a) for a in arrays])
    shapes = {aval_of(a).shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError(f"stack: all input arrays must have the same shape, got {sorted(shapes)}")
    nd = aval_of(arrays[0]).ndim + 1
    ax = _axis(axis, nd, "stack")
    return concatenate([expand_dims(a if _is_array(a) or isinstance(a, Const) else asarray(a), ax) for a in arrays],
                       ax, dtype=dtype)


def broadcast_arrays(*args) -> list:
    """Broadcast every argument to their common shape."""
    args = [_arr(a) for a in args]
    shape = broadcast_shapes(*[aval_of(a).shape for a in args], fname="broadcast_arrays")
    return [broadcast_to(a, shape, _fname="broadcast_arrays") for a in args]


def swapaxes(a: Any, axis1: int, axis2: int):
    a = _arr(a)
    nd = aval_of(a).ndim
    perm = list(range(nd))
    i, j = _axis(axis1, nd, "swapaxes"), _axis(axis2, nd, "swapaxes")
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, perm)


def moveaxis(a: Any, source, destination):
    """Move axes `source` to positions `destination` (ints or sequences of equal length)."""
    a = _arr(a)
    nd = aval_of(a).ndim
    src = [_axis(s, nd, "moveaxis") for s in ((source,) if isinstance(source, int) else source)]
    dst = [_axis(d, nd, "moveaxis") for d in ((destination,) if isinstance(destination, int) else destination)]
    if len(src) != len(dst):
        raise ValueError("moveaxis: `source` and `destination` arguments must have the same number of elements")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("moveaxis: repeated axis")
    perm = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return lax.transpose(a, perm)


def rollaxis(a: Any, axis: int, start: int = 0):
    nd = aval_of(_arr(a)).ndim
    axis = _axis(axis, nd, "rollaxis")
    start = start + nd + 1 if start < 0 else start
    if not 0 <= start <= nd:
        raise ValueError(f"rollaxis: start {start} is out of bounds")
    return moveaxis(a, axis, start - 1 if axis < start else start)


def _atleast(arys, nd: int, grow) -> Any:
    """Each array with fewer than `nd` dims reshaped to `grow(shape)`; one array comes back bare, as in NumPy."""
    out = [reshape(a, grow(aval_of(a).shape)) if aval_of(a).ndim < nd else a for a in map(_arr, arys)]
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    return _atleast(arys, 1, lambda s: (1,))


def atleast_2d(*arys):
    return _atleast(arys, 2, lambda s: (1,) * (2 - len(s)) + s)


def atleast_3d(*arys):
    return _atleast(arys, 3, lambda s: {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[len(s)])


def hstack(tup):
    arrs = atleast_1d(*tup) if len(tup) != 1 else [atleast_1d(*tup)]
    return concatenate(arrs, axis=0 if aval_of(arrs[0]).ndim == 1 else 1)


def vstack(tup):
    arrs = atleast_2d(*tup) if len(tup) != 1 else [atleast_2d(*tup)]
    return concatenate(arrs, axis=0)


row_stack = vstack


def dstack(tup):
    arrs = atleast_3d(*tup) if len(tup) != 1 else [atleast_3d(*tup)]
    return concatenate(arrs, axis=2)


def column_stack(tup):
    arrs = [reshape(_arr(a), (-1, 1)) if aval_of(_arr(a)).ndim < 2 else _arr(a) for a in tup]
    return concatenate(arrs, axis=1)


def _split_points(n: int, indices_or_sections, fname: str, even: bool) -> list:
    if isinstance(indices_or_sections, Tracer):
        raise indices_or_sections._concretization_error(fname)
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError(f"{fname}: number sections must be larger than 0.")
        if even and n % k:
            raise ValueError("array split does not result in an equal division")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        return list(np.cumsum([0] + sizes))
    pts = [operator.index(i) for i in indices_or_sections]
    return [0] + pts + [n]


def array_split(ary: Any, indices_or_sections, axis: int = 0) -> list:
    """Split into pieces (possibly of unequal size) along `axis`."""
    return _split(ary, indices_or_sections, axis, "array_split", even=False)


def split(ary: Any, indices_or_sections, axis: int = 0) -> list:
    """Split into equal sections, or at the given indices, along `axis`."""
    return _split(ary, indices_or_sections, axis, "split", even=True)


def _split(ary, indices_or_sections, axis, fname, even):
    a = _arr(ary)
    av = aval_of(a)
    axis = _axis(axis, av.ndim, fname)
    n = av.shape[axis]
    pts = _split_points(n, indices_or_sections, fname, even)
    out = []
    for s, e in zip(pts[:-1], pts[1:]):
        s = builtins.min(builtins.max(int(s) if s >= 0 else int(s) + n, 0), n)
        e = builtins.min(builtins.max(int(e) if e >= 0 else int(e) + n, 0), n)
        e = builtins.max(e, s)
        start = [0] * av.ndim
        limit = list(av.shape)
        start[axis], limit[axis] = s, e
        out.append(lax.slice(a, start, limit))
    return out


def hsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, axis=1 if aval_of(_arr(ary)).ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, axis=0)


def dsplit(ary: Any, indices_or_sections) -> list:
    """Split along the third axis (depth), as `split(..., axis=2)`; `ary` needs at least 3 dimensions."""
    shape = aval_of(_arr(ary)).shape
    if len(shape) < 3:
        raise ValueError(f"dsplit only works on arrays of 3 or more dimensions, got shape {shape}")
    return split(ary, indices_or_sections, axis=2)


def tile(A: Any, reps) -> Any:
    """Repeat the whole array `reps` times along each axis."""
    a = _arr(A)
    reps = _shape_tuple(reps, negative_ok=True)
    if builtins.any(r < 0 for r in reps):
        raise ValueError(f"tile: negative repetitions {reps}")
    shape = aval_of(a).shape
    nd = builtins.max(len(shape), len(reps))
    shape = (1,) * (nd - len(shape)) + shape
    reps = (1,) * (nd - len(reps)) + reps
    a = lax.reshape(a, shape)
    # Broadcast to (r0, d0, r1, d1, ...) then merge each pair.
    big = [x for r, d in zip(reps, shape) for x in (r, d)]
    b = lax.broadcast_in_dim(a, big, tuple(range(1, 2 * nd, 2)))
    return lax.reshape(b, [r * d for r, d in zip(reps, shape)])


def repeat(a: Any, repeats, axis: int | None = None, *, total_repeat_length: int | None = None):
    """Repeat each element `repeats` times (an int, or one count per element along `axis`; traced counts need a
    static `total_repeat_length`). With `total_repeat_length`, JAX's rule: the result is cut to that length, or
    filled out with the last element."""
    a = _arr(a)
    if axis is None:
        a, axis = ravel(a), 0
    av = aval_of(a)
    axis = _axis(axis, av.ndim, "repeat")
    if total_repeat_length is not None:
        return _repeat_total(a, repeats, axis, operator.index(total_repeat_length))
    if isinstance(repeats, Tracer):
        raise repeats._concretization_error("repeat")
    reps = np.asarray(repeats)
    if _dt.kind(reps.dtype) not in "iub" and reps.size:
        raise TypeError(f"repeat: repeats must be integers, got {reps.dtype}")
    reps = reps.astype(np.int64)
    if (reps < 0).any():
        raise ValueError("repeat: negative dimensions are not allowed")
    n = av.shape[axis]
    if reps.ndim == 0:
        r = int(reps)
        shape = av.shape[:axis + 1] + (r,) + av.shape[axis + 1:]
        dims = tuple(i if i <= axis else i + 1 for i in range(av.ndim))
        b = lax.broadcast_in_dim(a, shape, dims)
        return lax.reshape(b, av.shape[:axis] + (n * r,) + av.shape[axis + 1:])
    if reps.shape != (n,):
        raise ValueError(f"repeat: operands could not be broadcast together with shape ({n},) and {reps.shape}")
    idx = np.repeat(np.arange(n, dtype=np.int32), reps)
    from ._indexing import take
    return take(a, idx, axis=axis)


def _repeat_total(a, repeats, axis: int, total: int):
    """JAX's `repeat` with `total_repeat_length`: a 1 scattered at each element's start (starts past `total`
    dropped), the running count less one the gathered index."""
    from ._indexing import take
    from ._reductions import cumsum
    n = aval_of(a).shape[axis]
    if total < 0:
        raise ValueError(f"repeat: total_repeat_length must be non-negative, got {total}")
    if n == 0 or total == 0:  # (JAX: a zero-sized axis comes back as it is)
        return a if n == 0 else lax.slice_in_dim(a, 0, 0, axis=axis)
    if not isinstance(repeats, Tracer):
        reps = np.asarray(repeats)
        if _dt.kind(reps.dtype) not in "iub":
            raise TypeError(f"repeat: repeats must be integers, got {reps.dtype}")
        reps = np.broadcast_to(reps.astype(np.int64).ravel(), (n,))
        starts = np.concatenate([[0], np.cumsum(reps)[:-1]])
        marks = np.zeros(total, np.int64)
        np.add.at(marks, starts[starts < total], 1)
        return take(a, (np.cumsum(marks) - 1).astype(np.int32), axis=axis)
    reps = broadcast_to(lax.reshape(repeats, (aval_of(repeats).size,)), (n,))
    starts = cumsum(lax.concatenate([lax._convert_element_type(np.zeros(1), aval_of(reps).dtype),
                                     lax.slice_in_dim(reps, 0, n - 1)], 0))
    from ._creation import zeros
    marks = zeros(total, np.int32).at[starts].add(1, mode="drop")
    return take(a, cumsum(marks) - 1, axis=axis)


def flip(m: Any, axis=None):
    """Reverse the order of elements along `axis` (all axes when None)."""
    m = _arr(m)
    nd = aval_of(m).ndim
    axes = range(nd) if axis is None else [_axis(x, nd, "flip") for x in ((axis,) if isinstance(axis, int) else axis)]
    return lax.rev(m, sorted(axes))


def fliplr(m: Any):
    if aval_of(_arr(m)).ndim < 2:
        raise ValueError("fliplr: input must be >= 2-d.")
    return flip(m, 1)


def flipud(m: Any):
    if aval_of(_arr(m)).ndim < 1:
        raise ValueError("flipud: input must be >= 1-d.")
    return flip(m, 0)


def roll(a: Any, shift, axis=None):
    """Rotate elements by `shift` along `axis` (the flattened array when None); a traced shift by a dynamic slice."""
    a = _arr(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), aval_of(a).shape)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if isinstance(shift, Tracer) or (_is_array(shift) and not isinstance(shift, np.ndarray)):
        # A shift known only at run time (JAX's too; `tuple(shift)` of a 0-d tracer raised TypeError): each axis
        # a dynamic slice of the axis twice over, starting at n - (shift mod n)
        sh = ravel(asarray(shift))
        size = aval_of(sh).shape[0]
        if len(axes) == 1 and size > 1:  # (several shifts of one axis add up, as the static branch's and NumPy's)
            axes = axes * size
        elif size == 1 and len(axes) > 1:
            sh = broadcast_to(sh, (len(axes),))
        elif size != len(axes):
            raise ValueError("roll: 'shift' and 'axis' should be scalars or 1D sequences of the same length")
        for i, ax in enumerate(axes):
            ax = _axis(ax, aval_of(a).ndim, "roll")
            n = aval_of(a).shape[ax]
            if n:
                k = lax.rem(lax.add(lax.rem(sh[i], lax.full_like(sh[i], n)), lax.full_like(sh[i], n)),
                            lax.full_like(sh[i], n))
                a = lax.dynamic_slice_in_dim(lax.concatenate([a, a], ax), lax.sub(lax.full_like(k, n), k), n, ax)
        return a
    shifts = (shift,) if isinstance(shift, (int, np.integer)) else tuple(np.ravel(shift).tolist())
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError("roll: 'shift' and 'axis' should be scalars or 1D sequences of the same length")
    av = aval_of(a)
    for s, ax in zip(shifts, axes):
        ax = _axis(ax, av.ndim, "roll")
        n = av.shape[ax]
        if n == 0:
            continue
        k = int(s) % n
        if k:
            left, right = _split(a, [n - k], ax, "roll", even=False)
            a = lax.concatenate([right, left], ax)
    return a


_PAD_STATS = ("maximum", "minimum", "mean", "median")


def _pad_stats(a, pw, stat_length, mode: str):
    """JAX's `_pad_stats`: axis by axis, the statistic of the first/last `stat_length` values (all when None)
    repeated into the pads; integers rounded (half to even) and cast back."""
    from . import _extra, _reductions
    fn = {"maximum": _reductions.max, "minimum": _reductions.min, "mean": _reductions.mean,
          "median": _extra.median}[mode]
    nd = aval_of(a).ndim
    sl = None if stat_length is None else np.broadcast_to(np.asarray(stat_length), (nd, 2)).tolist()
    dt = aval_of(a).dtype
    for i in range(nd):
        n = aval_of(a).shape[i]
        if sl is None:
            before = after = fn(a, axis=i, keepdims=True)
        else:
            lb, la = sl[i]
            if lb == 0 or la == 0:
                raise ValueError("pad: stat_length of 0 yields no value for padding")
            lb, la = builtins.min(lb, n), builtins.min(la, n)
            before = fn(lax.slice_in_dim(a, 0, lb, axis=i), axis=i, keepdims=True)
            after = fn(lax.slice_in_dim(a, n - la, n, axis=i), axis=i, keepdims=True)
        if _dt.kind(dt) in "iu":
            before, after = _round(before), _round(after)
        before, after = (lax._convert_element_type(v, dt) if aval_of(v).dtype != dt else v for v in (before, after))
        lo, hi = pw[i]
        parts = [broadcast_to(before, aval_of(a).shape[:i] + (lo,) + aval_of(a).shape[i + 1:])] if lo else []
        parts.append(a)
        if hi:
            parts.append(broadcast_to(after, aval_of(a).shape[:i] + (hi,) + aval_of(a).shape[i + 1:]))
        a = lax.concatenate(parts, i) if len(parts) > 1 else a
    return a


def _padded_axes(a, pw):
    """(axis, low, high, length) of each axis `pw` pads (padding one axis leaves the others' lengths as they were);
    an empty one raises, as NumPy's."""
    for i, (lo, hi) in enumerate(pw):
        n = aval_of(a).shape[i]
        if lo == hi == 0:
            continue
        if n == 0:
            raise ValueError(f"pad: can't extend empty axis {i} using modes other than 'constant' or 'empty'")
        yield i, lo, hi, n


def _pad_odd(a, pw, mode: str):
    """JAX's (and NumPy's) odd reflection: axis by axis, chunks of at most the axis' length (less one for
    'reflect'), each reflected about the edge reached so far (2 * edge - chunk)."""
    from ._ufuncs import multiply, subtract
    for i, lo, hi, n in _padded_axes(a, pw):
        offset = 1 if (mode == "reflect" and n > 1) else 0
        for before, padding in ((True, lo), (False, hi)):
            size = aval_of(a).shape[i]
            edge = lax.slice_in_dim(a, 0, 1, axis=i) if before else lax.slice_in_dim(a, size - 1, size, axis=i)
            while padding > 0:
                cur = builtins.min(padding, n - offset)
                padding -= cur
                size = aval_of(a).shape[i]
                if before:
                    x = lax.slice_in_dim(a, offset, offset + cur, axis=i)
                else:
                    stop = size if (mode == "symmetric" or n == 1) else size - 1
                    x = lax.slice_in_dim(a, size - cur - offset, stop, axis=i)
                x = subtract(multiply(2, edge), flip(x, axis=i))
                if n > 1:
                    k = aval_of(x).shape[i]
                    edge = lax.slice_in_dim(x, 0, 1, axis=i) if before else lax.slice_in_dim(x, k - 1, k, axis=i)
                a = lax.concatenate([x, a] if before else [a, x], i)
    return a


def _ramp(start, edge, num: int, dt, axis: int):
    """`linspace(start, edge, num, endpoint=False, dtype=dt, axis=axis)`; for integers and an integral `start`
    exactly NumPy's floor(start + i * (edge - start) / num), in integer arithmetic (a float formula rounds 5.0 to
    4.999 and floors it to 4: JAX's ramp from 5 to 2 is 5, 3, 3 where NumPy's is 5, 4, 3)."""
    from ._creation import linspace
    from ._ufuncs import add, divide, floor, floor_divide, multiply, subtract
    if _dt.kind(dt) not in "iu":
        return linspace(start, edge, num, endpoint=False, dtype=dt, axis=axis)
    if num == 0:
        return lax.slice_in_dim(lax.expand_dims(edge, (axis,)), 0, 0, axis=axis)
    if not float(start).is_integer():  # (start * (num - i) + edge * i) / num: exact but for the one division
        fdt = _dt.default_float()
        i = lax.broadcasted_iota(fdt, aval_of(edge).shape[:axis] + (num,) + aval_of(edge).shape[axis:], axis)
        e = lax.expand_dims(lax._convert_element_type(edge, fdt), (axis,))
        return lax._convert_element_type(floor(divide(add(multiply(float(start), subtract(num, i)),
                                                          multiply(e, i)), num)), dt)
    # start + q i + floor(r i / num) for edge - start = q num + r, 0 <= r < num, with q and r from edge's and start's
    # own quotients (edge - start overflowed at the type's extremes): in `dt` (or the default int, if wider), whose
    # wrapping sums are exact as the result lies between start and edge
    w = dt if np.dtype(dt).itemsize >= np.dtype(_dt.default_int()).itemsize else _dt.default_int()
    qs, rs = divmod(int(start), num)
    e = lax._convert_element_type(edge, w)
    qe = floor_divide(e, num)
    t = add(subtract(e, multiply(qe, num)), num - rs)  # re - rs + num, in [1, 2 num)
    c = floor_divide(t, num)
    q, r = add(subtract(qe, np.asarray(qs, w)), subtract(c, 1)), subtract(t, multiply(c, num))
    i = lax.broadcasted_iota(w, aval_of(edge).shape[:axis] + (num,) + aval_of(edge).shape[axis:], axis)
    q, r = lax.expand_dims(q, (axis,)), lax.expand_dims(r, (axis,))
    out = add(np.asarray(int(start), w), add(multiply(q, i), floor_divide(multiply(r, i), num)))
    return lax._convert_element_type(out, dt)


def _pad_linear_ramp(a, pw, end_values):
    """JAX's linear ramp: from each end value to the edge (excluded), `linspace` in the array's dtype (integers
    rounded toward -inf)."""
    nd, dt = aval_of(a).ndim, aval_of(a).dtype
    ev = np.broadcast_to(np.asarray(end_values), (nd, 2))
    for i, lo, hi, n in _padded_axes(a, pw):
        first = lax.squeeze(lax.slice_in_dim(a, 0, 1, axis=i), (i,))
        last = lax.squeeze(lax.slice_in_dim(a, n - 1, n, axis=i), (i,))
        before = _ramp(ev[i, 0].item(), first, lo, dt, i)
        after = flip(_ramp(ev[i, 1].item(), last, hi, dt, i), axis=i)
        a = lax.concatenate([before, a, after], i)
    return a


@_composite
def pad(array: Any, pad_width, mode: str = "constant", *, constant_values=0, stat_length=None, end_values=0,
        reflect_type: str = "even"):
    """Pad `array`; modes 'constant', 'empty' (zeros, as JAX's), 'edge', 'wrap', 'reflect', 'symmetric' (with
    `reflect_type`), 'linear_ramp' (with `end_values`), 'maximum', 'minimum', 'mean', 'median' (with
    `stat_length`) (pad_width must be static)."""
    a = _arr(array)
    av = aval_of(a)
    pw = np.asarray(pad_width)
    if _dt.kind(pw.dtype) not in "iu":
        raise TypeError("pad: `pad_width` must be of integral type.")
    pw = np.broadcast_to(pw, (av.ndim, 2)).tolist() if pw.size else [[0, 0]] * av.ndim
    if builtins.any(p < 0 for pair in pw for p in pair):
        raise ValueError("pad: index can't contain negative values")
    if mode == "constant":
        cv = np.asarray(constant_values) if not _is_array(constant_values) else None
        if cv is not None and cv.ndim == 0:
            (c,) = _promote("pad", constant_values)  # weak scalar
            c = lax._convert_element_type(c, av.dtype) if aval_of(c).dtype != av.dtype or aval_of(c).weak_type else c
            return lax.pad(a, c, [(lo, hi, 0) for lo, hi in pw])
        if cv is None:
            raise NotImplementedError("pad: traced constant_values are not supported; pass a static number")
        cv = np.broadcast_to(cv, (av.ndim, 2))
        # (concatenated blocks, not chained lax.pads: IREE fails to compile two complex pads in a row)
        for ax, (lo, hi) in enumerate(pw):
            shape = aval_of(a).shape
            parts = [broadcast_to(lax._convert_element_type(np.asarray(cv[ax, k]), av.dtype),
                                  shape[:ax] + (int(w),) + shape[ax + 1:]) for k, w in ((0, lo), (1, hi))]
            a = lax.concatenate([parts[0], a, parts[1]], ax)
        return a
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
    if reflect_type == "odd" and mode in ("reflect", "symmetric"):
        return _pad_odd(a, pw, mode)
    if mode == "linear_ramp":
        return _pad_linear_ramp(a, pw, end_values)
    if mode == "empty":  # (JAX's: zeros)
        return lax.pad(a, lax._convert_element_type(np.asarray(0), av.dtype), [(lo, hi, 0) for lo, hi in pw])
    if mode in _PAD_STATS:
        return _pad_stats(a, pw, stat_length, mode)
    if mode not in ("edge", "wrap", "reflect", "symmetric"):
        raise NotImplementedError(f"pad: mode {mode!r} is not implemented (constant, empty, edge, wrap, reflect, "
                                  f"symmetric, linear_ramp, maximum, minimum, mean, median)")
    for ax, lo, hi, n in _padded_axes(a, pw):
        idx = np.arange(-lo, n + hi)
        if mode == "edge":
            idx = np.clip(idx, 0, n - 1)
        elif mode == "wrap":
            idx = idx % n
        elif mode == "reflect":
            period = 2 * (n - 1) if n > 1 else 1
            idx = np.abs(idx) % period
            idx = np.where(idx >= n, period - idx, idx) if n > 1 else np.zeros_like(idx)
        else:  # symmetric
            period = 2 * n
            idx = idx % period
            idx = np.where(idx >= n, period - 1 - idx, idx)
        from ._indexing import take
        a = take(a, idx.astype(np.int32), axis=ax)
    return a
