"""Pseudo-random numbers as JAX draws them: keys, split and fold_in, and common distributions (the same numbers
as JAX for the same key; tests/test_random.py covers the others)."""
import jax
import jax.numpy as jnp


def main():
    key = jax.random.PRNGKey(1701)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    folded = jax.random.fold_in(key, 7)
    return {"uniform": jax.random.uniform(k1, (5,)), "normal": jax.random.normal(k2, (2, 3)),
            "randint": jax.random.randint(k3, (6,), 0, 10), "perm": jax.random.permutation(k4, 8),
            "bern": jax.random.bernoulli(folded, 0.3, (8,)),
            "cat": jax.random.categorical(k3, jnp.log(jnp.array([0.2, 0.5, 0.3])), shape=(6,))}
