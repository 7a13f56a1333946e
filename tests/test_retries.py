"""Retries (`stagec.compiler.retries`): a compile IREE 3.13 fails is compiled again as a declared variant, stored
under the variant's own key (what IREE compiled), with the request's key pointing to it."""
import hashlib
import subprocess

import iree.compiler as ic
import numpy as np
import pytest

import stagec
from stagec import aot, cache, stages
from stagec.compiler import driver, retries
from stagec.compiler.targets import DATA_TILING, STACK_1M, STACK_64K, TARGETS


@pytest.fixture
def cdir(tmp_path, monkeypatch, no_background):
    """An empty cache folder of this test's own."""
    d = tmp_path / "cache"
    monkeypatch.setenv("STAGEC_CACHE_DIR", str(d))
    cache.reset_stats()
    return d


def sliced(a, b):
    return a[:, ::2] @ b[:128]  # IREE 3.13: 64-144 KiB of stack (over `STACK_64K`) until the slice is materialized


def metas(d) -> list[dict]:
    return [aot.read_meta(p) for p, _ in cache.entries(str(d))]


def test_a_module_compiled_as_a_retry_is_stored_under_the_retrys_key(cdir, monkeypatch):
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((256, 256)).astype(np.float32) for _ in range(2))
    lowered = stagec.jit(sliced, backend="cpu").lower(a, b)
    # The stack failure this retry answers is the host's: an AVX-512 CPU's tiles keep 64-144 KiB, an AVX2 one's
    # (AMD EPYC znver3) fit. The module as asked fails as on the former, on any host.
    real = driver._compile_checked

    def failing(mlir, *args, **kwargs):
        if mlir == asked.setdefault("mlir", mlir):
            raise ic.CompilerToolError(subprocess.CompletedProcess(["iree-compile"], 1, b"", ERROR.encode()))
        return real(mlir, *args, **kwargs)
    asked = {}
    monkeypatch.setattr(driver, "_compile_checked", failing)
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
    assert taken == ["stack-1m", "no-data-tiling"]
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


def test_a_tile_over_32k_of_stack_compiles_the_first_time(cdir):
    """The gradient of a small MLP on 1000 rows keeps 32-64 KiB on a tile's stack: over IREE's default limit, it failed
    and compiled again (`stack-64k`, a retry before); the CPU target's limit (`STACK_64K`) compiles it at once, and
    it matches float64 NumPy."""
    import stagec.numpy as snp

    def loss(p, x, y):
        h = snp.tanh(x @ p["w1"] + p["b1"])
        return snp.sum((h @ p["w2"] + p["b2"] - y) ** 2)

    rs = np.random.RandomState(3)
    x = rs.standard_normal((1000, 8)).astype(np.float32)
    y = np.sin(x @ rs.standard_normal((8, 1))).astype(np.float32)
    p = {"w1": rs.standard_normal((8, 16)).astype(np.float32) * 0.5, "b1": np.zeros(16, np.float32),
         "w2": rs.standard_normal((16, 1)).astype(np.float32) * 0.5, "b2": np.zeros(1, np.float32)}
    n = stages.stats["iree_compiles"]
    c = stagec.jit(stagec.value_and_grad(loss)).lower(p, x, y).compile()
    assert c.variant == [] and stages.stats["iree_compiles"] == n + 1 and STACK_64K in TARGETS["cpu"].flags
    value, g = c(p, x, y)
    # float64 oracle, by hand
    p64 = {k: v.astype(np.float64) for k, v in p.items()}
    h = np.tanh(x @ p64["w1"] + p64["b1"])
    r = h @ p64["w2"] + p64["b2"] - y
    dh = 2 * r @ p64["w2"].T * (1 - h ** 2)
    want = {"w1": x.T.astype(np.float64) @ dh, "b1": dh.sum(0), "w2": h.T @ (2 * r), "b2": (2 * r).sum(0)}
    np.testing.assert_allclose(float(value), (r ** 2).sum(), rtol=1e-5)
    for k in want:
        np.testing.assert_allclose(np.asarray(g[k]), want[k], rtol=2e-4, atol=1e-3, err_msg=k)


