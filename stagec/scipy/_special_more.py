"""More of `jax.scipy.special`, as JAX computes them: `kl_div`, `rel_entr`, `factorial`, `comb`, `beta`, `poch`."""
from __future__ import annotations

import functools

import numpy as np

from ..ad import custom_jvp
from ..coefficients import ERFC32_P, ERFC32_Q, ERFC_P, ERFC_Q, ERFC_R, ERFC_S  # (erfc's rationals: erfc e^(x^2))
from .. import numpy as snp
from ..numpy._base import _staged, _to_float
from ..numpy._staged_step import composite_step as _composite_step
from . import special as _sp  # (partly imported: this module is imported at its end, and reads it at call time)

__all__ = ["rel_entr", "kl_div", "factorial", "comb", "beta", "poch", "erfcx"]


def _floats(name: str, *xs):
    return [snp.asarray(x) for x in _to_float(name, *xs)]


def _real(name: str, *xs):
    xs = _floats(name, *xs)
    if xs[0].dtype.kind == "c":
        raise ValueError(f"{name} does not support complex-valued inputs.")
    return xs


def _in_float32(fn):
    """`fn` computing float16 and bfloat16 in float32, rounded once at the end (their own roundings of the gammaln
    and log terms, amplified by exp or cancelled: poch(9984, 1) was 9792 in bfloat16, kl_div(1e4, 10) inf in float16)."""
    @functools.wraps(fn)
    def wrapped(*xs):
        xs = _real(fn.__name__, *xs)
        if xs[0].dtype in (np.float32, np.float64):
            return fn(*xs)
        return fn(*(x.astype(np.float32) for x in xs)).astype(xs[0].dtype)
    return wrapped


@_in_float32
def rel_entr(p, q):
    """p log(p / q) for p, q > 0, 0 at p = 0 <= q, inf elsewhere. The log as log1p((p - q) / q) for p / q in
    [1/2, 2] (exact p - q: within 3 ulps where JAX's p log p - p log q cancels to 21), log(p / q) beyond, and
    log p - log q where p / q over- or underflows."""
    p, q = _real("rel_entr", p, q)
    pos = (p > 0) & (q > 0)
    safe_p, safe_q = snp.where(pos, p, 1), snp.where(pos, q, 1)
    r = safe_p / safe_q
    near = (r >= 0.5) & (r <= 2)
    wide = snp.isfinite(r) & (r >= float(snp.finfo(r.dtype).tiny))
    log_r = snp.where(near, snp.log1p((safe_p - safe_q) / safe_q),
                      snp.where(wide, snp.log(snp.where(wide, r, 1)), snp.log(safe_p) - snp.log(safe_q)))
    val = safe_p * log_r
    out = snp.where(pos, val, snp.where((p == 0) & (q >= 0), 0.0, np.inf))
    return snp.where(snp.isnan(p) | snp.isnan(q), np.nan, out).astype(p.dtype)  # (a NaN was inf: SciPy's is NaN)


@_in_float32
def kl_div(p, q):
    """rel_entr(p, q) - p + q for p, q > 0, q at p = 0 <= q, inf elsewhere (SciPy's: inf - inf was NaN at (inf, 0))."""
    p, q = _real("kl_div", p, q)
    pos = (p > 0) & (q > 0)
    out = snp.where(pos, rel_entr(p, q) - p + q, snp.where((p == 0) & (q >= 0), q, np.inf))
    return snp.where(snp.isnan(p) | snp.isnan(q), np.nan, out).astype(p.dtype)


def factorial(n, exact: bool = False):
    """Gamma(n + 1) (0 for negative n); `exact=True` is not supported (as in JAX). `gamma` (JAX: exp(gammaln(n + 1)),
    whose eager and fused values differed: float64 factorial(10) was 3628800.0000000023 eagerly, exact jitted)."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    (n,) = _floats("factorial", n)
    return snp.where(n < 0, 0, _sp.gamma(n + 1)).astype(n.dtype)


def comb(N, k, *, repetition: bool = False):
    """The binomial coefficient N choose k (0 outside 0 <= k <= N), from gammaln as JAX's."""
    N, k = _floats("comb", N, k)
    if repetition:
        return snp.where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k)).astype(N.dtype)
    gl = _sp.gammaln
    cond = (k <= N) & (N >= 0) & (k >= 0)
    sn, sk = snp.where(cond, N, 0.0), snp.where(cond, k, 0.0)
    return snp.where(cond, snp.exp(gl(sn + 1) - gl(sk + 1) - gl(sn + 1 - sk)), 0.0).astype(N.dtype)


@_in_float32
def beta(a, b):
    """B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b): its sign times exp(betaln(a, b))."""
    a, b = _real("beta", a, b)
    lb = _sp.betaln(a, b)  # (-inf where Gamma(a + b) has a pole, whose gammasgn is NaN: beta(-1.5, 0.5) was NaN)
    out = _sp.gammasgn(a) * _sp.gammasgn(b) * _sp.gammasgn(a + b) * snp.exp(lb)
    return snp.where(lb == -np.inf, 0.0, out).astype(a.dtype)


