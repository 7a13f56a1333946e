"""Accuracy of stagec's elementwise functions: max and mean ulp error per function and dtype, against a
high-precision reference (float64 NumPy for float32 and narrower; 120-bit mpmath for float64), beside JAX's
(when installed) on the same points.

    python benchmarks/bench_accuracy.py [--dtypes bfloat16,float16,float32,float64] [--n 20000] [--only sin,cos] [--no-jax]
    python benchmarks/bench_accuracy.py --speed [--only sin,cos] [--rounds 3]   # ms per jit call on 1M float32 values

The sample of each function is fixed (seeded) and covers its domain's hard regions: near 0 (down to subnormals),
near its poles and branch points, and huge arguments, besides ordinary ones (`sample`).
"""
from __future__ import annotations

import argparse
import math
import os
import sys

import ml_dtypes
import numpy as np

finfo = ml_dtypes.finfo  # (NumPy's finfo knows no bfloat16)

# name: (domain, reference of float64 NumPy or None, mpmath function name); a domain is (lo, hi) of |x| or x.
ONE = 1 - 2 ** -24
UNARY = {
    "exp": ((-104, 89), np.exp, "exp"), "expm1": ((-104, 89), np.expm1, "expm1"),
    "exp2": ((-150, 128), np.exp2, None), "log": ((0, np.inf), np.log, "log"),
    "log1p": ((-1, np.inf), np.log1p, "log1p"), "log2": ((0, np.inf), np.log2, None),
    "log10": ((0, np.inf), np.log10, "log10"), "sqrt": ((0, np.inf), np.sqrt, "sqrt"),
    "cbrt": ((-np.inf, np.inf), np.cbrt, "cbrt"), "sin": ((-np.inf, np.inf), np.sin, "sin"),
    "cos": ((-np.inf, np.inf), np.cos, "cos"), "tan": ((-np.inf, np.inf), np.tan, "tan"),
    "tanh": ((-np.inf, np.inf), np.tanh, "tanh"), "sinh": ((-89, 89), np.sinh, "sinh"),
    "cosh": ((-89, 89), np.cosh, "cosh"), "arcsin": ((-1, 1), np.arcsin, "asin"),
    "arccos": ((-1, 1), np.arccos, "acos"), "arctan": ((-np.inf, np.inf), np.arctan, "atan"),
    "arcsinh": ((-np.inf, np.inf), np.arcsinh, "asinh"), "arccosh": ((1, np.inf), np.arccosh, "acosh"),
    "arctanh": ((-1, 1), np.arctanh, "atanh"),
    # stagec.scipy.special's (jax.scipy.special's) and sinc: references of scipy.special / mpmath
    "erf": ((-10, 10), "erf", "erf"), "erfc": ((-10, 28), "erfc", "erfc"),
    "gammaln": ((-np.inf, np.inf), "gammaln", "gammaln"), "digamma": ((-np.inf, np.inf), "digamma", "digamma"),
    "erfinv": ((-1, 1), "erfinv", "erfinv"),
    "sinc": ((-np.inf, np.inf), lambda x: _sinc64(x), "sinc"),
}
SPECIAL = ("erf", "erfc", "gammaln", "digamma", "erfinv")  # in stagec.scipy.special / jax.scipy.special
BINARY = {"power": "power", "arctan2": "atan2", "hypot": "hypot", "logaddexp": None}

# The other inexact elementwise functions of stagec.numpy, stagec.lax, stagec.scipy.special and stagec.nn (the same
# names in jax): name: (module.attribute, domain, float64 reference (NumPy / SciPy), mpmath reference of an mpf, points
# the sample gathers around besides 0 and the domain's edges). References avoid the cancellations of the formulas
# they check (1 + tanh u as 2 / (1 + e^(-2u)), log(ndtr x) as log1p(-ndtr(-x)) for x > 0, ...).
SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
GELU_C = math.sqrt(2 / math.pi)


def _sp(name):
    import scipy.special
    return getattr(scipy.special, name)


def _stable_squareplus(x, sqrt):
    """(x + sqrt(x^2 + 4)) / 2, as 2 / (sqrt(x^2 + 4) - x) below 0 (no cancellation)."""
    return (x + sqrt(x * x + 4)) / 2 if x >= 0 else 2 / (sqrt(x * x + 4) - x)


