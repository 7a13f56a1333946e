"""PRNG keys and JAX's default generator, threefry2x32 with `jax_threefry_partitionable=True`, bit for bit.

Key data is `uint32[..., 2]`; inside the samplers a key is the pair of its words `(k1, k2)`. The functions
on keys (`split`, `fold_in`, `random_bits`) accept words with leading batch dimensions B and map over them,
as JAX's do under `vmap`: the samplers use that to draw one value per key inside loops (gamma) with no
transformation.
"""
from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from .. import dtypes, lax, tree_util
from .. import numpy as snp
from ..core import Tracer, aval_of
from ..primitives.structural import optimization_barrier_p

U32 = np.dtype(np.uint32)
UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: U32, 64: np.dtype(np.uint64)}
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
IMPL = "threefry2x32"


class KeyDType:
    """The dtype of typed keys, printed as JAX prints it (`key<fry>`). Not a NumPy dtype."""

    name = "key<fry>"

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, KeyDType)

    def __hash__(self):
        return hash(KeyDType)


KEY_DTYPE = KeyDType()


class PRNGKeyArray:
    """Typed keys from `key(seed)`: an array of keys of shape `shape` over `uint32[*shape, 2]` key data.

    A pytree (its one leaf is the key data), so it passes through `jit`. Like JAX's key arrays it has no
    arithmetic; unlike them it is not an `Array` and `stagec.numpy` functions do not accept it."""

    __slots__ = ("_data",)

    def __init__(self, data):
        self._data = data

    shape = property(lambda self: aval_of(self._data).shape[:-1])
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    dtype = property(lambda self: KEY_DTYPE)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        tail = (slice(None),) if any(i is Ellipsis for i in idx) else (Ellipsis, slice(None))
        return PRNGKeyArray(self._data[idx + tail])

    def reshape(self, *shape):
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return PRNGKeyArray(snp.reshape(self._data, tuple(shape) + (2,)))

    def __eq__(self, other):
        if not isinstance(other, PRNGKeyArray):
            return NotImplemented
        return snp.all(snp.equal(self._data, other._data), axis=-1)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else snp.logical_not(eq)

    __hash__ = None

    def __repr__(self):
        return f"Array({self.shape}, dtype={KEY_DTYPE}) overlaying:\n{self._data}"


tree_util.register_pytree_node(PRNGKeyArray, lambda k: ((k._data,), None), lambda _, c: PRNGKeyArray(c[0]))


def check_impl(impl, who: str) -> None:
    if impl not in (None, IMPL):
        raise NotImplementedError(f"{who}: stagec.random implements only the {IMPL!r} PRNG, not {impl!r}")


def check_key_data(data, who: str) -> None:
    """Validate raw key data as JAX's `random_wrap` does (same messages)."""
    if not all(hasattr(data, a) for a in ("ndim", "shape", "dtype")):
        raise TypeError(f"{who}: invalid PRNG key data: expected key_data to have ndim, shape, and dtype "
                        f"attributes. Got {data!r}")
    if data.ndim < 1:
        raise TypeError(f"{who}: invalid PRNG key data: expected key_data.ndim >= 1; got ndim={data.ndim}")
    if tuple(data.shape[-1:]) != (2,):
        raise TypeError(f"{who}: invalid PRNG key data: expected key_data.shape to end with (2,); got "
                        f"shape={tuple(data.shape)} for impl={IMPL}")
    if data.dtype != U32:
        raise TypeError(f"{who}: invalid PRNG key data: expected key_data.dtype = uint32; got dtype={data.dtype}")


def unwrap(name: str, key: Any, allow_batched: bool = False) -> tuple[Any, bool]:
    """(key data, whether `key` was a typed key) for a key argument of `name`, checked as JAX checks it."""
    if isinstance(key, PRNGKeyArray):
        data, typed, shape = key._data, True, key.shape
    elif isinstance(key, (np.ndarray, np.generic, int, float, complex, bool)) or hasattr(key, "aval"):
        check_key_data(key, name)
        data, typed, shape = key, False, tuple(key.shape)
    else:
        raise TypeError(f"{name}: unexpected PRNG key type {type(key)}")
    if not allow_batched and aval_of(data).ndim > 1:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape {shape} != (). "
                         f"Use vmap for batching.")
    return data, typed


def wrap(typed: bool, data):
    return PRNGKeyArray(data) if typed else data


# ---------------------------------------------------------------- threefry2x32


