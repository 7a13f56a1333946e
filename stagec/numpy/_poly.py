"""`jax.numpy`'s polynomial arithmetic (`poly`, `polyadd`, `polysub`, `polymul`, `polyder`, `polyint`, `polydiv`,
`polyfit`), `unwrap` and `piecewise`, each as JAX computes it (its dtype rules and algorithms)."""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..core import Tracer, aval_of
from .. import numpy as snp
from ._base import _promote, _promoted_arrays, _to_float

__all__ = ["poly", "polyadd", "polysub", "polymul", "polyder", "polyint", "polydiv", "polyfit", "unwrap",
           "piecewise"]


def _inexact(name: str, *xs):
    """Promoted to a common inexact dtype (integers to the default float), as JAX's `promote_dtypes_inexact`."""
    return _promoted_arrays(_to_float, name, *xs)  # (a Python scalar weakly: float16 and 2.0 stay float16)


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots (a scalar is one root)."""
    (z,) = _inexact("poly", seq_of_zeros)
    z = snp.atleast_1d(z)
    sh = aval_of(z).shape
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        raise NotImplementedError("poly of a square matrix needs its eigenvalues (numpy.linalg.eigvals), which "
                                  "stagec lacks; pass the roots")
    if z.ndim != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    dt = aval_of(z).dtype
    if len(z) == 0:
        return snp.ones((), dt)
    # a * (x - z_k) as NumPy's convolve sums it, 0 + a_i + a_(i-1) (-z_k), over the overlap only (the convolution
    # multiplied the zero padding by a NaN or infinite root: the leading 1 became NaN)
    a, zero = snp.ones((1,), dt), snp.zeros((1,), dt)
    for k in range(len(z)):
        a = (0.0 + snp.concatenate([a, zero])) + snp.concatenate([zero, a * -z[k]])
    return a


def polyadd(a1, a2):
    """The sum of two polynomials (coefficient arrays aligned at their ends)."""
    a1, a2 = _promote("polyadd", snp.asarray(a1), snp.asarray(a2))
    if a2.shape[0] <= a1.shape[0]:
        return a1.at[-a2.shape[0]:].add(a2)
    return a2.at[-a1.shape[0]:].add(a1)


def polysub(a1, a2):
    """The difference of two polynomials."""
    a1, a2 = _promote("polysub", snp.asarray(a1), snp.asarray(a2))
    return polyadd(a1, -a2)


def _concrete(name: str, x) -> np.ndarray:
    if isinstance(x, Tracer):
        raise x._concretization_error(f"{name}(..., trim_leading_zeros=True) (the result's length depends on the "
                                      f"values; leave it False under jit)")
    return np.asarray(x)


def _trim_front(name: str, x, tol=0.0):
    v = _concrete(name, x)
    nz = np.flatnonzero(np.abs(v) > tol)
    return x[int(nz[0]):] if nz.size else x[len(v):]


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
    """The product of two polynomials (a full convolution); `trim_leading_zeros` (eager only) drops leading
    zeros first, as NumPy's."""
    a1, a2 = _inexact("polymul", a1, a2)
    if trim_leading_zeros and (len(a1) > 1 or len(a2) > 1):
        a1, a2 = _trim_front("polymul", a1), _trim_front("polymul", a2)
    if len(a1) == 0:
        a1 = snp.zeros(1, aval_of(a2).dtype)
    if len(a2) == 0:
        a2 = snp.zeros(1, aval_of(a1).dtype)
    return snp.convolve(a1, a2, mode="full")


def polyder(p, m: int = 1):
    """The coefficients of the m-th derivative (float, as JAX's)."""
    m = int(m)
    (p,) = _inexact("polyder", p)
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    if m == 0:
        return p
    dt = aval_of(p).dtype
    coeff = (snp.arange(m, len(p), dtype=dt)[None] - snp.arange(m, dtype=dt)[:, None]).prod(0)
    return p[:-m] * coeff[::-1]


def polyint(p, m: int = 1, k=None):
    """The coefficients of the m-th antiderivative, with integration constants `k` (a scalar or m of them)."""
    m = int(m)
    p, k = _inexact("polyint", p, 0 if k is None else k)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    k = snp.atleast_1d(k)
    if len(k) == 1:
        k = snp.full((m,), k[0])
    if aval_of(k).shape != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    if m == 0:
        return p
    dt = aval_of(p).dtype
    grid = snp.arange(len(p) + m, dtype=dt)[None] - snp.arange(m, dtype=dt)[:, None]
    coeff = snp.maximum(1, grid).prod(0)[::-1]
    return snp.true_divide(snp.concatenate((p, k)), coeff)


