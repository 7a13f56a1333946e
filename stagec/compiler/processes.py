"""The iree-compile processes this process runs: tracked, so that none outlives its program or a Ctrl-C.

`compile_str` is `iree.compiler.compile_str` with its subprocess started here (`_start`): registered before a
Ctrl-C can interrupt the caller, ended when the call is interrupted, and all ended at exit (`abandon_compiles`),
which also refuses new ones. A forked child starts with an empty set.

Where `config.compile_server` is on, a compile whose flags name no folder of its own goes to a compiler that stays
(`serve.py`, one per set of flags, `_servers`): the same bytes, diagnostics and exit code as the CLI's, less a
process start and a context. The first compile of a set of flags is the CLI's, while its compiler starts
(`_starting`: a program compiling once waits for none). Its calls are tracked as a process's are; an idle one
waits in `_idle` (at most `IDLE_SERVERS`, each ended after `SERVER_COMPILES` compiles: its context keeps what they
made)."""
from __future__ import annotations

import atexit
import functools
import json
import os
import signal
import struct
import sys
import threading

from ..config import config
from ..errors import CompileError

_compilers: set = set()  # iree-compile processes running now (`compile_str`)
_compilers_lock = threading.Lock()
_abandoned = False  # set at exit (`abandon_compiles`): no compiler starts from then on


