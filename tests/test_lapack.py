"""LU and Cholesky factorizations, LU solves and eigh through LAPACK on the host (`host-lapack`, the CPU's default with `cpu_blas`), against
NumPy in float64; the loops they replace where the compile offloads nothing (tests/test_linalg.py runs both)."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import host
from passes.lapack import offloaded

pytestmark = pytest.mark.cpu_only


def _err(got, want) -> float:
    got, want = np.asarray(got, np.complex128), np.asarray(want, np.complex128)
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300))


def _tol(dtype, cond: float) -> float:
    return 50 * np.finfo(np.dtype(dtype)).eps * cond


def _final(fn, *args) -> str:
    return stagec.jit(fn).lower(*args).as_text("final")


def _loops(fn, *args) -> np.ndarray:
    """jit(fn)(*args) compiled without host offloads: IREE's loops."""
    stagec.config.update("cpu_blas", False)
    try:
        return np.asarray(stagec.jit(fn)(*args))
    finally:
        stagec.config.update("cpu_blas", True)


_LU_ORDERS = (1, 3, 8, 33)


def _lu_cases(n, dtype):
    """(inv, solve, det, slogdet) of a batch of order-`n` matrices: [(function, arguments, NumPy's in float64)]."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal((2, 1, n, n))  # (a batch of 2: at most 2n matrices of order n call LAPACK)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(a.shape)
    a = a.astype(dtype)
    b = rng.standard_normal((2, 1, n, 2)).astype(dtype)
    w = a.astype(np.complex128)
    return [(snp.linalg.inv, (a,), np.linalg.inv(w)),
            (snp.linalg.solve, (a, b), np.linalg.solve(w, b.astype(np.complex128))),
            (snp.linalg.det, (a,), np.linalg.det(w)),
            (snp.linalg.slogdet, (a,), np.linalg.slogdet(w))]


@functools.cache
def _lu_jitted(dtype):
    """{n: the jitted results of `_lu_cases(n, dtype)`} of every order: one module per dtype."""
    cases = {n: _lu_cases(n, dtype) for n in _LU_ORDERS}
    return stagec.jit(lambda args: {n: [fn(*xs) for (fn, _, _), xs in zip(cases[n], args[n])] for n in args})(
        {n: [c[1] for c in cs] for n, cs in cases.items()})


@pytest.mark.parametrize("n", _LU_ORDERS)
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_lu_functions_call_lapack_and_match_numpy(n, dtype):
    """inv, solve, det and slogdet of one matrix and of a batch call `stagec_lapack`, no loop left, and match NumPy in
    float64 to LAPACK's bound; eager calls give the jitted bits. (The jitted calls of every order: one module.)"""
    cases = _lu_cases(n, dtype)
    a = cases[0][1][0]
    tol = _tol(dtype, float(np.max(np.linalg.cond(a.astype(np.complex128)))))
    for (fn, args, want), got in zip(cases, _lu_jitted(dtype)[n]):
        text = _final(fn, *args)
        assert "call @stagec_lapack." in text and "stablehlo.while" not in text
        eager = fn(*args)
        for g, e, ww in zip(*((x,) if fn is not snp.linalg.slogdet else x for x in (got, eager, want))):
            assert _err(g, ww) < tol
            np.testing.assert_array_equal(np.asarray(e), np.asarray(g))
    for one in (a[0, 0], a[1, 0]):
        assert _err(snp.linalg.inv(one), np.linalg.inv(one.astype(np.complex128))) < tol


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_cholesky_calls_lapack_and_gives_the_loops_nans(dtype):
    """cholesky of a batch calls `stagec_lapack.potrf_sym`, matches NumPy in float64 where positive definite, gives NaN
    on and below the diagonal where not, zeros above, and NaN only where a NaN entry reaches (NumPy's and JAX's
    pattern: potrf's pivots compare false), as the loops do."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 8, 8))  # (Cholesky calls LAPACK from order 8, up to n / 2 matrices)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(x.shape)
    a = (x @ np.conj(np.swapaxes(x, -1, -2)) + np.eye(8)).astype(dtype)
    a[1] = -a[1]
    a[2, 4, 1] = a[2, 1, 4] = np.nan
    assert "call @stagec_lapack.potrf_sym_0(" in _final(snp.linalg.cholesky, a)
    got = np.asarray(stagec.jit(snp.linalg.cholesky)(a))
    np.testing.assert_array_equal(np.asarray(snp.linalg.cholesky(a)), got)
    for i in (0, 3):
        w = a[i].astype(np.complex128)
        assert _err(got[i], np.linalg.cholesky(w)) < _tol(dtype, np.linalg.cond(w))
    lower = np.tri(8, dtype=bool)
    assert np.isnan(got[1][lower]).all() and (got[1][~lower] == 0).all()
    want = np.linalg.cholesky(a[2].astype(np.complex128))  # (rows 0-3 and L[4:, 0] finite: 13 NaN of 36)
    np.testing.assert_array_equal(np.isnan(got[2]), np.isnan(want))
    assert 0 < np.isnan(want).sum() < 36 and _err(got[2][~np.isnan(want)], want[~np.isnan(want)]) < 1e-4
    np.testing.assert_array_equal(np.isnan(_loops(snp.linalg.cholesky, a)), np.isnan(got))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_eigh_calls_lapack(dtype):
    """eigh of a batch calls `stagec_lapack.syevd_sym` (the half-sum and syevd): eigenvalues as NumPy's in float64, A V = V diag(w), V unitary, NaN
    for a matrix holding NaN (as the Jacobi sweeps give); eager calls give the jitted bits."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 7, 7))
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(x.shape)
    h = ((x + np.conj(np.swapaxes(x, -1, -2))) / 2).astype(dtype)
    h[2, 3, 3] = np.nan
    assert "call @stagec_lapack.syevd_sym_0(" in _final(snp.linalg.eigh, h)
    w, v = (np.asarray(t) for t in stagec.jit(snp.linalg.eigh)(h))
    we, ve = snp.linalg.eigh(h)
    np.testing.assert_array_equal(np.asarray(we), w)
    np.testing.assert_array_equal(np.asarray(ve), v)
    tol = _tol(dtype, 1.0)
    for i in (0, 1):
        hi = h[i].astype(np.complex128)
        assert np.max(np.abs(w[i] - np.linalg.eigvalsh(hi))) < tol * np.max(np.abs(w[i]))
        assert _err(hi @ v[i], v[i] * w[i]) < tol
        assert _err(np.conj(v[i].T) @ v[i], np.eye(7)) < tol
    assert np.isnan(w[2]).all() and np.isnan(v[2]).all()


