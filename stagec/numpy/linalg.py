"""`stagec.numpy.linalg`: decompositions and solvers as StableHLO loops (IREE has no LAPACK).

Each decomposition is a structured loop over columns or Jacobi sweeps (`lax.fori_loop` / `lax.while_loop`,
never unrolled over n), batched over leading dimensions by broadcasting. Algorithms and their measured
accuracy: docs/linalg.md. Singular inputs give inf/NaN, as in JAX (no LinAlgError from traced code).

The decompositions are private functions of arrays (`_cholesky`, `_lu`, `_qr`, `_eigh`, `_svd`); the public
functions call them through `custom_jvp` wrappers with JAX's differentiation rules (the last section).
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import Any, NamedTuple, Sequence

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..ad import custom_jvp
from ..array import Array
from ..backend import get_backend
from ..config import SettingsCache, config
from ..host import (lapack_cholesky_sym, lapack_det, lapack_eigh_sym, lapack_lu_solve, lapack_qr, lapack_slogdet,
                    lapack_svd)
from ..lowering import lapack_offloaded
from ..named import named
from ..core import ShapedArray, TracerBase, aval_of, current_trace
from ..primitives import structural as _st
from ..primitives.dot import Precision
from ._arrayapi import matrix_transpose, vecdot  # (snp.linalg's names for the same functions)
from . import _base
from ._base import _api, _staged, _axes, _axis, _is_array, asarray, astype, broadcast_shapes, broadcast_to
from ._creation import eye, ones, zeros
from ._indexing import take, take_along_axis
from ._linalg import diagonal as _np_diagonal
from ._linalg import matmul, outer as _outer, tensordot, trace as _np_trace
from ._reductions import any as _any, count_nonzero, max, min, prod, sum
from ._shapes import concatenate, expand_dims, moveaxis, pad, reshape, stack, swapaxes, transpose
from ._ufuncs import (abs, add, conjugate, divide, imag, equal, greater, isfinite, isnan, less, less_equal, log,
                      logical_and, logical_or, multiply, power, real, sqrt, subtract, where)

LinAlgError = np.linalg.LinAlgError

# ---------------------------------------------------------------- helpers

def _mm(a, b):
    """A product inside a decomposition or its derivative, in float32 whatever the default precision (CUDA's
    default is bf16_3x, ~2**-16 per product: QR and SVD lost 5x of their accuracy): JAX's solvers are exact too."""
    return matmul(a, b, precision=Precision.HIGHEST)


def _mat(fname: str, a, square: bool = False, min_ndim: int = 2):
    """`a` as an inexact array of at least `min_ndim` dims (integers become the default float)."""
    a = a if _is_array(a) else asarray(a)
    av = aval_of(a)
    if av.ndim < min_ndim:
        raise LinAlgError(f"{fname}: {av.ndim}-dimensional array given; the array must be at least "
                          f"{min_ndim}-dimensional")
    if square and av.shape[-1] != av.shape[-2]:
        raise LinAlgError(f"{fname}: last 2 dimensions of the array must be square, got shape {av.shape}")
    k = _dt.kind(av.dtype)
    if k in "biu":
        return astype(a, _dt.default_float())
    if av.dtype.itemsize < 4 or k not in "fc":
        raise TypeError(f"{fname}: array type {av.dtype} is unsupported in linalg (use float32/float64/complex)")
    return lax._convert_element_type(a, av.dtype, False) if av.weak_type else a


def _real_dtype(dt) -> np.dtype:
    return np.dtype(np.float32) if np.dtype(dt) == np.complex64 else (
        np.dtype(np.float64) if np.dtype(dt) == np.complex128 else np.dtype(dt))


def _is_complex(x) -> bool:
    return _dt.kind(aval_of(x).dtype) == "c"


def _eps(x) -> float:
    return float(np.finfo(_real_dtype(aval_of(x).dtype)).eps)


def _ct(x):
    """Conjugate transpose of the last two axes."""
    x = swapaxes(x, -1, -2)
    return conjugate(x) if _is_complex(x) else x


def _idx(n: int, axis: int):
    """int32 iota of length n along `axis` (-1: columns, -2: rows) of an (n,1) / (1,n) shape."""
    return lax.broadcasted_iota(np.int32, (n, 1) if axis == -2 else (1, n), 0 if axis == -2 else 1)


# _col, _row, _set_col take a loop's index, 0 <= k < n: the primitives, without lax's wrap of a negative index
# (a select IREE computes in a dispatch of its own, then reads back to the host, at each step)

def _col(x, k):
    """Column k (traced) of (..., m, n) as (..., m, 1)."""
    s = aval_of(x).shape
    return _st.dynamic_slice(x, [0] * (len(s) - 1) + [k], s[:-1] + (1,))


def _row(x, k):
    """Row k (traced) of (..., m, n) as (..., 1, n)."""
    s = aval_of(x).shape
    return _st.dynamic_slice(x, [0] * (len(s) - 2) + [k, 0], s[:-2] + (1, s[-1]))


def _set_col(x, c, k):
    return _st.dynamic_update_slice(x, c, [0] * (aval_of(x).ndim - 1) + [k])


def _phase(z):
    """z / |z| (1 where z == 0): the unit factor that makes z real and non-negative when divided out."""
    if not _is_complex(z):
        return where(less(z, 0), -1, 1).astype(aval_of(z).dtype)
    a = abs(z)
    return where(equal(a, 0), 1, divide(z, where(equal(a, 0), 1, a)))


# A real identity of at most this many elements is a literal constant: from iotas, IREE computes it at load time
# in two dispatches of its own (hoisted constant expressions), ~0.04 s of compile each. Not complex: a complex128
# one made IREE 3.13's odd-n eigh module fail at run time ("indirect buffer reference slot 0 is out range").
EYE_LITERAL = 1 << 14


def _batch_eye(shape: tuple, dtype):
    n, m = shape[-2:]
    literal = n * m <= EYE_LITERAL and np.dtype(dtype).kind == "f"
    base = np.eye(n, m, dtype=dtype) if literal else eye(n, m, dtype=dtype)
    return broadcast_to(base, shape)


def _pow2_scaled(a):
    """(a / s, s): s (..., 1, 1) the power of two at or below each matrix's largest |entry| (1 where that is 0,
    subnormal, inf or NaN). Dividing by it is exact, so a decomposition of a / s is a's scaled, its squared entries
    neither under- nor overflowing (float32 QR and eigh of 1e-20 matrices were wrong, of 1e20 ones NaN)."""
    rdt = _real_dtype(aval_of(a).dtype)
    top = max(abs(a), axis=(-2, -1), keepdims=True) if aval_of(a).size else ones(aval_of(a).shape[:-2] + (1, 1), rdt)
    it, mask = (np.int64, 0x7FF0000000000000) if rdt == np.float64 else (np.int32, 0x7F800000)
    s = lax.bitcast_convert_type(lax.bitwise_and(lax.bitcast_convert_type(top, it), np.array(mask, it)), rdt)
    s = where(logical_and(greater(s, 0), isfinite(top)), s, 1).astype(rdt)
    # (through a barrier: fused with its reduction, x64 QR of several modes in one module failed in IREE 3.13's
    # stream partitioning, "circular dependency")
    return tuple(lax.optimization_barrier((_scaled(a, s, divide), s)))


def _scaled(a, s, op):
    """`op(a, s)` for real s, a complex a's parts apart (a complex division by s squares it)."""
    if not _is_complex(a):
        return op(a, s)
    return lax.complex(op(real(a), s), op(imag(a), s))


def _sym(t):
    """The Hermitian part (t + t^H) / 2."""
    return multiply(t + _ct(t), 0.5)


def _check_uplo(fname: str, UPLO: str | None) -> None:
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"{fname}: UPLO must be 'L' or 'U', got {UPLO!r}")


def _hermitian(fname: str, a, UPLO: str | None, symmetrize_input: bool):
    """The Hermitian matrix that `cholesky` and `eigh` factor: `a`'s Hermitian part (JAX's symmetrize_input),
    else its `UPLO` triangle mirrored with the diagonal's real part (NumPy's, LAPACK's). Linear in `a` and built
    of ordinary ops, so it is differentiated as it is: the tangent reaching the decomposition's rule is the
    derivative of exactly this map, and Hermitian."""
    a = _mat(fname, a, square=True)
    _check_uplo(fname, UPLO)
    if symmetrize_input:
        return _sym(a)
    n = aval_of(a).shape[-1]
    rows, cols = _idx(n, -2), _idx(n, -1)
    tri = where(less(rows, cols) if UPLO == "U" else greater(rows, cols), a, 0)
    return tri + _ct(tri) + _sym(where(equal(rows, cols), a, 0))


# ---------------------------------------------------------------- eager calls answered by the host's LAPACK
# Where a jitted call's module would call the host module's LAPACK function for a named call (the CPU with
# `config.cpu_blas`, a shape `lowering.lapack_offloaded` takes: `passes.lapack`), an eager call of inv, solve, det or
# cholesky calls that same Python function (`stagec.host`) on its arguments' values, without the module: the same
# code on the same values, so the jitted call's bits, at a third of the time at 4x4 (IREE's call and its host
# callback's glue were ~2/3 of it). Only where the module is that one call: same-dtype operands (no promotion),
# a batch the rule takes; det's product and cholesky's (a + a^H) / 2 are in their named calls ("lapack.det",
# "lapack.potrf_sym"), so on the host too (IREE's CPU code flushes subnormals to zero and may commute a sum, NumPy
# does neither: computed apart, they gave other bits). Anything else runs the module.

_HOST_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


def _host_operand(x) -> tuple | None:
    """(value, aval) of an Array or NumPy array of a LAPACK dtype that the jitted call would take as it is (not
    weakly typed, its dtype canonical), else None."""
    t = type(x)
    if t is Array:
        aval = x.aval
        if aval.weak_type or aval.dtype not in _HOST_DTYPES:
            return None
        return x._value(), aval
    if t is np.ndarray and x.dtype in _HOST_DTYPES:
        aval = aval_of(x)
        if aval.dtype == x.dtype and not aval.weak_type:
            return x, aval
    return None


_host_backend = SettingsCache(1)  # True -> the backend whose jitted modules call the host's LAPACK, or False


def _lapack_backend():
    """The backend where jitted modules answer named LAPACK calls on the host (the CPU with `config.cpu_blas`, jit
    on), else None."""
    b = _host_backend.get(True)
    if b is None:
        b = get_backend()
        b = _host_backend.put(True, b if b.name == "cpu" and b.host_blas() and not config.jit_disabled else False)
    return b or None


def _host_lapack(kind: str, a, square: bool = True) -> tuple | None:
    """(value, aval) of `a`, matrices (..., m, n) (square ones where `square`; none empty), where its jitted call
    answers the named call `kind` (`passes.lapack.HOST_LAPACK`'s values) with the host's LAPACK: that rule, and
    `_lapack_backend`."""
    found = _host_operand(a)
    if found is None:
        return None
    shape = found[1].shape
    if len(shape) < 2 or (shape[-1] != shape[-2] if square else 0 in shape[-2:]) \
            or not lapack_offloaded(kind, shape[-1], math.prod(shape[:-2])) or _lapack_backend() is None:
        return None
    return found


