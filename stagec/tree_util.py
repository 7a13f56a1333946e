"""Pytrees: nested containers whose leaves are arrays. Mirrors `jax.tree_util`."""
from __future__ import annotations

import collections
import dataclasses
from typing import Any, Callable, Iterable, NamedTuple


class _Node(NamedTuple):
    flatten: Callable[[Any], tuple[Iterable, Any]]
    unflatten: Callable[[Any, Iterable], Any]


_registry: dict[type, _Node] = {}
_key_fns: dict[type, Callable[[Any], list]] = {}  # a node type's key per child (`tree_flatten_with_path`)


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable) -> None:
    """Register `nodetype`: `flatten_func(x) -> (children, aux)`, `unflatten_func(aux, children) -> x`."""
    if nodetype in _registry:
        raise ValueError(f"{nodetype.__name__} is already registered as a pytree node")
    _registry[nodetype] = _Node(flatten_func, unflatten_func)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: use the class's `tree_flatten` method and `tree_unflatten` classmethod."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(cls: type, data_fields: list[str] | None = None, meta_fields: list[str] | None = None) -> type:
    """Register a dataclass: `data_fields` are children, `meta_fields` are static (hashed) metadata."""
    if data_fields is None:
        fields = [f for f in dataclasses.fields(cls) if f.init]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    meta_fields = list(meta_fields or [])

    def flatten(x):
        return [getattr(x, n) for n in data_fields], tuple(getattr(x, n) for n in meta_fields)

    def unflatten(meta, children):
        return cls(**dict(zip(data_fields, children)), **dict(zip(meta_fields, meta)))

    register_pytree_node(cls, flatten, unflatten)
    _key_fns[cls] = lambda x: [GetAttrKey(n) for n in data_fields]
    return cls


register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c))
register_pytree_node(list, lambda t: (t, None), lambda _, c: list(c))
def _sorted_keys(d: dict) -> list:
    try:
        return sorted(d)
    except TypeError as e:  # (JAX's error, ValueError; the comparison's TypeError is its cause)
        raise ValueError("Comparator raised exception while sorting pytree dictionary keys.") from e


def _flatten_dict(d: dict):
    keys = _sorted_keys(d)
    return [d[k] for k in keys], tuple(keys)


register_pytree_node(dict, _flatten_dict, lambda keys, c: dict(zip(keys, c)))
register_pytree_node(collections.OrderedDict, lambda d: (list(d.values()), tuple(d)),
                     lambda keys, c: collections.OrderedDict(zip(keys, c)))
register_pytree_node(type(None), lambda _: ((), None), lambda _, c: None)
# (as JAX: a defaultdict's keys sorted, its default_factory in the structure)
register_pytree_node(collections.defaultdict,
                     lambda d: ((flat := _flatten_dict(d))[0], (d.default_factory, flat[1])),
                     lambda aux, c: collections.defaultdict(aux[0], zip(aux[1], c)))


def _node_for(x) -> _Node | None:
    node = _registry.get(type(x))
    if node is None and isinstance(x, tuple) and hasattr(x, "_fields"):  # namedtuple
        t = type(x)
        return _Node(lambda v: (tuple(v), None), lambda _, c, t=t: t(*c))
    return node


