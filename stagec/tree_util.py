"""Pytrees: nested containers whose leaves are arrays. Mirrors `jax.tree_util`."""
from __future__ import annotations

import collections
import dataclasses
from typing import Any, Callable, Iterable, NamedTuple


class _Node(NamedTuple):
    flatten: Callable[[Any], tuple[Iterable, Any]]
    unflatten: Callable[[Any, Iterable], Any]


_registry: dict[type, _Node] = {}


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
    return cls


register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c))
register_pytree_node(list, lambda t: (t, None), lambda _, c: list(c))
register_pytree_node(dict, lambda d: ([d[k] for k in sorted(d)], tuple(sorted(d))),
                     lambda keys, c: dict(zip(keys, c)))
register_pytree_node(collections.OrderedDict, lambda d: (list(d.values()), tuple(d)),
                     lambda keys, c: collections.OrderedDict(zip(keys, c)))
register_pytree_node(type(None), lambda _: ((), None), lambda _, c: None)


def _node_for(x) -> _Node | None:
    node = _registry.get(type(x))
    if node is None and isinstance(x, tuple) and hasattr(x, "_fields"):  # namedtuple
        t = type(x)
        return _Node(lambda v: (tuple(v), None), lambda _, c, t=t: t(*c))
    return node


class PyTreeDef:
    """The structure of a pytree: hashable and comparable, as cache keys need."""

    __slots__ = ("node_type", "aux", "children", "num_leaves", "_hash")

    def __init__(self, node_type, aux, children: tuple):
        self.node_type, self.aux, self.children = node_type, aux, children
        n, hashes = (1 if node_type is None else 0), []
        for c in children:  # (a loop over the children's fields: this runs for every node of every jit call's args)
            n += c.num_leaves
            hashes.append(c._hash)
        self.num_leaves = n
        self._hash = hash((node_type, aux if aux is None else _hashable(aux), tuple(hashes)))

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        return self is other or (isinstance(other, PyTreeDef) and self._hash == other._hash
                                 and self.node_type == other.node_type and self.aux == other.aux
                                 and self.children == other.children)

    def __repr__(self):
        return f"PyTreeDef({self._str()})"

    def _str(self) -> str:
        if self.node_type is None:
            return "*"
        inner = ", ".join(c._str() for c in self.children)
        if self.node_type is tuple:
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.node_type is list:
            return f"[{inner}]"
        if self.node_type is dict:
            return "{" + ", ".join(f"{k!r}: {c._str()}" for k, c in zip(self.aux, self.children)) + "}"
        if self.node_type is type(None):
            return "None"
        return f"{self.node_type.__name__}[{self.aux!r}]({inner})"

    def unflatten(self, leaves: Iterable) -> Any:
        return tree_unflatten(self, leaves)


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
    if len(children) != len(td.children):
        return False
    for c, t in zip(children, td.children):
        if not _like(c, t, out):
            return False
    return True


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable) -> Any:
    it = iter(leaves)
    out = _unflatten(treedef, it)
    if next(it, _sentinel) is not _sentinel:
        raise ValueError(f"too many leaves for {treedef}")
    return out


_sentinel = object()


def _unflatten(td: PyTreeDef, it) -> Any:
    if td.node_type is None:
        leaf = next(it, _sentinel)
        if leaf is _sentinel:
            raise ValueError("too few leaves for the tree structure")
        return leaf
    children = [_unflatten(c, it) for c in td.children]
    node = _registry.get(td.node_type)
    if node is None:  # namedtuple
        return td.node_type(*children)
    return node.unflatten(td.aux, children)


def tree_leaves(tree: Any, is_leaf=None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf=None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf=None) -> Any:
    """Apply `f` leafwise; `rest` must have the same structure as `tree`."""
    leaves, td = tree_flatten(tree, is_leaf)
    others = []
    for r in rest:
        rl, rtd = tree_flatten(r, is_leaf)
        if rtd != td:
            raise ValueError(f"tree_map: structures differ: {td} vs {rtd}")
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
