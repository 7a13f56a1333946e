"""Differential testing for `stagec.numpy`: run a function eagerly, under `jit` and in NumPy, and compare.

Values are compared with NumPy (exactly for integers and booleans, within the result dtype's tolerance
for floats, NaN matching NaN); result dtypes and weak types are compared with JAX's promotion, asked of
`jax.eval_shape` (which compiles nothing). Jitted functions are cached per function object, so a test
that reuses module-level functions compiles once per signature, however many examples hypothesis draws.
"""
from __future__ import annotations

import os
from typing import Any, Callable

import ml_dtypes
import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import stagec
from stagec.dtypes import kind

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover - jax is in the dev environment; without it dtypes are not cross-checked
    jax = jnp = None

F16, F32, I8, I16, I32, U8, U16, U32, BOOL = (np.dtype(t) for t in (
    np.float16, np.float32, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32, np.bool_))
BF16 = np.dtype(ml_dtypes.bfloat16)
TOL = {F16: (4e-3, 4e-3), BF16: (1.6e-2, 1.6e-2), F32: (2e-5, 2e-6), np.dtype(np.complex64): (2e-5, 2e-6)}
SHAPES = [(), (0,), (3,), (2, 3)]
# Examples per hypothesis test: most draw a new signature (a compile), so the default keeps the suite fast;
# STAGEC_HYPOTHESIS_EXAMPLES=50 explores further.
MAX_EXAMPLES = int(os.environ.get("STAGEC_HYPOTHESIS_EXAMPLES", "2"))

_JITS: dict[Any, Callable] = {}


def jitted(fn: Callable) -> Callable:
    """The one `stagec.jit` of `fn` (module-level functions keep their compiled signatures across examples)."""
    j = _JITS.get(fn)
    if j is None:
        j = _JITS[fn] = stagec.jit(fn)
    return j


@pytest.fixture(params=["x32", "x64"])
def x64mode(request):
    """Each test twice, with x64 off and on (the fixture's value); restores the previous setting."""
    old = stagec.config.enable_x64
    stagec.config.update("enable_x64", request.param == "x64")
    yield request.param == "x64"
    stagec.config.update("enable_x64", old)


def float_elems(dtype, lo: float = -100.0, hi: float = 100.0):
    dtype = np.dtype(dtype)
    if dtype == BF16:  # hypothesis knows no bfloat16: draw float32 values that bfloat16 holds exactly
        return float_elems(F32, lo, hi).map(lambda v: float(np.float32(v).astype(BF16)))
    width = {F16: 16, F32: 32}[dtype]
    lo, hi = float(np.asarray(lo, dtype)), float(np.asarray(hi, dtype))  # representable bounds
    # Tiny magnitudes become 0: x / 1e-38 overflows float32 but not the float64 reference.
    return st.floats(lo, hi, width=width, allow_nan=False, allow_infinity=False, allow_subnormal=False).map(
        lambda v: v if abs(v) >= 1e-4 else 0.0 * v)


def elements(dtype, lo=None, hi=None):
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return st.booleans()
    if kind(dtype) in "iu":
        info = np.iinfo(dtype)
        return st.integers(info.min if lo is None else max(lo, info.min), info.max if hi is None else min(hi, info.max))
    return float_elems(dtype, -100.0 if lo is None else lo, 100.0 if hi is None else hi)


def arrays(dtype, shape, lo=None, hi=None):
    if np.dtype(dtype) == BF16:
        return hnp.arrays(F32, shape, elements=elements(dtype, lo, hi)).map(lambda a: a.astype(BF16))
    return hnp.arrays(np.dtype(dtype), shape, elements=elements(dtype, lo, hi))


def leaves(x) -> list:
    if isinstance(x, (tuple, list)):
        return [l for v in x for l in leaves(v)]
    if isinstance(x, dict):
        return [l for k in sorted(x) for l in leaves(x[k])]
    return [x]


def assert_matches(got, want, what: str = "", rtol: float | None = None, atol: float | None = None,
                   scale: float = 1.0) -> None:
    """`got` (a stagec result) equals `want` (NumPy's) in shape and, by `got`'s dtype, in value."""
    g = np.asarray(got)
    w = np.asarray(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape} != NumPy's {w.shape}"
    if g.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w.astype(g.dtype), err_msg=what)
        return
    r, a = TOL.get(g.dtype, (2e-5, 2e-6))
    r, a = rtol or r, (atol or a) * scale
    np.testing.assert_allclose(g.astype(np.float64) if kind(g.dtype) == "f" else g,
                               w.astype(np.float64) if kind(w.dtype) == "f" else w, rtol=r, atol=a,
                               equal_nan=True, err_msg=what)


def jax_out(jfn: Callable, *args):
    """JAX's abstract result(s) of `jfn(*args)` (dtypes and weak types), or None without JAX."""
    if jax is None:
        return None
    return jax.eval_shape(jfn, *args)


def check(fn: Callable, ref: Callable, *args, jfn: Callable | None = None, what: str = "", eager: bool = True,
          **tol) -> Any:
    """Jitted and (if `eager`) eager `fn(*args)` agree with `ref(*args)` (NumPy) and, if `jfn` is given, with
    JAX's dtypes and weak types. Eager runs compile one module per primitive and signature, so tests keep
    them to a few signatures. Returns the jitted result."""
    jit = jitted(fn)(*args)
    eager = fn(*args) if eager else jit
    want = ref(*args)
    el, jl, wl = leaves(eager), leaves(jit), leaves(want)
    assert len(el) == len(jl) == len(wl), f"{what}: {len(el)} eager, {len(jl)} jit, {len(wl)} NumPy results"
    for k, (e, j, w) in enumerate(zip(el, jl, wl)):
        assert e.dtype == j.dtype and e.weak_type == j.weak_type, f"{what}[{k}]: eager {e.aval} vs jit {j.aval}"
        assert_matches(e, w, f"{what}[{k}] eager", **tol)
        assert_matches(j, w, f"{what}[{k}] jit", **tol)
    if jfn is not None and jax is not None:
        for k, (e, o) in enumerate(zip(el, leaves(jax_out(jfn, *args)))):
            assert e.dtype == o.dtype, f"{what}[{k}]: dtype {e.dtype} != JAX's {o.dtype}"
            assert e.weak_type == o.weak_type, f"{what}[{k}]: weak_type {e.weak_type} != JAX's {o.weak_type}"
    return jit
