"""Regenerate tests/data/random_vectors.json from JAX (run once; needs `pip install jax`):

    python tests/data/make_random_vectors.py

For each case of tests/random_cases.py it stores the dtype, shape, the bit patterns of the first values
and, for exact cases, a SHA-256 of all of them, so tests/test_random.py checks stagec.random without JAX.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import jax  # noqa: E402
import jax.random as jr  # noqa: E402

from random_cases import CASES, HEAD, SEED, SEEDS_X32, bit_view  # noqa: E402


def record(x: np.ndarray, kind: str) -> dict:
    bits = bit_view(x).ravel()
    out = {"dtype": x.dtype.name, "shape": list(x.shape), "head": [int(v) for v in bits[:HEAD]]}
    if kind == "exact":
        out["sha256"] = hashlib.sha256(bits.tobytes()).hexdigest()
    return out


def main() -> None:
    cases = {}
    for name, (call, kind) in CASES.items():
        jax.config.update("jax_enable_x64", name.startswith("x64_"))
        cases[name] = record(np.asarray(call(jr, jr.PRNGKey(SEED))), kind)
    jax.config.update("jax_enable_x64", False)
    seeds = {str(s): [int(v) for v in np.asarray(jr.PRNGKey(s))] for s in SEEDS_X32}
    data = {"jax_version": jax.__version__, "prng": jax.config.jax_default_prng_impl,
            "threefry_partitionable": bool(jax.config.jax_threefry_partitionable), "seed": SEED,
            "seeds": seeds, "cases": cases}
    path = os.path.join(HERE, "random_vectors.json")
    with open(path, "w") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(cases)} cases)")


if __name__ == "__main__":
    main()
