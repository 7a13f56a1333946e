"""`stagec.numpy`: the NumPy API over stagec primitives (broadcasting, JAX's type promotion).

Import as `import stagec.numpy as snp`. Outside `jit` every call runs eagerly, one compiled
primitive at a time; inside `jit` the same code is traced. Both go through the same primitives.
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import Sequence

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..array import Array, device_put
from ..core import Const, Tracer, aval_of, current_trace, to_numpy_constant

ndarray = Array
pi, e, inf, nan, newaxis = np.pi, np.e, np.inf, np.nan, None
bool_, int8, int16, int32, int64 = np.bool_, np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64, complex64, complex128 = np.float16, np.float32, np.float64, np.complex64, np.complex128
dtype, finfo, iinfo, issubdtype = np.dtype, np.finfo, np.iinfo, np.issubdtype
integer, floating, number, inexact, complexfloating = np.integer, np.floating, np.number, np.inexact, np.complexfloating


# ---------------------------------------------------------------- promotion and broadcasting


def _is_array(x) -> bool:
    return isinstance(x, (Tracer, Array))


def _check_operand(fname: str, x) -> None:
    try:
        aval_of(x)
    except TypeError:
        raise TypeError(f"{fname}: argument of type {type(x).__name__} is not an array or scalar") from None


def result_type(*args) -> np.dtype:
    """The dtype `args` promote to, JAX's rules (Python scalars are weak)."""
    return _dt.result_type(*[(a.dtype, a.weak_type) for a in map(_aval_or_dtype, args)])[0]


def _aval_or_dtype(x):
    try:
        return aval_of(x)
    except TypeError:
        from ..core import ShapedArray
        return ShapedArray((), _dt.canonicalize(x))


def _promote(fname: str, *args):
    """Cast operands to their common dtype; the result is weak only if every operand is."""
    for a in args:
        _check_operand(fname, a)
    avals = [aval_of(a) for a in args]
    dt, weak = _dt.result_type(*[(a.dtype, a.weak_type) for a in avals])
    return [lax.convert_element_type(a, dt, weak) if (av.dtype, av.weak_type) != (dt, weak) else a
            for a, av in zip(args, avals)]


def _to_float(fname: str, *args):
    """Promote, then move integer/bool operands to the default float (as `jnp.exp(int)` does)."""
    args = _promote(fname, *args)
    av = aval_of(args[0])
    if av.dtype.kind in "biu":
        args = [lax.convert_element_type(a, _dt.default_float(), av.weak_type) for a in args]
    return args


def broadcast_shapes(*shapes, fname: str = "broadcast_shapes") -> tuple:
    nd = builtins.max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-nd, 0):
        dims = {s[i] for s in shapes if len(s) >= -i} - {1}
        if len(dims) > 1:
            raise ValueError(f"{fname}: shapes {', '.join(map(str, shapes))} are incompatible for broadcasting")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def broadcast_to(x, shape: Sequence[int], *, _fname: str = "broadcast_to"):
    av = aval_of(x)
    shape = tuple(int(d) for d in shape)
    if av.shape == shape:
        return x
    if len(shape) < av.ndim or broadcast_shapes(av.shape, shape, fname=_fname) != shape:
        raise ValueError(f"{_fname}: cannot broadcast shape {av.shape} to {shape}")
    lead = len(shape) - av.ndim
    squeezed = [i for i, d in enumerate(av.shape) if d == 1 and shape[lead + i] != 1]
    if squeezed:
        x = lax.reshape(x, [d for i, d in enumerate(av.shape) if i not in squeezed])
    dims = [lead + i for i in range(av.ndim) if i not in squeezed]
    return lax.broadcast_in_dim(x, shape, dims)


def _broadcast(fname: str, *args):
    shapes = [aval_of(a).shape for a in args]
    shape = broadcast_shapes(*shapes, fname=fname)
    return [broadcast_to(a, shape, _fname=fname) for a in args]


