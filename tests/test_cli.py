"""The `stagec` command: compile / dump / run / cache, its one-line errors, and its help."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from stagec import aot, cli
from stagec.compiler import HOST_BLAS
from stagec.config import config

MODULE = textwrap.dedent("""
    import stagec, stagec.numpy as snp

    @stagec.jit
    def power_sum(x, k, n=2):
        y = x
        for _ in range(n - 1):
            y = y * x
        return {"y": y * k, "total": (y * k).sum()}

    def selu(x):
        return 1.05 * snp.where(x > 0, x, 1.67 * snp.exp(x) - 1.67)
""")


@pytest.fixture(scope="module")
def mod_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("climod")
    (d / "cli_demo_mod.py").write_text(MODULE)
    sys.path.insert(0, str(d))
    yield d
    sys.path.remove(str(d))


@pytest.fixture(scope="module")
def artifact(mod_dir):
    out = mod_dir / "f.vmfb"
    assert cli.main(["compile", "cli_demo_mod:power_sum", "--arg", "f32[16]", "--arg", "i32[]", "--static", "n=3",
                     "--target", "llvm-cpu", "-o", str(out)]) == 0
    return out


def run_err(capsys, argv) -> tuple[int, str]:
    try:
        code = cli.main(argv)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err.strip()
    return code, err


def test_compile_writes_a_loadable_artifact(artifact):
    _, meta = aot.read(artifact)
    assert meta["target"] == "llvm-cpu" and meta["name"] == "jit_power_sum"
    assert [a["shape"] for a in meta["in_avals"]] == [[16], []]
    assert [a["dtype"] for a in meta["in_avals"]] == ["float32", "int32"]


def test_run_prints_and_saves_outputs(artifact, tmp_path, capsys):
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    assert cli.main(["run", str(artifact), "--input", str(tmp_path / "x.npy"), "--input", "2"]) == 0
    out = capsys.readouterr().out
    assert "output 0 ['total']: float32[]" in out and "output 1 ['y']: float32[16]" in out
    assert cli.main(["run", str(artifact), "--input", str(tmp_path / "x.npy"), "--input", "2",
                     "-o", str(tmp_path / "out.npz")]) == 0
    z = np.load(tmp_path / "out.npz")
    np.testing.assert_allclose(z["out1"], x ** 3 * 2, rtol=1e-6)
    np.testing.assert_allclose(z["out0"], (x ** 3 * 2).sum(), rtol=1e-5, atol=1e-6)


def test_run_errors_name_the_file_and_expectation(artifact, tmp_path, capsys):
    np.save(tmp_path / "short.npy", np.zeros(5, np.float32))
    code, err = run_err(capsys, ["run", str(artifact), "--input", str(tmp_path / "short.npy"), "--input", "2"])
    assert code == 2 and "f.vmfb" in err and "argument 0 to be float32[16], got float32[5]" in err
    code, err = run_err(capsys, ["run", str(artifact), "--input", "1.0"])
    assert code == 2 and "takes 2 input(s) (float32[16], int32[]), got 1" in err
    (tmp_path / "plain.vmfb").write_bytes(b"\0" * 200)
    code, err = run_err(capsys, ["run", str(tmp_path / "plain.vmfb")])
    assert code == 2 and "plain.vmfb: not a stagec artifact" in err and "iree-run-module" in err
    assert len(err.splitlines()) == 1


def test_dump_stages(mod_dir, capsys):
    assert cli.main(["dump", "cli_demo_mod:selu", "--arg", "f32[8,8]", "--stage", "traced"]) == 0
    traced = capsys.readouterr().out
    assert "func.func @main(%arg0: tensor<8x8xf32>)" in traced and "stablehlo.exponential" in traced
    assert cli.main(["dump", "cli_demo_mod:selu", "--arg", "f32[8,8]", "--stage", "all"]) == 0
    every = capsys.readouterr().out
    assert "// ----- stage: traced" in every and "// ----- stage: final" in every
    code, err = run_err(capsys, ["dump", "cli_demo_mod:selu", "--arg", "f32[8,8]", "--stage", "nope"])
    assert code == 2 and "unknown stage 'nope'; stages of jit_selu: traced," in err and "stablehlo" in err
    assert "final, iree-input (= final) (or all)" in err
    assert cli.main(["dump", "cli_demo_mod:selu", "--arg", "f32[8,8]"]) == 0  # default: the StableHLO stage
    out = capsys.readouterr().out
    assert "stablehlo.exponential" in out and "linalg" not in out


@pytest.mark.parametrize("argv, message", [
    (["compile", "cli_demo_mod:selu", "--arg", "f32[4]", "--target", "tpu"],
     "invalid choice: 'tpu' (choose from 'llvm-cpu', 'vulkan-spirv', 'cuda'"),
    (["compile", "cli_demo_mod:selu", "--arg", "f32x4"], "malformed argument spec 'f32x4'; write DTYPE[DIMS]"),
    (["compile", "cli_demo_mod:selu", "--arg", "q8[4]"], "unknown dtype 'q8' in 'q8[4]'; choose one of"),
    (["compile", "no_such_module_xyz:f", "--arg", "f32[4]"], "cannot import module 'no_such_module_xyz'"),
    (["compile", "cli_demo_mod:nope", "--arg", "f32[4]"], "has no function 'nope'; its callables: power_sum, selu"),
    (["compile", "cli_demo_mod", "--arg", "f32[4]"], "malformed function reference 'cli_demo_mod'"),
    (["compile", "cli_demo_mod:selu", "--arg", "f64[4]"], "is 64-bit; pass --x64"),
    (["compile", "cli_demo_mod:selu", "--static", "oops"], "malformed --static 'oops'; write NAME=VALUE"),
    (["cache", "prune"], "cache prune needs --max-size"),
    (["cache", "prune", "--max-size", "lots"], "invalid size 'lots'"),
    (["cache", "frobnicate"], "invalid choice: 'frobnicate' (choose from 'info', 'clear', 'prune')"),
])
def test_one_line_errors(mod_dir, capsys, argv, message):
    code, err = run_err(capsys, argv)
    assert code == 2
    assert message in err
    assert len(err.splitlines()) == 1, err


def test_cache_commands(tmp_path, monkeypatch, capsys, mod_dir):
    monkeypatch.setenv("STAGEC_CACHE_DIR", str(tmp_path / "c"))
    assert cli.main(["compile", "cli_demo_mod:selu", "--arg", "f32[3]", "-o", str(tmp_path / "s.stagec")]) == 0
    capsys.readouterr()
    assert cli.main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path / "c") in out and "entries:  1" in out
    assert cli.main(["cache", "prune", "--max-size", "1G"]) == 0
    assert "removed 0" in capsys.readouterr().out
    assert cli.main(["cache", "prune", "--max-size", "0"]) == 0
    assert "removed 1" in capsys.readouterr().out
    assert cli.main(["cache", "clear"]) == 0
    assert "removed 0 entries" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["compile", "dump", "run", "cache"])
def test_help_shows_an_example(command, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main([command, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "example:" in out and f"stagec {command}" in out


def test_console_script_and_python_m(artifact, tmp_path):
    """The installed `stagec` script and `python -m stagec` both run (here: a saved artifact)."""
    x = np.ones(16, np.float32)
    np.save(tmp_path / "x.npy", x)
    script = os.path.join(os.path.dirname(sys.executable), "stagec")
    installed = os.path.exists(script)  # (not where stagec is imported from a checkout: PYTHONPATH, no install)
    for argv in ([sys.executable, "-m", "stagec"], *([[script]] if installed else [])):
        r = subprocess.run([*argv, "run", str(artifact), "--input", str(tmp_path / "x.npy"), "--input", "3",
                            "-o", str(tmp_path / "y.npz")], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "wrote 2 output(s)" in r.stderr and "leaked" not in r.stderr
        np.testing.assert_allclose(np.load(tmp_path / "y.npz")["out1"], x * 3)
    if not installed:
        pytest.skip(f"`python -m stagec` ran; no `stagec` script installed beside {sys.executable}")


def test_compiled_matmul_runs_in_iree_tools_unless_it_calls_blas(mod_dir, tmp_path):
    """`stagec compile` leaves large matmuls to IREE (the artifact runs in `iree-run-module`); `--host-blas` makes
    them calls to stagec's BLAS module, which `stagec run` provides."""
    (mod_dir / "cli_mm_mod.py").write_text("def mm(a, b):\n    return a @ b\n")
    plain, blas = tmp_path / "mm.stagec", tmp_path / "mm_blas.stagec"
    spec = ["compile", "cli_mm_mod:mm", "--arg", "f32[256,256]", "--arg", "f32[256,256]", "-o"]
    assert cli.main([*spec, str(plain)]) == 0 and cli.main([*spec, str(blas), "--host-blas"]) == 0
    assert HOST_BLAS not in aot.read(plain)[1]["flags"]
    assert HOST_BLAS in aot.read(blas)[1]["flags"]
    a = np.full((256, 256), 0.5, np.float32)
    np.save(tmp_path / "a.npy", a)
    tool = os.path.join(os.path.dirname(sys.executable), "iree-run-module")
    if os.path.exists(tool):
        r = subprocess.run([tool, f"--module={plain}", "--device=local-sync", "--function=main",
                            f"--input=@{tmp_path / 'a.npy'}", f"--input=@{tmp_path / 'a.npy'}",
                            f"--output=@{tmp_path / 'iree_out.npy'}"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-1000:]
        np.testing.assert_allclose(np.load(tmp_path / "iree_out.npy"), a @ a, rtol=1e-6)
    assert cli.main(["run", str(blas), "--input", str(tmp_path / "a.npy"), "--input", str(tmp_path / "a.npy"),
                     "-o", str(tmp_path / "out.npy")]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), a @ a, rtol=1e-6)
    assert config.cpu_blas  # (the command restores the setting it changed)