class PyTreeDef:
    """The structure of a pytree: hashable and comparable, as cache keys need."""

    __slots__ = ("node_type", "aux", "kids", "num_leaves", "_hash")

    def __init__(self, node_type, aux, children: tuple):
        self.node_type, self.aux, self.kids = node_type, aux, children
        n, hashes = (1 if node_type is None else 0), []
        for c in children:  # (a loop over the children's fields: this runs for every node of every jit call's args)
            n += c.num_leaves
            hashes.append(c._hash)
        self.num_leaves = n
        self._hash = hash((node_type, aux if aux is None else _hashable(aux), tuple(hashes)))

    def __hash__(self):
        return self._hash

    def __reduce__(self):  # (rebuilt, not copied: the hash of a type differs between processes)
        return PyTreeDef, (self.node_type, self.aux, self.kids)

    def __eq__(self, other):
        return self is other or (isinstance(other, PyTreeDef) and self._hash == other._hash
                                 and self.node_type == other.node_type and self.aux == other.aux
                                 and self.kids == other.kids)

    def __repr__(self):
        return f"PyTreeDef({self._str()})"

    def _str(self) -> str:
        if self.node_type is None:
            return "*"
        inner = ", ".join(c._str() for c in self.kids)
        if self.node_type is tuple:
            return f"({inner}{',' if len(self.kids) == 1 else ''})"
        if self.node_type is list:
            return f"[{inner}]"
        if self.node_type is dict:
            return "{" + ", ".join(f"{k!r}: {c._str()}" for k, c in zip(self.aux, self.kids)) + "}"
        if self.node_type is type(None):
            return "None"
        if issubclass(self.node_type, tuple) and hasattr(self.node_type, "_fields"):  # (JAX's spelling)
            return f"CustomNode(namedtuple[{self.node_type.__name__}], [{inner}])"
        return f"CustomNode({self.node_type.__name__}[{self.aux!r}], [{inner}])"

    def unflatten(self, leaves: Iterable) -> Any:
        return tree_unflatten(self, leaves)

    def children(self) -> list[PyTreeDef]:
        """The structures of this node's children (a method, as JAX's)."""
        return list(self.kids)

    def node_data(self):
        """(node type, its auxiliary data) of this node; None for a leaf (JAX's `PyTreeDef.node_data`)."""
        return None if self.node_type is None else (self.node_type, self.aux)

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """This structure with `inner` in place of each of its leaves (JAX's `PyTreeDef.compose`)."""
        if self.node_type is None:
            return inner
        return PyTreeDef(self.node_type, self.aux, tuple(c.compose(inner) for c in self.kids))


def _hashable(aux):
    """Auxiliary data as something hashable (the FAQ's classes use dicts); equality still uses `==`."""
    try:
        hash(aux)
        return aux
    except TypeError:
        if isinstance(aux, dict):
            return tuple((k, _hashable(v)) for k, v in sorted(aux.items(), key=lambda kv: repr(kv[0])))
        if isinstance(aux, (list, tuple)):
            return tuple(_hashable(v) for v in aux)
        if isinstance(aux, set):
            return frozenset(_hashable(v) for v in aux)
        return type(aux).__qualname__


_LEAF = PyTreeDef(None, None, ())


def _flatten(x, leaves: list, is_leaf) -> PyTreeDef:
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF
    nt = type(x)
    if nt is tuple or nt is list:  # (the commonest nodes, without their registered flatten: a jit call's args)
        children, aux = x, None
    else:
        node = _node_for(x)
        if node is None:
            leaves.append(x)
            return _LEAF
        children, aux = node.flatten(x)
    kids = []
    for c in children:  # a leaf child without a call (an array: no registered type, not a tuple)
        if is_leaf is None and type(c) not in _registry and not isinstance(c, tuple):
            leaves.append(c)
            kids.append(_LEAF)
        else:
            kids.append(_flatten(c, leaves, is_leaf))
    return PyTreeDef(nt, aux, tuple(kids))


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, PyTreeDef]:
    """Leaves in order, and the structure to rebuild the tree with `tree_unflatten`."""
    leaves: list = []
    return leaves, _flatten(tree, leaves, is_leaf)


def leaves_like(tree: Any, treedef: PyTreeDef) -> list | None:
    """The leaves of `tree` if it has the structure `treedef` (tuples, lists, dicts and None as nodes), else None
    (also for other node types): cheaper than flattening it and comparing structures."""
    out: list = []
    return out if _like(tree, treedef, out) else None


def _like(x, td: PyTreeDef, out: list) -> bool:
    nt = td.node_type
    if nt is None:
        if type(x) in _registry or isinstance(x, tuple):  # (a node where the structure has a leaf)
            return False
        out.append(x)
        return True
    if type(x) is not nt:
        return False
    if nt is tuple or nt is list:
        children = x
    elif nt is dict:
        if len(x) != len(td.aux) or not all(k in x for k in td.aux):
            return False
        children = [x[k] for k in td.aux]
    else:
        return nt is type(None)
    if len(children) != len(td.kids):
        return False
    for c, t in zip(children, td.kids):
        if not _like(c, t, out):
            return False
    return True


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable) -> Any:
    it = iter(leaves)
    try:
        out = _unflatten(treedef, it)
    except StopIteration:
        raise ValueError(f"too few leaves for {treedef}") from None
    if next(it, _sentinel) is not _sentinel:
        raise ValueError(f"too many leaves for {treedef}")
    return out


