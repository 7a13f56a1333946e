"""`stagec.random`: JAX's `jax.random` with its default PRNG (threefry2x32, partitionable), bit for bit.

The same key gives the same bits as JAX; floats agree exactly where JAX's computation is exact arithmetic
(uniform and everything drawn from it by +, *, comparisons) and to an ulp or two where a transcendental
function (log, log1p, erf_inv, pow) of IREE and of XLA differ. See docs/random.md.

Inside, each sampler is a function of a key pair (the two uint32 words of key data); called eagerly it runs
as a single compiled module (as JAX jits its samplers), under `stagec.jit` it is traced into the caller.
"""
from __future__ import annotations

import collections
import contextlib
import functools
import math
import threading
import warnings
from typing import Callable, Sequence

import numpy as np

from .. import dtypes, lax, tree_util
from .. import numpy as snp
from ..ad import custom_jvp, differentiated
from ..array import Array
from ..backend import get_backend
from ..config import SettingsCache, config
from ..core import (Eqn, Graph, Literal, ShapedArray, Tracer, Var, aval_of, current_trace, eager_plan,
                    to_numpy_constant, trace_subgraph, tracing_anywhere)
from ..primitives.control_flow import cond_p
from ..primitives.structural import reshape_p, slice_p
from ..primitives.elementwise import pow as _pow  # (the primitive: a positive base needs none of lax.pow's cases)
from . import _prng
from ._prng import KEY_DTYPE, PRNGKeyArray, canonical_shape
from .._missing import missing as _missing
from ._special import gamma_sample_grad, next_down, next_up, softmax, top_k_indices

__all__ = ["PRNGKey", "PRNGKeyArray", "bernoulli", "beta", "bits", "categorical", "choice", "dirichlet",
           "exponential", "fold_in", "gamma", "gumbel", "key", "key_data", "key_impl", "laplace", "loggamma",
           "logistic", "multivariate_normal", "normal", "permutation", "poisson", "randint", "shuffle", "split",
           "truncated_normal", "uniform", "wrap_key_data"]

_F32 = np.dtype(np.float32)


_STAGED: collections.OrderedDict = collections.OrderedDict()  # traced samplers for eager calls, LRU
_STAGED_MAX = 256
_EMPTY_CELL = object()
# Set while `_run` traces an eager call's kernel: a sampler may then choose the emission that compiles fastest
# (the user waits for it on the first call) over the one that runs fastest (`_gamma_one`).
_KERNEL = threading.local()


@contextlib.contextmanager
def _eager_kernel():
    """Trace as an eager call's kernel (`_KERNEL`)."""
    old = getattr(_KERNEL, "active", False)
    _KERNEL.active = True
    try:
        yield
    finally:
        _KERNEL.active = old


def _fn_key(fn: Callable):
    """`fn`'s code and the values it closes over (functions recursively), as a hashable key; None when a
    closed-over value is unhashable (an array): such a function is traced on every call."""
    cells = []
    for cell in fn.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:  # a variable the function could use but that was never assigned
            v = _EMPTY_CELL
        if callable(v) and hasattr(v, "__code__"):
            v = _fn_key(v)
            if v is None:
                return None
        cells.append((type(v), v))  # the type keeps 1, 1.0 and True apart
    key = (fn.__code__, fn.__defaults__, tuple(cells))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _run(fn: Callable, *args):
    """`fn(*args)`. Under a trace it is traced into it. Eagerly it runs as one compiled module (a one-branch
    `cond`, as JAX jits its samplers), not one per operation; the traced graph is kept per (function and
    the statics it closes over, argument types, x64), so a repeated call neither re-traces nor recompiles."""
    leaves, tree = tree_util.tree_flatten(list(args))
    if not tracing_anywhere[0] and (fk := _fn_key(fn)) is not None:  # eager: the call's plan, decided once
        key = (fk, tree, *map(aval_of, leaves))
        plan = _PLANS.get(key)
        if plan is None:
            plan = _PLANS.put(key, _kernel_plan(fn, args, leaves, tree))
        if plan:
            run, params, out_tree = plan
            return tree_util.tree_unflatten(out_tree, run([_ZERO, *leaves], params))
    if current_trace() is not None or any(map(differentiated, leaves)):
        return fn(*args)  # differentiated: op by op, so that the custom rules inside see the tangents
    graph, caps, out_tree = _staged(fn, args, leaves, tree)
    outs = cond_p.bind(_ZERO, *leaves, *caps, branches=(graph,), n_ops=len(leaves))
    return tree_util.tree_unflatten(out_tree, outs)


_ZERO = np.int32(0)  # the one-branch `cond`'s index
# (function and the statics it closes over, operands' tree and avals) -> an eager `_run`'s (plan, params, output
# tree), or () where its kernel captures values; emptied when a setting changes. A repeated call then costs its
# kernel's call, not a trace's lookup and the `cond`'s dispatch.
_PLANS = SettingsCache(512)


def _kernel_plan(fn: Callable, args: tuple, leaves: list, tree) -> tuple:
    """(eager plan, params, output tree) of the one-branch `cond` running `fn(*args)` (`_staged`), or ()."""
    graph, caps, out_tree = _staged(fn, args, leaves, tree)
    if caps:
        return ()
    params = {"branches": (graph,), "n_ops": len(leaves)}
    run = eager_plan(cond_p, [aval_of(_ZERO), *map(aval_of, leaves)], params)
    return () if run is None else (run, params, out_tree)


def _staged(fn: Callable, args: tuple, leaves: list, tree) -> tuple:
    """(graph, captured values, output tree) of `fn(*args)` traced as an eager call's kernel, kept in `_STAGED`
    when nothing is captured (`_run`)."""
    fk = _fn_key(fn)
    key = None if fk is None else (fk, tree, tuple(aval_of(x) for x in leaves), config.x64_enabled)
    hit = _STAGED.get(key) if key is not None else None
    if hit is not None:
        try:
            _STAGED.move_to_end(key)
        except KeyError:  # dropped by another thread meanwhile
            pass
        return hit[0], [], hit[1]
    with _eager_kernel():
        graph, caps, out_tree = trace_subgraph(fn, args, "cond")
    if caps and all(hasattr(c, "_bv") and c.aval.size <= _INLINED_MAX for c in caps):  # (concrete Arrays)
        graph, caps = _inlined(graph, caps), []
    if key is not None and not caps:
        _STAGED[key] = graph, out_tree
        if len(_STAGED) > _STAGED_MAX:
            _STAGED.popitem(last=False)
    return graph, caps, out_tree


# A traced sampler's captures are Arrays it made from its statics (no trace encloses `_staged`, and a closure
# holding an Array has no `_fn_key`): up to this many elements each, constants of its graph instead.
_INLINED_MAX = 1 << 10


def _inlined(graph: Graph, caps: list) -> Graph:
    """`graph` with its captured inputs (the last `len(caps)`) replaced by the captured values as constants: a
    sampler whose kernel captured values was traced again on every call (`snp.zeros(())` is an Array: eager
    binomial of shape () 19 ms a call, poisson 4 ms)."""
    n = len(graph.in_vars) - len(caps)
    lits = {v.id: Literal(to_numpy_constant(c, c.aval), c.aval) for v, c in zip(graph.in_vars[n:], caps)}
    sub = lambda x: lits.get(x.id, x) if type(x) is Var else x
    eqns = [Eqn(e.prim, [sub(x) for x in e.inputs], e.params, e.outputs, e.loc) for e in graph.eqns]
    return Graph(graph.in_vars[:n], eqns, [sub(o) for o in graph.outs], graph.name)


def _shape_of(x) -> tuple:
    return np.shape(x) if isinstance(x, (list, tuple)) else aval_of(x).shape


def _dtype(name: str, dtype, default, kinds: str, what: str) -> np.dtype:
    dt = dtypes.canonicalize(default if dtype is None else dtype, warn_from=name)
    if dtypes.kind(dt) not in kinds:
        raise ValueError(f"dtype argument to `{name}` must be {what} dtype, got {dt}")
    return dt


def _check_shape(name: str, shape: tuple, *param_shapes) -> None:
    if param_shapes:
        got = snp.broadcast_shapes(shape, *param_shapes, fname=name)
        if got != tuple(shape):
            raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape argument, and the "
                             f"result of broadcasting the shapes must equal the shape argument, but got result "
                             f"{got} for shape argument {tuple(shape)}.")


def _arraylike(x):
    return snp.asarray(x) if isinstance(x, (list, tuple)) else x


def _recip(c, dtype):
    """1/c rounded to `dtype`. JAX divides by constants (x / sqrt2) and XLA's algebraic simplifier turns that
    into x * (1/c); multiplying by the same rounded reciprocal gives JAX's bits."""
    return np.array(1, dtype) / np.array(c, dtype)


def _sample(fn: Callable, data, *args):
    """`_run` a sampler `fn(key, *args)` on key data, as the key pair samplers take."""
    return _run(lambda d, *a: fn(_prng.pair(d), *a), data, *args)


# An eager draw of up to `_BUCKET_MAX` values from one key, by a sampler elementwise in its values' flat index with
# scalar parameters, draws a power of two of values (`_BUCKET_MIN` or more) and keeps the first ones: value i is a
# function of counter i alone (threefry partitionable, as JAX's), so they are the shape's own values, and one kernel
# serves every size of a bucket (each shape compiled its own, ~0.5 s: a network's initial biases and small weights).
_BUCKET_MIN, _BUCKET_MAX = 1 << 10, 1 << 17


