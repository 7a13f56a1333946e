"""IREE 3.13's multi-use fusion (on at O2/O3) computed a pattern wrongly: a reduction result used twice, once by an
elementwise op whose result reaches another reduction (a log-softmax loss beside the softmax its gradient needs).
The backend materializes such a reduction's result first (`legalize.isolate_multi_use_reductions`); these results
were wrong before, silently."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec.legalize import isolate_multi_use_reductions

RNG = np.random.default_rng(9)


def lse_loss_and_reciprocal(np_, z):  # (8, 33): -1149.9 for -1052.4
    s = np_.sum(np_.exp(z), axis=1)
    return np_.sum(z - np_.log(s)[:, None]), 1.0 / s


def row_loss_and_sum(np_, z):  # (1000, 1000): rows 40% off
    s = np_.sum(np_.exp(z), axis=1)
    return np_.sum(z - np_.log(s)[:, None], axis=1), s


def row_loss_and_normalized(np_, z):
    s = np_.sum(np_.exp(z), axis=1)
    return np_.sum(z - np_.log(s)[:, None], axis=1), z / s[:, None]


@pytest.mark.parametrize("fn, shape", [(lse_loss_and_reciprocal, (8, 33)), (lse_loss_and_reciprocal, (64, 33)),
                                       (row_loss_and_sum, (1000, 1000)), (row_loss_and_normalized, (1000, 1000))])
def test_reduction_used_twice_then_reduced_again_is_right(fn, shape):
    z = RNG.standard_normal(shape).astype(np.float32)
    f = stagec.jit(lambda v: fn(snp, v))
    assert isolate_multi_use_reductions(f.lower(z).as_text("final")) is not None
    for got, want in zip(f(z), fn(np, z.astype(np.float64))):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4)


def test_value_and_grad_of_a_log_softmax_loss_is_right():
    # the loss came back -1130.64 (JAX: -1033.12) and its gradient 6.1 off
    z = RNG.standard_normal((8, 33)).astype(np.float32)
    loss, grad = stagec.jit(stagec.value_and_grad(lambda v: snp.sum(stagec.nn.log_softmax(v))))(z)
    zd = z.astype(np.float64)
    lse = np.log(np.exp(zd).sum(1, keepdims=True))
    np.testing.assert_allclose(float(loss), np.sum(zd - lse), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(grad), 1 - z.shape[1] * np.exp(zd - lse), rtol=1e-4, atol=1e-5)


def test_common_normalizations_are_left_alone():
    # layernorm is one dispatch with the fusion (8.8 -> 5.0 ms); softmax, log_softmax and their gradients do not hazard
    x = np.zeros((64, 128), np.float32)
    layernorm = lambda v: (v - v.mean(1, keepdims=True)) / snp.sqrt(v.var(1, keepdims=True) + 1e-5)
    for f in (layernorm, stagec.nn.softmax, stagec.nn.log_softmax, lambda v: stagec.nn.logsumexp(v, 1),
              stagec.grad(lambda v: snp.sum(layernorm(v) ** 3)),
              stagec.value_and_grad(lambda v: -snp.sum(stagec.nn.log_softmax(v)[:, 0]))):
        assert isolate_multi_use_reductions(stagec.jit(f).lower(x).as_text("final")) is None
