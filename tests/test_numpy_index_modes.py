"""Out-of-bounds indices, and `nonzero`/`argwhere`/`flatnonzero` with a static `size`.

Traced indices follow JAX: reads clamp (`x.at[i].get(mode='fill')` reads a fill value), updates are dropped
(`mode='clip'` clamps them). Concrete indices out of bounds raise NumPy's IndexError unless a mode is given,
then they behave as traced ones would; negative indices in [-n, -1] wrap. Expected values are NumPy
references or written out by hand; JAX 0.10.2, where installed, is only a second oracle (`test_jax_oracle`).
Jitted functions live at module level so that each signature compiles once.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest

import stagec
import stagec.numpy as snp

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover - CI has no jax; the oracle test is skipped there
    jax = jnp = None

F32, I32, U8, BOOL = np.float32, np.int32, np.uint8, np.bool_
X5 = np.arange(5, dtype=F32) + 1  # [1, 2, 3, 4, 5]
IDX = np.array([1, 7, -6, -1, 5], I32)  # in bounds: 1, -1 (= 4); out of bounds: 7, -6, 5
VALS = np.array([10, 20, 30, 40, 50], F32)
CLIP_IDX = np.array([1, 7, -6, 2, 3], I32)  # clamps to 1, 4, 0, 2, 3: no two updates meet
OPS = ("set", "add", "subtract", "multiply", "divide", "min", "max")


def _updates(x, i, v, mode=None):
    return {op: getattr(x.at[i], op)(v, mode=mode) for op in OPS}


_jit_updates = stagec.jit(_updates, static_argnames="mode")


def _np_update(x, idx, v, op: str, mode: str | None = None):
    """NumPy reference for a 1-D `x.at[idx].op(v)`: out-of-bounds entries dropped, or clamped for 'clip'."""
    n = x.shape[0]
    idx = np.asarray(idx)
    v = np.broadcast_to(np.asarray(v, x.dtype), idx.shape)
    if mode == "clip":
        idx, keep = np.clip(np.where(idx < 0, idx + n, idx), 0, n - 1), np.ones(idx.shape, bool)
    else:
        keep = (idx >= -n) & (idx < n)
    y = x.copy()
    i, v = idx[keep], v[keep]
    if op == "set":
        y[i] = v
    else:
        ufunc = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
                 "min": np.minimum, "max": np.maximum}[op]
        ufunc.at(y, i, v)
    return y


def _check_updates(got: dict, x, idx, v, mode=None, what=""):
    for op in OPS:
        np.testing.assert_allclose(np.asarray(got[op]), _np_update(x, idx, v, op, mode), rtol=1e-6,
                                   err_msg=f"{what} {op} mode={mode}")


# ---------------------------------------------------------------- updates


def test_in_bounds_updates_are_unchanged():
    idx = np.array([0, -1, 2, -4, 3], I32)  # wrapped negative indices (duplicates: below); IDX's shape: one module
    v = np.array([10, 20, 30, 40, 50], F32)
    _check_updates(_jit_updates(X5, idx, v), X5, idx, v, what="jit")
    a = snp.asarray(X5)
    for op in ("set", "add"):
        np.testing.assert_array_equal(np.asarray(getattr(a.at[idx], op)(v)), _np_update(X5, idx, v, op), op)
    want = X5.copy()
    want[[0, 4, 2, 1, 3]] += [10, 20, 30, 40, 50]
    np.testing.assert_array_equal(np.asarray(_jit_updates(X5, idx, v)["add"]), want)


def test_traced_out_of_bounds_updates_are_dropped():
    got = _jit_updates(X5, IDX, VALS)
    _check_updates(got, X5, IDX, VALS, what="jit")
    np.testing.assert_array_equal(np.asarray(got["set"]), [1, 10, 3, 4, 40])
    np.testing.assert_array_equal(np.asarray(got["add"]), [1, 12, 3, 4, 45])
    np.testing.assert_array_equal(np.asarray(got["min"]), [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(np.asarray(got["max"]), [1, 10, 3, 4, 40])
    for mode in ("drop", "fill"):
        _check_updates(_jit_updates(X5, IDX, VALS, mode=mode), X5, IDX, VALS, mode, what="jit")


_jit_concrete = stagec.jit(lambda x: (_updates(x, IDX, VALS, mode="drop"),
                                      [getattr(x.at[i], op)(7.0, mode="drop") for i in (5, -6, 100) for op in OPS],
                                      x.at[-5].set(0.0)))


def test_concrete_out_of_bounds_updates_raise_unless_a_mode_drops_them():
    """NumPy's IndexError by default (the index is known: a bug, not a value to drop silently); with
    mode='drop' they drop as in JAX: Python ints, NumPy arrays and eager Arrays alike, jit or eager."""
    a = snp.asarray(X5)
    for idx in (5, -6, IDX, snp.asarray(IDX)):
        for op in ("set", "add"):
            with pytest.raises(IndexError, match="out of bounds for axis 0 with size 5"):
                getattr(a.at[idx], op)(1.0)
    with pytest.raises(IndexError, match="index 7 is out of bounds"):
        stagec.jit(lambda x: x.at[IDX].add(VALS))(X5)
    arrays, scalars, wrapped = _jit_concrete(X5)
    _check_updates(arrays, X5, IDX, VALS, what="jit, concrete indices")
    for k, got in enumerate(scalars):
        np.testing.assert_array_equal(np.asarray(got), X5, err_msg=f"{k}: at[{(5, -6, 100)[k // len(OPS)]}]")
    np.testing.assert_array_equal(np.asarray(wrapped), [0, 2, 3, 4, 5])
    np.testing.assert_array_equal(np.asarray(a.at[snp.asarray(IDX)].add(VALS, mode="drop")),
                                  _np_update(X5, IDX, VALS, "add"))
    np.testing.assert_array_equal(np.asarray(a.at[IDX].set(VALS, mode="fill")), _np_update(X5, IDX, VALS, "set"))
    np.testing.assert_array_equal(np.asarray(a.at[5].set(7.0, mode="drop")), X5)


def test_clip_mode_clamps_updates():
    got = _jit_updates(X5, CLIP_IDX, VALS, mode="clip")
    _check_updates(got, X5, CLIP_IDX, VALS, "clip", what="jit")
    np.testing.assert_array_equal(np.asarray(got["add"]), [31, 12, 43, 54, 25])
    np.testing.assert_array_equal(np.asarray(snp.asarray(X5).at[9].set(0.0, mode="clip")), [1, 2, 3, 4, 0])


_jit_dup = stagec.jit(lambda x, i: x.at[i].add(1.0))


def test_duplicates_accumulate_and_out_of_bounds_duplicates_drop():
    i = np.array([1, 1, 9, 9, -1, -9], I32)
    np.testing.assert_array_equal(np.asarray(_jit_dup(X5, i)), [1, 4, 3, 4, 6])


_jit_bool_set = stagec.jit(lambda x, i: x.at[i].set(True))


def test_bool_and_int_updates_drop():
    b = np.zeros(3, BOOL)
    np.testing.assert_array_equal(np.asarray(_jit_bool_set(b, np.array([1, 7], I32))), [False, True, False])
    xi = np.arange(4, dtype=I32)
    got = _jit_updates(xi, np.array([-5, 3, 4], I32), np.array([7, 8, 9], I32))
    np.testing.assert_array_equal(np.asarray(got["set"]), [0, 1, 2, 8])
    np.testing.assert_array_equal(np.asarray(got["max"]), [0, 1, 2, 8])


def test_jitted_update_leaves_the_callers_array_unchanged():
    """IREE's CPU scatter writes into operand buffers; the dropped-update path pads into a new one."""
    a = snp.asarray(X5)
    for idx in (IDX, np.array([0, 2, -1, 3, 1], I32)):  # (in bounds: IDX's shape, the same module)
        _jit_updates(a, idx, VALS[:len(idx)])
        np.testing.assert_array_equal(np.asarray(a), X5)


