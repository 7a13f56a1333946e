"""Float32/float64 matmuls of CPU modules call NumPy's BLAS (`passes.legalize.blas_dots`, `host._blas_module`): by default
matrix-vector products only (docs/blas.md); the pass's mechanics at a threshold for every product (`ALL`,
`offload_all`): every kind of dimension numbers, inside loops and gradients, against NumPy and against the module
IREE compiles with the calls off (`config.cpu_blas`). The rule's other halves: OpenBLAS's thread count during a call
(`host.BLAS_THREADS`) and the CPU driver of a module calling BLAS (`Backend.driver_for`), neither timed."""
from __future__ import annotations

import os
import subprocess
import sys

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import stagec
import stagec.numpy as snp
from stagec import backend, host, lax
from stagec.compiler import HOST_BLAS
from stagec.lowering import BLAS_MODULE, pack_dims, unpack_dims
from stagec.passes import legalize as legalize_pass, on_text
from threads import run_at_once

pytestmark = pytest.mark.cpu_only  # (host BLAS calls: the CPU pipeline's `blas-dots`, the CPU drivers)

rng = np.random.default_rng(0)


def blas_dots(mlir: str, min_macs, min_vector_macs=None) -> str | None:
    """`blas-dots` on text, with these thresholds (None where it calls nothing)."""
    return on_text(mlir, lambda m: legalize_pass.blas_dots(m, min_macs, min_vector_macs))


ALL = 1 << 21  # a threshold at which the pass makes a call of every product of 128^3 and more (the mechanics' tests)


@pytest.fixture
def offload_all(monkeypatch):
    """Products of `ALL` multiply-adds and more call BLAS, as the rule before docs/blas.md had it (the persistent
    cache off: its keys hold the pass's source, not this setting)."""
    monkeypatch.setattr(legalize_pass, "BLAS_MIN_MACS", ALL)
    cached = stagec.config.persistent_cache
    stagec.config.update("persistent_cache", False)
    yield
    stagec.config.update("persistent_cache", cached)


