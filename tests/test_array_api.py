"""The Python Array API standard (2024.12), function by function from its specification: every name of the core
and of the linalg and fft extensions with its keyword parameters, the type promotion table, the special cases of
the elementwise functions, the functions whose rules differ from NumPy's, the array object (namespace, devices,
in-place operators, item assignment, DLPack), with x64 off and on. `array_api_strict` (the reference
implementation) is the oracle where installed; the tables here come from the specification itself."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import stagec
import stagec.numpy as snp

try:
    import array_api_strict as xps
except ImportError:  # the specification's own tables below still check everything else
    xps = None

from numpy_diff import x64mode as x64  # noqa: F401 (a fixture; overrides conftest's x64 with both modes)


# ---------------------------------------------------------------- names and signatures (from the specification)

# name: keyword parameters the standard gives it (positional-only parameters are not named by callers).
CORE = {
    # creation
    "arange": "start stop step dtype device", "asarray": "dtype device copy", "empty": "dtype device",
    "empty_like": "dtype device", "eye": "k dtype device", "from_dlpack": "device copy", "full": "dtype device",
    "full_like": "dtype device", "linspace": "num dtype device endpoint", "meshgrid": "indexing",
    "ones": "dtype device", "ones_like": "dtype device", "tril": "k", "triu": "k", "zeros": "dtype device",
    "zeros_like": "dtype device",
    # data types
    "astype": "copy device", "can_cast": "", "finfo": "", "iinfo": "", "isdtype": "", "result_type": "",
    # manipulation
    "broadcast_arrays": "", "broadcast_to": "shape", "concat": "axis", "expand_dims": "axis", "flip": "axis",
    "moveaxis": "", "permute_dims": "axes", "repeat": "axis", "reshape": "shape copy", "roll": "shift axis",
    "squeeze": "axis", "stack": "axis", "tile": "", "unstack": "axis",
    # searching, sets, sorting
    "argmax": "axis keepdims", "argmin": "axis keepdims", "count_nonzero": "axis keepdims", "nonzero": "",
    "searchsorted": "side sorter", "where": "", "unique_all": "", "unique_counts": "", "unique_inverse": "",
    "unique_values": "", "argsort": "axis descending stable", "sort": "axis descending stable",
    # statistics and utilities
    "cumulative_prod": "axis dtype include_initial", "cumulative_sum": "axis dtype include_initial",
    "max": "axis keepdims", "mean": "axis keepdims", "min": "axis keepdims", "prod": "axis dtype keepdims",
    "std": "axis correction keepdims", "sum": "axis dtype keepdims", "var": "axis correction keepdims",
    "all": "axis keepdims", "any": "axis keepdims", "diff": "axis n prepend append",
    # indexing, linear algebra
    "take": "axis", "take_along_axis": "axis", "matmul": "", "matrix_transpose": "", "tensordot": "axes",
    "vecdot": "axis",
    # elementwise
    **{f: "" for f in """abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift
       bitwise_invert bitwise_or bitwise_right_shift bitwise_xor ceil conj copysign cos cosh divide equal exp
       expm1 floor floor_divide greater greater_equal hypot imag isfinite isinf isnan less less_equal log log1p
       log2 log10 logaddexp logical_and logical_not logical_or logical_xor maximum minimum multiply negative
       nextafter not_equal positive pow real reciprocal remainder round sign signbit sin sinh square sqrt
       subtract tan tanh trunc""".split()},
    "clip": "min max",
}
LINALG = {"cholesky": "upper", "cross": "axis", "det": "", "diagonal": "offset", "eigh": "", "eigvalsh": "",
          "inv": "", "matmul": "", "matrix_norm": "keepdims ord", "matrix_power": "", "matrix_rank": "rtol",
          "matrix_transpose": "", "outer": "", "pinv": "rtol", "qr": "mode", "slogdet": "", "solve": "",
          "svd": "full_matrices", "svdvals": "", "tensordot": "axes", "trace": "offset dtype", "vecdot": "axis",
          "vector_norm": "axis keepdims ord"}
FFT = {**{f: "n axis norm" for f in "fft ifft rfft irfft hfft ihfft".split()},
       **{f: "s axes norm" for f in "fftn ifftn rfftn irfftn".split()},
       "fftfreq": "d dtype device", "rfftfreq": "d dtype device", "fftshift": "axes", "ifftshift": "axes"}


@pytest.mark.parametrize("table,module", [(CORE, "snp"), (LINALG, "snp.linalg"), (FFT, "snp.fft")])
def test_every_function_with_its_keywords(table, module):
    mod = {"snp": snp, "snp.linalg": snp.linalg, "snp.fft": snp.fft}[module]
    missing, bad = [], []
    for name, kws in table.items():
        fn = getattr(mod, name, None)
        if fn is None:
            missing.append(name)
            continue
        params = inspect.signature(fn).parameters
        var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
        bad += [f"{name}({k}=)" for k in kws.split() if k not in params and not var_kw
                or k in params and params[k].kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL)]
    assert missing == [] and bad == [], (missing, bad)
    for const in ("e", "inf", "nan", "newaxis", "pi"):
        assert hasattr(snp, const)


def test_namespace_and_inspection(x64):
    x = snp.asarray(np.arange(3.0, dtype=np.float32))
    assert x.__array_namespace__() is snp and x.__array_namespace__(api_version="2024.12") is snp
    seen = []
    stagec.jit(lambda t: seen.append(t.__array_namespace__()) or t)(np.ones(2, np.float32))
    assert seen == [snp]
    info = snp.__array_namespace_info__()
    assert set(info.capabilities()) == {"boolean indexing", "data-dependent shapes", "max dimensions"}
    assert info.default_device() in info.devices() and x.device == info.default_device()
    want = np.float64 if x64 else np.float32
    assert info.default_dtypes() == {"real floating": want, "complex floating": np.complex128 if x64 else np.complex64,
                                     "integral": np.int64 if x64 else np.int32,
                                     "indexing": np.int64 if x64 else np.int32}
    assert ("float64" in info.dtypes()) == x64 and set(info.dtypes(kind="bool")) == {"bool"}
    assert set(info.dtypes(kind=("real floating", "complex floating"))) == (
        {"float32", "float64", "complex64", "complex128"} if x64 else {"float32", "complex64"})
    assert snp.isdtype(np.int8, "signed integer") and snp.isdtype(np.uint8, ("bool", "integral"))
    assert not snp.isdtype(np.float32, "integral") and snp.isdtype(np.complex64, "numeric")
    assert snp.can_cast(np.int8, np.int16) and not snp.can_cast(np.float32, np.int32)
    assert snp.can_cast(x, np.complex64) and not snp.can_cast(np.int32, np.uint32)
    with pytest.raises(ValueError, match="kind"):
        snp.isdtype(np.int8, "integer")


# ---------------------------------------------------------------- type promotion (the specification's table)

_I = ["int8", "int16", "int32", "int64"]
_U = ["uint8", "uint16", "uint32", "uint64"]
_F = ["float32", "float64"]
_C = ["complex64", "complex128"]


def _spec_promote(a: str, b: str) -> str | None:
    """The standard's promotion table: within a kind the wider; signed with unsigned the signed type wide
    enough for both (none past int64); real with complex the complex of the wider precision. Mixed kinds
    (integer with float) are not defined."""
    bits = lambda t: int("".join(c for c in t if c.isdigit()))
    ka, kb = a.rstrip("0123456789"), b.rstrip("0123456789")
    if ka == kb:
        return a if bits(a) >= bits(b) else b
    if {ka, kb} == {"int", "uint"}:
        s, u = (a, b) if ka == "int" else (b, a)
        need = max(bits(s), 2 * bits(u))
        return f"int{need}" if need <= 64 else None
    if {ka, kb} == {"float", "complex"}:
        f, c = (a, b) if ka == "float" else (b, a)
        return f"complex{max(2 * bits(f), bits(c))}"
    return None


def test_promotion_table(x64):
    narrow = lambda t: t if x64 else {"int64": "int32", "uint64": "uint32", "float64": "float32",
                                      "complex128": "complex64"}.get(t, t)
    types = ["bool"] + _I + _U + _F + _C
    wrong = []
    for a in types:
        for b in types:
            want = "bool" if a == b == "bool" else (None if "bool" in (a, b) else _spec_promote(a, b))
            if want is None:
                continue
            got = snp.result_type(np.dtype(narrow(a)), np.dtype(narrow(b)))
            if not x64 and (a.endswith("64") or b.endswith("64")) and "complex" not in a + b:
                continue  # 64-bit types do not exist with x64 off (they narrow to 32 bits)
            if got != np.dtype(narrow(want)):
                wrong.append((a, b, str(got), want))
    assert wrong == []
    # Python scalars take the array's dtype within a kind; an operation computes in the promoted type.
    got = _out_dtypes(lambda i, u, f, c: [i + 1, i * 2.5, snp.add(i, u), snp.multiply(f, c), f + 1.5, c * 1j],
                      np.ones(2, np.int8), np.ones(2, np.uint8), np.ones(2, np.float32), np.ones(2, np.complex64))
    dfloat = np.float64 if x64 else np.float32
    assert got == [np.int8, dfloat, np.int16, np.complex64, np.float32, np.complex64]


# ---------------------------------------------------------------- elementwise special cases

_SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.5, 3.0, 1e-30, 10.0, 0.7,
                     -0.3], np.float32)
_UNARY = """abs acos acosh asin asinh atan atanh ceil cos cosh exp expm1 floor isfinite isinf isnan log log1p log2
    log10 logical_not negative positive reciprocal round sign signbit sin sinh sqrt square tan tanh trunc""".split()
_BINARY = """add atan2 copysign divide equal floor_divide greater greater_equal hypot less less_equal logaddexp
    maximum minimum multiply nextafter not_equal pow remainder subtract""".split()


def _same(got, want, name, rtol):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    if want.dtype == np.bool_:
        assert (got == want).all(), (name, got, want)
        return
    nan_ok = np.isnan(got) == np.isnan(want)
    exact = (got == want) & (np.signbit(got) == np.signbit(want))
    close = np.isfinite(want) & (np.abs(got - want) <= rtol * np.abs(want) + 1e-37)
    ok = nan_ok & (np.isnan(want) | exact | close)
    assert ok.all(), (name, _SPECIAL if got.ndim == 1 else "pairs", got[~ok], want[~ok])


_UNARY_JIT = stagec.jit(lambda x: [getattr(snp, f)(x) if f != "logical_not" else snp.logical_not(x != 0)
                                   for f in _UNARY])
_BINARY_JIT = stagec.jit(lambda x, y: [getattr(snp, f)(x, y) for f in _BINARY])


@pytest.mark.skipif(xps is None, reason="array_api_strict (the oracle) is not installed")
def test_elementwise_special_cases():
    """Every unary and binary elementwise float function on the specification's special values (NaN, +-inf,
    +-0, +-1, halves, tiny and huge) against the reference implementation: signed zeros, NaNs and infinities
    exactly, finite values to float32 rounding."""
    xs = xps.asarray(_SPECIAL)
    for name, got in zip(_UNARY, _UNARY_JIT(_SPECIAL)):
        want = getattr(xps, name)(xs if name != "logical_not" else xs != 0)
        _same(got, np.asarray(want), name, 4e-6)
    a, b = (np.array(v, np.float32) for v in zip(*[(p, q) for p in _SPECIAL for q in _SPECIAL]))
    for name, got in zip(_BINARY, _BINARY_JIT(a, b)):
        _same(got, np.asarray(getattr(xps, name)(xps.asarray(a), xps.asarray(b))), name, 4e-6)


def test_trig_of_large_arguments():
    """Range-reduced in float64 (IREE 3.13's float32 ops gave cos(1e10) = -1.3e20, cos(1e30) = -inf)."""
    x = np.array([1e5, 1e10, 1e30], np.float32)
    got = _UNARY_JIT(x)
    for f in ("sin", "cos", "tan"):
        np.testing.assert_allclose(got[_UNARY.index(f)], getattr(np, f)(x), rtol=1e-5, atol=1e-6)


def test_nextafter_hypot_copysign_without_oracle():
    x = np.array([1.0, -1.0, 0.0, -0.0, np.inf, np.nan, 3.0, 3e30], np.float32)
    y = np.array([2.0, -2.0, -1.0, 1.0, 0.0, 1.0, 3.0, 4e30], np.float32)
    na, cs, hy = _BINARY_JIT(x, y)[_BINARY.index("nextafter")], *[_BINARY_JIT(x, y)[_BINARY.index(f)]
                                                                     for f in ("copysign", "hypot")]
    np.testing.assert_array_equal(na, np.nextafter(x, y))
    np.testing.assert_array_equal(cs, np.copysign(x, y))
    np.testing.assert_allclose(hy, np.hypot(x, y), rtol=1e-6)  # 3e30, 4e30 -> 5e30: no overflow


# ---------------------------------------------------------------- functions whose rules differ from NumPy's


def _out_dtypes(fn, *args):
    """The result dtypes of `fn` traced on `args` (lowered, not compiled)."""
    return [a.dtype for a in stagec.jit(fn).lower(*args).graph.out_avals]


def test_statistics_dtypes(x64):
    """sum/prod/cumulative_*: signed integers -> the default integer, unsigned -> the unsigned integer of its
    width, bool -> default integer, floats keep theirs; mean/var/std keep the float type; dtype= wins."""
    dint = np.dtype(np.int64 if x64 else np.int32)
    duint = np.dtype(np.uint64 if x64 else np.uint32)
    i8, u8, b, f32 = np.ones(3, np.int8), np.ones(3, np.uint8), np.ones(3, bool), np.ones((2, 3), np.float32)
    for fn in (snp.sum, snp.prod, snp.cumulative_sum, snp.cumulative_prod):
        got = _out_dtypes(lambda i, u, c, f: [fn(i), fn(u), fn(f, axis=1), fn(c), fn(i, dtype=np.int16)], i8, u8, b,
                          f32)
        assert got == [dint, duint, np.float32, dint, np.int16], fn
    for fn in (snp.mean, snp.var, snp.std):
        assert _out_dtypes(lambda f: [fn(f), fn(f, axis=0, keepdims=True)], f32) == [np.float32] * 2
    v = np.array([1.0, 2.0, 4.0], np.float32)
    got = stagec.jit(lambda t: [snp.var(t, correction=1), snp.std(t, correction=0.5)])(v)
    np.testing.assert_allclose(got, [np.var(v, ddof=1), np.sqrt(np.sum((v - v.mean()) ** 2) / 2.5)], rtol=1e-6)


def test_cumulative_with_include_initial():
    x = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
    s, p, r, e = stagec.jit(lambda x, r, e: (  # one module
        snp.cumulative_sum(x, axis=1, include_initial=True), snp.cumulative_prod(x, axis=0, include_initial=True),
        snp.cumulative_sum(r), snp.cumulative_sum(e, include_initial=True)))(x, np.arange(4), np.zeros(0, np.float32))
    np.testing.assert_array_equal(s, np.concatenate([np.zeros((2, 1), int), np.cumsum(x, 1)], 1))
    np.testing.assert_array_equal(p, np.concatenate([np.ones((1, 3), int), np.cumprod(x, 0)], 0))
    np.testing.assert_array_equal(r, np.cumsum(np.arange(4)))
    assert e.shape == (1,) and float(e[0]) == 0.0
    with pytest.raises(ValueError, match="axis must be given"):
        snp.cumulative_sum(x)


def _manipulations(m, x):
    """The standard's manipulation functions where NumPy has the same rule (m: the namespace)."""
    parts = m.unstack(x, axis=1) if m is snp else tuple(np.moveaxis(x, 1, 0))
    a, b, c = m.arange(2.0), m.arange(3.0), m.arange(4.0)
    return [parts[2], m.moveaxis(x, (0, 1), (2, 0)), m.concatenate([x, x], axis=None) if m is np else
            m.concat([x, x], axis=None), m.repeat(x, 2, axis=2), m.repeat(x[0, 0], m.asarray([1, 0, 2, 1])),
            m.repeat(x[0], 2), m.tile(x[0], (2, 1, 2)), m.swapaxes(x, -1, -2),
            m.diff(x, axis=1, n=2), m.diff(x[0, 0], prepend=-1.0, append=m.asarray([9.0])),
            *m.meshgrid(a, b, c, indexing="xy"), *m.meshgrid(a, b, c, indexing="ij"),
            *[m.eye(3, 4, k=k) for k in (-2, 0, 1, 4)],
            m.clip(x, m.full((4,), 3.0), m.asarray([5.0, 6, 7, 30])), m.minimum(x, 7) if m is np else
            m.clip(x, max=m.asarray(7.0)), x if m is np else m.clip(x),
            m.sum(x * x[0], axis=-1) if m is np else m.vecdot(x, x[0]),
            m.sum(x * x, axis=0) if m is np else m.vecdot(x, x, axis=0)]


def test_manipulation():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    got = stagec.jit(lambda t: _manipulations(snp, t))(x)
    for i, (g, w) in enumerate(zip(got, _manipulations(np, x))):
        assert g.shape == w.shape, i
        np.testing.assert_array_equal(g, w, err_msg=str(i))
    assert isinstance(snp.unstack(x[0]), tuple) and len(snp.unstack(x, axis=2)) == 4
    np.testing.assert_array_equal(snp.asarray(x).mT, np.swapaxes(x, -1, -2))


def test_searching_and_sets():
    s = np.array([1.0, 2.0, 2.0, 5.0], np.float32)
    v = np.array([[0.0, 2.0], [3.0, np.nan]], np.float32)
    s2 = np.array([1.0, 2.0, 2.0, np.nan, np.nan], np.float32)  # NaNs sort last: a NaN query goes after them on the right
    v2 = np.array([np.nan, 2.0, 0.0, 5.0, np.inf], np.float32)
    rng = np.random.default_rng(2)  # (a binary search: every length around the powers of two, both sides)
    cases = [(np.sort(rng.integers(0, 20, n)).astype(np.int32), rng.integers(-2, 23, (5, 7)).astype(np.int32))
             for n in (0, 1, 2, 3, 7, 8, 9, 1023, 1024, 1025)]
    got, got_cases = stagec.jit(lambda a, b, a2, b2, cases: (
        [snp.searchsorted(a, b), snp.searchsorted(a, b, side="right"),
         snp.searchsorted(a[::-1], b, sorter=np.arange(4)[::-1]),
         snp.searchsorted(a2, b2), snp.searchsorted(a2, b2, side="right")],
        [[snp.searchsorted(a, q, side=side) for side in ("left", "right")] for a, q in cases]))(
        s, v, s2, v2, cases)  # one module
    for g, side in zip(got[:3], ("left", "right", "left")):
        np.testing.assert_array_equal(g, np.searchsorted(s, v, side=side))
    for g, side in zip(got[3:], ("left", "right")):
        np.testing.assert_array_equal(g, np.searchsorted(s2, v2, side=side))
    for (a, q), g in zip(cases, got_cases):
        for side, gs in zip(("left", "right"), g):
            np.testing.assert_array_equal(gs, np.searchsorted(a, q, side=side), err_msg=f"{len(a)} {side}")
    x = np.array([[3, 1, 3], [2, 1, 1]], np.int32)
    v, i, inv, c = snp.unique_all(x)
    wv, wi, winv, wc = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    for g, w in ((v, wv), (i, wi), (inv, winv.reshape(x.shape)), (c, wc)):
        np.testing.assert_array_equal(g, w)
    assert inv.shape == x.shape
    np.testing.assert_array_equal(snp.unique_values(np.array([np.nan, 1.0, np.nan])), [1.0, np.nan, np.nan])
    assert snp.unique_counts(x).counts.tolist() == [3, 1, 2]
    assert snp.unique_inverse(x).inverse_indices.shape == (2, 3)
    with pytest.raises(Exception, match="unique_values"):
        stagec.jit(snp.unique_values)(x)


# ---------------------------------------------------------------- creation, copies and devices


def test_creation_devices_and_copies(x64):
    dev = snp.__array_namespace_info__().default_device()
    for arr in (snp.zeros(2, device=dev), snp.ones(2, device=stagec.default_backend()), snp.empty(2, device=dev),
                snp.full(2, 7, device=dev), snp.arange(3, device=dev), snp.linspace(0, 1, 3, device=dev),
                snp.eye(2, device=dev), snp.zeros_like(np.ones(2), device=dev), snp.asarray([1, 2], device=dev),
                snp.fft.fftfreq(4, device=dev), snp.from_dlpack(np.arange(3), device=dev)):
        assert arr.device == dev
    assert snp.ones(2).dtype == (np.float64 if x64 else np.float32)
    x = snp.asarray(np.arange(3, dtype=np.int32))
    assert snp.asarray(x) is x and snp.asarray(x, copy=False) is x
    y = snp.asarray(x, copy=True)
    assert y is not x
    np.testing.assert_array_equal(y, x)
    x[0] = 7  # the copy shares x's buffer until then: assigning rebinds x, y keeps the old values
    np.testing.assert_array_equal(y, [0, 1, 2])
    np.testing.assert_array_equal(x, [7, 1, 2])
    x = snp.asarray(np.arange(3, dtype=np.int32))
    with pytest.raises(ValueError, match="copy=False"):
        snp.asarray(x, dtype=np.float32, copy=False)
    assert x.astype(np.int32, copy=False) is x and x.astype(np.int32) is not x
    assert x.to_device(dev) is x and snp.asarray(x, device=dev) is x
    np.testing.assert_array_equal(np.from_dlpack(x), [0, 1, 2])
    assert x.__dlpack_device__() == (1, 0)
    with pytest.raises(TypeError, match="device"):
        snp.zeros(2, device=3)


# ---------------------------------------------------------------- the array object: in-place operators, item assignment


def test_inplace_operators_rebind_and_keep_dtype_and_shape():
    x = snp.asarray(np.arange(3.0, dtype=np.float32))
    y = x
    y += 1  # a new array bound to y (JAX's semantics): x is unchanged
    np.testing.assert_array_equal(x, [0, 1, 2])
    np.testing.assert_array_equal(y, [1, 2, 3])
    y *= 2
    np.testing.assert_array_equal(y, [2, 4, 6])
    i = snp.asarray(np.arange(4, dtype=np.int32))
    i -= 1
    np.testing.assert_array_equal(i, [-1, 0, 1, 2])
    with pytest.raises(TypeError, match="dtype"):
        i += 1.5  # int32 + float would change the array's dtype
    with pytest.raises(ValueError, match="shape"):
        i += snp.ones((2, 4), dtype=np.int32)  # broadcasting would change its shape
    assert all(hasattr(snp.ndarray, f"__i{op}__") for op in
               "add sub mul truediv floordiv mod pow matmul and or xor lshift rshift".split())


def test_setitem_on_concrete_arrays():
    """Eager Arrays take item assignment (a new buffer, as scikit-learn's estimators need); slices taken before
    are copies; `array` copies; traced arrays raise JAX's error pointing to .at[]."""
    x = snp.asarray(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    alias, row, copy = x, x[0], snp.array(x)
    x[0, 1] = 10
    x[x > 4] = -1
    np.testing.assert_array_equal(x, [[0, -1, 2], [3, 4, -1]])
    assert alias is x
    np.testing.assert_array_equal(row, [0, 1, 2])
    np.testing.assert_array_equal(copy, [[0, 1, 2], [3, 4, 5]])
    assert x.dtype == np.float32 and x.shape == (2, 3)
    with pytest.raises(TypeError, match=r"x.at\[idx\].set\(y\)"):
        stagec.jit(lambda t: t.__setitem__(0, 1.0))(x)


# ---------------------------------------------------------------- the linalg and fft extensions


@pytest.mark.skipif(xps is None, reason="array_api_strict (the oracle) is not installed")
def test_linalg_and_fft_extensions_against_the_reference():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 3)).astype(np.float32)
    z = (rng.standard_normal((2, 8)) + 1j * rng.standard_normal((2, 8))).astype(np.complex64)
    X = xps.asarray

    def ext(m, a, z):  # the decompositions are checked against LAPACK in test_linalg.py
        return [m.linalg.matrix_norm(a, ord="fro"), m.linalg.vector_norm(a, axis=(1, 2), ord=3),
                m.linalg.trace(a, offset=1), m.linalg.diagonal(a, offset=-1), m.linalg.cross(a, a[:, ::-1, ...]),
                m.linalg.vecdot(a, a, axis=-2), m.linalg.matrix_power(a, 3), m.linalg.outer(a[0, 0, ...], a[0, 1, ...]),
                m.linalg.tensordot(a, a[0, ...], axes=2), m.linalg.matrix_transpose(a), m.fft.fft(z, norm="ortho"),
                m.fft.ifftn(z, s=(2, 4)), m.fft.hfft(z, n=6), m.fft.ihfft(a[0, 0, ...]), m.fft.irfft(z, axis=0),
                m.fft.fftshift(z, axes=1)]
    checks = list(zip(stagec.jit(lambda t, u: ext(snp, t, u))(a, z), ext(xps, X(a), X(z))))
    np.testing.assert_allclose(snp.fft.rfftfreq(7, d=0.5), xps.fft.rfftfreq(7, d=0.5), rtol=1e-6)  # default float
    for i, (got, want) in enumerate(checks):
        got, want = np.asarray(got), np.asarray(want)
        assert got.shape == want.shape and got.dtype == want.dtype, (i, got.shape, want.shape, got.dtype, want.dtype)
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5 * max(1.0, float(np.max(np.abs(want)))),
                                   err_msg=str(i))


