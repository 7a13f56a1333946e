"""What a pass is: a name, a one-line description, a `run` that rewrites a module in place, and
the statistics every run records (ops before/after, rewrites applied by pattern, seconds)."""
from __future__ import annotations

import collections
import dataclasses
from typing import Callable

from iree.compiler import ir, passmanager, rewrite

from stagec.errors import StagecError

from .irutil import count_ops


class PassError(StagecError):
    """A pass raised, or left IR that fails `verify()`; the message names the pass and the IR file."""


@dataclasses.dataclass
class PassStats:
    """What one pass did to one module."""
    name: str
    backend: str = "cpu"  # the stagec backend the module is for (shown; no pass reads it: a target's pipeline chooses)
    ops_before: int = 0
    ops_after: int = 0
    seconds: float = 0.0
    rewrites: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    def line(self) -> str:
        rw = ", ".join(f"{k}={v}" for k, v in sorted(self.rewrites.items())) or "-"
        return (f"{self.name:<18} ops {self.ops_before:>4} -> {self.ops_after:<4} "
                f"{self.seconds * 1e3:7.2f} ms  rewrites: {rw}")


@dataclasses.dataclass(frozen=True)
class Workaround:
    """Why a pass exists where IREE falls short: the IREE version it answers, the test that shows it (a pytest node
    id), and the upstream issue where one exists. A new IREE means checking each against that test."""
    iree: str
    test: str
    issue: str | None = None


class Pass:
    """Base class: subclasses set `name`, `description` and implement `apply`.

    `kind` says what the pass is for: "optimization", "workaround" (`workaround` says of what), "expansion" (an op
    IREE lacks, as arithmetic), "legalize" (the module would not compile or run right without it) or "offload"
    (ops that call NumPy on the host)."""
    name: str = ""
    description: str = ""
    kind: str = "optimization"
    workaround: Workaround | None = None

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        raise NotImplementedError

    def run(self, module: ir.Module, stats: PassStats) -> None:
        """Run `apply` as a Python pass through an MLIR PassManager (`run_pipeline` verifies the IR after it)."""
        failure: list[BaseException] = []

        def body(op, pass_):
            try:
                self.apply(module, stats)
            except BaseException as e:  # re-raised below, with its traceback
                failure.append(e)
                pass_.signal_pass_failure()
        with module.context:
            pm = passmanager.PassManager("builtin.module")
            pm.enable_verifier(False)
            pm.add(body, name=self.name, description=self.description)
            try:
                pm.run(module.operation)
            except ir.MLIRError:
                if not failure:
                    raise
        if failure:
            raise failure[0]

    def __repr__(self):
        return f"<stagec pass {self.name}: {self.description}>"


class UpstreamPass(Pass):
    """An upstream MLIR pass given by its textual pipeline, e.g. `cse`."""

    def __init__(self, name: str, pipeline: str, description: str):
        self.name, self.pipeline, self.description = name, pipeline, description

    def run(self, module: ir.Module, stats: PassStats) -> None:
        with module.context:
            pm = passmanager.PassManager.parse(f"builtin.module({self.pipeline})")
            pm.enable_verifier(False)
            pm.run(module.operation)
        stats.rewrites[self.name] += max(0, stats.ops_before - count_ops(module))


Pattern = Callable[[ir.Operation, rewrite.PatternRewriter], bool]


class PatternPass(Pass):
    """A pass made of Python rewrite patterns, applied greedily to a fixed point.

    Subclasses list `patterns`: (root op name, pattern name, fn). `fn(op, rewriter)` returns True
    when it rewrote `op` (the bindings' convention is the opposite; `apply` adapts and counts). A `fn.guard(op)`, where
    set, is asked first, outside the op's location and the rewriter's insertion point: False says `fn` would not
    rewrite `op` (entering those two was most of a declined call's cost).
    """
    patterns: list[tuple[str, str, Pattern]] = []

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        ps = rewrite.RewritePatternSet()
        for root, pname, fn in self.patterns:
            ps.add(root, self._counted(pname, fn, stats))
        rewrite.apply_patterns_and_fold_greedily(module, ps.freeze())

    @staticmethod
    def _counted(pname: str, fn: Pattern, stats: PassStats):
        guard = getattr(fn, "guard", None)

        def pattern(op, rewriter):
            if guard is not None and not guard(op):
                return True
            with op.location, rewriter.ip:
                done = fn(op, rewriter)
            if done:
                stats.rewrites[pname] += 1
            return not done
        return pattern


REGISTRY: dict[str, Pass] = {}


def register(p: Pass) -> Pass:
    """Make `p` selectable by name in pipelines."""
    if not p.name or not p.description:
        raise ValueError(f"pass {p!r} needs a name and a one-line description")
    REGISTRY[p.name] = p
    return p
