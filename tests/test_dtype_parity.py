"""Result dtypes of every public function of `numpy`, `lax`, `scipy.special` and `nn` called on one or two arrays of
each of ten dtypes, with and without x64, against JAX 0.10.2's (stored in tests/data/jax_result_dtypes.json;
re-derived live where JAX is installed; `python tests/test_dtype_parity.py` rewrites the file). Where JAX gives a
dtype, stagec gives the same one, or raises for a reason listed in `RAISES` (never another dtype, but for
`WIDENS`). Abstract evaluation only: nothing compiles."""
from __future__ import annotations

import inspect
import json
import os
import sys
import warnings

import ml_dtypes
import numpy as np
import pytest
from numpy_diff import jax

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "jax_result_dtypes.json")
DTYPES = ["bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64"]
# Not array functions, or crashing JAX 0.10.2 when handed arrays (`can_cast(x, x)`, `array_repr`: a segfault).
SKIP = {"load", "save", "savez", "fromfile", "fromfunction", "frompyfunc", "vectorize", "piecewise", "apply_along_axis",
        "apply_over_axes", "from_dlpack", "einsum_path", "printoptions", "set_printoptions", "get_printoptions",
        "array_repr", "array_str", "array2string", "can_cast", "show_config", "info", "while_loop", "fori_loop", "scan",
        "cond", "switch", "map", "associative_scan", "custom_root", "custom_linear_solve", "stop_gradient",
        "optimization_barrier", "with_sharding_constraint", "create_token", "after_all"}
# Functions that raise (naming themselves) for some of these inputs where JAX computes: the reason.
RAISES = {
    "jnp.arctan2": "complex: NotImplementedError (docs/jax-differences.md)", "jnp.atan2": "complex, as arctan2",
    "lax.atan2": "complex, as arctan2", "jnp.logaddexp": "complex: NotImplementedError (docs/jax-differences.md)",
    "jnp.logaddexp2": "complex, as logaddexp", "nn.softplus": "complex: logaddexp's", "nn.log_sigmoid": "complex",
    "special.erfcx": "complex", "special.gamma": "complex", "lax.sort": "complex keys (snp.sort takes them)",
    "lax.sort_key_val": "complex keys", "lax.cumlogsumexp": "integer and complex operands",
    "jnp.select": "a condlist not of booleans (NumPy's TypeError)", "jnp.take": "boolean indices",
    "jnp.roll": "a shift Array of floats or booleans", "jnp.gradient": "boolean coordinates",
    "jnp.issubdtype": "arrays given as dtypes",
}
# (function, input dtype, x64): the Array API's and NumPy's widening of small integers (docs/jax-differences.md).
WIDENS = {("jnp.cumulative_prod", d, x64) for d in ("int8", "uint8") for x64 in (False, True)} | {
    ("jnp.cumulative_prod", "int32", True)}


def _names(jnp, lax, special, nn) -> dict:
    def public(m):
        return sorted(n for n in dir(m) if not n.startswith("_") and n not in SKIP and callable(getattr(m, n))
                      and not inspect.isclass(getattr(m, n)))
    return {"jnp": public(jnp), "lax": public(lax), "special": public(special), "nn": public(nn)}


