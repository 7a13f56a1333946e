"""complex128 functions on the CPU against mpmath at a precision that covers the parts' exponents (40 digits plus twice
the decimal exponent: mpmath's own asin loses a part of 1e-107 at 40 digits), on bench_complex_edges.py's sample, and
`x ** y` on groups of exponents; with --jax, JAX 0.10.2's on the same points. Special values: how many land in another
class than NumPy's (C99 Annex G's).

    python benchmarks/bench_complex128.py [--jax] [--fns arcsin,arctanh,...]
"""
from __future__ import annotations

import argparse
import math
import os
import sys

import mpmath
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import bench_complex_edges as E  # noqa: E402

import stagec  # noqa: E402


def exact(mp):
    def g(u):
        c = complex(u)
        e = max([abs(math.log10(abs(p))) for p in (c.real, c.imag) if p and math.isfinite(p)] or [0])
        with mpmath.workdps(int(40 + 2 * e)):
            return complex(mp(mpmath.mpc(c)))
    return g


def power_groups():
    r = np.random.default_rng(1)
    n = 400
    unit = lambda lo, hi: 10.0 ** r.uniform(lo, hi, n) * np.exp(1j * r.uniform(-np.pi, np.pi, n))  # noqa: E731
    x, y = unit(-3, 3), r.uniform(-6, 6, n) + 1j * r.uniform(-6, 6, n)
    return {"complex y": (x, y), "y = 2": (x, np.full(n, 2 + 0j)), "y = 3": (x, np.full(n, 3 + 0j)),
            "y = -1": (x, np.full(n, -1 + 0j)), "real y": (x, y.real + 0j), "integer y, |y| <= 20": (x, np.round(y.real * 3) + 0j),
            "|x| in 1e-150..1e150, y = 2": (unit(-150, 150), np.full(n, 2 + 0j)),
            "|x| in 1e-300..1e300, real y": (unit(-300, 300), r.uniform(-1, 1, n) + 0j)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jax", action="store_true")
    ap.add_argument("--fns", default=",".join([*E.FNS, "power"]))
    args = ap.parse_args(argv)
    stagec.config.update("enable_x64", True)
    jit = stagec.jit
    if args.jax:
        import jax
        jax.config.update("jax_enable_x64", True)
        jit = jax.jit
    import stagec.numpy as snp
    jnp = __import__("jax.numpy", fromlist=["_"]) if args.jax else snp
    z, sp = E.sample(np.complex128, 400), E.specials(np.complex128)
    who = "JAX" if args.jax else "stagec"
    print(f"| {who} complex128 (cpu) | max ulps of \\|f\\| | special values off C99's class |\n|---|---|---|")
    for name in args.fns.split(","):
        if name == "power":
            continue
        fn = {"recip": "reciprocal"}.get(name, name)
        got, got_sp = (np.asarray(v) for v in jit(lambda v, s: (getattr(jnp, fn)(v), getattr(jnp, fn)(s)))(z, sp))
        want = np.array([exact(E.FNS[name][1])(v) for v in z])
        err = E.ulps(got, want, np.complex128)
        npf = E.FNS[name][2]
        with np.errstate(all="ignore"):
            bad = "-" if npf is None else int((E.classes(got_sp) != E.classes(npf(sp))).any(0).sum())
        print(f"| {name} | {err.max():.3g} (z = {z[np.argmax(err)]:.3g}) | {bad} |", flush=True)
    if "power" not in args.fns.split(","):
        return
    print(f"\n| {who} complex128 x ** y (cpu) | max ulps of \\|f\\| | NumPy's |\n|---|---|---|")
    for name, (x, y) in power_groups().items():
        got = np.asarray(jit(lambda p, q: p ** q)(x, y))
        with mpmath.workdps(60):
            want = np.array([complex(mpmath.mpc(complex(p)) ** mpmath.mpc(complex(q))) for p, q in zip(x, y)])
        with np.errstate(all="ignore"):
            print(f"| {name} | {E.ulps(got, want, np.complex128).max():.3g} | "
                  f"{E.ulps(x ** y, want, np.complex128).max():.3g} |", flush=True)
    sx, sy = np.repeat(sp, len(sp)), np.tile(sp, len(sp))
    got = np.asarray(jit(lambda p, q: p ** q)(sx, sy))
    with np.errstate(all="ignore"):
        want = sx ** sy
    bad = (E.classes(got) != E.classes(want)).any(0)
    huge = (np.abs(np.stack([sx.real, sx.imag, sy.real, sy.imag])) == 1e300).any(0)
    print(f"| special pairs off NumPy's class | {int(bad.sum())} of {len(sx)} ({int((bad & ~huge).sum())} without a "
          f"part of 1e300: there an infinity's sign is cos or sin of a phase past 1e300) | |")


if __name__ == "__main__":
    main()
