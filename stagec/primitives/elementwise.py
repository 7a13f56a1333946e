"""Elementwise primitives: arithmetic, comparisons, `select`, `clamp`, conversions and complex parts.

Primitives are strict, as in `jax.lax`: operands have equal shapes and dtypes; broadcasting and type
promotion happen above, in `stagec.numpy`. Each primitive is defined once here with its shape rule, its
StableHLO emission and its strict wrapper function (re-exported by `stagec.lax`).
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as _dt
from .. import lowering as L
from ..core import Const, Primitive, ShapedArray, aval_of, to_numpy_constant
from . import _ad
from ._util import ANY, FLOAT, FLOAT_OR_COMPLEX, INT_OR_BOOL, NUMBER, check_kind, of_kinds, same_shapes


def _wrapper(prim: Primitive, name: str, doc: str):
    def op(*xs):
        return prim.bind(*(match_weak(*xs) if len(xs) == 2 else xs))
    op.__name__, op.__qualname__, op.__doc__ = name, name, doc
    return op


def _emit(opname: str):
    """The emission rule `stablehlo.<opname>` (or `chlo.<opname>`), with boolean add/mul as or/and and
    complex max/min in NumPy's order (`lowering.combine`)."""
    def rule(ctx: L.Ctx, *xs):
        if opname in ("add", "multiply") and ctx.avals_in[0].dtype == np.bool_:
            return [ctx.op1("stablehlo." + ("or" if opname == "add" else "and"), xs)]
        if opname in ("abs", "sign") and _dt.kind(ctx.avals_in[0].dtype) == "u":  # (no unsigned stablehlo op)
            if opname == "abs":
                return [xs[0]]
            nonzero = L.compare(ctx, xs[0], L.fill(ctx, 0, xs[0], ctx.avals_in[0]), "NE", ctx.avals_in[0])
            return [ctx.op1("stablehlo.convert", [nonzero])]
        if opname in ("maximum", "minimum"):
            return [L.combine(ctx, opname, *xs, ctx.avals_out[0])]
        if opname == "rsqrt" and _dt.kind(ctx.avals_in[0].dtype) == "c":  # 1 / sqrt: IREE's complex rsqrt took
            # the upper side of the cut for a -0 imaginary part (rsqrt(-2.5-0j) was -0.632j; sqrt gives -1.581j)
            root = ctx.op1("stablehlo.sqrt", xs)
            return [ctx.op1("stablehlo.divide", [L.fill(ctx, 1, root, ctx.avals_in[0]), root])]
        return [ctx.op1(opname if "." in opname else "stablehlo." + opname, xs)]
    return rule


def unary(name: str, kinds: str, op: str, out_dtype=None) -> Primitive:
    """A unary primitive emitted as the StableHLO/CHLO op `op`."""
    def rule(x: ShapedArray) -> ShapedArray:
        check_kind(name, x, kinds)
        if out_dtype is not None:
            return ShapedArray(x.shape, out_dtype)
        if name == "abs" and _dt.kind(x.dtype) == "c":
            return ShapedArray(x.shape, np.finfo(x.dtype).dtype, x.weak_type)
        return x
    prim = Primitive(name, rule)
    prim.def_lowering(_emit(op))
    return prim


def binary(name: str, kinds: str, op: str, out_dtype=None) -> Primitive:
    """A binary primitive on operands of equal shape and dtype, emitted as `op`."""
    def rule(x: ShapedArray, y: ShapedArray) -> ShapedArray:
        same_shapes(name, x, y)
        check_kind(name, x, kinds)
        return ShapedArray(x.shape, out_dtype or x.dtype, x.weak_type and y.weak_type and out_dtype is None)
    prim = Primitive(name, rule)
    prim.def_lowering(_emit(op))
    return prim


# ---- unary
neg_p = unary("neg", NUMBER, "negate")
sign_p = unary("sign", NUMBER, "sign")
abs_p = unary("abs", NUMBER, "abs")
floor_p = unary("floor", FLOAT, "floor")
ceil_p = unary("ceil", FLOAT, "ceil")
round_p = unary("round", FLOAT, "round_nearest_even")
round_afz_p = unary("round_afz", FLOAT, "round_nearest_afz")
exp_p = unary("exp", FLOAT_OR_COMPLEX, "exponential")
expm1_p = unary("expm1", FLOAT_OR_COMPLEX, "exponential_minus_one")
exp2_p = unary("exp2", FLOAT, "power")


@exp2_p.def_lowering
def _exp2_lower(ctx: L.Ctx, x):
    """2^x as `stablehlo.power` of a splat 2 (passes/mathlib.py expands that as exp2: within an ulp; e^(x ln 2)
    took x ln 2's rounding, 63 float32 ulps at |x| = 126). Complex exp2 stays `pow` (`lax.exp2`)."""
    return [ctx.op1("stablehlo.power", [L.fill(ctx, 2, x, ctx.avals_in[0]), x])]
log_p = unary("log", FLOAT_OR_COMPLEX, "log")
log1p_p = unary("log1p", FLOAT_OR_COMPLEX, "log_plus_one")
tanh_p = unary("tanh", FLOAT_OR_COMPLEX, "tanh")
logistic_p = unary("logistic", FLOAT_OR_COMPLEX, "logistic")
sin_p = unary("sin", FLOAT_OR_COMPLEX, "sine")
cos_p = unary("cos", FLOAT_OR_COMPLEX, "cosine")
tan_p = unary("tan", FLOAT_OR_COMPLEX, "tan")
sqrt_p = unary("sqrt", FLOAT_OR_COMPLEX, "sqrt")
rsqrt_p = unary("rsqrt", FLOAT_OR_COMPLEX, "rsqrt")
cbrt_p = unary("cbrt", FLOAT, "cbrt")
not_p = unary("not", INT_OR_BOOL, "not")
is_finite_p = unary("is_finite", FLOAT, "is_finite", out_dtype=np.dtype(bool))
# StableHLO leaves these to its CHLO companion dialect (IREE legalizes them).
asin_p = unary("asin", FLOAT_OR_COMPLEX, "chlo.asin")
acos_p = unary("acos", FLOAT_OR_COMPLEX, "chlo.acos")
atan_p = unary("atan", FLOAT_OR_COMPLEX, "chlo.atan")
sinh_p = unary("sinh", FLOAT_OR_COMPLEX, "chlo.sinh")
cosh_p = unary("cosh", FLOAT_OR_COMPLEX, "chlo.cosh")
asinh_p = unary("asinh", FLOAT_OR_COMPLEX, "chlo.asinh")
acosh_p = unary("acosh", FLOAT_OR_COMPLEX, "chlo.acosh")
atanh_p = unary("atanh", FLOAT_OR_COMPLEX, "chlo.atanh")
erf_p = unary("erf", FLOAT, "chlo.erf")
erfc_p = unary("erfc", FLOAT, "chlo.erfc")
erf_inv_p = unary("erf_inv", FLOAT, "chlo.erf_inv")
lgamma_p = unary("lgamma", FLOAT, "chlo.lgamma")
digamma_p = unary("digamma", FLOAT, "chlo.digamma")