def _sample_flat(fn: Callable, data, shape: tuple, *args):
    """`_sample` of `fn(key, shape, *args)`, a sampler whose value i depends on the key, the scalar `args` and
    counter i only (`_BUCKET_MAX`)."""
    if not tracing_anywhere[0] and (fk := _fn_key(fn)) is not None:  # eager (nothing differentiated): the draw's
        key = (fk, tuple(shape), aval_of(data), *map(aval_of, args))  # steps, decided once (`_draw_steps`)
        steps = _DRAWS.get(key)
        if steps is None:
            steps = _DRAWS.put(key, _draw_steps(fn, data, shape, args))
        if steps:
            (run, params), *rest = steps
            (out,) = run([_ZERO, data, *args], params)
            for run, params in rest:
                (out,) = run([out], params)
            return out
    n = math.prod(shape)
    if _bucketed(n, data, args) and current_trace() is None and not any(map(differentiated, (data, *args))):
        size = _bucket(n)
        if (size,) != tuple(shape):
            out = _sample(lambda k, *a: fn(k, (size,), *a), data, *args)
            rest = aval_of(out).shape[1:]  # (a key's two words)
            if size != n:
                out = lax.slice(out, (0,) * (1 + len(rest)), (n, *rest))
            return lax.reshape(out, (*shape, *rest))
    return _sample(lambda k, *a: fn(k, shape, *a), data, *args)


def _bucketed(n: int, data, args) -> bool:
    """Whether a draw of `n` values takes its bucket's kernel (`_BUCKET_MAX`)."""
    return 0 < n <= _BUCKET_MAX and aval_of(data).shape == (2,) and all(aval_of(a).ndim == 0 for a in args)


def _bucket(n: int) -> int:
    return max(_BUCKET_MIN, 1 << (n - 1).bit_length())


# (sampler and the statics it closes over, shape, operands' avals) -> an eager draw's steps (`_draw_steps`), or ()
# where it has none; emptied when a setting changes. A repeated draw (a loop's `normal(key, (100,))`) then costs
# its kernel's call and the bucket's views, not a trace's lookup and three primitives' dispatch (32 -> 14 us).
_DRAWS = SettingsCache(512)


def _draw_steps(fn: Callable, data, shape: tuple, args: tuple) -> tuple:
    """What `_sample_flat` runs eagerly for such a call, as (eager plan, params) steps: the one-branch `cond` of
    the kernel (of the bucket's size, `_bucketed`), then the slice and reshape to `shape`; () where the call
    takes the general path (nothing drawn, a pytree operand, a kernel closing over an array)."""
    n = math.prod(shape)
    draw = (_bucket(n),) if _bucketed(n, data, args) else shape
    leaves, tree = tree_util.tree_flatten([data, *args])
    if n == 0 or len(leaves) != 1 + len(args):
        return ()
    plan = _kernel_plan(lambda d, *a: fn(_prng.pair(d), draw, *a), (data, *args), leaves, tree)
    if not plan or not tree_util.treedef_is_leaf(plan[2]):
        return ()
    steps, (aval,) = [plan[:2]], plan[1]["branches"][0].out_avals
    for prim, params in _to_shape(aval, draw, shape):
        run = eager_plan(prim, [aval], params)
        if run is None:
            return ()
        steps.append((run, params))
        (aval,) = prim.out_avals([aval], params)
    return tuple(steps)


def _to_shape(aval, draw: tuple, shape: tuple) -> list:
    """The (primitive, params) taking a bucket's draw (`aval`, of shape `draw` and a key's words) to `shape`."""
    if draw == shape:
        return []
    rest = aval.shape[1:]
    out = []
    if draw[0] != math.prod(shape):
        out.append((slice_p, {"start_indices": (0,) * (1 + len(rest)), "limit_indices": (math.prod(shape), *rest),
                              "strides": (1,) * (1 + len(rest))}))
    if len(shape) != 1:
        out.append((reshape_p, {"new_sizes": (*shape, *rest)}))
    return out


# ---------------------------------------------------------------- keys


def PRNGKey(seed, *, impl=None):
    """A legacy key: `uint32[2]` key data for an integer seed (JAX's `jax.random.PRNGKey`)."""
    _prng.check_impl(impl, "PRNGKey")
    return _seed(seed, "PRNGKey")


def key(seed, *, impl=None, dtype=None) -> PRNGKeyArray:
    """A typed key (a scalar `PRNGKeyArray`) for an integer seed (JAX's `jax.random.key`)."""
    if dtype is not None and impl is not None:
        raise ValueError("Cannot specify both `impl` and `dtype` arguments to stagec.random.key")
    _prng.check_impl(None if dtype in (None, KEY_DTYPE) else dtype, "key")
    _prng.check_impl(impl, "key")
    return PRNGKeyArray(_seed(seed, "key"))


def _seed(seed, who: str):
    if hasattr(seed, "_bv"):  # a concrete device array: hash it on the device
        return _run(lambda s: _prng.seed_data(s, who), seed)
    return _prng.seed_data(seed, who)


def key_data(keys):
    """The `uint32[..., 2]` data under typed or legacy keys."""
    data, _ = _prng.unwrap("key_data", keys, allow_batched=True)
    return snp.asarray(data) if isinstance(data, np.ndarray) else data


def wrap_key_data(key_bits_array, *, impl=None) -> PRNGKeyArray:
    """Typed keys over `uint32[..., 2]` key data."""
    _prng.check_impl(impl, "wrap_key_data")
    _prng.check_key_data(key_bits_array, "wrap_key_data")
    return PRNGKeyArray(snp.asarray(key_bits_array) if isinstance(key_bits_array, np.ndarray) else key_bits_array)


def key_impl(keys) -> str:
    _prng.unwrap("key_impl", keys, allow_batched=True)
    return _prng.IMPL


# An eager split or fold_in of one concrete key hashes its few counters with Python's integers
# (`_prng.threefry2x32_ints`: uint32 arithmetic, the kernel's words exactly): no kernel to compile (its first call
# took ~1 s), and a warm call as fast as the kernel's for up to this many keys (docs/log.md, 2026-12-03). More keys
# take the kernel.
HOST_KEYS = 4


def _host_words(data) -> tuple[int, int] | None:
    """The two words of a concrete key (uint32[2] data) in an eager call, else None."""
    if tracing_anywhere[0] or current_trace() is not None:
        return None
    v = data._value() if type(data) is Array else data if type(data) is np.ndarray else None
    if v is None or v.shape != (2,) or v.dtype != np.uint32:
        return None
    return int(v[0]), int(v[1])


def _host_keys(words: list, shape: tuple) -> Array:
    value = np.array(words, np.uint32).reshape(*shape, 2)
    value.flags.writeable = False
    return Array.on_host(value, ShapedArray(value.shape, value.dtype), get_backend())


def split(key, num: int | Sequence[int] = 2):
    """`num` new keys (or an array of keys of shape `num`), along a new leading axis."""
    data, typed = _prng.unwrap("split", key)
    shape = canonical_shape("split", tuple(num) if isinstance(num, Sequence) else (num,))
    n = math.prod(shape)
    if 0 < n <= HOST_KEYS and (words := _host_words(data)) is not None:
        return _prng.wrap(typed, _host_keys([_prng.threefry2x32_ints(*words, 0, i) for i in range(n)], shape))
    return _prng.wrap(typed, _sample_flat(lambda k, s: _prng.stack(_prng.split(k, s)), data, shape))


def fold_in(key, data):
    """A new key from `key` and a 32-bit integer `data`."""
    kd, typed = _prng.unwrap("fold_in", key)
    if np.ndim(data) if not hasattr(data, "aval") else data.ndim:
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape {_shape_of(data)} != (). "
                        f"Use vmap for batching.")
    if not hasattr(data, "aval"):
        data = np.asarray(data, np.uint32)  # OverflowError outside [0, 2**32), as JAX
    if (words := _host_words(kd)) is not None and (msg := _host_message(data)) is not None:
        return _prng.wrap(typed, _host_keys([_prng.threefry2x32_ints(*words, 0, msg)], ()))
    out = _sample(lambda k, m: _prng.stack(_prng.fold_in(k, lax._convert_element_type(m, np.uint32))), kd, data)
    return _prng.wrap(typed, out)


def _host_message(data) -> int | None:
    """fold_in's concrete integer or boolean scalar as the uint32 the kernel converts it to (integers wrap), else
    None."""
    v = data._value() if type(data) is Array else data if type(data) is np.ndarray else None
    if v is None or v.shape != () or v.dtype.kind not in "biu":
        return None
    return int(v) & 0xFFFFFFFF


def bits(key, shape: Sequence[int] = (), dtype=None):
    """Uniform random bits as unsigned integers (default uint32, uint64 with x64)."""
    kd, _ = _prng.unwrap("bits", key)
    default = np.uint64 if dtypes.default_int() == np.int64 else np.uint32
    dt = _dtype("bits", dtype, default, "u", "an unsigned int")
    shape = canonical_shape("bits", shape)
    return _sample_flat(lambda k, s: _prng.random_bits(k, dt.itemsize * 8, s), kd, shape)


