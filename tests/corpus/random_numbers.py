"""Pseudo-random numbers as JAX draws them: keys, split and fold_in, and the common distributions (the same
numbers as JAX for the same key)."""
import jax
import jax.numpy as jnp


def main():
    key = jax.random.PRNGKey(1701)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    folded = jax.random.fold_in(key, 7)
    return {"uniform": jax.random.uniform(k1, (5,)), "normal": jax.random.normal(k2, (2, 3)),
            "randint": jax.random.randint(k3, (6,), 0, 10), "perm": jax.random.permutation(k4, 8),
            "bern": jax.random.bernoulli(folded, 0.3, (8,)),
            "trunc": jax.random.truncated_normal(k1, -1.0, 1.0, (4,)),
            "choice": jax.random.choice(k2, jnp.arange(10.0), (3,), replace=False),
            "cat": jax.random.categorical(k3, jnp.log(jnp.array([0.2, 0.5, 0.3])), shape=(6,)),
            "gumbel": jax.random.gumbel(k4, (3,)), "mvn": jax.random.multivariate_normal(
                folded, jnp.zeros(2), jnp.array([[1.0, 0.5], [0.5, 2.0]]), (3,))}
