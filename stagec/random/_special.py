"""Functions the samplers need that stagec.lax does not have yet, written with existing primitives.

`erf_inv` and `lgamma` follow, operation for operation, the expansions of `chlo.erf_inv` and `chlo.lgamma`
that both XLA (hence JAX) and IREE apply (`chlo-legalize-to-stablehlo`), so results agree with JAX's up to
the backends' own `log`/`log1p`/`sin`. The rest stand in for `lax.top_k` and
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


def _horner(coeffs, w):
    p = _c(w, coeffs[0])
    for c in coeffs[1:]:
        p = lax.add(_c(w, c), lax.mul(p, w))
    return p


# Giles, "Approximating the erfinv function" (GPU Computing Gems), as in XLA's ErfInv32/ErfInv64.
_ERF_INV_F32 = (
    (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
     -0.00417768164, 0.246640727, 1.50140941),
    (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
     0.00943887047, 1.00167406, 2.83297682))
_ERF_INV_F64 = (
    (-3.6444120640178197e-21, -1.6850591381820166e-19, 1.28584807152564e-18, 1.1157877678025181e-17,
     -1.3331716628546209e-16, 2.0972767875968562e-17, 6.6376381343583238e-15, -4.0545662729752069e-14,
     -8.1519341976054721e-14, 2.6335093153082323e-12, -1.2975133253453532e-11, -5.4154120542946279e-11,
     1.0512122733215323e-09, -4.1126339803469837e-09, -2.9070369957882005e-08, 4.2347877827932404e-07,
     -1.3654692000834679e-06, -1.3882523362786469e-05, 1.8673420803405714e-04, -7.4070253416626698e-04,
     -6.0336708714301491e-03, 0.24015818242558962, 1.6536545626831027),
    (2.2137376921775787e-09, 9.075656193888539e-08, -2.7517406297064545e-07, 1.8239629214389228e-08,
     1.5027403968909828e-06, -4.013867526981546e-06, 2.9234449089955446e-06, 1.2475304481671779e-05,
     -4.7318229009055734e-05, 6.8284851459573175e-05, 2.4031110387097894e-05, -3.5503752036284748e-04,
     9.5328937973738049e-04, -1.6882755560235047e-03, 2.4914420961078508e-03, -3.7512085075692412e-03,
     5.3709145535900636e-03, 1.0052589676941592, 3.0838856104922208),
    (-2.7109920616438573e-11, -2.5556418169965252e-10, 1.5076572693500548e-09, -3.789465440126737e-09,
     7.6157012080783394e-09, -1.496002662714924e-08, 2.9147953450901081e-08, -6.7711997758452339e-08,
     2.2900482228026655e-07, -9.9298272942317003e-07, 4.5260625972231537e-06, -1.9681778105531671e-05,
     7.5995277030017761e-05, -2.1503011930044477e-04, -1.3871931833623122e-04, 1.0103004648645344,
     4.8499064014085844))


def erf_inv(x):
    """The inverse error function (float16/bfloat16 computed in float32, as CHLO does)."""
    dt = aval_of(x).dtype
    if dt not in (_F32, _F64):
        return lax.convert_element_type(erf_inv(lax.convert_element_type(x, _F32)), dt)
    w = lax.neg(lax.log1p(lax.mul(x, lax.neg(x))))
    if dt == _F32:
        small = lax.lt(w, _c(w, 5.0))
        p = lax.select(small, _horner(_ERF_INV_F32[0], lax.sub(w, _c(w, 2.5))),
                       _horner(_ERF_INV_F32[1], lax.sub(lax.sqrt(w), _c(w, 3.0))))
    else:
        small, mid = lax.lt(w, _c(w, 6.25)), lax.lt(w, _c(w, 16.0))
        sw = lax.sqrt(w)
        p = lax.select(small, _horner(_ERF_INV_F64[0], lax.sub(w, _c(w, 3.125))),
                       lax.select(mid, _horner(_ERF_INV_F64[1], lax.sub(sw, _c(w, 3.25))),
                                  _horner(_ERF_INV_F64[2], lax.sub(sw, _c(w, 5.0)))))
    edge = lax.eq(lax.abs(x), _c(x, 1.0))
    return lax.select(edge, lax.mul(x, _c(x, np.inf)), lax.mul(p, x))


_LANCZOS = (676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)


# lgamma(1 + z) = -gamma z + sum_k (-1)^k zeta(k) z^k / k and lgamma(2 + z) = (1 - gamma) z + sum_k (-1)^k (zeta(k) - 1)
# z^k / k: near the zeros of lgamma (1 and 2), where the Lanczos sum's absolute error (4e-7 in float32) is all of it.
_LGAMMA1 = (-0.5772156649015329, 0.8224670334241132, -0.40068563438653143, 0.27058080842778454, -0.20738555102867398, 0.1695571769974082, -0.1440498967688461, 0.12550966952474304, -0.11133426586956469, 0.1000994575127818, -0.09095401714582904, 0.083353840546109, -0.0769325164113522, 0.07143294629536133, -0.06666870588242046, 0.06250095514121304, -0.058823978658684585, 0.055555767627403614, -0.05263167937961666, 0.05000004769810169, -0.047619070330142226, 0.04545455629320467, -0.04347826605304026, 0.04166666915034121, -0.04000000119214014, 0.03846153903467518, -0.037037037312989324, 0.035714285847333355, -0.034482758684919304, 0.03333333336437758)
_LGAMMA2 = (0.42278433509846713, 0.3224670334241132, -0.0673523010531981, 0.020580808427784546, -0.007385551028673986, 0.0028905103307415234, -0.001192753911703261, 0.0005096695247430425, -0.00022315475845357939, 9.945751278180853e-05, -4.492623673813314e-05, 2.050721277567069e-05, -9.439488275268397e-06, 4.374866789907488e-06, -2.039215753801366e-06, 9.55141213040742e-07, -4.492469198764566e-07, 2.1207184805554665e-07, -1.0043224823968099e-07, 4.7698101693639804e-08, -2.2711094608943164e-08, 1.0838659214896955e-08, -5.183475041970047e-09, 2.4836745438024785e-09, -1.1921401405860912e-09, 5.731367241678862e-10, -2.7595228851242334e-10, 1.330476437424449e-10, -6.4229645638381e-11, 3.1044247747322276e-11, -1.5021384080754142e-11, 7.275974480239079e-12, -3.527742476575915e-12, 1.711991790559618e-12, -8.315385841420285e-13, 4.04220052528944e-13, -1.9664756310966168e-13, 9.573630387838557e-14, -4.664076026428376e-14, 2.2737369600659715e-14, -1.109139947083452e-14, 5.41365915672535e-15)


def _series(z, coeffs):
    """z (c0 + z (c1 + ...)) by Horner."""
    p = _c(z, coeffs[-1])
    for c in coeffs[-2::-1]:
        p = lax.add(lax.mul(p, z), _c(z, c))
    return lax.mul(p, z)


def lgamma(x):
    """log|Gamma(x)| by the Lanczos approximation (g = 7), with reflection for x < 0.5, as CHLO expands it
    (float16/bfloat16 computed in float32, as CHLO does)."""
    dtype = aval_of(x).dtype
    if dtype not in (_F32, _F64):
        return lax.convert_element_type(lgamma(lax.convert_element_type(x, _F32)), dtype)
    reflect = lax.lt(x, _c(x, 0.5))
    z = lax.select(reflect, lax.neg(x), lax.sub(x, _c(x, 1.0)))
    a = _c(x, 0.99999999999980993)
    for i, coef in enumerate(_LANCZOS):
        a = lax.add(a, lax.div(_c(x, coef), lax.add(z, _c(x, i + 1.0))))
    t = lax.add(_c(x, 7.5), z)
    # CHLO divides by 7.5; XLA (hence JAX) rewrites division by a constant as multiplication by its reciprocal.
    log_t = lax.add(_c(x, 2.0149030205422647), lax.log1p(lax.mul(z, _c(x, np.array(1, dtype) / np.array(7.5, dtype)))))
    body = lax.mul(lax.sub(lax.add(z, _c(x, 0.5)), lax.div(t, log_t)), log_t)
    log_y = lax.add(lax.add(_c(x, 0.91893853320467266), body), lax.log(a))
    n1, n2 = (15, 21) if dtype == _F32 else (len(_LGAMMA1), len(_LGAMMA2))  # terms to 2^-30 / 2^-60
    if dtype == _F32:  # lgamma(1 - x) of the reflection too: its absolute error is the result's near lgamma's zeros
        log_y = _lgamma32_shifted(lax.add(z, _c(x, 1.0)), log_y, n2)
    ax = lax.abs(x)
    frac = lax.sub(ax, lax.floor(ax))
    frac = lax.select(lax.lt(_c(x, 0.5), frac), lax.sub(_c(x, 1.0), frac), frac)
    if dtype == _F32:  # sin(pi frac) of pi frac's rounding moves the result by cot(pi frac) of it: all of it near zeros
        ph, pl = _pi_times(frac)
        sn = lax.sin(ph)
        corr = lax.select(lax.lt(frac, _c(x, 2.0 ** -20)), _c(x, 0.0), lax.div(lax.mul(pl, lax.cos(ph)), sn))
        log_sin = lax.add(lax.log(sn), corr)
    else:
        log_sin = lax.log(lax.sin(lax.mul(_c(x, 3.1415926535897931), frac)))
    reflected = lax.select(lax.is_finite(log_sin), lax.sub(lax.sub(_c(x, 1.1447298858494002), log_sin), log_y),
                           lax.neg(log_sin))
    out = lax.select(reflect, reflected, log_y)
    near1 = lax.bitwise_and(lax.ge(x, _c(x, 0.75)), lax.lt(x, _c(x, 1.25)))
    near2 = lax.bitwise_and(lax.ge(x, _c(x, 1.25)), lax.lt(x, _c(x, 2.5)))
    out = lax.select(near1, _series(lax.sub(x, _c(x, 1.0)), _LGAMMA1[:n1]), out)
    out = lax.select(near2, _series(lax.sub(x, _c(x, 2.0)), _LGAMMA2[:n2]), out)
    return lax.select(lax.eq(ax, _c(x, np.inf)), _c(x, np.inf), out)


def _pi_times(r):
    """(ph, pl): ph + pl = pi r to about 2^-48 relative, in float32 arithmetic (Dekker's product of r and pi's
    float32 rounding, plus r times the rest of pi)."""
    def split(v):
        c = lax.mul(v, _c(v, 4097.0))
        h = lax.sub(c, lax.sub(c, v))
        return h, lax.sub(v, h)
    pi32 = float(np.float32(np.pi))
    ph = lax.mul(r, _c(r, pi32))
    (rh, rl), (qh, ql) = split(r), split(_c(r, pi32))
    err = lax.add(lax.add(lax.add(lax.sub(lax.mul(rh, qh), ph), lax.mul(rh, ql)), lax.mul(rl, qh)), lax.mul(rl, ql))
    return ph, lax.add(err, lax.mul(r, _c(r, np.pi - pi32)))


def _lgamma32_shifted(w, lanczos, n2: int):
    """float32 lgamma(w) (w > 0): the series about 1 and 2 on [0.75, 2.5), and on [2.5, 8) lgamma(w - n) +
    log((w - 1) ... (w - n)), w - n in [1.5, 2.5) by the series about 2 (every w - k exact): within about an ulp
    where the float32 Lanczos sum is off by 3.6e-6 (10-20 ulps); `lanczos` elsewhere."""
    n = lax.floor(lax.sub(w, _c(w, 1.5)))
    prod = _c(w, 1.0)
    for k in range(1, 7):
        prod = lax.mul(prod, lax.select(lax.le(_c(w, float(k)), n), lax.sub(w, _c(w, float(k))), _c(w, 1.0)))
    shifted = lax.add(_series(lax.sub(lax.sub(w, n), _c(w, 2.0)), _LGAMMA2[:n2]), lax.log(prod))
    out = lax.select(lax.bitwise_and(lax.ge(w, _c(w, 2.5)), lax.lt(w, _c(w, 8.0))), shifted, lanczos)
    out = lax.select(lax.bitwise_and(lax.ge(w, _c(w, 0.75)), lax.lt(w, _c(w, 1.25))),
                     _series(lax.sub(w, _c(w, 1.0)), _LGAMMA1[:15]), out)
    return lax.select(lax.bitwise_and(lax.ge(w, _c(w, 1.25)), lax.lt(w, _c(w, 2.5))),
                      _series(lax.sub(w, _c(w, 2.0)), _LGAMMA2[:n2]), out)


# digamma about its positive zero X0 = X0_HI + X0_LO: psi^(n)(X0) / n!, n = 1, 2, ... (mpmath), for |x - X0| < 1/4.
_DIGAMMA_X0 = (1.4616321325302124, 1.243815006546356e-08)
_DIGAMMA_ROOT = (0.9676722454476212, -0.4427631689835921, 0.258499760955651, -0.16394270544240652, 0.10782405069126237,
                 -0.07219956125645471, 0.04880428816414311, -0.03316112647484736, 0.022597648232218104,
                 -0.01542476590494896, 0.010538791616612175, -0.007204534386356869, 0.004926781395729853,
                 -0.003369801655439328, 0.002305126326734928)


def digamma(x):
    """The derivative of lgamma: that of the same Lanczos approximation, with reflection for x < 0.5 (NaN
    at the poles 0, -1, -2, ...), as CHLO expands it (float16/bfloat16 in float32)."""
    if aval_of(x).dtype not in (_F32, _F64):
        return lax.convert_element_type(digamma(lax.convert_element_type(x, _F32)), aval_of(x).dtype)
    reflect = lax.lt(x, _c(x, 0.5))
    z = lax.select(reflect, lax.neg(x), lax.sub(x, _c(x, 1.0)))
    num, den = _c(x, 0.0), _c(x, 0.99999999999980993)
    for i, coef in enumerate(_LANCZOS):
        zi = lax.add(z, _c(x, i + 1.0))
        num = lax.sub(num, lax.div(_c(x, coef), lax.mul(zi, zi)))
        den = lax.add(den, lax.div(_c(x, coef), zi))
    t = lax.add(_c(x, 7.5), z)
    log_t = lax.add(_c(x, 2.0149030205422647), lax.log1p(lax.mul(z, _c(x, 1 / 7.5))))  # as lgamma's
    y = lax.sub(lax.add(log_t, lax.div(num, den)), lax.div(_c(x, 7.0), t))
    reduced = lax.add(x, lax.abs(lax.floor(lax.add(x, _c(x, 0.5)))))
    if aval_of(x).dtype == _F32:  # pi cot(pi r) with pi r as ph + pl (its rounding: all of the value near the zeros)
        ph, pl = _pi_times(reduced)
        sn = lax.sin(ph)
        cot = lax.div(lax.cos(ph), sn)  # (below 2^-20 pl / sn^2 would underflow; relative 2^-24 there)
        cot = lax.select(lax.lt(lax.abs(reduced), _c(x, 2.0 ** -20)), cot, lax.sub(cot, lax.div(pl, lax.mul(sn, sn))))
        reflected = lax.sub(y, lax.mul(_c(x, np.pi), cot))
    else:
        pi_r = lax.mul(_c(x, np.pi), reduced)
        reflected = lax.sub(y, lax.div(lax.mul(_c(x, np.pi), lax.cos(pi_r)), lax.sin(pi_r)))
    out = lax.select(reflect, reflected, y)
    if aval_of(x).dtype == _F32:  # near the zero the Lanczos derivative's absolute error (1e-6) is all of the value
        dx = lax.sub(lax.sub(x, _c(x, _DIGAMMA_X0[0])), _c(x, _DIGAMMA_X0[1]))
        out = lax.select(lax.lt(lax.abs(dx), _c(x, 0.25)), _series(dx, _DIGAMMA_ROOT), out)
    pole = lax.bitwise_and(lax.le(x, _c(x, 0.0)), lax.eq(x, lax.floor(x)))
    return lax.select(pole, _c(x, np.nan), out)


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
        return lax.convert_element_type(gamma_sample_grad(lax.convert_element_type(a, _F32),
                                                          lax.convert_element_type(x, _F32)), dt)
    eps = float(np.finfo(dt).eps)
    c = lambda v: _c(a, v)
    nan = lax.bitwise_or(lax.ne(a, a), lax.ne(x, x))
    bad = lax.bitwise_or(lax.lt(x, c(0.0)), lax.le(a, c(0.0)))
    x0 = lax.eq(x, c(0.0))
    log_x = lax.log(x)
    underflow = lax.lt(lax.sub(lax.sub(lax.mul(a, log_x), x), lgamma(a)), c(-float(np.log(np.finfo(dt).max))))
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
    dlog_da = lax.sub(log_x, digamma(lax.add(a, one)))
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
    from_cf = lax.mul(lax.add(cf["df"], lax.mul(cf["f"], lax.sub(log_x, digamma(a)))), x)
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
