"""GPU backends: what is compiled for them is checked here on any machine; what runs on them only where IREE
finds a GPU (skipped otherwise; scripts/test-gpu.sh runs the whole suite on each GPU backend found)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import ShapeDtypeStruct as S
from stagec import backend, lax
from stagec.compiler.targets import vulkan_target_flags
from stagec.dtypes import bfloat16
from gpu_text import legalized
from threads import run_at_once

GPUS = backend.gpu_backends()
BF16 = S((64, 64), bfloat16)


def test_gpu_flags_keep_float64_split_cuda_reductions_and_hoist_no_vulkan_constants():
    for name in ("cuda", "vulkan"):
        assert "--iree-input-demote-f64-to-f32=false" in backend.get_backend(name).compile_flags()
    assert "--iree-dispatch-creation-enable-split-reduction" in backend.get_backend("cuda").compile_flags()
    assert "--iree-opt-const-expr-hoisting=false" in backend.get_backend("vulkan").compile_flags()


def test_vulkan_target_has_8bit_storage_and_can_be_chosen(monkeypatch):
    # The default target stored bools as 32-bit words: 5 bools got an 8-byte store, dropped by NVIDIA past 5 bytes.
    flags = " ".join(vulkan_target_flags())
    assert "--iree-vulkan-target=ampere" in flags or "StorageBuffer8BitAccess" in flags
    vulkan_target_flags.cache_clear()
    monkeypatch.setenv("STAGEC_VULKAN_TARGET", "rdna3")
    try:
        assert vulkan_target_flags() == ("--iree-vulkan-target=rdna3",)
    finally:
        vulkan_target_flags.cache_clear()


@pytest.mark.parametrize("target", ["cuda", "vulkan-spirv"])
def test_bfloat16_matmul_compiles_for_gpus(target):
    # IREE 3.13 alone: "failed to distribute" (cuda), "failed to legalize vector.bitcast" (vulkan).
    c = stagec.jit(lambda a, b: a @ b).lower(BF16, BF16).compile(target)
    assert len(c.artifact.vmfb) > 1000


def test_gpu_rewrites_keep_the_signature_and_guard_nan_on_vulkan():
    text = stagec.jit(lambda a, b, x: (a @ b, snp.exp(x))).lower(BF16, BF16, S((4,), np.float32)).as_text()
    cuda = legalized(text, "cuda")
    assert "(tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>" in cuda and "select" not in cuda
    vulkan = legalized(text, "vulkan")
    assert "optimization_barrier" in vulkan and "stablehlo.compare" in vulkan and "stablehlo.select" in vulkan
    signature = [line.split("(", 1)[1] for line in text.splitlines() if "@main(" in line]
    for t in (cuda, vulkan):
        assert [line.split("(", 1)[1] for line in t.splitlines() if "@main(" in line] == signature


def test_vulkan_float64_transcendental_is_not_implemented():
    with _x64():
        with pytest.raises(NotImplementedError, match="Vulkan has no float64 sin"):
            stagec.jit(snp.sin).lower(S((4,), np.float64)).compile("vulkan-spirv")


class _x64:
    def __enter__(self):
        self.old = stagec.config.enable_x64
        stagec.config.update("enable_x64", True)

    def __exit__(self, *exc):
        stagec.config.update("enable_x64", self.old)


@pytest.mark.skipif(not GPUS, reason="no GPU found by IREE's cuda or vulkan drivers")
@pytest.mark.parametrize("name", GPUS or ["none"])
def test_gpu_runs_bools_bf16_matmul_nan_and_argsort_twice(name):
    f = stagec.jit(lambda x, a: ((x > 0).astype(np.float32), snp.exp(x), a @ a), backend=name)
    g = stagec.jit(lambda v: snp.take_along_axis(v, snp.argsort(v), axis=0), backend=name)
    x = np.array([-1.0, -0.5, 0.0, 0.5, 1.0, np.nan], np.float32)
    a = np.random.default_rng(0).standard_normal((64, 64)).astype(bfloat16)
    step, e, m = f(x, a)
    v = x[4::-1].copy()
    for _ in range(2):  # a hoisted constant (argsort's iota) came back permuted from the second call on Vulkan
        np.testing.assert_array_equal(np.asarray(g(v)), np.sort(v))
    assert np.asarray(step).tolist() == [0, 0, 0, 1, 1, 0]
    np.testing.assert_allclose(np.asarray(e), np.exp(x), rtol=1e-6)  # NaN in, NaN out
    ref = a.astype(np.float32) @ a.astype(np.float32)
    assert np.linalg.norm(np.asarray(m).astype(np.float32) - ref) / np.linalg.norm(ref) < 1e-2


def test_a_0d_bfloat16_power_is_computed_in_float32_for_cuda():
    # A 0-d bf16 `x ** y` prints as `tensor<bf16>`: a test of the printed text for "xbf16>" missed it and left the
    # CUDA bf16 power fix out. The pass finds it by its element type. CUDA compiles here without a GPU.
    from iree.compiler import ir

    from stagec.passes import REGISTRY, PassStats
    scalar = S((), bfloat16)
    low = stagec.jit(lambda x, y: x ** y, backend="cuda").lower(scalar, scalar)
    assert "bf16-in-f32" in low.stages()
    assert "stablehlo.power" in low.as_text() and "tensor<bf16>" in low.as_text()
    with ir.Context():  # (the pass alone, on the StableHLO stage)
        module = ir.Module.parse(low.as_text())
        REGISTRY["bf16-in-f32"].run(module, PassStats("bf16-in-f32", "cuda"))
        text = str(module)
    assert re.search(r"stablehlo\.power %\S+, %\S+ : tensor<f32>", text), text
    # in the target's pipeline `mathlib` expands it first (float64 arithmetic, rounded once): no bf16 power is left
    assert "stablehlo.power" not in low.as_text("final")
    ahead = stagec.jit(lambda x, y: x ** y).lower(scalar, scalar).compile("cuda")  # (not loaded: no GPU needed)
    assert len(ahead.artifact.vmfb) > 1000


@pytest.mark.skipif("cuda" not in GPUS, reason="no GPU found by IREE's cuda driver")
def test_cuda_runs_on_any_thread():
    # IREE's CUDA device made its context current on its creating thread only: calls on the backend's worker (a
    # host callback), on a user's thread, and reads and uploads there failed with CUDA_ERROR_INVALID_CONTEXT.
    x = np.linspace(-2, 2, 7, dtype=np.float32)
    f = stagec.jit(lambda v: stagec.pure_callback(np.arcsinh, S(v.shape, v.dtype), v * 2) + 1, backend="cuda")
    g = stagec.jit(lambda v: snp.tanh(v) * 3, backend="cuda")
    out = {}

    def work(i):
        v = stagec.device_put(x + i, stagec.devices("cuda")[0])
        out[i] = (np.asarray(f(v)), np.asarray(g(v)), np.asarray(snp.sin(v)))
    errors = run_at_once(work, 4)
    assert not errors and len(out) == 4, errors
    for i, (a, b, c) in out.items():
        np.testing.assert_allclose(a, np.arcsinh((x + i) * 2) + 1, rtol=1e-6)
        np.testing.assert_allclose(b, np.tanh(x + i) * 3, rtol=1e-6)
        np.testing.assert_allclose(c, np.sin(x + i), rtol=1e-6)


def _on_cpu(text: str, *args) -> list:
    """The results of MLIR `text`'s `main`, compiled for and run on the CPU."""
    import iree.compiler as ic
    import iree.runtime as rt

    from stagec.compiler.targets import TARGETS
    ctx = rt.SystemContext(config=rt.Config("local-sync"))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, ic.compile_str(
        text, target_backends=["llvm-cpu"], extra_args=list(TARGETS["cpu"].flags))))
    name = re.search(r"module @(\w+)", text)[1]
    out = ctx.modules[name]["main"](*args)
    return [np.asarray(r) for r in (out if isinstance(out, (tuple, list)) else [out])]


