"""The Hurwitz zeta function and polygamma, as JAX computes them (Euler-Maclaurin summation, Cephes' form)."""
from __future__ import annotations

import numpy as np

from .. import numpy as snp
from ..core import TracerBase
from ..numpy._base import _to_float
from . import special as _sp  # (partly imported: this module is imported at its end, and reads it at call time)

__all__ = ["zeta", "polygamma"]

# 12 (2k)! / B_2k, k = 1..16: the Euler-Maclaurin tail's denominators
_BERNOULLI = [12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1307674368000 / 691, 74724249600.0,
              -10670622842880000 / 3617, 5109094217170944000 / 43867, -802857662698291200000 / 174611,
              14101100039391805440000 / 77683, -1693824136731743669452800000 / 236364091,
              186134520519971831808000000 / 657931, -37893265687455865519472640000000 / 3392780147,
              759790291646040068357842010112000000 / 1723168255201,
              -134196726836183700385281186201600000000 / 7709321041217]


def zeta(x, q=None):
    """Hurwitz zeta sum_k (k + q)^-x (x > 1, q > 0): N terms summed, the rest by Euler-Maclaurin with M Bernoulli
    terms (N = M = 8 in float32, 16 in float64; JAX's). NaN below x = 1, as SciPy's and JAX's (the sum gave the
    analytic continuation there). `q` is required, as in JAX."""
    if q is None:
        raise NotImplementedError("zeta: the Riemann zeta function (q=None) is not implemented; pass q=1")
    x, q = (snp.asarray(v) for v in _to_float("zeta", x, q))
    dt = x.dtype
    if dt.kind == "c":
        raise ValueError("zeta does not support complex-valued inputs.")
    if dt not in (np.float32, np.float64):  # (float16, bfloat16: in float32, rounded once)
        return zeta(x.astype(np.float32), q.astype(np.float32)).astype(dt)
    n = 8 if dt == np.float32 else 16
    xe, qe = x[..., None], q[..., None]
    s = snp.sum((qe + np.arange(n, dtype=dt)) ** -xe, axis=-1)
    a = q + n
    integral = a ** (1 - x) / (x - 1)
    t0 = a ** -x
    t1 = snp.cumprod((xe + np.arange(2 * n, dtype=dt)) / a[..., None], axis=-1)[..., ::2]
    t1 = snp.minimum(t1, np.finfo(dt).max) / np.array(_BERNOULLI[:n], dt)
    return snp.where(x < 1, np.nan, s + integral + t0 * (0.5 + snp.sum(t1, axis=-1))).astype(dt)


def polygamma(n, x):
    """The n-th derivative of digamma: digamma(x) for n = 0, else (-1)^(n+1) n! zeta(n + 1, x) (JAX's, n! as gamma);
    NaN for n < 0 (SciPy's and JAX's; the formula gave inf). A concrete n must hold integers."""
    if not isinstance(n, TracerBase) and not np.all(np.mod(np.asarray(n), 1) == 0):
        raise ValueError(f"polygamma: n must be an integer, got {n!r}")
    n_, x = (snp.asarray(v) for v in _to_float("polygamma", n, x))
    sign = snp.where(snp.remainder(n_, 2) == 0, -1.0, 1.0).astype(x.dtype)
    rest = sign * _sp.gamma(n_ + 1) * zeta(n_ + 1, x)  # (n! exact; JAX's exp(gammaln(n + 1)) is not)
    return snp.where(n_ < 0, np.nan, snp.where(n_ == 0, _sp.digamma(x), rest)).astype(x.dtype)
