"""Why a function was traced again, or compiled although the persistent cache was on: one warning on
logger `stagec` per miss when `config.explain_cache_misses` (`STAGEC_EXPLAIN_CACHE_MISSES=1`) is set.

A trace miss is explained against the function's closest earlier signature, read field by field
from the jit key (`jit.Key`: tree, avals, statics, backend, config); a persistent miss against the
closest cache entry of the same function name, read from its key components. Registered with jit
(`set_trace_observer`) and stages (`set_miss_explainer`) at import: they never import this module.
"""
from __future__ import annotations

import collections
import difflib
import logging
import os
import sys
import time
import weakref
from typing import Callable, Sequence

from . import aot, cache
from .config import config
from .jit import Key, _fun_desc, set_trace_observer
from .stages import set_miss_explainer
from .tree_util import PyTreeDef

log = logging.getLogger("stagec")


# ---------------------------------------------------------------- persistent-cache misses


def persistent_miss(name: str, key: str, comps: dict, mlir: str) -> str:
    """What differs between this key and the closest entry on disk for the same function name."""
    best = None
    for path, _ in cache.entries():
        try:
            meta = aot.read_meta(path)
        except (aot.ArtifactError, OSError):
            continue
        if meta.get("name") != name or not isinstance(meta.get("key_components"), dict):
            continue
        old = meta["key_components"]
        diffs = [k for k in sorted(set(old) | set(comps)) if old.get(k) != comps.get(k)]
        if best is None or len(diffs) < len(best[1]):
            best = (meta, diffs)
    head = f"PERSISTENT CACHE MISS for {name} (key {key[:12]}, cache {cache.cache_dir()}): "
    if best is None:
        return head + "never compiled before with this cache (no entry for a function of this name)"
    meta, diffs = best
    old = meta["key_components"]
    why = []
    for k in diffs:
        if k == "mlir":
            before = cache.entry_mlir(meta)
            line = _first_difference(before, mlir) if before is not None else ""
            why.append("the program (MLIR) differs — changed code, closure or global values, shapes or dtypes"
                       + (f"; first changed line: {line}" if line else ""))
        elif k == "flags":
            why.append(f"compiler flags {old.get('flags')} -> {comps.get('flags')}")
        else:
            why.append(f"{k} {old.get(k)!r} -> {comps.get(k)!r}")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(meta.get("created", 0)))
    return head + f"closest earlier entry (compiled {when}) differs in: " + "; ".join(why)


def _first_difference(old: str, new: str) -> str:
    """`old line -> new line` for the first hunk where two MLIR texts differ."""
    removed = added = None
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            if removed is not None or added is not None:
                break
            continue
        if line.startswith("-") and removed is None:
            removed = line[1:].strip()[:160]
        elif line.startswith("+") and added is None:
            added = line[1:].strip()[:160]
    return f"{removed or '(nothing)'!s} -> {added or '(nothing)'!s}" if removed or added else ""


# ---------------------------------------------------------------- trace misses

_MAX_CODES = 1024  # code locations remembered (least recently traced forgotten first)
_traced_code: collections.OrderedDict[tuple, list] = collections.OrderedDict()  # code -> function objects (weak)


def _note_traced(fun: Callable) -> bool:
    """Remember that `fun` was traced; True if another function object with its code was traced before."""
    code = _code_of(fun)
    if code is None:
        return False
    where = (code.co_filename, code.co_firstlineno, code.co_name)
    seen = _traced_code.pop(where, [])
    _traced_code[where] = seen
    if len(_traced_code) > _MAX_CODES:
        _traced_code.popitem(last=False)
    new_object = bool(seen) and not any(_same(r, fun) for r in seen)
    if new_object or not seen:
        try:
            seen.append(weakref.ref(fun))
        except TypeError:
            seen.append(fun)
        del seen[:-8]
    return new_object


def _same(ref, fun) -> bool:
    return (ref() if isinstance(ref, weakref.ref) else ref) is fun


def _code_of(f):
    f = getattr(f, "func", f)
    return getattr(f, "__code__", None)


