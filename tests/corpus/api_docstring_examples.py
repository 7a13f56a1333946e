"""The examples in JAX's docstrings (jax.numpy, jax.nn, jax.lax, jax.scipy.special; jax/_src/**/*.py at
github.com/jax-ml/jax, as rendered at docs.jax.dev) of every function not in numpy_docstring_examples.py: each
example's statements in order, each value it prints recorded. Generated from JAX 0.10.2's docstrings with doctest's
parser. Left out: functions stagec lacks with a NotInStagec error (docs/jax-differences.md: polynomials, histograms,
set operations, packbits, partition, put, frexp, lax's collectives, scatter/gather objects, ...); take and
take_along_axis (their examples read out of bounds with a concrete index: stagec raises, docs/jax-differences.md);
functions whose examples use arguments stagec rejects with a TypeError or NotImplementedError (`shape=` of the
`*_like` creators, `weights=` of quantile/percentile, `inplace=` of place, pad's "mean" mode, einsum's operand-list
form, insert at several indices, vectorize's signature=, lax.reduce_window's default strides); and the examples
whose doctest names are not defined in them, and jnp.save / jnp.savez (NumPy writing files). Two values are
dropped (DROPPED): arctan(sin/cos) at +-pi/2, where cos's rounding near its zero picks the sign of +-inf, and
signbit of -NaN (stagec has no bitcast to read a NaN's sign bit: docs/jax-differences.md)."""
import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
import jax.scipy.special

DROPPED = ("arctan2.3.0", "signbit.7")


def _rec(out, key, value):
    """`value`'s arrays (a tuple's, each) under `key`; printed strings are left out (formatting differs)."""
    if value is None or isinstance(value, str):
        return
    leaves = jax.tree.leaves(value)
    for j, leaf in enumerate(leaves):
        a = np.asarray(leaf)
        out[key if len(leaves) == 1 else f"{key}.{j}"] = np.array(str(leaf)) if a.dtype == object else a


def _raises(out, key, thunk):
    """Whether an example shown raising raised."""
    try:
        thunk()
    except Exception:
        out[key] = np.array(True)
    else:
        out[key] = np.array(False)


def absolute(out):
    """`jnp.absolute`'s examples."""
    x1 = jnp.array([5, -2, 0, 12])
    _rec(out, 'absolute.1', jnp.absolute(x1))
    x2 = jnp.array([[ 8, -3, 1],[ 0, 9, -6]])
    _rec(out, 'absolute.3', jnp.absolute(x2))
    x3 = jnp.array([8 + 15j, 3 - 4j, -5 + 0j])
    _rec(out, 'absolute.5', jnp.absolute(x3))


def add(out):
    """`jnp.add`'s examples."""
    x = jnp.arange(4)
    _rec(out, 'add.1', jnp.add(x, 10))
    _rec(out, 'add.2', x + 10)


def all(out):
    """`jnp.all`'s examples."""
    x = jnp.array([[True, True, True, False],
                   [True, False, True, False],
                   [True, True, False, False]])
    _rec(out, 'all.1', jnp.all(x))
    _rec(out, 'all.2', jnp.all(x, axis=0))
    _rec(out, 'all.3', jnp.all(x, axis=0, keepdims=True))
    where=jnp.array([[1, 0, 1, 0],
                     [0, 0, 1, 1],
                     [1, 1, 1, 0]], dtype=bool)
    _rec(out, 'all.5', jnp.all(x, axis=0, keepdims=True, where=where))


def allclose(out):
    """`jnp.allclose`'s examples."""
    _rec(out, 'allclose.0', jnp.allclose(jnp.array([1000000.0, 2000000.0, 3000000.0]), jnp.array([1000000.0, 2000000.0, 30000000.0])))
    _rec(out, 'allclose.1', jnp.allclose(jnp.array([1000000.0, 2000000.0, 3000000.0]), jnp.array([1000080.0, 20000800.0, 300008000.0]), rtol=1000.0))
    _rec(out, 'allclose.2', jnp.allclose(jnp.array([1000000.0, 2000000.0, 3000000.0]), jnp.array([1000010.0, 2000020.0, 3000090.0]), atol=1000.0))
    _rec(out, 'allclose.3', jnp.allclose(jnp.array([jnp.nan, 1, 2]), jnp.array([jnp.nan, 1, 2]), equal_nan=True))


def angle(out):
    """`jnp.angle`'s examples."""
    z1 = 2+3j
    _rec(out, 'angle.1', jnp.angle(z1))
    z2 = jnp.array([[1+3j, 2-5j],
                    [4-3j, 3+2j]])
    _rec(out, 'angle.3.0', jnp.angle(z2))
    _rec(out, 'angle.4.0', jnp.angle(z2, deg=True))


def any(out):
    """`jnp.any`'s examples."""
    x = jnp.array([[True, True, True, False],
                   [True, False, True, False],
                   [True, True, False, False]])
    _rec(out, 'any.1', jnp.any(x))
    _rec(out, 'any.2', jnp.any(x, axis=0))
    _rec(out, 'any.3', jnp.any(x, axis=0, keepdims=True))
    where=jnp.array([[1, 0, 1, 0],
                     [0, 1, 0, 1],
                     [1, 0, 1, 0]], dtype=bool)
    _rec(out, 'any.5', jnp.any(x, axis=0, keepdims=True, where=where))


def append(out):
    """`jnp.append`'s examples."""
    a = jnp.array([1, 2, 3])
    b = jnp.array([4, 5, 6])
    _rec(out, 'append.2', jnp.append(a, b))
    a = jnp.array([[1, 2],
                   [3, 4]])
    b = jnp.array([[5, 6]])
    _rec(out, 'append.5', jnp.append(a, b, axis=0))
    a = jnp.array([[1, 2, 3],
                   [4, 5, 6]])
    b = jnp.array([[7], [8]])
    _rec(out, 'append.8', jnp.append(a, b, axis=1))


def apply_along_axis(out):
    """`jnp.apply_along_axis`'s examples."""
    x = jnp.array([[1, 2, 3],
                   [4, 5, 6]])
    def func1d(x):
      return jnp.sum(x ** 2)
    _rec(out, 'apply_along_axis.2', jnp.apply_along_axis(func1d, 0, x))
    _rec(out, 'apply_along_axis.3', jnp.apply_along_axis(func1d, 1, x))
    _rec(out, 'apply_along_axis.4', jax.vmap(func1d, in_axes=1)(x))
    _rec(out, 'apply_along_axis.5', jax.vmap(func1d, in_axes=0)(x))
    x_3d = jnp.arange(24).reshape(2, 3, 4)
    _rec(out, 'apply_along_axis.7', jnp.apply_along_axis(func1d, 2, x_3d))
    _rec(out, 'apply_along_axis.8', jax.vmap(jax.vmap(func1d))(x_3d))
    def func1d(x, exponent):
      return jnp.sum(x ** exponent)
    _rec(out, 'apply_along_axis.10', jnp.apply_along_axis(func1d, 0, x, exponent=3))


def arange(out):
    """`jnp.arange`'s examples."""
    _rec(out, 'arange.0', jnp.arange(4))
    _rec(out, 'arange.1', jnp.arange(4.0))
    _rec(out, 'arange.2', jnp.arange(1, 6))
    _rec(out, 'arange.3', jnp.arange(0, 2, 0.5))


def arccos(out):
    """`jnp.arccos`'s examples."""
    x = jnp.array([-2, -1, -0.5, 0, 0.5, 1, 2])
    _rec(out, 'arccos.1.0', jnp.arccos(x))
    _rec(out, 'arccos.2.0', jnp.arccos(4 - 1j))


def arccosh(out):
    """`jnp.arccosh`'s examples."""
    x = jnp.array([[1, 3, -4],
                   [-5, 2, 7]])
    _rec(out, 'arccosh.1.0', jnp.arccosh(x))
    x1 = jnp.array([-jnp.inf+0j, 1+2j, -5+0j])
    _rec(out, 'arccosh.3.0', jnp.arccosh(x1))


def arcsin(out):
    """`jnp.arcsin`'s examples."""
    x = jnp.array([-2, -1, -0.5, 0, 0.5, 1, 2])
    _rec(out, 'arcsin.1.0', jnp.arcsin(x))
    _rec(out, 'arcsin.2.0', jnp.arcsin(3 + 4j))


def arcsinh(out):
    """`jnp.arcsinh`'s examples."""
    x = jnp.array([[-2, 3, 1],
                   [4, 9, -5]])
    _rec(out, 'arcsinh.1.0', jnp.arcsinh(x))
    x1 = jnp.array([4-3j, 2j])
    _rec(out, 'arcsinh.3.0', jnp.arcsinh(x1))


def arctan(out):
    """`jnp.arctan`'s examples."""
    x = jnp.array([-jnp.inf, -20, -1, 0, 1, 20, jnp.inf])
    _rec(out, 'arctan.1.0', jnp.arctan(x))
    _rec(out, 'arctan.2.0', jnp.arctan(2 + 7j))


def arctan2(out):
    """`jnp.arctan2`'s examples."""
    theta = jnp.linspace(-jnp.pi, jnp.pi, 9)
    _rec(out, 'arctan2.1.0', theta)
    x, y = jnp.cos(theta), jnp.sin(theta)
    _rec(out, 'arctan2.3.0', jnp.arctan(y / x))
    _rec(out, 'arctan2.4.0', jnp.arctan2(y, x))


def arctanh(out):
    """`jnp.arctanh`'s examples."""
    x = jnp.array([-2, -1, -0.5, 0, 0.5, 1, 2])
    _rec(out, 'arctanh.1.0', jnp.arctanh(x))
    x1 = jnp.array([-2+0j, 3+0j, 4-1j])
    _rec(out, 'arctanh.3.0', jnp.arctanh(x1))


def argmax(out):
    """`jnp.argmax`'s examples."""
    x = jnp.array([1, 3, 5, 4, 2])
    _rec(out, 'argmax.1', jnp.argmax(x))
    x = jnp.array([[1, 3, 2],
                   [5, 4, 1]])
    _rec(out, 'argmax.3', jnp.argmax(x, axis=1))
    _rec(out, 'argmax.4', jnp.argmax(x, axis=1, keepdims=True))


def argmin(out):
    """`jnp.argmin`'s examples."""
    x = jnp.array([1, 3, 5, 4, 2])
    _rec(out, 'argmin.1', jnp.argmin(x))
    x = jnp.array([[1, 3, 2],
                   [5, 4, 1]])
    _rec(out, 'argmin.3', jnp.argmin(x, axis=1))
    _rec(out, 'argmin.4', jnp.argmin(x, axis=1, keepdims=True))


def argwhere(out):
    """`jnp.argwhere`'s examples."""
    x = jnp.array([[1, 0, 2],
                   [0, 3, 0]])
    _rec(out, 'argwhere.1', jnp.argwhere(x))
    _rec(out, 'argwhere.2', jnp.column_stack(jnp.nonzero(x)))
    _rec(out, 'argwhere.3', jnp.argwhere(1))
    _rec(out, 'argwhere.4', jnp.argwhere(0))


def array(out):
    """`jnp.array`'s examples."""
    _rec(out, 'array.0', jnp.array(True))
    _rec(out, 'array.1', jnp.array(42))
    _rec(out, 'array.2', jnp.array(3.5))
    _rec(out, 'array.3', jnp.array(1 + 1j))
    _rec(out, 'array.4', jnp.array([1, 2, 3]))
    _rec(out, 'array.5', jnp.array([(1, 2, 3), (4, 5, 6)]))
    _rec(out, 'array.6', jnp.array(range(5)))
    _rec(out, 'array.7', jnp.array(np.linspace(0, 2, 5)))
    from array import array
    pybuffer = array('i', [2, 3, 5, 7])
    _rec(out, 'array.10', jnp.array(pybuffer))


def array_equal(out):
    """`jnp.array_equal`'s examples."""
    _rec(out, 'array_equal.0', jnp.array_equal(jnp.array([1, 2, 3]), jnp.array([1, 2, 3])))
    _rec(out, 'array_equal.1', jnp.array_equal(jnp.array([1, 2, 3]), jnp.array([1, 2])))
    _rec(out, 'array_equal.2', jnp.array_equal(jnp.array([1, 2, 3]), jnp.array([1, 2, 4])))
    _rec(out, 'array_equal.3', jnp.array_equal(jnp.array([1, 2, float('nan')]), jnp.array([1, 2, float('nan')])))
    _rec(out, 'array_equal.4', jnp.array_equal(jnp.array([1, 2, float('nan')]), jnp.array([1, 2, float('nan')]), equal_nan=True))


def array_equiv(out):
    """`jnp.array_equiv`'s examples."""
    _rec(out, 'array_equiv.0', jnp.array_equiv(jnp.array([1, 2, 3]), jnp.array([1, 2, 3])))
    _rec(out, 'array_equiv.1', jnp.array_equiv(jnp.array([1, 2, 3]), jnp.array([1, 2, 4])))
    _rec(out, 'array_equiv.2', jnp.array_equiv(jnp.array([[1, 2, 3], [1, 2, 3]]), jnp.array([1, 2, 3])))


def array_repr(out):
    """`jnp.array_repr`'s examples."""
    import numpy as np
    _rec(out, 'array_repr.1', np.array_repr(np.array([1, 2])))
    _rec(out, 'array_repr.2', np.array_repr(np.ma.array([0.0])))
    _rec(out, 'array_repr.3', np.array_repr(np.array([], np.int32)))
    x = np.array([1e-6, 4e-7, 2, 3])
    _rec(out, 'array_repr.5', np.array_repr(x, precision=6, suppress_small=True))


def array_str(out):
    """`jnp.array_str`'s examples."""
    import numpy as np
    _rec(out, 'array_str.1', np.array_str(np.arange(3)))


def asarray(out):
    """`jnp.asarray`'s examples."""
    _rec(out, 'asarray.0', jnp.asarray(True))
    _rec(out, 'asarray.1', jnp.asarray(42))
    _rec(out, 'asarray.2', jnp.asarray(3.5))
    _rec(out, 'asarray.3', jnp.asarray(1 + 1j))
    _rec(out, 'asarray.4', jnp.asarray([1, 2, 3]))
    _rec(out, 'asarray.5', jnp.asarray([(1, 2, 3), (4, 5, 6)]))
    _rec(out, 'asarray.6', jnp.asarray(range(5)))
    _rec(out, 'asarray.7', jnp.asarray(np.linspace(0, 2, 5)))
    from array import array
    pybuffer = array('i', [2, 3, 5, 7])
    _rec(out, 'asarray.10', jnp.asarray(pybuffer))


def atleast_1d(out):
    """`jnp.atleast_1d`'s examples."""
    x = jnp.float32(1.0)
    _rec(out, 'atleast_1d.1', jnp.atleast_1d(x))
    y = jnp.arange(4)
    _rec(out, 'atleast_1d.3', jnp.atleast_1d(y))
    _rec(out, 'atleast_1d.4', jnp.atleast_1d(x, y))


