"""A small CNN, stagec beside `jax.jit` (when installed) in one process: forward, and forward plus backward
(`value_and_grad`), on NHWC images 32x32x3, batch 32, two 3x3 convolutions (16 and 32 channels) each followed by
ReLU and 2x2 max pooling, and a dense head to 10 classes.

For each: first call (trace + compile + run; stagec's persistent cache off, so it really compiles) and the
steady state, the two systems timed alternately call by call (the machine's load hits both alike), medians.

    python benchmarks/bench_conv.py [--repeat N] [--batch B]
"""
from __future__ import annotations

import argparse
import json
import statistics

import numpy as np

import stagec
from stagec import lax as slax

from _timing import alternating, fmt, import_jax, timed

jax, jnp = import_jax()
DN = ("NHWC", "HWIO", "NHWC")


def make_loss(lax, np_, nn):
    def forward(params, x):
        for w in params[:-1]:
            x = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DN)
            x = lax.reduce_window(nn.relu(x), -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return x.reshape(x.shape[0], -1) @ params[-1]

    def loss(params, x, labels):
        logits = forward(params, x)
        return -np_.mean(np_.sum(nn.log_softmax(logits) * labels, axis=-1))
    return forward, loss


def host_data(batch: int):
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal(s) / np.sqrt(np.prod(s[:-1]))).astype(np.float32)
              for s in [(3, 3, 3, 16), (3, 3, 16, 32), (8 * 8 * 32, 10)]]
    x = rng.standard_normal((batch, 32, 32, 3)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    return params, x, labels


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    stagec.config.update("persistent_cache", False)  # first calls compile
    params, x, labels = host_data(args.batch)
    import stagec.numpy as snp
    fwd_s, loss_s = make_loss(slax, snp, stagec.nn)
    systems = {"stagec": (stagec.jit(fwd_s), stagec.jit(stagec.value_and_grad(loss_s)), stagec.device_put,
                          stagec.block_until_ready)}
    if jax is not None:
        fwd_j, loss_j = make_loss(jax.lax, jnp, jax.nn)
        systems["jax"] = (jax.jit(fwd_j), jax.jit(jax.value_and_grad(loss_j)), jax.device_put,
                          jax.block_until_ready)
    rows = {}
    for which in ("forward", "forward+backward"):
        calls, first = {}, {}
        for name, (f, g, put, block) in systems.items():
            p, xd, ld = put(params), put(x), put(labels)
            call = (lambda f=f, p=p, xd=xd: f(p, xd)) if which == "forward" else \
                (lambda g=g, p=p, xd=xd, ld=ld: g(p, xd, ld))
            first[name] = timed(lambda: block(call()))[0]
            calls[name] = (call, block)
        times = {name: [] for name in systems}
        for i in range(args.repeat):
            for name in alternating(list(systems), i):
                call, block = calls[name]
                times[name].append(timed(lambda: block(call()))[0])
        rows[which] = {name: {"first": first[name], "median": statistics.median(ts)} for name, ts in times.items()}
        line = "  ".join(f"{name}: first {fmt(r['first'])}, steady {fmt(r['median'])}" for name, r in rows[which].items())
        ratio = (f"  stagec/jax {rows[which]['stagec']['median'] / rows[which]['jax']['median']:.2f}x"
                 if "jax" in rows[which] else "")
        print(f"{which:17s} {line}{ratio}")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
