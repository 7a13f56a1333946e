"""Run-to-run spread: each workload's steady-state time per call in N fresh processes, on the machine as it is and
with background load (one busy-loop process per core), stagec with its BLAS offload (`config.cpu_blas`) on and
off, and JAX when installed. Prints each run's median per call, and the slowest run's median over the fastest's.

    python benchmarks/bench_spread.py                      # 10 runs, both load conditions, all workloads
    python benchmarks/bench_spread.py --runs 20 --load busy --only "matmul 256"
    python benchmarks/bench_spread.py --runs 20 --load busy-apart --variants blas,jax   # loops in their own session
    python benchmarks/bench_spread.py --sweep              # the offload rule's table: IREE vs BLAS per shape
    python benchmarks/bench_spread.py --sweep --blas-threads 1,2 --cpu-threads 1,2
    python benchmarks/bench_spread.py --runs 4 --variants sync,task,blas,jax --only train,"MLP",attention

Variants: `blas` (stagec as it is), `noblas` (`cpu_blas` off), `sync` / `task` (as `blas`, every module forced onto
local-sync / local-task where the rule allows a choice: `backend.TASK_WORK` set past any module / to 0), `jax`,
`before` (as `blas`, from another stagec checkout: `--before DIR`, e.g. `git archive main stagec | tar -x -C DIR`). The
driver column gives each jit's driver(s) and its largest dispatch's work (`compiler.driver.Facts.work`), from which
the rule picks the driver. Workloads: the five of issue 45 by default; `--only train` adds training steps of
dense networks (bench_models.py's rows, SGD or Adam), where the driver rule matters most.

A run is one process per variant, the variants' order alternating by run; a process compiles its workloads (the
compile cache makes later runs quick), then times each: the median of up to `--calls` calls (at most ~1 s),
each waiting for its result, as issue 45's script does. The load average (1 min) is recorded with each run, and
the CPU time a call took (all the process's threads, and the calling thread's alone): a spread in wall time with none
in CPU time is the share of the cores the process got, not its work; "queued" is the time its threads spent runnable
but not running, per call (Linux schedstat). "Slow share": the process's calls over 1.4x its fastest tenth (a call
that lost the core to another process mid-way); with about half its calls slow, a process's median is either mode,
so compare the mean per call and the slow share too. "Threads": CPU and queued time per call of each thread that
ran (the caller, stagec's dispatch worker, IREE's workers, JAX's pool), the median over processes.

`--only control` adds rows that use no library: a single-threaded NumPy loop of about 1 and 2 ms per call
(calibrated in each process), timed alike: what the scheduler alone does to a call of that length.

`--sweep` times `jit(a @ b)` per shape with the offload forced off (IREE's kernels; `STAGEC_CPU_THREADS` workers)
and forced on for every product (NumPy's BLAS with `OPENBLAS_NUM_THREADS` threads; a compile cache of its own), one process per configuration and run, and
prints the median over runs and BLAS / IREE per shape and load: the measurement `docs/blas.md`'s rule comes from.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

from _timing import alternating, fmt, import_jax, run_json
from _workloads import softmax

VARIANTS = ("blas", "noblas", "jax")
FORCED = {"sync": 1 << 62, "task": 0}  # variant -> backend.TASK_WORK
LOADS = ("as-is", "busy")  # and "busy-apart"
# (M, K, N) of the sweep's products: squares, the MLP step's and attention's shapes, thin and vector products
SHAPES = [(64, 64, 64), (128, 128, 128), (256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (128, 784, 1024),
          (128, 1024, 1024), (1024, 128, 1024), (128, 1024, 10), (256, 64, 256), (16, 4096, 16), (1, 2048, 2048),
          (2048, 2048, 1)]


def mlp_step(np_, grad):
    """Issue 40's training step: 784-1024-1024-10, tanh, log-softmax cross-entropy, SGD; batch 128."""
    def loss(params, x, y):
        h = x
        for i in range(0, len(params) - 2, 2):
            h = np_.tanh(h @ params[i] + params[i + 1])
        z = h @ params[-2] + params[-1]
        z = z - np_.max(z, axis=-1, keepdims=True)
        logp = z - np_.log(np_.sum(np_.exp(z), axis=-1, keepdims=True))
        return -np_.mean(np_.sum(logp * y, axis=-1))

    def step(params, x, y):
        return [p - 0.01 * g for p, g in zip(params, grad(loss)(params, x, y))]
    return step


