"""Eager composites (`stagec.composites`): a `stagec.numpy` function built of several primitives, called outside
any trace, runs its traced graph as one dispatch. Its results must have the bits the same function gives op by op
(but graphs of elementwise steps from `composites.POLY_ELEMENTS`: one module, tests/test_eager_whole.py)
(`fn.__wrapped__`, each primitive through `eager.apply`), in the default config ("exact") and with kernels only
("never"); exact ones equal NumPy's. Under jit/grad/vmap the functions trace as before; errors name the function."""
from __future__ import annotations

import threading
import traceback

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import composites, core, eager
from stagec.experimental import io_callback
from stagec.numpy import _indexing, _linalg, _reductions, _shapes, _ufuncs
from stagec.scipy import special as sps


@pytest.fixture(params=["exact", "never"])
def tiering(request):
    """"exact": what users run (NumPy rules for small CPU calls); "never": every primitive through its kernel."""
    old = stagec.config.eager_tiering
    stagec.config.update("eager_tiering", request.param)
    yield request.param
    stagec.wait_for_compiles()
    stagec.config.update("eager_tiering", old)


@pytest.fixture
def exact():
    old = stagec.config.eager_tiering
    stagec.config.update("eager_tiering", "exact")
    yield
    stagec.config.update("eager_tiering", old)


def floats(shape, seed=0):
    """Normal values with the edges a NumPy rule and a kernel may treat apart: +-0, +-inf, NaN, subnormals."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 3.0, -2.5], np.float32)
    flat[:len(edges)] = edges[:flat.size]
    return x


def ints(shape, seed=0, low=-50, high=50):
    return np.random.default_rng(seed).integers(low, high, shape).astype(np.int32)


def same_bits(got, want):
    got, want = _nan_canonical(np.asarray(got)), _nan_canonical(np.asarray(want))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), (got, want)


def _nan_canonical(a):
    """On a GPU, NaNs as one NaN: NVIDIA's arithmetic returns 0x7fffffff for any NaN, where the CPU (and NumPy) keep
    the operand's payload (as XLA's GPU code does too). Every other bit is compared; on the CPU NaNs' too."""
    if stagec.config.default_backend == "cpu" or a.dtype.kind not in "fc" or not np.isnan(a).any():
        return a
    return np.where(np.isnan(a), np.array(np.nan, a.dtype), a)


def composite_call(fn, *args, **kwargs):
    """`fn(*args)`, checked to have run as one composite dispatch (no primitive bound through `eager.apply`), after
    a first call (a signature is traced on its second call)."""
    fn(*args, **kwargs)
    applies = []
    impl = core._eager_impl
    core._eager_impl = lambda *a: applies.append(a[0].name) or impl(*a)
    calls = composites.stats["calls"]
    try:
        out = fn(*args, **kwargs)
    finally:
        core._eager_impl = impl
    assert composites.stats["calls"] == calls + 1
    assert not applies, applies
    return out


F, I = (4, 4), (4, 4)
BIG = (130, 130)  # 16900 elements: over `eager.HOST_READ_ELEMENTS`, an exact op reads no device value back
HUGE = (512, 513)  # over `eager.HOST_MAX_ELEMENTS`: inexact ops take their kernels
CASES = {  # name: (function, arguments)
    "floor_divide f32": (_ufuncs.floor_divide, lambda s: (floats(s), floats(s, 1))),
    "floor_divide f32 by -0.0": (_ufuncs.floor_divide, lambda s: (floats(s), -0.0)),
    "floor_divide f32 by 0.0": (_ufuncs.floor_divide, lambda s: (floats(s), 0.0)),
    "remainder f32": (_ufuncs.remainder, lambda s: (floats(s), floats(s, 1))),
    "remainder i32": (_ufuncs.remainder, lambda s: (ints(s), ints(s, 1, -5, 5))),
    "divmod i32": (_ufuncs.divmod, lambda s: (ints(s), ints(s, 1, -5, 5))),
    "fmod i32": (_ufuncs.fmod, lambda s: (ints(s), 3)),
    "sign f32": (_ufuncs.sign, lambda s: (floats(s),)),
    "clip f32": (_ufuncs.clip, lambda s: (floats(s), -0.5, 0.5)),
    "power f32": (_ufuncs.power, lambda s: (np.abs(floats(s)), floats(s, 1))),
    "power f32 of negatives": (_ufuncs.power, lambda s: (floats(s), np.round(floats(s, 1)))),
    "power f32 by 2.5": (_ufuncs.power, lambda s: (np.abs(floats(s)), 2.5)),
    "power f32 by -1.5": (_ufuncs.power, lambda s: (floats(s), -1.5)),
    "mean": (_reductions.mean, lambda s: (floats(s, 2) + 10,)),
    "mean axis 0 keepdims": (lambda x: _reductions.mean(x, axis=0, keepdims=True), lambda s: (floats(s, 2),)),
    "var ddof 1": (lambda x: _reductions.var(x, ddof=1), lambda s: (floats(s, 2),)),
    "std axis 1": (lambda x: _reductions.std(x, axis=1), lambda s: (floats(s, 3),)),
    "outer": (_linalg.outer, lambda s: (floats(s[:1]), floats(s[:1], 1))),
    "pad": (lambda x: _shapes.pad(x, ((1, 2), (0, 1)), constant_values=-1.5), lambda s: (floats(s),)),
    "pad edge": (lambda x: _shapes.pad(x, 2, mode="edge"), lambda s: (floats(s),)),
    "take": (lambda x, k: _indexing.take(x, k), lambda s: (floats(s), np.array([3, 0, -1, -4, 2], np.int32))),
    "take axis 1": (lambda x, k: _indexing.take(x, k, axis=1), lambda s: (floats(s), np.array([[1, -2]], np.int32))),
    "softmax": (stagec.nn.softmax, lambda s: (floats(s, 4),)),
    "log_softmax axis 0": (lambda x: stagec.nn.log_softmax(x, axis=0), lambda s: (floats(s, 5),)),
    "gelu": (stagec.nn.gelu, lambda s: (floats(s, 6) * 4,)),
    # (exact gelu is no composite: eager, it runs as one module, `_staged`, as `mathlib` reads its erfc whole:
    # tests/test_accuracy_composites.py::test_float32_ndtr_and_exact_gelu_eager_as_jit)
    "silu": (stagec.nn.silu, lambda s: (floats(s, 7) * 30,)),
    "logsumexp axis 1": (lambda x: stagec.nn.logsumexp(x, axis=1), lambda s: (floats(s, 8),)),
    "standardize": (stagec.nn.standardize, lambda s: (floats(s, 9),)),
    "one_hot": (lambda k: stagec.nn.one_hot(k, 7), lambda s: (ints(s, 0, -2, 9),)),
}


def _inner(fn):
    """The function's op-by-op form: the composite's plain call (the decorator's `__wrapped__`)."""
    return getattr(fn, "__wrapped__", None)


def _run(name, shape):
    fn, make = CASES[name]
    host = make(shape)
    args = [stagec.device_put(a) if isinstance(a, np.ndarray) else a for a in host]
    want = _plain_of(fn)(*args)
    for _ in range(3):  # (the second call traces and plans, the third takes the plan)
        got = fn(*args) if _inner(fn) is None else composite_call(fn, *args)
        if isinstance(want, tuple):
            for g, w in zip(got, want):
                same_bits(g, w)
        else:
            same_bits(got, want)
    return host, got


def _takes_eager_case(tiering) -> bool:
    """Whether a composite with an `eager_case` takes it: with "exact" on the CPU backend, where its guard reads the
    operands by NumPy rules (`composites.stats["cases"]`); elsewhere the composite runs its whole graph."""
    return tiering == "exact" and stagec.default_backend() == "cpu"


def _plain_of(fn):
    """`fn` with composites off: every primitive through `eager.apply`, as before them."""
    def plain(*args):
        old = core.composite_runner()
        core.set_composite_runner(None)
        try:
            return fn(*args)
        finally:
            core.set_composite_runner(old)
    return plain


@pytest.mark.parametrize("name", sorted(CASES))
def test_bits_equal_op_by_op_small(name, tiering):
    calls = composites.stats["calls"]
    _run(name, F)
    assert composites.stats["calls"] >= calls + 2


@pytest.mark.parametrize("name, shape", [("mean", BIG), ("pad", BIG), ("mean", HUGE)])
# (float floor_divide and softmax at BIG and std at HUGE are one module each: tests/test_eager_whole.py)
def test_bits_equal_op_by_op_big(name, shape, exact):
    calls = composites.stats["calls"]
    _run(name, shape)
    assert composites.stats["calls"] >= calls + 2


@pytest.mark.parametrize("shape", [I, BIG], ids=["small", "big"])
def test_exact_composites_equal_numpy(shape, exact):
    a, b = ints(shape), ints(shape, 1, -7, 7)  # (zeros among the divisors: NumPy and stagec give 0)
    A, B = stagec.device_put(a), stagec.device_put(b)
    with np.errstate(divide="ignore"):
        for _ in range(2):
            same_bits(composite_call(_ufuncs.floor_divide, A, B), np.floor_divide(a, b))
            same_bits(composite_call(_ufuncs.remainder, A, B), np.remainder(a, b))
            same_bits(composite_call(_ufuncs.sign, A), np.sign(a))
            same_bits(composite_call(_ufuncs.clip, A, -3, 4), np.clip(a, -3, 4))
            same_bits(composite_call(_shapes.pad, A, 2, constant_values=7), np.pad(a, 2, constant_values=7))
            same_bits(composite_call(_linalg.outer, A[0], B[0]), np.outer(a[0], b[0]))
    # the operators and the public functions go through the composites too
    calls = composites.stats["calls"]  # (each signature called before, above)
    with np.errstate(divide="ignore"):
        same_bits(A // B, np.floor_divide(a, b))
        same_bits(A % B, np.remainder(a, b))
        same_bits(snp.floor_divide(A, B), np.floor_divide(a, b))
    assert composites.stats["calls"] == calls + 3


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_floor_divide_and_remainder_of_every_pair_equal_numpy(dtype, exact):
    v = np.arange(np.iinfo(dtype).min, np.iinfo(dtype).max + 1).astype(dtype)
    a, b = np.meshgrid(v, v)  # 65536 pairs: zero divisors, MIN // -1
    A, B = stagec.device_put(a), stagec.device_put(b)
    with np.errstate(all="ignore"):
        for fn, want in [(_ufuncs.floor_divide, np.floor_divide(a, b)), (_ufuncs.remainder, np.remainder(a, b))]:
            same_bits(composite_call(fn, A, B), want)
            same_bits(stagec.jit(fn)(A, B), want)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint32])