# ---------------------------------------------------------------- issue 43: every error one line, exit 2


def x16(tmp_path) -> str:
    p = tmp_path / "x16.npy"
    np.save(p, np.ones(16, np.float32))
    return str(p)


def one_line_2(capsys, argv, match: str) -> None:
    code, err = run_err(capsys, argv)
    assert code == 2 and "\n" not in err and "Traceback" not in err, (code, err)
    assert match in err, err


def test_npy_inputs_are_refused_like_literals(artifact, tmp_path, capsys):
    big = tmp_path / "big.npy"
    np.save(big, np.full(16, 1e39, np.float64))
    one_line_2(capsys, ["run", str(artifact), "--input", str(big), "--input", "2"], "not exactly representable")
    k = tmp_path / "k.npy"
    np.save(k, np.int64(2 ** 33 + 3))
    one_line_2(capsys, ["run", str(artifact), "--input", x16(tmp_path), "--input", str(k)], "not exactly representable")
    np.save(k, np.int64(3))  # (a value that fits converts)
    assert cli.main(["run", str(artifact), "--input", x16(tmp_path), "--input", str(k)]) == 0


def test_compile_output_errors(mod_dir, tmp_path, capsys, monkeypatch):
    base = ["compile", "cli_demo_mod:selu", "--arg", "f32[4]", "-o"]
    one_line_2(capsys, base + [str(tmp_path / "missing" / "f.stagec")], "does not exist")
    one_line_2(capsys, base + [str(tmp_path)], "is a folder")

    def full(path, data):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(aot, "write_atomic", full)
    one_line_2(capsys, base + [str(tmp_path / "f.stagec")], "No space left on device")


