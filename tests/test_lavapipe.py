"""lavapipe (Mesa's Vulkan on the CPU, CI's Vulkan): where IREE's SPIR-V gave it wrong values, silently.
- Long loops: lavapipe ends a shader's loop nest after 65535 iterations and goes on. `long-reductions-in-rows` and
  `long-contractions` (the Vulkan pipeline) keep reductions and products under it; the driver finds any other long
  loop in IREE's SPIR-V and raises (stagec/compiler/loops.py).
- An outer product fused with the product feeding it (`outer-product-operands-apart`).
- Grouped convolutions (`grouped-convs-apart`); float64 products of gathered operands (`gathered-f64-operands-apart`);
  int64 constants of several values (`int64-constants-from-int32`); products of unsigned operands
  (`converted-product-operands-apart`); a widened value read transposed twice (`widening-converts-apart`); sorts
  of int64 slices (`int64-sort-slices-apart`) and 64-bit population counts (`popcnt64-in-halves`), compile failures.
(FFTs: tests/test_fft.py::test_vulkan_ffts.)"""
from __future__ import annotations

import math

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec.compiler import loops

lavapipe = pytest.mark.skipif(loops.loop_limit("vulkan") is None, reason="no lavapipe (Mesa's Vulkan on the CPU)")
RNG = np.random.default_rng(7)


def _vk(f):
    return stagec.jit(f, backend="vulkan")


@lavapipe
def test_long_reductions():
    """Reductions of 65536, 70001 and 300000 elements (one module: each reduction's rewrite is its own)."""
    args, want = [], []
    for n in (65536, 70001, 300000):
        x = RNG.standard_normal(n).astype(np.float32)
        x[-1] = 50.0  # (the last element: the one a loop cut short leaves out)
        m = RNG.standard_normal((3, n)).astype(np.float32)
        args += [x, m]
        x64, m64 = x.astype(np.float64), m.astype(np.float64)
        want += [(x64.sum(), 50.0, n - 1, m64.sum(1), m64.sum(), x64.var(), np.linalg.norm(x64),
                  (x64 - x64.mean()).min(), np.argmin(m, axis=1))]
    got = _vk(lambda *a: [(snp.sum(x), snp.max(x), snp.argmax(x), snp.sum(m, 1), snp.sum(m), snp.var(x),
                           snp.linalg.norm(x), snp.min(x - snp.mean(x)), snp.argmin(m, axis=1))
                          for x, m in zip(a[::2], a[1::2])])(*args)
    assert len(got) == 3
    for gs, ws in zip(got, want):
        for g, w in zip(gs, ws):
            np.testing.assert_allclose(np.asarray(g), w, rtol=2e-5, atol=2e-3)


@lavapipe
def test_long_dots():
    x = RNG.standard_normal(70000).astype(np.float32)
    a, b = RNG.standard_normal((3, 70000)).astype(np.float32), RNG.standard_normal((70000, 2)).astype(np.float32)
    got = _vk(lambda x, a, b: (x @ x, a @ b))(x, a, b)
    np.testing.assert_allclose(np.asarray(got[0]), x.astype(np.float64) @ x, rtol=2e-5)
    np.testing.assert_allclose(np.asarray(got[1]), a.astype(np.float64) @ b, rtol=1e-4, atol=2e-2)


@lavapipe
@pytest.mark.parametrize("what", ["sort of 300", "cumsum of 70000"])
def test_other_long_loops_are_a_clear_error(what):
    f, n = (snp.sort, 300) if what.startswith("sort") else (snp.cumsum, 70000)
    with pytest.raises(NotImplementedError, match="lavapipe .* ends a shader's loops after 65535 iterations"):
        _vk(f)(RNG.standard_normal(n).astype(np.float32))


@lavapipe
def test_short_loops_still_run():
    x = RNG.standard_normal(256).astype(np.float32)
    y = RNG.standard_normal(65535).astype(np.float32)
    s, c = _vk(lambda x, y: (snp.sort(x), snp.cumsum(y)))(x, y)  # (one module)
    np.testing.assert_array_equal(np.asarray(s), np.sort(x))
    np.testing.assert_allclose(np.asarray(c), np.cumsum(y.astype(np.float64)), atol=5e-2)


