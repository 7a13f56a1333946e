"""GPU workloads: stagec vs JAX on the same GPU (steady-state medians, relative error vs float64 NumPy).

  python benchmarks/bench_gpu.py                 # every GPU backend IREE finds here (cuda, vulkan)
  python benchmarks/bench_gpu.py cuda --quick    # one backend, fewer repeats
Columns: stagec with its default flags, then variants compiled with other flags or arch (to choose them by
measurement), JAX at its default precision (`jax`) and at "highest" (`jax hi`, where it differs), and the
ratio stagec / JAX at equal precision (float32 matmuls against `jax hi`). The last row is the geomean.
Inputs are fresh random data (never zeros); each result's relative error is checked before it is timed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

import stagec
import stagec.numpy as snp
from stagec.backend import gpu_backends
from stagec.dtypes import bfloat16

import _workloads
from _timing import geomean, import_jax
from _workloads import layernorm, softmax

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX shares the GPU with stagec here
jax, jnp = import_jax()

SPLIT = "--iree-dispatch-creation-enable-split-reduction"
VARIANTS = {"cuda": {"sm_89": dict(arch="sm_89"), "no split": dict(flags=[SPLIT + "=false"])},
            "vulkan": {"+split": dict(flags=[SPLIT])}}


def selu(m, x):
    return _workloads.selu(m, x, alpha=1.67, scale=1.05)


def mlp(m, x, w1, w2):
    return m.maximum(x @ w1, 0.0) @ w2


def rand(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed + len(shape)).standard_normal(shape).astype(dtype)


# name, function of (module, *args), inputs, tolerance (relative L2 error vs float64), is an f32 matmul
WORKLOADS = [
    ("selu 1M", selu, lambda: [rand(1 << 20)], 1e-5, False),
    ("sum(x**2+sin x) 1M", lambda m, x: m.sum(x ** 2 + m.sin(x)), lambda: [rand(1 << 20)], 1e-3, False),
    ("FAQ x.T@(x-mean) 1000^2", lambda m, x: x.T @ (x - x.mean(axis=0)), lambda: [rand(1000, 1000)], 1e-3, True),
    ("matmul 1024 f32", lambda m, a, b: a @ b, lambda: [rand(1024, 1024), rand(1024, 1024, seed=1)], 1e-3, True),
    ("matmul 4096 f32", lambda m, a, b: a @ b, lambda: [rand(4096, 4096), rand(4096, 4096, seed=1)], 1e-3, True),
    ("matmul 4096 f16", lambda m, a, b: a @ b,
     lambda: [rand(4096, 4096, dtype=np.float16), rand(4096, 4096, dtype=np.float16, seed=1)], 1e-2, False),
    ("matmul 4096 bf16", lambda m, a, b: a @ b, lambda: [rand(4096, 4096, dtype=bfloat16),
                                                         rand(4096, 4096, dtype=bfloat16, seed=1)], 2e-2, False),
    ("softmax 4096x1024", softmax, lambda: [rand(4096, 1024)], 1e-5, False),
    ("layernorm 4096x1024", layernorm, lambda: [rand(4096, 1024)], 1e-5, False),
    ("MLP 256x512x2048", mlp, lambda: [rand(256, 512), rand(512, 2048, seed=1) / 20, rand(2048, 512, seed=2) / 40],
     1e-3, True),
    ("selu 64M", selu, lambda: [rand(1 << 26)], 1e-5, False),
    ("tiny call x+1", lambda m, x: x + 1, lambda: [np.float32(3.0)], 1e-7, False),
]


def median_ms(fn, budget_s: float) -> float:
    for _ in range(3):
        fn()
    times, t_end = [], time.perf_counter() + budget_s
    while len(times) < 5 or (time.perf_counter() < t_end and len(times) < 2000):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def rel_err(got, ref) -> float:
    got = np.asarray(got, np.float64)
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))


def run(backend: str, budget_s: float, only: str | None) -> None:
    stagec.config.update("default_backend", backend)
    variants = VARIANTS.get(backend, {})
    jdev = None
    if jax is not None:
        gpus = [d for d in jax.devices() if d.platform == "gpu"]
        jdev = gpus[0] if gpus else None
    print(f"\n## stagec on {backend} vs JAX on {jdev} (median ms per call; err = relative L2 error vs float64)")
    head = ["workload", "stagec", *variants, "jax", "jax hi", "ratio", "err stagec", "err jax"]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    ratios = []
    for name, fn, make, tol, f32_matmul in WORKLOADS:
        if only and only not in name:
            continue
        args = make()
        ref = fn(np, *[a.astype(np.float64) for a in args])
        row = {"workload": name}
        xs = [stagec.device_put(a) for a in args]
        f = stagec.jit(lambda *a: fn(snp, *a))
        try:
            out = f(*xs)
            err = rel_err(out, ref)
            row["err stagec"] = f"{err:.1e}" + ("" if err <= tol else " WRONG")
            row["stagec"] = median_ms(lambda: f(*xs).block_until_ready(), budget_s)
        except Exception as e:  # a workload a backend cannot do yet is reported, not fatal
            row["stagec"], row["err stagec"] = None, f"{type(e).__name__}: {str(e).splitlines()[0][:60]}"
        for vname, kw in variants.items():
            try:
                c = f.lower(*xs).compile(**kw)
                vout = c(*xs)
                verr = rel_err(vout, ref)
                row[vname] = median_ms(lambda: c(*xs).block_until_ready(), budget_s) if verr <= tol else "WRONG"
            except Exception as e:
                row[vname] = type(e).__name__
        if jdev is not None:
            js = [jax.device_put(a, jdev) for a in args]
            g = jax.jit(lambda *a: fn(jnp, *a))
            row["err jax"] = f"{rel_err(g(*js), ref):.1e}"
            row["jax"] = median_ms(lambda: g(*js).block_until_ready(), budget_s)
            if f32_matmul:
                with jax.default_matmul_precision("highest"):
                    gh = jax.jit(lambda *a: fn(jnp, *a))
                    gh(*js)
                    row["jax hi"] = median_ms(lambda: gh(*js).block_until_ready(), budget_s)
            peer = row.get("jax hi", row["jax"])
            if isinstance(row["stagec"], float):
                row["ratio"] = row["stagec"] / peer
                ratios.append(row["ratio"])
        cells = [row.get(h) for h in head]
        print("| " + " | ".join("" if c is None else f"{c:.3f}" if isinstance(c, float) else str(c)
                                for c in cells) + " |", flush=True)
    if ratios:
        print(f"| **geomean** (stagec / jax at equal precision, {len(ratios)} workloads) | | "
              + "| " * len(variants) + f"| | **{geomean(ratios):.2f}** | | |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("backends", nargs="*", help="cuda, vulkan (default: every GPU backend here; cpu: a dry run)")
    p.add_argument("--quick", action="store_true", help="0.2 s per measurement instead of 1 s")
    p.add_argument("-k", dest="only", help="only workloads whose name contains this")
    a = p.parse_args(argv)
    backends = a.backends or gpu_backends()
    if not backends:
        print("No GPU found by IREE's cuda or vulkan drivers (lavapipe does not count): nothing to measure.")
        return 0
    for b in backends:
        run(b, 0.2 if a.quick else 1.0, a.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
