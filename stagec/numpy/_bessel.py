"""Modified Bessel functions of orders 0 and 1, exponentially scaled (`i0e`, `i1e`) and not (`i0`, `i1`), and
`kaiser` windows: Chebyshev series of exp(-x) I(x) on four pieces of [0, 8] and of exp(-x) sqrt(x) I(x) past 8
(in t = 16 / x - 1), summed by Clenshaw's recurrence (Cephes' and XLA's `bessel_i0e` use one piece below 8). The coefficients
were computed for stagec with mpmath (64 Chebyshev nodes at 50 digits; tests/test_bessel.py checks the results
against mpmath); float32 sums the terms above 1e-10 of the first, float64 those above 1e-19."""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..ad import custom_jvp
from ..core import aval_of
from .. import numpy as snp
from ._base import _to_float

__all__ = ["i0", "kaiser"]

# (float32 terms, float64 terms, Chebyshev coefficients) of exp(-x) I0(x) on [0, 2], [2, 4], [4, 6], [6, 8] (in t
# mapping the piece to [-1, 1]), then of exp(-x) sqrt(x) I0(x) past 8 (t = 16 / x - 1); I1 likewise with
# exp(-x) I1(x) / x on the pieces
I0_SERIES = (  # noqa: E501
    (12, 20, (1.1109240931698063, -0.32224785966994146, 0.0941349608633822, -0.022714557101913377, 0.004543195287670698, -0.0007688553318076656, 0.00011230023567248778, -1.4396591689214997e-05, 1.6424565230958783e-06, -1.6867411034015366e-07, 1.574201294790916e-08, -1.34590250765456e-09, 1.0613894740398771e-10, -7.765957566215815e-12, 5.298940569004349e-13, -3.3868488995848243e-14, 2.0357565009571833e-15, -1.154777986735921e-16, 6.20114611236842e-18, -3.16131023960394e-19)),
    (11, 19, (0.5003960048445018, -0.049557457781492786, 0.007374052077075208, -0.0011697282054373604, 0.00017969332377093834, -2.5617015085593743e-05, 3.3314126243593288e-06, -3.934825467240966e-07, 4.22769102542424e-08, -4.149034776302307e-09, 3.7379061845757925e-10, -3.107224121450883e-11, 2.3950375280556307e-12, -1.7196089584183182e-13, 1.1548885174232372e-14, -7.282745910028947e-16, 4.3270747390633766e-17, -2.429959320489726e-18, 1.2934405626395422e-19)),
    (10, 18, (0.37034050314273753, -0.02001830929601503, 0.0016442800749825429, -0.00015240755819962914, 1.4991804777177417e-05, -1.512427731164307e-06, 1.5207597615673014e-07, -1.4885647101370073e-08, 1.3944093745342516e-09, -1.2367790449169023e-10, 1.0327672680368722e-11, -8.100804050951637e-13, 5.967606215290018e-14, -4.133247706116696e-15, 2.696322776555766e-16, -1.660192175791089e-17, 9.669970514156071e-19, -5.340129826154632e-20)),
    (9, 16, (0.30877683011208756, -0.011571363631134503, 0.0006534175622679182, -4.1268811732214355e-05, 2.7608312236243477e-06, -1.9194351378888802e-07, 1.3725074834403081e-08, -9.997258947998378e-10, 7.333815823648159e-11, -5.34991486778439e-12, 3.833377180887994e-13, -2.669981720665868e-14, 1.7935919613386588e-15, -1.1559096580036838e-16, 7.123879877368298e-18, -4.191724842275027e-19)),
    (8, 29, (0.8044904110141088, 0.0033691164782556943, 6.889758346916825e-05, 2.8913705208347567e-06, 2.0489185894690638e-07, 2.266668990498178e-08, 3.3962320257083865e-09, 4.94060238822497e-10, 1.1889147107846439e-11, -3.1499165279632416e-11, -1.3215811840447713e-11, -1.7941785315068062e-12, 7.180124451383666e-13, 3.8527783827421426e-13, 1.54008621752141e-14, -4.150569347287222e-14, -9.554846698828307e-15, 3.8116806693526224e-15, 1.7725601330565263e-15, -3.425485619677219e-16, -2.8276239805165836e-16, 3.461222867697461e-17, 4.46562142029676e-17, -4.830504485944182e-18, -7.233180487874754e-18, 9.921475412173699e-19, 1.193650890845982e-18, -2.4887098371508075e-19, -1.938426454160906e-19)),
)
I1_SERIES = (  # noqa: E501
    (12, 19, (0.5083945661532121, -0.18614670648327067, 0.047922338053106146, -0.009789076216141408, 0.0016662238479520602, -0.0002433240014250099, 3.1112561153598404e-05, -3.537110387592967e-06, 3.6188997442071134e-07, -3.365006741839022e-08, 2.8669319308345316e-09, -2.253506636201581e-10, 1.6438659802941666e-11, -1.118540536749965e-12, 7.130945299391151e-14, -4.276171214786366e-15, 2.420398868895772e-16, -1.2971583981874101e-17, 6.600653920913005e-19)),
    (11, 19, (0.14155567994169105, -0.030666074053399422, 0.005274680444005409, -0.0007941514761674789, 0.00010718701380857284, -1.3092513578620076e-05, 1.455868840775671e-06, -1.4812694197911398e-07, 1.385608184246176e-08, -1.1971449562881567e-09, 9.595439854804797e-11, -7.164640318304445e-12, 5.002785150712045e-13, -3.278451095491579e-14, 2.022994614516335e-15, -1.1789755185705923e-16, 6.507397497200852e-18, -3.410463107703704e-19, 1.701160285082047e-20)),
    (10, 18, (0.06778550883787575, -0.009553439908372144, 0.0011100759906250734, -0.00011832038731520654, 1.1876503076838723e-05, -1.1308749049785182e-06, 1.0225102488415982e-07, -8.769774416144851e-09, 7.12511579340325e-10, -5.4786656352909604e-11, 3.985694901129806e-12, -2.744137598166008e-13, 1.7894367836201593e-14, -1.1064322179986835e-15, 6.495658267005273e-17, -3.626313706405847e-18, 1.9281328409713884e-19, -9.779872796149325e-21)),
    (9, 17, (0.04137751107348994, -0.004258021063193634, 0.00036390211071035184, -2.8866159380622924e-05, 2.191560769020781e-06, -1.6108531701463477e-07, 1.1510678697157041e-08, -8.001378943170131e-10, 5.4041098834780996e-11, -3.5389360608655085e-12, 2.2417786767039338e-13, -1.3706574012274151e-14, 8.073964391989757e-16, -4.5758790726523735e-17, 2.492906187603146e-18, -1.3049141835945914e-19, 6.562384332940427e-21)),
    (8, 29, (0.7785762350182801, -0.009761097491361469, -0.00011058893876262371, -3.882564808877691e-06, -2.512236237870209e-07, -2.6314688468895196e-08, -3.835380385964237e-09, -5.589743462196584e-10, -1.8974958123505413e-11, 3.2526035830154884e-11, 1.4125807436613782e-11, 2.0356285441470896e-12, -7.198551776245908e-13, -4.0835511110921974e-13, -2.1015418427726643e-14, 4.272440016711951e-14, 1.0420276984128802e-14, -3.8144030724370075e-15, -1.8803547755107825e-15, 3.3082023109209285e-16, 2.96262899764595e-16, -3.209525921993424e-17, -4.6503053684893586e-17, 4.414348323071708e-18, 7.517296310842105e-18, -9.314178867326884e-19, -1.242193275194891e-18, 2.4142767194548486e-19, 2.0269443840532852e-19)),
)

