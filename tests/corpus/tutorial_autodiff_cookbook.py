"""JAX's "The Autodiff Cookbook" (docs/notebooks/autodiff_cookbook.md): its code cells in order up to "Jacobians
and Hessians using jacfwd and jacrev" as vmapped products (our_jacfwd); %timeit lines dropped, printed values
returned. (The complex-differentiation part that follows is tutorial_complex_differentiation.py.)"""
import jax.numpy as jnp
from jax import grad, jit, vmap  # noqa: F401 (the tutorial imports jit)
from jax import random
from jax import value_and_grad
from jax.test_util import check_grads
from jax import jacfwd, jacrev
from jax import jvp
from jax import vjp
from jax import jacrev as builtin_jacrev
from jax import jacfwd as builtin_jacfwd


def main():
    out = {}
    key = random.key(0)

    grad_tanh = grad(jnp.tanh)
    out["grad_tanh"] = grad_tanh(2.0)
    out["grad2_tanh"] = grad(grad(jnp.tanh))(2.0)
    out["grad3_tanh"] = grad(grad(grad(jnp.tanh)))(2.0)

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
    key, W_key, b_key = random.split(key, 3)
    W = random.normal(W_key, (3,))
    b = random.normal(b_key, ())

    out["W_grad0"] = grad(loss, argnums=0)(W, b)
    out["W_grad"] = grad(loss)(W, b)
    out["b_grad1"] = grad(loss, 1)(W, b)
    W_grad, b_grad = grad(loss, (0, 1))(W, b)
    out["W_grad_t"], out["b_grad_t"] = W_grad, b_grad

    def loss2(params_dict):
        preds = predict(params_dict['W'], params_dict['b'], inputs)
        label_probs = preds * targets + (1 - preds) * (1 - targets)
        return -jnp.sum(jnp.log(label_probs))

    d = grad(loss2)({'W': W, 'b': b})
    out["dict_W"], out["dict_b"] = d['W'], d['b']

    loss_value, Wb_grad = value_and_grad(loss, (0, 1))(W, b)
    out["loss_value"], out["loss"] = loss_value, loss(W, b)

    # Set a step size for finite differences calculations
    eps = 1e-4

    # Check b_grad with scalar finite differences
    out["b_grad_numerical"] = (loss(W, b + eps / 2.) - loss(W, b - eps / 2.)) / eps

    # Check W_grad with finite differences in a random direction
    key, subkey = random.split(key)
    vec = random.normal(subkey, W.shape)
    unitvec = vec / jnp.sqrt(jnp.vdot(vec, vec))
    out["W_grad_numerical"] = (loss(W + eps / 2. * unitvec, b) - loss(W - eps / 2. * unitvec, b)) / eps
    out["W_dirderiv_autodiff"] = jnp.vdot(grad(loss)(W, b), unitvec)

    check_grads(loss, (W, b), order=2)  # check up to 2nd order derivatives

    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    out["jacfwd"] = jacfwd(f)(W)
    out["jacrev"] = jacrev(f)(W)

    def predict_dict(params, inputs):
        return predict(params['W'], params['b'], inputs)

    J_dict = jacrev(predict_dict)({'W': W, 'b': b}, inputs)
    out["J_dict_W"], out["J_dict_b"] = J_dict['W'], J_dict['b']

    def hessian(f):
        return jacfwd(jacrev(f))

    out["hessian"] = hessian(f)(W)

    key, subkey = random.split(key)
    v = random.normal(subkey, W.shape)

    # Push forward the vector `v` along `f` evaluated at `W`
    y, u = jvp(f, (W,), (v,))
    out["jvp_y"], out["jvp_u"] = y, u

    y, vjp_fun = vjp(f, W)
    key, subkey = random.split(key)
    u = random.normal(subkey, y.shape)
    # Pull back the covector `u` along `f` evaluated at `W`
    out["vjp_v"] = vjp_fun(u)[0]

    def vgrad(f, x):
        y, vjp_fn = vjp(f, x)
        return vjp_fn(jnp.ones(y.shape))[0]

    out["vgrad"] = vgrad(lambda x: 3*x**2, jnp.ones((2, 2)))

    # forward-over-reverse
    def hvp(f, primals, tangents):
        return jvp(grad(f), primals, tangents)[1]

    def f(X):
        return jnp.sum(jnp.tanh(X)**2)

    key, subkey1, subkey2 = random.split(key, 3)
    # (3, 4) where the tutorial has (30, 40): any matrix shows the products agree, and eagerly the Hessian of a
    # 30x40 matrix (1.4M elements) costs eight kernel compiles where this one takes NumPy rules and shared kernels
    X = random.normal(subkey1, (3, 4))
    V = random.normal(subkey2, (3, 4))

    ans1 = hvp(f, (X,), (V,))
    ans2 = jnp.tensordot(hessian(f)(X), V, 2)
    out["hvp"], out["hvp_allclose"] = ans1, jnp.allclose(ans1, ans2, 1e-4, 1e-4)

    # reverse-over-forward
    def hvp_revfwd(f, primals, tangents):
        g = lambda primals: jvp(f, primals, tangents)[1]
        return grad(g)(primals)

    # reverse-over-reverse, only works for single arguments
    def hvp_revrev(f, primals, tangents):
        x, = primals
        v, = tangents
        return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)

    out["hvp_revfwd"] = hvp_revfwd(f, (X,), (V,))[0]
    out["hvp_revrev"] = hvp_revrev(f, (X,), (V,))

    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    def loop_mjp(f, x, M):
        y, vjp_fun = vjp(f, x)
        return jnp.vstack([jnp.asarray(vjp_fun(mi)) for mi in M])

    def vmap_mjp(f, x, M):
        y, vjp_fun = vjp(f, x)
        outs, = vmap(vjp_fun)(M)
        return outs

    key = random.key(0)
    num_covecs = 128
    U = random.normal(key, (num_covecs,) + y.shape)

    loop_vs = loop_mjp(f, W, M=U)
    vmap_vs = vmap_mjp(f, W, M=U)
    assert jnp.allclose(loop_vs, vmap_vs), 'Vmap and non-vmapped Matrix-Jacobian Products should be identical'
    out["mjp"] = vmap_vs

    def loop_jmp(f, W, M):
        # jvp immediately returns the primal and tangent values as a tuple,
        # so we'll compute and select the tangents in a list comprehension
        return jnp.vstack([jvp(f, (W,), (mi,))[1] for mi in M])

    def vmap_jmp(f, W, M):
        _jvp = lambda s: jvp(f, (W,), (s,))[1]
        return vmap(_jvp)(M)

    num_vecs = 128
    S = random.normal(key, (num_vecs,) + W.shape)

    loop_vs = loop_jmp(f, W, M=S)
    vmap_vs = vmap_jmp(f, W, M=S)
    assert jnp.allclose(loop_vs, vmap_vs), 'Vmap and non-vmapped Jacobian-Matrix products should be identical'
    out["jmp"] = vmap_vs

    def our_jacrev(f):
        def jacfun(x):
            y, vjp_fun = vjp(f, x)
            J, = vmap(vjp_fun, in_axes=0)(jnp.eye(len(y)))
            return J
        return jacfun

    assert jnp.allclose(builtin_jacrev(f)(W), our_jacrev(f)(W)), 'Incorrect reverse-mode Jacobian results!'

    def our_jacfwd(f):
        def jacfun(x):
            _jvp = lambda s: jvp(f, (x,), (s,))[1]
            Jt = vmap(_jvp, in_axes=1)(jnp.eye(len(x)))
            return jnp.transpose(Jt)
        return jacfun

    assert jnp.allclose(builtin_jacfwd(f)(W), our_jacfwd(f)(W)), 'Incorrect forward-mode Jacobian results!'
    out["our_jacfwd"] = our_jacfwd(f)(W)
    return out
