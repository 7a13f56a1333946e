"""Where a training step's time goes, dispatch by dispatch: one row of `bench_models.py --sweep` lowered by stagec,
compiled by iree-compile with the module's own flags, run by iree-benchmark-module under IREE's host-execution
profiling, and the dispatches listed by time (`iree-profile dispatch`).

    python benchmarks/profile_dispatches.py "256-512-512-10 b1024 relu xent sgd" [--device local-sync|local-task]
                                            [--calls 20] [--keep DIR]

Per dispatch: the fastest call's time times the dispatches of that name per call, the mean's likewise, how many
per call and the workgroups. The module is compiled without `--iree-execution-model=async-external` (its `main`
then takes its arguments as the tools give them; the same dispatches); the buffers come from a caching allocator,
as stagec's do (fresh ones cost page faults inside the first dispatch writing them). The per-executable benchmarks
of `--iree-hal-dump-executable-benchmarks-to` are no substitute: their buffers hold garbage (a column sum took 8 ms
there, 0.2 ms in the module). Read a gain found here back in a whole step through stagec (`bench_models.py`).

A module that calls NumPy's BLAS (`stagec_blas`, docs/blas.md) cannot run in the tools: each call is put back as the
`dot_general` it stands for (`without_blas`) and timed as IREE's dispatch of that product (BLAS's own time is not
measured here; `bench_spread.py` has it).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import stagec
from bench_models import step_and_args
from stagec.compiler import driver
from stagec.lowering import unpack_dims

TOOLS = os.path.dirname(sys.executable)
_CALL = re.compile(r"^(\s*)(%[\w#:]+) = call @stagec_blas\.(dot_general|dot_pair)_\d+\(([^)]*)\) : \(([^)]*)\) -> "
                   r"\(?([^()]*?)\)?$", re.M)


def without_blas(text: str) -> tuple[str, int]:
    """`text` with each call of `stagec_blas` (a `dot_general_<k>`, or a `dot_pair_<k>` of two) replaced by the
    `stablehlo.dot_general`s it computes, and the count replaced."""
    consts = dict(re.findall(r"(%[\w]+) = arith.constant (-?\d+) : i64", text))
    count, pairs = 0, []

    def dot(res, a, b, ta, tb, tr, packed):
        lb, rb, lc, rc = (unpack_dims(int(consts[c])) for c in packed)
        batch = f"batching_dims = {lb} x {rb}, " if lb else ""
        return f"{res} = stablehlo.dot_general {a}, {b}, {batch}contracting_dims = {lc} x {rc} : ({ta}, {tb}) -> {tr}"

    def one(m):
        nonlocal count
        indent, res, kind, args = m[1], m[2], m[3], [v.strip() for v in m[4].split(",")]
        types = [t.strip() for t in re.findall(r"tensor<[^>]*>|i64", m[5])]
        results = re.findall(r"tensor<[^>]*>", m[6])
        if kind == "dot_general":
            count += 1
            return indent + dot(res, *args[:2], *types[:2], results[0], args[2:6])
        name = res.split(":")[0]  # (`%5:2 = call ...`, its results read as %5#0 and %5#1)
        count += 2
        pairs.append(name)
        return "\n".join(indent + dot(f"%blas_{name[1:]}_{i}", *args[2 * i:2 * i + 2], *types[2 * i:2 * i + 2], results[i],
                                       args[4 + 4 * i:8 + 4 * i]) for i in range(2))

    text = _CALL.sub(one, text)
    for name in pairs:
        text = re.sub(re.escape(name) + r"#([01])\b", lambda m: f"%blas_{name[1:]}_{m[1]}", text)
    text = re.sub(r"^\s*func.func private @stagec_blas\..*\n", "", text, flags=re.M)
    return text, count


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("row")
    p.add_argument("--device", default="local-sync")
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--keep", help="a folder to keep the final MLIR, flags and profile in")
    a = p.parse_args()
    fn, args = step_and_args(a.row)
    lowered = stagec.jit(fn).lower(*args)
    text, calls = without_blas(lowered.as_text("final"))
    if calls:
        print(f"({calls} BLAS calls put back as IREE's products: their dispatches are IREE's time, not BLAS's)")
    backend = lowered.backend
    flags = driver.iree_args([f for f in backend.module_flags(text, backend.flags(host_blas=lowered.host_blas),
                                                              lowered.facts) if f != driver.FENCED])
    with tempfile.TemporaryDirectory(prefix="stagec-profile-") as tmp:
        d = a.keep or tmp
        os.makedirs(d, exist_ok=True)
        src, vmfb, prof = (os.path.join(d, n) for n in ("final.mlir", "module.vmfb", "dispatches.ireeprof"))
        with open(src, "w") as f:
            f.write(text)
        with open(os.path.join(d, "flags.json"), "w") as f:
            json.dump(flags, f, indent=0)
        subprocess.run([os.path.join(TOOLS, "iree-compile"), src, *flags, "--iree-hal-target-device=local",
                        "--iree-hal-local-target-device-backends=llvm-cpu", "-o", vmfb], check=True)
        sig = re.search(r"func.func @main\((.*?)\) ->", text).group(1)
        inputs = [f"--input={s}" if "x" in s else f"--input={s}=0" for s in re.findall(r"tensor<([^>]*)>", sig)]
        run = subprocess.run([os.path.join(TOOLS, "iree-benchmark-module"), f"--module={vmfb}", "--function=main",
                              f"--device={a.device}", *inputs, f"--benchmark_min_time={a.calls}x",
                              "--device_allocator=caching", "--device_profiling_mode=host-execution",
                              f"--device_profiling_output={prof}"], capture_output=True, text=True, check=True)
        print(next(line for line in run.stdout.splitlines() if "BM_" in line))
        out = subprocess.run([os.path.join(TOOLS, "iree-profile"), "dispatch", "--format=jsonl", prof],
                             capture_output=True, text=True, check=True).stdout
    groups = [g for g in map(json.loads, out.splitlines()) if g.get("type") == "host_dispatch_group"]
    rows = sorted(((g["min_ns"] * g["count"] / a.calls / 1e3, g["avg_ns"] * g["count"] / a.calls / 1e3,
                    g["count"] / a.calls, g["last_workgroup_count"][0], g["key"]) for g in groups), reverse=True)
    print(f"{'min us':>9} {'mean us':>9} {'/call':>5} {'wgs':>5}  dispatch")
    for fastest, mean, per, wgs, key in rows:
        print(f"{fastest:9.1f} {mean:9.1f} {per:5.0f} {wgs:5d}  {key}")
    print(f"{sum(r[0] for r in rows):9.1f} {sum(r[1] for r in rows):9.1f} {sum(r[2] for r in rows):5.0f}        in all")


if __name__ == "__main__":
    main()