def _elementwise(fname: str, prim_fn, *args, to_float: bool = False):
    args = (_to_float if to_float else _promote)(fname, *args)
    return prim_fn(*_broadcast(fname, *args))


def _binary(fname: str, prim_fn, to_float: bool = False):
    def f(x1, x2, /):
        return _elementwise(fname, prim_fn, x1, x2, to_float=to_float)
    f.__name__ = fname
    f.__doc__ = f"Elementwise `{fname}` with NumPy broadcasting and JAX type promotion."
    return f


def _unary(fname: str, prim_fn, to_float: bool = False):
    def f(x, /):
        return _elementwise(fname, prim_fn, x, to_float=to_float)
    f.__name__ = fname
    f.__doc__ = f"Elementwise `{fname}`."
    return f


# ---------------------------------------------------------------- elementwise

add = _binary("add", lax.add)
subtract = _binary("subtract", lax.sub)
multiply = _binary("multiply", lax.mul)
maximum = _binary("maximum", lax.max)
minimum = _binary("minimum", lax.min)
equal = _binary("equal", lax.eq)
not_equal = _binary("not_equal", lax.ne)
less = _binary("less", lax.lt)
less_equal = _binary("less_equal", lax.le)
greater = _binary("greater", lax.gt)
greater_equal = _binary("greater_equal", lax.ge)
bitwise_and = _binary("bitwise_and", lax.bitwise_and)
bitwise_or = _binary("bitwise_or", lax.bitwise_or)
bitwise_xor = _binary("bitwise_xor", lax.bitwise_xor)
arctan2 = _binary("arctan2", lax.atan2, to_float=True)
true_divide = divide = _binary("true_divide", lax.div, to_float=True)

negative = _unary("negative", lax.neg)
sign = _unary("sign", lax.sign)
exp = _unary("exp", lax.exp, to_float=True)
expm1 = _unary("expm1", lax.expm1, to_float=True)
log = _unary("log", lax.log, to_float=True)
log1p = _unary("log1p", lax.log1p, to_float=True)
sin = _unary("sin", lax.sin, to_float=True)
cos = _unary("cos", lax.cos, to_float=True)
tan = _unary("tan", lax.tan, to_float=True)
tanh = _unary("tanh", lax.tanh, to_float=True)
sqrt = _unary("sqrt", lax.sqrt, to_float=True)
cbrt = _unary("cbrt", lax.cbrt, to_float=True)
isfinite = _unary("isfinite", lax.is_finite, to_float=True)


def abs(x, /):
    """Elementwise absolute value (`abs` of a bool or unsigned array is itself)."""
    (x,) = _promote("abs", x)
    return x if aval_of(x).dtype.kind in "bu" else lax.abs(x)


absolute = abs


def floor(x, /):
    (x,) = _promote("floor", x)
    return x if aval_of(x).dtype.kind in "biu" else lax.floor(x)


def ceil(x, /):
    (x,) = _promote("ceil", x)
    return x if aval_of(x).dtype.kind in "biu" else lax.ceil(x)


def invert(x, /):
    """Bitwise not (logical not for booleans)."""
    (x,) = _promote("invert", x)
    return lax.bitwise_not(x)


bitwise_not = invert


def logical_not(x, /):
    return lax.bitwise_not(astype(x, bool))


def floor_divide(x1, x2, /):
    """`x1 // x2`, rounding toward minus infinity as NumPy does."""
    x1, x2 = _broadcast("floor_divide", *_promote("floor_divide", x1, x2))
    kind = aval_of(x1).dtype.kind
    if kind == "f":
        return lax.floor(lax.div(x1, x2))
    if kind == "u":
        return lax.div(x1, x2)
    if kind == "b":
        raise TypeError("floor_divide is not defined for boolean arrays")
    q = lax.div(x1, x2)
    zero = lax.full_like(x1, 0)
    adjust = lax.bitwise_and(lax.ne(lax.lt(x1, zero), lax.lt(x2, zero)), lax.ne(lax.rem(x1, x2), zero))
    return lax.select(adjust, lax.sub(q, lax.full_like(q, 1)), q)


