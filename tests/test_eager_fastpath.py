"""Eager dispatch's per-signature shortcuts (`numpy._base._elementwise`'s operand cache, `eager._host_plan`) give
what the full path gives: Python scalars told apart by type, sign of zero and NaN, settings changes honoured,
the caller's NumPy arrays never aliased. Oracle: NumPy (float64 where it computes values)."""
import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import lax


@pytest.fixture(autouse=True, params=["exact", "never"])
def tiering(request):
    """The default eager tiering ("exact", what users run; the suite's conftest sets "never") and "never"."""
    before = stagec.config.eager_tiering
    stagec.config.update("eager_tiering", request.param)
    yield request.param
    stagec.config.update("eager_tiering", before)


def _bits(x):
    x = np.asarray(x)
    if stagec.config.default_backend != "cpu" and x.dtype.kind == "f":  # (a GPU's NaN is 0x7fffffff whatever came in)
        x = np.where(np.isnan(x), np.array(np.nan, x.dtype), x)
    return x.view(np.uint32 if x.dtype.itemsize == 4 else np.uint64)


def test_scalars_of_equal_value_and_other_types_stay_apart():
    xi = stagec.device_put(np.arange(4, dtype=np.int32))
    for _ in range(2):  # (the second round is served by the cache)
        assert (xi + True).dtype == np.int32 and (xi + 1).dtype == np.int32
        assert (xi + 1.0).dtype == np.float32
        np.testing.assert_array_equal(np.asarray(xi + 1.0), np.arange(4) + 1.0)
        assert (stagec.device_put(np.ones(3, bool)) + True).dtype == np.bool_


def test_signed_zero_and_nan_scalars():
    x = stagec.device_put(np.array([1.0, -2.0, 3.0], np.float32))
    for _ in range(2):
        np.testing.assert_array_equal(_bits(x * 0.0), _bits(np.float32([1, -2, 3]) * np.float32(0.0)))
        np.testing.assert_array_equal(_bits(x * -0.0), _bits(np.float32([1, -2, 3]) * np.float32(-0.0)))
        assert np.isnan(np.asarray(x + float("nan"))).all()
        np.testing.assert_array_equal(np.asarray(2.5 - x), 2.5 - np.float64([1, -2, 3]))


def test_a_settings_change_is_honoured():
    xi = stagec.device_put(np.arange(3, dtype=np.int32))
    assert (xi * 1.5).dtype == np.float32 and snp.add(1.5, 2.25).dtype == np.float32
    try:
        stagec.config.update("enable_x64", True)
        assert (xi * 1.5).dtype == np.float64  # a weak float with an int array: the default float
        np.testing.assert_array_equal(np.asarray(xi * 1.5), np.arange(3) * 1.5)
        assert snp.add(1.5, 2.25).dtype == np.float64 and float(snp.add(1.5, 2.25)) == 3.75
    finally:
        stagec.config.update("enable_x64", False)
    assert (xi * 1.5).dtype == np.float32 and snp.add(1.5, 2.25).dtype == np.float32


def test_a_settings_change_empties_every_per_signature_cache():
    """The per-signature caches (eager plans, composites' signatures, operand promotions, matmul and reduction
    plans) are emptied by the update itself (`config.SettingsCache`), not on their next use: an entry made under
    the old settings is never found, and holds no kernel meanwhile."""
    from stagec import composites, eager
    from stagec.numpy import _base, _linalg, _reductions
    x, a = stagec.device_put(np.arange(4, dtype=np.float32)), stagec.device_put(np.ones((2, 2), np.float32))
    for _ in range(2):
        x * 2.0, snp.sum(x), a @ a, x // 3.0
    plain = next(c.cell_contents for c in _reductions.sum.__closure__ if isinstance(c.cell_contents, dict))
    caches = [eager._plans, composites._sigs, _base._eager_operands, _linalg._products, plain]
    assert all(len(c) for c in caches)
    old = stagec.config.default_matmul_precision
    stagec.config.update("default_matmul_precision", "highest")
    try:
        assert not any(len(c) for c in caches)
        np.testing.assert_array_equal(np.asarray(a @ a), np.full((2, 2), 2.0))
    finally:
        stagec.config.update("default_matmul_precision", old)

