"""Saved compiled functions: one self-describing file, loadable with only `iree.runtime` and numpy.

Layout (also the layout of persistent-cache entries)::

    [IREE module (.vmfb), unchanged][zero padding to 64 bytes][metadata JSON][trailer, 88 bytes]
    trailer = vmfb length (u64 LE), metadata length (u64 LE), d = sha256(vmfb + metadata),
              HMAC-SHA256(user key, d), b"STAGEC\\x00\\x02"

The module comes first, so `iree-run-module --module=f.stagec` runs the file as it is (IREE ignores
the bytes after the module). Reading copies the whole file into memory once and checks it there, so
a file rewritten or truncated later changes nothing. The checksum catches truncated or corrupted
files; the HMAC, keyed by a per-user secret (`key_path()`), shows the file was written by this user's
stagec: cache entries without it are recompiled, artifacts without it load only with `trust=True`.
Nothing here imports `iree.compiler`.
"""
from __future__ import annotations

import collections
import hashlib
import hmac
import importlib
import importlib.util
import json
import os
import secrets
import stat
import struct
import tempfile
import time
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from . import _version, tree_util
from .backend import KnownRuntimeBug, get_backend
from .compiler.targets import IREE_TARGETS, host_id
from .core import ShapedArray, aval_of
from .errors import StagecError
from .lowering import BLAS_MODULE, HOST_ABI, LAPACK_MODULE, SORT_MODULE, HostCall
from .runner import Runner

FORMAT = 2
MAGIC = b"STAGEC\x00\x02"
_TRAILER = struct.Struct("<QQ32s32s8s")
_ALIGN = 64


class ArtifactError(StagecError, ValueError):
    """A saved artifact or cache entry is malformed, corrupt, or from another stagec/IREE version."""


class MissingCallbackError(StagecError, TypeError):
    """A loaded function calls a host (Python) callback that `stagec.load(..., callbacks=)` did not provide."""


# ---------------------------------------------------------------- versions


_versions: dict[str, str] = {}


def _iree_version(package: str) -> str:
    """`VERSION@revision` of `iree.compiler` or `iree.runtime`. The compiler's is read from its generated
    `version.py` without importing the package (that costs ~0.17 s; a cache hit by recipe needs none of it)."""
    if package not in _versions:
        mod = None
        if package == "compiler":
            try:
                spec = importlib.util.find_spec("iree.compiler")
                path = os.path.join(spec.submodule_search_locations[0], "version.py")
                scope: dict = {"__name__": "iree.compiler.version"}
                with open(path) as f:
                    exec(compile(f.read(), path, "exec"), scope)  # (constants IREE's build generated)
                mod = type("version", (), scope)
            except Exception:  # another layout: import it
                mod = None
        if mod is None:
            try:
                mod = importlib.import_module(f"iree.{package}.version")
            except ImportError:
                _versions[package] = "unknown"
                return _versions[package]
        rev = (getattr(mod, "REVISIONS", None) or {}).get("IREE", "")
        _versions[package] = f"{mod.VERSION}@{rev[:12]}" if rev else mod.VERSION
    return _versions[package]


def stagec_version() -> str:
    return _version.__version__


def iree_compiler_version() -> str:
    return _iree_version("compiler")


def iree_runtime_version() -> str:
    return _iree_version("runtime")


# ---------------------------------------------------------------- metadata encoding


def aval_to_json(a: ShapedArray) -> dict:
    return {"shape": list(a.shape), "dtype": a.dtype.name, "weak_type": a.weak_type}


def aval_from_json(d: dict) -> ShapedArray:
    return ShapedArray(tuple(d["shape"]), np.dtype(d["dtype"]), d.get("weak_type", False))


