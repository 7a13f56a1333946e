"""The workloads of benchmarks/bench_cpu.py stay right (against NumPy) under the code paths chosen for speed:
the CPU target's IREE flags (O3: fused normalizations, reassociated reductions), the `fuse` pass's gating,
the worker count and the call path. Small shapes; no timing."""
from __future__ import annotations

import os
import pathlib
import sys

import ml_dtypes
import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec.backend import get_backend

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
from _workloads import layernorm, selu, softmax  # noqa: E402 (the benchmarks' own workloads, checked here)

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 40)).astype(np.float32)
V = RNG.standard_normal(4096).astype(np.float32)


WORKLOADS = {
    "softmax": (softmax, (X,)),
    "layernorm": (layernorm, (X,)),
    "selu": (selu, (V,)),
    "sum(x**2+sin x)": (lambda np_, x: np_.sum(x ** 2 + np_.sin(x)), (V,)),
    "faq": (lambda np_, x: x.T @ (x - x.mean(0)), (X,)),
    "mlp": (lambda np_, x, w1, w2: np_.tanh(np_.maximum(x @ w1, 0) @ w2),
            (X, RNG.standard_normal((40, 24)).astype(np.float32) / 6, RNG.standard_normal((24, 16)).astype(np.float32) / 5)),
}


@pytest.mark.parametrize("passes", [None, "none"])
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_matches_numpy(name, passes):
    fn, args = WORKLOADS[name]
    got = np.asarray(stagec.jit(lambda *a: fn(snp, *a), passes=passes)(*args))
    want = fn(np, *[a.astype(np.float64) for a in args])
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_o3_keeps_nan_and_inf_semantics():
    # O3 reassociates and fuses reductions; max/min must still propagate NaN (no fast min/max).
    x = np.array([[1, np.nan, 3, -2], [0, -1, 5, 2], [np.inf, -np.inf, 1, 0]], np.float32)
    f = stagec.jit(lambda v: (snp.max(v, 1), snp.min(v, 1), snp.maximum(v, 0.5), snp.sum(v, 1), softmax(snp, v)))
    with np.errstate(invalid="ignore"):
        want = (np.max(x, 1), np.min(x, 1), np.maximum(x, 0.5), np.sum(x, 1), softmax(np, x))
    for g, w in zip(f(x), want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, equal_nan=True)


def test_cpu_flags_name_the_optimization_level():
    assert "--iree-opt-level=O3" in get_backend("cpu").compile_flags()


