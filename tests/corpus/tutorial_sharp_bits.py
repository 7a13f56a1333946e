"""JAX's "The Sharp Bits" (docs/notebooks/Common_Gotchas_in_JAX.md, github.com/jax-ml/jax): its code cells in order,
printed values returned; a cell tagged raises-exception records the class of what it raised. Left out, as
docs/jax-differences.md says stagec differs there on purpose: `jnp.arange(10)[11]` and `jnp.arange(10.0).at[11].get()`
with a concrete index (stagec raises IndexError; the same reads with a traced index clamp, as JAX's, and are kept) and `jax_array[1, :] = 1.0` on an eager
array (stagec computes `.at[1, :].set`; under jit it raises TypeError as JAX's, and is kept that way), and
`jnp.sum([1, 2, 3])` (JAX raises TypeError; stagec's reductions take a list as NumPy's do)."""
import numpy as np
from jax import jit
from jax import lax
from jax import random
import jax
import jax.numpy as jnp


def _raised(thunk):
    """[IndexError, TypeError, other] for a cell that must raise; [0, 0, 0] if it returned."""
    try:
        thunk()
    except IndexError:
        return [1, 0, 0]
    except TypeError:
        return [0, 1, 0]
    except Exception:
        return [0, 0, 1]
    return [0, 0, 0]


