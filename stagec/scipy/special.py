"""`stagec.scipy.special` (as `jax.scipy.special`): log-sum-exp, error and gamma functions, logits."""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from ..ad import custom_jvp
from .. import numpy as snp
from .. import nn as _nn
from ..nn import _ndtr_series, _normal_cdf, logsumexp  # noqa: F401
from ..numpy._base import _composite, _promoted_arrays, _staged, _to_float
from ..numpy._staged_step import composite_step as _composite_step

__all__ = ["betaln", "digamma", "entr", "erf", "erfc", "erfinv", "expit", "gamma", "gammaln", "gammasgn", "log_ndtr",
           "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "softmax", "xlog1py", "xlogy"]


def softmax(x, /, *, axis=None):
    """exp(x) / sum(exp(x)) over `axis`: SciPy's and `jax.scipy.special`'s default is every axis (None), where
    `nn.softmax`'s is the last."""
    return _nn.softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
    """x - logsumexp(x) over `axis` (every axis by default, as SciPy's and `jax.scipy.special`'s)."""
    return _nn.log_softmax(x, axis=axis)


def erf(x):
    (x,) = _to_float("erf", x)
    return lax.erf(x)


def erfc(x):
    """1 - erf(x), accurate in the tails (`chlo.erfc`: Cephes' rationals, passes/special.py)."""
    (x,) = _to_float("erfc", x)
    return lax.erfc(x)


def erfinv(x):
    (x,) = _to_float("erfinv", x)
    return lax.erf_inv(x)


def gammaln(x):
    """log|Gamma(x)|."""
    (x,) = _to_float("gammaln", x)
    return lax.lgamma(x)


def digamma(x):
    (x,) = _to_float("digamma", x)
    return lax.digamma(x)


def gammasgn(x):
    """The sign of Gamma(x): -1 on (-2k-1, -2k) for k >= 0, else 1 (NaN at the poles)."""
    x = snp.asarray(_to_float("gammasgn", x)[0])  # (a Python number too: its dtype is read below)
    fl = snp.floor(x)
    neg = (x < 0) & (snp.remainder(fl, 2) != 0)
    pole = (x < 0) & (x == fl)  # (+-0: the sign of the zero, Gamma(+-0) = +-inf, as SciPy)
    return snp.where(pole | snp.isnan(x), np.nan,
                     snp.where(x == 0, snp.copysign(1.0, x), snp.where(neg, -1.0, 1.0))).astype(x.dtype)


@_staged()
def gamma(x):
    """Gamma(x) as JAX's: gammasgn(x) exp(gammaln(x)); `mathlib` computes float32 exp(lgamma(x)) as |Gamma(x)| itself
    (passes/special.py: exp of lgamma's absolute error was 281 ulps near +-30), and float16's in float32 (its own
    exp(lgamma) was 8 float16 ulps off, as JAX's). Eager calls run it as one module."""
    (x,) = _to_float("gamma", x)
    if x.dtype == np.float16:
        return gamma(x.astype(np.float32)).astype(np.float16)
    return gammasgn(x) * snp.exp(gammaln(x))


@_staged()
def betaln(a, b):
    """log B(a, b), a <= b after a swap: below b = 8 gammaln(a) + (gammaln(b) - gammaln(a + b)); past it SciPy's cdflib
    (as JAX's): gammaln(a) + algdiv(a, b), and for a >= 8 its Stirling form (the three gammalns cancelled: 5e8 float32
    ulps at a = 1e-9, b = 1e9). float32: `mathlib` computes the two sums with gammaln(a) from a and b in float64
    arithmetic (passes/special.py: their rounded float32 terms left 540 ulps near betaln's zero, 70 at (0.1, 5e9)).
    float16 and bfloat16 in float32. Eager calls run it as one module (the sums' rewrite needs the whole graph)."""
    a, b = _to_float("betaln", a, b)
    if a.dtype not in (np.float32, np.float64):  # (their own gammalns cancel: 111 bfloat16 ulps at (0.39, 7.3))
        return betaln(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
    a, b = snp.minimum(a, b), snp.maximum(a, b)
    s = a + b
    e = (a - (s - (s - a))) + (b - (s - a))  # (s + e = a + b exactly: s's rounding took 5e-8 off betaln(1, 1 + 3e-5))
    w = s + 2  # psi(s) e, psi(s) = psi(s + 2) - 1/s - 1/(s + 1), psi(w) ~ log w - 1/2w - 1/12w^2 + 1/120w^4
    psi = snp.log(w) - 0.5 / w - (1 / 12 - 1 / (120 * w * w)) / (w * w) - 1 / s - 1 / (s + 1)
    if a.dtype == np.float64:  # (psi's series is NaN for s < -2 and psi * 0 at a pole: betaln(-10.5, 1) was NaN;
        psi = snp.where((e == 0) | (s <= 0), 0.0, psi)  # float32's sum is `mathlib`'s, which drops the term)
    small_b = gammaln(a) + (gammaln(b) - (gammaln(s) + psi * e))  # (this form is what `mathlib` recognizes)
    big = snp.maximum(b, 8)
    # (gammaln(min(a, 8)): not the sum's gammaln(a), which `mathlib` replaces; a itself in both forms: their h = a / b,
    # log1p(h) and log(b) are one each)
    big_b = snp.where(a < 8, gammaln(snp.minimum(a, 8)) + _algdiv(a, big), _betaln_big(a, big))
    # (algdiv is NaN at a + b < 0: betaln(-10.5, 10) was; the three gammalns below a + b = 8)
    return snp.where(b + snp.minimum(a, 0) < 8, small_b, big_b).astype(small_b.dtype)


betaln = _composite_step(betaln)  # (in an eager composite, betainc's: one step running its module, the same bits)


def _betaln_big(a, b):
    """betaln for 8 <= a <= b (cdflib's): log sqrt(2 pi) - log(b) / 2 + bcorr(a, b) - u - v, u = (a - 1/2) log(1 + b/a),
    v = b log1p(a/b) (cdflib's -(a - 1/2) log(a / (a + b)), with one rounding in its argument)."""
    h = a / b
    w = _stirling_rest(a) + _algdiv_w(a, b)
    u = (a - 0.5) * snp.log1p(b / a)
    v = b * snp.log1p(h)
    head = (-0.5 * snp.log(b) + 0.918938533204673) + w
    return snp.where(u <= v, (head - u) - v, (head - v) - u)


def _stirling_rest(a):
    """lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2) for a >= 8 (cdflib's del)."""
    t = (1.0 / a) ** 2
    c0, c1, c2, c3, c4, c5 = _ALGDIV_C
    return (((((c5 * t + c4) * t + c3) * t + c2) * t + c1) * t + c0) / a


_ALGDIV_C = (.833333333333333e-01, -.277777777760991e-02, .793650666825390e-03, -.595202931351870e-03,
             .837308034031215e-03, -.165322962780713e-02)


def _algdiv_w(a, b):
    """del(b) - del(a + b) for b >= 8, a <= b (cdflib's algdiv and bcorr: the Stirling rests' difference)."""
    h = a / b
    c, x = h / (1 + h), 1 / (1 + h)  # (JAX 0.10.2's port takes x = h / (1 + h): 2e-7 relative error at b ~ 8-11)
    x2 = x * x
    s3 = 1.0 + (x + x2)
    s5 = 1.0 + (x + x2 * s3)
    s7 = 1.0 + (x + x2 * s5)
    s9 = 1.0 + (x + x2 * s7)
    s11 = 1.0 + (x + x2 * s9)
    t = (1.0 / b) ** 2
    c0, c1, c2, c3, c4, c5 = _ALGDIV_C
    w = ((((c5 * s11 * t + c4 * s9) * t + c3 * s7) * t + c2 * s5) * t + c1 * s3) * t + c0
    return w * (c / b)


def _algdiv(a, b):
    """log(Gamma(b) / Gamma(a + b)) for b >= 8, a <= b (cdflib's algdiv): the Stirling terms' difference in closed
    form."""
    d = b + (a - 0.5)
    w = _algdiv_w(a, b)
    u = d * snp.log1p(a / b)
    v = a * (snp.log(b) - 1.0)
    return snp.where(u <= v, (w - v) - u, (w - u) - v)


def multigammaln(a, d: int):
    a = snp.asarray(a)
    (a,) = _to_float("multigammaln", a)
    js = snp.arange(d, dtype=a.dtype)
    return (d * (d - 1) / 4 * math.log(math.pi) + snp.sum(gammaln(snp.expand_dims(a, -1) - js / 2), axis=-1))


def expit(x):
    from ..nn import sigmoid
    return sigmoid(x)


# (atanh(z) - z) / z^3 as a polynomial in s = z^2 on [0, 1/4], lowest degree first: a near-minimax fit rounded to
# float32 (relative error 6e-8; the term weighs at most 1/10 of atanh(z) there)
_ATANH_R32 = (0.3333333134651184, 0.20000489056110382, 0.14263488352298737, 0.1147545874118805, 0.06467698514461517,
              0.1579338014125824)


def logit(x):
    """log(x / (1 - x)), where the log of a ratio near 1 alone lost the result's digits on [1/4, 3/4] (3e3 float32
    ulps near 1/2). There, with z = 2x - 1 (exact): float64 log1p(w), w = z / (1 - x), by Kahan's log(u) w / (u - 1),
    u - 1 exact; float32 and narrower 2 atanh(z) = 2 (z + z^3 R(z^2)), one division in all where Kahan's took three
    (a third of the kernel's time on a CPU: 1M float32 0.70 -> 0.58 ms on one thread, max error 2.8 -> 1.4 ulps;
    docs/log.md)."""
    (x,) = _promoted_arrays(_to_float, "logit", x)  # (an Array: integers came as a host Const)
    mid = (x >= 0.25) & (x <= 0.75)
    if x.dtype != np.float64:
        z = 2 * x - 1
        s = z * z
        return snp.where(mid, 2 * (z + z * s * _polevl(s, _ATANH_R32[::-1])), snp.log(x / (1 - x))).astype(x.dtype)
    u, w = x / (1 - x), (2 * x - 1) / (1 - x)  # (u ~ 1 + w; one log: log1p(w) = log(u) w / (u - 1), u - 1 exact)
    return (snp.log(u) * snp.where(mid & (u != 1), w / snp.where(u != 1, u - 1, 1), 1)).astype(x.dtype)


def xlogy(x, y):
    """x * log(y), 0 where x == 0."""
    x, y = _to_float("xlogy", x, y)
    return snp.where((x == 0) & ~snp.isnan(y), 0.0, x * snp.log(y)).astype(snp.result_type(x, y))


def xlog1py(x, y):
    x, y = _to_float("xlog1py", x, y)
    return snp.where((x == 0) & ~snp.isnan(y), 0.0, x * snp.log1p(y)).astype(snp.result_type(x, y))


def entr(x):
    """-x log x for x > 0, 0 at 0, -inf below."""
    (x,) = _promoted_arrays(_to_float, "entr", x)  # (an Array: integers came as a host Const)
    return snp.where(x > 0, -x * snp.log(snp.where(x > 0, x, 1)),
                     snp.where(x == 0, 0.0, snp.where(x < 0, -np.inf, x))).astype(x.dtype)


@_staged()
def ndtr(x):
    """The standard normal CDF (eager calls: one module, which `mathlib` reads whole: `nn._normal_cdf`)."""
    (x,) = _to_float("ndtr", x)
    return _normal_cdf(x)


_LOG_SQRT_2PI = float(0.5 * np.log(2 * np.pi))  # (a Python float: an np.float64 is a float64 operand under x64)


def log_ndtr(x):
    """log(ndtr(x)); below -10 (float32) or -20 (float64), where ndtr underflows, the asymptotic series
    log ndtr(x) = -x^2/2 - log(-x) - log(2 pi)/2 + log(1 + sum_k (-1)^k (2k-1)!! / x^(2k))."""
    (x,) = _promoted_arrays(_to_float, "log_ndtr", x)  # (an Array: integers came as a host Const)
    if x.dtype not in (np.float32, np.float64):  # (float16's tail series and log1p(-ndtr) lose its digits: 43 ulps)
        return log_ndtr(x.astype(np.float32)).astype(x.dtype)
    low, series = _ndtr_series(x)
    tail = -0.5 * x * x - snp.log(-x) - _LOG_SQRT_2PI + snp.log1p(series)
    return snp.where(x > 0, snp.log1p(-ndtr(-x)),  # (log(1 - tiny) keeps its digits)
                     snp.where(x > low, snp.log(ndtr(x)), tail)).astype(x.dtype)


def _log_ndtr_deriv(x, y):
    """npdf(x) / ndtr(x): -x / (1 + series) in the tail (exp(-x^2/2 - y) there cancels 800 - 804.6 at -40)."""
    low = _ndtr_series(x)[0]
    tail = x <= low
    xt = snp.where(tail, x, 2.0 * low)  # (each branch finite where not taken: its derivative's 0 * inf is NaN;
    xn, yn = snp.where(tail, 0.0, x), snp.where(tail, 0.0, y)  # y too: exp(-y) at -100 was, log_ndtr'' NaN there)
    return snp.where(tail, -xt / (1 + _ndtr_series(xt)[1]), snp.exp(-0.5 * xn * xn - yn - _LOG_SQRT_2PI))


def _polevl(x, coeffs):
    p = 0.0
    for c in coeffs:
        p = p * x + c
    return p


# Acklam's rational approximation of the normal quantile (relative error 1.2e-9), then one Halley step on ndtr.
_ACK_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
          -3.066479806614716e+01, 2.506628277459239e+00)
_ACK_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
          -1.328068155288572e+01, 1.0)
