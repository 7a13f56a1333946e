"""The iree-compile processes this process runs: tracked, so that none outlives its program or a Ctrl-C.

`compile_str` is `iree.compiler.compile_str` with its subprocess started here (`_start`): registered before a
Ctrl-C can interrupt the caller, ended when the call is interrupted, and all ended at exit (`abandon_compiles`),
which also refuses new ones. A forked child starts with an empty set."""
from __future__ import annotations

import atexit
import os
import signal
import sys
import threading

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


def _start(command_line: list, stdin) -> object:
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
            proc = subprocess.Popen(command_line, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
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
        procs = list(_compilers)
    for proc in procs:
        try:
            proc.kill()
        except OSError:
            pass


def _after_fork_in_child() -> None:
    """A child's compilers are its own: it starts with none, and may start some."""
    global _compilers_lock, _abandoned
    _compilers.clear()
    _compilers_lock, _abandoned = threading.Lock(), False


os.register_at_fork(after_in_child=_after_fork_in_child)
