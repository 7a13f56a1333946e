"""`stagec.vmap`: every primitive's batching rule against a Python loop over the batch (the stack of the
per-example results), under `jit` and eagerly; in_axes/out_axes (pytrees, None, negative), nesting,
control flow, the loop fallback, errors; JAX as a second oracle where installed.

The per-example reference is `jit(f)` applied to each example (one compiled module per function, shared by
all examples); the batched side is `jit(vmap(f))`, plus eager `vmap(f)` where stated.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stagec
import stagec.debug
import stagec.numpy as snp
from stagec import lax
from stagec.core import Primitive
from stagec.errors import ConcretizationTypeError
from stagec.primitives import all_primitives
from stagec.primitives.structural import broadcast_like_p
from stagec.primitives import elementwise as ew
from stagec.primitives import fft as fftp
from stagec.tree_util import tree_leaves

from numpy_diff import MAX_EXAMPLES

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover
    jax = jnp = None

RNG = np.random.default_rng(0)
NO_OPERANDS = {"iota"}  # never batched: it takes no operands
FALLBACK: set[str] = set()  # primitives batched by the loop fallback (none: every primitive has a rule)


def rand(*shape, dtype=np.float32, lo=0.1, hi=0.9):
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(lo, hi, size=shape).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return RNG.random(shape) < 0.5
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


@functools.cache
def _jit(f):
    return stagec.jit(f)


def per_variant(examples: list[tuple], in_axes) -> tuple[list, list]:
    """(batched arguments, the examples they hold): each mapped argument's examples stacked along its axis;
    an unmapped one is the first example's, shared by all."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(examples[0])
    exs = [tuple(e[j] if ax is not None else examples[0][j] for j, ax in enumerate(axes)) for e in examples]
    args = [exs[0][j] if ax is None else np.stack([e[j] for e in exs], axis=ax) for j, ax in enumerate(axes)]
    return args, exs


def stack_outputs(per_example: list, out_axes) -> list:
    leaves = [tree_leaves(o) for o in per_example]
    oax = tree_leaves(out_axes) if isinstance(out_axes, (tuple, list)) else [out_axes] * len(leaves[0])
    return [np.stack([np.asarray(l[k]) for l in leaves], axis=oax[k]) for k in range(len(leaves[0]))]


def assert_tree_close(got, want):
    got = tree_leaves(got)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if g.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)


def check(f, examples, variants, eager=None, apart=False):
    """For each variant, `in_axes` or (in_axes, out_axes): jit(vmap(f)) equals the Python loop of f over the
    examples, stacked. All variants and their loops are one jitted function (one compile, IREE compiles
    being the cost here). `eager`: the index of a variant also run eagerly (one small module per primitive).
    `apart`: the loop runs `jit(f)` of its own, one module shared by every example and variant (for a large f,
    whose copies in one module, one per example, cost more to compile than a second module); with one example, its
    one copy stays in the module (a second module would cost more)."""
    check_all((f, examples, variants, eager, apart))


def check_all(*checks):
    """`check(*c)` for each c of `checks`, (f, examples, variants[, eager[, apart]]): the jitted sides of all of them
    in one module (one compile, not one per function)."""
    def spec(f, exs, variants, eager=None, apart=False):
        variants = [v if isinstance(v, list) else [v, 0] for v in variants]
        return f, variants, [per_variant(exs, in_axes) for in_axes, _ in variants], eager, apart and len(exs) > 1

    specs = [spec(*c) for c in checks]

    def run(batched, exs):
        return [[(stagec.vmap(f, tuple(ia) if isinstance(ia, list) else ia, oa)(*args),
                  None if apart else [f(*e) for e in ex]) for (ia, oa), args, ex in zip(variants, b, x)]
                for (f, variants, _, _, apart), b, x in zip(specs, batched, exs)]

    every = stagec.jit(run)([[p[0] for p in prepared] for _, _, prepared, _, _ in specs],
                            [[None if apart else p[1] for p in prepared] for _, _, prepared, _, apart in specs])
    for (f, variants, prepared, eager, apart), results in zip(specs, every):
        if apart:
            results = [(got, [_jit(f)(*e) for e in ex]) for (got, _), (_, ex) in zip(results, prepared)]
        assert len(results) == len(variants)
        for (in_axes, out_axes), (got, per) in zip(variants, results):
            want = stack_outputs(per, out_axes)
            try:
                assert_tree_close(got, want)
            except AssertionError as e:
                raise AssertionError(f"{f.__name__} in_axes={in_axes} out_axes={out_axes}: {e}") from None
        if eager is not None:
            (in_axes, out_axes), (args, _) = variants[eager], prepared[eager]
            want = stack_outputs(results[eager][1], out_axes)
            assert_tree_close(stagec.vmap(f, in_axes, out_axes)(*args), want)