_result_avals: dict = {}  # (shape, dtype) -> its ShapedArray


def _host_aval(value: np.ndarray) -> ShapedArray:
    key = (value.shape, value.dtype)
    aval = _result_avals.get(key)
    if aval is None:
        if len(_result_avals) >= 256:
            _result_avals.clear()
        aval = _result_avals[key] = ShapedArray(*key)
    return aval


def _host_result(value: np.ndarray, aval: ShapedArray) -> Array:
    """An eager result computed on the host (kept there until a device call reads it, as eager NumPy rules'; a big
    one put on the device, as `_base._as_output`)."""
    backend = _lapack_backend()
    if value.nbytes > (1 << 20):
        return Array(backend.put(value), aval, backend)
    value.flags.writeable = False
    return Array.on_host(value, aval, backend)


def _host_call(kind: str, a, call, matrices: bool = True):
    """`call(a's matrices (b, n, n), out)` on the host where `_host_lapack(kind, a)` takes them: `out` holds a
    matrix per matrix of `a` (`matrices`) or one value per matrix."""
    found = _host_lapack(kind, a)
    if found is None:
        return None
    v, aval = found
    n = v.shape[-1]
    out = np.empty(v.shape if matrices else v.shape[:-2], v.dtype)
    call(v.reshape(-1, n, n), out.reshape(-1, n, n) if matrices else out.reshape(-1))
    return _host_result(out, aval if matrices else _host_aval(out))


def _inv_host(a, /):
    return _host_call("inv", a, lambda v, out: lapack_lu_solve(v, None, out))


def _solve_host(a, b, /):
    found, fb = _host_lapack("solve", a), _host_operand(b)
    if found is None or fb is None or fb[1].dtype != found[1].dtype:
        return None
    v, w = found[0], fb[0]
    shape, n = v.shape, v.shape[-1]
    vec = w.ndim == 1
    if vec:
        w = w[:, None]
    if w.ndim < 2 or w.shape[-2] != n or len(w.shape) > len(shape):
        return None
    if w.shape[:-2] != shape[:-2]:
        try:
            if np.broadcast_shapes(shape[:-2], w.shape[:-2]) != shape[:-2]:
                return None  # (a broadcast batch: another count of matrices than `_host_lapack` measured)
        except ValueError:
            return None  # (the module raises the error)
    k = w.shape[-1]
    out = np.empty(shape[:-1] + (k,), v.dtype)
    if w.shape[:-2] != shape[:-2]:
        w = np.broadcast_to(w, shape[:-1] + (k,))
    lapack_lu_solve(v.reshape(-1, n, n), w.reshape(-1, n, k), out.reshape(-1, n, k))
    if vec:
        out = np.ascontiguousarray(out[..., 0])
    return _host_result(out, _host_aval(out))


def _det_host(a, /):
    return _host_call("det", a, lapack_det, matrices=False)


def _slogdet_host(a, /):
    found = _host_lapack("slogdet", a)
    if found is None:
        return None
    v, _ = found
    n, batch = v.shape[-1], v.shape[:-2]
    sign = np.empty(batch, v.dtype)
    logdet = np.empty(batch, np.dtype(v.dtype.char.lower()) if v.dtype.kind == "c" else v.dtype)
    lapack_slogdet(v.reshape(-1, n, n), sign.reshape(-1), logdet.reshape(-1))
    return _host_result(sign, _host_aval(sign)), _host_result(logdet, _host_aval(logdet))


def _cholesky_host(a, /, *, upper: bool = False, symmetrize_input: bool = True):
    if upper is not False or symmetrize_input is not True:
        return None
    return _host_call("potrf_sym", a, lapack_cholesky_sym)


# ---------------------------------------------------------------- Cholesky


def _cholesky(a):
    """Lower Cholesky factor, left-looking by columns: L[:, j] from A[:, j] - L L[j, :]^H (reads A's lower
    triangle). Not positive definite: NaN. (On the CPU, LAPACK's potrf: `host-lapack`.)"""
    return _potrf(a)[0]


@named("lapack.potrf")
def _potrf(a):
    n = aval_of(a).shape[-1]
    rows = _idx(n, -2)

    def body(j, L):
        lj = _row(L, j)
        c = subtract(_col(a, j), _mm(L, _ct(lj)))
        p = real(_row(c, j)) if _is_complex(c) else _row(c, j)
        d = where(less_equal(p, 0), -np.inf, sqrt(p)).astype(aval_of(c).dtype)  # (-inf: not positive definite)
        col = where(greater(rows, j), divide(c, d), where(equal(rows, j), d, 0))
        return _set_col(L, col.astype(aval_of(L).dtype), j)

    L = lax.fori_loop(0, n, body, zeros(aval_of(a).shape, aval_of(a).dtype))
    # A pivot <= 0 (not positive definite) makes the whole factor NaN, as LAPACK's info through JAX; a NaN entry
    # (whose pivots compare false, as in potrf) leaves NaN only where it reaches, as NumPy and JAX 0.10.2 give.
    # (The flag is the diagonal's -inf, not a loop carry: a bool carry beside L made IREE 3.13 emit a copy of a
    # binding out of range, in a module of several Cholesky factors.)
    diag = _np_diagonal(L, axis1=-2, axis2=-1)
    bad = _any(equal(real(diag) if _is_complex(diag) else diag, -np.inf), axis=-1, keepdims=True)
    return [where(logical_and(expand_dims(bad, -1), less(_idx(n, -1), rows + 1)), np.nan, L)]


@_staged("upper", "symmetrize_input", eager=_cholesky_host)
def cholesky(a, /, *, upper: bool = False, symmetrize_input: bool = True):
    """Cholesky factor of Hermitian positive-definite `a` (..., n, n): lower (or `upper`) triangular. Factors
    (a + a^H) / 2 (JAX's default), or with `symmetrize_input=False` the lower (`upper`: upper) triangle
    (NumPy's)."""
    if symmetrize_input:  # (a's Hermitian part: in the named call, so that the CPU's host computes it too)
        L = _cholesky_sym_d(_mat("cholesky", a, square=True))
    else:
        L = _cholesky_d(_hermitian("cholesky", a, "U" if upper else "L", symmetrize_input))
    return _ct(L) if upper else L


@named("lapack.potrf_sym")
def _potrf_sym(a):
    """`_potrf` of a's Hermitian part (a + a^H) / 2 (on the CPU, the host's: that in NumPy, then LAPACK's potrf,
    `host.lapack_cholesky_sym`)."""
    return _potrf(_sym(a))


# ---------------------------------------------------------------- LU and solvers


@named("lapack.getrf")
def _lu(a):
    """LU with partial pivoting, right-looking: (packed LU, row permutation (..., n) int32, swap count).
    P A = L U with L unit lower (below the diagonal of the packed result) and U upper. (On the CPU, LAPACK's getrf:
    `host-lapack`.)"""
    shape = aval_of(a).shape
    n = shape[-1]
    rows, cols = _idx(n, -2), _idx(n, -1)
    perm0 = broadcast_to(lax.iota(np.int32, n), shape[:-1])
    swaps0 = zeros(shape[:-2], np.int32)

    def body(k, state):
        A, perm, swaps = state
        mag = where(rows >= k, abs(_col(A, k)), -1)
        p = lax.argmax(mag, aval_of(mag).ndim - 2, np.int32)  # (..., 1)
        pe = expand_dims(p, -1)  # (..., 1, 1)
        row_k = _row(A, k)
        if len(shape) == 2:  # (one matrix: the pivot's row and entry as dynamic slices, not gathers, whose index
            p0 = lax.reshape(p, ())  # tensors IREE gave 3 dispatches each; the same values)
            row_p, pk = _row(A, p0), lax.dynamic_slice(perm, [p0], (1,))
        else:
            row_p = take_along_axis(A, broadcast_to(pe, shape[:-2] + (1, n)), axis=-2)
            pk = take_along_axis(perm, p, axis=-1)
        A = where(equal(rows, k), row_p, where(equal(rows, pe), row_k, A))
        perm_k = _col(perm, k)
        perm = where(equal(cols[0], k), pk, where(equal(cols[0], p), perm_k, perm))
        swaps = swaps + (p[..., 0] != k).astype(np.int32)
        pivot = _col(row_p, k)
        ok = logical_and(greater(rows, k), ~equal(pivot, 0))  # a zero pivot eliminates nothing (LAPACK)
        l = where(ok, divide(_col(A, k), where(equal(pivot, 0), 1, pivot)), 0)
        A = where(logical_and(greater(rows, k), equal(cols, k)), l,
                  subtract(A, multiply(l, where(greater(cols, k), row_p, 0))))
        return A, perm, swaps

    return lax.fori_loop(0, n, body, (a, perm0, swaps0))


def _lu_solve(lu, perm, b=None):
    """Solve A X = B from `_lu`'s factors; b (..., n, k) with the same batch shape, None for the identity (the
    inverse). (On the CPU, LAPACK's getrs: `host-lapack`.)"""
    return (_lu_inverse(lu, perm) if b is None else _lu_solve_b(lu, perm, b))[0]


@named("lapack.getri")
def _lu_inverse(lu, perm):
    return [_substitute(lu, perm, None)]


@named("lapack.getrs")
def _lu_solve_b(lu, perm, b):
    return [_substitute(lu, perm, b)]


def _substitute(lu, perm, b):
    """`_lu_solve` by forward and back substitution (the identity's rows permuted by comparing, where a gather of
    it was 4 dispatches)."""
    n = aval_of(lu).shape[-1]
    rows = _idx(n, -2)
    if b is None:
        y = equal(expand_dims(perm, -1), _idx(n, -1)).astype(aval_of(lu).dtype)
    elif aval_of(b).ndim == 2:  # (one matrix: `take`'s gather needs no index tensor made of pieces)
        y = take(b, perm, axis=-2)
    else:
        y = take_along_axis(b, broadcast_to(expand_dims(perm, -1), aval_of(perm).shape + (aval_of(b).shape[-1],)),
                            -2)

    def forward(k, y):
        return subtract(y, multiply(where(greater(rows, k), _col(lu, k), 0), _row(y, k)))

    def backward(i, y):
        k = n - 1 - i
        u = _col(lu, k)
        yk = divide(_row(y, k), _row(u, k))
        y = where(equal(rows, k), yk, y)
        return subtract(y, multiply(where(less(rows, k), u, 0), yk))

    return lax.fori_loop(0, n, backward, lax.fori_loop(0, n, forward, y))