def r(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def test_pack_dims_round_trips():
    for dims in ([], [0], [2, 0, 1], list(range(14, -1, -1))):
        assert unpack_dims(pack_dims(dims)) == dims


def _mlir(f, *args, stage: str = "isolate-reductions") -> str:  # (the stage before the offloads)
    return stagec.jit(f).lower(*args).as_text(stage)


def test_rewrite_replaces_large_dots_only():
    a, b = r(128, 128), r(128, 128)
    small = r(16, 16)
    mlir = _mlir(lambda a, b, s: (a @ b, s @ s), a, b, small)
    out = blas_dots(mlir, ALL)
    assert out is not None
    assert out.count(f"call @{BLAS_MODULE}.dot_general_0") == 1
    assert out.count("stablehlo.dot_general") == 1  # the 16^3 one stays
    # bfloat16 and integer products have no BLAS: unchanged (`upcast-half-dots` makes half ones float32 first)
    assert blas_dots(_mlir(lambda a: a @ a, r(256, 256).astype(snp.bfloat16), stage="dce"), 1) is None
    assert "stablehlo.convert" in blas_dots(_mlir(lambda a: a @ a, r(256, 256).astype(snp.bfloat16)), 1)
    assert blas_dots(_mlir(lambda a: a @ a, np.ones((256, 256), np.int32)), 1) is None


def test_independent_products_in_a_row_share_one_call(offload_all):
    # two BLAS calls in a row, the second not reading the first (a backward pass's two cotangents of a matmul):
    # one call of dot_pair (one way back to Python); a product of a product stays two calls
    a, b, c = r(128, 128), r(128, 256), r(256, 128)
    calls = lambda f: [line.split(f"call @{BLAS_MODULE}.")[1].split("(")[0].rstrip("0123456789") for line
                       in blas_dots(_mlir(f, a, b, c), ALL).splitlines() if "call @" in line]
    assert calls(lambda a, b, c: (a @ b, b @ c, c @ a)) == ["dot_pair_", "dot_general_"]
    assert calls(lambda a, b, c: (a @ b) @ c) == ["dot_general_", "dot_general_"]

    def body(i, x):
        y, z = x[0] @ a, x[1] @ a  # (inside the loop's region)
        return y / 128, z / 64
    loop = lambda a, b, c: lax.fori_loop(0, 2, body, (a, a * 2))
    assert calls(loop) == ["dot_pair_"]
    for f in (lambda a, b, c: (a @ b, b @ c, c @ a), loop):
        for got, want in zip(stagec.jit(f)(a, b, c), f(*(x.astype(np.float64) for x in (a, b, c)))):
            _check(got, want)
    loss = lambda w, x: snp.sum(snp.tanh(x @ w) @ w.T)
    g = stagec.jit(stagec.grad(loss))
    assert f"{BLAS_MODULE}.dot_pair_0(" in blas_dots(g.lower(b, a).as_text("isolate-reductions"), ALL)
    w, x = b.astype(np.float64), a.astype(np.float64)
    h = np.tanh(x @ w)
    ones = np.ones((128, 128))
    _check(g(b, a), x.T @ ((ones @ w) * (1 - h * h)) + (h.T @ ones).T)


def test_matrix_vector_products_call_blas_from_fewer_multiply_adds():
    """IREE packs the matrix of a matrix-vector product on every call (1000x1000 @ 1000: 612 us, BLAS 91), so those
    call BLAS from `BLAS_MIN_VECTOR_MACS`; a small product with no free extent of 1 does not."""
    cases = [((512, 512), (512,)), ((512,), (512, 512)), ((300, 300), (300, 1)), ((4, 300, 300), (4, 300, 1)),
             ((16, 1000), (1000, 16)), ((200, 200), (200,))]
    for lhs, rhs in cases:
        a, b = r(*lhs), r(*rhs)
        macs = a.size * (b.size // a.shape[-1]) // (a.shape[0] if a.ndim == 3 else 1)
        vector = 1 in (a.shape[-2] if a.ndim > 1 else 1, b.shape[-1] if b.ndim > 1 else 1)
        row = a.ndim == 1 and b.ndim == 2 and b.shape[1] >= legalize_pass.ROW_COLUMNS  # (`x @ W`: IREE's)
        calls = blas_dots(_mlir(lambda a, b: a @ b, a, b), legalize_pass.BLAS_MIN_MACS,
                          legalize_pass.BLAS_MIN_VECTOR_MACS) is not None
        assert calls == (vector and macs >= legalize_pass.BLAS_MIN_VECTOR_MACS and not row), (lhs, rhs, macs)
        _check(stagec.jit(lambda a, b: a @ b)(a, b), a.astype(np.float64) @ b)


def test_a_row_times_a_weight_stays_iree_where_its_matvec_part_is_faster(x64):
    """`x @ W` of one row by a float32 W (K x N, N >= `ROW_COLUMNS`, under `ROW_WEIGHT` elements) is IREE's (the
    CPU's `matvec` tuning part: 1x256x256 5 us against BLAS's 11); `W @ v`, `x @ W.T`, a W of `ROW_WEIGHT`
    elements and float64 still call BLAS. Such a module is not packed: a matrix-vector or outer product counts as
    no product worth packing (`packing.dot_work`, passes/packing.py), where packing W on every call cost ~50x (docs/blas.md)."""
    from stagec import tuning
    assert legalize_pass.ROW_COLUMNS == tuning.MATVEC_COLUMNS  # (what stays IREE's is what the part matches)
    calls = lambda f, *s, dt=np.float32: blas_dots(_mlir(f, *(r(*x).astype(dt) for x in s)), legalize_pass.BLAS_MIN_MACS,
                                                   legalize_pass.BLAS_MIN_VECTOR_MACS) is not None
    mm = lambda a, b: a @ b
    assert not calls(mm, (1, 1024), (1024, 2048)) and not calls(mm, (784,), (784, 1024))
    assert calls(mm, (1024, 2048), (2048,)) and calls(lambda a, b: a @ b.T, (1, 1024), (2048, 1024))
    assert calls(mm, (1, 2048), (2048, 2048)) and calls(mm, (1, 1024), (1024, 2048), dt=np.float64)
    assert calls(mm, (1, 2048), (2048, 255))  # (narrower than the part)
    x, w = r(1, 1024), r(1024, 2048)
    lowered = stagec.jit(mm).lower(x, w)
    assert not lowered.facts.packs and lowered.facts.look.matvec
    _check(stagec.jit(mm)(x, w), x.astype(np.float64) @ w)
    outer = stagec.jit(lambda u, v: u.T @ v).lower(r(1, 2048), r(1, 2048))  # (2^22 multiply-adds, K = 1)
    assert not outer.facts.packs
    # beside a product that packs the module, no `matvec` part applies: the row calls BLAS (IREE would pack its W)
    both = lambda x, w, a, b: (x @ w, a @ b)
    assert calls(both, (1, 1024), (1024, 2048), (256, 1024), (1024, 1024))
    x, w, a, b = r(1, 1024), r(1024, 2048), r(256, 1024), r(1024, 1024)
    lowered = stagec.jit(both).lower(x, w, a, b)
    assert lowered.facts.packs and lowered.facts.host_calls
    for got, want in zip(stagec.jit(both)(x, w, a, b), (x.astype(np.float64) @ w, a.astype(np.float64) @ b)):
        _check(got, want)



def test_a_row_left_to_iree_is_one_its_matvec_part_reads():
    """A float32 product of one row by a weight either calls BLAS or is matched by the CPU's `matvec` tuning part
    (`tuning._matvec`): a K x 1 lhs contracted on its first dimension (`x.T @ W` with the transpose folded into
    the product) is no row the part matches, so it calls BLAS (it was left to IREE's generic kernel)."""
    first = lambda x, w: lax.dot_general(x, w, (((0,), (0,)), ((), ())))
    for f, shapes in ((first, [(1024, 1), (1024, 2048)]), (lambda x, w: x @ w, [(1, 1024), (1024, 2048)]),
                      (lambda x, w: x @ w, [(784,), (784, 1024)]), (lambda x, w: x.T @ w, [(1024, 1), (1024, 2048)])):
        args = [r(*s) for s in shapes]
        lowered = stagec.jit(f).lower(*args)
        calls = blas_dots(lowered.as_text("isolate-reductions"), legalize_pass.BLAS_MIN_MACS,
                          legalize_pass.BLAS_MIN_VECTOR_MACS) is not None
        assert calls != lowered.facts.look.matvec, shapes
        _check(stagec.jit(f)(*args), f(*[a.astype(np.float64) for a in args]) if f is not first else
               args[0].astype(np.float64).T @ args[1])

CASES = {  # name -> (function of (NumPy module, *arrays), shapes): run with stagec.numpy and with NumPy
    "a@b": (lambda np_, a, b: a @ b, [(256, 96), (96, 160)]),
    "a.T@b": (lambda np_, a, b: a.T @ b, [(96, 256), (96, 160)]),
    "a@b.T": (lambda np_, a, b: a @ b.T, [(256, 96), (160, 96)]),
    "a.T@b.T": (lambda np_, a, b: a.T @ b.T, [(96, 256), (160, 96)]),
    "matvec": (lambda np_, a, b: a @ b, [(2048, 1024), (1024,)]),
    "vecmat": (lambda np_, a, b: a @ b, [(2048,), (2048, 2048)]),
    "batched": (lambda np_, a, b: np_.matmul(a, b), [(4, 128, 64), (4, 64, 96)]),
    "batch in the middle": (lambda np_, a, b: np_.einsum("ibk,kbj->bij", a, b), [(128, 3, 64), (64, 3, 100)]),
    "two contracting": (lambda np_, a, b: np_.einsum("ikl,klj->ij", a, b), [(128, 16, 8), (16, 8, 700)]),
    "transposed batch": (lambda np_, a, b: np_.matmul(np_.transpose(a, (1, 0, 2)), b), [(128, 4, 64), (4, 64, 96)]),
    "transposed free dims": (lambda np_, a, b: np_.transpose(a, (1, 0, 2)) @ b, [(8, 16, 64), (64, 256)]),
    "vdot": (lambda np_, a, b: np_.dot(a, b), [(1 << 21,), (1 << 21,)]),
    "sliced": (lambda np_, a, b: a[:, :128] @ b[1:129], [(256, 256), (256, 256)]),
    "fused epilogue": (lambda np_, a, b: np_.tanh(np_.maximum(a @ b, 0) + 1.0), [(256, 96), (96, 160)]),
}


def _check(got, want, dtype=np.float32):
    scale = np.abs(want).max() + 1
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tol * 10, atol=tol * scale * 10)


@pytest.mark.parametrize("name", list(CASES))
def test_blas_matches_numpy(name, offload_all):
    f, shapes = CASES[name]
    args = [r(*s) for s in shapes]
    assert blas_dots(_mlir(lambda *a: f(snp, *a), *args), ALL) is not None, \
        "the case should call BLAS"
    got = stagec.jit(lambda *a: f(snp, *a))(*args)
    _check(got, f(np, *[a.astype(np.float64) for a in args]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=5).flatmap(
    lambda shape: st.tuples(st.just(shape), st.permutations(range(len(shape))),
                            st.lists(st.integers(0, len(shape)), min_size=2, max_size=2).map(sorted))))
def test_operand_views_are_numpys(case):
    """The BLAS call reads an operand through strides worked out once (`host._view_strides`): wherever NumPy's
    transpose + reshape into (batch, rows, columns) is a view, they are its strides, and None where it copies."""
    shape, perm, (i, j) = case
    matrix = tuple(math.prod(shape[d] for d in g) for g in (perm[:i], perm[i:j], perm[j:]))
    x = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    want = x.transpose(perm).reshape(matrix)
    strides = host._view_strides(shape, perm, matrix, x.itemsize)
    if strides is None:
        assert not np.shares_memory(want, x) or want.size == 1
    else:
        np.testing.assert_array_equal(np.ndarray(matrix, x.dtype, x, 0, strides), want)


def test_transposed_operands_are_read_in_place():
    a, b = r(256, 96), r(256, 160)
    out = blas_dots(_mlir(lambda a, b: a.T @ b, a, b), ALL)
    call = next(line for line in out.splitlines() if "call @" in line)
    assert "%arg0" in call and "transpose" not in call  # (the transpose left dead, for IREE to drop)


def test_float64(x64):
    a, b = r(200, 300, dtype=np.float64), r(300, 100, dtype=np.float64)
    _check(stagec.jit(lambda a, b: a.T.T @ b)(a, b), a @ b, np.float64)


def test_in_a_loop_and_its_gradient(offload_all):
    """A matmul in a scan body (a call from inside a loop) and the gradient through it (transposed products)."""
    w, x0 = r(256, 256) / 16, r(256, 64)

    def f(w, x):
        def body(x, _):
            return snp.tanh(w @ x), None
        return snp.sum(lax.scan(body, x, None, length=3)[0] ** 2)

    def f_np(w, x):
        xs = [x]
        for _ in range(3):
            xs.append(np.tanh(w @ xs[-1]))
        g, gw = 2 * xs[-1], np.zeros_like(w)
        for k in range(3, 0, -1):
            d = g * (1 - xs[k] ** 2)
            gw += d @ xs[k - 1].T
            g = w.T @ d
        return np.sum(xs[-1] ** 2), gw

    w64, x64_ = w.astype(np.float64), x0.astype(np.float64)
    vg = stagec.jit(stagec.value_and_grad(f))
    # (the forward product in the loop body and the backward ones: every dot_general is a call now)
    called = blas_dots(vg.lower(w, x0).as_text("isolate-reductions"), ALL)
    assert "stablehlo.dot_general" not in called and "stablehlo.while" in called
    val, gw = vg(w, x0)
    want_val, want_gw = f_np(w64, x64_)
    _check(val, want_val)
    _check(gw, want_gw)


def test_same_answer_with_blas_off(offload_all):
    """The module IREE compiles for the products itself agrees with the one that calls BLAS."""
    a, b = r(300, 200), r(200, 300)

    def f(a, b):
        return snp.tanh(a @ b) @ a
    c = stagec.jit(f).lower(a, b).compile()  # (the persistent cache is off here: one compile each, called as is)
    on = np.asarray(c(a, b))
    assert HOST_BLAS in c.artifact.meta["flags"]
    stagec.config.update("cpu_blas", False)
    try:
        c = stagec.jit(f).lower(a, b).compile()
        off = np.asarray(c(a, b))
        assert HOST_BLAS not in c.artifact.meta["flags"]
        # (eager kernels' keys hold the CPU's flags too: the choice reaches them)
        assert HOST_BLAS not in backend.get_backend("cpu").flags()
    finally:
        stagec.config.update("cpu_blas", True)
    np.testing.assert_allclose(on, off, rtol=1e-4, atol=1e-3)
    assert HOST_BLAS in backend.get_backend("cpu").flags()
    assert HOST_BLAS not in backend.get_backend("cpu").compile_flags()  # (iree-compile's only)


def test_saved_artifact_calls_blas_when_loaded(tmp_path, offload_all):
    a, b = r(256, 128), r(128, 256)
    compiled = stagec.jit(lambda a, b: snp.tanh(a @ b)).lower(a, b).compile()
    assert HOST_BLAS in compiled.artifact.meta["flags"]
    path = tmp_path / "f.stagec"
    with pytest.raises(ValueError, match="host_modules=True"):  # (it runs only through stagec: asked for)
        compiled.save(path)
    compiled.save(path, host_modules=True)
    loaded = stagec.load(path)
    _check(loaded(a, b), np.tanh(a.astype(np.float64) @ b))


@pytest.mark.compile  # (it compiles in a subprocess: not in --fast)
def test_without_the_buffer_cache():
    """CPU devices made without IREE's caching allocator (`STAGEC_CPU_BUFFER_CACHE_MB=0`) run the same modules."""
    code = ("import numpy as np, stagec\n"
            "a = np.arange(262144, dtype=np.float32).reshape(512, 512) / 262144\n"
            "f = stagec.jit(lambda a: (a @ a[0]) * 2.0)\n"
            "assert 'stagec_blas' in f.lower(a).as_text('final'), 'no BLAS call'\n"
            "got = np.asarray(f(a))\n"
            "assert np.allclose(got, (a.astype(np.float64) @ a[0]) * 2, rtol=1e-5), 'wrong'\n"
            "print('ok')\n")
    env = dict(os.environ, STAGEC_CPU_BUFFER_CACHE_MB="0")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-2000:]




