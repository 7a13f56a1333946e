"""The `stagec` command (also `python -m stagec`): compile, dump, run, cache."""
from __future__ import annotations

import argparse
import ast
import importlib
import os
import re
import sys
import warnings
from typing import Any, Sequence

import numpy as np

from . import aot, cache, tree_util
from .aot import ArtifactError, ShapeDtypeStruct, load
from .compiler.targets import TARGETS as _BACKENDS
from .config import config
from .errors import CompileError
from .jit import Jitted

TARGETS = tuple(dict.fromkeys([*(t.iree for t in _BACKENDS.values()), *_BACKENDS]))  # llvm-cpu, ..., cpu, ...
_DTYPES = {"b1": "bool", "bool": "bool", "pred": "bool", "i1": "bool",
           "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
           "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
           "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64", "c64": "complex64", "c128": "complex128"}
_DTYPES.update({v: v for v in list(_DTYPES.values())})
_SPEC = re.compile(r"^\s*(?:(?P<name>[A-Za-z_]\w*)=)?(?P<dtype>[a-z]+\d*)\[(?P<dims>[\d,\s]*)\]\s*$")


class CliError(Exception):
    """A one-line error for the user (exit status 2)."""


def parse_spec(text: str):
    """`f32[8,8]`, `i32[]` or `name=f32[4]` -> (keyword name or None, ShapeDtypeStruct)."""
    m = _SPEC.match(text)
    if not m:
        raise CliError(f"malformed argument spec {text!r}; write DTYPE[DIMS] such as f32[1000], f32[8,8] or i32[] "
                       f"(optionally NAME=f32[4]); dtypes: {', '.join(sorted(k for k in _DTYPES if len(k) <= 4))}")
    if m["dtype"] not in _DTYPES:
        raise CliError(f"unknown dtype {m['dtype']!r} in {text!r}; choose one of "
                       f"{', '.join(sorted(k for k in _DTYPES if len(k) <= 4))}")
    dims = tuple(int(d.strip()) for d in m["dims"].split(",") if d.strip())
    n = 1
    for d in dims:
        n *= d
    if n * np.dtype(_DTYPES[m["dtype"]]).itemsize >= 1 << 48:
        raise CliError(f"argument spec {text!r} has {n:,} elements: more than any machine holds")
    return m["name"], ShapeDtypeStruct(dims, _DTYPES[m["dtype"]])


def parse_static(text: str) -> tuple[str, Any]:
    """`n=20`, `mode=fast`, `shape=(2,3)` -> (name, Python value); non-literals stay strings."""
    name, eq, value = text.partition("=")
    if not eq or not name.isidentifier():
        raise CliError(f"malformed --static {text!r}; write NAME=VALUE such as n=20 or mode='fast'")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value


