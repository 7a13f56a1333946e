"""More of NumPy's (and `jax.numpy`'s) names, built from the others: comparisons of whole arrays, statistics,
NaN-ignoring reductions, convolution, index helpers, polynomials and windows."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..ad import custom_jvp
from ..core import aval_of
from .. import numpy as snp
from ._base import _axis, _broadcast, _promote, _promoted_arrays, _to_float, inexact_type as _inexact
from ._sorting import _keys

__all__ = ["allclose", "isclose", "array_equal", "array_equiv", "diag", "diagflat", "ndim", "shape", "size", "convolve",
           "correlate", "cross", "kron", "deg2rad", "rad2deg", "degrees", "radians", "average", "cov", "corrcoef",
           "median", "percentile", "quantile", "nanmedian", "nanpercentile", "nanquantile", "nansum", "nanprod",
           "nanmean", "nanvar", "nanstd", "nanmax", "nanmin", "nanargmax", "nanargmin", "nancumsum", "nancumprod",
           "interp", "isin", "tril_indices", "triu_indices", "tril_indices_from", "triu_indices_from", "mask_indices",
           "diag_indices", "diag_indices_from", "indices", "ix_", "rot90", "append", "copy", "trapezoid", "polyval",
           "vander", "sinc", "heaviside", "float_power", "fabs", "logaddexp2", "nan_to_num", "isscalar", "iterable",
           "iscomplexobj", "isrealobj", "iscomplex", "isreal", "promote_types", "geomspace", "logspace", "ediff1d",
           "resize", "unravel_index", "ravel_multi_index", "matvec", "vecmat", "block", "fromfunction",
           "apply_along_axis", "apply_over_axes", "vectorize", "lexsort", "sort_complex", "digitize", "bincount", "gcd",
           "lcm", "ldexp", "modf", "hanning", "hamming", "blackman", "bartlett", "gradient", "fill_diagonal", "delete",
           "insert", "choose", "float_", "int_", "uint", "complex_", "double", "single", "cdouble", "csingle",
           "generic", "character", "flexible", "s_", "index_exp", "mgrid", "ogrid", "ComplexWarning"]

float_, int_, uint, complex_ = np.float64, np.int64, np.uint64, np.complex128
double, single, cdouble, csingle = np.float64, np.float32, np.complex128, np.complex64
generic, character, flexible = np.generic, np.character, np.flexible
s_, index_exp, mgrid, ogrid = np.s_, np.index_exp, np.mgrid, np.ogrid
ComplexWarning = getattr(np, "ComplexWarning", None) or np.exceptions.ComplexWarning


def _arr(x):
    return snp.asarray(x)


# ---------------------------------------------------------------- comparisons and shapes


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """|a - b| <= atol + rtol |b| elementwise (infinities equal only to themselves), integers and booleans in
    their inexact type, as in JAX and NumPy (they were compared for equality: isclose(1000, 1001, atol=1) False)."""
    a, b = _arr(a), _arr(b)
    dt = _inexact(a, b)
    a, b = a.astype(dt), b.astype(dt)
    finite = snp.isfinite(a) & snp.isfinite(b)
    close = snp.abs(a - b) <= atol + rtol * snp.abs(b)
    out = snp.where(finite, close, a == b)
    if equal_nan:
        out = out | (snp.isnan(a) & snp.isnan(b))
    return out


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    return snp.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan: bool = False) -> Any:
    a1, a2 = _arr(a1), _arr(a2)
    if a1.shape != a2.shape:
        return snp.asarray(False)
    eq = a1 == a2
    if equal_nan and snp.issubdtype(snp.result_type(a1, a2), np.inexact):
        eq = eq | (snp.isnan(a1) & snp.isnan(a2))
    return snp.all(eq)


def array_equiv(a1, a2):
    a1, a2 = _arr(a1), _arr(a2)
    try:
        np.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return snp.asarray(False)
    return snp.all(a1 == a2)


def ndim(a) -> int:
    return aval_of(a).ndim if hasattr(a, "aval") else np.ndim(a)


def shape(a) -> tuple:
    return aval_of(a).shape if hasattr(a, "aval") else np.shape(a)


def size(a, axis: int | None = None) -> int:
    s = shape(a)
    return math.prod(s) if axis is None else s[axis]


def isscalar(element) -> bool:
    """True for 0-d arrays (NumPy's included) and Python and NumPy scalars, as JAX's."""
    if hasattr(element, "aval") or isinstance(element, np.ndarray):
        return np.ndim(element) == 0
    return np.isscalar(element)


def iterable(y) -> bool:
    """Whether `y` can be iterated over, as `np.iterable` (a 0-d array cannot)."""
    return np.iterable(y)


def iscomplexobj(x) -> bool:
    return snp.issubdtype(_arr(x).dtype if not hasattr(x, "dtype") else x.dtype, np.complexfloating)


def isrealobj(x) -> bool:
    return not iscomplexobj(x)


def iscomplex(x):
    x = _arr(x)
    return snp.imag(x) != 0 if iscomplexobj(x) else snp.zeros(x.shape, bool)


def isreal(x):
    x = _arr(x)
    return snp.imag(x) == 0 if iscomplexobj(x) else snp.ones(x.shape, bool)


def promote_types(a, b) -> np.dtype:
    """The dtype both promote to, by JAX's table (not NumPy's: int8 and uint8 give int16, float32 and int64 float32).
    The Python types int, float and complex are weak, as in JAX (`promote_types('uint8', int)` is uint8)."""
    order = (int, float, complex)
    weak = lambda t: any(t is w for w in order)
    if weak(a) and weak(b):  # (JAX: the larger Python type's dtype, int64, float64 or complex128)
        return np.dtype(max(a, b, key=order.index))
    return np.dtype(_dt.result_type((np.dtype(a), weak(a)), (np.dtype(b), weak(b)))[0])


# ---------------------------------------------------------------- diagonals and index helpers


def diag(v, k: int = 0):
    """The k-th diagonal of a 2-D array, or a 2-D array with 1-D `v` on its k-th diagonal."""
    v = _arr(v)
    if v.ndim == 1:
        n = v.shape[0] + abs(k)
        rows, cols = np.arange(v.shape[0]) + max(-k, 0), np.arange(v.shape[0]) + max(k, 0)
        return snp.zeros((n, n), v.dtype).at[rows, cols].set(v)
    if v.ndim == 2:
        return snp.diagonal(v, offset=k)
    raise ValueError("diag input must be 1d or 2d")


def diagflat(v, k: int = 0):
    return diag(snp.ravel(_arr(v)), k)


def tril_indices(n: int, k: int = 0, m: int | None = None):
    return tuple(snp.asarray(i.astype(np.int32)) for i in np.tril_indices(n, k, m))


def triu_indices(n: int, k: int = 0, m: int | None = None):
    return tuple(snp.asarray(i.astype(np.int32)) for i in np.triu_indices(n, k, m))


def tril_indices_from(arr, k: int = 0):
    s = shape(arr)
    return tril_indices(s[-2], k, s[-1])


def triu_indices_from(arr, k: int = 0):
    s = shape(arr)
    return triu_indices(s[-2], k, s[-1])


def mask_indices(n: int, mask_func: Callable, k: int = 0, *, size: int | None = None) -> tuple:
    """The (row, column) indices where `mask_func(ones((n, n)), k)` is nonzero (`snp.triu` gives `triu_indices`'s);
    `size` as for `nonzero` (static: a fixed length, for jit)."""
    return snp.nonzero(mask_func(snp.ones((n, n)), k), size=size)


def diag_indices(n: int, ndim: int = 2):
    return (snp.arange(n),) * ndim


def diag_indices_from(arr):
    s = shape(arr)
    if len(set(s)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(s[0], len(s))


def indices(dimensions, dtype=None, sparse: bool = False):
    dtype = _dt.default_int() if dtype is None else dtype  # (int64 under x64, as JAX's)
    return tuple(snp.asarray(i) for i in np.indices(dimensions, dtype, sparse)) if sparse else \
        snp.asarray(np.indices(dimensions, dtype))


def ix_(*args):
    n = len(args)
    return tuple(snp.reshape(_arr(a), (1,) * i + (-1,) + (1,) * (n - i - 1)) for i, a in enumerate(args))


def unravel_index(indices, shape):
    """Flat indices -> a tuple of coordinate arrays (out-of-range indices clamp, as JAX's)."""
    idx = _arr(indices)
    out = []
    for d in reversed(shape):
        out.append(idx % d)
        idx = idx // d
    return tuple(reversed(out))


def ravel_multi_index(multi_index, dims, mode: str = "raise", order: str = "C"):
    """Flat indices of `multi_index` into an array of shape `dims`, in the default int (JAX's rules): mode 'raise'
    needs concrete indices (a ValueError when one is out of bounds), 'clip', 'wrap' or 'ignore' take traced ones;
    order 'C' or 'F'."""
    from ..core import Tracer
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(multi_index)} index arrays for {len(dims)} dimensions")
    if mode not in ("raise", "clip", "wrap", "ignore"):
        raise ValueError(f"ravel_multi_index: invalid mode={mode!r}; expected 'raise', 'wrap', 'clip' or 'ignore'")
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index: invalid order={order!r}; expected 'C' or 'F'")
    dims = tuple(int(d) for d in dims)
    idx = [_arr(i) for i in multi_index]
    for i in idx:
        if _dt.kind(i.dtype) not in "iu":
            raise TypeError("ravel_multi_index: only int indices permitted")
    if mode == "raise":
        for i in multi_index:
            if isinstance(i, Tracer):
                raise i._concretization_error("ravel_multi_index with mode='raise' (use mode='wrap' or 'clip' "
                                              "under jit)")
        if any(bool(np.any((np.asarray(i) < 0) | (np.asarray(i) >= d))) for i, d in zip(idx, dims)):
            raise ValueError("ravel_multi_index: invalid entry in coordinates array")
    elif mode == "clip":
        idx = [snp.clip(i, 0, d - 1) for i, d in zip(idx, dims)]
    elif mode == "wrap":
        idx = [i % d for i, d in zip(idx, dims)]
    strides = np.cumprod((1,) + dims[:-1]) if order == "F" else np.cumprod((1,) + dims[1:][::-1])[::-1]
    dt = _dt.result_type((_dt.default_int(), True), *((i.dtype, aval_of(i).weak_type) for i in idx))[0]
    if math.prod(dims) - 1 > np.iinfo(dt).max:
        raise ValueError(f"ravel_multi_index: {dt} can't hold the flat index for dims={dims}")
    out = snp.zeros((), dt)
    for i, st in zip(idx, strides):
        out = out + i.astype(dt) * int(st)
    return out


def fill_diagonal(a, val, wrap: bool = False, inplace: bool = True):
    """`a` with `val` on its main diagonal (JAX's form: `inplace=False` is required, arrays are immutable)."""
    if inplace:
        raise NotImplementedError("stagec arrays are immutable: call fill_diagonal(a, val, inplace=False), which "
                                  "returns the updated array (as JAX)")
    a = _arr(a)
    n = min(a.shape)
    idx = (np.arange(n),) * a.ndim
    vals = snp.broadcast_to(snp.ravel(_arr(val)), (n,)) if _arr(val).size in (1, n) else snp.resize(val, (n,))
    return a.at[idx].set(vals.astype(a.dtype))


# ---------------------------------------------------------------- convolution, products


def _conv1d(a, v, mode: str, flip: bool, fname: str, preferred=None, exact: bool = False):
    a, v = _arr(a), _arr(v)
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"{fname}() only supports 1-dimensional inputs.")
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise ValueError(f"{fname}: inputs cannot be empty")
    dt = snp.result_type(a, v)
    if preferred is not None:  # computed in the wider of the two (integers stay integers: exact), as JAX's
        pdt = np.dtype(preferred)
        inexact = lambda d: snp.issubdtype(d, np.inexact)
        if inexact(dt) and not inexact(pdt) or snp.issubdtype(dt, np.complexfloating) != snp.issubdtype(
                pdt, np.complexfloating) and inexact(dt):
            raise TypeError(f"{fname}: preferred_element_type {pdt} is incompatible with {dt} inputs (as in JAX: "
                            "integral to integral or floating, floating to floating, complex to complex)")
        wide = snp.result_type(dt, pdt)
        return _conv1d(a.astype(wide), v.astype(wide), mode, flip, fname, exact=True).astype(pdt)
    if not exact and not snp.issubdtype(dt, np.inexact):  # JAX's: integers and bools to the default float
        dt = _inexact(dt)
    a, v = a.astype(dt), v.astype(dt)
    if a.shape[0] < v.shape[0]:
        a, v = v, a
        if not flip:  # correlate(a, v) with the roles swapped is reversed (and conjugated)
            out = _conv1d(a, v, mode, flip, fname, dt)
            return snp.conj(out[::-1]) if iscomplexobj(out) else out[::-1]
    if flip:
        v = v[::-1]
    elif iscomplexobj(v):
        v = snp.conj(v)
    n = v.shape[0]
    pads = {"full": (n - 1, n - 1), "same": (n // 2, n - 1 - n // 2), "valid": (0, 0)}
    if mode not in pads:
        raise ValueError(f"mode must be one of ['full', 'same', 'valid'], got {mode!r}")
    if not snp.issubdtype(dt, np.inexact) or iscomplexobj(a):  # convolution via a sliding dot over a padded copy
        lo, hi = pads[mode]
        ap = snp.pad(a, (lo, hi))
        m = ap.shape[0] - n + 1
        idx = np.arange(m)[:, None] + np.arange(n)[None, :]
        return snp.sum(ap[idx] * v, axis=1)
    out = lax.conv_general_dilated(a[None, None, :], v[None, None, :], (1,), [pads[mode]])
    return out[0, 0]


def convolve(a, v, mode: str = "full", *, precision=None, preferred_element_type=None):
    """The discrete linear convolution of 1-D `a` and `v` (a StableHLO convolution for floats). Integer and bool
    operands give the default float dtype, as JAX's; `preferred_element_type` names the result's dtype."""
    return _conv1d(a, v, mode, True, "convolve", preferred_element_type)


def correlate(a, v, mode: str = "valid", *, precision=None, preferred_element_type=None):
    """The cross-correlation of 1-D `a` and `v` (NumPy's: v conjugated); dtypes as `convolve`'s."""
    return _conv1d(a, v, mode, False, "correlate", preferred_element_type)


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None):
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = snp.moveaxis(_arr(a), axisa, -1), snp.moveaxis(_arr(b), axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product (dimension must be 2 or 3)")
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2] if a.shape[-1] == 3 else snp.zeros_like(a[..., 0])
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2] if b.shape[-1] == 3 else snp.zeros_like(b[..., 0])
    c = snp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return snp.moveaxis(c, -1, axisc)


