"""Core figures, measured side by side in one process (medians; ratios are what to compare).

  python benchmarks/bench_core.py            # SELU table, call overhead, CPU driver crossover
Rows for JAX appear when `jax` is installed (`pip install -e .[bench]`)."""
from __future__ import annotations

import statistics
import time

import numpy as np

import stagec
import stagec.numpy as snp
from stagec import backend as _backend

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # JAX is an optional comparison only
    jax = None


def median_time(fn, repeat: int, warmup: int = 2) -> float:
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


def fmt(s: float) -> str:
    return f"{s * 1e3:10.3f} ms" if s >= 1e-3 else f"{s * 1e6:10.1f} us"


def selu(np_, x, alpha=1.67, lambda_=1.05):
    return lambda_ * np_.where(x > 0, x, alpha * np_.exp(x) - alpha)


def selu_table(n: int = 1_000_000) -> None:
    print(f"SELU on {n:,} float32 (median time per call)")
    x_np = (np.arange(n, dtype=np.float32) / n * 10 - 5).astype(np.float32)
    x = stagec.device_put(x_np)
    rows = [("NumPy", median_time(lambda: selu(np, x_np), 30))]
    stagec.clear_caches()
    rows.append(("stagec eager, first call", first_call(lambda: selu(snp, x).block_until_ready())))
    rows.append(("stagec eager, steady", median_time(lambda: selu(snp, x).block_until_ready(), 30)))
    f = stagec.jit(lambda v: selu(snp, v))
    rows.append(("stagec jit, first call", first_call(lambda: f(x).block_until_ready())))
    rows.append(("stagec jit, steady", median_time(lambda: f(x).block_until_ready(), 200)))
    if jax is not None:
        xj = jax.device_put(x_np)
        fj = jax.jit(lambda v: selu(jnp, v))
        rows.append(("jax.jit, first call", first_call(lambda: fj(xj).block_until_ready())))
        rows.append(("jax.jit, steady", median_time(lambda: fj(xj).block_until_ready(), 200)))
    base = dict(rows)["stagec jit, steady"]
    for name, t in rows:
        print(f"  {name:28s}{fmt(t)}   {t / base:8.2f}x stagec jit")
    print()


def overhead_table() -> None:
    print("Cache-hit call overhead of a jitted scalar function (x + 1.0 on a device scalar)")
    s = stagec.device_put(np.float32(1.0))
    f = stagec.jit(lambda v: v + 1.0)
    f(s)
    rows = [("stagec.jit", median_time(lambda: f(s), 20000, warmup=100))]
    if jax is not None:
        sj = jax.device_put(np.float32(1.0))
        fj = jax.jit(lambda v: v + 1.0)
        fj(sj).block_until_ready()
        rows.append(("jax.jit", median_time(lambda: fj(sj), 20000, warmup=100)))
    for name, t in rows:
        print(f"  {name:28s}{fmt(t)}")
    print()


def driver_table() -> None:
    """Why TASK_THRESHOLD: the same elementwise function on local-sync vs local-task, by size."""
    print(f"CPU driver by problem size (exp(x) * 2 + 1, median per call); stagec switches at "
          f"{_backend.TASK_THRESHOLD:,} elements")
    saved = _backend.TASK_THRESHOLD
    print(f"  {'elements':>10s} {'local-sync':>13s} {'local-task':>13s}")
    try:
        for n in (1_000, 16_384, 65_536, 262_144, 1_000_000):
            x = stagec.device_put(np.ones(n, np.float32))
            times = []
            for threshold in (1 << 62, 0):  # force local-sync, then local-task
                _backend.TASK_THRESHOLD = threshold
                f = stagec.jit(lambda v: snp.exp(v) * 2 + 1)
                stagec.clear_caches()
                f(x)
                times.append(median_time(lambda: f(x), 300 if n < 100_000 else 100))
            print(f"  {n:>10,d} {fmt(times[0]):>13s} {fmt(times[1]):>13s}")
    finally:
        _backend.TASK_THRESHOLD = saved
        stagec.clear_caches()
    print()


if __name__ == "__main__":
    selu_table()
    overhead_table()
    driver_table()
