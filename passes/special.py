"""The special functions' expansions for `mathlib`: `chlo.lgamma`, `chlo.digamma` and `chlo.erfc`.

IREE 3.13 legalizes these CHLO ops as XLA does (`chlo-legalize-to-stablehlo`: the Lanczos sum for lgamma and
digamma, a float32 rational for erfc): up to 5e4 ulps near lgamma's zeros, 62 for float32 erfc. The StableHLO
stage keeps the ops (as JAX's does); these builders replace them after it, registered in `mathlib`'s table.
float16/bfloat16 compute in float32, as CHLO does. Kernels: float32 lgamma and digamma in float64 arithmetic (a shift
by 8, Stirling's or the asymptotic series, the reflection with sin(pi x) from x - round(x)); float64 lgamma by Lanczos
(g = 7) with the series about 1 and 2; Cephes' erfc (e^(-x^2) P / Q, R / S past 8) with an exact-argument e^(-x^2).
Besides: float32 and float64 exp(lgamma(x)) (scipy.special.gamma) as |Gamma(x)| itself (float64: e^E, E a
double-double), float32 betaln's sums of gammalns (stagec.scipy.special.betaln's two forms) in float64 arithmetic,
float32 erfc(v * f32(+-1/sqrt 2)) (ndtr's, exact gelu's) from v itself and erfc(x) w with w before erfc's 2^k scale
(exact gelu where ndtr underflows), and complex64 logistic from its parts.
(`chlo.erf_inv` keeps IREE's legalization: within 3 float64 ulps, where XLA's is 4.8e5 near 1.) See docs/accuracy.md.
"""
from __future__ import annotations

import math

import numpy as np
from iree.compiler import ir

from stagec.coefficients import ERFC32_P, ERFC32_Q, ERFC_MID, ERFC_P, ERFC_Q, ERFC_R, ERFC_S

from . import mathlib as _m
from .irutil import producer, splat_value, tensor_type
from .mathlib import NARROW, Expansion, F

_T = "tests/test_accuracy.py::"


def _is32(f: F) -> bool:
    return str(f.t.element_type) == "f32"


def _horner(f: F, coeffs, w):
    """coeffs[0] w^n + ... + coeffs[n] (highest first)."""
    p = f.c(coeffs[0])
    for c in coeffs[1:]:
        p = f.add(f.c(c), f.mul(p, w))
    return p


def _series(f: F, z, coeffs):
    """z (c0 + z (c1 + ...)) by Horner."""
    return f.mul(f.poly(z, coeffs), z)


def _log1p(f: F, v):
    """log1p: IREE's in float32; Kahan's in float64 (mathlib's: IREE's float64 log1p is log(1 + x))."""
    return f("log_plus_one", v) if _is32(f) else _m._log1p64(f, v)


def _and(f: F, a, b):
    return f.b.op("and", a, b, ty=f.b.i1)


# ---------------------------------------------------------------- lgamma, digamma

LANCZOS = (676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
           12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)
# lgamma(1 + z) = -gamma z + sum_k (-1)^k zeta(k) z^k / k and lgamma(2 + z) = (1 - gamma) z + sum_k (-1)^k (zeta(k) - 1)
# z^k / k: near the zeros of lgamma (1 and 2), where the Lanczos sum's absolute error (4e-7 in float32) is all of it.
LGAMMA1 = (-0.5772156649015329, 0.8224670334241132, -0.40068563438653143, 0.27058080842778454, -0.20738555102867398, 0.1695571769974082, -0.1440498967688461, 0.12550966952474304, -0.11133426586956469, 0.1000994575127818, -0.09095401714582904, 0.083353840546109, -0.0769325164113522, 0.07143294629536133, -0.06666870588242046, 0.06250095514121304, -0.058823978658684585, 0.055555767627403614, -0.05263167937961666, 0.05000004769810169, -0.047619070330142226, 0.04545455629320467, -0.04347826605304026, 0.04166666915034121, -0.04000000119214014, 0.03846153903467518, -0.037037037312989324, 0.035714285847333355, -0.034482758684919304, 0.03333333336437758)  # noqa: E501
LGAMMA2 = (0.42278433509846713, 0.3224670334241132, -0.0673523010531981, 0.020580808427784546, -0.007385551028673986, 0.0028905103307415234, -0.001192753911703261, 0.0005096695247430425, -0.00022315475845357939, 9.945751278180853e-05, -4.492623673813314e-05, 2.050721277567069e-05, -9.439488275268397e-06, 4.374866789907488e-06, -2.039215753801366e-06, 9.55141213040742e-07, -4.492469198764566e-07, 2.1207184805554665e-07, -1.0043224823968099e-07, 4.7698101693639804e-08, -2.2711094608943164e-08, 1.0838659214896955e-08, -5.183475041970047e-09, 2.4836745438024785e-09, -1.1921401405860912e-09, 5.731367241678862e-10, -2.7595228851242334e-10, 1.330476437424449e-10, -6.4229645638381e-11, 3.1044247747322276e-11, -1.5021384080754142e-11, 7.275974480239079e-12, -3.527742476575915e-12, 1.711991790559618e-12, -8.315385841420285e-13, 4.04220052528944e-13, -1.9664756310966168e-13, 9.573630387838557e-14, -4.664076026428376e-14, 2.2737369600659715e-14, -1.109139947083452e-14, 5.41365915672535e-15)  # noqa: E501


def _log_t(f: F, z):
    # log(z + 7.5) as CHLO: log(7.5) + log1p(z / 7.5), the division as XLA's multiplication by the reciprocal
    inv = float(np.float32(1) / np.float32(7.5)) if _is32(f) else 1 / 7.5
    return f.add(2.0149030205422647, _log1p(f, f.mul(z, inv)))