def test_full_reductions_compile_for_cuda():
    # IREE 3.13's split reduction (a cuda flag) failed to distribute a reduction over every dimension of 64x64
    # floats ("'func.func' op failed to distribute": eager mean, a jit's sum of squares); that of 4096 compiles.
    # `flatten-full-reductions` reduces the 1-D reshape: the same numbers (here on the CPU). Of 64x64, 256x64 and
    # 4x32x32, in one module (each reduction's rewrite is its own).
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(shape).astype(np.float32) for shape in [(64, 64), (256, 64), (4, 32, 32)]]
    low = stagec.jit(lambda *xs: [r for x in xs for r in (snp.sum(x * x), snp.max(x))]).lower(*xs)
    assert len(low.compile("cuda").artifact.vmfb) > 1000
    text = legalized(low.as_text(), "cuda")
    assert text.count("across dimensions = [0] :") == 2 * len(xs)
    got = _on_cpu(text, *xs)
    for k, x in enumerate(xs):
        assert f"tensor<{x.size}xf32>" in text
        np.testing.assert_allclose(got[2 * k], np.sum(x.astype(np.float64) ** 2), rtol=1e-5)
        assert got[2 * k + 1] == x.max()


def test_cuda_sorts_with_an_unread_result_compile():
    # The index operand of a stable sort, read by its comparator, its result unread (`sort`, not `argsort`): IREE
    # 3.13's CUDA pipeline "failed to bufferize" it from 64 floats (128x1024 in test_numpy_shapes' sorts).
    # `sort-results-kept` writes every result (here on the CPU).
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    low = stagec.jit(lambda x: snp.sort(x, axis=-1)).lower(x)
    assert len(low.compile("cuda").artifact.vmfb) > 1000
    text = legalized(low.as_text(), "cuda")
    assert "optimization_barrier" in text
    np.testing.assert_array_equal(_on_cpu(text, x)[0], np.sort(x, -1))


