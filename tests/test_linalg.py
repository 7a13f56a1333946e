"""snp.linalg against NumPy/LAPACK: decompositions checked by their defining identities and by NumPy's values,
on well- and ill-conditioned matrices (hypothesis over condition numbers), with x64 off and on."""
from __future__ import annotations

import contextlib

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stagec
import stagec.numpy as snp

SETTINGS = settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
B, N = 2, 4  # one batch shape shared by every test (each distinct shape compiles new modules)


def _matrix(seed: int, cond: float, dtype, n: int = N, m: int | None = None):
    """Batched (B, n, m) matrices with singular values spread from 1 to 1/cond."""
    rng = np.random.default_rng(seed)
    m = n if m is None else m
    k = min(n, m)
    def orth(d):
        z = rng.standard_normal((B, d, d))
        if np.dtype(dtype).kind == "c":
            z = z + 1j * rng.standard_normal((B, d, d))
        return np.linalg.qr(z)[0]
    s = np.logspace(0, -np.log10(cond), k)
    a = orth(n)[:, :, :k] * s @ orth(m)[:, :k, :]
    return a.astype(dtype)


def _err(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    return np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30)


def _tol(dtype, cond=1.0):
    return 50 * np.finfo(np.dtype(dtype)).eps * cond


@pytest.fixture(params=["x32", "x64"])
def mode(request):
    if request.param == "x64":
        request.getfixturevalue("x64")
    return np.float64 if request.param == "x64" else np.float32


@pytest.fixture(params=[True, False], ids=["lapack", "loops"])
def cpu_blas(request):
    """Both ways a CPU module factors: LAPACK on the host (`host-lapack`, the default; LU, Cholesky, eigh) and IREE's
    loops (the other targets' and `cpu_blas` off)."""
    stagec.config.update("cpu_blas", request.param)
    try:
        yield request.param
    finally:
        stagec.config.update("cpu_blas", True)


@SETTINGS
@given(st.sampled_from([1.0, 1e2, 1e4]), st.integers(0, 2**16))
def test_solve_inv_det_vs_numpy(cond, seed):
    a = _matrix(seed, cond, np.float32)
    b = np.random.default_rng(seed).standard_normal((B, N, 3)).astype(np.float32)
    x = snp.linalg.solve(a, b)
    assert _err(np.asarray(a, np.float64) @ np.asarray(x), b) < _tol(np.float32, cond)
    assert _err(snp.linalg.inv(a), np.linalg.inv(a)) < _tol(np.float32, cond)
    assert _err(snp.linalg.det(a), np.linalg.det(a)) < _tol(np.float32, cond)
    sign, logdet = snp.linalg.slogdet(a)
    s0, l0 = np.linalg.slogdet(a)
    np.testing.assert_array_equal(sign, s0)
    np.testing.assert_allclose(logdet, l0, atol=1e-4)


def test_solve_vector_and_broadcast(mode):
    a = _matrix(1, 10.0, mode)
    b = np.arange(N, dtype=mode)
    np.testing.assert_allclose(snp.linalg.solve(a[0], b), np.linalg.solve(a[0], b), rtol=_tol(mode, 10))
    bb = np.ones((1, N, 3), mode)
    np.testing.assert_allclose(snp.linalg.solve(a, bb), np.linalg.solve(a, bb), rtol=_tol(mode, 1e3), atol=_tol(mode, 10))
    assert snp.linalg.solve(a, bb).dtype == mode


@pytest.mark.cpu_only  # (host LAPACK and BLAS are the CPU backend's)
def test_lu_of_one_matrix_slices_its_pivot_rows(cpu_blas):
    """An unbatched LU reads the pivot row and entries by dynamic slices, and inv permutes its identity by comparing:
    no gathers, whose index tensors (pieces concatenated) IREE gave 3-4 dispatches each (inv 18 -> 11, solve 17 ->
    11); with host offloads (the default) each is one call of LAPACK. Values as NumPy's (float64), on a matrix that
    pivots at every step and batched beside it."""
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((8, 8)) + np.diag(np.linspace(1e-3, 1e-2, 8))[::-1]).astype(np.float32)
    b = rng.standard_normal((8, 2)).astype(np.float32)
    a64 = a.astype(np.float64)
    values = lambda a, b, ab: (snp.linalg.inv(a), snp.linalg.solve(a, b), snp.linalg.inv(ab),  # noqa: E731
                               snp.linalg.det(a))
    # (eagerly with host offloads: LAPACK on the host, no module; the loops: one module)
    inv, x, invs, det = (values if cpu_blas else stagec.jit(values))(a, b, np.stack([a, a.T]))
    assert _err(inv, np.linalg.inv(a64)) < _tol(np.float32, np.linalg.cond(a64))
    assert _err(x, np.linalg.solve(a64, b)) < _tol(np.float32, np.linalg.cond(a64))
    assert _err(invs, np.linalg.inv(np.stack([a64, a64.T]))) < _tol(np.float32, np.linalg.cond(a64))
    assert _err(det, np.linalg.det(a64)) < _tol(np.float32, np.linalg.cond(a64))
    inv_text = stagec.jit(snp.linalg.inv).lower(a).as_text("final")
    solve_text = stagec.jit(snp.linalg.solve).lower(a, b).as_text("final")
    if cpu_blas:
        assert "call @stagec_lapack.inv_0(" in inv_text and "stablehlo.while" not in inv_text
        assert "call @stagec_lapack.solve_0(" in solve_text and "stablehlo.while" not in solve_text
        return
    assert "stablehlo.gather" not in inv_text and "stablehlo.concatenate" not in inv_text
    assert solve_text.count('"stablehlo.gather"(') == 1 and "stablehlo.concatenate" not in solve_text  # (b's rows)


def test_singular_gives_inf_or_nan(cpu_blas):
    a = np.ones((N, N), np.float32)
    values = lambda a: (snp.linalg.inv(a), snp.linalg.det(a), snp.linalg.slogdet(a))  # noqa: E731
    # (eagerly with host offloads: inv and det LAPACK's on the host, no module; the loops: one module)
    inv, det, (sign, logdet) = (values if cpu_blas else stagec.jit(values))(a)
    assert not np.all(np.isfinite(np.asarray(inv)))
    assert float(det) == 0.0
    assert float(sign) == 0 and float(logdet) == -np.inf


_both_choleskys = stagec.jit(lambda s: (snp.linalg.cholesky(s), snp.linalg.cholesky(s, upper=True)))


@SETTINGS
@given(st.sampled_from([1.0, 1e3]), st.integers(0, 2**16))
def test_cholesky(cond, seed):
    a = _matrix(seed, np.sqrt(cond), np.float32)
    spd = (a @ a.transpose(0, 2, 1)).astype(np.float32)
    L, U = _both_choleskys(spd)  # (one module)
    assert _err(L, np.linalg.cholesky(spd)) < _tol(np.float32, cond)
    np.testing.assert_allclose(np.asarray(U), np.asarray(L).transpose(0, 2, 1))


