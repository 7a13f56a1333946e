"""Persistent compilation cache: compiled IREE modules on disk, keyed by what IREE was given (storage only:
the compile step that uses it is `stages.compile_cached`).

Key: sha256 over the MLIR IREE receives (after the target's whole pipeline, legalization and offloads included), the
IREE target, the compiler flags (and the files they name: the CPU tuning spec), the host CPU (when compiling for
`host`), the IREE compiler version, the stagec version and a digest of the compile side's source
(`stagec.compiler.driver.source_digest`: a changed rewrite or flag rule recompiles). A module IREE compiled only as
a variant of the request (`stagec.compiler.retries`) is stored under the variant's key (its flags and retries), and
the request's key holds a pointer naming the variant (`store_variant_pointer`). Entry: one file
`<key>.stagec` in the `stagec.aot` format (module + calling metadata + checksum), written
atomically (temp file `.tmp-*.part` + rename; temp files a killed writer left behind are counted by
`info` and removed by `prune` and `clear` once `ORPHAN_AGE` old); entries are signed with the user's
key (`aot.key_path`), so one written by another user or program is rejected; its modification time is its last use (LRU eviction past
`persistent_cache_max_size`). A corrupt entry is reported once, recompiled and replaced; a
directory that cannot be written degrades to a warning and in-memory compilation.

Location: `$STAGEC_CACHE_DIR`, else `$XDG_CACHE_HOME/stagec`, else `~/.cache/stagec`.
Off: `STAGEC_CACHE=0` or `stagec.config.update("persistent_cache", False)`.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import time
import warnings
import zlib
from typing import Any, Callable, Sequence

from . import aot
from .compiler import driver
from .compiler.driver import flag_files, key_flags
from .compiler.targets import host_id
from .config import config

SUFFIX = ".stagec"
_stats = {"hits": 0, "misses": 0, "writes": 0, "write_errors": 0, "corrupt": 0}
_warned: set[str] = set()
ORPHAN_AGE = 300  # seconds after which a temp file is a killed writer's leftover, not a write in progress
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


def key_components(mlir: str | None, target: str, flags: Sequence[str], recipe: dict | None = None) -> dict:
    """What a module depends on: the MLIR IREE receives (or the `recipe` it is built from, when the caller has
    one: `stages.compile_cached`), target, flags, versions, the compile side's source, and the host CPU for
    `host`. (A module compiled as a variant of its request: `variant_components`.)"""
    made_of = {"mlir": hashlib.sha256(mlir.encode()).hexdigest()} if recipe is None else {"recipe": recipe}
    comps = {**made_of, "target": target, "flags": key_flags(flags),
             "iree": aot.iree_compiler_version(), "stagec": aot.stagec_version(), "compiler": driver.source_digest()}
    if any(f.endswith("target-cpu=host") for f in flags):
        comps["host"] = host_id()
    if files := flag_files(flags):
        comps["files"] = files
    return comps


def variant_components(components: dict, flags: Sequence[str], variant: Sequence[str]) -> dict:
    """The key components of the module compiled as `variant` of a request (`compiler.retries`: the retries taken,
    in order) with `flags` (the variant's): the request's text or recipe, the variant's names and its flags."""
    comps = {k: v for k, v in components.items() if k not in ("flags", "files", "variant")}
    comps.update(variant=list(variant), flags=key_flags(flags))
    if files := flag_files(flags):
        comps["files"] = files
    return comps


def make_key(components: dict) -> str:
    return hashlib.sha256(json.dumps(components, sort_keys=True).encode()).hexdigest()


def entry_path(key: str) -> str:
    return os.path.join(cache_dir(), key + SUFFIX)


# ---------------------------------------------------------------- get / put


def lookup(key: str, follow: Callable[[list], str | None] | None = None):
    """(module, metadata) for `key`, or None (a hit or a miss, counted). A corrupt entry is reported
    once and removed. Where the entry is a pointer to a variant (`store_variant_pointer`), `follow(variant)` gives
    that variant's key (None: a miss) and its entry is the answer (one hit or miss in all)."""
    path = entry_path(key)
    try:
        vmfb, meta = aot.read(path)
        if meta.get("key") != key:
            raise aot.ArtifactError(f"{path}: holds key {str(meta.get('key'))[:16]}..., not its file name")
    except (FileNotFoundError, NotADirectoryError):
        _stats["misses"] += 1
        return None
    except (aot.ArtifactError, OSError, ValueError, MemoryError) as e:
        _stats["misses"] += 1
        _stats["corrupt"] += 1
        _warn_once("corrupt:" + path, f"stagec persistent cache: ignoring a bad entry ({e}); recompiling and "
                                      f"replacing it")
        _remove(path)
        return None
    try:
        os.utime(path)  # last use, for LRU eviction
    except OSError:
        pass
    if "compiled_as" in meta:
        to = follow(meta["compiled_as"]) if follow is not None else None
        if to is None:
            _stats["misses"] += 1
            return None
        return lookup(to)
    _stats["hits"] += 1
    return vmfb, meta


def store_variant_pointer(key: str, name: str, components: dict, variant: Sequence[str]) -> bool:
    """Write an entry saying that the request keyed `key` compiled as `variant` (held under its own key,
    `variant_components`): a later request finds that module through it, or compiles again where the variant's
    key changed (a retry's flags, the compile side's source)."""
    meta = {"format": aot.FORMAT, "name": name, "key": key, "key_components": components, "compiled_as": list(variant)}
    return store(key, b"", meta)


def _remove(path: str) -> None:
    """Remove a bad entry: a file, or a directory planted at an entry's path (not followed if a link)."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except OSError:
        pass


def store(key: str, vmfb: bytes, meta: dict, mlir: str | None = None) -> bool:
    """Write an entry atomically, with `mlir` compressed in it when small (for explaining later misses);
    on any OS error warn once and carry on (compiled in memory only)."""
    d = cache_dir()
    if mlir is not None and len(mlir) <= _MLIR_KEEP * 8:
        packed = base64.b64encode(zlib.compress(mlir.encode(), 6)).decode()
        if len(packed) <= _MLIR_KEEP:
            meta = dict(meta, mlir_z=packed)
    try:
        os.makedirs(d, exist_ok=True)
        if os.path.isdir(entry_path(key)):
            _remove(entry_path(key))
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


def entry_mlir(meta: dict) -> str | None:
    """The MLIR an entry was compiled from, when `store` kept it."""
    try:
        return zlib.decompress(base64.b64decode(meta["mlir_z"])).decode()
    except (KeyError, TypeError, ValueError, zlib.error):
        return None


def entries(d: str | None = None) -> list[tuple[str, os.stat_result]]:
    """(path, stat) of every entry in the cache folder."""
    d = d or cache_dir()
    out = []
    try:
        names = os.listdir(d)
    except (FileNotFoundError, NotADirectoryError):
        return []
    for n in names:
        if n.endswith(SUFFIX) and not n.startswith("."):
            try:
                out.append((os.path.join(d, n), os.stat(os.path.join(d, n))))
            except FileNotFoundError:
                pass
    return out


def orphans(d: str | None = None, min_age: float = 0) -> list[tuple[str, os.stat_result]]:
    """(path, stat) of the temp files in the cache folder at least `min_age` seconds old."""
    d = d or cache_dir()
    try:
        names = os.listdir(d)
    except (FileNotFoundError, NotADirectoryError):
        return []
    now, out = time.time(), []
    for n in names:
        if n.startswith(".tmp-") and n.endswith(".part"):
            try:
                st = os.lstat(os.path.join(d, n))
            except FileNotFoundError:
                continue
            if now - st.st_mtime >= min_age:
                out.append((os.path.join(d, n), st))
    return out


def _sweep(d: str | None = None) -> None:
    """Remove temp files left by writers killed more than `ORPHAN_AGE` seconds ago."""
    for path, _ in orphans(d, ORPHAN_AGE):
        try:
            os.unlink(path)
        except OSError:
            pass


def prune(max_size: int | str) -> int:
    """Delete least recently used entries until the cache holds at most `max_size` bytes (and old temp files);
    returns how many entries."""
    limit = parse_size(max_size)
    _sweep()
    found = entries()
    if sum(st.st_size for _, st in found) <= limit:
        return 0
    # this user's entries only: a foreign file (another user's, a planted one) neither counts nor is removed
    found = sorted(((p, st) for p, st in found if aot.signed(p)), key=lambda e: e[1].st_mtime)
    total = sum(st.st_size for _, st in found)
    removed = 0
    for path, st in found:
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
    """Delete every entry (and temp files older than `ORPHAN_AGE`); returns how many entries were removed."""
    d = cache_dir()
    n = 0
    for path, _ in entries(d):
        try:
            os.unlink(path)
            n += 1
        except FileNotFoundError:
            pass
    _sweep(d)
    return n


def info() -> dict[str, Any]:
    """Entries and bytes on disk (temp files counted apart), and this process's hits and misses."""
    found, temps = entries(), orphans()
    return {"dir": cache_dir(), "enabled": enabled(), "entries": len(found),
            "bytes": sum(st.st_size for _, st in found), "temp_files": len(temps),
            "temp_bytes": sum(st.st_size for _, st in temps), "max_size": parse_size(config.persistent_cache_max_size),
            **_stats}


def reset_stats() -> None:
    for k in _stats:
        _stats[k] = 0