def resolve(ref: str):
    """`pkg.mod:fn` (or `path/to/file.py:fn`) -> the function or jitted object."""
    mod_name, colon, attr = ref.partition(":")
    if not colon or not mod_name or not attr:
        raise CliError(f"malformed function reference {ref!r}; write MODULE:FUNCTION such as pkg.mod:fn")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        if mod_name.endswith(".py"):
            spec = importlib.util.spec_from_file_location(os.path.basename(mod_name)[:-3], mod_name)
            if spec is None or not os.path.exists(mod_name):
                raise ModuleNotFoundError(f"no file {mod_name}")
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        else:
            mod = importlib.import_module(mod_name)
    except ModuleNotFoundError as e:
        raise CliError(f"cannot import module {mod_name!r} ({e}); run from the folder that contains it or set "
                       f"PYTHONPATH") from None
    obj = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(mod) if not n.startswith("_") and callable(getattr(mod, n))]
            raise CliError(f"module {mod_name!r} has no function {attr!r}; its callables: {', '.join(names) or 'none'}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise CliError(f"{ref} is a {type(obj).__name__}, not a function")
    return obj


def _lower(ns):
    if getattr(ns, "x64", False):
        config.update("enable_x64", True)
    fn = resolve(ns.function)
    pos, kw = [], {}
    for text in ns.arg or []:
        name, sds = parse_spec(text)
        if sds.dtype.itemsize == 8 and sds.dtype.kind in "iuf" and not config.x64_enabled:
            raise CliError(f"argument spec {text!r} is 64-bit; pass --x64 to keep 64-bit types")
        if name:
            kw[name] = sds
        else:
            pos.append(sds)
    statics = dict(parse_static(s) for s in ns.static or [])
    if isinstance(fn, Jitted):
        jitted = Jitted(fn.fun, static_argnums=fn.static_argnums,
                        static_argnames=tuple(set(fn.static_argnames) | set(statics)),
                        donate_argnums=fn.donate_argnums, backend=fn.backend, passes=fn.passes)
    else:
        jitted = Jitted(fn, static_argnames=tuple(statics) or None)
    try:
        return jitted.lower(*pos, **kw, **statics)
    except TypeError as e:
        raise CliError(f"cannot trace {ns.function} with arguments ({', '.join(ns.arg or [])}) and statics "
                       f"{statics or '{}'}: {e}") from None


# ---------------------------------------------------------------- commands


def _check_output(out: str) -> None:
    """An output path must name a file in a folder that exists."""
    if os.path.isdir(out):
        raise CliError(f"-o {out} is a folder; name a file")
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise CliError(f"-o {out}: folder {folder} does not exist")


def cmd_compile(ns) -> int:
    # (an artifact IREE's own tools run: without calls to stagec's host modules, unless asked for)
    lowered = _lower(ns)
    compiled = lowered.compile(ns.target, arch=ns.arch, flags=ns.flag or (), host_blas=ns.host_blas)
    out = ns.output or f"{lowered.name.removeprefix('jit_')}.stagec"
    _check_output(out)
    try:
        compiled.save(out, host_modules=bool(ns.host_blas))
    except OSError as e:
        raise CliError(f"cannot write {out}: {e.strerror or e}") from None
    a = compiled.artifact
    sig = ", ".join(x.str_short() for x in a.in_avals)
    print(f"wrote {out}: {a.name}({sig}) for {a.target}, {os.path.getsize(out)} bytes", file=sys.stderr)
    return 0


def _artifact_html(path: str, out: str) -> int:
    """The explorer page of a saved artifact: what it holds (no MLIR is kept in it), described from its metadata
    alone: nothing it names is imported or loaded (any signer will do: it is never run)."""
    from . import explorer
    try:
        vmfb, m = aot.read(path, trust=True)
        sig = (f"{aot._sig([aot.aval_from_json(a) for a in m['in_avals']])} -> "
               f"{aot._sig([aot.aval_from_json(a) for a in m['out_avals']])}")
        trees = f"in {aot.describe_tree(m.get('in_tree'))}, out {aot.describe_tree(m.get('out_tree'))}"
    except (ArtifactError, OSError) as e:
        raise CliError(f"{path}: {e}") from None
    except (KeyError, TypeError, ValueError) as e:
        raise CliError(f"{path}: malformed stagec artifact metadata ({type(e).__name__}: {e})") from None
    info = {"signature": sig, "pytrees": trees, "target": str(m.get("target")),
            "flags": " ".join(map(str, m.get("flags", []))),
            **({"compiled as": " ".join(map(str, m["variant"]))} if m.get("variant") else {}),
            "versions": ", ".join(f"{k} {v}" for k, v in (m.get("versions") or {}).items()),
            "size": f"{os.path.getsize(path):,} bytes", "module": f"{len(vmfb):,} bytes"}
    try:
        explorer.write(out, f"{m.get('name')} ({os.path.basename(path)})", [], info=info)
    except OSError as e:
        raise CliError(f"cannot write {out}: {e.strerror or e}") from None
    print(f"wrote {out}", file=sys.stderr)
    return 0


def cmd_dump(ns) -> int:
    if ns.function.endswith(".stagec") or (":" not in ns.function and os.path.isfile(ns.function)):
        if ns.html:
            return _artifact_html(ns.function, ns.html)
        raise CliError(f"{ns.function} is an artifact: it holds a compiled module, not its MLIR; dump it as a page "
                       f"of what it holds (signature, target, flags, versions) with `stagec dump {ns.function} "
                       f"--html FILE.html`, or dump the function it came from: stagec dump MODULE:FUNCTION --arg ...")
    lowered = _lower(ns)
    if ns.html:
        try:
            lowered.html(ns.html)
        except OSError as e:
            raise CliError(f"cannot write {ns.html}: {e.strerror or e}") from None
        print(f"wrote {ns.html}", file=sys.stderr)
        return 0
    if ns.stage == "all":
        for name, text in lowered.stages().items():
            print(f"// ----- stage: {name}\n{text}")
        return 0
    try:
        print(lowered.as_text(ns.stage))
    except ValueError as e:
        raise CliError(f"{e} (or all)") from None
    return 0


def _input_value(text: str, aval, i: int, path: str):
    """Input `i` as `aval`'s dtype: an .npy file (its dtype checked by the call) or a Python literal, which must
    convert exactly (3.7 is no int32; 1e10 overflows int32)."""
    if aval is None:
        raise CliError(f"{path} takes {i} input(s), got more")
    if text.endswith(".npy") or text.endswith(".npz"):
        try:
            v = np.load(text, allow_pickle=False)
        except FileNotFoundError:
            raise CliError(f"input {i}: no such file {text!r}") from None
        except (OSError, ValueError, EOFError) as e:
            raise CliError(f"input {i}: {text} is not a readable .npy file of numbers ({e})") from None
        if isinstance(v, np.lib.npyio.NpzFile):
            v.close()
            raise CliError(f"input {i}: {text} is an .npz archive; pass one .npy file per input")
        if v.dtype == aval.dtype:
            return v
        given = v  # (converted as a literal is: exactly, or refused)
    else:
        try:
            given = np.asarray(ast.literal_eval(text))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise CliError(f"input {i}: {text!r} is neither an .npy file nor a Python literal such as 2.5 or "
                           f"[1, 2, 3]") from None
    want = aval.dtype
    if given.dtype.kind not in "biufc":
        raise CliError(f"input {i}: {text!r} is not numbers")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (complex to real: refused below, in one line)
        try:
            out = given.astype(want)
        except (ValueError, TypeError, OverflowError) as e:
            raise CliError(f"input {i}: {text!r} cannot be {want.name} ({e})") from None
        back = out.astype(given.dtype) if want.kind in "biu" else out
        lost = (want.kind in "biu" and not np.array_equal(back, given)) or (
            want.kind in "fc" and np.any(np.isinf(out) & np.isfinite(given)))
    if given.dtype.kind == "c" and want.kind != "c" and np.any(given.imag != 0):
        lost = True
    if lost:
        raise CliError(f"input {i}: {text!r} is not exactly representable as {want.name}, the type of argument {i} "
                       f"of {path}")
    return out


def cmd_run(ns) -> int:
    try:
        fn = load(ns.artifact, allow_version_mismatch=ns.allow_version_mismatch, trust=ns.trust)
    except (ArtifactError, FileNotFoundError, IsADirectoryError) as e:
        raise CliError(str(e)) from None
    avals = fn.in_avals
    inputs = ns.input or []
    if len(inputs) != len(avals):
        raise CliError(f"{ns.artifact} takes {len(avals)} input(s) {fn.signature()}, got {len(inputs)} --input")
    if ns.output:
        _check_output(ns.output)
    values = [_input_value(t, a, i, ns.artifact) for i, (t, a) in enumerate(zip(inputs, avals))]
    args, kwargs = fn.artifact.in_tree.unflatten(values)
    try:
        out = fn(*args, **kwargs)
    except TypeError as e:
        raise CliError(str(e)) from None
    except (RuntimeError, ValueError) as e:  # (IREE's runtime refusing the module: one line)
        msg = " ".join(str(e).split())[:300]
        raise CliError(f"{ns.artifact}: the runtime refused the module ({type(e).__name__}: {msg})") from None
    leaves = [np.asarray(x) for x in tree_util.tree_leaves(out)]
    labels = tree_util.leaf_paths(out)
    if ns.output:
        try:
            if ns.output.endswith(".npy"):
                if len(leaves) != 1:
                    raise CliError(f"{len(leaves)} outputs do not fit one .npy file; use -o out.npz")
                np.save(ns.output, leaves[0])
            else:
                np.savez(ns.output, **{f"out{i}": v for i, v in enumerate(leaves)})
        except OSError as e:
            raise CliError(f"cannot write {ns.output}: {e.strerror or e}") from None
        print(f"wrote {len(leaves)} output(s) to {ns.output}", file=sys.stderr)
    else:
        np.set_printoptions(threshold=50)
        for i, v in enumerate(leaves):
            print(f"output {i}{' ' + labels[i] if labels[i] else ''}: {v.dtype.name}{list(v.shape)} = {v!r}")
    return 0


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def cmd_cache(ns) -> int:
    try:
        cache.parse_size(config.persistent_cache_max_size)
    except ValueError as e:
        raise CliError(f"STAGEC_CACHE_MAX_SIZE: {e}") from None
    try:
        return _cache_action(ns)
    except OSError as e:
        raise CliError(f"cache folder {cache.cache_dir()}: {e.strerror or e}"
                       f"{' (' + e.filename + ')' if isinstance(e.filename, str) else ''}") from None


def _cache_action(ns) -> int:
    if ns.action == "info":
        i = cache.info()
        print(f"dir:      {i['dir']}{'' if i['enabled'] else '  (disabled: STAGEC_CACHE=0)'}\n"
              f"entries:  {i['entries']}\nsize:     {_human(i['bytes'])} ({i['bytes']} bytes)\n"
              f"max size: {_human(i['max_size'])}"
              + (f"\ntemp:     {i['temp_files']} file(s), {_human(i['temp_bytes'])} (unfinished or killed writes; "
                 f"prune and clear remove those older than {cache.ORPHAN_AGE} s)" if i["temp_files"] else ""))
    elif ns.action == "clear":
        print(f"removed {cache.clear()} entries from {cache.cache_dir()}")
    else:
        if ns.max_size is None:
            raise CliError("cache prune needs --max-size, e.g. --max-size 1G")
        try:
            n = cache.prune(ns.max_size)
        except ValueError as e:
            raise CliError(str(e)) from None
        print(f"removed {n} least recently used entries; {_human(cache.info()['bytes'])} left")
    return 0


# ---------------------------------------------------------------- parser


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line (with the valid choices argparse names), not the usage block."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _fn_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("function", metavar="MODULE:FUNCTION", help="e.g. pkg.mod:fn or path/file.py:fn")
    p.add_argument("--arg", action="append", metavar="SPEC",
                   help="one per dynamic argument, in order: DTYPE[DIMS] (f32[1000], f32[8,8], i32[]) or NAME=SPEC")
    p.add_argument("--static", action="append", metavar="NAME=VALUE", help="a static argument, e.g. n=20")
    p.add_argument("--x64", action="store_true", help="enable 64-bit types (f64, i64)")


def parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    top = _Parser(prog="stagec", formatter_class=fmt,
                                  description="stagec: compile numerical Python ahead of time, inspect it, run it.",
                                  epilog="example:\n  stagec compile mymod:selu --arg f32[1000] -o selu.stagec\n"
                                         "  stagec run selu.stagec --input x.npy")
    sub = top.add_subparsers(dest="command", metavar="{compile,dump,run,cache}")
    sub.required = True

    p = sub.add_parser("compile", help="compile a function to a .stagec artifact", formatter_class=fmt,
                       epilog="example:\n  stagec compile pkg.mod:fn --arg f32[1000] --arg i32[] --static n=20 "
                              "--target llvm-cpu -o f.stagec\n  stagec compile pkg.mod:fn --arg f32[8] --target cuda "
                              "--arch sm_80 -o f_cuda.stagec")
    _fn_args(p)
    p.add_argument("--target", choices=TARGETS, default="llvm-cpu", metavar="TARGET",
                   help=f"one of {', '.join(TARGETS[:3])} (default llvm-cpu, the host CPU)")
    p.add_argument("--arch", help="CPU name for llvm-cpu (default host), GPU arch for cuda (default sm_80), "
                                  "Vulkan target for vulkan-spirv")
    p.add_argument("--flag", action="append", metavar="IREE_FLAG", help="an extra iree-compile flag")
    p.add_argument("-o", "--output", metavar="FILE", help="artifact path (default FUNCTION.stagec)")
    p.add_argument("--host-blas", action="store_true", default=None,
                   help="llvm-cpu: large float32/float64 matmuls call NumPy's BLAS and long sorts NumPy's sort "
                        "(faster; the artifact then runs through stagec.load and `stagec run` only, not IREE's own "
                        "tools)")
    p.set_defaults(run=cmd_compile)

    p = sub.add_parser("dump", help="print a function's module at a stage (default: StableHLO)", formatter_class=fmt,
                       epilog="example:\n  stagec dump pkg.mod:fn --arg f32[8,8] --stage traced\n"
                              "  stagec dump pkg.mod:fn --arg f32[8,8] --stage all")
    _fn_args(p)
    p.add_argument("--stage", default="stablehlo",
                   help="traced, a pass name, stablehlo (default: the last pure StableHLO), final (what IREE "
                        "compiles, possibly mixing dialects; alias iree-input) or all")
    p.add_argument("--html", metavar="FILE", help="write the explorer page of every stage (or, for a .stagec "
                                                   "artifact given instead of MODULE:FUNCTION, of what it holds)")
    p.set_defaults(run=cmd_dump)

    p = sub.add_parser("run", help="run a .stagec artifact on inputs", formatter_class=fmt,
                       epilog="example:\n  stagec run f.stagec --input x.npy --input 3 -o out.npz")
    p.add_argument("artifact", metavar="FILE")
    p.add_argument("--input", action="append", metavar="X", help="one per argument: an .npy file or a literal (2.5)")
    p.add_argument("-o", "--output", metavar="FILE", help="save outputs (.npy for one, else .npz); default: print")
    p.add_argument("--allow-version-mismatch", action="store_true", help="load an artifact from another version")
    p.add_argument("--trust", action="store_true",
                   help="load an artifact not signed with your key (saved by another user or machine): it runs "
                        "native code, so only one from a source you trust")
    p.set_defaults(run=cmd_run)

    p = sub.add_parser("cache", help="inspect or trim the persistent compilation cache", formatter_class=fmt,
                       epilog="example:\n  stagec cache info\n  stagec cache prune --max-size 1G\n  stagec cache clear")
    p.add_argument("action", choices=("info", "clear", "prune"))
    p.add_argument("--max-size", metavar="SIZE", help="for prune: bytes, or with K/M/G suffix (1G)")
    p.set_defaults(run=cmd_cache)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    ns = parser().parse_args(argv)
    try:
        for name in config._defaults:  # (a bad STAGEC_* value: said now, in one line)
            getattr(config, name)
        return ns.run(ns)
    except (CliError, ArtifactError) as e:
        print(f"stagec {ns.command}: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except config.InvalidSetting as e:
        print(f"stagec {ns.command}: error: {e}", file=sys.stderr)
        return 2
    except (CompileError, NotImplementedError, RuntimeError) as e:
        print(f"stagec {ns.command}: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
