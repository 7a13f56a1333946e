"""`jit`: trace once per signature, lower to StableHLO, run our passes, compile with IREE, cache.

Each function keeps its signatures in a least-recently-used cache of `config.jit_cache_size` entries;
threads calling one new signature at once trace and compile it once (`stages.build_once`). By default a new
signature compiles before its first call returns, so every call gives the same bits. With `config.jit_tiering`
"auto" (opt-in) it starts on the quick tier (`stagec.quick`: the graph op by op, through compiled kernels and the
primitives' NumPy rules; results may differ in the last bits) while its fused module compiles on a bounded
background pool, then swapped in (`Signatures.swap`).

A signature (`Key`) is the pytree structure of the dynamic arguments, each leaf's (shape, dtype,
weak_type), the static arguments' values, the backend and the config flags. The compiled
functions live in a cache attached to the function object, so `jit(f)` built twice over the same
`f` shares them (as JAX does), while a new lambda or `functools.partial` starts afresh.
"""
from __future__ import annotations

import collections
import functools
import inspect
import os
import threading
import uuid
import warnings
import weakref
from typing import Any, Callable, NamedTuple

import numpy as np

from . import quick, tree_util
from .aot import invalid_argument
from .array import Array
from .backend import Backend, get_backend
from .config import config
from .core import Graph, Trace, _stack, aval_of, flatten_outputs, tracing, tracing_anywhere
from .runner import Runner
from .stages import Lowered, build_once

_LEAF_TYPES = (Array, np.ndarray, int, float, bool, complex)


class Key(NamedTuple):
    """A jit signature: what a function's compiled module is cached under."""
    tree: tree_util.PyTreeDef  # structure of (dynamic args, dynamic kwargs)
    avals: tuple  # each dynamic leaf's ShapedArray
    statics: tuple  # ("#", position, value, type) and ("=", name, value, type), sorted
    backend: str | None  # the jit's backend= (None: the default, which config holds)
    config: tuple  # config.key()


def _fun_desc(fun: Callable) -> str:
    name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or repr(fun)
    code = getattr(inspect.unwrap(fun), "__code__", None) if not isinstance(fun, functools.partial) else \
        getattr(fun.func, "__code__", None)
    return f"{name} at {code.co_filename}:{code.co_firstlineno}" if code else name


def _fun_name(fun: Callable) -> str:
    f = fun.func if isinstance(fun, functools.partial) else fun
    return getattr(f, "__name__", "fun").replace("<", "").replace(">", "")


# ---------------------------------------------------------------- jit

# fun -> {options -> OrderedDict{Key -> Runner}} (least recently used first); weak on the function, as JAX's.
_caches: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
_strong_caches: dict = {}  # the same for callables that cannot be weakly referenced (kept alive; bounded)
MAX_STRONG = 256
stats = {"traces": 0, "compiles": 0, "shipped": 0}  # (the quick tier counts its own: `quick.stats`)
_trace_observer: Callable | None = None


def set_trace_observer(fn: Callable | None) -> None:
    """Register `fn(jitted, key, labels)`, called before each trace for a new signature; `labels()` names the
    dynamic leaves. `stagec.explain` registers itself (to say why a function traces again); jit never imports it."""
    global _trace_observer
    _trace_observer = fn


def clear_cache() -> None:
    """Forget every traced and compiled signature of every jitted function."""
    for per_fun in [*_caches.values(), *_strong_caches.values()]:
        for runners in per_fun.values():
            runners.clear()  # Jitted objects hold these dicts: empty them rather than drop them
    _loaded.clear()
    _arrived.clear()


_evicting = threading.Lock()  # held to evict a signature, and to swap a tiered one for its fused runner


