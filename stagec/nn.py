"""`stagec.nn`: activation functions and normalizers on top of `stagec.numpy`."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import lax
from . import numpy as snp
from .core import aval_of
from .numpy._base import _to_float


def relu(x: Any):
    """max(x, 0) (NaN propagates)."""
    (x,) = _to_float("relu", x) if aval_of(x).dtype == np.bool_ else snp._promote("relu", x)
    return snp.maximum(x, lax.full_like(x, 0))


def sigmoid(x: Any):
    """1 / (1 + exp(-x)), computed stably (StableHLO's logistic)."""
    (x,) = _to_float("sigmoid", x)
    return lax.logistic(x)


def softplus(x: Any):
    """log(1 + exp(x)) without overflow: logaddexp(x, 0)."""
    return snp.logaddexp(x, 0.0)


def silu(x: Any):
    (x,) = _to_float("silu", x)
    return lax.mul(x, lax.logistic(x))


swish = silu


def gelu(x: Any, approximate: bool = True):
    """Gaussian error linear unit; the tanh approximation by default (as JAX), exact (erf) otherwise."""
    (x,) = _to_float("gelu", x)
    c = lambda v: lax.full_like(x, v)
    if approximate:
        inner = lax.mul(c(math.sqrt(2 / math.pi)), lax.add(x, lax.mul(c(0.044715), lax.mul(x, lax.mul(x, x)))))
        return lax.mul(lax.mul(c(0.5), x), lax.add(c(1), lax.tanh(inner)))
    return lax.mul(lax.mul(c(0.5), x), lax.add(c(1), lax.erf(lax.div(x, c(math.sqrt(2))))))


def _max_shift(x, axis):
    """max over axis (kept), replaced by 0 where it is not finite (all -inf rows stay -inf, not NaN)."""
    m = snp.max(x, axis=axis, keepdims=True)
    return snp.where(snp.isfinite(m), m, lax.full_like(m, 0))


def logsumexp(a: Any, axis=None, b: Any = None, keepdims: bool = False, return_sign: bool = False):
    """log(sum(b * exp(a))) over `axis`, shifted by the max for stability."""
    if return_sign:
        raise NotImplementedError("logsumexp(return_sign=True) is not implemented")
    (a,) = _to_float("logsumexp", a)
    m = _max_shift(a, axis)
    e = snp.exp(snp.subtract(a, m))
    if b is not None:
        e = snp.multiply(e, b)
    s = snp.sum(e, axis=axis, keepdims=True)
    out = snp.add(snp.log(s), m)
    if not keepdims:
        out = snp.squeeze(out, axis=tuple(range(aval_of(a).ndim)) if axis is None else axis)
    return out


def softmax(x: Any, axis=-1):
    """exp(x) / sum(exp(x)) over `axis`, shifted by the max for stability."""
    (x,) = _to_float("softmax", x)
    e = snp.exp(snp.subtract(x, _max_shift(x, axis)))
    return snp.true_divide(e, snp.sum(e, axis=axis, keepdims=True))


def log_softmax(x: Any, axis=-1):
    """x - logsumexp(x) over `axis`."""
    (x,) = _to_float("log_softmax", x)
    shifted = snp.subtract(x, _max_shift(x, axis))
    return snp.subtract(shifted, snp.log(snp.sum(snp.exp(shifted), axis=axis, keepdims=True)))


def one_hot(x: Any, num_classes: int, dtype=None, axis: int = -1):
    """One-hot encoding of integer `x` with `num_classes` classes (out-of-range gives all zeros)."""
    x = snp.asarray(x) if isinstance(x, (list, tuple)) else x
    av = aval_of(x)
    classes = lax.broadcasted_iota(av.dtype, av.shape + (num_classes,), av.ndim)
    hot = lax.eq(lax.broadcast_in_dim(x, av.shape + (num_classes,), tuple(range(av.ndim))), classes)
    out = snp.astype(hot, dtype or snp.float32)
    return snp.moveaxis(out, -1, axis) if axis not in (-1, av.ndim) else out