def tree_to_json(td: tree_util.PyTreeDef) -> dict:
    """A JSON form of a pytree structure; raises TypeError for structures it cannot describe."""
    nt = td.node_type
    kids = [tree_to_json(c) for c in td.kids]
    if nt is None:
        return {"t": "*"}
    if nt is tuple or nt is list:
        return {"t": nt.__name__, "c": kids}
    if nt is type(None):
        return {"t": "None"}
    if nt is dict or nt is collections.OrderedDict:
        if not all(isinstance(k, str) for k in td.aux):
            raise TypeError(f"cannot save a dict pytree with non-string keys {list(td.aux)!r}")
        return {"t": "dict" if nt is dict else "OrderedDict", "keys": list(td.aux), "c": kids}
    qual = f"{nt.__module__}:{nt.__qualname__}"
    if issubclass(nt, tuple) and hasattr(nt, "_fields"):
        return {"t": "namedtuple", "class": qual, "fields": list(nt._fields), "c": kids}
    try:
        aux = json.loads(json.dumps(td.aux))
    except TypeError:
        raise TypeError(f"cannot save pytree node {qual} whose metadata {td.aux!r:.80} is not JSON") from None
    return {"t": "custom", "class": qual, "aux": aux, "aux_is_tuple": isinstance(td.aux, tuple), "c": kids}


def _import_class(qual: str):
    mod, _, name = qual.partition(":")
    obj = importlib.import_module(mod)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def tree_from_json(d: dict) -> tree_util.PyTreeDef:
    t = d["t"]
    kids = tuple(tree_from_json(c) for c in d.get("c", ()))
    if t == "*":
        return tree_util.PyTreeDef(None, None, ())
    if t in ("tuple", "list"):
        return tree_util.PyTreeDef(tuple if t == "tuple" else list, None, kids)
    if t == "None":
        return tree_util.PyTreeDef(type(None), None, ())
    if t in ("dict", "OrderedDict"):
        return tree_util.PyTreeDef(dict if t == "dict" else collections.OrderedDict, tuple(d["keys"]), kids)
    if t == "namedtuple":
        try:
            cls = _import_class(d["class"])
        except (ImportError, AttributeError):
            cls = collections.namedtuple(d["class"].rpartition(".")[2].rpartition(":")[2], d["fields"])
        return tree_util.PyTreeDef(cls, None, kids)
    if t == "custom":
        try:
            cls = _import_class(d["class"])
        except (ImportError, AttributeError) as e:
            raise ArtifactError(f"pytree node class {d['class']} is not importable here ({e})") from None
        aux = d["aux"]
        return tree_util.PyTreeDef(cls, tuple(aux) if d.get("aux_is_tuple") else aux, kids)
    raise ArtifactError(f"unknown pytree node kind {t!r}")


def describe_tree(d: Any) -> str:
    """A pytree structure's JSON form (`tree_to_json`) as text, naming its classes without importing anything
    (for describing a file nobody vouched for: `stagec dump x.stagec --html`)."""
    if not isinstance(d, dict):
        return "?"
    kids = [describe_tree(c) for c in d.get("c", ())] if isinstance(d.get("c", ()), list) else ["?"]
    t = d.get("t")
    if t == "*":
        return "*"
    if t == "None":
        return "None"
    if t == "tuple":
        return f"({', '.join(kids)}{',' if len(kids) == 1 else ''})"
    if t == "list":
        return f"[{', '.join(kids)}]"
    if t in ("dict", "OrderedDict") and isinstance(d.get("keys"), list):
        return "{" + ", ".join(f"{str(k)!r}: {v}" for k, v in zip(d["keys"], kids)) + "}"
    if t in ("namedtuple", "custom"):
        return f"{str(d.get('class'))[:200]}({', '.join(kids)})"
    return "?"


