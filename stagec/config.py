"""Global configuration: `stagec.config.update(name, value)`, seeded from STAGEC_* environment variables."""
from __future__ import annotations

import collections
import contextlib
import os
from typing import Any, Callable


def _env_flag(name: str, default: bool) -> bool:
    v = os.environ.get(name)
    if v is None:
        return default
    return v.strip().lower() not in ("0", "false", "no", "off", "")


class InvalidSetting(ValueError):
    """An environment variable's value a flag cannot take: raised, naming the variable, where the flag is read."""


def _env_int(name: str, default: int) -> int:
    v = os.environ.get(name)
    if v is None or not v.strip():
        return default
    try:
        return int(v)
    except ValueError:
        raise InvalidSetting(f"{name} takes a whole number, not {v!r}") from None


class Config:
    """Flags that change what is traced or compiled; every one is part of the jit cache key."""

    InvalidSetting = InvalidSetting

    _defaults: dict[str, Any] = {
        "enable_x64": lambda: _env_flag("STAGEC_ENABLE_X64", False),
        "default_backend": lambda: os.environ.get("STAGEC_BACKEND", "cpu"),
        "passes": lambda: os.environ.get("STAGEC_PASSES", "default"),  # see stagec.passes.resolve
        "persistent_cache": lambda: _env_flag("STAGEC_CACHE", True),
        "persistent_cache_max_size": lambda: os.environ.get("STAGEC_CACHE_MAX_SIZE", "2G"),
        "explain_cache_misses": lambda: _env_flag("STAGEC_EXPLAIN_CACHE_MISSES", False),
        # In-memory caches of loaded modules, least recently used dropped first (each module holds its code).
        "jit_cache_size": lambda: _env_int("STAGEC_JIT_CACHE_SIZE", 512),  # signatures per function
        "eager_cache_size": lambda: _env_int("STAGEC_EAGER_CACHE_SIZE", 1024),  # eager primitives
        # Precision of float32 products that name none (JAX's names; None: DEFAULT). See lax.Precision.
        "default_matmul_precision": lambda: os.environ.get("STAGEC_DEFAULT_MATMUL_PRECISION") or None,
        # CPU modules call NumPy: its BLAS for float32/float64 matrix-vector products (docs/blas.md's rule)
        # (passes.legalize.blas_dots), its sort for sorts of rows of at least passes.legalize.SORT_MIN_LENGTH (host_sorts);
        # off: IREE compiles them as every other op (an artifact IREE's own tools run).
        "cpu_blas": lambda: _env_flag("STAGEC_CPU_BLAS", True),
        # Worker threads of the CPU's local-task driver, read when it starts; 0: one per core this process may
        # run on (IREE's default, which follows the affinity mask: 2 here, 1 under `taskset -c 0`).
        "cpu_threads": lambda: _env_int("STAGEC_CPU_THREADS", 0),
        # iree-compile on one thread (`--mlir-disable-threading`); off: its thread pool, one thread per core. The
        # module is the same either way; one thread costs less CPU in all where the cores are busy anyway (several
        # processes compiling at once: a test suite's workers, a cluster's).
        "compile_single_threaded": lambda: _env_flag("STAGEC_COMPILE_SINGLE_THREADED", False),
        # Compiles go to iree-compile programs that stay (`compiler/serve.py`, one per set of flags; those that dump
        # files into a folder of their own, Vulkan's and CUDA's, still start one each): the CLI's module bytes,
        # without a process start and a context each (10-15% of a small compile's CPU). Off: a process each.
        "compile_server": lambda: _env_flag("STAGEC_COMPILE_SERVER", True),
        # MiB of freed CPU buffers kept for reuse (backend._buffer_cache_spec), read when a CPU driver starts; 0: none.
        "cpu_buffer_cache_mb": lambda: _env_int("STAGEC_CPU_BUFFER_CACHE_MB", 512),
        # MiB of freed heap memory the process keeps (glibc's malloc, backend._keep_heap), set when the first large CPU
        # module loads: large blocks come from the heap, not fresh mmaps. 0: glibc's defaults.
        "cpu_heap_keep_mb": lambda: _env_int("STAGEC_CPU_HEAP_KEEP_MB", 512),
        # Eager modules with dynamic dimensions, reused across lengths (stagec.eager); off: one per shape.
        "eager_polymorphic": lambda: _env_flag("STAGEC_EAGER_POLYMORPHIC", True),
        # "auto": costly calls return once enqueued (backend.ASYNC_WORK); "always"; "never" (synchronous)
        "async_dispatch": lambda: os.environ.get("STAGEC_ASYNC_DISPATCH", "auto"),
        # "never" (the default): a new jit signature compiles its fused module before its first call returns, so
        # every call gives the same bits. "auto": it runs op by op first (compiled kernels, NumPy rules) while the
        # fused module compiles in the background (stagec.quick.Tiered): faster first calls that MAY DIFFER FROM
        # LATER CALLS IN THE LAST BITS (and skip stagec's StableHLO passes); "kernels": only where every kernel is
        # compiled already (the same caveat).
        "jit_tiering": lambda: os.environ.get("STAGEC_JIT_TIERING", "never"),
        # "exact" (the default): an eager operation whose NumPy rule gives its kernel's bits (stagec.eager.EXACT)
        # computes with it while the kernel compiles in the background; one whose rule may differ (exp, sum, ...)
        # always computes with its NumPy rule on the CPU (decided per operation and dtype, never by timing), so an
        # operation's bits never change. "auto": any NumPy rule until the kernel compiles (bits may change once
        # it has); "never": every operation waits for its kernel.
        "eager_tiering": lambda: os.environ.get("STAGEC_EAGER_TIERING", "exact"),
        # `jit` calls run the Python function op by op, as `jax.disable_jit` (for debugging: print, float(x));
        # `stagec.disable_jit()` sets it for a `with` block.
        "disable_jit": lambda: _env_flag("STAGEC_DISABLE_JIT", False),
    }
    _choices = {"default_matmul_precision": (None, "default", "bfloat16", "fastest", "high", "tensorfloat32",
                                             "highest", "float32"),
                "async_dispatch": ("auto", "always", "never"), "jit_tiering": ("auto", "kernels", "never"),
                "eager_tiering": ("exact", "auto", "never")}
    # Flags that change where compiled code is kept or what is logged, never what is compiled.
    _not_in_key = frozenset({"persistent_cache", "persistent_cache_max_size", "explain_cache_misses",
                             "jit_cache_size", "eager_cache_size", "cpu_threads", "cpu_buffer_cache_mb", "cpu_heap_keep_mb",
                             "compile_single_threaded", "compile_server", "eager_polymorphic", "async_dispatch", "jit_tiering",
                             "eager_tiering", "disable_jit"})

    def __init__(self) -> None:
        self._values = {}
        for name, default in self._defaults.items():
            try:
                self._values[name] = self._checked(name, default(), "STAGEC_" + name.upper())
            except InvalidSetting as e:  # (raised where it is read: `import stagec` works, the CLI says it in a line)
                self._values[name] = e
        self._rekey()

    def _checked(self, name: str, value: Any, source: str) -> Any:
        """`value`, lower-cased where the option takes one of `_choices` (a ValueError naming `source` if not)."""
        choices = self._choices.get(name)
        if choices is None or value is None:
            return value
        if str(value).lower() not in choices:
            raise InvalidSetting(f"{source} takes one of {choices}, not {value!r}")
        return str(value).lower()

    def update(self, name: str, value: Any) -> None:
        """Set a flag, e.g. `stagec.config.update("enable_x64", True)`."""
        name = name.removeprefix("jax_").removeprefix("stagec_")
        if name not in self._values:
            raise AttributeError(f"unknown stagec config option {name!r}; options: {sorted(self._values)}")
        self._values[name] = self._checked(name, value, f"stagec config option {name!r}")
        self._rekey()

    def __getattr__(self, name: str) -> Any:
        try:
            # (not `self.__dict__`: reading it makes every attribute read slower after, `key_now` on each jit call)
            v = object.__getattribute__(self, "_values")[name.removeprefix("jax_")]
        except KeyError:
            raise AttributeError(name) from None
        if type(v) is InvalidSetting:
            raise v
        return v

    def _rekey(self) -> None:
        # `key_now`: an attribute, read on every jit call (a method call costs ~0.2 us of a ~8 us call)
        self.key_now = tuple(sorted((n, repr(v)) for n, v in self._values.items() if n not in self._not_in_key))
        self.jit_disabled = bool(self._values["disable_jit"])  # (an attribute: read on every jit call)
        for cache in list(_setting_caches):  # (what they hold was decided under the old settings)
            cache.clear()

    def key(self) -> tuple:
        """Hashable snapshot of every flag that changes what is compiled, for cache keys."""
        return self.key_now

    @property
    def x64_enabled(self) -> bool:
        return bool(self._values["enable_x64"])


