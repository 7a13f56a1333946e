"""bfloat16 rounding of one-element values (`passes.legalize.round_bf16_scalars`): IREE 3.13 dropped it on the CPU and
on Vulkan, so `convert(convert(x, bf16), f32)` of a 0-d or one-element float32 was x itself. Oracle: ml_dtypes."""
import ml_dtypes
import numpy as np
import pytest

import stagec
import stagec.lax as lax
import stagec.random as sr

BF16 = ml_dtypes.bfloat16
SPECIAL = np.array([0.3, 1.0000001, 3.4e38, 3.3961776e38, -0.0, np.inf, -np.inf, 1.00390625, 1.01171875,
                    -2.5e-3, 65504.0], np.float32)  # (ties to even at 1.0039, 1.0117; past bfloat16's max: inf)
# (no subnormals: IREE flushes them in the multiply)


def _bits(a):
    return np.asarray(a).view(np.uint16 if np.asarray(a).dtype == BF16 else np.uint32)


def _backends():
    from stagec.compiler.targets import device_names
    return ["cpu", pytest.param("vulkan", marks=pytest.mark.skipif(
        not device_names("vulkan"), reason="no Vulkan device: apt-get install mesa-vulkan-drivers libvulkan1"))]


@pytest.mark.parametrize("backend", _backends())
@pytest.mark.parametrize("shape", [(), (1,), (1, 1), (3,)])
def test_a_bfloat16_round_trip_of_one_element_rounds(shape, backend):
    f = stagec.jit(lambda x: lax.convert_element_type(lax.convert_element_type(x, BF16), np.float32) * np.float32(3),
                   backend=backend)
    for v in SPECIAL:
        x = np.full(shape, v, np.float32)
        want = x.astype(BF16).astype(np.float32) * np.float32(3)
        np.testing.assert_array_equal(_bits(f(x)), _bits(want), err_msg=f"{v!r} {shape}")
    got = np.asarray(f(np.full(shape, np.nan, np.float32)))
    assert np.isnan(got).all()


def test_bfloat16_gamma_draws_are_the_same_eager_and_jitted():
    """One program, one answer: eager bfloat16 gamma, loggamma and beta draws are jit's (both float32's draws rounded
    once; 413-813 of 1000 differed, the eager kernel's 0-d parameter rounded to bfloat16 by neither)."""
    k = sr.PRNGKey(3)
    for f in (sr.gamma, sr.loggamma):
        for a in (0.3, 2.5):
            eager = f(k, a, (500,), dtype=BF16)
            jitted = stagec.jit(lambda k: f(k, a, (500,), dtype=BF16))(k)
            rounded = np.asarray(f(k, np.float32(BF16(a)), (500,), dtype=np.float32)).astype(BF16)
            np.testing.assert_array_equal(_bits(eager), _bits(jitted), err_msg=f"{f.__name__} {a}")
            np.testing.assert_array_equal(_bits(eager), _bits(rounded), err_msg=f"{f.__name__} {a}")
