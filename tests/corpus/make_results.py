"""Regenerate the stored JAX results: `python tests/corpus/make_results.py` (needs `pip install jax==0.10.2`).

Runs every corpus program unchanged under JAX on the CPU (64-bit types off, JAX's default) and writes
`results/<program>.npz`, with the JAX version in `results/VERSION`."""
from __future__ import annotations

import os
import pathlib
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from corpus.port import HERE, PROGRAMS, run  # noqa: E402


def main(names=None) -> None:
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    for name in names or PROGRAMS:
        res = run(name, "jax")
        np.savez_compressed(out / f"{name}.npz", **res)
        print(f"{name}: {', '.join(f'{k}{list(v.shape)}' for k, v in res.items())}")
    (out / "VERSION").write_text(f"jax {jax.__version__}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
