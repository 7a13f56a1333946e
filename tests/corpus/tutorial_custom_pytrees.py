"""JAX's "Custom pytree nodes" (docs/custom_pytrees.md): its code cells in order; what they print is returned as
the printed strings (reprs of leaves, PyTreeDefs and Arrays, as JAX prints them), and the cells shown failing
record the exception classes they raise."""
import functools
from collections import namedtuple
from dataclasses import dataclass
from typing import NamedTuple, Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import register_pytree_node
from jax.tree_util import register_pytree_node_class
from jax.tree_util import tree_flatten, tree_unflatten


def _raises(thunk):
    """The class name of the exception a failing cell raises ("" when it does not)."""
    try:
        thunk()
    except Exception as e:
        return np.array(type(e).__name__)
    return np.array("")


class Special(object):
    def __init__(self, x, y):
        self.x = x
        self.y = y


class RegisteredSpecial(Special):
    def __repr__(self):
        return "RegisteredSpecial(x={}, y={})".format(self.x, self.y)


def special_flatten(v):
    """Specifies a flattening recipe."""
    children = (v.x, v.y)
    aux_data = None
    return (children, aux_data)


def special_unflatten(aux_data, children):
    """Specifies an unflattening recipe."""
    return RegisteredSpecial(*children)


# Global registration
register_pytree_node(
    RegisteredSpecial,
    special_flatten,    # Instruct JAX what are the children nodes.
    special_unflatten   # Instruct JAX how to pack back into a `RegisteredSpecial`.
)


@register_pytree_node_class
class RegisteredSpecial2(Special):
    def __repr__(self):
        return "RegisteredSpecial2(x={}, y={})".format(self.x, self.y)

    def tree_flatten(self):
        children = (self.x, self.y)
        aux_data = None
        return (children, aux_data)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children)


class MyOtherContainer(NamedTuple):
    name: str
    a: Any
    b: Any
    c: Any


@functools.partial(jax.tree_util.register_dataclass,
                   data_fields=['a', 'b', 'c'],
                   meta_fields=['name'])
@dataclass
class MyDataclassContainer(object):
    name: str
    a: Any
    b: Any
    c: Any


class MyTree:
    def __init__(self, a):
        self.a = jnp.asarray(a)


register_pytree_node(MyTree, lambda tree: ((tree.a,), None),
                     lambda _, args: MyTree(*args))

Point = namedtuple('Point', ['x', 'y'])


def main():
    out = {}
    leaves = jax.tree.leaves([
        Special(0, 1),
        Special(2, 4),
    ])
    out["special_leaves"] = np.array([type(v).__name__ for v in leaves])

    out["special_map_raises"] = _raises(lambda: jax.tree.map(lambda x: x + 1, [Special(0, 1), Special(2, 4)]))

    out["registered_map"] = np.array(repr(jax.tree.map(lambda x: x + 1,
                                                       [
                                                           RegisteredSpecial(0, 1),
                                                           RegisteredSpecial(2, 4),
                                                       ])))

    printed = []

    def show_example(structured):
        flat, tree = structured.tree_flatten()
        unflattened = RegisteredSpecial2.tree_unflatten(tree, flat)
        printed.append(f"{structured=}\n  {flat=}\n  {tree=}\n  {unflattened=}")

    show_example(RegisteredSpecial2(1., 2.))
    out["show_registered_special2"] = np.array(printed[-1])

    # NamedTuple subclasses are handled as pytree nodes, so
    # this will work out-of-the-box.
    out["namedtuple_leaves"] = np.array(repr(jax.tree.leaves([
        MyOtherContainer('Alice', 1, 2, 3),
        MyOtherContainer('Bob', 4, 5, 6)
    ])))

    # MyDataclassContainer is now a pytree node.
    out["dataclass_leaves"] = np.array(repr(jax.tree.leaves([
        MyDataclassContainer('apple', 5.3, 1.2, jnp.zeros([4])),
        MyDataclassContainer('banana', np.array([3, 4]), -1., 0.)
    ])))

    @jax.jit
    def f(x: MyDataclassContainer | MyOtherContainer):
        return x.a + x.b

    # Works fine! `mdc.name` is static.
    mdc = MyDataclassContainer('mdc', 1, 2, 3)
    y = f(mdc)
    out["y"] = y

    moc = MyOtherContainer('moc', 1, 2, 3)
    out["namedtuple_str_leaf_raises"] = _raises(lambda: f(moc))

    tree = MyTree(jnp.arange(5.0))
    out["vmap_raises"] = _raises(lambda: jax.vmap(lambda x: x)(tree))  # Error because object() is passed to `MyTree`.
    # Error because MyTree(...) is passed to `MyTree`. (Which error depends on what the transformation hands the
    # unflattening function: JAX's jacobian passes None, whose jnp.asarray is a ValueError; stagec's the tree,
    # a TypeError. Recorded: that it raises.)
    out["jacobian_raises"] = np.array(_raises(lambda: jax.jacobian(lambda x: x)(tree)) != "")

    # (the cells that then redefine MyTree and its tree_unflatten show a fix without running it)

    # The structured value to be transformed
    value_structured = [1., (2., 3.)]

    # The leaves in value_flat correspond to the `*` markers in value_tree
    value_flat, value_tree = tree_flatten(value_structured)
    printed.append(f"{value_flat=}\n{value_tree=}")

    # Transform the flat value list using an element-wise numeric transformer
    transformed_flat = list(map(lambda v: v * 2., value_flat))
    printed.append(f"{transformed_flat=}")

    # Reconstruct the structured output, using the original
    transformed_structured = tree_unflatten(value_tree, transformed_flat)
    printed.append(f"{transformed_structured=}")
    out["flatten_transform_unflatten"] = np.array(printed[-3:])

    example_containers = [
        (1., [2., 3.]),
        (1., {'b': 2., 'a': 3.}),
        1.,
        None,
        jnp.zeros(2),
        Point(1., 2.)
    ]

    def show_example(structured):
        flat, tree = tree_flatten(structured)
        unflattened = tree_unflatten(tree, flat)
        printed.append(f"{structured=}\n  {flat=}\n  {tree=}\n  {unflattened=}")

    for structured in example_containers:
        show_example(structured)
    out["show_examples"] = np.array(printed[-len(example_containers):])
    return out
