"""stagec: a staged compiler for numerical Python. Trace with `jit`, emit StableHLO, compile with IREE."""
from __future__ import annotations

import os as _os

# In a source tree stagec.passes is ../passes (pyproject's package-dir): taken from this tree, so that a checkout,
# worktree or export run from its root (a benchmark's `--before DIR`) uses its own passes, not an editable install's.
if not _os.path.isdir(_os.path.join(__path__[0], "passes")) and _os.path.isfile(
        _os.path.join(_os.path.dirname(__path__[0]), "passes", "__init__.py")):
    __path__.append(_os.path.dirname(__path__[0]))

from ._version import __version__
from . import _quiet, errors, tree_util
from .array import Array, block_until_ready, device_put, effects_barrier
from .config import config, default_matmul_precision, disable_jit
from .core import set_composite_runner as _set_composite_runner
from . import cache, composites, eager, jit as _jit_module, quick  # eager registers itself with core at import
from .jit import jit, make_mlir
from . import explain  # registers itself with jit and stages
from .aot import ShapeDtypeStruct, load
from . import lax, nn, numpy  # noqa: E402  (after jit: numpy uses Array)
from . import debug, experimental  # noqa: E402
from .debug import pure_callback  # noqa: E402
from . import random  # noqa: E402
from .ad import (checkpoint, custom_jvp, custom_vjp, grad, hessian, jacfwd, jacrev, jvp, linearize, value_and_grad,  # noqa: E402
                 remat, vjp)

numpy._base.set_stager(jit)  # eager linalg/fft calls compile as one module each
_set_composite_runner(composites.call)  # eager composites (numpy's, lax.top_k) run their graph in one dispatch
from .batching import vmap  # noqa: E402
from . import scipy, test_util, tree  # noqa: E402
from .jaxpr import make_jaxpr  # noqa: E402
from .ad import float0  # noqa: E402
from .compat import (custom_gradient, device_count, device_get, eval_shape,  # noqa: E402
                     linear_transpose, local_device_count, local_devices, named_call, named_scope,
                     print_environment_info, process_count, process_index, typeof)

jacobian = jacrev  # JAX's alias


def wait_for_compiles(timeout: float | None = None) -> bool:
    """Wait for the modules compiling in the background: jit's fused modules (`config.jit_tiering`) and eager
    kernels (`config.eager_tiering`). True once all are ready; False if `timeout` seconds passed first."""
    import time
    deadline = None if timeout is None else time.monotonic() + timeout
    left = lambda: None if deadline is None else max(0.0, deadline - time.monotonic())
    return quick.wait_for_compiles(left()) & eager.wait_for_kernels(left())


_quiet.install()  # registered first, so it runs last among atexit handlers


def clear_caches() -> None:
    """Forget every traced and compiled function (jit and eager) and give their memory back to the system;
    the persistent cache stays."""
    import gc
    _jit_module.clear_cache()
    eager.clear_cache()
    composites.clear_cache()
    gc.collect()
    try:  # glibc keeps freed module memory in its arenas until asked
        import ctypes
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def devices(backend: str | None = None) -> list:
    """Devices of `backend` (default: the default backend), e.g. `[CpuDevice(id=0)]`."""
    from .backend import get_backend
    return list(get_backend(backend).devices)


def default_backend() -> str:
    return config.default_backend


__all__ = ["Array", "ShapeDtypeStruct", "block_until_ready", "cache", "clear_caches", "config", "default_matmul_precision", "disable_jit",
           "checkpoint", "custom_jvp", "custom_vjp", "debug", "default_backend", "device_put", "devices",
           "effects_barrier", "errors", "experimental", "grad", "hessian", "jacfwd", "jacobian", "jacrev", "jit", "jvp",
           "lax", "linearize", "load", "make_jaxpr", "make_mlir", "numpy", "pure_callback", "random", "remat", "scipy",
           "test_util", "tree", "tree_util", "value_and_grad", "vjp", "vmap",
           "wait_for_compiles"]


def __getattr__(name: str):
    from ._missing import missing
    from .compat import MISSING
    return missing(__name__, MISSING)(name)