@pytest.mark.cpu_only  # (local-task's worker count)
@pytest.mark.compile  # (it compiles in a subprocess: not in --fast)
def test_fewer_cpu_workers_same_results():
    # STAGEC_CPU_THREADS sets the local-task worker count (read when the driver starts: a fresh process); with
    # one, a problem large enough for local-task runs on local-sync (the calling thread: one worker is no faster,
    # and hands each dispatch over) and gives the same result.
    import os
    import subprocess
    import sys
    code = ("import numpy as np, stagec, stagec.numpy as snp\n"
            "x = np.linspace(-3, 3, 1 << 19, dtype=np.float32)\n"
            "f = stagec.jit(lambda v: snp.sum(v * v + snp.sin(v)))\n"
            "r = float(f(x)); assert f._cache[next(iter(f._cache))].exe.driver == 'local-sync'\n"
            "print(r, float(np.sum(x.astype(np.float64) ** 2 + np.sin(x.astype(np.float64)))))\n")
    env = {**os.environ, "STAGEC_CPU_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got, want = map(float, out.stdout.split())
    assert abs(got - want) <= 1e-4 * abs(want)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_matmul_and_mlp(dtype):
    # bf16 matmuls compile without data tiling on a CPU without bf16 instructions (backend.host_has_bf16)
    import ml_dtypes
    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    fn, args = WORKLOADS["mlp"]
    args = [a.astype(dt) for a in args]
    got = np.asarray(stagec.jit(lambda *a: fn(snp, *a))(*args)).astype(np.float32)
    want = fn(np, *[a.astype(np.float32) for a in args])
    np.testing.assert_allclose(got, want, rtol=3e-2, atol=3e-2)
    a, b = args[0], args[1]
    np.testing.assert_allclose(np.asarray(stagec.jit(lambda x, y: x @ y)(a, b)).astype(np.float32),
                               a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2, atol=2e-2)


def _mlp_loss(np_, params, x, y):
    (w1, b1), (w2, b2) = params
    return np_.mean((np_.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)


def test_per_example_grads_with_isolated_outer_products():
    # vmap(grad) of a dense layer: each example's weight gradient is an outer product fed by a matmul;
    # `isolate-outer` puts a barrier between them (4x64x256 = 65,536 elements: at its threshold), not on the
    # smaller 4x32x64 one. Results against the gradients written out by hand in NumPy.
    from stagec.passes import outer
    r = np.random.default_rng(1)
    params = [(r.standard_normal((32, 64)).astype(np.float32) / 6, r.standard_normal(64).astype(np.float32) / 4),
              (r.standard_normal((64, 256)).astype(np.float32) / 8, r.standard_normal(256).astype(np.float32) / 4)]
    x, y = r.standard_normal((4, 32)).astype(np.float32), r.standard_normal((4, 256)).astype(np.float32)
    f = stagec.jit(stagec.vmap(stagec.grad(lambda p, a, b: _mlp_loss(snp, p, a, b)), in_axes=(None, 0, 0)))
    text = f.lower(params, x, y).as_text("isolate-outer")
    assert text.count("stablehlo.optimization_barrier") == 2  # both operands of the 4x64x256 product
    assert 4 * 64 * 256 >= outer.MIN_ELEMENTS > 4 * 32 * 64
    (g1, gb1), (g2, gb2) = [[np.asarray(a) for a in layer] for layer in f(params, x, y)]
    p64 = [[a.astype(np.float64) for a in layer] for layer in params]
    for i in range(4):
        xi, yi = x[i].astype(np.float64), y[i].astype(np.float64)
        h = np.tanh(xi @ p64[0][0] + p64[0][1])
        dp = 2 * (h @ p64[1][0] + p64[1][1] - yi) / yi.size
        dz = (p64[1][0] @ dp) * (1 - h ** 2)
        for got, want in ((g2[i], np.outer(h, dp)), (gb2[i], dp), (g1[i], np.outer(xi, dz)), (gb1[i], dz)):
            np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-6)


def test_outer_product_of_arguments_keeps_its_fusion():
    # an outer product whose operands no matmul computes gets no barrier (nothing to split it from)
    a, b = RNG.standard_normal((8, 128, 1)).astype(np.float32), RNG.standard_normal((8, 1, 128)).astype(np.float32)
    f = stagec.jit(lambda u, v: snp.matmul(snp.sin(u), v))
    assert "optimization_barrier" not in f.lower(a, b).as_text("isolate-outer")
    np.testing.assert_allclose(np.asarray(f(a, b)), np.sin(a.astype(np.float64)) @ b, rtol=2e-5, atol=1e-6)


def test_broadcast_outer_product_of_a_matmul_gets_a_barrier():
    # `h[:, :, None] * g[:, None, :]` with h from a matmul: one barrier, on h (g is an argument)
    x, w = RNG.standard_normal((4, 24)).astype(np.float32), RNG.standard_normal((24, 128)).astype(np.float32) / 5
    g = RNG.standard_normal((4, 128)).astype(np.float32)
    f = stagec.jit(lambda a, b, c: snp.tanh(a @ b)[:, :, None] * c[:, None, :])
    assert f.lower(x, w, g).as_text("isolate-outer").count("stablehlo.optimization_barrier") == 1
    want = np.tanh(x.astype(np.float64) @ w)[:, :, None] * g[:, None, :]
    np.testing.assert_allclose(np.asarray(f(x, w, g)), want, rtol=2e-5, atol=1e-6)


def test_contraction_work_picks_the_cpu_driver():
    # A matmul computes far more than it touches: 512^2 @ 512^2 touches 786,432 elements (below TASK_WORK) but its
    # 134M multiply-adds put it on every core; 256^2 (16.8M, work 2.2M: the caller's wait on local-task cost more
    # than a second worker saved, docs/runtime.md) and 64^2 stay inline.
    from stagec.compiler.driver import text_facts
    assert text_facts(
        "func.func @main(%a: tensor<4x8x16xf32>, %b: tensor<4x16x5xf32>, %c: tensor<?x16xf32>, %d: tensor<16x5xf32>)"
        " -> (tensor<4x8x5xf32>, tensor<?x5xf32>) {\n"
        "%0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : "
        "(tensor<4x8x16xf32>, tensor<4x16x5xf32>) -> tensor<4x8x5xf32>\n"
        "%1 = stablehlo.dot_general %c, %d, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : "
        "(tensor<?x16xf32>, tensor<16x5xf32>) -> tensor<?x5xf32>\n"
        "return %0, %1 : tensor<4x8x5xf32>, tensor<?x5xf32>\n}").macs == 4 * 8 * 5 * 16 + 16 * 5
    drivers = {}
    for blas in (False, True):  # (the offload leaves square products to IREE: the same either way)
        stagec.config.update("cpu_blas", blas)
        try:
            for n in (64, 256, 512):
                a = np.arange(n * n, dtype=np.float32).reshape(n, n) / (n * n)
                f = stagec.jit(lambda a, b: a @ b)
                np.testing.assert_allclose(np.asarray(f(a, a.T)), a.astype(np.float64) @ a.T, rtol=2e-5)
                drivers[n, blas] = f._cache[next(iter(f._cache))].exe.driver
        finally:
            stagec.config.update("cpu_blas", True)
    if stagec.default_backend() == "cpu":
        from stagec.backend import _cores
        task = "local-task" if (stagec.config.cpu_threads or _cores()) > 1 else "local-sync"
        assert drivers == {(n, blas): "local-sync" for n in (64, 256) for blas in (False, True)} | {
            (512, False): task, (512, True): task}  # (a square product calls no BLAS: docs/blas.md)


def test_only_products_worth_packing_get_data_tiling():
    # Packing copies both operands into tiles on every call: small products, and products of a few rows by a large
    # weight, ran faster unpacked (docs/passes.md, "Which matmuls are packed"). A module is packed where a product has
    # `PACK_MACS` multiply-adds, unless its products pack operands of `PACK_BIG` elements for less than `PACK_COST`
    # multiply-adds an element, or where an extent is under `PACK_EXTENT` (12): a batch of 8's weight gradient, 4096x8 @
    # 8x4096, and 8 rows by 1024x1024 are not; 16 rows are.
    from stagec.compiler import driver
    from stagec.compiler.targets import DATA_TILING, TARGETS
    cases = {((64, 64), (64, 64)): False, ((128, 128), (128, 128)): True, ((8, 4096), (4096, 4096)): False,
             ((1, 4096), (4096, 4096)): False, ((128, 4096), (4096, 4096)): False, ((16, 1024), (1024, 1024)): True,
             ((1024, 4096), (4096, 4096)): True, ((1024, 1024), (1024, 1024)): True, ((4096, 8), (8, 4096)): False, ((8, 1024), (1024, 1024)): False,
             ((8, 256, 64), (8, 64, 256)): True, ((1000, 8), (8, 16)): False}
    stagec.config.update("cpu_blas", False)  # (what IREE compiles: an offloaded product is a call)
    try:
        for (sa, sb), packs in cases.items():
            text = stagec.jit(lambda a, b: a @ b).lower(np.ones(sa, np.float32), np.ones(sb, np.float32)).as_text("final")
            fx = driver.text_facts(text)
            assert fx.packs == packs and (DATA_TILING in driver.module_flags(
                "cpu", list(TARGETS["cpu"].flags), fx, text)) == packs, (sa, sb)
    finally:
        stagec.config.update("cpu_blas", True)
    a = np.random.default_rng(4).standard_normal((128, 128)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(stagec.jit(lambda a, b: a @ b)(a, a.T)), a.astype(np.float64) @ a.T,
                               rtol=2e-5, atol=1e-4)


ROWS = {"softmax": softmax, "layernorm": layernorm,
        "softmax down columns": lambda np_, x: softmax(np_, x.T),
        "layernorm down columns": lambda np_, x: layernorm(np_, x.T)}


@pytest.mark.cpu_only  # (the CPU pipeline's tuning specs and passes)
def test_tuning_spec_goes_to_modules_that_read_rows_only():
    # The spec's one-row tiles made a softmax down columns 8x slower: only modules whose reductions all run
    # along the last axis, reading nothing transposed, get it.
    from stagec.tuning import reads_rows_only
    x = np.zeros((8, 40), np.float32)
    got = {k: reads_rows_only(stagec.jit(lambda v, f=f: f(snp, v)).lower(x).as_text("final")) for k, f in ROWS.items()}
    assert got == {"softmax": True, "layernorm": True, "softmax down columns": False, "layernorm down columns": False}
    assert not reads_rows_only(stagec.jit(lambda v: snp.sum(v, 1)).lower(x).as_text("final"))  # one reduction
    # float16 and bfloat16 softmax compute in float32 (`widen-half`), narrow at their edges: they get the spec; without
    # the pass, not (float16 computed in float16 was slower with it: softmax 4096x1024 17 ms against 12)
    for half in (np.float16, snp.bfloat16):
        assert reads_rows_only(stagec.jit(lambda v: softmax(snp, v)).lower(x.astype(half)).as_text("final"))
        assert not reads_rows_only(stagec.jit(lambda v: softmax(snp, v), passes=[]).lower(x.astype(half)).as_text("final"))
    assert not reads_rows_only(stagec.jit(lambda v: v - snp.max(v, 1)[:, None] - snp.sum(v, 0)).lower(x).as_text("final"))


@pytest.mark.cpu_only  # (the CPU pipeline's tuning specs and passes)
def test_tuning_rules_read_the_ir_not_its_printed_text():
    # The rules walk the module's ops: the same module printed in MLIR's generic form (no `across dimensions`,
    # no `dims = [...]`, maps as attributes of `"linalg.generic"`) gets the same parts as its pretty text.
    from iree.compiler import ir

    from stagec import tuning
    x, a = np.zeros((8, 40), np.float32), np.zeros((64, 300), np.float32)
    cases = {"rows": (lambda v: softmax(snp, v), (x,)), "columns": (lambda v: snp.sum(v * v, 0), (a,)),
             "siblings": (lambda o, y: (snp.mean((o - y) ** 2), (o - y) * 2, snp.sum((o - y) * 2, 0)), (a, a)),
             "none": (lambda v: snp.tanh(v) * 2 + snp.sum(v, 1)[:, None], (x,))}
    for name, (fn, args) in cases.items():
        text = stagec.jit(fn).lower(*args).as_text("final")
        with ir.Context() as ctx:
            ctx.allow_unregistered_dialects = True
            generic = ir.Module.parse(text).operation.get_asm(print_generic_op_form=True)
        assert "across dimensions" not in generic and "stablehlo.reduce(" not in generic
        want = {"rows": ["rows"], "columns": ["columns"], "siblings": ["columns"], "none": []}[name]
        assert tuning.parts_for(text) == tuning.parts_for(generic) == want, name
        assert tuning.sibling_maps(text) == tuning.sibling_maps(generic) and (
            bool(tuning.sibling_maps(text)) == (name == "siblings")), name


def _dumping(lowered, folder):
    """`lowered` compiled as the jit compiles it, IREE writing its dispatches' configurations (tiles) into `folder`:
    the module whose tiles are read is the one whose values are checked (one compile, not a jit and a second)."""
    return lowered.compile(flags=[f"--iree-hal-dump-executable-configurations-to={folder}"])


@pytest.mark.parametrize("shape", [(5, 33), (16, 100), (8, 1024)])
def test_tuned_row_reductions_match_numpy(shape, tmp_path):
    # Rows of 33 and 100 floats are shorter than the 128-float vectors, 1024 a multiple of them; each module's
    # dispatch configuration shows whether the spec tiled it (rows) or left IREE's tiles (columns).
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32) * 3
    for name, fn in ROWS.items():
        folder = tmp_path / name.replace(" ", "-")
        f = _dumping(stagec.jit(lambda v, fn=fn: fn(snp, v), backend="cpu").lower(x), folder)
        # (a layernorm of few values whose spread is small next to them loses float32 digits in x - mean)
        np.testing.assert_allclose(np.asarray(f(x)), fn(np, x.astype(np.float64)), rtol=2e-5, atol=1e-4)
        configs = "".join(p.read_text() for p in folder.iterdir())
        assert ("vector_reduction = [0, 128]" in configs) == ("columns" not in name), name


