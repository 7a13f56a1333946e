"""`STAGEC_DUMP_DIR=dir`: every stage of every compiled function, IREE's dispatch sources and pass
statistics, one folder per compiled function (`dir/<function>-<n>/`):

    00-traced.mlir  01-<first pass>.mlir ... NN-stablehlo.mlir ... NN-final.mlir  passes.txt  dispatches/*.mlir
    index.html (the explorer page of all of them, `stagec.explorer`)

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


def dump_lowered(lowered) -> str | None:
    """Dump a `stagec.stages.Lowered` when STAGEC_DUMP_DIR is set; return its folder (None when off).
    IREE writes the dispatch sources into `<folder>/dispatches` (`dispatch_flags`)."""
    root = dump_dir()
    if root is None:
        return None
    return write_stages(root, lowered.name, lowered.stages(), lowered.pass_stats)


def dispatch_flags(folder: str | None) -> list[str]:
    return [] if folder is None else [f"--iree-hal-dump-executable-sources-to={os.path.join(folder, 'dispatches')}"]


def write_index(folder: str, lowered, compile_seconds: float) -> str:
    """`<folder>/index.html`: the explorer page of the dumped stages and dispatches (after IREE ran)."""
    from stagec import explorer
    names = sorted(os.listdir(os.path.join(folder, "dispatches"))) if os.path.isdir(
        os.path.join(folder, "dispatches")) else []
    dispatches = []
    for n in names:
        with open(os.path.join(folder, "dispatches", n)) as f:
            dispatches.append((n.removesuffix(".mlir"), f.read()))
    sig = ", ".join(a.str_short() for a in lowered.graph.in_avals)
    return explorer.write(os.path.join(folder, "index.html"), f"{lowered.name}({sig})",
                          list(lowered.stages().items()), pass_stats=lowered.pass_stats,
                          timings={"IREE compile": compile_seconds},
                          info={"backend": lowered.backend.name, "target": lowered.backend.target},
                          dispatches=dispatches)