_QR_SHAPES = [(N, N), (N + 2, N), (N, N + 2)]


@functools.cache
def _qrs(dtype):
    """{shape: qr of each mode} of every shape's matrix: one module per dtype (the cache's key: called under its
    x64 mode)."""
    a = [_matrix(3, 100.0, dtype, *shape) for shape in _QR_SHAPES]
    got = stagec.jit(lambda *a: [[snp.linalg.qr(x, mode=m) for m in ("reduced", "complete", "r")] for x in a])(*a)
    return dict(zip(_QR_SHAPES, got))


@pytest.mark.parametrize("shape", _QR_SHAPES)
def test_qr(shape, mode):
    a = _matrix(3, 100.0, mode, *shape)
    got = _qrs(mode)[shape]
    for m, (q, r) in zip(("reduced", "complete"), got):
        q0, r0 = np.linalg.qr(a, mode=m)
        assert q.shape == q0.shape and r.shape == r0.shape
        assert _err(np.asarray(q) @ np.asarray(r), a) < _tol(mode)
        qq = np.asarray(q)
        assert _err(qq.conj().transpose(0, 2, 1) @ qq, np.broadcast_to(np.eye(qq.shape[-1]), (B,) + (qq.shape[-1],) * 2)) < _tol(mode)
        np.testing.assert_array_equal(np.asarray(r), np.triu(np.asarray(r)))
        assert _err(r, r0) < _tol(mode, 100) and _err(q, q0) < _tol(mode, 100)  # (LAPACK's signs)
    assert got[2].shape == np.linalg.qr(a, mode="r").shape
    if shape == (N, N):  # eagerly too
        assert _err(snp.linalg.qr(a).R, got[0][1]) < _tol(mode)


_eigh_and_eigvalsh = stagec.jit(lambda h: (snp.linalg.eigh(h), snp.linalg.eigvalsh(h)))


@SETTINGS
@given(st.sampled_from([1.0, 1e4]), st.integers(0, 2**16))
def test_eigh(cond, seed):
    a = _matrix(seed, cond, np.float32)
    h = ((a + a.transpose(0, 2, 1)) / 2).astype(np.float32)
    (w, v), vals = _eigh_and_eigvalsh(h)  # (one module)
    w0 = np.linalg.eigvalsh(h)
    assert np.max(np.abs(np.asarray(w) - w0)) < _tol(np.float32) * np.max(np.abs(w0))
    v = np.asarray(v)
    assert _err(h @ v, v * np.asarray(w)[:, None, :]) < _tol(np.float32)
    assert _err(v.transpose(0, 2, 1) @ v, np.broadcast_to(np.eye(N), (B, N, N))) < _tol(np.float32)
    np.testing.assert_allclose(vals, w)


def test_eigh_odd_complex_and_uplo(mode, cpu_blas):
    cd = np.complex128 if mode == np.float64 else np.complex64
    a = _matrix(5, 10.0, cd, N - 1)
    h = (a + a.conj().transpose(0, 2, 1)) / 2
    junk = np.triu(np.full_like(h, 7 + 1j), 1)  # NumPy's UPLO: one triangle (and the diagonal's real part) read
    lo, hi = np.tril(h) + junk + 1j * np.eye(N - 1), np.triu(h) + junk.conj().transpose(0, 2, 1)
    (w, v), *vals = stagec.jit(lambda h, lo, hi: (  # one module
        snp.linalg.eigh(h), snp.linalg.eigvalsh(lo, symmetrize_input=False),
        snp.linalg.eigvalsh(hi, "U", symmetrize_input=False), snp.linalg.eigvalsh(lo, "U")))(h, lo, hi)
    assert w.dtype == mode and v.dtype == cd
    np.testing.assert_allclose(w, np.linalg.eigvalsh(h), atol=_tol(mode))
    v = np.asarray(v)
    assert _err(h @ v, v * np.asarray(w)[:, None, :]) < _tol(mode)
    np.testing.assert_allclose(vals[0], np.linalg.eigvalsh(h), atol=_tol(mode))
    np.testing.assert_allclose(vals[1], np.linalg.eigvalsh(h), atol=_tol(mode))
    sym = (lo + lo.conj().transpose(0, 2, 1)) / 2  # JAX's default: the Hermitian part, whatever UPLO
    np.testing.assert_allclose(vals[2], np.linalg.eigvalsh(sym), atol=_tol(mode, 10))


def test_eigh_of_diagonal_and_non_finite_matrices(cpu_blas):
    """eigh's first sweep always runs: a diagonal matrix keeps its values (identity rotations), a zero one its zeros,
    and one with an infinity gives NaN eigenvalues, as NumPy's (the sweep was skipped there: [0, 1, 2, inf])."""
    for a in (np.diag([3.0, -1.0, 2.0, 0.5]), np.zeros((4, 4)), np.diag([np.inf, 1.0, 2.0, 0.0])):
        a = a.astype(np.float32)
        w, v = (np.asarray(t) for t in snp.linalg.eigh(a))
        w0 = np.linalg.eigh(a)[0]
        np.testing.assert_array_equal(np.isnan(w), np.isnan(w0))
        if np.all(np.isfinite(w0)):
            np.testing.assert_array_equal(w, w0)
            np.testing.assert_array_equal(np.abs(v), np.abs(np.linalg.eigh(a.astype(np.float64))[1]))


