"""Reverse mode: `jit(value_and_grad(loss))` of an MLP 256x512x2048 (batch 256), beside JAX when installed.

    python benchmarks/bench_grad.py
Per-example gradients (`jit(vmap(grad(...)))`) are added when stagec has vmap."""
from __future__ import annotations

import statistics
import time

import numpy as np

import stagec
import stagec.numpy as snp

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # JAX is an optional comparison only
    jax = None

SIZES = (256, 512, 2048)
BATCH = 256


def median_time(fn, repeat: int = 20, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def first_call(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def loss(np_, params, x, y):
    for w, b in params[:-1]:
        x = np_.tanh(x @ w + b)
    w, b = params[-1]
    return np_.mean((x @ w + b - y) ** 2)


def host_data():
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((m, n)).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
              for m, n in zip(SIZES[:-1], SIZES[1:])]
    return params, rng.standard_normal((BATCH, SIZES[0])).astype(np.float32), \
        rng.standard_normal((BATCH, SIZES[-1])).astype(np.float32)


def run(name, np_, jit, value_and_grad, put, block):
    params, x, y = host_data()
    params, x, y = put(params), put(x), put(y)
    f = jit(value_and_grad(lambda p, x, y: loss(np_, p, x, y)))
    first = first_call(lambda: block(f(params, x, y)))
    steady = median_time(lambda: block(f(params, x, y)))
    print(f"  {name:8s} first call {first * 1e3:9.1f} ms   steady {steady * 1e3:8.3f} ms")
    return steady, f(params, x, y)


def main() -> None:
    print(f"jit(value_and_grad(loss)), MLP {'x'.join(map(str, SIZES))}, batch {BATCH}, float32 (median)")
    s, (v, g) = run("stagec", snp, stagec.jit, stagec.value_and_grad,
                    lambda t: stagec.tree_util.tree_map(snp.asarray, t),
                    lambda r: stagec.tree_util.tree_map(lambda a: a.block_until_ready(), r))
    if jax is not None:
        j, (jv, jg) = run("jax", jnp, jax.jit, jax.value_and_grad, lambda t: jax.tree_util.tree_map(jnp.asarray, t),
                          lambda r: jax.block_until_ready(r))
        err = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)) / (np.max(np.abs(np.asarray(b))) + 1e-12)))
                  for (a, b) in zip(stagec.tree_util.tree_leaves(g), jax.tree_util.tree_leaves(jg)))
        print(f"  stagec/jax steady-state ratio {s / j:.2f}; loss {float(v):.6f} vs {float(jv):.6f}; "
              f"max relative gradient difference {err:.1e}")
    text = stagec.make_mlir(stagec.value_and_grad(lambda p, x, y: loss(snp, p, x, y)))(*host_data())
    print(f"  one module: {text.count('func.func')} function(s), {text.count('stablehlo.dot_general')} dot_general "
          f"(forward 2 + backward 3), {text.count('stablehlo.tanh')} tanh")


if __name__ == "__main__":
    main()
