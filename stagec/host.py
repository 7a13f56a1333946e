"""Host modules: the Python VM modules a compiled module imports and the runtime links beside it. Host callbacks
(`lowering.HOST_MODULE`: `debug.print`, `pure_callback`, ...), NumPy's BLAS (`lowering.BLAS_MODULE`, the
`blas-dots` offload) and NumPy's stable sort (`lowering.SORT_MODULE`, `host-sorts`), by the ABI `lowering`
declares (`HOST_ABI`). Also the IREE element types of NumPy dtypes, which they and the buffers use."""
from __future__ import annotations

import math
import re
import threading
from typing import Callable, Sequence

import numpy as np
from numpy.linalg import _umath_linalg  # (LAPACK's gufuncs behind np.linalg: `lapack_svd`)

from .lowering import (BLAS_IMPORTS, BLAS_MODULE, HOST_MODULE, LAPACK_IMPORTS, LAPACK_MODULE, SORT_IMPORTS, SORT_MODULE,
                       SORT_OPERANDS, unpack_dims)

_IMPORTS = {kind: re.compile(re.escape(name + ".").encode()) for kind, name in (
    ("blas", BLAS_MODULE), ("sort", SORT_MODULE), ("lapack", LAPACK_MODULE))}


def _rt():
    import iree.runtime as rt
    return rt


def _element_type(dtype: np.dtype):
    rt = _rt()
    from iree.runtime.array_interop import map_dtype_to_element_type
    return rt.HalElementType.BOOL_8 if dtype == np.bool_ else map_dtype_to_element_type(dtype)


def _element_types(dtype: np.dtype) -> tuple[int, ...]:
    """The IREE element types a result of `dtype` may come back as: its own, or for integers (and bool, stored
    as a byte) the signless integer of its width, as modules return them."""
    et = int(_element_type(dtype))
    bits = et & 0xFF
    if dtype == np.bool_ or dtype.kind in "iu":
        return (et, (0x10 << 24) | bits)
    return (et,)


def _type_name(element_type: int) -> str:
    rt = _rt()
    try:
        return rt.HalElementType(element_type).name
    except ValueError:
        return f"element type {element_type:#x}"


def _host_module(exe, host_calls: Sequence):
    """The Python VM module (`lowering.HOST_MODULE`) whose functions the compiled module imports: each converts
    its buffer views to NumPy arrays, calls the Python function, and returns its results as buffer views."""
    rt = _rt()
    backend, failure = exe.backend, exe._failure  # (not `exe`: the executable's context holds this module)

    class Host:
        def __init__(self, iface):
            pass

    iface = rt.PyModuleInterface(HOST_MODULE, Host)
    for hc in host_calls:
        def call(_self, *refs, hc=hc):
            try:
                args = [backend.get(r.deref(rt.HalBufferView), a) for r, a in zip(refs, hc.in_avals)]
                outs = [backend.put(np.asarray(o, a.dtype)).ref for o, a in zip(hc.fn(*args) or (), hc.out_avals)]
            except BaseException as e:  # reported by Executable.run, naming the callback
                failure.value = (hc.name, e)
                raise
            if hc.token:  # the effect token, passed through
                outs.append(refs[-1])
            return None if not outs else outs[0] if len(outs) == 1 else tuple(outs)
        iface.export(hc.name, hc.cconv, call)
    return iface.create()


def _numpy_imports(vmfb) -> list[str]:
    """Which modules calling NumPy ("blas": `blas-dots`, "sort": `host-sorts`) a module imports:
    their import names are in its flatbuffer as written. (A regex searches any bytes-like object in place: a
    cached module is a memoryview, not copied.)"""
    return [kind for kind, pattern in _IMPORTS.items() if pattern.search(vmfb) is not None]


def _mapped_allocator(dev) -> Callable[[int], object]:
    """`new(nbytes)`: a new buffer of device `dev` that the host maps, which a module calling NumPy writes its
    results into (`_blas_module`, `_sort_module`)."""
    rt = _rt()
    allocate, mapped = dev.allocator.allocate_buffer, rt.MemoryType.DEVICE_LOCAL | rt.MemoryType.HOST_VISIBLE
    usage = rt.BufferUsage.DEFAULT | rt.BufferUsage.MAPPING_SCOPED
    return lambda nbytes: allocate(memory_type=mapped, allowed_usage=usage, allocation_size=nbytes)


def _operand(shape: Sequence[int], perm: Sequence[int], matrix: tuple, dt: np.dtype) -> tuple:
    """(matrix, strides, None) where an operand of `shape`, its dimensions ordered by `perm` and grouped into
    `matrix` (batch, rows, columns), is a strided view of its row-major memory (BLAS reads either layout in place);
    else (matrix, None, view): `view(mapped)` copies it into that layout."""
    strides = _view_strides(shape, perm, matrix, dt.itemsize)
    if strides is not None:
        return matrix, strides, None
    shape, perm = tuple(shape), tuple(perm)
    return matrix, None, lambda mapped: np.ndarray(shape, dt, mapped).transpose(perm).reshape(matrix)


def _view_strides(shape: Sequence[int], perm: Sequence[int], matrix: Sequence[int], itemsize: int) -> tuple | None:
    """The strides of `x.transpose(perm).reshape(matrix)` for a row-major `x` of `shape` where that is a view
    (each group of dimensions that `matrix` merges is evenly strided), else None (the reshape copies)."""
    c = [itemsize] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        c[i] = c[i + 1] * shape[i + 1]
    dims = [(shape[d], c[d]) for d in perm if shape[d] != 1]  # (an extent of 1 has no stride that matters)
    out, i = [], 0
    for t in matrix:
        if t == 1:
            out.append(itemsize)
            continue
        size, stride = 1, None
        while size < t and i < len(dims):
            n, st = dims[i]
            if stride is not None and stride != st * n:
                return None
            size, stride, i = size * n, st, i + 1
        if size != t:
            return None
        out.append(stride)
    return tuple(out) if i == len(dims) else None


# OpenBLAS threads of each matmul a module hands to NumPy. One, whatever the load: with OpenBLAS's own count (a
# thread per core) a product was 100x slower in some fresh processes on a loaded machine (its threads spin and
# wait for each other), and a thread count cannot follow the load: for some shapes the
# result's bits depend on it (docs/blas.md).
BLAS_THREADS = 1
_blas_lock = threading.Lock()  # (OpenBLAS's count is one per process: held from setting it to restoring it)
_openblas_fns: list = []  # [(get, set) of OpenBLAS's thread count, or None], looked up once


def _openblas():
    """(get, set) of the thread count of the OpenBLAS NumPy links, or None where it links another BLAS."""
    if not _openblas_fns:
        _openblas_fns.append(_find_openblas())
    return _openblas_fns[0]


