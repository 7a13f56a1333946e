"""Shader loops that run too long for lavapipe.

Mesa's lavapipe (Vulkan on the CPU) ends a shader's loop nest after 65535 iterations (gallivm's
LP_MAX_TGSI_LOOP_ITERATIONS) and goes on with wrong values, silently: `sum` of 65536 floats left out the last one,
and a sort of 300 stopped half done. `long_loops` reads the trip counts of the loops in the SPIR-V IREE wrote (its
`spirv.mlir.loop`s: `^bb1(%i)`, `%i < bound`, `%i + step`) and finds each nest whose iterations, inner loops'
included, pass a limit. Bounds it cannot read (not constants) count as one iteration."""
from __future__ import annotations

import functools
import glob
import math
import os
import re

from .targets import device_names

INTERMEDIATES = "--iree-hal-dump-executable-intermediates-to="
LAVAPIPE = "llvmpipe"  # its Vulkan devices' names
_CONST = re.compile(r"(%\w+) = spirv\.Constant (-?\d+) : i32")
_HEAD = re.compile(r"\^bb1\((%\w+): i32")


def _trips(body: list[str], consts: dict[str, int]) -> int:
    """The trip count of the loop whose own lines (not its inner loops') are `body` (1 where not constant)."""
    text = "\n".join(body)
    head = _HEAD.search(text)
    if head is None:
        return 1
    iv = head[1]
    branches = re.findall(r"spirv\.Branch \^bb1\((%\w+) : i32\)", text)  # (the entry's, then the back edge's)
    bound = re.search(rf"spirv\.[SU]LessThan {re.escape(iv)}, (%\w+) : i32", text)
    step = re.search(rf"{re.escape(branches[-1])} = spirv\.IAdd {re.escape(iv)}, (%\w+) : i32", text) if len(
        branches) > 1 else None
    start = branches[0] if branches else None
    if bound is None or step is None or consts.get(bound[1]) is None or not consts.get(step[1]):
        return 1
    first = consts.get(start, 0)  # (a thread's own start: at least 0)
    return max(1, math.ceil((consts[bound[1]] - first) / consts[step[1]]))


def nest_iterations(spirv: str) -> list[int]:
    """The iterations of each outermost loop nest of one dispatch's SPIR-V (MLIR text): its trips times its inner
    nests' (summed), at least its own."""
    consts = {m[1]: int(m[2]) for m in _CONST.finditer(spirv)}
    stack: list[list] = []  # [depth at its start, its own lines, its inner nests' iterations]
    out, depth = [], 0
    for line in spirv.splitlines():
        if "spirv.mlir.loop {" in line:
            stack.append([depth, [], 0])
            depth += 1
            continue
        if stack:
            stack[-1][1].append(line)
        depth += line.count("{") - line.count("}")
        while stack and depth <= stack[-1][0]:
            start, body, inner = stack.pop()
            n = _trips(body, consts) * max(1, inner)
            if stack:
                stack[-1][2] += n
            else:
                out.append(n)
    return out


def long_loops(folder: str, limit: int) -> dict[str, int]:
    """{dispatch: iterations} of the dispatches in `folder` (IREE's `INTERMEDIATES` dump) with a loop nest of more
    than `limit` iterations."""
    found = {}
    for path in glob.glob(os.path.join(folder, "*.spirv.mlir")):
        with open(path) as f:
            n = max(nest_iterations(f.read()), default=0)
        if n > limit:
            name = os.path.basename(path)[:-len(".spirv.mlir")]
            found[name[name.rfind("main_dispatch_"):]] = n
    return found


@functools.cache
def loop_limit(backend: str) -> int | None:
    """The most iterations a shader's loop nest may run on `backend`'s device here: lavapipe's, else None."""
    if backend != "vulkan":
        return None
    from stagec.passes.legalize import LOOP  # (its `long-reductions-in-rows` keeps reductions under it)
    names = device_names("vulkan")
    return LOOP if names and LAVAPIPE in names[0] else None


_WG_STORE = re.compile(r'spirv\.Store "Workgroup" (%\w+)')
_WG_LOAD = re.compile(r'spirv\.Load "Workgroup" (%\w+)')
_DEF = re.compile(r"(%\w+) = spirv\.([\w.]+) (.*?)(?: : [^:]*)?$")
_LOOP_IV = re.compile(r"\^bb\d+\((%\w+): i32\)")
_COMMUTES = ("IAdd", "IMul", "BitwiseOr", "BitwiseAnd")


def _index(name: str, defs: dict, depth: int = 0) -> str:
    """`name` as an expression of the thread's local id (`lid0`..), loop counters (`iv`, all alike: loops of one
    dispatch's copies run alike) and constants, as far as integer arithmetic goes; other values by their own name."""
    d = defs.get(name)
    if d is None or depth > 32:
        return name
    op, args = d
    if op == "iv":
        return "iv"
    if op == "Constant":
        return args.split()[0]
    if op == "CompositeExtract" and (m := re.match(r"(%\w+)\[(\d+)", args)) and "LocalInvocationId" in str(
            defs.get(m[1], ("", ""))[1]):
        return f"lid{m[2]}"
    if op in ("AccessChain", "IAdd", "ISub", "IMul", "SDiv", "UDiv", "SMod", "UMod", "ShiftLeftLogical",
              "ShiftRightLogical", "BitwiseAnd", "BitwiseOr"):
        parts = [_index(a, defs, depth + 1) for a in re.findall(r"%\w+", args)]
        return f"{op}({','.join(sorted(parts) if op in _COMMUTES else parts)})"
    if op == "Load" and "Input" in args:
        return args
    return name


def reads_other_threads_unsynced(spirv: str) -> bool:
    """Whether one dispatch's SPIR-V (MLIR text) loads workgroup memory at an element other than those it stored
    since the last `spirv.ControlBarrier` (compared as expressions of the thread's id and loop counters): a value
    another thread of the workgroup may not have written yet, a race. IREE 3.13 left the barrier out in dispatches
    that keep an intermediate there: a widening convert cloned beside a transpose, a reduction beside the consumer
    broadcasting it."""
    defs: dict = {}
    stored: set[str] = set()
    for line in spirv.splitlines():
        for iv in _LOOP_IV.findall(line):
            defs[iv] = ("iv", "")
        if m := _DEF.search(line.strip()):
            defs[m[1]] = (m[2].removeprefix("spirv."), m[3])
        if "spirv.ControlBarrier" in line:
            stored.clear()
        elif m := _WG_STORE.search(line):
            stored.add(_index(m[1], defs))
        elif (m := _WG_LOAD.search(line)) and stored and _index(m[1], defs) not in stored:
            return True
    return False


def racing_dispatches(folder: str) -> list[str]:
    """The dispatches in `folder` (IREE's `INTERMEDIATES` dump) for which `reads_other_threads_unsynced` holds."""
    found = []
    for path in sorted(glob.glob(os.path.join(folder, "*.spirv.mlir"))):
        with open(path) as f:
            if reads_other_threads_unsynced(f.read()):
                name = os.path.basename(path)[:-len(".spirv.mlir")]
                found.append(name[name.rfind("main_dispatch_"):])
    return found