def test_tuning_spec_file_is_in_the_cache_key(tmp_path):
    # (a failure with the spec compiles without it: tests/test_retries.py::test_the_tuning_spec_retry_drops_the_spec)
    from stagec import cache
    spec = tmp_path / "spec.mlir"
    keys = []
    for text in ("module {}", "module {} "):
        spec.write_text(text)
        keys.append(cache.make_key(cache.key_components("m", "llvm-cpu", ["--iree-codegen-tuning-spec-path=" + str(spec)])))
    assert keys[0] != keys[1]


F64_MATMULS = {  # name -> (function of (np, a, b), shape of a, shape of b)
    "a @ b": (lambda np_, a, b: a @ b, (128, 96), (96, 64)),
    "odd sizes": (lambda np_, a, b: a @ b, (67, 101), (101, 35)),
    "a.T @ b": (lambda np_, a, b: a.T @ (b - b.mean(0)), (96, 72), (96, 40)),
    "tanh(relu(a @ b) @ b.T)": (lambda np_, a, b: np_.tanh(np_.maximum(a @ b, 0) @ b.T), (64, 96), (96, 80)),
    "small": (lambda np_, a, b: a @ b, (8, 64), (64, 16)),
    # (IREE's own tiles did not compile these on AVX-512: "operations with large vector sizes"; found 2026-11-29)
    "32x16x32": (lambda np_, a, b: a @ b, (32, 16), (16, 32)),
    "exp(a.T @ b) 9x63x33": (lambda np_, a, b: np_.exp(a.T @ b), (63, 9), (63, 33)),
}