@pytest.mark.cpu_only  # (the retry is the CPU pipeline's)
@pytest.mark.parametrize("foreseen", [True, False])
def test_grad_of_an_overlapping_max_pool_then_a_product_compiles(foreseen, monkeypatch):
    """The gradient of a 2x2 max pool of stride 1 followed by a batched product (a convolution in
    examples/differentially_private_sgd.py; a dense layer's `@` is a plain product since matmul stopped copying
    weights across batch dims, and no longer fails): IREE 3.13 at O3 put the product and the pool gradient's selects
    in one dispatch that its CPU codegen could not distribute ("write affecting operations on global resources"),
    with or without multi-use fusion. `pool-gradients-unfused` (the default) marks such a module: it is compiled
    without aggressive fusion at once; without the pass the first compile fails and the backend compiles it again
    so. Against float64 NumPy."""
    import stagec.numpy as snp
    from stagec import lax
    from stagec.passes import legalize

    if not foreseen:
        monkeypatch.setattr(legalize.POOL_GRADIENTS_UNFUSED, "fn", lambda module: False)

    def loss(p, x):
        w, W = p
        m = lax.reduce_window(x * w, -snp.inf, lax.max, (1, 2, 2, 1), (1, 1, 1, 1), "VALID")
        return snp.sum((m @ snp.broadcast_to(W, (1, 7, 2, 3))) ** 2)  # (a batched product: IREE fuses its selects)

    rng = np.random.default_rng(0)
    x = rng.random((1, 8, 8, 2)).astype(np.float32)
    w, W = rng.standard_normal(2).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    c = stagec.jit(stagec.grad(loss)).lower((w, W), x).compile()
    assert c.variant == ([] if foreseen else ["no-aggressive-fusion"]) and retries.NO_AGGRESSIVE_FUSION in c.flags
    gw, gW = c((w, W), x)
    # float64 oracle: the pool's windows, the first maximum of each takes the gradient
    y = x.astype(np.float64) * w
    win = np.stack([y[:, i:i + 7, j:j + 7] for i in (0, 1) for j in (0, 1)])  # (4, 1, 7, 7, 2)
    m = win.max(0)
    dz = 2 * m @ W.astype(np.float64)
    dm = dz @ W.T.astype(np.float64)
    first = win.argmax(0)
    dy = np.zeros_like(y)
    for k, (i, j) in enumerate((i, j) for i in (0, 1) for j in (0, 1)):
        dy[:, i:i + 7, j:j + 7] += np.where(first == k, dm, 0)
    np.testing.assert_allclose(np.asarray(gW), np.einsum("nhwc,nhwd->cd", m, dz), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gw), (x * dy).sum((0, 1, 2)), rtol=1e-5, atol=1e-5)


