"""NumPy rules (`Primitive.def_host`): jit's first tier while the fused module compiles, and eager's while a kernel
compiles. They give the compiled ops' results: bitwise for exact operations, within docs/design.md's ulps for
the transcendental ones and within rounding for sums and products (another summation order)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as hst

import stagec
from stagec import eager
from stagec.core import HOST_DTYPES
from stagec.primitives import dot, elementwise as ew, gather_p, reductions as red, structural as st

pytestmark = pytest.mark.cpu_only  # (NumPy rules answer on the CPU backend only: jit's quick tier, eager's host plans)


@pytest.fixture
def host_tiers():
    old = stagec.config.jit_tiering, stagec.config.eager_tiering
    stagec.config.update("jit_tiering", "auto")
    stagec.config.update("eager_tiering", "auto")
    yield
    stagec.wait_for_compiles()
    stagec.config.update("jit_tiering", old[0])
    stagec.config.update("eager_tiering", old[1])


def tiers(f, *args):
    """(first call, on the quick tier, computed partly or wholly by NumPy rules; the fused module's call) of
    `jit(f)`, both as NumPy pytrees."""
    jf = stagec.jit(f)
    host = eager.stats["host"]
    quick = jf(*args)
    assert eager.stats["host"] > host, "the first call did not run on the NumPy rules"
    assert stagec.wait_for_compiles(120)
    fused = jf(*args)
    assert jf._cache[next(iter(jf._cache))].__class__.__name__ == "Runner"  # the fused module answered
    as_np = lambda t: stagec.tree_util.tree_map(np.asarray, t)
    return as_np(quick), as_np(fused)


def same_bits(a: np.ndarray, b: np.ndarray, what: str) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape, (what, a.dtype, b.dtype, a.shape, b.shape)
    if a.dtype.kind in "fc":
        nan = np.isnan(a) & np.isnan(b)  # (NaN payloads may differ)
        a, b = np.where(nan, 0, a), np.where(nan, 0, b)
        assert (a.reshape(-1).view(np.uint8) == b.reshape(-1).view(np.uint8)).all(), (what, a, b)
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in float32/float64 steps between a and b (0 for two NaNs)."""
    bits = np.int32 if a.dtype == np.float32 else np.int64
    ia, ib = a.view(bits).astype(np.int64), b.view(bits).astype(np.int64)
    lo = np.iinfo(bits).min
    ia, ib = (np.where(i < 0, lo - i, i) for i in (ia, ib))  # monotonic in the value
    d = np.abs(ia - ib)
    return np.where(np.isnan(a) & np.isnan(b), 0, d)


SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, 0.5, 3.0, 1e-30, 7.25, -1e30]


def data(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    kind = np.dtype(dtype).kind
    if kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), n, endpoint=True).astype(dtype).reshape(shape)
    vals = np.resize(np.array(SPECIAL), n) * rng.choice([1.0, -1.0], n)
    if kind == "c":
        return (vals + 1j * np.resize(np.array(SPECIAL[::-1]), n)).astype(dtype).reshape(shape)
    return vals.astype(dtype).reshape(shape)


def exact_ops(x, y):
    """Every elementwise primitive whose NumPy rule serves x's dtype and is exact, on x and y."""
    kind = x.dtype.kind if hasattr(x, "dtype") else np.asarray(x).dtype.kind
    out = {}
    for p in (ew.neg_p, ew.abs_p, ew.sign_p, ew.floor_p, ew.ceil_p, ew.round_p, ew.sqrt_p, ew.rsqrt_p, ew.not_p,
              ew.is_finite_p, ew.real_p, ew.imag_p):
        if p.hosts([stagec.core.aval_of(x)], {}):
            out[p.name] = p.bind(x)
    for p in (ew.add_p, ew.sub_p, ew.mul_p, ew.div_p, ew.rem_p, ew.max_p, ew.min_p, ew.and_p, ew.or_p, ew.xor_p,
              ew.eq_p, ew.ne_p, ew.lt_p, ew.le_p, ew.gt_p, ew.ge_p, ew.shift_left_p, ew.shift_right_logical_p,
              ew.shift_right_arithmetic_p):  # (shifts: counts in [-100, 100], most out of range)
        if p.hosts([stagec.core.aval_of(x)] * 2, {}):
            out[p.name] = p.bind(x, y)
    out["select"] = ew.select_p.bind(ew.ne_p.bind(x, y), x, y)
    if kind != "c":
        out["clamp"] = ew.clamp_p.bind(ew.min_p.bind(x, y), x, ew.max_p.bind(x, y))
        out["reduce_max"] = red.reduce_max_p.bind(x, axes=tuple(range(np.ndim(x))))
        out["reduce_min"] = red.reduce_min_p.bind(x, axes=tuple(range(np.ndim(x))))
    for t in (np.float64, np.bool_, np.int32, np.complex64):
        if ew.convert_element_type_p.hosts([stagec.core.aval_of(x)], {"new_dtype": np.dtype(t)}):
            out[f"to_{np.dtype(t).name}"] = ew.convert_element_type_p.bind(x, new_dtype=np.dtype(t), weak_type=False)
    return out


