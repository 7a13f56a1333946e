"""A small CNN classifier: conv_general_dilated, max pooling with reduce_window, a dense head, one SGD step."""
import numpy as np

import jax
import jax.numpy as jnp
from jax import lax


def init(key):
    k1, k2, k3 = jax.random.split(key, 3)
    return {"conv1": jax.random.normal(k1, (3, 3, 1, 4)) * 0.3,
            "conv2": jax.random.normal(k2, (3, 3, 4, 8)) * 0.2,
            "dense": jax.random.normal(k3, (8 * 2 * 2, 10)) * 0.1}


def forward(params, x):
    dn = ("NHWC", "HWIO", "NHWC")
    y = lax.conv_general_dilated(x, params["conv1"], (1, 1), "SAME", dimension_numbers=dn)
    y = jax.nn.relu(y)
    y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    y = lax.conv_general_dilated(y, params["conv2"], (2, 2), "SAME", dimension_numbers=dn)
    y = jnp.tanh(y)
    y = lax.reduce_window(y, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), "SAME") / 4
    return y.reshape(y.shape[0], -1) @ params["dense"]


def loss(params, x, labels):
    logits = forward(params, x)
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * jax.nn.one_hot(labels, 10), axis=-1))


@jax.jit
def step(params, x, labels):
    l, g = jax.value_and_grad(loss)(params, x, labels)
    return l, jax.tree.map(lambda p, d: p - 0.1 * d, params, g)


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8, 8, 1)).astype(np.float32)
    labels = rng.integers(0, 10, 4)
    params = init(jax.random.PRNGKey(0))
    l0, params = step(params, x, labels)
    l1, params = step(params, x, labels)
    return {"loss0": l0, "loss1": l1, "conv1": params["conv1"], "dense": params["dense"],
            "logits": forward(params, x)}