# lgamma(v) - ((v - 1/2) log v - v + log(2 pi) / 2) ~ sum B_2k / (2k (2k - 1) v^(2k-1)), k = 1..9 (v >= 8: 8e-17 left)
STIRLING9 = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400, 43867 / 244188)
HALF_LOG_2PI_DD = (0.9189385332046728, -3.8782941580672414e-17)  # log(2 pi) / 2 and log(pi) as double-doubles
LOG_PI_DD = (1.1447298858494002, 1.0265951162707826e-17)
HALF_LOG_2PI = HALF_LOG_2PI_DD[0]


def _log_wide(d: F, v, inv=None):
    """log of float64 v > 0 within float32's range: `_log` of its float32 rounding v32 plus log1p((v - v32) / v32)
    (`inv`: 1/v, if known, for the division)."""
    v32 = d("convert", d("convert", v, ty=d.f32))
    delta = d.div(d.sub(v, v32), v32) if inv is None else d.mul(d.sub(v, v32), inv)
    return d.add(_m._log(d, v32), d.mul(delta, d.sub(1.0, d.mul(delta, 0.5))))


def _lgamma32(f: F, x):
    """float32 log|Gamma(x)| in float64 arithmetic (no libm: mathlib's `_log`), rounded once (`_lgamma_wide`), +inf at
    the poles 0, -1, -2, ... and at +-inf, 0 at 1 and 2."""
    d = F(_m._Builder(ir.RankedTensorType.get(f.t.shape, ir.F64Type.get()), x))
    r = _round_off(f, x)  # (exact: |x| < 2^22; beyond, every float32 is a pole)
    out = _lgamma_wide(d, d("convert", x), d("convert", r))
    pole = _and(f, f.cmp(x, 0.0, "LE"), f.cmp(x, f("floor", x), "EQ"))  # (0, -1, -2, ...: +inf, as SciPy and JAX)
    out = f.sel(f.b.op("or", f.cmp(x, 1.0, "EQ"), f.cmp(x, 2.0, "EQ"), ty=f.b.i1), f.c(0.0), d("convert", out, ty=f.t))
    return f.sel(f.b.op("or", pole, f.cmp(f("abs", x), math.inf, "EQ"), ty=f.b.i1), f.c(math.inf), out)


def _lgamma_wide(d: F, xd, rd):
    """log|Gamma(x)| of float64 x within float32's range (r = x - round(x), exact) in float64 arithmetic: w = x
    (x >= 0) or 1 - x, lgamma(w) = S(w + 8) - log(w (w + 1) ... (w + 7)) below 8, S(v) Stirling's series (9 terms;
    else S(w)); below 0 the reflection log pi - log|sin(pi x)| - lgamma(1 - x), sin(pi r) by Taylor's series; the
    two logs of the product and the sine as one. Near every zero (1, 2 and one in each (-n, 1 - n)) the
    cancellation leaves about 1e-15 absolute: within an ulp of float32 (a float32 formula loses the value there).
    Poles and infinities are the caller's."""
    neg = d.cmp(xd, 0.0, "LT")
    w = d.sel(neg, d.sub(1.0, xd), d("abs", xd))
    small = d.cmp(w, 8.0, "LT")
    prod = w
    for k in range(1, 8):
        prod = d.mul(prod, d.add(w, float(k)))
    prod = d.sel(small, prod, d.c(1.0))
    vv = d.sel(small, d.add(w, 8.0), w)
    inv = d.div(1.0, vv)
    stirling = d.add(d.sub(d.mul(d.sub(vv, 0.5), _log_wide(d, vv, inv)), vv),
                     d.add(HALF_LOG_2PI, d.mul(inv, d.poly(d.mul(inv, inv), STIRLING9))))
    t = d.mul(rd, math.pi)
    sin = d("abs", d.mul(t, d.poly(d.mul(t, t), SIN_TAYLOR)))
    # reflected: log(prod / |sin|) = log prod - log|sin|, scaled by 2^-64 into float32's range (|sin| down to 4e-45)
    lq = _log_wide(d, d.sel(neg, d.mul(d.div(prod, sin), 2.0 ** -64), prod))
    lq = d.add(lq, d.sel(neg, d.c(64 * math.log(2)), d.c(0.0)))
    return d.sel(neg, d.add(d.sub(LOG_PI_DD[0], stirling), lq), d.sub(stirling, lq))


def _lgamma(f: F, x):
    """log|Gamma(x)|: float32 (and narrower) by `_lgamma32`; float64 by Lanczos with reflection below 1/2 and the
    series about 1 and 2 on [0.75, 2.5)."""
    if _is32(f):
        return _lgamma32(f, x)
    reflect = f.cmp(x, 0.5, "LT")
    z = f.sel(reflect, f.neg(x), f.sub(x, 1.0))
    a = f.c(0.99999999999980993)
    for i, coef in enumerate(LANCZOS):
        a = f.add(a, f.div(f.c(coef), f.add(z, i + 1.0)))
    t = f.add(7.5, z)
    log_t = _log_t(f, z)
    body = f.mul(f.sub(f.add(z, 0.5), f.div(t, log_t)), log_t)
    log_y = f.add(f.add(0.91893853320467266, body), f("log", a))  # (XLA's constant: HALF_LOG_2PI - 1 ulp)
    ax = f("abs", x)
    frac = f.sub(ax, f("floor", ax))
    frac = f.sel(f.cmp(f.c(0.5), frac, "LT"), f.sub(1.0, frac), frac)
    log_sin = f("log", f("sine", f.mul(3.1415926535897931, frac)))
    finite = f("is_finite", log_sin, ty=f.b.i1)
    reflected = f.sel(finite, f.sub(f.sub(LOG_PI_DD[0], log_sin), log_y), f.neg(log_sin))
    out = f.sel(reflect, reflected, log_y)
    near1 = _and(f, f.cmp(x, 0.75, "GE"), f.cmp(x, 1.25, "LT"))
    near2 = _and(f, f.cmp(x, 1.25, "GE"), f.cmp(x, 2.5, "LT"))
    out = f.sel(near1, f.add(_series(f, f.sub(x, 1.0), LGAMMA1), 0.0), out)  # (+0 at 1: z (-gamma + ...) was -0)
    out = f.sel(near2, _series(f, f.sub(x, 2.0), LGAMMA2), out)
    return f.sel(f.cmp(ax, math.inf, "EQ"), f.c(math.inf), out)


