"""`stagec.test_util.check_grads` (as `jax.test_util`): derivatives checked against finite differences."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from . import tree_util
from .dtypes import canonicalize
from .ad import jvp, vjp


def _eps_for(x) -> float:
    return 1e-3 if canonicalize(np.asarray(x).dtype) == np.float64 else 1e-2


def _tol(dtype, atol, rtol):
    default = 1e-5 if np.dtype(dtype) == np.float64 else 2e-2
    return (default if atol is None else atol), (default if rtol is None else rtol)


def _close(a, b, atol, rtol, what: str):
    for x, y in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(b)):
        at, rt = _tol(np.asarray(x).dtype, atol, rtol)  # (the computed dtype: float32 unless x64 is on)
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        np.testing.assert_allclose(x, y, atol=at, rtol=rt, err_msg=what)


def _add(xs, ts, eps):
    return [np.asarray(x) + eps * np.asarray(t).astype(np.asarray(x).dtype) for x, t in zip(xs, ts)]


def check_jvp(f: Callable, args: Sequence, atol=None, rtol=None, eps=None) -> None:
    """The JVP of `f` at `args` in a random direction equals the central difference."""
    rng = np.random.default_rng(0)
    args = [np.asarray(a) for a in args]
    eps = eps or max(_eps_for(a) for a in args)
    ts = [rng.standard_normal(a.shape).astype(a.dtype) for a in args]
    _, t_out = jvp(f, tuple(args), tuple(ts))
    plus, minus = f(*_add(args, ts, eps / 2)), f(*_add(args, ts, -eps / 2))
    num = tree_util.tree_map(lambda p, m: (np.asarray(p, np.float64) - np.asarray(m, np.float64)) / eps, plus, minus)
    _close(t_out, num, atol, rtol, "JVP against central differences")


def check_vjp(f: Callable, args: Sequence, atol=None, rtol=None, eps=None) -> None:
    """<vjp(ct), t> equals <ct, jvp(t)> for random t and ct (and the JVP is checked first)."""
    rng = np.random.default_rng(1)
    args = [np.asarray(a) for a in args]
    ts = [rng.standard_normal(a.shape).astype(a.dtype) for a in args]
    out, t_out = jvp(f, tuple(args), tuple(ts))
    _, pullback = vjp(f, *args)
    cts = tree_util.tree_map(lambda o: rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype), out)
    cts_in = pullback(cts)
    lhs = sum(float(np.vdot(np.asarray(c), np.asarray(t))) for c, t in zip(cts_in, ts))
    rhs = sum(float(np.vdot(np.asarray(c), np.asarray(t)))
              for c, t in zip(tree_util.tree_leaves(cts), tree_util.tree_leaves(t_out)))
    at, rt = _tol(canonicalize(args[0].dtype), atol, rtol)
    np.testing.assert_allclose(lhs, rhs, atol=at, rtol=rt, err_msg="VJP against JVP")


def check_grads(f: Callable, args: Sequence, order: int, modes: Sequence[str] = ("fwd", "rev"), atol=None,
                rtol=None, eps=None) -> None:
    """Check `f`'s derivatives up to `order` at `args`: forward mode ('fwd') against central differences,
    reverse mode ('rev') against forward mode; raises AssertionError on a mismatch."""
    args = tuple(args)

    def check(f, order):
        if "fwd" in modes:
            check_jvp(f, args, atol, rtol, eps)
        if "rev" in modes:
            check_vjp(f, args, atol, rtol, eps)
        if order > 1:
            rng = np.random.default_rng(order)
            ts = [rng.standard_normal(np.shape(a)).astype(np.asarray(a).dtype) for a in args]
            if "fwd" in modes:
                check(lambda *xs: jvp(f, xs, tuple(ts))[1], order - 1)
            if "rev" in modes:
                out = f(*args)
                ct = tree_util.tree_map(lambda o: rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype), out)
                check(lambda *xs: vjp(f, *xs)[1](ct), order - 1)

    check(f, order)