@pytest.mark.parametrize("scale", [1e-20, 1e20])
def test_qr_and_eigh_of_tiny_and_huge_float32_matrices(scale, cpu_blas):
    """QR and eigh of a matrix scaled by 1e-20 or 1e20 are the matrix's scaled: the loops work on a / s, s a power of
    two (QR gave Q = I and R = A's upper triangle at 1e-20, NaN at 1e20; eigh's loop was 7e-4 off and NaN)."""
    a = np.array([[1.0, 2.0], [3.0, 4.0]]) * scale
    # 4x4: the module of test_eigh_of_diagonal_and_non_finite_matrices (one compile fewer a backend)
    h = np.array([[4.0, 1.0, 0.5, 0.25], [1.0, 3.0, 1.0, 0.5], [0.5, 1.0, 2.0, 1.0], [0.25, 0.5, 1.0, 1.5]]) * scale
    q, r = (np.asarray(t, np.float64) for t in snp.linalg.qr(a.astype(np.float32)))
    q0, r0 = np.linalg.qr(a)
    np.testing.assert_allclose(r / scale, r0 / scale, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(q, q0, rtol=1e-6, atol=1e-6)
    w, v = (np.asarray(t, np.float64) for t in snp.linalg.eigh(h.astype(np.float32)))
    np.testing.assert_allclose(w / scale, np.linalg.eigvalsh(h) / scale, rtol=2e-6)
    assert np.max(np.abs(h @ v - v * w)) / np.max(np.abs(h)) < 1e-5


def test_jacobi_at_sixteen_and_more(cpu_blas):
    """Jacobi sweeps past the 4x4 of the other tests (more rounds per sweep, more sweeps): complex eigh at 16
    (the rounding's anti-Hermitian part once stalled it there, with errors ~0.5), real eigh at 17 (odd: padded),
    svd of an ill-conditioned 18x16, against float64 LAPACK. One module."""
    rng = np.random.default_rng(3)
    c = rng.standard_normal((16, 16)) + 1j * rng.standard_normal((16, 16))
    hc = ((c + c.conj().T) / 2).astype(np.complex64)
    r = rng.standard_normal((17, 17))
    hr = ((r + r.T) / 2).astype(np.float32)
    a = _matrix(4, 1e5, np.float32, 18, 16)[0]
    (wc, vc), (wr, vr), (u, s, vh) = stagec.jit(lambda hc, hr, a: (
        snp.linalg.eigh(hc), snp.linalg.eigh(hr), snp.linalg.svd(a, full_matrices=False)))(hc, hr, a)
    for h, w, v in ((hc, wc, vc), (hr, wr, vr)):
        w, v, w0 = np.asarray(w), np.asarray(v), np.linalg.eigvalsh(h.astype(np.complex128))
        assert np.max(np.abs(w - w0)) < _tol(np.float32) * np.max(np.abs(w0))
        assert _err(h @ v, v * w) < _tol(np.float32)
        assert _err(v.conj().T @ v, np.eye(len(w))) < _tol(np.float32)
    s0 = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    assert np.max(np.abs(np.asarray(s) - s0)) < 50 * np.finfo(np.float32).eps * s0.max()
    u, vh = np.asarray(u), np.asarray(vh)
    assert _err((u * np.asarray(s)) @ vh, a) < _tol(np.float32)
    assert _err(u.T @ u, np.eye(16)) < _tol(np.float32)
    assert _err(vh @ vh.T, np.eye(16)) < _tol(np.float32)


@SETTINGS
@given(st.sampled_from([1.0, 1e3, 1e6]), st.integers(0, 2**16))
def test_svdvals_vs_lapack(cond, seed):
    a = _matrix(seed, cond, np.float32)
    s = snp.linalg.svdvals(a)
    s0 = np.linalg.svd(a.astype(np.float64), compute_uv=False)  # exact singular values of the float32 input
    s32 = np.linalg.svd(a, compute_uv=False)  # LAPACK in float32
    err, lapack_err = np.max(np.abs(np.asarray(s) - s0)), np.max(np.abs(s32 - s0))
    assert err < 50 * np.finfo(np.float32).eps * s0.max()
    assert err < 10 * max(lapack_err, np.finfo(np.float32).eps * s0.max())


_SVD_SHAPES = [(N, N), (N + 2, N - 1), (N - 1, N + 2)]


@functools.cache
def _svds(dtype):
    """{shape: (full svd, reduced svd)} of every shape's matrix: one module per dtype (called under its x64 mode)."""
    a = [_matrix(7, 100.0, dtype, *shape) for shape in _SVD_SHAPES]
    got = stagec.jit(lambda *a: [[snp.linalg.svd(x, full_matrices=full) for full in (True, False)] for x in a])(*a)
    return dict(zip(_SVD_SHAPES, got))


@pytest.mark.parametrize("shape", _SVD_SHAPES)
def test_svd_shapes(shape, mode):
    a = _matrix(7, 100.0, mode, *shape)
    both = _svds(mode)[shape]
    for full, (u, s, vh) in zip((True, False), both):
        u0, s0, vh0 = np.linalg.svd(a, full_matrices=full)
        assert (u.shape, s.shape, vh.shape) == (u0.shape, s0.shape, vh0.shape)
        k = s.shape[-1]
        u, s, vh = map(np.asarray, (u, s, vh))
        assert _err((u[..., :k] * s[:, None, :]) @ vh[:, :k], a) < _tol(mode)
        for q in (u, vh.conj().transpose(0, 2, 1)):  # orthonormal columns of U and rows of Vh
            assert _err(q.conj().transpose(0, 2, 1) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:1] + (q.shape[-1],) * 2)) < _tol(mode)
        np.testing.assert_allclose(s, s0, rtol=_tol(mode, 100))


def test_svd_rank_deficient_complex():
    a = _matrix(9, 10.0, np.complex64, N, 2) @ _matrix(10, 10.0, np.complex64, 2, N)  # rank 2
    u, s, vh = map(np.asarray, snp.linalg.svd(a))
    assert _err((u * s[:, None, :]) @ vh, a) < _tol(np.float32, 10)
    assert _err(u.conj().transpose(0, 2, 1) @ u, np.broadcast_to(np.eye(N), (B, N, N))) < _tol(np.float32)
    assert int(snp.linalg.matrix_rank(a[0])) == 2