def atleast_2d(out):
    """`jnp.atleast_2d`'s examples."""
    x = jnp.float32(1.0)
    _rec(out, 'atleast_2d.1', jnp.atleast_2d(x))
    y = jnp.arange(4)
    _rec(out, 'atleast_2d.3', jnp.atleast_2d(y))
    z = jnp.ones((2, 3))
    _rec(out, 'atleast_2d.5', jnp.atleast_2d(z))
    _rec(out, 'atleast_2d.6', jnp.atleast_2d(x, y))


def atleast_3d(out):
    """`jnp.atleast_3d`'s examples."""
    x = jnp.float32(1.0)
    _rec(out, 'atleast_3d.1', jnp.atleast_3d(x))
    y = jnp.arange(4)
    _rec(out, 'atleast_3d.3', jnp.atleast_3d(y).shape)
    z = jnp.ones((2, 3))
    _rec(out, 'atleast_3d.5', jnp.atleast_3d(z).shape)
    x3, y3 = jnp.atleast_3d(x, y)
    _rec(out, 'atleast_3d.7.0', x3)
    _rec(out, 'atleast_3d.8.0', y3)


def average(out):
    """`jnp.average`'s examples."""
    x = jnp.array([1, 2, 3, 2, 4])
    _rec(out, 'average.1', jnp.average(x))
    weights = jnp.array([2, 1, 3, 2, 2])
    _rec(out, 'average.3', jnp.average(x, weights=weights))
    _rec(out, 'average.4', jnp.average(x, returned=True))
    _rec(out, 'average.5', jnp.average(x, weights=weights, returned=True))
    x = jnp.array([[8, 2, 7],
                   [3, 6, 4]])
    weights = jnp.array([1, 2, 3])
    _rec(out, 'average.8', jnp.average(x, weights=weights, axis=1))


def bartlett(out):
    """`jnp.bartlett`'s examples."""
    _rec(out, 'bartlett.0.0', jnp.bartlett(4))


def bitwise_or(out):
    """`jnp.bitwise_or`'s examples."""
    x = jnp.arange(4)
    _rec(out, 'bitwise_or.1', jnp.bitwise_or(x, 1))
    _rec(out, 'bitwise_or.2', x | 1)


def bitwise_xor(out):
    """`jnp.bitwise_xor`'s examples."""
    x = jnp.arange(4)
    _rec(out, 'bitwise_xor.1', jnp.bitwise_xor(x, 1))
    _rec(out, 'bitwise_xor.2', x ^ 1)


def blackman(out):
    """`jnp.blackman`'s examples."""
    _rec(out, 'blackman.0.0', jnp.blackman(4))


def block(out):
    """`jnp.block`'s examples."""
    zeros = jnp.zeros((2, 2))
    ones = jnp.ones((2, 2))
    twos = jnp.full((2, 2), 2)
    threes = jnp.full((2, 2), 3)
    _rec(out, 'block.4', jnp.block(zeros))
    _rec(out, 'block.5', jnp.block([zeros, ones]))
    _rec(out, 'block.6', jnp.block([[zeros, ones], [twos, threes]]))
    a = jnp.zeros((2, 1))
    b = jnp.ones((2, 3))
    c = jnp.full((1, 2), 2)
    d = jnp.full((1, 2), 3)
    _rec(out, 'block.11', jnp.block([[a, b], [c, d]]))
    x = jnp.arange(6).reshape((1, 2, 3))
    blocks = [[[x for i in range(3)] for j in range(4)] for k in range(5)]
    _rec(out, 'block.14', jnp.block(blocks).shape)


def broadcast_arrays(out):
    """`jnp.broadcast_arrays`'s examples."""
    x = jnp.arange(3)
    y = jnp.int32(1)
    _rec(out, 'broadcast_arrays.2', jnp.broadcast_arrays(x, y))
    x = jnp.array([[1, 2, 3]])
    y = jnp.array([[10],
                   [20]])
    x2, y2 = jnp.broadcast_arrays(x, y)
    _rec(out, 'broadcast_arrays.6', x2)
    _rec(out, 'broadcast_arrays.7', y2)


def broadcast_shapes(out):
    """`jnp.broadcast_shapes`'s examples."""
    _rec(out, 'broadcast_shapes.0', jnp.broadcast_shapes((1,), (4,)))
    _rec(out, 'broadcast_shapes.1', jnp.broadcast_shapes((3, 1), (4,)))
    _rec(out, 'broadcast_shapes.2', jnp.broadcast_shapes((3, 1), (1, 4), (5, 1, 1)))
    _raises(out, 'broadcast_shapes.3', lambda: jnp.broadcast_shapes((3, 1), (4, 1)))


def broadcast_to(out):
    """`jnp.broadcast_to`'s examples."""
    x = jnp.int32(1)
    _rec(out, 'broadcast_to.1', jnp.broadcast_to(x, (1, 4)))
    x = jnp.array([1, 2, 3])
    _rec(out, 'broadcast_to.3', jnp.broadcast_to(x, (2, 3)))
    x = jnp.array([[2], [4]])
    _rec(out, 'broadcast_to.5', jnp.broadcast_to(x, (2, 4)))


def can_cast(out):
    """`jnp.can_cast`'s examples."""
    import numpy as np
    _rec(out, 'can_cast.1', np.can_cast(np.int32, np.int64))
    _rec(out, 'can_cast.2', np.can_cast(np.float64, complex))
    _rec(out, 'can_cast.3', np.can_cast(complex, float))
    _rec(out, 'can_cast.4', np.can_cast('i8', 'f8'))
    _rec(out, 'can_cast.5', np.can_cast('i8', 'f4'))
    _rec(out, 'can_cast.6', np.can_cast('i4', 'S4'))


def cbrt(out):
    """`jnp.cbrt`'s examples."""
    x = jnp.array([[216, 125, 64],
                   [-27, -8, -1]])
    _rec(out, 'cbrt.1.0', jnp.cbrt(x))


def ceil(out):
    """`jnp.ceil`'s examples."""
    key = jax.random.key(1)
    x = jax.random.uniform(key, (3, 3), minval=-5, maxval=5)
    _rec(out, 'ceil.2.0', x)
    _rec(out, 'ceil.3', jnp.ceil(x))


def choose(out):
    """`jnp.choose`'s examples."""
    choices = jnp.array([[ 1,  2,  3,  4],
                         [ 5,  6,  7,  8],
                         [ 9, 10, 11, 12]])
    a = jnp.array([2, 0, 1, 0])
    _rec(out, 'choose.2', jnp.choose(a, choices))
    a2 = jnp.array([2, 0, 1, 4])  # last index out-of-bound
    _rec(out, 'choose.4', jnp.choose(a2, choices, mode='clip'))
    _rec(out, 'choose.5', jnp.choose(a2, choices, mode='wrap'))
    choice_1 = jnp.array([1, 2, 3, 4])
    choice_2 = 99
    choice_3 = jnp.array([[10],
                          [20],
                          [30]])
    a = jnp.array([[0, 1, 2, 0],
                   [1, 2, 0, 1],
                   [2, 0, 1, 2]])
    _rec(out, 'choose.10', jnp.choose(a, [choice_1, choice_2, choice_3], mode='wrap'))


def clip(out):
    """`jnp.clip`'s examples."""
    arr = jnp.array([0, 1, 2, 3, 4, 5, 6, 7])
    _rec(out, 'clip.1', jnp.clip(arr, 2, 5))


def column_stack(out):
    """`jnp.column_stack`'s examples."""
    _rec(out, 'column_stack.0', jnp.column_stack([1, 2, 3]))
    x = jnp.arange(3)
    y = jnp.ones(3)
    _rec(out, 'column_stack.3', jnp.column_stack([x, y]))
    x = x.reshape(3, 1)
    y = y.reshape(3, 1)
    _rec(out, 'column_stack.6', jnp.column_stack([x, y]))


def concat(out):
    """`jnp.concat`'s examples."""
    x = jnp.arange(3)
    y = jnp.zeros(3, dtype=int)
    _rec(out, 'concat.2', jnp.concat([x, y]))
    x = jnp.ones((2, 3))
    y = jnp.zeros((2, 1))
    _rec(out, 'concat.5', jnp.concat([x, y], axis=1))


def concatenate(out):
    """`jnp.concatenate`'s examples."""
    x = jnp.arange(3)
    y = jnp.zeros(3, dtype=int)
    _rec(out, 'concatenate.2', jnp.concatenate([x, y]))
    x = jnp.ones((2, 3))
    y = jnp.zeros((2, 1))
    _rec(out, 'concatenate.5', jnp.concatenate([x, y], axis=1))


def conjugate(out):
    """`jnp.conjugate`'s examples."""
    _rec(out, 'conjugate.0', jnp.conjugate(3))
    x = jnp.array([2-1j, 3+5j, 7])
    _rec(out, 'conjugate.2', jnp.conjugate(x))


def copy(out):
    """`jnp.copy`'s examples."""
    f = jax.jit(lambda x: 2 * x, donate_argnums=0)
    x = jnp.arange(4)
    y = f(x)
    _rec(out, 'copy.3.0', y)
    _raises(out, 'copy.4', lambda: print(x))
    x = jnp.arange(4)
    y = f(x.copy())
    _rec(out, 'copy.7.0', y)
    _rec(out, 'copy.8.0', x)


def copysign(out):
    """`jnp.copysign`'s examples."""
    x1 = jnp.array([5, 2, 0])
    x2 = -1
    _rec(out, 'copysign.2', jnp.copysign(x1, x2))
    x1 = jnp.array([6, 8, 0])
    x2 = 2
    _rec(out, 'copysign.5', jnp.copysign(x1, x2))
    x1 = jnp.array([2, -3])
    x2 = jnp.array([[1],[-4], [5]])
    _rec(out, 'copysign.8', jnp.copysign(x1, x2))


def corrcoef(out):
    """`jnp.corrcoef`'s examples."""
    x = jnp.array([[0, 1, 2],
                   [0, 1, 2]])
    _rec(out, 'corrcoef.1', jnp.corrcoef(x))
    x = jnp.array([[-1,  0,  1],
                   [ 1,  0, -1]])
    _rec(out, 'corrcoef.3', jnp.corrcoef(x))
    x = jnp.array([-1, 0, 1])
    y = jnp.array([1, 0, -1])
    _rec(out, 'corrcoef.6', jnp.corrcoef(x, y))
    key = jax.random.key(0)
    x = jax.random.normal(key, shape=(3, 100))
    _rec(out, 'corrcoef.9.0', jnp.corrcoef(x))


def correlate(out):
    """`jnp.correlate`'s examples."""
    x = jnp.array([1, 2, 3, 2, 1])
    y = jnp.array([4, 5, 6])
    _rec(out, 'correlate.2', jnp.correlate(x, y))
    _rec(out, 'correlate.3', jnp.correlate(x, y, mode='full'))
    _rec(out, 'correlate.4', jnp.correlate(x, y, mode='same'))
    x1 = jnp.array([1, 2, 3, 2, 1])
    y1 = jnp.array([4, 5, 4])
    _rec(out, 'correlate.7', jnp.correlate(x1, y1, mode='full'))
    _rec(out, 'correlate.8', jnp.convolve(x1, y1, mode='full'))
    x2 = jnp.array([3+1j, 2, 2-3j])
    y2 = jnp.array([4, 2-5j, 1])
    _rec(out, 'correlate.11', jnp.correlate(x2, y2, mode='full'))


def cos(out):
    """`jnp.cos`'s examples."""
    pi = jnp.pi
    x = jnp.array([pi/4, pi/2, 3*pi/4, 5*pi/6])
    _rec(out, 'cos.2.0', jnp.cos(x))


def cosh(out):
    """`jnp.cosh`'s examples."""
    x = jnp.array([[3, -1, 0],
                   [4, 7, -5]])
    _rec(out, 'cosh.1.0', jnp.cosh(x))
    _rec(out, 'cosh.2.0', jnp.cos(1j * x))
    _rec(out, 'cosh.3.0', jnp.cosh(5 + 1j))
    _rec(out, 'cosh.4.0', jnp.cos(1j * (5 + 1j)))


def count_nonzero(out):
    """`jnp.count_nonzero`'s examples."""
    x = jnp.array([[1, 0, 0, 0],
                   [0, 0, 1, 0],
                   [1, 1, 1, 0]])
    _rec(out, 'count_nonzero.1', jnp.count_nonzero(x))
    _rec(out, 'count_nonzero.2', jnp.count_nonzero(x, axis=1))
    _rec(out, 'count_nonzero.3', jnp.count_nonzero(x, axis=1, keepdims=True))


def cov(out):
    """`jnp.cov`'s examples."""
    x = jnp.array([[0, 1, 2],
                   [0, 1, 2]])
    _rec(out, 'cov.1', jnp.cov(x))
    x = jnp.array([[-1,  0,  1],
                   [ 1,  0, -1]])
    _rec(out, 'cov.3', jnp.cov(x))
    x = jnp.array([-1, 0, 1])
    y = jnp.array([1, 0, -1])
    _rec(out, 'cov.6', jnp.cov(x, y))
    key = jax.random.key(0)
    x = jax.random.normal(key, shape=(3, 100))
    _rec(out, 'cov.9.0', jnp.cov(x))


def cross(out):
    """`jnp.cross`'s examples."""
    a = jnp.array([1, 2])
    b = jnp.array([3, 4])
    _rec(out, 'cross.2', jnp.cross(a, b))
    a = jnp.array([1, 2, 3])
    b = jnp.array([4, 5, 6])
    _rec(out, 'cross.5', jnp.cross(a, b))
    a = jnp.array([[1, 2, 3],
                   [3, 4, 3]])
    b = jnp.array([[2, 3, 2],
                   [4, 5, 6]])
    _rec(out, 'cross.8', jnp.cross(a, b))
    _rec(out, 'cross.9', jnp.cross(a, b, axis=0))
    _rec(out, 'cross.10', jnp.cross(a, b, axisa=0, axisb=0, axisc=0))


def cumulative_prod(out):
    """`jnp.cumulative_prod`'s examples."""
    x = jnp.array([[1, 2, 3],
                   [4, 5, 6]])
    _rec(out, 'cumulative_prod.1', jnp.cumulative_prod(x, axis=1))
    _rec(out, 'cumulative_prod.2', jnp.cumulative_prod(x, axis=1, include_initial=True))


def cumulative_sum(out):
    """`jnp.cumulative_sum`'s examples."""
    x = jnp.array([[1, 2, 3],
                   [4, 5, 6]])
    _rec(out, 'cumulative_sum.1', jnp.cumulative_sum(x, axis=1))
    _rec(out, 'cumulative_sum.2', jnp.cumulative_sum(x, axis=1, include_initial=True))


def deg2rad(out):
    """`jnp.deg2rad`'s examples."""
    x = jnp.array([60, 90, 120, 180])
    _rec(out, 'deg2rad.1', jnp.deg2rad(x))
    _rec(out, 'deg2rad.2', x * jnp.pi / 180)


def diag(out):
    """`jnp.diag`'s examples."""
    _rec(out, 'diag.0', jnp.diag(jnp.array([1, 2, 3])))
    _rec(out, 'diag.1', jnp.diag(jnp.array([1, 2, 3]), k=1))
    x = jnp.array([[1, 2, 3],
                   [4, 5, 6],
                   [7, 8, 9]])
    _rec(out, 'diag.3', jnp.diag(x))