def examples(n, *makers):
    return [tuple(m() for m in makers) for _ in range(n)]


# ---------------------------------------------------------------- coverage


def _prims_in(graph, acc):
    for e in graph.eqns:
        acc.add(e.prim.name)
        for v in e.params.values():
            for g in v if isinstance(v, tuple) else (v,):
                if hasattr(g, "eqns"):
                    _prims_in(g, acc)
    return acc


def test_every_primitive_has_a_batching_rule():
    missing = [p.name for p in all_primitives() if p.batch is None and p.name not in NO_OPERANDS | FALLBACK]
    assert not missing, f"primitives without a batching rule: {missing}"


# ---------------------------------------------------------------- elementwise (grouped: one module per group)

UNARY = ["neg", "sign", "abs", "floor", "ceil", "round", "round_afz", "exp", "exp2", "expm1", "log", "log1p",
         "tanh", "logistic", "sin", "cos", "tan", "sqrt", "rsqrt", "cbrt", "is_finite", "asin", "acos", "atan", "sinh",
         "cosh", "asinh", "atanh", "erf", "erfc", "erf_inv", "lgamma", "digamma"]
BINARY = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "eq", "ne", "lt", "le", "gt", "ge"]
INT_OPS = ["bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right_arithmetic",
           "shift_right_logical", "add", "rem", "max"]


def unary_all(x):
    return [getattr(lax, n)(x) for n in UNARY] + [lax.acosh(lax.add(x, lax.full_like(x, 1.5))), lax.bitwise_not(lax.gt(x, lax.full_like(x, 0.5))),
                                                  lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)]


def binary_all(x, y):
    return [getattr(lax, n)(x, y) for n in BINARY] + [lax.complex(x, y)]


def int_all(x, y):
    return [getattr(lax, n)(x, y) for n in INT_OPS] + [lax.bitwise_not(x), lax.population_count(x), lax.clz(y),
                                                       lax.bitcast_convert_type(x, np.uint8)]


def mixed_all(p, x, y):
    z = lax.complex(x, y)
    return [lax.select(p, x, y), lax.clamp(lax.min(x, y), x, lax.max(x, y)), lax.convert_element_type(x, np.int32),
            lax.real(z), lax.imag(lax.mul(z, z)), lax.stop_gradient(x)]


def select_scalar_pred(p, x, y):
    return lax.select(p, x, y)


SHAPES = [(), (3,), (2, 3)]


def elementwise_all(x, y, i, j):
    return unary_all(x) + binary_all(x, y) + int_all(i, j)


@st.composite
def axes_for(draw, shape, n_args):
    """[in_axes, out_axes] for `n_args` arguments of per-example `shape` (at least one mapped)."""
    choices = list(range(-len(shape) - 1, len(shape) + 1))
    axes = tuple(draw(st.sampled_from(choices + [None])) for _ in range(n_args))
    if all(a is None for a in axes):
        axes = (0,) + axes[1:]
    return [axes, draw(st.sampled_from(choices))]


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(data=st.data(), shape=st.sampled_from(SHAPES), n=st.integers(1, 3))
def test_elementwise(data, shape, n):
    """Every unary, binary, comparison and integer primitive, on random shapes, batch sizes and axes."""
    exs = examples(n, lambda: rand(*shape), lambda: rand(*shape), lambda: rand(*shape, dtype=np.int32, lo=1, hi=9),
                   lambda: rand(*shape, dtype=np.int32, lo=1, hi=5))
    check(elementwise_all, exs, [data.draw(axes_for(shape, 4))], apart=True)


def test_select_clamp_convert_complex():
    check_all((mixed_all, examples(3, lambda: rand(2, 3, dtype=np.bool_), lambda: rand(2, 3), lambda: rand(2, 3)),
               [(0, 0, 0), (None, 1, 0), (0, None, None), [(1, None, 0), -1]]),
              (select_scalar_pred, examples(3, lambda: rand(dtype=np.bool_), lambda: rand(4), lambda: rand(4)),
               [(0, 0, None), (0, None, 1), (None, 0, 0)]))


# ---------------------------------------------------------------- structural


def structural_one(x):
    s = lax.reshape(lax.slice(x, (1, 2), (2, 3)), ())  # (broadcast_like: eager composites' polymorphic modules)
    return [lax.broadcast_in_dim(x, (2, 5, 4), (0, 2)), lax.reshape(x, (4, 2)), lax.transpose(x, (1, 0)),
            lax.slice(x, (0, 1), (2, 4), (1, 2)), lax.rev(x, (1,)), lax.rev(x, (0, 1)), lax.optimization_barrier(x),
            broadcast_like_p.bind(s, x), broadcast_like_p.bind(np.float32(2.5), x)]


