"""`fold-movement` (passes/movement.py): concatenations of pieces of one array as one reshape/reverse/transpose.
Results against NumPy (the same layout code run on ndarrays); the rewrite checked on the IR."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec.passes.movement import factor


def image_grid(m, nrow, ncol, imagevecs, imshape):
    """JAX's examples/mnist_vae.py helper, for NumPy (`m=np`) or stagec.numpy."""
    images = iter(imagevecs.reshape((-1,) + imshape))
    return m.vstack([m.hstack([next(images).T for _ in range(ncol)][::-1]) for _ in range(nrow)]).T


def test_image_grid_is_one_transpose():
    """111 pieces (100 slices, their transposes, 11 concatenations): IREE 3.13 compiled a dispatch per piece."""
    x = np.random.RandomState(0).rand(100, 784).astype(np.float32)
    f = stagec.jit(lambda v: image_grid(snp, 10, 10, v, (28, 28)))
    text = f.lower(x).as_text()
    assert "stablehlo.concatenate" not in text and text.count("stablehlo.transpose") <= 2
    np.testing.assert_array_equal(f(x), image_grid(np, 10, 10, x, (28, 28)))
    bools = x > 0.5  # (the example's grid is of sampled bits)
    np.testing.assert_array_equal(f(bools), image_grid(np, 10, 10, bools, (28, 28)))


CASES = {
    "stack_rows": lambda m, x: m.concatenate([x[i][None] for i in range(x.shape[0])], 0),
    "reversed_columns": lambda m, x: m.concatenate([x[:, i:i + 1] for i in reversed(range(x.shape[1]))], 1),
    "transposed_blocks": lambda m, x: m.concatenate([x[2 * i:2 * i + 2].T for i in range(3)], 1),
    "nested": lambda m, x: m.concatenate([m.concatenate([x[i:i + 1, j:j + 2] for j in (2, 0)], 1) for i in range(6)], 0),
    # left alone (not a bijection of x): a repeated piece, a part of x, a piece from another array
    "repeated": lambda m, x: m.concatenate([x[0], x[0], x[1]], 0),
    "partial": lambda m, x: m.concatenate([x[i] for i in range(3)], 0),
    "two_sources": lambda m, x: m.concatenate([x[0], x[1] * 2, x[2], x[3], x[4], x[5]], 0),
}


LAYOUT_X = np.arange(24, dtype=np.float32).reshape(6, 4) * 1.5 - 7


@functools.cache
def _layouts() -> dict:
    """Every CASES function's result, from one jitted module (one compile, not seven); each case reads an argument
    of its own, so no slice of one case is shared with another's (the rewrite sees each case as alone)."""
    return stagec.jit(lambda xs: {n: fn(snp, xs[n]) for n, fn in CASES.items()})({n: LAYOUT_X for n in CASES})


@pytest.mark.parametrize("name", sorted(CASES))
def test_layouts_match_numpy(name):
    x = LAYOUT_X
    fn = CASES[name]
    np.testing.assert_array_equal(_layouts()[name], fn(np, x))
    folded = "stablehlo.concatenate" not in stagec.jit(lambda v: fn(snp, v)).lower(x).as_text()
    assert folded == (name not in ("repeated", "partial", "two_sources"))


def test_factor_finds_every_reshape_reverse_transpose():
    """Random splits of 2..5 axes, reversals and permutations: `factor` finds a chain that maps the same way."""
    rng = np.random.RandomState(1)
    for _ in range(200):
        sizes = list(rng.randint(1, 6, size=rng.randint(2, 6)))
        n = int(np.prod(sizes))
        a = np.arange(n).reshape(sizes)
        rev = [d for d in range(len(sizes)) if rng.rand() < 0.3]
        flat = np.flip(a, rev).transpose(rng.permutation(len(sizes))).ravel()
        got = factor(flat, n)
        if n < 2:
            continue
        assert got is not None, (sizes, rev)
        s, r, p = got
        np.testing.assert_array_equal(np.flip(np.arange(n).reshape(s), r).transpose(p).ravel(), flat)
    assert factor(np.array([0, 2, 1, 3, 3]), 5) is None  # not a bijection
    assert factor(np.array([1, 0, 3, 2, 5, 4])[[0, 1, 2, 3, 5, 4]], 6) is None  # not a reshape-transpose
