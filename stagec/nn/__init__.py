"""`stagec.nn`: activation functions and normalizers on top of `stagec.numpy`; `initializers`."""
from __future__ import annotations

import decimal
import math
from decimal import Decimal
from functools import partial
from typing import Any

import numpy as np

from .. import dtypes, lax
from .. import numpy as snp
from ..ad import custom_jvp
from ..core import aval_of
from ..numpy._base import _composite, _promoted_arrays, _staged
from ..numpy._base import _to_float as _to_float_args


def _to_float(fname: str, *args):
    """Arrays or tracers of a common inexact dtype (the activations below use operators on them: `x > 0` raised a
    TypeError on the host constant `_to_float` gives for an integer array called eagerly)."""
    return _promoted_arrays(_to_float_args, fname, *args)


def _beside_float(fname: str, *args):
    """`_to_float`, but bool and integers to the default float (float64 under x64), as JAX's activations written with
    a Python float beside x give them (`where(x > 0, 0., x)`: an integer x promotes with a weak float)."""
    return _promoted_arrays(partial(_to_float_args, to=lambda dt: dtypes.default_float()), fname, *args)


def _bool_beside_float(fname: str, x):
    """`_to_float`, bool to the default float: JAX's soft_sign and mish meet a bool x with an integer first
    (`abs(x) + 1`, `logaddexp(x, 0)`), so bool is the default float there and other integers are `_to_float`'s."""
    return _beside_float(fname, x) if aval_of(x).dtype == np.bool_ else _to_float(fname, x)


def _relu(x: Any):
    """max(x, 0) (NaN propagates)."""
    if aval_of(x).dtype == np.bool_:  # (bool beside 0: the default int, as JAX's)
        x, _ = _promoted_arrays(snp._promote, "relu", x, 0)
    else:
        (x,) = snp._promote("relu", x)
    return snp.maximum(x, lax.full_like(x, 0))


# JAX's derivative: 0 at x == 0 (max's own rule gives 1/2 there)
relu = custom_jvp(_relu)
relu.__name__ = relu.__qualname__ = "relu"


@relu.defjvp
def _relu_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = _relu(x)
    return y, snp.where(x > 0, snp.asarray(t, dtype=aval_of(y).dtype), lax.full_like(y, 0))


@_composite
def sigmoid(x: Any):
    """1 / (1 + exp(-x)), computed stably (StableHLO's logistic)."""
    (x,) = _to_float("sigmoid", x)
    return lax.logistic(x)


@_composite
def softplus(x: Any):
    """log(1 + exp(x)) without overflow: logaddexp(x, 0) (an integer 0, as JAX's: int32 gives float32 under x64)."""
    return snp.logaddexp(x, 0)


def _x_sigmoid(x, t):
    """x * sigmoid(t) as x / (1 + e^-t); where e^-t would overflow (t < 1 - log(max)), x e^(t/2) e^(t/2) (1 is
    negligible there), so that results above the smallest normal keep their digits (x * logistic(x) was 0 at -90 in
    float32, where e^x is subnormal and x e^x is not). One exp and one division per element."""
    far = t < 1 - math.log(float(snp.finfo(aval_of(t).dtype).max))
    e = snp.exp(snp.where(far, 0.5 * t, -t))
    ef = snp.where(far, e, 1)  # (the branch not taken stays finite: 0 * inf in its derivative is NaN)
    return snp.where(far, x * ef * ef, x / (1 + e))


def _x_sigmoid_half(x, u):
    """x * sigmoid(2u) as x / (1 + h^2) for u >= 0 and x h h / (1 + h^2) below, h = e^-|u| <= 1: no exp overflows and
    none needs its argument selected (`_x_sigmoid`'s select and its far branch's are three more operations per
    element); x h h keeps the digits of results above the smallest normal where e^-2|u| is subnormal. h's error
    counts twice: about 1 ulp more than `_x_sigmoid` where sigmoid(2u) is small (silu keeps that)."""
    h = snp.exp(-snp.abs(u))
    return snp.where(u < 0, x * h * h, x) / (1 + h * h)


_RSQRT2 = decimal.Context(prec=40).sqrt(Decimal("0.5"))


