"""The examples in JAX's docstrings (jax/_src/numpy/*.py, jax/_src/lax/*.py, github.com/jax-ml/jax; as rendered at
docs.jax.dev) of sorting and searching, FFTs, linear algebra and integer arithmetic: each example's statements in
order, each value it prints recorded. Generated from JAX 0.10.2's docstrings (doctest's parser); left out are
functions stagec lacks with a NotInStagec error (docs/jax-differences.md): `jnp.unique`, `jnp.argpartition` and `lax.associative_scan`."""
import numpy as np

import jax
import jax.numpy as jnp


def _rec(out, key, value):
    """`value`'s arrays (a tuple's, each) under `key`; printed strings are left out (formatting differs)."""
    if value is None or isinstance(value, str):
        return
    leaves = jax.tree.leaves(value)
    for j, leaf in enumerate(leaves):
        a = np.asarray(leaf)
        out[key if len(leaves) == 1 else f"{key}.{j}"] = np.array(str(leaf)) if a.dtype == object else a


def _raises(out, key, thunk):
    """Whether an example shown raising raised (the class is left out: for `jit(jnp.nonzero)` JAX raises a
    TypeError, stagec an IndexError, both saying to pass size=)."""
    try:
        thunk()
    except Exception:
        out[key] = np.array(True)
    else:
        out[key] = np.array(False)


def _unique_signs(out):
    """QR factors and eigenvectors made unique (they are up to signs and phases, which LAPACK and stagec choose
    differently): R's diagonal positive; each eigenvector's first sizeable component real and positive."""
    q, r = out["linalg_qr.2"], out["linalg_qr.3"]
    s = np.where(np.diag(r) < 0, -1, 1)
    out["linalg_qr.2"], out["linalg_qr.3"] = q * s, r * s[:, None]
    v = out["linalg_eigh.3.0"]
    first = np.argmax(np.abs(v) > 1e-3 * np.abs(v).max(0), axis=0)
    ph = v[first, np.arange(v.shape[1])]
    out["linalg_eigh.3.0"] = v * (np.abs(ph) / ph)


def sort(out):
    """`jnp.sort`'s examples."""
    x = jnp.array([1, 3, 5, 4, 2, 1])
    _rec(out, 'sort.1', jnp.sort(x))
    x = jnp.array([[2, 1, 3],
                   [4, 3, 6]])
    _rec(out, 'sort.3', jnp.sort(x, axis=1))


def argsort(out):
    """`jnp.argsort`'s examples."""
    x = jnp.array([1, 3, 5, 4, 2, 1])
    indices = jnp.argsort(x)
    _rec(out, 'argsort.2', indices)
    _rec(out, 'argsort.3', x[indices])
    x = jnp.array([[2, 1, 3],
                   [6, 4, 3]])
    indices = jnp.argsort(x, axis=1)
    _rec(out, 'argsort.6', indices)
    _rec(out, 'argsort.7', jnp.take_along_axis(x, indices, axis=1))


def lexsort(out):
    """`jnp.lexsort`'s examples."""
    key1 = jnp.array([4, 2, 3, 2, 5])
    _rec(out, 'lexsort.1', jnp.lexsort([key1]))
    _rec(out, 'lexsort.2', jnp.argsort(key1))
    key2 = jnp.array([2, 1, 1, 2, 2])
    _rec(out, 'lexsort.4', jnp.lexsort([key1, key2]))
    indices = jnp.lexsort([key1, key2])
    _rec(out, 'lexsort.6.0', f'{key1[indices]}\n{key2[indices]}')
    key1 = jnp.array([[2, 4, 2, 3],
                      [3, 1, 2, 2]])
    key2 = jnp.array([[1, 2, 1, 3],
                      [2, 1, 2, 1]])
    _rec(out, 'lexsort.9', jnp.lexsort([key1, key2]))
    _rec(out, 'lexsort.10', jnp.lexsort([key1, key2], axis=0))


