"""`jax.random`'s samplers that are transforms of others: each composes stagec's `uniform`, `normal`,
`exponential`, `bernoulli`, `gamma`/`loggamma` and `split` exactly as JAX's composes its own (same keys, same
operations, same order), so that it draws JAX's values: bit for bit where the pieces are exact and the transform
is (`rademacher`), within a few ulps where a transcendental function is involved (docs/random.md). Eagerly each
runs as one compiled module (`_run`)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import dtypes, lax
from .. import numpy as snp
from ..core import aval_of, tracing_anywhere
from . import (_arraylike, _check_shape, _dtype, _prng, _run, bernoulli, exponential, gamma, loggamma, normal,
               split, uniform)
from ._prng import canonical_shape

__all__ = ["cauchy", "rademacher", "maxwell", "double_sided_maxwell", "weibull_min", "rayleigh", "pareto", "lognormal",
           "chisquare", "t", "f", "geometric", "triangular", "wald", "generalized_normal", "ball", "orthogonal",
           "binomial", "multinomial"]


def _shape(name: str, shape, *params) -> tuple:
    """JAX's `_check_broadcast_shapes`: the parameters' broadcast shape when `shape` is None."""
    shapes = [np.shape(p) if isinstance(p, (int, float, list, tuple)) else aval_of(p).shape for p in params]
    if shape is None:
        return tuple(np.broadcast_shapes(*shapes)) if shapes else ()
    shape = canonical_shape(name, shape)
    _check_shape(name, shape, *shapes)
    return shape


def _call(name: str, key, body, *params):
    """`body(key_data, *params)` as one sampler: traced into a trace, else one compiled module."""
    kd, _ = _prng.unwrap(name, key)
    return _run(body, kd, *[_arraylike(p) for p in params])


def _float(name: str, dtype):
    return _dtype(name, dtype, float, "f", "a float")


def cauchy(key, shape: Sequence[int] = (), dtype=None):
    """Standard Cauchy floats: tan(pi (u - 1/2)) of a uniform u in [eps, 1)."""
    dt, shape = _float("cauchy", dtype), canonical_shape("cauchy", shape)

    def body(k):
        u = uniform(k, shape, dt, minval=float(dtypes.finfo(dt).eps), maxval=1.0)
        return lax.tan(lax.mul(lax.full_like(u, np.pi), lax.sub(u, lax.full_like(u, 0.5))))
    return _call("cauchy", key, body)


def rademacher(key, shape: Sequence[int] = (), dtype=None):
    """-1 or 1 with equal probability (integers by default)."""
    dt = dtypes.canonicalize(int if dtype is None else dtype)
    shape = canonical_shape("rademacher", shape)
    return _call("rademacher", key, lambda k: (2 * bernoulli(k, 0.5, shape).astype(dt) - 1).astype(dt))


def maxwell(key, shape: Sequence[int] = (), dtype=None):
    """Maxwell floats: the norm of three standard normals."""
    dt, shape = _float("maxwell", dtype), canonical_shape("maxwell", shape)
    return _call("maxwell", key, lambda k: snp.linalg.norm(normal(k, shape + (3,), dt), axis=-1))


def double_sided_maxwell(key, loc, scale, shape: Sequence[int] = (), dtype=None):
    """A random sign times a Maxwell float, scaled and shifted (JAX's shape rule: `shape` + the parameters')."""
    dt = _float("double_sided_maxwell", dtype)
    shape = canonical_shape("double_sided_maxwell", shape)
    pshape = tuple(np.broadcast_shapes(np.shape(loc) if not hasattr(loc, "shape") else loc.shape,
                                       np.shape(scale) if not hasattr(scale, "shape") else scale.shape))
    full = (shape or pshape) + pshape

    def body(k, loc, scale):
        mk, rk = split(k)
        return rademacher(rk, full, dt) * maxwell(mk, full, dt) * scale + loc
    return _call("double_sided_maxwell", key, body, loc, scale)


def weibull_min(key, scale, concentration, shape: Sequence[int] = (), dtype=None):
    """Weibull floats: scale (-log(1 - u)) ** (1 / concentration)."""
    dt, shape = _float("weibull_min", dtype), canonical_shape("weibull_min", shape)

    def body(k, scale, concentration):
        u = uniform(k, shape, dt, 0, 1)
        return snp.power(-snp.log1p(-u), 1.0 / concentration) * scale
    return _call("weibull_min", key, body, scale, concentration)


def rayleigh(key, scale, shape: Sequence[int] | None = None, dtype=None):
    """Rayleigh floats: scale sqrt(-2 log u)."""
    dt, shape = _float("rayleigh", dtype), _shape("rayleigh", shape, scale)

    def body(k, scale):
        u = uniform(k, shape, dt)
        scale = snp.broadcast_to(snp.asarray(scale).astype(dt), shape)
        return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), lax.full_like(scale, -2))))
    return _call("rayleigh", key, body, scale)


def pareto(key, b, shape: Sequence[int] | None = None, dtype=None):
    """Pareto floats of shape `b`: exp(e / b) of a standard exponential e."""
    dt, shape = _float("pareto", dtype), _shape("pareto", shape, b)

    def body(k, b):
        return snp.exp(exponential(k, shape, dt) / lax._convert_element_type(b, dt))
    return _call("pareto", key, body, b)


def lognormal(key, sigma=np.float32(1), shape: Sequence[int] | None = None, dtype=None):
    """exp(sigma * a standard normal)."""
    dt = _dtype("lognormal", dtype, float, "fc", "a float or complex")
    shape = _shape("lognormal", shape, sigma)
    return _call("lognormal", key, lambda k, s: snp.exp(normal(k, shape, dt) * lax._convert_element_type(s, dt)),
                 sigma)


def _chisquare(k, df, shape, dt):
    df = lax._convert_element_type(df, dt)
    half = lax.div(df, lax.full_like(df, 2))
    return lax.mul(snp.exp(loggamma(k, half, shape, dt)), 2)


def chisquare(key, df, shape: Sequence[int] | None = None, dtype=None):
    """Chi-square floats of `df` degrees of freedom: 2 exp(loggamma(df / 2))."""
    dt, shape = _float("chisquare", dtype), _shape("chisquare", shape, df)
    return _call("chisquare", key, lambda k, df: _chisquare(k, df, shape, dt), df)


def t(key, df, shape: Sequence[int] | None = None, dtype=None):
    """Student's t floats: n sqrt((df / 2) / g) of a normal n and a gamma(df / 2) g."""
    dt, shape = _float("t", dtype), _shape("t", shape, df)

    def body(k, df):
        df = lax._convert_element_type(df, dt)
        kn, kg = split(k)
        n = normal(kn, shape, dt)
        half = lax.div(df, lax.full_like(df, 2))
        return n * snp.sqrt(half / gamma(kg, half, shape, dt))
    return _call("t", key, body, df)