def diag_indices(out):
    """`jnp.diag_indices`'s examples."""
    _rec(out, 'diag_indices.0', jnp.diag_indices(3))
    _rec(out, 'diag_indices.1', jnp.diag_indices(4, ndim=3))


def diag_indices_from(out):
    """`jnp.diag_indices_from`'s examples."""
    arr = jnp.array([[1, 2, 3],
                     [4, 5, 6],
                     [7, 8, 9]])
    _rec(out, 'diag_indices_from.1', jnp.diag_indices_from(arr))
    arr = jnp.array([[[1, 2], [3, 4]],
                     [[5, 6], [7, 8]]])
    _rec(out, 'diag_indices_from.3', jnp.diag_indices_from(arr))


def diagflat(out):
    """`jnp.diagflat`'s examples."""
    _rec(out, 'diagflat.0', jnp.diagflat(jnp.array([1, 2, 3])))
    _rec(out, 'diagflat.1', jnp.diagflat(jnp.array([1, 2, 3]), k=1))
    a = jnp.array([[1, 2],
                   [3, 4]])
    _rec(out, 'diagflat.3', jnp.diagflat(a))


def diagonal(out):
    """`jnp.diagonal`'s examples."""
    x = jnp.array([[1, 2, 3],
                   [4, 5, 6],
                   [7, 8, 9]])
    _rec(out, 'diagonal.1', jnp.diagonal(x))
    _rec(out, 'diagonal.2', jnp.diagonal(x, offset=1))
    _rec(out, 'diagonal.3', jnp.diagonal(x, offset=-1))


def diff(out):
    """`jnp.diff`'s examples."""
    a = jnp.array([[1, 5, 2, 9],
                   [3, 8, 7, 4]])
    _rec(out, 'diff.1', jnp.diff(a))
    _rec(out, 'diff.2', jnp.diff(a, n=2))
    _rec(out, 'diff.3', jnp.diff(a, prepend=2))
    _rec(out, 'diff.4', jnp.diff(a, append=jnp.array([[3], [1]])))


def divmod(out):
    """`jnp.divmod`'s examples."""
    x1 = jnp.array([10, 20, 30])
    x2 = jnp.array([3, 4, 7])
    _rec(out, 'divmod.2', jnp.divmod(x1, x2))
    x1 = jnp.array([-5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5])
    x2 = 3
    _rec(out, 'divmod.5', jnp.divmod(x1, x2))
    x1 = jnp.array([6, 6, 6], dtype=jnp.int32)
    x2 = jnp.array([1.9, 2.5, 3.1], dtype=jnp.float32)
    _rec(out, 'divmod.8', jnp.divmod(x1, x2))


def dot(out):
    """`jnp.dot`'s examples."""
    x = jnp.array([1, 2, 3])
    _rec(out, 'dot.1', jnp.dot(x, 2))
    M = jnp.array([[2, 3, 4],
                   [5, 6, 7],
                   [8, 9, 0]])
    _rec(out, 'dot.3', jnp.dot(M, x))
    _rec(out, 'dot.4', jnp.dot(M, M))
    a = jnp.zeros((3, 2, 4))
    b = jnp.zeros((3, 4, 1))
    _rec(out, 'dot.7', jnp.dot(a, b).shape)
    _rec(out, 'dot.8', jnp.matmul(a, b).shape)


def dstack(out):
    """`jnp.dstack`'s examples."""
    _rec(out, 'dstack.0', jnp.dstack([1, 2, 3]))
    x = jnp.arange(3)
    y = jnp.ones(3)
    _rec(out, 'dstack.3', jnp.dstack([x, y]))
    x = x.reshape(1, 3)
    y = y.reshape(1, 3)
    _rec(out, 'dstack.6', jnp.dstack([x, y]))


def ediff1d(out):
    """`jnp.ediff1d`'s examples."""
    a = jnp.array([2, 3, 5, 9, 1, 4])
    _rec(out, 'ediff1d.1', jnp.ediff1d(a))
    _rec(out, 'ediff1d.2', jnp.ediff1d(a, to_begin=-10))
    _rec(out, 'ediff1d.3', jnp.ediff1d(a, to_end=jnp.array([20, 30])))
    _rec(out, 'ediff1d.4', jnp.ediff1d(a, to_begin=-10, to_end=jnp.array([20, 30])))
    a1 = jnp.array([[2, -1, 4, 7],
                    [3, 5, -6, 9]])
    _rec(out, 'ediff1d.6', jnp.ediff1d(a1))
    a2 = jnp.array([2, -1, 4, 7, 3, 5, -6, 9])
    _rec(out, 'ediff1d.8', jnp.ediff1d(a2))


def empty(out):
    """`jnp.empty`'s examples."""
    _rec(out, 'empty.0', jnp.empty(4))
    _rec(out, 'empty.1', jnp.empty((2, 3), dtype=bool))


def equal(out):
    """`jnp.equal`'s examples."""
    _rec(out, 'equal.0', jnp.equal(0.0, -0.0))
    _rec(out, 'equal.1', jnp.equal(1, 1.0))
    _rec(out, 'equal.2', jnp.equal(5, jnp.array(5)))
    _rec(out, 'equal.3', jnp.equal(2, -2))
    x = jnp.array([[1, 2, 3],
                   [4, 5, 6],
                   [7, 8, 9]])
    y = jnp.array([1, 5, 9])
    _rec(out, 'equal.6', jnp.equal(x, y))
    _rec(out, 'equal.7', x == y)


def exp(out):
    """`jnp.exp`'s examples."""
    x1 = jnp.array([2, 4, 3, 1])
    x2 = jnp.array([1, 3, 2, 3])
    _rec(out, 'exp.2.0', jnp.exp(x1 + x2))
    _rec(out, 'exp.3.0', jnp.exp(x1) * jnp.exp(x2))
    _rec(out, 'exp.4', jnp.allclose(jnp.exp(3 - 4j), jnp.exp(3) * jnp.exp(-4j)))


def exp2(out):
    """`jnp.exp2`'s examples."""
    x1 = jnp.array([2, -4, 3, -1])
    x2 = jnp.array([-1, 3, -2, 3])
    _rec(out, 'exp2.2', jnp.exp2(x1 + x2))
    _rec(out, 'exp2.3', jnp.exp2(x1) * jnp.exp2(x2))


def expm1(out):
    """`jnp.expm1`'s examples."""
    x = jnp.array([2, -4, 3, -1])
    _rec(out, 'expm1.1.0', jnp.expm1(x))
    _rec(out, 'expm1.2.0', jnp.exp(x) - 1)
    x1 = jnp.array([1e-4, 1e-6, 2e-10])
    _rec(out, 'expm1.4', jnp.expm1(x1))
    _rec(out, 'expm1.5', jnp.exp(x1) - 1)


def eye(out):
    """`jnp.eye`'s examples."""
    _rec(out, 'eye.0', jnp.eye(3))
    _rec(out, 'eye.1', jnp.eye(3, k=1, dtype=int))
    _rec(out, 'eye.2', jnp.eye(3, k=-1, dtype=int))
    _rec(out, 'eye.3', jnp.eye(3, 5, k=1))


def fabs(out):
    """`jnp.fabs`'s examples."""
    x = jnp.array([-5, -9, 1, 10, 15])
    _rec(out, 'fabs.1', jnp.fabs(x))
    x1 = jnp.array([-1.342, 5.649, 3.927])
    _rec(out, 'fabs.3', jnp.fabs(x1))
    x2 = jnp.array([True, False])
    _rec(out, 'fabs.5', jnp.fabs(x2))


def fill_diagonal(out):
    """`jnp.fill_diagonal`'s examples."""
    x = jnp.zeros((3, 3), dtype=int)
    _rec(out, 'fill_diagonal.1', jnp.fill_diagonal(x, jnp.array([1, 2, 3]), inplace=False))
    _rec(out, 'fill_diagonal.2', jnp.fill_diagonal(x, jnp.arange(100, 200), inplace=False))
    x = jnp.zeros((4, 4), dtype=int)
    _rec(out, 'fill_diagonal.4', jnp.fill_diagonal(x, jnp.array([3, 4]), inplace=False))
    x = jnp.zeros((3, 5), dtype=int)
    _rec(out, 'fill_diagonal.6', jnp.fill_diagonal(x, 1, inplace=False))
    y = jnp.zeros((2, 2, 2))
    _rec(out, 'fill_diagonal.8', jnp.fill_diagonal(y, 1, inplace=False))


def flatnonzero(out):
    """`jnp.flatnonzero`'s examples."""
    x = jnp.array([[0, 5, 0],
                   [6, 0, 8]])
    _rec(out, 'flatnonzero.1', jnp.flatnonzero(x))
    _rec(out, 'flatnonzero.2', jnp.nonzero(x.ravel())[0])
    indices = jnp.flatnonzero(x)
    _rec(out, 'flatnonzero.4', x.ravel()[indices])


def flip(out):
    """`jnp.flip`'s examples."""
    x1 = jnp.array([[1, 2],
                    [3, 4]])
    _rec(out, 'flip.1', jnp.flip(x1))
    _rec(out, 'flip.2', jnp.flip(x1, axis=1))
    x2 = jnp.arange(1, 9).reshape(2, 2, 2)
    _rec(out, 'flip.4', x2)
    _rec(out, 'flip.5', jnp.flip(x2))
    _rec(out, 'flip.6', jnp.flip(x2, axis=[1, 2]))


def fliplr(out):
    """`jnp.fliplr`'s examples."""
    x = jnp.array([[1, 2],
                   [3, 4]])
    _rec(out, 'fliplr.1', jnp.fliplr(x))


def flipud(out):
    """`jnp.flipud`'s examples."""
    x = jnp.array([[1, 2],
                   [3, 4]])
    _rec(out, 'flipud.1', jnp.flipud(x))


def float_power(out):
    """`jnp.float_power`'s examples."""
    x = jnp.array([3, 1, -5])
    y = jnp.array([2, 4, -1])
    _rec(out, 'float_power.2', jnp.float_power(x, y))
    x1 = jnp.array([[2, -4, 1],
                    [-1, 2, 3]])
    y1 = jnp.array([-2, 1, 4])
    _rec(out, 'float_power.5', jnp.float_power(x1, y1))
    _rec(out, 'float_power.6', jnp.float_power(-3, 1.7))


def floor(out):
    """`jnp.floor`'s examples."""
    key = jax.random.key(42)
    x = jax.random.uniform(key, (3, 3), minval=-5, maxval=5)
    _rec(out, 'floor.2.0', x)
    _rec(out, 'floor.3', jnp.floor(x))


def fmin(out):
    """`jnp.fmin`'s examples."""
    _rec(out, 'fmin.0', jnp.fmin(2, 3))
    _rec(out, 'fmin.1', jnp.fmin(2, jnp.array([1, 4, 2, -1])))
    x1 = jnp.array([1, 3, 2])
    x2 = jnp.array([2, 1, 4])
    _rec(out, 'fmin.4', jnp.fmin(x1, x2))
    x3 = jnp.array([1, 5, 3])
    x4 = jnp.array([[2, 3, 1],
                    [5, 6, 7]])
    _rec(out, 'fmin.7', jnp.fmin(x3, x4))
    nan = jnp.nan
    x5 = jnp.array([jnp.inf, 5, nan])
    x6 = jnp.array([[2, 3, nan],
                    [nan, 6, 7]])
    _rec(out, 'fmin.11', jnp.fmin(x5, x6))


def fmod(out):
    """`jnp.fmod`'s examples."""
    x1 = jnp.array([[3, -1, 4],
                    [8, 5, -2]])
    x2 = jnp.array([2, 3, -5])
    _rec(out, 'fmod.2', jnp.fmod(x1, x2))
    _rec(out, 'fmod.3', x1 - x2 * jnp.trunc(x1 / x2))


def from_dlpack(out):
    """`jnp.from_dlpack`'s examples."""
    import numpy as np
    rng = np.random.default_rng(42)
    x_numpy = rng.random(4, dtype='float32')
    _rec(out, 'from_dlpack.3.0', x_numpy)
    _rec(out, 'from_dlpack.4', hasattr(x_numpy, '__dlpack__'))
    import jax.numpy as jnp
    x_jax = jnp.from_dlpack(x_numpy)
    _rec(out, 'from_dlpack.7.0', x_jax)
    _rec(out, 'from_dlpack.8', hasattr(x_jax, '__dlpack__'))
    x_numpy_round_trip = np.from_dlpack(x_jax)
    _rec(out, 'from_dlpack.10.0', x_numpy_round_trip)


def full(out):
    """`jnp.full`'s examples."""
    _rec(out, 'full.0', jnp.full(4, 2, dtype=float))
    _rec(out, 'full.1', jnp.full((2, 3), 0, dtype=bool))
    _rec(out, 'full.2', jnp.full((2, 3), fill_value=jnp.arange(3)))


def gcd(out):
    """`jnp.gcd`'s examples."""
    _rec(out, 'gcd.0', jnp.gcd(12, 18))
    x1 = jnp.array([12, 18, 24])
    x2 = jnp.array([5, 10, 15])
    _rec(out, 'gcd.3', jnp.gcd(x1, x2))
    x1 = jnp.array([12])
    x2 = jnp.array([6, 9, 12])
    _rec(out, 'gcd.6', jnp.gcd(x1, x2))


def geomspace(out):
    """`jnp.geomspace`'s examples."""
    _rec(out, 'geomspace.0.0', jnp.geomspace(1, 16, 5))
    _rec(out, 'geomspace.1.0', jnp.geomspace(1, 16, 4, endpoint=False))
    start = jnp.array([1, 1000])
    stop = jnp.array([27, 1])
    _rec(out, 'geomspace.4.0', jnp.geomspace(start, stop, 4))


def greater(out):
    """`jnp.greater`'s examples."""
    _rec(out, 'greater.0', jnp.greater(5, 2))
    x = jnp.array([5, 9, -2])
    y = jnp.array([4, -1, 6])
    _rec(out, 'greater.3', jnp.greater(x, y))
    x1 = jnp.array([[5, -6, 7],
                    [-2, 5, 9]])
    y1 = jnp.array([-4, 3, 10])
    _rec(out, 'greater.6', jnp.greater(x1, y1))


def greater_equal(out):
    """`jnp.greater_equal`'s examples."""
    _rec(out, 'greater_equal.0', jnp.greater_equal(4, 7))
    x = jnp.array([2, 5, -1])
    y = jnp.array([-6, 4, 3])
    _rec(out, 'greater_equal.3', jnp.greater_equal(x, y))
    x1 = jnp.array([[3, -1, 4],
                    [5, 9, -6]])
    y1 = jnp.array([-1, 4, 2])
    _rec(out, 'greater_equal.6', jnp.greater_equal(x1, y1))


def hamming(out):
    """`jnp.hamming`'s examples."""
    _rec(out, 'hamming.0.0', jnp.hamming(4))


def hanning(out):
    """`jnp.hanning`'s examples."""
    _rec(out, 'hanning.0.0', jnp.hanning(4))


