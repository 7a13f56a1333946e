"""Gaussian-process regression: an RBF kernel, Cholesky solves with jax.scipy.linalg, the marginal likelihood
and its gradient with respect to the kernel's hyperparameters."""
import numpy as np

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_factor, cho_solve, solve_triangular


def kernel(x1, x2, log_ls, log_amp):
    d = (x1[:, None] - x2[None, :]) / jnp.exp(log_ls)
    return jnp.exp(2 * log_amp) * jnp.exp(-0.5 * d ** 2)


def neg_log_marginal(theta, x, y):
    log_ls, log_amp, log_noise = theta
    K = kernel(x, x, log_ls, log_amp) + (jnp.exp(2 * log_noise) + 1e-6) * jnp.eye(x.shape[0])
    c, lower = cho_factor(K, lower=True)
    alpha = cho_solve((c, lower), y)
    return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(c))) + 0.5 * x.shape[0] * jnp.log(2 * jnp.pi)


def posterior_mean(theta, x, y, xs):
    log_ls, log_amp, log_noise = theta
    K = kernel(x, x, log_ls, log_amp) + (jnp.exp(2 * log_noise) + 1e-6) * jnp.eye(x.shape[0])
    L = jnp.linalg.cholesky(K)
    v = solve_triangular(L, y, lower=True)
    w = solve_triangular(L, v, lower=True, trans="T")
    return kernel(xs, x, log_ls, log_amp) @ w


def main():
    rng = np.random.default_rng(2)
    x = np.sort(rng.uniform(-3, 3, 12)).astype(np.float32)
    y = (np.sin(x) + 0.1 * rng.standard_normal(12)).astype(np.float32)
    theta = jnp.array([0.0, 0.0, -1.0])
    nll, g = jax.jit(jax.value_and_grad(neg_log_marginal))(theta, x, y)
    xs = np.linspace(-3, 3, 5).astype(np.float32)
    return {"nll": nll, "grad": g, "mean": jax.jit(posterior_mean)(theta, x, y, xs)}