@_staged(eager=_solve_host)
def solve(a, b, /):
    """Solve `a @ x = b`: `a` (..., n, n); `b` (n,) or (..., n, k) (NumPy 2 and the Array API's rule)."""
    a = _mat("solve", a, square=True)
    b = b if _is_array(b) else asarray(b)
    dt = _dt.result_type((aval_of(a).dtype, False), (aval_of(b).dtype, aval_of(b).weak_type))[0]
    a, b = a.astype(dt), b.astype(dt)
    sa, sb = aval_of(a).shape, aval_of(b).shape
    vec = len(sb) == 1
    if vec:
        b = expand_dims(b, -1)
        sb = aval_of(b).shape
    if sb[-2] != sa[-1]:
        raise ValueError(f"solve: a has shape {sa} but b has shape {aval_of(b).shape}: b's "
                         f"{'only' if vec else 'second-last'} dimension must be {sa[-1]}")
    batch = broadcast_shapes(sa[:-2], sb[:-2], fname="solve")
    x = _solve_d(broadcast_to(a, batch + sa[-2:]), broadcast_to(b, batch + sb[-2:]))
    return x[..., 0] if vec else x


@_staged(eager=_inv_host)
def inv(a, /):
    """Inverse of square `a` (..., n, n) via LU with partial pivoting."""
    return _inv_d(_mat("inv", a, square=True))


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


def slogdet(a, /) -> SlogdetResult:
    """(sign, log|det|) of square `a`, from the LU factors; a singular matrix gives (0, -inf)."""
    return SlogdetResult(*_slogdet(a))


@_staged(eager=_slogdet_host)
def _slogdet(a, /):
    """(sign, log|det|) of square `a`, from the LU factors; a singular matrix gives (0, -inf)."""
    return _slogdet_d(_mat("slogdet", a, square=True))


@_staged(eager=_det_host)
def det(a, /):
    """Determinant of square `a`: the product of U's diagonal, signed by the row swaps."""
    return _det_d(_mat("det", a, square=True))


# ---------------------------------------------------------------- QR


def _householder(a):
    """LAPACK's (geqrf's) Householder QR: (V (..., m, k), tau (..., 1, k), R (..., m, n)) with Q = H_0 ... H_{k-1},
    H_j = I - tau_j v_j v_j^H (v_j[j] = 1). H_j^H takes column j below row j - 1 (x, alpha = x_j) to beta e_j with
    beta real, -sign(re alpha) ||x||, or alpha itself where x is alpha e_j with alpha real (tau 0): R's diagonal
    is real and Q and R are NumPy's and JAX's (a Hermitian reflector makes it -phase(alpha) ||x||: complex)."""
    shape = aval_of(a).shape
    m, n = shape[-2:]
    k = builtins.min(m, n)
    dt = aval_of(a).dtype
    rdt = _real_dtype(dt)
    rows, cols = _idx(m, -2), _idx(n, -1)
    sq = lambda v: real(multiply(conjugate(v), v)) if _is_complex(v) else multiply(v, v)  # noqa: E731

    def body(j, state):
        R, V, tau = state
        x = where(rows >= j, _col(R, j), 0)
        alpha = _row(x, j)
        below = sum(where(rows > j, sq(x), 0), axis=-2, keepdims=True)
        kept = equal(below, 0)
        if _is_complex(x):
            kept = logical_and(kept, equal(imag(alpha), 0))
        ra = real(alpha) if _is_complex(alpha) else alpha
        beta = multiply(where(less(ra, 0), 1, -1).astype(rdt), sqrt(sq(alpha) + below)).astype(dt)
        t = where(kept, 0, divide(beta - alpha, where(kept, 1, beta)))
        v = where(equal(rows, j), 1, where(greater(rows, j), divide(x, where(kept, 1, alpha - beta)), 0)).astype(dt)
        R = subtract(R, multiply(conjugate(t) if _is_complex(t) else t, _mm(v, _mm(_ct(v), R))))
        R = where(logical_and(equal(cols, j), rows >= j), where(equal(rows, j), where(kept, alpha, beta), 0), R)
        return R, _set_col(V, v, j), _set_col(tau, t, j)

    R, V, tau = lax.fori_loop(0, k, body, (a, zeros(shape[:-1] + (k,), dt), zeros(shape[:-2] + (1, k), dt)))
    return V, tau, R


def _apply_q(V, tau, q):
    """Q @ q where Q = H_0 H_1 ... H_{k-1} (`_householder`'s, applied right to left)."""
    k = aval_of(V).shape[-1]

    def body(i, q):
        v, t = _col(V, k - 1 - i), _col(tau, k - 1 - i)
        return subtract(q, multiply(t, _mm(v, _mm(_ct(v), q))))

    return lax.fori_loop(0, k, body, q)


def _householder_q(a):
    """The complete Q (..., m, m) of a's Householder QR (m >= n) in one loop: before step j, column j of R is
    Q^H a_j, and the step makes Q Q H_j (`_householder` then `_apply_q` take two loops: svd 64x64 had 5
    dispatches more; its compile time is the same within noise, its warm call ~7% faster)."""
    shape = aval_of(a).shape
    m, n = shape[-2:]
    dt = aval_of(a).dtype
    rows = _idx(m, -2)

    def body(j, Q):
        x = where(rows >= j, _mm(_ct(Q), _col(a, j)), 0)
        alpha = _row(x, j)
        nx = sqrt(sum(real(multiply(conjugate(x), x)) if _is_complex(x) else multiply(x, x), axis=-2,
                      keepdims=True)).astype(dt)
        v = where(equal(rows, j), x + multiply(_phase(alpha), nx), x)
        vn = sum(abs(v) ** 2, axis=-2, keepdims=True).astype(dt)
        u = where(equal(vn, 0), 0, multiply(v, sqrt(divide(2, where(equal(vn, 0), 1, vn)))))
        return subtract(Q, _mm(_mm(Q, u), _ct(u)))

    return lax.fori_loop(0, n, body, _batch_eye(shape[:-2] + (m, m), dt))


def _qr(a, mode: str = "reduced"):
    """`_qr_loops` as a named call (on the CPU, LAPACK's geqrf and orgqr: `host-lapack`); an empty matrix, or a mode
    it rejects, as it is."""
    m, n = aval_of(a).shape[-2:]
    if m == 0 or n == 0 or mode not in ("reduced", "complete", "r"):
        return _qr_loops(a, mode)
    if mode == "r":
        return _geqrf_r(a)[0]
    return tuple(_geqrf_complete(a) if mode == "complete" and m > n else _geqrf(a))


@named("lapack.geqrf")
def _geqrf(a):
    return list(_qr_loops(a, "reduced"))


@named("lapack.geqrf_complete")
def _geqrf_complete(a):
    return list(_qr_loops(a, "complete"))


@named("lapack.geqrf_r")
def _geqrf_r(a):
    return [_qr_loops(a, "r")]


def _qr_loops(a, mode: str = "reduced"):
    """QR by Householder reflections (`_householder`), Q accumulated from them."""
    shape = aval_of(a).shape
    m, n = shape[-2:]
    k = builtins.min(m, n)
    a, scale = _pow2_scaled(a)
    V, tau, R = _householder(a)
    R = _scaled(where(_idx(m, -2) <= _idx(n, -1), R, 0), scale, multiply)
    if mode == "r":
        return R[..., :k, :]
    if mode == "raw":
        raise NotImplementedError("qr: mode='raw' (LAPACK's packed reflectors) is not supported")
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: unrecognized mode {mode!r} (use 'reduced', 'complete' or 'r')")
    cols = m if mode == "complete" else k
    Q = _apply_q(V, tau, _batch_eye(shape[:-2] + (m, cols), aval_of(a).dtype))
    return Q, (R if mode == "complete" else R[..., :k, :])


class QRResult(NamedTuple):
    Q: Any
    R: Any


def _qr_host(a, /, mode: str = "reduced"):
    """An eager QR answered by `host.lapack_qr` where its jitted module is that one call (see `_host_call`)."""
    found = _host_lapack("geqrf", a, square=False) if mode in ("reduced", "complete", "r") else None
    if found is None:
        return None
    v = found[0]
    *batch, m, n = v.shape
    rows = m if mode == "complete" else builtins.min(m, n)
    r = np.empty((*batch, rows, n), v.dtype)
    if mode == "r":
        lapack_qr(v.reshape(-1, m, n), r.reshape(-1, rows, n))
        return _host_result(r, _host_aval(r))
    q = np.empty((*batch, m, rows), v.dtype)
    lapack_qr(v.reshape(-1, m, n), r.reshape(-1, rows, n), q.reshape(-1, m, rows), mode == "complete")
    return _host_result(q, _host_aval(q)), _host_result(r, _host_aval(r))


@_staged("mode", eager=_qr_host)
def _qr_staged(a, mode: str = "reduced"):
    if mode == "raw":
        raise NotImplementedError("qr: mode='raw' (LAPACK's packed reflectors) is not supported")
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: unrecognized mode {mode!r} (use 'reduced', 'complete' or 'r')")
    return _qr_d(_mat("qr", a), mode)


def qr(a, mode: str = "reduced"):
    """QR by Householder reflections: (Q, R) for mode 'reduced'/'complete', R alone for 'r'."""
    out = _qr_staged(a, mode=mode)
    return out if mode == "r" else QRResult(*out)


# ---------------------------------------------------------------- Jacobi (eigh, svd)


def _partners(N: int, r):
    """Round r (traced, 0 <= r < N - 1) of the circle method on N (even) slots: each slot's partner (int32, (N,))
    and whether it is the lower of its pair. Slot N-1 meets r; slot j < N-1 meets (2r - j) mod (N-1). Every pair
    meets once in N - 1 rounds. Pairs are picked by index, not by moving columns (one gather per operand)."""
    M = N - 1
    _mod = lambda x, k: lax.rem(x, lax.full_like(x, k))  # (x >= 0)
    j = lax.iota(np.int32, N)
    r = lax._convert_element_type(r, np.int32)
    p = where(equal(j, M), r, where(equal(j, r), M, _mod(subtract(multiply(r, 2), j) + M, M)))
    return p, less(j, p)


def _pair(v, part, first):
    """(v at the lower slot of each pair, v at the upper), for every slot (both slots of a pair get the same)."""
    vp = take(v, part, axis=-1, mode="clip")
    return where(first, v, vp), where(first, vp, v)


def _at(x, i, j):
    """x[..., i, j] for int32 index arrays i (k, 1) or (k, l) and j (1, l) or (k, l): one gather on the flattened
    matrix (a gather of a gather is two dispatches in IREE; this one fuses into its elementwise consumer)."""
    sh = aval_of(x).shape
    flat = lax.reshape(x, sh[:-2] + (sh[-2] * sh[-1],))
    idx = broadcast_to(i * sh[-1] + j, broadcast_shapes(aval_of(i).shape, aval_of(j).shape))
    k, l = aval_of(idx).shape
    return lax.reshape(take(flat, lax.reshape(idx, (k * l,)), axis=-1, mode="clip"), sh[:-2] + (k, l))