EXACT_CASES = [(np.float32, (3, 4)), (np.float32, ()), (np.float32, (0, 3)), (np.float64, (12,)), (np.complex64, (12,)),
               (np.int32, (3, 4)), (np.int32, ()), (np.uint8, (12,)), (np.bool_, (3, 4)), (np.int64, (12,))]


@pytest.mark.parametrize("wide", [False, True], ids=["32-bit", "64-bit"])
def test_exact_rules_give_the_compiled_bits(host_tiers, request, wide):
    """Every case of one width in one jitted function (one compile): the 8-byte dtypes with x64 on."""
    cases = [(d, s) for d, s in EXACT_CASES if (np.dtype(d).itemsize == 8) == wide]
    if wide:
        request.getfixturevalue("x64")
    inputs = [(data(d, s), data(d, s, seed=1)) for d, s in cases]
    quick, fused = tiers(lambda xys: [exact_ops(x, y) for x, y in xys], inputs)
    assert len(quick) == len(fused) == len(cases)
    for (dtype, shape), q, f in zip(cases, quick, fused):
        assert q["add" if dtype != np.bool_ else "or"].dtype == dtype
        assert q.keys() == f.keys() and len(q) > 5
        for k in q:
            same_bits(q[k], f[k], f"{k} of {np.dtype(dtype).name}{list(shape)}")


def test_bit_reading_rules_give_the_compiled_bits(host_tiers, x64):
    """bitcast_convert_type, is_finite, clz and population_count are `eager.EXACT` (a composite of them and integer
    steps is one fused module: frexp): their rules against the compiled ops on float32 subnormals, signed zeros,
    infinities and NaN payloads (a kernel flushes subnormals in arithmetic, never in a move or a bit test), and on
    integers with their top and bottom bits set."""
    from stagec.primitives import bits
    u32 = np.array([0x7FC00001, 0xFFA00000, 0x00000001, 0x80000001, 0x007FFFFF, 0x80000000, 0, 0x7F800000,
                    0xFF800000, 0x3F800000, 0x00400000, 0x807FFFFF], np.uint32)
    x = u32.view(np.float32)  # (NaNs with payloads, subnormals of both signs, -0, +-inf, 1)
    i64 = np.array([0, 1, -1, 2**62, -(2**63), 2**32 - 1, 2**32, 12345678901, 255], np.int64)

    def f(x, u, i):
        out = {"to_u32": bits.bitcast_convert_type_p.bind(x, new_dtype=np.dtype(np.uint32)),
               "to_i32": bits.bitcast_convert_type_p.bind(x, new_dtype=np.dtype(np.int32)),
               "is_finite": ew.is_finite_p.bind(x)}
        for t in (np.uint32, np.int32, np.uint8, np.int16):
            v = ew.convert_element_type_p.bind(u, new_dtype=np.dtype(t), weak_type=False)
            out[f"clz_{np.dtype(t).name}"], out[f"popcount_{np.dtype(t).name}"] = bits.clz_p.bind(v), \
                bits.population_count_p.bind(v)
        out["clz_i64"], out["popcount_i64"] = bits.clz_p.bind(i), bits.population_count_p.bind(i)
        return out

    for p in (bits.bitcast_convert_type_p, ew.is_finite_p, bits.clz_p, bits.population_count_p):
        assert p in eager.EXACT
    quick, fused = tiers(f, x, u32, i64)
    assert quick.keys() == fused.keys()
    for k in quick:
        assert quick[k].dtype == fused[k].dtype and np.array_equal(quick[k], fused[k]), (k, quick[k], fused[k])
    np.testing.assert_array_equal(quick["to_u32"], u32)  # (the payloads kept)


