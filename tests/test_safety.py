"""Files that change, lie or block; bad CLI input; compiling once under threads; bounded caches; donation.
Each test reproduces a case that once gave a wrong answer, a crash, a hang or a traceback."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import ShapeDtypeStruct as S
from stagec import aot, cache, cli
from stagec.aot import ArtifactError
from threads import run_at_once

N = 256
W = np.arange(N, dtype=np.float32)


def add_w(x):
    return x + W


def add_2w(x):
    return x + 2 * W


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("safety")
    stagec.jit(add_w).lower(S((N,), np.float32)).compile().save(d / "a.stagec")
    stagec.jit(add_2w).lower(S((N,), np.float32)).compile().save(d / "b.stagec")
    return d


def rewrite(src, dst, **changes):
    """Copy artifact `src` to `dst` with metadata `changes`, checksum and signature recomputed (a valid file)."""
    vmfb, meta = aot.read(src, trust=True)
    meta = {**meta, **changes}
    aot.write_atomic(dst, aot.pack(bytes(vmfb), meta))


def run_py(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=os.environ)


# ---------------------------------------------------------------- files that change after loading


def test_artifact_rewritten_or_truncated_after_loading_changes_nothing(files, tmp_path):
    a = tmp_path / "a.stagec"
    a.write_bytes((files / "a.stagec").read_bytes())
    f = stagec.load(a)
    x = np.zeros(N, np.float32)
    np.testing.assert_array_equal(np.asarray(f(x)), W)
    a.write_bytes((files / "b.stagec").read_bytes())  # in place, as `cp b a` does
    np.testing.assert_array_equal(np.asarray(f(x)), W)
    os.truncate(a, 1 << 10)  # was SIGBUS through the memory map
    np.testing.assert_array_equal(np.asarray(f(x)), W)
    with pytest.raises(ArtifactError, match="a.stagec"):
        stagec.load(a)


def test_cache_entry_rewritten_after_loading_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("STAGEC_CACHE_DIR", str(tmp_path))
    f = stagec.jit(add_w)
    x = np.zeros(N, np.float32)
    np.testing.assert_array_equal(np.asarray(f(x)), W)
    stagec.clear_caches()
    g = stagec.jit(add_w)
    np.testing.assert_array_equal(np.asarray(g(x)), W)  # loaded from the persistent cache
    for path, _ in cache.entries():
        with open(path, "r+b") as fh:
            fh.truncate(100)
    np.testing.assert_array_equal(np.asarray(g(x)), W)


# ---------------------------------------------------------------- files that lie


@pytest.mark.parametrize("lie", [
    {"out_avals": [{"shape": [100000], "dtype": "float32"}]},
    {"out_avals": [{"shape": [N], "dtype": "float64"}]},
    {"out_avals": [{"shape": [N], "dtype": "float32"}, {"shape": [N], "dtype": "float32"}]},
    {"out_avals": []},
])
def test_lying_output_metadata_raises_instead_of_reading_past_the_result(files, tmp_path, lie):
    p = tmp_path / "lie.stagec"
    out_tree = {"t": "list", "c": [{"t": "*"}] * len(lie["out_avals"])} if len(lie["out_avals"]) != 1 else None
    rewrite(files / "a.stagec", p, **lie, **({"out_tree": out_tree} if out_tree else {}))
    f = stagec.load(p)
    with pytest.raises(RuntimeError, match=r"jit_add_w returned .*declares"):  # (at the call, or the barrier where
        f(np.zeros(N, np.float32))                                          # calls are dispatched ahead: GPUs)
        stagec.effects_barrier()


def test_lying_input_metadata_is_rejected_at_the_call_or_by_the_module(files, tmp_path):
    p = tmp_path / "lie_in.stagec"
    rewrite(files / "a.stagec", p, in_avals=[{"shape": [4], "dtype": "float32"}])
    f = stagec.load(p)
    with pytest.raises((RuntimeError, ValueError)):
        f(np.zeros(4, np.float32))
        stagec.effects_barrier()


# ---------------------------------------------------------------- signatures


def test_an_artifact_signed_with_another_key_needs_trust(files, tmp_path, monkeypatch):
    monkeypatch.setattr(aot, "_key", b"k" * 32)  # another user's key
    other = tmp_path / "other.stagec"
    rewrite(files / "a.stagec", other)
    monkeypatch.undo()
    with pytest.raises(ArtifactError, match=r"other\.stagec: not signed with this user's stagec key.*trust=True"):
        stagec.load(other)
    f = stagec.load(other, trust=True)
    np.testing.assert_array_equal(np.asarray(f(np.zeros(N, np.float32))), W)


def test_processes_starting_together_share_one_signing_key(tmp_path):
    # The first process to need the key makes it; one starting at the same moment must read the whole key, not
    # an empty file (it then signed with a key of its own: the others could not verify what it cached).
    path = tmp_path / "cfg" / "key"
    script = textwrap.dedent(f"""
        import os, sys, time
        os.environ["STAGEC_KEY_FILE"] = {str(path)!r}
        from stagec import aot
        while time.time() < float(sys.argv[1]):
            pass
        print(aot._secret().hex())
    """)
    start = str(time.time() + 1.5)
    procs = [subprocess.Popen([sys.executable, "-c", script, start], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(6)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all("cannot use the signing key" not in err for _, err in outs), [err for _, err in outs]
    keys = {out.strip() for out, _ in outs}
    assert len(keys) == 1 and bytes.fromhex(keys.pop()) == path.read_bytes()
    assert [p.name for p in path.parent.iterdir()] == ["key"]  # (no temporary file left behind)


def test_a_cache_entry_signed_with_another_key_is_recompiled(tmp_path, monkeypatch):
    monkeypatch.setenv("STAGEC_CACHE_DIR", str(tmp_path))
    def fun(x):
        return x * 7 + 1
    x = np.ones(3, np.float32)
    stagec.jit(fun)(x)
    paths = [p for p, _ in cache.entries()]
    monkeypatch.setattr(aot, "_key", b"k" * 32)
    for p in paths:  # re-sign every entry with the other key
        vmfb, meta = aot.read(p, trust=True)
        aot.write_atomic(p, aot.pack(bytes(vmfb), meta))
    monkeypatch.undo()
    monkeypatch.setenv("STAGEC_CACHE_DIR", str(tmp_path))
    stagec.clear_caches()
    cache.reset_stats()
    with pytest.warns(RuntimeWarning, match="not signed with this user's stagec key"):
        np.testing.assert_array_equal(np.asarray(stagec.jit(fun)(x)), x * 7 + 1)
    assert cache.info()["corrupt"] >= 1 and cache.info()["hits"] == 0


def test_key_file_is_private_and_made_once(tmp_path, monkeypatch):
    # Made here (this process's key set aside: `aot._key` None, as in a new process), read by another process.
    key = tmp_path / "cfg" / "key"
    monkeypatch.setenv("STAGEC_KEY_FILE", str(key))
    monkeypatch.setattr(aot, "_key", None)
    made = aot._secret().hex()
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.read_bytes().hex() == made
    r = run_py(f"""
        import os; os.environ["STAGEC_KEY_FILE"] = {str(key)!r}
        from stagec import aot; print(aot._secret().hex())""")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == made
    key.chmod(0o644)  # readable by others: not a secret any more
    monkeypatch.setattr(aot, "_key", None)
    with pytest.warns(RuntimeWarning, match="signing with a key for this process alone"):
        k = aot._secret()
    assert k.hex() != key.read_bytes().hex()


# ---------------------------------------------------------------- special files, temp files


@pytest.mark.compile  # (it compiles in a subprocess: not in --fast)
def test_a_fifo_at_a_cache_entry_path_does_not_hang(tmp_path):
    r = run_py(f"""
        import os, warnings, numpy as np, stagec
        from stagec import cache
        os.environ["STAGEC_CACHE_DIR"] = {str(tmp_path)!r}
        f = lambda x: x * 3 - 1
        stagec.jit(f)(np.ones(2, np.float32))
        for p, _ in cache.entries():
            os.unlink(p); os.mkfifo(p)
        stagec.clear_caches()
        warnings.simplefilter("ignore")
        print(stagec.jit(f)(np.ones(2, np.float32)).tolist(), cache.info()["corrupt"])""", timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("]")[0] == "[2.0, 2.0" and r.stdout.split()[-1] != "0"
    assert all(stat.S_ISREG(os.stat(p).st_mode) for p in tmp_path.glob("*.stagec"))


def test_a_fifo_or_directory_artifact_is_an_artifact_error(tmp_path):
    os.mkfifo(tmp_path / "fifo.stagec")
    with pytest.raises(ArtifactError, match="fifo.stagec: is not a regular file"):
        stagec.load(tmp_path / "fifo.stagec")
    (tmp_path / "dir.stagec").mkdir()
    with pytest.raises(ArtifactError, match="dir.stagec: is a directory"):
        stagec.load(tmp_path / "dir.stagec")


def test_orphan_temp_files_are_counted_and_swept_when_old(tmp_path, monkeypatch):
    monkeypatch.setenv("STAGEC_CACHE_DIR", str(tmp_path))
    old, new = tmp_path / ".tmp-old.part", tmp_path / ".tmp-new.part"
    old.write_bytes(b"x" * 1000)
    new.write_bytes(b"y" * 10)
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    i = cache.info()
    assert (i["entries"], i["temp_files"], i["temp_bytes"]) == (0, 2, 1010)
    cache.prune("1G")
    assert not old.exists() and new.exists()  # a fresh one may be a write in progress
    os.utime(new, (time.time() - 3600, time.time() - 3600))
    cache.clear()
    assert not new.exists()


# ---------------------------------------------------------------- API and CLI errors


def test_negative_shape_dtype_struct_is_a_value_error():
    with pytest.raises(ValueError, match=r"ShapeDtypeStruct: shape \(-3,\) has a negative dimension"):
        S((-3,), np.float32)


def scale(x, n):
    return x * n


@pytest.fixture(scope="module")
def cli_artifact(tmp_path_factory):
    p = tmp_path_factory.mktemp("cli") / "scale.stagec"
    stagec.jit(scale).lower(S((3,), np.float32), S((), np.int32)).compile().save(p)
    return str(p)


def cli_err(capsys, argv):
    rc = cli.main(argv)
    err = capsys.readouterr().err.strip()
    return rc, err


@pytest.mark.parametrize("inp, message", [
    ("3.7", r"input 1: '3\.7' is not exactly representable as int32"),
    ("1e10", r"input 1: '1e10' is not exactly representable as int32"),
    ("'a'", r"input 1: \"'a'\" is not numbers"),
])
def test_run_refuses_inputs_it_would_change(cli_artifact, capsys, inp, message):
    rc, err = cli_err(capsys, ["run", cli_artifact, "--input", "[1,2,3]", "--input", inp])
    assert rc == 2 and len(err.splitlines()) == 1
    assert __import__("re").search(message, err), err


def test_run_one_line_errors_for_bad_files(cli_artifact, tmp_path, capsys):
    np.save(tmp_path / "obj.npy", np.array([1, "a", None], dtype=object))
    (tmp_path / "text.npy").write_text("hello")
    cases = [
        (["run", str(tmp_path), "--input", "1"], "is a directory"),
        (["run", cli_artifact, "--input", str(tmp_path / "obj.npy"), "--input", "3"], "not a readable .npy"),
        (["run", cli_artifact, "--input", str(tmp_path / "text.npy"), "--input", "3"], "not a readable .npy"),
        (["run", cli_artifact, "--input", "[1,2,3]", "--input", "3", "-o", str(tmp_path / "no" / "o.npy")],
         "does not exist"),
    ]
    for argv, message in cases:
        rc, err = cli_err(capsys, argv)
        assert rc == 2 and len(err.splitlines()) == 1 and message in err, (argv, err)
    assert cli.main(["run", cli_artifact, "--input", "[1,2,3]", "--input", "3"]) == 0
    assert "3., 6., 9." in capsys.readouterr().out


@pytest.mark.parametrize("action", [["info"], ["clear"], ["prune", "--max-size", "1G"]])
def test_cache_commands_on_an_unreadable_folder_are_one_line(capsys, monkeypatch, tmp_path, action):
    monkeypatch.setenv("STAGEC_CACHE_DIR", str(tmp_path))

    def denied(path):
        raise PermissionError(13, "Permission denied", path)
    monkeypatch.setattr(os, "listdir", denied)  # (tests may run as root, whom chmod does not stop)
    rc, err = cli_err(capsys, ["cache", *action])
    assert rc == 2 and len(err.splitlines()) == 1 and "Permission denied" in err and str(tmp_path) in err


# ---------------------------------------------------------------- threads


def test_threads_compiling_one_signature_compile_it_once():
    from stagec import eager, stages
    jit_mod = sys.modules["stagec.jit"]

    def fun(x):
        return x * 11 - 5
    f = stagec.jit(fun)
    x = np.arange(5, dtype=np.int32) + 1000  # a signature and values no other test uses
    before_jit, before_eager = jit_mod.stats["compiles"], eager.stats["compiles"]
    outs = []

    def work(_):
        outs.append(np.asarray(f(x)).tolist())
        outs.append(np.asarray(snp.cumsum(x[::-1] * 0 + x)).tolist())  # eager primitives
    errors = run_at_once(work)
    assert not errors
    assert jit_mod.stats["compiles"] - before_jit == 1
    assert sorted(map(str, outs)) == sorted(map(str, [(x * 11 - 5).tolist(), np.cumsum(x).tolist()] * 8))
    eager_new = eager.stats["compiles"] - before_eager
    stagec.clear_caches()
    before = eager.stats["compiles"]
    snp.cumsum(x[::-1] * 0 + x)  # the same eager primitives once, on one thread
    assert eager_new == eager.stats["compiles"] - before
    assert not stages._building  # no lock left behind


# ---------------------------------------------------------------- donation, as JAX


def test_unusable_donation_keeps_the_array_and_warns():
    x, y = stagec.device_put(np.ones((2, 3), np.float32)), stagec.device_put(np.ones((1, 3), np.float32))
    with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: float32\[1,3\]"):
        z = stagec.jit(lambda a, b: a + b, donate_argnums=(1,))(x, y)
    assert not y.is_deleted() and np.asarray(y).tolist() == [[1, 1, 1]]
    np.testing.assert_array_equal(np.asarray(z), np.full((2, 3), 2.0))


def test_a_donated_argument_passed_by_keyword_is_donated():
    def f(a, b):
        return a * b
    x, y = stagec.device_put(np.ones(3, np.float32)), stagec.device_put(np.full(3, 2, np.float32))
    out = stagec.jit(f, donate_argnums=(1,))(x, b=y)
    assert y.is_deleted() and not x.is_deleted() and np.asarray(out).tolist() == [2, 2, 2]
    x2, y2 = stagec.device_put(np.ones(3, np.float32)), stagec.device_put(np.ones(3, np.float32))
    stagec.jit(f, donate_argnums=(0,))(b=y2, a=x2)
    assert x2.is_deleted() and not y2.is_deleted()


def test_donating_one_array_twice_raises_and_keeps_it():
    x = stagec.device_put(np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"the same array \(float32\[3\]\) is donated twice"):
        stagec.jit(lambda a, b: (a + b, a - b), donate_argnums=(0, 1))(x, x)
    assert not x.is_deleted()


def test_device_put_of_a_deleted_array_raises():
    x = stagec.device_put(np.ones(3, np.float32))
    x.delete()
    with pytest.raises(RuntimeError, match="device_put: Array has been deleted"):
        stagec.device_put(x)


# ---------------------------------------------------------------- fuzzing the files


@pytest.mark.parametrize("mode", ["artifact", "cache"])
@pytest.mark.compile  # (it compiles in a subprocess: not in --fast)
def test_fuzzed_artifacts_and_cache_entries_raise_or_recompute(tmp_path, mode):
    """Truncations, bit flips, bit flips with the checksum recomputed (without the key), lying metadata: in a
    subprocess, so that a crash or hang fails the test. STAGEC_FUZZ_CASES=1000 for a longer run."""
    n = int(os.environ.get("STAGEC_FUZZ_CASES", "60"))
    driver = os.path.join(os.path.dirname(__file__), "fuzz_files.py")
    r = subprocess.run([sys.executable, driver, mode, "16", str(n), str(tmp_path)], capture_output=True,
                       text=True, timeout=120 + n, env=os.environ)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and lines[-1:] == ["DONE"], f"rc {r.returncode}, last case: {lines[-1:]}\n{r.stderr}"
    outcomes = {}
    for line in lines[:-1]:
        _, i, kind, _, outcome = line.split()
        outcomes.setdefault(kind, set()).add(outcome)
    assert sum(1 for _ in lines[:-1]) == n
    if mode == "artifact":  # every mutated artifact is refused, at load or at the call
        assert outcomes == {"truncate": {"error:ArtifactError"}, "flip": {"error:ArtifactError"},
                            "flip+checksum": {"error:ArtifactError"}, "lie": outcomes["lie"]}
        assert outcomes["lie"] <= {"error:RuntimeError", "error:TypeError"}
    else:  # a damaged entry is recompiled; one with lying metadata is used with the trace's own avals
        assert outcomes == {"truncate": {"recompute"}, "flip": {"recompute"}, "flip+checksum": {"recompute"},
                            "lie": {"same"}}


def test_a_crashed_iree_compile_is_retried_without_data_tiling(monkeypatch):
    """iree-compile segfaults now and then on some modules with data tiling (docs/linalg.md): the compile is
    retried once without it; a crash without data tiling is a CompileError naming the function."""
    import subprocess

    import iree.compiler as ic

    from stagec import backend as B
    from stagec.compiler.targets import DATA_TILING
    real, seen = ic.compile_str, []

    def crashing(mlir, *, extra_args, **kw):
        seen.append(list(extra_args))
        if DATA_TILING in extra_args or len(seen) > 2:
            raise ic.CompilerToolError(subprocess.CompletedProcess(["iree-compile"], -11, b"", b"Segmentation fault"))
        return real(mlir, extra_args=extra_args, **kw)

    monkeypatch.setattr(ic, "compile_str", crashing)
    cpu = B.get_backend("cpu")
    mlir = stagec.jit(lambda x: x * 2.0).lower(np.ones(3, np.float32)).as_text("final")
    assert cpu.compile(mlir, "twice", cpu.compile_flags())  # a flatbuffer, from the second try
    assert DATA_TILING in seen[0] and DATA_TILING not in seen[1]
    with pytest.raises(stagec.errors.CompileError, match="thrice"):
        cpu.compile(mlir, "thrice", [f for f in cpu.compile_flags() if f != DATA_TILING])


def test_a_module_iree_compiled_but_cannot_run_is_named():
    """IREE 3.13 compiles some modules its runtime then refuses (a dispatch over more than 32 buffers, seen with
    forward mode over the gamma sampler's rule; iree-org/iree#24753): the error names the function and the
    limit, not a bare IndexError."""
    f = stagec.jit(lambda x: x + 1)
    x = stagec.device_put(np.float32(1))
    f(x)
    exe = next(iter(f._cache.values())).exe

    def refusing(*args):
        raise IndexError("c/runtime/src/iree/modules/hal/module.c:1106: OUT_OF_RANGE; binding count 34 > 32; "
                         "while invoking native function hal.command_buffer.dispatch; while calling import;")
    invoke, exe._invoke = exe._invoke, refusing  # (the executable's bound `context.invoke`)
    try:
        with pytest.raises(RuntimeError, match=r"IREE 3.13 cannot run jit_lambda: binding count 34 > 32"):
            f(x).block_until_ready()  # (a GPU's call is dispatched ahead: its error comes at the wait)
        exe._invoke = lambda *a: (_ for _ in ()).throw(IndexError("some other index error"))
        with pytest.raises(IndexError, match="some other"):  # (only the known refusals are translated)
            f(x).block_until_ready()
    finally:
        exe._invoke = invoke
    assert float(f(x)) == 2.0
