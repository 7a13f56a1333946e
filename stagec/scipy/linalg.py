"""`stagec.scipy.linalg` (as `jax.scipy.linalg`): SciPy's conventions where they differ from `numpy.linalg`
(upper Cholesky factors by default, `lower=` flags, factor-then-solve pairs)."""
from __future__ import annotations

from .. import numpy as snp
from ..numpy import linalg as _la
from ..numpy.linalg import det, inv, pinv  # noqa: F401

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "det", "eigh", "inv", "pinv",
           "qr", "solve", "solve_triangular", "svd", "toeplitz"]


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor: upper triangular by default (SciPy's convention; numpy.linalg's is lower). Reads only
    that triangle of `a` (SciPy's and JAX's: no symmetrization)."""
    return _la.cholesky(a, upper=not lower, symmetrize_input=False)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """(factor, lower) for `cho_solve`."""
    return cholesky(a, lower=lower), lower


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False, overwrite_b: bool = False,
                     debug=None, check_finite: bool = True):
    """Solve a x = b (trans 0 / 'N'), a^T x = b (1 / 'T') or a^H x = b (2 / 'C') for triangular `a`."""
    a, b = snp.asarray(a), snp.asarray(b)
    t = {0: 0, "N": 0, 1: 1, "T": 1, 2: 2, "C": 2}[trans]
    if t:
        a = snp.swapaxes(a, -1, -2)
        a = snp.conj(a) if t == 2 else a
        lower = not lower
    n = a.shape[-1]
    mask = snp.tril(snp.ones((n, n), bool)) if lower else snp.triu(snp.ones((n, n), bool))
    a = snp.where(mask, a, 0)
    if unit_diagonal:
        a = snp.where(snp.eye(n, dtype=bool), 1, a)
    vec = b.ndim == a.ndim - 1
    bb = b[..., None] if vec else b
    dt = snp.result_type(a, bb)
    x = _la._tri_solve(a.astype(dt), bb.astype(dt), lower)
    return x[..., 0] if vec else x


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """Solve A x = b from `cho_factor(A)`."""
    c, lower = c_and_lower
    if lower:
        y = solve_triangular(c, b, lower=True)
        return solve_triangular(c, y, trans="C", lower=True)
    y = solve_triangular(c, b, trans="C", lower=False)
    return solve_triangular(c, y, lower=False)


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False, debug: bool = False,
          check_finite: bool = True, assume_a: str = "gen"):
    """Solve a x = b; `assume_a` 'pos' solves by Cholesky, others by LU."""
    if assume_a == "pos":
        return cho_solve(cho_factor(a, lower=lower), b)
    return _la.solve(a, b)


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, type: int = 1, check_finite: bool = True, subset_by_index=None,
         subset_by_value=None, driver=None):
    """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix (the standard problem only)."""
    if b is not None or subset_by_index is not None or subset_by_value is not None:
        raise NotImplementedError("scipy.linalg.eigh with b= or subsets: only the standard problem is implemented; "
                                  "use numpy.linalg.eigh")
    w, v = _la.eigh(a, UPLO="L" if lower else "U")
    return w if eigvals_only else (w, v)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False, check_finite: bool = True,
        lapack_driver: str = "gesdd"):
    return _la.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
    """(q, r): mode 'full' (SciPy's default: q square), 'economic', or 'r' (r only, a 1-tuple as SciPy)."""
    if pivoting:
        raise NotImplementedError("scipy.linalg.qr(pivoting=True) is not implemented")
    if mode == "r":
        return (_la.qr(a, mode="r"),)
    q, r = _la.qr(a, mode={"full": "complete", "economic": "reduced"}[mode])
    return q, r


def block_diag(*arrs):
    """A block-diagonal matrix of the given 2-D blocks (scalars and 1-D arrays are rows). Each block row is the
    block between zeros, concatenated: no scatter (`zeros(...).at[...].set` of complex blocks under jit did not
    compile in IREE 3.13: "'stream.yield' op used resource not listed in explicit captures")."""
    arrs = [snp.atleast_2d(snp.asarray(a)) for a in arrs or ([],)]  # (none: SciPy's (1, 0))
    cols = sum(a.shape[1] for a in arrs)
    dt = snp.result_type(*arrs)
    rows, c = [], 0
    for a in arrs:
        r = a.shape[0]
        rows.append(snp.concatenate([snp.zeros((r, c), dt), a.astype(dt), snp.zeros((r, cols - c - a.shape[1]), dt)], 1))
        c += a.shape[1]
    return snp.concatenate(rows, 0)


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column `c` and first row `r` (default conj(c))."""
    c = snp.ravel(snp.asarray(c))
    r = snp.conj(c) if r is None else snp.ravel(snp.asarray(r))
    vals = snp.concatenate([c[::-1], r[1:]])
    n, m = c.shape[0], r.shape[0]
    import numpy as np
    idx = (n - 1) - np.arange(n)[:, None] + np.arange(m)[None, :]
    return vals[idx]


from .._missing import missing as _missing, table as _table  # noqa: E402

__getattr__ = _missing(__name__, {
    **_table("lu lu_factor lu_solve", "use stagec.numpy.linalg.solve (LU with partial pivoting inside)"),
    **_table("circulant companion convolution_matrix dft eigh_tridiagonal expm expm_frechet fiedler "
             "fiedler_companion funm hadamard hankel helmert hessenberg hilbert invhilbert invpascal leslie pascal "
             "polar qr_multiply rsf2csf schur solve_sylvester sqrtm", "not implemented yet"),
})
