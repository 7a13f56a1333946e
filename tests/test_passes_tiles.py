"""passes/tiles.py. `updates-as-concats`: dynamic_update_slice chains at constant starts that tile their whole
result become concatenations (then, cut from one array, one transpose); anything else is left alone. Values against
NumPy's own slice assignment (with the op's clamping of starts). `pad-sums-as-concats`: sums of zero pads of pieces
apart along one axis (the gradient of slices) become concatenations; values against float64 NumPy."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stagec
import stagec.numpy as snp
from stagec import lax


def _updated(base, updates):
    """NumPy's dynamic_update_slice chain: each start clamped so that the update fits, as the op does."""
    out = np.array(base)
    for u, starts in updates:
        s = [min(max(st, 0), d - n) for st, d, n in zip(starts, out.shape, u.shape)]
        out[tuple(slice(a, a + n) for a, n in zip(s, u.shape))] = u
    return out


def _rewrites(f, *args) -> tuple[int, str]:
    low = stagec.jit(f).lower(*args)
    return (sum(next(s for s in low.pass_stats if s.name == "updates-as-concats").rewrites.values()),
            low.as_text("final"))


def test_an_image_grid_drawn_block_by_block_is_one_transpose():
    """JAX's VAE example style: 64 images of 28x28 into an 8x8 grid, one `dynamic_update_slice` each."""
    imgs = np.random.default_rng(0).standard_normal((64, 784)).astype(np.float32)

    def grid(imgs):
        out = snp.zeros((8 * 28, 8 * 28))
        for i in range(8):
            for j in range(8):
                out = lax.dynamic_update_slice(out, imgs[i * 8 + j].reshape(28, 28), (i * 28, j * 28))
        return out
    n, text = _rewrites(grid, imgs)
    assert n == 1 and "dynamic_update_slice" not in text and "concatenate" not in text  # (fold-movement: a transpose)
    want = imgs.reshape(8, 8, 28, 28).transpose(0, 2, 1, 3).reshape(224, 224)
    assert np.array_equal(np.asarray(stagec.jit(grid)(imgs)), want)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_blocks_of_unequal_sizes_in_any_order_and_dtype(dtype):
    """A 3-D result cut 2+3 by 4+1+2 by 5, written out of order from different arrays: concatenations. (Updating an
    argument, stagec's first update is a masked select, not a `dynamic_update_slice`: such a chain is no tiling.)"""
    rng = np.random.default_rng(1)
    cuts = [(0, 2), (2, 3)], [(0, 4), (4, 1), (5, 2)], [(0, 5)]
    cells = [(a, b, c) for a in cuts[0] for b in cuts[1] for c in cuts[2]][::-1]
    parts = [(rng.standard_normal((a[1], b[1], c[1])) * 9).astype(dtype) for a, b, c in cells]

    def f(*parts):
        base = snp.zeros((5, 7, 5), dtype)
        for (a, b, c), p in zip(cells, parts):
            base = lax.dynamic_update_slice(base, p, (a[0], b[0], c[0]))
        return base
    n, text = _rewrites(f, *parts)
    assert n == 1 and "dynamic_update_slice" not in text
    want = _updated(np.zeros((5, 7, 5), dtype), [(p, (a[0], b[0], c[0])) for (a, b, c), p in zip(cells, parts)])
    assert np.array_equal(np.asarray(stagec.jit(f)(*parts)), want)


@pytest.mark.parametrize("case", ["overlap", "gap", "clamped", "traced start", "read midway"])
def test_chains_that_are_not_a_tiling_are_left_alone(case):
    rng = np.random.default_rng(2)
    blocks = rng.standard_normal((4, 2, 3)).astype(np.float32)
    starts = {"overlap": [(0, 0), (0, 2), (2, 0), (2, 3)], "gap": [(0, 0), (0, 3), (2, 0), (3, 3)],
              "clamped": [(0, 0), (0, 3), (2, 0), (2, 4)]}.get(case, [(0, 0), (0, 3), (2, 0), (2, 3)])
    if case == "gap":
        blocks = blocks[:, :1]
        starts = [(0, 0), (0, 3), (2, 0), (3, 3)]

    def f(blocks, k):
        base, seen = snp.zeros((4, 6)), []
        for b, (i, j) in zip(blocks, starts):
            base = lax.dynamic_update_slice(base, b, (k if case == "traced start" and i == 2 else i, j))
            seen.append(base[0, 0])
        return (base, snp.stack(seen)) if case == "read midway" else base
    k = np.int32(2)
    n, text = _rewrites(f, blocks, k)
    assert n == 0 and "dynamic_update_slice" in text
    got = stagec.jit(f)(blocks, k)
    got = got[0] if case == "read midway" else got
    assert np.array_equal(np.asarray(got), _updated(np.zeros((4, 6), np.float32), list(zip(blocks, starts))))


