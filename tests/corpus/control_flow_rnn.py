"""Structured control flow: an Elman RNN with lax.scan, a fori_loop power iteration, while_loop Newton steps,
cond and switch, and the gradient through the scan."""
import numpy as np

import jax
import jax.numpy as jnp
from jax import lax


def rnn(params, xs):
    Wx, Wh, b = params

    def cell(h, x):
        h = jnp.tanh(x @ Wx + h @ Wh + b)
        return h, h.sum()

    h, ys = lax.scan(cell, jnp.zeros(Wh.shape[0]), xs)
    return h, ys


def power_iteration(A, n):
    def body(i, v):
        w = A @ v
        return w / jnp.linalg.norm(w)
    return lax.fori_loop(0, n, body, jnp.ones(A.shape[0]) / jnp.sqrt(A.shape[0]))


def newton_sqrt(a):
    def cond(state):
        x, i = state
        return (jnp.abs(x * x - a) > 1e-6) & (i < 50)

    def body(state):
        x, i = state
        return 0.5 * (x + a / x), i + 1
    return lax.while_loop(cond, body, (a, 0))


def main():
    rng = np.random.default_rng(6)
    params = tuple(jnp.asarray(rng.standard_normal(s) * 0.4, jnp.float32) for s in [(3, 5), (5, 5), (5,)])
    xs = rng.standard_normal((7, 3)).astype(np.float32)
    h, ys = jax.jit(rnn)(params, xs)
    g = jax.grad(lambda p: jnp.sum(rnn(p, xs)[1] ** 2))(params)
    A = rng.standard_normal((4, 4)).astype(np.float32)
    A = A @ A.T
    root, iters = jax.jit(newton_sqrt)(2.0)
    branch = jax.jit(lambda x, i: lax.switch(i, [jnp.sin, jnp.cos, lambda t: t * 2], x))
    sel = jax.jit(lambda x: lax.cond(x.sum() > 0, lambda t: t - 1, lambda t: t + 1, x))
    return {"h": h, "ys": ys, "g_Wx": g[0], "g_b": g[2], "v": jnp.abs(power_iteration(A, 30)), "root": root,
            "iters": iters, "switch": branch(xs[0], 2), "cond": sel(xs[1]), "cumsum": lax.cumsum(xs, axis=0)}