class ShapeDtypeStruct:
    """A shape and dtype standing for an argument, so `jitted.lower(...)` needs no data."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape: Sequence[int], dtype, weak_type: bool = False):
        self.shape, self.dtype, self.weak_type = tuple(int(d) for d in shape), np.dtype(dtype), bool(weak_type)
        if any(d < 0 for d in self.shape):
            raise ValueError(f"ShapeDtypeStruct: shape {self.shape} has a negative dimension")

    @property
    def aval(self) -> ShapedArray:
        from .dtypes import canonicalize
        return ShapedArray(self.shape, canonicalize(self.dtype, warn_from="ShapeDtypeStruct"), self.weak_type)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype, self.weak_type)
                == (other.shape, other.dtype, other.weak_type))

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self):
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{', weak_type=True' if self.weak_type else ''})"


# ---------------------------------------------------------------- file format


_key: bytes | None = None


def key_path() -> str:
    """The per-user secret that signs artifacts and cache entries: `$STAGEC_KEY_FILE`, else
    `$XDG_CONFIG_HOME/stagec/key`, else `~/.config/stagec/key` (32 random bytes, mode 0600, made on first use)."""
    p = os.environ.get("STAGEC_KEY_FILE")
    if p:
        return os.path.abspath(os.path.expanduser(p))
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(xdg, "stagec", "key")


def _secret() -> bytes:
    """This user's signing key, read (or created) once per process. A key file that is not a private regular
    file of this user, or that cannot be made, gives a warning and a key for this process alone."""
    global _key
    if _key is None:
        path = key_path()
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            if not os.path.lexists(path):
                _make_key(path)
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                key = f.read(64)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077 or len(key) != 32:
                raise OSError(f"not a 32-byte regular file of this user with mode 0600 (mode {st.st_mode:o})")
            _key = key
        except OSError as e:
            warnings.warn(f"stagec: cannot use the signing key {path} ({e}); signing with a key for this process "
                          f"alone (cached modules will not be reused across processes)", RuntimeWarning, stacklevel=3)
            _key = secrets.token_bytes(32)
    return _key


def _make_key(path: str) -> None:
    """Create the key file whole or not at all: written under a private name, then linked to `path` (which fails
    if another process made it first). Created in place, a process starting at the same moment read it while
    it was still empty and signed with a key of its own, which no other process could verify."""
    tmp = f"{path}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)


def _mac(digest: bytes) -> bytes:
    return hmac.new(_secret(), digest, hashlib.sha256).digest()


def pack(vmfb: bytes, meta: dict) -> bytes:
    """The bytes of an artifact holding `vmfb` and `meta`, signed with this user's key."""
    body = json.dumps(meta, sort_keys=True).encode()
    pad = b"\0" * (-len(vmfb) % _ALIGN)
    digest = hashlib.sha256(vmfb)
    digest.update(body)
    d = digest.digest()
    return b"".join([vmfb, pad, body, _TRAILER.pack(len(vmfb), len(body), d, _mac(d), MAGIC)])


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old file or the whole new one, never a part."""
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def open_regular(path: str):
    """`path` opened for binary reading, without blocking (a FIFO never hangs), or ArtifactError unless it is
    a regular file. Raises FileNotFoundError as `open` does."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise ArtifactError(f"{path}: is {kind}, not a stagec artifact")
    return os.fdopen(fd, "rb")


def _sections(path: str, size: int, trailer: bytes) -> tuple[int, int, int, bytes, bytes]:
    """(module length, metadata offset, metadata length, checksum, mac) from an artifact's trailer."""
    if size < _TRAILER.size:
        raise ArtifactError(f"{path}: not a stagec artifact ({size} bytes, too short for its trailer)")
    vmfb_len, meta_len, digest, mac, magic = _TRAILER.unpack(trailer)
    if magic != MAGIC:
        if magic[:6] == MAGIC[:6] or trailer[-8:-2] == MAGIC[:6]:
            raise ArtifactError(f"{path}: stagec artifact format {trailer[-2:]!r} is not the one this stagec reads "
                                f"({MAGIC[6:]!r}); recompile it with stagec {stagec_version()}")
        raise ArtifactError(f"{path}: not a stagec artifact (no stagec trailer; truncated, or a plain IREE "
                            f"module? run plain .vmfb files with iree-run-module)")
    body_at = vmfb_len + (-vmfb_len % _ALIGN)
    if body_at + meta_len + _TRAILER.size != size:
        raise ArtifactError(f"{path}: corrupt stagec artifact (section lengths {vmfb_len}+{meta_len} do not "
                            f"match the file size {size})")
    return vmfb_len, body_at, meta_len, digest, mac


def _parse_meta(path: str, body: bytes) -> dict:
    try:
        meta = json.loads(body)
    except ValueError as e:
        raise ArtifactError(f"{path}: corrupt stagec artifact metadata ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ArtifactError(f"{path}: stagec artifact format {meta.get('format') if isinstance(meta, dict) else '?'}"
                            f" is not {FORMAT}, the one this stagec reads")
    return meta


