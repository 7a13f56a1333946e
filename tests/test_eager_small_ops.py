"""Eager composites on small arrays (`stagec.composites`): a NumPy-rule `select` whose mask is uniform gives its
taken operand, and the steps only the other operand reads do not run (`_regions`); a kernel on constants alone runs
once, when the signature is planned (`_fold_kernel`). Both keep the bits of the op-by-op call (the first), for
masks all true, all false and mixed, and the values agree with float64 oracles."""
from __future__ import annotations

import math

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import backend, composites
from stagec.scipy import special as sps


@pytest.fixture(autouse=True)
def exact():
    old = stagec.config.eager_tiering
    stagec.config.update("eager_tiering", "exact")
    yield
    stagec.wait_for_compiles()
    stagec.config.update("eager_tiering", old)


@pytest.fixture
def launches(monkeypatch):
    """The names of the kernels launched (`Executable.call`: small calls run inline), in order."""
    names = []
    call = backend.Executable.call

    def counted(self, bvs):
        names.append(self.name)
        return call(self, bvs)
    monkeypatch.setattr(backend.Executable, "call", counted)
    return names


def bits(x):
    x = np.asarray(x)
    return x.dtype, x.shape, x.tobytes()


def later_calls(fn, *args):
    """`fn(*args)`'s first (op-by-op) result, checked to have the bits of its later calls (the composite's plan,
    the first call checking each rule, the next ones with the selects' regions)."""
    first = np.asarray(fn(*args))
    stagec.wait_for_compiles()
    for _ in range(3):
        assert bits(fn(*args)) == bits(first), fn
    return first


def put(x):
    return stagec.device_put(np.asarray(x))


SUB = np.float32(1e-40)  # (a subnormal: IREE's kernels flush it, NumPy's rules keep it)
RNG = np.random.default_rng(0)
NORMAL = RNG.standard_normal((4, 4)).astype(np.float32)
NORMAL2 = RNG.standard_normal((4, 4)).astype(np.float32)


@pytest.mark.parametrize("name, fn, args", [
    # masks uniform one way, the other, and mixed (edges in some elements)
    ("hypot plain", snp.hypot, (NORMAL, NORMAL2)),
    ("hypot infs", snp.hypot, (np.full((4, 4), np.inf, np.float32), NORMAL2)),
    ("hypot zeros", snp.hypot, (np.zeros((4, 4), np.float32), -np.zeros((4, 4), np.float32))),
    ("hypot mixed", snp.hypot, (np.array([[0, np.inf, np.nan, SUB]] * 4, np.float32), NORMAL2)),
    ("arctan2 plain", snp.arctan2, (NORMAL, NORMAL2)),
    ("arctan2 on the axis", snp.arctan2, (-np.zeros((4, 4), np.float32), NORMAL2)),
    ("arctan2 infs", snp.arctan2, (np.full((4, 4), -np.inf, np.float32), np.full((4, 4), np.inf, np.float32))),
    ("arctan2 mixed", snp.arctan2, (np.array([[0, -0.0, np.inf, SUB]] * 4, np.float32), NORMAL2)),
    ("nan_to_num plain", snp.nan_to_num, (NORMAL,)),
    ("nan_to_num all NaN", snp.nan_to_num, (np.full((4, 4), np.nan, np.float32),)),
    ("nan_to_num mixed", snp.nan_to_num, (np.array([[np.nan, np.inf, -np.inf, 1]] * 4, np.float32),)),
    ("silu plain", stagec.nn.silu, (NORMAL,)),
    ("silu far negative", stagec.nn.silu, (np.full((4, 4), -200, np.float32),)),
    ("selu", stagec.nn.selu, (NORMAL,)),
    ("selu positive", stagec.nn.selu, (np.abs(NORMAL) + 1,)),
    ("gammainc small", sps.gammainc, (np.abs(NORMAL), np.abs(NORMAL2))),
    ("gammainc Temme's", sps.gammainc, (np.full((4, 4), 2e5, np.float32), np.full((4, 4), 2.001e5, np.float32))),
    ("gammainc mixed", sps.gammainc, (np.array([[0.5, 3, 2e5, 40]] * 4, np.float32),
                                      np.array([[0.1, 9, 1.999e5, 41]] * 4, np.float32))),
    ("gammaincc mixed", sps.gammaincc, (np.array([[0.5, 3, 2e5, 40]] * 4, np.float32),
                                        np.array([[0.1, 9, 1.999e5, 41]] * 4, np.float32))),
    ("median", snp.median, (NORMAL,)),
    ("median NaN", snp.median, (np.array([[np.nan, 1, 2, 3]] * 4, np.float32),)),
])
def test_later_calls_keep_the_first_calls_bits(name, fn, args):
    later_calls(fn, *[put(a) for a in args])