# ---- binary (boolean add/mul are logical or/and, as in XLA)
add_p = binary("add", ANY, "add")
sub_p = binary("sub", NUMBER, "subtract")
mul_p = binary("mul", ANY, "multiply")
div_p = binary("div", NUMBER, "divide")
rem_p = binary("rem", NUMBER, "remainder")
pow_p = binary("pow", FLOAT_OR_COMPLEX, "power")
max_p = binary("max", ANY, "maximum")
min_p = binary("min", ANY, "minimum")
and_p = binary("and", INT_OR_BOOL, "and")
or_p = binary("or", INT_OR_BOOL, "or")
xor_p = binary("xor", INT_OR_BOOL, "xor")
atan2_p = binary("atan2", FLOAT, "atan2")
shift_left_p = binary("shift_left", "iu", "shift_left")
shift_right_arithmetic_p = binary("shift_right_arithmetic", "iu", "shift_right_arithmetic")
shift_right_logical_p = binary("shift_right_logical", "iu", "shift_right_logical")



# ---- comparisons
def _compare(direction: str) -> Primitive:
    def rule(x: ShapedArray, y: ShapedArray) -> ShapedArray:
        same_shapes(direction.lower(), x, y)
        return ShapedArray(x.shape, np.dtype(bool))
    prim = Primitive(direction.lower(), rule)
    prim.def_lowering(lambda ctx, x, y: [L.compare(ctx, x, y, direction, ctx.avals_in[0])])
    return prim


eq_p, ne_p, lt_p, le_p, gt_p, ge_p = map(_compare, ("EQ", "NE", "LT", "LE", "GT", "GE"))


# ---- select, clamp, conversions
def _select_rule(pred: ShapedArray, on_true: ShapedArray, on_false: ShapedArray) -> ShapedArray:
    if pred.dtype != np.bool_:
        raise TypeError(f"select needs a boolean predicate, got {pred.dtype}")
    same_shapes("select", on_true, on_false)
    if pred.shape not in ((), on_true.shape):
        raise TypeError(f"select got predicate shape {pred.shape} for operands of shape {on_true.shape}")
    return ShapedArray(on_true.shape, on_true.dtype, on_true.weak_type and on_false.weak_type)


select_p = Primitive("select", _select_rule)
select_p.def_lowering(lambda ctx, pred, t, f: [ctx.op1("stablehlo.select", [pred, t, f])])


def _clamp_rule(lo: ShapedArray, x: ShapedArray, hi: ShapedArray) -> ShapedArray:
    same_shapes("clamp", lo, x, hi)
    check_kind("clamp", x, ANY)
    return x.update(weak_type=x.weak_type and lo.weak_type and hi.weak_type)


clamp_p = Primitive("clamp", _clamp_rule)
clamp_p.def_lowering(lambda ctx, lo, x, hi: [ctx.op1("stablehlo.clamp", [lo, x, hi])])


def _convert_rule(x: ShapedArray, *, new_dtype, weak_type: bool) -> ShapedArray:
    return ShapedArray(x.shape, new_dtype, weak_type)


convert_element_type_p = Primitive("convert_element_type", _convert_rule)


@convert_element_type_p.def_lowering
def _convert_lower(ctx: L.Ctx, x, *, new_dtype, weak_type):
    src, dst = ctx.avals_in[0], ctx.avals_out[0]
    if src.dtype == dst.dtype:
        return [x]
    if dst.dtype == np.bool_:  # any -> bool is `x != 0`, as NumPy defines it
        return [L.compare(ctx, x, L.fill(ctx, 0, x, src), "NE", src)]
    if _dt.kind(src.dtype) in "fc" and _dt.kind(dst.dtype) in "iu":
        if _dt.kind(src.dtype) == "c":  # the real part's (as JAX's)
            src = src.update(dtype=np.finfo(src.dtype).dtype)
            x = ctx.op1("stablehlo.real", [x], result_avals=[src])
        return [_float_to_int(ctx, x, src, dst)]
    return [ctx.op1("stablehlo.convert", [x])]


def _float_to_int(ctx: L.Ctx, x, src: ShapedArray, dst: ShapedArray):
    """float -> integer as XLA's (so JAX's): toward zero, saturated at the integer's bounds, NaN to 0. StableHLO
    leaves out-of-range values undefined; IREE's CPU code gave INT_MIN for NaN, 3e9 and -3e9."""
    info = np.iinfo(dst.dtype)
    with np.errstate(over="ignore"):  # (2**16 and up are inf in float16: then only inf reaches the top)
        lo, top = L.fill(ctx, float(info.min), x, src), L.fill(ctx, float(info.max) + 1, x, src)  # powers of 2 or 0
    pred = src.update(dtype=np.dtype(np.bool_), weak_type=False)
    below, above = L.compare(ctx, x, lo, "LT", src), L.compare(ctx, x, top, "GE", src)
    bad = ctx.op1("stablehlo.or", [ctx.op1("stablehlo.or", [below, above], result_avals=[pred]),
                                   L.compare(ctx, x, x, "NE", src)], result_avals=[pred])
    out = ctx.op1("stablehlo.convert", [ctx.op1("stablehlo.select", [bad, L.fill(ctx, 0, x, src), x], result_avals=[src])])
    out = ctx.op1("stablehlo.select", [above, L.fill(ctx, info.max, out, dst), out])
    return ctx.op1("stablehlo.select", [below, L.fill(ctx, info.min, out, dst), out])


# ---- complex parts
def _part_rule(name: str):
    def rule(x: ShapedArray) -> ShapedArray:
        check_kind(name, x, "c")
        return ShapedArray(x.shape, np.finfo(x.dtype).dtype, x.weak_type)
    return rule


real_p = Primitive("real", _part_rule("real"))
real_p.def_lowering(lambda ctx, x: [ctx.op1("stablehlo.real", [x])])
imag_p = Primitive("imag", _part_rule("imag"))
imag_p.def_lowering(lambda ctx, x: [ctx.op1("stablehlo.imag", [x])])


