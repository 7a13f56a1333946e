"""Model-level rows, stagec beside JAX: training steps of dense networks, eager dispatch of small ops, eager matmul,
other programs.

    python benchmarks/bench_models.py [--repeat 3] [--only train,eager,programs] [--no-jax] [--before DIR] [--quick]
                                      [--clock wall|cpu] [--no-blas-row] [--sweep] [--models A,B] [--one-thread-row]

- train: `jit` of a function that calls `grad` of a dense network's loss and returns the updated parameter list
  (SGD, or Adam written by hand), at several widths, batches, activations and losses (`--sweep`: 21 rows, widths
  10-4096, batches 1-1024; `--models`: the rows whose names contain one of the given texts); stagec with
  `config.cpu_blas` on (the default) and off (and on one thread: `--one-thread-row`). Time per step, median of
  batches of steps, the parameters fed back.
- eager: operations outside `jit` on arrays made on the device, kernels compiled and warm (`x + 1.0` on 4x4,
  `sin`, `0.9*a + 0.1*b` on (1, 1), ...), functions on 100K floats (`nn.silu`, `hypot`, ...), and matmul beside
  its jitted form (eager should run at jitted speed), linalg functions of 4x4 to 64x64 matrices.
- programs: `jit` of a CNN's SGD step, two transformer blocks' SGD step, an LSTM's gradient by `scan` (40 and 80
  steps: a loop's carried arrays), a 6-layer Adam step (`PROGRAM`; their compile times: bench_compile.py).

Each library runs in its own fresh process; processes alternate between libraries (and `--before`, another stagec
checkout, e.g. `git archive main | tar -x -C DIR`), medians over `--repeat` rounds, with the spread (max-min)/median.
The stagec processes share one cache folder, filled by an untimed first process (steady state, not compile time:
benchmarks/bench_compile.py has that).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import textwrap

from _timing import import_jax, run_json

COMMON = textwrap.dedent("""
    import json, os, statistics, sys, time
    import numpy as np
    lib, part = sys.argv[1], sys.argv[2]
    if lib == "jax":
        import jax, jax.numpy as m
        jit, grad, put, nn = jax.jit, jax.grad, jax.device_put, jax.nn
    else:
        import stagec, stagec.numpy as m
        jit, grad, put, nn = stagec.jit, stagec.grad, stagec.device_put, stagec.nn
        if lib == "stagec-noblas":
            stagec.config.update("cpu_blas", False)
        if lib == "stagec-1thread":
            stagec.config.update("cpu_threads", 1)
    QUICK = bool(os.environ.get("BENCH_QUICK"))
    clock = time.process_time if os.environ.get("BENCH_CLOCK") == "cpu" else time.perf_counter

    def ready(x):
        for leaf in (x if isinstance(x, (list, tuple)) else [x]):
            ready(leaf) if isinstance(leaf, (list, tuple)) else leaf.block_until_ready()
        return x

    def per_call(step, state, seconds=0.3):
        # seconds per call of `state = step(state)`: the median over batches of ~2 ms of calls (at least 5), each
        # timed to its last result; on a loaded machine a preemption spoils a batch, not the median. Warmed up for
        # 0.6 s first (at least 3 calls), as a training loop is after its first steps: stagec's driver takes a second
        # core only after two 100 ms windows with the cores spare, the last compile's CPU counting as another
        # program's (docs/runtime.md); with 0.3 s the 64-256-256-10 b1024 gelu row was timed on one core.
        t0 = time.perf_counter()
        for k in range(10 ** 6):
            state = ready(step(state))
            if k >= 2 and time.perf_counter() - t0 > 0.6:
                break
        t0 = time.perf_counter(); state = ready(step(state)); one = max(time.perf_counter() - t0, 1e-7)
        n = max(1, int(2e-3 / one))
        ts = []
        for _ in range(max(5, min(300, int(seconds / (n * one))))):
            t0 = clock()
            for _ in range(n):
                state = step(state)
            ready(state)
            ts.append((clock() - t0) / n)
        return statistics.median(ts)