class Signatures(collections.OrderedDict):
    """A function's compiled signatures, least recently used first; `last` remembers the last hot-path call's
    (avals, config key, runner), and `last_tree` the last call's with pytree arguments (structure, avals, config
    key, runner, `_leaf_getter`, the leaves' `_host_spec`s or None where all are Arrays), checked by identity before
    any key is built. Any change forgets them. `artifacts` holds the compiled artifact of each signature that has
    one (what a pickled `Jitted` ships; its module bytes are the loaded executable's own)."""

    last = last_tree = None
    ship_id: str | None = None  # names these signatures in pickles (`Jitted.__reduce__`), made on the first

    def __init__(self):
        super().__init__()
        self.artifacts: dict = {}

    def __setitem__(self, key, value):
        self.last = self.last_tree = None
        super().__setitem__(key, value)

    def __delitem__(self, key):
        self.last = self.last_tree = None
        super().__delitem__(key)
        self.artifacts.pop(key, None)

    def popitem(self, last: bool = True):
        self.last = self.last_tree = None
        key, value = super().popitem(last)
        self.artifacts.pop(key, None)
        return key, value

    def clear(self):
        self.last = self.last_tree = None
        super().clear()
        self.artifacts.clear()

    def drop(self, key, runner) -> None:
        """Forget `key` if `runner` still runs it (a quick-tier runner whose fused compile failed)."""
        with _evicting:
            if self.get(key) is runner:
                del self[key]

    def swap(self, key, runner, compiled) -> bool:
        """`compiled` (a `Compiled`: the fused module of a quick-tier `runner`) runs `key` from now on, unless
        `runner` was dropped meanwhile (it would grow the cache past its bound); True if swapped in."""
        stats["compiles"] += 1
        with _evicting:
            if self.get(key) is not runner:
                return False
            self[key] = compiled.runner
            self.artifacts[key] = compiled.artifact
            return True


def _cache_for(fun, options) -> dict:
    try:
        per_fun = _caches.setdefault(fun, {})
    except TypeError:
        try:
            per_fun = _strong_caches.setdefault(fun, {})
        except TypeError:  # unhashable too: a cache of this Jitted's own
            per_fun = {}
        if len(_strong_caches) > MAX_STRONG:
            del _strong_caches[next(iter(_strong_caches))]
    return per_fun.setdefault(options, Signatures())


# A Jitted's own attributes, never copied from the function it wraps (see `Jitted.__init__`).
_OWN = frozenset({"fun", "backend", "passes", "_sig", "_params", "static_argnums", "static_argnames", "donate_argnums",
                  "donate_argnames", "keep_unused", "_positional", "_simple", "_cache", "__wrapped__"})


