"""The workloads of benchmarks/bench_cpu.py stay right (against NumPy) under the code paths chosen for speed:
the CPU target's IREE flags (O3: fused normalizations, reassociated reductions), the `fuse` pass's gating,
the worker count and the call path. Small shapes; no timing."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec.backend import get_backend

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 40)).astype(np.float32)
V = RNG.standard_normal(4096).astype(np.float32)


def softmax(np_, x):
    e = np_.exp(x - np_.max(x, axis=-1, keepdims=True))
    return e / np_.sum(e, axis=-1, keepdims=True)


def layernorm(np_, x):
    mu = np_.mean(x, axis=-1, keepdims=True)
    var = np_.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / np_.sqrt(var + 1e-5)


def selu(np_, x):
    return 1.0507 * np_.where(x > 0, x, 1.6733 * np_.exp(x) - 1.6733)


WORKLOADS = {
    "softmax": (softmax, (X,)),
    "layernorm": (layernorm, (X,)),
    "selu": (selu, (V,)),
    "sum(x**2+sin x)": (lambda np_, x: np_.sum(x ** 2 + np_.sin(x)), (V,)),
    "faq": (lambda np_, x: x.T @ (x - x.mean(0)), (X,)),
    "mlp": (lambda np_, x, w1, w2: np_.tanh(np_.maximum(x @ w1, 0) @ w2),
            (X, RNG.standard_normal((40, 24)).astype(np.float32) / 6, RNG.standard_normal((24, 16)).astype(np.float32) / 5)),
}


@pytest.mark.parametrize("passes", [None, "none"])
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_matches_numpy(name, passes):
    fn, args = WORKLOADS[name]
    got = np.asarray(stagec.jit(lambda *a: fn(snp, *a), passes=passes)(*args))
    want = fn(np, *[a.astype(np.float64) for a in args])
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_o3_keeps_nan_and_inf_semantics():
    # O3 reassociates and fuses reductions; max/min must still propagate NaN (no fast min/max).
    x = np.array([[1, np.nan, 3, -2], [0, -1, 5, 2], [np.inf, -np.inf, 1, 0]], np.float32)
    f = stagec.jit(lambda v: (snp.max(v, 1), snp.min(v, 1), snp.maximum(v, 0.5), snp.sum(v, 1), softmax(snp, v)))
    with np.errstate(invalid="ignore"):
        want = (np.max(x, 1), np.min(x, 1), np.maximum(x, 0.5), np.sum(x, 1), softmax(np, x))
    for g, w in zip(f(x), want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, equal_nan=True)


def test_cpu_flags_name_the_optimization_level():
    assert "--iree-opt-level=O3" in get_backend("cpu").compile_flags()


def test_fewer_cpu_workers_same_results():
    # STAGEC_CPU_THREADS sets the local-task worker count (read when the driver starts: a fresh process);
    # a problem large enough for local-task must give the same result with one worker.
    import os
    import subprocess
    import sys
    code = ("import numpy as np, stagec, stagec.numpy as snp\n"
            "x = np.linspace(-3, 3, 1 << 19, dtype=np.float32)\n"
            "f = stagec.jit(lambda v: snp.sum(v * v + snp.sin(v)))\n"
            "r = float(f(x)); assert f._cache[next(iter(f._cache))].exe.driver == 'local-task'\n"
            "print(r, float(np.sum(x.astype(np.float64) ** 2 + np.sin(x.astype(np.float64)))))\n")
    env = {**os.environ, "STAGEC_CPU_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got, want = map(float, out.stdout.split())
    assert abs(got - want) <= 1e-4 * abs(want)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_matmul_and_mlp(dtype):
    # bf16 matmuls compile without data tiling on a CPU without bf16 instructions (backend.host_has_bf16)
    import ml_dtypes
    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    fn, args = WORKLOADS["mlp"]
    args = [a.astype(dt) for a in args]
    got = np.asarray(stagec.jit(lambda *a: fn(snp, *a))(*args)).astype(np.float32)
    want = fn(np, *[a.astype(np.float32) for a in args])
    np.testing.assert_allclose(got, want, rtol=3e-2, atol=3e-2)
    a, b = args[0], args[1]
    np.testing.assert_allclose(np.asarray(stagec.jit(lambda x, y: x @ y)(a, b)).astype(np.float32),
                               a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2, atol=2e-2)
