"""The pass pipeline: selection (per call, global, env), cache keys, inspection, dumps, failures, FAQ."""
from __future__ import annotations

import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import passes
from stagec.compiler import TARGETS
from stagec.passes import DEFAULT_PIPELINE, REGISTRY, PassError, run_pipeline

CPU = TARGETS["cpu"].pipeline
TAIL = [*CPU.legalize, *CPU.offloads, *CPU.finish]  # run whatever `passes` says (offloads: under the default `cpu_blas`)


def log_exp(x):
    return snp.log(snp.exp(x))


def log_sqrt(x):
    return snp.log(snp.sqrt(x))


def half_log(x):
    return 0.5 * snp.log(x)


def test_faq_log_exp():
    # docs/faq "jit changes the exact numbers": eager overflows, jit rewrites log(exp(x)) to x.
    assert float(stagec.jit(log_exp)(100.0)) == 100.0
    assert float(log_exp(100.0)) == math.inf
    assert float(stagec.jit(log_exp, passes="none")(100.0)) == math.inf


def test_faq_log_sqrt_matches_rewritten_form():
    x = np.float32(np.pi)
    jitted = float(stagec.jit(log_sqrt)(x))
    assert jitted == float(stagec.jit(half_log, passes="none")(x))  # 0.5 * log(x), bit for bit
    assert float(stagec.jit(log_sqrt, passes="none")(x)) == float(log_sqrt(x))  # unrewritten = eager
    # The FAQ's printed values, with the FAQ's input (a Python float, so weakly typed float32).
    assert str(np.float32(np.asarray(stagec.jit(log_sqrt)(math.pi)))) == "0.5723649"
    assert str(np.float32(np.asarray(log_sqrt(math.pi)))) == "0.572365"


@pytest.mark.cpu_only  # (the CPU pipeline's stages (DEFAULT_PIPELINE, TAIL))
def test_stages_traced_each_pass_final():
    low = stagec.jit(log_exp).lower(1.0)
    assert "stablehlo.exponential" in low.as_text("traced")
    for name in DEFAULT_PIPELINE:
        low.as_text(name)
    assert "stablehlo.exponential" not in low.as_text("simplify")
    assert low.as_text("final") == low.as_text("iree-input") == low.as_text(TAIL[-1])
    assert str(low) == low.as_text("stablehlo") and "linalg" not in str(low)
    with pytest.raises(ValueError, match="unknown stage 'nope'.*traced"):
        low.as_text("nope")
    stats = {s.name: s for s in low.pass_stats}
    assert stats["simplify"].rewrites["log-exp"] == 1
    assert stats["simplify"].ops_before > stats["simplify"].ops_after


@pytest.mark.cpu_only  # (the CPU pipeline's stages (TAIL))
def test_make_mlir_stage_and_explicit_list():
    text = stagec.make_mlir(log_exp, passes=["simplify"], stage="traced")(1.0)
    assert "stablehlo.log" in text
    low = text.lowered
    # (the StableHLO stage ends before the first expansion, mathlib, which opens the target's legalization)
    assert list(low.stages()) == ["traced", "simplify", "stablehlo", *TAIL, "final"]
    assert "stablehlo.log" not in stagec.make_mlir(log_exp, passes=["simplify"], stage="simplify")(1.0)
    assert list(stagec.jit(log_exp, passes=()).lower(1.0).stages()) == ["traced", "stablehlo", *TAIL, "final"]


@pytest.mark.cpu_only  # (the CPU pipeline's stages (TAIL))
def test_global_config_selects_pipeline_and_is_in_cache_key():
    f = stagec.jit(log_exp)
    assert float(f(100.0)) == 100.0
    old = stagec.config.passes
    try:
        stagec.config.update("passes", "none")
        assert float(f(100.0)) == math.inf  # recompiled: the pipeline is part of the key
        stagec.config.update("passes", ["cse"])
        assert float(f(100.0)) == math.inf
        assert list(f.lower(1.0).stages()) == ["traced", "cse", "stablehlo", *TAIL, "final"]
        # per-call selection wins over the global one
        assert float(stagec.jit(log_exp, passes="default")(100.0)) == 100.0
    finally:
        stagec.config.update("passes", old)
    assert float(f(100.0)) == 100.0


def test_resolve():
    assert passes.resolve("default") == DEFAULT_PIPELINE
    assert passes.resolve("none") == passes.resolve(()) == passes.resolve(False) == ()
    assert passes.resolve("simplify, cse") == ("simplify", "cse")
    assert passes.resolve(["default", "canonicalize"]) == (*DEFAULT_PIPELINE, "canonicalize")
    assert "fuse" in DEFAULT_PIPELINE
    assert passes.resolve("default", ("cse",)) == ("cse",)  # a target's own default
    with pytest.raises(ValueError, match="unknown stagec pass.*'nope'.*available"):
        passes.resolve(["nope"])


def test_registered_passes_are_described():
    for name, p in REGISTRY.items():
        assert p.name == name and p.description and "\n" not in p.description
    assert all(f" {n} " in passes.describe() for n in REGISTRY)


