"""Persistent compilation cache: compiled IREE modules on disk, keyed by what IREE was given.

Key: sha256 over the MLIR after stagec's passes, the IREE target, the compiler flags, the host CPU
(when compiling for `host`), the IREE compiler version and the stagec version. Entry: one file
`<key>.stagec` in the `stagec.aot` format (module + calling metadata + checksum), written
atomically (temp file + rename); its modification time is its last use (LRU eviction past
`persistent_cache_max_size`). A corrupt entry is reported once, recompiled and replaced; a
directory that cannot be written degrades to a warning and in-memory compilation.

Location: `$STAGEC_CACHE_DIR`, else `$XDG_CACHE_HOME/stagec`, else `~/.cache/stagec`.
Off: `STAGEC_CACHE=0` or `stagec.config.update("persistent_cache", False)`.
"""
from __future__ import annotations

import base64
import difflib
import hashlib
import json
import logging
import os
import re
import time
import warnings
import weakref
import zlib
from typing import Any, Sequence

from . import aot
from .backend import find_target, get_backend, host_id
from .config import config

log = logging.getLogger("stagec")

SUFFIX = ".stagec"
_stats = {"hits": 0, "misses": 0, "writes": 0, "write_errors": 0, "corrupt": 0}
_warned: set[str] = set()
_MLIR_KEEP = 1 << 18  # keep the (compressed) MLIR in an entry up to this size, for explaining misses


def cache_dir() -> str:
    """The persistent cache folder (not necessarily existing yet)."""
    d = os.environ.get("STAGEC_CACHE_DIR")
    if d:
        return os.path.abspath(os.path.expanduser(d))
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "stagec")


def enabled() -> bool:
    return bool(config.persistent_cache)


def parse_size(s: str | int) -> int:
    """Bytes from `123`, `512K`, `100M`, `1G`, `1.5GiB`; ValueError naming the accepted forms."""
    if isinstance(s, int):
        return s
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(?:i?[bB])?\s*", str(s))
    if not m:
        raise ValueError(f"invalid size {s!r}; use a number of bytes or one with a K, M, G or T suffix, e.g. 1G")
    return int(float(m.group(1)) * 1024 ** " KMGT".index((m.group(2) or " ").upper()))


def _warn_once(tag: str, msg: str) -> None:
    if tag not in _warned:
        _warned.add(tag)
        warnings.warn(msg, RuntimeWarning, stacklevel=4)


def key_components(mlir: str, target: str, flags: Sequence[str]) -> dict:
    comps = {"mlir": hashlib.sha256(mlir.encode()).hexdigest(), "target": target, "flags": list(flags),
             "iree": aot.iree_compiler_version(), "stagec": aot.stagec_version()}
    if any(f.endswith("target-cpu=host") for f in flags):
        comps["host"] = host_id()
    return comps


def make_key(components: dict) -> str:
    return hashlib.sha256(json.dumps(components, sort_keys=True).encode()).hexdigest()


def entry_path(key: str) -> str:
    return os.path.join(cache_dir(), key + SUFFIX)


# ---------------------------------------------------------------- get / put


def lookup(key: str):
    """(mapped module, metadata) for `key`, or None. A corrupt entry is reported once and removed."""
    path = entry_path(key)
    try:
        vmfb, meta = aot.read(path)
        if meta.get("key") != key:
            raise aot.ArtifactError(f"{path}: holds key {str(meta.get('key'))[:16]}..., not its file name")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (aot.ArtifactError, OSError, ValueError) as e:
        _stats["corrupt"] += 1
        _warn_once("corrupt:" + path, f"stagec persistent cache: ignoring a bad entry ({e}); recompiling and "
                                      f"replacing it")
        try:
            os.unlink(path)
        except OSError:
            pass
        return None
    try:
        os.utime(path)  # last use, for LRU eviction
    except OSError:
        pass
    return vmfb, meta


