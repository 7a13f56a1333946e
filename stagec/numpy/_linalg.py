"""Linear algebra: dot, matmul, vdot, inner, outer, tensordot, einsum — all `dot_general`."""
from __future__ import annotations

import builtins
import operator
import string
from typing import Any

import numpy as np

from .. import lax
from ..array import Array
from ..config import SettingsCache, config
from ..core import TracerBase, aval_of, eager_plan, tracing_anywhere
from ..primitives.dot import canonicalize_precision, dot_general_p
from ._base import _arr, _axis, _composite, _is_array, _promote, asarray, broadcast_shapes, broadcast_to
from ._ufuncs import conjugate, multiply


class ShapeMismatch(TypeError, ValueError):
    """Contracted dimensions of different sizes: JAX raises TypeError, NumPy ValueError; either handler catches it."""


_PRODUCT = (((1,), (0,)), ((), ()))  # dot_general's dimension numbers of a product of two matrices
# (lhs aval, rhs aval) -> (eager plan, dot_general's params) of a product of two matrices (under the settings:
# `default_matmul_precision`)
_products = SettingsCache(256)


def matmul(a, b, /, *, precision=None, preferred_element_type=None):
    """Matrix product with NumPy's rules: 1-D operands are promoted, leading dims broadcast."""
    if type(a) is Array and type(b) is Array and not tracing_anywhere[0] and precision is None and \
            preferred_element_type is None:  # (eager: two matrices of one dtype are one `dot_general`, as below)
        key = (a.aval, b.aval)
        found = _products.get(key)
        if found is None:
            sa, sb = key
            if sa.ndim == sb.ndim == 2 and sa.dtype == sb.dtype and not sa.weak_type and not sb.weak_type and \
                    sa.shape[1] == sb.shape[0]:
                params = {  # (in `lax.dot_general`'s order: one eager plan for both)
                    "dimension_numbers": _PRODUCT, "precision": canonicalize_precision(config.default_matmul_precision),
                    "preferred_element_type": None}
                run = eager_plan(dot_general_p, key, params)
                if run is not None:
                    found = _products.put(key, (run, params))
        if found is not None:  # (what `dot_general_p.bind` would run: the runtime's plan of this signature)
            run, params = found
            return run([a, b], params)[0]
    a, b = _promote("matmul", _arr(a), _arr(b))
    a, b = (x if _is_array(x) else asarray(x) for x in (a, b))
    sa, sb = aval_of(a).shape, aval_of(b).shape
    if not sa or not sb:
        raise ValueError("matmul: input operand does not have enough dimensions (scalars are not allowed)")
    va, vb = len(sa) == 1, len(sb) == 1
    if va:
        a, sa = lax.reshape(a, (1,) + sa), (1,) + sa
    if vb:
        b, sb = lax.reshape(b, sb + (1,)), sb + (1,)
    if sa[-1] != sb[-2]:
        raise ShapeMismatch(f"matmul: input operand 1 has a mismatch in its core dimension 0 (size {sb[-2]} is "
                         f"different from {sa[-1]}); shapes {aval_of(a).shape} and {aval_of(b).shape}")
    out = _batched_product(a, b, sa, sb, precision, preferred_element_type)
    if not (va or vb):
        return out
    shape = list(aval_of(out).shape)
    if vb:
        shape.pop(-1)
    if va:
        shape.pop(-2 if not vb else -1)
    return lax.reshape(out, shape)


def _batched_product(a, b, sa: tuple, sb: tuple, precision, preferred_element_type):
    """a @ b of matrices with leading (batch) dims, broadcast as NumPy's, in one `dot_general` and nothing copied: a
    dim of both (equal, above 1) is a batch dim of the product; one of a's alone (the other's missing or 1) a free dim
    of a, likewise of b; a 1 facing a larger dim is dropped. The product's dims (its batch dims, a's free dims and
    rows, b's free dims and columns) are then put in NumPy's order. (Broadcasting a weight of (d, f) across a
    (b, t, d) operand's batch copied it b times, and its gradient was b products summed.)"""
    broadcast_shapes(sa[:-2], sb[:-2], fname="matmul")  # (NumPy's error where they do not broadcast)
    n = max(len(sa), len(sb)) - 2
    pa, pb = (None,) * (n + 2 - len(sa)) + sa[:-2], (None,) * (n + 2 - len(sb)) + sb[:-2]  # (aligned to the right)
    both, only_a, only_b = [], [], []  # (batch positions by the operand whose dim the product takes)
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x is not None and y is not None and x == y != 1:
            both.append(i)
        elif x is not None and y in (None, 1):  # (a 1 facing a 1 stays a's)
            only_a.append(i)
        else:
            only_b.append(i)
    keep_a = [i for i in range(n) if pa[i] is not None and i not in only_b]  # (the others are 1s: dropped)
    keep_b = [i for i in range(n) if pb[i] is not None and i not in only_a]
    if len(keep_a) < len(sa) - 2:
        a = lax.reshape(a, tuple(pa[i] for i in keep_a) + sa[-2:])
    if len(keep_b) < len(sb) - 2:
        b = lax.reshape(b, tuple(pb[i] for i in keep_b) + sb[-2:])
    out = lax.dot_general(a, b, (((len(keep_a) + 1,), (len(keep_b),)),
                                 (tuple(map(keep_a.index, both)), tuple(map(keep_b.index, both)))),
                          precision=precision, preferred_element_type=preferred_element_type)
    made = both + only_a + [n] + only_b + [n + 1]  # (the output position of each of the product's dims)
    perm = tuple(sorted(range(n + 2), key=made.__getitem__))
    return out if perm == tuple(range(n + 2)) else lax.transpose(out, perm)