def structure_ops(x, y):
    f32 = np.dtype(np.float32)
    return {"broadcast": st.broadcast_in_dim_p.bind(x, shape=(5, 2, 3, 4), broadcast_dimensions=(1, 2, 3)),
            "broadcast_swap": st.broadcast_in_dim_p.bind(x[0], shape=(4, 3), broadcast_dimensions=(1, 0)),
            "reshape": st.reshape_p.bind(x, new_sizes=(4, 6)),
            "transpose": st.transpose_p.bind(x, permutation=(2, 0, 1)),
            "slice": st.slice_p.bind(x, start_indices=(0, 1, 0), limit_indices=(2, 3, 4), strides=(1, 1, 2)),
            "dynamic_slice": st.dynamic_slice_p.bind(x, np.int32(1), np.int32(-3), np.int32(7), slice_sizes=(1, 2, 2)),
            "dynamic_update_slice": st.dynamic_update_slice_p.bind(x, y[:1, :2, :2], np.int32(5), np.int32(1),
                                                                   np.int32(0)),
            "rev": st.rev_p.bind(x, dimensions=(0, 2)),
            "iota": st.iota_p.bind(dtype=np.dtype(np.int32), shape=(3, 5), dimension=1),
            "concatenate": st.concatenate_p.bind(x, y, dimension=1),
            "pad": st.pad_p.bind(x, np.float32(-1), low=(1, -1, 0), high=(0, 2, -1), interior=(1, 0, 2)),
            "argmax": red.argminmax_p.bind(x, axis=2, index_dtype=np.dtype(np.int32), is_max=True),
            "argmin": red.argminmax_p.bind(x, axis=0, index_dtype=np.dtype(np.int32), is_max=False),
            "cummax": red.cumulative_p.bind(x, axis=1, op="max", reverse=True),
            # single elements (take_along_axis, x[i, j]): coordinates in start_index_map's order, out of range
            # ones clamped into their dimension (the rule indexes NumPy by each coordinate, clamped)
            "gather_points": gather_p.bind(x, np.array([[[1, 2, 0], [-5, 9, 1]], [[3, 0, 1], [2, 1, 7]]], np.int32),
                                           offset_dims=(), collapsed_slice_dims=(0, 1, 2), start_index_map=(2, 0, 1),
                                           slice_sizes=(1, 1, 1)),
            "to_f32": ew.convert_element_type_p.bind(np.int32(7) * st.iota_p.bind(
                dtype=np.dtype(np.int32), shape=(4,), dimension=0), new_dtype=f32, weak_type=False)}


def test_eager_point_gathers_take_the_rule_with_the_compiled_bits():
    """A gather of single elements (take_along_axis, `x[i, j]` of arrays) takes its NumPy rule eagerly: each
    coordinate clamped into its dimension, as the compiled op (and an explicit clamp in NumPy) gives."""
    x = data(np.float32, (2, 3, 4))
    idx = np.array([[[1, 2, 0], [-5, 9, 1]], [[3, 0, 1], [2, 1, 7]], [[0, -1, -1], [3, 3, 3]]], np.int32)
    params = dict(offset_dims=(), collapsed_slice_dims=(0, 1, 2), start_index_map=(2, 0, 1), slice_sizes=(1, 1, 1))
    host = eager.stats["host"]
    got = np.asarray(stagec.lax.gather(stagec.numpy.asarray(x), stagec.numpy.asarray(idx), **params))
    assert eager.stats["host"] > host
    compiled = np.asarray(stagec.jit(lambda x, i: stagec.lax.gather(x, i, **params))(x, idx))
    want = x[np.clip(idx[..., 1], 0, 1), np.clip(idx[..., 2], 0, 2), np.clip(idx[..., 0], 0, 3)]
    same_bits(got, want, "eager")
    same_bits(compiled, want, "jit")


def test_structural_rules_give_the_compiled_bits(host_tiers):
    x, y = data(np.float32, (2, 3, 4)), data(np.float32, (2, 3, 4), seed=1)
    quick, fused = tiers(structure_ops, x, y)
    for k in quick:
        same_bits(quick[k], fused[k], k)


