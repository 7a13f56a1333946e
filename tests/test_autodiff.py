"""Automatic differentiation: jvp of every differentiable primitive (through the NumPy functions that emit
it) against central finite differences in float64, vjp against jvp (<u, J v> == <J^T u, v>), both against
JAX where it is installed; the FAQ's gradients; composition with jit; errors."""
from __future__ import annotations

import functools
import os
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stagec
import stagec.numpy as snp
from stagec import grad, jit, jvp, lax, value_and_grad, vjp

try:
    import jax
    import jax.numpy as jnp
    JAX = types.SimpleNamespace(np=jnp, lax=jax.lax, nn=jax.nn)
except ImportError:  # pragma: no cover
    jax = JAX = None

MAX_EXAMPLES = int(os.environ.get("STAGEC_HYPOTHESIS_EXAMPLES", "3"))
SETTINGS = settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
SC = types.SimpleNamespace(np=snp, lax=lax, nn=stagec.nn)
SHAPE = (2, 3)  # one shape for every case, so compiled modules are shared between examples

pos = (0.5, 2.0)
unit = (-0.8, 0.8)
any_ = (-2.0, 2.0)
big = (1.5, 3.0)

# name -> (f(m, *xs), domains of the inputs)
CASES = {
    "neg": (lambda m, x: -x, [any_]),
    "abs": (lambda m, x: m.np.abs(x), [pos]),
    "exp": (lambda m, x: m.np.exp(x), [any_]),
    "expm1": (lambda m, x: m.np.expm1(x), [any_]),
    "log": (lambda m, x: m.np.log(x), [pos]),
    "log1p": (lambda m, x: m.np.log1p(x), [pos]),
    "tanh": (lambda m, x: m.np.tanh(x), [any_]),
    "logistic": (lambda m, x: m.nn.sigmoid(x), [any_]),
    "sin": (lambda m, x: m.np.sin(x), [any_]),
    "cos": (lambda m, x: m.np.cos(x), [any_]),
    "tan": (lambda m, x: m.np.tan(x), [unit]),
    "sqrt": (lambda m, x: m.np.sqrt(x), [pos]),
    "rsqrt": (lambda m, x: m.lax.rsqrt(x), [pos]),
    "asin": (lambda m, x: m.np.arcsin(x), [unit]),
    "acos": (lambda m, x: m.np.arccos(x), [unit]),
    "atan": (lambda m, x: m.np.arctan(x), [any_]),
    "sinh": (lambda m, x: m.np.sinh(x), [any_]),
    "cosh": (lambda m, x: m.np.cosh(x), [any_]),
    "asinh": (lambda m, x: m.np.arcsinh(x), [any_]),
    "acosh": (lambda m, x: m.np.arccosh(x), [big]),
    "atanh": (lambda m, x: m.np.arctanh(x), [unit]),
    "erf": (lambda m, x: m.lax.erf(x), [any_]),
    "square_reciprocal": (lambda m, x: m.np.square(x) + m.np.reciprocal(x), [pos]),
    "add_sub": (lambda m, x, y: x + y - 2 * y, [any_, any_]),
    "mul_div": (lambda m, x, y: x * y / (y * y + 1), [any_, any_]),
    "pow": (lambda m, x, y: m.np.power(x, y), [pos, any_]),
    "max_min": (lambda m, x, y: m.np.maximum(x, y) + 2 * m.np.minimum(x, y), [any_, any_]),
    "atan2": (lambda m, x, y: m.np.arctan2(x, y), [any_, pos]),
    "rem": (lambda m, x, y: m.np.fmod(x, y), [(0.1, 0.9), (1.5, 2.0)]),
    "where_select": (lambda m, x, y: m.np.where(x > 0, x * y, y), [any_, any_]),
    "clip": (lambda m, x: m.np.clip(x, -1.0, 1.0), [any_]),
    "complex_parts": (lambda m, x, y: m.np.abs(m.lax.complex(x, y) * (x + 1j)) + m.np.real(m.lax.complex(x, y) ** 2)
                      + m.np.imag(m.np.exp(m.lax.complex(x, y))), [pos, any_]),
    "astype": (lambda m, x: x.astype(m.np.float32).astype(m.np.float64) * x, [any_]),
    "broadcast_reshape": (lambda m, x: (x[:, None, :] * x[None, :, :]).reshape(-1, 3) + x.sum(0), [any_]),
    "transpose": (lambda m, x, y: m.np.transpose(x) @ y, [any_, any_]),
    "slice_rev": (lambda m, x: x[:, ::-2] * x[:, 1:2] + x[::-1, :1], [any_]),
    "concat_pad": (lambda m, x, y: m.np.pad(m.np.concatenate([x, y * y], 1), ((1, 0), (2, 1))), [any_, any_]),
    "lax_pad_interior": (lambda m, x, y: m.lax.pad(x, y[0, 0], ((1, -1, 1), (0, 2, 2))), [any_, any_]),
    "dynamic_slice": (lambda m, x: m.lax.dynamic_slice(x, (1, 1), (1, 2)) * 3, [any_]),
    "dynamic_update_slice": (lambda m, x, y: m.lax.dynamic_update_slice(x, y[:1, :2] ** 2, (1, 0)), [any_, any_]),
    "gather": (lambda m, x: x[m.np.array([1, 0, 1]), m.np.array([2, 2, 0])] * x[1], [any_]),
    "take_along_axis": (lambda m, x: m.np.take_along_axis(x, m.np.argsort(x, axis=1), axis=1) ** 2, [any_]),
    "scatter_add_set": (lambda m, x, y: x.at[0, m.np.array([1, 1])].add(y[0, :2]).at[1, 0].set(y[1, 1] ** 2),
                        [any_, any_]),
    "scatter_mul": (lambda m, x, y: x.at[0].multiply(m.np.array([2.0, -1.0, 3.0])) * y, [any_, any_]),
    "sum_mean": (lambda m, x: m.np.sum(x, axis=0) * m.np.mean(x), [any_]),
    "prod": (lambda m, x: m.np.prod(x, axis=1), [any_]),
    "max_reduce": (lambda m, x: m.np.max(x, axis=1) + m.np.min(x), [any_]),
    "cumsum_cumprod": (lambda m, x: m.np.cumsum(x, axis=1) + m.np.cumprod(x, axis=1), [any_]),
    "cummax_cummin": (lambda m, x: m.lax.cummax(x, axis=1) + m.lax.cummin(x, axis=0, reverse=True), [any_]),
    "sort": (lambda m, x: m.np.sort(x, axis=1) * m.np.arange(3.0), [any_]),
    "matmul": (lambda m, x, y: x @ y.T, [any_, any_]),
    "einsum_batch": (lambda m, x, y: m.np.einsum("ij,ik->ijk", x, y), [any_, any_]),
    "softmax_logsumexp": (lambda m, x: m.nn.softmax(x) + m.nn.logsumexp(x, axis=0), [any_]),
    "gelu_relu": (lambda m, x: m.nn.gelu(x) + m.nn.relu(x) * x, [any_]),
    "norm": (lambda m, x: m.np.sqrt(m.np.sum(x * x, axis=1)), [pos]),
    "cond": (lambda m, x, y: m.lax.cond(x.sum() > 0, lambda a, b: m.np.sin(a) * b, lambda a, b: a - b, x, y),
             [any_, any_]),
    "switch": (lambda m, x: m.lax.switch(1, [m.np.exp, lambda a: a * a, m.np.cos], x), [any_]),
    # loops: the body closes over y (a constant of the loop), the carry and the xs are differentiated too
    "scan": (lambda m, x, y: (lambda c_ys: c_ys[0] + c_ys[1].sum(0))(m.lax.scan(
        lambda c, r: (m.np.sin(c) * r + y[0] * c, c * r), y[1], x)), [any_, any_]),
    "scan_reverse_pytree": (lambda m, x, y: m.lax.scan(
        lambda c, r: ((c[0] * r["a"], c[1] + m.np.tanh(r["b"] * c[0])), c[0] - r["b"]), (y[0], y[1]),
        {"a": x, "b": y}, reverse=True)[1] * 2, [any_, any_]),
    "fori_loop": (lambda m, x, y: m.lax.fori_loop(0, 3, lambda i, v: m.np.sin(v) * x + i * y, y), [any_, any_]),
    "map": (lambda m, x: m.lax.map(lambda r: m.np.exp(r) * r.sum(), x), [any_]),
}


