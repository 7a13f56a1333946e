"""What users print and check: make_jaxpr's text, eval_shape-style shapes, Array.sharding, device placement,
jax.numpy's small helpers (allclose, ndim, shape) and check_grads."""
import numpy as np

import jax
import jax.numpy as jnp
from jax.test_util import check_grads


def f(x, y):
    return jnp.sum(jnp.sin(x) * y)


def main():
    x = jnp.arange(3.0)
    text = str(jax.make_jaxpr(f)(x, 2.0))
    assert text.startswith("{ lambda ") and "sin" in text and "reduce_sum" in text, text
    assert x.sharding.num_devices == 1 and x.sharding.is_fully_replicated
    check_grads(f, (np.linspace(0.1, 1.0, 3), np.float32(2.0)), order=2, modes=["fwd", "rev"])
    assert jnp.ndim(jnp.ones((2, 3))) == 2 and jnp.shape(jnp.ones((2, 3))) == (2, 3)
    assert bool(jnp.allclose(jnp.sqrt(x) ** 2, x, atol=1e-6))
    y = jax.device_put(np.ones(3, np.float32))
    return {"y": y * 2, "jac": jax.jacobian(lambda t: t ** 3)(x), "isclose": jnp.isclose(x, jnp.array([0.0, 1.0, 2.1]))}
