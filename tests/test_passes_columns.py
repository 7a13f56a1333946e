"""`column-products`: the CPU pipeline adds +0.0 between a float32 product and the column sum that reads it (IREE
lowers sum(a * b, 0) as a matrix-vector product, one scalar at a time), and the tuning spec's `columns` part tiles
such sums 64 columns wide; results unchanged, -0.0, NaN and inf included."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import tuning
from stagec.compiler import driver
from stagec.compiler.targets import TARGETS

pytestmark = pytest.mark.cpu_only  # (`column-products` and the `columns` tuning spec are the CPU pipeline's)

PRODUCTS = {  # name -> (function of (np, g, h), whether its sum gets the +0.0)
    "sum(g * h, 0)": (lambda np_, g, h: np_.sum(g * h, 0), True),
    "bias grad sum(g * (1 - h*h), 0)": (lambda np_, g, h: np_.sum(g * (1 - h * h), axis=0), True),
    "mean(g * h, 0)": (lambda np_, g, h: np_.mean(g * h, axis=0), True),
    "rows sum(g * h, 1)": (lambda np_, g, h: np_.sum(g * h, 1), False),
    "all sum(g * h)": (lambda np_, g, h: np_.sum(g * h), False),
    "sum(g + h, 0)": (lambda np_, g, h: np_.sum(g + h, 0), False),
    "max(g * h, 0)": (lambda np_, g, h: np_.max(g * h, 0), False),
}


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_column_products_sum_plus_zero_and_match_numpy(name):
    fn, rewritten = PRODUCTS[name]
    rng = np.random.default_rng(6)
    g, h = (rng.standard_normal((24, 300)).astype(np.float32) for _ in range(2))
    f = stagec.jit(lambda a, b: fn(snp, a, b))
    low = f.lower(g, h)
    stats = next(s for s in low.pass_stats if s.name == "column-products")
    assert stats.rewrites["column-product"] == int(rewritten)
    want = fn(np, g.astype(np.float64), h.astype(np.float64))
    np.testing.assert_allclose(np.asarray(f(g, h)), want, rtol=2e-5, atol=1e-5)


def test_column_products_keep_signed_zeros_nan_and_inf():
    # the sum starts at +0.0, so -0.0 products add nothing either way; NaN and inf reach the sum unchanged
    g = np.array([[-0.0, 1.0, np.inf, 2.0], [0.0, np.nan, 1.0, -np.inf]], np.float32)
    h = np.array([[1.0, 1.0, 1.0, 1.0], [-1.0, 1.0, 1.0, 1.0]], np.float32)
    got = np.asarray(stagec.jit(lambda a, b: snp.sum(a * b, 0))(g, h))
    want = np.sum(g * h, 0)
    np.testing.assert_array_equal(got, want)
    assert not np.signbit(got[0]) and not np.signbit(want[0])


def test_column_products_in_loop_bodies_and_match_numpy():
    """A column sum of products inside a loop (svd's Jacobi step: `sum(a * a[:, partner], 0)`) gets the +0.0 too
    (IREE compiled it as a matvec: half of svd's LLVM code), and the singular values as NumPy's float64 SVD."""
    from stagec import lax
    rng = np.random.default_rng(8)
    g = rng.standard_normal((24, 300)).astype(np.float32)
    f = stagec.jit(lambda a: lax.fori_loop(0, 3, lambda i, x: x * 0.5 + snp.sum(a * x, 0), a[0]))
    stats = next(s for s in f.lower(g).pass_stats if s.name == "column-products")
    assert stats.rewrites["column-product"] == 1
    want = g[0].astype(np.float64)
    for _ in range(3):
        want = want * 0.5 + np.sum(g.astype(np.float64) * want, 0)
    np.testing.assert_allclose(np.asarray(f(g)), want, rtol=2e-5, atol=1e-4)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    stagec.config.update("cpu_blas", False)  # (the sweeps, as every other target: LAPACK's gesdd answers the CPU's)
    try:
        low = stagec.jit(snp.linalg.svd).lower(a)
        assert next(s for s in low.pass_stats if s.name == "column-products").rewrites["column-product"] >= 1
        s = np.asarray(snp.linalg.svd(a, compute_uv=False))
    finally:
        stagec.config.update("cpu_blas", True)
    np.testing.assert_allclose(s, np.linalg.svd(a.astype(np.float64), compute_uv=False), rtol=0, atol=2e-5 * s[0])


def test_column_products_float32_only(x64):
    # (float64 was slower with the +0.0: 540 -> 760 us)
    low = stagec.jit(lambda a: snp.sum(a * a[::-1], 0)).lower(np.ones((8, 300), np.float64))
    stats = next(s for s in low.pass_stats if s.name == "column-products")
    assert not stats.rewrites["column-product"]


def _dumping(lowered, folder):
    """`lowered` compiled as the jit compiles it, IREE writing its dispatches' configurations (tiles) into `folder`:
    the module whose tiles are read is the one whose values are checked (one compile, not a jit and a second)."""
    return lowered.compile(flags=[f"--iree-hal-dump-executable-configurations-to={folder}"])


@pytest.mark.parametrize("shape", [(16, 256), (5, 1000), (33, 300)])
def test_column_sums_take_the_columns_tiles_and_match_numpy(shape, tmp_path):
    # 64 columns per vector step where the dispatch is the column sum alone (1000 and 300 columns leave remainders:
    # loop peeling); a row sum keeps IREE's tiles
    rng = np.random.default_rng(7)
    g, h = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    for name, fn, tuned in (("columns", lambda a, b: snp.sum(a * b, 0), True),
                            ("plain", lambda a, b: snp.sum(a, 0), True),
                            ("rows", lambda a, b: snp.sum(a * b, 1), False)):
        low, folder = stagec.jit(fn, backend="cpu").lower(g, h), tmp_path / name
        assert ("columns" in tuning.parts_for(low.as_text("final"))) == tuned, name
        f = _dumping(low, folder)
        want = np.sum(g.astype(np.float64) * h, 0) if name == "columns" else \
            np.sum(g.astype(np.float64), 0) if name == "plain" else np.sum(g.astype(np.float64) * h, 1)
        np.testing.assert_allclose(np.asarray(f(g, h)), want, rtol=2e-5, atol=1e-4)
        configs = "".join(p.read_text() for p in folder.iterdir())
        assert ("vector_common_parallel = [64, 0]" in configs) == tuned, name


def test_sibling_reductions_take_the_columns_tiles_and_match_numpy(tmp_path):
    # `fuse`'s one generic for a loss beside its gradient's bias sum: the columns part matches its indexing maps
    # (stagec.tuning.sibling_maps) as it matches a lone column sum.
    rng = np.random.default_rng(8)
    o, y = (rng.standard_normal((64, 300)).astype(np.float32) for _ in range(2))  # (split-sums: 16384+ elements)
    b = rng.standard_normal(300).astype(np.float32)

    def f(np_, o, b, y):
        d = o + b - y
        return np_.mean(d * d), d * (2 / d.size), np_.sum(d * (2 / d.size), 0)
    low = stagec.jit(lambda *a: f(snp, *a), backend="cpu").lower(o, b, y)
    mlir = low.as_text("final")
    assert len(tuning.sibling_maps(mlir)) == 1 and "columns" in tuning.parts_for(mlir)
    jf = _dumping(low, tmp_path)
    for got, want in zip(jf(o, b, y), f(np, *(a.astype(np.float64) for a in (o, b, y)))):
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=1e-7)
    configs = "".join(p.read_text() for p in tmp_path.iterdir())
    assert "distribution = [128, 0], vector_common_parallel = [64, 0]" in configs


@pytest.mark.parametrize("shape", [(7, 256), (40, 1000)])
def test_column_variance_takes_the_columns_tiles_and_matches_numpy(shape, tmp_path):
    # var(x, 0): one dispatch holding the mean's column sum and the sum of (x - mean)^2 that reads it; IREE tiled
    # it 25 columns a workgroup, the `columns` part's `@column_dependent` tiles both sums as a lone one (1000 columns:
    # loop peeling). Against float64 NumPy; eager (a static kernel at 7x256, a polymorphic one at 40x1000, whose
    # sums' order differs: docs/design.md) too.
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    x[3, 5], x[6, 9] = np.nan, np.inf  # (their columns NaN, as NumPy's)
    for name, fn, ref in (("var", lambda a: snp.var(a, 0), lambda a: np.var(a, 0)),
                          ("std ddof=1", lambda a: snp.std(a, 0, ddof=1), lambda a: np.std(a, 0, ddof=1))):
        low, folder = stagec.jit(fn, backend="cpu").lower(x), tmp_path / name
        assert "columns" in tuning.parts_for(low.as_text("final"))
        got = np.asarray(_dumping(low, folder)(x))
        np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=1e-5)
        np.testing.assert_allclose(np.asarray(fn(stagec.device_put(x))), ref(x.astype(np.float64)), rtol=1e-5)
        configs = "".join(p.read_text() for p in folder.iterdir())
        assert configs.count("distribution = [128, 0], vector_common_parallel = [64, 0]") == 2, name


@pytest.fixture
def offload_all(monkeypatch):
    """Products of 2^21 multiply-adds and more call BLAS (the default offloads matrix-vector products only,
    docs/blas.md): the tiles of a module calling BLAS, for any product (the persistent cache off: its keys hold
    the pass's source, not this setting)."""
    from stagec.passes import legalize
    monkeypatch.setattr(legalize, "BLAS_MIN_MACS", 1 << 21)
    cached = stagec.config.persistent_cache
    stagec.config.update("persistent_cache", False)
    yield
    stagec.config.update("persistent_cache", cached)


def test_column_sums_between_blas_calls_take_whole_rows(tmp_path, offload_all):
    # A module calling BLAS runs its dispatches on one thread: its column sums take all columns in one
    # workgroup, one row at a time (tuning._WHOLE_ROWS); without the BLAS call, 128 columns a workgroup.
    rng = np.random.default_rng(9)
    x, w = rng.standard_normal((128, 128)).astype(np.float32), rng.standard_normal((128, 300)).astype(np.float32)
    b, y = rng.standard_normal(300).astype(np.float32), rng.standard_normal((128, 300)).astype(np.float32)

    def f(np_, x, w, b, y):
        d = x @ w + b - y  # (128^2 x 300 multiply-adds: a BLAS call)
        return np_.mean(d * d), np_.sum(d * (2 / d.size), 0)
    wide = "cache_reduction = [0, 1], distribution = [65536, 0], vector_common_parallel = [64, 0]"  # (IREE's order)
    for blas in (True, False):
        stagec.config.update("cpu_blas", blas)
        try:
            folder = tmp_path / str(blas)
            jf = _dumping(stagec.jit(lambda *a: f(snp, *a), backend="cpu").lower(x, w, b, y), folder)
            for got, want in zip(jf(x, w, b, y), f(np, *(a.astype(np.float64) for a in (x, w, b, y)))):
                np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=1e-5)
        finally:
            stagec.config.update("cpu_blas", True)
        configs = "".join(p.read_text() for p in folder.iterdir())
        assert (wide in configs) == blas and ("distribution = [128, 0], vector_common_parallel" in configs) != blas


def test_column_sum_of_an_array_the_dispatch_also_returns_takes_whole_rows(tmp_path, offload_all):
    # Between BLAS calls, a column sum whose summed array the dispatch also writes out (a 2-D elementwise generic
    # beside the reduction: a first layer's gradient, read by the next matmul) is tiled too (tuning._OWN_2D).
    rng = np.random.default_rng(10)
    a, w = rng.standard_normal((128, 128)).astype(np.float32), rng.standard_normal((128, 300)).astype(np.float32)
    h, v = rng.uniform(-1, 1, (128, 300)).astype(np.float32), rng.standard_normal((300, 128)).astype(np.float32)

    def f(np_, a, w, h, v):
        g = (a @ w) * (1 - h * h)
        return np_.sum(g, 0), g @ v
    jf = _dumping(stagec.jit(lambda *xs: f(snp, *xs), backend="cpu").lower(a, w, h, v), tmp_path)
    for got, want in zip(jf(a, w, h, v), f(np, *(x.astype(np.float64) for x in (a, w, h, v)))):
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-4)
    sums = [p.read_text() for p in tmp_path.iterdir() if "reduction" in p.read_text()]
    assert len(sums) == 1
    assert "vector_common_parallel = [0, 64], vector_inner_parallel = [1, 0]" in sums[0]
    assert "cache_reduction = [0, 1], distribution = [65536, 0]" in sums[0]


def test_column_sums_narrower_than_the_spec_matches_get_no_spec(tmp_path, pooled_compiles):
    # The columns part matches column reductions of 256 columns or more (`tuning.COLUMNS_MIN`); a module with a
    # narrower one (64x64 linalg kernels) got the spec all the same, which only made iree-compile single-threaded.
    # Given the spec by hand, IREE's tiles stay its own: the rule leaves out no module the spec would tune.
    rng = np.random.default_rng(9)
    g, h = (rng.standard_normal((16, tuning.COLUMNS_MIN - 1)).astype(np.float32) for _ in range(2))
    low = stagec.jit(lambda a, b: snp.sum(a * b, 0), backend="cpu").lower(g, h)
    mlir = low.as_text("final")
    assert tuning.parts_for(mlir) == []
    flags = driver.module_flags("cpu", list(TARGETS["cpu"].flags), driver.text_facts(mlir), mlir)
    assert driver.NO_THREADS not in driver.iree_args(flags)
    f = low.compile(flags=[tuning.FLAG + tuning.spec_path(("columns",)),
                           f"--iree-hal-dump-executable-configurations-to={tmp_path}"])
    np.testing.assert_allclose(np.asarray(f(g, h)), np.sum(g.astype(np.float64) * h, 0), rtol=2e-5, atol=1e-4)
    configs = "".join(p.read_text() for p in tmp_path.iterdir())
    assert "vector_common_parallel = [64, 0]" not in configs
