"""Timing helpers shared by the benchmark scripts (each run as `python benchmarks/bench_x.py`, which puts this
folder on sys.path)."""
from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import time
from typing import Any, Callable, Sequence


def import_jax():
    """(jax, jax.numpy), or (None, None) where JAX (an optional comparison only) is not installed."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None, None
    return jax, jnp


def byte_compiled(*roots: str) -> None:
    """Write the bytecode of each stagec checkout measured (`compileall`), as an installed package has it. Where
    PYTHONDONTWRITEBYTECODE is set (this machine's shells set it), every fresh process compiled stagec's sources
    as it imported them: ~0.2 s of a first call (the passes, imported with the compiler), where JAX's installed
    wheel had its bytecode since its install."""
    import compileall
    for root in roots:
        for sub in ("stagec", "passes"):
            if os.path.isdir(os.path.join(root, sub)):
                compileall.compile_dir(os.path.join(root, sub), quiet=1)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds one call of `fn` takes, and its result."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def elapsed(fn: Callable[[], Any]) -> float:
    """Seconds one call of `fn` takes."""
    return timed(fn)[0]


def median_time(fn: Callable[[], Any], repeat: int, warmup: int = 2) -> float:
    """Median seconds per call of `fn` over `repeat` calls, after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    return statistics.median(elapsed(fn) for _ in range(repeat))


def time_batch(call: Callable[[], Any], n: int,
               block: Callable[[Any], Any] = lambda out: out.block_until_ready()) -> float:
    """Seconds per call over `n` calls, waiting (`block`) for the last result."""
    t0 = time.perf_counter()
    for _ in range(n):
        out = call()
    block(out)
    return (time.perf_counter() - t0) / n


def alternating(items: Sequence, i: int) -> Sequence:
    """`items` in round `i`'s order: reversed on even rounds, so that load from elsewhere falls on all alike."""
    return items if i % 2 else items[::-1]


def run_json(cmd: list[str], name: str | None = None, **kw) -> dict:
    """Run `cmd` in a fresh process (subprocess.run keywords `kw`) and return the JSON object its stdout ends
    with; RuntimeError naming the child (`name`, else `cmd`) with its stderr's tail if it fails or prints none."""
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        raise RuntimeError(f"child {name or ' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return json.loads(lines[-1])


def fmt(s: float | None, width: int = 0) -> str:
    """`s` seconds in ms (from 1 ms) or us, the number `width` wide; '-' for None."""
    if s is None:
        return "-"
    return f"{s * 1e3:{width}.3f} ms" if s >= 1e-3 else f"{s * 1e6:{width}.1f} us"


def geomean(xs: Sequence[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")