def inexact_ops(x, p):
    """The transcendental primitives whose NumPy rules serve x's dtype."""
    pos = ew.abs_p.bind(x)
    args = {"log": pos, "log1p": pos, "atanh": ew.div_p.bind(x, ew.add_p.bind(pos, p)),  # (in (-1, 1))
            "acosh": ew.add_p.bind(pos, p)}
    ops = {}
    for prim in (ew.exp_p, ew.exp2_p, ew.expm1_p, ew.tanh_p, ew.logistic_p, ew.sin_p, ew.cos_p, ew.tan_p, ew.asinh_p, ew.log_p,
                 ew.log1p_p, ew.atanh_p, ew.acosh_p):
        if prim.hosts([stagec.core.aval_of(x)], {}):
            ops[prim.name] = prim.bind(args.get(prim.name, x))
    return ops


# The most ulps between the NumPy rule and the compiled op (measured: exp 0, exp2 1, expm1 2, log 3, log1p 2, tanh 4,
# logistic 2, sin/cos/tan 1, asinh 2, acosh 3, atanh 2, where results are normal numbers: IREE's float32 ops
# flush subnormal results to zero).
ULPS = 4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transcendental_rules_within_ulps(host_tiers, request, dtype):
    if dtype == np.float64:
        request.getfixturevalue("x64")
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.standard_normal(400) * s for s in (1e-3, 1, 8, 60)]).astype(dtype)
    quick, fused = tiers(inexact_ops, x, np.full_like(x, 7))
    assert len(quick) == (13 if dtype == np.float32 else 9)
    tiny = np.finfo(dtype).tiny
    for k in quick:
        q, f = quick[k], fused[k]
        normal = (np.abs(q) >= tiny) | (np.abs(f) >= tiny) | ~np.isfinite(q) | ~np.isfinite(f)
        d = ulps(q, f)[normal]
        assert d.max(initial=0) <= ULPS, (k, d.max(), x[normal][d.argmax()])
        assert (np.abs(q[~normal] - f[~normal]) <= tiny).all(), k


def sums(x, w):
    return {"sum": red.reduce_sum_p.bind(x, axes=(1,)), "prod": red.reduce_prod_p.bind(ew.div_p.bind(x, x), axes=(0,)),
            "cumsum": red.cumulative_p.bind(x, axis=1, op="sum", reverse=False),
            "dot": dot.dot_general_p.bind(x, w, dimension_numbers=(((1,), (0,)), ((), ()))),
            "batched": dot.dot_general_p.bind(w, w, dimension_numbers=(((0,), (0,)), ((1,), (1,)))),
            **{f"empty_{p.name}": p.bind(st.slice_p.bind(x, start_indices=(0, 0), limit_indices=(16, 0), strides=(1, 1)),
                                         axes=(1,)) for p in (red.reduce_sum_p, red.reduce_prod_p, red.reduce_max_p)}}


def test_sums_and_products_within_rounding(host_tiers):
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((16, 300)).astype(np.float32), rng.standard_normal((300, 5)).astype(np.float32)
    quick, fused = tiers(sums, x, w)
    np.testing.assert_allclose(quick["sum"], fused["sum"], rtol=0, atol=300 * 4e-7 * np.abs(x).sum(1).max())
    np.testing.assert_allclose(quick["prod"], fused["prod"], rtol=0, atol=0)
    np.testing.assert_allclose(quick["cumsum"], fused["cumsum"], rtol=0, atol=300 * 4e-7 * np.abs(x).sum(1).max())
    np.testing.assert_allclose(quick["dot"], fused["dot"], rtol=0, atol=300 * 4e-7 * np.abs(x).max() * np.abs(w).max() * 300)
    np.testing.assert_allclose(quick["batched"], fused["batched"], rtol=1e-5)
    assert quick["dot"].dtype == np.float32 and quick["batched"].shape == (5,)
    for k in ("empty_reduce_sum", "empty_reduce_prod", "empty_reduce_max"):  # (the reduction of nothing)
        same_bits(quick[k], fused[k], k)
    assert (quick["empty_reduce_max"] == -np.inf).all() and (quick["empty_reduce_prod"] == 1).all()


@pytest.mark.parametrize("dtype,shape", [(np.float32, (5,)), (np.float32, ()), (np.int32, (0,)), (np.uint8, (3, 2)),
                                         (np.complex64, (4,))])