def concat_pad(x, y, v):
    return [lax.concatenate([x, y, x], 1), lax.pad(x, v, [(1, -1, 1), (0, 2, 0)])]


def dyn_slice(x, i):
    return lax.dynamic_slice(x, (i, lax.sub(i, 1)), (2, 2))


def dyn_update(x, u, i):
    return lax.dynamic_update_slice(x, u, (i, 1))


def test_structural():
    check_all((structural_one, examples(3, lambda: rand(2, 4)), [0, 1, [-1, 1]]),
              (concat_pad, examples(3, lambda: rand(2, 4), lambda: rand(2, 1), lambda: rand()),
               [(0, 0, 0), (1, None, None), (None, 0, 0), (None, None, 0)], 2))


def test_dynamic_slice():  # indices out of bounds are clamped per example, as XLA does
    check(dyn_slice, examples(4, lambda: rand(3, 4), lambda: np.int32(RNG.integers(-2, 5))),
          [(0, None), (None, 0), (1, 0)])


def test_dynamic_update_slice():
    check(dyn_update, examples(4, lambda: rand(3, 4), lambda: rand(2, 2), lambda: np.int32(RNG.integers(-1, 4))),
          [(0, None, None), (None, 0, None), (None, None, 0), (1, 0, 0)])


# ---------------------------------------------------------------- reductions


def reductions(x, b):
    return [lax.reduce_sum(x, (1,)), lax.reduce_prod(x, (0,)), lax.reduce_max(x, (0, 1)), lax.reduce_min(x, (1,)),
            lax.reduce_and(b, (0,)), lax.reduce_or(b, (1,)), lax.reduce_xor(b, (1,)), lax.argmax(x, 1, np.int32),
            lax.argmin(x, 0, np.int32), lax.reduce_precision(x, 5, 2),
            lax.cumsum(x, 1), lax.cumprod(x, 0, reverse=True), lax.cummax(x, 1), lax.cummin(x, 0, reverse=True)]


def sort2(x, y):
    return lax.sort([x, y], dimension=1, num_keys=1)


def test_reductions():
    check_all((reductions, examples(3, lambda: rand(3, 4), lambda: rand(3, 4, dtype=np.bool_)),
               [(0, 0), (2, None), [(None, 1), -1]], None, True),
              (sort2, examples(3, lambda: rand(2, 5), lambda: rand(2, 5, dtype=np.int32, lo=0, hi=9)),
               [(0, 0), (1, None), (None, 0)]))


# ---------------------------------------------------------------- gather, scatter, dot_general


def gather(x, i):
    return lax.gather(x, i, offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), slice_sizes=(1, 3))


def scatters(x, i, u):
    kw = dict(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    return [lax.scatter(x, i, u, mode=m, **kw) for m in ("set", "add", "mul", "min", "max")]


def unique_rows():
    return RNG.permutation(4)[:2].reshape(2, 1).astype(np.int32)


def test_gather():
    check(gather, examples(3, lambda: rand(4, 3), unique_rows), [(0, None), (None, 0), (1, 0), (-1, -1)], eager=2)


def test_scatter():
    check(scatters, examples(3, lambda: rand(4, 3), unique_rows, lambda: rand(2, 3)),
          [(0, None, None), (None, 0, 0), (0, 0, None), (None, None, 1), (1, 0, 1)], apart=True)


def matmul(a, b):
    return lax.dot_general(a, b, (((1,), (0,)), ((), ())))


def batch_matmul(a, b):
    return lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,))))


def ffts(x, z):
    return [fftp.fft(x, "RFFT", (4,)), fftp.fft(z, "FFT", (4,)), fftp.fft(z, "IFFT", (4,)),
            fftp.fft(fftp.fft(x, "RFFT", (4,)), "IRFFT", (4,))]


def test_fft():
    check(ffts, examples(3, lambda: rand(2, 4), lambda: (rand(2, 4) + 1j * rand(2, 4)).astype(np.complex64)),
          [(0, 0), (1, None), (None, 2)])


def test_dot_general():
    check_all((matmul, examples(3, lambda: rand(2, 3), lambda: rand(3, 4)), [(0, None), (None, 1), (1, 0), (2, 2),
                                                                             (None, 0)]),
              (batch_matmul, examples(2, lambda: rand(2, 3, 4), lambda: rand(2, 4, 5)),
               [(0, 0), (3, None), (None, 1), (2, 3)]))