class Jitted:
    """The callable `stagec.jit(f)` returns."""

    def __init__(self, fun: Callable, *, static_argnums=None, static_argnames=None, donate_argnums=None,
                 donate_argnames=None, keep_unused: bool = False, backend: str | None = None, passes=None):
        if not callable(fun):
            raise TypeError(f"jit expects a callable, got {type(fun).__name__}")
        self.fun, self.backend, self.passes = fun, backend, passes
        try:
            self._sig = inspect.signature(fun)
        except (TypeError, ValueError):
            self._sig = None
        self._params = list(self._sig.parameters.values()) if self._sig else []
        nums = _as_tuple(static_argnums, "static_argnums")
        names = _as_tuple(static_argnames, "static_argnames")
        positional = [p.name for p in self._params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        has_varargs = any(p.kind == p.VAR_POSITIONAL for p in self._params)
        fname = _fun_name(fun)
        for n in nums:
            if self._sig is not None and not has_varargs and not -len(positional) <= n < len(positional):
                raise ValueError(f"jitted function {fname!r} has static_argnums={nums}, but it only accepts "
                                 f"{len(positional)} positional argument(s) ({', '.join(positional)})")
        nums = tuple(n % len(positional) if n < 0 and positional else n for n in nums)
        for n in names:
            if self._sig is not None and n not in self._sig.parameters and not any(
                    p.kind == p.VAR_KEYWORD for p in self._params):
                raise ValueError(f"jitted function {fname!r} has static_argnames={names}, but it has no parameter "
                                 f"named {n!r}; parameters: {list(self._sig.parameters)}")
            if self._sig is not None and n in self._sig.parameters and \
                    self._sig.parameters[n].kind == inspect.Parameter.POSITIONAL_ONLY:
                raise ValueError(f"jitted function {fname!r} has invalid argnames {{{n!r}}} in static_argnames: "
                                 f"these are positional-only (use static_argnums)")
        # As JAX does, each of static_argnums / static_argnames implies the other where the signature says so.
        self.static_argnums = tuple(sorted(set(nums) | {positional.index(n) for n in names if n in positional}))
        self.static_argnames = tuple(sorted(set(names) | {positional[i] for i in nums if i < len(positional)}))
        # donate_argnums / donate_argnames, each implying the other where the signature says so (as JAX's)
        d_nums = tuple(n % len(positional) if n < 0 and positional else n
                       for n in _as_tuple(donate_argnums, "donate_argnums"))
        d_names = _as_tuple(donate_argnames, "donate_argnames")
        self.donate_argnums = tuple(sorted(set(d_nums) | {positional.index(n) for n in d_names if n in positional}))
        self.donate_argnames = tuple(sorted(set(d_names) | {positional[i] for i in d_nums if i < len(positional)}))
        both = set(self.donate_argnames) & set(self.static_argnames)
        if both or set(self.donate_argnums) & set(self.static_argnums):
            raise ValueError(f"jitted function {fname!r}: static_argnums/static_argnames and donate_argnums/"
                             f"donate_argnames cannot intersect (argument(s) {sorted(both) or self.donate_argnums} "
                             f"in both); a static argument is not an array to donate")
        self.keep_unused = bool(keep_unused)  # (stagec keeps every argument: the module's signature is the call's)
        self._positional = positional
        self._simple = not self.static_argnums and not self.static_argnames
        options = (self.static_argnums, self.static_argnames, self.donate_argnums, self.donate_argnames, backend,
                   None if passes is None else tuple(passes) if not isinstance(passes, str) else passes)
        self._cache = _cache_for(fun, options)
        # `fun`'s name, docstring and attributes, set one by one: reading `self.__dict__` (as `update_wrapper`'s
        # default does) makes every attribute read slower after: 20-70 ns of a ~3.9 us call (in one process, two
        # functions, one with its __dict__ read). Never this Jitted's own state: `grad(jit(f))` (a `functools.wraps`
        # wrapper) carries the inner Jitted's `fun` and `_cache` in its __dict__, and `jit` of it would run `f`.
        functools.update_wrapper(self, fun, updated=())
        for name, value in getattr(fun, "__dict__", {}).items():
            if name not in _OWN:
                setattr(self, name, value)

    def backend_obj(self) -> Backend:
        return get_backend(self.backend)

    def _key(self, tree, avals: tuple, statics: tuple) -> tuple:
        """The signature key of a call, built here only: a plain tuple in `Key`'s field order, which hashes and
        compares as the `Key` the cache stores (made once per compile), so the hot path skips building a
        NamedTuple (~130 ns)."""
        return (tree, avals, statics, self.backend, config.key_now)  # (the config key has the default backend)

    # ---- signature
    def _split(self, args: tuple, kwargs: dict):
        """(dynamic args, dynamic kwargs, static values) from a call."""
        if self._simple:
            return args, kwargs, ()
        statics, dyn = [], []
        for i, a in enumerate(args):
            (statics if i in self.static_argnums else dyn).append(a)
        # A static value's type is in the key, as in JAX: 1, 1.0, True and np.int32(1) are equal and hash alike,
        # but a function may trace differently on each (`isinstance`, `/`), so one must not get another's module.
        statics = [("#", i, a, type(a))
                   for i, a in zip(self.static_argnums, [args[i] for i in self.static_argnums if i < len(args)])]
        dyn_kw = {}
        for k, v in kwargs.items():
            if k in self.static_argnames:
                statics.append(("=", k, v, type(v)))
            else:
                dyn_kw[k] = v
        statics.sort(key=lambda s: (s[0], str(s[1])))
        for _, where, v, _ in statics:
            try:
                hash(v)
            except TypeError:
                name = self._param_name(where) if isinstance(where, int) else where
                raise ValueError(f"Non-hashable static arguments are not supported: argument {name!r} of "
                                 f"{_fun_name(self.fun)}() has unhashable type {type(v).__name__} ({v!r:.60}). "
                                 f"Pass a tuple instead of a list, or make it a dynamic (array) argument.") from None
        dyn_args = tuple(a for i, a in enumerate(args) if i not in self.static_argnums)
        return dyn_args, dyn_kw, tuple(statics)

    def _param_name(self, i: int) -> str:
        if i < len(self._positional):
            return self._positional[i]
        return f"args[{i}]"

    def _signature(self, args, kwargs):
        dyn_args, dyn_kw, statics = self._split(args, kwargs)
        if not dyn_kw and all(type(a) in _LEAF_TYPES for a in dyn_args):
            leaves, tree = list(dyn_args), _flat_tree(len(dyn_args))
        else:
            leaves, tree = tree_util.tree_flatten((dyn_args, dyn_kw))
        try:
            avals = tuple(a.aval if type(a) is Array else aval_of(a) for a in leaves)
        except TypeError:
            raise invalid_argument(f"{_fun_name(self.fun)}()", self._labels(dyn_args, dyn_kw), leaves, _static_hint) \
                from None
        return self._key(tree, avals, statics), leaves, tree, dyn_args, dyn_kw

    def _labels(self, dyn_args, dyn_kw) -> list[str]:
        """A name for each dynamic leaf: the parameter name plus its path inside a pytree."""
        dyn_positions = [i for i in range(len(dyn_args) + len(self.static_argnums)) if i not in self.static_argnums]
        labels = []
        for pos, a in zip(dyn_positions, dyn_args):
            labels += [self._param_name(pos) + p for p in tree_util.leaf_paths(a)]
        for k in sorted(dyn_kw):
            labels += [k + p for p in tree_util.leaf_paths(dyn_kw[k])]
        return labels

    # ---- tracing
    def _trace(self, args, kwargs, dyn_args, dyn_kw, leaves) -> tuple[Graph, Any]:
        stats["traces"] += 1
        trace = Trace(_fun_desc(self.fun), "jit")
        labels = self._labels(dyn_args, dyn_kw)
        tracers = [trace.new_arg(aval_of(x), lbl) for x, lbl in zip(leaves, labels)]
        _, tree = tree_util.tree_flatten((dyn_args, dyn_kw))
        t_args, t_kw = tree_util.tree_unflatten(tree, tracers)
        it = iter(t_args)
        full_args = [a if i in self.static_argnums else next(it) for i, a in enumerate(args)]
        full_kw = {k: (v if k in self.static_argnames else t_kw[k]) for k, v in kwargs.items()}
        with tracing(trace):
            out = self.fun(*full_args, **full_kw)
        out_leaves, out_tree = flatten_outputs(out, _fun_name(self.fun))
        return trace.to_graph(out_leaves, f"jit_{_fun_name(self.fun)}"), out_tree

    def _donated(self, args, kwargs) -> tuple[int, ...]:
        """Flat positions of the donated leaves: those of `donate_argnums`, passed by position or by name."""
        if not self.donate_argnums and not self.donate_argnames:
            return ()
        out, offset = [], 0
        for pos in range(len(args)):
            if pos in self.static_argnums:
                continue
            n = len(tree_util.tree_leaves(args[pos]))
            if pos in self.donate_argnums:
                out += range(offset, offset + n)
            offset += n
        names = set(self.donate_argnames)
        for k in sorted(k for k in kwargs if k not in self.static_argnames):  # kwargs flatten in key order
            n = len(tree_util.tree_leaves(kwargs[k]))
            if k in names:
                out += range(offset, offset + n)
            offset += n
        return tuple(out)

    def eval_shape(self, *args, **kwargs) -> Any:
        """The output's `ShapeDtypeStruct`s (weak types kept) for these arguments, by tracing only (JAX's
        `jit(f).eval_shape`)."""
        return self.trace(*args, **kwargs).out_info

    def trace(self, *args, **kwargs) -> Traced:
        """Trace for these arguments (JAX's `jit(f).trace`): `.jaxpr`, `.out_info`, `.lower()`."""
        return Traced(self.lower(*args, **kwargs))

    def lower(self, *args, **kwargs) -> Lowered:
        """Trace and lower for these arguments, without compiling."""
        _, leaves, tree, dyn_args, dyn_kw = self._signature(args, kwargs)
        return self._lower(args, kwargs, leaves, tree, dyn_args, dyn_kw)

    def _lower(self, args, kwargs, leaves, tree, dyn_args, dyn_kw) -> Lowered:
        graph, out_tree = self._trace(args, kwargs, dyn_args, dyn_kw, leaves)
        return Lowered(graph, f"jit_{_fun_name(self.fun)}", tree, out_tree, self._donated(args, kwargs), self.passes,
                       self.backend_obj())

    def _compile(self, key: tuple, args, kwargs, leaves, tree, dyn_args, dyn_kw) -> Runner:
        """Trace, lower and compile a new signature, once across threads."""
        cache = self._cache

        def build() -> Runner | quick.Tiered:
            k = Key(*key)
            if _trace_observer is not None:
                _trace_observer(self, k, lambda: self._labels(dyn_args, dyn_kw))
            lowered = self._lower(args, kwargs, leaves, tree, dyn_args, dyn_kw)
            runner = quick.start(lowered, cache, k)
            tiered = runner is not None
            if not tiered:
                compiled = lowered.compile()
                runner = compiled.runner
                stats["compiles"] += 1
                _warn_unusable_donations(runner)
            with _evicting:
                while len(cache) >= max(config.jit_cache_size, 1):
                    cache.popitem(last=False)
                cache[k] = runner
                if not tiered:
                    cache.artifacts[k] = compiled.artifact
            return runner
        return build_once((id(cache), key), lambda: cache.get(key), build)

    def __call__(self, *args, **kwargs):
        if tracing_anywhere[0] and _stack() or config.jit_disabled:  # inlined while tracing another function
            return self.fun(*args, **kwargs)
        if self._simple:  # hot path: no static arguments
            cache = self._cache
            if not kwargs:  # positional stagec Arrays only
                last = cache.last
                if last is not None and last[1] is config.key_now and len(args) == len(last[0]):
                    # the last signature again, the same aval objects (as a loop's own results have): no key to build
                    # and hash (one argument, the commonest, without the loop: ~0.2 us of a ~7 us call)
                    if len(args) == 1:
                        try:
                            if args[0].aval is last[0][0]:
                                return last[2](args)
                        except AttributeError:  # (not an Array: a NumPy value, a scalar)
                            pass
                    else:
                        for a, v in zip(args, last[0]):
                            if getattr(a, "aval", None) is not v:
                                break
                        else:
                            return last[2](args)
            last = cache.last_tree
            if last is not None and last[2] is config.key_now:
                # pytree arguments (a model's parameters) of the last such call's structure and avals: their
                # leaves without building a structure and key to hash (a third to a half of such a call's time
                # to its runner; before the flat key below, whose AttributeError on a list costs ~1 us)
                leaves = last[4]((args, kwargs))
                if leaves is not None:  # (as many as the avals: the same structure)
                    if last[5] is None:
                        for a, v in zip(leaves, last[1]):
                            av = getattr(a, "aval", None)
                            if av is not v and av != v:  # (equal avals: a fresh `device_put` of a batch)
                                break
                        else:
                            return last[3](leaves)
                    elif _same_leaves(leaves, last[1], last[5]):
                        return last[3](leaves)
            if not kwargs:
                try:
                    avals = tuple([a.aval for a in args])
                    key = self._key(_flat_tree(len(args)), avals, ())
                except AttributeError:
                    key = None
                runner = cache.get(key) if key is not None else None
                if runner is not None:
                    if len(cache) > 1:  # (a lone signature is in LRU order already: most functions have one)
                        self._used(key)
                    cache.last = (avals, key[4], runner)
                    return runner(args)
        key, leaves, tree, dyn_args, dyn_kw = self._signature(args, kwargs)
        runner = self._cache.get(key)
        if runner is None:
            runner = self._compile(key, args, kwargs, leaves, tree, dyn_args, dyn_kw)
        else:
            if len(self._cache) > 1:
                self._used(key)
            if self._simple:
                specs = [_host_spec(a) for a in leaves]
                self._cache.last_tree = (None if False in specs else (
                    tree, key[1], key[4], runner, _leaf_getter(tree),
                    None if specs.count(None) == len(specs) else tuple(specs)))
        return runner(leaves)

    def _used(self, key: tuple) -> None:
        """Mark `key` most recently used (the cache is LRU); callers skip it for a lone signature, where a second
        hash and compare of the key would cost ~0.5 us of a ~10 us call."""
        try:
            self._cache.move_to_end(key)
        except KeyError:  # dropped by another thread meanwhile
            pass

    def _cache_size(self) -> int:
        """How many signatures this function has compiled (JAX's `_cache_size`)."""
        return len(self._cache)

    def __get__(self, obj, objtype=None):
        """Support `@jit` on methods: `obj.method` binds `obj` as the first argument."""
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self):
        return f"<stagec.jit of {_fun_desc(self.fun)}>"

    def __reduce__(self):
        """Pickled (with cloudpickle for lambdas and closures) as its function and options plus the compiled
        artifacts of its `SHIP` most recently used signatures: a process unpickling it where they run (`_ship_env`)
        calls those signatures without tracing or compiling (counted in `stats["shipped"]`)."""
        options = dict(static_argnums=self.static_argnums, static_argnames=self.static_argnames,
                       donate_argnums=self.donate_argnums, donate_argnames=self.donate_argnames,
                       keep_unused=self.keep_unused, backend=self.backend, passes=self.passes)
        with _evicting:
            keys = list(self._cache.artifacts)[-SHIP:]
            arts = [(k, self._cache.artifacts[k]) for k in keys]
        arts = [(k, a) for k, a in arts if not a.host_calls]  # (Python callbacks stay in this process)
        envs = {a.target: _ship_env(a.target) for _, a in arts}
        if self._cache.ship_id is None:
            self._cache.ship_id = uuid.uuid4().hex
        return _unpickle_jitted, (self.fun, options, [(k, a, envs[a.target]) for k, a in arts], self._cache.ship_id)


