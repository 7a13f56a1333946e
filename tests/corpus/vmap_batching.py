"""Automatic vectorization: vmap with in_axes/out_axes over matrix-vector products, batched convolutions and
pooling, nested vmaps, and vmap of a lax function with the _in_dim helpers."""
import numpy as np

import jax
import jax.numpy as jnp
from jax import lax


def conv1(x, w):
    return lax.conv_general_dilated(x[None], w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))[0]


def main():
    rng = np.random.default_rng(9)
    M = rng.standard_normal((3, 4)).astype(np.float32)
    vs = rng.standard_normal((5, 4)).astype(np.float32)
    mv = jax.vmap(lambda v: M @ v)(vs)
    mv_t = jax.vmap(lambda v: M @ v, in_axes=1, out_axes=1)(vs.T)
    outer = jax.vmap(jax.vmap(lambda a, b: a * b, (None, 0)), (0, None))(vs[:, 0], vs[0])
    imgs = rng.standard_normal((2, 6, 6, 2)).astype(np.float32)
    ws = rng.standard_normal((2, 3, 3, 2, 3)).astype(np.float32)
    per_img = jax.vmap(conv1, in_axes=(0, None))(imgs, ws[0])
    per_pair = jax.vmap(conv1)(imgs, ws)
    pooled = jax.vmap(lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2, 2, 1), (2, 2, 1), "VALID"))(imgs)
    rows = jax.vmap(lambda x, i: lax.dynamic_slice_in_dim(x, i, 2), (0, 0))(vs, jnp.array([0, 1, 2, 3, 2]))
    upd = jax.vmap(lambda x, i: lax.dynamic_update_index_in_dim(x, 9.0, i, 0))(vs, jnp.array([0, 1, 2, 3, 3]))
    return {"mv": mv, "mv_t": mv_t, "outer": outer, "per_img": per_img, "per_pair": per_pair, "pooled": pooled,
            "rows": rows, "upd": upd, "index": lax.index_in_dim(M, 1, axis=1, keepdims=False),
            "slice": lax.slice_in_dim(M, 1, 3, axis=1)}