_NUM_THREADS = [(f"{p}get_num_threads{s}", f"{p}set_num_threads{s}")
                for p, s in (("openblas_", ""), ("scipy_openblas_", "64_"), ("scipy_openblas_", ""), ("openblas_", "64_"))]


def _openblas_libs() -> list:
    """The OpenBLAS libraries NumPy loaded (its wheels bundle one under a mangled name), opened with ctypes."""
    import ctypes
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({ln.split(None, 5)[5].strip() for ln in f
                            if "openblas" in ln.lower() and len(ln.split(None, 5)) == 6})
    except OSError:
        return []
    libs = []
    for path in paths:
        try:
            libs.append(ctypes.CDLL(path))
        except OSError:
            continue
    return libs


def _find_openblas():
    import ctypes
    for lib in _openblas_libs():
        for get, put in _NUM_THREADS:
            g, s = getattr(lib, get, None), getattr(lib, put, None)
            if g is not None and s is not None:
                g.restype, g.argtypes, s.restype, s.argtypes = ctypes.c_int, [], None, [ctypes.c_int]
                return g, s
    return None


def blas_matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray, threads: int = BLAS_THREADS) -> None:
    """`np.matmul(a, b, out=out)` on `threads` of OpenBLAS's threads (`_on_threads`)."""
    _on_threads(lambda: np.matmul(a, b, out=out), threads)


class _OneThread:
    """`with _one_thread:` what `_on_threads(fn)` runs `fn` in (`BLAS_THREADS` of OpenBLAS's threads under `_blas_lock`,
    its count put back after), without a function to call: the LAPACK calls, where for small matrices `_on_threads`'s
    closure and calls were a tenth of an eager call."""

    __slots__ = ("prev",)

    def __enter__(self):
        _blas_lock.acquire()
        try:
            get_set = _openblas_fns[0] if _openblas_fns else _openblas()
            if get_set is None:
                self.prev = BLAS_THREADS
            elif (prev := get_set[0]()) != BLAS_THREADS:
                get_set[1](BLAS_THREADS)
                self.prev = prev
            else:
                self.prev = prev
        except BaseException:
            _blas_lock.release()
            raise

    def __exit__(self, *exc):
        if self.prev == BLAS_THREADS:
            _blas_lock.release()
            return
        try:
            _openblas_fns[0][1](self.prev)
        finally:
            _blas_lock.release()


_one_thread = _OneThread()  # (one object: its `prev` is only read under the lock it holds)


def _on_threads(fn: Callable, threads: int = BLAS_THREADS) -> None:
    """`fn()` under `_blas_lock` on `threads` of OpenBLAS's threads; its count for the rest of the process (the
    user's NumPy) is put back after. (Where NumPy links another BLAS, `fn()` with that library's own threads.)"""
    with _blas_lock:
        get_set = _openblas()
        prev = get_set[0]() if get_set else threads
        if prev != threads:
            get_set[1](threads)
        try:
            fn()
        finally:
            if prev != threads:
                get_set[1](prev)


def _kept(cache: dict, key, make: Callable, most: int = 64):
    """`cache[key]`, made by `make()` the first time; the cache emptied when it holds `most` entries (bounded)."""
    v = cache.get(key)
    if v is None:
        if len(cache) >= most:
            cache.clear()
        v = cache[key] = make()
    return v


def _blas_module(dev):
    """The Python VM module (`BLAS_MODULE`) whose `dot_general_<k>` a module calls for its large float32
    and float64 matmuls (`blas-dots`): NumPy's matmul (its BLAS, `blas_matmul`) on the operands' mapped memory, writing
    into a new buffer of device `dev` (no copy, unless the dimension numbers need a transpose BLAS cannot take)."""
    rt = _rt()
    bv_type, new_buffer = rt.HalBufferView, _mapped_allocator(dev)
    dtypes = {int(_element_type(np.dtype(t))): np.dtype(t) for t in (np.float32, np.float64)}  # (lowering.BLAS_TYPES)

    class Blas:
        def __init__(self, iface):
            pass

    plans: dict = {}  # (operand shapes, element type, packed dimension numbers) -> `plan`'s result

    def plan(lshape, rshape, et: int, *packed):
        """How one signature calls np.matmul: each operand's matrix (or batch of matrices) as a view of its mapped
        memory (`_operand`), the result's shape and bytes. Worked out once: a call comes right after a BLAS call
        or a dispatch that evicted this Python code from the caches, where this glue is slow."""
        dt = dtypes[et]
        lb, rb, lc, rc = (unpack_dims(d) for d in packed)
        lf = [d for d in range(len(lshape)) if d not in lb and d not in lc]
        rf = [d for d in range(len(rshape)) if d not in rb and d not in rc]
        batch, m, n = [lshape[d] for d in lb], [lshape[d] for d in lf], [rshape[d] for d in rf]
        k = math.prod(lshape[d] for d in lc)
        nb, nm, nn = math.prod(batch), math.prod(m), math.prod(n)
        shape = (*batch, *m, *n)
        lead = () if nb == 1 else (nb,)  # (one batch: a 2-D product, one gemm, either operand transposed in place)
        if len(plans) >= 256:
            plans.clear()
        p = plans[(*lshape, -1, *rshape, et, *packed)] = (
            dt, _operand(lshape, lb + lf + lc, (*lead, nm, k), dt), _operand(rshape, rb + rc + rf, (*lead, k, nn), dt),
            list(shape), (*lead, nm, nn), max(1, math.prod(shape)) * dt.itemsize)
        return p

    def dot_general(_self, lhs_ref, rhs_ref, lb, rb, lc, rc):
        lhs, rhs = lhs_ref.deref(bv_type), rhs_ref.deref(bv_type)
        et = lhs.element_type
        p = plans.get((*lhs.shape, -1, *rhs.shape, int(et), lb, rb, lc, rc))
        if p is None:
            p = plan(lhs.shape, rhs.shape, int(et), lb, rb, lc, rc)
        dt, (l2, lstrides, lview), (r2, rstrides, rview), shape, o2, nbytes = p
        buf = new_buffer(nbytes)
        # (np.ndarray on a mapping's buffer: 0.3 us; its `asarray`: 1.3, and 5-13 right after a large matmul)
        blas_matmul(np.ndarray(l2, dt, lhs.map(), 0, lstrides) if lview is None else lview(lhs.map()),
                    np.ndarray(r2, dt, rhs.map(), 0, rstrides) if rview is None else rview(rhs.map()),
                    np.ndarray(o2, dt, buf.map()))
        return bv_type(buf, shape, et).ref

    def dot_pair(_self, l1, r1, l2, r2, lb1, rb1, lc1, rc1, lb2, rb2, lc2, rc2):  # (passes.legalize._pair_calls)
        return dot_general(_self, l1, r1, lb1, rb1, lc1, rc1), dot_general(_self, l2, r2, lb2, rb2, lc2, rc2)

    iface = rt.PyModuleInterface(BLAS_MODULE, Blas)
    for i in range(BLAS_IMPORTS):
        iface.export(f"dot_general_{i}", "0rrIIII_r", dot_general)
        iface.export(f"dot_pair_{i}", "0rrrrIIIIIIII_rr", dot_pair)
    return iface.create()


