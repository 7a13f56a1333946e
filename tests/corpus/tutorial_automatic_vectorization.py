"""JAX's tutorial "Automatic vectorization" (docs/automatic-vectorization.md): its code cells in order; the last
cell's `pairwise` applied to `convolve`'s dot product so that it computes something."""
import jax
import jax.numpy as jnp


def main():
    x = jnp.arange(5)
    w = jnp.array([2., 3., 4.])

    def convolve(x, w):
        output = []
        for i in range(1, len(x)-1):
            output.append(jnp.dot(x[i-1:i+2], w))
        return jnp.array(output)

    single = convolve(x, w)

    xs = jnp.stack([x, x])
    ws = jnp.stack([w, w])

    def manually_batched_convolve(xs, ws):
        output = []
        for i in range(xs.shape[0]):
            output.append(convolve(xs[i], ws[i]))
        return jnp.stack(output)

    manual = manually_batched_convolve(xs, ws)

    def manually_vectorized_convolve(xs, ws):
        output = []
        for i in range(1, xs.shape[-1] - 1):
            output.append(jnp.sum(xs[:, i-1:i+2] * ws, axis=1))
        return jnp.stack(output, axis=1)

    vectorized = manually_vectorized_convolve(xs, ws)

    auto_batch_convolve = jax.vmap(convolve)
    auto = auto_batch_convolve(xs, ws)

    auto_batch_convolve_v2 = jax.vmap(convolve, in_axes=1, out_axes=1)
    xst = jnp.transpose(xs)
    wst = jnp.transpose(ws)
    auto_v2 = auto_batch_convolve_v2(xst, wst)

    batch_convolve_v3 = jax.vmap(convolve, in_axes=[0, None])
    auto_v3 = batch_convolve_v3(xs, w)

    jitted_batch_convolve = jax.jit(auto_batch_convolve)
    jitted = jitted_batch_convolve(xs, ws)

    def pairwise(f, xs):
        return jax.vmap(lambda x: jax.vmap(lambda y: f(x, y))(xs))(xs)

    pairs = pairwise(jnp.dot, ws * jnp.array([[1.], [-0.5]]))

    return {"single": single, "manual": manual, "vectorized": vectorized, "auto": auto, "auto_v2": auto_v2,
            "auto_v3": auto_v3, "jitted": jitted, "pairs": pairs}