def _clenshaw(t, coeffs):
    """sum' c_k T_k(t) (the first term halved)."""
    y = 2 * t
    b1 = b2 = snp.zeros_like(t)
    for c in coeffs[:0:-1]:
        b1, b2 = y * b1 - b2 + c, b1
    return t * b1 - b2 + coeffs[0] / 2


def _terms(piece, dt):
    n32, n64, coeffs = piece
    return coeffs[:n32 if dt != np.float64 else n64]


def _scaled(x, series, odd: bool):
    """exp(-|x|) I(|x|) (times sign(x) for the odd order 1): the series of |x|'s piece of [0, 8] (each piece's
    values vary little, so the sum keeps its relative accuracy: one series on [0, 8] lost 8 float32 ulps of I1e
    near 8), or the series in 16 / |x| past 8."""
    dt = aval_of(x).dtype
    a = snp.abs(x)
    out = None
    for k, lo in enumerate((0, 2, 4, 6)):
        inside = (a >= lo) & (a < lo + 2) if lo else a < 2
        t = snp.where(inside, a, lo + 1) - (lo + 1)  # (exact: t in [-1, 1) of the piece)
        v = _clenshaw(t, _terms(series[k], dt))
        out = v if out is None else snp.where(inside, v, out)
    if odd:
        out = out * a
    far_a = snp.where(a >= 8, a, 16)
    far = _clenshaw(16 / far_a - 1, _terms(series[4], dt)) / snp.sqrt(far_a)
    out = snp.where(a >= 8, far, snp.where(snp.isnan(x), x, out))
    return snp.copysign(out, x) if odd else out  # (odd: -0.0 and negative x keep their sign)