# ---------------------------------------------------------------- NumPy-level functions


def numpy_mix(x, i, w):
    y = snp.tanh(x @ w) + x[i] - x[::2].mean(0) + snp.take(x, i + 1, axis=0)
    return y.at[i].add(1.0), snp.sort(y, axis=-1), snp.argmax(y, axis=0), snp.where(y > 0.5, y, -y)


def test_numpy_functions():
    check(numpy_mix, examples(3, lambda: rand(4, 3), lambda: np.int32(RNG.integers(0, 3)), lambda: rand(3, 3)),
          [(0, 0, None), (1, None, 0), (None, 0, 0)], apart=True)


# ---------------------------------------------------------------- control flow


# Branches of plain arithmetic: the batching rules do not look inside them, and a sin or cos (dozens of ops once
# expanded) in every case of a `check` module was most of its compile.
def cond_fn(p, x, y):
    return lax.cond(p, lambda a: (a * 2.0, y - a), lambda a: (a * a, a + y), x)


def switch_fn(i, x, y):
    return lax.switch(i, [lambda a: a - y, lambda a: a * y, lambda a: a * a + 1.0], x)


def while_fn(limit, x):
    return lax.while_loop(lambda c: c[0] < limit, lambda c: (c[0] + 1, c[1] * 1.5 + x), (0, x))


def fori_fn(x, y):
    return lax.fori_loop(0, 3, lambda i, c: c * y + i, x)


def scan_fn(c0, xs):
    return lax.scan(lambda c, e: (c * 0.5 + e, c * e), c0, xs)


def map_fn(xs, y):
    return lax.map(lambda e: snp.sum(e * y), xs)


def test_cond_switch():
    check_all((cond_fn, examples(4, lambda: rand(dtype=np.bool_), lambda: rand(3), lambda: rand(3)),
               [(0, 0, 0), (None, 0, None), (0, None, None), (None, None, 0), (0, 1, None)], 0, True),
              (switch_fn, examples(5, lambda: np.int32(RNG.integers(-1, 4)), lambda: rand(3), lambda: rand(3)),
               [(0, 0, None), (None, 0, 0), (0, None, None)], None, True))


def test_while_loop():  # a batched limit: the loop runs while any example's condition holds
    check(while_fn, examples(3, lambda: np.int32(RNG.integers(0, 5)), lambda: rand(2)), [(0, 0), (None, 0), (0, None)],
          eager=0)


def test_fori_scan_map():
    variants = [(0, None), (None, 0), (1, 0)]
    check_all((fori_fn, examples(3, lambda: rand(2, 3), lambda: rand(2, 3)), variants),
              (scan_fn, examples(3, lambda: rand(3), lambda: rand(4, 3)), variants),
              (map_fn, examples(3, lambda: rand(4, 3), lambda: rand(3)), variants))


def test_batched_loop_stays_one_loop():
    text = stagec.make_mlir(stagec.vmap(while_fn))(np.arange(3, dtype=np.int32), rand(3, 2))
    assert text.count("stablehlo.while") == 1 and "tensor<3x2xf32>" in text
    assert text.count("func.func") == 1