@pytest.mark.parametrize("name", sorted(F64_MATMULS))
def test_float64_matmuls_take_the_tuned_tiles_and_match_numpy(name, x64, tmp_path):
    # IREE packs no float64 matmul on x86; the f64_matmul part of the tuning spec tiles them for the cache and
    # registers (cache_reduction). Remainders (67x101x35) are peeled; fused consumers take 8x16 blocks too.
    from stagec.tuning import parts_for
    fn, sa, sb = F64_MATMULS[name]
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    low = stagec.jit(lambda u, v: fn(snp, u, v), backend="cpu").lower(a, b)
    assert "f64_matmul" in parts_for(low.as_text("final"))
    assert "f64_matmul" not in parts_for(stagec.jit(lambda u, v: fn(snp, u, v)).lower(a.astype(np.float32), b.astype(np.float32)).as_text("final"))
    np.testing.assert_allclose(np.asarray(_dumping(low, tmp_path)(a, b)), fn(np, a, b), rtol=1e-12, atol=1e-12)
    configs = "".join(p.read_text() for p in tmp_path.iterdir())
    assert "cache_reduction = [0, 0, 128]" in configs, name  # (every size: IREE's own did not always compile)


def test_tuning_spec_joins_the_parts_a_module_needs():
    from stagec import tuning
    text = tuning.spec_text(("rows", "f64_matmul"))
    assert "module @rows" in text and "module @f64_matmul" in text
    assert text.index("@rows::@entry") < text.index("@f64_matmul::@entry")
    path = tuning.spec_path(("rows", "f64_matmul"))
    assert open(path).read() == text and path == tuning.spec_path(("rows", "f64_matmul"))
    assert tuning.spec_path(("rows",)) != path