def test_argmax_of_a_long_array_compiles_for_cuda():
    # A reduction of two results (value, index) to one element: IREE 3.13's split reduction "failed to form split
    # reduction dispatch" from 1024 elements (1000 compiled), 2-D ones flattened alike, a column's too.
    # `variadic-reductions-in-rows` reduces 512 rows first, filled up with the inits: the same indices, ties to the first
    # (here on the CPU). Of 4099 and 2^20 elements, in one module.
    args, want = [], []
    for n in (4099, 1 << 20):
        x = np.random.default_rng(0).integers(0, 50, n).astype(np.float32)  # (many ties)
        y = x.copy()
        y[n // 3] = np.nan
        args += [x, y]
        want += [np.argmax(x), np.argmin(x[:4096]), n // 3, np.nanargmin(y), [np.argmax(x[:4096])]]
    f = lambda x, y: (snp.argmax(x), snp.argmin(snp.reshape(x[:4096], (64, 64))), snp.argmax(y), snp.nanargmin(y),
                      snp.argmax(snp.reshape(x[:4096], (4096, 1)), axis=0))  # (a column: IREE drops its unit dimension)
    low = stagec.jit(lambda x, y, x2, y2: (*f(x, y), *f(x2, y2))).lower(*args)
    assert len(low.compile("cuda").artifact.vmfb) > 1000
    text = legalized(low.as_text(), "cuda")
    assert text.count("across dimensions = [1] :") == 10
    assert [v.tolist() for v in _on_cpu(text, *args)] == want


def test_argmax_of_complex_values_compiles_for_cuda():
    # argmax of complex values (a reduction of them and their indices): iree-compile segfaulted for CUDA (of 9 values,
    # their result unread: test_numpy_where_complex's module; of 64x64 rows; of 1000). `complex-reductions-in-parts`
    # reduces real and imaginary parts (here on the CPU). complex64 and complex128, in one module.
    rng = np.random.default_rng(0)
    zs = []
    for dtype in (np.complex64, np.complex128):
        z = (rng.integers(-3, 3, 4096) + 1j * rng.integers(-3, 3, 4096)).astype(dtype)  # (many ties)
        z[[5, 3000]] = [np.nan + 1j, 2 + np.nan * 1j]
        zs.append(z)
    f = lambda z: (snp.argmax(z[:7]), snp.argmin(z[:1000]), snp.argmax(snp.reshape(z, (64, 64)), axis=1),  # noqa: E731
                   snp.argmax(z), snp.max(snp.reshape(z[:8], (2, 4)), axis=1))
    with _x64():
        low = stagec.jit(lambda a, b: (*f(a), *f(b))).lower(*zs)
        assert len(low.compile("cuda").artifact.vmfb) > 1000
        text = legalized(low.as_text(), "cuda")
    assert not re.search(r"stablehlo.reduce\(.*complex.*->.*tensor<i32>", text)
    got = _on_cpu(text, *zs)
    want = [w for z in zs for w in (np.argmax(z[:7]), np.argmin(z[:1000]), np.argmax(z.reshape(64, 64), axis=1),
                                    np.argmax(z), np.max(z[:8].reshape(2, 4), axis=1))]
    assert len(got) == len(want) == 10
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_reductions_of_values_of_complex_ones_compile_for_cuda():
    # A reduction of real values computed from complex ones: IREE 3.13 fused the complex read into the reduction and
    # iree-compile segfaulted (GPUApplyPaddingLevel; complex eigh of 16x16 in test_linalg's Jacobi test, before its
    # norm's sum was flattened). `complex-reduction-inputs-apart` computes them in a dispatch apart (here on the CPU).
    z = (np.linspace(-3, 5, 256) + 1j * np.linspace(2, -7, 256)).astype(np.complex64)
    f = lambda z: (snp.sum(snp.abs(z)), snp.linalg.norm(z), snp.sum(snp.real(snp.reshape(z, (4, 64))), axis=1))  # noqa: E731
    low = stagec.jit(f).lower(z)
    assert len(low.compile("cuda").artifact.vmfb) > 1000
    text = legalized(low.as_text(), "cuda")
    assert text.count("optimization_barrier") == 3
    got, want = _on_cpu(text, z), [np.sum(np.abs(z)), np.linalg.norm(z), np.sum(z.real.reshape(4, 64), axis=1)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5)


def test_complex_of_reductions_compiles_for_cuda():
    # rfft of 4x1000 float32 takes the DFT path: two sums of 4x1000x501 products made complex. IREE 3.13 fused the
    # complex op into the sums' dispatch and iree-compile segfaulted (the H200 run of 2026-12-04, tests/
    # test_special_value_fixes.py). `complex-of-reductions-apart` reads the sums through barriers (values on the CPU).
    x = np.random.default_rng(0).standard_normal((4, 1000)).astype(np.float32)
    low = stagec.jit(snp.fft.rfft).lower(x)
    assert len(low.compile("cuda").artifact.vmfb) > 1000
    text = legalized(low.as_text(), "cuda")
    assert text.count("optimization_barrier") >= 2
    want = np.fft.rfft(x.astype(np.float64))
    assert np.abs(_on_cpu(text, x)[0] - want).max() < 2e-6 * np.abs(want).max()


def test_float64_functions_of_constants_compile_for_cuda(x64):
    # IREE evaluates constant expressions at compile time with host code, which had no float64 cos or sin to link
    # ("iree-lld: undefined symbol: cos": scipy.stats' float64 tests on the H200, 2026-12-04); CUDA's flags turn
    # that evaluation off. Compiled here; the values on a GPU in tests/test_scipy_stats.py.
    f = lambda x: (x * snp.cos(snp.arange(1.0, 6.0)), x * lax.lgamma(snp.arange(1.0, 6.0)),  # noqa: E731
                   x * snp.tan(snp.arange(1.0, 6.0)))
    assert len(stagec.jit(f).lower(np.ones(5)).compile("cuda").artifact.vmfb) > 1000


def test_float32_logs_of_subnormals_for_cuda():
    # IREE's CUDA log (MLIR's polynomial) reads x below 2^-126 as 2^-126: log(1e-45) was -87.3, and scipy's
    # ndtri(1e-45) -12.95 (the H200, 2026-12-04). `mathlib-cuda` scales a subnormal by 2^24 first. The CPU cannot
    # check the values (its modules flush subnormals); a CUDA device does.
    x = np.array([1e-45, 3e-42, 1e-40, 1.1e-38, 2e-38, 0.5, 1.0, 3e38, 0.0, -1.0, np.inf, np.nan], np.float32)
    text = legalized(stagec.jit(snp.log).lower(x).as_text(), "cuda")
    assert "dense<0x4B800000>" in text and text.count("stablehlo.log") == 1, text  # (x 2^24, one log)
    if "cuda" in GPUS:
        got = np.asarray(stagec.jit(snp.log, backend="cuda")(x)).astype(np.float64)
        with np.errstate(all="ignore"):
            want = np.log(x.astype(np.float64))
        fin = np.isfinite(want)
        np.testing.assert_array_equal(got[~fin], want[~fin])
        np.testing.assert_allclose(got[fin], want[fin], rtol=2 ** -22, atol=2 ** -24)


def _pools(x, window, stride, reduce):
    """NumPy's pooling of NCHW `x` over VALID windows of the last two dimensions."""
    v = np.lib.stride_tricks.sliding_window_view(x, window, axis=(2, 3))[:, :, ::stride[0], ::stride[1]]
    return reduce(v, axis=(-2, -1))


def test_two_poolings_compile_for_cuda():
    # Two poolings of one output shape and init: IREE 3.13 made one fill of both outputs, wrote it from the first's
    # dispatch beside the pooling accumulated into it, and CUDA "failed to bufferize" that dispatch (test_vmap's
    # conv_pool: a convolution's max pooling, batched and looped). `reduce-window-inits-apart` gives each pooling an
    # init of its own (here on the CPU).
    lax = stagec.lax
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((1, 3, 5, 5)).astype(np.float32) for _ in range(2))
    f = lambda x, y: (lax.reduce_window(x, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID"),  # noqa: E731
                      lax.reduce_window(y, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID"),
                      lax.reduce_window(x, 0.0, lax.add, (1, 1, 2, 2), (1, 1, 1, 1), "VALID"),
                      lax.reduce_window(y, 0.0, lax.add, (1, 1, 2, 2), (1, 1, 1, 1), "VALID"))
    low = stagec.jit(f).lower(x, y)
    assert len(low.compile("cuda").artifact.vmfb) > 1000
    text = legalized(low.as_text(), "cuda")
    assert text.count("optimization_barrier") == 4
    want = [_pools(x, (2, 2), (2, 2), np.max), _pools(y, (2, 2), (2, 2), np.max),
            _pools(x.astype(np.float64), (2, 2), (1, 1), np.sum), _pools(y.astype(np.float64), (2, 2), (1, 1), np.sum)]
    for g, w in zip(_on_cpu(text, x, y), want):  # (float32 sums of four values near 1: 1e-6 apart at most)
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def _cuda_bindings(f, *args) -> dict:
    """Each dispatch's buffer bindings in `f`'s module compiled for cuda (here: no GPU needed)."""
    import tempfile

    from stagec.compiler.driver import DUMP_SOURCES, dispatch_bindings
    low = stagec.jit(f, backend="cuda").lower(*args)
    with tempfile.TemporaryDirectory() as d:
        backend.get_backend("cuda").compile(low.as_text("final"), low.name, None, [DUMP_SOURCES + d])
        return dispatch_bindings(d)


def _ten_in_fourteen_out(*xs):  # one scalar run of 10 inputs and 7 results (twice: as read, reshaped)
    o = [(x * x + 0.5) * xs[k + 1] * xs[k + 2] * xs[k + 3] for k, x in enumerate(xs[:7])]
    return o + [snp.reshape(v, (1,)) for v in o]


@pytest.mark.parametrize("case", ["gamma", "run"])
def test_cuda_dispatches_bind_at_most_16_buffers(case):
    # IREE's CUDA runtime refused jit_gamma at load: "binding_flags count 18 exceeds maximum of 16". bound-bindings
    # cut float64 gamma of one element (one dispatch of 2 bindings uncut) where 25 values were live: the next
    # dispatch read 17 of them; the run above, left whole under 24 bindings, was one dispatch of 17.
    import stagec.scipy.special as ss
    with _x64():
        found = (_cuda_bindings(ss.gamma, np.ones(1)) if case == "gamma"
                 else _cuda_bindings(_ten_in_fourteen_out, *np.arange(1, 11, dtype=np.float32) / 10))
    assert found and max(found.values()) <= 16, found


def test_long_elementwise_chains_compile_for_cuda_within_16_bindings(x64):
    # 40 float64 arrays' terms summed: IREE fused them into one dispatch of 32 (a loop's sum) or 41 (`sum`) buffers
    # (tests/test_jit.py on the H200, 2026-12-04). The `elementwise-bindings` retry cuts the chain into runs of at
    # most 12; its values, run on the CPU, are float64 NumPy's. (Its variant's text: the retry's passes after
    # CUDA's legalization.)
    from stagec.compiler.driver import run_passes
    from stagec.compiler.retries import retry
    variant = lambda low: run_passes(legalized(low.as_text(), "cuda"), retry("elementwise-bindings").passes, "cuda")  # noqa: E731
    xs = [np.linspace(0.01, 0.4, 3) * (i + 1) for i in range(40)]
    want = sum(np.log1p(x * x + i) * np.exp(-x) + x ** 3 for i, x in enumerate(xs))
    f = lambda *xs: sum(snp.log1p(x * x + i) * snp.exp(-x) + x ** 3 for i, x in enumerate(xs))  # noqa: E731
    low = stagec.jit(f).lower(*xs)
    assert low.compile("cuda").variant == ["elementwise-bindings"]
    text = variant(low)
    assert text.count("optimization_barrier") >= 3
    np.testing.assert_allclose(_on_cpu(text, *xs)[0], want, rtol=1e-14)
    # A scalar sine's, cosine's and tangent's gradients at 1e10: IREE split the long scalar run itself, one dispatch
    # writing 17-21 values the others read (23 buffers); the retry reads each value used 3 times or more apart.
    x = np.float32(1e10)
    low = stagec.jit(lambda x: [stagec.grad(h)(x) for h in (snp.sin, snp.cos, snp.tan)]).lower(x)
    assert low.compile("cuda").variant == ["elementwise-bindings"]
    text = variant(low)
    got = [float(v) for v in _on_cpu(text, np.asarray(x))]
    np.testing.assert_allclose(got, [np.cos(1e10), -np.sin(1e10), 1 + np.tan(1e10) ** 2], rtol=4e-6)


def test_a_dispatch_over_the_binding_limit_fails_at_compile_naming_the_function(monkeypatch):
    # (a module over the limit compiled, and failed only when loaded on the GPU)
    from stagec import cache
    from stagec.compiler import targets
    from stagec.errors import CompileError
    monkeypatch.setitem(targets.TARGETS, "cuda", targets.TARGETS["cuda"]._replace(max_bindings=2))
    monkeypatch.setattr(cache, "enabled", lambda: False)  # (a module stored under the real limit is no check)
    x = S((8,), np.float32)
    with pytest.raises(CompileError, match=r"function 'jit_fma'[\s\S]*binds 4 buffers; the cuda runtime binds at most 2"):
        stagec.jit(fma, backend="cuda").lower(x, x, x).compile()


def test_a_dump_folder_s_older_dispatches_are_not_this_module_s(tmp_path):
    # A CUDA compile asked to dump its dispatch sources checks the bindings in that folder: files an earlier module
    # left there (here one of 18 bindings) are not counted.
    import os

    from stagec.compiler.driver import DUMP_SOURCES
    layout = ", ".join(["#hal.pipeline.binding<storage_buffer>"] * 18)
    old = tmp_path / "old_dispatch_0.mlir"
    old.write_text(f"hal.executable.export public @old_dispatch_0 ordinal(0) layout(#hal.pipeline.layout<bindings=[{layout}]>)\n")
    os.utime(old, (1e9, 1e9))
    low = stagec.jit(fma, backend="cuda").lower(*[S((8,), np.float32)] * 3)
    assert len(backend.get_backend("cuda").compile(low.as_text("final"), low.name, None, [DUMP_SOURCES + str(tmp_path)])) > 1000
    assert len(os.listdir(tmp_path)) > 1  # (this module's sources are there too)


def fma(a, b, c):
    return a * b + c


def test_cuda_float32_trig_takes_no_branch_and_expm1_stays_exact_near_overflow():
    """On an H200, float32 sin's branch on max |x| (the maximum read back to the host) took 1.9 of the 4.4 ms of a
    1M-element sum(x**2 + sin x); CUDA's `mathlib-cuda` selects every tier instead (2.2 ms there, within 0.82 ulps
    over huge arguments and multiples of pi/2). IREE's float32 expm1 was 5.3 ulps off at 88.72; CUDA takes the CPU's.
    Here: the CUDA legalization's text, run on the CPU, against float64 NumPy."""
    rng = np.random.default_rng(3)
    k = rng.integers(1, 1 << 20, 4096)
    x = np.concatenate([rng.uniform(-600, 600, 20000), np.sign(rng.uniform(-1, 1, 8000)) * 10 ** rng.uniform(3, 38, 8000),
                        (k * (np.pi / 2)).astype(np.float32), rng.uniform(80, 88.7228, 2000), [88.72277, 1e-30, -3e-8]])
    x = x.astype(np.float32)  # (over `IF_ELEMENTS`: the CPU's pipeline branches there)
    text = legalized(stagec.jit(lambda x: (snp.sin(x), snp.cos(x), snp.tan(x), snp.expm1(x))).lower(x).as_text(), "cuda")
    assert "stablehlo.if" not in text and "stablehlo.exponential_minus_one" not in text
    x64 = x.astype(np.float64)
    small = np.abs(x) < 88.73
    for got, want, bound, where in zip(_on_cpu(text, x), (np.sin(x64), np.cos(x64), np.tan(x64), np.expm1(x64)),
                                       (1, 1, 2.6, 1.5), (True, True, True, small)):
        got, want = np.asarray(got, np.float64)[where], want[where]
        ulps = np.abs(got - want) / np.spacing(np.abs(want.astype(np.float32))).astype(np.float64)
        assert ulps.max() <= bound, (x[where][np.argmax(ulps)], ulps.max())


def test_half_products_of_one_element_and_half_depthwise_convolutions_compile_for_both_gpus():
    # On the H200 (2026-11-30) both failed to compile for CUDA, the convolutions for NVIDIA's Vulkan too; the CPU's
    # pipeline had their passes. CUDA's `bf16-in-f32` ran before `half-products-in-f32`, so a bfloat16 product of
    # one element kept its half operands ("failed to legalize 'stablehlo.multiply' (tensor<1xf32>,
    # tensor<1x1xf32>)"), and neither GPU ran `grouped-conv-kernels-apart` ("'tensor.collapse_shape' op expected
    # collapsed type to be 'tensor<3x2x3xf16>'"). The rewritten modules run right here on the CPU.
    from test_conv import _conv_ref

    from stagec import lax
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((2, 3, 7, 6)), rng.standard_normal((3, 1, 3, 2))
    conv = lambda x, w: lax.conv_general_dilated(x, w, (1, 2), "SAME", feature_group_count=3)  # noqa: E731
    f = lambda a, b, x, w: (a @ a, b @ b, a @ b, conv(x, w), conv(x.astype(np.float32), w.astype(np.float32)))  # noqa: E731
    dts = (np.float16, bfloat16)  # (both in one module: f of each dtype's arguments)
    args = [a for dt in dts for a in (np.array([1.5], dt), np.array([[-2.25]], dt), x.astype(dt), w.astype(dt))]
    both = lambda *a: (*f(*a[:4]), *f(*a[4:]))  # noqa: E731
    low = stagec.jit(both).lower(*args)
    assert len(low.compile("cuda").artifact.vmfb) > 1000
    assert len(_for_ampere(both, *args).artifact.vmfb) > 1000
    results = _on_cpu(legalized(low.as_text(), "cuda"), *args)
    for k, dt in enumerate(dts):
        got = results[5 * k:5 * k + 5]
        assert [float(g.ravel()[0]) for g in got[:3]] == [2.25, 5.0625, -3.375], dt
        want = _conv_ref(*(a.astype(np.float64) for a in args[4 * k + 2:4 * k + 4]), (1, 2), ((1, 1), (0, 1)), (1, 1),
                         (1, 1), 3)
        for g in got[3:]:
            np.testing.assert_allclose(g.astype(np.float32), want, rtol=2e-2, atol=5e-2)


def _sqrt_cases() -> np.ndarray:
    """float32 over every exponent (normal ones: CUDA flushes subnormals), 0, inf and 1 +- ulps."""
    rng = np.random.default_rng(3)
    x = (rng.uniform(1, 2, 1 << 16) * np.exp2(rng.integers(-126, 128, 1 << 16))).astype(np.float32)
    edges = np.array([0.0, 1.0, np.inf, 4.0, np.nextafter(np.float32(1), 2), np.finfo(np.float32).max], np.float32)
    return np.concatenate([x, edges])


def test_float32_square_roots_are_correctly_rounded_for_cuda():
    # IREE 3.13's CUDA code took PTX's `sqrt.approx.f32` and `rsqrt.approx.f32` (random triangular draws, a
    # sqrt of a uniform, differed from JAX's in 575 of 4000 on the H200, 2026-11-30); `sqrt-in-f64` computes them in
    # float64 (`sqrt.rn.f64`), rounded once: correctly rounded. Checked here on what CUDA is given, run on the CPU,
    # and on a GPU where there is one.
    x = _sqrt_cases()

    def f(v):  # (the second root reads a reshape: `fuse-chains` makes its chain one generic, its root math.sqrt)
        return (snp.sqrt(v), snp.sqrt(snp.abs(v[:1 << 16].reshape(256, 256))), stagec.lax.rsqrt(v),
                snp.linalg.norm(v[:4]), snp.hypot(v, 1.0))
    low = stagec.jit(f, backend="cuda").lower(x)
    assert "linalg.generic" in low.as_text("final")
    ptx = backend.get_backend("cuda").compile(low.as_text("final"), low.name, None, [])
    assert b"sqrt.rn.f64" in ptx and b"sqrt.approx" not in ptx
    x64 = x.astype(np.float64)
    want = [np.sqrt(x64).astype(np.float32), 1 / np.sqrt(x64), np.sqrt(np.sum(x64[:4] ** 2)), np.hypot(x64, 1.0)]
    runs = [_on_cpu(low.as_text("final"), x)]
    if "cuda" in GPUS:
        runs.append([np.asarray(r) for r in stagec.jit(f, backend="cuda")(x)])
    for got in runs:
        assert got[0].tobytes() == want[0].tobytes()
        assert got.pop(1).tobytes() == want[0][:1 << 16].tobytes()
        np.testing.assert_allclose(got[1], want[1], rtol=1.1 * 2 ** -24)  # (two roundings in float64, then one)
        for g, w in zip(got[2:], want[2:]):
            np.testing.assert_allclose(g, w, rtol=2 ** -22)  # (within 2 ulps: arithmetic around the root)


def test_scatters_of_widened_updates_compile_for_cuda():
    # On the H200 (2026-11-30) `unique`, `intersect1d`, `setdiff1d` and `setxor1d` with `size=` failed to compile
    # for CUDA ("'func.func' op failed to apply fusion + hoisting patterns (set 1)"): IREE 3.13 fused the widening of
    # a scatter's updates (int32 positions to int64) into the scatter's dispatch. Here int32, bool and float32
    # updates widened, each failed alone; `widened-scatter-updates-apart` computes them apart (the rewritten module
    # run on the CPU).
    i = np.array([5, 0, 3, 6, 7, 1])
    m, v = np.array([2, -1, 4, 9, 0, 6], np.int32), np.linspace(-1.5, 2.25, 6).astype(np.float32)
    f = lambda i, m, b, v: (snp.zeros(8, np.int64).at[i].set(m.astype(np.int64)),  # noqa: E731
                            snp.zeros(8, np.int32).at[i].set(b), snp.zeros(8).at[i[:3]].add(v[:3].astype(np.float64)))
    with _x64():
        low = stagec.jit(f).lower(i, m, m > 0, v)
        assert len(low.compile("cuda").artifact.vmfb) > 1000
        text = legalized(low.as_text(), "cuda")
    assert text.count("optimization_barrier") == 3
    want = [np.zeros(8, np.int64), np.zeros(8, np.int32), np.zeros(8)]
    want[0][i], want[1][i] = m, m > 0
    np.add.at(want[2], i[:3], v[:3].astype(np.float64))
    for g, w in zip(_on_cpu(text, i, m, m > 0, v), want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_int64_sorts_of_slices_compile_for_cuda():
    # On the H200 (2026-11-30) `unique(rows, axis=0, size=5)` failed to compile for CUDA too ("failed to
    # bufferize op"): IREE 3.13 fused the slice an int64 sort operand is (a row of the keys of a lexicographic sort;
    # `sort(x[1])`, `argsort(x[0, 2:9])`) into the sort's dispatch, which sorts in place. `int64-sort-slices-apart`
    # (Vulkan's already) reads the slice through a barrier; int32 and float keys compiled.
    x = np.random.default_rng(5).permutation(24).reshape(2, 12) - 12
    rows = np.array([[1, 2], [0, 5], [1, 2], [0, 1]])
    f = lambda x, r: (snp.sort(x[1]), snp.argsort(x[0, 2:9]), snp.lexsort(x[:, :5]),  # noqa: E731
                      *snp.unique(r, return_counts=True, axis=0, size=5))
    with _x64():
        low = stagec.jit(f).lower(x, rows)
        assert len(low.compile("cuda").artifact.vmfb) > 1000
        text = legalized(low.as_text(), "cuda")
    v, c = np.unique(rows, return_counts=True, axis=0)
    want = [np.sort(x[1]), np.argsort(x[0, 2:9]), np.lexsort(x[:, :5]), np.concatenate([v, v[:1].repeat(2, 0)]),
            np.concatenate([c, [0, 0]])]
    for g, w in zip(_on_cpu(text, x, rows), want):
        np.testing.assert_array_equal(g, w)


def test_float16_square_roots_in_a_generic_are_rounded_from_float32_for_cuda():
    # `sqrt-in-f64` widens a float16 root inside `fuse-chains`' generic through float32 (IREE's float64 -> float16
    # converts gave 0): the result is float32's correctly rounded root rounded to float16, as NumPy's float32.
    rng = np.random.default_rng(5)
    x = (rng.uniform(1, 2, (1 << 16) + 8) * np.exp2(rng.integers(-14, 15, (1 << 16) + 8))).astype(np.float16)
    f = lambda v: (snp.sqrt(v), snp.sqrt(snp.abs(v[:1 << 16].reshape(256, 256))))  # noqa: E731
    low = stagec.jit(f, backend="cuda").lower(x)
    final = low.as_text("final")
    assert "linalg.generic" in final and "math.sqrt" in final and "arith.truncf" in final
    assert b"sqrt.approx" not in backend.get_backend("cuda").compile(final, low.name, None, [])
    want = np.sqrt(x.astype(np.float32)).astype(np.float16)
    runs = [_on_cpu(final, x)]
    if "cuda" in GPUS:
        runs.append([np.asarray(r) for r in stagec.jit(f, backend="cuda")(x)])
    for got in runs:
        assert got[0].tobytes() == want.tobytes() and got[1].tobytes() == want[:1 << 16].tobytes()


def test_strided_slices_of_widened_values_compile_for_cuda():
    # IREE 3.13's CUDA codegen failed ("'func.func' op failed to apply fusion + hoisting patterns (set 3)") on a
    # strided slice of bfloat16 values widened in the slice's dispatch, at 16 and 100 values (jit(trace) of a
    # bfloat16 matrix): the CPU's silent version of it read the first values. `narrow-strided-slices-apart-any`
    # computes the widening apart (found compiling on the CPU machine, 2026-11-30; run on no GPU yet).
    b = [np.arange(n).astype(bfloat16) for n in (16, 100)]  # (both sizes in one module: a barrier each)
    low = stagec.jit(lambda *vs: [v.astype(np.float32)[::5] + 1 for v in vs]).lower(*b)
    assert len(low.compile("cuda").artifact.vmfb) > 1000
    assert legalized(low.as_text(), "cuda").count("optimization_barrier") == 2
    assert len(stagec.jit(snp.trace).lower(np.eye(4, dtype=bfloat16)).compile("cuda").artifact.vmfb) > 1000


# (The tests below this point run modules on lavapipe where there is one: they come last, as a process's
# lavapipe device keeps a core spinning from its creation on, `backend.SPINNING_WAITS`.)


def _for_ampere(f, *args):
    """`f` compiled for NVIDIA's Vulkan target (`ampere`: what stagec chooses on an NVIDIA GPU), without a GPU."""
    with pytest.MonkeyPatch.context() as m:
        m.setenv("STAGEC_VULKAN_TARGET", "ampere")
        vulkan_target_flags.cache_clear()
        try:
            return stagec.jit(f).lower(*args).compile("vulkan-spirv")
        finally:
            vulkan_target_flags.cache_clear()


def test_vulkan_compiles_a_quantile_and_a_nanmedian_in_one_module():
    # Two sorts whose index operand (one iota, copied for each by `sorts-apart`) has an unread result: iree-compile
    # segfaulted (Error code -11) for every Vulkan target, so all of test_numpy_names_match_numpy's one module failed.
    a, n = np.array([3.0, 1.0, 2.0, 7.0, 5.0, 4.0, 6.0]), np.array([1.0, np.nan, 3.0, 0.5, np.nan, 2.0, 8.0])
    f = lambda a, n: (snp.quantile(a, 0.3), snp.nanmedian(n))  # noqa: E731
    with _x64():
        assert len(_for_ampere(f, a, n).artifact.vmfb) > 1000
        if backend.device_names("vulkan"):  # (lavapipe here: the portable target, which crashed alike)
            got = stagec.jit(f, backend="vulkan")(a, n)
            np.testing.assert_allclose([float(g) for g in got], [np.quantile(a, 0.3), np.nanmedian(n)], rtol=1e-15)


def test_vulkan_complex_constants_compile_and_run():
    # A complex constant of several elements (a DFT matrix of fft of a length not a power of two): "failed to legalize
    # operation 'arith.constant'" on every Vulkan target; test_fft's float32 tests failed on NVIDIA's.
    c = (np.arange(12).reshape(3, 4) + 1j * np.arange(12)[::-1].reshape(3, 4)).astype(np.complex64)
    z = (np.linspace(-1, 1, 24).reshape(6, 4) + 0.5j).astype(np.complex64)
    f = lambda z: (snp.sum(z[:, None, :] * c, axis=2), snp.fft.fft(z, axis=0))  # noqa: E731
    assert len(_for_ampere(f, z).artifact.vmfb) > 1000
    if backend.device_names("vulkan"):
        got, dft = stagec.jit(f, backend="vulkan")(z)
        np.testing.assert_allclose(np.asarray(got), np.sum(z[:, None, :] * c, axis=2), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(dft), np.fft.fft(z, axis=0), rtol=1e-5, atol=1e-5)


def test_vulkan_divides_uint8():
    # "bitwidth emulation is not implemented yet on unsigned op pattern" (arith.divui of i8) on every Vulkan target,
    # for some shapes (256 elements: yes; 65536: no).
    x = np.arange(256, dtype=np.uint8)
    f = lambda x, y: (x // y, x % y, stagec.lax.div(x, y | 1))  # noqa: E731
    assert len(_for_ampere(f, x, x).artifact.vmfb) > 1000
    if backend.device_names("vulkan"):
        xs = np.stack([x] * 52)
        ys = np.stack([np.roll(x, k) for k in range(0, 256, 5)])  # (every pair x, y with y - x = k mod 256)
        with np.errstate(divide="ignore"):
            for got, want in zip(stagec.jit(f, backend="vulkan")(xs, ys), (xs // ys, xs % ys, xs // (ys | 1))):
                assert np.asarray(got).dtype == np.uint8
                np.testing.assert_array_equal(np.asarray(got), want)


def test_vulkan_counts_leading_zeros_of_64_bit_integers():
    # "failed to legalize operation 'math.ctlz'" of i64 for NVIDIA's target (float64 frexp: test_numpy_names);
    # `clz64-in-halves` counts on the 32-bit halves (here on the CPU, and the counts on lavapipe where there is one).
    v = [0, 1, -1, 5, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 62 + 3, 2 ** 63 - 1, -(2 ** 63)]
    v += [1 << k for k in range(63)] + [(1 << k) - 1 for k in range(1, 64)]
    x = np.array(v, np.int64)
    u = x.view(np.uint64)
    d = np.array([3.0, -0.1, 5e-324, 1e-310, -2.2e-308, 1.7e308, 0.0, -np.inf, np.nan, 1234.5])
    f = lambda x, u, d: (stagec.lax.clz(x), stagec.lax.clz(u), *snp.frexp(d))  # noqa: E731
    want = [np.array([64 - int(w).bit_length() for w in u], np.int64), None, *np.frexp(d)]
    want[1] = want[0].astype(np.uint64)
    with _x64():
        assert len(_for_ampere(f, x, u, d).artifact.vmfb) > 1000
        text = legalized(stagec.jit(f).lower(x, u, d).as_text(), "vulkan")
        runs = [_on_cpu(text, x, u, d)]
        if backend.device_names("vulkan"):  # (the counts: lavapipe's portable target has no float64 bitcast)
            runs.append(stagec.jit(lambda x, u: (stagec.lax.clz(x), stagec.lax.clz(u)), backend="vulkan")(x, u))
    assert "count_leading_zeros" in text and not re.search(r"count_leading_zeros.*i64", text)
    for got in runs:
        for g, w in zip(got, want):
            assert np.asarray(g).dtype == w.dtype
            np.testing.assert_array_equal(np.asarray(g), w)


def _legalized_runs(f, *args) -> list:
    """`f`'s results from its module after Vulkan's legalization, compiled for and run on the CPU, and from
    lavapipe (Vulkan's portable target) where there is one: the values the rewrites keep."""
    runs = [_on_cpu(legalized(stagec.jit(f).lower(*args).as_text(), "vulkan"), *args)]
    if backend.device_names("vulkan"):
        runs.append([np.asarray(r) for r in stagec.jit(f, backend="vulkan")(*args)])
    return runs


def test_vulkan_compiles_bfloat16_from_integers():
    # "'spirv.Bitcast' op mismatch in result type bitwidth 16 and operand type bitwidth 32" on every Vulkan target
    # (NVIDIA's, and lavapipe's portable one): an iota of bfloat16 (`linspace` of bfloat16 bounds, eagerly), a convert
    # to bfloat16 from int32 or uint8, or from an iota's float32: IREE folded it into an integer-to-bfloat16 convert.
    i = np.array([0, 1, 7, 257, 259, 2 ** 24 + 3, 2 ** 25 + 2 ** 17 + 1, 2 ** 31 - 1, -2 ** 31, -259], np.int32)
    u = np.arange(256, dtype=np.uint8)
    f = lambda i, u: (i.astype(bfloat16), u.astype(bfloat16), snp.arange(300, dtype=bfloat16),  # noqa: E731
                      snp.arange(300, dtype=np.float32).astype(bfloat16) * 2)
    want = [i.astype(np.float32).astype(bfloat16), u.astype(bfloat16), np.arange(300).astype(bfloat16),
            np.arange(300).astype(bfloat16) * 2]
    lin = lambda: snp.linspace(np.array(0.0, bfloat16)[()], np.array(2.0, bfloat16)[()], 5)  # noqa: E731
    assert len(_for_ampere(lambda i, u: (*f(i, u), lin()), i, u).artifact.vmfb) > 1000  # (one module, linspace too)
    for got in _legalized_runs(f, i, u):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g).view(np.uint16), w.view(np.uint16))


def test_vulkan_compiles_reductions_over_several_dimensions():
    # NVIDIA's target: "failed to legalize operation 'vector.create_mask'" (the total of a 64 x 33 log-softmax loss,
    # sum(z - log(s)[:, None]): tests/test_fusion_hazards.py), "'vector.transfer_read' op with rank > 1" (64 x 31),
    # and over dimensions 0 and 2 even of an argument. `reductions-in-one-dimension` reduces them merged into one.
    rng = np.random.default_rng(3)
    a, x = rng.standard_normal((64, 33)).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    b = rng.standard_normal((64, 4, 31)).astype(np.float32)
    f = lambda a, x, b: (snp.sum(a - x[:, None]), snp.sum(b, axis=(0, 2)),  # noqa: E731
                         snp.max(b * x[:, None, None], axis=(1, 2)), snp.sum(b - 1.0, axis=(0, 1)))
    want = [np.sum(a - x[:, None]), b.sum((0, 2)), (b * x[:, None, None]).max((1, 2)), (b - 1.0).sum((0, 1))]
    assert len(_for_ampere(f, a, x, b).artifact.vmfb) > 1000
    text = legalized(stagec.jit(f).lower(a, x, b).as_text(), "vulkan")
    assert not re.search(r"across dimensions = \[\d+, \d+", text)
    for got in _legalized_runs(f, a, x, b):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-4)


def test_vulkan_compiles_sums_of_negated_values():
    # NVIDIA's target: "'linalg.generic' op Failed to get an identity value for the reduction operation": IREE folded
    # acc + (-x) into acc - x (the gradient of -sum(log_softmax(v)[:, 0]): tests/test_fusion_hazards.py; sum(-x) of
    # 32 floats). float32 and float16 negate by a sign-bit flip, exactly; bfloat16 through a barrier.
    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 128)).astype(np.float32)
    x[0, :3] = [0.0, -0.0, np.nan]
    h, hb = x[:, :32].astype(np.float16), x[1:, :32].astype(bfloat16)
    f = lambda x, h, hb: (snp.sum(-x, axis=1), snp.sum(-x[1:, :32]), snp.sum(-h, axis=0),  # noqa: E731
                          snp.sum(-hb, axis=1), -x)
    want = [np.sum(-x, axis=1), np.sum(-x[1:, :32]), np.sum(-h, axis=0, dtype=np.float32), None, -x]
    z = rng.standard_normal((64, 128)).astype(np.float32)
    g = stagec.grad(lambda v: -snp.sum(stagec.nn.log_softmax(v)[:, 0]))
    assert len(_for_ampere(lambda x, h, hb, z: (*f(x, h, hb), g(z)), x, h, hb, z).artifact.vmfb) > 1000  # (one module)
    for got in _legalized_runs(f, x, h, hb):
        for k in (0, 1, 2):
            np.testing.assert_allclose(np.asarray(got[k], np.float32), want[k], rtol=2e-3, atol=2e-3)
        np.testing.assert_allclose(np.asarray(got[3], np.float32), -hb.astype(np.float32).sum(1), rtol=2e-2, atol=0.1)
        np.testing.assert_array_equal(np.asarray(got[4]).view(np.uint32), want[4].view(np.uint32))  # (bits: -0.0)


def test_vulkan_compiles_complex_values_of_products():
    # NVIDIA's target: a complex op fused into the dispatch of the products its parts are (`fft-as-dft`'s x Wr + i x
    # Wi) did not compile: "failed to legalize unresolved source materialization from ('memref<1xcomplex<f32>, ...')"
    # (rfft of 3 x 64), "failed to legalize operation 'arith.constant'" (fft of 1024 points). tests/test_fft.py.
    rng = np.random.default_rng(5)
    r = rng.standard_normal((3, 64)).astype(np.float32)
    z = (rng.standard_normal(1024) + 1j * rng.standard_normal(1024)).astype(np.complex64)
    a, b = rng.standard_normal((64, 33)).astype(np.float32), rng.standard_normal((64, 33)).astype(np.float32)
    f = lambda r, z, a, b: (stagec.lax.complex(r @ a, r @ b - 1.0), snp.fft.rfft(r), snp.fft.fft(z))  # noqa: E731
    want = [(r.astype(np.float64) @ a) + 1j * (r.astype(np.float64) @ b - 1.0), np.fft.rfft(r.astype(np.float64)),
            np.fft.fft(z.astype(np.complex128))]
    assert len(_for_ampere(f, r, z, a, b).artifact.vmfb) > 1000
    for got in _legalized_runs(f, r, z, a, b):
        for g, w in zip(got, want):
            assert np.abs(np.asarray(g) - w).max() <= 4e-6 * np.abs(w).max()


@pytest.mark.default_precision
@pytest.mark.skipif("cuda" not in GPUS, reason="no GPU found by IREE's cuda driver")
def test_cuda_default_float32_products_stay_within_bf16_3x_bound():
    # CUDA's default float32 product is bf16_3x (the suite's other tests run at HIGHEST there: conftest). On an H200:
    # 720 shape cases from 1x1x1 to 2x33x64x64, random and zero data, none off by more than 1e-4 of sum|a||b|.
    rng = np.random.default_rng(0)
    shapes = [(1, 5, 3), (3, 4, 5), (16, 64, 16), (33, 2, 64), (128, 256, 96)]
    args = [rng.standard_normal(s).astype(np.float32) for m, k, n in shapes for s in ((2, m, k), (2, k, n))]
    outs = stagec.jit(lambda *xs: [xs[i] @ xs[i + 1] for i in range(0, len(xs), 2)], backend="cuda")(*args)
    for (a, b), o in zip(zip(args[::2], args[1::2]), outs):
        scale = np.abs(a).astype(np.float64) @ np.abs(b)
        err = np.abs(np.asarray(o) - a.astype(np.float64) @ b) / scale
        assert not np.isnan(np.asarray(o)).any() and err.max() < 3e-5, (a.shape, b.shape, err.max())


def test_vulkan_on_an_nvidia_gpu_says_once_what_it_got_wrong(monkeypatch):
    # The H200's Vulkan gave wrong float32 trig, tanh, erfc, power edges and integer remainder signs (docs/gpu.md):
    # not silent. Here the device is lavapipe under an NVIDIA name.
    if not backend.device_names("vulkan"):
        pytest.skip("no Vulkan device")
    monkeypatch.setattr(backend, "device_names", lambda driver: ["NVIDIA H200"])
    fresh = backend.Backend("vulkan")
    with pytest.warns(RuntimeWarning, match=r"NVIDIA GPU gave wrong answers.*sin, cos and tan.*backend='cuda'"):
        fresh.hal("vulkan")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fresh.hal("vulkan")  # (once: the device is made once)


_EXIT_SCRIPT = """if 1:
    import atexit, sys
    import numpy as np
    def after():  # registered first: runs after stagec's exit handlers (last in, first out)
        from stagec import backend
        b = backend.get_backend(sys.argv[1])
        print("after", sorted(b._hal), kept.is_deleted(), flush=True)
    atexit.register(after)
    import warnings
    import stagec, stagec.numpy as snp
    from stagec import backend
    if sys.argv[2] == "nvidia":  # (lavapipe under an NVIDIA name: the device is let go of at exit)
        backend.device_names = lambda driver: ["NVIDIA H200"]
        warnings.simplefilter("ignore", RuntimeWarning)
    stagec.config.update("default_backend", sys.argv[1])
    kept = snp.ones(4) + 1
    print(np.asarray(stagec.jit(lambda v: v * 2)(kept)), flush=True)
    sys.exit(3)
"""


@pytest.mark.compile  # (it compiles in a subprocess: not in --fast)
def test_a_vulkan_process_lets_go_of_its_device_at_exit():
    """NVIDIA's Vulkan driver segfaulted every process that still held its device at exit (exit 139 after the last
    line, `backend.NVIDIA_VULKAN_EXIT`): there, at exit, a process drops its arrays' buffers, modules and handles,
    keeping its exit status. Other devices' runtime roots stay pinned (their teardown order crashed once)."""
    if not backend.device_names("vulkan"):
        pytest.skip("no Vulkan device")
    run = lambda b, name="": subprocess.run([sys.executable, "-c", _EXIT_SCRIPT, b, name or "-"],  # noqa: E731
                                            capture_output=True, text=True, timeout=300,
                                            env=dict(os.environ, STAGEC_BACKEND=b))
    r = run("vulkan", "nvidia")
    assert r.returncode == 3 and r.stdout.splitlines() == ["[4. 4. 4. 4.]", "after [] True"], r
    nvidia = any("NVIDIA" in n for n in backend.device_names("vulkan"))  # (a real one lets go, as the fake above)
    for b in ("vulkan", "cpu"):
        r = run(b)
        assert r.returncode == 3 and r.stdout.splitlines()[0] == "[4. 4. 4. 4.]", r
        if b == "vulkan" and nvidia:
            assert r.stdout.splitlines()[1] == "after [] True", r
        else:
            assert r.stdout.splitlines()[1].endswith("] False") and r.stdout.splitlines()[1] != "after [] False", r