def _wide(name, x):
    (x,) = _to_float(name, snp.asarray(x))
    if _dt.kind(aval_of(x).dtype) == "c":
        raise TypeError(f"{name} does not support complex-valued inputs")
    if aval_of(x).dtype in (np.float16, _dt.bfloat16):  # (computed in float32, rounded once)
        return x.astype(np.float32), aval_of(x).dtype
    return x, aval_of(x).dtype


@custom_jvp
def i0e(x):
    """exp(-|x|) I0(x)."""
    x, dt = _wide("i0e", x)
    return _scaled(x, I0_SERIES, False).astype(dt)


@custom_jvp
def i1e(x):
    """exp(-|x|) I1(x)."""
    x, dt = _wide("i1e", x)
    return _scaled(x, I1_SERIES, True).astype(dt)


def _exp_times(x, scaled):
    """exp(|x|) * scaled, as exp(|x| / 2)^2 * scaled where exp(|x|) alone would overflow before the product."""
    h = snp.exp(snp.abs(x) / 2)
    return h * scaled * h


@custom_jvp
def i0(x):
    """The modified Bessel function of the first kind, order 0."""
    x, dt = _wide("i0", x)
    return _exp_times(x, _scaled(x, I0_SERIES, False)).astype(dt)


@custom_jvp
def i1(x):
    """The modified Bessel function of the first kind, order 1."""
    x, dt = _wide("i1", x)
    return _exp_times(x, _scaled(x, I1_SERIES, True)).astype(dt)


def _over_x(num, x, at_zero):
    safe = snp.where(x == 0, 1, x)
    return snp.where(x == 0, at_zero, num / safe)


# derivatives (JAX's): I0' = I1, I1' = I0 - I1 / x (1/2 at 0); the scaled ones add -sign(x) times themselves
i0.defjvps(lambda g, ans, x: (g * i1(x)).astype(ans.dtype))
i1.defjvps(lambda g, ans, x: (g * snp.where(x == 0, 0.5, i0(x) - _over_x(ans, x, 0.0))).astype(ans.dtype))
i0e.defjvps(lambda g, ans, x: (g * (i1e(x) - snp.sign(x) * ans)).astype(ans.dtype))
i1e.defjvps(lambda g, ans, x: (g * snp.where(x == 0, 0.5, i0e(x) - ans * (snp.sign(x) + _over_x(1.0, x, 0.0))))
            .astype(ans.dtype))
# Eagerly one module at every size (`composites._long`): five Chebyshev sums over every element, ~380 steps
for _f in (i0, i1, i0e, i1e):
    _f.eager_module = True


def kaiser(M: int, beta):
    """The Kaiser window of M points: i0(beta sqrt(1 - ((n - a) / a)^2)) / i0(beta), a = (M - 1) / 2."""
    M = int(M)
    dt = _dt.default_float()
    if M <= 1:
        return snp.ones(M, dt)
    n = lax.iota(dt, M)
    alpha = 0.5 * (M - 1)
    return i0(beta * snp.sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(beta)