def kron(a, b):
    a, b = _arr(a), _arr(b)
    nd = max(a.ndim, b.ndim)
    a = snp.reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = snp.reshape(b, (1,) * (nd - b.ndim) + b.shape)
    ae = snp.reshape(a, sum(((d, 1) for d in a.shape), ()))
    be = snp.reshape(b, sum(((1, d) for d in b.shape), ()))
    return snp.reshape(ae * be, tuple(x * y for x, y in zip(a.shape, b.shape)))


def matvec(x1, x2):
    return snp.matmul(x1, _arr(x2)[..., None])[..., 0]


def vecmat(x1, x2):
    return snp.matmul(snp.conj(_arr(x1))[..., None, :], x2)[..., 0, :]


# ---------------------------------------------------------------- elementwise composites


def deg2rad(x):
    x = _arr(x)
    return snp.multiply(x.astype(_inexact(x)), np.pi / 180)


def rad2deg(x):
    x = _arr(x)
    return snp.multiply(x.astype(_inexact(x)), 180 / np.pi)


radians, degrees = deg2rad, rad2deg


def sinc(x):
    """sin(pi x) / (pi x), sin(pi x) from r = x mod 2 (exact) folded into [-1/2, 1/2] (sin(pi x) by sin(pi fl(pi x))
    lost its zeros at the integers); 0 where pi x overflows (x is an integer there: mpmath's 0; NumPy's and JAX's
    NaN, sin(inf) / inf: docs/jax-differences.md). Below |x| = 0.1 its Maclaurin
    series to (pi x)^14, whose derivatives of every order are right at and near 0 (the quotient's cancel:
    sinc'(1e-4) was 100% off in float32, sinc''(0) 0, not -pi^2/3)."""
    x = snp.asarray(x)
    x = x.astype(_inexact(x))
    if iscomplexobj(x):  # sin(pi z) has period 2 in the real part only: x - 2 round(x / 2) rounded the imaginary
        # part too, and the fold compared complex values (sinc(6.71 - 2.20j) 500 times too small, sinc(-10j) 0)
        re = snp.real(x)
        r = x - 2 * snp.round(re / 2)  # (the real part exact, the imaginary kept)
        rr = snp.real(r)
        r = snp.where(rr > 0.5, 1 - r, snp.where(rr < -0.5, -1 - r, r))  # sin(pi (+-1 - r)) = sin(pi r)
    else:
        r = x - 2 * snp.round(x / 2)  # in [-1, 1]; sin(pi r) = sin(pi x)
        r = snp.where(r > 0.5, 1 - r, snp.where(r < -0.5, -1 - r, r))  # (exact)
    near = snp.abs(x) < 0.1
    xn = snp.where(near, x, 0.0)  # (each branch finite where not taken: its derivative's 0 * inf is NaN)
    t = (np.pi * xn) ** 2
    series = 0.0
    for k in range(7, 0, -1):  # sum_k (-t)^k / (2k + 1)!
        series = (series + (-1) ** k / math.factorial(2 * k + 1)) * t
    den = np.pi * snp.where(near, 1, x)  # (+inf where it overflows: sinc's 0 there is +0, real or complex)
    den = snp.where(snp.isinf(den) if iscomplexobj(x) else den == -np.inf, snp.inf, den)  # (real: one step, not 2)
    return snp.where(near, 1 + series, snp.sin(np.pi * r) / den)