# ---------------------------------------------------------------- pickling

SHIP = 8  # signatures a pickled Jitted carries at most (its most recently used)
_loaded: "collections.OrderedDict[tuple, Runner]" = collections.OrderedDict()  # shipped modules loaded here
MAX_LOADED = 64
# ship_id -> the Jitted unpickled here for it: Dask unpickles a task's function for each task, and a lambda or
# closure pickled by value comes back as a new function each time; all of them are one function (one cache) here,
# as they were where they were pickled (whose trace had read the closure's values once too).
_arrived: "collections.OrderedDict[str, Jitted]" = collections.OrderedDict()
MAX_ARRIVED = 64
_arriving = threading.Lock()  # held while a pickled Jitted is installed (Dask workers may run several threads)


def _ship_env(target: str) -> tuple:
    """What a module compiled for `target` in this process assumes of where it runs: the versions, the compile
    side's source, the host CPU and the target's flags. A shipped module runs only where this is the same."""
    from .compiler.targets import IREE_TARGETS
    from .compiler.driver import source_digest
    from .compiler.targets import host_id
    from .aot import iree_runtime_version, stagec_version
    return (stagec_version(), iree_runtime_version(), source_digest(), host_id(), target,
            tuple(get_backend(IREE_TARGETS[target].backend).compile_flags()))


