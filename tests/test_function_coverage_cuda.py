"""The CUDA half of tests/test_function_coverage.py: every function compiles for CUDA (compiled only, no GPU needed),
in one module cycling through the dtypes, or one module per dtype under STAGEC_FULL_COVERAGE=1. A file of its own so
that it runs with the files that make no lavapipe device, before them (tests/conftest.py)."""
from __future__ import annotations

import pytest
from test_function_coverage import DTYPES, _cases, _full, _names, _rotation, _wide

import stagec


def _compile_cuda(pairs):
    _, every, args = _cases(pairs)
    with _wide("float64"):
        compiled = stagec.jit(every).lower(*args).compile("cuda")  # (not loaded: no GPU needed)
    assert len(compiled.artifact.vmfb) > 1000


def test_every_function_compiles_for_cuda():
    pairs = _rotation(DTYPES)
    assert {d for _, d in pairs} == set(DTYPES)
    _compile_cuda(pairs)


@pytest.mark.parametrize("dtype", _full(DTYPES))
def test_every_function_in_every_dtype_compiles_for_cuda(dtype):
    _compile_cuda([(n, dtype) for n in _names(dtype)])
