"""JAX's precision API: `precision=` on every product, `config.default_matmul_precision`, and what each setting
computes. CUDA's bf16_3x rewrite is checked for accuracy by running the rewritten module on the CPU."""
from __future__ import annotations

import re

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import ShapeDtypeStruct as S
from stagec import backend, lax
from gpu_text import gpu_rewrites, legalized

pytestmark = pytest.mark.default_precision  # (the precision API itself: its default is what these tests read)

A, B = S((32, 48), np.float32), S((48, 16), np.float32)


def _text(f, *avals):
    return stagec.jit(f).lower(*avals).as_text()


@pytest.mark.parametrize("product", [
    lambda a, b, p: snp.matmul(a, b, precision=p),
    lambda a, b, p: snp.dot(a, b, precision=p),
    lambda a, b, p: snp.einsum("ij,jk->ik", a, b, precision=p),
    lambda a, b, p: snp.tensordot(a, b, 1, precision=p),
    lambda a, b, p: lax.dot(a, b, precision=p),
    lambda a, b, p: lax.dot_general(a, b, (((1,), (0,)), ((), ())), precision=p),
])
def test_every_product_takes_precision(product):
    assert "precision = [HIGHEST, HIGHEST]" in _text(lambda a, b: product(a, b, "highest"), A, B)
    assert "precision = [HIGH, HIGH]" in _text(lambda a, b: product(a, b, lax.Precision.HIGH), A, B)
    assert "precision" not in _text(lambda a, b: product(a, b, None), A, B)  # DEFAULT is the absent attribute


def test_pair_names_and_errors():
    text = _text(lambda a, b: lax.dot(a, b, precision=(None, "float32")), A, B)
    assert "precision = [DEFAULT, HIGHEST]" in text
    with pytest.raises(ValueError, match="unknown precision 'fp7'"):
        snp.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), precision="fp7")
    with pytest.raises(ValueError, match="default_matmul_precision"):
        stagec.config.update("default_matmul_precision", "fp7")


def test_default_matmul_precision_is_read_when_traced_and_keys_the_cache():
    f = stagec.jit(lambda a, b: a @ b)
    plain = f.lower(A, B).as_text()
    with stagec.default_matmul_precision("float32"):
        assert "precision = [HIGHEST, HIGHEST]" in f.lower(A, B).as_text()
        assert stagec.config.default_matmul_precision == "float32"
        # An explicit precision wins over the default.
        assert "precision = [HIGH, HIGH]" in _text(lambda a, b: snp.matmul(a, b, precision="high"), A, B)
    assert stagec.config.default_matmul_precision is None and f.lower(A, B).as_text() == plain
    a, b = np.full((2, 3), 0.5, np.float32), np.full((3, 2), 2.0, np.float32)
    with stagec.default_matmul_precision("highest"):  # eagerly too: the precision is a parameter of the op
        np.testing.assert_array_equal(np.asarray(snp.matmul(a, b)), a @ b)


@pytest.mark.parametrize("w", [S((4, 3, 3, 3), np.float32), S((4, 3, 7, 7), np.float32)], ids=["conv", "wide"])
def test_convolutions_read_the_default_precision(w):
    """A convolution (and a wide one, emitted as a dot_general) takes `default_matmul_precision` as dot_general
    does; under CUDA at "highest" it stays one float32 product, not bf16_3x's three (it was: 5e-4 off on an H200)."""
    x = S((2, 3, 8, 8), np.float32)
    conv = lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "VALID")
    # (a convolution prints `precision_config = [#stablehlo<precision HIGHEST>, ...]`, a dot `precision = [...]`)
    names = lambda text: re.findall(r"precision (\w+)>|precision = \[(\w+),", text)  # noqa: E731
    assert names(_text(conv, x, w)) == []
    with stagec.default_matmul_precision("highest"):
        assert set(names(_text(conv, x, w))) in ({("HIGHEST", "")}, {("", "HIGHEST")})
        cuda = legalized(_text(conv, x, w), "cuda")
        assert "bf16" not in cuda and cuda.count("stablehlo.dot_general") <= 1
        explicit = _text(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "VALID", precision="high"), x, w)
        assert set(names(explicit)) in ({("HIGH", "")}, {("", "HIGH")})  # (an explicit precision wins)


def test_precision_survives_grad_and_vmap():
    f = lambda a, b: snp.sum(snp.matmul(a, b, precision="highest"))
    text = stagec.jit(stagec.grad(f, argnums=(0, 1))).lower(A, B).as_text()
    assert text.count("stablehlo.dot_general") >= 2 and text.count("precision = [HIGHEST, HIGHEST]") >= 2
    text = stagec.jit(stagec.vmap(lambda a: snp.matmul(a, np.ones((48, 16), np.float32), precision="highest"))
                      ).lower(S((3, 32, 48), np.float32)).as_text()
    assert "precision = [HIGHEST, HIGHEST]" in text