def _normal_cdf(x):
    """ndtr(x) = erfc(z) / 2, z = -x / sqrt(2). float32 (float16 and bfloat16 in it): as written, erfc(x * c) / 2 with
    c = f32(-1/sqrt 2), which `mathlib` computes from x itself (passes/special.py: erfc's relative error is 2 z^2 times
    its argument's, 180 ulps at x = -13 from z's rounding), so eager callers run it as one module (`_staged`).
    float64: z rounded, its rounding error dz kept: erfc(z + dz) = erfc(z)(1 - dz R(z)), R(z) = -erfc'(z) / erfc(z) ~
    2z + 1/(z + 1/2) for z > 0. x is clamped to +-top first (ndtr is 0 or 1 there; inf and NaN alike). dz: x = xh + xl
    with xh = floor(x 2^k) 2^-k (no select, no int conversion) short enough that xh times the leading half of
    1/sqrt(2) is exact."""
    dt = aval_of(x).dtype
    if dt not in (np.float32, np.float64):
        return _normal_cdf(x.astype(np.float32)).astype(dt)
    if dt == np.float32:
        return lax.mul(lax.erfc(lax.mul(x, lax.full_like(x, -float(_RSQRT2)))), lax.full_like(x, 0.5))
    top, k, half = (16, 8, 12) if dt == np.float32 else (64, 20, 27)  # (beyond |x| = top, ndtr is 0 or 1)
    ch = math.ldexp(round(math.ldexp(-_RSQRT2, half)), -half)  # (`half` bits)
    cl = float(decimal.Context(prec=40).subtract(-_RSQRT2, Decimal(ch)))  # (-1/sqrt(2) to 2 x 53 bits: its float64 error alone made 60 float64 ulps)
    c = ch + cl
    x = snp.clip(x, -top, top)
    xh = snp.floor(x * 2.0 ** k) * 2.0 ** -k  # (floor: one instruction; round is a libm call, x + 1.5 2^23 - 1.5 2^23 is x on Vulkan)
    a = xh * ch  # (exact)
    t = xh * cl + (x - xh) * c
    z = a + t
    dz = (a - z) + t
    r = snp.where(z > 0, 2 * z + 1 / (z + 0.5), 0.0)
    return 0.5 * lax.erfc(z) * (1 - dz * r)


@_composite
def silu(x: Any):
    (x,) = _to_float("silu", x)
    return _x_sigmoid(x, x)


swish = silu


def gelu(x: Any, approximate: bool = True):
    """Gaussian error linear unit; the tanh approximation by default (as JAX), exact (erf) otherwise."""
    (x,) = _to_float("gelu", x)
    return _gelu_tanh(x) if approximate else _gelu_exact(x)


@_composite
def _gelu_tanh(x):
    """x (1 + tanh u) / 2 = x sigmoid(2u): 1 + tanh u cancelled to 0 or 1e7 ulps below x = -3. u as written
    (c (x + 0.044715 x^3)): folding the constants, c 0.044715's rounding made the tail (t's error times |t|) ~30 ulps
    worse."""
    c = lambda v: lax.full_like(x, v)
    inner = lax.mul(c(math.sqrt(2 / math.pi)), lax.add(x, lax.mul(c(0.044715), lax.mul(x, lax.mul(x, x)))))
    return _x_sigmoid_half(x, inner)


@_staged()
def _gelu_exact(x):
    """x ndtr(x), as one module when eager (not a `_composite`, whose equations run one by one: float32's ndtr is read
    whole by `mathlib`, `_normal_cdf`)."""
    return _x_normal_cdf(x)


def _ndtr_low(dtype) -> float:
    """The bound below which ndtr(x) is taken as npdf(x) / -x (1 + `_ndtr_series`)."""
    return -10.0 if np.dtype(dtype).itemsize <= 4 else -20.0


def _ndtr_series(x):
    """(`_ndtr_low`, sum_k (-1)^k (2k-1)!! / x^(2k))."""
    low, terms = _ndtr_low(x.dtype), 6 if x.dtype.itemsize <= 4 else 10
    w = 1 / (x * x)
    series, term = 0.0, 1.0
    for k in range(1, terms + 1):
        term = -term * (2 * k - 1) * w
        series = series + term
    return low, series