_sentinel = object()


def _unflatten(td: PyTreeDef, it) -> Any:
    nt = td.node_type
    if nt is None:
        return next(it)
    # (a leaf child without a call, tuples and lists without their registered unflatten: every jit call's results)
    children = [next(it) if c.node_type is None else _unflatten(c, it) for c in td.kids]
    if nt is tuple:
        return tuple(children)
    if nt is list:
        return children
    node = _registry.get(nt)
    if node is None:  # namedtuple
        return nt(*children)
    return node.unflatten(td.aux, children)


def unflattener(treedef: PyTreeDef) -> Callable[[list], Any]:
    """`build(leaves)`: `tree_unflatten(treedef, leaves)` for a list of exactly `treedef.num_leaves` leaves, as one
    expression made once where the nodes are tuples, lists, str-keyed dicts and None (a jit call's results: a
    model's 6 parameters, ~1 us through `tree_unflatten`, ~0.3 here); others through `tree_unflatten`."""
    n = [0]

    def walk(t) -> str | None:
        nt = t.node_type
        if nt is None:
            n[0] += 1
            return f"o[{n[0] - 1}]"
        kids = [walk(c) for c in t.kids]
        if None in kids:
            return None
        if nt is tuple:
            return f"({', '.join(kids)}{',' if len(kids) == 1 else ''})"
        if nt is list:
            return f"[{', '.join(kids)}]"
        if nt is dict and all(type(k) is str for k in t.aux):
            return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(t.aux, kids)) + "}"
        return "None" if nt is type(None) else None
    try:  # (a structure nested past the parser's limit, ~200 brackets, or the recursion limit: the general path)
        expr = walk(treedef) if treedef.num_leaves <= 2000 else None
        if expr is not None:
            scope: dict = {}
            exec(f"def build(o):\n    return {expr}\n", scope)
            return scope["build"]
    except (SyntaxError, RecursionError, MemoryError):
        pass
    return lambda leaves: tree_unflatten(treedef, leaves)


def tree_leaves(tree: Any, is_leaf=None) -> list:
    """The leaves in order (without building the structure: ~3x cheaper than `tree_flatten`)."""
    out: list = []
    _leaves(tree, out, is_leaf)
    return out


def _leaves(x, out: list, is_leaf) -> None:
    if is_leaf is not None and is_leaf(x):
        out.append(x)
        return
    nt = type(x)
    if nt is tuple or nt is list:
        children = x
    else:
        node = _node_for(x)
        if node is None:
            out.append(x)
            return
        children = node.flatten(x)[0]
    for c in children:
        if is_leaf is None and type(c) not in _registry and not isinstance(c, tuple):
            out.append(c)
        else:
            _leaves(c, out, is_leaf)


def tree_structure(tree: Any, is_leaf=None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf=None) -> Any:
    """Apply `f` leafwise; each of `rest` has `tree`'s structure, or that structure as a prefix: `f` then gets the
    subtree of it at each leaf of `tree` (as JAX's)."""
    leaves, td = tree_flatten(tree, is_leaf)
    others = []
    for r in rest:
        rl, rtd = tree_flatten(r, is_leaf)
        if rtd != td:
            try:
                rl = _flatten_up_to(td, r)
            except ValueError as e:
                raise ValueError(f"tree_map: structures differ: {td} vs {rtd} ({e})") from None
        others.append(rl)
    return td.unflatten([f(*xs) for xs in zip(leaves, *others)])


def all_leaves(iterable: Iterable) -> bool:
    return all(tree_structure(x) == _LEAF for x in iterable)


def leaf_paths(tree: Any) -> list[str]:
    """A readable path for each leaf, in flattening order: `[0]`, `['w']`, `.x` ..."""
    out: list[str] = []

    def go(x, prefix):
        node = _node_for(x)
        if node is None:
            out.append(prefix)
            return
        children, aux = node.flatten(x)
        if isinstance(x, dict):
            keys = [f"[{k!r}]" for k in (sorted(x) if type(x) is dict else x)]
        elif isinstance(x, (tuple, list)):
            keys = [f".{f}" for f in x._fields] if hasattr(x, "_fields") else [f"[{i}]" for i in range(len(x))]
        else:
            keys = [f".<{i}>" for i in range(len(list(children)))]
            children, aux = node.flatten(x)
        for k, c in zip(keys, children):
            go(c, prefix + k)

    go(tree, "")
    return out


