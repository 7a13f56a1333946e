"""JAX's "Stateful computations" (docs/stateful-computations.md): its code cells in order; the plot dropped,
printed values (and the fitted line it draws) returned."""
import numpy as np
import jax
import jax.numpy as jnp
from typing import NamedTuple


def main():
    out = {}

    class Counter:
        """A simple counter."""

        def __init__(self):
            self.n = 0

        def count(self) -> int:
            """Increments the counter and returns the new value."""
            self.n += 1
            return self.n

        def reset(self):
            """Resets the counter to zero."""
            self.n = 0

    counter = Counter()
    out["count"] = np.array([counter.count() for _ in range(3)])

    counter.reset()
    fast_count = jax.jit(counter.count)
    # (the state is read once, when jit traces: the tutorial's point is that this prints 1, 1, 1)
    out["fast_count"] = np.array([fast_count() for _ in range(3)])

    CounterState = int

    class CounterV2:

        def count(self, n: CounterState) -> tuple[int, CounterState]:
            # You could just return n+1, but here we separate its role as
            # the output and as the counter state for didactic purposes.
            return n + 1, n + 1

        def reset(self) -> CounterState:
            return 0

    counter = CounterV2()
    state = counter.reset()
    values = []
    for _ in range(3):
        value, state = counter.count(state)
        values.append(value)
    out["count_v2"] = np.array(values)

    state = counter.reset()
    fast_count = jax.jit(counter.count)
    values = []
    for _ in range(3):
        value, state = fast_count(state)
        values.append(value)
    out["fast_count_v2"] = np.array(values)

    class Params(NamedTuple):
        weight: jnp.ndarray
        bias: jnp.ndarray

    def init(rng) -> Params:
        """Returns the initial model params."""
        weights_key, bias_key = jax.random.split(rng)
        weight = jax.random.normal(weights_key, ())
        bias = jax.random.normal(bias_key, ())
        return Params(weight, bias)

    def loss(params: Params, x: jnp.ndarray, y: jnp.ndarray) -> jnp.ndarray:
        """Computes the least squares error of the model's predictions on x against y."""
        pred = params.weight * x + params.bias
        return jnp.mean((pred - y) ** 2)

    LEARNING_RATE = 0.005

    @jax.jit
    def update(params: Params, x: jnp.ndarray, y: jnp.ndarray) -> Params:
        """Performs one SGD update step on params using the given data."""
        grad = jax.grad(loss)(params, x, y)
        new_params = jax.tree.map(
            lambda param, g: param - g * LEARNING_RATE, params, grad)
        return new_params

    rng = jax.random.key(42)

    # Generate true data from y = w*x + b + noise
    true_w, true_b = 2, -1
    x_rng, noise_rng = jax.random.split(rng)
    xs = jax.random.normal(x_rng, (128, 1))
    noise = jax.random.normal(noise_rng, (128, 1)) * 0.5
    ys = xs * true_w + true_b + noise

    # Fit regression
    params = init(rng)
    out["init_weight"], out["init_bias"] = params
    for _ in range(1000):
        params = update(params, xs, ys)

    out["weight"], out["bias"] = params.weight, params.bias
    out["is_params"] = np.array(type(params) is Params)
    out["xs"], out["ys"] = xs, ys
    out["prediction"] = params.weight * xs + params.bias  # (the line the tutorial plots)
    return out