FD_LOOSE = {"astype": 1e-3}  # through float32: a wider step and tolerance


def _draw_inputs(data, domains, rng):
    """Values in each domain's interior, jittered so that no two are equal and none sits on a kink."""
    out = []
    for lo, hi in domains:
        u = np.array(data.draw(st.lists(st.floats(0, 1), min_size=6, max_size=6)), np.float64).reshape(SHAPE)
        out.append(lo + (hi - lo) * (0.05 + 0.9 * u) + 0.02 * (hi - lo) * rng.uniform(-1, 1, SHAPE))
    return out


_combined: dict = {}


def _run(g, xs, ts, u, eps):
    """f at x +- eps*v, jvp and vjp of `g` at xs."""
    plus = g(*[x + eps * t for x, t in zip(xs, ts)])
    minus = g(*[x - eps * t for x, t in zip(xs, ts)])
    y, ty = jvp(g, tuple(xs), tuple(ts))
    _, pb = vjp(g, *xs)
    return plus, minus, y, ty, pb(u)


def _case_fn(name):
    return lambda *xs: CASES[name][0](SC, *xs)


# Cases jitted together, 8 a module (in their sorted order): 61 modules of one case each were 37 CPU-s (each module's
# fixed cost), one of all 49 (IREE's time grows faster than a module's size), eight of 8 25.
GROUP = 8