def _complex_rule(re: ShapedArray, im: ShapedArray) -> ShapedArray:
    same_shapes("complex", re, im)
    check_kind("complex", re, FLOAT)
    if re.dtype.itemsize not in (4, 8):
        raise TypeError(f"complex: parts must be float32 or float64, got {re.dtype}")
    return ShapedArray(re.shape, np.dtype(np.complex64 if re.dtype.itemsize == 4 else np.complex128),
                       re.weak_type and im.weak_type)


complex_p = Primitive("complex", _complex_rule)
complex_p.def_lowering(lambda ctx, re, im: [ctx.op1("stablehlo.complex", [re, im])])

# ---- rounding to a narrower float format (`lax.reduce_precision`)
def _reduce_precision_rule(x: ShapedArray, *, exponent_bits: int, mantissa_bits: int) -> ShapedArray:
    check_kind("reduce_precision", x, FLOAT)
    if exponent_bits < 1 or mantissa_bits < 0:
        raise ValueError(f"reduce_precision: exponent_bits={exponent_bits} must be >= 1 and "
                         f"mantissa_bits={mantissa_bits} >= 0")
    return x


reduce_precision_p = Primitive("reduce_precision", _reduce_precision_rule)


@reduce_precision_p.def_lowering
def _reduce_precision_lower(ctx: L.Ctx, x, *, exponent_bits, mantissa_bits):
    ir = L.mlir()
    i32 = ir.IntegerType.get_signless(32)
    return [ctx.op1("stablehlo.reduce_precision", [x], attributes={
        "exponent_bits": ir.IntegerAttr.get(i32, exponent_bits), "mantissa_bits": ir.IntegerAttr.get(i32, mantissa_bits)})]


# ---- the identity whose derivative is zero (`lax.stop_gradient`)
stop_gradient_p = Primitive("stop_gradient", lambda x: x)
stop_gradient_p.def_lowering(lambda ctx, x: [x])
stop_gradient_p.def_impl(lambda x: [x])


# ---------------------------------------------------------------- differentiation rules
# (the wrappers below are used at call time: the rules are differentiable themselves)

def _real_dtype_like(x):
    return np.finfo(aval_of(x).dtype).dtype


def _abs_jvp(g, ans, x):
    if _dt.kind(aval_of(x).dtype) == "c":  # d|z| = re(conj(z) dz) / |z|
        safe = select(eq(ans, _ad.full_like(ans, 0)), _ad.full_like(ans, 1), ans)
        return div(real(mul(complex(real(x), neg(imag(x))), g)), safe)
    return mul(g, select(ge(x, _ad.full_like(x, 0)), _ad.full_like(x, 1), _ad.full_like(x, -1)))


def _replace_zero(x):
    return select(eq(x, _ad.full_like(x, 0)), _ad.full_like(x, 1), x)


def _pow_jvp_x(g, ans, x, y):
    """y x^(y-1); x^0 taken as 1 where y = 1 (IREE's pow(0, 0) is NaN: d/dx x**1 at 0 was NaN)."""
    one = _ad.full_like(y, 1)
    xy1 = select(eq(y, one), one, pow(x, sub(y, one)))
    jac = select(eq(y, _ad.full_like(y, 0)), _ad.full_like(y, 0), mul(_replace_zero(y), xy1))
    return mul(g, jac)


def _balanced_eq(x, z, y):
    """1 where x == z != y, 1/2 where x == y == z, else 0 (ties share the derivative, as in JAX)."""
    one, half, zero = (_ad.full_like(z, v) for v in (1, 0.5, 0))
    return select(eq(x, z), select(eq(y, z), half, one), zero)


def _one(x):
    return _ad.full_like(x, 1)


for _p in (sign_p, floor_p, ceil_p, round_p, round_afz_p, stop_gradient_p):
    _ad.defzero(_p)
_ad.deflinear(neg_p, lambda ct, x: neg(ct))
_ad.deflinear(reduce_precision_p, lambda ct, x, **params: reduce_precision_p.bind(ct, **params))  # (as JAX's)
_ad.deflinear(real_p, lambda ct, x: complex(ct, _ad.zeros(aval_of(ct).strip_weak())))  # (JAX: a strong 0)
_ad.deflinear(imag_p, lambda ct, x: complex(_ad.zeros(aval_of(ct).strip_weak()), neg(ct)))
_ad.defjvp(abs_p, _abs_jvp)
_ad.defjvp(exp_p, lambda g, ans, x: mul(g, ans))
# expm1' = exp(x) itself: JAX's ans + 1 cancels where x < 0 (float64 elu'(-30) 1.7e-4 relative off; float32 0 below -17)
_ad.defjvp(expm1_p, lambda g, ans, x: mul(g, exp(x)))
_ad.defjvp(exp2_p, lambda g, ans, x: mul(g, mul(_ad.full_like(ans, math.log(2)), ans)))  # (pow's in y, at 2)
_ad.defjvp(log_p, lambda g, ans, x: div(g, x))
_ad.defjvp(log1p_p, lambda g, ans, x: div(g, add(x, _one(x))))
# (1 + ans)(1 - ans), JAX's form (1 - ans^2 rounds ans^2 first; either is as good as tanh's own rounding allows)
_ad.defjvp(tanh_p, lambda g, ans, x: mul(mul(g, add(_one(ans), ans)), sub(_one(ans), ans)))
_ad.defjvp(logistic_p, lambda g, ans, x: mul(g, mul(ans, sub(_one(ans), ans))))
_ad.defjvp(sin_p, lambda g, ans, x: mul(g, cos(x)))
_ad.defjvp(cos_p, lambda g, ans, x: neg(mul(g, sin(x))))
_ad.defjvp(tan_p, lambda g, ans, x: mul(g, add(_one(ans), mul(ans, ans))))
_ad.defjvp(sqrt_p, lambda g, ans, x: div(g, mul(_ad.full_like(ans, 2), ans)))
_ad.defjvp(rsqrt_p, lambda g, ans, x: mul(g, mul(_ad.full_like(x, -0.5), div(ans, x))))
_ad.defjvp(cbrt_p, lambda g, ans, x: div(g, mul(_ad.full_like(ans, 3), mul(ans, ans))))
_ad.defjvp(asin_p, lambda g, ans, x: mul(g, rsqrt(sub(_one(x), mul(x, x)))))
_ad.defjvp(acos_p, lambda g, ans, x: neg(mul(g, rsqrt(sub(_one(x), mul(x, x))))))
_ad.defjvp(atan_p, lambda g, ans, x: div(g, add(_one(x), mul(x, x))))
_ad.defjvp(sinh_p, lambda g, ans, x: mul(g, cosh(x)))
_ad.defjvp(cosh_p, lambda g, ans, x: mul(g, sinh(x)))
_ad.defjvp(asinh_p, lambda g, ans, x: mul(g, rsqrt(add(mul(x, x), _one(x)))))
_ad.defjvp(acosh_p, lambda g, ans, x: mul(g, rsqrt(mul(sub(x, _one(x)), add(x, _one(x))))))
_ad.defjvp(atanh_p, lambda g, ans, x: div(g, sub(_one(x), mul(x, x))))
_ad.defjvp(erf_p, lambda g, ans, x: mul(g, mul(_ad.full_like(x, 2 / np.sqrt(np.pi)), exp(neg(mul(x, x))))))
_ad.defjvp(erfc_p, lambda g, ans, x: mul(g, mul(_ad.full_like(x, -2 / np.sqrt(np.pi)), exp(neg(mul(x, x))))))
_ad.defjvp(erf_inv_p, lambda g, ans, x: mul(g, mul(_ad.full_like(x, np.sqrt(np.pi) / 2), exp(mul(ans, ans)))))
_ad.defjvp(lgamma_p, lambda g, ans, x: mul(g, digamma(x)))
_ad.defjvp(digamma_p, lambda g, ans, x: mul(g, _trigamma(x)))