def heaviside(out):
    """`jnp.heaviside`'s examples."""
    x1 = jnp.array([[-2, 0, 3],
                    [5, -1, 0],
                    [0, 7, -3]])
    x2 = jnp.array([2, 0.5, 1])
    _rec(out, 'heaviside.2', jnp.heaviside(x1, x2))
    _rec(out, 'heaviside.3', jnp.heaviside(x1, 0.5))
    _rec(out, 'heaviside.4', jnp.heaviside(-3, x2))


def hsplit(out):
    """`jnp.hsplit`'s examples."""
    x = jnp.array([1, 2, 3, 4, 5, 6])
    x1, x2 = jnp.hsplit(x, 2)
    _rec(out, 'hsplit.2.0', x1)
    _rec(out, 'hsplit.2.1', x2)
    x = jnp.array([[1, 2, 3, 4],
                   [5, 6, 7, 8]])
    x1, x2 = jnp.hsplit(x, 2)
    _rec(out, 'hsplit.5.0', x1)
    _rec(out, 'hsplit.6.0', x2)


def hstack(out):
    """`jnp.hstack`'s examples."""
    _rec(out, 'hstack.0', jnp.hstack([1, 2, 3]))
    x = jnp.arange(3)
    y = jnp.ones(3)
    _rec(out, 'hstack.3', jnp.hstack([x, y]))
    x = x.reshape(3, 1)
    y = y.reshape(3, 1)
    _rec(out, 'hstack.6', jnp.hstack([x, y]))


def hypot(out):
    """`jnp.hypot`'s examples."""
    _rec(out, 'hypot.0', jnp.hypot(3, 4))
    x1 = jnp.array([[3, -2, 5],
                    [9, 1, -4]])
    x2 = jnp.array([-5, 6, 8])
    _rec(out, 'hypot.3.0', jnp.hypot(x1, x2))


def identity(out):
    """`jnp.identity`'s examples."""
    _rec(out, 'identity.0', jnp.identity(3))
    _rec(out, 'identity.1', jnp.identity(2, dtype=int))


def imag(out):
    """`jnp.imag`'s examples."""
    _rec(out, 'imag.0', jnp.imag(4))
    _rec(out, 'imag.1', jnp.imag(5j))
    x = jnp.array([2+3j, 5-1j, -3])
    _rec(out, 'imag.3', jnp.imag(x))


def indices(out):
    """`jnp.indices`'s examples."""
    _rec(out, 'indices.0', jnp.indices((2, 3)))
    _rec(out, 'indices.1', jnp.indices((2, 3), sparse=True))


def inner(out):
    """`jnp.inner`'s examples."""
    a = jnp.array([1j, 3j, 4j])
    b = jnp.array([4., 2., 5.])
    _rec(out, 'inner.2', jnp.inner(a, b))
    a = jnp.ones((2, 3))
    b = jnp.ones((5, 3))
    _rec(out, 'inner.5', jnp.inner(a, b).shape)


def isclose(out):
    """`jnp.isclose`'s examples."""
    _rec(out, 'isclose.0', jnp.isclose(jnp.array([1000000.0, 2000000.0, jnp.inf]), jnp.array([1000000.0, 20000000.0, jnp.inf])))
    _rec(out, 'isclose.1', jnp.isclose(jnp.array([1000000.0, 2000000.0, 3000000.0]), jnp.array([1000080.0, 20000800.0, 300008000.0]), rtol=1000.0))
    _rec(out, 'isclose.2', jnp.isclose(jnp.array([1000000.0, 2000000.0, 3000000.0]), jnp.array([1000010.0, 2000020.0, 3000090.0]), atol=1000.0))
    _rec(out, 'isclose.3', jnp.isclose(jnp.array([jnp.nan, 1, 2]), jnp.array([jnp.nan, 1, 2]), equal_nan=True))


def iscomplex(out):
    """`jnp.iscomplex`'s examples."""
    _rec(out, 'iscomplex.0', jnp.iscomplex(jnp.array([True, 0, 1, 2j, 1 + 2j])))


def iscomplexobj(out):
    """`jnp.iscomplexobj`'s examples."""
    _rec(out, 'iscomplexobj.0', jnp.iscomplexobj(True))
    _rec(out, 'iscomplexobj.1', jnp.iscomplexobj(0))
    _rec(out, 'iscomplexobj.2', jnp.iscomplexobj(jnp.array([1, 2])))
    _rec(out, 'iscomplexobj.3', jnp.iscomplexobj(1 + 2j))
    _rec(out, 'iscomplexobj.4', jnp.iscomplexobj(jnp.array([0, 1 + 2j])))


def isfinite(out):
    """`jnp.isfinite`'s examples."""
    x = jnp.array([-1, 3, jnp.inf, jnp.nan])
    _rec(out, 'isfinite.1', jnp.isfinite(x))
    _rec(out, 'isfinite.2', jnp.isfinite(3 - 4j))


def isin(out):
    """`jnp.isin`'s examples."""
    elements = jnp.array([1, 2, 3, 4])
    test_elements = jnp.array([[1, 5, 6, 3, 7, 1]])
    _rec(out, 'isin.2', jnp.isin(elements, test_elements))


def isinf(out):
    """`jnp.isinf`'s examples."""
    _rec(out, 'isinf.0', jnp.isinf(jnp.inf))
    x = jnp.array([2+3j, -jnp.inf, 6, jnp.inf, jnp.nan])
    _rec(out, 'isinf.2', jnp.isinf(x))


def isnan(out):
    """`jnp.isnan`'s examples."""
    _rec(out, 'isnan.0', jnp.isnan(6))
    x = jnp.array([2, 1+4j, jnp.inf, jnp.nan])
    _rec(out, 'isnan.2', jnp.isnan(x))


def isneginf(out):
    """`jnp.isneginf`'s examples."""
    _rec(out, 'isneginf.0', jnp.isneginf(jnp.inf))
    x = jnp.array([-jnp.inf, 5, jnp.inf, jnp.nan, 1])
    _rec(out, 'isneginf.2', jnp.isneginf(x))


def isposinf(out):
    """`jnp.isposinf`'s examples."""
    _rec(out, 'isposinf.0', jnp.isposinf(5))
    x = jnp.array([-jnp.inf, 5, jnp.inf, jnp.nan, 1])
    _rec(out, 'isposinf.2', jnp.isposinf(x))


def isreal(out):
    """`jnp.isreal`'s examples."""
    _rec(out, 'isreal.0', jnp.isreal(jnp.array([False, 0j, 1, 2.1, 1 + 2j])))


def isrealobj(out):
    """`jnp.isrealobj`'s examples."""
    _rec(out, 'isrealobj.0', jnp.isrealobj(0))
    _rec(out, 'isrealobj.1', jnp.isrealobj(1.2))
    _rec(out, 'isrealobj.2', jnp.isrealobj(jnp.array([1, 2])))
    _rec(out, 'isrealobj.3', jnp.isrealobj(1 + 2j))
    _rec(out, 'isrealobj.4', jnp.isrealobj(jnp.array([0, 1 + 2j])))


def isscalar(out):
    """`jnp.isscalar`'s examples."""
    _rec(out, 'isscalar.0', np.isscalar(1.0))
    _rec(out, 'isscalar.1', jax.jit(np.isscalar)(1.0))
    _rec(out, 'isscalar.2', jnp.isscalar(1.0))
    _rec(out, 'isscalar.3', jax.jit(jnp.isscalar)(1.0))
    _rec(out, 'isscalar.4', jnp.isscalar(1.0))
    _rec(out, 'isscalar.5', jnp.isscalar(1 + 1j))
    _rec(out, 'isscalar.6', jnp.isscalar(jnp.array(1)))
    _rec(out, 'isscalar.7', jnp.isscalar(jnp.int32(1)))
    _rec(out, 'isscalar.8', jnp.isscalar(np.array(1.0)))
    _rec(out, 'isscalar.9', jnp.isscalar(np.int32(1)))
    _rec(out, 'isscalar.10', jnp.isscalar(jnp.array([1])))
    _rec(out, 'isscalar.11', jnp.isscalar(np.array([1])))
    _rec(out, 'isscalar.12', np.isscalar(np.int32(1)))
    _rec(out, 'isscalar.13', np.isscalar(np.array(1)))
    _rec(out, 'isscalar.14', jnp.isscalar(None))
    _rec(out, 'isscalar.15', jnp.isscalar([1]))
    _rec(out, 'isscalar.16', jnp.isscalar(()))
    _rec(out, 'isscalar.17', jnp.isscalar(slice(10)))


def issubdtype(out):
    """`jnp.issubdtype`'s examples."""
    _rec(out, 'issubdtype.0', jnp.issubdtype('uint32', jnp.unsignedinteger))
    _rec(out, 'issubdtype.1', jnp.issubdtype(np.int32, jnp.integer))
    _rec(out, 'issubdtype.2', jnp.issubdtype(jnp.bfloat16, jnp.floating))
    _rec(out, 'issubdtype.3', jnp.issubdtype(np.dtype('complex64'), jnp.complexfloating))
    _rec(out, 'issubdtype.4', jnp.issubdtype('complex64', jnp.integer))
    _rec(out, 'issubdtype.5', np.issubdtype('bfloat16', np.floating))
    _rec(out, 'issubdtype.6', jnp.issubdtype('bfloat16', jnp.floating))


def iterable(out):
    """`jnp.iterable`'s examples."""
    import numpy as np
    _rec(out, 'iterable.1', np.iterable([1, 2, 3]))
    _rec(out, 'iterable.2', np.iterable(2))
    from collections.abc import Iterable
    a = np.array(1.0)  # 0-dimensional numpy array
    _rec(out, 'iterable.5', isinstance(a, Iterable))
    _rec(out, 'iterable.6', np.iterable(a))


def ix_(out):
    """`jnp.ix_`'s examples."""
    rows = jnp.array([0, 2])
    cols = jnp.array([1, 3])
    open_mesh = jnp.ix_(rows, cols)
    _rec(out, 'ix_.3', open_mesh)
    _rec(out, 'ix_.4', [grid.shape for grid in open_mesh])
    x = jnp.array([[10, 20, 30, 40],
                   [50, 60, 70, 80],
                   [90, 100, 110, 120],
                   [130, 140, 150, 160]])
    _rec(out, 'ix_.6', x[open_mesh])


def kron(out):
    """`jnp.kron`'s examples."""
    a = jnp.array([[1, 2],
                   [3, 4]])
    b = jnp.array([[5, 6],
                   [7, 8]])
    _rec(out, 'kron.2', jnp.kron(a, b))


def lcm(out):
    """`jnp.lcm`'s examples."""
    _rec(out, 'lcm.0', jnp.lcm(12, 18))
    x1 = jnp.array([12, 18, 24])
    x2 = jnp.array([5, 10, 15])
    _rec(out, 'lcm.3', jnp.lcm(x1, x2))
    x1 = jnp.array([12])
    x2 = jnp.array([6, 9, 12])
    _rec(out, 'lcm.6', jnp.lcm(x1, x2))


def less(out):
    """`jnp.less`'s examples."""
    _rec(out, 'less.0', jnp.less(3, 7))
    x = jnp.array([5, 9, -3])
    y = jnp.array([1, 6, 4])
    _rec(out, 'less.3', jnp.less(x, y))
    x1 = jnp.array([[2, -4, 6, -8],
                    [-1, 5, -3, 7]])
    y1 = jnp.array([0, 3, -5, 9])
    _rec(out, 'less.6', jnp.less(x1, y1))


def less_equal(out):
    """`jnp.less_equal`'s examples."""
    _rec(out, 'less_equal.0', jnp.less_equal(6, -2))
    x = jnp.array([-4, 1, 7])
    y = jnp.array([2, -3, 8])
    _rec(out, 'less_equal.3', jnp.less_equal(x, y))
    x1 = jnp.array([2, -5, 9])
    y1 = jnp.array([[1, -6, 5],
                    [-2, 4, -6]])
    _rec(out, 'less_equal.6', jnp.less_equal(x1, y1))


def linspace(out):
    """`jnp.linspace`'s examples."""
    _rec(out, 'linspace.0', jnp.linspace(0, 10, 5))
    _rec(out, 'linspace.1', jnp.linspace(0, 10, 8, endpoint=False))
    vals, step = jnp.linspace(0, 10, 9, retstep=True)
    _rec(out, 'linspace.3', vals)
    _rec(out, 'linspace.4', step)
    start = jnp.array([0, 5])
    stop = jnp.array([5, 10])
    _rec(out, 'linspace.7', jnp.linspace(start, stop, 5))


def log(out):
    """`jnp.log`'s examples."""
    x = jnp.array([2, 3, 4, 5])
    _rec(out, 'log.1', jnp.log(jnp.exp(x)))
    x1 = jnp.array([2, 1, 3, 1])
    x2 = jnp.array([1, 3, 2, 4])
    _rec(out, 'log.4', jnp.allclose(jnp.log(x1 * x2), jnp.log(x1) + jnp.log(x2)))


def log10(out):
    """`jnp.log10`'s examples."""
    x1 = jnp.array([0.01, 0.1, 1, 10, 100, 1000])
    _rec(out, 'log10.1.0', jnp.log10(x1))


def log1p(out):
    """`jnp.log1p`'s examples."""
    x = jnp.array([2, 5, 9, 4])
    _rec(out, 'log1p.1', jnp.allclose(jnp.log1p(x), jnp.log(x + 1)))
    x1 = jnp.array([1e-4, 1e-6, 2e-10])
    _rec(out, 'log1p.3', jnp.expm1(jnp.log1p(x1)))
    _rec(out, 'log1p.4', jnp.expm1(jnp.log(x1 + 1)))


def log2(out):
    """`jnp.log2`'s examples."""
    x1 = jnp.array([0.25, 0.5, 1, 2, 4, 8])
    _rec(out, 'log2.1', jnp.log2(x1))


def logaddexp(out):
    """`jnp.logaddexp`'s examples."""
    x1 = jnp.array([1, 2, 3])
    x2 = jnp.array([4, 5, 6])
    result1 = jnp.logaddexp(x1, x2)
    result2 = jnp.log(jnp.exp(x1) + jnp.exp(x2))
    _rec(out, 'logaddexp.4.0', jnp.allclose(result1, result2))


def logaddexp2(out):
    """`jnp.logaddexp2`'s examples."""
    x1 = jnp.array([[3, -1, 4],
                    [8, 5, -2]])
    x2 = jnp.array([2, 3, -5])
    result1 = jnp.logaddexp2(x1, x2)
    result2 = jnp.log2(jnp.exp2(x1) + jnp.exp2(x2))
    _rec(out, 'logaddexp2.4', jnp.allclose(result1, result2))


def logical_and(out):
    """`jnp.logical_and`'s examples."""
    x = jnp.arange(4)
    _rec(out, 'logical_and.1', jnp.logical_and(x, 1))


def logical_not(out):
    """`jnp.logical_not`'s examples."""
    x = jnp.array([True, False, True])
    _rec(out, 'logical_not.1', jnp.logical_not(x))
    _rec(out, 'logical_not.2', ~x)
    x = jnp.array([-1, 0, 1])
    _rec(out, 'logical_not.4', jnp.logical_not(x))