def _coefficients(first, c, s, w=None):
    """Per column j of a pair (p, q) rotated by [[c, s w], [-s, c w]] (w: the phase making a_p^H a_q real, or
    None): the factors of column j itself and of its partner, so that new_j = A_j f_j + A_partner(j) g_j."""
    if w is None:
        return c, where(first, -s, s)
    return where(first, c, c * w), where(first, -s * w, s)


def _rotation(app, aqq, apq):
    """(c, s) of the Jacobi rotation [[c, s], [-s, c]] that diagonalizes [[app, apq], [apq, aqq]] (apq real, of
    either sign; |angle| <= pi/4)."""
    safe = where(equal(apq, 0), 1, apq)
    tau = divide(subtract(aqq, app), multiply(2, safe))
    at = abs(tau)
    big = greater(at, 1)  # sqrt(1 + tau^2) as |tau| sqrt(1 + tau^-2) there: no overflow for large |tau|
    inv = divide(1, where(big, at, 1))
    root = where(big, at * sqrt(1 + inv * inv), sqrt(1 + at * at))
    t = divide(where(less(tau, 0), -1, 1), at + root)
    t = where(equal(apq, 0), 0, where(isfinite(tau), t, 0))
    c = divide(1, sqrt(1 + t * t))
    return c, multiply(t, c)


_MAX_SWEEPS = 30

# The Jacobi loops carry their test `go` (the sweep computes it; the loop's cond only reads it, so IREE compiles no
# test of its own). The sweep's `go` is `go and ...`: IREE 3.13 fails to compile (scf.while operand count
# mismatch, or a crash) a while loop whose carried scalar is a fresh reduction of another carry that does not
# read its own previous value.


def _top(x):
    """The largest element of x, 0 where x is empty (a batch of no matrices: no sweep after the first)."""
    return max(x) if aval_of(x).size else zeros((), aval_of(x).dtype)


def _pad_corner(a, value):
    """`a` (..., m, n) with one more row and column, zero but for `value` (...,) in the new corner. Complex
    parts are padded apart (IREE 3.13 crashes compiling some complex pads)."""
    m, n = aval_of(a).shape[-2:]
    widths = [(0, 0)] * (aval_of(a).ndim - 2) + [(0, 1), (0, 1)]
    corner = logical_and(equal(_idx(m + 1, -2), m), equal(_idx(n + 1, -1), n))
    edge = lambda x: where(corner, expand_dims(expand_dims(value, -1), -1).astype(aval_of(x).dtype), pad(x, widths))
    if _is_complex(a):
        return lax.complex(edge(real(a)), pad(imag(a), widths))
    return edge(a)


def _sort_with_order(x):
    """`x` sorted ascending along its last axis (stable, NaN last) and the int32 order: one sort."""
    sh = aval_of(x).shape
    return lax.sort((x, lax.broadcasted_iota(np.int32, sh, len(sh) - 1)), len(sh) - 1, True, num_keys=2)


def _columns(y, order):
    """The columns of y (..., m, k) in `order` (int32 (..., n), n <= k): one `take` where there is no batch (its
    gather fuses into the consumer; take_along_axis's index tensor is a constant IREE hoists and copies)."""
    if aval_of(order).ndim == 1:
        return take(y, order, axis=-1, mode="clip")
    return take_along_axis(y, broadcast_to(expand_dims(order, -2), aval_of(y).shape[:-1] + aval_of(order).shape[-1:]),
                           axis=-1)


def _eigh(a):
    """Cyclic two-sided Jacobi with round-robin ordering (`_partners`): n/2 disjoint rotations per step, applied
    to A's rows and columns in one elementwise pass over gathers (O(n^2)), n-1 steps per sweep, sweeps until the
    off-diagonal norm is below eps * ||A||_F.
    Returns (ascending eigenvalues (real), eigenvectors as columns). (On the CPU, LAPACK's syevd/heevd:
    `host-lapack`.)"""
    w, V = _syevd(a)
    return w, V


def _eigh_sym(a):
    """`_eigh` of a's Hermitian part (a + a^H) / 2 (`eigh`'s default, `symmetrize_input`)."""
    w, V = _syevd_sym(a)
    return w, V


@named("lapack.syevd_sym")
def _syevd_sym(a):
    """`_syevd` of a's Hermitian part (on the CPU, the host's: that in NumPy, then LAPACK's syevd or heevd,
    `host.lapack_eigh_sym`)."""
    return _syevd(_sym(a))


@named("lapack.syevd")
def _syevd(a):
    shape = aval_of(a).shape
    n, dt = shape[-1], aval_of(a).dtype
    rdt = _real_dtype(dt)
    if n == 0:
        return [zeros(shape[:-1], rdt), a]
    a, scale = _pow2_scaled(a)
    fro = sqrt(sum(abs(a) ** 2, axis=(-2, -1)))
    odd = n % 2
    if odd:  # a decoupled extra eigenvalue above all others (||A||_F + 1), dropped after sorting
        a = _pad_corner(a, fro + 1)
    N = n + odd
    V0 = _batch_eye(aval_of(a).shape, dt)
    tol = _eps(a) * 1.0
    offmask = ~np.eye(N, dtype=bool) if N * N <= EYE_LITERAL else ~equal(_idx(N, -2), _idx(N, -1))  # (see EYE_LITERAL)
    cplx = _is_complex(a)

    rows, cols = _idx(N, -2), _idx(N, -1)

    def step(r, state):
        A, V = state
        part, first = _partners(N, r)
        pc = expand_dims(part, -2)
        lo, hi = expand_dims(where(first, cols[0], part), -2), expand_dims(where(first, part, cols[0]), -2)
        # A[p, p], A[q, q], A[p, q] of each slot's pair (p < q), each one gather of A (a gather of a gathered
        # vector is a dispatch more in IREE)
        app, aqq, apq = (_at(A, i, j)[..., 0, :] for i, j in ((lo, lo), (hi, hi), (lo, hi)))
        if cplx:
            app, aqq = real(app), real(aqq)
        w = None
        if cplx:  # A[p, q] made real by scaling column q by w (and row q by conj(w))
            w = conjugate(_phase(apq))
            apq = abs(apq)
        c, s = _rotation(app, aqq, apq)
        if cplx:
            c, s = c.astype(dt), s.astype(dt)
        f, g = _coefficients(first, c, s, w)
        fc, gc = expand_dims(f, -2), expand_dims(g, -2)
        fr, gr = expand_dims(conjugate(f) if cplx else f, -1), expand_dims(conjugate(g) if cplx else g, -1)
        pr = expand_dims(part, -1)
        at = lambda i, j: _at(A, i, j)
        # J^H A J in one elementwise pass over four gathers of A (B = A J is not materialized)
        B, Bp = A * fc + at(rows, pc) * gc, at(pr, cols) * fc + at(pr, pc) * gc
        A = B * fr + Bp * gr
        V = V * fc + _at(V, rows, pc) * gc
        return A, V

    def off(A):
        o = sqrt(sum(abs(where(offmask, A, 0)) ** 2, axis=(-2, -1)))
        return _top(divide(o, where(equal(fro, 0), 1, fro)))

    def sweep(state):
        A, V, it, go = state
        # (A + A^H) / 2 after each sweep (`a` is Hermitian): the rounding's anti-Hermitian part (an imaginary
        # diagonal, A[q, p] not conj(A[p, q])) is invariant under the rotations and would hold the off-diagonal
        # norm above tol. (In the dispatch that measures it.)
        A, V = lax.fori_loop(0, N - 1, step, (A, V))
        A, it = _sym(A), it + 1
        return A, V, it, logical_and(go, logical_and(it < _MAX_SWEEPS, off(A) > tol))

    # (`go`: see _MAX_SWEEPS.) The first sweep always runs (its rotations are the identity where `a` is diagonal;
    # NaN where `a` is not finite, as NumPy's); testing off(a) cost two dispatches. The true is behind a barrier:
    # a constant one, whose test IREE folds away (no scf.if around the loop), made pinv of a batch of 7x5
    # matrices fail at run time (svd's loop; "indirect buffer reference slot 0 is out range", IREE 3.13).
    A, V, _, _ = lax.while_loop(lambda s: s[3], sweep, (a, V0, 0, lax.optimization_barrier(np.array(True))))
    w = real(_diag(A)) if cplx else _diag(A)
    w, order = _sort_with_order(w)
    V = _columns(V, order)
    if odd:
        w, V = w[..., :n], V[..., :n, :n]
    return [multiply(w, scale[..., 0]), V]


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


# float dtype -> (its smallest normal, max / 2): `_eigh_host`'s bounds
def _eigh_host(a, /, UPLO: str | None = None, symmetrize_input: bool = True):
    """An eager eigh answered by `host.lapack_eigh_sym` where its jitted module is that one call (the Hermitian part
    and syevd, both on the host: `_syevd_sym`), else None."""
    found = _host_lapack("syevd_sym", a) if symmetrize_input else None
    if found is None:
        return None
    v = found[0]
    *batch, n = v.shape[:-1]
    w = np.empty((*batch, n), np.dtype(v.dtype.char.lower()) if v.dtype.kind == "c" else v.dtype)
    vec = np.empty(v.shape, v.dtype)
    lapack_eigh_sym(v.reshape(-1, n, n), w.reshape(-1, n), vec.reshape(-1, n, n))
    return _host_result(w, _host_aval(w)), _host_result(vec, _host_aval(vec))


@_staged("UPLO", "symmetrize_input", eager=_eigh_host)
def _eigh_staged(a, UPLO: str | None = None, symmetrize_input: bool = True):
    return _eigh_of("eigh", a, UPLO, symmetrize_input)


def _eigh_of(fname: str, a, UPLO: str | None, symmetrize_input: bool):
    """(w, V) of the Hermitian matrix `_hermitian` makes of `a`; a's Hermitian part in the named call (so that the
    CPU's host computes it too, as cholesky's)."""
    if symmetrize_input:
        _check_uplo(fname, UPLO)
        return _eigh_sym_d(_mat(fname, a, square=True))
    return _eigh_d(_hermitian(fname, a, UPLO, symmetrize_input))


