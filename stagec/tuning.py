"""IREE tuning specs for the CPU: which parts of `stagec/tuning/` a module gets, joined into one spec file.

A tuning spec (`--iree-codegen-tuning-spec-path`) is a transform-dialect library that sets IREE's tile sizes for
the dispatches it matches. Each part is a module `@name` of named sequences with an `@entry`; a module gets the
parts whose rule holds for its MLIR (a rule is a cheap look at the text), and `spec_flags` writes the parts it
got as one spec (a `__kernel_config` that includes each part's `@entry` in turn) into a private folder, named by
its content: the compile cache key holds the file's digest (`backend.flag_files`).
"""
from __future__ import annotations

import atexit
import functools
import hashlib
import os
import re
import shutil
import tempfile
import threading
from typing import Callable

PARTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tuning")
FLAG = "--iree-codegen-tuning-spec-path="

_REDUCE_DIMS = re.compile(r"across dimensions = \[([\d, ]*)\] : \(tensor<([^>]*)>")
_BROADCAST_DIMS = re.compile(r"stablehlo\.broadcast_in_dim [^\n]*?dims = \[([\d, ]*)\]")
_MAP_RESULTS = re.compile(r"affine_map<\([^)]*\) -> \(([^)]*)\)>")
_FUSED_REDUCTION = re.compile(r'linalg\.generic [^\n]*"reduction"')
_NOT_F32 = re.compile(r"[<x](?:b?f16|f64)>")  # a float16, bfloat16 or float64 tensor
_EDGE = re.compile(r"^\s*(?:%\S+ = stablehlo\.(?:convert|constant) |func\.func |return )")  # where `widen-half` leaves them
_F64_DOT = re.compile(r"stablehlo\.dot_general [^\n]*-> tensor<[\dx]*f64>")


def reads_rows_only(mlir: str) -> bool:
    """Whether a float32 module has two or more reductions, each StableHLO one over its operand's last dimensions,
    and reads no array out of order (no transpose, no broadcast or fused map that permutes dimensions). The rows
    part's tiles run along rows: in a dispatch reading down columns they made a softmax 8x and a layernorm 10x
    slower."""
    reduces = _REDUCE_DIMS.findall(mlir)
    fused = len(_FUSED_REDUCTION.findall(mlir))  # (`fuse`'s reductions)
    if len(reduces) + fused < 2 or "stablehlo.transpose" in mlir or _computes_narrow(mlir):
        return False  # (float16 softmax 4096x1024 took 17 ms with the spec, 12 without)
    for dims, ty in reduces:
        rank, got = ty.count("x"), sorted(int(d) for d in dims.split(",") if d.strip())
        if got != list(range(rank - len(got), rank)):
            return False
    for dims in _BROADCAST_DIMS.findall(mlir):
        got = [int(d) for d in dims.split(",") if d.strip()]
        if got != sorted(got):
            return False
    for results in _MAP_RESULTS.findall(mlir):
        got = [int(d[1:]) for d in results.replace(" ", "").split(",") if d.startswith("d")]
        if got != sorted(got):
            return False
    return True


def _computes_narrow(mlir: str) -> bool:
    """Whether an op other than a convert or constant has a float16, bfloat16 or float64 tensor. A bfloat16 or
    float16 softmax or layernorm computes in float32 (`widen-half`) and, with the rows part, took 1.28 ms against
    1.36 (bfloat16 softmax) and 0.95 against 1.02 (layernorm; 4096x1024, 2 cores, one process timing both
    interleaved, medians)."""
    return any(_NOT_F32.search(line) and not _EDGE.match(line) for line in mlir.splitlines())


def reduces_columns(mlir: str) -> bool:
    """Whether a module sums a float32 array of rank 2 or more over leading dimensions only (a column sum): the
    columns part tiles such a dispatch 64 columns wide (IREE: 16)."""
    for dims, ty in _REDUCE_DIMS.findall(mlir):
        rank = ty.count("x")
        if ty.endswith("xf32") and rank >= 2 and str(rank - 1) not in dims.replace(" ", "").split(","):
            return True
    return False


