"""A tiny convolutional autoencoder: strided and dilated convolutions, conv_transpose to upsample, average
pooling, and one gradient step on the reconstruction loss."""
import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
from jax.nn import initializers

DN = ("NHWC", "HWIO", "NHWC")


def init(key):
    k1, k2, k3 = jax.random.split(key, 3)
    he = initializers.he_normal()
    return {"enc": he(k1, (3, 3, 1, 4)), "mid": he(k2, (3, 3, 4, 4)), "dec": he(k3, (4, 4, 1, 4))}


def apply(p, x):
    h = jax.nn.relu(lax.conv_general_dilated(x, p["enc"], (2, 2), "SAME", dimension_numbers=DN))
    h = jax.nn.relu(lax.conv_general_dilated(h, p["mid"], (1, 1), "SAME", rhs_dilation=(2, 2), dimension_numbers=DN))
    y = lax.conv_transpose(h, p["dec"], (2, 2), "SAME", dimension_numbers=DN, transpose_kernel=True)
    return jax.nn.sigmoid(y)


def loss(p, x):
    return jnp.mean((apply(p, x) - x) ** 2)


def main():
    rng = np.random.default_rng(10)
    x = rng.uniform(size=(2, 8, 8, 1)).astype(np.float32)
    p = init(jax.random.PRNGKey(5))
    l, g = jax.jit(jax.value_and_grad(loss))(p, x)
    avg = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4
    return {"recon": apply(p, x), "loss": l, "g_enc": g["enc"], "g_dec": g["dec"], "avg": avg}