def _sort_module(dev):
    """The Python VM module (`SORT_MODULE`) whose `sort<n>_<k>(operands..., dimension, num_keys)` sorts n
    arrays along `dimension` by the first `num_keys` (lexicographically, NaN last, ties in order: NumPy's stable
    sort, as the comparator `sort_p` emits), into new buffers of device `dev`."""
    rt = _rt()
    bv_type, new_buffer = rt.HalBufferView, _mapped_allocator(dev)
    keys = {et: np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int32, np.int64)  # (lowering.SORT_KEY_TYPES)
            for et in _element_types(np.dtype(t))}

    class Sort:
        def __init__(self, iface):
            pass

    def sort(_self, *args):
        *refs, dim, num_keys = args
        bvs = [r.deref(bv_type) for r in refs]
        arrays = []
        for i, bv in enumerate(bvs):  # keys by their type; the others moved as bytes
            et = int(bv.element_type)
            dt = keys[et] if i < num_keys else np.dtype(f"V{max(1, (et & 0xFF) // 8)}")
            arrays.append(np.ndarray(bv.shape, dt, bv.map()))
        order = (np.argsort(arrays[0], axis=dim, kind="stable") if num_keys == 1
                 else np.lexsort(arrays[num_keys - 1::-1], axis=dim))
        outs = []
        for a, bv in zip(arrays, bvs):
            buf = new_buffer(max(1, a.nbytes))
            np.ndarray(a.shape, a.dtype, buf.map())[...] = np.take_along_axis(a, order, axis=dim)
            outs.append(bv_type(buf, bv.shape, bv.element_type).ref)
        return outs[0] if len(outs) == 1 else tuple(outs)

    iface = rt.PyModuleInterface(SORT_MODULE, Sort)
    for n in range(1, SORT_OPERANDS + 1):
        for k in range(SORT_IMPORTS):
            iface.export(f"sort{n}_{k}", "0" + "r" * n + "II_" + "r" * n, sort)
    return iface.create()


# ---------------------------------------------------------------- LAPACK (`host-lapack`)

# Fortran LAPACK's symbols as NumPy's OpenBLAS names them: (prefix, suffix, integer type): scipy-openblas64's ILP64,
# its LP64, and plain OpenBLAS builds.
_LAPACK_NAMES = (("scipy_", "_64_", np.int64), ("scipy_", "_", np.int32), ("", "_64_", np.int64), ("", "_", np.int32))
_LAPACK_LETTER = {np.dtype(np.float32): "s", np.dtype(np.float64): "d", np.dtype(np.complex64): "c",
                  np.dtype(np.complex128): "z"}
_lapack_fns: list = []  # [{(routine, dtype): (function, integer dtype)} or None], looked up once
# routine -> (its pointer arguments, more for complex types, its CHARACTER arguments' hidden lengths); "evd" and
# "orgqr" are heevd and ungqr for complex types
_ARGS = {"getrf": (6, 0, 0), "getrs": (9, 0, 1), "potrf": (5, 0, 1), "evd": (11, 2, 2), "geqrf": (8, 0, 0),
         "orgqr": (9, 0, 0)}


def _routine(r: str, letter: str) -> str:
    cplx = letter in "cz"
    return {"evd": "heevd" if cplx else "syevd", "orgqr": "ungqr" if cplx else "orgqr"}.get(r, r)


def _lapack(routine: str, dt: np.dtype):
    """(ctypes function, its integer dtype) of `?routine` (getrf, getrs, potrf, geqrf; "evd": syevd or heevd;
    "orgqr": orgqr or ungqr) for `dt` in NumPy's OpenBLAS, or None."""
    import ctypes
    if not _lapack_fns:
        found = {}
        for lib in _openblas_libs():
            for prefix, suffix, int_t in _LAPACK_NAMES:
                fns = {(r, t): getattr(lib, f"{prefix}{c}{_routine(r, c)}{suffix}", None)
                       for r in _ARGS for t, c in _LAPACK_LETTER.items()}
                if all(f is not None for f in fns.values()):
                    for (r, t), f in fns.items():  # (pointers; each CHARACTER argument's hidden length comes last)
                        f.restype = None
                        n, more, chars = _ARGS[r]
                        f.argtypes = [ctypes.c_void_p] * (n + more * (t.kind == "c")) + [ctypes.c_size_t] * chars
                    found = {k: (f, np.dtype(int_t)) for k, f in fns.items()}
                    break
            if found:
                break
        _lapack_fns.append(found or None)
    fns = _lapack_fns[0]
    return None if fns is None else fns[routine, np.dtype(dt)]


