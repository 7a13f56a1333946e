"""An MLP trained for a few steps: nn.initializers, value_and_grad over a pytree of parameters, optax-free SGD."""
import numpy as np

import jax
import jax.numpy as jnp
from jax.nn import initializers


def init_params(key, sizes):
    keys = jax.random.split(key, len(sizes) - 1)
    w_init, b_init = initializers.glorot_normal(), initializers.zeros
    return [{"w": w_init(k, (m, n)), "b": b_init(k, (n,))} for k, m, n in zip(keys, sizes[:-1], sizes[1:])]


def predict(params, x):
    for layer in params[:-1]:
        x = jax.nn.gelu(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss(params, x, y):
    return jnp.mean((predict(params, x) - y) ** 2)


@jax.jit
def update(params, x, y, lr):
    grads = jax.grad(loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


def main():
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (64, 3)).astype(np.float32)
    y = np.sin(x.sum(axis=1, keepdims=True) * 2).astype(np.float32)
    params = init_params(jax.random.PRNGKey(42), [3, 16, 16, 1])
    w0 = params[0]["w"]
    for _ in range(5):
        params = update(params, x, y, 0.05)
    he = initializers.he_uniform()(jax.random.PRNGKey(3), (4, 5))
    return {"w0": w0, "loss": loss(params, x, y), "pred": predict(params, x[:5]), "he": he}