# ---------------------------------------------------------------- reads


def _gets(x, i, fill, defaults: bool = True):
    """Reads of `x` at `i` in every mode; `defaults`: also those without a mode (concrete `i` would raise)."""
    out = {"clip": x.at[i].get(mode="clip"), "fill": x.at[i].get(mode="fill"), "drop": x.at[i].get(mode="drop"),
           "fill_value": x.at[i].get(mode="fill", fill_value=fill)}
    if defaults:
        out.update({"plain": x[i], "get": x.at[i].get(), "no_mode": x.at[i].get(fill_value=fill)})
    return out


@functools.cache
def _jit_fill_gets() -> list:
    """`_gets` of every FILLS dtype, jitted in one module (one compile, not one per dtype)."""
    xs = [_fill_x(dtype) for dtype, *_ in FILLS]
    return stagec.jit(lambda xs, i, fills: [_gets(x, i, f) for x, f in zip(xs, fills)])(
        xs, GET_IDX, [fill for _, _, fill, _ in FILLS])


def _fill_x(dtype):
    return (np.arange(5) % 2 == 0) if dtype == BOOL else np.arange(5, 10).astype(dtype)


GET_IDX = np.array([-6, 5, -1, -5, 2], I32)  # on size 5: out, out, 4, 0, 2
# JAX's default fills (checked against JAX 0.10.2 in test_jax_oracle) and explicit ones, cast as NumPy casts.
FILLS = [(F32, np.nan, -1.5, -1.5), (I32, np.iinfo(I32).min, -7, -7), (U8, 255, 300, 44), (BOOL, True, False, False)]