def test_integer_division_on_the_host_gives_the_kernels_bits(dtype):
    """`elementwise.defined_int_div/rem` (a composite's integer division where defined) against the kernels."""
    from stagec.primitives import elementwise as ew
    info = np.iinfo(dtype)
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.integers(info.min, info.max, 500, dtype=dtype, endpoint=True),
                        np.array([info.min, info.max, 0, 1, 7], dtype)]).astype(dtype)
    y = rng.integers(info.min, info.max, x.size, dtype=dtype, endpoint=True)
    y[:250] = rng.integers(-9 if info.min else 1, 10, 250)
    y[y == 0] = 3
    y[x == info.min] = 7
    old = stagec.config.eager_tiering
    stagec.config.update("eager_tiering", "never")
    try:
        X, Y = stagec.device_put(x), stagec.device_put(y)
        same_bits(ew.defined_int_div(x, y), stagec.lax.div(X, Y))
        same_bits(ew.defined_int_rem(x, y), stagec.lax.rem(X, Y))
    finally:
        stagec.config.update("eager_tiering", old)
    y0 = y.copy()
    y0[3] = 0
    assert ew.defined_int_div(x, y0) is None and ew.defined_int_rem(x, y0) is None
    if info.min:
        x1, y1 = x.copy(), y.copy()
        x1[0], y1[0] = info.min, -1
        assert ew.defined_int_div(x1, y1) is None and ew.defined_int_rem(x1, y1) is None


def test_a_warm_call_binds_no_primitive(exact):
    x = stagec.device_put(floats((4, 4)) + 10)
    snp.mean(x)
    snp.mean(x)
    traces = composites.stats["traces"]
    for _ in range(3):
        out = composite_call(snp.mean, x)
    assert composites.stats["traces"] == traces  # one trace per signature
    np.testing.assert_allclose(np.asarray(out), np.mean(np.asarray(x, np.float64)), rtol=1e-6)
    assert isinstance(out, stagec.Array) and out.dtype == np.float32


def test_a_signature_is_traced_on_its_second_call(exact):
    x = stagec.device_put(floats((4, 4)) + 10)
    fn = lambda: snp.clip(x, 9.5, 10.5)  # (a composite calling no other: `outer`'s product of broadcast operands is one)
    traces, calls, plain = composites.stats["traces"], composites.stats["calls"], composites.stats["plain"]
    first = fn()
    assert (composites.stats["traces"], composites.stats["calls"], composites.stats["plain"]) == (
        traces, calls, plain + 1)
    same_bits(fn(), first)
    same_bits(fn(), first)
    assert (composites.stats["traces"], composites.stats["calls"]) == (traces + 1, calls + 2)


