"""`lax.gather` clamps each start into [0, dim - slice size], as StableHLO defines it (and JAX, and stagec's eager
NumPy rule). IREE 3.13 read past the operand: a start of 5 into 4 values gave 0 under jit, a uint8 200 gave memory
garbage, int32 2^31 - 1 crashed the process. Oracle: NumPy with the starts clipped."""
import functools

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


_DTYPES = (np.int32, np.uint8, np.uint32, np.int64)


def _starts(dtype):
    info = np.iinfo(dtype)
    return np.array([[0, 0], [3, 5], [5, 1], [200, 7], [info.max, info.max], [info.min, 2]], dtype=dtype)


@functools.cache
def _jitted_gathers() -> dict:
    """{(dtype, f): jit(f)(x, i)} for each `_starts` dtype and gather of test_out_of_bounds_starts_..., one module."""
    assert stagec.config.enable_x64  # (as the tests run it: the `x64` fixture)
    cases = {}
    for dtype in _DTYPES:
        idx = _starts(dtype)
        cases.update({(np.dtype(dtype).name, f.__name__): (f, x, i) for f, x, i in
                      ((_points, X, idx), (_rows, X, idx), (_one, V, idx[:, :1]))})
    keys = list(cases)
    got = stagec.jit(lambda args: [cases[k][0](x, i) for k, (x, i) in zip(keys, args)])(
        [cases[k][1:] for k in keys])
    return dict(zip(keys, got))


@pytest.mark.parametrize("dtype", _DTYPES)
def test_out_of_bounds_starts_are_clamped_eager_and_jitted(dtype, x64):
    idx = _starts(dtype)
    lo = np.clip(idx.astype(np.int64), 0, [3, 5])
    want_points = X[lo[:, 0], lo[:, 1]]
    start = np.clip(idx.astype(np.int64), 0, [2, 3])
    want_rows = np.stack([X[a:a + 2, b:b + 3] for a, b in start])
    one = idx[:, :1]
    want_one = V[np.clip(one[:, 0].astype(np.int64), 0, 3)]
    for f, x, i, want in ((_points, X, idx, want_points), (_rows, X, idx, want_rows), (_one, V, one, want_one)):
        np.testing.assert_array_equal(np.asarray(f(x, i)), want, err_msg=f"{f.__name__} eager")
        np.testing.assert_array_equal(np.asarray(_jitted_gathers()[np.dtype(dtype).name, f.__name__]), want,
                                      err_msg=f"{f.__name__} jitted")


_M = np.arange(20, dtype=np.float32).reshape(4, 5) * 10


def _clipped(i, n):
    """JAX's reading of a traced index: a negative one counts from the end, then out-of-bounds ones clamp."""
    i = np.asarray(i).astype(np.int64)
    return np.clip(np.where(i < 0, i + n, i), 0, n - 1)


_INDEX_DTYPES = (np.int32, np.uint32, np.int64)


def _indices(dtype):
    info = np.iinfo(dtype)
    return np.array([0, 3, 4, 9, info.max] + ([-1, -4, -5, -30, info.min] if info.min else []), dtype)


@functools.cache
def _jitted_indexing() -> dict:
    """{dtype: (the five reads and update, the vmapped read)} of test_numpy_indexing_..., each dtype's under jit,
    all in one module."""
    assert stagec.config.enable_x64  # (as the tests run it: the `x64` fixture)
    reads = lambda x, i: (x[i], x[:, i], x[i, i[::-1]], x[1:, i], x.at[i].set(-1.0, mode="clip"))  # noqa: E731
    rowwise = stagec.vmap(lambda r, k: r[k])
    names = [np.dtype(d).name for d in _INDEX_DTYPES]
    got = stagec.jit(lambda x, idx: [(reads(x, i), rowwise(x, i[:4])) for i in idx])(
        _M, [_indices(d) for d in _INDEX_DTYPES])
    return dict(zip(names, got))


