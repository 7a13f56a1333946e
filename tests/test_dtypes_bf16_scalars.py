"""Conversions to bfloat16 (`passes.legalize.round_to_bf16`): IREE 3.13 did not round float16 at all, and dropped the
rounding of a one-element float32 or float64 round trip, on the CPU and on Vulkan: `convert(convert(x, bf16), f32)`
was x itself. Oracle: ml_dtypes."""
import functools

import ml_dtypes
import numpy as np
import pytest

import stagec
import stagec.lax as lax
import stagec.random as sr

BF16 = ml_dtypes.bfloat16
SPECIAL = np.array([0.3, 1.0000001, 3.4e38, 3.3961776e38, -0.0, np.inf, -np.inf, 1.00390625, 1.01171875,
                    -2.5e-3, 65504.0], np.float32)  # (ties to even at 1.0039, 1.0117; past bfloat16's max: inf)
# (no subnormals: IREE flushes them in the multiply)


def _bits(a):
    return np.asarray(a).view(np.uint16 if np.asarray(a).dtype == BF16 else np.uint32)


def _backends():
    from stagec.compiler.targets import device_names
    return ["cpu", pytest.param("vulkan", marks=pytest.mark.skipif(
        not device_names("vulkan"), reason="no Vulkan device: apt-get install mesa-vulkan-drivers libvulkan1"))]


CONVERSIONS = [(np.float32, ()), (np.float32, (1,)), (np.float32, (1, 1)), (np.float32, (3,)), (np.float16, ()),
               (np.float16, (2,)), (np.float16, (1000,)), (np.float64, ()), (np.float64, (1,)), (np.float64, (2,))]


@functools.cache
def _round_trips(backend) -> dict:
    """{(src, shape): [f(x) for x full of each value of SPECIAL, then of NaN]} for every case of CONVERSIONS on
    `backend` (Vulkan: no float64), f(x) = convert(convert(x, bfloat16), src) * 3: one module per backend, each case's
    x an argument of its own shape, not one module per case (the caller has x64 on)."""
    cases = [c for c in CONVERSIONS if not (backend == "vulkan" and c[0] == np.float64)]
    f = stagec.jit(lambda xs: [lax.convert_element_type(lax.convert_element_type(x, BF16), src) * src(3)
                               for x, (src, _) in zip(xs, cases)], backend=backend)
    out: dict = {c: [] for c in cases}
    with np.errstate(over="ignore"):
        values = [[*SPECIAL.astype(src), src(np.nan)] for src, _ in cases]
        for i in range(len(SPECIAL) + 1):
            for c, got in zip(cases, f([np.full(shape, vs[i], src) for (src, shape), vs in zip(cases, values)])):
                out[c].append(np.asarray(got))
    return out


@pytest.mark.parametrize("backend", _backends())
@pytest.mark.parametrize("src,shape", CONVERSIONS)
def test_conversions_to_bfloat16_round(src, shape, backend, x64):
    if backend == "vulkan" and src == np.float64:
        pytest.skip("no float64 on Vulkan")
    *outs, nan = _round_trips(backend)[(src, shape)]
    with np.errstate(over="ignore"):
        for v, got in zip(SPECIAL.astype(src), outs, strict=True):
            x = np.full(shape, v, src)
            want = x.astype(BF16).astype(src) * src(3)
            assert got.dtype == src
            np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"),
                                          err_msg=f"{v!r} {shape}")
    assert np.isnan(nan).all()


def test_bfloat16_gamma_draws_are_the_same_eager_and_jitted():
    """One program, one answer: eager bfloat16 gamma, loggamma and beta draws are jit's (both float32's draws rounded
    once; 413-813 of 1000 differed, the eager kernel's 0-d parameter rounded to bfloat16 by neither)."""
    k = sr.PRNGKey(3)
    cases = [(f, a) for f in (sr.gamma, sr.loggamma) for a in (0.3,)]  # (813 of 1000 gamma draws differed at 0.3)
    # (one module for the cases: each one's bfloat16 draws and float32's at the rounded alpha)
    jits = stagec.jit(lambda k: [(f(k, a, (500,), dtype=BF16), f(k, np.float32(BF16(a)), (500,), dtype=np.float32))
                                 for f, a in cases])(k)
    for (f, a), (jitted, wide) in zip(cases, jits):
        eager = f(k, a, (500,), dtype=BF16)
        rounded = np.asarray(wide).astype(BF16)
        np.testing.assert_array_equal(_bits(eager), _bits(jitted), err_msg=f"{f.__name__} {a}")
        np.testing.assert_array_equal(_bits(eager), _bits(rounded), err_msg=f"{f.__name__} {a}")