NEST = """
    %cst0_i32 = spirv.Constant 0 : i32
    %cst1_i32 = spirv.Constant 1 : i32
    %cst4_i32 = spirv.Constant 4 : i32
    %cst300_i32 = spirv.Constant 300 : i32
    %cst299_i32 = spirv.Constant 299 : i32
    spirv.mlir.loop {
      spirv.Branch ^bb1(%cst0_i32 : i32)
    ^bb1(%0: i32):  // 2 preds: ^bb0, ^bb2
      %1 = spirv.SLessThan %0, %cst300_i32 : i32
      spirv.BranchConditional %1, ^bb2, ^bb3
    ^bb2:  // pred: ^bb1
      spirv.mlir.loop {
        spirv.Branch ^bb1(%cst0_i32 : i32) loc(unknown)
      ^bb1(%3: i32 loc(unknown)):  // 2 preds: ^bb0, ^bb2
        %4 = spirv.SLessThan %3, %cst299_i32 : i32
        spirv.BranchConditional %4, ^bb2, ^bb3
      ^bb2:  // pred: ^bb1
        %5 = spirv.IAdd %3, %cst1_i32 : i32
        spirv.Branch ^bb1(%5 : i32)
      ^bb3:  // pred: ^bb1
        spirv.mlir.merge
      }
      %2 = spirv.IAdd %0, %cst1_i32 : i32
      spirv.Branch ^bb1(%2 : i32)
    ^bb3:  // pred: ^bb1
      spirv.mlir.merge
    }
    spirv.mlir.loop {
      spirv.Branch ^bb1(%tid : i32)
    ^bb1(%6: i32):  // 2 preds: ^bb0, ^bb2
      %7 = spirv.SLessThan %6, %cst300_i32 : i32
      spirv.BranchConditional %7, ^bb2, ^bb3
    ^bb2:  // pred: ^bb1
      %8 = spirv.IAdd %6, %tid : i32
      %9 = spirv.IAdd %6, %cst4_i32 : i32
      spirv.Branch ^bb1(%9 : i32)
    ^bb3:  // pred: ^bb1
      spirv.mlir.merge
    }
"""


def test_nest_iterations_multiplies_inner_loops_and_reads_steps():
    # a sort's nest (300 x 299) and a strided loop (from a thread's own start, by 4: at most 75)
    assert loops.nest_iterations(NEST) == [300 * 299, 75]


@pytest.mark.skipif(not loops.device_names("vulkan"), reason="no Vulkan device")
def test_householder_qr():
    """An outer product of a product (`u @ (u.T @ R)`, Householder's rank-one update): IREE 3.13 fused the two into
    one dispatch whose SPIR-V gave wrong values on lavapipe from 9 x 9 (1.9 off; QR of 16 x 16 NaN), silently.
    `outer-product-operands-apart` reads the inner product through a barrier."""
    for shape in ((9, 9), (64, 48), (48, 64)):
        m = RNG.standard_normal(shape).astype(np.float32)
        u = RNG.standard_normal((shape[0], 1)).astype(np.float32)
        (q, r), upd = _vk(lambda m, u: (snp.linalg.qr(m), u @ (u.T @ m)))(m, u)
        q, r = np.asarray(q, np.float64), np.asarray(r, np.float64)
        np.testing.assert_allclose(q @ r, m, atol=2e-5)
        np.testing.assert_allclose(q.T @ q, np.eye(q.shape[1]), atol=5e-6)
        np.testing.assert_allclose(np.asarray(upd), u.astype(np.float64) @ (u.T @ m.astype(np.float64)), rtol=1e-5,
                                   atol=1e-4)


def _conv_oracle(x, w, pad, fg=1, bg=1):
    """float64 NumPy: NCHW by OIHW, stride 1, `fg` feature groups or `bg` batch groups."""
    win = np.lib.stride_tricks.sliding_window_view(np.pad(x.astype(np.float64), [(0, 0), (0, 0), *pad]),
                                                   w.shape[2:], axis=(2, 3))  # N C Ho Wo kh kw
    n, o = fg * bg, w.shape[0] // (fg * bg)
    xs = np.split(win, fg, axis=1) if fg > 1 else np.split(win, bg, axis=0)
    return np.concatenate([np.einsum("nchwij,ocij->nohw", xg, w[g * o:(g + 1) * o].astype(np.float64))
                           for g, xg in enumerate(xs[:n])], axis=1)


