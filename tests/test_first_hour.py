"""What a new user meets first: the demo's lines, the `stagec` command's help and messages."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from stagec import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _demo(env: dict) -> str:
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "selu_demo.py")], env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _counts(out: str, what: str) -> tuple[int, int]:
    m = re.search(rf"{what}: (\d+) from the disk cache, (\d+) compiled by IREE", out)
    assert m, out
    return int(m[1]), int(m[2])


@pytest.mark.compile
def test_demo_counts_add_up_and_say_where_the_cache_is(tmp_path):
    env = dict(os.environ, STAGEC_CACHE_DIR=str(tmp_path / "cache"))
    cold, warm = _demo(env), _demo(env)
    for what in ("kernels", "fused module"):
        (hits0, made0), (hits1, made1) = _counts(cold, what), _counts(warm, what)
        assert hits0 == 0 and made1 == 0 and hits1 == made0 > 0, (what, cold, warm)
    assert _counts(cold, "fused module") == (0, 1)
    assert f"compiled modules persist in {tmp_path / 'cache'}" in cold
    off = _demo(dict(env, STAGEC_CACHE="0"))
    assert "disk cache off" in off and "persist" not in off and "(disk cache off)" in off


def test_dump_of_an_artifact_says_what_it_can_be_dumped_as(tmp_path, capsys):
    path = tmp_path / "selu.stagec"
    path.write_bytes(b"not read")
    assert cli.main(["dump", str(path)]) == 2
    err = capsys.readouterr().err
    assert "is an artifact" in err and f"stagec dump {path} --html" in err and "malformed" not in err


def test_help_writes_the_default_extension(capsys):
    for command in ([], ["compile"], ["run"], ["dump"]):
        with pytest.raises(SystemExit):
            cli.main([*command, "--help"])
        out = capsys.readouterr().out
        assert ".vmfb" not in out and (".stagec" in out or command == ["dump"]), out


def test_ci_runs_the_readme_test_command():
    readme = open(os.path.join(ROOT, "README.md")).read()
    command = re.search(r"\| the whole test suite \(what `\.ci/run` runs\) \| `([^`]+)` \|", readme)[1]
    lines = [ln for ln in open(os.path.join(ROOT, ".ci", "run")).read().splitlines() if ln and not ln.startswith("#")]
    assert lines[-1] == command and "--fast" not in command
    assert "ruff check" in open(os.path.join(ROOT, "scripts", "test.sh")).read()
