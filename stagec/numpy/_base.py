"""Shared machinery of `stagec.numpy`: promotion, broadcasting, axes, conversion to arrays."""
from __future__ import annotations

import builtins
import math
import operator
import functools
from typing import Callable, Sequence

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..array import Array, device_put, to_buffers
from ..backend import Device, get_backend
from ..config import SettingsCache
from ..core import (COMPOSITE, Const, ShapedArray, Tracer, TracerBase, aval_of, composite, composite_runner,
                    current_trace, eagerly, to_numpy_constant,
                    tracing_anywhere)
from ..tree_util import tree_leaves

try:  # (without `np.count_nonzero`'s dispatch: ~0.15 us of a ~1 us check on a few elements)
    from numpy._core._multiarray_umath import count_nonzero as _count_nonzero
except ImportError:
    _count_nonzero = np.count_nonzero

_HOST_BROADCAST = 1 << 16  # elements: a scalar constant broadcast to more is broadcast by the operation's module


def _fresh(x):
    """A copy of a concrete Array as a new Array object on the same device buffer: item assignment replaces an
    Array's buffer and never writes into it, so sharing it is a copy (no transfer). Tracers pass through."""
    if type(x) is not Array or x.is_deleted():
        return x
    return x._share()


def _is_array(x) -> bool:
    return isinstance(x, (TracerBase, Array))


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
        return ShapedArray((), _dt.canonicalize(x))


def _promote(fname: str, *args):
    """Cast operands to their common dtype; the result is weak only if every operand is."""
    avals = []
    for a in args:
        if type(a) in _SCALARS:  # (its aval made once: `aval_of` builds one, ~1.2 us)
            key = (type(a), _dt.config.x64_enabled)
            av = _scalar_avals.get(key)
            if av is None:
                av = _scalar_avals[key] = aval_of(a)
            avals.append(av)
            continue
        try:
            avals.append(aval_of(a))
        except TypeError:
            _check_operand(fname, a)
    dt = avals[0].dtype
    if not avals[0].weak_type and all(av.dtype == dt and not av.weak_type for av in avals):
        return list(args)  # (the common case, nothing to cast: ~2 us of an eager `x * y`)
    pairs = tuple([(a.dtype, a.weak_type) for a in avals])
    key = (pairs, _dt.config.x64_enabled)
    found = _result_types.get(key)
    if found is None:
        found = _result_types[key] = _dt.result_type(*pairs)
    dt, weak = found
    return [(a if (av.dtype, av.weak_type) == (dt, weak) else _scalar_const(a, dt, weak)
             if type(a) in _SCALARS else lax._convert_element_type(a, dt, weak)) for a, av in zip(args, avals)]


_result_types: dict = {}  # ((dtype, weak) pairs, x64) -> `dtypes.result_type` of them (a few dozen at most)
_SCALARS = (bool, int, float, complex)
_scalar_avals: dict = {}  # (Python scalar type, x64) -> its (weak) aval
_consts: dict = {}  # (type, value, dtype, weak) -> the Python scalar as a Const (`0.9 * a`: ~5 us of ~15 us)


def _promoted_arrays(promote, fname: str, *xs) -> list:
    """`promote(fname, ...)` (`_promote` or `_to_float`) of `xs`, Python scalars promoting weakly (int8 beside 1
    stays int8, as JAX's `promote_dtypes`), returned as arrays or tracers, never a host `Const` (whose operators
    functions built on the result would lack)."""
    out = promote(fname, *[x if type(x) in _SCALARS else asarray(x) for x in xs])
    return [asarray(v) if type(v) is Const else v for v in out]


def _signs(x) -> tuple:
    """The sign bits of a Python scalar's parts (what `==` does not tell apart: -0.0 from 0.0)."""
    if type(x) is float:
        return (math.copysign(1.0, x),)
    if type(x) is complex:
        return (math.copysign(1.0, x.real), math.copysign(1.0, x.imag))
    return ()