def _trigamma(x):
    """psi'(x) (digamma's derivative, `polygamma(1, x)`): the recurrence psi'(x) = psi'(x + 1) + 1/x^2 n times,
    then its asymptotic series at x + n (to B_12; n = 6 leaves 4e-12 of it, float64's n = 16 1e-17: with 6, float64
    was 610 ulps off at 0.99); pi^2 / sin^2(pi x) - psi'(1 - x) below 1/2. +inf at the poles (as JAX's)."""
    c = lambda v: _ad.full_like(x, v)
    n = 16 if aval_of(x).dtype.itemsize == 8 else 6
    reflect = lt(x, c(0.5))
    y = select(reflect, sub(c(1.0), x), x)
    acc = c(0.0)
    for k in reversed(range(n)):  # (the smallest terms first)
        yk = add(y, c(float(k)))
        acc = add(acc, div(c(1.0), mul(yk, yk)))
    w = add(y, c(float(n)))
    iw = div(c(1.0), w)
    i2 = mul(iw, iw)
    tail = c(-691 / 2730)  # 1/w + 1/(2w^2) + sum_k B_2k / w^(2k+1), B_2 .. B_12
    for b in (5 / 66, -1 / 30, 1 / 42, -1 / 30, 1 / 6):
        tail = add(mul(tail, i2), c(b))
    series = add(acc, mul(iw, add(add(c(1.0), mul(iw, c(0.5))), mul(i2, tail))))
    xr = select(reflect, x, c(0.25))  # (the branch not taken stays finite: its derivative's 0 * inf is NaN)
    s = sin(mul(c(np.pi), sub(xr, floor(xr))))
    out = select(reflect, sub(div(c(np.pi ** 2), mul(s, s)), series), series)
    return select(and_(le(x, c(0.0)), eq(x, floor(x))), c(np.inf), out)

_ad.defjvp(add_p, lambda g, ans, x, y: g, lambda g, ans, x, y: g)
_ad.defjvp(sub_p, lambda g, ans, x, y: g, lambda g, ans, x, y: neg(g))
_ad.defjvp(mul_p, lambda g, ans, x, y: mul(g, y), lambda g, ans, x, y: mul(x, g))
_ad.defjvp(div_p, lambda g, ans, x, y: div(g, y), lambda g, ans, x, y: neg(mul(g, div(ans, y))))
_ad.defjvp(rem_p, lambda g, ans, x, y: g,
           lambda g, ans, x, y: neg(mul(g, mul(sign(div(x, y)), floor(abs(div(x, y)))))))
_ad.defjvp(pow_p, _pow_jvp_x, lambda g, ans, x, y: mul(g, mul(log(_replace_zero(x)), ans)))
_ad.defjvp(max_p, lambda g, ans, x, y: mul(g, _balanced_eq(x, ans, y)),
           lambda g, ans, x, y: mul(g, _balanced_eq(y, ans, x)))
_ad.defjvp(min_p, lambda g, ans, x, y: mul(g, _balanced_eq(x, ans, y)),
           lambda g, ans, x, y: mul(g, _balanced_eq(y, ans, x)))
_ad.defjvp(atan2_p, lambda g, ans, x, y: mul(g, div(y, add(mul(x, x), mul(y, y)))),
           lambda g, ans, x, y: neg(mul(g, div(x, add(mul(x, x), mul(y, y))))))
_ad.defjvp(complex_p, lambda g, ans, x, y: complex(g, _ad.zeros(aval_of(g))),
           lambda g, ans, x, y: complex(_ad.zeros(aval_of(g)), g))


def _transpose_each(*fns):
    def rule(ct, *args):
        return [fn(ct, *args) if ct is not None and fn is not None and _ad.is_undefined(a) else None
                for fn, a in zip(fns, args)]
    return rule


def _mul_transpose(ct, x, y):
    if _ad.is_undefined(x) and _ad.is_undefined(y):
        raise TypeError("mul of two tangents is not linear: a JVP rule multiplied tangents together")
    if ct is None:
        return [None, None]
    return [mul(ct, y), None] if _ad.is_undefined(x) else [None, mul(x, ct)]


add_p.def_transpose(_transpose_each(lambda ct, x, y: ct, lambda ct, x, y: ct))
sub_p.def_transpose(_transpose_each(lambda ct, x, y: ct, lambda ct, x, y: neg(ct)))
mul_p.def_transpose(_mul_transpose)
div_p.def_transpose(_transpose_each(lambda ct, x, y: div(ct, y), None))
complex_p.def_transpose(_transpose_each(lambda ct, x, y: real(ct), lambda ct, x, y: neg(imag(ct))))


def _select_jvp(primals, tangents):
    pred, t, f = primals
    out = select(pred, t, f)
    _, tt, tf = tangents
    if tt is None and tf is None:
        return out, None
    return out, select(pred, _ad.instantiate(tt, aval_of(t)), _ad.instantiate(tf, aval_of(f)))