def test_svd_of_one_complex_matrix():
    """Unbatched complex SVD, square and full (IREE 3.13 could not compile the one-loop Householder Q for one complex
    matrix: a batch of two compiled). Against NumPy's singular values, U S Vh and orthonormality."""
    rng = np.random.default_rng(5)
    mats = [(rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(np.complex64) for s in ((4, 4), (6, 2))]
    got = stagec.jit(lambda a, b: [snp.linalg.svd(a), snp.linalg.svd(b, full_matrices=True)])(*mats)
    for a, (u, s, vh) in zip(mats, got):
        u, s, vh = map(np.asarray, (u, s, vh))
        np.testing.assert_allclose(s, np.linalg.svd(a.astype(np.complex128), compute_uv=False), rtol=1e-5)
        assert _err((u[:, :s.size] * s) @ vh, a) < _tol(np.float32)
        assert _err(u.conj().T @ u, np.eye(a.shape[0])) < _tol(np.float32)


@contextlib.contextmanager
def _sweeps():
    """The CPU's modules without host offloads: svd as the Jacobi sweeps every other target runs (with `cpu_blas`,
    the CPU's default, LAPACK's gesdd on the host answers it)."""
    stagec.config.update("cpu_blas", False)
    try:
        yield
    finally:
        stagec.config.update("cpu_blas", True)


@pytest.mark.parametrize("shape", [(6, 6), (8, 5)])
def test_svd_zero_singular_values_real(shape):
    """Exact zero singular values (zero and repeated columns) of a real matrix: U is completed to an orthonormal
    basis, by LAPACK (the CPU's default) and by the sweeps: square, by the Jacobi loops' stand-ins for zero columns
    (2 loops, no QR); full and tall, by one Householder loop after the Jacobi loops (3 loops, where the two-loop QR
    made 4)."""
    a = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    a[:, 1], a[:, 3] = 0, a[:, 0]  # rank n - 2
    for sweeps in (False, True):
        with _sweeps() if sweeps else contextlib.nullcontext():
            u, s, vh = map(np.asarray, snp.linalg.svd(a))
            np.testing.assert_allclose(s, np.linalg.svd(a.astype(np.float64), compute_uv=False), atol=_tol(np.float32))
            assert _err((u[:, :s.size] * s) @ vh, a) < _tol(np.float32)
            assert _err(u.T @ u, np.eye(shape[0])) < _tol(np.float32)
            assert _err(vh @ vh.T, np.eye(shape[1])) < _tol(np.float32)
            loops = stagec.jit(snp.linalg.svd).lower(a).as_text("final").count("stablehlo.while")
            lapack = not sweeps and stagec.config.default_backend == "cpu"  # (host LAPACK: the CPU's; elsewhere sweeps)
            assert loops == (0 if lapack else 2 if shape[0] == shape[1] else 3)


@pytest.mark.parametrize("scale", [1e-30, 1e-22, 1e19, 3e19])
@pytest.mark.parametrize("kind", ["square", "tall", "complex"])
def test_svd_of_tiny_and_huge_float32_matrices(scale, kind):
    """The sweeps square entries: past ~1e-19 and ~1e19 they under- and overflowed in float32 (a 1e-22 matrix's
    singular values came out 0, silently; 1e19 gave NaN). Square, tall with full U, complex, values only: against
    NumPy's float64, relative to the largest singular value."""
    rng = np.random.default_rng(4)
    cases = {"square": lambda: rng.standard_normal((6, 6)), "tall": lambda: rng.standard_normal((7, 4)),
             "complex": lambda: rng.standard_normal((5, 5)) + 1j * rng.standard_normal((5, 5))}
    a = cases[kind]()
    a = (a * scale).astype(np.complex64 if np.iscomplexobj(a) else np.float32)
    s0 = np.linalg.svd(a.astype(np.complex128 if np.iscomplexobj(a) else np.float64), compute_uv=False)
    u, s, vh = map(np.asarray, snp.linalg.svd(a))
    assert np.max(np.abs(s - s0)) < _tol(np.float32) * s0[0], (a.shape, s, s0)
    assert np.max(np.abs((u[:, :s.size] * s) @ vh - a)) < _tol(np.float32) * s0[0]
    assert np.max(np.abs(np.asarray(snp.linalg.svd(a, compute_uv=False)) - s0)) < _tol(np.float32) * s0[0]


def test_svd_zero_singular_values_large():
    """Past EYE_LITERAL elements the sweeps' stand-ins for zero columns are computed from iotas (a literal below): U
    is still complete and orthonormal, the zero singular values 0; LAPACK's (the CPU's default) as small as its
    rounding."""
    from stagec.numpy import linalg as L
    a = np.random.default_rng(1).standard_normal((130, 130)).astype(np.float32)
    a[:, 5], a[:, 9], a[:, 7] = 0, 0, a[:, 2]
    assert a.size > L.EYE_LITERAL
    s0 = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    for sweeps in (False, True):
        with _sweeps() if sweeps else contextlib.nullcontext():
            u, s, vh = map(np.asarray, snp.linalg.svd(a))
        assert np.max(np.abs(s - s0)) < _tol(np.float32, 10) * s0[0]
        assert np.sum(s == 0) == 2 if sweeps else np.all(s[-3:] < _tol(np.float32) * s0[0])
        assert _err((u * s) @ vh, a) < _tol(np.float32, 10)
        assert _err(u.T @ u, np.eye(130)) < _tol(np.float32) and _err(vh @ vh.T, np.eye(130)) < _tol(np.float32, 10)


def test_pinv_lstsq_rank(mode):
    a = _matrix(11, 10.0, mode, N + 2, N - 1)
    b = np.arange(N + 2, dtype=mode)
    pinv, (x, res, rank, s), ranks = stagec.jit(lambda a, b: (  # one module
        snp.linalg.pinv(a), snp.linalg.lstsq(a[0], b), snp.linalg.matrix_rank(a)))(a, b)
    np.testing.assert_allclose(pinv, np.linalg.pinv(a), atol=_tol(mode, 100))
    x0, res0, rank0, s0 = np.linalg.lstsq(a[0], b)
    np.testing.assert_allclose(x, x0, atol=_tol(mode, 100))
    np.testing.assert_allclose(res, res0, rtol=1e-3)
    assert int(rank) == rank0
    np.testing.assert_array_equal(ranks, np.linalg.matrix_rank(a))


_MATRIX_ORDS = (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)
_VECTOR_ORDS = (None, 0, 1, 2, 3, np.inf, -np.inf)


def _all_norms(m, a):
    """Every norm the test checks, of `a` (B, N, N), by module `m` (snp or np)."""
    return {"norm": [m.linalg.norm(a[0], o) for o in _MATRIX_ORDS],
            "matrix_norm": [m.linalg.matrix_norm(a, ord=o) for o in _MATRIX_ORDS[1:]],
            "norm axis 1": [m.linalg.norm(a, o, axis=1) for o in _VECTOR_ORDS],
            "vector_norm": m.linalg.vector_norm(a, axis=(0, 2), keepdims=True), "all": m.linalg.norm(a)}


def test_norms(mode):
    a = _matrix(13, 10.0, mode)
    got, want = stagec.jit(lambda a: _all_norms(snp, a))(a), _all_norms(np, a)  # one module (the svds shared)
    for k, o in enumerate(_MATRIX_ORDS):
        np.testing.assert_allclose(got["norm"][k], want["norm"][k], rtol=_tol(mode, 10), err_msg=str(o))
    for k, o in enumerate(_MATRIX_ORDS[1:]):
        np.testing.assert_allclose(got["matrix_norm"][k], want["matrix_norm"][k], rtol=_tol(mode, 10), err_msg=str(o))
    for k, o in enumerate(_VECTOR_ORDS):
        np.testing.assert_allclose(got["norm axis 1"][k], want["norm axis 1"][k], rtol=_tol(mode), err_msg=str(o))
    np.testing.assert_allclose(got["vector_norm"], want["vector_norm"], rtol=_tol(mode))
    np.testing.assert_allclose(got["all"], want["all"], rtol=_tol(mode))
    assert all(np.asarray(g).dtype == mode for g in [*got["norm"], got["all"]])


def _products_and_views(m, a, x, y, mats):
    return [m.linalg.matrix_power(a, 3), m.linalg.matrix_power(a, -2), m.linalg.matrix_power(a, 0),
            m.linalg.cross(x, y), m.linalg.cross(x.T, y.T, axis=0), m.linalg.outer(x[0], y[0]),
            m.linalg.trace(a, offset=1), m.linalg.diagonal(a, offset=-1), m.linalg.multi_dot(mats),
            m.linalg.tensordot(a, a, ([1, 2], [1, 2]))]


def test_products_and_views():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((B, N, N)).astype(np.float32)
    x, y = rng.standard_normal((2, 3, 3)).astype(np.float32)
    mats = [rng.standard_normal(s).astype(np.float32) for s in ((N,), (N, 2), (2, N), (N,))]
    got = stagec.jit(lambda *v: _products_and_views(snp, *v))(a, x, y, mats)  # one module
    # (NumPy's trace and diagonal over the last two axes, as snp.linalg's)
    want = [np.linalg.matrix_power(a, 3), np.linalg.matrix_power(a, -2), np.broadcast_to(np.eye(N), a.shape),
            np.cross(x, y), np.cross(x.T, y.T, axis=0), np.outer(x[0], y[0]), np.trace(a, 1, -2, -1),
            np.diagonal(a, -1, -2, -1), np.linalg.multi_dot(mats), np.tensordot(a, a, ([1, 2], [1, 2]))]
    for i, (g, w, rtol) in enumerate(zip(got, want, (1e-4, 1e-3, 0, 1e-5, 1e-5, 1e-7, 1e-6, 0, 1e-5, 1e-5))):
        if rtol:
            np.testing.assert_allclose(g, w, rtol=rtol, err_msg=str(i))
        else:
            np.testing.assert_array_equal(g, w, err_msg=str(i))
    np.testing.assert_allclose(snp.linalg.matrix_power(a, 3), want[0], rtol=1e-4)  # and eagerly


def test_identities_are_literal_constants():
    """The identities the algorithms start from (svd's V, eigh's V, qr's Q, inv's right-hand side) are literal
    constants up to `EYE_LITERAL` elements, not iota expressions IREE hoists into two dispatches of their own;
    the results as NumPy's float64 ones. (The loops: the modules of every target but the CPU's with `cpu_blas`, whose
    host calls answer these.)"""
    from stagec.numpy import linalg as L
    a = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32)
    spd = (a @ a.T + 64 * np.eye(64)).astype(np.float32)
    big = np.random.default_rng(4).standard_normal((130, 130)).astype(np.float32)
    with _sweeps():
        for name, f, x in (("svd", snp.linalg.svd, a), ("eigh", snp.linalg.eigh, spd), ("qr", snp.linalg.qr, a),
                           ("inv", snp.linalg.inv, spd)):
            text = stagec.jit(f).lower(x).as_text("final")
            assert "stablehlo.while" in text and "iota dim = 0 : tensor<64x64xi32>" not in text, name
        assert 130 * 130 > L.EYE_LITERAL and "iota" in stagec.jit(snp.linalg.qr).lower(big).as_text("final")
    x64 = a.astype(np.float64)
    u, s, vh = (np.asarray(t) for t in snp.linalg.svd(a))
    np.testing.assert_allclose(s, np.linalg.svd(x64, compute_uv=False), atol=5e-5 * s[0])
    np.testing.assert_allclose((u * s) @ vh, x64, atol=5e-5 * s[0])
    w, v = (np.asarray(t) for t in snp.linalg.eigh(spd))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(spd.astype(np.float64)), rtol=2e-5)
    np.testing.assert_allclose(v.T @ v, np.eye(64), atol=5e-5)
    q, r = (np.asarray(t) for t in snp.linalg.qr(a))
    np.testing.assert_allclose(q @ r, x64, atol=5e-5)
    np.testing.assert_allclose(np.asarray(snp.linalg.inv(spd)) @ spd.astype(np.float64), np.eye(64), atol=5e-5)