def heaviside(x1, x2):
    """0, x2 or 1 by x1's sign, in the inexact type of both (JAX's: int32 operands give float32 under x64)."""
    x1, x2 = _promoted_arrays(_to_float, "heaviside", x1, x2)
    return snp.where(x1 < 0, 0, snp.where(x1 > 0, 1, snp.where(x1 == 0, x2, np.nan)))  # (NaN x1: NaN, as NumPy)


def float_power(x1, x2):
    """x1 ** x2 in the inexact type of both (as jax.numpy's: float16 stays float16; NumPy's float64 is wider), complex
    if either is (a float cast dropped the imaginary part)."""
    return snp.power(*_to_float("float_power", x1, x2))


def fabs(x):
    x = _arr(x)
    kind = _dt.kind(aval_of(x).dtype)
    if kind == "c":
        raise TypeError("fabs does not accept complex arrays (use abs)")
    return snp.abs(x if kind == "f" else x.astype(_inexact(x)))  # (a float's `astype` copied it first: eager 4x4 11.9 us)


def _logaddexp2(x1, x2):
    """log2(2**x1 + 2**x2) as NumPy's: max + log1p(2^-|x1 - x2|) log2(e) (logaddexp(x ln 2, y ln 2) / ln 2 took the
    rounding of x ln 2: 22 float32 ulps). log2(e) a weak Python float: float16 stays float16."""
    x1, x2 = map(_arr, _broadcast("logaddexp2", *_to_float("logaddexp2", x1, x2)))  # (a scalar's Const: an Array)
    if iscomplexobj(x1):  # (the form below is real-valued: on complex values max is lexicographic and |d| the
        # modulus, a wrong answer; raised as logaddexp's)
        raise NotImplementedError(f"logaddexp2 of complex arguments ({x1.dtype}) is not in stagec yet; "
                                  "write snp.log2(snp.exp2(x1) + snp.exp2(x2))")
    d = x1 - x2
    out = snp.maximum(x1, x2) + snp.log1p(snp.exp2(-snp.abs(d))) * (1 / math.log(2))
    return snp.where(d != d, x1 + x2, out)  # (both inf of one sign: that inf; NaN: NaN)


# JAX's derivative, t1 2^(x1 - out) + t2 2^(x2 - out): 1/2 each where x1 == x2 (the form above gave 0 and 1 there,
# through |x1 - x2|)
logaddexp2 = custom_jvp(_logaddexp2)
logaddexp2.__name__ = logaddexp2.__qualname__ = "logaddexp2"


@logaddexp2.defjvp
def _logaddexp2_jvp(primals, tangents):
    x1, x2 = map(_arr, _broadcast("logaddexp2", *_to_float("logaddexp2", *primals)))
    out = logaddexp2(x1, x2)  # (itself, as logaddexp's: second derivatives at a tie)

    def part(x, t):  # (+inf read as 0, as logaddexp's: a finite weight, not inf - inf)
        t = snp.broadcast_to(snp.asarray(t).astype(out.dtype), out.shape)
        return t * snp.exp2(snp.where(x == np.inf, 0.0, x) - snp.where(out == np.inf, 0.0, out))
    return out, part(x1, tangents[0]) + part(x2, tangents[1])


def nan_to_num(x, copy: bool = True, nan=0.0, posinf=None, neginf=None):
    x = _arr(x)
    if not snp.issubdtype(x.dtype, np.inexact):
        return x
    if iscomplexobj(x):
        return snp.real(nan_to_num(snp.real(x), nan=nan, posinf=posinf, neginf=neginf)) + 1j * nan_to_num(
            snp.imag(x), nan=nan, posinf=posinf, neginf=neginf)
    info = snp.finfo(x.dtype)
    out = snp.where(snp.isnan(x), nan, x)
    out = snp.where(snp.isposinf(out), info.max if posinf is None else posinf, out)
    return snp.where(snp.isneginf(out), info.min if neginf is None else neginf, out).astype(x.dtype)


def gcd(x1, x2):
    """NumPy's: |x1| and |x2| in the result type as unsigned magnitudes, Euclid on those, the result read back in the
    result type. So gcd(INT_MIN, INT_MIN) and gcd(INT_MIN, 0) are INT_MIN (|INT_MIN| wraps), as NumPy's; abs before the
    cast to a wider type, or floor modulo by a negative INT_MIN, gave negative answers (gcd(int8 6, -128) -2)."""
    x1, x2 = _arr(x1), _arr(x2)
    dt = snp.result_type(x1, x2)
    if not snp.issubdtype(dt, np.integer):
        raise TypeError("gcd needs integer arguments")
    bits = np.iinfo(dt).bits
    udt = np.dtype(f"uint{bits}")
    a, b = (snp.abs(x.astype(dt)).astype(udt) for x in snp.broadcast_arrays(x1, x2))
    # Euclid's algorithm runs at most ~1.44 * bits steps (Lamé): a fixed count keeps the loop static.
    def body(_, ab):
        a, b = ab
        nz = b != 0
        return snp.where(nz, b, a), snp.where(nz, a % snp.where(nz, b, 1), 0)
    return lax.fori_loop(0, int(1.5 * bits) + 2, body, (a, b))[0].astype(dt)


