"""Eager `stagec.scipy.stats` functions run as composites (one traced graph a signature): every function of every
distribution, its later calls with the bits of its first (op by op) call, and the values against SciPy's float64."""
from __future__ import annotations

import inspect
import types

import numpy as np
import pytest
import scipy.stats as sst

import stagec
import stagec.scipy.stats as st
from stagec import composites

_R = np.random.default_rng(5)
_X = _R.uniform(0.05, 0.95, (4, 4)).astype(np.float32)  # (x, q and p alike: inside every support used here)
_K = _R.integers(0, 6, (4, 4)).astype(np.float32)
_VECTOR = {"dirichlet", "multinomial", "multivariate_normal"}  # (their own cases below)


def _param(name: str):
    if name == "p":
        return stagec.device_put(_R.uniform(0.2, 0.8, (4, 4)).astype(np.float32))
    if name == "n":
        return 7.0
    return stagec.device_put(_R.uniform(0.5, 3.0, (4, 4)).astype(np.float32))


def _cases():
    for dist in sorted(n for n in dir(st) if isinstance(getattr(st, n), types.ModuleType)):
        mod = getattr(st, dist)
        if not mod.__name__.startswith("stagec.scipy.stats.") or dist in _VECTOR:
            continue
        for fn in sorted(k for k, f in vars(mod).items() if callable(f) and not k.startswith("_")):
            yield dist, fn


def _bits(v):
    v = np.asarray(v)
    return v.dtype, v.shape, v.tobytes()


def _later_calls_keep_the_first_calls_bits(name, call):
    first = np.asarray(call())
    call()
    calls = composites.stats["calls"]
    for _ in range(2):
        assert _bits(call()) == _bits(first), name
    assert composites.stats["calls"] >= calls + 2, f"{name} ran op by op on its later calls"
    return first


@pytest.mark.parametrize("dist, fn", list(_cases()))
def test_a_distribution_function_runs_as_a_composite_with_its_op_by_op_bits(dist, fn):
    f = getattr(getattr(st, dist), fn)
    head, *names = inspect.signature(f).parameters
    first = _K if head == "k" else _X
    params = {n: _param(n) for n in names if n not in ("loc", "scale", "upper", "sign")}
    x = stagec.device_put(first)
    with np.errstate(all="ignore"):
        got = _later_calls_keep_the_first_calls_bits(f"{dist}.{fn}", lambda: f(x, *params.values()))
        if "loc" in names:  # (Python numbers as loc and scale: the signature's statics)
            kw = {"loc": 0.25, **({"scale": 2.0} if "scale" in names else {})}
            _later_calls_keep_the_first_calls_bits(f"{dist}.{fn} loc/scale", lambda: f(x, *params.values(), **kw))
    ref = getattr(getattr(sst, dist), fn, None)
    if ref is not None:
        want = ref(first.astype(np.float64), *(np.asarray(v, np.float64) for v in params.values()))
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-6, err_msg=f"{dist}.{fn}")


@pytest.mark.cpu_only  # (fused eager composites are the CPU backend's)
def test_vector_distributions_run_as_composites():
    x = _R.dirichlet(np.ones(3), 4).astype(np.float32)
    alpha = np.array([1.5, 2.0, 0.7], np.float32)
    counts = np.array([[2, 3, 2]] * 4, np.float32)
    p = np.array([0.2, 0.5, 0.3], np.float32)
    mean = np.array([0.1, -0.2, 0.3], np.float32)
    cov = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]], np.float32)
    X, A, C, P, M, S = (stagec.device_put(v) for v in (x, alpha, counts, p, mean, cov))
    cases = {
        "dirichlet.logpdf": (lambda: st.dirichlet.logpdf(X.T, A), [sst.dirichlet.logpdf(v / v.sum(), alpha) for v in x.astype(np.float64)]),
        "multinomial.logpmf": (lambda: st.multinomial.logpmf(C, 7.0, P), sst.multinomial.logpmf(counts, 7, p)),
        "multivariate_normal.logpdf": (lambda: st.multivariate_normal.logpdf(X, M, S),
                                       sst.multivariate_normal.logpdf(x, mean, cov)),
    }
    for name, (call, want) in cases.items():
        got = _later_calls_keep_the_first_calls_bits(name, call)
        np.testing.assert_allclose(got, want, rtol=2e-5, err_msg=name)
