"""Reverse mode, stagec beside JAX (when installed) in one process:

  - `jit(value_and_grad(loss))` of an MLP 256x512x2048, batch 256 (the MLP workload's shapes);
  - per-example gradients `jit(vmap(grad(loss)))` of the same MLP, batch 16 (each example's gradient of
    w2 alone is 512x2048 floats, so the batch is kept small).

For each: first call (trace + compile + run; stagec's persistent cache off, so it really compiles) and steady
state, the two systems timed alternately call by call (the machine's load hits both alike), medians. Then the
steady state again with each system in fresh processes of its own, alternating (`--apart` rounds): in one
process the thread pools of OpenBLAS (stagec's large matmuls) and XLA keep spinning into each other's calls.
Besides the ratio of the two medians it prints the median of each round's ratio (its two processes ran back to
back, so the machine's drift over minutes, ±10% on a shared 2-core VM, falls on both alike).

With `--turns N`, the two systems' processes are alive together and take N turns each, alternating (paused
between turns, so that neither one's idle threads spin into the other's turn): each turn's ratio is against the
other system's turn beside it, a fraction of a second apart.

    python benchmarks/bench_grad.py [--repeat N] [--apart ROUNDS] [--turns N]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

import stagec
import stagec.numpy as snp

from _timing import elapsed, import_jax, run_json, timed

jax, jnp = import_jax()

SIZES = (256, 512, 2048)
BATCH = 256
PER_EXAMPLE_BATCH = 16


def loss(np_, params, x, y):
    for w, b in params[:-1]:
        x = np_.tanh(x @ w + b)
    w, b = params[-1]
    return np_.mean((x @ w + b - y) ** 2)


def host_data(batch: int = BATCH):
    rng = np.random.default_rng(0)
    params = [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32), np.zeros(n, np.float32))
              for m, n in zip(SIZES[:-1], SIZES[1:])]
    return params, rng.standard_normal((batch, SIZES[0])).astype(np.float32), \
        rng.standard_normal((batch, SIZES[-1])).astype(np.float32)


class System:
    """One side of the comparison: its numpy, transformations, device_put and blocking."""

    def __init__(self, name, np_, jit, value_and_grad, grad, vmap, put, leaves):
        self.name, self.np, self.jit, self.value_and_grad, self.grad, self.vmap = name, np_, jit, value_and_grad, \
            grad, vmap
        self.put, self.leaves = put, leaves

    def block(self, out):
        for a in self.leaves(out):
            a.block_until_ready()
        return out

    def workloads(self):
        l = lambda p, x, y: loss(self.np, p, x, y)
        full = [self.put(a) for a in host_data()]
        per = [self.put(a) for a in host_data(PER_EXAMPLE_BATCH)]
        return {"value_and_grad": (self.jit(self.value_and_grad(l)), full),
                "per-example grads": (self.jit(self.vmap(self.grad(l), in_axes=(None, 0, 0))), per)}


def systems() -> list[System]:
    out = [System("stagec", snp, stagec.jit, stagec.value_and_grad, stagec.grad, stagec.vmap,
                  lambda t: stagec.tree_util.tree_map(snp.asarray, t), stagec.tree_util.tree_leaves)]
    if jax is not None:
        out.append(System("jax", jnp, jax.jit, jax.value_and_grad, jax.grad, jax.vmap,
                          lambda t: jax.tree_util.tree_map(jnp.asarray, t), jax.tree_util.tree_leaves))
    return out


def compare(name: str, runs: dict, repeat: int) -> dict:
    """First call of each, then `repeat` alternating timed calls; prints and returns the medians."""
    first, times, results = {}, {k: [] for k in runs}, {}
    for k, (sys_, f, args) in runs.items():
        first[k], results[k] = timed(lambda: sys_.block(f(*args)))
    stagec.wait_for_compiles()  # (the first call ran on the quick tier: steady state is the fused module's)
    for _ in range(16):  # warm-up (past stagec's first 14 calls of a module calling BLAS, which choose its CPU driver)
        for sys_, f, args in runs.values():
            sys_.block(f(*args))
    for _ in range(repeat):
        for k, (sys_, f, args) in runs.items():
            times[k].append(elapsed(lambda: sys_.block(f(*args))))
    med = {k: statistics.median(t) for k, t in times.items()}
    print(name)
    for k in runs:
        print(f"  {k:8s} first call {first[k] * 1e3:9.1f} ms   steady {med[k] * 1e3:8.2f} ms")
    if "jax" in runs:
        leaves = lambda k: [np.asarray(a, np.float32) for a in runs[k][0].leaves(results[k])]
        err = max(float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-12))
                  for a, b in zip(leaves("stagec"), leaves("jax")))
        print(f"  stagec/jax steady {med['stagec'] / med['jax']:.2f}, first call {first['stagec'] / first['jax']:.2f}; "
              f"max relative difference of the results {err:.1e}")
    return med


def module_report() -> None:
    """How the backward pass compiles: one module, its dot_generals and tanh beside JAX's (no recomputation:
    the forward's tanh is computed once and read back by the backward pass)."""
    l = lambda p, x, y: loss(snp, p, x, y)
    text = stagec.jit(stagec.value_and_grad(l)).lower(*host_data()).as_text("final")
    count = lambda t, op: t.count(op + " ") + t.count(op + "(")
    line = (f"  stagec: {text.count('func.func')} function, {count(text, 'stablehlo.dot_general')} dot_general, "
            f"{text.count('math.tanh') + count(text, 'stablehlo.tanh')} tanh, "
            f"{count(text, 'stablehlo.transpose')} transpose")
    if jax is not None:
        jt = jax.jit(jax.value_and_grad(lambda p, x, y: loss(jnp, p, x, y))).lower(*host_data()).as_text()
        line += (f"; jax: {jt.count('func.func')} function, {count(jt, 'stablehlo.dot_general')} dot_general, "
                 f"{count(jt, 'stablehlo.tanh')} tanh, {count(jt, 'stablehlo.transpose')} transpose")
    print("module of value_and_grad (forward 2 dots + backward 3):\n" + line)


