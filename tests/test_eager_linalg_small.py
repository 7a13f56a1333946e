"""Eager inv, solve, det, cholesky, svd and qr of small matrices that the CPU's jitted module answers with LAPACK on the
host call that host function directly (`numpy.linalg._host_lapack`): the jitted call's bits on every input (random,
singular, NaN, inf, not positive definite), batched or not, every LAPACK dtype; call 1 as calls 2-4; values against
NumPy in float64; where the host does not answer (another shape, a batch, options), the module runs as before."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import host
from stagec.numpy import linalg as L

pytestmark = pytest.mark.cpu_only

DTYPES = [np.float32, np.complex64, np.float64, np.complex128]


def _bits(x) -> bytes:
    return np.ascontiguousarray(np.asarray(x)).tobytes()


def _draw(rng, shape, dtype) -> np.ndarray:
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a


def _inputs(rng, shape, dtype) -> dict:
    """Matrices of `shape`: random, exactly singular (a zero column: no update reaches it, its pivot is 0), singular
    up to rounding (a repeated row), with a NaN, with an inf."""
    n = shape[-1]
    out = {"random": _draw(rng, shape, dtype)}
    s = _draw(rng, shape, dtype)
    s[..., n // 2] = 0
    out["singular"] = s
    r = _draw(rng, shape, dtype)
    r[..., -1, :] = r[..., 0, :]
    out["repeated row"] = r
    out["nan"] = _draw(rng, shape, dtype)
    out["nan"][..., n // 2, 0] = np.nan
    out["inf"] = _draw(rng, shape, dtype)
    out["inf"][..., 0, n - 1] = np.inf
    return {k: v.astype(dtype) for k, v in out.items()}


def _spd(rng, shape, dtype) -> dict:
    """Hermitian matrices of `shape`: positive definite (not symmetric in its last bits: the symmetrized part is
    factored), not positive definite, with a NaN, with a subnormal pair (IREE's CPU code flushes them to zero)."""
    g = _draw(rng, shape, dtype)
    n = shape[-1]
    pd = g @ np.conj(np.swapaxes(g, -1, -2)) + n * np.eye(n)
    pd = pd + 1e-7 * _draw(rng, shape, dtype).real
    bad = pd.copy()
    bad[..., n // 2, n // 2] = -1.0
    nan = pd.copy()
    nan[..., n - 1, 1] = np.nan
    tiny = pd.copy()
    tiny[..., 1, 0], tiny[..., 0, 1] = 1e-40, 2e-40
    return {k: v.astype(dtype) for k, v in {"pd": pd, "not pd": bad, "nan": nan, "subnormal": tiny}.items()}


def _check_same(fn, args, *, host: bool, jitted=None, **kw):
    """Eager calls 1-4 give the jitted call's bits (`jitted`, the call's result in a module of several; else
    `jit(fn)`'s: the module an eager call the host does not answer runs, compiled once for both); with `host`,
    answered on the host (no module run)."""
    if jitted is None:
        jitted = stagec.jit(fn, static_argnames=tuple(kw))(*args, **kw)
    dev = [stagec.device_put(a) for a in args]
    for i in range(4):
        got = fn(*(dev if i % 2 else args), **kw)
        assert _bits(got) == _bits(jitted), (fn.__name__, i)
        assert got.dtype == jitted.dtype and got.shape == jitted.shape
        if host:  # (a host result: the module was not called)
            assert got._npy is not None and got._bv is None
    return np.asarray(jitted)


@contextlib.contextmanager
def _no_blas():
    """The CPU's modules without host calls: the loops every other target runs."""
    stagec.config.update("cpu_blas", False)
    try:
        yield
    finally:
        stagec.config.update("cpu_blas", True)


def _dtype_ok(dtype, request):
    if np.dtype(dtype).itemsize == 8 and np.dtype(dtype).kind == "f" or np.dtype(dtype) == np.complex128:
        request.getfixturevalue("x64")


def _err(got, want) -> float:
    got, want = np.asarray(got, np.complex128), np.asarray(want, np.complex128)
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300))


