"""Transformations nested in each order (issue 35): each case against the answer JAX 0.10.2 gives (written out, so
the tests run without JAX) or a float64 derivative worked by hand."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import grad, jit, lax, value_and_grad


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# ---------------------------------------------------------------- jit around a wrapper of a jitted function


def test_jit_of_grad_of_jit():
    f = jit(lambda x: x * x)
    close(jit(grad(f))(3.0), 6.0)


def test_jit_of_value_and_grad_of_jit():
    f = jit(lambda x: x * x)
    v, g = jit(value_and_grad(f))(3.0)
    close(v, 9.0)
    close(g, 6.0)


def test_grad_jit_grad_jit_grad():
    f = lambda x: snp.sum(1 / (1 + snp.exp(-x)))
    s = 1 / (1 + np.exp(-1.0))
    close(grad(jit(grad(jit(grad(f)))))(1.0), s * (1 - s) * (1 - 6 * s + 6 * s * s), 1e-4)  # sigmoid'''


def test_jit_of_jit_keeps_its_own_function():
    """A Jitted copies the attributes of what it wraps, never the state of an inner Jitted."""
    inner = jit(lambda x: x + 1.0)
    wrapper = stagec.grad(inner)
    outer = jit(wrapper)
    assert outer.fun is wrapper and outer.__wrapped__ is wrapper
    close(outer(2.0), 1.0)


# ---------------------------------------------------------------- JAX's conventions at ties


def test_softplus_and_logaddexp_ties():
    close(grad(stagec.nn.softplus)(0.0), 0.5)
    close(grad(lambda a: snp.logaddexp(a, 0.0))(0.0), 0.5)
    close(grad(lambda a: snp.logaddexp(0.0, a))(0.0), 0.5)
    close(grad(lambda a: snp.logaddexp(a, a))(1.0), 1.0)


def test_logaddexp_derivative_broadcast_and_inf():
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    g = stagec.jacfwd(lambda a, b: snp.logaddexp(a, b), argnums=(0, 1))(x, np.float32(0.5))
    e1, e2 = np.exp(x), np.exp(0.5)
    close(g[0], np.diag(e1 / (e1 + e2)))
    close(g[1], e2 / (e1 + e2))
    close(grad(lambda a: snp.logaddexp(a, np.inf))(1.0), np.e)  # JAX reads the +inf output as 0: exp(1 - 0), not nan
    close(jit(stagec.vmap(grad(stagec.nn.softplus)))(x), 1 / (1 + np.exp(-x)))


# ---------------------------------------------------------------- control flow: carries that swap, forward, stay


def _swap(c):
    return c[1], c[1] * 0.5


@pytest.mark.parametrize("wrap", [lambda f: f, jit], ids=["eager", "jit"])
def test_while_carries_swap_and_forward(wrap):
    close(wrap(lambda: lax.while_loop(lambda c: c[0] > 1.0, _swap, (4.0, 2.0)))(), (1.0, 0.5))  # JAX: (1.0, 0.5)
    close(wrap(lambda: lax.while_loop(lambda c: c[0] > 9.0, _swap, (4.0, 2.0)))(), (4.0, 2.0))  # no iteration
    # a carry the body never reads, beside one it only forwards
    out = wrap(lambda: lax.while_loop(lambda c: c[2] < 3, lambda c: (c[1] + 1.0, c[1], c[2] + 1), (7.0, 1.0, 0)))()
    close(out[:2], (2.0, 1.0))
    assert int(out[2]) == 3


def test_while_unread_carry_under_transformations():
    f = lambda a: lax.while_loop(lambda c: c[0] > 1.0, lambda c: (c[1], c[1] * a), (4.0, 2.0))[0]
    close(stagec.jvp(f, (0.5,), (1.0,)), (1.0, 2.0))  # (a, 2a) -> (2a, 2a^2) stops: out 2a, d/da = 2
    close(jit(stagec.vmap(f))(np.array([0.5, 0.25], np.float32)), [1.0, 0.5])