def dot(a, b, /, *, precision=None, preferred_element_type=None):
    """NumPy's `dot`: scalar product, matrix product, or contraction of a's last axis with b's second-last."""
    a, b = _promote("dot", _arr(a), _arr(b))
    na, nb = aval_of(a).ndim, aval_of(b).ndim
    if na == 0 or nb == 0:
        return multiply(a, b)
    if nb <= 2:
        return matmul(a, b, precision=precision, preferred_element_type=preferred_element_type)
    a, b = (x if _is_array(x) else asarray(x) for x in (a, b))
    if aval_of(a).shape[-1] != aval_of(b).shape[-2]:
        raise ValueError(f"dot: shapes {aval_of(a).shape} and {aval_of(b).shape} not aligned")
    return lax.dot_general(a, b, (((na - 1,), (nb - 2,)), ((), ())), precision=precision,
                           preferred_element_type=preferred_element_type)


def vdot(a: Any, b: Any, /, *, precision=None, preferred_element_type=None):
    """Dot product of the flattened arrays (the first conjugated)."""
    a, b = _promote("vdot", _arr(a), _arr(b))
    a, b = lax.reshape(conjugate(a), (aval_of(a).size,)), lax.reshape(b, (aval_of(b).size,))
    if aval_of(a).shape != aval_of(b).shape:
        raise ValueError(f"vdot: cannot take the dot product of {aval_of(a).size} and {aval_of(b).size} elements")
    return lax.dot_general(a, b, (((0,), (0,)), ((), ())), precision=precision,
                           preferred_element_type=preferred_element_type)


def inner(a: Any, b: Any, /, *, precision=None, preferred_element_type=None):
    """Contract the last axes of `a` and `b` (scalars multiply)."""
    a, b = _promote("inner", _arr(a), _arr(b))
    na, nb = aval_of(a).ndim, aval_of(b).ndim
    if na == 0 or nb == 0:
        return multiply(a, b)
    if aval_of(a).shape[-1] != aval_of(b).shape[-1]:
        raise ValueError(f"inner: shapes {aval_of(a).shape} and {aval_of(b).shape} not aligned")
    return lax.dot_general(a, b, (((na - 1,), (nb - 1,)), ((), ())), precision=precision,
                           preferred_element_type=preferred_element_type)


@_composite
def outer(a: Any, b: Any, out=None):
    """Outer product of the flattened arrays."""
    a, b = _promote("outer", _arr(a), _arr(b))
    a, b = lax.reshape(a, (aval_of(a).size,)), lax.reshape(b, (aval_of(b).size,))
    return multiply(lax.reshape(a, (aval_of(a).size, 1)), b)