@pytest.mark.parametrize("dtype,default,fill,cast", FILLS, ids=lambda v: getattr(v, "__name__", None))
def test_get_fill_mode(dtype, default, fill, cast):
    x = _fill_x(dtype)
    clamped = x[np.clip(np.where(GET_IDX < 0, GET_IDX + 5, GET_IDX), 0, 4)]
    oob = (GET_IDX < -5) | (GET_IDX >= 5)
    jit = _jit_fill_gets()[[d for d, *_ in FILLS].index(dtype)]
    for where, got in (("jit", jit), ("eager", _gets(snp.asarray(x), GET_IDX, fill, False))):
        for name in ("plain", "get", "clip", "no_mode"):
            if name in got:
                np.testing.assert_array_equal(np.asarray(got[name]), clamped, err_msg=f"{where} {name}")
        for name, f in (("fill", default), ("drop", default), ("fill_value", cast)):
            g = np.asarray(got[name])
            assert g.dtype == dtype, (where, name, g.dtype)
            np.testing.assert_array_equal(g, np.where(oob, np.asarray(f).astype(dtype), clamped),
                                          err_msg=f"{where} {name}")


_jit_scalar_get = stagec.jit(lambda x, k: (x[k], x.at[k].get(mode="fill"),
                                           x.at[k, 1:].get(mode="fill", fill_value=0.5)))


def test_traced_scalar_index_reads():
    x = np.arange(6, dtype=F32).reshape(3, 2)
    for k, row in ((3, None), (-4, None), (-1, 2), (1, 1)):
        plain, fill, part = _jit_scalar_get(x, np.int32(k))
        np.testing.assert_array_equal(np.asarray(plain), x[min(max(k + 3 if k < 0 else k, 0), 2)])
        np.testing.assert_array_equal(np.asarray(fill), [np.nan, np.nan] if row is None else x[row])
        np.testing.assert_array_equal(np.asarray(part), [0.5] if row is None else x[row, 1:])


def test_concrete_out_of_bounds_reads_raise_unless_a_mode_is_given():
    a = snp.asarray(np.arange(12, dtype=F32).reshape(3, 4))
    for idx in ((5, 0), (-4, 0), (0, 4), (np.array([5, -4]),), (1, np.array([3, 4]))):
        with pytest.raises(IndexError, match="is out of bounds for axis"):
            a[idx]
        with pytest.raises(IndexError, match="is out of bounds for axis"):
            a.at[idx].get()
    np.testing.assert_array_equal(np.asarray(a[1, 2:9]), [6, 7])  # slices clip, as in NumPy
    assert float(a.at[5, 0].get(mode="clip")) == 8.0 and float(a.at[-4, -9].get(mode="clip")) == 0.0
    np.testing.assert_array_equal(np.asarray(a.at[np.array([5, -4])].get(mode="clip")), np.asarray(a)[[2, 0]])
    assert np.isnan(float(a.at[3, 0].get(mode="fill")))
    np.testing.assert_array_equal(np.asarray(a.at[1, np.array([3, 4, -5])].get(mode="fill", fill_value=-1.0)),
                                  [7, -1, -1])


# ---------------------------------------------------------------- several dimensions, mixed with slices


