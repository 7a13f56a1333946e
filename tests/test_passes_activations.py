"""`recompute-activations` (gelu's pieces recomputed in the backward pass from the matmul's `z`) and
`isolate-batch-sums` (the first layer's `dz` stored before its batch sum and its pack): training steps that IREE 3.13
compiles as asked (without either pass it fails there and compiles a variant: retries.py), numbers against a float64
NumPy oracle."""
from __future__ import annotations

import math

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec.compiler.targets import TARGETS

pytestmark = pytest.mark.cpu_only  # (CPU passes, for IREE's llvm-cpu failures)

DEFAULT = TARGETS["cpu"].pipeline.passes


def _gelu64(z):
    return 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)))


def _gelu_grad64(z):
    t = np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3))
    return 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * z * z)


ACTS = {"gelu": (stagec.nn.gelu, _gelu64, _gelu_grad64), "relu": (stagec.nn.relu, lambda z: np.maximum(z, 0),
                                                                  lambda z: (z > 0).astype(np.float64)),
        "tanh": (snp.tanh, np.tanh, lambda z: 1 - np.tanh(z) ** 2)}


def _step(act, passes=DEFAULT):
    f = ACTS[act][0]

    def loss(p, x, y):
        (w1, b1), (w2, b2) = p
        return snp.mean((f(x @ w1 + b1) @ w2 + b2 - y) ** 2)

    def step(p, x, y):
        g = stagec.grad(loss)(p, x, y)
        return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(p, g)]
    return stagec.jit(step, passes=passes)


def _args(batch, n_in, hidden):
    rng = np.random.default_rng(2)
    p = [(rng.standard_normal((n_in, hidden)).astype(np.float32) / np.float32(math.sqrt(n_in)),
          rng.standard_normal(hidden).astype(np.float32)),
         (rng.standard_normal((hidden, 10)).astype(np.float32) / np.float32(math.sqrt(hidden)),
          np.zeros(10, np.float32))]
    return p, rng.standard_normal((batch, n_in)).astype(np.float32), rng.standard_normal((batch, 10)).astype(np.float32)


def _oracle(act, p, x, y):
    _, f, df = ACTS[act]
    (w1, b1), (w2, b2) = [(w.astype(np.float64), b.astype(np.float64)) for w, b in p]
    x, y = x.astype(np.float64), y.astype(np.float64)
    z = x @ w1 + b1
    h = f(z)
    d = 2 * (h @ w2 + b2 - y) / y.size
    dz = (d @ w2.T) * df(z)
    return [(w1 - 0.1 * x.T @ dz, b1 - 0.1 * dz.sum(0)), (w2 - 0.1 * h.T @ d, b2 - 0.1 * d.sum(0))]


def _check(got, ref):
    for (gw, gb), (rw, rb) in zip(got, ref):
        np.testing.assert_allclose(np.asarray(gw), rw, rtol=1e-4, atol=2e-5)
        np.testing.assert_allclose(np.asarray(gb), rb, rtol=1e-4, atol=2e-5)


def _rewrites(low, name) -> int:
    return sum(next(s for s in low.pass_stats if s.name == name).rewrites.values())


@pytest.mark.parametrize("act, shape, want", [
    ("gelu", (128, 32, 256), 1),  # (the 128x10 product is under `updates.MIN_TILE`: left alone)
    ("gelu", (32, 32, 256), 0),  # (32 rows: under a tile)
    ("tanh", (128, 32, 256), 0),  # (the backward pass reads h alone)
    ("relu", (128, 32, 256), 0)])  # (the mask reads the activation: `compare-clamped`)
def test_which_activations_are_recomputed(act, shape, want):
    low = _step(act).lower(*_args(*shape))
    assert _rewrites(low, "recompute-activations") == want
    text = low.as_text("recompute-activations")
    assert text.count("stablehlo.exponential") == (1 + want if act == "gelu" else 0)
    assert text.count("stablehlo.tanh") == (act == "tanh")


def _variants(monkeypatch, act, args, passes: dict) -> dict:
    """Each pipeline's variant under the CPU target's 64 KiB stack limit for every module (`driver.module_flags`
    gives 1 MiB to modules with no sliced product operand): where IREE 3.13's failures below show."""
    from stagec.compiler import driver
    with monkeypatch.context() as m:
        m.setattr(driver, "STACK_1M", driver.STACK_64K)
        return {name: _step(act, p).lower(*args).compile().variant for name, p in passes.items()}


def test_gelu_step_compiles_data_tiled(monkeypatch):
    # 128x64 -> 256 -> 10: without the pass the forward matmul's dispatch returns gelu's pieces and IREE 3.13's
    # data-tiled codegen fails on it (over a 64 KiB stack limit at this size, "large vector sizes" at b1024; products
    # of 2^21 multiply-adds, so that the module is packed at all: `packing.PACK_MACS`)
    args = _args(128, 64, 256)
    assert "recompute-activations" in DEFAULT
    without = tuple(n for n in DEFAULT if n != "recompute-activations")
    got = _variants(monkeypatch, "gelu", args, {"default": DEFAULT, "without": without})
    assert got["default"] == [] and got["without"] != [], got  # (the second: the workaround's reason)
    _check(_step("gelu")(*args), _oracle("gelu", *args))  # (the default flags: a 1 MiB limit)


def test_gelu_step_of_a_large_batch_compiles_data_tiled():
    # 1024 rows: the backward pass reads `dh = d @ w2.T` twice, once negated (in gelu's derivative) and once as it is;
    # the negation went through the barrier, so the product's dispatch returned `dh` and `-dh`: "large vector sizes",
    # and the whole step compiled without data tiling. `dh` goes through the barrier now, its negation after it.
    args = _args(1024, 64, 256)
    low = _step("gelu").lower(*args)
    assert _rewrites(low, "recompute-activations") == 1
    assert low.compile().variant == []
    _check(_step("gelu")(*args), _oracle("gelu", *args))


