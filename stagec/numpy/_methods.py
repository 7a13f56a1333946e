"""NumPy operators and methods of every array type (tracers and `stagec.Array`), installed on `core.ArrayOps`
when `stagec.numpy` is imported: core defines the array types, this layer gives them NumPy's behaviour."""
from __future__ import annotations

from types import ModuleType

from .. import dtypes as _dt
from .. import lax
from ..array import Array
from ..core import aval_of, install_array_methods
from ._arrayapi import dlpack, dlpack_device, to_device
from ._indexing import _getitem, _IndexUpdateHelper

_BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide", "floordiv": "floor_divide",
           "mod": "remainder", "pow": "power", "matmul": "matmul", "and": "bitwise_and", "or": "bitwise_or",
           "xor": "bitwise_xor", "lshift": "left_shift", "rshift": "right_shift"}
_COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
            "ge": "greater_equal"}


def install(snp: ModuleType) -> None:
    """Install `snp`'s public functions (eager results are Arrays) as the array types' operators and methods."""
    install_array_methods(methods(snp))


def methods(s: ModuleType) -> dict:
    """Operator and method name -> implementation, from the public `stagec.numpy` functions `s`."""
    out = {}
    for op, name in {**_BINARY, **_COMPARE}.items():
        fn = getattr(s, name)
        out[f"__{op}__"] = lambda self, o, fn=fn: fn(self, o)
        if op in _BINARY:
            out[f"__r{op}__"] = lambda self, o, fn=fn: fn(o, self)
            out[f"__i{op}__"] = _inplace(op, fn)

    def reshape(self, *shape, order="C"):
        return s.reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape, order=order)

    def transpose(self, *axes):
        return s.transpose(self, axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else (axes or None))

    def passed(name: str):
        # JAX's method signatures are its functions' after the array (axis, dtype, out, keepdims, initial, where,
        # ddof, stable, descending, ...), and so are stagec.numpy's: passed on as given (`out` raises there)
        fn = getattr(s, name)
        return lambda self, *args, **kwargs: fn(self, *args, **kwargs)

    out.update({
        "__array_namespace__": lambda self, /, *, api_version=None: s,  # the Array API's entry point
        "__setitem__": _setitem, "__dlpack__": dlpack, "__dlpack_device__": dlpack_device,
        "to_device": to_device, "mT": property(s.matrix_transpose),
        "__invert__": s.invert, "__neg__": s.negative, "__abs__": s.abs, "__getitem__": _getitem,
        "T": property(s.transpose), "at": property(_IndexUpdateHelper),
        "astype": s.astype, "reshape": reshape, "transpose": transpose,
        **{name: passed(name) for name in ("sum", "mean", "prod", "max", "min", "any", "all", "argmax", "argmin",
                                           "var", "std", "cumsum", "cumprod", "sort", "argsort", "round", "ptp")},
        "__divmod__": lambda self, o: s.divmod(self, o), "__rdivmod__": lambda self, o: s.divmod(o, self),
        "dot": s.dot, "ravel": s.ravel, "flatten": s.ravel, "swapaxes": s.swapaxes,
        "squeeze": lambda self, axis=None: s.squeeze(self, axis),
        "clip": lambda self, min=None, max=None: s.clip(self, min, max),
        "take": lambda self, indices, axis=None: s.take(self, indices, axis),
        "repeat": lambda self, repeats, axis=None: s.repeat(self, repeats, axis),
        "conj": s.conj, "conjugate": s.conjugate, "real": property(s.real), "imag": property(s.imag),
        "diagonal": lambda self, offset=0, axis1=0, axis2=1: s.diagonal(self, offset, axis1, axis2),
        "trace": lambda self, offset=0, axis1=0, axis2=1, dtype=None: s.trace(self, offset, axis1, axis2, dtype),
        "nonzero": lambda self, *, size=None, fill_value=None: s.nonzero(self, size=size, fill_value=fill_value),
        "compress": lambda self, condition, axis=None, *, out=None, size=None, fill_value=0: s.compress(
            condition, self, axis, out=out, size=size, fill_value=fill_value),
        "searchsorted": lambda self, v, side="left", sorter=None: s.searchsorted(self, v, side=side, sorter=sorter),
        "itemsize": property(lambda self: aval_of(self).dtype.itemsize),
        "nbytes": property(lambda self: aval_of(self).size * aval_of(self).dtype.itemsize),
        "copy": lambda self: s.array(self, copy=True),  # (an Array's own `copy` comes first: a new buffer)
    })

    def _round(self, ndigits=None):
        """Python's `round(x)`: to an integer where `ndigits` is None (as for a float), as JAX's."""
        out = s.round(self, ndigits or 0)
        return out if ndigits is not None else out.astype(int)

    def _view(self, dtype=None, type=None):
        """The bits of `self` read as `dtype` (JAX's `Array.view`): the last axis changes length where the widths
        differ."""
        if type is not None:
            raise NotImplementedError("Array.view(type=...) is not supported")
        if dtype is None:
            return self
        a, dt = aval_of(self), _dt.canonicalize(dtype)
        if a.dtype == dt:
            return self
        if a.dtype.kind in "bc" or dt.kind in "bc":
            raise NotImplementedError(f"Array.view from {a.dtype} to {dt}: boolean and complex views are not "
                                      f"supported (use astype, or real/imag)")
        nin, nout = a.dtype.itemsize, dt.itemsize
        if not a.shape:
            if nin != nout:
                raise ValueError("view() of a 0d array is only supported if the itemsize is unchanged.")
            return lax.bitcast_convert_type(self, dt)
        if (a.shape[-1] * nin) % nout:
            raise ValueError("When changing to a larger dtype, its size must be a divisor of the total size in bytes "
                             "of the last axis of the array.")
        if nin < nout:
            return lax.bitcast_convert_type(s.reshape(self, (*a.shape[:-1], a.shape[-1] * nin // nout, nout // nin)),
                                              dt)
        out = lax.bitcast_convert_type(self, dt)
        return s.reshape(out, (*a.shape[:-1], a.shape[-1] * nin // nout)) if nin > nout else out

    out.update({"__round__": _round, "view": _view})
    return out


def _inplace(op: str, fn):
    """`x op= y` as the Array API says and JAX does: a new array bound to the name `x` (other references to the
    old array do not change), of x's dtype and shape (an operation that would change either raises)."""
    def iop(self, other):
        out = fn(self, other)
        a, b = aval_of(self), aval_of(out)
        if b.dtype != a.dtype:
            raise TypeError(f"x {_SYMBOL.get(op, op)}= y: the result's dtype {b.dtype} differs from x's {a.dtype} "
                            f"(an in-place operator keeps x's dtype; write x = x {_SYMBOL.get(op, op)} y)")
        if b.shape != a.shape:
            raise ValueError(f"x {_SYMBOL.get(op, op)}= y: the result's shape {b.shape} differs from x's {a.shape} "
                             f"(an in-place operator keeps x's shape)")
        return out
    return iop


_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
           "matmul": "@", "and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>"}


def _setitem(self, key, value):
    """`x[key] = value` on a concrete Array: x takes a new buffer holding `x.at[key].set(value)` (slices of x
    taken before are copies, unchanged). Traced arrays are immutable, as in JAX (docs/design.md says why)."""
    if not isinstance(self, Array):
        raise TypeError(f"{type(self).__name__} does not support item assignment: arrays being traced are "
                        f"immutable. Instead of x[idx] = y, use x = x.at[idx].set(y)")
    self._rebind(_IndexUpdateHelper(self)[key].set(value))
