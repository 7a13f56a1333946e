"""Complex functions at huge, tiny, infinite and NaN parts: for each function, dtype and backend, the largest error over
a fixed sample in ulps of |f(z)| (against mpmath), and how many of a grid of special values (0, +-1, huge, tiny, inf,
NaN parts) land in another class than C99's (NaN, +-inf, finite per part; NumPy's complex128 functions, which follow
C99 Annex G, except expm1: cexp(z) - 1, and division: Annex G's `_Cdivd`).

    python benchmarks/bench_complex_edges.py [--backends cpu,vulkan] [--n 400]
"""
from __future__ import annotations

import argparse
import math
import sys

import mpmath
import numpy as np

import stagec
import stagec.numpy as snp

FNS = {"abs": (snp.abs, mpmath.fabs, np.abs), "sqrt": (snp.sqrt, mpmath.sqrt, np.sqrt),
       "log": (snp.log, mpmath.log, np.log), "log1p": (snp.log1p, mpmath.log1p, None),
       "exp": (snp.exp, mpmath.exp, np.exp), "expm1": (snp.expm1, mpmath.expm1, lambda z: np.exp(z) - 1),
       "sin": (snp.sin, mpmath.sin, np.sin), "cos": (snp.cos, mpmath.cos, np.cos), "tan": (snp.tan, mpmath.tan, np.tan),
       "tanh": (snp.tanh, mpmath.tanh, np.tanh), "recip": (snp.reciprocal, lambda u: 1 / u, None),
       "sinh": (snp.sinh, mpmath.sinh, np.sinh), "cosh": (snp.cosh, mpmath.cosh, np.cosh),
       "sign": (snp.sign, lambda u: u / abs(u) if u else u, np.sign),
       **{f"arc{n}": (getattr(snp, f"arc{n}"), getattr(mpmath, f"a{n}"), getattr(np, f"arc{n}"))
          for n in ("sin", "cos", "tan", "sinh", "cosh", "tanh")}}


def sample(dtype, n: int) -> np.ndarray:
    r = np.random.default_rng(0)
    lo, hi = (-37, 38) if dtype == np.complex64 else (-300, 307.5)
    mag = lambda: 10.0 ** r.uniform(lo, hi, n)  # noqa: E731
    z = np.concatenate([mag() * np.exp(1j * r.uniform(-np.pi, np.pi, n)),
                        mag() * r.choice([-1, 1], n) + 1j * r.uniform(-3, 3, n),
                        r.uniform(-3, 3, n) + 1j * mag() * r.choice([-1, 1], n),
                        r.uniform(-90, 90, n) + 1j * r.uniform(-1e4, 1e4, n),
                        np.exp(r.uniform(-1e-4, 1e-4, n) + 1j * r.uniform(-np.pi, np.pi, n))]).astype(dtype)
    tiny = np.finfo(z.real.dtype).tiny  # (subnormal parts: IREE's CPU code reads them as 0)
    return z[~(((np.abs(z.real) < tiny) & (z.real != 0)) | ((np.abs(z.imag) < tiny) & (z.imag != 0)))]


def specials(dtype) -> np.ndarray:
    big = 1e38 if dtype == np.complex64 else 1e300
    vals = [0.0, -0.0, 1.0, -2.5, big, -big, math.inf, -math.inf, math.nan]
    return np.array([complex(a, b) for a in vals for b in vals], dtype)


def ulps(got, want, dtype) -> np.ndarray:
    fi = np.finfo(np.float32 if dtype == np.complex64 else np.float64)
    got, want = np.asarray(got).astype(np.complex128), np.asarray(want, np.complex128)
    a = np.abs(want)
    ok = np.isfinite(want) & (a > fi.tiny * 2 ** 30) & (a < fi.max)
    with np.errstate(all="ignore"):
        e = np.abs(got - want) / np.spacing(np.where(ok, a, 1).astype(fi.dtype)).astype(np.float64)
    return np.where(ok, np.nan_to_num(e, nan=np.inf), 0)