def lcm(x1, x2):
    # |x1| / g * |x2| (wrapping as NumPy's) as +-(x1 / g * x2), from the arguments themselves: where the product
    # read |x1| and |x2| from before gcd's loop, IREE 3.13's stream partitioning failed ("circular dependency:
    # input operation uses partition output").
    x1, x2 = _arr(x1), _arr(x2)
    g = gcd(x1, x2)
    p = ((x1 // snp.where(g == 0, 1, g)) * x2).astype(g.dtype)
    return snp.where(g == 0, 0, snp.where((x1 < 0) ^ (x2 < 0), -p, p)).astype(g.dtype)


def ldexp(x1, x2):
    """x1 * 2**x2, exactly, for a real `x1` and an integer `x2` (as jax.numpy's): 2**x2 applied as three powers of two
    that never over- or underflow where the result does not (one exp2 made 3e38 * 2**-200 zero and 0 * 2**200 NaN)."""
    x1, x2 = _arr(x1), _arr(x2)
    if iscomplexobj(x1) or _dt.kind(x2.dtype) in "fc":
        raise ValueError(f"ldexp not supported for input types {(x1.dtype, x2.dtype)}: x1 real, x2 integer")
    dt = _inexact(x1)
    fi = snp.finfo(dt)
    lim = fi.maxexp - fi.minexp + fi.nmant + 2  # past it, the result is 0 or inf whatever x1 is
    n = snp.clip(x2.astype(dt), -lim, lim)  # (clipped as floats: an unsigned x2 took -lim as a huge value)
    a = snp.floor(n / 3)
    b = snp.floor((n - a) / 2)
    return x1.astype(dt) * snp.exp2(a) * snp.exp2(b) * snp.exp2(n - a - b)


def modf(x):
    x = _arr(x)
    x = x.astype(_inexact(x))
    whole = snp.trunc(x)
    return x - whole, whole


# ---------------------------------------------------------------- statistics and NaN-ignoring reductions


def average(a, axis=None, weights=None, returned: bool = False, keepdims: bool = False):
    a = _arr(a)
    if weights is None:
        avg = snp.mean(a, axis=axis, keepdims=keepdims)
        cnt = snp.asarray(a.size / max(avg.size, 1), avg.dtype)
        return (avg, snp.broadcast_to(cnt, avg.shape)) if returned else avg
    w = _arr(weights)
    if w.shape != a.shape:
        if axis is None or w.ndim != 1:
            raise ValueError("1D weights expected when shapes of a and weights differ.")
        w = snp.reshape(w, tuple(w.shape[0] if i == axis % a.ndim else 1 for i in range(a.ndim)))
    dt = _inexact(a, w)
    a, w = a.astype(dt), w.astype(dt)  # (before the product: int8 a * w wrapped, as JAX promotes them first)
    scl = snp.sum(snp.broadcast_to(w, a.shape), axis=axis, keepdims=keepdims)
    avg = snp.sum(a * w, axis=axis, keepdims=keepdims) / scl
    return (avg, scl) if returned else avg


def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof=None, fweights=None, aweights=None):
    """NumPy's and JAX's covariance; integer `fweights` (repeat counts) and `aweights` weigh the observations,
    negative weights taken as their absolute values, as JAX's (NumPy raises: a value-dependent error)."""
    X = snp.atleast_2d(_arr(m))
    if not rowvar and X.shape[0] != 1:
        X = X.T
    if y is not None:
        Y = snp.atleast_2d(_arr(y))
        if not rowvar and Y.shape[0] != 1:
            Y = Y.T
        X = snp.concatenate([X, Y], axis=0)
    X = X.astype(_inexact(X))
    ddof = (0 if bias else 1) if ddof is None else ddof
    n = X.shape[1]
    if fweights is None and aweights is None:
        Xc = X - snp.mean(X, axis=1, keepdims=True)
        return snp.squeeze(snp.matmul(Xc, snp.conj(Xc).T) / (n - ddof))
    w = None
    for name, v in (("fweights", fweights), ("aweights", aweights)):
        if v is None:
            continue
        v = _arr(v)
        if v.ndim > 1:
            raise RuntimeError(f"cannot handle multidimensional {name}")
        if v.shape[0] != n:
            raise RuntimeError(f"incompatible numbers of samples and {name}")
        if name == "fweights" and not snp.issubdtype(v.dtype, np.integer):
            raise TypeError("fweights must be integer.")
        v = snp.abs(v)
        w, aw = (v if w is None else w * v), v
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    f = w_sum if ddof == 0 else w_sum - ddof if aweights is None else w_sum - ddof * snp.sum(w * aw) / w_sum
    Xc = X - avg[:, None]
    return snp.squeeze(snp.matmul(Xc, snp.conj(Xc * w).T) / f)


def corrcoef(x, y=None, rowvar: bool = True):
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return c / c
    d = snp.diagonal(c)
    s = snp.sqrt(snp.real(d))
    c = c / s[:, None] / s[None, :]
    return snp.clip(c, -1, 1) if not iscomplexobj(c) else c


_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _midpoint(lo, hi, half):
    """(lo + hi) / 2, halved first where the sum overflows (float16 median([65504, 65504]) was inf). Where lo or hi
    is itself infinite the halved sum is the same inf, and where the sum is NaN so are the halves' (the same NaN:
    opposite infinities', or a NaN operand's, which quantile replaces): is_finite alone, no test of inf (one step of
    an eager median fewer than isinf's abs and compare)."""
    s = (lo + hi) * half
    return snp.where(lax.is_finite(s), s, lo * half + hi * half)


def _static_positions(q, qdt, n: int):
    """(lo, hi, frac) for a finite scalar `q` given as a Python or NumPy number (not an Array) of float32 or float64
    `qdt`: the positions and the 'linear' weight that quantile's traced arithmetic gives, computed here in qdt (the
    same IEEE operations); else None."""
    if not isinstance(q, (int, float, np.integer, np.floating)) or isinstance(q, bool) or \
            qdt not in (np.float32, np.float64):
        return None
    qv = np.asarray(q).astype(qdt)
    if not np.isfinite(qv):
        return None
    last = np.asarray(n - 1, qdt)
    pos = qv * last
    fl = np.floor(pos)
    lo, hi = (int(max(min(v, last), 0)) for v in (fl, np.ceil(pos)))
    return lo, hi, (pos - fl).astype(qdt)


def _quantile(a, q, axis, method: str, keepdims: bool, nan: bool, weights=None):
    """JAX's quantile: `axis` an int, a tuple (those axes merged into one) or None (all); 'linear' is
    low * (1 - t) + high * t, as JAX's (between -inf and 1 it is -inf, not NaN); 'inverted_cdf' the first sorted
    value whose cumulative weight reaches q * total (weights only there, as in JAX)."""
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    if weights is not None and method != "inverted_cdf":
        raise NotImplementedError(f"quantile: method {method!r} doesn't support weights (only 'inverted_cdf', "
                                  f"as in JAX)")
    a = _arr(a)
    dt = _inexact(a) if weights is None else _inexact(a, weights)
    a = a.astype(dt)
    if _dt.kind(dt) == "c":
        raise ValueError("quantile does not support complex input")
    # As JAX's: q keeps its own (inexact) dtype, and the positions, weights and the 'linear' blend are computed in
    # it, the result rounded once to a's dtype. (Cast to a's bfloat16/float16 first, 0.5 * 299 became 150: the
    # 'lower' median of 300 bfloat16 values was x[150], JAX's x[149]; past 2048 float16 positions missed values.)
    q_given = q
    q = _arr(q)
    q = q.astype(_inexact(q))
    qdt = q.dtype
    if q.ndim > 1:
        raise ValueError(f"quantile: q must have rank <= 1, got shape {q.shape}")
    ndim, shape = a.ndim, a.shape
    if weights is not None:
        weights = _arr(weights).astype(dt)
        if _dt.kind(weights.dtype) == "c":
            raise ValueError("quantile: weights cannot be complex")
        if weights.shape != a.shape:
            if axis is None:
                raise ValueError("quantile: weights' shape must match a's when axis is None")
            axes = tuple(_axis(x, ndim, "quantile") for x in ((axis,) if isinstance(axis, int) else axis))
            if weights.shape != tuple(shape[x] for x in axes):
                raise ValueError(f"quantile: weights' shape {weights.shape} must match the reduction axes' "
                                 f"{tuple(shape[x] for x in axes)}")
            wt = snp.transpose(weights, sorted(range(len(axes)), key=lambda k: axes[k]))  # (in axis order)
            weights = snp.broadcast_to(snp.reshape(wt, tuple(d if k in axes else 1 for k, d in enumerate(shape))),
                                       shape)
    axes = tuple(range(ndim)) if axis is None else tuple(
        _axis(x, ndim, "quantile") for x in ((axis,) if isinstance(axis, int) else axis))
    if len(set(axes)) != len(axes):
        raise ValueError("quantile: repeated axis")
    keep = tuple(k for k in range(ndim) if k not in axes)
    n = math.prod(shape[k] for k in axes)  # (not -1 in the reshape: with an empty kept axis it is ambiguous)
    if n == 0:  # (as JAX's and NumPy's, which raise; jitted, this gave NaN and eagerly an IndexError)
        raise IndexError(f"quantile: cannot take a quantile over an empty axis (a's shape {shape}, axis {axis})")
    merge = lambda v: snp.reshape(snp.transpose(v, keep + axes), tuple(shape[k] for k in keep) + (n,))
    x = merge(a)
    if weights is not None:
        w = merge(weights)
        xs = snp.where(snp.isnan(x), np.nan, x)
        order = snp.argsort(xs, axis=-1, stable=True)  # NaN sorts last
        x, w = snp.take_along_axis(xs, order, -1), snp.take_along_axis(w, order, -1)
    else:  # (NaN sorts last; as JAX's nanquantile, a NaN is a constant NaN: no gradient flows to it. A stable sort
        # of the values alone: snp.sort's own position key too was a second key, NumPy's lexsort eagerly)
        x, w = lax.sort(snp.where(snp.isnan(x), np.nan, x) if nan else x, dimension=x.ndim - 1), None
    static = None if nan or w is not None or method == "inverted_cdf" else _static_positions(q_given, qdt, n)
    if static is not None:  # (a number q: the positions are constants; slices, not gathers)
        out = _quantile_at(x, *static, method, dt)
        out = snp.reshape(out, tuple(1 if k in axes else d for k, d in enumerate(shape)) if keepdims else out.shape[:-1])
        return out.astype(a.dtype)
    isnan = snp.isnan(x)
    cnt = snp.sum(~isnan, axis=-1, keepdims=True) if nan else snp.full(x.shape[:-1] + (1,), n)
    qe = snp.expand_dims(q, tuple(range(q.ndim, q.ndim + x.ndim)))
    xb = snp.broadcast_to(x, q.shape + x.shape)
    take = lambda i: snp.take_along_axis(xb, snp.broadcast_to(i, q.shape + x.shape[:-1] + (1,)), -1)[..., 0]
    if method == "inverted_cdf":
        cdt = promote_types(qdt, dt)  # (JAX requires q's dtype to be a's here; this is both)
        w = snp.ones_like(x) if w is None else w
        bad = (w < 0) | snp.isnan(w)
        cw = snp.cumsum(snp.where(bad | isnan, 0, w).astype(cdt), axis=-1)
        below = snp.sum(cw < qe.astype(cdt) * cw[..., -1:], axis=-1, keepdims=True)
        out = take(snp.clip(below, 0, snp.maximum(cnt - 1, 0)).astype(np.int32))
        out = snp.where(snp.any(bad, axis=-1) | (snp.all(isnan, axis=-1) if nan else snp.any(isnan, axis=-1)),
                        np.nan, out)
    else:
        last = (cnt - 1).astype(qdt)
        pos = qe * last
        # (clamped to the last non-NaN value, as JAX's: a q past 1 took a NaN from the end of nanquantile's row)
        lo = snp.maximum(snp.minimum(snp.floor(pos), last), 0).astype(np.int32)
        hi = snp.maximum(snp.minimum(snp.ceil(pos), last), 0).astype(np.int32)
        vlo, vhi = take(lo), take(hi)
        frac = (pos - snp.floor(pos))[..., 0]
        out = {"linear": lambda: vlo.astype(qdt) * (1 - frac) + vhi.astype(qdt) * frac,
               "lower": lambda: vlo, "higher": lambda: vhi,
               "midpoint": lambda: _midpoint(vlo, vhi, np.array(0.5, dt)),
               # JAX's: a tie (position k + 1/2) takes the lower value; rounded half to even (NumPy's), the
               # middle of 4 values was the higher one, so quantile(x, 0.5, method="nearest") differed from JAX's
               "nearest": lambda: snp.where(frac <= 0.5, vlo, vhi)}[method]()
        if not nan:
            out = snp.where(snp.any(isnan, axis=-1), np.nan, out)
        elif w is None and method != "linear" and (static := _static_positions(q_given, qdt, n)) is not None:
            # (a row without NaN at the constant positions: the same gathers and midpoint, so the same bits; the
            # select's other side is not computed eagerly where every row or none has a NaN: nanmedian of 4x4
            # without NaN 25 -> 10 us. Not 'linear': jit's module rounded the blend of a constant weight otherwise)
            plain = _quantile_at(x, *static, method, dt)[..., 0]
            out = snp.where(cnt[..., 0] < n, out, plain)
    if keepdims:  # (a 1 for each reduced axis)
        out = snp.reshape(out, q.shape + tuple(1 if k in axes else d for k, d in enumerate(shape)))
    return out.astype(a.dtype)


def _quantile_at(x, lo: int, hi: int, frac, method: str, dt):
    """`_quantile`'s value at the constant positions lo, hi (weight frac) of the last axis of sorted `x`, NaN where
    its last value is (NaN sorts last), of shape x's with that axis 1."""
    at = lambda i: lax.slice_in_dim(x, i, i + 1, axis=x.ndim - 1)  # noqa: E731
    vlo, vhi = at(lo), at(hi)
    if method == "linear":
        qdt = frac.dtype
        out = vlo.astype(qdt) * (1 - frac) + vhi.astype(qdt) * frac
    elif method == "midpoint":  # ((v + v) / 2 is v: one value alone)
        out = vlo if lo == hi else _midpoint(vlo, vhi, np.array(0.5, dt))
    else:
        out = {"lower": vlo, "higher": vhi, "nearest": vlo if frac <= 0.5 else vhi}[method]
    return snp.where(snp.isnan(at(x.shape[-1] - 1)), np.nan, out)


def quantile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
             keepdims: bool = False, *, weights=None, interpolation=None):
    return _quantile(a, q, axis, interpolation or method, keepdims, False, weights)