# ---------------------------------------------------------------- the rule (docs/blas.md), decided without timing

def _calls_blas(f, *args) -> bool:
    return f"{BLAS_MODULE}." in stagec.jit(f).lower(*args).as_text("final")


def test_default_rule_offloads_matrix_vector_products_only():
    """A product with no free extent of 1 stays IREE's at any size (BLAS on one thread beat IREE's kernels at no
    thread count there); a matrix-vector product from `BLAS_MIN_VECTOR_MACS` calls BLAS."""
    mm = lambda a, b: a @ b
    for m, k, n in [(128, 128, 128), (256, 256, 256), (1024, 1024, 1024), (128, 784, 1024), (16, 4096, 16)]:
        assert not _calls_blas(mm, r(m, k), r(k, n)), (m, k, n)
    assert not _calls_blas(lambda q, k: snp.matmul(q, snp.swapaxes(k, -1, -2)), r(8, 256, 64), r(8, 256, 64))
    assert _calls_blas(mm, r(2048, 2048), r(2048)) and _calls_blas(mm, r(1, 2048), r(2048, 2048))
    assert _calls_blas(mm, r(512, 256), r(256, 1)) and not _calls_blas(mm, r(256, 256), r(256, 1))
    assert 512 * 256 >= legalize_pass.BLAS_MIN_VECTOR_MACS > 256 * 256


