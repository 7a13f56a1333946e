"""JAX's "Key concepts" (docs/key-concepts.md): its code cells in order; printed values returned (PyTreeDefs as
their printed strings), and the cell shown failing records the exception class it raises."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax


def main():
    out = {}

    def selu(x, alpha=1.67, lambda_=1.05):
        return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

    selu_jit = jax.jit(selu)
    out["selu_jit"] = selu_jit(1.0)

    @jax.jit
    def selu(x, alpha=1.67, lambda_=1.05):
        return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

    @jax.jit
    def f(x):
        print(x)
        return x + 1

    x = jnp.arange(5)
    result = f(x)
    out["result"] = result

    def selu(x, alpha=1.67, lambda_=1.05):
        return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

    x = jnp.arange(5.0)
    jaxpr = jax.make_jaxpr(selu)(x)
    print(jaxpr)
    out["jaxpr_out_shape"] = np.array(jaxpr.out_avals[0].shape)

    # (nested) list of parameters
    params = [1, 2, (jnp.arange(3), jnp.ones(2))]
    out["list_structure"] = np.array(str(jax.tree.structure(params)))
    leaves = jax.tree.leaves(params)
    out["list_leaves_n"] = np.array(len(leaves))
    out["list_leaves_3"], out["list_leaves_4"] = leaves[2], leaves[3]

    # Dictionary of parameters
    params = {'n': 5, 'W': jnp.ones((2, 2)), 'b': jnp.zeros(2)}
    out["dict_structure"] = np.array(str(jax.tree.structure(params)))
    out["dict_leaves_W"], out["dict_leaves_b"], out["dict_leaves_n"] = jax.tree.leaves(params)

    # Named tuple of parameters
    from typing import NamedTuple

    class Params(NamedTuple):
        a: int
        b: float

    params = Params(1, 5.0)
    out["namedtuple_structure"] = np.array(str(jax.tree.structure(params)))
    out["namedtuple_leaves"] = np.array(jax.tree.leaves(params))

    # (the cells' repeated imports are at the top)
    out["add"] = jnp.add(1, 1.0)  # jax.numpy API implicitly promotes mixed types.

    try:
        lax.add(1, 1.0)  # jax.lax API requires explicit type promotion.
        out["lax_add_raises"] = np.array("")
    except TypeError as e:
        out["lax_add_raises"] = np.array(type(e).__name__)

    out["lax_add"] = lax.add(jnp.float32(1), 1.0)

    x = jnp.array([1, 2, 1])
    y = jnp.ones(10)
    out["convolve"] = jnp.convolve(x, y)

    result = lax.conv_general_dilated(
        x.reshape(1, 1, 3).astype(float),  # note: explicit promotion
        y.reshape(1, 1, 10),
        window_strides=(1,),
        padding=[(len(y) - 1, len(y) - 1)])  # equivalent of padding='full' in NumPy
    out["conv_general_dilated"] = result[0, 0]
    return out