def test_signatures_are_bounded_and_replanned_when_config_changes(exact):
    x = stagec.device_put(ints((4,)))
    old = stagec.config.eager_cache_size
    stagec.config.update("eager_cache_size", 2)
    try:
        for k in range(1, 18):  # (17 signatures, each traced and its fused module compiled: over twice the bound)
            for _ in range(2):
                same_bits(x // k, np.floor_divide(np.asarray(x), k))
            assert len(composites._sigs) <= 8
        stagec.config.update("eager_tiering", "never")
        assert len(composites._sigs) <= 8
        for _ in range(2):
            same_bits(x // 3, np.floor_divide(np.asarray(x), 3))
        assert len(composites._sigs) == 1  # (planned again under the new setting)
    finally:
        stagec.config.update("eager_cache_size", old)


def test_threads_filling_the_signatures_at_once_raise_nothing(exact, monkeypatch):
    """A signature another thread dropped (the bound reached) between its `put` and its `touch` raised KeyError
    from an ordinary `x // k`. The signatures here wait a little after each `put`, so that threads meet there."""
    import time

    class Slow(type(composites._sigs)):
        def put(self, key, value):
            out = super().put(key, value)
            time.sleep(0.002)
            return out
    monkeypatch.setattr(composites, "_sigs", Slow(lambda: 4 * max(stagec.config.eager_cache_size, 1)))
    old = stagec.config.eager_cache_size
    stagec.config.update("eager_cache_size", 1)
    x = stagec.device_put(ints((4,)))
    errors = []

    def work(t):
        try:
            for k in range(2 + 10 * t, 12 + 10 * t):
                same_bits(x // k, np.floor_divide(np.asarray(x), k))
        except Exception:  # noqa: BLE001 - reported below
            errors.append(traceback.format_exc())
    try:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        stagec.config.update("eager_cache_size", old)
    assert errors == []


def _graph_text(f, *args):
    return str(stagec.make_jaxpr(f)(*args))


def test_under_traces_a_plain_call():
    x, i, j = floats((4, 4)), ints((4, 4)), ints((4, 4), 1, 1, 9)
    calls = composites.stats["calls"]
    # jit: the same graph as the op-by-op function's
    for f, plain, args in [(snp.floor_divide, _ufuncs.floor_divide.__wrapped__, (i, j)),
                           (snp.std, _reductions.std.__wrapped__, (x,)),
                           (stagec.nn.softmax, stagec.nn.softmax.__wrapped__, (x,))]:
        assert _graph_text(f, *args) == _graph_text(plain, *args)
    with np.errstate(divide="ignore", invalid="ignore"):
        same_bits(stagec.jit(lambda a, b: a // b)(i, j), np.floor_divide(i, j))
        y = np.abs(x[np.isfinite(x)]).astype(np.float64) + 1
        g = stagec.grad(lambda v: snp.std(v))(stagec.device_put(y.astype(np.float32)))
        want = (y - y.mean()) / (len(y) * y.std())
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-4, atol=1e-6)
        v = stagec.vmap(snp.mean)(stagec.device_put(np.abs(x) + 1))
        np.testing.assert_allclose(np.asarray(v), np.mean(np.abs(x).astype(np.float64) + 1, axis=1), rtol=1e-6)
    assert composites.stats["calls"] == calls  # none ran as a composite


def test_errors_name_the_function(exact):
    b = stagec.device_put(np.array([1j, 2]))
    with pytest.raises(TypeError, match="floor_divide is not defined for complex arrays") as info:
        snp.floor_divide(b, b)
    assert "floor_divide" in [f.name for f in traceback.extract_tb(info.tb)]
    k = stagec.device_put(np.array([0, 4], np.int32))
    for _ in range(3):
        with pytest.raises(IndexError, match="take: index 4 is out of bounds for axis 0 with size 4"):
            snp.take(stagec.device_put(np.ones(4, np.float32)), k, mode="raise")
    with pytest.raises(ValueError, match="remainder"):
        snp.remainder(stagec.device_put(np.ones(3, np.float32)), stagec.device_put(np.ones(4, np.float32)))


def test_an_input_returned_as_it_is_is_the_same_array(exact):
    x = stagec.device_put(floats((3,)))
    assert snp.clip(x) is x


def test_pending_operands_are_not_waited_for():
    """An array still being computed: the composite runs op by op, each op enqueued behind it (as before)."""
    old = stagec.config.eager_tiering
    stagec.config.update("eager_tiering", "never")
    event = threading.Event()
    gate = lambda v: (event.wait(30), v)[1]
    x = np.arange(3, dtype=np.float32)
    f = stagec.jit(lambda v: io_callback(gate, stagec.ShapeDtypeStruct((3,), np.float32), v) + 1)
    try:
        plain = composites.stats["plain"]
        y = f(x)
        w = snp.clip(y, 1.5, 2.5)  # (not a reshape: `eager._view` waits for its operand)
        # (clip's, and its maximum's and minimum's: with "never" each broadcasts its bound, a composite of its own)
        assert composites.stats["plain"] == plain + 3
        assert not w.is_ready()
        event.set()
        same_bits(w, np.clip(x + 1, 1.5, 2.5))
    finally:
        event.set()
        stagec.config.update("eager_tiering", old)


def test_control_flow_runs_in_a_composite_as_the_kernel_it_is_op_by_op(exact):
    """An eager `cond`, `while_loop` or `scan` is one compiled kernel op by op, and the same kernel as an equation of a
    composite's plan: the composite gives its bits (a loop's body is not traced again on every call). A callback
    keeps its signature op by op."""
    @stagec.numpy._base._composite
    def f(x):
        y = stagec.lax.cond(x[0] > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)
        y = stagec.lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, snp.sin(c[1]) * 1.5), (0, y))[1]
        return stagec.lax.scan(lambda c, v: (c + snp.exp(v), c * v), snp.zeros(()), y)

    @stagec.numpy._base._composite
    def g(x):
        return io_callback(lambda v: np.asarray(v) + 1, x, x) * 2.0

    seen = []

    @stagec.numpy._base._composite
    def h(x):  # (a callback in a loop's body, its result unused: a plan would have pruned the loop)
        stagec.lax.fori_loop(0, 2, lambda i, c: io_callback(lambda v: seen.append(1) or np.asarray(v), c, c), x)
        return x * 2.0

    x = stagec.device_put(floats((6,), 3))
    with np.errstate(all="ignore"):
        first = stagec.tree_util.tree_leaves(f(x))
        # (the op-by-op call against float64 NumPy: the first value decides the branch, then 5 steps, then the scan)
        v = np.asarray(x, np.float64)
        v = v * 2 if v[0] > 0 else v - 1
        for _ in range(5):
            v = np.sin(v) * 1.5
        c, ys = 0.0, []
        for e in v:
            ys.append(c * e)
            c = c + np.exp(e)
        for got, want in zip(first, [c, ys]):
            np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-5, atol=1e-30, equal_nan=True)
        f(x)
        calls = composites.stats["calls"]
        for _ in range(2):
            for a, b in zip(stagec.tree_util.tree_leaves(f(x)), first):
                same_bits(a, b)
        assert composites.stats["calls"] == calls + 2
        plain = composites.stats["plain"]
        for _ in range(3):
            same_bits(g(x), (np.asarray(x) + 1) * np.float32(2))
            same_bits(h(x), np.asarray(x) * np.float32(2))
    stagec.effects_barrier()  # (h's loop is enqueued: its callbacks run when it does)
    assert composites.stats["plain"] == plain + 6 and len(seen) == 6


def test_unkeyed_calls_run_plainly(exact):
    x = stagec.device_put(floats((4,)))
    plain, traces = composites.stats["plain"], composites.stats["traces"]
    with np.errstate(invalid="ignore"):
        same_bits(snp.floor_divide(x, float("nan")), _ufuncs.floor_divide.__wrapped__(x, float("nan")))
        same_bits(snp.floor_divide(np.asarray(x), 2.0), _ufuncs.floor_divide.__wrapped__(x, 2.0))
    assert composites.stats["plain"] == plain + 2
    assert composites.stats["traces"] == traces  # (no signature: nothing traced)


# ---------------------------------------------------------------- exact graphs as one fused module


def _int_edges(dtype, shape, seed=0):
    """Integers of `dtype` with zeros, MIN and -1 among them (zero divisors, MIN // -1)."""
    info = np.iinfo(dtype)
    x = np.random.default_rng(seed).integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    flat = x.reshape(-1)
    edges = np.array([0, info.min, info.max, 1, -1 if info.min else 2, 0, info.min], dtype)
    flat[seed % 3:seed % 3 + len(edges)] = edges
    return x


class _HeldCompiles:
    """The eager compile thread held (a job waiting on an event queued first): fused modules queued meanwhile
    compile once it is released, so the calls before surely run op by op."""

    def __enter__(self):
        self.gate = threading.Event()
        assert eager._later.submit(("a test holding the compile thread", id(self)), lambda: self.gate.wait(120))
        return self

    def __exit__(self, *exc):
        self.gate.set()
        assert stagec.wait_for_compiles(120)


def _fused_run(fn, args, want, compiled: bool):
    """`fn(*args)` as a composite: op by op before its module is compiled, through the module after."""
    fused = composites.stats["fused_calls"]
    got = composite_call(fn, *args)
    for g, w in zip(got if isinstance(want, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        same_bits(g, w)
    assert composites.stats["fused_calls"] == fused + (2 if compiled else 0)  # (composite_call calls twice)


@pytest.mark.cpu_only  # (fused modules of exact graphs: CPU only)
@pytest.mark.parametrize("shape", [I, BIG], ids=["small", "big"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int16])
def test_exact_graphs_run_as_one_module_with_the_op_by_op_bits(shape, dtype, exact):
    """Integer floor_divide / remainder / fmod / divmod and a float take: the op-by-op bits (and NumPy's) while
    the module compiles and once it runs, below and above `HOST_READ_ELEMENTS`."""
    a, b = _int_edges(dtype, shape), _int_edges(dtype, shape, 1)
    x, k = floats(shape), np.array([3, 0, -1, -4, 2], np.int32)
    A, B, X, K = (stagec.device_put(v) for v in (a, b, x, k))
    with np.errstate(all="ignore"):
        cases = [(_ufuncs.floor_divide, (A, B), np.floor_divide(a, b)), (_ufuncs.remainder, (A, B), np.remainder(a, b)),
                 (_ufuncs.fmod, (A, B), np.fmod(a, b)), (_ufuncs.divmod, (A, B), np.divmod(a, b)),
                 (_indexing._take_in_bounds, (X, K, 1), np.take(x, k, axis=1))]
    stagec.wait_for_compiles()
    composites.clear_cache()  # (signatures met by other tests: planned afresh)
    queued = composites.stats["fused_queued"]
    with _HeldCompiles():
        for fn, args, want in cases:
            _fused_run(fn, args, want, compiled=False)  # (queued now)
    assert composites.stats["fused_queued"] == queued + len(cases)
    for fn, args, want in cases:
        _fused_run(fn, args, want, compiled=True)


@pytest.mark.cpu_only  # (fused modules: CPU only)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_integer_division_of_every_pair_in_a_module_gives_the_kernels_bits(dtype, exact):
    """Raw `lax.div` / `lax.rem` (zero divisors and MIN / -1 reach the kernel: its own answers) in a composite,
    op by op and as one module; and floor_divide / remainder against NumPy, both ways."""
    @stagec.numpy._base._composite
    def raw(a, b):
        return stagec.lax.div(a, b), stagec.lax.rem(a, b)

    v = np.arange(np.iinfo(dtype).min, np.iinfo(dtype).max + 1).astype(dtype)
    a, b = np.meshgrid(v, v)  # 65536 pairs
    A, B = stagec.device_put(a), stagec.device_put(b)
    old = stagec.config.eager_tiering
    stagec.config.update("eager_tiering", "never")  # (every division by its kernel)
    try:
        kernel = [np.asarray(r) for r in raw.__wrapped__(A, B)]
    finally:
        stagec.config.update("eager_tiering", old)
    with np.errstate(all="ignore"):
        cases = [(raw, tuple(kernel)), (_ufuncs.floor_divide, np.floor_divide(a, b)),
                 (_ufuncs.remainder, np.remainder(a, b))]
    stagec.wait_for_compiles()
    composites.clear_cache()
    small = [stagec.device_put(np.ascontiguousarray(x[120:136, 120:136])) for x in (a, b)]  # (below the read limit)
    with _HeldCompiles():
        for fn, want in cases:
            _fused_run(fn, (A, B), want, compiled=False)
        _fused_run(raw, small, tuple(k[120:136, 120:136] for k in kernel), compiled=False)
    for fn, want in cases:
        _fused_run(fn, (A, B), want, compiled=True)
    _fused_run(raw, small, tuple(k[120:136, 120:136] for k in kernel), compiled=True)


def test_inexact_graphs_are_not_fused(exact):
    """A float comparison or max may differ between a NumPy rule and a kernel (subnormals): op by op, no module."""
    x = stagec.device_put(floats((4, 4)))
    queued, fused = composites.stats["fused_queued"], composites.stats["fused_calls"]
    for fn, args in [(_ufuncs.sign, (x,)), (_ufuncs.clip, (x, -0.5, 0.5)), (_ufuncs.floor_divide, (x, 2.0))]:
        same_bits(composite_call(fn, *args), _plain_of(fn)(*args))
    assert composites.stats["fused_queued"] == queued and composites.stats["fused_calls"] == fused
    assert snp.clip(x) is x and snp.clip(x) is x  # (no equation: nothing to compile)
    assert composites.stats["fused_queued"] == queued


@pytest.mark.cpu_only  # (fused modules: CPU only)
def test_fused_modules_are_bounded_and_dropped_when_config_changes(exact):
    x = stagec.device_put(ints((4,)))
    old = stagec.config.eager_cache_size
    stagec.config.update("eager_cache_size", 2)
    composites.clear_cache()
    try:
        for k in range(1, 6):
            for _ in range(2):
                x // k
            assert stagec.wait_for_compiles(120)
            assert len(composites._loaded) <= 2
        fused = composites.stats["fused_calls"]
        same_bits(x // 5, np.floor_divide(np.asarray(x), 5))  # (the newest: still loaded)
        same_bits(x // 1, np.floor_divide(np.asarray(x), 1))  # (dropped: op by op)
        assert composites.stats["fused_calls"] == fused + 1
        stagec.config.update("eager_tiering", "never")
        same_bits(x // 5, np.floor_divide(np.asarray(x), 5))  # (op by op: every signature planned again)
        assert composites._loaded == []
    finally:
        stagec.config.update("eager_cache_size", old)


# ---------------------------------------------------------------- cheaper NumPy rules, the same bits


def _old_max(x, y):  # (the rules before: three more ufuncs on every call; bfloat16, NumPy kind V, fixed since)
    r = np.maximum(x, y)
    return np.where((x == 0) & (y == 0), x + y, r) if r.dtype.kind not in "iub" else r


def _old_min(x, y):
    r = np.minimum(x, y)
    return np.where((x == 0) & (y == 0), -(-x - y), r) if r.dtype.kind not in "iub" else r


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, "bfloat16", np.int32, np.uint8])
def test_max_min_rules_give_the_bits_they_gave(dtype):
    from stagec.primitives import elementwise as ew
    import ml_dtypes
    dtype = np.dtype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    if dtype.kind in "fV":
        info = ml_dtypes.finfo(dtype)
        v = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, float(info.smallest_subnormal),
                      -float(info.smallest_subnormal), float(info.tiny), 1.0, -1.5, float(info.max)], dtype)
    else:
        info = np.iinfo(dtype)
        v = np.array([0, 1, info.min, info.max, 7], dtype)
    a, b = np.meshgrid(v, v)
    with np.errstate(all="ignore"):
        for new, old in [(ew.max_p.host, _old_max), (ew.min_p.host, _old_min)]:
            consts = [(v, np.broadcast_to(c, v.shape)) for c in v]  # (one value broadcast: `maximum(x, 0.0)`)
            for x, y in [(a, b), (a[:3], b[:3]), (v, v[0]), (v[1], v), (v[-1], v[1]), (v[0], v[1]), *consts,
                         *[(c, x) for x, c in consts]]:
                got, want = np.asarray(new(x, y)), np.asarray(old(x, y))
                same_bits(got, want)
            nonzero = v[v != 0]  # (no zero result: the fast path)
            same_bits(np.asarray(new(nonzero, nonzero[::-1])), np.asarray(old(nonzero, nonzero[::-1])))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, "bfloat16", np.int32, np.uint8])
def test_sign_rule_gives_the_bits_it_gave(dtype):
    # (the rule before: where(x == 0, x, sign(x)), three ufuncs; a speed change, so this passes on the old rule too)
    from stagec.primitives import elementwise as ew
    import ml_dtypes
    dtype = np.dtype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    bits = np.random.default_rng(5).integers(0, 256, 4096 * dtype.itemsize, dtype=np.uint8).view(dtype)
    if dtype.kind in "fV":
        info = ml_dtypes.finfo(dtype)
        bits = np.concatenate([bits, np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, info.smallest_subnormal,
                                               -info.smallest_subnormal, 1.0, -1.5], dtype)])
    for x in (bits, bits[:5], bits[3:4].reshape(()), bits[::3]):
        with np.errstate(all="ignore"):
            same_bits(np.asarray(ew.sign_p.host(x)), np.asarray(np.where(x == 0, x, np.sign(x))))