def test_spec_folders_of_ended_processes_are_removed(tmp_path, monkeypatch):
    """A process killed before its `atexit` left its spec folder in the temporary folder (one a suite run); the
    next process's first spec removes the folders of ended processes, never a live one's."""
    import subprocess

    from stagec import tuning
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    names = [f"stagec-tuning-{ended.stdout.strip()}-abc", f"stagec-tuning-{os.getppid()}-abc", "stagec-tuning-xyz",
             f"stagec-failed-{ended.stdout.strip()}-abc"]  # (a failed module's folder is the user's to read)
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "spec.mlir").write_text("")
    monkeypatch.setattr(tuning.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(tuning, "_folder", {})
    path = tuning.spec_path(("rows",))
    assert sorted(os.listdir(tmp_path)) == sorted([*names[1:], os.path.basename(os.path.dirname(path))])
    assert os.path.basename(os.path.dirname(path)).startswith(f"stagec-tuning-{os.getpid()}-")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_forked_process_writes_its_specs_in_a_folder_of_its_own(tmp_path, monkeypatch):
    """A forked child's specs go to its own folder: its parent's goes when the parent ends (its `atexit`)."""
    from stagec import tuning
    monkeypatch.setattr(tuning.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(tuning, "_folder", {})
    parent = os.path.dirname(tuning.spec_path(("rows",)))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # (the child: no pytest, no atexit)
        try:
            os.write(w, tuning.spec_path(("rows",)).encode())
        finally:
            os._exit(0)
    os.close(w)
    child = os.path.dirname(os.read(r, 4096).decode())
    os.close(r)
    os.waitpid(pid, 0)
    assert os.path.basename(child).startswith(f"stagec-tuning-{pid}-") and child != parent


@pytest.mark.cpu_only  # (the CPU pipeline's tuning specs and passes)
def test_compiles_with_a_tuning_spec_run_single_threaded(monkeypatch, pooled_compiles):
    # IREE 3.13 can deadlock loading a tuning spec on its thread pool (a waiting thread re-enters the lock):
    # a module compiled with a spec gets --mlir-disable-threading, one without keeps IREE's threads.
    import iree.compiler as ic
    from stagec.compiler.driver import NO_THREADS
    seen = []
    monkeypatch.setattr(ic, "compile_str", lambda mlir, **kw: seen.append(kw["extra_args"]) or b"")
    backend = get_backend("cpu")
    x = np.ones((8, 40), np.float32)
    backend.compile(stagec.jit(lambda v: softmax(snp, v)).lower(x).as_text("final"), "softmax")
    backend.compile(stagec.jit(lambda v: v + 1).lower(x).as_text("final"), "add")
    assert [NO_THREADS in args for args in seen] == [True, False]
    assert any(a.startswith("--iree-codegen-tuning-spec-path=") for a in seen[0])


SKINNY = {  # name -> (function of (np, x, w1, w2), rows of x, w1's shape): products not worth packing
    "tanh(x @ w1) @ w2, 32 rows": (lambda np_, x, w1, w2: np_.tanh(x @ w1) @ w2, 32, (4096, 4096)),
    "x @ w1, 13 rows, 1100 columns": (lambda np_, x, w1, w2: x @ w1, 13, (4096, 1100)),
}


@pytest.mark.parametrize("name", sorted(SKINNY))
def test_skinny_float32_matmuls_take_the_tuned_tiles_and_match_numpy(name, tmp_path):
    # A float32 A @ B of few rows by a 4M+-element weight is compiled unpacked (packing.PACK_BIG); the skinny part of
    # the tuning spec tiles it (6x64 blocks, 128-long reduction panels; remainders of 13 rows and 1100 columns
    # peeled), a fused tanh takes the same blocks. Values against float64 NumPy.
    from stagec.compiler import driver
    fn, m, (k, n) = SKINNY[name]
    rng = np.random.default_rng(3)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w1 = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    w2 = (rng.standard_normal((n, 10)) / np.sqrt(n)).astype(np.float32)
    low = stagec.jit(lambda *a: fn(snp, *a), backend="cpu").lower(x, w1, w2)
    text = low.as_text("final")
    fx = driver.text_facts(text)
    assert not fx.packs and fx.look.skinny
    got = np.asarray(_dumping(low, tmp_path)(x, w1, w2))
    np.testing.assert_allclose(got, fn(np, *(a.astype(np.float64) for a in (x, w1, w2))), rtol=2e-4, atol=2e-4)
    configs = "".join(p.read_text() for p in tmp_path.iterdir())
    assert "cache_reduction = [0, 0, 128], distribution = [256, 512, 0], vector_common_parallel = [6, 64, 0]" in configs


@pytest.mark.cpu_only  # (the CPU pipeline's tuning specs and passes)
def test_skinny_tiles_only_unpacked_float32_a_at_b(tmp_path):
    # A module that packs its matmuls (256x1024 @ 1024x1024: worth packing) gets no skinny part (IREE's packed
    # matmul did not compile with its tiles); nor do 257+ rows or fewer than 1024 columns; A @ B.T of 8 rows is
    # B @ A.T (`weight-left`: 4096 rows, 8 columns) and keeps IREE's tiles (B.T read with the part's was 2.5x slower).
    from stagec import tuning
    from stagec.compiler import driver
    from stagec.compiler.targets import TARGETS

    def parts(fn, *shapes, dtype=np.float32):
        text = stagec.jit(fn).lower(*(np.ones(s, dtype) for s in shapes)).as_text("final")
        fx = driver.text_facts(text)
        flags = driver.module_flags("cpu", list(TARGETS["cpu"].flags), fx, text)
        return [f for f in flags if f.startswith(tuning.FLAG) and "skinny" in f], text
    assert parts(lambda a, b: a @ b, (64, 4096), (4096, 4096))[0]
    got, text = parts(lambda a, b: a @ b, (256, 1024), (1024, 1024))
    assert not got and driver.text_facts(text).packs
    assert not tuning.parts_for(text)  # (a Look says packed unless the driver says otherwise)
    assert not parts(lambda a, b: a @ b, (257, 4096), (4096, 4096))[0]
    assert not parts(lambda a, b: a @ b, (64, 4096), (4096, 1000))[0]
    packed = stagec.jit(lambda a, b: a @ b, backend="cpu").lower(np.ones((256, 1024), np.float32),
                                                                  np.ones((1024, 1024), np.float32))
    assert float(np.asarray(_dumping(packed, tmp_path)(np.ones((256, 1024), np.float32),
                                                     np.ones((1024, 1024), np.float32)))[3, 5]) == 1024.0
    assert "vector_common_parallel = [6, 64, 0]" not in "".join(p.read_text() for p in tmp_path.iterdir())
    x, w = np.random.default_rng(4).standard_normal((8, 4096)), np.random.default_rng(5).standard_normal((4096, 4096))
    bt = stagec.jit(lambda a, b: a @ b.T, backend="cpu").lower(x.astype(np.float32), w.astype(np.float32))
    assert not parts(lambda a, b: a @ b.T, (8, 4096), (4096, 4096))[0]
    folder = tmp_path / "bt"
    got = np.asarray(_dumping(bt, folder)(x.astype(np.float32), w.astype(np.float32)))
    np.testing.assert_allclose(got, x.astype(np.float32).astype(np.float64) @ w.astype(np.float32).astype(np.float64).T,
                               rtol=2e-4, atol=2e-3)
    assert "vector_common_parallel = [6, 64, 0]" not in "".join(p.read_text() for p in folder.iterdir())


MATVEC = {  # name -> (function of (np, x, w, b), x's shape, w's shape, columns a workgroup): x @ W of one row
    "tanh(x @ w + b), 1x2048x2048": (lambda np_, x, w, b: np_.tanh(x @ w + b), (1, 2048), (2048, 2048), 512),
    "x @ w, x rank 1, 1000x1100": (lambda np_, x, w, b: x @ w, (1000,), (1000, 1100), 512),
    "x @ w + b, 1x300x4096": (lambda np_, x, w, b: x @ w + b, (1, 300), (300, 4096), 2048),
}


@pytest.mark.parametrize("name", sorted(MATVEC))
def test_matvec_takes_the_tuned_tiles_and_matches_numpy(name, tmp_path):
    # With the BLAS offload off, a float32 x @ W of one row is IREE's (unpacked: no product worth packing); the
    # matvec part tiles it (512-column workgroups, 2048 from 4096 columns, 8-row panels of W streamed; 1100
    # columns: a remainder), a fused bias and tanh included. Values against float64 NumPy.
    from stagec.compiler import driver
    fn, xs, ws, cols = MATVEC[name]
    rng = np.random.default_rng(6)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) / np.sqrt(ws[0])).astype(np.float32)
    b = rng.standard_normal(ws[1]).astype(np.float32)
    stagec.config.update("cpu_blas", False)
    try:
        low = stagec.jit(lambda *a: fn(snp, *a), backend="cpu").lower(x, w, b)
        fx = driver.text_facts(low.as_text("final"))
        assert not fx.packs and fx.look.matvec
        got = np.asarray(_dumping(low, tmp_path)(x, w, b))
    finally:
        stagec.config.update("cpu_blas", True)
    np.testing.assert_allclose(got, fn(np, *(a.astype(np.float64) for a in (x, w, b))), rtol=2e-5, atol=2e-5)
    configs = "".join(p.read_text() for p in tmp_path.iterdir())
    assert f"cache_reduction = [0, 8], distribution = [{cols}, 0], vector_common_parallel = [64, 0]" in configs


