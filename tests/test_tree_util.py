"""stagec.tree_util: flattening order, structures as cache keys, registration, and pytrees through jit."""
from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stagec
import stagec.numpy as snp
from stagec import tree_util as tu


def test_builtin_containers_flatten_in_order():
    Pt = collections.namedtuple("Pt", "x y")
    tree = {"b": [1, (2, None)], "a": Pt(3, 4), "c": collections.OrderedDict(z=5, y=6)}
    leaves, td = tu.tree_flatten(tree)
    assert leaves == [3, 4, 1, 2, 5, 6]  # dict keys sorted; OrderedDict keeps insertion order; None has no leaf
    assert tu.tree_unflatten(td, leaves) == tree
    assert tu.tree_leaves(tree) == leaves and tu.tree_structure(tree) == td
    assert tu.tree_map(lambda v: v * 10, tree)["a"] == Pt(30, 40)
    assert tu.tree_map(lambda a, b: a + b, [1, 2], [10, 20]) == [11, 22]
    with pytest.raises(ValueError, match="structures differ"):
        tu.tree_map(lambda a, b: a, [1, 2], (1, 2))


def test_flatten_paths_agree():
    """Lists and tuples (taken without their registered flatten) and leaf children (taken without a call) give
    the structure and leaves the general path gives (an `is_leaf` that holds nowhere takes it everywhere)."""
    Pt = collections.namedtuple("Pt", "x y")

    class Seq(list):  # an unregistered subclass: a leaf
        pass

    tree = ([np.float32(1), (2, None)], {"k": Pt(3, [4])}, Seq([5]), ())
    fast, general = tu.tree_flatten(tree), tu.tree_flatten(tree, is_leaf=lambda v: False)
    assert fast[0] == general[0] == [np.float32(1), 2, 3, 4, Seq([5])]
    assert fast[1] == general[1] and hash(fast[1]) == hash(general[1]) and fast[1].num_leaves == 5
    assert tu.tree_unflatten(fast[1], fast[0]) == tree
    leaves, td = tu.tree_flatten(tree, is_leaf=lambda v: isinstance(v, Pt))
    assert leaves[2] == Pt(3, [4]) and td.num_leaves == 4


def test_structures_compare_and_hash():
    assert tu.tree_structure({"a": 1, "b": 2}) == tu.tree_structure({"b": 0, "a": 0})
    assert tu.tree_structure([1, 2]) != tu.tree_structure((1, 2))
    assert hash(tu.tree_structure({"a": [1]})) == hash(tu.tree_structure({"a": [5]}))
    with pytest.raises(ValueError, match="too few leaves"):
        tu.tree_unflatten(tu.tree_structure([1, 2]), [1])


@tu.register_pytree_node_class
class Box:
    def __init__(self, value, label):
        self.value, self.label = value, label

    def tree_flatten(self):
        return (self.value,), self.label

    @classmethod
    def tree_unflatten(cls, label, children):
        return cls(*children, label)


@dataclasses.dataclass
class Params:
    w: object
    b: object
    name: str = dataclasses.field(default="layer", metadata={"static": True})


tu.register_dataclass(Params)


def test_registered_classes_go_through_jit():
    traces = []

    @stagec.jit
    def f(box, p):
        traces.append(1)
        return Box(box.value * p.w + p.b, box.label + "!"), p

    out, p = f(Box(snp.ones(2), "x"), Params(2.0, snp.zeros(2)))
    assert isinstance(out, Box) and out.label == "x!" and np.asarray(out.value).tolist() == [2.0, 2.0]
    assert isinstance(p, Params) and p.name == "layer"
    f(Box(snp.ones(2), "x"), Params(3.0, snp.zeros(2)))
    assert len(traces) == 1
    f(Box(snp.ones(2), "y"), Params(3.0, snp.zeros(2)))  # aux data is part of the key
    assert len(traces) == 2
    with pytest.raises(ValueError, match="already registered"):
        tu.register_pytree_node(Box, lambda b: ((), None), lambda a, c: None)