def _multi(x, i, j, k):
    """x: (3, 4); i: (4,) rows; j: (4,) columns; k: a scalar row."""
    return {"rows_slice": x.at[i, 1:3].set(9.0), "cols": x.at[:, j].add(1.0), "pairs": x.at[i, j].set(-1.0),
            "scalar_row": x.at[k, ::2].set(5.0), "get_rows": x.at[i, 1:].get(mode="fill"),
            "get_pairs": x.at[i, j].get(mode="fill", fill_value=-2.0)}


_jit_multi = stagec.jit(_multi)
_jit_nonadjacent = stagec.jit(lambda x, i, j: (x.at[i, :, j].get(mode="fill", fill_value=-1.0),
                                               x.at[i, :, j].add(1.0)))


def test_multidimensional_indices_with_slices():
    x = np.arange(12, dtype=F32).reshape(3, 4)
    i = np.array([0, 3, -4, -1], I32)  # rows 0 and 2 in bounds
    j = np.array([1, 4, -5, -4], I32)  # columns 1 and 0 in bounds
    for k, row in ((3, None), (-1, 2)):
        got = _jit_multi(x, i, j, np.int32(k))
        want = x.copy()
        want[[0, 2], 1:3] = 9
        np.testing.assert_array_equal(np.asarray(got["rows_slice"]), want)
        want = x.copy()
        want[:, [1, 0]] += 1
        np.testing.assert_array_equal(np.asarray(got["cols"]), want)
        want = x.copy()
        want[0, 1] = -1  # (3, 4) and (-4, -5) are out of bounds; (-1, -4) is (2, 0)
        want[2, 0] = -1
        np.testing.assert_array_equal(np.asarray(got["pairs"]), want)
        want = x.copy()
        if row is not None:
            want[row, ::2] = 5
        np.testing.assert_array_equal(np.asarray(got["scalar_row"]), want)
        np.testing.assert_array_equal(np.asarray(got["get_rows"]),
                                      [x[0, 1:], [np.nan] * 3, [np.nan] * 3, x[2, 1:]])
        np.testing.assert_array_equal(np.asarray(got["get_pairs"]), [x[0, 1], -2, -2, x[2, 0]])


def test_non_adjacent_advanced_indices():
    """x[i, :, j]: the broadcast index dimension goes first (NumPy's rule); the fill mask follows it."""
    x = np.arange(12, dtype=F32).reshape(2, 2, 3)
    i, j = np.array([0, 2, -1], I32), np.array([2, 0, 3], I32)
    got, upd = _jit_nonadjacent(x, i, j)
    np.testing.assert_array_equal(np.asarray(got), [x[0, :, 2], [-1, -1], [-1, -1]])
    want = x.copy()
    want[0, :, 2] += 1
    np.testing.assert_array_equal(np.asarray(upd), want)


# ---------------------------------------------------------------- 0-sized arrays


_jit_empty = stagec.jit(lambda x, i: (x.at[i].set(1.0), x.at[i].get(mode="fill"), x.at[i].add(1.0, mode="clip")))


def test_zero_sized_arrays():
    for shape, want_get in (((0,), [np.nan, np.nan]), ((0, 2), [[np.nan] * 2] * 2)):
        x = np.zeros(shape, F32)
        for got in (_jit_empty(x, np.array([0, -1], I32)), _jit_empty(snp.asarray(x), np.array([0, -1], I32))):
            assert np.asarray(got[0]).shape == shape and np.asarray(got[2]).shape == shape
            np.testing.assert_array_equal(np.asarray(got[1]), want_get)
    x = np.zeros((2, 0), F32)
    assert np.asarray(snp.asarray(x).at[np.array([0, 5])].get(mode="fill")).shape == (2, 0)
    with pytest.raises(IndexError, match="index 0 is out of bounds for axis 0 with size 0"):
        snp.zeros((0,))[np.array([0])]  # nothing to clamp to


# ---------------------------------------------------------------- arguments