def test_a_blas_call_runs_on_blas_threads_and_leaves_numpys_count_alone(monkeypatch):
    """OpenBLAS's thread count is `host.BLAS_THREADS` during stagec's call whatever the process set, and what it
    was again after it (the user's NumPy)."""
    fns = host._openblas()
    if fns is None:
        pytest.skip("NumPy links no OpenBLAS here")
    get, put = fns
    seen, matmul = [], np.matmul

    def spy(*a, **kw):
        seen.append(get())
        return matmul(*a, **kw)
    before = get()
    try:
        put(2)
        users = get()  # (2, or fewer where OpenBLAS was built for fewer)
        a, v = r(512, 512), r(512)
        f = stagec.jit(lambda a, v: a @ v)
        assert _calls_blas(lambda a, v: a @ v, a, v)
        want = f(a, v).block_until_ready()
        monkeypatch.setattr(host.np, "matmul", spy)
        got = np.asarray(f(a, v))
        monkeypatch.setattr(host.np, "matmul", matmul)
        assert seen == [host.BLAS_THREADS] and get() == users
        np.testing.assert_array_equal(got, np.asarray(want))
    finally:
        put(before)


def _blas_module_args(seed: int):
    rng_ = np.random.default_rng(seed)
    return rng_.standard_normal((1024, 1024)).astype(np.float32), rng_.standard_normal(1024).astype(np.float32)