def test_matvec_part_only_unpacked_float32_rows_of_256_columns(x64):
    # A module that packs (beside its x @ W, a 256x1024 @ 1024x1024 worth packing) gets no matvec part; nor do
    # 255 columns, two rows or float64.
    from stagec import tuning
    from stagec.compiler import driver
    from stagec.compiler.targets import TARGETS

    def parts(fn, *shapes, dtype=np.float32):
        text = stagec.jit(fn).lower(*(np.ones(s, dtype) for s in shapes)).as_text("final")
        fx = driver.text_facts(text)
        flags = driver.module_flags("cpu", list(TARGETS["cpu"].flags), fx, text)
        return [f for f in flags if f.startswith(tuning.FLAG) and "matvec" in f]
    stagec.config.update("cpu_blas", False)
    try:
        assert parts(lambda x, w: x @ w, (1, 512), (512, 256))
        assert not parts(lambda x, w, a, b: (x @ w, a @ b), (1, 1024), (1024, 1024), (256, 1024), (1024, 1024))
        assert not parts(lambda x, w: x @ w, (1, 512), (512, 255))
        assert not parts(lambda x, w: x @ w, (2, 512), (512, 256))
        assert not parts(lambda x, w: x @ w, (1, 512), (512, 256), dtype=np.float64)
    finally:
        stagec.config.update("cpu_blas", True)


def _weight_left(fn, *args) -> int:
    """How many products `weight-left` rewrote in the module of `fn` at `args`."""
    return sum(s.rewrites["weight-left"] for s in stagec.jit(fn).lower(*args).pass_stats)


@pytest.mark.cpu_only  # (the CPU pipeline's tuning specs and passes)
def test_a_at_b_t_of_few_rows_multiplies_the_weight_from_the_left(tmp_path):
    # weight-left: a float32 A @ B.T of 8-256 rows by a B of 2^22+ elements (a dense layer's backward dz @ W.T, and
    # a @ b.T as written) is computed as (B @ A.T).T, both transposes behind barriers: IREE's dispatch is a plain
    # 2048x32x2048 matmul with B on the left. Values against float64 NumPy, the gradient's product too.
    rng = np.random.default_rng(7)
    a = rng.standard_normal((32, 2048)).astype(np.float32)
    w = (rng.standard_normal((2048, 2048)) / 45).astype(np.float32)
    fn = lambda a, w: snp.tanh(a @ w.T)  # noqa: E731
    assert _weight_left(fn, a, w) == 1
    got = np.asarray(_dumping(stagec.jit(fn, backend="cpu").lower(a, w), tmp_path)(a, w))
    np.testing.assert_allclose(got, np.tanh(a.astype(np.float64) @ w.astype(np.float64).T), rtol=2e-5, atol=2e-5)
    configs = "".join(p.read_text() for p in tmp_path.iterdir())
    assert "matmul_like_2048x32x2048_f32" in configs and "matmul_like_32x2048x2048" not in configs
    g = stagec.grad(lambda x, w: snp.sum(snp.sin(x @ w)))  # (its backward's cos(.) @ w.T contracts both last axes)
    assert _weight_left(g, a, w) == 1
    want = np.cos(a.astype(np.float64) @ w.astype(np.float64)) @ w.astype(np.float64).T
    np.testing.assert_allclose(np.asarray(stagec.jit(g)(a, w)), want, rtol=1e-4, atol=1e-4)


