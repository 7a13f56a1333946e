"""IREE tuning specs for the CPU: which parts of `stagec/tuning/` a module gets, joined into one spec file.

A tuning spec (`--iree-codegen-tuning-spec-path`) is a transform-dialect library that sets IREE's tile sizes for
the dispatches it matches. Each part is a module `@name` of named sequences with an `@entry`; a module gets the
parts whose rule holds for its IR (a rule reads the module's `Look`, one walk over its ops), and `spec_flags` writes the parts it
got as one spec (a `__kernel_config` that includes each part's `@entry` in turn) into a private folder, named by
its content: the compile cache key holds the file's digest (`backend.flag_files`).
"""
from __future__ import annotations

import atexit
import functools
import hashlib
import math
import os
import shutil
import tempfile
import threading
from typing import Callable, NamedTuple

from .lowering import context

PARTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tuning")
FLAG = "--iree-codegen-tuning-spec-path="

COLUMNS_MIN = 256  # the narrowest column reduction `tuning/columns.mlir` matches (its `%c256`)
SKINNY_ROWS, SKINNY_COLUMNS = 256, 1024  # the float32 A @ B that `tuning/skinny.mlir` matches (`%c256`, `%c1024`)
MATVEC_COLUMNS = 256  # the narrowest float32 x @ W (1 row) that `tuning/matvec.mlir` matches (its `%c256`)
_NARROW = ("f16", "bf16", "f64")  # element types that `rows` leaves alone where an op computes in them
_EDGES = frozenset({"stablehlo.convert", "stablehlo.constant", "func.func", "func.return"})  # (`widen-half`'s)
_PAR, _RED = "#linalg.iterator_type<parallel>", "#linalg.iterator_type<reduction>"
_A_AT_B = "#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>"  # A @ B, rank 2
_V_AT_B = "#stablehlo.dot<lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>"  # (rank-1 x) @ B
_READ_ROW_BY_ROW, _PER_COLUMN = "affine_map<(d0, d1) -> (d1, d0)>", "affine_map<(d0, d1) -> (d0)>"


class Look(NamedTuple):
    """What the tuning rules read of a module (one walk over its IR)."""
    reduces: tuple[tuple[tuple[int, ...], int, str, int], ...]  # per stablehlo.reduce: (dimensions, rank, element,
    # elements kept: its result's, an unknown dimension counted as `COLUMNS_MIN`)
    fused_reductions: int  # linalg.generics with a reduction loop (`fuse`'s)
    transposes: bool
    narrow: bool  # an op other than a convert or constant computes on a float16, bfloat16 or float64 tensor
    ordered: bool  # every broadcast_in_dim and affine map keeps dimensions in order (nothing read permuted)
    f64_dot: bool  # a dot_general with a static float64 result
    siblings: tuple[str, ...]  # `sibling_maps`
    skinny: bool = False  # a float32 A @ B (rank 2, static) of at most `SKINNY_ROWS` rows and `SKINNY_COLUMNS`+ columns
    packed: bool = True  # compiled with data tiling (packed matmuls): the driver's choice (`driver.module_flags`)
    matvec: bool = False  # a float32 x @ W (static; x one row, or rank 1) of `MATVEC_COLUMNS`+ columns


def _element(t) -> str | None:
    """A ranked tensor type's element type as text ('complex<f32>', 'f64', ...), else None."""
    from iree.compiler import ir
    return str(t.element_type) if isinstance(t, ir.RankedTensorType) else None


