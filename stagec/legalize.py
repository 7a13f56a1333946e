"""Text-in, text-out forms of the legalization and offload rewrites (for tests and tools reading a stage's text).

The rewrites themselves are registered passes in `stagec.passes.legalize`, which each target's pipeline names
(`stagec.compiler.targets`); the host modules' ABI (module and symbol names, packed dimensions) is in
`stagec.lowering`."""
from __future__ import annotations

from typing import Callable, Sequence

from .lowering import (BLAS_IMPORTS, BLAS_MODULE, BLAS_TYPES, SORT_IMPORTS, SORT_KEY_TYPES,  # noqa: F401
                       SORT_MODULE, SORT_OPERANDS, pack_dims, unpack_dims)


def _on_text(mlir: str, rewrite: Callable) -> str | None:
    """`mlir` through `rewrite(module)`, or None where it changed nothing."""
    from iree.compiler import ir
    with ir.Context():
        module = ir.Module.parse(mlir)
        return str(module) if rewrite(module) else None


def _passes():
    from .passes import legalize
    return legalize


def isolate_multi_use_reductions(mlir: str) -> str | None:
    """`isolate-reductions` on text (see `stagec.passes.legalize.isolate_multi_use_reductions`)."""
    return _on_text(mlir, _passes().isolate_multi_use_reductions)


def materialize_sliced_dot_operands(mlir: str) -> str | None:
    """`materialize-sliced-dots` on text."""
    return _on_text(mlir, _passes().materialize_sliced_dot_operands)


def blas_dots(mlir: str, min_macs: int, min_vector_macs: int | None = None) -> str | None:
    """`blas-dots` on text, with these thresholds."""
    return _on_text(mlir, lambda m: _passes().blas_dots(m, min_macs, min_vector_macs))


def host_sorts(mlir: str, min_length: int) -> str | None:
    """`host-sorts` on text, with this threshold."""
    return _on_text(mlir, lambda m: _passes().host_sorts(m, min_length))


def gpu_legalize(mlir: str, backend: str) -> str:
    """`mlir` through `backend`'s legalization passes (its target's `legalize` list)."""
    from .compiler.targets import TARGETS
    from .passes import REGISTRY
    from .passes.base import PassStats

    def run(module):
        for name in TARGETS[backend].pipeline.legalize:
            REGISTRY[name].run(module, PassStats(name, backend))
        return True
    return _on_text(mlir, run)


def legalize_for_gpu(mlir: str, backend: str, ops: Sequence[str] = ()) -> str:
    """`gpu_legalize` (`ops`, once the ops to rewrite, is not needed: each pass finds its own)."""
    return gpu_legalize(mlir, backend)


def gpu_rewrites(mlir: str, backend: str) -> list[str]:
    """The names of the ops of `mlir` that `backend`'s GPU legalization rewrites (found by IR queries)."""
    from iree.compiler import ir
    L = _passes()
    legal = _legalize_names(backend)
    keep = []
    if {"bf16-in-f32", "bf16-in-f32-apart"} & legal:
        keep.append(lambda op: op.name in ("stablehlo.dot_general", "stablehlo.power") and L._is_bf16(op.results[0]))
    if "f32-dots-bf16x3" in legal:
        keep.append(L._is_f32_product_below_highest)
    if "nan-guards" in legal:
        keep.append(lambda op: op.name in L._NAN_GUARDED)
    with ir.Context():
        module = ir.Module.parse(mlir)
        found = L._ops_where(module, lambda op: any(k(op) for k in keep))
        return list(dict.fromkeys(op.name for op in found))


def _legalize_names(backend: str) -> set[str]:
    from .compiler.targets import TARGETS
    return set(TARGETS[backend].pipeline.legalize)