def _ndtri_mp(p):
    import mpmath
    x = mpmath.mpf(float(_sp("ndtri")(float(p))))
    if not mpmath.isfinite(x):
        return x
    for _ in range(3):  # Newton's steps from SciPy's float64 value
        x -= (mpmath.ncdf(x) - p) / mpmath.npdf(x)
    return x


def _gelu_mp(a):
    import mpmath
    u = mpmath.sqrt(2 / mpmath.pi) * (a + mpmath.mpf("0.044715") * a ** 3)
    return a / (1 + mpmath.exp(-2 * u))


EXTRA = {
    "reciprocal": ("numpy.reciprocal", (-np.inf, np.inf), lambda x: 1 / x,
                   lambda a: 1 / a if a else __import__("mpmath").inf, ()),
    "deg2rad": ("numpy.deg2rad", (-np.inf, np.inf), np.deg2rad, lambda a: a * __import__("mpmath").pi / 180, ()),
    "rad2deg": ("numpy.rad2deg", (-np.inf, np.inf), np.rad2deg, lambda a: a * 180 / __import__("mpmath").pi, ()),
    "lax.rsqrt": ("lax.rsqrt", (0, np.inf), lambda x: 1 / np.sqrt(x),
                  lambda a: 1 / __import__("mpmath").sqrt(a) if a else __import__("mpmath").inf, ()),
    "lax.exp2": ("lax.exp2", (-150, 128), np.exp2, lambda a: __import__("mpmath").power(2, a), ()),
    "lax.logistic": ("lax.logistic", (-np.inf, np.inf), lambda x: _sp("expit")(x),
                     lambda a: 1 / (1 + __import__("mpmath").exp(-a)), ()),
    "logit": ("scipy.special.logit", (0, 1), lambda x: _sp("logit")(x),
              lambda a: __import__("mpmath").log(a / (1 - a)), (0.5,)),
    "ndtr": ("scipy.special.ndtr", (-40, 40), lambda x: _sp("ndtr")(x), lambda a: __import__("mpmath").ncdf(a), ()),
    "ndtri": ("scipy.special.ndtri", (0, 1), lambda x: _sp("ndtri")(x), _ndtri_mp, (0.5,)),
    "log_ndtr": ("scipy.special.log_ndtr", (-np.inf, 40), lambda x: _sp("log_ndtr")(x),
                 lambda a: __import__("mpmath").log(__import__("mpmath").ncdf(a)) if a <= 0 else
                 __import__("mpmath").log1p(-__import__("mpmath").ncdf(-a)), (-10.0, -20.0)),
    "entr": ("scipy.special.entr", (0, np.inf), lambda x: _sp("entr")(x),
             lambda a: -a * __import__("mpmath").log(a) if a else __import__("mpmath").mpf(0),
             (1.0,)),
    "gamma": ("scipy.special.gamma", (-180, 180), lambda x: _sp("gamma")(x), lambda a: __import__("mpmath").gamma(a),
              (1.0, 2.0, -1.0, -2.0)),
    "sigmoid": ("nn.sigmoid", (-np.inf, np.inf), lambda x: _sp("expit")(x),
                lambda a: 1 / (1 + __import__("mpmath").exp(-a)), ()),
    "softplus": ("nn.softplus", (-np.inf, np.inf), lambda x: np.logaddexp(x, 0),
                 lambda a: __import__("mpmath").log1p(__import__("mpmath").exp(a)), ()),
    "log_sigmoid": ("nn.log_sigmoid", (-np.inf, np.inf), lambda x: -np.logaddexp(-x, 0),
                    lambda a: -__import__("mpmath").log1p(__import__("mpmath").exp(-a)), ()),
    "silu": ("nn.silu", (-np.inf, np.inf), lambda x: x * _sp("expit")(x),
             lambda a: a / (1 + __import__("mpmath").exp(-a)), ()),
    "gelu": ("nn.gelu", (-np.inf, np.inf), lambda x: x * _sp("expit")(2 * GELU_C * (x + 0.044715 * x ** 3)), _gelu_mp,
             ()),
    "gelu_exact": ("nn.gelu_exact", (-np.inf, np.inf), lambda x: x / 2 * _sp("erfc")(-x / math.sqrt(2)),
                   lambda a: a / 2 * __import__("mpmath").erfc(-a / __import__("mpmath").sqrt(2)), ()),
    "mish": ("nn.mish", (-np.inf, np.inf), lambda x: x * np.tanh(np.logaddexp(x, 0)),
             lambda a: a * __import__("mpmath").tanh(__import__("mpmath").log1p(__import__("mpmath").exp(a))), ()),
    "elu": ("nn.elu", (-np.inf, np.inf), lambda x: np.where(x > 0, x, np.expm1(x)),
            lambda a: a if a > 0 else __import__("mpmath").expm1(a), ()),
    "selu": ("nn.selu", (-np.inf, np.inf), lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(x)),
             lambda a: SELU_S * (a if a > 0 else SELU_A * __import__("mpmath").expm1(a)), ()),
    "log1mexp": ("nn.log1mexp", (0, np.inf), lambda x: np.where(x < math.log(2), np.log(-np.expm1(-x)), np.log1p(-np.exp(-x))),
                 lambda a: __import__("mpmath").log(-__import__("mpmath").expm1(-a)) if a < 1 else
                 __import__("mpmath").log1p(-__import__("mpmath").exp(-a)), (math.log(2),)),
    "soft_sign": ("nn.soft_sign", (-np.inf, np.inf), lambda x: x / (np.abs(x) + 1), lambda a: a / (abs(a) + 1), ()),
    "squareplus": ("nn.squareplus", (-np.inf, np.inf), np.vectorize(lambda x: _stable_squareplus(x, math.sqrt)),
                   lambda a: _stable_squareplus(a, __import__("mpmath").sqrt), ()),
}
# binary ones: name: (module.attribute, float64 reference, mpmath reference)
EXTRA2 = {
    "logaddexp2": ("numpy.logaddexp2", np.logaddexp2,
                   lambda a, b: __import__("mpmath").log(__import__("mpmath").power(2, a) + __import__("mpmath").power(2, b), 2)),
    "float_power": ("numpy.float_power", np.power, lambda a, b: __import__("mpmath").power(a, b)),
    "xlogy": ("scipy.special.xlogy", lambda x, y: _sp("xlogy")(x, y), lambda a, b: a * __import__("mpmath").log(b)),
    "xlog1py": ("scipy.special.xlog1py", lambda x, y: _sp("xlog1py")(x, y),
                lambda a, b: a * __import__("mpmath").log1p(b)),
    "betaln": ("scipy.special.betaln", lambda x, y: _sp("betaln")(x, y),
               lambda a, b: __import__("mpmath").log(__import__("mpmath").beta(a, b))),
}
for _k, _v in EXTRA.items():
    UNARY[_k] = (_v[1], _v[2], None)


