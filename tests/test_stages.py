"""Stages of a lowered function: the default text is pure StableHLO that IREE compiles as it is (for the
workloads of benchmarks/bench_core.py and for lax control flow), stage names and aliases, pass statistics
on demand."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import ShapeDtypeStruct as S
from stagec import lax, nn
from stagec.stages import STABLEHLO_DIALECTS


def selu(x, alpha=1.67, lambda_=1.05):
    return lambda_ * snp.where(x > 0, x, alpha * snp.exp(x) - alpha)


F32 = np.float32
WORKLOADS = {  # benchmarks/bench_core.py's functions, at small shapes; then cond, while_loop and scan
    "selu": (selu, [S((16,), F32)]),
    "overhead x+1": (lambda v: v + 1.0, [S((), F32)]),
    "driver exp*2+1": (lambda v: snp.exp(v) * 2 + 1, [S((64,), F32)]),
    **{f"mlp gelu {np.dtype(dt).name}": (lambda x, w, b: nn.gelu(x @ w + b), [S((8, 8), dt), S((8, 8), dt), S((8,), dt)])
       for dt in (np.float32, np.float16, ml_dtypes.bfloat16)},
    **{f"selu {np.dtype(dt).name}": (selu, [S((16,), dt)]) for dt in (np.float16, ml_dtypes.bfloat16)},
    "cond": (lambda p, x: lax.cond(p > 0, lambda v: snp.sin(v) * 2, lambda v: snp.exp(v) + 1, x),
             [S((), F32), S((8,), F32)]),
    "while_loop": (lambda x: lax.while_loop(lambda s: s[0] < 5, lambda s: (s[0] + 1, snp.tanh(s[1]) * 1.5), (0, x)),
                   [S((8,), F32)]),
    "scan": (lambda xs: lax.scan(lambda c, x: (c + snp.exp(x), c * x), snp.zeros(4), xs), [S((5, 4), F32)]),
}


def ops_outside_stablehlo(text: str) -> set[str]:
    """Parse and verify `text` in a fresh context; the names of its ops outside stablehlo, chlo and func."""
    from iree.compiler import ir
    with ir.Context() as ctx:
        module = ir.Module.parse(text, ctx)
        assert module.operation.verify()
        found = set()

        def visit(op):
            if op.name != "builtin.module" and op.name.split(".")[0] not in STABLEHLO_DIALECTS:
                found.add(op.name)
            return ir.WalkResult.ADVANCE
        module.operation.walk(visit)
    return found


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_default_text_is_stablehlo_that_iree_compiles(name):
    import iree.compiler as ic
    fun, specs = WORKLOADS[name]
    lowered = stagec.jit(fun).lower(*specs)
    text = lowered.as_text()
    assert text == str(lowered) == lowered.as_text("stablehlo") == stagec.make_mlir(fun)(*specs)
    assert ops_outside_stablehlo(text) == set()
    assert "stablehlo." in text and "linalg" not in text
    vmfb = ic.compile_str(text, target_backends=["llvm-cpu"], input_type="stablehlo",
                          extra_args=["--iree-llvmcpu-target-cpu=host"])
    assert len(vmfb) > 1000


@pytest.mark.cpu_only  # (the CPU pipeline's stages)
def test_stablehlo_stage_sits_before_the_first_pass_leaving_the_dialect():
    lowered = stagec.jit(lambda x: selu(x.reshape(4, 4))).lower(S((16,), F32))  # (default `fuse` needs a reshape)
    names = list(lowered.stages())
    assert names == ["traced", "widen-half", "fold-constants", "simplify", "updates-as-concats", "pad-sums-as-concats", "lanes-batched", "fold-movement", "cse", "dce",
                     "abs-squares", "compare-clamped", "merge-contracted-dims", "isolate-updates", "recompute-activations",
                     "isolate-batch-sums", "column-products", "split-sums",
                     "upcast-half-dots", "isolate-outer", "one-weight-pass", "weight-left", "patches-as-one-copy", "fuse-int-chains", "stablehlo", "fuse", "sliced-dots-apart", "loop-weights-transposed", "mathlib-cpu", "mathlib",
                     "mathlib-complex", "fold-expansions", "complex-constants-apart", "complex-pads-in-parts", "merge-commuted", "fuse-narrowing", "fuse-float64", "complex128-constants-in-parts",
                     "bound-bindings", "isolate-reductions",
                     "round-to-bf16", "unsigned-to-float", "unsigned-extensions-apart", "half-products-in-f32", "grouped-conv-kernels-apart", "self-updates-apart", "sliced-indices-apart", "transposed-reductions-apart", "pads-of-pads-apart", "crossed-reductions-apart", "broadcast-contractions-apart", "loop-updates-apart", "loop-concats-apart", "strided-gather-operands-apart", "narrow-strided-slices-apart", "sorts-apart", "pool-gradients-unfused", "dynamic-reductions-unfused", "blas-dots",
                     "host-sorts", "loops-on-one-device", "final"]
    assert lowered.as_text() == lowered.as_text("isolate-outer")  # both complete: no constant is large here
    final = lowered.as_text("final")
    assert final == lowered.as_text("iree-input") and "linalg.generic" in final  # `fuse` left StableHLO
    assert ops_outside_stablehlo(final)  # the honest name: IREE's input may mix dialects
    assert "linalg" not in stagec.make_mlir(selu, stage="traced")(S((16,), F32))


def test_stablehlo_stage_keeps_large_constants_that_pass_stages_elide():
    table = np.arange(4096, dtype=np.float32)
    lowered = stagec.jit(lambda x: x + table).lower(S((4096,), F32))
    assert "dense_resource<__elided__>" in lowered.as_text("dce")  # pass stages stay cheap to print
    text = lowered.as_text()
    assert "__elided__" not in text and "00F07F45" in text and ops_outside_stablehlo(text) == set()  # 4095.0


@pytest.mark.cpu_only  # (the CPU pipeline's stages)
def test_pass_stats_and_stages_on_demand():
    lowered = stagec.jit(selu, passes=["simplify", "fuse-all"]).lower(S((4,), F32))
    stats = lowered.pass_stats  # no text asked for before
    assert [s.name for s in stats][:2] == ["simplify", "fuse-all"] and stats[1].rewrites["elementwise"] == 1
    stages = lowered.stages()
    assert list(stages) == ["traced", "simplify", "stablehlo", "fuse-all", "mathlib-cpu", "mathlib", "mathlib-complex",
                            "fold-expansions", "complex-constants-apart", "complex-pads-in-parts", "merge-commuted", "fuse-narrowing", "fuse-float64", "complex128-constants-in-parts",
                            "bound-bindings", "isolate-reductions", "round-to-bf16", "unsigned-to-float", "unsigned-extensions-apart", "half-products-in-f32", "grouped-conv-kernels-apart", "self-updates-apart", "sliced-indices-apart", "transposed-reductions-apart", "pads-of-pads-apart", "crossed-reductions-apart", "broadcast-contractions-apart", "loop-updates-apart", "loop-concats-apart", "strided-gather-operands-apart", "narrow-strided-slices-apart", "sorts-apart",
                            "pool-gradients-unfused", "dynamic-reductions-unfused", "blas-dots", "host-sorts", "loops-on-one-device",
                            "final"]
    stages["final"] = "changed"  # a copy: the lowered function is unchanged
    assert lowered.as_text("final") != "changed"
    with pytest.raises(ValueError, match=r"unknown stage 'nope'; stages of jit_selu: traced, simplify, stablehlo"):
        lowered.as_text("nope")


@pytest.mark.cpu_only  # (the CPU pipeline's stages)
def test_final_is_exactly_what_iree_receives_and_what_the_key_holds():
    # A 1024^2 matrix-vector product calls stagec's BLAS module (the CPU's `blas-dots` offload, on by default): the
    # final stage shows the call, and the persistent cache's key holds the digest of that very text.
    import hashlib
    low = stagec.jit(lambda a, b: a @ b).lower(S((1024, 1024), F32), S((1024,), F32))
    final = low.as_text("final")
    assert "blas-dots" in low.stages() and "call @stagec_blas.dot_general_0" in final
    assert "stablehlo.dot_general" not in final and low.facts.host_calls == ("stagec_blas",)
    meta = low.compile().artifact.meta
    assert meta["key_components"]["mlir"] == hashlib.sha256(final.encode()).hexdigest()
    off = stagec.jit(lambda a, b: a @ b).lower(S((1024, 1024), F32), S((1024,), F32)).compile(host_blas=False)
    assert "host_modules" not in off.artifact.meta and off.artifact.meta["key_components"]["mlir"] != \
        meta["key_components"]["mlir"]