def test_values_match_numpy_across_shapes_and_broadcasts():
    rng = np.random.default_rng(0)
    for shape in [(), (1, 1), (4, 4), (3, 1), (1000,)]:
        a = rng.standard_normal(shape).astype(np.float32)
        x = stagec.device_put(a)
        for _ in range(2):
            np.testing.assert_allclose(np.asarray(snp.exp(x)), np.exp(a.astype(np.float64)), rtol=2e-6, atol=1e-7)
            np.testing.assert_allclose(np.asarray(0.9 * x + 0.1 * x), a.astype(np.float64), rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(np.asarray(x + np.float32(1)), a + np.float64(1), rtol=1e-6)
    y = stagec.device_put(np.ones((4, 4), np.float32))
    col = stagec.device_put(np.arange(4, dtype=np.float32).reshape(4, 1))
    for _ in range(2):  # an operand broadcast by an operation: not cached, still right
        np.testing.assert_array_equal(np.asarray(y * col), np.ones((4, 4)) * np.arange(4).reshape(4, 1))


def test_a_host_result_never_aliases_the_callers_array():
    z = np.array([1 + 2j, 3 - 4j], np.complex64)  # np.real of it is a view
    for _ in range(2):
        r = lax.real(z)
        z2 = z.copy()
        z[0] = 9
        np.testing.assert_array_equal(np.asarray(r), np.real(z2))
        z[:] = z2
    with pytest.raises(ValueError):
        np.asarray(snp.exp(stagec.device_put(np.ones(2, np.float32))))[0] = 1  # results are read-only


def test_a_tiering_change_is_honoured():
    """A scalar broadcast on the host under "exact" is broadcast by its kernel once tiering is "never"."""
    from stagec import eager
    x = stagec.device_put(np.ones((4, 4), np.float32))
    stagec.config.update("eager_tiering", "exact")
    np.testing.assert_array_equal(np.asarray(x + 1.0), np.full((4, 4), 2.0))
    stagec.config.update("eager_tiering", "never")
    eager.clear_cache()
    np.testing.assert_array_equal(np.asarray(x + 1.0), np.full((4, 4), 2.0))
    assert "broadcast_in_dim" in [name for name, _ in eager.kernels()]


def test_a_zero_d_array_operand_is_broadcast_on_each_call():
    """`x * s` with `s` a 0-d array: the signature keeps how `s` is broadcast, never its value (a new `s` of the same
    aval gives its own answer), in either order, promoted or not; NumPy's bits (one multiply per element)."""
    from stagec.numpy import _base
    a = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    x = stagec.device_put(a)
    for v in (2.0, -0.0, 3.5, float("nan")):
        s = stagec.device_put(np.float32(v))
        np.testing.assert_array_equal(_bits(x * s), _bits(a * np.float32(v)))
        np.testing.assert_array_equal(_bits(s - x), _bits(np.float32(v) - a))
        assert (x * s).shape == (3, 4) and (x * s).dtype == np.float32
    # (`s` itself broadcast on each call, with the multiply, as one composite: `_base._broadcasting`)
    assert _base._eager_operands[(lax.mul, False, x.aval, s.aval)] is _base._broadcasting("multiply", lax.mul, False)
    i = stagec.device_put(np.int32(3))  # promoted to float32 first: the full path, the same value
    for _ in range(2):
        np.testing.assert_array_equal(_bits(x * i), _bits(a * np.float32(3)))
    w = stagec.device_put(np.float32(1.5)) * 2.0  # still float32
    np.testing.assert_array_equal(_bits(x + w), _bits(a + np.float32(3.0)))


def test_shortcuts_skip_promotion_after_the_first_call(monkeypatch, tiering):
    """`maximum(x, 0.0)` (a float zero keyed with its sign; with "never" its broadcast is a kernel's, each call),
    `a @ b` of two matrices of one dtype and `sum(x)`: promotion, broadcasting and checks run on a signature's first
    call only; the values stay NumPy's (float64)."""
    from stagec.numpy import _base, _linalg, _reductions
    seen = []
    for mod, name in [(_base, "_promote"), (_linalg, "_promote"), (_reductions, "_prepare")]:
        fn = getattr(mod, name)
        monkeypatch.setattr(mod, name, lambda *a, _fn=fn, _n=name, **k: seen.append(_n) or _fn(*a, **k))
    a = np.array([[1.5, -0.0, 0.0, -2.0], [3.0, -1e-30, 2.0, -0.5]], np.float32)
    b = np.arange(12, dtype=np.float32).reshape(4, 3) - 5.5
    x, y = stagec.device_put(a), stagec.device_put(b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for i in range(3):
        before = len(seen)
        np.testing.assert_array_equal(_bits(snp.maximum(x, 0.0)), _bits(np.maximum(a, np.float32(0)) + np.float32(0)))
        got = np.asarray(snp.maximum(x, -0.0))  # (-0.0 where x is -0.0: IEEE's max of two negative zeros)
        np.testing.assert_array_equal(np.signbit(got), (a < 0) | (a == 0) & np.signbit(a))
        np.testing.assert_allclose(np.asarray(x @ y), a64 @ b64, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(snp.sum(x)), a64.sum(), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(snp.sum(x, axis=1)), a64.sum(1), rtol=1e-6)
        if i:  # (with "never" each zero's broadcast is a composite: traced on the second call, then planned)
            assert seen[before:] == ([] if tiering == "exact" or i == 2 else ["_promote", "_promote"]), seen[before:]


def test_reduction_shortcut_keeps_every_check_and_cast():
    """Calls the shortcut does not serve (keepdims, dtype, `where`, `initial`, narrow ints, weak arrays) and the
    checks it must not skip (an empty max raises on every call): NumPy's values and errors."""
    a = np.arange(12, dtype=np.int8).reshape(3, 4) * 11
    x = stagec.device_put(a)
    f = stagec.device_put(a.astype(np.float32))
    for _ in range(3):
        assert snp.sum(x).dtype == np.int32 and int(snp.sum(x)) == int(a.astype(np.int64).sum())
        np.testing.assert_array_equal(np.asarray(snp.sum(f, axis=0, keepdims=True)), a.sum(0, keepdims=True))
        np.testing.assert_array_equal(np.asarray(snp.sum(f, axis=(0, 1))), a.astype(np.float64).sum())
        np.testing.assert_array_equal(np.asarray(snp.max(f, axis=[1])), a.max(1))
        np.testing.assert_array_equal(np.asarray(snp.sum(f, dtype=np.int32)), a.sum())
        np.testing.assert_array_equal(np.asarray(snp.sum(f, initial=5.0)), a.sum() + 5)
        np.testing.assert_array_equal(np.asarray(snp.sum(f, where=a > 20)), a[a > 20].sum())
        with pytest.raises(ValueError, match="zero-size"):
            snp.max(stagec.device_put(np.zeros((0, 3), np.float32)), axis=0)
    try:
        stagec.config.update("enable_x64", True)
        assert snp.sum(x).dtype == np.int64  # (a setting changed: planned again)
    finally:
        stagec.config.update("enable_x64", False)
    assert snp.sum(x).dtype == np.int32


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.bool_, np.complex64])
def test_bound_reduction_rules_give_the_rules_values(dtype):
    """`Primitive.def_host`'s `bound` form of the reductions (built once per signature): the rule's bits."""
    from stagec.core import ShapedArray
    from stagec.primitives import reductions as red
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((3, 4, 5)) * 50).astype(dtype)
    for prim in (red.reduce_sum_p, red.reduce_prod_p, red.reduce_max_p, red.reduce_min_p, red.reduce_and_p,
                 red.reduce_or_p):
        for axes in [(), (0,), (2,), (0, 2), (0, 1, 2)]:
            avals, params = [ShapedArray(x.shape, x.dtype)], {"axes": axes}
            if not prim.hosts(avals, params):
                continue
            with np.errstate(all="ignore"):
                want = np.asarray(prim.host(x, axes=axes))
                got = np.asarray(prim.host_bound(avals, params)(x))
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (prim, axes)
            oracle = {red.reduce_max_p: np.max, red.reduce_min_p: np.min, red.reduce_sum_p: np.sum,
                      red.reduce_prod_p: np.prod}.get(prim)
            if oracle is not None and dtype not in (np.bool_,):  # (independent of the rules: NumPy in float64/int64)
                wide = x.astype(np.complex128 if dtype == np.complex64 else np.float64 if x.dtype.kind == "f"
                                else np.int64)
                with np.errstate(all="ignore"):
                    ref = oracle(wide, axis=axes).astype(want.dtype) if axes else wide.astype(want.dtype)
                eps = 2e-6 if dtype in (np.float32, np.complex64) else 1e-12
                cancel = eps * np.sum(np.abs(wide)) if prim is red.reduce_sum_p else 0  # (a float sum's rounding)
                ok = np.isfinite(ref)  # (a complex64 product past its range is NaN, as NumPy's in complex64)
                np.testing.assert_allclose(np.asarray(got)[ok], np.asarray(ref)[ok], rtol=eps, atol=cancel,
                                           err_msg=f"{prim} {axes}")