""")

# (name, widths, batch, activation, loss, optimizer)
MODELS = [("784-1024-1024-10 b128 tanh xent sgd", (784, 1024, 1024, 10), 128, "tanh", "xent", "sgd"),
          ("10-32-32-1 b1 relu mse sgd", (10, 32, 32, 1), 1, "relu", "mse", "sgd"),
          ("64-256-256-10 b32 gelu xent adam", (64, 256, 256, 10), 32, "gelu", "xent", "adam"),
          ("256-512-512-10 b1024 relu xent sgd", (256, 512, 512, 10), 1024, "relu", "xent", "sgd"),
          ("128-4096-4096-10 b8 tanh mse adam", (128, 4096, 4096, 10), 8, "tanh", "mse", "adam"),
          ("32-128-10 b256 tanh mse adam", (32, 128, 10), 256, "tanh", "mse", "adam")]
# `--sweep`: more widths, batches, activations, losses and optimizers (the rows above among them)
SWEEP = MODELS + [(f"{'-'.join(map(str, w))} b{b} {a} {k} {o}", w, b, a, k, o) for w, b, a, k, o in (
    ((10, 32, 32, 1), 64, "tanh", "mse", "adam"), ((10, 32, 32, 1), 1024, "relu", "mse", "sgd"),
    ((64, 256, 256, 10), 1, "relu", "xent", "sgd"), ((64, 256, 256, 10), 32, "gelu", "xent", "sgd"),
    ((64, 256, 256, 10), 128, "tanh", "xent", "adam"), ((64, 256, 256, 10), 1024, "gelu", "mse", "adam"),
    ((256, 512, 512, 10), 8, "tanh", "xent", "adam"), ((256, 512, 512, 10), 128, "relu", "xent", "sgd"),
    ((784, 1024, 1024, 10), 1, "tanh", "xent", "sgd"), ((784, 1024, 1024, 10), 32, "relu", "xent", "adam"),
    ((784, 1024, 1024, 10), 1024, "tanh", "xent", "sgd"), ((128, 4096, 4096, 10), 1, "relu", "mse", "sgd"),
    ((128, 4096, 4096, 10), 128, "gelu", "xent", "sgd"), ((784, 512, 512, 10), 10, "relu", "xent", "sgd"),
    ((784, 1024, 1024, 10), 4, "tanh", "xent", "sgd"))]

# The models, in the library `m` (numpy), `nn` and `grad` name: run in TRAIN's processes and by `step_and_args`
MODEL = textwrap.dedent("""
    ACT = {"tanh": m.tanh, "relu": nn.relu, "gelu": nn.gelu}

    def forward(params, x, act):
        for w, b in params[:-1]:
            x = act(x @ w + b)
        w, b = params[-1]
        return x @ w + b

    def make_loss(act, kind):
        def loss(params, x, y):
            out = forward(params, x, act)
            if kind == "xent":
                return -m.mean(m.sum(y * nn.log_softmax(out), axis=-1))
            return m.mean((out - y) ** 2)
        return loss

    def sgd(loss, lr=1e-3):
        def step(params, x, y):
            g = grad(loss)(params, x, y)
            return [(w - lr * gw, b - lr * gb) for (w, b), (gw, gb) in zip(params, g)]
        return step

    def adam(loss, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
        def step(params, mom, vel, t, x, y):
            g = grad(loss)(params, x, y)
            t = t + 1.0
            new_p, new_m, new_v = [], [], []
            for (w, b), (mw, mb), (vw, vb), (gw, gb) in zip(params, mom, vel, g):
                ps, ms, vs = [], [], []
                for p_, m_, v_, g_ in ((w, mw, vw, gw), (b, mb, vb, gb)):
                    m_ = b1 * m_ + (1 - b1) * g_
                    v_ = b2 * v_ + (1 - b2) * g_ * g_
                    mhat, vhat = m_ / (1 - b1 ** t), v_ / (1 - b2 ** t)
                    ps.append(p_ - lr * mhat / (m.sqrt(vhat) + eps)); ms.append(m_); vs.append(v_)
                new_p.append(tuple(ps)); new_m.append(tuple(ms)); new_v.append(tuple(vs))
            return new_p, new_m, new_v, t
        return step

    def arrays(widths, batch):
        # the parameters, inputs and one-hot targets, NumPy arrays drawn from seed 0
        rng = np.random.default_rng(0)
        params = [((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), np.zeros(b, np.float32))
                  for a, b in zip(widths[:-1], widths[1:])]
        x = rng.standard_normal((batch, widths[0])).astype(np.float32)
        y = np.zeros((batch, widths[-1]), np.float32)
        y[np.arange(batch), rng.integers(0, widths[-1], batch)] = 1.0
        return params, x, y
""")

TRAIN = COMMON + MODEL + textwrap.dedent("""
    MODELS = json.loads(os.environ["BENCH_MODELS"])
    out = {}
    for name, widths, batch, act, kind, opt in MODELS:
        if QUICK and batch * max(widths) ** 2 > 1e8:
            continue
        params, x, y = arrays(widths, batch)
        params, x, y = [(put(w), put(b)) for w, b in params], put(x), put(y)
        loss = make_loss(ACT[act], kind)
        if opt == "sgd":
            f = jit(sgd(loss))
            t = per_call(lambda p: f(p, x, y), params)
        else:
            f = jit(adam(loss))
            zeros = [(put(np.zeros(w.shape, np.float32)), put(np.zeros(b.shape, np.float32))) for w, b in params]
            t = per_call(lambda s: f(*s, x, y), (params, zeros, zeros, put(np.float32(0.0))))
        out[name] = t
    print(json.dumps(out))
""")

EAGER = COMMON + textwrap.dedent("""
    rng = np.random.default_rng(0)
    f32 = lambda *s: put(rng.standard_normal(s).astype(np.float32))
    x, y = f32(4, 4), f32(4, 4)
    a1, b1 = f32(1, 1), f32(1, 1)
    v = f32(1000)
    V, W = f32(100_000), f32(100_000)  # (mid-size: stagec's eager NumPy rules, JAX's fused kernels)
    M = f32(1_000_000)  # (large: kernels; a scalar operand's broadcast in the operation's module)
    M2 = f32(1000, 1000)
    R, col, row = f32(100, 1000), f32(100, 1), f32(1000)  # (mid-size rows: polymorphic modules, broadcast operands)
    ri = put(rng.integers(-9, 9, (1000,)).astype(np.int32))
    s256 = f32(256, 256)
    s0, u8 = put(np.float32(0.5)), f32(8)
    i, j = put(rng.integers(-9, 9, (4, 4)).astype(np.int32)), put(rng.integers(1, 9, (4, 4)).astype(np.int32))
    p, k = put(np.abs(rng.standard_normal((4, 4))).astype(np.float32)), put(np.array([3, 0, 2, 1], np.int32))
    mats = {n: f32(n, n) for n in (16, 64, 256, 512)}
    g16, g64 = rng.standard_normal((16, 16)), rng.standard_normal((64, 64))
    spd16, sym64 = put((g16 @ g16.T + np.eye(16)).astype(np.float32)), put((g64 + g64.T).astype(np.float32))
    mm = jit(lambda a, b: a @ b)
    random, xlax = (jax if lib == "jax" else stagec).random, (jax if lib == "jax" else stagec).lax
    key = random.PRNGKey(0)
    if lib == "jax":
        import jax.scipy.special as sps
        import jax.scipy.stats as sst
    else:
        import stagec.scipy.special as sps
        import stagec.scipy.stats as sst
    ROWS = {"x + 1.0 (4x4)": lambda: x + 1.0,
            "x * y (4x4)": lambda: x * y,
            "sin(x) (4x4)": lambda: m.sin(x),
            "exp(x) (4x4)": lambda: m.exp(x),
            "x / 2.0 (4x4)": lambda: x / 2.0,
            "x > 0 (4x4)": lambda: x > 0,
            "where(x > 0, x, y) (4x4)": lambda: m.where(x > 0, x, y),
            "sum(x) (4x4)": lambda: m.sum(x),
            "0.9*a + 0.1*b (1x1)": lambda: 0.9 * a1 + 0.1 * b1,
            "maximum(v, 0) (1000)": lambda: m.maximum(v, 0.0),
            "tanh(v) (1000)": lambda: m.tanh(v),
            "sum (256x256)": lambda: m.sum(s256),
            "x.T (4x4)": lambda: x.T,
            "x[1:3] (4x4)": lambda: x[1:3],
            "x * s (4x4, s 0-d array)": lambda: x * s0,
            "i + j (4x4 int32)": lambda: i + j,
            "i // j (4x4 int32)": lambda: i // j,
            "mean(x) (4x4)": lambda: m.mean(x),
            "sign(x) (4x4)": lambda: m.sign(x),
            "clip(x, -0.5, 0.5) (4x4)": lambda: m.clip(x, -0.5, 0.5),
            "outer(u, u) (8)": lambda: m.outer(u8, u8),
            "i % j (4x4 int32)": lambda: i % j,
            "std(x) (4x4)": lambda: m.std(x),
            "p ** y (4x4)": lambda: p ** y,
            "lax.pow(p, y) (4x4)": lambda: xlax.pow(p, y),
            "pad(x, 1) (4x4)": lambda: m.pad(x, 1),
            "take(x, k) (4x4, 4 indices)": lambda: m.take(x, k),
            "softmax(x) (4x4)": lambda: nn.softmax(x),
            "log_softmax(x) (4x4)": lambda: nn.log_softmax(x),
            "gelu(x) (4x4)": lambda: nn.gelu(x),
            "logsumexp(x, axis=1) (4x4)": lambda: nn.logsumexp(x, axis=1),
            "sort(v) (1000)": lambda: m.sort(v),
            "random.normal(key, (100,))": lambda: random.normal(key, (100,)),
            "random.uniform(key, (32,))": lambda: random.uniform(key, (32,)),
            "random.bernoulli(key, 0.3, (8, 8))": lambda: random.bernoulli(key, 0.3, (8, 8)),
            "random.split(key)": lambda: random.split(key),
            "random.fold_in(key, 3)": lambda: random.fold_in(key, 3),
            "median(x) (4x4)": lambda: m.median(x),
            "arctan2(x, y) (4x4)": lambda: m.arctan2(x, y),
            "nan_to_num(x) (4x4)": lambda: m.nan_to_num(x),
            "nn.selu(x) (4x4)": lambda: nn.selu(x),
            "special.gammainc(p, p) (4x4)": lambda: sps.gammainc(p, p),
            "special.betainc(p, p, p / 4) (4x4)": lambda: sps.betainc(p, p, p / 4),
            "stats.gamma.cdf(p, p) (4x4)": lambda: sst.gamma.cdf(p, p),
            "stats.norm.logpdf(x, 0.5, 2.0) (4x4)": lambda: sst.norm.logpdf(x, 0.5, 2.0),
            "stats.t.logpdf(x, 3.0) (4x4)": lambda: sst.t.logpdf(x, 3.0),
            "nn.sigmoid(V) (100K)": lambda: nn.sigmoid(V),
            "nn.silu(V) (100K)": lambda: nn.silu(V),
            "hypot(V, W) (100K)": lambda: m.hypot(V, W),
            "nn.gelu(V) (100K)": lambda: nn.gelu(V),
            "nn.softplus(V) (100K)": lambda: nn.softplus(V),
            "nn.silu(M) (1M)": lambda: nn.silu(M),
            "hypot(M, M) (1M)": lambda: m.hypot(M, M),
            "nn.softmax(M2) (1000x1000)": lambda: nn.softmax(M2),
            "var(M2, axis=0) (1000x1000)": lambda: m.var(M2, axis=0),
            "nn.softmax(R) (100x1000)": lambda: nn.softmax(R),
            "nn.standardize(R) (100x1000)": lambda: nn.standardize(R),
            "var(R, axis=0) (100x1000)": lambda: m.var(R, axis=0),
            "logsumexp(R, axis=1) (100x1000)": lambda: nn.logsumexp(R, axis=1),
            "R - col (100x1000, 100x1)": lambda: R - col,
            "R * row (100x1000, 1000)": lambda: R * row,
            "R + row i32 (100x1000, 1000 int32)": lambda: R + ri,
            "x - x[:, :1] (4x4, 4x1)": lambda: x - x[:, :1],
            "power(|V|, W) (100K)": lambda: m.power(m.abs(V), W),
            "where(V > 0, V, W) (100K)": lambda: m.where(V > 0, V, W),
            "M > 0 (1M)": lambda: M > 0,
            "M + 1.0 (1M)": lambda: M + 1.0,
            # (each call waited for: the rows above time calls back to back, where JAX's run on both cores at once)
            "M + 1.0 (1M, each waited)": lambda: ready(M + 1.0),
            "linalg.inv(x) (4x4)": lambda: m.linalg.inv(x),
            "linalg.solve(x, y) (4x4)": lambda: m.linalg.solve(x, y),
            "linalg.det(a) (16x16)": lambda: m.linalg.det(mats[16]),
            "linalg.inv(a) (64x64)": lambda: m.linalg.inv(mats[64]),
            "linalg.slogdet(a) (64x64)": lambda: m.linalg.slogdet(mats[64]),
            "linalg.cholesky(s) (16x16)": lambda: m.linalg.cholesky(spd16),
            "linalg.eigh(s) (64x64)": lambda: m.linalg.eigh(sym64),
            "linalg.svd(a) (16x16)": lambda: m.linalg.svd(mats[16]),
            "linalg.qr(a) (16x16)": lambda: m.linalg.qr(mats[16])}
    for n, a in mats.items():
        ROWS[f"a @ a ({n}x{n})"] = (lambda a: lambda: a @ a)(a)
        ROWS[f"a @ a ({n}x{n}) jit"] = (lambda a: lambda: mm(a, a))(a)
    out = {}
    for name, fn in ROWS.items():
        ready(fn())
        ready(fn())  # (an eager composite traces on its second call, and queues its fused module if it has one)
        if lib != "jax":
            stagec.wait_for_compiles()  # (steady state: an operation's kernel compiled on a thread is in use)
        out[name] = per_call(lambda _: fn(), None, seconds=0.2)
    print(json.dumps(out))
""")

# Programs beyond dense networks, in the library's `m`, `nn`, `lax`, `grad` and `tree_map`: `programs()` gives each
# step and its arguments (NumPy arrays drawn from seed 0). Run by PROGRAMS' processes and benchmarks/bench_compile.py.
PROGRAM = textwrap.dedent("""
    def programs():
        r = np.random.RandomState(0)
        f32 = lambda *s: (r.standard_normal(s) * 0.1).astype(np.float32)
        out = {}

        def cnn_loss(p, x, y):  # two 3x3 convolutions, a 2x2 max pool, a dense layer: MNIST-sized, batch 32
            dn = ("NHWC", "HWIO", "NHWC")
            h = nn.relu(lax.conv_general_dilated(x, p[0], (1, 1), "SAME", dimension_numbers=dn))
            h = lax.reduce_window(h, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
            h = nn.relu(lax.conv_general_dilated(h, p[1], (1, 1), "SAME", dimension_numbers=dn))
            return -m.mean(m.sum(nn.log_softmax(h.reshape(h.shape[0], -1) @ p[2]) * y, -1))
        out["cnn sgd b32"] = (lambda p, x, y: [a - 0.01 * g for a, g in zip(p, grad(cnn_loss)(p, x, y))],
                              ([f32(3, 3, 1, 16), f32(3, 3, 16, 32), f32(14 * 14 * 32, 10)], f32(32, 28, 28, 1),
                               np.eye(10, dtype=np.float32)[r.randint(0, 10, 32)]))

        def ln(x, g, b):
            mu = x.mean(-1, keepdims=True)
            return (x - mu) / m.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b

        def block(p, x):  # pre-norm attention (4 heads, causal) and a gelu MLP
            B, T, D = x.shape
            h = ln(x, p["g1"], p["b1"])
            q, k, v = ((h @ p[n]).reshape(B, T, 4, D // 4) for n in ("wq", "wk", "wv"))
            a = m.einsum("bthd,bshd->bhts", q, k) / np.sqrt(D // 4)
            a = nn.softmax(a + m.where(m.tril(m.ones((T, T))) > 0, 0.0, -1e9), -1)
            x = x + m.einsum("bhts,bshd->bthd", a, v).reshape(B, T, D) @ p["wo"]
            return x + nn.gelu(ln(x, p["g2"], p["b2"]) @ p["w1"]) @ p["w2"]
        D = 128
        tp = {"g1": np.ones(D, np.float32), "b1": np.zeros(D, np.float32), "g2": np.ones(D, np.float32),
              "b2": np.zeros(D, np.float32), "wq": f32(D, D), "wk": f32(D, D), "wv": f32(D, D), "wo": f32(D, D),
              "w1": f32(D, 4 * D), "w2": f32(4 * D, D)}
        tloss = lambda p, x: m.mean(block(p, block(p, x)) ** 2)
        out["transformer 2 blocks sgd 8x32x128"] = (
            lambda p, x: tree_map(lambda a, g: a - 0.01 * g, p, grad(tloss)(p, x)), (tp, f32(8, 32, D)))

        def lstm_loss(p, xs):  # an LSTM run by `scan`, 16 sequences, 64 units
            def cell(c, x):
                h, s = c
                i, f, o, g = m.split(x @ p["wx"] + h @ p["wh"] + p["b"], 4, axis=-1)
                s = nn.sigmoid(f) * s + nn.sigmoid(i) * m.tanh(g)
                h = nn.sigmoid(o) * m.tanh(s)
                return (h, s), h
            zeros = m.zeros((16, 64))
            return m.mean(lax.scan(cell, (zeros, zeros), xs)[1] ** 2)
        lp = {"wx": f32(32, 256), "wh": f32(64, 256), "b": np.zeros(256, np.float32)}
        for steps in (40, 80):
            out[f"lstm scan grad {steps} steps"] = (grad(lstm_loss), (lp, f32(steps, 16, 32)))

        def mlp_loss(p, x):
            for w, b in p:
                x = m.tanh(x @ w + b)
            return m.mean(x ** 2)

        def adam(p, mo, v, x, t):  # six 64-wide layers, batch 32
            g = grad(mlp_loss)(p, x)
            mo = tree_map(lambda a, b: 0.9 * a + 0.1 * b, mo, g)
            v = tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
            return tree_map(lambda a, b, c: a - 1e-3 * (b / (1 - 0.9 ** t)) / (m.sqrt(c / (1 - 0.999 ** t)) + 1e-8),
                            p, mo, v), mo, v
        ap = [(f32(64, 64), np.zeros(64, np.float32)) for _ in range(6)]
        z = [(np.zeros((64, 64), np.float32), np.zeros(64, np.float32)) for _ in range(6)]
        out["mlp 6x64 adam b32"] = (adam, (ap, z, z, f32(32, 64), 1.0))
        return out
""")

PROGRAMS = COMMON + textwrap.dedent("""
    if lib == "jax":
        from jax import lax
        from jax.tree_util import tree_leaves, tree_map
    else:
        from stagec import lax
        from stagec.tree_util import tree_leaves, tree_map
""") + PROGRAM + textwrap.dedent("""
    out = {}
    for name, (fn, args) in programs().items():
        f = jit(fn)
        out[name] = per_call(lambda _: tree_leaves(f(*args)), None)
    print(json.dumps(out))
""")

SCRIPTS = {"train": TRAIN, "eager": EAGER, "programs": PROGRAMS}


def step_and_args(row: str):
    """The training step of the row named `row` ("widths bBATCH act loss opt", as `SWEEP` names them), stagec's
    (not jitted), and its arguments, NumPy arrays: what the train part times (benchmarks/profile_dispatches.py)."""
    import numpy as np
    import stagec
    import stagec.numpy as snp
    ns = {"np": np, "m": snp, "nn": stagec.nn, "grad": stagec.grad}
    exec(MODEL, ns)
    widths, batch, act, kind, opt = row.split()
    params, x, y = ns["arrays"](tuple(map(int, widths.split("-"))), int(batch[1:]))
    loss = ns["make_loss"](ns["ACT"][act], kind)
    if opt == "sgd":
        return ns["sgd"](loss), (params, x, y)
    zeros = [(np.zeros_like(w), np.zeros_like(b)) for w, b in params]
    return ns["adam"](loss), (params, zeros, zeros, np.float32(0.0), x, y)
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_MODELS: list = MODELS  # (the rows `main` chose: `--sweep`, `--models`)


def env_for(root: str | None, cache_dir: str | None, quick: bool, clock: str = "wall") -> dict:
    env = dict(os.environ, PYTHONPATH=root or HERE, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3", BENCH_CLOCK=clock,
               BENCH_MODELS=json.dumps(_MODELS))
    if cache_dir:
        env["STAGEC_CACHE_DIR"] = cache_dir
    if quick:
        env["BENCH_QUICK"] = "1"
    return env


def run(part: str, lib: str, env: dict) -> dict:
    # (from a neutral folder: `python -c` puts the working directory first on sys.path)
    return run_json([sys.executable, "-c", SCRIPTS[part], lib, part], f"{lib} {part}", env=env, timeout=1800,
                    cwd=tempfile.gettempdir())


def stat(xs: list[float]) -> str:
    med = statistics.median(xs)
    spread = (max(xs) - min(xs)) / med if med and len(xs) > 1 else 0.0
    t = f"{med * 1e3:8.2f} ms" if med >= 1e-3 else f"{med * 1e6:8.1f} us"
    return f"{t} ±{spread * 50:3.0f}%"


def measure(part: str, libs: list[tuple[str, str, str | None]], repeat: int, cache: str, quick: bool,
            clock: str) -> None:
    for name, lib, root in libs:  # untimed: fill the cache (stagec) and warm the file system
        if lib != "jax":
            run(part, lib, env_for(root, cache + "-" + name, quick))
    res: dict[tuple, list] = {}
    for i in range(repeat):
        for name, lib, root in (libs if i % 2 else libs[::-1]):
            for k, v in run(part, lib, env_for(root, cache + "-" + name, quick, clock)).items():
                res.setdefault((k, name), []).append(v)
    names = [n for n, _, _ in libs]
    what = {"train": "Training step (jit of grad + update), per step",
            "eager": "Eager operations (no jit, kernels warm), per call",
            "programs": "Programs (jit: a CNN, a transformer, an LSTM by scan, an Adam step), per call"}[part]
    print(f"{what} ({'CPU time of the process' if clock == 'cpu' else 'wall clock'}); median of {repeat} processes "
          f"each; ratio: to jax")
    print(f"  {'row':38s}" + "".join(f"{n:>24s}" for n in names))
    for k in dict.fromkeys(k for k, _ in res):
        ref = statistics.median(res[(k, "jax")]) if (k, "jax") in res else None
        cells = []
        for n in names:
            xs = res.get((k, n))
            if not xs:
                cells.append(f"{'-':>24s}")
                continue
            r = f" {statistics.median(xs) / ref:5.2f}x" if ref and n != "jax" else "       "
            cells.append(f"{stat(xs)}{r}".rjust(24))
        print(f"  {k:38s}" + "".join(cells))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--only", default="train,eager,programs", help="parts: train, eager, programs")
    p.add_argument("--no-jax", action="store_true")
    p.add_argument("--no-blas-row", action="store_true", help="skip stagec with config.cpu_blas off (train)")
    p.add_argument("--before", help="another stagec checkout to measure alongside this one (e.g. an export of main)")
    p.add_argument("--quick", action="store_true", help="skip the biggest training steps")
    p.add_argument("--sweep", action="store_true", help="train: more sizes, activations, losses, optimizers")
    p.add_argument("--models", help="train: only the rows whose name contains one of these (comma-separated)")
    p.add_argument("--one-thread-row", action="store_true",
                   help="train: also stagec with STAGEC_CPU_THREADS=1 (every module on the calling thread)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="cpu: the process's CPU time (all its threads), steadier than wall time on a loaded machine")
    a = p.parse_args()
    global _MODELS
    _MODELS = [r for r in (SWEEP if a.sweep else MODELS)
               if not a.models or any(k in r[0] for k in a.models.split(","))]
    jax = not a.no_jax and import_jax()[0] is not None
    with tempfile.TemporaryDirectory(prefix="stagec-bench-models-") as d:
        for part in a.only.split(","):
            libs = [("stagec", "stagec", HERE)]
            if a.before:
                libs.append(("before", "stagec", os.path.abspath(a.before)))
            if part == "train" and not a.no_blas_row:
                libs.append(("stagec cpu_blas=off", "stagec-noblas", HERE))
                if a.before:
                    libs.append(("before cpu_blas=off", "stagec-noblas", os.path.abspath(a.before)))
            if part == "train" and a.one_thread_row:
                libs.append(("stagec 1 thread", "stagec-1thread", HERE))
            if jax:
                libs.append(("jax", "jax", None))
            measure(part, libs, a.repeat, os.path.join(d, "cache"), a.quick, a.clock)


if __name__ == "__main__":
    main()
