"""`upcast-half-dots`: on the CPU a float16 or bfloat16 matmul of at least 64^3 multiply-adds runs in float32 on operands
converted beforehand (behind a barrier); the results are those of a float32 accumulation rounded once."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import lax

pytestmark = pytest.mark.cpu_only  # (the CPU pipeline's `upcast-half-dots`)

RNG = np.random.default_rng(5)
A = (RNG.standard_normal((64, 96)) / 8).astype(np.float16)
B = (RNG.standard_normal((96, 48)) / 8).astype(np.float16)

CASES = {  # name -> (stagec function, its NumPy value on float32 operands, result dtype, rewritten)
    "a @ b": (lambda a, b: a @ b, lambda a, b: a @ b, np.float16, True),
    "tanh(a @ b)": (lambda a, b: snp.tanh(a @ b), lambda a, b: np.tanh((a @ b).astype(np.float16)), np.float16, True),
    "float32 result": (lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=np.float32),
                       lambda a, b: a @ b, np.float32, True),
    "batched": (lambda a, b: snp.stack([a, a]) @ snp.stack([b, b]), lambda a, b: np.stack([a @ b] * 2), np.float16, True),
    "small": (lambda a, b: a[:8] @ b[:, :8], lambda a, b: a[:8] @ b[:, :8], np.float16, False),
}


@functools.cache
def _values(half: np.dtype) -> dict:
    """Every case's result on (A, B) in `half`, from one module (each dot is rewritten on its own)."""
    got = stagec.jit(lambda a, b: {n: fn(a, b) for n, (fn, *_) in CASES.items()})(A.astype(half), B.astype(half))
    return {n: np.asarray(v) for n, v in got.items()}


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_half_matmuls_run_in_float32(name, half):
    fn, ref, dtype, rewritten = CASES[name]
    half = np.dtype(snp.bfloat16 if half == "bfloat16" else np.float16)
    dtype = half if dtype == np.float16 else dtype
    a, b = A.astype(half), B.astype(half)
    f = stagec.jit(fn)
    text = f.lower(a, b).as_text("upcast-half-dots")
    assert ("optimization_barrier" in text) == rewritten
    dot_line = next(line for line in text.splitlines() if "stablehlo.dot_general" in line)
    mlir_half = "xf16>" if half == np.float16 else "xbf16>"
    assert (mlir_half + ", tensor<" in dot_line) != rewritten  # the matmul's operands: float32 once rewritten
    got = _values(half)[name]
    assert got.dtype == dtype
    want = ref(a.astype(np.float32), b.astype(np.float32)).astype(dtype)  # float32 accumulation, rounded once
    tol = 2e-3 if half == np.float16 else 1e-2  # (one rounding of the result: half an ulp of its type)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=tol, atol=tol)


def test_upcast_only_on_the_cpu():
    for backend, want in (("cpu", 1), ("cuda", 0)):
        low = stagec.jit(lambda a, b: a @ b, backend=backend).lower(A, B)
        assert ("upcast-half-dots" in low.stages()) == bool(want), backend
        assert low.as_text("final").count("optimization_barrier") == want, backend
