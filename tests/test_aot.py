"""Ahead-of-time compilation: ShapeDtypeStruct specs, save/load round trips per target, and every way a
saved artifact can be wrong (malformed, corrupt, other versions, wrong shapes)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import ShapeDtypeStruct as S
from stagec import aot
from stagec.aot import ArtifactError
from stagec.backend import get_backend


def model(params, x, *, scale):
    h = snp.maximum(x @ params["w"] + params["b"], 0.0)
    return {"y": h * scale, "total": h.sum()}


def reference(params, x, scale):
    h = np.maximum(x @ params["w"] + params["b"], 0.0)
    return {"y": h * scale, "total": h.sum()}


SPECS = ({"w": S((3, 2), np.float32), "b": S((2,), np.float32)}, S((4, 3), np.float32))
rng = np.random.default_rng(0)
PARAMS = {"w": rng.standard_normal((3, 2)).astype(np.float32), "b": rng.standard_normal(2).astype(np.float32)}
X = rng.standard_normal((4, 3)).astype(np.float32)


@pytest.fixture(scope="module")
def lowered():
    return stagec.jit(model, static_argnames="scale").lower(*SPECS, scale=2.0)


@pytest.fixture(scope="module")
def cpu_file(lowered, tmp_path_factory):
    path = tmp_path_factory.mktemp("aot") / "model.stagec"
    lowered.compile("llvm-cpu").save(path)
    return str(path)


def check(out, scale=2.0):
    want = reference(PARAMS, X, scale)
    assert set(out) == {"y", "total"}
    np.testing.assert_allclose(np.asarray(out["y"]), want["y"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(out["total"]), want["total"], rtol=1e-5)


def test_shape_dtype_struct_lowers_without_data(lowered):
    text = lowered.as_text()
    assert "tensor<3x2xf32>" in text and "tensor<4x3xf32>" in text
    assert S((2, 3), "float32") == S((2, 3), np.float32) and "float32" in repr(S((2,), "float32"))
    with pytest.warns(UserWarning, match="float64 requested in ShapeDtypeStruct"):
        assert S((2,), "float64").aval.dtype == np.float32  # canonicalised like any argument (x64 off)


def test_cpu_round_trip_same_pytrees(cpu_file):
    f = stagec.load(cpu_file)
    assert f.meta["target"] == "llvm-cpu" and f.meta["versions"]["stagec"] == stagec.__version__
    check(f(PARAMS, X))
    assert [a.str_short() for a in f.in_avals] == ["float32[2]", "float32[3,2]", "float32[4,3]"]


def test_compiled_object_runs_and_describes_itself(lowered):
    c = lowered.compile()
    check(c(PARAMS, X))
    assert get_backend().target in c.as_text()


def test_wrong_shapes_name_file_and_expected(cpu_file):
    f = stagec.load(cpu_file)
    with pytest.raises(TypeError, match=r"model\.stagec.*argument 2 to be float32\[4,3\], got float32\[5,3\]"):
        f(PARAMS, np.zeros((5, 3), np.float32))
    with pytest.raises(TypeError, match=r"model\.stagec.*argument 2 to be float32\[4,3\], got int32\[4,3\]"):
        f(PARAMS, np.zeros((4, 3), np.int32))
    with pytest.raises(TypeError, match=r"model\.stagec.*structured as"):
        f(PARAMS["w"], X)


def test_malformed_files_are_clear_errors(cpu_file, tmp_path):
    assert aot.read_meta(cpu_file) == aot.read(cpu_file)[1]  # the metadata alone, module unread
    junk = tmp_path / "junk.stagec"
    junk.write_bytes(os.urandom(300))
    with pytest.raises(ArtifactError, match=r"junk\.stagec: not a stagec artifact"):
        stagec.load(junk)
    with pytest.raises(ArtifactError, match=r"junk\.stagec: not a stagec artifact"):
        aot.read_meta(junk)
    tiny = tmp_path / "tiny.stagec"
    tiny.write_bytes(b"abc")
    with pytest.raises(ArtifactError, match=r"tiny\.stagec: not a stagec artifact .*too short"):
        stagec.load(tiny)
    data = open(cpu_file, "rb").read()
    truncated = tmp_path / "truncated.stagec"
    truncated.write_bytes(data[:-100])
    with pytest.raises(ArtifactError, match=r"truncated\.stagec"):
        stagec.load(truncated)
    flipped = bytearray(data)
    flipped[len(data) // 3] ^= 0xFF
    corrupt = tmp_path / "corrupt.stagec"
    corrupt.write_bytes(bytes(flipped))
    with pytest.raises(ArtifactError, match=r"corrupt\.stagec: corrupt stagec artifact \(checksum mismatch\)"):
        stagec.load(corrupt)
    with pytest.raises(FileNotFoundError, match="nothere.stagec"):
        stagec.load(tmp_path / "nothere.stagec")


def _rewrite_meta(src: str, dst, **changes) -> None:
    vmfb, meta = aot.read(src)
    for k, v in changes.items():
        meta[k] = v
    with open(dst, "wb") as f:
        f.write(aot.pack(bytes(vmfb), meta))


def test_other_versions_are_refused_unless_allowed(cpu_file, tmp_path):
    _, meta = aot.read(cpu_file)
    old = tmp_path / "old.stagec"
    _rewrite_meta(cpu_file, old, versions={**meta["versions"], "stagec": "0.0.1"})
    with pytest.raises(ArtifactError, match=r"old\.stagec: made by stagec 0\.0\.1, but this is stagec "):
        stagec.load(old)
    check(stagec.load(old, allow_version_mismatch=True)(PARAMS, X))
    iree = tmp_path / "iree.stagec"
    _rewrite_meta(cpu_file, iree, versions={**meta["versions"], "iree": "2.0.0"})
    with pytest.raises(ArtifactError, match=r"iree\.stagec: made by IREE 2\.0\.0"):
        stagec.load(iree)
    other_host = tmp_path / "other_host.stagec"
    _rewrite_meta(cpu_file, other_host, key_components={**meta["key_components"], "host": "x86_64:0000"})
    with pytest.warns(RuntimeWarning, match=r"other_host\.stagec was compiled for the host CPU of another machine"):
        stagec.load(other_host)
    fmt = tmp_path / "fmt.stagec"
    _rewrite_meta(cpu_file, fmt, format=99)
    with pytest.raises(ArtifactError, match=r"fmt\.stagec: stagec artifact format 99 is not 2"):
        stagec.load(fmt)
    tgt = tmp_path / "tgt.stagec"
    _rewrite_meta(cpu_file, tgt, target="tpu")
    with pytest.raises(ArtifactError, match=r"tgt\.stagec: unknown target 'tpu'"):
        stagec.load(tgt)
    bad = tmp_path / "bad.stagec"
    _rewrite_meta(cpu_file, bad, in_avals="nonsense")
    with pytest.raises(ArtifactError, match=r"bad\.stagec: malformed stagec artifact metadata"):
        stagec.load(bad)
    macs = tmp_path / "macs.stagec"
    _rewrite_meta(cpu_file, macs, macs=-5)
    with pytest.raises(ArtifactError, match=r"macs\.stagec: malformed stagec artifact metadata.*'macs' is -5"):
        stagec.load(macs)


BLOCK_COMPILER = textwrap.dedent("""
    import sys
    class _NoCompiler:
        def find_spec(self, name, path=None, target=None):
            if name == "iree.compiler" or name.startswith("iree.compiler."):
                raise ImportError("iree.compiler is blocked in this test")
    sys.meta_path.insert(0, _NoCompiler())