def test_matmul_and_reductions_run_their_plan_directly(monkeypatch):
    """After a signature's first call, `a @ b` and `sum(x)` call the runtime's plan of their primitive
    (`core.eager_plan`), not `eager.apply` through `bind`; a settings change plans them again."""
    from stagec import core
    applied = []
    impl = core._eager_impl
    monkeypatch.setattr(core, "_eager_impl", lambda *a: applied.append(a[0].name) or impl(*a))
    a = np.arange(20, dtype=np.float32).reshape(4, 5) / 7
    b = np.arange(15, dtype=np.float32).reshape(5, 3) - 7
    x, y = stagec.device_put(a), stagec.device_put(b)
    for i in range(3):
        np.testing.assert_allclose(np.asarray(x @ y), a.astype(np.float64) @ b, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(snp.sum(x, axis=0)), a.astype(np.float64).sum(0), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(snp.max(x)), a.max())
        if i == 0:
            applied.clear()
    assert applied == []
    try:
        stagec.config.update("default_matmul_precision", "highest")
        np.testing.assert_allclose(np.asarray(x @ y), a.astype(np.float64) @ b, rtol=1e-6)
        from stagec.numpy import _linalg
        assert next(iter(_linalg._products.values()))[1]["precision"] is not None
    finally:
        stagec.config.update("default_matmul_precision", None)


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_, np.complex64])
def test_bound_pad_rule_gives_the_rules_values(dtype):
    from stagec.core import ShapedArray
    from stagec.primitives import structural as st
    x = (np.arange(12).reshape(3, 4) - 5).astype(dtype)
    v = np.array(7, dtype)
    for low, high, interior in [((1, 1), (1, 1), (0, 0)), ((0, 2), (3, 0), (0, 0)), ((0, 0), (0, 0), (0, 0)),
                                ((-1, 1), (1, -2), (0, 0)), ((1, 0), (0, 1), (1, 2))]:
        params = dict(low=low, high=high, interior=interior)
        avals = [ShapedArray(x.shape, x.dtype), ShapedArray((), x.dtype)]
        want = np.asarray(st.pad_p.host(x, v, **params))
        got = np.asarray(st.pad_p.host_bound(avals, params)(x, v))
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), params
        if min(low + high) >= 0 and not any(interior):  # (NumPy's pad)
            np.testing.assert_array_equal(got, np.pad(x, list(zip(low, high)), constant_values=v))