def _sinc64(x: np.ndarray) -> np.ndarray:
    """sinc in float64 with sin(pi x) from x mod 2 (exact): NumPy's sin(pi x) is off past x ~ 1e8."""
    r = x - 2 * np.round(x / 2)
    r = np.where(r > 0.5, 1 - r, np.where(r < -0.5, -1 - r, r))
    with np.errstate(all="ignore"):
        return np.where(x == 0, 1.0, np.sin(np.pi * r) / (np.pi * x))


def sample(name: str, dtype, n: int, seed: int = 0) -> np.ndarray:
    """`n` arguments of `name` in `dtype`: a third log-uniform in magnitude (subnormal to the domain's edge), a third
    uniform over the domain's ordinary part, a third near its edges (within a few thousand ulps) and around 0."""
    dt = np.dtype(dtype)
    fi = finfo(dt)
    rng = np.random.default_rng(seed)
    lo, hi = UNARY[name][0]
    hi_f = min(hi, float(fi.max))
    lo_f = max(lo, -float(fi.max))
    tiny = float(fi.smallest_subnormal)
    k = n // 3
    mag = np.exp(rng.uniform(math.log(tiny), math.log(max(abs(lo_f), abs(hi_f))), k))
    signs = np.where(rng.random(k) < 0.5, -1.0, 1.0) if lo_f < 0 else np.ones(k)
    a = mag * signs
    b = rng.uniform(max(lo_f, -30), min(hi_f, 30), k)
    edges = [e for e in (lo, hi, 0.0, *(EXTRA[name][4] if name in EXTRA else ())) if np.isfinite(e)]
    e = np.array(edges)[rng.integers(0, len(edges), n - 2 * k)]
    ulps = rng.integers(-3000, 3000, n - 2 * k) * np.maximum(np.spacing(np.abs(e).astype(dt)).astype(float), tiny)
    c = e + ulps
    x = np.concatenate([a, b, c]).astype(dt)
    x = x[(x >= lo) & (x <= hi) & np.isfinite(x)]
    return x