@pytest.mark.compile  # (it compiles in a subprocess: not in --fast)
def test_env_selects_pipeline():
    code = "import stagec, stagec.numpy as snp; print(float(stagec.jit(lambda x: snp.log(snp.exp(x)))(100.)))"
    env = dict(os.environ, STAGEC_PASSES="none")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "inf", out.stderr[-2000:]


class _Boom(passes.Pass):
    name, description = "test-boom", "raises"

    def apply(self, module, stats):
        raise RuntimeError("boom")


class _Breaks(passes.Pass):
    name, description = "test-breaks", "moves the first op after the return: IR that fails verify()"

    def apply(self, module, stats):
        ops = list(module.body.operations[0].regions[0].blocks[0].operations)
        # (not a constant: a later pattern pass's greedy driver would move it back to the top)
        next(op for op in ops if op.name != "stablehlo.constant").move_after(ops[-1])


class _Nothing(passes.Pass):
    name, description = "test-nothing", "changes nothing"

    def apply(self, module, stats):
        pass


@pytest.fixture
def bad_passes(tmp_path, monkeypatch):
    monkeypatch.setenv("STAGEC_DUMP_DIR", str(tmp_path))
    for p in (_Boom(), _Breaks(), _Nothing()):
        monkeypatch.setitem(REGISTRY, p.name, p)
    return tmp_path


@pytest.mark.parametrize("bad,match", [("test-boom", "RuntimeError: boom"), ("test-breaks", "must be the last operation|does not dominate")])
@pytest.mark.parametrize("then", [[], ["test-nothing", "test-nothing"]])
def test_failing_pass_names_itself_and_saves_ir(bad_passes, bad, match, then):
    """(test-breaks reports no change: the module is verified at the end, and the first pass that left it invalid
    is named, not the passes after it.)"""
    f = stagec.jit(lambda x: snp.tanh(x) + 1, passes=["simplify", bad, *then])
    with pytest.raises(PassError, match=f"stagec pass '{bad}' failed") as e:
        f(np.ones(3, np.float32))
    assert re.search(match, str(e.value))
    path = str(e.value).split("The IR before the pass is in ")[1].split(";")[0]
    assert path.startswith(str(bad_passes)) and "stablehlo.tanh" in open(path).read()


@pytest.mark.cpu_only  # (the CPU pipeline's stages, dumped)
def test_dump_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("STAGEC_DUMP_DIR", str(tmp_path))

    def dumped(x):
        x = x.reshape(2, 4)  # (the default `fuse` fires on chains reading a reshape)
        return snp.log(snp.exp(x)) * 2 + snp.sin(x)
    stagec.jit(dumped)(np.ones(8, np.float32))
    (d,) = [p for p in tmp_path.iterdir() if p.name.startswith("jit_dumped-")]
    files = sorted(p.name for p in d.iterdir())
    names = ["traced", *DEFAULT_PIPELINE, *TAIL, "final"]
    names.insert(names.index("fuse"), "stablehlo")  # the last pure StableHLO stage, before fuse leaves the dialect
    want = [f"{i:02d}-{n}.mlir" for i, n in enumerate(names)]
    assert [f for f in files if f.endswith(".mlir")] == want
    txt = (d / "passes.txt").read_text()
    assert "log-exp=1" in txt and all(n in txt for n in DEFAULT_PIPELINE)
    sources = list((d / "dispatches").iterdir())
    assert sources and any("func.func" in p.read_text() for p in sources)


def test_cpu_default_is_the_cpu_targets_and_no_pass_asks_where_it_runs():
    import pathlib
    assert CPU.passes == DEFAULT_PIPELINE
    for path in pathlib.Path(passes.__file__).parent.glob("*.py"):
        assert "stats.backend" not in path.read_text(), path.name  # a target's pipeline omits a pass instead


def test_every_pass_a_pipeline_names_is_registered_and_each_kind_known():
    for t in TARGETS.values():
        for name in (*t.pipeline.calls, "inline-calls", *t.pipeline.expansions, *t.pipeline.passes,
                     *t.pipeline.legalize, *t.pipeline.offloads, *t.pipeline.finish):
            assert name in REGISTRY, (t.backend, name)
    assert {p.kind for p in REGISTRY.values()} <= {"optimization", "workaround", "expansion", "legalize", "offload"}


def test_run_pipeline_direct():
    from iree.compiler import ir
    ctx = ir.Context()
    m = ir.Module.parse("""func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
        %0 = stablehlo.negate %x : tensor<2xf32>
        %1 = stablehlo.negate %0 : tensor<2xf32>
        return %1 : tensor<2xf32> }""", ctx)
    stages = run_pipeline(m, ["simplify", "simplify"])
    assert [s.name for s in stages] == ["simplify", "simplify#2"]
    assert stages[0].stats.rewrites["neg-neg"] == 1 and not stages[1].stats.rewrites
    assert "negate" not in stages[0].text



