"""`stagec.numpy`: the NumPy API over stagec primitives (broadcasting, JAX's type promotion).

Import as `import stagec.numpy as snp`. Outside `jit` every call runs eagerly, one compiled
primitive at a time; inside `jit` the same code is traced. Both go through the same primitives.

The functions live in topic modules (`_ufuncs`, `_creation`, `_shapes`, `_reductions`, `_linalg`,
`_indexing`, `_nonzero`, `_sorting`, `_histogram`, `_setops`, and `_arrayapi` for the Array API standard's own names) over the shared promotion and broadcasting machinery in `_base`.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from .. import dtypes as _dt
from ..array import Array

ndarray = Array
pi, e, inf, nan, newaxis, euler_gamma = np.pi, np.e, np.inf, np.nan, None, np.euler_gamma


class _ScalarMeta(type):
    """`snp.float32` and the others, as JAX's: calling one makes an Array of its dtype (`snp.float32(x)` also of a
    traced x); it equals, hashes and converts (`np.dtype`) as the NumPy type, and `isinstance` asks that type."""

    def __hash__(cls) -> int:
        return hash(cls.dtype.type)

    def __eq__(cls, other) -> bool:
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other) -> bool:
        return not cls == other

    def __call__(cls, x) -> Array:
        return asarray(x, dtype=cls.dtype)  # noqa: F821  (defined below, by _creation's names)

    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, cls.dtype.type)


def _scalar_type(t) -> _ScalarMeta:
    d = np.dtype(t)
    return _ScalarMeta(d.name, (object,), {"dtype": d, "__module__": __name__,
                                           "__doc__": f"{d.name}: `{d.name}(x)` is `asarray(x, dtype={d.name})`."})


bool_, int8, int16, int32, int64 = map(_scalar_type, (np.bool_, np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = map(_scalar_type, (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64, complex64, complex128 = map(_scalar_type, (np.float16, np.float32, np.float64,
                                                                      np.complex64, np.complex128))
bfloat16 = _scalar_type(ml_dtypes.bfloat16)
dtype, finfo, iinfo = np.dtype, _dt.finfo, np.iinfo


_ABSTRACT = (np.generic, np.number, np.integer, np.signedinteger, np.unsignedinteger, np.inexact, np.floating,
             np.complexfloating, np.flexible, np.character)


def issubdtype(arg1, arg2) -> bool:
    """`np.issubdtype`, where bfloat16 counts as floating (NumPy sees a void type)."""
    if np.dtype(arg1) == _dt.bfloat16:
        if arg2 in _ABSTRACT:
            return arg2 in (np.floating, np.inexact, np.number, np.generic)
        return np.dtype(arg2) == _dt.bfloat16
    return np.issubdtype(arg1, arg2)


integer, floating, number, inexact, complexfloating = np.integer, np.floating, np.number, np.inexact, np.complexfloating
signedinteger, unsignedinteger, bool = np.signedinteger, np.unsignedinteger, bool_

import types as _types  # noqa: E402

from . import (_arrayapi, _base, _creation, _indexing, _linalg, _nonzero, _reductions, _shapes,  # noqa: E402
               _sorting, _ufuncs)
from . import _extra  # noqa: E402  (built on the names above, through the package)
from . import _bessel, _concat_tricks, _histogram, _names, _poly, _put, _setops  # noqa: E402  (likewise)

_NOT_API = {"annotations", "Any", "Sequence", "Tracer", "Const", "ShapedArray", "Array", "device_put", "aval_of",
            "current_trace", "to_numpy_constant"}

_NOT_ARRAY = {"broadcast_shapes", "ndim", "shape", "size", "isscalar", "iterable", "iscomplexobj", "isrealobj",
              "promote_types", "vectorize"}  # return Python values (ints, tuples, bools, dtypes, functions), as NumPy's


# Functions of several primitives whose eager calls run as eager composites (`_base._composite`: from a signature's
# second call one traced graph, each equation planned as op by op would run it: the same bits), beside those their
# modules mark. Each was checked for value checks that only a concrete argument takes (a composite traces its
# Arrays): these check shapes and static arguments alone. Op by op on 4x4 float32 they took 10-370x JAX's eager
# time (median 426 us, arctan2 251, i0 1095, poly 1357; JAX 4-7): as composites 0.6-37x (docs/log.md, 2026-11-30).
# Not float_power (slower so), nor take_along_axis (its concrete indices are checked against the bounds: traced
# they would not be).
_COMPOSITES = frozenset({
    "median", "nanmedian", "quantile", "percentile", "nanquantile", "nanpercentile", "vander", "poly", "digitize",
    "i0", "arctan2", "atan2", "angle", "spacing", "frexp", "nextafter", "searchsorted", "gradient", "sinc", "corrcoef",
    "cov", "nanstd", "nanvar", "polyval", "polyint", "polyder", "geomspace", "logspace", "ldexp", "kron",
    "logaddexp2", "logaddexp", "interp", "hypot", "convolve", "correlate", "isclose", "allclose", "nanmean",
    "trapezoid", "ediff1d", "tril", "triu", "heaviside", "nanmax", "nanmin", "nanargmin", "nanargmax", "copysign",
    "vdot", "modf", "diff", "nancumsum", "around", "round", "nansum", "nanprod", "cross", "average", "signbit",
    "log10", "trace", "exp2", "inner", "deg2rad", "log2", "diag", "rot90", "divmod", "ptp", "nan_to_num", "packbits",
    "unpackbits", "atleast_2d", "unwrap", "sort_complex", "partition", "argpartition", "resize", "fmax", "fmin",
    "rad2deg", "degrees", "radians", "isreal", "iscomplex", "conj", "left_shift", "linspace", "isin", "count_nonzero",
    "gcd", "lcm", "trunc", "fix", "isinf", "isposinf", "isneginf", "nancumprod", "lexsort", "unstack", "sort",
    "argsort", "cumsum", "cumprod", "logical_not", "argmax", "argmin", "imag", "diagonal", "ravel", "any", "all",
    "reciprocal", "square", "take_along_axis", "roll", "flip", "tile", "repeat", "einsum", "split", "expand_dims",
    "broadcast_to", "array_equal", "bincount", "histogram", "moveaxis", "swapaxes", "tensordot", "right_shift",
    "bitwise_left_shift", "bitwise_right_shift", "kaiser"})


def _export(mod) -> None:
    """Re-export a topic module's public names (not the modules and helpers it imports)."""
    g = globals()
    names = getattr(mod, "__all__", None)
    for k, v in vars(mod).items():
        if (k in names if names is not None else not k.startswith("_") and k not in _NOT_API
                and not isinstance(v, _types.ModuleType)):
            if k in _COMPOSITES:
                v = _base._composite(v)
            g[k] = _base._api(v) if isinstance(v, _types.FunctionType) and k not in _NOT_ARRAY else v