def _combined_fn(name, xs):
    """`run(xs, ts, u, eps)` of a case (f at x +- eps*v, jvp and vjp) and the shape of f's result (traced, not
    compiled). The case's group is one jitted module (compiled once, shared by its cases and their examples): a call
    takes the case's own arguments and, for the group's other cases, stand-ins (inputs in their domains, zero
    tangents) whose results are left unread."""
    names = sorted(CASES)
    group = tuple(names[names.index(name) // GROUP * GROUP:][:GROUP])
    if group not in _combined:
        rng = np.random.default_rng(0)
        shapes, stand = {}, {}
        for n in group:
            x0 = [lo + (hi - lo) * rng.uniform(0.3, 0.7, SHAPE) for lo, hi in CASES[n][1]]
            shapes[n] = jit(_case_fn(n)).lower(*x0).graph.out_avals[0].shape
            stand[n] = (x0, [np.zeros(SHAPE) for _ in x0], np.zeros(shapes[n]), FD_LOOSE.get(n, 1e-6))
        every = jit(lambda args: {n: _run(_case_fn(n), *a) for n, a in args.items()})
        _combined[group] = every, shapes, stand

    every, shapes, stand = _combined[group]

    def run(xs, ts, u, eps):
        return every({**stand, name: (xs, ts, u, eps)})[name]
    return run, shapes[name]


_jax_combined: dict = {}


def _jax_fn(name):
    """JAX's jvp and vjp of a case, jitted once (op-by-op JAX would dispatch every operation of every example)."""
    if name not in _jax_combined:
        jg = lambda *a: CASES[name][0](JAX, *a)

        def run(xs, ts, u):
            return jax.jvp(jg, tuple(xs), tuple(ts))[1], jax.vjp(jg, *xs)[1](u)
        _jax_combined[name] = jax.jit(run)
    return _jax_combined[name]


@pytest.mark.parametrize("name", sorted(CASES))
@SETTINGS
@given(data=st.data())
def test_jvp_vjp_against_finite_differences(x64, name, data):
    domains = CASES[name][1]
    rng = np.random.default_rng(len(name))
    xs = _draw_inputs(data, domains, rng)
    ts = [rng.standard_normal(SHAPE) for _ in xs]
    combined, out_shape = _combined_fn(name, xs)
    u = rng.standard_normal(out_shape)
    eps = FD_LOOSE.get(name, 1e-6)
    plus, minus, y, ty, cts = combined(xs, ts, u, eps)
    fd = (np.asarray(plus) - np.asarray(minus)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(ty), fd, rtol=1e-5 if eps < 1e-4 else 1e-2, atol=1e-5,
                               err_msg=f"jvp of {name}")
    lhs = float(np.sum(u * np.asarray(ty)))
    rhs = sum(float(np.sum(np.asarray(c) * t)) for c, t in zip(cts, ts))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-8 if eps < 1e-4 else 1e-5, atol=1e-8, err_msg=f"vjp of {name} is not jvp's transpose")
    if JAX is not None:
        old = jax.config.jax_enable_x64
        jax.config.update("jax_enable_x64", True)  # the oracle in float64 too, for this test only
        try:
            jty, jcts = _jax_fn(name)(xs, ts, u)
            np.testing.assert_allclose(np.asarray(ty), np.asarray(jty), rtol=1e-7, atol=1e-9,
                                       err_msg=f"{name} vs JAX")
            for c, jc in zip(cts, jcts):
                np.testing.assert_allclose(np.asarray(c), np.asarray(jc), rtol=1e-7, atol=1e-9)
        finally:
            jax.config.update("jax_enable_x64", old)


def test_cbrt_float32():  # IREE compiles no float64 cbrt, so it is not in the float64 table
    assert abs(float(grad(lax.cbrt)(8.0)) - 1 / 12) < 1e-6


def test_every_float_primitive_has_a_jvp_rule():
    from stagec.primitives import all_primitives
    no_derivative = {"not", "is_finite", "and", "or", "xor", "shift_left", "shift_right_arithmetic",
                     "shift_right_logical", "eq", "ne", "lt", "le", "gt", "ge", "iota", "argminmax", "reduce_and",
                     "reduce_or", "reduce_xor", "callback", "population_count", "clz"}
    missing = [p.name for p in all_primitives() if p.jvp is None and p.name not in no_derivative]
    assert missing == []


# ---------------------------------------------------------------- the FAQ


def test_faq_where_nan_gradient_and_safe_version():
    def my_log(x):
        return snp.where(x > 0., snp.log(x), 0.)

    def safe_for_grad_log(x):
        return snp.log(snp.where(x > 0., x, 1.))

    assert np.isnan(float(grad(my_log)(0.)))
    assert float(grad(safe_for_grad_log)(0.)) == 0.0
    safe, nan = jit(lambda x: (grad(safe_for_grad_log)(x), grad(my_log)(x)))(0.)  # (one module)
    assert float(safe) == 0.0
    assert np.isnan(float(nan))


def test_faq_step_and_sort_order_functions_have_zero_gradient():
    step = lambda x: snp.where(x < 0.5, 0., 1.)
    rank = lambda x: snp.argsort(x).astype(snp.float32) @ x
    g_step, g_order, g_rank, sig = jit(lambda a, x, b: (  # one module
        grad(step)(a), grad(lambda x: snp.argsort(x).astype(snp.float32).sum())(x), grad(rank)(x),
        grad(stagec.nn.sigmoid)(b)))(1.0, snp.array([3., 1., 2.]), 0.5)
    assert float(g_step) == 0.0
    np.testing.assert_array_equal(np.asarray(g_order), [0, 0, 0])
    np.testing.assert_allclose(np.asarray(g_rank), [1, 2, 0])
    s = 1 / (1 + np.exp(-0.5))
    np.testing.assert_allclose(float(sig), s * (1 - s), rtol=1e-6)


def test_faq_grad_branches_on_concrete_values_eagerly_and_fails_under_jit():
    def divide(x, y):
        return x / y if y >= 1. else 0.

    assert float(grad(divide)(3., 2.)) == 0.5
    assert float(grad(divide, argnums=1)(3., 2.)) == -0.75
    with pytest.raises(stagec.errors.ConcretizationTypeError, match="argument 'y'"):
        jit(grad(divide))(3., 2.)


# ---------------------------------------------------------------- composition


def test_jit_of_grad_is_one_module_and_matches_eager():
    f = lambda w, x: snp.tanh(x @ w).sum()
    w, x = snp.ones((3, 2)) * 0.1, snp.arange(6.0).reshape(2, 3)
    text = stagec.make_mlir(grad(f))(w, x)
    assert text.count("func.func") == 1 and "dot_general" in text and "tanh" in text
    np.testing.assert_allclose(np.asarray(jit(grad(f))(w, x)), np.asarray(grad(f)(w, x)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(grad(jit(f))(w, x)), np.asarray(grad(f)(w, x)), rtol=1e-6)


def test_higher_order():
    f = lambda x: snp.sin(x) * x[0]
    d2sin, d3, d2tanh, h, jf, jr = jit(lambda a, b, c, x: (  # one module
        grad(grad(snp.sin))(a), grad(grad(grad(lambda x: x ** 4)))(b), grad(grad(snp.tanh))(c),
        stagec.hessian(lambda x: (x ** 3).sum() + x[0] * x[1])(x), stagec.jacfwd(f)(x), stagec.jacrev(f)(x)))(
        1.0, 2.0, 0.3, snp.array([1., 2.]))
    assert abs(float(d2sin) + np.sin(1.0)) < 1e-6
    assert abs(float(d3) - 48.0) < 1e-4
    assert abs(float(d2tanh) - (-2 * np.tanh(.3) * (1 - np.tanh(.3) ** 2))) < 1e-5
    np.testing.assert_allclose(np.asarray(h), [[6, 1], [1, 12]])
    x = np.array([1., 2.])
    np.testing.assert_allclose(np.asarray(jf), np.diag(np.cos(x) * x[0]) + np.outer(np.sin(x), [1, 0]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jf), np.asarray(jr), rtol=1e-6)


def test_jacobian_of_identity_is_an_array():
    """jacrev of a function that returns its argument: the identity basis, as an Array (it was an internal Const)."""
    x = snp.arange(3.0)
    for jac in (stagec.jacrev(lambda x: x)(x), stagec.jacrev(lambda d: d)({"k": x})["k"]["k"],
                stagec.jacfwd(lambda x: x)(x)):
        assert isinstance(jac, stagec.Array)
        np.testing.assert_array_equal(np.asarray(jac), np.eye(3))


def test_argnums_has_aux_value_and_grad_linearize():
    f = lambda x, y: ((x * y).sum(), {"aux": x + 1})
    (v, aux), (gx, gy) = value_and_grad(f, argnums=(0, 1), has_aux=True)(snp.ones(2), snp.array([2., 3.]))
    assert float(v) == 5.0
    np.testing.assert_array_equal(np.asarray(aux["aux"]), [2, 2])
    np.testing.assert_array_equal(np.asarray(gx), [2, 3])
    np.testing.assert_array_equal(np.asarray(gy), [1, 1])
    y, f_jvp = stagec.linearize(snp.sin, 1.0)
    assert abs(float(f_jvp(2.0)) - 2 * np.cos(1.0)) < 1e-6


def test_while_loop_forward_mode_and_reverse_error():
    def f(x):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * c[1]), (0, x))[1]

    y, t = jvp(f, (2.0,), (1.0,))
    assert float(y) == 256.0 and float(t) == 1024.0
    y, t = jit(lambda x: jvp(f, (x,), (1.0,)))(2.0)
    assert float(t) == 1024.0
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        grad(f)(2.0)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        jit(grad(lambda x, n: lax.fori_loop(0, n, lambda i, v: v * x, x)))(2.0, 3)  # traced bounds: a while


