"""Top-level names of JAX's API whose meaning on stagec's single device is simple: device counts, `device_get`,
`eval_shape`, `named_scope`,
`linear_transpose`, `custom_gradient`."""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable

import numpy as np

from . import tree_util
from .ad import custom_vjp, vjp
from .aot import ShapeDtypeStruct
from .core import ShapedArray, aval_of



def device_count(backend: str | None = None) -> int:
    return 1


local_device_count = device_count


def process_count(backend: str | None = None) -> int:
    return 1


def process_index(backend: str | None = None) -> int:
    return 0


def local_devices(process_index: int | None = None, backend: str | None = None, host_id=None) -> list:
    from .backend import get_backend
    return list(get_backend(backend).devices)


def device_get(x: Any) -> Any:
    """Every array leaf of `x` as a NumPy array (other leaves unchanged)."""
    return tree_util.tree_map(lambda v: np.asarray(v) if hasattr(v, "aval") else v, x)


def typeof(x) -> ShapedArray:
    """The abstract value (shape, dtype, weak type) of an array or tracer."""
    return aval_of(x)


def eval_shape(fun: Callable, *args, **kwargs) -> Any:
    """The shapes and dtypes `fun(*args, **kwargs)` would return, as `ShapeDtypeStruct`s, by tracing only."""
    from .jaxpr import make_jaxpr
    return make_jaxpr(functools.partial(fun, **kwargs) if kwargs else fun, return_shape=True)(*args)[1]


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    return fun


@contextlib.contextmanager
def named_scope(name: str):
    """A no-op context (JAX names the operations inside in its profiles; stagec records source lines instead)."""
    yield


def linear_transpose(fun: Callable, *primals) -> Callable:
    """The transpose of the linear function `fun` at `primals`' shapes: a function of the output cotangent
    returning a tuple of input cotangents."""
    _, pullback = vjp(fun, *primals)
    return lambda ct: tuple(pullback(ct))


def custom_gradient(fun: Callable) -> Callable:
    """`fun(*args) -> (value, vjp_fn)` becomes a function with that value and gradient (JAX's `custom_gradient`)."""
    @custom_vjp
    def f(*args):
        return fun(*args)[0]

    def fwd(*args):
        value, vjp_fn = fun(*args)
        return value, args

    def bwd(args, ct):
        return tuple(fun(*args)[1](ct))

    f.defvjp(fwd, bwd)
    return functools.wraps(fun)(lambda *args: f(*args))


def print_environment_info(return_string: bool = False) -> str | None:
    import platform
    import sys
    from . import __version__
    try:
        import iree.compiler as ic
        iree = getattr(ic, "__version__", "installed")
    except ImportError:
        iree = "not installed"
    text = (f"stagec: {__version__}\niree-compiler: {iree}\nnumpy: {np.__version__}\n"
            f"python: {sys.version.split()[0]}\nplatform: {platform.platform()}\n")
    if return_string:
        return text
    print(text, end="")
    return None


__all__ = ["custom_gradient", "device_count", "device_get", "eval_shape",
           "linear_transpose", "local_device_count", "local_devices", "named_call", "named_scope",
           "print_environment_info", "process_count", "process_index", "typeof", "ShapeDtypeStruct"]


from ._missing import ONE_DEVICE, table  # noqa: E402

# Top-level JAX names stagec does not have (stagec/__init__.py's __getattr__ reads this).
MISSING = {
    **table("Device NamedSharding P Shard auto_pcast make_mesh set_mesh shard_map smap pmap reshard sharding "
            "distributed make_array_from_callback make_array_from_process_local_data "
            "make_array_from_single_device_arrays remove_size_one_mesh_axis_from_type process_indices host_count "
            "host_id host_ids default_device copy_to_host_async memory threefry_partitionable get_abstract_mesh get_mesh "
            "use_abstract_mesh", ONE_DEVICE),
    **table("Ref ref new_ref empty_ref free_ref freeze", "mutable array references are not implemented; thread "
                                                         "state through function arguments and results"),
    **table("allow_f16_reductions array_garbage_collection_guard check_tracer_leaks checking_leaks debug_infs "
            "debug_key_reuse debug_nans default_prng_impl enable_checks enable_custom_prng enable_x64 "
            "explain_cache_misses legacy_prng_key log_compiles numpy_dtype_promotion numpy_rank_promotion "
            "softmax_custom_jvp transfer_guard transfer_guard_device_to_device transfer_guard_device_to_host "
            "transfer_guard_host_to_device thread_guard no_execution no_tracing make_user_context "
            "jax2tf_associative_scan_reductions", "JAX's configuration switches are not stagec's: see stagec.config "
                                                 "(config.update('enable_x64', True), ...)"),
    **table("api_util custom_batching custom_derivatives dlpack export ffi image interpreters lib monitoring ops "
            "profiler typing version live_arrays checkpoint_policies closure_convert ds fwd_and_bwd "
            "ensure_compile_time_eval", "not implemented (a JAX module or tool stagec lacks)"),
    **table("CompilerEffortLevel Inline custom_remat", "not implemented (new in JAX 0.11; stagec.checkpoint is JAX's "
                                                       "remat)"),
}