def test_a_module_calling_blas_runs_on_the_driver_its_inputs_decide():
    """The driver of a module calling BLAS follows from what it declares (`Backend.driver_for`: local-sync), never
    from timing its first calls; no call changes it."""
    if stagec.default_backend() != "cpu":
        pytest.skip("CPU drivers only")
    x, v = _blas_module_args(3)
    f = stagec.jit(lambda x, v: snp.tanh(x * 2.0) @ v)
    assert _calls_blas(lambda x, v: snp.tanh(x * 2.0) @ v, x, v)
    f(x, v).block_until_ready()
    exe = next(iter(f._cache.values())).exe
    cpu = backend.get_backend("cpu")
    assert exe.work == x.size + x.size * 9 // 8  # (tanh(x * 2.0): a chain of a multiply and a tanh, cost 1 + 8 per
    # element, `driver._COST`; the product is a call)
    assert exe.driver == cpu.driver_for(exe.work, True) == cpu.driver_for(1 << 40, True) == "local-sync"
    for _ in range(20):
        f(x, v).block_until_ready()
        assert exe.driver == "local-sync" and exe._invoke.__self__ is exe.context


def test_driver_for_is_a_function_of_its_arguments():
    cpu = backend.get_backend("cpu")
    cases = [(10, False), (backend.TASK_WORK - 1, False), (backend.TASK_WORK, False), (backend.TASK_WORK, True),
             (1 << 40, True)]
    first = [cpu.driver_for(*c) for c in cases]
    assert [cpu.driver_for(*c) for c in cases] == first
    assert first[0] == first[1] == first[3] == first[4] == "local-sync"
    if (stagec.config.cpu_threads or backend._cores()) > 1:
        assert first[2] == "local-task"