def test_eager_host_then_kernel(host_tiers, dtype, shape):
    """An eager operation new to the persistent cache computes on the host; called once, it compiles nothing; from
    its second call its kernel compiles on a thread, and a call after that takes the kernel: the same bits. (On the
    device only: an `exact` operation on values held on the host, as one a NumPy rule read back, computes with its
    rule: test_eager_dispatch.py.)"""
    x = lambda: stagec.device_put(data(dtype, shape, seed=4))
    op = (lambda a: a * a + a) if np.dtype(dtype).kind != "b" else (lambda a: a | ~a)
    with _fresh_cache():
        host = eager.stats["host"]
        first = np.asarray(op(x()))
        assert eager.stats["host"] > host and not eager._later.queued  # (one call: no compile)
        for _ in range(4):  # (`a * a` queues its kernel at its second call; `+ a` on its result, on the device, is a
            np.asarray(op(x()))  # signature of its own, queued at its second call)
            assert stagec.wait_for_compiles(120)
        host = eager.stats["host"]
        second = np.asarray(op(x()))
        assert eager.stats["host"] == host  # the kernels answered
    same_bits(first, second, f"{np.dtype(dtype).name}{list(shape)}")


def test_eager_cond_of_integer_steps_on_the_host_but_undefined_quotients(monkeypatch):
    """An eager `switch` whose branches are integer steps computes by their NumPy rules while its kernel compiles;
    where a divisor is 0 (or MIN / -1) the rule gives way to the kernel, which answers as XLA defines it (x / 0 =
    -1, x % 0 = x, MIN / -1 = MIN, MIN % -1 = 0). Default tiering."""
    from stagec.primitives import control_flow
    rules = []
    host = control_flow.cond_p.host
    monkeypatch.setattr(control_flow.cond_p, "host", lambda *a, **k: rules.append(1) or host(*a, **k))
    lo = np.iinfo(np.int32).min
    x = np.array([7, -7, 5, lo, 9], np.int32)
    f = lambda i, y: stagec.lax.switch(i, [lambda a, b: (stagec.lax.rem(a, b), stagec.lax.div(a, b)),
                                           lambda a, b: (a + b, a * b)], stagec.device_put(x), stagec.device_put(y))
    with _fresh_cache():
        y = np.array([3, 2, -4, 5, 1], np.int32)
        got = [np.asarray(v) for v in f(0, y)]
        assert rules == [1]  # computed by the rules, no wait for a compile
        np.testing.assert_array_equal(got[0], np.fmod(x, y))
        np.testing.assert_array_equal(got[1], np.trunc(x / y.astype(np.float64)).astype(np.int32))
        np.testing.assert_array_equal(np.asarray(f(1, y)[1]), x * y)
        eager.clear_cache()
        y = np.array([0, 2, 0, -1, 1], np.int32)
        rem, div = (np.asarray(v) for v in f(0, y))
        assert rules == [1, 1, 1]  # (tried, then the kernel)
        np.testing.assert_array_equal(rem, [7, -1, 5, 0, 0])
        np.testing.assert_array_equal(div, [-1, -3, -1, lo, 9])


class _fresh_cache:
    """No kernel loaded in this process nor stored on disk while inside: eager calls meet new keys."""

    def __enter__(self):
        eager.clear_cache()
        self.old = stagec.config.persistent_cache
        stagec.config.update("persistent_cache", False)

    def __exit__(self, *exc):
        stagec.config.update("persistent_cache", self.old)
        eager.clear_cache()


def test_rules_cover_the_benchmark_primitives():
    """The primitives of the benchmarks' workloads (selu, softmax, layernorm, matmul, MLP) all have NumPy rules
    for float32, so their first calls never wait for a compile."""
    f32 = stagec.core.ShapedArray((4, 4), np.float32)
    for p in (ew.add_p, ew.sub_p, ew.mul_p, ew.div_p, ew.max_p, ew.exp_p, ew.gt_p, ew.sqrt_p, ew.rsqrt_p,
              ew.tanh_p, red.reduce_sum_p, red.reduce_max_p, st.broadcast_in_dim_p, st.transpose_p, st.reshape_p,
              dot.dot_general_p):
        assert p.host is not None, p
    assert ew.select_p.hosts([f32.update(dtype=np.dtype(bool)), f32, f32], {})
    assert not ew.exp_p.hosts([f32.update(dtype=np.dtype(np.float16))], {})  # (not measured: compiles)
    assert not ew.div_p.hosts([f32.update(dtype=np.dtype(np.int32))] * 2, {})  # (x / 0 differs)
    assert np.dtype(np.float16) not in HOST_DTYPES
    to_f16 = {"new_dtype": np.dtype(np.float16), "weak_type": False}  # (results are checked too)
    assert not ew.convert_element_type_p.hosts([f32], to_f16, [f32.update(dtype=np.dtype(np.float16))])


