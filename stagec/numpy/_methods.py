"""NumPy operators and methods of every array type (tracers and `stagec.Array`), installed on `core.ArrayOps`
when `stagec.numpy` is imported: core defines the array types, this layer gives them NumPy's behaviour."""
from __future__ import annotations

from types import ModuleType

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


def _no_out(out, name: str) -> bool:
    if out is not None:
        raise NotImplementedError(f"Array.{name}(out=...): stagec arrays are immutable (use the result)")
    return True


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

    def reduction(name: str, dtype: bool = True, ddof: bool = False):
        # (`out=None` as JAX's methods take it: NumPy's `np.sum(x, ...)` calls `x.sum(..., out=None)`)
        fn = getattr(s, name)
        if ddof:
            def method(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
                return fn(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims) if _no_out(out, name) else None
        elif dtype:
            def method(self, axis=None, dtype=None, out=None, keepdims=False):
                return fn(self, axis=axis, dtype=dtype, keepdims=keepdims) if _no_out(out, name) else None
        else:
            def method(self, axis=None, out=None, keepdims=False):
                return fn(self, axis=axis, keepdims=keepdims) if _no_out(out, name) else None
        return method

    out.update({
        "__array_namespace__": lambda self, /, *, api_version=None: s,  # the Array API's entry point
        "__setitem__": _setitem, "__dlpack__": dlpack, "__dlpack_device__": dlpack_device,
        "to_device": to_device, "mT": property(s.matrix_transpose),
        "__invert__": s.invert, "__neg__": s.negative, "__abs__": s.abs, "__getitem__": _getitem,
        "T": property(s.transpose), "at": property(_IndexUpdateHelper),
        "astype": s.astype, "reshape": reshape, "transpose": transpose,
        "sum": reduction("sum"), "mean": reduction("mean"), "prod": reduction("prod"),
        "max": reduction("max", dtype=False), "min": reduction("min", dtype=False),
        "any": reduction("any", dtype=False), "all": reduction("all", dtype=False),
        "argmax": reduction("argmax", dtype=False), "argmin": reduction("argmin", dtype=False),
        "var": reduction("var", ddof=True), "std": reduction("std", ddof=True),
        "cumsum": lambda self, axis=None, dtype=None: s.cumsum(self, axis=axis, dtype=dtype),
        "cumprod": lambda self, axis=None, dtype=None: s.cumprod(self, axis=axis, dtype=dtype),
        "dot": s.dot, "ravel": s.ravel, "flatten": s.ravel, "swapaxes": s.swapaxes,
        "squeeze": lambda self, axis=None: s.squeeze(self, axis),
        "clip": lambda self, min=None, max=None: s.clip(self, min, max),
        "round": lambda self, decimals=0: s.round(self, decimals),
        "sort": lambda self, axis=-1: s.sort(self, axis),
        "argsort": lambda self, axis=-1: s.argsort(self, axis),
        "take": lambda self, indices, axis=None: s.take(self, indices, axis),
        "repeat": lambda self, repeats, axis=None: s.repeat(self, repeats, axis),
        "conj": s.conj, "conjugate": s.conjugate, "real": property(s.real), "imag": property(s.imag),
        "diagonal": lambda self, offset=0, axis1=0, axis2=1: s.diagonal(self, offset, axis1, axis2),
        "trace": lambda self, offset=0, axis1=0, axis2=1, dtype=None: s.trace(self, offset, axis1, axis2, dtype),
        "nonzero": lambda self, *, size=None, fill_value=None: s.nonzero(self, size=size, fill_value=fill_value),
        "compress": lambda self, condition, axis=None, *, out=None, size=None, fill_value=0: s.compress(
            condition, self, axis, out=out, size=size, fill_value=fill_value),
        "ptp": lambda self, axis=None, keepdims=False: s.ptp(self, axis=axis, keepdims=keepdims),
        "searchsorted": lambda self, v, side="left", sorter=None: s.searchsorted(self, v, side=side, sorter=sorter),
        "itemsize": property(lambda self: aval_of(self).dtype.itemsize),
        "nbytes": property(lambda self: aval_of(self).size * aval_of(self).dtype.itemsize),
        "copy": lambda self: s.array(self, copy=True),  # (an Array's own `copy` comes first: a new buffer)
    })
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