@pytest.mark.parametrize("dtype", _INDEX_DTYPES)
def test_numpy_indexing_with_traced_out_of_bounds_indices_clamps(dtype, x64):
    """numpy indexing leaves a traced index out of bounds for the gather to clamp (no clamp of its own): reads,
    rows and columns, two indices at once, vmapped, and a 'clip' update whose indices a gather reads."""
    i = _indices(dtype)
    rows, cols = _clipped(i, 4), _clipped(i, 5)
    got, rowwise = _jitted_indexing()[np.dtype(dtype).name]
    want_set = _M.copy()
    want_set[rows] = -1.0
    for g, w in zip(got, (_M[rows], _M[:, cols], _M[rows, cols[::-1]], _M[1:, cols], want_set)):
        np.testing.assert_array_equal(np.asarray(g), w)
    np.testing.assert_array_equal(np.asarray(rowwise), _M[np.arange(4), cols[:4]])


def _scatter_oracle(x, idx, upd, window, op):
    """StableHLO's scatter in NumPy: an index vector whose window does not fit is dropped whole."""
    out = x.copy()
    for i, u in zip(idx.astype(np.int64), upd):
        if all(0 <= s <= n - w for s, n, w in zip(i, x.shape, window)):
            sl = tuple(slice(s, s + w) for s, w in zip(i, window))
            out[sl] = op(out[sl], u.reshape([w for w in window]))
    return out


def _scatter_args(dtype):
    """(pts, pv, rows, rv): index vectors of points and of rows, in and out of bounds, and their updates."""
    info = np.iinfo(dtype)
    pts = [[0, 0], [3, 5], [0, 6], [1, 6], [4, 0], [2, 200], [info.max, 0], [0, info.max], [1, 2]]
    pts += [[-1, 7], [1, -1], [-1, 0], [info.min, 3]] if info.min else []
    pts = np.array(pts, dtype)
    rows = np.array([[0], [3], [4], [200], [info.max]] + ([[-1], [info.min]] if info.min else []), dtype)
    pv = np.arange(1, len(pts) + 1, dtype=np.float32)
    rv = np.arange(1, 6 * len(rows) + 1, dtype=np.float32).reshape(len(rows), 6)
    return pts, pv, rows, rv


_SCATTER_OPS = {"set": lambda a, b: b, "add": np.add, "max": np.maximum}


def _scatters(x, pts, pv, rows, rv):
    return [(lax.scatter(x, pts, pv, update_window_dims=(), inserted_window_dims=(0, 1),
                         scatter_dims_to_operand_dims=(0, 1), mode=m),
             lax.scatter(x, rows, rv, update_window_dims=(1,), inserted_window_dims=(0,),
                         scatter_dims_to_operand_dims=(0,), mode=m)) for m in _SCATTER_OPS]


@functools.cache
def _jitted_scatters() -> dict:
    """{dtype: jit(_scatters)(X, *_scatter_args(dtype))} for every dtype of the test below, in one module."""
    assert stagec.config.enable_x64  # (as the tests run it: the `x64` fixture)
    got = stagec.jit(lambda x, args: [_scatters(x, *a) for a in args])(X, [_scatter_args(d) for d in _DTYPES])
    return dict(zip([np.dtype(d).name for d in _DTYPES], got))


@pytest.mark.parametrize("dtype", _DTYPES)
def test_scatter_drops_each_index_vector_whose_window_does_not_fit(dtype, x64):
    """IREE 3.13 checks no bounds of a scatter's indices: [0, 6] into (4, 6) wrote at [1, 0], [-1, 7] at [0, 1],
    and a row of 10^6 crashed the process. Out of bounds in any component, the update is dropped (StableHLO, JAX's
    FILL_OR_DROP), eager and jitted, in every mode."""
    pts, pv, rows, rv = _scatter_args(dtype)
    for how, got in (("eager", _scatters(X, pts, pv, rows, rv)), ("jitted", _jitted_scatters()[np.dtype(dtype).name])):
        for (gp, gr), (m, op) in zip(got, _SCATTER_OPS.items()):
            np.testing.assert_array_equal(np.asarray(gp), _scatter_oracle(X, pts, pv, (1, 1), op), err_msg=f"{how} {m}")
            np.testing.assert_array_equal(np.asarray(gr), _scatter_oracle(X, rows, rv, (1, 6), op), err_msg=f"{how} {m}")