@pytest.mark.cpu_only  # (the CPU target's stack limit)
def test_a_packed_activation_over_64k_of_stack_compiles_the_first_time(cdir):
    """The SGD step of a 1-128-128-1 ReLU MLP on 128 rows (JAX's pytrees tutorial): IREE 3.13 packs the 128x128
    activation inside a matrix-vector product's dispatch, 66048 bytes of stack; under the target's 64 KiB it failed
    and compiled again (`stack-1m`). A module with no sliced product operand gets 1 MiB at once (the limit is only a
    check), one with one keeps 64 KiB (`materialize-sliced-dots`' test). Against float64 NumPy."""
    import stagec.numpy as snp

    def update(p, x, y):
        def loss(p):
            h = x
            for w, b in p[:-1]:
                h = stagec.nn.relu(h @ w + b)
            return snp.mean((h @ p[-1][0] + p[-1][1] - y) ** 2)
        return [(w - 1e-2 * gw, b - 1e-2 * gb) for (w, b), (gw, gb) in zip(p, stagec.grad(loss)(p))]

    rs = np.random.RandomState(0)
    p = [(rs.normal(size=(i, o)).astype(np.float32) * np.sqrt(2 / i), np.ones(o, np.float32))
         for i, o in ((1, 128), (128, 128), (128, 1))]
    x = rs.normal(size=(128, 1)).astype(np.float32)
    y = (x ** 2).astype(np.float32)
    n = stages.stats["iree_compiles"]
    c = stagec.jit(update).lower(p, x, y).compile()
    assert c.variant == [] and stages.stats["iree_compiles"] == n + 1 and STACK_1M in c.flags
    got = c(p, x, y)
    # float64 oracle, by hand
    p64 = [(w.astype(np.float64), b.astype(np.float64)) for w, b in p]
    hs = [x.astype(np.float64)]
    for w, b in p64[:-1]:
        hs.append(np.maximum(hs[-1] @ w + b, 0))
    d = 2 * (hs[-1] @ p64[-1][0] + p64[-1][1] - y) / y.size
    want = []
    for (w, b), h in zip(reversed(p64), reversed(hs)):
        want.append((w - 1e-2 * h.T @ d, b - 1e-2 * d.sum(0)))
        d = (d @ w.T) * (h > 0)
    for (gw, gb), (ww, wb) in zip(got, reversed(want)):
        np.testing.assert_allclose(np.asarray(gw), ww, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(gb), wb, rtol=1e-5, atol=1e-6)
    assert STACK_64K in stagec.jit(sliced).lower(np.ones((256, 256), np.float32),
                                                 np.ones((256, 256), np.float32)).compile().flags


def test_lcm_of_related_int8_operands_compiles():
    """int8 `lcm(x, x + 1)` under jit: IREE 3.13's stream partitioning failed ("circular dependency: input operation
    uses partition output"), a CompileError; `no-multi-use-fusion` compiles it. Against NumPy."""
    import stagec.numpy as snp
    w = np.array([100, 120, 7, -9], np.int8)
    got = stagec.jit(lambda b: snp.lcm(b, b + 1))(w)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(np.asarray(got), np.lcm(w, w + 1))


@pytest.mark.cpu_only  # (CUDA's pipeline places no loop: `loops-on-one-device` is the CPU's and Vulkan's)
def test_a_placed_loop_iree_cannot_convert_compiles_unplaced():
    # a scan of one step updating, by scatters, carries that start as constants, placed on the device
    # (`loops-on-one-device`): IREE 3.13 fails to convert the module to streams ("unresolved target
    # materialization"), and the retry compiles it unplaced. (Copying every constant start avoided it, but IREE
    # hoisted the copies into one initializer dispatch binding 36 buffers: an LSTM's module did not load.)
    import stagec.numpy as snp
    from stagec import lax

    def f(x):
        def body(c, i):
            a, b = c
            return (a.at[i % 8].set(a[(i + 1) % 8] + b[i % 8]), b.at[i % 8].set(a[i % 8] + 1.0)), a[0]
        return lax.scan(body, (snp.zeros_like(x), snp.ones_like(x)), snp.arange(1))
    x = np.arange(1 << 14, dtype=np.float32)  # (2 carries of 64 KiB: placed, `legalize.PLACED_BYTES`)
    compiled = stagec.jit(f).lower(x).compile()
    assert compiled.variant == ["loops-unplaced"]
    (a, b), ys = compiled(x)
    want_a, want_b = np.zeros(x.size), np.ones(x.size)
    want_a[0], want_b[0] = 0 + 1, 0 + 1
    np.testing.assert_array_equal(np.asarray(a), want_a)
    np.testing.assert_array_equal(np.asarray(b), want_b)
    np.testing.assert_array_equal(np.asarray(ys), [0.0])