def tree_reduce(function: Callable, tree: Any, *initializer, is_leaf=None) -> Any:
    """`functools.reduce(function, leaves[, initializer])`."""
    import functools
    return functools.reduce(function, tree_leaves(tree, is_leaf), *initializer)


def tree_all(tree: Any, *, is_leaf=None) -> bool:
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: Any) -> Any:
    """A tree of outer structure whose leaves are trees of inner structure -> an inner tree of outer trees."""
    flat, td = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    n_in, n_out = inner_treedef.num_leaves, outer_treedef.num_leaves
    if td.num_leaves != n_in * n_out:
        raise TypeError(f"tree_transpose: {td} does not have {n_out} * {n_in} leaves")
    rows = [flat[i * n_in:(i + 1) * n_in] for i in range(n_out)]
    return tree_unflatten(inner_treedef, [tree_unflatten(outer_treedef, col) for col in zip(*rows)])


def _flatten_up_to(td: PyTreeDef, x) -> list:
    """The subtrees of `x` at the leaves of `td` (`x` has `td`'s structure down to them)."""
    if td.node_type is None:
        return [x]
    node = _node_for(x)
    if type(x) is not td.node_type or node is None:
        raise ValueError(f"expected a {td.node_type.__name__} node, got {type(x).__name__}")
    children, aux = node.flatten(x)
    children = list(children)
    if len(children) != len(td.kids):
        raise ValueError(f"expected {len(td.kids)} children, got {len(children)}")
    if aux != td.aux:  # (a dict's keys, a custom node's data)
        raise ValueError(f"expected a {td.node_type.__name__} node with {td.aux!r}, got one with {aux!r}")
    return [y for c, t in zip(children, td.kids) for y in _flatten_up_to(t, c)]


PyTreeDef.flatten_up_to = lambda self, x: _flatten_up_to(self, x)
PyTreeDef.num_nodes = property(lambda self: 1 + sum(c.num_nodes for c in self.kids))


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    return list(treedef.kids)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return treedef.node_type is None


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    return PyTreeDef(tuple, None, tuple(treedefs))


def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf=None) -> Any:
    """`prefix_tree` with each leaf repeated over the subtree of `full_tree` at its place."""
    leaves, td = tree_flatten(prefix_tree, is_leaf)
    subs = td.flatten_up_to(full_tree)
    return td.unflatten([tree_map(lambda _, v=v: v, s) for v, s in zip(leaves, subs)])


class Partial:
    """`functools.partial` that is a pytree (the bound arguments are its leaves; the function is static)."""

    def __init__(self, func: Callable, *args, **kwargs):
        if isinstance(func, Partial):
            args, kwargs, func = func.args + args, {**func.keywords, **kwargs}, func.func
        self.func, self.args, self.keywords = func, args, kwargs

    def __call__(self, *args, **kwargs):
        return self.func(*self.args, *args, **{**self.keywords, **kwargs})

    def __repr__(self):
        return f"Partial({self.func!r}, *{self.args!r}, **{self.keywords!r})"


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func), lambda f, c: Partial(f, *c[0], **c[1]))


def register_static(cls: type) -> type:
    """Register `cls` as a node with no children (its instances are static structure, hashed as aux data)."""
    register_pytree_node(cls, lambda x: ((), x), lambda x, _: x)
    return cls


# ---------------------------------------------------------------- key paths (as `jax.tree_util`)


class _Key:
    __slots__ = ()

    def __eq__(self, other):
        return type(self) is type(other) and self._v() == other._v()

    def __hash__(self):
        return hash((type(self), self._v()))

    def __repr__(self):
        return f"{type(self).__name__}({self._v()!r})"


class DictKey(_Key):
    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key

    _v = lambda self: self.key
    __str__ = lambda self: f"[{self.key!r}]"


class SequenceKey(_Key):
    __slots__ = ("idx",)

    def __init__(self, idx: int):
        self.idx = idx

    _v = lambda self: self.idx
    __str__ = lambda self: f"[{self.idx}]"


