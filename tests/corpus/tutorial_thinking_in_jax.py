"""JAX's tutorial "How to think in JAX" (docs/notebooks/thinking_in_jax.md): its code cells in order; plots and
%timeit dropped, printed values returned, and the cells shown failing record the exception classes they raise
(but for `x[0] = 10`, below)."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import jit
from jax import grad
from jax import jacobian
from jax import jacfwd, jacrev
from jax import random
from jax import vmap


def _fails(thunk):
    """[raised TypeError, raised ValueError, raised IndexError/NonConcreteBooleanIndexError] for a failing cell."""
    try:
        thunk()
    except (TypeError, ValueError, IndexError) as e:
        return [isinstance(e, TypeError), isinstance(e, ValueError), isinstance(e, IndexError)]
    return [False, False, False]


def main():
    out = {}
    x_jnp = jnp.linspace(0, 10, 1000)
    out["y_jnp"] = 2 * jnp.sin(x_jnp) * jnp.cos(x_jnp)

    x_np = np.linspace(0, 10, 1000)
    x_jnp = jnp.linspace(0, 10, 1000)
    out["linspace_diff"] = np.asarray(x_jnp) - x_np.astype(np.float32)

    # NumPy: mutable arrays
    x = np.arange(10)
    x[0] = 10

    # JAX: immutable arrays
    x = jnp.arange(10)
    # (the cell `x[0] = 10`, which JAX refuses, is left out: stagec's eager arrays take item assignment on
    # purpose, docs/jax-differences.md)

    y = x.at[0].set(10)
    out["x"], out["y"] = x, y

    x = jnp.arange(5)
    out["is_array"] = np.array(isinstance(x, jax.Array))
    out["n_devices"] = np.array(len(x.devices()))
    out["sharding_devices"] = np.array(len(x.sharding.device_set))

    def norm(X):
        X = X - X.mean(0)
        return X / X.std(0)

    norm_compiled = jit(norm)

    np.random.seed(1701)
    # (1000 rows where the tutorial times 10000: eagerly, 10000x10 takes a kernel compile per operation of `norm`
    # where 1000x10 takes NumPy rules)
    X = jnp.array(np.random.rand(1000, 10))
    out["norm_allclose"] = np.array(np.allclose(norm(X), norm_compiled(X), atol=1E-6))
    out["norm"] = norm_compiled(X)[:20]

    def get_negatives(x):
        return x[x < 0]

    x = jnp.array(np.random.randn(10))
    out["negatives"] = get_negatives(x)
    out["jit_negatives_fails"] = np.array(_fails(lambda: jit(get_negatives)(x)))

    def sum_logistic(x):
        return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))

    x_small = jnp.arange(3.)
    derivative_fn = grad(sum_logistic)
    out["derivative"] = derivative_fn(x_small)

    def first_finite_differences(f, x, eps=1E-3):
        return jnp.array([(f(x + eps * v) - f(x - eps * v)) / (2 * eps)
                          for v in jnp.eye(len(x))])

    out["finite_differences"] = first_finite_differences(sum_logistic, x_small)
    out["third"] = grad(jit(grad(jit(grad(sum_logistic)))))(1.0)
    out["jacobian_exp"] = jacobian(jnp.exp)(x_small)

    def hessian(fun):
        return jit(jacfwd(jacrev(fun)))

    out["hessian"] = hessian(sum_logistic)(x_small)

    key = random.key(1701)
    key1, key2 = random.split(key)
    mat = random.normal(key1, (150, 100))
    batched_x = random.normal(key2, (10, 100))

    def apply_matrix(x):
        return jnp.dot(mat, x)

    def naively_batched_apply_matrix(v_batched):
        return jnp.stack([apply_matrix(v) for v in v_batched])

    @jit
    def batched_apply_matrix(batched_x):
        return jnp.dot(batched_x, mat.T)

    np.testing.assert_allclose(naively_batched_apply_matrix(batched_x),
                               batched_apply_matrix(batched_x), atol=1E-4, rtol=1E-4)

    @jit
    def vmap_batched_apply_matrix(batched_x):
        return vmap(apply_matrix)(batched_x)

    np.testing.assert_allclose(naively_batched_apply_matrix(batched_x),
                               vmap_batched_apply_matrix(batched_x), atol=1E-4, rtol=1E-4)
    out["vmapped"] = vmap_batched_apply_matrix(batched_x)

    key = random.key(43)
    out["normal_twice"] = jnp.stack([random.normal(key), random.normal(key)])

    draws = []
    for i in range(3):
        new_key, subkey = random.split(key)
        del key  # The old key is consumed by split() -- we must never use it again.
        val = random.normal(subkey)
        del subkey  # The subkey is consumed by normal().
        draws.append(val)
        key = new_key  # new_key is safe to use in the next iteration.  # noqa: F841
    out["draws"] = jnp.stack(draws)

    @jax.jit
    def f(x):
        y = jnp.sin(x)
        return y

    out["sin"] = f(2.)

    @jax.jit
    def f(x):
        jax.debug.print("jax.debug.print(x) -> {x}", x=x)
        y = jnp.sin(x)
        jax.debug.print("jax.debug.print(y) -> {y}", y=y)
        return y

    out["sin_debug"] = f(2.)
    return out
