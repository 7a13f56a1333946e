"""Text forms of a GPU target's legalization, for tests reading a stage's text."""
from __future__ import annotations

from stagec.compiler.driver import run_passes
from stagec.compiler.targets import TARGETS


def legalized(mlir: str, backend: str) -> str:
    """`mlir` through `backend`'s legalization passes (its target's `legalize` list)."""
    return run_passes(mlir, TARGETS[backend].pipeline.legalize, backend) or mlir


def gpu_rewrites(mlir: str, backend: str) -> list[str]:
    """The names of the ops of `mlir` that `backend`'s GPU legalization rewrites (found by IR queries)."""
    from iree.compiler import ir

    from stagec.passes import legalize
    with ir.Context():
        return legalize.gpu_rewrites(ir.Module.parse(mlir), TARGETS[backend].pipeline.legalize)