# ---------------------------------------------------------------- uniform, normal and what derives from them


def _uniform(key, shape: tuple, dtype, minval=0.0, maxval=1.0, unit: bool = False):
    """Uniform floats in [minval, maxval) of shape (*B, *shape) for a key pair of batch shape B, as JAX's
    `_uniform`: random mantissa bits under exponent 0 give [1, 2), minus 1. (JAX bitcasts; m * 2**-nmant is
    the same number, exactly, so no bitcast primitive is needed.) `unit`: the bounds are 0 and 1 (`_unit_floats`)."""
    return _uniform_of(lambda nbits: _prng.random_bits(key, nbits, shape), aval_of(key[0]).shape + shape, dtype,
                       minval, maxval, unit)


_IEEE_FLOATS = frozenset(np.dtype(t) for t in (np.float32, np.float64))  # (NumPy rules: not float16)


def _unit_floats(mant, nmant: int, dtype):
    """mant * 2**-nmant (mant < 2**nmant, unsigned) as `dtype`, its bits made by integer operations: the exponent
    from the leading zeros, the fraction shifted under it. The draw in [0, 1) exactly, as `floats * (1 - 0) + 0`
    makes it, with no float step: an eager kernel's integer steps give their NumPy rules' bits, so the draw runs
    by those until its kernel is compiled (`eager.exact`)."""
    ut = aval_of(mant).dtype
    full = lambda v: lax.full_like(mant, v)
    top = lax.sub(full(8 * ut.itemsize - 1), lax.clz(mant))  # floor(log2(mant)) (mant 0: selected away below)
    bias = int(dtypes.finfo(dtype).maxexp) - 1
    exp = lax.shift_left(lax.add(top, full(bias - nmant)), full(nmant))
    frac = lax.bitwise_and(lax.shift_left(mant, lax.sub(full(nmant), top)), full((1 << nmant) - 1))
    out = lax.select(lax.eq(mant, full(0)), full(0), lax.bitwise_or(exp, frac))
    return lax.bitcast_convert_type(out, dtype)


def _round_bf16(x):
    """float32 `x` rounded to the nearest bfloat16 (ties to even), as float32, by integer ops on its bits."""
    u = lax.bitcast_convert_type(x, np.uint32)
    lsb = lax.bitwise_and(lax.shift_right_logical(u, lax.full_like(u, 16)), lax.full_like(u, 1))
    u = lax.add(u, lax.add(lax.full_like(u, 0x7FFF), lsb))
    return lax.bitcast_convert_type(lax.bitwise_and(u, lax.full_like(u, 0xFFFF0000)), np.float32)


def _uniform_of(bits: Callable, full: tuple, dtype, minval=0.0, maxval=1.0, unit: bool = False):
    """`_uniform` of the random integers `bits(width)` gives (of shape `full`); `unit`: the bounds are 0 and 1, and
    an eager kernel makes the floats by integer operations (`_unit_floats`)."""
    minval = snp.broadcast_to(lax._convert_element_type(minval, dtype), full)
    maxval = snp.broadcast_to(lax._convert_element_type(maxval, dtype), full)
    info = dtypes.finfo(dtype)
    # JAX's bfloat16 draw (XLA on CPU) is float32 arithmetic rounded to bfloat16 after each operation; IREE
    # dropped the rounding of `floats * (maxval - minval)` (extf of truncf), so 3 of 8 draws in [-6e4, 6e4) were
    # an ulp off, and an infinite bound gave +nan where JAX gives -nan. Computed in float32 here and the product
    # rounded to bfloat16 by integer ops (`_round_bf16`), which no pass folds away; so are the sum and the bounds
    # (IREE computed `convert(convert(lo, bf16), f32) + p` with the unrounded float32 `lo`: 1 of 6 draws off).
    if np.dtype(dtype) == dtypes.bfloat16:
        f32 = np.dtype(np.float32)
        minval, maxval = (_round_bf16(lax._convert_element_type(v, f32)) for v in (minval, maxval))
        raw = bits(8)
        mant = lax._convert_element_type(lax.shift_right_logical(raw, lax.full_like(raw, 8 - info.nmant)), f32)
        floats = lax.mul(mant, lax.full_like(mant, 2.0 ** -info.nmant))
        span = _round_bf16(lax.sub(maxval, minval))
        out = _round_bf16(lax.add(_round_bf16(lax.mul(floats, span)), minval))
        # The high half of the bits: a conversion would make JAX's -nan (of an infinite bound) +nan.
        hi16 = lax.shift_right_logical(lax.bitcast_convert_type(lax.max(minval, out), np.uint32),
                                       lax.full(full, 16, np.uint32))
        return lax.bitcast_convert_type(lax._convert_element_type(hi16, np.uint16), dtype)
    nbits, nmant = info.bits, info.nmant
    rng_bits = 8 if nmant < 8 else nbits
    raw = bits(rng_bits)
    if rng_bits != nbits:
        raw = lax._convert_element_type(raw, _prng.UINT[nbits])
    mant = lax.shift_right_logical(raw, lax.full_like(raw, rng_bits - nmant))
    if unit and getattr(_KERNEL, "active", False) and np.dtype(dtype) in _IEEE_FLOATS:
        return _unit_floats(mant, nmant, dtype)
    floats = lax._convert_element_type(mant, dtype)
    floats = lax.mul(floats, lax.full_like(floats, 2.0 ** -nmant))
    return lax.max(minval, lax.add(lax.mul(floats, lax.sub(maxval, minval)), minval))


def uniform(key, shape: Sequence[int] = (), dtype=None, minval=0.0, maxval=1.0):
    """Uniform floats in [minval, maxval)."""
    kd, _ = _prng.unwrap("uniform", key)
    dt = _dtype("uniform", dtype, float, "f", "a float")
    shape = canonical_shape("uniform", shape)
    minval, maxval = _arraylike(minval), _arraylike(maxval)
    for arg, v in (("minval", minval), ("maxval", maxval)):
        vs = _shape_of(v)
        if len(vs) > len(shape) or any(a not in (1, b) for a, b in zip(vs[::-1], shape[::-1])):
            raise TypeError(f"uniform: {arg} of shape {_shape_of(v)} does not broadcast to shape {shape}")
    if _unit_bounds(minval, maxval):
        return _sample_flat(lambda k, s: _uniform(k, s, dt, unit=True), kd, shape)
    return _sample_flat(lambda k, s, lo, hi: _uniform(k, s, dt, lo, hi), kd, shape, minval, maxval)


def _unit_bounds(minval, maxval) -> bool:
    """Whether the bounds are Python's 0 and 1 (the defaults): the draw needs no float step (`_unit_floats`)."""
    return type(minval) in (int, float) and type(maxval) in (int, float) and minval == 0 and maxval == 1 and \
        math.copysign(1.0, minval) == 1.0


def _normal_real(key, shape: tuple, dtype):
    return _normal_of(lambda nbits: _prng.random_bits(key, nbits, shape), aval_of(key[0]).shape + shape, dtype)


def _normal_of(bits: Callable, full: tuple, dtype):
    """Real normal floats of the random integers `bits(width)` gives (`_uniform_of`)."""
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype)
    u = _uniform_of(bits, full, dtype, lo, 1.0)
    return lax.mul(lax.full_like(u, np.sqrt(2)), lax.erf_inv(u))


def _normal(key, shape: tuple, dtype):
    if dtypes.kind(dtype) != "c":
        return _normal_real(key, shape, dtype)
    k_re, k_im = _prng.split_n(key, 2)
    real = np.finfo(dtype).dtype
    re, im = _normal_real(k_re, shape, real), _normal_real(k_im, shape, real)
    r = lax.full_like(re, _recip(np.sqrt(2), real))  # XLA rewrites JAX's `/ sqrt2` so: see `_recip`
    return lax.complex(lax.mul(re, r), lax.mul(im, r))


def normal(key, shape: Sequence[int] = (), dtype=None):
    """Standard normal floats (or complex: real and imaginary parts each of variance 1/2)."""
    kd, _ = _prng.unwrap("normal", key)
    dt = _dtype("normal", dtype, float, "fc", "a float or complex")
    shape = canonical_shape("normal", shape)
    return _sample_flat(lambda k, s: _normal(k, s, dt), kd, shape)


def _truncated_normal(key, lower, upper, shape, dtype):
    if shape is None:
        shape = snp.broadcast_shapes(aval_of(lower).shape, aval_of(upper).shape, fname="truncated_normal")
    else:
        _check_shape("truncated_normal", shape, aval_of(lower).shape, aval_of(upper).shape)
    lower = lax._convert_element_type(lower, dtype)
    upper = lax._convert_element_type(upper, dtype)
    sqrt2 = np.array(np.sqrt(2), dtype)
    a = lax.erf(lax.mul(lower, lax.full_like(lower, _recip(sqrt2, dtype))))
    b = lax.erf(lax.mul(upper, lax.full_like(upper, _recip(sqrt2, dtype))))
    u = _uniform(key, shape, dtype, a, b)
    out = lax.mul(lax.full_like(u, sqrt2), lax.erf_inv(u))
    return snp.minimum(next_down(upper), snp.maximum(next_up(lower), out))