def _scalar_const(x, dtype, weak: bool):
    """`lax._convert_element_type` of a Python scalar (a host constant), made once per value."""
    # (the signs too: 0.0 == -0.0, and they hash alike, but `x * -0.0` is not `x * 0.0`)
    key = (type(x), x, _signs(x), dtype, weak)
    c = _consts.get(key)
    if c is None:
        c = lax._convert_element_type(x, dtype, weak)
        if type(c) is not Const:
            return c
        c.value.flags.writeable = False  # (shared by the calls that use it)
        if len(_consts) >= 256:
            _consts.clear()
        _consts[key] = c
    return c


def inexact_type(*xs) -> np.dtype:
    """The type JAX computes an inexact function of `xs` in: theirs promoted, integers and bools as
    `dtypes.to_inexact` (int32 in float32 under x64 too; `result_type(x, 1.0)` gave float64 there)."""
    return _dt.to_inexact(result_type(*xs))


def _to_float(fname: str, *args, to: Callable = _dt.to_inexact):
    """Promote, then move integer/bool operands to JAX's inexact type for them (`dtypes.to_inexact`: float32 for
    bool and integers up to 32 bits, float64 for 64-bit ones under x64; as `jnp.exp(int)` does); `to` maps the
    promoted dtype to another (JAX's `rint` and `angle` take the default float)."""
    out = _promote(fname, *args)
    av = aval_of(out[0])
    if _dt.kind(av.dtype) in "biu":  # (a Python int to the float itself: `uint32 / -3` is -1/3, as JAX's and
        f = to(av.dtype)              # NumPy's, where promoting it to uint32 first made it 4294967293)
        out = [_scalar_const(a, f, av.weak_type) if type(a) in _SCALARS else
               lax._convert_element_type(o, f, av.weak_type) for a, o in zip(args, out)]
    return out


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
    if av.shape == shape:  # (a tuple already: matmul's operands, ~0.4 us each)
        return x
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


_broadcasts: dict = {}  # (scalar Const, shape) -> its broadcast: the Consts `_scalar_const` keeps recur
_shapes: dict = {}  # operands' shapes -> the shape they broadcast to


def _broadcast_const(c: Const, shape: tuple) -> Const:
    key = (c, shape)
    b = _broadcasts.get(key)
    if b is None:
        b = Const(np.broadcast_to(c.value, shape), c.aval.update(shape=shape))
        if len(_broadcasts) >= 256:
            _broadcasts.clear()
        _broadcasts[key] = b
    return b


def _broadcast(fname: str, *args):
    shapes = [aval_of(a).shape for a in args]
    if all(s == shapes[0] for s in shapes):
        return list(args)
    if any(type(a) is Const and not s for a, s in zip(args, shapes)) and current_trace() is None and \
            _dt.config._values["eager_tiering"] != "never":  # (the dict: `config.eager_tiering` takes ~0.6 us)
        # eager, a scalar constant: its broadcast made on the host, as its NumPy rule (`exact`) would: a read-only
        # view (with `config.eager_tiering` "never", every operation runs its kernel)
        key = tuple(shapes)
        shape = _shapes.get(key)
        if shape is None:
            shape = broadcast_shapes(*shapes, fname=fname)
            if len(_shapes) >= 256:
                _shapes.clear()
            _shapes[key] = shape
        if shape and math.prod(shape) <= _HOST_BROADCAST:
            args = [_broadcast_const(a, shape) if type(a) is Const and not s else a for a, s in zip(args, shapes)]
            shapes = [aval_of(a).shape for a in args]
            if all(s == shape for s in shapes):
                return args
    shape = broadcast_shapes(*shapes, fname=fname)
    return [broadcast_to(a, shape, _fname=fname) for a in args]