def test_the_same_chain_tiling_its_result_is_rewritten():
    """(The control of the cases above: their chain with starts that tile the 4x6 result.)"""
    blocks = np.random.default_rng(2).standard_normal((4, 2, 3)).astype(np.float32)
    starts = [(0, 0), (0, 3), (2, 0), (2, 3)]

    def f(blocks):
        base = snp.zeros((4, 6))
        for b, s in zip(blocks, starts):
            base = lax.dynamic_update_slice(base, b, s)
        return base
    n, _ = _rewrites(f, blocks)
    assert n == 1
    assert np.array_equal(np.asarray(stagec.jit(f)(blocks)), _updated(np.zeros((4, 6), np.float32), list(zip(blocks, starts))))


def _pad_rewrites(f, *args) -> int:
    low = stagec.jit(f).lower(*args)
    return sum(next(s for s in low.pass_stats if s.name == "pad-sums-as-concats").rewrites.values())


@pytest.mark.parametrize("case", ["tiling", "gaps", "another term", "overlap", "two axes"])
def test_the_gradient_of_slices_is_a_concatenation(case):
    """d/dx of sum_i c_i * sum(sin(x[:, s_i])): the slices' transposes pad each piece's gradient with zeros; where the
    pieces lie apart along one axis (touching, with gaps, plus a term of x itself) the sum is one concatenation;
    overlapping pieces, or pieces placed along two axes, are left alone."""
    x = np.random.default_rng(4).standard_normal((6, 24)).astype(np.float32)
    cuts = {"tiling": [(0, 6), (6, 12), (12, 18), (18, 24)], "gaps": [(1, 4), (6, 9), (12, 15), (20, 23)],
            "another term": [(0, 6), (6, 12), (12, 18), (18, 24)], "overlap": [(0, 8), (6, 12), (12, 18), (18, 24)],
            "two axes": [(0, 6), (6, 12), (12, 18), (18, 24)]}[case]

    def f(x, m=snp):
        total = m.sum(x ** 2) if case == "another term" else 0.0
        for i, (a, b) in enumerate(cuts):
            piece = x[:3, a:b] if case == "two axes" and i == 3 else x[:, a:b]
            total = total + (i + 1) * m.sum(m.sin(piece))
        return total
    n = _pad_rewrites(stagec.grad(f), x)
    assert n == (0 if case in ("overlap", "two axes") else 1)
    x64 = x.astype(np.float64)
    want = 2 * x64 if case == "another term" else np.zeros_like(x64)
    for i, (a, b) in enumerate(cuts):
        rows = slice(0, 3) if case == "two axes" and i == 3 else slice(None)
        want[rows, a:b] += (i + 1) * np.cos(x64[rows, a:b])
    np.testing.assert_allclose(np.asarray(stagec.jit(stagec.grad(f))(x)), want, rtol=1e-6, atol=1e-6)


@settings(max_examples=12, deadline=None)
@given(sizes=st.lists(st.integers(1, 4), min_size=4, max_size=7), gaps=st.lists(st.integers(0, 2), min_size=8,
       max_size=8), axis=st.sampled_from([0, 1]), other=st.booleans())
def test_random_disjoint_slices_gradients(sizes, gaps, axis, other):
    """Pieces of random widths with random gaps along either axis, with or without another term: one
    concatenation, right."""
    cuts, at = [], gaps[0]
    for k, s in enumerate(sizes):
        cuts.append((at, at + s))
        at += s + gaps[k + 1]
    x = np.random.default_rng(at).standard_normal((at, 3) if axis == 0 else (3, at)).astype(np.float32)

    def f(x, m=snp):
        total = m.sum(x ** 2) if other else 0.0
        for i, (a, b) in enumerate(cuts):
            total = total + (i + 1) * m.sum(m.sin(x[a:b] if axis == 0 else x[:, a:b]))
        return total
    assert _pad_rewrites(stagec.grad(f), x) == 1
    x64 = x.astype(np.float64)
    want = 2 * x64 if other else np.zeros_like(x64)
    for i, (a, b) in enumerate(cuts):
        sl = (slice(a, b), slice(None)) if axis == 0 else (slice(None), slice(a, b))
        want[sl] += (i + 1) * np.cos(x64[sl])
    np.testing.assert_allclose(np.asarray(stagec.jit(stagec.grad(f))(x)), want, rtol=1e-6, atol=1e-6)