@pytest.mark.cpu_only  # (the CPU pipeline's tuning specs and passes)
def test_weight_left_only_few_rows_by_a_large_float32_b(x64):
    # 8 and 256 rows by 2048x2048 are rewritten; 4 rows (as fast either way), 257+ rows (packed modules), a B under
    # 2^22 elements, 1 row (a matrix-vector product, read in order already) and float64 keep IREE's A @ B.T.
    def rewrites(a_shape, b_shape, dtype=np.float32):
        return _weight_left(lambda a, b: a @ b.T, np.ones(a_shape, dtype), np.ones(b_shape, dtype))
    assert rewrites((8, 2048), (2048, 2048)) == rewrites((256, 2048), (2048, 2048)) == 1
    assert rewrites((4, 2048), (2048, 2048)) == rewrites((257, 2048), (2048, 2048)) == 0
    assert rewrites((32, 1024), (2048, 1024)) == rewrites((1, 2048), (2048, 2048)) == 0
    assert rewrites((32, 2048), (2048, 2048), np.float64) == 0


def _weight_reads(fn, *args) -> int:
    """How many `dz @ W.T` products `one-weight-pass` folded into their weight's update in the module of `fn`."""
    return sum(s.rewrites["weight-read-once"] for s in stagec.jit(fn).lower(*args).pass_stats)


@pytest.mark.cpu_only  # (the CPU pipeline's passes)
def test_a_batch_of_one_reads_each_weight_once_for_its_backward_product_and_update():
    # one-weight-pass: a 1-row dz @ W.T and W's update (W - lr * outer(h, dz)) become one generic reading W once;
    # an SGD step of a 256-512-512-10 tanh network at batch 1 and an Adam-like update of three results (the
    # weight, two moments), against float64 NumPy; the step calls no BLAS now
    rng = np.random.default_rng(3)
    ws = [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32) for a, b in ((256, 512), (512, 512), (512, 10))]
    x, y = rng.standard_normal((1, 256)).astype(np.float32), np.eye(10, dtype=np.float32)[[3]]

    def loss(ws, x, y, m=snp):
        h = m.tanh(x @ ws[0])
        h = m.tanh(h @ ws[1])
        return m.sum((h @ ws[2] - y) ** 2)

    def sgd(ws, x, y):
        return [w - 0.01 * g for w, g in zip(ws, stagec.grad(loss)(ws, x, y))]
    assert _weight_reads(sgd, ws, x, y) == 1  # (the second layer's: the first's dz @ W.T is not computed)
    assert "stagec_blas" not in stagec.jit(sgd).lower(ws, x, y).as_text("final")
    w64, x64_, y64 = [w.astype(np.float64) for w in ws], x.astype(np.float64), y.astype(np.float64)
    h1 = np.tanh(x64_ @ w64[0])
    h2 = np.tanh(h1 @ w64[1])
    d3 = 2 * (h2 @ w64[2] - y64)
    d2 = (d3 @ w64[2].T) * (1 - h2 ** 2)
    d1 = (d2 @ w64[1].T) * (1 - h1 ** 2)
    want = [w - 0.01 * g for w, g in zip(w64, (x64_.T @ d1, h1.T @ d2, h2.T @ d3))]
    for got, w in zip(stagec.jit(sgd)(ws, x, y), want):
        np.testing.assert_allclose(np.asarray(got), w, rtol=1e-5, atol=1e-6)

    def adam_like(ws, mo, x, y):
        g = stagec.grad(loss)(ws, x, y)
        mo2 = [0.9 * a + 0.1 * b for a, b in zip(mo, g)]
        return [w - 0.01 * a / (snp.sqrt(a * a) + 1e-3) for w, a in zip(ws, mo2)], mo2
    mo = [rng.standard_normal(w.shape).astype(np.float32) for w in ws]
    assert _weight_reads(adam_like, ws, mo, x, y) == 1
    (new_w, new_m) = stagec.jit(adam_like)(ws, mo, x, y)
    want_m = [0.9 * a.astype(np.float64) + 0.1 * g for a, g in zip(mo, (x64_.T @ d1, h1.T @ d2, h2.T @ d3))]
    for got, w, a in zip(new_w, w64, want_m):
        np.testing.assert_allclose(np.asarray(got), w - 0.01 * a / (np.abs(a) + 1e-3), rtol=1e-5, atol=1e-5)
    for got, a in zip(new_m, want_m):
        np.testing.assert_allclose(np.asarray(got), a, rtol=1e-5, atol=1e-6)