def test_more_one_line_errors(mod_dir, artifact, tmp_path, capsys, monkeypatch):
    one_line_2(capsys, ["compile", "cli_demo_mod:selu", "--arg", "f32[99999999999999999999]"], "elements")
    one_line_2(capsys, ["run", str(artifact), "--input", x16(tmp_path), "--input", "1j"], "not exactly representable")
    one_line_2(capsys, ["run", str(artifact), "--input", x16(tmp_path), "--input", "2", "-o", str(tmp_path)],
               "is a folder")
    assert not (tmp_path.parent / (tmp_path.name + ".npz")).exists()
    monkeypatch.setattr(config, "_values", dict(config._values, persistent_cache_max_size="lots"))
    one_line_2(capsys, ["cache", "info"], "invalid size 'lots'")


def test_a_bad_environment_value_is_named_in_one_line():
    env = dict(os.environ, STAGEC_JIT_CACHE_SIZE="abc")
    r = subprocess.run([sys.executable, "-m", "stagec", "cache", "info"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "STAGEC_JIT_CACHE_SIZE takes a whole number, not 'abc'" in r.stderr


def test_run_trust_on_a_module_the_runtime_refuses(artifact, tmp_path, capsys):
    _, meta = aot.read(artifact)
    bad = tmp_path / "bad.stagec"
    aot.write_atomic(bad, aot.pack(b"\x00" * 64, meta))
    one_line_2(capsys, ["run", str(bad), "--trust", "--input", x16(tmp_path), "--input", "2"], "bad.stagec")