def dense_step(np_, grad, nn, widths, act: str, kind: str, opt: str):
    """bench_models.py's training step: a dense network's loss (xent or mse), SGD or Adam written out."""
    f = {"tanh": np_.tanh, "relu": nn.relu, "gelu": nn.gelu}[act]

    def loss(params, x, y):
        for w, b in params[:-1]:
            x = f(x @ w + b)
        w, b = params[-1]
        out = x @ w + b
        if kind == "xent":
            return -np_.mean(np_.sum(y * nn.log_softmax(out), axis=-1))
        return np_.mean((out - y) ** 2)

    if opt == "sgd":
        return lambda params, x, y: [(w - 1e-3 * gw, b - 1e-3 * gb)
                                     for (w, b), (gw, gb) in zip(params, grad(loss)(params, x, y))]

    def adam(params, mom, vel, t, x, y, b1=0.9, b2=0.999):
        g, t = grad(loss)(params, x, y), t + 1.0
        out = [], [], []
        for lp, lm, lv, lg in zip(params, mom, vel, g):
            for p, m, v, g_ in zip(lp, lm, lv, lg):
                m, v = b1 * m + (1 - b1) * g_, b2 * v + (1 - b2) * g_ * g_
                out[0].append(p - 1e-3 * (m / (1 - b1 ** t)) / (np_.sqrt(v / (1 - b2 ** t)) + 1e-8))
                out[1].append(m)
                out[2].append(v)
        return (*out, t)
    return adam


# (widths, batch, activation, loss, optimizer): bench_models.py's rows
TRAIN = [((10, 32, 32, 1), 1024, "relu", "mse", "sgd"), ((64, 256, 256, 10), 32, "gelu", "xent", "adam"),
         ((64, 256, 256, 10), 128, "tanh", "xent", "adam"), ((256, 512, 512, 10), 8, "tanh", "xent", "adam"),
         ((32, 128, 10), 256, "tanh", "mse", "adam"), ((784, 1024, 1024, 10), 32, "relu", "xent", "adam"),
         ((256, 512, 512, 10), 1024, "relu", "xent", "sgd")]


def attention(np_, q, k, v):
    """One head-batched attention: softmax(q kᵀ / sqrt(d)) v."""
    s = np_.matmul(q, np_.swapaxes(k, -1, -2)) / np.float32(np.sqrt(q.shape[-1]))
    return np_.matmul(softmax(np_, s), v)


def control(ms: float):
    """A call of about `ms` of one thread's CPU that uses no library: NumPy's exp over 64k float32 repeated, the
    count calibrated here (the fastest of 30 tries of one)."""
    x = np.random.default_rng(1).standard_normal(1 << 16).astype(np.float32)
    y = np.empty_like(x)
    one = min(_elapsed(lambda: np.exp(x, out=y)) for _ in range(30))
    n = max(1, round(ms * 1e-3 / one))

    def call():
        for _ in range(n):
            np.exp(x, out=y)
    return call