""")


def test_load_and_call_need_only_the_runtime(cpu_file, tmp_path):
    np.save(tmp_path / "w.npy", PARAMS["w"])
    np.save(tmp_path / "b.npy", PARAMS["b"])
    np.save(tmp_path / "x.npy", X)
    script = BLOCK_COMPILER + textwrap.dedent(f"""
        import numpy as np
        try:
            import iree.compiler
            raise SystemExit("iree.compiler was importable")
        except ImportError:
            pass
        import stagec
        f = stagec.load({cpu_file!r})
        d = {str(tmp_path)!r}
        out = f({{"w": np.load(d + "/w.npy"), "b": np.load(d + "/b.npy")}}, np.load(d + "/x.npy"))
        np.save(d + "/y.npy", np.asarray(out["y"]))
        assert not any(m.startswith("iree.compiler") for m in sys.modules)
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), reference(PARAMS, X, 2.0)["y"], rtol=1e-5, atol=1e-6)


def _iree_run_module() -> str:
    import iree._runtime_libs as libs  # (the wheel's own copy: where IREE is unpacked, not pip-installed)
    exe = next((p for p in (shutil.which("iree-run-module"), os.path.join(os.path.dirname(sys.executable),
               "iree-run-module"), os.path.join(os.path.dirname(libs.__file__), "iree-run-module"))
                if p and os.path.exists(p)), None)
    assert exe, "iree-run-module (from iree-base-runtime) not found"
    return exe