# psi(v) ~ log v - 1/(2v) - sum B_2k / (2k v^2k), k = 1..6 (v >= 16 or v = w + 8, w >= 1/2: the next term below 2^-46)
DIGAMMA_ASYMPTOTIC = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760)
# sin t / t and cos t by Taylor's series to t^22 (|t| <= pi/2: 2^-59 left out)
SIN_TAYLOR = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(11))
COS_TAYLOR = tuple((-1) ** k / math.factorial(2 * k) for k in range(12))


def _digamma32(f: F, x):
    """float32 digamma in float64 arithmetic (no libm: mathlib's `_log`), rounded once: psi(w) for w = x (x >= 1/2)
    or 1 - x (else, less pi cot(pi x) from x - round(x), exact), psi(w) = psi(w + 8) - sum_k<8 1/(w + k) (one
    fraction) below 16, then the asymptotic series. Near every zero (1.4616 and one in each (-n, 1 - n)) the
    cancellation leaves 2^-50 of the terms: the float32 result within an ulp."""
    d = F(_m._Builder(ir.RankedTensorType.get(f.t.shape, ir.F64Type.get()), x))
    xd = d("convert", x)
    reflect = d.cmp(xd, 0.5, "LT")
    w = d.sel(reflect, d.sub(1.0, xd), xd)
    small = d.cmp(w, 16.0, "LT")
    ws = d.sel(small, w, d.c(1.0))  # (the sum's product overflows for huge w; unused there)
    num, den = d.c(0.0), d.c(1.0)
    for k in range(8):  # num / den + 1 / (w + k)
        wk = d.add(ws, float(k))
        num, den = d.add(d.mul(num, wk), den), d.mul(den, wk)
    v = d.sel(small, d.add(w, 8.0), w)
    v32 = d("convert", d("convert", v, ty=f.t))  # v's float32 rounding (whose log `_log` takes), and the rest
    delta = d.div(d.sub(v, v32), v32)
    log_v = d.add(_m._log(d, v32), d.mul(delta, d.sub(1.0, d.mul(delta, 0.5))))
    inv = d.div(1.0, v)
    u = d.mul(inv, inv)
    psi = d.sub(d.sub(log_v, d.mul(inv, 0.5)), d.mul(u, d.poly(u, DIGAMMA_ASYMPTOTIC)))
    psi = d.sel(small, d.sub(psi, d.div(num, den)), psi)
    r = _round_off(f, x)  # (exact: |x| < 2^22; beyond, every float32 is a pole)
    t = d.mul(d("convert", r), math.pi)
    z = d.mul(t, t)
    cot = d.div(d.poly(z, COS_TAYLOR), d.mul(t, d.poly(z, SIN_TAYLOR)))
    out = d("convert", d.sel(reflect, d.sub(psi, d.mul(cot, math.pi)), psi), ty=f.t)
    out = f.sel(f.cmp(x, math.inf, "EQ"), x, out)
    pole = _and(f, f.cmp(x, 0.0, "LE"), f.cmp(x, f("floor", x), "EQ"))
    return f.sel(pole, f.c(math.nan), out)


def _digamma(f: F, x):
    """The derivative of lgamma's Lanczos approximation, reflection (pi cot(pi x)) below 1/2, NaN at the poles
    0, -1, -2, ... (float64); float32 and narrower: `_digamma32`."""
    if _is32(f):
        return _digamma32(f, x)
    reflect = f.cmp(x, 0.5, "LT")
    z = f.sel(reflect, f.neg(x), f.sub(x, 1.0))
    num, den = f.c(0.0), f.c(0.99999999999980993)
    for i, coef in enumerate(LANCZOS):
        zi = f.add(z, i + 1.0)
        num = f.sub(num, f.div(f.c(coef), f.mul(zi, zi)))
        den = f.add(den, f.div(f.c(coef), zi))
    t = f.add(7.5, z)
    y = f.sub(f.add(_log_t(f, z), f.div(num, den)), f.div(7.0, t))
    pi_r = f.mul(np.pi, f.add(x, f("abs", f("floor", f.add(x, 0.5)))))
    out = f.sel(reflect, f.sub(y, f.div(f.mul(np.pi, f("cosine", pi_r)), f("sine", pi_r))), y)
    pole = _and(f, f.cmp(x, 0.0, "LE"), f.cmp(x, f("floor", x), "EQ"))
    return f.sel(pole, f.c(math.nan), out)


# ---------------------------------------------------------------- gamma: exp(lgamma(x)) of float32

# lgamma(v) ~ (v - 1/2) log v - v + log(2 pi) / 2 + sum B_2k / (2k (2k - 1) v^(2k-1)), k = 1..4 (v >= 8: 6e-12 left)
STIRLING = STIRLING9[:4]


def _lgamma_arg(v: ir.Value):
    """x where `v` is chlo.lgamma(x)."""
    return producer(v).operands[0]


