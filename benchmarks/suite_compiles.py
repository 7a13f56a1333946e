"""What the test suite compiles: a pytest plugin that logs each IREE compile of its workers, and a summary of the log.

    PYTHONPATH=benchmarks STAGEC_COMPILE_LOG=/tmp/clog bash scripts/test.sh -p suite_compiles
    python benchmarks/suite_compiles.py /tmp/clog

Each worker appends one line per `stagec.compiler.driver.compile` to DIR/<pid>.tsv: the hash of (MLIR, backend,
flags), backend, function name, wall seconds, MLIR bytes, the test. Compiles in the tests' subprocesses are not
logged. The summary: compiles and seconds by kind (jit, eager kernel, eager composite), repeated keys, the
distribution, and the test files that compile most (docs/log.md, 2026-12-05 sixtieth).
"""
from __future__ import annotations

import collections
import glob
import hashlib
import os
import sys
import time

_test = ["?"]


def _install(folder: str) -> None:
    from stagec.compiler import driver
    os.makedirs(folder, exist_ok=True)
    out = open(os.path.join(folder, f"{os.getpid()}.tsv"), "a", buffering=1)
    compile_ = driver.compile

    def logged(mlir, backend, fun_name, flags, side_flags=(), variant=None):
        h = hashlib.sha1((mlir + backend + repr(list(flags))).encode()).hexdigest()[:16]
        t = time.perf_counter()
        try:
            return compile_(mlir, backend, fun_name, flags, side_flags, variant)
        finally:
            out.write(f"{h}\t{backend}\t{fun_name}\t{time.perf_counter() - t:.3f}\t{len(mlir)}\t{_test[0]}\n")
    driver.compile = logged


def pytest_configure(config):
    _install(os.environ.get("STAGEC_COMPILE_LOG", "/tmp/stagec-compile-log"))


def pytest_runtest_setup(item):
    _test[0] = item.nodeid


def summary(folder: str) -> None:
    rows = []
    for path in glob.glob(os.path.join(folder, "*.tsv")):
        with open(path) as f:
            rows += [p for p in (line.rstrip("\n").split("\t") for line in f) if len(p) == 6]
    if not rows:
        sys.exit(f"no compiles logged in {folder}")
    secs = [float(r[3]) for r in rows]
    print(f"{len(rows)} compiles, {sum(secs):.0f} s of compile wall")
    kinds, kind_s = collections.Counter(), collections.Counter()
    for r, s in zip(rows, secs):
        kind = r[2].split("_")[0] if r[2].startswith(("jit_", "eager_", "composite_")) else "other"
        kinds[kind] += 1
        kind_s[kind] += s
    for k, n in kinds.most_common():
        print(f"  {k:10s} {n:6d} compiles {kind_s[k]:8.0f} s")
    first, extra, extra_s = set(), 0, 0.0
    for r, s in zip(rows, secs):
        if r[0] in first:
            extra, extra_s = extra + 1, extra_s + s
        first.add(r[0])
    print(f"{len(first)} distinct keys; {extra} compiles repeat an earlier one ({extra_s:.0f} s)")
    ordered = sorted(secs)
    print(f"median {ordered[len(ordered) // 2]:.2f} s, p90 {ordered[int(0.9 * len(ordered))]:.2f} s; under 0.4 s: "
          f"{sum(1 for s in secs if s < 0.4)} compiles, {sum(s for s in secs if s < 0.4):.0f} s")
    files, file_s = collections.Counter(), collections.Counter()
    for r, s in zip(rows, secs):
        f = r[5].partition("::")[0]
        files[f] += 1
        file_s[f] += s
    print("files compiling most (compiles, seconds):")
    for f, s in file_s.most_common(15):
        print(f"  {files[f]:5d} {s:7.1f} {f}")


if __name__ == "__main__":
    summary(sys.argv[1] if len(sys.argv) > 1 else "/tmp/stagec-compile-log")
