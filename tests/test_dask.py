"""stagec on Dask: pickling that ships compiled modules, and a real `distributed.LocalCluster` of two worker
processes (one thread each): map_blocks, compile once and run everywhere, reductions, a data-parallel training
loop, a worker killed mid-map. Oracles: NumPy in float64.

The cluster is shared by the module's tests (started once: ~5 s). Its workers and this process share one
persistent cache folder (`STAGEC_CACHE_DIR`, a fresh temporary one), as the processes of one machine do by
default; that a worker runs what the client compiled without compiling is shown by its counters
(`stagec.dask.stats`: `compiles` 0, `shipped` > 0), which a cache hit would not give (it counts as a compile)."""
from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import tree_util

_jit_stats = sys.modules["stagec.jit"].stats

# ---------------------------------------------------------------- pickling, without Dask


def test_pickles_run_in_a_new_process_without_compiling(tmp_path):
    cloudpickle = pytest.importorskip("cloudpickle", reason='needs cloudpickle: pip install "stagec[dask]"')
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    f = stagec.jit(snp.tanh)
    compiled = stagec.jit(snp.sin).lower(x).compile()
    f(x)  # compiled here: the pickle ships the module
    blob = cloudpickle.dumps((f, compiled, stagec.device_put(x), stagec.jit(snp.cos).lower(x), compiled.artifact))
    code = """if 1:
        import pickle, sys, numpy as np, stagec
        from stagec import stages
        f, compiled, a, lowered, art = pickle.loads(sys.stdin.buffer.read())
        x = np.asarray(a)
        outs = [f(x), compiled(x), art.runner()([x])]
        jit = sys.modules["stagec.jit"].stats
        print(jit["compiles"], jit["traces"], jit["shipped"], stages.stats["iree_compiles"])
        outs.append(lowered.compile()(x))  # (its texts came along: no trace, IREE compiles the final one)
        print(jit["traces"], stages.stats["iree_compiles"], "stablehlo.cosine" in lowered.as_text())
        np.save(sys.argv[1], np.stack([np.asarray(o) for o in outs]))
        """
    env = dict(os.environ, STAGEC_CACHE_DIR=str(tmp_path / "cache"))  # (nothing cached there)
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "o.npy")], input=blob, capture_output=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    first, second = r.stdout.decode().split("\n")[:2]
    assert first.split() == ["0", "0", "1", "0"]  # (compiles, traces, shipped, IREE compiles)
    assert second.split() == ["0", "1", "True"]
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(np.load(tmp_path / "o.npy"), [np.tanh(x64), np.sin(x64), np.sin(x64), np.cos(x64)],
                               rtol=2e-6, atol=2e-6)


def test_pickled_signatures_are_bounded_and_rebuilt(monkeypatch):
    jit_mod = sys.modules["stagec.jit"]
    assert 1 <= jit_mod.SHIP <= 16
    monkeypatch.setattr(jit_mod, "SHIP", 3)  # (the bound's code, with fewer signatures to compile past it)
    f = stagec.jit(lambda x: x * 2)
    for n in range(1, 6):
        f(np.ones(n, np.float32))
    _, (_, _, shipped, _) = f.__reduce__()
    assert len(shipped) == 3
    assert [k[1][0].shape for k, _, _ in shipped] == [(3,), (4,), (5,)]  # the newest
    loud = stagec.jit(lambda x: stagec.pure_callback(np.sin, x, x) * 2)
    loud(np.ones(3, np.float32))
    assert loud.__reduce__()[1][2] == []  # (a module calling Python stays here: the worker compiles its own)
    tree = tree_util.tree_structure(({"a": 1, "b": (2, 3)},))
    again = pickle.loads(pickle.dumps(tree))
    assert again == tree and hash(again) == hash(tree)  # (a hash kept from another process would differ)