def trace_miss(jitted, key: Key, labels: Callable[[], Sequence[str]]) -> None:
    """Note that `jitted.fun` is traced for `key`; when explaining, log why: what changed against the closest
    of its earlier keys, or that it is a new function object for code seen before. `labels()` names each
    dynamic leaf (called only when explaining)."""
    new_object = _note_traced(jitted.fun)
    if not config.explain_cache_misses:
        return
    head = f"TRACING CACHE MISS for {_fun_desc(jitted.fun)}, called from {_call_site()}: "
    param_name = jitted._param_name
    earlier = [k for k in jitted._cache if k != key]
    if not earlier:
        if new_object:
            log.warning(head + "a new function object: another function object with the same code was traced "
                        "before. Caches live on the function object, so a lambda, closure or functools.partial "
                        "created anew for each call retraces and recompiles; create it once and reuse it.")
        else:
            log.warning(head + "never seen this function before (first trace)")
        return
    names = labels()
    best = min(earlier, key=lambda k: len(_key_diffs(k, key, names, param_name)))
    log.warning(head + "; ".join(_key_diffs(best, key, names, param_name)) + f" ({len(earlier)} earlier "
                "signature(s); closest shown)")


def _call_site() -> str:
    """file:line of the innermost caller outside stagec."""
    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(here):
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else "?"


def _tree_diffs(old, new, param_name, static_positions: set) -> list[str]:
    """Which argument's pytree structure changed, for trees of `(dynamic args, dynamic kwargs)`."""
    if not (isinstance(old, PyTreeDef) and isinstance(new, PyTreeDef) and len(old.kids) == len(new.kids) == 2):
        return [f"the argument structure changed from {old} to {new}"]
    (oa, okw), (na, nkw) = old.kids, new.kids
    out = []
    if len(oa.kids) != len(na.kids):
        out.append(f"the number of positional (non-static) arguments changed from {len(oa.kids)} to "
                   f"{len(na.kids)}")
    else:
        positions = [i for i in range(len(na.kids) + len(static_positions)) if i not in static_positions]
        for j, (a, b) in enumerate(zip(oa.kids, na.kids)):
            if a != b:
                name = param_name(positions[j]) if j < len(positions) else f"#{j}"
                out.append(f"argument {name!r} structure changed from {a._str()} to {b._str()}")
    if okw != nkw:
        ok, nk = dict(zip(okw.aux or (), okw.kids)), dict(zip(nkw.aux or (), nkw.kids))
        if set(ok) != set(nk):
            out.append(f"keyword arguments changed from {sorted(ok)} to {sorted(nk)}")
        for k in sorted(set(ok) & set(nk)):
            if ok[k] != nk[k]:
                out.append(f"argument {k!r} structure changed from {ok[k]._str()} to {nk[k]._str()}")
    return out or [f"the argument structure changed from {old} to {new}"]


def _key_diffs(old, new, labels: Sequence[str], param_name=str) -> list[str]:
    """Each difference between two jit keys, in words."""
    out = []
    if old.tree != new.tree:
        out += _tree_diffs(old.tree, new.tree, param_name, {s[1] for s in new.statics if s[0] == "#"})
    elif len(old.avals) == len(new.avals):
        for i, (a, b) in enumerate(zip(old.avals, new.avals)):
            name = repr(labels[i]) if i < len(labels) else f"#{i}"
            if a.shape != b.shape:
                out.append(f"argument {name} shape changed from {a.str_short()} to {b.str_short()}")
            elif a.dtype != b.dtype:
                out.append(f"argument {name} dtype changed from {a.dtype} to {b.dtype}")
            elif a.weak_type != b.weak_type:
                out.append(f"argument {name} weak_type changed from {a.weak_type} to {b.weak_type} (a Python "
                           f"scalar is weakly typed, an array is not)")
    if old.statics != new.statics:
        od = {param_name(s[1]) if s[0] == "#" else s[1]: s[2] for s in old.statics}
        nd = {param_name(s[1]) if s[0] == "#" else s[1]: s[2] for s in new.statics}
        for k in sorted(set(od) | set(nd), key=str):
            o, n = od.get(k, "<absent>"), nd.get(k, "<absent>")
            if o != n or type(o) is not type(n):  # (1 and 1.0: equal values, another trace)
                out.append(f"static argument {k!r} changed from {o!r:.60} to {n!r:.60}")
    if old.backend != new.backend:
        out.append(f"backend changed from {old.backend!r} to {new.backend!r}")
    if old.config != new.config:
        oc, nc = dict(old.config), dict(new.config)
        for k in sorted(set(oc) | set(nc)):
            if oc.get(k) != nc.get(k):
                out.append(f"config flag {k} changed from {oc.get(k)} to {nc.get(k)}")
    return out or ["a signature equal to an earlier one (the cache entry was dropped?)"]


set_trace_observer(trace_miss)
set_miss_explainer(persistent_miss)