_ACK_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
          4.374664141464968e+00, 2.938163982698783e+00)
_ACK_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00, 1.0)


def ndtri(p):
    """The inverse of `ndtr`, from the lower tail q = min(p, 1 - p) (1 - p is exact there), so that small
    probabilities keep their digits (2p - 1 rounded them away: ndtri(1e-10) was -inf)."""
    (p,) = _promoted_arrays(_to_float, "ndtri", p)  # (an Array: integers came as a host Const)
    if p.dtype not in (np.float32, np.float64):
        return ndtri(p.astype(np.float32)).astype(p.dtype)
    q = snp.minimum(p, 1 - p)
    qs = snp.where(q > 0, q, 0.5)  # (q = 0 and NaN are answered below)
    lq = snp.log(qs)
    r = snp.sqrt(-2 * lq)
    tail = _polevl(r, _ACK_C) / _polevl(r, _ACK_D)
    c = qs - 0.5
    central = c * _polevl(c * c, _ACK_A) / _polevl(c * c, _ACK_B)
    low = qs < 0.02425
    x = snp.where(low, tail, central)
    # Near and below the smallest normal q, ndtr(x) has few digits or underflows (0 at q = 2.2e-308): log ndtr(x) (its
    # tail series) - log q instead (ndtr(x) / q was 3e4 float32 ulps off at q = 1e-40, 2e12 float64 ones at 5e-324)
    sub = qs < np.finfo(p.dtype).tiny * 2.0 ** 12
    xs = snp.where(sub, x, -40.0)
    s = _ndtr_series(xs)[1]
    if p.dtype == np.float32:  # (|s| < 7e-3 below x = -12.4 and |d| ~ Acklam's 1e-9 times x^2: log1p and expm1 by
        # their first terms, a third of the kernel's time: 1M float32 2.4 -> 1.7 ms)
        d = -0.5 * xs * xs - snp.log(-xs) - _LOG_SQRT_2PI + s * (1 - s * (0.5 - s / 3)) - lq
        e_sub = d * (1 + 0.5 * d)
    else:
        e_sub = snp.expm1(-0.5 * xs * xs - snp.log(-xs) - _LOG_SQRT_2PI + snp.log1p(s) - lq)
    # (erf: relative accuracy near p = 1/2; below, ndtr(x) - q relative to q: as a difference it was subnormal,
    # read as 0, below q = 1e-302 in float64, and Halley's step left Acklam's 1e-9)
    if p.dtype == np.float32:  # (Acklam's central form rounded in float32 is within 3.6 ulps from q = 0.3, not below
        # it: there one step relative to q, and no erf, a fifth of the kernel's time)
        e = snp.where(sub, e_sub, ndtr(x) / qs - 1)
        u = e * (np.sqrt(2 * np.pi) * snp.exp(0.5 * x * x + lq))  # (q e^(x^2/2) overflowed below q = 1e-40)
        x = snp.where(qs < 0.3, x - u / (1 + 0.5 * x * u), x)
    else:
        rel = qs < 0.25  # (where either error is least)
        e = snp.where(sub, e_sub, snp.where(rel, ndtr(x) / qs - 1, 0.5 * erf(x / np.sqrt(2)) - c))
        u = e * (np.sqrt(2 * np.pi) * snp.exp(0.5 * x * x + snp.where(rel, lq, 0.0)))
        x = x - u / (1 + 0.5 * x * u)
    x = snp.where(q > 0, x, -np.inf)
    x = snp.where(p > 0.5, -x, x)
    return snp.where((p >= 0) & (p <= 1), x, np.nan).astype(p.dtype)