def test_a_failed_background_compile_raises_in_the_next_call(host_tiers, monkeypatch):
    """The NumPy rule answers at once; the kernel's compile error is not lost: the next call compiles in the
    caller and raises it."""
    import stagec.numpy as snp
    from stagec.errors import CompileError

    def fail(prim, avals, params, out_avals, backend, compile=True):
        if not compile:  # (nothing on disk)
            return None
        raise CompileError(f"no kernel for {prim.name} today")
    with _fresh_cache():
        monkeypatch.setattr(eager, "_compile", fail)
        x = snp.asarray(np.arange(4, dtype=np.float32))
        np.testing.assert_array_equal(np.asarray(x * 2.0), np.arange(4) * 2.0)
        np.testing.assert_array_equal(np.asarray(x * 2.0), np.arange(4) * 2.0)  # (its second call: queued)
        with pytest.raises(CompileError, match="no kernel for (mul|broadcast_in_dim) today"):
            for _ in range(3):  # (the polymorphic kernel fails first, then the shape-specific one)
                assert stagec.wait_for_compiles(60)
                x * 2.0


def test_environment_values_are_checked(monkeypatch):
    monkeypatch.setenv("STAGEC_EAGER_TIERING", "sometimes")
    bad = type(stagec.config)()  # (import works; the flag's first read names the variable)
    with pytest.raises(ValueError, match="STAGEC_EAGER_TIERING takes one of"):
        bad.eager_tiering
    monkeypatch.setenv("STAGEC_JIT_CACHE_SIZE", "abc")
    with pytest.raises(ValueError, match="STAGEC_JIT_CACHE_SIZE takes a whole number, not 'abc'"):
        type(stagec.config)().jit_cache_size
    monkeypatch.setenv("STAGEC_EAGER_TIERING", "NEVER")
    assert type(stagec.config)().eager_tiering == "never"


def test_eight_threads_on_the_host_tier(host_tiers):
    """Eight threads calling eager operations new to the process at once: answered by NumPy rules, each kernel
    queued and compiled once, every result right; a jitted function called at once traces once, tiers once."""
    import sys

    import stagec.numpy as snp
    from threads import run_at_once
    from stagec import quick
    jit_stats = sys.modules["stagec.jit"].stats
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6)
    f = stagec.jit(lambda a: snp.tanh(a) * 2.0 + snp.sum(a, axis=0))
    outs: list = []
    with _fresh_cache():
        compiles, before, tiered = eager.stats["compiles"], dict(jit_stats), quick.stats["tiered"]

        def work(i):
            a = snp.asarray(x)
            outs.append((i, np.asarray(snp.exp(a) - a * 3.0), np.asarray(f(a))))
        assert not run_at_once(work)
        assert stagec.wait_for_compiles(120)
        assert jit_stats["traces"] - before["traces"] == 1 and quick.stats["tiered"] - tiered == 1
        queued = eager.stats["compiles"] - compiles
        assert 0 < queued <= 4  # exp, mul, sub and the scalar's broadcast: each once, not once per thread
    want_eager, want_jit = np.exp(x) - x * 3.0, np.tanh(x) * 2.0 + x.sum(0)
    for _, e, j in outs:
        np.testing.assert_allclose(e, want_eager, rtol=4e-7)
        np.testing.assert_allclose(j, want_jit, rtol=4e-7, atol=1e-6)


_SELECT_DTYPES = [np.float32, np.float64, np.float16, "bfloat16", np.int8, np.uint8, np.bool_, np.int32, np.int64,
                  np.complex64, np.complex128]


@settings(max_examples=24, deadline=None, suppress_health_check=list(HealthCheck))
@given(dtype=hst.sampled_from(_SELECT_DTYPES), n=hst.sampled_from([1, 4097, 65535, 65536, 98304, 131071, 131072]),
       layout=hst.sampled_from(["plain", "broadcast", "strided", "scalar_mask"]), seed=hst.integers(0, 2 ** 16))