def percentile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
               keepdims: bool = False, *, weights=None, interpolation=None):
    return _quantile(a, snp.asarray(q) / 100, axis, interpolation or method, keepdims, False, weights)


def median(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    """JAX's: the quantile at 0.5 by 'midpoint' (by 'linear', whose weights 1 and 0 make inf * 0, the median of
    [1, inf, inf] was NaN; JAX's and NumPy's inf)."""
    return _quantile(a, 0.5, axis, "midpoint", keepdims, False)


def nanquantile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False, *, weights=None):
    return _quantile(a, q, axis, method, keepdims, True, weights)


def nanpercentile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights=None):
    return _quantile(a, snp.asarray(q) / 100, axis, method, keepdims, True, weights)


def nanmedian(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    return _quantile(a, 0.5, axis, "midpoint", keepdims, True)


def _nan_fill(a, value):
    a = _arr(a)
    return snp.where(snp.isnan(a), value, a) if snp.issubdtype(a.dtype, np.inexact) else a


def _no_out(fname: str, out) -> None:
    if out is not None:
        raise NotImplementedError(f"{fname}: the `out` argument is not supported (arrays are immutable)")


def nansum(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None):
    _no_out("nansum", out)
    return snp.sum(_nan_fill(a, 0), axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None):
    _no_out("nanprod", out)
    return snp.prod(_nan_fill(a, 1), axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims: bool = False, where=None):
    """As JAX's: integers and bools are `mean`'s; floats the sum of the non-NaN values over their count, both in
    `dtype` (an integer `dtype` divides as integers; `s / n` made it the default float)."""
    _no_out("nanmean", out)
    a = _arr(a)
    if not snp.issubdtype(a.dtype, np.inexact):
        return snp.mean(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    dtype = a.dtype if dtype is None else dtype
    ok = ~snp.isnan(a)
    n = snp.sum(ok, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    s = snp.sum(snp.where(ok, a, 0), axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    return lax.div(s, n)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, where=None, mean=None):
    """Variance of the non-NaN values (of those `where` picks); NaN where fewer than `ddof` + 1 remain; `mean` a
    precomputed mean; dtypes as JAX's (`var`'s: computed in `dtype`, float16/bfloat16 in float32)."""
    from ._reductions import _var_types
    _no_out("nanvar", out)
    a = _arr(a)
    comp, dtype = _var_types("nanvar", a.dtype, dtype)
    a = a.astype(comp)
    m = nanmean(a, axis=axis, dtype=comp, keepdims=True, where=where) if mean is None else _arr(mean).astype(comp)
    ok = ~snp.isnan(a)
    d = snp.where(ok, a - m, 0)
    d = snp.real(d * snp.conj(d)) if iscomplexobj(d) else d * d
    n = snp.sum(ok, axis=axis, keepdims=keepdims, where=where) - ddof
    s = snp.sum(d, axis=axis, keepdims=keepdims, where=where)
    s = snp.where(n <= 0, np.nan, s)
    return lax.div(s, snp.where(n <= 0, 1, n).astype(s.dtype)).astype(dtype)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, where=None, mean=None):
    """`sqrt(nanvar(...))`; an integer `dtype` raises, as JAX's (its sqrt takes no integers)."""
    if dtype is not None and not snp.issubdtype(_dt.canonicalize(dtype), np.inexact):
        raise TypeError(f"nanstd: sqrt does not accept dtype {np.dtype(dtype)} (an integer `dtype`, as in JAX)")
    return snp.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where, mean))