class _Lapack:
    """LAPACK's getrf and getrs on `b` matrices of order `n` and `k` right-hand sides, in work arrays of their own
    (column-major, LAPACK's layout), each call's pointers worked out once; used under `_blas_lock`, on one OpenBLAS
    thread (`BLAS_THREADS`)."""

    def __init__(self, dt: np.dtype, b: int, n: int, k: int):
        self.getrf, it = _lapack("getrf", dt)
        self.getrs = _lapack("getrs", dt)[0]
        self.a, self.y = np.empty((b, n, n), dt), np.empty((b, k, n), dt)
        self.ipiv = np.empty((b, n), it)
        self.ints = np.array([n, k, 0, ord("N")], it)  # (n, nrhs, info, TRANS)
        self.ident = np.arange(1, n + 1, dtype=it)  # (getrs after the rows are in pivot order: no swaps)
        p, sz = self.ints.ctypes.data, it.itemsize
        self.args = [(p, p, self.a[i].ctypes.data, p, self.ipiv[i].ctypes.data, p + 2 * sz) for i in range(b)]
        self.solves = [(p + 3 * sz, p, p + sz, self.a[i].ctypes.data, p, self.ident.ctypes.data, self.y[i].ctypes.data,
                        p, p + 2 * sz, 1) for i in range(b)]
        # getrf then getrs with getrf's own pivots (getrs swaps B's rows as `lu`'s permutation orders them: the same
        # rows, the same substitutions)
        self.factor_solves = [(f, (p + 3 * sz, p, p + sz, self.a[i].ctypes.data, p, self.ipiv[i].ctypes.data,
                                   self.y[i].ctypes.data, p, p + 2 * sz, 1)) for i, f in enumerate(self.args)]
        self.eye = np.eye(n, dtype=dt) if k == n else None  # (the inverse's right-hand side, either layout)

    def lu(self, a: np.ndarray, lu: np.ndarray, perm: np.ndarray, swaps: np.ndarray) -> None:
        np.copyto(self.a, a.transpose(0, 2, 1))
        for args in self.args:
            self.getrf(*args)
        np.copyto(lu, self.a.transpose(0, 2, 1))
        n = a.shape[-1]
        for i, piv in enumerate(self.ipiv.tolist()):  # (LAPACK's sequential swaps, 1-based, as a permutation)
            order, s = list(range(n)), 0
            for k, j in enumerate(piv):
                j -= 1
                if j != k:
                    order[k], order[j], s = order[j], order[k], s + 1
            perm[i], swaps[i] = order, s

    def lu_solve(self, a: np.ndarray, b: np.ndarray | None, out: np.ndarray) -> None:
        """`out` = A^-1 B (b None: A^-1) for each matrix: getrf, then getrs on its pivots."""
        np.copyto(self.a, a.transpose(0, 2, 1))
        np.copyto(self.y, self.eye if b is None else b.transpose(0, 2, 1))
        getrf, getrs = self.getrf, self.getrs
        for f, s in self.factor_solves:
            getrf(*f)
            getrs(*s)
        np.copyto(out, self.y.transpose(0, 2, 1))

    def det(self, a: np.ndarray, out: np.ndarray) -> None:
        """`out` (b,) = det A for each matrix: getrf, then U's diagonal multiplied in order (`_det_of`) and signed by
        the row swaps."""
        np.copyto(self.a, a.transpose(0, 2, 1))
        getrf, work, ipiv, ident = self.getrf, self.a, self.ipiv, self.ident
        for i, f in enumerate(self.args):
            getrf(*f)
            out[i] = _det_of(work[i].diagonal(), np.count_nonzero(ipiv[i] != ident))

    def slogdet(self, a: np.ndarray, sign: np.ndarray, logdet: np.ndarray) -> None:
        """(sign, log|det A|) for each matrix into `sign` and `logdet` (b,): getrf, then `_slogdet_of`."""
        np.copyto(self.a, a.transpose(0, 2, 1))
        getrf, work, ipiv, ident = self.getrf, self.a, self.ipiv, self.ident
        for i, f in enumerate(self.args):
            getrf(*f)
            sign[i], logdet[i] = _slogdet_of(work[i].diagonal(), np.count_nonzero(ipiv[i] != ident))

    def solve(self, y: np.ndarray, out: np.ndarray, lu: np.ndarray | None = None) -> None:
        """`out` = U^-1 L^-1 `y` (rows in pivot order), from `lu` (else the factors `lu` left in `self.a`)."""
        if lu is not None:
            np.copyto(self.a, lu.transpose(0, 2, 1))
        np.copyto(self.y, y.transpose(0, 2, 1))
        for args in self.solves:
            self.getrs(*args)
        np.copyto(out, self.y.transpose(0, 2, 1))


_lapack_plans: dict = {}  # (dtype, b, n, k) -> _Lapack


def _plan(dt: np.dtype, b: int, n: int, k: int) -> _Lapack | None:
    p = _lapack_plans.get((dt, b, n, k))
    if p is not None:
        return p
    if _lapack("getrf", dt) is None:
        return None
    return _kept(_lapack_plans, (dt, b, n, k), lambda: _Lapack(dt, b, n, k))


def _det_of(diag: np.ndarray, swaps: int):
    """The product of U's diagonal `diag` in order (NumPy's `accumulate` is sequential by definition: the bits do not
    depend on how a reduction would group them), times -1 where the row swaps are odd (the loop form's
    `multiply(prod(d), s)`). Quiet: an overflow to inf (or 0 * inf) is the value, as jit's (NumPy warned)."""
    with np.errstate(all="ignore"):
        prod = np.multiply.accumulate(diag)[-1] if len(diag) else diag.dtype.type(1)
    return prod * _SIGNS[diag.dtype][swaps & 1]


def _slogdet_of(diag: np.ndarray, swaps: int) -> tuple:
    """(sign, log|det|) from U's diagonal `diag` (n > 0) and the row swaps, as `linalg._lu_slogdet`'s loop form: the
    pivots' phases (-1 or 1; z / |z| complex, 1 at 0) multiplied in order and signed by the swaps, 0 where a pivot is
    0; their log-magnitudes summed in order (sequential `accumulate`s: the bits do not depend on a grouping)."""
    with np.errstate(all="ignore"):
        ad = np.abs(diag)
        if diag.dtype.kind == "c":
            zero = ad == 0
            phase = np.where(zero, diag.dtype.type(1), diag / np.where(zero, ad.dtype.type(1), ad))
        else:
            phase = np.where(diag < 0, diag.dtype.type(-1), diag.dtype.type(1))
        sign = np.multiply.accumulate(phase)[-1] * _SIGNS[diag.dtype][swaps & 1]
        logdet = np.add.accumulate(np.log(ad))[-1]
    return (diag.dtype.type(0) if ad.min() == 0 else sign), logdet


_SIGNS = {np.dtype(t): (np.dtype(t).type(1), np.dtype(t).type(-1))
          for t in (np.float32, np.float64, np.complex64, np.complex128)}


_eyes: dict = {}  # (n, dtype) -> identity


def _permuted(perm: np.ndarray, b: np.ndarray | None, dt: np.dtype) -> np.ndarray:
    """B's rows in pivot order (b None: the identity's)."""
    if b is not None:
        return np.take_along_axis(b, perm[:, :, None], 1)
    n = perm.shape[-1]
    return _kept(_eyes, (n, dt), lambda: np.eye(n, dtype=dt))[perm]


def lapack_lu(a: np.ndarray, lu: np.ndarray, perm: np.ndarray, swaps: np.ndarray) -> None:
    """P A = L U of each matrix of `a` (b, n, n), into `lu` (packed, L unit lower), `perm` (b, n) and `swaps` (b,):
    LAPACK's getrf, or the same partial pivoting in NumPy where NumPy has no OpenBLAS. A zero pivot eliminates
    nothing (U singular, as `linalg._lu`'s loop)."""
    p = _plan(a.dtype, a.shape[0], a.shape[-1], 1)
    if p is None:
        _numpy_lu(a, lu, perm, swaps)
    else:
        with _one_thread:
            p.lu(a, lu, perm, swaps)


def lapack_solve(lu: np.ndarray, perm: np.ndarray, b: np.ndarray | None, out: np.ndarray) -> None:
    """X with A X = B for each factor (b, n, n) of `lapack_lu` and right-hand side (b, n, k) of `b` (None: the
    identity), into `out`: B's rows permuted, then forward and back substitution (LAPACK's getrs)."""
    y = _permuted(perm, b, lu.dtype)
    p = _plan(lu.dtype, lu.shape[0], lu.shape[-1], y.shape[-1])
    if p is None:
        for i in range(lu.shape[0]):
            out[i] = _numpy_substitute(lu[i], y[i])
    else:
        with _one_thread:
            p.solve(y, out, lu)