@pytest.mark.parametrize("shape, dims, out", [((), (), (3, 2)), ((3,), (0,), (3, 4)), ((3,), (1,), (4, 3)),
                                              ((1, 3), (0, 1), (5, 3)), ((2, 3), (1, 0), (3, 2, 4)),
                                              ((2, 1, 3), (0, 2, 1), (2, 3, 4)), ((0, 3), (0, 1), (0, 3))])
def test_broadcast_rule_is_a_view_of_its_operand(shape, dims, out):
    """`broadcast_in_dim`'s NumPy rule: the values of transpose + reshape + `np.broadcast_to`, as a read-only view
    with strides set directly (its operand its base, where it is contiguous)."""
    from stagec.primitives import structural
    x = floats(shape) if shape else np.float32(-0.0)
    x = np.asarray(x)
    order = sorted(range(x.ndim), key=lambda i: dims[i])
    t = x.transpose(order)
    d = [dims[i] for i in order]
    want = np.broadcast_to(t.reshape([t.shape[d.index(k)] if k in d else 1 for k in range(len(out))]), out)
    for operand in (x, np.asfortranarray(x)):
        got = structural.broadcast_in_dim_p.host(operand, shape=out, broadcast_dimensions=dims)
        same_bits(got, want)
        assert not got.flags.writeable
    if x.size:
        assert structural.broadcast_in_dim_p.host(x, shape=out, broadcast_dimensions=dims).base is x


@pytest.mark.cpu_only  # (a fused module and NumPy-rule steps: CPU only)
def test_take_of_a_flattened_array_is_one_composite(exact):
    """`take(x, k)` (axis None): the flattening reshape inside the composite, not an eager operation before it (x
    above `HOST_READ_ELEMENTS`: a fused module; a smaller one runs its few NumPy-rule steps, `HOST_STEPS`)."""
    x, k = floats((128, 160)), np.array([3, 0, -1, 20479, -20480], np.int32)
    X, K = stagec.device_put(x), stagec.device_put(k)
    composites.clear_cache()
    with _HeldCompiles():
        _fused_run(snp.take, (X, K), np.take(x, k), compiled=False)
    _fused_run(snp.take, (X, K), np.take(x, k), compiled=True)
    with pytest.raises(IndexError, match="take: index 20480 is out of bounds for axis 0 with size 20480"):
        snp.take(X, stagec.device_put(np.array([20480], np.int32)), mode="raise")


def test_a_zero_d_integer_quotient_comes_back_as_an_array(exact):
    # a composite returning lax.div / lax.rem of 0-d integers: the host's quotient is a NumPy scalar, which came
    # back as one from the second call on (an Array on the first); C's truncation, as NumPy's fmod
    from stagec.numpy._base import _composite

    @_composite
    def divrem(a, b):
        return stagec.lax.div(a, b), stagec.lax.rem(a, b)
    a, b = snp.asarray(np.int32(7)), snp.asarray(np.int32(-2))
    for _ in range(3):
        q, r = divrem(a, b)
        assert type(q) is stagec.Array and type(r) is stagec.Array
        assert (int(q), int(r)) == (int(np.trunc(7 / -2)), int(np.fmod(7, -2)))


def test_a_signature_keeps_no_array_of_its_calls(exact):
    # the runner made on a signature's second call held that call's Arrays for as long as the signature lived
    import gc
    import weakref
    snp.mean(stagec.device_put(floats((64, 64))))
    b = stagec.device_put(floats((64, 64), seed=1))
    want = np.mean(np.asarray(b), dtype=np.float64)
    np.testing.assert_allclose(float(snp.mean(b)), want, rtol=1e-6)
    ref = weakref.ref(b)
    del b
    gc.collect()
    assert ref() is None


def test_new_signatures_push_out_the_oldest_not_all(exact):
    # a loop over new scalar values (each a signature met once) filled the bound and cleared every signature: the
    # one in use was traced again each time
    old = stagec.config.eager_cache_size
    stagec.config.update("eager_cache_size", 2)  # (signatures: 4 x 2)
    try:
        ni, nj = np.arange(-8, 8, dtype=np.int32).reshape(4, 4), np.full((4, 4), 3, np.int32)
        i, j = stagec.device_put(ni), stagec.device_put(nj)
        same_bits(snp.floor_divide(i, j), np.floor_divide(ni, nj))
        same_bits(snp.floor_divide(i, j), np.floor_divide(ni, nj))
        traces = composites.stats["traces"]
        for k in range(1, 30):
            same_bits(snp.floor_divide(i, k), np.floor_divide(ni, np.int32(k)))
            same_bits(snp.floor_divide(i, j), np.floor_divide(ni, nj))
        assert composites.stats["traces"] == traces
    finally:
        stagec.config.update("eager_cache_size", old)


def test_float_composites_equal_float64_numpy(exact):
    # the bit tests above compare a composite with its own op-by-op path; here its value against NumPy (float64)
    x = floats((6, 5), 11)
    X = stagec.device_put(x)
    d = x.astype(np.float64)
    e = np.exp(d - d.max(1, keepdims=True))
    refs = {"mean": (_reductions.mean, d.mean()), "var": (_reductions.var, d.var()), "std": (_reductions.std, d.std()),
            "softmax": (stagec.nn.softmax, e / e.sum(1, keepdims=True)),
            "log_softmax": (stagec.nn.log_softmax, np.log(e / e.sum(1, keepdims=True))),
            "logsumexp": (lambda v: stagec.nn.logsumexp(v, axis=1), np.log(np.exp(d).sum(1))),
            "clip": (lambda v: _ufuncs.clip(v, -0.5, 0.5), np.clip(d, -0.5, 0.5)), "sign": (_ufuncs.sign, np.sign(d)),
            "outer": (lambda v: _linalg.outer(v[0], v[1]), np.outer(d[0], d[1]))}
    for name, (fn, want) in refs.items():
        for _ in range(3):  # (plain, traced, planned)
            np.testing.assert_allclose(np.asarray(fn(X)), want, rtol=2e-6, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("op", ["mul", "add", "div", "gt", "sub_left"])
def test_an_operation_with_a_zero_d_array_is_one_composite(op, exact):
    # (before: the 0-d Array's broadcast and the operation were two dispatches through `eager.apply`)
    x = floats((4, 4))
    s = np.float32(0.5)
    X, S = stagec.device_put(x), stagec.device_put(s)
    fn = {"mul": lambda: X * S, "add": lambda: X + S, "div": lambda: X / S, "gt": lambda: X > S,
          "sub_left": lambda: S - X}[op]
    d, e = x.astype(np.float64), np.float64(s)
    want = {"mul": d * e, "add": d + e, "div": d / e, "gt": d > e, "sub_left": e - d}[op]
    want = want if want.dtype == np.bool_ else want.astype(np.float32)  # (one rounding of the exact float64 value)
    plain = _plain_of(fn)()
    for _ in range(3):
        got = composite_call(fn)
        same_bits(got, want)
        same_bits(got, plain)


def test_dead_repeated_and_identity_equations_are_not_run(exact):
    from stagec import lax
    from stagec.numpy._base import _composite

    @_composite
    def f(x, y):
        lax.sin(x)  # dead
        a, b = lax.exp(x), lax.exp(x)  # the same equation twice
        return lax.add(lax.stop_gradient(a), lax.mul(b, y))

    x, y = floats((3, 5), 1), floats((3, 5), 2)
    X, Y = stagec.device_put(x), stagec.device_put(y)
    f(X, Y)
    pruned = composites.stats["pruned"]
    got = composite_call(f, X, Y)  # (its second call: traced and planned)
    assert composites.stats["pruned"] == pruned + 3
    same_bits(got, _plain_of(f)(X, Y))
    e = np.exp(x.astype(np.float64))
    np.testing.assert_allclose(np.asarray(got), e + e * y, rtol=1e-6)


@pytest.mark.cpu_only  # (broadcast views for NumPy rules: CPU only)
def test_broadcasts_into_correctly_rounded_rules_are_left_to_numpy(exact):
    from stagec import lax
    from stagec.numpy._base import _composite

    @_composite
    def f(row, col, m):  # broadcasts read by mul and add: NumPy broadcasts the operands itself
        return lax.add(lax.mul(lax.broadcast_in_dim(row, (4, 6), (1,)), lax.broadcast_in_dim(col, (4, 6), (0,))), m)

    @_composite
    def g(row, m):  # a broadcast read by exp stays a broadcast (NumPy's loops for exp depend on the layout)
        return lax.mul(lax.exp(lax.broadcast_in_dim(row, (4, 6), (1,))), m)

    row, col, m = floats((6,), 1), floats((4,), 2), floats((4, 6), 3)
    R, C, M = (stagec.device_put(v) for v in (row, col, m))
    for fn, args, views in ((f, (R, C, M), 2), (g, (R, M), 0)):
        fn(*args)
        before = composites.stats["views"]
        got = composite_call(fn, *args)
        assert composites.stats["views"] == before + views
        for _ in range(2):
            same_bits(composite_call(fn, *args), _plain_of(fn)(*args))
    r, c, mm = (v.astype(np.float64) for v in (row, col, m))
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(np.asarray(f(R, C, M)), (r[None] * c[:, None]).astype(np.float32) + mm, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(got), np.exp(r)[None] * mm, rtol=2e-6)


def test_numpy_scalar_arguments_are_keyed_by_their_bits(exact):
    # (before: a NumPy scalar argument made the call unkeyed, run op by op on every call)
    x = floats((4, 4), 3)
    X = stagec.device_put(x)
    for lo, hi in ((np.float32(-0.5), np.float32(0.5)), (np.float32(-0.0), np.float32(np.nan))):
        got = composite_call(_ufuncs.clip, X, lo, hi)
        same_bits(got, _plain_of(_ufuncs.clip)(X, lo, hi))
        with np.errstate(invalid="ignore"):
            want = np.minimum(np.maximum(x.astype(np.float64), np.float64(lo)), np.float64(hi)).astype(np.float32)
        np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.cpu_only  # (steps pruned from NumPy-rule plans: CPU only)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_max_with_the_lowest_value_is_its_operand(dtype, exact):
    # (NumPy's maximum(x, -inf) is x, NaN payloads included: the step is not run; before it was)
    from stagec import lax
    from stagec.numpy._base import _composite

    lo, hi = (-np.inf, np.inf) if dtype == np.float32 else (np.iinfo(dtype).min, np.iinfo(dtype).max)

    @_composite
    def f(x):
        return lax.add(lax.max(x, lax.full_like(x, lo)), lax.min(lax.full_like(x, hi), x))

    if dtype == np.float32:
        x = floats((4, 5), 4)
        x.reshape(-1)[-3:] = np.array([0x7fc00001, 0xffc00123, 0x7f800001], np.uint32).view(np.float32)
    else:
        x = ints((4, 5), 4)
    X = stagec.device_put(x)
    f(X)
    pruned = composites.stats["pruned"]
    got = composite_call(f, X)
    assert composites.stats["pruned"] == pruned + 2
    same_bits(got, _plain_of(f)(X))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(np.asarray(got), (x.astype(np.float64) * 2).astype(dtype))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32])
