"""`merge-contracted-dims` (passes/contractions.py): a product contracting consecutive axes on each side contracts
one axis of reshaped operands; the products against float64 NumPy, and the ones it must leave alone."""
import numpy as np
import pytest

import stagec
from stagec import lax

pytestmark = pytest.mark.cpu_only


def _rewrites(low) -> int:
    return sum(next(s for s in low.pass_stats if s.name == "merge-contracted-dims").rewrites.values())


# (lhs shape, rhs shape, lhs contracting, rhs contracting, merged?)
CASES = [
    ((8, 32, 24), (8, 32, 10), (0, 1), (0, 1), True),  # a sequence model's weight gradient
    ((5, 6, 7, 3), (6, 7, 4), (1, 2), (0, 1), True),  # runs in the middle, free axes on both sides of lhs's
    ((3, 4, 5, 6), (4, 5, 6, 2), (1, 2, 3), (0, 1, 2), True),  # a run of three
    ((8, 32, 24), (32, 8, 10), (0, 1), (1, 0), False),  # the pairs in another order: not one reshape
    ((8, 5, 32), (8, 32, 10), (0, 2), (0, 1), False),  # not consecutive on lhs
    ((8, 24), (8, 10), (0,), (0,), False),  # one axis already
]


@pytest.mark.parametrize("ls, rs, lc, rc, merged", CASES)
def test_merged_contractions_match_numpy(ls, rs, lc, rc, merged):
    rng = np.random.default_rng(len(ls) * 10 + len(rs))
    a, b = rng.standard_normal(ls).astype(np.float32), rng.standard_normal(rs).astype(np.float32)
    f = stagec.jit(lambda a, b: lax.dot_general(a, b, ((lc, rc), ((), ()))))
    assert _rewrites(f.lower(a, b)) == int(merged)
    want = np.tensordot(a.astype(np.float64), b.astype(np.float64), (lc, rc))
    np.testing.assert_allclose(np.asarray(f(a, b)), want, rtol=2e-5, atol=2e-5 * np.abs(want).max())


def test_batched_products_are_left_alone():
    a, b = np.ones((2, 3, 4, 5), np.float32), np.ones((2, 3, 4, 6), np.float32)
    f = stagec.jit(lambda a, b: lax.dot_general(a, b, (((1, 2), (1, 2)), ((0,), (0,)))))
    assert _rewrites(f.lower(a, b)) == 0
    np.testing.assert_array_equal(np.asarray(f(a, b)), np.full((2, 5, 6), 12.0, np.float32))


def test_integer_products_are_exact():
    rng = np.random.default_rng(1)
    a, b = rng.integers(-50, 50, (4, 6, 5), dtype=np.int32), rng.integers(-50, 50, (4, 6, 3), dtype=np.int32)
    f = stagec.jit(lambda a, b: lax.dot_general(a, b, (((0, 1), (0, 1)), ((), ()))))
    assert _rewrites(f.lower(a, b)) == 1
    np.testing.assert_array_equal(np.asarray(f(a, b)), np.tensordot(a.astype(np.int64), b, ((0, 1), (0, 1))))