def _unpickle_jitted(fun: Callable, options: dict, shipped: list, ship_id: str) -> Jitted:
    """A pickled `Jitted`, its shipped signatures installed where they run here (others compile on first call)."""
    with _arriving:
        jitted = _arrived.get(ship_id)
        if jitted is None:
            jitted = _arrived[ship_id] = Jitted(fun, **options)
            if len(_arrived) > MAX_ARRIVED:
                _arrived.popitem(last=False)
        else:
            _arrived.move_to_end(ship_id)
        cache = jitted._cache
        for key, art, env in shipped:
            if key in cache or len(cache) >= max(config.jit_cache_size, 1):
                continue
            tag = (art.meta.get("key"), tuple(map(str, art.in_avals)), tuple(map(str, art.out_avals)), art.out_tree,
                   art.donated)
            runner = _loaded.get(tag)
            if runner is None:  # (one load per module per process, however often the function is unpickled)
                try:
                    if env != _ship_env(art.target):
                        continue
                    runner = art.runner()
                except Exception:  # (a target or driver this process lacks: the call compiles, or says why not)
                    continue
                _loaded[tag] = runner
                if len(_loaded) > MAX_LOADED:
                    _loaded.popitem(last=False)
            with _evicting:
                if key not in cache:
                    cache[key] = runner
                    cache.artifacts[key] = art
                    stats["shipped"] += 1
    return jitted


