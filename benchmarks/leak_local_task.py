"""Memory a training loop keeps on IREE's local-task driver (docs/log.md, 2026-11-28 nineteenth and twentieth sessions).

A row of `bench_models.py --sweep` (an Adam step's state fed back as the next call's arguments) is called `--steps`
times; the resident memory the last 100 calls added is printed. `--driver local-task` forces that driver (stagec
picks it where a module's largest dispatch reaches `backend.TASK_WORK`), `--raw` runs the same final module through
IREE's runtime alone (no stagec at call time), compiled in one run, its fusion barriers kept to the end: the leak is
IREE's (~700 MiB / 100 calls). Through stagec the barriers end at dispatch formation (`targets.BARRIERS_DROPPED`) and
the step keeps nothing; a module that leaks anyway is moved to local-sync by `backend.LOCAL_TASK_LEAK`'s guard after
~128 calls (the driver it ended on is printed); `--no-guard` keeps it there.

    python benchmarks/leak_local_task.py "784-1024-1024-10 b32 relu xent adam" [--driver local-task|local-sync]
                                         [--raw | --no-guard] [--steps 150]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

import stagec
from bench_models import step_and_args

HERE = os.path.dirname(os.path.abspath(__file__))


def rss_mib() -> int:
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20


def through_stagec(row: str, driver: str, steps: int, guard: bool = True) -> tuple[int, str]:
    from stagec import backend
    backend.TASK_WORK = 0 if driver == "local-task" else 1 << 62  # (every module on that driver)
    backend._spare_core = lambda: False
    if not guard:
        backend.LEAK_WINDOWS = 1 << 62
    f, args = step_and_args(row)
    a = stagec.tree_util.tree_map(stagec.device_put, args)
    j, s = stagec.jit(f), a
    for k in range(steps):
        if k == steps - 100:
            r0 = rss_mib()
        s = [*j(*s), *a[4:]]
        stagec.block_until_ready(s)
    return rss_mib() - r0, next(iter(j._cache.values())).exe.driver


def through_iree(row: str, driver: str, steps: int) -> tuple[int, str]:
    import iree.runtime as rt
    with tempfile.TemporaryDirectory() as d:  # (the module stagec compiles for the row, and its flags)
        subprocess.run([sys.executable, os.path.join(HERE, "profile_dispatches.py"), row, "--keep", d, "--calls", "1"],
                       check=True, capture_output=True)
        flags = [f for f in json.load(open(os.path.join(d, "flags.json"))) if "tuning-spec" not in f]
        text = open(os.path.join(d, "final.mlir")).read()
    from iree.compiler import compile_str
    vmfb = compile_str(text, target_backends=["llvm-cpu"], extra_args=flags)
    sig = re.search(r"func.func @main\((.*?)\) ->", text)[1]
    shapes = [tuple(int(n) for n in m.split("x")[:-1]) for m in re.findall(r"tensor<([^>]*)>", sig)]
    n_out = len(re.findall(r"tensor<", re.search(r"\) -> \((.*?)\) \{", text)[1]))
    inst = rt.VmInstance()
    dev = rt.get_driver(driver).create_device_by_uri(driver)
    mod = rt.VmModule.copy_buffer(inst, vmfb)
    ctx, fn = rt.VmContext(inst, modules=[rt.create_hal_module(inst, dev), mod]), mod.lookup_function("main")
    bvs = [dev.allocator.allocate_buffer_copy(memory_type=rt.MemoryType.DEVICE_LOCAL,
                                              allowed_usage=rt.BufferUsage.DEFAULT, device=dev,
                                              buffer=np.full(s, 0.01, np.float32),
                                              element_type=rt.HalElementType.FLOAT_32) for s in shapes]
    for k in range(steps):
        if k == steps - 100:
            r0 = rss_mib()
        args, rets = rt.VmVariantList(len(bvs)), rt.VmVariantList(n_out)
        for b in bvs:
            args.push_ref(b)
        ctx.invoke(fn, args, rets)
        bvs = [rets.get_as_object(i, rt.HalBufferView) for i in range(n_out)] + bvs[n_out:]  # (the state fed back)
    grew = rss_mib() - r0, driver
    _KEPT.extend([inst, dev, mod, ctx, bvs])  # (IREE's objects freed at exit, not in any order here)
    return grew


_KEPT: list = []


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("row")
    p.add_argument("--driver", default="local-task", choices=["local-task", "local-sync"])
    p.add_argument("--raw", action="store_true", help="IREE's runtime alone")
    p.add_argument("--no-guard", action="store_true", help="stagec: keep a leaking module on local-task")
    p.add_argument("--steps", type=int, default=150)
    a = p.parse_args()
    steps = max(a.steps, 101)
    grew, ended = (through_iree(a.row, a.driver, steps) if a.raw
                   else through_stagec(a.row, a.driver, steps, guard=not a.no_guard))
    print(f"{a.row} on {a.driver}{' (IREE alone)' if a.raw else ''}: {grew} MiB more resident over the last 100 "
          f"calls, ended on {ended}")


if __name__ == "__main__":
    main()