def lapack_lu_solve(a: np.ndarray, b: np.ndarray | None, out: np.ndarray) -> None:
    """X with A X = B (b None: the inverse) for each (b, n, n) matrix of `a`: `lapack_lu`, then `lapack_solve`."""
    nb, n = a.shape[0], a.shape[-1]
    p = _plan(a.dtype, nb, n, n if b is None else b.shape[-1])
    if p is None:
        lu, perm, swaps = _numpy_factors(a)
        y = _permuted(perm, b, a.dtype)
        for i in range(nb):
            out[i] = _numpy_substitute(lu[i], y[i])
        return
    with _one_thread:
        p.lu_solve(a, b, out)


def lapack_slogdet(a: np.ndarray, sign: np.ndarray, logdet: np.ndarray) -> None:
    """(sign, log|det A|) of each (b, n, n) matrix of `a` into `sign` (b,) and `logdet` (b,) (its real dtype):
    `lapack_lu`'s factors (getrf), then `_slogdet_of`; a zero pivot gives (0, -inf)."""
    nb, n = a.shape[0], a.shape[-1]
    p = _plan(a.dtype, nb, n, 1)
    if p is None:
        lu, perm, swaps = _numpy_factors(a)
        for i in range(nb):
            sign[i], logdet[i] = _slogdet_of(lu[i].diagonal(), int(swaps[i]))
        return
    with _one_thread:
        p.slogdet(a, sign, logdet)


def lapack_det(a: np.ndarray, out: np.ndarray) -> None:
    """det A of each (b, n, n) matrix of `a` into `out` (b,): `lapack_lu`'s factors (getrf), then U's diagonal's
    product in order, signed by the row swaps (`_det_of`); a zero pivot gives 0, a NaN entry NaN."""
    nb, n = a.shape[0], a.shape[-1]
    p = _plan(a.dtype, nb, n, 1)
    if p is None:
        lu, perm, swaps = _numpy_factors(a)
        for i in range(nb):
            out[i] = _det_of(lu[i].diagonal(), int(swaps[i]))
        return
    with _one_thread:
        p.det(a, out)


class _Potrf:
    """LAPACK's potrf on `b` matrices of order `n`, in a work array of its own (zero above the diagonal, which potrf
    never writes), each call's pointers worked out once; used under `_blas_lock` (`_one_thread`)."""

    def __init__(self, dt: np.dtype, b: int, n: int):
        self.fn, it = _lapack("potrf", dt)
        self.lower = np.tri(n, dtype=bool)  # (on and below the diagonal: what potrf reads and writes)
        self.w = np.zeros((b, n, n), dt)
        self.nan = np.where(self.lower, np.nan, 0).astype(dt)  # (a factor that failed: NaN on and below the diagonal)
        self.ints = np.array([n, 0, ord("U")], it)  # (n, info, UPLO)
        p, sz = self.ints.ctypes.data, it.itemsize
        self.args = [(p + 2 * sz, p, self.w[i].ctypes.data, p, p + sz, 1) for i in range(b)]

    def cholesky(self, a: np.ndarray, out: np.ndarray) -> None:
        # The column-major view of A's row-major buffer is A^T, whose upper triangle is A's lower one (conjugated:
        # A^T = conj(A) for Hermitian A). potrf's 'U' factor there, U^H U = conj(A), read row-major is U^T = L.
        fn, ints = self.fn, self.ints
        with _one_thread:
            np.copyto(self.w, a, where=self.lower)
            for i, args in enumerate(self.args):
                fn(*args)
                out[i] = self.w[i] if ints[1] == 0 else self.nan


_potrf_plans: dict = {}  # (dtype, b, n) -> _Potrf


def lapack_cholesky(a: np.ndarray, out: np.ndarray) -> None:
    """The lower Cholesky factor of each Hermitian (b, n, n) matrix of `a` (its lower triangle read) into `out`, zeros
    above the diagonal; a matrix that is not positive definite gives NaN on and below it, one holding NaN NaN where
    it reaches (potrf's pivots compare false), as `linalg._cholesky`'s loop: LAPACK's potrf, or NumPy's cholesky
    where NumPy has no OpenBLAS."""
    b, n = a.shape[0], a.shape[-1]
    p = _potrf_plans.get((a.dtype, b, n))
    if p is None:
        if _lapack("potrf", a.dtype) is None:
            upper = _kept(_uppers, n, lambda: ~np.tri(n, dtype=bool))
            for i in range(b):
                try:
                    out[i] = np.linalg.cholesky(np.where(upper, np.conj(a[i].T), a[i]))
                except np.linalg.LinAlgError:
                    out[i] = np.nan
            out[:, upper] = 0
            return
        p = _kept(_potrf_plans, (a.dtype, b, n), lambda: _Potrf(a.dtype, b, n))
    p.cholesky(a, out)


def lapack_cholesky_sym(a: np.ndarray, out: np.ndarray) -> None:
    """`lapack_cholesky` of the Hermitian part (a + a^H) * 0.5 of each (b, n, n) matrix of `a` (in NumPy: `linalg`'s
    `_sym`, on the host)."""
    lapack_cholesky(_hermitian_part(a), out)


def _hermitian_part(a: np.ndarray) -> np.ndarray:
    """(a + a^H) * 0.5 of each matrix, new (`linalg._sym`'s ops, in NumPy)."""
    h = a.swapaxes(-1, -2)
    h = np.add(a, np.conj(h) if a.dtype.kind == "c" else h)
    np.multiply(h, _HALF[a.dtype], out=h)
    return h


_HALF = {np.dtype(t): np.dtype(t).type(0.5) for t in (np.float32, np.float64, np.complex64, np.complex128)}
_uppers: dict = {}  # n -> the mask of an n x n matrix's entries above its diagonal