# ---------------------------------------------------------------- derivatives
# JAX's rules, from closed forms (erfc, erfinv, gammaln and digamma are primitives with their own). Differentiating
# the expressions above would go through branches that are not taken (the tail series at x = 0): 0 * NaN = NaN
# poisons the derivative, and a constant branch drops it (d/dx xlogy(0, y) would be 0, not log y).


def _times(deriv):
    """A `defjvps` term: the tangent times `deriv(*primals, ans)`, in the result's dtype."""
    return lambda g, ans, *xs: (g * deriv(*_to_float("derivative", *xs), ans)).astype(ans.dtype)


logit, ndtri, log_ndtr, xlogy, xlog1py, entr = map(custom_jvp, (logit, ndtri, log_ndtr, xlogy, xlog1py, entr))
# ndtr' is the normal density itself (through float64 ndtr's split argument, ndtr''(-1e-30) was -0, not 4e-31)
ndtr = custom_jvp(_composite_step(ndtr))  # (in an eager composite, ndtri's: one step running its module)
ndtr.defjvps(_times(lambda x, y: snp.exp(-0.5 * x * x - _LOG_SQRT_2PI)))
logit.defjvps(_times(lambda x, y: 1 / (x * (1 - x))))
ndtri.defjvps(_times(lambda x, y: np.sqrt(2 * np.pi) * snp.exp(0.5 * y * y)))
log_ndtr.defjvps(_times(_log_ndtr_deriv))
xlogy.defjvps(_times(lambda x, y, out: snp.log(y)), _times(lambda x, y, out: x / y))
xlog1py.defjvps(_times(lambda x, y, out: snp.log1p(y)), _times(lambda x, y, out: x / (1 + y)))
entr.defjvps(_times(lambda x, out: -(snp.log(x) + 1)))  # (+inf at 0 and NaN below, as JAX's; the where gave 0)