def _after_fork_in_child() -> None:
    """A forked child owns no compile thread and none of the parent's runtime (IREE's worker threads are not
    copied): forget the compiled signatures (`quick` forgets its queue); `backend` refuses to run (a clear error)."""
    global _evicting, _arriving
    _evicting, _arriving = threading.Lock(), threading.Lock()
    clear_cache()


os.register_at_fork(after_in_child=_after_fork_in_child)


class Traced:
    """`jit(f).trace(*args)`: the traced function before lowering, as JAX's `Traced` (stagec lowers as it traces,
    so `lower()` returns what was made)."""

    def __init__(self, lowered: Lowered):
        self._lowered = lowered

    @property
    def jaxpr(self):
        from .jaxpr import ClosedJaxpr
        return ClosedJaxpr(self._lowered.graph, self._lowered.out_tree)

    @property
    def out_info(self) -> Any:
        """The output's `ShapeDtypeStruct`s, weak types kept."""
        from .aot import ShapeDtypeStruct
        return tree_util.tree_unflatten(self._lowered.out_tree, [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
                                                                 for a in self._lowered.graph.out_avals])

    def lower(self) -> Lowered:
        return self._lowered


def _static_hint(label: str) -> str:
    return (f" Mark it static with static_argnames=[{label.split('[')[0].split('.')[0]!r}] or register its class "
            f"with stagec.tree_util.register_pytree_node.")