def alone(name: str, repeat: int) -> dict:
    """In a fresh process: {workload: median steady seconds} of system `name` alone."""
    side = next(s for s in systems() if s.name == name)
    out = {}
    for w, (f, args) in side.workloads().items():
        warm(side, f, args)
        out[w] = statistics.median(elapsed(lambda: side.block(f(*args))) for _ in range(repeat))
    return out


def warm(side: System, f, args) -> None:
    """Call `f` until its steady state: compiled, and past stagec's first 14 calls of a module calling BLAS,
    which choose its CPU driver."""
    side.block(f(*args))
    stagec.wait_for_compiles()
    for _ in range(16):
        side.block(f(*args))


def serve(name: str, repeat: int) -> None:
    """In a fresh process: set up system `name`'s workloads, say "ready", then for each "go" line on stdin
    print {workload: median seconds of `repeat` steady calls} as a JSON line."""
    side = next(s for s in systems() if s.name == name)
    loads = side.workloads()
    for f, args in loads.values():
        warm(side, f, args)
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "go":
            return
        print(json.dumps({w: statistics.median(elapsed(lambda: side.block(f(*args))) for _ in range(repeat))
                          for w, (f, args) in loads.items()}), flush=True)


TURN_PAUSE = 0.3  # seconds between turns: OpenBLAS's idle threads spin ~0.1 s after a call before they sleep