def test_workarounds_say_which_iree_and_which_test_shows_them():
    """Each workaround names the IREE version it answers and the test that shows it. On another IREE this lists
    the ones to check again (run each named test without its pass: where it passes, the pass can go)."""
    import pathlib

    from stagec import aot
    root = pathlib.Path(__file__).resolve().parents[1]
    found = {n: p.workaround for n, p in REGISTRY.items() if p.workaround is not None}
    assert {"mathlib-cpu", "abs-squares", "column-products", "split-sums", "upcast-half-dots", "widen-half",
            "isolate-outer", "bound-bindings", "isolate-reductions", "merge-commuted", "bf16-in-f32",
            "nan-guards"} <= set(found)
    for name, w in found.items():
        path, _, test = w.test.partition("::")
        assert f"def {test}(" in (root / path).read_text(), (name, w.test)
    installed = ".".join(aot.iree_compiler_version().split(".")[:2])
    stale = sorted(f"{n} (IREE {w.iree}: {w.test})" for n, w in found.items() if w.iree != installed)
    assert not stale, f"workarounds written for another IREE than {installed}; check each again: {stale}"


def test_runtime_quirks_name_the_test_that_shows_them():
    """The runtime's driver quirks (`backend.Quirk`: lavapipe's spinning waits, CUDA's per-thread context, NVIDIA
    Vulkan's wrong answers) each name a test that exists, to run again on a new IREE, Mesa or driver."""
    import pathlib

    from stagec import backend
    root = pathlib.Path(__file__).resolve().parents[1]
    quirks = {n: q for n, q in vars(backend).items() if isinstance(q, backend.Quirk)}
    assert {"SPINNING_WAITS", "CUDA_THREAD_CONTEXT", "NVIDIA_VULKAN_WRONG"} <= set(quirks)
    for name, q in quirks.items():
        path, _, test = q.test.partition("::")
        assert f"def {test}(" in (root / path).read_text(), (name, q.test)


@pytest.mark.cpu_only  # (the CPU legalization's `fold-expansions`)
def test_expansions_of_constant_operands_are_folded_before_iree():
    """`0.9 ** t` (Adam's bias correction): mathlib's power expands the base's exponent and mantissa and its log
    from the constant 0.9; IREE 3.13 hoisted each such constant subgraph into an initializer of its own to compile
    (17 of a 6-layer Adam step's 23 executables). `fold-expansions` folds them: no bitcast of the constant is left,
    and the powers are within an ulp of float64 NumPy's."""
    t = np.linspace(-30, 30, 301, dtype=np.float32)
    f = stagec.jit(lambda t: (0.9 ** t, 0.999 ** t))
    text = f.lower(t).as_text("final")
    assert "bitcast_convert" not in text and "fold-expansions" in [s.name for s in f.lower(t).pass_stats]
    got = f(t)
    b1, b2, t64 = float(np.float32(0.9)), float(np.float32(0.999)), t.astype(np.float64)  # (JAX's weak float32 bases)
    for g, want in zip(got, (b1 ** t64, b2 ** t64)):
        ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
        np.testing.assert_array_less(np.abs(np.asarray(g, np.float64) - want), 1.01 * ulp)


def test_float64_expansions_of_constants_fold_their_transcendental_ops(x64):
    """Float64 gammaln(3.5) expands (mathlib) into logs and a sine of constants, which IREE 3.13 hoisted into
    initializers, an executable each (4 of `gammaln(x) + gammaln(3.5)`'s 5): `fold-expansions` folds float64's
    transcendental ops too (NumPy's, within an ulp as IREE's), so no op of a constant is left."""
    from stagec.scipy import special as sps
    ss = pytest.importorskip("scipy.special")
    x = np.array([0.5, 1.0, 2.5, 7.0, 30.0])
    f = stagec.jit(lambda x: sps.gammaln(x) + sps.gammaln(3.5))
    text = f.lower(x).as_text("final")
    assert not re.search(r"stablehlo\.(log|sine|cosine|exponential)[^\n]*: tensor<f64>\n", text)
    np.testing.assert_allclose(f(x), ss.gammaln(x) + ss.gammaln(3.5), rtol=1e-14)


def test_an_op_stays_a_key_of_a_dict_or_set_when_a_rewrite_changes_it():
    # IREE 3.13's bindings hash an op by its contents and compare by identity: a pass's op-keyed dict lost an op whose
    # operand it had changed (recompute-activations' KeyError). `passes.irutil` hashes ops by identity.
    from iree.compiler import ir

    import stagec.passes.irutil  # noqa: F401
    with ir.Context() as ctx, ir.Location.unknown():
        ctx.allow_unregistered_dialects = True
        m = ir.Module.parse('func.func @f(%a: i32, %b: i32) -> i32 {\n  %0 = "x.add"(%a, %a) : (i32, i32) -> i32\n'
                            '  return %0 : i32\n}')
        block = m.body.operations[0].regions[0].blocks[0]
        op = block.operations[0]
        at, seen = {op.operation: 0}, {op}
        op.operation.operands[0] = block.arguments[1]
        op.operation.attributes["k"] = ir.UnitAttr.get()
        again = block.operations[0]
        assert at.get(again.operation) == 0 and again in seen and hash(again) == hash(again.operation)
        assert block.operations[1].operation not in at  # (another op: another key)