# ---------------------------------------------------------------- real clients


def test_array_api_compat_finds_stagec():
    compat = pytest.importorskip("array_api_compat")
    x = snp.asarray(np.ones(2, np.float32))
    assert compat.array_namespace(x) is snp
    assert compat.array_namespace(stagec.numpy.zeros((2, 2)), x) is snp
    assert compat.is_array_api_obj(x)


_rs = np.random.default_rng(5)
_SX = _rs.standard_normal((8, 3)).astype(np.float32)
_SY = np.array([0, 1, 0, 1, 1, 0, 1, 0], np.int32)
_SR = _rs.standard_normal(8).astype(np.float32)


def _sklearn_cases():
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.linear_model import Ridge
    from sklearn.metrics import r2_score
    from sklearn.preprocessing import MinMaxScaler, StandardScaler
    return {  # name: f(X, y_classes, y_real) on one namespace's arrays
        "StandardScaler": lambda X, y, r: StandardScaler().fit_transform(X),
        "MinMaxScaler": lambda X, y, r: MinMaxScaler().fit_transform(X),
        "r2_score": lambda X, y, r: r2_score(r, X[:, 0]),
        "Ridge(svd)": lambda X, y, r: Ridge(solver="svd", alpha=0.5).fit(X, r).predict(X),
        "PCA(full)": lambda X, y, r: abs(PCA(n_components=2, svd_solver="full").fit_transform(X)),  # signs free
        "LinearDiscriminantAnalysis": lambda X, y, r: LinearDiscriminantAnalysis().fit(X, y).predict_proba(X),
    }


@pytest.mark.parametrize("names", [("StandardScaler", "MinMaxScaler", "r2_score"),
                                   ("Ridge(svd)", "PCA(full)", "LinearDiscriminantAnalysis")])
def test_scikit_learn_with_array_api_dispatch(names, monkeypatch):
    """scikit-learn dispatching on stagec arrays gives NumPy's results and returns stagec arrays."""
    sklearn = pytest.importorskip("sklearn")
    pytest.importorskip("array_api_compat")
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")  # scikit-learn requires it for array_api_dispatch
    cases = _sklearn_cases()
    for name in names:
        want = np.asarray(cases[name](_SX, _SY, _SR), np.float64)
        with sklearn.config_context(array_api_dispatch=True):
            got = cases[name](snp.asarray(_SX), snp.asarray(_SY), snp.asarray(_SR))
        assert isinstance(got, (snp.ndarray, float)), (name, type(got))
        np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-4, atol=1e-5, err_msg=name)