def _gamma32(f: F, v):
    """|Gamma(x)| for exp(lgamma(x)) of float32 x (scipy.special.gamma's exp of gammaln: gammaln's absolute error
    times e^|.|, 281 ulps near +-30), in float64 arithmetic (no libm: mathlib's `_log` and `_exp32`), rounded once:
    w = x (x >= 0) or 1 - x, Gamma(w) = Gamma(w + 8) / (w (w + 1) ... (w + 7)) below 8, Stirling's series (4 terms)
    from 8, w clamped at 48 (past float32's range); below 0 the reflection pi / (|sin(pi x)| Gamma(1 - x)), sin from
    x - round(x) (exact) by Taylor's series."""
    x = _lgamma_arg(v)
    d = F(_m._Builder(ir.RankedTensorType.get(f.t.shape, ir.F64Type.get()), x))
    xd = d("convert", x)
    neg = d.cmp(xd, 0.0, "LT")
    w = d("minimum", d.sel(neg, d.sub(1.0, xd), d("abs", xd)), d.c(48.0))  # (|x|: Gamma(-0) is -inf, its sign apart)
    small = d.cmp(w, 8.0, "LT")
    prod = w
    for k in range(1, 8):
        prod = d.mul(prod, d.add(w, float(k)))
    vv = d.sel(small, d.add(w, 8.0), w)
    inv = d.div(1.0, vv)
    log_v = _log_wide(d, vv, inv)
    series = d.add(HALF_LOG_2PI, d.mul(inv, d.poly(d.mul(inv, inv), STIRLING)))
    g = _m._exp32(d, d.add(d.sub(d.mul(d.sub(vv, 0.5), log_v), vv), series))
    g = d.sel(small, d.div(g, prod), g)
    r = _round_off(f, x)  # (exact: |x| < 2^22; beyond, every float32 is a pole)
    t = d.mul(d("convert", r), math.pi)
    sin = d("abs", d.mul(t, d.poly(d.mul(t, t), SIN_TAYLOR[:9])))  # (|t| <= pi/2: 3e-14 relative left)
    return d("convert", d.sel(neg, d.div(math.pi, d.mul(sin, g)), g), ty=f.t)


# constants as hi + lo (mpmath, 200 bits)
PI_DD = (3.141592653589793, 1.2246467991473532e-16)


def _dd_add(f: F, ah, al, bh, bl):
    """(ah + al) + (bh + bl) as hi + lo (the heads' sum exact, the tails added)."""
    s, e = _m._two_sum(f, ah, bh)
    return s, f.add(e, f.add(al, bl))


def _gamma64(f: F, v):
    """|Gamma(x)| for exp(lgamma(x)) of float64 x (scipy.special.gamma; exp of a rounded lgamma loses |lgamma| eps:
    571 ulps near +-170) as e^E with E a double-double and one rounding (mathlib's `_log_dd`, `_exp_dd`): w = |x|,
    below 8 Gamma(w) = Gamma(w + 8) / (w (w + 1) ... (w + 7)), the product and each w + k as double-doubles;
    lgamma(v) by Stirling's series (9 terms) with (v - 1/2) log v - v in double-double arithmetic; below 0 the
    reflection Gamma(x) = pi / (|sin(pi x)| Gamma(1 + w)) as log pi - lgamma(1 + w) + log(prod |sin|), sin(pi r)
    from r = x - round(x) (exact) and pi r as a double-double. w is clamped at 200 (inf above 171.7; 0 below -200)."""
    x = _lgamma_arg(v)
    neg = f.cmp(x, 0.0, "LT")
    w = f("minimum", f("abs", x), f.c(200.0))
    small = f.cmp(w, 8.0, "LT")
    one = f.c(1.0)
    # below 2^-500, w and r (below) are scaled by 2^600 (m: Dekker's products of tiny operands lose their low
    # halves to the flush of subnormals); q = prod 2^m (x >= 0) or prod / (|sin| 2^m) (x < 0), log q -+ m ln 2 the
    # log of prod or of prod / |sin|
    r = _round_off(f, x)  # (exact; |r| <= 1/2 + 2^-53)
    tiny = f.cmp(f.sel(neg, f("abs", r), w), 2.0 ** -500, "LT")
    m = f.sel(tiny, f.c(600.0), f.c(0.0))
    up = f.sel(tiny, f.c(2.0 ** 600), one)
    # Gamma(w) (x >= 0) or Gamma(1 + w) (x < 0) = Gamma(v) / prod: v = w + 8 below 8, else w (x >= 0) or w + 1
    ph, pl = f.sel(neg, one, f.mul(w, up)), f.c(0.0)
    for k in range(1, 8):
        fh, fl = _m._two_sum(f, w, f.c(float(k)))
        p, e = _m._two_prod(f, ph, fh)
        ph, pl = p, f.add(e, f.add(f.mul(ph, fl), f.mul(pl, fh)))
    ph, pl = f.sel(small, ph, f.sel(neg, one, up)), f.sel(small, pl, f.c(0.0))
    vh, vl = _m._two_sum(f, w, f.sel(small, f.c(8.0), f.sel(neg, one, f.c(0.0))))
    # |sin(pi r)| 2^m as sh + sl: pi r = th + tl, sin(th + tl) ~ th + th z S(z) + tl cos th, z = th^2 (unscaled)
    rs = f.mul(r, up)
    th, tl = _m._two_prod(f, rs, PI_DD[0])
    tl = f.add(tl, f.mul(rs, PI_DD[1]))
    z = f.mul(f.mul(r, PI_DD[0]), f.mul(r, PI_DD[0]))
    sl = f.add(f.mul(f.mul(th, z), f.poly(z, SIN_TAYLOR[1:])), f.mul(tl, f.poly(z, COS_TAYLOR[:5])))
    sh, sl = _m._two_sum(f, th, sl)
    sign = f.sel(f.cmp(th, 0.0, "LT"), f.c(-1.0), one)
    sh, sl = f.mul(sh, sign), f.mul(sl, sign)
    qh = f.div(ph, sh)
    p, e = _m._two_prod(f, qh, sh)
    ql = f.div(f.sub(f.add(f.sub(f.sub(ph, p), e), pl), f.mul(qh, sl)), sh)
    qh, ql = f.sel(neg, qh, ph), f.sel(neg, ql, pl)
    ok = f.b.op("and", f.cmp(qh, 0.0, "GT"), f.cmp(qh, math.inf, "LT"), ty=f.b.i1)  # (not at the poles, 0, NaN)
    lh, ll = _m._log_dd(f, f.bits(f.sel(ok, qh, one)))
    ll = f.add(ll, f.div(ql, qh))
    m = f.sel(neg, m, f.neg(m))
    lh, ll = _dd_add(f, lh, ll, f.mul(m, _m.LN2_HI), f.mul(m, _m.LN2_LO))  # (m LN2_HI exact)
    # lgamma(v) = (v - 1/2) log v - v + log(2 pi) / 2 + series
    inv = f.div(1.0, vh)
    gh, gl = _m._log_dd(f, f.bits(vh))
    gl = f.add(gl, f.mul(vl, inv))
    a = f.sub(vh, 0.5)  # (exact: v >= 1)
    eh, el = _m._two_prod(f, a, gh)
    el = f.add(el, f.add(f.mul(a, gl), f.mul(vl, gh)))
    eh, el = _dd_add(f, eh, el, f.neg(vh), f.neg(vl))
    series = f.mul(inv, f.poly(f.mul(inv, inv), STIRLING9))
    eh, el = _dd_add(f, eh, el, f.c(HALF_LOG_2PI_DD[0]), f.add(series, HALF_LOG_2PI_DD[1]))
    # x >= 0: lgamma(v) - log prod; x < 0: log pi - (lgamma(v) - log(prod / |sin|))
    eh, el = _dd_add(f, eh, el, f.neg(lh), f.neg(ll))
    nh, nl = _dd_add(f, f.neg(eh), f.neg(el), f.c(LOG_PI_DD[0]), f.c(LOG_PI_DD[1]))
    eh, el = f.sel(neg, nh, eh), f.sel(neg, nl, el)
    eh, el = _m._two_sum(f, eh, el)
    g = _m._exp_dd(f, eh, el)
    g = f.sel(ok, g, f.c(math.inf))  # (0 and the poles: lgamma's inf; gammasgn's NaN at the negative ones)
    return f.sel(f.cmp(x, x, "NE"), x, g)


