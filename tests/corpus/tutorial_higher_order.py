"""JAX's "Advanced automatic differentiation: higher-order derivatives" (docs/higher-order.md): its code cells in
order; %timeit lines run once, printed values returned. (Its toy dataset has the autodiff cookbook's shapes, so the
two share their eager kernels.)"""
import jax
import jax.numpy as jnp
from jax import jacfwd, jacrev


def main():
    out = {}

    def hessian(f):
        return jax.jacfwd(jax.grad(f))

    def f(x):
        return jnp.dot(x, x)

    out["hessian_dot"] = hessian(f)(jnp.array([1., 2., 3.]))

    # Value function and initial parameters
    value_fn = lambda theta, state: jnp.dot(theta, state)  # noqa: E731
    theta = jnp.array([0.1, -0.1, 0.])

    # An example transition.
    s_tm1 = jnp.array([1., 2., -1.])
    r_t = jnp.array(1.)
    s_t = jnp.array([2., 1., 0.])

    def td_loss(theta, s_tm1, r_t, s_t):
        v_tm1 = value_fn(theta, s_tm1)
        target = r_t + value_fn(theta, s_t)
        return -0.5 * ((target - v_tm1) ** 2)

    td_update = jax.grad(td_loss)
    out["delta_theta_no_stop"] = td_update(theta, s_tm1, r_t, s_t)

    def td_loss(theta, s_tm1, r_t, s_t):
        v_tm1 = value_fn(theta, s_tm1)
        target = r_t + value_fn(theta, s_t)
        return -0.5 * ((jax.lax.stop_gradient(target) - v_tm1) ** 2)

    td_update = jax.grad(td_loss)
    out["delta_theta"] = td_update(theta, s_tm1, r_t, s_t)

    s_grad = jax.grad(value_fn)(theta, s_tm1)
    delta_theta_original_calculation = (r_t + value_fn(theta, s_t) - value_fn(theta, s_tm1)) * s_grad
    out["delta_theta_original_calculation"] = delta_theta_original_calculation  # [1.2, 2.4, -1.2]

    def f(x):
        return jnp.round(x)  # non-differentiable

    def straight_through_f(x):
        # Create an exactly-zero expression with Sterbenz lemma that has
        # an exactly-one gradient.
        zero = x - jax.lax.stop_gradient(x)
        return zero + jax.lax.stop_gradient(f(x))

    out["f"], out["straight_through_f"] = f(3.2), straight_through_f(3.2)
    out["grad_f"], out["grad_straight_through_f"] = jax.grad(f)(3.2), jax.grad(straight_through_f)(3.2)

    perex_grads = jax.jit(jax.vmap(jax.grad(td_loss), in_axes=(None, 0, 0, 0)))

    # Test it:
    batched_s_tm1 = jnp.stack([s_tm1, s_tm1])
    batched_r_t = jnp.stack([r_t, r_t])
    batched_s_t = jnp.stack([s_t, s_t])

    out["perex_grads"] = perex_grads(theta, batched_s_tm1, batched_r_t, batched_s_t)

    dtdloss_dtheta = jax.grad(td_loss)
    out["dtdloss_dtheta"] = dtdloss_dtheta(theta, s_tm1, r_t, s_t)

    almost_perex_grads = jax.vmap(dtdloss_dtheta)
    batched_theta = jnp.stack([theta, theta])
    out["almost_perex_grads"] = almost_perex_grads(batched_theta, batched_s_tm1, batched_r_t, batched_s_t)

    inefficient_perex_grads = jax.vmap(dtdloss_dtheta, in_axes=(None, 0, 0, 0))
    out["inefficient_perex_grads"] = inefficient_perex_grads(theta, batched_s_tm1, batched_r_t, batched_s_t)

    perex_grads = jax.jit(inefficient_perex_grads)
    out["perex_grads_jit"] = perex_grads(theta, batched_s_tm1, batched_r_t, batched_s_t)

    inefficient_perex_grads(theta, batched_s_tm1, batched_r_t, batched_s_t).block_until_ready()
    perex_grads(theta, batched_s_tm1, batched_r_t, batched_s_t).block_until_ready()

    def hvp(f, x, v):
        return jax.grad(lambda x: jnp.vdot(jax.grad(f)(x), v))(x)

    # Define a sigmoid function.
    def sigmoid(x):
        return 0.5 * (jnp.tanh(x / 2) + 1)

    # Outputs probability of a label being true.
    def predict(W, b, inputs):
        return sigmoid(jnp.dot(inputs, W) + b)

    # Build a toy dataset.
    inputs = jnp.array([[0.52, 1.12,  0.77],
                        [0.88, -1.08, 0.15],
                        [0.52, 0.06, -1.30],
                        [0.74, -2.49, 1.39]])

    # Initialize random model coefficients
    key = jax.random.key(0)
    key, W_key, b_key = jax.random.split(key, 3)
    W = jax.random.normal(W_key, (3,))
    b = jax.random.normal(b_key, ())

    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)  # noqa: E731

    out["jacfwd"] = jacfwd(f)(W)
    out["jacrev"] = jacrev(f)(W)

    def predict_dict(params, inputs):
        return predict(params['W'], params['b'], inputs)

    J_dict = jax.jacrev(predict_dict)({'W': W, 'b': b}, inputs)
    out["J_dict_keys"] = jnp.array([ord(k[0]) for k in J_dict])
    out["J_dict_W"], out["J_dict_b"] = J_dict['W'], J_dict['b']

    def hessian(f):
        return jax.jacfwd(jax.jacrev(f))

    out["hessian"] = hessian(f)(W)
    # (the tutorial defines hvp without calling it: here, against the Hessian, in the direction of W)
    out["hvp"] = hvp(lambda W: jnp.sum(f(W)), W, W)
    return out
