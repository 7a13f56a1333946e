"""Choosing and running a pipeline: names -> passes, stats, verification and failure reports."""
from __future__ import annotations

import os
import tempfile
import time
from typing import Callable

from iree.compiler import ir

from .base import REGISTRY, PassError, PassStats
from .irutil import count_ops
from stagec.lowering import context

# The CPU target's optimization passes (`stagec.compiler.targets`, where each target declares its pipeline; a test
# holds the two equal): what "default" names where no target is given.
DEFAULT_PIPELINE: tuple[str, ...] = ("widen-half", "fold-constants", "simplify", "updates-as-concats",
                                     "pad-sums-as-concats", "lanes-batched", "fold-movement", "cse", "dce",
                                     "abs-squares", "compare-clamped", "merge-contracted-dims", "isolate-updates",
                                     "recompute-activations", "isolate-batch-sums", "column-products", "split-sums",
                                     "upcast-half-dots", "isolate-outer", "one-weight-pass", "weight-left",
                                     "patches-as-one-copy", "fuse-int-chains", "fuse", "sliced-dots-apart",
                                     "loop-weights-transposed")


class Stage:
    """One pass's result: its name, the module text after it (printed when first read, from a copy of the module
    taken after the pass: a clone shares its constants), and what it did."""
    __slots__ = ("name", "stats", "_copy", "_text")

    def __init__(self, name: str, copy: ir.Operation, stats: PassStats):
        self.name, self.stats, self._copy, self._text = name, stats, copy, None

    @property
    def text(self) -> str:
        copy = self._copy
        if copy is not None:  # (two threads may both print it: the same text; _text is set before _copy is cleared)
            self._text, self._copy = copy.get_asm(large_elements_limit=ELIDE_ELEMENTS), None
        return self._text

    def __repr__(self):
        return f"Stage({self.name!r}, {self.stats!r})"


PassesSpec = "str | Sequence[str] | None"


def resolve(passes=None, default: tuple[str, ...] = DEFAULT_PIPELINE) -> tuple[str, ...]:
    """Pass names for a spec: None (the global `stagec.config.passes`), "default" (`default`: a target's
    passes), "none" / () / False, a comma-separated string or a sequence of names. Unknown names raise
    ValueError."""
    if passes is None:
        from stagec.config import config
        passes = getattr(config, "passes", "default")
        if passes is None:
            passes = "default"
    if passes is False or passes == "none" or passes == "":
        return ()
    if passes is True or passes == "default":
        return tuple(default)
    names = tuple(n.strip() for n in passes.split(",") if n.strip()) if isinstance(passes, str) else tuple(passes)
    names = tuple(n for part in names for n in (default if part == "default" else (part,)))
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown stagec pass(es) {unknown}; available: {sorted(REGISTRY)} "
                         f"(or 'default' = {list(default)}, or 'none')")
    return names


def describe() -> str:
    """One line per registered pass: name, kind and description, the CPU's default ones marked with *."""
    return "\n".join(f"{'*' if n in DEFAULT_PIPELINE else ' '} {n:<24} {p.kind:<12} {p.description}"
                     for n, p in sorted(REGISTRY.items()))


ELIDE_ELEMENTS = 1024  # a pass's stage text elides constants larger than this


