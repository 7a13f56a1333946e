"""Every inexact elementwise function of stagec.numpy, stagec.lax, stagec.scipy.special and stagec.nn compiles for
every dtype it accepts on the GPU backends (issue 38): one module per dtype for CUDA (compiled only: no GPU needed)
and for Vulkan, whose results (lavapipe) are checked against NumPy in float64 / complex128. Where Vulkan cannot do a
function in a dtype (float64 functions, complex128 power) the error is a NotImplementedError naming the dtype."""
from __future__ import annotations

import math
import os
import zlib

import ml_dtypes
import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import lax, nn
from stagec.scipy import special

F, C = ("float16", "bfloat16", "float32", "float64"), ("complex64", "complex128")
DTYPES = F + C


def _sp(name):
    import scipy.special
    return getattr(scipy.special, name)


def _gelu64(x):
    return x * _sp("expit")(2 * math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))


def _mish64(x):
    return x * np.tanh(np.logaddexp(x, 0))


# name: (stagec function, NumPy/SciPy reference in float64 / complex128, arity, domain (lo, hi) of the real sample,
# whether it accepts complex)
U, B = 1, 2
TABLE = {
    "abs": (snp.abs, np.abs, U, None, True), "sign": (snp.sign, np.sign, U, None, True),
    "sqrt": (snp.sqrt, np.sqrt, U, (0, 1e3), True), "cbrt": (snp.cbrt, np.cbrt, U, None, False),
    "square": (snp.square, np.square, U, None, True), "reciprocal": (snp.reciprocal, np.reciprocal, U, None, True),
    "exp": (snp.exp, np.exp, U, (-10, 10), True), "exp2": (snp.exp2, np.exp2, U, (-10, 10), True),
    "expm1": (snp.expm1, np.expm1, U, (-10, 10), True), "log": (snp.log, np.log, U, (0, 1e3), True),
    "log2": (snp.log2, np.log2, U, (0, 1e3), True), "log10": (snp.log10, np.log10, U, (0, 1e3), True),
    "log1p": (snp.log1p, np.log1p, U, (-1, 1e3), True), "sin": (snp.sin, np.sin, U, None, True),
    "cos": (snp.cos, np.cos, U, None, True), "tan": (snp.tan, np.tan, U, (-1.5, 1.5), True),
    "arcsin": (snp.arcsin, np.arcsin, U, (-1, 1), True), "arccos": (snp.arccos, np.arccos, U, (-1, 1), True),
    "arctan": (snp.arctan, np.arctan, U, None, True), "sinh": (snp.sinh, np.sinh, U, (-10, 10), True),
    "cosh": (snp.cosh, np.cosh, U, (-10, 10), True), "tanh": (snp.tanh, np.tanh, U, None, True),
    "arcsinh": (snp.arcsinh, np.arcsinh, U, None, True), "arccosh": (snp.arccosh, np.arccosh, U, (1, 1e3), True),
    "arctanh": (snp.arctanh, np.arctanh, U, (-1, 1), True), "deg2rad": (snp.deg2rad, np.deg2rad, U, None, False),
    "rad2deg": (snp.rad2deg, np.rad2deg, U, None, False), "sinc": (snp.sinc, np.sinc, U, None, False),
    "lax.rsqrt": (lax.rsqrt, lambda x: 1 / np.sqrt(x), U, (0, 1e3), True),
    "lax.logistic": (lax.logistic, lambda x: 1 / (1 + np.exp(-x)), U, None, True),
    "lax.exp2": (lax.exp2, np.exp2, U, (-10, 10), True),
    "erf": (special.erf, lambda x: _sp("erf")(x), U, None, False),
    "erfc": (special.erfc, lambda x: _sp("erfc")(x), U, None, False),
    "erfinv": (special.erfinv, lambda x: _sp("erfinv")(x), U, (-1, 1), False),
    "gammaln": (special.gammaln, lambda x: _sp("gammaln")(x), U, (0, 30), False),
    "digamma": (special.digamma, lambda x: _sp("digamma")(x), U, (0, 30), False),
    "gamma": (special.gamma, lambda x: _sp("gamma")(x), U, (0, 8), False),
    "logit": (special.logit, lambda x: _sp("logit")(x), U, (0, 1), False),
    "ndtr": (special.ndtr, lambda x: _sp("ndtr")(x), U, None, False),
    "ndtri": (special.ndtri, lambda x: _sp("ndtri")(x), U, (0, 1), False),
    "log_ndtr": (special.log_ndtr, lambda x: _sp("log_ndtr")(x), U, None, False),
    "entr": (special.entr, lambda x: _sp("entr")(x), U, (0, 30), False),
    "sigmoid": (nn.sigmoid, lambda x: _sp("expit")(x), U, None, False),
    "softplus": (nn.softplus, lambda x: np.logaddexp(x, 0), U, None, False),
    "log_sigmoid": (nn.log_sigmoid, lambda x: -np.logaddexp(-x, 0), U, None, False),
    "silu": (nn.silu, lambda x: x * _sp("expit")(x), U, None, False),
    "gelu": (nn.gelu, _gelu64, U, None, False),
    "gelu_exact": (lambda x: nn.gelu(x, approximate=False), lambda x: x * _sp("ndtr")(x), U, None, False),
    "mish": (nn.mish, _mish64, U, None, False), "elu": (nn.elu, lambda x: np.where(x > 0, x, np.expm1(x)), U, None, False),
    "log1mexp": (nn.log1mexp, lambda x: np.where(x < math.log(2), np.log(-np.expm1(-x)), np.log1p(-np.exp(-x))), U,
                 (0, 30), False),
    "squareplus": (nn.squareplus, lambda x: (x + np.sqrt(x * x + 4)) / 2, U, None, False),
    "power": (snp.power, np.power, B, (0, 3), True), "float_power": (snp.float_power, np.power, B, (0, 3), True),
    "divide": (snp.divide, np.divide, B, None, True), "arctan2": (snp.arctan2, np.arctan2, B, None, False),
    "hypot": (snp.hypot, np.hypot, B, None, False), "logaddexp": (snp.logaddexp, np.logaddexp, B, None, False),
    "logaddexp2": (snp.logaddexp2, np.logaddexp2, B, None, False), "fmod": (snp.fmod, np.fmod, B, None, False),
    "remainder": (snp.remainder, np.remainder, B, None, False),
    "xlogy": (special.xlogy, lambda x, y: _sp("xlogy")(x, y), B, (0, 30), False),
    "xlog1py": (special.xlog1py, lambda x, y: _sp("xlog1py")(x, y), B, (0, 30), False),
    "betaln": (special.betaln, lambda x, y: _sp("betaln")(x, y), B, (0.1, 30), False),
}