def turns(n: int, repeat: int) -> None:
    """Both systems in processes of their own, alive together and taking turns (`n` each, alternating, paused
    between turns): each turn's ratio against the other system's turn beside it, the machine's state alike."""
    names = [s.name for s in systems()]
    procs = {}
    try:
        for name in names:
            procs[name] = subprocess.Popen([sys.executable, __file__, "--serve", name, "--repeat", str(repeat)],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for name, p in procs.items():
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the {name} process failed to start (exit code {p.wait()})")
        got: dict = {name: [] for name in names}
        for r in range(n):
            for name in (names if r % 2 == 0 else names[::-1]):
                time.sleep(TURN_PAUSE)
                p = procs[name]
                p.stdin.write("go\n")
                p.stdin.flush()
                line = p.stdout.readline()
                if not line:
                    raise RuntimeError(f"the {name} process died (exit code {p.wait()})")
                got[name].append(json.loads(line))
    finally:
        for p in procs.values():  # (end of input ends a child; one that hangs is killed)
            try:
                p.stdin.close()
                p.wait(60)
            except (OSError, subprocess.TimeoutExpired):
                p.kill()
    print(f"steady state, each system in a process of its own, {n} turns each of {repeat} calls, alternating, "
          f"medians:")
    for w in got[names[0]][0]:
        med = {name: statistics.median(t[w] for t in got[name]) for name in names}
        line = "   ".join(f"{name} {med[name] * 1e3:7.2f} ms" for name in names)
        if "jax" in med:
            pairs = sorted(s[w] / j[w] for s, j in zip(got["stagec"], got["jax"]))
            line += (f"   stagec/jax {med['stagec'] / med['jax']:.2f}; by turn {statistics.median(pairs):.2f} "
                     f"({pairs[0]:.2f}-{pairs[-1]:.2f})")
        print(f"  {w:18s} {line}")


def apart(rounds: int, repeat: int) -> None:
    names = [s.name for s in systems()]
    got: dict = {n: {} for n in names}
    for r in range(rounds):
        for n in (names if r % 2 == 0 else names[::-1]):
            for w, t in run_json([sys.executable, __file__, "--alone", n, "--repeat", str(repeat)]).items():
                got[n].setdefault(w, []).append(t)
    print(f"steady state, each system in {rounds} fresh processes of its own (alternating), medians:")
    for w in got[names[0]]:
        med = {n: statistics.median(got[n][w]) for n in names}
        line = "   ".join(f"{n} {med[n] * 1e3:7.2f} ms" for n in names)
        ratio = f"   stagec/jax {med['stagec'] / med['jax']:.2f}" if "jax" in med else ""
        if "jax" in med:  # each round's two processes ran back to back: their ratio cancels the machine's drift
            pairs = sorted(s / j for s, j in zip(got["stagec"][w], got["jax"][w]))
            ratio += f"; by round {statistics.median(pairs):.2f} ({pairs[0]:.2f}-{pairs[-1]:.2f})"
        print(f"  {w:18s} {line}{ratio}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--apart", type=int, default=3, help="rounds of one process per system (0: none)")
    ap.add_argument("--turns", type=int, default=0, help="turns of each system's process, both alive (0: none)")
    ap.add_argument("--alone", help=argparse.SUPPRESS)
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    a = ap.parse_args()
    repeat = a.repeat
    if a.alone:
        print(json.dumps(alone(a.alone, repeat)))
        return
    if a.serve:
        serve(a.serve, repeat)
        return
    stagec.config.update("persistent_cache", False)  # first calls compile
    sides = systems()
    loads = {s.name: s.workloads() for s in sides}
    print(f"MLP {'x'.join(map(str, SIZES))}, float32; medians of {repeat} alternating calls")
    for w in loads[sides[0].name]:
        compare(f"jit(value_and_grad(loss)), batch {BATCH}" if w == "value_and_grad" else
                f"jit(vmap(grad(loss))) per-example gradients, batch {PER_EXAMPLE_BATCH}",
                {s.name: (s, *loads[s.name][w]) for s in sides}, repeat)
    module_report()
    if a.apart:
        apart(a.apart, repeat)
    if a.turns:
        turns(a.turns, repeat)


if __name__ == "__main__":
    main()