class GetAttrKey(_Key):
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    _v = lambda self: self.name
    __str__ = lambda self: f".{self.name}"


class FlattenedIndexKey(_Key):
    __slots__ = ("key",)

    def __init__(self, key: int):
        self.key = key

    _v = lambda self: self.key
    __str__ = lambda self: f"[<flat index {self.key}>]"


def keystr(keys: tuple, *, simple: bool = False, separator: str = "") -> str:
    """A path as text: `['w'][0].x` (with `simple`, the bare keys joined by `separator`)."""
    if simple:
        return separator.join(str(k._v()) for k in keys)
    return separator.join(map(str, keys))


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable, unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> None:
    """Register `nodetype` with `flatten_with_keys(x) -> ([(key, child), ...], aux)`."""
    def flat(x):
        kc, aux = flatten_with_keys(x)
        return [c for _, c in kc], aux
    register_pytree_node(nodetype, flatten_func or flat, unflatten_func)
    _key_fns[nodetype] = lambda x: [k for k, _ in flatten_with_keys(x)[0]]


def register_pytree_with_keys_class(cls: type) -> type:
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten)
    return cls


def _child_keys(x, children: list) -> list:
    t = type(x)
    if t in _key_fns:
        return _key_fns[t](x)
    if isinstance(x, dict):
        return [DictKey(k) for k in (sorted(x) if t is dict or t is collections.defaultdict else x)]
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return [GetAttrKey(f) for f in x._fields]
    if isinstance(x, (tuple, list)):
        return [SequenceKey(i) for i in range(len(x))]
    return [FlattenedIndexKey(i) for i in range(len(children))]


def _with_path(x, path: tuple, out: list, is_leaf) -> None:
    node = None if is_leaf is not None and is_leaf(x) else _node_for(x)
    if node is None:
        out.append((path, x))
        return
    children = list(node.flatten(x)[0])
    for k, c in zip(_child_keys(x, children), children):
        _with_path(c, path + (k,), out, is_leaf)


def tree_flatten_with_path(tree: Any, is_leaf=None) -> tuple[list[tuple[tuple, Any]], PyTreeDef]:
    """[(key path, leaf), ...] in flattening order, and the tree's structure."""
    out: list = []
    _with_path(tree, (), out, is_leaf)
    return out, tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree: Any, is_leaf=None) -> list[tuple[tuple, Any]]:
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f: Callable, tree: Any, *rest: Any, is_leaf=None) -> Any:
    """`f(path, leaf, *others)` leafwise."""
    pl, td = tree_flatten_with_path(tree, is_leaf)
    others = [td.flatten_up_to(r) for r in rest]
    return td.unflatten([f(p, x, *xs) for (p, x), *xs in zip(pl, *others)])


def is_tree_node(x) -> bool:
    """Whether `x` is a node (a registered container, tuple or namedtuple), not a leaf."""
    return _node_for(x) is not None


def flatten_one_level(tree: Any) -> tuple[list, Any]:
    """The children of the node `tree` and its metadata (ValueError for a leaf)."""
    node = _node_for(tree)
    if node is None:
        raise ValueError(f"flatten_one_level() called on a leaf: {tree!r}")
    children, aux = node.flatten(tree)
    return list(children), aux


def flatten_one_level_with_keys(tree: Any) -> tuple[list, Any]:
    children, aux = flatten_one_level(tree)
    return list(zip(_child_keys(tree, children), children)), aux


def tree_reduce_associative(operation: Callable, tree: Any, *, is_leaf=None) -> Any:
    """`operation` over the leaves as a balanced tree (for an associative operation)."""
    xs = tree_leaves(tree, is_leaf)
    if not xs:
        raise TypeError("tree_reduce_associative of a tree with no leaves")
    while len(xs) > 1:
        xs = [operation(xs[i], xs[i + 1]) if i + 1 < len(xs) else xs[i] for i in range(0, len(xs), 2)]
    return xs[0]


KeyEntry = Any
KeyPath = tuple


def __getattr__(name: str):
    if name == "default_registry":
        from ._missing import NotInStagec
        raise NotInStagec("stagec.tree_util.default_registry is not implemented in stagec: stagec has one registry; "
                          "register node types with register_pytree_node")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