def truncated_normal(key, lower, upper, shape: Sequence[int] | None = None, dtype=None):
    """Standard normal floats conditioned on the open interval (lower, upper)."""
    shape = None if shape is None else canonical_shape("truncated_normal", shape)
    kd, _ = _prng.unwrap("truncated_normal", key)
    dt = _dtype("truncated_normal", dtype, float, "f", "a float")
    if shape is not None:
        return _sample_flat(lambda k, s, lo, hi: _truncated_normal(k, lo, hi, s, dt), kd, shape, _arraylike(lower),
                            _arraylike(upper))
    return _sample(lambda k, lo, hi: _truncated_normal(k, lo, hi, shape, dt), kd, _arraylike(lower), _arraylike(upper))


def _bernoulli(key, p, shape, mode: str):
    if shape is None:
        shape = aval_of(p).shape
    else:
        _check_shape("bernoulli", shape, aval_of(p).shape)
    dtype = aval_of(p).dtype
    if mode == "high":
        u = _uniform(key, (2,) + shape, dtype)
        u1, u2 = u[0], u[1]
        u2 = u2 * 2.0 ** -dtypes.finfo(dtype).nmant
        return u2 < p - u1
    return _uniform(key, shape, dtype) < p


def bernoulli(key, p=0.5, shape: Sequence[int] | None = None, mode: str = "low"):
    """Booleans that are True with probability `p`. mode='high' uses twice the bits (for tiny p)."""
    shape = None if shape is None else canonical_shape("bernoulli", shape)
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    kd, _ = _prng.unwrap("bernoulli", key)
    p = _arraylike(p)
    dt = aval_of(p).dtype
    if dtypes.kind(dt) != "f":
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dt}.")
    if mode == "low" and shape is not None:
        return _sample_flat(lambda k, s, p: _bernoulli(k, lax._convert_element_type(p, dt), s, mode), kd, shape, p)
    return _sample(lambda k, p: _bernoulli(k, lax._convert_element_type(p, dt), shape, mode), kd, p)


def _exponential(key, shape: tuple, dtype):
    u = _uniform(key, shape, dtype)
    return lax.neg(lax.log1p(lax.neg(u)))


def exponential(key, shape: Sequence[int] = (), dtype=None):
    """Exponential floats of rate 1."""
    kd, _ = _prng.unwrap("exponential", key)
    dt = _dtype("exponential", dtype, float, "f", "a float")
    shape = canonical_shape("exponential", shape)
    return _sample_flat(lambda k, s: _exponential(k, s, dt), kd, shape)


def _gumbel(key, shape: tuple, dtype, mode: str):
    info = dtypes.finfo(dtype)
    if mode == "highest" and dtype == _F32:  # (JAX's: 64 random bits as a float in (0, 1), 1 - u past 1/2)
        bits = _prng.random_bits(key, 32, (2,) + shape)
        u32 = lambda v: np.array(v, np.uint32)  # noqa: E731
        neg = lax.bitwise_not(bits)
        carry = lax._convert_element_type(lax.eq(neg[1], lax.full_like(neg[1], u32(0xFFFFFFFF))), np.uint32)
        neg = lax.add(neg, lax.concatenate([carry[None], lax.full_like(carry, u32(1))[None]], 0))
        flip = lax.lt(bits[0], lax.full_like(bits[0], u32(1 << 31)))
        x = _float_of_64_bits(snp.where(flip, bits, neg))
        return snp.where(flip, -snp.log(-snp.log1p(-x)), -snp.log(-snp.log(x)))
    if mode in ("high", "highest"):
        u = _uniform(key, (2,) + shape, dtype)
        high, low = u[0], u[1]
        x = snp.where(high >= 0.5, high, high + 2.0 ** -info.nmant * low + float(info.tiny))
        return -snp.log(-snp.log1p(-x))
    return -snp.log(-snp.log(_uniform(key, shape, dtype, float(info.tiny), 1.0)))


def _float_of_64_bits(bits):
    """uint32[2, ...] (a 64-bit fixed-point fraction, high word first) as float32 in (0, 1), JAX's
    `_safe_int_to_float`: the leading one found by `lax.clz`, 23 bits after it as the mantissa."""
    info = dtypes.finfo(_F32)
    c = lambda v, like: lax.full_like(like, np.array(v, np.uint32))  # noqa: E731
    hi, lo = bits[0], bits[1]
    hiclz, loclz = lax.clz(hi), lax.clz(lo)
    hi_zero = lax.eq(hiclz, c(32, hi))
    mant = lax.bitwise_or(lax.shift_left(hi, hiclz), lax.select(hi_zero, lax.shift_left(lo, loclz),
                                                                lax.shift_right_logical(lo, lax.sub(c(32, hi), hiclz))))
    mant = lax.bitwise_and(lax.shift_right_logical(mant, c(32 - info.nmant - 1, hi)), c((1 << info.nmant) - 1, hi))
    e = lax.sub(c(-info.minexp, hi), lax.select(hi_zero, lax.add(c(32, hi), loclz), hiclz))
    e = lax.bitwise_and(lax.shift_left(e, c(info.nmant, hi)), c((1 << 30) - (1 << (info.nmant - 1)), hi))
    return lax.bitcast_convert_type(lax.bitwise_or(e, mant), _F32)


def _gumbel_mode(mode):
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    return mode


def gumbel(key, shape: Sequence[int] = (), dtype=None, mode: str | None = None):
    """Standard Gumbel floats. mode='high' uses twice the bits (a larger range of extreme values)."""
    kd, _ = _prng.unwrap("gumbel", key)
    dt = _dtype("gumbel", dtype, float, "f", "a float")
    shape = canonical_shape("gumbel", shape)
    mode = _gumbel_mode(mode)
    if mode == "low":  # (the others draw 2 x shape values: value i reads counters i and n + i)
        return _sample_flat(lambda k, s: _gumbel(k, s, dt, mode), kd, shape)
    return _sample(lambda k: _gumbel(k, shape, dt, mode), kd)


def _laplace(key, shape: tuple, dtype):
    u = _uniform(key, shape, dtype, -1.0 + float(dtypes.finfo(dtype).epsneg), 1.0)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def laplace(key, shape: Sequence[int] = (), dtype=None):
    """Laplace floats (density exp(-|x|)/2)."""
    kd, _ = _prng.unwrap("laplace", key)
    dt = _dtype("laplace", dtype, float, "f", "a float")
    shape = canonical_shape("laplace", shape)
    return _sample_flat(lambda k, s: _laplace(k, s, dt), kd, shape)


def _logistic(key, shape: tuple, dtype):
    x = _uniform(key, shape, dtype, float(dtypes.finfo(dtype).tiny), 1.0)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


def logistic(key, shape: Sequence[int] = (), dtype=None):
    """Standard logistic floats."""
    kd, _ = _prng.unwrap("logistic", key)
    dt = _dtype("logistic", dtype, float, "f", "a float")
    shape = canonical_shape("logistic", shape)
    return _sample_flat(lambda k, s: _logistic(k, s, dt), kd, shape)


def _multivariate_normal(key, mean, cov, shape, dtype, method: str):
    if aval_of(mean).ndim < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {aval_of(mean).ndim}")
    if aval_of(cov).ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {aval_of(cov).ndim}")
    n = aval_of(mean).shape[-1]
    if aval_of(cov).shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but got cov.shape == "
                         f"{aval_of(cov).shape}.")
    if shape is None:
        shape = snp.broadcast_shapes(aval_of(mean).shape[:-1], aval_of(cov).shape[:-2], fname="multivariate_normal")
    else:
        _check_shape("normal", shape, aval_of(mean).shape[:-1], aval_of(cov).shape[:-2])
    if method == "svd":
        u, s, _ = snp.linalg.svd(cov)
        factor = u * snp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = snp.linalg.eigh(cov)  # of (cov + cov^H) / 2, as JAX's
        factor = v * snp.sqrt(w[..., None, :])
    else:
        factor = snp.linalg.cholesky(cov)  # of (cov + cov^H) / 2, as JAX's
    samples = _normal(key, shape + (n,), dtype)
    return mean + snp.einsum("...ij,...j->...i", factor, samples)


def multivariate_normal(key, mean, cov, shape: Sequence[int] | None = None, dtype=None, method: str = "cholesky"):
    """Multivariate normal vectors (..., n) with mean `mean` (..., n) and covariance `cov` (..., n, n)."""
    kd, _ = _prng.unwrap("multivariate_normal", key)
    mean, cov = _arraylike(mean), _arraylike(cov)
    common = snp.result_type(mean, cov)
    common = common if dtypes.kind(common) in "fc" else dtypes.default_float()
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    dt = common if dtype is None else _dtype("multivariate_normal", dtype, None, "f", "a float")
    shape = None if shape is None else canonical_shape("multivariate_normal", shape)
    conv = lambda x: lax._convert_element_type(x, common)
    return _sample(lambda k, m, c: _multivariate_normal(k, conv(m), conv(c), shape, dt, method), kd, mean, cov)


# ---------------------------------------------------------------- gamma and its family