# ---------------------------------------------------------------- betaln: its three gammalns (float32)

def _named(v: ir.Value, name: str):
    p = producer(v)
    return p if p is not None and p.name == name else None


def _betaln_lgammas(op):
    """(lgamma(a), lgamma(b), lgamma(s)) where float32 `op` is scipy.special.betaln's lgamma(a) + (lgamma(b) -
    (lgamma(s) + c)), s = a + b (stagec.scipy.special.betaln below b = 8: c is s's rounding error times psi(s)),
    else None."""
    if op.name != "stablehlo.add" or str(ir.RankedTensorType(op.result.type).element_type) != "f32":
        return None
    la, sub = _named(op.operands[0], "chlo.lgamma"), _named(op.operands[1], "stablehlo.subtract")
    if la is None or sub is None:
        return None
    lb, inner = _named(sub.operands[0], "chlo.lgamma"), _named(sub.operands[1], "stablehlo.add")
    ls = inner and _named(inner.operands[0], "chlo.lgamma")
    s = ls and _named(ls.operands[0], "stablehlo.add")
    if lb is None or s is None:
        return None
    a, b = la.operands[0], lb.operands[0]
    if not ((s.operands[0] == a and s.operands[1] == b) or (s.operands[0] == b and s.operands[1] == a)):
        return None
    # c must be betaln's psi(s) e, e = (a - (s - (s - a))) + (b - (s - a)) (s + e = a + b exactly), which the
    # rewrite computes exactly instead: another term in its place (a user's) keeps the expression as written
    c = _named(inner.operands[1], "stablehlo.multiply")
    e = c and _named(c.operands[1], "stablehlo.add")
    if e is None or not _is_two_sum_error(e, a, b, s.result):
        return None
    return la, lb, ls


def _is_two_sum_error(e, a, b, s) -> bool:
    """Whether `e` is (a - (s - (s - a))) + (b - (s - a)), as stagec.scipy.special.betaln writes it."""
    def sub(v, x=None):
        op = _named(v, "stablehlo.subtract")
        return op if op is not None and (x is None or op.operands[0] == x) else None
    l, r = sub(e.operands[0], a), sub(e.operands[1], b)
    sa = r and sub(r.operands[1], s)
    outer = l and sub(l.operands[1], s)
    return bool(sa and outer and sa.operands[1] == a and outer.operands[1] == sa.result)


def _betaln32(f: F, lga, rest):
    """float32 betaln's lgamma(a) + lgamma(b) - lgamma(a + b) (b < 8 there) in float64 arithmetic (`_lgamma_wide`,
    a + b exact), rounded once: each float32 lgamma was within half an ulp of values up to 8, whose roundings (and
    lgamma(s)'s rounded argument) left 540 ulps of results near betaln's zero (1e-4 at (0.99987, 1.00013)) and 120
    at (0.39, 7.33). Poles and infinities as the float32 sum: +inf from each lgamma's."""
    la, sub = producer(lga), producer(rest)
    lb, ls = producer(sub.operands[0]), producer(producer(sub.operands[1]).operands[0])
    d = F(_m._Builder(ir.RankedTensorType.get(f.t.shape, ir.F64Type.get()), lga))
    (a, b), s32 = (la.operands[0], lb.operands[0]), ls.operands[0]
    ad, bd, s32d = d("convert", a), d("convert", b), d("convert", s32)
    sd = d.add(ad, bd)  # (exact but where the exponents differ by 29 or more)
    rs = d.add(d("convert", _round_off(f, s32)), d.sub(sd, s32d))
    out = d.add(_lgamma_d(d, ad, d("convert", _round_off(f, a))),
                d.sub(_lgamma_d(d, bd, d("convert", _round_off(f, b))), _lgamma_d(d, sd, rs)))
    return d("convert", out, ty=f.t)


def _round_off(f: F, x):
    """x - round(x) (round half up, by floor: x + 1.5 2^23 - 1.5 2^23 is folded on Vulkan): exact."""
    return f.sub(x, f("floor", f.add(x, 0.5)))


