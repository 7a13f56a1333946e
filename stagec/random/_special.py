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


def lgamma(x):
    """log|Gamma(x)| by the Lanczos approximation (g = 7), with reflection for x < 0.5, as CHLO expands it."""
    dtype = aval_of(x).dtype
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
    ax = lax.abs(x)
    frac = lax.sub(ax, lax.floor(ax))
    frac = lax.select(lax.lt(_c(x, 0.5), frac), lax.sub(_c(x, 1.0), frac), frac)
    log_sin = lax.log(lax.sin(lax.mul(_c(x, 3.1415926535897931), frac)))
    reflected = lax.select(lax.is_finite(log_sin), lax.sub(lax.sub(_c(x, 1.1447298858494002), log_sin), log_y),
                           lax.neg(log_sin))
    out = lax.select(reflect, reflected, log_y)
    return lax.select(lax.eq(ax, _c(x, np.inf)), _c(x, np.inf), out)


def top_k_indices(x, k: int):
    """Indices of the `k` largest entries along the last axis, largest first, ties by lower index (as XLA)."""
    av = aval_of(x)
    iota = lax.broadcasted_iota(np.int32, av.shape, av.ndim - 1)
    _, idx = lax.sort([lax.neg(x), iota], dimension=av.ndim - 1, is_stable=True, num_keys=1)
    return lax.slice(idx, (0,) * av.ndim, av.shape[:-1] + (k,))


def cholesky(a):
    """Lower Cholesky factor of `a` symmetrized first, as `jnp.linalg.cholesky` does (NaN where not positive
    definite)."""
    return snp.linalg.cholesky((a + snp.swapaxes(a, -1, -2)) / 2)


def softmax(x, axis: int):
    """`jax.nn.softmax` (the numerically stable form)."""
    unnormalized = snp.exp(x - snp.max(x, axis, keepdims=True))
    return unnormalized / snp.sum(unnormalized, axis, keepdims=True)