def _loop_loss(n):
    def f(w, xs):
        c, ys = lax.scan(lambda c, x: (snp.tanh(c * w + x), c * x), snp.ones(3), xs)
        return (c * c).sum() + ys.sum() + lax.fori_loop(0, n, lambda i, v: v * w + 1.0, 0.5).sum()
    return f


def test_loops_stay_loops_when_differentiated():
    """grad of scan and fori_loop (static bounds) is one module with one loop forward and one backward, whatever
    the trip count: no unrolled copies of the body."""
    w, xs = np.float32(0.7), np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    short = stagec.make_mlir(grad(_loop_loss(3)))(w, xs)
    long_xs = np.linspace(-1, 1, 3000, dtype=np.float32).reshape(1000, 3)
    long = stagec.make_mlir(grad(_loop_loss(500)))(w, long_xs)
    assert short.count("stablehlo.while") == 4 and long.count("stablehlo.while") == 4  # 2 loops, 2 ways
    assert abs(short.count("\n") - long.count("\n")) <= 2 and "tanh" in long
    fwd = stagec.make_mlir(lambda w: jvp(lambda v: _loop_loss(3)(v, xs), (w,), (np.float32(1),)))(w)
    assert fwd.count("stablehlo.while") == 2  # forward mode: one loop carrying primal and tangent
    g = jit(grad(_loop_loss(3), argnums=(0, 1)))(w, xs)
    def loss64(w, n=3):  # _loop_loss in float64 NumPy (stagec's eager loops compiled 6 modules here)
        c, ys, v = np.ones(3), 0.0, 0.5
        for x in xs.astype(np.float64):
            c, ys = np.tanh(c * w + x), ys + (c * x).sum()
        for _ in range(n):
            v = v * w + 1.0
        return (c * c).sum() + ys + v
    eps = 1e-6
    np.testing.assert_allclose(float(g[0]), (loss64(0.7 + eps) - loss64(0.7 - eps)) / (2 * eps), rtol=1e-5)
    if JAX is not None:
        def jf(w, xs):
            c, ys = jax.lax.scan(lambda c, x: (jnp.tanh(c * w + x), c * x), jnp.ones(3), xs)
            return (c * c).sum() + ys.sum() + jax.lax.fori_loop(0, 3, lambda i, v: v * w + 1.0, 0.5).sum()
        for a, b in zip(g, jax.grad(jf, argnums=(0, 1))(w, xs)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_scan_residuals_are_stacked_only_when_they_vary():
    """A residual the body only reads from its constants (w's transpose here) is computed once outside the
    loop; the per-iteration ones are stacked by the forward loop and read by the backward one."""
    f = lambda w, xs: lax.scan(lambda c, x: (snp.tanh(c @ w + x), ()), snp.ones(3), xs)[0].sum()
    w, xs = np.eye(3, dtype=np.float32) * 0.5, np.ones((5, 3), np.float32)
    text = stagec.make_mlir(grad(f, argnums=(0, 1)))(w, xs)
    assert "tensor<5x3x3xf32>" not in text  # w is never stacked
    g = grad(f, argnums=(0, 1))(w, xs)
    eps = 1e-3
    d = np.zeros_like(w); d[0, 1] = eps
    np.testing.assert_allclose(float(g[0][0, 1]), float((f(w + d, xs) - f(w - d, xs)) / (2 * eps)), rtol=2e-2)


def test_scan_vmap_of_grad_and_grad_of_vmap():
    loss = lambda w, xs: lax.scan(lambda c, x: (snp.sin(c * w + x), c), 0.5, xs)[0]
    w, xs = np.float32(0.9), np.linspace(0, 1, 20, dtype=np.float32).reshape(5, 4)
    per = jit(stagec.vmap(grad(loss), (None, 1)))(w, xs)
    want = [float(grad(loss)(w, xs[:, i])) for i in range(4)]
    np.testing.assert_allclose(np.asarray(per), want, rtol=1e-5)
    gv = grad(lambda w: stagec.vmap(loss, (None, 1))(w, xs).sum())(w)
    np.testing.assert_allclose(float(gv), sum(want), rtol=1e-5)


_LOW = (snp.float16, snp.bfloat16)


def _low_args(dtype):
    """(w, x, s, ones) of test_low_precision_gradients_as_jax in `dtype`."""
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 1.5, (16, 9)).astype(dtype)
    w = rng.uniform(-1, 1, (9, 5)).astype(dtype)
    return w, x, np.dtype(dtype).type(0.5), np.ones(4096, dtype)  # (a NumPy scalar: `dtype(0.5)` is a stagec Array)


