"""Dispatch counts, steady-state runtime and compile time per workload: no passes vs the default
pipeline vs the default pipeline with `fuse-all` (every cluster) for `fuse`, run side by side
(interleaved) in one process.

    .venv/bin/python benchmarks/bench_passes.py [--rounds 40] [--calls 10]
"""
from __future__ import annotations

import argparse
import os
import re
import statistics

os.environ.setdefault("STAGEC_CACHE", "0")  # time real compiles, not a persistent cache

import numpy as np

import stagec
import stagec.numpy as snp

# Steady state: each signature compiles before its first call (no quick tier; bench_latency measures that).
stagec.config.update("jit_tiering", "never")
stagec.config.update("eager_tiering", "never")
from stagec.backend import get_backend

from stagec.passes import DEFAULT_PIPELINE

from _timing import alternating, time_batch, timed

VARIANTS = {"none": "none", "default": "default",
            "fuse-all": [p if p != "fuse" else "fuse-all" for p in DEFAULT_PIPELINE]}  # every cluster fused


def selu(x):
    a, scale = 1.6732632423543772, 1.0507009873554805
    return scale * snp.where(x > 0, x, a * snp.exp(x) - a)


def sum_sq_sin(x):
    return snp.sum(x ** 2 + snp.sin(x))


def softmax(x):
    e = snp.exp(x - snp.max(x, axis=-1, keepdims=True))
    return e / snp.sum(e, axis=-1, keepdims=True)


def layernorm(x):
    mu = snp.mean(x, axis=-1, keepdims=True)
    var = snp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / snp.sqrt(var + 1e-5)


def mlp(x, w1, b1, w2, b2):
    return snp.maximum(x @ w1 + b1, 0.0) @ w2 + b2


def reshape_sin(x):
    return snp.sin(x.reshape(x.shape[0] * 2, -1)) + 1.0


def row_col_stats(x):
    y = x * x + 1.0
    return snp.sum(y, axis=0), snp.max(y, axis=1)


def workloads():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((512, 1024)).astype(np.float32)
    w = [rng.standard_normal((1024, 512)).astype(np.float32) * 0.03, rng.standard_normal(512).astype(np.float32),
         rng.standard_normal((512, 128)).astype(np.float32) * 0.03, np.zeros(128, np.float32)]
    return {"selu 512x1024": (selu, (x,)), "sum(x**2+sin x) 512x1024": (sum_sq_sin, (x,)),
            "softmax 512x1024": (softmax, (x,)), "layernorm 512x1024": (layernorm, (x,)),
            "mlp 512x1024->512->128": (mlp, (x, *w)),
            "sin(reshape x)+1 512x1024": (reshape_sin, (x,)), "sum(y,0), max(y,1), y=x*x+1": (row_col_stats, (x,))}


def dispatch_count(mlir: str) -> int:
    """`flow.dispatch` ops in the module IREE forms from `mlir` with stagec's own flags."""
    import iree.compiler as ic
    flow = ic.compile_str(mlir, target_backends=["llvm-cpu"], input_type="stablehlo",
                          extra_args=[*get_backend().compile_flags(), "--compile-to=flow"])
    return len(re.findall(rb"flow\.dispatch @", flow))


def measure(rounds: int, calls: int) -> list[dict]:
    rows = []
    for wname, (f, args) in workloads().items():
        dev_args = [stagec.device_put(a) for a in args]
        fns, row = {}, {"workload": wname}
        for v, spec in VARIANTS.items():
            compile_s, pass_s = [], []
            for _ in range(3):
                low = stagec.jit(f, passes=spec).lower(*args)
                t, compiled = timed(low.compile)
                compile_s.append(t)
                pass_s.append(sum(s.seconds for s in low.pass_stats))
            fns[v] = compiled
            row[v] = {"dispatches": dispatch_count(low.as_text("final")), "compile_ms": statistics.median(compile_s) * 1e3,
                      "passes_ms": statistics.median(pass_s) * 1e3, "times": []}
            for got, ref in zip(stagec.tree_util.tree_leaves(compiled(*dev_args)),
                                stagec.tree_util.tree_leaves(fns["none"](*dev_args))):
                np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-4, atol=1e-4)
        items = list(fns.items())
        for i in range(rounds):  # interleave variants, alternating order, so machine load hits them alike
            for v, fn in alternating(items, i):
                stagec.block_until_ready(fn(*dev_args))
                row[v]["times"].append(time_batch(lambda: fn(*dev_args), calls, stagec.block_until_ready))
        for v in fns:
            times = row[v].pop("times")
            row[v]["run_ms"], row[v]["best_ms"] = statistics.median(times) * 1e3, min(times) * 1e3
        rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    head = "| workload | " + " | ".join(f"dispatches {v}" for v in VARIANTS) + " | " + \
        " | ".join(f"median (best) ms {v}" for v in VARIANTS) + " | " + " | ".join(f"compile ms {v}" for v in VARIANTS) + " |"
    lines = [head, "|" + "---|" * (1 + 3 * len(VARIANTS))]
    for r in rows:
        cells = [str(r[v]["dispatches"]) for v in VARIANTS] + [f"{r[v]['run_ms']:.3f} ({r[v]['best_ms']:.3f})" for v in VARIANTS] + \
            [f"{r[v]['compile_ms']:.0f} ({r[v]['passes_ms']:.1f})" for v in VARIANTS]
        lines.append(f"| {r['workload']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n(compile ms: lower()+compile() wall time, median of 3; in parentheses the part spent in stagec passes)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=40, help="interleaved rounds per workload")
    ap.add_argument("--calls", type=int, default=10, help="calls timed together in each round")
    a = ap.parse_args()
    print(table(measure(a.rounds, a.calls)))


if __name__ == "__main__":
    main()
