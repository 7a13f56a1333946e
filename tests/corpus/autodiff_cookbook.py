"""Derivatives as the autodiff cookbook computes them: grad, jacfwd/jacrev/jacobian, hessian, Hessian-vector
products by forward-over-reverse, vjp/jvp, and per-example gradients with vmap."""
import numpy as np

import jax
import jax.numpy as jnp


def predict(W, b, x):
    return jax.nn.sigmoid(x @ W + b)


def loss(W, b, x, y):
    p = predict(W, b, x)
    return -jnp.sum(y * jnp.log(p) + (1 - y) * jnp.log(1 - p))


def hvp(f, x, v):
    return jax.jvp(jax.grad(f), (x,), (v,))[1]


def main():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 3)).astype(np.float32)
    y = (rng.uniform(size=6) > 0.5).astype(np.float32)
    W, b = jnp.array([0.5, -0.2, 0.1]), 0.3
    gW, gb = jax.grad(loss, argnums=(0, 1))(W, b, x, y)
    J = jax.jacobian(predict)(W, b, x)
    Jf = jax.jacfwd(predict)(W, b, x)
    H = jax.hessian(loss)(W, b, x, y)
    f = lambda w: jnp.sum(jnp.tanh(w) ** 3)
    v = jnp.array([1.0, 0.5, -1.0])
    out, vjp_fn = jax.vjp(lambda w: jnp.sin(w) * w, W)
    per_example = jax.vmap(jax.grad(loss), in_axes=(None, None, 0, 0))(W, b, x[:, None, :], y[:, None])
    _, tangent = jax.jvp(lambda w: jnp.exp(w) / jnp.sum(jnp.exp(w)), (W,), (v,))
    return {"gW": gW, "gb": gb, "J": J, "Jf": Jf, "H": H, "hvp": hvp(f, W, v), "vjp": vjp_fn(v)[0], "out": out,
            "per_example": per_example, "tangent": tangent}