def test_numpy_reductions_of_stagec_arrays():
    # (Dask's chunk functions call np.sum(block, ..., out=None), which calls the block's own .sum with out=None)
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    a = stagec.device_put(x)
    np.testing.assert_array_equal(np.asarray(np.sum(a, axis=0, keepdims=True)), x.sum(axis=0, keepdims=True))
    np.testing.assert_array_equal(np.asarray(np.max(a, axis=1)), x.max(axis=1))
    with pytest.raises(NotImplementedError, match="immutable"):
        a.sum(out=np.empty(()))


def test_without_dask_the_helpers_say_what_to_install(monkeypatch):
    import stagec.dask as sd  # (importable without Dask: it is imported where used)
    monkeypatch.setitem(sys.modules, "dask", None)  # (as if not installed)
    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(ImportError, match=r'pip install "stagec\[dask\]"'):
        sd.map_blocks(lambda b: b, np.ones(3))


# ---------------------------------------------------------------- the cluster

try:
    import dask
    import dask.array as da
    from dask import delayed
    from distributed import Client, LocalCluster
except ImportError:  # (the tests above still run; those on the cluster are skipped)
    da = None

import stagec.dask as sdask  # noqa: E402


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    if da is None:
        pytest.skip('needs Dask: pip install "stagec[dask]"')
    old = os.environ.get("STAGEC_CACHE_DIR")
    os.environ["STAGEC_CACHE_DIR"] = str(tmp_path_factory.mktemp("dask-cache"))  # (the workers inherit it)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=40)
    c = Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()
        if old is None:
            del os.environ["STAGEC_CACHE_DIR"]
        else:
            os.environ["STAGEC_CACHE_DIR"] = old


def worker_stats(client) -> dict:
    return client.run(sdask.stats)


def delta(after: dict, before: dict) -> dict:
    return {w: {k: after[w][k] - before.get(w, {}).get(k, 0) for k in after[w]} for w in after}


def data(shape=(4000, 256), chunks=(500, 256), seed=0):
    x = da.random.RandomState(seed).random_sample(shape, chunks=chunks).astype("float32")
    return x, x.compute().astype(np.float64)


def module_level(b):
    return snp.tanh(b) * 2.0 + 1.0


def test_map_blocks_module_function_lambda_closure(client):
    x, x64 = data()
    w = np.linspace(-1, 1, 256, dtype=np.float32)
    ws = stagec.device_put(w)  # (a stagec Array in the closure: pickled as its value)
    cases = [(module_level, np.tanh(x64) * 2 + 1), (lambda b: b * b - 0.5, x64 * x64 - 0.5),
             (lambda b: snp.sin(b) * ws, np.sin(x64) * w.astype(np.float64))]
    graphs = []
    for f, _ in cases:
        graphs.append(x.map_blocks(stagec.jit(f), dtype="float32").sum())  # as a user writes it
        got = sdask.map_blocks(f, x)  # dtype and meta by tracing; NumPy blocks
        assert got.dtype == np.float32 and type(got._meta) is np.ndarray
        graphs.append(got)
    outs = dask.compute(*graphs)  # (all six graphs in one round on the cluster)
    for (_, want), total, got in zip(cases, outs[0::2], outs[1::2]):
        np.testing.assert_allclose(total, want.sum(), rtol=1e-5)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