def _x_normal_cdf(x):
    """x ndtr(x) (exact gelu; x (1 + erf(x / sqrt 2)) / 2 cancelled), x clamped at -top first (gelu(-inf) was -inf
    0 = NaN). float32 (float16 and bfloat16 in it) as JAX writes it, erfc(x * f32(-1/sqrt 2)) (max(x, -16) / 2), which
    `mathlib` computes from x, its 2^k scale last: where ndtr(x) is subnormal (flushed to 0) x ndtr(x) may not be (x in
    [-13.2, -12.95]: 1.6e7 ulps, JAX alike; bfloat16 216, JAX 192). float64: x ndtr(x) and below `_ndtr_series`' bound
    -npdf(x) (1 + the series), npdf's exponent x^2 / 2 split exactly as xh^2 / 2 + l, e^-l by Taylor."""
    dt = aval_of(x).dtype
    if dt not in (np.float32, np.float64):
        return _x_normal_cdf(x.astype(np.float32)).astype(dt)
    if dt == np.float32:
        return lax.mul(lax.erfc(lax.mul(x, lax.full_like(x, -float(_RSQRT2)))),
                       lax.mul(snp.maximum(x, lax.full_like(x, -16)), lax.full_like(x, 0.5)))
    top, k = 64, 20  # (xh of k + 6 bits: xh^2 exact)
    plain = lax.mul(snp.maximum(x, -top), _normal_cdf(x))
    low = _ndtr_low(dt)
    t = snp.clip(x, -top, low)  # (finite, in the series' range: no NaN in the branch `where` leaves out, nor its gradient)
    _, series = _ndtr_series(t)
    th = snp.floor(t * 2.0 ** k) * 2.0 ** -k
    tl = t - th
    l = th * tl + 0.5 * tl * tl  # (|l| < 2^-k top: e^-l by Taylor's 9 terms, cheaper than an exp)
    el = 1.0
    for j in range(9, 0, -1):
        el = 1 - el * l / j
    npdf = snp.exp(-0.5 * th * th) * el * (1 / math.sqrt(2 * math.pi))
    return snp.where(x < low, -npdf * (1 + series), plain)


def _max_shift(x, axis, where=None):
    """max over axis (kept; -inf over none), replaced by 0 where it is not finite (all -inf rows stay -inf, not NaN);
    held constant for differentiation, as JAX's: its derivatives cancel (1 - sum of the softmax), so through it they
    only add that sum's rounding to the max's element and two reductions to a gradient (docs/log.md, 2026-11-28)."""
    m = snp.max(x, axis=axis, keepdims=True, initial=-np.inf, where=where)
    return lax.stop_gradient(snp.where(snp.isfinite(m), m, lax.full_like(m, 0)))


@_composite
def logsumexp(a: Any, axis=None, b: Any = None, keepdims: bool = False, return_sign: bool = False,
              where: Any = None):
    """log(sum(b * exp(a))) over `axis` (the elements in `where`; where b is 0, none of a's), shifted by the max
    for stability; with `return_sign`, (log|sum|, its sign), so a negative `b` may make the sum negative. As
    JAX's: over no elements, -inf (the max without `initial=-inf` raised on an empty axis)."""
    if where is not None:  # (as JAX: masked entries are 0 first, so a NaN there gives no NaN gradient)
        a = snp.where(where, a, 0)
    if b is None:
        (a,) = _to_float("logsumexp", a)
    else:
        a, b = _to_float("logsumexp", a, b)
        a = snp.where(b != 0, a, -np.inf)  # (as JAX: an infinite a times b = 0 is no term, not NaN)
    # (the shift is the max of the real parts, as JAX's: a complex max made log|sum| + max complex with
    # return_sign, where JAX's is real)
    m = _max_shift(snp.real(a) if snp.iscomplexobj(a) else a, axis, where)
    e = snp.exp(snp.subtract(a, m))
    if b is not None:
        e = snp.multiply(e, b)
    s = snp.sum(e, axis=axis, keepdims=True, where=where)
    out, sign = snp.add(snp.log(snp.abs(s) if return_sign else s), m), snp.sign(s)
    if b is not None and not return_sign and not snp.iscomplexobj(out):
        # (a negative sum is NaN selected, as JAX's: its gradient 0, not log's of the negative sum)
        out = snp.where(sign < 0, np.nan, out)
    if not keepdims:
        dims = tuple(range(aval_of(out).ndim)) if axis is None else axis
        out, sign = snp.squeeze(out, axis=dims), snp.squeeze(sign, axis=dims)
    return (out, sign) if return_sign else out


def _shifted(fname: str, x, axis, where):
    """`x` (outside `where`: -inf) minus its max over `axis`, the max held constant for differentiation. As JAX: no
    guard for rows whose max is infinite (an all -inf row gives NaN, a row holding +inf NaN throughout)."""
    (x,) = _to_float(fname, x)
    x_max = snp.max(x, axis=axis, keepdims=True, initial=-np.inf, where=where)
    if where is not None:
        x = snp.where(where, x, -np.inf)
    return snp.subtract(x, lax.stop_gradient(x_max))


