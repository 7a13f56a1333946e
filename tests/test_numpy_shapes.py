"""Differential tests of shape manipulation, creation and sorting: stagec eager, stagec jit and NumPy agree."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import stagec
import stagec.numpy as snp
from numpy_diff import MAX_EXAMPLES, BOOL, F32, I8, U8, arrays, assert_matches, jax, jnp, jitted

SETTINGS = settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])


def _shape_ops(m, x):
    """The same shape manipulations through module `m` (stagec.numpy or numpy)."""
    nd, n0 = x.ndim, x.shape[0]
    out = {
        "reshape": m.reshape(x, (-1,)), "reshape2": m.reshape(x, x.shape[::-1]), "ravel": m.ravel(x),
        "squeeze": m.squeeze(m.expand_dims(x, (0, -1))), "expand_dims": m.expand_dims(x, -1),
        "broadcast_to": m.broadcast_to(x, (2,) + x.shape),
        "broadcast_arrays": m.broadcast_arrays(x, m.ones((2,) + (1,) * nd, x.dtype))[1],
        "transpose": m.transpose(x), "swapaxes": m.swapaxes(x, 0, -1), "moveaxis": m.moveaxis(x, 0, -1),
        "concatenate": m.concatenate([x, x[..., :1]], axis=-1), "concat_none": m.concatenate([x, x], axis=None),
        "stack": m.stack([x, x], axis=-1), "hstack": m.hstack([x, x]), "vstack": m.vstack([x, x]),
        "split": m.split(x, [1], axis=-1)[1], "array_split": m.array_split(x, 2, axis=0)[0],
        "tile": m.tile(x, (2, 1)), "repeat": m.repeat(x, 2, axis=-1), "repeat_flat": m.repeat(x, 3),
        "repeat_counts": m.repeat(x, [2] + [0] * (n0 - 1), axis=0) if n0 else m.repeat(x, [], axis=0),
        "flip": m.flip(x), "flip0": m.flip(x, 0), "roll": m.roll(x, 1), "roll_axis": m.roll(x, -4, axis=-1),
        "pad": m.pad(x, 1), "pad_widths": m.pad(x, [(1, 0)] + [(0, 2)] * (nd - 1), constant_values=3),
        "sort": m.sort(x), "sort0": m.sort(x, axis=0), "sort_none": m.sort(x, axis=None),
        "argsort": m.argsort(x, kind="stable") if m is np else m.argsort(x),
        "argsort0": m.argsort(x, axis=0, kind="stable") if m is np else m.argsort(x, axis=0),
    }
    if x.size:
        out.update({"pad_edge": m.pad(x, 2, mode="edge"), "pad_wrap": m.pad(x, 1, mode="wrap"),
                    "pad_reflect": m.pad(x, [(1, 1)] * nd, mode="reflect"),
                    "pad_symmetric": m.pad(x, 2, mode="symmetric"),
                    "take": m.take(x, [0, -1, 0], axis=0), "take_flat": m.take(x, [x.size - 1, 0]),
                    "take_along": m.take_along_axis(x, m.argsort(x, axis=-1)[..., ::-1], axis=-1)})
    return out


def _snp_shape_ops(x):
    return _shape_ops(snp, x)


@SETTINGS
@given(st.data())
def test_shape_functions_match_numpy(data):
    dt = data.draw(st.sampled_from([F32, I8, BOOL, U8]), "dtype")
    shape = data.draw(st.sampled_from([(2, 3), (0, 3), (2, 1, 3)]), "shape")
    x = data.draw(arrays(dt, shape, -5, 5), "x")
    got = jitted(_snp_shape_ops)(x)
    eager = _snp_shape_ops(x) if (dt, shape) == (F32, (2, 3)) else got
    want = _shape_ops(np, x)
    assert sorted(got) == sorted(want)
    for k in want:
        assert got[k].dtype == want[k].dtype or k.startswith("argsort"), f"{k}: {got[k].dtype} vs {want[k].dtype}"
        assert_matches(got[k], want[k], f"{k}({dt}{shape}) jit")
        assert_matches(eager[k], want[k], f"{k}({dt}{shape}) eager")


def test_scalar_shapes_match_numpy():
    x = np.float32(2.5)
    fn = lambda v: [snp.reshape(v, (1, 1)), snp.ravel(v), snp.expand_dims(v, 0), snp.broadcast_to(v, (2, 2)),
                    snp.stack([v, v]), snp.atleast_1d(v), snp.atleast_2d(v), snp.tile(v, 3), snp.repeat(v, 2),
                    snp.pad(snp.atleast_1d(v), 1), snp.sort(v, axis=None)]
    want = [np.reshape(x, (1, 1)), np.ravel(x), np.expand_dims(x, 0), np.broadcast_to(x, (2, 2)), np.stack([x, x]),
            np.atleast_1d(x), np.atleast_2d(x), np.tile(x, 3), np.repeat(x, 2), np.pad(np.atleast_1d(x), 1),
            np.sort(x, axis=None)]
    for got in (fn(x), stagec.jit(fn)(x)):
        for k, (g, w) in enumerate(zip(got, want)):
            assert_matches(g, w, f"scalar #{k}")


def test_sort_nan_signed_zero_and_stability_match_numpy():
    x = np.array([3.0, np.nan, -0.0, 0.0, -np.inf, 1.0, np.nan, 0.0, -0.0, np.inf, 1.0], np.float32)
    # (the jitted sort and argsort in one module)
    for s, i in ((snp.sort(x), snp.argsort(x)), stagec.jit(lambda x: (snp.sort(x), snp.argsort(x)))(x)):
        assert_matches(np.asarray(s), np.sort(x), "sort")
        np.testing.assert_array_equal(np.asarray(i), np.argsort(x, kind="stable"))
    b = np.array([True, False, True, False])
    np.testing.assert_array_equal(np.asarray(snp.argsort(b)), np.argsort(b, kind="stable"))
    assert snp.argsort(b).dtype == np.int32


def test_shape_errors_match_numpy_kinds():
    x = np.zeros((2, 3), np.float32)
    cases = [
        (lambda m: m.reshape(x, (4, 2)), ValueError), (lambda m: m.reshape(x, (-1, -1)), ValueError),
        (lambda m: m.concatenate([x, np.zeros((3, 3))], axis=1), ValueError),
        (lambda m: m.concatenate([]), ValueError), (lambda m: m.stack([x, x.T]), ValueError),
        (lambda m: m.split(x, 2, axis=1), ValueError), (lambda m: m.broadcast_to(x, (3,)), ValueError),
        (lambda m: m.squeeze(x, 0), ValueError), (lambda m: m.swapaxes(x, 0, 2), np.exceptions.AxisError),
        (lambda m: m.moveaxis(x, [0, 0], [1, 0]), ValueError), (lambda m: m.transpose(x, (0, 0)), ValueError),
        (lambda m: m.repeat(x, -1), ValueError), (lambda m: m.tile(x, (-1,)), ValueError),
        (lambda m: m.pad(x, -1), ValueError), (lambda m: m.take(x, [6], mode="raise"), IndexError),
        (lambda m: m.take_along_axis(x, np.zeros(2, np.int32), axis=0), ValueError),
        (lambda m: m.expand_dims(x, 3), np.exceptions.AxisError), (lambda m: m.sort(x, axis=2), np.exceptions.AxisError),
        (lambda m: m.eye(-1), ValueError), (lambda m: m.ones((2, -1)), ValueError),
    ]
    for k, (fn, exc) in enumerate(cases):
        with pytest.raises(exc):
            fn(np)
        with pytest.raises(exc):
            fn(snp)


# ---------------------------------------------------------------- creation


def _creation(m, v):
    return {
        "zeros": m.zeros((2, 3)), "ones_int": m.ones(3, dtype=np.int32), "full": m.full((2, 2), 7),
        "full_bool": m.full((1, 2), True), "empty_shape": m.empty((0, 2)).shape, "zeros_like": m.zeros_like(v),
        "ones_like": m.ones_like(v, dtype=np.int8), "full_like": m.full_like(v, 2.5),
        "empty_like_shape": m.empty_like(v).shape, "eye": m.eye(3), "eye_k": m.eye(3, 4, k=1),
        "eye_neg": m.eye(4, 2, k=-2, dtype=np.int32), "identity": m.identity(2, dtype=bool),
        "arange": m.arange(5), "arange3": m.arange(2, 11, 3), "arange_f": m.arange(0.5, 2.0, 0.25),
        "arange_neg": m.arange(5, -3, -2), "arange_empty": m.arange(3, 1), "linspace": m.linspace(-1, 1, 5),
        "linspace_noend": m.linspace(0, 1, 4, endpoint=False), "linspace_1": m.linspace(2, 3, 1),
        "tri": m.tri(3), "tri_k": m.tri(2, 4, k=1, dtype=np.int32), "tril": m.tril(v), "tril_k": m.tril(v, -1),
        "triu": m.triu(v), "triu_k": m.triu(v, 1), "tril_batch": m.tril(m.ones((2, 3, 3), np.int32)),
        "meshgrid": m.meshgrid(m.arange(3), m.arange(2)), "meshgrid_ij": m.meshgrid(m.arange(3), m.arange(2),
                                                                                      indexing="ij"),
        "meshgrid3": m.meshgrid(m.arange(2), m.arange(3), m.arange(4)),
        "meshgrid_sparse": m.meshgrid(m.arange(3), m.arange(2), sparse=True),
    }


def test_creation_functions_match_numpy():
    v = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    want = _creation(np, v)
    jit = stagec.jit(lambda a: _creation(snp, a))(v)
    for got in (_creation(snp, v), jit):
        for k, w in want.items():
            if k.endswith("shape"):
                assert tuple(got[k]) == w, k
                continue
            for g, ww in zip(got[k] if isinstance(w, (list, tuple)) else [got[k]],
                             w if isinstance(w, (list, tuple)) else [w]):
                assert_matches(g, ww, f"creation {k}")
                if ww.dtype != np.float64 and ww.dtype != np.int64:
                    assert g.dtype == ww.dtype, f"{k}: {g.dtype} vs {ww.dtype}"
    # Dtypes follow JAX: Python ints give int32, floats float32 (without x64).
    assert snp.arange(3).dtype == np.int32 and snp.linspace(0, 1, 3).dtype == np.float32
    assert snp.eye(2).dtype == np.float32 and snp.full((2,), 1.5).dtype == np.float32
    if jnp is not None:
        for name, fn in [("tri", lambda m: m.tri(3)), ("full_like", lambda m: m.full_like(v, 2))]:
            assert fn(snp).dtype == jax.eval_shape(lambda: fn(jnp)).dtype, name


def test_broadcast_shapes_returns_ints():
    got = snp.broadcast_shapes((3,), (2, 1))
    assert got == (2, 3) and all(type(d) is int for d in got)


def test_lax_sort_of_one_array_or_a_sequence_as_jax():
    # one array in, one array out, sorted along the last axis (it was split into its rows as if a sequence)
    from stagec import lax
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    got = lax.sort(x)
    assert not isinstance(got, (list, tuple)) and got.shape == (3, 4)
    np.testing.assert_array_equal(np.asarray(got), np.sort(x, -1))
    np.testing.assert_array_equal(np.asarray(stagec.jit(lambda v: lax.sort(v, dimension=0))(x)), np.sort(x, 0))
    keys, vals = lax.sort((x, -x), num_keys=1)
    np.testing.assert_array_equal(np.asarray(keys), np.sort(x, -1))
    np.testing.assert_array_equal(np.asarray(vals), -np.sort(x, -1))


def test_sorts_of_128k_elements_compile_and_match_numpy():
    # IREE's CPU sort keeps 8-16 rows of its operands on the stack: 128 KiB here, past the 64 KiB the backend's
    # first retry allows; the last retry allows 1 MiB (local-task workers get 4 MiB stacks)
    x = (np.random.default_rng(4).standard_normal((128, 1024)) * 100).astype(np.float32)
    a = stagec.device_put(x)
    # (one module: the float32 sort and the int32 argsort)
    srt, idx = stagec.jit(lambda v: (snp.sort(v, axis=-1), snp.argsort(v.astype(np.int32), axis=-1)))(a)
    np.testing.assert_array_equal(np.asarray(srt), np.sort(x, -1))
    idx = np.asarray(idx)
    xi = x.astype(np.int32)
    np.testing.assert_array_equal(np.take_along_axis(xi, idx, -1), np.sort(xi, -1))
    np.testing.assert_array_equal(np.asarray(a), x)


def test_complex_pad_and_full_convolutions_compile():
    """iree-compile crashed (SIGSEGV) on a complex `stablehlo.pad`: `snp.pad` of complex values under jit, and
    complex convolve/correlate in modes "full" and "same". The pad is two real ones now. Oracle: NumPy."""
    a = np.array([1.0 + 1j, 2.0, 3.0 - 2j, -1.0, 0.5j], np.complex64)
    v = np.array([0.5, -1.0 + 1j, 2.0], np.complex64)
    got = stagec.jit(lambda a, v: (snp.pad(a, (1, 2), constant_values=2 - 1j), snp.convolve(a, v),
                                   snp.correlate(a, v, mode="same"), snp.pad(a, 2, mode="reflect")))(a, v)
    want = (np.pad(a, (1, 2), constant_values=2 - 1j), np.convolve(a, v), np.correlate(a, v, mode="same"),
            np.pad(a, 2, mode="reflect"))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6)


def test_insert_negative_index_values_layout_and_a_traced_roll():
    """insert(x, -1, v) appended (-1 was taken modulo n + 1; NumPy and JAX insert before the last element), values
    of shape (3, 1) along axis 1 raised, and an axis out of range was wrapped; roll by a traced shift raised
    TypeError (iteration over a 0-d array). Oracle: NumPy."""
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    for o in (-1, -5, 2):
        np.testing.assert_array_equal(np.asarray(snp.insert(x, o, 9.0, axis=1)), np.insert(x, o, 9.0, axis=1))
        np.testing.assert_array_equal(np.asarray(snp.insert(x, o, 9.0)), np.insert(x, o, 9.0))
    v = np.array([[1.0], [2.0], [3.0]], np.float32)
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        snp.insert(x, 1, 0.0, axis=2)
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    # (one module: the jitted insert beside the rolls by a traced shift)
    f = stagec.jit(lambda x, a, s: (snp.insert(x, 4, v, axis=1),
                                    (snp.roll(a, s, axis=1), snp.roll(a, s), snp.roll(a, s, axis=(0, 2)))))
    for s in (3, -7, 0):
        ins, rolls = f(x, a, np.int32(s))
        np.testing.assert_array_equal(np.asarray(ins), np.insert(x, 4, v, axis=1))
        for g, w in zip(rolls, (np.roll(a, s, axis=1), np.roll(a, s), np.roll(a, s, axis=(0, 2)))):
            np.testing.assert_array_equal(np.asarray(g), w)


def test_pad_statistic_modes_and_empty():
    """pad's 'maximum', 'minimum', 'mean', 'median' (with stat_length) and 'empty' raised NotImplementedError (JAX
    has them). Oracle: NumPy (integers' means rounded half to even, as JAX's and NumPy's; 'empty' is JAX's zeros)."""
    x = (np.arange(12, dtype=np.int32).reshape(3, 4) ** 2)
    f = x.astype(np.float32) / 7
    cases = [(mode, sl) for mode in ("maximum", "minimum", "mean", "median") for sl in (None, 2, ((1, 3), (2, 1)))]
    # (one module for all: each compile costs the suite ~0.5 CPU-s)
    got = stagec.jit(lambda a, b: [snp.pad(v, ((1, 2), (2, 1)), mode=m, stat_length=sl) for m, sl in cases
                                   for v in (a, b)])(x, f)
    want = [np.pad(v, ((1, 2), (2, 1)), mode=m, stat_length=sl) for m, sl in cases for v in (x, f)]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(snp.pad(x, 1, mode="empty")), np.pad(x, 1))
    with pytest.raises(ValueError, match="stat_length of 0"):
        snp.pad(x, 1, mode="mean", stat_length=0)
    with pytest.raises(ValueError, match="reflect_type"):
        snp.pad(x, 1, mode="reflect", reflect_type="neither")


def test_pad_odd_reflection_linear_ramp_and_complex_value_pairs():
    """pad's reflect_type='odd' and mode 'linear_ramp' raised NotImplementedError (JAX has both); a complex array
    padded with a (before, after) pair of values failed to compile under jit (IREE, on two chained complex pads).
    An integer ramp is NumPy's, exactly: from 5 down to the edge 2 it is 5, 4, 3 (JAX's float formula floors
    4.9999 and gives 5, 3, 3). Oracle: NumPy."""
    x = np.array([[5, 3, 2, 1], [2, 9, -4, 0], [7, 7, 1, 3]], np.int32)
    f = (x ** 2).astype(np.float32) / 7
    cases = [dict(mode=m, reflect_type="odd") for m in ("reflect", "symmetric")] + [
        dict(mode="linear_ramp", end_values=e) for e in (5, ((1, -20), (3, 40)), 2.5)]
    widths = [((2, 7), (5, 1)), ((0, 3), (4, 4))]  # (pads wider than the axis reflect more than once)
    got = stagec.jit(lambda a, b, c: [snp.pad(v, w, **k) for k in cases for w in widths for v in (a, b)]
                     + [snp.pad(c, (2, 1), constant_values=(1 - 1j, 2))])(x, f, f[0] + 1j * f[1])
    want = [np.pad(v, w, **k) for k in cases for w in widths for v in (x, f)] + [
        np.pad(f[0] + 1j * f[1], (2, 1), constant_values=(1 - 1j, 2))]
    eager = [snp.pad(x[0].astype(np.uint8), 3, mode="linear_ramp", end_values=(0, 5)),
             snp.pad(f[:1, :1], 2, mode="reflect", reflect_type="odd")]
    want += [np.pad(x[0].astype(np.uint8), 3, mode="linear_ramp", end_values=(0, 5)),
             np.pad(f[:1, :1], 2, mode="reflect", reflect_type="odd")]
    for k, (g, w) in enumerate(zip(got + eager, want)):
        assert g.dtype == w.dtype, k
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, atol=1e-5, err_msg=str(k))


def test_repeat_total_repeat_length_and_ravel_multi_index_modes():
    """repeat ignored `total_repeat_length` (repeat(x, [1, 0, 2], axis=1, total_repeat_length=4) had 3 columns, not
    4) and refused traced repeats with it; ravel_multi_index gave 4, 20, -10 for out-of-bounds indices in mode
    'raise' (NumPy and JAX raise ValueError) and raised on order='F'. Oracles: JAX's values as literals (repeat's
    cut or filled-out result), NumPy (ravel_multi_index)."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    cases = [((1, 0, 2), 4, [0, 2, 2, 2]), ((1, 0, 2), 2, [0, 2]), ((2, 0, 0), 4, [0, 0, 2, 2]),
             ((0, 0, 3), 6, [2, 2, 2, 2, 2, 2])]
    f = stagec.jit(lambda a, r: [snp.repeat(a, r, axis=1, total_repeat_length=t) for _, t, _ in cases[:2]])
    got = [snp.repeat(x, np.array(r), axis=1, total_repeat_length=t) for r, t, _ in cases] + f(x, np.array([1, 0, 2]))
    for g, (_, _, w) in zip(got, cases + cases[:2]):
        np.testing.assert_array_equal(np.asarray(g)[0], w)
        assert g.shape == (2, len(w))
    np.testing.assert_array_equal(np.asarray(snp.repeat(x, 2, total_repeat_length=5)), [0, 0, 1, 1, 2])
    i, j = np.array([0, 2, 1, 5, -1], np.int32), np.array([3, 0, 1, 4, -6], np.int32)
    for order in ("C", "F"):
        np.testing.assert_array_equal(np.asarray(snp.ravel_multi_index((i[:3], j[:3]), (3, 4), order=order)),
                                      np.ravel_multi_index((i[:3], j[:3]), (3, 4), order=order))
        for mode in ("clip", "wrap"):
            np.testing.assert_array_equal(
                np.asarray(snp.ravel_multi_index((i, j), (3, 4), mode=mode, order=order)),
                np.ravel_multi_index((i, j), (3, 4), mode=mode, order=order))
    with pytest.raises(ValueError, match="invalid entry"):
        snp.ravel_multi_index((i, j), (3, 4))