def _select_transpose(ct, pred, t, f):
    if _ad.is_undefined(pred):
        raise TypeError("select: the predicate cannot be a tangent")
    if ct is None:
        return [None, None, None]
    z = _ad.zeros(aval_of(ct))
    return [None, select(pred, ct, z) if _ad.is_undefined(t) else None,
            select(pred, z, ct) if _ad.is_undefined(f) else None]


select_p.def_jvp(_select_jvp)
select_p.def_transpose(_select_transpose)


def _clamp_pick(cond, g):
    return select(cond, g, _ad.zeros(aval_of(g)))


_ad.defjvp(clamp_p,
           lambda g, ans, lo, x, hi: _clamp_pick(and_(gt(lo, x), lt(lo, hi)), g),
           lambda g, ans, lo, x, hi: _clamp_pick(and_(gt(x, lo), lt(x, hi)), g),
           lambda g, ans, lo, x, hi: _clamp_pick(lt(hi, x), g))


def and_(a, b):
    return and_p.bind(a, b)


_ad.deflinear(convert_element_type_p, lambda ct, x, *, new_dtype, weak_type: convert_element_type(
    real(ct) if _dt.kind(aval_of(ct).dtype) == "c" and _dt.kind(x.aval.dtype) != "c" else ct,
    x.aval.dtype, x.aval.weak_type))


# ---------------------------------------------------------------- strict wrappers (stagec.lax)


def convert_element_type(x, new_dtype, weak_type: bool = False):
    """Cast `x` to `new_dtype` (canonicalized for the x64 setting)."""
    new_dtype = _dt.canonicalize(new_dtype)
    aval = aval_of(x)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        return x
    if not hasattr(x, "_trace") and not hasattr(x, "_bv"):  # a constant: convert on the host
        return Const(host_convert(to_numpy_constant(x, aval), new_dtype),
                     aval.update(dtype=new_dtype, weak_type=weak_type))
    return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=bool(weak_type))


def match_weak(x, y):
    """Let a weakly typed operand take the other's dtype (the strict wrappers' only implicit conversion), where
    that keeps its value: `_weak_to`."""
    ax, ay = aval_of(x), aval_of(y)
    if ax.dtype == ay.dtype:
        return x, y
    if ax.weak_type and not ay.weak_type:
        return _weak_to(x, ax, ay.dtype), y
    if ay.weak_type and not ax.weak_type:
        return x, _weak_to(y, ay, ax.dtype)
    return x, y


def _weak_to(x, aval: ShapedArray, dtype):
    """`x`, weakly typed, in `dtype`: an integer into any number type (a known value only where the type holds
    it), a float into a float or complex type, a complex into a complex type. Else a TypeError, as JAX's lax
    (lax.add of an int32 array and 2.5 added 2, of a uint8 array and -1 added 255, max(uint8, -1) was 255)."""
    src, dst = _dt.kind(aval.dtype), _dt.kind(dtype)
    if dst not in {"i": "iufc", "u": "iufc", "f": "fc", "c": "c"}.get(src, src):
        raise TypeError(f"a weakly typed {aval.dtype} operand (a Python scalar) cannot take the other operand's "
                        f"dtype {dtype} without losing its value: lax functions need operands of one dtype "
                        f"(convert it with lax.convert_element_type, or use stagec.numpy, which promotes)")
    if dst in "iu" and not hasattr(x, "_trace") and not hasattr(x, "_bv"):  # (a known value: check its range)
        v = np.asarray(to_numpy_constant(x, aval))
        info = np.iinfo(dtype)
        if v.size and (v.min() < info.min or v.max() > info.max):
            raise TypeError(f"the Python scalar {v.min() if v.min() < info.min else v.max()} is out of range for "
                            f"the other operand's dtype {dtype} (a lax function converts it to that dtype)")
    elif src in "iu" and dst in "iu" and (np.iinfo(dtype).min > np.iinfo(aval.dtype).min or
                                         np.iinfo(dtype).max < np.iinfo(aval.dtype).max):
        raise TypeError(f"a weakly typed {aval.dtype} value of unknown value (a traced Python scalar) cannot take the "
                        f"other operand's narrower dtype {dtype}: lax functions need operands of one dtype (convert "
                        f"it with lax.convert_element_type, or use stagec.numpy, which promotes)")
    return convert_element_type(x, dtype, weak_type=False)


_UNARY = dict(neg=neg_p, sign=sign_p, abs=abs_p, floor=floor_p, ceil=ceil_p, round=round_p, round_afz=round_afz_p,
              exp=exp_p, exp2=exp2_p, expm1=expm1_p, log=log_p, log1p=log1p_p, tanh=tanh_p, logistic=logistic_p, sin=sin_p,
              cos=cos_p, tan=tan_p, sqrt=sqrt_p, rsqrt=rsqrt_p, cbrt=cbrt_p, bitwise_not=not_p,
              is_finite=is_finite_p, asin=asin_p, acos=acos_p, atan=atan_p, sinh=sinh_p, cosh=cosh_p,
              asinh=asinh_p, acosh=acosh_p, atanh=atanh_p, erf=erf_p, erfc=erfc_p, erf_inv=erf_inv_p,
              lgamma=lgamma_p, digamma=digamma_p, real=real_p, imag=imag_p)
_BINARY = dict(add=add_p, sub=sub_p, mul=mul_p, div=div_p, rem=rem_p, pow=pow_p, max=max_p, min=min_p,
               bitwise_and=and_p, bitwise_or=or_p, bitwise_xor=xor_p, atan2=atan2_p, shift_left=shift_left_p,
               shift_right_arithmetic=shift_right_arithmetic_p, shift_right_logical=shift_right_logical_p,
               eq=eq_p, ne=ne_p, lt=lt_p, le=le_p, gt=gt_p, ge=ge_p, complex=complex_p)
for _name, _p in _UNARY.items():
    globals()[_name] = _wrapper(_p, _name, f"Elementwise `{_p.name}`.")
for _name, _p in _BINARY.items():
    globals()[_name] = _wrapper(_p, _name, f"Elementwise `{_p.name}` of two arrays of equal shape and dtype "
                                           f"(a weakly typed operand takes the other's dtype).")
WRAPPERS = [*_UNARY, *_BINARY]  # the strict functions stagec.lax exports, one per primitive


def select(pred, on_true, on_false):
    """`on_true` where `pred` else `on_false` (pred is boolean, scalar or of the operands' shape)."""
    return select_p.bind(pred, *match_weak(on_true, on_false))