def _kept(a, promoted, out):
    """How later eager calls of one signature get operand `a`'s final form `out`: None (`a` itself), a constant (a
    scalar promoted and broadcast on the host: `out`), a shape (an Array converted or broadcast, or a scalar whose
    broadcast is not made on the host: past `_HOST_BROADCAST` elements, or with `eager_tiering` "never"; the call
    then runs as a composite, `_broadcasting`), or () (the whole plan is redone on each call)."""
    if out is a:
        return None
    if type(out) is Const:
        return out
    if type(out) is Array and (type(a) is Array or type(promoted) is Const and not aval_of(promoted).shape):
        return out.aval.shape
    return ()


def _elementwise(fname: str, prim_fn, *args, to_float: bool = False):
    if not tracing_anywhere[0]:  # eager: what promotion and broadcasting do, decided once per signature
        key = [prim_fn, to_float]
        for a in args:
            t = type(a)
            if t is Array:
                key.append(a.aval)
            elif t is int or t is bool or (t is float and a == a):  # (not NaN: never equal to itself)
                key.append(t)
                key.append(a)
                if not a and t is float:  # (0.0 == -0.0: the sign too)
                    key.append(math.copysign(1.0, a))
            else:
                break
        else:
            key = tuple(key)
            subs = _eager_operands.get(key)
            if subs is None:
                promoted = (_to_float if to_float else _promote)(fname, *args)
                out = _broadcast(fname, *promoted)
                subs = tuple([_kept(a, p, o) for a, p, o in zip(args, promoted, out)])
                if not all(s is None or type(s) is Const or s for s in subs):
                    subs = ()
                elif any(type(s) is tuple for s in subs):
                    # an Array converted or broadcast (or a scalar past `_HOST_BROADCAST`): promotion, broadcast and
                    # the operation run as one composite on every call, this one too (NumPy rules read the broadcast
                    # operand as it is, `composites._views`; a mid-size call is one module from its first call:
                    # op by op once, then the module, gave exp of 100K int32 other bits on its first call)
                    subs = _broadcasting(fname, prim_fn, to_float)
                _eager_operands.put(key, subs)
                if type(subs) is tuple:
                    return prim_fn(*out)
            if subs:
                if type(subs) is not tuple:  # (`_broadcasting`'s function, run as a composite)
                    run = composite_runner()
                    return subs(*args) if run is None else run(subs, args, {})
                return prim_fn(*[a if s is None else s for a, s in zip(args, subs)])  # (None or a host constant)
    args = (_to_float if to_float else _promote)(fname, *args)
    return prim_fn(*_broadcast(fname, *args))


# (prim_fn, to_float, avals and Python scalars) -> per operand, None or its Const (or the composite function of the
# call: `_broadcasting`), under the settings (x64, eager_tiering, ...)
_eager_operands = SettingsCache(256)
_broadcasts_of: dict = {}  # (fname, prim_fn, to_float) -> `_broadcasting`'s function


def _broadcasting(fname: str, prim_fn, to_float: bool) -> Callable:
    """The function an eager call of `_elementwise` with an Array operand to convert or broadcast runs as a
    composite: promotion, broadcasting and the operation (one function per operation: the composites' signatures
    key on it). Op by op, a (100, 1000) - (100, 1) float32 broadcast the column (a dispatch) before subtracting:
    92 us; as a composite NumPy's broadcasting reads it: 40 (docs/log.md, 2026-12-02, forty-fifth session)."""
    key = (fname, prim_fn, to_float)
    f = _broadcasts_of.get(key)
    if f is None:
        def f(*args):
            args = (_to_float if to_float else _promote)(fname, *args)
            return prim_fn(*_broadcast(fname, *args))
        f.__name__ = f.__qualname__ = fname
        _broadcasts_of[key] = f
    return f


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


def _shape_tuple(shape, negative_ok: bool = False) -> tuple:
    if isinstance(shape, Tracer):
        raise shape._concretization_error("shape")
    try:
        dims = (operator.index(shape),)
    except TypeError:
        dims = tuple(operator.index(d) for d in shape)
    if not negative_ok and builtins.any(d < 0 for d in dims):
        raise ValueError(f"negative dimensions are not allowed: shape {dims}")
    return dims