def read(path: str | os.PathLike, trust: bool = False) -> tuple[memoryview, dict]:
    """(module bytes, metadata) of an artifact, read into memory once and checked there (a later change to
    the file changes nothing); ArtifactError unless it is sound and signed with this user's key (with
    `trust`, a sound file signed by anyone)."""
    path = os.fspath(path)
    with open_regular(path) as f:  # (the trailer first: a file whose sections or signature do not hold is not read)
        size = os.fstat(f.fileno()).st_size
        f.seek(max(size - _TRAILER.size, 0))
        vmfb_len, body_at, meta_len, digest, mac = _sections(path, size, f.read(_TRAILER.size))
        if not trust and not hmac.compare_digest(_mac(digest), mac):
            raise ArtifactError(f"{path}: not signed with this user's stagec key ({key_path()}): written by another "
                                f"user, machine or program. Loading runs its native code: pass trust=True (stagec "
                                f"run --trust) only if you trust where it came from")
        f.seek(0)
        data = f.read(size)
    if len(data) != size:
        raise ArtifactError(f"{path}: corrupt stagec artifact (changed while read)")
    view = memoryview(data)
    h = hashlib.sha256(view[:vmfb_len])
    h.update(view[body_at:body_at + meta_len])
    if h.digest() != digest or any(view[vmfb_len:body_at]):  # (the padding is zeros, outside the checksum)
        raise ArtifactError(f"{path}: corrupt stagec artifact (checksum mismatch)")
    return view[:vmfb_len], _parse_meta(path, data[body_at:body_at + meta_len])


def signed(path: str | os.PathLike) -> bool:
    """Whether a file's trailer is signed with this user's key (its trailer alone is read: no checksum)."""
    try:
        with open_regular(os.fspath(path)) as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(size - _TRAILER.size, 0))
            _, _, _, digest, mac = _sections(os.fspath(path), size, f.read(_TRAILER.size))
    except (ArtifactError, OSError):
        return False
    return hmac.compare_digest(_mac(digest), mac)


def read_meta(path: str | os.PathLike) -> dict:
    """An artifact's metadata alone, without reading or checking its module or signature (for describing
    files, never for running them); ArtifactError if malformed."""
    path = os.fspath(path)
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(max(size - _TRAILER.size, 0))
        _, body_at, meta_len, _, _ = _sections(path, size, f.read(_TRAILER.size))
        f.seek(body_at)
        return _parse_meta(path, f.read(meta_len))


# ---------------------------------------------------------------- compiled artifacts


