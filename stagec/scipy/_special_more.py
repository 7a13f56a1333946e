"""More of `jax.scipy.special`, as JAX computes them: `kl_div`, `rel_entr`, `factorial`, `comb`, `beta`, `poch`."""
from __future__ import annotations

import numpy as np

from ..ad import custom_jvp
from .. import numpy as snp
from ..numpy._base import _to_float
from . import special as _sp  # (partly imported: this module is imported at its end, and reads it at call time)

__all__ = ["rel_entr", "kl_div", "factorial", "comb", "beta", "poch"]


def _floats(name: str, *xs):
    return [snp.asarray(x) for x in _to_float(name, *xs)]


def _real(name: str, *xs):
    xs = _floats(name, *xs)
    if xs[0].dtype.kind == "c":
        raise ValueError(f"{name} does not support complex-valued inputs.")
    return xs


def rel_entr(p, q):
    """p log(p / q) for p, q > 0, 0 at p = 0 <= q, inf elsewhere. The log as log1p((p - q) / q) for p / q in
    [1/2, 2] (exact p - q: within 3 ulps where JAX's p log p - p log q cancels to 21), log(p / q) beyond, and
    log p - log q where p / q over- or underflows."""
    p, q = _real("rel_entr", p, q)
    pos = (p > 0) & (q > 0)
    safe_p, safe_q = snp.where(pos, p, 1), snp.where(pos, q, 1)
    r = safe_p / safe_q
    near = (r >= 0.5) & (r <= 2)
    wide = snp.isfinite(r) & (r >= float(np.finfo(r.dtype).tiny))
    log_r = snp.where(near, snp.log1p((safe_p - safe_q) / safe_q),
                      snp.where(wide, snp.log(snp.where(wide, r, 1)), snp.log(safe_p) - snp.log(safe_q)))
    val = safe_p * log_r
    return snp.where(pos, val, snp.where((p == 0) & (q >= 0), 0.0, np.inf)).astype(p.dtype)


def kl_div(p, q):
    """rel_entr(p, q) - p + q."""
    p, q = _real("kl_div", p, q)
    return rel_entr(p, q) - p + q


def factorial(n, exact: bool = False):
    """Gamma(n + 1) (0 for negative n); `exact=True` is not supported (as in JAX)."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    (n,) = _floats("factorial", n)
    return snp.where(n < 0, 0, snp.exp(_sp.gammaln(n + 1))).astype(n.dtype)


def comb(N, k, *, repetition: bool = False):
    """The binomial coefficient N choose k (0 outside 0 <= k <= N), from gammaln as JAX's."""
    N, k = _floats("comb", N, k)
    if repetition:
        return snp.where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k)).astype(N.dtype)
    gl = _sp.gammaln
    cond = (k <= N) & (N >= 0) & (k >= 0)
    sn, sk = snp.where(cond, N, 0.0), snp.where(cond, k, 0.0)
    return snp.where(cond, snp.exp(gl(sn + 1) - gl(sk + 1) - gl(sn + 1 - sk)), 0.0).astype(N.dtype)


def beta(a, b):
    """B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b): its sign times exp(betaln(a, b))."""
    a, b = _real("beta", a, b)
    return (_sp.gammasgn(a) * _sp.gammasgn(b) * _sp.gammasgn(a + b) * snp.exp(_sp.betaln(a, b))).astype(a.dtype)


@custom_jvp
def poch(z, m):
    """The Pochhammer symbol Gamma(z + m) / Gamma(z) (1 where m = 0)."""
    z, m = _real("poch", z, m)
    g = _sp.gamma
    return snp.where(m == 0.0, snp.asarray(1, z.dtype), g(z + m) / g(z)).astype(z.dtype)


def _poch_dz(g, ans, z, m):
    d = _sp.digamma
    return (g * (d(z + m) - d(z)) * ans).astype(ans.dtype)


poch.defjvps(_poch_dz, lambda g, ans, z, m: (g * _sp.digamma(z + m) * ans).astype(ans.dtype))