def stop_gradient(x):
    """`x`, with a zero derivative: differentiation treats it as a constant."""
    return stop_gradient_p.bind(x) if hasattr(x, "_trace") else x


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """`operand` rounded (to nearest, ties to even) to a float format of `exponent_bits` and `mantissa_bits`, kept
    in its own dtype: beyond that format's range infinite, below its smallest normal zero (XLA's, so JAX's)."""
    return reduce_precision_p.bind(operand, exponent_bits=int(exponent_bits), mantissa_bits=int(mantissa_bits))


def clamp(lo, x, hi):
    """`min(max(x, lo), hi)` elementwise (all three of one shape and dtype)."""
    return clamp_p.bind(lo, x, hi)

__all__ = [n for n, v in list(globals().items()) if n.endswith("_p") and isinstance(v, Primitive)]


# ---------------------------------------------------------------- batching rules

from ._batch import elementwise_rule as _elementwise_rule  # noqa: E402

for _p in [v for v in list(globals().values()) if isinstance(v, Primitive)]:
    _p.def_batch(_elementwise_rule(_p))


# ---------------------------------------------------------------- NumPy rules (`Primitive.def_host`)
# Integer division and remainder, float->int conversion and round_afz have none: their edge cases (division by
# zero, out-of-range values) differ between NumPy and the compiled ops, nor do pow and erf. Shifts' rules give
# the compiled ops' out-of-range counts themselves (`_shift_counts`).
# asin, acos, atan, atan2, cbrt, sinh and cosh have rules since mathlib's expansions made their kernels accurate
# (<= 1.8 ulps: docs/accuracy.md): NumPy's in float64, rounded once (`_wide`).

def defined_int_div(x, y):
    """Integer `div` on the host where every quotient is defined (no zero divisor, no MIN / -1), truncated toward
    zero as the kernel's (exact: `x - fmod(x, y)` is a multiple of `y`); None elsewhere, where the kernel answers
    (its edge cases are its own). Values decide, never timing: eager composites use it (`stagec.composites`)."""
    if not _defined_int_division(x, y):
        return None
    return (x - np.fmod(x, y)) // y


def defined_int_rem(x, y):
    """Integer `rem` (the sign of `x`, as C's) where defined, as `defined_int_div`; None elsewhere."""
    return np.fmod(x, y) if _defined_int_division(x, y) else None


# Integer division and remainder have no NumPy rule (`eager.apply` calls their kernels: division by zero and MIN / -1
# are the kernels' own); where every quotient is defined NumPy gives the kernel's bits: eager composites and a
# `cond`'s NumPy rule compute them on the host there, with these (None elsewhere).
DEFINED_INT_DIVISION = {div_p: defined_int_div, rem_p: defined_int_rem}


def _defined_int_division(x, y) -> bool:
    if not y.all():
        return False
    return x.dtype.kind != "i" or not ((x == np.iinfo(x.dtype).min) & (y == -1)).any()


# `np.where` without its `__array_function__` dispatch (~0.25 us of ~0.85 on 4x4; the rules get ndarrays only)
try:
    from numpy._core._multiarray_umath import where as _where
except ImportError:
    _where = np.where

_BITS = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
_SELECT_BITS_MIN = 1 << 16  # elements (of the larger operand) from which select's rule picks bits


def _select_host(p, a, b):
    """`where(p, a, b)`, the bits of the chosen operand. NumPy's `where` slows to ~3.6 ns an element on an
    unpredictable mask from ~64K elements (float32: 478 us on 128K, a bitwise select 71 us), so large ones select
    bits: `b ^ ((a ^ b) & -p)` in the operands' integer type of their width (any strides and broadcasts, as
    `where`)."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray or (a.size < _SELECT_BITS_MIN and b.size < _SELECT_BITS_MIN) \
            or a.dtype != b.dtype or (it := _BITS.get(a.dtype.itemsize)) is None:
        return _where(p, a, b)
    bb = b.view(it)
    out = np.bitwise_xor(a.view(it), bb)
    if out.shape != np.broadcast_shapes(out.shape, np.shape(p)):
        return _where(p, a, b)
    mask = np.negative(np.asarray(p).view(np.int8))  # (all ones where p: -1 sign-extended to the width)
    np.bitwise_and(out, mask if it is np.int8 else mask.astype(it), out=out)
    np.bitwise_xor(out, bb, out=out)
    return out.view(a.dtype)


def _sign_host(x):
    """np.sign, keeping -0.0 (as stablehlo.sign does): for floats `copysign(sign(x), x)`, the bits of
    `where(x == 0, x, sign(x))` (np.sign returns a NaN as it is) in two ufuncs instead of three."""
    return np.sign(x) if x.dtype.kind in "iu" else np.copysign(np.sign(x), x)  # (-0.0 stays -0.0, as stablehlo.sign keeps it)


_SIGN_BIT = {4: (np.uint32, np.uint32(1 << 31)), 8: (np.uint64, np.uint64(1 << 63))}
_LOGISTIC_BITS_MIN = 1 << 12


def _logistic_host(x):
    """1 / d where x >= 0, e / d below, with e = exp(-|x|) (no overflow either side) and d = 1 + e: one division of
    the numerator fmax(e, x >= 0) (1 there, as e <= 1; e below, as e >= 0), in place. The bits of selecting between
    the two quotients: a NaN's e, d and quotient all carry its payload, so fmax's dropping it changes none (no
    select). float32/float64 arrays: -|x| as x's bits with the sign set (one pass, not abs and negative), x >= 0
    written as 1.0 / 0.0 straight into the numerator's array (fmax of a bool operand casts it: ~24 of ~118 us on
    100K float32): the same values, ~8 us less (from 4096 elements: on 4x4 the output cast costs ~1 us more)."""
    if type(x) is np.ndarray and x.size >= _LOGISTIC_BITS_MIN and (sb := _SIGN_BIT.get(x.dtype.itemsize)) is not None:
        e = np.bitwise_or(x.view(sb[0]), sb[1]).view(x.dtype)
        np.exp(e, out=e)
        d = e + 1
        n = np.greater_equal(x, 0, out=np.empty_like(e))
        np.fmax(e, n, out=n)
        return np.divide(n, d, out=n)
    e = np.abs(x)
    if type(e) is np.ndarray:
        np.negative(e, out=e)
        np.exp(e, out=e)
    else:  # (0-d: NumPy scalars)
        e = np.exp(-e)
    d = e + 1
    n = np.fmax(e, np.greater_equal(x, 0))
    return np.divide(n, d, out=n) if type(n) is np.ndarray else n / d


def _wide(f):
    """NumPy's `f`, narrower floats computed in float64 and rounded once, as the kernels of mathlib's float64
    expansions (asin, acos, atan, atan2, cbrt) compute them: atan2 on 2^20 random float32 pairs gave their bits
    wherever no operand or result is subnormal (the CPU kernels flush those, NumPy's rules do not, as for the other
    rules); glibc's float32 atan2f gave other bits on 17% of them."""
    def rule(*xs):
        if xs[0].dtype.itemsize >= 8:
            return f(*xs)
        return f(*[x.astype(np.float64) for x in xs]).astype(xs[0].dtype)
    return rule