def block_sigint() -> None:
    """Block SIGINT in the calling background thread, so that a Ctrl-C reaches the main thread: delivered to another
    thread, it did not wake a main thread blocked in a lock wait (`Event().wait()`), and the program hung (2 runs in
    25). Compilers the thread starts inherit the mask; a Ctrl-C ends them with the program (`abandon_compiles`)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def compile_str(mlir: str, target: str, args: list) -> bytes:
    """`iree.compiler.compile_str`, its `iree-compile` subprocess tracked (`_invoke`)."""
    import iree.compiler as ic
    from iree.compiler.tools import core
    if core.invoke_immediate is not _invoke:
        core.invoke_immediate = _invoke  # (what compile_str calls; the same contract)
    return ic.compile_str(mlir, target_backends=[target], input_type="stablehlo", extra_args=args)


def _invoke(command_line: list, *, input_file=None, immediate_input=None) -> bytes:
    """iree.compiler's `invoke_immediate`, in a subprocess this process tracks, so that `abandon_compiles` can end
    it (a compile is never left running after its program) and an interrupted call ends it too."""
    import subprocess

    from iree.compiler.tools.binaries import CompilerToolError
    if input_file is None and config.compile_server and (served := _served(command_line)) is not None:
        flags, head = served
        got = _serve(command_line, flags, head, immediate_input)
        if got is not None:
            return got
    stdin = open(input_file, "rb") if input_file is not None else subprocess.PIPE
    try:
        proc = _start(command_line, stdin)
        try:
            out, err = proc.communicate(immediate_input)
        except BaseException:  # (KeyboardInterrupt too: the compiler ends with the call)
            proc.kill()
            proc.wait()
            raise
        finally:
            with _compilers_lock:
                _compilers.discard(proc)
    finally:
        if input_file is not None:
            stdin.close()
    if _abandoned:
        raise CompileError("stagec is exiting: the compile was abandoned")
    if proc.returncode != 0:
        raise CompilerToolError(subprocess.CompletedProcess(command_line, proc.returncode, out, err))
    if err:
        sys.stderr.write(err.decode(errors="replace"))
    return out


def _start(command_line: list, stdin, quiet: bool = False, env: dict | None = None) -> object:
    """The compiler's process, registered in `_compilers` before a Ctrl-C can interrupt the caller: in the main
    thread SIGINT is held while it starts (a KeyboardInterrupt inside `Popen`, after the fork, left the
    compiler running: 1 in 80 tries), then delivered once the process is ended."""
    import signal
    import subprocess
    main = threading.current_thread() is threading.main_thread()
    got: list = []
    old = signal.signal(signal.SIGINT, lambda sig, frame: got.append(sig)) if main else None
    try:
        with _compilers_lock:
            if _abandoned:
                raise CompileError("stagec is exiting: the compile was abandoned")
            proc = subprocess.Popen(command_line, stdin=stdin, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL if quiet else subprocess.PIPE, env=env)
            _compilers.add(proc)
            if len(_compilers) == 1 and not _exit_hooked:
                _hook_exit()
    finally:
        if main:
            signal.signal(signal.SIGINT, old)
    if got:
        proc.kill()
        proc.wait()
        with _compilers_lock:
            _compilers.discard(proc)
        signal.raise_signal(signal.SIGINT)  # (the program's own handler: KeyboardInterrupt by default)
    return proc


# ---------------------------------------------------------------- compilers that stay (serve.py)

IDLE_SERVERS = 3  # idle compilers kept (the least recently used ended first)
SERVER_COMPILES = 200  # compiles a compiler serves before it ends
_PHASES = {"--compile-to=": "to", "--compile-from=": "from"}
_idle: list = []  # [(flags, process, compiles served)], the most recently used last
_starting: dict = {}  # flags -> a compiler started, not yet asked whether it is ready
_unservable: set = set()  # flag tuples whose compiler did not start: the CLI's (at most 64: then forgotten)


def _served(command_line: list):
    """(the flags a compiler that stays starts with, the request's header), or None where the CLI must compile:
    a flag that names a folder or file of its own (dumps, reproducers), flags whose compiler did not start, or
    another iree-compile than the package's (IREE_TOOL_PATH: that tool compiles)."""
    if len(command_line) < 2 or command_line[1] != "-" or not _packaged(command_line[0]):
        return None
    flags, head = [], {}
    for f in command_line[2:]:
        phase = next((k for k in _PHASES if f.startswith(k)), None)
        if phase is not None:
            head[_PHASES[phase]] = f[len(phase):]
        elif f == "--emit-mlir-bytecode":
            head["bytecode"] = True
        elif f.startswith(("--iree-hal-dump-", "--mlir-pass-pipeline-crash-reproducer", "-o", "--output")):
            return None
        else:
            flags.append(f)
    return None if tuple(flags) in _unservable else (tuple(flags), head)


@functools.cache
def _packaged(tool: str) -> bool:
    """Whether `tool` is the iree-compile of the iree.compiler package, whose library `serve.py` loads."""
    import iree.compiler
    return os.path.realpath(tool) == os.path.realpath(
        os.path.join(os.path.dirname(iree.compiler.__file__), "_mlir_libs", "iree-compile"))


def _serve(command_line: list, flags: tuple, head: dict, source: bytes) -> bytes | None:
    """The compile of `source` by a compiler that stays (started if none waits), as `_invoke` returns it; None
    where none could start (the CLI then compiles)."""
    import subprocess

    from iree.compiler.tools.binaries import CompilerToolError
    with _compilers_lock:
        found = next((i for i in range(len(_idle) - 1, -1, -1) if _idle[i][0] == flags), None)
        entry = _idle.pop(found) if found is not None else None
        proc = _starting.pop(flags, None) if entry is None else None
        spawn = entry is None and proc is None and len(_starting) < IDLE_SERVERS
    if spawn:  # (it starts while the CLI compiles this one: a program's first compile waits for no compiler)
        try:
            # (iree.compiler's Python API imports NumPy: one OpenBLAS thread, which spun ~0.07 CPU-s as the server
            # started, beside the CLI compiling the program's first module on the same cores)
            proc = _start([sys.executable, os.path.join(os.path.dirname(__file__), "serve.py"), json.dumps(flags)],
                          subprocess.PIPE, quiet=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
        except OSError:  # (no Python to start it with, e.g. an embedded interpreter: the CLI's)
            _refuse(flags)
            return None
        with _compilers_lock:
            if flags in _starting or _abandoned:  # (another thread's started first: one is enough)
                spawn = False
            else:
                _starting[flags] = proc
        if not spawn:
            _end(proc)
        return None
    if entry is None:
        if proc is None:
            return None
        if proc.stdout.readline() != b"ready\n":  # (flags the library's command line refuses: the CLI's)
            _end(proc)
            _refuse(flags)
            return None
        entry = (flags, proc, 0)
    else:
        with _compilers_lock:
            _compilers.add(entry[1])
    proc = entry[1]
    h = json.dumps(head).encode()
    try:
        proc.stdin.write(struct.pack("<I", len(h)) + h + struct.pack("<Q", len(source)) + source)
        proc.stdin.flush()
    except OSError:  # (one that ended while it waited: the CLI compiles)
        _end(proc)
        return None
    try:
        reply = json.loads(_read(proc.stdout, struct.unpack("<I", _read(proc.stdout, 4))[0]))
        out = _read(proc.stdout, struct.unpack("<Q", _read(proc.stdout, 8))[0])
    except BaseException as e:  # (KeyboardInterrupt too: the compiler ends with the call; a crash is the CLI's)
        if isinstance(e, EOFError):
            try:
                proc.wait(timeout=10)  # (its own end: its exit code)
            except subprocess.TimeoutExpired:
                pass
        _end(proc)
        if _abandoned:
            raise CompileError("stagec is exiting: the compile was abandoned") from None
        if isinstance(e, (EOFError, OSError)):  # (it crashed: its exit code, as the CLI's)
            raise CompilerToolError(subprocess.CompletedProcess(command_line, proc.returncode, b"", b"")) from None
        raise
    with _compilers_lock:
        _compilers.discard(proc)
        if _abandoned or entry[2] + 1 >= SERVER_COMPILES:
            ended = [proc]
        else:
            _idle.append((flags, proc, entry[2] + 1))
            ended = [p for _, p, _ in _idle[:-IDLE_SERVERS]]
            del _idle[:-IDLE_SERVERS]
    for p in ended:
        _end(p)
    if _abandoned:
        raise CompileError("stagec is exiting: the compile was abandoned")
    err = reply["err"].encode()
    if reply["rc"] != 0:
        raise CompilerToolError(subprocess.CompletedProcess(command_line, reply["rc"], out, err))
    if err:
        sys.stderr.write(reply["err"])
    return out


def _refuse(flags: tuple) -> None:
    if len(_unservable) >= 64:
        _unservable.clear()
    _unservable.add(flags)


def _read(f, n: int) -> bytes:
    b = f.read(n)
    if len(b) != n:
        raise EOFError("the compiler ended")
    return b


def _end(proc) -> None:
    """End a compiler that stays (closing its input ends it; killed if it is compiling)."""
    with _compilers_lock:
        _compilers.discard(proc)
    try:
        proc.kill()
        proc.wait()
    except OSError:
        pass
    for f in (proc.stdin, proc.stdout):
        try:
            f.close()
        except OSError:
            pass


_exit_hooked = False


def _hook_exit() -> None:
    """At exit, end any compiler still running (a call interrupted between its start and its wait)."""
    global _exit_hooked
    _exit_hooked = True
    atexit.register(abandon_compiles)


def abandon_compiles() -> None:
    """End every compiler process this process started and refuse new ones (at exit: a pending compile is
    abandoned, never awaited)."""
    global _abandoned
    with _compilers_lock:
        _abandoned = True
        procs, idle = list(_compilers), [p for _, p, _ in _idle]
        _idle.clear()
        _starting.clear()  # (in `_compilers`: killed below)
    for proc in procs:
        try:
            proc.kill()
        except OSError:
            pass
    for proc in idle:  # (waited for: their CPU then counts as this process's children's)
        _end(proc)


def _after_fork_in_child() -> None:
    """A child's compilers are its own: it starts with none, and may start some."""
    global _compilers_lock, _abandoned
    _compilers.clear()
    for p in [p for _, p, _ in _idle] + list(_starting.values()):  # (the parent's: the child closes its copies of
        for f in (p.stdin, p.stdout):  # their pipes, which stay the parent's)
            f.close()
    _idle.clear()
    _starting.clear()
    _compilers_lock, _abandoned = threading.Lock(), False


os.register_at_fork(after_in_child=_after_fork_in_child)
