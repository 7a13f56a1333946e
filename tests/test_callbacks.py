"""debug.print and host callbacks: eagerly, under jit, inside loops and branches; errors reach the caller."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import debug, lax
from stagec.experimental import io_callback

S = stagec.ShapeDtypeStruct


def test_debug_print_eager_and_jit_match_python(capsys):
    x = snp.arange(3.0)
    debug.print("x={} y={y}", x, y=2)
    stagec.jit(lambda v: debug.print("x={} y={y}", v, y=2))(x)
    stagec.effects_barrier()  # host callbacks run asynchronously, as JAX's
    out = capsys.readouterr().out.splitlines()
    assert out == ["x=[0. 1. 2.] y=2"] * 2


def test_debug_print_runs_every_iteration_of_loops(capsys):
    def f(x):
        def body(i, v):
            debug.print("i={} v={}", i, v)
            return v * 2
        v = lax.fori_loop(0, 3, body, x)
        _, ys = lax.scan(lambda c, a: (debug.print("a={}", a) or c, a + c), 0.0, snp.arange(2.0))
        return v
    stagec.jit(f)(1.0)
    stagec.effects_barrier()
    want = [f"i={i} v={float(2 ** i)}" for i in range(3)] + ["a=0.0", "a=1.0"]
    assert capsys.readouterr().out.splitlines() == want


def test_debug_print_in_the_taken_branch_only(capsys):
    f = stagec.jit(lambda p, x: lax.cond(p, lambda v: debug.print("true {}", v) or v, lambda v: v + 1, x))
    f(True, 1.0)
    f(False, 1.0)
    stagec.effects_barrier()
    assert capsys.readouterr().out.splitlines() == ["true 1.0"]


def test_pure_callback_gives_numpys_result_under_jit():
    x = np.linspace(-1, 1, 7).astype(np.float32)
    f = stagec.jit(lambda v: stagec.pure_callback(np.arcsinh, S(v.shape, v.dtype), v * 2) + 1)
    np.testing.assert_allclose(np.asarray(f(x)), np.arcsinh(x * 2) + 1, rtol=1e-6)


def test_io_callback_is_called_once_per_call_in_order():
    seen = []

    def log(v):
        seen.append(float(v))
        return np.float32(len(seen))
    f = stagec.jit(lambda v: io_callback(log, S((), np.float32), v, ordered=True))
    assert [float(f(np.float32(k))) for k in (5, 6, 7)] == [1.0, 2.0, 3.0]
    assert seen == [5.0, 6.0, 7.0]


def test_exception_in_a_callback_names_it_and_the_next_call_works():
    def boom(v):
        if float(v) < 0:
            raise ValueError("negative input")
        return v
    f = stagec.jit(lambda v: stagec.pure_callback(boom, S((), np.float32), v))
    with pytest.raises(Exception, match="boom.*negative input|negative input.*boom"):
        f(np.float32(-1)).block_until_ready()
    assert float(f(np.float32(2))) == 2.0


def test_callback_result_shape_mismatch_is_an_error():
    f = stagec.jit(lambda v: stagec.pure_callback(lambda a: np.zeros(5, np.float32), S((3,), np.float32), v))
    with pytest.raises(Exception, match=r"shape \(5,\).*declared \(3,\)"):
        f(np.zeros(3, np.float32)).block_until_ready()