@pytest.mark.skipif(not loops.device_names("vulkan"), reason="no Vulkan device")
def test_grouped_convolutions():
    """A grouped convolution of 2+ input features a group (and a batch of 2 or 2+ output features a group), and a
    batch-grouped one: IREE 3.13's SPIR-V wrote zeros or wrong values on lavapipe, silently (`vmap` of a convolution
    over both operands is grouped). `grouped-convs-apart` computes one convolution a group; depthwise ones (one
    input feature a group) were right. (input, output) features a group: (2, 3), (3, 2), (1, 2), (2, 1), all four
    in one module."""
    f32 = lambda *shape: RNG.standard_normal(shape).astype(np.float32)
    conv = stagec.lax.conv_general_dilated
    args, want = [], []
    same = [(1, 1), (1, 1)]
    for ci, co in [(2, 3), (3, 2), (1, 2), (2, 1)]:
        x, w, xb, wb, xv, wv = f32(2, 3 * ci, 6, 5), f32(3 * co, ci, 3, 3), f32(4, ci, 6, 6), f32(2 * co, ci, 3, 3), \
            f32(2, 1, ci, 5, 6), f32(2, co, ci, 3, 3)
        args.append((x, w, xb, wb, xv, wv))
        want.append((_conv_oracle(x, w, same, fg=3), _conv_oracle(xb, wb, [(0, 0)] * 2, bg=2),
                     np.stack([_conv_oracle(xv[i], wv[i], same) for i in range(2)])))
    got = _vk(lambda cases: [(conv(a[0], a[1], (1, 1), "SAME", feature_group_count=3),
                              conv(a[2], a[3], (1, 1), "VALID", batch_group_count=2),
                              stagec.vmap(lambda x, w: conv(x, w, (1, 1), "SAME"))(a[4], a[5])) for a in cases])(args)
    assert len(got) == 4
    for gs, ws in zip(got, want):
        for g, wt in zip(gs, ws):
            np.testing.assert_allclose(np.asarray(g), wt, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not loops.device_names("vulkan"), reason="no Vulkan device")
def test_float64_products_of_gathered_operands(x64):
    """A float64 product of a gathered operand (transposed, or on the right): IREE 3.13 fused the gather into the
    product's dispatch, and lavapipe gave wrong values (pinv and lstsq of a batch, whose SVD sorts its columns by a
    gather, 9.95 off). `gathered-f64-operands-apart` reads the gathered operand through a barrier."""
    m = RNG.standard_normal((2, 9, 9))
    idx = np.stack([RNG.permutation(9) for _ in range(2)]).astype(np.int32)
    a = RNG.standard_normal((2, 6, 3))
    got = _vk(lambda m, i, a: (snp.swapaxes(snp.take_along_axis(m, i[:, None, :], axis=2), -1, -2) @ m,
                               m @ snp.take_along_axis(m, i[:, :, None], axis=1), snp.linalg.pinv(a)))(m, idx, a)
    g = np.take_along_axis(m, idx[:, None, :], axis=2)
    want = (np.swapaxes(g, -1, -2) @ m, m @ np.take_along_axis(m, idx[:, :, None], axis=1), np.linalg.pinv(a))
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.float64
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12)


