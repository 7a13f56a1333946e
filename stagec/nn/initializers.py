"""`stagec.nn.initializers` (as `jax.nn.initializers`): functions `init(key, shape, dtype)` that draw parameter
arrays, with JAX's formulas and `stagec.random`'s draws (so JAX's numbers for the same key)."""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from .. import dtypes
from .. import numpy as snp
from .. import random

Initializer = Callable


def _dtype(dtype) -> np.dtype:
    """`dtype`, or where None the default float (float64 under x64), read when the initializer is called (JAX's)."""
    return dtypes.default_float() if dtype is None else np.dtype(dtype)


def zeros(key, shape, dtype=None):
    return snp.zeros(shape, _dtype(dtype))


def ones(key, shape, dtype=None):
    return snp.ones(shape, _dtype(dtype))


def constant(value, dtype=None) -> Initializer:
    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        return snp.full(shape, value, dtype)
    return init


def uniform(scale=1e-2, dtype=None) -> Initializer:
    """Uniform on [0, scale)."""
    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        return random.uniform(key, shape, dtype) * snp.array(scale, dtype)
    return init


def normal(stddev=1e-2, dtype=None) -> Initializer:
    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        return random.normal(key, shape, dtype) * snp.array(stddev, dtype)
    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0) -> Initializer:
    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        return random.truncated_normal(key, lower, upper, shape, dtype) * snp.array(stddev, dtype)
    return init


def _compute_fans(shape: Sequence[int], in_axis=-2, out_axis=-1, batch_axis=()) -> tuple[float, float]:
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional weights tensor with "
                         f"default in_axis. Must be at least 2D or specify in_axis explicitly.")
    size = lambda ax: shape[ax] if isinstance(ax, int) else math.prod(shape[i] for i in ax)
    in_size, out_size, batch = size(in_axis), size(out_axis), size(batch_axis)
    field = math.prod(shape) / in_size / out_size / batch
    return in_size * field, out_size * field


def variance_scaling(scale, mode: str, distribution: str, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=None) -> Initializer:
    """Draws with variance `scale / n`, n the fan in, out, their mean ('fan_avg') or geometric mean
    ('fan_geo_avg'); `distribution`: 'truncated_normal', 'normal' or 'uniform' (real dtypes)."""
    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        shape = tuple(int(d) for d in shape)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        den = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
               "fan_geo_avg": (fan_in * fan_out) ** 0.5}.get(mode)
        if den is None:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
        if dtype.kind == "c":
            raise NotImplementedError("variance_scaling of complex dtypes is not implemented")
        variance = snp.array(scale / den, dtype)
        if distribution == "truncated_normal":
            stddev = snp.sqrt(variance) / snp.array(.87962566103423978, dtype)
            return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype) * snp.sqrt(variance)
        if distribution == "uniform":
            return random.uniform(key, shape, dtype, -1) * snp.sqrt(3 * variance)
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")
    return init


def _named(scale, mode, distribution):
    def make(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis, dtype)
    return make


glorot_uniform = xavier_uniform = _named(1.0, "fan_avg", "uniform")
glorot_normal = xavier_normal = _named(1.0, "fan_avg", "truncated_normal")
lecun_uniform = _named(1.0, "fan_in", "uniform")
lecun_normal = _named(1.0, "fan_in", "truncated_normal")
he_uniform = kaiming_uniform = _named(2.0, "fan_in", "uniform")
he_normal = kaiming_normal = _named(2.0, "fan_in", "truncated_normal")


def orthogonal(scale=1.0, column_axis: int = -1, dtype=None) -> Initializer:
    """A (scaled) orthogonal matrix along `column_axis` and the flattened other axes (JAX's construction)."""
    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a two dimensional shape.")
        n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
        matrix_shape = (n_cols, n_rows) if n_rows < n_cols else (n_rows, n_cols)
        A = random.normal(key, matrix_shape, dtype)
        Q, R = snp.linalg.qr(A)
        diag_sign = snp.sign(snp.diagonal(R))
        Q = Q * diag_sign
        if n_rows < n_cols:
            Q = Q.T
        Q = snp.reshape(Q, tuple(np.delete(shape, column_axis)) + (shape[column_axis],))
        Q = snp.moveaxis(Q, -1, column_axis)
        return scale * Q
    return init


def delta_orthogonal(scale=1.0, column_axis: int = -1, dtype=None) -> Initializer:
    """A convolution kernel that is an orthogonal matrix at its spatial center and zero elsewhere (3-5 dims)."""
    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        W = snp.zeros(shape, dtype)
        center = tuple(d // 2 for d in shape[:-2])
        return W.at[center].set(ortho)
    return init