def _nan_extreme(name: str, fill):
    def f(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
        fn = getattr(snp, name)
        a = _arr(a)
        if not snp.issubdtype(a.dtype, np.inexact):
            return fn(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
        nan = snp.isnan(a)
        # (complex: fill -+(inf + inf j), the lexicographic extremes: inf + 0j was below inf + inf j, so nanmin([inf+infj,
        # nan]) was inf + 0j)
        fv = complex(fill, fill) if snp.issubdtype(a.dtype, np.complexfloating) else fill
        r = fn(snp.where(nan, fv, a), axis=axis, keepdims=keepdims, initial=initial, where=where)
        if initial is not None:  # (an all-NaN row gives `initial`, as NumPy's and JAX's)
            return r
        return snp.where(snp.all(nan, axis=axis, keepdims=keepdims), np.nan, r)  # (all NaN: NaN, whatever `where`)
    return f


nanmax = _nan_extreme("max", -np.inf)
nanmin = _nan_extreme("min", np.inf)


def nanargmax(a, axis=None, out=None, keepdims: bool = False):
    """Index of the largest non-NaN value (-1 where all are NaN, as JAX)."""
    a = _arr(a)
    nan = snp.isnan(a)
    r = snp.argmax(snp.where(nan, -np.inf, a), axis=axis, keepdims=keepdims)
    return snp.where(snp.all(nan, axis=axis, keepdims=keepdims), -1, r)


def nanargmin(a, axis=None, out=None, keepdims: bool = False):
    a = _arr(a)
    nan = snp.isnan(a)
    r = snp.argmin(snp.where(nan, np.inf, a), axis=axis, keepdims=keepdims)
    return snp.where(snp.all(nan, axis=axis, keepdims=keepdims), -1, r)


def nancumsum(a, axis=None, dtype=None, out=None):
    _no_out("nancumsum", out)
    return snp.cumsum(_nan_fill(a, 0), axis=axis, dtype=dtype)


def nancumprod(a, axis=None, dtype=None, out=None):
    _no_out("nancumprod", out)
    return snp.cumprod(_nan_fill(a, 1), axis=axis, dtype=dtype)


# ---------------------------------------------------------------- searching, sets, interpolation


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of (xp, fp) at `x` (xp increasing), as JAX's: x and xp in their inexact
    type, fp (real or complex) in its own; `left`/`right` a value or 'extrapolate'; with `period`, x and xp taken
    modulo it (xp need not be sorted then) and `left`/`right` ignored."""
    for name, v in (("left", left), ("right", right)):
        if isinstance(v, str) and v != "extrapolate":
            raise ValueError(f"interp: the only valid string value of `{name}` is 'extrapolate', got {v!r}")
    x, xp, fp = _arr(x), _arr(xp), _arr(fp)
    if xp.ndim != 1 or xp.shape != fp.shape:
        raise ValueError("interp: xp and fp must be one-dimensional arrays of equal size")
    dt = _inexact(x, xp)
    if _dt.kind(dt) == "c":
        raise ValueError("interp: complex x values are not supported")
    x, xp, fp = x.astype(dt), xp.astype(dt), fp.astype(_inexact(fp))
    if period is not None:
        if np.ndim(period) != 0:
            raise ValueError(f"interp: period must be a scalar, got {period}")
        period = snp.abs(period)
        x, xp = x % period, xp % period
        order = snp.argsort(xp, stable=True)
        xp, fp = xp[order], fp[order]
        xp = snp.concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = snp.concatenate([fp[-1:], fp, fp[:1]])
    i = snp.clip(snp.searchsorted(xp, x, side="right"), 1, xp.shape[0] - 1)
    x0, x1, f0, f1 = xp[i - 1], xp[i], fp[i - 1], fp[i]
    dx = x1 - x0
    small = snp.abs(dx) <= np.spacing(np.finfo(dt).eps)  # (JAX's: a step this small gives fp[i - 1])
    out = snp.where(small, f0, f0 + ((x - x0) / snp.where(small, 1, dx)) * (f1 - f0))
    if period is None:
        if left != "extrapolate":
            out = snp.where(x < xp[0], fp[0] if left is None else left, out)
        if right != "extrapolate":
            out = snp.where(x > xp[-1], fp[-1] if right is None else right, out)
    return out


def isin(element, test_elements, assume_unique: bool = False, invert: bool = False, *, method: str = "auto"):
    e, t = _arr(element), snp.ravel(_arr(test_elements))
    r = snp.any(e[..., None] == t, axis=-1)
    return ~r if invert else r


def digitize(x, bins, right: bool = False):
    x, bins = _arr(x), _arr(bins)
    if bins.ndim != 1:
        raise ValueError("digitize: bins must be 1-dimensional")
    side = "left" if right else "right"
    if bins.shape[0] < 2:
        return snp.searchsorted(bins, x, side=side)
    inc = snp.searchsorted(bins, x, side=side)
    dec = bins.shape[0] - snp.searchsorted(bins[::-1], x, side=side)  # (bins above x: bins[i-1] > x >= bins[i])
    return snp.where(bins[-1] >= bins[0], inc, dec)


def bincount(x, weights=None, minlength: int = 0, *, length: int | None = None):
    """Counts of each value of a non-negative int array; under jit `length` (static) fixes the result's size."""
    x = _arr(x)
    if x.ndim != 1:  # (as NumPy and JAX: under vmap a 0-d example counted one value)
        raise ValueError(f"bincount: only 1-dimensional input supported, got shape {x.shape}")
    if _dt.kind(x.dtype) not in "biu":
        raise TypeError(f"bincount: x must have an integer dtype, got {x.dtype}")
    if x.dtype == np.bool_:  # (as JAX: False and True count as 0 and 1)
        x = x.astype(_dt.default_int())
    if length is None:
        try:
            length = max(int(np.max(np.asarray(x), initial=-1)) + 1, minlength)
        except Exception:
            raise ValueError("bincount under jit needs a static length= (the result's size)") from None
    w = snp.ones(x.shape, _dt.default_int()) if weights is None else _arr(weights)  # (int64 under x64, as JAX)
    if w.dtype == np.bool_:  # (summed as bool they were an `or`: NumPy counts them in float64; JAX raises)
        raise TypeError("bincount: boolean weights are not supported (as in JAX); pass weights.astype(int)")
    return snp.zeros(length, w.dtype).at[snp.clip(x, 0)].add(w, mode="drop")


def lexsort(keys, axis: int = -1):
    """Indices that sort by the last key, ties broken by the previous ones, then by index (a stable sort); a
    complex key by real part, then imaginary part (NaNs last), as `sort`."""
    keys = [_arr(k) for k in keys]
    if not keys or aval_of(keys[0]).ndim == 0:  # (keys of one element each, NumPy's and JAX's 0)
        if not keys:
            raise TypeError("lexsort: need sequence of keys with len > 0")
        return snp.zeros((), _dt.default_int())
    idx = snp.broadcast_to(snp.arange(keys[0].shape[axis]).reshape(
        (-1,) + (1,) * (keys[0].ndim - 1 - axis % keys[0].ndim)), keys[0].shape)
    moved = [snp.moveaxis(k, axis, -1) for k in keys[::-1]]
    cols = [c for m in moved for c in _keys(m, aval_of(m))]
    out = lax.sort([*cols, snp.moveaxis(idx, axis, -1)], -1, num_keys=len(cols) + 1)
    return snp.moveaxis(out[-1], -1, axis)


def sort_complex(a):
    """Sorted, as the complex type of `a`'s inexact type (JAX's: int32 to complex64, float64 to complex128)."""
    a = _arr(a)
    f = _dt.to_inexact(aval_of(a).dtype)
    return snp.sort(a).astype(np.complex128 if f in (np.float64, np.complex128) else np.complex64)


# ---------------------------------------------------------------- creation and rearrangement


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0):
    """JAX's geomspace: sign(start) * logspace(log10(start / sign), log10(stop / sign)) in the inexact type, so
    complex bounds follow the arc between them (geomspace(-1+0j, 1+0j, 5) was -1 five times: the phase was lost);
    the ends `start` and `stop` themselves, as NumPy sets them (bounds of opposite signs: NaN between them)."""
    start, stop = _arr(start), _arr(stop)
    dt = _inexact(start, stop) if dtype is None else _dt.canonicalize(dtype)
    comp = _dt.to_inexact(dt)
    start, stop = start.astype(comp), stop.astype(comp)
    sign = snp.sign(start)
    out = sign * logspace(snp.log10(start / sign), snp.log10(stop / sign), num, endpoint, 10.0, comp)
    if num > 0:
        out = out.at[0].set(start)
        out = out.at[-1].set(stop) if endpoint and num > 1 else out
    out = snp.moveaxis(out, 0, axis) if axis else out
    return _to_int_snapped(out, dt)


def _to_int_snapped(out, dt):
    """`out` converted to `dt`; to an integer type first snapped to an integer within a few ulps of it (2**3
    computed as 7.9999995 is 8, not 7), then truncated as JAX converts."""
    if _dt.kind(dt) not in "iub" or _dt.kind(aval_of(out).dtype) == "c":
        return out.astype(dt)
    r = snp.round(out)
    return snp.where(snp.abs(out - r) <= 8 * np.finfo(out.dtype).eps * snp.abs(r), r, out).astype(dt)


def _linspace(start, stop, num, endpoint, axis):
    out = snp.linspace(start, stop, num, endpoint)
    return snp.moveaxis(out, 0, axis) if axis else out


def logspace(start, stop, num: int = 50, endpoint: bool = True, base=10.0, dtype=None, axis: int = 0):
    lin = _linspace(start, stop, num, endpoint, axis)
    out = snp.power(snp.asarray(base, lin.dtype), lin)
    return out if dtype is None else _to_int_snapped(out, _dt.canonicalize(dtype))


def rot90(m, k: int = 1, axes=(0, 1)):
    m = _arr(m)
    k %= 4
    a0, a1 = axes
    if k == 0:
        return m
    if k == 2:
        return snp.flip(snp.flip(m, a0), a1)
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return snp.transpose(snp.flip(m, a1), perm) if k == 1 else snp.flip(snp.transpose(m, perm), a1)


def append(arr, values, axis: int | None = None):
    arr, values = _promoted_arrays(_promote, "append", arr, values)
    if axis is None:
        return snp.concatenate([snp.ravel(arr), snp.ravel(values)])
    return snp.concatenate([arr, values], axis=axis)


def delete(arr, obj, axis: int | None = None, *, assume_unique_indices: bool = False):
    """`arr` without the (static) entries `obj` along `axis`."""
    arr = _arr(arr)
    if axis is None:
        arr, axis = snp.ravel(arr), 0
    n = arr.shape[axis]
    drop = np.zeros(n, bool)
    drop[np.asarray(obj if not isinstance(obj, slice) else np.arange(n)[obj])] = True
    return snp.take(arr, np.flatnonzero(~drop), axis=axis)


def insert(arr, obj, values, axis: int | None = None):
    """`values` inserted before the (static) index `obj` along `axis`."""
    arr = _arr(arr)
    if axis is None:
        arr, axis = snp.ravel(arr), 0
    if not isinstance(obj, (int, np.integer)):
        raise NotImplementedError("insert with several indices is not implemented; give one integer index")
    if not -arr.ndim <= axis < arr.ndim:
        raise ValueError(f"insert: axis {axis} is out of bounds for array of dimension {arr.ndim}")
    axis %= arr.ndim
    # as JAX's (and NumPy's within range): a negative index counts from the end, before that element
    # (`% (n + 1)` made -1 the end: insert(x, -1, v) appended), and one out of range is clipped
    n = arr.shape[axis]
    obj = min(max(int(obj) + n if obj < 0 else int(obj), 0), n)
    # NumPy's and JAX's: `values` with leading 1s to `arr.ndim` dims, its first axis moved to `axis`, broadcast
    # (values of shape (3, 1) inserted along axis 1 of (4, 5) are 3 columns; this raised in concatenate)
    v = _arr(values).astype(arr.dtype)
    v = snp.moveaxis(snp.reshape(v, (1,) * (arr.ndim - v.ndim) + v.shape), 0, axis)
    shape = list(arr.shape)
    shape[axis] = v.shape[axis]
    v = snp.broadcast_to(v, tuple(shape))
    lo = snp.take(arr, np.arange(obj), axis=axis)
    hi = snp.take(arr, np.arange(obj, arr.shape[axis]), axis=axis)
    return snp.concatenate([lo, v, hi], axis=axis)


def copy(a, order=None):
    return snp.array(a, copy=True)


def resize(a, new_shape):
    a = snp.ravel(_arr(a))
    new_shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
    n = math.prod(new_shape)
    reps = -(-n // max(a.size, 1))
    return snp.reshape(snp.tile(a, reps)[:n], new_shape)


def block(arrays):
    """An array assembled from nested lists of blocks (the innermost list joins along the last axis)."""
    def depth(x):
        return 1 + depth(x[0]) if isinstance(x, list) else 0
    d = depth(arrays)
    nd = max(d, max(_arr(x).ndim for x in _flat(arrays)) if d else 0)

    def go(x, level):
        if not isinstance(x, list):
            x = _arr(x)
            return snp.reshape(x, (1,) * (nd - x.ndim) + x.shape)
        return snp.concatenate([go(y, level + 1) for y in x], axis=-(d - level))
    return go(arrays, 0) if d else _arr(arrays)


def _flat(x):
    return [z for y in x for z in _flat(y)] if isinstance(x, list) else [x]


def fromfunction(function: Callable, shape, *, dtype=float, **kwargs):
    return function(*indices(shape, dtype=dtype), **kwargs)


def apply_along_axis(func1d: Callable, axis: int, arr, *args, **kwargs):
    """`func1d` on each 1-D slice along `axis` (as JAX: vmap over the other axes)."""
    from ..batching import vmap
    arr = _arr(arr)
    axis %= arr.ndim
    g = lambda x: func1d(x, *args, **kwargs)
    moved = snp.moveaxis(arr, axis, -1)
    for _ in range(arr.ndim - 1):
        g = vmap(g)
    out = g(moved)
    extra = _arr(out).ndim - (arr.ndim - 1)
    return snp.moveaxis(out, tuple(range(arr.ndim - 1, arr.ndim - 1 + extra)), tuple(range(axis, axis + extra))) \
        if extra else out


def apply_over_axes(func: Callable, a, axes) -> Any:
    """`a = func(a, axis)` for each axis in `axes` in turn, as NumPy's: a result with one dimension fewer gets it
    back (as a reduction with keepdims=True); one of any other ndim is a ValueError."""
    a = _arr(a)
    nd = a.ndim
    for axis in np.atleast_1d(np.asarray(axes)).tolist():
        axis = axis + nd if axis < 0 else axis
        b = _arr(func(a, axis))
        if b.ndim not in (nd, nd - 1):
            raise ValueError(f"apply_over_axes: func(a, {axis}) must keep a's ndim or drop one dimension; a has "
                             f"shape {a.shape}, the result {b.shape}")
        a = b if b.ndim == nd else snp.expand_dims(b, axis)
    return a


def vectorize(pyfunc: Callable, *, excluded=frozenset(), signature: str | None = None):
    """`pyfunc` over scalars (no `signature`) broadcast over its arguments by vmap."""
    if signature is not None:
        raise NotImplementedError("vectorize(signature=...) is not implemented; use stagec.vmap")
    from ..batching import vmap
    import functools

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        keep = [i for i in range(len(args)) if i not in excluded]
        arrs = snp.broadcast_arrays(*[_arr(args[i]) for i in keep])
        shape = arrs[0].shape if arrs else ()

        def f(*xs):
            full = list(args)
            for i, x in zip(keep, xs):
                full[i] = x
            return pyfunc(*full, **kwargs)
        for _ in shape:
            f = vmap(f)
        return f(*arrs)
    return wrapped


def ediff1d(ary, to_end=None, to_begin=None):
    a = snp.ravel(_arr(ary))
    d = a[1:] - a[:-1]
    parts = ([snp.ravel(_arr(to_begin)).astype(d.dtype)] if to_begin is not None else []) + [d] + (
        [snp.ravel(_arr(to_end)).astype(d.dtype)] if to_end is not None else [])
    return snp.concatenate(parts)


def gradient(f, *varargs, axis=None, edge_order: int = 1):
    """Central differences inside, one-sided at the edges (edge_order 1); a spacing per axis, scalar or the axis's
    coordinates (NumPy's second-order differences for uneven steps)."""
    if edge_order != 1:
        raise NotImplementedError("gradient(edge_order=2) is not implemented")
    f = _arr(f)
    f = f.astype(_inexact(f))
    axes = list(range(f.ndim)) if axis is None else [axis] if isinstance(axis, int) else list(axis)
    hs = list(varargs) if len(varargs) == len(axes) else list(varargs) * len(axes) if varargs else [1.0] * len(axes)
    out = []
    for ax, h in zip(axes, hs):
        g = snp.moveaxis(f, ax, 0)
        if g.shape[0] < 2:
            raise ValueError("Shape of array too small to calculate a numerical gradient")
        if np.ndim(h):
            h = _arr(h)
            if h.ndim != 1 or h.shape[0] != g.shape[0]:
                raise ValueError(f"gradient: coordinates of shape {h.shape} do not match axis {ax} of length "
                                 f"{g.shape[0]}")
            d = snp.diff(h).reshape((-1,) + (1,) * (g.ndim - 1))
            d1, d2 = d[:-1], d[1:]
            inner = (-d2 / (d1 * (d1 + d2)) * g[:-2] + (d2 - d1) / (d1 * d2) * g[1:-1]
                     + d1 / (d2 * (d1 + d2)) * g[2:])
            r = snp.concatenate([(g[1:2] - g[:1]) / d[:1], inner, (g[-1:] - g[-2:-1]) / d[-1:]])
        else:
            inner = (g[2:] - g[:-2]) / (2 * h)
            r = snp.concatenate([(g[1:2] - g[:1]) / h, inner, (g[-1:] - g[-2:-1]) / h])
        out.append(snp.moveaxis(r, 0, ax))
    return out[0] if len(out) == 1 else out


def choose(a, choices, out=None, mode: str = "raise"):
    a = _arr(a)
    if mode == "wrap":
        a = a % len(choices)
    elif mode == "clip":
        a = snp.clip(a, 0, len(choices) - 1)
    elif mode != "raise":
        raise ValueError(f"mode should be one of 'raise', 'wrap', 'clip', got {mode!r}")
    cs = snp.broadcast_arrays(a, *[_arr(c) for c in choices])
    return snp.select([cs[0] == i for i in range(len(choices))], cs[1:])


# ---------------------------------------------------------------- polynomials and windows


def polyval(p, x, *, unroll: int = 16):
    p, x = _promoted_arrays(_promote, "polyval", p, x)
    y = snp.zeros_like(x * p[..., :1].reshape(()) if p.ndim == 1 and p.shape[0] else x)
    for i in range(p.shape[0]):
        y = y * x + p[i]
    return y


def vander(x, N: int | None = None, increasing: bool = False):
    x = _arr(x)
    N = x.shape[0] if N is None else N
    powers = np.arange(N) if increasing else np.arange(N - 1, -1, -1)
    return snp.power(x[:, None], snp.asarray(powers, dtype=x.dtype if snp.issubdtype(x.dtype, np.integer) else None))


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """The trapezoid rule along `axis`, in the inexact dtype of y and x (integers converted first, as JAX's)."""
    if x is None:
        (y,), d = _to_float("trapezoid", _arr(y)), dx
    else:
        y, x = _to_float("trapezoid", _arr(y), _arr(x))
        d = snp.diff(x) if x.ndim == 1 else snp.diff(snp.moveaxis(x, axis, -1), axis=-1)
    y = snp.moveaxis(y, axis, -1)
    return snp.sum(d * (y[..., 1:] + y[..., :-1]) * 0.5, axis=-1)  # (halved before the sum, as NumPy: no overflow)


def _window(values):
    return snp.asarray(values.astype(np.float32) if _dt.canonicalize(np.float64) == np.float32 else values)


def hanning(M: int):
    return _window(np.hanning(M))


def hamming(M: int):
    return _window(np.hamming(M))


def blackman(M: int):
    return _window(np.blackman(M))


def bartlett(M: int):
    return _window(np.bartlett(M))
