"""`stagec.nn`'s result dtypes for bool, integer and half-float inputs against JAX's (as JAX 0.10.2 gave them; re-derived
live where JAX is installed). JAX writes its activations with a Python float or int beside x, so an integer x takes
the dtype that expression promotes to: elu(int32) is float64 under x64, softplus(int32) float32. `-`: JAX raises
(stagec computes in float32 there: no value a JAX program could rely on)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import stagec
import stagec.nn as nn
from numpy_diff import jax

INPUTS = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16"]
# name: the result's dtype for each input without x64 | with x64
TABLE = """
celu            f32  f32  f32  f32  f32  f32  f16  bf16 | f64  f64  f64  f64  f64  f64  f16  bf16
elu             f32  f32  f32  f32  f32  f32  f16  bf16 | f64  f64  f64  f64  f64  f64  f16  bf16
gelu            f32  f32  f32  f32  f32  f32  f16  bf16 | f32  f32  f32  f32  f32  f64  f16  bf16
glu             -    -    -    -    -    -    f16  bf16 | -    -    -    -    -    -    f16  bf16
hard_sigmoid    f32  f32  f32  f32  f32  f32  f16  bf16 | f64  f64  f64  f64  f64  f64  f16  bf16
hard_silu       f32  f32  f32  f32  f32  f32  f16  bf16 | f64  f64  f64  f64  f64  f64  f16  bf16
hard_swish      f32  f32  f32  f32  f32  f32  f16  bf16 | f64  f64  f64  f64  f64  f64  f16  bf16
hard_tanh       i32  i8   u8   i16  i32  i32  f16  bf16 | i64  i8   u8   i16  i32  i64  f16  bf16
leaky_relu      f32  f32  f32  f32  f32  f32  f16  bf16 | f64  f64  f64  f64  f64  f64  f16  bf16
log1mexp        -    f32  f32  f32  f32  f32  f16  bf16 | -    f32  f32  f32  f32  f64  f16  bf16
log_sigmoid     -    f32  f32  f32  f32  f32  f16  bf16 | -    f32  f32  f32  f32  f64  f16  bf16
log_softmax     -    f32  f32  f32  f32  f32  f16  bf16 | -    f32  f32  f32  f32  f64  f16  bf16
logmeanexp      f32  f32  f32  f32  f32  f32  f16  bf16 | f32  f32  f32  f32  f32  f64  f16  bf16
logsumexp       f32  f32  f32  f32  f32  f32  f16  bf16 | f32  f32  f32  f32  f32  f64  f16  bf16
mish            f32  f32  f32  f32  f32  f32  f16  bf16 | f64  f32  f32  f32  f32  f64  f16  bf16
one_hot         -    f32  f32  f32  f32  f32  f32  f32  | -    f64  f64  f64  f64  f64  f64  f64
relu            i32  i8   u8   i16  i32  i32  f16  bf16 | i64  i8   u8   i16  i32  i64  f16  bf16
relu6           f32  f32  f32  f32  f32  f32  f16  bf16 | f64  f64  f64  f64  f64  f64  f16  bf16
selu            f32  f32  f32  f32  f32  f32  f16  bf16 | f64  f64  f64  f64  f64  f64  f16  bf16
sigmoid         -    -    -    -    -    -    f16  bf16 | -    -    -    -    -    -    f16  bf16
silu            -    -    -    -    -    -    f16  bf16 | -    -    -    -    -    -    f16  bf16
soft_sign       f32  f32  f32  f32  f32  f32  f16  bf16 | f64  f32  f32  f32  f32  f64  f16  bf16
softmax         -    f32  f32  f32  f32  f32  f16  bf16 | -    f32  f32  f32  f32  f64  f16  bf16
softplus        f32  f32  f32  f32  f32  f32  f16  bf16 | f64  f32  f32  f32  f32  f64  f16  bf16
sparse_plus     f32  f32  f32  f32  f32  f32  f16  bf16 | f64  f64  f64  f64  f64  f64  f16  bf16
sparse_sigmoid  f32  f32  f32  f32  f32  f32  f16  bf16 | f64  f64  f64  f64  f64  f64  f16  bf16
squareplus      f32  f32  f32  f32  f32  f32  f16  bf16 | f32  f32  f32  f32  f32  f64  f16  bf16
standardize     f32  f32  f32  f32  f32  f32  f16  bf16 | f32  f32  f32  f32  f32  f64  f16  bf16
swish           -    -    -    -    -    -    f16  bf16 | -    -    -    -    -    -    f16  bf16
tanh            f32  f32  f32  f32  f32  f32  f16  bf16 | f32  f32  f32  f32  f32  f64  f16  bf16
"""
_CODE = {"b1": "bool", "i8": "int8", "u8": "uint8", "i16": "int16", "i32": "int32", "i64": "int64", "f16": "float16",
         "bf16": "bfloat16", "f32": "float32", "f64": "float64"}
ROWS = {}
for _line in TABLE.strip().splitlines():
    _name, _rest = _line.split(None, 1)
    ROWS[_name] = [dict(zip(INPUTS, half.split())) for half in _rest.split("|")]


def _input(dtype: str) -> np.ndarray:
    return np.arange(-2, 2).astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)


def _call(mod, name: str, x):
    return getattr(mod, name)(x, 4) if name == "one_hot" else getattr(mod, name)(x)


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_nn_result_dtypes_match_jax(x64):
    old = stagec.config.enable_x64
    stagec.config.update("enable_x64", x64)
    try:
        wrong = [(name, dt, want, str(stagec.eval_shape(lambda x: _call(nn, name, x), _input(dt)).dtype))
                 for name, halves in ROWS.items() for dt, want in halves[x64].items() if want != "-"]
    finally:
        stagec.config.update("enable_x64", old)
    wrong = [w for w in wrong if _CODE[w[2]] != w[3]]
    assert not wrong, f"(function, input, JAX's, stagec's): {wrong}"


@pytest.mark.skipif(jax is None, reason="re-derives the table live; the stored table above is checked without JAX")
@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_stored_table_is_what_jax_gives(x64):
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", x64)
    try:
        for name, halves in ROWS.items():
            for dt, want in halves[x64].items():
                try:
                    got = str(jax.eval_shape(lambda x: _call(jax.nn, name, x), _input(dt)).dtype)
                except TypeError:
                    got = "-"
                assert got == (want if want == "-" else _CODE[want]), (name, dt)
    finally:
        jax.config.update("jax_enable_x64", before)
