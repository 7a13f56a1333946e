"""Array API entry points that stagec provides so far (the rest of the standard is not done yet)."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp


def test_array_namespace_and_inplace_rebinds():
    x = snp.asarray(np.arange(3.0, dtype=np.float32))
    assert x.__array_namespace__() is snp
    y = x
    y += 1  # no __iadd__: Python rebinds y to a new array, x is unchanged (JAX's semantics)
    np.testing.assert_array_equal(x, [0, 1, 2])
    np.testing.assert_array_equal(y, [1, 2, 3])
    seen = []
    stagec.jit(lambda t: seen.append(t.__array_namespace__()) or t)(np.ones(2, np.float32))
    assert seen == [snp]


def test_array_api_compat_finds_stagec():
    compat = pytest.importorskip("array_api_compat")
    x = snp.asarray(np.ones(2, np.float32))
    assert compat.array_namespace(x) is snp