def _names(dtype: str) -> list:
    return [n for n, t in TABLE.items() if dtype in F or t[4]]


def _args(name: str, dtype: str, n: int = 16) -> list:
    """`n` values per argument of `name` in its domain (moderate: every dtype's range), as `dtype`."""
    _, _, arity, dom, _ = TABLE[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    lo, hi = dom or (-4, 4)
    out = []
    for _ in range(arity):
        x = rng.uniform(max(lo, -4) if hi > 4 else lo, min(hi, 4 if lo < -4 else hi), n)
        if dtype.startswith("complex"):
            x = x + 1j * rng.uniform(-2, 2, n)
        out.append(x.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype))
    return out


def _run_all(fns, groups):
    """The function of the flat arguments that applies each of `fns` to its group of them."""
    sizes = [len(g) for g in groups]

    def every(*flat):
        outs, i = [], 0
        for f, k in zip(fns, sizes):
            outs.append(f(*flat[i:i + k]))
            i += k
        return outs
    return every, [a for g in groups for a in g]


class _wide:
    """enable_x64 for the 64-bit dtypes."""
    def __init__(self, dtype):
        self.on = dtype in ("float64", "complex128")

    def __enter__(self):
        self.old = stagec.config.enable_x64
        stagec.config.update("enable_x64", self.on or self.old)

    def __exit__(self, *exc):
        stagec.config.update("enable_x64", self.old)


# The whole matrix compiles in about 450 CPU-s here (each dtype's module 8-10 s per backend, and lavapipe compiles
# its shaders again): the suite runs every function once per backend, in dtypes taken in turn, and
# STAGEC_FULL_COVERAGE=1 every function in every dtype (docs/accuracy.md).
FULL = bool(os.environ.get("STAGEC_FULL_COVERAGE"))
_WHY = "the whole function x dtype matrix: STAGEC_FULL_COVERAGE=1 (about 450 CPU-s)"
VULKAN = ("float16", "bfloat16", "float32", "complex64")
# what Vulkan refuses in a dtype it otherwise has (complex64 logistic was, until passes/special.py's expansion: IREE
# 3.13 lowers its NaN guard to a select of complex values, which SPIR-V lacks)
VULKAN_REFUSES: set = set()
TOLERANCE = {"gammaln": 40, "betaln": 40}  # (float32 gammaln near its negative zeros: docs/accuracy.md)