def _warn_unusable_donations(runner: Runner) -> None:
    if runner.unusable:
        warnings.warn(f"Some donated buffers were not usable: {', '.join(runner.unusable)}", UserWarning, stacklevel=6)


_flat_trees: dict[int, Any] = {}  # n -> the structure of n positional leaves, for n up to 64


_getters: dict = {}  # PyTreeDef -> its `_leaf_getter` (bounded)


def _leaf_getter(td: tree_util.PyTreeDef) -> Callable[[Any], list | None]:
    """`get(tree) -> leaves`, None where `tree` has not the structure `td`: straight-line code made once per
    structure (tuples, lists, str-keyed dicts, None; other nodes: `tree_util.leaves_like`). A model's parameter
    list of 8 leaves: ~4 us through `leaves_like`, ~1 us here. (A leaf position is not checked here: callers
    compare each leaf's aval, which a node has not.)"""
    get = _getters.get(td)
    if get is not None:
        return get
    conds: list[str] = []
    leaves: list[str] = []

    def walk(t, expr: str) -> bool:
        nt = t.node_type
        if nt is None:
            leaves.append(expr)
            return True
        if nt is tuple or nt is list:
            conds.append(f"type({expr}) is {nt.__name__} and len({expr}) == {len(t.kids)}")
            return all(walk(c, f"{expr}[{i}]") for i, c in enumerate(t.kids))
        if nt is dict and all(type(k) is str for k in t.aux):
            conds.append(f"type({expr}) is dict and len({expr}) == {len(t.aux)} and "
                         + " and ".join([f"{k!r} in {expr}" for k in t.aux] or ["True"]))
            return all(walk(c, f"{expr}[{k!r}]") for k, c in zip(t.aux, t.kids))
        if nt is type(None):
            conds.append(f"{expr} is None")
            return True
        return False
    if walk(td, "t") and len(conds) < 2000:
        src = f"def get(t):\n    if {' and '.join(conds) or 'True'}:\n        return [{', '.join(leaves)}]\n"
        scope: dict = {}
        exec(src, scope)
        get = scope["get"]
    else:
        get = functools.partial(_leaves_like, td=td)
    if len(_getters) >= 1024:
        _getters.clear()
    _getters[td] = get
    return get