def logical_or(out):
    """`jnp.logical_or`'s examples."""
    x = jnp.arange(4)
    _rec(out, 'logical_or.1', jnp.logical_or(x, 1))


def logical_xor(out):
    """`jnp.logical_xor`'s examples."""
    x = jnp.arange(4)
    _rec(out, 'logical_xor.1', jnp.logical_xor(x, 1))


def logspace(out):
    """`jnp.logspace`'s examples."""
    _rec(out, 'logspace.0.0', jnp.logspace(0, 2, 5))
    _rec(out, 'logspace.1.0', jnp.logspace(0, 2, 5, endpoint=False))
    _rec(out, 'logspace.2.0', jnp.logspace(0, 2, 7, base=2))
    start = jnp.array([0, 5])
    stop = jnp.array([5, 0])
    base = jnp.array([2, 3])
    _rec(out, 'logspace.6.0', jnp.logspace(start, stop, 5, base=base))


def matmul(out):
    """`jnp.matmul`'s examples."""
    a = jnp.array([1, 2, 3])
    b = jnp.array([4, 5, 6])
    _rec(out, 'matmul.2', jnp.matmul(a, b))
    a = jnp.array([[1, 2, 3],
                   [4, 5, 6]])
    b = jnp.array([[1, 2],
                   [3, 4],
                   [5, 6]])
    _rec(out, 'matmul.5', jnp.matmul(a, b))
    _rec(out, 'matmul.6', a @ b)


def matrix_transpose(out):
    """`jnp.matrix_transpose`'s examples."""
    x = jnp.array([[[1, 2],
                    [3, 4]],
                   [[5, 6],
                    [7, 8]]])
    _rec(out, 'matrix_transpose.1', jnp.matrix_transpose(x))
    _rec(out, 'matrix_transpose.2', x.mT)


def matvec(out):
    """`jnp.matvec`'s examples."""
    x1 = jnp.array([[1, 2, 3],
                    [4, 5, 6]])
    x2 = jnp.array([7, 8, 9])
    _rec(out, 'matvec.2', jnp.matvec(x1, x2))
    x2 = jnp.array([[7, 8, 9],
                    [5, 6, 7]])
    _rec(out, 'matvec.4', jnp.matvec(x1, x2))


def max(out):
    """`jnp.max`'s examples."""
    x = jnp.array([[9, 3, 4, 5],
                   [5, 2, 7, 4],
                   [8, 1, 3, 6]])
    _rec(out, 'max.1', jnp.max(x))
    _rec(out, 'max.2', jnp.max(x, axis=1))
    _rec(out, 'max.3', jnp.max(x, axis=1, keepdims=True))
    where=jnp.array([[0, 0, 1, 0],
                     [0, 0, 1, 1],
                     [1, 1, 1, 0]], dtype=bool)
    _rec(out, 'max.5', jnp.max(x, axis=1, keepdims=True, initial=0, where=where))
    where = jnp.array([[False],
                       [False],
                       [False]])
    _rec(out, 'max.7', jnp.max(x, axis=0, keepdims=True, initial=0, where=where))


def maximum(out):
    """`jnp.maximum`'s examples."""
    x = jnp.array([1, -5, 3, 2])
    y = jnp.array([-2, 4, 7, -6])
    _rec(out, 'maximum.2', jnp.maximum(x, y))
    x1 = jnp.array([[-2, 5, 7, 4],
                    [1, -6, 3, 8]])
    y1 = jnp.array([-5, 3, 6, 9])
    _rec(out, 'maximum.5', jnp.maximum(x1, y1))
    nan = jnp.nan
    x2 = jnp.array([nan, -3, 9])
    y2 = jnp.array([[4, -2, nan],
                    [-3, -5, 10]])
    _rec(out, 'maximum.9', jnp.maximum(x2, y2))


def mean(out):
    """`jnp.mean`'s examples."""
    x = jnp.array([[1, 3, 4, 2],
                   [5, 2, 6, 3],
                   [8, 1, 2, 9]])
    _rec(out, 'mean.1', jnp.mean(x))
    _rec(out, 'mean.2', jnp.mean(x, axis=1))
    _rec(out, 'mean.3', jnp.mean(x, axis=1, keepdims=True))
    where = jnp.array([[1, 0, 1, 0],
                       [0, 1, 0, 1],
                       [1, 1, 0, 1]], dtype=bool)
    _rec(out, 'mean.5', jnp.mean(x, axis=1, keepdims=True, where=where))


def median(out):
    """`jnp.median`'s examples."""
    x = jnp.array([[2, 4, 7, 1],
                   [3, 5, 9, 2],
                   [6, 1, 8, 3]])
    _rec(out, 'median.1', jnp.median(x))
    _rec(out, 'median.2', jnp.median(x, axis=1))
    _rec(out, 'median.3', jnp.median(x, axis=1, keepdims=True))


def meshgrid(out):
    """`jnp.meshgrid`'s examples."""
    x = jnp.array([1, 2])
    y = jnp.array([10, 20, 30])
    x_grid, y_grid = jnp.meshgrid(x, y)
    _rec(out, 'meshgrid.3.0', x_grid)
    _rec(out, 'meshgrid.4.0', y_grid)
    x_grid, y_grid = jnp.meshgrid(x, y, sparse=True)
    _rec(out, 'meshgrid.6.0', x_grid)
    _rec(out, 'meshgrid.7.0', y_grid)
    x_grid, y_grid = jnp.meshgrid(x, y, indexing='ij')
    _rec(out, 'meshgrid.9.0', x_grid)
    _rec(out, 'meshgrid.10.0', y_grid)


def min(out):
    """`jnp.min`'s examples."""
    x = jnp.array([[2, 5, 1, 6],
                   [3, -7, -2, 4],
                   [8, -4, 1, -3]])
    _rec(out, 'min.1', jnp.min(x))
    _rec(out, 'min.2', jnp.min(x, axis=1))
    _rec(out, 'min.3', jnp.min(x, axis=1, keepdims=True))
    where=jnp.array([[1, 0, 1, 0],
                     [0, 0, 1, 1],
                     [1, 1, 1, 0]], dtype=bool)
    _rec(out, 'min.5', jnp.min(x, axis=1, keepdims=True, initial=0, where=where))
    where = jnp.array([[False],
                       [False],
                       [False]])
    _rec(out, 'min.7', jnp.min(x, axis=0, keepdims=True, initial=0, where=where))


def minimum(out):
    """`jnp.minimum`'s examples."""
    x = jnp.array([2, 3, 5, 1])
    y = jnp.array([-3, 6, -4, 7])
    _rec(out, 'minimum.2', jnp.minimum(x, y))
    x1 = jnp.array([[1, 5, 2],
                    [-3, 4, 7]])
    y1 = jnp.array([-2, 3, 6])
    _rec(out, 'minimum.5', jnp.minimum(x1, y1))
    nan = jnp.nan
    x2 = jnp.array([[2.5, nan, -2],
                    [nan, 5, 6],
                    [-4, 3, 7]])
    y2 = jnp.array([1, nan, 5])
    _rec(out, 'minimum.9', jnp.minimum(x2, y2))


def modf(out):
    """`jnp.modf`'s examples."""
    _rec(out, 'modf.0', jnp.modf(4.8))
    x = jnp.array([-3.4, -5.7, 0.6, 1.5, 2.3])
    _rec(out, 'modf.2', jnp.modf(x))


def moveaxis(out):
    """`jnp.moveaxis`'s examples."""
    a = jnp.ones((2, 3, 4, 5))
    _rec(out, 'moveaxis.1', jnp.moveaxis(a, 1, -1).shape)
    _rec(out, 'moveaxis.2', jnp.moveaxis(a, -1, 1).shape)
    _rec(out, 'moveaxis.3', jnp.moveaxis(a, (0, 1), (-1, -2)).shape)
    _rec(out, 'moveaxis.4', a.transpose(2, 3, 1, 0).shape)


def multiply(out):
    """`jnp.multiply`'s examples."""
    x = jnp.arange(4)
    _rec(out, 'multiply.1', jnp.multiply(x, 10))
    _rec(out, 'multiply.2', x * 10)


def nan_to_num(out):
    """`jnp.nan_to_num`'s examples."""
    x = jnp.array([0, jnp.nan, 1, jnp.inf, 2, -jnp.inf])
    _rec(out, 'nan_to_num.1', jnp.nan_to_num(x))
    _rec(out, 'nan_to_num.2', jnp.nan_to_num(x, posinf=999, neginf=-999))
    _rec(out, 'nan_to_num.3', jnp.where(jnp.isnan(x), 0, x))


def nanargmax(out):
    """`jnp.nanargmax`'s examples."""
    x = jnp.array([1, 3, 5, 4, jnp.nan])
    _rec(out, 'nanargmax.1', jnp.argmax(x))
    _rec(out, 'nanargmax.2', jnp.nanargmax(x))
    x = jnp.array([[1, 3, jnp.nan],
                   [5, 4, jnp.nan]])
    _rec(out, 'nanargmax.4', jnp.nanargmax(x, axis=1))
    _rec(out, 'nanargmax.5', jnp.nanargmax(x, axis=1, keepdims=True))


def nanargmin(out):
    """`jnp.nanargmin`'s examples."""
    x = jnp.array([jnp.nan, 3, 5, 4, 2])
    _rec(out, 'nanargmin.1', jnp.nanargmin(x))
    x = jnp.array([[1, 3, jnp.nan],
                   [5, 4, jnp.nan]])
    _rec(out, 'nanargmin.3', jnp.nanargmin(x, axis=1))
    _rec(out, 'nanargmin.4', jnp.nanargmin(x, axis=1, keepdims=True))


def nancumprod(out):
    """`jnp.nancumprod`'s examples."""
    x = jnp.array([[1., 2., jnp.nan],
                   [4., jnp.nan, 6.]])
    _rec(out, 'nancumprod.1', jnp.cumprod(x))
    _rec(out, 'nancumprod.2', jnp.nancumprod(x))
    _rec(out, 'nancumprod.3', jnp.nancumprod(x, axis=1))


def nancumsum(out):
    """`jnp.nancumsum`'s examples."""
    x = jnp.array([[1., 2., jnp.nan],
                   [4., jnp.nan, 6.]])
    _rec(out, 'nancumsum.1', jnp.cumsum(x))
    _rec(out, 'nancumsum.2', jnp.nancumsum(x))
    _rec(out, 'nancumsum.3', jnp.nancumsum(x, axis=1))


def nanmax(out):
    """`jnp.nanmax`'s examples."""
    nan = jnp.nan
    x = jnp.array([[8, nan, 4, 6],
                   [nan, -2, nan, -4],
                   [-2, 1, 7, nan]])
    _rec(out, 'nanmax.2', jnp.nanmax(x))
    _rec(out, 'nanmax.3', jnp.nanmax(x, axis=1))
    _rec(out, 'nanmax.4', jnp.nanmax(x, axis=1, keepdims=True))
    where=jnp.array([[0, 0, 1, 0],
                     [0, 0, 1, 1],
                     [1, 1, 1, 0]], dtype=bool)
    _rec(out, 'nanmax.6', jnp.nanmax(x, axis=1, keepdims=True, initial=0, where=where))
    where = jnp.array([[True],
                       [False],
                       [False]])
    _rec(out, 'nanmax.8', jnp.nanmax(x, axis=0, keepdims=True, initial=0, where=where))


def nanmean(out):
    """`jnp.nanmean`'s examples."""
    nan = jnp.nan
    x = jnp.array([[2, nan, 4, 3],
                   [nan, -2, nan, 9],
                   [4, -7, 6, nan]])
    _rec(out, 'nanmean.2', jnp.nanmean(x))
    _rec(out, 'nanmean.3', jnp.nanmean(x, axis=1))
    _rec(out, 'nanmean.4', jnp.nanmean(x, axis=1, keepdims=True))
    where = jnp.array([[1, 0, 1, 0],
                       [0, 0, 1, 1],
                       [1, 1, 0, 1]], dtype=bool)
    _rec(out, 'nanmean.6', jnp.nanmean(x, axis=1, keepdims=True, where=where))
    where = jnp.array([[False],
                       [False],
                       [False]])
    _rec(out, 'nanmean.8', jnp.nanmean(x, axis=0, keepdims=True, where=where))


def nanmedian(out):
    """`jnp.nanmedian`'s examples."""
    nan = jnp.nan
    x = jnp.array([[2, nan, 7, nan],
                   [nan, 5, 9, 2],
                   [6, 1, nan, 3]])
    _rec(out, 'nanmedian.2', jnp.nanmedian(x))
    _rec(out, 'nanmedian.3', jnp.nanmedian(x, axis=1))
    _rec(out, 'nanmedian.4', jnp.nanmedian(x, axis=1, keepdims=True))


def nanmin(out):
    """`jnp.nanmin`'s examples."""
    nan = jnp.nan
    x = jnp.array([[1, nan, 4, 5],
                   [nan, -2, nan, -4],
                   [2, 1, 3, nan]])
    _rec(out, 'nanmin.2', jnp.nanmin(x))
    _rec(out, 'nanmin.3', jnp.nanmin(x, axis=1))
    _rec(out, 'nanmin.4', jnp.nanmin(x, axis=1, keepdims=True))
    where=jnp.array([[0, 0, 1, 0],
                     [0, 0, 1, 1],
                     [1, 1, 1, 0]], dtype=bool)
    _rec(out, 'nanmin.6', jnp.nanmin(x, axis=1, keepdims=True, initial=0, where=where))
    where = jnp.array([[False],
                       [True],
                       [False]])
    _rec(out, 'nanmin.8', jnp.nanmin(x, axis=0, keepdims=True, initial=0, where=where))


def nanprod(out):
    """`jnp.nanprod`'s examples."""
    nan = jnp.nan
    x = jnp.array([[nan, 3, 4, nan],
                   [5, nan, 1, 3],
                   [2, 1, nan, 1]])
    _rec(out, 'nanprod.2', jnp.nanprod(x))
    _rec(out, 'nanprod.3', jnp.nanprod(x, axis=1))
    _rec(out, 'nanprod.4', jnp.nanprod(x, axis=1, keepdims=True))
    where=jnp.array([[1, 0, 1, 0],
                     [0, 0, 1, 1],
                     [1, 1, 1, 0]], dtype=bool)
    _rec(out, 'nanprod.6', jnp.nanprod(x, axis=1, keepdims=True, where=where))
    where = jnp.array([[False],
                       [False],
                       [False]])
    _rec(out, 'nanprod.8', jnp.nanprod(x, axis=0, keepdims=True, where=where))


def nanstd(out):
    """`jnp.nanstd`'s examples."""
    nan = jnp.nan
    x = jnp.array([[3, nan, 4, 5],
                   [nan, 2, nan, 7],
                   [2, 1, 6, nan]])
    _rec(out, 'nanstd.2', jnp.nanstd(x))
    _rec(out, 'nanstd.3', jnp.nanstd(x, axis=0))
    _rec(out, 'nanstd.4', jnp.nanstd(x, axis=0, keepdims=True))
    _rec(out, 'nanstd.5.0', jnp.nanstd(x, axis=0, keepdims=True, ddof=1))
    where=jnp.array([[1, 0, 1, 0],
                     [0, 1, 0, 1],
                     [1, 1, 0, 1]], dtype=bool)
    _rec(out, 'nanstd.7', jnp.nanstd(x, axis=0, keepdims=True, where=where))