@pytest.mark.skipif(not loops.device_names("vulkan"), reason="no Vulkan device")
def test_int64_division_is_a_clear_error_or_right(x64):
    """int64 `//` and `%` (and randint over more than 2^32 values): IREE 3.13's SPIR-V for the portable target cannot
    lower them ("failed to legalize operation 'arith.remui'"); the error names the function and what to use instead."""
    a, b = np.array([7, -9, 2 ** 40 + 3, -(2 ** 41)], np.int64), np.array([2, 4, 5, 7], np.int64)
    for f, want in ((lambda a, b: a // b, a // b), (lambda a, b: a % b, a % b)):
        try:
            got = _vk(f)(a, b)
        except NotImplementedError as e:
            assert "function 'jit_lambda'" in str(e) and "no 64-bit integer division" in str(e) and "cpu" in str(e)
            continue
        np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.skipif(not loops.device_names("vulkan"), reason="no Vulkan device")
def test_int64_constants_of_several_values(x64):
    """`x[i, j]` of int64 indices clamps each coordinate to its own bound: an int64 constant of two values, which
    IREE 3.13's SPIR-V for the portable target could not materialize (a CompileError), nor a concatenation of int64
    constants (`histogramdd`). `int64-constants-from-int32` builds them from int32."""
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    idx = np.array([[0, 0], [3, 5], [5, 1], [-2, 7], [2 ** 40, 2]], np.int64)
    pair = lambda: snp.concatenate([np.array([-1], np.int64), np.array([1], np.int64)])  # noqa: E731 (unfolded)
    got = _vk(lambda x, i: (x[i[:, 0], i[:, 1]], i * np.array([3, -5], np.int64), i * pair()))(x, idx)  # (one module)
    lo = np.clip(np.where(idx < 0, idx + [4, 6], idx), 0, [3, 5])
    np.testing.assert_array_equal(np.asarray(got[0]), x[lo[:, 0], lo[:, 1]])
    np.testing.assert_array_equal(np.asarray(got[1]), idx * [3, -5])
    np.testing.assert_array_equal(np.asarray(got[2]), idx * [-1, 1])


@pytest.mark.skipif(not loops.device_names("vulkan"), reason="no Vulkan device")
def test_products_of_converted_operands_every_call():
    """`dot(uint8_images, W)` (and bool, uint16, int8, int16; float16 to int32): with the conversion fused into the
    product's dispatch, lavapipe gave wrong values now and then (2 calls in 20, off by up to 300; the first one or
    two calls of int8 and int16 to float32; a convolution of a uint8 image too). `converted-product-operands-apart`
    converts apart."""
    w = RNG.standard_normal((16, 8)).astype(np.float32)
    us = (RNG.integers(128, 256, (4, 16)).astype(np.uint8), RNG.random((4, 16)) < 0.5,
          RNG.integers(0, 2 ** 16, (4, 16)).astype(np.uint16))
    a8, a16 = RNG.integers(-128, 128, (4, 16)).astype(np.int8), RNG.integers(-2 ** 15, 2 ** 15, (4, 16)).astype(np.int16)
    h = RNG.integers(-100, 100, (6, 8)).astype(np.float16)
    img, k = RNG.integers(128, 256, (1, 4, 16, 1)).astype(np.uint8), RNG.standard_normal((3, 3, 1, 2))
    conv = lambda img, k: stagec.lax.conv_general_dilated(img.astype(snp.float32), k, (1, 1), "VALID",  # noqa: E731
                                                          dimension_numbers=("NHWC", "HWIO", "NHWC"))
    f = _vk(lambda us, a8, a16, h, w, img, k: ([snp.dot(a, w) for a in us], snp.dot(a8, w), snp.dot(a16, w),
                                               (lambda x: x[:, :4] @ x[:4, :])(h.astype(np.int32)),
                                               conv(img, k)))  # (one module: each product converts apart in it)
    want = ([a.astype(np.float64) @ w for a in us], a8.astype(np.float64) @ w, a16.astype(np.float64) @ w,
            h[:, :4].astype(np.int64) @ h[:4, :].astype(np.int64),
            sum(img[0, i:i + 2, j:j + 14, 0, None].astype(np.float64) * k[i, j, 0] for i in range(3) for j in range(3)))
    for _ in range(30):
        g = f(us, a8, a16, h, w, img, k.astype(np.float32))
        for gu, wu in zip(g[0], want[0]):
            np.testing.assert_allclose(np.asarray(gu), wu, rtol=1e-5, atol=1e-3)
        np.testing.assert_allclose(np.asarray(g[1]), want[1], rtol=1e-5, atol=1e-3)
        np.testing.assert_allclose(np.asarray(g[2]), want[2], rtol=1e-5, atol=1e-2)
        np.testing.assert_array_equal(np.asarray(g[3]), want[3])
        np.testing.assert_allclose(np.asarray(g[4])[0], want[4], rtol=1e-5, atol=1e-2)


@pytest.mark.skipif(not loops.device_names("vulkan"), reason="no Vulkan device")
def test_transfer_only_modules_every_call():
    """A module of copies only (a concatenation or stack of its arguments, two slices; an eager `concatenate`, as in
    `partition`): IREE 3.13 memoized its command buffer of transfers, and from the second call on lavapipe copied the
    first call's buffers (zeros, or every other call right). The Vulkan target's flags record it per call."""
    a, b = RNG.standard_normal(3).astype(np.float32), RNG.integers(-9, 9, 5).astype(np.int32)
    c = RNG.standard_normal(3000).astype(np.float32)
    f = _vk(lambda a, b, c: (snp.concatenate([b, b[:2]]), snp.stack([a, a]), c[100:2000], c[5:9]))
    want = (np.concatenate([b, b[:2]]), np.stack([a, a]), c[100:2000], c[5:9])
    for _ in range(6):
        for g, w in zip(f(a, b, c), want):
            np.testing.assert_array_equal(np.asarray(g), w)
    x = RNG.integers(-9, 9, 10).astype(np.int32)
    old = stagec.config.default_backend
    stagec.config.update("default_backend", "vulkan")
    try:
        for _ in range(6):
            np.testing.assert_array_equal(np.asarray(snp.concatenate([x[:1], x[1:][::-1]])),
                                          np.concatenate([x[:1], x[1:][::-1]]))
            srt = np.sort(x)
            np.testing.assert_array_equal(np.asarray(snp.partition(x, 0)), np.concatenate([srt[:1], srt[1:][::-1]]))
    finally:
        stagec.config.update("default_backend", old)


@pytest.mark.skipif(not loops.device_names("vulkan"), reason="no Vulkan device")
def test_signed_remainders_of_the_minimum():
    """rem(MIN, y): IREE 3.13's SPIR-V takes |x| % |y| and negates it where x != |x|, which misses MIN (|MIN| is MIN):
    rem(-128, 7) was 2, not -2; NumPy's `%` and `fmod` of MIN were wrong with it. `signed-remainders-of-min`. int8,
    int16 and int32, in one module."""
    dtypes = (np.int8, np.int16, np.int32)
    xs, ys = [], []
    for dtype in dtypes:
        lo = int(np.iinfo(dtype).min)
        ys.append(np.array([7, -7, 3, -3, 2, 100, -1, 1, lo, 5, -5], dtype))
        xs.append(np.array([lo] * 9 + [-13, 13], dtype))
    outs = _vk(lambda xs, ys: [(stagec.lax.rem(x, y), x % y, snp.fmod(x, y)) for x, y in zip(xs, ys)])(xs, ys)
    assert len(outs) == len(dtypes)
    for dtype, x, y, got in zip(dtypes, xs, ys, outs):
        rem = [int(np.sign(a)) * (abs(int(a)) % abs(int(b))) for a, b in zip(x, y)]  # (C's: the dividend's sign)
        mod = [int(a) % int(b) for a, b in zip(x, y)]  # (Python's: the divisor's)
        for g, w in zip(got, (rem, mod, rem)):
            assert np.asarray(g).dtype == dtype
            np.testing.assert_array_equal(np.asarray(g).astype(np.int64), w, err_msg=str(dtype))


def _ieee_max_min(a: float, b: float) -> tuple[float, float]:
    """IEEE 754-2019's maximum and minimum (-0 below +0; NaN propagates), of two Python floats."""
    if math.isnan(a) or math.isnan(b):
        return math.nan, math.nan
    if a == b == 0:
        neg = math.copysign(1, a) < 0, math.copysign(1, b) < 0
        return (-0.0 if all(neg) else 0.0), (-0.0 if any(neg) else 0.0)
    return max(a, b), min(a, b)


@pytest.mark.skipif(not loops.device_names("vulkan"), reason="no Vulkan device")
def test_max_and_min_of_signed_zeros():
    """max(+0, -0) is +0 and min -0 (JAX's, StableHLO's): IREE 3.13's SPIR-V FMax/FMin gave the second operand on
    lavapipe where the two compare equal (max(+0, -0) was -0). `signed-zeros-of-max-min`; with zero constants too."""
    a = np.array([0.0, -0.0, 0.0, -0.0, 1.5, -2.0, np.nan, 3.0, -0.0], np.float32)
    b = np.array([-0.0, 0.0, 0.0, -0.0, -1.0, -2.0, 1.0, np.nan, 4.0], np.float32)
    got = _vk(lambda a, b: (snp.maximum(a, b), snp.minimum(a, b), stagec.lax.max(b, a), stagec.lax.min(b, a),
                            snp.maximum(a, -0.0), snp.minimum(a, 0.0), snp.maximum(a, 0.0), snp.minimum(a, -0.0)))(a, b)
    pairs = [(a, b), (a, b), (b, a), (b, a)] + [(a, np.full_like(a, z)) for z in (-0.0, 0.0, 0.0, -0.0)]
    for k, (g, (x, y)) in enumerate(zip(got, pairs)):
        want = np.array([_ieee_max_min(float(u), float(v))[k % 2] for u, v in zip(x, y)], np.float32)
        np.testing.assert_array_equal(np.asarray(g), want)  # (NaN where want's is)
        num = ~np.isnan(want)
        assert (np.signbit(np.asarray(g)) == np.signbit(want))[num].all(), (k, np.asarray(g), want)
    import ml_dtypes  # (float16 and bfloat16 operands too; a bfloat16 splat zero is left: the pass's docstring)
    halves = _vk(lambda ab: [(snp.maximum(a, b), snp.minimum(a, b)) for a, b in ab])(  # (one module for both)
        [(a.astype(dt), b.astype(dt)) for dt in (np.float16, ml_dtypes.bfloat16)])
    for dt, got in zip((np.float16, ml_dtypes.bfloat16), halves):
        for k, g in enumerate(got):
            g = np.asarray(g).astype(np.float32)
            want = np.array([_ieee_max_min(float(u), float(v))[k] for u, v in zip(a, b)], np.float32)
            np.testing.assert_array_equal(g, want)
            assert (np.signbit(g) == np.signbit(want))[~np.isnan(want)].all(), (dt, k, g, want)


@pytest.mark.skipif(not loops.device_names("vulkan"), reason="no Vulkan device")
def test_complex_reciprocals_of_infinities():
    """1 / z of an infinite z is 0 (C99's, NumPy's): with the constant 1 in the division's dispatch lavapipe folded
    0 * inf to 0, which hid the NaN that Annex G's recovery looks for: 1 / (inf + 0j) was NaN - 0j, 1 / (2 + inf j)
    NaN. `complex-division-constants-apart`."""
    inf = np.inf
    z = np.array([complex(inf, 0), complex(-inf, 1), complex(2, inf), complex(0, -inf), complex(-3, -inf),
                  1e20 + 0j, 3 + 4j, -0.5 + 2j], np.complex64)
    got = _vk(lambda z: (1 / z, snp.reciprocal(z), (1 + 2j) / z))(z)
    z128 = z.astype(np.complex128)
    for g, w in zip(got, (1 / z128, 1 / z128, (1 + 2j) / z128)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, atol=0)  # (zeros exact: no NaN)


@pytest.mark.skipif(not loops.device_names("vulkan"), reason="no Vulkan device")
def test_widened_values_read_transposed_twice(x64):
    """Under x64 a float32 column's sort and argsort sort float64 keys, its transpose widened, copied twice
    (`sorts-apart`): IREE cloned the convert into both copies' dispatches, whose SPIR-V raced through workgroup memory
    (zeros and stale values, every call). `widening-converts-apart`."""
    f = _vk(lambda v: (snp.sort(v.T, 0), snp.argsort(v.T, 0, stable=True),
                       snp.partition(v.T, 4, 0), snp.argpartition(v.T, 4, 0)))
    for shape in [(4, 6), (3, 5), (7, 9)]:
        for _ in range(2):
            x = RNG.standard_normal(shape).astype(np.float32)
            s, i, p, pi = (np.asarray(r) for r in f(x))
            col = x.T.astype(np.float64)
            np.testing.assert_array_equal(s, np.sort(col, axis=0))
            np.testing.assert_array_equal(i, np.argsort(col, axis=0, kind="stable"))
            np.testing.assert_array_equal(p[4], np.sort(col, axis=0)[4])
            np.testing.assert_array_equal(np.take_along_axis(col, pi, 0)[4], np.sort(col, axis=0)[4])


@pytest.mark.skipif(not loops.device_names("vulkan"), reason="no Vulkan device")
def test_sorts_of_int64_slices(x64):
    """Sorts of int64 slices (a column, `x[2:7]`, `x[::2]`) and unique rows: IREE's SPIR-V failed to compile the slice
    fused into the sort (vector<2xi64>). `int64-sort-slices-apart`."""
    a = RNG.integers(-50, 50, 9)
    m = RNG.integers(-5, 5, (6, 3))
    got = _vk(lambda a, m: (snp.sort(a[2:7]), snp.sort(a[::2]), snp.argsort(m[:, 1], stable=True),
                            snp.sort(m[:, 1:], axis=0), snp.unique(m[:, :2], axis=0, size=8)))(a, m)
    rows = np.unique(m[:, :2], axis=0)
    want = (np.sort(a[2:7]), np.sort(a[::2]), np.argsort(m[:, 1], kind="stable"), np.sort(m[:, 1:], axis=0),
            np.concatenate([rows, np.repeat(rows[:1], 8 - len(rows), axis=0)]))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w)


@pytest.mark.skipif(not loops.device_names("vulkan"), reason="no Vulkan device")
def test_population_counts_of_64_bit_integers(x64):
    """`population_count` and `clz` of int64 and uint64 (IREE's SPIR-V for the portable target failed on a 64-bit
    popcnt): `popcnt64-in-halves`, `clz64-in-halves`; against Python's own counts."""
    from stagec import lax
    vals = [0, 1, -1, 2 ** 31, 2 ** 32, -2 ** 63, 2 ** 63 - 1, 0x0F0F0F0F0F0F0F0F, *RNG.integers(-2 ** 63, 2 ** 63 - 1, 8)]
    xs = [np.array(vals, np.int64).astype(dt) for dt in (np.int64, np.uint64)]
    outs = _vk(lambda xs: [(lax.population_count(x), lax.clz(x)) for x in xs])(xs)  # (one module for both)
    for dt, x, (p, c) in zip((np.int64, np.uint64), xs, outs):
        bits = [int(v) & (2 ** 64 - 1) for v in x]
        np.testing.assert_array_equal(np.asarray(p), np.array([bin(v).count("1") for v in bits], dt))
        np.testing.assert_array_equal(np.asarray(c), np.array([64 - v.bit_length() for v in bits], dt))


def _max_pool_grad_ref(x, ct):
    """The gradient of a 2 x 2, stride 2 max pool (NHWC, W padded by one): each window's cotangent at its maximum."""
    g = np.zeros_like(x)
    xp = np.pad(x, ((0, 0), (0, 0), (0, 1), (0, 0)), constant_values=-np.inf)
    for n, i, j, c in np.ndindex(*ct.shape):
        win = xp[n, 2 * i:2 * i + 2, 2 * j:2 * j + 2, c]
        a, b = np.unravel_index(np.argmax(win), win.shape)
        g[n, 2 * i + a, 2 * j + b, c] += ct[n, i, j, c]
    return g


@pytest.mark.skipif(not loops.device_names("vulkan"), reason="no Vulkan device")
def test_max_pool_gradients_read_their_window_maxima_synced():
    """IREE fused the reduction finding each window's first maximum with the select that broadcasts it, and its SPIR-V
    read the reduction's result from workgroup memory with no barrier: the cotangent at the wrong element, silently.
    The driver finds such reads in the SPIR-V (lavapipe) and compiles the module again with each reduction apart
    (the `reductions-apart` retry; a race left after it is a RuntimeWarning)."""
    from stagec import lax
    x = (RNG.permutation(100).reshape(2, 5, 5, 2) / 7.0).astype(np.float32)  # (distinct: no ties)
    ct = RNG.standard_normal((2, 2, 3, 2)).astype(np.float32)
    pool = lambda x: lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1),  # noqa: E731
                                       ((0, 0), (0, 0), (0, 1), (0, 0)))
    g = _vk(stagec.grad(lambda x: snp.sum(pool(x) * ct)))(x)
    np.testing.assert_array_equal(np.asarray(g), _max_pool_grad_ref(x, ct))