def f(key, dfnum, dfden, shape: Sequence[int] | None = None, dtype=None):
    """F floats: (chisquare(dfnum) / dfnum) / (chisquare(dfden) / dfden)."""
    dt, shape = _float("f", dtype), _shape("f", shape, dfnum, dfden)

    def body(k, dfnum, dfden):
        dfden, dfnum = lax._convert_element_type(dfden, dt), lax._convert_element_type(dfnum, dt)
        kd, kn = split(k)
        num = snp.true_divide(_chisquare(kn, dfnum, shape, dt), dfnum)
        den = snp.true_divide(_chisquare(kd, dfden, shape, dt), dfden)
        return snp.true_divide(num, den)
    return _call("f", key, body, dfnum, dfden)


def geometric(key, p, shape: Sequence[int] | None = None, dtype=None):
    """The number of Bernoulli(p) trials up to the first success: floor(log u / log(1 - p)) + 1 (integers)."""
    dt = _dtype("geometric", dtype, int, "iu", "an integer")
    shape = _shape("geometric", shape, p)

    def body(k, p):
        p = snp.asarray(p)
        if dtypes.kind(aval_of(p).dtype) not in "fc":
            p = p.astype(snp.result_type(p, 1.0))
        u = uniform(k, shape, aval_of(p).dtype)
        u = snp.where(u == 0, 1, u)
        g = lax.floor(lax.div(lax.log(u), snp.broadcast_to(lax.log1p(-p), shape))) + 1
        return g.astype(dt)
    return _call("geometric", key, body, p)