def test_select_rule_takes_the_chosen_operands_bits(dtype, n, layout, seed):
    """select's NumPy rule selects bitwise from 64K elements (NumPy's `where` slows ~5x there on a random mask):
    the chosen operand's bits, NaN payloads and signed zeros included, as `where` gives them, across the sizes
    where it changes and with broadcast, strided and 0-d operands."""
    import ml_dtypes
    dt = np.dtype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    rng = np.random.default_rng(seed)

    def values(size):  # random bits: every NaN payload, zero sign and subnormal of the dtype
        raw = rng.integers(0, 256, size * dt.itemsize, dtype=np.uint8)
        return (raw & 1).astype(np.bool_) if dt == np.bool_ else raw.view(dt)
    a, b, p = values(n), values(n), rng.random(n) < 0.5
    if layout == "broadcast":
        b = np.broadcast_to(values(1), (n,))
    elif layout == "strided":
        a, b, p = values(2 * n)[::2], values(3 * n)[1::3], (rng.random(2 * n) < 0.5)[::2]
    elif layout == "scalar_mask":
        p = np.bool_(seed % 2)
    got = ew.select_p.host(p, a, b)
    want = np.where(p, a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.ascontiguousarray(got).tobytes() == want.tobytes()


def test_logistic_rule_is_the_stable_branch_of_each_sign():
    """logistic's NumPy rule (`1/(1+e)` for x >= 0, `e/(1+e)` below, e = exp(-|x|)) on 2^17 floats, where its select
    is bitwise: those branches' bits, and within 2 ulps of the float64 value."""
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(1 << 17) * s for s in (1, 30)] +
                       [[0.0, -0.0, np.inf, -np.inf, np.nan, 88.0, -88.0, -104.0]]).astype(np.float32)
    got = ew.logistic_p.host(x)
    e = np.exp(-np.abs(x))
    with np.errstate(invalid="ignore"):
        branch = np.where(x >= 0, 1 / (1 + e), e / (1 + e))
    assert got.dtype == np.float32 and got.tobytes() == branch.tobytes()
    exact = 1 / (1 + np.exp(-x.astype(np.float64)))
    finite = np.isfinite(exact) & (exact > np.finfo(np.float32).tiny)
    ulp = np.spacing(np.abs(exact[finite]).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got[finite] - exact[finite]) / ulp) <= ULPS


@settings(max_examples=24, deadline=None, suppress_health_check=list(HealthCheck))
@given(dtype=hst.sampled_from([np.float32, np.float64, np.float16, "bfloat16"]),
       n=hst.sampled_from([3, 4095, 4096, 70000]), bound=hst.sampled_from([0.0, -0.0, 1.5]),
       first=hst.booleans(), seed=hst.integers(0, 2 ** 16))
def test_max_and_min_rules_give_ieee_zeros_beside_a_broadcast_bound(dtype, n, bound, first, seed):
    """max and min's NumPy rules against a broadcast constant (`relu`'s 0, `clip`'s bounds), across the size from
    which a max with +0 or a min with -0 fixes its zeros' signs in one pass: IEEE's zeros (max: +0 unless both
    are -0; min: -0 if either is), NaNs (quiet, any payload) and everything else as NumPy gives them, either
    operand first."""
    import ml_dtypes
    dt = np.dtype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    rng = np.random.default_rng(seed)
    nans = (np.array([0x7FC00001, 0xFFC12345], np.uint32).view(np.float32)).astype(dt)  # (quiet, with payloads)
    pool = np.concatenate([np.array([0.0, -0.0, 1.5, -1.5, np.inf, -np.inf], dt), nans,
                           rng.standard_normal(8).astype(dt)])
    x = rng.choice(pool, n)
    c = np.broadcast_to(np.array(bound, dt), x.shape)
    a, b = (c, x) if first else (x, c)
    with np.errstate(invalid="ignore"):
        both = (a == 0) & (b == 0)
        want_max = np.where(both, a + b, np.maximum(a, b))
        want_min = np.where(both, -(-a - b), np.minimum(a, b))
        got_max, got_min = ew.max_p.host(a, b), ew.min_p.host(a, b)
    assert got_max.dtype == dt and got_max.tobytes() == want_max.tobytes()
    assert got_min.dtype == dt and got_min.tobytes() == want_min.tobytes()