def _step(np_, nn, params, x, y):
    """One SGD step of a 64-256-256-10 gelu network, batch 32 (bench_models.py's row): many small dispatches."""
    def loss(params):
        h = x
        for w, b in params[:-1]:
            h = nn.gelu(h @ w + b)
        w, b = params[-1]
        return -np_.mean(np_.sum(y * nn.log_softmax(h @ w + b), axis=-1))
    return [(w - 1e-2 * gw, b - 1e-2 * gb) for (w, b), (gw, gb) in zip(params, stagec.grad(loss)(params))]


def _step_args(seed: int = 0):
    rng_ = np.random.default_rng(seed)
    widths = (64, 256, 256, 10)
    params = [((rng_.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), np.zeros(b, np.float32))
              for a, b in zip(widths[:-1], widths[1:])]
    return params, rng_.standard_normal((32, 64)).astype(np.float32), np.eye(10, dtype=np.float32)[rng_.integers(0, 10, 32)]


def test_the_cpu_driver_follows_from_the_largest_dispatch_of_the_module():
    """A module's CPU driver is a function of its IR: its largest op's work (`Facts.work`: elements of its largest
    operand or result + multiply-adds / 8), not its work in all, nor a timing. A training step of many small
    dispatches stays inline though it touches more than a large matmul; one large product goes to the workers."""
    from stagec.compiler.driver import MACS_PER_ELEMENT, text_facts
    fx = text_facts(
        "func.func @main(%a: tensor<64x256xf32>, %b: tensor<256x256xf32>, %c: tensor<64x256xf32>) -> tensor<64x256xf32> {\n"
        "%0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<64x256xf32>, tensor<256x256xf32>) "
        "-> tensor<64x256xf32>\n"
        "%1 = stablehlo.add %0, %c : tensor<64x256xf32>\n"
        "return %1 : tensor<64x256xf32>\n}")
    assert fx.macs == 64 * 256 * 256 and fx.work == 256 * 256 + fx.macs // MACS_PER_ELEMENT
    if stagec.default_backend() != "cpu":
        return
    cpu = backend.get_backend("cpu")
    task = "local-task" if (stagec.config.cpu_threads or backend._cores()) > 1 else "local-sync"
    params, x, y = _step_args()
    step = stagec.jit(lambda p, x, y: _step(snp, stagec.nn, p, x, y))
    step(params, x, y)
    big = r(1024, 1024)
    mm = stagec.jit(lambda a, b: a @ b)
    mm(big, big)
    (s,), (m,) = ([c.exe for c in f._cache.values()] for f in (step, mm))
    assert s.total > 1 << 20 and s.work < backend.TASK_WORK <= m.work  # (more in all than the 1024^3 product's
    assert (s.driver, m.driver) == ("local-sync", task)  # elements in and out; smaller dispatches)
    # The artifact keeps the facts: loaded again (or from a file, `stagec.load`), the same driver.
    art = step.lower(params, x, y).compile().artifact
    assert art.work == s.work
    assert cpu.load(art.vmfb, art.in_avals, art.out_avals, art.name, macs=art.macs, work=art.work).driver == s.driver


def _chain_module(body: str, n: int = 1 << 20) -> str:
    t = f"tensor<{n}xf32>"
    return f"func.func @main(%a: {t}, %b: {t}) -> ({t}, {t}) {{\n{body}\n}}".replace("T", t)