def test_mode_and_keyword_errors():
    a = snp.asarray(X5)
    np.testing.assert_array_equal(np.asarray(a.at[1].set(0.0, indices_are_sorted=True, unique_indices=True)),
                                  [1, 0, 3, 4, 5])
    assert float(a.at[1].get(indices_are_sorted=True, unique_indices=True, mode="promise_in_bounds")) == 2.0
    with pytest.raises(ValueError, match=r"at\[\]\.set: unknown mode 'bogus'"):
        a.at[1].set(0.0, mode="bogus")
    with pytest.raises(ValueError, match="get: unknown mode 'raise'"):
        a.at[1].get(mode="raise")
    with pytest.raises(ValueError, match="get: fill_value must be a scalar, got shape"):
        a.at[7].get(mode="fill", fill_value=np.zeros(2, F32))
    with pytest.raises(TypeError):
        a.at[1].set(0.0, fill_value=1.0)  # as in JAX: fill_value is for get only


_jit_take = stagec.jit(lambda x, i: (snp.take(x, i), snp.take_along_axis(x, i, axis=0),
                                     snp.take(x, i, mode="clip"), snp.take_along_axis(x, i, axis=0, mode="clip")))


def test_take_fill_mode_and_raise_default():
    """Out-of-bounds indices read NaN (JAX's default fill), concrete or traced; mode='raise' raises (NumPy)."""
    a = snp.asarray(X5)
    t, ta, tc, tac = _jit_take(X5, np.array([1, 9, -9], I32))
    np.testing.assert_array_equal(np.asarray(t), [2, np.nan, np.nan])
    np.testing.assert_array_equal(np.asarray(ta), [2, np.nan, np.nan])
    np.testing.assert_array_equal(np.asarray(tc), [2, 5, 1])
    np.testing.assert_array_equal(np.asarray(tac), [2, 5, 1])
    with pytest.raises(NotImplementedError, match="mode='raise' needs concrete indices"):
        stagec.jit(lambda x, i: snp.take(x, i, mode="raise"))(X5, np.array([1], I32))
    np.testing.assert_array_equal(np.asarray(snp.take(a, np.array([1, 9]), mode="fill")), [2, np.nan])
    np.testing.assert_array_equal(np.asarray(snp.take(a, np.array([1, 9]), mode="fill", fill_value=0)), [2, 0])
    np.testing.assert_array_equal(np.asarray(snp.take(a, np.array([1, 9]))), [2, np.nan])
    np.testing.assert_array_equal(np.asarray(snp.take_along_axis(a, np.array([5]), axis=0)), [np.nan])
    with pytest.raises(IndexError, match="take: index 9 is out of bounds for axis 0 with size 5"):
        snp.take(a, np.array([1, 9]), mode="raise")


# ---------------------------------------------------------------- nonzero, argwhere, flatnonzero with size


M = np.array([[0, 3, 0], [4, 0, 5]], I32)  # 3 nonzero elements: (0, 1), (1, 0), (1, 2)
MF = np.array([0.0, np.nan, -0.0, 2.0], F32)  # NaN is nonzero


def _np_nonzero(a, size: int, fill=0) -> tuple:
    fills = fill if isinstance(fill, tuple) else (fill,) * np.ndim(a)
    return tuple(np.concatenate([i[:size], np.full(max(size - len(i), 0), f)]) for i, f in zip(np.nonzero(a), fills))


def _sized(a):
    return {"nz5": snp.nonzero(a, size=5), "nz2": snp.nonzero(a, size=2), "nz0": snp.nonzero(a, size=0),
            "nz_fill": snp.nonzero(a, size=5, fill_value=-1), "nz_tuple": snp.nonzero(a, size=4, fill_value=(7, 8)),
            "flat": snp.flatnonzero(a, size=4), "flat_fill": snp.flatnonzero(a, size=2, fill_value=-1),
            "argwhere": snp.argwhere(a, size=4), "argwhere1": snp.argwhere(a, size=1),
            "argwhere_tuple": snp.argwhere(a, size=5, fill_value=(7, 8))}


_jit_sized = stagec.jit(_sized)
_jit_sized_1d = stagec.jit(lambda a: (snp.nonzero(a, size=3), snp.nonzero(a, size=6, fill_value=9),
                                      snp.argwhere(a, size=3, fill_value=-1)))