def test_compile_once_run_everywhere(client):
    x, x64 = data(shape=(3500, 128), chunks=(1000, 128), seed=1)  # blocks of 1000 rows, and a last one of 500
    scale = np.float32(3.0)
    f = stagec.jit(lambda b: snp.exp(-b) * scale)  # a closure: pickled by value, a new object on each worker
    f(np.zeros((1000, 128), np.float32))  # the client compiles the full blocks' signature
    before = worker_stats(client)
    got = x.map_blocks(f, dtype="float32").compute()
    np.testing.assert_allclose(got, np.exp(-x64) * 3, rtol=2e-6)
    d = delta(worker_stats(client), before)
    assert sum(s["shipped"] for s in d.values()) >= 1
    # one signature the client never compiled (the last block's) is compiled by the worker that ran it; the others
    # ran from the shipped module: no trace, no compile
    assert sorted(s["compiles"] for s in d.values()) == [0, 1], d
    assert sum(s["traces"] for s in d.values()) == sum(s["compiles"] for s in d.values()), d
    assert all(s["iree_compiles"] <= s["compiles"] for s in d.values()), d
    before = worker_stats(client)
    f(np.zeros((500, 128), np.float32))  # now the client has both
    np.testing.assert_allclose(x.map_blocks(f, dtype="float32").compute(), np.exp(-x64) * 3, rtol=2e-6)
    d = delta(worker_stats(client), before)
    assert all(s["compiles"] == 0 and s["traces"] == 0 and s["iree_compiles"] == 0 for s in d.values()), d


def test_a_closure_compiles_once_per_worker(client):
    x, x64 = data(shape=(1600, 16), chunks=(100, 16), seed=5)
    offset = np.float32(0.25)
    g = stagec.jit(lambda b: b * b + offset)  # the client compiles nothing: each worker compiles, once
    before = worker_stats(client)
    np.testing.assert_allclose(x.map_blocks(g, dtype="float32").compute(), x64 * x64 + 0.25, rtol=2e-6)
    d = delta(worker_stats(client), before)  # (16 tasks, each unpickling its own copy of `g`: one function here)
    assert all(s["compiles"] <= 1 for s in d.values()) and sum(s["compiles"] for s in d.values()) >= 1, d


def test_map_blocks_checks_the_traced_shape(client):
    x, _ = data()
    with pytest.raises(ValueError, match="pass chunks="):
        sdask.map_blocks(lambda b: b[:, :3], x)
    got = sdask.map_blocks(lambda b: b[:, :3] * 2, x, chunks=(500, 3)).compute()
    np.testing.assert_allclose(got, x.compute()[:, :3] * 2)


def test_reduction_with_jitted_chunk_and_aggregate(client):
    x, x64 = data(seed=2)
    chunk = stagec.jit(lambda b, axis, keepdims: snp.sum(b * b, axis=axis, keepdims=keepdims),
                       static_argnames=("axis", "keepdims"))
    combine = stagec.jit(lambda b, axis, keepdims: snp.sum(b, axis=axis, keepdims=keepdims),
                         static_argnames=("axis", "keepdims"))  # (partial sums, at the tree's inner levels)
    agg = stagec.jit(lambda b, axis, keepdims: snp.sqrt(snp.sum(b, axis=axis, keepdims=keepdims)),
                     static_argnames=("axis", "keepdims"))
    got = da.reduction(x, chunk, agg, combine=combine, axis=0, dtype="float32", split_every=4,
                       meta=np.empty((0,), np.float32)).compute()
    np.testing.assert_allclose(np.asarray(got), np.sqrt((x64 * x64).sum(axis=0)), rtol=1e-5)


# ---- data-parallel training: per-shard value_and_grad, gradients summed in a tree, the update on the client

def mlp_loss(p, xb, yb):
    h = snp.tanh(xb @ p["w1"] + p["b1"])
    return snp.sum((h @ p["w2"] + p["b2"] - yb) ** 2)


def mlp_numpy(p, xb, yb):
    """(loss, gradients) of `mlp_loss` in float64, by hand."""
    h = np.tanh(xb @ p["w1"] + p["b1"])
    r = h @ p["w2"] + p["b2"] - yb
    dh = (2 * r) @ p["w2"].T * (1 - h * h)
    return (r * r).sum(), {"w1": xb.T @ dh, "b1": dh.sum(0), "w2": h.T @ (2 * r), "b2": (2 * r).sum(0)}


