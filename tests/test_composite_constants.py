"""Eager composites' constant operands (`stagec.composites`): a folded broadcast constant (selu's alpha, scale and
zero: a stretched view, strides 0) is read by correctly rounded NumPy rules as a 0-d array (`_compact`), and a
graph of one kernel on its arguments and constants (`power(x, 3.5)`'s pow) calls that kernel's plan directly
(`_one_kernel`). Either way every call gives the bits of the first, op-by-op call."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import stagec
import stagec.nn as nn
import stagec.numpy as snp
from stagec import composites
from stagec.primitives import elementwise


def data(shape, dtype, seed=0):
    """Normal values of several scales with the edges: +-0, +-inf, NaN, subnormals, the largest finite values."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    x = rng.standard_normal(n) * rng.choice([0.01, 1.0, 5.0, 100.0], n)
    info = ml_dtypes.finfo(dtype)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, float(info.smallest_subnormal), -float(info.smallest_subnormal),
             float(info.max), -float(info.max), 1.0, -1.0, 6.0]
    if n > 1:
        x[rng.choice(n, min(n, len(edges)), replace=False)] = edges[:n]
    elif n == 1:
        x[0] = edges[seed % len(edges)]
    return stagec.device_put(x.astype(dtype).reshape(shape))


def bits(r):
    r = np.asarray(r)
    return r.view(f"u{r.itemsize}") if r.dtype.kind == "f" or r.dtype == ml_dtypes.bfloat16 else r


def same_calls(fn, *xs, more=()):
    """The first (op-by-op) call's bits on each later call: the checked first composite call and the next ones,
    and on `more` (other operands of the same signature: uniform masks) the plan's later calls give their first
    call's bits."""
    composites.clear_cache()
    want = bits(fn(*xs))  # (a signature's first call runs plainly)
    for _ in range(3):
        got = bits(fn(*xs))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    for ys in more:
        composites.clear_cache()
        want = bits(fn(*ys))
        fn(*xs), fn(*xs)  # (planned, its first composite call checked)
        np.testing.assert_array_equal(bits(fn(*ys)), want)


FNS = {"selu": nn.selu, "elu": nn.elu, "celu": lambda x: nn.celu(x, 2.5), "leaky_relu": nn.leaky_relu,
       "softplus": nn.softplus, "hard_tanh": nn.hard_tanh, "gelu": nn.gelu, "relu6": nn.relu6,
       "clip": lambda x: snp.clip(x, -0.5, 0.5), "nan_to_num": lambda x: snp.nan_to_num(x, nan=1.5, neginf=-0.0),
       "heaviside": lambda x: snp.heaviside(x, 0.5), "exp2": snp.exp2, "power": lambda x: snp.power(x, 3.5),
       "deg2rad": snp.deg2rad,
       "copysign": lambda x: snp.copysign(x, -1.0), "fmin": lambda x: snp.fmin(x, -0.0), "median": snp.median}
# (`HOST_READ_ELEMENTS`, `_ZERO_BOUND_MIN`, `_SELECT_BITS_MIN` lie between; 270K: kernels, `HOST_MAX_ELEMENTS`)
SHAPES = [(), (1, 1), (4, 4), (7, 13), (5000,), (70_000,)]


NARROW = ["selu", "leaky_relu", "hard_tanh", "clip", "nan_to_num", "heaviside", "fmin"]  # (their rules take them)


@pytest.mark.parametrize("dtype, name", [(np.float32, n) for n in sorted(FNS)] +
                         [(d, n) for d in (np.float16, ml_dtypes.bfloat16) for n in NARROW],
                         ids=lambda v: v if isinstance(v, str) else np.dtype(v).name)
def test_later_calls_give_the_first_calls_bits(name, dtype):
    for k, shape in enumerate(SHAPES if dtype is np.float32 else SHAPES[:-1]):
        same_calls(FNS[name], data(shape, dtype, k))


@pytest.mark.parametrize("name", ["selu", "leaky_relu", "heaviside", "exp2", "power", "clip", "gelu"])
def test_float64_and_the_kernels_size_class(name, x64):
    for dtype, shape in [(np.float64, (4, 4)), (np.float64, (7, 13)), (np.float64, (5000,)), (np.float32, (270_000,))]:
        same_calls(FNS[name], data(shape, dtype))


def _spy(monkeypatch, name):
    seen = []
    real = getattr(composites, name)

    def spy(*a, **k):
        seen.append((a, k))
        return real(*a, **k)
    monkeypatch.setattr(composites, name, spy)
    return seen


