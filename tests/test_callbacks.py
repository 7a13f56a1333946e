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


def test_debug_print_in_while_loop_with_cond_equals_python_ordered(capsys):
    def body(c):
        i, v = c
        debug.print("i={} v={}", i, v, ordered=True)
        v = lax.cond(i % 2 == 0, lambda a: debug.print("even {}", a, ordered=True) or a * 2, lambda a: a + 1, v)
        return i + 1, v

    stagec.jit(lambda v: lax.while_loop(lambda c: c[0] < 5, body, (0, v)))(1.0)
    stagec.effects_barrier()
    want, i, v = [], 0, 1.0  # the same loop in Python
    while i < 5:
        want.append(f"i={i} v={v}")
        if i % 2 == 0:
            want.append(f"even {v}")
            v = v * 2
        else:
            v = v + 1
        i += 1
    assert capsys.readouterr().out.splitlines() == want


def test_debug_print_in_scan_equals_python(capsys):
    def step(c, a):
        debug.print("c={} a={}", c, a, ordered=True)
        return c + a, c * a

    stagec.jit(lambda xs: lax.scan(step, 0.0, xs))(np.arange(4.0, dtype=np.float32))
    stagec.effects_barrier()
    want, c = [], 0.0
    for a in np.arange(4.0):
        want.append(f"c={c} a={a}")
        c += a
    assert capsys.readouterr().out.splitlines() == want


def show_and_square(x):
    debug.print("x={}", x)
    y = snp.exp(x) * x
    debug.print("y={y}", y=y)
    return (y * y).sum()


def test_debug_print_under_grad_prints_the_primal_values_once(capsys):
    x = np.float32(0.5)
    show_and_square(x)  # the eager run is the reference
    want = capsys.readouterr().out.splitlines()
    assert len(want) == 2
    g = stagec.jit(stagec.grad(show_and_square))(x)
    stagec.effects_barrier()
    assert capsys.readouterr().out.splitlines() == want
    y = np.exp(x) * x
    np.testing.assert_allclose(float(g), 2 * y * (np.exp(x) * x + np.exp(x)), rtol=1e-5)


def test_debug_print_under_vmap_prints_each_example_in_order(capsys):
    xs = np.array([0.5, 1.0, 2.0], np.float32)
    out = stagec.jit(stagec.vmap(show_and_square))(xs)
    stagec.effects_barrier()
    old = stagec.config.eager_tiering
    stagec.config.update("eager_tiering", "never")  # (the module's exp kernel: its digits, not NumPy's)
    try:
        for x in xs:  # per statement, one line per example: the reference
            show_and_square(x)
    finally:
        stagec.config.update("eager_tiering", old)
    ref = capsys.readouterr().out.splitlines()
    got, eager = ref[:6], ref[6:]
    want = [line for line in eager if line.startswith("x=")] + [line for line in eager if line.startswith("y=")]
    assert got == want
    np.testing.assert_allclose(np.asarray(out), (np.exp(xs) * xs) ** 2, rtol=1e-6)


def test_pure_callback_under_grad_is_a_clear_error():
    f = lambda v: stagec.pure_callback(np.sin, S((), np.float32), v)  # noqa: E731
    with pytest.raises(NotImplementedError, match="callback"):
        stagec.grad(f)(np.float32(1.0))


# ---------------------------------------------------------------- saved artifacts that call Python


def tripled(v):
    return v * 3


def calls_python(x):
    debug.print("saw {}", x)
    return stagec.pure_callback(tripled, S(x.shape, x.dtype), x + 1) * 2


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("cb") / "calls_python.stagec"
    stagec.jit(calls_python).lower(S((3,), np.float32)).compile().save(path)
    return str(path)


def test_a_loaded_artifact_names_the_callbacks_it_needs_and_fails_without_them(saved):
    with pytest.warns(RuntimeWarning, match=r"debug_print_0 \(float32\[3\]\) -> \(\).*tripled_1"):
        g = stagec.load(saved)
    assert g.host_calls == ["debug_print_0", "tripled_1"] and g.missing == ("debug_print_0", "tripled_1")
    assert "tripled_1" in repr(g)
    with pytest.raises(stagec.aot.MissingCallbackError, match=r"tripled_1.*callbacks=\{'debug_print': fn, 'tripled'"):
        g(np.ones(3, np.float32))
    with pytest.warns(RuntimeWarning, match="tripled_1"):
        g = stagec.load(saved, callbacks={"debug_print": print})
    with pytest.raises(stagec.aot.MissingCallbackError, match="not provided: tripled_1"):
        g(np.ones(3, np.float32))
    with pytest.raises(stagec.aot.MissingCallbackError, match=r"\['tripld'\] are not called by jit_calls_python"):
        stagec.load(saved, callbacks={"tripld": tripled})


def test_a_loaded_artifact_runs_with_its_callbacks(saved, capsys):
    seen = []
    g = stagec.load(saved, callbacks={"debug_print_0": lambda v: seen.append(v.copy()), "tripled": tripled})
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(g(x)), (x + 1) * 3 * 2)
    np.testing.assert_array_equal(seen[0], x)
    bad = stagec.load(saved, callbacks={"debug_print": print, "tripled": lambda v: np.zeros(4)})
    with pytest.raises(stagec.errors.CallbackError, match=r"tripled_1 returned shape \(4,\).*expects \(3,\)"):
        bad(x).block_until_ready()


@pytest.mark.parametrize("target", ["cuda", "vulkan-spirv"])
def test_callbacks_in_loops_compile_for_gpu_targets(target):
    """The compile side of GPU callbacks, checked where no GPU is: a module whose loop prints and calls a
    pure callback each iteration compiles for the target, and its artifact lists the host calls it needs."""
    def f(x):
        def body(i, v):
            debug.print("i={} v={}", i, v)
            return stagec.pure_callback(lambda a: np.asarray(a) * 2, S((3,), np.float32), v)
        return lax.fori_loop(0, 2, body, x)
    compiled = stagec.jit(f).lower(np.ones(3, np.float32)).compile(target)
    assert compiled.artifact.meta["target"] == target
    names = [h.name for h in compiled.artifact.host_calls]
    assert len(names) == 2 and names[0].startswith("debug_print"), names