def store(key: str, vmfb: bytes, meta: dict) -> bool:
    """Write an entry atomically; on any OS error warn once and carry on (compiled in memory only)."""
    d = cache_dir()
    try:
        os.makedirs(d, exist_ok=True)
        aot.write_atomic(entry_path(key), aot.pack(vmfb, meta))
    except OSError as e:
        _stats["write_errors"] += 1
        _warn_once("write:" + d, f"stagec persistent cache: cannot write to {d} ({e.strerror or e}); compiling in "
                                 f"memory only. Set STAGEC_CACHE_DIR to a writable folder, or STAGEC_CACHE=0.")
        return False
    _stats["writes"] += 1
    try:
        prune(parse_size(config.persistent_cache_max_size))
    except (OSError, ValueError) as e:
        _warn_once("prune:" + d, f"stagec persistent cache: could not prune {d}: {e}")
    return True


def _entries(d: str | None = None) -> list[tuple[str, os.stat_result]]:
    d = d or cache_dir()
    out = []
    try:
        names = os.listdir(d)
    except (FileNotFoundError, NotADirectoryError):
        return []
    for n in names:
        if n.endswith(SUFFIX):
            try:
                out.append((os.path.join(d, n), os.stat(os.path.join(d, n))))
            except FileNotFoundError:
                pass
    return out


def prune(max_size: int | str) -> int:
    """Delete least recently used entries until the cache holds at most `max_size` bytes; returns how many."""
    limit = parse_size(max_size)
    entries = sorted(_entries(), key=lambda e: e[1].st_mtime)
    total = sum(st.st_size for _, st in entries)
    removed = 0
    for path, st in entries:
        if total <= limit:
            break
        try:
            os.unlink(path)
            removed += 1
        except FileNotFoundError:
            pass
        total -= st.st_size
    return removed


def clear() -> int:
    """Delete every entry (and stale temp files); returns how many entries were removed."""
    d = cache_dir()
    n = 0
    for path, _ in _entries(d):
        try:
            os.unlink(path)
            n += 1
        except FileNotFoundError:
            pass
    try:
        for name in os.listdir(d):
            if name.startswith(".tmp-"):
                try:
                    os.unlink(os.path.join(d, name))
                except OSError:
                    pass
    except OSError:
        pass
    return n


def info() -> dict[str, Any]:
    """Entries and bytes on disk, and this process's hits and misses."""
    entries = _entries()
    return {"dir": cache_dir(), "enabled": enabled(), "entries": len(entries),
            "bytes": sum(st.st_size for _, st in entries), "max_size": parse_size(config.persistent_cache_max_size),
            **_stats}


def reset_stats() -> None:
    for k in _stats:
        _stats[k] = 0


# ---------------------------------------------------------------- compiling through the cache


def compile_module(backend, mlir: str, name: str, flags: Sequence[str], in_avals, out_avals,
                   in_tree=None, out_tree=None, donated=(), side_flags: Sequence[str] = ()
                   ) -> tuple[aot.Artifact, float, bool]:
    """(artifact, seconds, hit): the module for `mlir` from the persistent cache, else compiled (and stored).

    `side_flags` do not change the module (e.g. dumping dispatch sources): not part of the key, but
    given, they make IREE run (no lookup) so that their side effect happens."""
    t0 = time.perf_counter()
    comps = key_components(mlir, backend.target, flags)
    key = make_key(comps)
    use = enabled()
    if use and not side_flags:
        found = lookup(key)
        if found is not None:
            _stats["hits"] += 1
            vmfb, meta = found
            # The avals of this trace (weak types are not part of the MLIR, so not of the key).
            meta = dict(meta, in_avals=[aot.aval_to_json(a) for a in in_avals],
                        out_avals=[aot.aval_to_json(a) for a in out_avals])
            art = aot.Artifact(vmfb, meta, in_tree, out_tree, donated)
            return art, time.perf_counter() - t0, True
        _stats["misses"] += 1
    why = (explain_persistent_miss(name, key, comps, mlir)
           if use and not side_flags and config.explain_cache_misses else None)
    vmfb = backend.compile(mlir, name, flags, side_flags)
    seconds = time.perf_counter() - t0
    if why:
        log.warning(f"{why} [IREE compile: {seconds:.3f} s]")
    extra = {"key": key, "key_components": comps}
    if len(mlir) <= _MLIR_KEEP * 8:
        packed = base64.b64encode(zlib.compress(mlir.encode(), 6)).decode()
        if len(packed) <= _MLIR_KEEP:
            extra["mlir_z"] = packed
    meta = aot.make_meta(name, backend.target, flags, in_avals, out_avals, in_tree, out_tree, seconds, **extra)
    if use:
        store(key, vmfb, meta)
    return aot.Artifact(vmfb, meta, in_tree, out_tree, donated), seconds, False