def test_iree_run_module_runs_the_artifact_as_is(tmp_path):
    path = tmp_path / "axpy.stagec"
    stagec.jit(lambda a, x, y: a * x + y).lower(S((), np.float32), S((4,), np.float32), S((4,), np.float32)) \
        .compile("llvm-cpu").save(path)
    r = subprocess.run([_iree_run_module(), f"--module={path}", "--device=local-sync", "--function=main",
                        "--input=f32=2", "--input=4xf32=1,2,3,4", "--input=4xf32=10,10,10,10"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "4xf32=12 14 16 18" in r.stdout


def _have_vulkan() -> bool:
    from stagec.compiler.targets import device_names
    return bool(device_names("vulkan"))


@pytest.mark.skipif(not _have_vulkan(), reason="no Vulkan ICD: apt-get install mesa-vulkan-drivers libvulkan1")
def test_vulkan_round_trip(lowered, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    c = lowered.compile("vulkan-spirv")
    assert c.artifact.target == "vulkan-spirv"
    c.save(tmp_path / "model_vk.stagec")
    f = stagec.load(tmp_path / "model_vk.stagec")
    check(f(PARAMS, X))


def test_cuda_cross_compiles_and_refuses_to_run_without_a_gpu(lowered, tmp_path):
    c = lowered.compile("cuda", arch="sm_80")
    assert "--iree-cuda-target=sm_80" in c.artifact.meta["flags"]
    path = tmp_path / "model_cuda.stagec"
    c.save(path)
    f = stagec.load(path)
    assert f.meta["target"] == "cuda" and len(f.artifact.vmfb) > 1000
    import iree.runtime as rt
    try:
        rt.get_device("cuda")
        gpu = True
    except Exception:
        gpu = False
    if gpu:
        check(f(PARAMS, X))
    else:
        with pytest.raises(RuntimeError, match=r"model_cuda\.stagec: cannot load the cuda module.*'cuda'"):
            f(PARAMS, X)


def test_unknown_target_lists_choices(lowered):
    with pytest.raises(ValueError, match=r"unknown target 'tpu'; choose one of \['cuda', 'llvm-cpu', 'vulkan-spirv'\]"):
        lowered.compile("tpu")


def test_pytree_metadata_round_trips():
    from collections import OrderedDict, namedtuple
    from stagec import tree_util
    Point = namedtuple("Point", "x y")
    tree = ({"a": [1, None, (2, 3)]}, OrderedDict(z=4, y=5), Point(6, 7))
    td = tree_util.tree_structure(tree)
    back = aot.tree_from_json(json.loads(json.dumps(aot.tree_to_json(td))))
    rebuilt = back.unflatten(range(td.num_leaves))
    assert rebuilt[0] == {"a": [0, None, (1, 2)]} and list(rebuilt[1].items()) == [("z", 3), ("y", 4)]
    assert tuple(rebuilt[2]) == (5, 6) and rebuilt[2].x == 5
    with pytest.raises(TypeError, match="non-string keys"):
        aot.tree_to_json(tree_util.tree_structure({1: 2}))


@pytest.mark.cpu_only  # (host offloads are the CPU's)
def test_save_of_a_module_calling_numpy_on_the_host_says_so(tmp_path):
    """With host offloads (`host_blas`, on by default in a process: `config.cpu_blas`), a large matmul calls
    stagec's BLAS module: such a module runs only through stagec, so saving it is refused unless asked for, and the
    artifact records the host modules and their ABI (`stagec compile` saves without offloads unless --host-blas).
    (Only matrix-vector products are offloaded: docs/blas.md.)"""
    from stagec.lowering import BLAS_MODULE, HOST_ABI
    a, v = np.full((512, 512), 0.5, np.float32), np.linspace(-1, 1, 512, dtype=np.float32)
    lowered = stagec.jit(lambda x, y: x @ y).lower(a, v)
    blas = lowered.compile(host_blas=True)
    assert BLAS_MODULE in blas.artifact.meta["host_modules"] and blas.artifact.meta["host_abi"] == HOST_ABI
    with pytest.raises(ValueError, match=r"imports stagec's host modules \['stagec_blas'\].*host_modules=True"):
        blas.save(tmp_path / "blas.stagec")
    blas.save(tmp_path / "blas.stagec", host_modules=True)
    np.testing.assert_allclose(np.asarray(stagec.load(tmp_path / "blas.stagec")(a, v)), a @ v, rtol=1e-5, atol=1e-6)
    plain = lowered.compile(host_blas=False)
    assert "host_modules" not in plain.artifact.meta and "stagec_blas" not in lowered.compile(
        host_blas=False).artifact.meta.get("host_modules", ())
    plain.save(tmp_path / "plain.stagec")
    ahead = lowered.compile("llvm-cpu")  # ahead of time the default is off, as `stagec compile` without --host-blas
    assert "host_modules" not in ahead.artifact.meta and ahead.artifact.meta["key"] == plain.artifact.meta["key"]
    np.testing.assert_allclose(np.asarray(stagec.load(tmp_path / "plain.stagec")(a, v)), a @ v, rtol=1e-5, atol=1e-6)