def _elapsed(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def workloads(np_, grad, nn, train: bool = False) -> dict:
    """name -> (function of device arrays, host argument arrays); `train`: the training steps (`TRAIN`) too."""
    rng = np.random.default_rng(0)
    r = lambda *s, scale=1.0: (rng.standard_normal(s) * scale).astype(np.float32)
    widths = [784, 1024, 1024, 10]
    params = []
    for a, b in zip(widths[:-1], widths[1:]):
        params += [r(a, b, scale=a ** -0.5), np.zeros(b, np.float32)]
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]
    rows = {
        "matmul 256": (lambda a, b: a @ b, [r(256, 256), r(256, 256)]),
        "matmul 1024": (lambda a, b: a @ b, [r(1024, 1024), r(1024, 1024)]),
        "MLP step 784-1024-1024-10 b128": (mlp_step(np_, grad), [params, r(128, 784), y]),
        "attention 8x256x64": (lambda q, k, v: attention(np_, q, k, v), [r(8, 256, 64) for _ in range(3)]),
        "matvec 2048": (lambda a, v: np_.tanh(a @ v), [r(2048, 2048), r(2048)]),
    }
    for widths, batch, act, kind, opt in TRAIN if train else ():
        ps = [(r(a, b, scale=a ** -0.5), np.zeros(b, np.float32)) for a, b in zip(widths[:-1], widths[1:])]
        y = np.eye(widths[-1], dtype=np.float32)[rng.integers(0, widths[-1], batch)]
        zeros = [tuple(np.zeros_like(p) for p in layer) for layer in ps]
        args = [ps, r(batch, widths[0]), y] if opt == "sgd" else [ps, zeros, zeros, np.float32(0), r(batch, widths[0]), y]
        rows[f"train {'-'.join(map(str, widths))} b{batch} {act} {kind} {opt}"] = (
            dense_step(np_, grad, nn, widths, act, kind, opt), args)
    return rows


def _block(out):
    if out is None:  # (a control row)
        return
    for leaf in (out if isinstance(out, (list, tuple)) else [out]):
        _block(leaf) if isinstance(leaf, (list, tuple)) else leaf.block_until_ready()


def _median_call(call, calls: int, budget: float = 1.0, cpu: dict | None = None, workers: dict | None = None) -> float:
    """Median seconds of up to `calls` calls (at most ~`budget` seconds of them), each waiting for its result.
    `cpu`, if given, receives the CPU seconds a call took on average: "all" (the process's threads) and "caller"
    (the calling thread's: on local-task what it spent waiting for the workers), "queued" (runnable, not running),
    "mean" (seconds per call), "slow" (the share of calls over 1.4x the fastest tenth) and "threads" (`_threads`;
    `workers`: native thread id -> name for threads /proc names alike)."""
    ts, t_end = [], time.perf_counter() + budget
    c0, t0_thread, th0 = time.process_time(), time.thread_time(), _threads()
    while len(ts) < calls and (len(ts) < 20 or time.perf_counter() < t_end):
        t0 = time.perf_counter()
        _block(call())
        ts.append(time.perf_counter() - t0)
    if cpu is not None:
        n, th1 = len(ts), _threads()
        fast = float(np.percentile(ts, 10))
        names = {threading.get_native_id(): "caller", **(workers or {})}
        per: dict = {}  # thread name -> [threads, run, queued] per call, threads that ran or waited to
        for tid, (comm, run, wait) in th1.items():
            run0, wait0 = th0.get(tid, (comm, 0, 0))[1:]
            if run > run0 or wait > wait0:
                e = per.setdefault(names.get(tid, comm), [0, 0.0, 0.0])
                e[0], e[1], e[2] = e[0] + 1, e[1] + (run - run0) * 1e-9 / n, e[2] + (wait - wait0) * 1e-9 / n
        cpu.update(all=(time.process_time() - c0) / n, caller=(time.thread_time() - t0_thread) / n,
                   queued=sum(e[2] for e in per.values()), mean=statistics.fmean(ts),
                   slow=sum(t > 1.4 * fast for t in ts) / n, threads=per)
    return statistics.median(ts)


def _threads() -> dict:
    """{native thread id: (name, ns running, ns runnable but not running)} of this process's threads (Linux
    schedstat; {} elsewhere): the time a call lost to other processes, and which threads did its work."""
    out = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for t in tids:
        try:
            with open(f"/proc/self/task/{t}/schedstat") as f:
                run, wait = map(int, f.read().split()[:2])
            with open(f"/proc/self/task/{t}/comm") as f:
                out[int(t)] = (f.read().strip(), run, wait)
        except OSError:  # (a thread that ended)
            pass
    return out