def test_under_jit_and_errors():
    a = _matrix(17, 10.0, np.float32)
    f = stagec.jit(lambda m: (snp.linalg.det(m), snp.linalg.eigh(m + m.transpose(0, 2, 1)).eigenvalues))
    d, w = f(a)
    np.testing.assert_allclose(d, np.linalg.det(a), rtol=1e-4)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a + a.transpose(0, 2, 1)), atol=1e-5)
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        snp.linalg.inv(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="float16"):
        snp.linalg.det(np.ones((2, 2), np.float16))
    assert snp.linalg.det(np.eye(N, dtype=np.int32)).dtype == np.float32


# ---------------------------------------------------------------- differentiation and vmap (JAX's rules)

_rng = np.random.default_rng(7)
_A = _rng.standard_normal((N, N)).astype(np.float32)
_SPD = (_A @ _A.T + N * np.eye(N)).astype(np.float32)
_T = _rng.standard_normal((5, 3)).astype(np.float32)
_W = _rng.standard_normal((N, N)).astype(np.float32)
_Bm = _rng.standard_normal((N, 2)).astype(np.float32)
_GRADS = {  # name: (real-valued function of (module, matrix), the matrix)
    "solve": (lambda m, a: m.sum(m.linalg.solve(a, _Bm) * _Bm[:, ::-1]), _A),
    "inv": (lambda m, a: m.sum(m.linalg.inv(a) * _W), _A),
    "det": (lambda m, a: m.linalg.det(a), _A),
    "slogdet": (lambda m, a: m.linalg.slogdet(a)[1], _A),
    "cholesky": (lambda m, a: m.sum(m.linalg.cholesky(a) * _W), _SPD),
    "eigh": (lambda m, a: m.sum(m.linalg.eigh(a)[0] * m.arange(4.0)) + m.sum(m.abs(m.linalg.eigh(a)[1][:, 0]) * _W[0]),
             _SPD),
    "svd": (lambda m, a: m.sum(m.linalg.svd(a, full_matrices=False)[1] ** 2 * m.arange(3.0))
            + m.sum(m.abs(m.linalg.svd(a, full_matrices=False)[0]) * _T), _T),
    "svd_wide": (lambda m, a: m.sum(m.abs(m.linalg.svd(a.T, full_matrices=False)[2]) * _T.T), _T),
    "qr": (lambda m, a: m.sum(m.linalg.qr(a)[0] * _T) + m.sum(m.linalg.qr(a)[1] * _W[:3, :3]), _T),
    "pinv_norm": (lambda m, a: m.sum(m.linalg.pinv(a) * _T.T) + m.linalg.norm(a, "nuc"), _T),
}


_SYMMETRIZED = ("cholesky", "eigh")  # (their input is taken as (a + a^H) / 2, as JAX's are: so is the derivative)


@functools.cache
def _all_grads():
    """`_grads_once`'s values, or what it raised (a --fast skip at the compile), again: its trace took 3-4 s, once
    for each of the 21 tests that read it."""
    got = _grads_once()
    if isinstance(got, BaseException):
        raise got
    return got


@functools.cache
def _grads_once():
    try:
        return _grads()
    except (Exception, pytest.skip.Exception) as e:
        return e


def _grads():
    """{name: (grad(vmap(f)), vmap(grad(f)), grad(f) at x)} of every `_GRADS` case, the first two at x and x
    reversed: one module (their loops compile faster together than in a module each)."""
    def one(f, b):
        fn = lambda a: f(snp, a)  # noqa: E731
        return (stagec.grad(lambda c: snp.sum(stagec.vmap(fn)(c)))(b), stagec.vmap(stagec.grad(fn))(b),
                stagec.grad(fn)(b[0]))
    xs = {name: np.stack([x, x[::-1, ::-1]]) for name, (_, x) in _GRADS.items()}
    return stagec.jit(lambda xs: {name: one(_GRADS[name][0], b) for name, b in xs.items()})(xs)


def _central_differences(name, x, h=1e-6):
    """d f / d x of `_GRADS[name]` by central differences of NumPy's float64 linalg."""
    f = lambda a: float(_GRADS[name][0](np, (a + a.T) / 2 if name in _SYMMETRIZED else a))  # noqa: E731
    x, g = x.astype(np.float64), np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("name", sorted(_GRADS))