def sweep(mods: dict, eval_shape, names: dict) -> dict:
    """{"module.name/nargs": [the result's dtypes (comma-joined leaves) or "-" where it raised, per `DTYPES`]}."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for m, ns in names.items():
            for n in ns:
                fn = getattr(mods[m], n, None)
                if fn is None:
                    continue
                for nargs in (1, 2):
                    row = []
                    for dt in DTYPES:
                        x = np.arange(1, 5).astype(ml_dtypes.bfloat16 if dt == "bfloat16" else dt)
                        try:
                            r = eval_shape(fn, *[x] * nargs)
                            leaves = r if isinstance(r, (tuple, list)) else [r]
                            row.append(",".join(str(getattr(v, "dtype", type(v).__name__)) for v in leaves))
                        except Exception:
                            row.append("-")
                    out[f"{m}.{n}/{nargs}"] = row
    return out


def _jax_table(pick=lambda name: True) -> dict:
    import jax
    import jax.nn
    import jax.numpy as jnp
    import jax.scipy.special as special
    from jax import lax
    mods = {"jnp": jnp, "lax": lax, "special": special, "nn": jax.nn}
    before, table = jax.config.jax_enable_x64, {}
    try:
        for mode in ("x32", "x64"):
            jax.config.update("jax_enable_x64", mode == "x64")
            names = {m: [n for n in ns if pick(n)] for m, ns in _names(jnp, lax, special, jax.nn).items()}
            table[mode] = sweep(mods, jax.eval_shape, names)
    finally:
        jax.config.update("jax_enable_x64", before)
    return table


_CODES = {"bool": "b1", "int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16", "int32": "i32", "uint32": "u32",
          "int64": "i64", "uint64": "u64", "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
          "complex64": "c64", "complex128": "c128", "-": "-"}
_NAMES = {v: k for k, v in _CODES.items()}


def _encode(row: list) -> str:
    return " ".join("/".join(_CODES.get(d, d) for d in cell.split(",")) for cell in row)


def _decode(text: str) -> list:
    return [",".join(_NAMES.get(d, d) for d in cell.split("/")) for cell in text.split()]


def _stored() -> dict:
    """The stored table (rows where JAX raised for every dtype are left out)."""
    with open(DATA) as f:
        return {mode: {k: _decode(v) for k, v in rows.items()} for mode, rows in json.load(f).items()}


@pytest.mark.parametrize("mode", ["x32", "x64"])
def test_result_dtypes_match_jax(mode):
    import stagec
    import stagec.nn
    import stagec.numpy as snp
    import stagec.scipy.special as special
    from stagec import lax
    want = _stored()[mode]
    names: dict = {}
    for key in want:
        m, n = key.split("/")[0].split(".")
        names.setdefault(m, set()).add(n)
    old = stagec.config.enable_x64
    stagec.config.update("enable_x64", mode == "x64")
    try:
        got = sweep({"jnp": snp, "lax": lax, "special": special, "nn": stagec.nn}, stagec.eval_shape,
                    {m: sorted(ns) for m, ns in names.items()})
    finally:
        stagec.config.update("enable_x64", old)
    wrong = []
    for key, row in want.items():
        if key not in got:  # (a name stagec lacks: tests/test_api_names.py checks it raises NotInStagec)
            continue
        fn = key.split("/")[0]
        for dt, w, g in zip(DTYPES, row, got[key]):
            if w == "-" or g == w or (g == "-" and fn in RAISES) or (fn, dt, mode == "x64") in WIDENS:
                continue
            wrong.append((key, dt, w, g))
    assert not wrong, f"(function/arguments, input dtype, JAX's, stagec's; '-' raised): {wrong}"
    assert len(want) > 400 and sum(len(v) for v in got.values()) > 7000  # (the sweep ran)


@pytest.mark.skipif(jax is None, reason="re-derives the table live; the stored table is checked without JAX")
def test_stored_table_is_what_jax_gives():
    """One function in six re-derived (the whole table takes JAX ~50 s): a stale table shows."""
    def pick(name):
        return sum(map(ord, name)) % 6 == 0
    stored, live = _stored(), _jax_table(pick)
    for mode, rows in live.items():
        assert {k: v for k, v in rows.items() if set(v) != {"-"}} == {k: v for k, v in stored[mode].items()
                                                                       if pick(k.split("/")[0].split(".")[1])}


if __name__ == "__main__":
    table = _jax_table()
    with open(DATA, "w") as f:  # (one function's row a line)
        f.write("{\n" + ",\n".join(f"{json.dumps(mode)}: {{\n" + ",\n".join(
            f"{json.dumps(k)}: {json.dumps(_encode(v))}" for k, v in sorted(rows.items()) if set(v) != {"-"}) + "\n}"
            for mode, rows in table.items()) + "\n}\n")
    print(f"wrote {DATA}: {sum(len(v) for v in table.values())} rows", file=sys.stderr)