def remainder(x1, x2, /):
    """`x1 % x2` with the sign of `x2`, as NumPy does."""
    x1, x2 = _broadcast("remainder", *_promote("remainder", x1, x2))
    if aval_of(x1).dtype.kind in "ub":
        return lax.rem(x1, x2)
    r = lax.rem(x1, x2)
    zero = lax.full_like(r, 0)
    fix = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero), lax.lt(x2, zero)))
    return lax.select(fix, lax.add(r, x2), r)


mod = remainder


def power(x1, x2, /):
    """`x1 ** x2`; a static integer exponent multiplies (exact, and what `x ** 2` usually means)."""
    if isinstance(x2, (int, np.integer)) and not isinstance(x2, bool):
        (x1,) = _promote("power", x1)
        if aval_of(x1).dtype.kind in "iu" and x2 < 0:
            raise ValueError("Integers to negative integer powers are not allowed.")
        return lax.integer_pow(x1, int(x2))
    x1, x2 = _promote("power", x1, x2)
    if aval_of(x1).dtype.kind in "biu":
        raise NotImplementedError("power with an integer array exponent is not implemented yet; pass a Python "
                                  "int exponent or use floating-point operands")
    return lax.pow(*_broadcast("power", x1, x2))


def square(x, /):
    return power(x, 2)


def reciprocal(x, /):
    return true_divide(1, x)


def logical_and(x1, x2, /):
    return bitwise_and(astype(x1, bool), astype(x2, bool))


def logical_or(x1, x2, /):
    return bitwise_or(astype(x1, bool), astype(x2, bool))


def where(condition, x=None, y=None, /):
    """`x` where `condition` else `y`, broadcast together. The one-argument form needs a static size."""
    if x is None or y is None:
        raise NotImplementedError("snp.where(condition) with one argument has a data-dependent shape; pass x and y")
    condition = astype(condition, bool) if aval_of(condition).dtype != np.bool_ else condition
    x, y = _promote("where", x, y)
    c, x, y = _broadcast("where", condition, x, y)
    return lax.select(c, x, y)


def isnan(x, /):
    return not_equal(x, x)


def clip(a, a_min=None, a_max=None):
    if a_min is not None:
        a = maximum(a, a_min)
    if a_max is not None:
        a = minimum(a, a_max)
    return a


# ---------------------------------------------------------------- creation


def _shape_tuple(shape) -> tuple:
    if isinstance(shape, Tracer):
        raise shape._concretization_error("shape")
    try:
        return (operator.index(shape),)
    except TypeError:
        return tuple(operator.index(d) for d in shape)


def _creation_dtype(dtype, default, fname: str) -> np.dtype:
    return _dt.canonicalize(dtype, warn_from=fname) if dtype is not None else default


def full(shape, fill_value, dtype=None):
    """An array of `shape` filled with `fill_value` (traced `fill_value` allowed)."""
    shape = _shape_tuple(shape)
    dt = aval_of(fill_value).dtype if dtype is None else _dt.canonicalize(dtype, warn_from="full")
    if _is_array(fill_value):
        return broadcast_to(astype(fill_value, dt), shape)
    value = np.array(fill_value, dtype=dt)
    if current_trace() is None:
        return device_put(np.broadcast_to(value, shape))
    from ..core import ShapedArray
    return lax.broadcast_in_dim(Const(value, ShapedArray((), dt)), shape, ())


def zeros(shape, dtype=None):
    return full(shape, 0, _creation_dtype(dtype, _dt.default_float(), "zeros"))


def ones(shape, dtype=None):
    return full(shape, 1, _creation_dtype(dtype, _dt.default_float(), "ones"))