def searchsorted(out):
    """`jnp.searchsorted`'s examples."""
    a = jnp.array([1, 2, 2, 3, 4, 5, 5])
    _rec(out, 'searchsorted.1', jnp.searchsorted(a, 2))
    _rec(out, 'searchsorted.2', jnp.searchsorted(a, 2, side='right'))
    vals = jnp.array([0, 3, 8, 1.5, 2])
    _rec(out, 'searchsorted.4', jnp.searchsorted(a, vals))
    a = jnp.array([4, 3, 5, 1, 2])
    sorter = jnp.argsort(a)
    _rec(out, 'searchsorted.7', jnp.searchsorted(a, vals, sorter=sorter))
    _rec(out, 'searchsorted.8', jnp.searchsorted(jnp.sort(a), vals))


def lax_top_k(out):
    """`lax.top_k`'s examples."""
    x = jnp.array([9., 3., 6., 4., 10.])
    values, indices = jax.lax.top_k(x, 3)
    _rec(out, 'lax_top_k.2', values)
    _rec(out, 'lax_top_k.3', indices)


def nonzero(out):
    """`jnp.nonzero`'s examples."""
    x = jnp.array([0, 5, 0, 6, 0, 7])
    _rec(out, 'nonzero.1', jnp.nonzero(x))
    x = jnp.array([[0, 5, 0],
                   [6, 0, 7]])
    _rec(out, 'nonzero.3', jnp.nonzero(x))
    indices = jnp.nonzero(x)
    _rec(out, 'nonzero.5', x[indices])
    x = jnp.array([0, 5, 0, 6, 0, 7])
    _raises(out, 'nonzero.7', lambda: jax.jit(jnp.nonzero)(x))
    nonzero_jit = jax.jit(jnp.nonzero, static_argnames='size')
    _rec(out, 'nonzero.9', nonzero_jit(x, size=3))
    _rec(out, 'nonzero.10', nonzero_jit(x, size=2))
    _rec(out, 'nonzero.11', nonzero_jit(x, size=5))
    _rec(out, 'nonzero.12', nonzero_jit(x, size=5, fill_value=len(x)))


def fft_fft(out):
    """`jnp.fft.fft`'s examples."""
    x = jnp.array([[1, 2, 4, 7],
                   [5, 3, 1, 9]])
    _rec(out, 'fft_fft.1', jnp.fft.fft(x))
    _rec(out, 'fft_fft.2.0', jnp.fft.fft(x, n=3))
    _rec(out, 'fft_fft.3.0', jnp.fft.fft(x, n=3, axis=0))
    x_fft = jnp.fft.fft(x)
    _rec(out, 'fft_fft.5', jnp.allclose(x, jnp.fft.ifft(x_fft)))


def fft_rfft(out):
    """`jnp.fft.rfft`'s examples."""
    x = jnp.array([[1, 3, 5],
                   [2, 4, 6]])
    _rec(out, 'fft_rfft.1.0', jnp.fft.rfft(x))
    _rec(out, 'fft_rfft.2.0', jnp.fft.rfft(x, n=5))
    _rec(out, 'fft_rfft.3.0', jnp.fft.rfft(x, n=4, axis=0))


def fft_irfft(out):
    """`jnp.fft.irfft`'s examples."""
    x = jnp.array([[1, 3, 5],
                   [2, 4, 6]])
    _rec(out, 'fft_irfft.1', jnp.fft.irfft(x))
    _rec(out, 'fft_irfft.2.0', jnp.fft.irfft(x, n=3))
    _rec(out, 'fft_irfft.3.0', jnp.fft.irfft(x, n=4, axis=0))


def fft_fftshift(out):
    """`jnp.fft.fftshift`'s examples."""
    freq = jnp.fft.fftfreq(5)
    _rec(out, 'fft_fftshift.1', freq)
    shifted_freq = jnp.fft.fftshift(freq)
    _rec(out, 'fft_fftshift.3', shifted_freq)
    _rec(out, 'fft_fftshift.4', jnp.fft.ifftshift(shifted_freq))