def test_values_against_float64():
    """The composites above against float64 NumPy / the series' float64 values (an oracle, not themselves)."""
    x, y = NORMAL, NORMAL2
    np.testing.assert_allclose(later_calls(snp.hypot, put(x), put(y)), np.hypot(x.astype(np.float64), y), rtol=2e-7)
    np.testing.assert_allclose(later_calls(snp.arctan2, put(x), put(y)), np.arctan2(x.astype(np.float64), y),
                               rtol=1e-6)
    np.testing.assert_allclose(later_calls(snp.median, put(x)), np.median(x.astype(np.float64)), rtol=1e-7)
    a, z = np.abs(x).astype(np.float64), np.abs(y).astype(np.float64)
    want = np.vectorize(_gammainc64)(a, z)
    np.testing.assert_allclose(later_calls(sps.gammainc, put(a.astype(np.float32)), put(z.astype(np.float32))),
                               want, rtol=2e-5, atol=1e-7)


def _gammainc64(a: float, x: float) -> float:
    """P(a, x) in float64: the series (x <= a + 1) or 1 - the continued fraction (Numerical Recipes)."""
    if x <= a + 1:
        term = total = 1 / a
        n = 0
        while abs(term) > 1e-17 * abs(total):
            n += 1
            term *= x / (a + n)
            total += term
        return total * math.exp(a * math.log(x) - x - math.lgamma(a))
    b, c, d = x + 1 - a, 1 / 1e-300, 1 / (x + 1 - a)
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        c = b + an / c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-17:
            break
    return 1 - h * math.exp(a * math.log(x) - x - math.lgamma(a))


@stagec.numpy._base._composite
def _tail_branch(a, x):
    """A select one of whose operands alone reads the erf and erfc kernels (as gammainc's Temme branch does)."""
    return snp.where(a >= 1e5, stagec.lax.erf(x / a) + stagec.lax.erfc(x), x * 2 + a)


@pytest.mark.cpu_only  # (NumPy rules below a size: the CPU backend's tiering)
def test_an_untaken_operands_kernels_do_not_run(launches):
    """An operand's kernels run op by op on any input; in a later call only where some element takes it."""
    a, x = put(np.abs(NORMAL) + 0.1), put(np.abs(NORMAL2) + 0.1)
    _tail_branch(a, x)  # (op by op: every primitive)
    assert {"eager_erf", "eager_erfc"} <= set(launches), launches
    np.testing.assert_array_equal(later_calls(_tail_branch, a, x), np.asarray(x) * 2 + np.asarray(a))
    del launches[:]
    _tail_branch(a, x)
    assert not {"eager_erf", "eager_erfc"} & set(launches), launches  # (the rest is NumPy rules: no launch)
    big = [put(np.array([[2e5, 3e5, 2, 4e5]] * 4, np.float32)), put(np.array([[1.9e5, 3.1e5, 2.1e5, 4e5]] * 4, np.float32))]
    later_calls(_tail_branch, *big)
    del launches[:]
    _tail_branch(*big)
    assert {"eager_erf", "eager_erfc"} & set(launches), launches


def test_a_uniform_select_returns_its_operand_at_size():
    """On 100K floats a uniform mask's select costs a count, not a pass selecting bits: the result is the
    operand's (`silu`'s overflow guards, `hypot`'s infinity and zero tests)."""
    v = RNG.standard_normal(100_000).astype(np.float32)
    w = RNG.standard_normal(100_000).astype(np.float32)
    got = later_calls(snp.hypot, put(v), put(w))
    np.testing.assert_allclose(got, np.hypot(v.astype(np.float64), w), rtol=2e-7)
    got = later_calls(stagec.nn.silu, put(v))
    want = v.astype(np.float64) / (1 + np.exp(-v.astype(np.float64)))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-30)


@pytest.mark.cpu_only  # (NumPy rules below a size: the CPU backend's tiering)
def test_a_kernel_on_constants_runs_once(launches):
    """`logspace`'s powers of its constants (`pow` has no NumPy rule: a kernel on constants alone) run when the
    signature is planned: a later call launches no kernel, where the first, op by op, launched the power. quantile's
    index conversions were such kernels until float-to-integer conversion took its NumPy rule: a later quantile
    launches only its gathers of the sorted values, or nothing."""
    f = lambda: snp.logspace(0.0, 3.0, 8)  # noqa: E731
    folded = composites.stats["folded_kernels"]
    f()
    first = list(launches)
    got = later_calls(f)
    assert composites.stats["folded_kernels"] > folded
    np.testing.assert_allclose(got, np.logspace(0.0, 3.0, 8), rtol=1e-6)
    del launches[:]
    f()
    assert first and not launches, (first, launches)
    x = put(RNG.standard_normal((4, 5)).astype(np.float32))
    q = lambda v: snp.quantile(v, [0.25, 0.5])  # noqa: E731
    got = later_calls(q, x)
    np.testing.assert_allclose(got, np.quantile(np.asarray(x).astype(np.float64), [0.25, 0.5]), rtol=1e-6)
    del launches[:]
    q(x)
    assert set(launches) <= {"eager_gather"}, launches


