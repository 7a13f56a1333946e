"""Stages of a jitted function, as in JAX: `Lowered` (the module at each stage, as text) and `Compiled`
(the IREE module, callable), over the compile step `compile_cached` (persistent cache lookup, else
IREE, then store).

Stages of a `Lowered`, in order:
- "traced": the StableHLO the graph lowers to, before any pass;
- each pass of the pipeline by name ("simplify", a second run "simplify#2", ...);
- "stablehlo" (the default of `as_text`): the last stage that is pure StableHLO: every op in the
  `stablehlo`, `chlo` or `func` dialect, text that any StableHLO consumer (IREE, XLA, stablehlo
  tooling) reads. It follows the passes that keep to StableHLO, before the first one that leaves it
  (`fuse` emits `linalg`, `tensor`, `arith`, `math`);
- the target's legalization and offload passes ("bound-bindings", "isolate-reductions", "blas-dots", ...);
- "final" (alias "iree-input"): exactly what IREE compiles (and the cache keys); it may mix dialects. Where IREE
  fails on it with a known error, it compiles a declared variant (`stagec.compiler.retries`), which the cache keys
  apart and `Compiled.variant` names.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any, Callable, Sequence, TypeVar

from . import aot, cache
from .runner import Runner
from .backend import Backend, get_backend
from .compiler import HOST_BLAS, Facts, find_target, pipeline, prepare, variant_flags
from .config import config
from .core import Graph
from .lowering import HOST_ABI, NAMED, lower_graph, named_calls

STABLEHLO_DIALECTS = frozenset({"stablehlo", "chlo", "func"})
ALIASES = {"iree-input": "final"}
stats = {"iree_compiles": 0, "compile_seconds": 0.0}
log = logging.getLogger("stagec")
_miss_explainer: Callable[[str, str, dict, str], str] | None = None


T = TypeVar("T")
_building: dict[Any, threading.Lock] = {}
_building_lock = threading.Lock()


def _after_fork_in_child() -> None:  # (a lock another thread held at the fork would never be released)
    global _building_lock
    _building.clear()
    _building_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def build_once(key: Any, lookup: Callable[[], T | None], build: Callable[[], T]) -> T:
    """`lookup()`, else `build()`, with one builder per `key` at a time: threads asking for a key being built
    wait for it and then find it (8 threads calling one new signature compile it once)."""
    with _building_lock:
        lock = _building.setdefault(key, threading.Lock())
    try:
        with lock:
            found = lookup()
            return found if found is not None else build()
    finally:
        with _building_lock:
            if _building.get(key) is lock:
                del _building[key]


def set_miss_explainer(fn: Callable[[str, str, dict, str], str] | None) -> None:
    """Register `fn(name, key, key_components, mlir) -> words` for persistent-cache misses, logged when
    `config.explain_cache_misses` is set. `stagec.explain` registers itself; stages never imports it."""
    global _miss_explainer
    _miss_explainer = fn


def compile_cached(backend: Backend, mlir: str | Callable[[], str], name: str, flags: Sequence[str], in_avals,
                   out_avals, in_tree=None, out_tree=None, donated: Sequence[int] = (),
                   side_flags: Sequence[str] = (), host_calls: Sequence = (),
                   recipe: dict | None = None, facts: Facts | None = None) -> tuple[aot.Artifact, float]:
    """(artifact, seconds): the module for `mlir` from the persistent cache, else compiled by IREE (and stored).

    `mlir` is what IREE receives when `facts` (its `stagec.compiler.Facts`) are given: `Lowered` ran the target's
    whole pipeline. Else it is a lowered module that the target's pipeline without optimizations (expansions,
    legalization and, with `HOST_BLAS` in `flags`, offloads) takes to that text here. The key is of that final
    text and of the flags the module's facts choose. `side_flags` do not change the module (e.g. dumping
    dispatch sources): not part of the key, but given, they make IREE run (no lookup) so that their side effect
    happens. `recipe` (JSON-able) is what `mlir` is built from, complete (an eager kernel's primitive, params,
    avals and stagec's source): given, it keys the entry in place of the MLIR, and `mlir` (then a callable) is
    built only on a miss, so a hit needs no MLIR and no `iree.compiler`."""
    t0 = time.perf_counter()

    def final(text):  # (final text, facts, flags the module is compiled with)
        text = text() if callable(text) else text
        fx = facts
        if fx is None:
            text, fx = prepare(text, backend.name, (), HOST_BLAS in flags, name)
        return text, fx, backend.module_flags(text, flags, fx)

    if recipe is None:
        mlir, facts, flags = final(mlir)
        comps = cache.key_components(mlir, backend.target, flags)
    else:  # (a recipe names the dtypes: the flags the module's facts add follow from it)
        comps = cache.key_components(None, backend.target, flags, recipe)
    key = cache.make_key(comps)
    use = cache.enabled()
    if use and not side_flags:
        found = _lookup(key, comps, flags, in_avals, out_avals, in_tree, out_tree, donated, host_calls)
        if found is not None:
            if recipe is None and "work" not in found.meta:  # (an entry stored before the field existed)
                found.macs, found.work = facts.macs, facts.work
            return found, time.perf_counter() - t0
    if recipe is not None:
        mlir, facts, flags = final(mlir)
    why = (_miss_explainer(name, key, comps, mlir)
           if _miss_explainer is not None and use and not side_flags and config.explain_cache_misses else None)
    variant: list = []
    vmfb = backend.compile(mlir, name, flags, side_flags, variant)
    seconds = time.perf_counter() - t0
    stats["iree_compiles"] += 1
    stats["compile_seconds"] += seconds
    if why:
        log.warning(f"{why} [IREE compile: {seconds:.3f} s]")
    asked, asked_comps = key, comps
    if variant:  # (IREE compiled a variant: keyed by what it was given, the request pointing to it)
        flags = variant_flags(flags, variant)
        comps = cache.variant_components(comps, flags, variant)
        key = cache.make_key(comps)
    meta = aot.make_meta(name, backend.target, flags, in_avals, out_avals, in_tree, out_tree, seconds,
                         key=key, key_components=comps, macs=facts.macs,
                         work=facts.work)
    if facts.host_calls:
        meta["host_modules"], meta["host_abi"] = list(facts.host_calls), HOST_ABI
    if variant:
        meta["variant"] = variant
    if use:
        cache.store(key, vmfb, meta, mlir)
        if variant:
            cache.store_variant_pointer(asked, name, asked_comps, variant)
    return aot.Artifact(vmfb, meta, in_tree, out_tree, donated, host_calls), seconds


def find_cached(backend: Backend, flags: Sequence[str], recipe: dict, in_avals, out_avals) -> aot.Artifact | None:
    """The module `compile_cached` stored for `recipe` (with these flags), or None: nothing is built or compiled."""
    if not cache.enabled():
        return None
    comps = cache.key_components(None, backend.target, flags, recipe)
    return _lookup(cache.make_key(comps), comps, flags, in_avals, out_avals)


def _lookup(key: str, comps: dict, flags: Sequence[str], in_avals, out_avals, in_tree=None, out_tree=None,
            donated=(), host_calls=()):
    """The artifact stored under `key` (a request's, of components `comps` and `flags`), or under its variant's key
    where the request compiled as a variant (`cache.store_variant_pointer`), or None."""
    def follow(variant: list) -> str | None:
        try:
            return cache.make_key(cache.variant_components(comps, variant_flags(flags, variant), variant))
        except KeyError:  # (a retry no longer declared: compiled again)
            return None
    found = cache.lookup(key, follow)
    if found is None:
        return None
    vmfb, meta = found
    # The avals of this trace (weak types are not part of the MLIR, so not of the key).
    meta = dict(meta, in_avals=[aot.aval_to_json(a) for a in in_avals],
                out_avals=[aot.aval_to_json(a) for a in out_avals])
    return aot.Artifact(vmfb, meta, in_tree, out_tree, donated, host_calls)


def foreign_op(module) -> str | None:
    """The first op outside the StableHLO dialects (`STABLEHLO_DIALECTS`), or a function's attribute of another
    dialect (IREE's `stream.affinity`; a named call's mark, `NAMED`, is stagec's own), or None if the module is
    pure."""
    from iree.compiler import ir
    found = []

    def visit(op):
        name = op.name
        if name != "builtin.module" and name.partition(".")[0] not in STABLEHLO_DIALECTS:
            found.append(name)
            return ir.WalkResult.INTERRUPT
        if name == "func.func" and (attr := next((a for a in op.attributes if "." in a and a != NAMED), None)):
            found.append(f"{attr} (an attribute of func.func)")
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    return found[0] if found else None


class _PurePrefix:
    """Follows a pipeline while the module stays pure StableHLO: the last such stage, and a copy of the module
    as it was then (a clone shares its constants, so it is cheap)."""

    def __init__(self, module):
        self.foreign = foreign_op(module)
        self.last = "traced" if self.foreign is None else None
        self._open = self.foreign is None
        self._copy = None

    def after(self, stage, module) -> None:
        if not self._open:
            return
        from .passes import REGISTRY  # (already imported: the passes run)
        if foreign_op(module) is not None or getattr(REGISTRY.get(stage.stats.name), "kind", "") == "expansion":
            self._open = False
            return
        if self._copy is not None:
            self._copy.erase()
        self.last, self._copy = stage.name, module.operation.clone()

    def text(self) -> "_Later | None":
        """The complete text of the last pure stage after "traced" (None if that is "traced"), printed when read."""
        copy, self._copy = self._copy, None
        return None if copy is None else _Later(copy)


class _Later:
    """A module's complete text, printed when first read from a copy taken at the time (clones share constants)."""
    __slots__ = ("_copy", "_text")

    def __init__(self, copy):
        self._copy, self._text = copy, None

    @property
    def text(self) -> str:
        copy = self._copy
        if copy is not None:  # (two threads may both print it: the same text; _text is set before _copy is cleared)
            self._text, self._copy = str(copy), None
        return self._text


class Lowered:
    """A traced and lowered function: `.as_text(stage)` shows a stage, `.compile()` builds it."""

    def __init__(self, graph: Graph, name: str, in_tree, out_tree, donated: tuple[int, ...] = (),
                 passes=None, backend: Backend | None = None, host_blas: bool | None = None):
        self.graph, self.name, self.in_tree, self.out_tree = graph, name, in_tree, out_tree
        self.donated, self.passes = donated, passes
        self.backend = backend or get_backend()
        # whether the target's offloads (calls of NumPy's BLAS and sort) run: a compile parameter, by default
        # `config.cpu_blas` as it is when lowered
        self.host_blas = self.backend.host_blas(host_blas)
        self._facts: Facts | None = None
        self._texts: dict[str, str] | None = None
        self.host_calls: list = []  # lowering.HostCall per callback in the graph, filled when lowered
        self._pass_stats: list = []
        self._not_stablehlo: str | None = None  # the traced module's first non-StableHLO op, if any

    def _run(self) -> dict[str, str]:
        """Lower and run the passes once, keeping each stage's text."""
        if self._texts is None:
            from .compiler import facts
            from .passes import run_pipeline  # imports iree.compiler: only once something is lowered
            module = lower_graph(self.graph, self.name, self.host_calls)
            traced = _Later(module.operation.clone())
            prefix = _PurePrefix(module)
            names = pipeline(self.backend.name, self.passes, self.host_blas, named_calls(module))
            stages = run_pipeline(module, names, self.name, prefix.after, self.backend.name)
            texts = {}  # stage name -> its text, or what prints it when first read (most stages are never read)
            for name, text in [("traced", traced), *((s.name, s) for s in stages)]:
                texts[name] = text
                if name == prefix.last:
                    texts["stablehlo"] = prefix.text() or traced
            texts["final"] = str(module)
            self._facts = facts(module)
            self._pass_stats = [s.stats for s in stages]
            self._not_stablehlo = prefix.foreign
            self._texts = texts
        return self._texts

    def _text(self, name: str) -> str | None:
        text = self._run().get(name)
        if text is not None and not isinstance(text, str):
            text = self._texts[name] = text.text
        return text

    def __getstate__(self) -> dict:
        """Pickled as its stages' texts (lowered and run through the passes here first), not its graph: an
        unpickled `Lowered` shows its stages and compiles for its own backend without tracing again."""
        state = dict(self.__dict__, backend=self.backend.name, _texts=self.stages())
        state["graph"] = _Unpickled(self.graph.in_avals, self.graph.out_avals)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, backend=get_backend(state["backend"]))

    def _graph(self, what: str) -> Graph:
        if not isinstance(self.graph, Graph):
            raise NotImplementedError(f"{self.name} was unpickled: it keeps its stages' texts, not its graph, so "
                                      f"{what} needs the function lowered again in this process (jit(f).lower(...))")
        return self.graph

    def stages(self) -> dict[str, str]:
        """Every stage's text by name, in order: "traced", each pass of the target's pipeline, "stablehlo" where the
        module stops being pure StableHLO, "final". Pass stages elide constants over 1024 elements; the others are complete."""
        return {name: self._text(name) for name in self._run()}

    @property
    def facts(self) -> Facts:
        """What the final module is (`stagec.compiler.Facts`), read from its IR."""
        self._run()
        return self._facts

    @property
    def pass_stats(self) -> list:
        """One `stagec.passes.PassStats` per pass run (lowering and running the passes if not done yet)."""
        self._run()
        return list(self._pass_stats)

    def as_text(self, stage: str = "stablehlo") -> str:
        """The module at `stage` (see `stages()`): by default the StableHLO after stagec's StableHLO passes;
        "final" or "iree-input" for what IREE receives."""
        texts = self._run()
        text = self._text(ALIASES.get(stage, stage))
        if text is None:
            if stage == "stablehlo":
                raise ValueError(f"{self.name} has no pure StableHLO stage: its traced module already holds "
                                 f"{self._not_stablehlo} (a lowering rule emits another dialect)")
            aliases = ", ".join(f"{a} (= {b})" for a, b in ALIASES.items())
            raise ValueError(f"unknown stage {stage!r}; stages of {self.name}: {', '.join(texts)}, {aliases}")
        return text

    def html(self, path, *, title: str | None = None) -> str:
        """Write one self-contained HTML page showing every stage (with the diff each pass made, its statistics,
        the dataflow graph and the source line of each op) and IREE's dispatch sources; returns the path."""
        import glob
        import os
        import tempfile

        from . import explorer
        t0 = time.perf_counter()
        stages = self.stages()
        lowered_s = time.perf_counter() - t0
        located = lower_graph(self._graph("an explorer page"), self.name, []).operation.get_asm(enable_debug_info=True)
        with tempfile.TemporaryDirectory(prefix="stagec-html-") as d:
            t1 = time.perf_counter()
            flags = self.backend.module_flags(stages["final"], self.backend.flags(host_blas=self.host_blas),
                                              self.facts)
            variant: list = []
            self.backend.compile(stages["final"], self.name, flags, [f"--iree-hal-dump-executable-sources-to={d}"],
                                 variant)
            compile_s = time.perf_counter() - t1
            dispatches = []
            for f in sorted(glob.glob(os.path.join(d, "*.mlir"))):
                with open(f) as fh:
                    dispatches.append((os.path.basename(f)[:-5], fh.read()))
        sig = ", ".join(a.str_short() for a in self.graph.in_avals)
        return explorer.write(path, title or f"{self.name}({sig})", [("traced", located), *(
            (n, t) for n, t in stages.items() if n != "traced")], pass_stats=self.pass_stats,
            timings={"lower + passes": lowered_s, "IREE compile": compile_s},
            info={"backend": self.backend.name, "target": self.backend.target,
                  **({"compiled as": " ".join(variant)} if variant else {})}, dispatches=dispatches)

    def __str__(self):
        return self.as_text()

    def __repr__(self):
        return self.as_text()

    def compile(self, target: str | None = None, *, arch: str | None = None, flags: Sequence[str] = (),
                host_blas: bool | None = None) -> Compiled:
        """Compile through the persistent cache: for the jit's backend, or ahead of time for `target`
        ("llvm-cpu", "vulkan-spirv", "cuda") and `arch` ("sm_80", a CPU name), runnable here or not. `host_blas`
        chooses whether large matmuls and long sorts call NumPy on the host (a module that does runs only in
        stagec: `Compiled.save` refuses it unless asked). Default: as lowered (`config.cpu_blas`) for the jit's
        own compile; off ahead of time (a `target` named), as `stagec compile` does without `--host-blas`."""
        from .passes.dump import dispatch_flags, dump_lowered, write_index
        backend = get_backend(find_target(target or self.backend.name).backend)
        if host_blas is None:
            host_blas = self.host_blas if target is None else False
        host_blas = backend.host_blas(host_blas)
        all_flags = backend.flags(arch, host_blas) + list(flags)
        graph = self.graph
        # (the pipeline is the target's, and the offloads a compile parameter: another one is lowered again)
        src = self if backend is self.backend and host_blas == self.host_blas else Lowered(
            self._graph(f"a compile for {backend.name} with host_blas={host_blas}"), self.name, self.in_tree,
            self.out_tree, self.donated, self.passes, backend, host_blas)
        art, seconds = compile_cached(backend, src.as_text("final"), self.name, all_flags, graph.in_avals,
                                      graph.out_avals, self.in_tree, self.out_tree, self.donated,
                                      side_flags=dispatch_flags(folder := dump_lowered(src)),
                                      host_calls=src.host_calls, facts=src.facts)
        if folder is not None:
            write_index(folder, src, seconds)
        # Load now when it runs here as the jit would; cross-compiled modules load on first call.
        here = backend is self.backend and arch is None and not flags
        return Compiled(art, seconds, art.runner() if here else None)


class _Unpickled:
    """What an unpickled `Lowered` keeps of its graph: the avals of its arguments and results."""

    def __init__(self, in_avals, out_avals):
        self.in_avals, self.out_avals = list(in_avals), list(out_avals)


class Compiled:
    """A compiled function for one signature; calling it with other shapes or dtypes is an error. Pickled as its
    artifact (the module's bytes): unpickled, it loads the module on first call, compiling nothing."""

    def __init__(self, artifact: aot.Artifact, compile_seconds: float, runner: Runner | None = None):
        self.artifact, self.compile_seconds, self._runner = artifact, compile_seconds, runner

    def __reduce__(self):
        return Compiled, (self.artifact, self.compile_seconds)

    @property
    def in_tree(self):
        return self.artifact.in_tree

    @property
    def out_tree(self):
        return self.artifact.out_tree

    @property
    def runner(self) -> Runner:
        """The loaded module (compiled ahead of time for another target: loaded on first use)."""
        if self._runner is None:
            self._runner = self.artifact.runner()
        return self._runner

    def save(self, path, host_modules: bool = False) -> None:
        """Write one file (module + calling metadata + versions) that `stagec.load(path)` calls. A module calling
        NumPy on the host (compiled with `host_blas`) is saved only when `host_modules` asks for it
        (`aot.Artifact.save`)."""
        self.artifact.save(path, host_modules)

    def __call__(self, *args, **kwargs) -> Any:
        return self.runner(self.artifact.check_call(f"compiled function {self.artifact.name}", args, kwargs))

    @property
    def variant(self) -> list[str]:
        """The retries IREE's compile of this module took (`stagec.compiler.RETRIES`, in order; empty when it
        compiled as asked): it was given the final text through their passes, with their flags (`flags`)."""
        return list(self.artifact.meta.get("variant", ()))

    @property
    def flags(self) -> list[str]:
        """The flags this module was compiled with (those of its variant), as its cache key holds them."""
        return list(self.artifact.meta.get("flags", ()))

    def as_text(self) -> str:
        a = self.artifact
        as_ = f", compiled as {' '.join(self.variant)}" if self.variant else ""
        return f"IREE module {a.name}: {len(a.vmfb)} bytes for {a.target}{as_}"
