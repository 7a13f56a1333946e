"""Reductions with `where=` and `initial=`, and NumPy's order on complex numbers (max/min, argmax/argmin,
maximum/minimum, sort/argsort: real part first, then imaginary; NaN wins max/min and sorts last):
stagec eager and jit against NumPy."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import stagec
import stagec.numpy as snp
from numpy_diff import MAX_EXAMPLES, assert_matches

SETTINGS = settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])
SHAPE = (3, 4)


def _masked_reductions(x, w, axis):
    init = {"sum": 2, "prod": 3, "max": -5, "min": 5}
    out = {n: getattr(snp, n)(x, axis=axis, where=w, initial=init[n]) for n in init}
    out.update({f"{n}_noinit": getattr(snp, n)(x, axis=axis, where=w) for n in ("sum", "prod", "any", "all")})
    out.update({n: getattr(snp, n)(x, axis=axis, where=w) for n in ("mean", "var", "std")})
    out["var_ddof"] = snp.var(x, axis=axis, where=w, ddof=1, keepdims=True)
    out["max_keep"] = snp.max(x, axis=axis, where=w, initial=0, keepdims=True)
    return out


_masked_jit = stagec.jit(_masked_reductions, static_argnames="axis")


def _numpy_masked(x, w, axis):
    init = {"sum": 2, "prod": 3, "max": -5, "min": 5}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        out = {n: getattr(np, n)(x, axis=axis, where=w, initial=init[n]) for n in init}
        out.update({f"{n}_noinit": getattr(np, n)(x, axis=axis, where=w) for n in ("sum", "prod", "any", "all")})
        xf = x.astype(np.float32) if x.dtype.kind in "iu" else x
        out.update({n: getattr(np, n)(xf, axis=axis, where=w) for n in ("mean", "var", "std")})
        out["var_ddof"] = np.var(xf, axis=axis, where=w, ddof=1, keepdims=True)
        out["max_keep"] = np.max(x, axis=axis, where=w, initial=0, keepdims=True)
    return out


@SETTINGS
@given(st.data())
def test_where_and_initial_match_numpy(data):
    dt = data.draw(st.sampled_from([np.float32, np.int32]), "dtype")
    axis = data.draw(st.sampled_from([None, 0, 1, (0, 1)]), "axis")
    x = data.draw(st.lists(st.integers(-4, 4), min_size=12, max_size=12), "x")
    x = np.array(x, dt).reshape(SHAPE)
    w = np.array(data.draw(st.lists(st.booleans(), min_size=4, max_size=4), "w"))  # broadcasts along rows
    if data.draw(st.booleans(), "full mask"):
        w = np.array(data.draw(st.lists(st.booleans(), min_size=12, max_size=12), "w2")).reshape(SHAPE)
    got, want = _masked_jit(x, w, axis=axis), _numpy_masked(x, w, axis)
    for k in want:
        assert_matches(got[k], want[k], f"{k} axis={axis} where={w.tolist()}", rtol=1e-5, atol=1e-5)


def test_where_and_initial_eager_and_errors():
    x = np.arange(12, dtype=np.float32).reshape(SHAPE)
    w = np.array([True, False, True, False])
    want = _numpy_masked(x, w, 1)
    got = _masked_reductions(x, w, 1)
    for k in want:
        assert_matches(got[k], want[k], f"eager {k}")
    with pytest.raises(ValueError, match="does not have an identity"):
        snp.max(x, where=w)
    with pytest.raises(ValueError, match="where"):
        snp.sum(x, where=np.ones(3, bool))
    np.testing.assert_array_equal(np.asarray(snp.min(np.zeros((0, 2), np.float32), axis=0, initial=4.0)), [4, 4])


NAN = np.nan
C = np.array([1 + 1j, 1 + 2j, 0j, 2 - 1j, complex(2, -3), -1 + 5j, 1 + 1j, complex(-0.0, 1), 1j], np.complex64)
C_NAN = np.array([1 + 1j, complex(1, NAN), 2 + 0j, complex(NAN, 0), complex(NAN, NAN), 3 - 1j], np.complex64)


def _complex_ops(a, b):
    return {"maximum": snp.maximum(a, b), "minimum": snp.minimum(a, b), "max": snp.max(a), "min": snp.min(a),
            "max0": snp.max(snp.reshape(a[:8], (2, 4)), axis=0), "argmax": snp.argmax(a), "argmin": snp.argmin(a),
            "argmax1": snp.argmax(snp.reshape(a[:8], (2, 4)), axis=1), "sort": snp.sort(a), "argsort": snp.argsort(a),
            "sort_desc": snp.sort(a, descending=True), "at_max": snp.asarray(a).at[np.array([0, 0, 1])].max(b[:3])}


def _numpy_complex(a, b):
    at_max = a.copy()
    np.maximum.at(at_max, [0, 0, 1], b[:3])
    return {"maximum": np.maximum(a, b), "minimum": np.minimum(a, b), "max": np.max(a), "min": np.min(a),
            "max0": np.max(a[:8].reshape(2, 4), axis=0), "argmax": np.argmax(a), "argmin": np.argmin(a),
            "argmax1": np.argmax(a[:8].reshape(2, 4), axis=1), "sort": np.sort(a), "argsort": np.argsort(a, kind="stable"),
            "sort_desc": np.sort(a)[::-1], "at_max": at_max}


_complex_jit = stagec.jit(_complex_ops)


@pytest.mark.parametrize("a, b", [(C, C[::-1].copy()), (np.resize(C_NAN, 9), np.resize(C_NAN[::-1], 9))],
                         ids=["finite", "nan"])
def test_complex_order_matches_numpy(a, b):
    want = _numpy_complex(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for got, how in ((_complex_jit(a, b), "jit"), (_complex_ops(a, b), "eager")):
            for k, w in want.items():
                g = np.asarray(got[k])
                assert g.shape == np.shape(w), f"{how} {k}"
                np.testing.assert_array_equal(g, w, err_msg=f"{how} {k}")  # NaNs compare equal here


def test_descending_sort_keeps_ties_in_index_order_and_puts_nan_first():
    x = np.array([3, 1, NAN, 2, 1, 3], np.float32)
    np.testing.assert_array_equal(np.asarray(snp.argsort(x, descending=True)), [2, 0, 5, 3, 1, 4])
    np.testing.assert_array_equal(np.asarray(stagec.jit(lambda v: snp.sort(v, descending=True))(x)),
                                  [NAN, 3, 3, 2, 1, 1])
    m = np.array([[2, 2, 1], [0, 5, 5]], np.int32)
    np.testing.assert_array_equal(np.asarray(snp.argsort(m, axis=1, descending=True)), [[0, 1, 2], [1, 2, 0]])


def test_unstable_descending_argsort_is_jaxs_reversed_ascending_order():
    """argsort(x, descending=True, stable=False) kept ties in index order; JAX reverses the ascending order (ties
    last index first). Oracle: JAX 0.10.2's indices as literals."""
    x = np.array([2, 1, 2, 1, 2, 0], np.int32)
    np.testing.assert_array_equal(np.asarray(snp.argsort(x, descending=True, stable=False)), [4, 2, 0, 3, 1, 5])
    np.testing.assert_array_equal(np.asarray(snp.argsort(x, descending=True)), [0, 2, 4, 1, 3, 5])
