"""JAX's "Automatic differentiation" (docs/automatic-differentiation.md): its code cells in order, printed values
returned. (Its toy dataset has the autodiff cookbook's shapes, so the two share their eager kernels.)"""
import jax
import jax.numpy as jnp
from jax import grad
from jax.test_util import check_grads


def main():
    out = {}
    grad_tanh = grad(jnp.tanh)
    out["grad_tanh"] = grad_tanh(2.0)

    out["grad2_tanh"] = grad(grad(jnp.tanh))(2.0)
    out["grad3_tanh"] = grad(grad(grad(jnp.tanh)))(2.0)

    f = lambda x: x**3 + 2*x**2 - 3*x + 1  # noqa: E731
    dfdx = jax.grad(f)

    d2fdx = jax.grad(dfdx)
    d3fdx = jax.grad(d2fdx)
    d4fdx = jax.grad(d3fdx)

    out["dfdx"], out["d2fdx"], out["d3fdx"], out["d4fdx"] = dfdx(1.), d2fdx(1.), d3fdx(1.), d4fdx(1.)

    key = jax.random.key(0)

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
    targets = jnp.array([True, True, False, True])

    # Training loss is the negative log-likelihood of the training examples.
    def loss(W, b):
        preds = predict(W, b, inputs)
        label_probs = preds * targets + (1 - preds) * (1 - targets)
        return -jnp.sum(jnp.log(label_probs))

    # Initialize random model coefficients
    key, W_key, b_key = jax.random.split(key, 3)
    W = jax.random.normal(W_key, (3,))
    b = jax.random.normal(b_key, ())

    # Differentiate `loss` with respect to the first positional argument:
    out["W_grad0"] = grad(loss, argnums=0)(W, b)
    # Since argnums=0 is the default, this does the same thing:
    out["W_grad"] = grad(loss)(W, b)
    # But you can choose different values too, and drop the keyword:
    out["b_grad1"] = grad(loss, 1)(W, b)
    # Including tuple values
    W_grad, b_grad = grad(loss, (0, 1))(W, b)
    out["W_grad_t"], out["b_grad_t"] = W_grad, b_grad

    def loss2(params_dict):
        preds = predict(params_dict['W'], params_dict['b'], inputs)
        label_probs = preds * targets + (1 - preds) * (1 - targets)
        return -jnp.sum(jnp.log(label_probs))

    d = grad(loss2)({'W': W, 'b': b})
    out["dict_W"], out["dict_b"] = d['W'], d['b']

    loss_value, Wb_grad = jax.value_and_grad(loss, (0, 1))(W, b)
    out["loss_value"], out["loss"] = loss_value, loss(W, b)
    out["Wb_grad_W"], out["Wb_grad_b"] = Wb_grad

    # Set a step size for finite differences calculations
    eps = 1e-4

    # Check b_grad with scalar finite differences
    out["b_grad_numerical"] = (loss(W, b + eps / 2.) - loss(W, b - eps / 2.)) / eps
    out["b_grad_autodiff"] = grad(loss, 1)(W, b)

    # Check W_grad with finite differences in a random direction
    key, subkey = jax.random.split(key)
    vec = jax.random.normal(subkey, W.shape)
    unitvec = vec / jnp.sqrt(jnp.vdot(vec, vec))
    out["W_grad_numerical"] = (loss(W + eps / 2. * unitvec, b) - loss(W - eps / 2. * unitvec, b)) / eps
    out["W_dirderiv_autodiff"] = jnp.vdot(grad(loss)(W, b), unitvec)

    check_grads(loss, (W, b), order=2)  # check up to 2nd order derivatives
    return out