def tensordot(a: Any, b: Any, axes=2, *, precision=None, preferred_element_type=None):
    """Sum products over `axes` (an int: the last N of a with the first N of b; or a pair of sequences)."""
    a, b = _promote("tensordot", _arr(a), _arr(b))
    sa, sb = aval_of(a).shape, aval_of(b).shape
    if isinstance(axes, (int, np.integer)):
        n = operator.index(axes)
        if n < 0 or n > len(sa) or n > len(sb):
            raise ValueError(f"tensordot: axes={n} is invalid for shapes {sa} and {sb}")
        ax_a, ax_b = tuple(range(len(sa) - n, len(sa))), tuple(range(n))
    else:
        try:
            ax_a, ax_b = axes
        except (TypeError, ValueError):
            raise ValueError("tensordot: axes must be an integer or a pair of sequences") from None
        ax_a = (ax_a,) if isinstance(ax_a, (int, np.integer)) else tuple(ax_a)
        ax_b = (ax_b,) if isinstance(ax_b, (int, np.integer)) else tuple(ax_b)
        if len(ax_a) != len(ax_b):
            raise ValueError("tensordot: shape-mismatch for sum (axes of unequal length)")
        ax_a = tuple(_axis(x, len(sa), "tensordot") for x in ax_a)
        ax_b = tuple(_axis(x, len(sb), "tensordot") for x in ax_b)
    for i, j in zip(ax_a, ax_b):
        if sa[i] != sb[j]:
            raise ValueError(f"tensordot: shape-mismatch for sum ({sa[i]} != {sb[j]} on axes {i} and {j})")
    a, b = (x if _is_array(x) else asarray(x) for x in (a, b))
    return lax.dot_general(a, b, ((ax_a, ax_b), ((), ())), precision=precision,
                           preferred_element_type=preferred_element_type)


# ---------------------------------------------------------------- einsum


def _label(c: str) -> bool:
    """Whether `c` can label a dimension: any character but `.,->` and whitespace, as JAX's (opt_einsum's) parser
    takes them (JAX's training cookbook writes "bsd,3dkh->bs3kh"); NumPy's takes letters only."""
    return c not in ".,->" and not c.isspace()


def _parse_einsum(subscripts: str, shapes: list[tuple]) -> tuple[list[str], str]:
    """Input label strings (ellipses expanded to fresh uppercase-free letters) and the output labels."""
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        lhs, out = subscripts.split("->")
        explicit = True
    else:
        lhs, out, explicit = subscripts, "", False
    ins = lhs.split(",")
    if len(ins) != len(shapes):
        raise ValueError(f"einsum: {len(ins)} operand subscripts for {len(shapes)} operands")
    used = set(subscripts)
    spare = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in used]
    ell_rank = 0
    for spec, shape in zip(ins, shapes):
        if "..." in spec:
            ell_rank = builtins.max(ell_rank, len(shape) - (len(spec) - 3))
    ell = "".join(spare[:ell_rank])
    labels = []
    for spec, shape in zip(ins, shapes):
        if "." in spec.replace("...", ""):
            raise ValueError(f"einsum: invalid subscript {spec!r}")
        if "..." in spec:
            k = len(shape) - (len(spec) - 3)
            if k < 0:
                raise ValueError(f"einsum: operand has fewer dimensions than subscripts {spec!r}")
            spec = spec.replace("...", ell[ell_rank - k:] if k else "")
        if len(spec) != len(shape):
            raise ValueError(f"einsum: operand subscripts {spec!r} do not match its {len(shape)} dimensions")
        for c in spec:
            if not _label(c):
                raise ValueError(f"einsum: invalid subscript character {c!r}")
        labels.append(spec)
    if explicit:
        out = out.replace("...", ell)
        for c in out:
            if not _label(c) or c not in "".join(labels):
                raise ValueError(f"einsum: output subscript {c!r} does not appear in the inputs")
        if len(set(out)) != len(out):
            raise ValueError(f"einsum: output subscript string {out!r} repeats a label")
    else:
        counts = {}
        for c in "".join(labels):
            counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    return labels, out


def _diagonal_reduce(x, labels: str) -> tuple[Any, str]:
    """Take the diagonal for labels repeated within one operand ('ii' -> 'i')."""
    while True:
        dup = next((c for c in labels if labels.count(c) > 1), None)
        if dup is None:
            return x, labels
        i = labels.index(dup)
        j = labels.index(dup, i + 1)
        shape = aval_of(x).shape
        n = shape[i]
        eye = lax.eq(lax.broadcasted_iota(np.int32, (n, n), 0), lax.broadcasted_iota(np.int32, (n, n), 1))
        mask = lax.broadcast_in_dim(eye, shape, (i, j))
        x = lax.select(mask, x, lax.full_like(x, 0))
        x = lax.reduce_sum(x, (j,))
        labels = labels[:j] + labels[j + 1:]