def _gamma_lanes(seeds, alpha, log_space: bool):
    """Marsaglia-Tsang gamma samples, one per lane: alpha (n,), and the lane's key as `seeds` = (k1, k2, counter),
    the words of a split not yet hashed: uint32 (n,), or the split key's words (0-d) and None (`split(key, (n,))`:
    lane i's counter is i), or those and an int h (`beta`'s two draws: lanes i < h draw from `split(key_a, (h,))`,
    the others from key_b's, where key_a, key_b = split(key, 2)). The draws of JAX's scalar sampler under vmap.

    JAX's sampler hashes in six places (a split in two; the outer loop's split in three; the inner loop's split in
    two and its normal; the outer loop's uniform; the final uniform), with the split giving each lane its key
    before. As batched loops each was a threefry hash of its own in the module, and IREE's compile time follows
    their code (~0.1 s each). Here each lane steps through the same hashes one at a time, in one loop whose body
    holds a single hash: the lane's phase says which key `K` and counter it hashes and where the words o go, and
    a lane that rejects (or draws v <= 0) goes back to where the outer (inner) loop starts. Each hash is JAX's,
    of the same key and counter, and the floats are computed from the words as JAX's are: the same samples, bit
    for bit (float16/32/64; bfloat16 is computed in float32, `_bf16_via_f32`). Only the uniform's
    key is hashed before the normals (a lane's draws do not depend on the order):

    0 K = o (the seed's counter: the lane's key)
    1 kn = o (counter 0)    2 sk = o (1: the final uniform's key); K = kn
    3 kn = o (0: the next outer key)    4 xk = o (1)    5 K = o (2: U's key)    6 ub = o (0: U's words); K = xk
    7 xk = o (0: the next inner key)    8 K = o (1)
    9 x = normal(o), v = 1 + x c; v <= 0: K = xk, to 7; rejected(x^2, v^3, U): K = kn, to 3; else V = v^3, K = sk
    10 V = the sample, of V and the final uniform's words o    11 done
    12 (an int h, lanes start here) K = o (counter 0 below h, 1 from h: key_a or key_b), to 0

    The state is uint32 words updated by integer ops only (the phase one-hot, selects as xor/and with masks), so
    that `fuse-int-chains` makes the updates one generic with the hash (IREE gave each select of shared
    producers a dispatch of its own), and V. A module has two dispatches (the loop's test, its body; a third
    pads the lanes) where the batched loops had 14. Each step computes every phase's floats for every lane, so
    this runs 2.3x slower than `_gamma_batched`: eager kernels only (`GAMMA_LANES_MAX`)."""
    c_ = lambda v: lax.full_like(alpha, v)
    zero, one = c_(0), c_(1)
    one_over_two, one_over_three, squeeze = c_(0.5), c_(1.0 / 3.0), c_(0.0331)
    dtype = aval_of(alpha).dtype
    shape = aval_of(alpha).shape
    u_ = lambda v: lax.full(shape, v, _prng.U32)
    boost_mask = lax.ge(alpha, one)

    def d_and_c():  # (computed where used, in the loop and after it: one dispatch less before the loop)
        d = lax.sub(lax.select(boost_mask, alpha, lax.add(alpha, one)), one_over_three)
        return d, lax.div(one_over_three, lax.sqrt(d))

    halves = isinstance(seeds[2], int)

    def seed():  # (made in the loop's body: a loop operand of shape (n,) would be one dispatch more)
        """(phase 0's key words and counter, phase 12's counter or None)"""
        words = tuple(w if aval_of(w).shape else lax.broadcast_in_dim(w, shape, ()) for w in seeds[:2])
        if not halves:
            return words, lax.iota(_prng.U32, shape[0]) if seeds[2] is None else seeds[2], None
        second, ctr = _halves(shape[0], seeds[2])
        return words, ctr, second

    def accept_not_yet(X, V, U, d):
        return lax.bitwise_and(
            lax.ge(U, lax.sub(one, lax.mul(squeeze, lax.mul(X, X)))),
            lax.ge(lax.log(U), lax.add(lax.mul(X, one_over_two),
                                       lax.mul(d, lax.add(lax.sub(one, V), lax.log(V))))))


    def sel(m, a, b):
        """a where the mask m is all ones, b where it is 0 (words or word pairs)."""
        if isinstance(a, tuple):
            return tuple(sel(m, x, y) for x, y in zip(a, b))
        return lax.bitwise_xor(b, lax.bitwise_and(lax.bitwise_xor(a, b), m))

    def finish(sk, V, d):  # (phase 10's: in the body, one dispatch less than after the loop, -8% of IREE's CPU)
        final = lambda width: _prng.bits_of_words(*sk, width)
        if log_space:
            log_samples = lax.neg(lax.neg(lax.log1p(lax.neg(_uniform_of(final, shape, dtype)))))
            log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_samples, zero)), zero,
                                   lax.mul(log_samples, lax.div(one, alpha)))
            return lax.add(lax.add(lax.log(d), lax.log(V)), log_boost)
        samples = lax.sub(one, _uniform_of(final, shape, dtype))
        boost = lax.select(boost_mask, one, _pow(samples, lax.div(one, alpha)))
        return lax.mul(lax.mul(d, V), boost)

    def step(state):
        P, K, kn, xk, ub, sk, Vs = state
        d, c = d_and_c()
        seed_key, seed_ctr, half = seed()
        at = [lax.sub(u_(0), lax.bitwise_and(lax.shift_right_logical(P, u_(p)), u_(1)))
              for p in range(_GAMMA_DONE + 1 + halves)]
        any_of = lambda *ps: functools.reduce(lax.bitwise_or, [at[p] for p in ps])
        K, ctr = (K, seed_ctr) if halves else (sel(at[0], seed_key, K), seed_ctr)
        ctr = sel(at[0], ctr, lax.bitwise_or(lax.bitwise_and(any_of(2, 4, 8), u_(1)), lax.bitwise_and(at[5], u_(2))))
        if halves:  # (phase 12: the base key and the half's counter)
            K, ctr = sel(at[12], seed_key, K), sel(at[12], half, ctr)
        o = _prng.threefry2x32(*K, u_(0), ctr)
        x = _normal_of(lambda width: _prng.bits_of_words(*o, width), shape, dtype)  # (phase 9's)
        v = lax.add(one, lax.mul(x, c))
        U = _uniform_of(lambda width: _prng.bits_of_words(*ub, width), shape, dtype)
        mask = lambda pred: lax.sub(u_(0), lax._convert_element_type(pred, _prng.U32))
        v_bad = mask(lax.le(v, zero))
        V = lax.mul(lax.mul(v, v), v)
        reject = mask(accept_not_yet(lax.mul(x, x), V, U, d))
        accepted = lax.bitwise_and(at[9], lax.bitwise_not(lax.bitwise_or(v_bad, reject)))
        one_hot = lambda p: u_(1 << p)
        P = sel(at[9], sel(v_bad, one_hot(7), sel(reject, one_hot(3), one_hot(10))),
                sel(at[_GAMMA_DONE], P, lax.shift_left(P, u_(1))))
        return [sel(at[12], one_hot(0), P) if halves else P,
                sel(any_of(0, 5, 8, *[12] * halves), o,
                    sel(at[2], kn, sel(at[6], xk, sel(at[9], sel(v_bad, xk, sel(reject, kn, sk)), K)))),
                sel(any_of(1, 3), o, kn), sel(any_of(4, 7), o, xk), sel(at[6], o, ub),
                sel(at[2], o, sk),
                lax.select(lax.ne(accepted, u_(0)), V, lax.select(lax.ne(at[10], u_(0)), finish(o, Vs, d), Vs))]

    words = (u_(0), u_(0))
    # (the start behind a barrier: IREE otherwise runs the loop's first test of a constant start inside iree-compile)
    state = lax.while_loop(lambda s: snp.any(lax.ne(s[0], u_(1 << _GAMMA_DONE))), step,
                           [lax.optimization_barrier(u_(1 << 12 if halves else 1)), words, words, words, words, words,
                            zero])
    return state[6]


_GAMMA_DONE = 11  # `_gamma_lanes`' last phase
# An eager call's kernel of up to this many samples draws them with `_gamma_lanes` (compile time first: the user
# waits for it; an empty-cache eager call of 1000 samples 1.37 -> 0.75 s), else (larger, or under jit, where the
# module runs many times and compiles with the rest of the function) with `_gamma_batched` (2.3x faster: at 2^14
# samples 1.2 vs 2.7 ms a call). docs/log.md, 2026-11-26 (helper gamma).
GAMMA_LANES_MAX = 1 << 14