# float32 bit patterns a sort may meet: signalling and quiet NaNs of both signs and payloads, subnormals, the
# smallest normals, zeros, infinities
SPECIAL32 = np.array([0x7f800001, 0xff800001, 0x7fc00001, 0x7fc00000, 0xffc00000, 0x7fbfffff, 0x00000001, 0x80000001,
                      0x007fffff, 0x807fffff, 0x00800000, 0x80800000, 0, 0x80000000, 0x7f800000, 0xff800000,
                      0x3f800000, 0xbf800000], np.uint32).view(np.float32)
SPECIAL64 = np.array([0x7ff0000000000001, 0xfff0000000000001, 0x7ff8000000000001, 0x7ff8000000000000, 1,
                      0x8000000000000001, 0x000fffffffffffff, 0x0010000000000000, 0, 0x8000000000000000,
                      0x7ff0000000000000, 0xfff0000000000000, 0x3ff0000000000000], np.uint64).view(np.float64)


def _sort_operand(rng, dtype, shape):
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 4, shape).astype(dtype)  # (ties)
    x = rng.standard_normal(shape).astype(dtype)
    if rng.random() < 0.4:
        x = np.round(x).astype(dtype)  # (ties, zeros)
    special = SPECIAL32 if dtype == np.float32 else SPECIAL64
    mask = rng.random(shape) < rng.choice([0.0, 0.3, 0.9])
    x[mask] = rng.choice(special, int(mask.sum()))
    return x


def test_the_sort_rule_gives_the_kernels_bits(x64):
    """`sort`'s NumPy rule against its compiled CPU kernel (eager_tiering "never"), bit for bit: NaN last (payloads
    kept, float32 signalling ones quieted), -0.0 tying 0.0 in order, subnormals compared as zeros (float32 ones
    returned as signed zeros, float64 ones with their bits), keys lexicographic, payloads moved along."""
    from stagec import lax
    from stagec.core import aval_of
    from stagec.primitives.reductions import sort_p
    if stagec.default_backend() != "cpu":
        pytest.skip("the rule gives the CPU kernel's bits")
    from stagec.passes.legalize import SORT_MIN_LENGTH
    rng = np.random.default_rng(7)
    checked = 0
    for case in range(40):
        shape = (int(rng.integers(2, 9)),) if case % 2 else (int(rng.integers(1, 5)), int(rng.integers(2, 7)))
        if case % 8 == 0:  # (rows the kernel sorts with NumPy: float64 keys take the kernel)
            shape = (2, SORT_MIN_LENGTH + case % 3)
        kinds = [np.float32, np.float32, np.float64, np.int32, np.bool_, np.uint8]
        dtypes = [kinds[i] for i in rng.integers(0, len(kinds), rng.integers(1, 4))]
        xs = [_sort_operand(rng, d, shape) for d in dtypes]
        params = dict(dimension=int(rng.integers(0, len(shape))), num_keys=int(rng.integers(1, len(xs) + 1)),
                      is_stable=True)
        long_f64 = shape[params["dimension"]] >= SORT_MIN_LENGTH and np.float64 in dtypes[:params["num_keys"]]
        assert sort_p.hosts([aval_of(x) for x in xs], params) == (not long_f64)
        if long_f64:
            continue
        got = sort_p.host(*xs, **params)
        stagec.config.update("eager_tiering", "never")
        want = lax.sort([put(x) for x in xs], **params)
        stagec.config.update("eager_tiering", "exact")
        for g, w in zip(got, want):
            assert bits(g) == bits(w), (case, xs, params)
        # op by op (the rule below the host threshold) and in a composite, the same bits
        for g, w in zip(lax.sort([put(x) for x in xs], **params), want):
            assert bits(g) == bits(w), (case, xs, params)
        checked += 1
    assert checked >= 30
    f32 = aval_of(np.zeros(4, np.float32))
    assert not sort_p.hosts([f32], dict(dimension=0, num_keys=1, is_stable=False))  # (ties in another order)


