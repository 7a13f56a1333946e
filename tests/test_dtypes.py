"""The whole promotion table, bfloat16 and weak types included, against JAX's (as JAX 0.10.2 computed it with
x64 enabled; re-derived live where JAX is installed). Row op column; `i*`, `f*`, `c*` are weak Python scalars."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from stagec import dtypes
from numpy_diff import jax, jnp

TABLE = """
     b1   u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i*   f*   c*
b1   b1   u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i*   f*   c*
u8   u8   u8   u16  u32  u64  i16  i16  i32  i64  bf16 f16  f32  f64  c64  c128 u8   f*   c*
u16  u16  u16  u16  u32  u64  i32  i32  i32  i64  bf16 f16  f32  f64  c64  c128 u16  f*   c*
u32  u32  u32  u32  u32  u64  i64  i64  i64  i64  bf16 f16  f32  f64  c64  c128 u32  f*   c*
u64  u64  u64  u64  u64  u64  f*   f*   f*   f*   bf16 f16  f32  f64  c64  c128 u64  f*   c*
i8   i8   i16  i32  i64  f*   i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i8   f*   c*
i16  i16  i16  i32  i64  f*   i16  i16  i32  i64  bf16 f16  f32  f64  c64  c128 i16  f*   c*
i32  i32  i32  i32  i64  f*   i32  i32  i32  i64  bf16 f16  f32  f64  c64  c128 i32  f*   c*
i64  i64  i64  i64  i64  f*   i64  i64  i64  i64  bf16 f16  f32  f64  c64  c128 i64  f*   c*
bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32  f32  f64  c64  c128 bf16 bf16 c64
f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f16  f32  f64  c64  c128 f16  f16  c64
f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64  c64  c128 f32  f32  c64
f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  c128 c128 f64  f64  c128
c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c128 c64  c128 c64  c64  c64
c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128
i*   i*   u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i*   f*   c*
f*   f*   f*   f*   f*   f*   f*   f*   f*   f*   bf16 f16  f32  f64  c64  c128 f*   f*   c*
c*   c*   c*   c*   c*   c*   c*   c*   c*   c*   c64  c64  c64  c128 c64  c128 c*   c*   c*
"""
_DT = {"b1": np.bool_, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "i8": np.int8,
       "i16": np.int16, "i32": np.int32, "i64": np.int64, "bf16": ml_dtypes.bfloat16, "f16": np.float16,
       "f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128}
_WEAK = {"i*": np.int64, "f*": np.float64, "c*": np.complex128}  # under x64
_header, *_rows = [line.split() for line in TABLE.strip().splitlines()]
CELLS = [(row[0], col, want) for row in _rows for col, want in zip(_header, row[1:])]


def _pair(code: str):
    return (np.dtype(_WEAK[code]), True) if code in _WEAK else (np.dtype(_DT[code]), False)


def _code(dtype: np.dtype, weak: bool) -> str:
    if weak:
        return {"i": "i*", "f": "f*", "c": "c*"}[dtypes.kind(dtype)]
    return next(k for k, v in _DT.items() if np.dtype(v) == dtype)


def test_promotion_table_matches_jax(x64):
    wrong = [(a, b, want, _code(*dtypes.result_type(_pair(a), _pair(b)))) for a, b, want in CELLS
             if _code(*dtypes.result_type(_pair(a), _pair(b))) != want]
    assert not wrong, f"(row, column, JAX's, ours): {wrong}"


@pytest.mark.skipif(jax is None, reason="re-derives the table live; the stored table above is checked without JAX")
def test_stored_table_is_what_jax_computes():
    scalar = {"i*": 1, "f*": 1.0, "c*": 1j}
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        for a, b, want in CELLS:
            if a in scalar and b in scalar:
                continue  # two Python scalars never meet in an array program
            x = scalar.get(a) if a in scalar else jnp.ones((), _DT[a])
            y = scalar.get(b) if b in scalar else jnp.ones((), _DT[b])
            r = jax.eval_shape(jnp.add, x, y)
            assert _code(np.dtype(r.dtype), r.weak_type) == want, (a, b)
    finally:
        jax.config.update("jax_enable_x64", before)


def test_bfloat16_helpers():
    bf = np.dtype(ml_dtypes.bfloat16)
    assert bf.kind == "V" and dtypes.kind(bf) == "f" and dtypes.is_float(bf) and not dtypes.is_int(bf)
    assert dtypes.finfo(bf).bits == 16 and dtypes.canonicalize("bfloat16") == bf
    with pytest.raises(TypeError, match="does not support dtype"):
        dtypes.canonicalize(np.dtype("V2"))


@pytest.mark.parametrize("dt", [np.bool_, np.uint8, np.uint16])
def test_products_of_bool_and_unsigned_operands_under_jit(dt):
    """bool, uint8 and uint16 operands of float products (`jnp.dot(uint8_images, W)`, a Dense layer on binarized
    images in JAX's examples/mnist_vae.py): IREE 3.13 folded their conversion into the matmul as a signed extension
    (true -> -1.0, uint8 200 -> -56.0) at O2/O3; the `unsigned-to-float` pass converts through int32. Against NumPy
    in float64; values with the top bit set."""
    import stagec
    import stagec.numpy as snp
    from stagec import lax
    rng = np.random.default_rng(3)
    if dt is np.bool_:
        a = rng.random((4, 16)) < 0.5
    else:
        bits = np.iinfo(dt).bits
        a = (rng.integers(0, 2 ** (bits - 1), (4, 16)) | (1 << (bits - 1))).astype(dt)
    w = rng.standard_normal((16, 8)).astype(np.float32)
    k = rng.standard_normal((3, 3, 1, 2)).astype(np.float32)
    want = a.astype(np.float64) @ w
    img = a.reshape(1, 4, 16, 1)
    want_conv = sum(img[0, i:i + 2, j:j + 14, 0, None].astype(np.float64) * k[i, j, 0] for i in range(3)
                    for j in range(3))
    dot, ein, conv = stagec.jit(lambda a, w, img, k: (
        snp.dot(a, w), snp.einsum("ij,jk->ik", a.astype(snp.float32), w),
        lax.conv_general_dilated(img.astype(snp.float32), k, (1, 1), "VALID",
                                 dimension_numbers=("NHWC", "HWIO", "NHWC"))))(a, w, img, k)
    scale = np.abs(want).max()
    np.testing.assert_allclose(np.asarray(dot), want, rtol=1e-5, atol=1e-5 * scale)
    np.testing.assert_allclose(np.asarray(ein), want, rtol=1e-5, atol=1e-5 * scale)
    np.testing.assert_allclose(np.asarray(conv)[0], want_conv, rtol=1e-5, atol=1e-5 * np.abs(want_conv).max())


@pytest.mark.parametrize("wide", [False, True])
def test_products_of_bool_and_unsigned_operands_widened_to_integers(wide, request):
    """`a.astype(int32) @ b` of bool or unsigned `a`: IREE 3.13 folded the conversion into the matmul as a signed
    extension (bool gave -(a @ b), uint8 200 read -56, uint32 to float64 likewise); the `unsigned-extensions-apart`
    pass reads such operands through a barrier. Default config and under x64; against NumPy (int64, wrapped to the
    result type, or float64); values with the top bit set."""
    import stagec
    if wide:
        request.getfixturevalue("x64")
    rng = np.random.default_rng(5)
    pairs = [(np.bool_, np.int8), (np.bool_, np.int32), (np.bool_, np.uint8), (np.uint8, np.int32), (np.uint8, np.uint32),
             (np.uint16, np.int32)]
    if wide:
        pairs += [(np.uint16, np.int64), (np.uint32, np.int64), (np.uint32, np.float64)]
    args = []
    for src, dst in pairs:
        if src is np.bool_:
            a = rng.random((4, 6)) < 0.5
        else:
            bits = np.iinfo(src).bits
            a = (rng.integers(0, 2 ** (bits - 1), (4, 6)) | (1 << (bits - 1))).astype(src)
        args += [a, rng.integers(1, 5, (6, 3)).astype(dst)]

    def f(*ab):
        return [(a.astype(b.dtype) @ b, b.T @ a.T.astype(b.dtype).T.T) for a, b in zip(ab[::2], ab[1::2])]

    for (got, got_t), a, b in zip(stagec.jit(f)(*args), args[::2], args[1::2]):
        want = a.astype(np.float64) @ b.astype(np.float64)
        want = want if b.dtype.kind == "f" else want.astype(np.int64).astype(b.dtype)
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{a.dtype} -> {b.dtype}")
        np.testing.assert_array_equal(np.asarray(got_t), want.T, err_msg=f"{a.dtype} -> {b.dtype}, right operand")


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_products_and_convolutions_sum_in_float32(dt):
    """float16 and bfloat16 products and convolutions sum in float32 and round once (as XLA): IREE 3.13 summed in the
    half type (a 40x40 float16 matmul: 1227 of 1600 results off, up to 8 ulps; eager kernels and jitted products
    under 64^3 multiply-adds alike). Against the float64 result rounded: within an ulp (float32's own rounding
    before the last one), nearly all exact. Eager and jitted; a 64^3 product (`upcast-half-dots`) too."""
    import stagec
    import stagec.numpy as snp
    from stagec import lax
    t = np.dtype(dt)
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((12, 40)).astype(t), rng.standard_normal((40, 9)).astype(t)
    big = rng.standard_normal((64, 64)).astype(t)
    img, k = rng.standard_normal((1, 1, 14, 14)).astype(t), rng.standard_normal((1, 1, 5, 5)).astype(t)
    f64 = lambda v: np.asarray(v).astype(np.float64)
    conv = sum(f64(img)[0, 0, i:i + 10, j:j + 10] * f64(k)[0, 0, i, j] for i in range(5) for j in range(5))
    wants = [f64(a) @ f64(b), f64(big) @ f64(big), conv[None, None]]

    def f(a, b, big, img, k):
        return a @ b, big @ big, lax.conv_general_dilated(img, k, (1, 1), "VALID")

    for got in (f(snp.asarray(a), snp.asarray(b), snp.asarray(big), snp.asarray(img), snp.asarray(k)),
                stagec.jit(f)(a, b, big, img, k)):
        for g, w in zip(got, wants):
            exact = w.astype(t)
            fi = ml_dtypes.finfo(t)
            ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(f64(exact)), float(fi.smallest_normal)))) - fi.nmant)
            ulps = np.abs(f64(g) - f64(exact)) / ulp
            assert g.dtype == t and ulps.max() <= 1 and (ulps > 0).mean() < 0.02, (ulps.max(), (ulps > 0).mean())


@pytest.mark.parametrize("dt", [np.float16, ml_dtypes.bfloat16])
def test_half_products_of_one_element_compile(dt):
    """A product of one-element half operands (`x @ x` of one float16): IREE 3.13 made it a `multiply` of half operands
    with a float32 result and failed to legalize it; `half-products-in-f32` widens such operands (exact either way).
    Found 2026-11-29 by random programs (float16 `var(x, keepdims=True) @ ...`)."""
    import stagec
    import stagec.numpy as snp
    x, y = np.array([1.5], dt), np.array([[-2.25]], dt)
    f = stagec.jit(lambda x, y: (x @ x, y @ y, x @ y))
    first, second = f(x, y), f(snp.asarray(x), snp.asarray(y))
    eager = (snp.asarray(x) @ snp.asarray(x), snp.asarray(y) @ snp.asarray(y), snp.asarray(x) @ snp.asarray(y))
    for a, b, c, want in zip(first, second, eager, (2.25, 5.0625, -3.375)):
        assert np.asarray(a).dtype == np.dtype(dt) and float(np.asarray(a).ravel()[0]) == want
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes() == np.asarray(c).tobytes()


def test_scalar_types_make_arrays_and_stand_for_numpy_types_as_in_jax():
    """`snp.float32(x)` is `asarray(x, float32)` (JAX's `jnp.float32(x)`, also of a traced x, where NumPy's
    `np.float32(tracer)` raised); the name still equals, hashes, converts and `isinstance`-checks as NumPy's type."""
    import stagec
    import stagec.numpy as snp
    got = stagec.jit(lambda x: (snp.float32(x) / 2, snp.int8(x * 100), snp.bool_(x)))(np.int32(3))
    assert [g.dtype for g in got] == [np.float32, np.int8, np.bool_]
    np.testing.assert_array_equal([np.asarray(g) for g in got], [1.5, 44, True])  # int8(300) wraps to 44
    y = snp.bfloat16([1.5, 2.0])
    assert isinstance(snp.float32(2.5), stagec.Array) and y.dtype == snp.bfloat16 and y.dtype == np.dtype("bfloat16")
    for t, n in ((snp.float32, np.float32), (snp.uint8, np.uint8), (snp.complex64, np.complex64), (snp.bool_, np.bool_)):
        assert t == n and n == t and np.dtype(t) == np.dtype(n) and hash(t) == hash(n) and {n: 1}[t] == 1
        assert isinstance(n(1), t) and not isinstance(1.0, t)
    assert snp.issubdtype(snp.float32, snp.floating) and snp.arange(3).astype(snp.float16).dtype == np.float16


# Under x64, the dtype JAX 0.10.2 computes an inexact function of an integer or bool array in (its
# `to_inexact_dtype`): float32 for bool and integers up to 32 bits, float64 for 64-bit ones; `rint` and `angle` take
# the default float (float64); an fft the complex type of that float. stagec took the default float for all of them.
_INEXACT_FUNCS = {
    "sin": lambda m, x: m.sin(x), "sqrt": lambda m, x: m.sqrt(x), "mean": lambda m, x: m.mean(x),
    "var": lambda m, x: m.var(x), "divide": lambda m, x: m.divide(x, x), "arctan2": lambda m, x: m.arctan2(x, x),
    "hypot": lambda m, x: m.hypot(x, x), "sinc": lambda m, x: m.sinc(x), "deg2rad": lambda m, x: m.deg2rad(x),
    "interp": lambda m, x: m.interp(x, x, x), "median": lambda m, x: m.median(x), "cov": lambda m, x: m.cov(x),
    "average": lambda m, x: m.average(x, weights=x), "fft": lambda m, x: m.fft.fft(x), "rint": lambda m, x: m.rint(x),
    "angle": lambda m, x: m.angle(x)}
_INEXACT_INPUTS = ("b1", "u8", "i16", "i32", "u32", "i64", "f16", "f32")


def _inexact_want(name: str, code: str) -> np.dtype:
    dt = np.dtype(_DT[code])
    f = dt if dt.kind == "f" else np.dtype(np.float64 if dt.itemsize == 8 or name in ("rint", "angle") else np.float32)
    return np.dtype(np.complex128 if f == np.float64 else np.complex64) if name == "fft" else f


@pytest.mark.parametrize("name", list(_INEXACT_FUNCS))
def test_inexact_functions_of_integers_compute_in_jaxs_type_under_x64(name, x64):
    import stagec.numpy as snp
    for code in _INEXACT_INPUTS:
        x = np.array([1, 2, 1, 3], _DT[code])
        got = np.asarray(_INEXACT_FUNCS[name](snp, x)).dtype
        assert got == _inexact_want(name, code), (name, code, got)


@pytest.mark.skipif(jax is None, reason="re-derives the expectations live; without JAX the stored rule is checked")
def test_inexact_function_types_are_what_jax_computes():
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        for name, f in _INEXACT_FUNCS.items():
            for code in _INEXACT_INPUTS:
                got = jax.eval_shape(lambda x: f(jnp, x), jnp.ones(4, _DT[code])).dtype
                assert np.dtype(got) == _inexact_want(name, code), (name, code, got)
    finally:
        jax.config.update("jax_enable_x64", before)


def test_special_functions_of_half_values_stay_half():
    """A module constant that was an np.float64 (multigammaln's log(pi) term) made float16 values float32, as JAX's
    stay float16; its derivative too. Values: SciPy's, within float16's rounding."""
    import math

    import stagec
    import stagec.scipy.special as sp
    x = np.array([1.5, 2.0, 4.25], np.float16)
    p, t = stagec.jvp(lambda v: sp.multigammaln(v, 2), (x,), (np.ones_like(x),))
    assert p.dtype == t.dtype == np.float16
    want = [math.log(math.pi) / 2 + math.lgamma(v) + math.lgamma(v - 0.5) for v in x.astype(float)]
    np.testing.assert_allclose(np.asarray(p, np.float64), want, rtol=2e-3)


@pytest.mark.parametrize("name", ["sin", "mean", "sinc", "interp", "fft", "rint", "angle"])
def test_inexact_functions_of_integers_compute_in_float32_by_default(name):
    """The default config (no x64), as JAX's: every integer or bool input computes in float32 (complex64), float16
    stays float16."""
    import stagec.numpy as snp
    for code in _INEXACT_INPUTS:
        got = np.asarray(_INEXACT_FUNCS[name](snp, np.array([1, 2, 1, 3], _DT[code]))).dtype
        want = np.dtype(np.float16 if code == "f16" else np.float32)
        assert got == (np.dtype(np.complex64) if name == "fft" else want), (name, code, got)