def _gamma_batched(keys, alpha, log_space: bool):
    """`_gamma_lanes`' samples as JAX's batched loops draw them, for key words (n,): each loop carries all n
    values and updates those whose condition holds. Seven hashes in the module, but each lane's float work is
    done where the loop structure puts it: 2.3x faster than `_gamma_lanes` at every size (docs/log.md)."""
    c_ = lambda v: lax.full_like(alpha, v)
    zero, one, minus_one = c_(0), c_(1), c_(-1)
    one_over_two, one_over_three, squeeze = c_(0.5), c_(1.0 / 3.0), c_(0.0331)
    dtype = aval_of(alpha).dtype
    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, one_over_three)
    c = lax.div(one_over_three, lax.sqrt(d))

    def where(pred, new, old):
        return tree_util.tree_map(lambda n, o: lax.select(pred, n, o), new, old)

    def accept_not_yet(X, V, U):
        return lax.bitwise_and(
            lax.ge(U, lax.sub(one, lax.mul(squeeze, lax.mul(X, X)))),
            lax.ge(lax.log(U), lax.add(lax.mul(X, one_over_two),
                                       lax.mul(d, lax.add(lax.sub(one, V), lax.log(V))))))

    def next_kxv(state):
        key, x, v = state
        key, sub = _prng.split_n(key, 2)
        x = _normal(sub, (), dtype)
        return [key, x, lax.add(one, lax.mul(x, c))]

    def body(state):
        key, x_key, u_key = _prng.split_n(state[0], 3)
        inner = lambda s: where(lax.le(s[2], zero), next_kxv(s), s)
        _, x, v = lax.while_loop(lambda s: snp.any(lax.le(s[2], zero)), inner, [x_key, zero, minus_one])
        new = [key, lax.mul(x, x), lax.mul(lax.mul(v, v), v), _uniform(u_key, (), dtype)]
        return where(accept_not_yet(*state[1:]), new, state)

    key, subkey = _prng.split_n(keys, 2)
    # The constant start (X, V, U) = (0, 1, 2) behind a barrier: IREE otherwise evaluates the loop's first test
    # of it at compile time, compiling and running four globals' initializers inside iree-compile.
    state = lax.while_loop(lambda s: snp.any(accept_not_yet(*s[1:])), body,
                           [key, *lax.optimization_barrier([zero, one, c_(2)])])
    V = state[2]
    if log_space:
        log_samples = lax.neg(_exponential(subkey, (), dtype))
        log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_samples, zero)), zero,
                               lax.mul(log_samples, lax.div(one, alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(V)), log_boost)
    samples = lax.sub(one, _uniform(subkey, (), dtype))
    boost = lax.select(boost_mask, one, _pow(samples, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, V), boost)


def _halves(n: int, h: int) -> tuple:
    """(half, counter) of lanes 0..n-1 split at h, uint32: (0, i) below h, (1, i - h) from it (`beta`'s two draws:
    key_a's counters, then key_b's)."""
    lane, at = lax.iota(_prng.U32, n), lax.full((n,), h, _prng.U32)
    half = lax._convert_element_type(lax.ge(lane, at), _prng.U32)
    return half, lax.sub(lane, lax.mul(half, at))