class _Evd:
    """LAPACK's syevd (heevd for complex) of order `n`: its workspace sized once (a query), a work copy of A, the
    call's pointers worked out once; used under `_blas_lock` (`_one_thread`)."""

    def __init__(self, dt: np.dtype, n: int):
        self.fn, it = _lapack("evd", dt)
        rdt = np.dtype(dt.char.lower()) if dt.kind == "c" else dt
        self.cplx = dt.kind == "c"
        self.a, self.w = np.empty((n, n), dt), np.empty(n, rdt)
        self.ints = np.array([n, 0, -1, -1, -1], it)  # (n, info, lwork, liwork, lrwork)
        self.chars = np.array([ord("V"), ord("L")], np.uint8)
        self.work, self.iwork, self.rwork = np.zeros(1, dt), np.zeros(1, it), np.zeros(1, rdt)
        self.fn(*self._args())  # (the workspace query: sizes in work[0], iwork[0] and, complex only, rwork[0])
        self.ints[2:] = int(self.work[0].real), int(self.iwork[0]), int(self.rwork[0]) if self.cplx else 1
        self.work, self.iwork = np.empty(max(1, self.ints[2]), dt), np.empty(max(1, self.ints[3]), it)
        self.rwork = np.empty(max(1, self.ints[4]), rdt)
        self.args = self._args()

    def _args(self) -> tuple:
        p, sz, c = self.ints.ctypes.data, self.ints.itemsize, self.chars.ctypes.data
        a, w, wk, iw = self.a.ctypes.data, self.w.ctypes.data, self.work.ctypes.data, self.iwork.ctypes.data
        if self.cplx:
            return c, c + 1, p, a, p, w, wk, p + 2 * sz, self.rwork.ctypes.data, p + 4 * sz, iw, p + 3 * sz, p + sz, 1, 1
        return c, c + 1, p, a, p, w, wk, p + 2 * sz, iw, p + 3 * sz, p + sz, 1, 1

    def _call(self) -> int:
        self.fn(*self.args)
        return int(self.ints[1])

    def eigh(self, a: np.ndarray, w: np.ndarray, v: np.ndarray) -> None:
        # Read column-major, A's buffer is A^T = conj(A) (Hermitian A): its eigenvectors are conj of A's, and the
        # columns of LAPACK's Z read row-major are Z^T's rows.
        np.copyto(self.a, a)
        if self._call() != 0:
            w[...], v[...] = np.nan, np.nan
            return
        w[...] = self.w
        v[...] = np.conj(self.a.T) if self.cplx else self.a.T


_evd_plans: dict = {}  # (dtype, n) -> _Evd


def lapack_eigh(a: np.ndarray, w: np.ndarray, v: np.ndarray) -> None:
    """Ascending eigenvalues (into `w`, (b, n)) and eigenvectors as columns (`v`, (b, n, n)) of each Hermitian matrix
    of `a` (b, n, n): LAPACK's syevd/heevd, or NumPy's eigh where NumPy has no OpenBLAS. A matrix holding inf or NaN
    gives NaN (as `linalg._eigh`'s Jacobi sweeps)."""
    b, n = a.shape[0], a.shape[-1]
    finite = np.isfinite(a).reshape(b, -1).all(axis=1)
    if _lapack("evd", a.dtype) is None:
        for i in range(b):
            w[i], v[i] = np.linalg.eigh(a[i]) if finite[i] else (np.nan, np.nan)
        return
    p = _kept(_evd_plans, (a.dtype, n), lambda: _Evd(a.dtype, n))
    with _one_thread:
        for i in range(b):
            if finite[i]:
                p.eigh(a[i], w[i], v[i])
            else:
                w[i], v[i] = np.nan, np.nan


def lapack_eigh_sym(a: np.ndarray, w: np.ndarray, v: np.ndarray) -> None:
    """`lapack_eigh` of the Hermitian part (a + a^H) * 0.5 of each (b, n, n) matrix of `a` (in NumPy: `linalg`'s
    `_sym`, on the host, as `lapack_cholesky_sym`)."""
    lapack_eigh(_hermitian_part(a), w, v)


def _svd_gufunc(kind: str, shape: tuple) -> np.ufunc:
    """NumPy's SVD gufunc: values only (`kind` ""), reduced ("_s") or full ("_f") vectors; NumPy 1.x had one for wide
    (m < n) and one for other matrices (`svd_m_s`, `svd_n_s`)."""
    fn = getattr(_umath_linalg, "svd" + kind, None)
    return fn if fn is not None else getattr(_umath_linalg, ("svd_m" if shape[-2] < shape[-1] else "svd_n") + kind)


def lapack_svd(a: np.ndarray, s: np.ndarray, u: np.ndarray | None = None, vh: np.ndarray | None = None) -> None:
    """Singular values (into `s`, (b, k), descending) and, given `u` and `vh`, singular vectors ((b, m, k) and (b, k,
    n), or (b, m, m) and (b, n, n) for full ones) of each matrix of `a` (b, m, n): LAPACK's gesdd in float64 or
    complex128 whatever the type, as `np.linalg.svd` calls it, so its bits: its gufunc, once for the whole batch
    (without `np.linalg.svd`'s checks and a Python call a matrix). A matrix holding inf or NaN,
    or one gesdd does not converge on (the gufunc gives it NaN), gives NaN (as `linalg._svd`'s Jacobi sweeps)."""
    cx = np.iscomplexobj(a)
    if u is None:
        fn, sig, outs = _svd_gufunc("", a.shape), "D->d" if cx else "d->d", (s,)
    else:
        full = (u.shape[-1], vh.shape[-2]) != (s.shape[-1],) * 2
        fn, sig, outs = _svd_gufunc("_f" if full else "_s", a.shape), "D->DdD" if cx else "d->ddd", (u, s, vh)
    finite = np.isfinite(a).all(axis=(-2, -1))
    every = bool(finite.all())
    # (the outputs rounded from float64 or complex128 as `astype` would)
    part = outs if every else tuple(np.empty((int(finite.sum()), *o.shape[1:]), o.dtype) for o in outs)
    with _one_thread, np.errstate(invalid="ignore", over="ignore", divide="ignore", under="ignore"):
        fn(a if every else a[finite], signature=sig, out=part)
    if not every:
        for o, p in zip(outs, part):
            o[finite], o[~finite] = p, np.nan