def run_pipeline(module: ir.Module, passes=None, fun_name: str = "module",
                 after: Callable[[Stage, ir.Module], None] | None = None, backend: str = "cpu") -> list[Stage]:
    """Run the passes named by `passes` (see `resolve`) over `module` (for `backend`) in place;
    `after(stage, module)`, if given, sees the module as each pass left it. (A target's whole pipeline, its
    legalization included, is `stagec.compiler.targets.pipeline`'s list.)

    A pass that raises or leaves IR failing `verify()` raises `PassError` naming the pass (the first to leave invalid
    IR, where one that reported no change did), with the IR before it written to `$STAGEC_DUMP_DIR` (or a temporary
    folder). Each stage's text elides constants over `ELIDE_ELEMENTS` elements (printing them costs ~50 ms per MB
    per stage); the module itself keeps them.
    """
    stages, names = [], resolve(passes)
    before, ops = module.operation.clone(), count_ops(module)
    # The module is verified after each pass that reports a change (rewrites or a new op count) and once at the end;
    # verifying after every pass was 15-20% of a pipeline's time, and most passes change nothing in most modules.
    # `unchanged`: (name, IR before it) of the passes since the last verification, for naming the one at fault.
    unchanged: list[tuple[str, ir.Operation]] = []
    for name in names:
        p = REGISTRY[name]
        stats = PassStats(name, backend, ops_before=ops)
        t0 = time.perf_counter()
        try:
            p.run(module, stats)
            ops_after = count_ops(module)
            changed = any(stats.rewrites.values()) or ops_after != ops
            if changed:
                module.operation.verify()
        except Exception as e:
            if isinstance(e, NotImplementedError) and str(e):  # (a pass's own: what the target cannot do, named)
                raise NotImplementedError(f"function {fun_name!r}: {e}") from None
            raise _failure(*(_first_invalid(unchanged, before) or (name, before)), fun_name, e) from e
        stats.seconds = time.perf_counter() - t0
        stats.ops_after = ops = ops_after
        unchanged = [] if changed else [*unchanged, (name, before)]
        before = module.operation.clone()
        seen = sum(st.stats.name == name for st in stages)
        stages.append(Stage(name if not seen else f"{name}#{seen + 1}", before, stats))
        if after is not None:
            after(stages[-1], module)
    if unchanged:
        try:
            module.operation.verify()
        except ir.MLIRError as e:  # a pass that reported no change changed the IR: the first that left it invalid
            raise _failure(*(_first_invalid(unchanged, module.operation) or unchanged[-1]), fun_name, e) from e
    return stages


def _first_invalid(passes: list[tuple[str, ir.Operation]], last: ir.Operation) -> tuple[str, ir.Operation] | None:
    """The first of `passes` ((name, IR before it), in order; `last` the IR after the last) whose output fails
    verification, as (name, IR before it), or None."""
    outs = [b for _, b in passes[1:]] + [last]
    return next(((n, b) for (n, b), out in zip(passes, outs) if not _valid(out)), None)


def _valid(op: ir.Operation) -> bool:
    try:
        op.verify()
        return True
    except ir.MLIRError:
        return False


def _failure(name: str, before: ir.Operation, fun_name: str, e: Exception) -> PassError:
    path = _save_before(str(before), fun_name, name)
    return PassError(f"stagec pass {name!r} failed on function {fun_name!r}: {type(e).__name__}: "
                     f"{_message(e)[:1500]}\nThe IR before the pass is in {path}; run without it with "
                     f"passes=[...] or stagec.config.update('passes', ...)")


def on_text(mlir: str, rewrite: Callable[[ir.Module], object]) -> str | None:
    """`mlir` (text) through `rewrite(module)` (a pass's function), or None where it reports no change: a rewrite's
    text form, for tests and tools reading a stage's text."""
    with context():
        module = ir.Module.parse(mlir)
        return str(module) if rewrite(module) else None


def _message(e: Exception) -> str:
    """The exception's text, with MLIR's diagnostics (which `str(MLIRError)` leaves out) spelled out."""
    diags = getattr(e, "error_diagnostics", None) or []
    lines = [str(e).splitlines()[0] if str(e) else ""]
    for d in diags:
        lines.append(f"{d.location}: {d.message}")
        lines += [f"  note: {n.message}" for n in d.notes]
    return "\n".join(lines)


def _save_before(text: str, fun_name: str, pass_name: str) -> str:
    d = os.environ.get("STAGEC_DUMP_DIR") or tempfile.mkdtemp(prefix="stagec-pass-failed-")
    os.makedirs(d, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in f"{fun_name}.before-{pass_name}")
    path = os.path.join(d, safe + ".mlir")
    with open(path, "w") as f:
        f.write(text)
    return path