def _tol(dtype) -> float:
    return 1e3 * np.finfo(np.dtype(dtype)).eps


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 4, 4), (16, 16)])
def test_inv_det_solve_eager_bits_are_jits(dtype, shape, request):
    _dtype_ok(dtype, request)
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    n = shape[-1]
    rhs = _draw(rng, shape[:-1] + (3,), dtype).astype(dtype)
    vec = _draw(rng, (n,), dtype).astype(dtype)
    jitted = stagec.jit(lambda a, rhs, vec: (snp.linalg.inv(a), snp.linalg.det(a), snp.linalg.solve(a, rhs),
                                             snp.linalg.solve(a, vec), *snp.linalg.slogdet(a)))  # (one module)
    sign_of, logdet_of = (lambda a: snp.linalg.slogdet(a)[0]), (lambda a: snp.linalg.slogdet(a)[1])
    for kind, a in _inputs(rng, shape, dtype).items():
        j_inv, j_det, j_x, j_xv, j_sign, j_logdet = jitted(a, rhs, vec)
        inv = _check_same(snp.linalg.inv, (a,), host=True, jitted=j_inv)
        det = _check_same(snp.linalg.det, (a,), host=True, jitted=j_det)
        x = _check_same(snp.linalg.solve, (a, rhs), host=True, jitted=j_x)
        _check_same(snp.linalg.solve, (a, vec), host=True, jitted=j_xv)  # (b a vector: broadcast over a's batch)
        sign = _check_same(sign_of, (a,), host=True, jitted=j_sign)
        logdet = _check_same(logdet_of, (a,), host=True, jitted=j_logdet)
        if kind == "random":  # (values: NumPy in float64)
            w = a.astype(np.complex128)
            assert _err(inv, np.linalg.inv(w)) < _tol(dtype)
            assert _err(det, np.linalg.det(w)) < _tol(dtype)
            assert _err(x, np.linalg.solve(w, rhs.astype(np.complex128))) < _tol(dtype)
            want_sign, want_logdet = np.linalg.slogdet(w)
            assert _err(sign, want_sign) < _tol(dtype) and _err(logdet, want_logdet) < _tol(dtype)
        elif kind == "singular":  # (an exactly singular matrix: det 0, slogdet (0, -inf), its inverse not finite,
            # as NumPy's and JAX's)
            assert np.all(det == 0) and not np.all(np.isfinite(inv))
            assert np.all(sign == 0) and np.all(logdet == -np.inf)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(8, 8), (16, 16), (2, 16, 16)])
def test_cholesky_eager_bits_are_jits(dtype, shape, request):
    _dtype_ok(dtype, request)
    rng = np.random.default_rng(shape[-1] + len(shape))
    n = shape[-1]
    for kind, a in _spd(rng, shape, dtype).items():
        got = _check_same(snp.linalg.cholesky, (a,), host=True)
        assert np.all(np.triu(got, 1) == 0)
        if kind == "pd":
            w = a.astype(np.complex128)
            w = (w + np.conj(np.swapaxes(w, -1, -2))) / 2
            assert _err(got, np.linalg.cholesky(w)) < _tol(dtype)
        elif kind == "not pd":  # (NaN on and below the diagonal, as the loops' and JAX's)
            assert np.all(np.isnan(got[..., np.tri(n, dtype=bool)]))
        elif kind == "subnormal":  # (symmetrized on the host, subnormals kept: a valid factor still)
            assert np.all(np.isfinite(got))


def _leaves(x):
    return list(x) if isinstance(x, tuple) else [x]


def _host_gives_jits_bits(call, a, forms, jitted_forms, kind):
    """`call(a, form)` eagerly, from a NumPy array and from an Array, gives each form's jitted results' bits and
    shapes, computed on the host (no module ran)."""
    for form, jitted in zip(forms, jitted_forms):
        jitted = _leaves(jitted)
        for i in range(2):
            got = _leaves(call(stagec.device_put(a) if i else a, form))
            assert [(_bits(g), g.shape) for g in got] == [(_bits(j), j.shape) for j in jitted], (kind, form, i)
            assert all(g._npy is not None and g._bv is None for g in got)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 6, 4), (16, 16)])