def nansum(out):
    """`jnp.nansum`'s examples."""
    nan = jnp.nan
    x = jnp.array([[3, nan, 4, 5],
                   [nan, -2, nan, 7],
                   [2, 1, 6, nan]])
    _rec(out, 'nansum.2', jnp.nansum(x))
    _rec(out, 'nansum.3', jnp.nansum(x, axis=1))
    _rec(out, 'nansum.4', jnp.nansum(x, axis=1, keepdims=True))
    where=jnp.array([[1, 0, 1, 0],
                     [0, 0, 1, 1],
                     [1, 1, 1, 0]], dtype=bool)
    _rec(out, 'nansum.6', jnp.nansum(x, axis=1, keepdims=True, where=where))
    where = jnp.array([[False],
                       [False],
                       [False]])
    _rec(out, 'nansum.8', jnp.nansum(x, axis=0, keepdims=True, where=where))


def nanvar(out):
    """`jnp.nanvar`'s examples."""
    nan = jnp.nan
    x = jnp.array([[1, nan, 4, 3],
                   [nan, 2, nan, 9],
                   [4, 8, 6, nan]])
    _rec(out, 'nanvar.2', jnp.nanvar(x))
    _rec(out, 'nanvar.3.0', jnp.nanvar(x, axis=1))
    _rec(out, 'nanvar.4.0', jnp.nanvar(x, axis=1, keepdims=True))
    _rec(out, 'nanvar.5.0', jnp.nanvar(x, axis=1, keepdims=True, ddof=1))
    where = jnp.array([[1, 0, 1, 0],
                       [0, 1, 1, 0],
                       [1, 1, 0, 1]], dtype=bool)
    _rec(out, 'nanvar.7', jnp.nanvar(x, axis=1, keepdims=True, where=where))


def ndim(out):
    """`jnp.ndim`'s examples."""
    x = jnp.arange(10)
    _rec(out, 'ndim.1', jnp.ndim(x))
    y = jnp.ones((2, 3))
    _rec(out, 'ndim.3', jnp.ndim(y))
    _rec(out, 'ndim.4', jnp.ndim(3.14))
    _rec(out, 'ndim.5', x.ndim)


def negative(out):
    """`jnp.negative`'s examples."""
    x = jnp.array([0., -3., 7])
    _rec(out, 'negative.1', jnp.negative(x))
    x1 = jnp.array([1-2j, -3+4j, 5-6j])
    _rec(out, 'negative.3', jnp.negative(x1))
    x2 = jnp.array([5, 0, -7]).astype(jnp.uint32)
    _rec(out, 'negative.5', x2)
    _rec(out, 'negative.6', jnp.negative(x2))


def nextafter(out):
    """`jnp.nextafter`'s examples."""
    _rec(out, 'nextafter.0', jnp.nextafter(2, 1))
    x = jnp.array([3, -2, 1])
    y = jnp.array([2, -1, 2])
    _rec(out, 'nextafter.3', jnp.nextafter(x, y))


def not_equal(out):
    """`jnp.not_equal`'s examples."""
    _rec(out, 'not_equal.0', jnp.not_equal(0.0, -0.0))
    _rec(out, 'not_equal.1', jnp.not_equal(-2, 2))
    _rec(out, 'not_equal.2', jnp.not_equal(1, 1.0))
    _rec(out, 'not_equal.3', jnp.not_equal(5, jnp.array(5)))
    x = jnp.array([[1, 2, 3],
                   [4, 5, 6],
                   [7, 8, 9]])
    y = jnp.array([1, 5, 9])
    _rec(out, 'not_equal.6', jnp.not_equal(x, y))
    _rec(out, 'not_equal.7', x != y)


def ones(out):
    """`jnp.ones`'s examples."""
    _rec(out, 'ones.0', jnp.ones(4))
    _rec(out, 'ones.1', jnp.ones((2, 3), dtype=bool))


def outer(out):
    """`jnp.outer`'s examples."""
    a = jnp.array([1, 2, 3])
    b = jnp.array([4, 5, 6])
    _rec(out, 'outer.2', jnp.outer(a, b))


def permute_dims(out):
    """`jnp.permute_dims`'s examples."""
    a = jnp.array([[1, 2, 3],
                   [4, 5, 6]])
    _rec(out, 'permute_dims.1', jnp.permute_dims(a, (1, 0)))


def polyval(out):
    """`jnp.polyval`'s examples."""
    p = jnp.array([2, 5, 1])
    _rec(out, 'polyval.1', jnp.polyval(p, 3))
    x = jnp.array([[2, 1, 5],
                   [3, 4, 7],
                   [1, 3, 5]])
    _rec(out, 'polyval.3', jnp.polyval(p, x))


def positive(out):
    """`jnp.positive`'s examples."""
    x = jnp.array([-5, 4, 7., -9.5])
    _rec(out, 'positive.1', jnp.positive(x))
    _rec(out, 'positive.2', x.copy())
    x1 = jnp.array([1-2j, -3+4j, 5-6j])
    _rec(out, 'positive.4', jnp.positive(x1))
    _rec(out, 'positive.5', x1.copy())
    x2 = jnp.array([6, 0, -4]).astype(jnp.uint32)
    _rec(out, 'positive.7', x2)
    _rec(out, 'positive.8', jnp.positive(x2))


def power(out):
    """`jnp.power`'s examples."""
    _rec(out, 'power.0', jnp.power(4, 3))
    x1 = jnp.array([2, 4, 5])
    x2 = jnp.array([3, 0.5, 2])
    _rec(out, 'power.3', jnp.power(x1, x2))
    x3 = jnp.array([-2, 3, 1])
    x4 = jnp.array([[4, 1, 6],
                    [1.3, 3, 5]])
    _rec(out, 'power.6', jnp.power(x3, x4))


def prod(out):
    """`jnp.prod`'s examples."""
    x = jnp.array([[1, 3, 4, 2],
                   [5, 2, 1, 3],
                   [2, 1, 3, 1]])
    _rec(out, 'prod.1', jnp.prod(x))
    _rec(out, 'prod.2', jnp.prod(x, axis=1))
    _rec(out, 'prod.3', jnp.prod(x, axis=1, keepdims=True))
    where=jnp.array([[1, 0, 1, 0],
                     [0, 0, 1, 1],
                     [1, 1, 1, 0]], dtype=bool)
    _rec(out, 'prod.5', jnp.prod(x, axis=1, keepdims=True, where=where))
    where = jnp.array([[False],
                       [False],
                       [False]])
    _rec(out, 'prod.7', jnp.prod(x, axis=1, keepdims=True, where=where))


def promote_types(out):
    """`jnp.promote_types`'s examples."""
    _rec(out, 'promote_types.0', jnp.promote_types('int32', 'float32'))
    _rec(out, 'promote_types.1', jnp.promote_types(jnp.dtype('int32'), jnp.dtype('float32')))
    _rec(out, 'promote_types.2', jnp.promote_types(jnp.int32, jnp.float32))
    _rec(out, 'promote_types.3', jnp.promote_types('uint8', int))
    _rec(out, 'promote_types.4', jnp.promote_types('float16', float))
    import numpy
    _rec(out, 'promote_types.6', numpy.promote_types('uint8', int))
    _rec(out, 'promote_types.7', numpy.promote_types('float16', float))


def ptp(out):
    """`jnp.ptp`'s examples."""
    x = jnp.array([[1, 3, 5, 2],
                   [4, 6, 8, 1],
                   [7, 9, 3, 4]])
    _rec(out, 'ptp.1', jnp.ptp(x))
    _rec(out, 'ptp.2', jnp.ptp(x, axis=1))
    _rec(out, 'ptp.3', jnp.ptp(x, axis=1, keepdims=True))


def rad2deg(out):
    """`jnp.rad2deg`'s examples."""
    pi = jnp.pi
    x = jnp.array([pi/4, pi/2, 2*pi/3])
    _rec(out, 'rad2deg.2', jnp.rad2deg(x))
    _rec(out, 'rad2deg.3', x * 180 / pi)


def ravel(out):
    """`jnp.ravel`'s examples."""
    x = jnp.array([[1, 2, 3],
                   [4, 5, 6]])
    _rec(out, 'ravel.1', jnp.ravel(x))
    _rec(out, 'ravel.2', jnp.ravel(x, order='F'))
    _rec(out, 'ravel.3', x.ravel())


def ravel_multi_index(out):
    """`jnp.ravel_multi_index`'s examples."""
    x = jnp.array([[2., 3., 4.],
                   [5., 6., 7.]])
    indices = jnp.where(x % 2 == 0)
    _rec(out, 'ravel_multi_index.2', indices)
    _rec(out, 'ravel_multi_index.3', x[indices])
    indices_flat = jnp.ravel_multi_index(indices, x.shape)
    _rec(out, 'ravel_multi_index.5', indices_flat)
    x_flat = x.ravel()
    _rec(out, 'ravel_multi_index.7', x_flat)
    _rec(out, 'ravel_multi_index.8', x_flat[indices_flat])
    _rec(out, 'ravel_multi_index.9', jnp.unravel_index(indices_flat, x.shape))


def real(out):
    """`jnp.real`'s examples."""
    _rec(out, 'real.0', jnp.real(5))
    _rec(out, 'real.1', jnp.real(2j))
    x = jnp.array([3-2j, 4+7j, -2j])
    _rec(out, 'real.3', jnp.real(x))


def reciprocal(out):
    """`jnp.reciprocal`'s examples."""
    _rec(out, 'reciprocal.0', jnp.reciprocal(2))
    _rec(out, 'reciprocal.1', jnp.reciprocal(0.0))
    x = jnp.array([1, 5., 4.])
    _rec(out, 'reciprocal.3', jnp.reciprocal(x))


def reshape(out):
    """`jnp.reshape`'s examples."""
    x = jnp.array([[1, 2, 3],
                   [4, 5, 6]])
    _rec(out, 'reshape.1', jnp.reshape(x, 6))
    _rec(out, 'reshape.2', jnp.reshape(x, (3, 2)))
    _rec(out, 'reshape.3', jnp.reshape(x, -1))
    _rec(out, 'reshape.4', jnp.reshape(x, (-1, 2)))
    _rec(out, 'reshape.5', jnp.reshape(x, 6, order='F'))
    _rec(out, 'reshape.6', jnp.reshape(x, (3, 2), order='F'))
    _rec(out, 'reshape.7', x.reshape(3, 2))


def resize(out):
    """`jnp.resize`'s examples."""
    x = jnp.array([1, 2, 3, 4, 5, 6, 7, 8, 9])
    _rec(out, 'resize.1', jnp.resize(x, (3, 3)))
    _rec(out, 'resize.2', jnp.resize(x, (3, 4)))
    _rec(out, 'resize.3', jnp.resize(4, (3, 2)))


def result_type(out):
    """`jnp.result_type`'s examples."""
    _rec(out, 'result_type.0', jnp.result_type('int32', 'float32'))
    _rec(out, 'result_type.1', jnp.result_type(np.uint16, np.dtype('int32')))
    _rec(out, 'result_type.2', jnp.result_type(1.0, jnp.bfloat16(2)))
    _rec(out, 'result_type.3', jnp.result_type(jnp.arange(4), jnp.zeros(4)))
    _rec(out, 'result_type.4', jnp.result_type('float64'))


def right_shift(out):
    """`jnp.right_shift`'s examples."""
    def print_binary(x):
      return [bin(int(val)) for val in x]
    x1 = jnp.array([1, 2, 4, 8])
    _rec(out, 'right_shift.2', print_binary(x1))
    x2 = 1
    result = jnp.right_shift(x1, x2)
    _rec(out, 'right_shift.5', result)
    _rec(out, 'right_shift.6', print_binary(result))
    x1 = 16
    _rec(out, 'right_shift.8', print_binary([x1]))
    x2 = jnp.array([1, 2, 3, 4])
    result = jnp.right_shift(x1, x2)
    _rec(out, 'right_shift.11', result)
    _rec(out, 'right_shift.12', print_binary(result))


def rint(out):
    """`jnp.rint`'s examples."""
    x1 = jnp.array([5, 4, 7])
    _rec(out, 'rint.1', jnp.rint(x1))
    x2 = jnp.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 4.5])
    _rec(out, 'rint.3', jnp.rint(x2))
    x3 = jnp.array([-2.5+3.5j, 4.5-0.5j])
    _rec(out, 'rint.5', jnp.rint(x3))


def roll(out):
    """`jnp.roll`'s examples."""
    a = jnp.array([0, 1, 2, 3, 4, 5])
    _rec(out, 'roll.1', jnp.roll(a, 2))
    a = jnp.array([[ 0,  1,  2,  3],
                   [ 4,  5,  6,  7],
                   [ 8,  9, 10, 11]])
    _rec(out, 'roll.3', jnp.roll(a, 1, axis=0))
    _rec(out, 'roll.4', jnp.roll(a, [2, 3], axis=[0, 1]))


def rollaxis(out):
    """`jnp.rollaxis`'s examples."""
    a = jnp.ones((2, 3, 4, 5))
    _rec(out, 'rollaxis.1', jnp.rollaxis(a, 2).shape)
    _rec(out, 'rollaxis.2', jnp.rollaxis(a, 1, a.ndim).shape)
    _rec(out, 'rollaxis.3', jnp.moveaxis(a, 2, 0).shape)
    _rec(out, 'rollaxis.4', jnp.moveaxis(a, 1, -1).shape)


def rot90(out):
    """`jnp.rot90`'s examples."""
    m = jnp.array([[1, 2, 3],
                   [4, 5, 6]])
    _rec(out, 'rot90.1', jnp.rot90(m))
    _rec(out, 'rot90.2', jnp.rot90(m, k=2))
    _rec(out, 'rot90.3', jnp.rot90(m, axes=(1, 0)))
    _rec(out, 'rot90.4', jnp.rot90(m, k=-1, axes=(0, 1)))
    m1 = jnp.array([[[1, 2, 3],
                     [4, 5, 6]],
                    [[7, 8, 9],
                     [10, 11, 12]]])
    _rec(out, 'rot90.6', jnp.rot90(m1, k=1, axes=(2, 1)))




def select(out):
    """`jnp.select`'s examples."""
    condlist = [
       jnp.array([False, True, False, False]),
       jnp.array([True, False, False, False]),
       jnp.array([False, True, True, False]),
    ]
    choicelist = [
       jnp.array([1, 2, 3, 4]),
       jnp.array([10, 20, 30, 40]),
       jnp.array([100, 200, 300, 400]),
    ]
    _rec(out, 'select.2', jnp.select(condlist, choicelist, default=0))
    default = 0
    _rec(out, 'select.4', jnp.where(condlist[0], choicelist[0], jnp.where(condlist[1], choicelist[1], jnp.where(condlist[2], choicelist[2], default))))


def shape(out):
    """`jnp.shape`'s examples."""
    x = jnp.arange(10)
    _rec(out, 'shape.1', jnp.shape(x))
    y = jnp.ones((2, 3))
    _rec(out, 'shape.3', jnp.shape(y))
    _rec(out, 'shape.4', jnp.shape(3.14))
    _rec(out, 'shape.5', x.shape)


