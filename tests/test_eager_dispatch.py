"""Eager dispatch in the default config (`eager_tiering` "exact"): a call's route is decided once per signature
(`eager._plans`), small NumPy-rule results stay on the host until a device call reads them (`Array.on_host`), an
`exact` operation on host values takes its rule (the kernel's bits), a matmul with many multiply-adds takes its
kernel. Results against float64 NumPy; bits across routes and calls."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import eager, lax
from stagec.backend import get_backend
from stagec.core import ShapedArray
from stagec.primitives import elementwise as ew

EPS = np.finfo(np.float32).eps


@pytest.fixture(autouse=True)
def exact_tiering():
    """What users run (tests/conftest.py sets "never" for the rest of the suite)."""
    old = stagec.config.eager_tiering
    stagec.config.update("eager_tiering", "exact")
    yield
    stagec.wait_for_compiles()
    stagec.config.update("eager_tiering", old)


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def close(got, want, rtol=4 * EPS, atol=0.0):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol)


def test_small_ops_against_numpy():
    x, a, b = f32(4, 4), f32(1, 1, seed=1), f32(1, 1, seed=2)
    X, A, B = (stagec.device_put(v) for v in (x, a, b))
    x64, a64, b64 = (v.astype(np.float64) for v in (x, a, b))
    for _ in range(2):  # (the first call plans, the second takes the plan)
        close(X + 1.0, x64 + 1.0)
        close(snp.sin(X), np.sin(x64), atol=2 * EPS)
        close(0.9 * A + 0.1 * B, 0.9 * a64 + 0.1 * b64, atol=2 * EPS)
        close(snp.maximum(X, 0.0), np.maximum(x64, 0.0))
        close(X.T, x64.T, rtol=0)
        close(X * 2 - 1, x64 * 2 - 1)
        assert (X + 1.0).dtype == np.float32 and not (X + 1.0).weak_type


def test_a_signature_plans_once(monkeypatch):
    x = stagec.device_put(f32(3, 5))
    evals = []
    rule = ew.sin_p.abstract_eval
    monkeypatch.setattr(ew.sin_p, "abstract_eval", lambda *a, **k: evals.append(1) or rule(*a, **k))
    eager.clear_cache()
    first = np.asarray(snp.sin(x))
    second = np.asarray(snp.sin(x))
    assert len(evals) == 1  # (the second call took the plan)
    assert first.tobytes() == second.tobytes()
    snp.sin(stagec.device_put(f32(3, 6)))  # a new shape: a new plan
    assert len(evals) == 2
    stagec.config.update("eager_tiering", "exact")  # any setting changed: plans are made again
    snp.sin(x)
    assert len(evals) == 3


@pytest.mark.cpu_only  # (exp's NumPy rule: the CPU's host route)
def test_a_setting_changes_the_route():
    """`eager_tiering` "never" after "exact": the kernel answers (plans are not kept across settings)."""
    x = stagec.device_put(f32(8))
    host = eager.stats["host"]
    want = np.asarray(snp.exp(x))
    assert eager.stats["host"] == host + 1
    stagec.config.update("eager_tiering", "never")
    got = np.asarray(snp.exp(x))
    assert eager.stats["host"] == host + 1
    close(got, np.exp(np.asarray(x, np.float64)), rtol=2 * EPS)
    close(want, np.exp(np.asarray(x, np.float64)), rtol=2 * EPS)


@pytest.mark.cpu_only  # (NumPy-rule results held on the host: the CPU's route)
def test_host_results_upload_when_a_device_call_reads_them():
    x = stagec.device_put(f32(4, 4))
    y = snp.sin(x) + 1.0  # NumPy rules: nothing uploaded
    assert y._bv is None and y.is_ready()
    assert y.block_until_ready() is y and y._bv is None
    r = y.reshape(2, 8)  # reshaped where it is
    assert r._bv is None
    np.testing.assert_array_equal(np.asarray(r), np.asarray(y).reshape(2, 8))
    f = stagec.jit(lambda v: v * 2.0)
    out = np.asarray(f(y))  # the module reads it: uploaded once
    assert y._bv is not None
    close(out, (np.sin(np.asarray(x, np.float64)) + 1.0) * 2.0, rtol=4 * EPS, atol=4 * EPS)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(stagec.device_put(np.asarray(y))))


def test_host_results_behave_as_arrays():
    y = stagec.device_put(f32(3)) * 3.0
    assert y._bv is None
    z = pickle.loads(pickle.dumps(y))
    np.testing.assert_array_equal(np.asarray(z), np.asarray(y))
    c = snp.array(y, copy=True)  # shares the host copy
    np.testing.assert_array_equal(np.asarray(c), np.asarray(y))
    w = stagec.device_put(f32(3, seed=1))
    w = w * 1.0
    w[1] = 7.0  # rebinds to another (host) value
    assert float(w[1]) == 7.0 and float(c[1]) == float(y[1])
    g = stagec.jit(lambda v: v + 1.0, donate_argnums=0)
    want = np.asarray(y) + np.float32(1.0)
    out = g(y)  # a host value donated: uploaded, then deleted
    assert y.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), want)


def test_callers_numpy_arrays_are_never_aliased():
    a = np.ones((2, 3), np.float32)
    x = snp.asarray(a)
    t = lax.transpose(a, (1, 0))  # a NumPy rule given the caller's array: its result is no view of it
    a[:] = 5.0
    assert (np.asarray(x) == 1.0).all() and (np.asarray(t) == 1.0).all()


@pytest.mark.cpu_only  # (the CPU's host route of exact operations)
def test_exact_ops_on_host_values_give_the_kernels_bits():
    """Integer arithmetic and data movement: their rule on host values and on small device values (read back once),
    their kernel on bigger device values: the same bits."""
    v = np.random.default_rng(3).integers(-1000, 1000, (150, 70)).astype(np.int32)  # 2 x 10500 > HOST_READ_ELEMENTS
    on_device = lambda: stagec.device_put(v)
    dev = np.asarray(on_device() * 3 + on_device())  # kernels (compiled on a thread meanwhile: their rule)
    assert stagec.wait_for_compiles(120)
    host = eager.stats["host"]
    dev = np.asarray(on_device() * 3 + on_device())
    assert eager.stats["host"] == host  # the kernels answered
    held = v.copy()
    held.flags.writeable = False
    h = stagec.Array.on_host(held, ShapedArray(v.shape, np.int32), get_backend())  # as a NumPy rule's result
    on_host = np.asarray(h * 3 + h)
    assert eager.stats["host"] > host  # the rules answered
    assert on_host.tobytes() == dev.tobytes() == (v * 3 + v).tobytes()
    small = v[:20, :30]
    x = stagec.device_put(small)
    assert x._npy is None
    host = eager.stats["host"]
    got = x * 3 + x
    assert eager.stats["host"] == host + 2 and got._bv is None  # read back once, then the rules
    assert x._npy is not None and np.asarray(got).tobytes() == (small * 3 + small).tobytes()


def test_a_view_keeps_the_host_copy():
    """`reshape` of a device value already read back: the view holds the host copy too (nothing read again)."""
    x = stagec.device_put(f32(4, 4))
    np.asarray(x)  # read back: x keeps its host copy
    r = x.reshape(16)
    assert r._bv is not None and r._npy is not None and not r._npy.flags.writeable
    np.testing.assert_array_equal(r._npy, np.asarray(x).reshape(16))
    xt = np.asarray(x).T  # a host copy not contiguous in memory (as a NumPy rule's transpose gives)
    tr = stagec.device_put(np.ascontiguousarray(xt))
    tr._npy = xt
    got = tr.reshape(16)
    assert not got._npy.flags.writeable
    np.testing.assert_array_equal(np.asarray(got), xt.reshape(16))


def test_a_slice_of_leading_rows_is_a_view():
    """A slice keeping the first rows (whole) of a device value, half of it or more, is a view of its buffer: no
    kernel; one of fewer rows, or of some columns, is not (a view would keep the whole buffer alive)."""
    a = np.arange(200 * 300, dtype=np.float32).reshape(200, 300)
    x = stagec.jit(lambda t: t * 2)(a)  # (on the device: 60000 elements, too many to read back for a slice)
    views = eager.stats["views"]
    got = {"rows": x[:150], "lax": lax.slice(x, (0, 0), (100, 300)), "flat": x.reshape(-1)[:40000]}
    assert eager.stats["views"] == views + 4  # (the reshape too)
    for name, want in {"rows": a[:150] * 2, "lax": a[:100] * 2, "flat": (a * 2).reshape(-1)[:40000]}.items():
        np.testing.assert_array_equal(np.asarray(got[name]), want, err_msg=name)
        np.testing.assert_array_equal(np.asarray(got[name] + 1), want + 1, err_msg=name)  # (a kernel reads it)
    views = eager.stats["views"]
    few, cols = x[:40], x[:150, :200]
    assert eager.stats["views"] == views
    np.testing.assert_array_equal(np.asarray(few), a[:40] * 2)
    np.testing.assert_array_equal(np.asarray(cols), a[:150, :200] * 2)


@pytest.mark.cpu_only  # (a small product's NumPy rule: the CPU's host route)
@pytest.mark.parametrize("n", [16, 256])
def test_matmul_route_by_multiply_adds(n):
    """A small product takes its NumPy rule; from 2^18 multiply-adds its kernel (as jit's module): the same answer."""
    a = f32(n, n, seed=n)
    A = stagec.device_put(a)
    host = eager.stats["host"]
    got = np.asarray(A @ A)
    assert eager.stats["host"] == host + (n == 16)
    want = a.astype(np.float64) @ a.astype(np.float64)
    close(got, want, rtol=0, atol=n * 8 * EPS * np.abs(a).max() ** 2)
    again = np.asarray(A @ A)
    assert again.tobytes() == got.tobytes()
    if n == 256:
        assert np.asarray(stagec.jit(lambda v: v @ v)(A)).shape == (n, n)


def test_a_scalar_constant_keeps_its_sign_of_zero():
    # Python scalars' constants are made once per value, and 0.0 == -0.0 (hashing alike): `x * -0.0` after
    # `x * 0.0` must still multiply by -0.0 (NumPy's signs of zero are the oracle).
    x = np.array([2.0, -0.0, 1.0, -3.0], np.float32)
    for ops in ((0.0, -0.0), (-0.0, 0.0)):
        for c in ops:
            for got, want in ((snp.multiply(snp.asarray(x), c), x * np.float32(c)),
                              (snp.asarray(x) + c, x + np.float32(c)),
                              (snp.asarray(x) * complex(1.0, c), x * np.complex64(complex(1.0, c)))):
                np.testing.assert_array_equal(np.signbit(np.asarray(got).view(np.float32)),
                                              np.signbit(np.asarray(want).view(np.float32)), err_msg=str(c))


def test_a_small_device_value_is_read_back_once_for_its_views():
    """`x.reshape` of a small device value (default tiering): read back once, so operations on its views take their
    NumPy rules without reading each view back; the views' bits are the value's."""
    a = f32(8, seed=5)
    x = stagec.device_put(a)
    assert x._npy is None
    for _ in range(2):
        col, row = x.reshape(8, 1), x.reshape(1, 8)
        assert col._npy is not None and row._npy is not None and col._bv is not None
        got = np.asarray(col * row)
        assert got.tobytes() == (a.reshape(8, 1) * a.reshape(1, 8)).tobytes()
    assert x._npy is not None