def _low_loss(m):
    return lambda w, x: m.np.mean(m.np.tanh(x @ w) ** 2) + m.np.sum(m.np.sin(w) * w) * 0.01


@functools.cache
def _low_precision_grads():
    """{dtype name: (value_and_grad of the loss, grad of the sum, float32's grad of the loss at the same values)},
    both dtypes' in one module."""
    def one(w, x, s, ones):
        return (value_and_grad(_low_loss(SC))(w, x), grad(lambda s, x: (x * s).sum(), argnums=(0, 1))(s, ones),
                grad(_low_loss(SC))(w.astype(np.float32), x.astype(np.float32)))
    got = jit(lambda args: [one(*a) for a in args])([_low_args(dt) for dt in _LOW])
    return dict(zip([np.dtype(dt).name for dt in _LOW], got))


@pytest.mark.parametrize("dtype", _LOW)
def test_low_precision_gradients_as_jax(dtype):
    """float16/bfloat16: gradients in the input's dtype, close to float32's; sums (the transposes of broadcasts
    among them) accumulate in float32, so 4096 ones sum to 4096 (float16 alone stops at 2048)."""
    w, x, s, ones = _low_args(dtype)
    loss = _low_loss
    (v, g), gs, ref = _low_precision_grads()[np.dtype(dtype).name]
    assert v.dtype == dtype and g.dtype == dtype
    tol = 2e-3 if dtype == snp.float16 else 2e-2
    np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(ref), atol=tol, rtol=tol)
    assert gs[0].dtype == dtype and float(gs[0]) == 4096.0 and float(np.asarray(gs[1], np.float32)[0]) == 0.5
    if JAX is not None:
        jv, jg = jax.value_and_grad(loss(JAX))(w, x)
        assert jg.dtype == g.dtype and jv.dtype == v.dtype
        np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(jg, np.float32), atol=tol, rtol=tol)
        assert float(jax.grad(lambda s, x: (x * s).sum())(s, ones)) == float(gs[0])