def _rotl(x, d: int):
    return lax.bitwise_or(lax.shift_left(x, lax.full_like(x, d)), lax.shift_right_logical(x, lax.full_like(x, 32 - d)))


def _threefry(k1, k2, x1, x2, add: Any, xor: Any, rotl: Any, const: Any) -> tuple:
    """Threefry-2x32's 20 rounds, in the arithmetic given: `add` and `xor` of two words, `rotl(x, d)`, `const(like,
    c)` (traced uint32, or Python integers)."""
    ks = (k1, k2, xor(xor(k1, k2), const(k1, 0x1BD11BDA)))
    x1, x2 = add(x1, ks[0]), add(x2, ks[1])
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x1 = add(x1, x2)
            x2 = xor(x1, rotl(x2, r))
        x1 = add(x1, ks[(i + 1) % 3])
        x2 = add(add(x2, ks[(i + 2) % 3]), const(x2, i + 1))
    return x1, x2


def threefry2x32(k1, k2, x1, x2) -> tuple:
    """The Threefry-2x32 block cipher (20 rounds) of counters (x1, x2) under key (k1, k2): uint32 of one shape."""
    return _threefry(k1, k2, x1, x2, lax.add, lax.bitwise_xor, _rotl, lax.full_like)


_M32 = 0xFFFFFFFF


def _rotl_int(x: int, d: int) -> int:
    x &= _M32
    return ((x << d) & _M32) | (x >> (32 - d))


def threefry2x32_ints(k1: int, k2: int, x1: int, x2: int) -> tuple[int, int]:
    """`threefry2x32` of one counter in Python's integers: exact, the same words. Sums and xors keep the bits above
    32 that they carry (their low 32 bits depend on their operands' low 32 bits only); each rotation and the result
    take the low 32."""
    x1, x2 = _threefry(k1, k2, x1, x2, operator.add, operator.xor, _rotl_int, lambda _, c: c)
    return x1 & _M32, x2 & _M32


def pair(data) -> tuple:
    """Key data (*B, 2) as the pair of its words (k1, k2), each uint32[*B]: the form used inside samplers,
    so that splitting a key is elementwise (no slicing) and fuses with what follows.

    The data goes through an optimization barrier first, so that every hash of a sampler runs with the module,
    even from a constant key: without it IREE's compile-time evaluation hashed a closed-over key's draws inside
    iree-compile, as one global per intermediate of the unrolled rounds (docs/passes.md, "Compile time"). One
    barrier on the key data, where a sampler starts: barriers between scalar ops split IREE's dispatches."""
    data = optimization_barrier_p.bind(data)
    batch = aval_of(data).shape[:-1]
    return tuple(lax.reshape(lax.slice(data, (0,) * len(batch) + (i,), batch + (i + 1,)), batch) for i in (0, 1))


def stack(key: tuple):
    """Key data (*B, 2) from a key pair, elementwise (a select on the last axis's index), so that it joins the
    hash's dispatch: IREE gives each operand of a concatenation a dispatch of its own."""
    shape = aval_of(key[0]).shape
    full, dims = shape + (2,), tuple(range(len(shape)))
    first = lax.eq(lax.broadcasted_iota(U32, full, len(shape)), lax.full(full, 0, U32))
    return lax.select(first, *(lax.broadcast_in_dim(w, full, dims) for w in key))


def _hash_iota(key: tuple, shape: tuple) -> tuple:
    """threefry2x32 of the 64-bit counters 0..prod(shape)-1 (as hi/lo words) laid out in `shape`, per key."""
    batch = aval_of(key[0]).shape
    n = math.prod(shape)
    check_count(n, shape)
    full = batch + shape
    hi = lax.broadcast_in_dim(np.array(0, U32), full, ())
    lo = lax.broadcast_in_dim(lax.reshape(lax.iota(U32, n), shape), full, tuple(range(len(batch), len(full))))
    k1, k2 = (lax.broadcast_in_dim(w, full, tuple(range(len(batch)))) for w in key)
    return threefry2x32(k1, k2, hi, lo)


def check_count(n: int, shape: tuple) -> None:
    if n >= 2 ** 32:
        raise NotImplementedError(f"stagec.random: {n} random values in one call (shape {shape}); at most "
                                  f"2**32 - 1 are supported")


def split(key: tuple, shape: tuple) -> tuple:
    """`shape` new keys per key: words (*B) -> words (*B, *shape)."""
    return _hash_iota(key, shape)