def test_selu_reads_its_broadcast_constants_as_0d(monkeypatch):
    """selu's alpha, scale and zero reach its `gt`, `select` and `mul` rules as 0-d arrays; every call the op-by-op
    bits, on uniform masks too (a select then gives its taken operand, the full constant where that is one)."""
    seen = _spy(monkeypatch, "_source")
    x = data((4, 4), np.float32)
    pos, neg = stagec.device_put(np.full((4, 4), 0.5, np.float32)), stagec.device_put(np.full((4, 4), -2.0, np.float32))
    before = composites.stats["compact"]
    same_calls(nn.selu, x, more=[(pos,), (neg,), (x,)])
    args, kw = seen[0]  # (selu's; elu's own follow, from the op-by-op calls)
    steps, compact = args[0], args[-1]
    assert len(compact) >= 4 and composites.stats["compact"] >= before + len(compact)
    prims = {steps[n][2] for n, _ in compact}
    assert {elementwise.gt_p, elementwise.select_p, elementwise.mul_p} <= prims
    for (n, j), value in compact.items():
        assert steps[n][0] is not None and steps[n][2] in composites._BROADCASTING  # (NumPy rules only)
        assert value.shape == () and not value.flags.writeable


def test_heaviside_constants_taken_by_uniform_masks():
    """heaviside's 0, 1 and h: compact where a rule reads them, the full constant where a uniform mask's select
    gives one of them as its value."""
    x = data((4, 4), np.float32)
    ys = [stagec.device_put(np.full((4, 4), v, np.float32)) for v in (2.0, -3.0, 0.0, -0.0, np.nan)]
    same_calls(FNS["heaviside"], x, more=[(y,) for y in ys])
    for y in ys:
        assert np.asarray(FNS["heaviside"](y)).shape == (4, 4)


def test_a_partly_stretched_constant_reads_as_a_contiguous_copy():
    """A constant broadcast along one axis only (a row): a small contiguous copy of the same values."""
    row = np.array([0.5, -0.0, 2.0, np.inf], np.float32)

    @snp._base._composite
    def f(x):
        return snp.where(x > snp.asarray(row), x * snp.asarray(row), snp.asarray(row) - x)
    seen = []
    real = composites._compact
    try:
        composites._compact = lambda *a: seen.append(real(*a)) or seen[-1]
        same_calls(f, data((3, 4), np.float32))
    finally:
        composites._compact = real
    (compact,) = seen
    shapes = {v.shape for v in compact.values()}
    assert shapes and all(s in ((), (3, 4)) for s in shapes)
    assert all(v.flags.c_contiguous for v in compact.values())


def test_a_power_calls_its_one_kernel_directly(monkeypatch):
    """`power(x, 3.5)` is `pow(x, 3.5)`: one kernel on the argument and a constant, called as `_one_kernel`, its
    constant's host Array kept (uploaded once); the bits of the op-by-op call."""
    seen = _spy(monkeypatch, "_one_kernel")
    before = composites.stats["one_kernel"]
    same_calls(FNS["power"], data((4, 4), np.float32))
    assert composites.stats["one_kernel"] == before + 1
    (args, kw), = seen
    ins = args[-1]
    assert len(ins) == 2 and ins[0] == 0 and type(ins[1]) is stagec.Array


def test_exp2_edges_and_values():
    """exp2 (its own primitive) on its edges: NaN, +-inf, +-0, subnormals, overflow and underflow, each call the
    first call's bits; within an ulp of float64's where the result is a normal float32, on the edges and on 64 eager
    calls of 16 values (small: NumPy's rule on the CPU, computed in float64 and rounded once; float32 np.exp2 was
    2.7 ulps off)."""
    v = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, 1e-45, 128.0, -150.0, 127.9, -125.7, 0.3, -7.1], np.float32)
    same_calls(snp.exp2, stagec.device_put(v))
    got, want = np.asarray(snp.exp2(stagec.device_put(v))).astype(np.float64), np.exp2(v.astype(np.float64))
    normal = np.isfinite(want) & (want >= np.finfo(np.float32).tiny) & (want <= np.finfo(np.float32).max)
    np.testing.assert_array_equal(got[~normal & ~np.isnan(want)], np.float32(want[~normal & ~np.isnan(want)]))
    assert np.isnan(got[np.isnan(want)]).all()
    assert (np.abs(got - want)[normal] <= np.spacing(np.float32(want[normal]))).all()
    x = np.random.default_rng(0).uniform(-126, 128, (64, 16)).astype(np.float32)
    got = np.stack([np.asarray(snp.exp2(stagec.device_put(row))) for row in x]).astype(np.float64)
    want = np.exp2(x.astype(np.float64))
    err = np.abs(got - want) / np.spacing(want.astype(np.float32)).astype(np.float64)
    assert err.max() <= 1, err.max()