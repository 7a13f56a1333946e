"""Seeing and calling out from inside compiled code: `debug.print`, `debug.callback`, `pure_callback`,
`io_callback`. Under `jit` (and in loop bodies and branches) each becomes a call from the compiled module to
Python (the `callback` primitive); eagerly the function simply runs."""
from __future__ import annotations

import builtins
from typing import Any, Callable

import numpy as np

from . import dtypes as _dt
from .array import device_put, effects_barrier
from .core import ShapedArray, TracerBase, current_trace
from .primitives.callback import HostFunction, callback as _bind_callback
from .tree_util import tree_flatten, tree_leaves, tree_unflatten


def _is_array(x) -> bool:
    return isinstance(x, (TracerBase, np.ndarray, np.generic)) or hasattr(x, "_bv") or type(x) in (
        bool, int, float, builtins.complex)


def _name(fn: Callable) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def _result_avals(result_shape_dtypes, who: str) -> tuple[list[ShapedArray], Any]:
    leaves, tree = tree_flatten(result_shape_dtypes)
    try:
        avals = [ShapedArray(tuple(r.shape), _dt.canonicalize(r.dtype)) for r in leaves]
    except AttributeError:
        raise TypeError(f"{who}: result_shape_dtypes must be a pytree of objects with .shape and .dtype "
                        f"(stagec.ShapeDtypeStruct), got {result_shape_dtypes!r:.80}") from None
    return avals, tree


def _call(fn: Callable, args: tuple, kwargs: dict, avals: list[ShapedArray], out_tree, kind: str, ordered: bool):
    """Run `fn(*args, **kwargs)` on NumPy values, now (eagerly) or from compiled code; results as `avals`."""
    leaves, tree = tree_flatten((args, kwargs))
    dynamic = [i for i, x in enumerate(leaves) if _is_array(x)]
    name = _name(fn)

    def host(*values):
        full = list(leaves)
        for i, v in zip(dynamic, values):
            full[i] = np.asarray(v)
        a, kw = tree_unflatten(tree, full)
        out = fn(*a, **kw)
        outs = tree_leaves(out) if avals else []
        if len(outs) != len(avals):
            raise TypeError(f"callback {name} returned {len(outs)} value(s), its result_shape_dtypes declare "
                            f"{len(avals)}")
        res = []
        for k, (o, av) in enumerate(zip(outs, avals)):
            o = np.asarray(o, dtype=av.dtype)
            if o.shape != av.shape:
                raise TypeError(f"callback {name} returned shape {o.shape} for result {k}, declared {av.shape}")
            res.append(o)
        return res

    values = [leaves[i] for i in dynamic]
    traced = current_trace() is not None or any(isinstance(v, TracerBase) for v in values)
    if not traced:
        if ordered:  # after the ordered effects of calls still queued
            effects_barrier()
        outs = [device_put(o) for o in host(*[np.asarray(v) for v in values])]
    else:
        outs = _bind_callback(HostFunction(host, name, avals, kind, ordered), *values)
    return tree_unflatten(out_tree, outs) if avals else None


def print(fmt: str, *args, ordered: bool = False, **kwargs) -> None:
    """Print `fmt.format(*args, **kwargs)` with the runtime values of `args`, also from inside `jit`, loops and
    branches (every iteration). Within one call the prints come in program order."""
    def show(*a, **kw):
        builtins.print(fmt.format(*a, **kw), flush=True)
    show.__name__ = "debug_print"
    _call(show, args, kwargs, [], None, "debug", ordered)


def callback(fn: Callable, *args, ordered: bool = False, **kwargs) -> None:
    """Call `fn(*args, **kwargs)` for its side effects with the runtime values of `args` (NumPy arrays)."""
    _call(fn, args, kwargs, [], None, "debug", ordered)


def pure_callback(fn: Callable, result_shape_dtypes, *args, vmap_method: str | None = None, **kwargs):
    """`fn(*args, **kwargs)` computed in Python (NumPy arrays in and out), usable under `jit`: a pure function
    whose results have the shapes and dtypes `result_shape_dtypes` declares."""
    avals, tree = _result_avals(result_shape_dtypes, f"pure_callback({_name(fn)})")
    return _call(fn, args, kwargs, avals, tree, "pure", False)


def io_callback(fn: Callable, result_shape_dtypes, *args, ordered: bool = False, **kwargs):
    """Like `pure_callback` for a function with side effects: never removed or deduplicated."""
    avals, tree = _result_avals(result_shape_dtypes, f"io_callback({_name(fn)})")
    return _call(fn, args, kwargs, avals, tree, "io", ordered)