def test_svd_eager_bits_are_jits_and_lapacks(dtype, shape, request):
    """svd (full, reduced, values only) and svdvals: the jitted module is one call of LAPACK's gesdd on the host
    (NumPy's SVD), eager calls give its bits without the module; values against NumPy's in float64 (complex128);
    a matrix holding NaN or inf gives NaN, as the Jacobi sweeps of other targets (and JAX's)."""
    _dtype_ok(dtype, request)
    rng = np.random.default_rng(shape[-1] * 10 + shape[-2])
    kws = ({}, {"full_matrices": False}, {"compute_uv": False})
    f = stagec.jit(lambda x: [snp.linalg.svd(x, **kw) for kw in kws])  # (one module of three host calls)
    for kind, a in _inputs(rng, shape, dtype).items():
        if kind == "random":
            assert f.lower(a).as_text("final").count("call @stagec_lapack.gesdd") == 3
        _host_gives_jits_bits(lambda x, kw: snp.linalg.svd(x, **kw), a, kws, f(a), kind)
        u, sv, vh = (np.asarray(x) for x in snp.linalg.svd(a, full_matrices=False))
        vals = snp.linalg.svdvals(a)
        assert _bits(vals) == _bits(snp.linalg.svd(a, compute_uv=False))  # (gesdd's JOBZ='N': its own last bits)
        if kind == "random":
            w = a.astype(np.complex128)
            assert _err(sv, np.linalg.svd(w, compute_uv=False)) < _tol(dtype)
            assert _err(vals, np.linalg.svd(w, compute_uv=False)) < _tol(dtype)
            assert _err((u * sv[..., None, :]) @ vh, w) < _tol(dtype)
            k = sv.shape[-1]
            assert _err(np.conj(np.swapaxes(u, -1, -2)) @ u, np.broadcast_to(np.eye(k), u.shape[:-2] + (k, k))) \
                < _tol(dtype)
        elif kind == "singular" and shape[-2] >= shape[-1]:  # (a zero column of a tall or square matrix: a zero
            # singular value)
            assert np.all(sv[..., -1] <= _tol(dtype) * sv[..., 0])
        elif kind in ("nan", "inf"):
            assert np.all(np.isnan(sv)) and np.all(np.isnan(u)) and np.all(np.isnan(vh))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (5, 5), (2, 6, 6), (16, 16)])
def test_eigh_eager_bits_are_jits_and_lapacks(dtype, shape, request, monkeypatch):
    """eigh: the jitted module is one host call, (a + a^H) / 2 in NumPy and LAPACK's syevd (heevd); eager calls
    call it without the module for every input (NaN, inf, near-overflow and subnormal entries or half-sums too,
    which IREE's code would flush) and give its bits; values against NumPy's in float64."""
    _dtype_ok(dtype, request)
    rng = np.random.default_rng(shape[-1] * 3 + len(shape))
    f = stagec.jit(snp.linalg.eigh)
    tiny = np.finfo(dtype).smallest_normal
    cases = _inputs(rng, shape, dtype)
    if shape[-1] > 1:
        cases.update((k, v) for k, v in _spd(rng, shape, dtype).items() if k != "nan")
        cases["subnormal sum"] = _draw(rng, shape, dtype)  # (normal entries whose half-sum is subnormal)
        cases["subnormal sum"][..., 0, -1], cases["subnormal sum"][..., -1, 0] = 3 * tiny, -2.5 * tiny
    cases["huge"] = _draw(rng, shape, dtype) * np.finfo(dtype).max / 4
    calls, real = [], L.lapack_eigh_sym
    monkeypatch.setattr(L, "lapack_eigh_sym", lambda *xs: (calls.append(1), real(*xs))[1])  # (the eager path's)
    for kind, a in cases.items():
        a = a.astype(dtype)
        jitted = f(a)
        for i in range(2):
            calls.clear()
            got = snp.linalg.eigh(stagec.device_put(a) if i else a)
            assert [_bits(g) for g in got] == [_bits(j) for j in jitted], (kind, i)
            assert calls, (kind, i)
        if kind == "subnormal sum":  # (the half-sum's subnormal entries kept: NumPy's, not flushed)
            w = a.astype(np.complex128)
            w = (w + np.conj(np.swapaxes(w, -1, -2))) / 2
            assert _err(got[0], np.linalg.eigvalsh(w)) < _tol(dtype)
        if kind == "random":
            w = a.astype(np.complex128)
            w = (w + np.conj(np.swapaxes(w, -1, -2))) / 2
            assert _err(got[0], np.linalg.eigvalsh(w)) < _tol(dtype)
            vals, vecs = (np.asarray(x, np.complex128) for x in got)
            assert _err(vecs @ (vals[..., None] * np.conj(np.swapaxes(vecs, -1, -2))), w) < _tol(dtype)


