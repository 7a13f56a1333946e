"""Each elementwise function of stagec.numpy in one dtype on one backend: whether it compiles (and runs), and its
largest error over a fixed moderate sample in ulps of the dtype, against NumPy in float64/complex128 (nextafter's
oracle is float64's: its 1 ulp is the oracle's). On `cuda` only the compile is checked (no GPU needed).

    python benchmarks/sweep_elementwise.py BACKEND DTYPE un|bin [name,name,...]
    (e.g. vulkan complex64 un; cuda float16 bin)
"""
import sys

import numpy as np

import stagec
import stagec.numpy as snp
UN_F = "abs fabs negative positive sign sqrt cbrt square reciprocal exp exp2 expm1 log log2 log10 log1p sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh deg2rad rad2deg floor ceil trunc rint fix round sinc signbit isfinite isnan isinf".split()
BIN_F = "add subtract multiply divide power float_power arctan2 hypot logaddexp logaddexp2 maximum minimum fmax fmin copysign fmod remainder floor_divide heaviside nextafter".split()
UN_C = "abs negative positive sign sqrt square reciprocal exp exp2 expm1 log log2 log10 log1p sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh angle real imag conj isfinite isnan isinf".split()
BIN_C = "add subtract multiply divide power float_power".split()
DOMAIN = {"arcsin": (-1, 1), "arccos": (-1, 1), "arctanh": (-1, 1), "arccosh": (1, 1e4), "log": (0, 1e4), "log2": (0, 1e4),
          "log10": (0, 1e4), "sqrt": (0, 1e4), "log1p": (-1, 1e4), "exp": (-80, 80), "exp2": (-120, 120), "expm1": (-80, 80),
          "sinh": (-80, 80), "cosh": (-80, 80), "tan": (-100, 100), "sin": (-1e4, 1e4), "cos": (-1e4, 1e4)}


def sample(name, dt, n, rng):
    if np.dtype(dt).kind == "c":
        z = 10.0 ** rng.uniform(-3, 2, n) * np.exp(1j * rng.uniform(-np.pi, np.pi, n))
        if name in ("exp", "exp2", "expm1", "sinh", "cosh", "sin", "cos", "tan", "tanh", "power", "float_power"):
            z = rng.uniform(-10, 10, n) + 1j * rng.uniform(-10, 10, n)
        return z.astype(dt)
    lo, hi = DOMAIN.get(name, (-1e3, 1e3))
    if dt == np.float16:
        lo, hi = max(lo, -6e4), min(hi, 6e4)
        if name in ("exp", "expm1", "sinh", "cosh"):
            lo, hi = -10, 10
        if name == "exp2":
            lo, hi = -14, 15
    x = rng.uniform(lo, hi, n)
    if name == "power":
        x = np.abs(x)
    return x.astype(dt)


def ulps(got, want, dt):
    rdt = np.float32 if np.dtype(dt) in (np.complex64, np.float32) else np.float16 if np.dtype(dt) == np.float16 else np.float64
    fi = np.finfo(rdt)
    got = np.asarray(got).astype(np.complex128 if np.iscomplexobj(want) or np.iscomplexobj(got) else np.float64)
    want = np.asarray(want)
    a = np.abs(want)
    ok = np.isfinite(want) & (a > fi.tiny * 2 ** (fi.nmant + 2)) & (a < float(fi.max))
    with np.errstate(all="ignore"):
        e = np.where(ok, np.abs(got - want) / np.spacing(np.where(ok, a, 1).astype(rdt)).astype(np.float64), 0)
        mism = (np.isnan(got) != np.isnan(want)) if not np.iscomplexobj(want) else (np.isnan(got.real) != np.isnan(want.real))
    e = np.where(np.isnan(e), np.inf, e)
    return float(e.max()), int(mism.sum())


def npfn(name):
    return {"fix": np.fix, "round": np.round, "sinc": np.sinc, "angle": np.angle, "real": np.real, "imag": np.imag,
            "conj": np.conj}.get(name) or getattr(np, name)


def run(backend, dt, names, binary, cuda_only=False):
    rng = np.random.default_rng(0)
    rows = []
    for name in names:
        fn = getattr(snp, name)
        x = sample(name, dt, 2000, rng)
        args = (x, sample(name, dt, 2000, rng)) if binary else (x,)
        if binary and name in ("power", "float_power") and np.dtype(dt).kind == "f":
            args = (x, rng.uniform(-4, 4, 2000).astype(dt))

        try:
            if cuda_only:
                stagec.jit(fn).lower(*args).compile("cuda")
                rows.append((name, "compiles", "", ""))
                continue
            got = stagec.jit(fn, backend=backend)(*args)
        except Exception as e:  # noqa: BLE001
            rows.append((name, "FAIL", f"{type(e).__name__}: {str(e).splitlines()[0][:150]}", ""))
            continue
        wide = [a.astype(np.complex128 if np.dtype(dt).kind == "c" else np.float64) for a in args]
        with np.errstate(all="ignore"):
            want = npfn(name)(*wide)
        if name in ("isfinite", "isnan", "isinf", "signbit"):
            rows.append((name, "ok", str(int((np.asarray(got) != want).sum())) + " wrong", ""))
            continue
        if np.asarray(got).dtype != np.asarray(npfn(name)(*args)).dtype and name not in ("float_power",):
            dtype_note = f"dtype {np.asarray(got).dtype} vs numpy {np.asarray(npfn(name)(*args)).dtype}"
        else:
            dtype_note = ""
        e, mism = ulps(got, want, dt)
        rows.append((name, "ok", f"{e:.3g}", f"nan-mismatch {mism} {dtype_note}" if mism or dtype_note else ""))
    return rows


if __name__ == "__main__":
    backend, dtn, kind = sys.argv[1], sys.argv[2], sys.argv[3]
    dt = np.dtype(dtn).type
    cplx = np.dtype(dt).kind == "c"
    names = (BIN_C if cplx else BIN_F) if kind == "bin" else (UN_C if cplx else UN_F)
    if len(sys.argv) > 4:
        names = sys.argv[4].split(",")
    for r in run(backend, dt, names, kind == "bin", backend == "cuda"):
        print("| " + " | ".join((backend, dtn) + r) + " |", flush=True)