def test_grad_where_a_reduced_value_is_reused_compiles():
    """exp(w) feeds a full sum (the value) and the backward pass (its derivative). IREE 3.13 at
    `--iree-opt-level=O3` failed to compile this module on an AMD EPYC host ("'func.func' op failed on
    workgroup distribution verification") when fusing multi-use producers with data tiling; the backend
    compiles such a module again without that fusion."""
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 1.5, (16, 9)).astype(np.float32)
    w = rng.uniform(-1, 1, (9, 5)).astype(np.float32)
    loss = lambda m: lambda w, x: m.np.mean(m.np.tanh(x @ w) ** 2) + m.np.sum(m.np.exp(w)) * 0.01
    v, g = jit(value_and_grad(loss(SC)))(w, x)
    t = np.tanh(x @ w)
    want = 2 * x.T @ (t * (1 - t * t)) / t.size + 0.01 * np.exp(w)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-4, atol=1e-6)


def test_float64_gradients_under_x64(x64):
    x = np.linspace(0.1, 1.0, 7)
    f = lambda x: snp.sum(snp.sin(x) ** 2 * snp.exp(x))
    g = jit(grad(f))(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(np.asarray(g), (2 * np.sin(x) * np.cos(x) + np.sin(x) ** 2) * np.exp(x), rtol=1e-13)
    gs = grad(lambda w, xs: lax.scan(lambda c, r: (c * w + r, ()), 0.0, xs)[0])(1.0 + 1e-9, x)
    assert gs.dtype == np.float64
    np.testing.assert_allclose(float(gs), sum(k * x[-1 - k] for k in range(1, 7)), rtol=1e-7)


def test_expm1_derivative_where_its_value_cancels(x64):
    """expm1' is exp(x) itself: JAX's ans + 1 cancels below 0 (float64 elu'(-30) was 1.7e-4 relative off, float32
    expm1'(-20) 0). Against NumPy's exp, eager and jitted, float32 and float64."""
    x = np.array([-30.0, -20.0, -5.0, -0.5, 0.0, 3.0])
    d = lambda x: (stagec.vmap(grad(snp.expm1))(x), stagec.vmap(grad(stagec.nn.elu))(x))  # noqa: E731
    want = (np.exp(x), np.where(x > 0, 1.0, np.exp(x)))
    jitted = jit(lambda x32, x64: (d(x32), d(x64)))(x.astype(np.float32), x)  # (one module for both dtypes)
    for (dt, rtol), j in zip(((np.float32, 4e-7), (np.float64, 1e-14)), jitted):
        for got in (d(x.astype(dt)), j):
            for g, w in zip(got, want):
                np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=rtol, err_msg=np.dtype(dt).name)


