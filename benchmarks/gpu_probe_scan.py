"""On a GPU (CUDA; PROBE_BACKEND=cpu to try it here): an LSTM's gradient by `scan` at 40 and 80 steps as compiled now
and with `loops-on-one-device` added to the target's pipeline (ms per call, first call, max relative error against
float64 NumPy), then JAX's. Run from the project root (it reads tests/test_control_flow.py's LSTM).
  python3 benchmarks/gpu_probe_scan.py"""
import os
import sys
import time

import numpy as np
sys.path.insert(0, "tests")
import stagec
from stagec.compiler import targets
from test_control_flow import _lstm_grad, _lstm_grad64

r = np.random.RandomState(0)
p = {"wx": (r.standard_normal((8, 128)) * 0.3).astype(np.float32),
     "wh": (r.standard_normal((32, 128)) * 0.3).astype(np.float32), "b": np.zeros(128, np.float32)}
B = os.environ.get("PROBE_BACKEND", "cuda")
cuda = targets.TARGETS[B]
def med(f, *a):
    stagec.block_until_ready(f(*a)); ts = []
    for _ in range(20):
        t = time.perf_counter(); stagec.block_until_ready(f(*a)); ts.append(time.perf_counter() - t)
    return 1e3 * float(np.median(ts))
for placed in (False, True):
    targets.TARGETS[B] = cuda._replace(pipeline=cuda.pipeline._replace(finish=("loops-on-one-device",) if placed else ()))
    for T in (40, 80):
        xs = r.standard_normal((T, 4, 8)).astype(np.float32)
        f = stagec.jit(_lstm_grad(xs).fun, backend=B)
        t0 = time.perf_counter()
        try:
            got = f(p)
        except Exception as e:  # (placed, CUDA's 16 bindings a dispatch: the copies' dispatch held 30 on the H200)
            print(f"stagec placed={placed} T={T}: {type(e).__name__}: {str(e).splitlines()[-1][:160]}", flush=True)
            continue
        first = time.perf_counter() - t0
        want = _lstm_grad64(p, xs)
        err = max(float(np.max(np.abs(np.asarray(got[k]) - want[k]) / (np.abs(want[k]).max() + 1e-30))) for k in want)
        aff = "stream.affinity" in f.lower(p).as_text("final")
        print(f"stagec placed={placed} affinity={aff} T={T}: {med(f, p):.3f} ms, first {first:.2f} s, rel err {err:.1e}", flush=True)
try:
    import jax
    import jax.numpy as jnp
    for T in (40, 80):
        xs = r.standard_normal((T, 4, 8)).astype(np.float32)
        def loss(q):
            def cell(c, x):
                h, s = c
                i, f_, o, g = jnp.split(x @ q["wx"] + h @ q["wh"] + q["b"], 4, axis=-1)
                s = jax.nn.sigmoid(f_) * s + jax.nn.sigmoid(i) * jnp.tanh(g)
                h = jax.nn.sigmoid(o) * jnp.tanh(s)
                return (h, s), h
            z = jnp.zeros((xs.shape[1], 32))
            return jnp.mean(jax.lax.scan(cell, (z, z), xs)[1] ** 2)
        g = jax.jit(jax.grad(loss)); jax.block_until_ready(g(p)); ts = []
        for _ in range(20):
            t = time.perf_counter(); jax.block_until_ready(g(p)); ts.append(time.perf_counter() - t)
        print(f"jax {jax.devices()[0].platform} T={T}: {1e3 * float(np.median(ts)):.3f} ms", flush=True)
except Exception as e:
    print("jax:", e)