def test_reads_of_other_threads_workgroup_memory_with_no_barrier_are_found():
    race = """
        spirv.Store "Workgroup" %13, %c : i32
        %33 = spirv.Load "Workgroup" %13 : i32
        spirv.Store "Workgroup" %13, %37 : i32
        %21 = spirv.Load "Workgroup" %20 : i32"""
    assert loops.reads_other_threads_unsynced(race)
    assert not loops.reads_other_threads_unsynced(race.replace("%21 =", "spirv.ControlBarrier <Workgroup>\n %21 ="))
    assert not loops.reads_other_threads_unsynced(race.replace("%20", "%13"))  # (a thread's own element)
    ids = """
        %0 = spirv.Load "Input" %__builtin__LocalInvocationId___addr : vector<3xi32>
        %1 = spirv.CompositeExtract %0[0 : i32] : vector<3xi32>
        %2 = spirv.CompositeExtract %0[1 : i32] : vector<3xi32>
        %c6 = spirv.Constant 6 : i32
        %3 = spirv.IMul %2, %c6 : i32
        %4 = spirv.IAdd %3, %1 : i32
        %5 = spirv.AccessChain %wg[%c0, %4] : !p, i32, i32 -> !q
        spirv.Store "Workgroup" %5, %v : f64
        %6 = spirv.IMul %{a}, %c6 : i32
        %7 = spirv.IAdd %{b}, %6 : i32
        %8 = spirv.AccessChain %wg[%c0, %7] : !p, i32, i32 -> !q
        %9 = spirv.Load "Workgroup" %8 : f64"""
    assert loops.reads_other_threads_unsynced(ids.format(a=1, b=2))  # (a transpose: y 6 + x stored, x 6 + y read)
    assert not loops.reads_other_threads_unsynced(ids.format(a=2, b=1))  # (its own, recomputed)