class _Qr:
    """LAPACK's geqrf, then orgqr (ungqr) for Q, on (m, n) matrices as NumPy's `qr` calls them (in float64 or
    complex128 whatever the type, a column-major copy of A, Q's work holding the reflectors' columns, workspaces as
    queried), so its bits, without NumPy's per-call checks and copies; each call's pointers worked out once, used
    under `_blas_lock` (`_one_thread`). Never empty matrices (`linalg._host_lapack` keeps them to the loops)."""

    def __init__(self, dt: np.dtype, m: int, n: int, cols: int):
        dt = np.dtype(np.complex128 if dt.kind == "c" else np.float64)
        (self.geqrf, it), (self.orgqr, _) = _lapack("geqrf", dt), _lapack("orgqr", dt)
        self.k, self.cols = min(m, n), cols  # (Q's columns: k, or m for a complete Q; 0: R alone)
        self.a = np.empty((n, m), dt)  # (read column-major: A, m x n)
        self.q = np.empty((max(cols, 1), m), dt)  # (column-major: Q, m x cols)
        self.tau = np.zeros(self.k, dt)
        self.ints = np.array([m, n, self.k, m, -1, -1, 0, max(cols, 1)], it)  # (m, n, k, lda, lworks, info, cols)
        p, sz = self.ints.ctypes.data, it.itemsize
        self.work = np.zeros(1, dt)
        w, tau = self.work.ctypes.data, self.tau.ctypes.data
        self.factor = (p, p + sz, self.a.ctypes.data, p + 3 * sz, tau, w, p + 4 * sz, p + 6 * sz)
        self.form = (p, p + 7 * sz, p + 2 * sz, self.q.ctypes.data, p + 3 * sz, tau, w, p + 5 * sz, p + 6 * sz)
        self.geqrf(*self.factor)  # (the workspace queries: sizes in work[0])
        lwork = [max(1, int(self.work[0].real)), 1]
        if cols:
            self.orgqr(*self.form)
            lwork[1] = max(1, int(self.work[0].real))
        self.ints[4:6] = lwork
        self.work = np.zeros(max(lwork), dt)
        self.factor = (*self.factor[:5], self.work.ctypes.data, *self.factor[6:])
        self.form = (*self.form[:6], self.work.ctypes.data, *self.form[7:])

    def qr(self, a: np.ndarray, r: np.ndarray, q: np.ndarray | None) -> None:
        np.copyto(self.a, a.T)
        self.geqrf(*self.factor)
        r.fill(0)  # (R: the factor's upper triangle, of k rows, or m for a complete R: zeros below A's rows)
        np.copyto(r, self.a.T[:r.shape[0]], where=_kept(_uppers_on, r.shape, lambda: ~np.tri(*r.shape, -1, bool)))
        if q is not None:
            self.q[:self.k] = self.a[:self.k]
            self.orgqr(*self.form)
            q[...] = self.q[:self.cols].T


_qr_plans: dict = {}  # (dtype, m, n, Q's columns) -> _Qr
_uppers_on: dict = {}  # shape -> the mask of its entries on and above the diagonal


def lapack_qr(a: np.ndarray, r: np.ndarray, q: np.ndarray | None = None, complete: bool = False) -> None:
    """R (into `r`: (b, k, n), or (b, m, n) `complete`) and, given `q`, Q ((b, m, k), or (b, m, m) `complete`) of each
    matrix of `a` (b, m, n): NumPy's QR, LAPACK's geqrf and orgqr (Householder reflectors, R's diagonal of either
    sign, as `linalg._householder`'s), called directly (`_Qr`) where NumPy's OpenBLAS has them."""
    b, m, n = a.shape
    key = (a.dtype, m, n, 0 if q is None else q.shape[-1])
    if (p := _qr_plans.get(key)) is None and _lapack("geqrf", a.dtype) is not None:
        p = _kept(_qr_plans, key, lambda: _Qr(*key))
    if p is not None:
        with _one_thread:
            for i in range(b):
                p.qr(a[i], r[i], None if q is None else q[i])
        return
    mode = "r" if q is None else "complete" if complete else "reduced"

    def run():
        for i in range(a.shape[0]):
            if q is None:
                r[i] = np.linalg.qr(a[i], mode="r")
            else:
                q[i], r[i] = np.linalg.qr(a[i], mode=mode)
    _on_threads(run)


def _numpy_factors(a: np.ndarray) -> tuple:
    """`_numpy_lu`'s (lu, perm, swaps) of each (b, n, n) matrix of `a`, in new arrays."""
    nb, n = a.shape[0], a.shape[-1]
    lu, perm, swaps = np.empty_like(a), np.empty((nb, n), np.int32), np.empty(nb, np.int32)
    _numpy_lu(a, lu, perm, swaps)
    return lu, perm, swaps


def _numpy_lu(a, lu, perm, swaps) -> None:
    """`lapack_lu` in NumPy: right-looking, the first largest |pivot| (NaN largest), as `linalg._lu`."""
    b, n = a.shape[0], a.shape[-1]
    lu[...] = a
    perm[...] = np.arange(n)
    swaps[...] = 0
    r = np.arange(b)
    for k in range(n):
        mag = np.abs(lu[:, k:, k])
        p = k + np.argmax(np.where(np.isnan(mag), np.inf, mag), axis=1)
        lu[r, k], lu[r, p] = lu[r, p].copy(), lu[r, k].copy()
        perm[r, k], perm[r, p] = perm[r, p].copy(), perm[r, k].copy()
        swaps += p != k
        piv = lu[:, k, k:k + 1]
        l = np.where(piv == 0, 0, lu[:, k + 1:, k] / np.where(piv == 0, 1, piv))
        lu[:, k + 1:, k] = l
        lu[:, k + 1:, k + 1:] -= l[:, :, None] * lu[:, k:k + 1, k + 1:]


def _numpy_substitute(lu: np.ndarray, y: np.ndarray) -> np.ndarray:
    n = lu.shape[-1]
    y = y.copy()
    for j in range(n):
        y[j + 1:] -= lu[j + 1:, j:j + 1] * y[j:j + 1]
    for j in range(n - 1, -1, -1):
        y[j] = y[j] / lu[j, j]
        y[:j] -= lu[:j, j:j + 1] * y[j:j + 1]
    return y