@_composite
def softmax(x: Any, axis=-1, where: Any = None):
    """exp(x) / sum(exp(x)) over `axis` (elements outside `where`: 0), shifted by the max for stability."""
    e = snp.exp(_shifted("softmax", x, axis, where))
    out = snp.true_divide(e, snp.sum(e, axis=axis, keepdims=True, where=where))
    return out if where is None else snp.where(where, out, 0)


@_composite
def log_softmax(x: Any, axis=-1, where: Any = None):
    """x - logsumexp(x) over `axis` (elements outside `where`: -inf)."""
    shifted = _shifted("log_softmax", x, axis, where)
    out = snp.subtract(shifted, snp.log(snp.sum(snp.exp(shifted), axis=axis, keepdims=True, where=where)))
    return out if where is None else snp.where(where, out, -np.inf)


@_composite
def elu(x: Any, alpha: Any = 1.0):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    (x,) = _beside_float("elu", x)
    return snp.where(x > 0, x, alpha * snp.expm1(snp.where(x > 0, 0.0, x)))


@_composite
def selu(x: Any):
    """scale * elu(x, alpha) with the self-normalizing constants."""
    return 1.0507009873554804934193349852946 * elu(x, 1.6732632423543772848170429916717)


@_composite
def celu(x: Any, alpha: Any = 1.0):
    """max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1)."""
    (x,) = _beside_float("celu", x)
    return snp.maximum(x, 0.0) + alpha * snp.expm1(snp.minimum(x, 0.0) / alpha)


@_composite
def leaky_relu(x: Any, negative_slope: Any = 1e-2):
    """x where x >= 0, else negative_slope * x."""
    x, s = _promoted_arrays(snp._promote, "leaky_relu", x, negative_slope)  # (JAX's dtype: x beside the slope)
    return snp.where(x >= 0, x, s * x)


def _relu6(x: Any):
    """min(max(x, 0), 6)."""
    return snp.minimum(snp.maximum(x, 0), 6.0)


# JAX's derivative: 1 on (0, 6), 0 elsewhere, ends included (the max/min rules give 1/2 there), selected so that
# an infinite tangent outside (hard_silu's x * relu6' at inf) gives 0, not NaN.
relu6 = custom_jvp(_relu6)
relu6.__name__ = relu6.__qualname__ = "relu6"
relu6.defjvps(lambda g, ans, x: snp.where((x > 0) & (x < 6), snp.asarray(g, dtype=aval_of(ans).dtype),
                                          lax.full_like(ans, 0)))


@_composite
def hard_tanh(x: Any):
    """x clipped to [-1, 1] (integers stay integers, as JAX's)."""
    x = snp.asarray(x)
    return snp.where(x > 1, 1, snp.where(x < -1, -1, x))


@_composite
def hard_sigmoid(x: Any):
    """relu6(x + 3) / 6."""
    return relu6(snp.add(x, 3.0)) / 6.0


