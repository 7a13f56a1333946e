"""`stagec.lax` at edge values against NumPy, closed forms and JAX 0.10.2's results stored as literals (so that these
run without JAX)."""
from __future__ import annotations

import numpy as np

import stagec
from stagec import lax

INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def test_reduce_and_or_xor_of_integers_are_bitwise_as_jax(x64):
    """JAX's reduce_and/or/xor of integers are bitwise (stagec's took booleans only, and had no reduce_xor); the
    reduction of nothing is every bit set for `and`, 0 for `or` and `xor`."""
    xs = [np.array([[5, 3, 7, -1], [12, 10, 6, -128]]).astype(dt) for dt in INTS]
    xs.append(np.array([[True, True, False, True], [True, True, True, True]]))
    fs = lambda x: [lax.reduce_and(x, (1,)), lax.reduce_or(x, (1,)), lax.reduce_xor(x, (1,)), lax.reduce_xor(x, (0, 1)),
                    lax.reduce_and(x[:, :0], (1,)), lax.reduce_or(x[:0], (0,)), lax.reduce_xor(x[:0], (0,))]
    jitted = stagec.jit(lambda xs: [fs(x) for x in xs])(xs)  # (one module)
    for x, got_jit in zip(xs, jitted):
        ones = np.array(True if x.dtype == np.bool_ else ~np.zeros((), x.dtype), x.dtype)
        want = [np.bitwise_and.reduce(x, 1), np.bitwise_or.reduce(x, 1), np.bitwise_xor.reduce(x, 1),
                np.bitwise_xor.reduce(x, None), np.full(2, ones), np.zeros(4, x.dtype), np.zeros(4, x.dtype)]
        for got in (fs(x), got_jit):
            for g, w in zip(got, want):
                assert np.asarray(g).dtype == x.dtype
                np.testing.assert_array_equal(np.asarray(g), w)
    assert int(lax.reduce_and(np.array([-1, -1], np.int8), (0,))) == -1
    np.testing.assert_array_equal(stagec.vmap(lambda v: lax.reduce_xor(v, (0,)))(np.arange(6).reshape(2, 3)), [3, 2])
