"""Linear regression two ways, gradient descent under jit and the normal equations with jnp.linalg, then the fit's
R^2 and a few jnp statistics."""
import numpy as np

import jax
import jax.numpy as jnp


def mse(theta, X, y):
    return jnp.mean((X @ theta - y) ** 2)


@jax.jit
def gd(theta, X, y):
    def body(_, t):
        return t - 0.1 * jax.grad(mse)(t, X, y)
    return jax.lax.fori_loop(0, 100, body, theta)


def main():
    rng = np.random.default_rng(7)
    X = np.c_[np.ones(40), rng.standard_normal((40, 2))].astype(np.float32)
    y = (X @ np.array([1.0, 2.0, -3.0]) + 0.1 * rng.standard_normal(40)).astype(np.float32)
    theta_gd = gd(jnp.zeros(3), X, y)
    theta_ne = jnp.linalg.solve(X.T @ X, X.T @ y)
    pred = X @ theta_ne
    r2 = 1 - jnp.sum((y - pred) ** 2) / jnp.sum((y - jnp.mean(y)) ** 2)
    assert jnp.allclose(theta_ne, theta_gd, atol=1e-2)
    return {"gd": theta_gd, "ne": theta_ne, "r2": r2, "median": jnp.median(y), "cov": jnp.cov(X[:, 1:].T)}
