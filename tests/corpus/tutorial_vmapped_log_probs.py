"""JAX's tutorial "Autobatching for Bayesian inference" (docs/notebooks/vmapped_log_probs.md): its code cells in
order, the plot dropped and SciPy's expit written out (NumPy data generation)."""
import jax

import jax.numpy as jnp
import jax.scipy as jsp
from jax import random

import numpy as np


def main():
    np.random.seed(10009)

    num_features = 10
    num_points = 100

    true_beta = np.random.randn(num_features).astype(jnp.float32)
    all_x = np.random.randn(num_points, num_features).astype(jnp.float32)
    y = (np.random.rand(num_points) < 1 / (1 + np.exp(-all_x.dot(true_beta)))).astype(jnp.int32)

    def log_joint(beta):
        result = 0.
        # Note that no `axis` parameter is provided to `jnp.sum`.
        result = result + jnp.sum(jsp.stats.norm.logpdf(beta, loc=0., scale=1.))
        result = result + jnp.sum(-jnp.log(1 + jnp.exp(-(2*y-1) * jnp.dot(all_x, beta))))
        return result

    single = log_joint(np.random.randn(num_features))

    # This doesn't work, because we didn't write `log_prob()` to handle batching.
    caught = 0
    try:
        batch_size = 10
        batched_test_beta = np.random.randn(batch_size, num_features)

        log_joint(np.random.randn(batch_size, num_features))
    except ValueError:
        caught = 1

    def batched_log_joint(beta):
        result = 0.
        result = result + jnp.sum(jsp.stats.norm.logpdf(beta, loc=0., scale=1.),
                                  axis=-1)
        result = result + jnp.sum(-jnp.log(1 + jnp.exp(-(2*y-1) * jnp.dot(all_x, beta.T).T)),
                                  axis=-1)
        return result

    batch_size = 10
    batched_test_beta = np.random.randn(batch_size, num_features)

    manual = batched_log_joint(batched_test_beta)

    vmap_batched_log_joint = jax.vmap(log_joint)
    vmapped = vmap_batched_log_joint(batched_test_beta)

    @jax.jit
    def log_joint(beta):
        result = 0.
        # Note that no `axis` parameter is provided to `jnp.sum`.
        result = result + jnp.sum(jsp.stats.norm.logpdf(beta, loc=0., scale=10.))
        result = result + jnp.sum(-jnp.log(1 + jnp.exp(-(2*y-1) * jnp.dot(all_x, beta))))
        return result

    batched_log_joint = jax.jit(jax.vmap(log_joint))

    def elbo(beta_loc, beta_log_scale, epsilon):
        beta_sample = beta_loc + jnp.exp(beta_log_scale) * epsilon
        return jnp.mean(batched_log_joint(beta_sample), 0) + jnp.sum(beta_log_scale - 0.5 * np.log(2*np.pi))

    elbo = jax.jit(elbo)
    elbo_val_and_grad = jax.jit(jax.value_and_grad(elbo, argnums=(0, 1)))

    def normal_sample(key, shape):
        """Convenience function for quasi-stateful RNG."""
        new_key, sub_key = random.split(key)
        return new_key, random.normal(sub_key, shape)

    normal_sample = jax.jit(normal_sample, static_argnums=(1,))

    key = random.key(10003)

    beta_loc = jnp.zeros(num_features, jnp.float32)
    beta_log_scale = jnp.zeros(num_features, jnp.float32)

    step_size = 0.01
    batch_size = 128
    epsilon_shape = (batch_size, num_features)
    elbos = []
    for i in range(1000):
        key, epsilon = normal_sample(key, epsilon_shape)
        elbo_val, (beta_loc_grad, beta_log_scale_grad) = elbo_val_and_grad(
            beta_loc, beta_log_scale, epsilon)
        beta_loc += step_size * beta_loc_grad
        beta_log_scale += step_size * beta_log_scale_grad
        if i % 10 == 0:
            elbos.append(elbo_val)

    return {"y": y, "single": single, "caught": np.array(caught), "manual": manual, "vmapped": vmapped,
            "elbos": jnp.stack(elbos), "beta_loc": beta_loc, "beta_log_scale": beta_log_scale}