def child(variant: str, only: list[str], calls: int) -> dict:
    """In a fresh process: {"times": {workload: median seconds per call}, "load": load average, ...}."""
    load0 = os.getloadavg()[0]
    if variant == "jax":
        jax, jnp = import_jax()
        np_, grad, jit, put, wait, nn = jnp, jax.grad, jax.jit, jax.device_put, lambda: None, jax.nn
    else:
        import stagec
        import stagec.backend
        import stagec.numpy as snp
        stagec.config.update("cpu_blas", variant != "noblas")
        if variant in FORCED:  # (forced onto local-task, a module is compiled for it: `driver.FENCED`)
            stagec.backend.TASK_WORK = FORCED[variant]
            if variant == "task":
                import stagec.compiler.driver
                stagec.compiler.driver.TASK_WORK = FORCED[variant]
        np_, grad, jit, put, wait, nn = snp, stagec.grad, stagec.jit, stagec.device_put, stagec.wait_for_compiles, stagec.nn
    times, drivers, cpu = {}, {}, {}
    rows = workloads(np_, grad, nn, any("train" in o for o in only))
    if any("control" in o for o in only):
        rows.update({f"control {ms} ms (NumPy, no library)": (None, ms) for ms in (1, 2)})
    for name, (fn, args) in rows.items():
        if only and not any(o in name for o in only):
            continue
        if fn is None:
            call = control(args)
        else:
            f = jit(fn)
            tree = lambda a: [tree(p) for p in a] if isinstance(a, (list, tuple)) else put(a)
            dev = [tree(a) for a in args]
            call = lambda f=f, dev=dev: f(*dev)
        _block(call())
        wait()
        _block(call())
        times[name] = _median_call(call, calls, cpu=cpu.setdefault(name, {}), workers=_workers(variant))
        if variant != "jax" and fn is not None:
            drivers[name] = _drivers(f)
    return {"times": times, "cpu": cpu, "drivers": drivers, "load": [load0, os.getloadavg()[0]]}


def _workers(variant: str) -> dict:
    """{native thread id: name} of stagec's dispatch worker threads (named apart from the caller, whose /proc name
    they share)."""
    if variant == "jax":
        return {}
    import stagec.backend
    return {b._worker.native_id: f"stagec-{b.name}" for b in stagec.backend.backends() if b._worker is not None}


def _drivers(f) -> str:
    """The driver(s) the jit's executables run on, with their largest dispatch's work (diagnostics; '?' where not
    found)."""
    try:
        exes = [getattr(r, "exe", None) for r in f._cache.values()]
        return ",".join(sorted({f"{getattr(e, 'driver', '?')} w={getattr(e, 'work', 0) / 1e6:.2g}M" for e in exes}))
    except Exception:
        return "?"


def sweep_child(config: str, shapes: list, calls: int) -> dict:
    """In a fresh process: `jit(a @ b)` per shape with the offload of `config` ("iree" or "blas")."""
    import stagec
    load0 = os.getloadavg()[0]
    blas = config == "blas"
    stagec.config.update("cpu_blas", blas)
    if blas:  # every product offloaded, whatever the rule (the parent gave this process a compile cache of its own)
        from stagec.passes import legalize
        legalize.BLAS_MIN_MACS = legalize.BLAS_MIN_VECTOR_MACS = 1
    rng = np.random.default_rng(0)
    out = {}
    for m, k, n in shapes:
        a, b = (stagec.device_put(rng.standard_normal(s).astype(np.float32)) for s in ((m, k), (k, n)))
        f = stagec.jit(lambda a, b: a @ b)
        _block(f(a, b))
        stagec.wait_for_compiles()
        _block(f(a, b))
        out[f"{m}x{k}x{n}"] = _median_call(lambda: f(a, b), calls, 0.5)
    return {"times": out, "load": [load0, os.getloadavg()[0]]}


class BusyLoad:
    """One busy-loop process per core while in the `with` block (none for `kind` "as-is"). "busy": the loops in this
    session, "busy-apart": in a session of their own, as another terminal's or user's load. (Linux's autogroups
    share the cores between sessions first: loops in the benchmark's session compete with its processes alone.)"""

    def __init__(self, kind: str):
        self.kind, self.procs = kind, []

    def __enter__(self):
        if self.kind in ("busy", "busy-apart"):
            n = len(os.sched_getaffinity(0))
            self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                           start_new_session=self.kind == "busy-apart") for _ in range(n)]
            time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()