def test_cond_both_modes_and_grad_of_grad():
    f = lambda x: lax.cond(x > 0, lambda a: a ** 3, lambda a: -a, x)
    assert float(grad(f)(2.0)) == 12.0 and float(grad(f)(-2.0)) == -1.0  # eagerly
    got = jit(lambda a, b: (grad(f)(a), grad(f)(b), grad(grad(f))(a), jvp(f, (a,), (1.0,))[1]))(2.0, -2.0)
    assert [float(v) for v in got] == [12.0, -1.0, 12.0, 12.0]


def test_custom_jvp_and_custom_vjp():
    @stagec.custom_jvp
    def log1pexp(x):
        return snp.log1p(snp.exp(x))

    @log1pexp.defjvp
    def _(primals, tangents):
        (x,), (g,) = primals, tangents
        return log1pexp(x), g * (1 - 1 / (1 + snp.exp(x)))

    assert float(grad(log1pexp)(100.)) == 1.0  # the plain rule gives NaN here
    assert abs(float(jit(grad(log1pexp))(3.)) - 1 / (1 + np.exp(-3.))) < 1e-6

    @stagec.custom_vjp
    def clip_gradient(x):
        return x

    clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (snp.clip(g, -1, 1),))
    assert float(grad(lambda x: 5 * clip_gradient(x))(2.)) == 1.0
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        jvp(clip_gradient, (1.,), (1.,))


