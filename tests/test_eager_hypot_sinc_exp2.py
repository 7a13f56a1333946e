"""Eager composites' `max` and `min` of float `abs` results (`hypot`'s) are NumPy's maximum and minimum, without the
rules' pass for two zeros' signs (all their zeros are +0): the same bits, IEEE's signed zeros where the operands are
not `abs` results (`fmax`, `fmin`). No compile: NumPy rules only (float32, float64; float16 runs kernels)."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec.primitives import elementwise


def _bits(x):
    x = np.asarray(x)
    return x.dtype, x.shape, x.tobytes()


@pytest.fixture
def counted(monkeypatch):
    """Calls of the `max` and `min` NumPy rules, by name (plans made afresh with the counted rules)."""
    calls = []
    for p in (elementwise.max_p, elementwise.min_p):
        def rule(a, b, _p=p, _rule=p.host):
            calls.append(_p.name)
            return _rule(a, b)
        monkeypatch.setattr(p, "host", rule)
    stagec.config.update("eager_tiering", "exact")  # (a settings change: signatures planned again)
    yield calls
    monkeypatch.undo()
    stagec.config.update("eager_tiering", "exact")


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_hypot_max_min_of_abs_skip_the_zero_fix(dt, counted, request):
    if dt == np.float64:
        request.getfixturevalue("x64")
    rng = np.random.default_rng(11)
    sp = np.array([0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-40, -1e-40, 1e-310, 1, -3], np.float64).astype(dt)
    a, b = np.meshgrid(sp, sp)  # (every pair, the zeros' four sign pairs among them)
    n = 5000  # (past `_ZERO_BOUND_MIN`, the rules' large-array zero test)
    x = np.concatenate([a.ravel(), rng.standard_normal(n).astype(dt)])
    y = np.concatenate([b.ravel(), rng.standard_normal(n).astype(dt)])
    X, Y = stagec.device_put(x), stagec.device_put(y)
    first = np.asarray(snp.hypot(X, Y))  # (op by op: the rules' own max and min)
    assert counted.count("max") == 1 and counted.count("min") == 1
    for _ in range(2):
        got = snp.hypot(X, Y)  # (traced, then planned)
    counted.clear()
    assert _bits(snp.hypot(X, Y)) == _bits(got) == _bits(first)
    assert counted == []  # (np.maximum and np.minimum called directly)
    # oracles: the formula's float32 steps in NumPy where it is not NaN, C99's special values, float64's hypot
    with np.errstate(all="ignore"):
        ax, ay = np.abs(x), np.abs(y)
        hi, lo = np.maximum(ax, ay), np.minimum(ax, ay)
        r = lo / hi
        plain = hi * np.sqrt(1 + r * r)
        ref = np.hypot(x.astype(np.float64), y.astype(np.float64))
    keep = ~np.isnan(plain)
    assert _bits(first[keep]) == _bits(plain[keep])
    zero = (x == 0) & (y == 0)
    assert np.all(first[zero] == 0) and not np.signbit(first[zero]).any()
    inf = np.isinf(x) | np.isinf(y)
    assert np.all(first[inf] == np.inf)
    assert np.array_equal(np.isnan(first), (np.isnan(x) | np.isnan(y)) & ~inf)
    ok = np.isfinite(ref) & (np.minimum(ax, ay) >= np.finfo(dt).tiny) & (ref <= np.finfo(dt).max)
    assert np.max(np.abs(first[ok] - ref[ok]) / np.spacing(ref[ok].astype(dt)).astype(np.float64)) <= 2


def test_max_min_of_other_operands_keep_ieee_zeros(counted):
    """`fmax`/`fmin` of plain operands keep their rules: IEEE's max(-0, +0) = +0, min(+0, -0) = -0."""
    z = np.zeros(5000, np.float32)
    x, y = z.copy(), -z
    x[1::2], y[1::2] = -0.0, 0.0
    X, Y = stagec.device_put(x), stagec.device_put(y)
    for _ in range(3):
        hi, lo = snp.fmax(X, Y), snp.fmin(X, Y)
    counted.clear()
    hi, lo = np.asarray(snp.fmax(X, Y)), np.asarray(snp.fmin(X, Y))
    assert sorted(counted) == ["max", "min"]
    assert not np.signbit(hi).any() and np.signbit(lo).all()