def test_full_of_a_python_number_is_weak_and_like_functions_take_shape():
    """full(3, 7) was strongly int32, so full(3, 7) + int8 was int32 (JAX: weakly typed, int8); full_like,
    zeros_like, ones_like and empty_like rejected JAX's `shape=`; take_along_axis rejected
    mode='promise_in_bounds'. Oracles: JAX's dtypes as literals, NumPy's values."""
    one = np.ones(3, np.int8)
    assert (snp.full(3, 7) + one).dtype == np.int8 and (snp.full(3, 7.5) + one.astype(np.float16)).dtype == np.float16
    assert not snp.full(3, 7, dtype=np.int32).weak_type and not snp.full(3, True).weak_type
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    for name, want in (("full_like", np.full((4,), 2.5, np.float16)), ("zeros_like", np.zeros(4, np.float16)),
                       ("ones_like", np.ones(4, np.float16)), ("empty_like", np.zeros(4, np.float16))):
        args = (2.5,) if name == "full_like" else ()
        g = getattr(snp, name)(a, *args, dtype=np.float16, shape=(4,))
        assert g.dtype == want.dtype and g.shape == want.shape, name
        np.testing.assert_array_equal(np.asarray(g), want)
    g = snp.take_along_axis(a, np.array([[2], [0]]), axis=1, mode="promise_in_bounds")
    np.testing.assert_array_equal(np.asarray(g), [[2], [3]])