def test_take_checks_its_indices_as_numpy(dtype, exact):
    # (a guard for the shorter eager path of `take` and its bounds check with 0-d bounds: it passes before too)
    x = floats((200,), 12)
    X = stagec.device_put(x)
    info = np.iinfo(dtype)
    for idx in ([0, 199, 5], [-1, -200, 3], [200], [-201], [info.max], [info.min]):
        k = np.array([v for v in idx if info.min <= v <= info.max] or [0], dtype)
        try:
            want = np.take(x, k)
        except IndexError:
            with pytest.raises(IndexError, match="out of bounds"):
                _indexing.take(X, stagec.device_put(k), mode="raise")
            same_bits(_indexing.take(X, stagec.device_put(k)), np.full(1, np.nan, x.dtype))  # JAX's default: fill
            continue
        for _ in range(3):
            same_bits(_indexing.take(X, stagec.device_put(k)), want)
    x2 = floats((3, 4), 13)
    k = np.array([[3, -4], [0, 1]], dtype if np.iinfo(dtype).min < 0 else np.int32)
    for axis in (None, 1, -1):
        for _ in range(3):
            same_bits(_indexing.take(stagec.device_put(x2), stagec.device_put(k), axis=axis), np.take(x2, k, axis=axis))
    with pytest.raises(IndexError):
        _indexing.take(stagec.device_put(x2), stagec.device_put(np.array([4], np.int32)), axis=1, mode="raise")


@pytest.mark.cpu_only  # (the NumPy rule's host copy: CPU only)
def test_zero_d_results_are_arrays_whatever_their_rule_returned_first(exact):
    # (max's rule gives a 0-d array for two zeros, a NumPy scalar otherwise: each call converts it)
    from stagec import lax
    from stagec.numpy._base import _composite

    @_composite
    def f(x, y):
        return lax.max(x, y)

    vals = [(0.0, -0.0), (-0.0, -0.0), (2.0, 3.0), (np.nan, 1.0), (0.0, 0.0), (-1.0, -2.0)]  # (2nd: planned, zeros)
    plain = composites.stats["plain"]
    for a, b in vals * 2:
        X, Y = stagec.device_put(np.float32(a)), stagec.device_put(np.float32(b))
        got = f(X, Y)
        assert composites.stats["plain"] == plain + 1  # (only the first call: none falls back to op by op)
        assert type(got) is stagec.Array and got.shape == ()
        assert type(got._npy) is np.ndarray and got._npy.dtype == np.float32 and not got._npy.flags.writeable
        want = np.float32(np.nan) if a != a else np.float32(a + b if a == b == 0 else max(a, b))
        same_bits(np.asarray(got), np.asarray(want))


def test_host_max_and_min_of_signed_zeros_in_every_float_dtype():
    """The NumPy rules of max and min give IEEE's zeros (max(+0, -0) = +0, min = -0) in bfloat16 too, whose NumPy kind
    is V, not f: the rule took it for an integer and returned NumPy's first operand."""
    import ml_dtypes

    from stagec.primitives.elementwise import _max_host, _min_host
    x, y = [0.0, -0.0, -0.0, 1.0], [-0.0, 0.0, -0.0, 2.0]
    for dt in (np.float32, np.float16, ml_dtypes.bfloat16):
        a, b = np.array(x, dt), np.array(y, dt)
        assert np.signbit(_max_host(a, b).astype(np.float64)).tolist() == [False, False, True, False], dt
        assert np.signbit(_min_host(a, b).astype(np.float64)).tolist() == [True, True, True, False], dt