def conv_pool(x, w):
    y = lax.conv_general_dilated(x, w, (1, 1), "SAME")
    return lax.reduce_window(y, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def test_conv_pool():
    check(conv_pool, examples(3, lambda: rand(1, 2, 5, 5), lambda: rand(3, 2, 3, 3)), [0, (0, None), (None, 0)])


def test_table_covers_every_primitive():
    """The functions above, traced per example, use every primitive that has operands."""
    seen = set()
    cases = [(unary_all, [rand(3)]), (binary_all, [rand(3), rand(3)]), (int_all, [rand(3, dtype=np.int32, hi=5)] * 2),
             (mixed_all, [rand(3, dtype=np.bool_), rand(3), rand(3)]), (structural_one, [rand(2, 4)]),
             (concat_pad, [rand(2, 4), rand(2, 1), rand()]), (dyn_slice, [rand(3, 4), np.int32(1)]),
             (dyn_update, [rand(3, 4), rand(2, 2), np.int32(1)]), (reductions, [rand(3, 4), rand(3, 4) > 0.5]),
             (sort2, [rand(2, 5), rand(2, 5)]), (gather, [rand(4, 3), unique_rows()]),
             (scatters, [rand(4, 3), unique_rows(), rand(2, 3)]), (matmul, [rand(2, 3), rand(3, 4)]),
             (cond_fn, [True, rand(3), rand(3)]), (while_fn, [np.int32(2), rand(2)]), (scan_fn, [rand(3), rand(4, 3)]),
             (callback_fn, [rand(3)]),
             (ffts, [rand(2, 4), rand(2, 4).astype(np.complex64)]), (conv_pool, [rand(1, 2, 5, 5), rand(3, 2, 3, 3)])]
    for f, args in cases:
        _prims_in(stagec.jit(f).lower(*args).graph, seen)
    untested = {p.name for p in all_primitives()} - seen - NO_OPERANDS
    assert not untested, f"primitives no vmap test exercises: {sorted(untested)}"


# ---------------------------------------------------------------- callbacks, fallback


def callback_fn(x):
    return stagec.debug.pure_callback(lambda v: np.cumsum(v) * 2, stagec.ShapeDtypeStruct((3,), np.float32), x)


def test_pure_callback():
    """One call out to Python per batch, running the function once per example."""
    check(callback_fn, examples(3, lambda: rand(3)), [0, [0, 1]], eager=1)
    graph = stagec.jit(stagec.vmap(callback_fn)).lower(rand(4, 3)).graph
    assert [e.outputs[0].aval.shape for e in graph.eqns if e.prim.name == "callback"] == [(4, 3)]


my_sin_p = Primitive("my_sin", lambda x: x)
my_sin_p.def_lowering(ew.sin_p.lowering)


def test_fallback_loop_for_a_primitive_without_rule():
    xs = rand(3, 4)
    f = stagec.vmap(my_sin_p.bind, in_axes=1, out_axes=1)
    np.testing.assert_allclose(np.asarray(f(xs)), np.sin(xs), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(stagec.jit(f)(xs)), np.sin(xs), rtol=1e-6)
    assert stagec.make_mlir(f)(xs).count("stablehlo.while") == 1


# ---------------------------------------------------------------- API: axes, pytrees, nesting, jit


def test_pytree_axes_and_kwargs():
    def f(d, s, *, k):
        return {"sum": d["a"] + d["b"] * s, "k": k * 2.0}, d["b"]
    a, b, s, k = rand(3, 2), rand(2), rand(2, 3), rand(3, 4)
    out, s_out = stagec.jit(stagec.vmap(f, in_axes=({"a": 0, "b": None}, 1), out_axes=({"sum": 1, "k": 0}, None)))(
        {"a": a, "b": b}, s, k=k)
    np.testing.assert_allclose(np.asarray(out["sum"]), (a + b * s.T).T, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out["k"]), k * 2, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(s_out), b)
    with pytest.raises(ValueError, match="out_axes is None"):
        stagec.vmap(f, in_axes=({"a": 0, "b": None}, 1), out_axes=None)({"a": a, "b": b}, s, k=k)


def test_list_in_axes_and_unbatched_outputs():
    f = stagec.vmap(lambda x, y: (x * 2, y, 3.0), in_axes=[0, None])
    x, y = rand(2, 3), rand(4)
    a, b, c = f(x, y)
    np.testing.assert_allclose(np.asarray(a), x * 2)
    assert np.asarray(b).shape == (2, 4) and np.asarray(c).shape == (2,)


def test_axis_size_without_mapped_inputs():
    out = stagec.vmap(lambda y: y + 1.0, in_axes=None, axis_size=3)(rand(2))
    assert np.asarray(out).shape == (3, 2)
    out = stagec.vmap(lambda: snp.ones(2), axis_size=4, out_axes=1)()
    assert np.asarray(out).shape == (2, 4)


