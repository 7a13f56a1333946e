"""custom_jvp and custom_vjp as the custom-derivatives tutorial uses them: a stable log1pexp, gradient clipping,
and a fixed-point solver differentiated implicitly."""
import numpy as np

import jax
import jax.numpy as jnp
from jax import lax


@jax.custom_jvp
def log1pexp(x):
    return jnp.log1p(jnp.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * (1 - 1 / (1 + jnp.exp(x)))


@jax.custom_vjp
def clip_gradient(x):
    return x


def clip_fwd(x):
    return x, None


def clip_bwd(_, g):
    return (jnp.clip(g, -0.5, 0.5),)


clip_gradient.defvjp(clip_fwd, clip_bwd)


def fixed_point(f, a, x0):
    def cond(c):
        x, prev, i = c
        return (jnp.abs(x - prev) > 1e-6) & (i < 100)

    def body(c):
        x, _, i = c
        return f(a, x), x, i + 1
    return lax.while_loop(cond, body, (f(a, x0), x0, 0))[0]


def main():
    x = jnp.array([-50.0, -1.0, 0.0, 1.0, 50.0])
    g = jax.vmap(jax.grad(log1pexp))(x)
    gc = jax.grad(lambda t: jnp.sum(clip_gradient(t) ** 3))(jnp.array([0.1, 1.0, -2.0]))
    newton = lambda a, t: 0.5 * (t + a / t)
    root = jax.jit(fixed_point, static_argnums=0)(newton, 2.0, 1.0)
    np.testing.assert_allclose(float(root), np.sqrt(2), rtol=1e-5)
    return {"log1pexp": log1pexp(x), "grad": g, "clipped": gc, "root": root}
