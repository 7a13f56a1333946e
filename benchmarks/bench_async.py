"""Async dispatch: does a loop of dependent calls overlap Python and device work? (best of `--repeat` interleaved runs)

  python benchmarks/bench_async.py                   # CPU: stagec sync vs async, JAX; tiny-call overhead
  STAGEC_BACKEND=vulkan XDG_RUNTIME_DIR=$(mktemp -d) python benchmarks/bench_async.py   # Vulkan (lavapipe here)

Each step of the loop is `x = f(x, w)` followed by `python_ms` of pure-Python work that holds the GIL (the
worst case for a worker thread). `f` is first a 3 ms sleep in a host callback (device work that needs no CPU,
as a GPU's: it shows the overlap even on a busy machine), then dense layers on `n`x`n` float32 (512:
local-task on the CPU, 256: local-sync). Synchronous dispatch
takes about device + Python per step; asynchronous about max(device, Python) plus the hand-offs. `overlap`
is the share of the shorter of the two that was hidden: (device + Python - both) / min(device, Python).
The worker thread needs the GIL to start and finish each call: a caller busy in Python holds it for up to
`sys.getswitchinterval()` (5 ms); the row "switch interval 0.5ms" shows the loop with a shorter one. On a
machine whose cores are all busy (the load average is printed) nothing can overlap.
Rows for JAX (on its CPU) appear when `jax` is installed.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import stagec
import stagec.numpy as snp

# Steady state: each signature compiles before its first call (no quick tier; bench_latency measures that).
stagec.config.update("jit_tiering", "never")
stagec.config.update("eager_tiering", "never")

from _timing import elapsed, import_jax

jax, jnp = import_jax()


def python_work(iters: int) -> int:
    s = 0
    for i in range(iters):
        s += i * i % 7
    return s


def calibrate(ms: float) -> int:
    """Loop iterations of `python_work` taking about `ms` milliseconds here."""
    n = 20000
    t = min(elapsed(lambda: python_work(n)) for _ in range(5))
    return max(1, int(n * ms / 1e3 / t))


def layers(np_, depth: int):
    def f(x, w):
        for _ in range(depth):
            x = np_.tanh(x @ w) * 0.5 + 0.25
        return x
    return f


def stagec_loop(fun, mode: str, x0, w, steps: int, iters: int):
    stagec.config.update("async_dispatch", mode)
    f = stagec.jit(lambda a, b: fun(a, b))  # a new function: its executable reads the mode when loaded (first call)
    f(x0, w).block_until_ready()
    stagec.config.update("async_dispatch", "auto")
    return dependent_loop(f, x0, w, steps, iters)


def dependent_loop(f, x0, w, steps: int, iters: int):
    """A run of `steps` steps `x = f(x, w)`, each followed by `iters` of Python work; waits for the last x."""
    def run():
        x = x0
        for _ in range(steps):
            x = f(x, w)
            if iters:
                python_work(iters)
        x.block_until_ready()
    return run


def switch_interval(run, seconds: float):
    """`run` with the GIL's switch interval set to `seconds`."""
    def wrapped():
        old = sys.getswitchinterval()
        sys.setswitchinterval(seconds)
        try:
            run()
        finally:
            sys.setswitchinterval(old)
    return wrapped


def sleeping(ms: float):
    """A host function standing for device work that uses no CPU (as a GPU's): sleeps, returns its input."""
    def device(v):
        time.sleep(ms / 1e3)
        return v
    return device