def test_grad_against_jax(name):
    jax = pytest.importorskip("jax")
    f, x = _GRADS[name]
    got = _all_grads()[name][2]  # (grad(f) at x, in the module of the next test)
    want = np.asarray(jax.grad(lambda a: f(jax.numpy, a))(x))
    assert _err(got, want) < 2e-5


@pytest.mark.parametrize("name", sorted(_GRADS))
def test_grad_of_vmap_and_vmap_of_grad(name):
    """The custom_jvp rules, and batched: grad(f), grad(vmap(f)) and vmap(grad(f)) give grad(f) of each example,
    against central differences of NumPy's float64 functions."""
    x = _GRADS[name][1]
    want = np.stack([_central_differences(name, x), _central_differences(name, x[::-1, ::-1])])
    *both, one = _all_grads()[name]
    for got in both:
        assert _err(got, want) < 2e-5
    assert _err(one, want[0]) < 2e-5


def test_grad_complex_against_jax():
    jax = pytest.importorskip("jax")
    z = (_A + 1j * _W).astype(np.complex64)
    h = (z @ z.conj().T + N * np.eye(N)).astype(np.complex64)

    def f(m, a, s, t):  # t: s again (complex cholesky and eigh grads of one matrix fail to compile: docs/linalg.md)
        return (m.sum(m.abs(m.linalg.solve(a, _Bm.astype(np.complex64))) ** 2) + m.real(m.linalg.slogdet(a)[1])
                + m.sum(m.real(m.linalg.cholesky(s)) * _W) + m.sum(m.linalg.eigvalsh(t) * m.arange(4.0)))
    want = jax.grad(lambda *x: f(jax.numpy, *x), argnums=(0, 1, 2))(z, h, h)
    got = stagec.jit(stagec.grad(lambda *x: f(snp, *x), argnums=(0, 1, 2)))(z, h, h)
    for g, w in zip(got, want):
        assert _err(g, np.asarray(w)) < 1e-4


def test_jvp_against_finite_differences(mode):
    if mode is np.float32:
        pytest.skip("central differences need float64")
    a, s, t = _A.astype(np.float64), _SPD.astype(np.float64), _T.astype(np.float64)

    def f(a, s, t):
        q, r = snp.linalg.qr(t)
        u, sv, vh = snp.linalg.svd(t, full_matrices=False)
        w, v = snp.linalg.eigh(s)
        return (snp.linalg.solve(a, _Bm), snp.linalg.det(a), snp.linalg.slogdet(a)[1], snp.linalg.cholesky(s), w,
                v * snp.sign(v[:1]), q, r, sv, u * snp.sign(u[:1]), vh * snp.sign(u[0])[:, None])
    rng = np.random.default_rng(1)
    dirs = tuple(rng.standard_normal(x.shape) for x in (a, s, t))
    dirs = (dirs[0], dirs[1] + dirs[1].T, dirs[2])
    h = 1e-6
    plus, minus = (tuple(x + sign * h * d for x, d in zip((a, s, t), dirs)) for sign in (1, -1))
    tangents, fp, fm = stagec.jit(lambda p, pp, pm: (stagec.jvp(f, p, dirs)[1], f(*pp), f(*pm)))(  # (one module)
        (a, s, t), plus, minus)
    fd = [(np.asarray(p) - np.asarray(m)) / (2 * h) for p, m in zip(fp, fm)]
    for i, (got, want) in enumerate(zip(tangents, fd)):
        assert _err(got, want) < 1e-6, i


@pytest.mark.parametrize("symmetrize_input", [True, False])
def test_one_triangle_or_hermitian_part(symmetrize_input, x64):
    """cholesky/eigh of a non-symmetric matrix, both triangles: values as NumPy's of the matrix read (the Hermitian
    part, or one triangle), jvp along a non-symmetric tangent and grad as central differences of that function."""
    rng = np.random.default_rng(3)
    a = _SPD.astype(np.float64) + rng.standard_normal((N, N))  # each triangle's mirror, and the sym. part, SPD
    sym = symmetrize_input

    def f(a):
        w, v = snp.linalg.eigh(a, symmetrize_input=sym)
        wu, vu = snp.linalg.eigh(a, "U", symmetrize_input=sym)
        return (snp.linalg.cholesky(a, symmetrize_input=sym), snp.linalg.cholesky(a, upper=True, symmetrize_input=sym),
                w, v * snp.sign(v[:1]), wu, vu * snp.sign(vu[:1]))
    read = (a + a.T) / 2 if sym else a
    w, v = np.linalg.eigh(read)
    wu, vu = np.linalg.eigh(read, "U")
    want = (np.linalg.cholesky(read), np.linalg.cholesky(read, upper=True), w, v * np.sign(v[:1]), wu,
            vu * np.sign(vu[:1]))
    d = rng.standard_normal((N, N))  # not symmetric
    weights = [rng.standard_normal(np.shape(x)) for x in want]  # (f's shapes)
    loss = lambda a: sum(snp.sum(x * w) for x, w in zip(f(a), weights))  # noqa: E731
    eps = 1e-6
    got, fp, fm, tangents, g, gs = stagec.jit(lambda a, ap, am, aa: (  # one module (the forward loops shared)
        f(a), f(ap), f(am), stagec.jvp(f, (a,), (d,))[1], stagec.grad(loss)(a), stagec.vmap(stagec.grad(loss))(aa)))(
        a, a + eps * d, a - eps * d, np.stack([a, a]))
    for i, (g_, w) in enumerate(zip(got, want)):
        assert _err(g_, w) < 1e-12, i
    if not sym:  # NumPy reads one triangle: here they differ
        assert _err(want[0], want[1].T) > 1e-2 and _err(want[2], want[4]) > 1e-2
    fd = [(np.asarray(p) - np.asarray(m)) / (2 * eps) for p, m in zip(fp, fm)]
    for i, (t, want) in enumerate(zip(tangents, fd)):
        assert _err(t, want) < 1e-6, i
    g = np.asarray(g)
    assert abs(np.sum(g * d) - sum(np.sum(t * w) for t, w in zip(fd, weights))) < 1e-6 * np.abs(g).sum()
    assert _err(gs, np.stack([g, g])) < 1e-12


def test_vmap_of_decompositions_and_of_their_gradients():
    a = _matrix(3, 10.0, np.float32)  # (B, N, N)
    s = (a @ a.transpose(0, 2, 1) + np.eye(N)).astype(np.float32)
    b = s[:, 0]
    cases = [(snp.linalg.solve, (a, b), np.linalg.solve(a, b[..., None])[..., 0]),
             (snp.linalg.cholesky, (s,), np.linalg.cholesky(s)),
             (lambda x: snp.linalg.svd(x)[1], (a,), np.linalg.svd(a)[1]),
             (snp.linalg.det, (a,), np.linalg.det(a))]
    for i, (fn, args, want) in enumerate(cases):  # one module each: IREE 3.13 fails on some bigger modules
        assert _err(stagec.jit(stagec.vmap(fn))(*args), want) < 1e-4, i
    jax = pytest.importorskip("jax")

    def loss(m, x, y):
        return m.sum(m.linalg.solve(x, y[0])) + m.linalg.slogdet(x)[1] + m.sum(m.linalg.eigvalsh(y) ** 2)
    got = stagec.jit(stagec.vmap(stagec.grad(lambda x, y: loss(snp, x, y), argnums=(0, 1))))(a, s)
    want = jax.vmap(jax.grad(lambda x, y: loss(jax.numpy, x, y), argnums=(0, 1)))(a, s)
    for g, w in zip(got, want):
        assert _err(g, np.asarray(w)) < 1e-4