def test_eigh_eager_keeps_subnormal_eigenvector_entries_as_jit_does():
    """A tridiagonal matrix with spread diagonal (float32) has localized eigenvectors whose far entries are
    subnormal: LAPACK makes them on the host either way, and the jitted module passes them through unflushed; the
    eager call (no module) gives the same bits, and the decomposition rebuilds the matrix (float64 NumPy)."""
    n = 24
    a = (np.diag(np.arange(n) * 40.0) + np.diag(np.ones(n - 1), 1) + np.diag(np.ones(n - 1), -1)).astype(np.float32)
    got, jitted = snp.linalg.eigh(a), stagec.jit(snp.linalg.eigh)(a)
    vecs = np.asarray(got[1])
    assert ((np.abs(vecs) < np.finfo(np.float32).smallest_normal) & (vecs != 0)).any()  # (the edge is reached)
    assert [_bits(g) for g in got] == [_bits(j) for j in jitted]
    vals, vecs = (np.asarray(x, np.float64) for x in got)
    assert _err(vecs @ (vals[:, None] * vecs.T), a.astype(np.float64)) < _tol(np.float32)
    assert _err(vals, np.linalg.eigvalsh(a.astype(np.float64))) < _tol(np.float32)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 6, 4)])
def test_qr_eager_bits_are_jits_and_lapacks(dtype, shape, request):
    """qr in its three modes: the jitted module is one call of LAPACK's geqrf/orgqr on the host (NumPy's QR), eager
    calls give its bits without the module; values against NumPy's in float64 (complex128)."""
    _dtype_ok(dtype, request)
    rng = np.random.default_rng(shape[-1] * 7 + shape[-2])
    modes = ("reduced", "complete", "r")
    f = stagec.jit(lambda x: [snp.linalg.qr(x, mode) for mode in modes])  # (one module of three host calls)
    for kind, a in _inputs(rng, shape, dtype).items():
        if kind == "random":
            assert f.lower(a).as_text("final").count("call @stagec_lapack.geqrf") == 3
        outs = f(a)
        _host_gives_jits_bits(snp.linalg.qr, a, modes, outs, kind)
        for mode, jitted in zip(modes, outs):
            jitted = _leaves(jitted)
            if kind == "random":
                w = a.astype(np.complex128)
                if mode == "r":
                    assert _err(np.abs(jitted[0]), np.abs(np.linalg.qr(w, mode="r"))) < _tol(dtype)
                    continue
                q, r = (np.asarray(x) for x in jitted)
                assert _err(q @ r, w) < _tol(dtype)
                c = q.shape[-1]
                assert _err(np.conj(np.swapaxes(q, -1, -2)) @ q, np.broadcast_to(np.eye(c), q.shape[:-2] + (c, c))) \
                    < _tol(dtype)
                assert np.all(np.tril(r, -1) == 0)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_qr_on_the_host_is_the_loops_factorization(dtype):
    """LAPACK's reflectors are the Householder loops' (every other target's): the same Q and R, signs included, up to
    rounding, tall, wide, square and batched, reduced and complete."""
    rng = np.random.default_rng(2)
    cases = [(_draw(rng, s, dtype).astype(dtype), mode) for s in ((5, 3), (3, 5), (4, 4), (2, 6, 4))
             for mode in ("reduced", "complete")]
    f = lambda *xs: [snp.linalg.qr(x, mode) for x, (_, mode) in zip(xs, cases)]  # noqa: E731
    host = stagec.jit(f)(*(a for a, _ in cases))
    with _no_blas():
        loops = stagec.jit(f)(*(a for a, _ in cases))
    for (a, mode), h, lo in zip(cases, host, loops):
        for x, y in zip(h, lo):
            assert _err(x, y) < _tol(dtype), (a.shape, mode)