def fft_fftfreq(out):
    """`jnp.fft.fftfreq`'s examples."""



def fft_fft2(out):
    """`jnp.fft.fft2`'s examples."""
    x = jnp.array([[[1, 3],
                    [2, 4]],
                   [[5, 7],
                    [6, 8]]])
    _rec(out, 'fft_fft2.1.0', jnp.fft.fft2(x))
    _rec(out, 'fft_fft2.2.0', jnp.fft.fft2(x, s=[2, 3]))
    _rec(out, 'fft_fft2.3.0', jnp.fft.fft2(x, s=[2, 3], axes=(0, 1)))
    x_fft2 = jnp.fft.fft2(x)
    _rec(out, 'fft_fft2.5', jnp.allclose(x, jnp.fft.ifft2(x_fft2)))


def linalg_lstsq(out):
    """`jnp.linalg.lstsq`'s examples."""
    a = jnp.array([[1, 2],
                   [3, 4]])
    b = jnp.array([5, 6])
    x, _, _, _ = jnp.linalg.lstsq(a, b)
    _rec(out, 'linalg_lstsq.3.0', x)


def linalg_eigh(out):
    """`jnp.linalg.eigh`'s examples."""
    a = jnp.array([[1, -2j],
                   [2j, 1]])
    w, v = jnp.linalg.eigh(a)
    _rec(out, 'linalg_eigh.2', w)
    _rec(out, 'linalg_eigh.3.0', v)


def linalg_svd(out):
    """`jnp.linalg.svd`'s examples."""
    x = jnp.array([[1., 2., 3.],
                   [6., 5., 4.]])
    u, s, vt = jnp.linalg.svd(x, full_matrices=False)
    _rec(out, 'linalg_svd.2', s)
    _rec(out, 'linalg_svd.3', jnp.allclose(u.T @ u, jnp.eye(2), atol=1e-05))
    v = vt.T
    _rec(out, 'linalg_svd.5', jnp.allclose(v.T @ v, jnp.eye(2), atol=1e-05))
    x_reconstructed = u @ jnp.diag(s) @ vt
    _rec(out, 'linalg_svd.7', jnp.allclose(x_reconstructed, x))


def linalg_qr(out):
    """`jnp.linalg.qr`'s examples."""
    a = jnp.array([[1., 2., 3., 4.],
                   [5., 4., 2., 1.],
                   [6., 3., 1., 5.]])
    Q, R = jnp.linalg.qr(a)
    _rec(out, 'linalg_qr.2', Q)
    _rec(out, 'linalg_qr.3', R)
    _rec(out, 'linalg_qr.4', jnp.allclose(Q.T @ Q, jnp.eye(3), atol=1e-05))
    _rec(out, 'linalg_qr.5', jnp.allclose(Q @ R, a))


def linalg_solve(out):
    """`jnp.linalg.solve`'s examples."""
    A = jnp.array([[1., 2., 3.],
                   [2., 4., 2.],
                   [3., 2., 1.]])
    b = jnp.array([14., 16., 10.])
    x = jnp.linalg.solve(A, b)
    _rec(out, 'linalg_solve.3', x)
    _rec(out, 'linalg_solve.4', jnp.allclose(A @ x, b))


def linalg_pinv(out):
    """`jnp.linalg.pinv`'s examples."""
    a = jnp.array([[1, 2],
                   [3, 4],
                   [5, 6]])
    a_pinv = jnp.linalg.pinv(a)
    _rec(out, 'linalg_pinv.2', a_pinv)
    _rec(out, 'linalg_pinv.3', jnp.allclose(a_pinv @ a, jnp.eye(2), atol=0.0001))


def linalg_slogdet(out):
    """`jnp.linalg.slogdet`'s examples."""
    a = jnp.array([[1, 2],
                   [3, 4]])
    sign, logabsdet = jnp.linalg.slogdet(a)
    _rec(out, 'linalg_slogdet.2', sign)
    _rec(out, 'linalg_slogdet.3', jnp.exp(logabsdet))