def classes(v) -> np.ndarray:
    v = np.asarray(v).astype(np.complex128)
    return np.stack([np.isnan(v.real), np.isposinf(v.real), np.isneginf(v.real),
                     np.isnan(v.imag), np.isposinf(v.imag), np.isneginf(v.imag)])


def cdivd(a, b, c, d) -> complex:
    """C99 Annex G.5.2's `_Cdivd`."""
    m, ilogbw = float(np.fmax(abs(c), abs(d))), 0
    if math.isfinite(m) and m:
        ilogbw = math.floor(math.log2(m))
        c, d = math.ldexp(c, -ilogbw), math.ldexp(d, -ilogbw)
    den = c * c + d * d
    with np.errstate(all="ignore"):
        x = float(np.ldexp(np.float64(a * c + b * d) / den, -ilogbw))
        y = float(np.ldexp(np.float64(b * c - a * d) / den, -ilogbw))
    if math.isnan(x) and math.isnan(y):
        if den == 0 and (not math.isnan(a) or not math.isnan(b)):
            x, y = math.copysign(math.inf, c) * a, math.copysign(math.inf, c) * b
        elif (math.isinf(a) or math.isinf(b)) and math.isfinite(c) and math.isfinite(d):
            a, b = math.copysign(float(math.isinf(a)), a), math.copysign(float(math.isinf(b)), b)
            x, y = math.inf * (a * c + b * d), math.inf * (b * c - a * d)
        elif (math.isinf(c) or math.isinf(d)) and math.isfinite(a) and math.isfinite(b):
            c, d = math.copysign(float(math.isinf(c)), c), math.copysign(float(math.isinf(d)), d)
            x, y = 0.0 * (a * c + b * d), 0.0 * (b * c - a * d)
    return complex(x, y)


def run(backend: str, dtype, n: int) -> list[tuple]:
    z, sp = sample(dtype, n), specials(dtype)
    w = z[::-1].copy()
    spz, spw = np.repeat(sp, len(sp)), np.tile(sp, len(sp))
    rows = []
    with mpmath.workdps(40):
        for name, (fn, mp, npf) in [*FNS.items(), ("divide", (None, None, None))]:
            try:
                if name == "divide":
                    got, got_sp = stagec.jit(lambda p, q, s, t: (p / q, s / t), backend=backend)(z, w, spz, spw)
                    want = np.array([complex(mpmath.mpc(complex(p)) / mpmath.mpc(complex(q))) for p, q in zip(z, w)])
                    want_sp = np.array([cdivd(p.real, p.imag, q.real, q.imag) for p, q in zip(spz, spw)])
                else:
                    got, got_sp = stagec.jit(lambda v, s: (fn(v), fn(s)), backend=backend)(z, sp)
                    want = np.array([complex(mp(mpmath.mpc(complex(v)))) for v in z])
                    with np.errstate(all="ignore"):
                        want_sp = npf(sp.astype(np.complex128)) if npf is not None else None
            except Exception as e:  # noqa: BLE001 (a row saying why)
                rows.append((name, f"{type(e).__name__}: {str(e)[:60]}", ""))
                continue
            err = ulps(got, want, dtype)
            i = int(np.argmax(err))
            bad = "-" if want_sp is None else int(
                (classes(got_sp) != classes(np.asarray(want_sp).astype(dtype))).any(0).sum())
            rows.append((name, f"{err.max():.3g} (z = {z[i]:.3g})" if name != "divide" else f"{err.max():.3g}", bad))
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default="cpu,vulkan")
    ap.add_argument("--n", type=int, default=400)
    args = ap.parse_args(argv)
    print(f"stagec {stagec.__version__}, {5 * args.n} points per row; specials: {len(specials(np.complex64))} "
          f"(division: {len(specials(np.complex64)) ** 2})")
    for backend in args.backends.split(","):
        for dtype in (np.complex64, np.complex128):
            if backend != "cpu" and dtype == np.complex128:
                continue
            stagec.config.update("enable_x64", dtype == np.complex128)
            print(f"\n| {backend} {np.dtype(dtype).name} | max ulps of \\|f\\| | special values off C99's class |")
            print("|---|---|---|")
            for name, err, bad in run(backend, dtype, args.n):
                print(f"| {name} | {err} | {bad} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