def triangular(key, left, mode, right, shape: Sequence[int] | None = None, dtype=None):
    """Triangular floats on [left, right] peaking at `mode` (the inverse CDF of a uniform)."""
    dt, shape = _float("triangular", dtype), _shape("triangular", shape, left, mode, right)

    def body(k, left, mode, right):
        left, right, mode = (snp.broadcast_to(lax._convert_element_type(v, dt), shape) for v in (left, right, mode))
        fc = (mode - left) / (right - left)
        u = uniform(k, shape, dt)
        out1 = left + lax.sqrt(u * (right - left) * (mode - left))
        out2 = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
        return lax.select(u < fc, out1, out2)
    return _call("triangular", key, body, left, mode, right)


def wald(key, mean, shape: Sequence[int] | None = None, dtype=None):
    """Wald (inverse Gaussian) floats of `mean` (Michael, Schucany and Haas, as JAX)."""
    dt, shape = _float("wald", dtype), _shape("wald", shape, mean)

    def body(k, mean):
        k1, k2 = split(k, 2)
        mean = snp.broadcast_to(snp.asarray(mean).astype(dt), shape)
        v = normal(k1, shape, dt)
        z = uniform(k2, shape, dt)
        y = lax.integer_pow(v, 2)
        y_sq = lax.integer_pow(y, 2)
        mean_sq = lax.integer_pow(mean, 2)
        sqrt_term = lax.sqrt(4 * mean * y + mean_sq * y_sq)
        x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
        return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)
    return _call("wald", key, body, mean)


def _generalized_normal(k, p, shape, dt):
    keys = split(k)
    g = gamma(keys[0], 1 / p, shape, dt)
    r = rademacher(keys[1], shape, dt)
    return r * g ** (1 / p)


def generalized_normal(key, p: float, shape: Sequence[int] = (), dtype=None):
    """Generalized normal floats of power `p` (density ~ exp(-|x|^p)): a random sign times gamma(1/p) ** (1/p)."""
    dt, shape = _float("generalized_normal", dtype), canonical_shape("generalized_normal", shape)
    return _call("generalized_normal", key, lambda k, p: _generalized_normal(k, p, shape, dt), p)