def sample2(name: str, dtype, n: int, seed: int = 0):
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    if name == "power":
        x = np.exp(rng.uniform(-20, 20, n)).astype(dt)
        y = rng.uniform(-30, 30, n)
        y = np.clip(y, -80 / np.maximum(np.abs(np.log(x.astype(float))), 1e-3), 80 / np.maximum(
            np.abs(np.log(x.astype(float))), 1e-3)).astype(dt)  # results in range
        return x, y
    big = np.exp(rng.uniform(-30, 30, (2, n))) * np.where(rng.random((2, n)) < 0.5, -1, 1)
    if name in ("logaddexp", "logaddexp2"):
        big = rng.uniform(-100, 100, (2, n))
    if name == "float_power":
        return sample2("power", dt, n, seed)
    if name == "xlogy":  # y > 0 (near 1 too: log y ~ 0)
        big[1] = np.abs(big[1])
        big[1, : n // 4] = 1 + rng.uniform(-1e-3, 1e-3, n // 4)
    if name == "xlog1py":  # y > -1
        big[1] = np.where(big[1] < -1, -1 + np.exp(rng.uniform(-30, 0, n)), big[1])
    if name == "betaln":  # a, b > 0, with ones and twos (betaln(1, 1) = 0)
        big = np.abs(big)
        big[:, : n // 4] = rng.choice([1.0, 2.0, 0.5], (2, n // 4)) * (1 + rng.uniform(-1e-3, 1e-3, (2, n // 4)))
    return big[0].astype(dt), big[1].astype(dt)


def ulp_error(got: np.ndarray, ref: np.ndarray, dtype) -> np.ndarray:
    """|got - ref| in units of the last place of `ref` rounded to `dtype` (its spacing; subnormal spacing below);
    0 where both are NaN or the same infinity, and where `ref` is below the normal range and `got` is 0 (IREE's
    CPU code and XLA's flush subnormal results to zero)."""
    dt = np.dtype(dtype)
    got = np.asarray(got).astype(np.float64)
    r = np.asarray(ref)
    with np.errstate(all="ignore"):
        rf = np.array([float(v) for v in r]) if r.dtype == object else r.astype(np.float64)
        rd = rf.astype(dt)
        sp = np.spacing(np.abs(rd)).astype(np.float64)
        sp = np.where(np.isinf(rd), np.spacing(finfo(dt).max).astype(np.float64), sp)
        if r.dtype == object:  # mpmath references: the difference in high precision
            import mpmath
            e = np.array([abs(float((mpmath.mpf(g) - rr) / s)) if np.isfinite(g) and mpmath.isfinite(rr) else np.inf
                          for g, rr, s in zip(got, r, sp)])
        else:
            e = np.abs(got - rf) / sp
        exact = (np.isnan(got) & np.isnan(rf)) | (np.isinf(got) & (got == rd)) | (
            (got == 0) & (np.abs(rf) < float(finfo(dt).tiny)))
    return np.where(exact, 0.0, np.where(np.isnan(e), np.inf, e))


def ftz(x: np.ndarray) -> np.ndarray:
    """`x` with subnormals flushed to (signed) zero, as IREE's and XLA's CPU code reads them."""
    return np.where(np.abs(x) < finfo(x.dtype).tiny, x * 0, x)


def reference(name: str, args, dtype):
    dt = np.dtype(dtype)
    if dt == np.float64:
        import mpmath
        mpmath.mp.prec = 120
        fn = {**{k: v[3] for k, v in EXTRA.items()}, **{k: v[2] for k, v in EXTRA2.items()},
              "power": lambda a, b: mpmath.power(a, b), "arctan2": mpmath.atan2, "hypot": mpmath.hypot,
              "logaddexp": lambda a, b: mpmath.log(mpmath.exp(a) + mpmath.exp(b)),
              "exp2": lambda a: mpmath.power(2, a), "log2": lambda a: mpmath.log(a, 2),
              "cbrt": lambda a: mpmath.sign(a) * mpmath.cbrt(abs(a)),
              "gammaln": lambda a: mpmath.log(abs(mpmath.gamma(a))) if a < 1e300 else mpmath.loggamma(a),
              "sinc": lambda a: mpmath.sinpi(a) / (mpmath.pi * a) if a else mpmath.mpf(1)}.get(name) or getattr(
                  mpmath, UNARY[name][2])

        def one(*xs):
            try:
                v = fn(*(mpmath.mpf(float(x)) for x in xs))
                return v if isinstance(v, mpmath.mpf) else mpmath.mpf("nan")
            except (ValueError, ZeroDivisionError, OverflowError):
                return mpmath.mpf("nan")
        return np.array([one(*xs) for xs in zip(*args)], dtype=object)
    a64 = [np.asarray(a, np.float64) for a in args]
    with np.errstate(all="ignore"):
        if name in EXTRA2:
            return EXTRA2[name][1](*a64)
        if name in BINARY:
            return {"power": np.power, "arctan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp}[name](*a64)
        ref = UNARY[name][1]
        if isinstance(ref, str):
            import scipy.special
            ref = getattr(scipy.special, ref)
        return ref(a64[0])


def _fn(np_module, name: str):
    """The function `name` of stagec.numpy / jax.numpy (`np_module`), of its scipy.special, or the one EXTRA or EXTRA2
    name as module.attribute of stagec / jax."""
    import importlib
    root = np_module.__name__.split(".")[0]
    where = EXTRA.get(name, EXTRA2.get(name, (None,)))[0]
    if where == "nn.gelu_exact":
        gelu = importlib.import_module(root + ".nn").gelu
        return lambda x: gelu(x, approximate=False)
    if where is not None:
        mod, attr = where.rsplit(".", 1)
        return getattr(importlib.import_module(f"{root}.{mod}"), attr)
    if name not in SPECIAL:
        return getattr(np_module, name)
    return getattr(importlib.import_module(np_module.__name__.replace(".numpy", ".scipy.special")), name)


def _run(fn, args):
    return np.asarray(fn(*args))


def measure(names, dtypes, n: int, with_jax: bool = True):
    import stagec
    import stagec.numpy as snp
    jax, jnp = (None, None)
    if with_jax:
        try:
            import jax
            import jax.numpy as jnp
            jax.config.update("jax_enable_x64", True)
        except ImportError:
            pass
    rows = []
    for dtype in dtypes:
        dt = np.dtype(dtype)
        if dt == np.float64:
            stagec.config.update("enable_x64", True)
        for name in names:
            nn = min(n, 3000) if dt == np.float64 else n
            args = sample2(name, dt, nn) if name in BINARY or name in EXTRA2 else (sample(name, dt, nn),)
            ref = reference(name, args, dt)
            ref_ftz = reference(name, [ftz(a) for a in args], dt)
            row = {"function": name, "dtype": dt.name, "points": len(args[0])}
            for sysname, mod, jit in (("stagec", snp, stagec.jit), ("jax", jnp, jax and jax.jit)):
                if mod is None:
                    continue
                try:
                    got = _run(jit(_fn(mod, name)), args).astype(np.float64)
                except Exception as e:  # noqa: BLE001  (a function that does not compile is a finding)
                    row[sysname] = f"error: {type(e).__name__}"
                    continue
                err = ulp_error(got, ref, dt)
                if any((ftz(a) != a).any() for a in args):  # subnormal arguments may be read as 0
                    err = np.minimum(err, ulp_error(got, ref_ftz, dt))
                fin = err[np.isfinite(err)]
                row[sysname] = (float(err.max()), float(err.mean()), float(fin.max()) if fin.size else math.inf)
            rows.append(row)
            print(_line(row), file=sys.stderr, flush=True)
        stagec.config.update("enable_x64", False)
    return rows


def _cell(v):
    """max / mean ulps, and the max over the points where neither is NaN-for-finite (inf) when that differs."""
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    mx, mean, fmax = v
    return f"{mx:.3g} / {mean:.2g}" + ("" if fmax == mx else f" (finite: {fmax:.3g})")


def _line(row):
    return f"| {row['function']} | {row['dtype']} | {_cell(row.get('stagec'))} | {_cell(row.get('jax'))} |"


def _ms(fn, repeat: int, warm: float = 0.3) -> float:
    """median ms per call of `fn` over `repeat` calls after untimed ones for `warm` seconds (at least 3) from the
    end of the first (which traces, compiles or loads): the steady state, where stagec's CPU driver has read whether
    a core is spare (`backend._spare_core`: two windows of 0.1 s from its first call; before, a module in its band
    ran on one thread). Until 2026-11-27 the first call's time counted in `warm`: a process's first row (erf in
    `--only erf,...`) ran on one thread."""
    import time
    fn()
    t0, n = time.perf_counter(), 1
    while n < 3 or time.perf_counter() - t0 < warm:
        fn()
        n += 1
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(ts))


def _speed_child(lib: str, names, n: int, repeat: int, one_core: bool = False) -> None:
    """In a process of one library ("stagec" or "jax"): print a JSON object name -> median ms per call (`_ms`);
    `one_core`: the process (its threads: JAX's pool, IREE's workers) kept to one core, set before either loads."""
    import json
    if one_core:
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    if lib == "jax":
        from _timing import import_jax
        jax, m = import_jax()
        jit = jax.jit
    else:
        import stagec
        import stagec.numpy as m
        jit = stagec.jit
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-10, 10, n).astype(np.float32), rng.uniform(-3, 3, n).astype(np.float32)
    out = {}
    for name in names:
        lo, hi = UNARY[name][0] if name in UNARY else (-np.inf, np.inf)
        a = np.clip(x, lo, hi) if lo > -10 or hi < 10 else x
        args = (np.abs(x) + 0.1, y) if name == "power" else (x, y) if name in BINARY or name in EXTRA2 else (a,)
        f, sa = jit(_fn(m, name)), [m.asarray(v) for v in args]
        out[name] = _ms(lambda: f(*sa).block_until_ready(), repeat)  # (both timed to the result on the device)
    print(json.dumps(out))


def speed(names, n: int = 1 << 20, repeat: int = 25, rounds: int = 3, one_core: bool = False):
    """ms per call of each function's jit on `n` float32 values, stagec and JAX (when installed): `rounds` rounds of
    one fresh process per library (alternated: `_timing.alternating`), each timing every function; the median over
    the rounds of each process's median, and the load average. `one_core`: each process on one core (the kernels
    compared without JAX's second thread or stagec's local-task)."""
    from _timing import alternating, import_jax, run_json
    libs = ["stagec"] + (["jax"] if import_jax()[0] is not None else [])
    got: dict = {lib: {nm: [] for nm in names} for lib in libs}
    print(f"load average {os.getloadavg()[0]:.1f}; {rounds} rounds of one process per library, alternated"
          + ("; each on one core" if one_core else ""))
    for r in range(rounds):
        for lib in alternating(libs, r):
            res = run_json([sys.executable, __file__, "--speed-child", lib, "--only", ",".join(names),
                            "--repeat", str(repeat), *(["--one-core"] if one_core else [])], f"{lib} speed child")
            for nm, ms in res.items():
                got[lib][nm].append(ms)
    med = {lib: {nm: float(np.median(v)) for nm, v in d.items()} for lib, d in got.items()}
    print("| function | stagec ms, median (spread) | JAX ms | stagec / JAX |\n|---|---|---|---|")
    for nm in names:
        cells = [f"{med[lib][nm]:.2f} ({min(got[lib][nm]):.2f}-{max(got[lib][nm]):.2f})" for lib in libs]
        ratio = f"{med['stagec'][nm] / med['jax'][nm]:.2f}" if "jax" in med else ""
        print(f"| {nm} | {' | '.join(cells)} | {ratio} |", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-jax", action="store_true")
    ap.add_argument("--speed", action="store_true", help="time each function's jit on 1M float32 values instead")
    ap.add_argument("--rounds", type=int, default=3, help="--speed: rounds of one process per library")
    ap.add_argument("--repeat", type=int, default=25, help="--speed: timed calls per function and process")
    ap.add_argument("--one-core", action="store_true", help="--speed: each process kept to one core")
    ap.add_argument("--speed-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("STAGEC_JIT_TIERING", "never")
    names = args.only.split(",") if args.only else [*UNARY, *BINARY, *EXTRA2]
    if args.speed_child:
        return _speed_child(args.speed_child, names, 1 << 20, args.repeat, args.one_core)
    if args.speed:
        return speed(names, repeat=args.repeat, rounds=args.rounds, one_core=args.one_core)
    rows = measure(names, args.dtypes.split(","), args.n, not args.no_jax)
    print("| function | dtype | stagec max / mean ulp | JAX max / mean ulp |\n|---|---|---|---|")
    for r in rows:
        print(_line(r))


if __name__ == "__main__":
    main()