class Artifact:
    """A compiled module plus what calling it needs: avals, pytree structures, target, versions."""

    def __init__(self, vmfb: bytes | memoryview, meta: dict, in_tree=None, out_tree=None, donated=(),
                 host_calls: Sequence = ()):
        self.vmfb, self.meta = vmfb, meta
        self.host_calls = tuple(host_calls)  # lowering.HostCall: Python functions the module imports
        if self.host_calls and "host_calls" not in meta:  # saved, so that a loaded artifact says what it needs
            meta["host_calls"] = [{"name": h.name, "function": callback_function(h.name), "token": h.token,
                                   "in_avals": [aval_to_json(a) for a in h.in_avals],
                                   "out_avals": [aval_to_json(a) for a in h.out_avals]} for h in self.host_calls]
        self.in_avals = [aval_from_json(a) for a in meta["in_avals"]]
        self.macs = meta.get("macs", 0)  # the module's multiply-adds in all (absent: 0)
        self.work = meta.get("work")  # its largest op's work: picks its CPU driver (absent: by size, `Executable`)
        for k in ("macs", "work"):
            v = getattr(self, k)
            if (v is not None or k == "macs") and (type(v) is not int or v < 0):
                raise ValueError(f"{k!r} is {v!r}, not a count")
        self.out_avals = [aval_from_json(a) for a in meta["out_avals"]]
        self.in_tree = in_tree if in_tree is not None or meta.get("in_tree") is None else tree_from_json(meta["in_tree"])
        self.out_tree = (out_tree if out_tree is not None or meta.get("out_tree") is None
                         else tree_from_json(meta["out_tree"]))
        self.donated = tuple(donated)

    def __reduce__(self):  # (the module's bytes as bytes: a cache entry's are a memoryview; not its MLIR)
        meta = {k: v for k, v in self.meta.items() if k != "mlir_z"}
        return Artifact, (bytes(self.vmfb), meta, self.in_tree, self.out_tree, self.donated, self.host_calls)

    @property
    def name(self) -> str:
        return self.meta["name"]

    @property
    def target(self) -> str:
        return self.meta["target"]

    def runner(self, source: str | None = None) -> Runner:
        """Load the module on this machine's runtime for its target."""
        backend = get_backend(IREE_TARGETS[self.target].backend)
        try:  # (a driver missing here raises in `Backend.hal`, naming the drivers there are)
            exe = backend.load(self.vmfb, self.in_avals, self.out_avals, self.name, self.host_calls, macs=self.macs,
                               work=self.work)
        except KnownRuntimeBug:  # (the module's own fault, named there: not this machine's)
            raise
        except RuntimeError as e:
            raise RuntimeError(f"{source or self.name}: cannot load the {self.target} module on this machine: {e}") from None
        return Runner(exe, self.out_tree, self.donated)

    def check_call(self, who: str, args: tuple, kwargs: dict) -> list:
        """The flat leaves of a call, or a TypeError naming `who` unless they are what was compiled for."""
        leaves, tree = tree_util.tree_flatten((args, kwargs))
        want, sig = self.in_avals, _sig(self.in_avals)
        try:
            got = [aval_of(x) for x in leaves]
        except TypeError:
            raise invalid_argument(who, _call_labels(args, kwargs), leaves) from None
        if tree != self.in_tree or len(got) != len(want):
            raise TypeError(f"{who} takes arguments structured as {self.in_tree} with leaves {sig}; called with {tree}")
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if g.shape != w.shape or g.dtype != w.dtype]
        if bad:
            i = bad[0]
            raise TypeError(f"{who} expects argument {i} to be {want[i].str_short()}, got {got[i].str_short()} "
                            f"(it takes {sig}, called with {_sig(got)})")
        return leaves


    def save(self, path: str | os.PathLike, host_modules: bool = False) -> None:
        """Write one self-describing file (module + calling metadata + versions). A module whose matmuls or sorts
        call NumPy (compiled with `host_blas`) runs only in stagec, with host modules of its ABI (`HOST_ABI`, in
        the file) and that machine's BLAS: saved only when `host_modules` asks for it."""
        offloads = [m for m in self.meta.get("host_modules") or () if m in (BLAS_MODULE, SORT_MODULE, LAPACK_MODULE)]
        if offloads and not host_modules:
            raise ValueError(f"cannot save {self.name} to {os.fspath(path)} as it is: its module imports stagec's "
                             f"host modules {offloads} (large matmuls or long sorts call NumPy), so it runs only "
                             f"through stagec.load, and IREE's own tools cannot run it. Compile it with "
                             f"host_blas=False (`stagec compile` without --host-blas) for an artifact that runs "
                             f"anywhere IREE does, or pass host_modules=True to save it as it is.")
        meta = {k: v for k, v in self.meta.items() if k not in ("key", "mlir_z")}  # cache-only fields
        try:
            meta["in_tree"], meta["out_tree"] = tree_to_json(self.in_tree), tree_to_json(self.out_tree)
        except TypeError as e:
            raise TypeError(f"cannot save compiled function {self.name} to {os.fspath(path)}: {e}") from None
        write_atomic(path, pack(bytes(self.vmfb), meta))


def _sig(avals) -> str:
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def _call_labels(args: tuple, kwargs: dict) -> list[str]:
    return ([f"args{p}" for p in tree_util.leaf_paths(args)]
            + [f"{k}{p}" for k in sorted(kwargs) for p in tree_util.leaf_paths(kwargs[k])])


def invalid_argument(who: str, labels: Sequence[str], leaves: Sequence,
                     hint: Callable[[str], str] = lambda label: "") -> TypeError:
    """The error for the first of `leaves` that is not an array or scalar, named by its label."""
    for label, leaf in zip(labels, leaves):
        try:
            aval_of(leaf)
        except TypeError:
            return TypeError(f"{who}: argument '{label}' of type {type(leaf).__name__} is not a valid stagec type "
                             f"(arrays, NumPy arrays and Python scalars are, in tuples, lists, dicts or registered "
                             f"pytrees).{hint(label)}")
    return TypeError(f"{who}: invalid arguments")