def _host_spec(x) -> Any:
    """What a leaf that is not an Array is checked by on the hot path, as an Array is by the identity of its aval:
    a Python scalar's type, a NumPy value's (type, shape, dtype), which with the config decide its aval. None for an
    Array; False for anything else (not taken by the hot path). A step count or learning rate passed as a Python
    number, or a batch as a NumPy array, sent every call of a training loop through the full signature (a 6-layer
    Adam step with a float `t`: +35 us a call)."""
    t = type(x)
    if t is Array:
        return None
    if t is float or t is int or t is bool or t is complex:
        return t
    if t is np.ndarray or isinstance(x, np.generic):
        return (t, x.shape, x.dtype)
    return False


def _same_leaves(leaves: list, avals: tuple, specs: tuple) -> bool:
    """Whether `leaves` have the signature of the last call's leaves, of these avals and `_host_spec`s."""
    for a, v, s in zip(leaves, avals, specs):
        if s is None:
            av = getattr(a, "aval", None)
            if av is not v and av != v:
                return False
        elif type(s) is tuple:
            if type(a) is not s[0] or a.shape != s[1] or a.dtype != s[2]:
                return False
        elif type(a) is not s:
            return False
    return True


def _leaves_like(tree, td):
    return tree_util.leaves_like(tree, td)


def _flat_tree(n: int):
    t = _flat_trees.get(n)
    if t is None:
        t = tree_util.tree_structure((tuple(range(n)), {}))
        if n <= 64:
            _flat_trees[n] = t
    return t


def _as_tuple(x, what: str) -> tuple:
    if x is None:
        return ()
    if isinstance(x, (int, str)):
        return (x,)
    try:
        return tuple(x)
    except TypeError:
        raise TypeError(f"{what} must be an int/str or a sequence of them, got {x!r}") from None


_NO_FUN = object()  # (`jit(static_argnames=...)` as a decorator; `jit(None)` is an error, as JAX's)


def jit(fun: Callable = _NO_FUN, *, static_argnums=None, static_argnames=None, donate_argnums=None,
        donate_argnames=None, keep_unused: bool = False, inline: bool = False, backend: str | None = None,
        passes=None):
    """Compile `fun` with IREE on first call for each new signature; later calls reuse the module.

    Usable as `jit(f)`, `@jit`, or `functools.partial(jit, static_argnames=[...])` as a decorator. `keep_unused`
    and `inline` are accepted for JAX's signature: stagec keeps every argument, and inlines a jitted function
    called inside another's trace.
    """
    if fun is _NO_FUN:
        return functools.partial(jit, static_argnums=static_argnums, static_argnames=static_argnames,
                                 donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                                 keep_unused=keep_unused, inline=inline, backend=backend, passes=passes)
    return Jitted(fun, static_argnums=static_argnums, static_argnames=static_argnames,
                  donate_argnums=donate_argnums, donate_argnames=donate_argnames, keep_unused=keep_unused,
                  backend=backend, passes=passes)


def make_mlir(fun: Callable, *, static_argnums=None, static_argnames=None, backend=None, passes=None,
              stage: str = "stablehlo", html: str | None = None):
    """`make_mlir(f)(*args)`: the StableHLO of `f`, like `jax.make_jaxpr` (a `str`): by default after stagec's
    StableHLO passes (stage "stablehlo"). `stage=` picks another (see `stagec.stages`): "traced", a pass name,
    or "final" for what IREE receives. `html=path` also writes the explorer page of every stage there."""
    def wrapped(*args, **kwargs):
        lowered = Jitted(fun, static_argnums=static_argnums, static_argnames=static_argnames,
                         backend=backend, passes=passes).lower(*args, **kwargs)
        if html is not None:
            lowered.html(html)
        return _Text(lowered.as_text(stage), lowered)
    return wrapped


class _Text(str):
    """The StableHLO text of a lowered function (a `str`), keeping the `Lowered` at `.lowered`."""

    def __new__(cls, text: str, lowered: Lowered):
        s = super().__new__(cls, text)
        s.lowered = lowered
        return s