def look(module) -> Look:
    """The `Look` of `module` (an `ir.Module`, or its text)."""
    from iree.compiler import ir
    if isinstance(module, str):
        with context() as ctx:
            ctx.allow_unregistered_dialects = True
            return look(ir.Module.parse(module))
    reduces, siblings = [], []
    found = {"fused": 0, "transposes": False, "narrow": False, "ordered": True, "dot": False, "skinny": False,
             "matvec": False}

    def ordered(dims) -> bool:
        return list(dims) == sorted(dims)

    def visit(op):
        name, attrs = op.name, op.attributes
        types = [v.type for v in (*op.operands, *op.results)]
        if not found["narrow"] and name not in _EDGES and any(
                e is not None and (e in _NARROW or e in [f"complex<{n}>" for n in _NARROW])
                for e in map(_element, types)):
            found["narrow"] = True
        if name == "stablehlo.reduce":
            t, kept = op.operands[0].type, ir.RankedTensorType(op.results[0].type).shape
            reduces.append((tuple(ir.DenseI64ArrayAttr(attrs["dimensions"])), t.rank, _element(t),
                            math.prod(n if n >= 0 else COLUMNS_MIN for n in kept)))
        elif name == "stablehlo.transpose":
            found["transposes"] = True
        elif name == "stablehlo.broadcast_in_dim":
            found["ordered"] &= ordered(ir.DenseI64ArrayAttr(attrs["broadcast_dimensions"]))
        elif name == "stablehlo.dot_general":
            t = op.results[0].type
            found["dot"] |= _element(t) == "f64" and t.has_static_shape
            found["skinny"] |= (t.has_static_shape and t.rank == 2 and t.shape[0] <= SKINNY_ROWS
                                and t.shape[1] >= SKINNY_COLUMNS and str(attrs["dot_dimension_numbers"]) == _A_AT_B
                                and all(_element(v.type) == "f32" for v in (*op.operands, *op.results)))
            found["matvec"] |= _matvec(op, t, str(attrs["dot_dimension_numbers"]))
        elif name == "linalg.generic":
            maps = [ir.AffineMapAttr(m) for m in ir.ArrayAttr(attrs["indexing_maps"])]
            loops = [str(i) for i in ir.ArrayAttr(attrs["iterator_types"])]
            found["fused"] += _RED in loops
            for m in maps:
                found["ordered"] &= ordered([ir.AffineDimExpr(e).position for e in m.value.results
                                             if isinstance(e, ir.AffineDimExpr)])
            texts = [str(m) for m in maps]
            if (loops == [_PAR, _RED] and texts.count(_PER_COLUMN) >= 2
                    and set(texts) <= {_READ_ROW_BY_ROW, _PER_COLUMN}):
                text = "[" + ", ".join(texts) + "]"
                if text not in siblings:
                    siblings.append(text)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    return Look(tuple(reduces), found["fused"], found["transposes"], found["narrow"], found["ordered"], found["dot"],
                tuple(siblings), found["skinny"], matvec=found["matvec"])


def _matvec(op, t, dims: str) -> bool:
    """Whether a dot_general `op` (result type `t`, dimension numbers `dims`) is a static float32 x @ W of
    `MATVEC_COLUMNS`+ columns, x a row (1 x K) or a vector (K)."""
    from iree.compiler import ir
    x = ir.RankedTensorType(op.operands[0].type)
    row = (dims == _A_AT_B and x.rank == 2 and x.shape[0] == 1) or (dims == _V_AT_B and x.rank == 1)
    return (row and ir.RankedTensorType(op.operands[1].type).rank == 2 and t.rank >= 1  # (v @ v: a 0-d result)
            and t.has_static_shape and x.has_static_shape and t.shape[-1] >= MATVEC_COLUMNS
            and all(_element(v.type) == "f32" for v in (*op.operands, *op.results)))


def _look(module) -> Look:
    return module if isinstance(module, Look) else look(module)


def reads_rows_only(module) -> bool:
    """Whether a float32 module has two or more reductions, each StableHLO one over its operand's last dimensions,
    and reads no array out of order (no transpose, no broadcast or fused map that permutes dimensions): the `rows`
    part's tiles run along rows, and made a dispatch reading down columns several times slower (docs/passes.md).
    A module computing in float16, bfloat16 or float64 (not only converting at its edges) does not get them."""
    lk = _look(module)
    if len(lk.reduces) + lk.fused_reductions < 2 or lk.transposes or lk.narrow or not lk.ordered:
        return False
    return all(e is not None and not e.startswith("complex") and list(dims) == list(range(rank - len(dims), rank))
               for dims, rank, e, _ in lk.reduces)


def reduces_columns(module) -> bool:
    """Whether a module sums a float32 array of rank 2 or more over leading dimensions only (a column sum) into at
    least `COLUMNS_MIN` elements: the columns part tiles such a dispatch 64 columns wide (IREE: 16). It matches no
    narrower one, and a module with a tuning spec compiles on one thread (`driver.iree_args`)."""
    return any(e == "f32" and rank >= 2 and rank - 1 not in dims and kept >= COLUMNS_MIN
               for dims, rank, e, kept in _look(module).reduces)


def sibling_maps(module) -> tuple[str, ...]:
    """The indexing maps (as one attribute's text each) of the module's generics that reduce rank-2 arrays down
    their columns into several results (stagec's `fuse`: sibling reductions and the values kept beside them),
    every array read row by row: the `columns` part tiles them too, as it tiles one reduction."""
    return _look(module).siblings


