"""JAX's "Complex numbers and differentiation" (docs/complex-differentiation.md, the autodiff cookbook's last part):
its code cells in order, printed values returned (`check` returns what it prints; the vjp check asserts)."""
import jax.numpy as jnp
from jax import random, grad, jvp
from jax import vjp


def main():
    out = {}

    def check(seed):
        key = random.key(seed)

        # random coeffs for u and v
        key, subkey = random.split(key)
        a, b, c, d = random.uniform(subkey, (4,))

        def fun(z):
            x, y = jnp.real(z), jnp.imag(z)
            return u(x, y) + v(x, y) * 1j

        def u(x, y):
            return a * x + b * y

        def v(x, y):
            return c * x + d * y

        # primal point
        key, subkey = random.split(key)
        x, y = random.uniform(subkey, (2,))
        z = x + y * 1j

        # tangent vector
        key, subkey = random.split(key)
        c, d = random.uniform(subkey, (2,))
        z_dot = c + d * 1j

        # check jvp
        _, ans = jvp(fun, (z,), (z_dot,))
        expected = (grad(u, 0)(x, y) * c +
                    grad(u, 1)(x, y) * d +
                    grad(v, 0)(x, y) * c * 1j +
                    grad(v, 1)(x, y) * d * 1j)
        print(jnp.allclose(ans, expected))
        return jnp.allclose(ans, expected), ans

    out["jvp_check_0"], out["jvp_ans_0"] = check(0)
    out["jvp_check_1"], out["jvp_ans_1"] = check(1)
    out["jvp_check_2"], out["jvp_ans_2"] = check(2)

    def check(seed):
        key = random.key(seed)

        # random coeffs for u and v
        key, subkey = random.split(key)
        a, b, c, d = random.uniform(subkey, (4,))

        def fun(z):
            x, y = jnp.real(z), jnp.imag(z)
            return u(x, y) + v(x, y) * 1j

        def u(x, y):
            return a * x + b * y

        def v(x, y):
            return c * x + d * y

        # primal point
        key, subkey = random.split(key)
        x, y = random.uniform(subkey, (2,))
        z = x + y * 1j

        # cotangent vector
        key, subkey = random.split(key)
        c, d = random.uniform(subkey, (2,))
        z_bar = jnp.array(c + d * 1j)  # for dtype control

        # check vjp
        _, fun_vjp = vjp(fun, z)
        ans, = fun_vjp(z_bar)
        expected = (grad(u, 0)(x, y) * c +
                    grad(v, 0)(x, y) * (-d) +
                    grad(u, 1)(x, y) * c * (-1j) +
                    grad(v, 1)(x, y) * (-d) * (-1j))
        assert jnp.allclose(ans, expected, atol=1e-5, rtol=1e-5)
        return ans

    out["vjp_ans_0"], out["vjp_ans_1"], out["vjp_ans_2"] = check(0), check(1), check(2)

    def f(z):
        x, y = jnp.real(z), jnp.imag(z)
        return x**2 + y**2

    z = 3. + 4j
    out["grad_abs2"] = grad(f)(z)

    def f(z):
        return jnp.sin(z)

    z = 3. + 4j
    out["grad_sin"] = grad(f, holomorphic=True)(z)

    def f(z):
        return jnp.conjugate(z)

    z = 3. + 4j
    out["grad_conjugate"] = grad(f, holomorphic=True)(z)  # f is not actually holomorphic!

    A = jnp.array([[5.,    2.+3j,    5j],
                   [2.-3j,   7.,  1.+7j],
                   [-5j,  1.-7j,    12.]])

    def f(X):
        L = jnp.linalg.cholesky(X)
        return jnp.sum((L - jnp.sin(L))**2)

    out["grad_cholesky"] = grad(f, holomorphic=True)(A)
    return out
