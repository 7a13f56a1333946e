"""Differential tests of dot, matmul, vdot, inner, outer, tensordot and einsum (all `dot_general`):
stagec eager, stagec jit and NumPy agree; dtypes follow JAX."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import stagec
import stagec.numpy as snp
from numpy_diff import MAX_EXAMPLES, F16, F32, I8, I32, U8, arrays, assert_matches, jax, jnp, jitted

SETTINGS = settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])


_PRODUCTS = {  # a: (2, 3, 4), b: (2, 4, 5), c: (4,); `m` is stagec.numpy, numpy or jax.numpy; `kw` einsum options
    "matmul": lambda m, a, b, c, kw: m.matmul(a, b), "matmul_vec": lambda m, a, b, c, kw: m.matmul(a, c),
    "vec_matmul": lambda m, a, b, c, kw: m.matmul(c, b), "matmul_bcast": lambda m, a, b, c, kw: m.matmul(a, b[0]),
    "dot_vv": lambda m, a, b, c, kw: m.dot(c, c), "dot_mv": lambda m, a, b, c, kw: m.dot(a[0], c),
    "dot_nd": lambda m, a, b, c, kw: m.dot(a, b[0]), "dot_scalar": lambda m, a, b, c, kw: m.dot(a, 2),
    "vdot": lambda m, a, b, c, kw: m.vdot(a, a), "inner": lambda m, a, b, c, kw: m.inner(a, c),
    "inner_nd": lambda m, a, b, c, kw: m.inner(a, a), "outer": lambda m, a, b, c, kw: m.outer(c, a[0, 0]),
    "tensordot2": lambda m, a, b, c, kw: m.tensordot(a, a, axes=([1, 2], [1, 2])),
    "tensordot_int": lambda m, a, b, c, kw: m.tensordot(a[0], b[0], axes=1),
    "tensordot0": lambda m, a, b, c, kw: m.tensordot(c, c, axes=0),
    "einsum_bmm": lambda m, a, b, c, kw: m.einsum("bij,bjk->bik", a, b, **kw),
    "einsum_implicit": lambda m, a, b, c, kw: m.einsum("bij,bjk", a, b, **kw),
    "einsum_trace": lambda m, a, b, c, kw: m.einsum("ii->", a[0, :, :3], **kw),
    "einsum_diag": lambda m, a, b, c, kw: m.einsum("ii->i", a[1, :3, :3], **kw),
    "einsum_sum": lambda m, a, b, c, kw: m.einsum("ijk->j", a, **kw),
    "einsum_transpose": lambda m, a, b, c, kw: m.einsum("ijk->kji", a, **kw),
    "einsum_ellipsis": lambda m, a, b, c, kw: m.einsum("...j,j->...", a, c, **kw),
    "einsum_outer": lambda m, a, b, c, kw: m.einsum("i,j->ij", c, c, **kw),
    "einsum_three": lambda m, a, b, c, kw: m.einsum("bij,bjk,k->bi", a, b, b[0, 0], **kw),
    "einsum_bcast": lambda m, a, b, c, kw: m.einsum("...ij,...jk->...ik", a, b[:1], **kw),
}


def _products(m, a, b, c):
    kw = {"optimize": False} if m is np else {}
    return {n: f(m, a, b, c, kw) for n, f in _PRODUCTS.items()}


def _snp_products(a, b, c):
    return _products(snp, a, b, c)


@SETTINGS
@given(st.data())
def test_products_match_numpy(data):
    dta, dtb = data.draw(st.sampled_from([(F32, F32), (I32, I32), (F16, F16), (I8, F32), (I8, U8)]), "dtypes")
    a = data.draw(arrays(dta, (2, 3, 4), -4, 4), "a")
    b = data.draw(arrays(dtb, (2, 4, 5), -4, 4), "b")
    c = data.draw(arrays(dta, (4,), -4, 4), "c")
    got = jitted(_snp_products)(a, b, c)
    eager = _snp_products(a, b, c) if (dta, dtb) == (F32, F32) else got
    rt = jnp.result_type(a, b) if jnp is not None else np.result_type(a, b)
    with np.errstate(all="ignore"):
        want = _products(np, a.astype(np.float64 if np.dtype(rt).kind == "f" else rt),
                         b.astype(np.float64 if np.dtype(rt).kind == "f" else rt),
                         c.astype(np.float64 if np.dtype(rt).kind == "f" else rt))
    for n, w in want.items():
        if np.dtype(rt).kind in "iu":
            w = np.asarray(w).astype(got[n].dtype)  # integer products wrap in the promoted dtype, as JAX
        assert_matches(got[n], w, f"{n}({dta},{dtb}) jit", scale=100, rtol=5e-3 if F16 in (dta, dtb) else None)
        assert_matches(eager[n], w, f"{n}({dta},{dtb}) eager", scale=100)
    for n, f in _PRODUCTS.items() if jnp is not None else ():
        try:
            o = jax.eval_shape(lambda *v: f(jnp, *v, {}), a, b, c)
        except TypeError:  # JAX refuses some mixed integer contractions (preferred_element_type checks)
            continue
        assert got[n].dtype == o.dtype, f"{n}: {got[n].dtype} vs JAX {o.dtype}"


def test_einsum_emits_one_dot_general_with_batch_dims():
    """A batched contraction is one dot_general with batch and contracting dims: no transposes, no reshapes."""
    a, b = np.ones((2, 3, 4), np.float32), np.ones((2, 4, 5), np.float32)
    text = str(stagec.make_mlir(lambda x, y: snp.einsum("bij,bjk->bik", x, y), passes="none")(a, b))
    assert text.count("stablehlo.dot_general") == 1
    assert "batching_dims = [0] x [0]" in text and "contracting_dims = [2] x [1]" in text
    assert "stablehlo.transpose" not in text and "stablehlo.reshape" not in text
    text = str(stagec.make_mlir(lambda x, y: snp.tensordot(x, y, axes=([0, 2], [0, 1])), passes="none")(a, b))
    assert text.count("stablehlo.dot_general") == 1 and "stablehlo.transpose" not in text


def test_matmul_broadcasts_without_copies_and_its_weight_gradient_is_one_product():
    """Leading dims of one operand alone (or facing a 1) are free dims of one `dot_general`, as JAX's: `(b, t, d) @
    (d, f)` copied the weight b times before (a broadcast, then b products summed in its gradient). Every broadcast
    of 0-2 leading dims against float64 NumPy, eager and jitted; the gradients against their closed forms."""
    import itertools
    rng = np.random.default_rng(0)
    lead = [(), (1,), (4,), (3,), (5, 1), (5, 4), (1, 1), (7, 1, 1)]
    pairs, bad = [], []
    for la, lb in itertools.product(lead, lead):
        a, b = rng.standard_normal(la + (2, 3)).astype(np.float32), rng.standard_normal(lb + (3, 6)).astype(np.float32)
        try:
            pairs.append((a, b, np.matmul(a.astype(np.float64), b)))
        except ValueError:
            bad.append((a, b))
    got = stagec.jit(lambda ps: [snp.matmul(a, b) for a, b in ps])([(a, b) for a, b, _ in pairs])  # (one module)
    for (a, b, want), g in zip(pairs, got):
        assert g.shape == want.shape, (a.shape, b.shape)
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5)
    for a, b, want in pairs[::9]:  # (eager: a kernel each)
        np.testing.assert_allclose(snp.matmul(a, b), want, rtol=1e-5, atol=1e-5)
    assert bad
    for a, b in bad[:2]:
        with pytest.raises(ValueError):
            snp.matmul(a, b)
    h, w = rng.standard_normal((8, 5, 16)).astype(np.float32), rng.standard_normal((16, 12)).astype(np.float32) / 4
    f = lambda h, w: snp.sum(snp.tanh(h @ w))  # noqa: E731
    text = stagec.jit(stagec.grad(f, argnums=(0, 1))).lower(h, w).as_text()
    assert "broadcast_in_dim" not in text and text.count("stablehlo.dot_general") == 3, text
    gh, gw = stagec.jit(stagec.grad(f, argnums=(0, 1)))(h, w)
    s = 1 - np.tanh(h.astype(np.float64) @ w) ** 2
    np.testing.assert_allclose(gw, np.einsum("btd,btf->df", h, s), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(gh, s @ w.T.astype(np.float64), rtol=2e-5, atol=2e-5)


def test_einsum_labels_beyond_letters():
    """JAX's einsum takes any character but `.,->` as a label (its training cookbook: "bsd,3dkh->bs3kh"); NumPy's
    takes letters. Against NumPy's einsum with the labels renamed to letters, in float64."""
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((2, 5, 4)), rng.standard_normal((3, 4, 2, 6))
    want = np.einsum("bsd,tdkh->bstkh", x, w)
    for s in ("bsd,3dkh->bs3kh", "bsd,βdkh->bsβkh", "bsd,_dkh->bs_kh"):
        np.testing.assert_allclose(np.asarray(stagec.jit(lambda x, w: snp.einsum(s, x, w))(x, w)), want,
                                   rtol=1e-5, atol=1e-5, err_msg=s)
    np.testing.assert_allclose(np.asarray(snp.einsum("i3,3k", x[0], w[0, :, 0])), x[0] @ w[0, :, 0], rtol=1e-5)
    with pytest.raises(ValueError, match="invalid subscript"):
        snp.einsum("i.,.k->ik", x[0], w[0, :, 0])


def test_empty_and_scalar_products():
    z = np.zeros((2, 0), np.float32)
    fn = lambda x: [x @ x.T, x.T @ x, snp.einsum("ij,ij->i", x, x), snp.tensordot(x, x, axes=([1], [1]))]
    for got in (fn(z), stagec.jit(fn)(z)):
        for g, w in zip(got, [z @ z.T, z.T @ z, np.einsum("ij,ij->i", z, z), np.tensordot(z, z, axes=([1], [1]))]):
            assert_matches(g, w, "empty product")
    assert float(snp.dot(np.float32(2), np.float32(3))) == 6.0


def test_product_errors_match_numpy_kinds():
    a, b = np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32)
    cases = [lambda m: m.matmul(a, b), lambda m: m.matmul(a, np.float32(1)), lambda m: m.dot(a, b),
             lambda m: m.inner(a, np.zeros(2)), lambda m: m.tensordot(a, b, axes=([0], [1])),
             lambda m: m.einsum("ij,jk", a, b), lambda m: m.einsum("ij", a, b), lambda m: m.einsum("ij->k", a),
             lambda m: m.einsum("ijk", a), lambda m: m.vdot(a, np.zeros(5))]
    for k, fn in enumerate(cases):
        with pytest.raises(ValueError):
            fn(np)
        with pytest.raises(ValueError):
            fn(snp)


def test_complex_products_match_numpy():
    """Complex dot_general lowers as a multiply and sum (IREE's CPU data tiling fails on a complex dot)."""
    r = np.random.default_rng(0)
    c = lambda *s: (r.normal(size=s) + 1j * r.normal(size=s)).astype(np.complex64)
    a, b, v = c(2, 3, 4), c(2, 4, 5), c(4)
    np.testing.assert_allclose(np.asarray(snp.matmul(a, b)), a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(snp.dot(a, v)), a @ v, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(stagec.jit(lambda x, y: snp.tensordot(x, y, axes=([0, 2], [0, 1])))(a, b)),
                               np.tensordot(a, b, axes=([0, 2], [0, 1])), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(snp.matmul(a, b.real)), a @ b.real, rtol=1e-5, atol=1e-5)


SLICED_PRODUCTS = {  # of a, b: (256, 256) float32
    "a[:, :128] @ b[:128]": lambda m, a, b: a[:, :128] @ b[:128],
    "a @ b[:, 1:129]": lambda m, a, b: a @ b[:, 1:129],
    "a[:, ::2] @ b[:128]": lambda m, a, b: a[:, ::2] @ b[:128],
    "split K": lambda m, a, b: a[:, :128] @ b[:128] + a[:, 128:] @ b[128:],
    "heads": lambda m, a, b: m.tanh(a[:, 64:192] @ b[64:192])[:, :128] @ b[:128, :64],
}


def test_matmuls_of_sliced_operands_compile_and_match_numpy():
    # IREE 3.13 fuses a slice into the packing of a matmul operand and then needs 64-144 KiB of stack (limit 32):
    # these did not compile. The backend retries with the sliced operands materialized. One module holds them all
    # (one failed compile and one retry, not five of each).
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((256, 256)).astype(np.float32) for _ in range(2))
    names = sorted(SLICED_PRODUCTS)
    f = stagec.jit(lambda a, b: [SLICED_PRODUCTS[n](snp, a, b) for n in names], backend="cpu")
    for name, got in zip(names, f(a, b)):
        want = SLICED_PRODUCTS[name](np, a.astype(np.float64), b.astype(np.float64))
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-3, err_msg=name)


@pytest.mark.cpu_only  # (`materialize-sliced-dots`, a CPU retry, on the CPU's final module)
def test_sliced_operands_materialized_only_where_sliced():
    from stagec.passes import legalize, on_text
    materialize_sliced_dot_operands = lambda text: on_text(text, legalize.materialize_sliced_dot_operands)
    a = np.zeros((8, 8), np.float32)
    assert materialize_sliced_dot_operands(stagec.jit(lambda a, b: a @ b).lower(a, a).as_text("final")) is None
    text = stagec.jit(lambda a, b: (a[:, :4] * 2) @ b[:4].T.T).lower(a, a).as_text("final")
    text = materialize_sliced_dot_operands(text)
    assert text.count("stablehlo.optimization_barrier") == 1  # (b[:4]; a's slice reaches the dot through a multiply)


def test_numpy_rule_of_a_contraction_to_a_scalar():
    # the rule the quick tier and eager calls run: with no batch or free dimensions it raised TypeError
    # (einsum("ij,ji->") on the first, op-by-op call of a jitted function)
    from stagec.primitives.dot import _dot_general_host
    a, b = np.arange(6.0, dtype=np.float32).reshape(2, 3), np.arange(6.0, dtype=np.float32).reshape(3, 2)
    got = _dot_general_host(a, b.T, dimension_numbers=(([0, 1], [0, 1]), ([], [])))
    assert got.shape == () and got == np.sum(a * b.T)
    got = _dot_general_host(a[None], b.T[None], dimension_numbers=(([1, 2], [1, 2]), ([0], [0])))
    assert got.shape == (1,) and got[0] == np.sum(a * b.T)


def test_lax_dot_preferred_element_type_widens_unsigned_operands_and_converts_a_float_sum():
    """uint8 operands summed as int32 or float32 were widened as signed (200 * 200 gave (-56)^2); float operands
    with an integer result type were converted one by one (0.6 + 0.7 + 1.6 as int32 gave 1; XLA's, so JAX's,
    is the float sum converted: 2, saturated at the type's bounds). Oracle: NumPy in int64 and float64."""
    lax = stagec.lax
    u8 = np.array([[200, 255, 3], [1, 2, 250]], np.uint8)
    u16 = (u8.astype(np.uint16) * 257).astype(np.uint16)
    f = np.array([[0.6, 0.7, 1.6], [300.5, 2.0, -0.25], [-0.6, -0.7, -1.6]], np.float32)
    g = lambda u8, u16, f: [lax.dot(u8, u8.T, preferred_element_type=t) for t in (np.int32, np.float32, np.uint32)] + \
        [lax.dot(u16, u16.T, preferred_element_type=np.uint32)] + \
        [lax.dot(f, np.ones((3, 1), f.dtype), preferred_element_type=t) for t in (np.int32, np.uint8, np.int8)] + \
        [lax.dot(f.astype(np.float16), np.ones((3, 1), np.float16), preferred_element_type=np.int32)]
    p8, p16 = u8.astype(np.int64) @ u8.T.astype(np.int64), u16.astype(np.int64) @ u16.T.astype(np.int64)
    s = f.astype(np.float64).sum(1, keepdims=True)
    want = [p8.astype(np.int32), p8.astype(np.float32), p8.astype(np.uint32), p16.astype(np.uint32)] + [np.clip(np.trunc(s), np.iinfo(t).min, np.iinfo(t).max).astype(t)
                                       for t in (np.int32, np.uint8, np.int8)] + [np.trunc(s).astype(np.int32)]
    for got in (stagec.jit(g)(u8, u16, f), g(u8, u16, f)):
        for r, w in zip(got, want):
            assert r.dtype == w.dtype
            np.testing.assert_array_equal(np.asarray(r), w)