def ball(key, d: int, p: float = 2, shape: Sequence[int] = (), dtype=None):
    """Points uniform in the unit p-norm ball of dimension `d` (shape `shape + (d,)`)."""
    dt, shape = _float("ball", dtype), canonical_shape("ball", shape)
    d = int(d)

    def body(k, p):
        k1, k2 = split(k)
        g = _generalized_normal(k1, p, (*shape, d), dt)
        e = exponential(k2, shape, dt)
        return g / (((snp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]
    return _call("ball", key, body, p)


def orthogonal(key, n: int, shape: Sequence[int] = (), dtype=None, m: int | None = None):
    """Haar-random orthogonal (unitary) matrices of shape `shape + (n, m)` (m = n by default): the Q of a QR of
    normal draws with its columns' signs fixed by diag(R)."""
    dt, shape = _float("orthogonal", dtype) if dtype is None or dtypes.kind(np.dtype(dtype)) != "c" else \
        dtypes.canonicalize(dtype), canonical_shape("orthogonal", shape)
    n, m = int(n), int(n if m is None else m)

    def body(k):
        z = normal(k, (*shape, max(n, m), min(n, m)), dt)
        q, r = snp.linalg.qr(z)
        x = q * snp.expand_dims(snp.sign(snp.linalg.diagonal(r)), -2)
        return snp.matrix_transpose(x) if n < m else x
    return _call("orthogonal", key, body)


# The tails of log k! (Stirling's series' remainder) for k = 0..9, as JAX's `_stirling_approx_tail` tables them.
_STIRLING_TAILS = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
                   0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k):
    """JAX's `_stirling_approx_tail`: the table for k <= 9, else the series at k clamped to [0, 9] (as JAX computes
    it: for k > 9 that is the series at 9; kept so that BTRS accepts what JAX's accepts)."""
    use = k <= 9
    k = lax.clamp(lax.full_like(k, 0.0), k, lax.full_like(k, 9.0))
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    # (the table a constant of the graph, not an Array it captures: a sampler with a capture is traced every call)
    tails = snp.take(np.array(_STIRLING_TAILS, aval_of(k).dtype), snp.floor(k).astype(np.int32))
    return lax.select(use, tails, approx)


_MAX_ITERS = np.iinfo(np.int32).max  # (JAX's bound is the float dtype's max: no draw comes near either)


def _binomial_inversion(key, count, prob, shape, dtype):
    """Counts of successes as the geometric waiting times (ceil(log u / log(1 - p))) that fit in `count` trials,
    every value's loop run until all are done (JAX's)."""
    log1minusprob = snp.log1p(-prob)

    def body(carry):
        i, num_geom, geom_sum, key = carry
        subkey, key = split(key)
        num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
        u = uniform(subkey, shape, aval_of(prob).dtype)
        geom = snp.ceil(snp.log(u) / log1minusprob)
        return i + 1, num_geom_out, geom_sum + geom, key

    def cond(carry):
        return snp.any(carry[2] <= count) & (carry[0] < _MAX_ITERS)

    zeros = snp.zeros(shape, aval_of(prob).dtype)
    k = lax.while_loop(cond, body, (np.int32(0), zeros, zeros, key))[1]
    return (k - 1).astype(dtype)


def _btrs(key, count, prob, shape, dtype):
    """Hormann's transformed rejection (BTRS) for count * p > 10, as JAX's: every value's loop until all accept."""
    stddev = snp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = snp.floor((count + 1) * prob)

    def body(carry):
        i, k_out, accepted, key = carry
        key, subkey_0, subkey_1 = split(key, 3)
        u = uniform(subkey_0, shape, aval_of(prob).dtype)
        v = uniform(subkey_1, shape, aval_of(prob).dtype)
        u = u - 0.5
        us = 0.5 - snp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = snp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = snp.log(v * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * snp.log((m + 1) / (r * (count - m + 1)))
              + (count + 1) * snp.log((count - m + 1) / (count - k + 1))
              + (k + 0.5) * snp.log(r * (count - k + 1) / (k + 1))
              + _stirling_tail(m) + _stirling_tail(count - m) - _stirling_tail(k) - _stirling_tail(count - k))
        accept = accept1 | (~reject & (v <= ub))
        return i + 1, lax.select(accept, k, k_out), accepted | accept, key

    def cond(carry):
        return snp.any(~carry[2]) & (carry[0] < _MAX_ITERS)

    init = (np.int32(0), snp.full(shape, -1, aval_of(prob).dtype), snp.full(shape, False, bool), key)
    return lax.while_loop(cond, body, init)[1].astype(dtype)


def _prob(p):
    """`p` as the binomial's float operand (an integer's promoted to a float)."""
    p = snp.asarray(p)
    return p if dtypes.kind(aval_of(p).dtype) in "fc" else p.astype(snp.result_type(p, 1.0))


def _inversions(count, prob):
    """(where the inversion loop answers, q = min(p, 1 - p) with NaN and negative q as 0.01) of `_binomial`, by
    whichever module runs these ops: jit's, or NumPy's on host values (`_binomial_branches`)."""
    m = np if isinstance(count, np.ndarray) and isinstance(prob, np.ndarray) else snp
    q = m.where(prob < 0.5, prob, 1.0 - prob)
    q = m.where(m.isnan(q) | (q < 0.0), 0.01, q).astype(q.dtype)
    return m.isnan(count) | (count < 0.0) | (count * q <= 10.0), q


def _binomial_branches(n, p) -> str:
    """The loops an eager call's parameters need (`_binomial`): "inversion" or "btrs" where every value takes that one
    (the other loop dropped: each draws from the key alone, the select took nothing from it, so the same bits and half
    the compile), else "both"; "both" under any trace and for an Array (its value is not read back)."""
    if tracing_anywhere[0] or not all(isinstance(v, (int, float, np.ndarray, np.generic)) for v in (n, p)):
        return "both"
    dt = np.dtype(aval_of(_prob(p)).dtype)
    with np.errstate(all="ignore"):
        inv, _ = _inversions(np.asarray(n).astype(dt), np.asarray(p).astype(dt))
    return "inversion" if inv.all() else "btrs" if not inv.any() else "both"


def _binomial(key, count, prob, shape, dtype, branches: str = "both"):
    """JAX's (TensorFlow's) binomial: the inversion loop where count * q <= 10 (q = min(p, 1 - p)), else BTRS, each
    run on every value with the other's taken values replaced (`branches`: one of them alone); NaN for a NaN or
    negative count or a p outside [0, 1], inf for an infinite count; counts of failures where p > 1/2."""
    prob = _prob(prob)
    count = snp.broadcast_to(lax.convert_element_type(count, aval_of(prob).dtype), shape)
    prob = snp.broadcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = lax.select(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = snp.isnan(count) | (count < 0.0)
    count_inf = snp.isinf(count)
    q_is_nan = snp.isnan(q)
    q_l_0 = q < 0.0
    use_inversion, q = _inversions(count, prob)
    count = snp.floor(count)  # (NumPy's binomial of a float count)
    if branches == "inversion":  # (every value's: the selects below would take these operands as they are)
        samples = _binomial_inversion(key, count, q, shape, dtype)
    elif branches == "btrs":
        samples = _btrs(key, count, q, shape, dtype)
    else:
        count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
        count_btrs = lax.select(use_inversion, lax.full_like(count, 1e4), count)
        q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
        samples = lax.select(use_inversion, _binomial_inversion(key, count_inv, q, shape, dtype),
                             _btrs(key, count_btrs, q_btrs, shape, dtype))
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = lax.select(invalid, snp.full_like(samples, np.nan, dtype), samples)
    samples = lax.select(count_inf & ~invalid, snp.full_like(samples, np.inf, dtype), samples)
    return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples, count.astype(dtype) - samples)


def binomial(key, n, p, shape: Sequence[int] | None = None, dtype=None):
    """Binomial counts of `n` trials of success probability `p` (floats; JAX's algorithm, its values)."""
    dt, shape = _float("binomial", dtype), _shape("binomial", shape, n, p)
    n, p = _arraylike(n), _arraylike(p)
    branches = _binomial_branches(n, p)  # (closed over: one kernel per choice)
    return _call("binomial", key, lambda k, n, p: _binomial(k, n, p, shape, dt, branches), n, p)


def multinomial(key, n, p, *, shape: Sequence[int] | None = None, dtype=None, unroll: int | bool = 1):
    """Counts of `n` trials over the outcomes along `p`'s last axis: a binomial per outcome of the trials left, in a
    scan (JAX's)."""
    dt = _float("multinomial", dtype)
    n, p = _arraylike(n), _arraylike(p)

    def body(k, n, p):
        n, p = snp.asarray(n), snp.asarray(p)
        common = snp.result_type(n, p, 1.0)
        n, p = n.astype(common), p.astype(common)
        full = aval_of(p).shape if shape is None else canonical_shape("multinomial", shape)
        n, p = snp.broadcast_to(n, full[:-1]), snp.moveaxis(snp.broadcast_to(p, full), -1, 0)
        remaining = lax.cumsum(p, 0, reverse=True)
        ratios = p / snp.where(remaining == 0, 1, remaining)

        def step(remainder, ratio_key):
            ratio, key = ratio_key
            count = binomial(key, remainder, ratio.clip(0, 1), dtype=aval_of(remainder).dtype)
            return remainder - count, count
        _, counts = lax.scan(step, n, (ratios, split(k, aval_of(ratios).shape[0])), unroll=unroll)
        return snp.moveaxis(counts, 0, -1).astype(dt)
    return _call("multinomial", key, body, n, p)