def main():
    out = {}
    traces = []

    def impure_print_side_effect(x):
        traces.append("Executing function")  # This is a side-effect
        return x

    out["side_effect_calls"] = [jit(impure_print_side_effect)(4.), jit(impure_print_side_effect)(5.),
                                jit(impure_print_side_effect)(jnp.array([5.]))[0]]
    out["side_effect_traces"] = len(traces)

    g = 0.

    def impure_uses_globals(x):
        return x + g

    first = jit(impure_uses_globals)(4.)
    g = 10.  # Update the global
    out["globals"] = [first, jit(impure_uses_globals)(5.), jit(impure_uses_globals)(jnp.array([4.]))[0]]

    saved = {}

    def impure_saves_global(x):
        saved["g"] = x
        return x

    out["saves_global"] = jit(impure_saves_global)(4.)

    def pure_uses_internal_state(x):
        state = dict(even=0, odd=0)
        for i in range(10):
            state['even' if i % 2 == 0 else 'odd'] += x
        return state['even'] + state['odd']

    out["internal_state"] = jit(pure_uses_internal_state)(5.)

    array = jnp.arange(10)
    out["fori_array"] = lax.fori_loop(0, 10, lambda i, x: x + array[i], 0)  # expected result 45
    iterator = iter(range(10))
    out["fori_iterator"] = lax.fori_loop(0, 10, lambda i, x: x + next(iterator), 0)  # unexpected result 0

    def func11(arr, extra):
        ones = jnp.ones(arr.shape)

        def body(carry, aelems):
            ae1, ae2 = aelems
            return (carry + ae1 * ae2 + extra, carry)
        return lax.scan(body, 0., (arr, ones))
    out["scan_carry"], out["scan_ys"] = func11(jnp.arange(16), 5.)
    out["scan_iter_raises"] = _raised(lambda: jax.make_jaxpr(func11)(iter(range(16)), 5.))
    array_operand = jnp.array([0.])
    out["cond"] = lax.cond(True, lambda x: x + 1, lambda x: x - 1, array_operand)
    iter_operand = iter(range(10))
    out["cond_iter_raises"] = _raised(lambda: lax.cond(True, lambda x: next(x) + 1, lambda x: next(x) - 1,
                                                       iter_operand))

    @jit
    def assign(jax_array):
        jax_array[1, :] = 1.0
        return jax_array
    out["setitem_raises"] = _raised(lambda: assign(jnp.zeros((3, 3), dtype=jnp.float32)))

    jax_array = jnp.array([10, 20])
    jax_array_new = jax_array
    jax_array_new += 10
    out["rebound"], out["original"] = jax_array_new, jax_array

    jax_array = jnp.zeros((3, 3), dtype=jnp.float32)
    out["at_set"] = jax_array.at[1, :].set(1.0)
    out["at_set_original"] = jax_array
    jax_array = jnp.ones((5, 6))
    out["at_add"] = jax_array.at[::2, 3:].add(7.)

    class CustomClass:
        def __init__(self, x: jnp.ndarray, mul: bool):
            self.x = x
            self.mul = mul

        @jit  # <---- How to do this correctly?
        def calc(self, y):
            if self.mul:
                return self.x * y
            return y

    out["method_jit_raises"] = _raised(lambda: CustomClass(2, True).calc(3))

    class CustomClass:
        def __init__(self, x: jnp.ndarray, mul: bool):
            self.x = x
            self.mul = mul

        def calc(self, y):
            return _calc(self.mul, self.x, y)

    @jit(static_argnums=0)
    def _calc(mul, x, y):
        if mul:
            return x * y
        return y

    out["helper"] = CustomClass(2, True).calc(3)

    class CustomClass:
        def __init__(self, x: jnp.ndarray, mul: bool):
            self.x = x
            self.mul = mul

        # WARNING: this example is broken, as we'll see below. Don't copy & paste!
        @jit(static_argnums=0)
        def calc(self, y):
            if self.mul:
                return self.x * y
            return y

    c = CustomClass(2, True)
    out["static_self"] = [c.calc(3)]
    c.mul = False
    out["static_self"].append(c.calc(3))  # Should print 3 (prints 6: the cached trace)

    class CustomClass:
        def __init__(self, x: jnp.ndarray, mul: bool):
            self.x = x
            self.mul = mul

        @jit
        def calc(self, y):
            if self.mul:
                return self.x * y
            return y

        def _tree_flatten(self):
            children = (self.x,)  # arrays / dynamic values
            aux_data = {'mul': self.mul}  # static values
            return (children, aux_data)

        @classmethod
        def _tree_unflatten(cls, aux_data, children):
            return cls(*children, **aux_data)

    from jax import tree_util
    tree_util.register_pytree_node(CustomClass,
                                   CustomClass._tree_flatten,
                                   CustomClass._tree_unflatten)
    c = CustomClass(2, True)
    out["pytree"] = [c.calc(3)]
    c.mul = False  # mutation is detected
    out["pytree"].append(c.calc(3))
    c = CustomClass(jnp.array(2), True)  # non-hashable x is supported
    out["pytree"].append(c.calc(3))

    out["oob_under_jit"] = jit(lambda i: jnp.arange(10)[i])(11)
    out["oob_get"] = jit(lambda i: jnp.arange(10.0).at[i].get())(11)
    out["oob_fill"] = jnp.arange(10.0).at[11].get(mode='fill', fill_value=jnp.nan)

    def permissive_sum(x):
        return jnp.sum(jnp.array(x))

    x = list(range(10))
    out["permissive_sum"] = permissive_sum(x)
    out["permissive_jaxpr_inputs"] = len(jax.make_jaxpr(permissive_sum)(x).jaxpr.invars)
    out["sum_array"] = jnp.sum(jnp.array(x))

    def nansum(x):
        mask = ~jnp.isnan(x)  # boolean mask selecting non-nan values
        x_without_nans = x[mask]
        return x_without_nans.sum()

    x = jnp.array([1, 2, jnp.nan, 3, 4])
    out["nansum"] = nansum(x)
    out["jit_nansum_raises"] = _raised(lambda: jax.jit(nansum)(x))

    @jax.jit
    def nansum_2(x):
        mask = ~jnp.isnan(x)  # boolean mask selecting non-nan values
        return jnp.where(mask, x, 0).sum()

    out["nansum_2"] = nansum_2(x)

    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = random.uniform(random.key(0), (1000,), dtype=jnp.float64)
    out["x64_dtype"] = np.array(str(x.dtype))
    out["x64_head"] = x[:8]

    out["unsafe_cast"] = jnp.arange(254.0, 258.0).astype('uint8')
    return out