def test_gelu_step_of_a_batch_of_sequences_compiles_data_tiled():
    # (8, 32, 128) activations: IREE collapses the product's 8x32 rows into 256, but `updates._tiled` counted the
    # last dimension's 32 (under a tile), so the pass left gelu's pieces in the matmul's dispatch, the data-tiled
    # compile failed ("large vector sizes") and the step compiled again without data tiling (a transformer's
    # MLP block: 1.8 s of a 4.9 s first call, and 30% slower calls)
    p, x, y = _args(256, 128, 512)
    x3, y3 = x.reshape(8, 32, 128), y.reshape(8, 32, 10)
    low = _step("gelu").lower(p, x3, y3)
    assert _rewrites(low, "recompute-activations") == 1
    assert low.compile().variant == []
    _check(_step("gelu")(p, x3, y3), _oracle("gelu", p, x, y))  # (the same mean over 2560 errors as flat rows)


def test_relu_step_compiles_within_the_stack_limit(monkeypatch):
    # 640 rows (past `batchsums.MAX_ROWS`): without the pass the first layer's dz is summed and packed in one dispatch
    # that keeps 80 KiB on the stack, over the CPU target's 64 KiB: the compile is retried with a 1 MiB limit (the
    # module's own limit now, with no sliced product operand: `test_retries`' 1 MiB test)
    args = _args(640, 32, 256)
    low = _step("relu").lower(*args)
    assert _rewrites(low, "isolate-batch-sums") == 1
    without = tuple(n for n in DEFAULT if n != "isolate-batch-sums")
    variants = _variants(monkeypatch, "relu", args, {"default": DEFAULT, "without": without})
    assert variants == {"default": [], "without": ["stack-1m"]}  # (the second: IREE 3.13's failure, the reason)
    _check(_step("relu")(*args), _oracle("relu", *args))
    # under the rows the fused dispatch keeps within 64 KiB the sum and the pack stay fused
    assert _rewrites(_step("relu").lower(*_args(512, 32, 256)), "isolate-batch-sums") == 0


TEXT = """func.func @main(%x: tensor<64x16xf32>, %w: tensor<16x128xf32>, %v: tensor<128x128xf32>, %g: tensor<64x128xf32>,
                 %c: tensor<128xf32>) -> (tensor<64x128xf32>, tensor<64x128xf32>, tensor<64x128xf32>) {
  %z = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<64x16xf32>, tensor<16x128xf32>) -> tensor<64x128xf32>
  %t = stablehlo.tanh %z : tensor<64x128xf32>
  %h = stablehlo.multiply %z, %t : tensor<64x128xf32>
  %n = stablehlo.dot_general %h, %v, contracting_dims = [1] x [0] : (tensor<64x128xf32>, tensor<128x128xf32>) -> tensor<64x128xf32>
  %dh = stablehlo.dot_general %g, %v, contracting_dims = [1] x [1] : (tensor<64x128xf32>, tensor<128x128xf32>) -> tensor<64x128xf32>
  %r = stablehlo.multiply %dh, %t : tensor<64x128xf32>
  %bc = stablehlo.broadcast_in_dim %c, dims = [1] : (tensor<128xf32>) -> tensor<64x128xf32>
  %s = stablehlo.multiply %dh, %z : tensor<64x128xf32>
  %u = stablehlo.add %s, %r : tensor<64x128xf32>
  return %n, %u, %bc : tensor<64x128xf32>, tensor<64x128xf32>, tensor<64x128xf32>
}"""


def test_recompute_rewrites_the_module_it_should_and_leaves_one_it_cannot():
    from stagec.compiler.driver import run_passes
    out = run_passes(TEXT, ["recompute-activations"], "cpu")  # (z and t read by the backward ops, h by a matmul)
    assert out is not None and out.count("stablehlo.tanh") == 2 and out.count("optimization_barrier") == 2
    # the first backward reader reading z itself (`%s` before `%r`): an op hashes by its operands, so once it read
    # the barrier it was no key of the pass's op order (a KeyError: a transformer's second block)
    lines = TEXT.splitlines()
    s_line = next(line for line in lines if "%s = " in line)
    lines.remove(s_line)
    lines.insert(next(i for i, line in enumerate(lines) if "%r = " in line), s_line)
    out = run_passes("\n".join(lines), ["recompute-activations"], "cpu")
    assert out is not None and out.count("stablehlo.tanh") == 2 and out.count("optimization_barrier") == 2
    assert run_passes(TEXT.replace("64x16xf32>, %w", "64x8xf32>, %w").replace("tensor<16x128", "tensor<8x128")
                      .replace("(tensor<64x16xf32>", "(tensor<64x8xf32>"), ["recompute-activations"], "cpu") is None
    # a piece reading a value defined after the first backward reader: left as it is (its copy could not read it)
    lines = TEXT.splitlines()
    order = [0, 1, 2, 3, 6, 7, 8, 4, 5, 9, 10, 11, 12]  # (%r, then %bc, then %h = z * bc and its matmul)
    late = "\n".join(lines[i] for i in order)
    late = late.replace("%h = stablehlo.multiply %z, %t", "%h = stablehlo.multiply %z, %bc")
    late = late.replace("%s = stablehlo.multiply %dh, %z", "%s = stablehlo.multiply %dh, %h")  # (a copy of h is read)
    assert late.index("%r = ") < late.index("%bc = ") < late.index("%h = ")
    assert run_passes(late, ["recompute-activations"], "cpu") is None