def _general_oracle(x, idx, upd, window_dims, inserted, dims, op):
    """StableHLO's scatter, one index vector at a time: a window that does not fit is dropped."""
    out, batch = x.copy(), idx.shape[:-1]
    operand_windows = [d for d in range(x.ndim) if d not in inserted]
    batch_dims = [d for d in range(upd.ndim) if d not in window_dims]
    for b in np.ndindex(*batch):
        start = [0] * x.ndim
        for c, d in enumerate(dims):
            start[d] = int(idx[b][c])
        sel = [slice(None)] * upd.ndim
        for j, d in enumerate(batch_dims):
            sel[d] = b[j]
        u = upd[tuple(sel)]
        size = [1] * x.ndim
        for j, d in enumerate(operand_windows):
            size[d] = u.shape[j]
        if all(0 <= start[d] and start[d] + size[d] <= x.shape[d] for d in range(x.ndim)):
            at = tuple(slice(start[d], start[d] + size[d]) for d in range(x.ndim))
            out[at] = op(out[at], u.reshape(size))
    return out


# (operand shape, index vectors' batch shape, dims, inserted, update_window_dims, the updates' shape): forms IREE 3.13
# did not compile as given (indexed dimensions not leading, windows not whole, index vectors in two batch dimensions)
_FORMS = [((2, 3, 4), (2, 2), (1, 2), (1, 2), (0,), (2, 2, 2)),  # nested vmap of `.at[i].set` over the operand
          ((4, 3), (1,), (0,), (), (1, 2), (1, 2, 3)),  # a window of 2 rows at a start: dynamic_update_slice
          ((4, 3), (), (0,), (0,), (0,), (2,)),  # a part of a row (no batch)
          ((4, 3), (3,), (0, 1), (), (1, 2), (3, 2, 2)),  # 2 x 2 windows
          ((3, 4, 2), (2,), (2, 0), (2,), (0, 2), (3, 2, 4)),  # indexed dimensions in reverse order
          ((4, 3), (3,), (1,), (1,), (0,), (4, 3)),  # a column at a time
          ((1, 4), (2,), (1,), (0, 1), (), (2,))]  # an inserted dimension no index vector names (start 0)


def test_scatters_of_every_form_compile_and_match_numpy():
    """Forms a vmap or JAX's `lax.scatter` make; each compiles now (emitted as IREE compiles scatters: indexed
    dimensions leading, whole windows, one batch) and matches a NumPy loop, out-of-bounds vectors dropped."""
    rng = np.random.default_rng(0)
    cases = []
    for shape, batch, dims, inserted, wd, ushape in _FORMS:
        idx = np.stack([rng.integers(-1, shape[d] + 1, batch) for d in dims], -1).astype(np.int32)
        cases.append((rng.standard_normal(shape).astype(np.float32), idx, rng.standard_normal(ushape).astype(np.float32),
                      dict(update_window_dims=wd, inserted_window_dims=inserted, scatter_dims_to_operand_dims=dims)))
    ops = {"add": np.add, "max": np.maximum, "min": np.minimum}  # (windows overlap: "set" would pick any)

    def f(arrays):
        return [[lax.scatter(x, i, u, mode=m, **c[3]) for m in ops] for (x, i, u), c in zip(arrays, cases)]

    arrays = [c[:3] for c in cases]
    for got in (stagec.jit(f)(arrays), f(arrays[:2])):  # (eager: the first two forms)
        for outs, (x, i, u, dn) in zip(got, cases):
            for out, op in zip(outs, ops.values()):
                want = _general_oracle(x, i, u, dn["update_window_dims"], dn["inserted_window_dims"],
                                       dn["scatter_dims_to_operand_dims"], op)
                np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6, err_msg=str(dn))