@custom_jvp
def poch(z, m):
    """The Pochhammer symbol Gamma(z + m) / Gamma(z) (1 where m = 0). Where a Gamma overflows (z + m past 35.04 in
    float32, 171.6 in float64: poch(100, 1) was inf / inf = NaN), with lo, n = z, m for z, m > 0 and z + m, -m for
    m < 0 < z + m, log Gamma(lo + n) / Gamma(lo) = gammaln(n) - betaln(lo, n) by betaln's forms for max(lo, n) >= 8
    alone (cancellation-free; the whole betaln, each of its forms on every element, doubled the module's compile
    time); else the signs times exp(gammaln(z + m) - gammaln(z)). Eager calls run it as one module."""
    z, m = _real("poch", z, m)
    if z.dtype not in (np.float32, np.float64):  # (float16, bfloat16: in float32, as `_in_float32`)
        return _poch(z.astype(np.float32), m.astype(np.float32)).astype(z.dtype)
    return _poch(z, m)


@_staged()
def _poch(z, m):
    g = _sp.gamma
    gz, gzm = g(z), g(z + m)
    fine = snp.isfinite(gz) & snp.isfinite(gzm) & (gz != 0)
    up, down = (z > 0) & (m > 0), (z + m > 0) & (m < 0)
    lo, n = snp.where(up, z, snp.where(down, z + m, 1)), snp.where(up, m, snp.where(down, -m, 1))
    a, b = snp.minimum(lo, n), snp.maximum(snp.maximum(lo, n), 8)
    ours = (up | down) & (snp.maximum(lo, n) >= 8)  # (Gamma overflows past 35: one of them is past 8 there)
    gn = _sp.gammaln(snp.where(ours, n, z + m))
    # betaln(a, b)'s forms for b >= 8 (`mathlib` computes float32 lgamma(min(a, 8)) + algdiv in float64)
    lb = snp.where(a < 8, _sp.gammaln(snp.minimum(a, 8)) + _sp._algdiv(a, b), _sp._betaln_big(a, b))
    lg = snp.where(ours, gn - lb, gn - _sp.gammaln(z))
    lg = snp.where(down & ours, -lg, lg)
    sign = snp.where(ours, 1, _sp.gammasgn(z + m) * _sp.gammasgn(z))
    out = snp.where(fine, gzm / snp.where(fine, gz, 1), sign * snp.exp(lg))
    return snp.where(m == 0.0, snp.asarray(1, z.dtype), out).astype(z.dtype)


_poch = _composite_step(_poch)  # (in an eager composite: one step running its module, the same bits)


def _poch_dz(g, ans, z, m):
    d = _sp.digamma
    return (g * (d(z + m) - d(z)) * ans).astype(ans.dtype)


poch.defjvps(_poch_dz, lambda g, ans, z, m: (g * _sp.digamma(z + m) * ans).astype(ans.dtype))


def _exp_square(x):
    """exp(x^2) without x^2's rounding error (which exp multiplies by x^2: 88 float32 ulps at x = 9.4): x split
    into a high half whose square is exact and the rest (Veltkamp), exp(h^2) exp(2 h l + l^2)."""
    split = float(2 ** ((np.finfo(x.dtype).nmant + 2) // 2) + 1)
    c = x * split
    hi = c - (c - x)
    lo = x - hi
    return snp.exp(hi * hi) * snp.exp(lo * (2 * hi + lo))


# erfcx(x) ~ P(1 / x^2) / (sqrt(pi) x) for large x, JAX's coefficients of P, highest degree first
_ERFCX_ASYMPTOTIC = (7918.06640625, -1055.7421875, 162.421875, -29.53125, 6.5625, -1.875, 0.75, -0.5, 1.0)


def _horner(x, coeffs):
    out = snp.zeros_like(x) + coeffs[-1]
    for c in coeffs[-2::-1]:
        out = out * x + c
    return out


@custom_jvp
def erfcx(x):
    """exp(x^2) erfc(x): for x >= 0 the rational that stagec's erfc multiplies by e^(-x^2) (float32 up to 10.1,
    float64 from 1 to 20), JAX's asymptotic series past them, exp(x^2) erfc(x) below (exp(x^2) without x^2's
    rounding error). JAX's is exp(x^2) erfc(x) up to sqrt(log(max)): 50 float32 ulps at -9, 5 in float64, and 0
    where erfc is subnormal (float32 past 9.2, float64 past 26.5)."""
    (x,) = _real("erfcx", x)
    dt = x.dtype
    if dt in (np.float16, np.dtype("bfloat16")):
        return erfcx(x.astype(np.float32)).astype(dt)
    f64 = dt == np.float64
    cut = 20.0 if f64 else 10.1
    large = x > cut
    t = 1.0 / (x * x)
    asym = snp.polyval(np.array(_ERFCX_ASYMPTOTIC[-(9 if f64 else 5):], dt), t) / (x * float(np.sqrt(np.pi)))
    z = snp.where(large | (x < 0), 1.0, x)
    if f64:
        big = z >= 8
        h = lambda c: _horner(z, c[::-1])  # noqa: E731
        rational = snp.where(big, h(ERFC_R), h(ERFC_P)) / snp.where(big, h(ERFC_S), h(ERFC_Q))
        near = (x >= 0) & (x < 1)
    else:
        rational = _horner(z, ERFC32_P) / _horner(z, ERFC32_Q)
        near = np.zeros((), bool)
    low = (x < 0) | near
    safe = snp.where(low, x, 0.0)
    direct = _exp_square(safe) * _sp.erfc(safe)
    direct = snp.where(x < -30, np.inf, direct)  # (exp(x^2) overflows there; the split of a huge x is NaN)
    return snp.where(large, asym, snp.where(low, direct, rational)).astype(dt)


erfcx.defjvps(lambda g, ans, x: (g * (2 * x * ans - 2 / np.sqrt(np.pi))).astype(ans.dtype))