_setting_caches: list = []  # the `SettingsCache`s, emptied by every `Config.update`


class _Emptied:
    """What `SettingsCache` and `LRUSettingsCache` share (mixed into a dict type)."""

    __slots__ = ()

    def _setup(self, bound: int | Callable[[], int], on_clear: Callable[[], None] | None) -> None:
        self._bound = bound if callable(bound) else (lambda: bound)
        self._on_clear = on_clear  # what else the owner drops with the entries
        _setting_caches.append(self)

    def put(self, key, value):
        """`self[key] = value` within the bound (`_full` makes room); returns `value`."""
        if key not in self and len(self) >= self._bound():
            self._full()
        self[key] = value
        return value

    def clear(self) -> None:
        super().clear()
        if self._on_clear is not None:
            self._on_clear()


class SettingsCache(_Emptied, dict):
    """A per-signature cache of what was decided under the current settings (eager plans, promotions, ...):
    emptied whenever a setting changes (`Config.update`), so a hit needs no check of `config.key_now`; `put` keeps
    it to `bound` entries (an int, or a function of the settings), emptying a full one. Made once per owner (module
    level): each is kept for the process."""

    __slots__ = ("_bound", "_on_clear")

    def __init__(self, bound: int | Callable[[], int], on_clear: Callable[[], None] | None = None) -> None:
        super().__init__()
        self._setup(bound, on_clear)

    def _full(self) -> None:
        self.clear()


