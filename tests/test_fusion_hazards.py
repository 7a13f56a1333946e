"""IREE 3.13's multi-use fusion (on at O2/O3) computed a pattern wrongly: a reduction result used twice, once by an
elementwise op whose result reaches another reduction (a log-softmax loss beside the softmax its gradient needs).
The backend materializes such a reduction's result first (`passes.legalize.isolate_multi_use_reductions`); these results
were wrong before, silently."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec.passes import legalize, on_text


def isolate_multi_use_reductions(mlir: str) -> str | None:
    """`isolate-reductions` on text (None where it changes nothing)."""
    return on_text(mlir, legalize.isolate_multi_use_reductions)


def before_isolation(lowered) -> str:
    """The module as the default backend's `isolate-reductions` receives it: the stage before that pass (every
    target's pipeline runs it; the passes before it differ)."""
    names = list(lowered.stages())
    return lowered.as_text(names[names.index("isolate-reductions") - 1])


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
    assert isolate_multi_use_reductions(before_isolation(f.lower(z))) is not None
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
              stagec.grad(lambda v: snp.sum(layernorm(v) ** 3))):
        assert isolate_multi_use_reductions(before_isolation(stagec.jit(f).lower(x))) is None
    # A log-softmax loss beside the softmax of its gradient is the pattern itself (found only some of the time
    # before the search was fixed); it gets the barrier and is right (it was right without it too, at this size).
    z = RNG.standard_normal((64, 128)).astype(np.float32)
    vg = stagec.jit(stagec.value_and_grad(lambda v: -snp.sum(stagec.nn.log_softmax(v)[:, 0])))
    zd = z.astype(np.float64)
    lse = np.log(np.exp(zd).sum(1, keepdims=True))
    want = np.exp(zd - lse)
    want[:, 0] -= 1
    value, grad = vg(z)
    np.testing.assert_allclose(float(value), -np.sum((zd - lse)[:, 0]), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(grad), want, atol=1e-6)


def test_the_hazard_is_found_every_time():
    """The search walked the module with a visited set of Python `id`s of op wrappers, which the bindings make afresh
    and free: a reused `id` ended the walk early in about a third of the runs, the barrier was left out, and the
    loss above came back -1125.6 for -1028.1 (one cached module in four runs of the suite)."""
    z = np.zeros((8, 33), np.float32)
    text = before_isolation(stagec.jit(stagec.value_and_grad(lambda v: snp.sum(stagec.nn.log_softmax(v)))).lower(z))
    assert all(isolate_multi_use_reductions(text) is not None for _ in range(40))


# ---- commuted twins (`merge-commuted`)
# IREE 3.13 computes `y * a` and `a * y` in one dispatch as one value, returns it twice, and the canonicalization that
# drops the repeated result sends its uses to the wrong one: the third matvec read `a` (at every -O level, on every
# target). The smallest module found; the pass leaves one product.
TWINS = """
func.func @main(%A: tensor<3x3xf32>, %x: tensor<3xf32>, %y: tensor<3xf32>)
    -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %a = stablehlo.add %x, %y : tensor<3xf32>
  %p = stablehlo.multiply %y, %a : tensor<3xf32>
  %q = stablehlo.multiply %a, %y : tensor<3xf32>
  %0 = stablehlo.dot_general %A, %a, contracting_dims = [1] x [0] : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = stablehlo.dot_general %A, %p, contracting_dims = [0] x [0] : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = stablehlo.dot_general %A, %q, contracting_dims = [1] x [0] : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0, %1, %2 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}"""


def _twins_inputs():
    return RNG.standard_normal((3, 3)).astype(np.float32), *RNG.standard_normal((2, 3)).astype(np.float32)


def _run_on_cpu(text, args, packed: bool = True):
    import iree.compiler as ic
    import iree.runtime as rt

    from stagec.compiler.targets import DATA_TILING, TARGETS
    flags = [f for f in TARGETS["cpu"].flags if packed or f != DATA_TILING]
    vmfb = ic.compile_str(text, target_backends=["llvm-cpu"], extra_args=flags)
    ctx = rt.SystemContext(config=rt.Config("local-sync"))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb))
    return [np.asarray(r) for r in ctx.modules.module["main"](*args)]


def _merged(text):
    from iree.compiler import ir

    from stagec.passes.commuted import merge_commuted_twins
    with ir.Context():
        m = ir.Module.parse(text)
        n = merge_commuted_twins(m)
        return str(m), n