from ..numpy._bessel import i0, i0e, i1, i1e  # noqa: E402,F401
__all__ += ["i0", "i0e", "i1", "i1e"]
from . import _special_more  # noqa: E402  (built on the functions above)
globals().update({_n: getattr(_special_more, _n) for _n in _special_more.__all__})
__all__ += _special_more.__all__
from . import _incomplete  # noqa: E402
globals().update({_n: getattr(_incomplete, _n) for _n in _incomplete.__all__})
__all__ += _incomplete.__all__

from . import _zeta  # noqa: E402
globals().update({_n: getattr(_zeta, _n) for _n in _zeta.__all__})
__all__ += _zeta.__all__

from .._missing import missing as _missing, table as _table  # noqa: E402

__getattr__ = _missing(__name__, _table(
    "bernoulli bessel_jn boxcox boxcox1p dawsn exp1 expi expn fresnel "
    "hyp1f1 hyp2f1 loggamma owens_t sici spence sph_harm_y "
    "wofz", "not implemented yet (stagec.scipy.special has logsumexp, erf/erfc/erfinv, gammaln/digamma/gamma, "
                 "betaln, beta, poch, factorial, comb, multigammaln, zeta, polygamma, expit/logit, xlogy/xlog1py, entr, rel_entr, "
                 "kl_div, i0/i0e/i1/i1e, gammainc/gammaincc/betainc, ndtr/ndtri/log_ndtr, softmax)"))


# Eager calls of these run as eager composites (`numpy._base._composite`: one traced graph from a signature's second
# call, the bits op by op gives): op by op on 4x4 float32 i0e took 1074 us, erfcx 589, gammainc 4755 (JAX 20, 229,
# 36); as composites 94-97, 38, 406 (docs/log.md, 2026-11-30). Each checks shapes and dtypes only, no values.
# betainc's `betaln` and ndtri's `ndtr` run as one module eagerly (`_staged`), which a composite cannot plan step by
# step with the same bits: each is one step of the plan (`numpy._staged_step`): betainc 4x4 6.1 ms -> ~0.3.
for _n in ("i0", "i0e", "i1", "i1e", "erfcx", "gammasgn", "ndtri"):
    globals()[_n] = _composite(globals()[_n])
# The incomplete gamma and beta functions run as one module eagerly, jit's (4x4 float32 gammainc: ~190 steps and
# their loop, 186 us as a composite; its module 53 us, JAX 60-70), and as one step of a composite calling them
# (scipy.stats' cdfs).
for _n in ("gammainc", "gammaincc", "betainc"):
    globals()[_n] = _composite_step(_staged()(globals()[_n]))
