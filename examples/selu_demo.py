"""The JIT tutorial's SELU story on stagec: eager vs jit on 1,000,000 floats, first call vs later calls,
and the StableHLO that IREE compiled. Run: `bash scripts/demo.sh` (or `python examples/selu_demo.py`)."""
from __future__ import annotations

import statistics
import time

import numpy as np

import stagec
import stagec.numpy as snp


def selu(x, alpha=1.67, lambda_=1.05):
    return lambda_ * snp.where(x > 0, x, alpha * snp.exp(x) - alpha)


def timeit(fn, repeat: int = 30) -> float:
    """Median seconds of `fn()` over `repeat` runs."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def ms(s: float) -> str:
    return f"{s * 1e3:9.3f} ms"


def main() -> None:
    n = 1_000_000
    x_np = (np.arange(n, dtype=np.float32) / n * 10 - 5).astype(np.float32)  # values in [-5, 5)
    x = stagec.device_put(x_np)  # (made by NumPy: the kernels and compiles counted below are SELU's alone)
    print(f"stagec {stagec.__version__} | device {stagec.devices()[0]} | SELU on {n:,} float32\n")

    compiles = lambda: stagec.stages.stats["iree_compiles"]

    def counts(what: str) -> str:
        """Where the modules of one line came from: the disk cache or IREE."""
        i = stagec.cache.info()
        made = f"{compiles() - compiles_before} compiled by IREE"
        return f"{what}: {i['hits']} from the disk cache, {made}" if i["enabled"] else f"{what}: {made} (disk cache off)"

    stagec.cache.reset_stats()
    compiles_before = compiles()
    t0 = time.perf_counter()
    selu(x).block_until_ready()
    eager_first = time.perf_counter() - t0
    stagec.wait_for_compiles()  # the kernels compiling meanwhile (config.eager_tiering)
    eager_ready = time.perf_counter() - t0
    eager_note = counts("kernels")
    for _ in range(2):  # (from the third call a scalar beside the array and its operation are one module each,
        selu(x).block_until_ready()  # compiled meanwhile: here, before the timing and jit's line)
    stagec.wait_for_compiles()
    eager = timeit(lambda: selu(x).block_until_ready())

    selu_jit = stagec.jit(selu)
    stagec.cache.reset_stats()
    compiles_before = compiles()
    t0 = time.perf_counter()
    selu_jit(x).block_until_ready()
    jit_first = time.perf_counter() - t0
    stagec.wait_for_compiles()  # the fused module compiling meanwhile (config.jit_tiering)
    jit_ready = time.perf_counter() - t0
    jit_note = counts("fused module")
    jit_steady = timeit(lambda: selu_jit(x).block_until_ready(), 100)
    numpy_t = timeit(lambda: 1.05 * np.where(x_np > 0, x_np, 1.67 * np.exp(x_np) - 1.67))

    want = 1.05 * np.where(x_np > 0, x_np, 1.67 * np.exp(x_np) - 1.67)
    err = float(np.max(np.abs(np.asarray(selu_jit(x)) - want)))
    print(f"  NumPy                          {ms(numpy_t)}")
    if stagec.config.eager_tiering == "exact":  # (the default: one implementation per op, dtype and size)
        how = "each primitive's kernel compiled before its first call at this size"
    else:
        how = f"NumPy rules while each primitive's kernel compiles: ready after {eager_ready:.2f} s"
    print(f"  stagec eager, first call       {ms(eager_first)}   ({how}; {eager_note})")
    print(f"  stagec eager, later calls      {ms(eager)}   (IREE kernels op by op)")
    if stagec.config.jit_tiering == "never":  # (the default: one module answers every call, the first too)
        how = "trace, stagec's passes, IREE compiles the fused module, one call"
    else:
        how = f"trace, then op by op while the fused module compiles: ready after {jit_ready:.2f} s"
    print(f"  stagec jit, first call         {ms(jit_first)}   ({how}; {jit_note})")
    print(f"  stagec jit, later calls        {ms(jit_steady)}   (the fused module, one call)")
    print(f"  jit speed-up over eager        {eager / jit_steady:9.1f}x;  max |jit - NumPy| = {err:.2e}")
    if stagec.cache.info()["enabled"]:
        print(f"  (compiled modules persist in {stagec.cache.info()['dir']}; STAGEC_CACHE=0 turns that off)\n")
    else:
        print("  (disk cache off: STAGEC_CACHE=0; every process compiles its modules again)\n")

    lowered = selu_jit.lower(x)
    stages = lowered.stages()
    names = list(stages)
    passes = [n for n in names[1:] if n not in ("stablehlo", "final")]  # (the stages between are passes)
    changed = [p for p, before in zip(passes, names) if stages[p] != stages[before]]
    print(f"What IREE compiles for selu_jit (selu_jit.lower(x).as_text(\"final\")): stagec ran {len(passes)} passes, "
          f"of which {', '.join(changed) or 'none'} changed the traced module (as_text(\"traced\")); "
          f"selu_jit.lower(x).html(\"selu.html\") shows every stage:\n")
    print(lowered.as_text("final"))


if __name__ == "__main__":
    main()
