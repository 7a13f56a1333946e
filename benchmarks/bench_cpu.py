"""stagec vs jax.jit on the CPU: steady-state time per call of the workloads of issue "faster than jax.jit",
for stagec with its default passes, stagec with `passes=[]`, and JAX (when installed).

    python benchmarks/bench_cpu.py                          # float32, 5 rounds
    python benchmarks/bench_cpu.py --dtypes all --rounds 3  # also float16, bfloat16, float64, int32
    python benchmarks/bench_cpu.py --only softmax,layernorm --variants stagec,jax

Each round runs each variant in a fresh process of its own, and stagec's two variants once more side by side in
one process, their batches interleaved in alternating order; the order of the processes rotates by round. The
table's times and stagec / jax come from the processes of their own (as a user runs each: XLA's thread pool and
OpenBLAS's, which stagec calls for large matmuls, each keep spinning a while after a call, and with both in one
process each slowed the other: JAX's matmul 1024 6.2 -> 12.0 ms; a slow variant's batches also slowed the next
batches of a fast one: stagec's softmax 1.2 ms alone, 1.3-1.8 beside passes=[]'s); stagec / passes=[] comes from
the shared one, under the same conditions (the same process: its memory layout, its load). `--together`: all
variants in one process; `--apart`: no shared process. A process compiles its variants, then times each
workload in batches of calls (~20 ms each, waiting for the last result). The table gives the median over all
batches of all rounds, the noise as (p75 - p25) / median, and ratios stagec / jax and stagec / passes=[]
(below 1: stagec is faster), of medians and, in parentheses, of the best batches; stagec / passes=[] is the
median ratio of batches timed side by side in the shared process (each pair under the same load). The geomean
leaves out the tiny call (it measures overhead, not code). "same module": the default passes left the module IREE compiles
as `passes=[]` leaves it (`lower(...).as_text("final")` agrees); "same dispatches": they changed it, but IREE
compiled the same machine code for its dispatches. Either way that stagec / passes=[] ratio is the noise.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import struct
import sys
import time

import numpy as np

from _timing import alternating, fmt, geomean, import_jax, run_json, time_batch
from _workloads import layernorm, selu, softmax

VARIANTS = ("stagec", "nopasses", "jax")
DTYPES = ("float32", "float16", "bfloat16", "float64", "int32")
TINY = "tiny call x+1"


def workloads(dtype: str) -> dict:
    """name -> (function of (numpy module, *args), argument shapes); integer dtypes get the workloads that
    make sense for integers (no transcendental functions)."""
    floats = dtype != "int32"
    w = {}
    if floats:
        w["selu 1M"] = (selu, [(1 << 20,)])
        w["sum(x**2+sin x) 1M"] = (lambda np_, x: np_.sum(x ** 2 + np_.sin(x)), [(1 << 20,)])
        w["FAQ x.T@(x-mean) 1000²"] = (lambda np_, x: x.T @ (x - x.mean(0)), [(1000, 1000)])
    else:
        w["sum(x*x+x) 1M"] = (lambda np_, x: np_.sum(x * x + x), [(1 << 20,)])
    w["matmul 256"] = (lambda np_, a, b: a @ b, [(256, 256), (256, 256)])
    w["matmul 1024"] = (lambda np_, a, b: a @ b, [(1024, 1024), (1024, 1024)])
    if floats:
        w["softmax 4096x1024"] = (softmax, [(4096, 1024)])
        w["layernorm 4096x1024"] = (layernorm, [(4096, 1024)])
        w["MLP tanh(relu(x@w1)@w2)"] = (lambda np_, x, w1, w2: np_.tanh(np_.maximum(x @ w1, 0) @ w2),
                                        [(256, 512), (512, 2048), (2048, 512)])
    w[TINY] = (lambda np_, x: x + 1, [()])
    return w


def inputs(dtype: str, shapes) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    out = []
    for s in shapes:
        if dtype == "int32":
            a = rng.integers(-8, 8, s).astype(np.int32)
        else:
            fan_in = s[0] if len(s) == 2 else 1  # keeps matmul chains near unit scale in float16
            a = (rng.standard_normal(s) / math.sqrt(fan_in)).astype(np.float32)
        out.append(np.asarray(a))
    return out


def batch_size(call) -> int:
    """Calls per batch: about 20 ms of them (each estimate waits for its result)."""
    call().block_until_ready()
    n, t0 = 0, time.perf_counter()
    while n < 3 or time.perf_counter() - t0 < 0.01:
        call().block_until_ready()
        n += 1
    return max(1, min(2000, int(0.02 / ((time.perf_counter() - t0) / n))))


def dispatch_code(vmfb) -> str:
    """A hash of the machine code of a CPU module's dispatches: the ELF images in its flatbuffer, in order. (Two
    modules whose StableHLO differs only in where constants are written compile to the same dispatches, while
    their flatbuffers differ in a checksum and a source line.)"""
    b, h = bytes(vmfb), hashlib.sha256()
    i = b.find(b"\x7fELF")
    while i >= 0:
        shoff, = struct.unpack_from("<Q", b, i + 0x28)  # the section headers come last: their end is the image's
        shentsize, shnum = struct.unpack_from("<HH", b, i + 0x3A)
        end = i + shoff + shentsize * shnum
        h.update(b[i:end])
        i = b.find(b"\x7fELF", end)
    return h.hexdigest()


def make_calls(variant: str, dtype: str, only: list[str]) -> dict:
    """{workload: a call of the compiled workload on device arguments} for one variant."""
    import ml_dtypes
    npdt = {"bfloat16": ml_dtypes.bfloat16}.get(dtype, np.dtype(dtype))
    if variant == "jax":
        import jax
        import jax.numpy as jnp
        if dtype == "float64":
            jax.config.update("jax_enable_x64", True)
        mod, put = jnp, jax.device_put

        def jit(f):
            return jax.jit(f)
    else:
        import stagec
        import stagec.numpy as snp
        if dtype == "float64":
            stagec.config.update("enable_x64", True)
        mod, put = snp, stagec.device_put
        passes = [] if variant == "nopasses" else None

        def jit(f):
            return stagec.jit(f, passes=passes)
    calls, modules = {}, {}
    for name, (fn, shapes) in workloads(dtype).items():
        if only and not any(o in name for o in only):
            continue
        args = [put(a.astype(npdt)) for a in inputs(dtype, shapes)]
        f = jit(lambda *a, fn=fn: fn(mod, *a))
        calls[name] = lambda f=f, args=args: f(*args)
        if variant != "jax":  # what IREE compiles and what it compiled, to tell whether the passes changed anything
            lowered = f.lower(*args)
            modules[name] = [hashlib.sha256(lowered.as_text("final").encode()).hexdigest(),
                             dispatch_code(lowered.compile().artifact.vmfb)]
    if variant != "jax":  # steady state: the fused modules, not the quick tier of the first calls
        for call in calls.values():
            call()
        stagec.wait_for_compiles()
    return calls, modules


def child(variants: list[str], dtype: str, only: list[str], budget: float) -> dict:
    """Run in a fresh process: {workload: {variant: [seconds per call of each batch]}}, the variants'
    batches interleaved (the order alternating), so that load from elsewhere falls on all of them alike."""
    made = {v: make_calls(v, dtype, only) for v in variants}
    calls = {v: c for v, (c, _) in made.items()}
    res = {"modules": {v: m for v, (_, m) in made.items() if m}, "times": {}}
    for name in calls[variants[0]]:
        sizes = {v: batch_size(calls[v][name]) for v in variants}
        times = {v: [] for v in variants}
        t0 = time.perf_counter()
        i = 0
        while i < 6 or (time.perf_counter() - t0 < budget and i < 200):
            for v in alternating(variants, i):
                times[v].append(time_batch(calls[v][name], sizes[v]))
            i += 1
        res["times"][name] = times
    return res


def groups(variants: list[str], grouping: str) -> list[list[str]]:
    """The variants each fresh process of a round runs: all in one ("together"), each alone ("apart"), or each
    alone plus stagec's two variants side by side in one more ("paired": stagec against JAX as a user runs
    each, alone, and the passes against `passes=[]` under the same conditions)."""
    if grouping == "together":
        return [variants]
    alone = [[v] for v in variants]
    if grouping == "paired" and "stagec" in variants and "nopasses" in variants:
        return [[v] for v in variants if v != "nopasses"] + [["stagec", "nopasses"]]
    return alone


def run_round(variants, dtype: str, only: list[str], budget: float, r: int, grouping: str) -> dict:
    """One round: a fresh process per group of variants (`groups`), one after the other, the order rotating by
    round. "times": each variant's batches from the process it ran alone in (or the shared one); "pairs": those
    of the process where stagec's two variants ran side by side."""
    gs = groups(variants, grouping)
    solo = {g[0] for g in gs if len(g) == 1}  # (variants with a process of their own: their times come from it)
    res: dict = {"modules": {}, "times": {}, "pairs": {}}
    for group in gs[r % len(gs):] + gs[:r % len(gs)]:
        cmd = [sys.executable, __file__, "--child", ",".join(group), "--dtypes", dtype, "--only", ",".join(only),
               "--budget", str(budget)]
        try:
            out = run_json(cmd)
            res["modules"].update(out["modules"])
            for name, times in out["times"].items():
                if "stagec" in group and "nopasses" in group:
                    res["pairs"][name] = times
                res["times"].setdefault(name, {}).update(
                    {v: t for v, t in times.items() if len(group) == 1 or v not in solo})
        except RuntimeError as e:
            print(f"  [round {r} of {dtype} ({','.join(group)}) failed]\n{e}", file=sys.stderr)
    return res