def _run_child(args: list[str], env: dict | None = None) -> dict:
    return run_json([sys.executable, os.path.abspath(__file__), *args], name=" ".join(args),
                    env={**os.environ, **(env or {})})


def spread(ns) -> dict:
    variants = [v for v in ns.variants.split(",") if v != "jax" or import_jax()[0] is not None]
    only = [o for o in ns.only.split(",") if o]
    res: dict = {}
    for load in ns.load.split(","):
        runs: list = []
        with BusyLoad(load):
            for i in range(ns.runs):
                row = {}
                for v in alternating(variants, i):
                    env = None if v != "before" else {"PYTHONPATH": os.path.abspath(ns.before), "STAGEC_CACHE_DIR":
                                                      os.environ.get("STAGEC_CACHE_DIR", "/tmp/stagec") + "-before"}
                    row[v] = _run_child(["--child", "blas" if v == "before" else v, "--only", ns.only, "--calls",
                                         str(ns.calls)], env)
                runs.append(row)
                print(f"  [{load}] run {i + 1}/{ns.runs}: " + ", ".join(
                    f"{v} {' '.join(fmt(t) for t in row[v]['times'].values())}" for v in variants), flush=True,
                    file=sys.stderr)
        res[load] = runs
    print_spread(res, variants, only)
    return res


def print_spread(res: dict, variants: list[str], only: list[str]) -> None:
    for load, runs in res.items():
        loads = [x for r in runs for v in r.values() for x in v["load"]]
        print(f"\n## load: {load} (load average {min(loads):.1f}-{max(loads):.1f}), {len(runs)} fresh processes "
              f"per variant; per-run medians, then max / min")
        names = list(runs[0][variants[0]]["times"])
        for name in names:
            print(f"{name}")
            for v in variants:
                ts = [r[v]["times"][name] for r in runs]
                drivers = sorted({r[v].get("drivers", {}).get(name, "") for r in runs} - {""})
                print(f"  {v:7s} median {fmt(statistics.median(ts)):>10s}  min {fmt(min(ts)):>10s}  max "
                      f"{fmt(max(ts)):>10s}  spread {max(ts) / min(ts):6.2f}x  "
                      f"{' '.join(fmt(t) for t in ts)}" + (f"  [{'/'.join(drivers)}]" if drivers else ""))
                cs = [r[v].get("cpu", {}).get(name) for r in runs]
                if all(cs):  # CPU per call: a spread here is the work's, one in wall time alone is the load's
                    a, c = [x["all"] for x in cs], [x["caller"] for x in cs]
                    q = [x.get("queued", 0.0) for x in cs]
                    print(f"  {'':7s} CPU/call {fmt(statistics.median(a)):>8s}  spread {max(a) / min(a):6.2f}x  "
                          f"caller {fmt(statistics.median(c)):>8s}  (all threads / the calling thread); queued/call "
                          f"{' '.join(fmt(x) for x in q)}")
                if all(x and "mean" in x for x in cs):
                    m, sl = [x["mean"] for x in cs], [x["slow"] for x in cs]
                    print(f"  {'':7s} mean/call {fmt(statistics.median(m)):>8s}  spread {max(m) / min(m):6.2f}x  slow "
                          f"share {statistics.median(sl):.2f} ({min(sl):.2f}-{max(sl):.2f})  threads: {_thread_line(cs)}")


def _thread_line(cs: list) -> str:
    """The threads that ran during the calls: name (xN threads of that name), CPU / queued per call, the median over
    processes (a thread absent from a process counts 0 there)."""
    names = sorted({k for x in cs for k in x["threads"]}, key=lambda k: (k != "caller", k))
    parts = []
    for k in names:
        e = [x["threads"].get(k, [0, 0.0, 0.0]) for x in cs]
        n = max(x[0] for x in e)
        parts.append(f"{k}{f' x{n}' if n > 1 else ''} {fmt(statistics.median(x[1] for x in e))}/"
                     f"{fmt(statistics.median(x[2] for x in e))}")
    return ", ".join(parts)