def _pow_grid(dtype):
    """Bases and exponents: ordinary ones (results down to subnormals and up to overflow) and C99's special ones."""
    info = np.finfo(dtype)
    rng = np.random.default_rng(21)
    # (all three of the special grid's shape, 12x14: one set of rank-2 kernels, and one of shape-specific ones)
    ordinary = [(np.abs(rng.standard_normal((12, 14))) + 1e-3).astype(dtype),
                rng.standard_normal((12, 14)).astype(dtype) * 4]
    big = [np.resize(np.array([0.5, 2.0, 0.5, 1e-3, 10.0, 1.5, 0.999, 3.0], dtype), (12, 14)),
           np.resize(np.array([140.0, 130.0, 1200.0, 20.0, 40.0, -300.0, 1e5, 0.5], dtype), (12, 14))]
    edges = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.0, -2.0, 0.5, -8.0, float(info.smallest_subnormal),
                      -float(info.smallest_subnormal), float(info.max)], dtype)
    xs, ys = np.meshgrid(edges, np.array([0.0, -0.0, 1.0, 3.0, -3.0, 0.5, -0.5, 2.0, np.inf, -np.inf, np.nan,
                                          1.0 / 3.0], dtype))
    return [ordinary, big, [xs, ys]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ordinary_powers_run_as_the_pow_kernel_with_the_op_by_op_bits(dtype, tiering, x64):
    """`x ** y`: where every base is positive, finite and not 1 and every exponent finite and not 0 (as NumPy
    compares them), the composite's `eager_case` runs the `pow` kernel alone (no NumPy rule, nothing read back);
    anywhere else, and with "never", its special cases. The bits of `lax.pow` op by op either way; C99's values
    (NumPy's) at the special points, float64 NumPy's within a few ulps at the ordinary ones."""
    for k, (x, y) in enumerate(_pow_grid(dtype)):
        composites.clear_cache()  # (the grids share one shape: each one's signature planned afresh, its first call plain)
        X, Y = stagec.device_put(x), stagec.device_put(y)
        want = np.asarray(stagec.lax._c99_pow(X, Y))  # (op by op: `lax.pow`'s graph, not its composite)
        cases, polys = composites.stats["cases"], composites.stats["poly_calls"]
        same_bits(X ** Y, want)  # (the first call: plain)
        for _ in range(2):
            got = composite_call(_ufuncs.power, X, Y)
            unread = got._npy is None and got._bv is not None
            same_bits(got, want)
        ordinary = k < 2 and _takes_eager_case(tiering)
        assert composites.stats["cases"] == cases + (4 if ordinary else 0)  # (composite_call calls twice)
        if k == 2 and _takes_eager_case(tiering):  # (refused: the polymorphic module, not ~80 steps op by op)
            assert composites.stats["poly_calls"] == polys + 4
        with np.errstate(all="ignore"):
            ref = np.power(x, y)
        if ordinary:
            assert unread  # (the kernel's result, not read back)
            with np.errstate(all="ignore"):
                ref = np.power(x.astype(np.float64), y.astype(np.float64))
            info = np.finfo(dtype)
            normal = (np.abs(ref) >= info.smallest_normal) & (np.abs(ref) <= info.max)  # (IREE flushes the rest)
            assert np.asarray(got).dtype == dtype  # (float64 with x64 on: without it the arrays were float32)
            np.testing.assert_allclose(np.asarray(got, np.float64)[normal], ref[normal], rtol=300 * info.eps)
            assert (np.asarray(got)[ref > info.max] == np.inf).all()
        elif k == 2:
            special = ~np.isfinite(x) | ~np.isfinite(y) | (x == 0) | (y == 0) | (np.abs(x) == 1) | \
                (np.round(y) == y) & (x < 0) | (x < 0) & (y != np.round(y))
            special &= np.abs(x) != np.finfo(dtype).smallest_subnormal  # (IREE's pow flushes those)
            g, r = np.asarray(got)[special], ref[special]
            np.testing.assert_array_equal(g, r)  # (NaN where NumPy's is, whatever its sign)
            assert (np.signbit(g) == np.signbit(r))[~np.isnan(r)].all()  # (-0.0 ** 3 is -0.0)


def _gather_reference(x, idx, offset_dims, collapsed_slice_dims, start_index_map, slice_sizes):
    """XLA's gather by its definition, element by element: each start clamped to [0, dim - slice size]."""
    batch = idx.shape[:-1]
    offsets = [s for i, s in enumerate(slice_sizes) if i not in collapsed_slice_dims]
    rank = len(batch) + len(offsets)
    out_shape, bi, oi = [], iter(batch), iter(offsets)
    for i in range(rank):
        out_shape.append(next(oi) if i in offset_dims else next(bi))
    out = np.zeros(out_shape, x.dtype)
    kept = [d for d in range(x.ndim) if d not in collapsed_slice_dims]
    for o in np.ndindex(*out_shape):
        b = tuple(o[i] for i in range(rank) if i not in offset_dims)
        w = [o[i] for i in offset_dims]
        start = [0] * x.ndim
        for k, d in enumerate(start_index_map):
            start[d] = min(max(int(idx[b + (k,)]), 0), x.shape[d] - slice_sizes[d])
        pos = list(start)
        for j, d in enumerate(kept):
            pos[d] += w[j]
        out[o] = x[tuple(pos)]
    return out


GATHERS = [  # (operand shape, indices, offset_dims, collapsed_slice_dims, start_index_map, slice_sizes)
    ((16,), [[3], [0], [15], [-2], [40]], (), (0,), (0,), (1,)),
    ((4, 5), [[1], [3], [-1], [9]], (1,), (0,), (0,), (1, 5)),
    ((4, 5), [[[2]], [[4]]], (0,), (1,), (1,), (4, 1)),
    ((4, 5), [[1, 2], [3, 4], [-5, 9]], (), (0, 1), (0, 1), (1, 1)),
    ((4, 5), [[1, 2], [3, 4]], (1, 2), (), (0, 1), (2, 3)),
    ((3, 4, 5), [[2, 1], [0, 3]], (1,), (0, 2), (2, 0), (1, 4, 1)),
    ((3, 4, 5), [[1], [2]], (0, 2), (1,), (1,), (3, 1, 5)),
    ((6,), [[1], [4]], (1,), (), (0,), (3,)),
    ((4, 5), np.zeros((0, 1), np.int32), (1,), (0,), (0,), (1, 5)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint32, np.int64])
@pytest.mark.parametrize("case", range(len(GATHERS)))
def test_gather_rule_is_xla_gather(case, dtype):
    """`gather`'s NumPy rule (and its `bound` form, `ndarray.take` or indexing by clamped coordinates, for the takes
    along one axis and the gathers of single elements it serves) against
    XLA's definition computed element by element: windows, clamped starts, batch and offset dimensions placed."""
    from stagec.core import ShapedArray
    from stagec.primitives import gather_p
    shape, idx, od, cd, sim, ss = GATHERS[case]
    x = (np.arange(int(np.prod(shape))).reshape(shape) * 3 - 7).astype(dtype)
    for idt in (np.int32, np.uint8, np.int64) if np.asarray(idx).size and np.min(idx) >= 0 else (np.int32, np.int64):
        i = np.asarray(idx, idt)
        params = dict(offset_dims=od, collapsed_slice_dims=cd, start_index_map=sim, slice_sizes=ss)
        want = _gather_reference(x, i, **params)
        avals = [ShapedArray(x.shape, x.dtype), ShapedArray(i.shape, i.dtype)]
        assert gather_p.out_avals(avals, params)[0].shape == want.shape
        same_bits(gather_p.host(x, i, **params), want)
        # (takes along one axis and gathers of single elements: on the host)
        assert gather_p.hosts(avals, params) == (case in (0, 1, 2, 3, 6, 8))
        if gather_p.hosts(avals, params):
            same_bits(gather_p.host_bound(avals, params)(x, i), want)


def test_take_of_nonnegative_indices_is_one_gather_on_the_host(exact):
    """`take` of indices in [0, size): one gather of them as they are (no step counting negative ones from the
    end): a few NumPy-rule steps, no kernel and no fused module; negative ones take the normalizing composite.
    NumPy's values either way."""
    x = floats((4, 4), 30)
    X = stagec.device_put(x)
    composites.clear_cache()
    queued = composites.stats["fused_queued"]
    for k, axis in [([3, 0, 2, 1], None), ([15, 0], None), ([[1, 3], [0, 0]], 1), ([2], 0), ([3, -1], 1),
                    ([-16], None)]:
        K = stagec.device_put(np.array(k, np.int32))
        for _ in range(3):
            got = composite_call(_indexing.take, X, K, axis=axis)
            same_bits(got, np.take(x, k, axis=axis))
        if min(np.ravel(k)) >= 0:
            assert composites.stats["fused_queued"] == queued
    fns = [key[0] for key in composites._sigs]
    assert fns.count(_indexing._take_nonnegative.__wrapped__) == 4 and _indexing._take_in_bounds.__wrapped__ in fns


@pytest.mark.parametrize("y", [2.5, -0.5, 1e-50, 0.0, -0.0, 3.0, 1e30, float("inf")])
def test_a_float_exponent_is_one_composite_keyed_by_its_value(y, tiering):
    """`x ** 2.5` (a Python float exponent) ran op by op on every call (~340 us on 4x4: the promoted constant
    kept it from being keyed); now one composite per exponent, its eager case where the bases are ordinary and the
    exponent, rounded to their dtype, finite and not 0. The op-by-op bits; NumPy's values at C99's points."""
    rng = np.random.default_rng(31)
    for x in (np.abs(rng.standard_normal((4, 4))).astype(np.float32) + 0.25,
              np.array([[-2.0, -0.0, 0.0, 1.0], [np.inf, np.nan, 0.5, -8.0]], np.float32)):
        X = stagec.device_put(x)
        want = np.asarray(_plain_of(_ufuncs.power)(X, y))
        calls, cases = composites.stats["calls"], composites.stats["cases"]
        for _ in range(3):
            got = _ufuncs.power(X, y)
            same_bits(got, want)
        assert composites.stats["calls"] == calls + 2  # (the first call: plain)
        ordinary = _takes_eager_case(tiering) and x.min() > 0 and np.isfinite(np.float32(y)) and np.float32(y) != 0
        assert composites.stats["cases"] == cases + (2 if ordinary else 0)
        with np.errstate(all="ignore"):
            ref = np.power(x, np.float32(y))
        if not ordinary:  # (C99's special points: NumPy's values)
            np.testing.assert_array_equal(np.asarray(got)[~np.isfinite(ref) | (ref == 1)], ref[~np.isfinite(ref) | (ref == 1)])
        else:
            normal = (np.abs(ref) >= np.finfo(np.float32).smallest_normal) & np.isfinite(ref)
            np.testing.assert_allclose(np.asarray(got)[normal], ref[normal], rtol=300 * 2.0 ** -23)


@pytest.mark.parametrize("b", [2.0, 0.5, -2.0, 0.0, 1.0, float("inf")])
def test_a_float_base_is_one_composite_keyed_by_its_value(b, tiering):
    """`2.0 ** x` likewise (~630 us op by op before): the op-by-op bits; its eager case only for a base positive,
    finite and not 1 and exponents finite and not 0."""
    for x in (np.random.default_rng(32).standard_normal((4, 4)).astype(np.float32) * 3,
              np.array([[0.0, -0.0, 1.0, 3.0], [np.inf, np.nan, 0.5, -1.0]], np.float32)):
        X = stagec.device_put(x)
        want = np.asarray(_plain_of(_ufuncs.power)(b, X))
        calls, cases = composites.stats["calls"], composites.stats["cases"]
        for _ in range(3):
            same_bits(_ufuncs.power(b, X), want)
        assert composites.stats["calls"] == calls + 2
        ordinary = _takes_eager_case(tiering) and 0 < b < np.inf and b != 1 and np.isfinite(x).all() and (x != 0).all()
        assert composites.stats["cases"] == cases + (2 if ordinary else 0)
        with np.errstate(all="ignore"):
            ref = np.power(np.float32(b), x)
        special = ~np.isfinite(ref) | (ref == 1) | (ref == 0)
        np.testing.assert_array_equal(want[special], ref[special])
        np.testing.assert_allclose(want[~special], ref[~special], rtol=300 * 2.0 ** -23)


def test_equal_graphs_traced_apart_compare_by_identity_once_found_equal(monkeypatch):
    """Two traces of one function are equal graphs (an eager call's plan is found by either); once found equal they
    compare by identity (an eager sampler traced again from another entry point compared ~250 avals on every call),
    and a graph of other work stays unequal to both."""
    from stagec import random
    from stagec.random import _run
    key = random.PRNGKey(0)
    f = lambda k: random.uniform(k, (8,)) * 2.0  # noqa: E731
    graphs = []
    real = random.trace_subgraph

    def keep(*a, **k):
        out = real(*a, **k)
        graphs.append(out[0])
        return out
    monkeypatch.setattr(random, "trace_subgraph", keep)
    random._STAGED.clear(), random._PLANS.clear()
    a = np.asarray(_run(f, key))
    random._STAGED.clear(), random._PLANS.clear()
    b = np.asarray(_run(f, key))
    np.testing.assert_array_equal(a, b)
    g1, g2 = graphs[-2], graphs[-1]
    assert g1 is not g2 and g1 == g2 and hash(g1) == hash(g2)
    calls = []
    monkeypatch.setattr(core.Graph, "fingerprint", lambda self, real=core.Graph.fingerprint: calls.append(1) or real(self))
    assert g2 == g1 and g1 == g2 and not calls  # (the identity path: no fingerprint compared)
    random._STAGED.clear(), random._PLANS.clear()
    _run(lambda k: random.uniform(k, (8,)) * 3.0, key)
    assert graphs[-1] != g1 and graphs[-1] != g2


# ---------------------------------------------------------------- the functions `stagec.numpy._COMPOSITES` lists

_LISTED = {  # an eager call of each, on (x, y: 4x4 float32 with edges; w: 8 floats; v: 8 sorted; c: complex; i: ints)
    "median": lambda x, y, w, v, c, i: snp.median(x, axis=0), "nanmedian": lambda x, y, w, v, c, i: snp.nanmedian(x),
    "quantile": lambda x, y, w, v, c, i: snp.quantile(w, 0.3), "percentile": lambda x, y, w, v, c, i: snp.percentile(w, 30.0),
    "nanquantile": lambda x, y, w, v, c, i: snp.nanquantile(x, 0.7, axis=1),
    "nanpercentile": lambda x, y, w, v, c, i: snp.nanpercentile(x, 70.0), "vander": lambda x, y, w, v, c, i: snp.vander(w),
    "poly": lambda x, y, w, v, c, i: snp.poly(w), "digitize": lambda x, y, w, v, c, i: snp.digitize(w, v),
    "i0": lambda x, y, w, v, c, i: snp.i0(x), "arctan2": lambda x, y, w, v, c, i: snp.arctan2(x, y),
    "atan2": lambda x, y, w, v, c, i: snp.atan2(y, x), "angle": lambda x, y, w, v, c, i: snp.angle(c),
    "spacing": lambda x, y, w, v, c, i: snp.spacing(x), "frexp": lambda x, y, w, v, c, i: snp.frexp(x),
    "nextafter": lambda x, y, w, v, c, i: snp.nextafter(x, y), "searchsorted": lambda x, y, w, v, c, i: snp.searchsorted(v, w),
    "gradient": lambda x, y, w, v, c, i: snp.gradient(w), "sinc": lambda x, y, w, v, c, i: snp.sinc(x),
    "corrcoef": lambda x, y, w, v, c, i: snp.corrcoef(w, v), "cov": lambda x, y, w, v, c, i: snp.cov(w, v),
    "nanstd": lambda x, y, w, v, c, i: snp.nanstd(x, axis=1), "nanvar": lambda x, y, w, v, c, i: snp.nanvar(x),
    "polyval": lambda x, y, w, v, c, i: snp.polyval(w, y), "polyint": lambda x, y, w, v, c, i: snp.polyint(w),
    "polyder": lambda x, y, w, v, c, i: snp.polyder(w, 2), "geomspace": lambda x, y, w, v, c, i: snp.geomspace(1.0, 1e3, 8),
    "logspace": lambda x, y, w, v, c, i: snp.logspace(0.0, 3.0, 8), "ldexp": lambda x, y, w, v, c, i: snp.ldexp(x, i[:4]),
    "kron": lambda x, y, w, v, c, i: snp.kron(x, y), "logaddexp2": lambda x, y, w, v, c, i: snp.logaddexp2(x, y),
    "logaddexp": lambda x, y, w, v, c, i: snp.logaddexp(x, y), "interp": lambda x, y, w, v, c, i: snp.interp(w, v, w),
    "hypot": lambda x, y, w, v, c, i: snp.hypot(x, y), "convolve": lambda x, y, w, v, c, i: snp.convolve(w, v),
    "correlate": lambda x, y, w, v, c, i: snp.correlate(w, v, "full"), "isclose": lambda x, y, w, v, c, i: snp.isclose(x, y),
    "allclose": lambda x, y, w, v, c, i: snp.allclose(w, v), "nanmean": lambda x, y, w, v, c, i: snp.nanmean(x, axis=0),
    "trapezoid": lambda x, y, w, v, c, i: snp.trapezoid(w, v), "ediff1d": lambda x, y, w, v, c, i: snp.ediff1d(w),
    "tril": lambda x, y, w, v, c, i: snp.tril(x, -1), "triu": lambda x, y, w, v, c, i: snp.triu(x, 1),
    "heaviside": lambda x, y, w, v, c, i: snp.heaviside(x, y), "nanmax": lambda x, y, w, v, c, i: snp.nanmax(x, axis=1),
    "nanmin": lambda x, y, w, v, c, i: snp.nanmin(x), "nanargmin": lambda x, y, w, v, c, i: snp.nanargmin(w),
    "nanargmax": lambda x, y, w, v, c, i: snp.nanargmax(y, axis=0), "copysign": lambda x, y, w, v, c, i: snp.copysign(x, y),
    "vdot": lambda x, y, w, v, c, i: snp.vdot(c, c), "modf": lambda x, y, w, v, c, i: snp.modf(x),
    "diff": lambda x, y, w, v, c, i: snp.diff(x, 2), "nancumsum": lambda x, y, w, v, c, i: snp.nancumsum(x, axis=1),
    "around": lambda x, y, w, v, c, i: snp.around(y, 2), "round": lambda x, y, w, v, c, i: snp.round(x, 1),
    "nansum": lambda x, y, w, v, c, i: snp.nansum(x), "nanprod": lambda x, y, w, v, c, i: snp.nanprod(y, axis=0),
    "cross": lambda x, y, w, v, c, i: snp.cross(x[:, :3], y[:, :3]), "average": lambda x, y, w, v, c, i: snp.average(w, weights=v),
    "signbit": lambda x, y, w, v, c, i: snp.signbit(x), "log10": lambda x, y, w, v, c, i: snp.log10(y),
    "trace": lambda x, y, w, v, c, i: snp.trace(y), "exp2": lambda x, y, w, v, c, i: snp.exp2(x),
    "inner": lambda x, y, w, v, c, i: snp.inner(w, v), "deg2rad": lambda x, y, w, v, c, i: snp.deg2rad(x),
    "log2": lambda x, y, w, v, c, i: snp.log2(y), "diag": lambda x, y, w, v, c, i: snp.diag(x, 1),
    "rot90": lambda x, y, w, v, c, i: snp.rot90(x), "divmod": lambda x, y, w, v, c, i: snp.divmod(x, y),
    "ptp": lambda x, y, w, v, c, i: snp.ptp(y, axis=1), "nan_to_num": lambda x, y, w, v, c, i: snp.nan_to_num(x, posinf=9.0),
    "packbits": lambda x, y, w, v, c, i: snp.packbits(x > 0, axis=1), "unpackbits": lambda x, y, w, v, c, i: snp.unpackbits(
        i.astype(np.uint8)), "atleast_2d": lambda x, y, w, v, c, i: snp.atleast_2d(w), "unwrap": lambda x, y, w, v, c, i: snp.unwrap(w * 4),
    "sort_complex": lambda x, y, w, v, c, i: snp.sort_complex(c.ravel()), "partition": lambda x, y, w, v, c, i: snp.partition(w, 3),
    "argpartition": lambda x, y, w, v, c, i: snp.argpartition(y, 2, axis=0), "resize": lambda x, y, w, v, c, i: snp.resize(w, (3, 5)),
    "fmax": lambda x, y, w, v, c, i: snp.fmax(x, y), "fmin": lambda x, y, w, v, c, i: snp.fmin(x, y),
    "rad2deg": lambda x, y, w, v, c, i: snp.rad2deg(x), "degrees": lambda x, y, w, v, c, i: snp.degrees(y),
    "radians": lambda x, y, w, v, c, i: snp.radians(x), "isreal": lambda x, y, w, v, c, i: snp.isreal(c),
    "iscomplex": lambda x, y, w, v, c, i: snp.iscomplex(c), "conj": lambda x, y, w, v, c, i: snp.conj(c),
    "left_shift": lambda x, y, w, v, c, i: snp.left_shift(i, 3), "linspace": lambda x, y, w, v, c, i: snp.linspace(w[0], w[1], 7),
    "isin": lambda x, y, w, v, c, i: snp.isin(i, i[:3]), "count_nonzero": lambda x, y, w, v, c, i: snp.count_nonzero(x, axis=0),
    "gcd": lambda x, y, w, v, c, i: snp.gcd(i, i * 3 + 1), "lcm": lambda x, y, w, v, c, i: snp.lcm(i, i - 2),
    "trunc": lambda x, y, w, v, c, i: snp.trunc(x), "fix": lambda x, y, w, v, c, i: snp.fix(y * -3),
    "isinf": lambda x, y, w, v, c, i: snp.isinf(x), "isposinf": lambda x, y, w, v, c, i: snp.isposinf(x),
    "isneginf": lambda x, y, w, v, c, i: snp.isneginf(x), "nancumprod": lambda x, y, w, v, c, i: snp.nancumprod(x, axis=0),
    "lexsort": lambda x, y, w, v, c, i: snp.lexsort(x), "unstack": lambda x, y, w, v, c, i: snp.unstack(x, axis=1),
    "sort": lambda x, y, w, v, c, i: snp.sort(x, axis=0), "argsort": lambda x, y, w, v, c, i: snp.argsort(y),
    "cumsum": lambda x, y, w, v, c, i: snp.cumsum(x), "cumprod": lambda x, y, w, v, c, i: snp.cumprod(y, axis=1),
    "logical_not": lambda x, y, w, v, c, i: snp.logical_not(x > 0), "argmax": lambda x, y, w, v, c, i: snp.argmax(x),
    "argmin": lambda x, y, w, v, c, i: snp.argmin(y, axis=1), "imag": lambda x, y, w, v, c, i: (snp.imag(c), snp.imag(x)),
    "diagonal": lambda x, y, w, v, c, i: snp.diagonal(x, 1), "ravel": lambda x, y, w, v, c, i: snp.ravel(x, order="F"),
    "any": lambda x, y, w, v, c, i: snp.any(x, axis=0), "all": lambda x, y, w, v, c, i: snp.all(y),
    "reciprocal": lambda x, y, w, v, c, i: (snp.reciprocal(x), snp.reciprocal(i)),
    "square": lambda x, y, w, v, c, i: (snp.square(x), snp.square(i)),
    "take_along_axis": lambda x, y, w, v, c, i: snp.take_along_axis(x, snp.argsort(y, axis=1), 1),
    "roll": lambda x, y, w, v, c, i: snp.roll(x, (1, -2), (0, 1)), "flip": lambda x, y, w, v, c, i: snp.flip(x, 1),
    "tile": lambda x, y, w, v, c, i: snp.tile(w, (2, 1)), "repeat": lambda x, y, w, v, c, i: snp.repeat(x, 2, axis=0),
    "einsum": lambda x, y, w, v, c, i: snp.einsum("ij,jk->ik", x, y), "split": lambda x, y, w, v, c, i: snp.split(w, 4),
    "expand_dims": lambda x, y, w, v, c, i: snp.expand_dims(x, (0, 2)),
    "broadcast_to": lambda x, y, w, v, c, i: snp.broadcast_to(w, (3, 8)),
    "array_equal": lambda x, y, w, v, c, i: snp.array_equal(x, x, equal_nan=True),
    "bincount": lambda x, y, w, v, c, i: snp.bincount(i + 3, weights=w, length=9),
    "histogram": lambda x, y, w, v, c, i: snp.histogram(w, 4), "moveaxis": lambda x, y, w, v, c, i: snp.moveaxis(x, 0, 1),
    "swapaxes": lambda x, y, w, v, c, i: snp.swapaxes(x, 0, 1), "tensordot": lambda x, y, w, v, c, i: snp.tensordot(x, y, 1),
    "right_shift": lambda x, y, w, v, c, i: (snp.right_shift(i, 1), snp.right_shift(i.astype(np.uint8), i)),
    "bitwise_left_shift": lambda x, y, w, v, c, i: snp.bitwise_left_shift(i, i + 30),
    "bitwise_right_shift": lambda x, y, w, v, c, i: snp.bitwise_right_shift(i * 1000, 3),
    "kaiser": lambda x, y, w, v, c, i: snp.kaiser(12, 5.0)}


def test_every_listed_composite_has_a_call_here():
    assert set(_LISTED) == set(snp._COMPOSITES)


@pytest.mark.cpu_only  # (fused eager composites are the CPU backend's)
@pytest.mark.parametrize("name", sorted(_LISTED))
def test_a_listed_function_runs_as_a_composite_with_its_op_by_op_bits(name, exact):
    """Each function `stagec.numpy._COMPOSITES` lists: its first call runs op by op; from its third (traced on the
    second) it runs as a composite, with the same bits, on values with zeros, infinities, NaN and subnormals."""
    rng = np.random.default_rng(3)
    x, y = stagec.device_put(floats((4, 4), 1)), stagec.device_put(np.abs(floats((4, 4), 2)))
    w = stagec.device_put(rng.standard_normal(8).astype(np.float32))
    v = stagec.device_put(np.sort(rng.standard_normal(8)).astype(np.float32))
    c = stagec.device_put((rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))).astype(np.complex64))
    i = stagec.device_put(rng.integers(-3, 4, 8).astype(np.int32))
    args = (x, y, w, v, c, i)
    call = _LISTED[name]
    with np.errstate(all="ignore"):
        first = stagec.tree_util.tree_leaves(call(*args))
        call(*args)
        calls = composites.stats["calls"]
        third = stagec.tree_util.tree_leaves(call(*args))
    assert composites.stats["calls"] > calls, f"{name} ran op by op on its third call"
    assert len(first) == len(third)
    for a, b in zip(first, third):
        same_bits(b, a)