def test_commuted_twins_merge_into_one_op_and_the_minimal_module_is_right():
    text, n = _merged(TWINS)
    assert n == 1 and text.count("stablehlo.multiply") == 1
    A, x, y = _twins_inputs()
    Ad, a, yd = A.astype(np.float64), x.astype(np.float64) + y, y.astype(np.float64)
    want = [Ad @ a, Ad.T @ (yd * a), Ad @ (a * yd)]
    for got, w in zip(_run_on_cpu(text, (A, x, y)), want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
    # The hazard itself, as IREE 3.13 compiles it without data tiling (as most modules: no product worth packing;
    # `--iree-global-opt-data-tiling` computed this one right): once this fails, the pass can go.
    raw = _run_on_cpu(TWINS, (A, x, y), packed=False)
    assert not np.allclose(raw[2], want[2], rtol=1e-3)


def test_every_target_merges_commuted_twins():
    # (the mix-up happens in IREE's target-independent dispatch formation: Vulkan's and CUDA's flow IR read `a` too)
    from stagec.compiler.targets import TARGETS
    assert all("merge-commuted" in t.pipeline.legalize for t in TARGETS.values())


def test_merge_commuted_leaves_other_ops_alone():
    src = TWINS.replace("%q = stablehlo.multiply %a, %y", "%q = stablehlo.add %a, %y")
    text, n = _merged(src)
    assert n == 0 and text.count("stablehlo.multiply") == 1 and text.count("stablehlo.add") == 2
    # (a - b and b - a are not twins)
    text, n = _merged(src.replace("stablehlo.multiply %y, %a", "stablehlo.subtract %y, %a")
                      .replace("stablehlo.add %a, %y", "stablehlo.subtract %a, %y"))
    assert n == 0 and text.count("stablehlo.subtract") == 2



# ---- a reduction read in two orders (`crossed-reductions-apart`)
# IREE 3.13 fused `s = sum(x, 0)` into the reader of `s[:, None] + s[None, :]` and computed one order only: right on
# the diagonal, 0 (or another value) off it, at every opt level; through an outer product (`v @ v.T` of a keepdims
# max, which IREE makes elementwise) too. Found 2026-11-29 by random programs.
CROSSED = [(lambda m, x: (lambda s: s[:, None] + s[None, :])(m.sum(x, axis=0)), (3, 4)),
           (lambda m, x: (lambda v: m.minimum(v.T, v))(m.var(x, axis=0, keepdims=True)), (3, 255)),
           (lambda m, x: (lambda c: m.exp(c)[:, None] * c[None, :])(m.mean(x, axis=1) - 1), (5, 2)),
           (lambda m, x: (lambda v: v @ v.T)(m.max(x * x, axis=1, keepdims=True)), (9, 4))]  # (an outer product)


def crossed_reductions_apart(lowered) -> str | None:
    """The pass on the stage before it (None where it changes nothing); the backend's pipeline must declare it."""
    names = list(lowered.stages())
    return on_text(lowered.as_text(names[names.index("crossed-reductions-apart") - 1]),
                   legalize.crossed_reductions_apart)


@pytest.mark.parametrize("i", range(len(CROSSED)))
def test_a_reduction_read_in_two_orders_is_right(i):
    fn, shape = CROSSED[i]
    x = RNG.standard_normal(shape).astype(np.float32)
    f = stagec.jit(lambda v: fn(snp, v))
    first, second = np.asarray(f(x)), np.asarray(f(snp.asarray(x)))
    want = fn(np, x.astype(np.float64))
    np.testing.assert_allclose(first, want, rtol=1e-5, atol=1e-6)
    assert first.tobytes() == second.tobytes()
    np.testing.assert_allclose(np.asarray(fn(snp, snp.asarray(x))), want, rtol=1e-5, atol=1e-6)  # (eager)
    if "crossed-reductions-apart" in f.lower(x).stages():  # (CPU, CUDA: lavapipe's module was right without it)
        assert crossed_reductions_apart(f.lower(x)) is not None


@pytest.mark.cpu_only
def test_reductions_read_in_one_order_are_left_alone():
    x = np.zeros((64, 128), np.float32)
    layernorm = lambda v: (v - v.mean(1, keepdims=True)) / snp.sqrt(v.var(1, keepdims=True) + 1e-5)
    for f in (layernorm, stagec.nn.softmax, stagec.nn.log_softmax, lambda v: stagec.nn.logsumexp(v, 1),
              lambda v: v - v.mean(0), lambda v: (v.sum(0), v.sum(0)[:, None] + x[0, :, None]),
              stagec.grad(lambda v: snp.sum(layernorm(v) ** 3))):
        assert crossed_reductions_apart(stagec.jit(f).lower(x)) is None


def test_pads_of_pads_with_interior_padding_are_right():
    """IREE 3.13 merged a pad of a pad (one padding value) and dropped the interior padding: pad(pad([1], low 1),
    interior 2) was [0, 1, 0, 0]; `jit(grad(eigvalsh))` (whose cotangent's diagonal is such a pair) was wrong for every
    matrix. Oracles: NumPy's padding loop, and d lambda_max / dA = v v^T from NumPy's eigh."""
    from stagec import lax

    def pad(x, cfg):  # NumPy: interior first, then the edges (negative ones crop)
        (lo, hi, it), = cfg
        y = np.zeros(len(x) + (len(x) - 1) * it, x.dtype)
        y[::it + 1] = x
        y = np.concatenate([np.zeros(max(lo, 0), x.dtype), y[max(-lo, 0):], np.zeros(max(hi, 0), x.dtype)])
        return y[:len(y) + hi] if hi < 0 else y
    cases = [((1, 0, 0), (0, 0, 2)), ((1, 1, 1), (1, 2, 0)), ((1, 0, 2), (1, 0, 0)), ((2, 2, 0), (-1, 0, 2)),
             ((0, 0, 1), (1, 2, 0))]
    x = np.array([1.0, 2.0, 3.0], np.float32)
    for inner, outer in cases:
        got = stagec.jit(lambda v: lax.pad(lax.pad(v, np.float32(0), [inner]), np.float32(0), [outer]))(x)
        np.testing.assert_array_equal(np.asarray(got), pad(pad(x, [inner]), [outer]), err_msg=str((inner, outer)))
    a = np.array([[1.0, 1.0], [1.0, 1.0]], np.float32) + np.diag([0.5, -0.25]).astype(np.float32)
    v = np.linalg.eigh(a.astype(np.float64))[1][:, -1]
    g = stagec.jit(stagec.grad(lambda m: snp.linalg.eigvalsh(m)[-1]))(a)
    np.testing.assert_allclose(np.asarray(g), np.outer(v, v), atol=1e-5)


def _widened_strided(slices):
    """For each narrow array and its (stride, start) of `slices`: widened, sliced with the stride, then computed on
    (+1), all in one module."""
    return lambda xs: [x.astype(snp.int32 if np.dtype(x.dtype).kind in "iu" else snp.float32)[start::stride] + 1
                       for x, (stride, start) in zip(xs, slices)]


def test_strided_slices_of_widened_small_values_keep_their_stride():
    """IREE 3.13's CPU code dropped a strided slice's stride where its operand, of up to 16 elements, was widened in the
    slice's dispatch from a narrower type: it read the first elements (bfloat16 `jit(diagonal)` gave the first row,
    `jit(trace)` 3 for 12). `narrow-strided-slices-apart` reads such an operand through a barrier. Sizes across 16
    and the 64 of `legalize.NARROW_SLICE_MAX_ELEMENTS`, starts 0 (the failing ones) and 1."""
    import ml_dtypes
    cases = [(np.arange(n).astype(dt), stride, start) for dt in (ml_dtypes.bfloat16, np.float16, np.int8, np.uint8, np.int16)
             for n in (3, 8, 16, 17, 64, 65) for stride in (2, 5) for start in (0, 1)]
    got = stagec.jit(_widened_strided([c[1:] for c in cases]))([c[0] for c in cases])
    for (x, stride, start), g in zip(cases, got):
        want = x.astype(np.int32 if x.dtype.kind in "iu" else np.float32)[start::stride] + 1
        np.testing.assert_array_equal(np.asarray(g), want, err_msg=f"{x.dtype}[{x.size}][{start}::{stride}]")
    b = np.arange(16).reshape(4, 4).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(np.asarray(stagec.jit(snp.diagonal)(b)).astype(np.float32), [0, 5, 10, 15])
    assert float(stagec.jit(snp.trace)(b)) == 30.0