def test_isclose_of_integers_geomspace_and_integer_ranges():
    """isclose/allclose compared integers for equality (isclose(1000, 1001, atol=1) False; NumPy and JAX: True);
    geomspace(-1+0j, 1+0j, 5) was -1 five times (the phase was lost: NumPy and JAX follow the arc) and
    geomspace(1, 256, 9, dtype=int32) floored 1.9999 to 1 (JAX: 1, 2, 4, ..., 256); linspace(5, a, 3,
    endpoint=False, dtype=int32) with an array `a` floored 4.9999 to 4 where NumPy has 5; arange with
    non-integral bounds and an integer dtype gave a third answer where NumPy's and JAX's differ: now it raises.
    Oracles: NumPy, JAX's geomspace integers as literals."""
    a, b = np.array([1, 2, 3, 1000, 0], np.int32), np.array([1, 3, 3, 1001, 1], np.int32)
    for kw in ({"rtol": 1e-3, "atol": 0}, {"rtol": 0, "atol": 1}, {}):
        np.testing.assert_array_equal(np.asarray(snp.isclose(a, b, **kw)), np.isclose(a, b, **kw))
        assert bool(snp.allclose(a.astype(np.uint8), b.astype(np.uint8), **kw)) == np.allclose(a, b, **kw)
    for ep in (True, False):
        np.testing.assert_allclose(np.asarray(snp.geomspace(-1 + 0j, 1 + 0j, 5, endpoint=ep)),
                                   np.geomspace(-1 + 0j, 1 + 0j, 5, endpoint=ep), atol=1e-6)
        e = np.array([5, 2, 0, -7], np.int32)
        np.testing.assert_array_equal(np.asarray(snp.linspace(5, e, 3, endpoint=ep, dtype=np.int32)),
                                      np.linspace(5, e, 3, endpoint=ep, dtype=np.int32))
    np.testing.assert_array_equal(np.asarray(snp.geomspace(1, 256, 9, dtype=np.int32)), 2 ** np.arange(9))
    np.testing.assert_array_equal(np.asarray(snp.arange(0.5, 3, dtype=np.int32)), [0, 1, 2])  # (all agree)
    with pytest.raises(ValueError, match="disagree"):
        snp.arange(-3, 3, 1.5, dtype=np.int32)