def empty(shape, dtype=None):
    return zeros(shape, dtype)


def zeros_like(a, dtype=None):
    return full(aval_of(a).shape, 0, dtype or aval_of(a).dtype)


def ones_like(a, dtype=None):
    return full(aval_of(a).shape, 1, dtype or aval_of(a).dtype)


def full_like(a, fill_value, dtype=None):
    return full(aval_of(a).shape, fill_value, dtype or aval_of(a).dtype)


def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values; `start`, `stop`, `step` must be concrete (static) numbers."""
    for v in (start, stop, step):
        if isinstance(v, Tracer):
            raise v._concretization_error("arange")
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    vals = [v for v in (start, stop, step)]
    is_float = builtins.any(isinstance(v, float) or (hasattr(v, "dtype") and np.dtype(v.dtype).kind == "f")
                            for v in vals)
    dt = _creation_dtype(dtype, _dt.default_float() if is_float else _dt.default_int(), "arange")
    host = np.arange(start, stop, step).astype(dt)
    n = host.shape[0]
    if current_trace() is None:
        return device_put(host)
    # Inside a trace: an iota instead of a constant of n elements.
    idx = lax.iota(dt, n)
    if step != 1:
        idx = lax.mul(idx, lax.full_like(idx, step))
    if start != 0:
        idx = lax.add(idx, lax.full_like(idx, start))
    return idx


def linspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None):
    dt = _creation_dtype(dtype, _dt.default_float(), "linspace")
    return device_put(np.linspace(start, stop, num, endpoint=endpoint).astype(dt)) if current_trace() is None \
        else asarray(np.linspace(start, stop, num, endpoint=endpoint).astype(dt))


def array(object, dtype=None, copy: bool = True):
    """An array from nested lists, scalars, NumPy arrays or stagec arrays (tracers are stacked)."""
    from ..tree_util import tree_leaves
    if _is_array(object):
        return astype(object, dtype) if dtype is not None else object
    if isinstance(object, (list, tuple)) and builtins.any(_is_array(l) for l in tree_leaves(object)):
        return stack([array(o, dtype) for o in object])
    if isinstance(object, (str, bytes)) or object is None:
        raise TypeError(f"array: cannot make an array from {type(object).__name__}")
    host = np.asarray(object)
    if host.dtype.kind in "OSUVMm":
        raise TypeError(f"array: cannot make an array from {type(object).__name__} (NumPy gives dtype {host.dtype})")
    dt = _dt.canonicalize(dtype, warn_from="array") if dtype is not None else _host_default_dtype(object, host)
    return device_put(host.astype(dt))


def _host_default_dtype(obj, host: np.ndarray) -> np.dtype:
    if isinstance(obj, (np.ndarray, np.generic)):
        return _dt.canonicalize(host.dtype)
    return {"b": np.dtype(bool), "i": _dt.default_int(), "u": _dt.default_int(), "f": _dt.default_float(),
            "c": _dt.default_complex()}[host.dtype.kind]


def asarray(a, dtype=None):
    return array(a, dtype=dtype, copy=False)


def astype(x, dtype):
    """Cast to `dtype` (64-bit types narrow to 32-bit, with a warning, unless x64 is enabled)."""
    dt = _dt.canonicalize(dtype, warn_from="astype")
    return lax.convert_element_type(x, dt, weak_type=False)


# ---------------------------------------------------------------- shapes


def _axis(axis: int, ndim: int, fname: str) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{fname}: axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def reshape(a, newshape=None, order: str = "C", *, shape=None):
    """Reshape (C order); one dimension may be -1."""
    if order != "C":
        raise NotImplementedError(f"reshape: only order='C' is supported, not {order!r}")
    newshape = _shape_tuple(shape if shape is not None else newshape)
    size = aval_of(a).size
    if newshape.count(-1) > 1:
        raise ValueError("reshape: can only specify one unknown dimension")
    if -1 in newshape:
        known = int(np.prod([d for d in newshape if d != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of shape {aval_of(a).shape} (size {size}) into shape {newshape}")
        newshape = tuple(size // known if d == -1 else d for d in newshape)
    return lax.reshape(a, newshape)


def ravel(a):
    return reshape(a, (-1,))


def transpose(a, axes=None):
    nd = aval_of(a).ndim
    axes = tuple(reversed(range(nd))) if axes is None else tuple(_axis(x, nd, "transpose") for x in axes)
    return lax.transpose(a, axes)


def squeeze(a, axis=None):
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
    shape = list(aval_of(a).shape)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    nd = len(shape) + len(axes)
    for x in sorted(_axis(x, nd, "expand_dims") for x in axes):
        shape.insert(x, 1)
    return lax.reshape(a, shape)


def concatenate(arrays, axis: int = 0):
    arrays = _promote("concatenate", *arrays)
    nd = aval_of(arrays[0]).ndim
    if nd == 0:
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
    return lax.concatenate([a if _is_array(a) else asarray(a) for a in arrays], _axis(axis, nd, "concatenate"))


def stack(arrays, axis: int = 0):
    arrays = _promote("stack", *arrays)
    shapes = {aval_of(a).shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError(f"stack: all input arrays must have the same shape, got {sorted(shapes)}")
    nd = aval_of(arrays[0]).ndim + 1
    ax = _axis(axis, nd, "stack")
    return concatenate([expand_dims(a if _is_array(a) else asarray(a), ax) for a in arrays], ax)


# ---------------------------------------------------------------- reductions


def _axes(axis, ndim: int, fname: str) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(_axis(a, ndim, fname) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{fname}: duplicate value in 'axis'")
        return axes
    return (_axis(axis, ndim, fname),)


def _keep(x, shape, axes, keepdims):
    return lax.reshape(x, [1 if i in axes else d for i, d in enumerate(shape)]) if keepdims else x


def _reduction(fname, reducer, identity_ok=True, upcast_int=False):
    def f(a, axis=None, dtype=None, keepdims=False):
        (a,) = _promote(fname, a)
        av = aval_of(a)
        axes = _axes(axis, av.ndim, fname)
        if dtype is not None:
            a = astype(a, dtype)
        elif upcast_int and av.dtype.kind in "bi" and (av.dtype == np.bool_ or av.dtype.itemsize < _dt.default_int().itemsize):
            a = lax.convert_element_type(a, _dt.default_int())
        elif upcast_int and av.dtype.kind == "u" and av.dtype.itemsize < _dt.default_int().itemsize:
            a = lax.convert_element_type(a, np.uint64 if _dt.default_int() == np.int64 else np.uint32)
        elif av.weak_type:
            a = lax.convert_element_type(a, av.dtype, weak_type=False)
        if not identity_ok and builtins.any(av.shape[i] == 0 for i in axes):
            raise ValueError(f"zero-size array to reduction operation {fname} which has no identity")
        return _keep(reducer(a, axes), av.shape, axes, keepdims)
    f.__name__ = fname
    f.__doc__ = f"`{fname}` over `axis` (int, tuple or None), optionally keeping reduced dims."
    return f


sum = _reduction("sum", lax.reduce_sum, upcast_int=True)
prod = _reduction("prod", lax.reduce_prod, upcast_int=True)
_max = _reduction("max", lax.reduce_max, identity_ok=False)
_min = _reduction("min", lax.reduce_min, identity_ok=False)


def max(a, axis=None, out=None, keepdims=False):
    return _max(a, axis=axis, keepdims=keepdims)


def min(a, axis=None, out=None, keepdims=False):
    return _min(a, axis=axis, keepdims=keepdims)


amax, amin = max, min


def any(a, axis=None, keepdims=False):
    return _reduction("any", lax.reduce_or)(astype(a, bool), axis=axis, keepdims=keepdims)


def all(a, axis=None, keepdims=False):
    return _reduction("all", lax.reduce_and)(astype(a, bool), axis=axis, keepdims=keepdims)


def mean(a, axis=None, dtype=None, keepdims=False):
    """Arithmetic mean; integer inputs give the default float, as in JAX."""
    av = aval_of(a)
    axes = _axes(axis, av.ndim, "mean")
    n = int(np.prod([av.shape[i] for i in axes], dtype=np.int64))
    if dtype is None:
        dtype = av.dtype if av.dtype.kind in "fc" else _dt.default_float()
    s = sum(astype(a, dtype), axis=axis, keepdims=keepdims)
    return true_divide(s, n)


# ---------------------------------------------------------------- linear algebra


def matmul(a, b, /):
    """Matrix product with NumPy's rules: 1-D operands are promoted, leading dims broadcast."""
    a, b = _promote("matmul", a, b)
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
        raise ValueError(f"matmul: input operand 1 has a mismatch in its core dimension 0 (size {sb[-2]} is "
                         f"different from {sa[-1]}); shapes {aval_of(a).shape} and {aval_of(b).shape}")
    batch = broadcast_shapes(sa[:-2], sb[:-2], fname="matmul")
    a = broadcast_to(a, batch + sa[-2:])
    b = broadcast_to(b, batch + sb[-2:])
    nb = len(batch)
    out = lax.dot_general(a, b, (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))))
    shape = list(aval_of(out).shape)
    if vb:
        shape.pop(-1)
    if va:
        shape.pop(-2 if not vb else -1)
    return lax.reshape(out, shape)


