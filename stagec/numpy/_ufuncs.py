"""Elementwise functions (NumPy's ufuncs), with broadcasting and JAX's type promotion."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..ad import custom_jvp
from ..array import Array
from ..core import aval_of
from ..primitives.elementwise import pow as _raw_pow
from ._base import _binary, _broadcast, _composite, _is_array, _promote, _to_float, _unary, asarray, astype, broadcast_to


def _rint(x):
    """Round half to even (NumPy's rule; `lax.round`'s default is JAX's, half away from zero)."""
    return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


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
true_divide = divide = _binary("true_divide", lax.div, to_float=True)

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
arcsin = _unary("arcsin", lax.asin, to_float=True)
arccos = _unary("arccos", lax.acos, to_float=True)
arctan = _unary("arctan", lax.atan, to_float=True)
sinh = _unary("sinh", lax.sinh, to_float=True)
cosh = _unary("cosh", lax.cosh, to_float=True)
arcsinh = _unary("arcsinh", lax.asinh, to_float=True)
arccosh = _unary("arccosh", lax.acosh, to_float=True)
arctanh = _unary("arctanh", lax.atanh, to_float=True)


def _arctan2(x1, x2, /):
    """The angle of the point (x2, x1), in [-pi, pi]; atan2(+-0, x) is +-0 for x >= +0 and +-pi for x <= -0,
    as in NumPy. float64's axes and corners are handled here (IREE's float64 atan2 gave -pi for atan2(1e-310, -1);
    a zero or subnormal y is taken as the axis, as the CPU's kernels flush subnormals)."""
    y, x = _broadcast("arctan2", *_to_float("arctan2", x1, x2))
    if _dt.kind(aval_of(y).dtype) == "c":  # (JAX's runs lax.atan2 on complex values; NumPy's raises a TypeError)
        raise NotImplementedError(f"arctan2 of complex arguments ({aval_of(y).dtype}) is not in stagec (NumPy has "
                                  "none either); give their real parts")
    if np.dtype(aval_of(y).dtype).itemsize < 8:  # (mathlib's fdlibm atan2 has C99's zeros, infinities and NaN)
        return lax.atan2(y, x)
    # float64 (IREE's, libm's on the CPU): a subnormal y lost its sign where x < 0, and the origin's edge cases.
    on_axis = lax.bitwise_or(lax.eq(y, _const(y, 0)),
                             lax.bitwise_and(lax.eq(x, _const(x, -np.inf)), lax.is_finite(y)))
    at_axis = lax.select(signbit(x), lax.select(signbit(y), _const(y, -np.pi), _const(y, np.pi)),
                         lax.select(signbit(y), _const(y, -0.0), _const(y, 0)))
    # + y/x (zero there) keeps the derivative on the axis: d/dy = 1/x, d/dx = 0
    x_safe = lax.select(lax.eq(x, _const(x, 0)), _const(x, 1), x)
    out = lax.select(on_axis, lax.add(at_axis, lax.div(y, x_safe)), lax.atan2(y, x))
    inf = _const(x, np.inf)
    both_inf = lax.bitwise_and(lax.eq(lax.abs(x), inf), lax.eq(lax.abs(y), inf))  # IREE: NaN
    corner = lax.select(signbit(x), _const(y, 3 * np.pi / 4), _const(y, np.pi / 4))
    return lax.select(both_inf, lax.select(signbit(y), lax.neg(corner), corner), out)


# JAX's derivative, (t1 x2 - t2 x1) / (x1^2 + x2^2) everywhere: the edge cases above keep their values, not their
# own derivatives (at the origin the axis' form gave d/dx1 = 1 where JAX's, and the limit, is NaN).
arctan2 = custom_jvp(_arctan2)
arctan2.__name__ = arctan2.__qualname__ = "arctan2"


@arctan2.defjvp
def _arctan2_jvp(primals, tangents):
    y, x = _broadcast("arctan2", *_to_float("arctan2", *primals))
    out = _arctan2(y, x)
    ty, tx = (_tangent_like(t, out) for t in tangents)
    return out, lax.div(lax.sub(lax.mul(ty, x), lax.mul(tx, y)), lax.add(lax.mul(x, x), lax.mul(y, y)))


def _tangent_like(t, out):
    """A tangent in `out`'s dtype and shape (an argument's may be narrower, weakly typed or broadcast)."""
    av = aval_of(out)
    return broadcast_to(lax._convert_element_type(t, av.dtype, av.weak_type), av.shape)


asin, acos, atan, atan2, asinh, acosh, atanh = arcsin, arccos, arctan, arctan2, arcsinh, arccosh, arctanh


def _const(x, value):
    """`value` as a scalar of `x`'s dtype (a weakly typed constant, cast on the host)."""
    return lax.full_like(x, value)


def negative(x: Any, /):
    """Elementwise `-x` (integers wrap around, as in NumPy)."""
    (x,) = _promote("negative", x)
    if aval_of(x).dtype == np.bool_:
        raise TypeError("negative: the numpy boolean negative, the `-` operator, is not supported, use the `~` "
                        "operator or the logical_not function instead.")
    return lax.neg(x)


def positive(x: Any, /):
    """Elementwise `+x` (a copy)."""
    (x,) = _promote("positive", x)
    return x  # (booleans too, as in JAX; NumPy 2 raises)


@_composite
def sign(x: Any, /):
    """-1, 0 or 1 by the sign of `x` (NaN stays NaN; complex gives x/|x|)."""
    (x,) = _promote("sign", x)
    kind = _dt.kind(aval_of(x).dtype)
    if kind == "b":
        raise TypeError("sign: ufunc 'sign' does not support boolean arrays")
    if kind == "u":
        return lax._convert_element_type(lax.ne(x, _const(x, 0)), aval_of(x).dtype, aval_of(x).weak_type)
    if kind == "f":  # NumPy: sign(-0.0) is +0.0 (XLA's sign keeps the zero's sign)
        return lax.select(lax.eq(x, _const(x, 0)), _const(x, 0), lax.sign(x))
    return lax.sign(x)


def abs(x: Any, /):
    """Elementwise absolute value (`abs` of a bool or unsigned array is itself; complex gives a float)."""
    (x,) = _promote("abs", x)
    return x if _dt.kind(aval_of(x).dtype) in "bu" else lax.abs(x)


absolute = abs


def floor(x: Any, /):
    """Largest integer <= x (integers are returned unchanged)."""
    (x,) = _promote("floor", x)
    return x if _dt.kind(aval_of(x).dtype) in "biu" else lax.floor(x)


def ceil(x: Any, /):
    """Smallest integer >= x (integers are returned unchanged)."""
    (x,) = _promote("ceil", x)
    return x if _dt.kind(aval_of(x).dtype) in "biu" else lax.ceil(x)


def trunc(x: Any, /):
    """Round toward zero (keeps the sign of zero: trunc(-0.5) is -0.0)."""
    (x,) = _promote("trunc", x)
    if _dt.kind(aval_of(x).dtype) in "biu":
        return x
    return lax.select(lax.lt(x, _const(x, 0)), lax.ceil(x), lax.floor(x))


fix = trunc


def round(a: Any, decimals: int = 0, out=None):
    """Round half to even at `decimals` digits, as NumPy does (via scaling when decimals != 0)."""
    (a,) = _promote("round", a)
    av = aval_of(a)
    if _dt.kind(av.dtype) in "biu":
        if decimals >= 0 or av.dtype == np.bool_:
            return a
        # NumPy's half to even (JAX raises here): floor(a / f) = q, r = a - q f in [0, f), up where r > f - r or a
        # tie with q odd; wrapping as NumPy's. (floor((a + f/2) / f) f rounded halves up: round(25, -1) was 30.)
        if 10 ** (-decimals) > np.iinfo(av.dtype).max:
            return lax.full_like(a, 0)
        factor = _const(a, 10 ** (-decimals))
        q = floor_divide(a, factor)
        r = lax.sub(a, lax.mul(q, factor))
        half = lax.sub(factor, r)
        odd = lax.ne(lax.rem(q, _const(q, 2)), _const(q, 0))
        up = lax.bitwise_or(lax.gt(r, half), lax.bitwise_and(lax.eq(r, half), odd))
        return lax.mul(lax.select(up, lax.add(q, _const(q, 1)), q), factor)
    if decimals > np.log10(float(_dt.finfo(av.dtype).max)):  # beyond the precision: a no-op, as JAX's
        return a
    if _dt.kind(av.dtype) == "c":
        return lax.complex(round(lax.real(a), decimals), round(lax.imag(a), decimals))
    if decimals == 0:
        return _rint(a)
    if av.dtype == np.float16:  # scaled in float32, as JAX's (x * 10 overflowed float16 near 6550: inf)
        return lax._convert_element_type(round(lax._convert_element_type(a, np.float32), decimals), np.float16)
    factor = _const(a, 10.0 ** decimals)
    return lax.div(_rint(lax.mul(a, factor)), factor)


around = round_ = round


def rint(x: Any, /):
    """Round to the nearest integer, halves to even (integers become the default float, as in JAX; complex values
    part by part)."""
    (x,) = _to_float("rint", x, to=lambda dt: _dt.default_float())
    kind = _dt.kind(aval_of(x).dtype)
    if kind == "c":  # each part, as NumPy and JAX
        return lax.complex(_rint(lax.real(x)), _rint(lax.imag(x)))
    return _rint(x) if kind == "f" else x


def invert(x: Any, /):
    """Bitwise not (logical not for booleans)."""
    (x,) = _promote("invert", x)
    if _dt.kind(aval_of(x).dtype) not in "biu":
        raise TypeError(f"invert: ufunc 'invert' not supported for dtype {aval_of(x).dtype}")
    return lax.bitwise_not(x)


bitwise_not = bitwise_invert = invert


def logical_not(x: Any, /):
    return lax.bitwise_not(astype(x, bool))


def logical_and(x1: Any, x2: Any, /):
    return bitwise_and(astype(x1, bool), astype(x2, bool))


def logical_or(x1: Any, x2: Any, /):
    return bitwise_or(astype(x1, bool), astype(x2, bool))


def logical_xor(x1: Any, x2: Any, /):
    return bitwise_xor(astype(x1, bool), astype(x2, bool))


def _numeric(x1, x2):
    """Booleans as int32 (JAX's `promote_dtypes_numeric`, under x64 too): its integer-only functions take them."""
    if aval_of(x1).dtype != np.bool_:
        return x1, x2
    return lax._convert_element_type(x1, np.int32), lax._convert_element_type(x2, np.int32)


def _shift(fname: str, x1, x2, right: bool):
    x1, x2 = _numeric(*_broadcast(fname, *_promote(fname, x1, x2)))
    kind = _dt.kind(aval_of(x1).dtype)
    if kind not in "iu":
        raise TypeError(f"{fname}: ufunc '{fname}' not supported for dtype {aval_of(x1).dtype} (integers only)")
    if not right:
        return lax.shift_left(x1, x2)
    return (lax.shift_right_arithmetic if kind == "i" else lax.shift_right_logical)(x1, x2)


def left_shift(x1: Any, x2: Any, /):
    """`x1 << x2`; shifting by the bit width or more gives 0, as in NumPy."""
    return _shift("left_shift", x1, x2, right=False)


def right_shift(x1: Any, x2: Any, /):
    """`x1 >> x2`: arithmetic for signed integers, logical for unsigned ones."""
    return _shift("right_shift", x1, x2, right=True)


bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


def _int_divisor(x1, x2):
    """A divisor that never traps: 1 where x2 == 0 or where x1 // x2 overflows (INT_MIN // -1)."""
    zero = lax.eq(x2, _const(x2, 0))
    bad = zero
    dt = aval_of(x1).dtype
    if _dt.kind(dt) == "i":
        overflow = lax.bitwise_and(lax.eq(x1, _const(x1, np.iinfo(dt).min)), lax.eq(x2, _const(x2, -1)))
        bad = lax.bitwise_or(zero, overflow)
    return zero, lax.select(bad, _const(x2, 1), x2)


def _float_divmod(x1, x2):
    """JAX's floating divmod (NumPy's results, including the sign of the remainder)."""
    mod = lax.rem(x1, x2)
    div = lax.div(lax.sub(x1, mod), x2)
    ind = lax.bitwise_and(lax.ne(mod, _const(mod, 0)), lax.ne(lax.lt(x2, _const(x2, 0)), lax.lt(mod, _const(mod, 0))))
    mod = lax.select(ind, lax.add(mod, x2), mod)
    div = lax.select(ind, lax.sub(div, _const(div, 1)), div)
    return _rint(div), mod


@_composite
def floor_divide(x1: Any, x2: Any, /):
    """`x1 // x2`, rounding toward minus infinity; integer division by zero gives 0, as in NumPy."""
    x1, x2 = _numeric(*_broadcast("floor_divide", *_promote("floor_divide", x1, x2)))
    kind = _dt.kind(aval_of(x1).dtype)
    if kind == "c":
        raise TypeError("floor_divide is not defined for complex arrays")
    if kind == "f":
        div, _ = _float_divmod(x1, x2)
        return lax.select(lax.eq(x2, _const(x2, 0)), lax.div(x1, x2), div)
    zero, d = _int_divisor(x1, x2)
    q = lax.div(x1, d)
    if kind == "i":  # (the remainder as x1 - q*d, exact: one division, not two, where each is a kernel's call)
        adjust = lax.bitwise_and(lax.ne(lax.lt(x1, _const(x1, 0)), lax.lt(d, _const(d, 0))),
                                 lax.ne(lax.sub(x1, lax.mul(q, d)), _const(x1, 0)))
        q = lax.select(adjust, lax.sub(q, _const(q, 1)), q)
    return lax.select(zero, _const(q, 0), q)


@_composite
def remainder(x1: Any, x2: Any, /):
    """`x1 % x2` with the sign of `x2`; integer remainder by zero gives 0, as in NumPy."""
    x1, x2 = _numeric(*_broadcast("remainder", *_promote("remainder", x1, x2)))
    kind = _dt.kind(aval_of(x1).dtype)
    if kind == "c":
        raise TypeError(f"remainder is not defined for {aval_of(x1).dtype} arrays")
    if kind == "f":
        return _float_divmod(x1, x2)[1]
    zero, d = _int_divisor(x1, x2)
    r = lax.rem(x1, d)
    if kind == "i":
        fix = lax.bitwise_and(lax.ne(r, _const(r, 0)), lax.ne(lax.lt(r, _const(r, 0)), lax.lt(d, _const(d, 0))))
        r = lax.select(fix, lax.add(r, d), r)
    return lax.select(zero, _const(r, 0), r)


mod = remainder


@_composite
def fmod(x1: Any, x2: Any, /):
    """C-style remainder (the sign of `x1`); integer fmod by zero gives 0."""
    x1, x2 = _numeric(*_broadcast("fmod", *_promote("fmod", x1, x2)))
    if _dt.kind(aval_of(x1).dtype) == "f":
        return lax.rem(x1, x2)
    zero, d = _int_divisor(x1, x2)
    return lax.select(zero, _const(x1, 0), lax.rem(x1, d))


@_composite
def divmod(x1: Any, x2: Any, /):
    return floor_divide(x1, x2), remainder(x1, x2)


@_composite
def _int_power(x1, x2):
    """Integer `x1 ** x2` by binary exponentiation over every bit of the exponent (wraps like NumPy). A negative
    exponent gives 1 / x1**|x2| truncated (1, -1 or 0; 0 for x1 = 0), eager and traced alike: NumPy raises there,
    JAX gives these for |x1| < 3 and wrapped powers beyond."""
    dt = aval_of(x1).dtype
    neg = lax.lt(x2, _const(x2, 0)) if _dt.kind(dt) == "i" else None
    acc, base, e = lax.full_like(x1, 1), x1, x2
    for _ in range(dt.itemsize * 8 - (_dt.kind(dt) == "i")):
        acc = lax.select(lax.ne(lax.bitwise_and(e, _const(e, 1)), _const(e, 0)), lax.mul(acc, base), acc)
        base = lax.mul(base, base)
        e = lax.shift_right_logical(e, _const(e, 1))
    if neg is not None:  # negative exponents: the integer part of 1 / x1**|x2|
        one, m_one = lax.eq(x1, _const(x1, 1)), lax.eq(x1, _const(x1, -1))
        odd = lax.ne(lax.bitwise_and(x2, _const(x2, 1)), _const(x2, 0))
        inv = lax.select(one, _const(x1, 1), lax.select(m_one, lax.select(odd, _const(x1, -1), _const(x1, 1)),
                                                                 _const(x1, 0)))
        acc = lax.select(neg, inv, acc)
    return acc


def power(x1: Any, x2: Any, /):
    """`x1 ** x2`; a static integer exponent multiplies (exact, and what `x ** 2` usually means)."""
    if isinstance(x2, (int, np.integer)) and not isinstance(x2, bool) and not _is_array(x2):
        (x1,) = _promote("power", x1)
        if aval_of(x1).dtype == np.bool_:  # (int32 under x64 too: JAX's `to_numeric_dtype`)
            x1 = lax._convert_element_type(x1, np.int32)
        if _dt.kind(aval_of(x1).dtype) in "iu" and x2 < 0:
            raise ValueError("Integers to negative integer powers are not allowed.")
        return lax.integer_pow(x1, int(x2))
    if type(x1) is Array:
        a = x1.aval
        if type(x2) is Array:  # (eager, one inexact dtype and shape: as below, without steps; for floats lax.pow's
            if a == x2.aval and not a.weak_type and a.dtype.kind in "fc":  # composite itself, its checks no-ops here)
                return lax._c99_pow_graph(x1, x2) if a.dtype.kind == "f" else _inexact_power(x1, x2)
            if a.dtype == x2.aval.dtype and a.dtype.kind == "f" and not a.weak_type and not x2.aval.weak_type:
                return _scalar_power(x1, x2)  # (one broadcast to the other: the broadcast inside the composite)
        elif type(x2) is float and a.dtype.kind == "f":  # (eager `x ** 2.5`: one composite keyed by the exponent;
            return lax.pow(x1, x2) if x2 == 2 else _scalar_power(x1, x2)  # `x ** 2.`: lax.pow's x * x, as traced)
    elif type(x1) is float and type(x2) is Array and x2.aval.dtype.kind == "f":  # (`2.0 ** x`: likewise)
        return _scalar_power(x1, x2)
    x1, x2 = _promote("power", x1, x2)
    if not aval_of(x1).shape and lax._plain_base(x1, x2) or not aval_of(x2).shape and lax._squares(x1, x2):
        return lax.pow(x1, x2)  # (`0.9 ** t`, `x ** 2.0`: the scalar kept known, lax.pow broadcasts it)
    x1, x2 = _broadcast("power", x1, x2)
    kind = _dt.kind(aval_of(x1).dtype)
    if kind == "b":
        x1, x2 = _numeric(x1, x2)
        kind = "i"
    if kind in "iu":
        return _int_power(x1, x2)
    return _inexact_power(x1, x2)


def _inexact_power(x1, x2):
    """`lax.pow` of float or complex operands of one dtype and shape: several primitives (its special cases; eager,
    one composite: `lax._c99_pow_graph`)."""
    return lax.pow(x1, x2)


def _scalar_power(x1, x2):
    """`x1 ** x2` of a float Array and a Python float (either way round), or of float Arrays of one dtype, one
    broadcast to the other: promotion, broadcast and `_inexact_power`'s graph, one composite (op by op a 4x4 array
    to a (4, 1) one's power broadcast first, then keyed the pow's composite: 112 us, JAX 8)."""
    return lax.pow(*_broadcast("power", *_promote("power", x1, x2)))


def _ordinary_scalar_powers(x1, x2) -> bool:
    """`lax._ordinary_powers` with the Python float as the graph has it (rounded to the array's dtype)."""
    if type(x1) is float:
        return x2.dtype in (np.float32, np.float64) and lax._ordinary_powers(np.array(x1, x2.dtype), x2)
    return x1.dtype in (np.float32, np.float64) and lax._ordinary_powers(x1, np.array(x2, x1.dtype))


_scalar_power.eager_case = (_ordinary_scalar_powers,
                            lambda x1, x2: _raw_pow(*_broadcast("power", *_promote("power", x1, x2))))
_scalar_power = _composite(_scalar_power)


pow = power


def _square(x):
    """`power(x, 2)`'s graph (`integer_pow`: the product `x * x`), bool as int32, without its Python steps."""
    if aval_of(x).dtype == np.bool_:  # (int32 under x64 too, as `power`)
        x = lax._convert_element_type(x, np.int32)
    return lax.mul(x, x)


# (eager through `_elementwise`'s per-signature operands, as `multiply`: 4x4 float32 ~7.2 -> ~5.9 us)
square = _unary("square", _square)


def reciprocal(x: Any, /):
    """`1 / x` in x's inexact type (bool and integers to `dtypes.to_inexact`, as JAX's; NumPy divides integers)."""
    (x,) = _to_float("reciprocal", x)
    return true_divide(1, x)


def exp2(x: Any, /):
    (x,) = _to_float("exp2", x)
    if _dt.kind(aval_of(x).dtype) != "c":
        return lax.exp2(x)
    y = _raw_pow(_const(x, 2), x)  # (a positive base: the primitive is exact there)
    # A complex x with an inf or NaN part: exp of x's parts times ln 2 (NumPy's nc_exp2, C99's cexp special values);
    # the power's complex product x log 2 makes inf + 0j into inf + NaN j, so exp2(inf + 0j) would be inf + NaN j.
    re, im = lax.real(x), lax.imag(x)
    e = lax.exp(lax.complex(lax.mul(re, _const(re, math.log(2))), lax.mul(im, _const(im, math.log(2)))))
    fin = lax.bitwise_and(lax.is_finite(re), lax.is_finite(im))  # (parts selected: Vulkan has no complex select)
    return lax.complex(lax.select(fin, lax.real(y), lax.real(e)), lax.select(fin, lax.imag(y), lax.imag(e)))


def _log_base(name: str, x, base: float):
    """log(x) / log(base); a complex log's parts each divided by the real log(base) (a complex division would
    make log10(0j) -inf + NaN j from 0 * inf)."""
    (x,) = _to_float(name, x)
    dt = np.dtype(aval_of(x).dtype)
    if dt.itemsize == 2:  # float16, bfloat16: in float32, rounded once (the log rounded, then the quotient, was up to
        # 0.7 ulps: bfloat16 log2(20) 4.34375, not 4.3125; JAX's the same)
        y = lax.log(lax.convert_element_type(x, np.float32))
        return lax.convert_element_type(lax.div(y, _const(y, math.log(base))), dt)
    y = lax.log(x)
    if _dt.kind(aval_of(y).dtype) != "c":
        return lax.div(y, _const(y, math.log(base)))
    re, im = lax.real(y), lax.imag(y)
    return lax.complex(lax.div(re, _const(re, math.log(base))), lax.div(im, _const(im, math.log(base))))


def log2(x: Any, /):
    return _log_base("log2", x, 2)


def log10(x: Any, /):
    return _log_base("log10", x, 10)


def _logaddexp(x1: Any, x2: Any, /):
    """log(exp(x1) + exp(x2)) without overflow."""
    x1, x2 = _broadcast("logaddexp", *_to_float("logaddexp", x1, x2))
    if _dt.kind(aval_of(x1).dtype) == "c":
        raise NotImplementedError(f"logaddexp of complex arguments ({aval_of(x1).dtype}) is not in stagec yet; "
                                  "write snp.log(snp.exp(x1) + snp.exp(x2))")
    amax = lax.max(x1, x2)
    delta = lax.sub(x1, x2)
    finite = lax.select(lax.ne(delta, delta), lax.add(x1, x2),  # both inf of one sign -> that inf; nan -> nan
                        lax.add(amax, lax.log1p(lax.exp(lax.neg(lax.abs(delta))))))
    return finite


# JAX's derivative: t1 exp(x1 - out) + t2 exp(x2 - out) (1/2 each where x1 == x2; the formula above has 1 and 0)
logaddexp = custom_jvp(_logaddexp)
logaddexp.__name__ = logaddexp.__qualname__ = "logaddexp"


@logaddexp.defjvp
def _logaddexp_jvp(primals, tangents):
    x1, x2 = _broadcast("logaddexp", *_to_float("logaddexp", *primals))
    out = logaddexp(x1, x2)  # (itself: the weights' own derivatives are this rule's, not the max's and |x1 - x2|'s)

    def part(x, t):  # (+inf is read as 0: a finite weight, not inf - inf)
        t = _tangent_like(t, out)
        safe = [lax.select(lax.eq(v, _const(v, np.inf)), _const(v, 0), v) for v in (x, out)]
        return lax.mul(t, lax.exp(lax.sub(*safe)))
    return out, lax.add(part(x1, tangents[0]), part(x2, tangents[1]))


def hypot(x1: Any, x2: Any, /):
    """sqrt(x1**2 + x2**2) without intermediate overflow; inf if either is infinite (even with NaN)."""
    x1, x2 = _broadcast("hypot", *_to_float("hypot", x1, x2))
    a, b = lax.abs(x1), lax.abs(x2)
    hi, lo = lax.max(a, b), lax.min(a, b)
    r = lax.div(lo, hi)
    out = lax.mul(hi, lax.sqrt(lax.add(_const(r, 1), lax.mul(r, r))))
    # hi * sqrt(1 + (lo/hi)^2) is NaN wherever a special case differs from it: both zero (0/0), an infinity beside
    # an infinity or a NaN (inf/inf, max's NaN); an infinity beside a finite value already gives inf. Those are
    # fixed where `out` is NaN only: the same values as selecting on zero and infinity everywhere, and an eager
    # composite skips the fix's steps when no element is NaN (100K float32: 14 steps and 2 counts -> 10 and 1).
    inf = _const(a, np.inf)
    any_inf = lax.bitwise_or(lax.eq(a, inf), lax.eq(b, inf))
    fixed = lax.select(any_inf, inf, lax.select(lax.eq(hi, _const(hi, 0)), hi, out))
    return lax.select(lax.ne(out, out), fixed, out)


def isnan(x: Any, /):
    (x,) = _promote("isnan", x)
    return lax.ne(x, x)


def isinf(x: Any, /):
    (x,) = _promote("isinf", x)
    if _dt.kind(aval_of(x).dtype) != "f":
        if _dt.kind(aval_of(x).dtype) == "c":
            return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
        return lax.ne(x, x) if _dt.kind(aval_of(x).dtype) in "biu" else x
    return lax.eq(lax.abs(x), _const(x, np.inf))


def isposinf(x: Any, /):
    (x,) = _promote("isposinf", x)
    return lax.eq(x, _const(x, np.inf)) if _dt.kind(aval_of(x).dtype) == "f" else lax.ne(x, x)


def isneginf(x: Any, /):
    (x,) = _promote("isneginf", x)
    return lax.eq(x, _const(x, -np.inf)) if _dt.kind(aval_of(x).dtype) == "f" else lax.ne(x, x)


def isfinite(x: Any, /):
    (x,) = _promote("isfinite", x)
    if _dt.kind(aval_of(x).dtype) in "biu":
        return lax.eq(x, x)
    if _dt.kind(aval_of(x).dtype) == "c":
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return lax.is_finite(x)


def fmax(x1: Any, x2: Any, /):
    """Elementwise maximum that ignores NaN (NaN only where both are NaN)."""
    x1, x2 = _broadcast("fmax", *_promote("fmax", x1, x2))
    if _dt.kind(aval_of(x1).dtype) != "f":
        return lax.max(x1, x2)
    return lax.select(lax.ne(x2, x2), x1, lax.select(lax.ne(x1, x1), x2, lax.max(x1, x2)))


def fmin(x1: Any, x2: Any, /):
    """Elementwise minimum that ignores NaN (NaN only where both are NaN)."""
    x1, x2 = _broadcast("fmin", *_promote("fmin", x1, x2))
    if _dt.kind(aval_of(x1).dtype) != "f":
        return lax.min(x1, x2)
    return lax.select(lax.ne(x2, x2), x1, lax.select(lax.ne(x1, x1), x2, lax.min(x1, x2)))


def signbit(x: Any, /):
    """True where the sign bit is set: -0.0 and -NaN included (a float's bits read as a signed integer's)."""
    (x,) = _promote("signbit", x)
    dt = aval_of(x).dtype
    if _dt.kind(dt) in "bu":
        return lax.ne(x, x)
    if _dt.kind(dt) == "i":
        return lax.lt(x, _const(x, 0))
    if _dt.kind(dt) == "c":
        raise ValueError(f"signbit is not well defined for {dt} (as in JAX)")
    bits = lax.bitcast_convert_type(x, np.dtype(f"int{np.dtype(dt).itemsize * 8}"))
    return lax.lt(bits, _const(bits, 0))


def copysign(x1: Any, x2: Any, /):
    x1, x2 = _broadcast("copysign", *_to_float("copysign", x1, x2))
    a = lax.abs(x1)
    return lax.select(signbit(x2), lax.neg(a), a)


def where(condition: Any, x: Any = None, y: Any = None, /, *, size: int | None = None, fill_value=None):
    """`x` where `condition` else `y`, broadcast together. The one-argument form is `nonzero`: its shape
    depends on the data, so under `jit` it needs a static `size=` (padded with `fill_value`)."""
    if x is None and y is None:
        from ._nonzero import nonzero
        return nonzero(condition, size=size, fill_value=fill_value)
    if size is not None or fill_value is not None:
        raise ValueError("where: size and fill_value apply only to the one-argument form where(condition)")
    if x is None or y is None:
        raise ValueError("where: either both or neither of x and y should be given")
    if type(condition) is Array and type(x) is Array and type(y) is Array and condition.aval.dtype == np.bool_ and \
            x.aval == y.aval and condition.aval.shape == x.aval.shape:
        return lax.select(condition, x, y)  # (eager, nothing to convert or broadcast)
    return _where3(condition, x, y)  # (eager: conversions, broadcasts and the select, one composite)


def _where3(condition, x, y):
    """`where(condition, x, y)`: op by op an operand's broadcast was a dispatch of its own (where(c, x, m) of 4x4
    and (4, 1): 37 us, JAX 6)."""
    condition = astype(condition, bool) if aval_of(condition).dtype != np.bool_ else condition
    x, y = _promote("where", x, y)
    c, x, y = _broadcast("where", condition, x, y)
    return lax.select(c, x, y)


_where3 = _composite(_where3)


def select(condlist, choicelist, default: Any = 0):
    """The element of the first choice whose condition holds, else `default` (NumPy's `select`; a condition of
    another dtype holds where nonzero, as JAX's, where NumPy raises)."""
    if len(condlist) != len(choicelist):
        raise ValueError("select: list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    out = default
    for c, v in reversed(list(zip(condlist, choicelist))):
        out = where(c if aval_of(c).dtype == np.bool_ else not_equal(c, 0), v, out)
    return out


@_composite
def clip(a: Any, a_min: Any = None, a_max: Any = None, *, min: Any = None, max: Any = None):
    """`minimum(maximum(a, a_min), a_max)`, bounds broadcasting (arrays or scalars); NaN stays NaN and a_min >
    a_max gives a_max, as in NumPy. With no bound, `a` itself (the Array API's rule)."""
    a_min = min if a_min is None else a_min
    a_max = max if a_max is None else a_max
    if a_min is None and a_max is None:
        return a if _is_array(a) else asarray(a)
    if a_min is not None:
        a = maximum(a, a_min)
    if a_max is not None:
        a = minimum(a, a_max)
    return a


def conjugate(x: Any, /):
    """The complex conjugate (real inputs are returned unchanged)."""
    (x,) = _promote("conjugate", x)
    return lax.conj(x) if _dt.kind(aval_of(x).dtype) == "c" else x


conj = conjugate


def real(val: Any, /):
    """The real part (real inputs are returned unchanged)."""
    (val,) = _promote("real", val)
    return lax.real(val) if _dt.kind(aval_of(val).dtype) == "c" else val


def imag(val: Any, /):
    """The imaginary part (zeros for real inputs)."""
    (val,) = _promote("imag", val)
    return lax.imag(val) if _dt.kind(aval_of(val).dtype) == "c" else lax.full_like(val, 0)


def angle(z: Any, deg: bool = False):
    """The argument of complex `z` (atan2(imag, real)), in radians or degrees."""
    (z,) = _promote("angle", z)
    if _dt.kind(aval_of(z).dtype) != "c":
        (z,) = _to_float("angle", z, to=lambda dt: _dt.default_float())
    a = arctan2(imag(z), real(z))
    return lax.mul(a, _const(a, 180 / np.pi)) if deg else a
