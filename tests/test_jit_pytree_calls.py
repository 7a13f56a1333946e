"""jit's call path with pytree arguments (a model's parameter list): the last call's structure is recognized by
straight-line code made once per structure (`jit._leaf_getter`); any other structure takes the general path."""
from __future__ import annotations

import sys

import numpy as np

import stagec
import stagec.numpy as snp

jit_mod = sys.modules["stagec.jit"]


def test_parameter_lists_of_changing_structure():
    rng = np.random.default_rng(0)
    w = [rng.standard_normal((3, 3)).astype(np.float32) for _ in range(3)]
    W = [stagec.device_put(v) for v in w]

    @stagec.jit
    def f(params, x):
        for p in params:
            a, b = (p["a"], p["b"]) if isinstance(p, dict) else p
            x = x @ a + b
        return x
    x = stagec.device_put(np.ones((3, 3), np.float32))
    want = lambda pairs: np.asarray(x, np.float64) @ pairs[0][0] + pairs[0][1] if len(pairs) == 1 else \
        (np.asarray(x, np.float64) @ pairs[0][0] + pairs[0][1]) @ pairs[1][0] + pairs[1][1]
    calls = [([(W[0], W[1])], [(w[0], w[1])]),
             ([(W[0], W[1])], [(w[0], w[1])]),  # the same structure and avals: the straight-line path
             ([(W[1], W[0])], [(w[1], w[0])]),
             ([[W[0], W[1]]], [(w[0], w[1])]),  # a list where a tuple was: another structure
             ([(W[0], W[1]), (W[2], W[0])], [(w[0], w[1]), (w[2], w[0])]),
             ([{"a": W[2], "b": W[1]}], [(w[2], w[1])]),
             ([{"b": W[1], "a": W[2]}], [(w[2], w[1])]),  # (the same dict structure)
             ([{"a": W[2], "c": W[1]}], None)]
    for params, pairs in calls:
        if pairs is None:
            try:
                f(params, x)
            except KeyError:
                continue
            raise AssertionError("a dict without key 'b' was taken for one with it")
        np.testing.assert_allclose(np.asarray(f(params, x)), want(pairs), rtol=1e-5, atol=1e-5)
    assert f._cache_size() == 4  # [(,)], [[,]], [(,), (,)], [{a, b}]
    assert any(k.num_leaves == 3 for k in jit_mod._getters)  # (the [(w, b)] call's leaves, x among them)


def test_leaf_getter_rejects_other_structures():
    from stagec import tree_util
    t = ([(1, 2), (3, 4)], {"a": 5, "b": None, "c": [6]}, None)
    leaves, td = tree_util.tree_flatten(t)
    get = jit_mod._leaf_getter(td)
    assert get(t) == leaves
    for other in [([(1, 2)], {"a": 5, "b": None, "c": [6]}, None),
                  ([(1, 2), (3, 4)], {"a": 5, "b": None, "c": [6], "d": 7}, None),
                  ([(1, 2), [3, 4]], {"a": 5, "b": None, "c": [6]}, None),
                  ([(1, 2), (3, 4)], {"a": 5, "b": 1, "c": [6]}, None),
                  ([(1, 2), (3, 4)], {"a": 5, "b": None, "c": [6]}, 0),
                  ((), {}, None)]:
        assert get(other) is None, other
    assert snp.asarray(1.0) is not None