def paired_ratio(rounds: list[dict], name: str, a: str, b: str) -> float | None:
    """The median over the batches of `a` and `b` that ran side by side (the same process, one right after the
    other) of their ratio a / b; None unless they shared processes. Each pair saw the same load, so the machine's
    drift over a round, which moves the two medians apart by chance, cancels."""
    ratios = [x / y for rd in rounds
              for x, y in zip(rd["pairs"].get(name, {}).get(a, []), rd["pairs"].get(name, {}).get(b, []))]
    return statistics.median(ratios) if ratios else None


def table(dtype: str, rounds: list[dict], variants) -> str:
    """Median per call of all batches of all rounds, with the noise as the interquartile range over the
    median; ratios of medians (stagec / passes=[]: the median ratio of side-by-side batches, `paired_ratio`, where
    the two shared processes), and in parentheses of the best batches."""
    timed = rounds
    modules: dict = {}  # (variant, workload) -> [{hashes of its final MLIR}, {of its dispatches' code}], all rounds
    for rd in rounds:
        for v, m in rd["modules"].items():
            for n, hs in m.items():
                for seen, h in zip(modules.setdefault((v, n), [set(), set()]), hs):
                    seen.add(h)
    rounds = [rd["times"] for rd in rounds]
    names = list(dict.fromkeys(n for rd in rounds for n in rd))
    med, best, noise = {}, {}, {}
    for n in names:
        for v in variants:
            ts = sorted(t for rd in rounds for t in rd.get(n, {}).get(v, []))
            if ts:
                q = statistics.quantiles(ts, n=4) if len(ts) > 1 else [ts[0]] * 3
                med[v, n], best[v, n], noise[v, n] = q[1], ts[0], (q[2] - q[0]) / q[1]
    peers = [p for p in ("jax", "nopasses") if p in variants and "stagec" in variants]
    head = f"| {dtype} workload | " + " | ".join(f"{v} (noise)" for v in variants)
    head += "".join(f" | stagec/{'passes=[]' if p == 'nopasses' else p} (best)" for p in peers) + " |"
    lines = [head, "|" + "---|" * (1 + len(variants) + len(peers))]
    ratios: dict = {p: ([], []) for p in peers}
    changed = []  # (stagec / passes=[], workload) where the passes changed the module
    for n in names:
        cells = [f"{fmt(med.get((v, n)))} ({noise.get((v, n), 0) * 100:.0f}%)" for v in variants]
        for p in peers:
            if ("stagec", n) in med and (p, n) in med:
                r, rb = med["stagec", n] / med[p, n], best["stagec", n] / best[p, n]
                if p == "nopasses":
                    r = paired_ratio(timed, n, "stagec", p) or r
                mods = modules.get(("stagec", n)), modules.get((p, n))
                same = None if p != "nopasses" or None in mods else \
                    "same module" if mods[0][0] == mods[1][0] else "same dispatches" if mods[0][1] == mods[1][1] else None
                cells.append(f"{r:.2f} ({rb:.2f})" + (f", {same}" if same else ""))
                if n != TINY:
                    ratios[p][0].append(r)
                    ratios[p][1].append(rb)
                if p == "nopasses" and not same:
                    changed.append((r, n))
            else:
                cells.append("-")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    lines.append("| **geomean (without the tiny call)** | " + " | ".join("" for _ in variants) + "".join(
        f" | **{geomean(ratios[p][0]):.2f}** ({geomean(ratios[p][1]):.2f})" for p in peers) + " |")
    if "nopasses" in peers:
        worst = max(changed, default=None)
        lines.append("\n" + (f"Where the default passes changed the dispatches ({len(changed)} of {len(names)}), the "
                              f"slowest against passes=[] is {worst[1]} at {worst[0]:.2f}; elsewhere the two variants "
                              f"run the same code, and their ratio is the noise." if worst else
                              "The default passes changed no dispatch here: every stagec / passes=[] ratio is noise."))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="fresh processes (default 5)")
    ap.add_argument("--budget", type=float, default=1.5, help="seconds of timing per workload and round")
    ap.add_argument("--dtypes", default="float32", help=f"comma-separated from {DTYPES}, or 'all'")
    ap.add_argument("--only", default="", help="comma-separated substrings of workload names")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated from {VARIANTS}")
    how = ap.add_mutually_exclusive_group()
    how.add_argument("--together", action="store_true",
                     help="all variants in one process per round, batches interleaved (default: one process per "
                          "variant, and one more with stagec's two variants side by side)")
    how.add_argument("--apart", action="store_true", help="each variant in a process of its own, and no shared one")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    only = [o for o in a.only.split(",") if o]
    if a.child:
        print(json.dumps(child(a.child.split(","), a.dtypes, only, a.budget)))
        return
    dtypes = DTYPES if a.dtypes == "all" else tuple(a.dtypes.split(","))
    variants = [v for v in a.variants.split(",") if v]
    if import_jax()[0] is None:
        variants = [v for v in variants if v != "jax"]
    for dt in dtypes:
        grouping = "together" if a.together else "apart" if a.apart else "paired"
        rounds = [run_round(variants, dt, only, a.budget, r, grouping) for r in range(a.rounds)]
        print(table(dt, rounds, variants), flush=True)
        print(flush=True)
    how = {"together": "all variants interleaved batch by batch inside each", "apart": "one per variant, alternating",
           "paired": "one per variant, and one more with stagec's two variants interleaved batch by batch, "
                     "alternating"}[grouping]
    print(f"({a.rounds} rounds of fresh processes, {how}; load average "
          f"{os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
