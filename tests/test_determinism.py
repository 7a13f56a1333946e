"""Same inputs, same bits, with the DEFAULT config (tests/conftest.py turns tiering off for the rest of the suite;
this file puts back the defaults a user gets): every call of a jitted function, first or later, in this process or
a later one that finds the module on disk, and every eager operation before and after its kernel compiles."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import eager
from stagec.compiler import loops

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _default_env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("STAGEC_JIT_TIERING", "STAGEC_EAGER_TIERING")}


@pytest.fixture(autouse=True)
def defaults(monkeypatch):
    """The config a user gets: read from a fresh Config without the suite's STAGEC_*_TIERING."""
    monkeypatch.delenv("STAGEC_JIT_TIERING", raising=False)
    monkeypatch.delenv("STAGEC_EAGER_TIERING", raising=False)
    fresh = type(stagec.config)()
    old = stagec.config.jit_tiering, stagec.config.eager_tiering
    stagec.config.update("jit_tiering", fresh.jit_tiering)
    stagec.config.update("eager_tiering", fresh.eager_tiering)
    yield
    stagec.wait_for_compiles()
    eager.wait_for_kernels()
    stagec.config.update("jit_tiering", old[0])
    stagec.config.update("eager_tiering", old[1])


# The workloads of benchmarks/ and issue 37's list, as (name, function of the numpy module, argument count).
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import _workloads  # noqa: E402

WORKLOADS = {
    "selu": lambda m, x, w: _workloads.selu(m, x),
    "softmax": lambda m, x, w: _workloads.softmax(m, x),
    "layernorm": lambda m, x, w: _workloads.layernorm(m, x),
    "tanh": lambda m, x, w: m.tanh(x),
    "sincos": lambda m, x, w: m.sin(x) * m.cos(x),
    "mlp": lambda m, x, w: m.tanh(x @ w) @ w.T,
    "logsumexp": lambda m, x, w: m.log(m.sum(m.exp(x), axis=-1)),
    "expm1": lambda m, x, w: m.expm1(x),
    "var": lambda m, x, w: m.var(x, axis=0),
    "log_exp": lambda m, x, w: m.log(m.exp(x)),
    "matmul": lambda m, x, w: x @ w,
    "abs_pow": lambda m, x, w: m.abs(x) ** 2.5,
}


def inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((64, 96)).astype(np.float32), rng.standard_normal((96, 32)).astype(np.float32)


def bits(a) -> bytes:
    return np.asarray(a).tobytes()


@pytest.mark.parametrize("name", WORKLOADS)
def test_jit_first_call_equals_later_calls(name):
    x, w = inputs()
    fn = WORKLOADS[name]
    f = stagec.jit(lambda x, w: fn(snp, x, w))
    first = bits(f(x, w))
    second = bits(f(x, w))
    stagec.wait_for_compiles()
    assert first == second == bits(f(x, w)) == bits(f(snp.asarray(x), snp.asarray(w)))


def test_jit_log_exp_is_the_identity_from_the_first_call():
    f = stagec.jit(lambda x: snp.log(snp.exp(x)))  # (stagec's passes fold log(exp(x)): the FAQ's example)
    assert float(f(100.0)) == 100.0
    assert float(f(100.0)) == 100.0


# lavapipe ends a shader's loops after 65535 iterations: a longer scan is a clear error there
# (tests/test_lavapipe.py), so there cumsum takes that many elements.
_SCAN = loops.loop_limit("vulkan") if stagec.config.default_backend == "vulkan" else None
EAGER = {"exp": snp.exp, "tanh": snp.tanh, "log1p": lambda x: snp.log1p(snp.abs(x)), "sin": snp.sin,
         "sum": lambda x: snp.sum(x), "add": lambda x: x + 1.5, "mul": lambda x: x * x, "div": lambda x: x / 3.0,
         "sqrt": lambda x: snp.sqrt(snp.abs(x)), "max": lambda x: snp.maximum(x, 0.25),
         "where": lambda x: snp.where(x > 0, x, -x), "cumsum": snp.cumsum if _SCAN is None else lambda x: snp.cumsum(x[:_SCAN]),
         "int_add": lambda x: snp.clip(x, -1e6, 1e6).astype(np.int32) * 3 + 1,
         "transpose": lambda x: x[:36].reshape(3, -1).T,
         "slice": lambda x: x[::3],
         # a composite of elementwise steps (one module from 2^17 elements), and rules of several passes (kernels
         # from 8K elements)
         "silu": stagec.nn.silu, "hypot": lambda x: snp.hypot(x, 0.5), "sigmoid": stagec.nn.sigmoid, "sinh": snp.sinh}