def test_batch_of_no_examples():
    """A batch of 0 examples: each output is empty, shaped (0,) + one example's output. The rules of gather,
    scatter and dynamic_update_slice with a batched operand and batched indices used an example-number index
    of window 1 along the batch axis, which does not fit an axis of 0 (TypeError from inv, top_k on a mapped
    axis 1, a[i], a.at[i].add/set, dynamic_update_slice at batched starts); the conv rule divided by the batch
    size (ZeroDivisionError); the simplify pass read an empty constant predicate as a scalar (eigh: ValueError)."""
    cases = [
        (lambda a: snp.linalg.inv(snp.eye(4) + a[:, None] * a), (0,), [rand(4)]),
        (lambda a: lax.top_k(a, 2), (1,), [rand(4, 3)]),
        (lambda a, i: a[i], (0, 0), [rand(5, 4), np.int32(3)]),
        (lambda a, i: a[i], (None, 0), [rand(5, 4), np.int32(3)]),
        (lambda a, i: (a.at[i].add(1.0), a.at[i].set(2.0)), (None, 0), [rand(5, 4), np.int32(3)]),
        (lambda a, i: a.at[i].max(rand(4)), (0, 0), [rand(5, 4), np.int32(3)]),
        (lambda a, i: lax.dynamic_update_slice(a, snp.ones(2), (i,)), (None, 0), [rand(5), np.int32(1)]),
        (lambda a, i: lax.dynamic_update_slice(a, snp.ones(2), (i,)), (0, 0), [rand(5), np.int32(1)]),
        (lambda a, i: lax.dynamic_slice(a, (i,), (2,)), (0, 0), [rand(5), np.int32(1)]),
        (lambda a: snp.linalg.eigh(a)[0], (0,), [rand(4, 4) + 4 * np.eye(4, dtype=np.float32)]),
        (lambda l, k: lax.conv_general_dilated(l, k, (1, 1), "SAME"), (0, None), [rand(1, 2, 5, 5), rand(3, 2, 3, 3)]),
        (lambda l, k: lax.conv_general_dilated(l, k, (1, 1), "SAME"), (None, 0), [rand(1, 2, 5, 5), rand(3, 2, 3, 3)]),
    ]
    wants, batches = [], []
    for f, in_axes, one in cases:
        wants.append([np.asarray(o) for o in tree_leaves(f(*map(snp.asarray, one)))])
        args = [x if ax is None else np.zeros((0,) + np.shape(x), np.asarray(x).dtype) for x, ax in zip(one, in_axes)]
        batches.append([snp.asarray(np.moveaxis(x, 0, ax) if ax else x) for x, ax in zip(args, in_axes)])
    # (jit(vmap(f)) of every case in one module; eager vmap(f) case by case)
    jitted = stagec.jit(lambda bs: [stagec.vmap(f, in_axes)(*b) for (f, in_axes, _), b in zip(cases, bs)])(batches)
    for (f, in_axes, _), want, args, out in zip(cases, wants, batches, jitted):
        for res in (stagec.vmap(f, in_axes)(*args), out):
            got = [np.asarray(o) for o in tree_leaves(res)]
            assert [(g.shape, g.dtype) for g in got] == [((0,) + w.shape, w.dtype) for w in want]


def test_nested_vmap():
    def f(x, y):
        return snp.dot(x, y) + snp.sin(x).sum()
    xs, ys = rand(3, 4), rand(5, 4)
    want = np.array([[np.asarray(_jit(f)(x, y)) for y in ys] for x in xs])
    inner = stagec.vmap(f, in_axes=(None, 0))
    outer = stagec.vmap(inner, in_axes=(0, None))
    # the same axis mapped twice: a batch of batches
    both = stagec.vmap(stagec.vmap(f), in_axes=(1, 1), out_axes=-1)
    xx, yy = rand(4, 2, 4), rand(4, 2, 4)  # (examples of 4 values: _jit(f)'s module of `want` again)
    jitted, jitted_both = stagec.jit(lambda a, b, c, d: (outer(a, b), both(c, d)))(xs, ys, xx, yy)  # (one module)
    np.testing.assert_allclose(np.asarray(outer(xs, ys)), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(jitted), want, rtol=1e-5)
    want2 = np.array([[np.asarray(_jit(f)(xx[i, j], yy[i, j])) for j in range(2)] for i in range(4)])
    np.testing.assert_allclose(np.asarray(jitted_both), want2, rtol=1e-5)


def test_vmap_of_jit_inlines_and_jit_of_vmap_is_one_module():
    f = stagec.jit(lambda x, w: snp.tanh(x @ w))
    xs, w = rand(5, 3), rand(3, 2)
    np.testing.assert_allclose(np.asarray(stagec.vmap(f, (0, None))(xs, w)), np.tanh(xs @ w), rtol=1e-5)
    text = stagec.make_mlir(stagec.vmap(f, (0, None)))(xs, w)
    assert text.count("func.func") == 1 and "tensor<5x2xf32>" in text and "dot_general" in text


def test_python_control_flow_on_unbatched_values():
    def f(x, n):
        return x * 2 if n > 1 else x  # n is not mapped: a plain Python value inside
    np.testing.assert_allclose(np.asarray(stagec.vmap(f, (0, None))(rand(3), 2)).shape, (3,))


# ---------------------------------------------------------------- with grad (the FAQ's cases)


def step(x):
    return snp.where(x > 0, 1.0, 0.0)


def sigmoid(x):
    return 1.0 / (1.0 + snp.exp(-x))


