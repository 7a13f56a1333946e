"""Examples of the seed FAQ (../shared/seeds/faq.ko.rst) that do not need autodiff, run on stagec.
(The numerics examples -- log(exp(x)), log(sqrt(x)) -- are in test_passes.py; methods and donation in
test_jit.py.)"""
from __future__ import annotations

import numpy as np
import pytest

import stagec as jax
import stagec.numpy as jnp
from stagec import jit


def test_jit_changes_behaviour_of_impure_functions(capsys):
    def run(decorate):
        y = 0

        def impure_func(x):
            print("Inside:", y)
            return x + y

        f = jit(impure_func) if decorate else impure_func
        for y in range(3):
            print("Result:", f(y))

    run(False)
    assert capsys.readouterr().out == "Inside: 0\nResult: 0\nInside: 1\nResult: 2\nInside: 2\nResult: 4\n"
    run(True)
    assert capsys.readouterr().out == "Inside: 0\nResult: 0\nResult: 1\nResult: 2\n"


def test_where_guards_undefined_values():
    def my_log(x):
        return jnp.where(x > 0., jnp.log(x), 0.)

    def safe_for_grad_log(x):
        return jnp.log(jnp.where(x > 0., x, 1.))

    def my_log_or_y(x, y):
        return jnp.where(x > 0., jnp.log(jnp.where(x > 0., x, 1.)), y)

    for fn in (my_log, jit(my_log), safe_for_grad_log, jit(safe_for_grad_log)):
        assert float(fn(0.)) == 0.0
    assert float(jit(my_log_or_y)(0., 5.)) == 5.0
    assert float(jit(my_log_or_y)(np.e, 5.)) == pytest.approx(1.0)


def test_step_function_forward_values():
    def f(x):
        return (x > 0).astype(float)
    x = jnp.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    assert f"f(x)  = {f(x)}" == "f(x)  = [0. 0. 0. 1. 1.]"
    assert np.asarray(jit(f)(x)).tolist() == [0.0, 0.0, 0.0, 1.0, 1.0]


def test_data_placement():
    assert jnp.ones(3).devices() == {jax.devices()[0]}
    arr = jax.device_put(1, jax.devices()[0])
    assert arr.devices() == {jax.devices()[0]} and int(arr) == 1
    already = jnp.ones(2)
    assert jax.device_put(already) is already
    assert jax.device_put({"a": np.ones(2)})["a"].devices() == {jax.devices()[0]}


def test_benchmarking_example_small():
    def f(x):
        return x.T @ (x - x.mean(axis=0))
    x_np = np.arange(64, dtype=np.float32).reshape(8, 8) / 10
    x_jax = jax.device_put(x_np)
    f_jit = jax.jit(f)
    got = f_jit(x_jax).block_until_ready()
    np.testing.assert_allclose(np.asarray(got), f(x_np), rtol=1e-5, atol=1e-4)


def test_tracer_values_and_static_divide(capsys):
    def func(x):
        print(x)
        return jnp.cos(x)
    res = jax.jit(func)(0.)
    assert float(res) == 1.0
    assert capsys.readouterr().out == "Traced<ShapedArray(float32[], weak_type=True)>\n"

    def divide(x, y):
        return x / y if y >= 1. else 0.
    with pytest.raises(jax.errors.ConcretizationTypeError, match="argument 'y'"):
        jit(divide)(3., 2.)
    assert float(jit(divide, static_argnums=1)(3., 2.)) == 1.5
    assert float(jit(divide, static_argnums=1)(3., 0.5)) == 0.0


def test_tracer_type_and_numpy_conversion(capsys):
    @jax.jit
    def f(x):
        print(type(x))
        return x
    f(jnp.arange(5))
    assert capsys.readouterr().out == "<class 'stagec.core.Tracer'>\n"
    with pytest.raises(jax.errors.TracerArrayConversionError):
        jax.jit(lambda x: np.sum(np.asarray(x)))(jnp.arange(5))