def sign(out):
    """`jnp.sign`'s examples."""
    x = jnp.array([0., -3., 7.])
    _rec(out, 'sign.1', jnp.sign(x))
    x1 = jnp.array([1, 3+4j, 5j])
    _rec(out, 'sign.3', jnp.sign(x1))


def signbit(out):
    """`jnp.signbit`'s examples."""
    x = jnp.array([True, False])
    _rec(out, 'signbit.1', jnp.signbit(x))
    x = jnp.array([-2, -1, 0, 1, 2])
    _rec(out, 'signbit.3', jnp.signbit(x))
    x = jnp.array([-1.5, -0.0, 0.0, 1.5])
    _rec(out, 'signbit.5', jnp.signbit(x))
    x = jnp.array([jnp.nan, -jnp.nan, jnp.inf, -jnp.inf])
    _rec(out, 'signbit.7', jnp.signbit(x))


def sin(out):
    """`jnp.sin`'s examples."""
    pi = jnp.pi
    x = jnp.array([pi/4, pi/2, 3*pi/4, pi])
    _rec(out, 'sin.2.0', jnp.sin(x))


def sinc(out):
    """`jnp.sinc`'s examples."""
    x = jnp.array([-1, -0.5, 0, 0.5, 1])
    _rec(out, 'sinc.1.0', jnp.sinc(x))
    _rec(out, 'sinc.2.0', jnp.sin(jnp.pi * x) / (jnp.pi * x))
    f = jnp.sinc
    for i in range(1, 6):
      f = jax.grad(f)
      print(f"(d/dx)^{i} f(0.0) = {f(0.0):.2f}")


def sinh(out):
    """`jnp.sinh`'s examples."""
    x = jnp.array([[-2, 3, 5],
                   [0, -1, 4]])
    _rec(out, 'sinh.1.0', jnp.sinh(x))
    _rec(out, 'sinh.2.0', -1j * jnp.sin(1j * x))
    _rec(out, 'sinh.3.0', jnp.sinh(3 - 2j))
    _rec(out, 'sinh.4.0', -1j * jnp.sin(1j * (3 - 2j)))


def sort_complex(out):
    """`jnp.sort_complex`'s examples."""
    a = jnp.array([1+2j, 2+4j, 3-1j, 2+3j])
    _rec(out, 'sort_complex.1', jnp.sort_complex(a))
    a = jnp.array([[5, 3, 4],
                   [6, 9, 2]])
    _rec(out, 'sort_complex.3', jnp.sort_complex(a))


def sqrt(out):
    """`jnp.sqrt`'s examples."""
    x = jnp.array([-8-6j, 1j, 4])
    _rec(out, 'sqrt.1.0', jnp.sqrt(x))
    _rec(out, 'sqrt.2', jnp.sqrt(-1))


def square(out):
    """`jnp.square`'s examples."""
    x = jnp.array([3, -2, 5.3, 1])
    _rec(out, 'square.1', jnp.square(x))
    _rec(out, 'square.2', jnp.power(x, 2))
    x1 = jnp.array([2, 4, 5, 6])
    _rec(out, 'square.4', jnp.square(x1))
    x2 = jnp.array([1-3j, -1j, 2])
    _rec(out, 'square.6', jnp.square(x2))


def stack(out):
    """`jnp.stack`'s examples."""
    x = jnp.array([1, 2, 3])
    y = jnp.array([4, 5, 6])
    _rec(out, 'stack.2', jnp.stack([x, y]))
    _rec(out, 'stack.3', jnp.stack([x, y], axis=1))
    arr = jnp.stack([x, y], axis=1)
    x, y = jnp.unstack(arr, axis=1)
    _rec(out, 'stack.6', x)
    _rec(out, 'stack.7', y)


def std(out):
    """`jnp.std`'s examples."""
    x = jnp.array([[1, 3, 4, 2],
                   [4, 2, 5, 3],
                   [5, 4, 2, 3]])
    _rec(out, 'std.1.0', jnp.std(x))
    _rec(out, 'std.2.0', jnp.std(x, axis=0))
    _rec(out, 'std.3.0', jnp.std(x, axis=0, keepdims=True))
    _rec(out, 'std.4.0', jnp.std(x, axis=0, keepdims=True, ddof=1))
    where = jnp.array([[1, 0, 1, 0],
                       [0, 1, 0, 1],
                       [1, 1, 1, 0]], dtype=bool)
    _rec(out, 'std.6', jnp.std(x, axis=0, keepdims=True, where=where))


def subtract(out):
    """`jnp.subtract`'s examples."""
    x = jnp.arange(4)
    _rec(out, 'subtract.1', jnp.subtract(x, 10))
    _rec(out, 'subtract.2', x - 10)


def sum(out):
    """`jnp.sum`'s examples."""
    x = jnp.array([[1, 3, 4, 2],
                   [5, 2, 6, 3],
                   [8, 1, 3, 9]])
    _rec(out, 'sum.1', jnp.sum(x))
    _rec(out, 'sum.2', jnp.sum(x, axis=1))
    _rec(out, 'sum.3', jnp.sum(x, axis=1, keepdims=True))
    where=jnp.array([[0, 0, 1, 0],
                     [0, 0, 1, 1],
                     [1, 1, 1, 0]], dtype=bool)
    _rec(out, 'sum.5', jnp.sum(x, axis=1, keepdims=True, where=where))
    where=jnp.array([[False],
                     [False],
                     [False]])
    _rec(out, 'sum.7', jnp.sum(x, axis=0, keepdims=True, where=where))


def swapaxes(out):
    """`jnp.swapaxes`'s examples."""
    a = jnp.ones((2, 3, 4, 5))
    _rec(out, 'swapaxes.1', jnp.swapaxes(a, 1, 3).shape)
    _rec(out, 'swapaxes.2', a.swapaxes(1, 3).shape)
    _rec(out, 'swapaxes.3', a.transpose(0, 3, 2, 1).shape)


def tan(out):
    """`jnp.tan`'s examples."""
    pi = jnp.pi
    x = jnp.array([0, pi/6, pi/4, 3*pi/4, 5*pi/6])
    _rec(out, 'tan.2.0', jnp.tan(x))


def tanh(out):
    """`jnp.tanh`'s examples."""
    x = jnp.array([[-1, 0, 1],
                   [3, -2, 5]])
    _rec(out, 'tanh.1.0', jnp.tanh(x))
    _rec(out, 'tanh.2.0', -1j * jnp.tan(1j * x))
    _rec(out, 'tanh.3.0', jnp.tanh(2 - 5j))
    _rec(out, 'tanh.4.0', -1j * jnp.tan(1j * (2 - 5j)))


def tensordot(out):
    """`jnp.tensordot`'s examples."""
    x1 = jnp.arange(24.).reshape(2, 3, 4)
    x2 = jnp.ones((3, 4, 5))
    _rec(out, 'tensordot.2', jnp.tensordot(x1, x2))
    _rec(out, 'tensordot.3', jnp.tensordot(x1, x2, axes=([1, 2], [0, 1])))
    _rec(out, 'tensordot.4', jnp.einsum('ijk,jkm->im', x1, x2))
    x1 = jnp.array([[1, 2],
                    [3, 4]])
    x2 = jnp.array([[1, 2, 3],
                    [4, 5, 6]])
    _rec(out, 'tensordot.7', jnp.linalg.tensordot(x1, x2, axes=1))
    _rec(out, 'tensordot.8', x1 @ x2)
    x1 = jnp.array([1, 2])
    x2 = jnp.array([1, 2, 3])
    _rec(out, 'tensordot.11', jnp.linalg.tensordot(x1, x2, axes=0))
    _rec(out, 'tensordot.12', jnp.outer(x1, x2))


def tile(out):
    """`jnp.tile`'s examples."""
    arr = jnp.array([1, 2])
    _rec(out, 'tile.1', jnp.tile(arr, 2))
    arr = jnp.array([[1, 2],
                     [3, 4,]])
    _rec(out, 'tile.3', jnp.tile(arr, (2, 1)))


def trace(out):
    """`jnp.trace`'s examples."""
    x = jnp.arange(1, 9).reshape(2, 2, 2)
    _rec(out, 'trace.1', x)
    _rec(out, 'trace.2', jnp.trace(x))
    _rec(out, 'trace.3', jnp.trace(x, offset=1))
    _rec(out, 'trace.4', jnp.trace(x, axis1=1, axis2=2))
    _rec(out, 'trace.5', jnp.trace(x, offset=1, axis1=1, axis2=2))


def transpose(out):
    """`jnp.transpose`'s examples."""
    x = jnp.array([1, 2, 3, 4])
    _rec(out, 'transpose.1', jnp.transpose(x))
    x = jnp.array([[1, 2],
                   [3, 4]])
    _rec(out, 'transpose.3', jnp.transpose(x))
    x = jnp.zeros(shape=(3, 4, 5))
    _rec(out, 'transpose.5', jnp.transpose(x).shape)
    _rec(out, 'transpose.6', jnp.transpose(x, (0, 2, 1)).shape)
    _rec(out, 'transpose.7', jnp.matrix_transpose(x).shape)
    x = jnp.array([[1, 2],
                   [3, 4]])
    _rec(out, 'transpose.9', x.transpose())
    _rec(out, 'transpose.10', x.T)


def trapezoid(out):
    """`jnp.trapezoid`'s examples."""
    y = jnp.array([1, 2, 3, 2, 3, 2, 1])
    _rec(out, 'trapezoid.1', jnp.trapezoid(y, dx=1.0))
    x = jnp.array([0, 2, 5, 7, 10, 15, 20])
    _rec(out, 'trapezoid.3', jnp.trapezoid(y, x))
    x = jnp.linspace(0, 2 * jnp.pi, 1000)
    y = jnp.sin(x) ** 2
    result = jnp.trapezoid(y, x)
    _rec(out, 'trapezoid.7', jnp.allclose(result, jnp.pi))


def tri(out):
    """`jnp.tri`'s examples."""
    _rec(out, 'tri.0', jnp.tri(3))
    _rec(out, 'tri.1', jnp.tri(3, 4))
    _rec(out, 'tri.2', jnp.tri(3, k=1))
    _rec(out, 'tri.3', jnp.tri(3, 4, k=-1))


def tril(out):
    """`jnp.tril`'s examples."""
    x = jnp.array([[1, 2, 3, 4],
                   [5, 6, 7, 8],
                   [9, 10, 11, 12]])
    _rec(out, 'tril.1', jnp.tril(x))
    _rec(out, 'tril.2', jnp.tril(x, k=1))
    _rec(out, 'tril.3', jnp.tril(x, k=-1))
    x1 = jnp.array([[[1, 2],
                     [3, 4]],
                    [[5, 6],
                     [7, 8]]])
    _rec(out, 'tril.5', jnp.tril(x1))


def tril_indices(out):
    """`jnp.tril_indices`'s examples."""
    _rec(out, 'tril_indices.0', jnp.tril_indices(3))
    _rec(out, 'tril_indices.1', jnp.tril_indices(3, m=2))
    _rec(out, 'tril_indices.2', jnp.tril_indices(3, k=1))
    _rec(out, 'tril_indices.3', jnp.tril_indices(3, k=-1))


def tril_indices_from(out):
    """`jnp.tril_indices_from`'s examples."""
    arr = jnp.array([[1, 2, 3],
                     [4, 5, 6],
                     [7, 8, 9]])
    _rec(out, 'tril_indices_from.1', jnp.tril_indices_from(arr))
    ind = jnp.tril_indices_from(arr)
    _rec(out, 'tril_indices_from.3', arr[ind])
    _rec(out, 'tril_indices_from.4', jnp.tril(arr))
    _rec(out, 'tril_indices_from.5', jnp.tril_indices_from(arr, k=1))
    _rec(out, 'tril_indices_from.6', jnp.tril_indices_from(arr, k=-1))


def triu(out):
    """`jnp.triu`'s examples."""
    x = jnp.array([[1, 2, 3],
                   [4, 5, 6],
                   [7, 8, 9],
                   [10, 11, 12]])
    _rec(out, 'triu.1', jnp.triu(x))
    _rec(out, 'triu.2', jnp.triu(x, k=1))
    _rec(out, 'triu.3', jnp.triu(x, k=-1))
    x1 = jnp.array([[[1, 2],
                     [3, 4]],
                    [[5, 6],
                     [7, 8]]])
    _rec(out, 'triu.5', jnp.triu(x1))


def triu_indices(out):
    """`jnp.triu_indices`'s examples."""
    _rec(out, 'triu_indices.0', jnp.triu_indices(3))
    _rec(out, 'triu_indices.1', jnp.triu_indices(3, m=2))
    _rec(out, 'triu_indices.2', jnp.triu_indices(3, k=1))
    _rec(out, 'triu_indices.3', jnp.triu_indices(3, k=-1))


def triu_indices_from(out):
    """`jnp.triu_indices_from`'s examples."""
    arr = jnp.array([[1, 2, 3],
                     [4, 5, 6],
                     [7, 8, 9]])
    _rec(out, 'triu_indices_from.1', jnp.triu_indices_from(arr))
    ind = jnp.triu_indices_from(arr)
    _rec(out, 'triu_indices_from.3', arr[ind])
    _rec(out, 'triu_indices_from.4', jnp.triu(arr))
    _rec(out, 'triu_indices_from.5', jnp.triu_indices_from(arr, k=1))
    _rec(out, 'triu_indices_from.6', jnp.triu_indices_from(arr, k=-1))


def true_divide(out):
    """`jnp.true_divide`'s examples."""
    x1 = jnp.array([3, 4, 5])
    x2 = 2
    _rec(out, 'true_divide.2', jnp.true_divide(x1, x2))
    x1 = 24
    x2 = jnp.array([3, 4, 6j])
    _rec(out, 'true_divide.5', jnp.true_divide(x1, x2))
    x1 = jnp.array([1j, 9+5j, -4+2j])
    x2 = 3j
    _rec(out, 'true_divide.8', jnp.true_divide(x1, x2))


def trunc(out):
    """`jnp.trunc`'s examples."""
    key = jax.random.key(42)
    x = jax.random.uniform(key, (3, 3), minval=-10, maxval=10)
    _rec(out, 'trunc.2.0', x)
    _rec(out, 'trunc.3', jnp.trunc(x))


def unique_all(out):
    """`jnp.unique_all`'s examples."""
    x = jnp.array([3, 4, 1, 3, 1])
    result = jnp.unique_all(x)
    _rec(out, 'unique_all.2', result.values)
    _rec(out, 'unique_all.3', result.indices)
    _rec(out, 'unique_all.4', jnp.all(result.values == x[result.indices]))
    _rec(out, 'unique_all.5', result.inverse_indices)
    _rec(out, 'unique_all.6', jnp.all(x == result.values[result.inverse_indices]))
    _rec(out, 'unique_all.7', result.counts)


def unique_counts(out):
    """`jnp.unique_counts`'s examples."""
    x = jnp.array([3, 4, 1, 3, 1])
    result = jnp.unique_counts(x)
    _rec(out, 'unique_counts.2', result.values)
    _rec(out, 'unique_counts.3', result.counts)