def polydiv(u, v, *, trim_leading_zeros: bool = False):
    """(quotient, remainder) of polynomial division by long division (the remainder keeps u's length unless
    `trim_leading_zeros`, eager only, drops its leading entries below sqrt(eps))."""
    u, v = _inexact("polydiv", u, v)
    m, n = len(u) - 1, len(v) - 1
    scale = 1.0 / v[0]
    q = snp.zeros(max(m - n + 1, 1), aval_of(u).dtype)
    for k in range(0, m - n + 1):
        d = scale * u[k]
        q = q.at[k].set(d)
        u = u.at[k:k + n + 1].add(-d * v)
    if trim_leading_zeros:
        u = _trim_front("polydiv", u, float(np.sqrt(_dt.finfo(aval_of(u).dtype).eps)))
    return q, u


def polyfit(x, y, deg: int, rcond=None, full: bool = False, w=None, cov=False):
    """Least-squares polynomial fit of degree `deg` (JAX's: a column-scaled Vandermonde system by `lstsq`)."""
    x, y = snp.asarray(x), snp.asarray(y)
    deg = int(deg)
    order = deg + 1
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if x.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if x.size == 0:
        raise TypeError("expected non-empty vector for x")
    if y.ndim < 1 or y.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = len(x) * float(_dt.finfo(snp.result_type(x, 1.0)).eps)
    rcond = float(rcond)
    lhs, rhs = snp.vander(x, order), y
    if w is not None:
        (w,) = _inexact("polyfit", w)
        if w.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if w.shape[0] != y.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if rhs.ndim == 2 else w)
    scale = snp.sqrt((lhs * lhs).sum(axis=0))
    lhs = lhs / scale[None, :]
    c, resids, rank, s = snp.linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale[None, :]).T if c.ndim > 1 else c / scale
    if full:
        return c, resids, rank, s, snp.asarray(rcond)
    if cov:
        vbase = snp.linalg.inv(snp.dot(lhs.T, lhs)) / snp.outer(scale, scale)
        if cov == "unscaled":
            fac = snp.asarray(1.0)
        else:
            if len(x) <= order:
                raise ValueError("the number of data points must exceed order to scale the covariance matrix")
            fac = resids / (len(x) - order)
        if y.ndim == 1:
            return c, vbase * snp.atleast_1d(fac)[None]
        return c, vbase[:, :, None] * snp.atleast_1d(fac)[None, None, :]
    return c


def unwrap(p, discont=None, axis: int = -1, period=2 * np.pi):
    """`p` with jumps larger than `discont` (default period / 2) along `axis` replaced by their period
    complements (JAX's algorithm; integer inputs use integer arithmetic, as JAX's)."""
    p, period = _promote("unwrap", snp.asarray(p), snp.asarray(period))
    if _dt.kind(aval_of(p).dtype) == "c":
        raise ValueError("jnp.unwrap does not support complex inputs.")
    if aval_of(p).shape[axis] == 0:
        return p
    if discont is None:
        discont = period / 2
    interval = period // 2 if _dt.kind(aval_of(p).dtype) in "iu" else period / 2
    dd = snp.diff(p, axis=axis)
    ddmod = snp.mod(dd + interval, period) - interval
    ddmod = snp.where((ddmod == -interval) & (dd > 0), interval, ddmod)
    correct = snp.where(snp.abs(dd) < discont, 0, ddmod - dd)
    ax = axis % p.ndim
    return snp.concatenate((lax.slice_in_dim(p, 0, 1, axis=ax),
                            lax.slice_in_dim(p, 1, None, axis=ax) + snp.cumsum(correct, axis=ax)), axis=ax)


def piecewise(x, condlist, funclist, *args, **kw):
    """funclist[i] (a function of x's elements or a value) where condlist[i] is the first true condition; the
    extra function (or 0) where none is (JAX's: an index per element and a `switch`, vectorized)."""
    x = snp.asarray(x)
    nc, nf = len(condlist), len(funclist)
    if nf == nc + 1:
        funclist = list(funclist[-1:]) + list(funclist[:-1])
    elif nf == nc:
        funclist = [0] + list(funclist)
    else:
        raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are expected; got {nf}")
    cond = snp.asarray(condlist, dtype=bool)
    indices = snp.argmax(snp.cumsum(snp.concatenate([snp.zeros_like(cond[:1]), cond], 0), 0), 0)
    dt = aval_of(x).dtype

    def branch(f):
        if callable(f):
            return lambda v: snp.asarray(f(v, *args, **kw)).astype(dt)
        return lambda v: snp.asarray(f, dtype=dt)
    return snp.vectorize(lax.switch, excluded=(1,))(indices, [branch(f) for f in funclist], x)