@pytest.mark.parametrize("dtype", DTYPES)
def test_svd_of_a_batch_with_one_non_finite_matrix_gives_each_finite_one_numpys_bits(dtype, request):
    """The host's gesdd runs a batch in one call of NumPy's gufunc: a matrix holding inf or NaN gives NaN (all of
    U, S and Vh), each other matrix of the batch the bits NumPy's SVD gives it alone (gesdd in float64 or
    complex128, rounded), eager and jitted."""
    _dtype_ok(dtype, request)
    rng = np.random.default_rng(7)
    a = _draw(rng, (4, 6, 4), dtype).astype(dtype)
    a[1, 2, 3], a[3, 0, 0] = np.inf, np.nan
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    for full in (True, False):
        eager = snp.linalg.svd(a, full_matrices=full)
        jitted = stagec.jit(lambda x: snp.linalg.svd(x, full_matrices=full))(a)
        assert [_bits(x) for x in eager] == [_bits(x) for x in jitted]
        for i in range(4):
            got = [np.asarray(x)[i] for x in eager]
            if i in (1, 3):
                assert all(np.isnan(g).all() for g in got)
                continue
            want = np.linalg.svd(a[i].astype(wide), full_matrices=full)
            assert [_bits(g) for g in got] == [_bits(w.astype(g.dtype)) for g, w in zip(got, want)], (i, full)
    vals = np.asarray(snp.linalg.svd(a, compute_uv=False))
    assert np.isnan(vals[[1, 3]]).all()
    assert _bits(vals[[0, 2]]) == _bits(np.linalg.svd(a[[0, 2]].astype(wide), compute_uv=False).astype(vals.dtype))
    none = np.empty((0, 6, 4), dtype)  # (an empty batch: nothing to write, no error)
    s0, u0, vh0 = np.empty((0, 4), vals.dtype), np.empty((0, 6, 6), dtype), np.empty((0, 4, 4), dtype)
    host.lapack_svd(none, s0, u0, vh0)
    host.lapack_svd(none, s0)


def test_svd_of_batches_past_the_rule_and_empty_matrices_run_the_sweeps():
    """Past the offload rule (more than 2 x n matrices) and for empty matrices the module runs the Jacobi sweeps, as
    on every other target; its values as NumPy's."""
    rng = np.random.default_rng(3)
    big = _draw(rng, (9, 4, 4), np.float32).astype(np.float32)
    assert L._svd_host(big) is None
    text = stagec.jit(snp.linalg.svd).lower(big).as_text("final")
    assert "gesdd" not in text and "stablehlo.while" in text
    got = np.asarray(snp.linalg.svd(big, compute_uv=False))
    assert _err(got, np.linalg.svd(big.astype(np.float64), compute_uv=False)) < _tol(np.float32)
    empty = np.zeros((3, 0), np.float32)
    assert L._svd_host(empty) is None
    u, sv, vh = snp.linalg.svd(empty)
    assert u.shape == (3, 3) and sv.shape == (0,) and vh.shape == (0, 0)


def test_svd_and_its_gradient_match_jax():
    """JAX's CPU SVD is LAPACK's gesdd too: the singular values and |U|, |V^H| (the signs are each column's choice);
    grad of a function of the singular values through both."""
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(11)
    a = rng.standard_normal((6, 4)).astype(np.float32)
    got, want = snp.linalg.svd(a, full_matrices=False), jax.numpy.linalg.svd(a, full_matrices=False)
    for g, w in zip(got, want):
        assert _err(np.abs(np.asarray(g)), np.abs(np.asarray(w))) < 1e-5
    f = lambda m: lambda x: m.sum(m.linalg.svd(x, compute_uv=False) * m.arange(4.0))  # noqa: E731
    g = np.asarray(stagec.jit(stagec.grad(f(snp)))(a))
    assert _err(g, np.asarray(jax.grad(f(jax.numpy))(a))) < 1e-5


