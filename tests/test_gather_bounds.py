"""`lax.gather` clamps each start into [0, dim - slice size], as StableHLO defines it (and JAX, and stagec's eager
NumPy rule). IREE 3.13 read past the operand: a start of 5 into 4 values gave 0 under jit, a uint8 200 gave memory
garbage, int32 2^31 - 1 crashed the process. Oracle: NumPy with the starts clipped."""
import numpy as np
import pytest

import stagec
import stagec.lax as lax

X = np.arange(24, dtype=np.float32).reshape(4, 6) * 10
V = np.arange(4, dtype=np.float32) * 10


def _points(x, i):
    return lax.gather(x, i, offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1), slice_sizes=(1, 1))


def _rows(x, i):  # (windows of 2 x 3: starts clamped to [0, 2] and [0, 3])
    return lax.gather(x, i, offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1), slice_sizes=(2, 3))


def _one(x, i):
    return lax.gather(x, i, offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,), slice_sizes=(1,))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.uint32, np.int64])
def test_out_of_bounds_starts_are_clamped_eager_and_jitted(dtype, x64):
    info = np.iinfo(dtype)
    raw = [[0, 0], [3, 5], [5, 1], [200, 7], [info.max, info.max], [info.min, 2]]
    idx = np.array(raw, dtype=dtype)
    lo = np.clip(idx.astype(np.int64), 0, [3, 5])
    want_points = X[lo[:, 0], lo[:, 1]]
    start = np.clip(idx.astype(np.int64), 0, [2, 3])
    want_rows = np.stack([X[a:a + 2, b:b + 3] for a, b in start])
    one = idx[:, :1]
    want_one = V[np.clip(one[:, 0].astype(np.int64), 0, 3)]
    for f, x, i, want in ((_points, X, idx, want_points), (_rows, X, idx, want_rows), (_one, V, one, want_one)):
        np.testing.assert_array_equal(np.asarray(f(x, i)), want)
        np.testing.assert_array_equal(np.asarray(stagec.jit(f)(x, i)), want)


_M = np.arange(20, dtype=np.float32).reshape(4, 5) * 10


def _clipped(i, n):
    """JAX's reading of a traced index: a negative one counts from the end, then out-of-bounds ones clamp."""
    i = np.asarray(i).astype(np.int64)
    return np.clip(np.where(i < 0, i + n, i), 0, n - 1)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64])
def test_numpy_indexing_with_traced_out_of_bounds_indices_clamps(dtype, x64):
    """numpy indexing leaves a traced index out of bounds for the gather to clamp (no clamp of its own): reads,
    rows and columns, two indices at once, vmapped, and a 'clip' update whose indices a gather reads."""
    info = np.iinfo(dtype)
    raw = [0, 3, 4, 9, info.max] + ([-1, -4, -5, -30, info.min] if info.min else [])
    i = np.array(raw, dtype)
    rows, cols = _clipped(i, 4), _clipped(i, 5)
    got = stagec.jit(lambda x, i: (x[i], x[:, i], x[i, i[::-1]], x[1:, i], x.at[i].set(-1.0, mode="clip")))(_M, i)
    want_set = _M.copy()
    want_set[rows] = -1.0
    for g, w in zip(got, (_M[rows], _M[:, cols], _M[rows, cols[::-1]], _M[1:, cols], want_set)):
        np.testing.assert_array_equal(np.asarray(g), w)
    rowwise = stagec.jit(stagec.vmap(lambda r, k: r[k]))(_M, i[:4])
    np.testing.assert_array_equal(np.asarray(rowwise), _M[np.arange(4), cols[:4]])


def _scatter_oracle(x, idx, upd, window, op):
    """StableHLO's scatter in NumPy: an index vector whose window does not fit is dropped whole."""
    out = x.copy()
    for i, u in zip(idx.astype(np.int64), upd):
        if all(0 <= s <= n - w for s, n, w in zip(i, x.shape, window)):
            sl = tuple(slice(s, s + w) for s, w in zip(i, window))
            out[sl] = op(out[sl], u.reshape([w for w in window]))
    return out


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.uint32, np.int64])
def test_scatter_drops_each_index_vector_whose_window_does_not_fit(dtype, x64):
    """IREE 3.13 checks no bounds of a scatter's indices: [0, 6] into (4, 6) wrote at [1, 0], [-1, 7] at [0, 1],
    and a row of 10^6 crashed the process. Out of bounds in any component, the update is dropped (StableHLO, JAX's
    FILL_OR_DROP), eager and jitted, in every mode."""
    info = np.iinfo(dtype)
    pts = [[0, 0], [3, 5], [0, 6], [1, 6], [4, 0], [2, 200], [info.max, 0], [0, info.max], [1, 2]]
    pts += [[-1, 7], [1, -1], [-1, 0], [info.min, 3]] if info.min else []
    pts = np.array(pts, dtype)
    rows = np.array([[0], [3], [4], [200], [info.max]] + ([[-1], [info.min]] if info.min else []), dtype)
    pv = np.arange(1, len(pts) + 1, dtype=np.float32)
    rv = np.arange(1, 6 * len(rows) + 1, dtype=np.float32).reshape(len(rows), 6)
    ops = {"set": lambda a, b: b, "add": np.add, "max": np.maximum}

    def f(x, pts, pv, rows, rv):
        return [(lax.scatter(x, pts, pv, update_window_dims=(), inserted_window_dims=(0, 1),
                             scatter_dims_to_operand_dims=(0, 1), mode=m),
                 lax.scatter(x, rows, rv, update_window_dims=(1,), inserted_window_dims=(0,),
                             scatter_dims_to_operand_dims=(0,), mode=m)) for m in ops]

    for got in (f(X, pts, pv, rows, rv), stagec.jit(f)(X, pts, pv, rows, rv)):
        for (gp, gr), op in zip(got, ops.values()):
            np.testing.assert_array_equal(np.asarray(gp), _scatter_oracle(X, pts, pv, (1, 1), op))
            np.testing.assert_array_equal(np.asarray(gr), _scatter_oracle(X, rows, rv, (1, 6), op))