def test_vmap_of_grad_faq():
    xs = np.linspace(-2, 2, 7).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(stagec.vmap(stagec.grad(step))(xs)), np.zeros(7, np.float32))
    s = 1 / (1 + np.exp(-xs))
    ours = np.asarray(stagec.jit(stagec.vmap(stagec.grad(sigmoid)))(xs))
    np.testing.assert_allclose(ours, s * (1 - s), rtol=1e-5)
    if jax is not None:
        theirs = jax.vmap(jax.grad(lambda x: 1.0 / (1.0 + jnp.exp(-x))))(xs)
        np.testing.assert_allclose(ours, theirs, rtol=1e-5)


@stagec.custom_vjp
def scaled_sin(x):
    return snp.sin(x)


scaled_sin.defvjp(lambda x: (snp.sin(x), snp.cos(x)), lambda c, g: (g * c * 10.0,))


def test_vmap_of_grad_with_custom_vjp():
    xs = np.linspace(-1, 1, 4).astype(np.float32)
    np.testing.assert_allclose(np.asarray(stagec.jit(stagec.vmap(stagec.grad(scaled_sin)))(xs)), 10 * np.cos(xs),
                               rtol=1e-5)


@stagec.custom_vjp
def _scaled_mul(x, y):
    return snp.sin(x) * y


_scaled_mul.defvjp(lambda x, y: (snp.sin(x) * y, (snp.cos(x), snp.sin(x), y)),
                   lambda r, g: (10.0 * g * r[0] * r[2], snp.sum(g * r[1])))


@functools.partial(stagec.custom_jvp, nondiff_argnums=(1,))
def _scaled_pow(x, k):
    return x ** k


@_scaled_pow.defjvp
def _(k, primals, tangents):
    (x,), (t,) = primals, tangents
    return x ** k, 10.0 * k * x ** (k - 1) * t


def test_grad_of_vmap_with_custom_rules():
    """A custom rule under vmap is batched with its primal (its rule, not the primal's derivative, is used);
    the cotangent of an argument shared by the examples is summed over them."""
    xs = np.linspace(-1, 1, 6).astype(np.float32).reshape(2, 3)
    y = np.float32(2.0)
    gx, gy = stagec.grad(lambda x, y: snp.sum(stagec.vmap(_scaled_mul, (1, None))(x, y)), argnums=(0, 1))(xs, y)
    np.testing.assert_allclose(np.asarray(gx), 10 * np.cos(xs) * y, rtol=1e-6)
    np.testing.assert_allclose(float(gy), np.sin(xs).sum(), rtol=1e-6)
    g = stagec.grad(lambda x: snp.sum(stagec.vmap(_scaled_pow, (0, None))(x, 3)))(xs)
    np.testing.assert_allclose(np.asarray(g), 30 * xs ** 2, rtol=1e-6)
    g = stagec.vmap(stagec.grad(lambda x: _scaled_pow(x, 2)))(xs[0])
    np.testing.assert_allclose(np.asarray(g), 20 * xs[0], rtol=1e-6)


def test_per_example_gradients_and_grad_of_vmap():
    def loss(w, x):
        return snp.sum(snp.tanh(x @ w) ** 2)
    w, xs = rand(3, 2), rand(4, 3)
    per, total = stagec.jit(lambda w, xs: (  # (one module)
        stagec.vmap(stagec.grad(loss), in_axes=(None, 0))(w, xs),
        stagec.grad(lambda w: stagec.vmap(loss, (None, 0))(w, xs).sum())(w)))(w, xs)
    want = np.stack([np.asarray(stagec.jit(stagec.grad(loss))(w, x)) for x in xs])
    np.testing.assert_allclose(np.asarray(per), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(total), want.sum(0), rtol=1e-5)


# ---------------------------------------------------------------- errors


def test_errors():
    x, y = rand(2, 3), rand(3)
    with pytest.raises(ValueError, match=r"(?s)inconsistent sizes.*size 2: axis 0 of argument x.*size 3: axis 0 of "
                                         r"argument y"):
        stagec.vmap(lambda x, y: x + y)(x, y)
    with pytest.raises(ValueError, match="axis_size argument was 5"):
        stagec.vmap(lambda x: x, axis_size=5)(x)
    with pytest.raises(ValueError, match="at least one non-None"):
        stagec.vmap(lambda x: x, in_axes=None)(x)
    with pytest.raises(ValueError, match="along axis 2, which implies that its rank should be at least 3"):
        stagec.vmap(lambda x: x, in_axes=2)(x)
    with pytest.raises(ValueError, match=r"len\(in_axes\)=1, len\(args\)=2"):
        stagec.vmap(lambda x, y: x, in_axes=(0,))(x, y)
    with pytest.raises(ValueError, match="tree prefix"):
        stagec.vmap(lambda d: d["a"], in_axes=({"b": 0},))({"a": x})
    with pytest.raises(TypeError, match="in_axes must be an int, None, or"):
        stagec.vmap(lambda x: x, in_axes=1.0)
    with pytest.raises(TypeError, match="Expected a callable"):
        stagec.vmap(3)
    with pytest.raises(ConcretizationTypeError, match="bool"):
        stagec.vmap(lambda x: x if x.sum() > 0 else -x)(x)
    with pytest.raises(ValueError, match="out_axes"):
        stagec.vmap(lambda x: x, out_axes=3)(x)