def make_meta(name: str, target: str, flags: Sequence[str], in_avals, out_avals, in_tree, out_tree,
              compile_seconds: float, **extra) -> dict:
    meta = {"format": FORMAT, "name": name, "target": target, "flags": list(flags),
            "versions": {"stagec": stagec_version(), "iree": iree_compiler_version()},
            "in_avals": [aval_to_json(a) for a in in_avals], "out_avals": [aval_to_json(a) for a in out_avals],
            "compile_seconds": round(compile_seconds, 6), "created": time.time()}
    for k, td in (("in_tree", in_tree), ("out_tree", out_tree)):
        try:
            meta[k] = tree_to_json(td) if td is not None else None
        except TypeError:
            meta[k] = None
    meta.update(extra)
    return meta


# ---------------------------------------------------------------- loading saved functions


class LoadedFunction:
    """A function loaded by `stagec.load`: takes and returns the pytrees the compiled one did.

    `host_calls` names the host callbacks its module calls; `missing` those not provided (calling it raises
    MissingCallbackError)."""

    def __init__(self, path: str, artifact: Artifact, missing: Sequence[str] = ()):
        self.path, self.artifact, self.missing = path, artifact, tuple(missing)
        self._runner: Runner | None = None

    @property
    def in_avals(self) -> list[ShapedArray]:
        return self.artifact.in_avals

    @property
    def out_avals(self) -> list[ShapedArray]:
        return self.artifact.out_avals

    @property
    def meta(self) -> dict:
        return self.artifact.meta

    @property
    def host_calls(self) -> list[str]:
        return [h["name"] for h in self.meta.get("host_calls") or ()]

    def signature(self) -> str:
        return _sig(self.in_avals)

    def __call__(self, *args, **kwargs) -> Any:
        if self.missing:
            raise MissingCallbackError(_missing_message(self.path, self.artifact.name, self.meta, self.missing))
        leaves = self.artifact.check_call(f"{self.path}: {self.artifact.name}", args, kwargs)
        if self._runner is None:
            self._runner = self.artifact.runner(self.path)
        return self._runner(leaves)

    def __repr__(self):
        calls = f", calling host callbacks {', '.join(self.host_calls)}" if self.host_calls else ""
        return (f"<stagec function {self.artifact.name}{self.signature()} for {self.artifact.target} from "
                f"{self.path}{calls}>")


def callback_function(name: str) -> str:
    """The Python function's name in a host call's name (`boom_1` -> `boom`)."""
    return name.rpartition("_")[0] or name


def _host_call_sig(h: dict) -> str:
    ins = [aval_from_json(a).str_short() for a in h["in_avals"]]
    outs = [aval_from_json(a).str_short() for a in h["out_avals"]]
    return f"({', '.join(ins)}) -> ({', '.join(outs)})"


def _missing_message(path: str, name: str, meta: dict, missing: Sequence[str]) -> str:
    calls = {h["name"]: h for h in meta.get("host_calls") or ()}
    listed = "; ".join(f"{m} {_host_call_sig(calls[m])}" for m in missing)
    example = ", ".join(f"{calls[m].get('function', callback_function(m))!r}: fn" for m in missing)
    return (f"{path}: {name} calls host callback(s) not provided: {listed}. Pass them when loading: "
            f"stagec.load(path, callbacks={{{example}}}) (each takes NumPy arrays, returns the results)")


def _loaded_host_calls(path: str, meta: dict, callbacks: dict) -> tuple[list[HostCall], list[str]]:
    """The host calls an artifact's module imports, bound to `callbacks` (by host-call or function name),
    and the names of those not provided."""
    needed = meta.get("host_calls") or []
    known = {h["name"] for h in needed} | {h.get("function", callback_function(h["name"])) for h in needed}
    unknown = sorted(k for k in callbacks if k not in known)
    if unknown:
        raise MissingCallbackError(f"{path}: callbacks {unknown} are not called by {meta.get('name')}; it calls "
                                   f"{sorted(known) or 'none'}")
    calls, missing = [], []
    for h in needed:
        fn = callbacks.get(h["name"], callbacks.get(h.get("function", callback_function(h["name"]))))
        if fn is None:
            missing.append(h["name"])
            continue
        in_avals = tuple(aval_from_json(a) for a in h["in_avals"])
        out_avals = tuple(aval_from_json(a) for a in h["out_avals"])
        calls.append(HostCall(h["name"], _checked(fn, h["name"], out_avals), in_avals, out_avals,
                              bool(h.get("token"))))
    return calls, missing


