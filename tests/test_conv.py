"""Convolutions whose window is wider than their output (weight gradients) are emitted as patches . kernel
(`stagec.primitives.conv._conv_as_dot`): the same numbers as a float64 loop oracle in every layout, with strides,
padding (negative too), both dilations and feature groups; gradients against central differences."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

import stagec
import stagec.numpy as snp
from stagec import lax


def _conv_ref(x, w, strides, pads, lhs_dil, rhs_dil, groups):
    """NCHW/OIHW convolution by loops in float64 (the oracle); negative padding crops."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    n, c, *sp = x.shape
    o, ci, *ks = w.shape
    xd = np.zeros((n, c, *[(d - 1) * ld + 1 for d, ld in zip(sp, lhs_dil)]))
    xd[(slice(None), slice(None)) + tuple(slice(None, None, ld) for ld in lhs_dil)] = x
    xp = np.pad(xd, [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in pads])
    xp = xp[(slice(None), slice(None)) + tuple(slice(max(-lo, 0), xp.shape[2 + i] - max(-hi, 0))
                                               for i, (lo, hi) in enumerate(pads))]
    keff = [(k - 1) * rd + 1 for k, rd in zip(ks, rhs_dil)]
    out_sp = [(xp.shape[2 + i] - keff[i]) // strides[i] + 1 for i in range(len(sp))]
    out, og = np.zeros((n, o, *out_sp)), o // groups
    for idx in np.ndindex(*out_sp):
        for kidx in np.ndindex(*ks):
            pos = tuple(i * s + k * rd for i, s, k, rd in zip(idx, strides, kidx, rhs_dil))
            patch = xp[(slice(None), slice(None)) + pos]
            for g in range(groups):
                out[(slice(None), slice(g * og, (g + 1) * og)) + idx] += \
                    patch[:, g * ci:(g + 1) * ci] @ w[(slice(g * og, (g + 1) * og), slice(None)) + kidx].T
    return out


def _perm(spec: str, canonical: str) -> list[int]:
    """Axes of an array laid out as `spec` in the order `canonical` (e.g. 'NHWC' -> 'NCHW')."""
    return [spec.index(c) for c in canonical]


WIDE = [  # (x NCHW, w OIHW, strides, padding, lhs_dilation, rhs_dilation, groups, layouts): output < window
    ((2, 3, 6, 6), (4, 3, 5, 5), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 1, ("NCHW", "OIHW", "NCHW")),
    ((2, 3, 7, 6), (4, 3, 5, 4), (2, 1), ((1, 2), (-1, 1)), (1, 1), (1, 1), 1, ("NHWC", "HWIO", "NHWC")),
    ((1, 4, 5, 6), (6, 2, 4, 3), (1, 2), ((1, 1), (0, 2)), (1, 1), (1, 2), 2, ("NHWC", "OHWI", "NCHW")),
    ((2, 2, 4, 3), (3, 2, 6, 4), (1, 1), ((0, 1), (1, 0)), (2, 2), (1, 1), 1, ("CHWN", "IHWO", "HWNC")),
    ((3, 2, 11), (2, 2, 8), (1,), ((2, 1),), (1,), (1,), 1, ("NWC", "WIO", "NWC")),
    ((1, 2, 4, 4, 5), (2, 2, 3, 3, 4), (1, 1, 1), ((0, 0), (0, 0), (0, 0)), (1, 1, 1), (1, 1, 1), 1,
     ("NDHWC", "DHWIO", "NDHWC")),
    # more than SLICED_POSITIONS output positions: the patches as one gather (without groups)
    ((2, 3, 12, 12), (4, 3, 7, 7), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 1, ("NCHW", "OIHW", "NCHW")),
    ((2, 2, 10, 9), (3, 2, 12, 10), (1, 1), ((0, 1), (1, 0)), (2, 2), (1, 1), 1, ("CHWN", "IHWO", "HWNC")),
    ((1, 4, 12, 12), (6, 2, 8, 8), (1, 2), ((1, 1), (0, 2)), (1, 1), (1, 1), 2, ("NHWC", "OHWI", "NCHW")),
    ((3, 2, 80), (2, 2, 30), (1,), ((2, 1),), (1,), (2,), 1, ("NWC", "WIO", "NWC")),
]
GATHERED = [c for c in WIDE[-4:] if c[6] == 1]


def _setup(case, dtype=np.float64):
    """(conv function, its operands in the case's layouts, NCHW x and OIHW w, the output's transpose to NC...)."""
    xs, ws, st, pads, ld, rd, g, dn = case
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    lhs_c, rhs_c = "NC" + dn[0].replace("N", "").replace("C", ""), "OI" + dn[1].replace("O", "").replace("I", "")
    out_c = "NC" + dn[2].replace("N", "").replace("C", "")
    xl = np.transpose(x, np.argsort(_perm(dn[0], lhs_c)))  # from NC... into the layout dn[0]
    wl = np.transpose(w, np.argsort(_perm(dn[1], rhs_c)))
    f = lambda a, b: lax.conv_general_dilated(a, b, st, pads, ld, rd, dimension_numbers=dn, feature_group_count=g)
    return f, (xl, wl), (x, w), _perm(dn[2], out_c)


def _run(case, dtype=np.float64):
    f, (xl, wl), (x, w), perm = _setup(case, dtype)
    got = np.transpose(np.asarray(stagec.jit(f)(xl, wl)), perm)
    return got, _conv_ref(x, w, *case[2:7]), stagec.make_mlir(f)(xl, wl)


@functools.cache
def _wide_float64() -> list:
    """Every WIDE case's float64 convolution, jitted in one module (one compile, not one per case)."""
    setups = [_setup(case) for case in WIDE]
    got = stagec.jit(lambda ops: [f(a, b) for (f, *_), (a, b) in zip(setups, ops)])([s[1] for s in setups])
    return [np.transpose(np.asarray(g), s[3]) for g, s in zip(got, setups)]


@pytest.mark.parametrize("case", WIDE)
def test_wide_window_conv_is_a_dot_and_matches_loops(x64, case):
    f, (xl, wl), (x, w), _ = _setup(case)
    text = stagec.make_mlir(f)(xl, wl)
    assert "stablehlo.convolution" not in text and "stablehlo.dot_general" in text
    # (more than 16 positions, no groups: one gather, not a slice per position, each an IREE dispatch)
    assert ("stablehlo.gather" in text and "stablehlo.slice" not in text) == (case in GATHERED)
    np.testing.assert_allclose(_wide_float64()[WIDE.index(case)], _conv_ref(x, w, *case[2:7]), rtol=1e-12, atol=1e-12)


def test_wide_window_conv_float32():
    got, want, _ = _run(WIDE[1], np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_narrow_window_conv_stays_a_convolution():
    x, w = np.ones((1, 2, 8, 8), np.float32), np.ones((3, 2, 3, 3), np.float32)
    assert "stablehlo.convolution" in stagec.make_mlir(lambda a, b: lax.conv(a, b, (1, 1), "SAME"))(x, w)


def _central(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


GRAD_CASES = [((1, 1), "SAME", (1, 1)), ((2, 1), ((1, 0), (2, 1)), (1, 2))]


def _weight_grad_case(strides, pads, rd):
    """(loss of the weights, the weights, the float64 NumPy loss) of an NHWC/HWIO convolution."""
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((3, 7, 6, 2)), rng.standard_normal((3, 2, 2, 4))
    dn = ("NHWC", "HWIO", "NHWC")
    conv = lambda x, w: lax.conv_general_dilated(x, w, strides, pads, rhs_dilation=rd, dimension_numbers=dn)
    ct = rng.standard_normal(stagec.eval_shape(conv, x, w).shape)  # (its shape: no eager run, no compile)
    loss = lambda w: snp.sum(conv(x, w) * ct)
    pads_ = lax.padtype_to_pads((7, 6), (3, 2), strides, pads) if isinstance(pads, str) else pads
    to_nchw = lambda w: np.transpose(w, (3, 2, 0, 1))
    ref = lambda w: np.sum(np.transpose(_conv_ref(np.transpose(x, (0, 3, 1, 2)), to_nchw(w), strides, pads_, (1, 1),
                                                  rd, 1), (0, 2, 3, 1)) * ct)
    return loss, w, ref


@functools.cache
def _weight_grads() -> list:
    """Every GRAD_CASES weight gradient, jitted in one module (one compile, not one per case)."""
    cases = [_weight_grad_case(*c) for c in GRAD_CASES]
    return stagec.jit(lambda ws: [stagec.grad(loss)(w) for (loss, *_), w in zip(cases, ws)])([c[1] for c in cases])


@pytest.mark.parametrize("strides,pads,rd", GRAD_CASES)
def test_weight_gradient_matches_central_differences(x64, strides, pads, rd):
    """The weight gradient of an NHWC/HWIO convolution (a wide-window convolution, emitted as a dot)."""
    loss, w, ref = _weight_grad_case(strides, pads, rd)
    assert "stablehlo.convolution" not in stagec.make_mlir(stagec.grad(loss))(w)
    got = _weight_grads()[GRAD_CASES.index((strides, pads, rd))]
    np.testing.assert_allclose(got, _central(ref, w), rtol=1e-6, atol=1e-7)


def test_complex_convolution_matches_loops(x64):
    """A complex convolution (four real ones; iree-compile crashes on a complex `convolution`)."""
    rng = np.random.default_rng(3)
    c = lambda *s: rng.standard_normal(s) + 1j * rng.standard_normal(s)
    x, w = c(2, 2, 6, 5), c(3, 2, 3, 2)
    args = ((1, 2), ((1, 0), (2, 1)), (1, 1), (1, 1), 1)
    ref = lambda a, b: _conv_ref(a, b, *args)
    want = ref(x.real, w.real) - ref(x.imag, w.imag) + 1j * (ref(x.real, w.imag) + ref(x.imag, w.real))
    got = lax.conv_general_dilated(x, w, *args[:4])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _full_convolution(a, b):
    """scipy.signal.convolve(a, b, 'full') in float64 NumPy: b's shifted copies of a, summed."""
    out = np.zeros([m + n - 1 for m, n in zip(a.shape, b.shape)], np.result_type(a, b, np.float64))
    for idx in np.ndindex(*b.shape):
        out[tuple(slice(i, i + m) for i, m in zip(idx, a.shape))] += a * b[idx]
    return out


def _scipy_mode(full, s1, s2, mode):
    """SciPy's "same" (centred, in1's shape) and "valid" (no zero padding) parts of a full convolution."""
    if mode == "full":
        return full
    shape = s1 if mode == "same" else [abs(m - n) + 1 for m, n in zip(s1, s2)]
    start = [(f - s) // 2 for f, s in zip(full.shape, shape)] if mode == "same" else \
        [min(m, n) - 1 for m, n in zip(s1, s2)]
    return full[tuple(slice(st, st + n) for st, n in zip(start, shape))]


@pytest.mark.parametrize("s1,s2", [((9,), (4,)), ((3,), (8,)), ((7, 6), (3, 2)), ((2, 3), (5, 6)), ((5, 4, 6), (2, 3, 3))])
def test_scipy_signal_matches_numpy(x64, s1, s2):
    from stagec.scipy import signal
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal(s1), rng.standard_normal(s2) + 1j * rng.standard_normal(s2)
    modes = ("full", "same", "valid")
    got = stagec.jit(lambda a, b: (  # every mode of both in one module
        [(signal.convolve(a, b, m), signal.correlate(a, b, m)) for m in modes],
        signal.convolve2d(a, b.real, "same") if len(s1) == 2 else None))(a, b)
    for mode, (conv, corr) in zip(modes, got[0]):
        want = _scipy_mode(_full_convolution(a, b), s1, s2, mode)
        np.testing.assert_allclose(conv, want, rtol=1e-12, atol=1e-12, err_msg=mode)
        want = _scipy_mode(_full_convolution(a, np.flip(np.conj(b))), s1, s2, mode)
        np.testing.assert_allclose(corr, want, rtol=1e-12, atol=1e-12, err_msg=mode)
    if len(s1) == 2:
        np.testing.assert_allclose(got[1], _scipy_mode(_full_convolution(a, b.real), s1, s2, "same"), atol=1e-12)
    assert signal.convolve(np.arange(4), np.array([1, 2])).dtype == np.float64  # integers convolve as floats
    with pytest.raises(NotImplementedError, match="fftconvolve"):
        signal.fftconvolve  # noqa: B018


def _grouped_case(layout):
    """(loss of the weights in `layout`, the weights in it, back to OIHW, the float64 NumPy loss of OIHW weights)."""
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((6, 1, 3, 3))  # NCHW, OIHW: 3 groups
    dn = ("NHWC", "HWIO", "NHWC") if layout == "NHWC" else ("NCHW", "OIHW", "NCHW")
    xl = np.transpose(x, (0, 2, 3, 1)) if layout == "NHWC" else x
    to_l = (lambda w: np.transpose(w, (2, 3, 1, 0))) if layout == "NHWC" else (lambda w: w)
    from_l = (lambda w: np.transpose(w, (3, 2, 0, 1))) if layout == "NHWC" else (lambda w: w)
    conv = lambda w: lax.conv_general_dilated(xl, w, (1, 2), "SAME", dimension_numbers=dn, feature_group_count=3)
    ct = rng.standard_normal(stagec.eval_shape(conv, to_l(w)).shape)  # (its shape: no eager run, no compile)
    loss = lambda w: snp.sum(conv(w) * ct)
    out_l = (lambda y: np.transpose(y, (0, 2, 3, 1))) if layout == "NHWC" else (lambda y: y)
    ref = lambda w: np.sum(out_l(_conv_ref(x, w, (1, 2), ((1, 1), (1, 1)), (1, 1), (1, 1), 3)) * ct)
    return loss, to_l(w), from_l, w, ref


LAYOUTS = ["NHWC", "NCHW"]


@functools.cache
def _grouped_grads() -> list:
    """Both layouts' weight gradients, jitted in one module (one compile, not two)."""
    cases = [_grouped_case(layout) for layout in LAYOUTS]
    return stagec.jit(lambda ws: [stagec.grad(loss)(w) for (loss, *_), w in zip(cases, ws)])([c[1] for c in cases])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_grouped_weight_gradient_matches_central_differences(x64, layout):
    """A depthwise convolution's weight gradient has batch groups (emitted as a dot batched over the groups)."""
    loss, wl, from_l, w, ref = _grouped_case(layout)
    assert "stablehlo.convolution" not in stagec.make_mlir(stagec.grad(loss))(wl)
    got = from_l(np.asarray(_grouped_grads()[LAYOUTS.index(layout)]))
    np.testing.assert_allclose(got, _central(ref, w), rtol=1e-6, atol=1e-7)


def test_unsigned_operands_widen_unsigned_and_float_operands_refuse_an_integer_result():
    """uint8 operands with preferred_element_type int32 were widened as signed by IREE (a 3x3 window of 200s gave
    9 * (-56)^2 = 28224, not 360000); float operands with an integer result type are a TypeError, as in JAX."""
    u = np.full((1, 1, 3, 4), 200, np.uint8)
    w = np.array([[[[250, 1], [2, 255]]]], np.uint8)
    f = lambda x, k: [lax.conv_general_dilated(x, k, (1, 1), "VALID", preferred_element_type=t)
                      for t in (np.int32, np.uint32, np.float32)] + \
        [lax.conv_general_dilated(x, x[..., :3, :3], (1, 1), "VALID", preferred_element_type=np.int32)]
    got = stagec.jit(f)(u, w)
    want = _conv_ref(u, w, (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 1)
    for r, t in zip(got, (np.int32, np.uint32, np.float32)):
        assert r.dtype == t
        np.testing.assert_array_equal(np.asarray(r), want.astype(t))
    np.testing.assert_array_equal(np.asarray(got[3]), [[[[360000, 360000]]]])
    with pytest.raises(TypeError, match="preferred_element_type"):
        lax.conv_general_dilated(np.ones((1, 1, 2, 2), np.float32), np.ones((1, 1, 2, 2), np.float32), (1, 1),
                                 "VALID", preferred_element_type=np.int32)


# A window stride that leaves rows past the last window, next to padding or lhs dilation (or in 3-D alone), did
# not compile (iree-compile: "'linalg.generic' op inferred input/output operand #1 has shape's dimension #0 to be
# 4, but found 3"); the padding's high side is now cut by those rows. The last case is one where XLA:CPU (JAX
# 0.10.2) gives other values (garbage in two of its four) for negative padding; stagec's match the loops.
REMAINDERS = [  # (x NCHW, w OIHW, strides, padding, lhs_dilation, rhs_dilation, groups)
    ((1, 1, 4, 2), (1, 1, 3, 1), (2, 1), ((0, 0), (0, 0)), (1, 2), (1, 1), 1),
    ((2, 3, 1, 3), (1, 3, 3, 2), (2, 1), ((3, 0), (2, 1)), (1, 2), (1, 2), 1),
    ((2, 4, 7, 5), (2, 2, 1, 3), (3, 3), ((-1, 3), (-2, 2)), (2, 1), (1, 1), 2),
    ((1, 3, 5, 6), (2, 3, 2, 1), (2, 2), ((-2, 0), (1, -1)), (1, 1), (1, 1), 1),
    ((1, 3, 4, 5, 5), (1, 3, 1, 3, 1), (3, 3, 2), ((0, 0), (0, 0), (0, 0)), (1, 1, 1), (1, 1, 1), 1),
    ((1, 3, 3, 5), (2, 3, 2, 2), (3, 3), ((-2, 1), (-1, 1)), (1, 1), (1, 1), 1),
]


def test_strides_past_the_last_window_next_to_padding(x64):
    rng = np.random.default_rng(6)
    ops = [(rng.standard_normal(xs), rng.standard_normal(ws)) for xs, ws, *_ in REMAINDERS]
    got = stagec.jit(lambda ops: [lax.conv_general_dilated(x, w, st, p, ld, rd, feature_group_count=g)
                                  for (x, w), (_, _, st, p, ld, rd, g) in zip(ops, REMAINDERS)])(ops)
    for (x, w), case, r in zip(ops, REMAINDERS, got):
        np.testing.assert_allclose(r, _conv_ref(x, w, *case[2:]), rtol=1e-12, atol=1e-12, err_msg=str(case))


def test_half_and_widened_depthwise_convolutions_compile():
    """A float16 or bfloat16 depthwise convolution, and a float32 one of two operands widened from float16, did not
    compile (iree-compile folded the widening into the grouped convolution: "'tensor.collapse_shape' op expected
    collapsed type to be 'tensor<3x1x3xf16>', but got 'tensor<3x1x3xf32>'"); `grouped-conv-kernels-apart`."""
    import ml_dtypes
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((2, 3, 7, 6)), rng.standard_normal((3, 1, 3, 2))
    conv = lambda x, w: lax.conv_general_dilated(x, w, (1, 2), "SAME", feature_group_count=3)
    f32 = lambda a: a.astype(np.float32)
    halves = [(x.astype(t), w.astype(t)) for t in (np.float16, ml_dtypes.bfloat16)]
    got = stagec.jit(lambda hs: [conv(a, b) for a, b in hs] + [conv(f32(a), f32(b)) for a, b in hs])(halves)
    for r, (a, b), tol in zip(got, halves + halves, (2e-3, 1e-2, 1e-6, 1e-6)):
        want = _conv_ref(f32(a), f32(b), (1, 2), ((1, 1), (0, 1)), (1, 1), (1, 1), 3)
        assert r.dtype == a.dtype or r.dtype == np.float32
        np.testing.assert_allclose(f32(np.asarray(r)), want, rtol=tol, atol=tol * 4)


def _window_ref(x, op, wd, ws, pads, bd):
    """reduce_window by loops in float64: base dilation's holes and padding hold the identity (negative padding
    crops)."""
    fill = {"sum": 0.0, "max": -np.inf, "min": np.inf}[op]
    xd = np.full([(d - 1) * b + 1 for d, b in zip(x.shape, bd)], fill)
    xd[tuple(slice(None, None, b) for b in bd)] = x
    xp = np.pad(xd, [(max(lo, 0), max(hi, 0)) for lo, hi in pads], constant_values=fill)
    xp = xp[tuple(slice(max(-lo, 0), n - max(-hi, 0)) for (lo, hi), n in zip(pads, xp.shape))]  # negative: crops
    out = [(p - w) // s + 1 if p >= w else 0 for p, w, s in zip(xp.shape, wd, ws)]
    red = {"sum": np.sum, "max": np.max, "min": np.min}[op]
    res = np.zeros(out)
    for idx in np.ndindex(*out):
        res[idx] = red(xp[tuple(slice(i * s, i * s + w) for i, s, w in zip(idx, ws, wd))])
    return res


WINDOWS = [  # (shape, op, window, strides, padding, base dilation): each failed to compile before
    ((2,), "sum", (2,), (2,), ((0, 1),), (1,)),  # a remainder past the last window next to padding
    ((3,), "min", (3,), (1,), ((1, 2),), (1,)),  # a window as long as the operand, padded unevenly
    ((4,), "max", (4,), (1,), ((3, 1),), (1,)),
    ((1, 2, 3), "min", (2, 2, 1), (3, 3, 3), ((1, 0), (2, 0), (1, 1)), (1, 1, 1)),
    ((3, 6), "sum", (2, 1), (3, 2), ((0, 1), (0, 0)), (1, 1)),
    # with base dilation (IREE read wrong values through negative padding there: [1, 3, 5, 0, ...], not [1, 0, 0,
    # 3, ...], for the first)
    ((5,), "sum", (1,), (2,), ((0, 1),), (3,)),
    ((4, 3, 2), "max", (2, 1, 2), (3, 3, 3), ((1, 2), (0, 1), (1, 0)), (3, 2, 1)),
    ((3, 4), "min", (2, 2), (2, 3), ((-1, 1), (2, -1)), (2, 2)),
]


def test_reduce_window_remainders_and_whole_windows(x64):
    rng = np.random.default_rng(8)
    xs = [rng.standard_normal(c[0]) for c in WINDOWS]
    fns = {"sum": lax.reduce_window_sum, "max": lax.reduce_window_max, "min": lax.reduce_window_min}
    got = stagec.jit(lambda xs: [fns[op](x, wd, ws, p, bd) for x, (_, op, wd, ws, p, bd) in zip(xs, WINDOWS)])(xs)
    for x, case, r in zip(xs, WINDOWS, got):
        np.testing.assert_allclose(r, _window_ref(x, *case[1:]), rtol=1e-12, atol=1e-12, err_msg=str(case))
    # JAX's reduce_window: 'SAME' from the operand's own shape (not the base-dilated one), unit strides and
    # 'VALID' by default; a max with no window has a (empty) derivative
    x = np.ones((5, 6))  # (shapes only: no compile)
    assert stagec.eval_shape(lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 3), "SAME", (1, 3)),
                             x).shape == (5, 5)
    assert stagec.eval_shape(lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2)), x).shape == (4, 5)
    empty_max = lambda x: lax.reduce_window_max(x, (3,), (2,), "VALID").sum()
    assert stagec.eval_shape(stagec.grad(empty_max), np.ones(1)).shape == (1,)


def test_group_count_mismatches_are_value_errors_as_in_jax():
    """JAX's shape rule raises ValueError for these; stagec raised TypeError (no compile: shapes only)."""
    for xs, ws, fg, bg in [((1, 4, 5), (2, 3, 2), 1, 1), ((1, 4, 5), (3, 2, 2), 2, 1), ((3, 4, 5), (2, 4, 2), 1, 2),
                           ((2, 4, 5), (3, 4, 2), 1, 2)]:
        f = lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID", feature_group_count=fg, batch_group_count=bg)
        with pytest.raises(ValueError, match="conv_general_dilated"):
            stagec.eval_shape(f, np.ones(xs, np.float32), np.ones(ws, np.float32))


def _patch_copies(f, *args) -> tuple[int, str]:
    low = stagec.jit(f).lower(*args)
    return (sum(next(s for s in low.pass_stats if s.name == "patches-as-one-copy").rewrites.values()),
            low.as_text("final"))


@pytest.mark.parametrize("case", [c for c in WIDE if c not in GATHERED])
def test_sliced_patches_reach_iree_as_one_copy(case):
    """The CPU pipeline's `patches-as-one-copy` makes the slices of `_conv_as_dot`'s patches one copy (IREE gave each
    slice a dispatch of its own); the values are `test_wide_window_conv_is_a_dot_and_matches_loops`', made by the
    default pipeline."""
    f, (xl, wl), _, _ = _setup(case, np.float32)
    n, text = _patch_copies(f, xl, wl)
    assert n == 1 and "stablehlo.concatenate" not in text and "linalg.generic" in text


def test_patches_of_spatial_axes_in_another_order_are_one_copy(x64):
    """An input laid out NWHC against an HWIO kernel: its patches step over W before H (the grid's order is not the
    axes' order); one copy, the values of the float64 loop oracle."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 3, 6, 7)), rng.standard_normal((4, 3, 5, 4))  # NCHW, OIHW
    f = lambda a, b: lax.conv_general_dilated(a, b, (1, 2), ((1, 0), (0, 1)), rhs_dilation=(1, 1),
                                              dimension_numbers=("NWHC", "HWIO", "NHWC"))
    xl, wl = x.transpose(0, 3, 2, 1), w.transpose(2, 3, 1, 0)
    n, text = _patch_copies(f, xl, wl)
    assert n == 1 and "stablehlo.concatenate" not in text
    got = np.asarray(stagec.jit(f)(xl, wl)).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(got, _conv_ref(x, w, (1, 2), ((1, 0), (0, 1)), (1, 1), (1, 1), 1), rtol=1e-12,
                               atol=1e-12)


def _kernel_grad_ref(x, g, ks, strides, pads, rd):
    """d/dw of sum(conv(x, w) * g) for NCHW x, OIHW w, NCHW g, by loops in float64: sum over the batch and the
    output positions of g times the input element each kernel element met."""
    xp = np.pad(np.asarray(x, np.float64), [(0, 0), (0, 0), *pads])
    dw = np.zeros((g.shape[1], x.shape[1], *ks))
    for kidx in np.ndindex(*ks):
        window = tuple(slice(k * d, k * d + (n - 1) * s + 1, s) for k, d, n, s in zip(kidx, rd, g.shape[2:], strides))
        dw[(slice(None), slice(None)) + kidx] = np.einsum("bip,bop->oi", xp[(slice(None), slice(None)) + window].reshape(
            x.shape[0], x.shape[1], -1), np.asarray(g, np.float64).reshape(g.shape[0], g.shape[1], -1))
    return dw


@hyp_settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=st.tuples(st.integers(1, 5), st.integers(1, 5)), s=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       rd=st.tuples(st.integers(1, 2), st.integers(1, 2)), pad=st.integers(0, 2), nhwc=st.booleans())
@example(k=(4, 4), s=(1, 1), rd=(1, 1), pad=1, nhwc=True)  # (16 positions: the last sliced)
@example(k=(3, 6), s=(1, 2), rd=(1, 1), pad=0, nhwc=False)  # (18: gathered)
def test_kernel_gradients_across_the_sliced_positions_bound(x64, k, s, rd, pad, nhwc):
    """Kernel gradients of 1 to 25 positions: up to `SLICED_POSITIONS` (16) the patches are slices the CPU's
    `patches-as-one-copy` makes one copy, past it one gather; against the float64 loop oracle."""
    rng = np.random.default_rng(sum(k) + 7 * sum(s))
    x, w = rng.standard_normal((2, 3, 11, 10)), rng.standard_normal((4, 3, *k))  # NCHW, OIHW
    pads = ((pad, pad), (pad, 1))
    dn = ("NHWC", "HWIO", "NHWC") if nhwc else ("NCHW", "OIHW", "NCHW")
    xl, wl = (x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0)) if nhwc else (x, w)
    conv = lambda xl, wl: lax.conv_general_dilated(xl, wl, s, pads, rhs_dilation=rd, dimension_numbers=dn)
    out = np.asarray(stagec.jit(conv)(xl, wl))
    g = rng.standard_normal(out.shape)
    dwl = np.asarray(stagec.jit(stagec.grad(lambda wl: snp.sum(conv(xl, wl) * g)))(wl))
    dw = dwl.transpose(3, 2, 0, 1) if nhwc else dwl
    gc = g.transpose(0, 3, 1, 2) if nhwc else g
    np.testing.assert_allclose(dw, _kernel_grad_ref(x, gc, k, s, pads, rd), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype, copies", [(np.float32, 1), (np.float16, 1), (np.int32, 1), (np.int8, 1), (np.uint8, 0),
                                           (np.bool_, 0)])
def test_a_grid_of_stacked_windows_is_one_copy_in_signless_dtypes(dtype, copies):
    """`stack` of the 3x3 grid of 5x6 windows of an array, column offsets stepping by 2 (user code, not a
    convolution): one copy where the elements are floats or signed integers of 8 bits or more; unsigned integers (a
    linalg op takes signless ones only) and booleans are left to IREE."""
    x = (np.arange(9 * 12).reshape(9, 12) % 7).astype(dtype)
    f = lambda x: snp.stack([x[i:i + 5, 2 * j:2 * j + 6] for i in range(3) for j in range(3)], axis=1)
    n, text = _patch_copies(f, x)
    assert n == copies and ("stablehlo.concatenate" in text) == (copies == 0)
    want = np.stack([x[i:i + 5, 2 * j:2 * j + 6] for i in range(3) for j in range(3)], axis=1)
    got = np.asarray(stagec.jit(f)(x))
    assert got.dtype == want.dtype and np.array_equal(got, want)