@pytest.mark.skipif(jax is None, reason="jax not installed")
def test_errors_match_jax():  # the same exception types as jax.vmap
    x, y = rand(2, 3), rand(3)
    for call in (lambda v: v(lambda x, y: x + y)(x, y), lambda v: v(lambda x: x, in_axes=None)(x),
                 lambda v: v(lambda x: x, in_axes=2)(x), lambda v: v(lambda x, y: x, in_axes=(0,))(x, y),
                 lambda v: v(lambda x: x, in_axes=1.0)):
        with pytest.raises(Exception) as ours:
            call(stagec.vmap)
        with pytest.raises(Exception) as theirs:
            call(jax.vmap)
        assert type(ours.value) is type(theirs.value), (ours.value, theirs.value)


# ---------------------------------------------------------------- JAX as oracle


def jax_cases(np_, lax_):
    return [
        (lambda x, w: np_.tanh(x @ w).sum(-1), (0, None), 0),
        (lambda x, w: (np_.sort(x, axis=0), np_.cumsum(w, axis=-1)), (2, 0), (1, -1)),
        (lambda x, w: lax_.cond(x.sum() > 1.0, lambda a: a * 2.0, lambda a: a - 1.0, w), (0, None), 0),
        (lambda x, w: lax_.fori_loop(0, 3, lambda i, c: c @ w, x), (0, None), 1),
        (lambda x, w: np_.where(x > 0.5, x, 0.0)[::-1, 1:], (2, None), -1),
    ]


@pytest.mark.skipif(jax is None, reason="jax not installed")
def test_against_jax():
    x, w = rand(3, 3, 4), rand(4, 4)
    ours = stagec.jit(lambda x, w: [stagec.vmap(f, ia, oa)(x, w) for f, ia, oa in jax_cases(snp, lax)])(x, w)
    theirs = [jax.vmap(g, ia, oa)(x, w) for g, ia, oa in jax_cases(jnp, jax.lax)]
    for k, (a, b) in enumerate(zip(ours, theirs)):
        for u, v in zip(tree_leaves(a), jax.tree_util.tree_leaves(b)):
            np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=2e-5, atol=1e-6, err_msg=f"case {k}")


def test_nested_vmaps_of_updates_at_batched_indices_compile():
    """A vmap over the operand of a vmap over the index made scatters IREE 3.13 did not compile (two indexed
    dimensions behind a batch one; a window at each batched start). Oracle: NumPy loops."""
    x, i = rand(2, 3), np.array([2, 0], np.int32)
    f = stagec.vmap(stagec.vmap(lambda x, i: x.at[i].set(7.0), in_axes=(None, 0)), in_axes=(0, None))
    want = np.array([[np.where(np.arange(3) == k, 7.0, row) for k in i] for row in x])
    np.testing.assert_array_equal(stagec.jit(f)(x, i), want.astype(np.float32))
    y, u = rand(2, 4), rand(4)
    g = stagec.vmap(stagec.vmap(lambda y, u, k: lax.dynamic_update_slice(y, u[:2], (k,)), in_axes=(None, None, 0)),
                    in_axes=(0, None, None))
    want = np.array([[np.concatenate([r[:k], u[:2], r[k + 2:]]) for k in (0, 2, 1)] for r in y])
    np.testing.assert_array_equal(stagec.jit(g)(y, u, np.array([0, 2, 1], np.int32)), want.astype(np.float32))


def test_nested_vmaps_of_argmax_over_the_last_axis_compile():
    """The batched argmax's index read transposed: IREE 3.13 fused the transpose into the two-result reduction and
    failed to compile (`transposed-reductions-apart`). Oracle: NumPy."""
    x = rand(2, 5, 5, 3)
    f = stagec.vmap(stagec.vmap(lambda x: snp.argmax(x, axis=-1), in_axes=-1, out_axes=-1))
    np.testing.assert_array_equal(stagec.jit(f)(x), np.moveaxis(np.argmax(np.moveaxis(x, -1, 1), -1), 1, -1))
    np.testing.assert_array_equal(stagec.jit(lambda x: snp.argmin(x, axis=1).T + 1)(x[0]), np.argmin(x[0], 1).T + 1)