_ALIAS = re.compile(r"^(#map\d*) = (affine_map<[^\n]*>)$", re.M)
_COLUMNS_GENERIC = re.compile(r'linalg\.generic \{indexing_maps = \[([^\]]*)\], iterator_types = \["parallel", "reduction"\]\}')
_MAP = re.compile(r"#map\d*|affine_map<[^>]*>")
_READ_ROW_BY_ROW, _PER_COLUMN = "affine_map<(d0, d1) -> (d1, d0)>", "affine_map<(d0, d1) -> (d0)>"


def sibling_maps(mlir: str) -> tuple[str, ...]:
    """The indexing maps (as one attribute's text each) of the module's generics that reduce rank-2 arrays down
    their columns into several results (stagec's `fuse`: sibling reductions and the values kept beside them),
    every array read row by row: the `columns` part tiles them too, as it tiles one reduction (a loss and its
    gradient's bias sum, 256x2048: 409-439 -> 260 us on one thread)."""
    aliases = dict(_ALIAS.findall(mlir))
    out = []
    for m in _COLUMNS_GENERIC.finditer(mlir):
        maps = [aliases.get(x, x) for x in _MAP.findall(m[1])]
        if maps.count(_PER_COLUMN) >= 2 and set(maps) <= {_READ_ROW_BY_ROW, _PER_COLUMN}:
            text = "[" + ", ".join(maps) + "]"
            if text not in out:
                out.append(text)
    return tuple(out)


# name -> whether a module's MLIR gets the part `tuning/<name>.mlir`, in the order the parts are tried.
RULES: dict[str, Callable[[str], bool]] = {
    "rows": reads_rows_only,
    "f64_matmul": lambda mlir: _F64_DOT.search(mlir) is not None,
    "columns": lambda mlir: reduces_columns(mlir) or bool(sibling_maps(mlir)),
}
# The line of the `columns` part after which `spec_text` matches the module's `sibling_maps`, and its merge.
_SIBLINGS_AT, _MERGE = "    // (stagec.tuning: the module's sibling reductions)\n", "%cols = transform.merge_handles %a, %b, %c"
# The `columns` part's tiles (128 columns a workgroup), and those of a module whose dispatches run on the calling
# thread (`spec_flags(..., one_thread=True)`): all columns in one workgroup, one row at a time, so that the
# dispatch streams through its arrays row after row. Between two BLAS calls of value_and_grad (the loss, its
# gradient and bias sum of a 256x2048 difference, read right after the matmul that wrote it): on a 2-core Xeon
# (AVX-512) 128 columns took 267-319 us, whole rows 8 at a time 215-246; on a 2-core EPYC (Zen 3, AVX2) 128
# columns 698-718, 8 rows 640, one row 398 (docs/passes.md). 128 columns read 512 bytes of each row 8 KiB apart,
# which the caches' prefetchers do not follow (a repeated call on data already in cache showed nothing of it:
# 128 columns were chosen there).
_TILES = "distribution = [128, 0], vector_common_parallel"
_WHOLE_ROWS = "distribution = [65536, 0], cache_reduction = [0, 1], vector_common_parallel"
# A module run on one thread also has its column sums tiled where the dispatch computes the summed array as a
# result of its own (a 2-D elementwise generic: the first layer's gradient `g * (1 - h^2)`, which the next matmul
# reads and the bias gradient sums), that generic 64 columns a step: left to IREE (32 columns a workgroup) it
# took 169-171 us in value_and_grad, 116-138 tiled (2-core EPYC; docs/passes.md).
_OWN = "    %mine = transform.merge_handles %ew, %op : !transform.any_op\n"
_EW_TILES = '    transform.annotate %ew "lowering_config" = %fill_cfg : !transform.any_op, !transform.any_param\n'
_MATCH_2D = ('    %ew2 = transform.structured.match ops{["linalg.generic"]} attributes {iterator_types = '
             '[#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>]} in %f : (!transform.any_op) -> '
             '!transform.any_op\n')