def test_solve_matches_jax_and_numpy_on_a_singular_and_a_nan_matrix():
    """Where NumPy and JAX define the answer: an exactly singular matrix's inverse has inf or NaN (NumPy raises);
    the rows of a solve that do not reach a NaN stay finite, as LAPACK's (JAX's CPU solve) give."""
    jnp = pytest.importorskip("jax.numpy")
    a = np.array([[1, 2, 0, 0], [2, 4, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], np.float32)
    assert not np.all(np.isfinite(np.asarray(snp.linalg.inv(a))))
    assert float(snp.linalg.det(a)) == 0.0 == float(jnp.linalg.det(a))
    b = np.eye(4, dtype=np.float32)
    b[3, 3] = np.nan
    x, want = np.asarray(snp.linalg.solve(np.eye(4, dtype=np.float32) * 2, b)), np.asarray(jnp.linalg.solve(
        np.eye(4, dtype=np.float32) * 2, b))
    np.testing.assert_array_equal(np.isnan(x), np.isnan(want))


def test_other_calls_run_the_module_as_before():
    """A batch past the offload rule, cholesky's other options and orders below POTRF_MIN_ORDER, integer operands,
    mixed dtypes, NumPy's float64 without x64, `cpu_blas` off: no host answer; still the jitted call's bits."""
    rng = np.random.default_rng(5)
    big = _draw(rng, (9, 4, 4), np.float32).astype(np.float32)  # (9 > 2 x 4 matrices: the loops)
    assert L._inv_host(big) is None and L._det_host(big) is None
    _check_same(snp.linalg.inv, (big,), host=False)
    spd = _spd(rng, (16, 16), np.float32)["pd"]
    for kw in ({"upper": True}, {"symmetrize_input": False}):
        assert L._cholesky_host(spd, **kw) is None
        _check_same(snp.linalg.cholesky, (spd,), host=False, **kw)
    small = _spd(rng, (4, 4), np.float32)["pd"]
    assert L._cholesky_host(small) is None
    _check_same(snp.linalg.cholesky, (small,), host=False)
    ints = np.array([[2, 1], [1, 3]], np.int32)
    assert L._inv_host(ints) is None
    np.testing.assert_allclose(np.asarray(snp.linalg.inv(ints)), np.linalg.inv(ints), rtol=1e-6)
    a = _draw(rng, (4, 4), np.float32).astype(np.float32)
    assert L._solve_host(a, a.astype(np.float64)) is None and L._inv_host(a.astype(np.float64)) is None
    stagec.config.update("cpu_blas", False)
    try:
        assert L._inv_host(a) is None
        _check_same(snp.linalg.inv, (a,), host=False)
    finally:
        stagec.config.update("cpu_blas", True)
    assert L._inv_host(a) is not None
    with stagec.disable_jit():
        assert L._inv_host(a) is None


def test_eager_under_transforms_is_not_the_host_path():
    """Under grad and vmap the functions trace (no host answer); grad of cholesky still JAX's."""
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(9)
    g = rng.standard_normal((8, 8))
    s = (g @ g.T + 8 * np.eye(8)).astype(np.float32)
    got = np.asarray(stagec.grad(lambda a: snp.linalg.cholesky(a).sum())(s))
    want = np.asarray(jax.grad(lambda a: jax.numpy.linalg.cholesky(a).sum())(s))
    assert _err(got, want) < 1e-4
    v = np.asarray(stagec.vmap(snp.linalg.inv)(np.stack([s, 2 * s])))
    assert _err(v, np.linalg.inv(np.stack([s, 2 * s]).astype(np.float64))) < 1e-4


def test_a_determinant_past_float32s_range_is_inf_and_quiet():
    """A float32 determinant past float32's range is inf of its sign (float64 NumPy's slogdet says which), eagerly
    as jitted, with no NumPy overflow warning (JAX gives none; the host's product of the pivots warned)."""
    import warnings
    a = np.random.default_rng(5).standard_normal((200, 200)).astype(np.float32) * 10
    sign, logdet = np.linalg.slogdet(a.astype(np.float64))
    assert logdet > np.log(np.finfo(np.float32).max)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = np.asarray(snp.linalg.det(a))
    assert got == sign * np.inf
    assert _bits(got) == _bits(stagec.jit(snp.linalg.det)(a))
