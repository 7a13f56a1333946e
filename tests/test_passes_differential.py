"""Differential test: random programs (elementwise ops, broadcasts, reductions, dots; random shapes
and dtypes) run through the CPU target's pipeline (and more) vs no optimization passes vs NumPy, on shapes on both
sides of the passes' size thresholds. Floats agree within float32 tolerances; integer and boolean programs agree
exactly."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stagec
import stagec.numpy as snp
from stagec.compiler import TARGETS
from stagec.passes import fold_constants, fuse, legalize, split_sums

# The CPU target's own passes (its workarounds among them), then upstream canonicalization and every cluster fused
# (legalization and the offloads run in both pipelines: they are not optional).
ALL_PASSES = [*TARGETS["cpu"].pipeline.passes, "canonicalize", "fuse-all"]
# Shapes past the size thresholds where passes change what they do: split-sums' MIN_ELEMENTS (and its rows),
# blas-dots' BLAS_MIN_MACS (`out @ x.T` of (130, 256)), fold-constants' MAX_ELEMENTS, fuse's MAX_ROW_BYTES.
LARGE = [(130, 256), (20, 1100), (17000,)]
assert 130 * 256 >= split_sums.MIN_ELEMENTS and 17000 >= split_sums.MIN_ELEMENTS
assert legalize.BLAS_MIN_MACS is None or 130 * 130 * 256 >= legalize.BLAS_MIN_MACS > 20 * 20 * 1100
assert 1100 * 4 > fuse.MAX_ROW_BYTES and 17000 > fold_constants.MAX_ELEMENTS

# name -> (arity, fn(module, *operands)); `m` is numpy or stagec.numpy. Float ops keep values bounded
# so that no documented numerics change (log(exp x) where exp overflows, ...) can show up.
FLOAT_OPS = {
    "add": (2, lambda m, a, b: a + b), "sub": (2, lambda m, a, b: a - b), "mul": (2, lambda m, a, b: m.tanh(a) * b),
    "div": (2, lambda m, a, b: a / (m.abs(b) + 1)), "max": (2, lambda m, a, b: m.maximum(a, b)),
    "min": (2, lambda m, a, b: m.minimum(a, b)), "sin": (1, lambda m, a: m.sin(a)), "cos": (1, lambda m, a: m.cos(a)),
    "tanh": (1, lambda m, a: m.tanh(a)), "exp": (1, lambda m, a: m.exp(m.tanh(a))),
    "log_exp": (1, lambda m, a: m.log(m.exp(m.tanh(a)))), "log_sqrt": (1, lambda m, a: m.log(m.sqrt(m.abs(a) + 1))),
    "negneg": (1, lambda m, a: -(-a)), "units": (1, lambda m, a: ((a * 1) + 0) / 1 - 0),
    "absabs": (1, lambda m, a: m.abs(m.abs(-a)) - m.maximum(a, a)),
    "scale": (1, lambda m, a: a * 0.5 + 1.5), "select": (2, lambda m, a, b: m.where(a > b, a, b - 1)),
    "select_const": (2, lambda m, a, b: m.where(m.ones_like(a) > 0, a, b)),
    "transpose2": (1, lambda m, a: m.transpose(m.transpose(a))), "reshape2": (1, lambda m, a: a.reshape(-1).reshape(a.shape)),
    "f16": (1, lambda m, a: a.astype(np.float16).astype(np.float32)),
    "row_bcast": (2, lambda m, a, b: a * b[..., :1]),
    "sum_keep": (2, lambda m, a, b: m.sum(a, axis=-1, keepdims=True) * 0.25 + b),
    "max_keep": (2, lambda m, a, b: b - m.max(a, axis=0, keepdims=True)),
    "mean_keep": (1, lambda m, a: a - m.mean(a, axis=-1, keepdims=True)),
    "sum_all": (2, lambda m, a, b: m.sum(m.sin(a) * a) * 0.1 + b),
}
INT_OPS = {
    "add": (2, lambda m, a, b: a + b), "sub": (2, lambda m, a, b: a - b), "mul": (2, lambda m, a, b: a * b),
    "max": (2, lambda m, a, b: m.maximum(a, b)), "min": (2, lambda m, a, b: m.minimum(a, b)),
    "neg": (1, lambda m, a: -a), "abs": (1, lambda m, a: m.abs(a)), "negneg": (1, lambda m, a: -(-a)),
    "units": (1, lambda m, a: (a * 1) + 0 - 0), "and": (2, lambda m, a, b: a & b),
    "idem": (1, lambda m, a: ~(~(m.minimum(a, a) & (a | a)))), "or": (2, lambda m, a, b: a | b),
    "xor": (2, lambda m, a, b: a ^ b), "select": (2, lambda m, a, b: m.where(a >= b, a, b * 3)),
    "const": (1, lambda m, a: a + (m.ones_like(a) * 7 - 2) * 3),
    "sum_keep": (2, lambda m, a, b: m.sum(a, axis=-1, keepdims=True, dtype=np.int32) + b),
    "min_keep": (2, lambda m, a, b: b - m.min(a, axis=0, keepdims=True)),
    "sum_all": (2, lambda m, a, b: m.sum(a * a, dtype=np.int32) + b),
    "i16": (1, lambda m, a: a.astype(np.int16).astype(np.int32)),
    "via_f32": (1, lambda m, a: (a % 1000).astype(np.float32).astype(np.int32)),
}
BOOL_OPS = {
    "and": (2, lambda m, a, b: a & b), "or": (2, lambda m, a, b: a | b), "xor": (2, lambda m, a, b: a ^ b),
    "not": (1, lambda m, a: ~a), "notnot": (1, lambda m, a: ~(~a)), "eq": (2, lambda m, a, b: a == b),
    "select": (2, lambda m, a, b: m.where(a, b, ~b)), "any_keep": (2, lambda m, a, b: m.any(a, axis=-1, keepdims=True) & b),
    "all_keep": (2, lambda m, a, b: m.all(a, axis=0, keepdims=True) | b),
}
OPS = {"float32": FLOAT_OPS, "int32": INT_OPS, "bool": BOOL_OPS}


@st.composite
def programs(draw):
    dtype = draw(st.sampled_from(sorted(OPS)))
    shape = tuple(draw(st.one_of(st.lists(st.integers(1, 5), min_size=1, max_size=3), st.sampled_from(LARGE))))
    ops = OPS[dtype]
    steps = []
    for i in range(draw(st.integers(1, 6))):
        name = draw(st.sampled_from(sorted(ops)))
        steps.append((name, [draw(st.integers(0, 2 + i)) for _ in range(ops[name][0])]))
    dot = dtype != "bool" and len(shape) == 2 and draw(st.booleans())
    seed = draw(st.integers(0, 2 ** 16))
    return dtype, shape, steps, dot, seed


def run(m, dtype, steps, dot, x, y, s):
    """Interpret a program with module `m` (numpy or stagec.numpy) on inputs x, y (full shape), s (scalar)."""
    ops = OPS[dtype]
    vals = [x, y, x * s if dtype != "bool" else x ^ s]
    for name, idx in steps:
        vals.append(ops[name][1](m, *[vals[i] for i in idx]))
    out = vals[-1]
    return (out, m.matmul(out, m.transpose(vals[0]))) if dot else (out,)


def _inputs(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == "float32":
        return (rng.uniform(-2, 2, shape).astype(np.float32), rng.uniform(-2, 2, shape).astype(np.float32),
                np.float32(rng.uniform(-2, 2)))
    if dtype == "int32":
        return rng.integers(-50, 50, shape, dtype=np.int32), rng.integers(-50, 50, shape, dtype=np.int32), np.int32(3)
    return rng.random(shape) < 0.5, rng.random(shape) < 0.5, np.bool_(True)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_pipeline_on_off_numpy(prog):
    dtype, shape, steps, dot, seed = prog
    args = _inputs(dtype, shape, seed)
    f = lambda x, y, s: run(snp, dtype, steps, dot, x, y, s)
    with np.errstate(all="ignore"):
        want = run(np, dtype, steps, dot, *args)
    on = stagec.jit(f, passes=ALL_PASSES)(*args)
    off = stagec.jit(f, passes="none")(*args)
    for w, a, b in zip(want, on, off):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape == np.shape(w)
        if dtype == "float32":
            scale = max(1.0, float(np.abs(w).max()))
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * scale)
            np.testing.assert_allclose(a, w, rtol=1e-4, atol=1e-4 * scale)
        else:
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(a, np.asarray(w).astype(a.dtype))
