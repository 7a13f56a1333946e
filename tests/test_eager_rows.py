"""Eager rows of issue 40 made cheaper without changing a bit: `sigmoid`'s NumPy rule (`_logistic_host`), `hypot`'s
graph (its special cases fixed where the plain formula is NaN; from `composites.POLY_ELEMENTS` one module, jit's bits)
and `square` (through `_elementwise`, not `power`).
Each keeps the op-by-op call's bits on later calls, across the size thresholds (default config), and agrees with float64
oracles; the logistic rule's one-pass path (from `_LOGISTIC_BITS_MIN` elements) gives its small path's bits."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import composites, eager, nn
from stagec.numpy import _ufuncs
from stagec.primitives import elementwise
from test_eager_composites import _nan_canonical

UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}
# (composite plans, large rules, the kernels beyond `HOST_MAX_ELEMENTS`: hypot's calls, with its 100 special pairs,
# then have 300_009 elements, as tests/test_determinism.py's and tests/test_composite_constants.py's: kernels shared)
SIZES = (16, 4099, 100_003, 299_909)
assert SIZES[-1] > eager.HOST_MAX_ELEMENTS


def bits(x):
    x = np.ascontiguousarray(np.asarray(x))
    return x.dtype, x.shape, x.view(UINT[x.dtype.itemsize]).tobytes()


def later_calls(fn, *args):
    """The first (op-by-op) call's result, checked to have the bits of the later ones (the composite's plan)."""
    first = np.asarray(fn(*args))
    stagec.wait_for_compiles()
    for _ in range(3):
        assert bits(fn(*args)) == bits(first), fn
    return first


def values(dt, n, rng):
    """`n` values of `dt`: edge values, wide-ranging random ones, and random bit patterns (NaN payloads, both
    signs, subnormals) in the last quarter."""
    fi = np.finfo(dt)
    edge = np.array([0, -0.0, np.inf, -np.inf, np.nan, -np.nan, fi.tiny, -fi.tiny, fi.tiny / 4, -fi.tiny / 4,
                     fi.max, -fi.max, 1, -1, 20, -20, 90, -90, 750, -750], np.float64)
    with np.errstate(over="ignore"):
        x = np.concatenate([edge, rng.standard_normal(n) * np.exp(rng.uniform(-12, 12, n))]).astype(dt)[:n]
    it = UINT[np.dtype(dt).itemsize]
    x[-(n // 4):] = rng.integers(0, np.iinfo(it).max, n // 4, dtype=it, endpoint=True).view(dt)
    return x


def _logistic_small(x):
    """The rule on pieces below `_LOGISTIC_BITS_MIN` elements (its abs/negative/fmax-with-a-bool path): the bits its
    one-pass path must give."""
    k = elementwise._LOGISTIC_BITS_MIN - 1
    if x.ndim == 0 or x.size <= k:
        return elementwise._logistic_host(x)
    flat = np.ravel(x)
    return np.concatenate([elementwise._logistic_host(flat[i:i + k]) for i in range(0, flat.size, k)]).reshape(x.shape)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_logistic_rule_keeps_its_bits_and_values(dt):
    rng = np.random.default_rng(1)
    x = values(dt, 1 << 17, rng)
    with np.errstate(all="ignore"):
        for a in (x, x[::3], x.reshape(-1, 4)[:, 1:3], x[:5], x[7:8].reshape(())):  # (layouts, 0-d)
            got = elementwise._logistic_host(a)
            assert bits(got) == bits(_logistic_small(a))
        got = elementwise._logistic_host(x).astype(np.float64)
        ref = 1 / (1 + np.exp(-x.astype(np.longdouble)))  # (the oracle, in extended precision)
    fin = np.isfinite(x)
    assert np.array_equal(np.isnan(got), np.isnan(x))
    assert got[x == np.inf].tolist() == [1.0] * int((x == np.inf).sum()) and not got[x == -np.inf].any()
    normal = fin & (ref >= np.finfo(dt).tiny)
    ulp = np.spacing(ref[normal].astype(dt)).astype(np.float64)
    assert np.max(np.abs(got[normal] - ref[normal].astype(np.float64)) / ulp) <= 3


@pytest.mark.parametrize("n", SIZES)
def test_sigmoid_eager_bits_across_sizes(n):
    rng = np.random.default_rng(2)
    x = values(np.float32, n, rng)
    got = later_calls(nn.sigmoid, stagec.device_put(x))
    if 2 * n < elementwise.logistic_p.host_max_work and stagec.config.default_backend == "cpu":  # (the NumPy
        # rule's size class, the CPU's: its bits; several passes, so its kernel from 8K elements, `def_host`'s `max_work`)
        with np.errstate(all="ignore"):
            assert bits(got) == bits(_logistic_small(x))
    else:  # (the kernel's: jit's module of the one primitive gives the same)
        assert bits(got) == bits(stagec.jit(nn.sigmoid)(x))


def _hypot_oracle_check(x, y, got):
    dt = got.dtype
    with np.errstate(all="ignore"):
        ref = np.hypot(x.astype(np.float64), y.astype(np.float64))
    inf = np.isinf(x) | np.isinf(y)
    assert np.all(got[inf] == np.inf)  # (inf beside NaN too)
    assert np.array_equal(np.isnan(got), (np.isnan(x) | np.isnan(y)) & ~inf)  # (C99's; NumPy's gave NaN beside inf)
    assert np.all(got[(x == 0) & (y == 0)] == 0) and not np.signbit(got[(x == 0) & (y == 0)]).any()
    fi = np.finfo(dt)
    ok = ~inf & np.isfinite(ref) & (ref >= fi.tiny) & (ref <= fi.max) & (np.abs(x) >= fi.tiny) & (np.abs(y) >= fi.tiny)
    ulp = np.spacing(ref[ok].astype(dt)).astype(np.float64)
    assert np.max(np.abs(got[ok].astype(np.float64) - ref[ok]) / ulp) <= 2


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("n", SIZES)
def test_hypot_eager_bits_and_values(dt, n, request):
    if dt == np.float64:
        request.getfixturevalue("x64")
    rng = np.random.default_rng(3)
    fi = np.finfo(dt)
    sp = np.array([0, -0.0, np.inf, -np.inf, np.nan, fi.tiny, fi.tiny / 4, fi.max, -1, 3], dt)
    a, b = np.meshgrid(sp, sp)  # (every pair of special values)
    x = np.concatenate([a.ravel(), values(dt, n, rng)])
    y = np.concatenate([b.ravel(), values(dt, n, rng)[::-1]])
    got = later_calls(snp.hypot, stagec.device_put(x), stagec.device_put(y))
    _hypot_oracle_check(x, y, got)
    with np.errstate(all="ignore"):
        if x.size < composites.POLY_ELEMENTS:  # (NumPy rules, op by op: the formula's correctly rounded steps)
            lo, hi = np.minimum(np.abs(x), np.abs(y)), np.maximum(np.abs(x), np.abs(y))
            r = lo / hi
            plain = hi * np.sqrt(1 + r * r)
            keep = ~np.isnan(plain)
            assert bits(got[keep]) == bits(plain[keep])
        elif dt != np.float16:  # (from there one module, its bits: the jitted function's; float16's jit widens)
            assert bits(got) == bits(stagec.jit(snp.hypot)(x, y))


def test_hypot_skips_its_special_cases_on_ordinary_values(monkeypatch):
    """From the composite's second planned call, values with no zero pair, infinity or NaN run no comparison
    with inf or 0 (the special cases' steps): the plain formula, then one NaN test."""
    calls = []
    rule = elementwise.eq_p.host

    def counted(a, b):
        calls.append(a.shape)
        return rule(a, b)
    monkeypatch.setattr(elementwise.eq_p, "host", counted)
    stagec.config.update("eager_tiering", "exact")  # (a settings change: plans made afresh, with the counted rule)
    rng = np.random.default_rng(4)
    x, y = (stagec.device_put(rng.standard_normal(37).astype(np.float32) + 5) for _ in range(2))
    first = later_calls(snp.hypot, x, y)
    calls.clear()
    assert bits(snp.hypot(x, y)) == bits(first)
    assert calls == [], calls
    monkeypatch.undo()
    stagec.config.update("eager_tiering", "exact")


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int32, np.uint8, np.bool_, np.complex64])
def test_square_is_the_product(dt, monkeypatch):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((5, 3)) * 20).astype(dt)
    if np.dtype(dt).kind == "f":
        x[:2, 0] = [np.nan, -0.0]
    want = (x.astype(np.int32) if dt == np.bool_ else x)
    with np.errstate(all="ignore"):
        want = want * want  # (NumPy's product: correctly rounded, as the rule and the kernel)
    monkeypatch.setattr(_ufuncs, "power", None)  # (not through `power`'s Python steps)
    for fn in (snp.square, stagec.jit(snp.square)):
        got = _nan_canonical(np.asarray(fn(stagec.device_put(x))))  # (a GPU's NaN: one payload)
        assert got.dtype == want.dtype and got.tobytes() == _nan_canonical(want).tobytes()
    assert snp.square(3).aval == snp.multiply(3, 3).aval and snp.square(True).dtype == np.int32
    assert float(stagec.grad(snp.square)(3.0)) == 6.0