class LRUSettingsCache(_Emptied, collections.OrderedDict):
    """A `SettingsCache` that drops its least recently used entry when full (the owner marks a hit with `touch`)."""

    __slots__ = ("_bound", "_on_clear")

    def touch(self, key) -> None:
        """Mark `key` most recently used; nothing if another thread dropped it meanwhile (made room, or a setting
        changed)."""
        try:
            self.move_to_end(key)
        except KeyError:
            pass

    def __init__(self, bound: int | Callable[[], int], on_clear: Callable[[], None] | None = None) -> None:
        super().__init__()
        self._setup(bound, on_clear)

    def _full(self) -> None:
        self.popitem(last=False)


config = Config()


@contextlib.contextmanager
def _setting(name: str, value: Any):
    """`config.update(name, value)` within a `with` block, the old value back after it."""
    old = getattr(config, name)
    config.update(name, value)
    try:
        yield
    finally:
        config.update(name, old)


def default_matmul_precision(precision: str | None):
    """Within the block, float32 products that name no precision use `precision` (as JAX's)."""
    return _setting("default_matmul_precision", precision)


def disable_jit(disable: bool = True):
    """Within the block, `jit` functions run their Python op by op (as `jax.disable_jit`): print and `float(x)`
    see values."""
    return _setting("disable_jit", disable)
