"""Nothing stagec creates outlives its process unless meant to (the disk cache)."""
from __future__ import annotations

import os
import subprocess
import sys

_SCRIPT = """
import numpy as np, stagec, stagec.numpy as snp
x = snp.arange(8.0)
y = snp.exp(x) * 2 + 1                      # eager kernels (linked by the host's linker: loaded from a file)
f = stagec.jit(lambda a: snp.tanh(a) * a)
np.testing.assert_allclose(np.asarray(f(x)), np.tanh(np.arange(8.0)) * np.arange(8.0), rtol=1e-6)
print(float(y.sum()))
"""


def test_a_process_leaves_nothing_in_tmpdir(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IREE_PRESERVE", "_STAGEC_DYLIB"))}
    env["TMPDIR"] = str(tmp)
    for _ in range(2):  # compiling (a cold cache) and loading from the disk cache (a warm one)
        r = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        assert sorted(os.listdir(tmp)) == []