def _lgamma_d(d: F, xd, rd):
    """log|Gamma(x)| of float64 x (r = x - round(x)) for betaln's sums: `_lgamma_wide`, and within 2^-6 of 1 and 2
    the series about them (11 terms: the shift by 8 leaves 1e-14 absolute, 400 float32 ulps of betaln near (1, 1),
    where it is 1e-9); +inf at the poles and infinities, 0 at 1 and 2 (betaln(1, 1) = 0)."""
    pole = _and(d, d.cmp(xd, 0.0, "LE"), d.cmp(rd, 0.0, "EQ"))
    inf = d.b.op("or", pole, d.cmp(d("abs", xd), math.inf, "EQ"), ty=d.b.i1)
    z1, z2 = d.sub(xd, 1.0), d.sub(xd, 2.0)  # (exact)
    near1, near2 = d.cmp(d("abs", z1), 2.0 ** -6, "LT"), d.cmp(d("abs", z2), 2.0 ** -6, "LT")
    # one Horner sum, its coefficients chosen per element (the two series' operations, each where it is taken)
    z, cs = d.sel(near1, z1, z2), [d.sel(near1, d.c(c1), d.c(c2)) for c1, c2 in zip(LGAMMA1[:11], LGAMMA2[:11])]
    series = cs[-1]
    for c in cs[-2::-1]:
        series = d.add(d.mul(series, z), c)
    out = d.sel(d.b.op("or", near1, near2, ty=d.b.i1), d.mul(series, z), _lgamma_wide(d, xd, rd))
    return d.sel(inf, d.c(math.inf), out)


def _algdiv_args(op):
    """(lgamma op, a, big) where float32 `op` is betaln's lgamma(min(a, c)) + algdiv(a, big) (a < 8 <= b there):
    stagec.scipy.special._algdiv's select, whose comparison's second operand is v = a (log(big) - 1); else None."""
    if op.name != "stablehlo.add" or str(ir.RankedTensorType(op.result.type).element_type) != "f32":
        return None
    return _algdiv_parts(op.operands[0], op.operands[1])


def _algdiv_parts(lga, rest):
    lg, sel = _named(lga, "chlo.lgamma"), _named(rest, "stablehlo.select")
    mn = lg and _named(lg.operands[0], "stablehlo.minimum")
    cmp = sel and _named(sel.operands[0], "stablehlo.compare")
    v = cmp and _named(cmp.operands[1], "stablehlo.multiply")
    lm1 = v and _named(v.operands[1], "stablehlo.subtract")
    log = lm1 and _named(lm1.operands[0], "stablehlo.log")
    big = log and _named(log.operands[0], "stablehlo.maximum")
    if mn is None or big is None or not v.operands[0] == mn.operands[0] or splat_value(mn.operands[1]) != 8.0 \
            or splat_value(big.operands[1]) != 8.0:  # (betaln's lgamma(min(a, 8)) and big = max(b, 8))
        return None
    return lg, v.operands[0], log.operands[0]


ALGDIV_C = (.833333333333333e-01, -.277777777760991e-02, .793650666825390e-03, -.595202931351870e-03,
            .837308034031215e-03, -.165322962780713e-02)


def _algdiv32(f: F, lga, rest):
    """float32 betaln's lgamma(a) + algdiv(a, b) (a < 8 <= b; cdflib's algdiv: log(Gamma(b) / Gamma(a + b)), the
    Stirling rests' difference in closed form) in float64 arithmetic (mathlib's `_log` and `_log1p_wide`), rounded
    once: for small a and huge b the two cancel (gammaln(0.1) = 2.25 against a log b), and float32's logs of a and b
    left 70 ulps at (0.1012, 5.2e9) (JAX 0.10.2 58)."""
    _, a, big = _algdiv_parts(lga, rest)
    d = F(_m._Builder(ir.RankedTensorType.get(f.t.shape, ir.F64Type.get()), lga))
    ad, bd = d("convert", a), d("convert", big)
    h = d.div(ad, bd)
    c, x = d.div(h, d.add(1.0, h)), d.div(1.0, d.add(1.0, h))
    x2 = d.mul(x, x)
    ss = [d.add(1.0, d.add(x, x2))]  # s3, s5, ..., s11
    for _ in range(4):
        ss.append(d.add(1.0, d.add(x, d.mul(x2, ss[-1]))))
    t = d.div(1.0, d.mul(bd, bd))
    w = d.add(d.mul(d.mul(ALGDIV_C[5], ss[4]), t), d.mul(ALGDIV_C[4], ss[3]))
    for k in (3, 2, 1):
        w = d.add(d.mul(w, t), d.mul(ALGDIV_C[k], ss[k - 1]))
    w = d.mul(d.add(d.mul(w, t), ALGDIV_C[0]), d.div(c, bd))
    u = d.mul(d.add(bd, d.sub(ad, 0.5)), _m._log1p_wide(d, h))
    v = d.mul(ad, d.sub(_m._log(d, bd), 1.0))
    out = d.add(_lgamma_d(d, ad, d("convert", _round_off(f, a))), d.sub(d.sub(w, u), v))
    return d("convert", out, ty=f.t)


# ---------------------------------------------------------------- erfc (Cephes ndtr.c)

def _square32(f: F, a):
    """(p, e): p = fl(a^2), p + e = a^2 exactly, in float32 arithmetic (Dekker's split in 12-bit halves, the two
    cross products as one: ((h^2 - p) + 2 h l) + l^2)."""
    c = f.mul(a, 4097.0)
    h = f.sub(c, f.sub(c, a))
    lo = f.sub(a, h)
    p = f.mul(a, a)
    return p, f.add(f.add(f.sub(f.mul(h, h), p), f.mul(h, f.add(lo, lo))), f.mul(lo, lo))


# e^r on |r| <= ln(2)/2 (Cephes' expf): 1 + r + r^2 (c0 + r c1 + ...)
EXPF_P = (5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2, 8.3334519073e-3, 1.3981999507e-3, 1.9875691500e-4)
LN2_HI, LN2_LO = 0.693145751953125, 1.428606765330187e-06  # (LN2_HI: 16 bits, k LN2_HI exact for |k| < 256)
ROUND32 = 1.5 * 2.0 ** 23  # (an integer k: k + ROUND32 holds it in its low bits)


