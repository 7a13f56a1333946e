"""`stagec.scipy.stats` (as `jax.scipy.stats`): densities and distribution functions of common distributions,
each a namespace (`stats.norm.logpdf(x, loc, scale)`)."""
from __future__ import annotations

import functools
import sys
import types

import numpy as np

from .. import numpy as snp
from . import special as sp

_HALF_LOG_2PI = 0.5 * np.log(2 * np.pi)


def _ns(name: str, **fns) -> types.ModuleType:
    """A distribution's namespace, a module importable by its name (`import stagec.scipy.stats.norm as norm`, as
    JAX's examples/advi.py imports it)."""
    mod = types.ModuleType(f"{__name__}.{name}", f"The {name} distribution (as `jax.scipy.stats.{name}`).")
    mod.__dict__.update(fns)
    sys.modules[mod.__name__] = mod
    return mod


def _f(*xs):
    """The arguments as arrays of their common floating dtype."""
    arrs = [snp.asarray(x) for x in xs]
    dt = snp.result_type(*xs, 1.0)
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


def _uniform_logpdf(x, loc=0, scale=1):
    x, loc, scale = _f(x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return _on_support(inside, -snp.log(scale), x, loc, scale)


uniform = _ns("uniform", logpdf=_uniform_logpdf, pdf=lambda x, loc=0, scale=1: snp.exp(_uniform_logpdf(x, loc, scale)),
              cdf=lambda x, loc=0, scale=1: snp.clip((snp.asarray(x) - loc) / scale, 0, 1))


def _expon_logpdf(x, loc=0, scale=1):
    x, loc, scale = _f(x, loc, scale)
    z = (x - loc) / scale
    return _on_support(z >= 0, -z - snp.log(scale), z)


expon = _ns("expon", logpdf=_expon_logpdf, pdf=lambda x, loc=0, scale=1: snp.exp(_expon_logpdf(x, loc, scale)),
            cdf=lambda x, loc=0, scale=1: snp.where(snp.asarray(x) < loc, 0.0,
                                                    -snp.expm1(-(snp.asarray(x) - loc) / scale)))


def _laplace_logpdf(x, loc=0, scale=1):
    x, loc, scale = _f(x, loc, scale)
    return -snp.abs(x - loc) / scale - snp.log(2 * scale)


laplace = _ns("laplace", logpdf=_laplace_logpdf, pdf=lambda x, loc=0, scale=1: snp.exp(_laplace_logpdf(x, loc, scale)))


def _logistic_logpdf(x, loc=0, scale=1):
    x, loc, scale = _f(x, loc, scale)
    z = (x - loc) / scale
    return -z - 2 * snp.logaddexp(0.0, -z) - snp.log(scale)


logistic = _ns("logistic", logpdf=_logistic_logpdf,
               pdf=lambda x, loc=0, scale=1: snp.exp(_logistic_logpdf(x, loc, scale)),
               cdf=lambda x, loc=0, scale=1: sp.expit((snp.asarray(x) - loc) / scale))


def _cauchy_logpdf(x, loc=0, scale=1):
    x, loc, scale = _f(x, loc, scale)
    z = (x - loc) / scale
    return -np.log(np.pi) - snp.log(scale) - snp.log1p(z * z)


cauchy = _ns("cauchy", logpdf=_cauchy_logpdf, pdf=lambda x, loc=0, scale=1: snp.exp(_cauchy_logpdf(x, loc, scale)))


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


gamma = _ns("gamma", logpdf=_gamma_logpdf, pdf=lambda x, a, loc=0, scale=1: snp.exp(_gamma_logpdf(x, a, loc, scale)))


def _beta_logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = _f(x, a, b, loc, scale)
    z = (x - loc) / scale
    inside = (z >= 0) & (z <= 1)
    return _on_support(inside, sp.xlogy(a - 1, z) + sp.xlog1py(b - 1, -z) - sp.betaln(a, b) - snp.log(scale),
                       z, a, b)


beta = _ns("beta", logpdf=_beta_logpdf, pdf=lambda x, a, b, loc=0, scale=1: snp.exp(_beta_logpdf(x, a, b, loc, scale)))


def _poisson_logpmf(k, mu, loc=0):
    k, mu, loc = _f(k, mu, loc)
    x = k - loc
    ok = (x >= 0) & (x == snp.floor(x))
    return _on_support(ok, sp.xlogy(x, mu) - mu - sp.gammaln(x + 1), x, mu)


poisson = _ns("poisson", logpmf=_poisson_logpmf, pmf=lambda k, mu, loc=0: snp.exp(_poisson_logpmf(k, mu, loc)))


def _bernoulli_logpmf(k, p, loc=0):
    k, p, loc = _f(k, p, loc)
    x = k - loc
    return _on_support((x == 0) | (x == 1), sp.xlogy(x, p) + sp.xlog1py(1 - x, -p), x, p)


bernoulli = _ns("bernoulli", logpmf=_bernoulli_logpmf, pmf=lambda k, p, loc=0: snp.exp(_bernoulli_logpmf(k, p, loc)))


from .._missing import missing as _missing, table as _table  # noqa: E402

__getattr__ = _missing(__name__, _table(
    "betabinom binom chi2 dirichlet gaussian_kde gennorm geom gumbel_l gumbel_r mode multinomial nbinom pareto "
    "rankdata sem truncnorm vonmises wrapcauchy",
    "not implemented yet (stagec.scipy.stats has norm, multivariate_normal, uniform, expon, laplace, logistic, "
    "cauchy, t, gamma, beta, poisson, bernoulli)"))
