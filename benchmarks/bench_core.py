"""Core figures, measured side by side in one process (medians; ratios are what to compare).

  python benchmarks/bench_core.py            # SELU table, call overhead, CPU driver crossover, dtypes
  python benchmarks/bench_core.py dtypes     # one table: selu, overhead, driver or dtypes
Rows for JAX appear when `jax` is installed (`pip install -e .[bench]`)."""
from __future__ import annotations

import numpy as np

import stagec
import stagec.numpy as snp

# Steady state: each signature compiles before its first call (no quick tier; bench_latency measures that).
stagec.config.update("jit_tiering", "never")
stagec.config.update("eager_tiering", "never")
from stagec import backend as _backend

import _workloads
from _timing import elapsed, fmt, import_jax, median_time

jax, jnp = import_jax()


def selu(np_, x):
    return _workloads.selu(np_, x, alpha=1.67, scale=1.05)


def selu_table(n: int = 1_000_000) -> None:
    print(f"SELU on {n:,} float32 (median time per call)")
    x_np = (np.arange(n, dtype=np.float32) / n * 10 - 5).astype(np.float32)
    x = stagec.device_put(x_np)
    rows = [("NumPy", median_time(lambda: selu(np, x_np), 30))]
    stagec.clear_caches()
    rows.append(("stagec eager, first call", elapsed(lambda: selu(snp, x).block_until_ready())))
    rows.append(("stagec eager, steady", median_time(lambda: selu(snp, x).block_until_ready(), 30)))
    f = stagec.jit(lambda v: selu(snp, v))
    rows.append(("stagec jit, first call", elapsed(lambda: f(x).block_until_ready())))
    rows.append(("stagec jit, steady", median_time(lambda: f(x).block_until_ready(), 200)))
    if jax is not None:
        xj = jax.device_put(x_np)
        fj = jax.jit(lambda v: selu(jnp, v))
        rows.append(("jax.jit, first call", elapsed(lambda: fj(xj).block_until_ready())))
        rows.append(("jax.jit, steady", median_time(lambda: fj(xj).block_until_ready(), 200)))
    base = dict(rows)["stagec jit, steady"]
    for name, t in rows:
        print(f"  {name:28s}{fmt(t, 10)}   {t / base:8.2f}x stagec jit")
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
        print(f"  {name:28s}{fmt(t, 10)}")
    print()


def driver_table() -> None:
    """The CPU driver rule's scale: the same elementwise function on local-sync vs local-task, by size."""
    print(f"CPU driver by problem size (exp(x) * 2 + 1, median per call); stagec switches at a largest dispatch's "
          f"work of {_backend.TASK_WORK:,} (docs/runtime.md)")
    saved = _backend.TASK_WORK
    print(f"  {'elements':>10s} {'local-sync':>13s} {'local-task':>13s}")
    try:
        for n in (1_000, 16_384, 65_536, 262_144, 1_000_000):
            x = stagec.device_put(np.ones(n, np.float32))
            times = []
            for threshold in (1 << 62, 0):  # force local-sync, then local-task
                _backend.TASK_WORK = threshold
                f = stagec.jit(lambda v: snp.exp(v) * 2 + 1)
                stagec.clear_caches()
                f(x)
                times.append(median_time(lambda: f(x), 300 if n < 100_000 else 100))
            print(f"  {n:>10,d} {fmt(times[0]):>13s} {fmt(times[1]):>13s}")
    finally:
        _backend.TASK_WORK = saved
        stagec.clear_caches()
    print()


def dtype_table(n: int = 256) -> None:
    """An MLP layer (matmul + bias + gelu) and a 1M-element SELU in float32, float16 and bfloat16."""
    import ml_dtypes
    from stagec import nn
    print(f"Dtypes: MLP layer gelu(x @ w + b), x {n}x{n}, and SELU on 1M elements (median per call)")
    print(f"  {'dtype':>9s} {'mlp stagec':>13s} {'mlp jax':>13s} {'selu stagec':>13s} {'selu jax':>13s}")
    rng = np.random.default_rng(0)
    x32, w32 = rng.standard_normal((n, n), np.float32), rng.standard_normal((n, n), np.float32) / 16
    b32, v32 = rng.standard_normal(n, np.float32), rng.uniform(-5, 5, 1_000_000).astype(np.float32)
    mlp = stagec.jit(lambda x, w, b: nn.gelu(x @ w + b))
    sel = stagec.jit(lambda v: selu(snp, v))
    for dt in (np.float32, np.float16, ml_dtypes.bfloat16):
        x, w, b, v = (stagec.device_put(a.astype(dt)) for a in (x32, w32, b32, v32))
        row = [median_time(lambda: mlp(x, w, b).block_until_ready(), 50),
               median_time(lambda: sel(v).block_until_ready(), 50)]
        jrow = ["", ""]
        if jax is not None:
            jm = jax.jit(lambda x, w, b: jax.nn.gelu(x @ w + b))
            js = jax.jit(lambda v: selu(jnp, v))
            xj, wj, bj, vj = (jax.device_put(a.astype(dt)) for a in (x32, w32, b32, v32))
            jrow = [fmt(median_time(lambda: jm(xj, wj, bj).block_until_ready(), 50)),
                    fmt(median_time(lambda: js(vj).block_until_ready(), 50))]
        print(f"  {np.dtype(dt).name:>9s} {fmt(row[0]):>13s} {jrow[0]:>13s} {fmt(row[1]):>13s} {jrow[1]:>13s}")
    print()


if __name__ == "__main__":
    import sys
    tables = {"selu": selu_table, "overhead": overhead_table, "driver": driver_table, "dtypes": dtype_table}
    for name in sys.argv[1:] or tables:
        tables[name]()