def einsum(subscripts: str, *operands, optimize=None, precision=None, preferred_element_type=None):
    """Einstein summation, contracting operands pairwise (left to right) with `dot_general`.

    Labels shared by both operands of a step and still needed later become batch dimensions; labels
    needed nowhere else are summed first; repeated labels within an operand take its diagonal."""
    if not isinstance(subscripts, str):
        raise NotImplementedError("einsum: only the subscripts-string form is supported")
    if not operands:
        raise ValueError("einsum: no operands given")
    ops = _promote("einsum", *[_arr(o) for o in operands])
    ops = [o if _is_array(o) else asarray(o) for o in ops]
    labels, out = _parse_einsum(subscripts, [aval_of(o).shape for o in ops])
    # Sizes per label, broadcasting size-1 dimensions (NumPy allows that for ellipsis dims).
    sizes: dict[str, int] = {}
    for x, lab in zip(ops, labels):
        for c, d in zip(lab, aval_of(x).shape):
            if c not in sizes or sizes[c] == 1:
                sizes[c] = d
            elif d not in (1, sizes[c]):
                raise ValueError(f"einsum: size of label {c!r} is {sizes[c]} in one operand and {d} in another")
    items = []
    for x, lab in zip(ops, labels):
        x, lab = _diagonal_reduce(x, lab)
        target = tuple(sizes[c] for c in lab)
        if aval_of(x).shape != target:
            x = broadcast_to(x, target)
        items.append((x, lab))

    def needed_after(k: int) -> set:
        return set(out).union(*[set(l) for _, l in items[k + 1:]])

    def sum_unneeded(x, lab, keep: set):
        axes = [i for i, c in enumerate(lab) if c not in keep]
        if axes:
            x = lax.reduce_sum(x, axes)
            lab = "".join(c for c in lab if c in keep)
        return x, lab

    x, lab = items[0]
    x, lab = sum_unneeded(x, lab, needed_after(0))
    for k in range(1, len(items)):
        y, ylab = items[k]
        keep = needed_after(k)
        y, ylab = sum_unneeded(y, ylab, keep | set(lab))
        x, lab = sum_unneeded(x, lab, keep | set(ylab))
        shared = [c for c in lab if c in ylab]
        batch = [c for c in shared if c in keep]
        contract = [c for c in shared if c not in keep]
        dn = ((tuple(lab.index(c) for c in contract), tuple(ylab.index(c) for c in contract)),
              (tuple(lab.index(c) for c in batch), tuple(ylab.index(c) for c in batch)))
        x = lax.dot_general(x, y, dn, precision=precision, preferred_element_type=preferred_element_type)
        lab = "".join(batch) + "".join(c for c in lab if c not in shared) + "".join(c for c in ylab if c not in shared)
    x, lab = sum_unneeded(x, lab, set(out))
    if preferred_element_type is not None and len(items) == 1:
        x = lax._convert_element_type(x, preferred_element_type)
    return lax.transpose(x, [lab.index(c) for c in out])


# ---------------------------------------------------------------- diagonals


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The `offset` diagonal over `axis1`, `axis2`, as the last axis (a strided slice of the flattened pair)."""
    a = _arr(a)
    a = a if _is_array(a) else asarray(a)
    nd = aval_of(a).ndim
    if nd < 2:
        raise ValueError(f"diagonal requires an array of at least two dimensions, got shape {aval_of(a).shape}")
    i, j = _axis(axis1, nd, "diagonal"), _axis(axis2, nd, "diagonal")
    if i == j:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same")
    rest = [k for k in range(nd) if k not in (i, j)]
    a = lax.transpose(a, rest + [i, j])
    shape = aval_of(a).shape
    n, m = shape[-2:]
    offset = operator.index(offset)
    length = builtins.max(0, builtins.min(n, m - offset) if offset >= 0 else builtins.min(n + offset, m))
    flat = lax.reshape(a, shape[:-2] + (n * m,))
    if length == 0:
        return lax.slice(flat, (0,) * (nd - 1), shape[:-2] + (0,))
    start = offset if offset >= 0 else -offset * m
    return lax.slice(flat, (0,) * (nd - 2) + (start,), shape[:-2] + (start + (length - 1) * (m + 1) + 1,),
                     (1,) * (nd - 2) + (m + 1,))


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, out=None):
    """Sum along the `offset` diagonal over `axis1`, `axis2`; a traced `offset` (as JAX's) masks the pair."""
    from ._reductions import sum
    from ._ufuncs import where
    if isinstance(offset, TracerBase):
        a = _arr(a)
        a = a if _is_array(a) else asarray(a)
        nd = aval_of(a).ndim
        i, j = _axis(axis1, nd, "trace"), _axis(axis2, nd, "trace")
        a = lax.transpose(a, [k for k in range(nd) if k not in (i, j)] + [i, j])
        n, m = aval_of(a).shape[-2:]
        on = lax.broadcasted_iota(np.int32, (n, m), 1) - lax.broadcasted_iota(np.int32, (n, m), 0) == offset
        return sum(where(on, a, 0), axis=(-2, -1), dtype=dtype)
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)
