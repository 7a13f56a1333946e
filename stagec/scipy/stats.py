"""`stagec.scipy.stats` (as `jax.scipy.stats`): densities and distribution functions of common distributions,
each a namespace (`stats.norm.logpdf(x, loc, scale)`)."""
from __future__ import annotations

import functools
import math
import sys
import types

import numpy as np

from .. import numpy as snp
from ..numpy._base import _composite, inexact_type
from . import special as sp

_HALF_LOG_2PI = float(0.5 * np.log(2 * np.pi))  # (a Python float: an np.float64 made float32 values float64 under x64)


def _ns(name: str, **fns) -> types.ModuleType:
    """A distribution's namespace, a module importable by its name (`import stagec.scipy.stats.norm as norm`, as
    JAX's examples/advi.py imports it)."""
    mod = types.ModuleType(f"{__name__}.{name}", f"The {name} distribution (as `jax.scipy.stats.{name}`).")
    # (eager calls run as composites: one traced graph a signature, the bits op by op gives)
    mod.__dict__.update({k: _composite(f) for k, f in fns.items()})
    sys.modules[mod.__name__] = mod
    return mod


def _f(*xs):
    """The arguments as arrays of their common floating dtype."""
    arrs = [snp.asarray(x) for x in xs]
    dt = inexact_type(*xs)  # (int32 in float32 under x64 too, as JAX's)
    return [a.astype(dt) for a in arrs]


# ---- normal
def _norm_logpdf(x, loc=0, scale=1):
    x, loc, scale = _f(x, loc, scale)
    z = (x - loc) / scale
    return -0.5 * z * z - _HALF_LOG_2PI - snp.log(scale)


norm = _ns("norm", logpdf=_norm_logpdf,
           pdf=lambda x, loc=0, scale=1: snp.exp(_norm_logpdf(x, loc, scale)),
           cdf=lambda x, loc=0, scale=1: sp.ndtr((snp.asarray(x) - loc) / scale),
           logcdf=lambda x, loc=0, scale=1: sp.log_ndtr((snp.asarray(x) - loc) / scale),
           sf=lambda x, loc=0, scale=1: sp.ndtr(-(snp.asarray(x) - loc) / scale),
           logsf=lambda x, loc=0, scale=1: sp.log_ndtr(-(snp.asarray(x) - loc) / scale),
           ppf=lambda q, loc=0, scale=1: sp.ndtri(q) * scale + loc,
           isf=lambda q, loc=0, scale=1: -sp.ndtri(q) * scale + loc)


# ---- multivariate normal
def _mvn_logpdf(x, mean, cov, allow_singular=None):
    x, mean, cov = _f(x, mean, cov)
    d = snp.shape(mean)[-1]
    L = snp.linalg.cholesky(cov)
    from .linalg import solve_triangular
    diff = snp.asarray(x - mean)
    y = solve_triangular(L, diff[..., None], lower=True)[..., 0] if diff.ndim <= 2 else None
    if y is None:
        raise NotImplementedError("multivariate_normal.logpdf of x with more than 2 dimensions")
    return (-0.5 * snp.sum(y * y, axis=-1) - d * _HALF_LOG_2PI
            - snp.sum(snp.log(snp.diagonal(L, axis1=-2, axis2=-1)), axis=-1))


multivariate_normal = _ns("multivariate_normal", logpdf=_mvn_logpdf,
                          pdf=lambda x, mean, cov, allow_singular=None: snp.exp(_mvn_logpdf(x, mean, cov)))


# ---- others with closed forms
def _on_support(inside, value, *args):
    """`value` where `inside`, else -inf (probability 0), but NaN where an argument is NaN (the support test is
    false there and gave -inf), as SciPy's."""
    nan = functools.reduce(lambda a, b: a | b, [snp.isnan(a) for a in args])
    return snp.where(inside, value, snp.where(nan, np.nan, -np.inf))


def _nan_unless(ok, value):
    """`value` where the parameters are valid (`ok`), else NaN (SciPy's answer for scale <= 0 and the like)."""
    return snp.where(ok, value, np.nan)