def unique_inverse(out):
    """`jnp.unique_inverse`'s examples."""
    x = jnp.array([3, 4, 1, 3, 1])
    result = jnp.unique_inverse(x)
    _rec(out, 'unique_inverse.2', result.values)
    _rec(out, 'unique_inverse.3', result.inverse_indices)
    _rec(out, 'unique_inverse.4', jnp.all(x == result.values[result.inverse_indices]))


def unique_values(out):
    """`jnp.unique_values`'s examples."""
    x = jnp.array([3, 4, 1, 3, 1])
    _rec(out, 'unique_values.1', jnp.unique_values(x))


def unravel_index(out):
    """`jnp.unravel_index`'s examples."""
    x = jnp.array([2., 3., 4., 5., 6., 7.])
    indices = jnp.array([1, 3, 5])
    _rec(out, 'unravel_index.2.0', x[indices])
    shape = (2, 3)
    x_2D = x.reshape(shape)
    indices_2D = jnp.unravel_index(indices, shape)
    _rec(out, 'unravel_index.6', indices_2D)
    _rec(out, 'unravel_index.7.0', x_2D[indices_2D])
    _rec(out, 'unravel_index.8', jnp.ravel_multi_index(indices_2D, shape))


def vander(out):
    """`jnp.vander`'s examples."""
    x = jnp.array([1, 2, 3, 4])
    _rec(out, 'vander.1', jnp.vander(x))
    _rec(out, 'vander.2', jnp.vander(x, N=2))
    _rec(out, 'vander.3', jnp.vander(x, increasing=True))


def var(out):
    """`jnp.var`'s examples."""
    x = jnp.array([[1, 3, 4, 2],
                   [5, 2, 6, 3],
                   [8, 4, 2, 9]])
    _rec(out, 'var.1.0', jnp.var(x))
    _rec(out, 'var.2', jnp.var(x, axis=1))
    _rec(out, 'var.3', jnp.var(x, axis=1, keepdims=True))
    _rec(out, 'var.4.0', jnp.var(x, axis=1, keepdims=True, ddof=1))
    where = jnp.array([[1, 0, 1, 0],
                       [0, 1, 1, 0],
                       [1, 1, 1, 0]], dtype=bool)
    _rec(out, 'var.6.0', jnp.var(x, axis=1, keepdims=True, where=where))


def vdot(out):
    """`jnp.vdot`'s examples."""
    x = jnp.array([1j, 2j, 3j])
    y = jnp.array([1., 2., 3.])
    _rec(out, 'vdot.2', jnp.vdot(x, y))
    _rec(out, 'vdot.3', jnp.dot(x, y))


def vecdot(out):
    """`jnp.vecdot`'s examples."""
    a = jnp.array([1j, 2j, 3j])
    b = jnp.array([4., 5., 6.])
    _rec(out, 'vecdot.2', jnp.linalg.vecdot(a, b))
    a = jnp.array([[1, 2, 3],
                   [4, 5, 6]])
    b = jnp.array([[2, 3, 4]])
    _rec(out, 'vecdot.5', jnp.linalg.vecdot(a, b, axis=-1))


def vecmat(out):
    """`jnp.vecmat`'s examples."""
    x1 = jnp.array([[1, 2, 3]])
    x2 = jnp.array([[4, 5],
                    [6, 7],
                    [8, 9]])
    _rec(out, 'vecmat.2', jnp.vecmat(x1, x2))
    x1 = jnp.array([[1, 2, 3],
                    [4, 5, 6]])
    _rec(out, 'vecmat.4', jnp.vecmat(x1, x2))


def vsplit(out):
    """`jnp.vsplit`'s examples."""
    x = jnp.array([1, 2, 3, 4, 5, 6])
    x1, x2 = jnp.vsplit(x, 2)
    _rec(out, 'vsplit.2.0', x1)
    _rec(out, 'vsplit.2.1', x2)
    x = jnp.array([[1, 2, 3, 4],
                   [5, 6, 7, 8]])
    x1, x2 = jnp.vsplit(x, 2)
    _rec(out, 'vsplit.5.0', x1)
    _rec(out, 'vsplit.5.1', x2)


def vstack(out):
    """`jnp.vstack`'s examples."""
    _rec(out, 'vstack.0', jnp.vstack([1, 2, 3]))
    x = jnp.arange(4)
    y = jnp.ones(4)
    _rec(out, 'vstack.3', jnp.vstack([x, y]))
    x = x.reshape(1, 4)
    y = y.reshape(1, 4)
    _rec(out, 'vstack.6', jnp.vstack([x, y]))


def where(out):
    """`jnp.where`'s examples."""
    x = jnp.arange(10)
    _rec(out, 'where.1', jnp.where(x > 4))
    _rec(out, 'where.2', jnp.nonzero(x > 4))
    _rec(out, 'where.3', jnp.where(x > 4, x, 0))


def zeros(out):
    """`jnp.zeros`'s examples."""
    _rec(out, 'zeros.0', jnp.zeros(4))
    _rec(out, 'zeros.1', jnp.zeros((2, 3), dtype=bool))


def jax_nn_identity(out):
    """`jax.nn.identity`'s examples."""
    _rec(out, 'jax_nn_identity.0', jax.nn.identity(jax.numpy.array([-2.0, -1.0, -0.5, 0, 0.5, 1.0, 2.0])))


def jax_nn_one_hot(out):
    """`jax.nn.one_hot`'s examples."""
    _rec(out, 'jax_nn_one_hot.0', jax.nn.one_hot(jnp.array([0, 1, 2]), 3))
    _rec(out, 'jax_nn_one_hot.1', jax.nn.one_hot(jnp.array([-1, 3]), 3))


def jax_nn_relu(out):
    """`jax.nn.relu`'s examples."""
    _rec(out, 'jax_nn_relu.0', jax.nn.relu(jax.numpy.array([-2.0, -1.0, -0.5, 0, 0.5, 1.0, 2.0])))


def jax_nn_tanh(out):
    """`jax.nn.tanh`'s examples."""
    x = jnp.array([[-1, 0, 1],
                   [3, -2, 5]])
    _rec(out, 'jax_nn_tanh.1.0', jnp.tanh(x))
    _rec(out, 'jax_nn_tanh.2.0', -1j * jnp.tan(1j * x))
    _rec(out, 'jax_nn_tanh.3.0', jnp.tanh(2 - 5j))
    _rec(out, 'jax_nn_tanh.4.0', -1j * jnp.tan(1j * (2 - 5j)))


def lax_broadcast(out):
    """`lax.broadcast`'s examples."""
    import jax.numpy as jnp
    from jax import lax
    arr = jnp.zeros((4, 5))
    result = lax.broadcast(arr, (2, 3))
    _rec(out, 'lax_broadcast.4', result.shape)


def lax_broadcast_in_dim(out):
    """`lax.broadcast_in_dim`'s examples."""
    import jax.numpy as jnp
    from jax import lax
    import numpy as np
    arr = jnp.arange(3).reshape(3, 1)
    target_shape = (2, 3, 4)
    result = lax.broadcast_in_dim(arr, target_shape, broadcast_dimensions=(1, 2))
    _rec(out, 'lax_broadcast_in_dim.6', result.shape)
    result_jnp = jnp.broadcast_to(result, target_shape)
    _rec(out, 'lax_broadcast_in_dim.8', np.testing.assert_array_equal(result, result_jnp))
    result = lax.broadcast_in_dim(arr, target_shape, broadcast_dimensions=(1, 0))
    _rec(out, 'lax_broadcast_in_dim.10', result.shape)
    result_jnp = jnp.broadcast_to(jnp.expand_dims(arr, 0).transpose(), target_shape)
    _rec(out, 'lax_broadcast_in_dim.12', np.testing.assert_array_equal(result, result_jnp))


def lax_broadcast_shapes(out):
    """`lax.broadcast_shapes`'s examples."""
    _rec(out, 'lax_broadcast_shapes.0', jnp.broadcast_shapes((1,), (4,)))
    _rec(out, 'lax_broadcast_shapes.1', jnp.broadcast_shapes((3, 1), (4,)))
    _rec(out, 'lax_broadcast_shapes.2', jnp.broadcast_shapes((3, 1), (1, 4), (5, 1, 1)))
    _raises(out, 'lax_broadcast_shapes.3', lambda: jnp.broadcast_shapes((3, 1), (4, 1)))


def lax_index_in_dim(out):
    """`lax.index_in_dim`'s examples."""
    x = jnp.arange(4)
    _rec(out, 'lax_index_in_dim.1', lax.index_in_dim(x, 2))
    _rec(out, 'lax_index_in_dim.2', lax.index_in_dim(x, 2, keepdims=False))
    x = jnp.arange(12).reshape(3, 4)
    _rec(out, 'lax_index_in_dim.4', x)
    _rec(out, 'lax_index_in_dim.5', lax.index_in_dim(x, 1))
    _rec(out, 'lax_index_in_dim.6', lax.index_in_dim(x, 1, axis=1, keepdims=False))


def lax_map(out):
    """`lax.map`'s examples."""
    x = jnp.ones((10, 3, 4))
    def f(x):
      print('inner shape:', x.shape)
      return x + 1
    y = lax.map(f, x, batch_size=3)
    _rec(out, 'lax_map.3', y.shape)


def lax_optimization_barrier(out):
    """`lax.optimization_barrier`'s examples."""
    def f(x):
      return jax.lax.optimization_barrier(jax.lax.sin(x)) + jax.lax.sin(x)
    _rec(out, 'lax_optimization_barrier.1', jax.jit(f)(0.0))


def lax_pad(out):
    """`lax.pad`'s examples."""
    from jax import lax
    import jax.numpy as jnp
    x = jnp.array([1, 2, 3, 4])
    _rec(out, 'lax_pad.3', lax.pad(x, 0, [(2, 3, 0)]))
    _rec(out, 'lax_pad.4', lax.pad(x, 0, [(0, 0, 1)]))
    x = jnp.array([[1, 2, 3],
                   [4, 5, 6]])
    _rec(out, 'lax_pad.6', lax.pad(x, -1, [(2, 2, 0), (2, 2, 0)]))
    x = jnp.array([1, 2, 3, 4, 5], dtype=jnp.int32)
    _rec(out, 'lax_pad.8', lax.pad(x, 0, [(-1, -2, 0)]))


def lax_slice(out):
    """`lax.slice`'s examples."""
    x = jnp.arange(12).reshape(3, 4)
    _rec(out, 'lax_slice.1', x)
    _rec(out, 'lax_slice.2', lax.slice(x, (1, 0), (3, 2)))
    _rec(out, 'lax_slice.3', lax.slice(x, (0, 0), (3, 4), (1, 2)))
    _rec(out, 'lax_slice.4', x[1:3, 0:2])
    _rec(out, 'lax_slice.5', x[0:3, 0:4:2])


def lax_slice_in_dim(out):
    """`lax.slice_in_dim`'s examples."""
    x = jnp.arange(4)
    _rec(out, 'lax_slice_in_dim.1', lax.slice_in_dim(x, 1, 3))
    x = jnp.arange(12).reshape(4, 3)
    _rec(out, 'lax_slice_in_dim.3', x)
    _rec(out, 'lax_slice_in_dim.4', lax.slice_in_dim(x, 1, 3))
    _rec(out, 'lax_slice_in_dim.5', lax.slice_in_dim(x, 1, 3, axis=1))


def lax_stop_gradient(out):
    """`lax.stop_gradient`'s examples."""
    def f1(x):
      return x ** 2
    x = jnp.float32(3.0)
    _rec(out, 'lax_stop_gradient.2', f1(x))
    _rec(out, 'lax_stop_gradient.3', jax.grad(f1)(x))
    def f2(x):
      return jax.lax.stop_gradient(x) ** 2
    _rec(out, 'lax_stop_gradient.5', f2(x))
    _rec(out, 'lax_stop_gradient.6', jax.grad(f2)(x))


def lax_top_k(out):
    """`lax.top_k`'s examples."""
    x = jnp.array([9., 3., 6., 4., 10.])
    values, indices = jax.lax.top_k(x, 3)
    _rec(out, 'lax_top_k.2', values)
    _rec(out, 'lax_top_k.3', indices)



EXAMPLES = [absolute, add, all, allclose, angle, any, append, apply_along_axis, arange, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, argmax, argmin, argwhere, array, array_equal, array_equiv, array_repr, array_str, asarray, atleast_1d, atleast_2d, atleast_3d, average, bartlett, bitwise_or, bitwise_xor, blackman, block, broadcast_arrays, broadcast_shapes, broadcast_to, can_cast, cbrt, ceil, choose, clip, column_stack, concat, concatenate, conjugate, copy, copysign, corrcoef, correlate, cos, cosh, count_nonzero, cov, cross, cumulative_prod, cumulative_sum, deg2rad, diag, diag_indices, diag_indices_from, diagflat, diagonal, diff, divmod, dot, dstack, ediff1d, empty, equal, exp, exp2, expm1, eye, fabs, fill_diagonal, flatnonzero, flip, fliplr, flipud, float_power, floor, fmin, fmod, from_dlpack, full, gcd, geomspace, greater, greater_equal, hamming, hanning, heaviside, hsplit, hstack, hypot, identity, imag, indices, inner, isclose, iscomplex, iscomplexobj, isfinite, isin, isinf, isnan, isneginf, isposinf, isreal, isrealobj, isscalar, issubdtype, iterable, ix_, kron, lcm, less, less_equal, linspace, log, log10, log1p, log2, logaddexp, logaddexp2, logical_and, logical_not, logical_or, logical_xor, logspace, matmul, matrix_transpose, matvec, max, maximum, mean, median, meshgrid, min, minimum, modf, moveaxis, multiply, nan_to_num, nanargmax, nanargmin, nancumprod, nancumsum, nanmax, nanmean, nanmedian, nanmin, nanprod, nanstd, nansum, nanvar, ndim, negative, nextafter, not_equal, ones, outer, permute_dims, polyval, positive, power, prod, promote_types, ptp, rad2deg, ravel, ravel_multi_index, real, reciprocal, reshape, resize, result_type, right_shift, rint, roll, rollaxis, rot90, select, shape, sign, signbit, sin, sinc, sinh, sort_complex, sqrt, square, stack, std, subtract, sum, swapaxes, tan, tanh, tensordot, tile, trace, transpose, trapezoid, tri, tril, tril_indices, tril_indices_from, triu, triu_indices, triu_indices_from, true_divide, trunc, unique_all, unique_counts, unique_inverse, unique_values, unravel_index, vander, var, vdot, vecdot, vecmat, vsplit, vstack, where, zeros, jax_nn_identity, jax_nn_one_hot, jax_nn_relu, jax_nn_tanh, lax_broadcast, lax_broadcast_in_dim, lax_broadcast_shapes, lax_index_in_dim, lax_map, lax_optimization_barrier, lax_pad, lax_slice, lax_slice_in_dim, lax_stop_gradient, lax_top_k]


def main():
    out = {}
    for example in EXAMPLES:
        example(out)
    for key in DROPPED:
        out.pop(key)
    return out