def test_eigh_of_float64_matrices_of_every_order(x64):
    """Under x64, float64 eigh of orders 1-8 calls dsyevd (whose workspace query writes no real workspace size: read
    from an uninitialised array, orders 3, 5 and 7 raised OverflowError), matching NumPy."""
    rng = np.random.default_rng(8)
    hs = [x + x.T for x in (rng.standard_normal((n, n)) for n in range(1, 9))]
    got = stagec.jit(lambda hs: [snp.linalg.eigh(h) for h in hs])(hs)  # (one module: a dsyevd call of each order)
    for h, (w, v) in zip(hs, got):
        assert "syevd" in _final(snp.linalg.eigh, h)
        w, v = np.asarray(w), np.asarray(v)
        assert w.dtype == np.float64
        np.testing.assert_allclose(w, np.linalg.eigvalsh(h), rtol=1e-12, atol=1e-12 * np.abs(w).max())
        assert np.max(np.abs(h @ v - v * w)) < 1e-12 * max(1.0, np.abs(w).max())


def test_singular_matrices_as_the_loops_give_them():
    """A zero pivot eliminates nothing, as the loops' (and JAX's): det 0, slogdet (0, -inf), an inverse of inf or NaN
    where LAPACK divides by the zero, the rows of a rank-deficient solve's finite part as the loops'."""
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], np.float32)
    assert float(snp.linalg.det(a)) == 0.0
    sign, logdet = snp.linalg.slogdet(a)
    assert float(sign) == 0.0 and float(logdet) == -np.inf
    assert not np.all(np.isfinite(np.asarray(snp.linalg.inv(a))))
    lapack = np.asarray(stagec.jit(snp.linalg.inv)(a))
    np.testing.assert_array_equal(np.isfinite(lapack), np.isfinite(_loops(snp.linalg.inv, a)))