def _log_tail(p, q):
    """log p, as log1p(-q) where p > 1/2, q = 1 - p (the log of a rounded 1 - q lost all of q: log cdf = 0 where it
    is -1e-217)."""
    return snp.where(p > 0.5, snp.log1p(-q), snp.log(p))


def _z(x, loc, scale):
    x, loc, scale = _f(x, loc, scale)
    return (x - loc) / scale, scale


def _uniform_logpdf(x, loc=0, scale=1):
    x, loc, scale = _f(x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return _on_support(inside, -snp.log(scale), x, loc, scale)


def _uniform_ppf(q, loc=0, scale=1):
    q, loc, scale = _f(q, loc, scale)
    return _nan_unless((q >= 0) & (q <= 1) & (scale > 0), loc + q * scale)


uniform = _ns("uniform", logpdf=_uniform_logpdf, pdf=lambda x, loc=0, scale=1: snp.exp(_uniform_logpdf(x, loc, scale)),
              cdf=lambda x, loc=0, scale=1: snp.clip((snp.asarray(x) - loc) / scale, 0, 1), ppf=_uniform_ppf)


def _expon_logpdf(x, loc=0, scale=1):
    x, loc, scale = _f(x, loc, scale)
    z = (x - loc) / scale
    return _on_support(z >= 0, -z - snp.log(scale), z)


def _expon_logsf(x, loc=0, scale=1):
    z, scale = _z(x, loc, scale)
    return _nan_unless(scale > 0, snp.where(z < 0, 0.0, -z))


def _expon_logcdf(x, loc=0, scale=1):
    z, scale = _z(x, loc, scale)
    return _nan_unless(scale > 0, snp.where(z < 0, -np.inf, _log1mexp(z)))


def _log1mexp(z):
    """log(1 - e^-z) for z >= 0: log(-expm1(-z)) below log 2, log1p(-e^-z) above (Maechler's split)."""
    return snp.where(z < np.log(2), snp.log(-snp.expm1(-z)), snp.log1p(-snp.exp(-z)))


def _expon_cdf(x, loc=0, scale=1):
    z, scale = _z(x, loc, scale)
    return _nan_unless(scale > 0, snp.where(z < 0, 0.0, -snp.expm1(-z)))


def _expon_ppf(q, loc=0, scale=1):
    q, loc, scale = _f(q, loc, scale)
    return _nan_unless((q >= 0) & (q <= 1) & (scale > 0), loc - scale * snp.log1p(-q))


expon = _ns("expon", logpdf=_expon_logpdf, pdf=lambda x, loc=0, scale=1: snp.exp(_expon_logpdf(x, loc, scale)),
            cdf=_expon_cdf, logcdf=_expon_logcdf, sf=lambda x, loc=0, scale=1: snp.exp(_expon_logsf(x, loc, scale)),
            logsf=_expon_logsf, ppf=_expon_ppf)


def _laplace_logpdf(x, loc=0, scale=1):
    x, loc, scale = _f(x, loc, scale)
    return -snp.abs(x - loc) / scale - snp.log(2 * scale)


def _laplace_cdf(x, loc=0, scale=1):
    z, scale = _z(x, loc, scale)
    return _nan_unless(scale > 0, snp.where(z < 0, 0.5 * snp.exp(z), 1 - 0.5 * snp.exp(-z)))


laplace = _ns("laplace", logpdf=_laplace_logpdf, pdf=lambda x, loc=0, scale=1: snp.exp(_laplace_logpdf(x, loc, scale)),
              cdf=_laplace_cdf)


def _logistic_logpdf(x, loc=0, scale=1):
    x, loc, scale = _f(x, loc, scale)
    z = (x - loc) / scale
    return -z - 2 * snp.logaddexp(0.0, -z) - snp.log(scale)


logistic = _ns("logistic", logpdf=_logistic_logpdf,
               pdf=lambda x, loc=0, scale=1: snp.exp(_logistic_logpdf(x, loc, scale)),
               cdf=lambda x, loc=0, scale=1: sp.expit((snp.asarray(x) - loc) / scale),
               sf=lambda x, loc=0, scale=1: sp.expit(-(snp.asarray(x) - loc) / scale),
               ppf=lambda x, loc=0, scale=1: loc + scale * sp.logit(x),
               isf=lambda x, loc=0, scale=1: loc - scale * sp.logit(x))


def _cauchy_logpdf(x, loc=0, scale=1):
    x, loc, scale = _f(x, loc, scale)
    z = (x - loc) / scale
    return -math.log(math.pi) - snp.log(scale) - snp.log1p(z * z)


def _cauchy_cdf(x, loc=0, scale=1):
    """1/2 + atan(z)/pi, as atan(-1/z)/pi below z = -1 (the lower tail keeps its digits)."""
    z, scale = _z(x, loc, scale)
    zs = snp.where(z < -1, z, -1.0)
    return _nan_unless(scale > 0, snp.where(z < -1, snp.arctan(-1 / zs) / np.pi, 0.5 + snp.arctan(z) / np.pi))


def _cauchy_ppf(q, loc=0, scale=1, sign=1):
    """loc + scale tan(pi (q - 1/2)), as -1/tan(pi q) below 1/2 and 1/tan(pi (1 - q)) above (1 - q is exact there);
    `sign` -1: isf, the same mirrored (not ppf(1 - q), which rounds a small q)."""
    q, loc, scale = _f(q, loc, scale)
    scale = sign * scale
    lo = q < 0.5
    t = snp.where(lo, -1 / snp.tan(np.pi * q), 1 / snp.tan(np.pi * (1 - q)))
    t = snp.where(q == 0.5, 0.0, snp.where(q == 0, -np.inf, snp.where(q == 1, np.inf, t)))
    return _nan_unless((q >= 0) & (q <= 1) & (sign * scale > 0), loc + scale * t)


cauchy = _ns("cauchy", logpdf=_cauchy_logpdf, pdf=lambda x, loc=0, scale=1: snp.exp(_cauchy_logpdf(x, loc, scale)),
             cdf=_cauchy_cdf, sf=lambda x, loc=0, scale=1: _cauchy_cdf(-snp.asarray(x), -snp.asarray(loc), scale),
             logcdf=lambda x, loc=0, scale=1: _log_tail(_cauchy_cdf(x, loc, scale),
                                                        _cauchy_cdf(-snp.asarray(x), -snp.asarray(loc), scale)),
             logsf=lambda x, loc=0, scale=1: _log_tail(_cauchy_cdf(-snp.asarray(x), -snp.asarray(loc), scale),
                                                       _cauchy_cdf(x, loc, scale)),
             ppf=_cauchy_ppf, isf=lambda q, loc=0, scale=1: _cauchy_ppf(q, loc, scale, -1))


def _t_logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = _f(x, df, loc, scale)
    z = (x - loc) / scale
    return (sp.gammaln((df + 1) / 2) - sp.gammaln(df / 2) - 0.5 * snp.log(df * np.pi) - snp.log(scale)
            - (df + 1) / 2 * snp.log1p(z * z / df))


t = _ns("t", logpdf=_t_logpdf, pdf=lambda x, df, loc=0, scale=1: snp.exp(_t_logpdf(x, df, loc, scale)))


def _gamma_logpdf(x, a, loc=0, scale=1):
    x, a, loc, scale = _f(x, a, loc, scale)
    z = (x - loc) / scale
    return _on_support(z >= 0, sp.xlogy(a - 1, z) - z - sp.gammaln(a) - snp.log(scale), z, a)


def _gamma_cdf(x, a, loc=0, scale=1, upper=False):
    x, a, loc, scale = _f(x, a, loc, scale)
    z = snp.maximum((x - loc) / scale, 0.0)
    return _nan_unless(scale > 0, (sp.gammaincc if upper else sp.gammainc)(a, z))


def _gamma_logcdf(x, a, loc=0, scale=1, upper=False):
    p, q = _gamma_cdf(x, a, loc, scale), _gamma_cdf(x, a, loc, scale, upper=True)
    return _log_tail(q, p) if upper else _log_tail(p, q)


gamma = _ns("gamma", logpdf=_gamma_logpdf, pdf=lambda x, a, loc=0, scale=1: snp.exp(_gamma_logpdf(x, a, loc, scale)),
            cdf=_gamma_cdf, logcdf=_gamma_logcdf, sf=lambda x, a, loc=0, scale=1: _gamma_cdf(x, a, loc, scale, True),
            logsf=lambda x, a, loc=0, scale=1: _gamma_logcdf(x, a, loc, scale, upper=True))


def _chi2_logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = _f(x, df, loc, scale)
    return _gamma_logpdf(x, df / 2, loc, 2 * scale)


chi2 = _ns("chi2", logpdf=_chi2_logpdf, pdf=lambda x, df, loc=0, scale=1: snp.exp(_chi2_logpdf(x, df, loc, scale)),
           cdf=lambda x, df, loc=0, scale=1: _gamma_cdf(x, snp.asarray(df) / 2, loc, 2 * snp.asarray(scale)),
           logcdf=lambda x, df, loc=0, scale=1: _gamma_logcdf(x, snp.asarray(df) / 2, loc, 2 * snp.asarray(scale)),
           sf=lambda x, df, loc=0, scale=1: _gamma_cdf(x, snp.asarray(df) / 2, loc, 2 * snp.asarray(scale), True),
           logsf=lambda x, df, loc=0, scale=1: _gamma_logcdf(x, snp.asarray(df) / 2, loc, 2 * snp.asarray(scale), True))


def _beta_logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = _f(x, a, b, loc, scale)
    z = (x - loc) / scale
    inside = (z >= 0) & (z <= 1)
    return _on_support(inside, sp.xlogy(a - 1, z) + sp.xlog1py(b - 1, -z) - sp.betaln(a, b) - snp.log(scale),
                       z, a, b)


def _beta_cdf(x, a, b, loc=0, scale=1, upper=False):
    """I_z(a, b); the upper tail as I_{1-z}(b, a) (its own small values, not 1 - I)."""
    x, a, b, loc, scale = _f(x, a, b, loc, scale)
    z = snp.clip((x - loc) / scale, 0.0, 1.0)
    return _nan_unless(scale > 0, sp.betainc(b, a, 1 - z) if upper else sp.betainc(a, b, z))


def _beta_tails(x, a, b, loc=0, scale=1):
    """(I_z(a, b), I_{1-z}(b, a)), each tail its own, as `_beta_cdf`'s two calls give them: stacked into one call of
    betainc, so that one loop steps both (two loops on swapped parameters, which no pass merges, were two loop
    bodies for IREE to compile: docs/log.md, 2026-12-01). The loop steps each element on its own, so its values are
    those of two calls."""
    x, a, b, loc, scale = _f(x, a, b, loc, scale)
    z = snp.clip((x - loc) / scale, 0.0, 1.0)
    z, a, b, scale = snp.broadcast_arrays(z, a, b, scale)
    v = sp.betainc(snp.stack([a, b]), snp.stack([b, a]), snp.stack([z, 1 - z]))
    return _nan_unless(scale > 0, v[0]), _nan_unless(scale > 0, v[1])


def _beta_logcdf(x, a, b, loc=0, scale=1, upper=False):
    p, q = _beta_tails(x, a, b, loc, scale)
    return _log_tail(q, p) if upper else _log_tail(p, q)


beta = _ns("beta", logpdf=_beta_logpdf, pdf=lambda x, a, b, loc=0, scale=1: snp.exp(_beta_logpdf(x, a, b, loc, scale)),
           cdf=_beta_cdf, sf=lambda x, a, b, loc=0, scale=1: _beta_cdf(x, a, b, loc, scale, upper=True),
           logcdf=_beta_logcdf, logsf=lambda x, a, b, loc=0, scale=1: _beta_logcdf(x, a, b, loc, scale, upper=True))


def _poisson_logpmf(k, mu, loc=0):
    k, mu, loc = _f(k, mu, loc)
    x = k - loc
    ok = (x >= 0) & (x == snp.floor(x))
    return _on_support(ok, sp.xlogy(x, mu) - mu - sp.gammaln(x + 1), x, mu)


def _poisson_cdf(k, mu, loc=0):
    """P(K <= k) = Q(floor(k) + 1, mu)."""
    k, mu, loc = _f(k, mu, loc)
    x = snp.floor(k - loc)
    return snp.where(x < 0, snp.where(snp.isnan(mu), np.nan, 0.0), sp.gammaincc(snp.maximum(x, 0) + 1, mu))


poisson = _ns("poisson", logpmf=_poisson_logpmf, pmf=lambda k, mu, loc=0: snp.exp(_poisson_logpmf(k, mu, loc)),
              cdf=_poisson_cdf)


def _bernoulli_logpmf(k, p, loc=0):
    k, p, loc = _f(k, p, loc)
    x = k - loc
    return _on_support((x == 0) | (x == 1), sp.xlogy(x, p) + sp.xlog1py(1 - x, -p), x, p)


def _bernoulli_cdf(k, p):
    k, p = _f(k, p)
    return _nan_unless((p >= 0) & (p <= 1) & ~snp.isnan(k), snp.where(k < 0, 0.0, snp.where(k < 1, 1 - p, 1.0)))


def _bernoulli_ppf(q, p):
    q, p = _f(q, p)
    return _nan_unless((p >= 0) & (p <= 1) & (q >= 0) & (q <= 1), snp.where(q <= 1 - p, 0.0, 1.0).astype(q.dtype))


bernoulli = _ns("bernoulli", logpmf=_bernoulli_logpmf, pmf=lambda k, p, loc=0: snp.exp(_bernoulli_logpmf(k, p, loc)),
                cdf=_bernoulli_cdf, ppf=_bernoulli_ppf)


# ---- more discrete distributions
def _count(k, loc, lo=0):
    """k - loc where it is an integer >= lo, and that test."""
    x = k - loc
    return x, (x >= lo) & (x == snp.floor(x))


def _geom_logpmf(k, p, loc=0):
    k, p, loc = _f(k, p, loc)
    x, ok = _count(k, loc, 1)
    return _nan_unless((p > 0) & (p <= 1), _on_support(ok, sp.xlog1py(x - 1, -p) + snp.log(p), x, p))


def _binom_logpmf(k, n, p, loc=0):
    k, n, p, loc = _f(k, n, p, loc)
    x, ok = _count(k, loc)
    ok = ok & (x <= n)
    xs = snp.where(ok, x, 0.0)
    comb = sp.gammaln(n + 1) - sp.gammaln(xs + 1) - sp.gammaln(n - xs + 1)
    return _nan_unless((p >= 0) & (p <= 1) & (n >= 0),
                       _on_support(ok, comb + sp.xlogy(xs, p) + sp.xlog1py(n - xs, -p), x, n, p))


def _nbinom_logpmf(k, n, p, loc=0):
    k, n, p, loc = _f(k, n, p, loc)
    x, ok = _count(k, loc)
    xs = snp.where(ok, x, 0.0)
    comb = sp.gammaln(n + xs) - sp.gammaln(xs + 1) - sp.gammaln(n)
    return _nan_unless((p > 0) & (p <= 1) & (n > 0),
                       _on_support(ok, comb + sp.xlogy(n, p) + sp.xlog1py(xs, -p), x, n, p))


def _betabinom_logpmf(k, n, a, b, loc=0):
    k, n, a, b, loc = _f(k, n, a, b, loc)
    x, ok = _count(k, loc)
    ok = ok & (x <= n)
    xs = snp.where(ok, x, 0.0)
    comb = sp.gammaln(n + 1) - sp.gammaln(xs + 1) - sp.gammaln(n - xs + 1)
    return _nan_unless((a > 0) & (b > 0) & (n >= 0),
                       _on_support(ok, comb + sp.betaln(xs + a, n - xs + b) - sp.betaln(a, b), x, n, a, b))


geom = _ns("geom", logpmf=_geom_logpmf, pmf=lambda k, p, loc=0: snp.exp(_geom_logpmf(k, p, loc)))
binom = _ns("binom", logpmf=_binom_logpmf, pmf=lambda k, n, p, loc=0: snp.exp(_binom_logpmf(k, n, p, loc)))
nbinom = _ns("nbinom", logpmf=_nbinom_logpmf, pmf=lambda k, n, p, loc=0: snp.exp(_nbinom_logpmf(k, n, p, loc)))
betabinom = _ns("betabinom", logpmf=_betabinom_logpmf,
                pmf=lambda k, n, a, b, loc=0: snp.exp(_betabinom_logpmf(k, n, a, b, loc)))


# ---- more continuous distributions
def _pareto_logsf(x, b, loc=0, scale=1):
    x, b, loc, scale = _f(x, b, loc, scale)
    z = (x - loc) / scale
    return _nan_unless((b > 0) & (scale > 0), snp.where(z < 1, 0.0, -b * snp.log(snp.maximum(z, 1.0))))


def _pareto_logpdf(x, b, loc=0, scale=1):
    x, b, loc, scale = _f(x, b, loc, scale)
    z = (x - loc) / scale
    val = snp.log(b) - snp.log(scale) - (b + 1) * snp.log(snp.maximum(z, 1.0))
    return _nan_unless((b > 0) & (scale > 0), _on_support(z >= 1, val, z, b))


def _pareto_ppf(q, b, loc=0, scale=1):
    q, b, loc, scale = _f(q, b, loc, scale)
    return _nan_unless((q >= 0) & (q <= 1) & (b > 0) & (scale > 0), loc + scale * snp.exp(-snp.log1p(-q) / b))


pareto = _ns("pareto", logpdf=_pareto_logpdf, pdf=lambda x, b, loc=0, scale=1: snp.exp(_pareto_logpdf(x, b, loc, scale)),
             logsf=_pareto_logsf, sf=lambda x, b, loc=0, scale=1: snp.exp(_pareto_logsf(x, b, loc, scale)),
             cdf=lambda x, b, loc=0, scale=1: -snp.expm1(_pareto_logsf(x, b, loc, scale)),
             logcdf=lambda x, b, loc=0, scale=1: _log1mexp(-_pareto_logsf(x, b, loc, scale)), ppf=_pareto_ppf)


def _gumbel(sign):
    """gumbel_r (sign 1) and gumbel_l (sign -1): log F = -e^-z of the right-skewed one at z = sign (x - loc)/scale;
    the other tail from log1mexp."""
    def logpdf(x, loc=0, scale=1):
        z, scale = _z(x, loc, scale)
        z = sign * z
        return _nan_unless(scale > 0, -(z + snp.exp(-z)) - snp.log(scale))

    def log_lower(x, loc, scale):  # log P(Z <= z) of the right-skewed form
        z, scale = _z(x, loc, scale)
        return _nan_unless(scale > 0, -snp.exp(-sign * z))

    def logcdf(x, loc=0, scale=1):
        v = log_lower(x, loc, scale)
        return v if sign > 0 else _log1mexp(-v)

    def logsf(x, loc=0, scale=1):
        v = log_lower(x, loc, scale)
        return _log1mexp(-v) if sign > 0 else v

    def ppf(p, loc=0, scale=1):
        p, loc, scale = _f(p, loc, scale)
        t = -snp.log(-snp.log(p)) if sign > 0 else snp.log(-snp.log1p(-p))
        return _nan_unless((p >= 0) & (p <= 1) & (scale > 0), loc + scale * t)
    return dict(logpdf=logpdf, pdf=lambda x, loc=0, scale=1: snp.exp(logpdf(x, loc, scale)), logcdf=logcdf,
                cdf=lambda x, loc=0, scale=1: snp.exp(logcdf(x, loc, scale)), logsf=logsf,
                sf=lambda x, loc=0, scale=1: snp.exp(logsf(x, loc, scale)), ppf=ppf)


gumbel_r = _ns("gumbel_r", **_gumbel(1))
gumbel_l = _ns("gumbel_l", **_gumbel(-1))


def _gennorm_logpdf(x, beta):
    x, beta = _f(x, beta)
    return _nan_unless(beta > 0, snp.log(0.5 * beta) - sp.gammaln(1 / beta) - snp.abs(x) ** beta)


def _gennorm_cdf(x, beta):
    """1/2 +- Q(1/beta, |x|^beta)/2 from the nearer tail (so that the lower one keeps its digits)."""
    x, beta = _f(x, beta)
    q = 0.5 * sp.gammaincc(1 / beta, snp.abs(x) ** beta)
    return _nan_unless(beta > 0, snp.where(x < 0, q, 1 - q))


gennorm = _ns("gennorm", logpdf=_gennorm_logpdf, pdf=lambda x, beta: snp.exp(_gennorm_logpdf(x, beta)), cdf=_gennorm_cdf)


def _vonmises_logpdf(x, kappa):
    x, kappa = _f(x, kappa)
    return _nan_unless(kappa > 0, kappa * (snp.cos(x) - 1) - snp.log(2 * np.pi * sp.i0e(kappa)))


vonmises = _ns("vonmises", logpdf=_vonmises_logpdf, pdf=lambda x, kappa: snp.exp(_vonmises_logpdf(x, kappa)))


def _dirichlet_logpdf(x, alpha):
    """x along axis 0 (K or K - 1 entries, the last then 1 - their sum), as JAX's."""
    x, alpha = _f(x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
    if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError("`x` must have either the same number of entries as `alpha` or one entry fewer; "
                         f"got x.shape={x.shape}, alpha.shape={alpha.shape}")
    if x.shape[0] != alpha.shape[0]:
        x = snp.concatenate([x, 1 - x.sum(0, keepdims=True)], axis=0)
    al = alpha.reshape(alpha.shape + (1,) * (x.ndim - 1))
    norm_ = snp.sum(sp.gammaln(alpha)) - sp.gammaln(snp.sum(alpha))
    simplex = snp.all(x >= 0, axis=0) & (snp.abs(snp.sum(x, axis=0) - 1) < 1e-6)  # (JAX's tolerance)
    return snp.where(simplex, snp.sum(sp.xlogy(al - 1, x), axis=0) - norm_, -np.inf)


dirichlet = _ns("dirichlet", logpdf=_dirichlet_logpdf, pdf=lambda x, alpha: snp.exp(_dirichlet_logpdf(x, alpha)))


def _multinomial_logpmf(x, n, p):
    """Counts x and probabilities p along the last axis; -inf unless the counts are integers summing to n."""
    x, n, p = _f(x, n, p)
    ok = snp.all((x >= 0) & (x == snp.floor(x)), axis=-1) & (snp.sum(x, axis=-1) == n)
    val = sp.gammaln(n + 1) + snp.sum(sp.xlogy(x, p) - sp.gammaln(x + 1), axis=-1)
    return snp.where(ok, val, -np.inf)


multinomial = _ns("multinomial", logpmf=_multinomial_logpmf, pmf=lambda x, n, p: snp.exp(_multinomial_logpmf(x, n, p)))


def sem(a, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *, keepdims: bool = False):
    """The standard error of the mean: std(a, ddof) / sqrt(n) along `axis` (None: all of `a`)."""
    if nan_policy not in ("propagate", "omit"):
        raise ValueError(f"nan_policy must be 'propagate' or 'omit'; got {nan_policy!r}")
    (a,) = _f(a)
    if nan_policy == "omit":
        n = snp.sum(~snp.isnan(a), axis=axis, keepdims=keepdims)
        return snp.nanstd(a, axis=axis, ddof=ddof, keepdims=keepdims) / snp.sqrt(n)
    n = a.size if axis is None else a.shape[axis]
    return snp.std(a, axis=axis, ddof=ddof, keepdims=keepdims) / np.sqrt(n)


from .._missing import missing as _missing, table as _table  # noqa: E402

__getattr__ = _missing(__name__, _table(
    "gaussian_kde mode rankdata truncnorm wrapcauchy",
    "not implemented yet (stagec.scipy.stats has norm, multivariate_normal, uniform, expon, laplace, logistic, "
    "cauchy, t, gamma, beta, chi2, pareto, gumbel_l, gumbel_r, gennorm, vonmises, dirichlet, poisson, bernoulli, "
    "geom, binom, nbinom, betabinom, multinomial, sem)"))