def eager_input(n: int = 100_003) -> np.ndarray:
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32) * 30
    x[:6] = [0.0, -0.0, np.inf, -np.inf, 1e-40, -3e-39]  # (zeros, infinities, subnormals)
    return x


@pytest.mark.parametrize("name", EAGER)
def test_eager_bits_before_and_after_the_kernel_compiles(name):
    x = snp.asarray(eager_input())
    op = EAGER[name]
    before = bits(op(x))
    assert eager.wait_for_kernels(300)
    assert bits(op(x)) == before
    for part in (x[:37], snp.concatenate([x, x, x])):  # (other size classes: a shape-polymorphic kernel; one
        before = bits(op(part))                         # past eager.HOST_MAX_ELEMENTS, on several threads)
        assert eager.wait_for_kernels(300)
        assert bits(op(part)) == before


def test_exact_rules_only_for_exact_primitives():
    """The operations that swap to their kernel are the exact ones; a transcendental one never compiles one on the
    CPU with the default config, so its bits cannot change."""
    from stagec.primitives import elementwise as ew, reductions as red
    f32 = [stagec.core.ShapedArray((5,), np.float32)]
    i32 = [stagec.core.ShapedArray((5,), np.int32)]
    assert eager.exact(ew.add_p, i32 * 2, i32) and eager.exact(ew.select_p, [i32[0].update(dtype=np.bool_)] + f32 * 2,
                                                               f32)
    assert not eager.exact(ew.exp_p, f32, f32) and not eager.exact(red.reduce_sum_p, f32, f32[:0])
    assert not eager.exact(ew.sqrt_p, f32, f32)  # (IREE's CPU kernels flush subnormals)
    if stagec.default_backend() != "cpu":  # (elsewhere eager arrays live on the device: kernels answer every call)
        return
    x = snp.asarray(eager_input(1000))
    compiles = eager.stats["compiles"]
    for _ in range(3):
        snp.exp(x)
        eager.wait_for_kernels()
    assert eager.stats["compiles"] == compiles


SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import stagec, stagec.numpy as snp
    from test_determinism import EAGER, WORKLOADS, eager_input, inputs
    x, w = inputs()
    out = {}
    for name, fn in WORKLOADS.items():
        out["jit " + name] = np.asarray(stagec.jit(lambda x, w: fn(snp, x, w))(x, w)).tobytes().hex()
    e = snp.asarray(eager_input())
    for name, op in EAGER.items():
        out["eager " + name] = np.asarray(op(e)).tobytes().hex()
    stagec.wait_for_compiles()
    stagec.eager.wait_for_kernels()
    print(json.dumps(out))
""")


@pytest.mark.compile  # (it compiles in a subprocess: not in --fast)
def test_cold_and_warm_cache_processes_give_the_same_bits(tmp_path):
    """A process on an empty cache, then one that finds every module on disk: the same bits, and this process's."""
    env = dict(_default_env(), STAGEC_CACHE_DIR=str(tmp_path / "cache"))
    run = lambda: json.loads(subprocess.run([sys.executable, "-c", SCRIPT, os.path.join(ROOT, "tests")], env=env,
                                            capture_output=True, text=True, timeout=600, check=True).stdout)
    cold, warm = run(), run()
    assert cold == warm
    assert len(os.listdir(tmp_path / "cache")) > 5  # (the second process found modules on disk)
    x, w = inputs()
    for name, fn in WORKLOADS.items():
        assert bits(stagec.jit(lambda x, w: fn(snp, x, w))(x, w)).hex() == cold["jit " + name], name
