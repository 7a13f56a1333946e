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
_F64_DOT = re.compile(r"stablehlo\.dot_general [^\n]*-> tensor<[\dx]*f64>")
_CONTRACTION = re.compile(r"stablehlo\.(?:dot_general|dot|convolution)\b[^\n]*")
_PLAIN_F32_MATMUL = re.compile(r"stablehlo\.dot_general (%[\w#.]+), (%[\w#.]+), contracting_dims = \[1\] x \[0\][^:\n]*: "
                               r"\(tensor<\d+x\d+xf32>, tensor<\d+x\d+xf32>\) -> tensor<\d+x\d+xf32>")
_TRANSPOSED = re.compile(r"(%[\w#.]+) = stablehlo\.transpose ")


def reads_rows_only(mlir: str) -> bool:
    """Whether a float32 module has two or more reductions, each StableHLO one over its operand's last dimensions,
    and reads no array out of order (no transpose, no broadcast or fused map that permutes dimensions). The rows
    part's tiles run along rows: in a dispatch reading down columns they made a softmax 8x and a layernorm 10x
    slower."""
    reduces = _REDUCE_DIMS.findall(mlir)
    fused = len(_FUSED_REDUCTION.findall(mlir))  # (`fuse`'s reductions)
    if len(reduces) + fused < 2 or "stablehlo.transpose" in mlir or _NOT_F32.search(mlir):
        return False  # (float16 softmax 4096x1024 took 17 ms with the spec, 12 without; measured in float32 only)
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


def plain_f32_matmuls(mlir: str) -> bool:
    """Whether the module contracts, and only in float32 matmuls `A @ B` of 2-D operands (no batch dimensions,
    no operand transposed, by the dot or by a transpose feeding it): those are faster unpacked with the
    f32_matmul part's tiles than data-tiled; a transposed operand is read across its rows unpacked (a 512x256 @
    256x2048 reading `h.T` took 2x as long, the FAQ's `x.T @ (x - x.mean(0))` 9.0 -> 12.0 ms)."""
    dots = [_PLAIN_F32_MATMUL.match(d) for d in _CONTRACTION.findall(mlir)]
    if not dots or not all(dots):
        return False
    transposed = set(_TRANSPOSED.findall(mlir))  # (IREE folds a transpose into the matmul that reads it)
    return not any(d[1] in transposed or d[2] in transposed for d in dots)


# name -> whether a module's MLIR gets the part `tuning/<name>.mlir`, in the order the parts are tried. A module
# that gets `f32_matmul` is compiled without data tiling (`UNTILED`).
RULES: dict[str, Callable[[str], bool]] = {
    "rows": reads_rows_only,
    "f64_matmul": lambda mlir: _F64_DOT.search(mlir) is not None,
    "f32_matmul": plain_f32_matmuls,
}
UNTILED = "f32_matmul"


def parts_for(mlir: str) -> list[str]:
    """The parts of the CPU tuning spec that a module's MLIR gets."""
    return [name for name, rule in RULES.items() if rule(mlir)]


@functools.lru_cache(maxsize=16)
def spec_text(parts: tuple[str, ...]) -> str:
    """One tuning spec holding `parts`: their modules and a `__kernel_config` that applies each in turn."""
    lines = ["module attributes {transform.with_named_sequence} {"]
    for p in parts:
        with open(os.path.join(PARTS_DIR, p + ".mlir")) as f:
            lines.append(f.read())
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


def spec_path(parts: tuple[str, ...]) -> str:
    """The file holding the spec of `parts`, written once per process (named by its digest)."""
    text = spec_text(parts)
    with _lock:
        if not _folder:
            _folder.append(tempfile.mkdtemp(prefix="stagec-tuning-"))  # (mode 0700: no one else writes there)
            atexit.register(shutil.rmtree, _folder[0], True)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        path = os.path.join(_folder[0], f"cpu-{'+'.join(parts)}-{digest}.mlir")  # (`untiled` reads the parts)
        if not os.path.exists(path):
            with open(path + ".tmp", "w") as f:
                f.write(text)
            os.replace(path + ".tmp", path)
    return path


def spec_flags(mlir: str, data_tiling: bool = True) -> list[str]:
    """The tuning-spec flag for a CPU module ([] when no part applies). `UNTILED` takes the place of data tiling:
    a module compiled without data tiling anyway does not get it."""
    parts = tuple(p for p in parts_for(mlir) if data_tiling or p != UNTILED)
    return [FLAG + spec_path(parts)] if parts else []


def untiled(spec_flag: str) -> bool:
    """Whether a module compiled with this tuning-spec flag is compiled without data tiling (it has `UNTILED`)."""
    name = os.path.basename(spec_flag[len(FLAG):])
    return name.startswith("cpu-") and UNTILED in name.split("-")[1].split("+")
