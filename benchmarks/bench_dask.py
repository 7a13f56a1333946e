"""stagec on a Dask `LocalCluster` of worker processes (one thread each, IREE and BLAS on one thread each).

    .venv/bin/python benchmarks/bench_dask.py [--repeat 3] [--blocks 16] [--skip-train]

1. Throughput of a compute-bound map (a chain of transcendentals over (1000, 4096) float32 blocks, each reduced
   to its row sums) with 1 and 2 workers: blocks per second, and the speedup (goal >= 1.7x on 2 cores).
2. Per-task overhead: a cheap function over 400 blocks of 64x64 through `map_blocks`, stagec against NumPy.
3. Compiles per worker in the timed runs (the client compiles each signature once; workers run what it ships).
4. Data-parallel training: 20 steps of an MLP on 200,000 rows in 8 shards (per-shard value_and_grad, gradients
   summed in a tree), its loss curve against the single-process full-batch run's.

The machine's load average is printed before and after: on a shared machine the speedup is what the other
processes leave of the second core. Times are medians of `--repeat` runs after a warm-up run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

os.environ.setdefault("STAGEC_CPU_THREADS", "1")  # (inherited by the workers: one core each)
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import cloudpickle  # noqa: E402
import numpy as np  # noqa: E402

import dask  # noqa: E402
import dask.array as da  # noqa: E402
from distributed import Client, LocalCluster, wait  # noqa: E402

import stagec  # noqa: E402
import stagec.dask as sdask  # noqa: E402
import stagec.numpy as snp  # noqa: E402
from stagec import tree_util  # noqa: E402


def heavy(b):
    y = b
    for _ in range(6):
        y = snp.sin(y) * 0.9 + snp.cos(y * 0.5) * 0.3
    return snp.sum(y, axis=1)


def heavy_numpy(b):
    y = b
    for _ in range(6):
        y = np.sin(y) * np.float32(0.9) + np.cos(y * np.float32(0.5)) * np.float32(0.3)
    return y.sum(axis=1)


def cheap(b):
    return b * 2.0 + 1.0


def median_time(fn, repeat: int) -> float:
    fn()  # warm-up: loads, first calls
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def cluster(n: int) -> tuple[LocalCluster, Client]:
    c = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40)
    return c, Client(c)


def stats_delta(client, before):
    after = client.run(sdask.stats)
    keys = ("compiles", "traces", "shipped", "iree_compiles")
    return {w: {k: after[w][k] - before.get(w, {}).get(k, 0) for k in keys} for w in after}


def throughput(n_workers: int, blocks: int, repeat: int) -> tuple[float, dict]:
    cl, client = cluster(n_workers)
    try:
        x = da.random.RandomState(0).random_sample((blocks * 1000, 4096), chunks=(1000, 4096)).astype("float32")
        x = x.persist()
        wait(x)
        f = stagec.jit(heavy)
        f(np.zeros((1000, 4096), np.float32))  # compiled once, here
        y = sdask.map_blocks(f, x, chunks=(1000,), drop_axis=1)
        before = client.run(sdask.stats)
        y.sum().compute()  # (warm-up, outside the CPU count)
        cpu0 = client.run(time.process_time)
        t = median_time(lambda: y.sum().compute(), repeat)
        cpu = {w: v - cpu0[w] for w, v in client.run(time.process_time).items()}
        # CPU seconds a block (the timed runs and median_time's warm-up: repeat + 1 runs), per worker
        per_block = sum(cpu.values()) / (blocks * (repeat + 1))
        return blocks / t, stats_delta(client, before), len(cloudpickle.dumps(f)), (per_block, sorted(cpu.values()))
    finally:
        client.close()
        cl.close()


def story(f_np, f) -> tuple[float, float, float]:
    """The issue's first example at its size: `x.map_blocks(stagec.jit(f), dtype=...)`, `y.sum().compute()`, on 2
    workers; (relative error against the same map in float64 NumPy, seconds, seconds of the NumPy float32 map)."""
    cl, client = cluster(2)
    try:
        x = da.random.RandomState(1).random_sample((20_000, 4096), chunks=(1_000, 4096)).astype("float32").persist()
        wait(x)
        t = time.perf_counter()
        got = x.map_blocks(stagec.jit(f), dtype="float32").sum().compute()
        t_s = time.perf_counter() - t
        want = x.map_blocks(lambda b: f_np(b.astype(np.float64)), dtype="float64").sum().compute()
        t = time.perf_counter()
        x.map_blocks(f_np, dtype="float32").sum().compute()
        return abs(float(got) - want) / abs(want), t_s, time.perf_counter() - t
    finally:
        client.close()
        cl.close()


def _call_cost(f, g, shape, n: int = 2000) -> tuple[float, float]:
    """On a worker: seconds per call of `f` (jitted, NumPy block in, NumPy out) and of `g` (NumPy) on one block."""
    b = np.ones(shape, np.float32)
    out = []
    for fn in (lambda: np.asarray(f(b)), lambda: g(b)):
        fn()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t) / n)
    return tuple(out)


def overhead(repeat: int) -> tuple[float, float, int, tuple]:
    cl, client = cluster(2)
    try:
        n = 400
        x = da.ones((n * 64, 64), chunks=(64, 64), dtype="float32").persist()
        wait(x)
        f = stagec.jit(cheap)
        f(np.zeros((64, 64), np.float32))
        ys = sdask.map_blocks(f, x)
        yn = x.map_blocks(cheap, dtype="float32")
        t_s = median_time(lambda: ys.sum().compute(), repeat)
        t_n = median_time(lambda: yn.sum().compute(), repeat)
        calls = next(iter(client.run(_call_cost, f, cheap, (64, 64)).values()))
        return t_s / n, t_n / n, n, calls
    finally:
        client.close()
        cl.close()


def mlp_loss(p, xb, yb):
    h = snp.tanh(xb @ p["w1"] + p["b1"])
    return snp.sum((h @ p["w2"] + p["b2"] - yb) ** 2)


def train(steps: int = 20, n: int = 200_000, shards: int = 8):
    d, hidden, lr = 16, 64, 0.05
    rs = np.random.RandomState(0)
    x = rs.standard_normal((n, d)).astype(np.float32)
    y = np.sin(x @ rs.standard_normal((d, 1)).astype(np.float32) * 0.5).astype(np.float32)
    p0 = {"w1": (rs.standard_normal((d, hidden)) * 0.3).astype(np.float32), "b1": np.zeros(hidden, np.float32),
          "w2": (rs.standard_normal((hidden, 1)) * 0.3).astype(np.float32), "b2": np.zeros(1, np.float32)}
    vag = stagec.jit(stagec.value_and_grad(mlp_loss))

    def step(p, g):
        return {k: (p[k] - lr * np.asarray(g[k]) / n).astype(np.float32) for k in p}

    p, single = dict(p0), []
    t = time.perf_counter()
    for _ in range(steps):
        loss, g = vag(p, x, y)
        single.append(float(loss) / n)
        p = step(p, g)
    t_single = time.perf_counter() - t

    cl, client = cluster(2)
    try:
        rows = n // shards
        xs = da.from_array(x, chunks=(rows, d)).persist()
        ys = da.from_array(y, chunks=(rows, 1)).persist()
        wait([xs, ys])
        vag(p0, x[:rows], y[:rows])  # the shard's signature, compiled once here
        shard = dask.delayed(lambda p, xb, yb: tree_util.tree_map(np.asarray, vag(p, xb, yb)), pure=True)
        add = lambda a, b: tree_util.tree_map(np.add, a, b)  # noqa: E731
        before = client.run(sdask.stats)
        p, dist = dict(p0), []
        t = time.perf_counter()
        for _ in range(steps):
            loss, g = sdask.tree_reduce(add, [shard(p, xb, yb) for xb, yb in zip(xs.to_delayed().ravel(),
                                                                                 ys.to_delayed().ravel())]).compute()
            dist.append(float(loss) / n)
            p = step(p, g)
        t_dist = time.perf_counter() - t
        compiles = stats_delta(client, before)
    finally:
        client.close()
        cl.close()
    single, dist = np.array(single), np.array(dist)
    return single, dist, t_single / steps, t_dist / steps, compiles


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--blocks", type=int, default=16)
    ap.add_argument("--skip-train", action="store_true")
    ap.add_argument("--skip-story", action="store_true", help="skip the issue's first example at full size")
    a = ap.parse_args()
    warnings.filterwarnings("ignore", "Sending large graph")  # (the training data, embedded once)
    os.environ.setdefault("STAGEC_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "stagec"))
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    if not a.skip_story:
        err, t_s, t_n = story(lambda b: np.tanh(b) * 2 + 1, lambda b: snp.tanh(b) * 2 + 1)
        print(f"x.map_blocks(stagec.jit(f), dtype='float32').sum() over 20,000x4096, 20 blocks, 2 workers: relative "
              f"error {err:.1e} against float64 NumPy; {t_s:.2f} s with the first compiles (NumPy float32: "
              f"{t_n:.2f} s)")
    one, c1, size, cpu1 = throughput(1, a.blocks, a.repeat)
    two, c2, _, cpu2 = throughput(2, a.blocks, a.repeat)
    print(f"compute-bound map, {a.blocks} blocks of 1000x4096 float32: 1 worker {one:.2f} blocks/s, "
          f"2 workers {two:.2f} blocks/s: {two / one:.2f}x (load average now {os.getloadavg()[0]:.2f})")
    print(f"  worker CPU seconds a block: {cpu1[0]:.3f} with 1 worker, {cpu2[0]:.3f} with 2 (split "
          f"{' / '.join(f'{c:.1f}' for c in cpu2[1])} s): the speedup 2 free cores would give is "
          f"{sum(cpu2[1]) / max(cpu2[1]) * cpu1[0] / cpu2[0]:.2f}x")
    print(f"  the jitted function pickles to {size / 1e3:.1f} KB (with its compiled module)")
    print(f"  per-worker counters in the timed runs (1 worker): {list(c1.values())}")
    print(f"  per-worker counters in the timed runs (2 workers): {list(c2.values())}")
    t_s, t_n, n, (c_s, c_n) = overhead(a.repeat)
    print(f"per task, {n} blocks of 64x64 on 2 workers: stagec {t_s * 1e3:.2f} ms, NumPy {t_n * 1e3:.2f} ms "
          f"(+{(t_s - t_n) * 1e6:.0f} us per task; load average now {os.getloadavg()[0]:.2f})")
    print(f"  the block function alone, on a worker: stagec {c_s * 1e6:.1f} us a call, NumPy {c_n * 1e6:.1f} us")
    if not a.skip_train:
        single, dist, s1, s2, compiles = train()
        rel = np.max(np.abs(dist - single) / np.abs(single))
        print(f"training, 20 steps, MLP 16-64-1 on 200,000 rows: loss {single[0]:.5f} -> {single[-1]:.5f}; "
              f"8 shards on 2 workers vs one process: largest relative difference {rel:.1e}; "
              f"{s2 * 1e3:.0f} ms/step distributed, {s1 * 1e3:.0f} ms/step single process")
        print(f"  per-worker counters during training: {list(compiles.values())}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