def compile_lowered(lowered, target: str | None = None, *, arch: str | None = None, flags: Sequence[str] = (),
                    side_flags: Sequence[str] = ()):
    """`Lowered.compile`: through the persistent cache, for the jit's backend or ahead of time for `target`."""
    from .jit import Compiled
    default = lowered.jitted.backend_obj()
    backend = get_backend(find_target(target or default.name).backend)
    all_flags = backend.compile_flags(arch) + list(flags)
    graph = lowered.graph
    art, seconds, _ = compile_module(backend, lowered.as_text("final"), lowered.name, all_flags, graph.in_avals,
                                     graph.out_avals, lowered.in_tree, lowered.out_tree, lowered.donated,
                                     side_flags)
    # Load now when it runs here as the jit would; cross-compiled modules load on first call.
    entry = art.entry() if backend is default and arch is None and not flags else None
    return Compiled(entry, lowered.in_tree, seconds, artifact=art)


def compile_graph_cached(backend, mlir: str, name: str, in_avals, out_avals):
    """Eager primitives: (executable, seconds) through the persistent cache."""
    art, seconds, _ = compile_module(backend, mlir, name, backend.compile_flags(), in_avals, out_avals)
    return backend.load(art.vmfb, in_avals, out_avals, name), seconds


# ---------------------------------------------------------------- explaining misses


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


def explain_persistent_miss(name: str, key: str, comps: dict, mlir: str) -> str:
    """What differs between this key and the closest entry on disk for the same function name."""
    best = None
    for path, _ in _entries():
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
    head = f"PERSISTENT CACHE MISS for {name} (key {key[:12]}, cache {cache_dir()}): "
    if best is None:
        return head + "never compiled before with this cache (no entry for a function of this name)"
    meta, diffs = best
    old = meta["key_components"]
    why = []
    for k in diffs:
        if k == "mlir":
            line = ""
            if "mlir_z" in meta:
                try:
                    line = _first_difference(zlib.decompress(base64.b64decode(meta["mlir_z"])).decode(), mlir)
                except (ValueError, zlib.error):
                    pass
            why.append("the program (MLIR) differs — changed code, closure or global values, shapes or dtypes"
                       + (f"; first changed line: {line}" if line else ""))
        elif k == "flags":
            why.append(f"compiler flags {old.get('flags')} -> {comps.get('flags')}")
        else:
            why.append(f"{k} {old.get(k)!r} -> {comps.get(k)!r}")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(meta.get("created", 0)))
    return head + f"closest earlier entry (compiled {when}) differs in: " + "; ".join(why)


_traced_code: dict[tuple, list] = {}  # code location -> (weak) references to function objects traced from it


def _same(ref, fun) -> bool:
    return (ref() if isinstance(ref, weakref.ref) else ref) is fun


def explain_trace_miss(jitted, key: tuple, labels, param_name=str) -> None:
    """Note the traced function's code; when explaining, log why `jitted` traces again: what changed
    against its closest earlier signature, or that it is a new function object for code seen before.
    `labels` is a callable giving each dynamic leaf's name (only called when explaining)."""
    from .jit import _fun_desc
    fun = jitted.fun
    code = _code_of(fun)
    where = (code.co_filename, code.co_firstlineno, code.co_name) if code is not None else None
    seen = _traced_code.setdefault(where, []) if where else []
    new_object = bool(seen) and not any(_same(r, fun) for r in seen)
    if new_object or not seen:
        try:
            seen.append(weakref.ref(fun))
        except TypeError:
            seen.append(fun)
        del seen[:-8]
    if not config.explain_cache_misses:
        return
    head = f"TRACING CACHE MISS for {_fun_desc(fun)}, called from {_call_site()}: "
    earlier = [k for k in jitted._cache if k != key]
    if not earlier:
        if new_object:
            log.warning(head + "a new function object: another function object with the same code was traced "
                        "before. Caches live on the function object, so a lambda, closure or functools.partial "
                        "created anew for each call retraces and recompiles; create it once and reuse it.")
        else:
            log.warning(head + "never seen this function before (first trace)")
        return
    labels = labels()
    best = min(earlier, key=lambda k: len(_key_diffs(k, key, labels, param_name)))
    log.warning(head + "; ".join(_key_diffs(best, key, labels, param_name)) + f" ({len(earlier)} earlier signature(s); "
                "closest shown)")