_NN_SP = {  # stagec.nn's, stagec.scipy.special's and lax's functions marked as composites, each called on (x, y)
    "nn.sigmoid": lambda x, y: stagec.nn.sigmoid(x), "nn.softplus": lambda x, y: stagec.nn.softplus(x),
    "nn.elu": lambda x, y: stagec.nn.elu(x, 0.5), "nn.selu": lambda x, y: stagec.nn.selu(x),
    "nn.celu": lambda x, y: stagec.nn.celu(x, 2.0), "nn.leaky_relu": lambda x, y: stagec.nn.leaky_relu(x, 0.1),
    "nn.hard_tanh": lambda x, y: stagec.nn.hard_tanh(x), "nn.hard_sigmoid": lambda x, y: stagec.nn.hard_sigmoid(x),
    "nn.hard_silu": lambda x, y: stagec.nn.hard_silu(x), "nn.hard_swish": lambda x, y: stagec.nn.hard_swish(y),
    "nn.log_sigmoid": lambda x, y: stagec.nn.log_sigmoid(x), "nn.soft_sign": lambda x, y: stagec.nn.soft_sign(x),
    "nn.mish": lambda x, y: stagec.nn.mish(x), "nn.squareplus": lambda x, y: stagec.nn.squareplus(x, 2.0),
    "nn.sparse_plus": lambda x, y: stagec.nn.sparse_plus(x), "nn.sparse_sigmoid": lambda x, y: stagec.nn.sparse_sigmoid(x),
    "nn.glu": lambda x, y: stagec.nn.glu(x), "nn.logmeanexp": lambda x, y: stagec.nn.logmeanexp(x, axis=1),
    "sp.i0": lambda x, y: sps.i0(x), "sp.i0e": lambda x, y: sps.i0e(y), "sp.i1": lambda x, y: sps.i1(x),
    "sp.i1e": lambda x, y: sps.i1e(x), "sp.erfcx": lambda x, y: sps.erfcx(x), "sp.gammasgn": lambda x, y: sps.gammasgn(x * 3),
    # (gammainc, gammaincc and betainc run as jit's module eagerly: tests/test_eager_gammainc_small.py)
    "lax.top_k": lambda x, y: stagec.lax.top_k(x, 3)[1], "lax.nextafter": lambda x, y: stagec.lax.nextafter(x, y),
    "linalg.norm": lambda x, y: snp.linalg.norm(x), "linalg.vector_norm": lambda x, y: snp.linalg.vector_norm(y, axis=1, ord=3),
    "linalg.matrix_norm": lambda x, y: snp.linalg.matrix_norm(x, ord=np.inf)}