def test_stop_gradient():
    assert float(grad(lambda x: lax.stop_gradient(x) * x)(3.)) == 3.0
    assert float(jit(grad(lambda x: lax.stop_gradient(x * x) + x))(3.)) == 1.0


def test_logsumexp_gradient_is_the_softmax_alone():
    # As JAX's: the shift by the max is held constant (its derivatives cancel), so the gradient is exp(x - lse), with
    # no tie count of the max (a compare and two more reductions in every log-softmax model's step)
    x = np.array([[0.5, 3.0, 3.0, -1.0], [2.0, -np.inf, 0.0, 1.0]], np.float32)
    f = lambda v: stagec.nn.logsumexp(v, axis=1).sum()
    assert "compare" not in stagec.make_mlir(grad(f))(x)
    x64 = x.astype(np.float64)
    want = np.exp(x64 - np.log(np.exp(x64).sum(1, keepdims=True)))
    # (and 1e5 values, the max twice, below: both jitted gradients in one module)
    big = np.random.default_rng(0).standard_normal(100000).astype(np.float32) * 3
    big[5] = big[7] = big.max() + 2
    jitted, jitted_big = jit(lambda x, b: (grad(f)(x), grad(lambda v: stagec.nn.logsumexp(v))(b)))(x, big)
    for g in (jitted, grad(f)(x)):
        np.testing.assert_allclose(np.asarray(g), want, rtol=3e-7, atol=0)
    # 1e5 values, the max twice: through the max, its elements took the float32 sum's rounding too (182 ulps; 29 now)
    e = np.exp(big.astype(np.float64) - big.max())
    got = np.asarray(jitted_big)
    assert (np.abs(got - e / e.sum()) / np.spacing(np.float32(e / e.sum()))).max() <= 64


def test_errors():
    with pytest.raises(TypeError, match="Gradient only defined for scalar-output functions"):
        grad(lambda x: x * 2)(snp.ones(3))
    with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs"):
        grad(lambda x: x * 2.)(1)
    with pytest.raises(TypeError, match="grad requires real-valued outputs"):
        grad(lambda x: x * 1j)(1.)
    from stagec.debug import pure_callback
    with pytest.raises(NotImplementedError, match="'callback'"):
        grad(lambda x: pure_callback(np.sin, stagec.ShapeDtypeStruct((), np.float32), x))(1.)
