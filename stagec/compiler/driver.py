"""The compile driver: a lowered module -> the target's pipeline -> what the module is (`Facts`, from IR queries)
-> its flags -> IREE, with the retries that get around IREE 3.13's known failures (each a flag or pipeline variant
declared in `retries`, which the artifact and its cache key record).

`prepare` runs a pipeline; `module_flags` adds what a module's facts ask for to a target's flags (all of it in the
cache key); `compile` hands the final text and flags to IREE. `source_digest` is a digest of the code that decides
what IREE receives (this package, the passes, tuning, lowering): every cache key holds it, so a changed
rewrite or flag rule never loads a module compiled before the change.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import math
import os
import re
import tempfile
import warnings
from typing import NamedTuple, Sequence

from .. import tuning
from ..config import config
from ..lowering import context
from ..errors import CompileError
from . import loops, processes, retries
from .retries import NO_AGGRESSIVE_FUSION, SYSTEM_LINK, Retry
from .targets import DATA_TILING, HOST, STACK_1M, STACK_64K, TARGETS, Target, host_has_bf16, pipeline

# Not IREE flags: the compile asked for host calls (BLAS matmuls, long sorts: the target's offloads). Kept in the
# flags an artifact and a cache key hold, taken out before IREE sees them.
HOST_BLAS = "--stagec-host-blas"
NO_THREADS = "--mlir-disable-threading"
TUNING = tuning.FLAG
WORKER_STACK = 4 << 20  # local-task workers' stacks: IREE's CPU sort keeps rows of its operands there (`stack-1m`)
# Float64 ops that IREE's llvm-cpu lowers to libm calls: its embedded ELF linker has no f64 libm.
_LIBM_F64 = frozenset(f"stablehlo.{n}" for n in ("exponential", "exponential_minus_one", "log", "log_plus_one",
                                                  "logistic", "tanh", "sine", "cosine", "tan", "atan2", "power",
                                                  "remainder", "cbrt"))
# A contraction's multiply-adds count as 1/8 element each in a module's work (`op_work`, `backend.driver_for`)
MACS_PER_ELEMENT = 8
# A CPU module runs on local-task where its largest op's work reaches this (`backend.driver_for`), and is compiled
# for it: its `main` takes a wait and a signal fence and returns once its work is queued (`FENCED`), and the caller
# polls the signal fence (`backend.Executable.run`). IREE 3.13's blocking wait spins on the calling thread until
# the worker that signalled has left its callback; woken onto that worker's core, the caller keeps it from doing
# so for a time slice (docs/runtime.md, "Waiting for local-task").
TASK_WORK = 1 << 24
# ... and a CPU module whose largest op's work lies in [`SPARE_WORK`, `TASK_WORK`) runs there for a call while a core
# is spare, on local-sync otherwise (`backend._spare_core`): it is compiled with fences too (its caller then waits
# blocking, as a batch thread: `backend._wait_spared`). From a 1M-element kernel (docs/runtime.md).
SPARE_WORK = 1 << 20
# ... from twice that for a module of one dispatch (one kernel): its one hand-over to the workers and back (65-180 us
# on the 2-core EPYC: the spared time less half the inline one) costs more than a second core saves on a kernel of less (1M float32 `deg2rad`, work 1.2M: 112
# us inline, 180-236 spared; `exp`, work 2^21: 256-314 inline, 222-257 spared; docs/runtime.md, rule 4)
SPARE_ALONE = 1 << 21
FENCED = "--iree-execution-model=async-external"
# Ops that are no dispatch of their own (a region's ops, or none), left out of a module's work
_NO_DISPATCH = frozenset(f"stablehlo.{n}" for n in ("constant", "while", "if", "case", "return", "tuple",
                                                     "get_tuple_element", "optimization_barrier"))
# Elementwise ops IREE fuses into one dispatch, with their rough cost per element in vector instructions: an
# op IREE expands into a polynomial counts 8, a division or root 2. A chain of them (`_chains`) works on each of its
# elements `1 + sum / MACS_PER_ELEMENT` times: ndtri's ~220 ops on 1M float32 (2.9 ms on one thread) count 29M and
# take the workers; exp's 2M stays inline (docs/runtime.md, "Which CPU driver").
_COST = {f"stablehlo.{n}": c for c, names in (
    (8, "exponential exponential_minus_one log log_plus_one logistic tanh sine cosine tan atan2 power cbrt"),
    (2, "divide sqrt rsqrt remainder"),
    (1, "add subtract multiply negate abs maximum minimum compare select clamp convert bitcast_convert and or xor "
        "not shift_left shift_right_logical shift_right_arithmetic floor ceil round_nearest_even round_nearest_afz "
        "sign is_finite count_leading_zeros popcnt real imag complex")) for n in names.split()}
# CHLO ops stagec leaves to IREE (float64 asin, acos, atan, erf; erf_inv), expanded there into rational or
# polynomial forms: their ops counted as above (erf_inv: a log, a root, two polynomials of 9 terms, selects)
_COST.update({**{f"chlo.{n}": 16 for n in "asin acos atan erf erfc sinh cosh asinh acosh atanh lgamma digamma".split()},
              "chlo.erf_inv": 32})
# ... and of the ops in the body of an elementwise `linalg.generic` (`passes.fuse`'s kernels), the rest 1 each
_BODY_COST = {**{f"math.{n}": 8 for n in "exp expm1 log log1p tanh sin cos tan atan2 powf cbrt".split()},
              **{n: 2 for n in ("arith.divf", "math.sqrt", "math.rsqrt", "arith.remf")}}


class Facts(NamedTuple):
    """What a module's flags and its runtime driver depend on, read from its IR."""
    bf16: bool  # some value is a bfloat16 tensor (0-d included)
    libm_f64: bool  # some float64 op IREE's CPU codegen calls libm for
    host_calls: tuple[str, ...]  # the host modules it imports (`lowering.HOST_MODULES`: callbacks, BLAS, sort)
    macs: int  # multiply-adds of its dot_generals (those that call BLAS are calls now: not counted)
    look: tuning.Look | None = None  # what the CPU tuning spec's rules read (`tuning.look`)
    work: int = 0  # its largest op's or elementwise chain's work (`op_work`, `_COST`): the most one dispatch of it
    # can do; picks its CPU driver
    packs: bool = True  # products worth packing (`stagec.passes.packing`): the CPU's data tiling
    unfused: bool = False  # a pass marked it `legalize.UNFUSED` (a form IREE's aggressive fusion fails to compile)
    sliced_dots: bool = False  # a product has a sliced operand (`legalize.sliced_operand`): the CPU's 64 KiB stack