@pytest.mark.parametrize("name", sorted(_NN_SP))
def test_an_nn_or_special_function_runs_as_a_composite_with_its_op_by_op_bits(name, exact):
    x, y = stagec.device_put(floats((4, 4), 4)), stagec.device_put(np.abs(floats((4, 4), 5)))
    call = _NN_SP[name]
    with np.errstate(all="ignore"):
        first = np.asarray(call(x, y))
        call(x, y)
        calls = composites.stats["calls"]
        third = np.asarray(call(x, y))
    assert composites.stats["calls"] > calls, f"{name} ran op by op on its third call"
    same_bits(third, first)


def test_a_composite_calling_a_function_staged_eagerly_runs_its_module_as_one_step(exact):
    """`ndtr` runs eagerly as one jit module (`_staged`); a composite planning its equations one by one would take
    NumPy's erfc, not the module's (ndtri's bits were an ulp apart at one of these 16 values so). It is one step of
    the plan (`numpy._staged_step`), which calls that module: the composite runs, with the op-by-op call's bits."""
    @stagec.numpy._base._composite
    def f(p):
        return sps.ndtri(p)

    p = stagec.device_put(np.abs(floats((4, 4), 5)) / 8)
    with np.errstate(all="ignore"):
        want = np.asarray(f(p))  # (a signature's first call: op by op, ndtr's module called as it is)
        calls = composites.stats["calls"]
        for _ in range(3):
            same_bits(f(p), want)
    assert composites.stats["calls"] > calls, "the composite ran op by op"


def test_functions_reading_their_dtype_take_python_numbers():
    """`nn.mish(1.0)` and `scipy.special.gammasgn(-2.5)` raised AttributeError ('float' object has no attribute
    'dtype'); JAX takes Python numbers (float32 results). Values from float64 NumPy."""
    import stagec.scipy.special as sps
    for call, want in ((lambda: stagec.nn.mish(1.0), np.tanh(np.log1p(np.exp(1.0)))),
                       (lambda: sps.gammasgn(-2.5), -1.0), (lambda: sps.gammasgn(3), 1.0)):
        for got in (call(), stagec.jit(call)()):
            assert got.dtype == np.float32
            np.testing.assert_allclose(float(got), want, rtol=2e-7)


@pytest.mark.parametrize("n", [eager.HOST_MAX_ELEMENTS // 2 - 1, eager.HOST_MAX_ELEMENTS // 2])
def test_a_scalar_beside_a_large_array_runs_in_the_operations_module_with_numpys_bits(n, exact):
    """From `HOST_MAX_ELEMENTS` of work (elements out, twice) an eager `x > 0`, `x + 1.0`, `x * s` (s a 0-d Array),
    `maximum(x, 0.5)`, `x / 3.0` or `2.0 - x` ran the scalar's broadcast as a kernel of its own, writing the whole array, before the
    operation's; now the two run as one module once it is compiled (`composites._fusable`), below it as NumPy rules.
    On either side of the threshold every call gives NumPy's float32 bits (correctly rounded, normal values), before
    the module loads and after; only the kernels' side calls a fused module."""
    rng = np.random.default_rng(21)
    x = (rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)).astype(np.float32)
    xs, s = stagec.device_put(x), stagec.device_put(np.float32(1.5))
    cases = [(lambda a: a > 0, x > 0), (lambda a: a + 1.0, x + np.float32(1.0)),
             (lambda a: a * s, x * np.float32(1.5)), (lambda a: snp.maximum(a, 0.5), np.maximum(x, np.float32(0.5))),
             (lambda a: a / 3.0, x / np.float32(3.0)),  # (a constant divisor: no reciprocal's product in the module)
             (lambda a: 2.0 - a, np.float32(2.0) - x)]
    before = composites.stats["fused_calls"]
    for f, want in cases:
        for _ in range(3):  # (plainly, traced, then op by op while the module compiles)
            np.testing.assert_array_equal(np.asarray(f(xs)), want)
    stagec.wait_for_compiles()
    for f, want in cases:
        got = f(xs)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)
    kernels = 2 * n >= eager.HOST_MAX_ELEMENTS
    # (each case's last call on the kernels' side; earlier ones too where the module was loaded by then)
    fused = composites.stats["fused_calls"] - before
    assert fused >= len(cases) if kernels else fused == 0


def test_eager_lax_pow_runs_as_one_composite_with_c99s_values(exact):
    """`lax.pow` eagerly ran C99's special cases (`lax._c99_pow`, ~80 primitives) one by one, ~0.6 ms on 4x4; now one
    composite, `snp.power`'s (the same bits), its ordinary powers the `pow` kernel alone. Values against NumPy's
    float64 pow: negative bases with integer exponents, 0**0, inf, NaN, -0."""
    x = np.array([[2, -2, 0, -0.0], [1, np.inf, -np.inf, np.nan], [0.5, 3, -1, 1e-3], [4, 9, 2, 7]], np.float32)
    y = np.array([[3, 3, 0, 3], [np.nan, 0, 3, 0], [2.5, -1.5, np.inf, 0.5], [0.5, 0.5, -3, 1]], np.float32)
    ordinary = np.array([[4, 9], [0.5, 2]], np.float32)
    xs, ys, os_ = stagec.device_put(x), stagec.device_put(y), stagec.device_put(ordinary)
    calls = composites.stats["calls"]
    for _ in range(3):
        got, plain = stagec.lax.pow(xs, ys), stagec.lax.pow(os_, os_)
    assert composites.stats["calls"] - calls == 4  # (each signature traced from its second call)
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
        want_plain = np.power(ordinary.astype(np.float64), ordinary.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(got), want, rtol=4e-6)
    real = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(np.asarray(got))[real], np.signbit(want)[real])  # (-0.0 ** 3 is -0.0)
    np.testing.assert_allclose(np.asarray(plain), want_plain, rtol=4e-6)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(snp.power(xs, ys)))


def test_a_select_on_an_empty_mask_keeps_its_composite(exact):
    """`associative_scan`'s odd/even split selects on a (0, 4) mask in cumlogsumexp's scan of 4x4: "no element true"
    and "every element true" both held, the code that skips an unread operand made neither, and every call fell back
    to op by op (~0.7 ms; an UnboundLocalError, logged). Now one composite (`lax.cumlogsumexp` is one), against
    NumPy's float64 `logaddexp.accumulate`."""
    x = np.random.default_rng(23).standard_normal((4, 4)).astype(np.float32)
    xs = stagec.device_put(x)
    plain, calls = composites.stats["plain"], composites.stats["calls"]
    for _ in range(4):
        got = stagec.lax.cumlogsumexp(xs, axis=0)
    assert composites.stats["plain"] - plain == 1 and composites.stats["calls"] - calls == 3  # (plain: the first)
    want = np.logaddexp.accumulate(x.astype(np.float64), axis=0)
    np.testing.assert_allclose(np.asarray(got), want, rtol=4e-6)