def _expm1_neg32(f: F, h, l):
    """(u, s): (1 + u) s = e^(-h - l) 2^64 for float32 h in [0, 104] (larger h: garbage, selected away) and |l| <= ulp(h): k =
    floor(1/2 - h / ln 2), r = -h - k ln 2 - l (Cody-Waite: -h - k LN2_HI exact), e^r by Cephes' polynomial, 2^(k + 64)
    from the bits of k + 1.5 2^23 (normal for k >= -190; the 2^-64 is the caller's). IREE's exp clamps its argument
    and converts k to an integer: 3-4 more instructions per 16 elements, and (1 - l) apart."""
    k = f("floor", f.add(f.mul(h, -1 / math.log(2)), 0.5))  # (rounding by + 1.5 2^23 - 1.5 2^23 is folded on Vulkan)
    t = f.add(k, ROUND32)  # (exact: k in its low bits)
    r = f.sub(f.sub(f.sub(f.neg(h), f.mul(k, LN2_HI)), f.mul(k, LN2_LO)), l)
    u = f.add(f.mul(f.mul(r, r), f.poly(r, EXPF_P)), r)  # (e^r - 1: the caller's a + a u rounds once where 1 + u did)
    i32 = lambda a: f.b.op("bitcast_convert", a, ty=f.i32)  # noqa: E731
    sh = f.b.op("add", i32(t), f.c(127 + 64 - 0x4B400000, f.i32), ty=f.i32)
    scale = f.b.op("bitcast_convert", f.b.op("shift_left", sh, f.c(23, f.i32), ty=f.i32), ty=f.t)
    return u, scale


RSQRT2_32 = float(np.float32(math.sqrt(0.5)))


def _over_sqrt2(x):
    """(v, sign) where float32 `x` is v * c, c a splat of float32 +-1/sqrt(2) (ndtr's and exact gelu's argument); else
    None."""
    op = producer(x)
    if op is None or op.name != "stablehlo.multiply":
        return None
    for v, k in ((op.operands[0], op.operands[1]), (op.operands[1], op.operands[0])):
        c = splat_value(k)
        if c is not None and abs(c) == RSQRT2_32:
            return v, math.copysign(1.0, c)
    return None


def _read_by_erfc(op) -> bool:
    """Whether `op` is the v * c of a float32 erfc's `_over_sqrt2` argument."""
    return op.name == "stablehlo.multiply" and any(
        u.owner.operation.name == "chlo.erfc" and str(tensor_type(op.result.type).element_type) == "f32"
        and _over_sqrt2(op.result) is not None for u in op.result.uses)


def _erfc32_parts(f: F, x):
    """float32 erfc(x)'s pieces (p, s, zero, pos): erfc is p s (p carries 2^-64, s = 2^(k + 64) normal) on the side
    `pos`, 2 - p s on the other, 0 where `zero`. See `_erfc`."""
    scaled = _over_sqrt2(x)
    v, k, sign = (x, 1.0, 1.0) if scaled is None else (scaled[0], math.sqrt(0.5), scaled[1])
    z = f("abs", v)
    h, l = _square32(f, z)
    if scaled is not None:
        h, l = f.mul(h, 0.5), f.mul(l, 0.5)  # (exact: (h + l) / 2 = z^2 / 2)
    u, s = _expm1_neg32(f, h, l)  # ((1 + u) s = e^(-h - l) 2^64)
    pq = f.div(f.poly(z, [c * k ** i * 2.0 ** -64 for i, c in enumerate(ERFC32_P)]),
               f.poly(z, [c * k ** i for i, c in enumerate(ERFC32_Q)]))
    # (zero: past the last nonzero result; inf: NaN from inf - inf)
    return f.add(pq, f.mul(pq, u)), s, f.cmp(z, 10.1 / k, "GT"), f.cmp(v, 0.0, "GE" if sign > 0 else "LE")


def _erfc(f: F, x):
    """e^(-x^2) from an exact square: float32 as e^(-h) (1 - l), h + l = x^2, times one rational for every |x|
    (no erf branch); float64 as e^(-m^2) e^(-(2m + f) f), m = |x| rounded to 1/128 (m^2 exact), times P / Q or
    R / S (one division), a polynomial on [1/2, 1), 1 - erf below 1/2. float32 erfc(v * c), c = +-1/sqrt(2)
    rounded (ndtr(v) = erfc(-v / sqrt 2) / 2), from v itself: e^(-(h + l) / 2), h + l = v^2, the rational's coefficients times 2^(-k/2); the product's
    rounding, times erfc's 2 z^2, was 180 ulps at v = -13 (it reads as the exact -v / sqrt 2: c's own rounding
    would be as much again)."""
    if _is32(f):
        p, s, zero, pos = _erfc32_parts(f, x)
        tail = f.sel(zero, f.c(0.0), f.mul(p, s))
        return f.sel(pos, tail, f.sub(2.0, tail))
    z = f("abs", x)
    m = f.div(f("floor", f.add(f.mul(z, 128.0), 0.5)), 128.0)
    r = f.sub(z, m)
    e = f.mul(f("exponential", f.neg(f.mul(m, m))), f("exponential", f.neg(f.mul(f.add(f.mul(2.0, m), r), r))))
    one_minus_erf = f.sub(1.0, ir.Operation.create("chlo.erf", results=[f.t], operands=[x]).result)  # (IREE's)
    big = f.cmp(z, 8.0, "GE")
    tail = f.mul(e, f.div(f.sel(big, _horner(f, ERFC_R, z), _horner(f, ERFC_P, z)),
                          f.sel(big, _horner(f, ERFC_S, z), _horner(f, ERFC_Q, z))))
    # past the last nonzero result (erfc below half the smallest subnormal) 0: the powers of z overflowed to inf / inf
    tail = f.sel(f.cmp(z, 27.3, "GT"), f.c(0.0), tail)
    tail = f.sel(f.cmp(z, 1.0, "LT"), f.poly(f.sub(f.mul(z, 4.0), 3.0), ERFC_MID), tail)  # (from 1/2: no cancellation)
    out = f.sel(f.cmp(x, 0.0, "GE"), tail, f.sub(2.0, tail))
    return f.sel(f.cmp(z, 0.5, "LT"), one_minus_erf, out)