def _complex_host(re, im):
    out = np.empty(re.shape, np.complex64 if re.dtype == np.float32 else np.complex128)
    out.real, out.imag = re, im  # (re + 1j * im would turn an infinite part into NaN)
    return out


def _float32(avals, params) -> bool:
    """IREE's float64 expm1, log1p, asinh and atanh lose up to 2**18 ulps near 0 (NumPy's do not): float32 only."""
    return all(a.dtype == np.float32 for a in avals)


def _max_host(x, y):
    """np.maximum, with IEEE's max of two zeros (+0 unless both are -0: their sum), as the compiled op. Two zeros
    give a zero: where no result is one (counted: ~0.2 us, `.any()` ~1 us) nothing is fixed (2.7 -> 0.7 us on
    4x4), else the sums are written in place (a ReLU's zeros: as before)."""
    r = np.maximum(x, y)
    if r.dtype.kind in "iub":  # (bfloat16's NumPy kind is V)
        return r
    if r.size >= _ZERO_BOUND_MIN and type(r) is np.ndarray and _zero_bound(x, y) is False:
        # max(x, +0) is never -0: adding +0 turns NumPy's -0s into +0, and changes nothing else (a NaN keeps its
        # payload, quiet; a signaling one is made quiet, as IEEE's max returns it)
        np.add(r, r.dtype.type(0), out=r)
        return r
    if _no_zeros(r):
        return r
    if type(r) is not np.ndarray:  # (0-d operands: a NumPy scalar)
        return np.where((x == 0) & (y == 0), x + y, r)
    both = _both_zero(x, y)
    if both is not None:
        np.add(x, y, out=r, where=both)  # (in place: one ufunc less than `where(m, x + y, r)`)
    return r


# From this size a max with +0 broadcast (`relu`) or a min with -0 fixes its zeros' signs in a pass over the result,
# not by finding them (~3 passes and a masked sum; 100K float32 relu 100 -> 46 us). (Of a max with -0 or a min with
# +0 the zero's sign depends on the other operand: those take the general way.)
_ZERO_BOUND_MIN = 1 << 12


def _zero_bound(x, y) -> bool | None:
    """The sign bit of the zero one operand is, broadcast (a constant: `maximum(x, 0.0)`); None where neither is."""
    for b in (y, x):
        if type(b) is np.ndarray and b.size and not any(b.strides):
            v = b.item(0)
            if v == 0:
                return bool(np.signbit(np.asarray(v, np.float64)))
    return None


def _both_zero(x: np.ndarray, y: np.ndarray):
    """`(x == 0) & (y == 0)` (operands of one shape), one comparison where an operand is one value broadcast (a
    constant: `maximum(x, 0.0)`), None where that value is not zero."""
    for a, b in ((x, y), (y, x)):
        if b.size and not any(b.strides):
            return a == 0 if b.item(0) == 0 else None
    return (x == 0) & (y == 0)


def _min_host(x, y):
    """np.minimum, with IEEE's min of two zeros (-0 if either is); as `_max_host`."""
    r = np.minimum(x, y)
    if r.dtype.kind in "iub":  # (bfloat16's NumPy kind is V)
        return r
    if r.size >= _ZERO_BOUND_MIN and type(r) is np.ndarray and _zero_bound(x, y) is True:
        np.negative(r, out=r)  # min(x, -0) is never +0: -(-r + 0) turns +0 into -0, nothing else
        np.add(r, r.dtype.type(0), out=r)
        np.negative(r, out=r)
        return r
    if _no_zeros(r):
        return r
    if type(r) is not np.ndarray:
        return np.where((x == 0) & (y == 0), -(-x - y), r)
    both = _both_zero(x, y)
    if both is not None:
        np.negative(np.subtract(np.negative(x), y), out=r, where=both)
    return r


try:  # (without `__array_function__`'s dispatch: ~0.07 us on 4x4, np.count_nonzero ~0.25)
    from numpy._core._multiarray_umath import count_nonzero as _count_nonzero
except ImportError:
    _count_nonzero = np.count_nonzero


def _no_zeros(r) -> bool:
    """Whether `r` holds no zero: counted on small arrays (~0.2 us on 4x4), compared on large ones (NumPy counts a
    float array's nonzeros an element at a time: 44 us on 100K float32, `(r == 0).any()` 8)."""
    return _count_nonzero(r) == r.size if r.size < _ZERO_BOUND_MIN else not (r == 0).any()


def _convert_host(x, *, new_dtype, weak_type):
    return host_convert(x, new_dtype)


_INT_BOUNDS: dict = {}  # (float dtype, integer dtype) -> (lowest value, first value past the top) in the float type


def host_convert(x: np.ndarray, new_dtype) -> np.ndarray:
    """`x` converted as the lowering converts it: to bool `x != 0`; complex to real or integer by its real part;
    float to integer toward zero, saturated at the integer's bounds, NaN to 0 (`_float_to_int`; NumPy's `astype`
    leaves those undefined: NaN and 3e9 gave INT_MIN, uint8 of 300.0 gave 44)."""
    dt, x = np.dtype(new_dtype), np.asarray(x)
    if dt == np.bool_:
        return x != 0
    if x.dtype.kind == "c" and dt.kind != "c":
        x = x.real
    if _dt.kind(x.dtype) != "f" or dt.kind not in "iu":  # (bfloat16's NumPy kind is V: astype wrapped it)
        return x.astype(dt)
    bounds = _INT_BOUNDS.get((x.dtype, dt))
    if bounds is None:
        info = np.iinfo(dt)
        with np.errstate(over="ignore"):  # (the bounds in x's dtype, as the lowering compares them; a bound past
            # x's range is its largest finite value: -inf is no float16 value in an int32's range)
            lo = x.dtype.type(info.min)
            lo = lo if np.isfinite(lo) else _dt.finfo(x.dtype).min  # (this module's `max` is the primitive's)
            bounds = _INT_BOUNDS[x.dtype, dt] = (lo, x.dtype.type(float(info.max) + 1))
    lo, top = bounds
    if x.size and lo <= x.min() and x.max() < top:  # (every value in range, no NaN: truncation alone; ~2 us on 4x4,
        return x.astype(dt)                         # the selects below ~8)
    info = np.iinfo(dt)
    with np.errstate(invalid="ignore"):
        below, above = x < lo, x >= top
        out = np.where(below | above | np.isnan(x), 0, x).astype(dt)
    return np.where(above, info.max, np.where(below, info.min, out)).astype(dt)