def dot(a, b, /):
    """NumPy's `dot`: scalar product, matrix product, or contraction of a's last axis with b's second-last."""
    a, b = _promote("dot", a, b)
    na, nb = aval_of(a).ndim, aval_of(b).ndim
    if na == 0 or nb == 0:
        return multiply(a, b)
    if nb <= 2:
        return matmul(a, b)
    a, b = (x if _is_array(x) else asarray(x) for x in (a, b))
    if aval_of(a).shape[-1] != aval_of(b).shape[-2]:
        raise ValueError(f"dot: shapes {aval_of(a).shape} and {aval_of(b).shape} not aligned")
    return lax.dot_general(a, b, (((na - 1,), (nb - 2,)), ((), ())))


# ---------------------------------------------------------------- indexing


def _getitem(x, idx):
    """Basic indexing: integers, slices (any step), None, Ellipsis, and traced integer scalars."""
    av = aval_of(x)
    idx = idx if isinstance(idx, tuple) else (idx,)
    for i in idx:
        if _is_array(i) and (aval_of(i).shape != () or aval_of(i).dtype.kind not in "iu"):
            raise NotImplementedError(f"indexing with an array of shape {aval_of(i).shape} and dtype "
                                      f"{aval_of(i).dtype} (advanced or boolean indexing) is not implemented yet")
        if isinstance(i, (list, np.ndarray)):
            raise NotImplementedError("indexing with a list or NumPy array (advanced indexing) is not implemented yet")
    n_ell = builtins.sum(1 for i in idx if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = builtins.sum(1 for i in idx if i is not None and i is not Ellipsis)
    if consumed > av.ndim:
        raise IndexError(f"too many indices for array: array is {av.ndim}-dimensional, but {consumed} were indexed")
    if n_ell:
        k = idx.index(Ellipsis)
        idx = idx[:k] + (slice(None),) * (av.ndim - consumed) + idx[k + 1:]
    else:
        idx = idx + (slice(None),) * (av.ndim - consumed)

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
            i = where(less(i, 0), add(i, cur[d]), i)
            st[d], sizes[d] = i, 1
        x = lax.dynamic_slice(x, st, sizes)
    return lax.reshape(x, out_shape) if aval_of(x).shape != tuple(out_shape) else x