def _creation_dtype(dtype, default, fname: str) -> np.dtype:
    return _dt.canonicalize(dtype, warn_from=fname) if dtype is not None else default


def array(object, dtype=None, copy: bool = True):
    """An array from nested lists, scalars, NumPy arrays or stagec arrays (tracers are stacked)."""
    if _is_array(object):
        out = astype(object, dtype) if dtype is not None else object
        return _fresh(out) if copy and out is object else out
    if isinstance(object, (list, tuple)) and builtins.any(_is_array(l) for l in tree_leaves(object)):
        from ._shapes import stack
        return stack([array(o, dtype) for o in object])
    if isinstance(object, Const):  # a host operand that _promote cast (folded on the host)
        object = object.value
    if isinstance(object, (str, bytes)) or object is None:
        raise TypeError(f"array: cannot make an array from {type(object).__name__}")
    host = np.asarray(object)
    if _dt.kind(host.dtype) in "OSUVMm":
        raise TypeError(f"array: cannot make an array from {type(object).__name__} (NumPy gives dtype {host.dtype})")
    dt = _dt.canonicalize(dtype, warn_from="array") if dtype is not None else _host_default_dtype(object, host)
    if not isinstance(object, (np.ndarray, np.generic)) and _dt.kind(host.dtype) in "iu" and _dt.kind(dt) in "iu":
        info = np.iinfo(dt)
        if host.size and (host.min() < info.min or host.max() > info.max):  # as jit does for a Python int
            bad = host.max() if host.max() > info.max else host.min()
            raise OverflowError(f"Python int {bad} is too large for {dt}")
    if dtype is None and type(object) in (int, float, complex):  # a Python number: weakly typed, as JAX's
        backend, aval = get_backend(), ShapedArray((), dt, weak_type=True)  # (x_f16 * asarray(2.0) stays float16)
        return Array(to_buffers([host.astype(dt)], [aval], backend)[0], aval, backend)
    return device_put(host.astype(dt))


def _host_default_dtype(obj, host: np.ndarray) -> np.dtype:
    if isinstance(obj, (np.ndarray, np.generic)):
        return _dt.canonicalize(host.dtype)
    return {"b": np.dtype(bool), "i": _dt.default_int(), "u": _dt.default_int(), "f": _dt.default_float(),
            "c": _dt.default_complex()}[_dt.kind(host.dtype)]


def asarray(a, dtype=None, order=None, *, device=None, copy=None):
    """`a` as an array (the Array API's signature). copy=True always makes a new buffer; copy=False raises
    ValueError where a stagec array would need a copy (a dtype change). Host data is always uploaded, as every
    array lives in an IREE buffer: copy=False does not refuse it (as in JAX)."""
    if order not in (None, "C", "K", "A"):
        raise NotImplementedError(f"asarray: only C order is supported, not order={order!r}")
    if copy is False and _is_array(a) and dtype is not None and _dt.canonicalize(dtype) != aval_of(a).dtype:
        raise ValueError(f"asarray: copy=False, but converting {aval_of(a).dtype} to {np.dtype(dtype)} needs a copy")
    return place(array(a, dtype=dtype, copy=bool(copy)), device, "asarray")


def _device(device, fname: str) -> Device | None:
    """`device` checked: None, a stagec Device, or a backend name ('cpu', 'vulkan', 'cuda')."""
    if device is None or isinstance(device, Device):
        return device
    if isinstance(device, str):
        return get_backend(device).devices[0]
    raise TypeError(f"{fname}: device must be a stagec Device (stagec.devices()) or a backend name, got "
                    f"{type(device).__name__}")


def place(x, device, fname: str):
    """`x` on `device` (None: where it is). Under a trace the device is checked and placement left to the
    caller of the traced function (as `jax.numpy`'s `device=` under `jit`)."""
    dev = _device(device, fname)
    if dev is None or current_trace() is not None or not isinstance(x, Array):
        return x
    return x if x.device is dev else device_put(x, dev)


