"""Compile time: each function of a VAE-like model, and eager kernels with an empty cache, stagec vs JAX.

    python benchmarks/bench_compile.py [--repeat 1] [--only vae,eager] [--batch 1000] [--no-jax] [--before DIR]
        [--clock wall|cpu]

Every row runs in a fresh process: stagec with an empty cache folder, JAX as it starts (no persistent cache).
A row's number is the first call's wall time (trace, compile, run, result ready); for stagec also the seconds
spent in IREE (`stagec.stages.stats`). `--clock cpu`: the CPU seconds of that call instead (the process's threads and
the child processes it started: iree-compile's, and the compilers that stay, `serve.py`, ended after the call so that
theirs counts; IREE's in brackets then is the children's), steadier than wall time on a machine others load. `--before DIR` measures another stagec checkout (e.g. `git archive main |
tar -x -C DIR`) in alternation with this one.

- vae: JAX's `examples/mnist_vae.py` ported by changing imports (784-512-512-10 encoder with softplus variance,
  10-512-512-784 decoder; `random.bernoulli` binarizes the images; a key closed over as JAX's example does;
  the image grid is `vstack`/`hstack` of 100 transposed images): `loss` (the negative ELBO), `grad` of it,
  `evaluate` (ELBO and a sampled 10x10 grid, the example's jitted function), `image_sample`, `image_grid`; and
  a `dus_grid` written with `lax.dynamic_update_slice` in a Python loop. `--batch` images (the example: 10000).
- loops: `rnn_grad`, the gradient of a 50-step loop over a sequence (`h = tanh(h @ w + xs[t] @ u)`), and `heads`,
  attention written as a loop over 8 heads slicing q, k and v out of one product, and `heads_grad`, its gradient.
- programs: bench_models.py's other programs (a CNN, a transformer, an LSTM by `scan`, an Adam step), jitted.
- eager: the first eager call of random samplers and linalg functions (one kernel each), after a warm-up op.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import textwrap

from _timing import alternating, byte_compiled, geomean, import_jax, run_json
from bench_models import PROGRAM

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = textwrap.dedent("""
    import json, os, resource, sys, time
    import numpy as np
    lib, row, B = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if lib == "jax":
        import jax, jax.numpy as m
        from jax import lax, random
        ready = jax.block_until_ready
    else:
        import stagec as jax, stagec.numpy as m
        from stagec import lax, random
        ready = jax.block_until_ready
    jit, grad, nn = jax.jit, jax.grad, jax.nn
    tree_map = jax.tree_util.tree_map

    def dense(k, i, o):
        k1, k2 = random.split(k)
        return random.normal(k1, (i, o)) * 0.05, random.normal(k2, (o,)) * 0.05

    def mlp(p, x):
        for w, b in p[:-1]:
            x = nn.relu(x @ w + b)
        return x @ p[-1][0] + p[-1][1]

    def encode(p, x):
        h = nn.relu(mlp(p[:2], x))
        return h @ p[2][0] + p[2][1], nn.softplus(h @ p[3][0] + p[3][1])

    def decode(p, z):
        return mlp(p, z)

    def gaussian_kl(mu, sigmasq):
        return -0.5 * m.sum(1. + m.log(sigmasq) - mu ** 2. - sigmasq)

    def gaussian_sample(rng, mu, sigmasq):
        return mu + m.sqrt(sigmasq) * random.normal(rng, mu.shape)

    def bernoulli_logpdf(logits, x):
        return -m.sum(m.logaddexp(0., m.where(x, -1., 1.) * logits))

    def elbo(rng, params, images):
        enc, dec = params
        mu_z, sigmasq_z = encode(enc, images)
        logits_x = decode(dec, gaussian_sample(rng, mu_z, sigmasq_z))
        return bernoulli_logpdf(logits_x, images) - gaussian_kl(mu_z, sigmasq_z)

    def image_grid(nrow, ncol, imagevecs, imshape):
        images = iter(imagevecs.reshape((-1,) + imshape))
        return m.vstack([m.hstack([next(images).T for _ in range(ncol)][::-1]) for _ in range(nrow)]).T

    def image_sample(rng, params, nrow, ncol):
        code_rng, img_rng = random.split(rng)
        logits = decode(params[1], random.normal(code_rng, (nrow * ncol, 10)))
        sampled_images = random.bernoulli(img_rng, m.logaddexp(0., logits))
        return image_grid(nrow, ncol, sampled_images, (28, 28))

    test_rng = random.PRNGKey(1)

    def loss(params, images):
        elbo_rng, data_rng = random.split(test_rng)
        return -elbo(elbo_rng, params, random.bernoulli(data_rng, images)) / images.shape[0]

    def evaluate(params, images):
        elbo_rng, data_rng, image_rng = random.split(test_rng, 3)
        binarized_test = random.bernoulli(data_rng, images)
        test_elbo = elbo(elbo_rng, params, binarized_test) / images.shape[0]
        return test_elbo, image_sample(image_rng, params, 10, 10)

    def dus_grid(imgs):
        out = m.zeros((8 * 28, 8 * 28))
        for i in range(8):
            for j in range(8):
                out = lax.dynamic_update_slice(out, imgs[i * 8 + j].reshape(28, 28), (i * 28, j * 28))
        return out

    def vae_rows():
        ks = random.split(random.PRNGKey(0), 7)
        params = ([dense(ks[0], 784, 512), dense(ks[1], 512, 512), dense(ks[2], 512, 10), dense(ks[3], 512, 10)],
                  [dense(ks[4], 10, 512), dense(ks[5], 512, 512), dense(ks[6], 512, 784)])
        images = np.random.RandomState(0).rand(B, 784).astype(np.float32)
        return {"loss": (loss, (params, images)), "grad": (grad(loss), (params, images)),
                "evaluate": (evaluate, (params, images)),
                "image_sample": (lambda p: image_sample(test_rng, p, 10, 10), (params,)),
                "image_grid": (lambda v: image_grid(10, 10, v, (28, 28)), (images[:100] > 0.5,)),
                "dus_grid": (dus_grid, (images[:64],))}

    def rnn_loss(w, u, xs):  # a Python loop over a sequence (every step's matmuls read a slice xs[t])
        h = m.zeros((8, 32))
        for t in range(xs.shape[0]):
            h = m.tanh(h @ w + xs[t] @ u)
        return m.sum(h ** 2)

    def heads(x, w):  # attention as a loop over 8 heads, each slicing q, k, v out of one product
        qkv, d, out = x @ w, 64, []
        for h in range(8):
            q, k, v = (qkv[:, (j * 8 + h) * d:(j * 8 + h + 1) * d] for j in range(3))
            out.append(nn.softmax(q @ k.T / 8.0, axis=-1) @ v)
        return m.concatenate(out, axis=1)

    def loop_rows():
        r = np.random.RandomState(2)
        w, u, xs = r.rand(32, 32).astype(np.float32) * 0.1, r.rand(16, 32).astype(np.float32) * 0.1, r.rand(50, 8, 16)
        hx, hw = r.rand(128, 512).astype(np.float32), r.rand(512, 1536).astype(np.float32) * 0.02
        return {"rnn_grad": (grad(rnn_loss, argnums=(0, 1)), (w, u, xs.astype(np.float32))),
                "heads": (heads, (hx, hw)),
                "heads_grad": (grad(lambda x, w: m.sum(heads(x, w) ** 2), argnums=(0, 1)), (hx, hw))}

    a64 = np.random.RandomState(1).rand(64, 64).astype(np.float32)
    spd = a64 @ a64.T + 64 * np.eye(64, dtype=np.float32)
    EAGER = {
        "normal": lambda k: random.normal(k, (1000,)), "uniform": lambda k: random.uniform(k, (1000,)),
        "bernoulli": lambda k: random.bernoulli(k, 0.3, (1000,)),
        "randint": lambda k: random.randint(k, (1000,), 0, 10),
        "categorical": lambda k: random.categorical(k, m.zeros((10, 5))), "split": lambda k: random.split(k, 4),
        "permutation": lambda k: random.permutation(k, 100), "gamma": lambda k: random.gamma(k, 2.5, (1000,)),
        "truncated_normal": lambda k: random.truncated_normal(k, -1.0, 1.0, (1000,)),
        "inv": lambda k: m.linalg.inv(spd), "solve": lambda k: m.linalg.solve(spd, a64[:, 0]),
        "cholesky": lambda k: m.linalg.cholesky(spd), "qr": lambda k: m.linalg.qr(a64),
        "svd": lambda k: m.linalg.svd(a64), "eigh": lambda k: m.linalg.eigh(spd),
    }
    def live_children():  # CPU seconds so far of this process's living children (and of the children they waited for)
        total = 0.0
        for pid in os.listdir("/proc"):
            try:
                f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            except (OSError, ValueError, IndexError):
                continue
            if pid.isdigit() and int(f[1]) == os.getpid():
                total += sum(int(v) for v in f[11:15]) / os.sysconf("SC_CLK_TCK")
        return total

    if row == "-":
        print(json.dumps({"vae": ["loss", "grad", "evaluate", "image_sample", "image_grid", "dus_grid"],
                          "loops": ["rnn_grad", "heads", "heads_grad"], "programs": list(programs()), "eager": list(EAGER)}))
        sys.exit()
    group, name = row.split(".")
    key = random.PRNGKey(0)
    ready(m.asarray(np.ones(3, np.float32)) * 2.0)  # the runtime started, outside the clock
    if group in ("vae", "loops", "programs"):
        fn, args = {"vae": vae_rows, "loops": loop_rows, "programs": programs}[group]()[name]
        call = lambda: jit(fn)(*args)
    else:
        call = lambda: EAGER[name](key)
    ready(args if group != "eager" else key)
    if lib == "stagec":
        from stagec import stages
        iree0 = stages.stats["compile_seconds"]
    children = lambda: (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(resource.RUSAGE_CHILDREN))
    c0, k0, alive0 = time.process_time(), children(), live_children()
    t0 = time.perf_counter()
    ready(call())
    first = time.perf_counter() - t0
    if lib == "stagec":  # (compilers that stay, `serve.py`: ended and waited for, so that their CPU counts)
        from stagec.compiler import processes
        processes.abandon_compiles()
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    kids = children() - k0 - alive0
    cpu = time.process_time() - c0 + kids
    iree = None
    if lib == "stagec":
        iree = stages.stats["compile_seconds"] - iree0
    print(json.dumps({"first": first, "iree": iree, "cpu": cpu, "kids": kids}))
