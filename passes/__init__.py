"""stagec's own MLIR passes (installed as `stagec.passes`), run between tracing and IREE.

Each pass lives in its own module and registers itself by name, with its kind (optimization, workaround,
expansion, legalize, offload) and, for a workaround, why (`Workaround`); each target declares the names it runs
(`stagec.compiler.targets`). `run_pipeline(module, passes)` runs a pipeline in place and returns one `Stage` per pass
(its name, the IR after it and its `PassStats`). See docs/passes.md.
"""
from __future__ import annotations

from . import activations, batchsums, columns, commuted, contractions, dce, dft, exp64, fold_constants, fuse, intchains, lanes, lapack, legalize, loopweights, masks, mathlib, movement, outer, patches, rows, simplify, slices, special, split_sums, squares, tanh64, tiles, upcast, updates, upstream, weightpass, widen  # noqa: F401,E501  (each registers its pass)
from .base import REGISTRY, Pass, PassError, PassStats, Workaround
from .pipeline import DEFAULT_PIPELINE, Stage, describe, on_text, resolve, run_pipeline

__all__ = ["DEFAULT_PIPELINE", "Pass", "PassError", "PassStats", "REGISTRY", "Stage", "Workaround", "describe",
           "on_text", "resolve", "run_pipeline"]