def _gamma_one(seeds, alpha, log_space: bool):
    """Gamma samples for `seeds` (`_gamma_lanes`), alpha (n,): the same draws either way."""
    n = aval_of(alpha).shape[0]
    if n <= GAMMA_LANES_MAX and getattr(_KERNEL, "active", False):
        # (lanes padded to a multiple of 16 with alpha = 1: IREE's vector loop then needs no peeled remainder, a
        # second copy of the body's code; -5% of its compile, 0.86 -> 0.81 s CPU, minimum of 5, for 1000 values)
        m = -(-n // 16) * 16
        if m == n or not (seeds[2] is None or isinstance(seeds[2], int)):
            return _gamma_lanes(seeds, alpha, log_space)
        out = _gamma_lanes(seeds, lax.pad(alpha, np.array(1, aval_of(alpha).dtype), [(0, m - n, 0)]), log_space)
        return lax.slice(out, (0,), (n,))
    k1, k2, ctr = seeds
    if isinstance(ctr, int):  # (`_gamma_lanes`' phase 12 and 0)
        second, ctr = _halves(n, ctr)
        k1, k2 = _prng.threefry2x32(k1, k2, lax.full_like(ctr, 0), second)
    keys = _prng.split((k1, k2), (n,)) if ctr is None else _prng.threefry2x32(k1, k2, lax.full_like(ctr, 0), ctr)
    return _gamma_batched(keys, alpha, log_space)


@functools.partial(custom_jvp, nondiff_argnums=(0, 2))
def _gamma_d(seeds, alpha, log_space: bool):
    return _gamma_one(seeds, alpha, log_space)


@_gamma_d.defjvp
def _gamma_jvp(seeds, log_space, primals, tangents):
    """JAX's implicit reparameterization: the tangent is alpha's times d sample / d alpha at the sample."""
    (alpha,), (t,) = primals, tangents
    h = seeds[2] if isinstance(seeds[2], int) else None  # (a static: closed over, not an operand)
    out, grad = _run(lambda k, a: _gamma_and_grad(k if h is None else (*k, h), a, log_space),
                     seeds if h is None else seeds[:2], alpha)
    return out, lax.mul(t, grad)


def _gamma_and_grad(seeds, alpha, log_space: bool):
    out = _gamma_one(seeds, alpha, log_space)
    if not log_space:
        return out, gamma_sample_grad(alpha, out)
    # d log x = dx / x; a sample that is 0 in floating point is taken as the smallest normal number
    x = snp.exp(out)
    x = lax.select(lax.eq(x, lax.full_like(x, 0)), lax.full_like(x, dtypes.finfo(aval_of(x).dtype).tiny), x)
    return out, lax.div(gamma_sample_grad(alpha, x), x)


def _gamma(key, a, shape, dtype, log_space: bool):
    if shape is None:
        shape = aval_of(a).shape
    else:
        _check_shape("gamma", shape, aval_of(a).shape)
    a = lax._convert_element_type(a, dtype)
    n = math.prod(shape)
    if n == 0:
        return snp.zeros(shape, dtype)
    _prng.check_count(n, shape)
    m = -(-n // 16) * 16
    if not aval_of(a).ndim and getattr(_KERNEL, "active", False) and m <= GAMMA_LANES_MAX:
        # (an eager kernel's scalar a, broadcast over the lanes `_gamma_one` pads to: IREE computes the broadcast
        # in the loop's dispatch, where the padded broadcast was a dispatch of its own (-0.07 s CPU of its compile).
        # The extra lanes' values are dropped; each lane's is its own key's and a's, so the others are unchanged)
        return lax.reshape(lax.slice(_gamma_d((*key, None), lax.broadcast_in_dim(a, (m,), ()), log_space), (0,), (n,)),
                           shape)
    return lax.reshape(_gamma_d((*key, None), lax.reshape(snp.broadcast_to(a, shape), (n,)), log_space), shape)


def gamma(key, a, shape: Sequence[int] | None = None, dtype=None):
    """Gamma floats of shape `a` and scale 1 (Marsaglia-Tsang, as JAX)."""
    return _gamma_api("gamma", key, a, shape, dtype, False)


def loggamma(key, a, shape: Sequence[int] | None = None, dtype=None):
    """The log of gamma floats, computed in log space (accurate for small `a`)."""
    return _gamma_api("loggamma", key, a, shape, dtype, True)


def _bf16_via_f32(dt: np.dtype, fn: Callable, *params):
    """`fn(dt, *params)`; for bfloat16 `fn(float32, ...)` of the parameters rounded to bfloat16, rounded once. Computed
    in bfloat16, the gamma family's draws followed where the eager and jitted modules' dispatches rounded values, and
    differed (413-813 of 1000 gamma draws; 1 ulp in 10 of 37 gradients)."""
    if dt != dtypes.bfloat16:
        return fn(dt, *params)
    f32 = np.dtype(np.float32)
    wide = [lax._convert_element_type(lax._convert_element_type(p, dt), f32) for p in params]
    return lax._convert_element_type(fn(f32, *wide), dt)


def _gamma_api(name, key, a, shape, dtype, log_space):
    kd, _ = _prng.unwrap(name, key)
    dt = _dtype(name, dtype, float, "f", "a float")
    shape = None if shape is None else canonical_shape(name, shape)
    return _sample(lambda k, a: _bf16_via_f32(dt, lambda d, a: _gamma(k, a, shape, d, log_space), a), kd, _arraylike(a))


def _beta(key, a, b, shape, dtype):
    n = math.prod(shape)
    if n == 0:
        return snp.zeros(shape, dtype)
    # JAX draws loggamma(key_a, a) and loggamma(key_b, b), key_a, key_b = split(key); one loop over both gives the
    # same values (each depends only on its own key and parameter) and compiles once. The lanes' keys are hashed in
    # the loop (`_gamma_lanes`' phase 12): made before it, IREE split the loop's body in two dispatches (8 -> 4).
    _prng.check_count(n, shape)
    alpha = lax.concatenate([lax.reshape(snp.broadcast_to(lax._convert_element_type(x, dtype), shape), (n,))
                             for x in (a, b)], 0)
    both = _gamma_d((*key, n), alpha, True)
    log_gamma_a = lax.reshape(lax.slice(both, (0,), (n,)), shape)
    log_gamma_b = lax.reshape(lax.slice(both, (n,), (2 * n,)), shape)
    log_max = lax.max(log_gamma_a, log_gamma_b)
    gamma_a_scaled = snp.exp(log_gamma_a - log_max)
    gamma_b_scaled = snp.exp(log_gamma_b - log_max)
    return gamma_a_scaled / (gamma_a_scaled + gamma_b_scaled)


def beta(key, a, b, shape: Sequence[int] | None = None, dtype=None):
    """Beta floats with parameters `a`, `b` (from two log-space gamma draws)."""
    kd, _ = _prng.unwrap("beta", key)
    dt = _dtype("beta", dtype, float, "f", "a float")
    a, b = _arraylike(a), _arraylike(b)
    if shape is None:
        shape = snp.broadcast_shapes(_shape_of(a), _shape_of(b), fname="beta")
    else:
        shape = canonical_shape("beta", shape)
        _check_shape("beta", shape, _shape_of(a), _shape_of(b))
    return _sample(lambda k, a, b: _bf16_via_f32(dt, lambda d, a, b: _beta(k, a, b, shape, d), a, b), kd, a, b)


def _dirichlet(key, alpha, shape, dtype):
    av = aval_of(alpha)
    if av.ndim < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {av.ndim}")
    if shape is None:
        shape = av.shape[:-1]
    else:
        _check_shape("dirichlet", shape, av.shape[:-1])
    alpha = lax._convert_element_type(alpha, dtype)
    return softmax(_gamma(key, alpha, shape + av.shape[-1:], dtype, True), -1)


def dirichlet(key, alpha, shape: Sequence[int] | None = None, dtype=None):
    """Dirichlet vectors with concentration `alpha` (..., n) (softmax of log-space gamma draws)."""
    kd, _ = _prng.unwrap("dirichlet", key)
    dt = _dtype("dirichlet", dtype, float, "f", "a float")
    shape = None if shape is None else canonical_shape("dirichlet", shape)
    return _sample(lambda k, a: _bf16_via_f32(dt, lambda d, a: _dirichlet(k, a, shape, d), a), kd, _arraylike(alpha))


# ---------------------------------------------------------------- poisson


def _poisson_knuth(key, lam, shape, dtype, max_iters):
    def body(carry):
        i, k, rng, log_prod = carry
        rng, subkey = _prng.split_n(rng, 2)
        k = lax.select(log_prod > -lam, k + 1, k)
        u = _uniform(subkey, shape, _F32)
        return i + 1, k, rng, log_prod + snp.log(u)

    def cond(carry):
        i, log_prod = carry[0], carry[3]
        return snp.any(log_prod > -lam) & (i < max_iters)

    k_init = snp.zeros(shape, dtype)
    log_rate_init = snp.zeros(shape, _F32)
    k = lax.while_loop(cond, body, (np.int32(0), k_init, key, log_rate_init))[1]
    return (k - 1).astype(dtype)


def _poisson_rejection(key, lam, shape, dtype, max_iters):
    def body(carry):
        # (lam's terms computed in the body, where they are used: before the loop they were two dispatches more)
        log_lam = lax.log(lam)
        b = 0.931 + 2.53 * lax.sqrt(lam)
        a = -0.059 + 0.02483 * b
        inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
        v_r = 0.9277 - 3.6224 / (b - 2)
        i, k_out, accepted, key = carry
        # (the two subkeys' uniforms as one draw of batch (2,): one hash in the module, not two)
        x1, x2 = _prng.split(key, (3,))
        key = tuple(lax.reshape(lax.slice(w, (0,), (1,)), ()) for w in (x1, x2))
        uv = _uniform(tuple(lax.slice(w, (1,), (3,)) for w in (x1, x2)), shape, _F32)
        u, v = (lax.reshape(lax.slice(uv, (r,) + (0,) * len(shape), (r + 1, *shape)), shape) for r in (0, 1))
        u = u - 0.5
        u_shifted = 0.5 - abs(u)
        k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = lax.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -lam + k * log_lam - lax.lgamma(k + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept2 = s <= t
        accept = accept1 | (~reject & accept2)
        return i + 1, lax.select(accept, k.astype(dtype), k_out), accepted | accept, key

    def cond(carry):
        i, _, accepted, _ = carry
        return snp.any(~accepted) & (i < max_iters)

    # (k carried in `dtype`, converted where accepted: the same values, and no dispatch after the loop)
    k_init = snp.full(shape, -1, _F32).astype(dtype)  # (-1 as converted after the loop: for unsigned dtypes too)
    accepted = snp.zeros(shape, bool)
    return lax.while_loop(cond, body, (np.int32(0), k_init, accepted, key))[1]


def _poisson(key, lam, shape, dtype, branches: str = "both"):
    """JAX's poisson: each value from Knuth's loop where lam < 10 (or NaN), else from the rejection loop; each loop
    runs on every value, its lam replaced where the other's is taken. `branches` ("knuth", "rejection": every lam
    takes that one, `_poisson_branches`) drops the other loop: the kept one runs on the same operands and the
    select took nothing from the dropped one, so the values are the same bits."""
    use_knuth = (lam != lam) | (lam < 10)
    lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0.0))
    lam_rejection = lax.select(use_knuth, lax.full_like(lam, 1e5), lam)
    max_iters = min(int(np.iinfo(dtype).max), int(np.iinfo(np.int32).max))  # the loop counter is int32
    if branches == "knuth":
        result = _poisson_knuth(key, lam_knuth, shape, dtype, max_iters)
    elif branches == "rejection":  # (lam itself, which lam_rejection is here: IREE fuses its broadcast into the loop)
        return _poisson_rejection(key, lam, shape, dtype, max_iters)  # (no lam is 0)
    else:
        result = lax.select(use_knuth, _poisson_knuth(key, lam_knuth, shape, dtype, max_iters),
                            _poisson_rejection(key, lam_rejection, shape, dtype, max_iters))
    return lax.select(lam == 0, snp.zeros_like(result), result)


def _poisson_branches(lam) -> str:
    """The loops an eager call's rate needs (`_poisson`), each choice a kernel of its own (half the compile of both's:
    docs/random.md). "both" under any trace (jit, grad, vmap: nothing changes there) and for an Array, whose value
    is not read back (that would wait for the device on every call)."""
    if tracing_anywhere[0] or not isinstance(lam, (int, float, np.ndarray, np.generic)):
        return "both"
    knuth = np.asarray(lam).astype(np.float32)  # (as `f` converts it)
    knuth = np.isnan(knuth) | (knuth < 10)
    return "knuth" if knuth.all() else "rejection" if not knuth.any() else "both"


def poisson(key, lam, shape: Sequence[int] | None = None, dtype=None):
    """Poisson integers of rate `lam` (Knuth's method below 10, Hormann's transformed rejection above)."""
    kd, _ = _prng.unwrap("poisson", key)
    dt = _dtype("poisson", dtype, int, "iu", "an integer")
    lam = _arraylike(lam)
    shape = _shape_of(lam) if shape is None else canonical_shape("poisson", shape)
    branches = _poisson_branches(lam)  # (closed over: one kernel per choice)

    def f(k, lam):
        # (the public conversion: the internal one leaves a constant as a `core.Const`, which has no `<`)
        lam = lax.convert_element_type(snp.broadcast_to(lam, shape), _F32)
        return _poisson(k, lam, shape, dt, branches)
    return _sample(f, kd, lam)


# ---------------------------------------------------------------- categorical, choice, permutation


def _categorical(key, logits, shape, batch_shape, axis, replace, mode):
    lshape = aval_of(logits).shape
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        if axis >= 0:
            axis -= len(lshape)
        full = list(shape[len(shape) - len(batch_shape):])
        full.insert(axis % len(lshape), lshape[axis])
        g = _gumbel(key, (*prefix, *full), aval_of(logits).dtype, mode)
        return snp.argmax(g + snp.expand_dims(logits, tuple(range(len(prefix)))), axis=axis)
    logits = logits + _gumbel(key, lshape, aval_of(logits).dtype, mode)
    k = math.prod(prefix)
    if k > lshape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of categories "
                         f"({lshape[axis]}).")
    indices = top_k_indices(snp.moveaxis(logits, axis, -1), k)
    nd = aval_of(indices).ndim
    return lax.reshape(lax.transpose(indices, (nd - 1, *range(nd - 1))), shape)


def categorical(key, logits, axis: int = -1, shape: Sequence[int] | None = None, replace: bool = True,
                mode: str | None = None):
    """Category indices drawn with probabilities softmax(logits) along `axis` (the Gumbel-max trick;
    without replacement the Gumbel top-k trick)."""
    kd, _ = _prng.unwrap("categorical", key)
    logits = _arraylike(logits)
    lshape = _shape_of(logits)
    batch_shape = tuple(np.delete(np.array(lshape, dtype=np.int64), axis).tolist())
    if shape is None:
        shape = batch_shape
    else:
        shape = canonical_shape("categorical", shape)
        _check_shape("categorical", shape, batch_shape)
    mode = _gumbel_mode(mode)
    return _sample(lambda k, l: _categorical(k, l, shape, batch_shape, axis, replace, mode), kd, logits)


def _shuffle(key, x, axis: int):
    """Sort by fresh random 32-bit keys, in enough rounds that ties are unlikely (JAX's algorithm)."""
    size = aval_of(x).size
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        key, sub = _prng.split_n(key, 2)
        sort_keys = _prng.random_bits(sub, 32, aval_of(x).shape)
        if isinstance(x, Tracer):
            _, x = lax.sort([sort_keys, x], dimension=axis, is_stable=True, num_keys=1)
        else:  # a constant: IREE cannot sort it in place (see docs/random.md), so sort positions and gather
            pos = lax.broadcasted_iota(np.int32, aval_of(x).shape, axis)
            _, pos = lax.sort([sort_keys, pos], dimension=axis, is_stable=True, num_keys=1)
            x = snp.take_along_axis(x, pos, axis)
    return x


