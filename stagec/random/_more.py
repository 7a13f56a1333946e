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
from ..core import aval_of
from . import (_arraylike, _check_shape, _dtype, _prng, _run, bernoulli, exponential, gamma, loggamma, normal,
               split, uniform)
from ._prng import canonical_shape

__all__ = ["cauchy", "rademacher", "maxwell", "double_sided_maxwell", "weibull_min", "rayleigh", "pareto", "lognormal",
           "chisquare", "t", "f", "geometric", "triangular", "wald", "generalized_normal", "ball", "orthogonal"]


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