def _checked(fn: Callable, name: str, out_avals: Sequence[ShapedArray]) -> Callable:
    """`fn` returning exactly `out_avals` (a lone result need not be in a tuple), or a TypeError naming it."""
    def call(*args):
        out = fn(*args)
        if not out_avals:
            return ()
        outs = [out] if len(out_avals) == 1 and not isinstance(out, (tuple, list)) else list(out)
        if len(outs) != len(out_avals):
            raise TypeError(f"callback {name} returned {len(outs)} value(s), the module expects {len(out_avals)}")
        res = []
        for k, (o, a) in enumerate(zip(outs, out_avals)):
            o = np.asarray(o, a.dtype)
            if o.shape != a.shape:
                raise TypeError(f"callback {name} returned shape {o.shape} for result {k}, the module expects "
                                f"{a.shape}")
            res.append(o)
        return res
    return call


def check_versions(path: str, meta: dict) -> None:
    v = meta.get("versions") or {}
    have = {"stagec": stagec_version(), "iree": iree_runtime_version()}
    for k, what in (("stagec", "stagec"), ("iree", "IREE")):
        if v.get(k) != have[k]:
            raise ArtifactError(f"{path}: made by {what} {v.get(k)}, but this is {what} {have[k]}; recompile it "
                                f"here (stagec compile ...) or load it with allow_version_mismatch=True at your risk")


def load(path: str | os.PathLike, *, callbacks: dict[str, Callable] | None = None, allow_version_mismatch: bool = False,
         trust: bool = False) -> LoadedFunction:
    """Load a function saved with `Compiled.save` / `stagec compile`; needs only iree.runtime and numpy.

    A module that calls Python (`debug.print`, `pure_callback`, ...) keeps only the names and types of those
    functions: `callbacks` maps each name (the function's, `boom`, or the call's, `boom_1`) to a function taking
    and returning NumPy arrays. Without one, loading warns and calling raises MissingCallbackError.
    The file must be signed with this user's key (saved by this user's stagec); `trust=True` loads one saved
    elsewhere. Loading runs native code: trust only files from a source you would run programs from."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"stagec.load: no such file {path!r}")
    vmfb, meta = read(path, trust)
    if not allow_version_mismatch:
        check_versions(path, meta)
    if meta.get("target") not in IREE_TARGETS:
        raise ArtifactError(f"{path}: unknown target {meta.get('target')!r}; this stagec runs {sorted(IREE_TARGETS)}")
    host = (meta.get("key_components") or {}).get("host")
    if host is not None and host != host_id():
        warnings.warn(f"{path} was compiled for the host CPU of another machine ({host}, this one is "
                      f"{host_id()}); it may fail or crash here. Compile portable artifacts with an explicit "
                      f"arch (compile(arch='x86-64-v3'), stagec compile --arch ...).", RuntimeWarning, stacklevel=2)
    if meta.get("in_tree") is None or meta.get("out_tree") is None:
        raise ArtifactError(f"{path}: has no pytree structure (a cache entry, not a saved function?)")
    if meta.get("host_modules") and meta.get("host_abi") != HOST_ABI:
        raise ArtifactError(f"{path}: imports stagec's host modules {meta['host_modules']} of ABI "
                            f"{meta.get('host_abi')}; this stagec provides ABI {HOST_ABI}: compile it again")
    try:
        host_calls, missing = _loaded_host_calls(path, meta, dict(callbacks or {}))
        art = Artifact(vmfb, meta, host_calls=host_calls)
    except (KeyError, TypeError, ValueError) as e:
        if isinstance(e, (ArtifactError, MissingCallbackError)):
            raise
        raise ArtifactError(f"{path}: malformed stagec artifact metadata ({type(e).__name__}: {e})") from None
    if missing:
        warnings.warn(_missing_message(path, art.name, meta, missing), RuntimeWarning, stacklevel=2)
    return LoadedFunction(path, art, missing)
