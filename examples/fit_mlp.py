"""Fit a small MLP to y = sin(3x) with plain gradient descent; the update step is `jit(grad(loss))`.

    python examples/fit_mlp.py
"""
import numpy as np

import stagec
import stagec.numpy as snp


def init(key: int, sizes=(1, 32, 32, 1)):
    rng = np.random.default_rng(key)
    return [(snp.array(rng.standard_normal((m, n)).astype(np.float32) / np.sqrt(m)), snp.zeros(n))
            for m, n in zip(sizes[:-1], sizes[1:])]


def predict(params, x):
    for w, b in params[:-1]:
        x = snp.tanh(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss(params, x, y):
    return snp.mean((predict(params, x) - y) ** 2)


@stagec.jit
def step(params, x, y, lr=0.05):
    value, grads = stagec.value_and_grad(loss)(params, x, y)
    return value, [(w - lr * gw, b - lr * gb) for (w, b), (gw, gb) in zip(params, grads)]


def main() -> None:
    x = snp.linspace(-1, 1, 128).reshape(128, 1)
    y = snp.sin(3 * x)
    params = init(0)
    for i in range(501):
        value, params = step(params, x, y)
        if i % 50 == 0:
            print(f"step {i:4d}  loss {float(value):.5f}")


if __name__ == "__main__":
    main()