def linalg_cholesky(out):
    """`jnp.linalg.cholesky`'s examples."""
    x = jnp.array([[2., 1.],
                   [1., 2.]])
    _rec(out, 'linalg_cholesky.1', jnp.linalg.cholesky(x))
    _rec(out, 'linalg_cholesky.2', jnp.linalg.cholesky(x, upper=True))
    L = jnp.linalg.cholesky(x)
    _rec(out, 'linalg_cholesky.4', jnp.allclose(x, L @ L.T))


def linalg_eigvalsh(out):
    """`jnp.linalg.eigvalsh`'s examples."""
    a = jnp.array([[1, -2j],
                   [2j, 1]])
    w = jnp.linalg.eigvalsh(a)
    _rec(out, 'linalg_eigvalsh.2', w)


def linalg_matrix_rank(out):
    """`jnp.linalg.matrix_rank`'s examples."""
    a = jnp.array([[1, 2],
                   [3, 4]])
    _rec(out, 'linalg_matrix_rank.1', jnp.linalg.matrix_rank(a))
    b = jnp.array([[1, 0],  # Rank-deficient matrix
                   [0, 0]])
    _rec(out, 'linalg_matrix_rank.3', jnp.linalg.matrix_rank(b))


def linalg_norm(out):
    """`jnp.linalg.norm`'s examples."""
    x = jnp.array([3., 4., 12.])
    _rec(out, 'linalg_norm.1', jnp.linalg.norm(x))
    _rec(out, 'linalg_norm.2', jnp.linalg.norm(x, ord=1))
    _rec(out, 'linalg_norm.3', jnp.linalg.norm(x, ord=0))
    x = jnp.array([[1., 2., 3.],
                   [4., 5., 7.]])
    _rec(out, 'linalg_norm.5', jnp.linalg.norm(x))
    _rec(out, 'linalg_norm.6', jnp.linalg.norm(x, ord='nuc'))
    _rec(out, 'linalg_norm.7', jnp.linalg.norm(x, ord=1))
    _rec(out, 'linalg_norm.8', jnp.linalg.norm(x, axis=1))


def cumsum(out):
    """`jnp.cumsum`'s examples."""
    x = jnp.array([[1, 2, 3],
                   [4, 5, 6]])
    _rec(out, 'cumsum.1', jnp.cumsum(x))
    _rec(out, 'cumsum.2', jnp.cumsum(x, axis=1))


def bincount(out):
    """`jnp.bincount`'s examples."""
    x = jnp.array([1, 1, 2, 3, 3, 3])
    _rec(out, 'bincount.1', jnp.bincount(x))
    weights = jnp.array([1, 2, 3, 4, 5, 6])
    _rec(out, 'bincount.3', jnp.bincount(x, weights))
    jit_bincount = jax.jit(jnp.bincount, static_argnames=['length'])
    _rec(out, 'bincount.5', jit_bincount(x, length=5))
    x = jnp.array([-1, -1, 1, 3, 10])
    _rec(out, 'bincount.7', jnp.bincount(x, length=5))


def left_shift(out):
    """`jnp.left_shift`'s examples."""
    def print_binary(x):
      return [bin(int(val)) for val in x]
    x1 = jnp.arange(5)
    _rec(out, 'left_shift.2', x1)
    _rec(out, 'left_shift.3', print_binary(x1))
    x2 = 1
    result = jnp.left_shift(x1, x2)
    _rec(out, 'left_shift.6', result)
    _rec(out, 'left_shift.7', print_binary(result))
    x3 = 4
    _rec(out, 'left_shift.9', print_binary([x3]))
    x4 = jnp.array([1, 2, 3, 4])
    result1 = jnp.left_shift(x3, x4)
    _rec(out, 'left_shift.12', result1)
    _rec(out, 'left_shift.13', print_binary(result1))