""")
CHILD = CHILD.replace("\na64 = ", PROGRAM + "\na64 = ", 1)  # (`programs()`, shared with bench_models.py)


def env_for(root: str | None, cache_dir: str | None) -> dict:
    env = dict(os.environ, PYTHONPATH=root or HERE, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("STAGEC_CACHE_DIR", None)
    if cache_dir:
        env["STAGEC_CACHE_DIR"] = cache_dir
    return env


def run(args: list[str], env: dict) -> dict:
    return run_json([sys.executable, "-c", CHILD, *args], str(args), env=env, timeout=1800,
                    cwd=tempfile.gettempdir())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--only", default="vae,loops,programs,eager",
                   help="groups (vae, loops, programs, eager) or rows (vae.loss, eager.svd), by comma")
    p.add_argument("--batch", type=int, default=1000, help="images per VAE batch (JAX's example evaluates 10000)")
    p.add_argument("--no-jax", action="store_true")
    p.add_argument("--before", help="another stagec checkout to measure alongside this one (e.g. an export of main)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    a = p.parse_args()
    clock, inner = ("first", "iree") if a.clock == "wall" else ("cpu", "kids")
    jax = not a.no_jax and import_jax()[0] is not None
    byte_compiled(HERE, *([os.path.abspath(a.before)] if a.before else []))
    names = run([*("stagec", "-", "0")], env_for(None, None))
    wanted = a.only.split(",")
    rows = [f"{g}.{n}" for g, ns in names.items() for n in ns if g in wanted or f"{g}.{n}" in wanted]
    libs = [("stagec", HERE), *((("before", os.path.abspath(a.before)),) if a.before else ()),
            *((("jax", None),) if jax else ())]
    res: dict[tuple, list] = {}
    for i in range(a.repeat):
        for row in rows:
            for name, root in alternating(libs, i):
                with tempfile.TemporaryDirectory(prefix="stagec-bench-") as d:
                    r = run(["jax" if name == "jax" else "stagec", row, str(a.batch)],
                            env_for(root, None if name == "jax" else d))
                res.setdefault((row, name), []).append(r)
    print(f"First call, fresh process, empty cache (VAE batch {a.batch}); {a.clock} seconds, median of {a.repeat}; "
          f"stagec's IREE seconds in brackets")
    print(f"  {'row':24s}" + "".join(f"{n:>18s}" for n, _ in libs) + ("      ratio to jax" if jax else ""))
    ratios: dict[str, list] = {}
    for row in rows:
        cells, med = [], {}
        for name, _ in libs:
            rs = res[(row, name)]
            med[name] = statistics.median(r[clock] for r in rs)
            iree = statistics.median(r[inner] for r in rs) if rs[0]["iree"] is not None else None
            cells.append(f"{med[name]:9.2f}" + (f" [{iree:5.2f}]" if iree is not None else " " * 8))
        line = f"  {row:24s}" + "".join(f"{c:>18s}" for c in cells)
        if jax:
            rs = [med[n] / med["jax"] for n, _ in libs if n != "jax"]
            line += "   " + " ".join(f"{r:5.2f}x" for r in rs)
            for (n, _), r in zip([lib for lib in libs if lib[0] != "jax"], rs):
                ratios.setdefault((row.split(".")[0], n), []).append(r)
        print(line)
    for (group, n), rs in ratios.items():
        print(f"  geomean {group} {n}/jax: {geomean(rs):.2f}x, worst {max(rs):.2f}x")


if __name__ == "__main__":
    main()