@pytest.mark.parametrize("x", [NORMAL, np.round(NORMAL), np.array([[SUB, -SUB, 0, -0.0]] * 4, np.float32),
                               np.array([[np.inf, -np.inf, 1, np.nan]] * 4, np.float32),
                               np.array([[2, 1, -SUB, 3]] * 3 + [[np.inf, -0.0, 0.0, -np.inf]], np.float32)])
def test_sort_median_keep_their_bits_and_values(x, launches):
    """np.sort / argsort / median on small float32 arrays: the composites' later calls give the first call's bits,
    no kernel runs, and the values are NumPy's (subnormals ordered and kept, bit for bit)."""
    for fn, want in [(snp.sort, np.sort(x, kind="stable")), (lambda a: snp.sort(a, axis=0), np.sort(x, axis=0, kind="stable")),
                     (snp.argsort, np.argsort(x, kind="stable").astype(np.int32))]:
        got = later_calls(fn, put(x))
        assert bits(got) == bits(want)
    np.testing.assert_allclose(later_calls(snp.median, put(x)), np.median(x.astype(np.float64)), rtol=1e-7, atol=0)
    del launches[:]
    snp.median(put(x)), snp.sort(put(x)), snp.argsort(put(x))
    assert not launches, launches


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_logistic_rule_selects_by_its_numerator(dtype, x64):
    """`logistic`'s NumPy rule divides once (numerator fmax(e, x >= 0)): the bits of selecting between 1 / d and
    e / d, NaN payloads and signs, zeros and infinities included, and float64's values within an ulp or two."""
    from stagec.primitives.elementwise import logistic_p
    rng = np.random.default_rng(5)
    special = SPECIAL32 if dtype == np.float32 else SPECIAL64
    for size in (1, 16, 1000, 100_000):
        x = (rng.standard_normal(size) * rng.choice([1, 30])).astype(dtype)
        mask = rng.random(size) < 0.2
        x[mask] = rng.choice(special, int(mask.sum()))
        with np.errstate(all="ignore"):
            e = np.exp(-np.abs(x))
            d = 1 + e
            want = np.where(x >= 0, 1 / d, e / d)
        assert bits(logistic_p.host(x)) == bits(want)
        finite = np.isfinite(x)
        exact = 1 / (1 + np.exp(-x[finite].astype(np.longdouble)))
        np.testing.assert_allclose(logistic_p.host(x)[finite], exact.astype(np.float64), rtol=4 * np.finfo(dtype).eps,
                                   atol=np.finfo(dtype).tiny)
    for v in special:  # (0-d: NumPy scalars inside the rule)
        with np.errstate(all="ignore"):
            want = np.where(v >= 0, 1 / (1 + np.exp(-np.abs(v))), np.exp(-np.abs(v)) / (1 + np.exp(-np.abs(v))))
        assert bits(logistic_p.host(np.array(v, dtype))) == bits(want)
    x = rng.standard_normal((4, 4)).astype(np.float32)
    np.testing.assert_allclose(later_calls(stagec.nn.sigmoid, put(x)), 1 / (1 + np.exp(-x.astype(np.float64))),
                               rtol=4e-7)


def test_arctan2_is_float64s_rounded_once_eager_and_jitted(launches):
    """float32 arctan2 on a small array is NumPy's rule computed in float64 and rounded once (no kernel launched),
    and the jitted kernel (mathlib's fdlibm atan2, no edge-case selects around it) gives the same bits: both are
    float64 NumPy's rounded, over signs, axes, infinities and NaN (operands and results normal: the CPU kernel
    flushes subnormals). Op by op, glibc's float32 atan2f gave other bits for ~17% of such pairs."""
    n = 4096
    y = (RNG.choice([-1, 1], n) * 2.0 ** RNG.uniform(-40, 40, n)).astype(np.float32)
    x = (RNG.choice([-1, 1], n) * 2.0 ** RNG.uniform(-40, 40, n)).astype(np.float32)
    edges = np.array([0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.5], np.float32)
    ey, ex = (a.ravel() for a in np.meshgrid(edges, edges))
    y[:ey.size], x[:ex.size] = ey, ex
    want = np.arctan2(y.astype(np.float64), x.astype(np.float64)).astype(np.float32)
    assert np.all((np.abs(want) >= np.finfo(np.float32).tiny) | (want == 0) | np.isnan(want))  # (no subnormal)
    eager = np.asarray(snp.arctan2(put(y), put(x)))
    assert not launches
    jitted = np.asarray(stagec.jit(snp.arctan2)(y, x))
    for got in (eager, jitted):
        assert bits(got) == bits(want), np.nonzero(got.view(np.int32) != want.view(np.int32))