def _run_cpu(mlir: str, *args: np.ndarray, out: S) -> np.ndarray:
    cpu = backend.get_backend("cpu")
    avals = [stagec.core.ShapedArray(a.shape, a.dtype) for a in args]
    exe = cpu.load(cpu.compile(mlir, "bf16_3x"), avals, [stagec.core.ShapedArray(out.shape, out.dtype)], "bf16_3x")
    return cpu.get(exe.call([cpu.put(a) for a in args])[0], stagec.core.ShapedArray(out.shape, out.dtype))


def test_cuda_float32_products_below_highest_are_bf16_3x_and_keep_near_float32_accuracy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 256)).astype(np.float32)
    b = rng.standard_normal((256, 32)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)  # the error bound's natural scale
    out = S((64, 32), np.float32)
    errors, runs = {}, {}  # (runs: the CPU's result per distinct text; the default's text is "high"'s today)
    for p in (None, "high", "highest"):
        text = _text(lambda x, y: snp.matmul(x, y, precision=p), S(a.shape, a.dtype), S(b.shape, b.dtype))
        cuda = legalized(text, "cuda")
        n_dots = cuda.count("stablehlo.dot_general")
        assert n_dots == (1 if p == "highest" else 3), (p, cuda)
        if p != "highest":
            assert "tensor<64x256xbf16>" in cuda and "-> tensor<64x32xf32>" in cuda
        if cuda not in runs:
            runs[cuda] = _run_cpu(cuda, a, b, out=out)
        errors[p] = np.max(np.abs(runs[cuda] - exact) / scale)
    # float32 alone: ~1e-7 of the scale; one bf16 product would be ~4e-3; bf16_3x sits at ~2**-16 or better.
    assert errors["highest"] < 1e-6
    assert errors[None] < 3e-5 and errors["high"] < 3e-5
    assert errors[None] > errors["highest"]  # the rewrite really ran: it is less exact than float32


def test_vulkan_keeps_float32_products():
    text = _text(lambda x, y: x @ y, A, B)
    assert gpu_rewrites(text, "vulkan") == []  # IREE's SPIR-V has no bf16 products to use
    assert "stablehlo.dot_general" in gpu_rewrites(text, "cuda")


SQ, TALL = S((3, 6, 6), np.float32), S((3, 8, 5), np.float32)


@pytest.mark.parametrize("name, f, avals", [
    ("cholesky", snp.linalg.cholesky, [SQ]),
    ("qr", lambda a: snp.linalg.qr(a), [TALL]),
    ("svd", lambda a: snp.linalg.svd(a, full_matrices=True), [TALL]),  # (a reduced U multiplies nothing)
    ("pinv", snp.linalg.pinv, [TALL]),
    ("lstsq", lambda a: snp.linalg.lstsq(a[0], a[0, :, :2])[0], [TALL]),
    ("grad qr", stagec.grad(lambda a: snp.linalg.qr(a)[1].sum()), [TALL]),
    ("grad svd", stagec.grad(lambda a: snp.linalg.svd(a, compute_uv=False).sum()), [TALL]),
    ("grad eigh", stagec.grad(lambda a: snp.linalg.eigh(a + a.mT)[1][..., 0].sum()), [SQ]),
])
def test_decompositions_compute_their_products_in_float32_on_cuda(name, f, avals):
    # At CUDA's default (bf16_3x) QR and SVD of 4x4-6x4 float32 matrices on an H200 were off by 1.4e-5-2.9e-5 of the
    # scale (float32: 4e-7-8e-7), and R held NaNs. The products inside a decomposition are HIGHEST, as JAX's solvers
    # are exact; the user's own products keep the default. (The traced module: on the CPU, LU and Cholesky call
    # LAPACK, `host-lapack`; CUDA runs these loops.)
    text = stagec.jit(f).lower(*avals).as_text("traced")
    assert text.count("stablehlo.dot_general") >= 1
    assert text.count("stablehlo.dot_general") == text.count("precision = [HIGHEST, HIGHEST]"), name
    assert "bf16" not in legalized(text, "cuda"), name


def test_multi_dot_takes_its_precision():
    mats = [S((4, 8), np.float32), S((8, 8), np.float32), S((8, 3), np.float32)]
    for p, want in ((None, 0), ("highest", 2)):
        text = _text(lambda *m: snp.linalg.multi_dot(m, precision=p), *mats)
        assert text.count("precision = [HIGHEST, HIGHEST]") == want, p