def test_eager_gradients_of_singular_value_norms():
    """Eager `grad` of the spectral and nuclear norms (svd's Jacobi loop, differentiated): IREE 3.13's runtime
    refused the loop's kernel ("ref is null"). Oracle: NumPy's SVD, d||A||_2 = u1 v1^T, d||A||_* = U V^T."""
    a = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.5, 1.0, 4.0]], np.float32)
    u, _, vt = np.linalg.svd(a.astype(np.float64))
    g2 = stagec.grad(lambda x: snp.linalg.norm(x, 2))(a)
    gn = stagec.grad(lambda x: snp.linalg.norm(x, "nuc"))(a)
    np.testing.assert_allclose(np.asarray(g2), np.outer(u[:, 0], vt[0]), atol=2e-6)
    np.testing.assert_allclose(np.asarray(gn), u @ vt, atol=2e-6)


def _cofactors(a):
    """The cofactor matrix (d det / d a) in complex128, from NumPy's determinants of the minors."""
    a = np.asarray(a, np.complex128)
    n = a.shape[-1]
    return np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) for j in range(n)]
                     for i in range(n)])


def test_det_derivative_at_singular_matrices_is_the_cofactor_matrix():
    """d det / dA = cof(A), finite at a singular matrix too (det * A^-1 was 0 * inf = NaN): rank n-1 with the zero
    pivot first, last or in the middle, rank n-2, zero, and a regular one; eager, jitted, batched; complex jvp."""
    mats = [[[0, 1, 0], [0, 1, 0], [0, 0, 2]], [[1, 2, 3], [2, 4, 6], [1, 0, 1]], [[0, 0, 1], [0, 1, 0], [0, 0, 1]],
            [[1, 2, 3], [2, 4, 6], [3, 6, 9]], [[0, 0, 0], [0, 0, 0], [0, 0, 0]], [[2, 1, 0], [1, 3, 1], [0.5, 1, 4]]]
    a = np.array(mats, np.float32)
    want = np.array([_cofactors(m).real for m in a])
    g = stagec.grad(snp.linalg.det)
    for i, m in enumerate(a):
        np.testing.assert_allclose(np.asarray(g(m)), want[i], atol=1e-5)
    np.testing.assert_allclose(np.asarray(stagec.jit(stagec.vmap(g))(a)), want, atol=1e-5)
    c = (a + 1j * a[::-1]).astype(np.complex64)
    c[1] = a[1]
    t = stagec.jvp(snp.linalg.det, (c,), (np.ones_like(c),))[1]
    np.testing.assert_allclose(np.asarray(t), [_cofactors(m).sum() for m in c], atol=2e-5)


def test_det_second_derivative_is_exact_or_nan_never_plausible():
    """det's Hessian: at a regular matrix the closed form (2x2: d2 det / da_ij da_kl = +-1 on the anti-diagonal
    pairs); at a singular one NaN (the adjugate's rule divides by det), not the values differentiating through the
    LU's pivots gave (-2, 1, -0.5 among the entries at [[1, 2], [2, 4]])."""
    h = stagec.hessian(snp.linalg.det)
    want = np.zeros((2, 2, 2, 2))
    want[0, 0, 1, 1] = want[1, 1, 0, 0] = 1
    want[0, 1, 1, 0] = want[1, 0, 0, 1] = -1
    np.testing.assert_allclose(np.asarray(h(np.array([[2.0, 1.0], [1.0, 3.0]], np.float32))), want, atol=1e-6)
    assert np.isnan(np.asarray(h(np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)))).all()


def test_scipy_cholesky_reads_one_triangle():
    """scipy.linalg's cholesky, cho_factor/cho_solve and solve(assume_a='pos') read only the chosen triangle (SciPy's
    and JAX's rule): junk in the other one changes nothing (it was averaged in: silently another matrix)."""
    from stagec.scipy import linalg as sl
    h = _SPD.astype(np.float64)
    lower_junk, upper_junk = (h + np.tril(_W, -1)).astype(np.float32), (h + np.triu(_W, 1)).astype(np.float32)
    got = stagec.jit(lambda lj, uj, b: (
        sl.cholesky(uj, lower=True), sl.cholesky(lj), sl.cho_solve(sl.cho_factor(lj), b),
        sl.solve(uj, b, assume_a="pos", lower=True)))(lower_junk, upper_junk, _Bm)
    low, x = np.linalg.cholesky(h), np.linalg.solve(h, _Bm.astype(np.float64))
    for g, w in zip(got, (low, low.T, x, x)):
        assert _err(g, w) < 1e-5


def test_lstsq_residuals_for_every_shape_and_rank():
    """JAX's lstsq returns the residuals' squared norms whatever the shape and rank (NumPy's are empty where M <= N
    or below full rank: stagec gave those, shape (0,)); `numpy_resid=True` gives NumPy's empty ones where M <= N."""
    a = _matrix(5, 10.0, np.float32)[0]
    a[:, 0] = 0  # rank 3 of 4
    w, bw = _T.T.copy(), _Bm[:3]  # wide (3, 5): full row rank, residuals 0
    (x, r, k, _), (_, rw, _, _), (_, rn, _, _) = stagec.jit(lambda a, b, w, bw: (
        snp.linalg.lstsq(a, b), snp.linalg.lstsq(w, bw), snp.linalg.lstsq(w, bw, numpy_resid=True)))(a, _Bm, w, bw)
    a64 = a.astype(np.float64)
    x0 = np.linalg.lstsq(a64, _Bm, rcond=None)[0]
    assert _err(x, x0) < 1e-5 and int(k) == 3
    assert _err(r, np.sum((_Bm - a64 @ x0) ** 2, axis=0)) < 1e-5
    assert rw.shape == (2,) and np.max(np.abs(rw)) < 1e-8 and rn.shape == (0,)


def test_batch_of_no_matrices():
    """A (0, m, n) batch: the Jacobi loops' convergence test reduced over no matrices raised (max of nothing)."""
    a, s = np.zeros((0, 4, 3), np.float32), np.zeros((0, 3, 3), np.complex64)
    f = lambda m, a, s: (*m.linalg.svd(a), m.linalg.pinv(a), m.linalg.matrix_rank(a), *m.linalg.eigh(s))  # noqa: E731
    dg = stagec.grad(lambda a, s: snp.sum(snp.linalg.svdvals(a)) + snp.sum(snp.linalg.eigvalsh(s)), argnums=(0, 1))
    values, g = stagec.jit(lambda a, s: (f(snp, a, s), dg(a, s)))(a, s)  # (one module: the values and the gradient)
    for got, want in zip(values, f(np, a, s)):
        assert got.shape == want.shape
    assert [x.shape for x in g] == [a.shape, s.shape]


