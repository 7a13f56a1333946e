"""JAX's "Just-in-time compilation" (docs/jit-compilation.md): its code cells in order; %timeit lines run once (on
1000 elements, not a million), printed values returned, and the cells shown failing record the exception classes
they raise."""
import numpy as np
import jax
import jax.numpy as jnp
from functools import partial


def _raises(thunk):
    """The class name of the exception a failing cell raises ("" when it does not)."""
    try:
        thunk()
    except Exception as e:
        return np.array(type(e).__name__)
    return np.array("")


def main():
    out = {}
    global_list = []

    def log2(x):
        global_list.append(x)
        ln_x = jnp.log(x)
        ln_2 = jnp.log(2.0)
        return ln_x / ln_2

    print(jax.make_jaxpr(log2)(3.0))
    out["global_list_len"] = np.array(len(global_list))  # (the side effect ran once, while tracing)

    def log2_with_print(x):
        print("printed x:", x)
        ln_x = jnp.log(x)
        ln_2 = jnp.log(2.0)
        return ln_x / ln_2

    print(jax.make_jaxpr(log2_with_print)(3.))

    def log2_if_rank_2(x):
        if x.ndim == 2:
            ln_x = jnp.log(x)
            ln_2 = jnp.log(2.0)
            return ln_x / ln_2
        else:
            return x

    jaxpr = jax.make_jaxpr(log2_if_rank_2)(jax.numpy.array([1, 2, 3]))
    print(jaxpr)
    out["rank_1_eqns"] = np.array(len(jaxpr.eqns))  # (no operation: the input is returned)

    def selu(x, alpha=1.67, lambda_=1.05):
        return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

    # (1000 where the tutorial has 1000000, to time: untimed, the values are the point, and eagerly a million
    # elements take a kernel compile per operation where a thousand take NumPy rules and shared kernels)
    x = jnp.arange(1000)
    y = selu(x).block_until_ready()

    selu_jit = jax.jit(selu)
    # Pre-compile the function before timing...
    y_jit = selu_jit(x).block_until_ready()
    out["selu"], out["selu_jit"] = y, y_jit

    # Condition on value of x.
    def f(x):
        if x > 0:
            return x
        else:
            return 2 * x

    out["f_raises"] = _raises(lambda: jax.jit(f)(10))  # Raises an error

    # While loop conditioned on x and n.
    def g(x, n):
        i = 0
        while i < n:
            i += 1
        return x + i

    out["g_raises"] = _raises(lambda: jax.jit(g)(10, 20))  # Raises an error

    # While loop conditioned on x and n with a jitted body.
    @jax.jit
    def loop_body(prev_i):
        return prev_i + 1

    def g_inner_jitted(x, n):
        i = 0
        while i < n:
            i = loop_body(i)
        return x + i

    out["g_inner_jitted"] = g_inner_jitted(10, 20)

    f_jit_correct = jax.jit(f, static_argnums=0)
    out["f_jit_correct"] = f_jit_correct(10)

    g_jit_correct = jax.jit(g, static_argnames=['n'])
    out["g_jit_correct"] = g_jit_correct(10, 20)

    @jax.jit(static_argnames=['n'])
    def g_jit_decorated(x, n):
        i = 0
        while i < n:
            i += 1
        return x + i

    out["g_jit_decorated"] = g_jit_decorated(10, 20)

    def unjitted_loop_body(prev_i):
        return prev_i + 1

    def g_inner_jitted_partial(x, n):
        i = 0
        while i < n:
            # Don't do this! each time the partial returns
            # a function with different hash
            i = jax.jit(partial(unjitted_loop_body))(i)
        return x + i

    def g_inner_jitted_lambda(x, n):
        i = 0
        while i < n:
            # Don't do this!, lambda will also return
            # a function with a different hash
            i = jax.jit(lambda x: unjitted_loop_body(x))(i)
        return x + i

    def g_inner_jitted_normal(x, n):
        i = 0
        while i < n:
            # this is OK, since JAX can find the
            # cached, compiled function
            i = jax.jit(unjitted_loop_body)(i)
        return x + i

    out["g_inner_jitted_partial"] = g_inner_jitted_partial(10, 20).block_until_ready()
    out["g_inner_jitted_lambda"] = g_inner_jitted_lambda(10, 20).block_until_ready()
    out["g_inner_jitted_normal"] = g_inner_jitted_normal(10, 20).block_until_ready()
    return out
