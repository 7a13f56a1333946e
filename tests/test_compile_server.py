"""Compilers that stay (`stagec/compiler/serve.py`, `config.compile_server`, on by default): the CLI's bytes, errors
and exit codes, in one and two phases; a program's first compile is the CLI's, its compiler starting meanwhile; a
compiler that crashes or ends is a compile error or a fresh start, never a hang; flags the library refuses go to the
CLI; none outlives its program."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import iree.compiler as ic
import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec.compiler import driver, processes
from stagec.compiler.targets import TARGETS

ADD = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = stablehlo.add %a, %a : tensor<4xf32>\n" \
      "  return %0 : tensor<4xf32>\n}\n"
BAD = ADD.replace(": tensor<4xf32>\n  return", ": tensor<3xf32>\n  return")
FLAGS = list(TARGETS["cpu"].flags)


@pytest.fixture(autouse=True)
def _no_compiler_left_starting():
    """End the compilers other tests of this worker started and never asked (one per set of flags compiled once):
    while `IDLE_SERVERS` of them wait, no compiler starts for new flags, and these tests' compiles went to the CLI
    (a CI-like run: three failed after tests compiling for x86-64-v3 and other one-off flags ran first)."""
    with processes._compilers_lock:
        starting = list(processes._starting.values())
        processes._starting.clear()
    for proc in starting:
        processes._end(proc)


def _both(compile_):
    """compile_() with the CLI, then by a compiler that stays (each result, or the error's diagnostics; the first
    compile of a set of flags is the CLI's while its compiler starts, so compile_ runs twice there)."""
    out = []
    old = stagec.config.compile_server
    try:
        for on in (False, True):
            stagec.config.update("compile_server", on)
            for _ in range(1 + on):
                try:
                    got = compile_()
                except ic.CompilerToolError as e:
                    got = str(e).split("Invoked with")[0]
            out.append(got)
    finally:
        stagec.config.update("compile_server", old)
    return out


def _servers() -> list:
    return [p for _, p, _ in processes._idle]


@pytest.mark.cpu_only  # (the two phases are the CPU's; a CUDA compile dumps its sources, which no served compiler does)
def test_a_programs_module_is_the_clis_in_one_phase_and_in_two(monkeypatch):
    """A jitted program with fusion barriers compiles in two phases (to dispatch creation as MLIR bytecode, then on
    from it without the barriers): each phase's output is the CLI's bytes when a compiler that stays compiles it, and
    the compiler stays."""
    seen = []
    real = processes.compile_str
    monkeypatch.setattr(processes, "compile_str", lambda m, t, a: seen.append((m, t, a, real(m, t, a))) or seen[-1][3])
    x = np.linspace(-2, 2, 512 * 512, dtype=np.float32).reshape(512, 512)
    f = lambda a: snp.tanh(stagec.lax.optimization_barrier(a @ a.T)) * 2 + snp.sum(snp.exp(a), axis=0)  # noqa: E731
    old = stagec.config.persistent_cache, stagec.config.compile_server
    stagec.config.update("persistent_cache", False)
    stagec.config.update("compile_server", False)
    try:
        stagec.jit(f).lower(x).compile()  # (by the CLI: its two phases' inputs and outputs recorded)
    finally:
        stagec.config.update("persistent_cache", old[0])
        stagec.config.update("compile_server", old[1])
    assert [("--emit-mlir-bytecode" in a, any(f.startswith("--compile-from") for f in a)) for _, _, a, _ in seen] == \
        [(True, False), (False, True)], "not a two-phase compile"
    (m1, t, a1, want1), (m2, _, a2, want2) = seen
    real(m1, t, a1)  # (the first of these flags: the CLI's, while their compiler starts)
    assert real(m2, t, a2) == want2 and real(m1, t, a1) == want1
    assert _servers(), "no compiler stayed"


def test_a_phases_mlir_is_the_clis_text_or_bytecode():
    """`--compile-to` alone gives the phase's MLIR as text (tests read flow's dispatches so), with
    `--emit-mlir-bytecode` as bytecode."""
    for extra in ([], ["--emit-mlir-bytecode"]):
        cli, served = _both(lambda: processes.compile_str(ADD, "llvm-cpu", [*FLAGS, "--compile-to=flow", *extra]))
        assert isinstance(cli, bytes) and served == cli
        assert (b"flow.dispatch" in cli) == (not extra)


def test_a_failing_module_gives_the_clis_diagnostics_and_code():
    cli, served = _both(lambda: processes.compile_str(BAD, "llvm-cpu", FLAGS))
    assert "Error code: 1" in cli and "error: use of value '%a' expects different type" in cli
    assert served == cli


def test_a_compiler_that_crashes_is_a_compile_error_and_the_next_compile_starts_another(monkeypatch):
    """Killed while it compiles: the CLI's error for a crash (its signal as the exit code, which `retries` reads),
    the compiler gone; one that ended while it waited: the compile is the CLI's. Then a compiler starts again."""
    for _ in range(2):  # (the first while its compiler starts)
        processes.compile_str(ADD, "llvm-cpu", FLAGS)
    proc = _servers()[-1]  # (the one that compiled last)
    real = processes._read
    monkeypatch.setattr(processes, "_read", lambda f, n: (proc.kill(), proc.wait(), real(f, n))[2])
    with pytest.raises(ic.CompilerToolError, match=r"Error code: -9"):
        processes.compile_str(ADD, "llvm-cpu", FLAGS)
    assert proc.poll() is not None and proc not in _servers()
    monkeypatch.setattr(processes, "_read", real)
    for _ in range(2):
        want = processes.compile_str(ADD, "llvm-cpu", FLAGS)
    (again,) = _servers()[-1:]
    assert again is not proc
    again.kill()
    again.wait()
    assert processes.compile_str(ADD, "llvm-cpu", FLAGS) == want  # (by the CLI: the dead one's pipe refused it)
    assert again not in _servers()


def test_flags_the_library_refuses_compile_by_the_cli():
    """`--split-input-file` is the CLI's own flag: the library's command line refuses it, so the CLI compiles."""
    cli, served = _both(lambda: processes.compile_str(ADD, "llvm-cpu", [*FLAGS, "--split-input-file"]))
    assert isinstance(cli, bytes) and served == cli
    assert any("--split-input-file" in flags for flags in processes._unservable)


@pytest.mark.cpu_only  # (a CUDA compile dumps its sources, which no served compiler does)
@pytest.mark.compile  # (it compiles in a subprocess: not in --fast)
def test_no_compiler_outlives_its_program(tmp_path):
    """A script compiles and exits with its compiler waiting: the compiler ends with it."""
    script = textwrap.dedent("""
        import numpy as np, stagec
        from stagec.compiler import processes
        stagec.jit(lambda x: x * 2.0 + 1.0)(np.ones(4, np.float32))
        stagec.jit(lambda x: x * 3.0 + 1.0)(np.ones(4, np.float32))
        print(*[p.pid for _, p, _ in processes._idle], *[p.pid for p in processes._starting.values()], flush=True)
    """)
    env = dict(os.environ, STAGEC_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    pids = [int(p) for p in out.stdout.split()]
    assert pids, "the script's compile did not stay"
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"


def test_it_is_on_by_default_and_the_threading_flag_is_its_own():
    """Users' default; and a compiler started single-threaded is not the one a pooled compile gets."""
    assert stagec.config._defaults["compile_server"]() is True or os.environ.get("STAGEC_COMPILE_SERVER") == "0"
    tool = os.path.join(os.path.dirname(ic.__file__), "_mlir_libs", "iree-compile")
    one = processes._served([tool, "-", *FLAGS])[0]
    two = processes._served([tool, "-", *FLAGS, driver.NO_THREADS])[0]
    assert one != two and processes._served([tool, "-", "--iree-hal-dump-executable-sources-to=/tmp/x"]) is None
    assert processes._served(["/elsewhere/iree-compile", "-", *FLAGS]) is None  # (IREE_TOOL_PATH's: that tool's)


def test_a_first_compile_is_the_clis_while_its_compiler_starts():
    """A program compiling once waits for no compiler to start: the first compile of a set of flags is the CLI's,
    the second is served."""
    flags = [*FLAGS, "--iree-llvmcpu-stack-allocation-limit=131072"]  # (a set of flags no other test uses)
    first = processes.compile_str(ADD, "llvm-cpu", flags)
    (key,) = [k for k in processes._starting if "--iree-llvmcpu-stack-allocation-limit=131072" in k]
    assert not [k for k, _, _ in processes._idle if k == key]
    assert processes.compile_str(ADD, "llvm-cpu", flags) == first
    assert key not in processes._starting and [k for k, _, _ in processes._idle if k == key]


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads a process's threads from /proc")
def test_a_compiler_that_stays_starts_no_blas_threads():
    """iree.compiler's Python API imports NumPy; its OpenBLAS threads spun as the server started (~0.07 CPU-s
    beside the program's first compile, on the same cores): the server runs with one OpenBLAS thread."""
    flags = [*FLAGS, "--iree-llvmcpu-stack-allocation-limit=524288"]  # (a set of flags no other test uses)
    for _ in range(2):
        processes.compile_str(ADD, "llvm-cpu", flags)
    (proc,) = [p for k, p, _ in processes._idle if "--iree-llvmcpu-stack-allocation-limit=524288" in k]
    with open(f"/proc/{proc.pid}/environ", "rb") as f:
        assert b"OPENBLAS_NUM_THREADS=1" in f.read().split(b"\0")
    names = []
    for t in os.listdir(f"/proc/{proc.pid}/task"):
        with open(f"/proc/{proc.pid}/task/{t}/comm") as f:
            names.append(f.read().strip())
    assert len([n for n in names if not n.startswith("llvm-worker")]) == 1, names  # (the main thread alone)