@pytest.mark.parametrize("placed", [False, True])
def test_complex_gradient_of_a_triangular_solve(placed, monkeypatch):
    """grad of a complex solve_triangular (its loop transposed: updates of a zero tensor, which IREE 3.13 raised to
    a complex pad and failed to compile; legalize's complex-pads-in-parts) against the closed form: f = sum(re x),
    x = T^-1 b, df = re(-u^T dT x) with u = T^-T 1, so JAX's gradient (df/d re - i df/d im) is -u x^T on T's lower
    triangle. `placed`: its loop placed on the device as a larger one would be (`loops-on-one-device`), two of its
    carries starting from one complex value IREE folds to zeros (copies whose select IREE folded shared a buffer)."""
    from stagec.scipy import linalg as sl
    import stagec.passes.legalize as legalize
    if placed:
        monkeypatch.setattr(legalize, "PLACED_BYTES", 0)
    t = np.tril(_A + 1j * _W + 4 * np.eye(N)).astype(np.complex64)
    b = (_Bm[:, 0] + 1j * _Bm[:, 1]).astype(np.complex64)
    got = stagec.jit(stagec.grad(lambda t: snp.sum(snp.real(sl.solve_triangular(t, b, lower=True)))))(t)
    t64 = t.astype(np.complex128)
    want = np.tril(-np.outer(np.linalg.solve(t64.T, np.ones(N)), np.linalg.solve(t64, b)))
    assert _err(got, want) < 1e-5


def test_qr_as_lapack_and_its_wide_and_complete_jvps(x64):
    """Q and R are LAPACK's (R's diagonal real: it was -phase(alpha) ||x||, complex, and the last row of a square or
    wide real R had the other sign), and JAX's JVP rules for wide matrices and complete Q (m > n) against central
    differences of NumPy's QR in float64 (complex too: the rule holds for LAPACK's reflectors)."""
    rng = np.random.default_rng(5)
    cases = [((3, 5), "reduced", False), ((5, 3), "complete", False), ((5, 3), "complete", True), ((3, 5), "r", True),
             ((4, 4), "reduced", True)]
    xs = [rng.standard_normal(s) + (1j * rng.standard_normal(s) if c else 0) for s, _, c in cases]
    ds = [rng.standard_normal(x.shape) + (1j * rng.standard_normal(x.shape) if c else 0) for x, (_, _, c) in zip(xs, cases)]
    qr = lambda m, x, mode: tuple(m.linalg.qr(x, mode)) if mode != "r" else (m.linalg.qr(x, mode),)  # noqa: E731
    got = stagec.jit(lambda xs, ds: [stagec.jvp(lambda x: qr(snp, x, mode), (x,), (d,))
                                     for x, d, (_, mode, _) in zip(xs, ds, cases)])(xs, ds)
    h = 1e-6
    for (vals, tans), x, d, (_, mode, _) in zip(got, xs, ds, cases):
        for g, w in zip(vals, qr(np, x, mode)):
            assert _err(g, w) < 1e-12
        for g, p, m in zip(tans, qr(np, x + h * d, mode), qr(np, x - h * d, mode)):
            assert _err(g, (p - m) / (2 * h)) < 1e-6


def test_tensorinv_tensorsolve_and_eig_named():
    """tensorinv and tensorsolve (JAX's and NumPy's; they were missing: AttributeError) against NumPy; eig and eigvals
    raise NotInStagec naming what to use."""
    a = (np.kron(_A, _A[:2, :2] + 3 * np.eye(2)) + 8 * np.eye(2 * N)).astype(np.float32)  # (8, 8)
    b = np.arange(8, dtype=np.float32)
    got = stagec.jit(lambda a, b: (snp.linalg.tensorinv(a.reshape(2, 4, 8), ind=2),
                                   snp.linalg.tensorsolve(a.reshape(2, 4, 4, 2), b.reshape(2, 4)),
                                   snp.linalg.tensorsolve(a.reshape(2, 4, 2, 4), b.reshape(4, 2), axes=(0,))))(a, b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = (np.linalg.tensorinv(a64.reshape(2, 4, 8), ind=2), np.linalg.tensorsolve(a64.reshape(2, 4, 4, 2), b64.reshape(2, 4)),
            np.linalg.tensorsolve(a64.reshape(2, 4, 2, 4), b64.reshape(4, 2), axes=(0,)))
    for g, w in zip(got, want):
        assert _err(g, w) < 1e-5
    with pytest.raises(NotImplementedError, match="eigh"):
        snp.linalg.eig(a)
    assert not hasattr(snp.linalg, "eigvals")


def test_scipy_block_diag_of_complex_blocks_under_jit():
    """block_diag of complex blocks under jit (it scattered into zeros, which IREE 3.13 failed to compile for complex
    values), mixed with a real block, a scalar, an empty block and a list, against SciPy's; none: (1, 0)."""
    spl = pytest.importorskip("scipy.linalg")
    from stagec.scipy import linalg as sl
    x, y = (_A[:3, :2] + 1j * _W[:3, :2]).astype(np.complex64), _W[:1, :3]
    blocks = lambda x, y: (x, y, np.float32(5), np.zeros((0, 2), np.float32), [1.0, 2.0])  # noqa: E731
    got = stagec.jit(lambda x, y: sl.block_diag(*blocks(x, y)))(x, y)
    want = spl.block_diag(*blocks(x, y))
    assert got.dtype == np.complex64 and _err(got, want) == 0
    assert sl.block_diag().shape == (1, 0)


def test_eager_grad_and_jvp_through_the_jacobi_loops():
    """grad and jvp without jit of functions of svdvals/eigvalsh: the rules evaluate the decomposition on concrete
    values; op by op its loop was a module of its own, which IREE 3.13 could not run ("ref is null"). Now one
    module (`linalg._one_module`). Against NumPy: d sum(s) / dA = U V^T, d sum(w * k) / dS = V diag(k) V^T."""
    a = _T.T.copy()  # (3, 5)
    u, _, vh = np.linalg.svd(a.astype(np.float64), full_matrices=False)
    assert _err(stagec.grad(lambda x: snp.sum(snp.linalg.svdvals(x)))(a), u @ vh) < 1e-5
    _, t = stagec.jvp(lambda x: snp.sum(snp.linalg.svdvals(x)), (a,), (_T.T.copy(),))
    assert abs(float(t) - np.sum(u @ vh * _T.T)) < 1e-4
    w, v = np.linalg.eigh(_SPD.astype(np.float64))
    k = np.arange(N, dtype=np.float32)
    assert _err(stagec.grad(lambda x: snp.sum(snp.linalg.eigvalsh(x) * k))(_SPD), (v * k) @ v.T) < 1e-5
