"""JAX's tutorial "Pseudorandom numbers" (docs/random-numbers.md): its JAX cells in order (the NumPy-only cells
before them dropped), each printed value returned instead."""
from jax import random
import jax
import numpy as np


def main():
    key = random.key(42)
    n1, n2 = random.normal(key), random.normal(key)

    draws = []
    for i in range(3):
        new_key, subkey = random.split(key)
        del key  # The old key is consumed by split() -- we must never use it again.
        val = random.normal(subkey)
        del subkey  # The subkey is consumed by normal().
        draws.append(val)
        key = new_key  # new_key is safe to use in the next iteration.

    key, subkey = random.split(key)
    key, *forty_two_subkeys = random.split(key, num=43)
    last = random.uniform(forty_two_subkeys[-1])

    key = random.key(42)
    subkeys = random.split(key, 3)
    sequence = np.stack([random.normal(subkey) for subkey in subkeys])
    key = random.key(42)
    at_once = random.normal(key, shape=(3,))
    vectorized = jax.vmap(random.normal)(subkeys)

    return {"n1": n1, "n2": n2, "draws": np.stack(draws), "key_data": random.key_data(key),
            "subkey_data": random.key_data(subkey), "n_subkeys": np.array(len(forty_two_subkeys)), "last": last,
            "sequence": sequence, "at_once": at_once, "vectorized": vectorized}