def sweep(ns) -> dict:
    shapes = SHAPES if not ns.shapes else [tuple(int(d) for d in s.split("x")) for s in ns.shapes.split(",")]
    configs = [("iree", t) for t in ns.cpu_threads.split(",")] + [("blas", t) for t in ns.blas_threads.split(",")]
    spec = ",".join("x".join(map(str, s)) for s in shapes)
    cache = os.environ.get("STAGEC_CACHE_DIR", os.path.expanduser("~/.cache/stagec"))
    res: dict = {}
    for load in ns.load.split(","):
        with BusyLoad(load):
            rows = {c: [] for c in configs}
            for i in range(ns.runs):
                for kind, t in alternating(configs, i):
                    env = ({"STAGEC_CPU_THREADS": t} if kind == "iree" else
                           {"STAGEC_CACHE_DIR": cache + "-blas-all", **({} if t == "-" else {"OPENBLAS_NUM_THREADS": t})})
                    rows[kind, t].append(_run_child(["--sweep-child", kind, "--shapes", spec, "--calls",
                                                     str(ns.calls)], env))
                print(f"  [{load}] run {i + 1}/{ns.runs}", file=sys.stderr, flush=True)
            res[load] = {f"{k}:{t}": v for (k, t), v in rows.items()}
    print_sweep(res)
    return res


def print_sweep(res: dict) -> None:
    for load, rows in res.items():
        loads = [x for runs in rows.values() for r in runs for x in r["load"]]
        print(f"\n## load: {load} (load average {min(loads):.1f}-{max(loads):.1f}); jit(a @ b) float32, median over "
              f"{len(next(iter(rows.values())))} fresh processes of each one's median per call (max/min over runs)")
        configs = list(rows)
        print(f"{'M x K x N':>16s} " + " ".join(f"{c:>22s}" for c in configs) + "   best BLAS / best IREE")
        for shape in rows[configs[0]][0]["times"]:
            cells, med = [], {}
            for c in configs:
                ts = [r["times"][shape] for r in rows[c]]
                med[c] = statistics.median(ts)
                cells.append(f"{fmt(med[c])} ({max(ts) / min(ts):.1f}x)")
            iree = min(v for c, v in med.items() if c.startswith("iree"))
            blas = [v for c, v in med.items() if c.startswith("blas")]
            ratio = f"{min(blas) / iree:.2f}" if blas else "-"
            print(f"{shape:>16s} " + " ".join(f"{x:>22s}" for x in cells) + f"   {ratio}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--calls", type=int, default=200, help="calls per workload and process (at most ~1 s)")
    p.add_argument("--load", default=",".join(LOADS), help="as-is, busy (one busy-loop process per core), busy-apart (the same in a session of its own)")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--before", default="", help="a stagec checkout for the variant 'before'")
    p.add_argument("--only", default="", help="comma-separated substrings of workload names")
    p.add_argument("--sweep", action="store_true", help="the offload rule's table (IREE vs BLAS per shape)")
    p.add_argument("--shapes", default="", help="--sweep: MxKxN,...")
    p.add_argument("--cpu-threads", default="2", help="--sweep: IREE worker counts (STAGEC_CPU_THREADS)")
    p.add_argument("--blas-threads", default="", help="--sweep: OPENBLAS_NUM_THREADS values ('-': unset)")
    p.add_argument("--json", default="", help="also write the raw results here")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--sweep-child", help=argparse.SUPPRESS)
    ns = p.parse_args()
    if ns.child:
        print(json.dumps(child(ns.child, [o for o in ns.only.split(",") if o], ns.calls)))
        return
    if ns.sweep_child:
        shapes = [tuple(int(d) for d in s.split("x")) for s in ns.shapes.split(",")]
        print(json.dumps(sweep_child(ns.sweep_child, shapes, ns.calls)))
        return
    if ns.sweep and not ns.blas_threads:
        ns.blas_threads = "-"
    res = sweep(ns) if ns.sweep else spread(ns)
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(res, f)


if __name__ == "__main__":
    main()
