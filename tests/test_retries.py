"""Retries (`stagec.compiler.retries`): a compile IREE 3.13 fails is compiled again as a declared variant, stored
under the variant's own key (what IREE compiled), with the request's key pointing to it."""
import hashlib

import numpy as np
import pytest

import stagec
from stagec import aot, cache, stages
from stagec.compiler import driver, retries
from stagec.compiler.targets import DATA_TILING


@pytest.fixture
def cdir(tmp_path, monkeypatch):
    """An empty cache folder of this test's own."""
    d = tmp_path / "cache"
    monkeypatch.setenv("STAGEC_CACHE_DIR", str(d))
    cache.reset_stats()
    return d


def sliced(a, b):
    return a[:, ::2] @ b[:128]  # IREE 3.13: 64-144 KiB of stack (limit 32 KiB) until the slice is materialized


def metas(d) -> list[dict]:
    return [aot.read_meta(p) for p, _ in cache.entries(str(d))]


def test_a_module_compiled_as_a_retry_is_stored_under_the_retrys_key(cdir, monkeypatch):
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((256, 256)).astype(np.float32) for _ in range(2))
    lowered = stagec.jit(sliced, backend="cpu").lower(a, b)
    n = stages.stats["iree_compiles"]
    c = lowered.compile(host_blas=False)  # (the AOT default; offloaded, the product would not reach IREE)
    assert c.variant == ["materialize-sliced-dots"] and "materialize-sliced-dots" in c.as_text()
    np.testing.assert_allclose(np.asarray(c(a, b)), sliced(a.astype(np.float64), b.astype(np.float64)),
                               rtol=1e-4, atol=1e-3)

    # the module under the variant's key; the request's key (of the text it asked for) points to it
    meta = c.artifact.meta
    comps = meta["key_components"]
    assert comps["variant"] == ["materialize-sliced-dots"] and meta["key"] == cache.make_key(comps)
    stored = {m["key"]: m for m in metas(cdir)}
    assert set(stored) == {meta["key"], *(k for k, m in stored.items() if "compiled_as" in m)} and len(stored) == 2
    pointer = next(m for m in stored.values() if "compiled_as" in m)
    assert pointer["compiled_as"] == c.variant and pointer["key"] != meta["key"]
    assert "variant" not in pointer["key_components"] and pointer["key"] == cache.make_key(pointer["key_components"])
    final = stages.Lowered(lowered.graph, lowered.name, lowered.in_tree, lowered.out_tree, lowered.donated,
                           lowered.passes, lowered.backend, host_blas=False).as_text("final")
    assert pointer["key_components"]["mlir"] == hashlib.sha256(final.encode()).hexdigest()

    # a hit: nothing compiled, the same module and variant
    misses = cache.info()["misses"]
    again = lowered.compile(host_blas=False)
    assert stages.stats["iree_compiles"] == n + 1
    assert cache.info()["hits"] == 1 and cache.info()["misses"] == misses  # (one hit: the pointer, then the module)
    assert again.variant == c.variant and bytes(again.artifact.vmfb) == bytes(c.artifact.vmfb)

    # a saved artifact says so too (its explorer page)
    from stagec import cli
    c.save(cdir.parent / "sliced.stagec")
    assert cli.main(["dump", str(cdir.parent / "sliced.stagec"), "--html", str(cdir.parent / "sliced.html")]) == 0
    assert "materialize-sliced-dots" in (cdir.parent / "sliced.html").read_text()

    # a retry declared with other flags: the variant's key changes, so the request compiles again
    changed = tuple(r._replace(add=("--iree-opt-strip-assertions",)) if r.name == "materialize-sliced-dots" else r
                    for r in retries.RETRIES)
    monkeypatch.setattr(retries, "RETRIES", changed)
    third = lowered.compile(host_blas=False)
    assert stages.stats["iree_compiles"] == n + 2 and cache.info()["misses"] == misses + 1
    assert third.variant == c.variant and "--iree-opt-strip-assertions" in third.flags
    assert third.artifact.meta["key"] != meta["key"]


ERROR = "error: exceeded stack allocation limit of 32768 bytes"


def test_retries_are_taken_once_each_in_their_declared_order():
    flags, taken = ["--a", DATA_TILING], []
    while (found := driver.next_retry(ERROR, "cpu", "module {}", flags, taken)) is not None:
        taken.append(found[0].name)
        flags = found[2]
    # (materialize-sliced-dots changes nothing in a module without sliced products: not taken)
    assert taken == ["stack-64k", "stack-1m", "no-data-tiling"]
    assert flags == retries.variant_flags(["--a", DATA_TILING], taken) == [
        "--a", "--iree-llvmcpu-stack-allocation-limit=1048576"]
    assert driver.next_retry(ERROR, "vulkan", "module {}", ["--a"], []) is None  # (CPU retries only)


def test_the_tuning_spec_retry_drops_the_spec():
    from stagec import tuning
    flag = tuning.FLAG + tuning.spec_path(("rows",))
    r, _, flags = driver.next_retry("error: failed to run translation of source executable", "cpu", "module {}",
                                    ["-a", flag], [])
    assert r.name == "no-tuning-spec" and flags == ["-a"]


def test_every_retry_says_which_iree_and_why():
    """Each retry names the IREE version it answers and why (and the test that shows it, where one does). On another
    IREE this lists the ones to check again."""
    import pathlib

    from stagec.passes import REGISTRY
    root = pathlib.Path(__file__).resolve().parents[1]
    assert len({r.name for r in retries.RETRIES}) == len(retries.RETRIES)
    for r in retries.RETRIES:
        assert r.iree and r.why and r.errors and (r.passes or r.add or r.drop), r.name
        assert all(p in REGISTRY for p in r.passes), r.name
        if r.test:
            path, _, test = r.test.partition("::")
            assert f"def {test}(" in (root / path).read_text(), (r.name, r.test)
    installed = ".".join(aot.iree_compiler_version().split(".")[:2])
    stale = sorted(f"{r.name} (IREE {r.iree})" for r in retries.RETRIES if r.iree != installed)
    assert not stale, f"retries written for another IREE than {installed}; check each again: {stale}"