def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors (columns) of Hermitian `a`: of (a + a^H) / 2 (JAX's default), or
    with `symmetrize_input=False` of its `UPLO` triangle ('L' by default; NumPy's)."""
    return EighResult(*_eigh_staged(a, UPLO=UPLO, symmetrize_input=symmetrize_input))


@_staged("UPLO", "symmetrize_input")
def eigvalsh(a, UPLO: str | None = "L", *, symmetrize_input: bool = True):
    """Eigenvalues (ascending) of Hermitian `a` (`UPLO` and `symmetrize_input` as in `eigh`)."""
    return _eigh_of("eigvalsh", a, UPLO, symmetrize_input)[0]


# U without a QR (a square, or full_matrices=False): U is the rotated columns normalized (a Householder loop over
# them after the Jacobi loops was 30% of svd's compile time). The Jacobi loops then run on a / ||a||_F, and a column
# that is zero at the start of a sweep (a zero singular value: a zero column of a, or one the rotations emptied) is
# replaced by a stand-in, a fixed generic column (`_stand_ins`) of entries below _STAND_IN * eps, and marked: the
# sweeps rotate it like any other column, orthogonal to all others, and its normalized column completes U while
# its singular value is 0. A rotation with a stand-in moves A V = W by about the stand-in's norm (<= eps sqrt(m) / 32).
_STAND_IN = 2.0 ** -4


def _stand_ins(m: int, n: int, dt):
    """(m, n) fixed, generic entries in [-0.5, 0.5) (an additive-recurrence sequence of (i, j)): no column is
    parallel to a structured one (e_k, ones). A literal up to EYE_LITERAL elements, else computed from iotas."""
    a, b, c = 0.7548776662466927, 0.5698402909980532, 0.6180339887498949
    rdt = _real_dtype(dt)
    if m * n <= EYE_LITERAL:
        i, j = np.meshgrid(np.arange(1.0, m + 1), np.arange(1.0, n + 1), indexing="ij")
        x = i * a + j * b + i * j * c
        return np.asarray(x - np.floor(x) - 0.5, dtype=rdt).astype(dt)
    i, j = lax.broadcasted_iota(rdt, (m, n), 0) + 1, lax.broadcasted_iota(rdt, (m, n), 1) + 1
    x = i * a + j * b + i * j * c
    return (x - lax.floor(x) - 0.5).astype(dt)


def _jacobi_columns(a, scale=None):
    """One-sided (Hestenes) Jacobi on the columns of a (..., m, n), m >= n: rotate column pairs until each
    pair is orthogonal to eps * sqrt(m) relative to their norms. Returns (A V with orthogonal columns, V).
    With `scale` (1 / ||a||_F, or 1 where a is zero; (...,)): of `a * scale` (scaled in the first sweep's first
    dispatch), zero columns replaced by stand-ins (see _STAND_IN; no column is zero at the end), and returns which
    columns are stand-ins (bool (..., n)) too."""
    complete = scale is not None
    shape = aval_of(a).shape
    m, n = shape[-2:]
    dt = aval_of(a).dtype
    cplx = _is_complex(a)
    tol = _eps(a) * float(np.sqrt(m))
    V0 = _batch_eye(shape[:-2] + (n, n), dt)
    stand_ins = multiply(_stand_ins(m, n, dt), _eps(a) * _STAND_IN) if complete else None

    def step(r, state):
        A, V, worst = state
        part, first = _partners(n, r)
        # Five dispatches a step (norms; a_j^H a_partner(j) and the partners; the pairs' coefficients; A; V): the
        # fewer-dispatch forms (a_p^H a_q reduced from gathers, the coefficients or the rotation in that reduction's
        # dispatch) ran warm svds slower (docs/log.md).
        P = take(A, part, axis=-1, mode="clip")  # the partner of each column
        nrm = sum(abs(A) ** 2, axis=-2)
        g = sum(multiply(conjugate(A) if cplx else A, P), axis=-2)  # a_j^H a_partner(j)
        alpha, beta = _pair(nrm, part, first)
        gamma = _pair(g, part, first)[0]  # a_p^H a_q
        w = None
        if cplx:
            w = conjugate(_phase(gamma))
            gamma = abs(gamma)
        ab = multiply(sqrt(alpha), sqrt(beta))
        rel = where(greater(ab, 0), divide(abs(gamma), where(greater(ab, 0), ab, 1)), 0)
        c, s = _rotation(alpha, beta, gamma)
        if cplx:
            c, s = c.astype(dt), s.astype(dt)
        f, g = _coefficients(first, c, s, w)
        fc, gc = expand_dims(f, -2), expand_dims(g, -2)
        A, V = A * fc + P * gc, V * fc + take(V, part, axis=-1, mode="clip") * gc
        worst = lax.max(worst, rel.astype(aval_of(worst).dtype))  # per slot: no reduction per step
        return A, V, worst

    def sweep(state):
        A, V, *fake, it, go = state  # (fake: [which columns are stand-ins] where complete)
        zero = zeros(shape[:-2] + (n,), _real_dtype(dt))
        if complete:  # (a column emptied in a sweep had a rotation of cosine 1 there: another sweep runs)
            A = multiply(A, expand_dims(expand_dims(where(it == 0, scale, 1), -1), -1).astype(dt))
            z = equal(sum(abs(A) ** 2, axis=-2), 0)
            A, fake = where(expand_dims(z, -2), stand_ins, A), [logical_or(fake[0], z)]
        A, V, worst = lax.fori_loop(0, n - 1, step, (A, V, zero))
        it = it + 1
        return A, V, *fake, it, logical_and(go, logical_and(it < _MAX_SWEEPS, _top(worst) > tol))

    # (`go`: see _MAX_SWEEPS; the first true behind a barrier as in _eigh)
    fake = [zeros(shape[:-2] + (n,), np.bool_)] if complete else []
    A, V, *fake, _, _ = lax.while_loop(lambda s: s[-1], sweep,
                                       (a, V0, *fake, 0, lax.optimization_barrier(np.array(True))))
    return (A, V, *fake)


def _svd(a, full_matrices: bool = True, compute_uv: bool = True):
    """`_svd_jacobi` as a named call (on the CPU, LAPACK's gesdd: `host-lapack`); an empty matrix as it is."""
    m, n = aval_of(a).shape[-2:]
    if m == 0 or n == 0:
        return _svd_jacobi(a, full_matrices, compute_uv)
    if not compute_uv:
        return _gesdd_vals(a)[0]
    return tuple(_gesdd_full(a) if full_matrices and m != n else _gesdd(a))


@named("lapack.gesdd")
def _gesdd(a):
    return list(_svd_jacobi(a, False, True))


@named("lapack.gesdd_full")
def _gesdd_full(a):
    return list(_svd_jacobi(a, True, True))


@named("lapack.gesdd_vals")
def _gesdd_vals(a):
    return [_svd_jacobi(a, False, False)]


def _svd_jacobi(a, full_matrices: bool = True, compute_uv: bool = True):
    """SVD by one-sided Jacobi (accurate small singular values; no A^H A). U: the normalized rotated columns where
    it has no more columns than a (`_svd_complete`), else (a full U of a tall matrix, complex) from a QR of them
    (which also completes U where singular values are zero or U is full)."""
    shape = aval_of(a).shape
    m, n = shape[-2:]
    if m < n:
        out = _svd_jacobi(_ct(a), full_matrices, compute_uv)
        return out if not compute_uv else (_ct(out[2]), out[1], _ct(out[0]))
    dt = aval_of(a).dtype
    rdt = _real_dtype(dt)
    batch = shape[:-2]
    if n == 0:
        s = zeros(batch + (0,), rdt)
        if not compute_uv:
            return s
        return _batch_eye(batch + (m, m if full_matrices else 0), dt), s, zeros(batch + (0, 0), dt)
    # Taken by its largest |entry| to 1 (LAPACK's gesvd scales too): the sweeps square entries, which under- and
    # overflow in float32 past ~1e-19 and ~1e19 (a 1e-22 matrix gave singular values 0, silently).
    top = max(abs(a), axis=(-2, -1))
    top = where(logical_and(greater(top, 0), isfinite(top)), top, 1)
    out = _svd_unit(divide(a, expand_dims(expand_dims(top, -1), -1).astype(dt)), full_matrices, compute_uv)
    top = expand_dims(top, -1)
    return multiply(out, top) if not compute_uv else (out[0], multiply(out[1], top), out[2])


def _svd_unit(a, full_matrices: bool, compute_uv: bool):
    """`_svd` of a (..., m, n), m >= n > 0, whose entries are at most 1 in magnitude."""
    shape = aval_of(a).shape
    m, n = shape[-2:]
    dt = aval_of(a).dtype
    if compute_uv and not (full_matrices and m > n) and not _is_complex(a):
        return _svd_complete(a)  # (complex: IREE 3.13 failed to compile it, "'linalg.generic' op expected operand
        # #8 rank (3) to match the result rank of indexing_map (2)", for one matrix and a batch)
    odd = n % 2
    x = a
    if odd:  # an extra orthogonal column of norm ||A||_F + 1 in an extra row: sorts first, dropped
        fro = sqrt(sum(abs(a) ** 2, axis=(-2, -1)))
        x = _pad_corner(a, fro + 1)
    A, V = _jacobi_columns(x)
    s = sqrt(sum(abs(A) ** 2, axis=-2))
    s, order = _sort_with_order(-s)
    s = -s
    if odd:
        order, s = order[..., 1:], s[..., 1:]
    if not compute_uv:
        return s
    A, V = _columns(A, order), _columns(V, order)
    if odd:
        A, V = A[..., :m, :], V[..., :n, :]
    sd = expand_dims(s, -2).astype(dt)
    Un = where(equal(sd, 0), 0, divide(A, where(equal(sd, 0), 1, sd)))
    # Q is m x m: accumulated in the QR's loop (R's diagonal is q_j^H un_j). Not for complex values: IREE 3.13
    # could not compile that loop for one complex matrix ("expected operand #1 rank (2) to match the result
    # rank of indexing_map (1)"; a batch of two compiled).
    if (full_matrices or m == n) and not _is_complex(Un):
        Q = _householder_q(Un)
        Qn = Q[..., :n]
        ph = _phase(sum(multiply(conjugate(Qn) if _is_complex(Qn) else Qn, Un), axis=-2, keepdims=True))
        return (concatenate([multiply(Qn, ph), Q[..., n:]], -1) if m > n else multiply(Q, ph)), s, _ct(V)
    Q, R = _qr_loops(Un, "complete" if full_matrices else "reduced")  # (m x n: two loops, O(m n^2), where one loop over
    ph = expand_dims(_phase(_diag(R)), -2)  # an m x m Q is O(m^2 n))
    return (concatenate([multiply(Q[..., :n], ph), Q[..., n:]], -1) if full_matrices and m > n else multiply(Q, ph)), \
        s, _ct(V)


def _svd_complete(a):
    """(U (..., m, n), s, V^H) of a (..., m, n), m >= n, U the rotated columns normalized (see _STAND_IN)."""
    m, n = aval_of(a).shape[-2:]
    dt = aval_of(a).dtype
    fro2 = sum(abs(a) ** 2, axis=(-2, -1))
    big = greater(fro2, 0)
    scale = where(big, lax.rsqrt(where(big, fro2, 1)), 1)
    odd = n % 2
    # (odd: as in _svd, a corner above every singular value, 2 ||a||_F: 2 once scaled)
    x = _pad_corner(a, where(big, 2 * sqrt(fro2), 1)) if odd else a
    A, V, fake = _jacobi_columns(x, scale)
    nz = sqrt(sum(abs(A) ** 2, axis=-2))  # (zero only where _MAX_SWEEPS ended the sweeps)
    U = divide(A, expand_dims(where(equal(nz, 0), 1, nz), -2).astype(dt))
    s, order = _sort_with_order(-where(fake, 0, nz))
    s, order = -s[..., odd:], order[..., odd:]  # (odd: the corner sorts first)
    U, V = _columns(U, order), _columns(V, order)
    s = multiply(s, expand_dims(sqrt(fro2), -1))
    return (U[..., :m, :], s, _ct(V[..., :n, :])) if odd else (U, s, _ct(V))


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


def _svd_host(a, /, full_matrices: bool = True, compute_uv: bool = True):
    """An eager SVD answered by `host.lapack_svd` where its jitted module is that one call (see `_host_call`)."""
    found = _host_lapack("gesdd", a, square=False)
    if found is None:
        return None
    v = found[0]
    *batch, m, n = v.shape
    k = builtins.min(m, n)
    s = np.empty((*batch, k), _real_dtype(v.dtype))
    if not compute_uv:
        lapack_svd(v.reshape(-1, m, n), s.reshape(-1, k))
        return _host_result(s, _host_aval(s))
    cu, cv = (m, n) if full_matrices else (k, k)
    u, vh = np.empty((*batch, m, cu), v.dtype), np.empty((*batch, cv, n), v.dtype)
    lapack_svd(v.reshape(-1, m, n), s.reshape(-1, k), u.reshape(-1, m, cu), vh.reshape(-1, cv, n))
    return tuple(_host_result(x, _host_aval(x)) for x in (u, s, vh))


@_staged("full_matrices", "compute_uv", eager=_svd_host)
def _svd_staged(a, full_matrices: bool = True, compute_uv: bool = True):
    return _svd_d(_mat("svd", a), full_matrices, compute_uv)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """Singular value decomposition (U, S, Vh) of `a` (..., m, n), S descending; S alone if not compute_uv.
    `hermitian` is accepted and ignored (the general algorithm is used)."""
    out = _svd_staged(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return SVDResult(*out) if compute_uv else out


@_staged(eager=lambda x, /: _svd_host(x, False, False))
def svdvals(x, /):
    """Singular values of `x` (..., m, n), descending."""
    return _svd_d(_mat("svdvals", x), False, False)


# ---------------------------------------------------------------- built on the decompositions


def _default_rtol(a) -> float:
    m, n = aval_of(a).shape[-2:]
    return _eps(a) * builtins.max(m, n)


@_staged("hermitian")
def pinv(a, rcond=None, hermitian: bool = False, *, rtol=None):
    """Moore-Penrose pseudo-inverse by SVD; singular values below rtol * max(s) are dropped (default
    rtol: max(M, N) * eps, the Array API's choice)."""
    a = _mat("pinv", a)
    tol = rtol if rtol is not None else (rcond if rcond is not None else _default_rtol(a))
    u, s, vh = _svd_d(a, False, True)
    cut = multiply(expand_dims(tol, -1) if _is_array(tol) else tol, max(s, axis=-1, keepdims=True)) \
        if aval_of(s).shape[-1] else s
    sinv = where(greater(s, cut), divide(1, where(greater(s, cut), s, 1)), 0).astype(aval_of(a).dtype)
    return _mm(multiply(_ct(vh), expand_dims(sinv, -2)), _ct(u))


@_staged("p")
def cond(x, p=None):
    """Condition number of `x` (..., m, n) in the norm `p`: None, 2 or -2 from the singular values (the ratio of
    the largest to the smallest, or its inverse), else norm(x) * norm(inv(x)) (square x). Where that is NaN
    because x is singular (not because x holds a NaN) it is inf, as JAX's."""
    x = _mat("cond", x, square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        s = _svd_d(x, False, False)
        hi, lo = s[..., 0], s[..., -1]
        r = divide(lo, hi) if p == -2 else divide(hi, lo)
    else:
        r = multiply(norm(x, ord=p, axis=(-2, -1)), norm(inv(x), ord=p, axis=(-2, -1)))
    return where(logical_and(isnan(r), ~_any(isnan(x), axis=(-2, -1))), np.inf, r)


@_staged("hermitian")
def matrix_rank(A, tol=None, hermitian: bool = False, *, rtol=None):
    """Number of singular values above `tol` (default: max(s) * max(M, N) * eps, or rtol * max(s))."""
    A = _mat("matrix_rank", A, min_ndim=1)
    if aval_of(A).ndim == 1:
        return (~equal(A, 0)).any().astype(_dt.default_int())
    s = _svd_d(A, False, False)
    smax = max(s, axis=-1, keepdims=True) if aval_of(s).shape[-1] else s
    t = tol if tol is not None else multiply(smax, rtol if rtol is not None else _default_rtol(A))
    if tol is not None and _is_array(tol):
        t = expand_dims(tol, -1)
    return count_nonzero(greater(s, t), axis=-1).astype(_dt.default_int())


class LstsqResult(NamedTuple):
    x: Any
    residuals: Any
    rank: Any
    singular_values: Any


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False) -> LstsqResult:
    """Least squares by SVD (x, residuals, rank, s), JAX's: singular values below rcond * s_max (default
    max(M, N) eps; negative: eps) are dropped. residuals: squared 2-norms of b - a x, always (JAX's default), or
    with `numpy_resid` NumPy's empty array where M <= N (and, shapes being static, the norms for any rank where
    M > N; NumPy's are empty below full rank)."""
    return LstsqResult(*_lstsq(a, b, rcond=rcond, numpy_resid=numpy_resid))


@_staged("rcond", "numpy_resid")
def _lstsq(a, b, rcond=None, numpy_resid: bool = False):
    a = _mat("lstsq", a)
    b = b if _is_array(b) else asarray(b)
    if aval_of(a).ndim != 2:
        raise LinAlgError(f"lstsq: a must be 2-dimensional, got shape {aval_of(a).shape}")
    b = b.astype(aval_of(a).dtype)
    vec = aval_of(b).ndim == 1
    bb = expand_dims(b, -1) if vec else b
    m, n = aval_of(a).shape
    if aval_of(bb).shape[0] != m:
        raise LinAlgError(f"lstsq: incompatible dimensions: a {aval_of(a).shape}, b {aval_of(b).shape}")
    u, s, vh = _svd_d(a, False, True)
    rc = _eps(a) * builtins.max(m, n) if rcond is None else (_eps(a) if rcond < 0 else rcond)
    tol = rc * (max(s) if n and m else 0)
    keep = logical_and(greater(s, 0), ~less(s, tol))  # (JAX's: s >= rcond * s_max, s > 0)
    sinv = where(keep, divide(1, where(keep, s, 1)), 0).astype(aval_of(a).dtype)
    x = _mm(_ct(vh), multiply(expand_dims(sinv, -1), _mm(_ct(u), bb)))
    rank = count_nonzero(keep).astype(_dt.default_int())
    if numpy_resid and m <= n:
        resid = zeros((0,), _real_dtype(aval_of(a).dtype))
    else:
        resid = sum(abs(subtract(bb, _mm(a, x))) ** 2, axis=0)
    return x[:, 0] if vec else x, resid, rank, s


def matrix_power(a, n: int, /):
    """`a` raised to the integer power `n` by repeated squaring (n < 0: of the inverse)."""
    a = a if _is_array(a) else asarray(a)
    if aval_of(a).ndim < 2 or aval_of(a).shape[-1] != aval_of(a).shape[-2]:
        raise LinAlgError(f"matrix_power: a must be square in its last two dimensions, got {aval_of(a).shape}")
    n = operator.index(n)
    if n == 0:
        return _batch_eye(aval_of(a).shape, aval_of(a).dtype)
    if n < 0:
        a, n = inv(a), -n
    return lax.power_by_squaring(a, n, matmul)


# ---------------------------------------------------------------- norms


def _diag(x):
    return _np_diagonal(x, 0, -2, -1)


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """p-norm over `axis` (all axes when None): ord in {inf, -inf, 0, 1, 2, p}; real result dtype."""
    x = x if _is_array(x) else asarray(x)
    if _dt.kind(aval_of(x).dtype) in "biu":
        x = astype(x, _dt.default_float())
    nd = aval_of(x).ndim
    axes = _axes(axis, nd, "vector_norm")
    ax = abs(x)
    kw = dict(axis=axes, keepdims=keepdims)
    if ord is None or ord == 2:
        out = sqrt(sum(multiply(ax, ax), **kw))
    elif ord == np.inf:
        out = max(ax, **kw) if aval_of(x).size else sum(ax, **kw)
    elif ord == -np.inf:
        out = min(ax, **kw)
    elif ord == 0:
        out = count_nonzero(~equal(x, 0), axis=axes, keepdims=keepdims).astype(aval_of(ax).dtype)
    elif ord == 1:
        out = sum(ax, **kw)
    else:
        out = power(sum(power(ax, ord), **kw), 1.0 / ord)
    return out


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """Matrix norm over the last two axes: 'fro', 'nuc', 1, -1, 2, -2, inf, -inf."""
    return _matrix_norm(_mat("matrix_norm", x), ord, (-2, -1), keepdims)


def _norm_extreme(v, axis: int, ord, shape: tuple):
    """max (ord > 0) or min of v over `axis`, as NumPy's matrix norms: 0 over an empty axis (its max has
    initial=0); a min over an empty axis has no value, so it raises."""
    if aval_of(v).shape[axis]:
        return (max if ord > 0 else min)(v, axis=axis)
    if ord > 0:
        return max(v, axis=axis, initial=0)
    raise ValueError(f"norm: ord={ord!r} is a minimum over an empty axis for a matrix of shape {shape}")


def _matrix_norm(x, ord, axes: tuple, keepdims: bool):
    nd = aval_of(x).ndim
    r, c = (_axis(a, nd, "norm") for a in axes)
    if r == c:
        raise ValueError("norm: duplicate axes given")
    if ord in ("fro", "f", None):
        out = sqrt(sum(abs(x) ** 2, axis=(r, c)))
    elif ord in (1, -1):
        out = _norm_extreme(sum(abs(x), axis=r), c - (c > r), ord, aval_of(x).shape)
    elif ord in (np.inf, -np.inf):
        out = _norm_extreme(sum(abs(x), axis=c), r - (r > c), ord, aval_of(x).shape)
    elif ord in (2, -2, "nuc"):
        s = svdvals(moveaxis(x, (r, c), (-2, -1)))
        out = sum(s, axis=-1) if ord == "nuc" else _norm_extreme(s, -1, ord, aval_of(x).shape)
    else:
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    if keepdims:
        out = expand_dims(out, tuple(sorted((r, c))))
    return out


def norm(x, ord=None, axis=None, keepdims: bool = False):
    """NumPy's `norm`: vector norms over one axis (or all, flattened, when ord is None), matrix norms over two."""
    x = x if _is_array(x) else asarray(x)
    if _dt.kind(aval_of(x).dtype) in "biu":
        x = astype(x, _dt.default_float())
    nd = aval_of(x).ndim
    if axis is None:
        if ord is None:
            return vector_norm(x, axis=None, keepdims=keepdims)
        if nd == 1:
            return vector_norm(x, axis=0, keepdims=keepdims, ord=ord)
        if nd == 2:
            return _matrix_norm(x, ord, (0, 1), keepdims)
        raise ValueError(f"norm: improper number of dimensions to norm ({nd}) for ord={ord!r}")
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if len(axes) == 1:
        if isinstance(ord, str):
            raise ValueError(f"norm: invalid norm order {ord!r} for vectors")
        return vector_norm(x, axis=axes, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError(f"norm: improper number of dimensions to norm: axis={axis!r}")


# ---------------------------------------------------------------- products and views


def cross(x1, x2, /, *, axis: int = -1):
    """Cross product of 3-element vectors along `axis` (broadcasting the other axes)."""
    x1, x2 = (x if _is_array(x) else asarray(x) for x in (x1, x2))
    if aval_of(x1).shape[axis] != 3 or aval_of(x2).shape[axis] != 3:
        raise ValueError(f"cross: both inputs need size 3 along axis {axis}, got shapes {aval_of(x1).shape} "
                         f"and {aval_of(x2).shape}")
    a, b = moveaxis(x1, axis, -1), moveaxis(x2, axis, -1)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(out, -1, axis)


def outer(x1, x2, /):
    """Outer product of two 1-D arrays."""
    for x in (x1, x2):
        if aval_of(x if _is_array(x) else asarray(x)).ndim != 1:
            raise ValueError("linalg.outer: both inputs must be 1-dimensional")
    return _outer(x1, x2)


def trace(x, /, *, offset: int = 0, dtype=None):
    """Sum of the `offset` diagonal of the last two axes."""
    return _np_trace(x, offset, -2, -1, dtype)


def diagonal(x, /, *, offset: int = 0):
    """The `offset` diagonal of the last two axes."""
    return _np_diagonal(x, offset, -2, -1)


def tensorinv(a, ind: int = 2):
    """The inverse of `a` as a linear map from its last dimensions to its first `ind` (`a.shape[:ind]` and
    `a.shape[ind:]` of equal sizes): shape `a.shape[ind:] + a.shape[:ind]`."""
    a = _mat("tensorinv", a, min_ndim=1)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"tensorinv: ind must be a positive integer, got {ind}")
    sh = aval_of(a).shape
    rows, cols = int(np.prod(sh[:ind])), int(np.prod(sh[ind:]))
    if rows != cols:
        raise LinAlgError(f"tensorinv: a.shape[:ind] = {sh[:ind]} and a.shape[ind:] = {sh[ind:]} must have equal "
                          "products")
    return reshape(inv(reshape(a, (rows, cols))), sh[ind:] + sh[:ind])


def tensorsolve(a, b, axes=None):
    """x with `tensordot(a, x, x.ndim) = b`: `a`'s last dimensions (after moving `axes` to the end) are x's."""
    a = _mat("tensorsolve", a, min_ndim=1)
    b = b if _is_array(b) else asarray(b)
    nd = aval_of(a).ndim
    if axes is not None:
        moved = [_axis(k, nd, "tensorsolve") for k in axes]
        a = transpose(a, [k for k in range(nd) if k not in moved] + moved)
    xshape = aval_of(a).shape[aval_of(b).ndim:]
    n = int(np.prod(xshape))
    if aval_of(a).size != n * n or aval_of(b).size != n:
        raise LinAlgError(f"tensorsolve: a of shape {aval_of(a).shape} does not map x of shape {xshape} to b of shape "
                          f"{aval_of(b).shape}")
    return reshape(solve(reshape(a, (n, n)), reshape(b, (n,))), xshape)


def multi_dot(arrays: Sequence, *, precision=None):
    """Product of a chain of matrices in the cheapest order (dynamic programming over the static shapes);
    the first and last may be 1-D."""
    arrs = [a if _is_array(a) else asarray(a) for a in arrays]
    if len(arrs) < 2:
        raise ValueError("multi_dot: expecting at least two arrays")
    first_vec, last_vec = aval_of(arrs[0]).ndim == 1, aval_of(arrs[-1]).ndim == 1
    if first_vec:
        arrs[0] = expand_dims(arrs[0], 0)
    if last_vec:
        arrs[-1] = expand_dims(arrs[-1], -1)
    for a in arrs:
        if aval_of(a).ndim != 2:
            raise ValueError(f"multi_dot: arrays must be 2-D (the first and last may be 1-D), got {aval_of(a).shape}")
    dims = [aval_of(arrs[0]).shape[0]] + [aval_of(a).shape[1] for a in arrs]
    k = len(arrs)
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            cost[i][j] = float("inf")
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s

    def chain(i, j):
        return arrs[i] if i == j else matmul(chain(i, split[i][j]), chain(split[i][j] + 1, j), precision=precision)

    out = chain(0, k - 1)
    if first_vec:
        out = out[0]
    if last_vec:
        out = out[..., 0]
    return out


# ---------------------------------------------------------------- differentiation rules (JAX's)
# Each decomposition is a custom_jvp function: its primal is the loop above, its tangent is built from matrix
# products, masks and elementwise operations only (no loop over a tangent), so that reverse mode can transpose
# it. Where JAX's rule solves with a factor, the factor's inverse (one more loop over primal values) is used.


_ONE_MODULE: dict = {}


def _one_module(fn, *args, static: tuple = ()):
    """fn(*args, *static), compiled as one module where the arrays are concrete and nothing is staged (as `_staged`
    runs eager calls): a differentiation rule evaluating a decomposition under an eager grad or jvp. Op by op, its
    loops ran as modules of their own, and IREE 3.13 could not run the SVD's Jacobi loop alone ("ref is null": the
    eager grad of svdvals, pinv, cond, lstsq)."""
    if _base._stager is None or current_trace() is not None or any(isinstance(a, TracerBase) for a in args):
        return fn(*args, *static)
    key = (fn, len(args), static)
    if key not in _ONE_MODULE:
        _ONE_MODULE[key] = _base._stager(lambda *a: fn(*a, *static))
    return _ONE_MODULE[key].lower(*args).compile()(*args)


def _tri_solve(T, B, lower: bool):
    """Solve T X = B for triangular T (..., n, n) by substitution; B (..., n, k)."""
    n = aval_of(T).shape[-1]
    rows = _idx(n, -2)

    def body(i, y):
        k = i if lower else n - 1 - i
        t = _col(T, k)
        yk = divide(_row(y, k), _row(t, k))
        y = where(equal(rows, k), yk, y)
        return subtract(y, multiply(where(greater(rows, k) if lower else less(rows, k), t, 0), yk))

    return lax.fori_loop(0, n, body, B)


def _eye_like(a):
    return _batch_eye(aval_of(a).shape[:-1] + (aval_of(a).shape[-2],), aval_of(a).dtype)


def _tr_prod(x, y):
    """trace(x @ y) over the last two axes, without the product."""
    return sum(multiply(x, swapaxes(y, -1, -2)), axis=(-2, -1))


@custom_jvp
def _cholesky_d(a):
    return _cholesky(a)


@_cholesky_d.defjvp
def _cholesky_jvp(primals, tangents):
    """L_dot = L phi(L^-1 A_dot L^-H), phi: the lower triangle with the diagonal halved (A_dot is Hermitian:
    `_hermitian`'s tangent)."""
    (a,), (da,) = primals, tangents
    return _cholesky_tangent(_cholesky(a), da)


@custom_jvp
def _cholesky_sym_d(a):
    return _potrf_sym(a)[0]


@_cholesky_sym_d.defjvp
def _cholesky_sym_jvp(primals, tangents):
    """`_cholesky_jvp` of (a + a^H) / 2, along (a_dot + a_dot^H) / 2 (the derivative of that linear map, for any
    tangent)."""
    (a,), (da,) = primals, tangents
    return _cholesky_tangent(_potrf_sym(a)[0], _sym(da))


def _cholesky_tangent(L, da):
    """(L, L_dot) for the Cholesky factor L of A and a Hermitian tangent A_dot (`_cholesky_jvp`)."""
    Linv = _tri_solve(L, _eye_like(L), lower=True)
    X = _mm(_mm(Linv, da), _ct(Linv))
    n = aval_of(L).shape[-1]
    rows, cols = _idx(n, -2), _idx(n, -1)
    phi = where(greater(rows, cols), X, where(equal(rows, cols), multiply(X, 0.5), 0))
    return L, _mm(L, phi)


@custom_jvp
def _solve_d(a, b):
    return _lu_solve_a(a, b)[0]


@named("lapack.solve")
def _lu_solve_a(a, b):
    lu, perm, _ = _lu(a)
    return [_lu_solve(lu, perm, b)]


@named("lapack.inv")
def _lu_inv(a):
    lu, perm, _ = _lu(a)
    return [_lu_solve(lu, perm)]


@_solve_d.defjvp
def _solve_jvp(primals, tangents):
    """x_dot = A^-1 (b_dot - A_dot x)."""
    (a, b), (da, db) = primals, tangents
    lu, perm, _ = _lu(a)
    x = _lu_solve(lu, perm, b)
    ainv = _lu_solve(lu, perm)
    return x, _mm(ainv, subtract(db, _mm(da, x)))


@custom_jvp
def _inv_d(a):
    return _lu_inv(a)[0]


@_inv_d.defjvp
def _inv_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    ainv = _inv_d(a)
    return ainv, -_mm(_mm(ainv, da), ainv)


def _det_parts(a):
    lu, _, swaps = _lu(a)
    return _diag(lu), where(equal(swaps % 2, 1), -1, 1).astype(aval_of(a).dtype)


@custom_jvp
def _det_d(a):
    return _lu_det(a)[0]


@named("lapack.det")
def _lu_det(a):
    """The product of U's diagonal, signed by the row swaps (on the CPU, the host's: getrf and the product in order,
    `host.lapack_det`)."""
    d, s = _det_parts(a)
    return [multiply(prod(d, axis=-1), s)]


@_det_d.defjvp
def _det_jvp(primals, tangents):
    """det_dot = trace(adj(A) A_dot): at a singular matrix too, where det * trace(A^-1 A_dot) was 0 * inf = NaN
    (JAX's rule is finite there as well)."""
    (a,), (da,) = primals, tangents
    return _det_d(a), _tr_prod(_adjugate_d(a), da)


def _adjugate(a):
    """adj(A) = det(A) A^-1, also where A is singular: from P A = L U, adj(A) = det(P) adj(U) L^-1 P. adj(U) is
    multilinear in each entry of U; with one zero pivot it is the mean of adj(U) with +t and -t put there (each
    det(U_t) U_t^-1), with more it is 0 (rank n-2 or less)."""
    lu, perm, swaps = _lu(a)
    av = aval_of(a)
    n = av.shape[-1]
    rows, cols = _idx(n, -2), _idx(n, -1)
    eye = _eye_like(a)
    u = where(rows <= cols, lu, 0).astype(av.dtype)
    d = _diag(u)
    zero = equal(d, 0)
    t = max(abs(d), axis=-1, keepdims=True) if n else ones(av.shape[:-1], abs(d).dtype)
    t = where(equal(t, 0), 1, t)

    def adj_u(sign):
        dd = where(zero, (sign * t).astype(av.dtype), d)
        ut = add(u, multiply(expand_dims(subtract(dd, d), -2), eye))
        return multiply(expand_dims(prod(dd, axis=-1), (-2, -1)), _tri_solve(ut, eye, lower=False))
    one_zero = less_equal(sum(zero.astype(np.int32), axis=-1), 1)
    adj_u0 = where(expand_dims(one_zero, (-2, -1)), divide(add(adj_u(1), adj_u(-1)), 2), 0).astype(av.dtype)
    lower = add(where(rows > cols, lu, 0), eye).astype(av.dtype)
    linv_p = _tri_solve(lower, equal(expand_dims(perm, -1), cols).astype(av.dtype), lower=True)
    sign = where(equal(swaps % 2, 1), -1, 1).astype(av.dtype)
    return multiply(expand_dims(sign, (-2, -1)), _mm(adj_u0, linv_p))


_adjugate_d = custom_jvp(_adjugate)


@_adjugate_d.defjvp
def _adjugate_jvp(primals, tangents):
    """d adj = (trace(adj dA) adj - adj dA adj) / det: NaN at a singular matrix (so det's second derivative is NaN
    there, never the value differentiating through the LU's pivots gave: wrong entries at [[1, 2], [2, 4]])."""
    (a,), (da,) = primals, tangents
    adj, det = _adjugate_d(a), expand_dims(_det_d(a), (-2, -1))
    d = subtract(multiply(expand_dims(_tr_prod(adj, da), (-2, -1)), adj), _mm(_mm(adj, da), adj))
    return adj, where(equal(det, 0), np.nan, divide(d, where(equal(det, 0), 1, det))).astype(aval_of(adj).dtype)


@custom_jvp
def _slogdet_d(a):
    sign, logdet = _lu_slogdet(a)
    return sign, logdet


@named("lapack.slogdet")
def _lu_slogdet(a):
    """(sign, log|det|): U's diagonal's phases multiplied, signed by the row swaps (0 at a zero pivot), and its
    log-magnitudes summed (on the CPU, the host's: getrf, the product and the sum in order, `host.lapack_slogdet`)."""
    d, s = _det_parts(a)
    ad = abs(d)
    sign = multiply(prod(_phase(d), axis=-1), s)
    logdet = sum(log(ad), axis=-1)
    zero = equal(min(ad, axis=-1), 0) if aval_of(a).shape[-1] else False
    return [where(zero, 0, sign).astype(aval_of(a).dtype), logdet]


@_slogdet_d.defjvp
def _slogdet_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    sign, logdet = _slogdet_d(a)
    t = _tr_prod(_inv_d(a), da)
    if _is_complex(a):
        return (sign, logdet), (multiply(subtract(t, real(t).astype(aval_of(t).dtype)), sign), real(t))
    return (sign, logdet), (zeros(aval_of(sign).shape, aval_of(sign).dtype), t)


_eigh_d = custom_jvp(_eigh)


@_eigh_d.defjvp
def _eigh_jvp(primals, tangents):
    """V^H A_dot V = M: w_dot = re diag(M), V_dot = V (F * M) with F_ij = 1 / (w_j - w_i) off the diagonal
    (A_dot is Hermitian: `_hermitian`'s tangent)."""
    (a,), (da,) = primals, tangents
    return _eigh_tangent(a, *_one_module(_eigh, a), da)


_eigh_sym_d = custom_jvp(_eigh_sym)


@_eigh_sym_d.defjvp
def _eigh_sym_jvp(primals, tangents):
    """`_eigh_jvp` at (a + a^H) / 2, along (a_dot + a_dot^H) / 2 (the derivative of that linear map)."""
    (a,), (da,) = primals, tangents
    return _eigh_tangent(a, *_one_module(_eigh_sym, a), _sym(da))


def _eigh_tangent(a, w, V, da):
    """((w, V), their tangents) for the decomposition (w, V) of a Hermitian matrix and a Hermitian tangent."""
    dt = aval_of(a).dtype
    n = aval_of(a).shape[-1]
    eye_n = eye(n, dtype=dt)
    wc = w.astype(dt)
    F = subtract(divide(1, eye_n + expand_dims(wc, -2) - expand_dims(wc, -1)), eye_n)
    M = _mm(_mm(_ct(V), da), V)
    dw = real(_diag(M)) if _is_complex(M) else _diag(M)
    return (w, V), (dw, _mm(V, multiply(F, M)))


_svd_d = custom_jvp(_svd, nondiff_argnums=(1, 2))


@_svd_d.defjvp
def _svd_jvp(full_matrices, compute_uv, primals, tangents):
    """JAX's SVD JVP (reduced U and V; a full U or V of a non-square matrix has no such rule)."""
    (a,), (da,) = primals, tangents
    m, n = aval_of(a).shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError("svd: the derivative of a full_matrices=True SVD of a non-square matrix is not "
                                  "implemented (as in JAX); use full_matrices=False")
    dt = aval_of(a).dtype
    U, s, Vh = _one_module(_svd, a, static=(False, True))
    V = _ct(Vh)
    s_dim = expand_dims(s, -2)
    dS = _mm(_mm(_ct(U), da), V)
    ds = real(_diag(dS)) if _is_complex(dS) else _diag(dS)
    if not compute_uv:
        return s, ds
    k = aval_of(s).shape[-1]
    s_diffs = multiply(s_dim + swapaxes(s_dim, -1, -2), s_dim - swapaxes(s_dim, -1, -2))
    eye_k = eye(k, dtype=aval_of(s).dtype)
    F = subtract(divide(1, s_diffs + eye_k), eye_k).astype(dt)
    sd = s_dim.astype(dt)
    dSS, SdS = multiply(sd, dS), multiply(swapaxes(sd, -1, -2), dS)
    s_inv = where(equal(s, 0), 0, divide(1, where(equal(s, 0), 1, s)))
    s_inv_mat = multiply(eye_k, expand_dims(s_inv, -2)).astype(dt)
    dUdV_diag = multiply(multiply(subtract(dS, _ct(dS)), 0.5), s_inv_mat)
    dU = _mm(U, multiply(F, dSS + _ct(dSS)) + dUdV_diag)
    dV = _mm(V, multiply(F, SdS + _ct(SdS)))
    if m > n:
        dAV = _mm(da, V)
        dU = dU + divide(subtract(dAV, _mm(U, _mm(_ct(U), dAV))), sd)
    if n > m:
        dAHU = _mm(_ct(da), U)
        dV = dV + divide(subtract(dAHU, _mm(V, _mm(Vh, dAHU))), sd)
    return (U, s, Vh), (dU, ds, _ct(dV))


_qr_d = custom_jvp(_qr, nondiff_argnums=(1,))


def _thin_qr_jvp(q, r, da):
    """JAX's QR JVP of q (..., m, n), r (..., n, n), m >= n: with C = Q^H A_dot R^-1 and its strictly lower part
    skew-symmetrized into O (plus the imaginary diagonal), Q_dot = Q (O - C) + A_dot R^-1 and R_dot = (C - O) R."""
    n = aval_of(r).shape[-1]
    dx_rinv = _mm(da, _tri_solve(r, _eye_like(r), lower=False))
    c = _mm(_ct(q), dx_rinv)
    rows, cols = _idx(n, -2), _idx(n, -1)
    low = where(greater(rows, cols), c, 0)
    do = subtract(low, _ct(low))
    if _is_complex(c):
        do = do + where(equal(rows, cols), subtract(c, real(c).astype(aval_of(c).dtype)), 0)
    return _mm(q, subtract(do, c)) + dx_rinv, _mm(subtract(c, do), r)


@_qr_d.defjvp
def _qr_jvp(mode, primals, tangents):
    """JAX's QR JVP (`_thin_qr_jvp`), with its wide case (m < n: R = [R1, R2] with R2 = Q^H A2, so
    R2_dot = Q_dot^H A2 + Q^H A2_dot) and its complete one (m > n: the last m - n columns of Q from
    arXiv:2409.13374, eqs. 32-33, which hold for LAPACK's Householder reflectors: `_householder`'s)."""
    (a,), (da,) = primals, tangents
    m, n = aval_of(a).shape[-2:]
    q, r = _qr(a, "complete" if mode == "complete" else "reduced")
    if m < n:
        dq, dr1 = _thin_qr_jvp(q, r[..., :, :m], da[..., :, :m])
        dr = concatenate([dr1, _mm(_ct(dq), a[..., :, m:]) + _mm(_ct(q), da[..., :, m:])], -1)
    elif mode == "complete" and m > n:
        q_mn = q[..., :, :n]
        dq, dr = _thin_qr_jvp(q_mn, r[..., :n, :], da)
        q_nn, q_pn, dq_nn, dq_pn = q_mn[..., :n, :], q_mn[..., n:, :], dq[..., :n, :], dq[..., n:, :]
        lu, perm, _ = _lu(q_nn - _eye_like(q_nn))
        z_pn = _mm(q_pn, _lu_solve(lu, perm))  # Q_pn (Q_nn - I)^-1 (eq. 33)
        dq_mp = _mm(dq, _ct(z_pn)) - _mm(q_mn + _mm(q[..., :, n:], z_pn), _ct(dq_pn - _mm(z_pn, dq_nn)))  # eq. 32
        dq = concatenate([dq, dq_mp], -1)
        dr = concatenate([dr, zeros(aval_of(dr).shape[:-2] + (m - n, n), aval_of(dr).dtype)], -2)
    else:
        dq, dr = _thin_qr_jvp(q, r, da)
    return ((q, r), (dq, dr)) if mode != "r" else (r, dr)


__all__ = ["LinAlgError", "cholesky", "cond", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "lstsq", "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot", "norm", "outer", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve", "trace", "vecdot",
           "vector_norm"]
# Eager norms run as composites (4x4 float32 norm: 17.8 us op by op; those of svd's orders trace it as a module and
# run plainly); eager results are Arrays
globals().update({k: _base._composite(globals()[k]) for k in ("norm", "vector_norm", "matrix_norm")})
globals().update({k: _api(globals()[k]) for k in __all__ if k != "LinAlgError"})


from .._missing import missing as _missing, table as _table  # noqa: E402

__getattr__ = _missing(__name__, _table("eig eigvals", "a general (non-Hermitian) eigensolver is not implemented "
                                        "(IREE has no LAPACK; stagec's eigh and svd are Jacobi methods): use eigh "
                                        "for Hermitian matrices, svd for singular values"))
