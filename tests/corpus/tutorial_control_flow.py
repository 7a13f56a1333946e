"""JAX's tutorial "Control flow and logical operators with JIT" (docs/control-flow.md): its code cells in order;
printed values are returned, and each cell marked "This will fail!" records which of TypeError / ValueError
it raised."""
from jax import grad, jit
import jax.numpy as jnp
from jax import lax
import numpy as np


def _fails(thunk):
    """[raised TypeError, raised ValueError] for a cell that must fail."""
    try:
        thunk()
    except (TypeError, ValueError) as e:
        return [int(isinstance(e, TypeError)), int(isinstance(e, ValueError))]
    return [0, 0]


def main():
    out = {}

    @jit
    def f(x):
        for i in range(3):
            x = 2 * x
        return x
    out["unrolled"] = f(3)

    @jit
    def g(x):
        y = 0.
        for i in range(x.shape[0]):
            y = y + x[i]
        return y
    out["shape_loop"] = g(jnp.array([1., 2., 3.]))

    @jit
    def f(x):
        if x < 3:
            return 3. * x ** 2
        else:
            return -4 * x
    # This will fail!
    out["fail_if"] = np.array(_fails(lambda: f(2)))

    @jit
    def g(x):
        return (x > 0) and (x < 3)
    # This will fail!
    out["fail_and"] = np.array(_fails(lambda: g(2)))

    def f(x):
        if x < 3:
            return 3. * x ** 2
        else:
            return -4 * x
    f = jit(f, static_argnames='x')
    out["static_x"] = f(2.)

    def f(x, n):
        y = 0.
        for i in range(n):
            y = y + x[i]
        return y
    f = jit(f, static_argnames='n')
    out["static_n"] = f(jnp.array([2., 3., 4.]), 2)

    def example_fun(length, val):
        return jnp.ones((length,)) * val
    # un-jit'd works fine
    out["unjitted"] = example_fun(5, 4)

    bad_example_jit = jit(example_fun)
    # this will fail:
    out["fail_length"] = np.array(_fails(lambda: bad_example_jit(10, 4)))

    # static_argnames tells JAX to recompile on changes at these argument positions:
    good_example_jit = jit(example_fun, static_argnames='length')
    out["length10"] = good_example_jit(10, 4)
    out["length5"] = good_example_jit(5, 4)

    @jit
    def f(x):
        y = 2 * x
        return y
    out["traced"] = f(2)

    operand = jnp.array([0.])
    out["cond_true"] = lax.cond(True, lambda x: x+1, lambda x: x-1, operand)
    out["cond_false"] = lax.cond(False, lambda x: x+1, lambda x: x-1, operand)

    init_val = 0
    cond_fun = lambda x: x < 10
    body_fun = lambda x: x+1
    out["while"] = lax.while_loop(cond_fun, body_fun, init_val)

    init_val = 0
    start = 0
    stop = 10
    body_fun = lambda i, x: x+i
    out["fori"] = lax.fori_loop(start, stop, body_fun, init_val)

    def python_check_positive_even(x):
        is_even = x % 2 == 0
        # `and` short-circults, so when `is_even` is `False`, `x > 0` is not evaluated.
        return is_even and (x > 0)

    @jit
    def jax_check_positive_even(x):
        is_even = x % 2 == 0
        # `logical_and` does not short circuit, so `x > 0` is always evaluated.
        return jnp.logical_and(is_even, x > 0)
    out["python_even"] = np.array(python_check_positive_even(24))
    out["jax_even"] = jax_check_positive_even(24)

    x = jnp.array([-1, 2, 5])
    out["jax_even_array"] = jax_check_positive_even(x)
    out["fail_python_even_array"] = np.array(_fails(lambda: python_check_positive_even(x)))

    def f(x):
        if x < 3:
            return 3. * x ** 2
        else:
            return -4 * x
    out["grad_2"] = grad(f)(2.)  # ok!
    out["grad_4"] = grad(f)(4.)  # ok!
    return out
