"""Python time and page size of the HTML explorer for modules of 500 to 5,000 ops, seven stages each
(three distinct texts, as after passes that change little), the last stage's graph drawn.

    .venv/bin/python benchmarks/bench_explorer.py [--repeat 5]

Opening the page is the browser's part: `bash scripts/check-explorer.sh` checks it in Chromium.
"""
from __future__ import annotations

import argparse
import statistics
import time

from stagec import explorer


def module(n_ops: int, op: str = "multiply") -> str:
    """A chain of `n_ops` ops: a constant and an add or `op` per step."""
    lines = ["module @jit_chain {", "  func.func @main(%arg0: tensor<8x128xf32>) -> tensor<8x128xf32> {"]
    prev = "%arg0"
    for i in range(n_ops // 2):
        lines.append(f"    %cst_{i} = stablehlo.constant dense<{i * 0.5:e}> : tensor<8x128xf32>")
        lines.append(f"    %{i} = stablehlo.{'add' if i % 3 else op} {prev}, %cst_{i} : tensor<8x128xf32>")
        prev = f"%{i}"
    return "\n".join(lines + [f"    return {prev} : tensor<8x128xf32>", "  }", "}"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"{'ops':>6} {'render (median)':>16} {'page':>9}")
    for n in (500, 2000, 5000):
        a, b, c = module(n), module(n, "subtract"), module(n, "divide")
        stages = [("traced", a), ("fold-constants", a), ("simplify", b), ("cse", b), ("dce", b), ("fuse", c),
                  ("final", c)]
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            page = explorer.render("chain", stages)
            times.append(time.perf_counter() - t0)
        print(f"{n:>6} {statistics.median(times) * 1e3:13.0f} ms {len(page) / 1e6:7.2f} MB")


if __name__ == "__main__":
    main()