def overlap_table(n: int, depth: int, steps: int, python_ms: float, repeat: int, sleep_ms: float = 0.0) -> None:
    backend = stagec.default_backend()
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((n, n), dtype=np.float32)
    w_np = (rng.standard_normal((n, n), dtype=np.float32) / np.sqrt(n)).astype(np.float32)
    x, w = stagec.device_put(x_np), stagec.device_put(w_np)
    iters = calibrate(python_ms)
    if sleep_ms:  # device work = a sleep in a host callback: overlap needs no idle core
        stagec_f = lambda a, b: stagec.pure_callback(sleeping(sleep_ms), a, a) + b  # noqa: E731
        jax_f = lambda a, b: jax.pure_callback(sleeping(sleep_ms), a, a) + b  # noqa: E731
        what = f"x = sleep {sleep_ms} ms in a host callback (x) + w"
    else:
        stagec_f, jax_f = layers(snp, depth), jax and layers(jnp, depth)
        what = f"{depth} x (x = tanh(x @ w)*0.5+0.25)"
    exe = stagec.jit(stagec_f).lower(x, w).compile().runner.exe
    runs = {"python": lambda: [python_work(iters) for _ in range(steps)]}
    for name, mode in (("stagec sync", "never"), ("stagec async (auto)", "auto")):
        runs[name] = stagec_loop(stagec_f, mode, x, w, steps, 0)
        runs[name + "+"] = stagec_loop(stagec_f, mode, x, w, steps, iters)
    runs["  switch interval 0.5ms"] = runs["stagec async (auto)"]
    runs["  switch interval 0.5ms+"] = switch_interval(runs["stagec async (auto)+"], 5e-4)
    if jax is not None and backend == "cpu":
        xj, wj = jax.device_put(x_np), jax.device_put(w_np)
        for name, it in (("jax (cpu)", 0), ("jax (cpu)+", iters)):
            runs[name] = dependent_loop(jax.jit(jax_f), xj, wj, steps, it)
    best = {k: float("inf") for k in runs}
    for _ in range(repeat):  # interleaved, best of `repeat`: the machine is shared
        for k, run in runs.items():
            best[k] = min(best[k], elapsed(run) / steps)
    py = best.pop("python")
    print(f"Dependent loop on {backend} ({exe.driver}): {steps} steps of {what}, {n}x{n} float32, + "
          f"{py * 1e3:.2f} ms of Python; ms per step, best of {repeat} "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"  {'':22s}{'device only':>12s}{'+ Python':>10s}{'overlap':>9s}")
    for name in [k for k in best if not k.endswith("+")]:
        dev, both = best[name], best[name + "+"]
        print(f"  {name:22s}{dev * 1e3:12.2f}{both * 1e3:10.2f}{(dev + py - both) / min(dev, py):9.0%}")
    print()


def tiny_table(repeat: int) -> None:
    print("Call overhead of a tiny jitted call (x + 1.0 on a device scalar), us per call, best of "
          f"{repeat} runs of 5000 calls")
    s = stagec.device_put(np.float32(1.0))
    rows = []
    for mode in ("never", "auto", "always"):
        stagec.config.update("async_dispatch", mode)
        f = stagec.jit(lambda v: v + 1.0)  # a new function: its executable reads the mode when loaded
        f(s).block_until_ready()
        stagec.config.update("async_dispatch", "auto")
        rows.append((f"stagec.jit ({mode})", f, s))
    if jax is not None:
        rows.append(("jax.jit", jax.jit(lambda v: v + 1.0), jax.device_put(np.float32(1.0))))
    for name, f, v in rows:
        def loop(f=f, v=v):
            for _ in range(5000):
                y = f(v)
            y.block_until_ready()
        loop()
        best = min(elapsed(loop) for _ in range(repeat)) / 5000
        print(f"  {name:26s}{best * 1e6:8.2f}")
    print()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="256x4,512x1", help="n x depth of each loop (512: local-task on the CPU, "
                   "256: local-sync, one core)")
    p.add_argument("--sleep-ms", type=float, default=3.0, help="device time of the sleeping loop (0: none)")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--python-ms", type=float, default=3.0)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("table", nargs="?", choices=["overlap", "tiny"])
    ns = p.parse_args()
    if ns.table in (None, "tiny"):
        tiny_table(ns.repeat)
    if ns.table in (None, "overlap"):
        if ns.sleep_ms:
            overlap_table(64, 0, ns.steps, ns.python_ms, ns.repeat, ns.sleep_ms)
        for size in ns.sizes.split(","):
            n, depth = (int(v) for v in size.split("x"))
            overlap_table(n, depth, ns.steps, ns.python_ms, ns.repeat)


if __name__ == "__main__":
    main()
