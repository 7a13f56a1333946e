"""An iree-compile that stays: run as a program (`python serve.py FLAGS`) by `processes`, it compiles the modules its
parent sends with the flags it was started with, as `iree-compile - FLAGS` would, without a process start and a
context per module (~0.03-0.05 CPU-s a compile, 10-15% of a small one).

FLAGS (JSON) become the library's global command line, as the CLI's do (a session's own flags miss some:
`--iree-opt-level` given to a session formed other dispatches), and one session compiles them all. Each request
on stdin: a JSON header (`to`/`from`: `--compile-to`/`--compile-from`'s phase, `bytecode`: `--emit-mlir-bytecode`,
else a phase's MLIR is text)
and the source, each after its length; the reply on stdout: a JSON header (`rc`: the CLI's exit code, `err`: its
diagnostics, written to fd 2 while it compiles) and the output. Imports no stagec: it starts on iree.compiler alone.
It ends when its input does (its parent gone)."""
import ctypes
import json
import os
import struct
import sys
import tempfile


def _read(f, n: int) -> bytes:
    b = f.read(n)
    if len(b) != n:
        raise EOFError
    return b


def main() -> None:
    flags = json.loads(sys.argv[1])
    reply = os.fdopen(os.dup(1), "wb")  # (fd 1 then points at the diagnostics file: the library may print there)
    requests = sys.stdin.buffer
    from iree.compiler import api
    from iree.compiler.api import ctypes_dl as c
    lib = c._dylib
    for f in (lib.ireeCompilerInvocationSetCompileToPhase, lib.ireeCompilerInvocationSetCompileFromPhase):
        f.argtypes, f.restype = [ctypes.c_void_p, ctypes.c_char_p], None
    c._initializeGlobalCL("iree-compile", *flags)
    session = api.Session()
    diag = tempfile.TemporaryFile()
    os.dup2(diag.fileno(), 1)
    os.dup2(diag.fileno(), 2)
    reply.write(b"ready\n")
    reply.flush()
    while True:
        try:
            head = json.loads(_read(requests, struct.unpack("<I", _read(requests, 4))[0]))
            source = _read(requests, struct.unpack("<Q", _read(requests, 8))[0])
        except EOFError:
            return
        diag.seek(0)
        diag.truncate()
        inv = session.invocation()
        inv.enable_console_diagnostics()
        if head.get("to"):
            lib.ireeCompilerInvocationSetCompileToPhase(inv._inv_p, head["to"].encode())
        if head.get("from"):
            lib.ireeCompilerInvocationSetCompileFromPhase(inv._inv_p, head["from"].encode())
        text = source[:4] != b"ML\xefR"  # (MLIR bytecode, a second phase's input, is taken as it is)
        src = api.Source.wrap_buffer(session, source + b"\0" if text else source, buffer_name="<stdin>")
        out = b""
        try:
            ok = inv.parse_source(src) and inv.execute()
            if ok:  # (the CLI's output: a phase's MLIR, as bytecode or text, or the VM module)
                o = api.Output.open_membuffer()
                write = inv.output_vm_bytecode if not head.get("to") else (
                    inv.output_ir_bytecode if head.get("bytecode") else inv.output_ir)
                write(o)
                out = bytes(o.map_memory())
                o.close()
        except Exception as e:  # (the library's error: this compile's, the compiler goes on)
            ok = False
            print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        inv.close()
        sys.stderr.flush()
        diag.seek(0)
        err = diag.read().decode(errors="replace")
        h = json.dumps({"rc": 0 if ok else 1, "err": err}).encode()
        reply.write(struct.pack("<I", len(h)) + h + struct.pack("<Q", len(out)) + out)
        reply.flush()


if __name__ == "__main__":
    main()