def bitwise_and(out):
    """`jnp.bitwise_and`'s examples."""
    x = jnp.arange(4)
    _rec(out, 'bitwise_and.1', jnp.bitwise_and(x, 1))
    _rec(out, 'bitwise_and.2', x & 1)


def floor_divide(out):
    """`jnp.floor_divide`'s examples."""
    x1 = jnp.array([10, 20, 30])
    x2 = jnp.array([3, 4, 7])
    _rec(out, 'floor_divide.2', jnp.floor_divide(x1, x2))
    x1 = jnp.array([-5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5])
    x2 = 3
    _rec(out, 'floor_divide.5', jnp.floor_divide(x1, x2))
    x1 = jnp.array([6, 6, 6], dtype=jnp.int32)
    x2 = jnp.array([2.0, 2.5, 3.0], dtype=jnp.float32)
    _rec(out, 'floor_divide.8', jnp.floor_divide(x1, x2))


def remainder(out):
    """`jnp.remainder`'s examples."""
    x1 = jnp.array([[3, -1, 4],
                    [8, 5, -2]])
    x2 = jnp.array([2, 3, -5])
    _rec(out, 'remainder.2', jnp.remainder(x1, x2))
    _rec(out, 'remainder.3', x1 - x2 * jnp.floor(x1 / x2))


def convolve(out):
    """`jnp.convolve`'s examples."""
    x = jnp.array([1, 2, 3, 2, 1])
    y = jnp.array([4, 1, 2])
    _rec(out, 'convolve.2', jnp.convolve(x, y))
    _rec(out, 'convolve.3', jnp.convolve(x, y, mode='same'))
    _rec(out, 'convolve.4', jnp.convolve(x, y, mode='valid'))
    x1 = jnp.array([3+1j, 2, 4-3j])
    y1 = jnp.array([1, 2-3j, 4+5j])
    _rec(out, 'convolve.7', jnp.convolve(x1, y1))


def digitize(out):
    """`jnp.digitize`'s examples."""
    x = jnp.array([1.0, 2.0, 2.5, 1.5, 3.0, 3.5])
    bins = jnp.array([1, 2, 3])
    _rec(out, 'digitize.2', jnp.digitize(x, bins))
    _rec(out, 'digitize.3', jnp.digitize(x, bins, right=True))
    bins = jnp.array([3, 2, 1])
    _rec(out, 'digitize.5', jnp.digitize(x, bins))


def cumprod(out):
    """`jnp.cumprod`'s examples."""
    x = jnp.array([[1, 2, 3],
                   [4, 5, 6]])
    _rec(out, 'cumprod.1', jnp.cumprod(x))
    _rec(out, 'cumprod.2', jnp.cumprod(x, axis=1))


def round(out):
    """`jnp.round`'s examples."""
    x = jnp.array([1.532, 3.267, 6.149])
    _rec(out, 'round.1', jnp.round(x))
    _rec(out, 'round.2', jnp.round(x, decimals=2))
    x1 = jnp.array([10.5, 21.5, 12.5, 31.5])
    _rec(out, 'round.4', jnp.round(x1))


def astype(out):
    """`jnp.astype`'s examples."""
    x = jnp.array([0, 1, 2, 3])
    _rec(out, 'astype.1', x)
    _rec(out, 'astype.2', x.astype('float32'))
    y = jnp.array([0.0, 0.5, 1.0])
    _rec(out, 'astype.4', y.astype(int))



EXAMPLES = [sort, argsort, lexsort, searchsorted, lax_top_k, nonzero, fft_fft, fft_rfft, fft_irfft, fft_fftshift, fft_fftfreq, fft_fft2, linalg_lstsq, linalg_eigh, linalg_svd, linalg_qr, linalg_solve, linalg_pinv, linalg_slogdet, linalg_cholesky, linalg_eigvalsh, linalg_matrix_rank, linalg_norm, cumsum, bincount, left_shift, bitwise_and, floor_divide, remainder, convolve, digitize, cumprod, round, astype]


def main():
    out = {}
    for example in EXAMPLES:
        example(out)
    _unique_signs(out)
    return out
