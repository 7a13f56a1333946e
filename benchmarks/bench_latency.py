"""Latency of first results: an op-by-op session and the first call of jitted functions, each in a fresh process.

    python benchmarks/bench_latency.py [--repeat 3] [--only session,jit,jitwarm,steady] [--no-jax] [--before DIR]

`--before DIR` measures another stagec checkout (e.g. `git archive main | tar -x -C DIR`) in alternation with
this one: a before/after table from one command.

- session: 65 small NumPy operations (13 kinds on arrays of 5 lengths, no jit), every result copied back as
  a notebook shows it. stagec cold (an empty cache folder per process) and warm (a folder an earlier
  process filled); JAX in a fresh process (it compiles every operation again per process).
- jit: the first call of a jitted workload (trace + compile + run + copy back), an empty cache folder per
  process; the runtime is started (inputs on the device) before the clock starts, for both libraries. Also
  the second call (on the quick tier while the fused module compiles, `config.jit_tiering`).
- jitwarm (not in the default): the same, in a cache folder where an earlier process ran the workload op by op
  on its first argument's first 8 rows (the kernels a notebook session compiled; the function is new).
- steady: median time per call once compiled: eager operations on 10k (polymorphic kernels) and 1M floats
  (shape-specific ones), and the jitted workloads (with `jit`, one process each).
Runs alternate between libraries and variants; medians over `--repeat` runs, with the spread (max-min)/median.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import textwrap

from _timing import geomean, import_jax, run_json

COMMON = textwrap.dedent("""
    import json, os, sys, time
    t0 = time.perf_counter()
    import numpy as np
    lib = sys.argv[1]
    if lib == "jax":
        import jax, jax.numpy as m
        jit, put = jax.jit, jax.device_put
        def ready(x): return jax.block_until_ready(x)
    else:
        import stagec, stagec.numpy as m
        jit, put = stagec.jit, stagec.device_put
        def ready(x): return stagec.block_until_ready(x)
    t_import = time.perf_counter() - t0

    # 13 kinds of operation, applied to arrays of 5 lengths: 65 operations (x, y float32 of one length)
    OPS = [lambda x, y: x + 1.0, lambda x, y: x * y, lambda x, y: m.exp(x), lambda x, y: m.sin(x) ** 2,
           lambda x, y: m.sqrt(m.abs(x)), lambda x, y: m.sum(x), lambda x, y: m.mean(x), lambda x, y: m.max(x),
           lambda x, y: m.where(x > 0, x, y), lambda x, y: m.dot(x, y), lambda x, y: m.maximum(x, 0.0),
           lambda x, y: m.tanh(x) - y, lambda x, y: m.cumsum(x)]
    LENGTHS = [10, 100, 1000, 37, 5000]

    def selu(x):
        return 1.0507 * m.where(x > 0, x, 1.6733 * m.exp(x) - 1.6733)

    def softmax(x):
        e = m.exp(x - m.max(x, axis=-1, keepdims=True))
        return e / m.sum(e, axis=-1, keepdims=True)

    def layernorm(x):
        mu = m.mean(x, axis=-1, keepdims=True)
        var = m.mean((x - mu) ** 2, axis=-1, keepdims=True)
        return (x - mu) / m.sqrt(var + 1e-5)

    def matmul(a, b):
        return a @ b

    def mlp(x, w1, b1, w2, b2):
        return m.maximum(x @ w1 + b1, 0.0) @ w2 + b2

    rng = np.random.default_rng(0)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    WORKLOADS = {"selu 512x1024": (selu, lambda: [f32(512, 1024)]),
                 "softmax 512x1024": (softmax, lambda: [f32(512, 1024)]),
                 "layernorm 512x1024": (layernorm, lambda: [f32(512, 1024)]),
                 "matmul 512^3": (matmul, lambda: [f32(512, 512), f32(512, 512)]),
                 "mlp 512x1024->512->128": (mlp, lambda: [f32(512, 1024), f32(1024, 512) * 0.03, f32(512),
                                                          f32(512, 128) * 0.03, f32(128)])}

    def median_call(fn, n):
        ready(fn())
        if lib == "stagec" and hasattr(stagec, "wait_for_compiles"):
            stagec.wait_for_compiles()  # (steady state: the kernels or module, not the first tier)
        ts = []
        for _ in range(n):
            t = time.perf_counter(); ready(fn()); ts.append(time.perf_counter() - t)
        return sorted(ts)[n // 2]
""")

SESSION = COMMON + textwrap.dedent("""
    data = [(np.asarray(f32(n)), np.asarray(f32(n))) for n in LENGTHS]
    t0 = time.perf_counter()
    for xn, yn in data:
        x, y = m.asarray(xn), m.asarray(yn)
        for op in OPS:
            np.asarray(op(x, y))
    out = {"import": t_import, "session": time.perf_counter() - t0}
    if lib == "stagec":
        from stagec import stages
        out["compiles"] = stages.stats["iree_compiles"]
    print(json.dumps(out))
""")

JIT = COMMON + textwrap.dedent("""
    fn, make = WORKLOADS[sys.argv[2]]
    args = [put(a) for a in make()]
    ready(args)
    f = jit(fn)
    t0 = time.perf_counter()
    np.asarray(f(*args))
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    np.asarray(f(*args))
    out = {"first": first, "second": time.perf_counter() - t0}
    if lib == "stagec":
        out["tiered"] = sys.modules["stagec.jit"].stats.get("tiered", 0)
    if os.environ.get("BENCH_STEADY"):
        if lib == "stagec" and hasattr(stagec, "wait_for_compiles"):
            stagec.wait_for_compiles()
        out["steady"] = median_call(lambda: f(*args), 50)
    print(json.dumps(out))
""")

# The workload op by op on its first argument's first 8 rows: the kernels a user exploring it in a notebook
# compiled, in the persistent cache for the next process (JIT then measures a function new to that cache).
WARM = COMMON + textwrap.dedent("""
    fn, make = WORKLOADS[sys.argv[2]]
    a = make()
    np.asarray(fn(m.asarray(a[0][:8]), *[m.asarray(v) for v in a[1:]]))
    print(json.dumps({}))
""")

STEADY = COMMON + textwrap.dedent("""
    NAMES = ["x+1", "x*y", "exp", "sin**2", "sqrt|x|", "sum", "mean", "max", "where", "dot", "max(x,0)", "tanh-y",
             "cumsum"]
    out = {}
    for n in (10_000, 1 << 20):
        x, y = put(f32(n)), put(f32(n))
        for i in (0, 1, 2, 5, 8, 11):
            out[f"{NAMES[i]} {n:,}"] = median_call(lambda: OPS[i](x, y), 30)
    print(json.dumps(out))
""")


def run(script: str, args: list[str], env: dict) -> dict:
    # (run from a neutral folder: `python -c` puts the working directory first on sys.path)
    return run_json([sys.executable, "-c", script, *args], str(args), env=env, timeout=900, cwd=tempfile.gettempdir())


HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def env_for(root: str | None, cache_dir: str | None) -> dict:
    env = dict(os.environ, PYTHONPATH=root or HERE, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
    if cache_dir:
        env["STAGEC_CACHE_DIR"] = cache_dir
    return env


def stat(xs: list[float]) -> str:
    med = statistics.median(xs)
    spread = (max(xs) - min(xs)) / med if med and len(xs) > 1 else 0.0
    t = f"{med * 1e3:9.1f} ms" if med >= 0.01 else f"{med * 1e6:9.1f} us"
    return f"{t} ±{spread * 50:3.0f}%"


def sessions(repeat: int, variants: dict, jax: bool) -> None:
    res: dict[str, list] = {}
    compiles: dict[str, list] = {}
    for _ in range(repeat):
        for name, root in variants.items():
            with tempfile.TemporaryDirectory(prefix="stagec-bench-") as d:
                r = run(SESSION, ["stagec"], env_for(root, d))
                res.setdefault(f"{name} cold", []).append(r["session"])
                compiles.setdefault(name, []).append(r["compiles"])
                res.setdefault(f"{name} warm", []).append(run(SESSION, ["stagec"], env_for(root, d))["session"])
        if jax:
            res.setdefault("jax", []).append(run(SESSION, ["jax"], env_for(None, None))["session"])
    ref = statistics.median(res["jax"]) if jax else None
    print(f"Op-by-op session: 65 operations on 5 lengths; IREE compiles when cold: {compiles}")
    for name, xs in res.items():
        ratio = f"{statistics.median(xs) / ref:6.2f}x jax" if ref else ""
        print(f"  {name:14s}{stat(xs)}  {ratio}")


def jits(repeat: int, variants: dict, jax: bool, steady: bool, warm: bool = False) -> None:
    names = "print(json.dumps({'names': list(WORKLOADS)})); sys.exit()"
    probe = run(JIT.replace("fn, make = WORKLOADS[sys.argv[2]]", names), ["stagec", "-"], env_for(None, None))["names"]
    libs = [(name, "stagec", root) for name, root in variants.items()] + ([("jax", "jax", None)] if jax else [])
    res = {(w, lib[0]): [] for w in probe for lib in libs}
    steadies, seconds, tiered = {}, {}, {}
    for i in range(repeat):
        for w in probe:
            for name, lib, root in libs:
                with tempfile.TemporaryDirectory(prefix="stagec-bench-") as d:
                    env = env_for(root, d)
                    if steady and i == 0:
                        env["BENCH_STEADY"] = "1"
                    if warm and lib == "stagec":
                        run(WARM, [lib, w], env)
                    r = run(JIT, [lib, w], env)
                res[(w, name)].append(r["first"])
                seconds.setdefault((w, name), []).append(r["second"])
                tiered.setdefault((w, name), []).append(r.get("tiered", 0))
                if "steady" in r:
                    steadies[(w, name)] = r["steady"]
    what = ("kernels cached by an earlier process that ran it op by op on 8 rows, function new"
            if warm else "empty cache")
    print(f"Jitted function, first call ({what}, fresh process); second call; tiered runs"
          + ("; steady ms/call" if steady else ""))
    ratios: dict[str, list] = {}
    for w in probe:
        line = f"  {w:24s}" + "".join(f"{name} {stat(res[(w, name)])} (2nd {statistics.median(seconds[(w, name)]) * 1e3:.0f} ms"
                                      f"{', tiered ' + str(sum(tiered[(w, name)])) if lib == 'stagec' else ''})  "
                                      for name, lib, _ in libs)
        if steadies:
            line += " steady " + " / ".join(f"{steadies[(w, name)] * 1e3:.3f}" for name, _, _ in libs)
        print(line)
        for name, lib, _ in libs:
            if jax and lib == "stagec":
                r = statistics.median(res[(w, name)]) / statistics.median(res[(w, "jax")])
                ratios.setdefault(name, []).append(r)
    for name, rs in ratios.items():
        print(f"  geomean {name}/jax first call: {geomean(rs):.2f}x")


def steadies(repeat: int, variants: dict, jax: bool) -> None:
    libs = [(name, "stagec", root) for name, root in variants.items()] + ([("jax", "jax", None)] if jax else [])
    res: dict[tuple, list] = {}
    for _ in range(repeat):
        for name, lib, root in libs:
            with tempfile.TemporaryDirectory(prefix="stagec-bench-") as d:
                for k, v in run(STEADY, [lib], env_for(root, d)).items():
                    res.setdefault((k, name), []).append(v)
    print("Eager steady state, float32 (per call, median of 30 calls per process)")
    for k in dict.fromkeys(k for k, _ in res):
        print(f"  {k:18s}" + "".join(f"{name} {stat(res[(k, name)])}  " for name, _, _ in libs))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--only", default="session,jit,steady", help="parts: session, jit, jitwarm, steady")
    p.add_argument("--no-jax", action="store_true")
    p.add_argument("--before", help="another stagec checkout to measure alongside this one (e.g. an export of main)")
    a = p.parse_args()
    have_jax = not a.no_jax and import_jax()[0] is not None
    variants = {"stagec": HERE, **({"before": os.path.abspath(a.before)} if a.before else {})}
    parts = a.only.split(",")
    if "session" in parts:
        sessions(a.repeat, variants, have_jax)
    if "jit" in parts:
        jits(a.repeat, variants, have_jax, "steady" in parts)
    if "jitwarm" in parts:
        jits(a.repeat, variants, have_jax, True, warm=True)  # (steady: after the swap to the fused module)
    if "steady" in parts:
        steadies(a.repeat, variants, have_jax)


if __name__ == "__main__":
    main()