_trees = st.recursive(st.integers(0, 9) | st.none(),
                      lambda kids: st.lists(kids, max_size=3) | st.lists(kids, max_size=3).map(tuple)
                      | st.dictionaries(st.sampled_from("abc"), kids, max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(_trees, _trees)
def test_leaves_like_is_flatten_where_the_structures_match(a, b):
    # (jit's check of a pytree call against the last one's structure, before building a key)
    leaves, tree = tu.tree_flatten(a)
    assert tu.leaves_like(a, tree) == leaves
    got = tu.leaves_like(b, tree)
    b_leaves, b_tree = tu.tree_flatten(b)
    assert got == (b_leaves if b_tree == tree else None)


def test_jit_with_pytree_arguments_follows_their_structure_call_by_call():
    f = stagec.jit(lambda p, x: [v * x for v in tu.tree_leaves(p)])
    one, two = snp.ones(3), snp.full(3, 2.0)
    calls = [({"a": one, "b": two}, 2.0), ({"a": one, "b": two}, 2.0), ({"a": one, "c": two}, 3.0),
             ([one, two], 1.0), ((one, two), 1.0), ((one, (two,)), 1.0), ((one, two, one), 4.0), ((one, None), 2.0),
             ({"a": one, "b": snp.ones(4)}, 2.0), ({"a": one, "b": two}, 5.0),
             ({"a": np.full(3, 3.0, np.float32), "b": two}, 2.0), ({"a": np.full(3, 4.0, np.float32), "b": two}, 2.0),
             ({"a": one, "b": two}, 1.0)]
    for p, x in calls:
        want = [np.asarray(v) * x for v in tu.tree_leaves(p)]
        got = f(p, snp.asarray(x))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w)


def test_a_defaultdict_is_a_node_with_sorted_keys_as_in_jax():
    """A defaultdict was a leaf here (tree_leaves gave the dict itself, tree_map applied f to it whole, jit refused
    it); in JAX it is a node: keys sorted, the default_factory kept. JAX 0.10.2's paths and results, stored."""
    d = collections.defaultdict(list, {"b": 1, "a": 2})
    leaves, td = tu.tree_flatten(d)
    assert leaves == [2, 1] and td.num_leaves == 2
    back = tu.tree_unflatten(td, leaves)
    assert type(back) is collections.defaultdict and back.default_factory is list and back == d
    assert [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(d)[0]] == ["['a']", "['b']"]
    m = tu.tree_map(lambda v: v * 2, d)
    assert type(m) is collections.defaultdict and dict(m) == {"a": 4, "b": 2}
    p = collections.defaultdict(float, {"w": np.ones(3, np.float32), "b": np.float32(2.0)})
    g = stagec.jit(stagec.grad(lambda p: (p["w"] * p["b"]).sum()))(p)
    assert type(g) is collections.defaultdict and g.default_factory is float
    np.testing.assert_array_equal(np.asarray(g["w"]), [2, 2, 2])
    assert float(g["b"]) == 3.0


def test_unflattener_and_tree_leaves_agree_with_the_structure_they_skip():
    """`unflattener` (a jit call's results rebuilt by one expression) and `tree_leaves` (no structure built) give what
    `tree_unflatten` and `tree_flatten` give: one-element tuples, empty nodes, None, str-keyed dicts in sorted order,
    and through the general path namedtuples, int keys, OrderedDicts, defaultdicts and registered classes."""
    Point = collections.namedtuple("Point", "x y")
    trees = [(1,), [], (), None, {"b": 1, "a": (2, [3, None, (4,)])}, [(1, 2), (3, 4), (5, 6)], {"z": {}},
             Point(1, [2, 3]), {1: "a", 2: "b"}, collections.OrderedDict([("b", 1), ("a", 2)]),
             collections.defaultdict(list, {"q": 1}), ({"x": Point(1, 2)}, [None, (7,)]), 5]
    for tree in trees:
        leaves, td = tu.tree_flatten(tree)
        assert tu.tree_leaves(tree) == leaves
        fresh = [object() for _ in leaves]
        got, want = tu.unflattener(td)(fresh), tu.tree_unflatten(td, fresh)
        assert got == want and type(got) is type(want) and tu.tree_structure(got) == td, tree
        assert all(a is b for a, b in zip(tu.tree_leaves(got), fresh))
        if isinstance(want, dict):
            assert list(got) == list(want)  # (the same key order)
    assert tu.tree_leaves([1, (2, 3)], is_leaf=lambda v: isinstance(v, tuple)) == [1, (2, 3)]
    deep = (1,)
    for k in range(300):  # (nested past the parser's ~200 brackets: the general path)
        deep = (deep, [k])
    leaves, td = tu.tree_flatten(deep)
    assert tu.unflattener(td)(leaves) == deep and tu.tree_leaves(deep) == leaves
