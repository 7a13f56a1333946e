"""First call in a new process with a cold vs a warm persistent cache, and artifact sizes per target.

    .venv/bin/python benchmarks/bench_cache.py [--repeat 5] [--after-eager]

Each measurement is a fresh `python` process: it imports stagec, builds the inputs, then times the
first call of the jitted function (trace + lower + passes + compile-or-load + run + copy back).
Cold: an empty cache folder per process. Warm: a folder filled by an earlier process. Medians.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

CHILD = textwrap.dedent("""
    import json, os, sys, time
    t_start = time.perf_counter()
    import numpy as np
    import stagec, stagec.numpy as snp
    t_import = time.perf_counter() - t_start

    def selu(x, alpha=1.6732632, lam=1.0507010):
        return lam * snp.where(x > 0, x, alpha * snp.exp(x) - alpha)

    def mlp(params, x):
        (w1, b1), (w2, b2) = params
        h = snp.maximum(x @ w1 + b1, 0.0)
        return h @ w2 + b2

    rng = np.random.default_rng(0)
    which = sys.argv[1]
    if which == "selu":
        f, args = stagec.jit(selu), (rng.standard_normal(1_000_000).astype(np.float32),)
    else:
        params = [(rng.standard_normal((256, 512)).astype(np.float32) * 0.05, np.zeros(512, np.float32)),
                  (rng.standard_normal((512, 10)).astype(np.float32) * 0.05, np.zeros(10, np.float32))]
        f, args = stagec.jit(mlp), (params, rng.standard_normal((64, 256)).astype(np.float32))
    t0 = time.perf_counter()
    if os.environ.get("PHASES"):  # the same first call, phase by phase
        lo = f.lower(*args); t1 = time.perf_counter()
        lo.as_text(); t2 = time.perf_counter()
        c = lo.compile(); t3 = time.perf_counter()
        np.asarray(c(*args)); t4 = time.perf_counter()
        print(json.dumps({"trace": t1 - t0, "lower": t2 - t1, "cache": t3 - t2, "run": t4 - t3}))
        sys.exit(0)
    out = np.asarray(f(*args))
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    np.asarray(f(*args))
    second = time.perf_counter() - t0
    info = stagec.cache.info()
    print(json.dumps({"first": first, "second": second, "import": t_import, "hits": info["hits"],
                      "misses": info["misses"]}))
""")


# The demo's order (examples/selu_demo.py): SELU eagerly first (its kernels compile, or load from the cache by
# recipe, without iree.compiler), then the first jit call with the default tiering: the call answers op by op
# while a thread lowers, runs the passes and compiles the fused module or finds it in the cache.
AFTER_EAGER = textwrap.dedent("""
    import json, sys, threading, time
    import numpy as np
    import stagec, stagec.numpy as snp
    from stagec import stages

    def selu(x, alpha=1.67, lambda_=1.05):
        return lambda_ * snp.where(x > 0, x, alpha * snp.exp(x) - alpha)

    x = stagec.device_put((np.arange(1_000_000, dtype=np.float32) / 1e5 - 5))
    selu(x).block_until_ready()
    stagec.wait_for_compiles()
    compiler_loaded = "iree.compiler" in sys.modules
    if sys.argv[1:] == ["import"]:  # (the control: the compiler imported before the call, as a cold process has it)
        import iree.compiler.ir
    phases, compile = {}, stages.Lowered.compile

    def timed(self, *a, **k):  # the fused module's thread: lower and passes, then the cache (or IREE) and loading
        t0 = time.perf_counter()
        self.as_text("final")
        t1 = time.perf_counter()
        try:
            return compile(self, *a, **k)
        finally:
            phases.update(lower_and_passes=t1 - t0, cache_or_compile_and_load=time.perf_counter() - t1)
    stages.Lowered.compile = timed
    f = stagec.jit(selu)
    t0 = time.perf_counter()
    f(x).block_until_ready()
    first = time.perf_counter() - t0
    stagec.wait_for_compiles()
    ready = time.perf_counter() - t0
    print(json.dumps({"first": first, "ready": ready, "compiler_loaded_before": compiler_loaded,
                      "hits": stagec.cache.info()["hits"], **phases}))