@_composite
def hard_silu(x: Any):
    """x * hard_sigmoid(x)."""
    (x,) = _beside_float("hard_silu", x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


@_composite
def log_sigmoid(x: Any):
    """log(sigmoid(x)) = -softplus(-x)."""
    (x,) = _to_float("log_sigmoid", x)
    return snp.negative(softplus(snp.negative(x)))


def _soft_sign(x):
    return x / (snp.abs(x) + 1)


# The derivative 1 / (|x| + 1)^2 itself: the quotient rule's 1/(|x| + 1) - |x|/(|x| + 1)^2 cancels, 436 float32 ulps
# off at |x| = 745 (JAX's, the same rule, 108).
_soft_sign_jvp = custom_jvp(_soft_sign)
_soft_sign_jvp.defjvps(lambda g, ans, x: g / snp.square(snp.abs(x) + 1))


@_composite
def soft_sign(x: Any):
    """x / (|x| + 1)."""
    (x,) = _bool_beside_float("soft_sign", x)
    return _soft_sign_jvp(x)


@_composite
def mish(x: Any):
    """x * tanh(softplus(x))."""
    x = snp.asarray(_bool_beside_float("mish", x)[0])  # (a Python number too: its dtype is read below)
    # tanh(log1p(u)) = n / (n + 2), n = u (u + 2), u = e^x: one exp. Where n / (n + 2) is 1 in the dtype, x; where it
    # is u, x u as x e^(x/2) e^(x/2), normal where e^x is not (x e^x was 0 near -90 in float32)
    t = (snp.finfo(x.dtype).nmant + 3) * math.log(2)
    far, big = x < -t, x > t / 2 + 1
    u = snp.exp(snp.where(far, 0.5 * x, snp.where(big, 0, x)))
    n = u * (u + 2)
    return snp.where(far, x * u * u, snp.where(big, x, x * (n / (n + 2))))  # (x n overflowed float16)


@_composite
def squareplus(x: Any, b: Any = 4):
    """(x + sqrt(x**2 + b)) / 2. With a constant b, as y = a + sqrt(a^2 + b/4), a = |x| / 2, and (b/4) / y below 0
    (x + sqrt cancels there); past |x| / 2 = 2^60 (float64: 2^508), where a^2 would overflow, sqrt(a^2 + b/4) is a
    to the last bit for b below 2^94 (2^961). float16 and bfloat16 in float32. Any other b: through hypot."""
    (x,) = _to_float("squareplus", x)
    dt = np.dtype(aval_of(x).dtype)
    wide = np.float64 if dt == np.float64 else np.float32
    fi = np.finfo(wide)
    big = 2.0 ** (fi.maxexp // 2 - 4)
    if isinstance(b, (int, float, np.integer, np.floating)) and not isinstance(b, bool) and 0 < b < big * big * fi.eps / 8:
        w = x.astype(wide) if dt != wide else x
        a, c = snp.abs(w) * 0.5, float(b) / 4
        y = a + snp.where(a < big, snp.sqrt(a * a + c), a)
        # (a division, not Newton's reciprocal from a bit trick: 0.13 -> 0.105 ms on 1M float32 on this AMD Zen 5,
        # where the divider beside the root is no longer the bottleneck; docs/log.md, 2026-11-30)
        return snp.where(w >= 0, y, c / y).astype(dt)
    # h = sqrt(x^2 + b): x^2 overflowed past 1.8e19 in float32; b < 0 as sqrt(|x| - s) sqrt(|x| + s), s = sqrt(-b)
    # (NaN where x^2 < -b, as the formula; hypot(x, sqrt(b)) was NaN everywhere), its roots apart (the product overflows)
    ax, s = snp.abs(x), snp.sqrt(snp.abs(b))
    h = snp.where(b >= 0, snp.hypot(x, s), snp.sqrt(ax - s) * snp.sqrt(ax + s))
    y = h / 2 + ax / 2  # (h - x overflowed past 1.7e38)
    # (x + h cancelled below 0: (b/4) / y there, but y itself for b = inf, where that is inf / inf)
    return snp.where((x >= 0) | (b == np.inf), y, (b / 4) / snp.where(x >= 0, 1, y)).astype(x.dtype)


@_composite
def sparse_plus(x: Any):
    """0 for x <= -1, x for x >= 1, (x + 1)**2 / 4 between."""
    (x,) = _beside_float("sparse_plus", x)
    return snp.where(x <= -1.0, 0.0, snp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


@_composite
def sparse_sigmoid(x: Any):
    """clip(x + 1, 0, 2) / 2."""
    (x,) = _beside_float("sparse_sigmoid", x)
    return 0.5 * snp.clip(x + 1.0, 0.0, 2.0)


@_composite
def glu(x: Any, axis: int = -1):
    """Gated linear unit: the first half of `axis` times the sigmoid of the second."""
    n = aval_of(x).shape[axis]
    if n % 2:
        raise ValueError(f"glu: axis {axis} has size {n}; it must be divisible by 2")
    a, b = snp.split(x, 2, axis)
    return a * sigmoid(b)


@_composite
def standardize(x: Any, axis=-1, mean: Any = None, variance: Any = None, epsilon: Any = 1e-5, where: Any = None):
    """(x - mean) / sqrt(variance + epsilon), the moments over `axis` unless given (variance: E[x^2] - mean^2,
    clipped at 0, as JAX's default "fast" algorithm)."""
    (x,) = _to_float("standardize", x)
    if mean is None:
        mean = snp.mean(x, axis=axis, keepdims=True, where=where)
    if variance is None:
        variance = snp.clip(snp.mean(snp.square(x), axis=axis, keepdims=True, where=where) - snp.square(mean), 0)
    return snp.subtract(x, mean) * lax.rsqrt(variance + epsilon)


def identity(x: Any):
    """x, as an array."""
    return snp.asarray(x)


tanh = snp.tanh


@_composite
def one_hot(x: Any, num_classes: int, dtype=None, axis: int = -1):
    """One-hot encoding of integer `x` with `num_classes` classes (out-of-range gives all zeros)."""
    x = snp.asarray(x) if isinstance(x, (list, tuple)) else x
    av = aval_of(x)
    classes = lax.broadcasted_iota(av.dtype, av.shape + (num_classes,), av.ndim)
    hot = lax.eq(lax.broadcast_in_dim(x, av.shape + (num_classes,), tuple(range(av.ndim))), classes)
    out = snp.astype(hot, dtype or dtypes.default_float())  # (float64 under x64, as JAX's; was float32)
    return snp.moveaxis(out, -1, axis) if axis not in (-1, av.ndim) else out
from . import initializers  # noqa: E402,F401


def _log1mexp(x):
    return snp.where(x < np.log(2), snp.log(-snp.expm1(-x)), snp.log1p(-snp.exp(-x)))


# JAX's derivative, 1 / expm1(x): through the branches, log1p's at -exp(-x) = -1 (x below float32's 6e-8) was NaN
# where its branch is not taken, and the gradient NaN (JAX: 1/x; at 0, inf).
_log1mexp_jvp = custom_jvp(_log1mexp)
_log1mexp_jvp.defjvps(lambda g, ans, x: g / snp.expm1(x))


def log1mexp(x: Any):
    """log(1 - exp(-x)) for x > 0, accurate for small and large x (the two-branch formula)."""
    (x,) = _to_float("log1mexp", x)
    return _log1mexp_jvp(x)


@_composite
def logmeanexp(x: Any, axis=None, where: Any = None, keepdims: bool = False):
    """log(mean(exp(x))) over `axis`, stably."""
    (x,) = _to_float("logmeanexp", x)
    if where is not None:
        x = snp.where(where, x, -np.inf)
        n = snp.sum(snp.broadcast_to(where, x.shape), axis=axis, keepdims=keepdims)
    else:
        n = x.size if axis is None else math.prod(x.shape[a] for a in ((axis,) if isinstance(axis, int) else axis))
    return logsumexp(x, axis=axis, keepdims=keepdims) - snp.log(snp.asarray(n, x.dtype))


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None, is_causal: bool = False,
                          query_seq_lengths=None, key_value_seq_lengths=None, local_window_size=None,
                          implementation=None):
    """Scaled dot-product attention over (batch, seq, heads, head_dim) arrays (JAX's layout; grouped heads:
    `key`/`value` heads divide the query's): softmax(q k^T * scale + bias, masked) v."""
    if query_seq_lengths is not None or key_value_seq_lengths is not None or local_window_size is not None:
        raise NotImplementedError("dot_product_attention with sequence lengths or a local window is not implemented; "
                                  "pass a boolean mask instead")
    if implementation not in (None, "xla"):
        raise NotImplementedError(f"dot_product_attention(implementation={implementation!r}): stagec has one "
                                  f"implementation (None or 'xla')")
    q, k, v = (snp.asarray(t) for t in (query, key, value))
    squeeze = q.ndim == 3
    if squeeze:
        q, k, v = q[None], k[None], v[None]
    B, T, N, H = q.shape
    K = k.shape[2]
    if N % K:
        raise ValueError(f"dot_product_attention: {N} query heads are not a multiple of {K} key heads")
    qg = snp.reshape(q, (B, T, K, N // K, H))
    logits = snp.einsum("btkgh,bskh->bkgts", qg, k)
    logits = snp.reshape(logits, (B, N, T, k.shape[1])) * (1 / math.sqrt(H) if scale is None else scale)
    if bias is not None:
        logits = logits + snp.asarray(bias)
    S = k.shape[1]
    keep = None
    if mask is not None:
        keep = snp.asarray(mask, dtype=bool)
    if is_causal:
        causal = snp.tril(snp.ones((T, S), bool))
        keep = causal if keep is None else keep & causal
    if keep is not None:
        logits = snp.where(keep, logits, snp.finfo(logits.dtype).min)
    w = softmax(logits.astype(snp.float32), axis=-1).astype(q.dtype)
    wg = snp.reshape(w, (B, K, N // K, T, S))
    out = snp.reshape(snp.einsum("bkgts,bskh->btkgh", wg, v), (B, T, N, H))
    return out[0] if squeeze else out


from .._missing import missing as _missing, table as _table  # noqa: E402

__getattr__ = _missing(__name__, _table(
    "get_scaled_dot_general_config scaled_dot_general scaled_matmul",
    "microscaled (mxfp8/nvfp4) matmuls are not implemented; use snp.matmul / lax.dot_general"))