def split_n(key: tuple, n: int) -> list:
    """The `n` keys of `split(key, (n,))`, each of the batch shape of `key`: one hash of (n, *B) counters, sliced
    along its leading axis (a hash per key made IREE compile the unrolled rounds n times, ~0.1 s CPU each)."""
    k1, k2 = key
    if n == 1:
        return [threefry2x32(k1, k2, lax.full_like(k1, 0), lax.full_like(k1, 0))]
    b = aval_of(k1).shape
    full, dims = (n,) + b, tuple(range(1, len(b) + 1))
    x1, x2 = threefry2x32(*(lax.broadcast_in_dim(w, full, dims) for w in key), lax.full(full, 0, U32),
                          lax.broadcasted_iota(U32, full, 0))
    take = lambda w, i: lax.reshape(lax.slice(w, (i,) + (0,) * len(b), (i + 1,) + b), b)
    return [(take(x1, i), take(x2, i)) for i in range(n)]


def fold_in(key: tuple, msg) -> tuple:
    """A new key per key from a uint32 scalar `msg`."""
    k1, k2 = key
    return threefry2x32(k1, k2, lax.full_like(k1, 0), lax.broadcast_in_dim(msg, aval_of(k1).shape, ()))


def random_bits(key: tuple, bit_width: int, shape: tuple):
    """Uniform unsigned integers of `bit_width` bits: uint[*B, *shape] for a key pair of batch shape B."""
    return bits_of_words(*_hash_iota(key, shape), bit_width)


def bits_of_words(b1, b2, bit_width: int):
    """`random_bits`' integers from the two words a hash gave for their counter."""
    if bit_width == 64:
        u64 = UINT[64]
        hi = lax._convert_element_type(b1, u64)
        return lax.bitwise_or(lax.shift_left(hi, lax.full_like(hi, 32)), lax._convert_element_type(b2, u64))
    bits = lax.bitwise_xor(b1, b2)
    return bits if bit_width == 32 else lax._convert_element_type(bits, UINT[bit_width])


# ---------------------------------------------------------------- seeds


def seed_data(seed, who: str):
    """Key data uint32[2] for an integer seed, as JAX's `threefry_seed`: (high word, low word) of the seed
    as a 64-bit integer; 32-bit seeds (Python ints without x64 are int32, as in JAX) give (0, seed)."""
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"{who} accepts a scalar seed, but was given a PRNG key.")
    if isinstance(seed, (list, tuple)):
        seed = np.asarray(seed)
    if np.ndim(seed) if not hasattr(seed, "aval") else seed.ndim:
        raise TypeError(f"{who} accepts a scalar seed, but was given an array of shape {tuple(np.shape(seed))} "
                        f"!= (). Use vmap for batching")
    if type(seed) is int:
        seed = np.int64(seed).astype(dtypes.default_int())  # int32 without x64 keeps the low word, as JAX does
    dt = aval_of(seed).dtype
    if dtypes.kind(dt) not in "iu":
        raise TypeError(f"{who}: PRNG key seed must be an integer; got {seed!r}")
    if not isinstance(seed, Tracer) and not hasattr(seed, "_bv"):
        v = int(np.asarray(seed))
        return snp.asarray(np.array([(v >> 32) & 0xFFFFFFFF if dt.itemsize == 8 else 0, v & 0xFFFFFFFF], U32))
    if dt.itemsize == 8:
        k1 = lax._convert_element_type(lax.shift_right_logical(seed, lax.full_like(seed, 32)), U32)
    else:
        k1 = lax.full_like(lax._convert_element_type(seed, U32), 0)
    if dt.itemsize < 4 and dtypes.kind(dt) == "i":
        seed = lax._convert_element_type(seed, np.int32)  # sign-extend first, as JAX's int64 detour does
    k2 = lax._convert_element_type(seed, U32)
    return lax.concatenate([lax.reshape(k1, (1,)), lax.reshape(k2, (1,))], 0)


def canonical_shape(name: str, shape: Sequence[int]) -> tuple:
    """`shape` as a tuple of non-negative ints (an int `n` means `(n,)`, as in JAX)."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if isinstance(shape, Tracer) or not isinstance(shape, (Sequence, np.ndarray)) or isinstance(shape, str):
        raise TypeError(f"{name}: shapes must be 1D sequences of concrete values of integer type, got {shape!r}.")
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"{name}: shapes must be 1D sequences of concrete values of integer type, got "
                        f"{shape!r}.") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{name}: shape {dims} has a negative dimension")
    return dims