def test_data_parallel_training_matches_float64(client):
    n, d, hidden, steps, lr = 4000, 8, 16, 8, 0.05  # (the loss falls to a fifth in 8 steps)
    rs = np.random.RandomState(3)
    x = rs.standard_normal((n, d)).astype(np.float32)
    y = np.sin(x @ rs.standard_normal((d, 1))).astype(np.float32)
    params = {"w1": rs.standard_normal((d, hidden)) * 0.5, "b1": np.zeros(hidden),
              "w2": rs.standard_normal((hidden, 1)) * 0.5, "b2": np.zeros(1)}
    xs, ys = da.from_array(x, chunks=(1000, d)), da.from_array(y, chunks=(1000, 1))
    vag = stagec.jit(stagec.value_and_grad(mlp_loss))
    shard = delayed(lambda p, xb, yb: tree_util.tree_map(np.asarray, vag(p, xb, yb)), pure=True)
    add = lambda a, b: tree_util.tree_map(np.add, a, b)  # noqa: E731
    p32 = {k: v.astype(np.float32) for k, v in params.items()}
    p64 = dict(params)
    losses, oracle = [], []
    vag(p32, x[:1000], y[:1000])  # compiled once here: shipped to the workers inside `shard`
    before = worker_stats(client)
    for _ in range(steps):
        loss, g = sdask.tree_reduce(add, [shard(p32, xb, yb) for xb, yb in zip(xs.to_delayed().ravel(),
                                                                               ys.to_delayed().ravel())]).compute()
        losses.append(float(loss) / n)
        p32 = {k: (p32[k] - lr * g[k] / n).astype(np.float32) for k in p32}
        l64, g64 = mlp_numpy(p64, x.astype(np.float64), y.astype(np.float64))
        oracle.append(l64 / n)
        p64 = {k: p64[k] - lr * g64[k] / n for k in p64}
    assert oracle[-1] < 0.8 * oracle[0]  # (it learns: the comparison is not of a flat curve)
    np.testing.assert_allclose(losses, oracle, rtol=1e-4)
    # Each task unpickles its own copy of `shard` and of `vag` in it, all one function on a worker, which runs the
    # module the client compiled: nothing traced or compiled on the workers in 8 steps
    d = delta(worker_stats(client), before)
    assert all(s["compiles"] == 0 and s["traces"] == 0 for s in d.values()), d
    assert all(s["shipped"] >= 1 for s in d.values()), d


# ---- last: a worker killed in the middle of a map

def test_a_killed_worker_is_replaced_and_the_cache_stays_sound(client, tmp_path):
    x, x64 = data(shape=(4000, 64), chunks=(250, 64), seed=4)
    marker = str(tmp_path / "killed")
    f = stagec.jit(lambda b: snp.log1p(b) * 0.5)  # not compiled by the client: the workers compile and store it
    h = stagec.jit(lambda b: snp.expm1(b) * 3.0)

    def block(b, block_info=None):
        if block_info[0]["chunk-location"][0] == 5 and not os.path.exists(marker):
            open(marker, "w").close()
            threading.Thread(target=h, args=(np.ones((37, 64), np.float32),), daemon=True).start()
            time.sleep(0.3)  # (most likely inside h's compile, or writing its cache entry)
            os.kill(os.getpid(), signal.SIGKILL)  # the worker process dies inside the task
        return np.asarray(f(b))

    got = x.map_blocks(block, dtype="float32").compute()
    assert os.path.exists(marker)
    np.testing.assert_allclose(got, np.log1p(x64) * 0.5, rtol=2e-6)
    client.wait_for_workers(2, timeout=60)
    from stagec import aot, cache
    entries = [e for e in os.listdir(cache.cache_dir()) if e.endswith(cache.SUFFIX)]
    assert entries
    for e in entries:
        aot.read(os.path.join(cache.cache_dir(), e))  # (raises ArtifactError for a partial or corrupt entry)
    ones = np.ones((37, 64), np.float32)
    np.testing.assert_allclose(client.submit(lambda: np.asarray(h(ones)), pure=False).result(),
                               np.expm1(ones.astype(np.float64)) * 3, rtol=2e-6)  # (the killed compile, again)
