"""Differential tests of indexing: basic, integer-array (gather), boolean masks, `x.at[...]` updates (scatter),
`take` and `take_along_axis`; stagec eager, stagec jit and NumPy agree."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import stagec
import stagec.numpy as snp
from numpy_diff import MAX_EXAMPLES, F32, I32, arrays, assert_matches, jitted

SETTINGS = settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])


def _gets(x, i, j, k):
    """x: (4, 5, 3); i: int array (2,) in [-4, 4); j: int array (2, 1) in [-5, 5); k: int scalar in [-3, 3)."""
    return {
        "i": x[i], "col": x[:, j], "ij": x[i, j], "i_slice": x[i, 1:], "i_none_rev": x[None, i, ::-1],
        "ell": x[..., i[:1] % 3], "nonadjacent": x[i, :, k], "adjacent_tail": x[:, j, i % 3],
        "scalar_k": x[k], "mixed": x[1, j, ::2], "list": x[[0, -1], [1, 2]], "all_ints": x[i, j, k],
        "neg_step": x[::-2, 1::3, -1], "none_many": x[None, :, None, 0], "empty_idx": x[np.zeros(0, np.int32)],
        "take": snp.take(x, i, axis=1), "take_flat": snp.take(x, j), "take_clip": snp.take(x, i * 3, axis=0, mode="clip"),
        "take_wrap": snp.take(x, i * 3, axis=2, mode="wrap"),
        "take_along": snp.take_along_axis(x, snp.argsort(x, axis=1), axis=1),
    }


def _np_gets(x, i, j, k):
    return {
        "i": x[i], "col": x[:, j], "ij": x[i, j], "i_slice": x[i, 1:], "i_none_rev": x[None, i, ::-1],
        "ell": x[..., i[:1] % 3], "nonadjacent": x[i, :, k], "adjacent_tail": x[:, j, i % 3],
        "scalar_k": x[k], "mixed": x[1, j, ::2], "list": x[[0, -1], [1, 2]], "all_ints": x[i, j, k],
        "neg_step": x[::-2, 1::3, -1], "none_many": x[None, :, None, 0], "empty_idx": x[np.zeros(0, np.int32)],
        "take": np.take(x, i, axis=1), "take_flat": np.take(x, j), "take_clip": np.take(x, i * 3, axis=0, mode="clip"),
        "take_wrap": np.take(x, i * 3, axis=2, mode="wrap"),
        "take_along": np.take_along_axis(x, np.argsort(x, axis=1, kind="stable"), axis=1),
    }


@SETTINGS
@given(st.data())
def test_getitem_matches_numpy(data):
    dt = data.draw(st.sampled_from([F32, I32]), "dtype")
    x = data.draw(arrays(dt, (4, 5, 3), 0, 20), "x")
    i = data.draw(arrays(I32, (2,), -4, 3), "i")
    j = data.draw(arrays(I32, (2, 1), -5, 4), "j")
    k = data.draw(st.integers(-3, 2), "k")
    got = jitted(_gets)(x, i, j, k)
    eager = _gets(snp.asarray(x), i, j, k) if dt == F32 else got
    want = _np_gets(x, i, j, k)
    for n, w in want.items():
        assert_matches(got[n], w, f"x[{n}] jit")
        assert_matches(eager[n], w, f"x[{n}] eager")
        assert got[n].dtype == dt


def _np_at(x, idx, v, op):
    y = x.copy()
    if op == "set":
        y[idx] = v
    else:
        getattr(np, {"add": "add", "multiply": "multiply", "min": "minimum", "max": "maximum"}[op]).at(y, idx, v)
    return y


def _updates(x, i, v, s):
    """i: (3,) indices in [-4, 4) possibly repeated; v: (3, 5) values; s: a scalar value."""
    return {
        "add_rows": x.at[i].add(v), "mul_rows": x.at[i].multiply(v), "min_rows": x.at[i].min(v),
        "max_rows": x.at[i].max(v), "add_cols": x.at[:, i].add(s), "set_scalar": x.at[1, 2].set(s),
        "set_slice": x.at[1:3, ::2].set(s), "add_pairs": x.at[i, i % 5].add(v[0, :3]),
        "set_neg": x.at[-1].set(v[0]), "get": x.at[i, -1].get(), "mask_set": x.at[x > 5].set(s),
        "mask_add": x.at[x[:, 0] > 5].add(s), "set_empty": x.at[np.zeros(0, np.int32)].set(s),
        "subtract": x.at[i[0]].subtract(s),
    }


def _np_updates(x, i, v, s):
    r = {
        "add_rows": _np_at(x, i, v, "add"), "mul_rows": _np_at(x, i, v, "multiply"), "min_rows": _np_at(x, i, v, "min"),
        "max_rows": _np_at(x, i, v, "max"), "add_cols": _np_at(x, (slice(None), i), s, "add"),
        "set_scalar": _np_at(x, (1, 2), s, "set"), "set_slice": _np_at(x, (slice(1, 3), slice(None, None, 2)), s, "set"),
        "add_pairs": _np_at(x, (i, i % 5), v[0, :3], "add"), "set_neg": _np_at(x, -1, v[0], "set"), "get": x[i, -1],
        "mask_set": np.where(x > 5, s, x), "mask_add": _np_at(x, x[:, 0] > 5, s, "add"),
        "set_empty": x.copy(), "subtract": _np_at(x, i[0], -s, "add"),
    }
    return r


@SETTINGS
@given(st.data())
def test_at_updates_match_numpy(data):
    """Scatter: duplicates accumulate for add/multiply/min/max; traced boolean masks work with a scalar value."""
    dt = data.draw(st.sampled_from([F32, I32]), "dtype")
    x = data.draw(arrays(dt, (4, 5), -10, 10), "x")
    i = data.draw(arrays(I32, (3,), -4, 3), "i")
    v = data.draw(arrays(dt, (3, 5), -3, 3), "v")
    s = data.draw(st.integers(-5, 5), "s")
    got = jitted(_updates)(x, i, v, s)
    eager = _updates(snp.asarray(x), i, v, s) if dt == F32 else got
    want = _np_updates(x, i, v, dt.type(s))
    for n, w in want.items():
        assert_matches(got[n], w, f"{n} jit", scale=100)
        assert_matches(eager[n], w, f"{n} eager", scale=100)
        assert got[n].dtype == dt, n


def test_set_with_unique_indices_and_value_broadcasting():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    fn = lambda a, idx: [a.at[idx].set(np.float32(-1)), a.at[idx, 1:].set(np.arange(3, dtype=np.float32)),
                         a.at[:, idx[:1]].set(np.array([[7.0], [8.0], [9.0]], np.float32))]
    idx = np.array([2, 0], np.int32)
    want = []
    for v, ix in [(np.float32(-1), idx), (np.arange(3, dtype=np.float32), (idx, slice(1, None))),
                  (np.array([[7.0], [8.0], [9.0]], np.float32), (slice(None), idx[:1]))]:
        y = x.copy()
        y[ix] = v
        want.append(y)
    for got in (fn(snp.asarray(x), idx), stagec.jit(fn)(x, idx)):
        for g, w in zip(got, want):
            assert_matches(g, w, "set")
    with pytest.raises(ValueError, match="could not be broadcast"):
        snp.asarray(x).at[idx].set(np.ones(3, np.float32))


def test_concrete_boolean_masks_and_nonzero():
    x = np.array([[1.0, -2.0, 3.0], [np.nan, 5.0, -6.0]], np.float32)
    a = snp.asarray(x)
    assert_matches(a[x > 0], x[x > 0], "np mask")
    assert_matches(a[a > 0], x[x > 0], "snp mask (concrete outside jit)")
    assert_matches(a[[True, False]], x[[True, False]], "list mask")
    assert_matches(a[:, np.array([True, False, True])], x[:, np.array([True, False, True])], "axis mask")
    for got, want in zip(snp.nonzero(a > 0), np.nonzero(x > 0)):
        assert_matches(got, want, "nonzero")
    assert_matches(snp.argwhere(a > 0), np.argwhere(x > 0), "argwhere")
    assert_matches(snp.flatnonzero(a > 0), np.flatnonzero(x > 0), "flatnonzero")
    assert_matches(snp.where(a > 0)[1], np.where(x > 0)[1], "where(cond)")
    with pytest.raises(IndexError):
        a[np.array([True, False, True])]
    with pytest.raises(IndexError):
        x[np.array([True, False, True])]


def test_traced_boolean_masks_raise_a_clear_error():
    x = np.arange(6, dtype=np.float32)
    with pytest.raises(snp.NonConcreteBooleanIndexError, match="boolean indices must be concrete"):
        stagec.jit(lambda v: v[v > 2])(x)
    with pytest.raises(IndexError, match="snp.where"):
        stagec.jit(lambda v: snp.sum(v[v > 2]))(x)
    with pytest.raises(IndexError, match="result shape depends on the values"):
        stagec.jit(lambda v: snp.nonzero(v))(x)
    with pytest.raises(IndexError):  # a non-scalar value needs the (unknown) number of selected elements
        stagec.jit(lambda v: v.at[v > 2].set(v))(x)
    # The static-shape alternatives work under jit.
    got = stagec.jit(lambda v: (snp.where(v > 2, v, 0.0), v.at[v > 2].set(0.0), v.at[v > 2].multiply(2.0)))(x)
    np.testing.assert_array_equal(np.asarray(got[0]), np.where(x > 2, x, 0))
    np.testing.assert_array_equal(np.asarray(got[1]), np.where(x > 2, 0, x))
    np.testing.assert_array_equal(np.asarray(got[2]), np.where(x > 2, 2 * x, x))


def test_index_errors_match_numpy_kinds():
    x = np.zeros((3, 4), np.float32)
    a = snp.asarray(x)
    # Concrete out-of-bounds indices raise as in NumPy; traced ones follow JAX (tests/test_numpy_index_modes.py).
    for idx in [5, (0, 4), (0, 0, 0), np.array([0, 3]), (slice(None), np.array([4])), [[-5]], (Ellipsis, Ellipsis),
                np.array([0.5]), "a"]:
        with pytest.raises(IndexError):
            x[idx]
        with pytest.raises(IndexError):
            a[idx]
        with pytest.raises(IndexError):
            a.at[idx].set(1.0)
    with pytest.raises(IndexError):
        np.take(x, [12])
    with pytest.raises(IndexError):
        snp.take(a, [12], mode="raise")  # (mode None fills, as JAX's: tests/test_one_answer.py)
    with pytest.raises(IndexError, match="shape mismatch"):
        a[np.array([0, 1]), np.array([0, 1, 2])]
    with pytest.raises(IndexError, match="shape mismatch"):
        x[np.array([0, 1]), np.array([0, 1, 2])]


def test_traced_out_of_bounds_indices_are_clamped():
    """Under jit indices have no values to check: reads clamp into bounds (as XLA and JAX do)."""
    x = np.arange(5, dtype=np.float32)
    got = stagec.jit(lambda v, i: v[i])(x, np.array([7, -9, 2], np.int32))
    np.testing.assert_array_equal(np.asarray(got), [4.0, 0.0, 2.0])


def test_updates_and_sorts_leave_their_inputs_unchanged():
    """IREE's CPU scatter and sort work in place on their operand buffers; the caller's arrays must not change."""
    for x in (np.array([3.0, 1.0, -0.0, 2.0], np.float32), np.array([3, 1, 0, 2], np.int32),
              np.array([True, False, True, False])):
        a = snp.asarray(x)
        a.at[np.array([1, 2], np.int32)].set(x[0])
        if x.dtype != np.bool_:
            a.at[np.array([1], np.int32)].add(x[0])
        snp.sort(a)
        snp.argsort(a)
        np.testing.assert_array_equal(np.asarray(a), x)


_BOOL_SCALAR_INDICES = [True, False, (Ellipsis, True), (Ellipsis, False), (0, True), (True, 0), (0, slice(None), True),
                        (True, Ellipsis, True), (True, False), (np.array(True),), (np.bool_(False), 1),
                        (slice(1, None), True, slice(None, 2)), (True, [0, 1]), (0, True, 1), (Ellipsis, 1, True),
                        (True, np.array([True, False])), (None, True), (True, None, 1)]


def test_boolean_scalar_indices_as_in_numpy():
    """A Python/NumPy boolean scalar (or 0-d boolean array) indexes as NumPy's: a new axis of length 1 or 0, an
    advanced index (`x[True]` is `x[None]`); reads and `.at` updates, eager and jitted. JAX 0.10.2 differs from
    NumPy on two of these (`x[None, True]`, `x[np.False_, 1]`): NumPy is the oracle."""
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)

    def f(a):
        out = []
        for c in _BOOL_SCALAR_INDICES:
            out += [a[c], a.at[c].set(-1.0), a.at[c].add(1.0)]
        return out

    for got in (f(snp.asarray(x)), stagec.jit(f)(x)):
        for k, c in enumerate(_BOOL_SCALAR_INDICES):
            want_set, want_add = x.copy(), x.copy()
            want_set[c] = -1.0
            want_add[c] += 1.0
            for g, w in zip(got[3 * k:3 * k + 3], (x[c], want_set, want_add)):
                assert g.shape == w.shape, c
                np.testing.assert_array_equal(np.asarray(g), w, err_msg=repr(c))


def test_indexing_a_column_of_a_batch_by_an_array_compiles():
    """A strided slice (a column of a 3-D array, every other row's column) indexed by an array: IREE 3.13's fused
    strided load failed LLVM translation (`strided-gather-operands-apart`); a linear solve whose right-hand side is
    such a column gathers it by its pivots. Oracle: NumPy."""
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((3, 4, 4)).astype(np.float32), rng.standard_normal((6, 4)).astype(np.float32)
    i = np.array([3, 0, 1, 1], np.int32)
    got = stagec.jit(lambda x, y, i: (x[1, :, 2][i], x[:, :, 0][:, i], y[::2, 1][i[:3] % 3],
                                      snp.linalg.solve(x[0] + 4 * snp.eye(4), x[0, :, 0])))(x, y, i)
    for g, w in zip(got[:3], (x[1, :, 2][i], x[:, :, 0][:, i], y[::2, 1][i[:3] % 3])):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_allclose(got[3], np.linalg.solve(x[0].astype(np.float64) + 4 * np.eye(4), x[0, :, 0]), rtol=1e-5)