_OWN_2D = _MATCH_2D + "    %mine = transform.merge_handles %ew, %ew2, %op : !transform.any_op\n"
_EW_2D_TILES = _EW_TILES + _MATCH_2D + (
    '    %ew2_cfg = transform.param.constant #iree_cpu.lowering_config<vector_common_parallel = [0, 64], '
    'vector_inner_parallel = [1, 0], vector_reduction = [1, 0]> -> !transform.any_param\n'
    '    transform.annotate %ew2 "lowering_config" = %ew2_cfg : !transform.any_op, !transform.any_param\n')


def parts_for(mlir: str) -> list[str]:
    """The parts of the CPU tuning spec that a module's MLIR gets."""
    return [name for name, rule in RULES.items() if rule(mlir)]


@functools.lru_cache(maxsize=16)
def spec_text(parts: tuple[str, ...], siblings: tuple[str, ...] = (), one_thread: bool = False) -> str:
    """One tuning spec holding `parts`: their modules and a `__kernel_config` that applies each in turn; the
    `columns` part also matches generics with the indexing maps `siblings` (`sibling_maps`), and tiles whole rows
    for a module run on one thread (`_WHOLE_ROWS`), with the 2-D elementwise generics beside its sums (`_OWN_2D`)."""
    lines = ["module attributes {transform.with_named_sequence} {"]
    for p in parts:
        with open(os.path.join(PARTS_DIR, p + ".mlir")) as f:
            text = f.read()
        if p == "columns" and siblings:
            names = [f"%s{i}" for i in range(len(siblings))]
            match = "".join(f"    {n} = transform.structured.match ops{{[\"linalg.generic\"]}} attributes {{indexing_maps = "
                            f"{m}}} in %f : (!transform.any_op) -> !transform.any_op\n" for n, m in zip(names, siblings))
            text = text.replace(_SIBLINGS_AT, _SIBLINGS_AT + match).replace(_MERGE, ", ".join([_MERGE, *names]))
        if p == "columns" and one_thread:
            assert _TILES in text and _OWN in text and _EW_TILES in text
            text = text.replace(_TILES, _WHOLE_ROWS).replace(_OWN, _OWN_2D).replace(_EW_TILES, _EW_2D_TILES)
        lines.append(text)
    lines.append("  transform.named_sequence @__kernel_config(%arg0: !transform.any_op {transform.consumed}) "
                 "-> !transform.any_op attributes {iree_codegen.tuning_spec_entrypoint} {")
    prev = "%arg0"
    for i, p in enumerate(parts):
        lines.append(f"    %r{i} = transform.include @{p}::@entry failures(suppress) ({prev}) "
                     ": (!transform.any_op) -> !transform.any_op")
        prev = f"%r{i}"
    lines += [f"    transform.yield {prev} : !transform.any_op", "  }", "}", ""]
    return "\n".join(lines)


_lock = threading.Lock()
_folder: list[str] = []  # this process's private folder of written specs, made on first use


def spec_path(parts: tuple[str, ...], siblings: tuple[str, ...] = (), one_thread: bool = False) -> str:
    """The file holding the spec of `parts` (`siblings`, `one_thread`), written once per process (named by its
    digest)."""
    text = spec_text(parts, siblings, one_thread)
    with _lock:
        if not _folder:
            _folder.append(tempfile.mkdtemp(prefix="stagec-tuning-"))  # (mode 0700: no one else writes there)
            atexit.register(shutil.rmtree, _folder[0], True)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        path = os.path.join(_folder[0], f"cpu-{'+'.join(parts)}-{digest}.mlir")
        if not os.path.exists(path):
            with open(path + ".tmp", "w") as f:
                f.write(text)
            os.replace(path + ".tmp", path)
    return path


def spec_flags(mlir: str, one_thread: bool = False) -> list[str]:
    """The tuning-spec flag for a CPU module ([] when no part applies); `one_thread`: its dispatches run on the
    calling thread (a module calling BLAS between them)."""
    parts = tuple(parts_for(mlir))
    if not parts:
        return []
    columns = "columns" in parts
    return [FLAG + spec_path(parts, sibling_maps(mlir) if columns else (), one_thread and columns)]