def _lapack_module(dev):
    """The Python VM module (`LAPACK_MODULE`) answering `linalg`'s named LU functions (`host-lapack`), every leading
    dimension a batch, into new buffers of `dev`: `getrf_<k>(a) -> (lu, perm, swaps)` (`lapack_lu`),
    `getrs_<k>(lu, perm, b)` and `getri_<k>(lu, perm)` (`lapack_solve`), `solve_<k>(a, b)` and `inv_<k>(a)`
    (`lapack_lu_solve`), `det_<k>(a)` (`lapack_det`), `slogdet_<k>(a) -> (sign, logdet)` (`lapack_slogdet`),
    `potrf_<k>(a)` (`lapack_cholesky`), `potrf_sym_<k>(a)` (`lapack_cholesky_sym`), `syevd_<k>(a) -> (w, v)`
    (`lapack_eigh`), `syevd_sym_<k>(a)` (`lapack_eigh_sym`), `gesdd_<k>(a) -> (u, s, vh)`, `gesdd_full_<k>` and
    `gesdd_vals_<k>(a) -> s` (`lapack_svd`), `geqrf_<k>(a) -> (q, r)`, `geqrf_complete_<k>` and `geqrf_r_<k>(a) -> r`
    (`lapack_qr`)."""
    rt = _rt()
    bv_type, new_buffer = rt.HalBufferView, _mapped_allocator(dev)
    dtypes = {int(_element_type(np.dtype(t))): np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                                                      np.complex128)}
    i32 = (0x10 << 24) | 32  # (a signless 32-bit integer, as the module declares perm and swaps)

    class Lapack:
        def __init__(self, iface):
            pass

    def view(ref, dt=None):
        bv = ref.deref(bv_type)
        shape = tuple(bv.shape)
        n = shape[-1]
        return np.ndarray(shape, dt or dtypes[int(bv.element_type)], bv.map()), shape, bv.element_type, n

    def result(shape, dt, et):
        buf = new_buffer(max(1, math.prod(shape) * dt.itemsize))
        return np.ndarray(shape, dt, buf.map()), bv_type(buf, list(shape), et).ref

    def getrf(_self, a_ref):
        a, shape, et, n = view(a_ref)
        lu, lu_ref = result(shape, a.dtype, et)
        perm, perm_ref = result(shape[:-1], _I32, i32)
        swaps, swaps_ref = result(shape[:-2], _I32, i32)
        lapack_lu(a.reshape(-1, n, n), lu.reshape(-1, n, n), perm.reshape(-1, n), swaps.reshape(-1))
        return lu_ref, perm_ref, swaps_ref

    def getrs(lu_ref, perm_ref, b_ref):
        lu, shape, et, n = view(lu_ref)
        perm = view(perm_ref, _I32)[0]
        b = None if b_ref is None else view(b_ref)[0]
        shape = shape if b is None else b.shape
        x, x_ref = result(shape, lu.dtype, et)
        lapack_solve(lu.reshape(-1, n, n), perm.reshape(-1, n), None if b is None else b.reshape(-1, n, shape[-1]),
                     x.reshape(-1, n, shape[-1]))
        return x_ref

    def solve(a_ref, b_ref):
        a, shape, et, n = view(a_ref)
        b = None if b_ref is None else view(b_ref)[0]
        shape = shape if b is None else b.shape
        x, x_ref = result(shape, a.dtype, et)
        lapack_lu_solve(a.reshape(-1, n, n), None if b is None else b.reshape(-1, n, shape[-1]),
                        x.reshape(-1, n, shape[-1]))
        return x_ref

    def det(_self, a_ref):
        a, shape, et, n = view(a_ref)
        out, out_ref = result(shape[:-2], a.dtype, et)
        lapack_det(a.reshape(-1, n, n), out.reshape(-1))
        return out_ref

    def slogdet(_self, a_ref):
        a, shape, et, n = view(a_ref)
        rdt = np.dtype(a.dtype.char.lower()) if a.dtype.kind == "c" else a.dtype
        sign, sign_ref = result(shape[:-2], a.dtype, et)
        logdet, logdet_ref = result(shape[:-2], rdt, int(_element_type(rdt)))
        lapack_slogdet(a.reshape(-1, n, n), sign.reshape(-1), logdet.reshape(-1))
        return sign_ref, logdet_ref

    def potrf(_self, a_ref, fn=lapack_cholesky):
        a, shape, et, n = view(a_ref)
        out, out_ref = result(shape, a.dtype, et)
        fn(a.reshape(-1, n, n), out.reshape(-1, n, n))
        return out_ref

    def gesdd(_self, a_ref, uv: bool = True, full: bool = False):
        a, shape, et, n = view(a_ref)
        m, k = shape[-2], min(shape[-2], n)
        rdt = np.dtype(a.dtype.char.lower()) if a.dtype.kind == "c" else a.dtype
        s, s_ref = result(shape[:-2] + (k,), rdt, int(_element_type(rdt)))
        if not uv:
            lapack_svd(a.reshape(-1, m, n), s.reshape(-1, k))
            return s_ref
        cu, cv = (m, n) if full else (k, k)
        u, u_ref = result(shape[:-2] + (m, cu), a.dtype, et)
        vh, vh_ref = result(shape[:-2] + (cv, n), a.dtype, et)
        lapack_svd(a.reshape(-1, m, n), s.reshape(-1, k), u.reshape(-1, m, cu), vh.reshape(-1, cv, n))
        return u_ref, s_ref, vh_ref

    def geqrf(_self, a_ref, mode: str = "reduced"):
        a, shape, et, n = view(a_ref)
        m = shape[-2]
        rows, cols = (m, m) if mode == "complete" else (min(m, n),) * 2
        r, r_ref = result(shape[:-2] + (rows, n), a.dtype, et)
        if mode == "r":
            lapack_qr(a.reshape(-1, m, n), r.reshape(-1, rows, n))
            return r_ref
        q, q_ref = result(shape[:-2] + (m, cols), a.dtype, et)
        lapack_qr(a.reshape(-1, m, n), r.reshape(-1, rows, n), q.reshape(-1, m, cols), mode == "complete")
        return q_ref, r_ref

    def evd(_self, a_ref, fn=lapack_eigh):
        a, shape, et, n = view(a_ref)
        rdt = np.dtype(a.dtype.char.lower()) if a.dtype.kind == "c" else a.dtype
        w, w_ref = result(shape[:-1], rdt, int(_element_type(rdt)))
        v, v_ref = result(shape, a.dtype, et)
        fn(a.reshape(-1, n, n), w.reshape(-1, n), v.reshape(-1, n, n))
        return w_ref, v_ref

    iface = rt.PyModuleInterface(LAPACK_MODULE, Lapack)
    for i in range(LAPACK_IMPORTS):
        iface.export(f"potrf_{i}", "0r_r", potrf)
        iface.export(f"potrf_sym_{i}", "0r_r", lambda _self, a: potrf(_self, a, lapack_cholesky_sym))
        iface.export(f"det_{i}", "0r_r", det)
        iface.export(f"slogdet_{i}", "0r_rr", slogdet)
        iface.export(f"syevd_{i}", "0r_rr", evd)
        iface.export(f"syevd_sym_{i}", "0r_rr", lambda _self, a: evd(_self, a, lapack_eigh_sym))
        iface.export(f"gesdd_{i}", "0r_rrr", gesdd)
        iface.export(f"gesdd_full_{i}", "0r_rrr", lambda _self, a: gesdd(_self, a, full=True))
        iface.export(f"gesdd_vals_{i}", "0r_r", lambda _self, a: gesdd(_self, a, uv=False))
        iface.export(f"geqrf_{i}", "0r_rr", geqrf)
        iface.export(f"geqrf_complete_{i}", "0r_rr", lambda _self, a: geqrf(_self, a, "complete"))
        iface.export(f"geqrf_r_{i}", "0r_r", lambda _self, a: geqrf(_self, a, "r"))
        iface.export(f"getrf_{i}", "0r_rrr", getrf)
        iface.export(f"getrs_{i}", "0rrr_r", lambda _self, lu, perm, b: getrs(lu, perm, b))
        iface.export(f"getri_{i}", "0rr_r", lambda _self, lu, perm: getrs(lu, perm, None))
        iface.export(f"solve_{i}", "0rr_r", lambda _self, a, b: solve(a, b))
        iface.export(f"inv_{i}", "0r_r", lambda _self, a: solve(a, None))
    return iface.create()


_I32 = np.dtype(np.int32)
