"""Eager composites of elementwise steps on large arrays (`composites._Whole`): one module on every call, the first
included, instead of a shape-specific kernel and a pass over memory per step; and NumPy rules of several passes
(`Primitive.def_host`'s `max_work`) leaving mid-size calls to their kernels. Each result is checked against float64
NumPy, and every call of a signature (first, later, on arguments still being computed) gives the same bits."""
from __future__ import annotations

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import composites, eager, lax, nn
from test_eager_composites import _nan_canonical

N = composites.WHOLE_ELEMENTS + 3  # (the first size the whole module serves; tests/test_determinism.py holds more)


def data(seed: int, n: int = N) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(n).astype(np.float32) * 20
    x[:7] = [0.0, -0.0, np.inf, -np.inf, np.nan, 3e38, -100.0]
    return x


def _gelu(x):  # (0.5 x (1 + tanh u) as x sigmoid(2u): 1 + tanh u cancels for x < 0)
    with np.errstate(over="ignore", invalid="ignore"):
        return x / (1 + np.exp(-2 * np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


# function, arguments, float64 oracle, bound in float32 ulps of the result or of `floor`, whichever is larger
# (gelu's results under 0.1 in magnitude take u's rounding: ~25 ulps, as op by op; logaddexp's results near 0
# cancel: ulps of 1)
CASES = {"silu": (nn.silu, 1, lambda x: x / (1 + np.exp(-x)), 4, 1e-30),
         "gelu": (nn.gelu, 1, _gelu, 8, 0.1),
         "hypot": (snp.hypot, 2, np.hypot, 2, 1e-30),
         "softplus": (nn.softplus, 1, lambda x: np.logaddexp(x, 0), 4, 1e-30),
         "logaddexp": (snp.logaddexp, 2, np.logaddexp, 4, 1.0)}


def ulps(got: np.ndarray, want: np.ndarray, floor: float = 1e-30) -> float:
    """The largest error in float32 ulps of the float64 value (rounded: past the range, inf) or of `floor`."""
    with np.errstate(invalid="ignore", over="ignore"):
        want32 = want.astype(np.float32)
        same = (got == want32) | (np.isnan(got) & np.isnan(want))
        scale = np.spacing(np.maximum(np.abs(want32), np.float32(floor))).astype(np.float64)
        err = np.where(same, 0.0, np.abs(got.astype(np.float64) - want) / scale)
    return float(np.max(np.where(np.isnan(err), np.inf, err)))


@pytest.mark.parametrize("name", CASES)
def test_large_elementwise_composite_is_one_module_from_its_first_call(name):
    fn, k, oracle, bound, floor = CASES[name]
    xs = [data(i) for i in range(k)]
    args = [snp.asarray(x) for x in xs]
    whole, calls, compiles = composites.stats["whole"], composites.stats["whole_calls"], eager.stats["compiles"]
    first = np.asarray(fn(*args))
    assert composites.stats["whole"] == whole + 1 and composites.stats["whole_calls"] == calls + 1
    assert eager.stats["compiles"] == compiles  # (op by op: a shape-specific kernel per step)
    same = lambda r: _nan_canonical(np.asarray(r)).tobytes() == _nan_canonical(first).tobytes()  # noqa: E731
    # (a GPU's NaN: one payload; a negated NaN operand's comes back canonical there)
    assert same(fn(*args))
    # arguments still being computed (a kernel's results, enqueued): the module's call waits behind them
    assert same(fn(*[snp.negative(snp.negative(a)) for a in args]))
    assert same(fn(*xs))  # (NumPy arguments: the same module)
    assert same(stagec.jit(fn)(*args))  # (compiled as jit compiles it)
    assert composites.stats["whole"] == whole + 1 and composites.stats["whole_calls"] == calls + 4
    with np.errstate(invalid="ignore"):
        assert ulps(first, oracle(*[x.astype(np.float64) for x in xs]), floor) <= bound
    # below the bound: op by op, NumPy rules (no module)
    small = [snp.asarray(x[:1000]) for x in xs]
    for _ in range(3):
        with np.errstate(invalid="ignore"):
            assert ulps(np.asarray(fn(*small)), oracle(*[x[:1000].astype(np.float64) for x in xs]), floor) <= bound
    assert composites.stats["whole"] == whole + 1


def test_a_power_with_an_eager_case_runs_as_one_module():
    """A large `power` (a composite with an eager case: the `pow` kernel alone where every base is ordinary) runs as
    one module on every call, its first included, whatever its operands: its guard read them back and ran two
    ufuncs over them, and a call it refused ran ~80 steps op by op (1.8 ms on 100K floats). jit's bits; NumPy's
    values at C99's special points, float64 NumPy's within a few ulps elsewhere."""
    x, y = data(3), data(4) / 8
    y[7:20] = [0.0, -0.0, 1.0, 2.0, 3.0, -3.0, 0.5, np.inf, -np.inf, np.nan, 1e-45, -1.0, 4.0]
    y[::5] = np.round(y[::5])  # (negative bases to integer powers)
    X, Y = snp.asarray(x), snp.asarray(y)
    whole, cases = composites.stats["whole"], composites.stats["cases"]
    first = np.asarray(X ** Y)
    for _ in range(2):
        assert np.asarray(X ** Y).tobytes() == first.tobytes()
    assert composites.stats["whole"] == whole + 1 and composites.stats["cases"] == cases
    assert np.asarray(stagec.jit(lambda a, b: a ** b)(X, Y)).tobytes() == first.tobytes()
    with np.errstate(all="ignore"):
        ref = np.power(x.astype(np.float64), y.astype(np.float64))
    special = ~np.isfinite(ref) | (ref == 0) | (ref == 1) | np.isnan(ref)
    np.testing.assert_array_equal(first[special], ref[special].astype(np.float32))
    assert (np.signbit(first) == np.signbit(ref))[~np.isnan(ref)].all()
    info = np.finfo(np.float32)
    normal = ~special & (np.abs(ref) >= info.smallest_normal) & (np.abs(ref) <= info.max)
    assert normal.sum() > N // 2
    assert ulps(first[normal], ref[normal]) <= 4


@pytest.mark.parametrize("fn,oracle", [(lax.logistic, lambda x: 1 / (1 + np.exp(-x))), (lax.sinh, np.sinh),
                                       (lax.cosh, np.cosh), (lax.sign, np.sign)])
def test_several_pass_rules_leave_mid_size_calls_to_kernels(fn, oracle):
    """From 8K elements these call their kernels (compiled before the first call returns: the same bits on every
    call), below their NumPy rules; both within three ulps of float64."""
    if stagec.default_backend() != "cpu":
        pytest.skip("NumPy rules serve the CPU only")
    x = data(4, 20_000) / 4
    for part, rule in ((x[:4000], True), (x, False)):
        a = snp.asarray(part)
        host = eager.stats["host"]
        first = np.asarray(fn(a))
        assert eager.stats["host"] == host + rule
        eager.wait_for_kernels(300)
        assert np.asarray(fn(a)).tobytes() == first.tobytes()
        with np.errstate(over="ignore"):
            assert ulps(first, oracle(part.astype(np.float64))) <= 3


@pytest.mark.parametrize("name", ["silu", "hypot", "gelu"])
def test_mid_size_composite_is_one_polymorphic_module(name):
    """From `POLY_ELEMENTS` to `WHOLE_ELEMENTS` on the CPU: one module for every size (compiled once), from each
    signature's first call, the same bits on every call."""
    if stagec.default_backend() != "cpu":
        pytest.skip("the polymorphic modules serve the CPU only")
    fn, k, oracle, bound, floor = CASES[name]
    full = [data(10 + i, composites.WHOLE_ELEMENTS - 1) for i in range(k)]
    poly, calls = composites.stats["poly"], composites.stats["poly_calls"]
    for j, n in enumerate((composites.POLY_ELEMENTS, 50_001, composites.WHOLE_ELEMENTS - 1)):
        xs = [x[:n] for x in full]
        args = [snp.asarray(x) for x in xs]
        first = np.asarray(fn(*args))
        assert composites.stats["poly"] == poly + 1 and composites.stats["poly_calls"] == calls + 4 * j + 1
        assert np.asarray(fn(*args)).tobytes() == first.tobytes()
        assert np.asarray(fn(*[snp.negative(snp.negative(a)) for a in args])).tobytes() == first.tobytes()
        assert np.asarray(fn(*xs)).tobytes() == first.tobytes()
        with np.errstate(invalid="ignore"):
            assert ulps(first, oracle(*[x.astype(np.float64) for x in xs]), floor) <= bound
    # a row's broadcast: a module of its own (the row read as it is, its size the matrix's)
    x, row = data(20, 40_000).reshape(200, 200), data(21, 200)
    if k == 1:
        return
    first = np.asarray(fn(snp.asarray(x), snp.asarray(row)))
    assert np.asarray(fn(snp.asarray(x), snp.asarray(row))).tobytes() == first.tobytes()
    with np.errstate(invalid="ignore"):
        assert ulps(first, oracle(x.astype(np.float64), row.astype(np.float64)), floor) <= bound
    assert composites.stats["poly"] == poly + 2


def test_broadcast_like_rules():
    """The primitive a polymorphic module broadcasts with: its value, derivative, transpose and batching, of a scalar
    and of a column to dimensions of another operand (`like_dims`, -1 a 1)."""
    from stagec.primitives.structural import broadcast_like_p
    x = snp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert np.array_equal(np.asarray(broadcast_like_p.bind(snp.asarray(np.float32(1.5)), x)), np.full((2, 3), 1.5))
    f = lambda s: snp.sum(broadcast_like_p.bind(s, x) * x)
    assert float(stagec.grad(f)(np.float32(2.0))) == 15.0
    assert float(stagec.jit(stagec.grad(f))(np.float32(2.0))) == 15.0
    _, t = stagec.jvp(lambda s: broadcast_like_p.bind(s, x), (np.float32(2.0),), (np.float32(3.0),))
    assert np.array_equal(np.asarray(t), np.full((2, 3), 3.0))
    col = np.array([1.0, -2.0], np.float32)
    b = lambda c: broadcast_like_p.bind(c, x, broadcast_dimensions=(0,), like_dims=(0, 1))
    assert np.array_equal(np.asarray(b(col)), np.broadcast_to(col[:, None], (2, 3)))
    assert np.array_equal(np.asarray(stagec.jit(b)(col)), np.broadcast_to(col[:, None], (2, 3)))
    one = broadcast_like_p.bind(snp.asarray(col), x, broadcast_dimensions=(0,), like_dims=(0, -1))
    assert one.shape == (2, 1) and np.array_equal(np.asarray(one), col[:, None])
    g = stagec.grad(lambda c: snp.sum(b(c) * x))(col)
    assert np.array_equal(np.asarray(g), np.asarray(x).sum(1))
    rows = np.arange(4, dtype=np.float32).reshape(2, 2)
    assert np.array_equal(np.asarray(stagec.vmap(b)(rows)), np.broadcast_to(rows[:, :, None], (2, 2, 3)))


def test_mid_size_float_floor_divide_is_the_jitted_module():
    """`floor_divide` of float32 (elementwise steps: division, floor, fixes of signs and remainders) from
    `POLY_ELEMENTS`: one module, whose bits are the jitted function's, subnormal operands read as 0 (1e-40 // 1e-40
    is NaN there, 1.0 op by op below, as NumPy), the documented difference of IREE's CPU kernels."""
    if stagec.default_backend() != "cpu":
        pytest.skip("the polymorphic modules serve the CPU only")
    x, y = data(30, 16_900).reshape(130, 130), data(31, 16_900).reshape(130, 130) / 8
    x[0, 7:9], y[0, 7:9] = [1e-40, -1e-40], [1e-40, -1e-40]
    y[1, :3] = [0.0, -0.0, np.inf]
    poly = composites.stats["poly"]
    got = np.asarray(snp.floor_divide(snp.asarray(x), snp.asarray(y)))
    assert composites.stats["poly"] == poly + 1
    assert got.tobytes() == np.asarray(stagec.jit(snp.floor_divide)(x, y)).tobytes()
    with np.errstate(all="ignore"):
        want = np.floor_divide(x, y)
    ordinary = (np.abs(x) >= np.finfo(np.float32).tiny) & (np.abs(y) >= np.finfo(np.float32).tiny)
    assert np.array_equal(got[ordinary], want[ordinary], equal_nan=True)
    assert np.isnan(got[0, 7:9]).all()


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


REDUCING = {"softmax": (nn.softmax, _softmax),
            "var axis 0": (lambda x: snp.var(x, axis=0), lambda x: x.var(axis=0)),
            "std axis 1": (lambda x: snp.std(x, axis=1), lambda x: x.std(axis=1)),
            "standardize": (nn.standardize, lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(
                x.var(-1, keepdims=True) + 1e-5))}


@pytest.mark.parametrize("name", REDUCING)
def test_large_composite_with_reductions_is_one_module(name):
    """From `WHOLE_ELEMENTS` a graph of elementwise steps, reshapes and reductions is one module too (its sums in the
    module's order, the same on every call); below, a polymorphic one (`test_mid_size_reductions_are_polymorphic`)."""
    fn, oracle = REDUCING[name]
    x = np.random.default_rng(40).standard_normal((512, 513)).astype(np.float32) * 3 + 1
    a = snp.asarray(x)
    whole = composites.stats["whole"]
    first = np.asarray(fn(a))
    assert composites.stats["whole"] == whole + 1
    assert np.asarray(fn(a)).tobytes() == first.tobytes()
    assert np.asarray(fn(snp.negative(snp.negative(a)))).tobytes() == first.tobytes()
    assert np.asarray(fn(x)).tobytes() == first.tobytes()
    assert np.asarray(stagec.jit(fn)(a)).tobytes() == first.tobytes()  # (compiled as jit compiles it)
    want = oracle(x.astype(np.float64))
    assert np.allclose(first, want, rtol=2e-5, atol=2e-6 * np.abs(want).max())
    assert composites.stats["whole"] == whole + 1


MID_REDUCING = {**REDUCING, "logsumexp": (lambda x: nn.logsumexp(x, axis=-1), lambda x: np.log(np.exp(
    x - x.max(-1, keepdims=True)).sum(-1)) + x.max(-1))}


@pytest.mark.parametrize("name", MID_REDUCING)
def test_mid_size_reductions_are_polymorphic(name):
    """From `POLY_ELEMENTS` to `WHOLE_ELEMENTS` on the CPU, reductions, broadcasts of their results and reshapes
    adding or dropping 1s run as one shape-polymorphic module too, from each signature's first call: one module for
    shapes whose sizes relate alike (a square matrix's sizes are read from one dimension: a module of its own; `var`'s
    count is a constant: one per count), each result within float32 rounding of float64 NumPy, the same bits on every
    call and for NumPy, Arrays still being computed or a shape sharing the module."""
    if stagec.default_backend() != "cpu":
        pytest.skip("the polymorphic modules serve the CPU only")
    fn, oracle = MID_REDUCING[name]
    rng = np.random.default_rng(41)
    shapes = [(64, 512), (100, 1000), (300, 300), (96, 129)]
    calls, firsts = composites.stats["poly_calls"], {}
    for shape in shapes:
        x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
        a = snp.asarray(x)
        firsts[shape] = first = np.asarray(fn(a))
        assert np.asarray(fn(a)).tobytes() == first.tobytes()
        assert np.asarray(fn(snp.negative(snp.negative(a)))).tobytes() == first.tobytes()
        assert np.asarray(fn(x)).tobytes() == first.tobytes()
        want = oracle(x.astype(np.float64))
        assert first.shape == want.shape and first.dtype == np.float32
        assert np.allclose(first, want, rtol=2e-5, atol=2e-6 * np.abs(want).max())
    assert composites.stats["poly_calls"] == calls + 4 * len(shapes)


@pytest.mark.parametrize("other", [(100, 1), (1, 1000), (1000,), (1, 1)])
def test_mid_size_composite_beside_a_stretched_operand_is_polymorphic(other):
    """An argument with 1s (a column, a row, a 1x1), stretched by the composite's broadcast, is read by the
    polymorphic module as it is: `hypot` and `arctan2` of a 100x1000 matrix and it, within float32 rounding of
    float64 NumPy, the same bits on every call and for NumPy arguments."""
    if stagec.default_backend() != "cpu":
        pytest.skip("the polymorphic modules serve the CPU only")
    rng = np.random.default_rng(43)
    x, b = rng.standard_normal((100, 1000)).astype(np.float32), rng.standard_normal(other).astype(np.float32)
    calls = composites.stats["poly_calls"]
    for fn, oracle in [(snp.hypot, np.hypot), (snp.arctan2, np.arctan2)]:
        first = np.asarray(fn(snp.asarray(x), snp.asarray(b)))
        assert np.asarray(fn(snp.asarray(x), snp.asarray(b))).tobytes() == first.tobytes()
        assert np.asarray(fn(x, b)).tobytes() == first.tobytes()
        assert ulps(first, oracle(x.astype(np.float64), b.astype(np.float64)), 1e-30) <= 3
    assert composites.stats["poly_calls"] == calls + 6


def test_mid_size_composite_of_a_batch_of_one_is_polymorphic():
    """A shape with a 1 (a batch of one) keeps it static in the polymorphic module (its other dimensions dynamic):
    `nn.silu` of (1, n) and (2, 1, n) float32, within 4 ulps of float64 NumPy, the same bits on every call."""
    if stagec.default_backend() != "cpu":
        pytest.skip("the polymorphic modules serve the CPU only")
    calls = composites.stats["poly_calls"]
    for shape in [(1, 50_000), (2, 1, 20_000)]:
        x = data(44, int(np.prod(shape))).reshape(shape)
        first = np.asarray(nn.silu(snp.asarray(x)))
        assert np.asarray(nn.silu(snp.asarray(x))).tobytes() == first.tobytes()
        with np.errstate(over="ignore"):
            assert ulps(first, x / (1 + np.exp(-x.astype(np.float64)))) <= 4
    assert composites.stats["poly_calls"] == calls + 4


def test_a_converted_or_broadcast_operand_gives_one_answer_from_the_first_call():
    """An elementwise op whose Array operand is converted (exp of int32) or broadcast (complex64 times a column) is
    one composite on every call, its first included: mid-size, op by op on the first call and one module after gave
    other bits on the first call. Each within float32 rounding of float64 NumPy."""
    rng = np.random.default_rng(45)
    ints = rng.integers(-20, 20, 100_000).astype(np.int32)
    z = (rng.standard_normal((100, 1000)) + 1j * rng.standard_normal((100, 1000))).astype(np.complex64)
    col = (rng.standard_normal((100, 1)) + 1j).astype(np.complex64)
    for fn, args, want in [(snp.exp, (ints,), np.exp(ints.astype(np.float64))),
                           (snp.sin, (ints.astype(np.int16),), np.sin(ints.astype(np.float64))),
                           (snp.multiply, (z, col), z.astype(np.complex128) * col)]:
        arrays = [snp.asarray(a) for a in args]
        first = np.asarray(fn(*arrays))
        for _ in range(3):
            assert np.asarray(fn(*arrays)).tobytes() == first.tobytes()
        assert first.dtype == want.astype(np.complex64 if want.dtype.kind == "c" else np.float32).dtype
        np.testing.assert_allclose(first, want, rtol=3e-6, atol=1e-6)


def test_polymorphic_reductions_are_one_pass():
    """A polymorphic module with a reduction compiles without IREE's aggressive fusion (`dynamic-reductions-unfused`:
    with it, IREE 3.13 recomputed softmax's row maximum in its readers' dispatch, 12x slower); a shape-specific
    one keeps it."""
    from stagec.core import COMPOSITE, Trace, tracing
    from stagec.lowering import lower_graph
    from stagec.stages import prepare
    tr = Trace("t", COMPOSITE)
    a = tr.new_arg(snp.asarray(np.ones((100, 1000), np.float32)).aval, "x")
    with tracing(tr):
        out = nn.softmax(a)
    graph = tr.to_graph([out], "softmax")
    dyn = composites._dynamic(graph)
    assert dyn is not None and all(d == -1 for d in dyn.in_avals[0].shape)
    assert prepare(str(lower_graph(dyn, "softmax")), "cpu", (), False, "softmax")[1].unfused
    assert not prepare(str(lower_graph(graph, "softmax")), "cpu", (), False, "softmax")[1].unfused


@pytest.mark.parametrize("shapes", [((4, 4), (4, 1)), ((4, 4), (4,)), ((130, 130), (130, 1)), ((100, 1000), (1000,)),
                                    ((3, 1, 5), (2, 1)), ((600, 600), (600, 1)), ((300, 1000), (1, 1000))])
def test_broadcast_operands_as_numpy(shapes):
    """An Array operand broadcast (or converted) by an eager operation runs with the operation as one composite
    (its NumPy rule reads the operand as it is; past the rules, one module), not a broadcast dispatched first: the
    same bits as NumPy's correctly rounded operations, on every call, a column, a row or a new axis, float32 beside
    int32 too."""
    sa, sb = shapes
    rng = np.random.default_rng(42)
    x, m = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
    k = np.arange(int(np.prod(sb)), dtype=np.int32).reshape(sb) - 7
    a, b, i = snp.asarray(x), snp.asarray(m), snp.asarray(k)
    c = snp.asarray(x > 0)
    calls = composites.stats["calls"]
    for _ in range(3):
        for got, want in [(a - b, x - m), (b * a, m * x), (a / b, x / m), (a + i, x + k.astype(np.float32)),
                          (snp.maximum(b, a), np.maximum(m, x)), (snp.where(c, a, b), np.where(x > 0, x, m)),
                          (snp.where(c, b, 0.5), np.where(x > 0, m, np.float32(0.5))),
                          (snp.where(c, a, i), np.where(x > 0, x, k.astype(np.float32)))]:
            assert got.dtype == np.float32 and np.asarray(got).tobytes() == want.tobytes()
    assert composites.stats["calls"] >= calls + 8  # (a composite from each signature's second call: traced on its third)
    # a power of one broadcast to the other: C99's pow (negative bases to integer powers), within 2 ulps of float64
    base, exps = snp.abs(a) + 0.5, snp.asarray(np.round(m * 3))
    for p, q, pn, qn in [(base, b, np.abs(x) + 0.5, m), (a, exps, x, np.round(m * 3))]:
        want = np.power(np.broadcast_to(pn, np.broadcast_shapes(pn.shape, qn.shape)).astype(np.float64), qn)
        for _ in range(3):
            got = np.asarray(p ** q)
            assert got.dtype == np.float32 and ulps(got, want) <= 2


def test_an_unloaded_whole_module_loads_again_with_its_bits():
    """Loaded whole modules count against `config.eager_cache_size`; the oldest is unloaded and its signature's next
    call loads it again (the persistent cache's module): the same bits, never op by op."""
    old = stagec.config.eager_cache_size
    stagec.config.update("eager_cache_size", 1)
    try:
        a, b = snp.asarray(data(50)), snp.asarray(data(51, N + 5))
        first_a, first_b = np.asarray(nn.silu(a)), np.asarray(nn.silu(b))  # (b's module unloads a's)
        whole, calls = composites.stats["whole"], composites.stats["whole_calls"]
        for _ in range(2):
            assert np.asarray(nn.silu(a)).tobytes() == first_a.tobytes()
            assert np.asarray(nn.silu(b)).tobytes() == first_b.tobytes()
        assert len(composites._wholes) == 1 and composites.stats["whole"] == whole
        assert composites.stats["whole_calls"] == calls + 4
    finally:
        stagec.config.update("eager_cache_size", old)