def _rotation(dtypes) -> list:
    """(name, dtype) for every function: the dtypes it accepts of `dtypes`, taken in turn."""
    out = []
    for i, n in enumerate(TABLE):
        ok = [d for d in dtypes if (d in F or TABLE[n][4]) and (n, d) not in VULKAN_REFUSES]
        out.append((n, ok[i % len(ok)]))
    return out


def _full(dtypes):
    return [pytest.param(d, marks=pytest.mark.skipif(not FULL, reason=_WHY)) for d in dtypes]


def _cases(pairs):
    groups = [_args(n, d) for n, d in pairs]
    every, args = _run_all([TABLE[n][0] for n, _ in pairs], groups)
    return groups, every, args


def _vulkan():
    from stagec.compiler.targets import device_names
    return pytest.mark.skipif(not device_names("vulkan"), reason="no Vulkan device: apt-get install mesa-vulkan-drivers")


def _ulps(got, want, dtype) -> np.ndarray:
    """|got - want| in units of `dtype`'s epsilon times max(|want|, the dtype's smallest normal)."""
    fi = ml_dtypes.finfo(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    got = np.asarray(got).astype(np.complex128)
    with np.errstate(all="ignore"):
        err = np.abs(got - want) / (float(fi.eps) * np.maximum(np.abs(want), float(fi.tiny)))
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    return np.where(same, 0, np.where(np.isnan(err), np.inf, err))


def _check(pairs, groups, outs):
    bad = []
    for (n, dtype), g, got in zip(pairs, groups, outs):
        wide = [a.astype(np.complex128 if dtype.startswith("complex") else np.float64) for a in g]
        with np.errstate(all="ignore"):
            want = np.asarray(TABLE[n][1](*wide))
        err = _ulps(got, want, dtype)
        if err.max() > TOLERANCE.get(n, 8):
            j = int(np.argmax(err))
            bad.append(f"{dtype} {n}({', '.join(repr(a[j]) for a in g)}) = {np.asarray(got)[j]!r}, not {want[j]!r}")
    assert not bad, bad


def _run_vulkan(pairs):
    groups, every, args = _cases(pairs)
    _check(pairs, groups, stagec.jit(every, backend="vulkan")(*args))


@_vulkan()
def test_every_function_on_vulkan():
    """Every function once, in float16, bfloat16, float32 or complex64 in turn, in one module run on lavapipe, against
    NumPy within 8 epsilons of the value (the bounds of each function are tests/test_accuracy*.py's; this one catches
    a lowering that is wrong or missing)."""
    pairs = _rotation(VULKAN)
    assert {d for _, d in pairs} == set(VULKAN)
    _run_vulkan(pairs)


@_vulkan()
def test_vulkan_runs_complex64_logistic():
    z = np.array([0.5 + 1j, -2 + 0.25j], np.complex64)
    got = np.asarray(stagec.jit(stagec.lax.logistic, backend="vulkan")(z))
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-z.astype(np.complex128))), rtol=1e-6)


@_vulkan()
@pytest.mark.parametrize("dtype", _full(VULKAN))
def test_every_function_in_every_dtype_on_vulkan(dtype):
    _run_vulkan([(n, dtype) for n in _names(dtype) if (n, dtype) not in VULKAN_REFUSES])


@_vulkan()
@pytest.mark.parametrize("dtype", _full(("float64", "complex128")))
def test_vulkan_wide_dtypes_run_or_say_why(dtype):
    """float64 and complex128 on Vulkan: each function alone either runs right or raises a NotImplementedError naming
    the dtype (SPIR-V's GLSL functions take 16/32-bit floats; IREE lowers complex128 power to a select SPIR-V lacks)."""
    done, refused = [], []
    with _wide(dtype):
        for n in _names(dtype):
            g = _args(n, dtype)
            try:
                done.append(((n, dtype), g, stagec.jit(TABLE[n][0], backend="vulkan")(*g)))
            except NotImplementedError as e:
                assert "float64" in str(e) or dtype in str(e), (n, str(e))
                refused.append(n)
    _check(*zip(*done))
    assert done and refused, (done, refused)