""")


def after_eager(repeat: int) -> None:
    """The demo's "jit, first call", cold and warm cache alternating (fresh processes; medians, ms)."""
    runs: dict[str, list[dict]] = {"cold": [], "warm": [], "warm, compiler imported first": []}
    with tempfile.TemporaryDirectory() as root:
        warm_dir = os.path.join(root, "warm")
        child_script(AFTER_EAGER, warm_dir)  # fills it
        for i in range(repeat):
            runs["cold"].append(child_script(AFTER_EAGER, os.path.join(root, f"cold{i}")))
            runs["warm"].append(child_script(AFTER_EAGER, warm_dir))
            runs["warm, compiler imported first"].append(child_script(AFTER_EAGER, warm_dir, "import"))
    med = lambda rs, k: statistics.median(r[k] for r in rs) * 1e3  # noqa: E731
    print(f"jit first call after the eager calls (examples/selu_demo.py's order), median of {repeat} processes (ms)")
    print(f"{'cache':<30} {'first call':>10} {'fused ready':>11} {'lower+passes':>12} {'cache/IREE+load':>15}  "
          "iree.compiler imported by the eager calls")
    for k, rs in runs.items():
        print(f"{k:<30} {med(rs, 'first'):>10.1f} {med(rs, 'ready'):>11.1f} {med(rs, 'lower_and_passes'):>12.1f} "
              f"{med(rs, 'cache_or_compile_and_load'):>15.1f}  {sum(r['compiler_loaded_before'] for r in rs)}/{repeat}")


def child_script(script: str, cache_dir: str, *args: str) -> dict:
    env = {**os.environ, "STAGEC_CACHE_DIR": cache_dir}
    r = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def child(which: str, cache_dir: str, **extra) -> dict:
    env = {**os.environ, "STAGEC_CACHE_DIR": cache_dir, **extra}
    r = subprocess.run([sys.executable, "-c", CHILD, which], capture_output=True, text=True, env=env, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def first_calls(which: str, repeat: int) -> tuple[list[dict], list[dict], list[dict]]:
    cold, warm, phases = [], [], []
    with tempfile.TemporaryDirectory() as root:
        for i in range(repeat):
            d = os.path.join(root, f"cold{i}")
            r = child(which, d)
            assert r["misses"] >= 1 and r["hits"] == 0, r
            cold.append(r)
        d = os.path.join(root, "cold0")  # filled by the first cold run
        for _ in range(repeat):
            r = child(which, d)
            assert r["misses"] == 0 and r["hits"] >= 1, r
            warm.append(r)
            phases.append(child(which, d, PHASES="1"))
    return cold, warm, phases


def artifact_sizes() -> list[tuple[str, str, int, int]]:
    import numpy as np
    import stagec
    import stagec.numpy as snp
    from stagec import ShapeDtypeStruct as S

    def selu(x, alpha=1.6732632, lam=1.0507010):
        return lam * snp.where(x > 0, x, alpha * snp.exp(x) - alpha)

    def mlp(params, x):
        (w1, b1), (w2, b2) = params
        return snp.maximum(x @ w1 + b1, 0.0) @ w2 + b2

    f32 = np.float32
    lowered = {"selu f32[1000000]": stagec.jit(selu).lower(S((1_000_000,), f32)),
               "mlp 256-512-10, batch 64": stagec.jit(mlp).lower(
                   [(S((256, 512), f32), S((512,), f32)), (S((512, 10), f32), S((10,), f32))], S((64, 256), f32))}
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for name, lo in lowered.items():
            for target, arch in (("llvm-cpu", None), ("vulkan-spirv", None), ("cuda", "sm_80")):
                path = os.path.join(d, "a.stagec")
                c = lo.compile(target, arch=arch)
                c.save(path)
                rows.append((name, target, os.path.getsize(path), len(c.artifact.vmfb)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--after-eager", action="store_true", help="only the demo's jit first call, cold vs warm")
    ns = ap.parse_args()
    if ns.after_eager:
        return after_eager(ns.repeat)
    med = lambda rs, k: statistics.median(r[k] for r in rs) * 1e3  # noqa: E731
    print(f"first call in a new process, median of {ns.repeat} processes each (ms)")
    print(f"{'function':<10} {'cold first':>11} {'warm first':>11} {'warm/cold':>10} {'2nd call':>9} {'import':>7}")
    all_phases = {}
    for which in ("selu", "mlp"):
        cold, warm, all_phases[which] = first_calls(which, ns.repeat)
        c, w = med(cold, "first"), med(warm, "first")
        print(f"{which:<10} {c:>11.1f} {w:>11.1f} {w / c:>9.0%} {med(warm, 'second'):>9.2f} {med(warm, 'import'):>7.0f}")
    print("\nwarm first call by phase (ms; lower includes importing the MLIR bindings and passes;"
          " cache = key, lookup, checksum, mmap, load)")
    print(f"{'function':<10} {'trace':>7} {'lower':>7} {'cache':>7} {'run':>7}")
    for which, ph in all_phases.items():
        print(f"{which:<10} " + " ".join(f"{med(ph, k):>7.1f}" for k in ("trace", "lower", "cache", "run")))
    print("\nartifact sizes (Compiled.save: IREE module + calling metadata + trailer)")
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    os.environ["STAGEC_CACHE"] = "0"
    import stagec
    stagec.config.update("persistent_cache", False)
    for name, target, size, module in artifact_sizes():
        print(f"{name:<26} {target:<13} {size:>8} bytes  (module {module} bytes)")


if __name__ == "__main__":
    main()