def _axis(name: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _permutation(key, x, axis: int, independent: bool):
    if independent or aval_of(x).ndim == 1:
        return _shuffle(key, x, axis)
    ind = _shuffle(key, snp.arange(aval_of(x).shape[axis]), 0)
    return snp.take(x, ind, axis)


def permutation(key, x, axis: int = 0, independent: bool = False):
    """A random permutation of `arange(x)` (an int) or of `x` along `axis` (each slice independently if
    `independent`)."""
    kd, _ = _prng.unwrap("permutation", key)
    x = _arraylike(x)
    nd = len(_shape_of(x))
    axis = _axis("permutation", axis, nd or 1)
    if nd:
        return _sample(lambda k, x: _permutation(k, x, axis, independent), kd, x)
    if dtypes.kind(aval_of(x).dtype) not in "iu":
        raise TypeError("x must be an integer or at least 1-dimensional")
    r = int(x)
    return _sample(lambda k: _shuffle(k, snp.arange(r), axis), kd)


def shuffle(key, x, axis: int = 0):
    """Shuffle each slice of `x` along `axis` independently. Deprecated, as in JAX (which has removed it)."""
    warnings.warn("stagec.random.shuffle is deprecated, as jax.random.shuffle was: use "
                  "stagec.random.permutation(key, x, axis, independent=True)", FutureWarning, stacklevel=2)
    kd, _ = _prng.unwrap("shuffle", key)
    x = _arraylike(x)
    axis = _axis("shuffle", axis, len(_shape_of(x)) or 1)
    return _sample(lambda k, x: _shuffle(k, x, axis), kd, x)


def _choice(key, arr, p, n_inputs: int, shape: tuple, replace: bool, axis: int, mode: str, lo=0, hi=None):
    """Indices drawn as JAX's `choice` draws them, then taken from `arr` (None: `a` was an int); `lo` and `hi`
    (0 and `n_inputs`) bound the uniform draw with replacement."""
    n_draws = math.prod(shape)
    if p is None and replace:
        ind = _randint(key, lo, n_inputs if hi is None else hi, shape, dtypes.default_int())
    elif p is None:
        perm = _shuffle(key, snp.arange(n_inputs), 0) if arr is None else _permutation(key, arr, axis, False)
        pshape = aval_of(perm).shape
        return lax.slice(perm, (0,) * len(pshape), tuple(n_draws if i == axis else d for i, d in enumerate(pshape)))
    elif replace:
        p_cuml = snp.cumsum(p)
        r = p_cuml[-1] * (1 - _uniform(key, shape, aval_of(p_cuml).dtype))
        ind = snp.searchsorted(p_cuml, r).astype(dtypes.default_int())
    else:
        g = _gumbel(key, (n_inputs,), aval_of(p).dtype, mode) + snp.log(p)
        ind = top_k_indices(g, n_draws).astype(dtypes.default_int())
    return ind if arr is None else snp.take(arr, ind, axis)


def choice(key, a, shape: Sequence[int] = (), replace: bool = True, p=None, axis: int = 0, mode: str | None = None):
    """Samples from `a` (an array, or `arange(a)` for an int) along `axis`, with or without replacement,
    uniformly or with probabilities `p`."""
    kd, _ = _prng.unwrap("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of stagec.random.choice must be a sequence, got {shape}")
    shape = canonical_shape("choice", shape)
    arr = _arraylike(a)
    ashape = _shape_of(arr)
    if not ashape:
        n_inputs, arr = int(a), None
    else:
        axis = _axis("choice", axis, len(ashape))
        n_inputs = ashape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return snp.zeros(shape, aval_of(a if arr is None else arr).dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size {n_inputs}) when "
                         f"'replace=False'")
    if p is not None:
        p = _arraylike(p)
        if _shape_of(p) != (n_inputs,):
            raise ValueError(f"p must be None or a 1D vector with the same size as a.shape[axis]. p has shape "
                             f"{_shape_of(p)} and a.shape[axis] is {n_inputs}.")
        pdt = aval_of(p).dtype if dtypes.kind(aval_of(p).dtype) in "fc" else dtypes.default_float()
    out_shape = shape if not ashape else ashape[:axis] + shape + ashape[axis + 1:]
    mode = _gumbel_mode(mode)

    def f(k, arr, p, lo, hi):
        p = None if p is None else lax._convert_element_type(p, pdt)
        return snp.reshape(_choice(k, arr, p, n_inputs, shape, replace, axis, mode, lo, hi), out_shape)
    # (randint's bounds as operands, as JAX's jitted randint takes them: made inside the kernel's trace they were
    # concrete Arrays it captured, and an eager choice was traced again on every call)
    return _sample(f, kd, arr, p, 0, n_inputs)


# ---------------------------------------------------------------- randint


def _clip_convert(val, dtype):
    """`val` (integer) in `dtype`, clipped to the range both dtypes share rather than wrapped."""
    src = aval_of(val).dtype
    lo = max(int(np.iinfo(dtype).min), int(np.iinfo(src).min))
    hi = min(int(np.iinfo(dtype).max), int(np.iinfo(src).max))
    return lax._convert_element_type(lax.clamp(lax.full_like(val, lo), val, lax.full_like(val, hi)), dtype)


def _randint(key, minval, maxval, shape, dtype):
    _check_shape("randint", shape, aval_of(minval).shape, aval_of(maxval).shape)
    minval, maxval = snp.asarray(minval), snp.asarray(maxval)
    if dtypes.kind(aval_of(minval).dtype) not in "iu":
        minval = minval.astype(int)
    if dtypes.kind(aval_of(maxval).dtype) not in "iu":
        maxval = maxval.astype(int)
    top = np.array(np.iinfo(dtype).max, dtype)
    maxval_out_of_range = maxval > _clip_convert(top, aval_of(maxval).dtype)
    minval = snp.broadcast_to(_clip_convert(minval, dtype), shape)
    maxval = snp.broadcast_to(_clip_convert(maxval, dtype), shape)
    maxval_out_of_range = snp.broadcast_to(maxval_out_of_range, shape)
    nbits = np.iinfo(dtype).bits
    k1, k2 = _prng.split_n(key, 2)
    higher_bits, lower_bits = _prng.random_bits(k1, nbits, shape), _prng.random_bits(k2, nbits, shape)
    unsigned = _prng.UINT[nbits]
    span = lax._convert_element_type(lax.sub(maxval, minval), unsigned)
    span = lax.select(lax.le(maxval, minval), lax.full_like(span, 1), span)
    span = lax.select(maxval_out_of_range & (maxval > minval), lax.add(span, lax.full_like(span, 1)), span)
    # XLA defines x % 0 == x; IREE's integer remainder by zero is undefined, so a zero span (the full range
    # of the dtype) takes that value explicitly: the offset is then `lower_bits`.
    wide = lax.eq(span, lax.full_like(span, 0))
    safe = lax.select(wide, lax.full_like(span, 1), span)
    multiplier = lax.rem(lax.full_like(span, 2 ** (nbits // 2)), safe)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), safe)
    offset = lax.add(lax.mul(lax.rem(higher_bits, safe), multiplier), lax.rem(lower_bits, safe))
    offset = lax.select(wide, lower_bits, lax.rem(offset, safe))
    return lax.add(minval, lax._convert_element_type(offset, dtype))


def randint(key, shape: Sequence[int], minval, maxval, dtype=None):
    """Uniform integers in [minval, maxval) (JAX's modulus method over twice the bits; slightly biased when
    the range is not a power of 2, as JAX's)."""
    kd, _ = _prng.unwrap("randint", key)
    dt = dtypes.canonicalize(int if dtype is None else dtype, warn_from="randint")
    if dtypes.kind(dt) not in "iu":
        raise TypeError(f"randint only accepts integer dtypes, got {dt}")
    shape = canonical_shape("randint", shape)
    minval, maxval = _arraylike(minval), _arraylike(maxval)
    info = np.iinfo(dt)
    sample_dt = dt
    if info.bits < 32:  # sample in 32 bits, as JAX does, to avoid bias
        sample_dt = np.dtype(np.int32)

    narrow = (int(info.min), int(info.max)) if info.bits < 32 else None  # (closed over: ints key the trace)

    def f(k, s, lo, hi):
        if narrow:
            lo = snp.clip(snp.asarray(lo).astype(np.int32), narrow[0], narrow[1])
            hi = snp.clip(snp.asarray(hi).astype(np.int32), narrow[0], narrow[1] + 1)
        return _randint(k, lo, hi, s, sample_dt).astype(dt)
    return _sample_flat(f, kd, shape, minval, maxval)


from . import _more  # noqa: E402  (the transform samplers, built on the ones above; `f` and `t` are also local names)
globals().update({_n: getattr(_more, _n) for _n in _more.__all__})

# JAX's names stagec has no sampler for: each says why, or what to use (`_missing`).
__getattr__ = _missing(__name__, {
    "key_dtype": "stagec's keys are uint32 arrays of shape (2,) (random.PRNGKey); there is no extended key dtype",
    "clone": "stagec's keys are plain arrays: no clone is needed",
    "random_gamma_p": "JAX's primitive objects are JAX internals; use random.gamma",
})
