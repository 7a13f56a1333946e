"""On a GPU (CUDA; PROBE_BACKEND=cpu to try it here): float64 and float32 elementwise functions' max error in ulps
against float64 NumPy (float64's against mpmath at the worst 20 points NumPy shows), to find IREE's GPU lowerings
that are off. `JAX_PLATFORMS=cpu python3 benchmarks/gpu_probe_f64.py`; the H200's figures are in docs/log.md."""
import os
import numpy as np
import mpmath
import stagec
import stagec.numpy as snp
stagec.config.update("enable_x64", True)
B = os.environ.get("PROBE_BACKEND", "cuda")
rng = np.random.default_rng(0)
n = 1 << 16
wide = np.concatenate([rng.uniform(-10, 10, n // 2), 10.0 ** rng.uniform(-8, 5, n // 4) * rng.choice([-1, 1], n // 4),
                       rng.uniform(-4000, 4000, n // 4)])
pos = 10.0 ** rng.uniform(-300, 300, n)
near1 = 1 + rng.uniform(-1e-3, 1e-3, n)
OPS = {"sin": (snp.sin, np.sin, mpmath.sin, wide), "cos": (snp.cos, np.cos, mpmath.cos, wide),
       "tan": (snp.tan, np.tan, mpmath.tan, wide), "log": (snp.log, np.log, mpmath.log, pos),
       "log near 1": (snp.log, np.log, mpmath.log, near1), "exp": (snp.exp, np.exp, mpmath.exp, rng.uniform(-700, 700, n)),
       "log1p": (snp.log1p, np.log1p, lambda v: mpmath.log1p(v), 10.0 ** rng.uniform(-20, 5, n)),
       "expm1": (snp.expm1, np.expm1, mpmath.expm1, rng.uniform(-30, 30, n)),
       "tanh": (snp.tanh, np.tanh, mpmath.tanh, rng.uniform(-20, 20, n)),
       "sinh": (snp.sinh, np.sinh, mpmath.sinh, rng.uniform(-700, 700, n)),
       "atan": (snp.arctan, np.arctan, mpmath.atan, wide), "sqrt": (snp.sqrt, np.sqrt, mpmath.sqrt, pos)}
ys = 10.0 ** rng.uniform(-5, 5, n) * rng.choice([-1, 1], n)
for name, (sf, nf, mf, x) in OPS.items():
    for dt in (np.float64, np.float32):
        with np.errstate(over="ignore"):
            xv = x.astype(dt)
        if dt == np.float32 and name in ("log", "exp", "sinh", "sqrt"):
            xv = np.clip(xv, -80, 80).astype(dt) if name not in ("log", "sqrt") else (10.0 ** rng.uniform(-37, 38, n)).astype(dt)
        got = np.asarray(stagec.jit(sf, backend=B)(xv)).astype(np.float64)
        ref = nf(xv.astype(np.float64))
        ok = np.isfinite(ref) & (ref != 0)
        e = np.where(ok, np.abs(got - ref) / np.spacing(np.abs(ref).astype(dt)).astype(np.float64), 0)
        if dt == np.float64:  # (NumPy's own float64 error is up to ~1 ulp: the worst points again in mpmath)
            for i in np.argsort(e)[-20:]:
                with mpmath.workdps(40):
                    r = float(mf(mpmath.mpf(float(xv[i]))))
                e[i] = abs(got[i] - r) / np.spacing(abs(r)) if r != 0 else 0
        i = int(np.argmax(e))
        print(f"{name:10s} {np.dtype(dt).name:8s} max {e.max():8.2f} ulps at x={xv[i]!r}", flush=True)
got = np.asarray(stagec.jit(snp.arctan2, backend=B)(ys, wide))
ref = np.arctan2(ys, wide)
print("atan2 f64 max", float(np.max(np.abs(got - ref) / np.spacing(np.abs(ref)))), "ulps (vs NumPy)")