def facts(module) -> Facts:
    """The `Facts` of `module` (one walk)."""
    from iree.compiler import ir
    with module.context:
        return _facts(module, ir)


def _facts(module, ir) -> Facts:
    bf16, f64, found, macs, work, sliced = ir.BF16Type.get(), ir.F64Type.get(), [False, False], [0], [0], [False]
    from stagec.passes import packing, scalar_ops  # (they import iree.compiler, as this function's caller has)
    from stagec.passes.legalize import UNFUSED, sliced_operand
    libm_body = {scalar_ops.float_op(n.split(".", 1)[1]) for n in _LIBM_F64} - {None}
    dots: list = []  # (each product's `packing.dot_work`)
    callees: set[str] = set()
    chain: dict = {}  # a function body's elementwise ops -> their chains (`_chain`)

    ranked = ir.RankedTensorType
    # (the types of a fused generic's scalar body ops, most of a fused module's: no tensors, checked without the
    # ValueError `RankedTensorType(t)` raises for them)
    scalars = (ir.F64Type, ir.F32Type, ir.F16Type, ir.BF16Type, ir.IntegerType, ir.IndexType)

    def element(t):
        cls = type(t)
        if cls is ranked:
            return t.element_type
        if cls in scalars:
            return None
        try:
            return ranked(t).element_type
        except ValueError:
            return None

    def visit(op):
        name = op.name
        types = [v.type for v in op.results] + [v.type for v in op.operands]
        elements = [element(t) for t in types]
        if not found[0] and any(e == bf16 for e in elements if e is not None):
            found[0] = True
        if not found[1] and ((name in _LIBM_F64 or name.startswith("chlo.")) and any(
                e == f64 for e in elements if e is not None) or name in libm_body and any(t == f64 for t in types)):
            found[1] = True  # (the scalar ops in a fused generic's body: of f64 type, not tensors)
        dot = 0
        if name == "stablehlo.dot_general":
            dots.append(packing.dot_work(op))
            dot = dots[-1][0]
            sliced[0] = sliced[0] or any(sliced_operand(v) for v in op.operands)
        macs[0] += dot
        if name.startswith(("stablehlo.", "chlo.")) and name not in _NO_DISPATCH:
            work[0] = max(work[0], op_work(types, dot))
            if name in _COST and op.parent.name == "func.func":  # (not in a loop or a branch: run once, if at all)
                _chain(op, _COST[name], chain)
        elif name == "linalg.generic" and op.parent.name == "func.func" and "reduction" not in str(
                op.attributes["iterator_types"]):  # (`fuse`'s elementwise kernels: their body's ops)
            _chain(op, sum(_BODY_COST.get(o.name, 1) for o in op.regions[0].blocks[0].operations
                           if o.name not in ("arith.constant", "linalg.yield")), chain)
        if name == "func.call":
            callees.add(str(op.attributes["callee"]).lstrip("@").split(".")[0])
        elif name == "func.func":
            fn = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            if not found[0] and any(element(t) == bf16 for t in (*fn.inputs, *fn.results)):
                found[0] = True
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    from stagec.lowering import HOST_MODULES
    work[0] = max([work[0], *(n + n * cost // MACS_PER_ELEMENT for n, cost, up in chain.values() if up is None)])
    return Facts(found[0], found[1], tuple(sorted(callees & set(HOST_MODULES))), macs[0], tuning.look(module),
                 work[0], packing.packs(dots), UNFUSED in module.operation.attributes, sliced[0])


def _chain(op, cost: int, chain: dict) -> None:
    """Join `op` (visited after its operands) to the chains of its elementwise operands of as many elements: one
    dispatch, as IREE fuses them, with `cost` more per element. `chain`: op -> its node, [elements, cost, parent]
    (a union-find: a chain's root node holds its cost)."""
    from iree.compiler import ir

    def root(node):
        while node[2] is not None:  # (halving the path as it goes: a gradient's ops read values far up a chain)
            if node[2][2] is not None:
                node[2] = node[2][2]
            node = node[2]
        return node
    try:
        n = math.prod(d if d >= 0 else 1 for d in ir.RankedTensorType(op.results[0].type).shape)
    except ValueError:
        return
    mine = [n, cost, None]
    for v in op.operands:
        theirs = chain.get(v.owner) if isinstance(v.owner, ir.OpView) else None
        if theirs is not None and (theirs := root(theirs)) is not mine and theirs[0] == n:
            mine[1] += theirs[1]
            theirs[2] = mine
    chain[op] = mine


def text_facts(text: str) -> Facts:
    """The `Facts` of a module given as text."""
    from iree.compiler import ir
    with context():
        return facts(ir.Module.parse(text))


def op_work(types, macs: int = 0) -> int:
    """One op's work: the elements of its largest operand or result (tensor `types`, unknown dimensions as 1) plus
    its multiply-adds (`macs`) / `MACS_PER_ELEMENT`. A function of shapes only."""
    from iree.compiler import ir
    most = 0
    for t in types:
        try:
            shape = ir.RankedTensorType(t).shape
        except ValueError:
            continue
        most = max(most, math.prod(n if n >= 0 else 1 for n in shape))
    return most + macs // MACS_PER_ELEMENT


def prepare(text: str, backend: str, passes=(), host_blas: bool = False, name: str = "module") -> tuple[str, Facts]:
    """(final text, facts) of a lowered module's text through `backend`'s pipeline (`passes`: its optimization
    part, none by default: an eager kernel's)."""
    from iree.compiler import ir

    from stagec.passes import run_pipeline
    with context():
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as e:  # (a lowering rule emitted what does not verify, e.g. needing static sizes)
            raise CompileError(f"function {name!r}: the lowered module does not parse: {e}") from None
        run_pipeline(module, pipeline(backend, passes, host_blas), name, backend=backend)
        return str(module), facts(module)


def module_flags(backend: str, flags: Sequence[str], fx: Facts, mlir: str) -> list[str]:
    """`flags` adjusted to one module (what the cache key must hold), from its facts:
    - no product worth packing (`stagec.passes.packing`): no data tiling;
    - a bf16 module on a host CPU without bf16 arithmetic: no data tiling (it packs bf16 matmuls for bf16
      instructions; without them IREE 3.13's data-tiled bf16 matmul was 40x slower than untiled);
    - for this machine's CPU (`HOST`), or with a float64 op IREE lowers to libm: the host's linker (a
      library as self-contained as IREE's embedded ELF, loaded by dlopen; a small module serializes ~45 ms faster;
      the embedded linker has no f64 libm). A module for another CPU (`arch=`) keeps the embedded ELF, loadable anywhere;
    - work for local-task (`SPARE_WORK`, no host calls): `main` with fences (`FENCED`);
    - the parts of the CPU tuning spec that apply (`tuning.spec_flags`; `skinny` only without data tiling), for one
      thread where it calls BLAS (its dispatches between the calls run on local-sync);
    - marked `UNFUSED` by a pass (`stagec.passes.legalize`): no aggressive fusion (the retry it would otherwise take after a failing compile);
    - no sliced product operand: a 1 MiB stack limit, not 64 KiB (`targets.STACK_64K`: only a check; what the
      `stack-1m` retry gave after a failed compile, e.g. a 1-128-128-1 MLP's update at batch 128)."""
    flags = list(flags)
    if fx.unfused and NO_AGGRESSIVE_FUSION not in flags:
        flags.append(NO_AGGRESSIVE_FUSION)
    if backend != "cpu":
        return flags
    if not fx.sliced_dots:
        flags = [STACK_1M if f == STACK_64K else f for f in flags]
    if not fx.packs or (fx.bf16 and HOST in flags and not host_has_bf16()):
        flags = [f for f in flags if f != DATA_TILING]
    if (HOST in flags or fx.libm_f64) and SYSTEM_LINK not in flags:
        flags.append(SYSTEM_LINK)
    if fx.work >= SPARE_WORK and not fx.host_calls and FENCED not in flags:
        flags.append(FENCED)  # (shapes decide, as the driver: one key in every process; runs on local-sync too)
    if not any(f.startswith(TUNING) for f in flags):
        from stagec.lowering import BLAS_MODULE
        lk = tuning.look(mlir) if fx.look is None else fx.look
        flags += tuning.spec_flags(lk._replace(packed=DATA_TILING in flags), one_thread=BLAS_MODULE in fx.host_calls)
    return flags


def next_retry(error: str, backend: str, mlir: str, flags: list, taken: Sequence[str]) -> tuple[Retry, str, list] | None:
    """(retry, text, flags) of the first retry (`retries.RETRIES`) not `taken` yet that answers `error` and changes
    the compile of `mlir` with `flags`, or None."""
    for r in retries.RETRIES:
        if r.name in taken or not r.matches(error, backend):
            continue
        if r.passes:
            text = run_passes(mlir, r.passes, backend)
            if text is not None:
                return r, text, flags
        elif (new := r.flags(flags)) != flags:
            return r, mlir, new
    return None


def run_passes(mlir: str, passes: Sequence[str], backend: str, name: str = "module") -> str | None:
    """`mlir` through `passes`, or None where they change nothing."""
    from iree.compiler import ir

    from stagec.passes import run_pipeline
    with context():
        module = ir.Module.parse(mlir)
        before = str(module)
        run_pipeline(module, list(passes), name, backend=backend)
        after = str(module)
    return None if after == before else after


def compile(mlir: str, backend: str, fun_name: str, flags: Sequence[str], side_flags: Sequence[str] = (),
            variant: list | None = None) -> bytes:
    """Final MLIR text and flags (`module_flags`'s) -> IREE VM flatbuffer, or a CompileError naming the function
    and MLIR file. `side_flags` (e.g. dumping dispatch sources) do not change the module. A known IREE failure is
    compiled again as a variant (`retries.RETRIES`); the names of the retries taken are appended to `variant`
    (the module then is what `variant_flags(flags, variant)` and `variant_passes(variant)` give IREE)."""
    import iree.compiler as ic
    flags = list(flags)
    taken = [] if variant is None else variant
    try:
        while True:
            try:
                return _compile_checked(mlir, backend, flags, side_flags)
            except (ic.CompilerToolError, TooManyBindings, WorkgroupRace) as e:
                found = next_retry(str(e), backend, mlir, flags, taken)
                if found is None and isinstance(e, WorkgroupRace):
                    # (left after the retries: float64 SVD's matrix-vector products, whose results were right on
                    # lavapipe; an error made those errors: docs/log.md, 2026-11-28 helper vulkan-triage)
                    warnings.warn(f"function {fun_name!r}: IREE 3.13's SPIR-V {e.args[0]}: a race, right on "
                                  f"lavapipe where checked; other devices may give wrong values", RuntimeWarning,
                                  stacklevel=3)
                    return e.args[1]
                if found is None:
                    raise
                taken.append(found[0].name)
                mlir, flags = found[1], found[2]
    except LongLoops as e:
        raise NotImplementedError(
            f"function {fun_name!r}: lavapipe (Mesa's Vulkan on the CPU) ends a shader's loops after "
            f"{loops.loop_limit(backend)} iterations, and IREE's code for this function runs longer ({e}): its results "
            f"would be wrong. Use the cpu backend, or a GPU's Vulkan (MLIR in {save_failed_mlir(mlir, fun_name)})") from None
    except (ic.CompilerToolError, TooManyBindings) as e:
        path = save_failed_mlir(mlir, fun_name)
        diag = "\n".join(line for line in str(e).splitlines() if "error" in line.lower())[:2000]
        f64 = (re.search(r"'spirv\.GL\.(\w+)' op operand .* but got 'f64'", diag)
               or re.search(r"operation 'arith\.(bitcast)' .*\(f64\) -> i64", diag))
        if f64:
            raise NotImplementedError(f"function {fun_name!r}: Vulkan has no float64 {f64[1].lower()} (SPIR-V's "
                                      f"GLSL functions take 16/32-bit floats); use float32 there, or the cpu "
                                      f"or cuda backend (MLIR in {path})") from None
        div64 = re.search(r"failed to legalize operation 'arith\.(\w*(?:div|rem)\w*)'.*\(i64, i64\)", diag)
        if div64:
            raise NotImplementedError(f"function {fun_name!r}: this Vulkan target has no 64-bit integer division or "
                                      f"remainder (IREE 3.13's SPIR-V cannot lower {div64[1]} of int64: //, %, "
                                      f"random.randint over more than 2^32 values); use int32 there, or the cpu or "
                                      f"cuda backend (MLIR in {path})") from None
        if re.search(r"operation 'arith\.select'.*complex<f(32|64)>", diag):
            raise NotImplementedError(f"function {fun_name!r}: Vulkan has no {_complex_ops(mlir) or 'complex op'} (IREE "
                                      f"3.13 lowers it to a select of complex values, which SPIR-V lacks); use the cpu "
                                      f"or cuda backend (MLIR in {path})") from None
        raise CompileError(f"IREE could not compile function {fun_name!r} for {TARGETS[backend].iree}; the MLIR "
                           f"it was given is in {path}\n{diag}") from None


DUMP_SOURCES = "--iree-hal-dump-executable-sources-to="


class TooManyBindings(Exception):
    """A module IREE compiled with a dispatch binding more buffers than its target's runtime binds."""


class LongLoops(Exception):
    """A module IREE compiled with a shader loop nest longer than the device here runs (`loops.loop_limit`)."""


class WorkgroupRace(Exception):
    """A module IREE compiled with a dispatch reading workgroup memory other threads wrote, with no barrier
    (`loops.racing_dispatches`): args are the text (naming them after `retries.RACE`) and the module."""


def _compile_checked(mlir: str, backend: str, flags: list, side_flags: Sequence[str]) -> bytes:
    """IREE's module; where the target declares `max_bindings`, TooManyBindings for a dispatch over it (its runtime
    would refuse the module at load), found in the dispatch sources IREE writes as it compiles."""
    t = TARGETS[backend]
    if (limit := loops.loop_limit(backend)) is not None:
        with tempfile.TemporaryDirectory(prefix="stagec-spirv-") as d:
            vmfb = _iree(mlir, t, iree_args(flags, [*side_flags, loops.INTERMEDIATES + d]))
            if found := loops.long_loops(d, limit):
                raise LongLoops(", ".join(f"{k} loops {n} times" for k, n in found.items()))
            if races := loops.racing_dispatches(d):
                raise WorkgroupRace(f"{retries.RACE} ({', '.join(races)})", vmfb)
        return vmfb
    if t.max_bindings is None:
        return _iree(mlir, t, iree_args(flags, side_flags))
    given = next((f[len(DUMP_SOURCES):] for f in side_flags if f.startswith(DUMP_SOURCES)), None)
    if given is not None:  # (a dump folder asked for: IREE writes to one only; its older files are not this module's)
        before = _stamps(given)
        vmfb = _iree(mlir, t, iree_args(flags, side_flags))
        found = dispatch_bindings(given, before)
    else:
        with tempfile.TemporaryDirectory(prefix="stagec-sources-") as d:
            vmfb = _iree(mlir, t, iree_args(flags, [*side_flags, DUMP_SOURCES + d]))
            found = dispatch_bindings(d)
    over = {k: n for k, n in found.items() if n > t.max_bindings}
    if over:
        raise TooManyBindings("\n".join(f"error: dispatch {k} binds {n} buffers; the {backend} runtime binds at most "
                                         f"{t.max_bindings} (it would refuse the module at load)" for k, n in over.items()))
    return vmfb


def _iree(mlir: str, t: Target, args: list) -> bytes:
    """IREE's module for `mlir`; one with fusion barriers that may run on local-task (`FENCED`), for a target that
    drops them (`targets.BARRIERS_DROPPED`), in two runs: up to that phase, then on from it without the barriers.
    (Elsewhere a barrier's wait finds its work done: 3% of a small step, against 0.02-0.06 CPU-s more a compile.)"""
    at = t.barriers_dropped_after
    if at is None or FENCED not in args or "optimization_barrier" not in mlir:
        return processes.compile_str(mlir, t.iree, args)
    import iree.compiler as ic
    head = processes.compile_str(mlir, t.iree, [*args, f"--compile-to={at}", "--emit-mlir-bytecode"])
    try:
        return processes.compile_str(drop_barriers(head), t.iree, [*args, f"--compile-from={at}"])
    except ic.CompilerToolError as e:  # (a module IREE compiles keeping its barriers is never lost to their dropping)
        if any(f in str(e) for f in retries.DISPATCH_FAILURES):
            raise  # (a dispatch IREE formed before the drop, failing the same with the barriers kept: to the retries)
        return processes.compile_str(mlir, t.iree, args)


def drop_barriers(module: bytes) -> bytes:
    """`module` (MLIR bytecode) with each `util.optimization_barrier` of dispatches' results in a function's own
    blocks replaced by its operands. Others stay: in a loop, or of a constant (IREE 3.13's stream scheduling
    failed on some modules with those dropped: "failed to solve for timepoint coverage", "circular dependency")."""
    import io

    from iree.compiler import ir
    with context():
        m = ir.Module.parse(module)
        found: list = []
        for f in m.body.operations:
            for block in (b for r in f.regions for b in r.blocks):
                found += [op for op in block.operations if op.name == "util.optimization_barrier"
                          and all(isinstance(v, ir.OpResult) and v.owner.operation.name.startswith("flow.dispatch")
                                  for v in op.operands)]
        for op in found:
            for r, v in zip(op.results, op.operands):
                r.replace_all_uses_with(v)
            op.erase()
        out = io.BytesIO()
        m.operation.write_bytecode(out)
    return out.getvalue()


def _stamps(folder: str) -> dict[str, int]:
    """{name: modification time in ns} of the files in `folder` ({} where it does not exist yet)."""
    try:
        return {e.name: e.stat().st_mtime_ns for e in os.scandir(folder)}
    except OSError:
        return {}


def dispatch_bindings(folder: str, before: dict[str, int] | None = None) -> dict[str, int]:
    """Each dispatch's buffer bindings (its export's `#hal.pipeline.layout`), from the executable sources IREE dumped
    into `folder` (`DUMP_SOURCES`); with `before` (`_stamps` of the folder), only the files written since."""
    out = {}
    for name, stamp in sorted(_stamps(folder).items()):
        if name.endswith(".mlir") and (before is None or before.get(name) != stamp):
            with open(os.path.join(folder, name)) as f:
                text = f.read()
            aliases = dict(re.findall(r"^(#\w+) = (.*)$", text, re.M))  # (a layout printed once, by name)
            for m in re.finditer(r"hal\.executable\.export \w+ @(\S+).* layout\((#\w+)?(.*)$", text, re.M):
                out[m[1]] = (aliases.get(m[2], "") + m[3]).count("#hal.pipeline.binding<")
    return out


_PLAIN_COMPLEX = {"add", "subtract", "multiply", "negate", "real", "imag", "complex", "convert", "constant", "select",
                  "broadcast_in_dim", "reshape", "transpose", "slice", "concatenate", "optimization_barrier", "return"}


def _complex_ops(mlir: str) -> str:
    """The complex ops of `mlir` past plain arithmetic and data movement, as "complex128 power, complex64 sign"."""
    found = re.findall(r"(?:stablehlo|chlo)\.(\w+)\b[^\n]*complex<f(32|64)>", mlir)
    names = dict.fromkeys(f"complex{2 * int(bits)} {op}" for op, bits in found if op not in _PLAIN_COMPLEX)
    return ", ".join(names)


def iree_args(flags: Sequence[str], side_flags: Sequence[str] = ()) -> list[str]:
    """What iree-compile is given for `flags` (a cache key's) and `side_flags`: the `HOST_BLAS` marker taken out."""
    extra = list(side_flags)
    # Single-threaded where asked (`config.compile_single_threaded`), and always with a tuning spec: IREE 3.13 loads
    # one under a lock and verifies it on its thread pool; the waiting thread may pick up another dispatch's
    # configuration, which asks for the same lock: iree-compile hung. Single-threaded, it cannot (the recursion of
    # iree-org/iree#22842). A side flag: the module is the same.
    if config.compile_single_threaded or any(f.startswith(TUNING) for f in flags):
        extra.append(NO_THREADS)
    return [f for f in flags if not f.startswith(HOST_BLAS)] + extra


_failed_dir: str | None = None  # this process's folder of modules IREE refused (one, not one a failure)


def save_failed_mlir(mlir: str, fun_name: str) -> str:
    """Write the module IREE refused where its error can name it: `STAGEC_DUMP_DIR`, else one temporary folder of
    this process (`name.failed.mlir`, then `name.2.failed.mlir`, ...)."""
    global _failed_dir
    d = os.environ.get("STAGEC_DUMP_DIR")
    if d is None:
        if _failed_dir is None or not os.path.isdir(_failed_dir):
            _failed_dir = tempfile.mkdtemp(prefix=f"stagec-failed-{os.getpid()}-")
        d = _failed_dir
    os.makedirs(d, exist_ok=True)
    stem = os.path.join(d, "".join(c if c.isalnum() or c in "_-" else "_" for c in fun_name))
    path, n = f"{stem}.failed.mlir", 1
    while d == _failed_dir and os.path.exists(path):
        n += 1
        path = f"{stem}.{n}.failed.mlir"
    with open(path, "w") as f:
        f.write(mlir)
    return path


def key_flags(flags: Sequence[str]) -> list[str]:
    """`flags` as a cache key holds them: a tuning spec by its file name, not its folder (stagec writes the spec it
    composes into a folder of each process, under a name made of its content; `flag_files` holds the content)."""
    return [TUNING + os.path.basename(f[len(TUNING):]) if f.startswith(TUNING) else f for f in flags]


def flag_files(flags: Sequence[str]) -> dict[str, str]:
    """The files `flags` name whose contents change the module (the tuning spec), as name -> sha256."""
    out = {}
    for f in flags:
        if f.startswith(TUNING):
            st = os.stat(path := f[len(TUNING):])
            out[os.path.basename(path)] = _file_sha256(path, st.st_mtime_ns, st.st_size)
    return out


@functools.lru_cache(maxsize=8)
def _file_sha256(path: str, mtime_ns: int, size: int) -> str:
    """A flag file's digest, read again only when the file changes (every cache key holds it)."""
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def _compile_side_files() -> list[str]:
    """The source files that decide what IREE receives for a lowered module: this package (its retries too), the
    passes, tuning (and its spec parts), lowering and backend."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.find_spec("stagec.passes")  # (not imported: that imports iree.compiler)
    dirs = [os.path.dirname(os.path.abspath(__file__)), os.path.join(root, "tuning"),
            *(spec.submodule_search_locations or [] if spec else [])]
    files = [os.path.join(root, n) for n in ("lowering.py", "tuning.py", "backend.py")]
    for d in dirs:
        files += [os.path.join(d, n) for n in sorted(os.listdir(d)) if n.endswith((".py", ".mlir"))]
    return [f for f in files if os.path.isfile(f)]


@functools.cache
def source_digest() -> str:
    """sha256 of the compile side's source (`_compile_side_files`), computed once per process."""
    h = hashlib.sha256()
    for path in _compile_side_files():
        with open(path, "rb") as f:
            h.update(os.path.basename(path).encode() + b"\0" + f.read() + b"\0")
    return h.hexdigest()