def _erfc_factor(v) -> bool:
    """Whether `v` is a float32 `chlo.erfc`'s result that one op alone reads (a multiply by a non-constant:
    `_erfc_times`)."""
    e = producer(v)
    return e is not None and e.name == "chlo.erfc" and str(tensor_type(v).element_type) == "f32" \
        and len(list(v.uses)) == 1


def _erfc_times(f: F, a, b):
    """erfc(x) w (exact gelu's ndtr(x) x: erfc(x * f32(-1/sqrt 2)) (max(x, -16) / 2)) with w taken in before erfc's
    2^(k + 64) where erfc's tail p s is subnormal: p (s w), so that where erfc(x) underflows (flushed to 0) and erfc(x) w
    does not (gelu's x in [-13.2, -12.95]) its digits stay (1.6e7 ulps, JAX alike). erfc's own pieces:
    `_erfc32_parts`."""
    e, w = (a, b) if _erfc_factor(a) and splat_value(b) is None else (b, a)
    p, s, zero, pos = _erfc32_parts(f, producer(e).operands[0])
    tail = f.sel(zero, f.c(0.0), f.mul(p, s))
    tiny = f.b.op("and", f.cmp(tail, float(np.finfo(np.float32).tiny), "LT"), f.b.op("not", zero, ty=f.b.i1), ty=f.b.i1)
    return f.sel(pos, f.sel(tiny, f.mul(p, f.mul(s, w)), f.mul(tail, w)), f.mul(f.sub(2.0, tail), w))


# ---------------------------------------------------------------- complex64 logistic

def _clogistic(f: F, a, b):
    """1 / (1 + e^-z) of complex64 z = a + bi in float64 arithmetic (mathlib's float32-value kernels: no libm, so
    Vulkan too), u = e^-|a| <= 1, p = u cos b: (1 + p, u sin b) / n for a >= 0, (p + u^2, u sin b) / n below (the
    numerator and denominator times e^z), n = (1 + p)^2 + (u sin b)^2. IREE's guards its NaN with a select of complex
    values, which SPIR-V lacks (Vulkan raised NotImplementedError)."""
    u = _m._exp32(f, f.neg(f("abs", a)))
    p, q = f.mul(u, _m._K32.cos(f, b)), f.mul(u, _m._K32.sin(f, b))
    one_p = f.add(1.0, p)
    n = f.add(f.mul(one_p, one_p), f.mul(q, q))
    re = f.sel(f.cmp(a, 0.0, "LT"), f.add(p, f.mul(u, u)), one_p)
    zero = f.cmp(b, 0.0, "EQ")  # (C99's exp(x + 0i) = e^x + 0i: b's zero, with its sign, for a real z)
    return f.div(re, n), f.sel(zero, f.mul(b, u), f.div(q, n))


_ALL = (*NARROW, "f64")
_m.add_expansions(
    Expansion("chlo.lgamma", _ALL, _lgamma, "CHLO's Lanczos sum: 5.0e4 float32 ulps near lgamma's zeros (1060 at 1.0107)",
              _T + "test_float32_gamma_functions_near_their_zeros", f32=True),
    Expansion("stablehlo.exponential", ("f32",), _gamma32, "exp of CHLO's lgamma (scipy.special.gamma): its absolute "
              "error times e^|.|, 281 float32 ulps near +-30", "tests/test_accuracy_gamma.py::test_gamma_float32",
              f32=True, applies=_m.exp_of_lgamma),
    Expansion("stablehlo.exponential", ("f64",), _gamma64, "exp of CHLO's lgamma (scipy.special.gamma): |lgamma| eps, "
              "571 float64 ulps near +-170", "tests/test_accuracy_gamma.py::test_gamma_float64",
              applies=_m.exp_of_lgamma),
    Expansion("stablehlo.add", ("f32",), _betaln32, "float32 arithmetic on three rounded lgammas (betaln below b = 8): "
              "540 ulps near betaln's zero", "tests/test_accuracy_composites.py::test_betaln_float32_near_its_zeros",
              f32=True, applies=lambda op: _betaln_lgammas(op) is not None),
    Expansion("stablehlo.add", ("f32",), _algdiv32, "float32 arithmetic on gammaln(a) and algdiv(a, b) (betaln past b = 8):"
              " 70 ulps at (0.1012, 5.2e9)", "tests/test_accuracy_composites.py::test_betaln_float32_near_its_zeros",
              f32=True, applies=lambda op: _algdiv_args(op) is not None),
    Expansion("stablehlo.logistic", ("complex<f32>",), _clogistic, "its NaN guard is a select of complex values: no "
              "SPIR-V (Vulkan did not compile it)", "tests/test_accuracy_gamma.py::test_complex64_logistic"),
    Expansion("chlo.digamma", _ALL, _digamma, "CHLO's Lanczos derivative: 7440 float32 ulps below -0.5, 6330 on [0.5, 8)",
              _T + "test_digamma_float32_near_its_negative_zeros", f32=True),
    Expansion("chlo.erfc", _ALL, _erfc, "CHLO's float32 rational: 62 ulps; float64 489", _T + "test_erfc_float32_and_float64",
              f32=True),
    Expansion("stablehlo.multiply", ("f32",), _erfc_times, "erfc(x) w as the two ops (CHLO's float32 rational): 0 where "
              "erfc(x) underflows, erfc(x) w not (exact gelu, x in [-13.2, -12.95]: 1.6e7 ulps)",
              "tests/test_accuracy_composites.py::test_float32_exact_gelu_where_ndtr_underflows", f32=True,
              applies=lambda op: any(_erfc_factor(v) and splat_value(w) is None for v, w in zip(op.operands,
                                                                                             op.operands[::-1]))),
    reads=_read_by_erfc,
)