def test_an_elementwise_chain_counts_each_of_its_ops():
    """IREE fuses a chain of elementwise ops into one dispatch: its work is its elements times its ops' cost
    (`driver._COST`), so ndtri's ~220 ops on 1M float32 take the workers, and one exponential stays inline. Ops
    in a branch may not run: they count one by one, as before."""
    from stagec.compiler.driver import TASK_WORK, text_facts
    chain = "\n".join(f"%e{i} = stablehlo.exponential %e{i - 1} : T" for i in range(1, 40))
    one = text_facts(_chain_module("%e0 = stablehlo.exponential %a : T\nreturn %e0, %b : T, T"))
    long = text_facts(_chain_module(f"%e0 = stablehlo.exponential %a : T\n{chain}\nreturn %e39, %b : T, T"))
    apart = text_facts(_chain_module("\n".join(  # (the same ops on 40 inputs apart: 40 chains of one op)
        f"%e{i} = stablehlo.exponential %a : T" for i in range(40)) + "\nreturn %e0, %e39 : T, T"))
    branch = text_facts(_chain_module(
        "%p = stablehlo.constant dense<true> : tensor<i1>\n"
        "%r = \"stablehlo.if\"(%p) ({\n%e0 = stablehlo.exponential %a : T\n" + chain + "\nstablehlo.return %e39 : T\n"
        "}, {\nstablehlo.return %b : T\n}) : (tensor<i1>) -> T\nreturn %r, %b : T, T"))
    assert one.work < TASK_WORK <= long.work and apart.work == one.work and branch.work < TASK_WORK
    assert long.work == (1 << 20) * (1 + 40 * 8 // 8)
    # CHLO ops left to IREE's expansion count too (they counted nothing: erfinv of 1M float32, ~1 ms on one thread,
    # had the work of none)
    erfinv = text_facts(stagec.jit(stagec.scipy.special.erfinv).lower(np.ones(1 << 20, np.float32)).as_text("final"))
    assert erfinv.work == (1 << 20) * (1 + 32 // 8)
    # `passes.fuse`'s elementwise kernels (linalg.generic) count their bodies' ops: float32 betaln, one of them.
    x = np.ones(1 << 20, np.float32)
    text = stagec.jit(stagec.scipy.special.betaln).lower(x, x).as_text("final")
    assert "linalg.generic" in text and text_facts(text).work >= 100 * TASK_WORK // 16
    # A real one: ndtri's expansion on 1M float32 goes to the workers (on more than one core), exp stays inline.
    import scipy.special
    x = np.linspace(0.001, 0.999, 1 << 20, dtype=np.float32)
    fs = {n: stagec.jit(f) for n, f in (("ndtri", stagec.scipy.special.ndtri), ("exp", snp.exp))}
    np.testing.assert_allclose(np.asarray(fs["ndtri"](x)), scipy.special.ndtri(x.astype(np.float64)), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(np.asarray(fs["exp"](x)), np.exp(x.astype(np.float64)), rtol=1e-6)
    if stagec.default_backend() == "cpu":
        task = "local-task" if (stagec.config.cpu_threads or backend._cores()) > 1 else "local-sync"
        assert {n: f._cache[next(iter(f._cache))].exe.driver for n, f in fs.items()} == {
            "ndtri": task, "exp": "local-sync"}


def test_either_driver_gives_the_same_bits():
    """One program, one answer: the module of a matmul and elementwise work around it, loaded on each CPU driver,
    gives the same bits (the driver runs the same dispatches, on one thread or several)."""
    if stagec.default_backend() != "cpu":
        pytest.skip("CPU drivers only")
    x, w = r(600, 256), r(256, 512) / 16
    compiled = stagec.jit(lambda x, w: snp.tanh(x @ w) * 2.0 + snp.sum(x)).lower(x, w).compile()
    art = compiled.artifact
    cpu = backend.get_backend("cpu")
    outs = []
    for drv in ("local-task", "local-sync"):
        exe = cpu.load(art.vmfb, art.in_avals, art.out_avals, art.name, driver=drv)
        assert exe.driver == drv
        res = exe.run([cpu.put(x), cpu.put(w)])
        outs.append(cpu.get(res[0], art.out_avals[0]))
    np.testing.assert_array_equal(outs[0], outs[1])
    _check(outs[0], np.tanh(x.astype(np.float64) @ w) * 2 + x.astype(np.float64).sum())


def test_a_training_step_gives_the_same_bits_on_either_driver():
    """The module the driver rule moved (a step of many small dispatches: local-sync now, local-task before) gives
    the same bits on both drivers, and the step of float64 NumPy (the gradient written out) within float32's error."""
    if stagec.default_backend() != "cpu":
        pytest.skip("CPU drivers only")
    params, x, y = _step_args(1)
    art = stagec.jit(lambda p, x, y: _step(snp, stagec.nn, p, x, y)).lower(params, x, y).compile().artifact
    cpu = backend.get_backend("cpu")
    flat = [a for layer in params for a in layer] + [x, y]
    outs = []
    for drv in ("local-task", "local-sync"):
        exe = cpu.load(art.vmfb, art.in_avals, art.out_avals, art.name, driver=drv)
        res = exe.run([cpu.put(a) for a in flat])
        outs.append([cpu.get(b, a) for b, a in zip(res, art.out_avals)])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    want = _step64(params, x, y)
    for got, w in zip(outs[0], want):
        np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-5)


def _step64(params, x, y):
    """`_step` in float64 NumPy: gelu (tanh form, as stagec.nn.gelu's default), log-softmax cross-entropy, SGD."""
    from math import pi, sqrt
    c = sqrt(2 / pi)
    gelu = lambda z: 0.5 * z * (1 + np.tanh(c * (z + 0.044715 * z ** 3)))

    def dgelu(z):
        t = np.tanh(c * (z + 0.044715 * z ** 3))
        return 0.5 * (1 + t) + 0.5 * z * (1 - t ** 2) * c * (1 + 3 * 0.044715 * z ** 2)
    ps = [(w.astype(np.float64), b.astype(np.float64)) for w, b in params]
    hs, zs = [x.astype(np.float64)], []
    for w, b in ps[:-1]:
        zs.append(hs[-1] @ w + b)
        hs.append(gelu(zs[-1]))
    out = hs[-1] @ ps[-1][0] + ps[-1][1]
    p = np.exp(out - out.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    g = (p * y.sum(-1, keepdims=True) - y) / len(x)
    grads = []
    for i in range(len(ps) - 1, -1, -1):
        grads.append((hs[i].T @ g, g.sum(0)))
        if i:
            g = (g @ ps[i][0].T) * dgelu(zs[i - 1])
    grads.reverse()
    return [v for (w, b), (gw, gb) in zip(ps, grads) for v in (w - 1e-2 * gw, b - 1e-2 * gb)]


def test_threads_calling_blas_at_once_get_the_same_bits():
    """Calls from several threads at once, each setting OpenBLAS's count for its BLAS call: every result the same
    bits as a call alone, and NumPy's count as it was."""
    a, v = r(1024, 1024), r(1024)
    f = stagec.jit(lambda a, v: snp.sin(a @ v))
    want = np.asarray(f(a, v))
    fns = host._openblas()
    before = fns[0]() if fns else None

    def work(i):
        for _ in range(10):
            np.testing.assert_array_equal(np.asarray(f(a, v)), want)
    assert run_at_once(work, n=6) == []
    assert fns is None or fns[0]() == before
    _check(want, np.sin(a.astype(np.float64) @ v))


def test_the_dispatch_profiler_puts_blas_calls_back_as_the_products_they_compute(offload_all, monkeypatch):
    # benchmarks/profile_dispatches.py runs a module in IREE's tools, which have no `stagec_blas`: each call (a
    # `dot_general_<k>`, a `dot_pair_<k>`, a transposed operand read in place, a batch) becomes its product again
    monkeypatch.syspath_prepend(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
    from profile_dispatches import without_blas
    from iree import compiler as ireec, runtime as ireert
    a, b, c, s = r(128, 128), r(128, 256), r(256, 128), r(4, 128, 128)
    f = lambda a, b, c, s: (a @ b, b @ c, c @ a, (a @ b) @ c.T.T, a @ c.T, s @ s)
    text = stagec.jit(f).lower(a, b, c, s).as_text("final")
    assert f"{BLAS_MODULE}.dot_pair_" in text
    plain, n = without_blas(text)
    assert n == 6 and BLAS_MODULE not in plain
    vmfb = ireec.compile_str(plain, target_backends=["llvm-cpu"], extra_args=["--iree-llvmcpu-target-cpu=host"])
    got = ireert.load_vm_flatbuffer(vmfb, driver="local-sync").main(a, b, c, s)
    for g, want in zip(got, f(*(x.astype(np.float64) for x in (a, b, c, s)))):
        _check(g.to_host(), want)
