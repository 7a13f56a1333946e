"""`stagec.scipy.special` (as `jax.scipy.special`): log-sum-exp, error and gamma functions, logits."""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as snp
from ..nn import log_softmax, logsumexp, softmax  # noqa: F401
from ..numpy._base import _to_float

__all__ = ["betaln", "digamma", "entr", "erf", "erfc", "erfinv", "expit", "gamma", "gammaln", "gammasgn", "log_ndtr",
           "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "softmax", "xlog1py", "xlogy"]


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
    (x,) = _to_float("gammasgn", x)
    fl = snp.floor(x)
    neg = (x < 0) & (snp.remainder(fl, 2) != 0)
    pole = (x <= 0) & (x == fl)
    return snp.where(pole, np.nan, snp.where(neg, -1.0, 1.0)).astype(x.dtype)


def gamma(x):
    return gammasgn(x) * snp.exp(gammaln(x))


def betaln(a, b):
    return gammaln(a) + gammaln(b) - gammaln(snp.add(a, b))


def multigammaln(a, d: int):
    a = snp.asarray(a)
    (a,) = _to_float("multigammaln", a)
    js = snp.arange(d, dtype=a.dtype)
    return (d * (d - 1) / 4 * np.log(np.pi) + snp.sum(gammaln(snp.expand_dims(a, -1) - js / 2), axis=-1))


def expit(x):
    from ..nn import sigmoid
    return sigmoid(x)


def logit(x):
    (x,) = _to_float("logit", x)
    return snp.log(x / (1 - x))


def xlogy(x, y):
    """x * log(y), 0 where x == 0."""
    x, y = _to_float("xlogy", x, y)
    return snp.where(x == 0, 0.0, x * snp.log(y)).astype(snp.result_type(x, y))


def xlog1py(x, y):
    x, y = _to_float("xlog1py", x, y)
    return snp.where(x == 0, 0.0, x * snp.log1p(y)).astype(snp.result_type(x, y))


def entr(x):
    """-x log x for x > 0, 0 at 0, -inf below."""
    (x,) = _to_float("entr", x)
    return snp.where(x > 0, -x * snp.log(snp.where(x > 0, x, 1)), snp.where(x == 0, 0.0, -np.inf)).astype(x.dtype)


def ndtr(x):
    """The standard normal CDF."""
    (x,) = _to_float("ndtr", x)
    return 0.5 * erfc(-x / np.sqrt(2))


def log_ndtr(x):
    (x,) = _to_float("log_ndtr", x)
    return snp.where(x > 0, snp.log1p(-ndtr(-x)), snp.log(ndtr(x)))  # (log(1 - tiny) keeps its digits)


def ndtri(p):
    """The inverse of `ndtr`."""
    (p,) = _to_float("ndtri", p)
    return np.sqrt(2) * erfinv(2 * p - 1)


from .._missing import missing as _missing, table as _table  # noqa: E402

__getattr__ = _missing(__name__, _table(
    "bernoulli bessel_jn beta betainc boxcox boxcox1p comb dawsn erfcx exp1 expi expn factorial fresnel gammainc "
    "gammaincc hyp1f1 hyp2f1 i0 i0e i1 i1e kl_div loggamma owens_t poch polygamma rel_entr sici spence sph_harm_y "
    "wofz zeta", "not implemented yet (stagec.scipy.special has logsumexp, erf/erfc/erfinv, gammaln/digamma/gamma, "
                 "betaln, multigammaln, expit/logit, xlogy/xlog1py, entr, ndtr/ndtri/log_ndtr, softmax)"))
