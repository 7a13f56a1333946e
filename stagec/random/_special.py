"""Functions the samplers need, written with existing primitives: the gamma sampler's derivative (with
`lax.lgamma`/`lax.digamma`, whose expansions are passes/special.py's); the rest stand in for `lax.top_k` and
`jax.nn.softmax`; `next_up`/`next_down` are `stagec.numpy`'s.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as snp
from ..numpy._arrayapi import next_down, next_up  # noqa: F401  (the samplers' nextafter)
from ..core import aval_of

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _c(x, v):
    return lax.full_like(x, v)


def _iterate(cond, body, state: dict) -> dict:
    """`lax.while_loop` over a dict of arrays; `body` updates the lanes still `on` (the others keep their values)."""
    names = sorted(state)

    def step(vals):
        old = dict(zip(names, vals))
        new = body(dict(old))
        on = old["on"]
        return [new[k] if k in ("on", "n") else lax.select(on, new[k], old[k]) for k in names]
    return dict(zip(names, lax.while_loop(lambda v: cond(dict(zip(names, v))), step, [state[k] for k in names])))


def gamma_sample_grad(a, x):
    """d x / d a for a sample x of Gamma(a, 1), by implicit differentiation of its CDF P(a, x) (the
    regularized lower incomplete gamma function): -(dP/da) / (dP/dx), with dP/dx = x^(a-1) e^-x / Gamma(a).
    dP/da comes from P's power series where x <= max(1, a), and from the continued fraction of Q = 1 - P
    elsewhere, each differentiated term by term and summed until the derivative's terms fall below the
    dtype's epsilon (the Cephes/Eigen scheme JAX's `random_gamma_grad` uses, with the same stopping rules,
    so that values agree). Elementwise on arrays of one shape; NaN where a <= 0 or x < 0, 0 at x = 0."""
    dt = aval_of(a).dtype
    if dt not in (_F32, _F64):
        return lax._convert_element_type(gamma_sample_grad(lax._convert_element_type(a, _F32),
                                                          lax._convert_element_type(x, _F32)), dt)
    eps = float(np.finfo(dt).eps)
    c = lambda v: _c(a, v)
    nan = lax.bitwise_or(lax.ne(a, a), lax.ne(x, x))
    bad = lax.bitwise_or(lax.lt(x, c(0.0)), lax.le(a, c(0.0)))
    x0 = lax.eq(x, c(0.0))
    log_x = lax.log(x)
    underflow = lax.lt(lax.sub(lax.sub(lax.mul(a, log_x), x), lax.lgamma(a)), c(-float(np.log(np.finfo(dt).max))))
    on = lax.bitwise_not(lax.bitwise_or(lax.bitwise_or(x0, bad), lax.bitwise_or(underflow, nan)))
    use_cf = lax.bitwise_and(lax.gt(x, c(1.0)), lax.gt(x, a))
    any_on = lambda s: snp.any(s["on"])

    # P = x^a e^-x / Gamma(a + 1) * sum_k x^k / ((a+1)...(a+k)): s = the sum, d = its derivative in a
    def series_step(s):
        r = lax.add(s["r"], c(1.0))
        dterm = lax.sub(lax.mul(s["dterm"], lax.div(x, r)), lax.div(lax.mul(s["term"], x), lax.mul(r, r)))
        d = lax.add(s["d"], dterm)
        term = lax.mul(s["term"], lax.div(x, r))
        on = lax.bitwise_and(s["on"], lax.gt(lax.abs(lax.div(dterm, d)), c(eps)))
        return dict(on=on, r=r, term=term, s=lax.add(s["s"], term), dterm=dterm, d=d)
    zero, one = c(0.0), c(1.0)
    ser = _iterate(any_on, series_step, dict(on=lax.bitwise_and(on, lax.bitwise_not(use_cf)), r=a, term=one,
                                              s=one, dterm=zero, d=zero))
    dlog_da = lax.sub(log_x, lax.digamma(lax.add(a, one)))
    from_series = lax.div(lax.mul(lax.neg(lax.add(ser["d"], lax.mul(ser["s"], dlog_da))), x), a)

    # Q = x^a e^-x / Gamma(a) * (the continued fraction p_k / q_k), with p, q and their derivatives in a
    # carried by the recurrence; p and q are rescaled by eps together when they grow large.
    def cf_step(s):
        n, y, z = lax.add(s["n"], c(1.0)), lax.add(s["y"], one), lax.add(s["z"], c(2.0))
        yn = lax.mul(y, n)
        p = lax.sub(lax.mul(s["p1"], z), lax.mul(s["p2"], yn))
        q = lax.sub(lax.mul(s["q1"], z), lax.mul(s["q2"], yn))
        dp = lax.add(lax.sub(lax.sub(lax.mul(s["dp1"], z), s["p1"]), lax.mul(s["dp2"], yn)), lax.mul(s["p2"], n))
        dq = lax.add(lax.sub(lax.sub(lax.mul(s["dq1"], z), s["q1"]), lax.mul(s["dq2"], yn)), lax.mul(s["q2"], n))
        ok = lax.ne(q, zero)
        f = lax.select(ok, lax.div(p, q), s["f"])
        df = lax.select(ok, lax.div(lax.sub(dp, lax.mul(f, dq)), q), s["df"])
        change = lax.select(ok, lax.abs(lax.sub(df, s["df"])), one)
        big = lax.gt(lax.abs(p), c(1.0 / eps))
        scale = lambda v: lax.select(big, lax.mul(v, c(eps)), v)
        return dict(on=lax.bitwise_and(s["on"], lax.gt(change, c(eps))), n=n, y=y, z=z, f=f, df=df,
                    p1=scale(p), q1=scale(q), p2=scale(s["p1"]), q2=scale(s["q1"]),
                    dp1=scale(dp), dq1=scale(dq), dp2=scale(s["dp1"]), dq2=scale(s["dq1"]))
    y0 = lax.sub(one, a)
    z0 = lax.add(lax.add(x, y0), one)
    p1, q1 = lax.add(x, one), lax.mul(z0, x)
    f0 = lax.div(p1, q1)
    cf = _iterate(lambda s: snp.any(lax.bitwise_and(lax.lt(s["n"], c(2000.0)), s["on"])), cf_step,
                  dict(on=lax.bitwise_and(on, use_cf), n=zero, y=y0, z=z0, f=f0,
                       df=lax.div(lax.mul(f0, x), q1), p1=p1, q1=q1, p2=one, q2=x, dp1=zero,
                       dq1=lax.neg(x), dp2=zero, dq2=zero))
    from_cf = lax.mul(lax.add(cf["df"], lax.mul(cf["f"], lax.sub(log_x, lax.digamma(a)))), x)
    out = lax.select(use_cf, from_cf, from_series)
    out = lax.select(x0, zero, out)
    return lax.select(lax.bitwise_or(bad, nan), c(np.nan), out)


def top_k_indices(x, k: int):
    """Indices of the `k` largest entries along the last axis, largest first, ties by lower index (as XLA)."""
    av = aval_of(x)
    iota = lax.broadcasted_iota(np.int32, av.shape, av.ndim - 1)
    _, idx = lax.sort([lax.neg(x), iota], dimension=av.ndim - 1, is_stable=True, num_keys=1)
    return lax.slice(idx, (0,) * av.ndim, av.shape[:-1] + (k,))


def softmax(x, axis: int):
    """`jax.nn.softmax` (the numerically stable form)."""
    unnormalized = snp.exp(x - snp.max(x, axis, keepdims=True))
    return unnormalized / snp.sum(unnormalized, axis, keepdims=True)