def test_nonzero_argwhere_flatnonzero_with_size():
    want = {"nz5": _np_nonzero(M, 5), "nz2": _np_nonzero(M, 2), "nz0": _np_nonzero(M, 0),
            "nz_fill": _np_nonzero(M, 5, -1), "nz_tuple": _np_nonzero(M, 4, (7, 8)),
            "flat": _np_nonzero(M.ravel(), 4)[0], "flat_fill": _np_nonzero(M.ravel(), 2, -1)[0],
            "argwhere": np.stack(_np_nonzero(M, 4), axis=1), "argwhere1": np.stack(_np_nonzero(M, 1), axis=1),
            "argwhere_tuple": np.stack(_np_nonzero(M, 5, (7, 8)), axis=1)}
    assert want["nz_tuple"][1].tolist() == [1, 0, 2, 8]  # the reference itself, by hand
    for where, got in (("jit", _jit_sized(M)), ("eager", _sized(snp.asarray(M))), ("numpy", _sized(M))):
        for name, w in want.items():
            for g, wi in zip(got[name] if isinstance(w, tuple) else [got[name]], w if isinstance(w, tuple) else [w]):
                g = np.asarray(g)
                assert g.dtype == np.int32, (where, name, g.dtype)
                np.testing.assert_array_equal(g, wi, err_msg=f"{where} {name}")


def test_nonzero_with_size_on_floats_and_bools():
    for a in (MF, MF != 0):
        for got in (_jit_sized_1d(a), _jit_sized_1d(snp.asarray(a))):
            np.testing.assert_array_equal(np.asarray(got[0][0]), [1, 3, 0])
            np.testing.assert_array_equal(np.asarray(got[1][0]), [1, 3, 9, 9, 9, 9])
            np.testing.assert_array_equal(np.asarray(got[2]), [[1], [3], [-1]])


def test_nonzero_with_size_edge_cases():
    e = np.zeros((0, 3), F32)
    for got in (snp.nonzero(e, size=2), stagec.jit(lambda a: snp.nonzero(a, size=2, fill_value=-1))(e)):
        assert [np.asarray(g).shape for g in got] == [(2,), (2,)]
    np.testing.assert_array_equal(np.asarray(snp.argwhere(e, size=2)), np.zeros((2, 2)))
    assert np.asarray(snp.argwhere(np.float32(3))).shape == (1, 0)
    assert np.asarray(snp.argwhere(np.float32(0))).shape == (0, 0)
    assert np.asarray(snp.argwhere(np.float32(0), size=3)).shape == (3, 0)
    np.testing.assert_array_equal(np.asarray(snp.flatnonzero(np.float32(3), size=2)), [0, 0])
    with pytest.raises(ValueError, match="nonzero: calling nonzero on 0d arrays is not allowed"):
        snp.nonzero(np.float32(1), size=2)
    with pytest.raises(ValueError, match="nonzero: size must be non-negative, got -1"):
        snp.nonzero(M, size=-1)
    with pytest.raises(TypeError, match="nonzero: size must be a static non-negative int"):
        snp.nonzero(M, size=2.0)
    with pytest.raises(ValueError, match="nonzero: fill_value must be a scalar or a tuple of length 2"):
        snp.nonzero(M, size=4, fill_value=(1, 2, 3))
    with pytest.raises(ValueError, match="nonzero: fill_value must be a scalar or a tuple of length 2"):
        snp.nonzero(M, size=4, fill_value=np.array([1, 2]))


def test_nonzero_without_size_under_jit_says_to_pass_size():
    for fn in (snp.nonzero, snp.flatnonzero, snp.argwhere, lambda a: snp.where(a)):
        with pytest.raises(IndexError, match=r"result shape depends on the values.*pass a static size="):
            stagec.jit(fn)(M)
    for got, want in zip(snp.where(M), np.where(M)):  # eager, without size: NumPy's result
        np.testing.assert_array_equal(np.asarray(got), want)


_WHERE_TAKES_SIZE = "size" in inspect.signature(snp.where).parameters


@pytest.mark.skipif(not _WHERE_TAKES_SIZE, reason="snp.where (stagec/numpy/_ufuncs.py) does not pass size= and "
                    "fill_value= on to nonzero yet")
def test_where_condition_with_size():
    fn = stagec.jit(lambda a: snp.where(a > 0, size=4, fill_value=-1))
    for got in (fn(M), snp.where(M > 0, size=4, fill_value=-1)):
        for g, w in zip(got, _np_nonzero(M > 0, 4, -1)):
            np.testing.assert_array_equal(np.asarray(g), w)