def test_bfloat16_gamma_family_is_float32s_rounded_once_eager_jitted_and_differentiated():
    """beta and dirichlet too (`random._bf16_via_f32`), and their gradients run (np.finfo refused bfloat16: grad of
    bfloat16 loggamma, beta and dirichlet raised) and agree eager and jitted, near float32's (itself checked against
    JAX's gradients in test_random.py)."""
    k = sr.PRNGKey(5)
    cases = ((sr.beta, (0.5, 2.0)), (sr.dirichlet, (np.array([0.5, 2.0, 3.0]),)))
    wides = [[np.asarray(a, np.float32).astype(BF16).astype(np.float32) for a in args] for _, args in cases]
    loss = lambda a, dt: sr.loggamma(k, a, (37,), dtype=dt).astype(np.float32).sum()  # noqa: E731
    # (one module for both samplers' bfloat16 draws, float32's at the rounded parameters and loggamma's gradient)
    jits, jitted_grad = stagec.jit(lambda k, a: (
        [(f(k, *args, (40,), dtype=BF16), f(k, *wide, (40,), dtype=np.float32)) for (f, args), wide in zip(cases, wides)],
        stagec.grad(lambda a: loss(a, BF16))(a)))(k, BF16(2.5))
    for (f, args), (jitted, wide) in zip(cases, jits):
        eager = f(k, *args, (40,), dtype=BF16)
        rounded = np.asarray(wide).astype(BF16)
        np.testing.assert_array_equal(_bits(eager), _bits(jitted), err_msg=f.__name__)
        np.testing.assert_array_equal(_bits(eager), _bits(rounded), err_msg=f.__name__)
    for f in (sr.loggamma,):  # (its gradient raised; gamma's is the same sampler's)
        eager = float(stagec.grad(lambda a: loss(a, BF16))(BF16(2.5)))
        jitted = float(jitted_grad)
        want = float(stagec.grad(lambda a: loss(a, np.float32))(np.float32(2.5)))
        assert eager == jitted and abs(eager - want) <= 0.02 * abs(want), (f.__name__, eager, jitted, want)
    g = stagec.grad(lambda a: sr.beta(k, a, 2.0, (10,), dtype=BF16).astype(np.float32).sum())(BF16(0.5))
    assert np.isfinite(float(g))


INTEGERS_16 = [np.uint16, np.int16]


def _integers_16(src):
    rng = np.random.default_rng(2)
    lo = 0 if src is np.uint16 else -30000
    a = rng.integers(lo, 30000 if lo else 60000, (4, 6, 8)).astype(src)
    a[:, 0, :3] = [8649, 8647, 259]  # (rounded down, up, and a tie to even: 8640, 8656, 260)
    return a


@functools.cache
def _integers_16_read(backend) -> list:
    """What f gives for each case of INTEGERS_16 on `backend`: one module per backend, not one per case."""
    def f(a):
        x = a.astype(BF16)
        return (stagec.numpy.where(x > x[:, :1], x, x[:, 1:2]), stagec.numpy.sum(x, axis=2, dtype=BF16),
                stagec.numpy.cumsum(x, axis=2, dtype=BF16), x * BF16(3))
    return stagec.jit(lambda arrays: [f(a) for a in arrays], backend=backend)([_integers_16(s) for s in INTEGERS_16])


@pytest.mark.parametrize("backend", _backends())
@pytest.mark.parametrize("src", INTEGERS_16)
def test_16_bit_integers_to_bfloat16_round_once_for_every_reader(src, backend):
    """`x = a.astype(bfloat16)` of 16-bit integers read by a compare, a sum and a cumulative sum: IREE 3.13 folded the
    rounding away in some dispatches (uint16 8649 stayed 8649 beside its rounded 8640), so `where(x > x[0], x, x[1])`
    took x itself in row 0 (every one of 200 random inputs). Against ml_dtypes."""
    a = _integers_16(src)
    got = _integers_16_read(backend)[INTEGERS_16.index(src)]
    x = a.astype(BF16)
    np.testing.assert_array_equal(_bits(got[0]), _bits(np.where(x > x[:, :1], x, x[:, 1:2])))
    np.testing.assert_array_equal(_bits(got[3]), _bits((x.astype(np.float32) * 3).astype(BF16)))