# name -> whether a module (its `Look`) gets the part `tuning/<name>.mlir`, in the order the parts are tried.
RULES: dict[str, Callable[[Look], bool]] = {
    "rows": reads_rows_only,
    "f64_matmul": lambda lk: lk.f64_dot,
    "skinny": lambda lk: lk.skinny and not lk.packed,  # (IREE's packed matmul did not compile with its tiles)
    "matvec": lambda lk: lk.matvec and not lk.packed,  # (packed, x @ W is no such generic)
    "columns": lambda lk: reduces_columns(lk) or bool(lk.siblings),
}
# The line of the `columns` part after which `spec_text` matches the module's `sibling_maps`, and its merge.
_SIBLINGS_AT, _MERGE = "    // (stagec.tuning: the module's sibling reductions)\n", "%cols = transform.merge_handles %a, %b, %c"
# The `columns` part's tiles (128 columns a workgroup), and those of a module whose dispatches run on the calling
# thread (`spec_flags(..., one_thread=True)`): all columns in one workgroup, one row at a time, so that the
# dispatch streams through its arrays row after row (128 columns read 512 bytes of each row 8 KiB apart, which the
# caches' prefetchers do not follow; docs/passes.md, "Sibling reductions", has the measurements).
_TILES = "distribution = [128, 0], vector_common_parallel"
_WHOLE_ROWS = "distribution = [65536, 0], cache_reduction = [0, 1], vector_common_parallel"
# A module run on one thread also has its column sums tiled where the dispatch computes the summed array as a
# result of its own (a 2-D elementwise generic: the first layer's gradient `g * (1 - h^2)`, which the next matmul
# reads and the bias gradient sums), that generic 64 columns a step (IREE: 32 columns a workgroup, slower).
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


def parts_for(module) -> list[str]:
    """The parts of the CPU tuning spec that a module (an `ir.Module`, its text or its `Look`) gets."""
    lk = _look(module)
    return [name for name, rule in RULES.items() if rule(lk)]


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
# process id -> its private folder of written specs, made on first use (a forked child makes its own: the parent's
# goes when the parent ends)
_folder: dict[int, str] = {}


def _sweep() -> None:
    """Remove the spec folders of this user's ended processes: one killed (or ended by `os._exit`, as a pool's
    worker may be) never ran its `atexit`, and its folder stayed in the temporary folder. POSIX only (elsewhere
    `os.kill` would end the process it asks about)."""
    if os.name != "posix":
        return
    tmp = tempfile.gettempdir()
    try:
        names = os.listdir(tmp)
    except OSError:
        return
    for name in names:
        pid = name[len("stagec-tuning-"):].split("-")[0]
        if not (name.startswith("stagec-tuning-") and pid.isdigit()) or int(pid) == os.getpid():
            continue
        path = os.path.join(tmp, name)
        try:
            if os.stat(path).st_uid != os.getuid():
                continue
            os.kill(int(pid), 0)  # (alive, whoever it is now: left alone)
        except ProcessLookupError:
            shutil.rmtree(path, True)
        except OSError:  # (another user's process: alive)
            pass


def spec_path(parts: tuple[str, ...], siblings: tuple[str, ...] = (), one_thread: bool = False) -> str:
    """The file holding the spec of `parts` (`siblings`, `one_thread`), written once per process (named by its
    digest)."""
    text = spec_text(parts, siblings, one_thread)
    with _lock:
        folder = _folder.get(pid := os.getpid())
        if folder is None:
            _sweep()
            folder = _folder[pid] = tempfile.mkdtemp(prefix=f"stagec-tuning-{pid}-")  # (0700: no one else writes)
            atexit.register(shutil.rmtree, folder, True)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        path = os.path.join(folder, f"cpu-{'+'.join(parts)}-{digest}.mlir")
        if not os.path.exists(path):
            with open(path + ".tmp", "w") as f:
                f.write(text)
            os.replace(path + ".tmp", path)
    return path


def spec_flags(module, one_thread: bool = False) -> list[str]:
    """The tuning-spec flag for a CPU module (an `ir.Module`, its text or its `Look`; [] when no part applies);
    `one_thread`: its dispatches run on the calling thread (a module calling BLAS between them)."""
    lk = _look(module)
    parts = tuple(parts_for(lk))
    if not parts:
        return []
    columns = "columns" in parts
    return [FLAG + spec_path(parts, lk.siblings if columns else (), one_thread and columns)]