def _converts_exactly(avals, params) -> bool:
    """Every conversion but complex to real or integer (float to integer: `host_convert` saturates as the lowering
    does, the compiled bits on the CPU and Vulkan for every float and integer type, NaN, infinities, 1e30)."""
    src, dst = _dt.kind(avals[0].dtype), _dt.kind(np.dtype(params["new_dtype"]))
    return not (src == "c" and dst != "c")


# Rules of several passes over memory (or NumPy loops without SIMD: float sign), whose kernels take less time from
# ~4-8K elements (65536 float32, warm, rule / kernel: logistic 75 / 28 us, sign 62 / 21, sinh 99 / 36, cosh 86 /
# 32; docs/log.md, 2026-12-02): eager calls them from 8K elements (`eager._work` counts an elementwise one twice).
_SLOW_RULES = (logistic_p, sign_p, sinh_p, cosh_p)
_SEVERAL_PASSES = 1 << 14
for _p, _f, _k in [
        (neg_p, np.negative, "iufc"), (abs_p, np.abs, "iuf"), (sign_p, _sign_host, "iuf"),
        (floor_p, np.floor, "f"), (ceil_p, np.ceil, "f"), (round_p, np.rint, "f"),
        (exp_p, np.exp, "f"), (exp2_p, _wide(np.exp2), "f"), (expm1_p, np.expm1, "f32"), (log_p, np.log, "f"), (log1p_p, np.log1p, "f32"),
        (tanh_p, np.tanh, "f"), (logistic_p, _logistic_host, "f"), (sin_p, np.sin, "f"), (cos_p, np.cos, "f"),
        (tan_p, np.tan, "f"), (sqrt_p, np.sqrt, "f"), (rsqrt_p, lambda x: 1 / np.sqrt(x), "f"),
        (not_p, np.invert, "biu"), (is_finite_p, np.isfinite, "f"), (asinh_p, np.arcsinh, "f32"),
        (acosh_p, np.arccosh, "f"), (atanh_p, np.arctanh, "f32"), (asin_p, _wide(np.arcsin), "f"),
        (acos_p, _wide(np.arccos), "f"), (atan_p, _wide(np.arctan), "f"), (cbrt_p, _wide(np.cbrt), "f"),
        (sinh_p, _wide(np.sinh), "f"), (cosh_p, _wide(np.cosh), "f"),
        (add_p, np.add, "biufc"), (sub_p, np.subtract, "iufc"), (mul_p, np.multiply, "biufc"),
        (div_p, np.true_divide, "f"), (rem_p, np.fmod, "f"), (atan2_p, _wide(np.arctan2), "f"),
        (max_p, _max_host, "biuf"), (min_p, _min_host, "biuf"), (and_p, np.bitwise_and, "biu"),
        (or_p, np.bitwise_or, "biu"), (xor_p, np.bitwise_xor, "biu"),
        (eq_p, np.equal, "biufc"), (ne_p, np.not_equal, "biufc"), (lt_p, np.less, "biuf"),
        (le_p, np.less_equal, "biuf"), (gt_p, np.greater, "biuf"), (ge_p, np.greater_equal, "biuf"),
        (clamp_p, lambda lo, x, hi: _min_host(_max_host(x, lo), hi), "biuf"),
        (real_p, np.real, "c"), (imag_p, np.imag, "c"), (complex_p, _complex_host, "f")]:
    _p.def_host(_f, _float32 if _k == "f32" else of_kinds(_k),
                max_work=_SEVERAL_PASSES if _p in _SLOW_RULES else None)
convert_element_type_p.def_host(_convert_host, _converts_exactly)


def _shift_counts(x, y):
    """(in range: None where every count is, the counts with those out of range as 0, in x's unsigned type): a count
    is out of range at or past x's width, negative ones too (read unsigned), as `stablehlo.shift_*` (the compiled
    ops' bits). (Counts all in range, the common case, skip the selects: ~1 us each on 4x4.)"""
    u = np.dtype(f"u{x.dtype.itemsize}")
    c = y.view(np.dtype(f"u{y.dtype.itemsize}")) if y.dtype.kind == "i" else y
    ok = c < 8 * x.dtype.itemsize
    if ok.all():
        return None, c.astype(u, copy=False)
    return ok, _where(ok, c, 0).astype(u)


def _shift_left_host(x, y):
    ok, c = _shift_counts(x, y)
    out = np.left_shift(x.view(c.dtype), c)
    return (out if ok is None else _where(ok, out, c.dtype.type(0))).view(x.dtype)


def _shift_right_logical_host(x, y):
    ok, c = _shift_counts(x, y)
    out = np.right_shift(x.view(c.dtype), c)
    return (out if ok is None else _where(ok, out, c.dtype.type(0))).view(x.dtype)


def _shift_right_arithmetic_host(x, y):
    """On x's signed view (an unsigned x's top bit is its sign, as the compiled op's); out of range, the sign fill."""
    ok, c = _shift_counts(x, y)
    s = x.view(np.dtype(f"i{x.dtype.itemsize}"))
    out = np.right_shift(s, c.view(s.dtype))
    return (out if ok is None else _where(ok, out, np.right_shift(s, 8 * s.dtype.itemsize - 1))).view(x.dtype)


for _p, _f in ((shift_left_p, _shift_left_host), (shift_right_logical_p, _shift_right_logical_host),
               (shift_right_arithmetic_p, _shift_right_arithmetic_host)):
    _p.def_host(_f, of_kinds("iu"))
# (a signature's plan takes NumPy's `where` itself below `_SELECT_BITS_MIN`: ~0.2 us less than the checks on 4x4)
select_p.def_host(_select_host, of_kinds("biufc"), bound=lambda avals, params: _where if all(
    math.prod(a.shape) < _SELECT_BITS_MIN for a in avals) else _select_host)