def test_host_lu_equals_numpys_partial_pivoting():
    """`lapack_lu` (getrf) and its NumPy stand-in (`_numpy_lu`, where NumPy has no OpenBLAS) choose the same pivots
    and factors, zero pivots included; P A = L U."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 6, 6))
    a[1, :, 2] = 0  # a zero column: a zero pivot at step 2
    a[2] = np.outer(np.arange(1.0, 7.0), np.arange(-3.0, 3.0))  # rank one, eliminated exactly: zero pivots after one
    outs = []
    for fn in (host.lapack_lu, host._numpy_lu):
        lu, perm, swaps = np.empty_like(a), np.empty((4, 6), np.int32), np.empty(4, np.int32)
        fn(a, lu, perm, swaps)
        outs.append((lu, perm, swaps))
        L = np.tril(lu, -1) + np.eye(6)
        np.testing.assert_allclose(L @ np.triu(lu), np.take_along_axis(a, perm[:, :, None], 1), atol=1e-12)
        assert [s % 2 for s in swaps] == [_swaps(p) % 2 for p in perm]  # (det's sign)
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    np.testing.assert_array_equal(outs[0][2], outs[1][2])
    np.testing.assert_allclose(outs[0][0], outs[1][0], atol=1e-12)


def _swaps(perm) -> int:
    """The fewest transpositions making `perm` (n minus its cycles): any count of swaps making it has this parity."""
    seen, cycles = set(), 0
    for i in range(len(perm)):
        if i not in seen:
            cycles += 1
            while i not in seen:
                seen.add(i)
                i = int(perm[i])
    return len(perm) - cycles


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_host_qr_gives_numpys_bits_with_or_without_the_lapack_symbols(dtype, monkeypatch):
    """`lapack_qr` calls geqrf and orgqr (ungqr) itself (`host._Qr`) as NumPy's `qr` does: float32 in float64, column-
    major, workspaces as queried, so its bits, on one BLAS thread as the host's calls run (OpenBLAS's complex128
    products gave other bits on two); modes r, reduced and complete, tall and wide, below and above geqrf's blocked
    crossover (128 columns); Q R = A, Q unitary, R upper triangular, against float64. Without the symbols NumPy's
    `qr`: the same bits."""
    rng = np.random.default_rng(11)
    cplx = np.dtype(dtype).kind == "c"
    mats = {(m, n): (rng.standard_normal((2, m, n)) + (1j * rng.standard_normal((2, m, n)) if cplx else 0)).astype(dtype)
            for m, n in ((1, 1), (16, 16), (5, 3), (3, 5), (40, 7), (140, 133))}
    outs = {}
    for symbols in (True, False):
        if not symbols:
            monkeypatch.setattr(host, "_lapack_fns", [None])
        monkeypatch.setattr(host, "_qr_plans", {})
        for (m, n), a in mats.items():
            k = min(m, n)
            for mode in ("r", "reduced", "complete"):
                rows, cols = (m, m) if mode == "complete" else (k, k)
                r, q = np.empty((2, rows, n), dtype), None if mode == "r" else np.empty((2, m, cols), dtype)
                host.lapack_qr(a, r, q, mode == "complete")
                with host._one_thread:
                    for i in range(2):
                        want = np.linalg.qr(a[i], mode=mode)
                        np.testing.assert_array_equal(r[i], want if mode == "r" else want[1])
                        if q is not None:
                            np.testing.assert_array_equal(q[i], want[0])
                assert not np.any(np.tril(r, -1)), (m, n, mode)
                if q is not None:
                    w, qw = a.astype(np.complex128), q.astype(np.complex128)
                    tol = 50 * np.finfo(dtype).eps * max(m, n)
                    assert _err(qw @ r, w) < tol, (m, n, mode)
                    assert _err(np.conj(qw.swapaxes(-1, -2)) @ qw, np.eye(cols)) < tol, (m, n, mode)
                outs[symbols, m, n, mode] = (r, q)
        assert len(host._qr_plans) == (15 if symbols else 0)  # (a plan per distinct (m, n, Q's columns))
    for (symbols, *rest), (r, q) in outs.items():
        if symbols:
            np.testing.assert_array_equal(r, outs[(False, *rest)][0])
            if q is not None:
                np.testing.assert_array_equal(q, outs[(False, *rest)][1])


def test_without_lapack_symbols_the_host_factors_in_numpy(monkeypatch):
    """Where NumPy links no OpenBLAS, the module's calls are answered by NumPy's own partial pivoting: right."""
    monkeypatch.setattr(host, "_lapack_fns", [None])
    monkeypatch.setattr(host, "_lapack_plans", {})
    ran = []
    numpy_lu = host._numpy_lu
    monkeypatch.setattr(host, "_numpy_lu", lambda *a: ran.append(1) or numpy_lu(*a))
    rng = np.random.default_rng(5)
    a = rng.standard_normal((5, 5)).astype(np.float32)
    b = rng.standard_normal((5, 3)).astype(np.float32)
    w = a.astype(np.float64)
    tol = _tol(np.float32, np.linalg.cond(w))
    assert "stagec_lapack.inv" in _final(snp.linalg.inv, a) and "stagec_lapack.solve" in _final(snp.linalg.solve, a, b)
    h = a + a.T
    g = rng.standard_normal((8, 8)).astype(np.float32)
    spd = g @ g.T + np.eye(8, dtype=np.float32)
    assert "potrf" in _final(snp.linalg.cholesky, spd)
    inv, x, det, wh, low = stagec.jit(lambda a, b, h, spd: (  # (one module of the five host calls)
        snp.linalg.inv(a) * 1.0, snp.linalg.solve(a, b) + 0.0, snp.linalg.det(a) * 1.0, snp.linalg.eigvalsh(h) * 1.0,
        snp.linalg.cholesky(spd) * 1.0))(a, b, h, spd)
    assert _err(inv, np.linalg.inv(w)) < tol
    assert _err(x, np.linalg.solve(w, b)) < tol
    assert _err(det, np.linalg.det(w)) < tol
    assert len(ran) == 3  # (inv, solve and det each factored by NumPy's stand-in)
    assert _err(wh, np.linalg.eigvalsh(h.astype(np.float64))) < tol
    assert _err(low, np.linalg.cholesky(spd.astype(np.float64))) < tol


def test_large_batches_stay_loops_and_vmap_keeps_the_call():
    """More than 2n matrices of order n: IREE's loop (each step on all of them at once); vmap of inv on at most 2n
    calls LAPACK on the batch. Both right."""
    assert offloaded("inv", 3, 6) and not offloaded("inv", 3, 7) and not offloaded("potrf", 4, 1)
    rng = np.random.default_rng(9)
    big = rng.standard_normal((7, 3, 3)).astype(np.float32)
    text = _final(snp.linalg.inv, big)
    assert "stagec_lapack" not in text and "stablehlo.while" in text
    w = big.astype(np.float64)
    tol = _tol(np.float32, float(np.max(np.linalg.cond(w))))
    assert _err(snp.linalg.inv(big), np.linalg.inv(w)) < tol
    small = big[:6]
    text = _final(stagec.vmap(snp.linalg.inv), small)
    assert "call @stagec_lapack.inv_0(" in text
    assert _err(stagec.vmap(snp.linalg.inv)(small), np.linalg.inv(w[:6])) < tol


def test_gradients_through_the_host_calls_match_central_differences():
    """grad of sum(inv(a) @ c), det and solve (their rules call the named functions again) against float64 central
    differences."""
    rng = np.random.default_rng(11)
    a = (rng.standard_normal((4, 4)) + 4 * np.eye(4)).astype(np.float32)
    b = rng.standard_normal((4, 2)).astype(np.float32)
    c = rng.standard_normal((4, 4))
    fns = [(lambda x: snp.sum(snp.linalg.inv(x) * c), lambda x: np.sum(np.linalg.inv(x) * c)),
           (snp.linalg.det, np.linalg.det),
           (lambda x: snp.sum(snp.linalg.solve(x, b)), lambda x: np.sum(np.linalg.solve(x, b)))]
    gs = stagec.jit(lambda a: [stagec.grad(f)(a) for f, _ in fns])(a)  # (one module)
    for (f, ref), g in zip(fns, gs):
        g = np.asarray(g)
        num = np.zeros((4, 4))
        w, h = a.astype(np.float64), 1e-6
        for i in range(4):
            for j in range(4):
                e = np.zeros((4, 4))
                e[i, j] = h
                num[i, j] = (ref(w + e) - ref(w - e)) / (2 * h)
        np.testing.assert_allclose(g, num, rtol=2e-4, atol=2e-4 * np.max(np.abs(num)))
        np.testing.assert_array_equal(np.asarray(stagec.grad(f)(a)), g)


def test_artifacts_factor_with_their_own_loops_unless_asked(tmp_path):
    """An ahead-of-time artifact runs anywhere IREE does: compiled without host offloads it holds the loops; one
    compiled with them is saved only with `host_modules=True`."""
    a = np.array([[4.0, 1.0], [2.0, 3.0]], np.float32)
    lowered = stagec.jit(snp.linalg.inv).lower(a)
    plain = lowered.compile(host_blas=False)
    assert "stagec_lapack" not in plain.as_text()
    np.testing.assert_allclose(np.asarray(plain(a)), np.linalg.inv(a.astype(np.float64)), rtol=1e-6)
    plain.save(tmp_path / "inv.stagec")
    offloaded = lowered.compile()
    with pytest.raises(ValueError, match="stagec_lapack"):
        offloaded.save(tmp_path / "inv2.stagec")


def test_named_calls_show_as_stablehlo():
    """The traced module shows a named call as a call of a private function holding its loops, marked by stagec's own
    attribute (not another dialect: the "stablehlo" stage exists, here after `host-lapack`)."""
    a = np.eye(8, dtype=np.float32)
    lowered = stagec.jit(snp.linalg.cholesky).lower(a)
    traced = lowered.as_text("traced")
    assert 'stagec.named = "lapack.potrf_sym"' in traced and "stablehlo.while" in traced
    assert "call @lapack_potrf_sym_0(" in traced and "call @lapack_potrf_1(" in traced  # (potrf_sym's own call)
    assert "call @stagec_lapack.potrf_sym_0(" in lowered.as_text()  # (after host-lapack: still StableHLO and func)
    assert "lapack.inv" in stagec.make_mlir(snp.linalg.inv, stage="traced")(a)


def test_one_module_calling_several_functions_of_one_type():
    """inv and cholesky of one 8x8 matrix have one function type: each call keeps its own import (one symbol per
    function type had cholesky answered by inv), as do a batch of no matrices (IREE's loop: nothing to call)."""
    rng = np.random.default_rng(6)
    g = rng.standard_normal((8, 8))
    spd = (g @ g.T + np.eye(8)).astype(np.float32)
    f = stagec.jit(lambda a: (snp.linalg.inv(a), snp.linalg.cholesky(a), snp.linalg.eigh(a)[0]))
    text = f.lower(spd).as_text("final")
    assert all(f"call @stagec_lapack.{k}_0(" in text for k in ("inv", "potrf_sym", "syevd_sym"))
    inv, chol, w = (np.asarray(t) for t in f(spd))
    w64 = spd.astype(np.float64)
    tol = _tol(np.float32, np.linalg.cond(w64))
    assert _err(inv, np.linalg.inv(w64)) < tol and _err(chol, np.linalg.cholesky(w64)) < tol
    assert _err(w, np.linalg.eigvalsh(w64)) < tol
    empty = np.zeros((0, 3, 3), np.float32)
    assert "stagec_lapack" not in _final(snp.linalg.inv, empty) and snp.linalg.inv(empty).shape == (0, 3, 3)