def _divide_power_apply(x, y):
    rep = np.array([1, 1])
    return (x.at[1].divide(2), x.at[rep].divide(2), y.at[rep].power(3.0), y.at[np.array([1, 1, 2])].apply(lambda v: v * 10),
            y.at[1].apply(snp.square), x.at[np.array([5, 0])].apply(lambda v: v + 1, mode="drop"), x.at[rep].power(2))


def test_divide_power_apply_repeat_per_occurrence():
    """As in JAX: a repeated index divides/powers/applies once per occurrence; integer division gives floats."""
    x, y = np.array([7, 7, 7], np.int32), np.array([2, 2, 2], np.float32)
    want = [[7, 3.5, 7], [7, 1.75, 7], [2, 512, 2], [2, 200, 20], [2, 4, 2], [8, 7, 7],
            [7, 7 ** 4, 7]]
    got = stagec.jit(_divide_power_apply)(x, y)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, err_msg=str(k))
    assert got[0].dtype == np.float32 and got[5].dtype == np.int32 and got[6].dtype == np.int32
    # Eagerly, the cases that run as an eager loop of their own (`apply`: a while_loop over the occurrences);
    # divide and power are a scatter and elementwise kernels, the same code as under jit.
    ex, ey = snp.asarray(x), snp.asarray(y)
    eager = [ey.at[np.array([1, 1, 2])].apply(lambda v: v * 10), ey.at[1].apply(snp.square),
             ex.at[np.array([5, 0])].apply(lambda v: v + 1, mode="drop")]
    for k, g in zip((3, 4, 5), eager):
        np.testing.assert_allclose(np.asarray(g), want[k], rtol=1e-6, err_msg=f"eager {k}")
    assert eager[2].dtype == np.int32


# ---------------------------------------------------------------- JAX as a second oracle (when installed)


def _oracle_cases(m, x, mask, idx, *zeros):
    """The same calls through stagec.numpy or jax.numpy (`m`); `idx` is traced, concrete indices carry a mode
    (stagec raises NumPy's IndexError for concrete out-of-bounds indices without one; JAX does not)."""
    return [[getattr(x.at[idx], op)(VALS) for op in OPS],
            [getattr(x.at[i], op)(7.0, mode="drop") for op in OPS for i in (5, -6)],
            [x[idx], x.at[5].get(mode="clip"), x.at[np.array([7, -9])].get(mode="clip"), x.at[IDX].get(mode="fill"),
             x.at[IDX].get(mode="fill", fill_value=3)],
            [getattr(x.at[CLIP_IDX], op)(VALS, mode="clip") for op in OPS],
            [m.nonzero(mask, size=s, fill_value=f) for s in (2, 5) for f in (None, -1, (7, 8))],
            [m.argwhere(mask, size=4, fill_value=(7, 8)), m.flatnonzero(mask, size=4, fill_value=-1)],
            [z.at[GET_IDX].get(mode="fill") for z in zeros]]


@pytest.mark.skipif(jax is None, reason="jax is not installed (the other tests do not need it)")
def test_jax_oracle():
    arrays = (X5, M, IDX) + tuple(np.zeros(5, dtype) for dtype, *_ in FILLS)
    ours = stagec.jit(lambda *a: _oracle_cases(snp, *a))(*arrays)
    theirs = jax.jit(lambda *a: _oracle_cases(jnp, *a))(*arrays)  # one XLA module, not one per operation
    for k, (o_case, t_case) in enumerate(zip(ours, theirs)):
        o_case, t_case = jax.tree_util.tree_leaves(o_case), jax.tree_util.tree_leaves(t_case)
        assert len(o_case) == len(t_case), k
        for o, t in zip(map(np.asarray, o_case), map(np.asarray, t_case)):
            np.testing.assert_array_equal(o, t, err_msg=f"case {k}")
            assert o.dtype == t.dtype, (k, o.dtype, t.dtype)


_jit_wide = stagec.jit(lambda x, i: (x[i], x.at[i].get(mode="fill"), x.at[i].set(9.0)))


def test_huge_unsigned_traced_index_is_out_of_bounds_not_wrapped():
    """uint32 2**32-1 once narrowed to int32 -1: a valid index, so fill read x[-1] and set wrote it."""
    for i in (np.uint32(2 ** 32 - 1), np.uint32(2 ** 31)):
        got, fill, updated = _jit_wide(X5, i)
        assert float(got) == 5.0 and np.isnan(float(fill))
        np.testing.assert_array_equal(np.asarray(updated), X5)
