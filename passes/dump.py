"""`STAGEC_DUMP_DIR=dir`: every stage of every compiled function, IREE's dispatch sources and pass
statistics, one folder per compiled function (`dir/<function>-<n>/`):

    00-traced.mlir  01-<first pass>.mlir ... NN-stablehlo.mlir ... NN-final.mlir  passes.txt  dispatches/*.mlir

(the stages of `stagec.stages.Lowered.stages()`, in order).
"""
from __future__ import annotations

import itertools
import os

_counter = itertools.count()


def dump_dir() -> str | None:
    return os.environ.get("STAGEC_DUMP_DIR") or None


def write_stages(root: str, fun_name: str, stages: dict[str, str], stats) -> str:
    """Write `stages` (name -> text, in order) and `stats` under a new folder of `root`; return it."""
    while True:
        d = os.path.join(root, f"{fun_name}-{next(_counter):03d}")
        try:
            os.makedirs(d)
            break
        except FileExistsError:
            continue
    for i, (name, text) in enumerate(stages.items()):
        with open(os.path.join(d, f"{i:02d}-{name}.mlir"), "w") as f:
            f.write(text)
    with open(os.path.join(d, "passes.txt"), "w") as f:
        f.write(f"{fun_name}: {len(stats)} pass(es)\n")
        f.writelines(s.line() + "\n" for s in stats)
    return d


def dump_lowered(lowered) -> list[str]:
    """Dump a `stagec.stages.Lowered` when STAGEC_DUMP_DIR is set; return the IREE flags that also
    write its dispatch sources there (empty when dumping is off)."""
    root = dump_dir()
    if root is None:
        return []
    d = write_stages(root, lowered.name, lowered.stages(), lowered.pass_stats)
    return [f"--iree-hal-dump-executable-sources-to={os.path.join(d, 'dispatches')}"]
