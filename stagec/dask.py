"""stagec on a Dask cluster: the few helpers that pay (see docs/scaling.md).

Jitted functions, `Compiled`, `Lowered`, Arrays and artifacts pickle (cloudpickle for lambdas and closures), so
they go into Dask graphs as they are: `x.map_blocks(stagec.jit(f), dtype="float32")` works without this module. A
pickled jitted function carries its compiled signatures' modules (`jit.Jitted.__reduce__`), so a worker runs
what the client compiled without tracing or compiling. What this module adds:

- `map_blocks(f, *arrays)`: `dtype` and `meta` from tracing `f` on the first blocks' shapes (Dask would call `f` on
  empty arrays to guess them: a compile for shape (0, 0)); blocks come back as NumPy arrays, which Dask's own
  chunk functions (sum, concatenate) handle without stagec compiling its eager kernels on the workers.
- `tree_reduce(fn, items)`: a pairwise tree over Dask delayed values of any pytree (gradients), for data-parallel
  steps.
- `stats()`: this process's compile counters, for `client.run(stagec.dask.stats)`.

Dask is optional: `pip install "stagec[dask]"`.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

import numpy as np

from .compat import eval_shape
from .jit import Jitted, jit

_INSTALL = ('stagec.dask needs Dask and its distributed scheduler: pip install "stagec[dask]" '
            '(dask[distributed], cloudpickle)')


def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError as e:
        raise ImportError(f"{_INSTALL} ({e})") from None
    return dask, da


class _Blocks:
    """`f` on blocks, its result as a NumPy array (picklable: Dask ships it to the workers)."""

    def __init__(self, f: Jitted):
        self.f = f

    def __call__(self, *blocks, **kwargs):
        out = self.f(*blocks, **kwargs)
        if isinstance(out, (tuple, list, dict)):
            raise TypeError(f"stagec.dask.map_blocks: {self.f!r} returned a {type(out).__name__}; a block function "
                            f"returns one array")
        return np.asarray(out)

    def __repr__(self):
        return f"blocks of {self.f!r}"


def map_blocks(f: Callable, *arrays, chunks=None, **kwargs):
    """`dask.array.map_blocks(jit(f), *arrays, ...)` with `dtype` and `meta` from tracing `f` (nothing compiles on
    the client) and NumPy blocks out. A function changing the block shape needs `chunks=` (checked against the
    traced shape of the first block); other keywords go to Dask."""
    _, da = _dask()
    f = f if isinstance(f, Jitted) else jit(f)
    if "dtype" in kwargs or "meta" in kwargs:
        raise TypeError("stagec.dask.map_blocks computes dtype and meta by tracing; use dask.array.map_blocks to "
                        "give your own")
    firsts = [np.empty(tuple(c[0] for c in a.chunks), a.dtype) if isinstance(a, da.Array) else a for a in arrays]
    out = eval_shape(f.fun, *firsts)
    if not hasattr(out, "shape"):
        raise TypeError(f"stagec.dask.map_blocks: {f!r} returns {type(out).__name__}, not one array")
    first = next((b.shape for b, a in zip(firsts, arrays) if isinstance(a, da.Array)), None)
    want = tuple(c[0] for c in chunks) if chunks is not None and all(isinstance(c, tuple) for c in chunks) else (
        tuple(chunks) if chunks is not None else first)
    if want != out.shape:
        raise ValueError(f"stagec.dask.map_blocks: {f!r} returns shape {out.shape} for a first block of shape "
                         f"{first}, but the output chunks say {want}: pass chunks= (with drop_axis/new_axis where "
                         f"the rank changes) matching what the function returns")
    if chunks is not None:
        kwargs["chunks"] = chunks
    return da.map_blocks(_Blocks(f), *arrays, dtype=out.dtype, meta=np.empty((0,) * len(out.shape), out.dtype),
                         **kwargs)


def tree_reduce(fn: Callable[[Any, Any], Any], items: Sequence, split_every: int = 2):
    """One Dask delayed value: `fn` (a binary function, such as adding two gradient pytrees) applied pairwise in a
    tree of depth log(len(items)) over `items` (delayed values), so no worker receives them all."""
    dask, _ = _dask()
    if not items:
        raise ValueError("tree_reduce of no items")
    level = list(items)
    combine = dask.delayed(_fold, pure=True)
    while len(level) > 1:
        level = [combine(fn, *level[i:i + split_every]) if len(level[i:i + split_every]) > 1 else level[i]
                 for i in range(0, len(level), split_every)]
    return level[0]


def _fold(fn, *xs):
    out = xs[0]
    for x in xs[1:]:
        out = fn(out, x)
    return out


def stats() -> dict:
    """This process's counters: jit traces and compiles (a compile found in the persistent cache counts too),
    signatures that arrived compiled in a pickled function ("shipped"), IREE compiles, eager kernels compiled."""
    jit_stats = sys.modules["stagec.jit"].stats
    from . import eager, stages
    return {"traces": jit_stats["traces"], "compiles": jit_stats["compiles"], "shipped": jit_stats["shipped"],
            "iree_compiles": stages.stats["iree_compiles"], "eager_compiles": eager.stats["compiles"]}