@pytest.mark.cpu_only
def test_one_weight_pass_only_where_the_weight_is_read_by_both_and_not_otherwise_used():
    # not folded: 2 rows, a weight under 2^16 elements, float64, an update that also feeds a sum (not only the
    # function's results), a product whose update depends on its own result
    def step(w, h, d, m=snp):
        return d @ w.T, w - 0.1 * (h.T @ d)
    f32 = lambda *s: np.ones(s, np.float32)  # noqa: E731
    assert _weight_reads(step, f32(512, 512), f32(1, 512), f32(1, 512)) == 1
    assert _weight_reads(step, f32(512, 512), f32(2, 512), f32(2, 512)) == 0
    assert _weight_reads(step, f32(128, 256), f32(1, 128), f32(1, 256)) == 0
    assert _weight_reads(lambda w, h, d: (d @ w.T, snp.sum(w - 0.1 * (h.T @ d))), f32(512, 512), f32(1, 512),
                         f32(1, 512)) == 0
    assert _weight_reads(lambda w, d: (w - (d @ w.T).T * d), f32(512, 512), f32(1, 512)) == 0
    rng = np.random.default_rng(4)
    w, h, d = (rng.standard_normal(s).astype(np.float32) for s in ((512, 384), (1, 512), (1, 384)))
    got = stagec.jit(step)(w, h, d)
    w64, h64, d64 = (a.astype(np.float64) for a in (w, h, d))
    np.testing.assert_allclose(np.asarray(got[0]), d64 @ w64.T, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(np.asarray(got[1]), w64 - 0.1 * (h64.T @ d64), rtol=1e-6, atol=1e-6)


def _rnn_by_hand(w, u, xs):
    """Float64 NumPy's states of `h = tanh(h @ w + xs[t] @ u)` from zeros, and the gradients of `sum(h_n ** 2)` in
    `w` and `u` by backpropagation written out: the oracle of the loop tests below."""
    w64, u64, x64 = w.astype(np.float64), u.astype(np.float64), xs.astype(np.float64)
    hs = [np.zeros((xs.shape[1], w.shape[0]))]
    for x in x64:
        hs.append(np.tanh(hs[-1] @ w64 + x @ u64))
    dh, dw, du = 2 * hs[-1], np.zeros_like(w64), np.zeros_like(u64)
    for t in range(len(x64), 0, -1):
        da = dh * (1 - hs[t] ** 2)
        dw, du, dh = dw + hs[t - 1].T @ da, du + x64[t - 1].T @ da, da @ w64.T
    return hs, dw, du


@pytest.mark.cpu_only  # (the CPU pipeline's `sliced-dots-apart`)
def test_matmuls_of_a_sequences_slices_share_an_executable(tmp_path):
    """A Python loop over a sequence, `h = tanh(h @ W + xs[t] @ U)`, and its gradient: IREE 3.13 made each matmul
    reading a slice `xs[t]` an executable of its own (the offset a constant of its dispatch): 2 per step, 108 for 50
    steps and most of the compile. `sliced-dots-apart` gives the slices buffers of their own, and the matmuls share
    an executable. Against float64 NumPy (backpropagation by hand)."""
    n = 12
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((16, 16)) * 0.3).astype(np.float32)
    u = (rng.standard_normal((8, 16)) * 0.3).astype(np.float32)
    xs = rng.standard_normal((n, 4, 8)).astype(np.float32)

    def loss(w, u, xs):
        h = snp.zeros((4, 16), np.float32)
        for t in range(n):
            h = snp.tanh(h @ w + xs[t] @ u)
        return snp.sum(h ** 2)
    lowered = stagec.jit(stagec.grad(loss, argnums=(0, 1))).lower(w, u, xs)
    got = lowered.compile(flags=[f"--iree-hal-dump-executable-sources-to={tmp_path}"])(w, u, xs)
    assert len(list(tmp_path.glob("*.mlir"))) <= 12  # (31 before)
    _, dw, du = _rnn_by_hand(w, u, xs)
    np.testing.assert_allclose(np.asarray(got[0]), dw, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(np.asarray(got[1]), du, rtol=2e-5, atol=2e-5)
    # (any element type: bfloat16 slices, which NumPy has no dtype for, made the pass fail)
    bf = np.dtype(ml_dtypes.bfloat16)
    text = stagec.jit(lambda u, xs: xs[0] @ u + xs[1] @ u).lower(u.astype(bf), xs[:2].astype(bf)).as_text("final")
    assert text.count("optimization_barrier") == 2


@pytest.mark.cpu_only  # (the CPU pipeline's `loop-weights-transposed`)
def test_a_loops_product_by_a_transposed_weight_reads_it_transposed_once():
    """The gradient of a scan `h = tanh(h @ w + x @ u)` multiplies by `w.T` every step (`dh @ w.T`): IREE 3.13's
    unpacked `A @ B.T` kernel ran 3x slower than `A @ B`. `loop-weights-transposed` makes `w.T` once before the
    backward loop and the body's product reads it as `A @ C`; a forward `h @ w.T` likewise. Against float64 NumPy
    (backpropagation by hand)."""
    from stagec import lax
    n, rng = 20, np.random.default_rng(5)
    w = (rng.standard_normal((24, 24)) * 0.3).astype(np.float32)
    u = (rng.standard_normal((8, 24)) * 0.3).astype(np.float32)
    xs = rng.standard_normal((n, 4, 8)).astype(np.float32)

    def loss(w, u, xs):
        def step(h, x):
            h = snp.tanh(h @ w + x @ u)
            return h, h
        return snp.sum(lax.scan(step, snp.zeros((4, 24), np.float32), xs)[0] ** 2)
    lowered = stagec.jit(stagec.grad(loss, argnums=(0, 1))).lower(w, u, xs)
    final = lowered.as_text("final")
    body = final[final.index("stablehlo.while"):]
    assert "contracting_dims = [1] x [1]" not in body  # (before: the backward body's dh @ w.T)
    assert final.count("stablehlo.transpose") >= 1 and final.index("stablehlo.transpose") < final.rindex(
        "stablehlo.while")  # (made before the backward loop)
    got = lowered.compile()(w, u, xs)
    _, dw, du = _rnn_by_hand(w, u, xs)
    np.testing.assert_allclose(np.asarray(got[0]), dw, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(np.asarray(got[1]), du, rtol=2e-5, atol=2e-5)

    def forward(w, xs):  # (a weight written transposed, `h @ w.T`, as PyTorch's layers keep it: read the same way)
        return lax.scan(lambda h, x: (snp.tanh(h @ w.T + x @ u), None), snp.zeros((4, 24), np.float32), xs)[0]
    lowered = stagec.jit(forward).lower(w, xs)
    final = lowered.as_text("final")
    assert "stablehlo.transpose" not in final[final.index("stablehlo.while"):]
    h = _rnn_by_hand(w.T, u, xs)[0][-1]
    np.testing.assert_allclose(np.asarray(lowered.compile()(w, xs)), h, rtol=2e-5, atol=2e-5)