@lavapipe
def test_eager_sorts_along_a_length_one_axis():
    """An eager sort along an axis of one element (nothing to order) failed to compile on Vulkan ("failed to legalize
    'vector.broadcast'"); it is the identity now on every backend. Oracle: NumPy's sort."""
    x = RNG.standard_normal((128, 1)).astype(np.float32)
    y = RNG.standard_normal((3, 1, 4)).astype(np.float32)
    old = stagec.config.default_backend
    stagec.config.update("default_backend", "vulkan")
    try:
        np.testing.assert_array_equal(np.asarray(snp.sort(snp.asarray(x), axis=-1)), x)
        np.testing.assert_array_equal(np.asarray(snp.argsort(snp.asarray(x), axis=-1)), np.zeros((128, 1)))
        np.testing.assert_array_equal(np.asarray(snp.sort(snp.asarray(y), axis=1)), y)
        np.testing.assert_array_equal(np.asarray(snp.sort(snp.asarray(y), axis=2)), np.sort(y, axis=2))
    finally:
        stagec.wait_for_compiles(120)
        stagec.config.update("default_backend", old)


@lavapipe
def test_strided_slices_of_widened_values_keep_their_stride():
    """IREE 3.13's SPIR-V read a strided slice of values widened in its dispatch from bfloat16 or int8 wrongly, by
    size (16, 17, 64 or 65 values, depending on the module: the first ones right, then others); a barrier before
    any such slice (`narrow-strided-slices-apart-any`)."""
    import warnings

    import ml_dtypes

    from test_fusion_hazards import _widened_strided
    cases = [(np.arange(n).astype(dt), 2, start) for dt in (ml_dtypes.bfloat16, np.int8) for n in (16, 17, 64, 65, 129)
             for start in (0, 1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (IREE's SPIR-V for the widening itself: `loops.RACE`)
        got = _vk(_widened_strided([c[1:] for c in cases]))([c[0] for c in cases])
    for (x, stride, start), g in zip(cases, got):
        want = x.astype(np.int32 if x.dtype.kind in "iu" else np.float32)[start::stride] + 1
        np.testing.assert_array_equal(np.asarray(g), want, err_msg=f"{x.dtype}[{x.size}][{start}::{stride}]")


@lavapipe
def test_expansions_reach_chains_reading_a_reshape():
    """`fuse-chains` (chains reading a reshape -> one generic) ran before `mathlib`, so their ops kept IREE's own
    SPIR-V: float32 log1p(-p) of a row of a stack (beta.logsf's tails) was log(1 - p), 1.4e-3 relative off at p =
    1e-5. It runs after the expansions now."""
    x = np.linspace(0.01, 0.99, 45).astype(np.float32)
    p = x * np.float32(1e-3)
    got = _vk(lambda x: snp.log1p(-snp.stack([x * np.float32(1e-3), x])[0]))(x)
    np.testing.assert_allclose(got, np.log1p(-p.astype(np.float64)), rtol=2e-7)