for _m in (_base, _ufuncs, _creation, _shapes, _reductions, _linalg, _indexing, _nonzero, _sorting, _arrayapi, _extra,
           _names, _poly, _bessel, _concat_tricks, _histogram, _setops, _put):
    _export(_m)
from ._base import _is_array, _promote, _to_float  # noqa: E402,F401
from ._indexing import _getitem, _IndexUpdateHelper  # noqa: E402,F401
from . import _methods  # noqa: E402
from . import fft, linalg  # noqa: E402
import sys as _sys  # noqa: E402

_methods.install(_sys.modules[__name__])
del _m

from .._missing import missing as _missing, table as _table  # noqa: E402

__getattr__ = _missing(__name__, {
    **_table("roots", "needs numpy.linalg.eigvals (the companion matrix's eigenvalues), which stagec lacks"),
    **_table("float4_e2m1fn float6_e2m3fn float6_e3m2fn float8_e3m4 float8_e4m3 float8_e4m3b11fnuz float8_e4m3fn "
             "float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz float8_e8m0fnu int1 int2 int4 uint1 uint2 uint4",
             "stagec has no sub-byte or 8-bit floating types (the narrowest are int8/uint8, float16 and bfloat16)"),
    **_table("load save savez fromfile frombuffer fromstring fromiter",
             "read and write with numpy, then convert with snp.asarray"),
    **_table("object_ frompyfunc ufunc", "stagec arrays hold numbers only (no object arrays or NumPy ufunc objects)"),
    **_table("printoptions get_printoptions set_printoptions array_repr array_str",
             "stagec prints arrays through NumPy: use numpy's printoptions / array_repr on np.asarray(x)"),
    **_table("einsum_path", "not implemented yet (a JAX name stagec lacks); numpy's version runs on np.asarray(x) "
                            "outside jit"),
    **_table("minmax top_k", "not implemented yet (new in JAX 0.11; stagec.lax.top_k, and snp.min / snp.max)"),
})