def _call_site() -> str:
    """file:line of the innermost caller outside stagec."""
    import sys
    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(here):
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else "?"


def _code_of(f):
    f = getattr(f, "func", f)
    return getattr(f, "__code__", None)


def _tree_diffs(old, new, param_name, static_positions: set) -> list[str]:
    """Which argument's pytree structure changed, for trees of `(dynamic args, dynamic kwargs)`."""
    from .tree_util import PyTreeDef
    if not (isinstance(old, PyTreeDef) and isinstance(new, PyTreeDef) and len(old.children) == len(new.children) == 2):
        return [f"the argument structure changed from {old} to {new}"]
    (oa, okw), (na, nkw) = old.children, new.children
    out = []
    if len(oa.children) != len(na.children):
        out.append(f"the number of positional (non-static) arguments changed from {len(oa.children)} to "
                   f"{len(na.children)}")
    else:
        positions = [i for i in range(len(na.children) + len(static_positions)) if i not in static_positions]
        for j, (a, b) in enumerate(zip(oa.children, na.children)):
            if a != b:
                name = param_name(positions[j]) if j < len(positions) else f"#{j}"
                out.append(f"argument {name!r} structure changed from {a._str()} to {b._str()}")
    if okw != nkw:
        ok, nk = dict(zip(okw.aux or (), okw.children)), dict(zip(nkw.aux or (), nkw.children))
        if set(ok) != set(nk):
            out.append(f"keyword arguments changed from {sorted(ok)} to {sorted(nk)}")
        for k in sorted(set(ok) & set(nk)):
            if ok[k] != nk[k]:
                out.append(f"argument {k!r} structure changed from {ok[k]._str()} to {nk[k]._str()}")
    return out or [f"the argument structure changed from {old} to {new}"]


def _key_diffs(old: tuple, new: tuple, labels: Sequence[str], param_name=str) -> list[str]:
    (otree, oavals, ostat, oback, ocfg), (ntree, navals, nstat, nback, ncfg) = old, new
    out = []
    if otree != ntree:
        out += _tree_diffs(otree, ntree, param_name, {s[1] for s in nstat if s[0] == "#"})
    elif len(oavals) == len(navals):
        for i, (a, b) in enumerate(zip(oavals, navals)):
            name = repr(labels[i]) if i < len(labels) else f"#{i}"
            if a.shape != b.shape:
                out.append(f"argument {name} shape changed from {a.str_short()} to {b.str_short()}")
            elif a.dtype != b.dtype:
                out.append(f"argument {name} dtype changed from {a.dtype} to {b.dtype}")
            elif a.weak_type != b.weak_type:
                out.append(f"argument {name} weak_type changed from {a.weak_type} to {b.weak_type} (a Python "
                           f"scalar is weakly typed, an array is not)")
    if ostat != nstat:
        od = {param_name(s[1]) if s[0] == "#" else s[1]: s[2] for s in ostat}
        nd = {param_name(s[1]) if s[0] == "#" else s[1]: s[2] for s in nstat}
        for k in sorted(set(od) | set(nd), key=str):
            if od.get(k, "<absent>") != nd.get(k, "<absent>"):
                out.append(f"static argument {k!r} changed from {od.get(k, '<absent>')!r:.60} to "
                           f"{nd.get(k, '<absent>')!r:.60}")
    if oback != nback:
        out.append(f"backend changed from {oback!r} to {nback!r}")
    if ocfg != ncfg:
        oc, nc = dict(ocfg), dict(ncfg)
        for k in sorted(set(oc) | set(nc)):
            if oc.get(k) != nc.get(k):
                out.append(f"config flag {k} changed from {oc.get(k)} to {nc.get(k)}")
    return out or ["a signature equal to an earlier one (the cache entry was dropped?)"]