def astype(x, dtype, /, *, copy: bool = True, device=None):
    """Cast to `dtype` (64-bit types narrow to 32-bit, with a warning, unless x64 is enabled). copy=False
    returns `x` itself when it already has that dtype."""
    dt = _dt.canonicalize(dtype, warn_from="astype")
    if not copy and _is_array(x) and aval_of(x).dtype == dt and not aval_of(x).weak_type:
        return place(x, device, "astype")
    out = lax._convert_element_type(x, dt, weak_type=False)
    return place(_fresh(out) if out is x else out, device, "astype")


def _axis(axis: int, ndim: int, fname: str) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(f"{fname}: axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


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


def _arr(x):
    """An operand for lax: arrays, NumPy values and Python scalars pass; lists and tuples become arrays."""
    if isinstance(x, (list, tuple)):
        return asarray(x)
    _check_operand("stagec.numpy", x)
    return x


def _as_output(x):
    """Outside a trace, a result that is still a host value (an operand passed through unchanged, or a
    constant folded on the host) becomes a device `Array`, as every `stagec.numpy` result is."""
    if isinstance(x, (Array, TracerBase)):
        return x
    if isinstance(x, (list, tuple)):
        vals = [_as_output(v) for v in x]
        return type(x)(*vals) if hasattr(x, "_fields") else type(x)(vals)
    if isinstance(x, (Const, np.ndarray, np.generic)) or type(x) in (bool, int, float, complex):
        av = aval_of(x)
        v = np.array(to_numpy_constant(x, av), copy=True)  # (never a view of the caller's array)
        if v.nbytes > (1 << 20):
            return Array(get_backend().put(v), av, get_backend())
        v.flags.writeable = False
        return Array.on_host(v, av, get_backend())
    return x


def _api(fn):
    """Wrap a public function so that its eager results are always `Array`s."""
    import functools

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        out = fn(*args, **kwargs)
        return out if current_trace() is not None else _as_output(out)
    return wrapped


_stager: Callable | None = None


def set_stager(fn: Callable) -> None:
    """Register `jit` (the API layer does, at import): eager calls of `_staged` functions then compile as one
    module each instead of one module per operation, as `jax.numpy.linalg`'s functions are jitted."""
    global _stager
    _stager = fn


def _staged(*static: str, eager: Callable | None = None):
    """Run the decorated function under `jit` (statics: the parameters that are Python values) when eager. `eager`:
    where given, `eager(*args, **kwargs)` first, which answers an eager call whose jitted module it can compute
    exactly (the same bits, by the same host code: `linalg`'s LAPACK calls) or gives None (then the module runs)."""
    def deco(fn):
        cache = []

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            trace = current_trace()
            if trace is not None and trace.purpose == COMPOSITE:  # (an eager composite would plan its equations
                # one by one, where this eager call runs them as one module: other bits; it runs op by op instead)
                raise NotImplementedError(f"{fn.__name__} runs as one module eagerly, not in an eager composite")
            if trace is not None or _stager is None:
                return fn(*args, **kwargs)
            if eager is not None:
                out = eager(*args, **kwargs)
                if out is not None:
                    return out
            if not cache:
                cache.append(_stager(fn, static_argnames=static))
            args = [asarray(a) if isinstance(a, (list, tuple)) else a for a in args]
            return cache[0](*args, **kwargs)
        return wrapped
    return deco


# The marker and its runner's registration live in core, below lax (whose `top_k` is one): `composite` there.
_composite = composite


def value_sized(fn: Callable) -> Callable:
    """`fn`, whose result's length depends on its inputs' values (without `size=`), run now where it is called under
    jit on concrete inputs only: a closed-over constant's result is a constant of the trace, as `nonzero`'s is."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if kwargs.get("size") is None and tracing_anywhere[0] and current_trace() is not None and not any(
                isinstance(x, TracerBase) for x in tree_leaves((args, kwargs))):
            with eagerly():
                return fn(*args, **kwargs)
        return fn(*args, **kwargs)
    return wrapped
